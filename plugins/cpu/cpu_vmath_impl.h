/* cpu_vmath_impl.h: the float32 Exp, Log, Tanh, Sigmoid, Expm1, Log1p, Erf, Softplus, Elu and
 * Selu loops, written once with GCC vector extensions and included by
 * cpu_vmath_{baseline,avx2,avx512}.c, each of which defines VM_WIDTH (floats per vector: 4, 8,
 * 16) and VM_SUFFIX and is compiled with its level's -m flags and -ffp-contract=fast (so the
 * multiply-adds below become FMAs where the level has them). No libm call and no branch per
 * element: every lane computes the polynomial and the special cases (NaN, infinities, zeros,
 * overflow, denormals) are selected in with masks.
 *
 * Accuracy (measured by tests/test_cpu_math.c against double-precision libm over a dense
 * sweep of all floats): see docs/performance.md; all are within a few ulp, far inside the
 * conformance suite's 2e-5 relative tolerance for float32 transcendentals. */
#include <stddef.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "cpu_vmath.h"

#define VM_CAT2(a, b) a##b
#define VM_CAT(a, b) VM_CAT2(a, b)
#define VM_NAME(f) VM_CAT(VM_CAT(vm_, f), VM_CAT(_, VM_SUFFIX))

typedef float vf __attribute__((vector_size(VM_WIDTH * 4)));
typedef int32_t vi __attribute__((vector_size(VM_WIDTH * 4)));
/* Integer arithmetic on the bits is unsigned so that wrapping is defined. */
typedef uint32_t vu __attribute__((vector_size(VM_WIDTH * 4)));
/* The same lanes in double (two or more registers per vector). */
typedef double vd __attribute__((vector_size(VM_WIDTH * 8)));
typedef uint64_t vul __attribute__((vector_size(VM_WIDTH * 8)));

#define VM_INLINE static inline __attribute__((always_inline))

VM_INLINE vf vsplat(float c) { return (vf){0} + c; }
VM_INLINE vu usplat(uint32_t c) { return (vu){0} + c; }
/* c in every lane bit for bit (vsplat's 0 + c turns -0 into +0): for operands, not constants. */
VM_INLINE vf vsplat_bits(float c) {
  uint32_t u;
  __builtin_memcpy(&u, &c, sizeof u);
  return (vf)usplat(u);
}
/* m ? a : b, m a comparison's all-ones / all-zeros lanes. */
VM_INLINE vf vsel(vi m, vf a, vf b) { return (vf)(((vu)m & (vu)a) | (~(vu)m & (vu)b)); }
VM_INLINE vf vabs(vf x) { return (vf)((vu)x & 0x7fffffffu); }
/* Whether any lane of the comparison m is set: one mask instruction where the level has it
 * (GCC's generic vectors have no horizontal test and extract lane by lane). */
VM_INLINE int vany(vi m) {
#if VM_WIDTH == 16 && defined(__AVX512F__)
  return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
#elif VM_WIDTH == 8 && defined(__AVX__)
  return _mm256_movemask_ps((__m256)m) != 0;
#elif VM_WIDTH == 4 && defined(__SSE2__)
  return _mm_movemask_ps((__m128)m) != 0;
#else
  int any = 0;
  for (int k = 0; k < VM_WIDTH; k++) any |= m[k];
  return any != 0;
#endif
}

/* Whether any lane of a is above c (a NaN lane is not): at AVX-512 one compare into a mask
 * register, where gcc makes vany's comparison a vector and tests it again (two more operations
 * per vector in Sigmoid's loop). */
VM_INLINE int vany_gt(vf a, float c) {
#if VM_WIDTH == 16 && defined(__AVX512F__)
  return _mm512_cmp_ps_mask((__m512)a, _mm512_set1_ps(c), _CMP_GT_OQ) != 0;
#else
  return vany(a > c);
#endif
}

/* Whether any lane of a is below c (a NaN lane is not), as vany_gt. */
VM_INLINE int vany_lt(vf a, float c) {
#if VM_WIDTH == 16 && defined(__AVX512F__)
  return _mm512_cmp_ps_mask((__m512)a, _mm512_set1_ps(c), _CMP_LT_OQ) != 0;
#else
  return vany(a < c);
#endif
}

/* c < v ? c : v and c > v ? c : v per lane, so a NaN v passes (c is never NaN): one minps or
 * maxps where the level has it (their result is the second operand when either is NaN), where
 * gcc leaves the select as a compare and a blend. */
#if VM_WIDTH == 16 && defined(__AVX512F__)
#define VM_MINMAX(op, cmp, c, v) ((vf)_mm512_##op##_ps((__m512)(c), (__m512)(v)))
#elif VM_WIDTH == 8 && defined(__AVX__)
#define VM_MINMAX(op, cmp, c, v) ((vf)_mm256_##op##_ps((__m256)(c), (__m256)(v)))
#elif VM_WIDTH == 4 && defined(__SSE2__)
#define VM_MINMAX(op, cmp, c, v) ((vf)_mm_##op##_ps((__m128)(c), (__m128)(v)))
#else
#define VM_MINMAX(op, cmp, c, v) vsel((c) cmp (v), (c), (v))
#endif
VM_INLINE vf vmin_keepnan(vf c, vf v) { return VM_MINMAX(min, <, c, v); }
VM_INLINE vf vmax_keepnan(vf c, vf v) { return VM_MINMAX(max, >, c, v); }

/* The reduction and polynomial of vexp (below) on an x already clamped: e^r, and n as a float in
 * *nf and in *ni (two's complement). deg5 (a constant at every call) picks the shorter
 * polynomial. */
VM_INLINE vf vexp_reduced(vf x, vf *nf, vu *ni, int deg5) {
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f;         /* 9 significant bits */
  const float ln2_lo = -2.12194440054690583e-4f; /* ln2 - ln2_hi */
  const float round_magic = 12582912.0f;     /* 1.5 * 2^23: adding it rounds to an integer */
  vf j = x * log2e + round_magic;
  vf n = j - round_magic;
  *nf = n;
  /* j's low mantissa bits hold n as a two's complement integer. */
  *ni = (vu)j - 0x4b400000u;
  vf r = x - n * ln2_hi;
  r = r - n * ln2_lo;
  /* Near-minimax polynomials in the relative error of e^r with 1 + r exact
   * (tests/ref/fit_exp_poly.py, DEG 6 and 5): degree 6 reaches 3.1e-9 in double (the Taylor
   * series needs degree 7 for 5.4e-9), degree 5 1.05e-7 for one FMA fewer. */
  vf p;
  if (deg5) {
    p = vsplat(8.312524962e-03f);
    p = p * r + 4.189011335e-02f;
    p = p * r + 1.666711446e-01f;
    p = p * r + 4.999923179e-01f;
  } else {
    p = vsplat(1.381461310e-03f);
    p = p * r + 8.368709842e-03f;
    p = p * r + 4.166838737e-02f;
    p = p * r + 1.666652069e-01f;
    p = p * r + 4.999999345e-01f;
  }
  p = p * r + 1.0f;
  return p * r + 1.0f;
}

/* p 2^n for an integral float n, rounded once: AVX-512's vscalefps, one instruction that also
 * gives correctly rounded denormals, 0 and inf where the product leaves the normal range. */
#if VM_WIDTH == 16 && defined(__AVX512F__)
VM_INLINE vf vscale2(vf p, vf n) { return (vf)_mm512_scalef_ps((__m512)p, (__m512)n); }
#endif

/* e^x for x in [-87, 87] (NaN passes): vexp's reduction and polynomial without what the rest of
 * the range needs. The caller keeps x there; then n is in [-126, 126], so 2^n is one normal
 * float (no two-halves scaling) and nothing overflows. */
VM_INLINE vf vexp_normal(vf x, int deg5) {
  vf n;
  vu ni;
  vf p = vexp_reduced(x, &n, &ni, deg5);
#if VM_WIDTH == 16 && defined(__AVX512F__)
  return vscale2(p, n);
#else
  return p * (vf)((ni + 127u) << 23);
#endif
}

/* e^-x for x in [-87, 87] by vexp_normal's degree-5 path with the negation folded into its
 * operations: each computes the negated exact value of its counterpart there (n from -x log2e,
 * -r = x + n ln2, and the polynomial in r as c - p (-r)), so it rounds to the same bits (NaN
 * aside, whose sign may differ) without the one operation that negated x: Sigmoid's a sixteenth
 * of its work. */
VM_INLINE vf vexp_neg_normal5(vf x) {
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f;
  const float ln2_lo = -2.12194440054690583e-4f;
  const float round_magic = 12582912.0f;
  vf j = x * -log2e + round_magic;
  vf n = j - round_magic;
  vf rn = x + n * ln2_hi;
  rn = rn + n * ln2_lo;
  vf p = vsplat(8.312524962e-03f);
  p = 4.189011335e-02f - p * rn;
  p = 1.666711446e-01f - p * rn;
  p = 4.999923179e-01f - p * rn;
  p = 1.0f - p * rn;
  p = 1.0f - p * rn;
#if VM_WIDTH == 16 && defined(__AVX512F__)
  return vscale2(p, n);
#else
  vu ni = (vu)j - 0x4b400000u;
  return p * (vf)((ni + 127u) << 23);
#endif
}

