/* cpu_conv_nd.c: the CPU kernels of the convolution family beyond Conv2D, on one geometry with up
 * to three spatial dims (2-D ops use a depth of 1): Conv3D, DepthwiseConv2dNative (a grouped
 * convolution with one input channel per group), the input gradients Conv2DBackpropInput (the
 * transposed convolution), DepthwiseConv2dNativeBackpropInput and Conv3DBackpropInputV2 (GEMM of
 * out_backprop with the filter, then col2im), the filter gradients Conv2DBackpropFilter,
 * DepthwiseConv2dNativeBackpropFilter and Conv3DBackpropFilterV2 (im2col, then GEMM with
 * out_backprop), AvgPool3D, MaxPool3D, their gradients AvgPool3DGrad and MaxPool3DGrad (float32
 * NDHWC in cpu_pool_grad_fast.c, the same results), and MaxPoolWithArgmax. The float dtypes compute in float32 (float64 for double) on OpenBLAS,
 * like Conv2D. Error messages follow TensorFlow's (conv_grad_shape_utils.cc and the kernels).
 * float32 Conv3D, Conv3DBackpropInputV2 and Conv3DBackpropFilterV2 with one group (either
 * layout) run on cpu_conv_fast.c's 2-D kernels with the depth folded into the channels
 * (conv3d_fast: one 2-D convolution over batch N * OD of KD * C channels; a stride-1 input
 * gradient as the forward convolution with the flipped filter); the generic path below (a
 * channels-last copy, im2col and one GEMM per batch item) keeps the other dtypes, grouped
 * filters, empty operands, and everything where WEFT_CPU_CONV3D_FAST=0. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_pool3d.h"
#include "cpu_pool_grad.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * Geometry: batch, channels and three spatial dims (depth, height, width). */

typedef struct nd {
  int ns;                     /* spatial dims of the op: 2 or 3 */
  bool cfirst;                /* NCHW / NCDHW */
  int64_t n, c, oc;           /* batch, input channels, output channels */
  int64_t in[3], out[3], k[3];
  int64_t s[3], d[3], pb[3], pa[3]; /* strides, dilations, padding before and after */
} nd_t;

static int64_t nd_in_pixels(const nd_t *g) { return g->in[0] * g->in[1] * g->in[2]; }
static int64_t nd_out_pixels(const nd_t *g) { return g->out[0] * g->out[1] * g->out[2]; }
static int64_t nd_window(const nd_t *g) { return g->k[0] * g->k[1] * g->k[2]; }

/* The spatial values of list attr `name` (ns + 2 values, 1 for batch and channels) into out[3]
 * (out[0] = 1 for 2-D ops). */
static weft_status_t *spatial_list(weft_kernel_ctx_t *ctx, const nd_t *g, const char *name,
                                   bool required, int64_t *out) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  out[0] = out[1] = out[2] = 1;
  if (!H->attr_has(attrs, name)) {
    if (required)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "attribute %s is required", name);
    return NULL;
  }
  const int64_t *v = NULL;
  size_t n = 0;
  WEFT_RETURN_IF_ERROR(H->attr_int_list(attrs, name, &v, &n));
  if (n == 0 && !required) return NULL;
  if (n != (size_t)g->ns + 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Sliding window %s field must specify %d dimensions", name, g->ns + 2);
  int ic = g->cfirst ? 1 : g->ns + 1, s0 = g->cfirst ? 2 : 1;
  if (v[0] != 1 || v[ic] != 1)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                           "Current implementation does not yet support %s in the batch and "
                           "depth dimensions.", name);
  for (int i = 0; i < g->ns; i++) {
    if (v[s0 + i] < 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be positive, got %lld", name,
                             (long long)v[s0 + i]);
    out[3 - g->ns + i] = v[s0 + i];
  }
  return NULL;
}

/* Reads data_format, strides, dilations (when the op has them) and ksize (pools). */
static weft_status_t *nd_attrs(weft_kernel_ctx_t *ctx, nd_t *g, int ns, bool dilations,
                               bool ksize) {
  memset(g, 0, sizeof *g);
  g->ns = ns;
  g->cfirst = weft__cpu_attr_is(ctx, "data_format", ns == 3 ? "NCDHW" : "NCHW", "");
  WEFT_RETURN_IF_ERROR(spatial_list(ctx, g, "strides", true, g->s));
  if (dilations)
    WEFT_RETURN_IF_ERROR(spatial_list(ctx, g, "dilations", false, g->d));
  else
    g->d[0] = g->d[1] = g->d[2] = 1;
  if (ksize) WEFT_RETURN_IF_ERROR(spatial_list(ctx, g, "ksize", true, g->k));
  return NULL;
}

/* The dims of a tensor of this geometry's layout: n, spatial sp[3], channels c. */
static int nd_dims(const nd_t *g, int64_t n, const int64_t *sp, int64_t c, int64_t *dims) {
  int r = 0;
  dims[r++] = n;
  if (g->cfirst) dims[r++] = c;
  for (int i = 3 - g->ns; i < 3; i++) dims[r++] = sp[i];
  if (!g->cfirst) dims[r++] = c;
  return r;
}

/* Reads n, spatial and channels of a rank-(ns+2) tensor shape. */
static void nd_split(const nd_t *g, const int64_t *dims, int64_t *n, int64_t *sp, int64_t *c) {
  *n = dims[0];
  *c = dims[g->cfirst ? 1 : g->ns + 1];
  sp[0] = 1;
  for (int i = 0; i < g->ns; i++) sp[3 - g->ns + i] = dims[(g->cfirst ? 2 : 1) + i];
}

/* Pads and output sizes from in, k, s, d and the padding attr (TensorFlow's
 * GetWindowedOutputSizeVerbose: SAME puts the odd padding after). */
