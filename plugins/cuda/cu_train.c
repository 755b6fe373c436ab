/* cu_train.c: the optimizer update kernels on reference variables (host side; the device code is
 * train_kernel in kernels/elementwise.cu), with TensorFlow's formulas: ApplyGradientDescent,
 * ApplyMomentum (use_nesterov), ApplyAdagrad (update_slots), ApplyAdam (use_nesterov) and
 * ApplyRMSProp. Each updates the variable and its slots in place, in one kernel, under the
 * variable's lock when use_locking, and outputs the variable's reference.
 *
 * The scalar inputs (learning rate, decay rates, ...) stay in device memory and the kernel reads
 * them: a training step never waits for the host to learn a learning rate. Shapes and dtypes are
 * checked like the CPU kernels check them, with the same messages. */
#include <string.h>

#include "cu_internal.h"

#define H weft_pc_host

typedef struct train_op {
  const char *name;
  int kind;
  int n_refs;              /* var and slots: inputs [0, n_refs) */
  int scalars[6];          /* input indices of the scalars, in the kernel's order; -1 ends */
  const char *names[6];    /* their names, for messages */
  int grad_input;          /* index of grad (or delta) */
} train_op_t;

static const train_op_t train_ops[] = {
    {"ApplyGradientDescent", CU_TRAIN_SGD, 1, {1, -1}, {"alpha"}, 2},
    {"ApplyMomentum", CU_TRAIN_MOMENTUM, 2, {2, 4, -1}, {"lr", "momentum"}, 3},
    {"ApplyAdagrad", CU_TRAIN_ADAGRAD, 2, {2, -1}, {"lr"}, 3},
    {"ApplyAdam",
     CU_TRAIN_ADAM,
     3,
     {3, 4, 5, 6, 7, 8},
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"},
     9},
    {"ApplyRMSProp", CU_TRAIN_RMSPROP, 3, {3, 4, 5, 6, -1}, {"lr", "rho", "momentum", "epsilon"},
     7},
};

static weft_status_t *train_locked(weft_kernel_ctx_t *ctx, const train_op_t *op) {
  weft_tensor_view_t refs[3], grad;
  WEFT_RETURN_IF_ERROR(weft_pc_train_operands(ctx, op->name, "CUDA", op->n_refs, op->grad_input,
                                              op->kind == CU_TRAIN_SGD, refs, &grad));
  const weft_tensor_view_t *var = &refs[0];
  weft_cu_train_args_t a;
  memset(&a, 0, sizeof a);
  a.kind = op->kind;
  a.n = var->num_elements;
  a.var = var->data;
  a.s1 = op->n_refs > 1 ? refs[1].data : NULL;
  a.s2 = op->n_refs > 2 ? refs[2].data : NULL;
  a.grad = grad.data;
  for (int k = 0; k < 6 && op->scalars[k] >= 0; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, op->scalars[k], &v));
    if (v.num_elements != 1 || v.rank != 0 || v.dtype != var->dtype) {
      char s[WEFT_PC_SHAPE_STR_LEN];
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s is not a %s scalar: %s %s",
                           op->names[k], weft_pc_dtype_name(var->dtype),
                           weft_pc_dtype_name(v.dtype),
                           weft_pc_shape_str(v.rank, v.dims, s, sizeof s));
    }
    a.scalars[k] = v.data;
  }
  a.nesterov = weft_pc_attr_bool(ctx, "use_nesterov", false);
  a.update_slots = weft_pc_attr_bool(ctx, "update_slots", true);
  if (a.n == 0) return NULL;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_train(s, (weft_cu_dt_t)weft__cu_dt(var->dtype), &a),
                           op->name);
}

static weft_status_t *k_train(weft_kernel_ctx_t *ctx, void *state) {
  const train_op_t *op = state;
  /* Only the variable's lock: the host's ref locks need not be re-entrant, and a variable's
   * slots are only ever touched by its own update ops. The lock orders the queueing; the stream
   * orders the updates themselves. */
  bool lock = weft_pc_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = train_locked(ctx, op);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

weft_status_t *weft__cu_register_train(const weft_registrar_t *reg) {
  for (size_t i = 0; i < sizeof train_ops / sizeof train_ops[0]; i++) {
    weft_cu_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = train_ops[i].name;
    spec.compute = k_train;
    spec.type_attr = "T";
    spec.dtypes = weft__cu_types_float;
    spec.n_dtypes = CU_N_FLOAT;
    spec.user_data = (void *)&train_ops[i];
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &spec));
  }
  return NULL;
}