/* e^x for any x. x = n ln2 + r with n = round(x / ln2), |r| <= ln2/2, ln2 split in two
 * (Cody-Waite: n * LN2_HI is exact for |n| < 2^15) so that r keeps its low bits; e^r by
 * vexp_reduced's polynomial; then times 2^n, rounded once: results under FLT_MIN come out as
 * correctly scaled denormals (like glibc's expf) and x above ln(FLT_MAX) overflows to +inf. x is
 * clamped to [-104, 89] first (beyond, the result is 0 or inf whatever r is), which also sends
 * -inf to 0 and +inf to inf; NaN passes through the clamp and the arithmetic keeps it NaN.
 * At AVX-512 the clamp is a minps and a maxps and 2^n is vscalefps: 12 or 13 operations in all,
 * where the two-halves scaling below and compare-and-blend clamps took 23. Below AVX-512, a
 * vector whose lanes are all within [-87, 87] (NaN included) takes vexp_normal and the rest the
 * clamp and 2^n applied as two halves, so that n from -150 to 128 needs no special case. Every
 * path gives the same bits: p 2^n rounded once. */
VM_INLINE vf vexp_any(vf x, int deg5) {
#if VM_WIDTH == 16 && defined(__AVX512F__)
  x = vmin_keepnan(vsplat(89.0f), vmax_keepnan(vsplat(-104.0f), x));
  vf n;
  vu ni;
  vf p = vexp_reduced(x, &n, &ni, deg5);
  return vscale2(p, n);
#else
  if (__builtin_expect(!vany_gt(vabs(x), 87.0f), 1)) return vexp_normal(x, deg5);
  x = vmin_keepnan(vsplat(89.0f), vmax_keepnan(vsplat(-104.0f), x));
  vf n;
  vu ni;
  vf p = vexp_reduced(x, &n, &ni, deg5);
  vu n1 = (vu)((vi)ni >> 1); /* floor(n / 2), arithmetic shift */
  vu n2 = ni - n1;
  vf s1 = (vf)((n1 + 127u) << 23);
  vf s2 = (vf)((n2 + 127u) << 23);
  return p * s1 * s2;
#endif
}

/* The Exp op: the degree-5 polynomial, 2.4 ulp at worst over all floats (0.87 with degree 6)
 * for a tenth less time; bound 3 in tests/test_cpu_math.c. */
VM_INLINE vf vexp(vf x) { return vexp_any(x, 1); }
/* Inside Softplus and Erfc, whose own bounds leave less room: degree 6. */
VM_INLINE vf vexp6(vf x) { return vexp_any(x, 0); }

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

/* The reduction and polynomial of vexpm1 (below) on an x already clamped: e^r - 1, with n as a
 * float in *n and as an integer in *ni. x = n ln2 + r as in vexp; e^r - 1 by its Taylor series
 * to r^8 kept as r + r^2 q(r) (the r^9 term is under 2^-30 of r), so nothing cancels near 0. */
VM_INLINE vf vexpm1_reduced(vf x, vf *n, vu *ni) {
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f;
  const float ln2_lo = -2.12194440054690583e-4f;
  const float round_magic = 12582912.0f;
  vf j = x * log2e + round_magic;
  *n = j - round_magic;
  *ni = (vu)j - 0x4b400000u;
  vf r = x - *n * ln2_hi;
  r = r - *n * ln2_lo;
  vf q = vsplat(1.0f / 40320);
  q = q * r + 1.0f / 5040;
  q = q * r + 1.0f / 720;
  q = q * r + 1.0f / 120;
  q = q * r + 1.0f / 24;
  q = q * r + 1.0f / 6;
  q = q * r + 0.5f;
  return r + (r * r) * q;
}

/* p(t) by Horner from the highest of n coefficients, unrolled (n is a constant at every call:
 * a loop here cost Tanh 13% at avx2). */
VM_INLINE vf vpoly(vf t, const float *c, int n) {
  vf p = vsplat(c[n - 1]);
  _Pragma("GCC unroll 16")
  for (int k = n - 2; k >= 0; k--) p = p * t + c[k];
  return p;
}

/* tanh x, odd, computed on a = |x| with x's sign put back (so -0 stays -0): a P(a^2) / Q(a^2), a
 * rational near-minimax fit on [0, 9.02] (P of degree 6 and Q of degree 3 in a^2, both with
 * constant term 1 so that tiny and denormal x give x; the fit's own error is 1.9e-8 relative,
 * 0.32 ulp: tests/ref/fit_tanh_rational.py prints the coefficients). Eleven FMAs, two multiplies
 * and a division against the exp-based -m / (2 + m) (m = expm1(-2|x|): about twenty operations
 * and the division, 2.5 ulp), so about 30% less time at avx512 and avx2 in cache. The price is
 * accuracy near 1, where the roundings of P, Q and the quotient each cost up to an ulp of the
 * result: over all floats 5.1 ulp at worst at avx2 and avx512, 6.0 at baseline (no FMA); bound 8
 * in tests/test_cpu_math.c, that is under 5e-7 relative, far inside the conformance suite's 2e-5.
 * Those roundings can also carry the quotient just over 1 (from a = 8.5), so it is capped at 1:
 * |tanh| <= 1 always. From a = 9.02 on the result is exactly 1 by a select (tanh rounds to 1 in
 * float from 9.0109; the fit, past its range, and its roundings would not give 1 reliably there),
 * which also covers a^2 overflowing to inf and inf / inf; NaN fails the comparison, passes the
 * cap and stays NaN. */
/* vtanh's quotient a P(a^2) / Q(a^2) alone. For a in [-0, 8] (or NaN) it is vtanh's result
 * bit for bit: |a| is a and a's sign is already there, 8 is below 9.02, and the quotient stays
 * below 1 there (the roundings reach 1 from a = 8.5): a fused chain takes it where the op before
 * Tanh leaves values in that range (Sigmoid, Relu6, Erfc: cpu_fused.c), a sixth less work. */
VM_INLINE vf vtanh_nonneg_small(vf a) {
  static const float pc[7] = {1.0f,            1.308492273e-01f, 3.104936099e-03f,
                              1.116346357e-05f, -2.025581303e-08f, 5.289173613e-11f,
                              -8.508882347e-14f};
  static const float qc[4] = {1.0f, 4.641825259e-01f, 2.449918911e-02f, 2.547507756e-04f};
  vf z = a * a;
  vf p = vpoly(z, pc, 7);
  vf q = vpoly(z, qc, 4);
  return (a * p) / q;
}
VM_INLINE vf vtanh(vf x) {
  vf a = vabs(x);
  vf t = vsel(a >= 9.02f, vsplat(1.0f), vmin_keepnan(vsplat(1.0f), vtanh_nonneg_small(a)));
  return (vf)((vu)t | ((vu)x & 0x80000000u));
}

/* 1 / (1 + e^-x), as TensorFlow's (Eigen's) float Sigmoid: exactly 1 once e^-x < 2^-24 (x >
 * ~16.6) and e^x itself for very negative x, down through the denormals to exactly 0 below
 * about -103.97, so Sigmoid(-inf) = 0, Sigmoid(inf) = 1; NaN stays NaN. A vector whose lanes
 * are all at or above -87 (NaN included) takes the formula as written, e^-x by vexp_neg_normal5
 * with x lowered to 87 (where x > 87 the result is exactly 1 either way): for x < 0 the large e^-x
 * loses nothing in 1 / (1 + e^-x), and there is no |x|, no second product and no select (a sixth
 * less time at avx512 in cache). e^-x is the Exp op's (degree-5 polynomial: 3.35 ulp at worst
 * over every 97th float, 2.3 with degree 6; bound 4). A vector with a lane below -87, whose
 * result is under FLT_MIN, takes e = e^-|x| from vexp's whole range (e^-x would overflow):
 * 1 / (1 + e) for x >= 0, e / (1 + e) below. */
/* vsigmoid's formula for vectors whose lanes are all at or above -87 (NaN included), alone: a
 * fused chain takes it where the op before Sigmoid leaves values there (Exp, Relu, Tanh, ...:
 * cpu_fused.c), without the test for the other path. */
VM_INLINE vf vsigmoid_above_m87(vf x) {
  return 1.0f / (1.0f + vexp_neg_normal5(vmin_keepnan(vsplat(87.0f), x)));
}
VM_INLINE vf vsigmoid(vf x) {
  if (__builtin_expect(vany_lt(x, -87.0f), 0)) {
    vf e = vexp(-vabs(x));
    vf inv = 1.0f / (1.0f + e);
    return vsel(x >= 0.0f, inv, e * inv);
  }
  return vsigmoid_above_m87(x);
}

