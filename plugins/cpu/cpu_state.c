/* cpu_state.c: the CPU registrations of the kernels that produce or pass values without
 * computing on them (Const, Identity and its kin, NoOp, PlaceholderWithDefault) and of the
 * reference-variable kernels (VariableV2, Assign, AssignAdd, AssignSub, IsVariableInitialized),
 * all shared with the other plugins (plugins/common/state_kernels.c) but for their host-memory
 * steps here; Placeholder's "must feed" error and EnsureShape's check. */
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * Placeholder */

/* A shape whose unknown dims print as "?" ("<unknown>" for unknown rank) into buf, which has
 * CPU_SHAPE_STR_LEN chars. */
static const char *partial_shape_str(int rank, const int64_t *dims, char *buf) {
  const size_t len = CPU_SHAPE_STR_LEN;
  if (rank < 0) return strcpy(buf, "<unknown>");
  size_t at = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < rank && at < len; i++) {
    if (dims[i] < 0)
      at += (size_t)snprintf(buf + at, len - at, i ? ",?" : "?");
    else
      at += (size_t)snprintf(buf + at, len - at, i ? ",%lld" : "%lld", (long long)dims[i]);
  }
  if (at < len) snprintf(buf + at, len - at, "]");
  return buf;
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
  char shape[CPU_SHAPE_STR_LEN];
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                         "You must feed a value for placeholder tensor '%s' with dtype %s and "
                         "shape %s",
                         H->kernel_node_name(ctx), weft__cpu_dtype_name(dtype),
                         partial_shape_str(rank, dims, shape));
}

/* ---------------------------------------------------------------------------------------------
 * EnsureShape */

/* The input unchanged when its shape fits the "shape" attr (unknown dims match anything);
 * TensorFlow's error otherwise. */
static weft_status_t *k_ensure_shape(weft_kernel_ctx_t *ctx, void *state) {
  int rank = -1;
  int64_t dims[WEFT_MAX_RANK];
  weft_status_t *s = H->attr_shape(H->kernel_attrs(ctx), "shape", &rank, dims);
  if (s != NULL) {
    H->status_free(s);
    rank = -1;
  }
  weft_tensor_view_t in;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &in));
  bool ok = rank < 0 || rank == in.rank;
  for (int i = 0; ok && rank > 0 && i < rank; i++) ok = dims[i] < 0 || dims[i] == in.dims[i];
  if (!ok) {
    char got[CPU_SHAPE_STR_LEN], want[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Shape of tensor %s %s is not compatible with expected shape %s.",
                           H->kernel_node_name(ctx), weft__cpu_shape_str(in.rank, in.dims, got,
                                                                         sizeof got),
                           partial_shape_str(rank, dims, want));
  }
  return weft_pc_k_forward(ctx, state);
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

/* The device steps of the shared variable kernels (plugins/common/state_kernels.c): host memory,
 * so a copy is a memcpy (string_assign for strings) and a bool is a byte. */

static weft_status_t *state_copy(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                 const weft_tensor_view_t *src) {
  return weft__cpu_copy_elems(ctx, dst, 0, src, 0, src->num_elements);
}

static weft_status_t *state_set_bool(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                     bool value) {
  (void)ctx;
  *(uint8_t *)dst->data = value ? 1 : 0;
  return NULL;
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
    CPU_NUMERIC_TYPES(UPDATE_CASE)
    default: break;
  }
}

static weft_status_t *state_update(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *var,
                                   const weft_tensor_view_t *value, bool sub) {
  update_job_t j = {var->data, value->data, var->dtype, sub};
  weft__cpu_parallel(ctx, var->num_elements, 2, update_range, &j);
  return NULL;
}

static const weft_pc_state_ops_t state_ops = {state_copy, state_set_bool, state_update};

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_state(const weft_registrar_t *reg) {
  static const char *const forward_ops[] = {"Identity", "StopGradient", "PreventGradient",
                                            "Snapshot", "IdentityN", "PlaceholderWithDefault",
                                            "GuaranteeConst"};
  for (size_t i = 0; i < sizeof forward_ops / sizeof forward_ops[0]; i++) {
    const weft_cpu_kernel_spec_t forward = {.op = forward_ops[i], .compute = weft_pc_k_forward};
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &forward));
  }
  void *ops = (void *)&state_ops; /* the host-memory steps of the shared variable kernels */
  const weft_dtype_t *update_types = weft__cpu_num_types;
  const size_t n_update = weft__cpu_n_num_types;
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "Const", .compute = weft_pc_k_const},
      {.op = "NoOp", .compute = weft_pc_k_noop},
      {.op = "EnsureShape", .compute = k_ensure_shape},
      {.op = "Placeholder", .compute = k_placeholder},
      {.op = "PlaceholderV2", .compute = k_placeholder},
      {.op = "VariableV2", .compute = weft_pc_k_variable},
      {.op = "IsVariableInitialized", .compute = weft_pc_k_is_variable_initialized,
       .user_data = ops},
      {.op = "Assign", .compute = weft_pc_k_assign, .user_data = ops},
      {.op = "AssignAdd", .compute = weft_pc_k_assign_add, .type_attr = "T",
       .dtypes = update_types, .n_dtypes = n_update, .user_data = ops},
      {.op = "AssignSub", .compute = weft_pc_k_assign_sub, .type_attr = "T",
       .dtypes = update_types, .n_dtypes = n_update, .user_data = ops},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
