/* onnx_internal.h: what the ONNX node-test runner (onnx_runner.c) and the ONNX-to-Weft op
 * mapping (onnx/: one file per op family, the registration table in onnx/registry.c) share: the
 * state of one model being translated into a Weft graph, the helpers mappers build with, and the
 * dispatch to the mapping table.
 *
 * A mapper turns one ONNX NodeProto into Weft nodes (TensorFlow ops, a subgraph where the two
 * disagree) and binds the node's ONNX outputs to Weft outputs. It may ask for the value of any
 * ONNX tensor as a constant (an initializer, a Constant, a test input, or anything computable from
 * them: the runner evaluates it with a session), which is how shape-like inputs (axes, pads,
 * shapes, repeats) become attributes and Consts. A mapper reports what it cannot express with
 * an UNIMPLEMENTED status: the test is then counted as unsupported with that reason. */
#ifndef WEFT_CONFORMANCE_ONNX_INTERNAL_H
#define WEFT_CONFORMANCE_ONNX_INTERNAL_H

#include "conformance.h"
#include "onnx.pb-c.h"

typedef struct cf_onnx_ctx {
  weft_graph_t *graph;
  const char *device_spec;  /* where mapped ops run */
  const char *device_type;  /* its type, for kernel lookups ("CPU") */
  const char *input_spec;   /* where inputs and constants live */
  int64_t opset;            /* of the default domain */
  GHashTable *outputs;      /* ONNX name -> weft_output_t* (g_free) */
  GHashTable *values;       /* ONNX name -> weft_tensor_t* known value (unref) */
  GHashTable *sequences;    /* ONNX name -> cf_onnx_seq_t* (cf_onnx_seq_free) */
  /* Feeds for evaluating intermediate values (the graph inputs' test data). */
  GPtrArray *feed_names;    /* char* Weft tensor names */
  GPtrArray *feed_tensors;  /* weft_tensor_t* (borrowed from values) */
  int counter;              /* unique node names */
  const char *node_name;    /* the ONNX node being mapped, for messages */
} cf_onnx_ctx_t;

/* A mapper: returns NULL after binding every output of the node, UNIMPLEMENTED when the node
 * uses something the mapping does not cover, another error when building failed. */
typedef weft_status_t *(*cf_onnx_map_fn)(cf_onnx_ctx_t *x, const Onnx__NodeProto *node);

/* The mapper for an ONNX op type of the default domain in a model of that opset (the registered
 * row with the greatest since_opset not above it; onnx/registry.c), or NULL. */
cf_onnx_map_fn cf_onnx_find_mapper(const char *op_type, int64_t opset);

/* A ModelProto from the bytes of a model.onnx that `what` names (the file), its nesting bounded
 * before protobuf-c's recursive unpack (TypeProto nests itself): NULL and *status set when it
 * nests too deep (INVALID_ARGUMENT), does not parse or has no graph (DATA_LOSS). */
Onnx__ModelProto *cf_onnx_model_parse(const uint8_t *bytes, size_t len, const char *what,
                                      weft_status_t **status);
/* Maps g's initializers (as Consts) and nodes into x->graph, the graph inputs already bound;
 * label names the model in messages. NULL, or the first mapper's status (UNIMPLEMENTED for what
 * the mapping does not cover). */
weft_status_t *cf_onnx_map_graph(cf_onnx_ctx_t *x, const Onnx__GraphProto *g, const char *label);
/* ONNX TensorProto.DataType -> Weft dtype; WEFT_DT_INVALID for types Weft lacks. */
weft_dtype_t cf_onnx_dtype(int onnx_type);
/* A host tensor from a TensorProto (raw_data or the typed fields); NULL and *status set for an
 * unsupported dtype or inconsistent data. The caller unrefs it. */
weft_tensor_t *cf_onnx_tensor(const Onnx__TensorProto *t, weft_status_t **status);

/* ---- helpers for mappers (onnx_runner.c) ---- */

/* An ONNX sequence value, known element by element while the model is mapped: each element is a
 * Weft output, so that the sequence ops (onnx/map_sequence.c) are list edits at mapping time and
 * a Loop carrying one is unrolled. */
typedef struct cf_onnx_seq {
  weft_dtype_t dtype; /* of the elements (known for an empty sequence too) */
  GArray *items;      /* weft_output_t */
} cf_onnx_seq_t;

