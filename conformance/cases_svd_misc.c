/* cases_svd_misc.c: conformance cases of Svd (square, tall, wide, batched, full_matrices,
 * compute_uv, rank deficiency, repeated values, empty matrices, NaN input, rank < 2),
 * SelfAdjointEigV2 (by property too: batches, repeated eigenvalues, compute_v), LinSpace
 * (num 1, 2 and many, descending, int64 num, errors), Diag (ranks 1..3, empty, rank 0), DiagPart
 * (ranks 2, 4, 6, every dtype, empty, errors), SparseTensorDenseAdd (ranks 1..3, duplicates,
 * int64 indices, empty, each of TensorFlow's validation errors) and SparseToDense (matrix, vector
 * and scalar indices, a scalar value, empty, unvalidated duplicates, every dtype, the errors).
 * Svd's u and v are unique only up to sign, so they are checked by property: orthonormal columns
 * and U diag(s) V^T = A; s against the reference. */
#include <math.h>
#include <string.h>

#include "reference.h"

static void error_case(cf_run_ctx_t *ctx, cf_case_t *c, const char *msg, bool unknown) {
  for (int i = 0; i < c->n_inputs; i++) c->unknown_shape[i] = unknown;
  if (c->n_outputs == 0) cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * Svd */

static char *check_svd(const cf_case_t *c, cf_array_t *const *out, int n_out) {
  const cf_array_t *x = c->inputs[0];
  bool uv = cf_case_int(c, "compute_uv", 1) != 0, full = cf_case_int(c, "full_matrices", 0) != 0;
  int64_t m = x->dims[x->rank - 2], n = x->dims[x->rank - 1], p = m < n ? m : n;
  int64_t batch = m * n > 0 ? x->n / (m * n) : 0;
  double tol = x->dtype == WEFT_DT_DOUBLE ? 1e-9 : 2e-4;
  if (n_out < 3) return g_strdup("three outputs expected");
  cf_array_t *want = cf_ref_singular_values(x);
  cf_compare_t cmp = {.ok = true};
  cf_tol_t t = {.rtol = tol, .atol = tol * 10, .max_nmse = tol};
  cf_compare_arrays(out[0], want, t, &cmp, "s");
  cf_array_free(want);
  if (!cmp.ok) return cmp.message ? cmp.message : g_strdup("s differs");
  const cf_array_t *u = out[1], *v = out[2];
  int64_t uc = full ? m : p, vc = full ? n : p;
  if (!uv) {
    if (u->n != 0 || v->n != 0 || u->rank != 1 || v->rank != 1) return g_strdup("u, v not [0]");
    return NULL;
  }
  if (u->rank != x->rank || u->dims[u->rank - 2] != m || u->dims[u->rank - 1] != uc ||
      v->dims[v->rank - 2] != n || v->dims[v->rank - 1] != vc)
    return g_strdup("u or v has the wrong shape");
  for (int64_t b = 0; b < batch; b++) {
    const double *a = x->v + b * m * n, *s = out[0]->v + b * p;
    const double *ub = u->v + b * m * uc, *vb = v->v + b * n * vc;
    double scale = s[0] > 1 ? s[0] : 1;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double r = 0;
        for (int64_t k = 0; k < p; k++) r += ub[i * uc + k] * s[k] * vb[j * vc + k];
        if (fabs(r - a[i * n + j]) > tol * 10 * scale)
          return g_strdup_printf("batch %lld: U diag(s) V^T [%lld,%lld] = %g, A = %g",
                                 (long long)b, (long long)i, (long long)j, r, a[i * n + j]);
      }
    for (int pass = 0; pass < 2; pass++) {
      const double *q = pass ? vb : ub;
      int64_t rows = pass ? n : m, cols = pass ? vc : uc;
      for (int64_t k = 0; k < cols; k++)
        for (int64_t l = 0; l < cols; l++) {
          double d = 0;
          for (int64_t i = 0; i < rows; i++) d += q[i * cols + k] * q[i * cols + l];
          if (fabs(d - (k == l)) > tol * 10)
            return g_strdup_printf("batch %lld: %s columns %lld and %lld: dot %g",
                                   (long long)b, pass ? "v" : "u", (long long)k, (long long)l, d);
        }
    }
  }
  return NULL;
}

