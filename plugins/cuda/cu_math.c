/* cu_math.c: the CUDA elementwise kernels: the tables of unary math and activations, binary
 * arithmetic, comparisons and logic (TensorFlow broadcasting), activation gradients, BiasAdd,
 * AddN, Select / SelectV2 and Cast between float32, float64, int32, int64 and bool, whose host
 * side is the GPU backends' shared one (plugins/common/gpu_kernels.c, launching through
 * cu_launch.c), and ClipByValue, which has a kernel of its own (kernels/elementwise.cu).
 *
 * Floats are float32 and float64 everywhere; int32 and int64 where the arithmetic is exact and
 * cannot fail. Integer division, modulo and powers stay on the CPU, whose kernels report division
 * by zero and negative exponents: a CUDA kernel cannot raise those errors. */
#include <string.h>

#include "cu_internal.h"

#define H weft_pc_host

static const weft_dtype_t types_f[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_dtype_t types_n[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                       WEFT_DT_INT64};
static const weft_dtype_t types_nb[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                        WEFT_DT_INT64, WEFT_DT_BOOL};

/* ---------------------------------------------------------------------------------------------
 * Unary */

static const weft_pc_unary_op_t un_ops[] = {
    {"Neg", CU_UN_NEG, true, NULL, 0},
    {"Abs", CU_UN_ABS, true, NULL, 0},
    {"Square", CU_UN_SQUARE, true, NULL, 0},
    {"Sqrt", CU_UN_SQRT, false, NULL, 0},
    {"Rsqrt", CU_UN_RSQRT, false, NULL, 0},
    {"Exp", CU_UN_EXP, false, NULL, 0},
    {"Log", CU_UN_LOG, false, NULL, 0},
    {"Log1p", CU_UN_LOG1P, false, NULL, 0},
    {"Expm1", CU_UN_EXPM1, false, NULL, 0},
    {"Sign", CU_UN_SIGN, true, NULL, 0},
    {"Reciprocal", CU_UN_RECIPROCAL, false, NULL, 0},
    {"Inv", CU_UN_RECIPROCAL, false, NULL, 0},
    {"Floor", CU_UN_FLOOR, false, NULL, 0},
    {"Ceil", CU_UN_CEIL, false, NULL, 0},
    {"Round", CU_UN_ROUND, true, NULL, 0},
    {"Rint", CU_UN_ROUND, false, NULL, 0},
    {"Sin", CU_UN_SIN, false, NULL, 0},
    {"Cos", CU_UN_COS, false, NULL, 0},
    {"Tan", CU_UN_TAN, false, NULL, 0},
    {"Asin", CU_UN_ASIN, false, NULL, 0},
    {"Acos", CU_UN_ACOS, false, NULL, 0},
    {"Atan", CU_UN_ATAN, false, NULL, 0},
    {"Sinh", CU_UN_SINH, false, NULL, 0},
    {"Cosh", CU_UN_COSH, false, NULL, 0},
    {"Asinh", CU_UN_ASINH, false, NULL, 0},
    {"Acosh", CU_UN_ACOSH, false, NULL, 0},
    {"Atanh", CU_UN_ATANH, false, NULL, 0},
    {"Tanh", CU_UN_TANH, false, NULL, 0},
    {"Sigmoid", CU_UN_SIGMOID, false, NULL, 0},
    {"Erf", CU_UN_ERF, false, NULL, 0},
    {"Erfc", CU_UN_ERFC, false, NULL, 0},
    {"Lgamma", CU_UN_LGAMMA, false, NULL, 0},
    {"Relu", CU_UN_RELU, true, NULL, 0},
    {"Relu6", CU_UN_RELU6, true, NULL, 0},
    {"Elu", CU_UN_ELU, false, NULL, 0},
    {"Selu", CU_UN_SELU, false, NULL, 0},
    {"LeakyRelu", CU_UN_LEAKY_RELU, false, "alpha", 0.2f},
    {"Softplus", CU_UN_SOFTPLUS, false, NULL, 0},
    {"Softsign", CU_UN_SOFTSIGN, false, NULL, 0},
    {"IsNan", CU_UN_ISNAN, false, NULL, 0},
    {"IsInf", CU_UN_ISINF, false, NULL, 0},
    {"IsFinite", CU_UN_ISFINITE, false, NULL, 0},
    {"LogicalNot", CU_UN_LOGICAL_NOT, false, NULL, 0},
};

/* ---------------------------------------------------------------------------------------------
 * Binary */

static const weft_dtype_t types_cmp_eq[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                            WEFT_DT_INT64, WEFT_DT_BOOL};

static const weft_pc_binary_op_t bin_ops[] = {
    {"AddV2", CU_BIN_ADD, types_n, 4, NULL, 0},
    {"Add", CU_BIN_ADD, types_n, 4, NULL, 0},
    {"Sub", CU_BIN_SUB, types_n, 4, NULL, 0},
    {"Mul", CU_BIN_MUL, types_n, 4, NULL, 0},
    {"RealDiv", CU_BIN_DIV, types_f, 2, NULL, 0},
    {"Div", CU_BIN_DIV, types_f, 2, NULL, 0},
    {"DivNoNan", CU_BIN_DIV_NO_NAN, types_f, 2, NULL, 0},
    {"FloorDiv", CU_BIN_FLOORDIV, types_f, 2, NULL, 0},
    {"FloorMod", CU_BIN_FLOORMOD, types_f, 2, NULL, 0},
    {"Mod", CU_BIN_TRUNCMOD, types_f, 2, NULL, 0},
    {"TruncateMod", CU_BIN_TRUNCMOD, types_f, 2, NULL, 0},
    {"Pow", CU_BIN_POW, types_f, 2, NULL, 0},
    {"Maximum", CU_BIN_MAX, types_n, 4, NULL, 0},
    {"Minimum", CU_BIN_MIN, types_n, 4, NULL, 0},
    {"SquaredDifference", CU_BIN_SQDIFF, types_n, 4, NULL, 0},
    {"Atan2", CU_BIN_ATAN2, types_f, 2, NULL, 0},
    {"ReluGrad", CU_BIN_RELU_GRAD, types_f, 2, NULL, 0},
    {"Relu6Grad", CU_BIN_RELU6_GRAD, types_f, 2, NULL, 0},
    {"LeakyReluGrad", CU_BIN_LEAKY_RELU_GRAD, types_f, 2, "alpha", 0.2f},
    {"EluGrad", CU_BIN_ELU_GRAD, types_f, 2, NULL, 0},
    {"SeluGrad", CU_BIN_SELU_GRAD, types_f, 2, NULL, 0},
    {"SoftplusGrad", CU_BIN_SOFTPLUS_GRAD, types_f, 2, NULL, 0},
    {"SoftsignGrad", CU_BIN_SOFTSIGN_GRAD, types_f, 2, NULL, 0},
    {"SigmoidGrad", CU_BIN_SIGMOID_GRAD, types_f, 2, NULL, 0},
    {"TanhGrad", CU_BIN_TANH_GRAD, types_f, 2, NULL, 0},
    {"SqrtGrad", CU_BIN_SQRT_GRAD, types_f, 2, NULL, 0},
    {"RsqrtGrad", CU_BIN_RSQRT_GRAD, types_f, 2, NULL, 0},
    {"ReciprocalGrad", CU_BIN_RECIPROCAL_GRAD, types_f, 2, NULL, 0},
    {"InvGrad", CU_BIN_RECIPROCAL_GRAD, types_f, 2, NULL, 0},
    {"Equal", CU_BIN_EQ, types_cmp_eq, 5, NULL, 0},
    {"NotEqual", CU_BIN_NE, types_cmp_eq, 5, NULL, 0},
    {"Less", CU_BIN_LT, types_n, 4, NULL, 0},
    {"LessEqual", CU_BIN_LE, types_n, 4, NULL, 0},
    {"Greater", CU_BIN_GT, types_n, 4, NULL, 0},
    {"GreaterEqual", CU_BIN_GE, types_n, 4, NULL, 0},
    {"LogicalAnd", CU_BIN_AND, NULL, 0, NULL, 0},
    {"LogicalOr", CU_BIN_OR, NULL, 0, NULL, 0},
};

/* ---------------------------------------------------------------------------------------------
 * ClipByValue */

static weft_status_t *k_clip(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t t, lo, hi, z;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &t));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &lo));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 2, &hi));
  const weft_tensor_view_t *ins[3] = {&t, &lo, &hi};
  weft_pc_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_views(ctx, &bc, 3, ins));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, t.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  int dt = weft__cu_dt(t.dtype);
  if (dt < 0 || t.dtype == WEFT_DT_BOOL)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "ClipByValue has no CUDA kernel for %s",
                          weft_pc_dtype_name(t.dtype));
  weft_cu_geom_t g;
  weft__cu_geom(&bc, &g);
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(
      ctx, weft__cu_k_clip(s, (weft_cu_dt_t)dt, &g, t.data, lo.data, hi.data, z.data),
      "ClipByValue");
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int v2_marker;

