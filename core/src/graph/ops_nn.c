/* ops_nn.c: the standard neural-network ops (BiasAdd, activations, Softmax, cross-entropy losses,
 * activation gradients, L2Loss, the old BiasAddV1) with TensorFlow's names, args, attrs and type
 * constraints, and their shape functions. */
#include <string.h>

#include "ops_shape.h"

/* The channel dimension of a BiasAdd input: the last one (NHWC) or the second (NCHW). */
static int channel_dim(weft_shape_ctx_t *ctx, int rank) {
  const char *format = weft__sh_attr_string(ctx, "data_format", "NHWC");
  return strcmp(format, "NCHW") == 0 ? 1 : rank - 1;
}

static int min_rank(weft_shape_ctx_t *ctx) {
  const char *format = weft__sh_attr_string(ctx, "data_format", "NHWC");
  return strcmp(format, "NCHW") == 0 ? 3 : 2;
}

static weft_status_t *bias_add_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t value, bias;
  weft__sh_input(ctx, 0, &value);
  weft__sh_input(ctx, 1, &bias);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &value, min_rank(ctx), "BiasAdd's value"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &bias, 1, "BiasAdd's bias"));
  if (value.rank < 0) return weft__sh_output(ctx, 0, &value);
  weft__shape_t out = value;
  int c = channel_dim(ctx, value.rank);
  if (bias.rank == 1 && !weft__sh_merge_dim(value.dims[c], bias.dims[0], &out.dims[c])) {
    char *a = weft__sh_str(&value), *b = weft__sh_str(&bias);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": bias %s must match the channel dimension %d of value %s",
        value.dims[c], bias.dims[0], b, c, a);
    g_free(a);
    g_free(b);
    return status;
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *bias_add_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t grad;
  weft__sh_input(ctx, 0, &grad);
  WEFT_RETURN_IF_ERROR(
      weft__sh_with_rank_at_least(ctx, &grad, min_rank(ctx), "BiasAddGrad's out_backprop"));
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  if (grad.rank >= 0) out.dims[0] = grad.dims[channel_dim(ctx, grad.rank)];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *softmax_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t logits;
  weft__sh_input(ctx, 0, &logits);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &logits, 1, "logits"));
  return weft__sh_output(ctx, 0, &logits);
}

/* Both outputs of a cross-entropy op: loss [batch] and backprop [batch, classes]. */
static weft_status_t *xent_outputs(weft_shape_ctx_t *ctx, int64_t batch, int64_t classes) {
  weft__shape_t loss = {.rank = 1, .dims = {batch}};
  weft__shape_t backprop = {.rank = 2, .dims = {batch, classes}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &loss));
  return weft__sh_output(ctx, 1, &backprop);
}

static weft_status_t *softmax_xent_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t features, labels, both;
  weft__sh_input(ctx, 0, &features);
  weft__sh_input(ctx, 1, &labels);
  /* TensorFlow lets the labels broadcast against the features (both rank 2 in the end). */
  WEFT_RETURN_IF_ERROR(weft__sh_broadcast(ctx, &features, &labels, &both));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &both, 2, "features and labels (broadcast)"));
  if (both.rank < 0) return xent_outputs(ctx, WEFT_DIM_UNKNOWN, WEFT_DIM_UNKNOWN);
  return xent_outputs(ctx, both.dims[0], both.dims[1]);
}

static weft_status_t *sparse_softmax_xent_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t features, labels;
  weft__sh_input(ctx, 0, &features);
  weft__sh_input(ctx, 1, &labels);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &features, 2, "features"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &labels, 1, "labels"));
  int64_t batch = features.rank == 2 ? features.dims[0] : WEFT_DIM_UNKNOWN;
  int64_t classes = features.rank == 2 ? features.dims[1] : WEFT_DIM_UNKNOWN;
  int64_t lb = labels.rank == 1 ? labels.dims[0] : WEFT_DIM_UNKNOWN;
  if (!weft__sh_merge_dim(batch, lb, &batch)) {
    char *a = weft__sh_str(&features), *b = weft__sh_str(&labels);
    weft_status_t *status = weft__sh_error(
        ctx, "logits and labels must have the same first dimension, got logits shape %s and "
        "labels shape %s", a, b);
    g_free(a);
    g_free(b);
    return status;
  }
  return xent_outputs(ctx, batch, classes);
}

#define FLOATS "{half, bfloat16, float, double}"

