/* cpu_conv.c: the CPU kernels of the convolution, pooling and mirror-padding ops: Conv2D (im2col
 * + OpenBLAS GEMM per batch and filter group for float, double, half and bfloat16, float32 with
 * one group in cpu_conv_fast.c, NCHW with few taps or filters direct in cpu_conv_nchw.c, other
 * NCHW transposed to NHWC and back; a direct loop with wrapping
 * arithmetic for int32), MaxPool (every real dtype, NaN propagates), AvgPool (dividing by the
 * in-bounds count, TensorFlow's SAME semantics; float32 pools in cpu_pool_fast.c, NCHW
 * transposed like Conv2D), MaxPoolV2 (ksize and strides as inputs), their gradients MaxPoolGrad,
 * MaxPoolGradV2 and AvgPoolGrad and MaxPoolGrad's MaxPoolGradGrad (the float dtypes) and
 * MirrorPad (REFLECT and SYMMETRIC, any dtype) and its gradient MirrorPadGrad. NHWC and NCHW;
 * SAME, VALID and EXPLICIT padding; Conv2D dilations. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * Window geometry shared by Conv2D and the pools. */

typedef struct geom {
  bool nchw;
  int64_t n, h, w, c;          /* input */
  int64_t oh, ow, oc;          /* output spatial and channels */
  int64_t kh, kw;              /* window or filter */
  int64_t sh, sw, dh, dw;      /* strides, dilations */
  int64_t pt, pb, pl, pr;      /* paddings */
  int64_t in_s[4], out_s[4];   /* strides of n, y, x, c in elements */
} geom_t;

static void layout_strides(bool nchw, int64_t h, int64_t w, int64_t c, int64_t *s) {
  if (nchw) {
    s[3] = h * w; /* c */
    s[1] = w;     /* y */
    s[2] = 1;     /* x */
    s[0] = c * h * w;
  } else {
    s[3] = 1;
    s[2] = c;
    s[1] = w * c;
    s[0] = h * w * c;
  }
}

/* strides/ksize/dilations: 4 values, 1 in the batch and channel positions. MaxPoolV2 and
 * MaxPoolGradV2 have no ksize and strides attrs: theirs are their last two inputs. */
static weft_status_t *hw_list(weft_kernel_ctx_t *ctx, const char *name, bool nchw, bool required,
                              int64_t *a, int64_t *b) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  *a = *b = 1;
  const int64_t *v = NULL;
  size_t n = 0;
  int64_t from_input[4];
  if (!H->attr_has(attrs, name)) {
    bool ksize = strcmp(name, "ksize") == 0;
    if (!required) return NULL;
    if (!ksize && strcmp(name, "strides") != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "attribute %s is required", name);
    weft_tensor_view_t t;
    int64_t count = 0;
    WEFT_RETURN_IF_ERROR(
        weft__cpu_input(ctx, H->kernel_num_inputs(ctx) - (ksize ? 2 : 1), &t));
    if (t.rank != 1 || t.num_elements != 4)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be a vector of 4 values", name);
    WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &t, name, from_input, 4, &count));
    v = from_input;
    n = (size_t)count;
  } else {
    WEFT_RETURN_IF_ERROR(H->attr_int_list(attrs, name, &v, &n));
  }
  if (n == 0 && !required) return NULL;
  if (n != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must have 4 values, got %zu", name, n);
  int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2, ic = nchw ? 1 : 3;
  if (v[0] != 1 || v[ic] != 1)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                           "%s in the batch and depth dimensions must be 1", name);
  if (v[ih] < 1 || v[iw] < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be positive", name);
  *a = v[ih];
  *b = v[iw];
  return NULL;
}

