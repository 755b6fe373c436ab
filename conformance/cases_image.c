/* cases_image.c: conformance cases of the convolution, pooling and padding ops: Conv2D (SAME,
 * VALID and explicit padding, strides, dilations, grouped filters, NHWC and NCHW, 1x1 and odd
 * sizes), MaxPool (SAME/VALID/EXPLICIT, NaN, integer dtypes), AvgPool (SAME divides by the
 * in-bounds count), MaxPoolV2 (window and strides as inputs), their gradients MaxPoolGrad and
 * MaxPoolGradV2 (to the first maximum) and AvgPoolGrad over the same windows, MaxPoolGrad's
 * gradient MaxPoolGradGrad (as MaxPoolGrad's adjoint), PadV2 (a constant value), MirrorPad
 * (REFLECT and SYMMETRIC) and its gradient MirrorPadGrad (as MirrorPad's adjoint). */
#include <math.h>
#include <string.h>

#include "reference.h"

typedef struct conv_spec {
  const char *name;
  int64_t in[4];      /* N, H, W, C (NHWC order, permuted for NCHW) */
  int64_t filter[4];  /* KH, KW, C/groups, M (or ksize for pooling) */
  int64_t stride[2];
  int64_t dilation[2];
  const char *padding;
  int64_t pads[4];    /* EXPLICIT: top, bottom, left, right */
  bool nchw;
} conv_spec_t;

