/* cpu_convd_avx2.c: the direct few-tap convolution's row kernel (cpu_convd.h) for AVX2 and FMA.
 * plugins/cpu/meson.build compiles this file alone with -mavx2 -mfma; cpu_conv_direct.c calls
 * it only on CPUs that have them.
 *
 * 16 ymm registers: blocks of 6 pixels by 2 vectors of 8 filters (12 accumulators, 2 filter
 * vectors, one broadcast), each tap's 12 FMAs for 2 loads and 6 broadcasts, 16 filters at a
 * time (the filter count is a multiple of 16). */
#include <immintrin.h>

#define CONVD_W 8
#define CONVD_VEC __m256
#define CONVD_ZERO _mm256_setzero_ps
#define CONVD_LOAD _mm256_loadu_ps
#define CONVD_STORE _mm256_storeu_ps
#define CONVD_SET1 _mm256_set1_ps
#define CONVD_FMA _mm256_fmadd_ps
#define CONVD_ADD _mm256_add_ps
#define CONVD_MAX _mm256_max_ps
#define CONVD_MIN _mm256_min_ps
#include "cpu_convd_impl.h"

void weft__cpu_convd_cols_avx2(const weft_cpu_convd_t *d, const float *const *src, int64_t c0,
                               int64_t c1, float *out) {
  int64_t xa, xb;
  convd_inside(d, &xa, &xb);
  for (int64_t col0 = c0; col0 + 16 <= c1; col0 += 16) convd_cols(6, 2, d, src, xa, xb, col0, out);
}

void weft__cpu_convd_row_avx2(const weft_cpu_convd_t *d, const float *const *src, float *out) {
  weft__cpu_convd_cols_avx2(d, src, 0, d->m, out);
}
