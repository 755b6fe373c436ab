/* cpu_conv_transpose_nchw.c: a direct float32 NCHW Conv2DBackpropInput (the transposed
 * convolution of the corpus's channels_first Conv2DTranspose layers) for few taps, as forward
 * convolutions of out_backprop, one per stride phase of dx: the pixels (py + sh * t, px + sw * u)
 * of dx take only the filter taps (i, j) with i = (py + pt) mod sh and j = (px + pl) mod sw
 * modulo the strides, each from dy at a constant offset, so a phase is a stride-1 convolution of
 * dy with those taps flipped in space and the channels swapped (no zeros spread between dy's
 * pixels to multiply). The phases run as one convolution, each a few of its filters, on the
 * direct NCHW loop of cpu_conv_nchw.c: without the two transposes, the small-K GEMM and col2im
 * of the NHWC path (docs/performance.md). */
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* One axis of one phase ph: the dx pixels it holds (*outs), its first filter tap (*r), its taps
 * (*taps), and the forward convolution's padding (*pad, negative where the first tap reads
 * past dy's start) and dilation (*dil). size: dx's; k, s, d, p: the gradient's window, stride,
 * dilation and padding before. */
static void phase_axis(int64_t size, int64_t k, int64_t s, int64_t d, int64_t p, int64_t ph,
                       int64_t *outs, int64_t *r, int64_t *taps, int64_t *pad, int64_t *dil) {
  *outs = size > ph ? (size - ph + s - 1) / s : 0;
  *r = (ph + p) % s;
  *taps = *r < k ? (k - *r + s - 1) / s : 0;
  /* Tap r + s * v reads dy at t + (ph + p - r) / s - v; with d > 1 only s == 1 comes here. */
  *pad = s == 1 ? (k - 1) * d - p : *taps - 1 - (ph + p) / s;
  *dil = s == 1 ? d : 1;
}

/* Phase (py, px)'s forward geometry, its first taps *ry, *rx. */
static weft_cpu_conv2d_t phase_of(const weft_cpu_conv2d_t *g, int64_t py, int64_t px,
                                  int64_t *ry, int64_t *rx) {
  weft_cpu_conv2d_t e = {.n = g->n, .h = g->oh, .w = g->ow, .c = g->m, .m = g->c,
                         .sh = 1, .sw = 1};
  phase_axis(g->h, g->kh, g->sh, g->dh, g->pt, py, &e.oh, ry, &e.kh, &e.pt, &e.dh);
  phase_axis(g->w, g->kw, g->sw, g->dw, g->pl, px, &e.ow, rx, &e.kw, &e.pl, &e.dw);
  return e;
}

/* All phases as one forward convolution, each phase c filters of it (filter cc * phases + ph):
 * one window covering every phase's taps (a phase's taps at its place in it, zeros around),
 * as many outputs as phase (0, 0) has (the most; other phases' extra ones are dropped), so that
 * dy is padded once and each of its vectors loaded once for all phases. */
static weft_cpu_conv2d_t all_phases(const weft_cpu_conv2d_t *g) {
  int64_t ry, rx;
  weft_cpu_conv2d_t e = phase_of(g, 0, 0, &ry, &rx);
  int64_t top = INT64_MIN, left = INT64_MIN, bottom = INT64_MIN, right = INT64_MIN;
  for (int64_t py = 0; py < g->sh; py++)
    for (int64_t px = 0; px < g->sw; px++) {
      weft_cpu_conv2d_t p = phase_of(g, py, px, &ry, &rx);
      if (p.kh == 0 || p.kw == 0) continue;
      /* The window's reach before and after the output pixel, in taps. */
      if (p.pt > top) top = p.pt;
      if (p.pl > left) left = p.pl;
      if (p.kh - 1 - p.pt > bottom) bottom = p.kh - 1 - p.pt;
      if (p.kw - 1 - p.pl > right) right = p.kw - 1 - p.pl;
    }
  e.pt = top;
  e.pl = left;
  e.kh = top == INT64_MIN ? 0 : top + bottom + 1;
  e.kw = left == INT64_MIN ? 0 : left + right + 1;
  e.m = g->c * g->sh * g->sw;
  return e;
}

