/* cases_state.c: conformance cases of the stateful ops: variables (VariableV2, Assign,
 * AssignAdd, AssignSub, IsVariableInitialized), the training ops that update variables in place
 * (ApplyGradientDescent, ApplyMomentum with and without Nesterov, ApplyAdagrad, ApplyAdam,
 * ApplyRMSProp, ApplyProximalAdagrad with and without l1: both the op's output and the
 * variables' values afterwards are checked against the update rules computed in double), the
 * synchronous-replicas gradient accumulator (WeftAccumulatorApply, WeftAccumulatorTake: the
 * output and the accumulator's sum, count and step afterwards), and the random ops, checked by
 * their statistics (range, mean, spread) over 10^5 draws since their values are not reproducible
 * across backends. */
#include <math.h>
#include <string.h>

#include "reference.h"

static cf_array_t *gen(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims, double lo,
                       double hi) {
  return cf_gen_uniform(rng, dt, rank, dims, lo, hi);
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

static void emit_assign(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool add = strcmp(op, "AssignAdd") == 0, sub = strcmp(op, "AssignSub") == 0;
  const char *names[] = {"rank2", "scalar", "n1023"};
  int ranks[] = {2, 0, 1};
  int64_t dims[][2] = {{3, 4}, {0}, {1023}};
  for (int s = 0; s < 3; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    bool is_num = dt != WEFT_DT_BOOL && dt != WEFT_DT_STRING;
    cf_gen_t g = {is_num ? CF_GEN_UNIFORM : (dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE),
                  cf_dtype_is_signed(dt) ? -20 : 0, 20};
    cf_array_t *var = cf_gen_array(&rng, dt, ranks[s], dims[s], g);
    cf_array_t *value = cf_gen_array(&rng, dt, ranks[s], dims[s], g);
    cf_array_t *after = cf_array_copy(value);
    if (add || sub) {
      for (int64_t i = 0; i < after->n; i++)
        after->v[i] = add ? var->v[i] + value->v[i] : var->v[i] - value->v[i];
      cf_array_round(after);
    }
    cf_case_variable_input(c, var, cf_array_copy(after));
    cf_case_input(c, value);
    cf_case_expect(c, after);
    cf_run_case(ctx, c);
  }
}

static void emit_is_initialized(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  cf_case_t *c = cf_case_new(op, "initialized", dt);
  int64_t d[2] = {2, 3};
  cf_case_variable_input(c, cf_array_new(dt, 2, d), NULL);
  cf_case_expect(c, cf_array_scalar(WEFT_DT_BOOL, 1));
  cf_run_case(ctx, c);
}

static void emit_variable(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  /* Reading a variable nobody assigned is refused, naming it. */
  cf_case_t *c = cf_case_new(op, "read_uninitialized", dt);
  int64_t d[2] = {2, 3};
  cf_case_attr_shape(c, "shape", 2, d);
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_FAILED_PRECONDITION, NULL);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * Training ops */

/* PROX_ADAGRAD: ApplyProximalAdagrad with l1 > 0 (the soft threshold); PROX_ADAGRAD_L2: l1 = 0,
 * the plain l2 shrink (TensorFlow's kernel takes another branch). */
typedef enum {
  GD,
  MOMENTUM,
  NESTEROV,
  ADAGRAD,
  ADAM,
  ADAM_NESTEROV,
  RMSPROP,
  PROX_ADAGRAD,
  PROX_ADAGRAD_L2
} rule_t;

static void training_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                          rule_t rule, int rank, const int64_t *dims) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *var = gen(&rng, dt, rank, dims, -2, 2);
  cf_array_t *grad = gen(&rng, dt, rank, dims, -1, 1);
  cf_array_t *s1 = gen(&rng, dt, rank, dims, 0.1, 1); /* accum / m / ms */
  cf_array_t *s2 = gen(&rng, dt, rank, dims, 0.1, 1); /* v / mom */
  cf_array_t *nv = cf_array_copy(var), *n1 = cf_array_copy(s1), *n2 = cf_array_copy(s2);
  const double lr = cf_round_to_dtype(dt, 0.1), mom = cf_round_to_dtype(dt, 0.9);
  const double b1 = cf_round_to_dtype(dt, 0.9), b2 = cf_round_to_dtype(dt, 0.999);
  const double b1p = cf_round_to_dtype(dt, 0.81), b2p = cf_round_to_dtype(dt, 0.998);
  const double eps = cf_round_to_dtype(dt, 1e-7), rho = cf_round_to_dtype(dt, 0.95);
  /* l1 large enough that some elements are thresholded to exactly zero. */
  const double l1 = rule == PROX_ADAGRAD ? cf_round_to_dtype(dt, 3.0) : 0;
  const double l2 = cf_round_to_dtype(dt, 0.5);
  for (int64_t i = 0; i < var->n; i++) {
    double g = grad->v[i];
    switch (rule) {
      case GD: nv->v[i] = var->v[i] - lr * g; break;
      case MOMENTUM:
      case NESTEROV:
        n1->v[i] = s1->v[i] * mom + g;
        nv->v[i] = rule == MOMENTUM ? var->v[i] - lr * n1->v[i]
                                    : var->v[i] - (g * lr + n1->v[i] * mom * lr);
        break;
      case ADAGRAD:
        n1->v[i] = s1->v[i] + g * g;
        nv->v[i] = var->v[i] - lr * g / sqrt(n1->v[i]);
        break;
      case ADAM:
      case ADAM_NESTEROV: {
        double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
        n1->v[i] = s1->v[i] + (g - s1->v[i]) * (1 - b1);
        n2->v[i] = s2->v[i] + (g * g - s2->v[i]) * (1 - b2);
        double m = rule == ADAM ? n1->v[i] : n1->v[i] * b1 + (1 - b1) * g;
        nv->v[i] = var->v[i] - lr_t * m / (sqrt(n2->v[i]) + eps);
        break;
      }
      case RMSPROP:
        n1->v[i] = s1->v[i] * rho + g * g * (1 - rho);
        n2->v[i] = s2->v[i] * mom + lr * g / sqrt(n1->v[i] + eps);
        nv->v[i] = var->v[i] - n2->v[i];
        break;
      case PROX_ADAGRAD:
      case PROX_ADAGRAD_L2: {
        n1->v[i] = s1->v[i] + g * g;
        double rate = lr / sqrt(n1->v[i]), prox = var->v[i] - rate * g;
        double mag = fabs(prox) - rate * l1;
        nv->v[i] = (mag > 0 ? copysign(mag, prox) : 0.0) / (1 + rate * l2);
        break;
      }
    }
  }
  cf_array_round(nv);
  cf_array_round(n1);
  cf_array_round(n2);
  bool has_s1 = rule != GD, has_s2 = rule == ADAM || rule == ADAM_NESTEROV || rule == RMSPROP;
  cf_case_variable_input(c, var, cf_array_copy(nv));
  if (has_s1) cf_case_variable_input(c, s1, n1); else { cf_array_free(s1); cf_array_free(n1); }
  if (has_s2) cf_case_variable_input(c, s2, n2); else { cf_array_free(s2); cf_array_free(n2); }
  switch (rule) {
    case GD:
      cf_case_input(c, cf_array_scalar(dt, lr));
      cf_case_input(c, grad);
      break;
    case MOMENTUM:
    case NESTEROV:
      cf_case_input(c, cf_array_scalar(dt, lr));
      cf_case_input(c, grad);
      cf_case_input(c, cf_array_scalar(dt, mom));
      if (rule == NESTEROV) cf_case_attr_bool(c, "use_nesterov", true);
      break;
    case ADAGRAD:
      cf_case_input(c, cf_array_scalar(dt, lr));
      cf_case_input(c, grad);
      break;
    case PROX_ADAGRAD:
    case PROX_ADAGRAD_L2:
      cf_case_input(c, cf_array_scalar(dt, lr));
      cf_case_input(c, cf_array_scalar(dt, l1));
      cf_case_input(c, cf_array_scalar(dt, l2));
      cf_case_input(c, grad);
      break;
    case ADAM:
    case ADAM_NESTEROV:
      cf_case_input(c, cf_array_scalar(dt, b1p));
      cf_case_input(c, cf_array_scalar(dt, b2p));
      cf_case_input(c, cf_array_scalar(dt, lr));
      cf_case_input(c, cf_array_scalar(dt, b1));
      cf_case_input(c, cf_array_scalar(dt, b2));
      cf_case_input(c, cf_array_scalar(dt, eps));
      cf_case_input(c, grad);
      if (rule == ADAM_NESTEROV) cf_case_attr_bool(c, "use_nesterov", true);
      break;
    case RMSPROP:
      cf_case_input(c, cf_array_scalar(dt, lr));
      cf_case_input(c, cf_array_scalar(dt, rho));
      cf_case_input(c, cf_array_scalar(dt, mom));
      cf_case_input(c, cf_array_scalar(dt, eps));
      cf_case_input(c, grad);
      break;
  }
  cf_case_expect(c, nv);
  c->tol = cf_tol_scale(c->tol, 8);
  cf_run_case(ctx, c);
}

