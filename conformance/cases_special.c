/* cases_special.c: conformance cases of the special-math ops of ops_special.c against the long
 * double references of reference_special.c, plus values known in closed form (zeta(2) = pi^2/6,
 * psi'(1/2) = pi^2/2, erfinv(1/2), the normal's 97.5% quantile, I0(1) and I1(1)) and the domain
 * edges where Eigen answers inf or NaN. Tolerances are the dtype's default (a few ulps) scaled:
 * 4x for the zero-guarded arithmetic, 16x for the transcendental ops in float32, half and
 * bfloat16 (rounded once from double), and 64x in float64, where the kernels' Newton steps,
 * Euler-Maclaurin tails and asymptotic series stop within a few double ulps (about 1e-14
 * relative, against the default 1e-12 * 64). */
#include <math.h>
#include <string.h>

#include "reference_special.h"

static const weft_dtype_t dtypes_f32_f64[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INVALID};
static const weft_dtype_t dtypes_f16_f32_f64[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                                  WEFT_DT_INVALID};

#define PI 3.14159265358979323846

static double tol_scale(weft_dtype_t dt) { return dt == WEFT_DT_DOUBLE ? 64 : 16; }

static void unary_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                       cf_array_t *x) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_expect(c, cf_ref_map1(x, dt, cf_ref_special_unary_fn(op)));
  cf_case_input(c, x);
  c->tol = cf_tol_scale(c->tol, tol_scale(dt));
  cf_run_case(ctx, c);
}

static void binary_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                        cf_array_t *x, cf_array_t *y, double scale) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_expect(c, cf_ref_map2(x, y, dt, cf_ref_special_binary_fn(op)));
  cf_case_input(c, x);
  cf_case_input(c, y);
  c->tol = cf_tol_scale(c->tol, scale);
  cf_run_case(ctx, c);
}

/* A case with values known in closed form (want rounded to dt). */
static void known_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                       int n_in, const double *a, const double *b, const double *want, int n) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_input(c, cf_array_vec(dt, n, a));
  if (n_in == 2) cf_case_input(c, cf_array_vec(dt, n, b));
  cf_array_t *w = cf_array_vec(dt, n, want);
  cf_array_round(w);
  cf_case_expect(c, w);
  c->tol = cf_tol_scale(c->tol, tol_scale(dt));
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * Zeta, Polygamma */

static void emit_zeta(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool poly = strcmp(op, "Polygamma") == 0;
  for (const cf_shape_pair_t *sh = cf_binary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    cf_array_t *a = cf_gen_uniform(&rng, dt, sh->ra, sh->da, poly ? 0 : 1.05, poly ? 4.49 : 12);
    if (poly)
      for (int64_t i = 0; i < a->n; i++) a->v[i] = round(a->v[i]);
    cf_array_t *b = cf_gen_uniform(&rng, dt, sh->rb, sh->db, 0.1, 10);
    binary_case(ctx, op, dt, sh->name, a, b, tol_scale(dt));
  }
  if (poly) {
    /* psi(1) = -gamma, psi'(1) = pi^2/6, psi'(1/2) = pi^2/2, psi''(1) = -2 zeta(3),
     * psi'''(1) = pi^4/15. */
    double n[] = {0, 1, 1, 2, 3}, x[] = {1, 1, 0.5, 1, 1};
    double want[] = {-0.57721566490153286061, PI * PI / 6, PI * PI / 2,
                     -2 * 1.20205690315959428540, PI * PI * PI * PI / 15};
    known_case(ctx, op, dt, "closed_forms", 2, n, x, want, 5);
    /* Orders that are not non-negative integers, poles at x = 0 and -2, reflection region. */
    double nv[] = {0.5, -1, 1, 2, 1, 0, 3, NAN, 1};
    double xv[] = {1, 1, 0, 0, -2, -2.5, -1.5, 1, INFINITY};
    binary_case(ctx, op, dt, "domain_edges", cf_array_vec(dt, 9, nv), cf_array_vec(dt, 9, xv),
                tol_scale(dt));
  } else {
    /* zeta(2) = pi^2/6, zeta(4) = pi^4/90, zeta(2, 1/2) = 3 zeta(2), zeta(3) = Apery's
     * constant, zeta(6) = pi^6/945, zeta(2, 2) = zeta(2) - 1. */
    double x[] = {2, 4, 2, 3, 6, 2}, q[] = {1, 1, 0.5, 1, 1, 2};
    double want[] = {PI * PI / 6, pow(PI, 4) / 90, PI * PI / 2, 1.20205690315959428540,
                     pow(PI, 6) / 945, PI * PI / 6 - 1};
    known_case(ctx, op, dt, "closed_forms", 2, x, q, want, 6);
    /* x < 1 and x == 1; the non-positive integer q (inf for even integer x); a negative
     * non-integer q (integer x only); large x and large q; NaN and inf. */
    double xv[] = {0.5, 1, 2, 3, 2.5, 3, 4, 40, 2, 1000, NAN, 2, 2, 1.5};
    double qv[] = {1, 1, 0, -1, -1.5, -1.5, -2.5, 2, 1e6, 1000, 1, NAN, INFINITY, 3};
    binary_case(ctx, op, dt, "domain_edges", cf_array_vec(dt, 14, xv), cf_array_vec(dt, 14, qv),
                tol_scale(dt));
  }
  cf_incompatible_shapes_case(ctx, op, dt);
}

