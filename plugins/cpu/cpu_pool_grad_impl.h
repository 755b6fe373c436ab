/* cpu_pool_grad_impl.h: the float32 NHWC MaxPoolGrad / AvgPoolGrad band kernel and the NDHWC
 * MaxPool3DGrad / AvgPool3DGrad one (cpu_pool_grad.h), included once per instruction set level
 * with PG_BAND and PG_BAND3 naming the level's functions: plain loops over contiguous channels that the compiler vectorises at that level
 * (the files are built with -fvect-cost-model=dynamic, whose trip counts are run-time ones).
 *
 * Work split: one unit is one input row of one image. A range of units is cut into bands of
 * rows of one image; a band walks every output row whose window reaches into it (ascending),
 * every output column (ascending), and writes only the band's rows. So each element of dx is
 * written by one thread alone, and receives its contributions in the generic kernel's order,
 * output row-major, whatever the number of threads or where the bands end: the results are the
 * generic kernel's bit for bit. A window that straddles two bands is visited by both (MaxPool's
 * argmax is worked out twice there), the cost of the split.
 *
 * Arithmetic, as cpu_conv.c's pool_grad_range does it:
 * - MaxPoolGrad: the window's first maximum per channel (rows, then columns; strict >, so the
 *   first of equal values; the first NaN wins over everything, and nothing replaces it) gets
 *   dx += dy in float. (The generic kernel adds in double and rounds to float: for a sum of
 *   two floats that is the same number.) TensorFlow's CPU kernel
 *   (SpatialMaxPoolWithArgMaxHelper, "output_ref < input_ref") skips a NaN that is not first:
 *   Weft keeps its own rule here, the one its MaxPool has.
 * - AvgPoolGrad: g = (double)dy / count (the window's in-bounds elements), then each element of
 *   the window dx = (float)((double)dx + g): double adds rounded to float after each one.
 * - MaxPool3DGrad / AvgPool3DGrad (cpu_conv_nd.c's pool3d_grad_range): the same windows in three
 *   dimensions (depth, rows, columns), the same first maximum, but every sum in double (dy, or
 *   dy / count, added into a double accumulator) and rounded to float once at the end; bands
 *   are input depth planes.
 * "Bit for bit" leaves aside which NaN a sum holds where two NaNs meet (inf - inf's against a
 * NaN gradient): x86 returns an add's first operand's, and the compiler orders a commutative
 * add's operands as it likes, in the generic kernel as here. */
#include <math.h>
#include <string.h>

#include "cpu_pool_grad.h"

#if !defined(PG_BAND) || !defined(PG_BAND3)
#error "define PG_BAND and PG_BAND3, the level's band functions, before including this file"
#endif

/* Channels per block: the block's running maxima, their window positions and the averaged
 * gradients stay in L1 beside the rows they are read against. */
#define PG_BLOCK 64

/* The window of output (oy, ox) clipped to the input: rows [y0, y1), columns [x0, x1). */
static void pg_window(const weft_cpu_pool_grad_t *g, int64_t oy, int64_t ox, int64_t *y0,
                      int64_t *y1, int64_t *x0, int64_t *x1) {
  int64_t a = oy * g->sh - g->pt, b = ox * g->sw - g->pl;
  *y0 = a < 0 ? 0 : a;
  *x0 = b < 0 ? 0 : b;
  *y1 = a + g->kh > g->h ? g->h : a + g->kh;
  *x1 = b + g->kw > g->w ? g->w : b + g->kw;
}

/* MaxPoolGrad for the channels [c0, c0 + cn) of window (y0..y1, x0..x1) of image xi: dy's
 * values go to the first maximum of each channel where it lies in rows [r0, r1). */
static void max_block(const weft_cpu_pool_grad_t *j, const float *xi, float *dxi,
                      const float *restrict gy, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
                      int64_t r0, int64_t r1, int64_t c0, int64_t cn) {
  const weft_cpu_pool_grad_t *g = j;
  float best[PG_BLOCK];
  int32_t at[PG_BLOCK];
  const float *first = xi + (y0 * g->w + x0) * g->c + c0;
  for (int64_t c = 0; c < cn; c++) {
    best[c] = first[c];
    at[c] = 0;
  }
  int32_t k = 0; /* the window position, row-major over the clipped window */
  for (int64_t yy = y0; yy < y1; yy++)
    for (int64_t xx = x0; xx < x1; xx++, k++) {
      if (k == 0) continue;
      const float *restrict v = xi + (yy * g->w + xx) * g->c + c0;
      /* Branch-free (| and &, every load unconditional) so that the loop vectorises. */
      for (int64_t c = 0; c < cn; c++) {
        float a = best[c], u = v[c];
        int take = (u > a) | (isnan(u) & !isnan(a));
        best[c] = take ? u : a;
        at[c] = take ? k : at[c];
      }
    }
  int64_t ya = y0 > r0 ? y0 : r0, yb = y1 < r1 ? y1 : r1;
  for (int64_t yy = ya; yy < yb; yy++) {
    k = (int32_t)((yy - y0) * (x1 - x0));
    for (int64_t xx = x0; xx < x1; xx++, k++) {
      float *restrict d = dxi + (yy * g->w + xx) * g->c + c0;
      /* Adding +0 where the maximum lies elsewhere, not a select between d and d + gy, which
       * the compiler turns into a conditional store that it cannot vectorise. Bit for bit the
       * same: d starts at +0 and a round-to-nearest sum is -0 only when both terms are, so d
       * never holds -0, the one value that + 0 would change (NaN stays the same NaN). */
      for (int64_t c = 0; c < cn; c++) {
        float u = gy[c];
        d[c] += at[c] == k ? u : 0.0f;
      }
    }
  }
}