/* Fills g from the input view, the window (kh, kw) and the attrs; out channels set by caller. */
static weft_status_t *geom_init(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x, geom_t *g,
                                bool dilations) {
  if (x->rank != 4) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be 4-dimensional, got %s",
                           weft__cpu_shape_str(x->rank, x->dims, s, sizeof s));
  }
  g->nchw = weft__cpu_attr_is(ctx, "data_format", "NCHW", "NHWC");
  g->n = x->dims[0];
  g->h = x->dims[g->nchw ? 2 : 1];
  g->w = x->dims[g->nchw ? 3 : 2];
  g->c = x->dims[g->nchw ? 1 : 3];
  WEFT_RETURN_IF_ERROR(hw_list(ctx, "strides", g->nchw, true, &g->sh, &g->sw));
  g->dh = g->dw = 1;
  if (dilations) WEFT_RETURN_IF_ERROR(hw_list(ctx, "dilations", g->nchw, false, &g->dh, &g->dw));
  int64_t eh = (g->kh - 1) * g->dh + 1, ew = (g->kw - 1) * g->dw + 1;
  g->pt = g->pb = g->pl = g->pr = 0;
  if (weft__cpu_attr_is(ctx, "padding", "SAME", "VALID")) {
    g->oh = (g->h + g->sh - 1) / g->sh;
    g->ow = (g->w + g->sw - 1) / g->sw;
    int64_t th = (g->oh - 1) * g->sh + eh - g->h, tw = (g->ow - 1) * g->sw + ew - g->w;
    if (th < 0) th = 0;
    if (tw < 0) tw = 0;
    g->pt = th / 2;
    g->pb = th - g->pt;
    g->pl = tw / 2;
    g->pr = tw - g->pl;
  } else {
    if (weft__cpu_attr_is(ctx, "padding", "EXPLICIT", "VALID")) {
      const int64_t *p = NULL;
      size_t n = 0;
      WEFT_RETURN_IF_ERROR(H->attr_int_list(H->kernel_attrs(ctx), "explicit_paddings", &p, &n));
      if (n != 8)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "explicit_paddings must have 8 values, got %zu", n);
      int ih = g->nchw ? 2 : 1, iw = g->nchw ? 3 : 2;
      g->pt = p[2 * ih];
      g->pb = p[2 * ih + 1];
      g->pl = p[2 * iw];
      g->pr = p[2 * iw + 1];
      if (g->pt < 0 || g->pb < 0 || g->pl < 0 || g->pr < 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "explicit_paddings must be >= 0");
    }
    int64_t sh = g->h + g->pt + g->pb - eh, sw = g->w + g->pl + g->pr - ew;
    g->oh = sh < 0 ? 0 : sh / g->sh + 1;
    g->ow = sw < 0 ? 0 : sw / g->sw + 1;
  }
  layout_strides(g->nchw, g->h, g->w, g->c, g->in_s);
  return NULL;
}

/* The output dims in the layout's order; sets g->out_s. */
static void output_dims(geom_t *g, int64_t *dims) {
  dims[0] = g->n;
  dims[g->nchw ? 2 : 1] = g->oh;
  dims[g->nchw ? 3 : 2] = g->ow;
  dims[g->nchw ? 1 : 3] = g->oc;
  layout_strides(g->nchw, g->oh, g->ow, g->oc, g->out_s);
}

static weft_status_t *alloc_output(weft_kernel_ctx_t *ctx, geom_t *g, weft_dtype_t dtype,
                                   weft_tensor_view_t *y) {
  int64_t dims[4];
  output_dims(g, dims);
  return weft__cpu_output(ctx, 0, dtype, 4, dims, y);
}

/* ---------------------------------------------------------------------------------------------
 * Conv2D */

typedef struct conv_job {
  const geom_t *g;
  int64_t cg, mg, k;      /* channels per group, filters per group, im2col width */
  int64_t group, batch;
  bool dbl;
  const void *xin;        /* NHWC input in float or double */
  void *cols;             /* [oh*ow, k] */
} conv_job_t;

/* One im2col row per output pixel: the window's values, zero where it hangs over the padding. */
static void im2col_range(void *arg, int64_t b, int64_t e) {
  const conv_job_t *j = arg;
  const geom_t *g = j->g;
  for (int64_t r = b; r < e; r++) {
    int64_t oy = r / g->ow, ox = r % g->ow;
    int64_t col = 0;
    for (int64_t i = 0; i < g->kh; i++) {
      int64_t iy = oy * g->sh + i * g->dh - g->pt;
      for (int64_t jx = 0; jx < g->kw; jx++) {
        int64_t ix = ox * g->sw + jx * g->dw - g->pl;
        bool in = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w;
        int64_t base = ((j->batch * g->h + iy) * g->w + ix) * g->c + j->group * j->cg;
        if (j->dbl) {
          double *dst = (double *)j->cols + r * j->k + col;
          const double *src = (const double *)j->xin + base;
          for (int64_t ch = 0; ch < j->cg; ch++) dst[ch] = in ? src[ch] : 0.0;
        } else {
          float *dst = (float *)j->cols + r * j->k + col;
          const float *src = (const float *)j->xin + base;
          for (int64_t ch = 0; ch < j->cg; ch++) dst[ch] = in ? src[ch] : 0.0f;
        }
        col += j->cg;
      }
    }
  }
}

/* int32 convolution, one output row (n, y) at a time; sums wrap like TensorFlow's. */
typedef struct conv_int_job {
  const geom_t *g;
  int64_t cg, mg;
  const int32_t *x, *f;
  int32_t *y;
} conv_int_job_t;

