/* cases_linalg.c: conformance cases of the dense linear-algebra ops: MatrixTriangularSolve
 * (lower/upper, adjoint, broadcast batch dims, the other triangle ignored), MatrixSolve and
 * MatrixInverse (adjoint, batches), MatrixDeterminant and LogMatrixDeterminant (negative,
 * singular and empty matrices), Cholesky (the upper triangle ignored, NaN for a matrix that is
 * not positive definite), Lu (pivoting, output_idx_type), Qr (Householder signs, tall, wide,
 * full_matrices), MatrixSolveLs (over- and underdetermined, l2_regularizer), each with empty
 * shapes and TensorFlow's errors (singular input, non-square, mismatched shapes, rank < 2). */
#include <math.h>
#include <string.h>

#include "reference.h"

static const weft_dtype_t linalg_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_INVALID};

/* The factorizations lose a few digits to cancellation: loosen the default tolerance. */
static cf_tol_t linalg_tol(weft_dtype_t dt) {
  return cf_tol_scale(cf_tol_default(dt), dt == WEFT_DT_DOUBLE ? 1000 : 100);
}

/* Uniform in [-1, 1], plus `boost` on each diagonal (well conditioned when boost ~ n / 2). */
static cf_array_t *gen_matrices(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims,
                                double boost) {
  cf_array_t *a = cf_gen_uniform(rng, dt, rank, dims, -1, 1);
  int64_t r = dims[rank - 2], c = dims[rank - 1];
  if (r == c && boost != 0)
    for (int64_t b = 0; b < (r > 0 ? a->n / (r * c) : 0); b++)
      for (int64_t i = 0; i < r; i++) {
        double *v = &a->v[b * r * c + i * c + i];
        *v = cf_round_to_dtype(dt, *v + (*v < 0 ? -boost : boost));
      }
  return a;
}

/* A case whose run must fail with code and message; unknown: inputs fed without shapes, so
 * that the kernel (not shape inference) sees them. */
static void error_case(cf_run_ctx_t *ctx, cf_case_t *c, weft_code_t code, const char *msg,
                       bool unknown) {
  for (int i = 0; i < c->n_inputs; i++) c->unknown_shape[i] = unknown;
  for (int i = 0; i < (c->n_outputs > 0 ? c->n_outputs : 1); i++)
    if (i >= c->n_outputs) cf_case_expect(c, NULL);
  cf_case_expect_error(c, code, msg);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * MatrixTriangularSolve */

static void tri_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                     int rm, const int64_t *dm, int rr, const int64_t *dr, bool lower,
                     bool adjoint) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *m = gen_matrices(&rng, dt, rm, dm, 1.5);
  cf_array_t *r = cf_gen_uniform(&rng, dt, rr, dr, -2, 2);
  cf_case_expect(c, cf_ref_triangular_solve(m, r, lower, adjoint));
  cf_case_input(c, m);
  cf_case_input(c, r);
  cf_case_attr_bool(c, "lower", lower);
  cf_case_attr_bool(c, "adjoint", adjoint);
  c->tol = linalg_tol(dt);
  cf_run_case(ctx, c);
}

