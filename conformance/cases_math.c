/* cases_math.c: conformance cases of MatMul (transposes, odd and empty sizes, GEMV, 256^3),
 * BatchMatMulV2 (broadcast batch dimensions, adjoints), the reductions Sum/Mean/Max/Min/Prod/
 * All/Any (every axis, negative and repeated axes, no axes, keep_dims, empty inputs, 2^20
 * elements, NaN), ArgMax/ArgMin (ties, output_type) and Cumsum (exclusive, reverse). Float
 * accumulations get an absolute tolerance proportional to the sum of the magnitudes involved. */
#include <math.h>
#include <string.h>

#include "reference.h"

static double dtype_eps(weft_dtype_t dt) {
  switch (dt) {
    case WEFT_DT_FLOAT: return 1.2e-7;
    case WEFT_DT_DOUBLE: return 2.3e-16;
    case WEFT_DT_HALF: return 9.8e-4;
    case WEFT_DT_BFLOAT16: return 7.9e-3;
    default: return 0;
  }
}

/* ---------------------------------------------------------------------------------------------
 * MatMul */

static void matmul_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                        int64_t m, int64_t k, int64_t n, bool ta, bool tb, bool special) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  int64_t da[2] = {ta ? k : m, ta ? m : k}, db[2] = {tb ? n : k, tb ? k : n};
  bool is_float = cf_dtype_is_float(dt);
  double lim = is_float ? 1 : (cf_dtype_is_signed(dt) ? 10 : 10);
  double lo = cf_dtype_is_signed(dt) ? -lim : 0;
  cf_array_t *a = cf_gen_uniform(&rng, dt, 2, da, lo, lim);
  cf_array_t *b = cf_gen_uniform(&rng, dt, 2, db, lo, lim);
  if (special && a->n > 3 && b->n > 3) {
    a->v[0] = NAN;
    b->v[b->n - 1] = INFINITY;
  }
  cf_case_expect(c, cf_ref_matmul(a, b, ta, tb));
  cf_case_input(c, a);
  cf_case_input(c, b);
  if (ta) cf_case_attr_bool(c, "transpose_a", true);
  if (tb) cf_case_attr_bool(c, "transpose_b", true);
  if (is_float) {
    c->tol.atol = 4 * dtype_eps(dt) * (double)(k > 0 ? k : 1) + c->tol.atol;
    c->tol.max_nmse *= (double)(k > 1 ? k : 1);
  }
  cf_run_case(ctx, c);
}

