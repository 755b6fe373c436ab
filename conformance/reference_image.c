/* reference_image.c: double-precision references of 2-D convolution (strides, dilations, SAME /
 * VALID / explicit padding, grouped filters) and 2-D max and average pooling, in NHWC or NCHW,
 * with TensorFlow's padding arithmetic: SAME pads total = max((out-1)*stride + eff_k - in, 0),
 * the smaller half before. Average pooling divides by the number of in-bounds elements. */
#include <math.h>
#include <string.h>

#include "reference.h"

void cf_window_resolve(cf_window_t *w, const char *padding, const int64_t *in_hw) {
  for (int i = 0; i < 2; i++) {
    if (w->dilation[i] <= 0) w->dilation[i] = 1;
    int64_t eff = (w->ksize[i] - 1) * w->dilation[i] + 1;
    if (strcmp(padding, "SAME") == 0) {
      int64_t out = (in_hw[i] + w->stride[i] - 1) / w->stride[i];
      int64_t total = (out - 1) * w->stride[i] + eff - in_hw[i];
      if (total < 0) total = 0;
      w->pad_before[i] = total / 2;
      w->pad_after[i] = total - total / 2;
    } else if (strcmp(padding, "VALID") == 0) {
      w->pad_before[i] = w->pad_after[i] = 0;
    }
  }
}

static void layout(const cf_array_t *x, bool nchw, int64_t *n, int64_t *h, int64_t *w,
                   int64_t *c) {
  *n = x->dims[0];
  if (nchw) {
    *c = x->dims[1];
    *h = x->dims[2];
    *w = x->dims[3];
  } else {
    *h = x->dims[1];
    *w = x->dims[2];
    *c = x->dims[3];
  }
}

static int64_t at(bool nchw, int64_t h, int64_t w, int64_t c, int64_t n, int64_t y, int64_t x,
                  int64_t ch) {
  return nchw ? ((n * c + ch) * h + y) * w + x : ((n * h + y) * w + x) * c + ch;
}

static cf_array_t *new_output(const cf_array_t *in, bool nchw, int64_t n, int64_t oh, int64_t ow,
                              int64_t c) {
  int64_t dims[4] = {n, oh, ow, c};
  if (nchw) {
    dims[1] = c;
    dims[2] = oh;
    dims[3] = ow;
  }
  return cf_array_new(in->dtype, 4, dims);
}

static int64_t out_size(int64_t in, int64_t k, int64_t d, int64_t s, int64_t pb, int64_t pa) {
  int64_t eff = (k - 1) * d + 1;
  int64_t span = in + pb + pa - eff;
  return span < 0 ? 0 : span / s + 1;
}

cf_array_t *cf_ref_conv2d(const cf_array_t *input, const cf_array_t *filter,
                          const cf_window_t *w) {
  int64_t n, h, wd, c;
  layout(input, w->nchw, &n, &h, &wd, &c);
  int64_t kh = filter->dims[0], kw = filter->dims[1], fc = filter->dims[2], m = filter->dims[3];
  int64_t groups = fc > 0 ? c / fc : 1;
  int64_t m_per_group = groups > 0 ? m / groups : m;
  int64_t oh = out_size(h, kh, w->dilation[0], w->stride[0], w->pad_before[0], w->pad_after[0]);
  int64_t ow = out_size(wd, kw, w->dilation[1], w->stride[1], w->pad_before[1], w->pad_after[1]);
  cf_array_t *out = new_output(input, w->nchw, n, oh, ow, m);
  for (int64_t b = 0; b < n; b++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t x = 0; x < ow; x++)
        for (int64_t o = 0; o < m; o++) {
          int64_t g = m_per_group ? o / m_per_group : 0;
          double s = 0;
          for (int64_t i = 0; i < kh; i++) {
            int64_t iy = y * w->stride[0] + i * w->dilation[0] - w->pad_before[0];
            if (iy < 0 || iy >= h) continue;
            for (int64_t j = 0; j < kw; j++) {
              int64_t ix = x * w->stride[1] + j * w->dilation[1] - w->pad_before[1];
              if (ix < 0 || ix >= wd) continue;
              for (int64_t k = 0; k < fc; k++) {
                double v = input->v[at(w->nchw, h, wd, c, b, iy, ix, g * fc + k)];
                double f = filter->v[((i * kw + j) * fc + k) * m + o];
                s += v * f;
              }
            }
          }
          out->v[at(w->nchw, oh, ow, m, b, y, x, o)] = s;
        }
  cf_array_round(out);
  return out;
}

