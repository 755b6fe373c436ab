/* vk_math.c: Vulkan elementwise kernels: the unary math and activation ops (unary.comp), binary
 * arithmetic, comparisons and logic with TensorFlow broadcasting (binary.comp), activation
 * gradients, BiasAdd and AddN and ClipByValue (built from binary.comp), Select / SelectV2
 * (select.comp) and Cast between float32, int32 and bool (cast.comp).
 *
 * float32 everywhere; int32 where the arithmetic is exact and cannot fail (no integer division
 * or powers, whose divide-by-zero and negative-exponent errors a shader cannot raise: those run
 * on the CPU). Error messages match the CPU kernels'. */
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

/* ---------------------------------------------------------------------------------------------
 * Unary */

typedef struct un_op {
  const char *name;
  uint32_t code;
  bool with_int; /* int32 too */
  const char *param;
  float param_default;
} un_op_t;

typedef struct unary_push {
  uint32_t n, op, dtype;
  float alpha;
} unary_push_t;

static const un_op_t un_ops[] = {
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

static weft_status_t *k_unary(weft_kernel_ctx_t *ctx, void *state) {
  const un_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  bool out_bool = op->code >= VK_UN_FIRST_BOOL_OUT;
  WEFT_RETURN_IF_ERROR(
      weft__vk_output(ctx, 0, out_bool ? WEFT_DT_BOOL : x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, op->name));
  unary_push_t p = {(uint32_t)x.num_elements, op->code, (uint32_t)weft__vk_dt(x.dtype), 0.0f};
  if (op->param != NULL) p.alpha = weft__vk_attr_float(ctx, op->param, op->param_default);
  void *bufs[2] = {x.data, y.data};
  uint64_t items = out_bool ? ((uint64_t)x.num_elements + 3) / 4 : (uint64_t)x.num_elements;
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_UNARY, p.op, p.dtype, &p,
                              sizeof p, bufs, 2, weft__vk_groups(ctx, items), 1, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Binary */

typedef struct binary_push {
  uint32_t n, op, dtype, rank;
  float alpha;
  uint32_t pad[3];
  uint32_t dims[VK_MAX_DIMS];
  uint32_t sa[VK_MAX_DIMS];
  uint32_t sb[VK_MAX_DIMS];
} binary_push_t;

weft_status_t *weft__vk_binary(weft_kernel_ctx_t *ctx, uint32_t op, float alpha,
                               weft_dtype_t dtype, const weft_vk_bcast_t *bc, void *x, void *y,
                               void *z) {
  if (bc->out_elements == 0) return NULL;
  if (bc->out_elements >= ((int64_t)1 << 32) - 4)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "%lld elements are too many for a Vulkan kernel (at most 2^32)",
                          (long long)bc->out_elements);
  binary_push_t p;
  memset(&p, 0, sizeof p);
  p.n = (uint32_t)bc->out_elements;
  p.op = op;
  p.dtype = (uint32_t)weft__vk_dt(dtype);
  p.rank = (uint32_t)bc->rank;
  p.alpha = alpha;
  for (int d = 0; d < bc->rank; d++) {
    p.dims[d] = (uint32_t)bc->dims[d];
    p.sa[d] = (uint32_t)bc->strides[0][d];
    p.sb[d] = (uint32_t)bc->strides[1][d];
  }
  void *bufs[3] = {x, y, z};
  uint64_t items = op >= VK_BIN_FIRST_BOOL_OUT ? ((uint64_t)p.n + 3) / 4 : (uint64_t)p.n;
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_BINARY, p.op, p.dtype, &p,
                              sizeof p, bufs, 3, weft__vk_groups(ctx, items), 1, 1);
}

static weft_status_t *bcast2(weft_kernel_ctx_t *ctx, weft_vk_bcast_t *bc,
                             const weft_tensor_view_t *x, const weft_tensor_view_t *y) {
  const weft_tensor_view_t *ins[2] = {x, y};
  return weft_pc_bcast_views(ctx, bc, 2, ins);
}

typedef struct bin_op {
  const char *name;
  uint32_t code;
  const weft_dtype_t *dtypes; /* NULL: bool only, no type attribute (LogicalAnd/Or) */
  size_t n_dtypes;
  const char *param;
  float param_default;
} bin_op_t;


