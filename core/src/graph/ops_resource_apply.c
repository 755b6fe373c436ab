/* ops_resource_apply.c: TensorFlow's optimizer updates on resource variables (ResourceApply*)
 * and the ref-variable updates added with them (ApplyAdagradV2, ApplyCenteredRMSProp,
 * ApplyAdadelta), with the args and attrs of tensorflow/core/ops/training_ops.cc. A
 * ResourceApply* op has its ref twin's inputs in the same order, handles in place of the refs,
 * and no output; the kernels are the ref ops' (the host resolves a handle to its variable). */
#include "ops_shape.h"

/* One letter per input: 'h' a resource handle (a string scalar here), 'v' the variable's
 * reference, 's' a tensor shaped like the variable, 'k' a scalar hyper-parameter. A ref op
 * outputs the variable's shape; a resource op has no output. */
static weft_status_t *update_shape(weft_shape_ctx_t *ctx, const char *pattern) {
  weft__shape_t var = {.rank = -1};
  bool ref = false;
  for (int i = 0; pattern[i] != '\0'; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    char what[64];
    if (pattern[i] == 'h') {
      g_snprintf(what, sizeof what, "the resource handle (input %d)", i);
      WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, what));
    } else if (pattern[i] == 'k') {
      g_snprintf(what, sizeof what, "input %d", i);
      WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, what));
    } else {
      ref = ref || pattern[i] == 'v';
      g_snprintf(what, sizeof what, "var (input 0) and input %d", i);
      WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &var, &s, &var, what));
    }
  }
  return ref ? weft__sh_output(ctx, 0, &var) : NULL;
}

#define UPDATE_SHAPE(fn, pattern) \
  static weft_status_t *fn(weft_shape_ctx_t *ctx) { return update_shape(ctx, pattern); }
UPDATE_SHAPE(res_gd_shape, "hks")
UPDATE_SHAPE(res_momentum_shape, "hhksk")
UPDATE_SHAPE(res_adagrad_shape, "hhks")
UPDATE_SHAPE(res_adagrad_v2_shape, "hhkks")
UPDATE_SHAPE(res_adam_shape, "hhhkkkkkks")
UPDATE_SHAPE(res_rmsprop_shape, "hhhkkkks")
UPDATE_SHAPE(res_centered_rmsprop_shape, "hhhhkkkks")
UPDATE_SHAPE(res_adadelta_shape, "hhhkkks")
UPDATE_SHAPE(adagrad_v2_shape, "vskks")
UPDATE_SHAPE(centered_rmsprop_shape, "vssskkkks")
UPDATE_SHAPE(adadelta_shape, "vsskkks")
#undef UPDATE_SHAPE

#define LOCKING "T: numbertype", "use_locking: bool = false"

const weft_op_def_t weft__ops_resource_apply[] = {
    WEFT__OP("ResourceApplyGradientDescent",
             WEFT__SPECS("var: string", "alpha: T", "delta: T"), WEFT__NO_SPECS,
             WEFT__SPECS(LOCKING), 1, res_gd_shape),
    WEFT__OP("ResourceApplyMomentum",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "grad: T", "momentum: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING, "use_nesterov: bool = false"), 1,
             res_momentum_shape),
    WEFT__OP("ResourceApplyAdagrad",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "grad: T"), WEFT__NO_SPECS,
             WEFT__SPECS(LOCKING, "update_slots: bool = true"), 1, res_adagrad_shape),
    WEFT__OP("ResourceApplyAdagradV2",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "epsilon: T", "grad: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING, "update_slots: bool = true"), 1,
             res_adagrad_v2_shape),
    WEFT__OP("ResourceApplyAdam",
             WEFT__SPECS("var: string", "m: string", "v: string", "beta1_power: T",
                         "beta2_power: T", "lr: T", "beta1: T", "beta2: T", "epsilon: T",
                         "grad: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING, "use_nesterov: bool = false"), 1,
             res_adam_shape),
    WEFT__OP("ResourceApplyRMSProp",
             WEFT__SPECS("var: string", "ms: string", "mom: string", "lr: T", "rho: T",
                         "momentum: T", "epsilon: T", "grad: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING), 1, res_rmsprop_shape),
    WEFT__OP("ResourceApplyCenteredRMSProp",
             WEFT__SPECS("var: string", "mg: string", "ms: string", "mom: string", "lr: T",
                         "rho: T", "momentum: T", "epsilon: T", "grad: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING), 1, res_centered_rmsprop_shape),
    WEFT__OP("ResourceApplyAdadelta",
             WEFT__SPECS("var: string", "accum: string", "accum_update: string", "lr: T",
                         "rho: T", "epsilon: T", "grad: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING), 1, res_adadelta_shape),
    WEFT__OP("ApplyAdagradV2",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "epsilon: T", "grad: T"),
             WEFT__SPECS("out: Ref(T)"), WEFT__SPECS(LOCKING, "update_slots: bool = true"), 1,
             adagrad_v2_shape),
    WEFT__OP("ApplyCenteredRMSProp",
             WEFT__SPECS("var: Ref(T)", "mg: Ref(T)", "ms: Ref(T)", "mom: Ref(T)", "lr: T",
                         "rho: T", "momentum: T", "epsilon: T", "grad: T"),
             WEFT__SPECS("out: Ref(T)"), WEFT__SPECS(LOCKING), 1, centered_rmsprop_shape),
    WEFT__OP("ApplyAdadelta",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "accum_update: Ref(T)", "lr: T",
                         "rho: T", "epsilon: T", "grad: T"),
             WEFT__SPECS("out: Ref(T)"), WEFT__SPECS(LOCKING), 1, adadelta_shape),
    WEFT__OPS_END,
};
