/* cpu_pool3d_fast.c: float32 MaxPool3D and AvgPool3D forward, NDHWC and NCDHW, in place of
 * cpu_conv_nd.c's generic pool3d_range (a dtype switch, a double conversion and a layout index
 * per element, the window clipped per output element). Both layouts run one row kernel: an
 * output row (fixed image / channel, depth and height) of out[2] windows by `lanes` contiguous
 * floats (the channels for NDHWC, 1 for NCDHW). The depth x height clipping is done once per
 * row; the width clipping once per (input row, window column): for window column cc the outputs
 * whose column ow * s + cc - pb lies in the input form one interval, so each (input row, cc)
 * is a single loop over that interval's ow x lanes floats (one contiguous run for stride 1).
 *
 * The results are the generic kernel's bit for bit:
 * - each output still takes its window's elements in depth, row, column order (input rows in
 *   depth-then-row order outside, window columns inside), skipping the same out-of-bounds ones;
 * - the average sums in double from +0.0 and divides by the in-bounds count in double, then
 *   rounds to float, as the generic kernel does;
 * - the max keeps the first of equal maxima and lets the first NaN win and stay
 *   ((v > acc || isnan(v)) && !isnan(acc)); comparing floats is comparing their doubles, and the
 *   generic kernel's float -> double -> float round trip only quiets a signalling NaN, which the
 *   store here does too; an empty window gives -inf (max) and 0 (average) in both.
 * WEFT_CPU_POOL3D_FAST=0 keeps the generic kernel (to compare with). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* Floats (max) or doubles (average) of one chunk's accumulators, on the stack. */
#define P3_CHUNK 512

bool weft__cpu_pool3d_f32_enabled(void) {
  static int on = -1;
  int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("WEFT_CPU_POOL3D_FAST");
    v = e && strcmp(e, "0") == 0 ? 0 : 1;
    __atomic_store_n(&on, v, __ATOMIC_RELAXED);
  }
  return v != 0;
}

/* a[i] = the max of a[i] and p[i], the generic kernel's rule: the later value only when it is
 * greater, or NaN while a[i] is not. */
static inline void max_run(float *restrict a, const float *restrict p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float v = p[i], c = a[i];
    a[i] = (v > c) | ((v != v) & (c == c)) ? v : c;
  }
}

static inline void max_run_strided(float *restrict a, const float *restrict p, int64_t n,
                                   int64_t stride) {
  for (int64_t i = 0; i < n; i++) {
    float v = p[i * stride], c = a[i];
    a[i] = (v > c) | ((v != v) & (c == c)) ? v : c;
  }
}

static inline void sum_run(double *restrict a, const float *restrict p, int64_t n) {
  for (int64_t i = 0; i < n; i++) a[i] += (double)p[i];
}

static inline void sum_run_strided(double *restrict a, const float *restrict p, int64_t n,
                                   int64_t stride) {
  for (int64_t i = 0; i < n; i++) a[i] += (double)p[i * stride];
}

/* The float the generic kernel stores for max value v: v, a signalling NaN quieted. */
static inline float quiet(float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) b |= 0x00400000u;
  memcpy(&v, &b, 4);
  return v;
}

/* The outputs ow whose window column cc is in [0, w): ow * s + cc - pb in [0, w), within
 * [o0, o1); returns false when none. */
static inline bool col_interval(int64_t w, int64_t s, int64_t pb, int64_t cc, int64_t o0,
                                int64_t o1, int64_t *lo, int64_t *hi) {
  int64_t d = pb - cc; /* ow * s >= d, ow * s <= w - 1 + d */
  int64_t a = d <= 0 ? 0 : (d + s - 1) / s;
  if (w - 1 + d < 0) return false;
  int64_t b = (w - 1 + d) / s + 1;
  if (a < o0) a = o0;
  if (b > o1) b = o1;
  *lo = a;
  *hi = b;
  return a < b;
}

typedef struct p3_job {
  const weft_cpu_pool3_t *p;
  int64_t lanes;        /* contiguous floats per pixel: c (NDHWC) or 1 (NCDHW) */
  int64_t vin, vout;    /* floats per volume unit (an image NDHWC, an image's channel NCDHW) */
} p3_job_t;

/* One output row yrow of volume xv from the input rows of the clipped depth [dl, dh) x height
 * [hl, hh), in depth-then-row order. */
