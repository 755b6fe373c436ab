/* cases_stateless.c: conformance cases of TensorFlow's stateless random ops
 * (StatelessRandomUniform, StatelessRandomNormal, StatelessTruncatedNormal,
 * StatelessRandomUniformInt, StatelessMultinomial).
 *
 * These ops promise TensorFlow's numbers bit for bit, so the cases compare exactly with values
 * computed here by a separate, deliberately plain implementation of what TensorFlow does
 * (stateless_random_ops.cc's GenerateKey, philox_random.h, random_distributions.h and
 * multinomial_op.cc): element i of a fixed-sample distribution is word i % group of the Philox
 * block at counter + i / group, computed element by element with a 128-bit counter kept as two
 * uint64 halves. Two cases also carry TensorFlow's own published outputs for seed (1, 2):
 *  - tf.random.stateless_normal(shape=[2, 3], seed=[1, 2]) from TensorFlow's guide
 *    "Random number generation" (tensorflow.org/guide/random_numbers, "Stateless RNGs"):
 *    [[0.5441101, 0.20738031, 0.07356433], [0.04643455, -1.30159, -0.95385665]];
 *  - tf.image.stateless_random_brightness(x, 0.2, seed=(1, 2)), whose docstring shows 1.0 + delta
 *    = 1.1376241 with delta = stateless_uniform([], minval=-0.2, maxval=0.2): the first uniform
 *    u satisfies (float)(u * 0.4f) - 0.2f + 1.0f == 1.1376241f.
 * Each op also gets TensorFlow's error cases. */
#include <math.h>
#include <string.h>

#include "reference.h"

/* ---------------------------------------------------------------------------------------------
 * The reference generator. */

typedef struct ref_gen {
  uint32_t key[2];
  uint64_t ctr_lo, ctr_hi; /* the 128-bit counter: words 0-1 and 2-3 */
} ref_gen_t;

static void ref_philox(const uint32_t key_in[2], const uint32_t ctr_in[4], uint32_t out[4]) {
  uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]};
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int round = 0; round < 10; round++) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * c[0];
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];
    const uint32_t n[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1,
                           (uint32_t)(p0 >> 32) ^ c[3] ^ k1, (uint32_t)p0};
    memcpy(c, n, sizeof c);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, c, sizeof c);
}

static ref_gen_t ref_key(int64_t seed0, int64_t seed1) {
  const uint64_t s0 = (uint64_t)seed0, s1 = (uint64_t)seed1;
  const uint32_t fixed[2] = {0x3ec8f720u, 0x02461e29u};
  const uint32_t ctr[4] = {(uint32_t)s0, (uint32_t)(s0 >> 32), (uint32_t)s1, (uint32_t)(s1 >> 32)};
  uint32_t mix[4];
  ref_philox(fixed, ctr, mix);
  ref_gen_t g = {{mix[0], mix[1]}, 0, (uint64_t)mix[2] | (uint64_t)mix[3] << 32};
  return g;
}

/* The block at counter + n. */
static void ref_block(const ref_gen_t *g, uint64_t n, uint32_t out[4]) {
  uint64_t lo = g->ctr_lo + n, hi = g->ctr_hi + (lo < n);
  const uint32_t ctr[4] = {(uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32)};
  ref_philox(g->key, ctr, out);
}

/* Word w of the stream that starts at block `start` (SingleSampleAdapter). */
static uint32_t ref_word(const ref_gen_t *g, uint64_t start, uint64_t w) {
  uint32_t b[4];
  ref_block(g, start + w / 4, b);
  return b[w % 4];
}

static float ref_unit_float(uint32_t x) { /* 23 low bits over 2^23 */
  return (float)(x & 0x7fffffu) / 8388608.0f;
}

static double ref_unit_double(uint32_t x0, uint32_t x1) { /* 52 bits over 2^52 */
  return (double)(((uint64_t)(x0 & 0xfffffu) << 32) | x1) / 4503599627370496.0;
}

