/* ops_ragged.c: RaggedRange, TensorFlow's tf.ragged.range op (tensorflow/core/ops/
 * ragged_math_ops.cc): the same args, attrs and shape function, so that graphs exported with
 * ragged tensors import. Its CPU kernel is in plugins/cpu/cpu_ragged.c. */
#include "ops_shape.h"

/* starts, limits and deltas are scalars or vectors, the vectors of one length N (scalars
 * broadcast): rt_nested_splits is [N + 1] ([2] when all are scalars), rt_dense_values [?]. */
static weft_status_t *ragged_range_shape(weft_shape_ctx_t *ctx) {
  static const char *const names[] = {"starts", "limits", "deltas"};
  int64_t rows = WEFT_DIM_UNKNOWN;
  bool all_scalars = true;
  for (int i = 0; i < 3; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    if (s.rank > 1)
      return weft__sh_error(ctx, "Shape must be at most rank 1 but is rank %d (%s)", s.rank,
                            names[i]);
    if (s.rank != 0) all_scalars = false;
    if (s.rank == 1 && !weft__sh_merge_dim(rows, s.dims[0], &rows))
      return weft__sh_error(ctx, "starts, limits, and deltas must have the same shape");
  }
  if (all_scalars) rows = 1;
  weft__shape_t splits = {.rank = 1, .dims = {rows == WEFT_DIM_UNKNOWN ? rows : rows + 1}};
  weft__shape_t values = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &splits));
  return weft__sh_output(ctx, 1, &values);
}

const weft_op_def_t weft__ops_ragged[] = {
    WEFT__OP("RaggedRange", WEFT__SPECS("starts: T", "limits: T", "deltas: T"),
             WEFT__SPECS("rt_nested_splits: Tsplits", "rt_dense_values: T"),
             WEFT__SPECS("T: {bfloat16, float, double, int32, int64} = DT_INT32",
                         "Tsplits: {int32, int64} = DT_INT64"),
             0, ragged_range_shape),
    WEFT__OPS_END,
};
