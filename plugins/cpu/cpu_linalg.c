/* cpu_linalg.c: the dense linear-algebra kernels with TensorFlow's CPU semantics (the Eigen
 * kernels of tensorflow/core/kernels/linalg): MatrixTriangularSolve (batch dims broadcast, as
 * TensorFlow's V2 kernel), MatrixSolve, MatrixInverse, MatrixDeterminant, LogMatrixDeterminant,
 * Cholesky, Lu, Qr, MatrixSolveLs (its fast path) and SelfAdjointEigV2, for float32 and float64
 * (and half for Qr: the 16-bit CPU kernels TensorFlow registers).
 * Each matrix is factored alone, in plain C in double precision (the matrices of real graphs are
 * small, and the plugin adds no LAPACK dependency): partially pivoted LU as Eigen's PartialPivLU
 * (largest magnitude in the column, first on ties, no swap when the column is all zeros), LL^T
 * from the lower triangle as Eigen's LLT, substitution for the triangular solves, and cyclic
 * Jacobi rotations for the symmetric eigenproblem (from the lower triangle, as Eigen's
 * SelfAdjointEigenSolver reads it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static const weft_dtype_t linalg_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};

/* ---------------------------------------------------------------------------------------------
 * Matrices in and out of tensors (float32 or float64), as row-major doubles. */

static void load(const weft_tensor_view_t *v, int64_t off, int64_t n, double *dst) {
  if (v->dtype == WEFT_DT_HALF) {
    const uint16_t *src = (const uint16_t *)v->data + off;
    for (int64_t i = 0; i < n; i++) dst[i] = weft__cpu_half_to_float(src[i]);
  } else if (v->dtype == WEFT_DT_DOUBLE) {
    memcpy(dst, (const double *)v->data + off, sizeof(double) * (size_t)n);
  } else {
    const float *src = (const float *)v->data + off;
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
  }
}

static void store(const weft_tensor_view_t *v, int64_t off, int64_t n, const double *src) {
  if (v->dtype == WEFT_DT_HALF) {
    uint16_t *dst = (uint16_t *)v->data + off;
    for (int64_t i = 0; i < n; i++) dst[i] = weft__cpu_float_to_half((float)src[i]);
  } else if (v->dtype == WEFT_DT_DOUBLE) {
    memcpy((double *)v->data + off, src, sizeof(double) * (size_t)n);
  } else {
    float *dst = (float *)v->data + off;
    for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i];
  }
}

static weft_status_t *scratch_doubles(weft_kernel_ctx_t *ctx, int64_t n, double **out) {
  return H->kernel_scratch(ctx, sizeof(double) * (size_t)(n > 0 ? n : 1), (void **)out);
}

/* a[n,n] (row-major) = P A = L U in place, L unit lower (strictly below the diagonal) and U
 * upper, as Eigen's PartialPivLU: perm[i] is the row of A that became row i. Returns the number
 * of row swaps made. */
static int64_t lu_factor(double *a, int64_t n, int64_t *perm) {
  int64_t swaps = 0;
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t k = 0; k < n; k++) {
    int64_t p = k;
    double biggest = fabs(a[k * n + k]);
    for (int64_t i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > biggest) {
        biggest = fabs(a[i * n + k]);
        p = i;
      }
    if (biggest != 0) {
      if (p != k) {
        for (int64_t j = 0; j < n; j++) {
          double t = a[k * n + j];
          a[k * n + j] = a[p * n + j];
          a[p * n + j] = t;
        }
        int64_t t = perm[k];
        perm[k] = perm[p];
        perm[p] = t;
        swaps++;
      }
      for (int64_t i = k + 1; i < n; i++) a[i * n + k] /= a[k * n + k];
    }
    for (int64_t i = k + 1; i < n; i++) {
      double l = a[i * n + k];
      for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= l * a[k * n + j];
    }
  }
  return swaps;
}

/* The smallest |U[i,i]|: TensorFlow's guard against exactly singular matrices is that it be > 0
 * (NaN pivots compare as not smaller, as Eigen's minCoeff skips them). */
