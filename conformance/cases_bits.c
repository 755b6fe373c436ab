/* cases_bits.c: conformance cases of the ops of ops_bits.c: Bitcast (every pair of the twelve
 * numeric dtypes, known bit patterns, the shape rule and its errors), the bitwise ops and shifts
 * (broadcasting, extremes, shift amounts out of range), Invert, PopulationCount,
 * CompareAndBitpack, CheckNumerics, Bincount, HistogramFixedWidth, AccumulateNV2, BatchMatMul
 * (v1: equal batch dims), DivNoNan, TruncateDiv, TruncateMod, Rint, Cumprod and the special
 * functions Lgamma, Digamma, Igamma, Igammac and Betainc. */
#include <math.h>
#include <string.h>

#include "reference_bits.h"

static const weft_dtype_t dtypes_ints[] = {
    WEFT_DT_INT8,  WEFT_DT_INT16,  WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,
    WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INVALID};
static const weft_dtype_t dtypes_bitcast[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INVALID};
static const weft_dtype_t dtypes_bitpack[] = {WEFT_DT_BOOL, WEFT_DT_HALF,  WEFT_DT_FLOAT,
                                              WEFT_DT_DOUBLE, WEFT_DT_INT8, WEFT_DT_INT16,
                                              WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t dtypes_counts[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_FLOAT,
                                             WEFT_DT_DOUBLE, WEFT_DT_INVALID};
static const weft_dtype_t dtypes_bmm[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                          WEFT_DT_BFLOAT16, WEFT_DT_INT32, WEFT_DT_INT64,
                                          WEFT_DT_INVALID};
static const weft_dtype_t dtypes_truncmod[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_FLOAT,
                                               WEFT_DT_DOUBLE, WEFT_DT_HALF, WEFT_DT_BFLOAT16,
                                               WEFT_DT_INVALID};
static const weft_dtype_t dtypes_f32_f64[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INVALID};

static int dt_bits(weft_dtype_t dt) { return (int)weft_dtype_size(dt) * 8; }

/* An error case: the op must fail with code and a message containing `substring`. */
static void expect_error(cf_case_t *c, const char *substring) {
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, substring);
}

/* ---------------------------------------------------------------------------------------------
 * Bitcast */

static cf_array_t *bitcast_input(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  if (cf_dtype_is_float(dt)) return cf_gen_uniform(rng, dt, rank, dims, -100, 100);
  cf_gen_t g = {CF_GEN_UNIFORM, 0, 0};
  return cf_gen_array(rng, dt, rank, dims, g);
}

static void bitcast_case(cf_run_ctx_t *ctx, weft_dtype_t dt, weft_dtype_t to, const char *name,
                         cf_array_t *x) {
  cf_case_t *c = cf_case_new("Bitcast", name, dt);
  cf_case_expect(c, cf_ref_bitcast(x, to));
  cf_case_input(c, x);
  cf_case_attr_type(c, "type", to);
  c->tol = (cf_tol_t){0, 0, 0};
  cf_run_case(ctx, c);
}

static void bitcast_known(cf_run_ctx_t *ctx, weft_dtype_t dt, weft_dtype_t to, const char *name,
                          int rank, const int64_t *dims, const double *in, int wrank,
                          const int64_t *wdims, const double *want) {
  cf_case_t *c = cf_case_new("Bitcast", name, dt);
  cf_array_t *x = cf_array_new(dt, rank, dims), *w = cf_array_new(to, wrank, wdims);
  memcpy(x->v, in, sizeof(double) * (size_t)x->n);
  memcpy(w->v, want, sizeof(double) * (size_t)w->n);
  cf_case_input(c, x);
  cf_case_expect(c, w);
  cf_case_attr_type(c, "type", to);
  c->tol = (cf_tol_t){0, 0, 0};
  cf_run_case(ctx, c);
}

