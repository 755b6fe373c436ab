/* ops_conv.c: the convolution-family ops beyond Conv2D/MaxPool/AvgPool, with TensorFlow's names,
 * args, attrs and type constraints (tensorflow/core/ops/nn_ops.cc) and their shape functions:
 * Conv2D's two gradients (Conv2DBackpropInput, the transposed convolution, and
 * Conv2DBackpropFilter), DepthwiseConv2dNative and its gradients, Conv3D and
 * Conv3DBackpropInputV2, AvgPool3D, MaxPool3D, MaxPoolWithArgmax, FusedBatchNorm (V1, V2, V3)
 * and LRN. */
#include <string.h>

#include "ops_shape.h"

/* Channels-first layout (NCHW, NCDHW)? */
static bool channels_first(weft_shape_ctx_t *ctx, const char *dflt) {
  const char *f = weft__sh_attr_string(ctx, "data_format", dflt);
  return strcmp(f, "NCHW") == 0 || strcmp(f, "NCDHW") == 0;
}

/* The spatial values of a rank-(ns+2) list attr (strides, ksize, dilations). */
static weft_status_t *spatial_attr(weft_shape_ctx_t *ctx, const char *name, int ns, bool cfirst,
                                   int64_t dflt, int64_t *out) {
  const int64_t *v = NULL;
  size_t n = 0;
  for (int i = 0; i < ns; i++) out[i] = dflt;
  if (!weft__sh_attr_int_list(ctx, name, &v, &n) || n == 0) return NULL;
  if (n != (size_t)ns + 2)
    return weft__sh_error(ctx, "%s must have %d values, not %zu", name, ns + 2, n);
  int c = cfirst ? 1 : ns + 1, s0 = cfirst ? 2 : 1;
  if (v[0] != 1 || v[c] != 1)
    return weft__sh_error(ctx, "%s in the batch and depth dimensions must be 1", name);
  for (int i = 0; i < ns; i++) {
    if (v[s0 + i] < 1) return weft__sh_error(ctx, "%s must be positive", name);
    out[i] = v[s0 + i];
  }
  return NULL;
}

static int64_t out_size(int64_t in, int64_t k, int64_t dil, int64_t stride, const char *padding,
                        int64_t before, int64_t after) {
  if (in < 0 || k < 0) return WEFT_DIM_UNKNOWN;
  if (strcmp(padding, "SAME") == 0) return (in + stride - 1) / stride;
  int64_t span = in + before + after - ((k - 1) * dil + 1);
  return span < 0 ? 0 : span / stride + 1;
}

/* Forward windowed ops over ns spatial dims. filter: input 1 holds [k..., in_c, out_c] (conv) or
 * [k..., in_c, multiplier] (depthwise); without it the window is ksize and channels pass. */
