/* cases_nn_extra.c: conformance cases of the fused recurrent cells (LSTMBlockCell, BlockLSTM,
 * BlockLSTMV2: every output, peepholes, cell_clip, forget_bias, steps past seq_len_max;
 * GRUBlockCell), the fake-quantization ops and their gradients (nudged ranges, 4 to 16 bits,
 * narrow_range, min == max == 0, per channel), InTopK / InTopKV2 (ties, non-finite predictions,
 * out-of-range targets) and the random ops RandomGamma, RandomPoisson(V2), RandomShuffle and
 * Multinomial (checked by statistics and by being a permutation). Each op also gets its error
 * cases. */
#include <math.h>
#include <string.h>

#include "reference.h"

/* ---------------------------------------------------------------------------------------------
 * LSTM */

typedef struct lstm_case {
  const char *name;
  int64_t T, B, I, C, seq_len_max;
  double forget_bias, cell_clip;
  bool peephole;
  const char *error; /* NULL, or the expected message: w gets a wrong first dimension */
} lstm_case_t;

static void emit_lstm(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool block = strcmp(op, "LSTMBlockCell") != 0, v2 = strcmp(op, "BlockLSTMV2") == 0;
  static const lstm_case_t cases[] = {
      {"basic", 3, 2, 4, 5, 3, 1.0, 3.0, false, NULL},
      {"peephole_clip", 4, 3, 3, 4, 4, 1.0, 0.3, true, NULL},
      {"no_clip_forget_bias_0", 2, 2, 5, 3, 2, 0.0, -1.0, false, NULL},
      {"batch1_wide", 2, 1, 7, 16, 2, 2.0, 3.0, true, NULL},
      {"seq_len_max_short", 4, 2, 3, 3, 2, 1.0, 3.0, false, NULL},
      {"seq_len_max_0", 3, 2, 3, 3, 0, 1.0, 3.0, false, NULL},
      {"empty_batch", 2, 0, 3, 4, 2, 1.0, 3.0, false, NULL},
      {"error_w_dim0", 2, 2, 3, 4, 2, 1.0, 3.0, false, "w.dim_size(0) != input_size + cell_size"},
      {"error_seq_len_max", 2, 2, 3, 4, 5, 1.0, 3.0, false, "seq_len_max"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const lstm_case_t *lc = &cases[k];
    if (!block && (lc->seq_len_max != lc->T || strcmp(lc->name, "error_seq_len_max") == 0))
      continue;
    cf_case_t *c = cf_case_new(op, lc->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t xd[3] = {lc->T, lc->B, lc->I}, sd[2] = {lc->B, lc->C};
    int64_t wd[2] = {lc->I + lc->C + (lc->error && strstr(lc->error, "w.") ? 1 : 0), 4 * lc->C};
    int64_t c4 = 4 * lc->C;
    cf_array_t *x = cf_gen_uniform(&rng, dt, block ? 3 : 2, block ? xd : xd + 1, -1, 1);
    cf_array_t *cs = cf_gen_uniform(&rng, dt, 2, sd, -1, 1);
    cf_array_t *h = cf_gen_uniform(&rng, dt, 2, sd, -1, 1);
    cf_array_t *w = cf_gen_uniform(&rng, dt, 2, wd, -0.8, 0.8);
    cf_array_t *wci = cf_gen_uniform(&rng, dt, 1, &lc->C, -0.5, 0.5);
    cf_array_t *wcf = cf_gen_uniform(&rng, dt, 1, &lc->C, -0.5, 0.5);
    cf_array_t *wco = cf_gen_uniform(&rng, dt, 1, &lc->C, -0.5, 0.5);
    cf_array_t *b = cf_gen_uniform(&rng, dt, 1, &c4, -0.5, 0.5);
    if (lc->error != NULL) {
      cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, lc->error);
    } else {
      cf_lstm_opts_t o = {v2 ? 0.0 : lc->forget_bias, lc->cell_clip, lc->peephole, v2,
                          lc->seq_len_max};
      cf_array_t *out[7];
      cf_ref_lstm(x, cs, h, w, wci, wcf, wco, b, &o, out);
      for (int i = 0; i < 7; i++) cf_case_expect(c, out[i]);
      c->tol = cf_tol_scale(c->tol, dt == WEFT_DT_FLOAT ? 50 : 4);
    }
    if (block) cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT64, (double)lc->seq_len_max));
    cf_case_input(c, x);
    cf_case_input(c, cs);
    cf_case_input(c, h);
    cf_case_input(c, w);
    cf_case_input(c, wci);
    cf_case_input(c, wcf);
    cf_case_input(c, wco);
    cf_case_input(c, b);
    if (!v2) cf_case_attr_float(c, "forget_bias", lc->forget_bias);
    cf_case_attr_float(c, "cell_clip", lc->cell_clip);
    cf_case_attr_bool(c, "use_peephole", lc->peephole);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * GRUBlockCell */

static void emit_gru(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int64_t B, I, C;
    const char *error; /* b_c gets a wrong size */
  } gru_case_t;
  static const gru_case_t cases[] = {
      {"basic", 3, 4, 5, NULL},          {"batch1", 1, 5, 3, NULL},
      {"wide_cell", 2, 3, 33, NULL},     {"empty_batch", 0, 3, 4, NULL},
      {"error_b_c", 2, 3, 4, "b_c.dim_size(0) != cell_size"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const gru_case_t *gc = &cases[k];
    cf_case_t *c = cf_case_new(op, gc->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t xd[2] = {gc->B, gc->I}, hd[2] = {gc->B, gc->C};
    int64_t rud[2] = {gc->I + gc->C, 2 * gc->C}, cd[2] = {gc->I + gc->C, gc->C};
    int64_t c2 = 2 * gc->C, cb = gc->C + (gc->error ? 1 : 0);
    cf_array_t *x = cf_gen_uniform(&rng, dt, 2, xd, -1, 1);
    cf_array_t *h = cf_gen_uniform(&rng, dt, 2, hd, -1, 1);
    cf_array_t *wru = cf_gen_uniform(&rng, dt, 2, rud, -0.8, 0.8);
    cf_array_t *wc = cf_gen_uniform(&rng, dt, 2, cd, -0.8, 0.8);
    cf_array_t *bru = cf_gen_uniform(&rng, dt, 1, &c2, -0.5, 0.5);
    cf_array_t *bc = cf_gen_uniform(&rng, dt, 1, &cb, -0.5, 0.5);
    if (gc->error != NULL) {
      cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, gc->error);
    } else {
      cf_array_t *out[4];
      cf_ref_gru(x, h, wru, wc, bru, bc, out);
      for (int i = 0; i < 4; i++) cf_case_expect(c, out[i]);
      c->tol = cf_tol_scale(c->tol, 50);
    }
    cf_case_input(c, x);
    cf_case_input(c, h);
    cf_case_input(c, wru);
    cf_case_input(c, wc);
    cf_case_input(c, bru);
    cf_case_input(c, bc);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Fake quantization */

typedef struct fq_case {
  const char *name;
  int rank;
  int64_t dims[3];
  double min, max; /* per channel: channel ch uses min + 0.3 ch, max + 0.5 ch */
  int num_bits;
  bool narrow;
  const char *error;
} fq_case_t;

static void emit_fake_quant(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  if (!cf_supported(ctx, op, NULL, WEFT_DT_INVALID)) return;
  bool grad = strstr(op, "Gradient") != NULL, args = strstr(op, "Args") != NULL;
  bool per_channel = strstr(op, "PerChannel") != NULL;
  static const fq_case_t cases[] = {
      {"default_8bit", 2, {4, 6}, -6, 6, 8, false, NULL},
      {"range_0_2_8bit", 2, {5, 4}, 0, 2, 8, false, NULL},
      {"range_1_5_4bit_narrow", 1, {40}, 1, 5, 4, true, NULL},
      {"nudged_zero_point", 3, {2, 3, 5}, -0.1, 1.3, 8, false, NULL},
      {"negative_range_16bit", 2, {3, 8}, -3.7, -0.4, 16, false, NULL},
      {"narrow_2bit", 1, {17}, -1, 1, 2, true, NULL},
      {"min_max_zero", 2, {3, 4}, 0, 0, 8, false, NULL},
      {"scalar", 0, {0}, -1, 1, 8, false, NULL},
      {"empty", 2, {0, 3}, -1, 1, 8, false, NULL},
      {"error_num_bits_1", 1, {4}, -1, 1, 1, false, "num_bits must be between 2 and 16"},
      {"error_num_bits_17", 1, {4}, -1, 1, 17, false, "num_bits must be between 2 and 16"},
      {"error_min_not_below_max", 1, {4}, 1, 1, 8, false, "min has to be smaller than max"},
      {"error_min_size", 2, {3, 4}, -1, 1, 8, false, "min has incorrect size"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const fq_case_t *fc = &cases[k];
    bool min_size_err = strcmp(fc->name, "error_min_size") == 0;
    if (args && (fc->min == 0 && fc->max == 0)) continue; /* Args requires min < max */
    if (!args && strcmp(fc->name, "error_min_not_below_max") == 0) continue;
    if (!per_channel && min_size_err) continue;
    if (per_channel && fc->rank == 0) continue;
    cf_case_t *c = cf_case_new(op, fc->name, WEFT_DT_FLOAT);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    /* Inputs reach past both ends of the range so that clamping shows. */
    double span = fc->max - fc->min + 1;
    cf_array_t *x = cf_gen_uniform(&rng, WEFT_DT_FLOAT, fc->rank, fc->dims, fc->min - span / 3,
                                   fc->max + span / 3);
    cf_array_t *g = grad ? cf_gen_uniform(&rng, WEFT_DT_FLOAT, fc->rank, fc->dims, -1, 1) : NULL;
    int64_t depth = per_channel ? fc->dims[fc->rank - 1] : 1;
    double mins[64], maxs[64]; /* depth <= 40 in the table above */
    for (int64_t ch = 0; ch < depth; ch++) {
      bool zero = fc->min == 0 && fc->max == 0;
      mins[ch] = (double)(float)(fc->min + (zero ? 0 : 0.3 * (double)ch));
      maxs[ch] = (double)(float)(fc->max + (zero ? 0 : 0.5 * (double)ch));
    }
    if (fc->error != NULL) {
      cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, fc->error);
    } else {
      cf_array_t *out[3];
      cf_ref_fake_quant(x, g, mins, maxs, per_channel, fc->num_bits, fc->narrow, args, out);
      cf_case_expect(c, out[0]);
      if (grad && !args) {
        cf_case_expect(c, out[1]);
        cf_case_expect(c, out[2]);
        c->tol.atol += 1e-5 * (double)(x->n + 1);
      } else {
        cf_array_free(out[1]);
        cf_array_free(out[2]);
      }
    }
    if (g != NULL) cf_case_input(c, g);
    cf_case_input(c, x);
    if (args) {
      cf_case_attr_float(c, "min", fc->min);
      cf_case_attr_float(c, "max", fc->max);
    } else if (per_channel) {
      int64_t n = depth + (min_size_err ? 1 : 0);
      double mv[65];
      for (int64_t i = 0; i < n; i++) mv[i] = i < depth ? mins[i] : -1;
      int imin = cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, n, mv));
      cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, depth, maxs));
      /* Unknown at graph time, so that the kernel's own check is the one that fires. */
      if (min_size_err) c->unknown_shape[imin] = true;
    } else {
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, mins[0]));
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, maxs[0]));
    }
    cf_case_attr_int(c, "num_bits", fc->num_bits);
    cf_case_attr_bool(c, "narrow_range", fc->narrow);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * InTopK, InTopKV2 */