static void emit_training(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  rule_t rule = GD, alt = GD;
  bool has_alt = false;
  if (strcmp(op, "ApplyMomentum") == 0) {
    rule = MOMENTUM;
    alt = NESTEROV;
    has_alt = true;
  } else if (strcmp(op, "ApplyAdagrad") == 0) {
    rule = ADAGRAD;
  } else if (strcmp(op, "ApplyAdam") == 0) {
    rule = ADAM;
    alt = ADAM_NESTEROV;
    has_alt = true;
  } else if (strcmp(op, "ApplyRMSProp") == 0) {
    rule = RMSPROP;
  } else if (strcmp(op, "ApplyProximalAdagrad") == 0) {
    rule = PROX_ADAGRAD;
    alt = PROX_ADAGRAD_L2;
    has_alt = true;
  }
  int64_t d2[2] = {3, 5}, d1 = 1023;
  training_case(ctx, op, dt, "rank2", rule, 2, d2);
  training_case(ctx, op, dt, "n1023", rule, 1, &d1);
  training_case(ctx, op, dt, "scalar", rule, 0, NULL);
  if (has_alt)
    training_case(ctx, op, dt, rule == PROX_ADAGRAD ? "l1_zero" : "nesterov", alt, 2, d2);
}

/* ---------------------------------------------------------------------------------------------
 * The synchronous-replicas accumulator (docs/training.md, "Synchronous training"): acc sums the
 * gradients of the accumulator's current step, count says how many, step is that step. A case
 * runs one op, so "several accumulations" are the state the earlier ones leave: the running sum
 * of `held` gradients, each addition rounded to the dtype as an accumulator stored in it is. */

