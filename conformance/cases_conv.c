/* cases_conv.c: conformance cases of the convolution family beyond Conv2D: Conv2DBackpropInput
 * (the transposed convolution), Conv2DBackpropFilter, DepthwiseConv2dNative and its two
 * gradients, Conv3D, Conv3DBackpropInputV2, Conv3DBackpropFilterV2 (SAME / VALID / EXPLICIT,
 * strides, dilations, NHWC and NCHW, empty batches, mismatched shapes), AvgPool3D, MaxPool3D and
 * their gradients, MaxPoolWithArgmax (ties, NaN, include_batch_in_index), FusedBatchNorm, V2 and
 * V3 (training, inference, exponential_avg_factor, NCHW, 5-D), their gradients
 * FusedBatchNormGrad, V2 and V3 (training, inference, NCHW, 5-D, a wrong scale size), LRN and
 * LRNGrad. */
#include <math.h>
#include <string.h>

#include "reference_conv.h"

typedef struct conv_spec {
  const char *name;
  int ns;
  int64_t n, sp[3], c;  /* input: batch, spatial (depth first; 1 for 2-D), channels */
  int64_t k[3], m;      /* window and filter outputs (depthwise: multiplier) */
  int64_t s[3], d[3];
  const char *padding;
  int64_t pads[6];      /* EXPLICIT: before/after per spatial dim (2-D: the last four) */
  bool cfirst;
  int64_t groups;       /* 0: 1 (depthwise sets c) */
} conv_spec_t;