static void conv_int_range(void *arg, int64_t b, int64_t e) {
  const conv_int_job_t *j = arg;
  const geom_t *g = j->g;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->oh, oy = r % g->oh;
    for (int64_t ox = 0; ox < g->ow; ox++)
      for (int64_t m = 0; m < g->oc; m++) {
        int64_t grp = m / j->mg;
        uint32_t s = 0;
        for (int64_t i = 0; i < g->kh; i++) {
          int64_t iy = oy * g->sh + i * g->dh - g->pt;
          if (iy < 0 || iy >= g->h) continue;
          for (int64_t q = 0; q < g->kw; q++) {
            int64_t ix = ox * g->sw + q * g->dw - g->pl;
            if (ix < 0 || ix >= g->w) continue;
            for (int64_t ch = 0; ch < j->cg; ch++) {
              int64_t xi = n * g->in_s[0] + iy * g->in_s[1] + ix * g->in_s[2] +
                           (grp * j->cg + ch) * g->in_s[3];
              int64_t fi = ((i * g->kw + q) * j->cg + ch) * g->oc + m;
              s += (uint32_t)j->x[xi] * (uint32_t)j->f[fi];
            }
          }
        }
        j->y[n * g->out_s[0] + oy * g->out_s[1] + ox * g->out_s[2] + m * g->out_s[3]] =
            (int32_t)s;
      }
  }
}

/* Conv2D, and _FusedConv2D's convolution (ep: its epilogue, for float32 NHWC only). */
/* cache: the node's packed constant filter (cpu_packed.c), NULL for none. */
static weft_status_t *conv2d_run(weft_kernel_ctx_t *ctx, const weft_cpu_epilogue_t *ep,
                                 weft_cpu_packed_cache_t *cache) {
  weft_tensor_view_t x, f, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &f));
  if (f.rank != 4) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "filter must be 4-dimensional, got %s",
                           weft__cpu_shape_str(f.rank, f.dims, s, sizeof s));
  }
  geom_t g;
  memset(&g, 0, sizeof g);
  g.kh = f.dims[0];
  g.kw = f.dims[1];
  WEFT_RETURN_IF_ERROR(geom_init(ctx, &x, &g, true));
  int64_t cg = f.dims[2], m = f.dims[3];
  if (cg <= 0 || g.c % cg != 0 || m % (g.c / cg) != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "input depth %lld must be a multiple of the filter's depth %lld, and "
                           "the filter count %lld a multiple of the number of groups",
                           (long long)g.c, (long long)cg, (long long)m);
  int64_t groups = g.c / cg, mg = m / groups;
  g.oc = m;
  WEFT_RETURN_IF_ERROR(alloc_output(ctx, &g, x.dtype, &y));
  if (y.num_elements == 0) return NULL;
  if (x.dtype == WEFT_DT_INT32) {
    conv_int_job_t j = {&g, cg, mg, x.data, f.data, y.data};
    weft__cpu_parallel(ctx, g.n * g.oh, g.ow * m * g.kh * g.kw * cg + 1, conv_int_range, &j);
    return NULL;
  }
  if (x.dtype == WEFT_DT_FLOAT && groups == 1 && g.kh * g.kw * cg <= INT32_MAX &&
      m <= INT32_MAX) {
    weft_cpu_conv2d_t c2 = {g.n,  g.h,  g.w,  g.c,  g.oh, g.ow, m,   g.kh,
                            g.kw, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl};
    if (!g.nchw) return weft__cpu_conv2d_f32_packed(ctx, &c2, x.data, f.data, y.data, ep, cache);
    /* Few taps or filters: the direct NCHW loop (cpu_conv_nchw.c). */
    if (weft__cpu_conv2d_nchw_direct(&c2))
      return weft__cpu_conv2d_nchw_f32(ctx, &c2, x.data, f.data, y.data, ep);
    /* NCHW runs the NHWC kernel between two transposes (cpu_nchw.c); the epilogue, per output
     * channel, finishes the NHWC tiles as it does there. */
    float *xt = NULL, *yt = NULL;
    WEFT_RETURN_IF_ERROR(weft__cpu_transpose_f32_scratch(ctx, g.n, g.c, g.h * g.w, x.data, &xt));
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)y.num_elements * sizeof(float),
                                           (void **)&yt));
    WEFT_RETURN_IF_ERROR(weft__cpu_conv2d_f32_packed(ctx, &c2, xt, f.data, yt, ep, cache));
    weft__cpu_transpose_f32(ctx, g.n, g.oh * g.ow, m, yt, y.data);
    return NULL;
  }
  bool dbl = x.dtype == WEFT_DT_DOUBLE;
  size_t es = dbl ? sizeof(double) : sizeof(float);
  int64_t k = g.kh * g.kw * cg, pixels = g.oh * g.ow;
  /* The input as NHWC float/double, the filter as float/double, the output NHWC. */
  void *xin = NULL, *fin = NULL, *yout = NULL, *cols = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)x.num_elements * es + 1, &xin));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)f.num_elements * es + 1, &fin));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)(g.n * pixels * m) * es + 1, &yout));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)(pixels * k) * es + 1, &cols));
  for (int64_t n = 0; n < g.n; n++)
    for (int64_t yy = 0; yy < g.h; yy++)
      for (int64_t xx = 0; xx < g.w; xx++)
        for (int64_t c = 0; c < g.c; c++) {
          int64_t src = n * g.in_s[0] + yy * g.in_s[1] + xx * g.in_s[2] + c * g.in_s[3];
          int64_t dst = ((n * g.h + yy) * g.w + xx) * g.c + c;
          if (dbl)
            ((double *)xin)[dst] = weft__cpu_load_f(x.dtype, x.data, src);
          else
            ((float *)xin)[dst] = (float)weft__cpu_load_f(x.dtype, x.data, src);
        }
  for (int64_t i = 0; i < f.num_elements; i++) {
    if (dbl)
      ((double *)fin)[i] = weft__cpu_load_f(f.dtype, f.data, i);
    else
      ((float *)fin)[i] = (float)weft__cpu_load_f(f.dtype, f.data, i);
  }
  conv_job_t j = {&g, cg, mg, k, 0, 0, dbl, xin, cols};
  for (int64_t n = 0; n < g.n; n++)
    for (int64_t grp = 0; grp < groups; grp++) {
      j.batch = n;
      j.group = grp;
      weft__cpu_parallel(ctx, pixels, k + 1, im2col_range, &j);
      if (k == 0) {
        for (int64_t p = 0; p < pixels; p++)
          for (int64_t q = 0; q < mg; q++) {
            int64_t o = (n * pixels + p) * m + grp * mg + q;
            if (dbl)
              ((double *)yout)[o] = 0;
            else
              ((float *)yout)[o] = 0;
          }
        continue;
      }
      weft__cpu_blas_gemm(ctx, dbl, false, false, pixels, mg, k, cols, k,
                          (const char *)fin + (size_t)(grp * mg) * es, m,
                          (char *)yout + (size_t)(n * pixels * m + grp * mg) * es, m);
    }
  /* The epilogue (float only) on the channels-last result, so that it is per channel in NCHW
   * too. */
  if (ep) weft__cpu_epilogue_apply(ep, yout, g.n * pixels, m, m, 0, false);
  for (int64_t n = 0; n < g.n; n++)
    for (int64_t p = 0; p < pixels; p++)
      for (int64_t o = 0; o < m; o++) {
        int64_t src = (n * pixels + p) * m + o;
        int64_t dst = n * g.out_s[0] + (p / g.ow) * g.out_s[1] + (p % g.ow) * g.out_s[2] +
                      o * g.out_s[3];
        weft__cpu_store_f(y.dtype, y.data, dst, dbl ? ((double *)yout)[src] : ((float *)yout)[src]);
      }
  return NULL;
}

