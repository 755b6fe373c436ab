/* reference_conv.c: double-precision references of the ops in cases_conv.c, written from their
 * definitions (direct loops, no im2col): N-d convolution over up to three spatial dims (grouped,
 * depthwise as groups of one channel), its input gradient (each output's contribution scattered
 * back through the window) and filter gradient, 3-D average/max pooling, MaxPoolWithArgmax,
 * FusedBatchNorm and LRN. Layouts channels-last or channels-first. */
#include <math.h>
#include <string.h>

#include "reference_conv.h"

void cf_geom_resolve(cf_geom_t *g, const char *padding) {
  for (int i = 0; i < 3; i++) {
    if (g->k[i] <= 0) g->k[i] = 1;
    if (g->s[i] <= 0) g->s[i] = 1;
    if (g->d[i] <= 0) g->d[i] = 1;
    if (g->in[i] <= 0 && i < 3 - g->ns) g->in[i] = 1;
    int64_t eff = (g->k[i] - 1) * g->d[i] + 1;
    if (strcmp(padding, "SAME") == 0) {
      g->out[i] = (g->in[i] + g->s[i] - 1) / g->s[i];
      int64_t total = (g->out[i] - 1) * g->s[i] + eff - g->in[i];
      if (total < 0) total = 0;
      g->pb[i] = total / 2;
      g->pa[i] = total - total / 2;
    } else {
      if (strcmp(padding, "VALID") == 0) g->pb[i] = g->pa[i] = 0;
      int64_t span = g->in[i] + g->pb[i] + g->pa[i] - eff;
      g->out[i] = span < 0 ? 0 : span / g->s[i] + 1;
    }
  }
}

int cf_geom_dims(const cf_geom_t *g, int64_t n, const int64_t *sp, int64_t c, int64_t *dims) {
  int r = 0;
  dims[r++] = n;
  if (g->cfirst) dims[r++] = c;
  for (int i = 3 - g->ns; i < 3; i++) dims[r++] = sp[i];
  if (!g->cfirst) dims[r++] = c;
  return r;
}

static int64_t idx(const cf_geom_t *g, const int64_t *sp, int64_t channels, int64_t n,
                   int64_t a, int64_t b, int64_t c, int64_t ch) {
  int64_t pix = (a * sp[1] + b) * sp[2] + c, pixels = sp[0] * sp[1] * sp[2];
  return g->cfirst ? (n * channels + ch) * pixels + pix : (n * pixels + pix) * channels + ch;
}

/* Calls the visitor for every (n, output pixel, output channel, window tap inside the input,
 * input channel): the terms of the convolution sum. */
typedef void (*visit_fn)(void *arg, int64_t xi, int64_t fi, int64_t yi);

static void visit(const cf_geom_t *g, visit_fn fn, void *arg) {
  int64_t cg = g->c / g->groups, mg = g->oc / g->groups;
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
      for (int64_t o1 = 0; o1 < g->out[1]; o1++)
        for (int64_t o2 = 0; o2 < g->out[2]; o2++)
          for (int64_t m = 0; m < g->oc; m++) {
            int64_t grp = m / mg, yi = idx(g, g->out, g->oc, n, o0, o1, o2, m);
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)
              for (int64_t k1 = 0; k1 < g->k[1]; k1++)
                for (int64_t k2 = 0; k2 < g->k[2]; k2++) {
                  int64_t i0 = o0 * g->s[0] + k0 * g->d[0] - g->pb[0];
                  int64_t i1 = o1 * g->s[1] + k1 * g->d[1] - g->pb[1];
                  int64_t i2 = o2 * g->s[2] + k2 * g->d[2] - g->pb[2];
                  if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] || i2 < 0 ||
                      i2 >= g->in[2])
                    continue;
                  for (int64_t ch = 0; ch < cg; ch++) {
                    int64_t xi = idx(g, g->in, g->c, n, i0, i1, i2, grp * cg + ch);
                    /* filter [k..., cg, oc]; depthwise [k..., c, mult] is the same memory. */
                    int64_t fi = ((k0 * g->k[1] + k1) * g->k[2] + k2) * cg * g->oc + ch * g->oc + m;
                    fn(arg, xi, fi, yi);
                  }
                }
          }
}