static void emit_in_top_k(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v2 = strcmp(op, "InTopKV2") == 0;
  typedef struct {
    const char *name;
    int64_t B, C, k;
    int special; /* 1: ties; 2: NaN and inf; 3: out-of-range targets; 4: error rank */
  } tk_case_t;
  static const tk_case_t cases[] = {
      {"k1", 5, 7, 1, 0},          {"k3", 6, 10, 3, 0},       {"k0", 4, 5, 0, 0},
      {"k_all", 4, 5, 5, 0},       {"ties", 5, 6, 2, 1},      {"non_finite", 6, 4, 2, 2},
      {"target_out_of_range", 4, 5, 2, 3}, {"empty_batch", 0, 5, 1, 0},
      {"error_predictions_rank", 3, 4, 1, 4},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const tk_case_t *tc = &cases[i];
    cf_case_t *c = cf_case_new(op, tc->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t pd[2] = {tc->B, tc->C};
    cf_array_t *p = cf_gen_uniform(&rng, WEFT_DT_FLOAT, 2, pd, -3, 3);
    if (tc->special == 1)
      for (int64_t e = 0; e < p->n; e++) p->v[e] = (double)cf_rng_int(&rng, 0, 2);
    if (tc->special == 2) {
      p->v[1] = NAN;
      p->v[tc->C + 2] = INFINITY;
      p->v[2 * tc->C] = -INFINITY;
    }
    cf_array_t *t = cf_array_new(dt, 1, &tc->B);
    for (int64_t r = 0; r < tc->B; r++) t->v[r] = (double)cf_rng_int(&rng, 0, tc->C - 1);
    if (tc->special == 3) {
      t->v[0] = -1;
      t->v[1] = (double)tc->C;
    }
    if (tc->special == 4) {
      cf_array_t *p3 = cf_array_reshape(p, 3, (int64_t[]){1, tc->B, tc->C});
      cf_array_free(p);
      p = p3;
      cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    } else {
      cf_case_expect(c, cf_ref_in_top_k(p, t, tc->k));
    }
    cf_case_input(c, p);
    cf_case_input(c, t);
    if (v2)
      cf_case_const_input(c, cf_array_scalar(dt, (double)tc->k));
    else
      cf_case_attr_int(c, "k", tc->k);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * RandomGamma, RandomPoisson(V2): mean and variance of 10^5 samples per parameter (both equal
 * alpha for Gamma(alpha, 1) and rate for Poisson); RandomShuffle: a permutation of the rows. */

static char *check_param_random(const cf_case_t *c, cf_array_t *const *outs, int n) {
  if (n < 1 || outs[0] == NULL) return g_strdup("no output");
  const cf_array_t *y = outs[0], *param = c->inputs[1];
  bool poisson = strstr(c->op, "Poisson") != NULL;
  if (y->rank != 2 || y->dims[0] != 20000 || y->dims[1] != param->n)
    return g_strdup("output shape is not [20000, params]");
  for (int64_t p = 0; p < param->n; p++) {
    double a = param->v[p], sum = 0, sum2 = 0;
    for (int64_t s = 0; s < y->dims[0]; s++) {
      double v = y->v[s * param->n + p];
      if (!isfinite(v) || v < 0 || (poisson && v != floor(v)))
        return g_strdup_printf("sample %g for parameter %g", v, a);
      sum += v;
      sum2 += v * v;
    }
    double m = sum / (double)y->dims[0], var = sum2 / (double)y->dims[0] - m * m;
    double se = sqrt(a / (double)y->dims[0]);
    /* half rounds each sample to 11 bits: allow its relative error on the mean too. */
    double slack = c->dtype == WEFT_DT_HALF ? 2e-3 * a : 0;
    if (fabs(m - a) > 5 * se + slack)
      return g_strdup_printf("mean %g for parameter %g", m, a);
    if (fabs(var - a) > 0.06 * a + 0.01)
      return g_strdup_printf("variance %g for parameter %g", var, a);
  }
  return NULL;
}

static void emit_param_random(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  bool gamma = strcmp(op, "RandomGamma") == 0;
  const char *attr = gamma ? "T" : "dtype";
  if (!cf_supported(ctx, op, attr, dt)) return;
  bool v2 = strcmp(op, "RandomPoissonV2") == 0;
  cf_case_t *c = cf_case_new(op, "statistics_2e4", dt);
  int64_t shape[1] = {20000};
  cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 1, shape));
  static const double gamma_a[] = {0.5, 1.0, 2.5, 9.0}, poisson_r[] = {0.5, 3.0, 9.5, 30.0};
  weft_dtype_t pdt = v2 ? WEFT_DT_DOUBLE : dt;
  cf_case_input(c, cf_array_vec(pdt, 4, gamma ? gamma_a : poisson_r));
  if (v2) cf_case_attr_type(c, "R", pdt);
  cf_case_attr_type(c, attr, dt);
  cf_case_attr_int(c, "seed", 5);
  cf_case_attr_int(c, "seed2", 3);
  cf_case_expect(c, NULL);
  c->check = check_param_random;
  cf_run_case(ctx, c);
  /* An empty shape gives an empty output of shape [0, params]. */
  c = cf_case_new(op, "empty_shape", dt);
  int64_t zero = 0, two = 2;
  cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 1, &zero));
  cf_case_input(c, cf_array_vec(pdt, 2, gamma_a));
  if (v2) cf_case_attr_type(c, "R", pdt);
  cf_case_attr_type(c, attr, dt);
  cf_case_expect(c, cf_array_new(dt, 2, (int64_t[]){0, two}));
  cf_run_case(ctx, c);
  /* A negative dimension in shape is an error. */
  c = cf_case_new(op, "error_negative_shape", dt);
  int64_t neg = -2;
  cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 1, &neg));
  cf_case_input(c, cf_array_vec(pdt, 1, gamma_a));
  if (v2) cf_case_attr_type(c, "R", pdt);
  cf_case_attr_type(c, attr, dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

static char *check_shuffle(const cf_case_t *c, cf_array_t *const *outs, int n) {
  if (n < 1 || outs[0] == NULL) return g_strdup("no output");
  const cf_array_t *x = c->inputs[0], *y = outs[0];
  if (y->n != x->n || y->rank != x->rank) return g_strdup("output shape differs from input");
  int64_t rows = x->rank == 0 ? 1 : x->dims[0], row = rows ? x->n / rows : 0;
  bool *used = g_new0(bool, rows + 1);
  int64_t moved = 0;
  char *why = NULL;
  for (int64_t r = 0; r < rows && why == NULL; r++) {
    /* Input rows start with their row number (CF_GEN_ARANGE), so a row names its source. */
    int64_t src = row ? (int64_t)y->v[r * row] / row : 0;
    if (src < 0 || src >= rows || used[src]) {
      why = g_strdup_printf("output row %" G_GINT64_FORMAT " is not a distinct input row", r);
      break;
    }
    used[src] = true;
    moved += src != r;
    for (int64_t e = 0; e < row; e++)
      if (y->v[r * row + e] != x->v[src * row + e]) {
        why = g_strdup_printf("output row %" G_GINT64_FORMAT " mixes input rows", r);
        break;
      }
  }
  g_free(used);
  if (why == NULL && rows >= 100 && moved < rows / 2)
    why = g_strdup_printf("only %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " rows moved", moved,
                          rows);
  return why;
}

static void emit_shuffle(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
  } sh_case_t;
  static const sh_case_t cases[] = {
      {"rows_1000", 1, {1000}}, {"rank3", 3, {120, 2, 3}}, {"one_row", 2, {1, 4}},
      {"scalar", 0, {0}},       {"empty", 2, {0, 3}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const sh_case_t *sc = &cases[i];
    /* Rows are told apart by their values: skip a size whose arange the dtype cannot hold. */
    if ((double)cf_num_elements(sc->rank, sc->dims) > cf_dtype_max(dt)) continue;
    cf_case_t *c = cf_case_new(op, sc->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = cf_gen_array(&rng, dt, sc->rank, sc->dims, (cf_gen_t){CF_GEN_ARANGE, 0, 0});
    cf_case_input(c, x);
    cf_case_attr_int(c, "seed", 9);
    cf_case_attr_int(c, "seed2", 4);
    cf_case_expect(c, NULL);
    c->check = check_shuffle;
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Multinomial: every sample a class id in range, never one whose logit is -inf, and each row's
 * class frequencies within 5 standard errors of softmax(row), computed here in double. */

static char *check_multinomial(const cf_case_t *c, cf_array_t *const *outs, int n) {
  if (n < 1 || outs[0] == NULL) return g_strdup("no output");
  const cf_array_t *y = outs[0], *logits = c->inputs[0];
  const int64_t batch = logits->dims[0], classes = logits->dims[1];
  const int64_t samples = (int64_t)c->inputs[1]->v[0];
  if (y->rank != 2 || y->dims[0] != batch || y->dims[1] != samples)
    return g_strdup("output shape is not [batch, num_samples]");
  double *count = g_new0(double, classes);
  char *why = NULL;
  for (int64_t b = 0; b < batch && why == NULL; b++) {
    memset(count, 0, sizeof(double) * (size_t)classes);
    double max = -INFINITY, total = 0;
    for (int64_t k = 0; k < classes; k++)
      if (isfinite(logits->v[b * classes + k]) && logits->v[b * classes + k] > max)
        max = logits->v[b * classes + k];
    for (int64_t k = 0; k < classes; k++)
      if (isfinite(logits->v[b * classes + k])) total += exp(logits->v[b * classes + k] - max);
    for (int64_t s = 0; s < samples; s++) {
      double v = y->v[b * samples + s];
      if (v < 0 || v >= (double)classes || v != floor(v)) {
        why = g_strdup_printf("row %lld: sample %g out of range", (long long)b, v);
        break;
      }
      count[(int64_t)v]++;
    }
    for (int64_t k = 0; k < classes && why == NULL; k++) {
      double l = logits->v[b * classes + k];
      double p = isfinite(l) ? exp(l - max) / total : 0;
      if (p == 0 && count[k] > 0) {
        why = g_strdup_printf("row %lld: class %lld (logit %g) drawn %g times", (long long)b,
                              (long long)k, l, count[k]);
        break;
      }
      double f = count[k] / (double)samples, se = sqrt(p * (1 - p) / (double)samples);
      if (fabs(f - p) > 5 * se + 1e-3)
        why = g_strdup_printf("row %lld: class %lld frequency %g, probability %g", (long long)b,
                              (long long)k, f, p);
    }
  }
  g_free(count);
  return why;
}

static void multinomial_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                             const char *name, int64_t batch, int64_t classes,
                             const double *logits, int64_t samples, weft_dtype_t out_dt,
                             const char *error) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_array_t *l = cf_array_new(dt, 2, (const int64_t[]){batch, classes});
  for (int64_t i = 0; i < l->n; i++) l->v[i] = logits[i];
  cf_case_input(c, l);
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, (double)samples));
  cf_case_attr_int(c, "seed", 21);
  cf_case_attr_int(c, "seed2", 8);
  if (out_dt != WEFT_DT_INVALID) cf_case_attr_type(c, "output_dtype", out_dt);
  cf_case_expect(c, NULL);
  if (error)
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, error);
  else
    c->check = check_multinomial;
  cf_run_case(ctx, c);
}

