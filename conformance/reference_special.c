/* reference_special.c: references of the special-math ops (declared in reference_special.h),
 * each computed in long double by a different route than the CPU kernel's so that a shared
 * mistake cannot hide: Zeta by a longer direct sum (to q+n >= max(60, 2x)) before its
 * Euler-Maclaurin tail; Erfinv and Ndtri by bisection on erfl/erfcl; BesselI0e and BesselI1e by
 * the trapezoid rule on (1/pi) int_0^pi exp(|x|(cos t - 1)) cos(nu t) dt (spectrally exact for a
 * periodic integrand); NextAfter by stepping the bit pattern; CumulativeLogsumexp as
 * max + log(sum exp(v - max)) of each prefix rather than a running log-add. The domain rules
 * (NaN and inf cases) are Eigen's, which TensorFlow's kernels use. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "reference_bits.h"
#include "reference_special.h"

#define LD_PI 3.141592653589793238462643383279502884L

static long double ld_zeta(long double x, long double q) {
  /* B_2j / (2j)!, j = 1..10. */
  static const long double b2j[] = {
      1.0L / 6,    -1.0L / 30,  1.0L / 42,     -1.0L / 30,     5.0L / 66,
      -691.0L / 2730, 7.0L / 6, -3617.0L / 510, 43867.0L / 798, -174611.0L / 330,
  };
  if (isnan(x) || isnan(q)) return NAN;
  if (x == 1) return INFINITY;
  if (x < 1) return NAN;
  if (q <= 0) {
    if (q == floorl(q)) return (x == floorl(x) && fmodl(x, 2) == 0) ? INFINITY : NAN;
    if (x != floorl(x)) return NAN;
  }
  if (isinf(q)) return 0;
  long double limit = fmaxl(60, 2 * x), s = 0, a = q;
  while (a < limit) {
    long double t = powl(a, -x);
    s += t;
    if (a > 0 && t < s * 1e-25L) return s;
    a += 1;
  }
  long double ax = powl(a, -x), fact = 1, poch = x, apow = ax / a;
  s += a * ax / (x - 1) + ax / 2;
  for (int j = 1; j <= 10; j++) {
    fact *= (long double)(2 * j - 1) * (long double)(2 * j);
    s += b2j[j - 1] / fact * poch * apow;
    poch *= (x + 2 * j - 1) * (x + 2 * j);
    apow /= a * a;
  }
  return s;
}

static double b_zeta(double x, double q, weft_dtype_t t) {
  (void)t;
  return (double)ld_zeta(x, q);
}

static double b_polygamma(double n, double x, weft_dtype_t t) {
  if (isnan(n) || isnan(x) || n < 0 || floor(n) != n) return NAN;
  if (n == 0) return cf_ref_bits_unary_fn("Digamma")(x, t);
  long double sign = fmod(n, 2) == 0 ? -1 : 1;
  return (double)(sign * tgammal((long double)n + 1) * ld_zeta((long double)n + 1, x));
}