/* A new empty sequence; the caller frees it with cf_onnx_seq_free or hands it to a bind. */
cf_onnx_seq_t *cf_onnx_seq_new(weft_dtype_t dtype);
/* A copy of s (the outputs are shared handles into the graph). */
cf_onnx_seq_t *cf_onnx_seq_copy(const cf_onnx_seq_t *s);
void cf_onnx_seq_free(cf_onnx_seq_t *s);
/* The sequence bound to name, or NULL (unknown, or a tensor). Borrowed from the context. */
const cf_onnx_seq_t *cf_onnx_seq_get(cf_onnx_ctx_t *x, const char *name);
/* Binds name to seq (taken; freed when name is "") and drops a tensor bound to name. */
void cf_onnx_seq_bind(cf_onnx_ctx_t *x, const char *name, cf_onnx_seq_t *seq);
/* Whether name is bound to a tensor or a sequence. */
bool cf_onnx_is_bound(cf_onnx_ctx_t *x, const char *name);

/* The Weft output bound to an ONNX tensor name; {NULL,0} when unknown or name is "". */
weft_output_t cf_onnx_get(cf_onnx_ctx_t *x, const char *name);
/* Input i of the node, or {NULL,0} when absent (past the end or ""). */
weft_output_t cf_onnx_in(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i);
bool cf_onnx_has_in(const Onnx__NodeProto *node, size_t i);
/* Binds name to out, dropping a sequence bound to name. */
void cf_onnx_bind(cf_onnx_ctx_t *x, const char *name, weft_output_t out);
/* The value of ONNX tensor `name` (evaluated if needed); NULL and *status set when it cannot be
 * computed. Borrowed from the context. */
const weft_tensor_t *cf_onnx_value(cf_onnx_ctx_t *x, const char *name, weft_status_t **status);
/* The value of input i as int64s (any integer dtype); false (and *status) if unavailable. *vals
 * is g_free()d by the caller; *n may be 0. */
bool cf_onnx_in_ints(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i, int64_t **vals,
                     int *n, weft_status_t **status);
/* Input i's value as one double (scalar tensors). */
bool cf_onnx_in_scalar(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t i, double *v,
                       weft_status_t **status);

/* Static shape and dtype of a Weft output (rank -1 when unknown). */
int cf_onnx_shape(weft_output_t o, int64_t *dims);
weft_dtype_t cf_onnx_out_dtype(weft_output_t o);

/* Attributes. */
const Onnx__AttributeProto *cf_onnx_attr(const Onnx__NodeProto *node, const char *name);
int64_t cf_onnx_attr_int(const Onnx__NodeProto *node, const char *name, int64_t dflt);
float cf_onnx_attr_float(const Onnx__NodeProto *node, const char *name, float dflt);
/* Borrowed; dflt when absent. */
const char *cf_onnx_attr_string(const Onnx__NodeProto *node, const char *name, const char *dflt);
/* Borrowed list; *n = 0 and NULL when absent. */
const int64_t *cf_onnx_attr_ints(const Onnx__NodeProto *node, const char *name, size_t *n);

/* Builders: each adds one node on the device (T and other type attrs are inferred) and returns
 * its output 0, or {NULL,0} with *status set (a status already set is kept and nothing is
 * built, so calls chain). */
weft_op_builder_t *cf_onnx_op(cf_onnx_ctx_t *x, const char *op);
weft_output_t cf_onnx_finish(cf_onnx_ctx_t *x, weft_op_builder_t *b, weft_status_t **status);
weft_output_t cf_onnx_unary(cf_onnx_ctx_t *x, const char *op, weft_output_t a,
                            weft_status_t **status);
weft_output_t cf_onnx_binary(cf_onnx_ctx_t *x, const char *op, weft_output_t a, weft_output_t b,
                             weft_status_t **status);
/* Consts (on the input device). */
weft_output_t cf_onnx_const_ints(cf_onnx_ctx_t *x, weft_dtype_t dtype, const int64_t *v, int n,
                                 bool scalar, weft_status_t **status);
weft_output_t cf_onnx_const_scalar(cf_onnx_ctx_t *x, weft_dtype_t dtype, double v,
                                   weft_status_t **status);
weft_output_t cf_onnx_const_tensor(cf_onnx_ctx_t *x, weft_tensor_t *t, weft_status_t **status);
/* Common shapes of subgraphs. */
weft_output_t cf_onnx_reshape(cf_onnx_ctx_t *x, weft_output_t a, const int64_t *dims, int rank,
                              weft_status_t **status);
weft_output_t cf_onnx_transpose(cf_onnx_ctx_t *x, weft_output_t a, const int64_t *perm, int rank,
                                weft_status_t **status);
weft_output_t cf_onnx_cast(cf_onnx_ctx_t *x, weft_output_t a, weft_dtype_t to,
                           weft_status_t **status);
/* Whether the device has a kernel for op with T = dtype. */
bool cf_onnx_has_kernel(cf_onnx_ctx_t *x, const char *op, weft_dtype_t dtype);
/* An UNIMPLEMENTED status naming the node: "ONNX Pad: mode edge is not mapped". */
weft_status_t *cf_onnx_unsupported(cf_onnx_ctx_t *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* WEFT_CONFORMANCE_ONNX_INTERNAL_H */
