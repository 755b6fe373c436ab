/* cu_state.c: CUDA kernels that produce or pass values without arithmetic: Const (uploaded by
 * the host), Identity and its kin, NoOp, the shape views Reshape / ExpandDims / Squeeze (the
 * output shares the input's device buffer), Fill / ZerosLike / OnesLike, and the reference
 * variables: VariableV2, Assign (a device copy), AssignAdd / AssignSub (the binary kernel in
 * place), IsVariableInitialized. Shape and value arguments that steer the host side arrive in
 * host memory (host_memory_args). All but the fills are the kernels every plugin shares
 * (plugins/common), here given their device steps; so their errors are the CPU kernels'. */
#include <string.h>

#include "cu_internal.h"

#define H weft_pc_host

/* ---------------------------------------------------------------------------------------------
 * Fills */

static weft_status_t *k_fill(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_fill_t f;
  WEFT_RETURN_IF_ERROR(weft_pc_fill_prepare(ctx, &f));
  return weft__cu_fill(ctx, f.y.data, f.value.dtype, f.y.num_elements, f.value.data);
}

static weft_status_t *k_zeros_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  const uint64_t zero = 0;
  return weft__cu_fill(ctx, y.data, x.dtype, y.num_elements, &zero);
}

static weft_status_t *k_ones_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  const float one_f = 1.0f;
  const double one_d = 1.0;
  const int32_t one_i = 1;
  const int64_t one_l = 1;
  const uint8_t one_b = 1;
  const void *one = x.dtype == WEFT_DT_FLOAT    ? (const void *)&one_f
                    : x.dtype == WEFT_DT_DOUBLE ? (const void *)&one_d
                    : x.dtype == WEFT_DT_INT32  ? (const void *)&one_i
                    : x.dtype == WEFT_DT_INT64  ? (const void *)&one_l
                                                : (const void *)&one_b;
  return weft__cu_fill(ctx, y.data, x.dtype, y.num_elements, one);
}

/* ---------------------------------------------------------------------------------------------
 * Variables: the device steps of the shared kernels (plugins/common/state_kernels.c) */

static weft_status_t *state_copy(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                 const weft_tensor_view_t *src) {
  return weft__cu_copy_d2d(ctx, dst->data, src->data, src->nbytes);
}

static weft_status_t *state_set_bool(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                     bool value) {
  const uint8_t v = value ? 1 : 0;
  return weft__cu_fill(ctx, dst->data, WEFT_DT_BOOL, 1, &v);
}

/* var op= value by the binary kernel, in place, as one flat run. */
static weft_status_t *state_update(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *var,
                                   const weft_tensor_view_t *value, bool sub) {
  int dt = weft__cu_dt(var->dtype);
  if (dt < 0 || var->dtype == WEFT_DT_BOOL)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "no CUDA update for %s variables",
                         weft_pc_dtype_name(var->dtype));
  if (var->num_elements == 0) return NULL;
  weft_cu_geom_t g;
  weft__cu_geom_flat(var->num_elements, &g);
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_binary(s, sub ? CU_BIN_SUB : CU_BIN_ADD, (weft_cu_dt_t)dt,
                                             &g, var->data, value->data, var->data, 0.0),
                           sub ? "AssignSub" : "AssignAdd");
}

static const weft_pc_state_ops_t state_ops = {state_copy, state_set_bool, state_update};

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cu_register_state(const weft_registrar_t *reg) {
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_dim[] = {"dim", NULL};
  static const char *const hm_fill[] = {"dims", "value", NULL};
  const weft_dtype_t *all = weft__cu_types_all, *num = weft__cu_types_num;
  void *ops = (void *)&state_ops;
  const weft_cu_kernel_spec_t specs[] = {
      {.op = "Const", .compute = weft_pc_k_const, .type_attr = "dtype", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "Identity", .compute = weft_pc_k_forward, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "StopGradient", .compute = weft_pc_k_forward, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "PreventGradient", .compute = weft_pc_k_forward, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "NoOp", .compute = weft_pc_k_noop},
      {.op = "Reshape", .compute = weft_pc_k_reshape, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL, .host_memory = hm_shape},
      {.op = "ExpandDims", .compute = weft_pc_k_expand_dims, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL, .host_memory = hm_dim},
      {.op = "Squeeze", .compute = weft_pc_k_squeeze, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "Fill", .compute = k_fill, .type_attr = "T", .dtypes = all, .n_dtypes = CU_N_ALL,
       .host_memory = hm_fill},
      {.op = "ZerosLike", .compute = k_zeros_like, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "OnesLike", .compute = k_ones_like, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "VariableV2", .compute = weft_pc_k_variable, .type_attr = "dtype", .dtypes = all,
       .n_dtypes = CU_N_ALL},
      {.op = "IsVariableInitialized", .compute = weft_pc_k_is_variable_initialized,
       .type_attr = "dtype", .dtypes = all, .n_dtypes = CU_N_ALL, .user_data = ops},
      {.op = "Assign", .compute = weft_pc_k_assign, .type_attr = "T", .dtypes = all,
       .n_dtypes = CU_N_ALL, .user_data = ops},
      {.op = "AssignAdd", .compute = weft_pc_k_assign_add, .type_attr = "T", .dtypes = num,
       .n_dtypes = CU_N_NUM, .user_data = ops},
      {.op = "AssignSub", .compute = weft_pc_k_assign_sub, .type_attr = "T", .dtypes = num,
       .n_dtypes = CU_N_NUM, .user_data = ops},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &specs[i]));
  return NULL;
}