/* e^x - 1 without exp's cancellation near 0: e^r - 1 from vexpm1_reduced, and e^x - 1 = 2^n
 * (e^r - 1) + (2^n - 1): for n = 0 that is the polynomial itself, and for n != 0 the two terms do
 * not cancel (|e^r - 1| < 0.42). x is clamped to [-30, 89]: below -17.4 the float result is
 * exactly -1 (-inf included); from n = 25 on the -1 is lost in rounding, so those lanes take
 * vexp's two-halves scaling, which also overflows x above ln(FLT_MAX) to +inf. -0 is put back by
 * a select (the polynomial gives +0); NaN stays NaN. */
VM_INLINE vf vexpm1(vf x) {
  vf xc = vsel(x < -30.0f, vsplat(-30.0f), x);
  xc = vsel(xc > 89.0f, vsplat(89.0f), xc);
  vf n;
  vu ni;
  vf pm1 = vexpm1_reduced(xc, &n, &ni);
  /* Lanes with n > 24 take `big`; n = 0 there keeps this 2^n finite. For n from -43 to 24, 2^n
   * is a normal float and 2^n - 1 is exact. */
  vu nsmall = ni & ~(vu)(n > 24.0f);
  vf s = (vf)((nsmall + 127u) << 23);
  vf small = s * pm1 + (s - 1.0f);
  vu n1 = (vu)((vi)ni >> 1);
  vu n2 = ni - n1;
  vf big = (pm1 + 1.0f) * (vf)((n1 + 127u) << 23) * (vf)((n2 + 127u) << 23);
  vf y = vsel(n > 24.0f, big, small);
  return vsel(x == 0.0f, x, y);
}

/* ln(1 + x) = ln u + (x - (u - 1)) / u with u = 1 + x rounded: the second term is the rounding
 * error of u, to first order, so tiny x gives x and no bits are lost near 0. Specials as
 * glibc's log1pf: log1p(-1) = -inf, x < -1 gives NaN, +inf stays, +-0 stays; NaN stays. */
VM_INLINE vf vlog1p(vf x) {
  vf u = 1.0f + x;
  vf y = vlog(u) + (x - (u - 1.0f)) / u;
  y = vsel(x == 1.0f / 0.0f, x, y);
  y = vsel(x == -1.0f, vsplat(-1.0f / 0.0f), y);
  y = vsel(x < -1.0f, vsplat(__builtin_nanf("")), y);
  y = vsel(x == 0.0f, x, y);
  return vsel(x != x, x, y);
}

/* erf x, odd: computed on a = |x| with x's sign put back (so -0 stays -0 and erf(+-inf) =
 * +-1). At AVX-512, one polynomial of degree 5 in t = a - c per lane, its coefficients picked by
 * vpermps from sixteen per table, one per interval [k/4, (k+1)/4) of a, k = floor(4 a) (the
 * tables fill one register each: 16 floats): five FMAs and seven permutes, where the two
 * polynomials below take 24 FMAs (the FMA pipes are what Erf's loop is bound by: 0.49 -> 0.21 ns
 * per float in cache). c is the interval's centre, so t = a - c is exact (Sterbenz); the first
 * interval's c is 0 and its constant term 0, so tiny and denormal x give x 2/sqrt(pi) rounded
 * once. Each interval's fit is near-minimax in relative error with its coefficients rounded to
 * float one by one, refitting the rest (tests/ref/fit_erf_table.py prints them): 0.90 ulp at
 * worst before the evaluation's roundings. a is clamped to 3.99 first (erf rounds to exactly 1
 * from 3.9193, and the last interval's polynomial gives 1 there); NaN passes the clamp and
 * takes interval 0 (its index converts to 0x80000000, whose low bits vpermps reads). */
#if VM_WIDTH == 16 && defined(__AVX512F__)
static const float verf_table[7][16] __attribute__((aligned(64))) = {
    /* the interval's centre c */
    {0.0f, 0.3750f, 0.6250f, 0.8750f, 1.1250f, 1.3750f, 1.6250f, 1.8750f,
     2.1250f, 2.3750f, 2.6250f, 2.8750f, 3.1250f, 3.3750f, 3.6250f, 3.8750f},
    /* t^5 */
    {1.054272950e-01f, 4.382143915e-02f, -2.658544853e-02f, -6.641595811e-02f,
     -6.120785326e-02f, -3.066820465e-02f, -2.238286659e-03f, 1.130034216e-02f,
     1.245432347e-02f, 8.354417048e-03f, 4.232699051e-03f, 1.725457609e-03f,
     5.832386669e-04f, 1.661748393e-04f, 4.032800643e-05f, 8.396937119e-06f},
    /* t^4 */
    {2.302363049e-03f, 1.651908010e-01f, 1.756683588e-01f, 1.127998009e-01f,
     2.785566449e-02f, -3.017648309e-02f, -4.911959544e-02f, -4.305792227e-02f,
     -2.597420476e-02f, -1.411795709e-02f, -6.169390399e-03f, -2.155412221e-03f,
     -4.922882072e-04f, 7.268831832e-04f, -1.247461914e-04f, -5.553567898e-04f},
    /* t^3 */
    {-3.763799667e-01f, -2.348523885e-01f, -5.568218604e-02f, 9.291640669e-02f,
     1.624523252e-01f, 1.579381526e-01f, 1.148406863e-01f, 6.744255126e-02f,
     3.303762898e-02f, 1.373061817e-02f, 4.890355747e-03f, 1.502470579e-03f,
     3.999850887e-04f, 9.256980411e-05f, 1.866978528e-05f, 3.287472964e-06f},
    /* t^2 */
    {9.718395631e-06f, -3.676223755e-01f, -4.771847725e-01f, -4.591608346e-01f,
     -3.580525219e-01f, -2.342443466e-01f, -1.307733357e-01f, -6.288483739e-02f,
     -2.623077855e-02f, -9.500629269e-03f, -3.001824720e-03f, -8.303743089e-04f,
     -2.035112266e-04f, -5.676345609e-05f, -6.567889614e-06f, 7.338825981e-06f},
    /* t */
    {1.128379107e+00f, 9.803527594e-01f, 7.634995580e-01f, 5.247450471e-01f,
     3.182739615e-01f, 1.703597754e-01f, 8.047226071e-02f, 3.354582563e-02f,
     1.234082039e-02f, 4.006477538e-03f, 1.147875097e-03f, 2.902282868e-04f,
     6.475868577e-05f, 1.275174145e-05f, 2.215920176e-06f, 3.398223782e-07f},
    /* 1 */
    {0.000000000e+00f, 4.041168988e-01f, 6.232408881e-01f, 7.840750813e-01f,
     8.883882165e-01f, 9.481700659e-01f, 9.784437418e-01f, 9.919900298e-01f,
     9.973459840e-01f, 9.992170334e-01f, 9.997946024e-01f, 9.999521375e-01f,
     9.999901056e-01f, 9.999982119e-01f, 9.999997020e-01f, 9.999999404e-01f},
};
VM_INLINE vf verf(vf x) {
  vf a = vmin_keepnan(vsplat(3.99f), vabs(x));
  __m512i k = _mm512_cvttps_epi32((__m512)(a * 4.0f));
#define VERF_COEF(r) ((vf)_mm512_permutexvar_ps(k, _mm512_load_ps(verf_table[r])))
  vf t = a - VERF_COEF(0);
  vf p = VERF_COEF(1);
  p = p * t + VERF_COEF(2);
  p = p * t + VERF_COEF(3);
  p = p * t + VERF_COEF(4);
  p = p * t + VERF_COEF(5);
  p = p * t + VERF_COEF(6);
#undef VERF_COEF
  return (vf)((vu)p | ((vu)x & 0x80000000u));
}
#else
/* Below AVX-512 (no 16-entry permute): below 1, a P(a^2) with P of degree 7 (a Chebyshev
 * interpolant of erf(a)/a in a^2, error under 4e-11 relative). From 1, 1 - erfc(a) with erfc a degree 15 Chebyshev interpolant on
 * [1, 4] in t = a - 2.5 (exact, unlike a scaled t, whose rounding would cost an ulp at a = 1;
 * error under 7e-10 absolute, a hundredth of an ulp of erf there). a is clamped to 4 first:
 * from 3.9193 on, erfc(a) < 2^-25 and erf rounds to exactly 1; NaN passes the clamp. */