typedef struct terms {
  const cf_array_t *a, *b;
  cf_array_t *out;
  int which; /* 0: y += x f, 1: dx += dy f, 2: df += x dy */
} terms_t;

static void add_term(void *arg, int64_t xi, int64_t fi, int64_t yi) {
  terms_t *t = arg;
  if (t->which == 0)
    t->out->v[yi] += t->a->v[xi] * t->b->v[fi];
  else if (t->which == 1)
    t->out->v[xi] += t->a->v[yi] * t->b->v[fi];
  else
    t->out->v[fi] += t->a->v[xi] * t->b->v[yi];
}

cf_array_t *cf_ref_conv_nd(const cf_array_t *x, const cf_array_t *f, const cf_geom_t *g) {
  int64_t dims[5];
  int r = cf_geom_dims(g, g->n, g->out, g->oc, dims);
  terms_t t = {x, f, cf_array_new(x->dtype, r, dims), 0};
  visit(g, add_term, &t);
  cf_array_round(t.out);
  return t.out;
}

cf_array_t *cf_ref_conv_nd_backprop_input(const cf_array_t *dy, const cf_array_t *f,
                                          const cf_geom_t *g) {
  int64_t dims[5];
  int r = cf_geom_dims(g, g->n, g->in, g->c, dims);
  terms_t t = {dy, f, cf_array_new(dy->dtype, r, dims), 1};
  visit(g, add_term, &t);
  cf_array_round(t.out);
  return t.out;
}

cf_array_t *cf_ref_conv_nd_backprop_filter(const cf_array_t *x, const cf_array_t *dy,
                                           const cf_geom_t *g, int rank, const int64_t *fdims) {
  terms_t t = {x, dy, cf_array_new(x->dtype, rank, fdims), 2};
  visit(g, add_term, &t);
  cf_array_round(t.out);
  return t.out;
}

/* The pools forward (dy NULL: each window's max, NaN poisoning it, or mean over its in-bounds
 * elements) or backward (AvgPool3DGrad: dy shared by those elements; MaxPool3DGrad: dy to the
 * first element equal to the window's max, or its first NaN). */
static cf_array_t *pool_nd(const cf_array_t *x, const cf_array_t *dy, const cf_geom_t *g,
                           bool is_max) {
  int64_t dims[5];
  int r = cf_geom_dims(g, g->n, g->out, g->c, dims);
  cf_array_t *y =
      dy ? cf_array_new(dy->dtype, x->rank, x->dims) : cf_array_new(x->dtype, r, dims);
  int64_t *in = g_new(int64_t, g->k[0] * g->k[1] * g->k[2] + 1);
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
      for (int64_t o1 = 0; o1 < g->out[1]; o1++)
        for (int64_t o2 = 0; o2 < g->out[2]; o2++)
          for (int64_t ch = 0; ch < g->c; ch++) {
            int64_t count = 0;
            for (int64_t i0 = o0 * g->s[0] - g->pb[0]; i0 < o0 * g->s[0] - g->pb[0] + g->k[0];
                 i0++)
              for (int64_t i1 = o1 * g->s[1] - g->pb[1];
                   i1 < o1 * g->s[1] - g->pb[1] + g->k[1]; i1++)
                for (int64_t i2 = o2 * g->s[2] - g->pb[2];
                     i2 < o2 * g->s[2] - g->pb[2] + g->k[2]; i2++) {
                  if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] || i2 < 0 ||
                      i2 >= g->in[2])
                    continue;
                  in[count++] = idx(g, g->in, g->c, n, i0, i1, i2, ch);
                }
            double acc = is_max ? -INFINITY : 0;
            bool nan = false;
            for (int64_t k = 0; k < count; k++) {
              double v = x->v[in[k]];
              if (isnan(v)) nan = true;
              acc = is_max ? fmax(acc, v) : acc + v;
            }
            int64_t o = idx(g, g->out, g->c, n, o0, o1, o2, ch);
            if (!dy) {
              y->v[o] = is_max ? (nan ? NAN : acc) : acc / (double)(count ? count : 1);
              continue;
            }
            for (int64_t k = 0; k < count; k++) {
              if (!is_max) {
                y->v[in[k]] += dy->v[o] / (double)count;
                continue;
              }
              double v = x->v[in[k]];
              if (nan ? isnan(v) : v == acc) {
                y->v[in[k]] += dy->v[o];
                break;
              }
            }
          }
  g_free(in);
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_pool_nd(const cf_array_t *x, const cf_geom_t *g, bool is_max) {
  return pool_nd(x, NULL, g, is_max);
}

