/* reference_imgproc.c: double-precision references of TensorFlow's image-processing ops, written
 * from TensorFlow's definitions (tensorflow/core/kernels/image/): the resizes' scales
 * ((in-1)/(out-1) with align_corners, in/out otherwise) and source coordinates (legacy x*scale,
 * half-pixel (x+0.5)*scale-0.5, nearest's (x+0.5)*scale) in float32 as TensorFlow computes them,
 * bicubic's quantised 1025-entry coefficient table (a = -0.75, or Keys' -0.5 with out-of-image
 * taps dropped and renormalised), area's covered fractions, the bilinear, nearest and bicubic
 * resizes' adjoints (their gradients), CropAndResize and its two gradients, the HSV conversions,
 * the hue / saturation / contrast adjustments, ExtractImagePatches, greedy (soft-)NMS and the
 * box outlines of DrawBoundingBoxes. */
#include "reference_imgproc.h"

#include <float.h>
#include <math.h>
#include <string.h>

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

static float rscale(int64_t in, int64_t out, bool align) {
  return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

static double at4(const cf_array_t *x, int64_t b, int64_t y, int64_t xx, int64_t c) {
  return x->v[((b * x->dims[1] + y) * x->dims[2] + xx) * x->dims[3] + c];
}

/* Cubic convolution weights for a fractional offset quantised to 1/1024 as TensorFlow's table. */
static void cubic_w(double a, int64_t off, double *w) {
  double t0 = off / 1024.0, t1 = (1024 - off) / 1024.0;
  double xs[4] = {t0 + 1, t0, t1, t1 + 1};
  for (int k = 0; k < 4; k++) {
    double x = xs[k];
    w[k] = x <= 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  }
}

typedef struct taps {
  int n;
  int64_t idx[4];
  double w[4];
} taps_t;

/* The input taps of output coordinate i along one dimension for the 1-D kernels. */
static void resize_taps(cf_resize_kind_t kind, int64_t i, int64_t in, float scale, bool align,
                        bool half, taps_t *t) {
  float f = half ? ((float)i + 0.5f) * scale - 0.5f : (float)i * scale;
  if (kind == CF_RESIZE_BILINEAR) {
    float fl = floorf(f);
    t->n = 2;
    t->idx[0] = clampi((int64_t)fl, 0, INT64_MAX);
    t->idx[1] = clampi((int64_t)ceilf(f), INT64_MIN, in - 1);
    t->w[1] = (double)(f - fl);
    t->w[0] = 1 - t->w[1];
  } else if (kind == CF_RESIZE_NEAREST) {
    float g = half ? ((float)i + 0.5f) * scale : (float)i * scale;
    int64_t v = align ? (int64_t)roundf(g) : (int64_t)floorf(g);
    v = v < in - 1 ? v : in - 1;
    if (half && v < 0) v = 0;
    t->n = 1;
    t->idx[0] = v;
    t->w[0] = 1;
  } else {
    int64_t loc = (int64_t)floorf(f);
    int64_t off = lrintf((f - (float)loc) * 1024);
    double w[4];
    cubic_w(half ? -0.5 : -0.75, off, w);
    double sum = 0;
    t->n = 4;
    for (int k = 0; k < 4; k++) {
      t->idx[k] = clampi(loc - 1 + k, 0, in - 1);
      t->w[k] = w[k];
      if (half && t->idx[k] != loc - 1 + k) t->w[k] = 0;
      sum += t->w[k];
    }
    if (half)
      for (int k = 0; k < 4; k++) t->w[k] /= sum;
  }
}

/* Area: the covered fraction of each input cell of output i's footprint [i*s, (i+1)*s). */
static int area_cells(int64_t i, int64_t in, float s, int64_t *idx, double *w, int max) {
  float a = (float)i * s, b = (float)(i + 1) * s;
  int64_t lo = (int64_t)floorf(a), hi = (int64_t)ceilf(b);
  int n = 0;
  for (int64_t k = lo; k < hi && n < max; k++, n++) {
    double c0 = fmax((double)k, (double)a), c1 = fmin((double)k + 1, (double)b);
    idx[n] = clampi(k, 0, in - 1);
    w[n] = c1 - c0;
  }
  return n;
}

cf_array_t *cf_ref_resize(cf_resize_kind_t kind, const cf_array_t *x, int64_t oh, int64_t ow,
                          bool align, bool half) {
  int64_t nb = x->dims[0], ih = x->dims[1], iw = x->dims[2], c = x->dims[3];
  int64_t d[4] = {nb, oh, ow, c};
  cf_array_t *y = cf_array_new(kind == CF_RESIZE_NEAREST ? x->dtype : WEFT_DT_FLOAT, 4, d);
  float hs = rscale(ih, oh, align), ws = rscale(iw, ow, align);
  enum { MAXC = 4096 };
  static int64_t yi[MAXC], xi[MAXC];
  static double yw[MAXC], xw[MAXC];
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < oh; i++) {
      int ny, nx;
      if (kind == CF_RESIZE_AREA) {
        ny = area_cells(i, ih, hs, yi, yw, MAXC);
      } else {
        taps_t t;
        resize_taps(kind, i, ih, hs, align, half, &t);
        ny = t.n;
        memcpy(yi, t.idx, sizeof t.idx);
        memcpy(yw, t.w, sizeof t.w);
      }
      for (int64_t j = 0; j < ow; j++) {
        if (kind == CF_RESIZE_AREA) {
          nx = area_cells(j, iw, ws, xi, xw, MAXC);
        } else {
          taps_t t;
          resize_taps(kind, j, iw, ws, align, half, &t);
          nx = t.n;
          memcpy(xi, t.idx, sizeof t.idx);
          memcpy(xw, t.w, sizeof t.w);
        }
        for (int64_t ch = 0; ch < c; ch++) {
          double sum = 0;
          for (int p = 0; p < ny; p++)
            for (int q = 0; q < nx; q++) sum += yw[p] * xw[q] * at4(x, b, yi[p], xi[q], ch);
          if (kind == CF_RESIZE_AREA) sum /= (double)hs * (double)ws;
          y->v[((b * oh + i) * ow + j) * c + ch] = sum;
        }
      }
    }
  cf_array_round(y);
  return y;
}