static void ref_normal_float(uint32_t x0, uint32_t x1, float out[2]) {
  float u1 = ref_unit_float(x0);
  if (u1 < 1.0e-7f) u1 = 1.0e-7f;
  const float v1 = (float)(6.283185307179586 * (double)ref_unit_float(x1));
  const float r = sqrtf(-2.0f * logf(u1));
  float s, c;
  sincosf(v1, &s, &c);
  out[0] = s * r;
  out[1] = c * r;
}

static void ref_normal_double(const uint32_t x[4], double out[2]) {
  double u1 = ref_unit_double(x[0], x[1]);
  if (u1 < 1.0e-7) u1 = 1.0e-7;
  const double v1 = 6.283185307179586 * ref_unit_double(x[2], x[3]);
  const double r = sqrt(-2.0 * log(u1));
  double s, c;
  sincos(v1, &s, &c);
  out[0] = s * r;
  out[1] = c * r;
}

/* Element i of the op's output. */
static double ref_element(const char *op, weft_dtype_t dt, const ref_gen_t *g, int64_t i,
                          int64_t lo, int64_t hi) {
  const bool wide = dt == WEFT_DT_DOUBLE || dt == WEFT_DT_INT64;
  const int group = wide ? 2 : 4;
  const int64_t grp = i / group, k = i % group;
  uint32_t b[4];
  if (strcmp(op, "StatelessTruncatedNormal") == 0) {
    /* Group grp reads words from block grp * group * 64 on; keep the first `group` values of
     * magnitude below 2. */
    const uint64_t start = (uint64_t)grp * (uint64_t)group * 64;
    int64_t found = 0;
    for (uint64_t w = 0;; w += wide ? 4 : 2) {
      double v[2];
      if (wide) {
        const uint32_t x[4] = {ref_word(g, start, w), ref_word(g, start, w + 1),
                               ref_word(g, start, w + 2), ref_word(g, start, w + 3)};
        ref_normal_double(x, v);
      } else {
        float f[2];
        ref_normal_float(ref_word(g, start, w), ref_word(g, start, w + 1), f);
        v[0] = f[0];
        v[1] = f[1];
      }
      for (int j = 0; j < 2; j++)
        if (fabs(v[j]) < 2.0 && found++ == k) return cf_round_to_dtype(dt, v[j]);
    }
  }
  ref_block(g, (uint64_t)grp, b);
  if (strcmp(op, "StatelessRandomUniform") == 0) {
    switch (dt) {
      case WEFT_DT_DOUBLE: return ref_unit_double(b[2 * k], b[2 * k + 1]);
      case WEFT_DT_HALF: return (double)(b[k] & 0x3ffu) / 1024.0;
      case WEFT_DT_BFLOAT16: return (double)(b[k] & 0x7fu) / 128.0;
      default: return ref_unit_float(b[k]);
    }
  }
  if (strcmp(op, "StatelessRandomNormal") == 0) {
    if (dt == WEFT_DT_DOUBLE) {
      double v[2];
      ref_normal_double(b, v);
      return v[k];
    }
    float f[2];
    ref_normal_float(b[k & ~1], b[(k & ~1) + 1], f);
    return cf_round_to_dtype(dt, f[k & 1]);
  }
  /* StatelessRandomUniformInt: lo + bits mod (hi - lo), in the dtype's width. */
  if (dt == WEFT_DT_INT64) {
    const uint64_t bits = b[2 * k] | (uint64_t)b[2 * k + 1] << 32;
    return (double)(int64_t)((uint64_t)lo + bits % ((uint64_t)hi - (uint64_t)lo));
  }
  const uint32_t range = (uint32_t)hi - (uint32_t)lo;
  return (double)(int32_t)((uint32_t)lo + b[k] % range);
}

/* ---------------------------------------------------------------------------------------------
 * Cases. */

typedef struct seed_case {
  const char *name;
  int rank;
  int64_t dims[3];
  weft_dtype_t seed_dtype;
  int64_t seed[2];
} seed_case_t;

