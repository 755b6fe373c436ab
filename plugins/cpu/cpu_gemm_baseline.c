/* cpu_gemm_baseline.c: the packed GEMM's micro-kernel (cpu_gemm.h) in plain C, for any CPU:
 * the accumulators are a local MR x NR block the compiler keeps in vector registers where it
 * can. */
#include <string.h>

#include "cpu_gemm.h"

void weft__cpu_gemm_tile_baseline(int64_t kc, const float *ap, int64_t rs, int64_t ks,
                                  const float *bp, float *c, int64_t ldc, int rows, int cols,
                                  const float *bias, int flags) {
  bool accumulate = flags & WEFT_GEMM_ACCUMULATE;
  float acc[WEFT_GEMM_MR][WEFT_GEMM_NR];
  for (int i = 0; i < WEFT_GEMM_MR; i++)
    for (int j = 0; j < WEFT_GEMM_NR; j++) acc[i][j] = 0.0f;
  for (int64_t p = 0; p < kc; p++) {
    const float *b = bp + p * WEFT_GEMM_NR;
    for (int i = 0; i < rows; i++) {
      const float a = ap[p * ks + i * rs];
      for (int j = 0; j < WEFT_GEMM_NR; j++) acc[i][j] += a * b[j];
    }
  }
  /* The start value is added last, as in the AVX-512 kernel. */
  for (int i = 0; i < rows; i++) {
    if (accumulate || bias) {
      const float *init = accumulate ? c + i * ldc : bias;
      for (int j = 0; j < cols; j++) acc[i][j] += init[j];
    }
    memcpy(c + i * ldc, acc[i], sizeof(float) * (size_t)cols);
  }
  weft__cpu_gemm_clamp(c, ldc, rows, cols, flags);
}

void weft__cpu_gemm_clamp(float *c, int64_t ldc, int rows, int cols, int flags) {
  if (!(flags & (WEFT_GEMM_RELU | WEFT_GEMM_RELU6))) return;
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < cols; j++) {
      float *v = c + i * ldc + j;
      if (*v < 0.0f) *v = 0.0f;
      if ((flags & WEFT_GEMM_RELU6) && *v > 6.0f) *v = 6.0f;
    }
}