static void emit_triangular_solve(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int64_t m4[] = {4, 4}, r43[] = {4, 3}, m1[] = {1, 1}, r11[] = {1, 1};
  tri_case(ctx, op, dt, "lower_4x4", 2, m4, 2, r43, true, false);
  tri_case(ctx, op, dt, "upper_4x4", 2, m4, 2, r43, false, false);
  tri_case(ctx, op, dt, "lower_adjoint", 2, m4, 2, r43, true, true);
  tri_case(ctx, op, dt, "upper_adjoint", 2, m4, 2, r43, false, true);
  tri_case(ctx, op, dt, "1x1", 2, m1, 2, r11, true, false);
  const int64_t m9[] = {9, 9}, r97[] = {9, 7};
  tri_case(ctx, op, dt, "odd_9x9", 2, m9, 2, r97, true, false);
  const int64_t mb[] = {2, 3, 3}, rb[] = {2, 3, 2};
  tri_case(ctx, op, dt, "batch", 3, mb, 3, rb, true, false);
  const int64_t rbb[] = {2, 3, 1};
  tri_case(ctx, op, dt, "bcast_matrix", 2, (const int64_t[]){3, 3}, 3, rbb, false, false);
  tri_case(ctx, op, dt, "bcast_rhs", 3, mb, 2, (const int64_t[]){3, 2}, true, true);
  const int64_t mx[] = {2, 1, 3, 3}, rx[] = {4, 3, 2};
  tri_case(ctx, op, dt, "bcast_both", 4, mx, 3, rx, false, true);
  tri_case(ctx, op, dt, "empty_rhs_cols", 2, (const int64_t[]){3, 3}, 2,
           (const int64_t[]){3, 0}, true, false);
  tri_case(ctx, op, dt, "empty_matrix", 2, (const int64_t[]){0, 0}, 2, (const int64_t[]){0, 2},
           true, false);
  tri_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){0, 2, 2}, 2,
           (const int64_t[]){2, 2}, true, false);

  /* A zero on the diagonal. */
  cf_case_t *c = cf_case_new(op, "error_singular", dt);
  cf_array_t *m = cf_array_new(dt, 2, m4);
  for (int i = 0; i < 16; i++) m->v[i] = i == 10 ? 0 : i % 5 == 0 ? 1 : 0.5;
  cf_case_input(c, m);
  cf_case_input(c, cf_array_new(dt, 2, r43));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input matrix is not invertible.", false);
  c = cf_case_new(op, "error_batch_dims", dt);
  cf_case_input(c, cf_array_new(dt, 3, mb));
  cf_case_input(c, cf_array_new(dt, 3, (const int64_t[]){3, 3, 2}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT,
             "In[0] and In[1] must have compatible batch dimensions: [2,3,3] vs. [3,3,2]", true);
  c = cf_case_new(op, "error_rows", dt);
  cf_case_input(c, cf_array_new(dt, 2, m4));
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){3, 2}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "In[0] mismatch In[1] shape: 4 vs. 3", true);
  c = cf_case_new(op, "error_rank", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){4}));
  cf_case_input(c, cf_array_new(dt, 2, r43));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "In[0] ndims must be >= 2: 1", true);
  c = cf_case_new(op, "error_shape_inference", dt);
  cf_case_input(c, cf_array_new(dt, 2, m4));
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){3, 2}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, NULL, false);
}

/* ---------------------------------------------------------------------------------------------
 * MatrixSolve, MatrixInverse */

static void solve_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                       int rank, const int64_t *dm, const int64_t *dr, bool adjoint) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *m = gen_matrices(&rng, dt, rank, dm, (double)dm[rank - 1] / 2);
  cf_array_t *r = cf_gen_uniform(&rng, dt, rank, dr, -2, 2);
  cf_case_expect(c, cf_ref_matrix_solve(m, r, adjoint));
  cf_case_input(c, m);
  cf_case_input(c, r);
  if (adjoint) cf_case_attr_bool(c, "adjoint", true);
  c->tol = linalg_tol(dt);
  cf_run_case(ctx, c);
}

static void emit_matrix_solve(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  solve_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, (const int64_t[]){1, 1}, false);
  solve_case(ctx, op, dt, "3x3_rhs2", 2, (const int64_t[]){3, 3}, (const int64_t[]){3, 2},
             false);
  solve_case(ctx, op, dt, "adjoint_5x5", 2, (const int64_t[]){5, 5}, (const int64_t[]){5, 3},
             true);
  solve_case(ctx, op, dt, "odd_13x13", 2, (const int64_t[]){13, 13}, (const int64_t[]){13, 1},
             false);
  solve_case(ctx, op, dt, "batch", 4, (const int64_t[]){2, 2, 4, 4},
             (const int64_t[]){2, 2, 4, 3}, false);
  solve_case(ctx, op, dt, "empty_matrix", 2, (const int64_t[]){0, 0}, (const int64_t[]){0, 3},
             false);
  solve_case(ctx, op, dt, "empty_rhs_cols", 2, (const int64_t[]){3, 3},
             (const int64_t[]){3, 0}, false);
  solve_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){0, 3, 3},
             (const int64_t[]){0, 3, 2}, true);

  const int64_t m3[] = {3, 3}, r32[] = {3, 2};
  cf_case_t *c = cf_case_new(op, "error_singular", dt);
  cf_array_t *m = cf_array_new(dt, 2, m3);
  for (int i = 0; i < 9; i++) m->v[i] = i < 6 ? (double)(i % 3 + 1) : (double)i;
  cf_case_input(c, m);
  cf_case_input(c, cf_array_new(dt, 2, r32));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input matrix is not invertible.", false);
  c = cf_case_new(op, "error_not_square", dt);
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){3, 2}));
  cf_case_input(c, cf_array_new(dt, 2, r32));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "First input (lhs) must be a square matrix.", true);
  c = cf_case_new(op, "error_rows", dt);
  cf_case_input(c, cf_array_new(dt, 2, m3));
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){2, 2}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input matrix and rhs are incompatible.", true);
  c = cf_case_new(op, "error_batch_dims", dt);
  cf_case_input(c, cf_array_new(dt, 3, (const int64_t[]){2, 3, 3}));
  cf_case_input(c, cf_array_new(dt, 3, (const int64_t[]){1, 3, 2}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT,
             "All input tensors must have the same outer dimensions.", true);
  c = cf_case_new(op, "error_rank", dt);
  cf_case_input(c, cf_array_new(dt, 2, m3));
  cf_case_input(c, cf_array_new(dt, 3, (const int64_t[]){1, 3, 2}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "All input tensors must have the same rank.", true);
}

static void inverse_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                         int rank, const int64_t *dims, bool adjoint) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *x = gen_matrices(&rng, dt, rank, dims, (double)dims[rank - 1] / 2);
  cf_case_expect(c, cf_ref_matrix_inverse(x, adjoint));
  cf_case_input(c, x);
  if (adjoint) cf_case_attr_bool(c, "adjoint", true);
  c->tol = linalg_tol(dt);
  cf_run_case(ctx, c);
}

