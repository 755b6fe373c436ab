/* ops_state.c: the standard stateful ops on TensorFlow's reference variables (VariableV2, Assign,
 * AssignAdd, AssignSub, IsVariableInitialized) and the training ops that update a variable in
 * place (ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyAdam, ApplyRMSProp), with
 * TensorFlow's args and attrs, and their shape functions. */
#include <string.h>

#include "ops_shape.h"

static weft_status_t *variable_shape(weft_shape_ctx_t *ctx) {
  const weft_host_t *h = weft__graph_host();
  weft__shape_t s = {.rank = -1};
  weft_status_t *status = h->attr_shape(h->shape_attrs(ctx), "shape", &s.rank, s.dims);
  if (status) {
    h->status_free(status);
    s.rank = -1;
  }
  return weft__sh_output(ctx, 0, &s);
}

static weft_status_t *assign_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t ref, value;
  weft__sh_input(ctx, 0, &ref);
  weft__sh_input(ctx, 1, &value);
  /* Without validate_shape the variable takes whatever shape the value has. */
  if (!weft__sh_attr_bool(ctx, "validate_shape", true)) return weft__sh_output(ctx, 0, &value);
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &ref, &value, &out, "the variable (ref) and the value"));
  return weft__sh_output(ctx, 0, &out);
}

/* The training ops: `pattern` has one letter per input, 's' for a tensor shaped like the variable
 * (input 0) and 'k' for a scalar hyper-parameter. The output has the variable's shape. */
static weft_status_t *apply_shape(weft_shape_ctx_t *ctx, const char *pattern) {
  static const char *const names[] = {"input 0", "input 1", "input 2", "input 3", "input 4",
                                      "input 5", "input 6", "input 7", "input 8", "input 9"};
  weft__shape_t var;
  weft__sh_input(ctx, 0, &var);
  for (int i = 1; pattern[i] != '\0' && i < (int)G_N_ELEMENTS(names); i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    if (pattern[i] == 'k') {
      WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i]));
    } else {
      char what[64];
      g_snprintf(what, sizeof what, "var (input 0) and input %d", i);
      WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &var, &s, &var, what));
    }
  }
  return weft__sh_output(ctx, 0, &var);
}

static weft_status_t *apply_gd_shape(weft_shape_ctx_t *ctx) { return apply_shape(ctx, "sks"); }
static weft_status_t *apply_momentum_shape(weft_shape_ctx_t *ctx) {
  return apply_shape(ctx, "ssksk");
}
static weft_status_t *apply_adagrad_shape(weft_shape_ctx_t *ctx) {
  return apply_shape(ctx, "ssks");
}
static weft_status_t *apply_adam_shape(weft_shape_ctx_t *ctx) {
  return apply_shape(ctx, "ssskkkkkks");
}
static weft_status_t *apply_rmsprop_shape(weft_shape_ctx_t *ctx) {
  return apply_shape(ctx, "ssskkkks");
}

/* The synchronous-replicas accumulator ops (core/src/train/sync_replicas.c): acc is shaped like
 * the gradient; count, step, local_step and num_required are scalars. */
static weft_status_t *accumulator_apply_shape(weft_shape_ctx_t *ctx) {
  static const char *const names[] = {"count (input 1)", "step (input 2)",
                                      "local_step (input 3)"};
  weft__shape_t acc, grad, s;
  for (int i = 1; i <= 3; i++) {
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i - 1]));
  }
  weft__sh_input(ctx, 0, &acc);
  weft__sh_input(ctx, 4, &grad);
  WEFT_RETURN_IF_ERROR(
      weft__sh_merge(ctx, &acc, &grad, &acc, "the accumulator (input 0) and grad (input 4)"));
  weft__shape_t scalar = {.rank = 0};
  return weft__sh_output(ctx, 0, &scalar);
}

static weft_status_t *accumulator_take_shape(weft_shape_ctx_t *ctx) {
  static const char *const names[] = {"count (input 1)", "step (input 2)",
                                      "num_required (input 3)"};
  weft__shape_t acc, s;
  for (int i = 1; i <= 3; i++) {
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, names[i - 1]));
  }
  weft__sh_input(ctx, 0, &acc);
  return weft__sh_output(ctx, 0, &acc);
}

