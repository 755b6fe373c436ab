/* onnx_map.c: the mapping from ONNX operators (default domain) to Weft's TensorFlow-named ops,
 * one mapper per ONNX op. Where the two agree the mapping is one node (Relu -> Relu, Where ->
 * SelectV2); where they differ it is a subgraph: Gemm is MatMul with transposes, alpha/beta
 * scaling and a bias; Softmax before opset 13 flattens to 2-D; Conv, MaxPool and AveragePool
 * transpose NCHW to NHWC around Conv2D/MaxPool/AvgPool (and pooling with dilations, 3-D windows,
 * ceil mode or argmax outputs is built from strided slices); BatchNormalization and
 * LayerNormalization are arithmetic; shape-like inputs (axes, pads, shapes, repeats) become
 * Consts. Elementwise ops on float16/bfloat16 run in float32 between Casts when the device has no
 * 16-bit kernel (exact for the correctly rounded ops). */
#include <math.h>
#include <string.h>

#include "onnx_internal.h"

typedef weft_output_t out_t;
static const out_t NONE = {NULL, 0};

#define IN(i) cf_onnx_in(x, node, (i))
#define BIND(k, o) cf_onnx_bind(x, node->output[(k)], (o))
#define HAS_OUT(k) ((k) < node->n_output && node->output[(k)][0] != '\0')

/* ---------------------------------------------------------------------------------------------
 * Small builders */

static int rank_of(out_t o, int64_t *dims) { return cf_onnx_shape(o, dims); }

static weft_status_t *need_shape(cf_onnx_ctx_t *x, out_t o, int *rank, int64_t *dims) {
  *rank = rank_of(o, dims);
  if (*rank < 0) return cf_onnx_unsupported(x, "the input's shape is not known statically");
  for (int d = 0; d < *rank; d++)
    if (dims[d] < 0) return cf_onnx_unsupported(x, "the input's shape is not known statically");
  return NULL;
}

static bool is_f16(weft_dtype_t t) { return t == WEFT_DT_HALF || t == WEFT_DT_BFLOAT16; }

/* op over inputs of one dtype, computed in float32 between Casts when the device has no kernel
 * for the 16-bit dtype. */
static out_t ew(cf_onnx_ctx_t *x, const char *op, out_t a, out_t b, weft_status_t **st) {
  if (*st) return NONE;
  if (a.node == NULL) {
    *st = cf_onnx_unsupported(x, "%s: a required input is missing", op);
    return NONE;
  }
  weft_dtype_t t = cf_onnx_out_dtype(a);
  if (is_f16(t) && !cf_onnx_has_kernel(x, op, t) && cf_onnx_has_kernel(x, op, WEFT_DT_FLOAT)) {
    out_t fa = cf_onnx_cast(x, a, WEFT_DT_FLOAT, st);
    out_t fb = b.node ? cf_onnx_cast(x, b, WEFT_DT_FLOAT, st) : NONE;
    out_t r = b.node ? cf_onnx_binary(x, op, fa, fb, st) : cf_onnx_unary(x, op, fa, st);
    if (*st) return NONE;
    if (cf_onnx_out_dtype(r) != WEFT_DT_FLOAT) return r; /* comparisons give bool */
    return cf_onnx_cast(x, r, t, st);
  }
  return b.node ? cf_onnx_binary(x, op, a, b, st) : cf_onnx_unary(x, op, a, st);
}

static out_t scalar_like(cf_onnx_ctx_t *x, out_t like, double v, weft_status_t **st) {
  if (*st) return NONE;
  return cf_onnx_const_scalar(x, cf_onnx_out_dtype(like), v, st);
}

static out_t mul_scalar(cf_onnx_ctx_t *x, out_t a, double v, weft_status_t **st) {
  return ew(x, "Mul", a, scalar_like(x, a, v, st), st);
}

static out_t add_scalar(cf_onnx_ctx_t *x, out_t a, double v, weft_status_t **st) {
  return ew(x, "AddV2", a, scalar_like(x, a, v, st), st);
}

static out_t reduce_op(cf_onnx_ctx_t *x, const char *op, out_t a, const int64_t *axes, int n,
                       bool keep, weft_status_t **st) {
  if (*st) return NONE;
  out_t ax = cf_onnx_const_ints(x, WEFT_DT_INT64, axes, n, false, st);
  if (*st) return NONE;
  weft_dtype_t t = cf_onnx_out_dtype(a);
  bool promote = is_f16(t) && !cf_onnx_has_kernel(x, op, t);
  out_t in = promote ? cf_onnx_cast(x, a, WEFT_DT_FLOAT, st) : a;
  if (*st) return NONE;
  weft_op_builder_t *b = cf_onnx_op(x, op);
  weft_op_add_input(b, in);
  weft_op_add_input(b, ax);
  weft_op_set_attr_bool(b, "keep_dims", keep);
  out_t r = cf_onnx_finish(x, b, st);
  return promote ? cf_onnx_cast(x, r, t, st) : r;
}

/* Normalises axes against rank; false (with *st) for one out of range. */
static bool norm_axes(cf_onnx_ctx_t *x, int64_t *axes, int n, int rank, weft_status_t **st) {
  for (int i = 0; i < n; i++) {
    if (axes[i] < 0) axes[i] += rank;
    if (axes[i] < 0 || axes[i] >= rank) {
      *st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: axis %" G_GINT64_FORMAT " out of range "
                            "for rank %d", x->node_name, axes[i], rank);
      return false;
    }
  }
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise */

typedef struct name_pair {
  const char *onnx, *weft;
} name_pair_t;

static const name_pair_t unary_ops[] = {
    {"Abs", "Abs"},       {"Neg", "Neg"},         {"Sqrt", "Sqrt"},       {"Exp", "Exp"},
    {"Log", "Log"},       {"Relu", "Relu"},       {"Sigmoid", "Sigmoid"}, {"Tanh", "Tanh"},
    {"Reciprocal", "Reciprocal"}, {"Floor", "Floor"}, {"Ceil", "Ceil"},   {"Sign", "Sign"},
    {"Erf", "Erf"},       {"Sin", "Sin"},         {"Cos", "Cos"},         {"Tan", "Tan"},
    {"Asin", "Asin"},     {"Acos", "Acos"},       {"Atan", "Atan"},       {"Sinh", "Sinh"},
    {"Cosh", "Cosh"},     {"Asinh", "Asinh"},     {"Acosh", "Acosh"},     {"Atanh", "Atanh"},
    {"Softsign", "Softsign"}, {"Softplus", "Softplus"}, {"Round", "Round"}, {"IsNaN", "IsNan"},
    {"Not", "LogicalNot"}, {"Identity", "Identity"},
};

static const name_pair_t binary_ops[] = {
    {"Add", "AddV2"},       {"Sub", "Sub"},         {"Mul", "Mul"},
    {"Div", "Div"},         {"Equal", "Equal"},     {"Less", "Less"},
    {"Greater", "Greater"}, {"LessOrEqual", "LessEqual"}, {"GreaterOrEqual", "GreaterEqual"},
    {"And", "LogicalAnd"},  {"Or", "LogicalOr"},
};

static const char *lookup(const name_pair_t *t, size_t n, const char *onnx) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].onnx, onnx) == 0) return t[i].weft;
  return NULL;
}

static weft_status_t *map_unary(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *op = lookup(unary_ops, G_N_ELEMENTS(unary_ops), node->op_type);
  BIND(0, ew(x, op, IN(0), NONE, &st));
  return st;
}

static weft_status_t *map_binary(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *op = lookup(binary_ops, G_N_ELEMENTS(binary_ops), node->op_type);
  BIND(0, ew(x, op, IN(0), IN(1), &st));
  return st;
}

static weft_status_t *map_xor(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  BIND(0, ew(x, "NotEqual", IN(0), IN(1), &st));
  return st;
}

static weft_status_t *map_mod(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  /* fmod=1: the sign of the dividend (C fmod, TensorFlow's Mod); 0: of the divisor (FloorMod). */
  bool fmod = cf_onnx_attr_int(node, "fmod", 0) != 0;
  BIND(0, ew(x, fmod ? "Mod" : "FloorMod", IN(0), IN(1), &st));
  return st;
}

static weft_status_t *map_pow(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t a = IN(0), b = IN(1);
  weft_dtype_t ta = cf_onnx_out_dtype(a), tb = cf_onnx_out_dtype(b);
  if (ta == tb) {
    BIND(0, ew(x, "Pow", a, b, &st));
  } else if (cf_dtype_is_float(ta)) {
    BIND(0, ew(x, "Pow", a, cf_onnx_cast(x, b, ta, &st), &st));
  } else {
    /* An integer base with a float exponent: compute in the exponent's type, truncate back. */
    out_t r = ew(x, "Pow", cf_onnx_cast(x, a, tb, &st), b, &st);
    BIND(0, cf_onnx_cast(x, r, ta, &st));
  }
  return st;
}

static weft_status_t *map_variadic(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  const char *op = strcmp(t, "Max") == 0   ? "Maximum"
                   : strcmp(t, "Min") == 0 ? "Minimum"
                                           : "AddV2";
  out_t acc = IN(0);
  int n = 0;
  for (size_t i = 0; i < node->n_input; i++) {
    if (!cf_onnx_has_in(node, i)) continue;
    if (n++ == 0) {
      acc = IN(i);
      continue;
    }
    acc = ew(x, op, acc, IN(i), &st);
  }
  if (n == 1) acc = cf_onnx_unary(x, "Identity", acc, &st);
  if (strcmp(t, "Mean") == 0 && n > 1) acc = ew(x, "Div", acc, scalar_like(x, acc, n, &st), &st);
  BIND(0, acc);
  return st;
}

static weft_status_t *map_where(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  out_t c = IN(0), t = IN(1), e = IN(2);
  if (!c.node || !t.node || !e.node) {
    weft_op_finish(b, NULL);
    return cf_onnx_unsupported(x, "Where needs three inputs");
  }
  weft_op_add_input(b, c);
  weft_op_add_input(b, t);
  weft_op_add_input(b, e);
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_clip(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0), lo = NONE, hi = NONE;
  if (x->opset < 11) {
    const Onnx__AttributeProto *a = cf_onnx_attr(node, "min"), *b = cf_onnx_attr(node, "max");
    if (a) lo = scalar_like(x, v, a->f, &st);
    if (b) hi = scalar_like(x, v, b->f, &st);
  } else {
    lo = IN(1);
    hi = IN(2);
  }
  /* numpy.clip: max first, then min, so min > max gives max everywhere. */
  if (lo.node) v = ew(x, "Maximum", v, lo, &st);
  if (hi.node) v = ew(x, "Minimum", v, hi, &st);
  if (!lo.node && !hi.node) v = cf_onnx_unary(x, "Identity", v, &st);
  BIND(0, v);
  return st;
}