static weft_status_t *windowed(weft_shape_ctx_t *ctx, int ns, bool has_filter, bool depthwise,
                               const char *dflt_format, int n_outputs) {
  weft__shape_t in, filter = {.rank = -1};
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, ns + 2, "input"));
  bool cf = channels_first(ctx, dflt_format);
  int64_t k[3], stride[3], dil[3], pads[6] = {0};
  int64_t out_c = WEFT_DIM_UNKNOWN;
  if (has_filter) {
    weft__sh_input(ctx, 1, &filter);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &filter, ns + 2, "filter"));
    for (int i = 0; i < ns; i++) k[i] = filter.rank > 0 ? filter.dims[i] : WEFT_DIM_UNKNOWN;
    WEFT_RETURN_IF_ERROR(spatial_attr(ctx, "dilations", ns, cf, 1, dil));
  } else {
    WEFT_RETURN_IF_ERROR(spatial_attr(ctx, "ksize", ns, cf, WEFT_DIM_UNKNOWN, k));
    for (int i = 0; i < ns; i++) dil[i] = 1;
  }
  WEFT_RETURN_IF_ERROR(spatial_attr(ctx, "strides", ns, cf, 1, stride));
  const char *padding = weft__sh_attr_string(ctx, "padding", "VALID");
  if (strcmp(padding, "EXPLICIT") == 0) {
    const int64_t *v = NULL;
    size_t n = 0;
    if (!weft__sh_attr_int_list(ctx, "explicit_paddings", &v, &n) || n != (size_t)2 * (ns + 2))
      return weft__sh_error(ctx, "padding EXPLICIT needs explicit_paddings with %d values, got %zu",
                            2 * (ns + 2), n);
    for (int i = 0; i < ns; i++) {
      int d = cf ? 2 + i : 1 + i;
      if (v[2 * d] < 0 || v[2 * d + 1] < 0)
        return weft__sh_error(ctx, "explicit_paddings must be non-negative");
      pads[2 * i] = v[2 * d];
      pads[2 * i + 1] = v[2 * d + 1];
    }
  }
  int ic = cf ? 1 : ns + 1, s0 = cf ? 2 : 1;
  weft__shape_t out = weft__sh_unknown_dims(ns + 2);
  int64_t in_c = in.rank > 0 ? in.dims[ic] : WEFT_DIM_UNKNOWN;
  if (has_filter && filter.rank > 0) {
    int64_t fc = filter.dims[ns], fm = filter.dims[ns + 1];
    if (depthwise) {
      if (in_c >= 0 && fc >= 0 && in_c != fc)
        return weft__sh_error(ctx, "input depth %" G_GINT64_FORMAT " must equal the filter's "
                              "input depth %" G_GINT64_FORMAT, in_c, fc);
      int64_t c = in_c >= 0 ? in_c : fc;
      out_c = c >= 0 && fm >= 0 ? c * fm : WEFT_DIM_UNKNOWN;
    } else {
      if (in_c >= 0 && fc > 0 && in_c % fc != 0)
        return weft__sh_error(ctx, "input depth %" G_GINT64_FORMAT " is not a multiple of the "
                              "filter's input depth %" G_GINT64_FORMAT, in_c, fc);
      out_c = fm;
    }
  } else if (!has_filter) {
    out_c = in_c;
  }
  out.dims[ic] = out_c;
  if (in.rank > 0) {
    out.dims[0] = in.dims[0];
    for (int i = 0; i < ns; i++)
      out.dims[s0 + i] = out_size(in.dims[s0 + i], k[i], dil[i], stride[i], padding,
                                  pads[2 * i], pads[2 * i + 1]);
  }
  for (int i = 0; i < n_outputs; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, &out));
  return NULL;
}

static weft_status_t *depthwise_shape(weft_shape_ctx_t *ctx) {
  return windowed(ctx, 2, true, true, "NHWC", 1);
}
static weft_status_t *conv3d_shape(weft_shape_ctx_t *ctx) {
  return windowed(ctx, 3, true, false, "NDHWC", 1);
}
static weft_status_t *pool3d_shape(weft_shape_ctx_t *ctx) {
  return windowed(ctx, 3, false, false, "NDHWC", 1);
}
/* MaxPoolWithArgmax (NHWC only): output and argmax have the same shape. */
static weft_status_t *argmax_pool_shape(weft_shape_ctx_t *ctx) {
  return windowed(ctx, 2, false, false, "NHWC", 2);
}

/* The gradients: output shape = the sizes tensor at input `index` (a constant of rank+0 values,
 * or for Conv2DBackpropInput 2 values H, W), else unknown dims of that rank. */