static weft_status_t *k_conv2d(weft_kernel_ctx_t *ctx, void *state) {
  return conv2d_run(ctx, NULL, state);
}

weft_status_t *weft__cpu_conv2d_with_epilogue(weft_kernel_ctx_t *ctx,
                                              const weft_cpu_epilogue_t *ep,
                                              weft_cpu_packed_cache_t *cache) {
  return conv2d_run(ctx, ep, cache);
}


/* ---------------------------------------------------------------------------------------------
 * MaxPool, AvgPool */

typedef struct pool_job {
  const geom_t *g;
  const void *x;
  void *y;
  weft_dtype_t dt;
  bool is_max;
} pool_job_t;

/* Window bounds of output (oy, ox), clipped to the input. */
static void window(const geom_t *g, int64_t oy, int64_t ox, int64_t *y0, int64_t *y1, int64_t *x0,
                   int64_t *x1) {
  *y0 = oy * g->sh - g->pt;
  *x0 = ox * g->sw - g->pl;
  *y1 = *y0 + g->kh;
  *x1 = *x0 + g->kw;
  if (*y0 < 0) *y0 = 0;
  if (*x0 < 0) *x0 = 0;
  if (*y1 > g->h) *y1 = g->h;
  if (*x1 > g->w) *x1 = g->w;
}

#define MAXPOOL_INT(DT, T, LOWEST)                                                         \
  case DT: {                                                                               \
    const T *x = j->x;                                                                     \
    T *y = j->y;                                                                           \
    T best = LOWEST;                                                                       \
    for (int64_t yy = y0; yy < y1; yy++)                                                   \
      for (int64_t xx = x0; xx < x1; xx++) {                                               \
        T v = x[base + yy * g->in_s[1] + xx * g->in_s[2]];                                  \
        if (v > best) best = v;                                                            \
      }                                                                                    \
    y[out] = best;                                                                         \
    break;                                                                                 \
  }