static weft_status_t *map_activation(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  out_t v = IN(0), r = NONE;
  if (strcmp(t, "LeakyRelu") == 0) {
    float alpha = cf_onnx_attr_float(node, "alpha", 0.01f);
    weft_dtype_t dt = cf_onnx_out_dtype(v);
    bool promote = is_f16(dt) && !cf_onnx_has_kernel(x, "LeakyRelu", dt);
    out_t in = promote ? cf_onnx_cast(x, v, WEFT_DT_FLOAT, &st) : v;
    weft_op_builder_t *b = cf_onnx_op(x, "LeakyRelu");
    weft_op_add_input(b, in);
    weft_op_set_attr_float(b, "alpha", alpha);
    r = cf_onnx_finish(x, b, &st);
    if (promote) r = cf_onnx_cast(x, r, dt, &st);
  } else if (strcmp(t, "Elu") == 0 || strcmp(t, "Selu") == 0) {
    bool selu = t[0] == 'S';
    double alpha = cf_onnx_attr_float(node, "alpha", selu ? 1.67326319217681884765625f : 1.0f);
    double gamma = cf_onnx_attr_float(node, "gamma", 1.05070102214813232421875f);
    /* x > 0: x (times gamma); else alpha * (exp(x) - 1) (times gamma), from Elu's expm1. */
    out_t neg = mul_scalar(x, ew(x, "Elu", v, NONE, &st), alpha, &st);
    out_t pos_mask = ew(x, "Greater", v, scalar_like(x, v, 0, &st), &st);
    weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
    if (st) {
      weft_op_finish(b, NULL);
      return st;
    }
    weft_op_add_input(b, pos_mask);
    weft_op_add_input(b, v);
    weft_op_add_input(b, neg);
    r = cf_onnx_finish(x, b, &st);
    if (selu) r = mul_scalar(x, r, gamma, &st);
  } else if (strcmp(t, "HardSigmoid") == 0) {
    double alpha = cf_onnx_attr_float(node, "alpha", 0.2f);
    double beta = cf_onnx_attr_float(node, "beta", 0.5f);
    r = add_scalar(x, mul_scalar(x, v, alpha, &st), beta, &st);
    r = ew(x, "Minimum", ew(x, "Maximum", r, scalar_like(x, v, 0, &st), &st),
           scalar_like(x, v, 1, &st), &st);
  } else if (strcmp(t, "HardSwish") == 0) {
    out_t h = add_scalar(x, mul_scalar(x, v, 1.0 / 6, &st), 0.5, &st);
    h = ew(x, "Minimum", ew(x, "Maximum", h, scalar_like(x, v, 0, &st), &st),
           scalar_like(x, v, 1, &st), &st);
    r = ew(x, "Mul", v, h, &st);
  } else if (strcmp(t, "ThresholdedRelu") == 0) {
    double alpha = cf_onnx_attr_float(node, "alpha", 1.0f);
    out_t mask = ew(x, "Greater", v, scalar_like(x, v, alpha, &st), &st);
    r = ew(x, "Mul", v, cf_onnx_cast(x, mask, cf_onnx_out_dtype(v), &st), &st);
  } else if (strcmp(t, "Mish") == 0) {
    r = ew(x, "Mul", v, ew(x, "Tanh", ew(x, "Softplus", v, NONE, &st), NONE, &st), &st);
  } else if (strcmp(t, "Celu") == 0) {
    double alpha = cf_onnx_attr_float(node, "alpha", 1.0f);
    out_t e = mul_scalar(x, ew(x, "Elu", mul_scalar(x, v, 1.0 / alpha, &st), NONE, &st), alpha,
                         &st);
    r = ew(x, "AddV2", ew(x, "Relu", v, NONE, &st),
           ew(x, "Minimum", e, scalar_like(x, v, 0, &st), &st), &st);
  } else if (strcmp(t, "Gelu") == 0) {
    const char *approx = cf_onnx_attr_string(node, "approximate", "none");
    out_t inner;
    if (strcmp(approx, "tanh") == 0) {
      out_t cube = ew(x, "Mul", ew(x, "Mul", v, v, &st), v, &st);
      inner = mul_scalar(x, ew(x, "AddV2", v, mul_scalar(x, cube, 0.044715, &st), &st),
                         sqrt(2.0 / M_PI), &st);
      inner = ew(x, "Tanh", inner, NONE, &st);
    } else {
      inner = ew(x, "Erf", mul_scalar(x, v, M_SQRT1_2, &st), NONE, &st);
    }
    r = mul_scalar(x, ew(x, "Mul", v, add_scalar(x, inner, 1, &st), &st), 0.5, &st);
  } else if (strcmp(t, "Swish") == 0) {
    double alpha = cf_onnx_attr_float(node, "alpha", 1.0f);
    r = ew(x, "Mul", v, ew(x, "Sigmoid", mul_scalar(x, v, alpha, &st), NONE, &st), &st);
  } else if (strcmp(t, "Shrink") == 0) {
    double bias = cf_onnx_attr_float(node, "bias", 0.0f), lambd = cf_onnx_attr_float(node, "lambd",
                                                                                      0.5f);
    out_t lo = ew(x, "Less", v, scalar_like(x, v, -lambd, &st), &st);
    out_t hi = ew(x, "Greater", v, scalar_like(x, v, lambd, &st), &st);
    weft_dtype_t dt = cf_onnx_out_dtype(v);
    out_t a = ew(x, "Mul", add_scalar(x, v, bias, &st), cf_onnx_cast(x, lo, dt, &st), &st);
    out_t b = ew(x, "Mul", add_scalar(x, v, -bias, &st), cf_onnx_cast(x, hi, dt, &st), &st);
    r = ew(x, "AddV2", a, b, &st);
  } else if (strcmp(t, "PRelu") == 0) {
    out_t neg = ew(x, "Mul", v, IN(1), &st);
    out_t mask = ew(x, "Less", v, scalar_like(x, v, 0, &st), &st);
    weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
    if (st) {
      weft_op_finish(b, NULL);
      return st;
    }
    weft_op_add_input(b, mask);
    weft_op_add_input(b, neg);
    weft_op_add_input(b, v);
    r = cf_onnx_finish(x, b, &st);
  } else if (strcmp(t, "IsInf") == 0) {
    bool neg = cf_onnx_attr_int(node, "detect_negative", 1) != 0;
    bool pos = cf_onnx_attr_int(node, "detect_positive", 1) != 0;
    r = ew(x, "IsInf", v, NONE, &st);
    if (!(neg && pos)) {
      out_t sign = ew(x, pos ? "Greater" : "Less", v, scalar_like(x, v, 0, &st), &st);
      r = (neg || pos) ? ew(x, "LogicalAnd", r, sign, &st)
                       : ew(x, "LogicalAnd", r, ew(x, "LogicalNot", r, NONE, &st), &st);
    }
  }
  BIND(0, r);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Softmax family */

static weft_status_t *map_softmax(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  bool log_out = strcmp(t, "LogSoftmax") == 0, hard = strcmp(t, "Hardmax") == 0;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", x->opset < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return cf_onnx_unsupported(x, "axis out of range");
  out_t in = v;
  int64_t perm[WEFT_MAX_RANK];
  bool transposed = false, flattened = false;
  if (x->opset < 13) {
    /* Before opset 13 the input is coerced to 2-D at axis. */
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
  out_t r;
  if (hard) {
    int64_t inner[WEFT_MAX_RANK];
    int irank = rank_of(in, inner);
    int64_t last = irank - 1;
    out_t am = cf_onnx_binary(x, "ArgMax", in, cf_onnx_const_ints(x, WEFT_DT_INT32, &last, 1,
                                                                  true, &st),
                              &st);
    weft_op_builder_t *b = cf_onnx_op(x, "OneHot");
    if (st) {
      weft_op_finish(b, NULL);
      return st;
    }
    weft_op_add_input(b, am);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT32, &inner[last], 1, true, &st));
    weft_op_add_input(b, scalar_like(x, v, 1, &st));
    weft_op_add_input(b, scalar_like(x, v, 0, &st));
    r = cf_onnx_finish(x, b, &st);
  } else {
    r = ew(x, log_out ? "LogSoftmax" : "Softmax", in, NONE, &st);
  }
  if (flattened) r = cf_onnx_reshape(x, r, dims, rank, &st);
  if (transposed) r = cf_onnx_transpose(x, r, perm, rank, &st);
  BIND(0, r);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * MatMul, Gemm */

static weft_status_t *map_matmul(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t a = IN(0), b = IN(1);
  int64_t da[WEFT_MAX_RANK], db[WEFT_MAX_RANK];
  int ra, rb;
  if ((st = need_shape(x, a, &ra, da)) || (st = need_shape(x, b, &rb, db))) return st;
  /* 1-D operands are promoted to matrices and the added dimension removed afterwards. */
  if (ra == 1) {
    int64_t d[2] = {1, da[0]};
    a = cf_onnx_reshape(x, a, d, 2, &st);
  }
  if (rb == 1) {
    int64_t d[2] = {db[0], 1};
    b = cf_onnx_reshape(x, b, d, 2, &st);
  }
  int ra2 = ra == 1 ? 2 : ra, rb2 = rb == 1 ? 2 : rb;
  out_t r = (ra2 == 2 && rb2 == 2) ? ew(x, "MatMul", a, b, &st) : ew(x, "BatchMatMulV2", a, b, &st);
  if (st) return st;
  if (ra == 1 || rb == 1) {
    int64_t dr[WEFT_MAX_RANK], out[WEFT_MAX_RANK];
    int rr = rank_of(r, dr), n = 0;
    for (int d = 0; d < rr; d++) {
      if (ra == 1 && d == rr - 2) continue;
      if (rb == 1 && d == rr - 1) continue;
      out[n++] = dr[d];
    }
    r = cf_onnx_reshape(x, r, out, n, &st);
  }
  BIND(0, r);
  return st;
}

static weft_status_t *map_gemm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  double alpha = cf_onnx_attr_float(node, "alpha", 1.0f), beta = cf_onnx_attr_float(node, "beta",
                                                                                    1.0f);
  bool ta = cf_onnx_attr_int(node, "transA", 0) != 0, tb = cf_onnx_attr_int(node, "transB", 0) != 0;
  out_t a = IN(0), b = IN(1), c = IN(2);
  if (!a.node || !b.node) return cf_onnx_unsupported(x, "Gemm needs A and B");
  weft_op_builder_t *m = cf_onnx_op(x, "MatMul");
  weft_op_add_input(m, a);
  weft_op_add_input(m, b);
  weft_op_set_attr_bool(m, "transpose_a", ta);
  weft_op_set_attr_bool(m, "transpose_b", tb);
  out_t r = cf_onnx_finish(x, m, &st);
  if (alpha != 1.0) r = mul_scalar(x, r, alpha, &st);
  if (c.node) {
    if (beta != 1.0) c = mul_scalar(x, c, beta, &st);
    r = ew(x, "AddV2", r, c, &st);
  }
  BIND(0, r);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Reductions, ArgMax/ArgMin */

/* The reduced axes of a Reduce* node (attribute before the opset that made it an input).
 * *noop: empty axes with noop_with_empty_axes (the input passes through). */
static bool reduce_axes(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, int rank, int64_t **axes,
                        int *n, bool *noop, weft_status_t **st) {
  *axes = NULL;
  *n = 0;
  *noop = false;
  if (cf_onnx_has_in(node, 1)) {
    if (!cf_onnx_in_ints(x, node, 1, axes, n, st)) return false;
  } else {
    size_t na = 0;
    const int64_t *a = cf_onnx_attr_ints(node, "axes", &na);
    if (cf_onnx_attr(node, "axes")) {
      *axes = g_memdup2(a, sizeof(int64_t) * (na ? na : 1));
      *n = (int)na;
    }
  }
  if (*n == 0) {
    g_free(*axes);
    if (cf_onnx_attr_int(node, "noop_with_empty_axes", 0)) {
      *noop = true;
      *axes = NULL;
      return true;
    }
    *axes = g_new0(int64_t, rank > 0 ? rank : 1);
    for (int d = 0; d < rank; d++) (*axes)[d] = d;
    *n = rank;
  }
  return norm_axes(x, *axes, *n, rank, st);
}

static weft_status_t *map_reduce(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t *axes = NULL;
  int n = 0;
  bool noop = false;
  if (!reduce_axes(x, node, rank, &axes, &n, &noop, &st)) {
    g_free(axes);
    return st;
  }
  bool keep = cf_onnx_attr_int(node, "keepdims", 1) != 0;
  bool is_bool = cf_onnx_out_dtype(v) == WEFT_DT_BOOL;
  out_t r;
  if (noop) {
    r = cf_onnx_unary(x, "Identity", v, &st);
  } else if (strcmp(t, "ReduceSum") == 0) {
    r = reduce_op(x, "Sum", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceMean") == 0) {
    r = reduce_op(x, "Mean", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceMax") == 0) {
    r = reduce_op(x, is_bool ? "Any" : "Max", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceMin") == 0) {
    r = reduce_op(x, is_bool ? "All" : "Min", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceProd") == 0) {
    r = reduce_op(x, "Prod", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceL1") == 0) {
    r = reduce_op(x, "Sum", ew(x, "Abs", v, NONE, &st), axes, n, keep, &st);
  } else if (strcmp(t, "ReduceL2") == 0) {
    r = ew(x, "Sqrt", reduce_op(x, "Sum", ew(x, "Square", v, NONE, &st), axes, n, keep, &st),
           NONE, &st);
  } else if (strcmp(t, "ReduceSumSquare") == 0) {
    r = reduce_op(x, "Sum", ew(x, "Square", v, NONE, &st), axes, n, keep, &st);
  } else if (strcmp(t, "ReduceLogSum") == 0) {
    r = ew(x, "Log", reduce_op(x, "Sum", v, axes, n, keep, &st), NONE, &st);
  } else { /* ReduceLogSumExp, shifted by the max (0 where the max is not finite) */
    out_t m = reduce_op(x, "Max", v, axes, n, true, &st);
    weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
    out_t fin = ew(x, "IsFinite", m, NONE, &st);
    out_t zero = scalar_like(x, v, 0, &st);
    if (st) {
      weft_op_finish(b, NULL);
      g_free(axes);
      return st;
    }
    weft_op_add_input(b, fin);
    weft_op_add_input(b, m);
    weft_op_add_input(b, zero);
    out_t m0 = cf_onnx_finish(x, b, &st);
    out_t s = reduce_op(x, "Sum", ew(x, "Exp", ew(x, "Sub", v, m0, &st), NONE, &st), axes, n,
                        true, &st);
    r = ew(x, "AddV2", ew(x, "Log", s, NONE, &st), m0, &st);
    if (!keep && !st) {
      int64_t od[WEFT_MAX_RANK];
      int on = 0;
      for (int d = 0; d < rank; d++) {
        bool red = false;
        for (int i = 0; i < n; i++) red |= axes[i] == d;
        if (!red) od[on++] = dims[d];
      }
      r = cf_onnx_reshape(x, r, od, on, &st);
    }
  }
  g_free(axes);
  BIND(0, r);
  return st;
}

static weft_status_t *map_argminmax(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  bool is_max = strcmp(node->op_type, "ArgMax") == 0;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!norm_axes(x, &axis, 1, rank, &st)) return st;
  bool keep = cf_onnx_attr_int(node, "keepdims", 1) != 0;
  bool last = cf_onnx_attr_int(node, "select_last_index", 0) != 0;
  out_t in = v;
  if (last) {
    /* The last index among ties: the first one in the reversed axis, counted from the end. */
    int64_t begin[WEFT_MAX_RANK] = {0}, end[WEFT_MAX_RANK] = {0}, strides[WEFT_MAX_RANK];
    for (int d = 0; d < rank; d++) strides[d] = d == axis ? -1 : 1;
    weft_op_builder_t *b = cf_onnx_op(x, "StridedSlice");
    weft_op_add_input(b, v);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, end, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, strides, rank, false, &st));
    weft_op_set_attr_int(b, "begin_mask", (1 << rank) - 1);
    weft_op_set_attr_int(b, "end_mask", (1 << rank) - 1);
    in = cf_onnx_finish(x, b, &st);
  }
  if (st) return st;
  weft_op_builder_t *b = cf_onnx_op(x, is_max ? "ArgMax" : "ArgMin");
  weft_op_add_input(b, in);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, &axis, 1, true, &st));
  weft_op_set_attr_type(b, "output_type", WEFT_DT_INT64);
  out_t r = cf_onnx_finish(x, b, &st);
  if (last && !st) {
    out_t top = cf_onnx_const_ints(x, WEFT_DT_INT64, (int64_t[]){dims[axis] - 1}, 1, true, &st);
    r = cf_onnx_binary(x, "Sub", top, r, &st);
  }
  if (keep && !st) {
    dims[axis] = 1;
    r = cf_onnx_reshape(x, r, dims, rank, &st);
  }
  BIND(0, r);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Shapes and data movement */

static weft_status_t *map_transpose(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK], perm[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  size_t n = 0;
  const int64_t *p = cf_onnx_attr_ints(node, "perm", &n);
  for (int d = 0; d < rank; d++) perm[d] = p && n == (size_t)rank ? p[d] : rank - 1 - d;
  BIND(0, cf_onnx_transpose(x, v, perm, rank, &st));
  return st;
}

static weft_status_t *map_reshape(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t *shape = NULL;
  int n = 0;
  if (cf_onnx_has_in(node, 1)) {
    if (!cf_onnx_in_ints(x, node, 1, &shape, &n, &st)) return st;
  } else {
    size_t na = 0;
    const int64_t *a = cf_onnx_attr_ints(node, "shape", &na);
    shape = g_memdup2(a, sizeof(int64_t) * (na ? na : 1));
    n = (int)na;
  }
  if (n > WEFT_MAX_RANK) {
    g_free(shape);
    return cf_onnx_unsupported(x, "rank %d above %d", n, WEFT_MAX_RANK);
  }
  bool allowzero = cf_onnx_attr_int(node, "allowzero", 0) != 0;
  /* 0 copies the input's dimension (unless allowzero); TensorFlow infers the -1. */
  for (int i = 0; i < n; i++)
    if (shape[i] == 0 && !allowzero && i < rank) shape[i] = dims[i];
  BIND(0, cf_onnx_reshape(x, v, shape, n, &st));
  g_free(shape);
  return st;
}

static weft_status_t *map_flatten(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 1);
  if (axis < 0) axis += rank;
  int64_t flat[2] = {1, 1};
  for (int d = 0; d < rank; d++) flat[d < axis ? 0 : 1] *= dims[d];
  BIND(0, cf_onnx_reshape(x, v, flat, 2, &st));
  return st;
}

static bool axes_from(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, int64_t **axes, int *n,
                      weft_status_t **st) {
  if (cf_onnx_has_in(node, 1)) return cf_onnx_in_ints(x, node, 1, axes, n, st);
  size_t na = 0;
  const int64_t *a = cf_onnx_attr_ints(node, "axes", &na);
  *axes = g_memdup2(a, sizeof(int64_t) * (na ? na : 1));
  *n = (int)na;
  return true;
}

static weft_status_t *map_squeeze(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t *axes = NULL;
  int n = 0;
  if (!axes_from(x, node, &axes, &n, &st) || !norm_axes(x, axes, n, rank, &st)) {
    g_free(axes);
    return st;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "Squeeze");
  weft_op_add_input(b, v);
  if (n > 0) weft_op_set_attr_int_list(b, "squeeze_dims", axes, n);
  BIND(0, cf_onnx_finish(x, b, &st));
  g_free(axes);
  return st;
}

static weft_status_t *map_unsqueeze(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t *axes = NULL;
  int n = 0;
  if (!axes_from(x, node, &axes, &n, &st)) return st;
  int out_rank = rank + n;
  if (out_rank > WEFT_MAX_RANK || !norm_axes(x, axes, n, out_rank, &st)) {
    g_free(axes);
    return st ? st : cf_onnx_unsupported(x, "rank %d above %d", out_rank, WEFT_MAX_RANK);
  }
  int64_t out[WEFT_MAX_RANK];
  for (int d = 0, k = 0; d < out_rank; d++) {
    bool inserted = false;
    for (int i = 0; i < n; i++) inserted |= axes[i] == d;
    out[d] = inserted ? 1 : dims[k++];
  }
  g_free(axes);
  BIND(0, cf_onnx_reshape(x, v, out, out_rank, &st));
  return st;
}

static weft_status_t *map_concat(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t ins[64];
  int n = 0;
  for (size_t i = 0; i < node->n_input && n < 64; i++)
    if (cf_onnx_has_in(node, i)) ins[n++] = IN(i);
  if (n == 0) return cf_onnx_unsupported(x, "Concat without inputs");
  if (n == 1) {
    BIND(0, cf_onnx_unary(x, "Identity", ins[0], &st));
    return st;
  }
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  weft_op_builder_t *b = cf_onnx_op(x, "ConcatV2");
  weft_op_add_input_list(b, ins, n);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, &axis, 1, true, &st));
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_cast(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_dtype_t to;
  if (strcmp(node->op_type, "CastLike") == 0) {
    to = cf_onnx_out_dtype(IN(1));
  } else {
    int64_t t = cf_onnx_attr_int(node, "to", 0);
    to = cf_onnx_dtype((int)t);
    if (to == WEFT_DT_INVALID)
      return cf_onnx_unsupported(x, "cast to ONNX type %" G_GINT64_FORMAT " (no Weft dtype)", t);
  }
  out_t v = IN(0);
  if (cf_onnx_out_dtype(v) == to) {
    BIND(0, cf_onnx_unary(x, "Identity", v, &st));
    return st;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "Cast");
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "DstT", to);
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_expand(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t *shape = NULL;
  int n = 0;
  if (!cf_onnx_in_ints(x, node, 1, &shape, &n, &st)) return st;
  /* Expand broadcasts both ways: the result has the broadcast of both shapes. */
  int r = rank > n ? rank : n;
  int64_t out[WEFT_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t a = i < r - rank ? 1 : dims[i - (r - rank)];
    int64_t b = i < r - n ? 1 : shape[i - (r - n)];
    out[i] = a == 1 ? b : a;
  }
  g_free(shape);
  out_t s = cf_onnx_const_ints(x, WEFT_DT_INT64, out, r, false, &st);
  BIND(0, cf_onnx_binary(x, "BroadcastTo", v, s, &st));
  return st;
}