cf_array_t *cf_ref_pool_nd_grad(const cf_array_t *x, const cf_array_t *dy, const cf_geom_t *g,
                                bool is_max) {
  return pool_nd(x, dy, g, is_max);
}

void cf_ref_max_pool_argmax(const cf_array_t *x, const cf_geom_t *g, bool with_batch,
                            cf_array_t **out, cf_array_t **argmax) {
  int64_t dims[4] = {g->n, g->out[1], g->out[2], g->c};
  *out = cf_array_new(x->dtype, 4, dims);
  *argmax = cf_array_new(WEFT_DT_INT64, 4, dims);
  int64_t H = g->in[1], W = g->in[2], C = g->c;
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t oy = 0; oy < g->out[1]; oy++)
      for (int64_t ox = 0; ox < g->out[2]; ox++)
        for (int64_t ch = 0; ch < C; ch++) {
          /* The first in-bounds element, then any strictly greater one. */
          int64_t best = -1;
          for (int64_t iy = oy * g->s[1] - g->pb[1]; iy < oy * g->s[1] - g->pb[1] + g->k[1]; iy++)
            for (int64_t ix = ox * g->s[2] - g->pb[2]; ix < ox * g->s[2] - g->pb[2] + g->k[2];
                 ix++) {
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              int64_t i = ((n * H + iy) * W + ix) * C + ch;
              if (best < 0 || x->v[best] < x->v[i]) best = i;
            }
          int64_t o = ((n * g->out[1] + oy) * g->out[2] + ox) * C + ch;
          (*out)->v[o] = x->v[best];
          (*argmax)->v[o] = (double)(with_batch ? best : best - n * H * W * C);
        }
}

void cf_ref_fused_batch_norm(const cf_array_t *x, const cf_array_t *const p[4], bool cfirst,
                             double eps, double factor, bool training, cf_array_t *out[5]) {
  int64_t C = x->dims[cfirst ? 1 : x->rank - 1], inner = 1;
  for (int d = 2; cfirst && d < x->rank; d++) inner *= x->dims[d];
  int64_t rest = C ? x->n / C : 0;
  out[0] = cf_array_new_like(x, x->dtype);
  for (int i = 1; i < 5; i++) out[i] = cf_array_new(p[0]->dtype, 1, &C);
  for (int64_t c = 0; c < C; c++) {
    double mean = 0, var = 0;
    if (training) {
      for (int64_t i = 0; i < x->n; i++)
        if ((cfirst ? (i / inner) % C : i % C) == c) mean += x->v[i];
      mean /= (double)rest;
      for (int64_t i = 0; i < x->n; i++)
        if ((cfirst ? (i / inner) % C : i % C) == c) var += (x->v[i] - mean) * (x->v[i] - mean);
      var /= (double)rest;
    } else {
      mean = p[2]->v[c];
      var = p[3]->v[c];
    }
    for (int64_t i = 0; i < x->n; i++)
      if ((cfirst ? (i / inner) % C : i % C) == c)
        out[0]->v[i] = (x->v[i] - mean) / sqrt(var + eps) * p[0]->v[c] + p[1]->v[c];
    double unbiased = var * (double)rest / (double)(rest > 1 ? rest - 1 : 1);
    out[1]->v[c] = training ? (1 - factor) * p[2]->v[c] + factor * mean : mean;
    out[2]->v[c] = training ? (1 - factor) * p[3]->v[c] + factor * unbiased : var;
    out[3]->v[c] = mean;
    out[4]->v[c] = var;
  }
  for (int i = 0; i < 5; i++) cf_array_round(out[i]);
}