/* AvgPoolGrad for channels [c0, c0 + cn): dy / count onto the window's rows [r0, r1). */
static void avg_block(const weft_cpu_pool_grad_t *j, float *dxi, const float *restrict gy,
                      int64_t y0, int64_t y1, int64_t x0, int64_t x1, int64_t r0, int64_t r1,
                      int64_t c0, int64_t cn) {
  const weft_cpu_pool_grad_t *g = j;
  double gv[PG_BLOCK];
  double count = (double)((y1 - y0) * (x1 - x0));
  for (int64_t c = 0; c < cn; c++) gv[c] = (double)gy[c] / count;
  int64_t ya = y0 > r0 ? y0 : r0, yb = y1 < r1 ? y1 : r1;
  for (int64_t yy = ya; yy < yb; yy++)
    for (int64_t xx = x0; xx < x1; xx++) {
      float *restrict d = dxi + (yy * g->w + xx) * g->c + c0;
      for (int64_t c = 0; c < cn; c++) d[c] = (float)((double)d[c] + gv[c]);
    }
}

/* cpu_pool_grad.h: rows [r0, r1) of image n's dx, zeroed here, then every window reaching into
 * them. */
void PG_BAND(const weft_cpu_pool_grad_t *j, int64_t n, int64_t r0, int64_t r1) {
  const weft_cpu_pool_grad_t *g = j;
  int64_t plane = g->h * g->w * g->c, row = g->w * g->c;
  float *dxi = j->dx + n * plane;
  const float *xi = j->x ? j->x + n * plane : NULL;
  memset(dxi + r0 * row, 0, sizeof(float) * (size_t)((r1 - r0) * row));
  /* Output rows oy with oy * sh - pt + kh > r0 and oy * sh - pt <= r1 - 1. */
  int64_t lo = r0 + g->pt - g->kh + 1;
  int64_t oy0 = lo <= 0 ? 0 : (lo + g->sh - 1) / g->sh;
  int64_t oy1 = (r1 - 1 + g->pt) / g->sh + 1;
  if (oy1 > g->oh) oy1 = g->oh;
  for (int64_t oy = oy0; oy < oy1; oy++)
    for (int64_t ox = 0; ox < g->ow; ox++) {
      int64_t y0, y1, x0, x1;
      pg_window(g, oy, ox, &y0, &y1, &x0, &x1);
      /* An empty window (all padding) sends nothing, as in the generic kernel. */
      if (y0 >= y1 || x0 >= x1 || y1 <= r0 || y0 >= r1) continue;
      const float *gy = j->dy + ((n * g->oh + oy) * g->ow + ox) * g->c;
      for (int64_t c0 = 0; c0 < g->c; c0 += PG_BLOCK) {
        int64_t cn = g->c - c0 < PG_BLOCK ? g->c - c0 : PG_BLOCK;
        if (j->is_max)
          max_block(j, xi, dxi, gy + c0, y0, y1, x0, x1, r0, r1, c0, cn);
        else
          avg_block(j, dxi, gy + c0, y0, y1, x0, x1, r0, r1, c0, cn);
      }
    }
}

/* ---------------------------------------------------------------------------------------------
 * MaxPool3DGrad, AvgPool3DGrad */

/* The clipped window of output (od, oy, ox), [lo, hi) per dimension; false where it is empty. */
static bool pg3_window(const weft_cpu_pool3_grad_t *g, const int64_t o[3], int64_t lo[3],
                       int64_t hi[3]) {
  bool some = true;
  for (int i = 0; i < 3; i++) {
    lo[i] = o[i] * g->s[i] - g->pb[i];
    hi[i] = lo[i] + g->k[i];
    if (lo[i] < 0) lo[i] = 0;
    if (hi[i] > g->in[i]) hi[i] = g->in[i];
    some = some && lo[i] < hi[i];
  }
  return some;
}