static weft_status_t *map_gather(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t p = IN(0), idx = IN(1);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, p, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!norm_axes(x, &axis, 1, rank, &st)) return st;
  /* Negative indices count from the end in ONNX; TensorFlow refuses them. */
  out_t zero = scalar_like(x, idx, 0, &st);
  out_t neg = cf_onnx_binary(x, "Less", idx, zero, &st);
  out_t wrapped = cf_onnx_binary(x, "AddV2", idx, scalar_like(x, idx, (double)dims[axis], &st),
                                 &st);
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, neg);
  weft_op_add_input(b, wrapped);
  weft_op_add_input(b, idx);
  out_t fixed = cf_onnx_finish(x, b, &st);
  weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
  if (st) {
    weft_op_finish(g, NULL);
    return st;
  }
  weft_op_add_input(g, p);
  weft_op_add_input(g, fixed);
  weft_op_add_input(g, cf_onnx_const_ints(x, WEFT_DT_INT64, &axis, 1, true, &st));
  BIND(0, cf_onnx_finish(x, g, &st));
  return st;
}

static weft_status_t *map_slice(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  int ns = 0, ne = 0, na = 0, nst = 0;
  if (x->opset < 10) {
    size_t n1 = 0, n2 = 0, n3 = 0;
    const int64_t *a = cf_onnx_attr_ints(node, "starts", &n1);
    const int64_t *b = cf_onnx_attr_ints(node, "ends", &n2);
    const int64_t *c = cf_onnx_attr_ints(node, "axes", &n3);
    starts = g_memdup2(a, 8 * (n1 + 1));
    ends = g_memdup2(b, 8 * (n2 + 1));
    axes = n3 ? g_memdup2(c, 8 * n3) : NULL;
    ns = (int)n1;
    ne = (int)n2;
    na = (int)n3;
  } else {
    if (!cf_onnx_in_ints(x, node, 1, &starts, &ns, &st) ||
        !cf_onnx_in_ints(x, node, 2, &ends, &ne, &st) ||
        (cf_onnx_has_in(node, 3) && !cf_onnx_in_ints(x, node, 3, &axes, &na, &st)) ||
        (cf_onnx_has_in(node, 4) && !cf_onnx_in_ints(x, node, 4, &steps, &nst, &st)))
      goto out;
  }
  if (ns != ne || (axes && na != ns) || (steps && nst != ns)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: starts, ends, axes and steps differ in length",
                         x->node_name);
    goto out;
  }
  int64_t begin[WEFT_MAX_RANK], end[WEFT_MAX_RANK], stride[WEFT_MAX_RANK];
  int end_mask = 0;
  for (int d = 0; d < rank; d++) {
    begin[d] = 0;
    end[d] = dims[d];
    stride[d] = 1;
  }
  for (int i = 0; i < ns; i++) {
    int64_t a = axes ? axes[i] : i;
    if (!norm_axes(x, &a, 1, rank, &st)) goto out;
    int64_t step = steps ? steps[i] : 1, dim = dims[a];
    if (step == 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: a step of 0", x->node_name);
      goto out;
    }
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = s < 0 ? 0 : s > dim ? dim : s;
      e = e < 0 ? 0 : e > dim ? dim : e;
    } else {
      s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      /* -1 means "before index 0", which StridedSlice spells with the end mask. */
      if (e == -1) end_mask |= 1 << a;
    }
    begin[a] = s;
    end[a] = e;
    stride[a] = step;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "StridedSlice");
  weft_op_add_input(b, v);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, end, rank, false, &st));
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, stride, rank, false, &st));
  if (end_mask) weft_op_set_attr_int(b, "end_mask", end_mask);
  BIND(0, cf_onnx_finish(x, b, &st));