static double min_abs_pivot(const double *lu, int64_t n) {
  double m = INFINITY;
  for (int64_t i = 0; i < n; i++)
    if (fabs(lu[i * n + i]) < m) m = fabs(lu[i * n + i]);
  return m;
}

/* x[n,k] = A^-1 b from the factors of lu_factor (b: [n,k] row-major; x may not alias b). */
static void lu_solve(const double *lu, const int64_t *perm, int64_t n, const double *b,
                     int64_t k, double *x) {
  for (int64_t i = 0; i < n; i++) memcpy(x + i * k, b + perm[i] * k, sizeof(double) * (size_t)k);
  for (int64_t c = 0; c < k; c++) {
    for (int64_t i = 0; i < n; i++) {
      double s = x[i * k + c];
      for (int64_t j = 0; j < i; j++) s -= lu[i * n + j] * x[j * k + c];
      x[i * k + c] = s;
    }
    for (int64_t i = n - 1; i >= 0; i--) {
      double s = x[i * k + c];
      for (int64_t j = i + 1; j < n; j++) s -= lu[i * n + j] * x[j * k + c];
      x[i * k + c] = s / lu[i * n + i];
    }
  }
}

static void transpose_square(double *a, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i + 1; j < n; j++) {
      double t = a[i * n + j];
      a[i * n + j] = a[j * n + i];
      a[j * n + i] = t;
    }
}

/* LinearAlgebraOp's checks of a single square input: rank >= 2 and square matrices. */
static weft_status_t *square_input(weft_kernel_ctx_t *ctx, weft_tensor_view_t *x, int64_t *n,
                                   int64_t *batch) {
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, x));
  if (x->rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input tensor 0 must have rank >= 2, got %d", x->rank);
  if (x->dims[x->rank - 2] != x->dims[x->rank - 1])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix must be square.");
  *n = x->dims[x->rank - 1];
  *batch = 1;
  for (int d = 0; d < x->rank - 2; d++) *batch *= x->dims[d];
  return NULL;
}

/* LL^T of a[n,n] in place as Eigen's LLT: only the lower triangle is read and written; false at
 * the first column whose pivot is not > 0 (a NaN pivot does not fail). */
static bool llt_inplace(double *a, int64_t n) {
  for (int64_t k = 0; k < n; k++) {
    double d = a[k * n + k];
    for (int64_t j = 0; j < k; j++) d -= a[k * n + j] * a[k * n + j];
    if (d <= 0) return false;
    d = sqrt(d);
    a[k * n + k] = d;
    for (int64_t i = k + 1; i < n; i++) {
      double s = a[i * n + k];
      for (int64_t j = 0; j < k; j++) s -= a[i * n + j] * a[k * n + j];
      a[i * n + k] = s / d;
    }
  }
  return true;
}

/* b[n,k] = (L L^T)^-1 b in place, L the lower triangle of l[n,n]. */
static void llt_solve(const double *l, int64_t n, double *b, int64_t k) {
  for (int64_t c = 0; c < k; c++) {
    for (int64_t i = 0; i < n; i++) {
      double s = b[i * k + c];
      for (int64_t j = 0; j < i; j++) s -= l[i * n + j] * b[j * k + c];
      b[i * k + c] = s / l[i * n + i];
    }
    for (int64_t i = n - 1; i >= 0; i--) {
      double s = b[i * k + c];
      for (int64_t j = i + 1; j < n; j++) s -= l[j * n + i] * b[j * k + c];
      b[i * k + c] = s / l[i * n + i];
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * MatrixInverse, Cholesky */

static weft_status_t *k_matrix_inverse(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  int64_t n, batch;
  WEFT_RETURN_IF_ERROR(square_input(ctx, &x, &n, &batch));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (y.num_elements == 0) return NULL; /* the inverse of an empty matrix is empty */
  bool adjoint = weft__cpu_attr_bool(ctx, "adjoint", false);
  double *a, *id, *inv;
  int64_t *perm;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &id));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &inv));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(int64_t) * (size_t)n, (void **)&perm));
  for (int64_t i = 0; i < n * n; i++) id[i] = i % (n + 1) == 0 ? 1 : 0;
  for (int64_t b = 0; b < batch; b++) {
    load(&x, b * n * n, n * n, a);
    if (adjoint) transpose_square(a, n);
    lu_factor(a, n, perm);
    if (!(min_abs_pivot(a, n) > 0))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input is not invertible.");
    lu_solve(a, perm, n, id, n, inv);
    store(&y, b * n * n, n * n, inv);
  }
  return NULL;
}

