/* onnx/map_elementwise.c: the ONNX elementwise ops (default domain) as Weft ops: the unary and
 * binary ops that have a TensorFlow op of their own (Relu -> Relu, Add -> AddV2, Not ->
 * LogicalNot), Xor, Mod, Pow with mixed dtypes, the variadic Max/Min/Sum/Mean, Where (SelectV2)
 * and Clip (Maximum/Minimum with its optional bounds). */
#include <string.h>

#include "map.h"

typedef struct name_pair {
  const char *onnx, *weft;
} name_pair_t;

static const name_pair_t unary_ops[] = {
    {"Abs", "Abs"},           {"Neg", "Neg"},           {"Sqrt", "Sqrt"},
    {"Exp", "Exp"},           {"Log", "Log"},           {"Relu", "Relu"},
    {"Sigmoid", "Sigmoid"},   {"Tanh", "Tanh"},         {"Reciprocal", "Reciprocal"},
    {"Floor", "Floor"},       {"Ceil", "Ceil"},         {"Sign", "Sign"},
    {"Erf", "Erf"},           {"Sin", "Sin"},           {"Cos", "Cos"},
    {"Tan", "Tan"},           {"Asin", "Asin"},         {"Acos", "Acos"},
    {"Atan", "Atan"},         {"Sinh", "Sinh"},         {"Cosh", "Cosh"},
    {"Asinh", "Asinh"},       {"Acosh", "Acosh"},       {"Atanh", "Atanh"},
    {"Softsign", "Softsign"}, {"Softplus", "Softplus"}, {"Round", "Round"},
    {"IsNaN", "IsNan"},       {"Not", "LogicalNot"},
};

static const name_pair_t binary_ops[] = {
    {"Add", "AddV2"},
    {"Sub", "Sub"},
    {"Mul", "Mul"},
    {"Div", "Div"},
    {"Equal", "Equal"},
    {"Less", "Less"},
    {"Greater", "Greater"},
    {"LessOrEqual", "LessEqual"},
    {"GreaterOrEqual", "GreaterEqual"},
    {"And", "LogicalAnd"},
    {"Or", "LogicalOr"},
};

static const char *lookup(const name_pair_t *t, size_t n, const char *onnx) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(t[i].onnx, onnx) == 0) return t[i].weft;
  return NULL;
}

static weft_status_t *map_unary(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *op = lookup(unary_ops, G_N_ELEMENTS(unary_ops), node->op_type);
  cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, op, cf_onnx_in(x, node, 0), CF_ONNX_NONE, &st));
  return st;
}

static weft_status_t *map_binary(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *op = lookup(binary_ops, G_N_ELEMENTS(binary_ops), node->op_type);
  cf_onnx_bind_out(x, node, 0,
                   cf_onnx_ew(x, op, cf_onnx_in(x, node, 0), cf_onnx_in(x, node, 1), &st));
  return st;
}

static weft_status_t *map_xor(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  cf_onnx_bind_out(x, node, 0,
                   cf_onnx_ew(x, "NotEqual", cf_onnx_in(x, node, 0), cf_onnx_in(x, node, 1), &st));
  return st;
}

static weft_status_t *map_mod(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  /* fmod=1: the sign of the dividend (C fmod, TensorFlow's Mod); 0: of the divisor (FloorMod). */
  bool fmod = cf_onnx_attr_int(node, "fmod", 0) != 0;
  cf_onnx_bind_out(x, node, 0,
                   cf_onnx_ew(x, fmod ? "Mod" : "FloorMod", cf_onnx_in(x, node, 0),
                              cf_onnx_in(x, node, 1), &st));
  return st;
}

static weft_status_t *map_pow(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t a = cf_onnx_in(x, node, 0), b = cf_onnx_in(x, node, 1);
  weft_dtype_t ta = cf_onnx_out_dtype(a), tb = cf_onnx_out_dtype(b);
  if (ta == tb) {
    cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, "Pow", a, b, &st));
  } else if (cf_dtype_is_float(ta)) {
    cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, "Pow", a, cf_onnx_cast(x, b, ta, &st), &st));
  } else {
    /* An integer base with a float exponent: compute in the exponent's type, truncate back. */
    weft_output_t r = cf_onnx_ew(x, "Pow", cf_onnx_cast(x, a, tb, &st), b, &st);
    cf_onnx_bind_out(x, node, 0, cf_onnx_cast(x, r, ta, &st));
  }
  return st;
}