out:
  g_free(starts);
  g_free(ends);
  g_free(axes);
  g_free(steps);
  return st;
}

static weft_status_t *map_tile(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  int64_t *rep = NULL;
  int n = 0;
  if (!cf_onnx_in_ints(x, node, 1, &rep, &n, &st)) return st;
  out_t m = cf_onnx_const_ints(x, WEFT_DT_INT64, rep, n, false, &st);
  g_free(rep);
  BIND(0, cf_onnx_binary(x, "Tile", IN(0), m, &st));
  return st;
}

static weft_status_t *map_pad(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  const char *mode = cf_onnx_attr_string(node, "mode", "constant");
  bool gather_mode = strcmp(mode, "edge") == 0 || strcmp(mode, "wrap") == 0;
  if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && !gather_mode)
    return cf_onnx_unsupported(x, "Pad mode '%s' is not mapped", mode);
  int64_t *pads = NULL, *axes = NULL;
  int np = 0, na = 0;
  double value = 0;
  out_t value_in = NONE;
  if (x->opset < 11) {
    size_t n = 0;
    const int64_t *p = cf_onnx_attr_ints(node, "pads", &n);
    pads = g_memdup2(p, 8 * (n + 1));
    np = (int)n;
    value = cf_onnx_attr_float(node, "value", 0.0f);
  } else {
    if (!cf_onnx_in_ints(x, node, 1, &pads, &np, &st)) return st;
    value_in = IN(2);
    if (cf_onnx_has_in(node, 3) && !cf_onnx_in_ints(x, node, 3, &axes, &na, &st)) {
      g_free(pads);
      return st;
    }
  }
  int n_axes = axes ? na : rank;
  int64_t paddings[2 * WEFT_MAX_RANK] = {0};
  bool ok = np == 2 * n_axes;
  for (int i = 0; ok && i < n_axes; i++) {
    int64_t a = axes ? axes[i] : i;
    if (a < 0) a += rank;
    ok = a >= 0 && a < rank && pads[i] >= 0 && pads[i + n_axes] >= 0;
    if (ok) {
      paddings[2 * a] = pads[i];
      paddings[2 * a + 1] = pads[i + n_axes];
    }
  }
  g_free(pads);
  g_free(axes);
  if (!ok) return cf_onnx_unsupported(x, "negative or malformed pads are not mapped");
  if (gather_mode) {
    /* edge repeats the border element, wrap continues from the other side: one GatherV2 per
     * padded axis with the source index of every output position. */
    bool edge = mode[0] == 'e';
    out_t r = v;
    for (int d = 0; d < rank && !st; d++) {
      int64_t before = paddings[2 * d], after = paddings[2 * d + 1], n = dims[d];
      if (before == 0 && after == 0) continue;
      if (n == 0) return cf_onnx_unsupported(x, "padding an empty dimension in %s mode", mode);
      int64_t len = n + before + after;
      int64_t *idx = g_new(int64_t, len);
      for (int64_t i = 0; i < len; i++) {
        int64_t src = i - before;
        idx[i] = edge ? (src < 0 ? 0 : src >= n ? n - 1 : src) : ((src % n) + n) % n;
      }
      out_t ic = cf_onnx_const_ints(x, WEFT_DT_INT64, idx, (int)len, false, &st);
      g_free(idx);
      int64_t ax = d;
      weft_op_builder_t *b = cf_onnx_op(x, "GatherV2");
      if (st) {
        weft_op_finish(b, NULL);
        break;
      }
      weft_op_add_input(b, r);
      weft_op_add_input(b, ic);
      weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, &ax, 1, true, &st));
      r = cf_onnx_finish(x, b, &st);
    }
    if (r.node == v.node && r.index == v.index) r = cf_onnx_unary(x, "Identity", v, &st);
    BIND(0, r);
    return st;
  }
  int64_t pd[2] = {rank, 2};
  weft_tensor_t *pt = weft_tensor_new(WEFT_DT_INT64, 2, pd);
  memcpy(weft_tensor_data(pt), paddings, sizeof(int64_t) * 2 * (size_t)rank);
  out_t p = cf_onnx_const_tensor(x, pt, &st);
  weft_tensor_unref(pt);
  weft_op_builder_t *b;
  if (strcmp(mode, "reflect") == 0) {
    b = cf_onnx_op(x, "MirrorPad");
    weft_op_add_input(b, v);
    weft_op_add_input(b, p);
    weft_op_set_attr_string(b, "mode", "REFLECT");
  } else {
    if (value_in.node == NULL) value_in = scalar_like(x, v, value, &st);
    b = cf_onnx_op(x, "PadV2");
    weft_op_add_input(b, v);
    weft_op_add_input(b, p);
    weft_op_add_input(b, value_in);
  }
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_shape(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  weft_op_builder_t *b = cf_onnx_op(x, "Shape");
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "out_type", WEFT_DT_INT64);
  out_t s = cf_onnx_finish(x, b, &st);
  int64_t start = cf_onnx_attr_int(node, "start", 0), end = cf_onnx_attr_int(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = start < 0 ? 0 : start > rank ? rank : start;
  end = end < 0 ? 0 : end > rank ? rank : end;
  if (start != 0 || end != rank) {
    int64_t size = end > start ? end - start : 0;
    weft_op_builder_t *sl = cf_onnx_op(x, "Slice");
    weft_op_add_input(sl, s);
    weft_op_add_input(sl, cf_onnx_const_ints(x, WEFT_DT_INT64, &start, 1, false, &st));
    weft_op_add_input(sl, cf_onnx_const_ints(x, WEFT_DT_INT64, &size, 1, false, &st));
    s = cf_onnx_finish(x, sl, &st);
  }
  BIND(0, s);
  return st;
}

static weft_status_t *map_size(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "Size");
  weft_op_add_input(b, IN(0));
  weft_op_set_attr_type(b, "out_type", WEFT_DT_INT64);
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_constant(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_tensor_t *t = NULL;
  const Onnx__AttributeProto *a;
  if ((a = cf_onnx_attr(node, "value")) && a->t) {
    t = cf_onnx_tensor(a->t, &st);
  } else if ((a = cf_onnx_attr(node, "value_float"))) {
    t = weft_tensor_new_scalar_float(a->f);
  } else if ((a = cf_onnx_attr(node, "value_int"))) {
    t = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
    *(int64_t *)weft_tensor_data(t) = a->i;
  } else if ((a = cf_onnx_attr(node, "value_floats"))) {
    int64_t n = (int64_t)a->n_floats;
    t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
    if (n) memcpy(weft_tensor_data(t), a->floats, sizeof(float) * (size_t)n);
  } else if ((a = cf_onnx_attr(node, "value_ints"))) {
    int64_t n = (int64_t)a->n_ints;
    t = weft_tensor_new(WEFT_DT_INT64, 1, &n);
    if (n) memcpy(weft_tensor_data(t), a->ints, sizeof(int64_t) * (size_t)n);
  } else {
    return cf_onnx_unsupported(x, "this kind of Constant value is not mapped");
  }
  if (st) return st;
  BIND(0, cf_onnx_const_tensor(x, t, &st));
  g_hash_table_insert(x->values, g_strdup(node->output[0]), t);
  return st;
}

static weft_status_t *map_constant_of_shape(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  int64_t *shape = NULL;
  int n = 0;
  if (!cf_onnx_in_ints(x, node, 0, &shape, &n, &st)) return st;
  const Onnx__AttributeProto *a = cf_onnx_attr(node, "value");
  weft_tensor_t *value = NULL;
  if (a && a->t) {
    value = cf_onnx_tensor(a->t, &st);
    if (st) {
      g_free(shape);
      return st;
    }
    /* The value is a one-element tensor; Fill wants a scalar. */
    weft_tensor_t *s = weft_tensor_new_from_data(weft_tensor_dtype(value), 0, NULL,
                                                 weft_tensor_data(value),
                                                 weft_dtype_size(weft_tensor_dtype(value)), &st);
    weft_tensor_unref(value);
    value = s;
  } else {
    value = weft_tensor_new_scalar_float(0.0f);
  }
  out_t dims = cf_onnx_const_ints(x, WEFT_DT_INT64, shape, n, false, &st);
  out_t v = cf_onnx_const_tensor(x, value, &st);
  weft_tensor_unref(value);
  g_free(shape);
  BIND(0, cf_onnx_binary(x, "Fill", dims, v, &st));
  return st;
}

static weft_status_t *map_range(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "Range");
  weft_op_add_input(b, IN(0));
  weft_op_add_input(b, IN(1));
  weft_op_add_input(b, IN(2));
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_split(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!norm_axes(x, &axis, 1, rank, &st)) return st;
  int n_out = (int)node->n_output;
  int64_t *sizes = NULL;
  int n = 0;
  if (cf_onnx_has_in(node, 1)) {
    if (!cf_onnx_in_ints(x, node, 1, &sizes, &n, &st)) return st;
  } else if (cf_onnx_attr(node, "split")) {
    size_t na = 0;
    const int64_t *a = cf_onnx_attr_ints(node, "split", &na);
    sizes = g_memdup2(a, 8 * (na + 1));
    n = (int)na;
  } else {
    /* Equal parts; with num_outputs the last one may be smaller. */
    int64_t parts = cf_onnx_attr_int(node, "num_outputs", n_out);
    int64_t each = (dims[axis] + parts - 1) / parts;
    sizes = g_new0(int64_t, parts);
    for (int64_t i = 0; i < parts; i++) {
      int64_t left = dims[axis] - i * each;
      sizes[i] = left < each ? (left > 0 ? left : 0) : each;
    }
    n = (int)parts;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "SplitV");
  weft_op_add_input(b, v);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, sizes, n, false, &st));
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT32, &axis, 1, true, &st));
  weft_op_set_attr_int(b, "num_split", n);
  g_free(sizes);
  weft_node_t *sn = NULL;
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  st = weft_op_finish(b, &sn);
  for (int k = 0; !st && k < n_out && k < n; k++) BIND(k, weft_out(sn, k));
  return st;
}

static weft_status_t *map_cumsum(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "Cumsum");
  weft_op_add_input(b, IN(0));
  weft_op_add_input(b, IN(1));
  weft_op_set_attr_bool(b, "exclusive", cf_onnx_attr_int(node, "exclusive", 0) != 0);
  weft_op_set_attr_bool(b, "reverse", cf_onnx_attr_int(node, "reverse", 0) != 0);
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_onehot(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  double depth;
  if (!cf_onnx_in_scalar(x, node, 1, &depth, &st)) return st;
  const weft_tensor_t *vals = cf_onnx_value(x, node->input[2], &st);
  if (!vals) return st;
  out_t idx = cf_onnx_cast(x, IN(0), WEFT_DT_INT64, &st);
  /* Negative indices count from depth. */
  out_t neg = cf_onnx_binary(x, "Less", idx, scalar_like(x, idx, 0, &st), &st);
  out_t wrapped = cf_onnx_binary(x, "AddV2", idx, scalar_like(x, idx, depth, &st), &st);
  weft_op_builder_t *s = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(s, NULL);
    return st;
  }
  weft_op_add_input(s, neg);
  weft_op_add_input(s, wrapped);
  weft_op_add_input(s, idx);
  idx = cf_onnx_finish(x, s, &st);
  weft_dtype_t dt = weft_tensor_dtype(vals);
  out_t off = cf_onnx_const_scalar(x, dt, weft_tensor_get_double(vals, 0), &st);
  out_t on = cf_onnx_const_scalar(x, dt, weft_tensor_get_double(vals, 1), &st);
  int64_t d = (int64_t)depth;
  weft_op_builder_t *b = cf_onnx_op(x, "OneHot");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, idx);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT32, &d, 1, true, &st));
  weft_op_add_input(b, on);
  weft_op_add_input(b, off);
  /* TensorFlow takes -1 or a non-negative axis; ONNX counts any negative one from the end. */
  int64_t idims[WEFT_MAX_RANK];
  int axis = (int)cf_onnx_attr_int(node, "axis", -1), irank = rank_of(idx, idims);
  if (axis < -1) axis += irank + 1;
  weft_op_set_attr_int(b, "axis", axis);
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Normalisation */