static const conv_spec_t conv_cases[] = {
    {"valid_3x3", {1, 5, 5, 2}, {3, 3, 2, 4}, {1, 1}, {1, 1}, "VALID", {0}, false},
    {"same_3x3", {2, 5, 6, 3}, {3, 3, 3, 2}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"same_stride2_even", {1, 8, 8, 2}, {3, 3, 2, 3}, {2, 2}, {1, 1}, "SAME", {0}, false},
    {"valid_stride_2x3", {1, 9, 10, 1}, {2, 3, 1, 2}, {2, 3}, {1, 1}, "VALID", {0}, false},
    {"explicit_asymmetric", {1, 5, 5, 2}, {3, 3, 2, 2}, {2, 2}, {1, 1}, "EXPLICIT", {1, 0, 2, 1},
     false},
    {"dilated_2", {1, 9, 9, 2}, {3, 3, 2, 2}, {1, 1}, {2, 2}, "SAME", {0}, false},
    {"1x1_filter", {2, 4, 4, 8}, {1, 1, 8, 5}, {1, 1}, {1, 1}, "VALID", {0}, false},
    {"grouped_2", {1, 6, 6, 4}, {3, 3, 2, 6}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"nchw_same", {2, 5, 5, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, "SAME", {0}, true},
    {"filter_bigger_than_input_same", {1, 2, 2, 1}, {5, 5, 1, 1}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"odd_17x23_c7", {1, 17, 23, 7}, {5, 3, 7, 11}, {2, 1}, {1, 1}, "SAME", {0}, false},
    {"empty_batch", {0, 4, 4, 2}, {3, 3, 2, 2}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"large_32x32x16", {2, 32, 32, 16}, {3, 3, 16, 32}, {1, 1}, {1, 1}, "SAME", {0}, false},
    /* The float32 NHWC paths (plugins/cpu/cpu_conv_fast.c): pointwise (no im2col), strided and
     * padded 1x1, im2col tiles that cross images, several tiles per thread, empty outputs. */
    {"1x1_stride1_batch3", {3, 7, 9, 13}, {1, 1, 13, 6}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"1x1_stride2_valid", {2, 9, 7, 5}, {1, 1, 5, 4}, {2, 2}, {1, 1}, "VALID", {0}, false},
    {"1x1_stride2_same_even", {1, 8, 8, 6}, {1, 1, 6, 3}, {2, 2}, {1, 1}, "SAME", {0}, false},
    {"1x1_explicit_pad", {1, 5, 5, 3}, {1, 1, 3, 2}, {1, 1}, {1, 1}, "EXPLICIT", {1, 0, 0, 2},
     false},
    {"empty_output_valid", {1, 2, 2, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, "VALID", {0}, false},
    {"large_1x1_28x28x64_batch2", {2, 28, 28, 64}, {1, 1, 64, 32}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"large_tiles_45x37x5_batch3", {3, 45, 37, 5}, {3, 3, 5, 17}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"large_5x5_stride2_31x29x6", {2, 31, 29, 6}, {5, 5, 6, 8}, {2, 2}, {1, 1}, "SAME", {0},
     false},
    {"large_dilated3_valid_40x36x4", {2, 40, 36, 4}, {3, 3, 4, 9}, {1, 1}, {3, 3}, "VALID", {0},
     false},
    {"large_1x1_stride2_30x30x32", {1, 30, 30, 32}, {1, 1, 32, 24}, {2, 2}, {1, 1}, "SAME", {0},
     false},
    /* The direct few-tap kernel (plugins/cpu/cpu_convd_avx512.c: up to 64 taps, filters a
     * multiple of 16): blocks of pixels with a remainder, edge pixels on both sides, strides 2
     * and 2x3, explicit pads, several 64-filter chunks and 16/32/48-filter tails; 24 filters
     * and dilation across fall back to the GEMM. */
    {"fewtaps_odd_29x3_m64", {1, 5, 29, 3}, {3, 3, 3, 64}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"fewtaps_stride2_batch2_m48", {2, 11, 17, 3}, {3, 3, 3, 48}, {2, 2}, {1, 1}, "SAME", {0},
     false},
    {"fewtaps_stride_2x3_valid_m16", {1, 9, 40, 2}, {2, 3, 2, 16}, {2, 3}, {1, 1}, "VALID", {0},
     false},
    {"fewtaps_explicit_m128", {1, 6, 23, 4}, {3, 3, 4, 128}, {1, 1}, {1, 1}, "EXPLICIT",
     {2, 0, 1, 3}, false},
    {"fewtaps_5x5_m32", {1, 12, 19, 2}, {5, 5, 2, 32}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"fewtaps_m24_fallback", {1, 7, 15, 3}, {3, 3, 3, 24}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"fewtaps_dilated_fallback", {1, 10, 14, 3}, {3, 3, 3, 32}, {1, 1}, {2, 2}, "SAME", {0},
     false},
    /* Winograd's F(2x2, 3x3) (plugins/cpu/cpu_conv_winograd.c): 3x3 at stride 1 over 32 and
     * more channels; odd output sizes (a last tile half outside), images beside each other in a
     * block, explicit pads, NCHW through the transposes; and the shapes it leaves (stride 2,
     * dilation 2, 16 channels). */
    {"winograd_same_16x16x32_m48", {1, 16, 16, 32}, {3, 3, 32, 48}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"winograd_valid_odd_batch2_m32", {2, 19, 13, 48}, {3, 3, 48, 32}, {1, 1}, {1, 1}, "VALID",
     {0}, false},
    {"winograd_explicit_m64", {1, 16, 16, 64}, {3, 3, 64, 64}, {1, 1}, {1, 1}, "EXPLICIT",
     {2, 1, 0, 2}, false},
    {"winograd_nchw_batch2_m32", {2, 14, 11, 32}, {3, 3, 32, 32}, {1, 1}, {1, 1}, "SAME", {0},
     true},
    {"winograd_40x36x32_m96", {1, 40, 36, 32}, {3, 3, 32, 96}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"winograd_stride2_fallback", {1, 16, 16, 32}, {3, 3, 32, 32}, {2, 2}, {1, 1}, "SAME", {0},
     false},
    {"winograd_dilated_fallback", {1, 16, 16, 32}, {3, 3, 32, 32}, {1, 1}, {2, 2}, "SAME", {0},
     false},
    {"winograd_c16_fallback", {1, 16, 16, 16}, {3, 3, 16, 32}, {1, 1}, {1, 1}, "SAME", {0},
     false},
    {"winograd_few_tiles_fallback", {1, 14, 14, 32}, {3, 3, 32, 32}, {1, 1}, {1, 1}, "SAME", {0},
     false},
};

static void fill_window(const conv_spec_t *s, cf_window_t *w, bool pool) {
  memset(w, 0, sizeof *w);
  for (int i = 0; i < 2; i++) {
    w->ksize[i] = s->filter[i];
    w->stride[i] = s->stride[i];
    w->dilation[i] = pool ? 1 : s->dilation[i];
    w->pad_before[i] = s->pads[2 * i];
    w->pad_after[i] = s->pads[2 * i + 1];
  }
  w->nchw = s->nchw;
  int64_t hw[2] = {s->in[1], s->in[2]};
  cf_window_resolve(w, s->padding, hw);
}

static int64_t layout_dims(const conv_spec_t *s, int64_t *dims) {
  if (s->nchw) {
    dims[0] = s->in[0];
    dims[1] = s->in[3];
    dims[2] = s->in[1];
    dims[3] = s->in[2];
  } else {
    memcpy(dims, s->in, sizeof s->in);
  }
  return 4;
}

static void set_4(cf_case_t *c, const char *name, bool nchw, int64_t a, int64_t b) {
  int64_t v[4] = {1, a, b, 1};
  if (nchw) {
    v[1] = 1;
    v[2] = a;
    v[3] = b;
  }
  /* MaxPoolV2 and MaxPoolGradV2 take ksize and strides as their last inputs. */
  if (strstr(c->op, "V2") != NULL)
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 4, v));
  else
    cf_case_attr_ints(c, name, v, 4);
}