static void svd_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                     cf_array_t *x, bool uv, bool full) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_input(c, x);
  cf_case_attr_bool(c, "compute_uv", uv);
  cf_case_attr_bool(c, "full_matrices", full);
  for (int i = 0; i < 3; i++) cf_case_expect(c, NULL);
  c->check = check_svd;
  cf_run_case(ctx, c);
}

static void svd_random(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                       int rank, const int64_t *dims, bool uv, bool full) {
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, cf_dtype_is_float(dt) ? "f" : "i");
  svd_case(ctx, op, dt, name, cf_gen_uniform(&rng, dt, rank, dims, -2, 2), uv, full);
}

static void emit_svd(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int64_t sq[] = {3, 3}, tall[] = {5, 3}, wide[] = {3, 6};
  for (int f = 0; f < 2; f++)
    for (int u = 0; u < 2; u++) {
      char nm[64];
      g_snprintf(nm, sizeof nm, "square%s%s", u ? "_uv" : "", f ? "_full" : "");
      svd_random(ctx, op, dt, nm, 2, sq, u, f);
      g_snprintf(nm, sizeof nm, "tall%s%s", u ? "_uv" : "", f ? "_full" : "");
      svd_random(ctx, op, dt, nm, 2, tall, u, f);
      g_snprintf(nm, sizeof nm, "wide%s%s", u ? "_uv" : "", f ? "_full" : "");
      svd_random(ctx, op, dt, nm, 2, wide, u, f);
    }
  svd_random(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1}, true, true);
  svd_random(ctx, op, dt, "row_1x4", 2, (const int64_t[]){1, 4}, true, true);
  svd_random(ctx, op, dt, "odd_9x7", 2, (const int64_t[]){9, 7}, true, false);
  svd_random(ctx, op, dt, "tall_40x3_full", 2, (const int64_t[]){40, 3}, true, true);
  svd_random(ctx, op, dt, "wide_2x33_full", 2, (const int64_t[]){2, 33}, true, true);
  svd_random(ctx, op, dt, "square_16", 2, (const int64_t[]){16, 16}, true, false);
  svd_random(ctx, op, dt, "batch", 3, (const int64_t[]){2, 4, 3}, true, false);
  svd_random(ctx, op, dt, "batch_4d_full", 4, (const int64_t[]){2, 2, 3, 3}, true, true);
  svd_random(ctx, op, dt, "batch_no_uv", 3, (const int64_t[]){2, 3, 3}, false, false);
  /* Rank 1: one non-zero singular value, the other vectors completed. */
  cf_array_t *x = cf_array_new(dt, 2, (const int64_t[]){4, 3});
  for (int i = 0; i < 12; i++) x->v[i] = (i / 3 + 1) * (i % 3 - 1.0);
  svd_case(ctx, op, dt, "rank_deficient_full", x, true, true);
  x = cf_array_new(dt, 2, (const int64_t[]){3, 3});
  x->v[0] = x->v[4] = x->v[8] = 2; /* repeated singular values */
  svd_case(ctx, op, dt, "identity_times_2", x, true, false);
  svd_case(ctx, op, dt, "zeros_full", cf_array_new(dt, 2, (const int64_t[]){2, 3}), true, true);
  svd_case(ctx, op, dt, "empty_rows_full", cf_array_new(dt, 2, (const int64_t[]){0, 3}), true,
           true);
  svd_case(ctx, op, dt, "empty_cols", cf_array_new(dt, 2, (const int64_t[]){3, 0}), true, false);
  svd_case(ctx, op, dt, "empty_batch", cf_array_new(dt, 3, (const int64_t[]){0, 3, 3}), true,
           false);
  /* NaN in: NaN everywhere out. */
  cf_case_t *c = cf_case_new(op, "nan", dt);
  x = cf_array_new(dt, 2, (const int64_t[]){2, 2});
  x->v[0] = NAN;
  cf_case_input(c, x);
  cf_array_t *nan_s = cf_array_new(dt, 1, (const int64_t[]){2});
  nan_s->v[0] = nan_s->v[1] = NAN;
  cf_case_expect(c, nan_s);
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_rank", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){3}));
  error_case(ctx, c, "Input tensor 0 must have rank >= 2, got 1", true);
  c = cf_case_new(op, "error_shape_inference", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){3}));
  error_case(ctx, c, NULL, false);
}