static weft_status_t *nd_pads(weft_kernel_ctx_t *ctx, nd_t *g, bool allow_explicit) {
  bool same = weft__cpu_attr_is(ctx, "padding", "SAME", "VALID");
  bool expl = allow_explicit && weft__cpu_attr_is(ctx, "padding", "EXPLICIT", "VALID");
  const int64_t *p = NULL;
  size_t np = 0;
  if (expl) {
    WEFT_RETURN_IF_ERROR(H->attr_int_list(H->kernel_attrs(ctx), "explicit_paddings", &p, &np));
    if (np != (size_t)2 * (g->ns + 2))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "explicit_paddings attribute must contain %d values, but got: %zu",
                             2 * (g->ns + 2), np);
    for (size_t i = 0; i < np; i++)
      if (p[i] < 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "All elements of explicit_paddings must be nonnegative");
  }
  for (int i = 0; i < 3; i++) {
    int64_t eff = (g->k[i] - 1) * g->d[i] + 1;
    g->pb[i] = g->pa[i] = 0;
    if (i < 3 - g->ns) {
      g->out[i] = g->in[i];
      continue;
    }
    if (same) {
      g->out[i] = (g->in[i] + g->s[i] - 1) / g->s[i];
      int64_t need = (g->out[i] - 1) * g->s[i] + eff - g->in[i];
      if (need < 0) need = 0;
      g->pb[i] = need / 2;
      g->pa[i] = need - need / 2;
    } else {
      if (expl) {
        int dim = (g->cfirst ? 2 : 1) + i - (3 - g->ns);
        g->pb[i] = p[2 * dim];
        g->pa[i] = p[2 * dim + 1];
      }
      /* TensorFlow's (in + pads - eff + stride) / stride, truncated: 0 is a valid size. */
      int64_t span = g->in[i] + g->pb[i] + g->pa[i] - eff;
      if ((span + g->s[i]) / g->s[i] < 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "Computed output size would be negative: %lld [input_size: %lld, "
                               "effective_filter_size: %lld, stride: %lld]",
                               (long long)((span + g->s[i]) / g->s[i]),
                               (long long)g->in[i], (long long)eff, (long long)g->s[i]);
      g->out[i] = (span + g->s[i]) / g->s[i];
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Moving data between a tensor of the op's layout and dtype and a channels-last float or double
 * buffer [n, d, h, w, c]. */

/* Index of element (n, pixel, c) in a tensor of the layout, pixels counted over sp. */
static int64_t layout_index(bool cfirst, int64_t n, int64_t pix, int64_t c, int64_t pixels,
                            int64_t channels) {
  return cfirst ? (n * channels + c) * pixels + pix : (n * pixels + pix) * channels + c;
}

static void *buf_at(bool dbl, void *b, int64_t i) {
  return dbl ? (void *)((double *)b + i) : (void *)((float *)b + i);
}

static double buf_get(bool dbl, const void *b, int64_t i) {
  return dbl ? ((const double *)b)[i] : ((const float *)b)[i];
}

static void buf_set(bool dbl, void *b, int64_t i, double v) {
  if (dbl)
    ((double *)b)[i] = v;
  else
    ((float *)b)[i] = (float)v;
}

/* A scratch buffer of n float/double values (n may be 0). */
static weft_status_t *scratch(weft_kernel_ctx_t *ctx, bool dbl, int64_t n, void **out) {
  size_t es = dbl ? sizeof(double) : sizeof(float);
  return H->kernel_scratch(ctx, (size_t)n * es + es, out);
}

static weft_status_t *to_cl(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *t, bool cfirst,
                            int64_t pixels, int64_t channels, bool dbl, void **out) {
  WEFT_RETURN_IF_ERROR(scratch(ctx, dbl, t->num_elements, out));
  int64_t n = pixels * channels != 0 ? t->num_elements / (pixels * channels) : 0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t p = 0; p < pixels; p++)
      for (int64_t c = 0; c < channels; c++)
        buf_set(
            dbl, *out, (b * pixels + p) * channels + c,
            weft__cpu_load_f(t->dtype, t->data, layout_index(cfirst, b, p, c, pixels, channels)));
  return NULL;
}

static void from_cl(const void *buf, bool dbl, const weft_tensor_view_t *t, bool cfirst,
                    int64_t pixels, int64_t channels) {
  int64_t n = pixels * channels != 0 ? t->num_elements / (pixels * channels) : 0;
  for (int64_t b = 0; b < n; b++)
    for (int64_t p = 0; p < pixels; p++)
      for (int64_t c = 0; c < channels; c++)
        weft__cpu_store_f(t->dtype, t->data, layout_index(cfirst, b, p, c, pixels, channels),
                          buf_get(dbl, buf, (b * pixels + p) * channels + c));
}

/* ---------------------------------------------------------------------------------------------
 * The three convolutions on channels-last buffers. The filter is [k..., cg, m] (m = groups * mg
 * output channels); output channel o belongs to group o / mg and reads input channels
 * [group * cg, (group + 1) * cg). im2col rows are output pixels, columns (kd, kh, kw, cg). */

typedef struct conv_plan {
  const nd_t *g;
  int64_t groups, cg, mg, k; /* k = window * cg: the im2col width */
  bool dbl;
  const void *x; /* input [n, pixels, c] */
  void *cols;    /* [out pixels, k] */
  int64_t batch, group;
} conv_plan_t;

/* Input pixel of output pixel p and window offset w, or -1 where it is padding. */
static int64_t tap(const nd_t *g, int64_t p, int64_t w) {
  int64_t o2 = p % g->out[2], o1 = (p / g->out[2]) % g->out[1], o0 = p / (g->out[2] * g->out[1]);
  int64_t k2 = w % g->k[2], k1 = (w / g->k[2]) % g->k[1], k0 = w / (g->k[2] * g->k[1]);
  int64_t i0 = o0 * g->s[0] + k0 * g->d[0] - g->pb[0];
  int64_t i1 = o1 * g->s[1] + k1 * g->d[1] - g->pb[1];
  int64_t i2 = o2 * g->s[2] + k2 * g->d[2] - g->pb[2];
  if (i0 < 0 || i0 >= g->in[0] || i1 < 0 || i1 >= g->in[1] || i2 < 0 || i2 >= g->in[2]) return -1;
  return (i0 * g->in[1] + i1) * g->in[2] + i2;
}

static void im2col_range(void *arg, int64_t b, int64_t e) {
  const conv_plan_t *j = arg;
  const nd_t *g = j->g;
  int64_t win = nd_window(g), pixels = nd_in_pixels(g);
  for (int64_t r = b; r < e; r++)
    for (int64_t w = 0; w < win; w++) {
      int64_t ip = tap(g, r, w);
      int64_t src = ((j->batch * pixels + ip) * g->c) + j->group * j->cg;
      for (int64_t ch = 0; ch < j->cg; ch++)
        buf_set(j->dbl, j->cols, r * j->k + w * j->cg + ch,
                ip < 0 ? 0.0 : buf_get(j->dbl, j->x, src + ch));
    }
}

/* The GEMM dims must fit an int (OpenBLAS). */
static weft_status_t *check_gemm(weft_kernel_ctx_t *ctx, int64_t a, int64_t b, int64_t c) {
  if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "convolution too large: %lld x %lld x %lld",
                           (long long)a, (long long)b, (long long)c);
  return NULL;
}

/* y [n, out pixels, m] = conv(x, f). */
static weft_status_t *conv_forward(weft_kernel_ctx_t *ctx, conv_plan_t *j, const void *f,
                                   void *y) {
  const nd_t *g = j->g;
  int64_t P = nd_out_pixels(g), m = g->oc;
  size_t es = j->dbl ? sizeof(double) : sizeof(float);
  WEFT_RETURN_IF_ERROR(check_gemm(ctx, P, m, j->k));
  WEFT_RETURN_IF_ERROR(scratch(ctx, j->dbl, P * j->k, &j->cols));
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t grp = 0; grp < j->groups; grp++) {
      j->batch = n;
      j->group = grp;
      if (j->k == 0) {
        for (int64_t p = 0; p < P; p++)
          for (int64_t q = 0; q < j->mg; q++)
            buf_set(j->dbl, y, (n * P + p) * m + grp * j->mg + q, 0);
        continue;
      }
      weft__cpu_parallel(ctx, P, j->k + 1, im2col_range, j);
      weft__cpu_blas_gemm(ctx, j->dbl, false, false, P, j->mg, j->k, j->cols, j->k,
                          (const char *)f + (size_t)(grp * j->mg) * es, m,
                          buf_at(j->dbl, y, n * P * m + grp * j->mg), m);
    }
  return NULL;
}

/* dx [n, in pixels, c] = the transposed convolution of dy [n, out pixels, m] with f. */
static weft_status_t *conv_backprop_input(weft_kernel_ctx_t *ctx, conv_plan_t *j, const void *f,
                                          const void *dy, void *dx) {
  const nd_t *g = j->g;
  int64_t P = nd_out_pixels(g), m = g->oc, pixels = nd_in_pixels(g), win = nd_window(g);
  size_t es = j->dbl ? sizeof(double) : sizeof(float);
  for (int64_t i = 0; i < g->n * pixels * g->c; i++) buf_set(j->dbl, dx, i, 0);
  if (j->k == 0 || j->mg == 0 || P == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check_gemm(ctx, P, m, j->k));
  WEFT_RETURN_IF_ERROR(scratch(ctx, j->dbl, P * j->k, &j->cols));
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t grp = 0; grp < j->groups; grp++) {
      /* cols [P, k] = dy[n][:, group] [P, mg] x f[:, group]^T [mg, k] */
      weft__cpu_blas_gemm(ctx, j->dbl, false, true, P, j->k, j->mg,
                          buf_at(j->dbl, (void *)dy, n * P * m + grp * j->mg), m,
                          (const char *)f + (size_t)(grp * j->mg) * es, m, j->cols, j->k);
      /* col2im: each column entry adds into the input pixel it was read from. */
      for (int64_t p = 0; p < P; p++)
        for (int64_t w = 0; w < win; w++) {
          int64_t ip = tap(g, p, w);
          if (ip < 0) continue;
          int64_t dst = (n * pixels + ip) * g->c + grp * j->cg, src = p * j->k + w * j->cg;
          if (j->dbl) {
            double *o = (double *)dx + dst;
            const double *s = (const double *)j->cols + src;
            for (int64_t ch = 0; ch < j->cg; ch++) o[ch] += s[ch];
          } else {
            float *o = (float *)dx + dst;
            const float *s = (const float *)j->cols + src;
            for (int64_t ch = 0; ch < j->cg; ch++) o[ch] += s[ch];
          }
        }
    }
  return NULL;
}