/* MaxPoolGradGrad's reference: MaxPoolGrad is linear in its dy, and MaxPoolGradGrad is its
 * adjoint, so output element o is <MaxPoolGrad(x, e_o), g> for the one-hot e_o. */
static cf_array_t *ref_max_pool_grad_grad(const cf_array_t *x, const cf_array_t *y,
                                          const cf_array_t *g, const cf_window_t *w) {
  cf_array_t *out = cf_array_new(g->dtype, y->rank, y->dims);
  cf_array_t *e = cf_array_new(g->dtype, y->rank, y->dims);
  for (int64_t o = 0; o < y->n; o++) {
    e->v[o] = 1;
    cf_array_t *back = cf_ref_pool2d_grad(x, e, w, true);
    double dot = 0;
    for (int64_t i = 0; i < back->n; i++) dot += back->v[i] * g->v[i];
    out->v[o] = dot;
    cf_array_free(back);
    e->v[o] = 0;
  }
  cf_array_free(e);
  cf_array_round(out);
  return out;
}

static void set_explicit(cf_case_t *c, const conv_spec_t *s) {
  if (strcmp(s->padding, "EXPLICIT") != 0) return;
  int64_t p[8] = {0, 0, s->pads[0], s->pads[1], s->pads[2], s->pads[3], 0, 0};
  if (s->nchw) {
    int64_t q[8] = {0, 0, 0, 0, s->pads[0], s->pads[1], s->pads[2], s->pads[3]};
    memcpy(p, q, sizeof p);
  }
  cf_case_attr_ints(c, "explicit_paddings", p, 8);
}

static void emit_conv2d(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  for (size_t i = 0; i < G_N_ELEMENTS(conv_cases); i++) {
    const conv_spec_t *s = &conv_cases[i];
    if (strncmp(s->name, "large", 5) == 0 && dt != WEFT_DT_FLOAT) continue;
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t dims[4];
    layout_dims(s, dims);
    bool is_float = cf_dtype_is_float(dt);
    cf_array_t *x = cf_gen_uniform(&rng, dt, 4, dims, is_float ? -1 : -5, is_float ? 1 : 5);
    cf_array_t *f = cf_gen_uniform(&rng, dt, 4, s->filter, is_float ? -1 : -3, is_float ? 1 : 3);
    cf_window_t w;
    fill_window(s, &w, false);
    cf_case_expect(c, cf_ref_conv2d(x, f, &w));
    cf_case_input(c, x);
    cf_case_input(c, f);
    set_4(c, "strides", s->nchw, s->stride[0], s->stride[1]);
    if (s->dilation[0] != 1 || s->dilation[1] != 1)
      set_4(c, "dilations", s->nchw, s->dilation[0], s->dilation[1]);
    cf_case_attr_string(c, "padding", s->padding);
    set_explicit(c, s);
    if (s->nchw) cf_case_attr_string(c, "data_format", "NCHW");
    if (is_float) {
      double k = (double)(s->filter[0] * s->filter[1] * s->filter[2]);
      c->tol.atol += 4 * c->tol.rtol * k;
    }
    cf_run_case(ctx, c);
  }
}

