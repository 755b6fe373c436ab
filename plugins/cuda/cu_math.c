/* cu_math.c: CUDA elementwise kernels (host side; the device code is kernels/elementwise.cu):
 * unary math and activations, binary arithmetic, comparisons and logic with TensorFlow
 * broadcasting, activation gradients, BiasAdd, AddN, ClipByValue, Select / SelectV2 and Cast
 * between float32, float64, int32, int64 and bool. Shapes and argument checks are the shared
 * ones (plugins/common), so the errors are the CPU kernels'.
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

typedef struct un_op {
  const char *name;
  int code;
  bool with_int; /* int32 and int64 too */
  const char *param;
  float param_default;
} un_op_t;

static const un_op_t un_ops[] = {
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

static weft_status_t *k_unary(weft_kernel_ctx_t *ctx, void *state) {
  const un_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  int dt = weft__cu_dt(x.dtype);
  if (dt < 0)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CUDA kernel for %s", op->name,
                          weft_pc_dtype_name(x.dtype));
  bool out_bool = op->code >= CU_UN_FIRST_BOOL_OUT;
  WEFT_RETURN_IF_ERROR(
      weft_pc_output(ctx, 0, out_bool ? WEFT_DT_BOOL : x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  double alpha = op->param != NULL ? weft_pc_attr_float(ctx, op->param, op->param_default) : 0.0;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(
      ctx, weft__cu_k_unary(s, op->code, (weft_cu_dt_t)dt, x.data, y.data, x.num_elements, alpha),
      op->name);
}

/* ---------------------------------------------------------------------------------------------
 * Binary */

typedef struct bin_op {
  const char *name;
  int code;
  const weft_dtype_t *dtypes; /* NULL: bool only, no type attribute (LogicalAnd/Or) */
  size_t n_dtypes;
  const char *param;
  float param_default;
} bin_op_t;

static const weft_dtype_t types_cmp_eq[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                            WEFT_DT_INT64, WEFT_DT_BOOL};

static const bin_op_t bin_ops[] = {
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
    {"Equal", CU_BIN_EQ, types_cmp_eq, 5, NULL, 0},
    {"NotEqual", CU_BIN_NE, types_cmp_eq, 5, NULL, 0},
    {"Less", CU_BIN_LT, types_n, 4, NULL, 0},
    {"LessEqual", CU_BIN_LE, types_n, 4, NULL, 0},
    {"Greater", CU_BIN_GT, types_n, 4, NULL, 0},
    {"GreaterEqual", CU_BIN_GE, types_n, 4, NULL, 0},
    {"LogicalAnd", CU_BIN_AND, NULL, 0, NULL, 0},
    {"LogicalOr", CU_BIN_OR, NULL, 0, NULL, 0},
};

static weft_status_t *run_binary(weft_kernel_ctx_t *ctx, int code, double alpha,
                                 weft_dtype_t dtype, const weft_cu_geom_t *g, const void *x,
                                 const void *y, void *z, const char *what) {
  if (g->n == 0) return NULL;
  int dt = weft__cu_dt(dtype);
  if (dt < 0)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CUDA kernel for %s", what,
                          weft_pc_dtype_name(dtype));
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_binary(s, code, (weft_cu_dt_t)dt, g, x, y, z, alpha),
                           what);
}

