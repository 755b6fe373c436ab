/* vk_state.c: Vulkan kernels that produce or pass values without arithmetic: Const (uploaded by
 * the host), Identity and its kin, NoOp, the shape views Reshape / ExpandDims / Squeeze (the
 * output shares the input's device buffer), Fill / ZerosLike / OnesLike (vkCmdFillBuffer), and
 * the reference variables: VariableV2, Assign (a device copy), AssignAdd / AssignSub (the binary
 * shader in place), IsVariableInitialized. Shape and value arguments that steer the host side
 * arrive in host memory (host_memory_args). All but the fills are the kernels every plugin shares
 * (plugins/common), here given their device steps; so their errors are the CPU kernels'. */
#include <string.h>

#include "vk_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Fills */

/* The 32-bit word that repeats `value` (4-byte dtypes) or its byte (bool). */
static uint32_t fill_pattern(weft_dtype_t dtype, const void *value) {
  if (dtype == WEFT_DT_BOOL) return (*(const uint8_t *)value != 0) ? 0x01010101u : 0u;
  uint32_t w;
  memcpy(&w, value, sizeof w);
  return w;
}

static weft_status_t *fill(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *y, uint32_t pattern) {
  if (y->num_elements == 0) return NULL;
  return weft__vk_fill(weft__vk_ctx_device(ctx), y->data, y->nbytes, pattern);
}

static weft_status_t *k_fill(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_fill_t f;
  WEFT_RETURN_IF_ERROR(weft_pc_fill_prepare(ctx, &f));
  return fill(ctx, &f.y, fill_pattern(f.value.dtype, f.value.data));
}

static weft_status_t *k_zeros_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  return fill(ctx, &y, 0u);
}

static weft_status_t *k_ones_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  float one_f = 1.0f;
  int32_t one_i = 1;
  uint8_t one_b = 1;
  const void *one = x.dtype == WEFT_DT_FLOAT ? (const void *)&one_f
                    : x.dtype == WEFT_DT_INT32 ? (const void *)&one_i
                                               : (const void *)&one_b;
  return fill(ctx, &y, fill_pattern(x.dtype, one));
}

/* ---------------------------------------------------------------------------------------------
 * Variables: the device steps of the shared kernels (plugins/common/state_kernels.c) */

static weft_status_t *state_copy(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                 const weft_tensor_view_t *src) {
  if (src->nbytes == 0) return NULL;
  return weft__vk_copy_device_to_device(weft__vk_ctx_device(ctx), dst->data, src->data,
                                        src->nbytes);
}

static weft_status_t *state_set_bool(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                     bool value) {
  return fill(ctx, dst, value ? 1u : 0u);
}

/* var op= value by the binary shader, in place, as one flat run. */
static weft_status_t *state_update(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *var,
                                   const weft_tensor_view_t *value, bool sub) {
  if (var->num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, var, "variable"));
  const int ranks[2] = {1, 1};
  const int64_t *dims[2] = {&var->num_elements, &var->num_elements};
  weft_vk_bcast_t flat;
  WEFT_RETURN_IF_ERROR(weft__vk_bcast_init(ctx, &flat, 2, ranks, dims));
  return weft__vk_binary(ctx, sub ? VK_BIN_SUB : VK_BIN_ADD, 0.0f, var->dtype, &flat, var->data,
                         value->data, var->data);
}

static const weft_pc_state_ops_t state_ops = {state_copy, state_set_bool, state_update};

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__vk_register_state(const weft_registrar_t *reg) {
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_dim[] = {"dim", NULL};
  static const char *const hm_fill[] = {"dims", "value", NULL};
  const weft_dtype_t *fib = weft__vk_types_fib;
  const weft_dtype_t *fi = weft__vk_types_fi;
  void *ops = (void *)&state_ops;
  const weft_vk_kernel_spec_t specs[] = {
      {.op = "Const", .compute = weft_pc_k_const, .type_attr = "dtype", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "Identity", .compute = weft_pc_k_forward, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "StopGradient", .compute = weft_pc_k_forward, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "PreventGradient", .compute = weft_pc_k_forward, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "NoOp", .compute = weft_pc_k_noop},
      {.op = "Reshape", .compute = weft_pc_k_reshape, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3, .host_memory = hm_shape},
      {.op = "ExpandDims", .compute = weft_pc_k_expand_dims, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3, .host_memory = hm_dim},
      {.op = "Squeeze", .compute = weft_pc_k_squeeze, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "Fill", .compute = k_fill, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_fill},
      {.op = "ZerosLike", .compute = k_zeros_like, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "OnesLike", .compute = k_ones_like, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "VariableV2", .compute = weft_pc_k_variable, .type_attr = "dtype", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "IsVariableInitialized", .compute = weft_pc_k_is_variable_initialized,
       .type_attr = "dtype", .dtypes = fib, .n_dtypes = 3, .user_data = ops},
      {.op = "Assign", .compute = weft_pc_k_assign, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3, .user_data = ops},
      {.op = "AssignAdd", .compute = weft_pc_k_assign_add, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2, .user_data = ops},
      {.op = "AssignSub", .compute = weft_pc_k_assign_sub, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2, .user_data = ops},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__vk_register(reg, &specs[i]));
  return NULL;
}
