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

/* The kernel's kinds are the shared ones (cu_kernels.h cannot include plugin_common.h). */
_Static_assert(CU_TRAIN_SGD == (int)WEFT_PC_TRAIN_SGD &&
                   CU_TRAIN_MOMENTUM == (int)WEFT_PC_TRAIN_MOMENTUM &&
                   CU_TRAIN_ADAGRAD == (int)WEFT_PC_TRAIN_ADAGRAD &&
                   CU_TRAIN_ADAM == (int)WEFT_PC_TRAIN_ADAM &&
                   CU_TRAIN_RMSPROP == (int)WEFT_PC_TRAIN_RMSPROP,
               "CUDA train kinds");

static weft_status_t *train_update(weft_kernel_ctx_t *ctx, const weft_pc_train_op_t *op) {
  weft_pc_train_in_t in;
  WEFT_RETURN_IF_ERROR(weft_pc_train_read(ctx, op, "CUDA", &in));
  const weft_tensor_view_t *var = &in.refs[0];
  weft_cu_train_args_t a;
  memset(&a, 0, sizeof a);
  a.kind = (int32_t)op->kind;
  a.n = var->num_elements;
  a.var = var->data;
  a.s1 = op->n_refs > 1 ? in.refs[1].data : NULL;
  a.s2 = op->n_refs > 2 ? in.refs[2].data : NULL;
  a.grad = in.grad.data;
  for (int k = 0; k < in.n_scalars; k++) a.scalars[k] = in.scalars[k].data;
  a.nesterov = weft_pc_attr_bool(ctx, "use_nesterov", false);
  a.update_slots = weft_pc_attr_bool(ctx, "update_slots", true);
  if (a.n == 0) return NULL;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_train(s, (weft_cu_dt_t)weft__cu_dt(var->dtype), &a),
                           op->name);
}

/* The lock orders the queueing; the stream orders the updates themselves. */
static weft_status_t *k_train(weft_kernel_ctx_t *ctx, void *state) {
  return weft_pc_train_compute(ctx, state, train_update);
}

weft_status_t *weft__cu_register_train(const weft_registrar_t *reg) {
  for (size_t i = 0; i < WEFT_PC_TRAIN_N_OPS; i++) {
    const weft_cu_kernel_spec_t spec = {.op = weft_pc_train_ops[i].name,
                                        .compute = k_train,
                                        .type_attr = "T",
                                        .dtypes = weft__cu_types_float,
                                        .n_dtypes = CU_N_FLOAT,
                                        .user_data = (void *)&weft_pc_train_ops[i]};
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &spec));
  }
  return NULL;
}