/* Input tensors that one-input linear-algebra kernels refuse: singular (when `singular` names
 * the message), not square, rank 1. */
static void square_errors(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                          const char *singular, const char *rank_msg) {
  cf_case_t *c;
  if (singular) {
    c = cf_case_new(op, "error_singular", dt);
    cf_array_t *m = cf_array_new(dt, 3, (const int64_t[]){2, 3, 3});
    for (int i = 0; i < 18; i++) m->v[i] = i < 9 ? (i % 4 == 0 ? 2 : 0) : (double)(i % 3);
    cf_case_input(c, m);
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, singular, false);
  }
  c = cf_case_new(op, "error_not_square", dt);
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){2, 3}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input matrix must be square.", true);
  c = cf_case_new(op, "error_rank", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){4}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, rank_msg, true);
  c = cf_case_new(op, "error_shape_inference", dt);
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){2, 3}));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, NULL, false);
}

static void emit_matrix_inverse(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  inverse_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, false);
  inverse_case(ctx, op, dt, "4x4", 2, (const int64_t[]){4, 4}, false);
  inverse_case(ctx, op, dt, "adjoint_5x5", 2, (const int64_t[]){5, 5}, true);
  inverse_case(ctx, op, dt, "odd_17x17", 2, (const int64_t[]){17, 17}, false);
  inverse_case(ctx, op, dt, "batch", 4, (const int64_t[]){2, 3, 3, 3}, false);
  inverse_case(ctx, op, dt, "empty", 2, (const int64_t[]){0, 0}, false);
  inverse_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){2, 0, 0}, false);
  square_errors(ctx, op, dt, "Input is not invertible.", "Input tensor 0 must have rank >= 2");
}

/* ---------------------------------------------------------------------------------------------
 * MatrixDeterminant, LogMatrixDeterminant */

/* kind 0: random; 1: a repeated row (exactly singular); 2: scaled by 40 (log|det| large). */
static void det_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                     int rank, const int64_t *dims, int kind) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *x = gen_matrices(&rng, dt, rank, dims, 0);
  int64_t n = dims[rank - 1];
  for (int64_t b = 0; n > 1 && b < x->n / (n * n); b++)
    for (int64_t j = 0; j < n; j++) {
      double *row = x->v + b * n * n;
      if (kind == 1) row[(n - 1) * n + j] = row[j];
    }
  if (kind == 2)
    for (int64_t i = 0; i < x->n; i++) x->v[i] = cf_round_to_dtype(dt, x->v[i] * 40);
  if (strcmp(op, "MatrixDeterminant") == 0) {
    cf_case_expect(c, cf_ref_determinant(x));
  } else {
    cf_array_t *sign, *logdet;
    cf_ref_slogdet(x, &sign, &logdet);
    cf_case_expect(c, sign);
    cf_case_expect(c, logdet);
  }
  cf_case_input(c, x);
  c->tol = linalg_tol(dt);
  /* A determinant is a product: its absolute error scales with its size. */
  c->tol.atol = 1e-5;
  cf_run_case(ctx, c);
}

