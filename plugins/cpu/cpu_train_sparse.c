/* cpu_train_sparse.c: the CPU kernels of TensorFlow's FTRL and proximal Adagrad updates
 * (ApplyFtrl, ApplyFtrlV2, ApplyProximalAdagrad) and sparse updates (SparseApplyAdagrad,
 * SparseApplyAdagradV2, SparseApplyMomentum, SparseApplyFtrl, SparseApplyFtrlV2,
 * SparseApplyProximalAdagrad), each also registered under its Resource* name (the host
 * resolves a handle to its variable, as for cpu_train.c's kernels). The formulas and error texts
 * are those of tensorflow/core/kernels/training_ops.cc. A sparse update changes the rows
 * indices[i] of the variable and its slots by row i of grad, in order (a repeated index is
 * updated once per occurrence); every index is checked before any row changes, so a bad index
 * leaves the variable as it was. FtrlV2's accumulator adds the square of the plain gradient
 * and its linear term the gradient with shrinkage (TensorFlow's current kernels). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

typedef enum sp_kind {
  SP_ADAGRAD,
  SP_ADAGRAD_V2,
  SP_MOMENTUM,
  SP_FTRL,
  SP_FTRL_V2,
  SP_PROX_ADAGRAD
} sp_kind_t;

/* Where an op's operands are. Scalar slots: lr, then epsilon (Adagrad V2), momentum, or l1, l2,
 * l2_shrinkage, lr_power (FTRL); -1 where the op has none. */
typedef struct sp_op {
  const char *name, *resource_name;
  sp_kind_t kind;
  int n_refs;
  int grad, indices; /* indices -1: a dense update */
  int lr, eps, momentum, l1, l2, shrinkage, lr_power;
} sp_op_t;

static const sp_op_t sp_ops[] = {
    {"ApplyFtrl", "ResourceApplyFtrl", SP_FTRL, 3, 3, -1, 4, -1, -1, 5, 6, -1, 7},
    {"ApplyFtrlV2", "ResourceApplyFtrlV2", SP_FTRL_V2, 3, 3, -1, 4, -1, -1, 5, 6, 7, 8},
    {"SparseApplyAdagrad", "ResourceSparseApplyAdagrad", SP_ADAGRAD, 2, 3, 4, 2, -1, -1, -1, -1,
     -1, -1},
    {"SparseApplyAdagradV2", "ResourceSparseApplyAdagradV2", SP_ADAGRAD_V2, 2, 4, 5, 2, 3, -1, -1,
     -1, -1, -1},
    {"SparseApplyMomentum", "ResourceSparseApplyMomentum", SP_MOMENTUM, 2, 3, 4, 2, -1, 5, -1, -1,
     -1, -1},
    {"SparseApplyFtrl", "ResourceSparseApplyFtrl", SP_FTRL, 3, 3, 4, 5, -1, -1, 6, 7, -1, 8},
    {"SparseApplyFtrlV2", "ResourceSparseApplyFtrlV2", SP_FTRL_V2, 3, 3, 4, 5, -1, -1, 6, 7, 8,
     9},
    {"ApplyProximalAdagrad", "ResourceApplyProximalAdagrad", SP_PROX_ADAGRAD, 2, 5, -1, 2, -1,
     -1, 3, 4, -1, -1},
    {"SparseApplyProximalAdagrad", "ResourceSparseApplyProximalAdagrad", SP_PROX_ADAGRAD, 2, 5, 6,
     2, -1, -1, 3, 4, -1, -1},
};

typedef struct sp_args {
  double lr, eps, momentum, l1, l2, shrinkage, lr_power;
  bool update_slots, nesterov, multiply_linear_by_lr;
} sp_args_t;

/* The scalar input `index` (named `name`): must be rank 0. `cond` (NULL: none) is the
 * condition FTRL's hyper-parameters must meet, `what` its wording ("positive"). */
static weft_status_t *scalar(weft_kernel_ctx_t *ctx, int index, const char *name,
                             const char *what, int sign, double *out) {
  if (index < 0) return NULL;
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &v));
  double x = v.num_elements == 1 ? weft__cpu_get_double(&v, 0) : 0;
  bool ok = v.rank == 0 && v.num_elements == 1 &&
            (sign == 0 || (sign == 1 && x > 0) || (sign == 2 && x >= 0) || (sign == -2 && x <= 0));
  if (!ok) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s is not a %s%sscalar: %s", name,
                           what ? what : "", what ? " " : "",
                           weft__cpu_shape_str(v.rank, v.dims, s, sizeof s));
  }
  *out = x;
  return NULL;
}