static void pool_range(void *arg, int64_t b, int64_t e) {
  const pool_job_t *j = arg;
  const geom_t *g = j->g;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->oh, oy = r % g->oh;
    for (int64_t ox = 0; ox < g->ow; ox++)
      for (int64_t c = 0; c < g->c; c++) {
        int64_t y0, y1, x0, x1;
        window(g, oy, ox, &y0, &y1, &x0, &x1);
        int64_t base = n * g->in_s[0] + c * g->in_s[3];
        int64_t out = n * g->out_s[0] + oy * g->out_s[1] + ox * g->out_s[2] + c * g->out_s[3];
        switch (j->dt) {
          MAXPOOL_INT(WEFT_DT_INT8, int8_t, INT8_MIN)
          MAXPOOL_INT(WEFT_DT_INT16, int16_t, INT16_MIN)
          MAXPOOL_INT(WEFT_DT_INT32, int32_t, INT32_MIN)
          MAXPOOL_INT(WEFT_DT_INT64, int64_t, INT64_MIN)
          MAXPOOL_INT(WEFT_DT_UINT8, uint8_t, 0)
          MAXPOOL_INT(WEFT_DT_UINT16, uint16_t, 0)
          default: {
            /* Floats: max with NaN winning, or the mean of the in-bounds values. */
            double acc = j->is_max ? -INFINITY : 0.0;
            int64_t count = 0;
            for (int64_t yy = y0; yy < y1; yy++)
              for (int64_t xx = x0; xx < x1; xx++) {
                double v = weft__cpu_load_f(j->dt, j->x, base + yy * g->in_s[1] + xx * g->in_s[2]);
                if (j->is_max)
                  acc = (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
                else
                  acc += v;
                count++;
              }
            weft__cpu_store_f(j->dt, j->y, out,
                              j->is_max ? acc : acc / (double)(count ? count : 1));
            break;
          }
        }
      }
  }
}