static const seed_case_t kSeedCases[] = {
    {"seed_1_2_shape_2x3", 2, {2, 3}, WEFT_DT_INT32, {1, 2}},
    {"seed_int64_odd_5x7", 2, {5, 7}, WEFT_DT_INT64, {0x12345678ABCDll, -3}},
    {"seed_negative_1023", 1, {1023}, WEFT_DT_INT32, {-7, 2147483647}},
    {"seed_0_0_3d", 3, {3, 4, 5}, WEFT_DT_INT64, {0, 0}},
    {"scalar", 0, {0}, WEFT_DT_INT32, {42, 1}},
};

static cf_case_t *stateless_case(const char *op, const char *name, weft_dtype_t dt, int rank,
                                 const int64_t *dims, weft_dtype_t seed_dt, const int64_t seed[2]) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, rank, dims));
  cf_case_const_input(c, cf_array_ints(seed_dt, 2, seed));
  return c;
}

static cf_array_t *reference(const char *op, weft_dtype_t dt, int rank, const int64_t *dims,
                             const int64_t seed[2], int64_t lo, int64_t hi) {
  cf_array_t *want = cf_array_new(dt, rank, dims);
  const ref_gen_t g = ref_key(seed[0], seed[1]);
  for (int64_t i = 0; i < want->n; i++) want->v[i] = ref_element(op, dt, &g, i, lo, hi);
  return want;
}

static const cf_tol_t kExact = {0, 0, 0};

static void emit_errors(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, bool is_int) {
  const int64_t dims[2] = {2, 3};
  /* A seed of 3 elements behind a placeholder of unknown shape reaches the kernel's check. */
  {
    const int64_t seed3[3] = {1, 2, 3};
    cf_case_t *c = cf_case_new(op, "seed_shape_3", dt);
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 2, dims));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, seed3));
    c->unknown_shape[1] = true;
    if (is_int) {
      cf_case_input(c, cf_array_scalar(dt, 0));
      cf_case_input(c, cf_array_scalar(dt, 10));
    } else {
      cf_case_attr_type(c, "dtype", dt);
    }
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "seed must have shape [2], not [3]");
    cf_run_case(ctx, c);
  }
  /* A negative dimension in a fed shape. */
  {
    const int64_t bad[2] = {2, -1}, seed[2] = {1, 2};
    cf_case_t *c = cf_case_new(op, "negative_dim", dt);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, bad));
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT64, 2, seed));
    if (is_int) {
      cf_case_input(c, cf_array_scalar(dt, 0));
      cf_case_input(c, cf_array_scalar(dt, 10));
    } else {
      cf_case_attr_type(c, "dtype", dt);
    }
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Dimension -1 must be >= 0");
    cf_run_case(ctx, c);
  }
  /* The seed's shape is checked at graph construction when known. */
  {
    const int64_t seed1[1] = {1};
    cf_case_t *c = cf_case_new(op, "seed_shape_1_graph", dt);
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 2, dims));
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 1, seed1));
    if (is_int) {
      cf_case_input(c, cf_array_scalar(dt, 0));
      cf_case_input(c, cf_array_scalar(dt, 10));
    } else {
      cf_case_attr_type(c, "dtype", dt);
    }
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Dimension must be 2 but is 1");
    cf_run_case(ctx, c);
  }
  if (!is_int) return;
  const int64_t seed[2] = {1, 2};
  const int64_t bounds[][2] = {{5, 5}, {7, -3}};
  const char *const msgs[] = {"Need minval < maxval, got 5 >= 5", "Need minval < maxval, got 7 >= -3"};
  for (int i = 0; i < 2; i++) {
    cf_case_t *c = stateless_case(op, i == 0 ? "minval_eq_maxval" : "minval_gt_maxval", dt, 2, dims,
                                  WEFT_DT_INT32, seed);
    cf_case_input(c, cf_array_scalar(dt, (double)bounds[i][0]));
    cf_case_input(c, cf_array_scalar(dt, (double)bounds[i][1]));
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msgs[i]);
    cf_run_case(ctx, c);
  }
  /* TensorFlow checks the bounds only for a non-empty output. */
  {
    const int64_t empty[2] = {0, 3};
    cf_case_t *c = stateless_case(op, "empty_ignores_bounds", dt, 2, empty, WEFT_DT_INT32, seed);
    cf_case_input(c, cf_array_scalar(dt, 5));
    cf_case_input(c, cf_array_scalar(dt, 5));
    cf_case_expect(c, cf_array_new(dt, 2, empty));
    cf_run_case(ctx, c);
  }
}