/* df [k..., cg, m] = sum over the batch of im2col(x)^T dy. */
static weft_status_t *conv_backprop_filter(weft_kernel_ctx_t *ctx, conv_plan_t *j, const void *dy,
                                           void *df) {
  const nd_t *g = j->g;
  int64_t P = nd_out_pixels(g), m = g->oc;
  for (int64_t i = 0; i < j->k * m; i++) buf_set(j->dbl, df, i, 0);
  if (j->k == 0 || j->mg == 0 || P == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check_gemm(ctx, P, m, j->k));
  void *part = NULL;
  WEFT_RETURN_IF_ERROR(scratch(ctx, j->dbl, P * j->k, &j->cols));
  WEFT_RETURN_IF_ERROR(scratch(ctx, j->dbl, j->k * j->mg, &part));
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t grp = 0; grp < j->groups; grp++) {
      j->batch = n;
      j->group = grp;
      weft__cpu_parallel(ctx, P, j->k + 1, im2col_range, j);
      weft__cpu_blas_gemm(ctx, j->dbl, true, false, j->k, j->mg, P, j->cols, j->k,
                          buf_at(j->dbl, (void *)dy, n * P * m + grp * j->mg), m, part, j->mg);
      for (int64_t r = 0; r < j->k; r++)
        for (int64_t q = 0; q < j->mg; q++) {
          int64_t o = r * m + grp * j->mg + q;
          buf_set(j->dbl, df, o, buf_get(j->dbl, df, o) + buf_get(j->dbl, part, r * j->mg + q));
        }
    }
  return NULL;
}

/* int32 Conv2DBackpropInput (TensorFlow registers it on CPU): a direct scatter, one batch per
 * task, in uint32 so that sums wrap like TensorFlow's. */
typedef struct bp_input_int {
  const nd_t *g;
  int64_t cg, mg;
  const int32_t *f, *dy;
  int32_t *dx;
} bp_input_int_t;

static void bp_input_int_range(void *arg, int64_t b, int64_t e) {
  const bp_input_int_t *j = arg;
  const nd_t *g = j->g;
  int64_t P = nd_out_pixels(g), ip = nd_in_pixels(g), win = nd_window(g);
  for (int64_t n = b; n < e; n++) {
    for (int64_t i = 0; i < ip * g->c; i++)
      j->dx[layout_index(g->cfirst, n, i / g->c, i % g->c, ip, g->c)] = 0;
    for (int64_t p = 0; p < P; p++)
      for (int64_t m = 0; m < g->oc; m++) {
        uint32_t d = (uint32_t)j->dy[layout_index(g->cfirst, n, p, m, P, g->oc)];
        int64_t grp = m / j->mg;
        for (int64_t w = 0; w < win; w++) {
          int64_t t = tap(g, p, w);
          if (t < 0) continue;
          for (int64_t ch = 0; ch < j->cg; ch++) {
            int64_t xi = layout_index(g->cfirst, n, t, grp * j->cg + ch, ip, g->c);
            int64_t fi = (w * j->cg + ch) * g->oc + m;
            j->dx[xi] = (int32_t)((uint32_t)j->dx[xi] + d * (uint32_t)j->f[fi]);
          }
        }
      }
  }
}

/* ---------------------------------------------------------------------------------------------
 * The kernels. The op kind is the kernel's user data. */

typedef enum conv_kind {
  K_CONV3D,
  K_DEPTHWISE,
  K_BP_INPUT_2D,
  K_BP_INPUT_3D,
  K_BP_INPUT_DEPTHWISE,
  K_BP_FILTER_2D,
  K_BP_FILTER_DEPTHWISE,
  K_BP_FILTER_3D,
} conv_kind_t;

static const conv_kind_t kinds[] = {K_CONV3D,         K_DEPTHWISE,    K_BP_INPUT_2D,
                                    K_BP_INPUT_3D,    K_BP_INPUT_DEPTHWISE,
                                    K_BP_FILTER_2D,   K_BP_FILTER_DEPTHWISE, K_BP_FILTER_3D};

static const char *const labels[] = {"Conv3D",
                                     "DepthwiseConv2dNative",
                                     "Conv2DBackpropInput",
                                     "Conv3DBackpropInputV2",
                                     "DepthwiseConv2dNativeBackpropInput",
                                     "Conv2DBackpropFilter",
                                     "DepthwiseConv2dNativeBackpropFilter",
                                     "Conv3DBackpropFilterV2"};

static weft_status_t *need_rank(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *t,
                                const char *label, const char *what, int rank) {
  if (t->rank != rank) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s: %s must be %d-dimensional, got %s",
                           label, what, rank, weft__cpu_shape_str(t->rank, t->dims, s, sizeof s));
  }
  return NULL;
}

/* A sizes input (input_sizes, filter_sizes) as rank dims; Conv2DBackpropInput also takes the
 * 2 spatial sizes alone (batch from out_backprop, depth from the filter). */
static weft_status_t *read_sizes(weft_kernel_ctx_t *ctx, const char *label, int index, int rank,
                                 bool allow_spatial, const nd_t *g, const weft_tensor_view_t *f,
                                 const weft_tensor_view_t *dy, int64_t *dims) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &v));
  int64_t n = 0;
  if (v.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s: sizes input must be 1-dimensional, "
                           "got %d dimensions", label, v.rank);
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &v, "sizes", dims, rank, &n));
  if (n == 2 && allow_spatial && rank == 4) {
    int64_t h = dims[0], w = dims[1];
    dims[0] = dy->rank == 4 ? dy->dims[0] : 0;
    int64_t c = f->rank == 4 ? f->dims[2] : 0;
    dims[g->cfirst ? 1 : 3] = c;
    dims[g->cfirst ? 2 : 1] = h;
    dims[g->cfirst ? 3 : 2] = w;
    n = 4;
  }
  if (n != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "%s: sizes input must have %d elements%s, got %lld", label, rank,
                           allow_spatial ? " (or 2 spatial sizes)" : "", (long long)n);
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s: sizes must be non-negative, got "
                             "%lld in dimension %d", label, (long long)dims[i], i);
  return NULL;
}

/* The same in NCHW: the NHWC kernels between transposes of their image-shaped operands
 * (cpu_nchw.c); the filter and its gradient have one layout for both. */
static weft_status_t *conv2d_fast_nchw(weft_kernel_ctx_t *ctx, conv_kind_t kind,
                                       const weft_cpu_conv2d_t *c2, const weft_tensor_view_t *x,
                                       const weft_tensor_view_t *f, const weft_tensor_view_t *dy,
                                       weft_tensor_view_t *out, const weft_cpu_epilogue_t *ep) {
  int64_t ip = c2->h * c2->w, op = c2->oh * c2->ow;
  float *xt = NULL, *yt = NULL, *dxt = NULL;
  if (kind == K_BP_INPUT_2D && weft__cpu_conv2d_nchw_bp_input_direct(c2))
    return weft__cpu_conv2d_nchw_bp_input_f32(ctx, c2, f->data, dy->data, out->data);
  if (kind == K_BP_INPUT_2D) {
    WEFT_RETURN_IF_ERROR(weft__cpu_transpose_f32_scratch(ctx, c2->n, c2->m, op, dy->data, &yt));
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)out->num_elements * sizeof(float),
                                           (void **)&dxt));
    WEFT_RETURN_IF_ERROR(weft__cpu_conv2d_bp_input_f32(ctx, c2, f->data, yt, dxt));
    weft__cpu_transpose_f32(ctx, c2->n, ip, c2->c, dxt, out->data);
    return NULL;
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_transpose_f32_scratch(ctx, c2->n, c2->c, ip, x->data, &xt));
  if (kind == K_BP_FILTER_2D) {
    WEFT_RETURN_IF_ERROR(weft__cpu_transpose_f32_scratch(ctx, c2->n, c2->m, op, dy->data, &yt));
    return weft__cpu_conv2d_bp_filter_f32(ctx, c2, xt, yt, out->data);
  }
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)out->num_elements * sizeof(float),
                                         (void **)&yt));
  WEFT_RETURN_IF_ERROR(weft__cpu_depthwise_f32_ep(ctx, c2, xt, f->data, yt, ep));
  weft__cpu_transpose_f32(ctx, c2->n, op, c2->m, yt, out->data);
  return NULL;
}

