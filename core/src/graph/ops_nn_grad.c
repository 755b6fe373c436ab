/* ops_nn_grad.c: the backprop ops TensorFlow's nn_grad.py and array_grad.py emit for the pools,
 * 3-D convolution, LRN, fused batch norm and strided slice (MaxPoolGrad, MaxPoolGradV2,
 * MaxPoolGradGrad, AvgPoolGrad, MaxPool3DGrad, AvgPool3DGrad, Conv3DBackpropFilterV2, LRNGrad,
 * FusedBatchNormGrad V1/V2/V3, StridedSliceGrad), with TensorFlow's names, args, attrs and type
 * constraints, so weft_gradients can build them and TensorFlow training graphs holding them
 * load. */
#include <string.h>

#include "ops_shape.h"

/* MaxPoolGrad: the gradient has orig_input's shape; orig_output and grad must agree. */
static weft_status_t *max_pool_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x, y, dy, merged;
  weft__sh_input(ctx, 0, &x);
  weft__sh_input(ctx, 1, &y);
  weft__sh_input(ctx, 2, &dy);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 4, "orig_input"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &dy, 4, "grad"));
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &y, &dy, &merged, "orig_output and grad"));
  return weft__sh_output(ctx, 0, &x);
}

/* MaxPoolGradGrad: grad has orig_input's shape, the output orig_output's. */
static weft_status_t *max_pool_grad_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x, y, g, merged;
  weft__sh_input(ctx, 0, &x);
  weft__sh_input(ctx, 1, &y);
  weft__sh_input(ctx, 2, &g);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 4, "orig_input"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &y, 4, "orig_output"));
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &x, &g, &merged, "orig_input and grad"));
  return weft__sh_output(ctx, 0, &y);
}

/* AvgPoolGrad, StridedSliceGrad: the output shape is the value of the shape input 0. */
static weft_status_t *shape_input_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 0, &out));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *avg_pool_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t dy;
  weft__sh_input(ctx, 1, &dy);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &dy, 4, "grad"));
  return shape_input_shape(ctx);
}

/* FusedBatchNormGrad*: x_backprop like x, scale/offset backprops [C], the reserve outputs
 * empty vectors as TensorFlow's CPU kernel makes them. */
static weft_status_t *fused_bn_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t dy, x, merged, c;
  weft__sh_input(ctx, 0, &dy);
  weft__sh_input(ctx, 1, &x);
  const char *f = weft__sh_attr_string(ctx, "data_format", "NHWC");
  int rank = strlen(f) == 5 ? 5 : 4;
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &dy, rank, "y_backprop"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, rank, "x"));
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &dy, &x, &merged, "y_backprop and x"));
  int64_t ch = WEFT_DIM_UNKNOWN;
  if (merged.rank > 0) ch = merged.dims[f[1] == 'C' ? 1 : rank - 1];
  for (int i = 2; i < 5; i++) {
    weft__sh_input(ctx, i, &c);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &c, 1, "scale, reserve_space_1 and "
                                            "reserve_space_2"));
    if (c.rank == 1 && !weft__sh_merge_dim(ch, c.dims[0], &ch))
      return weft__sh_error(ctx, "input %d has %" G_GINT64_FORMAT " channels, x has %"
                            G_GINT64_FORMAT, i, c.dims[0], ch);
  }
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &merged));
  weft__shape_t per = {.rank = 1, .dims = {ch}}, empty = {.rank = 1, .dims = {0}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &per));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 2, &per));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 3, &empty));
  return weft__sh_output(ctx, 4, &empty);
}

/* MaxPool3DGrad: the gradient has orig_input's shape (rank 5). */
static weft_status_t *max_pool3d_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x;
  weft__sh_input(ctx, 0, &x);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 5, "orig_input"));
  return weft__sh_output(ctx, 0, &x);
}

/* AvgPool3DGrad, Conv3DBackpropFilterV2: the shape held in input `at`, of rank 5. */
static weft_status_t *rank5_from_tensor(weft_shape_ctx_t *ctx, int at, const char *what) {
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, at, &out));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &out, 5, what));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *avg_pool3d_grad_shape(weft_shape_ctx_t *ctx) {
  return rank5_from_tensor(ctx, 0, "orig_input_shape");
}

static weft_status_t *conv3d_bp_filter_shape(weft_shape_ctx_t *ctx) {
  return rank5_from_tensor(ctx, 1, "filter_sizes");
}

/* LRNGrad: three rank-4 inputs of one shape, which the gradient has. */
static weft_status_t *lrn_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t merged = {.rank = -1};
  for (int i = 0; i < 3; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 4, "input_grads, input_image and "
                                            "output_image"));
    WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &merged, &s, &merged, "input_grads, input_image "
                                        "and output_image"));
  }
  return weft__sh_output(ctx, 0, &merged);
}

#define POOL_GRAD_ATTRS "ksize: list(int) >= 4", "strides: list(int) >= 4"
#define POOL3D_GRAD_ATTRS                                                                    \
  "ksize: list(int) >= 5", "strides: list(int) >= 5", "padding: {'SAME', 'VALID'}",            \
      "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'"