static void emit_bitcast(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  size_t in_size = weft_dtype_size(dt);
  for (const weft_dtype_t *t = dtypes_bitcast; *t != WEFT_DT_INVALID; t++) {
    size_t out_size = weft_dtype_size(*t);
    char *name = g_strdup_printf("to_%s", weft_dtype_name(*t));
    char *name3 = g_strdup_printf("rank3_to_%s", weft_dtype_name(*t));
    char *empty = g_strdup_printf("empty_to_%s", weft_dtype_name(*t));
    cf_case_t *probe = cf_case_new(op, name, dt);
    cf_rng_t rng;
    cf_case_rng(probe, &rng);
    cf_case_free(probe);
    int64_t ratio = in_size < out_size ? (int64_t)(out_size / in_size) : 1;
    int64_t d2[2] = {5, ratio}, d3[3] = {2, 3, ratio}, de[2] = {0, ratio};
    bitcast_case(ctx, dt, *t, name, bitcast_input(&rng, dt, 2, d2));
    bitcast_case(ctx, dt, *t, name3, bitcast_input(&rng, dt, 3, d3));
    bitcast_case(ctx, dt, *t, empty, cf_array_new(dt, 2, de));
    if (in_size >= out_size) {
      char *sc = g_strdup_printf("scalar_to_%s", weft_dtype_name(*t));
      bitcast_case(ctx, dt, *t, sc, bitcast_input(&rng, dt, 0, NULL));
      g_free(sc);
    }
    g_free(name);
    g_free(name3);
    g_free(empty);
  }
  /* Known bit patterns: little-endian bytes, IEEE encodings. */
  int64_t d1 = 1, d2 = 2, d14[2] = {1, 4}, d24[2] = {2, 4}, d12[2] = {1, 2};
  switch (dt) {
    case WEFT_DT_FLOAT: {
      double in[] = {1.0, -2.0}, want[] = {1065353216, -1073741824}, one[] = {1.0},
             bytes[] = {0, 0, 128, 63};
      bitcast_known(ctx, dt, WEFT_DT_INT32, "known_int32", 1, &d2, in, 1, &d2, want);
      bitcast_known(ctx, dt, WEFT_DT_UINT8, "known_bytes_little_endian", 1, &d1, one, 2, d14,
                    bytes);
      break;
    }
    case WEFT_DT_DOUBLE: {
      double in[] = {1.0}, want[] = {0, 1072693248};
      bitcast_known(ctx, dt, WEFT_DT_INT32, "known_int32_halves", 1, &d1, in, 2, d12, want);
      break;
    }
    case WEFT_DT_HALF: {
      double in[] = {1.0, -2.0}, want[] = {15360, -16384};
      bitcast_known(ctx, dt, WEFT_DT_INT16, "known_int16", 1, &d2, in, 1, &d2, want);
      break;
    }
    case WEFT_DT_BFLOAT16: {
      double in[] = {1.0, -2.0}, want[] = {16256, 49152};
      bitcast_known(ctx, dt, WEFT_DT_UINT16, "known_uint16", 1, &d2, in, 1, &d2, want);
      break;
    }
    case WEFT_DT_INT8: {
      double in[] = {1, 0, 0, 0, 0, 0, 0, -128}, want[] = {1, -2147483648.0};
      bitcast_known(ctx, dt, WEFT_DT_INT32, "known_int32_little_endian", 2, d24, in, 1, &d2,
                    want);
      break;
    }
    case WEFT_DT_UINT8: {
      double in[] = {0, 0, 128, 63}, want[] = {1.0};
      bitcast_known(ctx, dt, WEFT_DT_FLOAT, "known_float", 2, d14, in, 1, &d1, want);
      break;
    }
    default: break;
  }
  /* A wider output needs the last dim to be the size ratio (hidden from shape inference). */
  weft_dtype_t wider = WEFT_DT_INVALID;
  if (in_size == 1) wider = WEFT_DT_INT32;
  if (in_size == 2) wider = WEFT_DT_FLOAT;
  if (in_size == 4) wider = WEFT_DT_INT64;
  if (wider != WEFT_DT_INVALID) {
    int64_t bad[2] = {3, 3};
    cf_case_t *c = cf_case_new(op, "error_last_dim_not_ratio", dt);
    int i = cf_case_input(c, cf_array_new(dt, 2, bad));
    c->unknown_shape[i] = true;
    cf_case_attr_type(c, "type", wider);
    expect_error(c, "Cannot bitcast from");
    cf_run_case(ctx, c);
    c = cf_case_new(op, "error_scalar_to_wider", dt);
    i = cf_case_input(c, cf_array_new(dt, 0, NULL));
    c->unknown_shape[i] = true;
    cf_case_attr_type(c, "type", wider);
    expect_error(c, "Cannot bitcast from");
    cf_run_case(ctx, c);
    /* Known shape: shape inference refuses it already. */
    c = cf_case_new(op, "error_shape_inference", dt);
    cf_case_input(c, cf_array_new(dt, 2, bad));
    cf_case_attr_type(c, "type", wider);
    expect_error(c, "does not match");
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Bitwise binary ops and shifts */

const cf_shape_pair_t cf_binary_shapes[] = {
    {"scalar", 0, {0}, 0, {0}},
    {"n7", 1, {7}, 1, {7}},
    {"n1023", 1, {1023}, 1, {1023}},
    {"rank3", 3, {4, 5, 6}, 3, {4, 5, 6}},
    {"bcast_scalar_rhs", 2, {3, 4}, 0, {0}},
    {"bcast_row", 2, {4, 5}, 1, {5}},
    {"bcast_rank4", 4, {2, 1, 3, 1}, 4, {1, 4, 1, 5}},
    {"empty", 1, {0}, 1, {0}},
    {"empty_bcast", 2, {3, 0}, 1, {1}},
    {NULL, 0, {0}, 0, {0}},
};

static void binary_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                        cf_array_t *x, cf_array_t *y, cf_binary_fn fn, double tol_scale) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_expect(c, cf_ref_map2(x, y, dt, fn));
  cf_case_input(c, x);
  cf_case_input(c, y);
  if (cf_dtype_is_float(dt)) c->tol = cf_tol_scale(c->tol, tol_scale);
  cf_run_case(ctx, c);
}

void cf_incompatible_shapes_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  cf_case_t *c = cf_case_new(op, "error_incompatible_shapes", dt);
  int64_t a[2] = {2, 3}, b[1] = {4};
  int i0 = cf_case_input(c, cf_array_new(dt, 2, a));
  int i1 = cf_case_input(c, cf_array_new(dt, 1, b));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  expect_error(c, "Incompatible shapes");
  cf_run_case(ctx, c);
}

