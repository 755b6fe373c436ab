/* cpu_pool_fast.c: float32 NHWC MaxPool and AvgPool without the generic path's per-element
 * dtype switch, double conversion and window clipping: each output pixel's window is clipped
 * once and its channels run as contiguous float loops. Semantics are cpu_conv.c's k_pool: the
 * max lets the first NaN win, the average divides by the in-bounds count (TensorFlow's SAME),
 * an empty window gives -inf (max) or 0 (average). An NCHW pool comes here as n * c images of
 * one channel, whose strided rows have a loop of their own. */
#include <math.h>

#include "cpu_internal.h"

typedef struct pool_f32_job {
  const weft_cpu_conv2d_t *g;
  const float *x;
  float *y;
  bool is_max;
} pool_f32_job_t;

static int64_t clip(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* dst[i] = max(dst[i], src[i]) with the first NaN winning, or dst[i] += src[i], for i < m. */
static void accumulate(bool is_max, float *restrict dst, const float *restrict src, int64_t m) {
  if (is_max) {
    for (int64_t i = 0; i < m; i++) {
      float a = dst[i], v = src[i];
      dst[i] = (v > a || isnan(v)) && !isnan(a) ? v : a;
    }
  } else {
    for (int64_t i = 0; i < m; i++) dst[i] += src[i];
  }
}

/* accumulate() of src[i * stride]: a plane's (one channel's) strided window column. A constant
 * stride of 2 lets the compiler vectorise the gather. */
static void accumulate_strided(bool is_max, float *restrict dst, const float *restrict src,
                               int64_t m, int64_t stride) {
  if (stride == 1) {
    accumulate(is_max, dst, src, m);
  } else if (stride == 2 && is_max) {
    for (int64_t i = 0; i < m; i++) {
      float a = dst[i], v = src[2 * i];
      dst[i] = (v > a || isnan(v)) && !isnan(a) ? v : a;
    }
  } else if (stride == 2) {
    for (int64_t i = 0; i < m; i++) dst[i] += src[2 * i];
  } else if (is_max) {
    for (int64_t i = 0; i < m; i++) {
      float a = dst[i], v = src[i * stride];
      dst[i] = (v > a || isnan(v)) && !isnan(a) ? v : a;
    }
  } else {
    for (int64_t i = 0; i < m; i++) dst[i] += src[i * stride];
  }
}

/* The first NaN of channel ch's window, in the order the generic kernel reads it, else m. */
static float first_nan_or(const pool_f32_job_t *j, int64_t n, int64_t y0, int64_t y1, int64_t x0,
                          int64_t x1, int64_t ch, float m) {
  const weft_cpu_conv2d_t *g = j->g;
  for (int64_t yy = y0; yy < y1; yy++)
    for (int64_t xx = x0; xx < x1; xx++) {
      float v = j->x[((n * g->h + yy) * g->w + xx) * g->c + ch];
      if (isnan(v)) return v;
    }
  return m;
}

/* Max with the first NaN winning: the generic kernel's fold step. */
static inline float max_step(float a, float v) { return (v > a || isnan(v)) && !isnan(a) ? v : a; }

typedef float pool_v16 __attribute__((vector_size(64)));
typedef float pool_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t pool_v16i __attribute__((vector_size(64)));

/* n output elements out[e] of windows that lie wholly inside the input: the fold over rows
 * rows[0..nrows) (each already at the first output element's first window column) and kw
 * columns px floats apart of rows[y][e + kx * px], as the generic kernel orders it, then times
 * scale (average). 16 elements at a time in registers and one store, where a pass per window
 * column loads and stores the output kw * nrows times. The max takes a plain v > m select and
 * notes whether any NaN (or infinity: v - v) went by; such a block is folded again exactly. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void pool_span(bool is_max, float *out, const float *const *rows, int64_t nrows,
                      int64_t kw, int64_t px, int64_t n, float scale) {
  int64_t e0 = 0;
  while (e0 + 16 <= n) {
    /* A chunk of up to 16 blocks, checked for NaN once. */
    int64_t blocks = (n - e0) / 16, end = e0 + 16 * (blocks < 16 ? blocks : 16);
    pool_v16 any = {0};
    for (int64_t b = e0; b < end; b += 16) {
      pool_v16 acc = {0};
      if (is_max) {
        acc -= INFINITY;
        for (int64_t y = 0; y < nrows; y++)
          for (int64_t kx = 0; kx < kw; kx++) {
            pool_v16 v = *(const pool_v16u *)(rows[y] + b + kx * px);
            pool_v16i gt = v > acc;
            acc = (pool_v16)(((pool_v16i)v & gt) | ((pool_v16i)acc & ~gt));
            any += v - v;
          }
      } else {
        for (int64_t y = 0; y < nrows; y++)
          for (int64_t kx = 0; kx < kw; kx++) acc += *(const pool_v16u *)(rows[y] + b + kx * px);
        acc *= scale;
      }
      *(pool_v16u *)(out + b) = acc;
    }
    if (is_max) {
      pool_v16i odd = any != any;
      int32_t seen = 0;
      for (int l = 0; l < 16; l++) seen |= odd[l];
      for (int64_t e = e0; seen && e < end; e++) {
        float m = -INFINITY;
        for (int64_t y = 0; y < nrows; y++)
          for (int64_t kx = 0; kx < kw; kx++) m = max_step(m, rows[y][e + kx * px]);
        out[e] = m;
      }
    }
    e0 = end;
  }
  for (; e0 < n; e0++) {
    float a = is_max ? -INFINITY : 0.0f;
    for (int64_t y = 0; y < nrows; y++)
      for (int64_t kx = 0; kx < kw; kx++) {
        float v = rows[y][e0 + kx * px];
        a = is_max ? max_step(a, v) : a + v;
      }
    out[e0] = is_max ? a : a * scale;
  }
}