static const weft_dtype_t accumulator_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INVALID};

static cf_array_t *accumulated(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims,
                               int held) {
  cf_array_t *acc = cf_array_new(dt, rank, dims);
  for (int k = 0; k < held; k++) {
    cf_array_t *g = gen(rng, dt, rank, dims, -1, 1);
    for (int64_t i = 0; i < acc->n; i++) acc->v[i] = cf_round_to_dtype(dt, acc->v[i] + g->v[i]);
    cf_array_free(g);
  }
  return acc;
}

typedef struct accumulator_case {
  const char *name;
  int rank;
  int64_t dims[2];
  int held;           /* gradients already summed */
  int64_t step;       /* the accumulator's step */
  int64_t arg;        /* Apply: the gradient's local_step; Take: num_required */
  bool grad_mismatch; /* Apply: a gradient of another shape, hidden from shape inference */
} accumulator_case_t;

static void accumulator_apply_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                                   const accumulator_case_t *k) {
  cf_case_t *c = cf_case_new(op, k->name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *acc = accumulated(&rng, dt, k->rank, k->dims, k->held);
  int64_t gdims[2] = {k->dims[1], k->dims[0]};
  cf_array_t *grad = gen(&rng, dt, k->rank, k->grad_mismatch ? gdims : k->dims, -1, 1);
  cf_array_t *new_acc = cf_array_copy(acc);
  /* A gradient of an older step is dropped; one of a newer step (a global step restored from a
   * checkpoint) first discards the older sum and moves the accumulator to its step. */
  bool accepted = k->arg >= k->step;
  int64_t new_count = k->held, new_step = k->step;
  if (accepted && !k->grad_mismatch) {
    if (k->arg > k->step) {
      for (int64_t i = 0; i < new_acc->n; i++) new_acc->v[i] = 0;
      new_count = 0;
      new_step = k->arg;
    }
    for (int64_t i = 0; i < new_acc->n; i++) new_acc->v[i] += grad->v[i];
    cf_array_round(new_acc);
    new_count++;
  }
  cf_case_variable_input(c, acc, new_acc);
  cf_case_variable_input(c, cf_array_scalar(WEFT_DT_INT64, k->held),
                         cf_array_scalar(WEFT_DT_INT64, (double)new_count));
  cf_case_variable_input(c, cf_array_scalar(WEFT_DT_INT64, (double)k->step),
                         cf_array_scalar(WEFT_DT_INT64, (double)new_step));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT64, (double)k->arg));
  int gi = cf_case_input(c, grad);
  if (k->grad_mismatch) {
    c->unknown_shape[gi] = true;
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  } else {
    cf_case_expect(c, cf_array_scalar(WEFT_DT_BOOL, accepted));
  }
  cf_run_case(ctx, c);
}