static weft_status_t *k_binary(weft_kernel_ctx_t *ctx, void *state) {
  const bin_op_t *op = state;
  weft_tensor_view_t x, y, z;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &y));
  if (x.dtype != y.dtype)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s needs operands of one dtype, got %s and %s",
                          op->name, weft_pc_dtype_name(x.dtype), weft_pc_dtype_name(y.dtype));
  bool out_bool = op->code >= CU_BIN_FIRST_BOOL_OUT;
  weft_pc_bcast_t bc;
  const weft_tensor_view_t *ins[2] = {&x, &y};
  weft_status_t *bs = weft_pc_bcast_views(ctx, &bc, 2, ins);
  if (bs != NULL) {
    /* Equal/NotEqual with incompatible_shape_error = false answer "not equal" as a scalar. */
    bool equality = op->code == CU_BIN_EQ || op->code == CU_BIN_NE;
    if (!equality || weft_pc_attr_bool(ctx, "incompatible_shape_error", true)) return bs;
    H->status_free(bs);
    WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &z));
    const uint8_t v = op->code == CU_BIN_NE;
    return weft__cu_fill(ctx, z.data, WEFT_DT_BOOL, 1, &v);
  }
  WEFT_RETURN_IF_ERROR(
      weft_pc_output(ctx, 0, out_bool ? WEFT_DT_BOOL : x.dtype, bc.out_rank, bc.out_dims, &z));
  double alpha = op->param != NULL ? weft_pc_attr_float(ctx, op->param, op->param_default) : 0.0;
  weft_cu_geom_t g;
  weft__cu_geom(&bc, &g);
  return run_binary(ctx, op->code, alpha, x.dtype, &g, x.data, y.data, z.data, op->name);
}

/* ---------------------------------------------------------------------------------------------
 * BiasAdd: a broadcast add with the bias viewed as [C] (NHWC) or [C, 1, ..., 1] (NCHW). */

static weft_status_t *k_bias_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_bias_add_t ba;
  WEFT_RETURN_IF_ERROR(weft_pc_bias_add_prepare(ctx, &ba));
  const weft_tensor_view_t *x = &ba.x;
  if (x->num_elements == 0) return NULL;
  int64_t bdims[WEFT_MAX_RANK];
  int brank = x->rank - ba.cdim;
  bdims[0] = ba.bias.dims[0];
  for (int d = 1; d < brank; d++) bdims[d] = 1;
  const int ranks[2] = {x->rank, brank};
  const int64_t *dims[2] = {x->dims, bdims};
  weft_pc_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_init(ctx, &bc, 2, ranks, dims));
  weft_cu_geom_t g;
  weft__cu_geom(&bc, &g);
  return run_binary(ctx, CU_BIN_ADD, 0.0, x->dtype, &g, x->data, ba.bias.data, ba.y.data,
                    "BiasAdd");
}

/* ---------------------------------------------------------------------------------------------
 * AddN: a chain of adds, the first into the output, the rest in place. */

static weft_status_t *k_addn(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = 0;
  weft_tensor_view_t first, z;
  WEFT_RETURN_IF_ERROR(weft_pc_addn_first(ctx, &n, &first));
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft_pc_addn_input(ctx, k, &first, &v));
  }
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, first.dtype, first.rank, first.dims, &z));
  if (first.num_elements == 0) return NULL;
  if (n == 1) return weft__cu_copy_d2d(ctx, z.data, first.data, z.nbytes);
  weft_cu_geom_t g;
  weft__cu_geom_flat(first.num_elements, &g);
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, k, &v));
    WEFT_RETURN_IF_ERROR(run_binary(ctx, CU_BIN_ADD, 0.0, first.dtype, &g,
                                    k == 1 ? first.data : z.data, v.data, z.data, "AddN"));
  }
  return NULL;
}

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
 * Select, SelectV2 */

static weft_status_t *k_select(weft_kernel_ctx_t *ctx, void *state) {
  bool v2 = state != NULL;
  weft_tensor_view_t c, t, e, z;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &c));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &t));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 2, &e));
  weft_tensor_view_t cv = c; /* the condition as broadcasting sees it */
  if (!v2) {
    weft_pc_select_cond_t kind;
    WEFT_RETURN_IF_ERROR(weft_pc_select_check(ctx, &c, &t, &e, &kind));
    if (kind == WEFT_PC_SELECT_ROWS) { /* a vector along dim 0: [n, 1, ..., 1] */
      cv.rank = t.rank;
      for (int d = 1; d < cv.rank; d++) cv.dims[d] = 1;
    }
  }
  const weft_tensor_view_t *ins[3] = {&cv, &t, &e};
  weft_pc_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_views(ctx, &bc, 3, ins));
  if (!v2) {
    bc.out_rank = t.rank; /* a scalar condition never changes the output shape */
    memcpy(bc.out_dims, t.dims, sizeof bc.out_dims);
  }
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, t.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  weft_cu_geom_t g;
  weft__cu_geom(&bc, &g);
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_select(s, weft_pc_dtype_size(t.dtype), &g, c.data, t.data,
                                             e.data, z.data),
                           v2 ? "SelectV2" : "Select");
}