/* float32 2-D convolutions with one group, and depthwise ones (cpu_conv_fast.c; NCHW through
 * conv2d_fast_nchw). */
static weft_status_t *conv2d_fast(weft_kernel_ctx_t *ctx, conv_kind_t kind, const nd_t *g,
                                  const weft_tensor_view_t *x, const weft_tensor_view_t *f,
                                  const weft_tensor_view_t *dy, weft_tensor_view_t *out,
                                  const weft_cpu_epilogue_t *ep) {
  WEFT_RETURN_IF_ERROR(check_gemm(ctx, nd_out_pixels(g), g->oc, nd_window(g) * g->c));
  weft_cpu_conv2d_t c2 = {g->n,    g->in[1], g->in[2], g->c,    g->out[1],
                          g->out[2], g->oc,  g->k[1],  g->k[2], g->s[1],
                          g->s[2], g->d[1],  g->d[2],  g->pb[1], g->pb[2]};
  if (g->cfirst) return conv2d_fast_nchw(ctx, kind, &c2, x, f, dy, out, ep);
  switch (kind) {
    case K_DEPTHWISE: return weft__cpu_depthwise_f32_ep(ctx, &c2, x->data, f->data, out->data, ep);
    case K_BP_INPUT_2D:
      return weft__cpu_conv2d_bp_input_f32(ctx, &c2, f->data, dy->data, out->data);
    default: return weft__cpu_conv2d_bp_filter_f32(ctx, &c2, x->data, dy->data, out->data);
  }
}

/* ---------------------------------------------------------------------------------------------
 * float32 Conv3D, Conv3DBackpropInputV2 and Conv3DBackpropFilterV2 (one group) on the 2-D NHWC
 * kernels of cpu_conv_fast.c: the depth folds into the channels. Output depth od reads input
 * depths id = od * sd + kd * dd - pd for kd < KD, so the folded input
 * xf[n * OD + od][h][w][kd * C + c] = x[n][id][h][w][c] (zero where id is padding) convolved in
 * 2-D (the H and W strides, dilations and pads) with the filter reordered [KH, KW, KD * C, M]
 * is the output [N * OD, OH, OW, M], which is NDHWC's [N, OD, OH, OW, M] itself. The input
 * gradient is the 2-D one of the folded input, added back to its depths (each input depth sums
 * its taps in kd order: deterministic); the filter gradient is the 2-D one of (xf, dy) reordered
 * back. NCDHW goes through transposes (cpu_nchw.c). The folded input is KD / sd times the
 * input: it is built for a run of batch items at a time (CONV3D_FOLD_BYTES). Where
 * WEFT_CPU_CONV3D_FAST=0 the generic code below (to_cl, im2col per item) runs instead. */

#define CONV3D_FOLD_BYTES ((int64_t)32 << 20)

/* The bytes of folded input built at a time: CONV3D_FOLD_BYTES, or WEFT_CPU_CONV3D_FOLD_BYTES
 * (tests make it small to run the batch a few items at a time). */
static int64_t conv3d_fold_bytes(void) {
  const char *e = getenv("WEFT_CPU_CONV3D_FOLD_BYTES");
  long long v = e ? atoll(e) : 0;
  return v > 0 ? (int64_t)v : CONV3D_FOLD_BYTES;
}

static bool conv3d_fast_enabled(void) {
  /* Read on every call: cheap next to a convolution, and tests switch it both ways. */
  const char *e = getenv("WEFT_CPU_CONV3D_FAST");
  return !(e && strcmp(e, "0") == 0);
}

typedef struct fold_job {
  const nd_t *g;
  const float *x; /* NDHWC input of the run's first batch item (fold) */
  float *xf;      /* the folded run */
  float *dx;      /* NDHWC input gradient of the run's first item (unfold) */
} fold_job_t;

/* hw pixels of c floats from src (one every ss floats) to dst (one every ds floats); the few
 * channels of the corpus's nets copied inline, not by a memcpy call a pixel. */
static void copy_pixels(float *restrict dst, int64_t ds, const float *restrict src, int64_t ss,
                        int64_t hw, int64_t c) {
#define COPY_PIXELS_N(N)                                                                     \
  case N:                                                                                    \
    for (int64_t p = 0; p < hw; p++) memcpy(dst + p * ds, src + p * ss, sizeof(float) * N); \
    return;
  switch (c) {
    COPY_PIXELS_N(1)
    COPY_PIXELS_N(2)
    COPY_PIXELS_N(3)
    COPY_PIXELS_N(4)
    default:
      for (int64_t p = 0; p < hw; p++)
        memcpy(dst + p * ds, src + p * ss, sizeof(float) * (size_t)c);
  }
#undef COPY_PIXELS_N
}

/* Folded rows [b, e) (one per (item, od)) from j->x. */
static void fold_range(void *arg, int64_t b, int64_t e) {
  const fold_job_t *j = arg;
  const nd_t *g = j->g;
  int64_t od_n = g->out[0], hw = g->in[1] * g->in[2], c = g->c, kd_n = g->k[0], kc = kd_n * c;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / od_n, od = r % od_n;
    float *dst = j->xf + r * hw * kc;
    for (int64_t kd = 0; kd < kd_n; kd++) {
      int64_t id = od * g->s[0] + kd * g->d[0] - g->pb[0];
      float *d = dst + kd * c;
      if (id < 0 || id >= g->in[0]) {
        for (int64_t p = 0; p < hw; p++) memset(d + p * kc, 0, sizeof(float) * (size_t)c);
        continue;
      }
      const float *s = j->x + (n * g->in[0] + id) * hw * c;
      copy_pixels(d, kc, s, c, hw, c);
    }
  }
}

/* Input gradient rows [b, e) (one per (item, id)) of j->dx from the folded gradient j->xf. */
static void unfold_range(void *arg, int64_t b, int64_t e) {
  const fold_job_t *j = arg;
  const nd_t *g = j->g;
  int64_t d_n = g->in[0], hw = g->in[1] * g->in[2], c = g->c, kd_n = g->k[0], kc = kd_n * c;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / d_n, id = r % d_n;
    float *dst = j->dx + r * hw * c;
    bool first = true;
    for (int64_t kd = 0; kd < kd_n; kd++) {
      int64_t t = id + g->pb[0] - kd * g->d[0];
      if (t < 0 || t % g->s[0] != 0 || t / g->s[0] >= g->out[0]) continue;
      const float *s = j->xf + (n * g->out[0] + t / g->s[0]) * hw * kc + kd * c;
      if (first)
        copy_pixels(dst, c, s, kc, hw, c);
      else
        for (int64_t p = 0; p < hw; p++)
          for (int64_t q = 0; q < c; q++) dst[p * c + q] += s[p * kc + q];
      first = false;
    }
    if (first) memset(dst, 0, sizeof(float) * (size_t)(hw * c));
  }
}

/* [KD, KH, KW, C, M] -> [KH, KW, KD, C, M] (to_2d), or back. */
static void reorder_filter(const nd_t *g, const float *src, float *dst, bool to_2d) {
  int64_t cm = g->c * g->oc, kd_n = g->k[0], kh_n = g->k[1], kw_n = g->k[2];
  for (int64_t kd = 0; kd < kd_n; kd++)
    for (int64_t kh = 0; kh < kh_n; kh++)
      for (int64_t kw = 0; kw < kw_n; kw++) {
        int64_t a = ((kd * kh_n + kh) * kw_n + kw) * cm, b = ((kh * kw_n + kw) * kd_n + kd) * cm;
        memcpy(dst + (to_2d ? b : a), src + (to_2d ? a : b), sizeof(float) * (size_t)cm);
      }
}

/* Whether conv3d_fast takes this convolution: float32, one group, nothing empty. */
static bool conv3d_fast_wanted(const nd_t *g, int64_t groups) {
  return groups == 1 && g->n > 0 && g->c > 0 && g->oc > 0 && nd_in_pixels(g) > 0 &&
         nd_out_pixels(g) > 0 && nd_window(g) > 0 && conv3d_fast_enabled();
}

