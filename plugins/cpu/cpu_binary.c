/* cpu_binary.c: binary elementwise kernels with TensorFlow broadcasting (AddV2, Sub, Mul, Div,
 * FloorDiv, FloorMod, Pow, Maximum, comparisons, logic, activation gradients), string Add and
 * Equal, and the n-ary elementwise ops AddN, Select, SelectV2 and ClipByValue.
 *
 * Every op is three loops per dtype: vector-vector, scalar-vector and vector-scalar over
 * contiguous memory. The broadcast geometry (cpu_util.c) collapses the shapes so that the
 * same-shape and scalar cases are a single run, and general broadcasting is a series of runs. */
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "cpu_internal.h"
#include "cpu_vmath.h"

#define H weft__cpu_host

typedef void (*bin_fn)(const void *x, const void *y, void *z, int64_t n, double p);
typedef struct bin_fns {
  bin_fn vv, sv, vs;
} bin_fns_t;

#define BIN_BODY(T, U, TY, EXPR, LOAD_A, LOAD_B)                 \
  {                                                              \
    typedef T T_ __attribute__((unused));                        \
    typedef U U_ __attribute__((unused));                        \
    const T *restrict x = (const T *)xv;                         \
    const T *restrict y = (const T *)yv;                         \
    TY *restrict z = (TY *)zv;                                   \
    const T p __attribute__((unused)) = (T)p_;                   \
    for (int64_t i = 0; i < n; i++) {                            \
      const T a = LOAD_A;                                        \
      const T b = LOAD_B;                                        \
      z[i] = (TY)(EXPR);                                         \
    }                                                            \
  }

#define BIN_DEF(NAME, T, U, TY, EXPR)                                                  \
  static void NAME##_vv(const void *xv, const void *yv, void *zv, int64_t n, double p_) \
      BIN_BODY(T, U, TY, EXPR, x[i], y[i])                                             \
  static void NAME##_sv(const void *xv, const void *yv, void *zv, int64_t n, double p_) \
      BIN_BODY(T, U, TY, EXPR, x[0], y[i])                                             \
  static void NAME##_vs(const void *xv, const void *yv, void *zv, int64_t n, double p_) \
      BIN_BODY(T, U, TY, EXPR, x[i], y[0])

