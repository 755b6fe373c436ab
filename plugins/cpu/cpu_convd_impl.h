/* cpu_convd_impl.h: the direct few-tap convolution's loops (cpu_convd.h), written once over a
 * vector type: cpu_convd_avx512.c (16 floats a vector) and cpu_convd_avx2.c (8) define CONVD_VEC,
 * CONVD_W and the CONVD_* operations, include this file, and write their row function from
 * convd_cols' blocks (P pixels by V vectors, P * V + V + 1 registers at most). */
#ifndef CONVD_W
#error "define CONVD_W and the CONVD_* vector operations before including cpu_convd_impl.h"
#endif

#include "cpu_convd.h"
#include "cpu_gemm.h"

/* Relu or Relu6 as the packed GEMM's tiles clamp (NaN kept, -0 kept). */
static inline __attribute__((always_inline)) CONVD_VEC convd_clamp(CONVD_VEC v, int clamp) {
  if (clamp & (WEFT_GEMM_RELU | WEFT_GEMM_RELU6)) v = CONVD_MAX(CONVD_ZERO(), v);
  if (clamp & WEFT_GEMM_RELU6) v = CONVD_MIN(CONVD_SET1(6.0f), v);
  return v;
}

/* Bias, clamp and store of P pixels' sums (row stride m). */
static inline __attribute__((always_inline)) void convd_store(const int P, const int V,
                                                             CONVD_VEC acc[][4],
                                                             const weft_cpu_convd_t *d,
                                                             int64_t col0, float *out) {
#pragma GCC unroll 16
  for (int p = 0; p < P; p++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) {
      CONVD_VEC s = acc[p][v];
      if (d->bias) s = CONVD_ADD(s, CONVD_LOAD(d->bias + col0 + CONVD_W * v));
      CONVD_STORE(out + p * d->m + col0 + CONVD_W * v, convd_clamp(s, d->clamp));
    }
}

/* P pixels from output column ox on, all windows inside the row across: filter row i's taps
 * are the run of kw * c floats at each pixel's first input column, sw * c floats apart. */
static inline __attribute__((always_inline)) void convd_block(const int P, const int V,
                                                             const weft_cpu_convd_t *d,
                                                             const float *const *src, int64_t ox,
                                                             int64_t col0, float *out) {
  CONVD_VEC acc[16][4];
#pragma GCC unroll 16
  for (int p = 0; p < P; p++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) acc[p][v] = CONVD_ZERO();
  int64_t run = d->kw * d->c, step = d->sw * d->c, m = d->m;
  for (int64_t i = 0; i < d->kh; i++) {
    if (!src[i]) continue;
    const float *x = src[i] + (ox * d->sw - d->pl) * d->c;
    const float *f = d->f + i * run * m + col0;
    for (int64_t j = 0; j < run; j++, f += m) {
      CONVD_VEC fv[4];
#pragma GCC unroll 4
      for (int v = 0; v < V; v++) fv[v] = CONVD_LOAD(f + CONVD_W * v);
#pragma GCC unroll 16
      for (int p = 0; p < P; p++) {
        const CONVD_VEC xv = CONVD_SET1(x[p * step + j]);
#pragma GCC unroll 4
        for (int v = 0; v < V; v++) acc[p][v] = CONVD_FMA(xv, fv[v], acc[p][v]);
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
  CONVD_VEC acc[1][4];
#pragma GCC unroll 4
  for (int v = 0; v < V; v++) acc[0][v] = CONVD_ZERO();
  int64_t c = d->c, m = d->m;
  for (int64_t i = 0; i < d->kh; i++) {
    if (!src[i]) continue;
    for (int64_t q = 0; q < d->kw; q++) {
      int64_t ix = ox * d->sw - d->pl + q;
      if (ix < 0 || ix >= d->w) continue;
      const float *x = src[i] + ix * c, *f = d->f + (i * d->kw + q) * c * m + col0;
      for (int64_t ci = 0; ci < c; ci++, f += m) {
        const CONVD_VEC xv = CONVD_SET1(x[ci]);
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
          acc[0][v] = CONVD_FMA(xv, CONVD_LOAD(f + CONVD_W * v), acc[0][v]);
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

/* Output columns [*xa, *xb) whose windows lie inside the row across. */
static inline void convd_inside(const weft_cpu_convd_t *d, int64_t *xa, int64_t *xb) {
  int64_t a = (d->pl + d->sw - 1) / d->sw;
  int64_t b = d->w + d->pl - d->kw < 0 ? 0 : (d->w + d->pl - d->kw) / d->sw + 1;
  if (a > d->ow) a = d->ow;
  if (b > d->ow) b = d->ow;
  *xa = a;
  *xb = b < a ? a : b;
}
