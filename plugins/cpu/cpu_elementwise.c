/* cpu_elementwise.c: unary elementwise kernels (Neg, Abs, Sqrt, Exp, Tanh, Sigmoid, Relu,
 * IsNan, LogicalNot, ...). Each op is a table row of per-dtype loops over contiguous memory;
 * the loops are plain restrict-pointer loops that gcc -O2 vectorises where the math allows
 * (float32 Exp, Log, Tanh, Sigmoid, Expm1, Log1p, Erf, Softplus, Elu, Selu, Sqrt, Rsqrt,
 * Reciprocal, Softsign, Square, Neg, Abs, Relu, Relu6, Sin, Cos and Erfc are the
 * hand-vectorised ones of cpu_vmath.h instead), and the driver splits them over the intra-op
 * pool. */
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "cpu_internal.h"
#include "cpu_vmath.h"

/* y[i] = EXPR(a = x[i]) with T_ the element type and U_ an unsigned type wide enough to do
 * wrapping integer arithmetic without signed overflow. `p` is the op's float parameter. */
typedef void (*un_fn)(const void *x, void *y, int64_t n, double p);

#define UN_DEF(NAME, T, U, TY, EXPR)                                          \
  static void NAME(const void *xv, void *yv, int64_t n, double p_) {          \
    typedef T T_ __attribute__((unused));                                     \
    typedef U U_ __attribute__((unused));                                     \
    const T *restrict x = (const T *)xv;                                      \
    TY *restrict y = (TY *)yv;                                                \
    const T p __attribute__((unused)) = (T)p_;                                \
    for (int64_t i = 0; i < n; i++) {                                         \
      const T a = x[i];                                                       \
      y[i] = (TY)(EXPR);                                                      \
    }                                                                         \
  }