static weft_status_t *k_pool(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  geom_t g;
  memset(&g, 0, sizeof g);
  bool nchw = weft__cpu_attr_is(ctx, "data_format", "NCHW", "NHWC");
  WEFT_RETURN_IF_ERROR(hw_list(ctx, "ksize", nchw, true, &g.kh, &g.kw));
  WEFT_RETURN_IF_ERROR(geom_init(ctx, &x, &g, false));
  g.oc = g.c;
  WEFT_RETURN_IF_ERROR(alloc_output(ctx, &g, x.dtype, &y));
  if (y.num_elements == 0) return NULL;
  if (x.dtype == WEFT_DT_FLOAT) {
    weft_cpu_conv2d_t f = {g.n,  g.h,  g.w,  g.c, g.oh, g.ow, g.c, g.kh,
                           g.kw, g.sh, g.sw, 1,   1,    g.pt, g.pl};
    if (!g.nchw) {
      weft__cpu_pool2d_f32(ctx, &f, is_max, x.data, y.data);
      return NULL;
    }
    /* NCHW: each channel's plane is an NHWC image of one channel, the pool running along its
     * rows (cpu_pool_fast.c), with no transposes. A column plane (Keras's channels-first 1-D
     * pools expand to [n, c, w, 1]) is the same memory as a row one: pooled along its length,
     * not one pixel per row. */
    weft_cpu_conv2d_t p = {g.n * g.c, g.h, g.w, 1,    g.oh, g.ow, 1,   g.kh,
                           g.kw,      g.sh, g.sw, 1,   1,    g.pt, g.pl};
    if (g.w == 1 && g.ow == 1)
      p = (weft_cpu_conv2d_t){g.n * g.c, 1, g.h, 1, 1, g.oh, 1, g.kw,
                              g.kh,      g.sw, g.sh, 1, 1, g.pl, g.pt};
    weft__cpu_pool2d_f32(ctx, &p, is_max, x.data, y.data);
    return NULL;
  }
  pool_job_t j = {&g, x.data, y.data, x.dtype, is_max};
  weft__cpu_parallel(ctx, g.n * g.oh, g.ow * g.c * g.kh * g.kw + 1, pool_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MaxPoolGrad, AvgPoolGrad: each output's gradient goes back to its window. One work unit is
 * one (image, channel) plane, the only writes two windows can share. MaxPool's gradient goes to
 * the first maximum in window order (rows, then columns), as TensorFlow's CPU kernel picks it;
 * AvgPool's is spread over the in-bounds elements its forward mean divided by. float32 NHWC
 * takes cpu_pool_grad_fast.c's channel loops instead, whose results are these bit for bit. */

typedef struct pool_grad_job {
  const geom_t *g;
  const void *x, *dy;
  void *dx;
  weft_dtype_t dt, acc_dt; /* of x and dy; of dx (double for the 16-bit floats) */
  bool is_max;
  bool grad_grad; /* MaxPoolGradGrad: dy has x's shape, dx the pooled one */
} pool_grad_job_t;

/* Where in x (plane offset base) the window's first maximum lies, rows then columns; a NaN
 * counts as the maximum, as in MaxPool. */
static int64_t window_argmax(const geom_t *g, const void *x, weft_dtype_t dt, int64_t base,
                             int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  int64_t best_at = base + y0 * g->in_s[1] + x0 * g->in_s[2];
  double best = weft__cpu_load_f(dt, x, best_at);
  for (int64_t yy = y0; yy < y1; yy++)
    for (int64_t xx = x0; xx < x1; xx++) {
      int64_t at = base + yy * g->in_s[1] + xx * g->in_s[2];
      double v = weft__cpu_load_f(dt, x, at);
      if (v > best || (isnan(v) && !isnan(best))) {
        best = v;
        best_at = at;
      }
    }
  return best_at;
}

static void pool_grad_range(void *arg, int64_t b, int64_t e) {
  const pool_grad_job_t *j = arg;
  const geom_t *g = j->g;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->c, c = r % g->c;
    int64_t base = n * g->in_s[0] + c * g->in_s[3];
    for (int64_t oy = 0; oy < g->oh; oy++)
      for (int64_t ox = 0; ox < g->ow; ox++) {
        int64_t y0, y1, x0, x1;
        window(g, oy, ox, &y0, &y1, &x0, &x1);
        int64_t o = n * g->out_s[0] + oy * g->out_s[1] + ox * g->out_s[2] + c * g->out_s[3];
        if (j->grad_grad) {
          double v = 0;
          if (y0 < y1 && x0 < x1)
            v = weft__cpu_load_f(j->dt, j->dy,
                                 window_argmax(g, j->x, j->dt, base, y0, y1, x0, x1));
          weft__cpu_store_f(j->dt, j->dx, o, v);
          continue;
        }
        if (y0 >= y1 || x0 >= x1) continue;
        double gv = weft__cpu_load_f(j->dt, j->dy, o);
        if (j->is_max) {
          int64_t best_at = window_argmax(g, j->x, j->dt, base, y0, y1, x0, x1);
          weft__cpu_store_f(j->acc_dt, j->dx, best_at,
                            weft__cpu_load_f(j->acc_dt, j->dx, best_at) + gv);
        } else {
          gv /= (double)((y1 - y0) * (x1 - x0));
          for (int64_t yy = y0; yy < y1; yy++)
            for (int64_t xx = x0; xx < x1; xx++) {
              int64_t at = base + yy * g->in_s[1] + xx * g->in_s[2];
              weft__cpu_store_f(j->acc_dt, j->dx, at,
                                weft__cpu_load_f(j->acc_dt, j->dx, at) + gv);
            }
        }
      }
  }
}

/* grad must have the shape the forward pool gives orig_input. */
static weft_status_t *check_pooled(weft_kernel_ctx_t *ctx, const char *op, const char *what,
                                   geom_t *g, const weft_tensor_view_t *t) {
  int64_t want[4];
  output_dims(g, want);
  bool ok = t->rank == 4;
  for (int d = 0; ok && d < 4; d++) ok = t->dims[d] == want[d];
  if (ok) return NULL;
  char s[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                         "%s: %s has shape %s, expected %s (the pooled shape of the input)", op,
                         what, weft__cpu_shape_str(t->rank, t->dims, s, sizeof s),
                         weft__cpu_shape_str(4, want, s2, sizeof s2));
}

static weft_status_t *k_pool_grad(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  const char *op = is_max ? "MaxPoolGrad" : "AvgPoolGrad";
  weft_tensor_view_t x, y, dy, dx;
  geom_t g;
  memset(&g, 0, sizeof g);
  memset(&x, 0, sizeof x);
  int di = is_max ? 2 : 1;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, di, &dy));
  if (is_max) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &y));
  } else {
    weft_tensor_view_t sv;
    int64_t n = 0;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sv));
    WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &sv, "orig_input_shape", x.dims,
                                                WEFT_MAX_RANK, &n));
    if (sv.rank != 1 || n != 4)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "AvgPoolGrad: orig_input_shape must be a vector of 4 values, got %lld",
                             (long long)n);
    x.rank = 4;
    x.num_elements = 1;
    for (int d = 0; d < 4; d++) {
      if (x.dims[d] < 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "AvgPoolGrad: orig_input_shape has a negative dimension");
      x.num_elements *= x.dims[d];
    }
  }
  bool nchw = weft__cpu_attr_is(ctx, "data_format", "NCHW", "NHWC");
  WEFT_RETURN_IF_ERROR(hw_list(ctx, "ksize", nchw, true, &g.kh, &g.kw));
  WEFT_RETURN_IF_ERROR(geom_init(ctx, &x, &g, false));
  g.oc = g.c;
  if (is_max) WEFT_RETURN_IF_ERROR(check_pooled(ctx, op, "orig_output", &g, &y));
  WEFT_RETURN_IF_ERROR(check_pooled(ctx, op, "grad", &g, &dy));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dy.dtype, 4, x.dims, &dx));
  if (dx.num_elements == 0) return NULL;
  /* float32 NHWC: channel loops (cpu_pool_grad_fast.c), the same results. Its window positions
   * are int32. */
  int64_t kh = g.kh < g.h ? g.kh : g.h, kw = g.kw < g.w ? g.kw : g.w;
  if (dy.dtype == WEFT_DT_FLOAT && !g.nchw && kh * kw <= INT32_MAX &&
      weft__cpu_pool_grad_f32_enabled()) {
    weft_cpu_conv2d_t f = {g.n,  g.h,  g.w,  g.c, g.oh, g.ow, g.c, g.kh,
                           g.kw, g.sh, g.sw, 1,   1,    g.pt, g.pl};
    weft__cpu_pool_grad_f32(ctx, &f, is_max, is_max ? x.data : NULL, dy.data, dx.data);
    return NULL;
  }
  /* Overlapping windows add into an element several times: half and bfloat16 would round at
   * each addition, so they add up in double and round once. */
  bool wide = dy.dtype == WEFT_DT_HALF || dy.dtype == WEFT_DT_BFLOAT16;
  pool_grad_job_t j = {&g, x.data, dy.data, dx.data, dy.dtype, dy.dtype, is_max, false};
  if (wide) {
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)dx.num_elements,
                                           &j.dx));
    memset(j.dx, 0, sizeof(double) * (size_t)dx.num_elements);
    j.acc_dt = WEFT_DT_DOUBLE;
  } else {
    WEFT_RETURN_IF_ERROR(weft__cpu_zero(ctx, &dx));
  }
  weft__cpu_parallel(ctx, g.n * g.c, g.oh * g.ow * g.kh * g.kw + 1, pool_grad_range, &j);
  if (wide)
    for (int64_t i = 0; i < dx.num_elements; i++)
      weft__cpu_store_f(dx.dtype, dx.data, i, ((const double *)j.dx)[i]);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MaxPoolGradGrad: the gradient of MaxPoolGrad with respect to its grad input. grad has
 * orig_input's shape; each pooled position takes grad's value where MaxPoolGrad would have sent
 * that position's gradient (the window's first maximum of orig_input). */

