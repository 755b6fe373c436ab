/* cpu_conv_nchw.c: a direct float32 NCHW Conv2D for few input taps (channels x kernel) or few
 * filters, where the transposes and the small-K GEMM of the NHWC path (cpu_nchw.c,
 * cpu_conv_fast.c) cost more than the arithmetic (the corpus's channels_first conv nets: 2
 * channels, 2x2 or 1x2 windows, 3 filters; docs/performance.md).
 *
 * Each image is first copied into a zero-padded scratch, split by stride phase: plane (a, b) of
 * channel c holds padded rows a, a + sh, ... and columns b, b + sw, .... Then every tap (c, i, j)
 * of every output pixel reads its phase plane at a constant offset from the pixel, and a run of
 * output pixels, laid out with the phase plane's row length, is one contiguous run of each
 * tap's plane: the inner loop is a stride-1 multiply-add over vectors of outputs, with a few
 * filters' sums in registers over all taps, so each input vector is loaded once per tap for
 * all of them. The columns past the output's width are computed and dropped. The bias (or the
 * batch norm's scale and offset) and the activation of _FusedConv2D finish each run while it is
 * in cache.
 *
 * The same loop serves tiny NHWC convolutions (few taps and at most 8 filters: cpu_conv_fast.c):
 * the phase planes gather each channel from the interleaved input, and the finished runs are
 * spread out to the interleaved output. */
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* Filters summed together in registers (their sums over one run of outputs). */
#define NCHW_MB 4
/* Outputs per run, per filter: the run's sums (NCHW_MB x 512 floats, 8 KiB) stay in L1. */
#define NCHW_RUN 512
/* Output pixels per vector step: two vectors of 16 floats. */
#define NCHW_STEP 32

typedef float nchw_v16 __attribute__((vector_size(64)));
typedef float nchw_v16u __attribute__((vector_size(64), aligned(4), may_alias));

typedef struct nchw_conv {
  const weft_cpu_conv2d_t *g;
  const weft_cpu_epilogue_t *ep;
  bool nhwc;             /* x and y are NHWC (the planes and the loop are the same) */
  int64_t hq, wq;        /* a phase plane's rows and columns */
  int64_t phases;        /* sh * sw */
  int64_t image;         /* floats of one image's phase planes: c * phases * hq * wq */
  int64_t taps;          /* c * kh * kw */
  int64_t rows_per_run;  /* output rows per run (0: the rows are cut into column runs) */
  int64_t runs;          /* runs per output plane */
  int64_t ipr;           /* images per run: several where an image's outputs are a few */
  int64_t mblocks;       /* filter blocks of NCHW_MB */
  const float *x;
  float *planes;         /* n images of phase planes, then zero slack */
  const int64_t *off;    /* [taps]: each tap's offset in an image's planes */
  const float *w;        /* [mblocks][taps][NCHW_MB]: the filter, zero past m */
  float *y;
} nchw_conv_t;

/* The most taps the direct loop takes with more than NCHW_MB filters. Measured against the
 * transposed GEMM (docs/performance.md): 2-4x faster at 18-72 taps, even for a 64 -> 64
 * pointwise convolution (64 taps), slower or lost in the noise at 144-288 taps. */
#define NCHW_DIRECT_MAX_TAPS 72

/* Whether the direct loop is chosen: few taps (the GEMM's K) or few filters (its N), where the
 * GEMM runs far below its peak; small strides (the phase planes of a large stride are mostly
 * zeros) and a padded image at most a few times the input. */
bool weft__cpu_conv2d_nchw_direct(const weft_cpu_conv2d_t *g) {
  int64_t taps = g->c * g->kh * g->kw;
  if (taps == 0 || g->sh > 4 || g->sw > 4 || (taps > NCHW_DIRECT_MAX_TAPS && g->m > NCHW_MB))
    return false;
  int64_t hp = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
  int64_t wp = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
  return hp <= 2 * g->h + 64 && wp <= 2 * g->w + 64;
}

