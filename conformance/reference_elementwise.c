/* reference_elementwise.c: double-precision references of the elementwise ops (unary math,
 * activations, classification, arithmetic, comparisons, logic) and numpy/TensorFlow
 * broadcasting, including Select and SelectV2. Integer results wrap to the dtype (two's
 * complement) when the array is rounded; integer division truncates (Div, Mod) or floors
 * (FloorDiv, FloorMod) as TensorFlow's kernels do. */
#include <math.h>
#include <string.h>

#include "reference.h"

/* ---------------------------------------------------------------------------------------------
 * Unary */

static double r_neg(double x, weft_dtype_t t) { (void)t; return -x; }
static double r_abs(double x, weft_dtype_t t) { (void)t; return fabs(x); }
/* Integer products modulo 2^64, exact even when the true product is beyond 2^53 (the caller's
 * rounding then wraps it to the dtype's width). */
static double int_mul(double x, double y, weft_dtype_t t) {
  uint64_t p = (uint64_t)(int64_t)x * (uint64_t)(int64_t)y;
  if (t == WEFT_DT_UINT64) return (double)p;
  if (t == WEFT_DT_INT64) return (double)(int64_t)p;
  /* Narrower types: keep the low 32 bits, which hold every result bit that survives. */
  return cf_round_to_dtype(t, (double)(uint32_t)p);
}

static double r_square(double x, weft_dtype_t t) {
  return cf_dtype_is_int(t) ? int_mul(x, x, t) : x * x;
}
static double r_sign(double x, weft_dtype_t t) {
  (void)t;
  if (isnan(x)) return x;
  return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}
