/* Helpers shared by the standard ops' definitions (ops_*.c): macros that build the NULL-terminated
 * weft_op_def_t tables, and small shape-inference utilities (reading inputs, constant inputs and
 * attrs through the host table, merging and broadcasting shapes, errors that name the node).
 * Implemented in op_def.c. Private to core/src/graph. */
#ifndef WEFT_OPS_SHAPE_H
#define WEFT_OPS_SHAPE_H

#include "graph_internal.h"

/* A NULL-terminated list of spec strings with static storage (compound literal at file scope). */
#define WEFT__SPECS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define WEFT__NO_SPECS ((const char *const[]){NULL})
#define WEFT__OP(name_, inputs_, outputs_, attrs_, stateful_, shape_fn_)                         \
  {                                                                                              \
    .struct_size = sizeof(weft_op_def_t), .name = (name_), .inputs = (inputs_),                  \
    .outputs = (outputs_), .attrs = (attrs_), .is_stateful = (stateful_), .shape_fn = (shape_fn_) \
  }
#define WEFT__OPS_END {.name = NULL}

/* A shape of known rank whose dims are all unknown (rank -1: unknown rank). */
static inline weft__shape_t weft__sh_unknown_dims(int rank) {
  weft__shape_t s = {.rank = rank};
  for (int i = 0; i < rank && i < WEFT_MAX_RANK; i++) s.dims[i] = WEFT_DIM_UNKNOWN;
  return s;
}

/* Input `index`'s shape (rank -1 when unknown, also for an index past the last input). */
void weft__sh_input(weft_shape_ctx_t *ctx, int index, weft__shape_t *out);
weft_status_t *weft__sh_output(weft_shape_ctx_t *ctx, int index, const weft__shape_t *shape);
/* An INVALID_ARGUMENT status "node 'NAME': MESSAGE"; the caller owns it. */
weft_status_t *weft__sh_error(weft_shape_ctx_t *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "[2,?,3]" / "<unknown>"; the caller g_free()s it. */
char *weft__sh_str(const weft__shape_t *shape);

/* Constant input `index` as integers (any integer dtype or bool). True and *values (caller
 * g_free()s) with *n elements when the input is a constant known now; false otherwise. *rank (may
 * be NULL) receives the constant's rank. */
bool weft__sh_const_ints(weft_shape_ctx_t *ctx, int index, int64_t **values, int64_t *n,
                         int *rank);
/* Same for any real number dtype, as doubles. */
bool weft__sh_const_doubles(weft_shape_ctx_t *ctx, int index, double **values, int64_t *n,
                            int *rank);
/* The shape held in a 1-D integer input (Reshape's shape, Fill's dims, ...): its values when it is
 * constant (-1 values become unknown dims), else its length as the rank with unknown dims, else
 * unknown rank. INVALID_ARGUMENT naming the node when the tensor cannot be a shape. */
weft_status_t *weft__sh_shape_from_tensor(weft_shape_ctx_t *ctx, int index, weft__shape_t *out);

/* Attribute getters with a fallback for an absent attribute. */
int64_t weft__sh_attr_int(weft_shape_ctx_t *ctx, const char *name, int64_t fallback);
float weft__sh_attr_float(weft_shape_ctx_t *ctx, const char *name, float fallback);
bool weft__sh_attr_bool(weft_shape_ctx_t *ctx, const char *name, bool fallback);
/* Borrowed from the node's attrs. */
const char *weft__sh_attr_string(weft_shape_ctx_t *ctx, const char *name, const char *fallback);
/* Borrowed from the node's attrs; false (and *n = 0) when absent. */
bool weft__sh_attr_int_list(weft_shape_ctx_t *ctx, const char *name, const int64_t **values,
                            size_t *n);

/* Merges two shapes that must describe the same tensor (unknown dims take the known ones).
 * `what` names the pair in the error ("inputs 0 and 1"). out may alias a or b. */
weft_status_t *weft__sh_merge(weft_shape_ctx_t *ctx, const weft__shape_t *a,
                              const weft__shape_t *b, weft__shape_t *out, const char *what);
/* Errors when a known rank differs from / is below `rank`; `what` names the input. */
weft_status_t *weft__sh_with_rank(weft_shape_ctx_t *ctx, const weft__shape_t *s, int rank,
                                  const char *what);
weft_status_t *weft__sh_with_rank_at_least(weft_shape_ctx_t *ctx, const weft__shape_t *s,
                                           int rank, const char *what);
/* BatchMatMul's output shape (op names it in errors): inputs 0 and 1 of rank >= 2, honouring
 * adj_x / adj_y; batch dims broadcast (V2 and later) or must be equal (v1, broadcast false). */
weft_status_t *weft__sh_batch_matmul(weft_shape_ctx_t *ctx, const char *op, bool broadcast);
/* Broadcasts a and b (numpy rules); the error names the node and both shapes. */
weft_status_t *weft__sh_broadcast(weft_shape_ctx_t *ctx, const weft__shape_t *a,
                                  const weft__shape_t *b, weft__shape_t *out);
/* Maps axis in [-rank, rank) to [0, rank); `what` names the attribute or input in the error. */
weft_status_t *weft__sh_axis(weft_shape_ctx_t *ctx, int64_t axis, int rank, const char *what,
                             int *out);
/* Merges two dimensions (WEFT_DIM_UNKNOWN matches anything); false when both known and differ. */
bool weft__sh_merge_dim(int64_t a, int64_t b, int64_t *out);

/* Output 0: every input a scalar or of one common shape (no other broadcasting), that shape or
 * [] when all are scalars; `what` names the inputs in the error. */
weft_status_t *weft__sh_merge_non_scalars(weft_shape_ctx_t *ctx, const char *what);

/* Shape functions shared by many ops. */
weft_status_t *weft__shape_fn_unchanged(weft_shape_ctx_t *ctx);    /* output 0 = input 0 */
weft_status_t *weft__shape_fn_scalar(weft_shape_ctx_t *ctx);       /* output 0 = [] */
weft_status_t *weft__shape_fn_broadcast(weft_shape_ctx_t *ctx);    /* inputs 0 and 1 */
weft_status_t *weft__shape_fn_merge_all(weft_shape_ctx_t *ctx);    /* every input the same */

#endif /* WEFT_OPS_SHAPE_H */
