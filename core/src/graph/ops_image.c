/* ops_image.c: the standard convolution, pooling and padding ops added for the conformance suite
 * and its ONNX node-test mapping: Conv2D, MaxPool, MaxPoolV2, AvgPool (NHWC or NCHW, SAME / VALID
 * / EXPLICIT padding, strides, Conv2D dilations), PadV2 (a constant value), MirrorPad (REFLECT,
 * SYMMETRIC) and its gradient MirrorPadGrad, with TensorFlow's names, args, attrs and type
 * constraints, and their shape functions. */
#include <string.h>

#include "ops_shape.h"

static bool is_nchw(weft_shape_ctx_t *ctx) {
  return strcmp(weft__sh_attr_string(ctx, "data_format", "NHWC"), "NCHW") == 0;
}

/* A 4-element list attr (strides, ksize, dilations) as its H and W values; an error naming the
 * attr when the list has another length or a non-positive value. MaxPoolV2 and its gradients
 * take ksize and strides as their last two inputs instead: their values when constant, unknown
 * dims otherwise. */
static weft_status_t *hw_attr(weft_shape_ctx_t *ctx, const char *name, bool nchw, int64_t dflt,
                              int64_t hw[2]) {
  const int64_t *v = NULL;
  size_t n = 0;
  int64_t *from_input = NULL;
  hw[0] = hw[1] = dflt;
  if (!weft__sh_attr_int_list(ctx, name, &v, &n)) {
    bool ksize = strcmp(name, "ksize") == 0;
    if (!ksize && strcmp(name, "strides") != 0) return NULL;
    hw[0] = hw[1] = WEFT_DIM_UNKNOWN;
    int at = weft__graph_host()->shape_num_inputs(ctx) - (ksize ? 2 : 1);
    int64_t count = 0;
    if (at < 1 || !weft__sh_const_ints(ctx, at, &from_input, &count, NULL)) return NULL;
    v = from_input;
    n = (size_t)count;
  }
  weft_status_t *status = NULL;
  if (n != 4)
    status = weft__sh_error(ctx, "%s must have 4 values (one per dimension), not %zu", name, n);
  int h = nchw ? 2 : 1, w = nchw ? 3 : 2, c = nchw ? 1 : 3;
  if (!status && (v[0] != 1 || v[c] != 1))
    status = weft__sh_error(ctx, "%s in the batch and depth dimensions must be 1", name);
  if (!status && (v[h] < 1 || v[w] < 1))
    status = weft__sh_error(ctx, "%s must be positive, got %" G_GINT64_FORMAT " and %"
                            G_GINT64_FORMAT, name, v[h], v[w]);
  if (!status) {
    hw[0] = v[h];
    hw[1] = v[w];
  }
  g_free(from_input);
  return status;
}

/* Output size of one spatial dimension; WEFT_DIM_UNKNOWN propagates. */
static int64_t window_out(int64_t in, int64_t k, int64_t dilation, int64_t stride,
                          const char *padding, int64_t pad_before, int64_t pad_after) {
  if (in < 0) return WEFT_DIM_UNKNOWN;
  int64_t eff = (k - 1) * dilation + 1;
  if (strcmp(padding, "SAME") == 0) return (in + stride - 1) / stride;
  int64_t span = in + pad_before + pad_after - eff;
  return span < 0 ? 0 : span / stride + 1;
}

/* Explicit paddings for H and W from the 8-value explicit_paddings attr. */
static weft_status_t *explicit_pads(weft_shape_ctx_t *ctx, bool nchw, int64_t pads[4]) {
  const int64_t *v = NULL;
  size_t n = 0;
  memset(pads, 0, sizeof(int64_t) * 4);
  if (!weft__sh_attr_int_list(ctx, "explicit_paddings", &v, &n) || n != 8)
    return weft__sh_error(ctx, "padding EXPLICIT needs explicit_paddings with 8 values, got %zu",
                          n);
  int h = nchw ? 2 : 1, w = nchw ? 3 : 2;
  for (int i = 0; i < 8; i++)
    if (v[i] < 0) return weft__sh_error(ctx, "explicit_paddings must be non-negative");
  pads[0] = v[2 * h];
  pads[1] = v[2 * h + 1];
  pads[2] = v[2 * w];
  pads[3] = v[2 * w + 1];
  return NULL;
}

