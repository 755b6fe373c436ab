/* vk_math.c: the Vulkan elementwise kernels: the tables of unary math and activation ops
 * (unary.comp), binary arithmetic, comparisons and logic with TensorFlow broadcasting
 * (binary.comp), activation gradients, BiasAdd, AddN, Select / SelectV2 (select.comp) and Cast
 * between float32, int32 and bool (cast.comp), whose host side is the GPU backends' shared one
 * (plugins/common/gpu_kernels.c, dispatching through vk_launch.c), and ClipByValue, built here
 * from two binary.comp passes.
 *
 * float32 everywhere; int32 where the arithmetic is exact and cannot fail (no integer division
 * or powers, whose divide-by-zero and negative-exponent errors a shader cannot raise: those run
 * on the CPU). Error messages match the CPU kernels'. */
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

/* ---------------------------------------------------------------------------------------------
 * Unary */

static const weft_pc_unary_op_t un_ops[] = {
    {"Neg", VK_UN_NEG, true, NULL, 0},
    {"Abs", VK_UN_ABS, true, NULL, 0},
    {"Square", VK_UN_SQUARE, true, NULL, 0},
    {"Sqrt", VK_UN_SQRT, false, NULL, 0},
    {"Rsqrt", VK_UN_RSQRT, false, NULL, 0},
    {"Exp", VK_UN_EXP, false, NULL, 0},
    {"Log", VK_UN_LOG, false, NULL, 0},
    {"Log1p", VK_UN_LOG1P, false, NULL, 0},
    {"Expm1", VK_UN_EXPM1, false, NULL, 0},
    {"Sign", VK_UN_SIGN, true, NULL, 0},
    {"Reciprocal", VK_UN_RECIPROCAL, false, NULL, 0},
    {"Inv", VK_UN_RECIPROCAL, false, NULL, 0},
    {"Floor", VK_UN_FLOOR, false, NULL, 0},
    {"Ceil", VK_UN_CEIL, false, NULL, 0},
    {"Round", VK_UN_ROUND, true, NULL, 0},
    {"Sin", VK_UN_SIN, false, NULL, 0},
    {"Cos", VK_UN_COS, false, NULL, 0},
    {"Tan", VK_UN_TAN, false, NULL, 0},
    {"Asin", VK_UN_ASIN, false, NULL, 0},
    {"Acos", VK_UN_ACOS, false, NULL, 0},
    {"Atan", VK_UN_ATAN, false, NULL, 0},
    {"Sinh", VK_UN_SINH, false, NULL, 0},
    {"Cosh", VK_UN_COSH, false, NULL, 0},
    {"Asinh", VK_UN_ASINH, false, NULL, 0},
    {"Acosh", VK_UN_ACOSH, false, NULL, 0},
    {"Atanh", VK_UN_ATANH, false, NULL, 0},
    {"Tanh", VK_UN_TANH, false, NULL, 0},
    {"Sigmoid", VK_UN_SIGMOID, false, NULL, 0},
    {"Erf", VK_UN_ERF, false, NULL, 0},
    {"Relu", VK_UN_RELU, true, NULL, 0},
    {"Relu6", VK_UN_RELU6, true, NULL, 0},
    {"Elu", VK_UN_ELU, false, NULL, 0},
    {"Selu", VK_UN_SELU, false, NULL, 0},
    {"LeakyRelu", VK_UN_LEAKY_RELU, false, "alpha", 0.2f},
    {"Softplus", VK_UN_SOFTPLUS, false, NULL, 0},
    {"Softsign", VK_UN_SOFTSIGN, false, NULL, 0},
    {"IsNan", VK_UN_ISNAN, false, NULL, 0},
    {"IsInf", VK_UN_ISINF, false, NULL, 0},
    {"IsFinite", VK_UN_ISFINITE, false, NULL, 0},
    {"LogicalNot", VK_UN_LOGICAL_NOT, false, NULL, 0},
};

/* ---------------------------------------------------------------------------------------------
 * Binary */

static weft_status_t *bcast2(weft_kernel_ctx_t *ctx, weft_vk_bcast_t *bc,
                             const weft_tensor_view_t *x, const weft_tensor_view_t *y) {
  const weft_tensor_view_t *ins[2] = {x, y};
  return weft_pc_bcast_views(ctx, bc, 2, ins);
}