#define ACTIVATION(name, types)                                                              \
  WEFT__OP(name, WEFT__SPECS("features: T"), WEFT__SPECS("activations: T"),                   \
           WEFT__SPECS("T: " types), 0, weft__shape_fn_unchanged)
#define ELEMENTWISE_GRAD(name, in0, in1, out, types)                                         \
  WEFT__OP(name, WEFT__SPECS(in0 ": T", in1 ": T"), WEFT__SPECS(out ": T"),                   \
           WEFT__SPECS("T: " types), 0, weft__shape_fn_merge_all)

const weft_op_def_t weft__ops_nn[] = {
    WEFT__OP("BiasAdd", WEFT__SPECS("value: T", "bias: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: numbertype", "data_format: {'NHWC', 'NCHW'} = 'NHWC'"), 0,
             bias_add_shape),
    /* The BiasAdd of graphs older than data_format: always channels last. */
    WEFT__OP("BiasAddV1", WEFT__SPECS("value: T", "bias: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: numbertype"), 0, bias_add_shape),
    WEFT__OP("BiasAddGrad", WEFT__SPECS("out_backprop: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: numbertype", "data_format: {'NHWC', 'NCHW'} = 'NHWC'"), 0,
             bias_add_grad_shape),
    ACTIVATION("Relu", "realnumbertype"),
    ACTIVATION("Relu6", "realnumbertype"),
    ACTIVATION("Elu", FLOATS),
    ACTIVATION("Selu", FLOATS),
    WEFT__OP("LeakyRelu", WEFT__SPECS("features: T"), WEFT__SPECS("activations: T"),
             WEFT__SPECS("alpha: float = 0.2", "T: " FLOATS " = DT_FLOAT"), 0,
             weft__shape_fn_unchanged),
    ACTIVATION("Softplus", FLOATS),
    ACTIVATION("Softsign", FLOATS),
    WEFT__OP("Sigmoid", WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: " FLOATS), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("Tanh", WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: " FLOATS), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("Softmax", WEFT__SPECS("logits: T"), WEFT__SPECS("softmax: T"),
             WEFT__SPECS("T: " FLOATS), 0, softmax_shape),
    WEFT__OP("LogSoftmax", WEFT__SPECS("logits: T"), WEFT__SPECS("logsoftmax: T"),
             WEFT__SPECS("T: " FLOATS), 0, softmax_shape),
    WEFT__OP("SoftmaxCrossEntropyWithLogits", WEFT__SPECS("features: T", "labels: T"),
             WEFT__SPECS("loss: T", "backprop: T"), WEFT__SPECS("T: " FLOATS), 0,
             softmax_xent_shape),
    WEFT__OP("SparseSoftmaxCrossEntropyWithLogits", WEFT__SPECS("features: T", "labels: Tlabels"),
             WEFT__SPECS("loss: T", "backprop: T"),
             WEFT__SPECS("T: " FLOATS, "Tlabels: {int32, int64} = DT_INT64"), 0,
             sparse_softmax_xent_shape),
    ELEMENTWISE_GRAD("ReluGrad", "gradients", "features", "backprops", "realnumbertype"),
    ELEMENTWISE_GRAD("SigmoidGrad", "y", "dy", "z", FLOATS),
    ELEMENTWISE_GRAD("TanhGrad", "y", "dy", "z", FLOATS),
    ELEMENTWISE_GRAD("Relu6Grad", "gradients", "features", "backprops", "realnumbertype"),
    ELEMENTWISE_GRAD("EluGrad", "gradients", "outputs", "backprops", FLOATS),
    ELEMENTWISE_GRAD("SeluGrad", "gradients", "outputs", "backprops", FLOATS),
    ELEMENTWISE_GRAD("SoftplusGrad", "gradients", "features", "backprops", FLOATS),
    ELEMENTWISE_GRAD("SoftsignGrad", "gradients", "features", "backprops", FLOATS),
    WEFT__OP("LeakyReluGrad", WEFT__SPECS("gradients: T", "features: T"),
             WEFT__SPECS("backprops: T"),
             WEFT__SPECS("alpha: float = 0.2", "T: " FLOATS " = DT_FLOAT"), 0,
             weft__shape_fn_merge_all),
    WEFT__OP("L2Loss", WEFT__SPECS("t: T"), WEFT__SPECS("output: T"), WEFT__SPECS("T: " FLOATS),
             0, weft__shape_fn_scalar),
    WEFT__OPS_END,
};