static const bin_op_t bin_ops[] = {
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

static weft_status_t *k_binary(weft_kernel_ctx_t *ctx, void *state) {
  const bin_op_t *op = state;
  weft_tensor_view_t x, y, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, op->name, &x, &y));
  bool out_bool = op->code >= VK_BIN_FIRST_BOOL_OUT;
  weft_vk_bcast_t bc;
  weft_status_t *bs = bcast2(ctx, &bc, &x, &y);
  if (bs != NULL) {
    /* Equal/NotEqual with incompatible_shape_error = false answer "not equal" as a scalar. */
    bool equality = op->code == VK_BIN_EQ || op->code == VK_BIN_NE;
    if (!equality || weft__vk_attr_bool(ctx, "incompatible_shape_error", true)) return bs;
    H->status_free(bs);
    WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &z));
    return weft__vk_fill(weft__vk_ctx_device(ctx), z.data, 1, op->code == VK_BIN_NE ? 1u : 0u);
  }
  WEFT_RETURN_IF_ERROR(
      weft__vk_output(ctx, 0, out_bool ? WEFT_DT_BOOL : x.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, op->name));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &y, op->name));
  float alpha = op->param != NULL ? weft__vk_attr_float(ctx, op->param, op->param_default) : 0.0f;
  return weft__vk_binary(ctx, op->code, alpha, x.dtype, &bc, x.data, y.data, z.data);
}

/* ---------------------------------------------------------------------------------------------
 * BiasAdd: a broadcast add with the bias viewed as [C] (NHWC) or [C, 1, ..., 1] (NCHW). */

static weft_status_t *k_bias_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_bias_add_t b;
  WEFT_RETURN_IF_ERROR(weft_pc_bias_add_prepare(ctx, &b));
  const weft_tensor_view_t *x = &b.x;
  if (x->num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, x, "BiasAdd value"));
  int64_t bdims[WEFT_MAX_RANK];
  int brank = x->rank - b.cdim;
  bdims[0] = b.bias.dims[0];
  for (int d = 1; d < brank; d++) bdims[d] = 1;
  const int ranks[2] = {x->rank, brank};
  const int64_t *dims[2] = {x->dims, bdims};
  weft_vk_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft__vk_bcast_init(ctx, &bc, 2, ranks, dims));
  return weft__vk_binary(ctx, VK_BIN_ADD, 0.0f, x->dtype, &bc, x->data, b.bias.data, b.y.data);
}

/* ---------------------------------------------------------------------------------------------
 * AddN: a chain of adds, the first into the output, the rest in place. */

static weft_status_t *k_addn(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n;
  weft_tensor_view_t first, z;
  WEFT_RETURN_IF_ERROR(weft_pc_addn_first(ctx, &n, &first));
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft_pc_addn_input(ctx, k, &first, &v));
  }
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, first.dtype, first.rank, first.dims, &z));
  if (first.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &first, "AddN input"));
  weft_vk_bcast_t bc;
  WEFT_RETURN_IF_ERROR(bcast2(ctx, &bc, &first, &first));
  if (n == 1)
    return weft__vk_copy_device_to_device(weft__vk_ctx_device(ctx), z.data, first.data, z.nbytes);
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, k, &v));
    WEFT_RETURN_IF_ERROR(weft__vk_binary(ctx, VK_BIN_ADD, 0.0f, first.dtype, &bc,
                                         k == 1 ? first.data : z.data, v.data, z.data));
  }
  return NULL;
}

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
 * Select, SelectV2 */

typedef struct select_push {
  uint32_t n, rank, bool_elems;
  uint32_t dims[VK_SELECT_MAX_DIMS];
  uint32_t sc[VK_SELECT_MAX_DIMS];
  uint32_t st[VK_SELECT_MAX_DIMS];
  uint32_t se[VK_SELECT_MAX_DIMS];
} select_push_t;

static weft_status_t *run_select(weft_kernel_ctx_t *ctx, const weft_vk_bcast_t *bc,
                                 weft_dtype_t dtype, void *c, void *t, void *e, void *z) {
  if (bc->out_elements == 0) return NULL;
  if (bc->rank > (int)VK_SELECT_MAX_DIMS)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "Select broadcasting over %d alternating dims is not supported on "
                          "Vulkan (at most %u)",
                          bc->rank, VK_SELECT_MAX_DIMS);
  select_push_t p;
  memset(&p, 0, sizeof p);
  p.n = (uint32_t)bc->out_elements;
  p.rank = (uint32_t)bc->rank;
  p.bool_elems = dtype == WEFT_DT_BOOL;
  for (int d = 0; d < bc->rank; d++) {
    p.dims[d] = (uint32_t)bc->dims[d];
    p.sc[d] = (uint32_t)bc->strides[0][d];
    p.st[d] = (uint32_t)bc->strides[1][d];
    p.se[d] = (uint32_t)bc->strides[2][d];
  }
  void *bufs[4] = {c, t, e, z};
  uint64_t items = p.bool_elems ? ((uint64_t)p.n + 3) / 4 : (uint64_t)p.n;
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_SELECT, &p, sizeof p, bufs, 4,
                           weft__vk_groups(ctx, items), 1, 1);
}