/* ---------------------------------------------------------------------------------------------
 * Erfinv, Ndtri, BesselI0e, BesselI1e */

static void emit_unary(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool erfinv = strcmp(op, "Erfinv") == 0, ndtri = strcmp(op, "Ndtri") == 0;
  double lo = erfinv ? -0.999 : (ndtri ? 0.001 : -30), hi = erfinv ? 0.999 : (ndtri ? 0.999 : 30);
  for (const cf_shape_t *sh = cf_unary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    unary_case(ctx, op, dt, sh->name,
               cf_gen_uniform(&rng, dt, sh->rank, sh->dims, lo, hi));
  }
  bool wide = dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE;
  if (erfinv) {
    double known_x[] = {0.5, -0.5}, want[] = {0.47693627620446987338, -0.47693627620446987338};
    known_case(ctx, op, dt, "closed_forms", 1, known_x, NULL, want, 2);
    /* The ends (+-inf), outside [-1, 1] (NaN), signed zero, tails, tiny arguments. */
    double v[] = {1, -1, 1.5, -2, NAN, 0, -0.0, 0.9990234375, -0.99951171875, 0.75, 1e-30,
                  -1e-20};
    unary_case(ctx, op, dt, "edges", cf_array_vec(dt, wide ? 12 : 10, v));
  } else if (ndtri) {
    double known_x[] = {0.5, 0.975, 0.025}, want[] = {0, 1.95996398454005423552,
                                                      -1.95996398454005423552};
    known_case(ctx, op, dt, "closed_forms", 1, known_x, NULL, want, 3);
    /* p = 0 and 1 (-+inf), outside [0, 1] (NaN), the far tails. */
    double v[] = {0, 1, -0.1, 1.1, NAN, 0.0009765625, 0.9990234375, 1e-30, 1e-300, 1e-310};
    int n = dt == WEFT_DT_DOUBLE ? 10 : (wide ? 8 : 7);
    unary_case(ctx, op, dt, "edges", cf_array_vec(dt, n, v));
  } else {
    bool i1 = strcmp(op, "BesselI1e") == 0;
    /* I0(1) = 1.2660658777520082, I1(1) = 0.5651591039924851: times e^-1. */
    double known_x[] = {1, -1, 0};
    double i0[] = {1.26606587775200833560 / M_E, 1.26606587775200833560 / M_E, 1};
    double i1v[] = {0.56515910399248502721 / M_E, -0.56515910399248502721 / M_E, 0};
    known_case(ctx, op, dt, "closed_forms", 1, known_x, NULL, i1 ? i1v : i0, 3);
    /* Both sides of the series/asymptotic switch at 20, large arguments, inf, NaN. */
    double v[] = {19.99, 20.01, -19.99, -20.01, 100, -700, 5000, INFINITY, -INFINITY, NAN, 1e-8};
    unary_case(ctx, op, dt, "edges", cf_array_vec(dt, 11, v));
  }
}

