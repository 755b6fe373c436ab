/* cpu_state.c: kernels that produce or pass values without computing on them (Const, Identity
 * and its kin, NoOp, PlaceholderWithDefault, Placeholder's "must feed" error) and the
 * reference-variable kernels (VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized). */
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * Values */

static weft_status_t *k_const(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_output_from_attr(ctx, 0, "value");
}

/* Output i is input i with no copy: Identity, StopGradient, Snapshot, IdentityN, ... */
static weft_status_t *k_forward_all(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_outputs(ctx);
  for (int i = 0; i < n; i++) {
    weft_tensor_view_t in;
    CPU_TRY(weft__cpu_input(ctx, i, &in));
    CPU_TRY(H->kernel_forward_input(ctx, i, i, in.rank, in.dims));
  }
  return NULL;
}

static weft_status_t *k_noop(weft_kernel_ctx_t *ctx, void *state) {
  (void)ctx;
  (void)state;
  return NULL;
}

/* Runs only when a Placeholder was not fed: TensorFlow's error. */
static weft_status_t *k_placeholder(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  weft_dtype_t dtype = WEFT_DT_INVALID;
  weft_status_t *s = H->attr_type(attrs, "dtype", &dtype);
  if (s != NULL) H->status_free(s);
  int rank = -1;
  int64_t dims[WEFT_MAX_RANK];
  s = H->attr_shape(attrs, "shape", &rank, dims);
  if (s != NULL) {
    H->status_free(s);
    rank = -1;
  }
  char shape[CPU_SHAPE_STR_LEN] = "<unknown>";
  if (rank >= 0) {
    size_t at = 0;
    at += (size_t)snprintf(shape + at, sizeof shape - at, "[");
    for (int i = 0; i < rank && at < sizeof shape; i++) {
      if (dims[i] < 0)
        at += (size_t)snprintf(shape + at, sizeof shape - at, i ? ",?" : "?");
      else
        at += (size_t)snprintf(shape + at, sizeof shape - at, i ? ",%lld" : "%lld",
                               (long long)dims[i]);
    }
    if (at < sizeof shape) snprintf(shape + at, sizeof shape - at, "]");
  }
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                         "You must feed a value for placeholder tensor '%s' with dtype %s and "
                         "shape %s",
                         H->kernel_node_name(ctx), weft__cpu_dtype_name(dtype), shape);
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

static weft_status_t *k_variable(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_variable(ctx);
}

static weft_status_t *k_is_initialized(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t cur;
  memset(&cur, 0, sizeof cur);
  cur.struct_size = sizeof cur;
  weft_status_t *s = H->kernel_ref_input(ctx, 0, &cur);
  bool initialised = true;
  if (s != NULL) {
    if (H->status_code(s) != WEFT_FAILED_PRECONDITION) return s;
    H->status_free(s);
    initialised = false;
  }
  weft_tensor_view_t out;
  CPU_TRY(weft__cpu_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &out));
  *(uint8_t *)out.data = initialised ? 1 : 0;
  return NULL;
}

static bool same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static weft_status_t *assign_locked(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *value,
                                    bool validate_shape) {
  if (validate_shape) {
    weft_tensor_view_t old;
    memset(&old, 0, sizeof old);
    old.struct_size = sizeof old;
    weft_status_t *s = H->kernel_ref_input(ctx, 0, &old);
    if (s != NULL) {
      /* Not initialised yet: any shape may become the variable's first value. */
      if (H->status_code(s) != WEFT_FAILED_PRECONDITION) return s;
      H->status_free(s);
    } else if (!same_shape(&old, value)) {
      char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Assign requires shapes of both tensors to match. lhs shape= %s "
                             "rhs shape= %s",
                             weft__cpu_shape_str(old.rank, old.dims, a, sizeof a),
                             weft__cpu_shape_str(value->rank, value->dims, b, sizeof b));
    }
  }
  weft_tensor_view_t dst;
  memset(&dst, 0, sizeof dst);
  dst.struct_size = sizeof dst;
  CPU_TRY(H->kernel_ref_assign(ctx, 0, value->dtype, value->rank, value->dims, &dst));
  if (dst.data == value->data) return NULL;
  return weft__cpu_copy_elems(ctx, &dst, 0, value, 0, value->num_elements);
}