/* ---------------------------------------------------------------------------------------------
 * LinSpace */

static void linspace_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                          double start, double stop, int64_t num, weft_dtype_t tidx) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_input(c, cf_array_scalar(dt, start));
  cf_case_input(c, cf_array_scalar(dt, stop));
  cf_case_const_input(c, cf_array_scalar(tidx, (double)num));
  cf_case_expect(c, cf_ref_linspace(dt, start, stop, num));
  cf_run_case(ctx, c);
}

static void emit_linspace(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  linspace_case(ctx, op, dt, "0_to_1_by_5", 0, 1, 5, WEFT_DT_INT32);
  linspace_case(ctx, op, dt, "num_1", 3.5, 9, 1, WEFT_DT_INT32);
  linspace_case(ctx, op, dt, "num_2", -1, 1, 2, WEFT_DT_INT32);
  linspace_case(ctx, op, dt, "descending", 10, -3.25, 7, WEFT_DT_INT32);
  linspace_case(ctx, op, dt, "many_int64_num", 0.1, 0.7, 1001, WEFT_DT_INT64);
  linspace_case(ctx, op, dt, "start_eq_stop", 2, 2, 4, WEFT_DT_INT64);
  cf_case_t *c = cf_case_new(op, "error_num_0", dt);
  cf_case_input(c, cf_array_scalar(dt, 0));
  cf_case_input(c, cf_array_scalar(dt, 1));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 0));
  error_case(ctx, c, "Requires num > 0: 0", false);
  c = cf_case_new(op, "error_num_0_const", dt);
  cf_case_input(c, cf_array_scalar(dt, 0));
  cf_case_input(c, cf_array_scalar(dt, 1));
  cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT64, -2));
  error_case(ctx, c, "Requires num > 0: -2", false);
  c = cf_case_new(op, "error_start_not_scalar", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){2}));
  cf_case_input(c, cf_array_scalar(dt, 1));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 3));
  error_case(ctx, c, "start must be a scalar, not shape [2]", true);
  c = cf_case_new(op, "error_num_not_scalar", dt);
  cf_case_input(c, cf_array_scalar(dt, 0));
  cf_case_input(c, cf_array_scalar(dt, 1));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, (const int64_t[]){3}));
  error_case(ctx, c, "num must be a scalar, not shape [1]", true);
}

/* ---------------------------------------------------------------------------------------------
 * DiagPart */

static void diag_part_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                           int rank, const int64_t *dims) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *x = cf_gen_uniform(&rng, dt, rank, dims, -50, 50);
  cf_case_expect(c, cf_ref_diag_part(x));
  cf_case_input(c, x);
  cf_run_case(ctx, c);
}

static void emit_diag_part(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  diag_part_case(ctx, op, dt, "rank2", 2, (const int64_t[]){4, 4});
  diag_part_case(ctx, op, dt, "rank4", 4, (const int64_t[]){2, 3, 2, 3});
  diag_part_case(ctx, op, dt, "rank6", 6, (const int64_t[]){2, 1, 3, 2, 1, 3});
  diag_part_case(ctx, op, dt, "1x1", 2, (const int64_t[]){1, 1});
  diag_part_case(ctx, op, dt, "empty", 4, (const int64_t[]){0, 2, 0, 2});
  cf_case_t *c = cf_case_new(op, "error_odd_rank", dt);
  cf_case_input(c, cf_array_new(dt, 3, (const int64_t[]){2, 2, 2}));
  error_case(ctx, c, "even and positive, got shape [2,2,2]", true);
  c = cf_case_new(op, "error_mismatch", dt);
  cf_case_input(c, cf_array_new(dt, 4, (const int64_t[]){3, 3, 7, 3}));
  error_case(ctx, c, "Invalid shape [3,3,7,3]: dimensions 0 and 2 do not match.", true);
  c = cf_case_new(op, "error_shape_inference", dt);
  cf_case_input(c, cf_array_new(dt, 3, (const int64_t[]){2, 2, 2}));
  error_case(ctx, c, "Input must have even and non-zero rank, input rank is 3", false);
}

/* ---------------------------------------------------------------------------------------------
 * Diag */