static void emit_determinant(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  det_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, 0);
  det_case(ctx, op, dt, "2x2", 2, (const int64_t[]){2, 2}, 0);
  det_case(ctx, op, dt, "5x5", 2, (const int64_t[]){5, 5}, 0);
  det_case(ctx, op, dt, "odd_11x11", 2, (const int64_t[]){11, 11}, 0);
  det_case(ctx, op, dt, "batch", 4, (const int64_t[]){2, 3, 3, 3}, 0);
  det_case(ctx, op, dt, "singular", 3, (const int64_t[]){2, 4, 4}, 1);
  det_case(ctx, op, dt, "large_values", 2, (const int64_t[]){6, 6}, 2);
  det_case(ctx, op, dt, "empty", 2, (const int64_t[]){0, 0}, 0);
  det_case(ctx, op, dt, "empty_matrices", 3, (const int64_t[]){3, 0, 0}, 0);
  det_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){0, 2, 2}, 0);
  square_errors(ctx, op, dt, NULL, "Input tensor 0 must have rank >= 2");
}

/* ---------------------------------------------------------------------------------------------
 * Cholesky */

/* kind 0: A A^T + n I with noise in the (ignored) upper triangle; 1: not positive definite. */
static void cholesky_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                          int rank, const int64_t *dims, int kind) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *g = cf_gen_uniform(&rng, WEFT_DT_DOUBLE, rank, dims, -1, 1);
  cf_array_t *x = cf_array_new(dt, rank, dims);
  int64_t n = dims[rank - 1];
  for (int64_t b = 0; n > 0 && b < x->n / (n * n); b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = i == j ? (double)n : 0;
        const double *gb = g->v + b * n * n;
        for (int64_t q = 0; q < n; q++) s += gb[i * n + q] * gb[j * n + q];
        if (j > i) s = gb[i * n + j] * 7; /* never read */
        if (kind == 1 && i == n - 1 && j == n - 1 && b == 0) s = -1;
        x->v[b * n * n + i * n + j] = cf_round_to_dtype(dt, s);
      }
  cf_array_free(g);
  cf_case_expect(c, cf_ref_cholesky(x));
  cf_case_input(c, x);
  c->tol = linalg_tol(dt);
  cf_run_case(ctx, c);
}

static void emit_cholesky(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cholesky_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, 0);
  cholesky_case(ctx, op, dt, "4x4", 2, (const int64_t[]){4, 4}, 0);
  cholesky_case(ctx, op, dt, "odd_15x15", 2, (const int64_t[]){15, 15}, 0);
  cholesky_case(ctx, op, dt, "batch", 3, (const int64_t[]){2, 3, 3}, 0);
  cholesky_case(ctx, op, dt, "not_positive_definite", 3, (const int64_t[]){2, 3, 3}, 1);
  cholesky_case(ctx, op, dt, "empty", 2, (const int64_t[]){0, 0}, 0);
  cholesky_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){0, 2, 2}, 0);
  square_errors(ctx, op, dt, NULL, "Input tensor 0 must have rank >= 2");
}

/* ---------------------------------------------------------------------------------------------
 * Lu */

/* kind 0: random; 1: zeros on the first column's top (pivoting needed); 2: rows to swap only
 * at the last step. */
static void lu_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                    int rank, const int64_t *dims, weft_dtype_t idx, int kind) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *x = gen_matrices(&rng, dt, rank, dims, kind == 2 ? 4 : 0);
  int64_t n = dims[rank - 1];
  if (kind == 1 && n > 1) x->v[0] = 0;
  cf_array_t *p;
  cf_case_expect(c, cf_ref_lu(x, idx, &p));
  cf_case_expect(c, p);
  cf_case_input(c, x);
  if (idx != WEFT_DT_INT32) cf_case_attr_type(c, "output_idx_type", idx);
  c->tol = linalg_tol(dt);
  cf_run_case(ctx, c);
}