/* A per-channel [C] tensor reshaped to broadcast over axis 1 of a rank-r input. */
static out_t channel_param(cf_onnx_ctx_t *x, out_t p, int rank, int64_t c, weft_status_t **st) {
  int64_t d[WEFT_MAX_RANK];
  for (int i = 0; i < rank; i++) d[i] = i == 1 ? c : 1;
  return cf_onnx_reshape(x, p, d, rank, st);
}

/* axes = from, from + 1, ..., to - 1; returns how many. */
static int axes_range(int64_t *axes, int from, int to) {
  int n = 0;
  for (int d = from; d < to; d++) axes[n++] = d;
  return n;
}

/* The statistics every normalisation starts from: the mean of v over axes (kept as size-1 dims,
 * in *mean), v minus it (*diff), and the mean of the squared differences (returned). */
static out_t moments(cf_onnx_ctx_t *x, out_t v, const int64_t *axes, int na, out_t *mean,
                     out_t *diff, weft_status_t **st) {
  *mean = reduce_op(x, "Mean", v, axes, na, true, st);
  *diff = ew(x, "Sub", v, *mean, st);
  return reduce_op(x, "Mean", ew(x, "Mul", *diff, *diff, st), axes, na, true, st);
}

/* 1 / sqrt(var + eps). */
static out_t inv_std(cf_onnx_ctx_t *x, out_t var, double eps, weft_status_t **st) {
  return ew(x, "Rsqrt", add_scalar(x, var, eps, st), NONE, st);
}

/* What LayerNormalization and RMSNormalization share: statistics over the axes from `axis` to
 * the last, computed in float32 when stash_type is 1 (the default), the result cast back. */
typedef struct trailing_norm {
  out_t xv;        /* the input, cast to float32 where stash_type asks */
  weft_dtype_t dt; /* the input's dtype, for the result */
  double eps;
  int64_t axes[WEFT_MAX_RANK];
  int na;
} trailing_norm_t;

static weft_status_t *trailing_norm_setup(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, out_t v,
                                          trailing_norm_t *tn) {
  weft_status_t *st = NULL;
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", -1);
  if (!norm_axes(x, &axis, 1, rank, &st)) return st;
  tn->eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  tn->na = axes_range(tn->axes, (int)axis, rank);
  tn->dt = cf_onnx_out_dtype(v);
  tn->xv = cf_onnx_attr_int(node, "stash_type", 1) == 1 ? cf_onnx_cast(x, v, WEFT_DT_FLOAT, &st)
                                                        : v;
  return st;
}

static weft_status_t *map_batchnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  if (rank < 2) return cf_onnx_unsupported(x, "BatchNormalization of rank < 2");
  double eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  double momentum = cf_onnx_attr_float(node, "momentum", 0.9f);
  bool training = cf_onnx_attr_int(node, "training_mode", 0) != 0;
  int64_t c = dims[1];
  out_t scale = channel_param(x, IN(1), rank, c, &st), bias = channel_param(x, IN(2), rank, c, &st);
  out_t mean = channel_param(x, IN(3), rank, c, &st), var = channel_param(x, IN(4), rank, c, &st);
  int64_t axes[WEFT_MAX_RANK];
  int na = 0;
  for (int d = 0; d < rank; d++)
    if (d != 1) axes[na++] = d;
  out_t use_mean = mean, use_var = var;
  if (training) {
    out_t diff;
    use_var = moments(x, v, axes, na, &use_mean, &diff, &st);
  }
  out_t inv = inv_std(x, use_var, eps, &st);
  out_t y = ew(x, "AddV2", ew(x, "Mul", ew(x, "Sub", v, use_mean, &st),
                              ew(x, "Mul", scale, inv, &st), &st),
               bias, &st);
  BIND(0, y);
  if (training) {
    /* running = input * momentum + current * (1 - momentum), as [C]. */
    out_t rm = ew(x, "AddV2", mul_scalar(x, IN(3), momentum, &st),
                  mul_scalar(x, cf_onnx_reshape(x, use_mean, &c, 1, &st), 1 - momentum, &st), &st);
    out_t rv = ew(x, "AddV2", mul_scalar(x, IN(4), momentum, &st),
                  mul_scalar(x, cf_onnx_reshape(x, use_var, &c, 1, &st), 1 - momentum, &st), &st);
    if (HAS_OUT(1)) BIND(1, rm);
    if (HAS_OUT(2)) BIND(2, rv);
  }
  return st;
}

static weft_status_t *map_layernorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  trailing_norm_t tn;
  weft_status_t *st = trailing_norm_setup(x, node, IN(0), &tn);
  if (st) return st;
  out_t mean, diff;
  out_t var = moments(x, tn.xv, tn.axes, tn.na, &mean, &diff, &st);
  out_t inv = inv_std(x, var, tn.eps, &st);
  out_t y = cf_onnx_cast(x, ew(x, "Mul", diff, inv, &st), tn.dt, &st);
  y = ew(x, "Mul", y, IN(1), &st);
  if (cf_onnx_has_in(node, 2)) y = ew(x, "AddV2", y, IN(2), &st);
  BIND(0, y);
  if (HAS_OUT(1)) BIND(1, mean);
  if (HAS_OUT(2)) BIND(2, inv);
  return st;
}

static weft_status_t *map_instancenorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  double eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  int64_t axes[WEFT_MAX_RANK];
  int na = axes_range(axes, 2, rank);
  out_t mean, diff;
  out_t var = moments(x, v, axes, na, &mean, &diff, &st);
  out_t y = ew(x, "Mul", diff, inv_std(x, var, eps, &st), &st);
  y = ew(x, "AddV2", ew(x, "Mul", y, channel_param(x, IN(1), rank, dims[1], &st), &st),
         channel_param(x, IN(2), rank, dims[1], &st), &st);
  BIND(0, y);
  return st;
}

static weft_status_t *map_mvn(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  size_t n = 0;
  const int64_t *a = cf_onnx_attr_ints(node, "axes", &n);
  int64_t axes[WEFT_MAX_RANK] = {0, 2, 3};
  int na = a ? (int)n : 3;
  for (int i = 0; a && i < na; i++) axes[i] = a[i];
  if (!norm_axes(x, axes, na, rank, &st)) return st;
  out_t mean, diff;
  out_t var = moments(x, v, axes, na, &mean, &diff, &st);
  BIND(0, ew(x, "Div", diff, add_scalar(x, ew(x, "Sqrt", var, NONE, &st), 1e-9, &st), &st));
  return st;
}

static weft_status_t *map_lpnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", -1), p = cf_onnx_attr_int(node, "p", 2);
  if (!norm_axes(x, &axis, 1, rank, &st)) return st;
  out_t norm = p == 1 ? reduce_op(x, "Sum", ew(x, "Abs", v, NONE, &st), &axis, 1, true, &st)
                      : ew(x, "Sqrt", reduce_op(x, "Sum", ew(x, "Square", v, NONE, &st), &axis, 1,
                                                true, &st),
                           NONE, &st);
  /* A zero norm gives 0, not 0/0. */
  out_t is_zero = ew(x, "Equal", norm, scalar_like(x, v, 0, &st), &st);
  out_t safe = ew(x, "AddV2", norm, cf_onnx_cast(x, is_zero, cf_onnx_out_dtype(v), &st), &st);
  BIND(0, ew(x, "Div", v, safe, &st));
  return st;
}

static weft_status_t *map_dropout(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  double ratio = x->opset < 12 ? cf_onnx_attr_float(node, "ratio", 0.5f) : 0.5;
  bool training = false;
  if (x->opset >= 12) {
    if (cf_onnx_has_in(node, 1) && !cf_onnx_in_scalar(x, node, 1, &ratio, &st)) return st;
    double t = 0;
    if (cf_onnx_has_in(node, 2) && !cf_onnx_in_scalar(x, node, 2, &t, &st)) return st;
    training = t != 0;
  }
  /* Training with a non-zero ratio draws random masks no reference can reproduce. */
  if (training && ratio != 0)
    return cf_onnx_unsupported(x, "Dropout in training mode (random) is not mapped");
  BIND(0, cf_onnx_unary(x, "Identity", v, &st));
  if (HAS_OUT(1)) {
    int64_t dims[WEFT_MAX_RANK];
    int rank;
    if ((st = need_shape(x, v, &rank, dims))) return st;
    weft_tensor_t *t = weft_tensor_new(WEFT_DT_BOOL, rank, dims);
    memset(weft_tensor_data(t), 1, weft_tensor_nbytes(t));
    BIND(1, cf_onnx_unary(x, "Identity", cf_onnx_const_tensor(x, t, &st), &st));
    weft_tensor_unref(t);
  }
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Convolution and pooling */

typedef struct window {
  int s;                      /* spatial rank */
  int64_t in[3], k[3], stride[3], dil[3], pb[3], pe[3], ext[3], out[3];
} window_t;

/* Reads kernel_shape/strides/dilations/pads/auto_pad/ceil_mode and computes the output size,
 * the padding before and after, and the extra padding ceil mode needs at the end. */
static weft_status_t *read_window(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, const int64_t *dims,
                                  int rank, const int64_t *kernel, window_t *w) {
  memset(w, 0, sizeof *w);
  w->s = rank - 2;
  if (w->s < 1 || w->s > 3) return cf_onnx_unsupported(x, "%d-D windows are not mapped", w->s);
  size_t nk = 0, ns = 0, nd = 0, np = 0;
  const int64_t *ks = cf_onnx_attr_ints(node, "kernel_shape", &nk);
  const int64_t *st = cf_onnx_attr_ints(node, "strides", &ns);
  const int64_t *dl = cf_onnx_attr_ints(node, "dilations", &nd);
  const int64_t *pd = cf_onnx_attr_ints(node, "pads", &np);
  const char *auto_pad = cf_onnx_attr_string(node, "auto_pad", "NOTSET");
  bool ceil_mode = cf_onnx_attr_int(node, "ceil_mode", 0) != 0;
  for (int i = 0; i < w->s; i++) {
    w->in[i] = dims[2 + i];
    w->k[i] = nk == (size_t)w->s ? ks[i] : kernel ? kernel[i] : 1;
    w->stride[i] = ns == (size_t)w->s ? st[i] : 1;
    w->dil[i] = nd == (size_t)w->s ? dl[i] : 1;
    w->pb[i] = np == 2 * (size_t)w->s ? pd[i] : 0;
    w->pe[i] = np == 2 * (size_t)w->s ? pd[i + w->s] : 0;
    int64_t eff = (w->k[i] - 1) * w->dil[i] + 1;
    if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
      w->out[i] = (w->in[i] + w->stride[i] - 1) / w->stride[i];
      int64_t total = (w->out[i] - 1) * w->stride[i] + eff - w->in[i];
      if (total < 0) total = 0;
      bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
      w->pb[i] = upper ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    } else {
      if (strcmp(auto_pad, "VALID") == 0) w->pb[i] = w->pe[i] = 0;
      int64_t span = w->in[i] + w->pb[i] + w->pe[i] - eff;
      if (span < 0) return cf_onnx_unsupported(x, "the window is larger than the input");
      w->out[i] = (ceil_mode ? (span + w->stride[i] - 1) / w->stride[i] : span / w->stride[i]) + 1;
      /* A last window that would start in the end padding is dropped. */
      if (ceil_mode && (w->out[i] - 1) * w->stride[i] >= w->in[i] + w->pb[i]) w->out[i]--;
    }
    int64_t need = (w->out[i] - 1) * w->stride[i] + eff;
    int64_t have = w->in[i] + w->pb[i] + w->pe[i];
    w->ext[i] = need > have ? need - have : 0;
  }
  return NULL;
}