static void diag_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                      int rank, const int64_t *dims) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *x = cf_gen_uniform(&rng, dt, rank, dims, -50, 50);
  cf_case_expect(c, cf_ref_diag(x));
  cf_case_input(c, x);
  cf_run_case(ctx, c);
}

static void emit_diag(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  diag_case(ctx, op, dt, "rank1", 1, (const int64_t[]){5});
  diag_case(ctx, op, dt, "rank2", 2, (const int64_t[]){2, 3});
  diag_case(ctx, op, dt, "rank3", 3, (const int64_t[]){2, 1, 3});
  diag_case(ctx, op, dt, "one", 1, (const int64_t[]){1});
  diag_case(ctx, op, dt, "empty", 2, (const int64_t[]){2, 0});
  cf_case_t *c = cf_case_new(op, "error_scalar", dt);
  cf_case_input(c, cf_array_scalar(dt, 1));
  error_case(ctx, c, "Input must be at least rank 1, got 0", true);
  c = cf_case_new(op, "error_shape_inference", dt);
  cf_case_input(c, cf_array_scalar(dt, 1));
  error_case(ctx, c, NULL, false);
}

/* ---------------------------------------------------------------------------------------------
 * SparseTensorDenseAdd */

static void sda_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                     weft_dtype_t it, int64_t nnz, int rank, const int64_t *dims,
                     const int64_t *idx, const char *err, bool unknown) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *ind = cf_array_new(it, 2, (const int64_t[]){nnz, rank});
  for (int64_t i = 0; i < nnz * rank; i++) ind->v[i] = (double)idx[i];
  double lo = cf_dtype_is_signed(dt) ? -20 : 0;
  cf_array_t *val = cf_gen_uniform(&rng, dt, 1, &nnz, lo, 20);
  cf_array_t *b = cf_gen_uniform(&rng, dt, rank, dims, lo, 20);
  if (!err) cf_case_expect(c, cf_ref_sparse_dense_add(ind, val, b));
  cf_case_input(c, ind);
  cf_case_input(c, val);
  cf_case_input(c, cf_array_ints(it, rank, dims));
  cf_case_input(c, b);
  if (err) error_case(ctx, c, err, unknown);
  else cf_run_case(ctx, c);
}

static void emit_sparse_dense_add(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int64_t d1[] = {6}, d2[] = {3, 4}, d3[] = {2, 3, 2};
  sda_case(ctx, op, dt, "rank1", WEFT_DT_INT64, 3, 1, d1, (const int64_t[]){0, 5, 2}, NULL,
           false);
  sda_case(ctx, op, dt, "rank2_int32", WEFT_DT_INT32, 4, 2, d2,
           (const int64_t[]){0, 0, 2, 3, 1, 2, 2, 0}, NULL, false);
  sda_case(ctx, op, dt, "duplicates", WEFT_DT_INT64, 3, 2, d2,
           (const int64_t[]){1, 1, 1, 1, 0, 3}, NULL, false);
  sda_case(ctx, op, dt, "rank3", WEFT_DT_INT64, 2, 3, d3, (const int64_t[]){1, 2, 1, 0, 0, 0},
           NULL, false);
  sda_case(ctx, op, dt, "nnz_0", WEFT_DT_INT64, 0, 2, d2, NULL, NULL, false);
  sda_case(ctx, op, dt, "empty_dense", WEFT_DT_INT64, 0, 2, (const int64_t[]){0, 4}, NULL, NULL,
           false);
  sda_case(ctx, op, dt, "error_index_high", WEFT_DT_INT64, 2, 2, d2,
           (const int64_t[]){0, 0, 1, 4}, "Sparse tensor has an invalid index on dimension 1: "
           "a_indices(1,1) = 4, dense tensor shape: ", false);
  sda_case(ctx, op, dt, "error_index_negative", WEFT_DT_INT32, 1, 2, d2,
           (const int64_t[]){-1, 0}, "invalid index on dimension 0: a_indices(0,0) = -1", false);
  /* a_shape differs from b's shape. */
  cf_case_t *c = cf_case_new(op, "error_shape_mismatch", dt);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){1, 2}));
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){1}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){3, 5}));
  cf_case_input(c, cf_array_new(dt, 2, d2));
  error_case(ctx, c, "Dimension 1 does not equal (no broadcasting is supported): sparse side 5 "
             "vs dense side 4", false);
  c = cf_case_new(op, "error_rank_mismatch", dt);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){1, 3}));
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){1}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, d3));
  cf_case_input(c, cf_array_new(dt, 2, d2));
  error_case(ctx, c, "Two operands have different ranks; received: 3 and 2", false);
  c = cf_case_new(op, "error_values_length", dt);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){2, 2}));
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){3}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, d2));
  cf_case_input(c, cf_array_new(dt, 2, d2));
  error_case(ctx, c, "Dimensions 2 and 3 are not compatible", false);
  c = cf_case_new(op, "error_indices_not_matrix", dt);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 1, (const int64_t[]){2}));
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){2}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, d2));
  cf_case_input(c, cf_array_new(dt, 2, d2));
  error_case(ctx, c, "Input a_indices should be a matrix but received shape: [2]", false);
  c = cf_case_new(op, "error_values_not_vector", dt);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){2, 2}));
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){2, 1}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, d2));
  cf_case_input(c, cf_array_new(dt, 2, d2));
  error_case(ctx, c, "Inputs a_values and a_shape should be vectors but received shapes: [2,1] "
             "and [2]", false);
}