static weft_status_t *read_scalars(weft_kernel_ctx_t *ctx, const sp_op_t *op, sp_args_t *a) {
  /* FTRL's and proximal Adagrad's CPU kernels insist on a positive lr. */
  bool pos = op->kind == SP_FTRL || op->kind == SP_FTRL_V2 || op->kind == SP_PROX_ADAGRAD;
  WEFT_RETURN_IF_ERROR(scalar(ctx, op->lr, "lr", pos ? "positive" : NULL, pos ? 1 : 0, &a->lr));
  WEFT_RETURN_IF_ERROR(scalar(ctx, op->eps, "epsilon", NULL, 0, &a->eps));
  WEFT_RETURN_IF_ERROR(scalar(ctx, op->momentum, "momentum", NULL, 0, &a->momentum));
  WEFT_RETURN_IF_ERROR(
      scalar(ctx, op->l1, "l1 regularization strength", "non-negative", 2, &a->l1));
  WEFT_RETURN_IF_ERROR(
      scalar(ctx, op->l2, "l2 regularization strength", "non-negative", 2, &a->l2));
  WEFT_RETURN_IF_ERROR(scalar(ctx, op->shrinkage, "l2 shrinkage regularization strength",
                              "non-negative", 2, &a->shrinkage));
  WEFT_RETURN_IF_ERROR(scalar(ctx, op->lr_power, "lr_power", "non-positive", -2, &a->lr_power));
  a->update_slots = weft__cpu_attr_bool(ctx, "update_slots", true);
  a->nesterov = weft__cpu_attr_bool(ctx, "use_nesterov", false);
  a->multiply_linear_by_lr = weft__cpu_attr_bool(ctx, "multiply_linear_by_lr", false);
  return NULL;
}

/* accum^-lr_power, with TensorFlow's square-root path for lr_power -0.5. */
static double ftrl_pow(double accum, double lr_power) {
  return lr_power == -0.5 ? sqrt(accum) : pow(accum, -lr_power);
}

/* One element: var v, slots s1 (accum) and s2 (linear), gradient g. */
static void update(const sp_op_t *op, const sp_args_t *a, double *v, double *s1, double *s2,
                   double g) {
  switch (op->kind) {
    case SP_ADAGRAD:
    case SP_ADAGRAD_V2:
      if (a->update_slots) *s1 += g * g;
      *v -= op->kind == SP_ADAGRAD ? a->lr * g / sqrt(*s1) : a->lr * g / (sqrt(*s1) + a->eps);
      break;
    case SP_MOMENTUM:
      *s1 = *s1 * a->momentum + g;
      *v -= a->nesterov ? g * a->lr + *s1 * a->momentum * a->lr : a->lr * *s1;
      break;
    case SP_FTRL:
    case SP_FTRL_V2: {
      double gs = op->kind == SP_FTRL_V2 ? g + 2 * a->shrinkage * *v : g;
      double na = *s1 + g * g;
      double sigma = ftrl_pow(na, a->lr_power) - ftrl_pow(*s1, a->lr_power);
      bool m = a->multiply_linear_by_lr;
      *s2 += m ? gs * a->lr - sigma * *v : gs - sigma / a->lr * *v;
      double l1 = m ? a->l1 * a->lr : a->l1;
      double quad = m ? ftrl_pow(na, a->lr_power) + 2 * a->l2 * a->lr
                      : ftrl_pow(na, a->lr_power) / a->lr + 2 * a->l2;
      double clipped = fmax(fmin(*s2, l1), -l1);
      *v = (clipped - *s2) / quad;
      *s1 = na;
      break;
    }
    case SP_PROX_ADAGRAD: {
      /* FOBOS with Adagrad's per-element rate (TensorFlow's ApplyProximalAdagrad functor):
       * the gradient step, then the l1 soft threshold and the l2 shrink at that rate. */
      *s1 += g * g;
      double rate = a->lr / sqrt(*s1);
      double prox = *v - g * rate;
      double shrink = 1.0 + a->l2 * rate;
      if (a->l1 > 0) {
        double mag = fmax(fabs(prox) - rate * a->l1, 0.0);
        *v = (prox > 0 ? 1.0 : prox < 0 ? -1.0 : 0.0) * mag / shrink;
      } else {
        *v = prox / shrink;
      }
      break;
    }
  }
}

/* Element k of the variable (and its slots) updated by element gk of grad. */
static void update_at(const sp_op_t *op, const sp_args_t *a, const weft_tensor_view_t *refs,
                      const weft_tensor_view_t *grad, int64_t k, int64_t gk) {
  weft_dtype_t dt = refs[0].dtype;
  double v = weft__cpu_load_f(dt, refs[0].data, k);
  double s1 = weft__cpu_load_f(dt, refs[1].data, k);
  double s2 = op->n_refs > 2 ? weft__cpu_load_f(dt, refs[2].data, k) : 0;
  update(op, a, &v, &s1, &s2, weft__cpu_load_f(dt, grad->data, gk));
  weft__cpu_store_f(dt, refs[0].data, k, v);
  weft__cpu_store_f(dt, refs[1].data, k, s1);
  if (op->n_refs > 2) weft__cpu_store_f(dt, refs[2].data, k, s2);
}

