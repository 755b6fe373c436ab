/* cases_candidate.c: conformance cases of the candidate samplers (UniformCandidateSampler,
 * LogUniformCandidateSampler) and ComputeAccidentalHits (candidate_sampler_ops.cc).
 *
 * Weft's random stream is not TensorFlow's, so the samplers are checked by properties: every
 * candidate in [0, range_max); with replacement, 20000 draws whose class frequencies pass a
 * chi-square bound against the base distribution; unique, no candidate twice (and all of
 * [0, range_max) when num_sampled == range_max); the expected counts equal the closed forms of
 * range_sampler.cc, recomputed here from the base probabilities (with unique, the number of tries
 * is solved from one count and must then explain every other). ComputeAccidentalHits is compared
 * with hand-computed outputs. Each op also gets its error cases. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "reference.h"

static bool is_log_uniform(const cf_case_t *c) { return strstr(c->op, "LogUniform") != NULL; }

/* The base probability of class v in float, as the samplers' Probability() returns it. */
static float base_probability(const cf_case_t *c, double v) {
  const double range = (double)cf_case_int(c, "range_max", 1);
  if (!is_log_uniform(c)) return (float)(1.0 / range);
  return (float)(log((v + 2.0) / (v + 1.0)) / log1p(range));
}

/* ExpectedCountHelper: p * num_sampled when every try was kept, else 1 - (1 - p)^tries. */
static double closed_form_count(float p, int64_t num_sampled, int64_t tries) {
  if (tries == num_sampled) return (double)(p * (float)num_sampled);
  return -expm1((double)tries * log1p(-(double)p));
}

static char *check_counts(const cf_case_t *c, const cf_array_t *cand, const cf_array_t *true_ec,
                          const cf_array_t *samp_ec, int64_t tries) {
  const cf_array_t *tc = c->inputs[0];
  const int64_t num_sampled = cand->n;
  for (int64_t i = 0; i < num_sampled + tc->n; i++) {
    bool sampled = i < num_sampled;
    double v = sampled ? cand->v[i] : tc->v[i - num_sampled];
    double got = sampled ? samp_ec->v[i] : true_ec->v[i - num_sampled];
    double want = closed_form_count(base_probability(c, v), num_sampled, tries);
    if (fabs(got - want) > 1e-5 * fabs(want) + 1e-7)
      return g_strdup_printf("%s expected count %" G_GINT64_FORMAT " of class %g is %.9g, want "
                             "%.9g (%" G_GINT64_FORMAT " tries)",
                             sampled ? "sampled" : "true", sampled ? i : i - num_sampled, v, got,
                             want, tries);
  }
  return NULL;
}