/* ---------------------------------------------------------------------------------------------
 * Xdivy, Xlogy, Xlog1py, MulNoNan */

static void emit_guarded(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool mul = strcmp(op, "MulNoNan") == 0, log1p = strcmp(op, "Xlog1py") == 0;
  bool logy = strcmp(op, "Xlogy") == 0;
  for (const cf_shape_pair_t *sh = cf_binary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    cf_array_t *x = cf_gen_uniform(&rng, dt, sh->ra, sh->da, -5, 5);
    cf_array_t *y = cf_gen_uniform(&rng, dt, sh->rb, sh->db, log1p ? -0.9 : (logy ? 0.1 : -5), 5);
    /* Zeros occur in the guarded operand (halves grid). */
    cf_array_t *guarded = mul ? y : x;
    for (int64_t i = 0; i < guarded->n; i++) guarded->v[i] = round(guarded->v[i] * 2) / 2;
    binary_case(ctx, op, dt, sh->name, x, y, 4);
  }
  /* The guard wins over 0, inf and NaN in the other operand; NaN in the guarded one spreads. */
  double zeros[] = {0, 0, 0, 0, -0.0, NAN, 1, INFINITY};
  double others[] = {0, NAN, INFINITY, -INFINITY, 0, 1, 0, 1};
  binary_case(ctx, op, dt, "zero_guard", cf_array_vec(dt, 8, mul ? others : zeros),
              cf_array_vec(dt, 8, mul ? zeros : others), 4);
  cf_incompatible_shapes_case(ctx, op, dt);
}

/* ---------------------------------------------------------------------------------------------
 * NextAfter */

static void emit_next_after(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  for (const cf_shape_pair_t *sh = cf_binary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    cf_array_t *x = cf_gen_uniform(&rng, dt, sh->ra, sh->da, -100, 100);
    cf_array_t *y = cf_gen_uniform(&rng, dt, sh->rb, sh->db, -100, 100);
    binary_case(ctx, op, dt, sh->name, x, y, 0);
  }
  double mx = cf_dtype_max(dt);
  double x[] = {0, 0, -0.0, 1, 1, 2, NAN, 1, mx, INFINITY, -mx, 1e-40};
  double y[] = {1, -1, 1, 1, 0, INFINITY, 1, NAN, INFINITY, 0, -INFINITY, 0};
  binary_case(ctx, op, dt, "edges", cf_array_vec(dt, 12, x), cf_array_vec(dt, 12, y), 0);
  cf_incompatible_shapes_case(ctx, op, dt);
}

/* ---------------------------------------------------------------------------------------------
 * ApproximateEqual */

static void approx_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name, cf_array_t *x,
                        cf_array_t *y, double tolerance, bool set_attr) {
  cf_case_t *c = cf_case_new("ApproximateEqual", name, dt);
  cf_case_expect(c, cf_ref_approximate_equal(x, y, set_attr ? tolerance : 1e-5));
  cf_case_input(c, x);
  cf_case_input(c, y);
  if (set_attr) cf_case_attr_float(c, "tolerance", tolerance);
  cf_run_case(ctx, c);
}

static void emit_approx(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    double spread, tolerance;
    bool set;
  } cases[] = {
      {"default_tolerance", 1, {64}, 3e-5, 1e-5, false},
      {"tolerance_half", 2, {8, 16}, 1, 0.5, true},
      {"rank3", 3, {2, 3, 4}, 0.3, 0.1, true},
      {"scalar", 0, {0}, 0.2, 0.1, true},
      {"empty", 2, {0, 3}, 1, 0.5, true},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), cases[i].name);
    /* Values near 0 keep differences of the small default tolerance representable. */
    double scale = cases[i].set ? 10 : 1e-3;
    cf_array_t *x = cf_gen_uniform(&rng, dt, cases[i].rank, cases[i].dims, -scale, scale);
    cf_array_t *y = cf_array_copy(x);
    for (int64_t k = 0; k < y->n; k++)
      y->v[k] += cf_rng_uniform(&rng, -cases[i].spread, cases[i].spread);
    cf_array_round(y);
    approx_case(ctx, dt, cases[i].name, x, y, cases[i].tolerance, cases[i].set);
  }
  double x[] = {NAN, INFINITY, INFINITY, 1}, y[] = {NAN, INFINITY, 1, NAN};
  approx_case(ctx, dt, "nan_inf", cf_array_vec(dt, 4, x), cf_array_vec(dt, 4, y), 0.5, true);
  cf_case_t *c = cf_case_new(op, "error_shapes_differ", dt);
  int64_t d3 = 3, d4 = 4;
  int i0 = cf_case_input(c, cf_array_new(dt, 1, &d3));
  int i1 = cf_case_input(c, cf_array_new(dt, 1, &d4));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "must be of the same shape");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * CumulativeLogsumexp */