static void emit_matmul(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  matmul_case(ctx, op, dt, "2x3x4", 2, 3, 4, false, false, false);
  matmul_case(ctx, op, dt, "1x1x1", 1, 1, 1, false, false, false);
  matmul_case(ctx, op, dt, "odd_7x13x5", 7, 13, 5, false, false, false);
  matmul_case(ctx, op, dt, "transpose_a", 6, 5, 4, true, false, false);
  matmul_case(ctx, op, dt, "transpose_b", 6, 5, 4, false, true, false);
  matmul_case(ctx, op, dt, "transpose_both", 3, 9, 7, true, true, false);
  matmul_case(ctx, op, dt, "gemv_1x33x17", 1, 33, 17, false, false, false);
  matmul_case(ctx, op, dt, "outer_17x1x9", 17, 1, 9, false, false, false);
  matmul_case(ctx, op, dt, "empty_k", 3, 0, 4, false, false, false);
  matmul_case(ctx, op, dt, "empty_m", 0, 5, 4, false, false, false);
  matmul_case(ctx, op, dt, "odd_65x67x63", 65, 67, 63, false, false, false);
  if (dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE) {
    matmul_case(ctx, op, dt, "large_256", 256, 256, 256, false, false, false);
    matmul_case(ctx, op, dt, "large_256_tb", 256, 256, 256, false, true, false);
  }
  if (cf_dtype_is_float(dt)) matmul_case(ctx, op, dt, "nan_inf", 5, 6, 7, false, false, true);
  /* One row of output runs as a GEMV, with either operand transposed (plugins/cpu/cpu_matmul.c). */
  matmul_case(ctx, op, dt, "gemv_1x33x17_ta", 1, 33, 17, true, false, false);
  matmul_case(ctx, op, dt, "gemv_1x33x17_tb", 1, 33, 17, false, true, false);
  matmul_case(ctx, op, dt, "gemv_1x33x17_ta_tb", 1, 33, 17, true, true, false);
  if (dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE) {
    matmul_case(ctx, op, dt, "large_gemv_1x784x512", 1, 784, 512, false, false, false);
    matmul_case(ctx, op, dt, "large_gemv_1x784x512_tb", 1, 784, 512, false, true, false);
  }
  /* Inner dimensions that disagree, hidden from shape inference. */
  cf_case_t *c = cf_case_new(op, "error_inner_dims", dt);
  int64_t da[2] = {2, 3}, db[2] = {4, 5};
  int i0 = cf_case_input(c, cf_array_new(dt, 2, da));
  int i1 = cf_case_input(c, cf_array_new(dt, 2, db));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

static void emit_batch_matmul(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int ra, rb;
    int64_t da[4], db[4];
    bool adj_a, adj_b;
  } bmm_t;
  static const bmm_t cases[] = {
      {"batch2", 3, 3, {2, 3, 4}, {2, 4, 5}, false, false},
      {"bcast_batch", 3, 3, {1, 3, 4}, {3, 4, 2}, false, false},
      {"rank2_x_rank3", 2, 3, {3, 4}, {2, 4, 5}, false, false},
      {"rank4_bcast", 4, 4, {2, 1, 3, 4}, {1, 3, 4, 2}, false, false},
      {"adj_x", 3, 3, {2, 4, 3}, {2, 4, 5}, true, false},
      {"adj_y", 3, 3, {2, 3, 4}, {2, 5, 4}, false, true},
      {"adj_both", 3, 3, {2, 4, 3}, {2, 5, 4}, true, true},
      {"empty_batch", 3, 3, {0, 3, 4}, {0, 4, 5}, false, false},
      {"odd_5x17x13x9", 3, 3, {5, 17, 13}, {5, 13, 9}, false, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const bmm_t *b = &cases[i];
    cf_case_t *c = cf_case_new(op, b->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    double lo = cf_dtype_is_signed(dt) ? (cf_dtype_is_float(dt) ? -1 : -10) : 0;
    double hi = cf_dtype_is_float(dt) ? 1 : 10;
    cf_array_t *x = cf_gen_uniform(&rng, dt, b->ra, b->da, lo, hi);
    cf_array_t *y = cf_gen_uniform(&rng, dt, b->rb, b->db, lo, hi);
    cf_case_expect(c, cf_ref_batch_matmul(x, y, b->adj_a, b->adj_b));
    cf_case_input(c, x);
    cf_case_input(c, y);
    if (b->adj_a) cf_case_attr_bool(c, "adj_x", true);
    if (b->adj_b) cf_case_attr_bool(c, "adj_y", true);
    if (cf_dtype_is_float(dt)) c->tol.atol += 4 * dtype_eps(dt) * 17;
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

static void reduce_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                        int rank, const int64_t *dims, const int64_t *axes, int n_axes,
                        bool keep_dims, weft_dtype_t idx_dtype, bool special) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  bool is_bool = dt == WEFT_DT_BOOL;
  bool is_prod = strcmp(op, "Prod") == 0;
  cf_gen_t g = {is_bool ? CF_GEN_BOOL : CF_GEN_UNIFORM, 0, 0};
  if (is_prod) {
    g.lo = cf_dtype_is_float(dt) ? 0.5 : (cf_dtype_is_signed(dt) ? -2 : 0);
    g.hi = cf_dtype_is_float(dt) ? 1.5 : 2;
  } else if (!cf_dtype_is_float(dt) && !is_bool) {
    g.lo = cf_dtype_is_signed(dt) ? -10 : 0;
    g.hi = 10;
  }
  cf_array_t *x = cf_gen_array(&rng, dt, rank, dims, g);
  if (special && x->n >= 8) {
    x->v[1] = NAN;
    x->v[x->n - 2] = INFINITY;
    x->v[x->n / 2] = -INFINITY;
  }
  cf_case_expect(c, cf_ref_reduce(op, x, axes, n_axes, keep_dims));
  if (cf_dtype_is_float(dt)) {
    /* Accumulation error grows with the magnitudes summed. */
    double sum_abs = 0;
    for (int64_t i = 0; i < x->n; i++)
      if (isfinite(x->v[i])) sum_abs += fabs(x->v[i]);
    int64_t n_out = c->expected[0]->n > 0 ? c->expected[0]->n : 1;
    if (strcmp(op, "Sum") == 0) c->tol.atol += 8 * dtype_eps(dt) * sum_abs;
    if (strcmp(op, "Mean") == 0)
      c->tol.atol += 8 * dtype_eps(dt) * sum_abs / (double)(x->n / n_out > 0 ? x->n / n_out : 1);
    if (strcmp(op, "Mean") == 0 || strcmp(op, "Sum") == 0 || is_prod)
      c->tol = cf_tol_scale(c->tol, 4);
    if (x->n > 100000) c->tol.max_nmse *= 100;
  }
  cf_case_input(c, x);
  cf_case_const_input(c, cf_array_ints(idx_dtype, n_axes, axes));
  if (keep_dims) cf_case_attr_bool(c, "keep_dims", true);
  cf_run_case(ctx, c);
}

static void emit_reduce(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  bool boolean = strcmp(op, "All") == 0 || strcmp(op, "Any") == 0;
  if (!cf_supported(ctx, op, boolean ? NULL : "T", dtype)) return;
  weft_dtype_t dt = boolean ? WEFT_DT_BOOL : dtype;
  int64_t d3[3] = {3, 4, 5};
  const int64_t ax0[] = {0}, ax1[] = {1}, ax2[] = {2}, axm1[] = {-1}, ax02[] = {0, 2},
                axall[] = {0, 1, 2}, axneg[] = {-3, -2}, axrep[] = {1, 1};
  reduce_case(ctx, op, dt, "axis0", 3, d3, ax0, 1, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "axis1", 3, d3, ax1, 1, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "axis2_keep_dims", 3, d3, ax2, 1, true, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "axis_neg1", 3, d3, axm1, 1, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "axes_0_2", 3, d3, ax02, 2, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "axes_0_2_keep_dims_int64", 3, d3, ax02, 2, true, WEFT_DT_INT64, false);
  reduce_case(ctx, op, dt, "all_axes", 3, d3, axall, 3, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "all_axes_keep_dims", 3, d3, axall, 3, true, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "negative_axes", 3, d3, axneg, 2, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "repeated_axis", 3, d3, axrep, 2, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "no_axes", 3, d3, NULL, 0, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "scalar", 0, NULL, NULL, 0, false, WEFT_DT_INT32, false);
  int64_t d1023 = 1023, dodd[2] = {7, 1023};
  reduce_case(ctx, op, dt, "n1023", 1, &d1023, ax0, 1, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "odd_7x1023_axis1", 2, dodd, ax1, 1, false, WEFT_DT_INT32, false);
  reduce_case(ctx, op, dt, "odd_7x1023_axis0", 2, dodd, ax0, 1, false, WEFT_DT_INT32, false);
  int64_t de[2] = {0, 3};
  reduce_case(ctx, op, dt, "empty_kept_axis", 2, de, ax1, 1, false, WEFT_DT_INT32, false);
  bool empty_ok = strcmp(op, "Mean") != 0 || cf_dtype_is_float(dt);
  if (empty_ok)
    reduce_case(ctx, op, dt, "empty_reduced_axis", 2, de, ax0, 1, false, WEFT_DT_INT32, false);
  if (dt == WEFT_DT_FLOAT && strcmp(op, "Prod") != 0) {
    int64_t big = 1 << 20, sq[2] = {1024, 1024};
    reduce_case(ctx, op, dt, "large_1M", 1, &big, ax0, 1, false, WEFT_DT_INT32, false);
    reduce_case(ctx, op, dt, "large_1024x1024_axis0", 2, sq, ax0, 1, false, WEFT_DT_INT32, false);
    reduce_case(ctx, op, dt, "large_1024x1024_axis1", 2, sq, ax1, 1, false, WEFT_DT_INT32, false);
  }
  if (cf_dtype_is_float(dt))
    reduce_case(ctx, op, dt, "nan_inf", 3, d3, ax1, 1, false, WEFT_DT_INT32, true);
  /* An axis out of range fed at run time: the kernel must refuse it. */
  cf_case_t *c = cf_case_new(op, "error_axis_out_of_range", dt);
  cf_case_input(c, cf_array_new(dt, 3, d3));
  int64_t bad = 3;
  int ia = cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, &bad));
  c->unknown_shape[ia] = true;
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * ArgMax / ArgMin, Cumsum */

static void emit_argminmax(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool is_max = strcmp(op, "ArgMax") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int axis;
    weft_dtype_t out;
  } am_t;
  static const am_t cases[] = {
      {"axis0", 3, {3, 4, 5}, 0, WEFT_DT_INT64},
      {"axis1_int32", 3, {3, 4, 5}, 1, WEFT_DT_INT32},
      {"axis2", 3, {3, 4, 5}, 2, WEFT_DT_INT64},
      {"axis_neg1", 3, {3, 4, 5}, -1, WEFT_DT_INT64},
      {"n1023", 1, {1023}, 0, WEFT_DT_INT64},
      {"n1", 1, {1}, 0, WEFT_DT_INT32},
      {"ties", 2, {6, 9}, 1, WEFT_DT_INT64},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const am_t *a = &cases[i];
    cf_case_t *c = cf_case_new(op, a->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_UNIFORM, 0, 0};
    if (strcmp(a->name, "ties") == 0 && dt != WEFT_DT_BOOL) {
      g.lo = cf_dtype_is_signed(dt) ? -2 : 0;
      g.hi = 2;
    }
    cf_array_t *x = cf_gen_array(&rng, dt, a->rank, a->dims, g);
    if (strcmp(a->name, "ties") == 0) cf_array_round(x);
    if (strcmp(a->name, "ties") == 0 && cf_dtype_is_float(dt))
      for (int64_t k = 0; k < x->n; k++) x->v[k] = round(x->v[k]);
    int axis = a->axis < 0 ? a->axis + a->rank : a->axis;
    cf_case_expect(c, cf_ref_argminmax(is_max, x, axis, a->out));
    cf_case_input(c, x);
    int64_t ax = a->axis;
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 1, &ax));
    c->inputs[1]->rank = 0; /* dimension is a scalar */
    if (a->out != WEFT_DT_INT64) cf_case_attr_type(c, "output_type", a->out);
    cf_run_case(ctx, c);
  }
}