static weft_status_t *conv3d_fast(weft_kernel_ctx_t *ctx, conv_kind_t kind, const nd_t *g,
                                  const weft_tensor_view_t *x, const weft_tensor_view_t *f,
                                  const weft_tensor_view_t *dy, weft_tensor_view_t *out);

/* The input gradient of a stride-1 convolution as the forward convolution of dy with the filter
 * flipped in every spatial dim and its channels swapped ([KD, KH, KW, M, C]), padded before by
 * (K - 1) * dilation - pad: dx[i] = sum over taps t' of dy[i + t' * d - pad'] f'[t']. It takes
 * the forward's kernels (the direct loop, Winograd, im2col + GEMM over K * M instead of a GEMM
 * over M then col2im): the corpus's transposed 3-D convolutions (2x2x2, 3 -> 2 channels, batch
 * 64) took 0.12 ms instead of 0.23 ms on the 2-D input gradient, and [8, 16, 16, 16, 32] ->
 * 16 channels (3x3x3) the same 14 ms. */
static weft_status_t *conv3d_bp_input_as_forward(weft_kernel_ctx_t *ctx, const nd_t *g,
                                                 const weft_tensor_view_t *f,
                                                 const weft_tensor_view_t *dy,
                                                 weft_tensor_view_t *out) {
  nd_t g2 = *g;
  g2.c = g->oc;
  g2.oc = g->c;
  for (int i = 0; i < 3; i++) {
    g2.in[i] = g->out[i];
    g2.out[i] = g->in[i];
    g2.pb[i] = (g->k[i] - 1) * g->d[i] - g->pb[i];
    g2.pa[i] = 0; /* unused: the output size is given */
  }
  int64_t c = g->c, m = g->oc, win = nd_window(g);
  float *ff = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)(win * c * m) * sizeof(float),
                                         (void **)&ff));
  const float *src = f->data;
  for (int64_t t = 0; t < win; t++) {
    const float *a = src + (win - 1 - t) * c * m;
    float *b = ff + t * m * c;
    for (int64_t q = 0; q < c; q++)
      for (int64_t o = 0; o < m; o++) b[o * c + q] = a[q * m + o];
  }
  weft_tensor_view_t fv = *f;
  fv.data = ff;
  return conv3d_fast(ctx, K_CONV3D, &g2, dy, &fv, NULL, out);
}

static weft_status_t *conv3d_fast(weft_kernel_ctx_t *ctx, conv_kind_t kind, const nd_t *g,
                                  const weft_tensor_view_t *x, const weft_tensor_view_t *f,
                                  const weft_tensor_view_t *dy, weft_tensor_view_t *out) {
  if (kind == K_BP_INPUT_3D && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1)
    return conv3d_bp_input_as_forward(ctx, g, f, dy, out);
  int64_t n_all = g->n, c = g->c, m = g->oc, kd_n = g->k[0];
  int64_t ip = nd_in_pixels(g), op = nd_out_pixels(g), hw = g->in[1] * g->in[2];
  int64_t od_n = g->out[0], ohw = g->out[1] * g->out[2];
  WEFT_RETURN_IF_ERROR(check_gemm(ctx, ohw, m, nd_window(g) * c));
  /* NDHWC operands: the tensors themselves, or transposes of NCDHW ones. */
  const float *xs = NULL, *dys = NULL;
  float *outs = out->data;
  if (kind != K_BP_INPUT_3D) {
    xs = x->data;
    if (g->cfirst)
      WEFT_RETURN_IF_ERROR(
          weft__cpu_transpose_f32_scratch(ctx, n_all, c, ip, x->data, (float **)&xs));
  }
  if (kind != K_CONV3D) {
    dys = dy->data;
    if (g->cfirst)
      WEFT_RETURN_IF_ERROR(
          weft__cpu_transpose_f32_scratch(ctx, n_all, m, op, dy->data, (float **)&dys));
  }
  if (g->cfirst && kind != K_BP_FILTER_3D)
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)out->num_elements * sizeof(float),
                                           (void **)&outs));
  /* The filter (or its gradient) in 2-D order; the same where KD is 1. */
  int64_t fsize = nd_window(g) * c * m;
  float *f2 = kind == K_BP_FILTER_3D ? outs : (float *)f->data;
  if (kd_n > 1) {
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)fsize * sizeof(float), (void **)&f2));
    if (kind != K_BP_FILTER_3D) reorder_filter(g, f->data, f2, true);
  }
  /* The fold is the input itself where every output depth reads its own input depth alone. */
  bool identity = kd_n == 1 && g->s[0] == 1 && g->pb[0] == 0 && od_n == g->in[0];
  int64_t per_item = od_n * hw * kd_n * c;
  int64_t run = identity ? n_all : conv3d_fold_bytes() / ((int64_t)sizeof(float) * per_item);
  if (run < 1) run = 1;
  if (run > n_all) run = n_all;
  float *xf = NULL, *part = NULL;
  if (!identity)
    WEFT_RETURN_IF_ERROR(
        H->kernel_scratch(ctx, (size_t)(run * per_item) * sizeof(float), (void **)&xf));
  if (kind == K_BP_FILTER_3D && run < n_all)
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)fsize * sizeof(float), (void **)&part));
  for (int64_t n0 = 0; n0 < n_all; n0 += run) {
    int64_t nb = n_all - n0 < run ? n_all - n0 : run;
    weft_cpu_conv2d_t c2 = {nb * od_n, g->in[1], g->in[2], kd_n * c, g->out[1], g->out[2], m,
                            g->k[1],   g->k[2],  g->s[1],  g->s[2],  g->d[1],   g->d[2],
                            g->pb[1],  g->pb[2]};
    fold_job_t j = {g, xs ? xs + n0 * ip * c : NULL, xf,
                    kind == K_BP_INPUT_3D ? outs + n0 * ip * c : NULL};
    const float *xin = identity ? j.x : xf;
    if (!identity && kind != K_BP_INPUT_3D)
      weft__cpu_parallel(ctx, nb * od_n, hw * kd_n * c + 1, fold_range, &j);
    if (kind == K_CONV3D) {
      WEFT_RETURN_IF_ERROR(weft__cpu_conv2d_f32(ctx, &c2, xin, f2, outs + n0 * op * m));
    } else if (kind == K_BP_INPUT_3D) {
      WEFT_RETURN_IF_ERROR(weft__cpu_conv2d_bp_input_f32(ctx, &c2, f2, dys + n0 * op * m,
                                                         identity ? j.dx : xf));
      if (!identity) weft__cpu_parallel(ctx, nb * g->in[0], hw * kd_n * c + 1, unfold_range, &j);
    } else {
      float *dst = n0 == 0 ? f2 : part;
      WEFT_RETURN_IF_ERROR(weft__cpu_conv2d_bp_filter_f32(ctx, &c2, xin, dys + n0 * op * m, dst));
      if (n0 > 0)
        for (int64_t i = 0; i < fsize; i++) f2[i] += part[i];
    }
  }
  if (kind == K_BP_FILTER_3D) {
    if (kd_n > 1) reorder_filter(g, f2, out->data, false);
  } else if (g->cfirst) {
    int64_t pix = kind == K_CONV3D ? op : ip, ch = kind == K_CONV3D ? m : c;
    weft__cpu_transpose_f32(ctx, n_all, pix, ch, outs, out->data);
  }
  return NULL;
}

/* The kernels of every op here; ep: _FusedDepthwiseConv2dNative's epilogue (float32 NHWC, which
 * the fast path takes), else NULL. */