static weft_status_t *k_cholesky(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  int64_t n, batch;
  WEFT_RETURN_IF_ERROR(square_input(ctx, &x, &n, &batch));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (y.num_elements == 0) return NULL;
  double *a;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  for (int64_t b = 0; b < batch; b++) {
    load(&x, b * n * n, n * n, a);
    /* A failed decomposition is no error: TensorFlow fills the lower triangle with NaN (and
     * leaves the upper one as the output buffer held; here it is zero, as on success). */
    bool ok = llt_inplace(a, n);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++)
        if (j > i)
          a[i * n + j] = 0;
        else if (!ok)
          a[i * n + j] = NAN;
    store(&y, b * n * n, n * n, a);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MatrixDeterminant, LogMatrixDeterminant: TensorFlow's SLogDet. */

/* sign and log|det| of a[n,n] (destroyed) as TensorFlow's SLogDet: an empty matrix has
 * determinant 1; a log that is not finite (a zero pivot, overflow, NaN) gives sign 0 and log
 * -inf (+inf when it overflowed upwards). */
static void slogdet(double *a, int64_t n, int64_t *perm, double *sign, double *logdet) {
  *sign = 1;
  *logdet = 0;
  if (n > 0) {
    int64_t swaps = lu_factor(a, n, perm);
    *sign = swaps % 2 ? -1 : 1;
    for (int64_t i = 0; i < n; i++) {
      double d = a[i * n + i];
      *logdet += log(fabs(d));
      *sign *= d / fabs(d);
    }
  }
  if (!isfinite(*logdet)) {
    *sign = 0;
    *logdet = *logdet > 0 ? INFINITY : -INFINITY;
  }
}

static weft_status_t *k_determinant(weft_kernel_ctx_t *ctx, void *state) {
  bool log_form = state != NULL;
  weft_tensor_view_t x, sign_out, log_out;
  int64_t n, batch;
  WEFT_RETURN_IF_ERROR(square_input(ctx, &x, &n, &batch));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank - 2, x.dims, &sign_out));
  if (log_form)
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, x.dtype, x.rank - 2, x.dims, &log_out));
  double *a;
  int64_t *perm;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  WEFT_RETURN_IF_ERROR(
      H->kernel_scratch(ctx, sizeof(int64_t) * (size_t)(n > 0 ? n : 1), (void **)&perm));
  for (int64_t b = 0; b < batch; b++) {
    load(&x, b * n * n, n * n, a);
    double sign, logdet;
    slogdet(a, n, perm, &sign, &logdet);
    if (log_form) {
      store(&sign_out, b, 1, &sign);
      store(&log_out, b, 1, &logdet);
    } else {
      /* TensorFlow's determinant is sign * exp(log|det|), in the input's precision. */
      double det = x.dtype == WEFT_DT_FLOAT ? (double)((float)sign * expf((float)logdet))
                                            : sign * exp(logdet);
      store(&sign_out, b, 1, &det);
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Lu */

static weft_status_t *k_lu(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, lu_out, p_out;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input tensor must have rank >= 2, got %d",
                           x.rank);
  if (x.dims[x.rank - 2] != x.dims[x.rank - 1])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix must be square.");
  weft_dtype_t idx_type;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "output_idx_type", WEFT_DT_INT32, &idx_type));
  if (idx_type != WEFT_DT_INT32 && idx_type != WEFT_DT_INT64)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output_idx_type must be int32 or int64");
  int64_t n = x.dims[x.rank - 1], batch = 1;
  for (int d = 0; d < x.rank - 2; d++) batch *= x.dims[d];
  int64_t pdims[WEFT_MAX_RANK];
  memcpy(pdims, x.dims, sizeof pdims);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &lu_out));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, idx_type, x.rank - 1, pdims, &p_out));
  if (n == 0) return NULL;
  double *a;
  int64_t *perm;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(int64_t) * (size_t)n, (void **)&perm));
  for (int64_t b = 0; b < batch; b++) {
    load(&x, b * n * n, n * n, a);
    lu_factor(a, n, perm);
    store(&lu_out, b * n * n, n * n, a);
    for (int64_t i = 0; i < n; i++) {
      if (idx_type == WEFT_DT_INT32)
        ((int32_t *)p_out.data)[b * n + i] = (int32_t)perm[i];
      else
        ((int64_t *)p_out.data)[b * n + i] = perm[i];
    }
    if (!(min_abs_pivot(a, n) > 0))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input is not invertible.");
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MatrixSolve */

static weft_status_t *k_matrix_solve(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t m, r, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &m));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &r));
  /* LinearAlgebraOp::AnalyzeInputs, then ValidateSquareSolver. */
  if (m.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input tensor 0 must have rank >= 2, got %d", m.rank);
  if (r.rank != m.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "All input tensors must have the same rank.");
  int64_t batch = 1;
  for (int d = 0; d < m.rank - 2; d++) {
    if (r.dims[d] != m.dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "All input tensors must have the same outer dimensions.");
    batch *= m.dims[d];
  }
  int64_t n = m.dims[m.rank - 1], k = r.dims[r.rank - 1];
  if (m.dims[m.rank - 2] != n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "First input (lhs) must be a square matrix.");
  if (r.dims[r.rank - 2] != n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix and rhs are incompatible.");
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, r.dims, sizeof dims);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, m.dtype, r.rank, dims, &y));
  if (y.num_elements == 0) return NULL; /* an empty system's solution is empty */
  bool adjoint = weft__cpu_attr_bool(ctx, "adjoint", false);
  double *a, *rhs, *x;
  int64_t *perm;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * k, &rhs));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * k, &x));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(int64_t) * (size_t)n, (void **)&perm));
  for (int64_t b = 0; b < batch; b++) {
    load(&m, b * n * n, n * n, a);
    if (adjoint) transpose_square(a, n);
    lu_factor(a, n, perm);
    if (!(min_abs_pivot(a, n) > 0))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix is not invertible.");
    load(&r, b * n * k, n * k, rhs);
    lu_solve(a, perm, n, rhs, k, x);
    store(&y, b * n * k, n * k, x);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MatrixSolveLs: the fast path (normal equations and Cholesky) of TensorFlow's kernel. */

static weft_status_t *k_matrix_solve_ls(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t m, r, l2, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &m));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &r));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &l2));
  /* LinearAlgebraOp::AnalyzeInputs over the two matrix inputs, then ValidateSolver. */
  if (m.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input tensor 0 must have rank >= 2, got %d", m.rank);
  if (r.rank != m.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "All input tensors must have the same rank.");
  int64_t batch = 1;
  for (int d = 0; d < m.rank - 2; d++) {
    if (r.dims[d] != m.dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "All input tensors must have the same outer dimensions.");
    batch *= m.dims[d];
  }
  int64_t rows = m.dims[m.rank - 2], cols = m.dims[m.rank - 1], k = r.dims[r.rank - 1];
  if (r.dims[r.rank - 2] != rows)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix and rhs are incompatible.");
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, m.dims, sizeof dims);
  dims[m.rank - 2] = cols;
  dims[m.rank - 1] = k;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, m.dtype, m.rank, dims, &y));
  if (batch == 0) return NULL; /* TensorFlow checks the regularizer per matrix */
  if (l2.rank != 0) {
    char buf[CPU_SHAPE_STR_LEN];
    weft__cpu_shape_str(l2.rank, l2.dims, buf, sizeof buf);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "l2_regularizer must be scalar, got shape %s", buf);
  }
  double reg = *(const double *)l2.data;
  if (!(reg >= 0))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "l2_regularizer must be >= 0.");
  if (y.num_elements == 0) return NULL;
  if (rows == 0 || cols == 0 || k == 0) {
    /* TensorFlow leaves the output unwritten; zeros are the minimum-norm answer. */
    return weft__cpu_zero(ctx, &y);
  }
  if (!weft__cpu_attr_bool(ctx, "fast", true))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                           "MatrixSolveLs with fast=false (a complete orthogonal decomposition) "
                           "has no CPU kernel in Weft");
  bool over = rows >= cols; /* overdetermined: (A^T A + l2 I) X = A^T B */
  int64_t g = over ? cols : rows;
  double *a, *b, *gram, *t, *x;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, rows * cols, &a));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, rows * k, &b));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, g * g, &gram));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, g * k, &t));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, cols * k, &x));
  for (int64_t bi = 0; bi < batch; bi++) {
    load(&m, bi * rows * cols, rows * cols, a);
    load(&r, bi * rows * k, rows * k, b);
    for (int64_t i = 0; i < g; i++)
      for (int64_t j = 0; j <= i; j++) {
        double s = 0;
        if (over)
          for (int64_t q = 0; q < rows; q++) s += a[q * cols + i] * a[q * cols + j];
        else
          for (int64_t q = 0; q < cols; q++) s += a[i * cols + q] * a[j * cols + q];
        gram[i * g + j] = s + (i == j && reg > 0 ? reg : 0);
      }
    if (!llt_inplace(gram, g))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Input matrix was rank deficient or ill-conditioned. Try setting "
                             "fast=False or provide %s l2_regularizer > 0.",
                             over ? "a larger" : "an");
    if (over) {
      for (int64_t i = 0; i < cols; i++) /* X = A^T B, then solved in place */
        for (int64_t c = 0; c < k; c++) {
          double s = 0;
          for (int64_t q = 0; q < rows; q++) s += a[q * cols + i] * b[q * k + c];
          x[i * k + c] = s;
        }
      llt_solve(gram, g, x, k);
    } else {
      memcpy(t, b, sizeof(double) * (size_t)(rows * k)); /* Z = G^-1 B, X = A^T Z */
      llt_solve(gram, g, t, k);
      for (int64_t i = 0; i < cols; i++)
        for (int64_t c = 0; c < k; c++) {
          double s = 0;
          for (int64_t q = 0; q < rows; q++) s += a[q * cols + i] * t[q * k + c];
          x[i * k + c] = s;
        }
    }
    store(&y, bi * cols * k, cols * k, x);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MatrixTriangularSolve */