/* ---------------------------------------------------------------------------------------------
 * SelfAdjointEigV2: checked by property, as Svd. A is the input's lower triangle mirrored (what
 * the op reads); e must ascend, V have orthonormal columns and A V = V diag(e), which together
 * make e A's eigenvalues. Without V, e's sum and sum of squares must be A's trace and squared
 * Frobenius norm. */

static char *check_eig(const cf_case_t *c, cf_array_t *const *out, int n_out) {
  const cf_array_t *x = c->inputs[0];
  bool with_v = cf_case_int(c, "compute_v", 1) != 0;
  int64_t n = x->dims[x->rank - 1], batch = n > 0 ? x->n / (n * n) : 0;
  double tol = x->dtype == WEFT_DT_DOUBLE ? 1e-9 : 2e-4;
  if (n_out < 2) return g_strdup("two outputs expected");
  const cf_array_t *e = out[0], *v = out[1];
  if (e->n != batch * n) return g_strdup("e has the wrong size");
  if (!with_v && (v->rank != 1 || v->n != 0)) return g_strdup("v is not [0]");
  if (with_v && v->n != batch * n * n) return g_strdup("v has the wrong size");
  for (int64_t b = 0; b < batch; b++) {
    const double *xb = x->v + b * n * n, *eb = e->v + b * n;
    double scale = 1, trace = 0, frob = 0, sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) {
      trace += xb[i * n + i];
      sum += eb[i];
      sq += eb[i] * eb[i];
      for (int64_t j = 0; j < n; j++) {
        double a = j <= i ? xb[i * n + j] : xb[j * n + i];
        frob += a * a;
        scale = fmax(scale, fabs(a));
      }
      if (i > 0 && eb[i] < eb[i - 1] - tol * scale)
        return g_strdup_printf("batch %lld: e not ascending at %lld", (long long)b,
                               (long long)i);
    }
    if (fabs(trace - sum) > tol * 10 * scale * n || fabs(frob - sq) > tol * 10 * frob + tol)
      return g_strdup_printf("batch %lld: sum(e) %g, trace %g; sum(e^2) %g, |A|^2 %g",
                             (long long)b, sum, trace, sq, frob);
    if (!with_v) continue;
    const double *vb = v->v + b * n * n;
    for (int64_t i = 0; i < n; i++)
      for (int64_t k = 0; k < n; k++) {
        double av = 0, dot = 0;
        for (int64_t j = 0; j < n; j++) {
          av += (j <= i ? xb[i * n + j] : xb[j * n + i]) * vb[j * n + k];
          dot += vb[j * n + i] * vb[j * n + k];
        }
        if (fabs(av - vb[i * n + k] * eb[k]) > tol * 10 * scale * n)
          return g_strdup_printf("batch %lld: (A V)[%lld,%lld] = %g, V diag(e) = %g",
                                 (long long)b, (long long)i, (long long)k, av,
                                 vb[i * n + k] * eb[k]);
        if (fabs(dot - (i == k)) > tol * 10)
          return g_strdup_printf("batch %lld: v columns %lld and %lld: dot %g", (long long)b,
                                 (long long)i, (long long)k, dot);
      }
  }
  return NULL;
}