/* The adjoint from the forward reference itself rather than from the weights again: output
 * pixel q's weight on input pixel p is the forward resize of the unit image at p, read at q. */
cf_array_t *cf_ref_resize_grad(cf_resize_kind_t kind, const cf_array_t *grads, int64_t ih,
                               int64_t iw, bool align, bool half, weft_dtype_t out_dtype) {
  int64_t nb = grads->dims[0], oh = grads->dims[1], ow = grads->dims[2], c = grads->dims[3];
  int64_t d[4] = {nb, ih, iw, c}, ud[4] = {1, ih, iw, 1};
  cf_array_t *out = cf_array_new(out_dtype, 4, d);
  cf_array_t *unit = cf_array_new(WEFT_DT_DOUBLE, 4, ud);
  for (int64_t p = 0; p < ih * iw; p++) {
    unit->v[p] = 1;
    cf_array_t *w = cf_ref_resize(kind, unit, oh, ow, align, half);
    unit->v[p] = 0;
    for (int64_t q = 0; q < oh * ow; q++) {
      if (w->v[q] == 0) continue;
      for (int64_t b = 0; b < nb; b++)
        for (int64_t ch = 0; ch < c; ch++)
          out->v[(b * ih * iw + p) * c + ch] += w->v[q] * grads->v[(b * oh * ow + q) * c + ch];
    }
    cf_array_free(w);
  }
  cf_array_free(unit);
  cf_array_round(out);
  return out;
}

/* Sample i of a crop of `crop` between box edges a1 and a2 on an image side of `in` pixels, in
 * float32 as TensorFlow computes it. */
static float crop_at(float a1, float a2, int64_t in, int64_t crop, int64_t i) {
  if (crop <= 1) return (float)(0.5 * (a1 + a2) * (float)(in - 1));
  return a1 * (float)(in - 1) + (float)i * ((a2 - a1) * (float)(in - 1) / (float)(crop - 1));
}