VM_INLINE vf verf(vf x) {
  vf a = vabs(x);
  vf z = a * a;
  vf p = vsplat(-9.673591139e-06f);
  p = p * z + 1.126825395e-04f;
  p = p * z - 8.484396549e-04f;
  p = p * z + 5.221053412e-03f;
  p = p * z - 2.686543831e-02f;
  p = p * z + 1.128378262e-01f;
  p = p * z - 3.761263848e-01f;
  p = p * z + 1.128379167e+00f;
  vf small = a * p;
  vf t = vsel(a > 4.0f, vsplat(4.0f), a) - 2.5f;
  vf c = vsplat(3.512991446e-07f);
  c = c * t - 8.901371472e-07f;
  c = c * t - 3.462653725e-06f;
  c = c * t + 1.571927083e-05f;
  c = c * t - 7.756445320e-06f;
  c = c * t - 8.110047295e-05f;
  c = c * t + 2.534241779e-04f;
  c = c * t - 2.587301173e-04f;
  c = c * t - 5.445338303e-04f;
  c = c * t + 2.797554688e-03f;
  c = c * t - 6.116587560e-03f;
  c = c * t + 8.622604298e-03f;
  c = c * t - 8.350211774e-03f;
  c = c * t + 5.445688652e-03f;
  c = c * t - 2.178278504e-03f;
  c = c * t + 4.069523677e-04f;
  vf large = 1.0f - c;
  vf y = vsel(a < 1.0f, small, large);
  return (vf)((vu)y | ((vu)x & 0x80000000u));
}
#endif

/* TensorFlow's float Softplus: x itself above -log(epsilon) - 2 = 13.94 (where log1p(e^x) - x
 * rounds away), e^x below -13.94 (where log1p(e^x) = e^x to float precision), log1p(e^x)
 * between. So Softplus(inf) = inf, Softplus(-inf) = 0, and NaN stays NaN. */
VM_INLINE vf vsoftplus(vf x) {
  const float threshold = 13.942385f;
  vf e = vexp6(x);
  vf y = vlog1p(e);
  y = vsel(x < -threshold, e, y);
  return vsel(x > threshold, x, y);
}

/* Elu: x from 0 up (-0 and NaN included: the comparison is false), e^x - 1 below (TensorFlow
 * writes exp(x) - 1; expm1 is the accurate form of the same function). */
VM_INLINE vf velu(vf x) { return vsel(x < 0.0f, vexpm1(x), x); }

/* Selu, with TensorFlow's constants (Klambauer et al.): scale x from 0 up, scale alpha
 * (e^x - 1) below; the products are rounded to float once, as the scalar kernel does. */
VM_INLINE vf vselu(vf x) {
  const float scale = 1.0507009873554804934f;
  const float scale_alpha = 1.7580993408473768600f;
  return vsel(x < 0.0f, scale_alpha * vexpm1(x), scale * x);
}

/* erfc x. Below 0.5 it is 1 - erf x (erf x < 0.53 there, and for x < 0 erfc x = 1 + erf |x| is
 * in (1, 2]: no cancellation). From 0.5 up, e^(-x^2) erfcx(x), with erfcx(x) = e^(x^2) erfc(x)
 * (smooth, 0.43 down to 0.055) by one of four polynomials in t = x - c (exact: Sterbenz) on
 * [0.5, 1.5], [1.5, 3.5], [3.5, 6], [6, 10.25] (Chebyshev interpolants, degree 8-9, relative
 * error under 1e-8 before float rounding), and e^(-x^2) as e^(-h^2) e^(-(x - h)(x + h)) with h
 * x's top 12 bits (so h^2 is exact and the rounding of x^2, worth up to 60 ulp of e^(-x^2) at
 * x = 10, never happens). Results under FLT_MIN come out as denormals, exactly 0 from about
 * 10.06; erfc(-inf) = 2, erfc(inf) = 0, NaN stays NaN. */
VM_INLINE vf verfc(vf x) {
  static const float c1[9] = {4.275835752e-01f,  -2.732119560e-01f, 1.543715447e-01f,
                              -7.922995090e-02f, 3.757333755e-02f,  -1.661914960e-02f,
                              6.955251098e-03f,  -2.993756905e-03f, 1.128665288e-03f};
  static const float c2[10] = {2.108063698e-01f,  -7.434734702e-02f, 2.493787371e-02f,
                               -8.001537994e-03f, 2.468021354e-03f,  -7.338369614e-04f,
                               2.083024156e-04f,  -5.818944192e-05f, 1.896995127e-05f,
                               -4.967514087e-06f};
  static const float c3[9] = {1.163027063e-01f,  -2.350343950e-02f, 4.661324900e-03f,
                              -9.081696044e-04f, 1.739406725e-04f,  -3.261449092e-05f,
                              6.052897334e-06f,  -1.246148713e-06f, 2.238499235e-07f};
  static const float c4[10] = {6.892431527e-02f,  -8.359104395e-03f, 1.006589155e-03f,
                               -1.203689608e-04f, 1.429864005e-05f,  -1.686824589e-06f,
                               1.958817109e-07f,  -2.281455735e-08f, 3.098417745e-09f,
                               -3.556246686e-10f};
  vf a = vsel(x > 10.25f, vsplat(10.25f), x); /* NaN passes */
  vf g = vpoly(a - 1.0f, c1, 9);
  g = vsel(a >= 1.5f, vpoly(a - 2.5f, c2, 10), g);
  g = vsel(a >= 3.5f, vpoly(a - 4.75f, c3, 9), g);
  g = vsel(a >= 6.0f, vpoly(a - 8.125f, c4, 10), g);
  vf h = (vf)((vu)a & 0xfffff000u);
  vf e = vexp6(-(h * h)) * vexp6(-((a - h) * (a + h)));
  vf large = e * g;
  large = vsel(x > 10.25f, vsplat(0.0f), large);
  vf small = 1.0f - verf(x);
  return vsel(x < 0.5f, small, large);
}

/* sqrt per lane: no vector-extension operator for it, so a lane loop, which gcc turns into the
 * level's sqrtps (the file is built with -fno-math-errno). Exact (correctly rounded). */
VM_INLINE vf vsqrt(vf x) {
  vf r;
  for (int i = 0; i < VM_WIDTH; i++) r[i] = __builtin_sqrtf(x[i]);
  return r;
}
/* 1 / sqrt(x) as the scalar kernel writes it (two roundings: under 1 ulp); rsqrt(+-0) = +-inf,
 * rsqrt(inf) = 0, negative x NaN. */
VM_INLINE vf vrsqrt(vf x) { return 1.0f / vsqrt(x); }
VM_INLINE vf vreciprocal(vf x) { return 1.0f / x; }
/* x / (1 + |x|), TensorFlow's Softsign; +-inf give NaN there too (inf / inf). */
VM_INLINE vf vsoftsign(vf x) { return x / (1.0f + vabs(x)); }
VM_INLINE vf vsquare(vf x) { return x * x; }
VM_INLINE vf vneg(vf x) { return (vf)((vu)x ^ 0x80000000u); }
/* Relu and Relu6 as TensorFlow's: NaN compares false and passes through. */
VM_INLINE vf vrelu(vf x) { return vsel(x < 0.0f, vsplat(0.0f), x); }
VM_INLINE vf vrelu6(vf x) { return vsel(x < 0.0f, vsplat(0.0f), vsel(x > 6.0f, vsplat(6.0f), x)); }

/* Where the sin/cos reduction below stops being exact enough: lanes with |x| beyond go to libm
 * one by one (their reduction needs pi to many more bits: Payne-Hanek). */
#define VM_TRIG_MAX 65536.0f

/* sin x (cos_shift 0) or cos x = sin(x + pi/2) (cos_shift 1). x = n pi/2 + r with n =
 * round(x 2/pi), |r| <= pi/4 (and a hair). r is computed in double from pi/2 in two parts, the
 * first with 33 significant bits so that n times it is exact for |n| < 2^20: where x is close
 * to a multiple of pi/2 (sin x tiny at large x), a float reduction would lose most of r's bits
 * to cancellation, this one keeps r to about 2^-70 absolute. Then, in float, sin r or cos r by
 * their Taylor series (sin to r^9: r + r^3 P(r^2), next term under 2^-28 relative; cos to r^10),
 * chosen and signed by the quadrant (n + cos_shift) mod 4. sin(+-0) = +-0; inf and NaN give
 * NaN. Lanes with |x| > VM_TRIG_MAX (inf included) are recomputed with libm's sinf/cosf. */
VM_INLINE vf vsincos(vf x, uint32_t cos_shift) {
  const float two_over_pi = 0.636619772367581343f;
  const float round_magic = 12582912.0f;
  const double pio2_1 = 0x1.921fb544p+0;          /* 33 significant bits */
  const double pio2_2 = 0x1.0b4611a626331p-34;    /* pi/2 - pio2_1, to 2^-87 */
  vf j = x * two_over_pi + round_magic;
  vf n = j - round_magic;
  vu q = ((vu)j + cos_shift) & 3u;
  vd nd = __builtin_convertvector(n, vd);
  vd rd = __builtin_convertvector(x, vd) - nd * pio2_1;
  rd = rd - nd * pio2_2;
  vf r = __builtin_convertvector(rd, vf);
  vf z = r * r;
  vf ps = vsplat(1.0f / 362880);
  ps = ps * z - 1.0f / 5040;
  ps = ps * z + 1.0f / 120;
  ps = ps * z - 1.0f / 6;
  vf s = r + r * (z * ps);
  vf pc = vsplat(-1.0f / 3628800);
  pc = pc * z + 1.0f / 40320;
  pc = pc * z - 1.0f / 720;
  pc = pc * z + 1.0f / 24;
  pc = pc * z - 0.5f;
  vf c = 1.0f + z * pc;
  vf y = vsel((vi)((q & 1u) != 0u), c, s);
  y = (vf)((vu)y ^ ((q & 2u) << 30));
  /* r + r (z P) gives +0 for r = -0 (its product term is +0). */
  if (cos_shift == 0) y = vsel(x == 0.0f, x, y);
  vi big = vabs(x) > VM_TRIG_MAX;
  uint32_t any = 0;
  for (int i = 0; i < VM_WIDTH; i++) any |= (uint32_t)big[i];
  if (__builtin_expect(any != 0, 0)) {
    for (int i = 0; i < VM_WIDTH; i++)
      if (big[i]) y[i] = cos_shift ? __builtin_cosf(x[i]) : __builtin_sinf(x[i]);
  }
  return y;
}
VM_INLINE vf vsin(vf x) { return vsincos(x, 0); }
VM_INLINE vf vcos(vf x) { return vsincos(x, 1); }

