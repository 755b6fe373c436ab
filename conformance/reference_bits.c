/* reference_bits.c: references of the bit-level, counting and special-function ops (declared in
 * reference_bits.h), following TensorFlow's kernels: Bitcast's byte reinterpretation and shape
 * rule, shifts with the amount clamped to [0, bits - 1], DivNoNan's 0 for a 0 divisor, truncating
 * integer division and modulo, Rint's halves to even, Eigen's special functions' domains (NaN
 * outside them). The special functions are evaluated in long double with series and continued
 * fractions run to long double precision. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "reference_bits.h"

/* ---------------------------------------------------------------------------------------------
 * Integers as bits */

static int dtype_bits(weft_dtype_t dt) { return (int)weft_dtype_size(dt) * 8; }

static bool dtype_unsigned(weft_dtype_t dt) {
  return dt == WEFT_DT_UINT8 || dt == WEFT_DT_UINT16 || dt == WEFT_DT_UINT32 ||
         dt == WEFT_DT_UINT64;
}

/* The value's two's complement bits in the dtype's width. */
static uint64_t to_bits(double v, weft_dtype_t dt) {
  int bits = dtype_bits(dt);
  uint64_t u = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
  return bits == 64 ? u : u & ((UINT64_C(1) << bits) - 1);
}

/* The dtype's value of these bits (sign-extended for signed dtypes). */
static double from_bits(uint64_t u, weft_dtype_t dt) {
  int bits = dtype_bits(dt);
  if (bits < 64) u &= (UINT64_C(1) << bits) - 1;
  if (dtype_unsigned(dt)) return (double)u;
  if (bits < 64 && (u >> (bits - 1)) & 1u) u |= ~((UINT64_C(1) << bits) - 1);
  return (double)(int64_t)u;
}

static double b_and(double x, double y, weft_dtype_t t) {
  return from_bits(to_bits(x, t) & to_bits(y, t), t);
}
static double b_or(double x, double y, weft_dtype_t t) {
  return from_bits(to_bits(x, t) | to_bits(y, t), t);
}
static double b_xor(double x, double y, weft_dtype_t t) {
  return from_bits(to_bits(x, t) ^ to_bits(y, t), t);
}

static int clamped_shift(double y, weft_dtype_t t) {
  int bits = dtype_bits(t);
  if (y < 0) return 0;
  return y > bits - 1 ? bits - 1 : (int)y;
}

static double b_lshift(double x, double y, weft_dtype_t t) {
  return from_bits(to_bits(x, t) << clamped_shift(y, t), t);
}

/* Arithmetic for signed dtypes: floor(x / 2^s), exact in doubles for the values used. */
static double b_rshift(double x, double y, weft_dtype_t t) {
  int s = clamped_shift(y, t);
  if (dtype_unsigned(t)) return (double)(to_bits(x, t) >> s);
  return floor(ldexp(x, -s));
}

static double b_div_no_nan(double x, double y, weft_dtype_t t) {
  (void)t;
  return y == 0 ? 0 : x / y;
}

static double b_truncate_div(double x, double y, weft_dtype_t t) {
  if (cf_dtype_is_float(t)) return trunc(x / y);
  return trunc(x / y); /* cases keep integer quotients exact in doubles */
}

static double b_truncate_mod(double x, double y, weft_dtype_t t) {
  (void)t;
  return fmod(x, y);
}

/* ---------------------------------------------------------------------------------------------
 * Special functions (long double) */

#define LD_EPS LDBL_EPSILON
#define LD_PI 3.14159265358979323846264338327950288L

static long double ld_digamma(long double x) {
  if (isnan(x)) return x;
  if (x <= 0 && floorl(x) == x) return NAN;
  if (x < 0) /* reflection: psi(1 - x) - psi(x) = pi cot(pi x) */
    return ld_digamma(1 - x) - LD_PI / tanl(LD_PI * x);
  long double acc = 0;
  while (x < 20) {
    acc -= 1 / x;
    x += 1;
  }
  /* Asymptotic series with Bernoulli numbers B2..B14. */
  static const long double b[] = {1.0L / 6, -1.0L / 30, 1.0L / 42, -1.0L / 30, 5.0L / 66,
                                  -691.0L / 2730, 7.0L / 6};
  long double x2 = 1 / (x * x), p = x2, s = 0;
  for (int k = 1; k <= 7; k++) {
    s += b[k - 1] / (2 * k) * p;
    p *= x2;
  }
  return acc + logl(x) - 1 / (2 * x) - s;
}