/* The t in [lo, hi] where the decreasing f(t) crosses v, by bisection. */
static long double bisect_decreasing(long double (*f)(long double), long double v, long double lo,
                                     long double hi) {
  for (int i = 0; i < 200 && lo < hi; i++) {
    long double mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    if (f(mid) > v) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

static long double neg_erfl(long double t) { return -erfl(t); }

static long double ld_erfc_inv(long double c) { /* c in (0, 1] */
  return bisect_decreasing(erfcl, c, 0, 110);
}

static double u_erfinv(double y, weft_dtype_t t) {
  (void)t;
  if (isnan(y) || fabs(y) > 1) return NAN;
  if (fabs(y) == 1) return copysign(INFINITY, y);
  if (y == 0) return y;
  long double ay = fabsl(y), x;
  if (ay <= 0.5L) x = bisect_decreasing(neg_erfl, -ay, 0, 1);
  else x = ld_erfc_inv(1 - ay);
  return (double)(y < 0 ? -x : x);
}

static double u_ndtri(double p, weft_dtype_t t) {
  (void)t;
  if (isnan(p) || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  if (p == 0.5) return 0;
  long double sq2 = sqrtl(2.0L);
  if (p < 0.5) return (double)(-sq2 * ld_erfc_inv(2 * (long double)p));
  return (double)(sq2 * ld_erfc_inv(2 * (1 - (long double)p)));
}

static double bessel_ie_trapezoid(int nu, double x) {
  if (isnan(x)) return x;
  if (isinf(x)) return 0;
  const int n = 3000;
  long double ax = fabsl(x), s = 0;
  for (int k = 0; k <= n; k++) {
    long double th = LD_PI * k / n, w = (k == 0 || k == n) ? 0.5L : 1;
    /* For I1, int cos t dt = 0 is taken out: expm1 keeps small |x| free of cancellation. */
    s += w * (nu ? expm1l(ax * (cosl(th) - 1)) * cosl(th) : expl(ax * (cosl(th) - 1)));
  }
  s /= n;
  return (double)(nu && x < 0 ? -s : s);
}

static double u_i0e(double x, weft_dtype_t t) {
  (void)t;
  return bessel_ie_trapezoid(0, x);
}

static double u_i1e(double x, weft_dtype_t t) {
  (void)t;
  return bessel_ie_trapezoid(1, x);
}

/* TensorFlow's zero guards: x == 0 (or y == 0 for MulNoNan) wins over inf and NaN. */
static double b_xdivy(double x, double y, weft_dtype_t t) {
  (void)t;
  return x == 0 ? 0 : (double)((long double)x / y);
}

static double b_xlogy(double x, double y, weft_dtype_t t) {
  (void)t;
  return x == 0 ? 0 : (double)(x * logl(y));
}

static double b_xlog1py(double x, double y, weft_dtype_t t) {
  (void)t;
  return x == 0 ? 0 : (double)(x * log1pl(y));
}

static double b_mul_no_nan(double x, double y, weft_dtype_t t) {
  (void)t;
  return y == 0 ? 0 : (double)((long double)x * y);
}

/* One step of the sign-magnitude bit pattern: away from zero grows the magnitude; from zero the
 * step is the smallest denormal. */
static double b_next_after(double x1, double x2, weft_dtype_t t) {
  if (isnan(x1) || isnan(x2)) return NAN;
  if (x1 == x2) return x2;
  bool up = x2 > x1, f32 = t == WEFT_DT_FLOAT;
  if (x1 == 0) return (up ? 1 : -1) * (f32 ? FLT_TRUE_MIN : DBL_TRUE_MIN);
  int step = up == (x1 > 0) ? 1 : -1;
  if (f32) {
    float f = (float)x1;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits += (uint32_t)step;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  uint64_t bits;
  memcpy(&bits, &x1, sizeof bits);
  bits += (uint64_t)(int64_t)step;
  memcpy(&x1, &bits, sizeof x1);
  return x1;
}

cf_unary_fn cf_ref_special_unary_fn(const char *op) {
  if (strcmp(op, "Erfinv") == 0) return u_erfinv;
  if (strcmp(op, "Ndtri") == 0) return u_ndtri;
  if (strcmp(op, "BesselI0e") == 0) return u_i0e;
  if (strcmp(op, "BesselI1e") == 0) return u_i1e;
  return NULL;
}

cf_binary_fn cf_ref_special_binary_fn(const char *op) {
  if (strcmp(op, "Zeta") == 0) return b_zeta;
  if (strcmp(op, "Polygamma") == 0) return b_polygamma;
  if (strcmp(op, "Xdivy") == 0) return b_xdivy;
  if (strcmp(op, "Xlogy") == 0) return b_xlogy;
  if (strcmp(op, "Xlog1py") == 0) return b_xlog1py;
  if (strcmp(op, "MulNoNan") == 0) return b_mul_no_nan;
  if (strcmp(op, "NextAfter") == 0) return b_next_after;
  return NULL;
}

cf_array_t *cf_ref_approximate_equal(const cf_array_t *x, const cf_array_t *y, double tolerance) {
  cf_array_t *z = cf_array_new(WEFT_DT_BOOL, x->rank, x->dims);
  double tol = cf_round_to_dtype(x->dtype, (float)tolerance);
  for (int64_t i = 0; i < x->n; i++)
    z->v[i] = fabs(cf_round_to_dtype(x->dtype, x->v[i] - y->v[i])) < tol;
  return z;
}

cf_array_t *cf_ref_cumulative_logsumexp(const cf_array_t *x, int axis, bool exclusive,
                                        bool reverse) {
  cf_array_t *y = cf_array_new(x->dtype, x->rank, x->dims);
  int64_t outer = 1, inner = 1, n = x->dims[axis];
  for (int d = 0; d < x->rank; d++) {
    if (d < axis) outer *= x->dims[d];
    if (d > axis) inner *= x->dims[d];
  }
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < inner; c++)
      for (int64_t s = 0; s < n; s++) {
        /* The prefix: positions 0..s (s excluded when exclusive) in scan order. */
        int64_t len = exclusive ? s : s + 1;
        long double mx = -INFINITY, sum = 0;
        bool nan = false;
        for (int64_t k = 0; k < len; k++) {
          int64_t m = reverse ? n - 1 - k : k;
          long double v = x->v[(o * n + m) * inner + c];
          if (isnan(v)) nan = true;
          else if (v > mx) mx = v;
        }
        long double out = mx;
        if (nan) {
          out = NAN;
        } else if (isfinite(mx)) {
          for (int64_t k = 0; k < len; k++) {
            int64_t m = reverse ? n - 1 - k : k;
            sum += expl(x->v[(o * n + m) * inner + c] - mx);
          }
          out = mx + logl(sum);
        }
        int64_t at = (o * n + (reverse ? n - 1 - s : s)) * inner + c;
        y->v[at] = (double)out;
      }
  cf_array_round(y);
  return y;
}