weft_status_t *weft__cu_register_math(const weft_registrar_t *reg) {
  WEFT_RETURN_IF_ERROR(weft_pc_register_unary_ops(reg, weft__cu_register_typed, un_ops,
                                                  sizeof un_ops / sizeof un_ops[0], types_n, 2, 4,
                                                  CU_UN_LOGICAL_NOT));
  WEFT_RETURN_IF_ERROR(weft_pc_register_binary_ops(reg, weft__cu_register_typed, bin_ops,
                                                   sizeof bin_ops / sizeof bin_ops[0]));
  const weft_cu_kernel_spec_t more[] = {
      {.op = "BiasAdd", .compute = weft_pc_k_bias_add, .type_attr = "T", .dtypes = types_n,
       .n_dtypes = 4},
      {.op = "BiasAddV1", .compute = weft_pc_k_bias_add, .type_attr = "T", .dtypes = types_n,
       .n_dtypes = 4},
      {.op = "AddN", .compute = weft_pc_k_addn, .type_attr = "T", .dtypes = types_n, .n_dtypes = 4},
      {.op = "ClipByValue", .compute = k_clip, .type_attr = "T", .dtypes = types_n, .n_dtypes = 4},
      {.op = "Select", .compute = weft_pc_k_select, .type_attr = "T", .dtypes = types_nb,
       .n_dtypes = 5},
      {.op = "SelectV2", .compute = weft_pc_k_select, .type_attr = "T", .dtypes = types_nb,
       .n_dtypes = 5, .user_data = &v2_marker},
      {.op = "Cast", .compute = weft_pc_k_cast, .type_attr = "SrcT", .dtypes = types_nb,
       .n_dtypes = 5, .type_attr2 = "DstT", .dtypes2 = types_nb, .n_dtypes2 = 5},
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &more[i]));
  return NULL;
}