static void emit_bitwise(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_binary_fn fn = cf_ref_bits_binary_fn(op);
  bool shift = strstr(op, "Shift") != NULL;
  int bits = dt_bits(dt);
  for (const cf_shape_pair_t *sh = cf_binary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    cf_gen_t full = {CF_GEN_UNIFORM, 0, 0};
    cf_array_t *x, *y;
    if (shift) {
      /* 64-bit left shifts stay below 2^53 (the references' exact range); the clamped
       * amounts get their own case. */
      double lim = bits == 64 ? 1000 : 0;
      x = bits == 64 ? cf_gen_uniform(&rng, dt, sh->ra, sh->da, cf_dtype_is_signed(dt) ? -lim : 0,
                                      lim)
                     : cf_gen_array(&rng, dt, sh->ra, sh->da, full);
      double lo = cf_dtype_is_signed(dt) ? -3 : 0;
      y = cf_gen_uniform(&rng, dt, sh->rb, sh->db, lo, bits == 64 ? 40 : bits + 3);
    } else {
      x = cf_gen_array(&rng, dt, sh->ra, sh->da, full);
      y = cf_gen_array(&rng, dt, sh->rb, sh->db, full);
    }
    binary_case(ctx, op, dt, sh->name, x, y, fn, 1);
  }
  /* Extremes, and shift amounts at and past the width. */
  double mn = cf_dtype_min(dt), mx = cf_dtype_max(dt);
  if (bits == 64) mn = cf_dtype_is_signed(dt) ? -9007199254740992.0 : 0;
  if (shift) {
    double xs[] = {1, 1, 1, 1, 3, mx > 1e6 ? 1 : mx, 5, 5};
    double ys[] = {(double)bits - 1, (double)bits, (double)bits + 7, 0, (double)bits - 1, 1,
                   cf_dtype_is_signed(dt) ? -1 : 2, cf_dtype_is_signed(dt) ? -100 : 100};
    if (cf_dtype_is_signed(dt)) {
      xs[4] = -1;
      xs[6] = -7;
    }
    binary_case(ctx, op, dt, "amounts_clamped", cf_array_vec(dt, 8, xs), cf_array_vec(dt, 8, ys),
                fn, 1);
  } else {
    double xs[] = {mn, mx, 0, mn, mx, cf_dtype_is_signed(dt) ? -1 : 1};
    double ys[] = {mx, mn, mx, mn, 0, mx};
    binary_case(ctx, op, dt, "extremes", cf_array_vec(dt, 6, xs), cf_array_vec(dt, 6, ys), fn, 1);
  }
  cf_incompatible_shapes_case(ctx, op, dt);
}

/* ---------------------------------------------------------------------------------------------
 * Unary ops: Invert, PopulationCount, Rint, Lgamma, Digamma */

const cf_shape_t cf_unary_shapes[] = {
    {"scalar", 0, {0}}, {"empty", 1, {0}}, {"empty_2d", 2, {3, 0}}, {"n7", 1, {7}},
    {"n1023", 1, {1023}}, {"rank4", 4, {2, 3, 4, 5}}, {NULL, 0, {0}},
};

static void unary_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                       cf_array_t *x, weft_dtype_t out, double tol_scale, double atol) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_expect(c, cf_ref_map1(x, out, cf_ref_bits_unary_fn(op)));
  cf_case_input(c, x);
  if (cf_dtype_is_float(dt)) {
    c->tol = cf_tol_scale(c->tol, tol_scale);
    c->tol.atol += atol;
  }
  cf_run_case(ctx, c);
}

static void emit_unary_bits(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  weft_dtype_t out = strcmp(op, "PopulationCount") == 0 ? WEFT_DT_UINT8 : dt;
  cf_gen_t full = {CF_GEN_UNIFORM, 0, 0};
  for (const cf_shape_t *sh = cf_unary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    unary_case(ctx, op, dt, sh->name,
               cf_gen_array(&rng, dt, sh->rank, sh->dims, full), out, 1, 0);
  }
  double mn = dt_bits(dt) == 64 ? (cf_dtype_is_signed(dt) ? -9007199254740992.0 : 0)
                                : cf_dtype_min(dt);
  double v[] = {0, 1, -1, mn, cf_dtype_max(dt), 85, -86, 0x5555};
  int n = cf_dtype_is_signed(dt) ? 8 : 2;
  if (!cf_dtype_is_signed(dt)) {
    v[2] = cf_dtype_max(dt);
    v[3] = 170;
    n = 4;
  }
  unary_case(ctx, op, dt, "extremes", cf_array_vec(dt, n, v), out, 1, 0);
}

static void emit_unary_float(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool rint = strcmp(op, "Rint") == 0, digamma = strcmp(op, "Digamma") == 0;
  double lo = rint ? -100 : 0.05, hi = rint ? 100 : 12;
  /* Transcendentals: a few ulps more in float32, and an absolute floor where they cross 0. */
  double scale = rint ? 1 : 8, atol = rint ? 0 : (dt == WEFT_DT_DOUBLE ? 1e-14 : 1e-6);
  if (dt == WEFT_DT_HALF || dt == WEFT_DT_BFLOAT16) atol = rint ? 0 : 2e-2;
  for (const cf_shape_t *sh = cf_unary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    unary_case(ctx, op, dt, sh->name,
               cf_gen_uniform(&rng, dt, sh->rank, sh->dims, lo, hi), dt, scale,
               atol);
  }
  if (rint) {
    double v[] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.5, 0.49999997, 1e7 + 0.5, -0.0, 7};
    unary_case(ctx, op, dt, "halves_to_even", cf_array_vec(dt, G_N_ELEMENTS(v), v), dt, 1, 0);
  } else {
    /* Negative non-integers (reflection), large arguments, and the poles. */
    double v[] = {-0.5, -1.5, -2.25, -7.75, 0.001, 1, 2, 3.5, 30.5, 100.25};
    cf_array_t *x = cf_array_vec(dt, G_N_ELEMENTS(v), v);
    cf_array_round(x);
    unary_case(ctx, op, dt, "negative_and_large", x, dt, scale * 4,
               atol * (digamma && dt == WEFT_DT_FLOAT ? 10 : 1));
    double p[] = {0, -1, -2, INFINITY, NAN};
    unary_case(ctx, op, dt, "poles_inf_nan", cf_array_vec(dt, 5, p), dt, 1, 0);
  }
  int64_t big = 1 << 16;
  cf_rng_t rng;
  cf_rng_seed(&rng, op, weft_dtype_name(dt), "special");
  if (dt == WEFT_DT_FLOAT)
    unary_case(ctx, op, dt, "large_65536", cf_gen_uniform(&rng, dt, 1, &big, lo, hi), dt, scale,
               atol);
}