/* Stores v at p (VM_WIDTH floats, p aligned to a whole vector) with a streaming store: the line
 * is written without being read first and is not kept in cache. */
VM_INLINE void vstream(float *p, vf v) {
#if VM_WIDTH == 16 && defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#elif VM_WIDTH == 8 && defined(__AVX__)
  _mm256_stream_ps(p, (__m256)v);
#elif VM_WIDTH == 4 && defined(__SSE2__)
  _mm_stream_ps(p, (__m128)v);
#else
  __builtin_memcpy(p, &v, sizeof v);
#endif
}

/* The elements before y's first address aligned to a whole vector (at most n), for the
 * streaming loops: they go through the partial-vector path so that the whole vectors' stores are
 * aligned. -1 for a y not aligned even to a float, which then streams nothing. */
VM_INLINE int64_t vhead(const float *y, int64_t n) {
  const uintptr_t align = VM_WIDTH * sizeof(float);
  uintptr_t a = (uintptr_t)y;
  if (a % sizeof(float) != 0) return -1;
  int64_t head = (int64_t)(((align - (a & (align - 1))) & (align - 1)) / sizeof(float));
  return head < n ? head : n;
}

/* One loop per function: whole vectors, then the tail through a zero-padded vector (a few
 * lanes of wasted work instead of a scalar copy of each function). The streaming form (nt = 1,
 * the functions of the `_nt` table) takes y's unaligned head the same way and stores the whole
 * vectors with vstream; the kernels call it for outputs larger than the last-level cache. */
/* m is 1 to VM_WIDTH - 1 lanes; the mask (a no-op on those) lets the compiler see the copy's
 * bound, which a sanitized -O0 build cannot prove from the callers' tests. */
#define VM_PART(f, i, m)                                                  \
  do {                                                                    \
    vf v = {0};                                                           \
    size_t part_bytes = ((size_t)(m) & (VM_WIDTH - 1)) * sizeof(float);   \
    __builtin_memcpy(&v, x + (i), part_bytes);                            \
    v = v##f(v);                                                          \
    __builtin_memcpy(y + (i), &v, part_bytes);                            \
  } while (0)
#define VM_LOOP_FORM(f, name, nt)                                         \
  static void VM_NAME(name)(const float *x, float *y, int64_t n) {        \
    int64_t i = 0, head = nt ? vhead(y, n) : -1;                          \
    if (head > 0) VM_PART(f, 0, head);                                    \
    if (head > 0) i = head;                                               \
    for (; i + VM_WIDTH <= n; i += VM_WIDTH) {                            \
      vf v;                                                               \
      __builtin_memcpy(&v, x + i, sizeof v);                              \
      v = v##f(v);                                                        \
      if (head >= 0)                                                      \
        vstream(y + i, v);                                                \
      else                                                                \
        __builtin_memcpy(y + i, &v, sizeof v);                            \
    }                                                                     \
    if (i < n) VM_PART(f, i, n - i);                                      \
  }
#define VM_LOOP(f) VM_LOOP_FORM(f, f, 0) VM_LOOP_FORM(f, f##_nt, 1)

/* Binary functions, a the op's first argument, with cpu_binary.c's scalar expressions:
 * Maximum and Minimum give NaN when either operand is NaN (a NaN a by the mask, a NaN b by the
 * comparison's false), as TensorFlow 2's. */
VM_INLINE vf vadd2(vf a, vf b) { return a + b; }
VM_INLINE vf vsub2(vf a, vf b) { return a - b; }
VM_INLINE vf vmul2(vf a, vf b) { return a * b; }
VM_INLINE vf vdiv2(vf a, vf b) { return a / b; }
VM_INLINE vf vmaximum2(vf a, vf b) { return vsel((a > b) | (a != a), a, b); }
VM_INLINE vf vminimum2(vf a, vf b) { return vsel((a < b) | (a != a), a, b); }
VM_INLINE vf vsqdiff2(vf a, vf b) {
  vf d = a - b;
  return d * d;
}
/* LeakyRelu with b its alpha (TensorFlow's select(a > 0, a, a * alpha), hence a kept where it is
 * NaN or -0): the `vs` form is the op. */
VM_INLINE vf vleaky2(vf a, vf b) { return vsel(a < 0.0f, a * b, a); }

/* a^b. The lanes with a normal nonzero finite a and a finite b, a > 0 or b an integer (the sign
 * put back for an odd b), go through double precision: log2 |a| = e + log(m) / ln2 with
 * a = 2^e m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) = 2 s (1 + s^2/3 + ... + s^14/15),
 * s = (m - 1) / (m + 1) (|s| < 0.172: the next term is under 2e-12 of the sum); t = b log2 |a|
 * (double keeps t's error about 1e-12 |t|, where float would lose |t| ulp); then 2^t = 2^n e^r,
 * n = round(t), r = (t - n) ln2, e^r by its Taylor series to r^9 (under 1e-11), 2^n in the
 * exponent field, and one rounding to float, which also overflows to inf and underflows through
 * the denormals as powf does (|t| > 200 gives inf or 0 directly). So the result is the correctly
 * rounded one but for ties closer than about 1e-12 of an ulp. Every other lane (zero, denormal,
 * negative a with a non-integer b, infinities, NaN) takes libm's powf, whose special cases are
 * C's and TensorFlow's. */
/* out = the polynomial with coefficients c (c[0] the constant term, an array) at t, by Horner in
 * double lanes; a macro, since a function taking vectors wider than the level's registers would
 * change the ABI (gcc's -Wpsabi). */
#define VD_POLY(out, t, c)                                                             \
  do {                                                                                 \
    const int n_ = (int)(sizeof(c) / sizeof((c)[0]));                                  \
    (out) = (vd){0} + (c)[n_ - 1];                                                     \
    _Pragma("GCC unroll 16")                                                           \
    for (int k_ = n_ - 2; k_ >= 0; k_--) (out) = (out) * (t) + (c)[k_];                \
  } while (0)

VM_INLINE vf vpow2(vf a, vf b) {
#if VM_WIDTH == 4
  /* SSE2 has no FMA and two doubles per register: the path below takes twice libm's time
   * there (measured: 8.9 against 4.2 ns per float), so the baseline level is libm's. */
  vf y;
  for (int i = 0; i < VM_WIDTH; i++) y[i] = __builtin_powf(a[i], b[i]);
  return y;
#else
  const float two23 = 8388608.0f;
  vf aa = vabs(a), ab = vabs(b);
  /* b rounded to an integer where |b| < 2^23 (from 2^23 every float is one). */
  vf br = (ab + two23) - two23;
  vi is_int = (br == ab) | (ab >= two23);
  vi bi = __builtin_convertvector(vsel(ab < 16777216.0f, b, vsplat(0.0f)), vi);
  vi odd = is_int & ((bi & 1) != 0);
  vi fast = (aa >= 1.17549435e-38f) & (aa <= 3.40282347e38f) & (ab <= 3.40282347e38f) &
            ((a > 0.0f) | is_int);
  /* The other lanes compute 1^0 here (no NaN or inf in flight) and libm's answer below. */
  aa = vsel(fast, aa, vsplat(1.0f));
  vf bf = vsel(fast, b, vsplat(0.0f));
  vu bits = (vu)aa;
  vi e = (vi)(bits - 0x3f3504f3u) >> 23;
  vf m = (vf)(bits - ((vu)e << 23));
  vd md = __builtin_convertvector(m, vd);
  vd s = (md - 1.0) / (md + 1.0);
  vd z = s * s;
  static const double atanh_c[8] = {1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13,
                                     1.0 / 15};
  vd q;
  VD_POLY(q, z, atanh_c);
  const double two_over_ln2 = 2.8853900817779268; /* 2 / ln 2 */
  /* e through float (exact): gcc 12 at -O0 fails on an int32-to-double conversion of 16 lanes. */
  vd log2a = __builtin_convertvector(__builtin_convertvector(e, vf), vd) + (s * q) * two_over_ln2;
  vd t = __builtin_convertvector(bf, vd) * log2a;
  /* |t| > 200 is 0 or inf whatever its digits; those lanes compute 2^0 and are replaced below.
   * The test is made on t in float, since a comparison of vectors wider than the level's
   * registers (double lanes) is lowered lane by lane by gcc; t is finite here. */
  vf tf = __builtin_convertvector(t, vf);
  vi huge = tf > 200.0f, tiny = tf < -200.0f;
  t = t * __builtin_convertvector(vsel(huge | tiny, vsplat(0.0f), vsplat(1.0f)), vd);
  /* Adding 1.5 * 2^52 rounds t to an integer and leaves it, two's complement, in the low bits. */
  vd j = t + 6755399441055744.0;
  vd n = j - 6755399441055744.0;
  vul ni = (vul)j - 0x4338000000000000u;
  vd r = (t - n) * 0.69314718055994531;
  static const double exp_c[10] = {1.0,       1.0,        0.5,         1.0 / 6,     1.0 / 24,
                                    1.0 / 120, 1.0 / 720,  1.0 / 5040,  1.0 / 40320, 1.0 / 362880};
  vd p;
  VD_POLY(p, r, exp_c);
  vd y = p * (vd)((ni + 1023u) << 52);
  vf yf = __builtin_convertvector(y, vf);
  yf = vsel(huge, vsplat(__builtin_inff()), vsel(tiny, vsplat(0.0f), yf));
  yf = (vf)((vu)yf | ((vu)(a < 0.0f) & (vu)odd & 0x80000000u));
  vi slow = ~fast;
  if (__builtin_expect(vany(slow), 0)) {
    for (int i = 0; i < VM_WIDTH; i++)
      if (slow[i]) yf[i] = __builtin_powf(a[i], b[i]);
  }
  return yf;
#endif
}