static char *check_sampler(const cf_case_t *c, cf_array_t *const *outs, int n) {
  if (n < 3 || outs[0] == NULL || outs[1] == NULL || outs[2] == NULL) return g_strdup("no output");
  const cf_array_t *cand = outs[0], *true_ec = outs[1], *samp_ec = outs[2], *tc = c->inputs[0];
  const int64_t num_sampled = cf_case_int(c, "num_sampled", 0);
  const int64_t range = cf_case_int(c, "range_max", 1);
  const bool unique = cf_case_int(c, "unique", 0) != 0;
  if (cand->rank != 1 || cand->n != num_sampled || samp_ec->rank != 1 || samp_ec->n != num_sampled)
    return g_strdup("sampled outputs are not vectors of num_sampled");
  if (true_ec->rank != 2 || true_ec->dims[0] != tc->dims[0] || true_ec->dims[1] != tc->dims[1])
    return g_strdup("true_expected_count does not have true_classes' shape");
  double *count = g_new0(double, range);
  char *why = NULL;
  for (int64_t i = 0; i < num_sampled && why == NULL; i++) {
    double v = cand->v[i];
    if (v < 0 || v >= (double)range || v != floor(v))
      why = g_strdup_printf("candidate %" G_GINT64_FORMAT " = %g is outside [0, %" G_GINT64_FORMAT
                            ")", i, v, range);
    else if (unique && count[(int64_t)v] > 0)
      why = g_strdup_printf("unique sampling drew class %g twice", v);
    else
      count[(int64_t)v]++;
  }
  if (why == NULL && unique && num_sampled == range) {
    for (int64_t k = 0; k < range && why == NULL; k++)
      if (count[k] != 1) why = g_strdup_printf("class %" G_GINT64_FORMAT " missing", k);
  }
  if (why == NULL && !unique && num_sampled >= 1000) {
    /* Pearson's chi-square over the classes; the bound is the mean plus 6 standard deviations of
     * a chi-square with range - 1 degrees of freedom, far outside what a right sampler gives. */
    double chi2 = 0, df = (double)(range - 1);
    for (int64_t k = 0; k < range; k++) {
      double e = (double)num_sampled * (double)base_probability(c, (double)k);
      chi2 += (count[k] - e) * (count[k] - e) / e;
    }
    if (chi2 > df + 6 * sqrt(2 * df))
      why = g_strdup_printf("chi-square %g over %g degrees of freedom", chi2, df);
  }
  g_free(count);
  if (why != NULL) return why;
  int64_t tries = num_sampled;
  if (unique) {
    /* Solve 1 - (1 - p)^tries = count for tries from the smallest count (the others may have
     * rounded to 1 in float): a whole number at least num_sampled that must explain every other
     * count too. */
    int64_t m = 0;
    for (int64_t i = 1; i < num_sampled; i++)
      if (samp_ec->v[i] < samp_ec->v[m]) m = i;
    float p = base_probability(c, cand->v[m]);
    double t = log1p(-samp_ec->v[m]) / log1p(-(double)p);
    double scaled = (double)(p * (float)num_sampled);
    if (fabs(samp_ec->v[m] - scaled) <= 1e-6 * scaled) t = (double)num_sampled;
    tries = isfinite(t) ? (int64_t)llround(t) : -1;
    if (tries < num_sampled || fabs(t - (double)tries) > 1e-2 * (double)tries)
      return g_strdup_printf("sampled expected count %g of class %g fits no number of tries "
                             "(%g)", samp_ec->v[m], cand->v[m], t);
  }
  return check_counts(c, cand, true_ec, samp_ec, tries);
}

typedef struct sampler_case {
  const char *name;
  int64_t batch, num_true, num_sampled, range_max;
  bool unique;
  const char *error; /* NULL, or the message the kernel must give */
} sampler_case_t;

static void emit_sampler(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  if (!cf_supported(ctx, op, NULL, WEFT_DT_INVALID)) return;
  static const sampler_case_t cases[] = {
      {"statistics_2e4_range50", 4, 1, 20000, 50, false, NULL},
      {"statistics_2e4_range7_num_true3", 2, 3, 20000, 7, false, NULL},
      {"unique_20_of_50", 3, 2, 20, 50, true, NULL},
      {"unique_900_of_1000", 2, 1, 900, 1000, true, NULL},
      {"unique_full_range", 1, 1, 40, 40, true, NULL},
      {"one_sample", 1, 1, 1, 5, false, NULL},
      {"empty_batch", 0, 2, 10, 30, false, NULL},
      {"error_range_too_small", 2, 1, 6, 5, true, "Sampler's range is too small."},
      {"error_num_true_columns", 2, 3, 4, 10, false,
       "true_classes must have num_true columns, expected: 2 was: 3"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const sampler_case_t *sc = &cases[k];
    cf_case_t *c = cf_case_new(op, sc->name, WEFT_DT_INVALID);
    bool wrong_cols = strcmp(sc->name, "error_num_true_columns") == 0;
    int64_t cols = wrong_cols ? 2 : sc->num_true;
    cf_array_t *tc = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){sc->batch, cols});
    /* True classes spread over the range, one past its end included (its count is still the
     * formula's, as in TensorFlow). */
    for (int64_t i = 0; i < tc->n; i++) tc->v[i] = (double)((i * 7 + 3) % (sc->range_max + 1));
    cf_case_input(c, tc);
    c->unknown_shape[0] = wrong_cols; /* the kernel's check, behind the shape function's */
    cf_case_attr_int(c, "num_true", sc->num_true);
    cf_case_attr_int(c, "num_sampled", sc->num_sampled);
    cf_case_attr_bool(c, "unique", sc->unique);
    cf_case_attr_int(c, "range_max", sc->range_max);
    cf_case_attr_int(c, "seed", 17);
    cf_case_attr_int(c, "seed2", 5);
    for (int i = 0; i < 3; i++) cf_case_expect(c, NULL);
    if (sc->error)
      cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, sc->error);
    else
      c->check = check_sampler;
    cf_run_case(ctx, c);
  }
  /* A vector of true classes: the kernel's message behind an unknown shape, then the shape
   * function's. */
  for (int known = 0; known < 2; known++) {
    cf_case_t *c = cf_case_new(op, known ? "error_true_classes_vector_shape_inference"
                                         : "error_true_classes_vector", WEFT_DT_INVALID);
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, 1, (const int64_t[]){3}));
    c->unknown_shape[0] = !known;
    cf_case_attr_int(c, "num_true", 1);
    cf_case_attr_int(c, "num_sampled", 4);
    cf_case_attr_bool(c, "unique", false);
    cf_case_attr_int(c, "range_max", 10);
    for (int i = 0; i < 3; i++) cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                         known ? NULL : "true_classes must be a matrix");
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * ComputeAccidentalHits */

