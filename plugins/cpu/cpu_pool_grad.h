/* cpu_pool_grad.h: the float32 NHWC MaxPoolGrad / AvgPoolGrad band kernel
 * (cpu_pool_grad_impl.h), built once per instruction set level: the plugin's own level in
 * cpu_pool_grad_fast.c, which drives it and picks the level, and AVX2 / AVX-512 in
 * cpu_pool_grad_avx2.c / cpu_pool_grad_avx512.c (plugins/cpu/meson.build compiles each alone
 * with its -m flags). Plain C with no SDK types, like cpu_convd.h. */
#ifndef WEFT_CPU_POOL_GRAD_H
#define WEFT_CPU_POOL_GRAD_H

#include <stdbool.h>
#include <stdint.h>

/* One gradient: input [n, h, w, c], output [n, oh, ow, c], window kh x kw, strides, the
 * padding before (top, left); x the pool's input (MaxPoolGrad) or NULL (AvgPoolGrad). */
typedef struct weft_cpu_pool_grad {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, pt, pl;
  bool is_max;
  const float *x, *dy;
  float *dx;
} weft_cpu_pool_grad_t;

/* Rows [r0, r1) of image n's dx: zeroed, then every window that reaches into them. */
typedef void (*weft_cpu_pool_grad_band_fn)(const weft_cpu_pool_grad_t *j, int64_t n, int64_t r0,
                                           int64_t r1);
void weft__cpu_pool_grad_band_baseline(const weft_cpu_pool_grad_t *j, int64_t n, int64_t r0,
                                       int64_t r1);
void weft__cpu_pool_grad_band_avx2(const weft_cpu_pool_grad_t *j, int64_t n, int64_t r0,
                                   int64_t r1);
void weft__cpu_pool_grad_band_avx512(const weft_cpu_pool_grad_t *j, int64_t n, int64_t r0,
                                     int64_t r1);

/* The same for MaxPool3DGrad / AvgPool3DGrad over NDHWC: input [n, in[0..2], c], output
 * [n, out[0..2], c], window k, strides s, padding before pb; sums in the double acc (dx's shape),
 * rounded into dx once, as cpu_conv_nd.c's generic kernel does. A band is input depth planes
 * [p0, p1) of image n. */
typedef struct weft_cpu_pool3_grad {
  int64_t n, c, in[3], out[3], k[3], s[3], pb[3];
  bool is_max;
  const float *x, *dy;
  double *acc;
  float *dx;
} weft_cpu_pool3_grad_t;

typedef void (*weft_cpu_pool3_grad_band_fn)(const weft_cpu_pool3_grad_t *j, int64_t n, int64_t p0,
                                            int64_t p1);
void weft__cpu_pool3_grad_band_baseline(const weft_cpu_pool3_grad_t *j, int64_t n, int64_t p0,
                                        int64_t p1);
void weft__cpu_pool3_grad_band_avx2(const weft_cpu_pool3_grad_t *j, int64_t n, int64_t p0,
                                    int64_t p1);
void weft__cpu_pool3_grad_band_avx512(const weft_cpu_pool3_grad_t *j, int64_t n, int64_t p0,
                                      int64_t p1);

#endif /* WEFT_CPU_POOL_GRAD_H */
