/* cpu_gemm_avx2.c: the packed GEMM's micro-kernel (cpu_gemm.h) for AVX2 + FMA: the MR x NR
 * tile in four passes of 4 rows by two vectors of 8 columns (8 accumulators in ymm registers,
 * within the 16 the level has). plugins/cpu/meson.build compiles this file alone with -mavx2
 * -mfma; cpu_gemm.c calls it only on CPUs that have them. */
#include <immintrin.h>

#include "cpu_gemm.h"

static __m256i lane_mask(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

/* Rows [i0, i0 + R) of the tile, columns [j0, j0 + 16). */
static inline __attribute__((always_inline)) void quarter(const int R, int64_t kc, const float *ap,
                                                          int64_t rs, int64_t ks, const float *bp,
                                                          float *c, int64_t ldc, int i0, int j0,
                                                          int cols, const float *bias,
                                                          bool accumulate) {
  const __m256i k0 = lane_mask(cols - j0), k1 = lane_mask(cols - j0 - 8);
  __m256 c0[4], c1[4];
#pragma GCC unroll 4
  for (int i = 0; i < R; i++) {
    c0[i] = _mm256_setzero_ps();
    c1[i] = _mm256_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; p++) {
    const __m256 b0 = _mm256_load_ps(bp + p * WEFT_GEMM_NR + j0);
    const __m256 b1 = _mm256_load_ps(bp + p * WEFT_GEMM_NR + j0 + 8);
#pragma GCC unroll 4
    for (int i = 0; i < R; i++) {
      const __m256 a = _mm256_broadcast_ss(ap + p * ks + (i0 + i) * rs);
      c0[i] = _mm256_fmadd_ps(a, b0, c0[i]);
      c1[i] = _mm256_fmadd_ps(a, b1, c1[i]);
    }
  }
  /* The start value is added last, as in the AVX-512 kernel. */
#pragma GCC unroll 4
  for (int i = 0; i < R; i++) {
    if (accumulate || bias) {
      const float *init = accumulate ? c + (i0 + i) * ldc + j0 : bias + j0;
      c0[i] = _mm256_add_ps(_mm256_maskload_ps(init, k0), c0[i]);
      c1[i] = _mm256_add_ps(_mm256_maskload_ps(init + 8, k1), c1[i]);
    }
    _mm256_maskstore_ps(c + (i0 + i) * ldc + j0, k0, c0[i]);
    _mm256_maskstore_ps(c + (i0 + i) * ldc + j0 + 8, k1, c1[i]);
  }
}

static void rows_of(int r, int64_t kc, const float *ap, int64_t rs, int64_t ks, const float *bp,
                    float *c, int64_t ldc, int i0, int j0, int cols, const float *bias,
                    bool accumulate) {
  switch (r) {
    case 4:
      quarter(4, kc, ap, rs, ks, bp, c, ldc, i0, j0, cols, bias, accumulate);
      break;
    case 3:
      quarter(3, kc, ap, rs, ks, bp, c, ldc, i0, j0, cols, bias, accumulate);
      break;
    case 2:
      quarter(2, kc, ap, rs, ks, bp, c, ldc, i0, j0, cols, bias, accumulate);
      break;
    default:
      quarter(1, kc, ap, rs, ks, bp, c, ldc, i0, j0, cols, bias, accumulate);
      break;
  }
}

void weft__cpu_gemm_tile_avx2(int64_t kc, const float *ap, int64_t rs, int64_t ks, const float *bp,
                              float *c, int64_t ldc, int rows, int cols, const float *bias,
                              int flags) {
  bool accumulate = flags & WEFT_GEMM_ACCUMULATE;
  for (int i0 = 0; i0 < rows; i0 += 4) {
    int r = rows - i0 < 4 ? rows - i0 : 4;
    for (int j0 = 0; j0 < cols; j0 += 16)
      rows_of(r, kc, ap, rs, ks, bp, c, ldc, i0, j0, cols, bias, accumulate);
  }
  weft__cpu_gemm_clamp(c, ldc, rows, cols, flags);
}