static const conv_spec_t pool_cases[] = {
    {"valid_2x2_s2", {1, 4, 4, 2}, {2, 2, 0, 0}, {2, 2}, {1, 1}, "VALID", {0}, false},
    {"same_3x3_s1", {2, 5, 6, 3}, {3, 3, 0, 0}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"same_3x3_s2_odd", {1, 7, 9, 2}, {3, 3, 0, 0}, {2, 2}, {1, 1}, "SAME", {0}, false},
    {"valid_window_3x2_stride_1x2", {1, 6, 7, 3}, {3, 2, 0, 0}, {1, 2}, {1, 1}, "VALID", {0},
     false},
    {"explicit", {1, 5, 5, 1}, {3, 3, 0, 0}, {2, 2}, {1, 1}, "EXPLICIT", {1, 1, 0, 2}, false},
    {"nchw", {2, 6, 6, 3}, {2, 2, 0, 0}, {2, 2}, {1, 1}, "VALID", {0}, true},
    {"global", {2, 5, 7, 4}, {5, 7, 0, 0}, {1, 1}, {1, 1}, "VALID", {0}, false},
    {"1x1_identity", {1, 3, 3, 2}, {1, 1, 0, 0}, {1, 1}, {1, 1}, "VALID", {0}, false},
    {"empty_batch", {0, 4, 4, 2}, {2, 2, 0, 0}, {2, 2}, {1, 1}, "VALID", {0}, false},
    {"large_64x64x16", {2, 64, 64, 16}, {3, 3, 0, 0}, {2, 2}, {1, 1}, "SAME", {0}, false},
    /* Stride 1 along x: the windows inside a row are one span of 16-element blocks and a tail
     * (plugins/cpu/cpu_pool_fast.c), the edges apart; NCHW planes the same way. */
    {"same_3x2_s1_c10", {2, 7, 23, 10}, {3, 2, 0, 0}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"nchw_same_1x3_s1_row", {2, 1, 50, 3}, {1, 3, 0, 0}, {1, 1}, {1, 1}, "SAME", {0}, true},
    {"nchw_valid_2x4_s1", {1, 5, 37, 2}, {2, 4, 0, 0}, {2, 1}, {1, 1}, "VALID", {0}, true},
    /* The float32 NHWC gradients' channel loops (plugins/cpu/cpu_pool_grad_impl.h): batches,
     * channels that are no multiple of 16 and more than its block of 64, stride below and
     * above the window, a window of 1 with a stride, input rows split over the threads. */
    {"same_3x3_s2_c17", {2, 9, 11, 17}, {3, 3, 0, 0}, {2, 2}, {1, 1}, "SAME", {0}, false},
    {"valid_2x2_s3_c5", {3, 8, 8, 5}, {2, 2, 0, 0}, {3, 3}, {1, 1}, "VALID", {0}, false},
    {"same_1x1_s2", {2, 6, 5, 3}, {1, 1, 0, 0}, {2, 2}, {1, 1}, "SAME", {0}, false},
    {"same_3x3_s1_c70", {2, 11, 13, 70}, {3, 3, 0, 0}, {1, 1}, {1, 1}, "SAME", {0}, false},
    {"large_same_3x3_s2_c24", {4, 32, 32, 24}, {3, 3, 0, 0}, {2, 2}, {1, 1}, "SAME", {0}, false},
};

/* One NHWC pool case named s->name over the given values (s->in's elements). */
static void emit_pool_values(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                             const conv_spec_t *s, const double *values) {
  cf_case_t *c = cf_case_new(op, s->name, dt);
  int64_t n = s->in[0] * s->in[1] * s->in[2] * s->in[3];
  cf_array_t *flat = cf_array_vec(dt, n, values);
  cf_array_t *x = cf_array_reshape(flat, 4, s->in);
  cf_array_free(flat);
  cf_window_t w;
  fill_window(s, &w, true);
  cf_case_expect(c, cf_ref_pool2d(x, &w, strncmp(op, "MaxPool", 7) == 0));
  cf_case_input(c, x);
  set_4(c, "ksize", false, s->filter[0], s->filter[1]);
  set_4(c, "strides", false, s->stride[0], s->stride[1]);
  cf_case_attr_string(c, "padding", s->padding);
  cf_run_case(ctx, c);
}

/* MaxPool, AvgPool, and their gradients MaxPoolGrad(x, MaxPool(x), dy) and
 * AvgPoolGrad(shape of x, dy) over the same windows. */
