/* cpu_gemm_avx512.c: the packed GEMM's micro-kernel (cpu_gemm.h) for AVX-512F: MR = 8 rows by
 * two vectors of 16 columns, 16 accumulators in zmm registers; each step of the depth loads
 * the panel's two vectors once and broadcasts eight values of A. plugins/cpu/meson.build
 * compiles this file alone with -mavx512f -mfma; cpu_gemm.c calls it only on CPUs that have
 * them. */
#include <immintrin.h>

#include "cpu_gemm.h"

/* Relu or Relu6 of v as the unary kernels compute them (x < 0 ? 0 : x; NaN kept): MAXPS and
 * MINPS return their second operand when either is NaN, and -0 (not below 0) stays -0. */
static inline __attribute__((always_inline)) __m512 clamped(__m512 v, int clamp) {
  if (clamp & (WEFT_GEMM_RELU | WEFT_GEMM_RELU6)) v = _mm512_max_ps(_mm512_setzero_ps(), v);
  if (clamp & WEFT_GEMM_RELU6) v = _mm512_min_ps(_mm512_set1_ps(6.0f), v);
  return v;
}

/* R rows (a constant after inlining, so the accumulator arrays live in registers). */
static inline __attribute__((always_inline)) void tile_rows(const int R, int64_t kc,
                                                            const float *ap, int64_t rs, int64_t ks,
                                                            const float *bp, float *c, int64_t ldc,
                                                            __mmask16 m0, __mmask16 m1,
                                                            const float *bias, bool accumulate,
                                                            int clamp) {
  __m512 c0[WEFT_GEMM_MR], c1[WEFT_GEMM_MR];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) {
    c0[i] = _mm512_setzero_ps();
    c1[i] = _mm512_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    const __m512 b0 = _mm512_load_ps(bp + p * WEFT_GEMM_NR);
    const __m512 b1 = _mm512_load_ps(bp + p * WEFT_GEMM_NR + 16);
#pragma GCC unroll 8
    for (int i = 0; i < R; i++) {
      const __m512 a = _mm512_set1_ps(ap[p * ks + i * rs]);
      c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
    }
  }
  /* The start value is added last, as OpenBLAS's beta = 1 does: a bias added here gives the
   * bits of the sum plus the bias added after (the unfused BiasAdd). */
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) {
    if (accumulate || bias) {
      const float *init = accumulate ? c + i * ldc : bias;
      c0[i] = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, init), c0[i]);
      c1[i] = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, init + 16), c1[i]);
    }
    c0[i] = clamped(c0[i], clamp);
    c1[i] = clamped(c1[i], clamp);
    _mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
    _mm512_mask_storeu_ps(c + i * ldc + 16, m1, c1[i]);
  }
}

/* At most 16 columns (a narrow output layer: 10 classes): one vector per row, so the second
 * vector's FMAs on zero columns are not paid. The panel keeps its 32-float rows (the same
 * packing), of which only the first half is read. Per column the sums run in the same order as
 * tile_rows', so the bits are the same as the wide tile's. 256x512x10, thread CPU time, min of
 * 200: 0.037 ms against the wide tile's 0.053 and cblas_sgemm's 0.053-0.060. */
static inline __attribute__((always_inline)) void tile_rows_narrow(const int R, int64_t kc,
                                                                   const float *ap, int64_t rs,
                                                                   int64_t ks, const float *bp,
                                                                   float *c, int64_t ldc,
                                                                   __mmask16 m0, const float *bias,
                                                                   bool accumulate, int clamp) {
  __m512 c0[WEFT_GEMM_MR];
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) c0[i] = _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    const __m512 b0 = _mm512_load_ps(bp + p * WEFT_GEMM_NR);
#pragma GCC unroll 8
    for (int i = 0; i < R; i++)
      c0[i] = _mm512_fmadd_ps(_mm512_set1_ps(ap[p * ks + i * rs]), b0, c0[i]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; i++) {
    if (accumulate || bias)
      c0[i] = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, accumulate ? c + i * ldc : bias), c0[i]);
    c0[i] = clamped(c0[i], clamp);
    _mm512_mask_storeu_ps(c + i * ldc, m0, c0[i]);
  }
}

void weft__cpu_gemm_tile_avx512(int64_t kc, const float *ap, int64_t rs, int64_t ks,
                                const float *bp, float *c, int64_t ldc, int rows, int cols,
                                const float *bias, int flags) {
  bool accumulate = flags & WEFT_GEMM_ACCUMULATE;
  int clamp = flags & (WEFT_GEMM_RELU | WEFT_GEMM_RELU6);
  __mmask16 m0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
  __mmask16 m1 = cols >= 32  ? (__mmask16)0xFFFF
                 : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1)
                             : (__mmask16)0;
  if (cols <= 16) {
    switch (rows) {
      case 8:
        tile_rows_narrow(8, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      case 7:
        tile_rows_narrow(7, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      case 6:
        tile_rows_narrow(6, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      case 5:
        tile_rows_narrow(5, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      case 4:
        tile_rows_narrow(4, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      case 3:
        tile_rows_narrow(3, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      case 2:
        tile_rows_narrow(2, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
      default:
        tile_rows_narrow(1, kc, ap, rs, ks, bp, c, ldc, m0, bias, accumulate, clamp);
        return;
    }
  }
  switch (rows) {
    case 8:
      tile_rows(8, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    case 7:
      tile_rows(7, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    case 6:
      tile_rows(6, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    case 5:
      tile_rows(5, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    case 4:
      tile_rows(4, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    case 3:
      tile_rows(3, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    case 2:
      tile_rows(2, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
    default:
      tile_rows(1, kc, ap, rs, ks, bp, c, ldc, m0, m1, bias, accumulate, clamp);
      break;
  }
}