#define BN_GRAD_ATTRS "epsilon: float = 0.0001", "is_training: bool = true"

const weft_op_def_t weft__ops_nn_grad[] = {
    WEFT__OP("MaxPoolGrad", WEFT__SPECS("orig_input: T", "orig_output: T", "grad: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL_GRAD_ATTRS, "padding: {'SAME', 'VALID', 'EXPLICIT'}",
                         "explicit_paddings: list(int) = []",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
                         "T: realnumbertype = DT_FLOAT"),
             0, max_pool_grad_shape),
    WEFT__OP("MaxPoolGradV2",
             WEFT__SPECS("orig_input: T", "orig_output: T", "grad: T", "ksize: int32",
                         "strides: int32"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("padding: {'SAME', 'VALID'}", "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
                         "T: realnumbertype = DT_FLOAT"),
             0, max_pool_grad_shape),
    WEFT__OP("MaxPoolGradGrad", WEFT__SPECS("orig_input: T", "orig_output: T", "grad: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL_GRAD_ATTRS, "padding: {'SAME', 'VALID'}",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'", "T: realnumbertype"),
             0, max_pool_grad_grad_shape),
    WEFT__OP("AvgPoolGrad", WEFT__SPECS("orig_input_shape: int32", "grad: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL_GRAD_ATTRS, "padding: {'SAME', 'VALID'}",
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
                         "T: {half, bfloat16, float, double}"),
             0, avg_pool_grad_shape),
    WEFT__OP("MaxPool3DGrad",
             WEFT__SPECS("orig_input: TInput", "orig_output: TInput", "grad: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL3D_GRAD_ATTRS, "T: {half, bfloat16, float} = DT_FLOAT",
                         "TInput: {half, bfloat16, float} = DT_FLOAT"),
             0, max_pool3d_grad_shape),
    WEFT__OP("AvgPool3DGrad", WEFT__SPECS("orig_input_shape: int32", "grad: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS(POOL3D_GRAD_ATTRS, "T: {half, bfloat16, float, double}"), 0,
             avg_pool3d_grad_shape),
    WEFT__OP("Conv3DBackpropFilterV2",
             WEFT__SPECS("input: T", "filter_sizes: int32", "out_backprop: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, bfloat16, float, double}", "strides: list(int) >= 5",
                         "padding: {'SAME', 'VALID'}",
                         "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'",
                         "dilations: list(int) = [1, 1, 1, 1, 1]"),
             0, conv3d_bp_filter_shape),
    WEFT__OP("LRNGrad", WEFT__SPECS("input_grads: T", "input_image: T", "output_image: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("depth_radius: int = 5", "bias: float = 1.0", "alpha: float = 1.0",
                         "beta: float = 0.5", "T: {half, bfloat16, float} = DT_FLOAT"),
             0, lrn_grad_shape),
    WEFT__OP("StridedSliceGrad",
             WEFT__SPECS("shape: Index", "begin: Index", "end: Index", "strides: Index",
                         "dy: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "Index: {int32, int64}", "begin_mask: int = 0",
                         "end_mask: int = 0", "ellipsis_mask: int = 0", "new_axis_mask: int = 0",
                         "shrink_axis_mask: int = 0"),
             0, shape_input_shape),
    WEFT__OP("FusedBatchNormGrad",
             WEFT__SPECS("y_backprop: T", "x: T", "scale: T", "reserve_space_1: T",
                         "reserve_space_2: T"),
             WEFT__SPECS("x_backprop: T", "scale_backprop: T", "offset_backprop: T",
                         "reserve_space_3: T", "reserve_space_4: T"),
             WEFT__SPECS("T: {float}", BN_GRAD_ATTRS, "data_format: {'NHWC', 'NCHW'} = 'NHWC'"),
             0, fused_bn_grad_shape),
    WEFT__OP("FusedBatchNormGradV2",
             WEFT__SPECS("y_backprop: T", "x: T", "scale: float", "reserve_space_1: U",
                         "reserve_space_2: U"),
             WEFT__SPECS("x_backprop: T", "scale_backprop: U", "offset_backprop: U",
                         "reserve_space_3: U", "reserve_space_4: U"),
             WEFT__SPECS("T: {half, bfloat16, float}", "U: {float}", BN_GRAD_ATTRS,
                         "data_format: {'NHWC', 'NCHW'} = 'NHWC'"),
             0, fused_bn_grad_shape),
    WEFT__OP("FusedBatchNormGradV3",
             WEFT__SPECS("y_backprop: T", "x: T", "scale: float", "reserve_space_1: U",
                         "reserve_space_2: U", "reserve_space_3: U"),
             WEFT__SPECS("x_backprop: T", "scale_backprop: U", "offset_backprop: U",
                         "reserve_space_4: U", "reserve_space_5: U"),
             WEFT__SPECS("T: {half, bfloat16, float}", "U: {float}", BN_GRAD_ATTRS,
                         "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'"),
             0, fused_bn_grad_shape),
    WEFT__OPS_END,
};