static weft_status_t *k_pool_grad_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const char *op = "MaxPoolGradGrad";
  weft_tensor_view_t x, y, gx, out;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &y));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &gx));
  geom_t g;
  memset(&g, 0, sizeof g);
  bool nchw = weft__cpu_attr_is(ctx, "data_format", "NCHW", "NHWC");
  WEFT_RETURN_IF_ERROR(hw_list(ctx, "ksize", nchw, true, &g.kh, &g.kw));
  WEFT_RETURN_IF_ERROR(geom_init(ctx, &x, &g, false));
  g.oc = g.c;
  WEFT_RETURN_IF_ERROR(check_pooled(ctx, op, "orig_output", &g, &y));
  bool same = gx.rank == 4;
  for (int d = 0; same && d < 4; d++) same = gx.dims[d] == x.dims[d];
  if (!same) {
    char s[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "%s: grad has shape %s, expected orig_input's shape %s", op,
                           weft__cpu_shape_str(gx.rank, gx.dims, s, sizeof s),
                           weft__cpu_shape_str(x.rank, x.dims, s2, sizeof s2));
  }
  WEFT_RETURN_IF_ERROR(alloc_output(ctx, &g, x.dtype, &out));
  if (out.num_elements == 0) return NULL;
  pool_grad_job_t j = {&g, x.data, gx.data, out.data, x.dtype, x.dtype, true, true};
  weft__cpu_parallel(ctx, g.n * g.c, g.oh * g.ow * g.kh * g.kw + 1, pool_grad_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MirrorPad */

/* The geometry of a mirror pad: the unpadded dims, the padded ones, the paddings and the
 * unpadded tensor's strides. */
typedef struct mirror {
  int rank;
  int64_t dims[WEFT_MAX_RANK], padded[WEFT_MAX_RANK], pads[2 * WEFT_MAX_RANK];
  int64_t strides[WEFT_MAX_RANK];
  bool reflect;
} mirror_t;

/* Reads input 1 (paddings) and checks it against the unpadded dims (from the input, MirrorPad;
 * or from the padded input less the paddings, MirrorPadGrad). */
static weft_status_t *mirror_init(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                  bool x_is_padded, mirror_t *m) {
  weft_tensor_view_t pv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &pv));
  int64_t n = 0;
  WEFT_RETURN_IF_ERROR(
      weft__cpu_read_indices(ctx, &pv, "paddings", m->pads, 2 * WEFT_MAX_RANK, &n));
  if (pv.rank != 2 || pv.dims[0] != x->rank || pv.dims[1] != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "paddings must have shape [%d, 2] for an input of rank %d", x->rank,
                           x->rank);
  m->rank = x->rank;
  m->reflect = weft__cpu_attr_is(ctx, "mode", "REFLECT", "REFLECT");
  for (int d = 0; d < x->rank; d++) {
    int64_t before = m->pads[2 * d], after = m->pads[2 * d + 1];
    m->dims[d] = x_is_padded ? x->dims[d] - before - after : x->dims[d];
    m->padded[d] = x_is_padded ? x->dims[d] : x->dims[d] + before + after;
    int64_t lim = m->reflect ? m->dims[d] - 1 : m->dims[d];
    if (before < 0 || after < 0 || before > lim || after > lim)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "paddings %lld and %lld of dimension %d must be in [0, %lld] for "
                             "%s mode",
                             (long long)before, (long long)after, d, (long long)lim,
                             m->reflect ? "REFLECT" : "SYMMETRIC");
  }
  int64_t st = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    m->strides[d] = st;
    st *= m->dims[d];
  }
  return NULL;
}