bool weft__cpu_conv2d_nchw_bp_input_direct(const weft_cpu_conv2d_t *g) {
  /* A stride and a dilation on one axis make phases of uneven taps: the GEMM takes those. */
  if ((g->sh > 1 && g->dh > 1) || (g->sw > 1 && g->dw > 1) || g->sh > 4 || g->sw > 4 ||
      g->oh == 0 || g->ow == 0 || g->pt < 0 || g->pl < 0 || g->kh == 0 || g->kw == 0)
    return false;
  weft_cpu_conv2d_t e = all_phases(g);
  return e.kh > 0 && e.kw > 0 && weft__cpu_conv2d_nchw_direct(&e);
}

weft_status_t *weft__cpu_conv2d_nchw_bp_input_f32(weft_kernel_ctx_t *ctx,
                                                  const weft_cpu_conv2d_t *g, const float *f,
                                                  const float *dy, float *dx) {
  int64_t nx = g->n * g->c * g->h * g->w;
  if (nx == 0) return NULL;
  if (g->m == 0) {
    memset(dx, 0, sizeof(float) * (size_t)nx);
    return NULL;
  }
  int64_t phases = g->sh * g->sw;
  weft_cpu_conv2d_t e = all_phases(g);
  /* Scratch: the filter [kh, kw, m, c * phases] and (several phases) their outputs. */
  int64_t nf = e.kh * e.kw * e.c * e.m;
  int64_t ny = phases > 1 ? e.n * e.m * e.oh * e.ow : 0;
  float *w = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(float) * (size_t)(nf + ny), (void **)&w));
  memset(w, 0, sizeof(float) * (size_t)nf);
  for (int64_t py = 0; py < g->sh; py++)
    for (int64_t px = 0; px < g->sw; px++) {
      int64_t ry, rx, ph = py * g->sw + px;
      weft_cpu_conv2d_t p = phase_of(g, py, px, &ry, &rx);
      /* The phase's tap (v, u), at (v + e.pt - p.pt, u + e.pl - p.pl) of the window, is the
       * gradient's (ry + sh (kh' - 1 - v), rx + sw (kw' - 1 - u)), its channels swapped (with
       * stride 1 and dilation d only the order of the taps changes). */
      for (int64_t v = 0; v < p.kh; v++)
        for (int64_t u = 0; u < p.kw; u++) {
          int64_t i = ry + g->sh * (p.kh - 1 - v), j = rx + g->sw * (p.kw - 1 - u);
          const float *src = f + (i * g->kw + j) * g->c * g->m;
          float *dst = w + ((v + e.pt - p.pt) * e.kw + u + e.pl - p.pl) * e.c * e.m;
          for (int64_t c = 0; c < g->c; c++)
            for (int64_t m = 0; m < g->m; m++) dst[m * e.m + c * phases + ph] = src[c * g->m + m];
        }
    }
  if (phases == 1) return weft__cpu_conv2d_nchw_f32(ctx, &e, dy, w, dx, NULL);
  float *y = w + nf;
  WEFT_RETURN_IF_ERROR(weft__cpu_conv2d_nchw_f32(ctx, &e, dy, w, y, NULL));
  /* Each phase's pixels into their places in dx: every pixel of dx is in one phase. */
  for (int64_t q = 0; q < g->n * g->c; q++)
    for (int64_t py = 0; py < g->sh; py++)
      for (int64_t px = 0; px < g->sw; px++) {
        const float *in = y + (q * phases + py * g->sw + px) * e.oh * e.ow;
        int64_t rows = (g->h - py + g->sh - 1) / g->sh, cols = (g->w - px + g->sw - 1) / g->sw;
        for (int64_t t = 0; t < rows; t++) {
          float *out = dx + (q * g->h + py + t * g->sh) * g->w + px;
          for (int64_t u = 0; u < cols; u++) out[u * g->sw] = in[t * e.ow + u];
        }
      }
  return NULL;
}