/* ---------------------------------------------------------------------------------------------
 * Cast */

static weft_status_t *k_cast(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  weft_dtype_t dst = x.dtype;
  WEFT_RETURN_IF_ERROR(H->attr_type(H->kernel_attrs(ctx), "DstT", &dst));
  if (x.dtype == dst) return H->kernel_forward_input(ctx, 0, 0, x.rank, x.dims);
  int ss = weft__cu_dt(x.dtype), ds = weft__cu_dt(dst);
  if (ss < 0 || ds < 0)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "Cast %s to %s is not supported on CUDA",
                          weft_pc_dtype_name(x.dtype), weft_pc_dtype_name(dst));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, dst, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(
      ctx, weft__cu_k_cast(s, (weft_cu_dt_t)ss, (weft_cu_dt_t)ds, x.data, y.data, x.num_elements),
      "Cast");
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int v2_marker;

weft_status_t *weft__cu_register_math(const weft_registrar_t *reg) {
  weft_cu_kernel_spec_t spec;
  for (size_t i = 0; i < sizeof un_ops / sizeof un_ops[0]; i++) {
    const un_op_t *op = &un_ops[i];
    memset(&spec, 0, sizeof spec);
    spec.op = op->name;
    spec.compute = k_unary;
    spec.user_data = (void *)op;
    if (op->code != CU_UN_LOGICAL_NOT) { /* LogicalNot is bool only, without a type attr */
      spec.type_attr = "T";
      spec.dtypes = types_n;
      spec.n_dtypes = op->with_int ? 4 : 2;
    }
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &spec));
  }
  for (size_t i = 0; i < sizeof bin_ops / sizeof bin_ops[0]; i++) {
    const bin_op_t *op = &bin_ops[i];
    memset(&spec, 0, sizeof spec);
    spec.op = op->name;
    spec.compute = k_binary;
    spec.user_data = (void *)op;
    if (op->dtypes != NULL) {
      spec.type_attr = "T";
      spec.dtypes = op->dtypes;
      spec.n_dtypes = op->n_dtypes;
    }
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &spec));
  }
  const weft_cu_kernel_spec_t more[] = {
      {.op = "BiasAdd", .compute = k_bias_add, .type_attr = "T", .dtypes = types_n, .n_dtypes = 4},
      {.op = "BiasAddV1", .compute = k_bias_add, .type_attr = "T", .dtypes = types_n,
       .n_dtypes = 4},
      {.op = "AddN", .compute = k_addn, .type_attr = "T", .dtypes = types_n, .n_dtypes = 4},
      {.op = "ClipByValue", .compute = k_clip, .type_attr = "T", .dtypes = types_n, .n_dtypes = 4},
      {.op = "Select", .compute = k_select, .type_attr = "T", .dtypes = types_nb, .n_dtypes = 5},
      {.op = "SelectV2", .compute = k_select, .type_attr = "T", .dtypes = types_nb,
       .n_dtypes = 5, .user_data = &v2_marker},
      {.op = "Cast", .compute = k_cast, .type_attr = "SrcT", .dtypes = types_nb, .n_dtypes = 5,
       .type_attr2 = "DstT", .dtypes2 = types_nb, .n_dtypes2 = 5},
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &more[i]));
  return NULL;
}