cf_array_t *cf_ref_crop_and_resize(const cf_array_t *image, const cf_array_t *boxes,
                                   const cf_array_t *box_ind, int64_t ch, int64_t cw,
                                   bool nearest, double extrapolation) {
  int64_t ih = image->dims[1], iw = image->dims[2], depth = image->dims[3];
  int64_t nb = boxes->rank == 2 ? boxes->dims[0] : 0;
  int64_t d[4] = {nb, ch, cw, depth};
  cf_array_t *y = cf_array_new(WEFT_DT_FLOAT, 4, d);
  for (int64_t n = 0; n < nb; n++) {
    float y1 = (float)boxes->v[n * 4], x1 = (float)boxes->v[n * 4 + 1];
    float y2 = (float)boxes->v[n * 4 + 2], x2 = (float)boxes->v[n * 4 + 3];
    int64_t b = (int64_t)box_ind->v[n];
    for (int64_t i = 0; i < ch; i++) {
      float fy = crop_at(y1, y2, ih, ch, i);
      for (int64_t j = 0; j < cw; j++) {
        float fx = crop_at(x1, x2, iw, cw, j);
        for (int64_t k = 0; k < depth; k++) {
          double v;
          if (fy < 0 || fy > (float)(ih - 1) || fx < 0 || fx > (float)(iw - 1)) {
            v = extrapolation;
          } else if (nearest) {
            v = at4(image, b, (int64_t)roundf(fy), (int64_t)roundf(fx), k);
          } else {
            int64_t t = (int64_t)floorf(fy), bo = (int64_t)ceilf(fy);
            int64_t l = (int64_t)floorf(fx), r = (int64_t)ceilf(fx);
            double yl = fy - floorf(fy), xl = fx - floorf(fx);
            double top = at4(image, b, t, l, k) * (1 - xl) + at4(image, b, t, r, k) * xl;
            double bot = at4(image, b, bo, l, k) * (1 - xl) + at4(image, b, bo, r, k) * xl;
            v = top * (1 - yl) + bot * yl;
          }
          y->v[((n * ch + i) * cw + j) * depth + k] = v;
        }
      }
    }
  }
  cf_array_round(y);
  return y;
}

/* From the forward reference: crop pixel q's weight on image pixel p is the crop of the unit
 * image at p, read at q. */
cf_array_t *cf_ref_crop_grad_image(const cf_array_t *grads, const cf_array_t *boxes,
                                   const cf_array_t *box_ind, const int64_t *image_size,
                                   bool nearest, weft_dtype_t out_dtype) {
  int64_t nb = grads->dims[0], ch = grads->dims[1], cw = grads->dims[2], depth = grads->dims[3];
  int64_t ud[4] = {image_size[0], image_size[1], image_size[2], 1};
  cf_array_t *out = cf_array_new(out_dtype, 4, image_size);
  cf_array_t *unit = cf_array_new(WEFT_DT_DOUBLE, 4, ud);
  for (int64_t p = 0; p < unit->n; p++) {
    unit->v[p] = 1;
    cf_array_t *w = cf_ref_crop_and_resize(unit, boxes, box_ind, ch, cw, nearest, 0);
    unit->v[p] = 0;
    for (int64_t q = 0; q < nb * ch * cw; q++)
      if (w->v[q] != 0)
        for (int64_t k = 0; k < depth; k++)
          out->v[p * depth + k] += w->v[q] * grads->v[q * depth + k];
    cf_array_free(w);
  }
  cf_array_free(unit);
  cf_array_round(out);
  return out;
}

/* The chain rule through each in-image sample: the bilinear value's slope along the image rows
 * (columns) at the sample times the sample position's derivative w.r.t. each box edge. */