const weft_op_def_t weft__ops_state[] = {
    WEFT__OP("VariableV2", WEFT__NO_SPECS, WEFT__SPECS("ref: Ref(dtype)"),
             WEFT__SPECS("shape: shape", "dtype: type", "container: string = ''",
                         "shared_name: string = ''"),
             1, variable_shape),
    WEFT__OP("Assign", WEFT__SPECS("ref: Ref(T)", "value: T"), WEFT__SPECS("output_ref: Ref(T)"),
             WEFT__SPECS("T: type", "validate_shape: bool = true", "use_locking: bool = true"), 1,
             assign_shape),
    WEFT__OP("AssignAdd", WEFT__SPECS("ref: Ref(T)", "value: T"),
             WEFT__SPECS("output_ref: Ref(T)"),
             WEFT__SPECS("T: numbertype", "use_locking: bool = false"), 1,
             weft__shape_fn_merge_all),
    WEFT__OP("AssignSub", WEFT__SPECS("ref: Ref(T)", "value: T"),
             WEFT__SPECS("output_ref: Ref(T)"),
             WEFT__SPECS("T: numbertype", "use_locking: bool = false"), 1,
             weft__shape_fn_merge_all),
    WEFT__OP("IsVariableInitialized", WEFT__SPECS("ref: Ref(dtype)"),
             WEFT__SPECS("is_initialized: bool"), WEFT__SPECS("dtype: type"), 1,
             weft__shape_fn_scalar),
    WEFT__OP("ApplyGradientDescent", WEFT__SPECS("var: Ref(T)", "alpha: T", "delta: T"),
             WEFT__SPECS("out: Ref(T)"), WEFT__SPECS("T: numbertype", "use_locking: bool = false"),
             1, apply_gd_shape),
    WEFT__OP("ApplyMomentum",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T", "momentum: T"),
             WEFT__SPECS("out: Ref(T)"),
             WEFT__SPECS("T: numbertype", "use_locking: bool = false",
                         "use_nesterov: bool = false"),
             1, apply_momentum_shape),
    WEFT__OP("ApplyAdagrad", WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T"),
             WEFT__SPECS("out: Ref(T)"),
             WEFT__SPECS("T: numbertype", "use_locking: bool = false",
                         "update_slots: bool = true"),
             1, apply_adagrad_shape),
    WEFT__OP("ApplyAdam",
             WEFT__SPECS("var: Ref(T)", "m: Ref(T)", "v: Ref(T)", "beta1_power: T",
                         "beta2_power: T", "lr: T", "beta1: T", "beta2: T", "epsilon: T",
                         "grad: T"),
             WEFT__SPECS("out: Ref(T)"),
             WEFT__SPECS("T: numbertype", "use_locking: bool = false",
                         "use_nesterov: bool = false"),
             1, apply_adam_shape),
    WEFT__OP("ApplyRMSProp",
             WEFT__SPECS("var: Ref(T)", "ms: Ref(T)", "mom: Ref(T)", "lr: T", "rho: T",
                         "momentum: T", "epsilon: T", "grad: T"),
             WEFT__SPECS("out: Ref(T)"), WEFT__SPECS("T: numbertype", "use_locking: bool = false"),
             1, apply_rmsprop_shape),
    WEFT__OP("WeftAccumulatorApply",
             WEFT__SPECS("acc: Ref(T)", "count: Ref(int64)", "step: Ref(int64)",
                         "local_step: int64", "grad: T"),
             WEFT__SPECS("accepted: bool"), WEFT__SPECS("T: {float, double}"), 1,
             accumulator_apply_shape),
    WEFT__OP("WeftAccumulatorTake",
             WEFT__SPECS("acc: Ref(T)", "count: Ref(int64)", "step: Ref(int64)",
                         "num_required: int64"),
             WEFT__SPECS("average: T"), WEFT__SPECS("T: {float, double}"), 1,
             accumulator_take_shape),
    WEFT__OPS_END,
};