static void cle_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name, cf_array_t *x,
                     int axis, bool exclusive, bool reverse) {
  cf_case_t *c = cf_case_new("CumulativeLogsumexp", name, dt);
  int canon = axis < 0 ? axis + x->rank : axis;
  cf_case_expect(c, cf_ref_cumulative_logsumexp(x, canon, exclusive, reverse));
  cf_case_input(c, x);
  int64_t ax = axis;
  cf_array_t *axis_arr = cf_array_ints(WEFT_DT_INT32, 1, &ax);
  axis_arr->rank = 0;
  cf_case_const_input(c, axis_arr);
  if (exclusive) cf_case_attr_bool(c, "exclusive", true);
  if (reverse) cf_case_attr_bool(c, "reverse", true);
  /* The running log-add rounds once per step; the reference sums each prefix at once. */
  c->tol = cf_tol_scale(c->tol, 16);
  cf_run_case(ctx, c);
}

static void emit_cumulative_logsumexp(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  for (const cf_scan_case_t *a = cf_scan_cases; a->name != NULL; a++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), a->name);
    cle_case(ctx, dt, a->name, cf_gen_uniform(&rng, dt, a->rank, a->dims, -5, 5), a->axis,
             a->exclusive, a->reverse);
  }
  /* -inf terms add nothing; values past exp's range do not overflow; NaN spreads onward. */
  double v[] = {-INFINITY, 1, -INFINITY, 60, 61, NAN, 2};
  if (dt != WEFT_DT_HALF) v[3] = 1000, v[4] = 1001;
  cle_case(ctx, dt, "inf_large_nan", cf_array_vec(dt, 7, v), 0, false, false);
  cle_case(ctx, dt, "inf_large_nan_exclusive", cf_array_vec(dt, 7, v), 0, true, false);
  cf_case_t *c = cf_case_new(op, "error_scalar", dt);
  cf_case_input(c, cf_array_scalar(dt, 1));
  int64_t zero = 0;
  cf_array_t *axis_arr = cf_array_ints(WEFT_DT_INT32, 1, &zero);
  axis_arr->rank = 0;
  int i0 = cf_case_const_input(c, axis_arr);
  (void)i0;
  c->unknown_shape[0] = true;
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "rank >= 1");
  cf_run_case(ctx, c);
}

const cf_suite_t cf_suites_special[] = {
    {"Zeta", dtypes_f32_f64, emit_zeta, NULL},
    {"Polygamma", dtypes_f32_f64, emit_zeta, NULL},
    {"Erfinv", cf_dtypes_float, emit_unary, NULL},
    {"Ndtri", cf_dtypes_float, emit_unary, NULL},
    {"BesselI0e", cf_dtypes_float, emit_unary, NULL},
    {"BesselI1e", cf_dtypes_float, emit_unary, NULL},
    {"Xdivy", cf_dtypes_float, emit_guarded, NULL},
    {"Xlogy", cf_dtypes_float, emit_guarded, NULL},
    {"Xlog1py", cf_dtypes_float, emit_guarded, NULL},
    {"MulNoNan", cf_dtypes_float, emit_guarded, NULL},
    {"NextAfter", dtypes_f32_f64, emit_next_after, NULL},
    {"ApproximateEqual", cf_dtypes_float, emit_approx, NULL},
    {"CumulativeLogsumexp", dtypes_f16_f32_f64, emit_cumulative_logsumexp, NULL},
    {NULL, NULL, NULL, NULL},
};
