/* cpu_convd_avx512.c: the direct few-tap convolution's row kernel (cpu_convd.h) for AVX-512F.
 * plugins/cpu/meson.build compiles this file alone with -mavx512f -mfma; cpu_conv_direct.c
 * calls it only on CPUs that have them.
 *
 * A block is P output pixels by V vectors of 16 filters (P * V accumulators, V filter vectors
 * and one broadcast in the 32 zmm registers): 6 x 4 for 64 filters, so each tap's 24 FMAs load
 * 4 filter vectors (L1: 27 x 64 floats) and broadcast 6 inputs, where the packed GEMM's 8 x 32
 * tile pays 16 FMAs for 2 loads and 8 broadcasts, and im2col a copy of every window before. */
#include <immintrin.h>

#include "cpu_convd.h"
#include "cpu_gemm.h"

/* Relu or Relu6 as cpu_gemm_avx512.c's tile clamps (NaN kept, -0 kept). */
static inline __attribute__((always_inline)) __m512 convd_clamp(__m512 v, int clamp) {
  if (clamp & (WEFT_GEMM_RELU | WEFT_GEMM_RELU6)) v = _mm512_max_ps(_mm512_setzero_ps(), v);
  if (clamp & WEFT_GEMM_RELU6) v = _mm512_min_ps(_mm512_set1_ps(6.0f), v);
  return v;
}

/* Bias, clamp and store of P pixels' sums (row stride m). */
static inline __attribute__((always_inline)) void convd_store(const int P, const int V,
                                                             __m512 acc[][4],
                                                             const weft_cpu_convd_t *d,
                                                             int64_t col0, float *out) {
#pragma GCC unroll 16
  for (int p = 0; p < P; p++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) {
      __m512 s = acc[p][v];
      if (d->bias) s = _mm512_add_ps(s, _mm512_loadu_ps(d->bias + col0 + 16 * v));
      _mm512_storeu_ps(out + p * d->m + col0 + 16 * v, convd_clamp(s, d->clamp));
    }
}

/* P pixels from output column ox on, all windows inside the row across: filter row i's taps
 * are the run of kw * c floats at each pixel's first input column, sw * c floats apart. */
static inline __attribute__((always_inline)) void convd_block(const int P, const int V,
                                                             const weft_cpu_convd_t *d,
                                                             const float *const *src, int64_t ox,
                                                             int64_t col0, float *out) {
  __m512 acc[16][4];
#pragma GCC unroll 16
  for (int p = 0; p < P; p++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) acc[p][v] = _mm512_setzero_ps();
  int64_t run = d->kw * d->c, step = d->sw * d->c, m = d->m;
  for (int64_t i = 0; i < d->kh; i++) {
    if (!src[i]) continue;
    const float *x = src[i] + (ox * d->sw - d->pl) * d->c;
    const float *f = d->f + i * run * m + col0;
    for (int64_t j = 0; j < run; j++, f += m) {
      __m512 fv[4];
#pragma GCC unroll 4
      for (int v = 0; v < V; v++) fv[v] = _mm512_loadu_ps(f + 16 * v);
#pragma GCC unroll 16
      for (int p = 0; p < P; p++) {
        const __m512 xv = _mm512_set1_ps(x[p * step + j]);
#pragma GCC unroll 4
        for (int v = 0; v < V; v++) acc[p][v] = _mm512_fmadd_ps(xv, fv[v], acc[p][v]);
      }
    }
  }
  convd_store(P, V, acc, d, col0, out + ox * m);
}

/* One pixel whose window may hang over the padding: the taps outside are left out. */
static inline __attribute__((always_inline)) void convd_edge(const int V,
                                                            const weft_cpu_convd_t *d,
                                                            const float *const *src, int64_t ox,
                                                            int64_t col0, float *out) {
  __m512 acc[1][4];
#pragma GCC unroll 4
  for (int v = 0; v < V; v++) acc[0][v] = _mm512_setzero_ps();
  int64_t c = d->c, m = d->m;
  for (int64_t i = 0; i < d->kh; i++) {
    if (!src[i]) continue;
    for (int64_t q = 0; q < d->kw; q++) {
      int64_t ix = ox * d->sw - d->pl + q;
      if (ix < 0 || ix >= d->w) continue;
      const float *x = src[i] + ix * c, *f = d->f + (i * d->kw + q) * c * m + col0;
      for (int64_t ci = 0; ci < c; ci++, f += m) {
        const __m512 xv = _mm512_set1_ps(x[ci]);
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
          acc[0][v] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(f + 16 * v), acc[0][v]);
      }
    }
  }
  convd_store(1, V, acc, d, col0, out + ox * m);
}

/* The row's columns col0 .. col0 + 16 V: edge pixels, blocks of P inside, the inside pixels
 * left over in blocks of P / 2 and P / 4 (one pixel alone is a chain of dependent FMAs: 14
 * leftover pixels of a 16-filter row took a quarter of its time), the rest one by one. */
static inline __attribute__((always_inline)) void convd_cols(const int P, const int V,
                                                            const weft_cpu_convd_t *d,
                                                            const float *const *src, int64_t xa,
                                                            int64_t xb, int64_t col0, float *out) {
  int64_t ox = 0;
  for (; ox < xa; ox++) convd_edge(V, d, src, ox, col0, out);
  for (; ox + P <= xb; ox += P) convd_block(P, V, d, src, ox, col0, out);
  if (P / 2 > 1 && ox + P / 2 <= xb) {
    convd_block(P / 2, V, d, src, ox, col0, out);
    ox += P / 2;
  }
  if (P / 4 > 1 && ox + P / 4 <= xb) {
    convd_block(P / 4, V, d, src, ox, col0, out);
    ox += P / 4;
  }
  for (; ox < d->ow; ox++) convd_edge(V, d, src, ox, col0, out);
}

void weft__cpu_convd_row_avx512(const weft_cpu_convd_t *d, const float *const *src, float *out) {
  /* Output columns [xa, xb) whose windows lie inside the row across. */
  int64_t xa = (d->pl + d->sw - 1) / d->sw;
  int64_t xb = d->w + d->pl - d->kw < 0 ? 0 : (d->w + d->pl - d->kw) / d->sw + 1;
  if (xa > d->ow) xa = d->ow;
  if (xb > d->ow) xb = d->ow;
  if (xb < xa) xb = xa;
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
      convd_cols(14, 1, d, src, xa, xb, col0, out);
      break;
    default:
      break;
  }
}
