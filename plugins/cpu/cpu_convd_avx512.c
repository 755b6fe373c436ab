/* cpu_convd_avx512.c: the direct few-tap convolution's row kernel (cpu_convd.h) for AVX-512F.
 * plugins/cpu/meson.build compiles this file alone with -mavx512f -mfma; cpu_conv_direct.c
 * calls it only on CPUs that have them.
 *
 * A block is P output pixels by V vectors of 16 filters (P * V accumulators, V filter vectors
 * and one broadcast in the 32 zmm registers): 6 x 4 for 64 filters, so each tap's 24 FMAs load
 * 4 filter vectors (L1: 27 x 64 floats) and broadcast 6 inputs, where the packed GEMM's 8 x 32
 * tile pays 16 FMAs for 2 loads and 8 broadcasts, and im2col a copy of every window before. */
#include <immintrin.h>

#define CONVD_W 16
#define CONVD_VEC __m512
#define CONVD_ZERO _mm512_setzero_ps
#define CONVD_LOAD _mm512_loadu_ps
#define CONVD_STORE _mm512_storeu_ps
#define CONVD_SET1 _mm512_set1_ps
#define CONVD_FMA _mm512_fmadd_ps
#define CONVD_ADD _mm512_add_ps
#define CONVD_MAX _mm512_max_ps
#define CONVD_MIN _mm512_min_ps
#include "cpu_convd_impl.h"

void weft__cpu_convd_row_avx512(const weft_cpu_convd_t *d, const float *const *src, float *out) {
  int64_t xa, xb;
  convd_inside(d, &xa, &xb);
  int64_t col0 = 0;
  for (; col0 + 64 <= d->m; col0 += 64) convd_cols(6, 4, d, src, xa, xb, col0, out);
  switch ((d->m - col0) / 16) {
    case 3:
      convd_cols(8, 3, d, src, xa, xb, col0, out);
      break;
    case 2:
      convd_cols(12, 2, d, src, xa, xb, col0, out);
      break;
    case 1:
      /* One zmm of filters: 14 zmm broadcasts for 14 FMAs, and on Zen 4 a zmm broadcast takes
       * a slot of the FMA pipes; the AVX2 loop's 6 x 16 block (ymm broadcasts are loads alone)
       * ran 224x224x3 -> 16 at 99 GFLOP/s against 70. */
      weft__cpu_convd_cols_avx2(d, src, col0, col0 + 16, out);
      break;
    default:
      break;
  }
}