static void eig_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                     cf_array_t *x, bool with_v) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_input(c, x);
  cf_case_attr_bool(c, "compute_v", with_v);
  for (int i = 0; i < 2; i++) cf_case_expect(c, NULL);
  c->check = check_eig;
  cf_run_case(ctx, c);
}

static void emit_eig(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[4];
    bool with_v;
  } shapes[] = {{"1x1", 2, {1, 1}, true},          {"3x3", 2, {3, 3}, true},
                {"6x6_no_v", 2, {6, 6}, false},    {"batch_2x4x4", 3, {2, 4, 4}, true},
                {"batch_4d", 4, {2, 1, 3, 3}, true}, {"square_12", 2, {12, 12}, true}};
  for (size_t i = 0; i < G_N_ELEMENTS(shapes); i++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, shapes[i].name, "f");
    /* Not symmetric: the upper triangle must be ignored. */
    eig_case(ctx, op, dt, shapes[i].name,
             cf_gen_uniform(&rng, dt, shapes[i].rank, shapes[i].dims, -2, 2), shapes[i].with_v);
  }
  /* Repeated eigenvalues: any orthonormal basis of the eigenspace will do. */
  cf_array_t *x = cf_array_new(dt, 2, (const int64_t[]){3, 3});
  x->v[0] = x->v[4] = 2;
  x->v[8] = -1;
  eig_case(ctx, op, dt, "repeated", x, true);
  eig_case(ctx, op, dt, "empty_batch", cf_array_new(dt, 3, (const int64_t[]){0, 3, 3}), true);
  cf_case_t *c = cf_case_new(op, "error_not_square", dt);
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){2, 3}));
  error_case(ctx, c, "Input matrix must be square.", true);
}

/* ---------------------------------------------------------------------------------------------
 * SparseToDense */

typedef struct {
  const char *name;
  int irank;            /* sparse_indices: 0 (one index), 1 ([nnz]) or 2 ([nnz, ndims]) */
  int64_t nnz, ndims;
  int64_t ind[9];
  int64_t shape[3];
  bool scalar_value, validate;
  const char *error;
} std_case_t;

static cf_array_t *std_values(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  cf_gen_t g = {CF_GEN_UNIFORM, cf_dtype_is_signed(dt) ? -5 : 1, 9};
  if (dt == WEFT_DT_BOOL) g.kind = CF_GEN_BOOL;
  if (dt == WEFT_DT_STRING) g.kind = CF_GEN_ARANGE;
  return cf_gen_array(rng, dt, rank, dims, g);
}