/* NCHW <-> NHWC for a spatial rank s (s + 2 dims). */
static void to_last_perm(int s, int64_t *perm) {
  perm[0] = 0;
  for (int i = 0; i < s; i++) perm[1 + i] = 2 + i;
  perm[s + 1] = 1;
}
static void to_first_perm(int s, int64_t *perm) {
  perm[0] = 0;
  perm[1] = s + 1;
  for (int i = 0; i < s; i++) perm[2 + i] = 1 + i;
}

static weft_status_t *map_conv(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0), wt = IN(1), bias = IN(2);
  int64_t dims[WEFT_MAX_RANK], wd[WEFT_MAX_RANK];
  int rank, wr;
  if ((st = need_shape(x, v, &rank, dims)) || (st = need_shape(x, wt, &wr, wd))) return st;
  if (rank != 4 && rank != 3) return cf_onnx_unsupported(x, "only 1-D and 2-D Conv are mapped");
  window_t w;
  if ((st = read_window(x, node, dims, rank, wd + 2, &w))) return st;
  int64_t group = cf_onnx_attr_int(node, "group", 1);
  (void)group; /* grouped filters show in the filter's depth (C / group) */
  if (rank == 3) {
    /* 1-D: a 2-D convolution over H = 1. */
    int64_t d4[4] = {dims[0], dims[1], 1, dims[2]}, w4[4] = {wd[0], wd[1], 1, wd[2]};
    v = cf_onnx_reshape(x, v, d4, 4, &st);
    wt = cf_onnx_reshape(x, wt, w4, 4, &st);
    w.in[1] = w.in[0];
    w.k[1] = w.k[0];
    w.stride[1] = w.stride[0];
    w.dil[1] = w.dil[0];
    w.pb[1] = w.pb[0];
    w.pe[1] = w.pe[0];
    w.out[1] = w.out[0];
    w.in[0] = w.k[0] = w.stride[0] = w.dil[0] = w.out[0] = 1;
    w.pb[0] = w.pe[0] = 0;
  }
  int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2}, filt[4] = {2, 3, 1, 0};
  out_t xn = cf_onnx_transpose(x, v, to_nhwc, 4, &st);
  out_t fn = cf_onnx_transpose(x, wt, filt, 4, &st);
  if (st) return st;
  weft_op_builder_t *b = cf_onnx_op(x, "Conv2D");
  weft_op_add_input(b, xn);
  weft_op_add_input(b, fn);
  int64_t strides[4] = {1, w.stride[0], w.stride[1], 1}, dil[4] = {1, w.dil[0], w.dil[1], 1};
  int64_t pads[8] = {0, 0, w.pb[0], w.pe[0], w.pb[1], w.pe[1], 0, 0};
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_int_list(b, "dilations", dil, 4);
  weft_op_set_attr_string(b, "padding", "EXPLICIT");
  weft_op_set_attr_int_list(b, "explicit_paddings", pads, 8);
  out_t y = cf_onnx_finish(x, b, &st);
  if (bias.node) y = cf_onnx_binary(x, "BiasAdd", y, bias, &st);
  y = cf_onnx_transpose(x, y, to_nchw, 4, &st);
  if (rank == 3 && !st) {
    int64_t d3[3];
    int64_t d4[4];
    rank_of(y, d4);
    d3[0] = d4[0];
    d3[1] = d4[1];
    d3[2] = d4[3];
    y = cf_onnx_reshape(x, y, d3, 3, &st);
  }
  BIND(0, y);
  return st;
}

/* Number of window taps inside the counted region for every output position (row-major over
 * the spatial output dims). include_pad counts the explicit padding but never ceil's extra. */
static double *window_counts(const window_t *w, bool include_pad, int64_t *n_out) {
  int64_t total = 1;
  for (int i = 0; i < w->s; i++) total *= w->out[i];
  double *counts = g_new0(double, total > 0 ? total : 1);
  for (int64_t o = 0; o < total; o++) {
    int64_t rem = o, pos[3] = {0};
    for (int i = w->s - 1; i >= 0; i--) {
      pos[i] = rem % w->out[i];
      rem /= w->out[i];
    }
    double c = 1;
    for (int i = 0; i < w->s; i++) {
      int64_t lo = include_pad ? -w->pb[i] : 0, hi = include_pad ? w->in[i] + w->pe[i] : w->in[i];
      int64_t n = 0;
      for (int64_t k = 0; k < w->k[i]; k++) {
        int64_t at = pos[i] * w->stride[i] + k * w->dil[i] - w->pb[i];
        n += at >= lo && at < hi;
      }
      c *= (double)n;
    }
    counts[o] = c;
  }
  *n_out = total;
  return counts;
}

/* PadV2 of an NCHW tensor over its spatial dims (before, after + ext). */
static out_t pad_spatial(cf_onnx_ctx_t *x, out_t v, const window_t *w, double value, bool nhwc,
                         weft_status_t **st) {
  int rank = w->s + 2;
  int64_t pd[2] = {rank, 2};
  weft_tensor_t *pt = weft_tensor_new(WEFT_DT_INT64, 2, pd);
  int64_t *p = weft_tensor_data(pt);
  for (int i = 0; i < w->s; i++) {
    int d = nhwc ? 1 + i : 2 + i;
    p[2 * d] = w->pb[i];
    p[2 * d + 1] = w->pe[i] + w->ext[i];
  }
  out_t pads = cf_onnx_const_tensor(x, pt, st);
  weft_tensor_unref(pt);
  out_t val = scalar_like(x, v, value, st);
  if (*st) return NONE;
  weft_op_builder_t *b = cf_onnx_op(x, "PadV2");
  weft_op_add_input(b, v);
  weft_op_add_input(b, pads);
  weft_op_add_input(b, val);
  return cf_onnx_finish(x, b, st);
}

/* General pooling from strided slices of the padded input (any spatial rank, dilations, ceil
 * mode); for max also the flat NCHW argmax indices when `indices` is wanted. */
static weft_status_t *pool_by_slices(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, out_t v,
                                     const int64_t *dims, const window_t *w, bool is_max,
                                     bool include_pad, bool column_major) {
  weft_status_t *st = NULL;
  int rank = w->s + 2;
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  double lowest = cf_dtype_is_float(dt) ? -INFINITY : cf_dtype_min(dt);
  out_t padded = pad_spatial(x, v, w, is_max ? lowest : 0, false, &st);
  bool want_idx = is_max && HAS_OUT(1);
  int64_t taps = 1;
  for (int i = 0; i < w->s; i++) taps *= w->k[i];
  if (taps > 1024) return cf_onnx_unsupported(x, "a pooling window of %" G_GINT64_FORMAT " taps",
                                              taps);
  out_t acc = NONE, idx = NONE;
  int64_t out_dims[WEFT_MAX_RANK] = {dims[0], dims[1]};
  for (int i = 0; i < w->s; i++) out_dims[2 + i] = w->out[i];
  int64_t n_out = cf_num_elements(rank, out_dims);
  for (int64_t t = 0; t < taps && !st; t++) {
    int64_t rem = t, off[3];
    for (int i = w->s - 1; i >= 0; i--) {
      off[i] = rem % w->k[i];
      rem /= w->k[i];
    }
    int64_t begin[WEFT_MAX_RANK] = {0}, end[WEFT_MAX_RANK], stride[WEFT_MAX_RANK];
    end[0] = dims[0];
    end[1] = dims[1];
    stride[0] = stride[1] = 1;
    for (int i = 0; i < w->s; i++) {
      begin[2 + i] = off[i] * w->dil[i];
      end[2 + i] = begin[2 + i] + (w->out[i] - 1) * w->stride[i] + 1;
      stride[2 + i] = w->stride[i];
    }
    weft_op_builder_t *b = cf_onnx_op(x, "StridedSlice");
    weft_op_add_input(b, padded);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, end, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, stride, rank, false, &st));
    out_t slice = cf_onnx_finish(x, b, &st);
    if (want_idx) {
      /* The flat NCHW input index each output position reads at this tap. */
      weft_tensor_t *it = weft_tensor_new(WEFT_DT_INT64, rank, out_dims);
      int64_t *iv = weft_tensor_data(it);
      for (int64_t o = 0; o < n_out; o++) {
        int64_t r2 = o, pos[WEFT_MAX_RANK] = {0};
        for (int d = rank - 1; d >= 0; d--) {
          pos[d] = r2 % out_dims[d];
          r2 /= out_dims[d];
        }
        int64_t at[3];
        for (int i = 0; i < w->s; i++) {
          at[i] = pos[2 + i] * w->stride[i] + off[i] * w->dil[i] - w->pb[i];
          if (at[i] < 0) at[i] = 0;
          if (at[i] >= dims[2 + i]) at[i] = dims[2 + i] - 1;
        }
        /* storage_order 1 numbers the spatial positions column-major (the last dim slowest). */
        int64_t flat = pos[0] * dims[1] + pos[1];
        for (int k = 0; k < w->s; k++) {
          int i = column_major ? w->s - 1 - k : k;
          flat = flat * dims[2 + i] + at[i];
        }
        iv[o] = flat;
      }
      out_t ic = cf_onnx_const_tensor(x, it, &st);
      weft_tensor_unref(it);
      if (t == 0) {
        idx = ic;
      } else {
        out_t better = ew(x, "Greater", slice, acc, &st);
        weft_op_builder_t *sb = cf_onnx_op(x, "SelectV2");
        if (st) {
          weft_op_finish(sb, NULL);
          break;
        }
        weft_op_add_input(sb, better);
        weft_op_add_input(sb, ic);
        weft_op_add_input(sb, idx);
        idx = cf_onnx_finish(x, sb, &st);
      }
    }
    acc = t == 0 ? slice : ew(x, is_max ? "Maximum" : "AddV2", acc, slice, &st);
  }
  if (st) return st;
  if (!is_max) {
    int64_t n_counts;
    double *counts = window_counts(w, include_pad, &n_counts);
    int64_t cd[WEFT_MAX_RANK] = {1, 1};
    for (int i = 0; i < w->s; i++) cd[2 + i] = w->out[i];
    cf_array_t *ca = cf_array_new(dt, rank, cd);
    memcpy(ca->v, counts, sizeof(double) * (size_t)n_counts);
    g_free(counts);
    weft_tensor_t *ct = cf_array_to_tensor(ca, NULL);
    cf_array_free(ca);
    acc = ew(x, "Div", acc, cf_onnx_const_tensor(x, ct, &st), &st);
    weft_tensor_unref(ct);
  }
  BIND(0, acc);
  if (want_idx) BIND(1, idx);
  return st;
}

