/* cpu_pool3d_impl.h: the float32 MaxPool3D / AvgPool3D forward kernel (cpu_pool3d.h), included
 * once per instruction set level with P3_RANGE naming the level's function: plain loops over
 * contiguous floats that the compiler vectorises at that level (the files are built with
 * -fvect-cost-model=dynamic: the trip counts are run-time ones).
 *
 * Two ways through, the same arithmetic:
 * - Padded (a small volume; strides 1, or few lanes and row x column strides of at most 4): a
 *   unit is one volume, copied into a buffer padded to every window's full extent with a value
 *   that changes nothing (-inf for the max: never greater, not NaN; +0.0 for the average:
 *   x + 0.0 is x for every x the sum can hold, which starts at +0.0 and so is never -0.0). Laid
 *   on the padded grid, output q's window element (a, b, c) sits at q + a fixed offset, so each
 *   window position is one flat loop over a chunk of an output depth plane's rows (the positions
 *   off the strides or past the last column are computed and dropped).
 * - Rows (otherwise): a unit is (volume, output depth plane); an output row (fixed depth and
 *   height) is out[2] windows by `lanes` contiguous floats (the channels for NDHWC, 1 for
 *   NCDHW). The depth x height clipping is done once per row; with `lanes` >= P3_BLOCK each
 *   output pixel's window is clipped once and summed block by block of lanes in registers;
 *   with fewer lanes the width clipping is done once per (input row, window column): for window
 *   column cc the outputs whose column ow * s + cc - pb lies in the input form one interval, so
 *   each (input row, cc) is one loop over that interval's ow x lanes floats (one contiguous run
 *   for stride 1).
 *
 * The results are cpu_conv_nd.c's generic pool3d_range's bit for bit:
 * - each output takes its window's elements in depth, row, column order (input rows or window
 *   positions in that order outside, the output's floats inside), the out-of-bounds ones skipped
 *   or padded with the no-op value;
 * - the average sums in double from +0.0 and divides by the in-bounds count in double, then
 *   rounds to float, as the generic kernel does;
 * - the max keeps the first of equal maxima and lets the first NaN win and stay
 *   ((v > acc || isnan(v)) && !isnan(acc)); comparing floats is comparing their doubles, and the
 *   generic kernel's float -> double -> float round trip only quiets a signalling NaN, which the
 *   store here does too; an empty window gives -inf (max) and 0 (average) in both. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_pool3d.h"

/* Floats (max) or doubles (average) of one chunk's accumulators, on the stack. */
#define P3_CHUNK 1024
/* The padded buffer's tail of pad values: the flat loops round their length up to this. */
#define P3_SLACK 16

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

/* p3_row for lanes >= P3_BLOCK: per output pixel and block of P3_BLOCK lanes, the whole clipped
 * window accumulated in registers (a fixed-size block the compiler keeps in vector registers),
 * then stored once; the last block's remainder the same way with a run-time size. */