/* The unpadded element that padded element i mirrors. */
static int64_t mirror_source(const mirror_t *m, int64_t i) {
  int64_t off = m->reflect ? 0 : 1, src = 0;
  for (int d = m->rank - 1; d >= 0; d--) {
    int64_t p = i % m->padded[d] - m->pads[2 * d];
    i /= m->padded[d];
    if (p < 0) p = -p - off;
    if (p >= m->dims[d]) p = 2 * m->dims[d] - 2 - p + off;
    src += p * m->strides[d];
  }
  return src;
}

static weft_status_t *k_mirror_pad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  mirror_t m;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(mirror_init(ctx, &x, false, &m));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, m.padded, &y));
  for (int64_t i = 0; i < y.num_elements; i++)
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, i, &x, mirror_source(&m, i), 1));
  return NULL;
}

/* MirrorPadGrad: each element of the padded gradient adds into the element it mirrors (mirrored
 * elements collect several); floats add up in double and round once. */
static weft_status_t *k_mirror_pad_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t dy, dx;
  mirror_t m;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &dy));
  WEFT_RETURN_IF_ERROR(mirror_init(ctx, &dy, true, &m));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dy.dtype, dy.rank, m.dims, &dx));
  if (dx.num_elements == 0) return NULL;
  if (dy.dtype == WEFT_DT_INT32) {
    /* Wrapping like TensorFlow's int32 sums, which double (exact to 2^53) would not do. */
    const int32_t *g = dy.data;
    uint32_t *out = dx.data;
    memset(out, 0, sizeof(int32_t) * (size_t)dx.num_elements);
    for (int64_t i = 0; i < dy.num_elements; i++) out[mirror_source(&m, i)] += (uint32_t)g[i];
    return NULL;
  }
  double *acc = NULL;
  WEFT_RETURN_IF_ERROR(
      H->kernel_scratch(ctx, sizeof(double) * (size_t)dx.num_elements, (void **)&acc));
  memset(acc, 0, sizeof(double) * (size_t)dx.num_elements);
  for (int64_t i = 0; i < dy.num_elements; i++)
    acc[mirror_source(&m, i)] += weft__cpu_load_f(dy.dtype, dy.data, i);
  for (int64_t i = 0; i < dx.num_elements; i++) weft__cpu_store_f(dx.dtype, dx.data, i, acc[i]);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const weft_dtype_t conv_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                          WEFT_DT_BFLOAT16, WEFT_DT_INT32};
static const weft_dtype_t maxpool_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_BFLOAT16, WEFT_DT_INT8, WEFT_DT_INT16,
                                             WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_UINT8,
                                             WEFT_DT_UINT16};
static const weft_dtype_t avgpool_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_BFLOAT16};
static const char *const mirror_host_memory[] = {"paddings", NULL};
static const weft_dtype_t mirror_grad_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                                 WEFT_DT_BFLOAT16, WEFT_DT_INT32};
static const char *const avg_grad_host_memory[] = {"orig_input_shape", NULL};
static const char *const window_host_memory[] = {"ksize", "strides", NULL};
static int max_tag; /* user_data != NULL marks MaxPool for the shared pool kernel */
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

weft_status_t *weft__cpu_register_conv(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t specs[] = {
      /* The state: the cache of the node's packed constant filter. */
      {"Conv2D", k_conv2d, "T", conv_types, N_OF(conv_types), NULL, weft__cpu_packed_create,
       weft__cpu_packed_destroy, NULL},
      {"MaxPool", k_pool, "T", maxpool_types, N_OF(maxpool_types), NULL, NULL, NULL, &max_tag},
      {"AvgPool", k_pool, "T", avgpool_types, N_OF(avgpool_types), NULL, NULL, NULL, NULL},
      {"MaxPoolGrad", k_pool_grad, "T", avgpool_types, N_OF(avgpool_types), NULL, NULL, NULL,
       &max_tag},
      {"AvgPoolGrad", k_pool_grad, "T", avgpool_types, N_OF(avgpool_types),
       avg_grad_host_memory, NULL, NULL, NULL},
      {"MaxPoolV2", k_pool, "T", maxpool_types, N_OF(maxpool_types), window_host_memory, NULL,
       NULL, &max_tag},
      {"MaxPoolGradV2", k_pool_grad, "T", avgpool_types, N_OF(avgpool_types),
       window_host_memory, NULL, NULL, &max_tag},
      {"MaxPoolGradGrad", k_pool_grad_grad, "T", avgpool_types, N_OF(avgpool_types), NULL, NULL,
       NULL, NULL},
      {"MirrorPad", k_mirror_pad, "T", weft__cpu_all_types, 0, mirror_host_memory, NULL, NULL,
       NULL},
      {"MirrorPadGrad", k_mirror_pad_grad, "T", mirror_grad_types, N_OF(mirror_grad_types),
       mirror_host_memory, NULL, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    weft_cpu_kernel_spec_t s = specs[i];
    if (s.dtypes == weft__cpu_all_types) s.n_dtypes = weft__cpu_n_all_types;
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &s));
  }
  return NULL;
}