/* The most window rows pool_span takes (its row pointers live on the stack). */
#define POOL_SPAN_MAX_KH 16

/* Output row r of a window stride of 1 along x (or of one channel, any stride: an NCHW plane):
 * output pixels ox and ox + 1 read input pixels sw apart. With stride 1 the pixels whose window
 * lies inside the row are one span of ow * c contiguous elements (pool_span) and the few at
 * the edges are folded one by one. Otherwise (a strided plane) each window column kx is an
 * elementwise max (or sum) of a slice of the input row into the output row, over every output
 * pixel whose column is in the input. Per output element the window pixels are visited in the
 * generic kernel's order (yy, then kx), so the first NaN still wins and sums are the same. */
static void pool_f32_row_stride1(const pool_f32_job_t *j, int64_t r, int64_t n, int64_t y0,
                                 int64_t y1) {
  const weft_cpu_conv2d_t *g = j->g;
  int64_t c = g->c, len = g->ow * c, sw = g->sw;
  float *restrict out = j->y + r * len;
  /* Inside: ox - pl >= 0 and ox - pl + kw <= w (stride 1). Rows of fewer than one block
   * inside keep the passes below, cheaper there (64x2x5 channels-first: 2.7 against 4.3 us). */
  int64_t span_lo = clip(g->pl, g->ow), span_hi = clip(g->w - g->kw + g->pl + 1, g->ow);
  if (span_hi < span_lo) span_hi = span_lo;
  if (sw == 1 && y1 - y0 <= POOL_SPAN_MAX_KH && (span_hi - span_lo) * c >= 16) {
    const float *rows[POOL_SPAN_MAX_KH];
    for (int64_t yy = y0; yy < y1; yy++)
      rows[yy - y0] = j->x + ((n * g->h + yy) * g->w + span_lo - g->pl) * c;
    int64_t count = (y1 - y0) * g->kw;
    pool_span(j->is_max, out + span_lo * c, rows, y1 - y0, g->kw, c, (span_hi - span_lo) * c,
              count > 1 ? 1.0f / (float)count : 1.0f);
    for (int64_t ox = 0; ox < g->ow; ox++) {
      if (ox == span_lo) ox = span_hi;
      if (ox >= g->ow) break;
      int64_t x0 = clip(ox - g->pl, g->w), x1 = clip(ox - g->pl + g->kw, g->w);
      int64_t cnt = (y1 - y0) * (x1 - x0);
      for (int64_t ch = 0; ch < c; ch++) {
        float a = j->is_max ? -INFINITY : 0.0f;
        for (int64_t yy = y0; yy < y1; yy++)
          for (int64_t xx = x0; xx < x1; xx++) {
            float v = j->x[((n * g->h + yy) * g->w + xx) * c + ch];
            a = j->is_max ? max_step(a, v) : a + v;
          }
        out[ox * c + ch] = !j->is_max && cnt > 1 ? a * (1.0f / (float)cnt) : a;
      }
    }
    return;
  }
  for (int64_t i = 0; i < len; i++) out[i] = j->is_max ? -INFINITY : 0.0f;
  for (int64_t yy = y0; yy < y1; yy++)
    for (int64_t kx = 0; kx < g->kw; kx++) {
      /* Output pixels ox whose input column ox * sw - pl + kx is in [0, w). */
      int64_t first = g->pl - kx, end = g->w + g->pl - kx;
      int64_t lo = clip(first > 0 ? (first + sw - 1) / sw : 0, g->ow);
      int64_t hi = clip(end > 0 ? (end + sw - 1) / sw : 0, g->ow);
      if (lo >= hi) continue;
      const float *restrict in = j->x + ((n * g->h + yy) * g->w + lo * sw - g->pl + kx) * c;
      float *restrict dst = out + lo * c;
      if (sw == 1) accumulate(j->is_max, dst, in, (hi - lo) * c);
      else accumulate_strided(j->is_max, dst, in, hi - lo, sw); /* c == 1 */
    }
  if (j->is_max) return;
  /* The windows inside the row all hold kw columns: one scale for that run of outputs. */
  int64_t in_lo = clip((g->pl + sw - 1) / sw, g->ow);
  int64_t in_hi = g->w - g->kw + g->pl >= 0 ? clip((g->w - g->kw + g->pl) / sw + 1, g->ow) : 0;
  if (in_hi < in_lo) in_hi = in_lo;
  for (int64_t ox = 0; ox < g->ow; ox++) {
    if (ox == in_lo && in_hi > in_lo) {
      int64_t count = (y1 - y0) * g->kw;
      float scale = count > 1 ? 1.0f / (float)count : 1.0f;
      for (int64_t i = in_lo * c; i < in_hi * c; i++) out[i] *= scale;
      ox = in_hi - 1;
      continue;
    }
    int64_t x0 = clip(ox * sw - g->pl, g->w), x1 = clip(ox * sw - g->pl + g->kw, g->w);
    int64_t count = (y1 - y0) * (x1 - x0);
    if (count <= 1) continue;
    float scale = 1.0f / (float)count;
    for (int64_t ch = 0; ch < c; ch++) out[ox * c + ch] *= scale;
  }
}