/* a^c for a scalar exponent c that a few operations give as exactly as vpow2 (within its 1 ulp
 * of double pow; tests/test_cpu_math.c), with powf's special cases (the sign of zero and of
 * infinity included): a graph's Pow(x, 2), Pow(x, 3) (GELU's tanh form), Pow(v, -0.5) (a norm's
 * 1 / sqrt) take 5-10 operations a vector instead of vpow2's 70, as ONNX Runtime's Pow turns a
 * constant 2 or 3 into multiplications. a^2 is one float product (one rounding: the correctly
 * rounded result); a^3, a^4 and a^-2 are products in double (a^2 exact there) rounded to float,
 * a^-1 one float division, a^0.5 one float sqrt (both correctly rounded); a^-0.5 is 1 / sqrt in
 * double rounded to float. Where sqrt differs from pow (pow(-0, +-0.5) = +0 or +inf and
 * pow(-inf, +-0.5) = +inf or +0 where sqrt gives -0 and NaN) a select puts pow's value. */
/* Macros, not functions: a function returning vectors wider than the level's registers would
 * change the ABI (gcc's -Wpsabi). */
#define vto_double(a) __builtin_convertvector((a), vd)
#define vto_float(a) __builtin_convertvector((a), vf)
VM_INLINE vf vpow_c2(vf a, vf c) {
  (void)c;
  return a * a;
}
VM_INLINE vf vpow_c3(vf a, vf c) {
  (void)c;
  vd d = vto_double(a);
  return vto_float(d * d * d);
}
VM_INLINE vf vpow_c4(vf a, vf c) {
  (void)c;
  vd d = vto_double(a);
  vd d2 = d * d;
  return vto_float(d2 * d2);
}
VM_INLINE vf vpow_cm1(vf a, vf c) {
  (void)c;
  return 1.0f / a;
}
VM_INLINE vf vpow_cm2(vf a, vf c) {
  (void)c;
  vd d = vto_double(a);
  return vto_float(1.0 / (d * d));
}
VM_INLINE vf vpow_chalf(vf a, vf c) {
  (void)c;
  vf r = vsel(a == 0.0f, vsplat(0.0f), vsqrt(a));
  return vsel(a == -__builtin_inff(), vsplat(__builtin_inff()), r);
}
VM_INLINE vf vpow_cmhalf(vf a, vf c) {
  (void)c;
  vd d = vto_double(a);
  for (int i = 0; i < VM_WIDTH; i++) d[i] = __builtin_sqrt(d[i]);
  vf r = vsel(a == 0.0f, vsplat(__builtin_inff()), vto_float(1.0 / d));
  return vsel(a == -__builtin_inff(), vsplat(0.0f), r);
}

VM_LOOP(exp)
VM_LOOP(log)
VM_LOOP(tanh)
VM_LOOP(sigmoid)
VM_LOOP(expm1)
VM_LOOP(log1p)
VM_LOOP(erf)
VM_LOOP(softplus)
VM_LOOP(elu)
VM_LOOP(selu)
VM_LOOP(sqrt)
VM_LOOP(rsqrt)
VM_LOOP(reciprocal)
VM_LOOP(softsign)
VM_LOOP(square)
VM_LOOP(neg)
VM_LOOP(relu)
VM_LOOP(relu6)
VM_LOOP(sin)
VM_LOOP(cos)
VM_LOOP(abs)
VM_LOOP(erfc)
VM_LOOP(sigmoid_above_m87)
VM_LOOP(tanh_nonneg_small)

/* The chain evaluator: a fused chain of unary ops (cpu_fused.c) loads each vector once, applies
 * every op to it in registers and stores it once, where one loop per op read and wrote an L1
 * block per op. The switch on the op's code runs once per op for `cnt` vectors (the indirect
 * jump repeats with the chain's period, which the branch predictor follows); the functions are
 * the loops' own, so the bits are theirs. A vector's trip through the chain is one long
 * dependent sequence (five ops of ~15 dependent operations each in elementwise/chain5), longer
 * than the out-of-order window overlaps with the next iteration's: the independent vectors
 * inside one op, VM_CHAIN_UNROLL of them, are what fill the FMA pipes. At AVX-512 (32
 * registers) 6: chain5 0.83 -> 0.77 ns per float in cache and 14.2 -> 13.5 ms over 16M floats
 * from memory (16.5 -> 15.5 streamed), where 8 spilled more and ran 16-18 ms from memory and 2
 * took 1.08 ns in cache (docs/performance.md, branch kern). Below AVX-512, 16 registers: 2. */
#if VM_WIDTH == 16
#define VM_CHAIN_UNROLL 6
#else
#define VM_CHAIN_UNROLL 2
#endif
#define VM_CHAIN_CASE(code, f)                                                  \
  case WEFT_CPU_VOP_##code:                                                     \
    _Pragma("GCC unroll 8")                                                     \
    for (int u = 0; u < cnt; u++) v[u] = v##f(v[u]);                            \
    break;
/* v[0 .. cnt) through the chain; cnt is a constant at every call (1 or VM_CHAIN_UNROLL). */
VM_INLINE void vchain(vf *v, int cnt, const uint8_t *ops, int n_ops) {
  for (int k = 0; k < n_ops; k++) {
    switch ((weft_cpu_vop_t)ops[k]) {
      VM_CHAIN_CASE(EXP, exp)
      VM_CHAIN_CASE(LOG, log)
      VM_CHAIN_CASE(TANH, tanh)
      VM_CHAIN_CASE(SIGMOID, sigmoid)
      VM_CHAIN_CASE(EXPM1, expm1)
      VM_CHAIN_CASE(LOG1P, log1p)
      VM_CHAIN_CASE(ERF, erf)
      VM_CHAIN_CASE(SOFTPLUS, softplus)
      VM_CHAIN_CASE(ELU, elu)
      VM_CHAIN_CASE(SELU, selu)
      VM_CHAIN_CASE(SQRT, sqrt)
      VM_CHAIN_CASE(RSQRT, rsqrt)
      VM_CHAIN_CASE(RECIPROCAL, reciprocal)
      VM_CHAIN_CASE(SOFTSIGN, softsign)
      VM_CHAIN_CASE(SQUARE, square)
      VM_CHAIN_CASE(NEG, neg)
      VM_CHAIN_CASE(RELU, relu)
      VM_CHAIN_CASE(RELU6, relu6)
      VM_CHAIN_CASE(SIN, sin)
      VM_CHAIN_CASE(COS, cos)
      VM_CHAIN_CASE(ABS, abs)
      VM_CHAIN_CASE(ERFC, erfc)
      VM_CHAIN_CASE(SIGMOID_ABOVE_M87, sigmoid_above_m87)
      VM_CHAIN_CASE(TANH_NONNEG_SMALL, tanh_nonneg_small)
      case WEFT_CPU_VOP_COUNT:
        break;
    }
  }
}

/* m (1 to VM_WIDTH - 1) elements from i through a zero-padded vector, as VM_PART. */
VM_INLINE void vchain_part(const uint8_t *ops, int n_ops, const float *x, float *y, int64_t i,
                           int64_t m) {
  vf a[1] = {{0}};
  size_t part_bytes = ((size_t)m & (VM_WIDTH - 1)) * sizeof(float);
  __builtin_memcpy(&a[0], x + i, part_bytes);
  vchain(a, 1, ops, n_ops);
  __builtin_memcpy(y + i, &a[0], part_bytes);
}