static weft_status_t *k_assign(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t value;
  CPU_TRY(weft__cpu_input(ctx, 1, &value));
  bool validate = weft__cpu_attr_bool(ctx, "validate_shape", true);
  bool lock = weft__cpu_attr_bool(ctx, "use_locking", true);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = assign_locked(ctx, &value, validate);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  CPU_TRY(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

typedef struct update_job {
  void *var;
  const void *val;
  weft_dtype_t dtype;
  bool sub;
} update_job_t;

#define UPDATE_CASE(DT, T, UT)                                                  \
  case DT: {                                                                    \
    T *restrict v = (T *)j->var;                                                \
    const T *restrict x = (const T *)j->val;                                    \
    if (j->sub)                                                                 \
      for (int64_t i = b; i < e; i++) v[i] = (T)((UT)v[i] - (UT)x[i]);          \
    else                                                                        \
      for (int64_t i = b; i < e; i++) v[i] = (T)((UT)v[i] + (UT)x[i]);          \
    break;                                                                      \
  }

static void update_range(void *arg, int64_t b, int64_t e) {
  const update_job_t *j = arg;
  switch (j->dtype) {
    UPDATE_CASE(WEFT_DT_FLOAT, float, float)
    UPDATE_CASE(WEFT_DT_DOUBLE, double, double)
    UPDATE_CASE(WEFT_DT_INT32, int32_t, uint32_t)
    UPDATE_CASE(WEFT_DT_INT64, int64_t, uint64_t)
    UPDATE_CASE(WEFT_DT_INT8, int8_t, uint8_t)
    UPDATE_CASE(WEFT_DT_INT16, int16_t, uint16_t)
    UPDATE_CASE(WEFT_DT_UINT8, uint8_t, uint8_t)
    UPDATE_CASE(WEFT_DT_UINT16, uint16_t, uint16_t)
    UPDATE_CASE(WEFT_DT_UINT32, uint32_t, uint32_t)
    UPDATE_CASE(WEFT_DT_UINT64, uint64_t, uint64_t)
    default: break;
  }
}

static const weft_dtype_t update_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_UINT8,  WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64,
};

static weft_status_t *update_locked(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *value,
                                    bool sub) {
  weft_tensor_view_t var;
  memset(&var, 0, sizeof var);
  var.struct_size = sizeof var;
  CPU_TRY(H->kernel_ref_input(ctx, 0, &var));
  if (!same_shape(&var, value)) {
    char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Cannot update variable with shape %s using a Tensor with shape %s, "
                           "shapes must be equal.",
                           weft__cpu_shape_str(var.rank, var.dims, a, sizeof a),
                           weft__cpu_shape_str(value->rank, value->dims, b, sizeof b));
  }
  if (var.dtype != value->dtype)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Cannot update a %s variable with a %s value",
                           weft__cpu_dtype_name(var.dtype), weft__cpu_dtype_name(value->dtype));
  update_job_t j = {var.data, value->data, var.dtype, sub};
  weft__cpu_parallel(ctx, var.num_elements, 2, update_range, &j);
  return NULL;
}

static weft_status_t *k_assign_update(weft_kernel_ctx_t *ctx, void *state) {
  bool sub = state != NULL;
  weft_tensor_view_t value;
  CPU_TRY(weft__cpu_input(ctx, 1, &value));
  bool lock = weft__cpu_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = update_locked(ctx, &value, sub);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  CPU_TRY(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int sub_marker;

weft_status_t *weft__cpu_register_state(const weft_registrar_t *reg) {
  static const char *const forward_ops[] = {"Identity", "StopGradient", "PreventGradient",
                                            "Snapshot", "IdentityN", "PlaceholderWithDefault"};
  weft_cpu_kernel_spec_t spec;
  memset(&spec, 0, sizeof spec);

  spec.op = "Const";
  spec.compute = k_const;
  CPU_TRY(weft__cpu_register(reg, &spec));

  spec.compute = k_forward_all;
  for (size_t i = 0; i < sizeof forward_ops / sizeof forward_ops[0]; i++) {
    spec.op = forward_ops[i];
    CPU_TRY(weft__cpu_register(reg, &spec));
  }

  spec.op = "NoOp";
  spec.compute = k_noop;
  CPU_TRY(weft__cpu_register(reg, &spec));

  spec.op = "Placeholder";
  spec.compute = k_placeholder;
  CPU_TRY(weft__cpu_register(reg, &spec));
  spec.op = "PlaceholderV2";
  CPU_TRY(weft__cpu_register(reg, &spec));

  spec.op = "VariableV2";
  spec.compute = k_variable;
  CPU_TRY(weft__cpu_register(reg, &spec));

  spec.op = "IsVariableInitialized";
  spec.compute = k_is_initialized;
  CPU_TRY(weft__cpu_register(reg, &spec));

  spec.op = "Assign";
  spec.compute = k_assign;
  CPU_TRY(weft__cpu_register(reg, &spec));

  spec.op = "AssignAdd";
  spec.compute = k_assign_update;
  spec.type_attr = "T";
  spec.dtypes = update_types;
  spec.n_dtypes = sizeof update_types / sizeof update_types[0];
  CPU_TRY(weft__cpu_register(reg, &spec));
  spec.op = "AssignSub";
  spec.user_data = &sub_marker;
  CPU_TRY(weft__cpu_register(reg, &spec));
  return NULL;
}