/* LRN's bias + alpha * (sum of the squares of x within radius of element i's depth). */
static double lrn_norm(const cf_array_t *x, int64_t i, int64_t radius, double bias,
                       double alpha) {
  int64_t C = x->dims[3], c = i % C, row = i - c;
  double sum = 0;
  for (int64_t k = c - radius; k <= c + radius; k++)
    if (k >= 0 && k < C) sum += x->v[row + k] * x->v[row + k];
  return bias + alpha * sum;
}

cf_array_t *cf_ref_lrn(const cf_array_t *x, int64_t radius, double bias, double alpha,
                       double beta) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  for (int64_t i = 0; i < x->n; i++)
    y->v[i] = x->v[i] / pow(lrn_norm(x, i, radius, bias, alpha), beta);
  cf_array_round(y);
  return y;
}

/* With N_j = bias + alpha * sum of x_k^2 over j's window and y_j = x_j N_j^-beta:
 * dy_j/dx_k = [j == k] N_j^-beta - 2 alpha beta x_j x_k N_j^(-beta-1). */
cf_array_t *cf_ref_lrn_grad(const cf_array_t *dy, const cf_array_t *x, int64_t radius,
                            double bias, double alpha, double beta) {
  cf_array_t *dx = cf_array_new_like(x, dy->dtype);
  int64_t C = x->dims[3];
  for (int64_t i = 0; i < x->n; i++) {
    int64_t j = i % C, row = i - j;
    double norm = lrn_norm(x, i, radius, bias, alpha);
    for (int64_t k = j - radius; k <= j + radius; k++) {
      if (k < 0 || k >= C) continue;
      double d = -2 * alpha * beta * x->v[i] * x->v[row + k] * pow(norm, -beta - 1);
      if (k == j) d += pow(norm, -beta);
      dx->v[row + k] += dy->v[i] * d;
    }
  }
  cf_array_round(dx);
  return dx;
}

void cf_ref_fused_batch_norm_grad(const cf_array_t *dy, const cf_array_t *x,
                                  const cf_array_t *scale, const cf_array_t *mean,
                                  const cf_array_t *var, bool cfirst, double eps, bool training,
                                  cf_array_t *out[3]) {
  int64_t C = x->dims[cfirst ? 1 : x->rank - 1], inner = 1;
  for (int d = 2; cfirst && d < x->rank; d++) inner *= x->dims[d];
  int64_t rest = C ? x->n / C : 0;
  out[0] = cf_array_new_like(x, x->dtype);
  for (int i = 1; i < 3; i++) out[i] = cf_array_new(mean->dtype, 1, &C);
  for (int64_t c = 0; c < C; c++) {
    double m = mean->v[c], r = 1 / sqrt(var->v[c] + eps), sum_dy = 0, sum_dy_xc = 0;
    for (int64_t i = 0; i < x->n; i++)
      if ((cfirst ? (i / inner) % C : i % C) == c) {
        sum_dy += dy->v[i];
        sum_dy_xc += dy->v[i] * (x->v[i] - m);
      }
    for (int64_t i = 0; i < x->n; i++)
      if ((cfirst ? (i / inner) % C : i % C) == c) {
        double g = dy->v[i];
        if (training)
          g -= sum_dy / (double)rest + (x->v[i] - m) * r * r * sum_dy_xc / (double)rest;
        out[0]->v[i] = scale->v[c] * r * g;
      }
    out[1]->v[c] = sum_dy_xc * r;
    out[2]->v[c] = sum_dy;
  }
  for (int i = 0; i < 3; i++) cf_array_round(out[i]);
}