/* x[n,k] solves op(A) x = b with op(A) = A or A^T, reading only A's lower (lower) or upper
 * triangle. */
static void triangular_solve(const double *a, int64_t n, bool lower, bool adjoint,
                             const double *b, int64_t k, double *x) {
  bool fwd = lower != adjoint; /* op(A) is lower triangular: forward substitution */
  for (int64_t c = 0; c < k; c++) {
    for (int64_t t = 0; t < n; t++) {
      int64_t i = fwd ? t : n - 1 - t;
      double s = b[i * k + c];
      int64_t j0 = fwd ? 0 : i + 1, j1 = fwd ? i : n;
      for (int64_t j = j0; j < j1; j++)
        s -= (adjoint ? a[j * n + i] : a[i * n + j]) * x[j * k + c];
      x[i * k + c] = s / a[i * n + i];
    }
  }
}

static weft_status_t *k_triangular_solve(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t m, r, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &m));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &r));
  /* TensorFlow's message for In[1] names In[0] too. */
  if (m.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "In[0] ndims must be >= 2: %d", m.rank);
  if (r.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "In[0] ndims must be >= 2: %d", r.rank);
  bool lower = weft__cpu_attr_bool(ctx, "lower", true);
  bool adjoint = weft__cpu_attr_bool(ctx, "adjoint", false);
  char sm[CPU_SHAPE_STR_LEN], sr[CPU_SHAPE_STR_LEN];
  weft__cpu_shape_str(m.rank, m.dims, sm, sizeof sm);
  weft__cpu_shape_str(r.rank, r.dims, sr, sizeof sr);
  /* MatMulBCast: the batch dims (all but the last two) broadcast, numpy-style. */
  int mb = m.rank - 2, rb = r.rank - 2, ob = mb > rb ? mb : rb;
  int64_t out_dims[WEFT_MAX_RANK], ms[WEFT_MAX_RANK], rs[WEFT_MAX_RANK];
  int64_t mstride = 1, rstride = 1;
  for (int d = ob - 1; d >= 0; d--) {
    int dm = d - (ob - mb), dr = d - (ob - rb);
    int64_t em = dm >= 0 ? m.dims[dm] : 1, er = dr >= 0 ? r.dims[dr] : 1;
    if (em != er && em != 1 && er != 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "In[0] and In[1] must have compatible batch dimensions: %s vs. %s",
                             sm, sr);
    out_dims[d] = em == 1 ? er : em;
    ms[d] = em == 1 ? 0 : mstride;
    rs[d] = er == 1 ? 0 : rstride;
    mstride *= em;
    rstride *= er;
  }
  int64_t d0 = m.dims[m.rank - 2], d1 = m.dims[m.rank - 1];
  int64_t d2 = r.dims[r.rank - 2], d3 = r.dims[r.rank - 1];
  if (adjoint) {
    int64_t t = d0;
    d0 = d1;
    d1 = t;
  }
  if (d1 != d2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "In[0] mismatch In[1] shape: %lld vs. "
                           "%lld: %s %s %d %d", (long long)d1, (long long)d2, sm, sr, lower,
                           adjoint);
  /* TensorFlow's kernel leaves a non-square matrix to Eigen, which cannot solve it. */
  if (d0 != d1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix must be square.");
  int64_t n = d0, k = d3, batch = 1;
  for (int d = 0; d < ob; d++) batch *= out_dims[d];
  out_dims[ob] = n;
  out_dims[ob + 1] = k;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, m.dtype, ob + 2, out_dims, &y));
  if (y.num_elements == 0) return NULL;
  double *a, *rhs, *x;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * k, &rhs));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * k, &x));
  /* As TensorFlow's CPU kernel, only the first matrix's diagonal is checked for zeros; a zero
   * on another's gives infinities. */
  load(&m, 0, n * n, a);
  if (!(min_abs_pivot(a, n) > 0))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input matrix is not invertible.");
  int64_t prev_mi = -1;
  for (int64_t b = 0; b < batch; b++) {
    int64_t mi = 0, ri = 0, rem = b;
    for (int d = ob - 1; d >= 0; d--) {
      int64_t c = rem % out_dims[d];
      rem /= out_dims[d];
      mi += c * ms[d];
      ri += c * rs[d];
    }
    if (mi != prev_mi) load(&m, mi * n * n, n * n, a);
    prev_mi = mi;
    load(&r, ri * n * k, n * k, rhs);
    triangular_solve(a, n, lower, adjoint, rhs, k, x);
    store(&y, b * n * k, n * k, x);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Qr: Eigen's HouseholderQR, whose sign convention TensorFlow's answer carries. Column k's
 * reflector maps x = A[k:, k] to beta e1 with beta = -sign(x0) |x| (x0 = 0 counts as positive);
 * when the tail of x is (numerically) zero there is no reflection and beta = x0. Q is
 * H_0 H_1 ... H_{p-1} applied to the identity's first columns. */

static weft_status_t *k_qr(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, q_out, r_out;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input tensor 0 must have rank >= 2, got %d", x.rank);
  bool full = weft__cpu_attr_bool(ctx, "full_matrices", false);
  int64_t m = x.dims[x.rank - 2], n = x.dims[x.rank - 1], p = m < n ? m : n, batch = 1;
  for (int d = 0; d < x.rank - 2; d++) batch *= x.dims[d];
  int64_t qc = full ? m : p, rr = full ? m : p;
  int64_t qd[WEFT_MAX_RANK], rd[WEFT_MAX_RANK];
  memcpy(qd, x.dims, sizeof qd);
  memcpy(rd, x.dims, sizeof rd);
  qd[x.rank - 1] = qc;
  rd[x.rank - 2] = rr;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, qd, &q_out));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, x.dtype, x.rank, rd, &r_out));
  if (q_out.num_elements == 0 && r_out.num_elements == 0) return NULL;
  /* Eigen's threshold below which a tail counts as zero: the dtype's smallest normal number. */
  double tiny = x.dtype == WEFT_DT_DOUBLE ? 2.2250738585072014e-308
                : x.dtype == WEFT_DT_HALF ? 6.103515625e-05 : 1.1754943508222875e-38;
  double *a, *tau, *q, *r;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, m * n, &a));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, p, &tau));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, m * qc, &q));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, rr * n, &r));
  for (int64_t b = 0; b < batch; b++) {
    load(&x, b * m * n, m * n, a);
    for (int64_t k = 0; k < p; k++) {
      double c0 = a[k * n + k], tail = 0;
      for (int64_t i = k + 1; i < m; i++) tail += a[i * n + k] * a[i * n + k];
      double beta = c0;
      tau[k] = 0;
      if (tail > tiny) {
        beta = sqrt(c0 * c0 + tail);
        if (c0 >= 0) beta = -beta;
        for (int64_t i = k + 1; i < m; i++) a[i * n + k] /= c0 - beta;
        tau[k] = (beta - c0) / beta;
      } else {
        for (int64_t i = k + 1; i < m; i++) a[i * n + k] = 0;
      }
      a[k * n + k] = beta;
      /* A[k:, k+1:] = (I - tau v v^T) A[k:, k+1:], v = [1; A[k+1:, k]]. */
      for (int64_t j = k + 1; j < n && tau[k] != 0; j++) {
        double w = a[k * n + j];
        for (int64_t i = k + 1; i < m; i++) w += a[i * n + k] * a[i * n + j];
        w *= tau[k];
        a[k * n + j] -= w;
        for (int64_t i = k + 1; i < m; i++) a[i * n + j] -= a[i * n + k] * w;
      }
    }
    for (int64_t i = 0; i < rr; i++)
      for (int64_t j = 0; j < n; j++) r[i * n + j] = j >= i ? a[i * n + j] : 0;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < qc; j++) q[i * qc + j] = i == j ? 1 : 0;
    for (int64_t k = p - 1; k >= 0; k--) {
      if (tau[k] == 0) continue;
      for (int64_t j = 0; j < qc; j++) {
        double w = q[k * qc + j];
        for (int64_t i = k + 1; i < m; i++) w += a[i * n + k] * q[i * qc + j];
        w *= tau[k];
        q[k * qc + j] -= w;
        for (int64_t i = k + 1; i < m; i++) q[i * qc + j] -= a[i * n + k] * w;
      }
    }
    store(&q_out, b * m * qc, m * qc, q);
    store(&r_out, b * rr * n, rr * n, r);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SelfAdjointEigV2: cyclic Jacobi on the lower triangle mirrored. Eigenvalues ascending, as
 * Eigen's solver gives them; each eigenvector's sign (which the problem leaves open) chosen so
 * its largest component is positive, the first of equal ones. */

