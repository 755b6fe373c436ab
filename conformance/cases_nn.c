/* cases_nn.c: conformance cases of the neural-network ops: BiasAdd and BiasAddGrad (NHWC and
 * NCHW, ranks 2 to 4), BiasAddV1 (NHWC), Softmax and LogSoftmax (large logits that overflow a
 * naive exp, -inf logits, one class, empty batch), the two softmax cross-entropy losses (both
 * outputs) and L2Loss. */
#include <math.h>
#include <string.h>

#include "reference.h"

static void emit_bias_add(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool grad = strcmp(op, "BiasAddGrad") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[4];
    bool nchw;
  } ba_t;
  static const ba_t cases[] = {
      {"rank2", 2, {5, 7}, false},      {"rank4_nhwc", 4, {2, 3, 4, 5}, false},
      {"rank4_nchw", 4, {2, 5, 3, 4}, true}, {"rank3_nchw", 3, {2, 5, 3}, true},
      {"odd_33x1023", 2, {33, 1023}, false}, {"empty_batch", 2, {0, 4}, false},
      {"one_channel", 3, {4, 6, 1}, false},
  };
  /* BiasAddV1 predates data_format: channels last only. */
  bool v1 = strcmp(op, "BiasAddV1") == 0;
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const ba_t *b = &cases[i];
    if (v1 && b->nchw) continue;
    cf_case_t *c = cf_case_new(op, b->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    double lo = cf_dtype_is_signed(dt) ? -10 : 0;
    cf_array_t *v = cf_gen_uniform(&rng, dt, b->rank, b->dims, lo, 10);
    int64_t channels = b->dims[b->nchw ? 1 : b->rank - 1];
    if (grad) {
      cf_case_expect(c, cf_ref_bias_add_grad(v, b->nchw));
      cf_case_input(c, v);
      if (cf_dtype_is_float(dt)) c->tol.atol += 1e-6 * 10 * (double)(v->n / (channels ? channels : 1));
    } else {
      cf_array_t *bias = cf_gen_uniform(&rng, dt, 1, &channels, lo, 10);
      cf_case_expect(c, cf_ref_bias_add(v, bias, b->nchw));
      cf_case_input(c, v);
      cf_case_input(c, bias);
    }
    if (b->nchw) cf_case_attr_string(c, "data_format", "NCHW");
    cf_run_case(ctx, c);
  }
}

static void emit_softmax(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool log_out = strcmp(op, "LogSoftmax") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    double lo, hi;
  } sm_t;
  static const sm_t cases[] = {
      {"rank2", 2, {4, 10}, -5, 5},
      {"rank1", 1, {7}, -5, 5},
      {"rank3", 3, {2, 3, 17}, -5, 5},
      {"one_class", 2, {5, 1}, -5, 5},
      {"wide_1023", 2, {3, 1023}, -10, 10},
      {"large_logits", 2, {4, 6}, 500, 1000},
      {"very_negative", 2, {4, 6}, -1000, -500},
      {"empty_batch", 2, {0, 5}, -1, 1},
      {"large_1024x1024", 2, {1024, 1024}, -10, 10},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const sm_t *s = &cases[i];
    if (strncmp(s->name, "large_1024", 10) == 0 && dt != WEFT_DT_FLOAT) continue;
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    double hi = s->hi > cf_dtype_max(dt) ? cf_dtype_max(dt) / 2 : s->hi;
    double lo = s->lo < -cf_dtype_max(dt) ? -cf_dtype_max(dt) / 2 : s->lo;
    cf_array_t *x = cf_gen_uniform(&rng, dt, s->rank, s->dims, lo, hi);
    cf_case_expect(c, cf_ref_softmax(x, log_out));
    cf_case_input(c, x);
    c->tol = cf_tol_scale(c->tol, 4);
    if (log_out && cf_dtype_is_float(dt)) c->tol.atol += (dt == WEFT_DT_FLOAT ? 1e-6 : 1e-3) * fmax(fabs(hi), fabs(lo));
    cf_run_case(ctx, c);
  }
  /* -inf logits get probability 0 (log: -inf) without poisoning the row. */
  if (cf_dtype_is_float(dt)) {
    cf_case_t *c = cf_case_new(op, "neg_inf_logit", dt);
    double v[] = {1, -INFINITY, 2, 0.5, -INFINITY, 3};
    int64_t d[2] = {2, 3};
    cf_array_t *flat = cf_array_vec(dt, 6, v);
    cf_array_t *x = cf_array_reshape(flat, 2, d);
    cf_array_free(flat);
    cf_case_expect(c, cf_ref_softmax(x, log_out));
    cf_case_input(c, x);
    c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
}