/* dst[i] = src[i * stride] for i < n: one phase of a strided row. A constant stride (2-4, the
 * direct loop's) lets the compiler vectorise the gather with shuffles. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void copy_strided(float *restrict dst, const float *restrict src, int64_t n,
                         int64_t stride) {
  switch (stride) {
    case 2: for (int64_t i = 0; i < n; i++) dst[i] = src[2 * i]; return;
    case 3: for (int64_t i = 0; i < n; i++) dst[i] = src[3 * i]; return;
    case 4: for (int64_t i = 0; i < n; i++) dst[i] = src[4 * i]; return;
    default: for (int64_t i = 0; i < n; i++) dst[i] = src[i * stride]; return;
  }
}

/* Phase planes of images [b, e): zeros first, one call per image and channel (a row of the
 * corpus's 5-wide images is shorter than the calls it would take to pad it alone), then each
 * input row's columns into its phase rows. */
static void pad_images(void *arg, int64_t b, int64_t e) {
  const nchw_conv_t *j = arg;
  const weft_cpu_conv2d_t *g = j->g;
  int64_t plane = j->hq * j->wq;
  for (int64_t t = b; t < e; t++) { /* t: one (image, channel) */
    /* The channel's rows rs apart, its columns cs apart. */
    const float *src = j->x + t * g->h * g->w;
    int64_t rs = g->w, cs = 1;
    if (j->nhwc) {
      src = j->x + t / g->c * g->h * g->w * g->c + t % g->c;
      rs = g->w * g->c;
      cs = g->c;
    }
    float *dst = j->planes + t * j->phases * plane;
    memset(dst, 0, sizeof(float) * (size_t)(j->phases * plane));
    for (int64_t bb = 0; bb < g->sw; bb++) {
      /* Phase column p reads input column p * sw + first: inside for p in [p0, p1). */
      int64_t first = bb - g->pl;
      int64_t p0 = first < 0 ? (-first + g->sw - 1) / g->sw : 0;
      int64_t p1 = (g->w - first + g->sw - 1) / g->sw;
      if (p1 > j->wq) p1 = j->wq;
      if (p1 <= p0) continue;
      for (int64_t a = 0; a < g->sh; a++)
        for (int64_t q = 0; q < j->hq; q++) {
          int64_t iy = q * g->sh + a - g->pt;
          if (iy < 0 || iy >= g->h) continue;
          float *row = dst + (a * g->sw + bb) * plane + q * j->wq;
          const float *in = src + iy * rs + (p0 * g->sw + first) * cs;
          int64_t step = g->sw * cs;
          if (step == 1) {
            memcpy(row + p0, in, sizeof(float) * (size_t)(p1 - p0));
          } else if (p1 - p0 <= 16) { /* shorter than the call */
            for (int64_t p = p0; p < p1; p++) row[p] = in[(p - p0) * step];
          } else {
            copy_strided(row + p0, in, p1 - p0, step);
          }
        }
    }
  }
}

/* The filter loops unrolled, so that the sums live in registers, not in a stack array. */
#define NCHW_UNROLL _Pragma("GCC unroll 4")

/* Sums over every tap for the outputs [0, len) (rounded up to NCHW_STEP) of one run of NB
 * filters: src is the image's planes at the run's first output, sums[f * NCHW_RUN + i] start at
 * init[f]. */