static weft_status_t *map_pool(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  bool is_max = strcmp(node->op_type, "MaxPool") == 0;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  window_t w;
  if ((st = read_window(x, node, dims, rank, NULL, &w))) return st;
  bool include_pad = cf_onnx_attr_int(node, "count_include_pad", 0) != 0;
  bool dilated = false;
  for (int i = 0; i < w.s; i++) dilated |= w.dil[i] != 1;
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  const char *tf_op = is_max ? "MaxPool" : "AvgPool";
  bool kernel_ok = cf_onnx_has_kernel(x, tf_op, dt);
  bool column_major = cf_onnx_attr_int(node, "storage_order", 0) != 0;
  if (w.s == 3 || dilated || (is_max && HAS_OUT(1)) || !kernel_ok)
    return pool_by_slices(x, node, v, dims, &w, is_max, include_pad, column_major);
  /* 1-D and 2-D windows: MaxPool / AvgPool in NHWC. */
  out_t in = v;
  int s = w.s;
  if (s == 1) {
    int64_t d4[4] = {dims[0], dims[1], 1, dims[2]};
    in = cf_onnx_reshape(x, v, d4, 4, &st);
    w.in[1] = w.in[0];
    w.k[1] = w.k[0];
    w.stride[1] = w.stride[0];
    w.pb[1] = w.pb[0];
    w.pe[1] = w.pe[0];
    w.ext[1] = w.ext[0];
    w.out[1] = w.out[0];
    w.in[0] = w.k[0] = w.stride[0] = w.out[0] = 1;
    w.pb[0] = w.pe[0] = w.ext[0] = 0;
    w.s = 2;
  }
  int64_t perm_in[4], perm_out[4];
  to_last_perm(2, perm_in);
  to_first_perm(2, perm_out);
  out_t xn = cf_onnx_transpose(x, in, perm_in, 4, &st);
  bool padded = false;
  for (int i = 0; i < 2; i++) padded |= w.pb[i] || w.pe[i] || w.ext[i];
  int64_t ksize[4] = {1, w.k[0], w.k[1], 1}, strides[4] = {1, w.stride[0], w.stride[1], 1};
  out_t y;
  if (is_max) {
    weft_op_builder_t *b = cf_onnx_op(x, "MaxPool");
    weft_op_add_input(b, xn);
    weft_op_set_attr_int_list(b, "ksize", ksize, 4);
    weft_op_set_attr_int_list(b, "strides", strides, 4);
    if (padded) {
      int64_t pads[8] = {0, 0, w.pb[0], w.pe[0] + w.ext[0], w.pb[1], w.pe[1] + w.ext[1], 0, 0};
      weft_op_set_attr_string(b, "padding", "EXPLICIT");
      weft_op_set_attr_int_list(b, "explicit_paddings", pads, 8);
    } else {
      weft_op_set_attr_string(b, "padding", "VALID");
    }
    y = cf_onnx_finish(x, b, &st);
  } else {
    /* AvgPool VALID over the zero-padded input averages over whole windows; rescale by
     * taps / counted taps (the counted region excludes ceil mode's extra padding, and the
     * explicit padding unless count_include_pad). */
    out_t src = padded ? pad_spatial(x, xn, &w, 0, true, &st) : xn;
    weft_op_builder_t *b = cf_onnx_op(x, "AvgPool");
    if (st) {
      weft_op_finish(b, NULL);
      return st;
    }
    weft_op_add_input(b, src);
    weft_op_set_attr_int_list(b, "ksize", ksize, 4);
    weft_op_set_attr_int_list(b, "strides", strides, 4);
    weft_op_set_attr_string(b, "padding", "VALID");
    y = cf_onnx_finish(x, b, &st);
    if (padded) {
      int64_t n_counts;
      double *counts = window_counts(&w, include_pad, &n_counts);
      int64_t cd[4] = {1, w.out[0], w.out[1], 1};
      cf_array_t *ca = cf_array_new(dt, 4, cd);
      double taps = (double)(w.k[0] * w.k[1]);
      for (int64_t i = 0; i < n_counts; i++) ca->v[i] = taps / counts[i];
      g_free(counts);
      cf_array_round(ca);
      weft_tensor_t *ct = cf_array_to_tensor(ca, NULL);
      cf_array_free(ca);
      y = ew(x, "Mul", y, cf_onnx_const_tensor(x, ct, &st), &st);
      weft_tensor_unref(ct);
    }
  }
  y = cf_onnx_transpose(x, y, perm_out, 4, &st);
  if (s == 1 && !st) {
    int64_t d3[3] = {dims[0], dims[1], w.out[1]};
    y = cf_onnx_reshape(x, y, d3, 3, &st);
  }
  BIND(0, y);
  return st;
}

static weft_status_t *map_global_pool(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK], axes[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int na = axes_range(axes, 2, rank);
  bool is_max = strcmp(node->op_type, "GlobalMaxPool") == 0;
  BIND(0, reduce_op(x, is_max ? "Max" : "Mean", v, axes, na, true, &st));
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * More normalisations and layout ops */

static weft_status_t *map_rmsnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  trailing_norm_t tn;
  weft_status_t *st = trailing_norm_setup(x, node, IN(0), &tn);
  if (st) return st;
  out_t ms = reduce_op(x, "Mean", ew(x, "Mul", tn.xv, tn.xv, &st), tn.axes, tn.na, true, &st);
  out_t y = ew(x, "Mul", tn.xv, inv_std(x, ms, tn.eps, &st), &st);
  y = ew(x, "Mul", cf_onnx_cast(x, y, tn.dt, &st), IN(1), &st);
  BIND(0, y);
  return st;
}

static weft_status_t *map_groupnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t groups = cf_onnx_attr_int(node, "num_groups", 1), c = dims[1];
  if (rank < 3 || groups <= 0 || c % groups != 0 || rank + 1 > WEFT_MAX_RANK)
    return cf_onnx_unsupported(x, "GroupNormalization of this shape");
  double eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  /* [N, G, C/G, spatial...]: statistics over everything but N and G. */
  int64_t gd[WEFT_MAX_RANK] = {dims[0], groups, c / groups}, axes[WEFT_MAX_RANK];
  for (int d = 2; d < rank; d++) gd[d + 1] = dims[d];
  int na = axes_range(axes, 2, rank + 1);
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  out_t g = cf_onnx_reshape(x, cf_onnx_cast(x, v, WEFT_DT_FLOAT, &st), gd, rank + 1, &st);
  out_t mean, diff;
  out_t var = moments(x, g, axes, na, &mean, &diff, &st);
  out_t y = ew(x, "Mul", diff, inv_std(x, var, eps, &st), &st);
  y = cf_onnx_cast(x, cf_onnx_reshape(x, y, dims, rank, &st), dt, &st);
  /* Opset 21 scales per channel; opset 18 per group. */
  int64_t sd[WEFT_MAX_RANK];
  out_t scale = IN(1), bias = IN(2);
  if (rank_of(scale, sd) == 1 && sd[0] == groups && groups != c) {
    int64_t rep = c / groups, gd2[2] = {groups, 1}, cd = c;
    out_t t = cf_onnx_const_ints(x, WEFT_DT_INT64, (int64_t[]){1, rep}, 2, false, &st);
    scale = cf_onnx_reshape(x, cf_onnx_binary(x, "Tile", cf_onnx_reshape(x, scale, gd2, 2, &st),
                                              t, &st), &cd, 1, &st);
    bias = cf_onnx_reshape(x, cf_onnx_binary(x, "Tile", cf_onnx_reshape(x, bias, gd2, 2, &st), t,
                                             &st), &cd, 1, &st);
  }
  y = ew(x, "AddV2", ew(x, "Mul", y, channel_param(x, scale, rank, c, &st), &st),
         channel_param(x, bias, rank, c, &st), &st);
  BIND(0, y);
  return st;
}

static weft_status_t *map_lrn(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  int64_t size = cf_onnx_attr_int(node, "size", 1);
  double alpha = cf_onnx_attr_float(node, "alpha", 1e-4f), beta = cf_onnx_attr_float(node, "beta",
                                                                                     0.75f);
  double bias = cf_onnx_attr_float(node, "bias", 1.0f);
  /* Sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)]. */
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  out_t sq = ew(x, "Mul", v, v, &st);
  int64_t pd[2] = {rank, 2};
  weft_tensor_t *pt = weft_tensor_new(WEFT_DT_INT64, 2, pd);
  ((int64_t *)weft_tensor_data(pt))[2] = before;
  ((int64_t *)weft_tensor_data(pt))[3] = after;
  out_t pads = cf_onnx_const_tensor(x, pt, &st);
  weft_tensor_unref(pt);
  weft_op_builder_t *pb = cf_onnx_op(x, "PadV2");
  out_t zero = scalar_like(x, v, 0, &st);
  if (st) {
    weft_op_finish(pb, NULL);
    return st;
  }
  weft_op_add_input(pb, sq);
  weft_op_add_input(pb, pads);
  weft_op_add_input(pb, zero);
  out_t padded = cf_onnx_finish(x, pb, &st);
  out_t sum = NONE;
  for (int64_t k = 0; k < size && !st; k++) {
    int64_t begin[WEFT_MAX_RANK] = {0}, sz[WEFT_MAX_RANK];
    for (int d = 0; d < rank; d++) sz[d] = dims[d];
    begin[1] = k;
    weft_op_builder_t *b = cf_onnx_op(x, "Slice");
    weft_op_add_input(b, padded);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, sz, rank, false, &st));
    out_t sl = cf_onnx_finish(x, b, &st);
    sum = k == 0 ? sl : ew(x, "AddV2", sum, sl, &st);
  }
  out_t denom = add_scalar(x, mul_scalar(x, sum, alpha / (double)size, &st), bias, &st);
  denom = ew(x, "Pow", denom, scalar_like(x, v, beta, &st), &st);
  BIND(0, ew(x, "Div", v, denom, &st));
  return st;
}

static weft_status_t *map_trilu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  if (rank < 2) return cf_onnx_unsupported(x, "Trilu of rank < 2");
  double k = 0;
  if (cf_onnx_has_in(node, 1) && !cf_onnx_in_scalar(x, node, 1, &k, &st)) return st;
  bool upper = cf_onnx_attr_int(node, "upper", 1) != 0;
  int64_t n = dims[rank - 2], m = dims[rank - 1], md[2] = {n, m};
  weft_tensor_t *mask = weft_tensor_new(WEFT_DT_BOOL, 2, md);
  uint8_t *mv = weft_tensor_data(mask);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++)
      mv[i * m + j] = upper ? (double)(j - i) >= k : (double)(j - i) <= k;
  out_t mk = cf_onnx_const_tensor(x, mask, &st);
  weft_tensor_unref(mask);
  out_t zero = cf_onnx_unary(x, "ZerosLike", v, &st);
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, mk);
  weft_op_add_input(b, v);
  weft_op_add_input(b, zero);
  BIND(0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_eyelike(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  if (rank != 2) return cf_onnx_unsupported(x, "EyeLike of rank %d", rank);
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  if (cf_onnx_attr(node, "dtype")) dt = cf_onnx_dtype((int)cf_onnx_attr_int(node, "dtype", 1));
  if (dt == WEFT_DT_INVALID) return cf_onnx_unsupported(x, "EyeLike to an unknown dtype");
  int64_t k = cf_onnx_attr_int(node, "k", 0);
  cf_array_t *a = cf_array_new(dt, 2, dims);
  for (int64_t i = 0; i < dims[0]; i++)
    if (i + k >= 0 && i + k < dims[1]) a->v[i * dims[1] + i + k] = 1;
  weft_tensor_t *t = cf_array_to_tensor(a, NULL);
  cf_array_free(a);
  BIND(0, cf_onnx_unary(x, "Identity", cf_onnx_const_tensor(x, t, &st), &st));
  weft_tensor_unref(t);
  return st;
}

static weft_status_t *map_depth_space(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t d[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, d))) return st;
  int64_t b = cf_onnx_attr_int(node, "blocksize", 1);
  if (rank != 4 || b < 1) return cf_onnx_unsupported(x, "a block rearrangement of rank %d", rank);
  bool to_space = strcmp(node->op_type, "DepthToSpace") == 0;
  int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  out_t r;
  if (to_space) {
    bool crd = strcmp(cf_onnx_attr_string(node, "mode", "DCR"), "CRD") == 0;
    int64_t s6[6] = {n, b, b, c / (b * b), h, w}, p6[6] = {0, 3, 4, 1, 5, 2};
    int64_t s6c[6] = {n, c / (b * b), b, b, h, w}, p6c[6] = {0, 1, 4, 2, 5, 3};
    r = cf_onnx_reshape(x, v, crd ? s6c : s6, 6, &st);
    r = cf_onnx_transpose(x, r, crd ? p6c : p6, 6, &st);
    int64_t o[4] = {n, c / (b * b), h * b, w * b};
    r = cf_onnx_reshape(x, r, o, 4, &st);
  } else {
    int64_t s6[6] = {n, c, h / b, b, w / b, b}, p6[6] = {0, 3, 5, 1, 2, 4};
    r = cf_onnx_reshape(x, v, s6, 6, &st);
    r = cf_onnx_transpose(x, r, p6, 6, &st);
    int64_t o[4] = {n, c * b * b, h / b, w / b};
    r = cf_onnx_reshape(x, r, o, 4, &st);
  }
  BIND(0, r);
  return st;
}