static void accumulator_take_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                                  const accumulator_case_t *k) {
  cf_case_t *c = cf_case_new(op, k->name, dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *acc = accumulated(&rng, dt, k->rank, k->dims, k->held);
  /* Taking the average empties the accumulator and starts its next step. */
  cf_case_variable_input(c, acc, cf_array_new(dt, k->rank, k->dims));
  cf_case_variable_input(c, cf_array_scalar(WEFT_DT_INT64, k->held),
                         cf_array_scalar(WEFT_DT_INT64, 0));
  cf_case_variable_input(c, cf_array_scalar(WEFT_DT_INT64, (double)k->step),
                         cf_array_scalar(WEFT_DT_INT64, (double)(k->step + 1)));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT64, (double)k->arg));
  if (k->arg < 1) {
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  } else if (k->held < k->arg) {
    /* The message is the documented one the chief's step reports (docs/training.md). */
    char *why = g_strdup_printf("accumulator has %d of %" G_GINT64_FORMAT " gradients", k->held,
                                k->arg);
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_FAILED_PRECONDITION, why);
    g_free(why);
  } else {
    cf_array_t *average = cf_array_new(dt, k->rank, k->dims);
    for (int64_t i = 0; i < average->n; i++) average->v[i] = acc->v[i] / k->held;
    cf_array_round(average);
    cf_case_expect(c, average);
  }
  cf_run_case(ctx, c);
}