static bool same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  return a->rank == b->rank &&
         (a->rank == 0 || memcmp(a->dims, b->dims, sizeof(int64_t) * (size_t)a->rank) == 0);
}

static weft_status_t *shape_error(weft_kernel_ctx_t *ctx, const char *what,
                                  const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s",
                         what, weft__cpu_shape_str(a->rank, a->dims, s0, sizeof s0),
                         weft__cpu_shape_str(b->rank, b->dims, s1, sizeof s1));
}

/* The sparse update's checks (TensorFlow's, in its order) and rows; refs and scalars read. */
static weft_status_t *sparse_update(weft_kernel_ctx_t *ctx, const sp_op_t *op,
                                    const weft_tensor_view_t *refs, const weft_tensor_view_t *grad,
                                    const sp_args_t *a) {
  const weft_tensor_view_t *var = &refs[0];
  weft_tensor_view_t idx;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, op->indices, &idx));
  if (idx.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices must be one-dimensional");
  if (grad->rank != var->rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "grad must have the rank of var (%d), not %d", var->rank, grad->rank);
  int64_t inner = 1;
  for (int d = 1; d < var->rank; d++) {
    if (var->dims[d] != grad->dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "var and grad must match in dimension %d",
                             d);
    inner *= grad->dims[d];
  }
  int64_t n = idx.dims[0];
  if (grad->dims[0] != n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "grad must be the same size as indices in the first dimension.");
  if (inner <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Inner dimension should be greater than zero.");
  for (int64_t i = 0; i < n; i++) {
    int64_t r = weft__cpu_index_at(&idx, i);
    if (r < 0 || r >= var->dims[0])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Index %" PRId64 " at offset %" PRId64
                             " in indices is out of range",
                             r, i);
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t r = weft__cpu_index_at(&idx, i);
    for (int64_t j = 0; j < inner; j++) update_at(op, a, refs, grad, r * inner + j, i * inner + j);
  }
  return NULL;
}

static weft_status_t *apply(weft_kernel_ctx_t *ctx, const sp_op_t *op) {
  static const char *const slot_names[3] = {"var", "accum", "linear"};
  weft_tensor_view_t refs[3], grad;
  memset(refs, 0, sizeof refs);
  for (int r = 0; r < op->n_refs; r++) {
    refs[r].struct_size = sizeof refs[r];
    WEFT_RETURN_IF_ERROR(H->kernel_ref_input(ctx, r, &refs[r]));
  }
  if (refs[0].dtype != WEFT_DT_FLOAT && refs[0].dtype != WEFT_DT_DOUBLE)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(refs[0].dtype));
  for (int r = 1; r < op->n_refs; r++) {
    if (!same_shape(&refs[0], &refs[r])) return shape_error(ctx, slot_names[r], &refs[0], &refs[r]);
    if (refs[r].dtype != refs[0].dtype)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "var is %s but %s is %s",
                             weft__cpu_dtype_name(refs[0].dtype), slot_names[r],
                             weft__cpu_dtype_name(refs[r].dtype));
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, op->grad, &grad));
  if (grad.dtype != refs[0].dtype)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "var is %s but grad is %s",
                           weft__cpu_dtype_name(refs[0].dtype), weft__cpu_dtype_name(grad.dtype));
  if (op->indices >= 0 && refs[0].rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "var must be at least 1 dimensional");
  if (op->indices < 0 && !same_shape(&refs[0], &grad))
    return shape_error(ctx, "grad", &refs[0], &grad);
  sp_args_t a;
  WEFT_RETURN_IF_ERROR(read_scalars(ctx, op, &a));
  if (op->indices >= 0) return sparse_update(ctx, op, refs, &grad, &a);
  for (int64_t k = 0; k < refs[0].num_elements; k++) update_at(op, &a, refs, &grad, k, k);
  return NULL;
}

static weft_status_t *k_sparse_apply(weft_kernel_ctx_t *ctx, void *state) {
  const sp_op_t *op = state; /* the registration's user_data */
  bool lock = weft__cpu_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = apply(ctx, op);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  return H->kernel_num_outputs(ctx) > 0 ? H->kernel_forward_ref(ctx, 0, 0) : NULL;
}

weft_status_t *weft__cpu_register_train_sparse(const weft_registrar_t *reg) {
  for (size_t i = 0; i < sizeof sp_ops / sizeof sp_ops[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cpu_register_update(reg, sp_ops[i].name, sp_ops[i].resource_name,
                                                   k_sparse_apply, &sp_ops[i]));
  return NULL;
}