static void hits_case(cf_run_ctx_t *ctx, const char *op, const char *name, int64_t batch,
                      int64_t num_true, const int64_t *tc, int64_t n_sampled,
                      const int64_t *sampled, int64_t n_hits, const int64_t *indices,
                      const int64_t *ids, const char *error) {
  cf_case_t *c = cf_case_new(op, name, WEFT_DT_INVALID);
  cf_array_t *t = cf_array_ints(WEFT_DT_INT64, batch * num_true, tc);
  cf_case_input(c, cf_array_reshape(t, 2, (const int64_t[]){batch, num_true}));
  cf_array_free(t);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, n_sampled, sampled));
  cf_case_attr_int(c, "num_true", error && strstr(error, "num_true") ? num_true + 1 : num_true);
  if (error) {
    c->unknown_shape[0] = c->unknown_shape[1] = true;
    for (int i = 0; i < 3; i++) cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, error);
  } else {
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT32, n_hits, indices));
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, n_hits, ids));
    cf_array_t *w = cf_array_new(WEFT_DT_FLOAT, 1, &n_hits);
    for (int64_t i = 0; i < n_hits; i++) w->v[i] = -FLT_MAX;
    cf_case_expect(c, w);
  }
  cf_run_case(ctx, c);
}

static void emit_accidental_hits(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  if (!cf_supported(ctx, op, NULL, WEFT_DT_INVALID)) return;
  /* 5 was sampled twice: a hit on it names its last position (3), as TensorFlow's map. */
  static const int64_t tc[] = {1, 5, 7, 2, 5, 9};
  static const int64_t sampled[] = {5, 3, 7, 5, 0};
  static const int64_t indices[] = {0, 1, 2}, ids[] = {3, 2, 3};
  hits_case(ctx, op, "hand_3x2", 3, 2, tc, 5, sampled, 3, indices, ids, NULL);
  static const int64_t none[] = {11, 12};
  hits_case(ctx, op, "no_hits", 3, 2, tc, 2, none, 0, NULL, NULL, NULL);
  hits_case(ctx, op, "no_samples", 3, 2, tc, 0, NULL, 0, NULL, NULL, NULL);
  static const int64_t all_true[] = {4, 4, 4, 4};
  static const int64_t four[] = {4};
  static const int64_t all_idx[] = {0, 1, 2, 3}, all_ids[] = {0, 0, 0, 0};
  hits_case(ctx, op, "every_row_hits", 4, 1, all_true, 1, four, 4, all_idx, all_ids, NULL);
  hits_case(ctx, op, "error_num_true", 3, 2, tc, 5, sampled, 0, NULL, NULL,
            "true_candidates must be a batch_size * num_true matrix");
  /* A matrix of sampled candidates. */
  cf_case_t *c = cf_case_new(op, "error_sampled_matrix", WEFT_DT_INVALID);
  cf_array_t *t = cf_array_ints(WEFT_DT_INT64, 6, tc);
  cf_case_input(c, cf_array_reshape(t, 2, (const int64_t[]){3, 2}));
  cf_case_input(c, cf_array_reshape(t, 2, (const int64_t[]){2, 3}));
  cf_array_free(t);
  c->unknown_shape[0] = c->unknown_shape[1] = true;
  cf_case_attr_int(c, "num_true", 2);
  for (int i = 0; i < 3; i++) cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "sampled_candidates must be a vector");
  cf_run_case(ctx, c);
}

const cf_suite_t cf_suites_candidate[] = {
    {"UniformCandidateSampler", cf_dtypes_none, emit_sampler, NULL},
    {"LogUniformCandidateSampler", cf_dtypes_none, emit_sampler, NULL},
    {"ComputeAccidentalHits", cf_dtypes_none, emit_accidental_hits, NULL},
    {NULL, NULL, NULL, NULL},
};
