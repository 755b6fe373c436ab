/* cpu_vmath_impl.h: the float32 Exp, Log, Tanh and Sigmoid loops, written once with GCC vector
 * extensions and included by cpu_vmath_{baseline,avx2,avx512}.c, each of which defines
 * VM_WIDTH (floats per vector: 4, 8, 16) and VM_SUFFIX and is compiled with its level's -m
 * flags and -ffp-contract=fast (so the multiply-adds below become FMAs where the level has
 * them). No libm call and no branch per element: every lane computes the polynomial and the
 * special cases (NaN, infinities, zeros, overflow, denormals) are selected in with masks.
 *
 * Accuracy (measured by tests/test_cpu_math.c against double-precision libm over a dense
 * sweep of all floats): see docs/performance.md; all are within a few ulp, far inside the
 * conformance suite's 2e-5 relative tolerance for float32 transcendentals. */
#include <stddef.h>
#include <stdint.h>

#include "cpu_vmath.h"

#define VM_CAT2(a, b) a##b
#define VM_CAT(a, b) VM_CAT2(a, b)
#define VM_NAME(f) VM_CAT(VM_CAT(vm_, f), VM_CAT(_, VM_SUFFIX))

typedef float vf __attribute__((vector_size(VM_WIDTH * 4)));
typedef int32_t vi __attribute__((vector_size(VM_WIDTH * 4)));
/* Integer arithmetic on the bits is unsigned so that wrapping is defined. */
typedef uint32_t vu __attribute__((vector_size(VM_WIDTH * 4)));

#define VM_INLINE static inline __attribute__((always_inline))

VM_INLINE vf vsplat(float c) { return (vf){0} + c; }
VM_INLINE vu usplat(uint32_t c) { return (vu){0} + c; }
/* m ? a : b, m a comparison's all-ones / all-zeros lanes. */
VM_INLINE vf vsel(vi m, vf a, vf b) { return (vf)(((vu)m & (vu)a) | (~(vu)m & (vu)b)); }
VM_INLINE vf vabs(vf x) { return (vf)((vu)x & 0x7fffffffu); }

/* e^x for any x. x = n ln2 + r with n = round(x / ln2), |r| <= ln2/2, ln2 split in two
 * (Cody-Waite: n * LN2_HI is exact for |n| < 2^15) so that r keeps its low bits; e^r by its
 * Taylor series to r^7 (the r^8 term is under 2^-27 of the sum); then times 2^n built in the
 * exponent field. 2^n is applied as two halves so that n from -150 to 128 needs no special
 * case: results under FLT_MIN come out as correctly scaled denormals (like glibc's expf) and
 * x above ln(FLT_MAX) overflows to +inf. x is clamped to [-104, 89] first (beyond, the result
 * is 0 or inf whatever r is), which also sends -inf to 0 and +inf to inf; NaN passes through
 * the clamp (comparisons with NaN are false) and the arithmetic keeps it NaN. */
VM_INLINE vf vexp(vf x) {
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f;         /* 9 significant bits */
  const float ln2_lo = -2.12194440054690583e-4f; /* ln2 - ln2_hi */
  const float round_magic = 12582912.0f;     /* 1.5 * 2^23: adding it rounds to an integer */
  x = vsel(x < -104.0f, vsplat(-104.0f), x);
  x = vsel(x > 89.0f, vsplat(89.0f), x);
  vf j = x * log2e + round_magic;
  vf n = j - round_magic;
  /* j's low mantissa bits hold n as a two's complement integer. */
  vu ni = (vu)j - 0x4b400000u;
  vf r = x - n * ln2_hi;
  r = r - n * ln2_lo;
  vf p = vsplat(1.0f / 5040);
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  vu n1 = (vu)((vi)ni >> 1); /* floor(n / 2), arithmetic shift */
  vu n2 = ni - n1;
  vf s1 = (vf)((n1 + 127u) << 23);
  vf s2 = (vf)((n2 + 127u) << 23);
  return p * s1 * s2;
}

/* ln x. x = 2^e m with m in [sqrt(1/2), sqrt(2)) (denormal x scaled by 2^23 first), f = m - 1
 * (exact), and ln(1+f) = f - (f^2/2 - s (f^2/2 + R)) with s = f / (2 + f), R = 2 s^2/3 +
 * 2 s^4/5 + 2 s^6/7 + 2 s^8/9 (the atanh series of ln((1+s)/(1-s)); |s| < 0.172, so the next
 * term is under 2^-28 of the sum). Keeping f as the leading term leaves the rounding errors
 * in the small correction. ln x = e ln2 + ln(1+f), ln2 split so that e * LN2_HI is exact.
 * Specials as glibc's logf: ln(+-0) = -inf, ln(x < 0) = NaN, ln(+inf) = +inf, NaN stays. */