static void emit_sparse_to_dense(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const std_case_t cases[] = {
      {"matrix", 2, 3, 2, {0, 1, 1, 3, 2, 0}, {3, 4}, false, true, NULL},
      {"scalar_value", 2, 3, 2, {0, 1, 1, 3, 2, 0}, {3, 4}, true, true, NULL},
      {"vector_indices", 1, 2, 1, {1, 4}, {6}, false, true, NULL},
      {"scalar_index", 0, 1, 1, {2}, {5}, false, true, NULL},
      {"rank3", 2, 2, 3, {0, 1, 1, 1, 0, 2}, {2, 2, 3}, false, true, NULL},
      {"no_indices", 2, 0, 2, {0}, {2, 3}, false, true, NULL},
      {"empty_output", 2, 0, 2, {0}, {0, 3}, false, true, NULL},
      {"unvalidated_duplicates_last_wins", 2, 3, 2, {1, 1, 0, 0, 1, 1}, {2, 2}, false, false,
       NULL},
      {"error_out_of_bounds", 2, 2, 2, {0, 1, 1, 4}, {3, 4}, false, true,
       "indices[1] = [1,4] is out of bounds: need 0 <= index < [3,4]"},
      {"error_negative", 1, 2, 1, {0, -1}, {4}, false, true,
       "indices[1] = [-1] is out of bounds: need 0 <= index < [4]"},
      {"error_out_of_order", 2, 2, 2, {1, 0, 0, 3}, {3, 4}, false, true,
       "indices[1] = [0,3] is out of order"},
      {"error_repeated", 2, 2, 2, {0, 1, 0, 1}, {3, 4}, true, true,
       "indices[1] = [0,1] is repeated"},
      {"error_unvalidated_out_of_bounds", 2, 1, 2, {3, 0}, {3, 4}, false, false,
       "Indices are not valid (out of bounds).  Shape: [3,4]"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const std_case_t *sc = &cases[i];
    cf_case_t *c = cf_case_new(op, sc->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    int64_t idims[2] = {sc->nnz, sc->ndims};
    cf_array_t *ind = cf_array_new(it, sc->irank, idims);
    for (int64_t k = 0; k < ind->n; k++) ind->v[k] = (double)sc->ind[k];
    cf_array_t *val = std_values(&rng, dt, sc->scalar_value ? 0 : 1, &sc->nnz);
    cf_array_t *def = std_values(&rng, dt, 0, NULL);
    cf_array_t *want = NULL;
    if (!sc->error) {
      /* The reference: every element the default, then each value written in turn. */
      want = cf_array_new(dt, (int)sc->ndims, sc->shape);
      for (int64_t e = 0; e < want->n; e++) cf_copy_value(want, e, def, 0);
      for (int64_t z = 0; z < sc->nnz; z++) {
        int64_t off = 0;
        for (int64_t d = 0; d < sc->ndims; d++)
          off = off * sc->shape[d] + sc->ind[z * sc->ndims + d];
        cf_copy_value(want, off, val, sc->scalar_value ? 0 : z);
      }
    }
    cf_case_input(c, ind);
    /* A constant output_shape gives the shape function the output's shape. */
    cf_array_t *shape = cf_array_ints(it, sc->ndims, sc->shape);
    if (i % 3) cf_case_const_input(c, shape);
    else cf_case_input(c, shape);
    cf_case_input(c, val);
    cf_case_input(c, def);
    cf_case_attr_bool(c, "validate_indices", sc->validate);
    if (sc->error) {
      error_case(ctx, c, sc->error, false);
      continue;
    }
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  /* The shape checks, with TensorFlow's messages. */
  static const struct {
    const char *name;
    int irank, vrank, drank;
    int64_t nnz, ndims, nshape;
    const char *error;
  } bad[] = {
      {"error_values_length", 2, 1, 0, 3, 2, 2, "sparse_values has incorrect shape [2], should "
                                                "be [] or [3]"},
      {"error_default_not_scalar", 2, 0, 1, 3, 2, 2, "default_value should be a scalar."},
      {"error_shape_length", 2, 0, 0, 3, 2, 3, "output_shape has incorrect number of elements: "
                                               "3 should be: 2"},
      {"error_indices_rank3", 3, 0, 0, 1, 1, 1, "sparse_indices should be a scalar, vector, or "
                                                "matrix, got shape [1,1,1]"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    cf_case_t *c = cf_case_new(op, bad[i].name, dt);
    int64_t idims[3] = {bad[i].nnz, bad[i].ndims, 1}, two = 2, zeros[3] = {4, 4, 4};
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, bad[i].irank, idims));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, bad[i].nshape, zeros));
    cf_case_input(c, cf_array_new(dt, bad[i].vrank, &two));
    cf_case_input(c, cf_array_new(dt, bad[i].drank, &two));
    error_case(ctx, c, bad[i].error, true);
  }
}

static const weft_dtype_t float_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                            WEFT_DT_INVALID};
static const weft_dtype_t eig_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INVALID};
static const weft_dtype_t diag_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                           WEFT_DT_BFLOAT16, WEFT_DT_INT32, WEFT_DT_INT64,
                                           WEFT_DT_INVALID};
static const weft_dtype_t number_dtypes[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16,  WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_svd_misc[] = {
    {"Svd", float_dtypes, emit_svd, NULL},
    {"SelfAdjointEigV2", eig_dtypes, emit_eig, NULL},
    {"LinSpace", float_dtypes, emit_linspace, NULL},
    {"Diag", diag_dtypes, emit_diag, NULL},
    {"DiagPart", diag_dtypes, emit_diag_part, NULL},
    {"SparseTensorDenseAdd", number_dtypes, emit_sparse_dense_add, NULL},
    {"SparseToDense", cf_dtypes_all, emit_sparse_to_dense, NULL},
    {NULL, NULL, NULL, NULL},
};