static void emit_lu(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  lu_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, WEFT_DT_INT32, 0);
  lu_case(ctx, op, dt, "3x3", 2, (const int64_t[]){3, 3}, WEFT_DT_INT32, 0);
  lu_case(ctx, op, dt, "zero_pivot_start", 2, (const int64_t[]){4, 4}, WEFT_DT_INT32, 1);
  lu_case(ctx, op, dt, "diagonally_dominant", 2, (const int64_t[]){5, 5}, WEFT_DT_INT32, 2);
  lu_case(ctx, op, dt, "odd_19x19", 2, (const int64_t[]){19, 19}, WEFT_DT_INT32, 0);
  lu_case(ctx, op, dt, "batch_int64", 4, (const int64_t[]){2, 2, 4, 4}, WEFT_DT_INT64, 0);
  lu_case(ctx, op, dt, "empty", 2, (const int64_t[]){0, 0}, WEFT_DT_INT32, 0);
  lu_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){2, 0, 0}, WEFT_DT_INT64, 0);
  lu_case(ctx, op, dt, "empty_batch_dim", 3, (const int64_t[]){0, 3, 3}, WEFT_DT_INT32, 0);
  square_errors(ctx, op, dt, "Input is not invertible.", "Input tensor must have rank >= 2, got 1");
}

/* ---------------------------------------------------------------------------------------------
 * MatrixSolveLs */

static cf_case_t *solve_ls_new(const char *op, weft_dtype_t dt, const char *name, int rank,
                               const int64_t *dm, const int64_t *dr, double l2,
                               cf_array_t **m, cf_array_t **r) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  *m = cf_gen_uniform(&rng, dt, rank, dm, -1, 1);
  *r = cf_gen_uniform(&rng, dt, rank, dr, -2, 2);
  cf_case_input(c, *m);
  cf_case_input(c, *r);
  cf_case_input(c, cf_array_scalar(WEFT_DT_DOUBLE, l2));
  return c;
}

static void solve_ls_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                          int rank, const int64_t *dm, const int64_t *dr, double l2) {
  cf_array_t *m, *r;
  cf_case_t *c = solve_ls_new(op, dt, name, rank, dm, dr, l2, &m, &r);
  cf_case_expect(c, cf_ref_matrix_solve_ls(m, r, l2));
  /* The normal equations square the condition number. */
  c->tol = cf_tol_scale(linalg_tol(dt), 10);
  cf_run_case(ctx, c);
}

static void emit_matrix_solve_ls(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int64_t m53[] = {5, 3}, r52[] = {5, 2}, m35[] = {3, 5}, r32[] = {3, 2};
  solve_ls_case(ctx, op, dt, "overdetermined", 2, m53, r52, 0);
  solve_ls_case(ctx, op, dt, "overdetermined_l2", 2, m53, r52, 0.5);
  solve_ls_case(ctx, op, dt, "underdetermined", 2, m35, r32, 0);
  solve_ls_case(ctx, op, dt, "underdetermined_l2", 2, m35, r32, 0.25);
  solve_ls_case(ctx, op, dt, "square_4x4", 2, (const int64_t[]){4, 4},
                (const int64_t[]){4, 1}, 0);
  solve_ls_case(ctx, op, dt, "odd_17x7", 2, (const int64_t[]){17, 7},
                (const int64_t[]){17, 3}, 0);
  solve_ls_case(ctx, op, dt, "batch", 3, (const int64_t[]){2, 6, 3},
                (const int64_t[]){2, 6, 2}, 0.1);
  solve_ls_case(ctx, op, dt, "empty_rows", 2, (const int64_t[]){0, 3}, (const int64_t[]){0, 2},
                0);
  solve_ls_case(ctx, op, dt, "empty_rhs_cols", 2, m53, (const int64_t[]){5, 0}, 0);
  solve_ls_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){0, 5, 3},
                (const int64_t[]){0, 5, 2}, -1);

  cf_array_t *m, *r;
  cf_case_t *c = solve_ls_new(op, dt, "error_rank_deficient_over", 2, m53, r52, 0, &m, &r);
  for (int64_t i = 0; i < 5; i++) m->v[i * 3 + 1] = 0;
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input matrix was rank deficient or "
             "ill-conditioned. Try setting fast=False or provide a larger l2_regularizer > 0.",
             false);
  c = solve_ls_new(op, dt, "error_rank_deficient_under", 2, m35, r32, 0, &m, &r);
  for (int64_t j = 0; j < 5; j++) m->v[2 * 5 + j] = 0;
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Try setting fast=False or provide an "
             "l2_regularizer > 0.", false);
  c = solve_ls_new(op, dt, "error_negative_l2", 2, m53, r52, -0.5, &m, &r);
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "l2_regularizer must be >= 0.", false);
  c = solve_ls_new(op, dt, "error_rows", 2, m53, r32, 0, &m, &r);
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input matrix and rhs are incompatible.", true);
  /* The complete orthogonal decomposition path is not implemented: an honest error. */
  c = solve_ls_new(op, dt, "unimplemented_not_fast", 2, m53, r52, 0, &m, &r);
  cf_case_attr_bool(c, "fast", false);
  error_case(ctx, c, WEFT_UNIMPLEMENTED, "fast=false", false);
}