/* y[i .. i + VM_WIDTH) = v, streamed where head >= 0. */
VM_INLINE void vchain_store(float *y, vf v, int64_t head) {
  if (head >= 0)
    vstream(y, v);
  else
    __builtin_memcpy(y, &v, sizeof v);
}

/* The loop of VM_LOOP_FORM with the chain in place of one function: the streaming form (nt)
 * takes y's unaligned head through the partial path and streams the whole vectors. */
static void vchain_loop(const uint8_t *ops, int n_ops, const float *x, float *y, int64_t n,
                           int nt) {
  const int64_t step = VM_WIDTH * VM_CHAIN_UNROLL;
  int64_t i = 0, head = nt ? vhead(y, n) : -1;
  /* Which elements share a vector can change a last bit (Sigmoid takes another formula for a
   * vector with a lane below -87), and the unfused chain groups them from x[0] in every op but
   * the streamed last one, which groups them from y's first aligned vector. Where those differ,
   * the chain does the same: the ops before the last, then the last one streamed in place. */
  if (head > 0 && n_ops > 1) {
    vchain_loop(ops, n_ops - 1, x, y, n, 0);
    vchain_loop(ops + n_ops - 1, 1, y, y, n, 1);
    return;
  }
  if (head > 0) vchain_part(ops, n_ops, x, y, 0, head);
  if (head > 0) i = head;
  for (; i + step <= n; i += step) {
    vf v[VM_CHAIN_UNROLL];
    _Pragma("GCC unroll 8")
    for (int u = 0; u < VM_CHAIN_UNROLL; u++)
      __builtin_memcpy(&v[u], x + i + u * VM_WIDTH, sizeof v[u]);
    vchain(v, VM_CHAIN_UNROLL, ops, n_ops);
    _Pragma("GCC unroll 8")
    for (int u = 0; u < VM_CHAIN_UNROLL; u++) vchain_store(y + i + u * VM_WIDTH, v[u], head);
  }
  for (; i + VM_WIDTH <= n; i += VM_WIDTH) {
    vf v[1];
    __builtin_memcpy(&v[0], x + i, sizeof v[0]);
    vchain(v, 1, ops, n_ops);
    vchain_store(y + i, v[0], head);
  }
  if (i < n) vchain_part(ops, n_ops, x, y, i, n - i);
}
static void VM_NAME(chain)(const uint8_t *ops, int n_ops, const float *x, float *y, int64_t n) {
  vchain_loop(ops, n_ops, x, y, n, 0);
}
static void VM_NAME(chain_nt)(const uint8_t *ops, int n_ops, const float *x, float *y,
                              int64_t n) {
  vchain_loop(ops, n_ops, x, y, n, 1);
}

/* Stores the first m (1 to VM_WIDTH - 1) lanes of v at p: a masked store where the level has
 * one, else lane by lane (a plain copy loop here would become a memcpy call). */
VM_INLINE void vstore_first(float *p, vf v, int m) {
#if VM_WIDTH == 16 && defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, (__mmask16)((1u << m) - 1u), (__m512)v);
#elif VM_WIDTH == 8 && defined(__AVX2__)
  vi lane = {0, 1, 2, 3, 4, 5, 6, 7};
  _mm256_maskstore_ps(p, (__m256i)(lane < m), (__m256)v);
#else
  for (int k = 0; k < VM_WIDTH - 1; k++)
    if (k < m) p[k] = v[k];
#endif
}

/* m (0 to VM_WIDTH - 1) elements from i, lane by lane through arrays padded with ones (no lane
 * of the padding reaches pow's libm path): a memcpy of a run-time length is a library call, which
 * a step of one-element ops (scalars) would pay three times per op. */
#define VM_PART2(f, xs, ys, i, m)                                                  \
  do {                                                                             \
    float ta[VM_WIDTH], tb[VM_WIDTH];                                              \
    for (int k = 0; k < VM_WIDTH; k++) {                                           \
      ta[k] = xs ? x[0] : (k < (m) ? x[(i) + k] : 1.0f);                           \
      tb[k] = ys ? y[0] : (k < (m) ? y[(i) + k] : 1.0f);                           \
    }                                                                              \
    vf a, b;                                                                       \
    __builtin_memcpy(&a, ta, sizeof a);                                            \
    __builtin_memcpy(&b, tb, sizeof b);                                            \
    vstore_first(z + (i), f(a, b), (int)(m));                                      \
  } while (0)

/* The three loops of a binary function: whole vectors (constant-size loads and stores, so no
 * memcpy call), then the tail through VM_PART2; the streaming form (nt) as VM_LOOP_FORM's. A
 * scalar operand is splat once (bit for bit: -0 stays -0). */
#define VM_BODY2(f, xs, ys, nt)                                                    \
  vf xv = xs ? vsplat_bits(x[0]) : vsplat(0.0f);                                   \
  vf yv = ys ? vsplat_bits(y[0]) : vsplat(0.0f);                                   \
  int64_t i = 0, head = nt ? vhead(z, n) : -1;                                    \
  if (head > 0) VM_PART2(f, xs, ys, 0, head);                                      \
  if (head > 0) i = head;                                                          \
  for (; i + VM_WIDTH <= n; i += VM_WIDTH) {                                       \
    vf a = xv, b = yv;                                                             \
    if (!xs) __builtin_memcpy(&a, x + i, sizeof a);                                \
    if (!ys) __builtin_memcpy(&b, y + i, sizeof b);                                \
    vf c = f(a, b);                                                                \
    if (head >= 0)                                                                 \
      vstream(z + i, c);                                                           \
    else                                                                           \
      __builtin_memcpy(z + i, &c, sizeof c);                                       \
  }                                                                                \
  if (i < n) VM_PART2(f, xs, ys, i, n - i);