static void emit_pool(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool is_max = strncmp(op, "MaxPool", 7) == 0, grad = strstr(op, "Grad") != NULL;
  bool grad_grad = strcmp(op, "MaxPoolGradGrad") == 0;
  /* Only MaxPool and MaxPoolGrad have EXPLICIT padding. */
  bool explicit_ok = strcmp(op, "MaxPool") == 0 || strcmp(op, "MaxPoolGrad") == 0;
  for (size_t i = 0; i < G_N_ELEMENTS(pool_cases); i++) {
    const conv_spec_t *s = &pool_cases[i];
    if (strcmp(s->padding, "EXPLICIT") == 0 && !explicit_ok) continue;
    if (strncmp(s->name, "large", 5) == 0 && (dt != WEFT_DT_FLOAT || grad_grad)) continue;
    /* MaxPoolGradGrad's adjoint reference costs one MaxPoolGrad per output element: the
     * wide-channel cases made for MaxPoolGrad's channel loops would take minutes under the
     * sanitizers. */
    if (grad_grad && s->in[0] * s->in[1] * s->in[2] * s->in[3] > 4096) continue;
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t dims[4];
    layout_dims(s, dims);
    cf_array_t *x = cf_gen_uniform(&rng, dt, 4, dims, 0, 0);
    cf_window_t w;
    fill_window(s, &w, true);
    if (grad_grad) {
      cf_array_t *y = cf_ref_pool2d(x, &w, true);
      cf_array_t *g = cf_gen_uniform(&rng, dt, 4, dims, 0, 0);
      cf_case_expect(c, ref_max_pool_grad_grad(x, y, g, &w));
      cf_case_input(c, x);
      cf_case_input(c, y);
      cf_case_input(c, g);
    } else if (grad) {
      cf_array_t *y = cf_ref_pool2d(x, &w, true);
      cf_array_t *dy = cf_gen_uniform(&rng, dt, 4, y->dims, 0, 0);
      cf_case_expect(c, cf_ref_pool2d_grad(x, dy, &w, is_max));
      if (is_max) {
        cf_case_input(c, x);
        cf_case_input(c, y);
      } else {
        cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 4, dims));
        cf_array_free(x);
        cf_array_free(y);
      }
      cf_case_input(c, dy);
    } else {
      cf_case_expect(c, cf_ref_pool2d(x, &w, is_max));
      cf_case_input(c, x);
    }
    set_4(c, "ksize", s->nchw, s->filter[0], s->filter[1]);
    set_4(c, "strides", s->nchw, s->stride[0], s->stride[1]);
    cf_case_attr_string(c, "padding", s->padding);
    set_explicit(c, s);
    if (s->nchw) cf_case_attr_string(c, "data_format", "NCHW");
    /* Means, and the gradients' overlapping windows, add up in the dtype. */
    if (!is_max || grad) c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
  if (cf_dtype_is_float(dt) && !grad) {
    /* NaN inside a window poisons that window only; -Inf is an ordinary value. */
    double v[16] = {1, 2, NAN, 4, 5, 6, 7, 8, -INFINITY, 1, 2, 3, 4, 5, 6, INFINITY};
    conv_spec_t s = {"nan_inf", {1, 4, 4, 1}, {2, 2, 0, 0}, {2, 2}, {1, 1}, "VALID", {0}, false};
    emit_pool_values(ctx, op, dt, &s, v);
    /* The same at stride 1 over rows long enough for the span's blocks: NaN and infinities
     * in blocks and at the edges. */
    double r[3 * 40];
    for (int i = 0; i < 3 * 40; i++) r[i] = (double)(i * 7 % 11) - 5.0;
    r[0] = NAN, r[17] = NAN, r[58] = INFINITY, r[63] = -INFINITY, r[79] = NAN, r[101] = NAN;
    conv_spec_t s1 = {"nan_inf_stride1", {1, 3, 40, 1}, {2, 3, 0, 0}, {1, 1}, {1, 1}, "SAME",
                      {0}, false};
    emit_pool_values(ctx, op, dt, &s1, r);
  }
}

/* MirrorPadGrad's reference: MirrorPad is linear, MirrorPadGrad its adjoint, so element j of
 * the result is <MirrorPad(e_j), dy> for the one-hot e_j of x's shape. */