/* Shared by Conv2D and the pools: input [N,H,W,C] (or NCHW), window from filter or ksize. */
static weft_status_t *windowed_shape(weft_shape_ctx_t *ctx, bool conv) {
  weft__shape_t in, filter = {.rank = -1};
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "input"));
  bool nchw = is_nchw(ctx);
  int64_t k[2] = {WEFT_DIM_UNKNOWN, WEFT_DIM_UNKNOWN}, stride[2], dilation[2] = {1, 1};
  int64_t out_c = WEFT_DIM_UNKNOWN;
  if (conv) {
    weft__sh_input(ctx, 1, &filter);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &filter, 4, "filter"));
    if (filter.rank == 4) {
      k[0] = filter.dims[0];
      k[1] = filter.dims[1];
      out_c = filter.dims[3];
    }
    WEFT_RETURN_IF_ERROR(hw_attr(ctx, "dilations", nchw, 1, dilation));
  } else {
    WEFT_RETURN_IF_ERROR(hw_attr(ctx, "ksize", nchw, WEFT_DIM_UNKNOWN, k));
  }
  WEFT_RETURN_IF_ERROR(hw_attr(ctx, "strides", nchw, 1, stride));
  const char *padding = weft__sh_attr_string(ctx, "padding", "VALID");
  int64_t pads[4] = {0, 0, 0, 0};
  if (strcmp(padding, "EXPLICIT") == 0) WEFT_RETURN_IF_ERROR(explicit_pads(ctx, nchw, pads));
  int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2, ic = nchw ? 1 : 3;
  weft__shape_t out = weft__sh_unknown_dims(4);
  if (in.rank == 4) {
    out.dims[0] = in.dims[0];
    out.dims[ic] = conv ? out_c : in.dims[ic];
    if (conv && filter.rank == 4 && in.dims[ic] >= 0 && filter.dims[2] > 0 &&
        in.dims[ic] % filter.dims[2] != 0)
      return weft__sh_error(ctx, "input depth %" G_GINT64_FORMAT " is not a multiple of the "
                            "filter's input depth %" G_GINT64_FORMAT,
                            in.dims[ic], filter.dims[2]);
    if (k[0] >= 0 && k[1] >= 0 && stride[0] >= 0 && stride[1] >= 0) {
      out.dims[ih] = window_out(in.dims[ih], k[0], dilation[0], stride[0], padding, pads[0],
                                pads[1]);
      out.dims[iw] = window_out(in.dims[iw], k[1], dilation[1], stride[1], padding, pads[2],
                                pads[3]);
    }
  } else if (conv) {
    out.dims[ic] = out_c;
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *conv2d_shape(weft_shape_ctx_t *ctx) { return windowed_shape(ctx, true); }
static weft_status_t *pool_shape(weft_shape_ctx_t *ctx) { return windowed_shape(ctx, false); }

/* PadV2 and MirrorPad: input + paddings [rank, 2] (constant or not). */
static weft_status_t *pad_like_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, pads;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &pads);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &pads, 2, "paddings"));
  int rank = in.rank;
  if (rank < 0 && pads.rank == 2 && pads.dims[0] >= 0 && pads.dims[0] <= WEFT_MAX_RANK)
    rank = (int)pads.dims[0];
  int64_t *p = NULL, n = 0;
  if (rank < 0 || !weft__sh_const_ints(ctx, 1, &p, &n, NULL)) {
    weft__shape_t out = weft__sh_unknown_dims(rank);
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  weft__shape_t out = {.rank = rank};
  if (n != 2 * (int64_t)rank) {
    status = weft__sh_error(ctx, "paddings must have %d values, not %" G_GINT64_FORMAT, 2 * rank,
                            n);
    goto out;
  }
  for (int i = 0; i < rank; i++) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) {
      status = weft__sh_error(ctx, "paddings must be non-negative, got %" G_GINT64_FORMAT
                              " and %" G_GINT64_FORMAT " for dimension %d",
                              p[2 * i], p[2 * i + 1], i);
      goto out;
    }
    int64_t d = in.rank >= 0 ? in.dims[i] : WEFT_DIM_UNKNOWN;
    out.dims[i] = d < 0 ? WEFT_DIM_UNKNOWN : d + p[2 * i] + p[2 * i + 1];
  }
  status = weft__sh_output(ctx, 0, &out);
out:
  g_free(p);
  return status;
}