static double r_reciprocal(double x, weft_dtype_t t) {
  if (cf_dtype_is_int(t)) return x == 0 ? 0 : trunc(1.0 / x);
  return 1.0 / x;
}
static double r_sqrt(double x, weft_dtype_t t) { (void)t; return sqrt(x); }
static double r_rsqrt(double x, weft_dtype_t t) { (void)t; return 1.0 / sqrt(x); }
static double r_exp(double x, weft_dtype_t t) { (void)t; return exp(x); }
static double r_log(double x, weft_dtype_t t) { (void)t; return log(x); }
static double r_log1p(double x, weft_dtype_t t) { (void)t; return log1p(x); }
static double r_expm1(double x, weft_dtype_t t) { (void)t; return expm1(x); }
static double r_floor(double x, weft_dtype_t t) { (void)t; return floor(x); }
static double r_ceil(double x, weft_dtype_t t) { (void)t; return ceil(x); }
/* TensorFlow rounds half to even (banker's rounding). */
static double r_round(double x, weft_dtype_t t) { (void)t; return nearbyint(x); }
static double r_sin(double x, weft_dtype_t t) { (void)t; return sin(x); }
static double r_cos(double x, weft_dtype_t t) { (void)t; return cos(x); }
static double r_tan(double x, weft_dtype_t t) { (void)t; return tan(x); }
static double r_asin(double x, weft_dtype_t t) { (void)t; return asin(x); }
static double r_acos(double x, weft_dtype_t t) { (void)t; return acos(x); }
static double r_atan(double x, weft_dtype_t t) { (void)t; return atan(x); }
static double r_sinh(double x, weft_dtype_t t) { (void)t; return sinh(x); }
static double r_cosh(double x, weft_dtype_t t) { (void)t; return cosh(x); }
static double r_asinh(double x, weft_dtype_t t) { (void)t; return asinh(x); }
static double r_acosh(double x, weft_dtype_t t) { (void)t; return acosh(x); }
static double r_atanh(double x, weft_dtype_t t) { (void)t; return atanh(x); }
static double r_erf(double x, weft_dtype_t t) { (void)t; return erf(x); }
static double r_erfc(double x, weft_dtype_t t) { (void)t; return erfc(x); }
static double r_relu(double x, weft_dtype_t t) { (void)t; return isnan(x) ? x : x > 0 ? x : 0.0; }
static double r_relu6(double x, weft_dtype_t t) {
  (void)t;
  return isnan(x) ? x : x < 0 ? 0.0 : x > 6 ? 6.0 : x;
}
static double r_elu(double x, weft_dtype_t t) { (void)t; return x < 0 ? expm1(x) : x; }
static double r_selu(double x, weft_dtype_t t) {
  (void)t;
  const double alpha = 1.6732632423543772848170429916717;
  const double scale = 1.0507009873554804934193349852946;
  return x < 0 ? scale * alpha * expm1(x) : scale * x;
}
static double r_softplus(double x, weft_dtype_t t) {
  (void)t;
  return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
/* TensorFlow's x / (|x| + 1): +-Inf gives NaN (Inf/Inf), not the limit +-1. */
static double r_softsign(double x, weft_dtype_t t) {
  (void)t;
  return x / (1.0 + fabs(x));
}
static double r_sigmoid(double x, weft_dtype_t t) {
  (void)t;
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
static double r_tanh(double x, weft_dtype_t t) { (void)t; return tanh(x); }
static double r_isnan(double x, weft_dtype_t t) { (void)t; return isnan(x) ? 1 : 0; }
static double r_isinf(double x, weft_dtype_t t) { (void)t; return isinf(x) ? 1 : 0; }
static double r_isfinite(double x, weft_dtype_t t) { (void)t; return isfinite(x) ? 1 : 0; }
static double r_not(double x, weft_dtype_t t) { (void)t; return x != 0 ? 0 : 1; }
static double r_identity(double x, weft_dtype_t t) { (void)t; return x; }
static double r_zero(double x, weft_dtype_t t) { (void)t; (void)x; return 0; }
static double r_one(double x, weft_dtype_t t) { (void)t; (void)x; return 1; }

typedef struct unary_entry {
  const char *op;
  cf_unary_fn fn;
} unary_entry_t;

static const unary_entry_t unary_table[] = {
    {"Neg", r_neg},         {"Abs", r_abs},           {"Square", r_square},
    {"Sign", r_sign},       {"Reciprocal", r_reciprocal}, {"Inv", r_reciprocal},
    {"Sqrt", r_sqrt},       {"Rsqrt", r_rsqrt},       {"Exp", r_exp},
    {"Log", r_log},         {"Log1p", r_log1p},       {"Expm1", r_expm1},
    {"Floor", r_floor},     {"Ceil", r_ceil},         {"Round", r_round},
    {"Sin", r_sin},         {"Cos", r_cos},           {"Tan", r_tan},
    {"Asin", r_asin},       {"Acos", r_acos},         {"Atan", r_atan},
    {"Sinh", r_sinh},       {"Cosh", r_cosh},         {"Asinh", r_asinh},
    {"Acosh", r_acosh},     {"Atanh", r_atanh},       {"Erf", r_erf}, {"Erfc", r_erfc},
    {"Relu", r_relu},       {"Relu6", r_relu6},       {"Elu", r_elu},
    {"Selu", r_selu},       {"Softplus", r_softplus}, {"Softsign", r_softsign},
    {"Sigmoid", r_sigmoid}, {"Tanh", r_tanh},         {"IsNan", r_isnan},
    {"IsInf", r_isinf},     {"IsFinite", r_isfinite}, {"LogicalNot", r_not},
    {"Identity", r_identity}, {"StopGradient", r_identity}, {"PreventGradient", r_identity},
    {"ZerosLike", r_zero},  {"OnesLike", r_one},
};

cf_unary_fn cf_ref_unary_fn(const char *op) {
  for (size_t i = 0; i < G_N_ELEMENTS(unary_table); i++)
    if (strcmp(unary_table[i].op, op) == 0) return unary_table[i].fn;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Binary */

static double b_add(double x, double y, weft_dtype_t t) { (void)t; return x + y; }
static double b_sub(double x, double y, weft_dtype_t t) { (void)t; return x - y; }
static double b_mul(double x, double y, weft_dtype_t t) {
  return cf_dtype_is_int(t) ? int_mul(x, y, t) : x * y;
}
static double b_div(double x, double y, weft_dtype_t t) {
  if (cf_dtype_is_int(t)) return y == 0 ? 0 : trunc(x / y);
  return x / y;
}
static double b_floordiv(double x, double y, weft_dtype_t t) {
  if (cf_dtype_is_int(t)) return y == 0 ? 0 : floor(x / y);
  return floor(x / y);
}
static double b_floormod(double x, double y, weft_dtype_t t) {
  if (cf_dtype_is_int(t)) return y == 0 ? 0 : x - floor(x / y) * y;
  double r = fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
static double b_mod(double x, double y, weft_dtype_t t) {
  if (cf_dtype_is_int(t)) return y == 0 ? 0 : x - trunc(x / y) * y;
  return fmod(x, y);
}
/* Integer powers by repeated multiplication with wrap-around at each step, like the kernels. */
static double b_pow(double x, double y, weft_dtype_t t) {
  if (!cf_dtype_is_int(t)) return pow(x, y);
  if (y < 0) return x == 1 ? 1 : x == -1 ? ((int64_t)y % 2 ? -1 : 1) : 0;
  double r = 1;
  for (int64_t k = 0; k < (int64_t)y; k++) r = cf_round_to_dtype(t, int_mul(r, x, t));
  return r;
}
static double b_max(double x, double y, weft_dtype_t t) {
  (void)t;
  if (isnan(x) || isnan(y)) return NAN;
  return x > y ? x : y;
}
static double b_min(double x, double y, weft_dtype_t t) {
  (void)t;
  if (isnan(x) || isnan(y)) return NAN;
  return x < y ? x : y;
}
static double b_sqdiff(double x, double y, weft_dtype_t t) { (void)t; return (x - y) * (x - y); }
static double b_eq(double x, double y, weft_dtype_t t) { (void)t; return x == y; }
static double b_ne(double x, double y, weft_dtype_t t) { (void)t; return x != y; }
static double b_lt(double x, double y, weft_dtype_t t) { (void)t; return x < y; }
static double b_le(double x, double y, weft_dtype_t t) { (void)t; return x <= y; }
static double b_gt(double x, double y, weft_dtype_t t) { (void)t; return x > y; }
static double b_ge(double x, double y, weft_dtype_t t) { (void)t; return x >= y; }
static double b_and(double x, double y, weft_dtype_t t) { (void)t; return x != 0 && y != 0; }
static double b_or(double x, double y, weft_dtype_t t) { (void)t; return x != 0 || y != 0; }
static double b_atan2(double y, double x, weft_dtype_t t) { (void)t; return atan2(y, x); }
/* ReluGrad(gradients, features), SigmoidGrad(y, dy), TanhGrad(y, dy). */
static double b_relu_grad(double g, double f, weft_dtype_t t) { (void)t; return f > 0 ? g : 0; }
static double b_sigmoid_grad(double y, double dy, weft_dtype_t t) {
  (void)t;
  return dy * y * (1 - y);
}
static double b_tanh_grad(double y, double dy, weft_dtype_t t) {
  (void)t;
  return dy * (1 - y * y);
}
/* The gradient ops of the other activations and of Sqrt, Rsqrt and Reciprocal (Inv): dy times
 * the forward op's derivative, written in the argument the op receives. From the features:
 * Relu6Grad, SoftplusGrad (softplus' = the logistic function), SoftsignGrad; from the outputs
 * y: EluGrad (y < 0: y = exp(x) - 1, so y' = y + 1), SeluGrad (scale * alpha * exp(x) = y +
 * scale * alpha), SqrtGrad (1 / (2 sqrt x)), RsqrtGrad (-x^-1.5 / 2 = -y^3 / 2),
 * ReciprocalGrad (-1 / x^2 = -y^2). */
static double b_relu6_grad(double g, double f, weft_dtype_t t) {
  (void)t;
  return f > 0 && f < 6 ? g : 0;
}
static double b_elu_grad(double g, double y, weft_dtype_t t) {
  (void)t;
  return y < 0 ? g * (y + 1) : g;
}
static double b_selu_grad(double g, double y, weft_dtype_t t) {
  (void)t;
  const double alpha = 1.6732632423543772848170429916717;
  const double scale = 1.0507009873554804934193349852946;
  return y < 0 ? g * (y + scale * alpha) : g * scale;
}
static double b_softplus_grad(double g, double f, weft_dtype_t t) {
  (void)t;
  return g / (1 + exp(-f));
}
static double b_softsign_grad(double g, double f, weft_dtype_t t) {
  (void)t;
  return g / ((1 + fabs(f)) * (1 + fabs(f)));
}
static double b_sqrt_grad(double y, double dy, weft_dtype_t t) {
  (void)t;
  return dy / (2 * y);
}
static double b_rsqrt_grad(double y, double dy, weft_dtype_t t) {
  (void)t;
  return -0.5 * dy * y * y * y;
}
static double b_reciprocal_grad(double y, double dy, weft_dtype_t t) {
  (void)t;
  return -dy * y * y;
}

typedef struct binary_entry {
  const char *op;
  cf_binary_fn fn;
} binary_entry_t;

static const binary_entry_t binary_table[] = {
    {"Add", b_add},         {"AddV2", b_add},         {"Sub", b_sub},
    {"Mul", b_mul},         {"Div", b_div},           {"RealDiv", b_div},
    {"FloorDiv", b_floordiv}, {"FloorMod", b_floormod}, {"Mod", b_mod},
    {"Pow", b_pow},         {"Atan2", b_atan2},       {"Maximum", b_max},       {"Minimum", b_min},
    {"SquaredDifference", b_sqdiff}, {"Equal", b_eq}, {"NotEqual", b_ne},
    {"Less", b_lt},         {"LessEqual", b_le},      {"Greater", b_gt},
    {"GreaterEqual", b_ge}, {"LogicalAnd", b_and},    {"LogicalOr", b_or},
    {"ReluGrad", b_relu_grad}, {"SigmoidGrad", b_sigmoid_grad}, {"TanhGrad", b_tanh_grad},
    {"Relu6Grad", b_relu6_grad}, {"EluGrad", b_elu_grad}, {"SeluGrad", b_selu_grad},
    {"SoftplusGrad", b_softplus_grad}, {"SoftsignGrad", b_softsign_grad},
    {"SqrtGrad", b_sqrt_grad}, {"RsqrtGrad", b_rsqrt_grad}, {"ReciprocalGrad", b_reciprocal_grad},
    {"InvGrad", b_reciprocal_grad},
};

cf_binary_fn cf_ref_binary_fn(const char *op) {
  for (size_t i = 0; i < G_N_ELEMENTS(binary_table); i++)
    if (strcmp(binary_table[i].op, op) == 0) return binary_table[i].fn;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Maps and broadcasting */

void cf_copy_value(cf_array_t *dst, int64_t di, const cf_array_t *src, int64_t si) {
  if (dst->s) {
    g_string_truncate(dst->s[di], 0);
    g_string_append_len(dst->s[di], src->s[si]->str, (gssize)src->s[si]->len);
  } else {
    dst->v[di] = src->v[si];
  }
}

cf_array_t *cf_ref_map1(const cf_array_t *x, weft_dtype_t out_dtype, cf_unary_fn fn) {
  cf_array_t *y = cf_array_new_like(x, out_dtype);
  if (x->s) {
    for (int64_t i = 0; i < x->n; i++) cf_copy_value(y, i, x, i);
    return y;
  }
  for (int64_t i = 0; i < x->n; i++) y->v[i] = fn(x->v[i], x->dtype);
  cf_array_round(y);
  return y;
}

bool cf_broadcast_shapes(int ra, const int64_t *da, int rb, const int64_t *db, int *rank,
                         int64_t *dims) {
  int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    int64_t a = i < r - ra ? 1 : da[i - (r - ra)];
    int64_t b = i < r - rb ? 1 : db[i - (r - rb)];
    if (a != b && a != 1 && b != 1) return false;
    dims[i] = a == 1 ? b : a;
  }
  *rank = r;
  return true;
}

int64_t cf_broadcast_offset(int64_t index, int ro, const int64_t *dout, int r, const int64_t *d) {
  int64_t off = 0, stride = 1;
  for (int k = ro - 1; k >= 0; k--) {
    int64_t coord = index % dout[k];
    index /= dout[k];
    int kk = k - (ro - r);
    if (kk < 0) continue;
    if (d[kk] != 1) off += coord * stride;
    stride *= d[kk];
  }
  return off;
}

cf_array_t *cf_ref_map2(const cf_array_t *x, const cf_array_t *y, weft_dtype_t out_dtype,
                        cf_binary_fn fn) {
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  if (!cf_broadcast_shapes(x->rank, x->dims, y->rank, y->dims, &rank, dims)) return NULL;
  cf_array_t *z = cf_array_new(out_dtype, rank, dims);
  for (int64_t i = 0; i < z->n; i++) {
    int64_t a = cf_broadcast_offset(i, rank, dims, x->rank, x->dims);
    int64_t b = cf_broadcast_offset(i, rank, dims, y->rank, y->dims);
    if (x->s && z->s) { /* string Add: concatenation */
      g_string_truncate(z->s[i], 0);
      g_string_append_len(z->s[i], x->s[a]->str, (gssize)x->s[a]->len);
      g_string_append_len(z->s[i], y->s[b]->str, (gssize)y->s[b]->len);
    } else if (x->s) { /* string comparisons */
      bool eq = x->s[a]->len == y->s[b]->len &&
                memcmp(x->s[a]->str, y->s[b]->str, x->s[a]->len) == 0;
      z->v[i] = fn == b_ne ? !eq : eq;
    } else {
      z->v[i] = fn(x->v[a], y->v[b], x->dtype);
    }
  }
  cf_array_round(z);
  return z;
}

cf_array_t *cf_ref_select_v2(const cf_array_t *cond, const cf_array_t *t, const cf_array_t *e) {
  int r1, rank;
  int64_t d1[WEFT_MAX_RANK], dims[WEFT_MAX_RANK];
  if (!cf_broadcast_shapes(t->rank, t->dims, e->rank, e->dims, &r1, d1)) return NULL;
  if (!cf_broadcast_shapes(cond->rank, cond->dims, r1, d1, &rank, dims)) return NULL;
  cf_array_t *out = cf_array_new(t->dtype, rank, dims);
  for (int64_t i = 0; i < out->n; i++) {
    int64_t c = cf_broadcast_offset(i, rank, dims, cond->rank, cond->dims);
    if (cond->v[c] != 0)
      cf_copy_value(out, i, t, cf_broadcast_offset(i, rank, dims, t->rank, t->dims));
    else
      cf_copy_value(out, i, e, cf_broadcast_offset(i, rank, dims, e->rank, e->dims));
  }
  return out;
}

cf_array_t *cf_ref_select(const cf_array_t *cond, const cf_array_t *t, const cf_array_t *e) {
  cf_array_t *out = cf_array_new(t->dtype, t->rank, t->dims);
  int64_t inner = t->rank > 0 && t->dims[0] > 0 ? t->n / t->dims[0] : 0;
  for (int64_t i = 0; i < out->n; i++) {
    double c;
    if (cond->rank == 0)
      c = cond->v[0];
    else if (cond->rank == 1 && t->rank > 1)
      c = cond->v[i / inner];
    else
      c = cond->v[i];
    cf_copy_value(out, i, c != 0 ? t : e, i);
  }
  return out;
}