static const conv_spec_t conv2d_cases[] = {
    {"valid_3x3", 2, 1, {1, 5, 5}, 2, {1, 3, 3}, 4, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false, 0},
    {"same_3x3", 2, 2, {1, 5, 6}, 3, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false, 0},
    {"same_stride2", 2, 1, {1, 8, 7}, 2, {1, 3, 3}, 3, {1, 2, 2}, {1, 1, 1}, "SAME", {0}, false,
     0},
    {"valid_stride_2x3", 2, 1, {1, 9, 10}, 1, {1, 2, 3}, 2, {1, 2, 3}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"explicit", 2, 1, {1, 5, 5}, 2, {1, 3, 3}, 2, {1, 2, 2}, {1, 1, 1}, "EXPLICIT",
     {0, 0, 1, 0, 2, 1}, false, 0},
    {"dilated_2", 2, 1, {1, 9, 9}, 2, {1, 3, 3}, 2, {1, 1, 1}, {1, 2, 2}, "SAME", {0}, false, 0},
    {"nchw_same_stride2", 2, 2, {1, 5, 5}, 3, {1, 3, 3}, 4, {1, 2, 2}, {1, 1, 1}, "SAME", {0},
     true, 0},
    {"kernel_4_stride_2", 2, 1, {1, 6, 6}, 3, {1, 4, 4}, 2, {1, 2, 2}, {1, 1, 1}, "SAME", {0},
     false, 0},
    {"empty_batch", 2, 0, {1, 4, 4}, 2, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false, 0},
    /* A 7x7 window at stride 2 over 8: SAME pads 5 in all, 2 before and 3 after (tf.nn.conv2d_transpose
     * 4x4 -> 8x8, as in the dl4j conv_4 graph). */
    {"same_7x7_stride2_odd_pad", 2, 2, {1, 8, 8}, 4, {1, 7, 7}, 3, {1, 2, 2}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    {"large_32x32x16", 2, 2, {1, 32, 32}, 16, {1, 3, 3}, 16, {1, 2, 2}, {1, 1, 1}, "SAME", {0},
     false, 0},
    /* The float32 NHWC gradients (plugins/cpu/cpu_conv_fast.c): pointwise, strided 1x1, tiles
     * over several images and threads, empty outputs. */
    {"1x1_stride1_batch3", 2, 3, {1, 7, 9}, 5, {1, 1, 1}, 6, {1, 1, 1}, {1, 1, 1}, "SAME", {0},
     false, 0},
    {"1x1_stride2_valid", 2, 2, {1, 9, 7}, 5, {1, 1, 1}, 4, {1, 2, 2}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"empty_output_valid", 2, 1, {1, 2, 2}, 3, {1, 3, 3}, 4, {1, 1, 1}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"large_1x1_28x28x64", 2, 2, {1, 28, 28}, 64, {1, 1, 1}, 32, {1, 1, 1}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    {"large_tiles_45x37x5", 2, 3, {1, 45, 37}, 5, {1, 3, 3}, 17, {1, 1, 1}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    {"large_5x5_stride2_31x29x6", 2, 2, {1, 31, 29}, 6, {1, 5, 5}, 8, {1, 2, 2}, {1, 1, 1},
     "SAME", {0}, false, 0},
    {"large_dilated2_33x30x4", 2, 2, {1, 33, 30}, 4, {1, 3, 3}, 7, {1, 1, 1}, {1, 2, 2}, "SAME",
     {0}, false, 0},
    {"large_threads_64x48x8", 2, 2, {1, 64, 48}, 8, {1, 3, 3}, 16, {1, 1, 1}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    /* The direct loop in NHWC (few taps and filters, plugins/cpu/cpu_conv_nchw.c): the corpus's
     * 2x2 windows over 2 channels, dilated, 1-D, strided rows longer than a copy loop, explicit
     * uneven pads at 8 filters, and rows longer than one run. */
    {"direct_nhwc_2x2_batch64", 2, 64, {1, 5, 5}, 2, {1, 2, 2}, 3, {1, 1, 1}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    {"direct_nhwc_dilated2_batch9", 2, 9, {1, 5, 6}, 2, {1, 2, 2}, 3, {1, 1, 1}, {1, 2, 2},
     "SAME", {0}, false, 0},
    {"direct_nhwc_1d_stride2", 2, 3, {1, 1, 11}, 3, {1, 1, 2}, 4, {1, 1, 2}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    {"direct_nhwc_stride3_wide", 2, 2, {1, 7, 70}, 2, {1, 2, 3}, 5, {1, 3, 3}, {1, 1, 1}, "VALID",
     {0}, false, 0},
    {"direct_nhwc_explicit_m8", 2, 2, {1, 6, 7}, 3, {1, 3, 2}, 8, {1, 2, 2}, {1, 1, 1},
     "EXPLICIT", {0, 0, 2, 0, 1, 3}, false, 0},
    {"direct_nhwc_long_rows", 2, 2, {1, 3, 600}, 1, {1, 1, 2}, 2, {1, 1, 1}, {1, 1, 1}, "SAME",
     {0}, false, 0},
};

static const conv_spec_t depthwise_cases[] = {
    {"valid_3x3_mult1", 2, 1, {1, 5, 5}, 3, {1, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"same_mult2", 2, 2, {1, 6, 5}, 2, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false, 0},
    {"stride2_mult3", 2, 1, {1, 7, 8}, 2, {1, 3, 2}, 3, {1, 2, 2}, {1, 1, 1}, "SAME", {0}, false,
     0},
    {"dilated", 2, 1, {1, 8, 8}, 2, {1, 3, 3}, 1, {1, 1, 1}, {1, 2, 2}, "VALID", {0}, false, 0},
    {"explicit", 2, 1, {1, 5, 5}, 2, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "EXPLICIT",
     {0, 0, 2, 1, 0, 1}, false, 0},
    {"nchw", 2, 2, {1, 5, 5}, 3, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, true, 0},
    {"empty_batch", 2, 0, {1, 4, 4}, 2, {1, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false, 0},
    {"large_32x32x16", 2, 2, {1, 32, 32}, 16, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0},
     false, 0},
    /* The direct float32 NHWC loop (plugins/cpu/cpu_conv_fast.c): multipliers 1, 2, 3, odd
     * sizes, strides, dilations, 1x1, empty outputs, enough rows for every thread. */
    {"1x1_mult2", 2, 1, {1, 5, 6}, 4, {1, 1, 1}, 2, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false, 0},
    /* Every channel block of the register loop: multiplier 1 over 64 + 16 + 3 channels,
     * multiplier 2 over 32 + 16 + 5 input channels (dilated too), multiplier 4 widened. */
    {"blocks_mult1_c83", 2, 2, {1, 5, 6}, 83, {1, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, "SAME", {0},
     false, 0},
    {"blocks_mult2_c53", 2, 2, {1, 6, 5}, 53, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0},
     false, 0},
    {"blocks_mult2_dilated", 2, 1, {1, 8, 9}, 53, {1, 3, 2}, 2, {1, 2, 1}, {1, 2, 2}, "SAME",
     {0}, false, 0},
    {"blocks_mult1_stride2_c20", 2, 1, {1, 9, 15}, 20, {1, 3, 3}, 1, {1, 2, 2}, {1, 1, 1},
     "SAME", {0}, false, 0},
    {"blocks_mult1_dilated_c16", 2, 1, {1, 9, 14}, 16, {1, 3, 3}, 1, {1, 1, 1}, {1, 2, 2},
     "VALID", {0}, false, 0},
    {"blocks_mult4_c21", 2, 1, {1, 6, 6}, 21, {1, 3, 3}, 4, {1, 1, 1}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"empty_output_valid", 2, 1, {1, 2, 2}, 3, {1, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"large_mult1_33x29x24", 2, 2, {1, 33, 29}, 24, {1, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, "SAME",
     {0}, false, 0},
    {"large_mult3_stride2_30x27x5", 2, 2, {1, 30, 27}, 5, {1, 5, 5}, 3, {1, 2, 2}, {1, 1, 1},
     "SAME", {0}, false, 0},
    {"large_mult2_dilated_25x31x7", 2, 3, {1, 25, 31}, 7, {1, 3, 3}, 2, {1, 1, 1}, {1, 2, 2},
     "VALID", {0}, false, 0},
    {"large_threads_mult2_48x40x16", 2, 2, {1, 48, 40}, 16, {1, 3, 3}, 2, {1, 1, 1}, {1, 1, 1},
     "SAME", {0}, false, 0},
};

static const conv_spec_t conv3d_cases[] = {
    {"valid_2x2x2", 3, 1, {3, 4, 4}, 2, {2, 2, 2}, 3, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false,
     0},
    {"same_3x3x3", 3, 2, {4, 5, 3}, 2, {3, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false, 0},
    {"same_stride2", 3, 1, {5, 6, 5}, 3, {3, 2, 3}, 2, {2, 2, 2}, {1, 1, 1}, "SAME", {0}, false,
     0},
    {"valid_stride_1x2x3", 3, 1, {4, 7, 8}, 1, {2, 3, 2}, 2, {1, 2, 3}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"dilated", 3, 1, {5, 5, 5}, 1, {2, 2, 2}, 2, {1, 1, 1}, {2, 2, 2}, "SAME", {0}, false, 0},
    {"ncdhw", 3, 1, {3, 4, 5}, 2, {2, 3, 2}, 3, {1, 1, 2}, {1, 1, 1}, "SAME", {0}, true, 0},
    {"empty_batch", 3, 0, {3, 3, 3}, 2, {2, 2, 2}, 2, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false,
     0},
};

static cf_geom_t geom_of(const conv_spec_t *s, bool depthwise, bool pool) {
  cf_geom_t g;
  memset(&g, 0, sizeof g);
  g.ns = s->ns;
  g.cfirst = s->cfirst;
  g.n = s->n;
  g.c = s->c;
  g.groups = depthwise ? s->c : 1;
  g.oc = pool ? s->c : depthwise ? s->c * s->m : s->m;
  for (int i = 0; i < 3; i++) {
    g.in[i] = s->sp[i];
    g.k[i] = s->k[i];
    g.s[i] = s->s[i];
    g.d[i] = pool ? 1 : s->d[i];
    g.pb[i] = s->pads[2 * i];
    g.pa[i] = s->pads[2 * i + 1];
  }
  cf_geom_resolve(&g, s->padding);
  return g;
}

/* A list attr over ns + 2 dims: 1 for batch and channels, the spatial values v[3 - ns..2]. */
static void set_list(cf_case_t *c, const char *name, const conv_spec_t *s, const int64_t *v) {
  int64_t a[5], r = 0;
  a[r++] = 1;
  if (s->cfirst) a[r++] = 1;
  for (int i = 3 - s->ns; i < 3; i++) a[r++] = v[i];
  if (!s->cfirst) a[r++] = 1;
  cf_case_attr_ints(c, name, a, (int)r);
}

static void set_conv_attrs(cf_case_t *c, const conv_spec_t *s, bool dilations) {
  set_list(c, "strides", s, s->s);
  if (dilations && (s->d[0] != 1 || s->d[1] != 1 || s->d[2] != 1))
    set_list(c, "dilations", s, s->d);
  cf_case_attr_string(c, "padding", s->padding);
  if (strcmp(s->padding, "EXPLICIT") == 0) {
    int64_t p[8] = {0};
    int base = s->cfirst ? 4 : 2;
    for (int i = 0; i < 4; i++) p[base + i] = s->pads[2 + i];
    cf_case_attr_ints(c, "explicit_paddings", p, 8);
  }
  if (s->cfirst) cf_case_attr_string(c, "data_format", s->ns == 3 ? "NCDHW" : "NCHW");
}

typedef enum conv_op { OP_FWD, OP_BP_INPUT, OP_BP_FILTER } conv_op_t;

/* Conv3D, DepthwiseConv2dNative and the gradients: inputs random in [-1, 1]. */
static void emit_conv_family(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool depthwise = strncmp(op, "Depthwise", 9) == 0;
  bool is3d = strncmp(op, "Conv3D", 6) == 0;
  conv_op_t kind = strstr(op, "BackpropInput") ? OP_BP_INPUT
                   : strstr(op, "BackpropFilter") ? OP_BP_FILTER : OP_FWD;
  const conv_spec_t *specs = is3d ? conv3d_cases : depthwise ? depthwise_cases : conv2d_cases;
  size_t n = is3d ? G_N_ELEMENTS(conv3d_cases)
             : depthwise ? G_N_ELEMENTS(depthwise_cases) : G_N_ELEMENTS(conv2d_cases);
  for (size_t i = 0; i < n; i++) {
    const conv_spec_t *s = &specs[i];
    if (strncmp(s->name, "large", 5) == 0 && dt != WEFT_DT_FLOAT) continue;
    /* Conv3D has no EXPLICIT padding. */
    if (is3d && strcmp(s->padding, "EXPLICIT") == 0) continue;
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_geom_t g = geom_of(s, depthwise, false);
    int64_t xd[5], yd[5], fd[5];
    int r = cf_geom_dims(&g, g.n, g.in, g.c, xd);
    cf_geom_dims(&g, g.n, g.out, g.oc, yd);
    for (int k = 0; k < s->ns; k++) fd[k] = s->k[3 - s->ns + k];
    fd[s->ns] = s->c;
    fd[s->ns + 1] = s->m;
    /* Integers: small values, and in the first case values whose sums wrap int32 (TensorFlow's
     * arithmetic; the products stay exact in double). */
    double lim = cf_dtype_is_float(dt) ? 1 : i == 0 ? 1 << 20 : 5;
    cf_array_t *x = cf_gen_uniform(&rng, dt, r, xd, -lim, lim);
    cf_array_t *f = cf_gen_uniform(&rng, dt, r, fd, -lim, lim);
    cf_array_t *dy = cf_gen_uniform(&rng, dt, r, yd, -lim, lim);
    double terms = (double)(s->k[0] * s->k[1] * s->k[2]) * (depthwise ? 1 : (double)s->c);
    if (kind == OP_FWD) {
      cf_case_expect(c, cf_ref_conv_nd(x, f, &g));
      cf_case_input(c, x);
      cf_case_input(c, f);
      cf_array_free(dy);
    } else if (kind == OP_BP_INPUT) {
      cf_case_expect(c, cf_ref_conv_nd_backprop_input(dy, f, &g));
      cf_case_const_input(c, cf_array_ints(i % 2 && is3d ? WEFT_DT_INT64 : WEFT_DT_INT32, r, xd));
      cf_case_input(c, f);
      cf_case_input(c, dy);
      cf_array_free(x);
      terms = (double)(s->k[0] * s->k[1] * s->k[2] * s->m);
    } else {
      cf_case_expect(c, cf_ref_conv_nd_backprop_filter(x, dy, &g, r, fd));
      cf_case_input(c, x);
      cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, r, fd));
      cf_case_input(c, dy);
      cf_array_free(f);
      terms = (double)(g.n * g.out[0] * g.out[1] * g.out[2]);
    }
    if (is3d && kind == OP_BP_INPUT && i % 2) cf_case_attr_type(c, "Tshape", WEFT_DT_INT64);
    set_conv_attrs(c, s, true);
    c->tol.atol += 4 * c->tol.rtol * terms;
    cf_run_case(ctx, c);
  }
  /* Conv2DBackpropInput also takes input_sizes as the two spatial sizes. */
  if (strcmp(op, "Conv2DBackpropInput") == 0) {
    const conv_spec_t *s = &conv2d_cases[2];
    cf_case_t *c = cf_case_new(op, "input_sizes_hw", dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_geom_t g = geom_of(s, false, false);
    int64_t yd[4], fd[4] = {s->k[1], s->k[2], s->c, s->m}, hw[2] = {s->sp[1], s->sp[2]};
    cf_geom_dims(&g, g.n, g.out, g.oc, yd);
    cf_array_t *f = cf_gen_uniform(&rng, dt, 4, fd, -1, 1);
    cf_array_t *dy = cf_gen_uniform(&rng, dt, 4, yd, -1, 1);
    cf_case_expect(c, cf_ref_conv_nd_backprop_input(dy, f, &g));
    cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 2, hw));
    cf_case_input(c, f);
    cf_case_input(c, dy);
    set_conv_attrs(c, s, true);
    c->tol.atol += 4 * c->tol.rtol * 9 * (double)s->m;
    cf_run_case(ctx, c);
  }
  /* Errors: an out_backprop whose spatial size the geometry does not give, a filter whose depth
   * does not divide the input's. */
  if (kind != OP_FWD) {
    const conv_spec_t *s = &specs[0];
    cf_case_t *c = cf_case_new(op, "error_out_backprop_size", dt);
    cf_geom_t g = geom_of(s, depthwise, false);
    int64_t xd[5], yd[5], fd[5];
    int r = cf_geom_dims(&g, g.n, g.in, g.c, xd);
    g.out[2] += 1;
    cf_geom_dims(&g, g.n, g.out, g.oc, yd);
    for (int k = 0; k < s->ns; k++) fd[k] = s->k[3 - s->ns + k];
    fd[s->ns] = s->c;
    fd[s->ns + 1] = s->m;
    if (kind == OP_BP_INPUT) {
      cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, r, xd));
      cf_case_input(c, cf_array_new(dt, r, fd));
    } else {
      cf_case_input(c, cf_array_new(dt, r, xd));
      cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, r, fd));
    }
    cf_case_input(c, cf_array_new(dt, r, yd));
    set_conv_attrs(c, s, true);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Size of out_backprop doesn't match computed");
    cf_run_case(ctx, c);
  }
  if (!depthwise) {
    const conv_spec_t *s = &specs[0];
    cf_case_t *c = cf_case_new(op, "error_filter_depth", dt);
    int64_t xd[5] = {1, 3, 4, 4, 4}, fd[5] = {2, 2, 2, 3, 2};
    if (!is3d) {
      int64_t x2[4] = {1, 4, 4, 3}, f2[4] = {2, 2, 2, 2};
      memcpy(xd, x2, sizeof x2);
      memcpy(fd, f2, sizeof f2);
    }
    int r = s->ns + 2;
    int64_t yd[5];
    memcpy(yd, xd, sizeof yd);
    yd[r - 1] = fd[r - 1];
    for (int k = 1; k < r - 1; k++) yd[k] = xd[k] - fd[k - 1] + 1;
    if (kind == OP_BP_INPUT)
      cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, r, xd));
    else
      cf_case_input(c, cf_array_new(dt, r, xd));
    if (kind == OP_BP_FILTER)
      cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, r, fd));
    else
      cf_case_input(c, cf_array_new(dt, r, fd));
    if (kind != OP_FWD) cf_case_input(c, cf_array_new(dt, r, yd));
    set_conv_attrs(c, s, false);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * AvgPool3D, MaxPool3D */

static const conv_spec_t pool3d_cases[] = {
    {"valid_2x2x2_s2", 3, 1, {4, 4, 4}, 2, {2, 2, 2}, 0, {2, 2, 2}, {1, 1, 1}, "VALID", {0}, false,
     0},
    {"same_3x3x3_s1", 3, 2, {3, 5, 4}, 3, {3, 3, 3}, 0, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false,
     0},
    {"same_s2_odd", 3, 1, {5, 7, 6}, 2, {3, 2, 3}, 0, {2, 2, 2}, {1, 1, 1}, "SAME", {0}, false, 0},
    {"valid_window_1x3x2", 3, 1, {3, 6, 7}, 1, {1, 3, 2}, 0, {1, 1, 2}, {1, 1, 1}, "VALID", {0},
     false, 0},
    {"ncdhw", 3, 2, {4, 4, 4}, 3, {2, 2, 2}, 0, {2, 2, 2}, {1, 1, 1}, "SAME", {0}, true, 0},
    {"global", 3, 1, {3, 4, 5}, 2, {3, 4, 5}, 0, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false, 0},
    {"empty_batch", 3, 0, {2, 2, 2}, 2, {2, 2, 2}, 0, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false,
     0},
    /* The float32 NDHWC gradients' channel loops (plugins/cpu/cpu_pool_grad_impl.h): batches,
     * odd channel counts and more than its block of 64, stride below and above the window. */
    {"same_3x3x3_s2_c19", 3, 2, {5, 9, 8}, 19, {3, 3, 3}, 0, {2, 2, 2}, {1, 1, 1}, "SAME", {0},
     false, 0},
    {"valid_2x2x2_s3_c70", 3, 2, {6, 7, 7}, 70, {2, 2, 2}, 0, {3, 3, 3}, {1, 1, 1}, "VALID", {0},
     false, 0},
};

/* AvgPool3D, MaxPool3D and their gradients AvgPool3DGrad(shape of x, dy) and
 * MaxPool3DGrad(x, MaxPool3D(x), dy) over the same windows. */
static void emit_pool3d(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool is_max = strncmp(op, "MaxPool3D", 9) == 0, grad = strstr(op, "Grad") != NULL;
  for (size_t i = 0; i < G_N_ELEMENTS(pool3d_cases); i++) {
    const conv_spec_t *s = &pool3d_cases[i];
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_geom_t g = geom_of(s, false, true);
    int64_t xd[5];
    cf_geom_dims(&g, g.n, g.in, g.c, xd);
    cf_array_t *x = cf_gen_uniform(&rng, dt, 5, xd, -2, 2);
    if (grad) {
      cf_array_t *y = cf_ref_pool_nd(x, &g, true);
      cf_array_t *dy = cf_gen_uniform(&rng, dt, 5, y->dims, -2, 2);
      cf_case_expect(c, cf_ref_pool_nd_grad(x, dy, &g, is_max));
      if (is_max) {
        cf_case_input(c, x);
        cf_case_input(c, y);
      } else {
        cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 5, xd));
        cf_array_free(x);
        cf_array_free(y);
      }
      cf_case_input(c, dy);
    } else {
      cf_case_expect(c, cf_ref_pool_nd(x, &g, is_max));
      cf_case_input(c, x);
    }
    set_list(c, "ksize", s, s->k);
    set_conv_attrs(c, s, false);
    if (!is_max || grad) c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
  if (grad) return;
  if (is_max) {
    /* NaN wins its windows; -Inf is an ordinary value. */
    cf_case_t *c = cf_case_new(op, "nan_inf", dt);
    double v[16] = {1, 2, NAN, 4, 5, 6, 7, 8, -INFINITY, 1, 2, 3, 4, 5, 6, INFINITY};
    int64_t d[5] = {1, 2, 2, 4, 1};
    cf_array_t *flat = cf_array_vec(dt, 16, v);
    cf_array_t *x = cf_array_reshape(flat, 5, d);
    cf_array_free(flat);
    conv_spec_t s = {"nan_inf", 3, 1, {2, 2, 4}, 1, {1, 2, 2}, 0, {1, 2, 2}, {1, 1, 1}, "VALID",
                     {0}, false, 0};
    cf_geom_t g = geom_of(&s, false, true);
    cf_case_expect(c, cf_ref_pool_nd(x, &g, true));
    cf_case_input(c, x);
    set_list(c, "ksize", &s, s.k);
    set_conv_attrs(c, &s, false);
    cf_run_case(ctx, c);
  }
  {
    cf_case_t *c = cf_case_new(op, "error_rank4", dt);
    int64_t d[4] = {1, 2, 2, 1};
    cf_case_input(c, cf_array_new(dt, 4, d));
    int64_t one[5] = {1, 1, 1, 1, 1};
    cf_case_attr_ints(c, "ksize", one, 5);
    cf_case_attr_ints(c, "strides", one, 5);
    cf_case_attr_string(c, "padding", "VALID");
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * MaxPoolWithArgmax */

static void emit_argmax_pool(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const conv_spec_t cases[] = {
      {"valid_2x2_s2", 2, 1, {1, 4, 4}, 2, {1, 2, 2}, 0, {1, 2, 2}, {1, 1, 1}, "VALID", {0}, false,
       0},
      {"same_3x3_s2", 2, 2, {1, 5, 6}, 3, {1, 3, 3}, 0, {1, 2, 2}, {1, 1, 1}, "SAME", {0}, false,
       0},
      {"valid_3x2_s1", 2, 3, {1, 4, 5}, 2, {1, 3, 2}, 0, {1, 1, 1}, {1, 1, 1}, "VALID", {0}, false,
       0},
      {"ties", 2, 2, {1, 4, 4}, 1, {1, 2, 2}, 0, {1, 1, 1}, {1, 1, 1}, "SAME", {0}, false, 0},
      {"empty_batch", 2, 0, {1, 4, 4}, 2, {1, 2, 2}, 0, {1, 2, 2}, {1, 1, 1}, "VALID", {0}, false,
       0},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
    for (int with_batch = 0; with_batch < 2; with_batch++) {
      const conv_spec_t *s = &cases[i];
      char name[64];
      g_snprintf(name, sizeof name, "%s%s", s->name, with_batch ? "_batch_in_index" : "");
      cf_case_t *c = cf_case_new(op, name, dt);
      cf_rng_t rng;
      cf_case_rng(c, &rng);
      cf_geom_t g = geom_of(s, false, true);
      int64_t xd[4];
      cf_geom_dims(&g, g.n, g.in, g.c, xd);
      bool ties = strcmp(s->name, "ties") == 0;
      /* Ties: values from a small set, so that windows hold equal maxima. */
      cf_array_t *x = ties ? cf_gen_uniform(&rng, dt, 4, xd, 0, 0)
                           : cf_gen_uniform(&rng, dt, 4, xd, cf_dtype_is_float(dt) ? -2 : 0, 100);
      if (ties)
        for (int64_t k = 0; k < x->n; k++) x->v[k] = (double)(cf_rng_next(&rng) % 3);
      cf_array_t *y, *am;
      cf_ref_max_pool_argmax(x, &g, with_batch, &y, &am);
      cf_array_round(y);
      cf_case_expect(c, y);
      cf_case_expect(c, am);
      cf_case_input(c, x);
      set_list(c, "ksize", s, s->k);
      set_conv_attrs(c, s, false);
      cf_case_attr_type(c, "Targmax", WEFT_DT_INT64);
      cf_case_attr_bool(c, "include_batch_in_index", with_batch);
      c->tol = (cf_tol_t){0, 0, 0};
      cf_run_case(ctx, c);
    }
  if (cf_dtype_is_float(dt)) {
    /* TensorFlow's loop keeps a window's first element unless a later one is strictly greater:
     * NaN wins only where it comes first. */
    cf_case_t *c = cf_case_new(op, "nan", dt);
    double v[8] = {NAN, 1, 2, 3, 4, NAN, 5, 6};
    int64_t d[4] = {1, 2, 4, 1};
    cf_array_t *flat = cf_array_vec(dt, 8, v);
    cf_array_t *x = cf_array_reshape(flat, 4, d);
    cf_array_free(flat);
    int64_t od[4] = {1, 1, 2, 1};
    double yv[2] = {NAN, 6}, av[2] = {0, 7};
    cf_array_t *y = cf_array_reshape(flat = cf_array_vec(dt, 2, yv), 4, od);
    cf_array_free(flat);
    cf_array_t *am = cf_array_reshape(flat = cf_array_vec(WEFT_DT_INT64, 2, av), 4, od);
    cf_array_free(flat);
    cf_case_expect(c, y);
    cf_case_expect(c, am);
    cf_case_input(c, x);
    int64_t k[4] = {1, 2, 2, 1};
    cf_case_attr_ints(c, "ksize", k, 4);
    cf_case_attr_ints(c, "strides", k, 4);
    cf_case_attr_string(c, "padding", "VALID");
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * FusedBatchNorm, V2, V3 */

typedef struct bn {
  const char *name;
  int rank;
  int64_t dims[5];
  const char *format;
  bool training;
  double eps, factor;
} bn_t;

static const bn_t bn_cases[] = {
    {"training", 4, {2, 3, 4, 5}, "NHWC", true, 0.001, 1.0},
    {"training_avg_factor", 4, {2, 3, 3, 4}, "NHWC", true, 0.0001, 0.25},
    {"training_nchw", 4, {2, 3, 4, 5}, "NCHW", true, 0.01, 1.0},
    {"training_one_element_per_channel", 4, {1, 1, 1, 3}, "NHWC", true, 0.001, 1.0},
    {"inference", 4, {2, 3, 4, 5}, "NHWC", false, 0.001, 1.0},
    {"inference_nchw", 4, {1, 4, 3, 3}, "NCHW", false, 0.5, 1.0},
    {"training_ndhwc", 5, {2, 2, 3, 2, 3}, "NDHWC", true, 0.001, 1.0},
    {"inference_ncdhw", 5, {1, 3, 2, 2, 2}, "NCDHW", false, 0.001, 1.0},
    {"training_large", 4, {8, 16, 16, 32}, "NHWC", true, 0.001, 1.0},
};

/* Case b of op: its generator, the channel position and count. */
static cf_case_t *bn_case_new(const char *op, const bn_t *b, weft_dtype_t dt, cf_rng_t *rng,
                              bool *cfirst, int64_t *C) {
  cf_case_t *c = cf_case_new(op, b->name, dt);
  cf_case_rng(c, rng);
  *cfirst = b->format[1] == 'C';
  *C = b->dims[*cfirst ? 1 : b->rank - 1];
  return c;
}

/* x [1, 2, 2, 3] with a scale of 2 values: INVALID_ARGUMENT. n_tensors: the op's inputs after
 * x (and dy) that are per-channel vectors of 3; v3_reserve: V3's reserve_space_3 input. */
static void emit_bn_scale_size_error(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                                     int n_x, int n_tensors, bool v3_reserve) {
  weft_dtype_t u = WEFT_DT_FLOAT;
  cf_case_t *c = cf_case_new(op, "error_scale_size", dt);
  int64_t d[4] = {1, 2, 2, 3}, C = 3, C2 = 2;
  for (int k = 0; k < n_x; k++) cf_case_input(c, cf_array_new(dt, 4, d));
  cf_case_input(c, cf_array_new(u, 1, &C2));
  for (int k = 0; k < n_tensors; k++) cf_case_input(c, cf_array_new(u, 1, &C));
  if (v3_reserve) cf_case_input(c, cf_array_new(u, 0, NULL));
  if (strcmp(op, "FusedBatchNorm") != 0 && strcmp(op, "FusedBatchNormGrad") != 0)
    cf_case_attr_type(c, "U", u);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

static void emit_fused_bn(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v3 = strcmp(op, "FusedBatchNormV3") == 0;
  weft_dtype_t u = WEFT_DT_FLOAT;
  for (size_t i = 0; i < G_N_ELEMENTS(bn_cases); i++) {
    const bn_t *b = &bn_cases[i];
    if (b->rank == 5 && !v3) continue;
    if (strcmp(b->name, "training_large") == 0 && dt != WEFT_DT_FLOAT) continue;
    cf_rng_t rng;
    bool cfirst;
    int64_t C;
    cf_case_t *c = bn_case_new(op, b, dt, &rng, &cfirst, &C);
    cf_array_t *x = cf_gen_uniform(&rng, dt, b->rank, b->dims, -3, 5);
    cf_array_t *p[4] = {cf_gen_uniform(&rng, u, 1, &C, 0.5, 2),
                        cf_gen_uniform(&rng, u, 1, &C, -1, 1),
                        cf_gen_uniform(&rng, u, 1, &C, -1, 1),
                        cf_gen_uniform(&rng, u, 1, &C, 0.1, 2)};
    cf_array_t *out[5];
    cf_ref_fused_batch_norm(x, (const cf_array_t *const *)p, cfirst, b->eps, b->factor,
                            b->training, out);
    cf_case_expect(c, out[0]);
    /* The harness fetches at most CF_MAX_OUTPUTS (4) outputs: y, the two statistics and
     * reserve_space_1. */
    cf_array_free(out[4]);
    for (int k = 1; k < 4; k++) {
      /* Inference passes the given statistics through (TensorFlow forwards the buffers): not
       * compared. */
      if (b->training) {
        cf_case_expect(c, out[k]);
      } else {
        cf_array_free(out[k]);
        cf_case_expect(c, NULL);
      }
    }
    cf_case_input(c, x);
    for (int k = 0; k < 4; k++) cf_case_input(c, p[k]);
    cf_case_attr_float(c, "epsilon", b->eps);
    if (b->factor != 1.0) cf_case_attr_float(c, "exponential_avg_factor", b->factor);
    cf_case_attr_bool(c, "is_training", b->training);
    cf_case_attr_string(c, "data_format", b->format);
    if (strcmp(op, "FusedBatchNorm") != 0) cf_case_attr_type(c, "U", u);
    c->tol = cf_tol_scale(c->tol, 8);
    if (dt != WEFT_DT_FLOAT) c->tol.atol += 0.02;
    c->tol.atol += 1e-5;
    cf_run_case(ctx, c);
  }
  {
    /* Empty x: NaN batch statistics. */
    cf_case_t *c = cf_case_new(op, "empty_training", dt);
    int64_t d[4] = {0, 2, 2, 3}, C = 3;
    cf_case_input(c, cf_array_new(dt, 4, d));
    for (int k = 0; k < 4; k++) cf_case_input(c, cf_array_new(u, 1, &C));
    cf_case_expect(c, cf_array_new(dt, 4, d));
    double nan3[3] = {NAN, NAN, NAN};
    cf_case_expect(c, cf_array_vec(u, 3, nan3));
    cf_case_expect(c, cf_array_vec(u, 3, nan3));
    if (strcmp(op, "FusedBatchNorm") != 0) cf_case_attr_type(c, "U", u);
    cf_run_case(ctx, c);
  }
  emit_bn_scale_size_error(ctx, op, dt, 1, 3, false);
}

/* FusedBatchNormGrad, V2, V3 over the forward op's cases (exponential_avg_factor does not
 * apply), and a scale of the wrong size. */
static void emit_fused_bn_grad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v3 = strcmp(op, "FusedBatchNormGradV3") == 0, v1 = strcmp(op, "FusedBatchNormGrad") == 0;
  weft_dtype_t u = WEFT_DT_FLOAT;
  for (size_t i = 0; i < G_N_ELEMENTS(bn_cases); i++) {
    const bn_t *b = &bn_cases[i];
    if ((b->rank == 5 && !v3) || b->factor != 1.0) continue;
    if (strcmp(b->name, "training_large") == 0 && dt != WEFT_DT_FLOAT) continue;
    cf_rng_t rng;
    bool cfirst;
    int64_t C;
    cf_case_t *c = bn_case_new(op, b, dt, &rng, &cfirst, &C);
    cf_array_t *dy = cf_gen_uniform(&rng, dt, b->rank, b->dims, -1, 1);
    cf_array_t *x = cf_gen_uniform(&rng, dt, b->rank, b->dims, -3, 5);
    cf_array_t *p[3] = {cf_gen_uniform(&rng, u, 1, &C, 0.5, 2),
                        cf_gen_uniform(&rng, u, 1, &C, -1, 1),
                        cf_gen_uniform(&rng, u, 1, &C, 0.1, 2)};
    cf_array_t *out[3];
    cf_ref_fused_batch_norm_grad(dy, x, p[0], p[1], p[2], cfirst, b->eps, b->training, out);
    for (int k = 0; k < 3; k++) cf_case_expect(c, out[k]);
    cf_case_input(c, dy);
    cf_case_input(c, x);
    for (int k = 0; k < 3; k++) cf_case_input(c, p[k]);
    if (v3) cf_case_input(c, cf_array_new(u, 0, NULL));
    cf_case_attr_float(c, "epsilon", b->eps);
    cf_case_attr_bool(c, "is_training", b->training);
    cf_case_attr_string(c, "data_format", b->format);
    if (!v1) cf_case_attr_type(c, "U", u);
    c->tol = cf_tol_scale(c->tol, 8);
    if (dt != WEFT_DT_FLOAT) c->tol.atol += 0.02;
    c->tol.atol += 1e-5;
    cf_run_case(ctx, c);
  }
  emit_bn_scale_size_error(ctx, op, dt, 2, 2, v3);
}

/* ---------------------------------------------------------------------------------------------
 * LRN */

/* LRN, and LRNGrad(dy, x, LRN(x)) against the forward op's derivative. */
static void emit_lrn(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool grad = strcmp(op, "LRNGrad") == 0;
  typedef struct {
    const char *name;
    int64_t dims[4];
    int64_t radius;
    double bias, alpha, beta;
    bool defaults;
  } lrn_t;
  static const lrn_t cases[] = {
      {"defaults", {2, 3, 3, 8}, 5, 1.0, 1.0, 0.5, true},
      {"radius2", {1, 4, 4, 10}, 2, 2.0, 0.0001, 0.75, false},
      {"radius0", {1, 2, 3, 4}, 0, 1.0, 0.5, 1.0, false},
      {"radius_over_depth", {1, 2, 2, 3}, 7, 0.5, 0.2, 0.3, false},
      {"empty", {0, 2, 2, 3}, 2, 1.0, 1.0, 0.5, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const lrn_t *l = &cases[i];
    cf_case_t *c = cf_case_new(op, l->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = cf_gen_uniform(&rng, dt, 4, l->dims, -2, 2);
    if (grad) {
      cf_array_t *dy = cf_gen_uniform(&rng, dt, 4, l->dims, -2, 2);
      cf_array_t *y = cf_ref_lrn(x, l->radius, l->bias, l->alpha, l->beta);
      cf_case_expect(c, cf_ref_lrn_grad(dy, x, l->radius, l->bias, l->alpha, l->beta));
      cf_case_input(c, dy);
      cf_case_input(c, x);
      cf_case_input(c, y);
    } else {
      cf_case_expect(c, cf_ref_lrn(x, l->radius, l->bias, l->alpha, l->beta));
      cf_case_input(c, x);
    }
    if (!l->defaults) {
      cf_case_attr_int(c, "depth_radius", l->radius);
      cf_case_attr_float(c, "bias", l->bias);
      cf_case_attr_float(c, "alpha", l->alpha);
      cf_case_attr_float(c, "beta", l->beta);
    }
    c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
  {
    cf_case_t *c = cf_case_new(op, "error_rank3", dt);
    int64_t d[3] = {2, 2, 3};
    for (int k = 0; k < (grad ? 3 : 1); k++) cf_case_input(c, cf_array_new(dt, 3, d));
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t bp_input_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                               WEFT_DT_BFLOAT16, WEFT_DT_INT32, WEFT_DT_INVALID};

const cf_suite_t cf_suites_conv[] = {
    {"Conv2DBackpropInput", bp_input_dtypes, emit_conv_family, NULL},
    {"Conv2DBackpropFilter", cf_dtypes_float, emit_conv_family, NULL},
    {"DepthwiseConv2dNative", cf_dtypes_float, emit_conv_family, NULL},
    {"DepthwiseConv2dNativeBackpropInput", cf_dtypes_float, emit_conv_family, NULL},
    {"DepthwiseConv2dNativeBackpropFilter", cf_dtypes_float, emit_conv_family, NULL},
    {"Conv3D", cf_dtypes_float, emit_conv_family, NULL},
    {"Conv3DBackpropInputV2", cf_dtypes_float, emit_conv_family, NULL},
    {"AvgPool3D", cf_dtypes_float, emit_pool3d, NULL},
    {"MaxPool3D", cf_dtypes_float, emit_pool3d, NULL},
    {"AvgPool3DGrad", cf_dtypes_float, emit_pool3d, NULL},
    {"MaxPool3DGrad", cf_dtypes_float, emit_pool3d, NULL},
    {"Conv3DBackpropFilterV2", cf_dtypes_float, emit_conv_family, NULL},
    {"MaxPoolWithArgmax", cf_dtypes_numeric, emit_argmax_pool, NULL},
    {"FusedBatchNorm", cf_dtypes_float, emit_fused_bn, NULL},
    {"FusedBatchNormV2", cf_dtypes_float, emit_fused_bn, NULL},
    {"FusedBatchNormV3", cf_dtypes_float, emit_fused_bn, NULL},
    {"FusedBatchNormGrad", cf_dtypes_float, emit_fused_bn_grad, NULL},
    {"FusedBatchNormGradV2", cf_dtypes_float, emit_fused_bn_grad, NULL},
    {"FusedBatchNormGradV3", cf_dtypes_float, emit_fused_bn_grad, NULL},
    {"LRN", cf_dtypes_float, emit_lrn, NULL},
    {"LRNGrad", cf_dtypes_float, emit_lrn, NULL},
    {NULL, NULL, NULL, NULL},
};