static void emit_stateless(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  const bool is_int = strcmp(op, "StatelessRandomUniformInt") == 0;
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  const int64_t int_bounds[][2] = {
      {-5, 15},
      {dt == WEFT_DT_INT64 ? -4503599627370496ll : -2147483647ll - 1,
       dt == WEFT_DT_INT64 ? 4503599627370496ll : 2147483647ll},
      {0, 3},
  };
  const char *const bound_names[] = {"m5_15", "wide", "0_3"};
  for (size_t s = 0; s < G_N_ELEMENTS(kSeedCases); s++) {
    const seed_case_t *sc = &kSeedCases[s];
    for (int b = 0; b < (is_int ? 3 : 1); b++) {
      char *name = is_int ? g_strdup_printf("%s_%s", sc->name, bound_names[b]) : g_strdup(sc->name);
      cf_case_t *c = stateless_case(op, name, dt, sc->rank, sc->dims, sc->seed_dtype, sc->seed);
      g_free(name);
      int64_t lo = 0, hi = 0;
      if (is_int) {
        lo = int_bounds[b][0];
        hi = int_bounds[b][1];
        cf_case_input(c, cf_array_scalar(dt, (double)lo));
        cf_case_input(c, cf_array_scalar(dt, (double)hi));
      } else {
        cf_case_attr_type(c, "dtype", dt);
      }
      cf_case_expect(c, reference(op, dt, sc->rank, sc->dims, sc->seed, lo, hi));
      c->tol = kExact;
      cf_run_case(ctx, c);
    }
  }
  /* Larger outputs spread over threads must give the same numbers. */
  {
    const int64_t dims[2] = {257, 129}, seed[2] = {31337, -1};
    cf_case_t *c = stateless_case(op, "threads_257x129", dt, 2, dims, WEFT_DT_INT64, seed);
    if (is_int) {
      cf_case_input(c, cf_array_scalar(dt, -100));
      cf_case_input(c, cf_array_scalar(dt, 1000));
    } else {
      cf_case_attr_type(c, "dtype", dt);
    }
    cf_case_expect(c, reference(op, dt, 2, dims, seed, -100, 1000));
    c->tol = kExact;
    cf_run_case(ctx, c);
  }
  /* TensorFlow's published numbers for seed (1, 2). */
  if (dt == WEFT_DT_FLOAT && strcmp(op, "StatelessRandomNormal") == 0) {
    const int64_t dims[2] = {2, 3}, seed[2] = {1, 2};
    static const double tf_guide[6] = {0.5441101, 0.20738031, 0.07356433,
                                       0.04643455, -1.30159, -0.95385665};
    cf_case_t *c = stateless_case(op, "tf_guide_random_numbers", dt, 2, dims, WEFT_DT_INT32, seed);
    cf_case_attr_type(c, "dtype", dt);
    cf_array_t *want = cf_array_new(WEFT_DT_FLOAT, 2, dims);
    memcpy(want->v, tf_guide, sizeof tf_guide);
    cf_case_expect(c, want);
    c->tol = (cf_tol_t){2e-7, 1e-8, 1e-12}; /* the guide prints 8 significant digits */
    cf_run_case(ctx, c);
  }
  if (dt == WEFT_DT_FLOAT && strcmp(op, "StatelessRandomUniform") == 0) {
    /* The first uniform for seed (1, 2): brightness delta u * 0.4 - 0.2 = 0.1376241 - 1 + 1. */
    const int64_t seed[2] = {1, 2};
    cf_case_t *c = stateless_case(op, "tf_stateless_random_brightness", dt, 0, NULL, WEFT_DT_INT32,
                                  seed);
    cf_case_attr_type(c, "dtype", dt);
    cf_case_expect(c, cf_array_scalar(WEFT_DT_FLOAT, 0.84406042));
    c->tol = (cf_tol_t){2e-7, 1e-8, 1e-12};
    cf_run_case(ctx, c);
  }
  emit_errors(ctx, op, dt, is_int);
}

