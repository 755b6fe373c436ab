/* cpu_train.c: the optimizer update kernels on reference variables, with TensorFlow's update
 * formulas: ApplyGradientDescent, ApplyMomentum (use_nesterov), ApplyAdagrad (update_slots),
 * ApplyAdagradV2, ApplyAdam (use_nesterov), ApplyRMSProp, ApplyCenteredRMSProp and ApplyAdadelta.
 * Each updates the variable and its slots in place (under the variables' locks when use_locking)
 * and outputs the variable's reference. The same kernels are TensorFlow's ResourceApply* ops:
 * the host resolves a resource handle input to its variable (docs/plugin-abi.md). Also the
 * synchronous-replicas gradient accumulator (WeftAccumulatorApply, WeftAccumulatorTake). */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <tgmath.h>

#include "cpu_internal.h"

#define H weft__cpu_host

typedef struct train_job {
  weft_pc_train_kind_t kind;
  weft_dtype_t dtype;
  void *var, *s1, *s2, *s3; /* slots */
  const void *grad;
  double c[8];         /* the scalar inputs and derived constants */
  bool nesterov, update_slots;
} train_job_t;

#define TRAIN_BODY(T)                                                                   \
  {                                                                                     \
    T *restrict var = (T *)j->var;                                                      \
    T *restrict s1 = (T *)j->s1;                                                        \
    T *restrict s2 = (T *)j->s2;                                                        \
    T *restrict s3 = (T *)j->s3;                                                        \
    const T *restrict g = (const T *)j->grad;                                           \
    switch (j->kind) {                                                                  \
      case WEFT_PC_TRAIN_SGD: {                                                         \
        const T alpha = (T)j->c[0];                                                     \
        for (int64_t i = b; i < e; i++) var[i] -= alpha * g[i];                         \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_MOMENTUM: {                                                    \
        const T lr = (T)j->c[0], mom = (T)j->c[1];                                      \
        for (int64_t i = b; i < e; i++) {                                               \
          s1[i] = s1[i] * mom + g[i];                                                   \
          if (j->nesterov)                                                              \
            var[i] -= g[i] * lr + s1[i] * mom * lr;                                     \
          else                                                                          \
            var[i] -= lr * s1[i];                                                       \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_ADAGRAD: {                                                     \
        const T lr = (T)j->c[0];                                                        \
        for (int64_t i = b; i < e; i++) {                                               \
          if (j->update_slots) s1[i] += g[i] * g[i];                                    \
          var[i] -= lr * g[i] / sqrt(s1[i]);                                            \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_ADAM: {                                                        \
        /* c: beta1_power, beta2_power, lr, beta1, beta2, epsilon, lr_t */              \
        const T beta1 = (T)j->c[3], beta2 = (T)j->c[4], eps = (T)j->c[5];               \
        const T lr_t = (T)j->c[6];                                                      \
        for (int64_t i = b; i < e; i++) {                                               \
          s1[i] += (g[i] - s1[i]) * ((T)1 - beta1);                                     \
          s2[i] += (g[i] * g[i] - s2[i]) * ((T)1 - beta2);                              \
          if (j->nesterov)                                                              \
            var[i] -= (g[i] * ((T)1 - beta1) + beta1 * s1[i]) * lr_t / (sqrt(s2[i]) + eps); \
          else                                                                          \
            var[i] -= s1[i] * lr_t / (sqrt(s2[i]) + eps);                               \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_RMSPROP: {                                                     \
        /* c: lr, rho, momentum, epsilon; s1 = ms, s2 = mom */                          \
        const T lr = (T)j->c[0], rho = (T)j->c[1], momentum = (T)j->c[2];               \
        const T eps = (T)j->c[3];                                                       \
        for (int64_t i = b; i < e; i++) {                                               \
          s1[i] += (g[i] * g[i] - s1[i]) * ((T)1 - rho);                                \
          s2[i] = s2[i] * momentum + lr * g[i] / sqrt(s1[i] + eps);                     \
          var[i] -= s2[i];                                                              \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_ADAGRAD_V2: {                                                  \
        const T lr = (T)j->c[0], eps = (T)j->c[1];                                      \
        for (int64_t i = b; i < e; i++) {                                               \
          if (j->update_slots) s1[i] += g[i] * g[i];                                    \
          var[i] -= lr * g[i] / (sqrt(s1[i]) + eps);                                    \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_CENTERED_RMSPROP: {                                            \
        /* c: lr, rho, momentum, epsilon; s1 = mg, s2 = ms, s3 = mom */                 \
        const T lr = (T)j->c[0], rho = (T)j->c[1], momentum = (T)j->c[2];               \
        const T eps = (T)j->c[3];                                                       \
        for (int64_t i = b; i < e; i++) {                                               \
          s2[i] += (g[i] * g[i] - s2[i]) * ((T)1 - rho);                                \
          s1[i] += (g[i] - s1[i]) * ((T)1 - rho);                                       \
          s3[i] = s3[i] * momentum + g[i] * lr / sqrt(s2[i] - s1[i] * s1[i] + eps);     \
          var[i] -= s3[i];                                                              \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case WEFT_PC_TRAIN_ADADELTA: {                                                    \
        /* c: lr, rho, epsilon; s1 = accum, s2 = accum_update */                        \
        const T lr = (T)j->c[0], rho = (T)j->c[1], eps = (T)j->c[2];                    \
        for (int64_t i = b; i < e; i++) {                                               \
          s1[i] = s1[i] * rho + g[i] * g[i] * ((T)1 - rho);                             \
          const T up = sqrt(s2[i] + eps) / sqrt(s1[i] + eps) * g[i];                    \
          var[i] -= up * lr;                                                            \
          s2[i] = s2[i] * rho + up * up * ((T)1 - rho);                                 \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
    }                                                                                   \
  }

static void train_range_f32(const train_job_t *j, int64_t b, int64_t e) TRAIN_BODY(float)
static void train_range_f64(const train_job_t *j, int64_t b, int64_t e) TRAIN_BODY(double)

static void train_range(void *arg, int64_t b, int64_t e) {
  const train_job_t *j = arg;
  if (j->dtype == WEFT_DT_FLOAT)
    train_range_f32(j, b, e);
  else
    train_range_f64(j, b, e);
}

static bool same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  return a->rank == b->rank &&
         (a->rank == 0 || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0);
}

static weft_status_t *train_update(weft_kernel_ctx_t *ctx, const weft_pc_train_op_t *op) {
  weft_pc_train_in_t in;
  WEFT_RETURN_IF_ERROR(weft_pc_train_read(ctx, op, "CPU", &in));
  const weft_tensor_view_t *var = &in.refs[0];
  train_job_t j = {.kind = op->kind,
                   .dtype = var->dtype,
                   .var = var->data,
                   .s1 = op->n_refs > 1 ? in.refs[1].data : NULL,
                   .s2 = op->n_refs > 2 ? in.refs[2].data : NULL,
                   .s3 = op->n_refs > 3 ? in.refs[3].data : NULL,
                   .grad = in.grad.data};
  for (int k = 0; k < in.n_scalars; k++) j.c[k] = weft__cpu_get_double(&in.scalars[k], 0);
  if (op->kind == WEFT_PC_TRAIN_ADAM) /* lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t) */
    j.c[6] = j.c[2] * sqrt(1.0 - j.c[1]) / (1.0 - j.c[0]);
  j.nesterov = weft__cpu_attr_bool(ctx, "use_nesterov", false);
  j.update_slots = weft__cpu_attr_bool(ctx, "update_slots", true);
  weft__cpu_parallel(ctx, var->num_elements, op->kind == WEFT_PC_TRAIN_SGD ? 2 : 20, train_range,
                     &j);
  return NULL;
}

static weft_status_t *k_train(weft_kernel_ctx_t *ctx, void *state) {
  return weft_pc_train_compute(ctx, state, train_update);
}

/* ---------------------------------------------------------------------------------------------
 * The synchronous-replicas gradient accumulator (core/src/train/sync_replicas.c): acc (input 0)
 * sums the gradients of the current step, count (input 1) says how many, step (input 2) is the
 * accumulator's own global step. acc's lock guards all three: only these two ops change them
 * after initialisation, and both take it. */

typedef struct accumulator {
  weft_tensor_view_t acc, count, step;
} accumulator_t;

static weft_status_t *accumulator_refs(weft_kernel_ctx_t *ctx, accumulator_t *a) {
  weft_tensor_view_t *views[3] = {&a->acc, &a->count, &a->step};
  static const char *const names[3] = {"acc", "count", "step"};
  for (int r = 0; r < 3; r++) {
    memset(views[r], 0, sizeof *views[r]);
    views[r]->struct_size = sizeof *views[r];
    WEFT_RETURN_IF_ERROR(H->kernel_ref_input(ctx, r, views[r]));
  }
  for (int r = 1; r < 3; r++)
    if (views[r]->dtype != WEFT_DT_INT64 || views[r]->num_elements != 1 || views[r]->rank != 0) {
      char s[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "the accumulator's %s is not an int64 scalar: %s %s", names[r],
                             weft__cpu_dtype_name(views[r]->dtype),
                             weft__cpu_shape_str(views[r]->rank, views[r]->dims, s, sizeof s));
    }
  if (a->acc.dtype != WEFT_DT_FLOAT && a->acc.dtype != WEFT_DT_DOUBLE)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "the accumulator has no CPU kernel for %s",
                           weft__cpu_dtype_name(a->acc.dtype));
  return NULL;
}

static weft_status_t *read_int64_scalar(weft_kernel_ctx_t *ctx, int index, const char *name,
                                        int64_t *out) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &v));
  if (v.dtype != WEFT_DT_INT64 || v.rank != 0 || v.num_elements != 1) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s is not an int64 scalar: %s %s", name,
                           weft__cpu_dtype_name(v.dtype),
                           weft__cpu_shape_str(v.rank, v.dims, s, sizeof s));
  }
  *out = *(const int64_t *)v.data;
  return NULL;
}

static void zero_acc(const weft_tensor_view_t *acc) {
  memset(acc->data, 0, (size_t)acc->num_elements * (acc->dtype == WEFT_DT_FLOAT ? 4 : 8));
}

static weft_status_t *accumulate_locked(weft_kernel_ctx_t *ctx, bool *accepted) {
  accumulator_t a;
  WEFT_RETURN_IF_ERROR(accumulator_refs(ctx, &a));
  int64_t local_step;
  WEFT_RETURN_IF_ERROR(read_int64_scalar(ctx, 3, "local_step", &local_step));
  weft_tensor_view_t grad;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 4, &grad));
  if (!same_shape(&a.acc, &grad) || grad.dtype != a.acc.dtype) {
    char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "the gradient (%s %s) does not match the accumulator (%s %s)",
                           weft__cpu_dtype_name(grad.dtype),
                           weft__cpu_shape_str(grad.rank, grad.dims, s1, sizeof s1),
                           weft__cpu_dtype_name(a.acc.dtype),
                           weft__cpu_shape_str(a.acc.rank, a.acc.dims, s0, sizeof s0));
  }
  int64_t *count = a.count.data, *step = a.step.data;
  *accepted = local_step >= *step;
  if (!*accepted) return NULL; /* computed from variables older than the current step */
  if (local_step > *step) {
    /* The global step is ahead of the accumulator (restored from a checkpoint): what it holds
     * belongs to an older step and is stale too. */
    zero_acc(&a.acc);
    *count = 0;
    *step = local_step;
  }
  if (a.acc.dtype == WEFT_DT_FLOAT) {
    float *d = a.acc.data;
    const float *g = grad.data;
    for (int64_t i = 0; i < a.acc.num_elements; i++) d[i] += g[i];
  } else {
    double *d = a.acc.data;
    const double *g = grad.data;
    for (int64_t i = 0; i < a.acc.num_elements; i++) d[i] += g[i];
  }
  *count += 1;
  return NULL;
}

static weft_status_t *k_accumulator_apply(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  bool accepted = false;
  H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = accumulate_locked(ctx, &accepted);
  H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  weft_tensor_view_t out;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &out));
  *(bool *)out.data = accepted;
  return NULL;
}

static weft_status_t *take_locked(weft_kernel_ctx_t *ctx) {
  accumulator_t a;
  WEFT_RETURN_IF_ERROR(accumulator_refs(ctx, &a));
  int64_t required;
  WEFT_RETURN_IF_ERROR(read_int64_scalar(ctx, 3, "num_required", &required));
  int64_t *count = a.count.data, *step = a.step.data;
  if (required < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_required must be at least 1, not %" PRId64, required);
  if (*count < required)
    return weft__cpu_error(ctx, WEFT_FAILED_PRECONDITION,
                           "accumulator has %" PRId64 " of %" PRId64 " gradients", *count,
                           required);
  weft_tensor_view_t out;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, a.acc.dtype, a.acc.rank, a.acc.dims, &out));
  if (a.acc.dtype == WEFT_DT_FLOAT) {
    const float *d = a.acc.data;
    float *o = out.data;
    for (int64_t i = 0; i < a.acc.num_elements; i++) o[i] = d[i] / (float)*count;
  } else {
    const double *d = a.acc.data;
    double *o = out.data;
    for (int64_t i = 0; i < a.acc.num_elements; i++) o[i] = d[i] / (double)*count;
  }
  zero_acc(&a.acc);
  *count = 0;
  *step += 1;
  return NULL;
}

static weft_status_t *k_accumulator_take(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = take_locked(ctx);
  H->kernel_unlock_ref(ctx, 0);
  return s;
}

/* The updates only this plugin has, with TensorFlow's inputs (tensorflow/core/ops/
 * training_ops.cc). */
static const weft_pc_train_op_t cpu_only_train_ops[] = {
    {"ApplyAdagradV2", WEFT_PC_TRAIN_ADAGRAD_V2, 2, {2, 3, -1}, {"lr", "epsilon"}, 4,
     "ResourceApplyAdagradV2"},
    {"ApplyCenteredRMSProp",
     WEFT_PC_TRAIN_CENTERED_RMSPROP,
     4,
     {4, 5, 6, 7, -1},
     {"lr", "rho", "momentum", "epsilon"},
     8,
     "ResourceApplyCenteredRMSProp"},
    {"ApplyAdadelta", WEFT_PC_TRAIN_ADADELTA, 3, {3, 4, 5, -1}, {"lr", "rho", "epsilon"}, 6,
     "ResourceApplyAdadelta"},
};

weft_status_t *weft__cpu_register_update(const weft_registrar_t *reg, const char *name,
                                         const char *resource_name, weft_kernel_compute_fn compute,
                                         const void *user_data) {
  static const weft_dtype_t types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  const char *names[2] = {name, resource_name};
  for (int k = 0; k < 2 && names[k] != NULL; k++) {
    weft_cpu_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = names[k];
    spec.compute = compute;
    spec.type_attr = "T";
    spec.dtypes = types;
    spec.n_dtypes = 2;
    spec.user_data = (void *)user_data;
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  }
  return NULL;
}

static weft_status_t *register_update(const weft_registrar_t *reg, const weft_pc_train_op_t *op) {
  return weft__cpu_register_update(reg, op->name, op->resource_name, k_train, op);
}

weft_status_t *weft__cpu_register_train(const weft_registrar_t *reg) {
  static const weft_dtype_t types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  for (size_t i = 0; i < WEFT_PC_TRAIN_N_OPS; i++)
    WEFT_RETURN_IF_ERROR(register_update(reg, &weft_pc_train_ops[i]));
  for (size_t i = 0; i < sizeof cpu_only_train_ops / sizeof cpu_only_train_ops[0]; i++)
    WEFT_RETURN_IF_ERROR(register_update(reg, &cpu_only_train_ops[i]));
  static const struct {
    const char *op;
    weft_kernel_compute_fn fn;
  } accumulator_ops[] = {{"WeftAccumulatorApply", k_accumulator_apply},
                         {"WeftAccumulatorTake", k_accumulator_take}};
  for (size_t i = 0; i < sizeof accumulator_ops / sizeof accumulator_ops[0]; i++) {
    weft_cpu_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = accumulator_ops[i].op;
    spec.compute = accumulator_ops[i].fn;
    spec.type_attr = "T";
    spec.dtypes = types;
    spec.n_dtypes = 2;
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  }
  return NULL;
}