static weft_status_t *map_variadic(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  const char *op = strcmp(t, "Max") == 0 ? "Maximum" : strcmp(t, "Min") == 0 ? "Minimum" : "AddV2";
  weft_output_t acc = cf_onnx_in(x, node, 0);
  int n = 0;
  for (size_t i = 0; i < node->n_input; i++) {
    if (!cf_onnx_has_in(node, i)) continue;
    if (n++ == 0) {
      acc = cf_onnx_in(x, node, i);
      continue;
    }
    acc = cf_onnx_ew(x, op, acc, cf_onnx_in(x, node, i), &st);
  }
  if (n == 1) acc = cf_onnx_unary(x, "Identity", acc, &st);
  if (strcmp(t, "Mean") == 0 && n > 1)
    acc = cf_onnx_ew(x, "Div", acc, cf_onnx_scalar_like(x, acc, n, &st), &st);
  cf_onnx_bind_out(x, node, 0, acc);
  return st;
}

static weft_status_t *map_where(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  weft_output_t c = cf_onnx_in(x, node, 0), t = cf_onnx_in(x, node, 1), e = cf_onnx_in(x, node, 2);
  if (!c.node || !t.node || !e.node) {
    weft_op_finish(b, NULL);
    return cf_onnx_unsupported(x, "Where needs three inputs");
  }
  weft_op_add_input(b, c);
  weft_op_add_input(b, t);
  weft_op_add_input(b, e);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

/* numpy.clip: max first, then min, so min > max gives max everywhere. */
static weft_status_t *clip(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, weft_output_t v,
                           weft_output_t lo, weft_output_t hi, weft_status_t *st) {
  if (lo.node) v = cf_onnx_ew(x, "Maximum", v, lo, &st);
  if (hi.node) v = cf_onnx_ew(x, "Minimum", v, hi, &st);
  if (!lo.node && !hi.node) v = cf_onnx_unary(x, "Identity", v, &st);
  cf_onnx_bind_out(x, node, 0, v);
  return st;
}

/* Clip-1 and -6: the bounds are the optional attributes min and max. */
static weft_status_t *map_clip_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), lo = CF_ONNX_NONE, hi = CF_ONNX_NONE;
  const Onnx__AttributeProto *a = cf_onnx_attr(node, "min"), *b = cf_onnx_attr(node, "max");
  if (a) lo = cf_onnx_scalar_like(x, v, a->f, &st);
  if (b) hi = cf_onnx_scalar_like(x, v, b->f, &st);
  return clip(x, node, v, lo, hi, st);
}

/* Clip-11: the bounds are the optional inputs 1 and 2. */
static weft_status_t *map_clip_v11(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return clip(x, node, cf_onnx_in(x, node, 0), cf_onnx_in(x, node, 1), cf_onnx_in(x, node, 2),
              NULL);
}

const cf_onnx_row_t cf_onnx_rows_elementwise[] = {
    {"Abs", 1, map_unary},
    {"Neg", 1, map_unary},
    {"Sqrt", 1, map_unary},
    {"Exp", 1, map_unary},
    {"Log", 1, map_unary},
    {"Relu", 1, map_unary},
    {"Sigmoid", 1, map_unary},
    {"Tanh", 1, map_unary},
    {"Reciprocal", 1, map_unary},
    {"Floor", 1, map_unary},
    {"Ceil", 1, map_unary},
    {"Sign", 1, map_unary},
    {"Erf", 1, map_unary},
    {"Sin", 1, map_unary},
    {"Cos", 1, map_unary},
    {"Tan", 1, map_unary},
    {"Asin", 1, map_unary},
    {"Acos", 1, map_unary},
    {"Atan", 1, map_unary},
    {"Sinh", 1, map_unary},
    {"Cosh", 1, map_unary},
    {"Asinh", 1, map_unary},
    {"Acosh", 1, map_unary},
    {"Atanh", 1, map_unary},
    {"Softsign", 1, map_unary},
    {"Softplus", 1, map_unary},
    {"Round", 1, map_unary},
    {"IsNaN", 1, map_unary},
    {"Not", 1, map_unary},
    {"Add", 1, map_binary},
    {"Sub", 1, map_binary},
    {"Mul", 1, map_binary},
    {"Div", 1, map_binary},
    {"Equal", 1, map_binary},
    {"Less", 1, map_binary},
    {"Greater", 1, map_binary},
    {"LessOrEqual", 1, map_binary},
    {"GreaterOrEqual", 1, map_binary},
    {"And", 1, map_binary},
    {"Or", 1, map_binary},
    {"Xor", 1, map_xor},
    {"Mod", 1, map_mod},
    {"Pow", 1, map_pow},
    {"Max", 1, map_variadic},
    {"Min", 1, map_variadic},
    {"Sum", 1, map_variadic},
    {"Mean", 1, map_variadic},
    {"Where", 1, map_where},
    {"Clip", 1, map_clip_v1},
    {"Clip", 11, map_clip_v11},
    {NULL, 0, NULL},
};