static void emit_multinomial(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const double rows[] = {0, 1, 2, 3,  /* softmax: 0.03 .. 0.64 */
                                -INFINITY, 0, -INFINITY, 0.5,
                                5, 5, 5, 5};
  multinomial_case(ctx, op, dt, "statistics_3x4_2e4", 3, 4, rows, 20000, WEFT_DT_INVALID, NULL);
  multinomial_case(ctx, op, dt, "int32_output", 3, 4, rows, 5000, WEFT_DT_INT32, NULL);
  static const double big[] = {1000, 1000, -1000, 60000};
  multinomial_case(ctx, op, dt, "large_logits_no_overflow", 2, 2, big, 4000, WEFT_DT_INT64,
                   NULL);
  static const double one[] = {-3, 7};
  multinomial_case(ctx, op, dt, "one_class", 2, 1, one, 100, WEFT_DT_INVALID, NULL);
  multinomial_case(ctx, op, dt, "zero_samples", 3, 4, rows, 0, WEFT_DT_INVALID, NULL);
  multinomial_case(ctx, op, dt, "empty_batch", 0, 4, rows, 10, WEFT_DT_INVALID, NULL);
  multinomial_case(ctx, op, dt, "error_negative_samples", 3, 4, rows, -1, WEFT_DT_INVALID,
                   "num_samples should be nonnegative, got -1");
  multinomial_case(ctx, op, dt, "error_no_classes", 2, 0, rows, 3, WEFT_DT_INVALID,
                   "num_classes should be positive, got 0");
  /* Rank 1 logits: the kernel's check behind an unknown shape, then the shape function's. */
  for (int known = 0; known < 2; known++) {
    cf_case_t *c = cf_case_new(op, known ? "error_logits_vector_shape_inference"
                                         : "error_logits_vector", dt);
    cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){3}));
    cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 2));
    c->unknown_shape[0] = c->unknown_shape[1] = !known;
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                         known ? NULL : "logits should be a matrix, got shape [3]");
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t lstm_types[] = {WEFT_DT_FLOAT, WEFT_DT_HALF, WEFT_DT_INVALID};
static const weft_dtype_t f32_only[] = {WEFT_DT_FLOAT, WEFT_DT_INVALID};
static const weft_dtype_t index_types[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t gamma_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                           WEFT_DT_INVALID};
static const weft_dtype_t poisson_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t shuffle_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                             WEFT_DT_INT64, WEFT_DT_UINT8, WEFT_DT_HALF,
                                             WEFT_DT_INVALID};