static weft_status_t *sizes_shape(weft_shape_ctx_t *ctx, int index, int rank) {
  int64_t *v = NULL, n = 0;
  weft__shape_t out = weft__sh_unknown_dims(rank);
  if (weft__sh_const_ints(ctx, index, &v, &n, NULL)) {
    if (n == rank) {
      for (int i = 0; i < rank; i++) out.dims[i] = v[i];
    } else if (!(rank == 4 && n == 2)) {
      g_free(v);
      return weft__sh_error(ctx, "the sizes input must have %d values, got %" G_GINT64_FORMAT,
                            rank, n);
    }
    g_free(v);
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *bp_input2d_shape(weft_shape_ctx_t *ctx) { return sizes_shape(ctx, 0, 4); }
static weft_status_t *bp_filter2d_shape(weft_shape_ctx_t *ctx) { return sizes_shape(ctx, 1, 4); }
static weft_status_t *bp_input3d_shape(weft_shape_ctx_t *ctx) { return sizes_shape(ctx, 0, 5); }

/* FusedBatchNorm*: y like x, the per-channel outputs [C]; V3's reserve_space_3 unknown. */
static weft_status_t *fused_bn_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x, c;
  weft__sh_input(ctx, 0, &x);
  const char *f = weft__sh_attr_string(ctx, "data_format", "NHWC");
  int rank = strlen(f) == 5 ? 5 : 4;
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, rank, "x"));
  int64_t ch = WEFT_DIM_UNKNOWN;
  if (x.rank > 0) ch = x.dims[channels_first(ctx, "NHWC") ? 1 : rank - 1];
  for (int i = 1; i < 5; i++) {
    weft__sh_input(ctx, i, &c);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &c, 1, "scale, offset, mean and variance"));
  }
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &x));
  weft__shape_t per = {.rank = 1, .dims = {ch}};
  for (int i = 1; i < 5; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, &per));
  return NULL;
}

static weft_status_t *fused_bn_v3_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(fused_bn_shape(ctx));
  weft__shape_t unknown = {.rank = -1};
  return weft__sh_output(ctx, 5, &unknown);
}

static weft_status_t *lrn_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "input"));
  return weft__sh_output(ctx, 0, &in);
}

#define FLOATS "{half, bfloat16, float, double}"
#define CONV2D_ATTRS                                                                           \
  "strides: list(int)", "use_cudnn_on_gpu: bool = true",                                       \
      "padding: {'SAME', 'VALID', 'EXPLICIT'}", "explicit_paddings: list(int) = []",           \
      "data_format: {'NHWC', 'NCHW'} = 'NHWC'", "dilations: list(int) = [1, 1, 1, 1]"
#define DEPTHWISE_ATTRS                                                                        \
  "T: " FLOATS, "strides: list(int)", "padding: {'SAME', 'VALID', 'EXPLICIT'}",                \
      "explicit_paddings: list(int) = []", "data_format: {'NHWC', 'NCHW'} = 'NHWC'",           \
      "dilations: list(int) = [1, 1, 1, 1]"
#define CONV3D_ATTRS                                                                           \
  "strides: list(int) >= 5", "padding: {'SAME', 'VALID'}",                                     \
      "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'", "dilations: list(int) = [1, 1, 1, 1, 1]"
#define POOL3D_ATTRS                                                                           \
  "ksize: list(int) >= 5", "strides: list(int) >= 5", "padding: {'SAME', 'VALID'}",            \
      "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'"
#define BN_ATTRS                                                                               \
  "epsilon: float = 0.0001", "exponential_avg_factor: float = 1.0",                            \
      "is_training: bool = true"