#define NCHW_SUMS(NB)                                                                           \
  static void sums_##NB(const float *src, const int64_t *off, const float *w, int64_t taps,    \
                        int64_t len, const float *init, float *sums) {                          \
    for (int64_t i = 0; i < len; i += NCHW_STEP) {                                              \
      nchw_v16 s0[NB], s1[NB];                                                                  \
      NCHW_UNROLL                                                                               \
      for (int f = 0; f < NB; f++) s0[f] = s1[f] = (nchw_v16){0} + init[f];                    \
      for (int64_t t = 0; t < taps; t++) {                                                      \
        const float *p = src + off[t] + i;                                                      \
        nchw_v16 x0 = *(const nchw_v16u *)p, x1 = *(const nchw_v16u *)(p + 16);                 \
        NCHW_UNROLL                                                                             \
        for (int f = 0; f < NB; f++) {                                                          \
          s0[f] += x0 * w[t * NCHW_MB + f];                                                     \
          s1[f] += x1 * w[t * NCHW_MB + f];                                                     \
        }                                                                                       \
      }                                                                                         \
      NCHW_UNROLL                                                                               \
      for (int f = 0; f < NB; f++) {                                                            \
        *(nchw_v16u *)(sums + f * NCHW_RUN + i) = s0[f];                                        \
        *(nchw_v16u *)(sums + f * NCHW_RUN + i + 16) = s1[f];                                   \
      }                                                                                         \
    }                                                                                           \
  }

/* The plugin is built for any x86-64 (SSE2); these loops are also built for AVX2 and AVX-512
 * and chosen at load time, as depthwise_row_taps is. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NCHW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NCHW_CLONES
#endif
NCHW_CLONES NCHW_SUMS(1)
NCHW_CLONES NCHW_SUMS(2)
NCHW_CLONES NCHW_SUMS(3)
NCHW_CLONES NCHW_SUMS(4)

/* The outputs [x0, x0 + cols) of rows [y0, y0 + rows) of one output plane (filter f): copied
 * from the run's sums (row stride `stride`), then scaled and offset (a batch norm) and
 * activated. An NHWC plane's pixels are m apart: the sums are finished where they are, in the
 * run's contiguous rows, and then spread out. */
static void finish_run(const nchw_conv_t *j, float *sums, int64_t stride, float *plane,
                       int64_t f, int64_t y0, int64_t rows, int64_t x0, int64_t cols) {
  const weft_cpu_conv2d_t *g = j->g;
  const weft_cpu_epilogue_t *ep = j->ep;
  if (j->nhwc) {
    for (int64_t r = 0; r < rows; r++) {
      float *s = sums + r * stride, *o = plane + ((y0 + r) * g->ow + x0) * g->m;
      if (ep && ep->scale) {
        float a = ep->scale[f], b = ep->bias ? ep->bias[f] : 0.0f;
        for (int64_t i = 0; i < cols; i++) s[i] = s[i] * a + b;
      }
      if (ep && ep->act) ep->act(s, s, cols, ep->act_param);
      for (int64_t i = 0; i < cols; i++) o[i * g->m] = s[i];
    }
    return;
  }
  float *out = plane + y0 * g->ow + x0;
  for (int64_t r = 0; r < rows; r++) {
    float *o = out + r * g->ow;
    const float *s = sums + r * stride;
    if (ep && ep->scale) {
      float a = ep->scale[f], b = ep->bias ? ep->bias[f] : 0.0f;
      for (int64_t i = 0; i < cols; i++) o[i] = s[i] * a + b;
    } else {
      memcpy(o, s, sizeof(float) * (size_t)cols);
    }
  }
  if (!ep || !ep->act) return;
  if (cols == g->ow) {
    ep->act(out, out, rows * cols, ep->act_param); /* the rows are contiguous */
  } else {
    for (int64_t r = 0; r < rows; r++)
      ep->act(out + r * g->ow, out + r * g->ow, cols, ep->act_param);
  }
}