const cf_suite_t cf_suites_nn_extra[] = {
    {"LSTMBlockCell", lstm_types, emit_lstm, "T"},
    {"BlockLSTM", lstm_types, emit_lstm, "T"},
    {"BlockLSTMV2", lstm_types, emit_lstm, "T"},
    {"GRUBlockCell", f32_only, emit_gru, "T"},
    {"FakeQuantWithMinMaxArgs", cf_dtypes_none, emit_fake_quant, NULL},
    {"FakeQuantWithMinMaxArgsGradient", cf_dtypes_none, emit_fake_quant, NULL},
    {"FakeQuantWithMinMaxVars", cf_dtypes_none, emit_fake_quant, NULL},
    {"FakeQuantWithMinMaxVarsGradient", cf_dtypes_none, emit_fake_quant, NULL},
    {"FakeQuantWithMinMaxVarsPerChannel", cf_dtypes_none, emit_fake_quant, NULL},
    {"FakeQuantWithMinMaxVarsPerChannelGradient", cf_dtypes_none, emit_fake_quant, NULL},
    {"InTopK", index_types, emit_in_top_k, "T"},
    {"InTopKV2", index_types, emit_in_top_k, "T"},
    {"RandomGamma", gamma_types, emit_param_random, "T"},
    {"RandomPoisson", gamma_types, emit_param_random, "dtype"},
    {"RandomPoissonV2", poisson_types, emit_param_random, "dtype"},
    {"RandomShuffle", shuffle_types, emit_shuffle, "T"},
    {"Multinomial", cf_dtypes_float, emit_multinomial, "T"},
    {NULL, NULL, NULL, NULL},
};