const weft_op_def_t weft__ops_conv[] = {
    WEFT__OP("Conv2DBackpropInput",
             WEFT__SPECS("input_sizes: int32", "filter: T", "out_backprop: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, bfloat16, float, double, int32}", CONV2D_ATTRS), 0,
             bp_input2d_shape),
    WEFT__OP("Conv2DBackpropFilter",
             WEFT__SPECS("input: T", "filter_sizes: int32", "out_backprop: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: " FLOATS, CONV2D_ATTRS), 0,
             bp_filter2d_shape),
    WEFT__OP("DepthwiseConv2dNative", WEFT__SPECS("input: T", "filter: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS(DEPTHWISE_ATTRS), 0, depthwise_shape),
    /* DepthwiseConv2dNative with BiasAdd or FusedBatchNorm and an activation (grappler's
     * remapper, exec/fuse.c). */
    WEFT__OP("_FusedDepthwiseConv2dNative",
             WEFT__SPECS("input: T", "filter: T", "args: num_args * T"), WEFT__SPECS("output: T"),
             WEFT__SPECS(DEPTHWISE_ATTRS, "num_args: int >= 0", "fused_ops: list(string) = []",
                         "epsilon: float = 0.0001", "leakyrelu_alpha: float = 0.2"),
             0, depthwise_shape),
    WEFT__OP("DepthwiseConv2dNativeBackpropInput",
             WEFT__SPECS("input_sizes: int32", "filter: T", "out_backprop: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS(DEPTHWISE_ATTRS), 0, bp_input2d_shape),
    WEFT__OP("DepthwiseConv2dNativeBackpropFilter",
             WEFT__SPECS("input: T", "filter_sizes: int32", "out_backprop: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS(DEPTHWISE_ATTRS), 0, bp_filter2d_shape),
    WEFT__OP("Conv3D", WEFT__SPECS("input: T", "filter: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: " FLOATS, CONV3D_ATTRS), 0, conv3d_shape),
    WEFT__OP("Conv3DBackpropInputV2",
             WEFT__SPECS("input_sizes: Tshape", "filter: T", "out_backprop: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: " FLOATS, CONV3D_ATTRS, "Tshape: {int32, int64} = DT_INT32"), 0,
             bp_input3d_shape),
    WEFT__OP("AvgPool3D", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL3D_ATTRS, "T: " FLOATS), 0, pool3d_shape),
    WEFT__OP("MaxPool3D", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL3D_ATTRS, "T: {half, bfloat16, float}"), 0, pool3d_shape),
    WEFT__OP("MaxPoolWithArgmax", WEFT__SPECS("input: T"),
             WEFT__SPECS("output: T", "argmax: Targmax"),
             WEFT__SPECS("ksize: list(int) >= 4", "strides: list(int) >= 4",
                         "Targmax: {int32, int64} = DT_INT64", "padding: {'SAME', 'VALID'}",
                         "include_batch_in_index: bool = false", "T: realnumbertype"),
             0, argmax_pool_shape),
    WEFT__OP("FusedBatchNorm",
             WEFT__SPECS("x: T", "scale: T", "offset: T", "mean: T", "variance: T"),
             WEFT__SPECS("y: T", "batch_mean: T", "batch_variance: T", "reserve_space_1: T",
                         "reserve_space_2: T"),
             WEFT__SPECS("T: {float}", BN_ATTRS, "data_format: {'NHWC', 'NCHW'} = 'NHWC'"), 0,
             fused_bn_shape),
    WEFT__OP("FusedBatchNormV2",
             WEFT__SPECS("x: T", "scale: U", "offset: U", "mean: U", "variance: U"),
             WEFT__SPECS("y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U",
                         "reserve_space_2: U"),
             WEFT__SPECS("T: {half, bfloat16, float}", "U: {float}", BN_ATTRS,
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'"),
             0, fused_bn_shape),
    WEFT__OP("FusedBatchNormV3",
             WEFT__SPECS("x: T", "scale: U", "offset: U", "mean: U", "variance: U"),
             WEFT__SPECS("y: T", "batch_mean: U", "batch_variance: U", "reserve_space_1: U",
                         "reserve_space_2: U", "reserve_space_3: U"),
             WEFT__SPECS("T: {half, bfloat16, float}", "U: {float, bfloat16}", BN_ATTRS,
                         "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'"),
             0, fused_bn_v3_shape),
    WEFT__OP("LRN", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0",
                         "beta: float = 0.5", "T: {half, bfloat16, float} = DT_FLOAT"),
             0, lrn_shape),
    WEFT__OPS_END,
};