/* Tasks [b, e): each one run of one filter block of one image. */
static void conv_runs(void *arg, int64_t b, int64_t e) {
  const nchw_conv_t *j = arg;
  const weft_cpu_conv2d_t *g = j->g;
  const weft_cpu_epilogue_t *ep = j->ep;
  float sums[NCHW_MB * NCHW_RUN];
  for (int64_t t = b; t < e; t++) {
    int64_t run = t % j->runs, mb = t / j->runs % j->mblocks;
    int64_t n = t / j->runs / j->mblocks * j->ipr, imgs = g->n - n < j->ipr ? g->n - n : j->ipr;
    int64_t m0 = mb * NCHW_MB, nb = g->m - m0 < NCHW_MB ? g->m - m0 : NCHW_MB;
    int64_t y0, rows, x0, cols, start, len;
    if (j->rows_per_run > 0) { /* whole rows, wq apart */
      y0 = run * j->rows_per_run;
      rows = g->oh - y0 < j->rows_per_run ? g->oh - y0 : j->rows_per_run;
      x0 = 0;
      cols = g->ow;
      start = y0 * j->wq;
      /* Several images: image k's outputs are image k's planes' offset further on. */
      len = (imgs - 1) * j->image + (rows - 1) * j->wq + g->ow;
    } else { /* a row longer than a run: NCHW_RUN columns at a time */
      int64_t per_row = (g->ow + NCHW_RUN - 1) / NCHW_RUN;
      y0 = run / per_row;
      rows = 1;
      x0 = run % per_row * NCHW_RUN;
      cols = g->ow - x0 < NCHW_RUN ? g->ow - x0 : NCHW_RUN;
      start = y0 * j->wq + x0;
      len = cols;
    }
    /* The bias goes first, as the GEMM path's prefill does, unless a scale comes before it. */
    float init[NCHW_MB] = {0};
    for (int64_t f = 0; f < nb; f++)
      init[f] = ep && ep->bias && !ep->scale ? ep->bias[m0 + f] : 0.0f;
    const float *src = j->planes + n * j->image + start;
    const float *w = j->w + mb * j->taps * NCHW_MB;
    switch (nb) {
      case 1: sums_1(src, j->off, w, j->taps, len, init, sums); break;
      case 2: sums_2(src, j->off, w, j->taps, len, init, sums); break;
      case 3: sums_3(src, j->off, w, j->taps, len, init, sums); break;
      default: sums_4(src, j->off, w, j->taps, len, init, sums); break;
    }
    for (int64_t k = 0; k < imgs; k++)
      for (int64_t f = 0; f < nb; f++) {
        float *plane = j->nhwc ? j->y + (n + k) * g->oh * g->ow * g->m + m0 + f
                               : j->y + ((n + k) * g->m + m0 + f) * g->oh * g->ow;
        finish_run(j, sums + f * NCHW_RUN + k * j->image, j->wq, plane, m0 + f, y0, rows, x0,
                   cols);
      }
  }
}