#define P3_BLOCK 16
static void p3_row_blocked(const weft_cpu_pool3_t *p, const float *xv, float *yrow, int64_t dl,
                           int64_t dh, int64_t hl, int64_t hh) {
  int64_t cnt_dh = (dh > dl ? dh - dl : 0) * (hh > hl ? hh - hl : 0);
  int64_t L = p->lanes, H = p->in[1], W = p->in[2], OW = p->out[2];
  int64_t kw = p->k[2], sw = p->s[2], pbw = p->pb[2];
  for (int64_t ow = 0; ow < OW; ow++) {
    int64_t wl = ow * sw - pbw, wh = wl + kw;
    if (wl < 0) wl = 0;
    if (wh > W) wh = W;
    int64_t count = cnt_dh * (wh > wl ? wh - wl : 0);
    double div = (double)(count ? count : 1);
    float *y = yrow + ow * L;
    int64_t c0 = 0;
    if (p->is_max) {
      for (; c0 + P3_BLOCK <= L; c0 += P3_BLOCK) {
        float acc[P3_BLOCK];
        for (int i = 0; i < P3_BLOCK; i++) acc[i] = -INFINITY;
        for (int64_t a = dl; a < dh; a++)
          for (int64_t b = hl; b < hh; b++)
            for (int64_t w = wl; w < wh; w++) {
              const float *src = xv + ((a * H + b) * W + w) * L + c0;
              for (int i = 0; i < P3_BLOCK; i++) {
                float v = src[i], c = acc[i];
                acc[i] = (v > c) | ((v != v) & (c == c)) ? v : c;
              }
            }
        for (int i = 0; i < P3_BLOCK; i++) y[c0 + i] = quiet(acc[i]);
      }
      if (c0 < L) {
        float acc[P3_BLOCK];
        int64_t n = L - c0;
        for (int64_t i = 0; i < n; i++) acc[i] = -INFINITY;
        for (int64_t a = dl; a < dh; a++)
          for (int64_t b = hl; b < hh; b++)
            for (int64_t w = wl; w < wh; w++)
              max_run(acc, xv + ((a * H + b) * W + w) * L + c0, n);
        for (int64_t i = 0; i < n; i++) y[c0 + i] = quiet(acc[i]);
      }
    } else {
      for (; c0 + P3_BLOCK <= L; c0 += P3_BLOCK) {
        double acc[P3_BLOCK];
        for (int i = 0; i < P3_BLOCK; i++) acc[i] = 0.0;
        for (int64_t a = dl; a < dh; a++)
          for (int64_t b = hl; b < hh; b++)
            for (int64_t w = wl; w < wh; w++) {
              const float *src = xv + ((a * H + b) * W + w) * L + c0;
              for (int i = 0; i < P3_BLOCK; i++) acc[i] += (double)src[i];
            }
        for (int i = 0; i < P3_BLOCK; i++) y[c0 + i] = (float)(acc[i] / div);
      }
      if (c0 < L) {
        double acc[P3_BLOCK];
        int64_t n = L - c0;
        for (int64_t i = 0; i < n; i++) acc[i] = 0.0;
        for (int64_t a = dl; a < dh; a++)
          for (int64_t b = hl; b < hh; b++)
            for (int64_t w = wl; w < wh; w++) sum_run(acc, xv + ((a * H + b) * W + w) * L + c0, n);
        for (int64_t i = 0; i < n; i++) y[c0 + i] = (float)(acc[i] / div);
      }
    }
  }
}

/* One output row yrow of volume xv from the input rows of the clipped depth [dl, dh) x height
 * [hl, hh), in depth-then-row order. */