static weft_status_t *conv_run(weft_kernel_ctx_t *ctx, conv_kind_t kind,
                               const weft_cpu_epilogue_t *ep) {
  const char *label = labels[kind];
  int ns = kind == K_CONV3D || kind == K_BP_INPUT_3D || kind == K_BP_FILTER_3D ? 3 : 2;
  int rank = ns + 2;
  bool depthwise = kind == K_DEPTHWISE || kind == K_BP_INPUT_DEPTHWISE ||
                   kind == K_BP_FILTER_DEPTHWISE;
  bool bp_input = kind == K_BP_INPUT_2D || kind == K_BP_INPUT_3D || kind == K_BP_INPUT_DEPTHWISE;
  bool bp_filter = kind == K_BP_FILTER_2D || kind == K_BP_FILTER_DEPTHWISE ||
                   kind == K_BP_FILTER_3D;
  nd_t g;
  WEFT_RETURN_IF_ERROR(nd_attrs(ctx, &g, ns, true, false));
  /* The three shapes: input x, filter f, output (out_backprop) dy; the sizes input stands for
   * the one the op computes. */
  weft_tensor_view_t x = {0}, f = {0}, dy = {0}, out;
  int64_t xdims[5], fdims[5], ydims[5];
  if (bp_input) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &f));
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &dy));
    WEFT_RETURN_IF_ERROR(read_sizes(ctx, label, 0, rank, kind == K_BP_INPUT_2D, &g, &f, &dy,
                                    xdims));
  } else {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
    WEFT_RETURN_IF_ERROR(need_rank(ctx, &x, label, "input", rank));
    memcpy(xdims, x.dims, sizeof(int64_t) * rank);
  }
  if (bp_filter) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &dy));
    WEFT_RETURN_IF_ERROR(read_sizes(ctx, label, 1, rank, false, &g, NULL, &dy, fdims));
  } else {
    if (!bp_input) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &f));
    WEFT_RETURN_IF_ERROR(need_rank(ctx, &f, label, "filter", rank));
    memcpy(fdims, f.dims, sizeof(int64_t) * rank);
  }
  if (bp_input || bp_filter) WEFT_RETURN_IF_ERROR(need_rank(ctx, &dy, label, "out_backprop", rank));
  nd_split(&g, xdims, &g.n, g.in, &g.c);
  g.k[0] = 1;
  for (int i = 0; i < ns; i++) g.k[3 - ns + i] = fdims[i];
  int64_t fin = fdims[ns], fout = fdims[ns + 1];
  int64_t groups, cg, mg;
  if (depthwise) {
    if (g.c != fin)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: input and filter must have the same depth: %lld vs %lld", label,
                             (long long)g.c, (long long)fin);
    groups = g.c;
    cg = 1;
    mg = fout;
    g.oc = g.c * fout;
  } else {
    if (fin <= 0 || g.c % fin != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: input depth must be evenly divisible by filter depth", label);
    groups = g.c / fin;
    cg = fin;
    g.oc = fout;
    if (fout % groups != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: the filter count %lld must be a multiple of the number of "
                             "groups %lld", label, (long long)fout, (long long)groups);
    mg = fout / groups;
  }
  WEFT_RETURN_IF_ERROR(nd_pads(ctx, &g, ns == 2));
  if (bp_input || bp_filter) {
    int64_t n, sp[3], c;
    nd_split(&g, dy.dims, &n, sp, &c);
    if (n != g.n)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: input and out_backprop must have the same batch size. Input "
                             "batch: %lld, outbackprop batch: %lld, batch_dim: 0", label,
                             (long long)g.n, (long long)n);
    if (c != g.oc)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: filter and out_backprop must have the same out_depth", label);
    for (int i = 3 - ns; i < 3; i++)
      if (sp[i] != g.out[i])
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "%s: Size of out_backprop doesn't match computed: actual = %lld, "
                               "computed = %lld spatial_dim: %d input: %lld filter: %lld output: "
                               "%lld stride: %lld dilation: %lld", label, (long long)sp[i],
                               (long long)g.out[i], i - (3 - ns) + (g.cfirst ? 2 : 1),
                               (long long)g.in[i], (long long)g.k[i], (long long)sp[i],
                               (long long)g.s[i], (long long)g.d[i]);
  }
  weft_dtype_t dt = bp_input ? f.dtype : x.dtype;
  if (bp_input) {
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, rank, xdims, &out));
  } else if (bp_filter) {
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, rank, fdims, &out));
  } else {
    nd_dims(&g, g.n, g.out, g.oc, ydims);
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, rank, ydims, &out));
  }
  if (out.num_elements == 0) return NULL;
  if (dt == WEFT_DT_INT32 && bp_input) {
    bp_input_int_t bj = {&g, cg, mg, f.data, dy.data, out.data};
    weft__cpu_parallel(ctx, g.n, nd_out_pixels(&g) * g.oc * nd_window(&g) * cg + 1,
                       bp_input_int_range, &bj);
    return NULL;
  }
  if (dt == WEFT_DT_FLOAT && ns == 2 &&
      (kind == K_DEPTHWISE || (groups == 1 && (kind == K_BP_INPUT_2D || kind == K_BP_FILTER_2D))))
    return conv2d_fast(ctx, kind, &g, &x, &f, &dy, &out, ep);
  if (ep)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s: no fused kernel for this layout", label);
  if (dt == WEFT_DT_FLOAT && ns == 3 && conv3d_fast_wanted(&g, groups))
    return conv3d_fast(ctx, kind, &g, &x, &f, &dy, &out);
  bool dbl = dt == WEFT_DT_DOUBLE;
  int64_t win = nd_window(&g), ip = nd_in_pixels(&g), op = nd_out_pixels(&g);
  conv_plan_t j = {&g, groups, cg, mg, win * cg, dbl, NULL, NULL, 0, 0};
  void *fbuf = NULL, *xbuf = NULL, *ybuf = NULL;
  if (!bp_filter) {
    WEFT_RETURN_IF_ERROR(scratch(ctx, dbl, f.num_elements, &fbuf));
    for (int64_t i = 0; i < f.num_elements; i++)
      buf_set(dbl, fbuf, i, weft__cpu_load_f(dt, f.data, i));
  }
  if (!bp_input) {
    WEFT_RETURN_IF_ERROR(to_cl(ctx, &x, g.cfirst, ip, g.c, dbl, &xbuf));
    j.x = xbuf;
  }
  if (bp_input || bp_filter) WEFT_RETURN_IF_ERROR(to_cl(ctx, &dy, g.cfirst, op, g.oc, dbl, &ybuf));
  if (bp_input) {
    WEFT_RETURN_IF_ERROR(scratch(ctx, dbl, out.num_elements, &xbuf));
    WEFT_RETURN_IF_ERROR(conv_backprop_input(ctx, &j, fbuf, ybuf, xbuf));
    from_cl(xbuf, dbl, &out, g.cfirst, ip, g.c);
  } else if (bp_filter) {
    void *fout_buf = NULL;
    WEFT_RETURN_IF_ERROR(scratch(ctx, dbl, out.num_elements, &fout_buf));
    WEFT_RETURN_IF_ERROR(conv_backprop_filter(ctx, &j, ybuf, fout_buf));
    for (int64_t i = 0; i < out.num_elements; i++)
      weft__cpu_store_f(dt, out.data, i, buf_get(dbl, fout_buf, i));
  } else {
    WEFT_RETURN_IF_ERROR(scratch(ctx, dbl, out.num_elements, &ybuf));
    WEFT_RETURN_IF_ERROR(conv_forward(ctx, &j, fbuf, ybuf));
    from_cl(ybuf, dbl, &out, g.cfirst, op, g.oc);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * AvgPool3D, MaxPool3D: windows clipped to the input; the average divides by the in-bounds
 * count (TensorFlow's SAME semantics); the max lets NaN win, like MaxPool. */

typedef struct pool_job {
  const nd_t *g;
  const weft_tensor_view_t *x, *y;
  bool is_max;
} pool_job_t;

/* The window of output pixel p clipped to the input, [lo, hi) per spatial dim; returns how many
 * elements it holds. */
static int64_t pool_window(const nd_t *g, int64_t p, int64_t lo[3], int64_t hi[3]) {
  int64_t o[3] = {p / (g->out[1] * g->out[2]), (p / g->out[2]) % g->out[1], p % g->out[2]};
  int64_t count = 1;
  for (int i = 0; i < 3; i++) {
    lo[i] = o[i] * g->s[i] - g->pb[i];
    hi[i] = lo[i] + g->k[i];
    if (lo[i] < 0) lo[i] = 0;
    if (hi[i] > g->in[i]) hi[i] = g->in[i];
    count *= hi[i] > lo[i] ? hi[i] - lo[i] : 0;
  }
  return count;
}

static void pool3d_range(void *arg, int64_t b, int64_t e) {
  const pool_job_t *j = arg;
  const nd_t *g = j->g;
  int64_t ip = nd_in_pixels(g), op = nd_out_pixels(g);
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / op, p = r % op;
    int64_t lo[3], hi[3];
    pool_window(g, p, lo, hi);
    for (int64_t c = 0; c < g->c; c++) {
      double acc = j->is_max ? -INFINITY : 0.0;
      int64_t count = 0;
      for (int64_t a = lo[0]; a < hi[0]; a++)
        for (int64_t bb = lo[1]; bb < hi[1]; bb++)
          for (int64_t cc = lo[2]; cc < hi[2]; cc++) {
            int64_t pix = (a * g->in[1] + bb) * g->in[2] + cc;
            double v = weft__cpu_load_f(j->x->dtype, j->x->data,
                                        layout_index(g->cfirst, n, pix, c, ip, g->c));
            if (j->is_max)
              acc = (v > acc || isnan(v)) && !isnan(acc) ? v : acc;
            else
              acc += v;
            count++;
          }
      if (!j->is_max) acc /= (double)(count ? count : 1);
      weft__cpu_store_f(j->y->dtype, j->y->data, layout_index(g->cfirst, n, p, c, op, g->c), acc);
    }
  }
}

/* MaxPool3DGrad, AvgPool3DGrad: each output's gradient goes back to its window, MaxPool3D's to
 * the window's first maximum (depth, then rows, then columns; NaN winning as in the forward
 * pool), AvgPool3D's shared by the in-bounds elements its mean divided by. One work unit is one
 * (image, channel): the only elements two windows can share. Sums run in double. */

typedef struct pool_grad_job {
  const nd_t *g;
  const weft_tensor_view_t *x, *dy; /* x: NULL for AvgPool3DGrad */
  double *dx;
} pool_grad_job_t;

static void pool3d_grad_range(void *arg, int64_t b, int64_t e) {
  const pool_grad_job_t *j = arg;
  const nd_t *g = j->g;
  int64_t ip = nd_in_pixels(g), op = nd_out_pixels(g);
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->c, c = r % g->c;
    for (int64_t p = 0; p < op; p++) {
      int64_t lo[3], hi[3];
      int64_t count = pool_window(g, p, lo, hi);
      if (count == 0) continue;
      double gv = weft__cpu_load_f(j->dy->dtype, j->dy->data,
                                   layout_index(g->cfirst, n, p, c, op, g->c));
      int64_t best_at = -1;
      double best = 0;
      for (int64_t a = lo[0]; a < hi[0]; a++)
        for (int64_t bb = lo[1]; bb < hi[1]; bb++)
          for (int64_t cc = lo[2]; cc < hi[2]; cc++) {
            int64_t at = layout_index(g->cfirst, n, (a * g->in[1] + bb) * g->in[2] + cc, c, ip,
                                      g->c);
            if (!j->x) {
              j->dx[at] += gv / (double)count;
              continue;
            }
            double v = weft__cpu_load_f(j->x->dtype, j->x->data, at);
            if (best_at < 0 || v > best || (isnan(v) && !isnan(best))) {
              best = v;
              best_at = at;
            }
          }
      if (j->x) j->dx[best_at] += gv;
    }
  }
}

