/* vk_nn.c: the table of Vulkan kernels that combine many elements per output: MatMul and
 * BatchMatMulV2 (matmul.comp, tiled through shared memory), Softmax / LogSoftmax (softmax.comp, a
 * workgroup per row), the reductions Sum, Mean, Max, Min, Prod, All, Any over any axes
 * (reduce_rows.comp and reduce_cols.comp), BiasAddGrad (a Sum), L2Loss, and ArgMax / ArgMin. Their
 * host side is the GPU backends' shared one (plugins/common/gpu_kernels.c, which plans the
 * reductions), dispatching through vk_launch.c. */
#include "vk_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int log_marker, max_marker;
static const weft_dtype_t types_index[] = {WEFT_DT_INT32, WEFT_DT_INT64};

static const weft_pc_reduce_op_t red_ops[] = {
    {"Sum", VK_RED_SUM, weft__vk_types_fi, 2},
    {"Mean", VK_RED_MEAN, weft__vk_types_f, 1},
    {"Max", VK_RED_MAX, weft__vk_types_fi, 2},
    {"Min", VK_RED_MIN, weft__vk_types_fi, 2},
    {"Prod", VK_RED_PROD, weft__vk_types_fi, 2},
    {"All", VK_RED_ALL, NULL, 0},
    {"Any", VK_RED_ANY, NULL, 0},
};

weft_status_t *weft__vk_register_nn(const weft_registrar_t *reg) {
  static const char *const hm_dim[] = {"dimension", NULL};
  const weft_dtype_t *f = weft__vk_types_f, *fi = weft__vk_types_fi;
  const weft_vk_kernel_spec_t specs[] = {
      {.op = "MatMul", .compute = weft_pc_k_matmul, .type_attr = "T", .dtypes = f, .n_dtypes = 1},
      {.op = "BatchMatMulV2", .compute = weft_pc_k_batch_matmul, .type_attr = "T", .dtypes = f,
       .n_dtypes = 1},
      {.op = "Softmax", .compute = weft_pc_k_softmax, .type_attr = "T", .dtypes = f, .n_dtypes = 1},
      {.op = "LogSoftmax", .compute = weft_pc_k_softmax, .type_attr = "T", .dtypes = f,
       .n_dtypes = 1, .user_data = &log_marker},
      {.op = "BiasAddGrad", .compute = weft_pc_k_bias_add_grad, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2},
      {.op = "L2Loss", .compute = weft_pc_k_l2loss, .type_attr = "T", .dtypes = f, .n_dtypes = 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__vk_register(reg, &specs[i]));
  const weft_type_constraint_t arg_types[] = {{"T", fi, 2}, {"output_type", types_index, 2}};
  WEFT_RETURN_IF_ERROR(
      weft__vk_register_full(reg, "ArgMax", arg_types, 2, hm_dim, weft_pc_k_arg, &max_marker));
  WEFT_RETURN_IF_ERROR(
      weft__vk_register_full(reg, "ArgMin", arg_types, 2, hm_dim, weft_pc_k_arg, NULL));
  return weft_pc_register_reduce_ops(reg, weft__vk_register_typed, red_ops,
                                     sizeof red_ops / sizeof red_ops[0]);
}