static void emit_xent(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool sparse = strncmp(op, "Sparse", 6) == 0;
  typedef struct {
    const char *name;
    int64_t b, k;
    double scale;
  } xe_t;
  static const xe_t cases[] = {
      {"4x10", 4, 10, 3}, {"1x1", 1, 1, 1}, {"odd_7x1023", 7, 1023, 5},
      {"large_logits", 3, 5, 300}, {"empty_batch", 0, 4, 1},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const xe_t *x = &cases[i];
    cf_case_t *c = cf_case_new(op, x->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[2] = {x->b, x->k};
    cf_array_t *logits = cf_gen_uniform(&rng, dt, 2, d, -x->scale, x->scale);
    cf_array_t *labels;
    if (sparse) {
      labels = cf_array_new(WEFT_DT_INT32, 1, &x->b);
      for (int64_t r = 0; r < x->b; r++) labels->v[r] = (double)cf_rng_int(&rng, 0, x->k - 1);
    } else {
      /* Rows of a probability distribution. */
      labels = cf_gen_uniform(&rng, dt, 2, d, 0, 1);
      for (int64_t r = 0; r < x->b; r++) {
        double s = 0;
        for (int64_t k = 0; k < x->k; k++) s += labels->v[r * x->k + k];
        for (int64_t k = 0; k < x->k; k++) labels->v[r * x->k + k] /= s > 0 ? s : 1;
      }
      cf_array_round(labels);
    }
    cf_array_t *loss, *backprop;
    cf_ref_softmax_xent(logits, labels, &loss, &backprop);
    cf_case_expect(c, loss);
    cf_case_expect(c, backprop);
    cf_case_input(c, logits);
    cf_case_input(c, labels);
    if (sparse) cf_case_attr_type(c, "Tlabels", WEFT_DT_INT32);
    c->tol = cf_tol_scale(c->tol, 8);
    if (cf_dtype_is_float(dt)) c->tol.atol += 1e-6 * x->scale * (dt == WEFT_DT_FLOAT ? 1 : 1e3);
    cf_run_case(ctx, c);
  }
  if (sparse) {
    /* A label outside [0, classes) is an error the kernel reports. */
    cf_case_t *c = cf_case_new(op, "error_label_out_of_range", dt);
    int64_t d[2] = {2, 3}, two = 2;
    cf_case_input(c, cf_array_new(dt, 2, d));
    double lab[2] = {0, 3};
    cf_case_input(c, cf_array_vec(WEFT_DT_INT32, two, lab));
    cf_case_attr_type(c, "Tlabels", WEFT_DT_INT32);
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    cf_run_case(ctx, c);
  }
}

static void emit_l2loss(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const char *names[] = {"scalar", "n7", "rank3", "empty", "n1023"};
  int ranks[] = {0, 1, 3, 1, 1};
  int64_t dims[][3] = {{0}, {7}, {3, 4, 5}, {0}, {1023}};
  for (int s = 0; s < 5; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = cf_gen_uniform(&rng, dt, ranks[s], dims[s], -3, 3);
    cf_case_expect(c, cf_ref_l2loss(x));
    cf_case_input(c, x);
    c->tol = cf_tol_scale(c->tol, 8);
    cf_run_case(ctx, c);
  }
}

const cf_suite_t cf_suites_nn[] = {
    {"BiasAdd", cf_dtypes_numeric, emit_bias_add, NULL},
    {"BiasAddGrad", cf_dtypes_numeric, emit_bias_add, NULL},
    {"BiasAddV1", cf_dtypes_numeric, emit_bias_add, NULL},
    {"Softmax", cf_dtypes_float, emit_softmax, NULL},
    {"LogSoftmax", cf_dtypes_float, emit_softmax, NULL},
    {"SoftmaxCrossEntropyWithLogits", cf_dtypes_float, emit_xent, NULL},
    {"SparseSoftmaxCrossEntropyWithLogits", cf_dtypes_float, emit_xent, NULL},
    {"L2Loss", cf_dtypes_float, emit_l2loss, NULL},
    {NULL, NULL, NULL, NULL},
};