static weft_status_t *k_select(weft_kernel_ctx_t *ctx, void *state) {
  bool v2 = state != NULL;
  weft_tensor_view_t in[3], z; /* condition, then, else */
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  const weft_tensor_view_t c = in[0], t = in[1], e = in[2];
  int64_t cdims[WEFT_MAX_RANK];
  int crank = c.rank;
  memcpy(cdims, c.dims, sizeof cdims);
  if (!v2) {
    /* Select: t and e alike; the condition is their shape, a scalar, or a vector along dim 0,
     * which broadcasts as [n, 1, ..., 1]. */
    weft_pc_select_cond_t cond;
    WEFT_RETURN_IF_ERROR(weft_pc_select_check(ctx, &c, &t, &e, &cond));
    if (cond == WEFT_PC_SELECT_ROWS) {
      crank = t.rank;
      for (int d = 1; d < crank; d++) cdims[d] = 1;
    }
  }
  const int ranks[3] = {crank, t.rank, e.rank};
  const int64_t *dims[3] = {cdims, t.dims, e.dims};
  weft_vk_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft__vk_bcast_init(ctx, &bc, 3, ranks, dims));
  if (!v2) {
    bc.out_rank = t.rank; /* a scalar condition never changes the output shape */
    memcpy(bc.out_dims, t.dims, sizeof bc.out_dims);
  }
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, t.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &z, "Select output"));
  return run_select(ctx, &bc, t.dtype, c.data, t.data, e.data, z.data);
}

/* ---------------------------------------------------------------------------------------------
 * Cast */

typedef struct cast_push {
  uint32_t n, src, dst;
} cast_push_t;

static weft_status_t *k_cast(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  weft_dtype_t dst = x.dtype;
  WEFT_RETURN_IF_ERROR(H->attr_type(H->kernel_attrs(ctx), "DstT", &dst));
  if (x.dtype == dst) return H->kernel_forward_input(ctx, 0, 0, x.rank, x.dims);
  int ss = weft__vk_dt(x.dtype), ds = weft__vk_dt(dst);
  if (ss < 0 || ds < 0)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED, "Cast %s to %s is not supported on Vulkan",
                          weft__vk_dtype_name(x.dtype), weft__vk_dtype_name(dst));
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, dst, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, "Cast input"));
  cast_push_t p = {(uint32_t)x.num_elements, (uint32_t)ss, (uint32_t)ds};
  void *bufs[2] = {x.data, y.data};
  uint64_t items = dst == WEFT_DT_BOOL ? ((uint64_t)p.n + 3) / 4 : (uint64_t)p.n;
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_CAST, &p, sizeof p, bufs, 2,
                           weft__vk_groups(ctx, items), 1, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int v2_marker;

weft_status_t *weft__vk_register_math(const weft_registrar_t *reg) {
  const weft_dtype_t *fib = weft__vk_types_fib, *fi = weft__vk_types_fi;
  for (size_t i = 0; i < sizeof un_ops / sizeof un_ops[0]; i++) {
    const un_op_t *op = &un_ops[i];
    bool typed = op->code != VK_UN_LOGICAL_NOT; /* LogicalNot is bool only, without a type attr */
    WEFT_RETURN_IF_ERROR(weft__vk_register_typed(reg, op->name, k_unary, NULL, (void *)op,
                                                 typed ? fi : NULL, op->with_int ? 2 : 1));
  }
  for (size_t i = 0; i < sizeof bin_ops / sizeof bin_ops[0]; i++) {
    const bin_op_t *op = &bin_ops[i];
    WEFT_RETURN_IF_ERROR(weft__vk_register_typed(reg, op->name, k_binary, NULL, (void *)op,
                                                 op->dtypes, op->n_dtypes));
  }
  const weft_vk_kernel_spec_t more[] = {
      {.op = "BiasAdd", .compute = k_bias_add, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "AddN", .compute = k_addn, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "ClipByValue", .compute = k_clip, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "Select", .compute = k_select, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "SelectV2", .compute = k_select, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .user_data = &v2_marker},
  };
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__vk_register(reg, &more[i]));
  const weft_type_constraint_t cast_types[] = {{"SrcT", fib, 3}, {"DstT", fib, 3}};
  return weft__vk_register_full(reg, "Cast", cast_types, 2, NULL, k_cast, NULL);
}