/* Regularised lower (lower = true) or upper incomplete gamma. */
static long double ld_igamma(long double a, long double x, bool lower) {
  if (isnan(a) || isnan(x)) return NAN;
  if (x < 0 || a <= 0) return NAN;
  if (x == 0) return lower ? 0 : 1;
  if (isinf(x)) return lower ? 1 : 0;
  long double log_pref = a * logl(x) - x - lgammal(a);
  if (x < a + 1) {
    long double term = 1 / a, sum = term;
    for (int n = 1; n < 100000; n++) {
      term *= x / (a + n);
      sum += term;
      if (fabsl(term) < fabsl(sum) * LD_EPS) break;
    }
    long double p = sum * expl(log_pref);
    return lower ? p : 1 - p;
  }
  /* Legendre's continued fraction for Q, by the modified Lentz method. */
  long double tiny = 1e-4000L, b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; i++) {
    long double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabsl(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabsl(c) < tiny) c = tiny;
    d = 1 / d;
    long double del = d * c;
    h *= del;
    if (fabsl(del - 1) < LD_EPS) break;
  }
  long double q = expl(log_pref) * h;
  return lower ? 1 - q : q;
}

/* The continued fraction of the incomplete beta function (modified Lentz). */
static long double ld_betacf(long double a, long double b, long double x) {
  long double tiny = 1e-4000L, qab = a + b, qap = a + 1, qam = a - 1;
  long double c = 1, d = 1 - qab * x / qap;
  if (fabsl(d) < tiny) d = tiny;
  d = 1 / d;
  long double h = d;
  for (int m = 1; m < 100000; m++) {
    int m2 = 2 * m;
    long double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabsl(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabsl(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (fabsl(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabsl(c) < tiny) c = tiny;
    d = 1 / d;
    long double del = d * c;
    h *= del;
    if (fabsl(del - 1) < LD_EPS) break;
  }
  return h;
}

static long double ld_betainc(long double a, long double b, long double x) {
  if (isnan(a) || isnan(b) || isnan(x)) return NAN;
  if (a <= 0 || b <= 0) return NAN;
  if (x <= 0 || x >= 1) {
    if (x == 0) return 0;
    if (x == 1) return 1;
    return NAN;
  }
  long double lbt = lgammal(a + b) - lgammal(a) - lgammal(b) + a * logl(x) + b * log1pl(-x);
  if (x < (a + 1) / (a + b + 2)) return expl(lbt) * ld_betacf(a, b, x) / a;
  return 1 - expl(lbt) * ld_betacf(b, a, 1 - x) / b;
}

static double b_igamma(double a, double x, weft_dtype_t t) {
  (void)t;
  return (double)ld_igamma(a, x, true);
}
static double b_igammac(double a, double x, weft_dtype_t t) {
  (void)t;
  return (double)ld_igamma(a, x, false);
}

/* ---------------------------------------------------------------------------------------------
 * Unary */

static double u_invert(double x, weft_dtype_t t) { return from_bits(~to_bits(x, t), t); }
static double u_popcount(double x, weft_dtype_t t) {
  return (double)__builtin_popcountll(to_bits(x, t));
}
static double u_rint(double x, weft_dtype_t t) {
  (void)t;
  return nearbyint(x); /* the default rounding mode: halves to even */
}
static double u_lgamma(double x, weft_dtype_t t) {
  (void)t;
  return (double)lgammal(x);
}
static double u_digamma(double x, weft_dtype_t t) {
  (void)t;
  return (double)ld_digamma(x);
}

cf_unary_fn cf_ref_bits_unary_fn(const char *op) {
  if (strcmp(op, "Invert") == 0) return u_invert;
  if (strcmp(op, "PopulationCount") == 0) return u_popcount;
  if (strcmp(op, "Rint") == 0) return u_rint;
  if (strcmp(op, "Lgamma") == 0) return u_lgamma;
  if (strcmp(op, "Digamma") == 0) return u_digamma;
  return NULL;
}

cf_binary_fn cf_ref_bits_binary_fn(const char *op) {
  if (strcmp(op, "BitwiseAnd") == 0) return b_and;
  if (strcmp(op, "BitwiseOr") == 0) return b_or;
  if (strcmp(op, "BitwiseXor") == 0) return b_xor;
  if (strcmp(op, "LeftShift") == 0) return b_lshift;
  if (strcmp(op, "RightShift") == 0) return b_rshift;
  if (strcmp(op, "DivNoNan") == 0) return b_div_no_nan;
  if (strcmp(op, "TruncateDiv") == 0) return b_truncate_div;
  if (strcmp(op, "TruncateMod") == 0) return b_truncate_mod;
  if (strcmp(op, "Igamma") == 0) return b_igamma;
  if (strcmp(op, "Igammac") == 0) return b_igammac;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Bitcast */

cf_array_t *cf_ref_bitcast(const cf_array_t *x, weft_dtype_t to) {
  size_t in_size = weft_dtype_size(x->dtype), out_size = weft_dtype_size(to);
  int rank = x->rank;
  int64_t dims[WEFT_MAX_RANK + 1];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  if (in_size < out_size) {
    if (rank == 0 || dims[rank - 1] != (int64_t)(out_size / in_size)) return NULL;
    rank--;
  } else if (in_size > out_size) {
    dims[rank++] = (int64_t)(in_size / out_size);
  }
  /* Through host tensors: their storage is the dtype's little-endian bytes. */
  weft_status_t *st = NULL;
  weft_tensor_t *src = cf_array_to_tensor(x, &st);
  if (src == NULL) {
    weft_status_free(st);
    return NULL;
  }
  weft_tensor_t *dst = weft_tensor_new(to, rank, dims);
  if (x->n > 0) memcpy(weft_tensor_data(dst), weft_tensor_data(src), (size_t)x->n * in_size);
  cf_array_t *out = cf_array_from_tensor(dst);
  weft_tensor_unref(src);
  weft_tensor_unref(dst);
  return out;
}

/* ---------------------------------------------------------------------------------------------
 * CompareAndBitpack, Cumprod, Bincount, HistogramFixedWidth, Betainc */

cf_array_t *cf_ref_compare_and_bitpack(const cf_array_t *x, double threshold) {
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[x->rank - 1] /= 8;
  cf_array_t *out = cf_array_new(WEFT_DT_UINT8, x->rank, dims);
  for (int64_t i = 0; i < out->n; i++) {
    int byte = 0;
    for (int k = 0; k < 8; k++) {
      double v = x->v[8 * i + k];
      bool bit = x->dtype == WEFT_DT_BOOL ? v != 0 : v > threshold;
      byte |= (int)bit << (7 - k);
    }
    out->v[i] = byte;
  }
  return out;
}

cf_array_t *cf_ref_cumprod(const cf_array_t *x, int axis, bool exclusive, bool reverse) {
  cf_array_t *out = cf_array_new_like(x, x->dtype);
  int64_t outer = 1, inner = 1, n = x->dims[axis];
  for (int d = 0; d < x->rank; d++) {
    if (d < axis) outer *= x->dims[d];
    if (d > axis) inner *= x->dims[d];
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double acc = 1;
      for (int64_t s = 0; s < n; s++) {
        int64_t m = reverse ? n - 1 - s : s;
        int64_t at = (o * n + m) * inner + i;
        if (exclusive) out->v[at] = acc;
        /* Integers wrap at every step, as the kernel's running product does. */
        acc = cf_round_to_dtype(x->dtype, acc * x->v[at]);
        if (!exclusive) out->v[at] = acc;
      }
    }
  cf_array_round(out);
  return out;
}

cf_array_t *cf_ref_bincount(const cf_array_t *arr, int64_t size, const cf_array_t *weights,
                            weft_dtype_t dtype) {
  cf_array_t *out = cf_array_new(dtype, 1, &size);
  bool weighted = weights != NULL && weights->n > 0;
  for (int64_t i = 0; i < arr->n; i++) {
    int64_t bin = (int64_t)arr->v[i];
    if (bin < 0 || bin >= size) continue;
    out->v[bin] += weighted ? weights->v[i] : 1;
  }
  cf_array_round(out);
  return out;
}

cf_array_t *cf_ref_histogram(const cf_array_t *values, double lo, double hi, int64_t nbins,
                             weft_dtype_t out_dtype) {
  cf_array_t *out = cf_array_new(out_dtype, 1, &nbins);
  double step = (hi - lo) / (double)nbins;
  for (int64_t i = 0; i < values->n; i++) {
    double v = values->v[i];
    if (isnan(v)) continue;
    /* The difference is taken in the values' dtype, then divided in double (TensorFlow's). */
    double q = cf_round_to_dtype(values->dtype, (v > lo ? v : lo) - lo) / step;
    int64_t bin = q >= (double)(nbins - 1) ? nbins - 1 : (int64_t)q;
    out->v[bin] += 1;
  }
  return out;
}

cf_array_t *cf_ref_betainc(const cf_array_t *a, const cf_array_t *b, const cf_array_t *x) {
  const cf_array_t *shape = a->rank > 0 ? a : (b->rank > 0 ? b : x);
  cf_array_t *out = cf_array_new_like(shape, x->dtype);
  for (int64_t i = 0; i < out->n; i++) {
    double av = a->v[a->rank > 0 ? i : 0], bv = b->v[b->rank > 0 ? i : 0];
    double xv = x->v[x->rank > 0 ? i : 0];
    out->v[i] = (double)ld_betainc(av, bv, xv);
  }
  cf_array_round(out);
  return out;
}