/* ---------------------------------------------------------------------------------------------
 * Qr */

/* kind 0: random; 1: already upper triangular (no reflections: Q = I, R = A); 2: negative
 * first column. */
static void qr_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                    int rank, const int64_t *dims, bool full, int kind) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *x = cf_gen_uniform(&rng, dt, rank, dims, -1, 1);
  int64_t m = dims[rank - 2], n = dims[rank - 1];
  for (int64_t b = 0; m * n > 0 && b < x->n / (m * n); b++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double *v = &x->v[b * m * n + i * n + j];
        if (kind == 1 && j < i) *v = 0;
        if (kind == 2 && j == 0) *v = -fabs(*v) - 0.25;
      }
  cf_array_t *q, *r;
  cf_ref_qr(x, full, &q, &r);
  cf_case_expect(c, q);
  cf_case_expect(c, r);
  cf_case_input(c, x);
  if (full) cf_case_attr_bool(c, "full_matrices", true);
  c->tol = linalg_tol(dt);
  cf_run_case(ctx, c);
}

static void emit_qr(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  qr_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, false, 0);
  qr_case(ctx, op, dt, "3x3", 2, (const int64_t[]){3, 3}, false, 0);
  qr_case(ctx, op, dt, "tall_5x3", 2, (const int64_t[]){5, 3}, false, 0);
  qr_case(ctx, op, dt, "tall_5x3_full", 2, (const int64_t[]){5, 3}, true, 0);
  qr_case(ctx, op, dt, "wide_3x6", 2, (const int64_t[]){3, 6}, false, 0);
  qr_case(ctx, op, dt, "wide_3x6_full", 2, (const int64_t[]){3, 6}, true, 0);
  qr_case(ctx, op, dt, "upper_triangular", 2, (const int64_t[]){4, 4}, false, 1);
  qr_case(ctx, op, dt, "negative_column", 2, (const int64_t[]){4, 3}, true, 2);
  qr_case(ctx, op, dt, "odd_13x11", 2, (const int64_t[]){13, 11}, false, 0);
  qr_case(ctx, op, dt, "batch", 4, (const int64_t[]){2, 2, 4, 3}, false, 0);
  qr_case(ctx, op, dt, "empty_rows_full", 2, (const int64_t[]){0, 3}, true, 0);
  qr_case(ctx, op, dt, "empty_cols_full", 2, (const int64_t[]){3, 0}, true, 0);
  qr_case(ctx, op, dt, "empty_cols", 2, (const int64_t[]){3, 0}, false, 0);
  qr_case(ctx, op, dt, "empty_batch", 3, (const int64_t[]){0, 3, 2}, true, 0);
  cf_case_t *c = cf_case_new(op, "error_rank", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){4}));
  c->unknown_shape[0] = true;
  cf_case_expect(c, NULL);
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Input tensor 0 must have rank >= 2, got 1");
  cf_run_case(ctx, c);
}

const cf_suite_t cf_suites_linalg[] = {
    {"MatrixTriangularSolve", linalg_dtypes, emit_triangular_solve, NULL},
    {"MatrixSolve", linalg_dtypes, emit_matrix_solve, NULL},
    {"MatrixInverse", linalg_dtypes, emit_matrix_inverse, NULL},
    {"MatrixDeterminant", linalg_dtypes, emit_determinant, NULL},
    {"LogMatrixDeterminant", linalg_dtypes, emit_determinant, NULL},
    {"Cholesky", linalg_dtypes, emit_cholesky, NULL},
    {"Lu", linalg_dtypes, emit_lu, NULL},
    {"Qr", linalg_dtypes, emit_qr, NULL},
    {"MatrixSolveLs", linalg_dtypes, emit_matrix_solve_ls, NULL},
    {NULL, NULL, NULL, NULL},
};