/* Channels [c0, c0 + cn) of one window into planes [p0, p1) of image n's acc (ai). */
static void pool3_block(const weft_cpu_pool3_grad_t *j, const float *xi, double *ai,
                        const float *restrict gy, const int64_t lo[3], const int64_t hi[3],
                        int64_t p0, int64_t p1, int64_t c0, int64_t cn) {
  const weft_cpu_pool3_grad_t *g = j;
  int64_t plane = g->in[1] * g->in[2];
  double gv[PG_BLOCK];
  int32_t at[PG_BLOCK];
  if (j->is_max) {
    float best[PG_BLOCK];
    const float *first = xi + ((lo[0] * g->in[1] + lo[1]) * g->in[2] + lo[2]) * g->c + c0;
    for (int64_t c = 0; c < cn; c++) {
      best[c] = first[c];
      at[c] = 0;
      gv[c] = (double)gy[c];
    }
    int32_t k = 0;
    for (int64_t a = lo[0]; a < hi[0]; a++)
      for (int64_t yy = lo[1]; yy < hi[1]; yy++)
        for (int64_t xx = lo[2]; xx < hi[2]; xx++, k++) {
          if (k == 0) continue;
          const float *restrict v = xi + (a * plane + yy * g->in[2] + xx) * g->c + c0;
          for (int64_t c = 0; c < cn; c++) {
            float b = best[c], u = v[c];
            int take = (u > b) | (isnan(u) & !isnan(b));
            best[c] = take ? u : b;
            at[c] = take ? k : at[c];
          }
        }
  } else {
    double count = (double)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
    for (int64_t c = 0; c < cn; c++) gv[c] = (double)gy[c] / count;
  }
  int64_t da = lo[0] > p0 ? lo[0] : p0, db = hi[0] < p1 ? hi[0] : p1;
  for (int64_t a = da; a < db; a++)
    for (int64_t yy = lo[1]; yy < hi[1]; yy++) {
      int32_t k = (int32_t)(((a - lo[0]) * (hi[1] - lo[1]) + (yy - lo[1])) * (hi[2] - lo[2]));
      for (int64_t xx = lo[2]; xx < hi[2]; xx++, k++) {
        double *restrict d = ai + (a * plane + yy * g->in[2] + xx) * g->c + c0;
        if (j->is_max) {
          /* + 0 where the maximum lies elsewhere, as in max_block (acc starts at +0). */
          for (int64_t c = 0; c < cn; c++) {
            double u = gv[c];
            d[c] += at[c] == k ? u : 0.0;
          }
        } else {
          for (int64_t c = 0; c < cn; c++) d[c] += gv[c];
        }
      }
    }
}

/* cpu_pool_grad.h: depth planes [p0, p1) of image n: acc zeroed, every window reaching into
 * them added (output depth, rows, columns ascending, the generic kernel's order per element),
 * then rounded into dx. */
void PG_BAND3(const weft_cpu_pool3_grad_t *j, int64_t n, int64_t p0, int64_t p1) {
  const weft_cpu_pool3_grad_t *g = j;
  int64_t plane = g->in[1] * g->in[2] * g->c, vol = g->in[0] * plane;
  double *ai = j->acc + n * vol;
  const float *xi = j->x ? j->x + n * vol : NULL;
  memset(ai + p0 * plane, 0, sizeof(double) * (size_t)((p1 - p0) * plane));
  int64_t lo0 = p0 + g->pb[0] - g->k[0] + 1;
  int64_t od0 = lo0 <= 0 ? 0 : (lo0 + g->s[0] - 1) / g->s[0];
  int64_t od1 = (p1 - 1 + g->pb[0]) / g->s[0] + 1;
  if (od1 > g->out[0]) od1 = g->out[0];
  int64_t o[3];
  for (o[0] = od0; o[0] < od1; o[0]++)
    for (o[1] = 0; o[1] < g->out[1]; o[1]++)
      for (o[2] = 0; o[2] < g->out[2]; o[2]++) {
        int64_t lo[3], hi[3];
        if (!pg3_window(g, o, lo, hi) || hi[0] <= p0 || lo[0] >= p1) continue;
        const float *gy =
            j->dy + (((n * g->out[0] + o[0]) * g->out[1] + o[1]) * g->out[2] + o[2]) * g->c;
        for (int64_t c0 = 0; c0 < g->c; c0 += PG_BLOCK)
          pool3_block(j, xi, ai, gy + c0, lo, hi, p0, p1, c0,
                      g->c - c0 < PG_BLOCK ? g->c - c0 : PG_BLOCK);
      }
  float *restrict out = j->dx + n * vol + p0 * plane;
  const double *restrict in = ai + p0 * plane;
  for (int64_t i = 0; i < (p1 - p0) * plane; i++) out[i] = (float)in[i];
}