static const weft_pc_binary_op_t bin_ops[] = {
    {"AddV2", VK_BIN_ADD, weft__vk_types_fi, 2, NULL, 0},
    {"Add", VK_BIN_ADD, weft__vk_types_fi, 2, NULL, 0},
    {"Sub", VK_BIN_SUB, weft__vk_types_fi, 2, NULL, 0},
    {"Mul", VK_BIN_MUL, weft__vk_types_fi, 2, NULL, 0},
    {"RealDiv", VK_BIN_DIV, weft__vk_types_f, 1, NULL, 0},
    {"Div", VK_BIN_DIV, weft__vk_types_f, 1, NULL, 0},
    {"Maximum", VK_BIN_MAX, weft__vk_types_fi, 2, NULL, 0},
    {"Minimum", VK_BIN_MIN, weft__vk_types_fi, 2, NULL, 0},
    {"Pow", VK_BIN_POW, weft__vk_types_f, 1, NULL, 0},
    {"SquaredDifference", VK_BIN_SQDIFF, weft__vk_types_fi, 2, NULL, 0},
    {"ReluGrad", VK_BIN_RELU_GRAD, weft__vk_types_f, 1, NULL, 0},
    {"SigmoidGrad", VK_BIN_SIGMOID_GRAD, weft__vk_types_f, 1, NULL, 0},
    {"TanhGrad", VK_BIN_TANH_GRAD, weft__vk_types_f, 1, NULL, 0},
    {"Equal", VK_BIN_EQ, weft__vk_types_fib, 3, NULL, 0},
    {"NotEqual", VK_BIN_NE, weft__vk_types_fib, 3, NULL, 0},
    {"Less", VK_BIN_LT, weft__vk_types_fi, 2, NULL, 0},
    {"LessEqual", VK_BIN_LE, weft__vk_types_fi, 2, NULL, 0},
    {"Greater", VK_BIN_GT, weft__vk_types_fi, 2, NULL, 0},
    {"GreaterEqual", VK_BIN_GE, weft__vk_types_fi, 2, NULL, 0},
    {"LogicalAnd", VK_BIN_AND, NULL, 0, NULL, 0},
    {"LogicalOr", VK_BIN_OR, NULL, 0, NULL, 0},
};

/* ---------------------------------------------------------------------------------------------
 * ClipByValue: min(t, hi) then max(., lo), each broadcast. */

static weft_status_t *k_clip(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], z;
  weft_vk_bcast_t all;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast3_prepare(ctx, in, 0, &all, &z));
  const weft_tensor_view_t t = in[0], lo = in[1], hi = in[2];
  if (all.out_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &z, "ClipByValue output"));
  /* First pass: z = min(t, hi) over the shape of (t, hi); second: z = max(z, lo) in place
   * over the full shape, which the first pass's shape broadcasts to. */
  weft_vk_bcast_t b1, b2;
  WEFT_RETURN_IF_ERROR(bcast2(ctx, &b1, &t, &hi));
  weft_tensor_view_t mid = t;
  mid.rank = b1.out_rank;
  memcpy(mid.dims, b1.out_dims, sizeof mid.dims);
  WEFT_RETURN_IF_ERROR(bcast2(ctx, &b2, &mid, &lo));
  if (b1.out_elements == all.out_elements) {
    WEFT_RETURN_IF_ERROR(
        weft__vk_binary(ctx, VK_BIN_CLIP_HI, 0.0f, t.dtype, &b1, t.data, hi.data, z.data));
    return weft__vk_binary(ctx, VK_BIN_CLIP_LO, 0.0f, t.dtype, &b2, z.data, lo.data, z.data);
  }
  /* lo widens the shape: the intermediate needs its own buffer. */
  void *tmp = NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_scratch(ctx, (size_t)b1.out_elements * 4, &tmp));
  WEFT_RETURN_IF_ERROR(
      weft__vk_binary(ctx, VK_BIN_CLIP_HI, 0.0f, t.dtype, &b1, t.data, hi.data, tmp));
  return weft__vk_binary(ctx, VK_BIN_CLIP_LO, 0.0f, t.dtype, &b2, tmp, lo.data, z.data);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int v2_marker;

weft_status_t *weft__vk_register_math(const weft_registrar_t *reg) {
  const weft_dtype_t *fib = weft__vk_types_fib, *fi = weft__vk_types_fi;
  WEFT_RETURN_IF_ERROR(weft_pc_register_unary_ops(reg, weft__vk_register_typed, un_ops,
                                                  sizeof un_ops / sizeof un_ops[0], fi, 1, 2,
                                                  VK_UN_LOGICAL_NOT));
  WEFT_RETURN_IF_ERROR(weft_pc_register_binary_ops(reg, weft__vk_register_typed, bin_ops,
                                                   sizeof bin_ops / sizeof bin_ops[0]));
  const weft_vk_kernel_spec_t more[] = {
      {.op = "BiasAdd", .compute = weft_pc_k_bias_add, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2},
      {.op = "AddN", .compute = weft_pc_k_addn, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "ClipByValue", .compute = k_clip, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "Select", .compute = weft_pc_k_select, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "SelectV2", .compute = weft_pc_k_select, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3, .user_data = &v2_marker},
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__vk_register(reg, &more[i]));
  const weft_type_constraint_t cast_types[] = {{"SrcT", fib, 3}, {"DstT", fib, 3}};
  return weft__vk_register_full(reg, "Cast", cast_types, 2, NULL, weft_pc_k_cast, NULL);
}