/* ---------------------------------------------------------------------------------------------
 * StatelessMultinomial: TensorFlow's CPU kernel in one shard, one double (two words of the
 * stream from counter 0) per sample, row after row; the class is the first running sum of
 * exp(logit - max) over finite logits above u * total. */

static cf_array_t *ref_multinomial(const cf_array_t *logits, int64_t samples, const int64_t seed[2],
                                   weft_dtype_t odt) {
  const int64_t batch = logits->dims[0], classes = logits->dims[1];
  const int64_t dims[2] = {batch, samples};
  cf_array_t *out = cf_array_new(odt, 2, dims);
  const ref_gen_t g = ref_key(seed[0], seed[1]);
  double *cdf = g_new(double, classes);
  uint64_t word = 0;
  for (int64_t b = 0; b < batch; b++) {
    const double *row = logits->v + b * classes;
    double max = -INFINITY, total = 0;
    for (int64_t j = 0; j < classes; j++)
      if (isfinite(row[j]) && row[j] > max) max = row[j];
    for (int64_t j = 0; j < classes; j++) {
      if (isfinite(row[j])) total += exp(row[j] - max);
      cdf[j] = total;
    }
    for (int64_t s = 0; s < samples; s++, word += 2) {
      const double find = ref_unit_double(ref_word(&g, 0, word), ref_word(&g, 0, word + 1)) * total;
      int64_t cls = 0;
      while (cls < classes && cdf[cls] <= find) cls++;
      out->v[b * samples + s] = (double)cls;
    }
  }
  g_free(cdf);
  return out;
}

static void emit_multinomial(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct mcase {
    const char *name;
    int64_t batch, classes, samples;
    int64_t seed[2];
    weft_dtype_t seed_dt, out_dt;
  } mcase_t;
  static const mcase_t cases[] = {
      {"b1_c5_s10", 1, 5, 10, {1, 2}, WEFT_DT_INT32, WEFT_DT_INT64},
      {"b3_c4_s7_odd", 3, 4, 7, {-9, 123456789}, WEFT_DT_INT64, WEFT_DT_INT32},
      {"b2_c100_s33", 2, 100, 33, {0, 0}, WEFT_DT_INT64, WEFT_DT_INT64},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const mcase_t *m = &cases[i];
    cf_case_t *c = cf_case_new(op, m->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    const int64_t ldims[2] = {m->batch, m->classes};
    cf_array_t *logits = cf_gen_uniform(&rng, dt, 2, ldims, -2, 2);
    if (i == 1) logits->v[1] = -INFINITY; /* never drawn */
    cf_case_input(c, logits);
    cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, (double)m->samples));
    cf_case_const_input(c, cf_array_ints(m->seed_dt, 2, m->seed));
    cf_case_attr_type(c, "output_dtype", m->out_dt);
    cf_case_expect(c, ref_multinomial(logits, m->samples, m->seed, m->out_dt));
    c->tol = kExact;
    cf_run_case(ctx, c);
  }
  /* A seed of 3 elements behind a placeholder of unknown shape. */
  const int64_t ldims[2] = {2, 3}, seed3[3] = {1, 2, 3};
  cf_case_t *c = cf_case_new(op, "seed_shape_3", dt);
  cf_case_input(c, cf_array_new(dt, 2, ldims));
  cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, 4));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, seed3));
  c->unknown_shape[2] = true;
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "seed must have shape [2], not [3]");
  cf_run_case(ctx, c);
}

static const weft_dtype_t int_out[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_stateless[] = {
    {"StatelessRandomUniform", cf_dtypes_float, emit_stateless, "dtype"},
    {"StatelessRandomNormal", cf_dtypes_float, emit_stateless, "dtype"},
    {"StatelessTruncatedNormal", cf_dtypes_float, emit_stateless, "dtype"},
    {"StatelessRandomUniformInt", int_out, emit_stateless, "dtype"},
    {"StatelessMultinomial", cf_dtypes_float, emit_multinomial, "T"},
    {NULL, NULL, NULL, NULL},
};
