/* state_kernels.c: the kernels that produce or pass values without computing on them (Const,
 * Identity and its kin, NoOp) and TensorFlow's reference variables (VariableV2,
 * IsVariableInitialized, Assign, AssignAdd, AssignSub). Their logic (locking, the shape and
 * dtype rules, the errors) is the same on every device; the few steps that touch device memory
 * come from the plugin's weft_pc_state_ops_t, passed as the kernel's user_data. */
#include <string.h>

#include "plugin_common.h"

#define H weft_pc_host

/* ---------------------------------------------------------------------------------------------
 * Values */

weft_status_t *weft_pc_k_const(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_output_from_attr(ctx, 0, "value");
}

weft_status_t *weft_pc_k_forward(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_outputs(ctx);
  for (int i = 0; i < n; i++) {
    weft_tensor_view_t in;
    WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, i, &in));
    WEFT_RETURN_IF_ERROR(H->kernel_forward_input(ctx, i, i, in.rank, in.dims));
  }
  return NULL;
}

weft_status_t *weft_pc_k_noop(weft_kernel_ctx_t *ctx, void *state) {
  (void)ctx;
  (void)state;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

weft_status_t *weft_pc_k_variable(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_variable(ctx);
}

/* The value behind ref input 0. *initialised is false (and *cur untouched) for a variable never
 * assigned, which is no error here: the host reports it as FAILED_PRECONDITION. */
static weft_status_t *ref_value(weft_kernel_ctx_t *ctx, weft_tensor_view_t *cur,
                                bool *initialised) {
  memset(cur, 0, sizeof *cur);
  cur->struct_size = sizeof *cur;
  weft_status_t *s = H->kernel_ref_input(ctx, 0, cur);
  *initialised = s == NULL;
  if (s == NULL) return NULL;
  if (H->status_code(s) != WEFT_FAILED_PRECONDITION) return s;
  H->status_free(s);
  return NULL;
}

weft_status_t *weft_pc_k_is_variable_initialized(weft_kernel_ctx_t *ctx, void *state) {
  const weft_pc_state_ops_t *ops = state;
  weft_tensor_view_t cur, out;
  bool initialised;
  WEFT_RETURN_IF_ERROR(ref_value(ctx, &cur, &initialised));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &out));
  return ops->set_bool(ctx, &out, initialised);
}

static weft_status_t *assign_locked(weft_kernel_ctx_t *ctx, const weft_pc_state_ops_t *ops,
                                    const weft_tensor_view_t *value, bool validate_shape) {
  if (validate_shape) {
    weft_tensor_view_t old;
    bool initialised;
    WEFT_RETURN_IF_ERROR(ref_value(ctx, &old, &initialised));
    /* A variable not initialised yet may take any shape as its first value. */
    if (initialised && !weft_pc_same_shape(&old, value)) {
      weft_pc_shape_pair_t s;
      weft_pc_shape_pair(&s, &old, value);
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Assign requires shapes of both tensors to match. lhs shape= %s "
                           "rhs shape= %s", s.a, s.b);
    }
  }
  weft_tensor_view_t dst;
  memset(&dst, 0, sizeof dst);
  dst.struct_size = sizeof dst;
  WEFT_RETURN_IF_ERROR(H->kernel_ref_assign(ctx, 0, value->dtype, value->rank, value->dims, &dst));
  if (dst.data == value->data) return NULL; /* the variable already holds this buffer */
  return ops->copy(ctx, &dst, value);
}

weft_status_t *weft_pc_k_assign(weft_kernel_ctx_t *ctx, void *state) {
  const weft_pc_state_ops_t *ops = state;
  weft_tensor_view_t value;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &value));
  bool validate = weft_pc_attr_bool(ctx, "validate_shape", true);
  bool lock = weft_pc_attr_bool(ctx, "use_locking", true);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = assign_locked(ctx, ops, &value, validate);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

static weft_status_t *update_locked(weft_kernel_ctx_t *ctx, const weft_pc_state_ops_t *ops,
                                    const weft_tensor_view_t *value, bool sub) {
  weft_tensor_view_t var;
  memset(&var, 0, sizeof var);
  var.struct_size = sizeof var;
  WEFT_RETURN_IF_ERROR(H->kernel_ref_input(ctx, 0, &var));
  if (!weft_pc_same_shape(&var, value)) {
    weft_pc_shape_pair_t s;
    weft_pc_shape_pair(&s, &var, value);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Cannot update variable with shape %s using a Tensor with shape %s, "
                         "shapes must be equal.", s.a, s.b);
  }
  if (var.dtype != value->dtype)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Cannot update a %s variable with a %s value",
                         weft_pc_dtype_name(var.dtype), weft_pc_dtype_name(value->dtype));
  return ops->update(ctx, &var, value, sub);
}

/* AssignAdd and AssignSub: unlike Assign, they lock only when asked (TensorFlow's default). */
static weft_status_t *assign_update(weft_kernel_ctx_t *ctx, const weft_pc_state_ops_t *ops,
                                    bool sub) {
  weft_tensor_view_t value;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &value));
  bool lock = weft_pc_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = update_locked(ctx, ops, &value, sub);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

weft_status_t *weft_pc_k_assign_add(weft_kernel_ctx_t *ctx, void *state) {
  return assign_update(ctx, state, false);
}

weft_status_t *weft_pc_k_assign_sub(weft_kernel_ctx_t *ctx, void *state) {
  return assign_update(ctx, state, true);
}