static void emit_accumulator(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const accumulator_case_t apply_cases[] = {
      {"fresh_first", 2, {3, 5}, 0, 5, 5, false},
      {"fresh_after_3", 1, {1023}, 3, 5, 5, false},
      {"fresh_scalar", 0, {0}, 1, 0, 0, false},
      {"stale", 2, {3, 5}, 2, 5, 4, false},
      {"stale_scalar", 0, {0}, 1, 7, 0, false},
      {"newer_discards_sum", 2, {3, 5}, 2, 5, 9, false},
      {"grad_shape_mismatch", 2, {3, 5}, 1, 5, 5, true},
  };
  static const accumulator_case_t take_cases[] = {
      {"average_of_2", 2, {3, 5}, 2, 5, 2, false},
      {"average_of_3", 1, {1023}, 3, 0, 3, false},
      {"more_than_required", 2, {3, 5}, 4, 5, 2, false},
      {"scalar", 0, {0}, 1, 9, 1, false},
      {"not_enough", 2, {3, 5}, 1, 5, 2, false},
      {"empty", 1, {7}, 0, 5, 1, false},
      {"num_required_0", 1, {7}, 0, 5, 0, false},
  };
  bool apply = strcmp(op, "WeftAccumulatorApply") == 0;
  const accumulator_case_t *cases = apply ? apply_cases : take_cases;
  size_t n = apply ? G_N_ELEMENTS(apply_cases) : G_N_ELEMENTS(take_cases);
  for (size_t i = 0; i < n; i++) {
    if (apply)
      accumulator_apply_case(ctx, op, dt, &cases[i]);
    else
      accumulator_take_case(ctx, op, dt, &cases[i]);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Random ops: checked by statistics */

static char *check_random(const cf_case_t *c, cf_array_t *const *outs, int n) {
  if (n < 1 || outs[0] == NULL) return g_strdup("no output");
  const cf_array_t *y = outs[0];
  if (y->rank != 2 || y->dims[0] != 1000 || y->dims[1] != 100)
    return g_strdup("output shape is not [1000,100]");
  double sum = 0, sum2 = 0, lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < y->n; i++) {
    double v = y->v[i];
    if (!isfinite(v)) return g_strdup_printf("element %" G_GINT64_FORMAT " is %g", i, v);
    sum += v;
    sum2 += v * v;
    lo = fmin(lo, v);
    hi = fmax(hi, v);
  }
  double mean = sum / (double)y->n, sd = sqrt(sum2 / (double)y->n - mean * mean);
  double want_mean, want_sd, min_ok, max_ok;
  if (strcmp(c->op, "RandomUniform") == 0) {
    want_mean = 0.5, want_sd = sqrt(1.0 / 12), min_ok = 0, max_ok = 1;
    if (hi >= 1) return g_strdup_printf("a value %g is not below 1", hi);
  } else if (strcmp(c->op, "RandomStandardNormal") == 0) {
    want_mean = 0, want_sd = 1, min_ok = -10, max_ok = 10;
  } else if (strcmp(c->op, "TruncatedNormal") == 0) {
    want_mean = 0, want_sd = 0.87962566, min_ok = -2, max_ok = 2;
  } else { /* RandomUniformInt over [-5, 15) */
    want_mean = 4.5, want_sd = sqrt((20.0 * 20 - 1) / 12), min_ok = -5, max_ok = 14;
    if (lo != -5 || hi != 14) return g_strdup_printf("values span [%g, %g], not [-5, 14]", lo, hi);
  }
  if (lo < min_ok || hi > max_ok)
    return g_strdup_printf("values span [%g, %g], outside [%g, %g]", lo, hi, min_ok, max_ok);
  /* 10^5 draws: the mean is within 5 standard errors, the spread within 2%. */
  double se = want_sd / sqrt((double)y->n);
  if (fabs(mean - want_mean) > 5 * se + 1e-3)
    return g_strdup_printf("mean %g, expected %g", mean, want_mean);
  if (fabs(sd - want_sd) > 0.02 * want_sd)
    return g_strdup_printf("standard deviation %g, expected %g", sd, want_sd);
  return NULL;
}

static void emit_random(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  bool is_int = strcmp(op, "RandomUniformInt") == 0;
  if (!cf_supported(ctx, op, is_int ? "Tout" : "dtype", dt)) return;
  cf_case_t *c = cf_case_new(op, "statistics_1e5", dt);
  int64_t shape[2] = {1000, 100};
  cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 2, shape));
  if (is_int) {
    cf_case_input(c, cf_array_scalar(dt, -5));
    cf_case_input(c, cf_array_scalar(dt, 15));
  } else {
    cf_case_attr_type(c, "dtype", dt);
  }
  cf_case_attr_int(c, "seed", 7);
  cf_case_attr_int(c, "seed2", 11);
  cf_case_expect(c, NULL);
  c->check = check_random;
  cf_run_case(ctx, c);
}

static const weft_dtype_t int_out[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_state[] = {
    {"VariableV2", cf_dtypes_all, emit_variable, "dtype"},
    {"Assign", cf_dtypes_all, emit_assign, NULL},
    {"AssignAdd", cf_dtypes_numeric, emit_assign, NULL},
    {"AssignSub", cf_dtypes_numeric, emit_assign, NULL},
    {"IsVariableInitialized", cf_dtypes_all, emit_is_initialized, "dtype"},
    {"ApplyGradientDescent", cf_dtypes_float, emit_training, NULL},
    {"ApplyMomentum", cf_dtypes_float, emit_training, NULL},
    {"ApplyAdagrad", cf_dtypes_float, emit_training, NULL},
    {"ApplyAdam", cf_dtypes_float, emit_training, NULL},
    {"ApplyRMSProp", cf_dtypes_float, emit_training, NULL},
    {"ApplyProximalAdagrad", cf_dtypes_float, emit_training, NULL},
    {"WeftAccumulatorApply", accumulator_dtypes, emit_accumulator, NULL},
    {"WeftAccumulatorTake", accumulator_dtypes, emit_accumulator, NULL},
    {"RandomUniform", cf_dtypes_float, emit_random, "dtype"},
    {"RandomStandardNormal", cf_dtypes_float, emit_random, "dtype"},
    {"TruncatedNormal", cf_dtypes_float, emit_random, "dtype"},
    {"RandomUniformInt", int_out, emit_random, "Tout"},
    {NULL, NULL, NULL, NULL},
};