/* ---------------------------------------------------------------------------------------------
 * DivNoNan, TruncateDiv, TruncateMod, Igamma, Igammac */

static void emit_arith(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_binary_fn fn = cf_ref_bits_binary_fn(op);
  bool no_nan = strcmp(op, "DivNoNan") == 0, is_int = cf_dtype_is_int(dt);
  bool gamma = strncmp(op, "Igamma", 6) == 0;
  for (const cf_shape_pair_t *sh = cf_binary_shapes; sh->name != NULL; sh++) {
    cf_rng_t rng;
    cf_rng_seed(&rng, op, weft_dtype_name(dt), sh->name);
    cf_array_t *x, *y;
    if (gamma) {
      x = cf_gen_uniform(&rng, dt, sh->ra, sh->da, 0.05, 12);
      y = cf_gen_uniform(&rng, dt, sh->rb, sh->db, 0, 20);
    } else if (no_nan) {
      x = cf_gen_uniform(&rng, dt, sh->ra, sh->da, -10, 10);
      y = cf_gen_uniform(&rng, dt, sh->rb, sh->db, -3, 3);
      for (int64_t i = 0; i < y->n; i++) y->v[i] = round(y->v[i] * 2) / 2; /* zeros occur */
    } else {
      bool sgn = cf_dtype_is_signed(dt);
      x = cf_gen_uniform(&rng, dt, sh->ra, sh->da, sgn ? -100 : 0, 100);
      cf_gen_t nz = {CF_GEN_NONZERO, sgn ? -9 : 1, 9};
      y = cf_gen_array(&rng, dt, sh->rb, sh->db, nz);
    }
    double scale = gamma ? (dt == WEFT_DT_FLOAT ? 64 : 16) : 1;
    binary_case(ctx, op, dt, sh->name, x, y, fn, scale);
  }
  if (no_nan) {
    double xs[] = {NAN, INFINITY, -INFINITY, 0, 1, NAN}, ys[] = {0, 0, 0, 0, -0.0, 2};
    binary_case(ctx, op, dt, "zero_divisor_any_x", cf_array_vec(dt, 6, xs),
                cf_array_vec(dt, 6, ys), fn, 1);
  } else if (gamma) {
    /* The domain: a <= 0 or x < 0 give NaN; x = 0 and x = inf the limits. */
    double as[] = {-1, 0, 1, 1, 2.5, 1, NAN, 0.5}, xs[] = {1, 1, -1, 0, INFINITY, NAN, 1, 1e-3};
    binary_case(ctx, op, dt, "domain_edges", cf_array_vec(dt, 8, as), cf_array_vec(dt, 8, xs),
                fn, 16);
    /* igamma(1, x) = 1 - e^-x: a closed form. */
    double ones[] = {1, 1, 1, 1}, xv[] = {0.25, 1, 3, 9};
    cf_case_t *c = cf_case_new(op, "closed_form_a1", dt);
    cf_array_t *want = cf_array_vec(dt, 4, xv);
    for (int i = 0; i < 4; i++)
      want->v[i] = strcmp(op, "Igamma") == 0 ? -expm1(-xv[i]) : exp(-xv[i]);
    cf_array_round(want);
    cf_case_input(c, cf_array_vec(dt, 4, ones));
    cf_case_input(c, cf_array_vec(dt, 4, xv));
    cf_case_expect(c, want);
    c->tol = cf_tol_scale(c->tol, 16);
    cf_run_case(ctx, c);
  } else {
    /* Truncation toward zero for negative operands. */
    if (cf_dtype_is_signed(dt)) {
      double xs[] = {7, -7, 7, -7, 1, -1}, ys[] = {2, 2, -2, -2, 3, 3};
      binary_case(ctx, op, dt, "negative_truncates", cf_array_vec(dt, 6, xs),
                  cf_array_vec(dt, 6, ys), fn, 1);
    }
    if (is_int) {
      double xs[] = {1, 2, 3}, ys[] = {1, 0, 1};
      cf_case_t *c = cf_case_new(op, "error_division_by_zero", dt);
      int i0 = cf_case_input(c, cf_array_vec(dt, 3, xs));
      int i1 = cf_case_input(c, cf_array_vec(dt, 3, ys));
      c->unknown_shape[i0] = c->unknown_shape[i1] = true;
      expect_error(c, "Integer division by zero");
      cf_run_case(ctx, c);
    }
  }
  cf_incompatible_shapes_case(ctx, op, dt);
}

/* ---------------------------------------------------------------------------------------------
 * CompareAndBitpack */