/* Output rows [b, e) of (n, oy). */
static void pool_f32_range(void *arg, int64_t b, int64_t e) {
  const pool_f32_job_t *j = arg;
  const weft_cpu_conv2d_t *g = j->g;
  int64_t c = g->c;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->oh, oy = r % g->oh;
    int64_t y0 = clip(oy * g->sh - g->pt, g->h), y1 = clip(oy * g->sh - g->pt + g->kh, g->h);
    if (g->sw == 1 || g->c == 1) {
      pool_f32_row_stride1(j, r, n, y0, y1);
      continue;
    }
    for (int64_t ox = 0; ox < g->ow; ox++) {
      int64_t x0 = clip(ox * g->sw - g->pl, g->w), x1 = clip(ox * g->sw - g->pl + g->kw, g->w);
      float *restrict out = j->y + (r * g->ow + ox) * c;
      int64_t count = (y1 - y0) * (x1 - x0);
      float scale = !j->is_max && count > 1 ? 1.0f / (float)count : 1.0f;
      if (c < 8) {
        /* Few channels: each one's window in a register, not a store and a load per pixel. */
        for (int64_t ch = 0; ch < c; ch++) {
          const float *px = j->x + n * g->h * g->w * c + ch;
          float a;
          if (j->is_max) {
            /* A select (maxss), not a branch that random data mispredicts half the time; the
             * sum of v - v is NaN when a NaN (or an infinity: rare either way) was there. */
            float m = -INFINITY, any = 0.0f;
            for (int64_t yy = y0; yy < y1; yy++)
              for (int64_t xx = x0; xx < x1; xx++) {
                float v = px[(yy * g->w + xx) * c];
                m = v > m ? v : m;
                any += v - v;
              }
            a = isnan(any) ? first_nan_or(j, n, y0, y1, x0, x1, ch, m) : m;
          } else {
            a = 0.0f;
            for (int64_t yy = y0; yy < y1; yy++)
              for (int64_t xx = x0; xx < x1; xx++) a += px[(yy * g->w + xx) * c];
          }
          out[ch] = a * scale;
        }
        continue;
      }
      for (int64_t ch = 0; ch < c; ch++) out[ch] = j->is_max ? -INFINITY : 0.0f;
      for (int64_t yy = y0; yy < y1; yy++)
        for (int64_t xx = x0; xx < x1; xx++) {
          accumulate(j->is_max, out, j->x + ((n * g->h + yy) * g->w + xx) * c, c);
        }
      if (scale != 1.0f)
        for (int64_t ch = 0; ch < c; ch++) out[ch] *= scale;
    }
  }
}

void weft__cpu_pool2d_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g, bool is_max,
                          const float *x, float *y) {
  pool_f32_job_t j = {g, x, y, is_max};
  weft__cpu_parallel(ctx, g->n * g->oh, g->ow * g->c * g->kh * g->kw + 1, pool_f32_range, &j);
}