cf_array_t *cf_ref_crop_grad_boxes(const cf_array_t *grads, const cf_array_t *image,
                                   const cf_array_t *boxes, const cf_array_t *box_ind) {
  int64_t nb = grads->dims[0], ch = grads->dims[1], cw = grads->dims[2], depth = grads->dims[3];
  int64_t ih = image->dims[1], iw = image->dims[2], od[2] = {nb, 4};
  cf_array_t *out = cf_array_new(WEFT_DT_FLOAT, 2, od);
  for (int64_t n = 0; n < nb; n++) {
    float y1 = (float)boxes->v[n * 4], x1 = (float)boxes->v[n * 4 + 1];
    float y2 = (float)boxes->v[n * 4 + 2], x2 = (float)boxes->v[n * 4 + 3];
    int64_t b = (int64_t)box_ind->v[n];
    for (int64_t i = 0; i < ch; i++) {
      float fy = crop_at(y1, y2, ih, ch, i);
      /* fy = y1 (ih - 1) (1 - i / (ch - 1)) + y2 (ih - 1) i / (ch - 1), or their mean. */
      double py1 = ch > 1 ? (ih - 1) * (1 - (double)i / (double)(ch - 1)) : 0.5 * (ih - 1);
      double py2 = ch > 1 ? (ih - 1) * ((double)i / (double)(ch - 1)) : 0.5 * (ih - 1);
      if (fy < 0 || fy > (float)(ih - 1)) continue;
      for (int64_t j = 0; j < cw; j++) {
        float fx = crop_at(x1, x2, iw, cw, j);
        double px1 = cw > 1 ? (iw - 1) * (1 - (double)j / (double)(cw - 1)) : 0.5 * (iw - 1);
        double px2 = cw > 1 ? (iw - 1) * ((double)j / (double)(cw - 1)) : 0.5 * (iw - 1);
        if (fx < 0 || fx > (float)(iw - 1)) continue;
        int64_t t = (int64_t)floorf(fy), bo = (int64_t)ceilf(fy);
        int64_t l = (int64_t)floorf(fx), r = (int64_t)ceilf(fx);
        double yl = fy - floorf(fy), xl = fx - floorf(fx);
        for (int64_t k = 0; k < depth; k++) {
          double tl = at4(image, b, t, l, k), tr = at4(image, b, t, r, k);
          double bl = at4(image, b, bo, l, k), br = at4(image, b, bo, r, k);
          double g = grads->v[((n * ch + i) * cw + j) * depth + k];
          double slope_y = (bl * (1 - xl) + br * xl) - (tl * (1 - xl) + tr * xl);
          double slope_x = (tr - tl) * (1 - yl) + (br - bl) * yl;
          out->v[n * 4] += g * slope_y * py1;
          out->v[n * 4 + 2] += g * slope_y * py2;
          out->v[n * 4 + 1] += g * slope_x * px1;
          out->v[n * 4 + 3] += g * slope_x * px2;
        }
      }
    }
  }
  cf_array_round(out);
  return out;
}

static void to_hsv(double r, double g, double b, double *h, double *s, double *v) {
  double mx = fmax(r, fmax(g, b)), mn = fmin(r, fmin(g, b)), range = mx - mn;
  *s = mx > 0 ? range / mx : 0;
  double hh = 0;
  if (range > 0) {
    if (r == mx)
      hh = (g - b) / (6 * range);
    else if (g == mx)
      hh = (b - r) / (6 * range) + 2.0 / 6;
    else
      hh = (r - g) / (6 * range) + 4.0 / 6;
  }
  *h = hh < 0 ? hh + 1 : hh;
  *v = mx;
}

static double clamp01(double x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }

static void to_rgb(double h, double s, double v, double *r, double *g, double *b) {
  double dh = h * 6;
  double dr = clamp01(fabs(dh - 3) - 1), dg = clamp01(2 - fabs(dh - 2)),
         db = clamp01(2 - fabs(dh - 4));
  *r = ((1 - s) + s * dr) * v;
  *g = ((1 - s) + s * dg) * v;
  *b = ((1 - s) + s * db) * v;
}