#define UN_FLOAT(OP, EXPR)                  \
  UN_DEF(OP##_f32, float, float, float, EXPR) \
  UN_DEF(OP##_f64, double, double, double, EXPR)
#define UN_FLOAT_BOOL(OP, EXPR)                 \
  UN_DEF(OP##_f32, float, float, uint8_t, EXPR) \
  UN_DEF(OP##_f64, double, double, uint8_t, EXPR)
#define UN_SINT(OP, EXPR)                         \
  UN_DEF(OP##_i8, int8_t, uint32_t, int8_t, EXPR)    \
  UN_DEF(OP##_i16, int16_t, uint32_t, int16_t, EXPR) \
  UN_DEF(OP##_i32, int32_t, uint32_t, int32_t, EXPR) \
  UN_DEF(OP##_i64, int64_t, uint64_t, int64_t, EXPR)
#define UN_UINT(OP, EXPR)                              \
  UN_DEF(OP##_u8, uint8_t, uint32_t, uint8_t, EXPR)    \
  UN_DEF(OP##_u16, uint16_t, uint32_t, uint16_t, EXPR) \
  UN_DEF(OP##_u32, uint32_t, uint32_t, uint32_t, EXPR) \
  UN_DEF(OP##_u64, uint64_t, uint64_t, uint64_t, EXPR)

#define FNS_FLOAT(OP) [CPU_SLOT_F32] = OP##_f32, [CPU_SLOT_F64] = OP##_f64
#define FNS_SINT(OP) \
  [CPU_SLOT_I8] = OP##_i8, [CPU_SLOT_I16] = OP##_i16, [CPU_SLOT_I32] = OP##_i32, \
  [CPU_SLOT_I64] = OP##_i64
#define FNS_UINT(OP) \
  [CPU_SLOT_U8] = OP##_u8, [CPU_SLOT_U16] = OP##_u16, [CPU_SLOT_U32] = OP##_u32, \
  [CPU_SLOT_U64] = OP##_u64

/* SELU's constants (Klambauer et al.), as TensorFlow uses them. */
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717
/* Softplus switches to x or exp(x) where log1p(exp(x)) adds nothing: log(epsilon) + 2. */
#define SOFTPLUS_THRESHOLD(T) ((T)(sizeof(T) == 4 ? -13.942385 : -34.043653))

UN_DEF(neg_f64, double, double, double, -a)
UN_SINT(neg, (T_)(0u - (U_)a))
UN_DEF(abs_f64, double, double, double, fabs(a))
UN_SINT(abs, a < 0 ? (T_)(0u - (U_)a) : a)
UN_UINT(abs, a)
UN_DEF(square_f64, double, double, double, a * a)
UN_SINT(square, (T_)((U_)a * (U_)a))
UN_UINT(square, (T_)((U_)a * (U_)a))
UN_DEF(sqrt_f64, double, double, double, sqrt(a))
UN_DEF(rsqrt_f64, double, double, double, (T_)1 / sqrt(a))
UN_DEF(log_f64, double, double, double, log(a))
UN_DEF(log1p_f64, double, double, double, log1p(a))
UN_DEF(expm1_f64, double, double, double, expm1(a))
UN_FLOAT(sign, a > 0 ? (T_)1 : (a < 0 ? (T_)-1 : a))
UN_SINT(sign, (a > 0) - (a < 0))
UN_UINT(sign, a > 0)
UN_DEF(reciprocal_f64, double, double, double, (T_)1 / a)
UN_FLOAT(floor, floor(a))
UN_FLOAT(ceil, ceil(a))
UN_FLOAT(round, rint(a)) /* the default rounding mode is half to even */
UN_SINT(round, a)
UN_DEF(sin_f64, double, double, double, sin(a))
UN_DEF(cos_f64, double, double, double, cos(a))
UN_FLOAT(tan, tan(a))
UN_FLOAT(asin, asin(a))
UN_FLOAT(acos, acos(a))
UN_FLOAT(atan, atan(a))
UN_FLOAT(sinh, sinh(a))
UN_FLOAT(cosh, cosh(a))
UN_FLOAT(asinh, asinh(a))
UN_FLOAT(acosh, acosh(a))
UN_FLOAT(atanh, atanh(a))

/* float32 Exp, Log, Tanh, Sigmoid, Expm1, Log1p, Erf, Softplus, Elu, Selu and Sqrt ... Cos:
 * the vectorised loops (cpu_vmath.h) of the instruction set level chosen once at plugin init
 * (weft__cpu_register_elementwise); float16 and bfloat16 reach them through un_range's widened
 * blocks. float64 keeps libm's double precision. */
static const weft_cpu_vmath_t *vm;
#define VM_F32(OP)                                                              \
  static void OP##_f32(const void *xv, void *yv, int64_t n, double p) {           \
    (void)p;                                                                    \
    (vm->OP)((const float *)xv, (float *)yv, n); /* () keeps tgmath.h off */     \
  }                                                                             \
  static void OP##_f32_nt(const void *xv, void *yv, int64_t n, double p) {        \
    (void)p;                                                                    \
    (vm->nt->OP)((const float *)xv, (float *)yv, n);                            \
  }
VM_F32(exp)
VM_F32(log)
VM_F32(tanh)
VM_F32(sigmoid)
VM_F32(expm1)
VM_F32(log1p)
VM_F32(erf)
VM_F32(softplus)
VM_F32(elu)
VM_F32(selu)
VM_F32(sqrt)
VM_F32(rsqrt)
VM_F32(reciprocal)
VM_F32(softsign)
VM_F32(square)
VM_F32(neg)
VM_F32(abs)
VM_F32(relu)
VM_F32(relu6)
VM_F32(sin)
VM_F32(cos)
VM_F32(erfc)
/* float64 Exp, Sigmoid and Tanh: cpu_vmath.h's double loops (libm's scalar calls took half of a
 * float64 LSTM's step). */
#define VM_F64(OP)                                                         \
  static void OP##_f64(const void *xv, void *yv, int64_t n, double p) {      \
    (void)p;                                                               \
    (vm->OP##_f64)((const double *)xv, (double *)yv, n);                   \
  }
VM_F64(exp)
VM_F64(sigmoid)
VM_F64(tanh)

/* LeakyRelu: the vector select of cpu_vmath.h with alpha as the scalar operand (the scalar loop
 * branched on each sign, and random signs cost it 8 ns an element). */
static void leaky_relu_f32(const void *xv, void *yv, int64_t n, double p) {
  const float alpha = (float)p;
  vm->leaky.vs((const float *)xv, &alpha, (float *)yv, n);
}
static void leaky_relu_f32_nt(const void *xv, void *yv, int64_t n, double p) {
  const float alpha = (float)p;
  vm->nt->leaky.vs((const float *)xv, &alpha, (float *)yv, n);
}

/* Each vectorised loop beside its streaming form, for outputs larger than the last-level cache
 * (cpu_internal.h, "Streaming stores"). */
#define NT_PAIR(OP) {OP##_f32, OP##_f32_nt}
static const struct {
  un_fn plain, nt;
} nt_pairs[] = {
    NT_PAIR(exp),  NT_PAIR(log),        NT_PAIR(tanh),     NT_PAIR(sigmoid), NT_PAIR(expm1),
    NT_PAIR(log1p), NT_PAIR(erf),       NT_PAIR(softplus), NT_PAIR(elu),     NT_PAIR(selu),
    NT_PAIR(sqrt), NT_PAIR(rsqrt),      NT_PAIR(reciprocal), NT_PAIR(softsign), NT_PAIR(square),
    NT_PAIR(neg),  NT_PAIR(abs),        NT_PAIR(relu),     NT_PAIR(relu6),   NT_PAIR(sin),
    NT_PAIR(cos),  NT_PAIR(erfc),       NT_PAIR(leaky_relu),
};

/* fn's streaming form, or NULL where it has none. */
static un_fn nt_of(un_fn fn) {
  for (size_t i = 0; i < sizeof nt_pairs / sizeof nt_pairs[0]; i++)
    if (nt_pairs[i].plain == fn) return nt_pairs[i].nt;
  return NULL;
}

UN_DEF(erf_f64, double, double, double, erf(a))
UN_DEF(erfc_f64, double, double, double, erfc(a))
UN_FLOAT(lgamma, lgamma(a))
UN_FLOAT_BOOL(isnan, isnan(a))
UN_FLOAT_BOOL(isinf, isinf(a))
UN_FLOAT_BOOL(isfinite, isfinite(a))
/* NaN compares false, so these forward NaN like TensorFlow does. */
UN_DEF(relu_f64, double, double, double, a < 0 ? (T_)0 : a)
UN_SINT(relu, a < 0 ? (T_)0 : a)
UN_UINT(relu, a)
UN_DEF(relu6_f64, double, double, double,
       a < 0 ? (T_)0 : (a > 6 ? (T_)6 : a))
UN_SINT(relu6, a < 0 ? (T_)0 : (a > 6 ? (T_)6 : a))
UN_UINT(relu6, a > 6 ? (T_)6 : a)
UN_DEF(elu_f64, double, double, double, a < 0 ? expm1(a) : a)
UN_DEF(selu_f64, double, double, double,
       a < 0 ? (T_)(SELU_SCALE * SELU_ALPHA) * expm1(a) : (T_)SELU_SCALE * a)
UN_DEF(leaky_relu_f64, double, double, double, a < 0 ? p * a : a)
UN_DEF(softplus_f64, double, double, double, a > -SOFTPLUS_THRESHOLD(T_)
                       ? a
                       : (a < SOFTPLUS_THRESHOLD(T_) ? exp(a) : log1p(exp(a))))
UN_DEF(softsign_f64, double, double, double, a / ((T_)1 + fabs(a)))
UN_DEF(logical_not_b, uint8_t, uint8_t, uint8_t, a == 0)


typedef struct un_op {
  const char *name;
  int64_t cost;       /* rough cycles per element */
  bool out_bool;
  const char *param;  /* float attribute passed to the loop as p, or NULL */
  float param_default;
  un_fn fns[CPU_N_SLOTS];
} un_op_t;

static const un_op_t un_ops[] = {
    {"Neg", 1, false, NULL, 0, {FNS_FLOAT(neg), FNS_SINT(neg)}},
    {"Abs", 1, false, NULL, 0, {FNS_FLOAT(abs), FNS_SINT(abs), FNS_UINT(abs)}},
    {"Square", 1, false, NULL, 0, {FNS_FLOAT(square), FNS_SINT(square), FNS_UINT(square)}},
    {"Sqrt", 8, false, NULL, 0, {FNS_FLOAT(sqrt)}},
    {"Rsqrt", 10, false, NULL, 0, {FNS_FLOAT(rsqrt)}},
    {"Exp", 20, false, NULL, 0, {FNS_FLOAT(exp)}},
    {"Log", 20, false, NULL, 0, {FNS_FLOAT(log)}},
    {"Log1p", 25, false, NULL, 0, {FNS_FLOAT(log1p)}},
    {"Expm1", 25, false, NULL, 0, {FNS_FLOAT(expm1)}},
    {"Sign", 1, false, NULL, 0, {FNS_FLOAT(sign), FNS_SINT(sign), FNS_UINT(sign)}},
    {"Reciprocal", 4, false, NULL, 0, {FNS_FLOAT(reciprocal)}},
    {"Inv", 4, false, NULL, 0, {FNS_FLOAT(reciprocal)}},
    {"Floor", 2, false, NULL, 0, {FNS_FLOAT(floor)}},
    {"Ceil", 2, false, NULL, 0, {FNS_FLOAT(ceil)}},
    {"Round", 2, false, NULL, 0, {FNS_FLOAT(round), FNS_SINT(round)}},
    {"Rint", 2, false, NULL, 0, {FNS_FLOAT(round)}},
    {"Sin", 20, false, NULL, 0, {FNS_FLOAT(sin)}},
    {"Cos", 20, false, NULL, 0, {FNS_FLOAT(cos)}},
    {"Tan", 30, false, NULL, 0, {FNS_FLOAT(tan)}},
    {"Asin", 30, false, NULL, 0, {FNS_FLOAT(asin)}},
    {"Acos", 30, false, NULL, 0, {FNS_FLOAT(acos)}},
    {"Atan", 30, false, NULL, 0, {FNS_FLOAT(atan)}},
    {"Sinh", 30, false, NULL, 0, {FNS_FLOAT(sinh)}},
    {"Cosh", 30, false, NULL, 0, {FNS_FLOAT(cosh)}},
    {"Asinh", 30, false, NULL, 0, {FNS_FLOAT(asinh)}},
    {"Acosh", 30, false, NULL, 0, {FNS_FLOAT(acosh)}},
    {"Atanh", 30, false, NULL, 0, {FNS_FLOAT(atanh)}},
    {"Tanh", 25, false, NULL, 0, {FNS_FLOAT(tanh)}},
    {"Sigmoid", 25, false, NULL, 0, {FNS_FLOAT(sigmoid)}},
    {"Erf", 25, false, NULL, 0, {FNS_FLOAT(erf)}},
    {"Erfc", 25, false, NULL, 0, {FNS_FLOAT(erfc)}},
    {"Lgamma", 40, false, NULL, 0, {FNS_FLOAT(lgamma)}},
    {"IsNan", 1, true, NULL, 0, {FNS_FLOAT(isnan)}},
    {"IsInf", 1, true, NULL, 0, {FNS_FLOAT(isinf)}},
    {"IsFinite", 1, true, NULL, 0, {FNS_FLOAT(isfinite)}},
    {"Relu", 1, false, NULL, 0, {FNS_FLOAT(relu), FNS_SINT(relu), FNS_UINT(relu)}},
    {"Relu6", 1, false, NULL, 0, {FNS_FLOAT(relu6), FNS_SINT(relu6), FNS_UINT(relu6)}},
    {"Elu", 25, false, NULL, 0, {FNS_FLOAT(elu)}},
    {"Selu", 25, false, NULL, 0, {FNS_FLOAT(selu)}},
    {"LeakyRelu", 1, false, "alpha", 0.2f, {FNS_FLOAT(leaky_relu)}},
    {"Softplus", 40, false, NULL, 0, {FNS_FLOAT(softplus)}},
    {"Softsign", 4, false, NULL, 0, {FNS_FLOAT(softsign)}},
    {"LogicalNot", 1, true, NULL, 0, {[CPU_SLOT_BOOL] = logical_not_b}},
};

typedef struct un_job {
  un_fn fn;
  const char *x;
  char *y;
  size_t xs, ys;
  double p;
  weft_dtype_t f16;  /* HALF or BFLOAT16: fn is the float32 loop, run on widened blocks */
  bool out_bool;
  bool stream;       /* fn is a streaming loop (cpu_vmath.h's nt table) */
} un_job_t;

static void un_range(void *arg, int64_t b, int64_t e) {
  const un_job_t *j = arg;
  if (j->f16 == WEFT_DT_INVALID) {
    j->fn(j->x + (size_t)b * j->xs, j->y + (size_t)b * j->ys, e - b, j->p);
    if (j->stream) weft__cpu_stream_fence();
    return;
  }
  float xb[CPU_F16_BLOCK], yb[CPU_F16_BLOCK];
  for (int64_t pos = b; pos < e; pos += CPU_F16_BLOCK) {
    int64_t n = e - pos < CPU_F16_BLOCK ? e - pos : CPU_F16_BLOCK;
    weft__cpu_f16_to_float(j->f16, (const uint16_t *)j->x + pos, xb, n);
    if (j->out_bool) {
      j->fn(xb, (uint8_t *)j->y + pos, n, j->p);
    } else {
      j->fn(xb, yb, n, j->p);
      weft__cpu_float_to_f16(j->f16, yb, (uint16_t *)j->y + pos, n);
    }
  }
}

static weft_status_t *k_unary(weft_kernel_ctx_t *ctx, void *state) {
  const un_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  int slot = weft__cpu_slot(x.dtype);
  bool f16 = slot == CPU_SLOT_F16 || slot == CPU_SLOT_BF16;
  un_fn fn = slot >= 0 ? op->fns[f16 ? CPU_SLOT_F32 : slot] : NULL;
  if (fn == NULL)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(x.dtype));
  weft_dtype_t out_dtype = op->out_bool ? WEFT_DT_BOOL : x.dtype;
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, out_dtype, &x, &y));
  if (x.num_elements == 0) return NULL;
  un_job_t j = {fn,
                x.data,
                y.data,
                weft__cpu_dtype_size(x.dtype),
                weft__cpu_dtype_size(out_dtype),
                0.0,
                f16 ? x.dtype : WEFT_DT_INVALID,
                op->out_bool,
                false};
  /* At one thread an op of WEFT_CPU_STREAM_COSTLY cycles or more per element is bound by its
   * arithmetic, not by memory: streaming stores saved it nothing there and cost Tanh, Sigmoid
   * and Erf 10-20% (docs/performance.md, "Erf in one polynomial per interval"). With more
   * threads the memory is shared and the streamed stores' saved reads win again. */
  bool costly_alone =
      op->cost >= WEFT_CPU_STREAM_COSTLY && weft__cpu_host->kernel_num_threads(ctx) <= 1;
  if (!f16 && slot == CPU_SLOT_F32 && !costly_alone &&
      weft__cpu_stream_output(x.num_elements, sizeof(float))) {
    un_fn nt = nt_of(fn);
    if (nt != NULL) {
      j.fn = nt;
      j.stream = true;
    }
  }
  if (op->param != NULL) j.p = weft__cpu_attr_float(ctx, op->param, op->param_default);
  if (x.num_elements * op->cost >= CPU_SCALAR_SPLIT_MIN && slot == CPU_SLOT_F32 &&
      nt_of(fn) != NULL) /* one of cpu_vmath.h's vector loops, worth a look */
    weft__cpu_parallel_f32(ctx, x.num_elements, op->cost, 1, un_range, &j);
  else
    weft__cpu_parallel(ctx, x.num_elements, op->cost, un_range, &j);
  return NULL;
}

weft_cpu_unary_f32_fn weft__cpu_unary_f32(const char *op, const char **param, float *dflt,
                                         int64_t *cost, weft_cpu_unary_f32_fn *nt) {
  for (size_t i = 0; i < sizeof un_ops / sizeof un_ops[0]; i++) {
    const un_op_t *u = &un_ops[i];
    if (strcmp(u->name, op) != 0 || u->out_bool) continue;
    *param = u->param;
    *dflt = u->param_default;
    *cost = u->cost;
    if (nt != NULL) *nt = u->fns[CPU_SLOT_F32] != NULL ? nt_of(u->fns[CPU_SLOT_F32]) : NULL;
    return u->fns[CPU_SLOT_F32];
  }
  return NULL;
}

weft_status_t *weft__cpu_register_elementwise(const weft_registrar_t *reg) {
  char *warning = NULL;
  weft_cpu_isa_t isa = weft__cpu_isa_choose(getenv("WEFT_CPU_ISA"), &warning);
  /* (host->log) in parentheses: tgmath.h's log() macro would take it otherwise. */
  if (warning != NULL) (weft__cpu_host->log)(WEFT_LOG_WARNING, "CPU plugin", "%s", warning);
  free(warning);
  (weft__cpu_host->log)(WEFT_LOG_INFO, "CPU plugin",
                        "float32 Exp, Log, Tanh, Sigmoid, Expm1, Log1p, Erf, Softplus, Elu, "
                        "Selu, Sqrt, Rsqrt, Reciprocal, Softsign, Square, Neg, Abs, Relu, Relu6, "
                        "Sin, Cos, Erfc; Add, Sub, Mul, Div, Maximum, Minimum, SquaredDifference, "
                        "Pow: %s code",
                        weft__cpu_isa_name(isa));
  vm = weft__cpu_vmath_for(isa);
  weft__cpu_vmath_set(vm); /* cpu_binary.c's and cpu_fused.c's float32 loops */
  int64_t stream = weft__cpu_stream_choose(getenv("WEFT_CPU_STREAM_BYTES"), &warning);
  if (warning != NULL) (weft__cpu_host->log)(WEFT_LOG_WARNING, "CPU plugin", "%s", warning);
  free(warning);
  if (stream > 0)
    (weft__cpu_host->log)(WEFT_LOG_INFO, "CPU plugin",
                          "float32 elementwise outputs of %lld bytes and more: streaming stores",
                          (long long)stream);
  else
    (weft__cpu_host->log)(WEFT_LOG_INFO, "CPU plugin", "streaming stores off");
  weft__cpu_stream_set(stream);
  for (size_t i = 0; i < sizeof un_ops / sizeof un_ops[0]; i++) {
    const un_op_t *op = &un_ops[i];
    bool has[CPU_N_SLOTS];
    for (int s = 0; s < CPU_N_SLOTS; s++) has[s] = op->fns[s] != NULL;
    weft_dtype_t dtypes[CPU_N_SLOTS + 2];
    size_t n = weft__cpu_slot_types(has, dtypes);
    weft_cpu_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = op->name;
    spec.compute = k_unary;
    /* LogicalNot has no type attribute: it is bool only. */
    spec.type_attr = op->fns[CPU_SLOT_BOOL] != NULL ? NULL : "T";
    spec.dtypes = dtypes;
    spec.n_dtypes = n;
    spec.user_data = (void *)op;
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  }
  return NULL;
}