VM_INLINE vf vlog(vf x) {
  const float ln2_hi = 0.693359375f;
  const float ln2_lo = -2.12194440054690583e-4f;
  vi tiny = x < 1.17549435e-38f; /* denormals (and zero and negatives, fixed up below) */
  vf xs = vsel(tiny, x * 8388608.0f, x);
  vu bits = (vu)xs;
  /* e such that m = x / 2^e lands in [sqrt(1/2), sqrt(2)): 0x3f3504f3 is sqrt(1/2)'s bits. */
  vu d = bits - 0x3f3504f3u;
  vi e = (vi)d >> 23;
  vf m = (vf)(bits - ((vu)e << 23));
  vf ef = __builtin_convertvector(e, vf) - vsel(tiny, vsplat(23.0f), vsplat(0.0f));
  vf f = m - 1.0f;
  vf s = f / (f + 2.0f);
  vf z = s * s;
  vf R = vsplat(2.0f / 9);
  R = R * z + 2.0f / 7;
  R = R * z + 2.0f / 5;
  R = R * z + 2.0f / 3;
  R = R * z;
  vf hfsq = 0.5f * f * f;
  vf l1p = f - (hfsq - s * (hfsq + R));
  vf y = ef * ln2_hi + (l1p + ef * ln2_lo);
  y = vsel(x == 1.0f / 0.0f, x, y);
  y = vsel(x < 0.0f, vsplat(__builtin_nanf("")), y);
  y = vsel(x == 0.0f, vsplat(-1.0f / 0.0f), y);
  return vsel(x != x, x, y);
}

/* tanh x, odd, computed on |x| with x's sign put back (so -0 stays -0). Below 0.3 its Taylor
 * series to x^13 (the x^15 term is under 2^-33 of the sum; tiny and denormal x come out as
 * x); from 0.3, (1 - e) / (1 + e) with e = e^(-2|x|) (from 0.3, e < 0.55 and 1 - e loses
 * at most a bit to cancellation). Large |x| saturates to exactly 1 as e underflows, inf
 * included; NaN stays NaN through vexp. */
VM_INLINE vf vtanh(vf x) {
  vf a = vabs(x);
  vf z = a * a;
  vf p = vsplat(21844.0f / 6081075);
  p = p * z - 1382.0f / 155925;
  p = p * z + 62.0f / 2835;
  p = p * z - 17.0f / 315;
  p = p * z + 2.0f / 15;
  p = p * z - 1.0f / 3;
  vf small = a + a * (z * p);
  vf e = vexp(-2.0f * a);
  vf large = (1.0f - e) / (1.0f + e);
  vf t = vsel(a < 0.3f, small, large);
  return (vf)((vu)t | ((vu)x & 0x80000000u));
}

/* 1 / (1 + e^-x) from e = e^-|x| (never overflows): 1 / (1 + e) for x >= 0, e / (1 + e)
 * below. As TensorFlow's (Eigen's) float Sigmoid: exactly 1 once e^-x < 2^-24 (x > ~16.6)
 * and e^x itself for very negative x, down through the denormals to exactly 0 below about
 * -103.97, so Sigmoid(-inf) = 0, Sigmoid(inf) = 1; NaN stays NaN. */
VM_INLINE vf vsigmoid(vf x) {
  vf e = vexp(-vabs(x));
  vf inv = 1.0f / (1.0f + e);
  return vsel(x >= 0.0f, inv, e * inv);
}

/* One loop per function: whole vectors, then the tail through a zero-padded vector (a few
 * lanes of wasted work instead of a scalar copy of each function). */
#define VM_LOOP(f)                                                        \
  static void VM_NAME(f)(const float *x, float *y, int64_t n) {           \
    int64_t i = 0;                                                        \
    for (; i + VM_WIDTH <= n; i += VM_WIDTH) {                            \
      vf v;                                                               \
      __builtin_memcpy(&v, x + i, sizeof v);                              \
      v = v##f(v);                                                        \
      __builtin_memcpy(y + i, &v, sizeof v);                              \
    }                                                                     \
    if (i < n) {                                                          \
      vf v = {0};                                                         \
      __builtin_memcpy(&v, x + i, (size_t)(n - i) * sizeof(float));      \
      v = v##f(v);                                                        \
      __builtin_memcpy(y + i, &v, (size_t)(n - i) * sizeof(float));      \
    }                                                                     \
  }

VM_LOOP(exp)
VM_LOOP(log)
VM_LOOP(tanh)
VM_LOOP(sigmoid)

const weft_cpu_vmath_t VM_CAT(weft__cpu_vmath_, VM_SUFFIX) = {
    VM_NAME(exp), VM_NAME(log), VM_NAME(tanh), VM_NAME(sigmoid)};
