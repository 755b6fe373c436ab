/* cpu_train.c: the optimizer update kernels on reference variables, with TensorFlow's update
 * formulas: ApplyGradientDescent, ApplyMomentum (use_nesterov), ApplyAdagrad (update_slots),
 * ApplyAdam (use_nesterov) and ApplyRMSProp. Each updates the variable and its slots in place
 * (under the variables' locks when use_locking) and outputs the variable's reference. */
#include <string.h>
#include <tgmath.h>

#include "cpu_internal.h"

#define H weft__cpu_host

typedef enum train_kind {
  TRAIN_SGD,
  TRAIN_MOMENTUM,
  TRAIN_ADAGRAD,
  TRAIN_ADAM,
  TRAIN_RMSPROP,
} train_kind_t;

typedef struct train_op {
  const char *name;
  train_kind_t kind;
  int n_refs;           /* var and slots: inputs [0, n_refs) */
  const char *scalars[7]; /* the scalar inputs after the refs, in order, NULL-terminated */
  int grad_input;       /* index of grad (or delta) */
} train_op_t;

static const train_op_t train_ops[] = {
    {"ApplyGradientDescent", TRAIN_SGD, 1, {"alpha", NULL}, 2},
    {"ApplyMomentum", TRAIN_MOMENTUM, 2, {"lr", NULL}, 3}, /* momentum is input 4 */
    {"ApplyAdagrad", TRAIN_ADAGRAD, 2, {"lr", NULL}, 3},
    {"ApplyAdam",
     TRAIN_ADAM,
     3,
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", NULL},
     9},
    {"ApplyRMSProp", TRAIN_RMSPROP, 3, {"lr", "rho", "momentum", "epsilon", NULL}, 7},
};

typedef struct train_job {
  train_kind_t kind;
  weft_dtype_t dtype;
  void *var, *s1, *s2; /* slots */
  const void *grad;
  double c[8];         /* the scalar inputs and derived constants */
  bool nesterov, update_slots;
} train_job_t;

#define TRAIN_BODY(T)                                                                   \
  {                                                                                     \
    T *restrict var = (T *)j->var;                                                      \
    T *restrict s1 = (T *)j->s1;                                                        \
    T *restrict s2 = (T *)j->s2;                                                        \
    const T *restrict g = (const T *)j->grad;                                           \
    switch (j->kind) {                                                                  \
      case TRAIN_SGD: {                                                                 \
        const T alpha = (T)j->c[0];                                                     \
        for (int64_t i = b; i < e; i++) var[i] -= alpha * g[i];                         \
        break;                                                                          \
      }                                                                                 \
      case TRAIN_MOMENTUM: {                                                            \
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
      case TRAIN_ADAGRAD: {                                                             \
        const T lr = (T)j->c[0];                                                        \
        for (int64_t i = b; i < e; i++) {                                               \
          if (j->update_slots) s1[i] += g[i] * g[i];                                    \
          var[i] -= lr * g[i] / sqrt(s1[i]);                                            \
        }                                                                               \
        break;                                                                          \
      }                                                                                 \
      case TRAIN_ADAM: {                                                                \
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
      case TRAIN_RMSPROP: {                                                             \
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

static weft_status_t *read_scalar(weft_kernel_ctx_t *ctx, int index, const char *name,
                                  weft_dtype_t dtype, double *out) {
  weft_tensor_view_t v;
  CPU_TRY(weft__cpu_input(ctx, index, &v));
  if (v.num_elements != 1 || v.rank != 0 || v.dtype != dtype) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s is not a %s scalar: %s %s", name,
                           weft__cpu_dtype_name(dtype), weft__cpu_dtype_name(v.dtype),
                           weft__cpu_shape_str(v.rank, v.dims, s, sizeof s));
  }
  *out = weft__cpu_get_double(&v, 0);
  return NULL;
}

static weft_status_t *train_locked(weft_kernel_ctx_t *ctx, const train_op_t *op) {
  static const char *const slot_names[3] = {"var", "accum", "slot"};
  weft_tensor_view_t refs[3], grad;
  for (int r = 0; r < op->n_refs; r++) {
    memset(&refs[r], 0, sizeof refs[r]);
    refs[r].struct_size = sizeof refs[r];
    CPU_TRY(H->kernel_ref_input(ctx, r, &refs[r]));
  }
  CPU_TRY(weft__cpu_input(ctx, op->grad_input, &grad));
  const weft_tensor_view_t *var = &refs[0];
  char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
  if (var->dtype != WEFT_DT_FLOAT && var->dtype != WEFT_DT_DOUBLE)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(var->dtype));
  for (int r = 1; r < op->n_refs; r++)
    if (!same_shape(var, &refs[r]) || refs[r].dtype != var->dtype)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "var and %s do not have the same shape%s %s",
                             r == 1 ? slot_names[1] : slot_names[2],
                             weft__cpu_shape_str(var->rank, var->dims, s0, sizeof s0),
                             weft__cpu_shape_str(refs[r].rank, refs[r].dims, s1, sizeof s1));
  if (!same_shape(var, &grad) || grad.dtype != var->dtype)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "var and %s do not have the same shape%s %s",
                           op->kind == TRAIN_SGD ? "delta" : "grad",
                           weft__cpu_shape_str(var->rank, var->dims, s0, sizeof s0),
                           weft__cpu_shape_str(grad.rank, grad.dims, s1, sizeof s1));
  train_job_t j;
  memset(&j, 0, sizeof j);
  j.kind = op->kind;
  j.dtype = var->dtype;
  j.var = var->data;
  j.s1 = op->n_refs > 1 ? refs[1].data : NULL;
  j.s2 = op->n_refs > 2 ? refs[2].data : NULL;
  j.grad = grad.data;
  int k = 0;
  for (; op->scalars[k] != NULL; k++)
    CPU_TRY(read_scalar(ctx, op->n_refs + k, op->scalars[k], var->dtype, &j.c[k]));
  if (op->kind == TRAIN_MOMENTUM) CPU_TRY(read_scalar(ctx, 4, "momentum", var->dtype, &j.c[1]));
  if (op->kind == TRAIN_ADAM) /* lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t) */
    j.c[6] = j.c[2] * sqrt(1.0 - j.c[1]) / (1.0 - j.c[0]);
  j.nesterov = weft__cpu_attr_bool(ctx, "use_nesterov", false);
  j.update_slots = weft__cpu_attr_bool(ctx, "update_slots", true);
  weft__cpu_parallel(ctx, var->num_elements, op->kind == TRAIN_SGD ? 2 : 20, train_range, &j);
  return NULL;
}

static weft_status_t *k_train(weft_kernel_ctx_t *ctx, void *state) {
  const train_op_t *op = state;
  /* Only the variable's lock: the host's ref locks need not be re-entrant, and a variable's
   * slots are only ever touched by its own update ops. */
  bool lock = weft__cpu_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = train_locked(ctx, op);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  CPU_TRY(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

weft_status_t *weft__cpu_register_train(const weft_registrar_t *reg) {
  static const weft_dtype_t types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  for (size_t i = 0; i < sizeof train_ops / sizeof train_ops[0]; i++) {
    weft_cpu_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = train_ops[i].name;
    spec.compute = k_train;
    spec.type_attr = "T";
    spec.dtypes = types;
    spec.n_dtypes = 2;
    spec.user_data = (void *)&train_ops[i];
    CPU_TRY(weft__cpu_register(reg, &spec));
  }
  return NULL;
}