#define BIN_FLOAT_T(OP, TY32, TY64, EXPR)        \
  BIN_DEF(OP##_f32, float, float, TY32, EXPR) \
  BIN_DEF(OP##_f64, double, double, TY64, EXPR)
#define BIN_SINT_T(OP, TY, EXPR)                          \
  BIN_DEF(OP##_i8, int8_t, uint32_t, TY(int8_t), EXPR)    \
  BIN_DEF(OP##_i16, int16_t, uint32_t, TY(int16_t), EXPR) \
  BIN_DEF(OP##_i32, int32_t, uint32_t, TY(int32_t), EXPR) \
  BIN_DEF(OP##_i64, int64_t, uint64_t, TY(int64_t), EXPR)
#define BIN_UINT_T(OP, TY, EXPR)                             \
  BIN_DEF(OP##_u8, uint8_t, uint32_t, TY(uint8_t), EXPR)     \
  BIN_DEF(OP##_u16, uint16_t, uint32_t, TY(uint16_t), EXPR)  \
  BIN_DEF(OP##_u32, uint32_t, uint32_t, TY(uint32_t), EXPR)  \
  BIN_DEF(OP##_u64, uint64_t, uint64_t, TY(uint64_t), EXPR)
#define SAME(T) T
#define BOOLOUT(T) uint8_t

#define BIN_FLOAT(OP, EXPR) BIN_FLOAT_T(OP, float, double, EXPR)
#define BIN_SINT(OP, EXPR) BIN_SINT_T(OP, SAME, EXPR)
#define BIN_UINT(OP, EXPR) BIN_UINT_T(OP, SAME, EXPR)
#define BIN_INT(OP, EXPR) BIN_SINT(OP, EXPR) BIN_UINT(OP, EXPR)
#define BIN_CMP(OP, EXPR)                   \
  BIN_FLOAT_T(OP, uint8_t, uint8_t, EXPR)   \
  BIN_SINT_T(OP, BOOLOUT, EXPR)             \
  BIN_UINT_T(OP, BOOLOUT, EXPR)

#define F3(NAME) {NAME##_vv, NAME##_sv, NAME##_vs}
#define FNS_FLOAT(OP) [CPU_SLOT_F32] = F3(OP##_f32), [CPU_SLOT_F64] = F3(OP##_f64)
#define FNS_SINT(OP)                                                        \
  [CPU_SLOT_I8] = F3(OP##_i8), [CPU_SLOT_I16] = F3(OP##_i16),               \
  [CPU_SLOT_I32] = F3(OP##_i32), [CPU_SLOT_I64] = F3(OP##_i64)
#define FNS_UINT(OP)                                                        \
  [CPU_SLOT_U8] = F3(OP##_u8), [CPU_SLOT_U16] = F3(OP##_u16),               \
  [CPU_SLOT_U32] = F3(OP##_u32), [CPU_SLOT_U64] = F3(OP##_u64)
#define FNS_INT(OP) FNS_SINT(OP), FNS_UINT(OP)
#define FNS_NUM(OP) FNS_FLOAT(OP), FNS_INT(OP)

/* float32 Add, Sub, Mul, Div, Maximum, Minimum, SquaredDifference and Pow: the vectorised loops
 * (cpu_vmath.h) of the instruction set level the plugin chose at init; float16 and bfloat16
 * reach them through bin_run_f16's widened blocks. float64 keeps the loops below. The ops that
 * are one IEEE operation (all but Pow) take their scalar loop, the same bits, below one vector:
 * a step of scalar ops then pays no call into the vector code (step/chain_100). */
#define BIN_VM_FORM(OP, FORM, SMALL)                                                         \
  static void OP##_vm_##FORM(const void *x, const void *y, void *z, int64_t n, double p) {   \
    if (n < 16) SMALL;                                                                       \
    weft__cpu_vmath()->OP.FORM(x, y, z, n);                                                  \
  }                                                                                          \
  static void OP##_vmnt_##FORM(const void *x, const void *y, void *z, int64_t n, double p) { \
    if (n < 16) SMALL;                                                                       \
    weft__cpu_vmath()->nt->OP.FORM(x, y, z, n);                                              \
  }
#define BIN_VM(OP)                                   \
  BIN_VM_FORM(OP, vv, (void)p) BIN_VM_FORM(OP, sv, (void)p) BIN_VM_FORM(OP, vs, (void)p)
#define BIN_VM_EXACT(OP)                                                \
  BIN_DEF(OP##_f32, float, float, float, OP##_expr(a, b))               \
  BIN_VM_FORM(OP, vv, return OP##_f32_vv(x, y, z, n, p))                \
  BIN_VM_FORM(OP, sv, return OP##_f32_sv(x, y, z, n, p))                \
  BIN_VM_FORM(OP, vs, return OP##_f32_vs(x, y, z, n, p))
#define BIN_F64(OP, EXPR) BIN_DEF(OP##_f64, double, double, double, EXPR) BIN_VM(OP)
/* float64's loop, and float32's for fewer than a vector's elements. */
#define BIN_F32_F64(OP, EXPR)                                    \
  static inline float OP##_expr(float a, float b) { return EXPR; } \
  BIN_DEF(OP##_f64, double, double, double, EXPR) BIN_VM_EXACT(OP)
#define FNS_FLOAT_VM(OP) [CPU_SLOT_F32] = F3(OP##_vm), [CPU_SLOT_F64] = F3(OP##_f64)
#define FNS_NUM_VM(OP) FNS_FLOAT_VM(OP), FNS_INT(OP)

/* Integer power by squaring, wrapping like TensorFlow's (two's complement, modulo 2^bits). */
static inline uint64_t ipow_u64(uint64_t base, uint64_t e) {
  uint64_t r = 1;
  while (e != 0) {
    if (e & 1u) r *= base;
    base *= base;
    e >>= 1;
  }
  return r;
}

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717

/* Arithmetic. Integer arithmetic goes through unsigned types so overflow wraps instead of being
 * undefined. Signed division guards b == -1, where INT_MIN / -1 would trap. */
BIN_F32_F64(add, a + b)
BIN_INT(add, (T_)((U_)a + (U_)b))
BIN_F32_F64(sub, a - b)
BIN_INT(sub, (T_)((U_)a - (U_)b))
BIN_F32_F64(mul, a * b)
BIN_INT(mul, (T_)((U_)a * (U_)b))
BIN_F32_F64(div, a / b)
BIN_SINT(div, b == -1 ? (T_)(0u - (U_)a) : (T_)(a / b))
BIN_UINT(div, a / b)
BIN_FLOAT(div_no_nan, b == 0 ? (T_)0 : a / b)
BIN_FLOAT(floordiv, floor(a / b))
BIN_SINT(floordiv, b == -1 ? (T_)(0u - (U_)a)
                           : (T_)(a / b - ((a % b != 0) && ((a < 0) != (b < 0)))))
BIN_UINT(floordiv, a / b)
BIN_FLOAT(floormod, (fmod(a, b) != 0 && ((fmod(a, b) < 0) != (b < 0))) ? fmod(a, b) + b
                                                                         : fmod(a, b))
BIN_SINT(floormod, b == -1 ? (T_)0
                           : (T_)(((a % b) != 0 && (((a % b) < 0) != (b < 0))) ? (a % b) + b
                                                                               : (a % b)))
BIN_UINT(floormod, a % b)
BIN_FLOAT(truncmod, fmod(a, b))
BIN_SINT(truncmod, b == -1 ? (T_)0 : (T_)(a % b))
BIN_UINT(truncmod, a % b)
BIN_F64(pow, pow(a, b))
BIN_SINT(pow, (T_)ipow_u64((uint64_t)(int64_t)a, (uint64_t)(int64_t)b))
BIN_UINT(pow, (T_)ipow_u64((uint64_t)a, (uint64_t)b))
/* NaN in either operand gives NaN, as in TensorFlow 2. */
BIN_F32_F64(maximum, (a > b || a != a) ? a : b)
BIN_INT(maximum, a > b ? a : b)
BIN_F32_F64(minimum, (a < b || a != a) ? a : b)
BIN_INT(minimum, a < b ? a : b)
BIN_F32_F64(sqdiff, (a - b) * (a - b))
BIN_SINT(sqdiff, (T_)(((U_)a - (U_)b) * ((U_)a - (U_)b)))
BIN_FLOAT(atan2, atan2(a, b))

/* Comparisons (bool output). */
BIN_CMP(equal, a == b)
BIN_CMP(not_equal, a != b)
BIN_CMP(less, a < b)
BIN_CMP(less_equal, a <= b)
BIN_CMP(greater, a > b)
BIN_CMP(greater_equal, a >= b)
BIN_DEF(equal_b, uint8_t, uint8_t, uint8_t, (a != 0) == (b != 0))
BIN_DEF(not_equal_b, uint8_t, uint8_t, uint8_t, (a != 0) != (b != 0))
BIN_DEF(logical_and_b, uint8_t, uint8_t, uint8_t, (a != 0) & (b != 0))
BIN_DEF(logical_or_b, uint8_t, uint8_t, uint8_t, (a != 0) | (b != 0))

/* Gradients of activations: (a, b) in TensorFlow's argument order. */
BIN_FLOAT(relu_grad, b > 0 ? a : (T_)0)         /* gradients, features */
BIN_FLOAT(relu6_grad, (b > 0 && b < 6) ? a : (T_)0)
/* c ? x : y with both computed: a bitwise blend, which gcc vectorises. Written as the plain
 * select, gcc branches on each element instead (a product in one arm may trap, so it is not
 * computed for the other), and a gradient's random signs cost that branch 8 ns an element. */
static inline float pick_f32(int c, float x, float y) {
  uint32_t xi, yi, m = 0u - (uint32_t)(c != 0);
  memcpy(&xi, &x, sizeof xi);
  memcpy(&yi, &y, sizeof yi);
  xi = (xi & m) | (yi & ~m);
  memcpy(&x, &xi, sizeof x);
  return x;
}
static inline double pick_f64(int c, double x, double y) {
  uint64_t xi, yi, m = 0u - (uint64_t)(c != 0);
  memcpy(&xi, &x, sizeof xi);
  memcpy(&yi, &y, sizeof yi);
  xi = (xi & m) | (yi & ~m);
  memcpy(&x, &xi, sizeof x);
  return x;
}
#define PICK(c, x, y) _Generic((x), float: pick_f32, double: pick_f64)(c, x, y)
BIN_FLOAT(leaky_relu_grad, PICK(b > 0, a, p * a))
BIN_FLOAT(elu_grad, PICK(b < 0, a * (b + 1), a))     /* gradients, outputs */
BIN_FLOAT(selu_grad, PICK(b < 0, a * (b + (T_)(SELU_SCALE * SELU_ALPHA)), a * (T_)SELU_SCALE))
BIN_FLOAT(softplus_grad, a / ((T_)1 + exp(-b)))  /* gradients, features */
BIN_FLOAT(softsign_grad, a / (((T_)1 + fabs(b)) * ((T_)1 + fabs(b))))
BIN_FLOAT(sigmoid_grad, b * a * ((T_)1 - a))     /* y, dy */
BIN_FLOAT(tanh_grad, b * ((T_)1 - a * a))
BIN_FLOAT(sqrt_grad, b * (T_)0.5 / a)
BIN_FLOAT(rsqrt_grad, b * (T_)-0.5 * a * a * a)
BIN_FLOAT(reciprocal_grad, -b * a * a)

typedef enum bin_check {
  CHECK_NONE = 0,
  CHECK_INT_DIV, /* integer divisor must not be 0 */
  CHECK_INT_POW, /* integer exponent must not be negative */
} bin_check_t;

typedef struct bin_op {
  const char *name;
  int64_t cost;
  bool out_bool;
  bin_check_t check;
  const char *param;
  float param_default;
  bin_fns_t fns[CPU_N_SLOTS];
  bool strings; /* also defined on strings (Add: concatenation; Equal, NotEqual) */
} bin_op_t;

static const bin_op_t bin_ops[] = {
    {"AddV2", 1, false, CHECK_NONE, NULL, 0, {FNS_NUM_VM(add)}, false},
    {"Add", 1, false, CHECK_NONE, NULL, 0, {FNS_NUM_VM(add)}, true},
    {"Sub", 1, false, CHECK_NONE, NULL, 0, {FNS_NUM_VM(sub)}, false},
    {"Mul", 1, false, CHECK_NONE, NULL, 0, {FNS_NUM_VM(mul)}, false},
    {"RealDiv", 4, false, CHECK_NONE, NULL, 0, {FNS_FLOAT_VM(div)}, false},
    {"Div", 4, false, CHECK_INT_DIV, NULL, 0, {FNS_NUM_VM(div)}, false},
    {"TruncateDiv", 4, false, CHECK_INT_DIV, NULL, 0, {FNS_INT(div)}, false},
    {"DivNoNan", 4, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(div_no_nan)}, false},
    {"FloorDiv", 6, false, CHECK_INT_DIV, NULL, 0, {FNS_NUM(floordiv)}, false},
    {"FloorMod", 10, false, CHECK_INT_DIV, NULL, 0, {FNS_NUM(floormod)}, false},
    {"Mod", 10, false, CHECK_INT_DIV, NULL, 0, {FNS_NUM(truncmod)}, false},
    {"TruncateMod", 10, false, CHECK_INT_DIV, NULL, 0, {FNS_NUM(truncmod)}, false},
    {"Pow", 15, false, CHECK_INT_POW, NULL, 0, {FNS_NUM_VM(pow)}, false},
    {"Maximum", 1, false, CHECK_NONE, NULL, 0, {FNS_NUM_VM(maximum)}, false},
    {"Minimum", 1, false, CHECK_NONE, NULL, 0, {FNS_NUM_VM(minimum)}, false},
    {"SquaredDifference", 2, false, CHECK_NONE, NULL, 0,
     {FNS_FLOAT_VM(sqdiff), FNS_SINT(sqdiff)}, false},
    {"Atan2", 40, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(atan2)}, false},
    {"Equal", 1, true, CHECK_NONE, NULL, 0,
     {FNS_NUM(equal), [CPU_SLOT_BOOL] = F3(equal_b)}, true},
    {"NotEqual", 1, true, CHECK_NONE, NULL, 0,
     {FNS_NUM(not_equal), [CPU_SLOT_BOOL] = F3(not_equal_b)}, true},
    {"Less", 1, true, CHECK_NONE, NULL, 0, {FNS_NUM(less)}, false},
    {"LessEqual", 1, true, CHECK_NONE, NULL, 0, {FNS_NUM(less_equal)}, false},
    {"Greater", 1, true, CHECK_NONE, NULL, 0, {FNS_NUM(greater)}, false},
    {"GreaterEqual", 1, true, CHECK_NONE, NULL, 0, {FNS_NUM(greater_equal)}, false},
    {"LogicalAnd", 1, true, CHECK_NONE, NULL, 0, {[CPU_SLOT_BOOL] = F3(logical_and_b)}, false},
    {"LogicalOr", 1, true, CHECK_NONE, NULL, 0, {[CPU_SLOT_BOOL] = F3(logical_or_b)}, false},
    {"ReluGrad", 1, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(relu_grad)}, false},
    {"Relu6Grad", 1, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(relu6_grad)}, false},
    {"LeakyReluGrad", 1, false, CHECK_NONE, "alpha", 0.2f, {FNS_FLOAT(leaky_relu_grad)}, false},
    {"EluGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(elu_grad)}, false},
    {"SeluGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(selu_grad)}, false},
    {"SoftplusGrad", 25, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(softplus_grad)}, false},
    {"SoftsignGrad", 4, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(softsign_grad)}, false},
    {"SigmoidGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(sigmoid_grad)}, false},
    {"TanhGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(tanh_grad)}, false},
    {"SqrtGrad", 4, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(sqrt_grad)}, false},
    {"RsqrtGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(rsqrt_grad)}, false},
    {"ReciprocalGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(reciprocal_grad)}, false},
    {"InvGrad", 2, false, CHECK_NONE, NULL, 0, {FNS_FLOAT(reciprocal_grad)}, false},
};

/* The float32 vector loops beside their streaming forms (cpu_internal.h, "Streaming stores"). */
static const struct {
  bin_fns_t plain, nt;
} nt_pairs[] = {
    {F3(add_vm), F3(add_vmnt)},         {F3(sub_vm), F3(sub_vmnt)},
    {F3(mul_vm), F3(mul_vmnt)},         {F3(div_vm), F3(div_vmnt)},
    {F3(pow_vm), F3(pow_vmnt)},         {F3(maximum_vm), F3(maximum_vmnt)},
    {F3(minimum_vm), F3(minimum_vmnt)}, {F3(sqdiff_vm), F3(sqdiff_vmnt)},
};

/* fns's streaming forms, or NULL where they have none. */
static const bin_fns_t *nt_of(const bin_fns_t *fns) {
  for (size_t i = 0; i < sizeof nt_pairs / sizeof nt_pairs[0]; i++)
    if (nt_pairs[i].plain.vv == fns->vv) return &nt_pairs[i].nt;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Driver */

typedef struct bin_job {
  const bin_fns_t *fns;
  const weft_cpu_bcast_t *bc;
  const char *x, *y;
  char *z;
  size_t es, zs;
  double p;
  weft_dtype_t f16; /* HALF or BFLOAT16: fns are the float32 loops, run on widened blocks */
  bool out_bool;
  bool stream;      /* fns are streaming loops (cpu_vmath.h's nt table) */
} bin_job_t;

/* One run of a 16-bit float op: widen blocks of x and y (or their single broadcast element),
 * run the float32 loop, narrow the result (bool results need no narrowing). */
static void bin_run_f16(const bin_job_t *j, bin_fn fn, const uint16_t *x, int64_t sx,
                        const uint16_t *y, int64_t sy, char *z, int64_t len) {
  float xb[CPU_F16_BLOCK], yb[CPU_F16_BLOCK], zb[CPU_F16_BLOCK];
  for (int64_t off = 0; off < len; off += CPU_F16_BLOCK) {
    int64_t n = len - off < CPU_F16_BLOCK ? len - off : CPU_F16_BLOCK;
    weft__cpu_f16_to_float(j->f16, x + off * sx, xb, sx ? n : 1);
    weft__cpu_f16_to_float(j->f16, y + off * sy, yb, sy ? n : 1);
    if (j->out_bool) {
      fn(xb, yb, z + off, n, j->p);
    } else {
      fn(xb, yb, zb, n, j->p);
      weft__cpu_float_to_f16(j->f16, zb, (uint16_t *)(void *)z + off, n);
    }
  }
}

/* One broadcast run: len output elements from pos, the inputs from element off[k] on. */
static void bin_run(void *arg, const int64_t *off, int64_t pos, int64_t len) {
  const bin_job_t *j = arg;
  const weft_cpu_bcast_t *bc = j->bc;
  int64_t sx = bc->strides[0][bc->rank - 1], sy = bc->strides[1][bc->rank - 1];
  bin_fn fn = sx && sy ? j->fns->vv : (sx ? j->fns->vs : j->fns->sv);
  const char *xp = j->x + (size_t)off[0] * j->es;
  const char *yp = j->y + (size_t)off[1] * j->es;
  char *zp = j->z + (size_t)pos * j->zs;
  if (j->f16 != WEFT_DT_INVALID) {
    bin_run_f16(j, fn, (const uint16_t *)(const void *)xp, sx, (const uint16_t *)(const void *)yp,
                sy, zp, len);
  } else {
    fn(xp, yp, zp, len, j->p);
  }
}

/* Elements [b, e) of the output. */
static void bin_range(void *arg, int64_t b, int64_t e) {
  const bin_job_t *j = arg;
  weft__cpu_bcast_runs(j->bc, b, e, bin_run, arg);
  if (j->stream) weft__cpu_stream_fence();
}

static bool any_zero(const weft_tensor_view_t *v) {
  size_t es = weft__cpu_dtype_size(v->dtype);
  const unsigned char *p = v->data;
  for (int64_t i = 0; i < v->num_elements; i++) {
    bool nz = false;
    for (size_t k = 0; k < es; k++) nz |= p[(size_t)i * es + k] != 0;
    if (!nz) return true;
  }
  return false;
}

static bool any_negative(const weft_tensor_view_t *v) {
  if (v->dtype == WEFT_DT_UINT8 || v->dtype == WEFT_DT_UINT16 || v->dtype == WEFT_DT_UINT32 ||
      v->dtype == WEFT_DT_UINT64)
    return false;
  for (int64_t i = 0; i < v->num_elements; i++)
    if (weft__cpu_get_double(v, i) < 0) return true;
  return false;
}

static weft_status_t *string_binary(weft_kernel_ctx_t *ctx, const bin_op_t *op,
                                    const weft_tensor_view_t *x, const weft_tensor_view_t *y,
                                    const weft_cpu_bcast_t *bcp) {
  const weft_cpu_bcast_t bc = *bcp;
  bool concat = !op->out_bool;
  bool eq = strcmp(op->name, "Equal") == 0;
  weft_tensor_view_t z;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, concat ? WEFT_DT_STRING : WEFT_DT_BOOL, bc.out_rank,
                                        bc.out_dims, &z));
  const weft_string_t *xs = x->data, *ys = y->data;
  int64_t inner = weft__cpu_bcast_inner(&bc), rows = weft__cpu_bcast_rows(&bc);
  int64_t sx = bc.strides[0][bc.rank - 1], sy = bc.strides[1][bc.rank - 1];
  char *buf = NULL;
  size_t cap = 0;
  weft_status_t *s = NULL;
  for (int64_t r = 0; r < rows && s == NULL; r++) {
    int64_t off[CPU_BCAST_MAX_IN];
    weft__cpu_bcast_row_offsets(&bc, r, off);
    for (int64_t i = 0; i < inner && s == NULL; i++) {
      const weft_string_t *a = &xs[off[0] + i * sx], *b = &ys[off[1] + i * sy];
      int64_t at = r * inner + i;
      if (concat) {
        size_t need = a->len + b->len;
        if (need > cap) {
          char *nb = realloc(buf, need);
          if (nb == NULL) {
            s = weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED,
                                "out of memory concatenating strings of %zu bytes", need);
            break;
          }
          buf = nb;
          cap = need;
        }
        if (a->len) memcpy(buf, a->data, a->len);
        if (b->len) memcpy(buf + a->len, b->data, b->len);
        s = H->string_assign(ctx, &z, at, buf, need);
      } else {
        bool same = a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
        ((uint8_t *)z.data)[at] = (uint8_t)(eq ? same : !same);
      }
    }
  }
  free(buf);
  return s;
}

static weft_status_t *k_binary(weft_kernel_ctx_t *ctx, void *state) {
  const bin_op_t *op = state;
  weft_tensor_view_t x, y, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, op->name, &x, &y));
  const weft_tensor_view_t *ins[2] = {&x, &y};
  weft_cpu_bcast_t bc;
  weft_status_t *bs = weft__cpu_bcast_init(ctx, &bc, 2, ins);
  if (bs != NULL) {
    /* Equal/NotEqual with incompatible_shape_error = false answer "not equal" as a scalar. */
    bool equality = op->out_bool && op->strings;
    if (!equality || weft__cpu_attr_bool(ctx, "incompatible_shape_error", true)) return bs;
    H->status_free(bs);
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &z));
    *(uint8_t *)z.data = strcmp(op->name, "NotEqual") == 0;
    return NULL;
  }
  if (x.dtype == WEFT_DT_STRING && op->strings) return string_binary(ctx, op, &x, &y, &bc);
  int slot = weft__cpu_slot(x.dtype);
  bool f16 = slot == CPU_SLOT_F16 || slot == CPU_SLOT_BF16;
  if (f16) slot = CPU_SLOT_F32;
  const bin_fns_t *fns = slot >= 0 && op->fns[slot].vv != NULL ? &op->fns[slot] : NULL;
  if (fns == NULL)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(x.dtype));
  weft_dtype_t zt = op->out_bool ? WEFT_DT_BOOL : x.dtype;
  if (bc.out_elements > 0 && weft__cpu_dtype_is_int(x.dtype)) {
    if (op->check == CHECK_INT_DIV && any_zero(&y))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Integer division by zero");
    if (op->check == CHECK_INT_POW && any_negative(&y))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Integers to negative integer powers are not allowed");
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, zt, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  bin_job_t j = {fns,
                 &bc,
                 x.data,
                 y.data,
                 z.data,
                 weft__cpu_dtype_size(x.dtype),
                 weft__cpu_dtype_size(zt),
                 0.0,
                 f16 ? x.dtype : WEFT_DT_INVALID,
                 op->out_bool,
                 false};
  if (!f16 && slot == CPU_SLOT_F32 && weft__cpu_stream_output(bc.out_elements, sizeof(float))) {
    const bin_fns_t *nt = nt_of(fns);
    if (nt != NULL) {
      j.fns = nt;
      j.stream = true;
    }
  }
  if (op->param != NULL) j.p = weft__cpu_attr_float(ctx, op->param, op->param_default);
  /* cpu_vmath.h's vector loops (those with a streaming form): Add over 128K / 256K floats took
   * 18 / 35 us on one thread against 41 / 51 split over two (step stats medians). */
  if (bc.out_elements * op->cost >= CPU_SCALAR_SPLIT_MIN && !f16 && slot == CPU_SLOT_F32 &&
      nt_of(fns) != NULL)
    weft__cpu_parallel_f32(ctx, bc.out_elements, op->cost, 1, bin_range, &j);
  else
    weft__cpu_parallel(ctx, bc.out_elements, op->cost, bin_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * AddN */

#define ADDN_CASE(DT, T, U)                                                  \
  case DT: {                                                                 \
    T *restrict z = (T *)j->out;                                             \
    const T *restrict a0 = (const T *)j->ins[0];                             \
    for (int64_t i = b; i < e; i++) z[i] = a0[i];                            \
    for (int k = 1; k < j->n; k++) {                                         \
      const T *restrict ak = (const T *)j->ins[k];                           \
      for (int64_t i = b; i < e; i++) z[i] = (T)((U)z[i] + (U)ak[i]);        \
    }                                                                        \
    break;                                                                   \
  }

void weft__cpu_addn_range(void *arg, int64_t b, int64_t e) {
  const weft_cpu_addn_job_t *j = arg;
  switch (j->dtype) {
    CPU_NUMERIC_TYPES(ADDN_CASE)
    default: break;
  }
}


static weft_status_t *k_addn(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n;
  weft_tensor_view_t first, z;
  WEFT_RETURN_IF_ERROR(weft_pc_addn_first(ctx, &n, &first));
  const void **ptrs = malloc(sizeof(void *) * (size_t)n);
  if (ptrs == NULL) return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  ptrs[0] = first.data;
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    weft_status_t *s = weft_pc_addn_input(ctx, k, &first, &v);
    if (s != NULL) {
      free(ptrs);
      return s;
    }
    ptrs[k] = v.data;
  }
  weft_status_t *s = weft__cpu_output_like(ctx, 0, first.dtype, &first, &z);
  if (s == NULL && first.num_elements > 0) {
    weft_cpu_addn_job_t j = {first.dtype, n, ptrs, z.data};
    weft__cpu_parallel(ctx, first.num_elements, n, weft__cpu_addn_range, &j);
  }
  free(ptrs);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Select, SelectV2 */

typedef struct select_job {
  const weft_cpu_bcast_t *bc; /* NULL: same shapes, all contiguous */
  const uint8_t *c;
  const char *t, *e;
  char *z;
  size_t es;
  int64_t row_len; /* Select with a vector condition: elements per condition entry */
} select_job_t;

#define SELECT_LOOP(T)                                                              \
  {                                                                                 \
    const T *restrict tt = (const T *)t;                                            \
    const T *restrict ee = (const T *)e;                                            \
    T *restrict zz = (T *)z;                                                        \
    for (int64_t i = 0; i < n; i++) zz[i] = c[i * sc] ? tt[i * st] : ee[i * se];    \
    return;                                                                         \
  }

static void select_run(const uint8_t *restrict c, int64_t sc, const char *t, int64_t st,
                       const char *e, int64_t se, char *z, size_t es, int64_t n) {
  switch (es) {
    case 1: SELECT_LOOP(uint8_t)
    case 2: SELECT_LOOP(uint16_t)
    case 4: SELECT_LOOP(uint32_t)
    case 8: SELECT_LOOP(uint64_t)
    default:
      for (int64_t i = 0; i < n; i++)
        memcpy(z + (size_t)i * es, c[i * sc] ? t + (size_t)(i * st) * es : e + (size_t)(i * se) * es,
               es);
  }
}

/* One broadcast run of SelectV2 (inputs: condition, then, else). */
static void select_bcast_run(void *arg, const int64_t *off, int64_t pos, int64_t len) {
  const select_job_t *j = arg;
  const weft_cpu_bcast_t *bc = j->bc;
  int r = bc->rank - 1;
  select_run(j->c + off[0], bc->strides[0][r], j->t + (size_t)off[1] * j->es, bc->strides[1][r],
             j->e + (size_t)off[2] * j->es, bc->strides[2][r], j->z + (size_t)pos * j->es, j->es,
             len);
}

static void select_range(void *arg, int64_t b, int64_t e) {
  const select_job_t *j = arg;
  if (j->row_len > 0) {
    for (int64_t r = b; r < e; r++) {
      const char *src = (j->c[r] ? j->t : j->e) + (size_t)(r * j->row_len) * j->es;
      memcpy(j->z + (size_t)(r * j->row_len) * j->es, src, (size_t)j->row_len * j->es);
    }
    return;
  }
  if (j->bc == NULL) {
    select_run(j->c + b, 1, j->t + (size_t)b * j->es, 1, j->e + (size_t)b * j->es, 1,
               j->z + (size_t)b * j->es, j->es, e - b);
    return;
  }
  weft__cpu_bcast_runs(j->bc, b, e, select_bcast_run, arg);
}

/* Strings cannot be moved with memcpy; a serial element loop through string_assign. */
static weft_status_t *select_strings(weft_kernel_ctx_t *ctx, const select_job_t *j,
                                     const weft_tensor_view_t *z, int64_t total) {
  const weft_string_t *t = (const weft_string_t *)j->t, *e = (const weft_string_t *)j->e;
  for (int64_t i = 0; i < total; i++) {
    int64_t ci, ti, ei;
    if (j->row_len > 0) {
      ci = i / j->row_len;
      ti = ei = i;
    } else if (j->bc == NULL) {
      ci = ti = ei = i;
    } else {
      int64_t inner = weft__cpu_bcast_inner(j->bc), off[CPU_BCAST_MAX_IN];
      weft__cpu_bcast_row_offsets(j->bc, i / inner, off);
      int64_t col = i % inner, r = j->bc->rank - 1;
      ci = off[0] + col * j->bc->strides[0][r];
      ti = off[1] + col * j->bc->strides[1][r];
      ei = off[2] + col * j->bc->strides[2][r];
    }
    const weft_string_t *src = j->c[ci] ? &t[ti] : &e[ei];
    WEFT_RETURN_IF_ERROR(H->string_assign(ctx, z, i, src->data, src->len));
  }
  return NULL;
}

static weft_status_t *select_run_job(weft_kernel_ctx_t *ctx, select_job_t *j,
                                     const weft_tensor_view_t *z, int64_t total, int64_t units) {
  if (z->dtype == WEFT_DT_STRING) return select_strings(ctx, j, z, total);
  weft__cpu_parallel(ctx, units, j->row_len > 0 ? j->row_len : 2, select_range, j);
  return NULL;
}

static weft_status_t *k_select(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], z; /* condition, then, else */
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  const weft_tensor_view_t c = in[0], t = in[1], e = in[2];
  weft_pc_select_cond_t cond;
  WEFT_RETURN_IF_ERROR(weft_pc_select_check(ctx, &c, &t, &e, &cond));
  select_job_t j;
  memset(&j, 0, sizeof j);
  j.c = c.data;
  j.t = t.data;
  j.e = e.data;
  j.es = weft__cpu_dtype_size(t.dtype);
  bool same = cond == WEFT_PC_SELECT_SAME;
  int64_t units = t.num_elements;
  if (cond == WEFT_PC_SELECT_SCALAR) {
    j.row_len = t.num_elements; /* one row: the whole tensor */
    units = t.num_elements > 0 ? 1 : 0;
  } else if (cond == WEFT_PC_SELECT_ROWS) {
    j.row_len = t.dims[0] > 0 ? t.num_elements / t.dims[0] : 0;
    units = t.dims[0];
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, t.dtype, &t, &z));
  if (t.num_elements == 0 || (j.row_len == 0 && !same)) return NULL;
  j.z = z.data;
  return select_run_job(ctx, &j, &z, t.num_elements, units);
}

static weft_status_t *k_select_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], z; /* condition, then, else */
  weft_cpu_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast3_prepare(ctx, in, 1, &bc, &z));
  if (bc.out_elements == 0) return NULL;
  select_job_t j;
  memset(&j, 0, sizeof j);
  j.bc = &bc;
  j.c = in[0].data;
  j.t = in[1].data;
  j.e = in[2].data;
  j.z = z.data;
  j.es = weft__cpu_dtype_size(in[1].dtype);
  return select_run_job(ctx, &j, &z, bc.out_elements, bc.out_elements);
}

/* ---------------------------------------------------------------------------------------------
 * ClipByValue: min(max(t, lo), hi), with lo and hi broadcast against t. */

typedef struct clip_job {
  const weft_cpu_bcast_t *bc;
  weft_dtype_t dtype;
  const void *t, *lo, *hi;
  void *z;
} clip_job_t;

#define CLIP_CASE(DT, T, U)                                                             \
  case DT: {                                                                         \
    const T *restrict tt = (const T *)j->t + off[0];                                 \
    const T *restrict ll = (const T *)j->lo + off[1];                                \
    const T *restrict hh = (const T *)j->hi + off[2];                                \
    T *restrict zz = (T *)j->z + pos;                                                \
    for (int64_t i = 0; i < len; i++) {                                              \
      T v = tt[i * s0];                                                              \
      v = v > hh[i * s2] ? hh[i * s2] : v;                                           \
      zz[i] = v < ll[i * s1] ? ll[i * s1] : v;                                       \
    }                                                                                \
    break;                                                                           \
  }

static void clip_run(void *arg, const int64_t *off, int64_t pos, int64_t len) {
  const clip_job_t *j = arg;
  const weft_cpu_bcast_t *bc = j->bc;
  int r = bc->rank - 1;
  int64_t s0 = bc->strides[0][r], s1 = bc->strides[1][r], s2 = bc->strides[2][r];
  switch (j->dtype) {
    CPU_NUMERIC_TYPES(CLIP_CASE)
    default: break;
  }
}

static void clip_range(void *arg, int64_t b, int64_t e) {
  const clip_job_t *j = arg;
  weft__cpu_bcast_runs(j->bc, b, e, clip_run, arg);
}

static weft_status_t *k_clip(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], z; /* t, lo, hi */
  weft_cpu_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast3_prepare(ctx, in, 0, &bc, &z));
  if (bc.out_elements == 0) return NULL;
  clip_job_t j = {&bc, in[0].dtype, in[0].data, in[1].data, in[2].data, z.data};
  weft__cpu_parallel(ctx, bc.out_elements, 3, clip_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_binary(const weft_registrar_t *reg) {
  for (size_t i = 0; i < sizeof bin_ops / sizeof bin_ops[0]; i++) {
    const bin_op_t *op = &bin_ops[i];
    bool has[CPU_N_SLOTS];
    for (int s = 0; s < CPU_N_SLOTS; s++) has[s] = op->fns[s].vv != NULL;
    weft_dtype_t dtypes[CPU_N_SLOTS + 3];
    size_t n = weft__cpu_slot_types(has, dtypes);
    if (op->strings) dtypes[n++] = WEFT_DT_STRING;
    /* LogicalAnd/LogicalOr are bool-only ops without a type attribute. */
    bool bool_only = op->fns[CPU_SLOT_F32].vv == NULL && op->fns[CPU_SLOT_BOOL].vv != NULL;
    const weft_cpu_kernel_spec_t spec = {.op = op->name,
                                         .compute = k_binary,
                                         .type_attr = bool_only ? NULL : "T",
                                         .dtypes = dtypes,
                                         .n_dtypes = n,
                                         .user_data = (void *)op};
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  }
  const weft_dtype_t *all = weft__cpu_all_types;
  const size_t n_all = weft__cpu_n_all_types;
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "AddN", .compute = k_addn, .type_attr = "T", .dtypes = weft__cpu_num_types,
       .n_dtypes = weft__cpu_n_num_types},
      {.op = "ClipByValue", .compute = k_clip, .type_attr = "T", .dtypes = weft__cpu_num_types,
       .n_dtypes = weft__cpu_n_num_types},
      {.op = "Select", .compute = k_select, .type_attr = "T", .dtypes = all, .n_dtypes = n_all},
      {.op = "SelectV2", .compute = k_select_v2, .type_attr = "T", .dtypes = all,
       .n_dtypes = n_all},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