static void emit_bitpack(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    double threshold;
  } cases[] = {
      {"n8", 1, {8}, 0}, {"rank2_3x16", 2, {3, 16}, 1}, {"rank3_2x3x8", 3, {2, 3, 8}, -1},
      {"empty", 2, {0, 8}, 0}, {"n1024", 1, {1024}, 0},
  };
  bool is_bool = dt == WEFT_DT_BOOL;
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t g = {is_bool ? CF_GEN_BOOL : CF_GEN_UNIFORM, is_bool ? 0 : -3, is_bool ? 0 : 3};
    cf_array_t *x = cf_gen_array(&rng, dt, cases[i].rank, cases[i].dims, g);
    /* Half the values on integers, so that x == threshold (not greater) occurs. */
    if (!is_bool)
      for (int64_t k = 0; k < x->n; k += 2) x->v[k] = round(x->v[k]);
    double th = is_bool ? 0 : cases[i].threshold;
    cf_case_expect(c, cf_ref_compare_and_bitpack(x, th));
    cf_case_input(c, x);
    cf_case_input(c, cf_array_scalar(dt, th));
    cf_run_case(ctx, c);
  }
  if (!is_bool) {
    double v[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    int64_t d[2] = {2, 8}, dw[2] = {2, 1};
    cf_case_t *c = cf_case_new(op, "first_element_top_bit", dt);
    cf_array_t *x = cf_array_new(dt, 2, d), *w = cf_array_new(WEFT_DT_UINT8, 2, dw);
    memcpy(x->v, v, sizeof v);
    w->v[0] = 128;
    w->v[1] = 1;
    cf_case_input(c, x);
    cf_case_input(c, cf_array_scalar(dt, 0));
    cf_case_expect(c, w);
    cf_run_case(ctx, c);
  }
  int64_t bad[2] = {3, 12}, vec = 2, eight = 8;
  cf_case_t *c = cf_case_new(op, "error_inner_dim_not_multiple_of_8", dt);
  int i0 = cf_case_input(c, cf_array_new(dt, 2, bad));
  cf_case_input(c, cf_array_scalar(dt, 0));
  c->unknown_shape[i0] = true;
  expect_error(c, "Inner dimension of input should be divisible by 8");
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_scalar_input", dt);
  i0 = cf_case_input(c, cf_array_scalar(dt, 1));
  cf_case_input(c, cf_array_scalar(dt, 0));
  c->unknown_shape[i0] = true;
  expect_error(c, "Input should be at least a vector");
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_threshold_not_scalar", dt);
  cf_case_input(c, cf_array_new(dt, 1, &eight));
  int i1 = cf_case_input(c, cf_array_new(dt, 1, &vec));
  c->unknown_shape[i1] = true;
  expect_error(c, "Compare must be a scalar");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * CheckNumerics */

static void emit_check_numerics(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  int64_t d[2] = {3, 4}, e = 0;
  cf_case_t *c = cf_case_new(op, "finite_passes_through", dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *x = cf_gen_uniform(&rng, dt, 2, d, -1e3, 1e3);
  x->v[0] = cf_dtype_max(dt);
  x->v[1] = -cf_dtype_max(dt);
  cf_case_expect(c, cf_array_copy(x));
  cf_case_input(c, x);
  cf_case_attr_string(c, "message", "checked");
  c->tol = (cf_tol_t){0, 0, 0};
  cf_run_case(ctx, c);
  c = cf_case_new(op, "empty", dt);
  cf_case_expect(c, cf_array_new(dt, 1, &e));
  cf_case_input(c, cf_array_new(dt, 1, &e));
  cf_case_attr_string(c, "message", "checked");
  cf_run_case(ctx, c);
  static const struct {
    const char *name;
    double a, b;
    const char *want;
  } bad[] = {
      {"error_nan", NAN, 1, "my check : Tensor had NaN values"},
      {"error_inf", INFINITY, 1, "my check : Tensor had Inf values"},
      {"error_neg_inf", 1, -INFINITY, "my check : Tensor had Inf values"},
      {"error_inf_and_nan", NAN, -INFINITY, "my check : Tensor had Inf and NaN values"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    c = cf_case_new(op, bad[i].name, dt);
    double v[] = {1, bad[i].a, 2, bad[i].b};
    cf_case_input(c, cf_array_vec(dt, 4, v));
    cf_case_attr_string(c, "message", "my check");
    expect_error(c, bad[i].want);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Bincount, HistogramFixedWidth */

static void bincount_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name, int rank,
                          const int64_t *dims, int64_t size, bool weighted, int64_t max_value) {
  cf_case_t *c = cf_case_new("Bincount", name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *arr = cf_gen_uniform(&rng, WEFT_DT_INT32, rank, dims, 0, (double)max_value);
  int64_t zero = 0;
  cf_array_t *w = weighted ? cf_gen_uniform(&rng, dt, rank, dims, cf_dtype_is_float(dt) ? -2 : 0, 5)
                           : cf_array_new(dt, 1, &zero);
  cf_case_expect(c, cf_ref_bincount(arr, size, w, dt));
  cf_case_input(c, arr);
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, (double)size));
  cf_case_input(c, w);
  if (cf_dtype_is_float(dt)) c->tol.atol += 1e-5;
  cf_run_case(ctx, c);
}

static void emit_bincount(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  int64_t n20 = 20, d2[2] = {4, 6}, n0 = 0, n1000 = 1000;
  bincount_case(ctx, dt, "counts", 1, &n20, 7, false, 6);
  bincount_case(ctx, dt, "weights", 1, &n20, 7, true, 6);
  bincount_case(ctx, dt, "size_below_max_ignores", 1, &n20, 4, true, 9);
  bincount_case(ctx, dt, "size_above_max", 1, &n20, 12, false, 6);
  bincount_case(ctx, dt, "size_zero", 1, &n20, 0, false, 6);
  bincount_case(ctx, dt, "rank2_weights", 2, d2, 5, true, 5);
  bincount_case(ctx, dt, "empty_arr", 1, &n0, 3, false, 2);
  bincount_case(ctx, dt, "n1000", 1, &n1000, 50, true, 60);
  double neg[] = {1, -1, 2};
  cf_case_t *c = cf_case_new(op, "error_negative_value", dt);
  cf_case_input(c, cf_array_vec(WEFT_DT_INT32, 3, neg));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 4));
  cf_case_input(c, cf_array_new(dt, 1, &n0));
  expect_error(c, "Input arr must be non-negative!");
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_negative_size", dt);
  cf_case_input(c, cf_array_vec(WEFT_DT_INT32, 2, (double[]){1, 2}));
  int is = cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, -2));
  c->unknown_shape[is] = true;
  cf_case_input(c, cf_array_new(dt, 1, &n0));
  expect_error(c, "size (-2) must be non-negative");
  cf_run_case(ctx, c);
  int64_t three = 3;
  c = cf_case_new(op, "error_weights_shape", dt);
  cf_case_input(c, cf_array_vec(WEFT_DT_INT32, 2, (double[]){1, 2}));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 4));
  int iw = cf_case_input(c, cf_array_new(dt, 1, &three));
  c->unknown_shape[iw] = true;
  expect_error(c, "same shape");
  cf_run_case(ctx, c);
}

