/* onnx/map.h: what the ONNX mappers of this folder share: the registration row (an op type, the
 * opset it applies from, its mapper), each op family's table of rows, and the builders every
 * mapper uses (builders.c) on top of the runner's helpers in onnx_internal.h.
 *
 * The mapping of an op lives in the family file that holds its rows (map_elementwise.c,
 * map_nn.c, ...); registry.c lists the families and picks the row for a node. Adding an op or an
 * opset version is adding a row: see "Adding an ONNX mapper" in docs/conformance.md. */
#ifndef WEFT_CONFORMANCE_ONNX_MAP_H
#define WEFT_CONFORMANCE_ONNX_MAP_H

#include "../onnx_internal.h"

/* One versioned registration, as ONNX Runtime registers its kernels: fn maps op_type (default
 * domain) for models whose opset is since_opset or later, up to the op's next row. Where an op's
 * definition changed (an attribute became an input, a default changed), the op has one row per
 * definition the mapping distinguishes. An op's first row is since 1: the mapping does not
 * refuse an op older models could not have used. */
typedef struct cf_onnx_row {
  const char *op_type;
  int64_t since_opset;
  cf_onnx_map_fn fn;
} cf_onnx_row_t;

/* The rows of each family, each table ended by a row with op_type NULL (registry.c). */
extern const cf_onnx_row_t cf_onnx_rows_elementwise[];
extern const cf_onnx_row_t cf_onnx_rows_nn[];
extern const cf_onnx_row_t cf_onnx_rows_math[];
extern const cf_onnx_row_t cf_onnx_rows_reduce[];
extern const cf_onnx_row_t cf_onnx_rows_shape[];
extern const cf_onnx_row_t cf_onnx_rows_array[];
extern const cf_onnx_row_t cf_onnx_rows_norm[];
extern const cf_onnx_row_t cf_onnx_rows_conv_pool[];
extern const cf_onnx_row_t cf_onnx_rows_loss[];
extern const cf_onnx_row_t cf_onnx_rows_control_flow[];
extern const cf_onnx_row_t cf_onnx_rows_sequence[];

/* ---- subgraphs (map_control_flow.c, map_sequence.c) ---- */

/* Maps a subgraph's initializers and nodes into the graph, reading and binding names in x. */
weft_status_t *cf_onnx_map_subgraph(cf_onnx_ctx_t *x, const Onnx__GraphProto *g);
/* A Loop node unrolled (for loop-carried sequences, or a body that needs its iteration's values
 * as constants): body (its "body") is mapped once per iteration, as long as the trip count and
 * each condition are constants; UNIMPLEMENTED past 4096 iterations. */
weft_status_t *cf_onnx_loop_unrolled(cf_onnx_ctx_t *x, const Onnx__NodeProto *node,
                                     const Onnx__GraphProto *body);

/* ---- builders (builders.c) ---- */

/* No output: an absent optional input, a value not built. */
#define CF_ONNX_NONE ((weft_output_t){NULL, 0})

/* Binds output k of node to o. */
void cf_onnx_bind_out(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t k, weft_output_t o);
/* Whether the node's output k is wanted (present and named). */
bool cf_onnx_has_out(const Onnx__NodeProto *node, size_t k);
/* The static shape of o in *rank and dims; UNIMPLEMENTED when any of it is unknown. */
weft_status_t *cf_onnx_need_shape(cf_onnx_ctx_t *x, weft_output_t o, int *rank, int64_t *dims);
bool cf_onnx_is_f16(weft_dtype_t t);
/* Unary (b = CF_ONNX_NONE) or binary elementwise op in the builder style of onnx_internal.h. */
weft_output_t cf_onnx_ew(cf_onnx_ctx_t *x, const char *op, weft_output_t a, weft_output_t b,
                         weft_status_t **st);
/* A scalar Const of like's dtype. */
weft_output_t cf_onnx_scalar_like(cf_onnx_ctx_t *x, weft_output_t like, double v,
                                  weft_status_t **st);
weft_output_t cf_onnx_mul_scalar(cf_onnx_ctx_t *x, weft_output_t a, double v, weft_status_t **st);
weft_output_t cf_onnx_add_scalar(cf_onnx_ctx_t *x, weft_output_t a, double v, weft_status_t **st);
/* A TensorFlow reduction (Sum, Mean, Max, ...) of a over axes. */
weft_output_t cf_onnx_reduce(cf_onnx_ctx_t *x, const char *op, weft_output_t a,
                             const int64_t *axes, int n, bool keep, weft_status_t **st);
/* Normalises axes against rank; false (with *st) for one out of range. */
bool cf_onnx_norm_axes(cf_onnx_ctx_t *x, int64_t *axes, int n, int rank, weft_status_t **st);
/* An int list (axes, a shape, pads, ...) that the op's older definitions give as attribute attr
 * and its newer ones as input i: read from the input when from_input (none when it is absent),
 * else from the attribute. *vals (NULL when empty) is g_free()d by the caller; false and *st when
 * the input's value cannot be computed. */
bool cf_onnx_ints_arg(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool from_input, size_t i,
                      const char *attr, int64_t **vals, int *n, weft_status_t **st);
/* axes = from, from + 1, ..., to - 1; returns how many. */
int cf_onnx_axes_range(int64_t *axes, int from, int to);

#endif /* WEFT_CONFORMANCE_ONNX_MAP_H */