static weft_status_t *conv_direct(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                  const float *x, const float *f, float *y,
                                  const weft_cpu_epilogue_t *ep, bool nhwc) {
  if (g->n == 0 || g->m == 0 || g->oh == 0 || g->ow == 0) return NULL;
  nchw_conv_t j = {.g = g, .ep = ep, .nhwc = nhwc, .x = x, .y = y};
  /* The padded extent the windows read, cut into stride phases. */
  int64_t hp = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1;
  int64_t wp = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
  j.hq = (hp + g->sh - 1) / g->sh;
  j.wq = (wp + g->sw - 1) / g->sw;
  j.phases = g->sh * g->sw;
  j.image = g->c * j.phases * j.hq * j.wq;
  j.taps = g->c * g->kh * g->kw;
  j.mblocks = (g->m + NCHW_MB - 1) / NCHW_MB;
  if (j.wq <= NCHW_RUN) {
    j.rows_per_run = NCHW_RUN / j.wq;
    j.runs = (g->oh + j.rows_per_run - 1) / j.rows_per_run;
  } else {
    j.rows_per_run = 0;
    j.runs = g->oh * ((g->ow + NCHW_RUN - 1) / NCHW_RUN);
  }
  /* Images whose outputs fill a fraction of a vector step (a 1-D convolution's few columns)
   * share a run when that takes fewer steps per image: the planes of the other channels
   * between them are computed and dropped. */
  j.ipr = 1;
  int64_t one = (g->oh - 1) * j.wq + g->ow;
  if (j.rows_per_run >= g->oh && one + j.image <= NCHW_RUN && g->n > 1) {
    int64_t ipr = 1 + (NCHW_RUN - one) / j.image;
    if (ipr > g->n) ipr = g->n;
    int64_t steps = ((ipr - 1) * j.image + one + NCHW_STEP - 1) / NCHW_STEP;
    if (steps < ipr * ((one + NCHW_STEP - 1) / NCHW_STEP)) j.ipr = ipr;
  }
  /* A run's last vector step reads up to NCHW_STEP past its end, and the columns past the
   * output's width read on into the next row or plane: zero slack after the last image. */
  int64_t slack = j.wq + 2 * NCHW_STEP;
  int64_t nplanes = g->n * j.image + slack;
  int64_t nw = j.mblocks * j.taps * NCHW_MB;
  /* One scratch (a step of a tiny model is a few microseconds): offsets, filter, planes. */
  int64_t *off = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(
      ctx, sizeof(int64_t) * (size_t)j.taps + sizeof(float) * (size_t)(nw + nplanes),
      (void **)&off));
  float *w = (float *)(off + j.taps), *planes = w + nw;
  memset(planes + g->n * j.image, 0, sizeof(float) * (size_t)slack);
  /* Taps in the filter's order (row, column, channel), so that the sum's order does not depend
   * on the layout of the planes. */
  for (int64_t i = 0; i < g->kh; i++)
    for (int64_t q = 0; q < g->kw; q++)
      for (int64_t c = 0; c < g->c; c++) {
        int64_t t = (i * g->kw + q) * g->c + c;
        int64_t ry = i * g->dh, rx = q * g->dw;
        int64_t phase = (ry % g->sh) * g->sw + rx % g->sw;
        off[t] = ((c * j.phases + phase) * j.hq + ry / g->sh) * j.wq + rx / g->sw;
        for (int64_t mb = 0; mb < j.mblocks; mb++)
          for (int64_t k = 0; k < NCHW_MB; k++) {
            int64_t o = mb * NCHW_MB + k;
            w[(mb * j.taps + t) * NCHW_MB + k] = o < g->m ? f[t * g->m + o] : 0.0f;
          }
      }
  j.planes = planes;
  j.off = off;
  j.w = w;
  weft__cpu_parallel(ctx, g->n * g->c, j.phases * j.hq * j.wq + 1, pad_images, &j);
  /* Rough cycles per run: a vector multiply-add per 16 outputs, tap and filter, and the call. */
  int64_t len = j.rows_per_run > 0 ? j.rows_per_run * j.wq : NCHW_RUN;
  if (len > g->oh * j.wq) len = g->oh * j.wq;
  if (j.ipr > 1) len = NCHW_RUN;
  int64_t per_run = len * j.taps * (g->m < NCHW_MB ? g->m : NCHW_MB) / 16 + 50;
  int64_t groups = (g->n + j.ipr - 1) / j.ipr;
  weft__cpu_parallel(ctx, groups * j.mblocks * j.runs, per_run, conv_runs, &j);
  return NULL;
}

weft_status_t *weft__cpu_conv2d_nchw_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                         const float *x, const float *f, float *y,
                                         const weft_cpu_epilogue_t *ep) {
  return conv_direct(ctx, g, x, f, y, ep, false);
}

weft_status_t *weft__cpu_conv2d_nhwc_direct_f32(weft_kernel_ctx_t *ctx,
                                                const weft_cpu_conv2d_t *g, const float *x,
                                                const float *f, float *y,
                                                const weft_cpu_epilogue_t *ep) {
  return conv_direct(ctx, g, x, f, y, ep, true);
}
