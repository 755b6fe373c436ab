/* ops_linalg.c: the dense linear-algebra ops (MatrixTriangularSolve, MatrixSolve, MatrixInverse,
 * MatrixDeterminant, LogMatrixDeterminant, Cholesky, Lu, Qr, MatrixSolveLs, SelfAdjointEigV2) with TensorFlow's
 * names, args, attrs and type constraints (tensorflow/core/ops/linalg_ops.cc, less the complex
 * types Weft does not have), and their shape functions. */
#include <string.h>

#include "ops_shape.h"

static const weft__shape_t kUnknownShape = {.rank = -1};

/* The dims of s before its last two (s of known rank >= 2). */
static weft__shape_t batch_of(const weft__shape_t *s) {
  weft__shape_t b = {.rank = s->rank - 2};
  memcpy(b.dims, s->dims, sizeof(int64_t) * (size_t)b.rank);
  return b;
}

/* Input 0 of rank >= 2 whose last two dims are equal (merged into *n; unknown when the rank
 * is). */
static weft_status_t *square_input(weft_shape_ctx_t *ctx, const char *what, weft__shape_t *in,
                                   int64_t *n) {
  weft__sh_input(ctx, 0, in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, in, 2, what));
  *n = WEFT_DIM_UNKNOWN;
  if (in->rank < 0) return NULL;
  int64_t r = in->dims[in->rank - 2], c = in->dims[in->rank - 1];
  if (!weft__sh_merge_dim(r, c, n)) {
    char *s = weft__sh_str(in);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": %s must be square matrices, got %s", r, c, what, s);
    g_free(s);
    return status;
  }
  in->dims[in->rank - 2] = in->dims[in->rank - 1] = *n;
  return NULL;
}

/* MatrixInverse, Cholesky: [..., M, M] -> [..., M, M]. */
static weft_status_t *unchanged_square_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  int64_t n;
  WEFT_RETURN_IF_ERROR(square_input(ctx, "input", &in, &n));
  return weft__sh_output(ctx, 0, &in);
}

/* MatrixDeterminant, LogMatrixDeterminant: [..., M, M] -> [...] (each output). */
static weft_status_t *determinant_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  int64_t n;
  WEFT_RETURN_IF_ERROR(square_input(ctx, "input", &in, &n));
  weft__shape_t out = in.rank < 0 ? kUnknownShape : batch_of(&in);
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *log_determinant_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(determinant_shape(ctx));
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  weft__shape_t out = in.rank < 2 ? kUnknownShape : batch_of(&in);
  return weft__sh_output(ctx, 1, &out);
}

/* Lu: lu = input ([..., M, M]), p = [..., M]. */
static weft_status_t *lu_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  int64_t n;
  WEFT_RETURN_IF_ERROR(square_input(ctx, "input", &in, &n));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &in));
  if (in.rank < 0) return weft__sh_output(ctx, 1, &kUnknownShape);
  weft__shape_t p = batch_of(&in);
  p.dims[p.rank++] = n;
  return weft__sh_output(ctx, 1, &p);
}

/* MatrixSolve: matrix [..., M, M], rhs [..., M, K] (same batch dims) -> [..., M, K]. */
static weft_status_t *matrix_solve_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t lhs, rhs;
  int64_t n;
  WEFT_RETURN_IF_ERROR(square_input(ctx, "matrix", &lhs, &n));
  weft__sh_input(ctx, 1, &rhs);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &rhs, 2, "rhs"));
  if (lhs.rank < 0 || rhs.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  weft__shape_t lb = batch_of(&lhs), rb = batch_of(&rhs), batch;
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &lb, &rb, &batch, "the batch dims of matrix and rhs"));
  int64_t m;
  if (!weft__sh_merge_dim(n, rhs.dims[rhs.rank - 2], &m)) {
    char *a = weft__sh_str(&lhs), *b = weft__sh_str(&rhs);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": matrix %s and rhs %s", n, rhs.dims[rhs.rank - 2], a, b);
    g_free(a);
    g_free(b);
    return status;
  }
  weft__shape_t out = batch;
  out.dims[out.rank++] = m;
  out.dims[out.rank++] = rhs.dims[rhs.rank - 1];
  return weft__sh_output(ctx, 0, &out);
}

/* MatrixTriangularSolve: matrix [..., M, M], rhs [..., M, K], batch dims broadcast. */
static weft_status_t *triangular_solve_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t lhs, rhs;
  int64_t n;
  WEFT_RETURN_IF_ERROR(square_input(ctx, "matrix", &lhs, &n));
  weft__sh_input(ctx, 1, &rhs);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &rhs, 2, "rhs"));
  if (lhs.rank < 0 || rhs.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  weft__shape_t lb = batch_of(&lhs), rb = batch_of(&rhs), batch;
  WEFT_RETURN_IF_ERROR(weft__sh_broadcast(ctx, &lb, &rb, &batch));
  int64_t m;
  if (!weft__sh_merge_dim(n, rhs.dims[rhs.rank - 2], &m)) {
    char *a = weft__sh_str(&lhs), *b = weft__sh_str(&rhs);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": matrix %s and rhs %s", n, rhs.dims[rhs.rank - 2], a, b);
    g_free(a);
    g_free(b);
    return status;
  }
  weft__shape_t out = batch;
  out.dims[out.rank++] = m;
  out.dims[out.rank++] = rhs.dims[rhs.rank - 1];
  return weft__sh_output(ctx, 0, &out);
}