/* a[n,n] symmetric (destroyed: its diagonal ends as the eigenvalues); v[n,n] gets the
 * eigenvectors as columns. */
static void jacobi_eigen(double *a, int64_t n, double *v) {
  for (int64_t i = 0; i < n * n; i++) v[i] = i % (n + 1) == 0 ? 1 : 0;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0, total = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        total += a[i * n + j] * a[i * n + j];
        if (i != j) off += a[i * n + j] * a[i * n + j];
      }
    if (off <= 1e-30 * total || off == 0) break;
    for (int64_t p = 0; p < n; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double apq = a[p * n + q];
        if (apq == 0) continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; k++) {
          double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; k++) {
          double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (int64_t k = 0; k < n; k++) {
          double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
  }
}

static weft_status_t *k_self_adjoint_eig(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, e, vout;
  int64_t n, batch;
  WEFT_RETURN_IF_ERROR(square_input(ctx, &x, &n, &batch));
  bool compute_v = weft__cpu_attr_bool(ctx, "compute_v", true);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank - 1, x.dims, &e));
  int64_t none = 0;
  WEFT_RETURN_IF_ERROR(compute_v ? weft__cpu_output(ctx, 1, x.dtype, x.rank, x.dims, &vout)
                                 : weft__cpu_output(ctx, 1, x.dtype, 1, &none, &vout));
  if (n == 0 || batch == 0) return NULL;
  double *a, *v, *vals, *vecs;
  int64_t *order;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &a));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &v));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n, &vals));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, n * n, &vecs));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(int64_t) * (size_t)n, (void **)&order));
  for (int64_t b = 0; b < batch; b++) {
    load(&x, b * n * n, n * n, a);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) a[i * n + j] = a[j * n + i];
    jacobi_eigen(a, n, v);
    /* Insertion sort of the eigenvalues, ascending and stable. */
    for (int64_t i = 0; i < n; i++) {
      int64_t k = i;
      while (k > 0 && a[order[k - 1] * (n + 1)] > a[i * (n + 1)]) {
        order[k] = order[k - 1];
        k--;
      }
      order[k] = i;
    }
    for (int64_t j = 0; j < n; j++) {
      int64_t col = order[j];
      vals[j] = a[col * (n + 1)];
      int64_t big = 0;
      for (int64_t i = 1; i < n; i++)
        if (fabs(v[i * n + col]) > fabs(v[big * n + col])) big = i;
      double sign = v[big * n + col] < 0 ? -1 : 1;
      for (int64_t i = 0; i < n; i++) vecs[i * n + j] = sign * v[i * n + col];
    }
    store(&e, b * n, n, vals);
    if (compute_v) store(&vout, b * n * n, n * n, vecs);
  }
  return NULL;
}

