/* ops_sparse_apply.c: TensorFlow's FTRL and proximal Adagrad updates and the sparse optimizer
 * updates (tensorflow/core/ops/training_ops.cc): ApplyFtrl, ApplyFtrlV2, ApplyProximalAdagrad,
 * SparseApplyAdagrad, SparseApplyAdagradV2, SparseApplyMomentum, SparseApplyFtrl,
 * SparseApplyFtrlV2, SparseApplyProximalAdagrad and their Resource* twins, with TensorFlow's
 * args, attrs and shape functions. A sparse update changes only the rows of the variable that
 * `indices` names, grad holding one row per index (an embedding's IndexedSlices gradient).
 * TensorFlow has no SparseApplyGradientDescent or SparseApplyAdam (a sparse SGD step is
 * ResourceScatterAdd). Kernels: plugins/cpu/cpu_train_sparse.c. */
#include "ops_shape.h"

/* One letter per input: 'h' a resource handle, 'v' the variable's reference, 's' a tensor
 * shaped like the variable, 'k' a scalar, 'g' a sparse gradient (its rows the indices', the
 * rest the variable's), 'i' the indices (a vector). A ref op outputs the variable's shape. */
static weft_status_t *update_shape(weft_shape_ctx_t *ctx, const char *pattern) {
  weft__shape_t var = {.rank = -1}, grad = {.rank = -1}, indices = {.rank = -1};
  bool ref = false;
  for (int i = 0; pattern[i] != '\0'; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    char what[64];
    g_snprintf(what, sizeof what, "input %d", i);
    switch (pattern[i]) {
      case 'h':
      case 'k': WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, what)); break;
      case 'i':
        WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 1, "indices"));
        indices = s;
        break;
      case 'g':
        WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &s, 1, "grad"));
        grad = s;
        break;
      default:
        ref = ref || pattern[i] == 'v';
        g_snprintf(what, sizeof what, "var (input 0) and input %d", i);
        WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &var, &s, &var, what));
    }
  }
  if (grad.rank >= 1 && indices.rank == 1 &&
      !weft__sh_merge_dim(grad.dims[0], indices.dims[0], &grad.dims[0]))
    return weft__sh_error(ctx, "grad must be the same size as indices in the first dimension.");
  if (grad.rank >= 1 && var.rank >= 0) {
    if (grad.rank != var.rank)
      return weft__sh_error(ctx, "var and grad must have the same rank: %d and %d", var.rank,
                            grad.rank);
    for (int d = 1; d < var.rank; d++)
      if (!weft__sh_merge_dim(var.dims[d], grad.dims[d], &var.dims[d]))
        return weft__sh_error(ctx, "var and grad must match in dimension %d", d);
  }
  return ref ? weft__sh_output(ctx, 0, &var) : NULL;
}

#define UPDATE_SHAPE(fn, pattern) \
  static weft_status_t *fn(weft_shape_ctx_t *ctx) { return update_shape(ctx, pattern); }
UPDATE_SHAPE(ftrl_shape, "vssskkkk")
UPDATE_SHAPE(ftrl_v2_shape, "vssskkkkk")
UPDATE_SHAPE(res_ftrl_shape, "hhhskkkk")
UPDATE_SHAPE(res_ftrl_v2_shape, "hhhskkkkk")
UPDATE_SHAPE(sparse_adagrad_shape, "vskgi")
UPDATE_SHAPE(sparse_adagrad_v2_shape, "vskkgi")
UPDATE_SHAPE(sparse_momentum_shape, "vskgik")
UPDATE_SHAPE(sparse_ftrl_shape, "vssgikkkk")
UPDATE_SHAPE(sparse_ftrl_v2_shape, "vssgikkkkk")
UPDATE_SHAPE(res_sparse_adagrad_shape, "hhkgi")
UPDATE_SHAPE(res_sparse_adagrad_v2_shape, "hhkkgi")
UPDATE_SHAPE(res_sparse_momentum_shape, "hhkgik")
UPDATE_SHAPE(res_sparse_ftrl_shape, "hhhgikkkk")
UPDATE_SHAPE(res_sparse_ftrl_v2_shape, "hhhgikkkkk")
UPDATE_SHAPE(prox_adagrad_shape, "vskkks")
UPDATE_SHAPE(res_prox_adagrad_shape, "hhkkks")
UPDATE_SHAPE(sparse_prox_adagrad_shape, "vskkkgi")
UPDATE_SHAPE(res_sparse_prox_adagrad_shape, "hhkkkgi")
#undef UPDATE_SHAPE

#define LOCKING "T: numbertype", "use_locking: bool = false"
#define SPARSE "T: numbertype", "Tindices: {int32, int64}", "use_locking: bool = false"
#define FTRL_ATTRS WEFT__SPECS(LOCKING, "multiply_linear_by_lr: bool = false")
#define SPARSE_FTRL_ATTRS WEFT__SPECS(SPARSE, "multiply_linear_by_lr: bool = false")
#define OUT WEFT__SPECS("out: Ref(T)")

