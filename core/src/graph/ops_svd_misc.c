/* ops_svd_misc.c: Svd, LinSpace, Diag, DiagPart, SparseTensorDenseAdd and SparseToDense with
 * TensorFlow's names, args, attrs, type constraints (tensorflow/core/ops/linalg_ops.cc,
 * math_ops.cc, array_ops.cc and sparse_ops.cc, less the complex types Weft does not have) and
 * shape functions. */
#include <string.h>

#include "ops_shape.h"

static const weft__shape_t kUnknownShape = {.rank = -1};

/* Svd: input [..., M, N], P = min(M, N): s [..., P]; with compute_uv, u [..., M, full ? M : P]
 * and v [..., N, full ? N : P]; without, u and v are [0] (TensorFlow's SvdShapeFn). */
static weft_status_t *svd_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 2, "input"));
  bool uv = weft__sh_attr_bool(ctx, "compute_uv", true);
  bool full = weft__sh_attr_bool(ctx, "full_matrices", false);
  const weft__shape_t empty = {.rank = 1, .dims = {0}};
  if (in.rank < 0) {
    for (int i = 0; i < 3; i++)
      WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, i > 0 && !uv ? &empty : &kUnknownShape));
    return NULL;
  }
  int64_t m = in.dims[in.rank - 2], n = in.dims[in.rank - 1];
  int64_t p = m == WEFT_DIM_UNKNOWN || n == WEFT_DIM_UNKNOWN ? WEFT_DIM_UNKNOWN : m < n ? m : n;
  if (m == 0 || n == 0) p = 0;
  weft__shape_t s = in;
  s.rank--;
  s.dims[s.rank - 1] = p;
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &s));
  if (!uv) {
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &empty));
    return weft__sh_output(ctx, 2, &empty);
  }
  weft__shape_t u = in, v = in;
  u.dims[u.rank - 1] = full ? m : p;
  v.dims[v.rank - 2] = n;
  v.dims[v.rank - 1] = full ? n : p;
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &u));
  return weft__sh_output(ctx, 2, &v);
}

/* LinSpace: scalar start, stop and num; output [num] when num is a constant (> 0). */
static weft_status_t *linspace_shape(weft_shape_ctx_t *ctx) {
  static const char *const names[] = {"start", "stop", "num"};
  for (int i = 0; i < 3; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i]));
  }
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  int64_t *num = NULL, n = 0;
  if (weft__sh_const_ints(ctx, 2, &num, &n, NULL) && n == 1) {
    int64_t v = num[0];
    g_free(num);
    if (v <= 0) return weft__sh_error(ctx, "Requires num > 0: %" G_GINT64_FORMAT, v);
    out.dims[0] = v;
  } else {
    g_free(num);
  }
  return weft__sh_output(ctx, 0, &out);
}

/* DiagPart: input of even, non-zero rank 2k -> its first k dims (each merged with its twin). */
static weft_status_t *diag_part_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  if (in.rank % 2 != 0 || in.rank <= 0)
    return weft__sh_error(ctx, "Input must have even and non-zero rank, input rank is %d",
                          in.rank);
  weft__shape_t out = {.rank = in.rank / 2};
  for (int i = 0; i < out.rank; i++)
    if (!weft__sh_merge_dim(in.dims[i], in.dims[i + out.rank], &out.dims[i]))
      return weft__sh_error(ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT
                            " and %" G_GINT64_FORMAT, in.dims[i], in.dims[i + out.rank]);
  return weft__sh_output(ctx, 0, &out);
}

/* Diag: input [d1..dk] (k >= 1) -> [d1..dk, d1..dk]. */
static weft_status_t *diag_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "diagonal"));
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  if (2 * in.rank > WEFT_MAX_RANK)
    return weft__sh_error(ctx, "Diag of a rank-%d input would have rank %d, more than %d",
                          in.rank, 2 * in.rank, WEFT_MAX_RANK);
  weft__shape_t out = in;
  out.rank = 2 * in.rank;
  memcpy(out.dims + in.rank, in.dims, sizeof(int64_t) * (size_t)in.rank);
  return weft__sh_output(ctx, 0, &out);
}

/* SparseToDense: the output's shape is the value of output_shape (input 1). */
static weft_status_t *sparse_to_dense_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 1, &out));
  return weft__sh_output(ctx, 0, &out);
}

/* SparseTensorDenseAdd: the output is b's shape. */
static weft_status_t *sparse_dense_add_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t b;
  weft__sh_input(ctx, 3, &b);
  return weft__sh_output(ctx, 0, &b);
}

const weft_op_def_t weft__ops_svd_misc[] = {
    WEFT__OP("Svd", WEFT__SPECS("input: T"), WEFT__SPECS("s: T", "u: T", "v: T"),
             WEFT__SPECS("compute_uv: bool = true", "full_matrices: bool = false",
                         "T: {double, float, half}"),
             0, svd_shape),
    WEFT__OP("LinSpace", WEFT__SPECS("start: T", "stop: T", "num: Tidx"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {bfloat16, half, float, double}",
                         "Tidx: {int32, int64} = DT_INT32"),
             0, linspace_shape),
    WEFT__OP("Diag", WEFT__SPECS("diagonal: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {bfloat16, half, float, double, int32, int64}"), 0, diag_shape),
    WEFT__OP("DiagPart", WEFT__SPECS("input: T"), WEFT__SPECS("diagonal: T"),
             WEFT__SPECS("T: {bfloat16, half, float, double, int32, int64}"), 0,
             diag_part_shape),
    WEFT__OP("SparseTensorDenseAdd",
             WEFT__SPECS("a_indices: Tindices", "a_values: T", "a_shape: Tindices", "b: T"),
             WEFT__SPECS("sum: T"), WEFT__SPECS("T: numbertype", "Tindices: {int32, int64}"), 0,
             sparse_dense_add_shape),
    WEFT__OP("SparseToDense",
             WEFT__SPECS("sparse_indices: Tindices", "output_shape: Tindices",
                         "sparse_values: T", "default_value: T"),
             WEFT__SPECS("dense: T"),
             WEFT__SPECS("validate_indices: bool = true", "T: type", "Tindices: {int32, int64}"),
             0, sparse_to_dense_shape),
    WEFT__OPS_END,
};