static weft_status_t *map_gather_elements(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t data = IN(0), idx = IN(1);
  int64_t dd[WEFT_MAX_RANK], id[WEFT_MAX_RANK];
  int dr, ir;
  if ((st = need_shape(x, data, &dr, dd)) || (st = need_shape(x, idx, &ir, id))) return st;
  if (dr != ir) return cf_onnx_unsupported(x, "GatherElements with ranks %d and %d", dr, ir);
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!norm_axes(x, &axis, 1, dr, &st)) return st;
  /* out[i] = data[flat(i with its axis coordinate replaced by idx[i])]: a gather from the
   * flattened data with index idx * stride(axis) + (the other coordinates' offset). */
  int64_t strides[WEFT_MAX_RANK];
  cf_strides(dr, dd, strides);
  int64_t n = cf_num_elements(ir, id);
  weft_tensor_t *ot = weft_tensor_new(WEFT_DT_INT64, ir, id);
  int64_t *off = weft_tensor_data(ot);
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, o = 0;
    for (int d = ir - 1; d >= 0; d--) {
      int64_t coord = rem % id[d];
      rem /= id[d];
      if (d != axis) o += coord * strides[d];
    }
    off[i] = o;
  }
  out_t offsets = cf_onnx_const_tensor(x, ot, &st);
  weft_tensor_unref(ot);
  out_t i64 = cf_onnx_cast(x, idx, WEFT_DT_INT64, &st);
  out_t neg = cf_onnx_binary(x, "Less", i64, scalar_like(x, i64, 0, &st), &st);
  out_t wrapped = cf_onnx_binary(x, "AddV2", i64, scalar_like(x, i64, (double)dd[axis], &st), &st);
  weft_op_builder_t *sb = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(sb, NULL);
    return st;
  }
  weft_op_add_input(sb, neg);
  weft_op_add_input(sb, wrapped);
  weft_op_add_input(sb, i64);
  out_t fixed = cf_onnx_finish(x, sb, &st);
  out_t flat_idx = cf_onnx_binary(
      x, "AddV2", cf_onnx_binary(x, "Mul", fixed, scalar_like(x, fixed, (double)strides[axis], &st),
                                 &st),
      offsets, &st);
  int64_t all = cf_num_elements(dr, dd), zero = 0;
  out_t flat = cf_onnx_reshape(x, data, &all, 1, &st);
  weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
  if (st) {
    weft_op_finish(g, NULL);
    return st;
  }
  weft_op_add_input(g, flat);
  weft_op_add_input(g, flat_idx);
  weft_op_add_input(g, cf_onnx_const_ints(x, WEFT_DT_INT64, &zero, 1, true, &st));
  BIND(0, cf_onnx_finish(x, g, &st));
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Losses */

/* NegativeLogLikelihoodLoss of log-probabilities [N, C, d...] and targets [N, d...]: the picked
 * entry (a one-hot over C), weighted, zero where target == ignore_index, then reduced. */
static out_t nll(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, out_t logp, out_t target,
                 out_t weight, weft_status_t **st) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = rank_of(logp, dims);
  if (rank < 2) {
    if (!*st) *st = cf_onnx_unsupported(x, "a loss over rank %d scores", rank);
    return NONE;
  }
  const char *reduction = cf_onnx_attr_string(node, "reduction", "mean");
  bool has_ignore = cf_onnx_attr(node, "ignore_index") != NULL;
  int64_t ignore = cf_onnx_attr_int(node, "ignore_index", 0);
  weft_dtype_t dt = cf_onnx_out_dtype(logp);
  out_t t64 = cf_onnx_cast(x, target, WEFT_DT_INT64, st);
  out_t keep = NONE, tsafe = t64;
  if (has_ignore) {
    keep = cf_onnx_binary(x, "NotEqual", t64, scalar_like(x, t64, (double)ignore, st), st);
    weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
    out_t zero = scalar_like(x, t64, 0, st);
    if (*st) {
      weft_op_finish(b, NULL);
      return NONE;
    }
    weft_op_add_input(b, keep);
    weft_op_add_input(b, t64);
    weft_op_add_input(b, zero);
    tsafe = cf_onnx_finish(x, b, st);
  }
  /* One-hot over the class axis (1), picked by multiplying and summing. */
  weft_op_builder_t *oh = cf_onnx_op(x, "OneHot");
  int64_t c = dims[1];
  out_t depth = cf_onnx_const_ints(x, WEFT_DT_INT32, &c, 1, true, st);
  out_t on = cf_onnx_const_scalar(x, dt, 1, st), off = cf_onnx_const_scalar(x, dt, 0, st);
  if (*st) {
    weft_op_finish(oh, NULL);
    return NONE;
  }
  weft_op_add_input(oh, tsafe);
  weft_op_add_input(oh, depth);
  weft_op_add_input(oh, on);
  weft_op_add_input(oh, off);
  weft_op_set_attr_int(oh, "axis", 1);
  out_t onehot = cf_onnx_finish(x, oh, st);
  int64_t one = 1;
  out_t picked = reduce_op(x, "Sum", ew(x, "Mul", logp, onehot, st), &one, 1, false, st);
  out_t w = NONE;
  if (weight.node) {
    weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
    int64_t zero = 0;
    out_t ax = cf_onnx_const_ints(x, WEFT_DT_INT64, &zero, 1, true, st);
    if (*st) {
      weft_op_finish(g, NULL);
      return NONE;
    }
    weft_op_add_input(g, weight);
    weft_op_add_input(g, tsafe);
    weft_op_add_input(g, ax);
    w = cf_onnx_finish(x, g, st);
  }
  if (keep.node) {
    out_t kf = cf_onnx_cast(x, keep, dt, st);
    w = w.node ? ew(x, "Mul", w, kf, st) : kf;
  }
  out_t loss = ew(x, "Neg", picked, NONE, st);
  if (w.node) loss = ew(x, "Mul", loss, w, st);
  if (*st) return NONE;
  int64_t axes[WEFT_MAX_RANK];
  int na = rank - 1;
  for (int d = 0; d < na; d++) axes[d] = d;
  if (strcmp(reduction, "none") == 0) return loss;
  out_t total = reduce_op(x, "Sum", loss, axes, na, false, st);
  if (strcmp(reduction, "sum") == 0) return total;
  out_t denom = w.node ? reduce_op(x, "Sum", w, axes, na, false, st)
                       : cf_onnx_const_scalar(x, dt, (double)(cf_num_elements(rank, dims) / c), st);
  return ew(x, "Div", total, denom, st);
}

static weft_status_t *map_nll(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  BIND(0, nll(x, node, IN(0), IN(1), IN(2), &st));
  return st;
}

static weft_status_t *map_sce(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  out_t v = IN(0);
  int64_t dims[WEFT_MAX_RANK], perm[WEFT_MAX_RANK];
  int rank;
  if ((st = need_shape(x, v, &rank, dims))) return st;
  /* log-softmax over the class axis (1): moved last for LogSoftmax, then back. */
  out_t logp;
  if (rank == 2) {
    logp = ew(x, "LogSoftmax", v, NONE, &st);
  } else {
    for (int d = 0; d < rank; d++) perm[d] = d;
    perm[1] = rank - 1;
    perm[rank - 1] = 1;
    logp = cf_onnx_transpose(x, ew(x, "LogSoftmax", cf_onnx_transpose(x, v, perm, rank, &st),
                                   NONE, &st),
                             perm, rank, &st);
  }
  BIND(0, nll(x, node, logp, IN(1), IN(2), &st));
  if (HAS_OUT(1)) BIND(1, logp);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * The table */

typedef struct mapper {
  const char *op;
  cf_onnx_map_fn fn;
} mapper_t;

static const mapper_t mappers[] = {
    {"Abs", map_unary}, {"Neg", map_unary}, {"Sqrt", map_unary}, {"Exp", map_unary},
    {"Log", map_unary}, {"Relu", map_unary}, {"Sigmoid", map_unary}, {"Tanh", map_unary},
    {"Reciprocal", map_unary}, {"Floor", map_unary}, {"Ceil", map_unary}, {"Sign", map_unary},
    {"Erf", map_unary}, {"Sin", map_unary}, {"Cos", map_unary}, {"Tan", map_unary},
    {"Asin", map_unary}, {"Acos", map_unary}, {"Atan", map_unary}, {"Sinh", map_unary},
    {"Cosh", map_unary}, {"Asinh", map_unary}, {"Acosh", map_unary}, {"Atanh", map_unary},
    {"Softsign", map_unary}, {"Softplus", map_unary}, {"Round", map_unary},
    {"IsNaN", map_unary}, {"Not", map_unary}, {"Identity", map_unary},
    {"Add", map_binary}, {"Sub", map_binary}, {"Mul", map_binary}, {"Div", map_binary},
    {"Equal", map_binary}, {"Less", map_binary}, {"Greater", map_binary},
    {"LessOrEqual", map_binary}, {"GreaterOrEqual", map_binary}, {"And", map_binary},
    {"Or", map_binary}, {"Xor", map_xor}, {"Mod", map_mod}, {"Pow", map_pow},
    {"Max", map_variadic}, {"Min", map_variadic}, {"Sum", map_variadic},
    {"Mean", map_variadic}, {"Where", map_where}, {"Clip", map_clip},
    {"LeakyRelu", map_activation}, {"Elu", map_activation}, {"Selu", map_activation},
    {"HardSigmoid", map_activation}, {"HardSwish", map_activation},
    {"ThresholdedRelu", map_activation}, {"Mish", map_activation}, {"Celu", map_activation},
    {"Gelu", map_activation}, {"Swish", map_activation}, {"Shrink", map_activation},
    {"PRelu", map_activation}, {"IsInf", map_activation},
    {"Softmax", map_softmax}, {"LogSoftmax", map_softmax}, {"Hardmax", map_softmax},
    {"MatMul", map_matmul}, {"Gemm", map_gemm},
    {"ReduceSum", map_reduce}, {"ReduceMean", map_reduce}, {"ReduceMax", map_reduce},
    {"ReduceMin", map_reduce}, {"ReduceProd", map_reduce}, {"ReduceL1", map_reduce},
    {"ReduceL2", map_reduce}, {"ReduceSumSquare", map_reduce}, {"ReduceLogSum", map_reduce},
    {"ReduceLogSumExp", map_reduce},
    {"ArgMax", map_argminmax}, {"ArgMin", map_argminmax},
    {"Transpose", map_transpose}, {"Reshape", map_reshape}, {"Flatten", map_flatten},
    {"Squeeze", map_squeeze}, {"Unsqueeze", map_unsqueeze}, {"Concat", map_concat},
    {"Cast", map_cast}, {"CastLike", map_cast}, {"Expand", map_expand},
    {"Gather", map_gather}, {"Slice", map_slice}, {"Tile", map_tile}, {"Pad", map_pad},
    {"Shape", map_shape}, {"Size", map_size}, {"Constant", map_constant},
    {"ConstantOfShape", map_constant_of_shape}, {"Range", map_range}, {"Split", map_split},
    {"CumSum", map_cumsum}, {"OneHot", map_onehot},
    {"BatchNormalization", map_batchnorm}, {"LayerNormalization", map_layernorm},
    {"InstanceNormalization", map_instancenorm},
    {"MeanVarianceNormalization", map_mvn}, {"LpNormalization", map_lpnorm},
    {"Dropout", map_dropout},
    {"Conv", map_conv}, {"MaxPool", map_pool}, {"AveragePool", map_pool},
    {"GlobalAveragePool", map_global_pool}, {"GlobalMaxPool", map_global_pool},
    {"RMSNormalization", map_rmsnorm}, {"GroupNormalization", map_groupnorm},
    {"LRN", map_lrn}, {"Trilu", map_trilu}, {"EyeLike", map_eyelike},
    {"DepthToSpace", map_depth_space}, {"SpaceToDepth", map_depth_space},
    {"GatherElements", map_gather_elements},
    {"NegativeLogLikelihoodLoss", map_nll}, {"SoftmaxCrossEntropyLoss", map_sce},
};

cf_onnx_map_fn cf_onnx_find_mapper(const char *op_type) {
  for (size_t i = 0; i < G_N_ELEMENTS(mappers); i++)
    if (strcmp(mappers[i].op, op_type) == 0) return mappers[i].fn;
  return NULL;
}