/* TensorFlow registers Qr's CPU kernel for half too (qr_op_half.cc). */
static const weft_dtype_t qr_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF};

static int log_marker;

weft_status_t *weft__cpu_register_linalg(const weft_registrar_t *reg) {
  const size_t nt = sizeof linalg_types / sizeof linalg_types[0];
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "MatrixTriangularSolve", .compute = k_triangular_solve, .type_attr = "T",
       .dtypes = linalg_types, .n_dtypes = nt},
      {.op = "MatrixSolve", .compute = k_matrix_solve, .type_attr = "T", .dtypes = linalg_types,
       .n_dtypes = nt},
      {.op = "MatrixInverse", .compute = k_matrix_inverse, .type_attr = "T",
       .dtypes = linalg_types, .n_dtypes = nt},
      {.op = "Cholesky", .compute = k_cholesky, .type_attr = "T", .dtypes = linalg_types,
       .n_dtypes = nt},
      {.op = "MatrixDeterminant", .compute = k_determinant, .type_attr = "T",
       .dtypes = linalg_types, .n_dtypes = nt},
      {.op = "LogMatrixDeterminant", .compute = k_determinant, .type_attr = "T",
       .dtypes = linalg_types, .n_dtypes = nt, .user_data = &log_marker},
      {.op = "Lu", .compute = k_lu, .type_attr = "T", .dtypes = linalg_types, .n_dtypes = nt},
      {.op = "MatrixSolveLs", .compute = k_matrix_solve_ls, .type_attr = "T",
       .dtypes = linalg_types, .n_dtypes = nt},
      {.op = "Qr", .compute = k_qr, .type_attr = "T", .dtypes = qr_types,
       .n_dtypes = sizeof qr_types / sizeof qr_types[0]},
      {.op = "SelfAdjointEigV2", .compute = k_self_adjoint_eig, .type_attr = "T",
       .dtypes = linalg_types, .n_dtypes = nt},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