cf_array_t *cf_ref_rgb_hsv(const cf_array_t *x, bool hsv) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  for (int64_t p = 0; p + 2 < x->n; p += 3) {
    const double *a = x->v + p;
    double *o = y->v + p;
    if (hsv)
      to_hsv(a[0], a[1], a[2], &o[0], &o[1], &o[2]);
    else
      to_rgb(a[0], a[1], a[2], &o[0], &o[1], &o[2]);
  }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_adjust_hue_sat(const cf_array_t *x, bool hue, double f) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  for (int64_t p = 0; p + 2 < x->n; p += 3) {
    const double *a = x->v + p;
    double h, s, v;
    to_hsv(a[0], a[1], a[2], &h, &s, &v);
    if (hue) {
      /* The hexcone hue in [0, 6) shifted by 6 * delta and wrapped; min and max are kept. */
      double mn = fmin(a[0], fmin(a[1], a[2]));
      h = h * 6 + f * 6;
      h = fmod(h, 6);
      if (h < 0) h += 6;
      s = v > 0 ? (v - mn) / v : 0;
      h /= 6;
    } else {
      s = clamp01(s * f);
    }
    /* HSV -> RGB by the sector formula. */
    double c = s * v, m = v - c, dh = h * 6;
    double xx = c * (1 - fabs(fmod(dh, 2) - 1));
    int cat = (int)dh;
    double rgb[6][3] = {{c, xx, 0}, {xx, c, 0}, {0, c, xx}, {0, xx, c}, {xx, 0, c}, {c, 0, xx}};
    for (int k = 0; k < 3; k++) y->v[p + k] = (cat >= 0 && cat < 6 ? rgb[cat][k] : 0) + m;
  }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_adjust_contrast(const cf_array_t *x, double factor, bool v1, double lo,
                                   double hi) {
  cf_array_t *y = cf_array_new_like(x, v1 ? WEFT_DT_FLOAT : x->dtype);
  int r = x->rank;
  int64_t h = x->dims[r - 3], w = x->dims[r - 2], c = x->dims[r - 1];
  if (x->n == 0) return y;
  int64_t batch = x->n / (h * w * c);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t ch = 0; ch < c; ch++) {
      int64_t base = b * h * w * c + ch;
      double sum = 0;
      for (int64_t k = 0; k < h * w; k++) sum += x->v[base + k * c];
      double mean = sum / (double)(h * w);
      for (int64_t k = 0; k < h * w; k++) {
        double o = mean + factor * (x->v[base + k * c] - mean);
        if (v1) o = fmax(fmin(o, hi), lo);
        y->v[base + k * c] = o;
      }
    }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_extract_patches(const cf_array_t *x, const int64_t *k, const int64_t *s,
                                   const int64_t *r, bool same) {
  int64_t n = x->dims[0], in[2] = {x->dims[1], x->dims[2]}, d = x->dims[3], out[2], pad[2];
  for (int i = 0; i < 2; i++) {
    int64_t eff = k[i] + (k[i] - 1) * (r[i] - 1);
    out[i] = same ? (in[i] + s[i] - 1) / s[i] : (in[i] - eff + s[i]) / s[i];
    if (out[i] < 0) out[i] = 0;
    int64_t total = (out[i] - 1) * s[i] + eff - in[i];
    pad[i] = same && total > 0 ? total / 2 : 0;
  }
  int64_t dims[4] = {n, out[0], out[1], k[0] * k[1] * d};
  cf_array_t *y = cf_array_new(x->dtype, 4, dims);
  int64_t o = 0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < out[0]; i++)
      for (int64_t j = 0; j < out[1]; j++)
        for (int64_t p = 0; p < k[0]; p++)
          for (int64_t q = 0; q < k[1]; q++)
            for (int64_t ch = 0; ch < d; ch++, o++) {
              int64_t yy = i * s[0] - pad[0] + p * r[0], xx = j * s[1] - pad[1] + q * r[1];
              bool in_img = yy >= 0 && yy < in[0] && xx >= 0 && xx < in[1];
              y->v[o] = in_img ? at4(x, b, yy, xx, ch) : 0;
            }
  return y;
}

static double iou(const cf_array_t *bx, int64_t i, int64_t j) {
  const double *a = bx->v + 4 * i, *b = bx->v + 4 * j;
  double ay0 = fmin(a[0], a[2]), ax0 = fmin(a[1], a[3]), ay1 = fmax(a[0], a[2]),
         ax1 = fmax(a[1], a[3]);
  double by0 = fmin(b[0], b[2]), bx0 = fmin(b[1], b[3]), by1 = fmax(b[0], b[2]),
         bx1 = fmax(b[1], b[3]);
  double aa = (ay1 - ay0) * (ax1 - ax0), ab = (by1 - by0) * (bx1 - bx0);
  if (aa <= 0 || ab <= 0) return 0;
  double inter = fmax(fmin(ay1, by1) - fmax(ay0, by0), 0) *
                 fmax(fmin(ax1, bx1) - fmax(ax0, bx0), 0);
  return inter / (aa + ab - inter);
}