/* The flat input indices of output (b, y, x, ch)'s window inside the input, in window order
 * (rows, then columns); returns how many. idx holds ksize[0] * ksize[1]. */
static int64_t window_elems(const cf_window_t *w, int64_t h, int64_t wd, int64_t c, int64_t b,
                            int64_t y, int64_t x, int64_t ch, int64_t *idx) {
  int64_t count = 0;
  for (int64_t i = 0; i < w->ksize[0]; i++) {
    int64_t iy = y * w->stride[0] + i - w->pad_before[0];
    if (iy < 0 || iy >= h) continue;
    for (int64_t j = 0; j < w->ksize[1]; j++) {
      int64_t ix = x * w->stride[1] + j - w->pad_before[1];
      if (ix >= 0 && ix < wd) idx[count++] = at(w->nchw, h, wd, c, b, iy, ix, ch);
    }
  }
  return count;
}

/* The pools forward (dy NULL: the max or mean of each window, NaN poisoning it) or backward
 * (MaxPoolGrad / AvgPoolGrad: dy's element of each window goes to the window's first maximum,
 * later equal values not taking it, or is shared by its in-bounds elements). */
static cf_array_t *pool2d(const cf_array_t *input, const cf_array_t *dy, const cf_window_t *w,
                          bool is_max) {
  int64_t n, h, wd, c;
  layout(input, w->nchw, &n, &h, &wd, &c);
  int64_t oh = out_size(h, w->ksize[0], 1, w->stride[0], w->pad_before[0], w->pad_after[0]);
  int64_t ow = out_size(wd, w->ksize[1], 1, w->stride[1], w->pad_before[1], w->pad_after[1]);
  cf_array_t *out = dy ? cf_array_new(dy->dtype, input->rank, input->dims)
                       : new_output(input, w->nchw, n, oh, ow, c);
  int64_t *idx = g_new(int64_t, w->ksize[0] * w->ksize[1] + 1);
  for (int64_t b = 0; b < n; b++)
    for (int64_t y = 0; y < oh; y++)
      for (int64_t x = 0; x < ow; x++)
        for (int64_t ch = 0; ch < c; ch++) {
          int64_t count = window_elems(w, h, wd, c, b, y, x, ch, idx);
          int64_t o = at(w->nchw, oh, ow, c, b, y, x, ch);
          if (dy) {
            int64_t best = count ? idx[0] : -1;
            for (int64_t k = 0; k < count; k++) {
              if (!is_max) out->v[idx[k]] += dy->v[o] / (double)count;
              else if (input->v[idx[k]] > input->v[best]) best = idx[k];
            }
            if (is_max && best >= 0) out->v[best] += dy->v[o];
            continue;
          }
          double acc = is_max ? -INFINITY : 0;
          bool nan = false;
          for (int64_t k = 0; k < count; k++) {
            double v = input->v[idx[k]];
            nan |= isnan(v);
            acc = is_max ? (v > acc ? v : acc) : acc + v;
          }
          double r = is_max ? (count ? acc : cf_dtype_min(input->dtype)) : acc / (double)count;
          out->v[o] = nan ? NAN : r;
        }
  g_free(idx);
  cf_array_round(out);
  return out;
}

cf_array_t *cf_ref_pool2d_grad(const cf_array_t *input, const cf_array_t *dy,
                               const cf_window_t *w, bool is_max) {
  return pool2d(input, dy, w, is_max);
}

cf_array_t *cf_ref_pool2d(const cf_array_t *input, const cf_window_t *w, bool is_max) {
  return pool2d(input, NULL, w, is_max);
}