#define VM_LOOP2_FORM(f, sfx, nt)                                                         \
  static void VM_NAME(f##_vv##sfx)(const float *x, const float *y, float *z, int64_t n) { \
    VM_BODY2(v##f##2, 0, 0, nt)                                                           \
  }                                                                                       \
  static void VM_NAME(f##_sv##sfx)(const float *x, const float *y, float *z, int64_t n) { \
    VM_BODY2(v##f##2, 1, 0, nt)                                                           \
  }                                                                                       \
  static void VM_NAME(f##_vs##sfx)(const float *x, const float *y, float *z, int64_t n) { \
    VM_BODY2(v##f##2, 0, 1, nt)                                                           \
  }
#define VM_LOOP2(f) VM_LOOP2_FORM(f, , 0) VM_LOOP2_FORM(f, _nt, 1)

VM_LOOP2(add)
VM_LOOP2(sub)
VM_LOOP2(mul)
VM_LOOP2(div)
VM_LOOP2(maximum)
VM_LOOP2(minimum)
VM_LOOP2(sqdiff)
VM_LOOP2(leaky)

/* Pow's loops: a scalar exponent with a short form (vpow_c2 ...) takes it; every element of a
 * call takes the same function, so the bits do not depend on the call's length or split. */
#define VM_POW_VS_CASE(value, f)                                                          \
  if (exponent == (value)) {                                                              \
    VM_BODY2(f, 0, 1, nt_)                                                                \
    return;                                                                               \
  }
#define VM_POW_FORMS(sfx, nt)                                                                 \
  static void VM_NAME(pow_vv##sfx)(const float *x, const float *y, float *z, int64_t n) {     \
    VM_BODY2(vpow2, 0, 0, nt)                                                                 \
  }                                                                                           \
  static void VM_NAME(pow_sv##sfx)(const float *x, const float *y, float *z, int64_t n) {     \
    VM_BODY2(vpow2, 1, 0, nt)                                                                 \
  }                                                                                           \
  static void VM_NAME(pow_vs##sfx)(const float *x, const float *y, float *z, int64_t n) {     \
    const int nt_ = nt;                                                                       \
    const float exponent = y[0];                                                              \
    VM_POW_VS_CASE(2.0f, vpow_c2)                                                             \
    VM_POW_VS_CASE(3.0f, vpow_c3)                                                             \
    VM_POW_VS_CASE(4.0f, vpow_c4)                                                             \
    VM_POW_VS_CASE(-1.0f, vpow_cm1)                                                           \
    VM_POW_VS_CASE(-2.0f, vpow_cm2)                                                           \
    VM_POW_VS_CASE(0.5f, vpow_chalf)                                                          \
    VM_POW_VS_CASE(-0.5f, vpow_cmhalf)                                                        \
    VM_BODY2(vpow2, 0, 1, nt_)                                                                \
  }
VM_POW_FORMS(, 0)
VM_POW_FORMS(_nt, 1)

/* ---------------------------------------------------------------------------------------------
 * float64 Exp, Sigmoid and Tanh: the LSTM and MLP graphs TensorFlow users freeze in float64 spend
 * about half their time in libm's scalar exp, tanh and expm1 (tf/dl4j/lstm_mnist).
 *
 * Exp: x = n ln2 + r with n = round(x / ln2) (the 1.5 * 2^52 shifter), r = x - n ln2 in two parts
 * (fdlibm's ln2 split, whose high part has trailing zeros: n * LN2_HI is exact), e^r by its
 * Taylor series to r^13 (|r| <= 0.347: the next term is under 5e-18 of the sum, 0.04 ulp), and
 * 2^n put into the exponent field. Lanes outside [-708, 708] (where 2^n leaves the normal
 * range) and NaN go through libm's exp, so overflow, underflow to denormals and zero, and NaN
 * are libm's. Error: Horner's roundings and the scaling, at most 1.11 ulp (0.86 with FMA) over
 * tests/test_cpu_math.c's sweeps against long double (the bound it checks: 2 ulp).
 * Sigmoid: 1 / (1 + e^-x) with that Exp, as the scalar loop writes it: 2.17 ulp (3 checked);
 * below -709.78 e^-x overflows and the result is 0, as with libm, where the exact one is a
 * denormal.
 * Tanh: |x| < 0.625 by its Taylor series to x^43 in Horner form over x^2 (the series' terms
 * shrink by (x / (pi/2))^2 <= 0.16 each: the first omitted one is under 1.2e-18 of the sum);
 * above, 1 - 2 / (e^2|x| + 1) (at most a 0.8x amplification of the quotient's error at 0.625;
 * 2|x| clamped to 44, where the double result is 1 already) with x's sign: 1.30 ulp (3
 * checked). */
/* Doubles in one register of the level (VM_DW lanes): vdn spans two, and a function passing
 * those would change the ABI (gcc's -Wpsabi). */
#define VM_DW (VM_WIDTH / 2)
typedef double vdn __attribute__((vector_size(VM_WIDTH * 4)));
typedef int64_t vl __attribute__((vector_size(VM_WIDTH * 4)));
typedef uint64_t vlu __attribute__((vector_size(VM_WIDTH * 4)));
static const double VD_EXP_TAYLOR[] = {
    1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
    1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
static const double VD_TANH_TAYLOR[] = {
    1, -0.33333333333333331, 0.13333333333333333, -0.053968253968253971,
    0.021869488536155203, -0.0088632355299021973, 0.0035921280365724811,
    -0.0014558343870513183, 0.00059002744094558595, -0.00023912911424355248,
    9.6915379569294509e-05, -3.9278323883316833e-05, 1.5918905069328964e-05,
    -6.4516892156554306e-06, 2.6147711512907546e-06, -1.0597268320104654e-06,
    4.2949110782738057e-07, -1.7406618963571648e-07, 7.0546369464009681e-08,
    -2.859136662305254e-08, 1.1587644432798853e-08, -4.6962953982309016e-09};

VM_INLINE vdn vdsplat(double c) { return (vdn){0} + c; }
/* VD_POLY in one register's doubles. */
#define VDN_POLY(out, t, c)                                                            \
  do {                                                                                 \
    const int n_ = (int)(sizeof(c) / sizeof((c)[0]));                                  \
    (out) = (vdn){0} + (c)[n_ - 1];                                                    \
    _Pragma("GCC unroll 24")                                                           \
    for (int k_ = n_ - 2; k_ >= 0; k_--) (out) = (out) * (t) + (c)[k_];                \
  } while (0)
VM_INLINE vdn vdsel(vl m, vdn a, vdn b) { return (vdn)(((vlu)m & (vlu)a) | (~(vlu)m & (vlu)b)); }

VM_INLINE vdn vexp_d(vdn x) {
  const double shifter = 6755399441055744.0; /* 1.5 * 2^52 */
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  vdn t = x * 1.44269504088896338700 + shifter;
  vdn n = t - shifter;
  vdn r = x - n * ln2_hi;
  r = r - n * ln2_lo;
  vdn p;
  VDN_POLY(p, r, VD_EXP_TAYLOR);
  /* t's low bits hold n (two's complement): its difference from the shifter's bits. */
  vlu bits = ((vlu)t - (vlu)vdsplat(shifter) + 1023u) << 52;
  vdn y = p * (vdn)bits;
  vl outside = (vl)((x > 708.0) | (x < -708.0) | (x != x));
  int64_t any = 0;
  for (int i = 0; i < VM_DW; i++) any |= outside[i];
  if (__builtin_expect(any != 0, 0)) {
    for (int i = 0; i < VM_DW; i++)
      if (outside[i]) y[i] = __builtin_exp(x[i]);
  }
  return y;
}

VM_INLINE vdn vsigmoid_d(vdn x) { return 1.0 / (1.0 + vexp_d(-x)); }

VM_INLINE vdn vtanh_d(vdn x) {
  vdn a = (vdn)((vlu)x & 0x7fffffffffffffffu);
  vdn a2 = a * a, p;
  VDN_POLY(p, a2, VD_TANH_TAYLOR);
  vdn small = a * p;
  vdn t = a + a;
  t = vdsel((vl)(t > 44.0), vdsplat(44.0), t);
  vdn big = 1.0 - 2.0 / (vexp_d(t) + 1.0);
  vdn y = vdsel((vl)(a < 0.625), small, big);
  /* x's sign back (NaN stays NaN: the large form's exp of NaN). */
  return (vdn)((vlu)y | ((vlu)x & 0x8000000000000000u));
}

#define VM_LOOP_D(f)                                                        \
  static void VM_NAME(f##_d)(const double *x, double *y, int64_t n) {       \
    int64_t i = 0;                                                          \
    for (; i + VM_DW <= n; i += VM_DW) {                              \
      vdn v;                                                                 \
      __builtin_memcpy(&v, x + i, sizeof v);                                \
      v = v##f##_d(v);                                                      \
      __builtin_memcpy(y + i, &v, sizeof v);                                \
    }                                                                       \
    if (i < n) {                                                            \
      vdn v = {0};                                                           \
      size_t part_bytes = ((size_t)(n - i) & (VM_DW - 1)) * sizeof(double); \
      __builtin_memcpy(&v, x + i, part_bytes);                              \
      v = v##f##_d(v);                                                      \
      __builtin_memcpy(y + i, &v, part_bytes);                              \
    }                                                                       \
  }
VM_LOOP_D(exp)
VM_LOOP_D(sigmoid)
VM_LOOP_D(tanh)

#define VM_FNS2(f, sfx) {VM_NAME(f##_vv##sfx), VM_NAME(f##_sv##sfx), VM_NAME(f##_vs##sfx)}
#define VM_TABLE(sfx, nt_table)                                                                 \
  {VM_NAME(exp##sfx),      VM_NAME(log##sfx),      VM_NAME(tanh##sfx),                          \
   VM_NAME(sigmoid##sfx),  VM_NAME(expm1##sfx),    VM_NAME(log1p##sfx),                         \
   VM_NAME(erf##sfx),      VM_NAME(softplus##sfx), VM_NAME(elu##sfx),                           \
   VM_NAME(selu##sfx),     VM_NAME(sqrt##sfx),     VM_NAME(rsqrt##sfx),                         \
   VM_NAME(reciprocal##sfx), VM_NAME(softsign##sfx), VM_NAME(square##sfx),                      \
   VM_NAME(neg##sfx),      VM_NAME(relu##sfx),     VM_NAME(relu6##sfx),                         \
   VM_NAME(sin##sfx),      VM_NAME(cos##sfx),      VM_NAME(abs##sfx),                           \
   VM_NAME(erfc##sfx),     VM_NAME(sigmoid_above_m87##sfx), VM_NAME(tanh_nonneg_small##sfx),    \
   VM_FNS2(add, sfx),      VM_FNS2(sub, sfx),                                                   \
   VM_FNS2(mul, sfx),      VM_FNS2(div, sfx),      VM_FNS2(maximum, sfx),                       \
   VM_FNS2(minimum, sfx),  VM_FNS2(sqdiff, sfx),   VM_FNS2(pow, sfx),                           \
   VM_FNS2(leaky, sfx),                                                                        \
   VM_NAME(exp_d),         VM_NAME(sigmoid_d),     VM_NAME(tanh_d),                             \
   VM_NAME(chain##sfx),    &nt_table}

extern const weft_cpu_vmath_t VM_CAT(VM_CAT(weft__cpu_vmath_, VM_SUFFIX), _nt);
const weft_cpu_vmath_t VM_CAT(weft__cpu_vmath_, VM_SUFFIX) =
    VM_TABLE(, VM_CAT(VM_CAT(weft__cpu_vmath_, VM_SUFFIX), _nt));
const weft_cpu_vmath_t VM_CAT(VM_CAT(weft__cpu_vmath_, VM_SUFFIX), _nt) =
    VM_TABLE(_nt, VM_CAT(VM_CAT(weft__cpu_vmath_, VM_SUFFIX), _nt));