static void histogram_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name, int rank,
                           const int64_t *dims, double lo, double hi, int64_t nbins,
                           weft_dtype_t out) {
  cf_case_t *c = cf_case_new("HistogramFixedWidth", name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  double span = hi - lo;
  cf_array_t *v = cf_gen_uniform(&rng, dt, rank, dims, lo - span / 4, hi + span / 4);
  double range[2] = {lo, hi};
  cf_case_expect(c, cf_ref_histogram(v, lo, hi, nbins, out));
  cf_case_input(c, v);
  cf_case_input(c, cf_array_vec(dt, 2, range));
  cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, (double)nbins));
  if (out != WEFT_DT_INT32) cf_case_attr_type(c, "dtype", out);
  cf_run_case(ctx, c);
}

static void emit_histogram(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  int64_t n40 = 40, d2[2] = {5, 7}, n0 = 0, n4096 = 4096;
  histogram_case(ctx, dt, "nbins8", 1, &n40, -4, 4, 8, WEFT_DT_INT32);
  histogram_case(ctx, dt, "nbins3_uneven_step", 1, &n40, -4, 4, 3, WEFT_DT_INT32);
  histogram_case(ctx, dt, "int64_out", 2, d2, 0, 100, 10, WEFT_DT_INT64);
  histogram_case(ctx, dt, "nbins1", 1, &n40, 0, 10, 1, WEFT_DT_INT32);
  histogram_case(ctx, dt, "empty_values", 1, &n0, 0, 10, 4, WEFT_DT_INT32);
  histogram_case(ctx, dt, "n4096", 1, &n4096, -1000, 1000, 64, WEFT_DT_INT32);
  double range[2] = {0, 10}, rev[2] = {5, 5};
  cf_case_t *c = cf_case_new(op, "error_nbins_zero", dt);
  cf_case_input(c, cf_array_vec(dt, 2, range));
  cf_case_input(c, cf_array_vec(dt, 2, range));
  int ib = cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 0));
  c->unknown_shape[ib] = true;
  expect_error(c, "nbins should be a positive number, but got '0'");
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_empty_range", dt);
  cf_case_input(c, cf_array_vec(dt, 2, range));
  cf_case_input(c, cf_array_vec(dt, 2, rev));
  cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, 3));
  expect_error(c, "value_range should satisfy value_range[0] < value_range[1]");
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_range_not_2", dt);
  cf_case_input(c, cf_array_vec(dt, 2, range));
  int ir = cf_case_input(c, cf_array_vec(dt, 1, range));
  c->unknown_shape[ir] = true;
  cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, 3));
  expect_error(c, "value_range should be a vector of 2 elements");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * AccumulateNV2, BatchMatMul, Cumprod, Betainc */

static void emit_accumulate(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int ns[] = {1, 3, 2, 4};
  const char *names[] = {"one_input", "three_inputs_rank3", "empty", "four_inputs_n1023"};
  int ranks[] = {1, 3, 2, 1};
  int64_t dims[][3] = {{7}, {2, 3, 4}, {0, 3}, {1023}};
  for (int s = 0; s < 4; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *xs[8];
    for (int k = 0; k < ns[s]; k++) {
      xs[k] = cf_gen_uniform(&rng, dt, ranks[s], dims[s], 0, 0);
      cf_case_input(c, xs[k]);
    }
    int len = ns[s];
    cf_case_args(c, 1, &len);
    cf_case_attr_int(c, "N", ns[s]);
    cf_case_attr_shape(c, "shape", ranks[s], dims[s]);
    cf_case_expect(c, cf_ref_addn(xs, ns[s]));
    /* 16-bit floats round every partial sum (as TensorFlow's in-place adds do): half an ulp
     * of each partial sum's magnitude, at most the sum of the inputs' largest magnitudes. */
    if (dt == WEFT_DT_HALF || dt == WEFT_DT_BFLOAT16) {
      double bound = 0;
      for (int k = 0; k < ns[s]; k++) {
        double m = 0;
        for (int64_t i = 0; i < xs[k]->n; i++) m = fmax(m, fabs(xs[k]->v[i]));
        bound += m;
      }
      c->tol.atol += ns[s] * (dt == WEFT_DT_HALF ? 4.9e-4 : 3.9e-3) * bound;
    }
    cf_run_case(ctx, c);
  }
  int64_t a[1] = {3}, b[1] = {4};
  cf_case_t *c = cf_case_new(op, "error_shapes_differ", dt);
  int i0 = cf_case_input(c, cf_array_new(dt, 1, a));
  int i1 = cf_case_input(c, cf_array_new(dt, 1, b));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  int len = 2;
  cf_case_args(c, 1, &len);
  cf_case_attr_int(c, "N", 2);
  cf_case_attr_shape(c, "shape", 1, (int64_t[]){-1});
  expect_error(c, "must have the same shape");
  cf_run_case(ctx, c);
}