const weft_op_def_t weft__ops_sparse_apply[] = {
    WEFT__OP("ApplyFtrl",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "linear: Ref(T)", "grad: T", "lr: T",
                         "l1: T", "l2: T", "lr_power: T"),
             OUT, FTRL_ATTRS, 1, ftrl_shape),
    WEFT__OP("ApplyFtrlV2",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "linear: Ref(T)", "grad: T", "lr: T",
                         "l1: T", "l2: T", "l2_shrinkage: T", "lr_power: T"),
             OUT, FTRL_ATTRS, 1, ftrl_v2_shape),
    WEFT__OP("ResourceApplyFtrl",
             WEFT__SPECS("var: string", "accum: string", "linear: string", "grad: T",
                         "lr: T", "l1: T", "l2: T", "lr_power: T"),
             WEFT__NO_SPECS, FTRL_ATTRS, 1, res_ftrl_shape),
    WEFT__OP("ResourceApplyFtrlV2",
             WEFT__SPECS("var: string", "accum: string", "linear: string", "grad: T",
                         "lr: T", "l1: T", "l2: T", "l2_shrinkage: T", "lr_power: T"),
             WEFT__NO_SPECS, FTRL_ATTRS, 1, res_ftrl_v2_shape),
    WEFT__OP("SparseApplyAdagrad",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T",
                         "indices: Tindices"),
             OUT, WEFT__SPECS(SPARSE, "update_slots: bool = true"), 1, sparse_adagrad_shape),
    WEFT__OP("SparseApplyAdagradV2",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "epsilon: T", "grad: T",
                         "indices: Tindices"),
             OUT, WEFT__SPECS(SPARSE, "update_slots: bool = true"), 1, sparse_adagrad_v2_shape),
    WEFT__OP("SparseApplyMomentum",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "grad: T",
                         "indices: Tindices", "momentum: T"),
             OUT, WEFT__SPECS(SPARSE, "use_nesterov: bool = false"), 1, sparse_momentum_shape),
    WEFT__OP("SparseApplyFtrl",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "linear: Ref(T)", "grad: T",
                         "indices: Tindices", "lr: T", "l1: T", "l2: T", "lr_power: T"),
             OUT, SPARSE_FTRL_ATTRS, 1, sparse_ftrl_shape),
    WEFT__OP("SparseApplyFtrlV2",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "linear: Ref(T)", "grad: T",
                         "indices: Tindices", "lr: T", "l1: T", "l2: T", "l2_shrinkage: T",
                         "lr_power: T"),
             OUT, SPARSE_FTRL_ATTRS, 1, sparse_ftrl_v2_shape),
    WEFT__OP("ResourceSparseApplyAdagrad",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "grad: T",
                         "indices: Tindices"),
             WEFT__NO_SPECS, WEFT__SPECS(SPARSE, "update_slots: bool = true"), 1,
             res_sparse_adagrad_shape),
    WEFT__OP("ResourceSparseApplyAdagradV2",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "epsilon: T", "grad: T",
                         "indices: Tindices"),
             WEFT__NO_SPECS, WEFT__SPECS(SPARSE, "update_slots: bool = true"), 1,
             res_sparse_adagrad_v2_shape),
    WEFT__OP("ResourceSparseApplyMomentum",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "grad: T",
                         "indices: Tindices", "momentum: T"),
             WEFT__NO_SPECS, WEFT__SPECS(SPARSE, "use_nesterov: bool = false"), 1,
             res_sparse_momentum_shape),
    WEFT__OP("ResourceSparseApplyFtrl",
             WEFT__SPECS("var: string", "accum: string", "linear: string", "grad: T",
                         "indices: Tindices", "lr: T", "l1: T", "l2: T", "lr_power: T"),
             WEFT__NO_SPECS, SPARSE_FTRL_ATTRS, 1, res_sparse_ftrl_shape),
    WEFT__OP("ResourceSparseApplyFtrlV2",
             WEFT__SPECS("var: string", "accum: string", "linear: string", "grad: T",
                         "indices: Tindices", "lr: T", "l1: T", "l2: T", "l2_shrinkage: T",
                         "lr_power: T"),
             WEFT__NO_SPECS, SPARSE_FTRL_ATTRS, 1, res_sparse_ftrl_v2_shape),
    WEFT__OP("ApplyProximalAdagrad",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "l1: T", "l2: T", "grad: T"),
             OUT, WEFT__SPECS(LOCKING), 1, prox_adagrad_shape),
    WEFT__OP("ResourceApplyProximalAdagrad",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "l1: T", "l2: T", "grad: T"),
             WEFT__NO_SPECS, WEFT__SPECS(LOCKING), 1, res_prox_adagrad_shape),
    WEFT__OP("SparseApplyProximalAdagrad",
             WEFT__SPECS("var: Ref(T)", "accum: Ref(T)", "lr: T", "l1: T", "l2: T", "grad: T",
                         "indices: Tindices"),
             OUT, WEFT__SPECS(SPARSE), 1, sparse_prox_adagrad_shape),
    WEFT__OP("ResourceSparseApplyProximalAdagrad",
             WEFT__SPECS("var: string", "accum: string", "lr: T", "l1: T", "l2: T", "grad: T",
                         "indices: Tindices"),
             WEFT__NO_SPECS, WEFT__SPECS(SPARSE), 1, res_sparse_prox_adagrad_shape),
    WEFT__OPS_END,
};
