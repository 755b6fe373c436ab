/* ops_search.c: TensorFlow's set, search and index ops with its names, inputs, attrs, type
 * constraints, defaults and shape functions (tensorflow/core/ops/array_ops.cc, math_ops.cc):
 * ListDiff (tf.setdiff1d), LowerBound and UpperBound (tf.searchsorted), Bucketize,
 * UnravelIndex (tf.unravel_index) and Cross (tf.linalg.cross). Data-dependent dims are
 * unknown; the kernels check everything again at run time. */
#include "ops_shape.h"

/* ListDiff: x and y vectors; out and idx vectors of a length known only at run time. */
static weft_status_t *list_diff_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x, y;
  weft__sh_input(ctx, 0, &x);
  weft__sh_input(ctx, 1, &y);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 1, "x"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &y, 1, "y"));
  weft__shape_t vec = weft__sh_unknown_dims(1);
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &vec));
  return weft__sh_output(ctx, 1, &vec);
}

/* LowerBound, UpperBound: sorted_inputs [B, N] and values [B, M] give [B, M]. */
static weft_status_t *bound_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t sorted, values;
  weft__sh_input(ctx, 0, &sorted);
  weft__sh_input(ctx, 1, &values);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &sorted, 2, "sorted_inputs"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &values, 2, "values"));
  return weft__sh_output(ctx, 0, &values);
}

/* UnravelIndex: a scalar index gives [len(dims)], a vector [len(dims), len(indices)]. */
static weft_status_t *unravel_index_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t indices, dims;
  weft__sh_input(ctx, 0, &indices);
  weft__sh_input(ctx, 1, &dims);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &dims, 1, "dims"));
  const int64_t n_dims = dims.rank == 1 ? dims.dims[0] : WEFT_DIM_UNKNOWN;
  if (indices.rank < 0) {
    weft__shape_t out = {.rank = -1};
    return weft__sh_output(ctx, 0, &out);
  }
  if (indices.rank == 0) {
    weft__shape_t out = {.rank = 1, .dims = {n_dims}};
    return weft__sh_output(ctx, 0, &out);
  }
  /* As TensorFlow's: the index count is all of indices' elements (the kernel refuses rank > 1). */
  int64_t count = 1;
  for (int d = 0; d < indices.rank; d++) {
    if (indices.dims[d] < 0) {
      count = WEFT_DIM_UNKNOWN;
      break;
    }
    count *= indices.dims[d];
  }
  weft__shape_t out = {.rank = 2, .dims = {n_dims, count}};
  return weft__sh_output(ctx, 0, &out);
}

/* Cross: a and b of one shape whose last dimension is 3. */
static weft_status_t *cross_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t a, b, out;
  weft__sh_input(ctx, 0, &a);
  weft__sh_input(ctx, 1, &b);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &a, 1, "a"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &b, 1, "b"));
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &a, &b, &out, "a and b"));
  if (out.rank > 0) {
    int64_t last = out.dims[out.rank - 1];
    if (last >= 0 && last != 3)
      return weft__sh_error(ctx, "Dimension must be 3 but is %lld", (long long)last);
    out.dims[out.rank - 1] = 3;
  }
  return weft__sh_output(ctx, 0, &out);
}

#define IDX(name) name ": {int32, int64} = DT_INT32"

const weft_op_def_t weft__ops_search[] = {
    WEFT__OP("ListDiff", WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("out: T", "idx: out_idx"),
             WEFT__SPECS("T: type", IDX("out_idx")), 0, list_diff_shape),
    WEFT__OP("LowerBound", WEFT__SPECS("sorted_inputs: T", "values: T"),
             WEFT__SPECS("output: out_type"), WEFT__SPECS("T: type", IDX("out_type")), 0,
             bound_shape),
    WEFT__OP("UpperBound", WEFT__SPECS("sorted_inputs: T", "values: T"),
             WEFT__SPECS("output: out_type"), WEFT__SPECS("T: type", IDX("out_type")), 0,
             bound_shape),
    WEFT__OP("Bucketize", WEFT__SPECS("input: T"), WEFT__SPECS("output: int32"),
             WEFT__SPECS("T: {int32, int64, float, double}", "boundaries: list(float)"), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("UnravelIndex", WEFT__SPECS("indices: Tidx", "dims: Tidx"),
             WEFT__SPECS("output: Tidx"), WEFT__SPECS(IDX("Tidx")), 0, unravel_index_shape),
    WEFT__OP("Cross", WEFT__SPECS("a: T", "b: T"), WEFT__SPECS("product: T"),
             WEFT__SPECS("T: realnumbertypes"), 0, cross_shape),
    WEFT__OPS_END,
};