static weft_status_t *k_pool3d_grad(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  const char *label = is_max ? "MaxPool3DGrad" : "AvgPool3DGrad";
  weft_tensor_view_t x = {0}, y, dy, dx;
  int64_t xdims[5];
  nd_t g;
  WEFT_RETURN_IF_ERROR(nd_attrs(ctx, &g, 3, false, true));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, is_max ? 2 : 1, &dy));
  if (is_max) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &y));
    WEFT_RETURN_IF_ERROR(need_rank(ctx, &x, label, "orig_input", 5));
    memcpy(xdims, x.dims, sizeof xdims);
  } else {
    WEFT_RETURN_IF_ERROR(read_sizes(ctx, label, 0, 5, false, &g, NULL, &dy, xdims));
  }
  WEFT_RETURN_IF_ERROR(need_rank(ctx, &dy, label, "grad", 5));
  nd_split(&g, xdims, &g.n, g.in, &g.c);
  WEFT_RETURN_IF_ERROR(nd_pads(ctx, &g, false));
  g.oc = g.c;
  int64_t ydims[5];
  nd_dims(&g, g.n, g.out, g.c, ydims);
  for (int k = 0; k < (is_max ? 2 : 1); k++) {
    const weft_tensor_view_t *t = k == 0 ? &dy : &y;
    if (t->rank == 5 && memcmp(t->dims, ydims, sizeof ydims) == 0) continue;
    char s[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "%s: %s has shape %s, expected %s (the pooled shape of the input)",
                           label, k == 0 ? "grad" : "orig_output",
                           weft__cpu_shape_str(t->rank, t->dims, s, sizeof s),
                           weft__cpu_shape_str(5, ydims, s2, sizeof s2));
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dy.dtype, 5, xdims, &dx));
  if (dx.num_elements == 0) return NULL;
  double *acc = NULL;
  WEFT_RETURN_IF_ERROR(scratch(ctx, true, dx.num_elements, (void **)&acc));
  /* float32 NDHWC: channel loops (cpu_pool_grad_fast.c), the same results; its window positions
   * are int32. */
  double win = 1;
  for (int i = 0; i < 3; i++) win *= (double)(g.k[i] < g.in[i] ? g.k[i] : g.in[i]);
  if (dy.dtype == WEFT_DT_FLOAT && !g.cfirst && win <= (double)INT32_MAX &&
      weft__cpu_pool_grad_f32_enabled()) {
    weft_cpu_pool3_grad_t p = {.n = g.n, .c = g.c, .is_max = is_max,
                               .x = is_max ? x.data : NULL, .dy = dy.data, .acc = acc,
                               .dx = dx.data};
    for (int i = 0; i < 3; i++) {
      p.in[i] = g.in[i];
      p.out[i] = g.out[i];
      p.k[i] = g.k[i];
      p.s[i] = g.s[i];
      p.pb[i] = g.pb[i];
    }
    weft__cpu_pool3d_grad_f32(ctx, &p);
    return NULL;
  }
  memset(acc, 0, sizeof(double) * (size_t)dx.num_elements);
  pool_grad_job_t j = {&g, is_max ? &x : NULL, &dy, acc};
  weft__cpu_parallel(ctx, g.n * g.c, nd_out_pixels(&g) * nd_window(&g) + 1, pool3d_grad_range,
                     &j);
  for (int64_t i = 0; i < dx.num_elements; i++) weft__cpu_store_f(dx.dtype, dx.data, i, acc[i]);
  return NULL;
}

static weft_status_t *k_conv(weft_kernel_ctx_t *ctx, void *state) {
  return conv_run(ctx, *(const conv_kind_t *)state, NULL);
}

weft_status_t *weft__cpu_depthwise_with_epilogue(weft_kernel_ctx_t *ctx,
                                                 const weft_cpu_epilogue_t *ep) {
  return conv_run(ctx, K_DEPTHWISE, ep);
}

