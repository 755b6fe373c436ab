/* cpu_convd.h: a direct float32 NHWC convolution for few taps (input channels x window: the
 * first layer of an image net, 3 channels x 3x3 = 27) and filters in multiples of 16, where the
 * GEMM's depth is too shallow to pay for its im2col copies and its per-tile loads and stores
 * (docs/performance.md, "a direct kernel for few input channels"). The filter [kh, kw, c, m] is
 * already what the loop wants, tap by tap a row of m floats, so nothing is packed.
 *
 * One output row at a time: register blocks of a few output pixels by up to four vectors of 16
 * filters; each tap broadcasts one input value per pixel and multiply-adds the tap's filter
 * vectors. The pixels whose window hangs over the left or right padding go one by one with
 * bounds checks. Plain C with no SDK types, like cpu_gemm.h, so that the tests can call the
 * kernel directly; cpu_conv_direct.c drives it. */
#ifndef WEFT_CPU_CONVD_H
#define WEFT_CPU_CONVD_H

#include <stdint.h>

/* One convolution's geometry across (dilation 1 across) and its filter. */
typedef struct weft_cpu_convd {
  int64_t kh, kw, c; /* window and input channels */
  int64_t w, sw, pl; /* input width, stride and left padding across */
  int64_t ow, m;     /* output width and filters (m a multiple of 16) */
  const float *f;    /* [kh, kw, c, m] */
  const float *bias; /* NULL, or m values added to the finished sums */
  int clamp;         /* 0, or WEFT_GEMM_RELU / WEFT_GEMM_RELU6 (cpu_gemm.h) after the bias */
} weft_cpu_convd_t;

/* Output row out [ow, m] from the kh input rows src[i] (each the NHWC row [w, c] that filter row
 * i reads, or NULL where it lies in the padding): sum over the taps, then the bias, then the
 * clamp, one store. */
void weft__cpu_convd_row_avx512(const weft_cpu_convd_t *d, const float *const *src, float *out);
void weft__cpu_convd_row_avx2(const weft_cpu_convd_t *d, const float *const *src, float *out);
/* The AVX2 loop over the row's filters [c0, c1) alone (multiples of 16). */
void weft__cpu_convd_cols_avx2(const weft_cpu_convd_t *d, const float *const *src, int64_t c0,
                               int64_t c1, float *out);

#endif /* WEFT_CPU_CONVD_H */