static void emit_batch_matmul(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int r;
    int64_t da[4], db[4];
    bool adj_a, adj_b;
  } cases[] = {
      {"batch2", 3, {2, 3, 4}, {2, 4, 5}, false, false},
      {"batch1", 3, {1, 3, 4}, {1, 4, 2}, false, false},
      {"rank4", 4, {2, 2, 3, 4}, {2, 2, 4, 2}, false, false},
      {"adj_x", 3, {2, 4, 3}, {2, 4, 5}, true, false},
      {"adj_y", 3, {2, 3, 4}, {2, 5, 4}, false, true},
      {"adj_both_rank4", 4, {2, 2, 4, 3}, {2, 2, 5, 4}, true, true},
      {"rank2", 2, {3, 4}, {4, 5}, false, false},
      {"empty_batch", 3, {0, 3, 4}, {0, 4, 5}, false, false},
      {"odd_5x17x13x9", 3, {5, 17, 13}, {5, 13, 9}, false, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    bool fl = cf_dtype_is_float(dt);
    cf_array_t *x = cf_gen_uniform(&rng, dt, cases[i].r, cases[i].da, fl ? -1 : -10, fl ? 1 : 10);
    cf_array_t *y = cf_gen_uniform(&rng, dt, cases[i].r, cases[i].db, fl ? -1 : -10, fl ? 1 : 10);
    cf_case_expect(c, cf_ref_batch_matmul(x, y, cases[i].adj_a, cases[i].adj_b));
    cf_case_input(c, x);
    cf_case_input(c, y);
    if (cases[i].adj_a) cf_case_attr_bool(c, "adj_x", true);
    if (cases[i].adj_b) cf_case_attr_bool(c, "adj_y", true);
    if (fl) {
      double eps = dt == WEFT_DT_FLOAT ? 1.2e-7 : dt == WEFT_DT_DOUBLE ? 2.3e-16
                                                                      : dt == WEFT_DT_HALF ? 9.8e-4
                                                                                           : 7.9e-3;
      c->tol.atol += 4 * eps * 17;
    }
    cf_run_case(ctx, c);
  }
  /* Version 1 does not broadcast batch dims: [2,3,4] x [1,4,5] is refused. */
  int64_t da[3] = {2, 3, 4}, db[3] = {1, 4, 5};
  cf_case_t *c = cf_case_new(op, "error_batch_dims_differ", dt);
  int i0 = cf_case_input(c, cf_array_new(dt, 3, da));
  int i1 = cf_case_input(c, cf_array_new(dt, 3, db));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  expect_error(c, NULL);
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_batch_dims_shape_inference", dt);
  cf_case_input(c, cf_array_new(dt, 3, da));
  cf_case_input(c, cf_array_new(dt, 3, db));
  expect_error(c, NULL);
  cf_run_case(ctx, c);
}

static void emit_cumprod(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int axis;
    bool exclusive, reverse;
  } cases[] = {
      {"axis0", 2, {4, 5}, 0, false, false},
      {"axis1", 2, {4, 5}, 1, false, false},
      {"axis_neg1_rank3", 3, {2, 3, 4}, -1, false, false},
      {"exclusive", 2, {4, 5}, 1, true, false},
      {"reverse", 2, {4, 5}, 0, false, true},
      {"exclusive_reverse", 3, {2, 3, 4}, 1, true, true},
      {"n64", 1, {64}, 0, false, false},
      {"empty", 2, {0, 3}, 0, false, false},
      {"empty_axis", 2, {3, 0}, 1, true, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    bool fl = cf_dtype_is_float(dt);
    double lo = fl ? 0.5 : (cf_dtype_is_signed(dt) ? -2 : 0), hi = fl ? 1.5 : 2;
    cf_array_t *x = cf_gen_uniform(&rng, dt, cases[i].rank, cases[i].dims, lo, hi);
    int axis = cases[i].axis < 0 ? cases[i].axis + cases[i].rank : cases[i].axis;
    cf_case_expect(c, cf_ref_cumprod(x, axis, cases[i].exclusive, cases[i].reverse));
    cf_case_input(c, x);
    cf_array_t *ax = cf_array_scalar(WEFT_DT_INT32, cases[i].axis);
    cf_case_const_input(c, ax);
    if (cases[i].exclusive) cf_case_attr_bool(c, "exclusive", true);
    if (cases[i].reverse) cf_case_attr_bool(c, "reverse", true);
    if (fl) c->tol = cf_tol_scale(c->tol, 16);
    cf_run_case(ctx, c);
  }
}