static void p3_row(const weft_cpu_pool3_t *p, const float *xv, float *yrow, int64_t dl,
                   int64_t dh, int64_t hl, int64_t hh) {
  if (p->lanes >= P3_BLOCK) {
    p3_row_blocked(p, xv, yrow, dl, dh, hl, hh);
    return;
  }
  int64_t cnt_dh = (dh > dl ? dh - dl : 0) * (hh > hl ? hh - hl : 0);
  int64_t L = p->lanes, W = p->in[2], OW = p->out[2], kw = p->k[2], sw = p->s[2], pbw = p->pb[2];
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

/* Units [b, e): (volume, output depth plane), each its out[1] rows. */
static void p3_rows(const weft_cpu_pool3_t *p, int64_t b, int64_t e) {
  int64_t L = p->lanes, OD = p->out[0], OH = p->out[1], OW = p->out[2];
  int64_t H = p->in[1];
  for (int64_t u = b; u < e; u++) {
    int64_t v = u / OD, od = u % OD;
    const float *xv = p->x + v * p->vin;
    int64_t dl = od * p->s[0] - p->pb[0], dh = dl + p->k[0];
    if (dl < 0) dl = 0;
    if (dh > p->in[0]) dh = p->in[0];
    for (int64_t oh = 0; oh < OH; oh++) {
      float *yrow = p->y + v * p->vout + (od * OH + oh) * OW * L;
      int64_t hl = oh * p->s[1] - p->pb[1], hh = hl + p->k[1];
      if (hl < 0) hl = 0;
      if (hh > H) hh = H;
      p3_row(p, xv, yrow, dl, dh, hl, hh);
    }
  }
}


/* The in-bounds count of window o of a dim: [o * s - pb, o * s - pb + k) within [0, in). */
static inline int64_t p3_count(int64_t o, int64_t in, int64_t k, int64_t s, int64_t pb) {
  int64_t lo = o * s - pb, hi = lo + k;
  if (lo < 0) lo = 0;
  if (hi > in) hi = in;
  return hi > lo ? hi - lo : 0;
}

/* n floats from src to dst, or n copies of v: in fixed-size pieces the compiler inlines (a
 * padded row is a few floats, where a memcpy / memset call costs more than the copy). */
static inline void p3_copy(float *restrict dst, const float *restrict src, int64_t n) {
  for (; n >= 16; n -= 16, dst += 16, src += 16) memcpy(dst, src, 16 * sizeof(float));
  if (n & 8) memcpy(dst, src, 8 * sizeof(float)), dst += 8, src += 8;
  if (n & 4) memcpy(dst, src, 4 * sizeof(float)), dst += 4, src += 4;
  if (n & 2) memcpy(dst, src, 2 * sizeof(float)), dst += 2, src += 2;
  if (n & 1) *dst = *src;
}

static inline void p3_fill(float *dst, float v, int64_t n) {
  float block[16];
  for (int i = 0; i < 16; i++) block[i] = v;
  for (; n >= 16; n -= 16, dst += 16) memcpy(dst, block, sizeof block);
  if (n & 8) memcpy(dst, block, 8 * sizeof(float)), dst += 8;
  if (n & 4) memcpy(dst, block, 4 * sizeof(float)), dst += 4;
  if (n & 2) memcpy(dst, block, 2 * sizeof(float)), dst += 2;
  if (n & 1) *dst = v;
}

/* Volume v through the padded buffer buf (Dp x Hp x Wp x lanes floats, each dim
 * (out - 1) * s + k: every window whole), with dw (out[2] x lanes doubles) after it. The outputs
 * are computed at every padded position from the first output's to the last one's (with depth
 * stride 1 all planes at once, else plane by plane), then those on the strides taken. */
static void p3_padded(const weft_cpu_pool3_t *p, int64_t v, float *buf, double *dw) {
  int64_t L = p->lanes, D = p->in[0], H = p->in[1], W = p->in[2];
  int64_t OD = p->out[0], OH = p->out[1], OW = p->out[2];
  int64_t kd = p->k[0], kh = p->k[1], kw = p->k[2], sd = p->s[0], sh = p->s[1], sw = p->s[2];
  int64_t Dp = (OD - 1) * sd + kd, Hp = (OH - 1) * sh + kh, Wp = (OW - 1) * sw + kw;
  int64_t RL = Wp * L;
  float pad = p->is_max ? -INFINITY : 0.0f;
  const float *xv = p->x + v * p->vin;
  float *yv = p->y + v * p->vout;
  /* Copy: padded row (pd, ph) is input row (pd - pb[0], ph - pb[1]), columns shifted by pb[2]. */
  int64_t w0 = p->pb[2], w1 = p->pb[2] + W < Wp ? p->pb[2] + W : Wp;
  for (int64_t pd = 0; pd < Dp; pd++)
    for (int64_t ph = 0; ph < Hp; ph++) {
      float *r = buf + (pd * Hp + ph) * RL;
      int64_t d = pd - p->pb[0], h = ph - p->pb[1];
      if (d < 0 || d >= D || h < 0 || h >= H || w1 <= w0) {
        p3_fill(r, pad, RL);
        continue;
      }
      p3_fill(r, pad, w0 * L);
      p3_copy(r + w0 * L, xv + (d * H + h) * W * L, (w1 - w0) * L);
      p3_fill(r + w1 * L, pad, RL - w1 * L);
    }
  /* The average's divisor of output (.., ow, c): max(count_dh, 1) * dw[ow * L + c], dw the
   * column's count (or 1): the in-bounds count, exactly, or 1 times 0 where the window is
   * empty (a sum of +0.0 either way). */
  if (!p->is_max)
    for (int64_t ow = 0; ow < OW; ow++) {
      int64_t cw = p3_count(ow, W, kw, sw, p->pb[2]);
      for (int64_t c = 0; c < L; c++) dw[ow * L + c] = (double)(cw ? cw : 1);
    }
  /* Segments: all planes (depth stride 1) or one output plane each. */
  int64_t segs = sd == 1 ? 1 : OD, seg_planes = sd == 1 ? OD : 1;
  int64_t Q = ((seg_planes - 1) * Hp + (OH - 1) * sh) * RL + ((OW - 1) * sw + 1) * L;
  for (int64_t sg = 0; sg < segs; sg++) {
    const float *base = buf + sg * sd * Hp * RL;
    for (int64_t q0 = 0; q0 < Q; q0 += P3_CHUNK) {
      int64_t m = Q - q0 < P3_CHUNK ? Q - q0 : P3_CHUNK;
      /* The loops run to a multiple of P3_SLACK (no scalar tails; the buffer has the slack). */
      int64_t mr = (m + P3_SLACK - 1) / P3_SLACK * P3_SLACK;
      float facc[P3_CHUNK];
      double dacc[P3_CHUNK];
      /* Few window positions: each one flat loop over the chunk, the accumulators in memory. */
      if (kd * kh * kw <= 8) {
        if (p->is_max)
          for (int64_t i = 0; i < mr; i++) facc[i] = -INFINITY;
        else
          for (int64_t i = 0; i < mr; i++) dacc[i] = 0.0;
        for (int64_t a = 0; a < kd; a++)
          for (int64_t b = 0; b < kh; b++)
            for (int64_t c = 0; c < kw; c++) {
              const float *src = base + q0 + ((a * Hp + b) * Wp + c) * L;
              if (p->is_max)
                max_run(facc, src, mr);
              else
                sum_run(dacc, src, mr);
            }
      }
      /* More: blocks of P3_SLACK positions, each over every window position in registers. */
      for (int64_t q = 0; q < mr && kd * kh * kw > 8; q += P3_SLACK) {
        const float *at = base + q0 + q;
        if (p->is_max) {
          float acc[P3_SLACK];
          for (int i = 0; i < P3_SLACK; i++) acc[i] = -INFINITY;
          for (int64_t a = 0; a < kd; a++)
            for (int64_t b = 0; b < kh; b++) {
              const float *r = at + (a * Hp + b) * RL;
              for (int64_t c = 0; c < kw; c++, r += L)
                for (int i = 0; i < P3_SLACK; i++) {
                  float e = r[i], o = acc[i];
                  acc[i] = (e > o) | ((e != e) & (o == o)) ? e : o;
                }
            }
          memcpy(facc + q, acc, sizeof acc);
        } else {
          double acc[P3_SLACK];
          for (int i = 0; i < P3_SLACK; i++) acc[i] = 0.0;
          for (int64_t a = 0; a < kd; a++)
            for (int64_t b = 0; b < kh; b++) {
              const float *r = at + (a * Hp + b) * RL;
              for (int64_t c = 0; c < kw; c++, r += L)
                for (int i = 0; i < P3_SLACK; i++) acc[i] += (double)r[i];
            }
          memcpy(dacc + q, acc, sizeof acc);
        }
      }
      /* The chunk's outputs: padded rows (od * sd, oh * sh) of the segment, columns ow * sw. */
      int64_t pr = q0 / RL, od = sg + pr / Hp, ph = pr % Hp;
      for (; pr * RL < q0 + m; pr++, ph++) {
        if (ph == Hp) { /* no divisions per row: they cost more than a short row's copy */
          ph = 0;
          od++;
        }
        int64_t oh = ph;
        if (sh != 1) {
          if (ph % sh) continue;
          oh = ph / sh;
        }
        if (oh >= OH) continue;
        float *y = yv + (od * OH + oh) * OW * L;
        int64_t cdh = p3_count(od, D, kd, sd, p->pb[0]) * p3_count(oh, H, kh, sh, p->pb[1]);
        double fdh = (double)(cdh ? cdh : 1);
        if (sw == 1) {
          /* Row floats [j0, j1) of this chunk, contiguous. */
          int64_t j0 = q0 - pr * RL > 0 ? q0 - pr * RL : 0, j1 = q0 + m - pr * RL;
          if (j1 > OW * L) j1 = OW * L;
          const float *fa = facc + (pr * RL - q0);
          const double *da = dacc + (pr * RL - q0);
          if (p->is_max)
            for (int64_t jj = j0; jj < j1; jj++) y[jj] = quiet(fa[jj]);
          else
            for (int64_t jj = j0; jj < j1; jj++) y[jj] = (float)(da[jj] / (fdh * dw[jj]));
          continue;
        }
        /* Columns [owa, owb) lie wholly in the chunk; the others, at its ends, are checked. */
        int64_t rb = pr * RL - q0, step = sw * L;
        int64_t owa = rb >= 0 ? 0 : (-rb + step - 1) / step;
        int64_t owb = m - L - rb < 0 ? 0 : (m - L - rb) / step + 1;
        if (owb > OW) owb = OW;
        if (owa > owb) owa = owb;
        const float *fa = facc + rb;
        const double *da = dacc + rb;
        if (p->is_max)
          for (int64_t ow = owa; ow < owb; ow++)
            for (int64_t c = 0; c < L; c++) y[ow * L + c] = quiet(fa[ow * step + c]);
        else
          for (int64_t ow = owa; ow < owb; ow++)
            for (int64_t c = 0; c < L; c++)
              y[ow * L + c] = (float)(da[ow * step + c] / (fdh * dw[ow * L + c]));
        for (int64_t ow = 0; ow < OW; ow++) {
          if (ow == owa) ow = owb;
          if (ow >= OW) break;
          int64_t q = pr * RL + ow * sw * L;
          if (q + L <= q0) continue;
          if (q >= q0 + m) break;
          int64_t c0 = q < q0 ? q0 - q : 0, c1 = q + L > q0 + m ? q0 + m - q : L;
          if (p->is_max)
            for (int64_t c = c0; c < c1; c++) y[ow * L + c] = quiet(facc[q - q0 + c]);
          else
            for (int64_t c = c0; c < c1; c++)
              y[ow * L + c] = (float)(dacc[q - q0 + c] / (fdh * dw[ow * L + c]));
        }
      }
    }
  }
}

void P3_RANGE(const weft_cpu_pool3_t *p, int64_t b, int64_t e) {
  if (!p->padded) {
    p3_rows(p, b, e);
    return;
  }
  int64_t size = ((p->out[0] - 1) * p->s[0] + p->k[0]) * ((p->out[1] - 1) * p->s[1] + p->k[1]) *
                 ((p->out[2] - 1) * p->s[2] + p->k[2]) * p->lanes;
  int64_t dws = p->out[2] * p->lanes;
  double *dw = malloc((size_t)dws * sizeof(double) + (size_t)(size + P3_SLACK) * sizeof(float));
  if (!dw) {
    /* No buffer: the rows way, unit v's depth planes. */
    p3_rows(p, b * p->out[0], e * p->out[0]);
    return;
  }
  float *buf = (float *)(dw + dws);
  for (int64_t i = 0; i < P3_SLACK; i++) buf[size + i] = 0.0f;
  for (int64_t v = b; v < e; v++) p3_padded(p, v, buf, dw);
  free(dw);
}