/* MatrixSolveLs: matrix [..., M, N], rhs [..., M, K] (same batch dims), a scalar
 * l2_regularizer -> [..., N, K]. */
static weft_status_t *matrix_solve_ls_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t lhs, rhs, l2;
  weft__sh_input(ctx, 2, &l2);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &l2, 0, "l2_regularizer"));
  weft__sh_input(ctx, 0, &lhs);
  weft__sh_input(ctx, 1, &rhs);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &lhs, 2, "matrix"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &rhs, 2, "rhs"));
  if (lhs.rank < 0 || rhs.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  weft__shape_t lb = batch_of(&lhs), rb = batch_of(&rhs), batch;
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &lb, &rb, &batch, "the batch dims of matrix and rhs"));
  int64_t m;
  if (!weft__sh_merge_dim(lhs.dims[lhs.rank - 2], rhs.dims[rhs.rank - 2], &m)) {
    char *a = weft__sh_str(&lhs), *b = weft__sh_str(&rhs);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": matrix %s and rhs %s", lhs.dims[lhs.rank - 2], rhs.dims[rhs.rank - 2], a, b);
    g_free(a);
    g_free(b);
    return status;
  }
  weft__shape_t out = batch;
  out.dims[out.rank++] = lhs.dims[lhs.rank - 1];
  out.dims[out.rank++] = rhs.dims[rhs.rank - 1];
  return weft__sh_output(ctx, 0, &out);
}

/* Qr: input [..., M, N]; full_matrices: q [..., M, M], r [..., M, N]; else q [..., M, P],
 * r [..., P, N] with P = min(M, N). */
static weft_status_t *qr_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 2, "input"));
  if (in.rank < 0) {
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &kUnknownShape));
    return weft__sh_output(ctx, 1, &kUnknownShape);
  }
  int64_t m = in.dims[in.rank - 2], n = in.dims[in.rank - 1];
  int64_t p = m == WEFT_DIM_UNKNOWN || n == WEFT_DIM_UNKNOWN ? WEFT_DIM_UNKNOWN : m < n ? m : n;
  bool full = weft__sh_attr_bool(ctx, "full_matrices", false);
  weft__shape_t q = in, r = in;
  q.dims[q.rank - 1] = full ? m : p;
  r.dims[r.rank - 2] = full ? m : p;
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &q));
  return weft__sh_output(ctx, 1, &r);
}

/* SelfAdjointEigV2: e = [..., M] and v = [..., M, M], or [0] without compute_v. */
static weft_status_t *self_adjoint_eig_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  int64_t n;
  WEFT_RETURN_IF_ERROR(square_input(ctx, "input", &in, &n));
  weft__shape_t e = kUnknownShape;
  if (in.rank >= 0) {
    e = in;
    e.rank--;
  }
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &e));
  weft__shape_t none = {.rank = 1, .dims = {0}};
  return weft__sh_output(ctx, 1, weft__sh_attr_bool(ctx, "compute_v", true) ? &in : &none);
}

/* ---------------------------------------------------------------------------------------------
 * The table. TensorFlow also allows complex64 and complex128, which Weft has no dtype for. */

#define LINALG_T "T: {double, float, half}"

const weft_op_def_t weft__ops_linalg[] = {
    WEFT__OP("MatrixTriangularSolve", WEFT__SPECS("matrix: T", "rhs: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("lower: bool = true", "adjoint: bool = false",
                         "T: {bfloat16, double, float, half}"),
             0, triangular_solve_shape),
    WEFT__OP("MatrixSolve", WEFT__SPECS("matrix: T", "rhs: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("adjoint: bool = false", LINALG_T), 0, matrix_solve_shape),
    WEFT__OP("MatrixInverse", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("adjoint: bool = false", LINALG_T), 0, unchanged_square_shape),
    WEFT__OP("Cholesky", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS(LINALG_T), 0, unchanged_square_shape),
    WEFT__OP("MatrixDeterminant", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, float, double}"), 0, determinant_shape),
    WEFT__OP("LogMatrixDeterminant", WEFT__SPECS("input: T"),
             WEFT__SPECS("sign: T", "log_abs_determinant: T"),
             WEFT__SPECS("T: {half, float, double}"), 0, log_determinant_shape),
    WEFT__OP("Lu", WEFT__SPECS("input: T"), WEFT__SPECS("lu: T", "p: output_idx_type"),
             WEFT__SPECS(LINALG_T, "output_idx_type: {int32, int64} = DT_INT32"), 0, lu_shape),
    WEFT__OP("MatrixSolveLs", WEFT__SPECS("matrix: T", "rhs: T", "l2_regularizer: double"),
             WEFT__SPECS("output: T"), WEFT__SPECS(LINALG_T, "fast: bool = true"), 0,
             matrix_solve_ls_shape),
    WEFT__OP("Qr", WEFT__SPECS("input: T"), WEFT__SPECS("q: T", "r: T"),
             WEFT__SPECS("full_matrices: bool = false", LINALG_T), 0, qr_shape),
    WEFT__OP("SelfAdjointEigV2", WEFT__SPECS("input: T"), WEFT__SPECS("e: T", "v: T"),
             WEFT__SPECS("compute_v: bool = true", LINALG_T), 0, self_adjoint_eig_shape),
    WEFT__OPS_END,
};