static void emit_betainc(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int ra, rb, rx;
    int64_t n;
  } cases[] = {
      {"same_shape", 1, 1, 1, 31}, {"scalar_a", 0, 1, 1, 17}, {"scalar_a_b", 0, 0, 1, 9},
      {"scalars", 0, 0, 0, 1},     {"empty", 1, 1, 1, 0},     {"n1023", 1, 1, 1, 1023},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t n = cases[i].n;
    cf_array_t *a = cf_gen_uniform(&rng, dt, cases[i].ra, &n, 0.1, 12);
    cf_array_t *b = cf_gen_uniform(&rng, dt, cases[i].rb, &n, 0.1, 12);
    cf_array_t *x = cf_gen_uniform(&rng, dt, cases[i].rx, &n, 0, 1);
    cf_case_expect(c, cf_ref_betainc(a, b, x));
    cf_case_input(c, a);
    cf_case_input(c, b);
    cf_case_input(c, x);
    c->tol = cf_tol_scale(c->tol, dt == WEFT_DT_FLOAT ? 64 : 1000);
    c->tol.atol += dt == WEFT_DT_FLOAT ? 1e-6 : 1e-13;
    cf_run_case(ctx, c);
  }
  /* The domain and closed forms: I_x(1, 1) = x, I_x(a, 1) = x^a; NaN outside the domain. */
  double as[] = {1, 1, 2.5, 3, -1, 1, 2, 2, 0}, bs[] = {1, 1, 1, 1, 1, 0, 2, 2, 1};
  double xs[] = {0.3, 0.9, 0.5, 0.2, 0.5, 0.5, -0.1, 1.5, 0.5};
  cf_case_t *c = cf_case_new(op, "closed_forms_and_domain", dt);
  cf_array_t *want = cf_array_vec(dt, 9, xs);
  want->v[0] = 0.3;
  want->v[1] = 0.9;
  want->v[2] = pow(0.5, 2.5);
  want->v[3] = pow(0.2, 3);
  for (int k = 4; k < 9; k++) want->v[k] = NAN;
  cf_array_round(want);
  cf_case_input(c, cf_array_vec(dt, 9, as));
  cf_case_input(c, cf_array_vec(dt, 9, bs));
  cf_case_input(c, cf_array_vec(dt, 9, xs));
  cf_case_expect(c, want);
  c->tol = cf_tol_scale(c->tol, 64);
  cf_run_case(ctx, c);
  double e0[] = {1, 2}, e1[] = {0, 1};
  c = cf_case_new(op, "x_0_and_1", dt);
  cf_case_input(c, cf_array_vec(dt, 2, e0));
  cf_case_input(c, cf_array_vec(dt, 2, e0));
  cf_case_input(c, cf_array_vec(dt, 2, e1));
  cf_case_expect(c, cf_array_vec(dt, 2, e1));
  cf_run_case(ctx, c);
  int64_t d3 = 3, d4 = 4;
  c = cf_case_new(op, "error_shapes_differ", dt);
  int i0 = cf_case_input(c, cf_array_new(dt, 1, &d3));
  int i1 = cf_case_input(c, cf_array_new(dt, 1, &d4));
  int i2 = cf_case_input(c, cf_array_new(dt, 1, &d3));
  c->unknown_shape[i0] = c->unknown_shape[i1] = c->unknown_shape[i2] = true;
  expect_error(c, "inconsistent");
  cf_run_case(ctx, c);
}

const cf_suite_t cf_suites_bits[] = {
    {"Bitcast", dtypes_bitcast, emit_bitcast, NULL},
    {"BitwiseAnd", dtypes_ints, emit_bitwise, NULL},
    {"BitwiseOr", dtypes_ints, emit_bitwise, NULL},
    {"BitwiseXor", dtypes_ints, emit_bitwise, NULL},
    {"LeftShift", dtypes_ints, emit_bitwise, NULL},
    {"RightShift", dtypes_ints, emit_bitwise, NULL},
    {"Invert", dtypes_ints, emit_unary_bits, NULL},
    {"PopulationCount", dtypes_ints, emit_unary_bits, NULL},
    {"CompareAndBitpack", dtypes_bitpack, emit_bitpack, NULL},
    {"CheckNumerics", cf_dtypes_float, emit_check_numerics, NULL},
    {"Bincount", dtypes_counts, emit_bincount, NULL},
    {"HistogramFixedWidth", dtypes_counts, emit_histogram, NULL},
    {"AccumulateNV2", cf_dtypes_numeric, emit_accumulate, NULL},
    {"BatchMatMul", dtypes_bmm, emit_batch_matmul, NULL},
    {"DivNoNan", cf_dtypes_float, emit_arith, NULL},
    {"TruncateDiv", dtypes_ints, emit_arith, NULL},
    {"TruncateMod", dtypes_truncmod, emit_arith, NULL},
    {"Rint", cf_dtypes_float, emit_unary_float, NULL},
    {"Cumprod", cf_dtypes_numeric, emit_cumprod, NULL},
    {"Lgamma", cf_dtypes_float, emit_unary_float, NULL},
    {"Digamma", cf_dtypes_float, emit_unary_float, NULL},
    {"Igamma", cf_dtypes_float, emit_arith, NULL},
    {"Igammac", cf_dtypes_float, emit_arith, NULL},
    {"Betainc", dtypes_f32_f64, emit_betainc, NULL},
    {NULL, NULL, NULL, NULL},
};