static weft_status_t *k_pool3d(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  const char *label = is_max ? "MaxPool3D" : "AvgPool3D";
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  nd_t g;
  WEFT_RETURN_IF_ERROR(nd_attrs(ctx, &g, 3, false, true));
  WEFT_RETURN_IF_ERROR(need_rank(ctx, &x, label, "tensor_in", 5));
  nd_split(&g, x.dims, &g.n, g.in, &g.c);
  WEFT_RETURN_IF_ERROR(nd_pads(ctx, &g, false));
  g.oc = g.c;
  int64_t dims[5];
  nd_dims(&g, g.n, g.out, g.c, dims);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 5, dims, &y));
  if (y.num_elements == 0) return NULL;
  /* float32: loops over contiguous floats (cpu_pool3d_fast.c), the same results. */
  if (x.dtype == WEFT_DT_FLOAT && weft__cpu_pool3d_f32_enabled()) {
    weft_cpu_pool3_t p = {.n = g.n, .c = g.c, .cfirst = g.cfirst, .is_max = is_max,
                          .x = x.data, .y = y.data};
    for (int i = 0; i < 3; i++) {
      p.in[i] = g.in[i];
      p.out[i] = g.out[i];
      p.k[i] = g.k[i];
      p.s[i] = g.s[i];
      p.pb[i] = g.pb[i];
    }
    return weft__cpu_pool3d_f32(ctx, &p);
  }
  pool_job_t j = {&g, &x, &y, is_max};
  weft__cpu_parallel(ctx, g.n * nd_out_pixels(&g), g.c * nd_window(&g) + 1, pool3d_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MaxPoolWithArgmax (NHWC): TensorFlow's CPU loop takes a window's first element, then any
 * strictly greater one (so NaN counts only where it comes first); argmax is the flat index
 * (y * width + x) * channels + c, plus batch * height * width * channels when
 * include_batch_in_index. */

#define ARGMAX_TYPES(X)                                                                          \
  X(WEFT_DT_FLOAT, float) X(WEFT_DT_DOUBLE, double) X(WEFT_DT_INT32, int32_t)                    \
  X(WEFT_DT_INT64, int64_t) X(WEFT_DT_INT8, int8_t) X(WEFT_DT_INT16, int16_t)                    \
  X(WEFT_DT_UINT8, uint8_t) X(WEFT_DT_UINT16, uint16_t) X(WEFT_DT_UINT32, uint32_t)              \
  X(WEFT_DT_UINT64, uint64_t)

static weft_status_t *k_max_pool_argmax(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y, am;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  nd_t g;
  WEFT_RETURN_IF_ERROR(nd_attrs(ctx, &g, 2, false, true));
  g.cfirst = false;
  WEFT_RETURN_IF_ERROR(need_rank(ctx, &x, "MaxPoolWithArgmax", "tensor_in", 4));
  nd_split(&g, x.dims, &g.n, g.in, &g.c);
  WEFT_RETURN_IF_ERROR(nd_pads(ctx, &g, false));
  bool with_batch = weft__cpu_attr_bool(ctx, "include_batch_in_index", false);
  int64_t dims[4] = {g.n, g.out[1], g.out[2], g.c};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 4, dims, &y));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, WEFT_DT_INT64, 4, dims, &am));
  int64_t ip = nd_in_pixels(&g), op = nd_out_pixels(&g);
  int64_t *idx = am.data;
  for (int64_t n = 0; n < g.n; n++)
    for (int64_t p = 0; p < op; p++) {
      int64_t oy = p / g.out[2], ox = p % g.out[2];
      int64_t y0 = oy * g.s[1] - g.pb[1], x0 = ox * g.s[2] - g.pb[2];
      int64_t y1 = y0 + g.k[1] < g.in[1] ? y0 + g.k[1] : g.in[1];
      int64_t x1 = x0 + g.k[2] < g.in[2] ? x0 + g.k[2] : g.in[2];
      if (y0 < 0) y0 = 0;
      if (x0 < 0) x0 = 0;
      for (int64_t c = 0; c < g.c; c++) {
        int64_t best = -1, o = (n * op + p) * g.c + c;
        for (int64_t yy = y0; yy < y1; yy++)
          for (int64_t xx = x0; xx < x1; xx++) {
            int64_t i = (n * ip + yy * g.in[2] + xx) * g.c + c;
            bool take = best < 0;
            if (!take) {
              switch (x.dtype) {
#define ARGMAX_CMP(DT, T)                                             \
  case DT: take = ((const T *)x.data)[best] < ((const T *)x.data)[i]; break;
                ARGMAX_TYPES(ARGMAX_CMP)
#undef ARGMAX_CMP
                default:
                  take = weft__cpu_load_f(x.dtype, x.data, best) <
                         weft__cpu_load_f(x.dtype, x.data, i);
              }
            }
            if (take) best = i;
          }
        if (best < 0) {
          /* An empty window (only with an empty input, which has no outputs). */
          idx[o] = -1;
          continue;
        }
        WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, o, &x, best, 1));
        idx[o] = with_batch ? best : best - n * ip * g.c;
      }
    }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                           WEFT_DT_BFLOAT16};
static const weft_dtype_t bp_input_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                              WEFT_DT_BFLOAT16, WEFT_DT_INT32};
static const weft_dtype_t maxpool3d_types[] = {WEFT_DT_FLOAT, WEFT_DT_HALF, WEFT_DT_BFLOAT16};
static const weft_dtype_t argmax_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32, WEFT_DT_INT64,  WEFT_DT_INT8,   WEFT_DT_INT16,
    WEFT_DT_UINT8, WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_HALF, WEFT_DT_BFLOAT16};
static const weft_dtype_t int64_only[] = {WEFT_DT_INT64};
static const char *const sizes0_host[] = {"input_sizes", NULL};
static const char *const sizes1_host[] = {"filter_sizes", NULL};
static const char *const shape0_host[] = {"orig_input_shape", NULL};
static int max_tag; /* user_data != NULL marks MaxPool3D for the shared pool kernel */
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

weft_status_t *weft__cpu_register_conv_nd(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t specs[] = {
      {"Conv3D", k_conv, "T", float_types, N_OF(float_types), NULL, NULL, NULL,
       (void *)&kinds[K_CONV3D]},
      {"DepthwiseConv2dNative", k_conv, "T", float_types, N_OF(float_types), NULL, NULL, NULL,
       (void *)&kinds[K_DEPTHWISE]},
      {"Conv2DBackpropInput", k_conv, "T", bp_input_types, N_OF(bp_input_types), sizes0_host,
       NULL, NULL, (void *)&kinds[K_BP_INPUT_2D]},
      {"Conv3DBackpropInputV2", k_conv, "T", float_types, N_OF(float_types), sizes0_host, NULL,
       NULL, (void *)&kinds[K_BP_INPUT_3D]},
      {"DepthwiseConv2dNativeBackpropInput", k_conv, "T", float_types, N_OF(float_types),
       sizes0_host, NULL, NULL, (void *)&kinds[K_BP_INPUT_DEPTHWISE]},
      {"Conv2DBackpropFilter", k_conv, "T", float_types, N_OF(float_types), sizes1_host, NULL,
       NULL, (void *)&kinds[K_BP_FILTER_2D]},
      {"DepthwiseConv2dNativeBackpropFilter", k_conv, "T", float_types, N_OF(float_types),
       sizes1_host, NULL, NULL, (void *)&kinds[K_BP_FILTER_DEPTHWISE]},
      {"AvgPool3D", k_pool3d, "T", float_types, N_OF(float_types), NULL, NULL, NULL, NULL},
      {"MaxPool3D", k_pool3d, "T", maxpool3d_types, N_OF(maxpool3d_types), NULL, NULL, NULL,
       &max_tag},
      {"Conv3DBackpropFilterV2", k_conv, "T", float_types, N_OF(float_types), sizes1_host, NULL,
       NULL, (void *)&kinds[K_BP_FILTER_3D]},
      {"AvgPool3DGrad", k_pool3d_grad, "T", float_types, N_OF(float_types), shape0_host, NULL,
       NULL, NULL},
  };
  WEFT_RETURN_IF_ERROR(weft__cpu_register_specs(reg, specs, N_OF(specs)));
  /* MaxPool3DGrad's orig_input and orig_output have their own dtype, TInput. */
  const weft_type_constraint_t mg[] = {{"T", maxpool3d_types, N_OF(maxpool3d_types)},
                                       {"TInput", maxpool3d_types, N_OF(maxpool3d_types)}};
  WEFT_RETURN_IF_ERROR(weft__cpu_register_full(reg, "MaxPool3DGrad", mg, 2, NULL, NULL,
                                               k_pool3d_grad, NULL, &max_tag));
  /* TensorFlow's CPU kernel produces int64 argmax only. */
  const weft_type_constraint_t c[] = {{"T", argmax_types, N_OF(argmax_types)},
                                      {"Targmax", int64_only, 1}};
  return weft__cpu_register_full(reg, "MaxPoolWithArgmax", c, 2, NULL, NULL, k_max_pool_argmax,
                                 NULL, NULL);
}