const cf_scan_case_t cf_scan_cases[] = {
    {"axis0", 2, {4, 5}, 0, false, false},
    {"axis1", 2, {4, 5}, 1, false, false},
    {"axis_neg1_rank3", 3, {2, 3, 4}, -1, false, false},
    {"exclusive", 2, {4, 5}, 1, true, false},
    {"reverse", 2, {4, 5}, 0, false, true},
    {"exclusive_reverse", 3, {2, 3, 4}, 1, true, true},
    {"n1023", 1, {1023}, 0, false, false},
    {"empty", 2, {0, 3}, 0, false, false},
    {NULL, 0, {0}, 0, false, false},
};

static void emit_cumsum(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  for (const cf_scan_case_t *a = cf_scan_cases; a->name != NULL; a++) {
    cf_case_t *c = cf_case_new(op, a->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    double lo = cf_dtype_is_signed(dt) ? -5 : 0;
    cf_array_t *x = cf_gen_uniform(&rng, dt, a->rank, a->dims, lo, 5);
    int axis = a->axis < 0 ? a->axis + a->rank : a->axis;
    cf_case_expect(c, cf_ref_cumsum(x, axis, a->exclusive, a->reverse));
    cf_case_input(c, x);
    int64_t ax = a->axis;
    cf_array_t *axis_arr = cf_array_ints(WEFT_DT_INT32, 1, &ax);
    axis_arr->rank = 0;
    cf_case_const_input(c, axis_arr);
    if (a->exclusive) cf_case_attr_bool(c, "exclusive", true);
    if (a->reverse) cf_case_attr_bool(c, "reverse", true);
    if (cf_dtype_is_float(dt)) c->tol.atol += 8 * dtype_eps(dt) * 5 * 1023;
    cf_run_case(ctx, c);
  }
}

const cf_suite_t cf_suites_math[] = {
    {"MatMul", cf_dtypes_numeric, emit_matmul, NULL},
    {"BatchMatMulV2", cf_dtypes_numeric, emit_batch_matmul, NULL},
    {"Sum", cf_dtypes_numeric, emit_reduce, NULL},
    {"Mean", cf_dtypes_numeric, emit_reduce, NULL},
    {"Max", cf_dtypes_numeric, emit_reduce, NULL},
    {"Min", cf_dtypes_numeric, emit_reduce, NULL},
    {"Prod", cf_dtypes_numeric, emit_reduce, NULL},
    {"All", cf_dtypes_none, emit_reduce, NULL},
    {"Any", cf_dtypes_none, emit_reduce, NULL},
    {"ArgMax", cf_dtypes_all, emit_argminmax, NULL},
    {"ArgMin", cf_dtypes_all, emit_argminmax, NULL},
    {"Cumsum", cf_dtypes_numeric, emit_cumsum, NULL},
    {NULL, NULL, NULL, NULL},
};