/* MirrorPadGrad: the padded gradient less the paddings (when constant). */
static weft_status_t *mirror_pad_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, pads;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &pads);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &pads, 2, "paddings"));
  int64_t *p = NULL, n = 0;
  if (in.rank < 0 || !weft__sh_const_ints(ctx, 1, &p, &n, NULL)) {
    weft__shape_t out = weft__sh_unknown_dims(in.rank);
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  weft__shape_t out = {.rank = in.rank};
  if (n != 2 * (int64_t)in.rank)
    status = weft__sh_error(ctx, "paddings must have %d values, not %" G_GINT64_FORMAT,
                            2 * in.rank, n);
  for (int i = 0; !status && i < in.rank; i++) {
    int64_t d = in.dims[i] < 0 ? WEFT_DIM_UNKNOWN : in.dims[i] - p[2 * i] - p[2 * i + 1];
    if (p[2 * i] < 0 || p[2 * i + 1] < 0 || (in.dims[i] >= 0 && d < 0))
      status = weft__sh_error(ctx, "paddings %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
                              " of dimension %d do not fit its size %" G_GINT64_FORMAT,
                              p[2 * i], p[2 * i + 1], i, in.dims[i]);
    out.dims[i] = d;
  }
  if (!status) status = weft__sh_output(ctx, 0, &out);
  g_free(p);
  return status;
}

#define CONV_TYPES "{half, bfloat16, float, double, int32}"
#define POOL_TYPES "{half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16}"

const weft_op_def_t weft__ops_image[] = {
    WEFT__OP("Conv2D", WEFT__SPECS("input: T", "filter: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: " CONV_TYPES, "strides: list(int)", "use_cudnn_on_gpu: bool = true",
                         "padding: {'SAME', 'VALID', 'EXPLICIT'}",
                         "explicit_paddings: list(int) = []",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
                         "dilations: list(int) = [1, 1, 1, 1]"),
             0, conv2d_shape),
    /* Conv2D with BiasAdd or FusedBatchNorm (inference) and an activation, as TensorFlow's
     * grappler remapper writes it (exec/fuse.c makes it too). */
    WEFT__OP("_FusedConv2D", WEFT__SPECS("input: T", "filter: T", "args: num_args * T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, float, double}", "num_args: int >= 0", "strides: list(int)",
                         "padding: {'SAME', 'VALID', 'EXPLICIT'}",
                         "explicit_paddings: list(int) = []",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
                         "dilations: list(int) = [1, 1, 1, 1]", "use_cudnn_on_gpu: bool = true",
                         "fused_ops: list(string) = []", "epsilon: float = 0.0001",
                         "leakyrelu_alpha: float = 0.2"),
             0, conv2d_shape),
    WEFT__OP("MaxPool", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: " POOL_TYPES " = DT_FLOAT", "ksize: list(int) >= 4",
                         "strides: list(int) >= 4", "padding: {'SAME', 'VALID', 'EXPLICIT'}",
                         "explicit_paddings: list(int) = []",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'"),
             0, pool_shape),
    /* MaxPool whose window and strides are tensors (hw_attr reads them when constant). */
    WEFT__OP("MaxPoolV2", WEFT__SPECS("input: T", "ksize: int32", "strides: int32"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: " POOL_TYPES " = DT_FLOAT", "padding: {'SAME', 'VALID'}",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'"),
             0, pool_shape),
    WEFT__OP("AvgPool", WEFT__SPECS("value: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("ksize: list(int) >= 4", "strides: list(int) >= 4",
                         "padding: {'SAME', 'VALID'}", "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
                         "T: {half, bfloat16, float, double}"),
             0, pool_shape),
    WEFT__OP("PadV2", WEFT__SPECS("input: T", "paddings: Tpaddings", "constant_values: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "Tpaddings: {int32, int64} = DT_INT32"), 0, pad_like_shape),
    WEFT__OP("MirrorPad", WEFT__SPECS("input: T", "paddings: Tpaddings"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "Tpaddings: {int32, int64} = DT_INT32",
                         "mode: {'REFLECT', 'SYMMETRIC'}"),
             0, pad_like_shape),
    WEFT__OP("MirrorPadGrad", WEFT__SPECS("input: T", "paddings: Tpaddings"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "Tpaddings: {int32, int64} = DT_INT32",
                         "mode: {'REFLECT', 'SYMMETRIC'}"),
             0, mirror_pad_grad_shape),
    WEFT__OPS_END,
};
