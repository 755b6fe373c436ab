/* cpu_conv_transpose_nchw.c: a direct float32 NCHW Conv2DBackpropInput (the transposed
 * convolution of the corpus's channels_first Conv2DTranspose layers) for few taps, as the
 * forward convolution it is: out_backprop, spread by the stride (zeros between its pixels),
 * convolved with the filter flipped in space and its channels swapped, padded so that the
 * windows' reach matches the forward convolution's. The direct NCHW loop of cpu_conv_nchw.c
 * then computes it without the two transposes and the small-K GEMM and col2im of the NHWC
 * path (docs/performance.md). */
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* The spread image costs sh * sw times the work of out_backprop's pixels: beyond this, the
 * GEMM, which skips the zeros, is the better path. */
#define BP_MAX_SPREAD 4

/* The forward geometry of the input gradient of g (whose h, w are dx's, oh, ow dy's). */
static weft_cpu_conv2d_t forward_of(const weft_cpu_conv2d_t *g) {
  weft_cpu_conv2d_t e = {
      .n = g->n,
      .h = g->oh > 0 ? (g->oh - 1) * g->sh + 1 : 0,
      .w = g->ow > 0 ? (g->ow - 1) * g->sw + 1 : 0,
      .c = g->m,
      .oh = g->h,
      .ow = g->w,
      .m = g->c,
      .kh = g->kh,
      .kw = g->kw,
      .sh = 1,
      .sw = 1,
      .dh = g->dh,
      .dw = g->dw,
      .pt = (g->kh - 1) * g->dh - g->pt,
      .pl = (g->kw - 1) * g->dw - g->pl,
  };
  return e;
}

bool weft__cpu_conv2d_nchw_bp_input_direct(const weft_cpu_conv2d_t *g) {
  if (g->sh * g->sw > BP_MAX_SPREAD || g->oh == 0 || g->ow == 0) return false;
  weft_cpu_conv2d_t e = forward_of(g);
  /* A padding past the window's reach (explicit paddings) would be a negative one here. */
  return e.pt >= 0 && e.pl >= 0 && weft__cpu_conv2d_nchw_direct(&e);
}

weft_status_t *weft__cpu_conv2d_nchw_bp_input_f32(weft_kernel_ctx_t *ctx,
                                                  const weft_cpu_conv2d_t *g, const float *f,
                                                  const float *dy, float *dx) {
  weft_cpu_conv2d_t e = forward_of(g);
  if (g->n == 0 || g->c == 0 || g->h == 0 || g->w == 0) return NULL;
  if (g->m == 0 || g->oh == 0 || g->ow == 0 || g->kh == 0 || g->kw == 0) {
    memset(dx, 0, sizeof(float) * (size_t)(g->n * g->c * g->h * g->w));
    return NULL;
  }
  int64_t taps = g->kh * g->kw * g->c * g->m;
  bool spread = g->sh > 1 || g->sw > 1;
  int64_t nspread = spread ? e.n * e.c * e.h * e.w : 0;
  float *w = NULL;
  WEFT_RETURN_IF_ERROR(
      H->kernel_scratch(ctx, sizeof(float) * (size_t)(taps + nspread), (void **)&w));
  /* The forward filter [kh, kw, m, c] tap (i, j) is the gradient's (kh-1-i, kw-1-j). */
  for (int64_t i = 0; i < g->kh; i++)
    for (int64_t j = 0; j < g->kw; j++) {
      const float *src = f + ((g->kh - 1 - i) * g->kw + (g->kw - 1 - j)) * g->c * g->m;
      float *dst = w + (i * g->kw + j) * g->m * g->c;
      for (int64_t c = 0; c < g->c; c++)
        for (int64_t m = 0; m < g->m; m++) dst[m * g->c + c] = src[c * g->m + m];
    }
  const float *x = dy;
  if (spread) {
    float *s = w + taps;
    memset(s, 0, sizeof(float) * (size_t)nspread);
    for (int64_t p = 0; p < g->n * g->m; p++)
      for (int64_t y = 0; y < g->oh; y++) {
        const float *in = dy + (p * g->oh + y) * g->ow;
        float *out = s + (p * e.h + y * g->sh) * e.w;
        for (int64_t q = 0; q < g->ow; q++) out[q * g->sw] = in[q];
      }
    x = s;
  }
  return weft__cpu_conv2d_nchw_f32(ctx, &e, x, w, dx, NULL);
}