void cf_ref_nms(const cf_array_t *boxes, const cf_array_t *scores, int64_t max_out,
                double iou_t, double score_t, double sigma, bool pad, cf_array_t **selected,
                cf_array_t **scores_out, int64_t *n_valid) {
  int64_t n = scores->n;
  double *score = g_new0(double, n > 0 ? n : 1);
  int64_t *begin = g_new0(int64_t, n > 0 ? n : 1), *sel = g_new0(int64_t, n > 0 ? n : 1);
  double *sel_s = g_new0(double, n > 0 ? n : 1);
  bool *live = g_new0(bool, n > 0 ? n : 1);
  for (int64_t i = 0; i < n; i++) {
    score[i] = scores->v[i];
    live[i] = score[i] > score_t;
  }
  int64_t ns = 0;
  double scale = sigma > 0 ? -0.5 / sigma : 0;
  while (ns < max_out) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++)
      if (live[i] && (best < 0 || score[i] > score[best])) best = i;
    if (best < 0) break;
    live[best] = false;
    double orig = score[best];
    bool hard = false;
    for (int64_t j = ns - 1; j >= begin[best]; j--) {
      double sim = iou(boxes, best, sel[j]);
      if (sigma > 0) {
        score[best] *= exp(scale * sim * sim);
      } else if (sim > iou_t) {
        hard = true;
        break;
      }
      if (score[best] <= score_t) break;
    }
    begin[best] = ns;
    if (hard) continue;
    if (score[best] == orig) {
      sel_s[ns] = score[best];
      sel[ns++] = best;
    } else if (score[best] > score_t) {
      live[best] = true;
    }
  }
  int64_t m = pad ? max_out : ns;
  *selected = cf_array_new(WEFT_DT_INT32, 1, &m);
  if (scores_out) *scores_out = cf_array_new(scores->dtype, 1, &m);
  for (int64_t i = 0; i < ns && i < m; i++) {
    (*selected)->v[i] = (double)sel[i];
    if (scores_out) (*scores_out)->v[i] = sel_s[i];
  }
  if (scores_out) cf_array_round(*scores_out);
  *n_valid = ns;
  g_free(score);
  g_free(begin);
  g_free(sel);
  g_free(sel_s);
  g_free(live);
}

cf_array_t *cf_ref_draw_boxes(const cf_array_t *images, const cf_array_t *boxes,
                              const cf_array_t *colors) {
  /* TensorFlow's default colours: yellow, blue, red, lime, purple, olive, maroon, navy, aqua,
   * fuchsia (RGBA); grey images draw channel 0 at 1. */
  static const double dflt[10][4] = {{1, 1, 0, 1},     {0, 0, 1, 1},   {1, 0, 0, 1},
                                     {0, 1, 0, 1},     {0.5, 0, 0.5, 1}, {0.5, 0.5, 0, 1},
                                     {0.5, 0, 0, 1},   {0, 0, 0.5, 1}, {0, 1, 1, 1},
                                     {1, 0, 1, 1}};
  cf_array_t *y = cf_array_copy(images);
  int64_t nb = images->dims[0], h = images->dims[1], w = images->dims[2], d = images->dims[3];
  int64_t n = boxes->dims[1];
  bool custom = colors != NULL && colors->n > 0;
  int64_t n_colors = custom ? colors->dims[0] : 10;
  for (int64_t b = 0; b < nb; b++)
    for (int64_t k = 0; k < n; k++) {
      const double *bx = boxes->v + (b * n + k) * boxes->dims[2];
      int64_t r0 = (int64_t)((float)bx[0] * (float)(h - 1));
      int64_t c0 = (int64_t)((float)bx[1] * (float)(w - 1));
      int64_t r1 = (int64_t)((float)bx[2] * (float)(h - 1));
      int64_t c1 = (int64_t)((float)bx[3] * (float)(w - 1));
      if (r0 > r1 || c0 > c1 || r0 >= h || r1 < 0 || c0 >= w || c1 < 0) continue;
      double color[4];
      for (int ch = 0; ch < 4 && ch < d; ch++)
        color[ch] = custom ? colors->v[(k % n_colors) * colors->dims[1] + ch]
                           : (d == 1 ? 1 : dflt[k % 10][ch]);
      for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
          bool on_row = (i == r0 || i == r1) && j >= c0 && j <= c1;
          bool on_col = (j == c0 || j == c1) && i >= r0 && i <= r1;
          if (!on_row && !on_col) continue;
          for (int64_t ch = 0; ch < d; ch++) y->v[((b * h + i) * w + j) * d + ch] = color[ch];
        }
    }
  cf_array_round(y);
  return y;
}