static void p3_row(const p3_job_t *j, const float *xv, float *yrow, int64_t dl, int64_t dh,
                   int64_t hl, int64_t hh) {
  const weft_cpu_pool3_t *p = j->p;
  int64_t cnt_dh = (dh > dl ? dh - dl : 0) * (hh > hl ? hh - hl : 0);
  int64_t L = j->lanes, W = p->in[2], OW = p->out[2], kw = p->k[2], sw = p->s[2], pbw = p->pb[2];
  int64_t cb = L < P3_CHUNK ? L : P3_CHUNK;
  int64_t owb = P3_CHUNK / cb;
  for (int64_t c0 = 0; c0 < L; c0 += cb) {
    int64_t cw = L - c0 < cb ? L - c0 : cb;
    bool flat = sw == 1 && cw == L;
    for (int64_t o0 = 0; o0 < OW; o0 += owb) {
      int64_t o1 = o0 + owb < OW ? o0 + owb : OW, m = (o1 - o0) * cw;
      if (p->is_max) {
        float acc[P3_CHUNK];
        for (int64_t i = 0; i < m; i++) acc[i] = -INFINITY;
        for (int64_t ra = dl; ra < dh; ra++) {
          for (int64_t rb = hl; rb < hh; rb++) {
            const float *row = xv + (ra * p->in[1] + rb) * W * L + c0;
            for (int64_t cc = 0; cc < kw; cc++) {
              int64_t lo, hi;
              if (!col_interval(W, sw, pbw, cc, o0, o1, &lo, &hi)) continue;
              const float *src = row + (lo * sw + cc - pbw) * L;
              float *a = acc + (lo - o0) * cw;
              if (flat)
                max_run(a, src, (hi - lo) * L);
              else if (cw == 1)
                max_run_strided(a, src, hi - lo, sw * L);
              else
                for (int64_t ow = lo; ow < hi; ow++, src += sw * L, a += cw) max_run(a, src, cw);
            }
          }
        }
        for (int64_t ow = o0; ow < o1; ow++) {
          float *y = yrow + ow * L + c0;
          const float *a = acc + (ow - o0) * cw;
          for (int64_t c = 0; c < cw; c++) y[c] = quiet(a[c]);
        }
      } else {
        double acc[P3_CHUNK];
        for (int64_t i = 0; i < m; i++) acc[i] = 0.0;
        for (int64_t ra = dl; ra < dh; ra++) {
          for (int64_t rb = hl; rb < hh; rb++) {
            const float *row = xv + (ra * p->in[1] + rb) * W * L + c0;
            for (int64_t cc = 0; cc < kw; cc++) {
              int64_t lo, hi;
              if (!col_interval(W, sw, pbw, cc, o0, o1, &lo, &hi)) continue;
              const float *src = row + (lo * sw + cc - pbw) * L;
              double *a = acc + (lo - o0) * cw;
              if (flat)
                sum_run(a, src, (hi - lo) * L);
              else if (cw == 1)
                sum_run_strided(a, src, hi - lo, sw * L);
              else
                for (int64_t ow = lo; ow < hi; ow++, src += sw * L, a += cw) sum_run(a, src, cw);
            }
          }
        }
        for (int64_t ow = o0; ow < o1; ow++) {
          int64_t wl = ow * sw - pbw, wh = wl + kw;
          if (wl < 0) wl = 0;
          if (wh > W) wh = W;
          int64_t count = cnt_dh * (wh > wl ? wh - wl : 0);
          double div = (double)(count ? count : 1);
          float *y = yrow + ow * L + c0;
          const double *a = acc + (ow - o0) * cw;
          for (int64_t c = 0; c < cw; c++) y[c] = (float)(a[c] / div);
        }
      }
    }
  }
}

/* Units: (volume, output depth plane), each its out[1] rows. */
static void p3_range(void *arg, int64_t b, int64_t e) {
  const p3_job_t *j = arg;
  const weft_cpu_pool3_t *p = j->p;
  int64_t L = j->lanes, OD = p->out[0], OH = p->out[1], OW = p->out[2];
  int64_t H = p->in[1];
  for (int64_t u = b; u < e; u++) {
    int64_t v = u / OD, od = u % OD;
    const float *xv = p->x + v * j->vin;
    int64_t dl = od * p->s[0] - p->pb[0], dh = dl + p->k[0];
    if (dl < 0) dl = 0;
    if (dh > p->in[0]) dh = p->in[0];
    for (int64_t oh = 0; oh < OH; oh++) {
      float *yrow = p->y + v * j->vout + (od * OH + oh) * OW * L;
      int64_t hl = oh * p->s[1] - p->pb[1], hh = hl + p->k[1];
      if (hl < 0) hl = 0;
      if (hh > H) hh = H;
      p3_row(j, xv, yrow, dl, dh, hl, hh);
    }
  }
}

void weft__cpu_pool3d_f32(weft_kernel_ctx_t *ctx, const weft_cpu_pool3_t *p) {
  int64_t ip = p->in[0] * p->in[1] * p->in[2], op = p->out[0] * p->out[1] * p->out[2];
  p3_job_t j = {p, p->cfirst ? 1 : p->c, 0, 0};
  j.vin = ip * j.lanes;
  j.vout = op * j.lanes;
  int64_t vols = p->cfirst ? p->n * p->c : p->n;
  /* A unit's work: out[1] x out[2] windows of the clipped size by `lanes` floats, plus a row's
   * fixed cost. */
  double win = 1;
  for (int i = 0; i < 3; i++) win *= (double)(p->k[i] < p->in[i] ? p->k[i] : p->in[i]);
  double cost = (double)(p->out[1] * p->out[2] * j.lanes) * win +
                (double)p->out[1] * (win / (double)(p->k[2] < p->in[2] ? p->k[2] : p->in[2])) *
                    (double)(p->k[2]) * 8 +
                1;
  weft__cpu_parallel(ctx, vols * p->out[0], cost > 1e12 ? (int64_t)1e12 : (int64_t)cost,
                     p3_range, &j);
}