static cf_array_t *ref_mirror_pad_grad(const cf_array_t *x, const cf_array_t *dy,
                                       const int64_t *pads, int mode) {
  cf_array_t *out = cf_array_new(dy->dtype, x->rank, x->dims);
  cf_array_t *e = cf_array_new(dy->dtype, x->rank, x->dims);
  for (int64_t j = 0; j < x->n; j++) {
    e->v[j] = 1;
    cf_array_t *padded = cf_ref_pad(e, pads, 0, mode);
    double dot = 0;
    for (int64_t i = 0; i < padded->n; i++) dot += padded->v[i] * dy->v[i];
    out->v[j] = dot;
    cf_array_free(padded);
    e->v[j] = 0;
  }
  cf_array_free(e);
  cf_array_round(out);
  return out;
}

static void emit_pad_v2(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool grad = strcmp(op, "MirrorPadGrad") == 0;
  bool mirror = grad || strcmp(op, "MirrorPad") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3], pads[6];
    int mode; /* MirrorPad: 1 REFLECT, 2 SYMMETRIC */
  } pd_t;
  static const pd_t cases[] = {
      {"2d", 2, {3, 4}, {1, 2, 2, 1}, 1},
      {"2d_symmetric", 2, {3, 4}, {2, 1, 0, 3}, 2},
      {"rank3", 3, {2, 3, 4}, {1, 1, 0, 2, 3, 0}, 1},
      {"no_padding", 2, {2, 3}, {0, 0, 0, 0}, 2},
      {"rank1_odd", 1, {1023}, {5, 9}, 1},
      {"empty_dim", 2, {0, 3}, {0, 0, 1, 1}, 2},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const pd_t *p = &cases[i];
    if (mirror && strcmp(p->name, "empty_dim") == 0) continue;
    cf_case_t *c = cf_case_new(op, p->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dt, p->rank, p->dims, g);
    double value = dt == WEFT_DT_BOOL ? 1 : cf_dtype_is_signed(dt) ? -7 : 9;
    cf_array_t *y = cf_ref_pad(x, p->pads, cf_round_to_dtype(dt, value), mirror ? p->mode : 0);
    if (grad) {
      cf_array_t *dy = cf_gen_array(&rng, dt, y->rank, y->dims, g);
      cf_array_free(y);
      cf_case_expect(c, ref_mirror_pad_grad(x, dy, p->pads, p->mode));
      cf_array_free(x);
      x = dy;
    } else {
      cf_case_expect(c, y);
    }
    cf_case_input(c, x);
    int64_t pd[2] = {p->rank, 2};
    cf_array_t *pads = cf_array_new(i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32, 2, pd);
    for (int k = 0; k < 2 * p->rank; k++) pads->v[k] = (double)p->pads[k];
    cf_case_const_input(c, pads);
    if (mirror)
      cf_case_attr_string(c, "mode", p->mode == 1 ? "REFLECT" : "SYMMETRIC");
    else
      cf_case_input(c, cf_array_scalar(dt, value));
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t pad_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                          WEFT_DT_BFLOAT16, WEFT_DT_INT8, WEFT_DT_INT16,
                                          WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_UINT8,
                                          WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64,
                                          WEFT_DT_BOOL, WEFT_DT_INVALID};

static const weft_dtype_t mirror_grad_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                                  WEFT_DT_BFLOAT16, WEFT_DT_INT32,
                                                  WEFT_DT_INVALID};

const cf_suite_t cf_suites_image[] = {
    {"Conv2D", cf_dtypes_numeric, emit_conv2d, NULL},
    {"MaxPool", cf_dtypes_numeric, emit_pool, NULL},
    {"MaxPoolGrad", cf_dtypes_float, emit_pool, NULL},
    {"MaxPoolV2", cf_dtypes_numeric, emit_pool, NULL},
    {"MaxPoolGradV2", cf_dtypes_float, emit_pool, NULL},
    {"MaxPoolGradGrad", cf_dtypes_float, emit_pool, NULL},
    {"AvgPoolGrad", cf_dtypes_float, emit_pool, NULL},
    {"AvgPool", cf_dtypes_numeric, emit_pool, NULL},
    {"PadV2", pad_dtypes, emit_pad_v2, NULL},
    {"MirrorPad", pad_dtypes, emit_pad_v2, NULL},
    {"MirrorPadGrad", mirror_grad_dtypes, emit_pad_v2, NULL},
    {NULL, NULL, NULL, NULL},
};
