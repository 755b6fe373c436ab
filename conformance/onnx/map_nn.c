/* onnx/map_nn.c: the ONNX activations that TensorFlow lacks or defines differently (LeakyRelu,
 * Elu/Selu, HardSigmoid, Gelu, ... as arithmetic), the Softmax family (flattened to 2-D before
 * opset 13, transposed to put the axis last from 13) and Dropout (identity; a random training
 * mode is unsupported). */
#include <math.h>
#include <string.h>

#include "map.h"

static weft_status_t *map_leaky_relu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  float alpha = cf_onnx_attr_float(node, "alpha", 0.01f);
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  bool promote = cf_onnx_is_f16(dt) && !cf_onnx_has_kernel(x, "LeakyRelu", dt);
  weft_output_t in = promote ? cf_onnx_cast(x, v, WEFT_DT_FLOAT, &st) : v;
  weft_op_builder_t *b = cf_onnx_op(x, "LeakyRelu");
  weft_op_add_input(b, in);
  weft_op_set_attr_float(b, "alpha", alpha);
  r = cf_onnx_finish(x, b, &st);
  if (promote) r = cf_onnx_cast(x, r, dt, &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_elu_selu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  bool selu = t[0] == 'S';
  double alpha = cf_onnx_attr_float(node, "alpha", selu ? 1.67326319217681884765625f : 1.0f);
  double gamma = cf_onnx_attr_float(node, "gamma", 1.05070102214813232421875f);
  /* x > 0: x (times gamma); else alpha * (exp(x) - 1) (times gamma), from Elu's expm1. */
  weft_output_t neg = cf_onnx_mul_scalar(x, cf_onnx_ew(x, "Elu", v, CF_ONNX_NONE, &st), alpha, &st);
  weft_output_t pos_mask = cf_onnx_ew(x, "Greater", v, cf_onnx_scalar_like(x, v, 0, &st), &st);
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, pos_mask);
  weft_op_add_input(b, v);
  weft_op_add_input(b, neg);
  r = cf_onnx_finish(x, b, &st);
  if (selu) r = cf_onnx_mul_scalar(x, r, gamma, &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_hard_sigmoid(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  double alpha = cf_onnx_attr_float(node, "alpha", 0.2f);
  double beta = cf_onnx_attr_float(node, "beta", 0.5f);
  r = cf_onnx_add_scalar(x, cf_onnx_mul_scalar(x, v, alpha, &st), beta, &st);
  r = cf_onnx_ew(x, "Minimum", cf_onnx_ew(x, "Maximum", r, cf_onnx_scalar_like(x, v, 0, &st), &st),
                 cf_onnx_scalar_like(x, v, 1, &st), &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_hard_swish(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  weft_output_t h = cf_onnx_add_scalar(x, cf_onnx_mul_scalar(x, v, 1.0 / 6, &st), 0.5, &st);
  h = cf_onnx_ew(x, "Minimum", cf_onnx_ew(x, "Maximum", h, cf_onnx_scalar_like(x, v, 0, &st), &st),
                 cf_onnx_scalar_like(x, v, 1, &st), &st);
  r = cf_onnx_ew(x, "Mul", v, h, &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_thresholded_relu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  double alpha = cf_onnx_attr_float(node, "alpha", 1.0f);
  weft_output_t mask = cf_onnx_ew(x, "Greater", v, cf_onnx_scalar_like(x, v, alpha, &st), &st);
  r = cf_onnx_ew(x, "Mul", v, cf_onnx_cast(x, mask, cf_onnx_out_dtype(v), &st), &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_mish(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  weft_output_t sp = cf_onnx_ew(x, "Softplus", v, CF_ONNX_NONE, &st);
  weft_output_t t = cf_onnx_ew(x, "Tanh", sp, CF_ONNX_NONE, &st);
  cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, "Mul", v, t, &st));
  return st;
}

static weft_status_t *map_celu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  double alpha = cf_onnx_attr_float(node, "alpha", 1.0f);
  weft_output_t e = cf_onnx_mul_scalar(
      x, cf_onnx_ew(x, "Elu", cf_onnx_mul_scalar(x, v, 1.0 / alpha, &st), CF_ONNX_NONE, &st), alpha,
      &st);
  r = cf_onnx_ew(x, "AddV2", cf_onnx_ew(x, "Relu", v, CF_ONNX_NONE, &st),
                 cf_onnx_ew(x, "Minimum", e, cf_onnx_scalar_like(x, v, 0, &st), &st), &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_gelu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  const char *approx = cf_onnx_attr_string(node, "approximate", "none");
  weft_output_t inner;
  if (strcmp(approx, "tanh") == 0) {
    weft_output_t cube = cf_onnx_ew(x, "Mul", cf_onnx_ew(x, "Mul", v, v, &st), v, &st);
    inner = cf_onnx_mul_scalar(
        x, cf_onnx_ew(x, "AddV2", v, cf_onnx_mul_scalar(x, cube, 0.044715, &st), &st),
        sqrt(2.0 / M_PI), &st);
    inner = cf_onnx_ew(x, "Tanh", inner, CF_ONNX_NONE, &st);
  } else {
    inner = cf_onnx_ew(x, "Erf", cf_onnx_mul_scalar(x, v, M_SQRT1_2, &st), CF_ONNX_NONE, &st);
  }
  r = cf_onnx_mul_scalar(x, cf_onnx_ew(x, "Mul", v, cf_onnx_add_scalar(x, inner, 1, &st), &st), 0.5,
                         &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_swish(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  double alpha = cf_onnx_attr_float(node, "alpha", 1.0f);
  r = cf_onnx_ew(x, "Mul", v,
                 cf_onnx_ew(x, "Sigmoid", cf_onnx_mul_scalar(x, v, alpha, &st), CF_ONNX_NONE, &st),
                 &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_shrink(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  double bias = cf_onnx_attr_float(node, "bias", 0.0f),
         lambd = cf_onnx_attr_float(node, "lambd", 0.5f);
  weft_output_t lo = cf_onnx_ew(x, "Less", v, cf_onnx_scalar_like(x, v, -lambd, &st), &st);
  weft_output_t hi = cf_onnx_ew(x, "Greater", v, cf_onnx_scalar_like(x, v, lambd, &st), &st);
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  weft_output_t a =
      cf_onnx_ew(x, "Mul", cf_onnx_add_scalar(x, v, bias, &st), cf_onnx_cast(x, lo, dt, &st), &st);
  weft_output_t b =
      cf_onnx_ew(x, "Mul", cf_onnx_add_scalar(x, v, -bias, &st), cf_onnx_cast(x, hi, dt, &st), &st);
  r = cf_onnx_ew(x, "AddV2", a, b, &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_prelu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  weft_output_t neg = cf_onnx_ew(x, "Mul", v, cf_onnx_in(x, node, 1), &st);
  weft_output_t mask = cf_onnx_ew(x, "Less", v, cf_onnx_scalar_like(x, v, 0, &st), &st);
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, mask);
  weft_op_add_input(b, neg);
  weft_op_add_input(b, v);
  r = cf_onnx_finish(x, b, &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

static weft_status_t *map_isinf(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), r;
  bool neg = cf_onnx_attr_int(node, "detect_negative", 1) != 0;
  bool pos = cf_onnx_attr_int(node, "detect_positive", 1) != 0;
  r = cf_onnx_ew(x, "IsInf", v, CF_ONNX_NONE, &st);
  if (!(neg && pos)) {
    weft_output_t sign =
        cf_onnx_ew(x, pos ? "Greater" : "Less", v, cf_onnx_scalar_like(x, v, 0, &st), &st);
    r = (neg || pos) ? cf_onnx_ew(x, "LogicalAnd", r, sign, &st)
                     : cf_onnx_ew(x, "LogicalAnd", r,
                                  cf_onnx_ew(x, "LogicalNot", r, CF_ONNX_NONE, &st), &st);
  }
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

/* Softmax, LogSoftmax and Hardmax over axis (default_axis when the attribute is absent); with
 * coerce_2d the input is flattened to 2-D at axis and the op runs over the second dimension. */
static weft_status_t *softmax(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool coerce_2d,
                              int64_t default_axis) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  bool log_out = strcmp(t, "LogSoftmax") == 0, hard = strcmp(t, "Hardmax") == 0;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", default_axis);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return cf_onnx_unsupported(x, "axis out of range");
  weft_output_t in = v;
  int64_t perm[WEFT_MAX_RANK];
  bool transposed = false, flattened = false;
  if (coerce_2d) {
    int64_t flat[2] = {1, 1};
    for (int d = 0; d < rank; d++) flat[d < axis ? 0 : 1] *= dims[d];
    in = cf_onnx_reshape(x, v, flat, 2, &st);
    flattened = true;
  } else if (axis != rank - 1) {
    for (int d = 0; d < rank; d++) perm[d] = d;
    perm[axis] = rank - 1;
    perm[rank - 1] = axis;
    in = cf_onnx_transpose(x, v, perm, rank, &st);
    transposed = true;
  }
  weft_output_t r;
  if (hard) {
    int64_t inner[WEFT_MAX_RANK];
    int irank = cf_onnx_shape(in, inner);
    int64_t last = irank - 1;
    weft_output_t am = cf_onnx_binary(
        x, "ArgMax", in, cf_onnx_const_ints(x, WEFT_DT_INT32, &last, 1, true, &st), &st);
    weft_op_builder_t *b = cf_onnx_op(x, "OneHot");
    if (st) {
      weft_op_finish(b, NULL);
      return st;
    }
    weft_op_add_input(b, am);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT32, &inner[last], 1, true, &st));
    weft_op_add_input(b, cf_onnx_scalar_like(x, v, 1, &st));
    weft_op_add_input(b, cf_onnx_scalar_like(x, v, 0, &st));
    r = cf_onnx_finish(x, b, &st);
  } else {
    r = cf_onnx_ew(x, log_out ? "LogSoftmax" : "Softmax", in, CF_ONNX_NONE, &st);
  }
  if (flattened) r = cf_onnx_reshape(x, r, dims, rank, &st);
  if (transposed) r = cf_onnx_transpose(x, r, perm, rank, &st);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

/* Softmax-1 and -11: the input is coerced to 2-D at axis, 1 by default. */
static weft_status_t *map_softmax_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return softmax(x, node, true, 1);
}

/* Softmax-13: over the one axis, the last by default. */
static weft_status_t *map_softmax_v13(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return softmax(x, node, false, -1);
}

/* Dropout with its ratio and training mode: the input passes through, and the mask output (where
 * wanted) is all true. */
static weft_status_t *dropout(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, double ratio,
                              bool training) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  /* Training with a non-zero ratio draws random masks no reference can reproduce. */
  if (training && ratio != 0)
    return cf_onnx_unsupported(x, "Dropout in training mode (random) is not mapped");
  cf_onnx_bind_out(x, node, 0, cf_onnx_unary(x, "Identity", v, &st));
  if (cf_onnx_has_out(node, 1)) {
    int64_t dims[WEFT_MAX_RANK];
    int rank;
    if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
    weft_tensor_t *t = weft_tensor_new(WEFT_DT_BOOL, rank, dims);
    memset(weft_tensor_data(t), 1, weft_tensor_nbytes(t));
    cf_onnx_bind_out(x, node, 1,
                     cf_onnx_unary(x, "Identity", cf_onnx_const_tensor(x, t, &st), &st));
    weft_tensor_unref(t);
  }
  return st;
}

/* Dropout-1 to -10: ratio is an attribute; there is no training mode. */
static weft_status_t *map_dropout_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return dropout(x, node, cf_onnx_attr_float(node, "ratio", 0.5f), false);
}

/* Dropout-12: ratio and training_mode are optional inputs. */
static weft_status_t *map_dropout_v12(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  double ratio = 0.5, t = 0;
  if (cf_onnx_has_in(node, 1) && !cf_onnx_in_scalar(x, node, 1, &ratio, &st)) return st;
  if (cf_onnx_has_in(node, 2) && !cf_onnx_in_scalar(x, node, 2, &t, &st)) return st;
  return dropout(x, node, ratio, t != 0);
}

const cf_onnx_row_t cf_onnx_rows_nn[] = {
    {"LeakyRelu", 1, map_leaky_relu},
    {"Elu", 1, map_elu_selu},
    {"Selu", 1, map_elu_selu},
    {"HardSigmoid", 1, map_hard_sigmoid},
    {"HardSwish", 1, map_hard_swish},
    {"ThresholdedRelu", 1, map_thresholded_relu},
    {"Mish", 1, map_mish},
    {"Celu", 1, map_celu},
    {"Gelu", 1, map_gelu},
    {"Swish", 1, map_swish},
    {"Shrink", 1, map_shrink},
    {"PRelu", 1, map_prelu},
    {"IsInf", 1, map_isinf},
    {"Softmax", 1, map_softmax_v1},
    {"Softmax", 13, map_softmax_v13},
    {"LogSoftmax", 1, map_softmax_v1},
    {"LogSoftmax", 13, map_softmax_v13},
    {"Hardmax", 1, map_softmax_v1},
    {"Hardmax", 13, map_softmax_v13},
    {"Dropout", 1, map_dropout_v1},
    {"Dropout", 12, map_dropout_v12},
    {NULL, 0, NULL},
};
