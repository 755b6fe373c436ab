/* Symbolic differentiation (TensorFlow's tf.gradients): walks back from the ys over the nodes that
 * lie between them and the xs, sums the gradients arriving at each tensor with AddN, and calls
 * each op's gradient function, which adds the gradient nodes under "gradients/<node>_grad" with
 * the ordinary graph API. The gradient functions follow TensorFlow's formulas, broadcasting
 * included (Shape + BroadcastGradientArgs + Sum + Reshape). */
#include "train_internal.h"

#include "../graph/einsum_equation.h"
#include "../plugin/plugin_internal.h"

#include <float.h>
#include <string.h>

static const weft_output_t NONE = {NULL, 0};

/* The builder state shared by the gradient functions: the first error sticks, and every helper
 * returns NONE once one happened, so gradient functions need no error checks of their own. */
typedef struct gb {
  weft_graph_t *g;
  weft_status_t *st;
} gb_t;

static bool has(weft_output_t o) { return o.node != NULL; }

static weft_dtype_t dt(weft_output_t o) { return weft__dtype_base(o.node->output_types[o.index]); }

static weft_output_t in(weft_node_t *n, int i) {
  return weft_out(n->inputs[i].src, n->inputs[i].src_index);
}

static void fail(gb_t *c, weft_status_t *st) {
  if (!c->st) c->st = st;
  else weft_status_free(st);
}

static weft_op_builder_t *start(gb_t *c, const char *op, const weft_output_t *ins, int n) {
  if (c->st) return NULL;
  for (int i = 0; i < n; i++) {
    if (!ins[i].node) {
      fail(c, weft_status_new(WEFT_INTERNAL, "gradient of %s: input %d is missing", op, i));
      return NULL;
    }
  }
  weft_op_builder_t *b = weft_op_new(c->g, op, NULL);
  for (int i = 0; i < n; i++) weft_op_add_input(b, ins[i]);
  return b;
}

static weft_output_t end(gb_t *c, weft_op_builder_t *b, int index) {
  if (!b) return NONE;
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st) {
    fail(c, st);
    return NONE;
  }
  return weft_out(node, index);
}

static weft_output_t U(gb_t *c, const char *op, weft_output_t x) {
  return end(c, start(c, op, &x, 1), 0);
}

static weft_output_t B(gb_t *c, const char *op, weft_output_t x, weft_output_t y) {
  weft_output_t ins[2] = {x, y};
  return end(c, start(c, op, ins, 2), 0);
}

static weft_output_t T3(gb_t *c, const char *op, weft_output_t x, weft_output_t y,
                        weft_output_t z) {
  weft_output_t ins[3] = {x, y, z};
  return end(c, start(c, op, ins, 3), 0);
}

static weft_output_t const_tensor(gb_t *c, weft_tensor_t *t) {
  if (c->st) {
    weft_tensor_unref(t);
    return NONE;
  }
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(c->g, "Const", t, &st);
  weft_tensor_unref(t);
  if (st) fail(c, st);
  return o;
}

static void set_element(weft_tensor_t *t, int64_t i, double v) {
  void *d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_DT_FLOAT: ((float *)d)[i] = (float)v; break;
    case WEFT_DT_DOUBLE: ((double *)d)[i] = v; break;
    case WEFT_DT_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case WEFT_DT_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case WEFT_DT_HALF: ((uint16_t *)d)[i] = weft__float_to_half((float)v); break;
    case WEFT_DT_BFLOAT16: ((uint16_t *)d)[i] = weft__float_to_bfloat16((float)v); break;
    default: break;
  }
}

static weft_output_t scalar(gb_t *c, weft_dtype_t dtype, double v) {
  weft_tensor_t *t = weft_tensor_new(dtype, 0, NULL);
  set_element(t, 0, v);
  return const_tensor(c, t);
}

static weft_output_t vec_i32(gb_t *c, const int64_t *v, int n) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 1, dims);
  for (int i = 0; i < n; i++) ((int32_t *)weft_tensor_data(t))[i] = (int32_t)v[i];
  return const_tensor(c, t);
}

static weft_output_t sum(gb_t *c, weft_output_t x, weft_output_t axes, bool keep_dims) {
  weft_output_t ins[2] = {x, axes};
  weft_op_builder_t *b = start(c, "Sum", ins, 2);
  if (b) weft_op_set_attr_bool(b, "keep_dims", keep_dims);
  return end(c, b, 0);
}

static weft_output_t cast(gb_t *c, weft_output_t x, weft_dtype_t to) {
  weft_op_builder_t *b = start(c, "Cast", &x, 1);
  if (b) weft_op_set_attr_type(b, "DstT", to);
  return end(c, b, 0);
}

static weft_output_t matmul(gb_t *c, weft_output_t a, weft_output_t b_in, bool ta, bool tb) {
  weft_output_t ins[2] = {a, b_in};
  weft_op_builder_t *b = start(c, "MatMul", ins, 2);
  if (b) {
    weft_op_set_attr_bool(b, "transpose_a", ta);
    weft_op_set_attr_bool(b, "transpose_b", tb);
  }
  return end(c, b, 0);
}

static bool attr_bool(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_BOOL && v->u.b;
}

/* Static shape of o when every dim is known; false otherwise. */
static bool static_shape(weft_output_t o, weft__shape_t *s) {
  *s = weft__node_shape(o.node, o.index);
  if (s->rank < 0) return false;
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] < 0) return false;
  return true;
}

static bool same_static_shape(weft_output_t a, weft_output_t b) {
  weft__shape_t sa, sb;
  if (!static_shape(a, &sa) || !static_shape(b, &sb) || sa.rank != sb.rank) return false;
  return sa.rank == 0 || memcmp(sa.dims, sb.dims, sizeof(int64_t) * (size_t)sa.rank) == 0;
}

/* The gradients of a broadcasting binary op's two inputs from the gradients gx, gy of the
 * broadcast result: sums over the broadcast dimensions and reshapes back (skipped when the shapes
 * are statically equal). */
static void unbroadcast(gb_t *c, weft_output_t x, weft_output_t y, weft_output_t gx,
                        weft_output_t gy, weft_output_t *dx) {
  if (same_static_shape(x, y) && (!has(gx) || same_static_shape(gx, x)) &&
      (!has(gy) || same_static_shape(gy, y))) {
    dx[0] = gx;
    dx[1] = gy;
    return;
  }
  weft_output_t sx = U(c, "Shape", x), sy = U(c, "Shape", y);
  weft_output_t ins[2] = {sx, sy};
  weft_op_builder_t *b = start(c, "BroadcastGradientArgs", ins, 2);
  weft_output_t r0 = end(c, b, 0);
  weft_output_t r1 = r0.node ? weft_out(r0.node, 1) : NONE;
  if (has(gx)) dx[0] = B(c, "Reshape", sum(c, gx, r0, false), sx);
  if (has(gy)) dx[1] = B(c, "Reshape", sum(c, gy, r1, false), sy);
}

/* ---------------------------------------------------------------------------------------------
 * Gradient functions: dy has one entry per output (NONE where no gradient arrives), dx one per
 * input, preset to NONE. */

typedef void (*grad_fn_t)(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx);

static void gr_add(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  unbroadcast(c, in(n, 0), in(n, 1), dy[0], dy[0], dx);
}

static void gr_sub(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  unbroadcast(c, in(n, 0), in(n, 1), dy[0], U(c, "Neg", dy[0]), dx);
}

static void gr_mul(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  unbroadcast(c, x, y, B(c, "Mul", dy[0], y), B(c, "Mul", x, dy[0]), dx);
}

static void gr_div(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  weft_output_t gx = B(c, "RealDiv", dy[0], y);
  weft_output_t gy =
      B(c, "Mul", dy[0], B(c, "RealDiv", B(c, "RealDiv", U(c, "Neg", x), y), y));
  unbroadcast(c, x, y, gx, gy, dx);
}

static void minmax(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx,
                   const char *cmp) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  weft_output_t mask = B(c, cmp, x, y);
  weft_output_t zeros = U(c, "ZerosLike", dy[0]);
  unbroadcast(c, x, y, T3(c, "Select", mask, dy[0], zeros), T3(c, "Select", mask, zeros, dy[0]),
              dx);
}

static void gr_maximum(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  minmax(c, n, dy, dx, "GreaterEqual");
}

static void gr_minimum(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  minmax(c, n, dy, dx, "LessEqual");
}

static void gr_sqdiff(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  weft_output_t t =
      B(c, "Mul", B(c, "Mul", scalar(c, dt(x), 2.0), dy[0]), B(c, "Sub", x, y));
  unbroadcast(c, x, y, t, U(c, "Neg", t), dx);
}

static void gr_pow(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1), z = weft_out(n, 0);
  weft_output_t gx = B(c, "Mul", B(c, "Mul", dy[0], y),
                       B(c, "Pow", x, B(c, "Sub", y, scalar(c, dt(y), 1.0))));
  /* d/dy x^y = x^y log x, taken as 0 where x <= 0 (TensorFlow does the same). */
  weft_output_t zx = U(c, "ZerosLike", x);
  weft_output_t logx = T3(c, "Select", B(c, "Greater", x, zx), U(c, "Log", x), zx);
  weft_output_t gy = B(c, "Mul", B(c, "Mul", dy[0], z), logx);
  unbroadcast(c, x, y, gx, gy, dx);
}

static void gr_neg(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)n;
  dx[0] = U(c, "Neg", dy[0]);
}

static void gr_abs(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Sign", in(n, 0)));
}

static void gr_square(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  dx[0] = B(c, "Mul", dy[0], B(c, "Mul", scalar(c, dt(x), 2.0), x));
}

static void gr_sqrt(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  dx[0] = B(c, "RealDiv", B(c, "Mul", dy[0], scalar(c, dt(y), 0.5)), y);
}

static void gr_rsqrt(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  weft_output_t y3 = B(c, "Mul", y, B(c, "Mul", y, y));
  dx[0] = B(c, "Mul", B(c, "Mul", dy[0], scalar(c, dt(y), -0.5)), y3);
}

static void gr_reciprocal(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  dx[0] = U(c, "Neg", B(c, "Mul", dy[0], B(c, "Mul", y, y)));
}

static void gr_exp(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], weft_out(n, 0));
}

static void gr_log(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "RealDiv", dy[0], in(n, 0));
}

static weft_output_t one_like(gb_t *c, weft_output_t x) { return scalar(c, dt(x), 1.0); }

static void gr_sin(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Cos", in(n, 0)));
}

static void gr_cos(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = U(c, "Neg", B(c, "Mul", dy[0], U(c, "Sin", in(n, 0))));
}

static void gr_tan(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t cx = U(c, "Cos", in(n, 0));
  dx[0] = B(c, "RealDiv", dy[0], B(c, "Mul", cx, cx));
}

static void gr_sinh(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Cosh", in(n, 0)));
}

static void gr_cosh(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Sinh", in(n, 0)));
}

static void gr_atan(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  dx[0] = B(c, "RealDiv", dy[0], B(c, "AddV2", one_like(c, x), U(c, "Square", x)));
}

static void gr_log1p(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  dx[0] = B(c, "RealDiv", dy[0], B(c, "AddV2", one_like(c, x), x));
}

static void gr_expm1(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Exp", in(n, 0)));
}

static void gr_erf(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  weft_output_t e = U(c, "Exp", U(c, "Neg", U(c, "Square", x)));
  dx[0] = B(c, "Mul", B(c, "Mul", dy[0], scalar(c, dt(x), 1.1283791670955126)), e);
}

static void gr_softplus(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Sigmoid", in(n, 0)));
}

static void gr_softsign(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  weft_output_t d = B(c, "AddV2", one_like(c, x), U(c, "Abs", x));
  dx[0] = B(c, "RealDiv", dy[0], B(c, "Mul", d, d));
}

/* Elu, Selu: their grad ops on the outputs (EluGrad: dy * (y + 1) where y < 0, else dy), as
 * TensorFlow's nn_grad.py builds them: one vectorised pass instead of five ops. */
static void gr_elu(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "EluGrad", dy[0], weft_out(n, 0));
}

static void gr_relu6(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Relu6Grad", dy[0], weft_out(n, 0));
}

static float alpha_of(weft_node_t *n) {
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, "alpha");
  return a && a->kind == WEFT_ATTR_FLOAT ? (float)a->u.f : 0.2f;
}

static weft_output_t leaky_relu_grad(gb_t *c, weft_output_t dy, weft_output_t x, float alpha) {
  weft_output_t ins[2] = {dy, x};
  weft_op_builder_t *b = start(c, "LeakyReluGrad", ins, 2);
  if (b) weft_op_set_attr_float(b, "alpha", alpha);
  return end(c, b, 0);
}

static void gr_leaky_relu(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = leaky_relu_grad(c, dy[0], in(n, 0), alpha_of(n));
}

/* The grad ops' own gradients (TensorFlow's _ReluGradGrad and siblings): linear in the incoming
 * gradient with the same mask, nothing towards the features; EluGrad and SeluGrad also depend on
 * their activations y where y < 0 (dy * (y + c) there). */
static void gr_relu_grad(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 1);
  const char *op = weft_node_op(n);
  if (strcmp(op, "LeakyReluGrad") == 0)
    dx[0] = leaky_relu_grad(c, dy[0], x, alpha_of(n));
  else
    dx[0] = B(c, op, dy[0], x);
  if (strcmp(op, "EluGrad") == 0 || strcmp(op, "SeluGrad") == 0) {
    weft_output_t zeros = U(c, "ZerosLike", x);
    dx[1] = T3(c, "Select", B(c, "Less", x, zeros), B(c, "Mul", dy[0], in(n, 0)), zeros);
  } else {
    dx[1] = U(c, "ZerosLike", x);
  }
}

static weft_output_t to_i32(gb_t *c, weft_output_t x) {
  if (c->st || !x.node) return x;
  return dt(x) == WEFT_DT_INT32 ? x : cast(c, x, WEFT_DT_INT32);
}

/* Slice: dy padded back to x's shape: before = begin, after = shape(x) - begin - shape(y). */
static void gr_slice(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = weft_out(n, 0);
  weft_output_t begin = to_i32(c, in(n, 1));
  weft_output_t after = B(c, "Sub", B(c, "Sub", U(c, "Shape", x), begin), U(c, "Shape", y));
  weft_output_t parts[2] = {begin, after};
  weft_op_builder_t *b = start(c, "Pack", parts, 0);
  if (b) {
    weft_op_add_input_list(b, parts, 2);
    weft_op_set_attr_int(b, "axis", 1);
  }
  weft_output_t paddings = end(c, b, 0);
  dx[0] = B(c, "Pad", dy[0], paddings);
}

/* Pad: the slice of dy that covers x. */
static void gr_pad(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  int64_t zero2[2] = {0, 0}, col[2] = {-1, 1}, flat = -1;
  weft_output_t pads = to_i32(c, in(n, 1));
  weft_output_t before = B(c, "Reshape", T3(c, "Slice", pads, vec_i32(c, zero2, 2),
                                           vec_i32(c, col, 2)),
                           vec_i32(c, &flat, 1));
  dx[0] = T3(c, "Slice", dy[0], before, U(c, "Shape", x));
}

/* Tile: dy viewed as [m0, d0, m1, d1, ...] summed over the multiples' axes. Needs x's static
 * shape and constant multiples. */
static void gr_tile(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  weft__shape_t sx;
  const weft_tensor_t *mult =
      weft__node_constant_output(n->inputs[1].src, n->inputs[1].src_index);
  if (!static_shape(x, &sx) || !mult || weft_tensor_num_elements(mult) != sx.rank ||
      2 * sx.rank > WEFT_MAX_RANK) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (Tile) needs a static input "
                            "shape and constant multiples", n->name));
    return;
  }
  int64_t split[WEFT_MAX_RANK], axes[WEFT_MAX_RANK];
  for (int d = 0; d < sx.rank; d++) {
    split[2 * d] = (int64_t)weft_tensor_get_double(mult, d);
    split[2 * d + 1] = sx.dims[d];
    axes[d] = 2 * d;
  }
  weft_output_t r = B(c, "Reshape", dy[0], vec_i32(c, split, 2 * sx.rank));
  dx[0] = sum(c, r, vec_i32(c, axes, sx.rank), false);
}

static void gr_relu(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "ReluGrad", dy[0], weft_out(n, 0));
}

static void gr_sigmoid(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "SigmoidGrad", weft_out(n, 0), dy[0]);
}

static void gr_tanh(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "TanhGrad", weft_out(n, 0), dy[0]);
}

static void gr_identity(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)c;
  (void)n;
  dx[0] = dy[0];
}

static void gr_addn(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)c;
  for (int i = 0; i < n->n_inputs; i++) dx[i] = dy[0];
}

static void gr_l2loss(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", in(n, 0), dy[0]);
}

static void gr_matmul(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool ta = attr_bool(n, "transpose_a"), tb = attr_bool(n, "transpose_b");
  weft_output_t a = in(n, 0), b = in(n, 1), g = dy[0];
  if (!ta && !tb) {
    dx[0] = matmul(c, g, b, false, true);
    dx[1] = matmul(c, a, g, true, false);
  } else if (!ta && tb) {
    dx[0] = matmul(c, g, b, false, false);
    dx[1] = matmul(c, g, a, true, false);
  } else if (ta && !tb) {
    dx[0] = matmul(c, b, g, false, true);
    dx[1] = matmul(c, a, g, false, false);
  } else {
    dx[0] = matmul(c, b, g, true, true);
    dx[1] = matmul(c, g, a, true, true);
  }
}

static weft_output_t bmm(gb_t *c, weft_output_t x, weft_output_t y, bool ax, bool ay) {
  weft_output_t ins[2] = {x, y};
  weft_op_builder_t *b = start(c, "BatchMatMulV2", ins, 2);
  if (b) {
    weft_op_set_attr_bool(b, "adj_x", ax);
    weft_op_set_attr_bool(b, "adj_y", ay);
  }
  return end(c, b, 0);
}

/* Sums a batched gradient over the batch dims its input was broadcast along. */
static weft_output_t unbroadcast_batch(gb_t *c, weft_output_t g, weft_output_t x,
                                       weft_output_t other) {
  if (same_static_shape(g, x)) return g;
  weft__shape_t sx = weft__node_shape(x.node, x.index), so = weft__node_shape(other.node, other.index);
  if (sx.rank < 2 || so.rank < 2) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (%s) with broadcast batch "
                            "dims needs inputs of known rank", g.node->name, g.node->op_name));
    return NONE;
  }
  int64_t zero = 0, nx = sx.rank - 2, no = so.rank - 2;
  weft_output_t shx = U(c, "Shape", x), sho = U(c, "Shape", other);
  weft_output_t bx = T3(c, "Slice", shx, vec_i32(c, &zero, 1), vec_i32(c, &nx, 1));
  weft_output_t bo = T3(c, "Slice", sho, vec_i32(c, &zero, 1), vec_i32(c, &no, 1));
  weft_output_t ins[2] = {bx, bo};
  weft_output_t r0 = end(c, start(c, "BroadcastGradientArgs", ins, 2), 0);
  return B(c, "Reshape", sum(c, g, r0, false), shx);
}

static void gr_batch_matmul(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool ax = attr_bool(n, "adj_x"), ay = attr_bool(n, "adj_y");
  weft_output_t x = in(n, 0), y = in(n, 1), g = dy[0], gx, gy;
  if (!ax && !ay) {
    gx = bmm(c, g, y, false, true);
    gy = bmm(c, x, g, true, false);
  } else if (!ax && ay) {
    gx = bmm(c, g, y, false, false);
    gy = bmm(c, g, x, true, false);
  } else if (ax && !ay) {
    gx = bmm(c, y, g, false, true);
    gy = bmm(c, x, g, false, false);
  } else {
    gx = bmm(c, y, g, true, true);
    gy = bmm(c, g, x, true, true);
  }
  dx[0] = unbroadcast_batch(c, gx, x, y);
  dx[1] = unbroadcast_batch(c, gy, y, x);
}

static void gr_bias_add(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = dy[0];
  weft_op_builder_t *b = start(c, "BiasAddGrad", dy, 1);
  const weft__attr_value_t *fmt = weft__attrs_get(n->attrs, "data_format");
  if (b && fmt && fmt->kind == WEFT_ATTR_STRING)
    weft_op_set_attr_string(b, "data_format", fmt->u.s.data);
  dx[1] = end(c, b, 0);
}

static weft_output_t last_axis_sum(gb_t *c, weft_output_t x) {
  int64_t axis = -1;
  return sum(c, x, vec_i32(c, &axis, 1), true);
}

static void gr_softmax(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  dx[0] = B(c, "Mul", B(c, "Sub", dy[0], last_axis_sum(c, B(c, "Mul", dy[0], y))), y);
}

static void gr_log_softmax(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  dx[0] = B(c, "Sub", dy[0], B(c, "Mul", last_axis_sum(c, dy[0]), U(c, "Exp", y)));
}

static weft_output_t expand_last(gb_t *c, weft_output_t x) {
  int64_t axis = -1;
  weft_output_t ax = vec_i32(c, &axis, 1);
  /* ExpandDims wants a scalar axis; reshape the vector constant's one element away. */
  return B(c, "ExpandDims", x, B(c, "Reshape", ax, vec_i32(c, NULL, 0)));
}

/* Only the loss output's gradient is propagated (the backprop output is itself a gradient). */
static void gr_softmax_xent(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0])) return;
  weft_output_t d = expand_last(c, dy[0]);
  dx[0] = B(c, "Mul", d, weft_out(n, 1));
  if (strcmp(n->op_name, "SoftmaxCrossEntropyWithLogits") == 0)
    dx[1] = B(c, "Mul", d, U(c, "Neg", U(c, "LogSoftmax", in(n, 0))));
}

/* TensorFlow's _CTCLossGrad: the op's gradient output (w.r.t. the unnormalised inputs) scaled
 * per batch entry by the loss's gradient; labels and lengths get none. */
static void gr_ctc_loss(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0])) return;
  dx[0] = B(c, "Mul", expand_last(c, dy[0]), weft_out(n, 1));
}

/* kept_shape computed at run time, for an input of unknown rank (a placeholder fed scalars or
 * vectors alike) or axes computed in the graph (reduce_sum(x) of such an input reduces over
 * Range(Rank(x))), as TensorFlow's reduced_shape: reduced[d] = (d is one of the axes mod rank),
 * kept = shape * (1 - reduced) + reduced. */
static weft_output_t kept_shape_dynamic(gb_t *c, weft_node_t *n) {
  weft_output_t x = in(n, 0);
  weft_output_t rank = U(c, "Rank", x);
  weft_output_t axes = B(c, "FloorMod", B(c, "AddV2", cast(c, in(n, 1), WEFT_DT_INT32), rank),
                         rank);
  int64_t zero = 0, one = 1, col[2] = {-1, 1}, row[2] = {1, -1};
  weft_output_t dims = T3(c, "Range", B(c, "Reshape", vec_i32(c, &zero, 1), vec_i32(c, NULL, 0)),
                          rank, B(c, "Reshape", vec_i32(c, &one, 1), vec_i32(c, NULL, 0)));
  weft_output_t hits = B(c, "Equal", B(c, "Reshape", dims, vec_i32(c, col, 2)),
                         B(c, "Reshape", axes, vec_i32(c, row, 2)));
  weft_output_t count = sum(c, cast(c, hits, WEFT_DT_INT32), vec_i32(c, &one, 1), false);
  weft_output_t reduced = B(c, "Minimum", count, vec_i32(c, &one, 1));
  weft_output_t shape = U(c, "Shape", x);
  return B(c, "AddV2", B(c, "Sub", shape, B(c, "Mul", shape, reduced)), reduced);
}

/* The shape of a reduction's result with the reduced dims kept as 1, as an int32 vector, from
 * the input's static rank and the constant axes when both are known. */
static weft_output_t kept_shape(gb_t *c, weft_node_t *n) {
  if (c->st) return NONE;
  weft_output_t x = in(n, 0);
  weft__shape_t s = weft__node_shape(x.node, x.index);
  const weft_tensor_t *axes = weft__node_constant_output(n->inputs[1].src, n->inputs[1].src_index);
  if (s.rank < 0 || !axes) return kept_shape_dynamic(c, n);
  int64_t keep[WEFT_MAX_RANK], reduced[WEFT_MAX_RANK];
  for (int d = 0; d < s.rank; d++) keep[d] = 1, reduced[d] = 0;
  for (int64_t k = 0; k < weft_tensor_num_elements(axes); k++) {
    int64_t a = (int64_t)weft_tensor_get_double(axes, k);
    if (a < 0) a += s.rank;
    if (a < 0 || a >= s.rank) {
      fail(c, weft_status_new(WEFT_INVALID_ARGUMENT, "'%s' (%s): axis %" G_GINT64_FORMAT
                              " out of range for rank %d", n->name, n->op_name, a, s.rank));
      return NONE;
    }
    keep[a] = 0;
    reduced[a] = 1;
  }
  weft__shape_t full;
  if (static_shape(x, &full)) {
    int64_t dims[WEFT_MAX_RANK];
    for (int d = 0; d < s.rank; d++) dims[d] = keep[d] ? full.dims[d] : 1;
    return vec_i32(c, dims, s.rank);
  }
  return B(c, "AddV2", B(c, "Mul", U(c, "Shape", x), vec_i32(c, keep, s.rank)),
           vec_i32(c, reduced, s.rank));
}

static weft_output_t sum_grad(gb_t *c, weft_node_t *n, weft_output_t g) {
  weft_output_t x = in(n, 0);
  weft_output_t kept = kept_shape(c, n);
  return B(c, "BroadcastTo", B(c, "Reshape", g, kept), U(c, "Shape", x));
}

static void gr_sum(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = sum_grad(c, n, dy[0]);
}

static void gr_mean(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = weft_out(n, 0);
  weft_dtype_t t = dt(x);
  weft__shape_t sx, sy;
  weft_output_t factor;
  if (static_shape(x, &sx) && static_shape(y, &sy)) {
    int64_t nx = weft__shape_num_elements(sx.rank, sx.dims);
    int64_t ny = weft__shape_num_elements(sy.rank, sy.dims);
    factor = scalar(c, t, ny > 0 ? (double)nx / (double)ny : 1.0);
  } else {
    factor = B(c, "RealDiv", cast(c, U(c, "Size", x), t), cast(c, U(c, "Size", y), t));
  }
  dx[0] = B(c, "RealDiv", sum_grad(c, n, dy[0]), factor);
}

/* Max/Min: the gradient goes to the elements equal to the result, split evenly between ties. */
static void gr_maxmin(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = weft_out(n, 0);
  weft_output_t kept = kept_shape(c, n);
  weft_output_t ind = cast(c, B(c, "Equal", B(c, "Reshape", y, kept), x), dt(x));
  weft_output_t count = B(c, "Reshape", sum(c, ind, in(n, 1), false), kept);
  dx[0] = B(c, "Mul", B(c, "RealDiv", ind, count), B(c, "Reshape", dy[0], kept));
}

static void gr_reshape(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Reshape", dy[0], U(c, "Shape", in(n, 0)));
}

static void gr_transpose(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  const weft_tensor_t *perm =
      weft__node_constant_output(n->inputs[1].src, n->inputs[1].src_index);
  if (!perm) {
    /* A perm computed at run time (dynamic_rnn's batch/time swap): inverted there. */
    dx[0] = B(c, "Transpose", dy[0], U(c, "InvertPermutation", in(n, 1)));
    return;
  }
  int64_t k = weft_tensor_num_elements(perm);
  int64_t inv[WEFT_MAX_RANK];
  if (k > WEFT_MAX_RANK) k = WEFT_MAX_RANK;
  for (int64_t i = 0; i < k; i++) {
    int64_t p = (int64_t)weft_tensor_get_double(perm, i);
    if (p >= 0 && p < k) inv[p] = i;
  }
  dx[0] = B(c, "Transpose", dy[0], vec_i32(c, inv, (int)k));
}

/* ConcatV2: each input's gradient is its slice of dy; the offsets come from the static sizes of
 * the inputs along the (constant) axis. */
static void gr_concat(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  int n_values = n->n_inputs - 1;
  const weft_tensor_t *axis_t =
      weft__node_constant_output(n->inputs[n_values].src, n->inputs[n_values].src_index);
  weft__shape_t s0 = weft__node_shape(n, 0);
  if (!axis_t || s0.rank < 0) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED,
                            "gradient of '%s' (ConcatV2) needs a constant axis and known rank",
                            n->name));
    return;
  }
  int64_t axis = (int64_t)weft_tensor_get_double(axis_t, 0);
  if (axis < 0) axis += s0.rank;
  if (axis < 0 || axis >= s0.rank) {
    fail(c, weft_status_new(WEFT_INVALID_ARGUMENT, "'%s' (ConcatV2): axis %" G_GINT64_FORMAT
                            " out of range for rank %d", n->name, axis, s0.rank));
    return;
  }
  /* Offsets from the static sizes while they are known, then (TensorFlow's ConcatOffset) from
   * Shape(x) at run time: a TensorArray read inside a loop has no static shape. */
  int64_t offset = 0, begin[WEFT_MAX_RANK] = {0}, unit[WEFT_MAX_RANK] = {0};
  unit[axis] = 1;
  weft_output_t begin_at = NONE;
  for (int i = 0; i < n_values && !c->st; i++) {
    weft_output_t x = in(n, i);
    begin[axis] = offset;
    weft_output_t shape_x = U(c, "Shape", x);
    weft_output_t b = has(begin_at) ? begin_at : vec_i32(c, begin, s0.rank);
    dx[i] = T3(c, "Slice", dy[0], b, shape_x);
    if (i + 1 == n_values) break;
    weft__shape_t sx = weft__node_shape(x.node, x.index);
    if (!has(begin_at) && sx.rank > axis && sx.dims[axis] >= 0)
      offset += sx.dims[axis];
    else
      begin_at = B(c, "AddV2", b, B(c, "Mul", shape_x, vec_i32(c, unit, s0.rank)));
  }
}

static bool is_float(weft_dtype_t t) {
  return t == WEFT_DT_FLOAT || t == WEFT_DT_DOUBLE || t == WEFT_DT_HALF || t == WEFT_DT_BFLOAT16;
}

static void gr_cast(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_dtype_t src = dt(in(n, 0));
  if (is_float(src) && is_float(dt(weft_out(n, 0)))) dx[0] = cast(c, dy[0], src);
}

static void gr_select(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t cond = in(n, 0);
  weft_output_t zeros = U(c, "ZerosLike", dy[0]);
  dx[1] = T3(c, "Select", cond, dy[0], zeros);
  dx[2] = T3(c, "Select", cond, zeros, dy[0]);
}

/* cond (control_flow_grad.py's _SwitchGrad): the branch gradients merged; the untaken branch's
 * missing gradient is zeros of its dead Switch output, so exactly one Merge input is live. */
static void gr_switch(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0]) && !has(dy[1])) return;
  weft_output_t ins[2] = {dy[0], dy[1]};
  weft_dtype_t grad_dtype = dt(has(dy[0]) ? dy[0] : dy[1]);
  for (int k = 0; k < 2 && !c->st; k++)
    if (!has(ins[k])) {
      weft_status_t *st = weft__grad_zeros_like(c->g, weft_out(n, k), grad_dtype, &ins[k]);
      if (st) fail(c, st);
    }
  weft_op_builder_t *b = start(c, "Merge", ins, 0);
  if (b) weft_op_add_input_list(b, ins, 2);
  dx[0] = end(c, b, 0);
}

/* _MergeGrad: the gradient switched on the forward predicate, each input getting its branch. */
static void gr_merge(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0])) return;
  weft_node_t *sw = NULL;
  weft_output_t sw_pred = NONE;
  for (int k = 0; k < n->n_inputs && !c->st; k++) {
    weft_output_t pred;
    int branch;
    weft_status_t *st = weft__cf_cond_branch(n, k, &pred, &branch);
    if (st) {
      fail(c, st);
      return;
    }
    if (!sw || pred.node != sw_pred.node || pred.index != sw_pred.index) {
      sw = B(c, "Switch", dy[0], pred).node;
      sw_pred = pred;
    }
    if (sw) dx[k] = weft_out(sw, branch);
  }
}

/* TensorArrays (tensor_array_grad.py): the gradient of an array is its gradient array
 * (TensorArrayGradV3, one per forward array and source, its writes adding up), the flow
 * tensors ordering the accesses: a read's gradient is a write, a write's a read, a gather's a
 * scatter, a scatter's a gather, a concat's a split and a split's a concat. */
static weft_node_t *ta_grad_array(gb_t *c, weft_node_t *n, weft_output_t flow) {
  weft_output_t ins[2] = {in(n, 0), flow};
  weft_op_builder_t *b = start(c, "TensorArrayGradV3", ins, 2);
  if (b) weft_op_set_attr_string(b, "source", "gradients");
  return end(c, b, 0).node;
}

static weft_output_t ta_op(gb_t *c, const char *op, const weft_output_t *ins, int n,
                           weft_dtype_t dtype) {
  weft_op_builder_t *b = start(c, op, ins, n);
  if (b && dtype != WEFT_DT_INVALID) weft_op_set_attr_type(b, "dtype", dtype);
  return end(c, b, 0);
}

/* Read -> Write, Gather -> Scatter: the gradient array gets dy where the op read (flow: the
 * op's flow_in, input 2); its flow_out is the gradient of that flow_in. */
static void ta_put_grad(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx,
                        const char *op) {
  if (!has(dy[0])) return;
  weft_node_t *ga = ta_grad_array(c, n, in(n, 2));
  if (!ga) return;
  weft_output_t ins[4] = {weft_out(ga, 0), in(n, 1), dy[0], weft_out(ga, 1)};
  dx[2] = ta_op(c, op, ins, 4, WEFT_DT_INVALID);
}

/* Write -> Read, Scatter -> Gather: the value's gradient is what the gradient array holds where
 * the op wrote, once dy (the gradient of flow_out) says every write to it happened. */
static void ta_take_grad(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx,
                         const char *op) {
  if (!has(dy[0])) return;
  weft_node_t *ga = ta_grad_array(c, n, dy[0]);
  if (!ga) return;
  weft_output_t ins[3] = {weft_out(ga, 0), in(n, 1), weft_out(ga, 1)};
  dx[2] = ta_op(c, op, ins, 3, dt(in(n, 2)));
  dx[3] = dy[0];
}

static void gr_ta_read(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  ta_put_grad(c, n, dy, dx, "TensorArrayWriteV3");
}

static void gr_ta_gather(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  ta_put_grad(c, n, dy, dx, "TensorArrayScatterV3");
}

static void gr_ta_write(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  ta_take_grad(c, n, dy, dx, "TensorArrayReadV3");
}

static void gr_ta_scatter(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  ta_take_grad(c, n, dy, dx, "TensorArrayGatherV3");
}

static void gr_ta_concat(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0])) return;
  weft_node_t *ga = ta_grad_array(c, n, in(n, 1));
  if (!ga) return;
  weft_output_t ins[4] = {weft_out(ga, 0), dy[0], weft_out(n, 1), weft_out(ga, 1)};
  dx[1] = ta_op(c, "TensorArraySplitV3", ins, 4, WEFT_DT_INVALID);
}

static void gr_ta_split(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0])) return;
  weft_node_t *ga = ta_grad_array(c, n, dy[0]);
  if (!ga) return;
  weft_output_t ins[2] = {weft_out(ga, 0), weft_out(ga, 1)};
  dx[1] = ta_op(c, "TensorArrayConcatV3", ins, 2, dt(in(n, 1)));
  dx[3] = dy[0];
}

/* Split, SplitV: the outputs' gradients concatenated back along the axis (zeros for outputs
 * that got none, as TensorFlow's _SplitGrad). */
static weft_output_t concat_grads(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                  weft_output_t axis) {
  if (c->st) return NONE;
  bool any = false;
  for (int k = 0; k < n->n_outputs; k++) any = any || has(dy[k]);
  if (!any) return NONE;
  weft_output_t *parts = g_new(weft_output_t, n->n_outputs);
  for (int k = 0; k < n->n_outputs; k++)
    parts[k] = has(dy[k]) ? dy[k] : U(c, "ZerosLike", weft_out(n, k));
  weft_op_builder_t *b = c->st ? NULL : start(c, "ConcatV2", parts, 0);
  if (b) {
    weft_op_add_input_list(b, parts, n->n_outputs);
    weft_op_add_input(b, axis);
  }
  g_free(parts);
  return end(c, b, 0);
}

static void gr_split(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[1] = concat_grads(c, n, dy, in(n, 0));
}

static void gr_splitv(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = concat_grads(c, n, dy, in(n, 2));
}

static void gr_reverse(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "ReverseV2", dy[0], in(n, 1));
}

/* IdentityN (array_grad.py's _IdentityNGrad; a TF2 function's outputs go through one): each
 * output's gradient to its input. */
static void gr_identity_n(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)c;
  for (int k = 0; k < n->n_inputs && k < n->n_outputs; k++) dx[k] = dy[k];
}

/* Resource variables (resource_variable_ops.py): the gradient that reaches a handle is the dense
 * gradient of the variable's value. A read passes dy on (_ReadGrad). */
static void gr_read_variable(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)c, (void)n;
  dx[0] = dy[0];
}

/* ---------------------------------------------------------------------------------------------
 * Convolutions, pools, batch norm (TensorFlow's nn_grad.py) */

/* Copies the named attrs n has onto b: the window attrs a backprop op shares with its forward
 * op. Absent ones and empty lists keep the backprop op's defaults. */
static void pass_attrs(weft_op_builder_t *b, const weft_node_t *n, const char *const *names) {
  if (!b) return;
  for (; *names; names++) {
    const weft__attr_value_t *v = weft__attrs_get(n->attrs, *names);
    if (!v) continue;
    switch (v->kind) {
      case WEFT_ATTR_INT: weft_op_set_attr_int(b, *names, v->u.i); break;
      case WEFT_ATTR_FLOAT: weft_op_set_attr_float(b, *names, v->u.f); break;
      case WEFT_ATTR_BOOL: weft_op_set_attr_bool(b, *names, v->u.b); break;
      case WEFT_ATTR_STRING: weft_op_set_attr_string(b, *names, v->u.s.data); break;
      case WEFT_ATTR_LIST_INT:
        weft_op_set_attr_int_list(b, *names, v->u.list.i, (int)v->u.list.n);
        break;
      default: break;
    }
  }
}

static const char *const conv_attrs[] = {"strides", "padding", "explicit_paddings",
                                         "data_format", "dilations", "use_cudnn_on_gpu", NULL};
static const char *const pool_attrs[] = {"ksize", "strides", "padding", "explicit_paddings",
                                         "data_format", NULL};
static const char *const bn_attrs[] = {"epsilon", "data_format", "is_training", NULL};

static weft_output_t op3(gb_t *c, const char *op, weft_output_t a, weft_output_t b_in,
                         weft_output_t d, const weft_node_t *n, const char *const *attrs) {
  weft_output_t ins[3] = {a, b_in, d};
  weft_op_builder_t *b = start(c, op, ins, 3);
  pass_attrs(b, n, attrs);
  return end(c, b, 0);
}

static weft_output_t op2(gb_t *c, const char *op, weft_output_t a, weft_output_t b_in,
                         const weft_node_t *n, const char *const *attrs) {
  weft_output_t ins[2] = {a, b_in};
  weft_op_builder_t *b = start(c, op, ins, 2);
  pass_attrs(b, n, attrs);
  return end(c, b, 0);
}

/* Conv2D, DepthwiseConv2dNative: the two backprop ops, given the shapes of input and filter. */
static void gr_conv(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool depthwise = strcmp(n->op_name, "DepthwiseConv2dNative") == 0;
  weft_output_t x = in(n, 0), f = in(n, 1);
  dx[0] = op3(c, depthwise ? "DepthwiseConv2dNativeBackpropInput" : "Conv2DBackpropInput",
              U(c, "Shape", x), f, dy[0], n, conv_attrs);
  dx[1] = op3(c, depthwise ? "DepthwiseConv2dNativeBackpropFilter" : "Conv2DBackpropFilter", x,
              U(c, "Shape", f), dy[0], n, conv_attrs);
}

/* Conv2DBackpropInput(sizes, filter, dy), and the depthwise one: linear in filter and dy, its
 * adjoints a filter gradient and a forward convolution. */
static void gr_conv_bp_input(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool depthwise = g_str_has_prefix(n->op_name, "Depthwise");
  weft_output_t f = in(n, 1);
  dx[1] = op3(c, depthwise ? "DepthwiseConv2dNativeBackpropFilter" : "Conv2DBackpropFilter",
              dy[0], U(c, "Shape", f), in(n, 2), n, conv_attrs);
  dx[2] = op2(c, depthwise ? "DepthwiseConv2dNative" : "Conv2D", dy[0], f, n, conv_attrs);
}

/* Conv2DBackpropFilter(x, sizes, dy), and the depthwise one: linear in x and dy, their adjoints
 * an input gradient and a forward convolution of x by the filter-shaped gradient. */
static void gr_conv_bp_filter(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  bool depthwise = g_str_has_prefix(n->op_name, "Depthwise");
  weft_output_t x = in(n, 0);
  dx[0] = op3(c, depthwise ? "DepthwiseConv2dNativeBackpropInput" : "Conv2DBackpropInput",
              U(c, "Shape", x), dy[0], in(n, 2), n, conv_attrs);
  dx[2] = op2(c, depthwise ? "DepthwiseConv2dNative" : "Conv2D", x, dy[0], n, conv_attrs);
}

static void gr_max_pool(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = op3(c, "MaxPoolGrad", in(n, 0), weft_out(n, 0), dy[0], n, pool_attrs);
}

static void gr_avg_pool(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = op2(c, "AvgPoolGrad", U(c, "Shape", in(n, 0)), dy[0], n, pool_attrs);
}

/* MaxPoolV2: its window and strides are inputs (no gradient), passed on to MaxPoolGradV2. */
static void gr_max_pool_v2(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t ins[5] = {in(n, 0), weft_out(n, 0), dy[0], in(n, 1), in(n, 2)};
  weft_op_builder_t *b = start(c, "MaxPoolGradV2", ins, 5);
  pass_attrs(b, n, pool_attrs);
  dx[0] = end(c, b, 0);
}

/* MaxPoolGrad is linear in grad (its other inputs only choose where grad goes, so they get no
 * gradient, as nn_grad.py's zeros say): its adjoint MaxPoolGradGrad; and back again. */
static void gr_max_pool_grad(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool grad_grad = strcmp(n->op_name, "MaxPoolGradGrad") == 0;
  dx[2] = op3(c, grad_grad ? "MaxPoolGrad" : "MaxPoolGradGrad", in(n, 0), in(n, 1), dy[0], n,
              pool_attrs);
}

/* Conv3D: the two backprop ops, as for Conv2D. */
static void gr_conv3d(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), f = in(n, 1);
  dx[0] = op3(c, "Conv3DBackpropInputV2", U(c, "Shape", x), f, dy[0], n, conv_attrs);
  dx[1] = op3(c, "Conv3DBackpropFilterV2", x, U(c, "Shape", f), dy[0], n, conv_attrs);
}

/* Conv3DBackpropInputV2(sizes, filter, dy) and Conv3DBackpropFilterV2(x, sizes, dy): linear in
 * each of their tensor inputs, their adjoints the other backprop op and Conv3D. */
static void gr_conv3d_bp(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (strcmp(n->op_name, "Conv3DBackpropInputV2") == 0) {
    weft_output_t f = in(n, 1);
    dx[1] = op3(c, "Conv3DBackpropFilterV2", dy[0], U(c, "Shape", f), in(n, 2), n, conv_attrs);
    dx[2] = op2(c, "Conv3D", dy[0], f, n, conv_attrs);
  } else {
    weft_output_t x = in(n, 0);
    dx[0] = op3(c, "Conv3DBackpropInputV2", U(c, "Shape", x), dy[0], in(n, 2), n, conv_attrs);
    dx[2] = op2(c, "Conv3D", x, dy[0], n, conv_attrs);
  }
}

static void gr_max_pool3d(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = op3(c, "MaxPool3DGrad", in(n, 0), weft_out(n, 0), dy[0], n, pool_attrs);
}

static void gr_avg_pool3d(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = op2(c, "AvgPool3DGrad", U(c, "Shape", in(n, 0)), dy[0], n, pool_attrs);
}

static void gr_lrn(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  static const char *const lrn_attrs[] = {"depth_radius", "bias", "alpha", "beta", NULL};
  dx[0] = op3(c, "LRNGrad", dy[0], in(n, 0), weft_out(n, 0), n, lrn_attrs);
}

/* MirrorPad: MirrorPadGrad folds dy's mirrored borders back in; the paddings get none. */
static void gr_mirror_pad(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  static const char *const mode[] = {"mode", NULL};
  dx[0] = op2(c, "MirrorPadGrad", dy[0], in(n, 1), n, mode);
}

/* FusedBatchNorm*: training passes the batch statistics the forward op saved (reserve spaces);
 * inference the population mean and variance it was given. The gradients of the statistics
 * outputs are dropped, as TensorFlow drops them. */
static void gr_fused_bn(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  const weft__attr_value_t *tr = weft__attrs_get(n->attrs, "is_training");
  bool training = !tr || tr->kind != WEFT_ATTR_BOOL || tr->u.b;
  bool v3 = strcmp(n->op_name, "FusedBatchNormV3") == 0;
  const char *op = v3 ? "FusedBatchNormGradV3"
                   : strcmp(n->op_name, "FusedBatchNormV2") == 0 ? "FusedBatchNormGradV2"
                                                                : "FusedBatchNormGrad";
  weft_output_t g = has(dy[0]) ? dy[0] : U(c, "ZerosLike", weft_out(n, 0));
  weft_output_t ins[6] = {g,
                          in(n, 0),
                          in(n, 1),
                          training ? weft_out(n, 3) : in(n, 3),
                          training ? weft_out(n, 4) : in(n, 4),
                          v3 ? weft_out(n, 5) : NONE};
  weft_op_builder_t *b = start(c, op, ins, v3 ? 6 : 5);
  pass_attrs(b, n, bn_attrs);
  weft_output_t r = end(c, b, 0);
  if (!has(r)) return;
  for (int i = 0; i < 3; i++) dx[i] = weft_out(r.node, i);
}

/* ---------------------------------------------------------------------------------------------
 * Array ops (TensorFlow's array_grad.py) */

static void gr_strided_slice(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  static const char *const masks[] = {"begin_mask", "end_mask", "ellipsis_mask",
                                      "new_axis_mask", "shrink_axis_mask", NULL};
  weft_output_t x = in(n, 0);
  weft_op_builder_t *sb = start(c, "Shape", &x, 1);
  if (sb) weft_op_set_attr_type(sb, "out_type", dt(in(n, 1)));
  weft_output_t ins[5] = {end(c, sb, 0), in(n, 1), in(n, 2), in(n, 3), dy[0]};
  weft_op_builder_t *b = start(c, "StridedSliceGrad", ins, 5);
  pass_attrs(b, n, masks);
  dx[0] = end(c, b, 0);
}

static int64_t attr_int(const weft_node_t *n, const char *name, int64_t dflt) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_INT ? v->u.i : dflt;
}

static void gr_pack(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_op_builder_t *b = start(c, "Unpack", dy, 1);
  if (b) {
    weft_op_set_attr_int(b, "num", n->n_inputs);
    weft_op_set_attr_int(b, "axis", attr_int(n, "axis", 0));
  }
  weft_output_t r = end(c, b, 0);
  if (!has(r)) return;
  for (int i = 0; i < n->n_inputs; i++) dx[i] = weft_out(r.node, i);
}

/* Unpack: the outputs' gradients stacked back, zeros for the outputs none reached. */
static void gr_unpack(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t *parts = g_new(weft_output_t, n->n_outputs > 0 ? n->n_outputs : 1);
  for (int i = 0; i < n->n_outputs; i++)
    parts[i] = has(dy[i]) ? dy[i] : U(c, "ZerosLike", weft_out(n, i));
  weft_op_builder_t *b = start(c, "Pack", parts, 0);
  if (b) {
    weft_op_add_input_list(b, parts, n->n_outputs);
    weft_op_set_attr_int(b, "axis", attr_int(n, "axis", 0));
  }
  dx[0] = end(c, b, 0);
  g_free(parts);
}

/* Fill(dims, value): value's gradient is the sum of dy; dims get none. */
static void gr_fill(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)n;
  dx[1] = sum(c, dy[0], T3(c, "Range", scalar(c, WEFT_DT_INT32, 0), U(c, "Rank", dy[0]),
                           scalar(c, WEFT_DT_INT32, 1)),
              false);
}

static void gr_sign(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)dy;
  dx[0] = U(c, "ZerosLike", in(n, 0));
}

/* ---------------------------------------------------------------------------------------------
 * Math ops (TensorFlow's math_grad.py) */

/* Prod: dy times the product of the other elements of each reduced group, as exclusive
 * cumulative products from both ends (right for zeros, unlike y / x). The reduced axes are moved
 * to the front and flattened to [reduced, other], which needs the rank and the axes known when
 * the graph is built. */
static void gr_prod(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  weft__shape_t s = weft__node_shape(x.node, x.index);
  const weft_tensor_t *axes = weft__node_constant_output(n->inputs[1].src, n->inputs[1].src_index);
  if (s.rank < 0 || !axes) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (Prod) needs an input of "
                            "known rank and constant axes", n->name));
    return;
  }
  bool reduced[WEFT_MAX_RANK] = {false};
  for (int64_t k = 0; k < weft_tensor_num_elements(axes); k++) {
    int64_t a = (int64_t)weft_tensor_get_double(axes, k);
    if (a < 0) a += s.rank;
    if (a < 0 || a >= s.rank) {
      fail(c, weft_status_new(WEFT_INVALID_ARGUMENT, "'%s' (Prod): axis %" G_GINT64_FORMAT
                              " out of range for rank %d", n->name, a, s.rank));
      return;
    }
    reduced[a] = true;
  }
  int64_t perm[WEFT_MAX_RANK], inv[WEFT_MAX_RANK], red_idx[WEFT_MAX_RANK], oth_idx[WEFT_MAX_RANK];
  int nr = 0, no = 0;
  for (int d = 0; d < s.rank; d++)
    if (reduced[d]) red_idx[nr++] = d;
  for (int d = 0; d < s.rank; d++)
    if (!reduced[d]) oth_idx[no++] = d;
  for (int i = 0; i < nr; i++) perm[i] = red_idx[i];
  for (int i = 0; i < no; i++) perm[nr + i] = oth_idx[i];
  for (int i = 0; i < s.rank; i++) inv[perm[i]] = i;
  weft_output_t shape = U(c, "Shape", x);
  weft_output_t zero = scalar(c, WEFT_DT_INT32, 0);
  /* [number of reduced elements, number of the others], each a length-1 vector. */
  weft_output_t counts[2];
  const int64_t *idx[2] = {red_idx, oth_idx};
  int nidx[2] = {nr, no};
  int64_t first = 0;
  for (int k = 0; k < 2; k++) {
    weft_output_t ins[2] = {T3(c, "GatherV2", shape, vec_i32(c, idx[k], nidx[k]), zero),
                            vec_i32(c, &first, 1)};
    weft_op_builder_t *b = start(c, "Prod", ins, 2);
    if (b) weft_op_set_attr_bool(b, "keep_dims", true);
    counts[k] = end(c, b, 0);
  }
  weft_output_t permuted = B(c, "Transpose", x, vec_i32(c, perm, s.rank));
  weft_output_t pair[2] = {counts[0], counts[1]};
  weft_op_builder_t *cb = start(c, "ConcatV2", pair, 0);
  if (cb) {
    weft_op_add_input_list(cb, pair, 2);
    weft_op_add_input(cb, zero);
  }
  weft_output_t reshaped = B(c, "Reshape", permuted, end(c, cb, 0));
  weft_output_t sides[2];
  for (int k = 0; k < 2; k++) {
    weft_output_t ins[2] = {reshaped, zero};
    weft_op_builder_t *b = start(c, "Cumprod", ins, 2);
    if (b) {
      weft_op_set_attr_bool(b, "exclusive", true);
      weft_op_set_attr_bool(b, "reverse", k == 1);
    }
    sides[k] = end(c, b, 0);
  }
  weft_output_t others = B(c, "Reshape", B(c, "Mul", sides[0], sides[1]),
                           U(c, "Shape", permuted));
  dx[0] = B(c, "Mul", sum_grad(c, n, dy[0]),
            B(c, "Transpose", others, vec_i32(c, inv, s.rank)));
}

static void gr_selu(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "SeluGrad", dy[0], weft_out(n, 0));
}

/* 1 - x^2, the radicand of asin/acos and the denominator of atanh. */
static weft_output_t one_minus_sq(gb_t *c, weft_output_t x) {
  return B(c, "Sub", one_like(c, x), U(c, "Square", x));
}

static void gr_asin(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Rsqrt", one_minus_sq(c, in(n, 0))));
}

static void gr_acos(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = U(c, "Neg", B(c, "Mul", dy[0], U(c, "Rsqrt", one_minus_sq(c, in(n, 0)))));
}

static void gr_atanh(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "RealDiv", dy[0], one_minus_sq(c, in(n, 0)));
}

static void gr_asinh(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "RealDiv", dy[0], U(c, "Cosh", weft_out(n, 0)));
}

static void gr_acosh(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "RealDiv", dy[0], U(c, "Sinh", weft_out(n, 0)));
}

/* Atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2). */
static void gr_atan2(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = in(n, 0), x = in(n, 1);
  weft_output_t k = B(c, "RealDiv", dy[0], B(c, "AddV2", U(c, "Square", x), U(c, "Square", y)));
  unbroadcast(c, y, x, B(c, "Mul", x, k), U(c, "Neg", B(c, "Mul", y, k)), dx);
}

static void gr_lgamma(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Mul", dy[0], U(c, "Digamma", in(n, 0)));
}

/* psi'(x) = polygamma(1, x). */
static void gr_digamma(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  dx[0] = B(c, "Mul", dy[0], B(c, "Polygamma", one_like(c, x), x));
}

/* ---------------------------------------------------------------------------------------------
 * Special math (TensorFlow's math_grad.py): the zero-guarded ops differentiate through each
 * other, so a guarded zero stays a zero in the gradient too. */

/* 1 where x != 0, else 0, in x's dtype: the x-derivative's guard of Xlogy, Xdivy, Xlog1py. */
static weft_output_t not_zero(gb_t *c, weft_output_t x) {
  return cast(c, B(c, "NotEqual", x, U(c, "ZerosLike", x)), dt(x));
}

static void gr_xlogy(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  unbroadcast(c, x, y, B(c, "Mul", B(c, "Xlogy", not_zero(c, x), y), dy[0]),
              B(c, "Mul", B(c, "Xdivy", x, y), dy[0]), dx);
}

static void gr_xlog1py(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  weft_output_t y1 = B(c, "AddV2", y, one_like(c, y));
  unbroadcast(c, x, y, B(c, "Mul", B(c, "Xlog1py", not_zero(c, x), y), dy[0]),
              B(c, "Mul", B(c, "Xdivy", x, y1), dy[0]), dx);
}

static void gr_xdivy(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  unbroadcast(c, x, y, B(c, "Mul", B(c, "Xdivy", not_zero(c, x), y), dy[0]),
              B(c, "Mul", B(c, "Xdivy", U(c, "Neg", x), U(c, "Square", y)), dy[0]), dx);
}

static void gr_mul_no_nan(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  unbroadcast(c, x, y, B(c, "MulNoNan", dy[0], y), B(c, "MulNoNan", x, dy[0]), dx);
}

/* d erfinv(x)/dx = sqrt(pi)/2 e^(y^2), y = erfinv(x). */
static void gr_erfinv(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  dx[0] = B(c, "Mul", B(c, "Mul", dy[0], scalar(c, dt(y), 0.88622692545275801365)),
            U(c, "Exp", U(c, "Square", y)));
}

/* d ndtri(p)/dp = sqrt(2 pi) e^(y^2 / 2), y = ndtri(p). */
static void gr_ndtri(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t y = weft_out(n, 0);
  weft_output_t half_sq = B(c, "Mul", U(c, "Square", y), scalar(c, dt(y), 0.5));
  dx[0] = B(c, "Mul", B(c, "Mul", dy[0], scalar(c, dt(y), 2.50662827463100050242)),
            U(c, "Exp", half_sq));
}

/* (e^-|x| I0)' = e^-|x| I1 - sign(x) e^-|x| I0. */
static void gr_bessel_i0e(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = weft_out(n, 0);
  weft_output_t d = B(c, "Sub", U(c, "BesselI1e", x), B(c, "Mul", U(c, "Sign", x), y));
  dx[0] = B(c, "Mul", dy[0], d);
}

/* (e^-|x| I1)' = e^-|x| I0 - y (sign(x) + 1/x), whose 1/x is 0/0 at x = 0 where the limit is
 * 1/2: |x| <= eps is evaluated at eps and replaced by 1/2, as TensorFlow does. */
static void gr_bessel_i1e(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = weft_out(n, 0);
  weft_dtype_t t = dt(x);
  double eps = t == WEFT_DT_DOUBLE ? DBL_EPSILON
               : t == WEFT_DT_HALF ? 0x1p-10
               : t == WEFT_DT_BFLOAT16 ? 0x1p-7 : FLT_EPSILON;
  weft_output_t zeros = U(c, "ZerosLike", x);
  weft_output_t not_tiny = B(c, "Greater", U(c, "Abs", x), scalar(c, t, eps));
  weft_output_t safe_x = T3(c, "Select", not_tiny, x, B(c, "AddV2", zeros, scalar(c, t, eps)));
  weft_output_t d = B(c, "Sub", U(c, "BesselI0e", safe_x),
                      B(c, "Mul", y, B(c, "AddV2", U(c, "Sign", safe_x),
                                       U(c, "Reciprocal", safe_x))));
  d = T3(c, "Select", not_tiny, d, B(c, "AddV2", zeros, scalar(c, t, 0.5)));
  dx[0] = B(c, "Mul", dy[0], d);
}

/* Zeta(x, q): d/dq = -x zeta(x + 1, q); x gets none (TensorFlow differentiates q only). */
static void gr_zeta(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), q = in(n, 1);
  weft_output_t dq = B(c, "Mul", U(c, "Neg", x), B(c, "Zeta", B(c, "AddV2", x, one_like(c, x)), q));
  weft_output_t pair[2];
  unbroadcast(c, x, q, NONE, B(c, "Mul", dq, dy[0]), pair);
  dx[1] = pair[1];
}

/* Polygamma(n, x): d/dx = polygamma(n + 1, x); the order gets none. */
static void gr_polygamma(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t order = in(n, 0), x = in(n, 1);
  weft_output_t d = B(c, "Polygamma", B(c, "AddV2", order, one_like(c, order)), x);
  weft_output_t pair[2];
  unbroadcast(c, order, x, NONE, B(c, "Mul", d, dy[0]), pair);
  dx[1] = pair[1];
}

/* The reverse scan of dy e^(x - y), split by dy's sign so each part can be taken in logs:
 * exp(logcumsumexp(log(+-dy) - y, reversed) + x), the parts where dy has the other sign (or is 0)
 * standing at the dtype's lowest value, which exp turns to 0. */
static weft_output_t cle_part(gb_t *c, weft_node_t *n, weft_output_t g, weft_output_t mask) {
  weft_output_t x = in(n, 0), y = weft_out(n, 0);
  weft_dtype_t t = dt(x);
  double lowest = t == WEFT_DT_DOUBLE ? -DBL_MAX : t == WEFT_DT_HALF ? -65504.0 : -FLT_MAX;
  weft_output_t low = B(c, "AddV2", U(c, "ZerosLike", g), scalar(c, t, lowest));
  weft_output_t log_g = T3(c, "Select", mask, U(c, "Log", g), low);
  weft_output_t ins[2] = {B(c, "Sub", log_g, y), in(n, 1)};
  weft_op_builder_t *b = start(c, "CumulativeLogsumexp", ins, 2);
  if (b) {
    weft_op_set_attr_bool(b, "exclusive", attr_bool(n, "exclusive"));
    weft_op_set_attr_bool(b, "reverse", !attr_bool(n, "reverse"));
  }
  return U(c, "Exp", B(c, "AddV2", end(c, b, 0), x));
}

static void gr_cumulative_logsumexp(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                    weft_output_t *dx) {
  weft_output_t zeros = U(c, "ZerosLike", dy[0]);
  weft_output_t pos = cle_part(c, n, dy[0], B(c, "Greater", dy[0], zeros));
  weft_output_t neg = cle_part(c, n, U(c, "Neg", dy[0]), B(c, "Less", dy[0], zeros));
  dx[0] = B(c, "Sub", pos, neg);
}

/* _GatherGrad's IndexedSlices (rows dy at indices, dense shape `shape`, an int32 vector) made
 * dense: the rows summed into the leading dimension, so repeated indices add up. */
static weft_output_t gather_rows_grad(gb_t *c, weft_output_t shape, weft_output_t g,
                                      weft_output_t indices) {
  int64_t zero = 0, one = 1, minus_one = -1;
  weft_output_t rows = B(c, "Reshape", T3(c, "Slice", shape, vec_i32(c, &zero, 1),
                                          vec_i32(c, &one, 1)),
                         vec_i32(c, NULL, 0));
  weft_output_t row_shape[2] = {vec_i32(c, &minus_one, 1),
                                T3(c, "Slice", shape, vec_i32(c, &one, 1),
                                   vec_i32(c, &minus_one, 1))};
  weft_op_builder_t *b = start(c, "ConcatV2", row_shape, 0);
  if (b) {
    weft_op_add_input_list(b, row_shape, 2);
    weft_op_add_input(b, scalar(c, WEFT_DT_INT32, 0));
  }
  weft_output_t values = B(c, "Reshape", g, end(c, b, 0));
  weft_output_t flat = B(c, "Reshape", indices, vec_i32(c, &minus_one, 1));
  return T3(c, "UnsortedSegmentSum", values, flat, rows);
}

static bool batch_dims_zero(gb_t *c, weft_node_t *n) {
  const weft__attr_value_t *bd = weft__attrs_get(n->attrs, "batch_dims");
  if (bd && bd->kind == WEFT_ATTR_INT && bd->u.i != 0) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (%s): batch_dims=%"
                            G_GINT64_FORMAT " is not supported, only 0", n->name, n->op_name,
                            bd->u.i));
    return false;
  }
  return true;
}

static void gr_resource_gather(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  if (!batch_dims_zero(c, n)) return;
  dx[0] = gather_rows_grad(c, U(c, "VariableShape", in(n, 0)), dy[0], in(n, 1));
}

/* Gather, GatherV2 along axis 0 (the only axis whose gradient is an IndexedSlices in
 * TensorFlow; other axes are refused rather than computed another way). */
/* GatherNd: dy scattered into params' shape, summed where indices repeat (ScatterNd). */
static void gr_gather_nd(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t params = in(n, 0);
  weft_op_builder_t *b = start(c, "Shape", &params, 1);
  if (b) weft_op_set_attr_type(b, "out_type", weft__dtype_base(n->input_types[1]));
  dx[0] = T3(c, "ScatterNd", in(n, 1), dy[0], end(c, b, 0));
}

/* ScatterNd: each update's gradient is dy where it went (GatherNd); none for indices, shape. */
static void gr_scatter_nd(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[1] = B(c, "GatherNd", dy[0], in(n, 0));
}

static void gr_gather(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!batch_dims_zero(c, n)) return;
  if (n->n_inputs > 2) {
    const weft_tensor_t *axis =
        weft__node_constant_output(n->inputs[2].src, n->inputs[2].src_index);
    if (!axis || weft_tensor_num_elements(axis) != 1 || weft_tensor_get_double(axis, 0) != 0) {
      fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (%s): only a constant axis "
                              "0 is supported", n->name, n->op_name));
      return;
    }
  }
  dx[0] = gather_rows_grad(c, U(c, "Shape", in(n, 0)), dy[0], in(n, 1));
}

/* ---------------------------------------------------------------------------------------------
 * More math and array ops (math_grad.py, array_grad.py) */

/* g summed down to x's shape, x having been broadcast to g's shape by the forward op. */
static weft_output_t reduce_to(gb_t *c, weft_output_t g, weft_output_t x) {
  if (!has(g) || same_static_shape(g, x)) return g;
  weft_output_t sx = U(c, "Shape", x);
  weft_output_t ins[2] = {sx, U(c, "Shape", g)};
  weft_output_t r0 = end(c, start(c, "BroadcastGradientArgs", ins, 2), 0);
  return B(c, "Reshape", sum(c, g, r0, false), sx);
}

static weft_output_t concat0(gb_t *c, weft_output_t a, weft_output_t b_in) {
  weft_output_t parts[2] = {a, b_in};
  weft_op_builder_t *b = start(c, "ConcatV2", parts, 0);
  if (b) {
    weft_op_add_input_list(b, parts, 2);
    weft_op_add_input(b, scalar(c, WEFT_DT_INT32, 0));
  }
  return end(c, b, 0);
}

/* Shape(a) padded with ones to x's rank: a tensor indexed like x's leading dims reshaped so it
 * broadcasts against x. */
static weft_output_t pad_shape(gb_t *c, weft_output_t a, weft_output_t x) {
  int64_t one = 1;
  weft_output_t extra = B(c, "Reshape", B(c, "Sub", U(c, "Rank", x), U(c, "Rank", a)),
                          vec_i32(c, &one, 1));
  return concat0(c, U(c, "Shape", a), B(c, "Fill", extra, scalar(c, WEFT_DT_INT32, 1)));
}

static weft_output_t gather0(gb_t *c, weft_output_t params, weft_output_t ids) {
  return T3(c, "GatherV2", params, ids, scalar(c, WEFT_DT_INT32, 0));
}

/* SparseTensorDenseMatMul (sparse_grad.py's _SparseTensorDenseMatMulGrad): with op(A) and op(B)
 * the adjoined operands, b's gradient is op(A)^T grad (the op itself with adjoint_a flipped),
 * transposed back when adjoint_b; entry (r, c) of A meets row c of grad and row r of op(B) when
 * adjoint_a, else row r of grad and row c of op(B), so a_values' gradient is the row-wise dot
 * product of the two gathers. None for the indices and the shape. */
static void gr_sparse_dense_matmul(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                   weft_output_t *dx) {
  if (!has(dy[0])) return;
  bool adj_a = attr_bool(n, "adjoint_a"), adj_b = attr_bool(n, "adjoint_b");
  weft_output_t ind = in(n, 0), b_in = in(n, 3);
  weft_output_t ins[4] = {ind, in(n, 1), in(n, 2), dy[0]};
  weft_op_builder_t *bb = start(c, "SparseTensorDenseMatMul", ins, 4);
  if (bb) {
    weft_op_set_attr_bool(bb, "adjoint_a", !adj_a);
    weft_op_set_attr_bool(bb, "adjoint_b", false);
  }
  const int64_t swap[2] = {1, 0};
  weft_output_t b_grad = end(c, bb, 0);
  dx[3] = adj_b ? B(c, "Transpose", b_grad, vec_i32(c, swap, 2)) : b_grad;
  weft_output_t one = scalar(c, WEFT_DT_INT32, 1);
  weft_output_t rows = T3(c, "GatherV2", ind, scalar(c, WEFT_DT_INT32, 0), one);
  weft_output_t cols = T3(c, "GatherV2", ind, one, one);
  weft_output_t parts_a = gather0(c, dy[0], adj_a ? cols : rows);
  weft_output_t op_b = adj_b ? B(c, "Transpose", b_in, vec_i32(c, swap, 2)) : b_in;
  weft_output_t parts_b = gather0(c, op_b, adj_a ? rows : cols);
  const int64_t axis1 = 1;
  dx[1] = sum(c, B(c, "Mul", parts_a, parts_b), vec_i32(c, &axis1, 1), false);
}

/* SparseReorder (sparse_grad.py's _SparseReorderGrad): the values were permuted, so their
 * gradient is permuted back: the entry numbers 0..nnz-1 reordered with the same indices
 * give the permutation, its inverse gathers the gradient. */
static void gr_sparse_reorder(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  if (!has(dy[1])) return;
  weft_output_t ind = in(n, 0);
  weft_output_t nnz = gather0(c, U(c, "Shape", ind), scalar(c, WEFT_DT_INT32, 0));
  weft_output_t ins[3] = {ind, T3(c, "Range", scalar(c, WEFT_DT_INT32, 0), nnz,
                                  scalar(c, WEFT_DT_INT32, 1)), in(n, 2)};
  weft_output_t order = end(c, start(c, "SparseReorder", ins, 3), 1);
  dx[1] = gather0(c, dy[1], U(c, "InvertPermutation", order));
}

/* SparseAdd (sparse_grad.py's _SparseAddGrad): SparseAddGrad hands the sum values' gradient back
 * to the entries of a and b that made them; none for the indices, shapes and threshold. */
static void gr_sparse_add(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[1])) return;
  weft_output_t ins[4] = {dy[1], in(n, 0), in(n, 3), weft_out(n, 0)};
  weft_op_builder_t *b = start(c, "SparseAddGrad", ins, 4);
  weft_output_t a_grad = end(c, b, 0);
  dx[1] = a_grad;
  if (has(a_grad)) dx[4] = weft_out(a_grad.node, 1);
}

/* SparseSlice (sparse_grad.py's _SparseSliceGrad): SparseSliceGrad hands the sliced values'
 * gradient back to the input entries they came from; none for indices, shape, start, size. */
static void gr_sparse_slice(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[1])) return;
  weft_output_t ins[4] = {dy[1], in(n, 0), in(n, 3), weft_out(n, 0)};
  dx[1] = end(c, start(c, "SparseSliceGrad", ins, 4), 0);
}

static weft_output_t cumulative(gb_t *c, const char *op, weft_output_t x, weft_output_t axis,
                                bool exclusive, bool reverse) {
  weft_output_t ins[2] = {x, axis};
  weft_op_builder_t *b = start(c, op, ins, 2);
  if (b) {
    weft_op_set_attr_bool(b, "exclusive", exclusive);
    weft_op_set_attr_bool(b, "reverse", reverse);
  }
  return end(c, b, 0);
}

/* Cumsum: each input reaches the outputs on its far side, so dy summed the other way. */
static void gr_cumsum(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = cumulative(c, "Cumsum", dy[0], in(n, 1), attr_bool(n, "exclusive"),
                     !attr_bool(n, "reverse"));
}

/* Cumprod: d y_j / d x_i = y_j / x_i for the j it reaches (TensorFlow divides by x too, so a
 * zero input has no finite gradient here either). */
static void gr_cumprod(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t back = cumulative(c, "Cumsum", B(c, "Mul", weft_out(n, 0), dy[0]), in(n, 1),
                                  attr_bool(n, "exclusive"), !attr_bool(n, "reverse"));
  dx[0] = B(c, "RealDiv", back, in(n, 0));
}

static weft_output_t last_dim(gb_t *c, weft_output_t x) {
  int64_t one = 1;
  weft_output_t at = B(c, "Reshape", B(c, "Sub", U(c, "Rank", x), scalar(c, WEFT_DT_INT32, 1)),
                       vec_i32(c, &one, 1));
  return T3(c, "Slice", U(c, "Shape", x), at, vec_i32(c, &one, 1));
}

/* TopKV2 and TopK: the values' gradient goes back to the positions the indices name, each row's
 * indices offset by the row's start in the flattened input. */
static void gr_top_k(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  if (!has(dy[0])) return;
  weft_output_t x = in(n, 0), idx = to_i32(c, weft_out(n, 1));
  int64_t minus_one = -1, col[2] = {-1, 1};
  weft_output_t rows = B(c, "Reshape", idx, concat0(c, vec_i32(c, &minus_one, 1),
                                                    last_dim(c, idx)));
  weft_output_t size = U(c, "Size", x);
  weft_output_t starts = T3(c, "Range", scalar(c, WEFT_DT_INT32, 0), size,
                            B(c, "Reshape", last_dim(c, x), vec_i32(c, NULL, 0)));
  weft_output_t flat = B(c, "Reshape", B(c, "AddV2", rows, B(c, "Reshape", starts,
                                                             vec_i32(c, col, 2))),
                         vec_i32(c, &minus_one, 1));
  weft_output_t g = B(c, "Reshape", dy[0], vec_i32(c, &minus_one, 1));
  dx[0] = B(c, "Reshape", T3(c, "UnsortedSegmentSum", g, flat, size), U(c, "Shape", x));
}

static void gr_segment_sum(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = gather0(c, dy[0], in(n, 1));
}

static void gr_segment_mean(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t ids = in(n, 1);
  weft_output_t counts = B(c, "SegmentSum", U(c, "OnesLike", cast(c, ids, dt(dy[0]))), ids);
  weft_output_t scaled = B(c, "RealDiv", dy[0], B(c, "Reshape", counts,
                                                  pad_shape(c, counts, dy[0])));
  dx[0] = gather0(c, scaled, ids);
}

/* Segment and unsorted segment max/min: the gradient goes to the inputs equal to their
 * segment's result, split evenly between ties (TensorFlow's _SegmentMinOrMaxGrad and
 * _UnsortedSegmentMinOrMaxGrad). Unsorted ids may be negative: those inputs were dropped, so
 * they read segment 0 (any valid one) and are masked out (_GatherDropNegatives). */
static void segment_minmax(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx,
                           bool unsorted) {
  weft_output_t x = in(n, 0), ids = in(n, 1), y = weft_out(n, 0);
  weft_output_t at = ids, kept = NONE;
  if (unsorted) {
    at = B(c, "Maximum", ids, scalar(c, dt(ids), 0));
    kept = B(c, "Reshape", B(c, "GreaterEqual", ids, scalar(c, dt(ids), 0)),
             pad_shape(c, ids, x));
  }
  weft_output_t chosen = B(c, "Equal", x, gather0(c, y, at));
  if (unsorted) chosen = B(c, "LogicalAnd", chosen, kept);
  weft_output_t ones = cast(c, chosen, dt(x));
  weft_output_t count = unsorted ? T3(c, "UnsortedSegmentSum", ones, ids, in(n, 2))
                                 : B(c, "SegmentSum", ones, ids);
  weft_output_t share = gather0(c, B(c, "RealDiv", dy[0], count), at);
  dx[0] = T3(c, "Select", chosen, share, U(c, "ZerosLike", x));
}

static void gr_segment_minmax(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  segment_minmax(c, n, dy, dx, false);
}

static void gr_unsorted_segment_minmax(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                       weft_output_t *dx) {
  segment_minmax(c, n, dy, dx, true);
}

/* params gathered at max(ids, 0), zeros where an id is negative (_GatherDropNegatives). */
static weft_output_t gather_drop_negatives(gb_t *c, weft_output_t params, weft_output_t ids) {
  weft_output_t g = gather0(c, params, B(c, "Maximum", ids, scalar(c, dt(ids), 0)));
  weft_output_t kept = B(c, "Reshape", B(c, "GreaterEqual", ids, scalar(c, dt(ids), 0)),
                         pad_shape(c, ids, g));
  return T3(c, "SelectV2", kept, g, U(c, "ZerosLike", g));
}

static void gr_unsorted_segment_sum(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                    weft_output_t *dx) {
  dx[0] = gather_drop_negatives(c, dy[0], in(n, 1));
}

/* SegmentProd, UnsortedSegmentProd (_UnsortedSegmentProdGrad): y / x for the elements of a
 * segment without zeros; in one with a single zero only that element gets a gradient, the
 * product of the others; in one with more, none does. */
static void gr_segment_prod(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool unsorted = strcmp(n->op_name, "UnsortedSegmentProd") == 0;
  weft_output_t x = in(n, 0), ids = in(n, 1), y = weft_out(n, 0);
  weft_output_t is_zero = B(c, "Equal", x, U(c, "ZerosLike", x));
  weft_output_t zeros = cast(c, is_zero, dt(x));
  weft_output_t n_zeros = unsorted ? T3(c, "UnsortedSegmentSum", zeros, ids, in(n, 2))
                                   : B(c, "SegmentSum", zeros, ids);
  weft_output_t g = T3(c, "Select", B(c, "Greater", n_zeros, one_like(c, x)),
                       U(c, "ZerosLike", dy[0]), dy[0]);
  weft_output_t others = T3(c, "Select", is_zero, U(c, "OnesLike", x), x);
  weft_output_t others_prod = unsorted ? T3(c, "UnsortedSegmentProd", others, ids, in(n, 2))
                                       : B(c, "SegmentProd", others, ids);
  weft_output_t at = unsorted ? B(c, "Maximum", ids, scalar(c, dt(ids), 0)) : ids;
  weft_output_t partial = T3(c, "Select", is_zero, gather0(c, others_prod, at),
                             B(c, "RealDiv", gather0(c, y, at), x));
  weft_output_t spread = unsorted ? gather_drop_negatives(c, g, ids) : gather0(c, g, ids);
  dx[0] = B(c, "Mul", spread, partial);
}

/* DynamicStitch: each data input's gradient is dy at its indices (as TensorFlow, an element a
 * later duplicate index overwrote still gets dy there). */
static void gr_dynamic_stitch(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  int k = n->n_inputs / 2;
  for (int i = 0; i < k && !c->st; i++) dx[k + i] = gather0(c, dy[0], in(n, i));
}

/* DynamicPartition: the positions of the input's rows partitioned the same way tell where each
 * output's gradient rows go back (DynamicStitch), zeros for outputs none reached. */
static void gr_dynamic_partition(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                 weft_output_t *dx) {
  weft_output_t parts = in(n, 1);
  int p = n->n_outputs;
  weft_output_t rows = B(c, "Reshape", T3(c, "Range", scalar(c, WEFT_DT_INT32, 0),
                                          U(c, "Size", parts), scalar(c, WEFT_DT_INT32, 1)),
                         U(c, "Shape", parts));
  weft_output_t ins[2] = {rows, parts};
  weft_op_builder_t *pb = start(c, "DynamicPartition", ins, 2);
  if (pb) weft_op_set_attr_int(pb, "num_partitions", p);
  weft_output_t where = end(c, pb, 0);
  if (!has(where)) return;
  weft_output_t *idx = g_new(weft_output_t, p), *g = g_new(weft_output_t, p);
  for (int k = 0; k < p; k++) {
    idx[k] = weft_out(where.node, k);
    g[k] = has(dy[k]) ? dy[k] : U(c, "ZerosLike", weft_out(n, k));
  }
  weft_op_builder_t *sb = c->st ? NULL : start(c, "DynamicStitch", idx, 0);
  if (sb) {
    weft_op_add_input_list(sb, idx, p);
    weft_op_add_input_list(sb, g, p);
  }
  dx[0] = B(c, "Reshape", end(c, sb, 0), U(c, "Shape", in(n, 0)));
  g_free(idx);
  g_free(g);
}

static void gr_broadcast_to(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = reduce_to(c, dy[0], in(n, 0));
}

/* Roll (manip_grad.py): rolled back by the negated shifts. */
static void gr_roll(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = T3(c, "Roll", dy[0], U(c, "Neg", in(n, 1)), in(n, 2));
}

/* NthElement (_NthElementGrad): to the elements of each last-axis row equal to its result,
 * split between ties. */
static void gr_nth_element(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  weft_output_t hits = cast(c, B(c, "Equal", expand_last(c, weft_out(n, 0)), x), dt(x));
  dx[0] = B(c, "Mul", B(c, "RealDiv", hits, last_axis_sum(c, hits)), expand_last(c, dy[0]));
}

/* SelectV2 (_SelectGradV2): like Select's, each branch's share then summed over the dims it was
 * broadcast along. */
static void gr_select_v2(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t cond = in(n, 0), zero = scalar(c, dt(dy[0]), 0.0);
  dx[1] = reduce_to(c, T3(c, "SelectV2", cond, dy[0], zero), in(n, 1));
  dx[2] = reduce_to(c, T3(c, "SelectV2", cond, zero, dy[0]), in(n, 2));
}

/* ClipByValue: dy passes where x was inside the bounds, and goes to the bound that clipped it
 * elsewhere, summed over what the bound was broadcast along. */
static void gr_clip_by_value(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), lo = in(n, 1), hi = in(n, 2);
  weft_output_t below = B(c, "Less", x, lo), above = B(c, "Greater", x, hi);
  weft_output_t zeros = U(c, "ZerosLike", dy[0]);
  dx[0] = T3(c, "Select", B(c, "LogicalOr", below, above), zeros, dy[0]);
  dx[1] = reduce_to(c, T3(c, "Select", below, dy[0], zeros), lo);
  dx[2] = reduce_to(c, T3(c, "Select", above, dy[0], zeros), hi);
}

/* FloorMod: x - floor(x / y) * y, the floor's derivative taken as 0. */
static void gr_floor_mod(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  weft_output_t q = U(c, "Floor", B(c, "RealDiv", x, y));
  unbroadcast(c, x, y, dy[0], B(c, "Mul", dy[0], U(c, "Neg", q)), dx);
}

static void gr_div_no_nan(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0), y = in(n, 1);
  weft_output_t gy = B(c, "Mul", dy[0], B(c, "DivNoNan", B(c, "DivNoNan", U(c, "Neg", x), y), y));
  unbroadcast(c, x, y, B(c, "DivNoNan", dy[0], y), gy, dx);
}

static void gr_erfc(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t x = in(n, 0);
  weft_output_t e = U(c, "Exp", U(c, "Neg", U(c, "Square", x)));
  dx[0] = B(c, "Mul", B(c, "Mul", dy[0], scalar(c, dt(x), -1.1283791670955126)), e);
}

/* Betainc(a, b, x): only x's gradient, the integrand x^(a-1) (1-x)^(b-1) / B(a, b), as
 * TensorFlow (a's and b's need derivatives of the incomplete beta it has no kernel for). */
static void gr_betainc(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t a = in(n, 0), b = in(n, 1), x = in(n, 2);
  weft_output_t one = one_like(c, x);
  weft_output_t log_beta = B(c, "Sub", B(c, "AddV2", U(c, "Lgamma", a), U(c, "Lgamma", b)),
                             U(c, "Lgamma", B(c, "AddV2", a, b)));
  weft_output_t log_density =
      B(c, "AddV2", B(c, "Mul", B(c, "Sub", b, one), U(c, "Log1p", U(c, "Neg", x))),
        B(c, "Mul", B(c, "Sub", a, one), U(c, "Log", x)));
  weft_output_t density = U(c, "Exp", B(c, "Sub", log_density, log_beta));
  dx[2] = reduce_to(c, B(c, "Mul", density, dy[0]), x);
}

static void gr_matrix_band_part(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                weft_output_t *dx) {
  dx[0] = T3(c, "MatrixBandPart", dy[0], in(n, 1), in(n, 2));
}

/* The diagonal ops are each other's adjoints: a part's gradient is set into zeros (not
 * MatrixDiag, which only makes square matrices). */
static void gr_matrix_diag_part(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                weft_output_t *dx) {
  dx[0] = B(c, "MatrixSetDiag", U(c, "ZerosLike", in(n, 0)), dy[0]);
}

static void gr_matrix_diag(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)n;
  dx[0] = U(c, "MatrixDiagPart", dy[0]);
}

static void gr_matrix_set_diag(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  dx[0] = B(c, "MatrixSetDiag", dy[0], U(c, "ZerosLike", in(n, 1)));
  dx[1] = U(c, "MatrixDiagPart", dy[0]);
}

static const char *const align_attrs[] = {"align", NULL};

/* The V2 and V3 forms: the same adjoints over the diagonals k selects, with the same alignment
 * (V2's is fixed), so each maps to its counterpart of the same version. */
static const char *diag_op(const weft_node_t *n, const char *v2, const char *v3) {
  return g_str_has_suffix(n->op_name, "V2") ? v2 : v3;
}

static void gr_matrix_diag_part_k(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                  weft_output_t *dx) {
  dx[0] = op3(c, diag_op(n, "MatrixSetDiagV2", "MatrixSetDiagV3"), U(c, "ZerosLike", in(n, 0)),
              dy[0], in(n, 1), n, align_attrs);
}

static void gr_matrix_diag_k(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                             weft_output_t *dx) {
  dx[0] = op3(c, diag_op(n, "MatrixDiagPartV2", "MatrixDiagPartV3"), dy[0], in(n, 1),
              scalar(c, dt(dy[0]), 0.0), n, align_attrs);
}

static void gr_matrix_set_diag_k(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                 weft_output_t *dx) {
  dx[0] = op3(c, diag_op(n, "MatrixSetDiagV2", "MatrixSetDiagV3"), dy[0],
              U(c, "ZerosLike", in(n, 1)), in(n, 2), n, align_attrs);
  dx[1] = op3(c, diag_op(n, "MatrixDiagPartV2", "MatrixDiagPartV3"), dy[0], in(n, 2),
              scalar(c, dt(dy[0]), 0.0), n, align_attrs);
}

static void gr_diag(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)n;
  dx[0] = U(c, "DiagPart", dy[0]);
}

static void gr_diag_part(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  (void)n;
  dx[0] = U(c, "Diag", dy[0]);
}

static void gr_reverse_sequence(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                weft_output_t *dx) {
  static const char *const attrs[] = {"seq_dim", "batch_dim", NULL};
  dx[0] = op2(c, "ReverseSequence", dy[0], in(n, 1), n, attrs);
}

/* DepthToSpace and SpaceToDepth are permutations, each the other's inverse. */
static void gr_space_depth(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  static const char *const attrs[] = {"block_size", "data_format", NULL};
  weft_op_builder_t *b = start(c, strcmp(n->op_name, "DepthToSpace") == 0 ? "SpaceToDepth"
                                                                          : "DepthToSpace",
                               dy, 1);
  pass_attrs(b, n, attrs);
  dx[0] = end(c, b, 0);
}

/* SpaceToBatchND(paddings) and BatchToSpaceND(crops): likewise inverses (padding dropped). */
static void gr_space_batch(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = T3(c, strcmp(n->op_name, "SpaceToBatchND") == 0 ? "BatchToSpaceND" : "SpaceToBatchND",
             dy[0], in(n, 1), in(n, 2));
}

/* MaxPoolWithArgmax: dy to the positions argmax names (TensorFlow's MaxPoolGradWithArgmax,
 * here a segment sum over the flattened input); indices that leave out the batch are offset by
 * each image's start. */
static void gr_max_pool_argmax(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  if (!has(dy[0])) return;
  weft_output_t x = in(n, 0), at = weft_out(n, 1);
  weft_output_t shape = U(c, "Shape", x), size = U(c, "Size", x);
  int64_t zero = 0, one = 1, minus_one = -1, image[4] = {-1, 1, 1, 1};
  if (!attr_bool(n, "include_batch_in_index")) {
    weft_output_t batch = B(c, "Reshape", T3(c, "Slice", shape, vec_i32(c, &zero, 1),
                                             vec_i32(c, &one, 1)),
                            vec_i32(c, NULL, 0));
    weft_output_t per_image = B(c, "Prod", T3(c, "Slice", shape, vec_i32(c, &one, 1),
                                              vec_i32(c, &minus_one, 1)),
                                vec_i32(c, &zero, 1));
    weft_output_t starts = B(c, "Mul", T3(c, "Range", scalar(c, WEFT_DT_INT32, 0), batch,
                                          scalar(c, WEFT_DT_INT32, 1)),
                             per_image);
    at = B(c, "AddV2", at, B(c, "Reshape", cast(c, starts, dt(at)), vec_i32(c, image, 4)));
  }
  weft_output_t sums = T3(c, "UnsortedSegmentSum", B(c, "Reshape", dy[0],
                                                     vec_i32(c, &minus_one, 1)),
                          B(c, "Reshape", at, vec_i32(c, &minus_one, 1)), size);
  dx[0] = B(c, "Reshape", sums, shape);
}

/* AvgPoolGrad(sizes, dy) is linear in dy: its adjoint is the forward pool. */
static void gr_avg_pool_grad(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                             weft_output_t *dx) {
  weft_op_builder_t *b = start(c, "AvgPool", dy, 1);
  pass_attrs(b, n, pool_attrs);
  dx[1] = end(c, b, 0);
}

/* BiasAddGrad sums dy over all but the channel dim: its adjoint broadcasts the channel vector
 * back, laid out along the last dim (NHWC) or the second (NCHW). */
static void gr_bias_add_grad(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                             weft_output_t *dx) {
  weft_output_t x = in(n, 0), g = dy[0];
  const weft__attr_value_t *fmt = weft__attrs_get(n->attrs, "data_format");
  if (fmt && fmt->kind == WEFT_ATTR_STRING && strcmp(fmt->u.s.data, "NCHW") == 0) {
    int64_t minus_one = -1, one = 1;
    weft_output_t ones = B(c, "Fill", B(c, "Reshape", B(c, "Sub", U(c, "Rank", x),
                                                        scalar(c, WEFT_DT_INT32, 2)),
                                        vec_i32(c, &one, 1)),
                           scalar(c, WEFT_DT_INT32, 1));
    g = B(c, "Reshape", g, concat0(c, vec_i32(c, &minus_one, 1), ones));
  }
  dx[0] = B(c, "BroadcastTo", g, U(c, "Shape", x));
}

/* The fake quantisations: their gradient ops, straight through inside the range (TensorFlow's
 * array_grad.py), with the forward op's range and bit attrs. */
static void gr_fake_quant(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  static const char *const attrs[] = {"min", "max", "num_bits", "narrow_range", NULL};
  char *op = g_strdup_printf("%sGradient", n->op_name);
  weft_output_t ins[4] = {dy[0], in(n, 0), n->n_inputs > 1 ? in(n, 1) : NONE,
                          n->n_inputs > 2 ? in(n, 2) : NONE};
  weft_op_builder_t *b = start(c, op, ins, n->n_inputs + 1);
  g_free(op);
  pass_attrs(b, n, attrs);
  weft_output_t r = end(c, b, 0);
  if (!has(r)) return;
  for (int i = 0; i < n->n_inputs; i++) dx[i] = weft_out(r.node, i);
}

static const char *const resize_attrs[] = {"align_corners", "half_pixel_centers", NULL};

/* The resizes (image_grad.py): their adjoint ops, with the forward op's sampling attrs. */
static void gr_resize_bilinear(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  dx[0] = op2(c, "ResizeBilinearGrad", dy[0], in(n, 0), n, resize_attrs);
}

static void gr_resize_bicubic(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  dx[0] = op2(c, "ResizeBicubicGrad", dy[0], in(n, 0), n, resize_attrs);
}

/* CropAndResize (image_grad.py): the image's gradient for the float images TensorFlow allows,
 * the boxes' for any (bilinear sampling's derivative, nearest crops included, as TensorFlow). */
static void gr_crop_and_resize(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  static const char *const method[] = {"method", NULL};
  weft_output_t image = in(n, 0);
  weft_dtype_t t = dt(image);
  if (t == WEFT_DT_FLOAT || t == WEFT_DT_DOUBLE || t == WEFT_DT_HALF) {
    weft_output_t ins[4] = {dy[0], in(n, 1), in(n, 2), U(c, "Shape", image)};
    weft_op_builder_t *b = start(c, "CropAndResizeGradImage", ins, 4);
    if (b) weft_op_set_attr_type(b, "T", t);
    pass_attrs(b, n, method);
    dx[0] = end(c, b, 0);
  }
  weft_output_t ins[4] = {dy[0], image, in(n, 1), in(n, 2)};
  dx[1] = end(c, start(c, "CropAndResizeGradBoxes", ins, 4), 0);
}

static void gr_resize_nearest(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  int64_t one = 1, two = 2;
  weft_output_t hw = T3(c, "Slice", U(c, "Shape", in(n, 0)), vec_i32(c, &one, 1),
                        vec_i32(c, &two, 1));
  dx[0] = op2(c, "ResizeNearestNeighborGrad", dy[0], hw, n, resize_attrs);
}

/* ExtractImagePatches (array_grad.py's _ExtractImagePatchesGrad, with a segment sum in place of
 * its sparse matmul): the patches of an image of pixel numbers 1..rows*cols (0 where a patch
 * reaches into the padding) say which pixel each patch element came from; dy's elements are
 * summed per pixel and the padding's segment 0 dropped. Needs the input's rows, columns and
 * channels and the output's rows and columns when the graph is built. */
static void gr_extract_patches(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  static const char *const attrs[] = {"ksizes", "strides", "rates", "padding", NULL};
  weft__shape_t sx = weft__node_shape(n->inputs[0].src, n->inputs[0].src_index);
  weft__shape_t sy = weft__node_shape(n, 0);
  if (sx.rank != 4 || sy.rank != 4 || sx.dims[1] < 0 || sx.dims[2] < 0 || sx.dims[3] < 0 ||
      sy.dims[1] < 0 || sy.dims[2] < 0 || sy.dims[3] < 0) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (ExtractImagePatches) needs "
                            "static rows, columns and channels", n->name));
    return;
  }
  int64_t rows = sx.dims[1], cols = sx.dims[2], ch = sx.dims[3], pixels = rows * cols;
  int64_t taps = sy.dims[1] * sy.dims[2] * (ch > 0 ? sy.dims[3] / ch : 0);
  int64_t dims[4] = {1, rows, cols, 1};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 4, dims);
  for (int64_t i = 0; i < pixels; i++) ((int32_t *)weft_tensor_data(t))[i] = (int32_t)(i + 1);
  weft_output_t numbers = const_tensor(c, t);
  weft_op_builder_t *b = start(c, "ExtractImagePatches", &numbers, 1);
  pass_attrs(b, n, attrs);
  int64_t minus_one = -1, flat_shape[3] = {-1, taps, ch}, perm[3] = {1, 0, 2};
  weft_output_t ids = B(c, "Reshape", end(c, b, 0), vec_i32(c, &minus_one, 1));
  weft_output_t g = B(c, "Transpose", B(c, "Reshape", dy[0], vec_i32(c, flat_shape, 3)),
                      vec_i32(c, perm, 3));
  weft_output_t sums = T3(c, "UnsortedSegmentSum", g, ids,
                          scalar(c, WEFT_DT_INT32, (double)(pixels + 1)));
  int64_t from[3] = {1, 0, 0}, all[3] = {-1, -1, -1}, image[4] = {rows, cols, -1, ch},
          to_nhwc[4] = {2, 0, 1, 3};
  weft_output_t kept = T3(c, "Slice", sums, vec_i32(c, from, 3), vec_i32(c, all, 3));
  dx[0] = B(c, "Transpose", B(c, "Reshape", kept, vec_i32(c, image, 4)), vec_i32(c, to_nhwc, 4));
}

/* ---------------------------------------------------------------------------------------------
 * Linear algebra (linalg_grad.py); every op works on the last two dims, batched over the rest. */

/* x with its last two dims swapped; needs x's rank when the graph is built. */
static weft_output_t adjoint(gb_t *c, weft_node_t *n, weft_output_t x) {
  if (c->st) return NONE;
  weft__shape_t s = weft__node_shape(x.node, x.index);
  if (s.rank < 2) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (%s) needs matrices of "
                            "known rank", n->name, n->op_name));
    return NONE;
  }
  int64_t perm[WEFT_MAX_RANK];
  for (int d = 0; d < s.rank; d++) perm[d] = d;
  perm[s.rank - 2] = s.rank - 1;
  perm[s.rank - 1] = s.rank - 2;
  return B(c, "Transpose", x, vec_i32(c, perm, s.rank));
}

static weft_output_t expand_matrix(gb_t *c, weft_output_t x) {
  weft_output_t axis = scalar(c, WEFT_DT_INT32, -1);
  return B(c, "ExpandDims", B(c, "ExpandDims", x, axis), axis);
}

static weft_output_t inverse(gb_t *c, weft_output_t a, bool adj) {
  weft_op_builder_t *b = start(c, "MatrixInverse", &a, 1);
  if (b) weft_op_set_attr_bool(b, "adjoint", adj);
  return end(c, b, 0);
}

static weft_output_t solve(gb_t *c, const char *op, weft_output_t a, weft_output_t rhs,
                           bool lower, bool adj) {
  weft_output_t ins[2] = {a, rhs};
  weft_op_builder_t *b = start(c, op, ins, 2);
  if (b) {
    weft_op_set_attr_bool(b, "adjoint", adj);
    if (strcmp(op, "MatrixTriangularSolve") == 0) weft_op_set_attr_bool(b, "lower", lower);
  }
  return end(c, b, 0);
}

static weft_output_t band(gb_t *c, weft_output_t x, int64_t lower, int64_t upper) {
  return T3(c, "MatrixBandPart", x, scalar(c, WEFT_DT_INT64, (double)lower),
            scalar(c, WEFT_DT_INT64, (double)upper));
}

/* MatrixInverse: C = A^-1 gives dA = -C^T dC C^T; with adjoint, C = A^-T and dA = -C dC^T C. */
static void gr_matrix_inverse(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                              weft_output_t *dx) {
  weft_output_t inv = weft_out(n, 0);
  if (attr_bool(n, "adjoint"))
    dx[0] = U(c, "Neg", bmm(c, inv, bmm(c, dy[0], inv, true, false), false, false));
  else
    dx[0] = U(c, "Neg", bmm(c, inv, bmm(c, dy[0], inv, false, true), true, false));
}

/* d det(A) = det(A) A^-T, d log|det(A)| = A^-T. */
static void gr_matrix_determinant(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                  weft_output_t *dx) {
  weft_output_t scale = B(c, "Mul", dy[0], weft_out(n, 0));
  dx[0] = B(c, "Mul", expand_matrix(c, scale), inverse(c, in(n, 0), true));
}

static void gr_log_matrix_determinant(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                      weft_output_t *dx) {
  if (!has(dy[1])) return;
  dx[0] = B(c, "Mul", expand_matrix(c, dy[1]), inverse(c, in(n, 0), true));
}

/* Cholesky (TensorFlow's _CholeskyGrad, Murray 2016): with A = L L^T,
 * dA = sym(L^-T Phi(L^T dL) L^-1) where Phi keeps the lower triangle and halves the diagonal. */
static void gr_cholesky(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t l = weft_out(n, 0);
  weft_output_t eye = U(c, "MatrixDiag", U(c, "OnesLike", U(c, "MatrixDiagPart", l)));
  weft_output_t l_inv = solve(c, "MatrixTriangularSolve", l, eye, true, false);
  weft_output_t middle = bmm(c, l, dy[0], true, false);
  weft_output_t half = scalar(c, dt(l), 0.5);
  middle = B(c, "MatrixSetDiag", middle, B(c, "Mul", half, U(c, "MatrixDiagPart", middle)));
  middle = band(c, middle, -1, 0);
  weft_output_t ga = bmm(c, bmm(c, l_inv, middle, true, false), l_inv, false, false);
  dx[0] = B(c, "Mul", B(c, "AddV2", ga, adjoint(c, n, ga)), half);
}

/* MatrixSolve, MatrixTriangularSolve: X = op(A)^-1 B gives dB = op(A)^-T dX and
 * dA = -dB X^T (transposed for adjoint), kept to A's triangle for the triangular solve. */
static void gr_matrix_solve(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  bool adj = attr_bool(n, "adjoint");
  bool triangular = strcmp(n->op_name, "MatrixTriangularSolve") == 0;
  const weft__attr_value_t *lv = weft__attrs_get(n->attrs, "lower");
  bool lower = !lv || lv->kind != WEFT_ATTR_BOOL || lv->u.b;
  weft_output_t x = weft_out(n, 0);
  weft_output_t gb = solve(c, n->op_name, in(n, 0), dy[0], lower, !adj);
  weft_output_t ga = U(c, "Neg", adj ? bmm(c, x, gb, false, true) : bmm(c, gb, x, false, true));
  if (triangular) ga = lower ? band(c, ga, -1, 0) : band(c, ga, 0, -1);
  /* The triangular solve broadcasts its batch dims (TensorFlow's V2 kernel). */
  dx[0] = triangular ? unbroadcast_batch(c, ga, in(n, 0), in(n, 1)) : ga;
  dx[1] = triangular ? unbroadcast_batch(c, gb, in(n, 1), in(n, 0)) : gb;
}

/* MatrixSolveLs (TensorFlow's _MatrixSolveLsGrad, fast path only, as TensorFlow): X solves the
 * regularised normal equations, of the first kind (A^T A + l2 I) X = A^T B for rows >= columns,
 * else X = A^T (A A^T + l2 I)^-1 B; the Gramian is solved directly rather than through its
 * Cholesky factor. Needs the matrices' static shape to pick the kind. */
static void gr_matrix_solve_ls(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                               weft_output_t *dx) {
  const weft__attr_value_t *fast = weft__attrs_get(n->attrs, "fast");
  weft_output_t a = in(n, 0), b = in(n, 1), x = weft_out(n, 0), g = dy[0];
  weft__shape_t sa = weft__node_shape(a.node, a.index);
  if (fast && fast->kind == WEFT_ATTR_BOOL && !fast->u.b) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (MatrixSolveLs) is not "
                            "defined for fast=False", n->name));
    return;
  }
  if (sa.rank < 2 || sa.dims[sa.rank - 2] < 0 || sa.dims[sa.rank - 1] < 0) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (MatrixSolveLs) needs the "
                            "matrices' static shape", n->name));
    return;
  }
  bool over = sa.dims[sa.rank - 2] >= sa.dims[sa.rank - 1];
  weft_output_t gram = over ? bmm(c, a, a, true, false) : bmm(c, a, a, false, true);
  weft_output_t eye = U(c, "MatrixDiag", U(c, "OnesLike", U(c, "MatrixDiagPart", gram)));
  gram = B(c, "AddV2", gram, B(c, "Mul", cast(c, in(n, 2), dt(a)), eye));
  if (over) {
    weft_output_t z = solve(c, "MatrixSolve", gram, g, false, false);
    weft_output_t xzt = bmm(c, x, z, false, true);
    weft_output_t sym = B(c, "AddV2", xzt, adjoint(c, n, xzt));
    dx[0] = B(c, "Sub", bmm(c, b, z, false, true), bmm(c, a, sym, false, false));
    dx[1] = bmm(c, a, z, false, false);
  } else {
    weft_output_t gb = solve(c, "MatrixSolve", gram, bmm(c, a, g, false, false), false, false);
    weft_output_t tmp = solve(c, "MatrixSolve", gram, b, false, false);
    weft_output_t a1 = U(c, "Neg", bmm(c, gb, bmm(c, tmp, a, true, false), false, false));
    weft_output_t a2 = bmm(c, tmp, B(c, "Sub", g, bmm(c, a, gb, true, false)), false, true);
    dx[0] = B(c, "AddV2", a1, a2);
    dx[1] = gb;
  }
}

/* x R^-T for upper triangular R, as (R^-1 x^T)^T. */
static weft_output_t right_solve_upper(gb_t *c, weft_node_t *n, weft_output_t x,
                                       weft_output_t r) {
  return adjoint(c, n, solve(c, "MatrixTriangularSolve", r, adjoint(c, n, x), false, false));
}

/* Qr (TensorFlow's _QrGrad): reduced factorisations with at least as many rows as columns;
 * TensorFlow refuses the others and so does this. */
static void gr_qr(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t q = weft_out(n, 0), r = weft_out(n, 1);
  weft__shape_t sa;
  if (!static_shape(in(n, 0), &sa) || sa.rank < 2) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (Qr) needs a static input "
                            "shape", n->name));
    return;
  }
  int64_t rows = sa.dims[sa.rank - 2], cols = sa.dims[sa.rank - 1];
  if (attr_bool(n, "full_matrices") ? rows != cols : rows < cols) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (Qr): not implemented when "
                            "ncols > nrows or full_matrices is true and ncols != nrows",
                            n->name));
    return;
  }
  weft_output_t dq = has(dy[0]) ? dy[0] : U(c, "ZerosLike", q);
  weft_output_t dr = has(dy[1]) ? dy[1] : U(c, "ZerosLike", r);
  weft_output_t qdq = bmm(c, q, dq, true, false), rdr = bmm(c, r, dr, false, true);
  weft_output_t skew = B(c, "AddV2", B(c, "Sub", qdq, adjoint(c, n, qdq)),
                         B(c, "Sub", rdr, adjoint(c, n, rdr)));
  weft_output_t tril = band(c, skew, -1, 0);
  weft_output_t ga = bmm(c, q, B(c, "AddV2", dr, right_solve_upper(c, n, tril, r)), false, false);
  weft_output_t gb = right_solve_upper(c, n, B(c, "Sub", dq, bmm(c, q, qdq, false, false)), r);
  dx[0] = B(c, "AddV2", ga, gb);
}

/* x / (x^2 + 1e-20): 1/x away from 0, 0 at 0 (repeated singular values). */
static weft_output_t safe_reciprocal(gb_t *c, weft_output_t x) {
  return B(c, "Mul", x, U(c, "Reciprocal", B(c, "AddV2", B(c, "Mul", x, x),
                                            scalar(c, dt(x), 1e-20))));
}

/* Columns [begin, begin + size) of each matrix of x (rank known). */
static weft_output_t columns(gb_t *c, weft_output_t x, int rank, int64_t begin, int64_t size) {
  int64_t from[WEFT_MAX_RANK] = {0}, count[WEFT_MAX_RANK];
  for (int d = 0; d < rank; d++) count[d] = -1;
  from[rank - 1] = begin;
  count[rank - 1] = size;
  return T3(c, "Slice", x, vec_i32(c, from, rank), vec_i32(c, count, rank));
}

/* Svd (TensorFlow's _SvdGrad, Townsend 2016); a tall matrix is differentiated as its transpose.
 * With full_matrices the extra singular vectors are only determined (up to sign) when the
 * sides differ by at most one, so, as TensorFlow, larger differences are refused. */
static void gr_svd(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  weft_output_t a = in(n, 0);
  weft_output_t gs = has(dy[0]) ? dy[0] : U(c, "ZerosLike", weft_out(n, 0));
  const weft__attr_value_t *cuv = weft__attrs_get(n->attrs, "compute_uv");
  if (cuv && cuv->kind == WEFT_ATTR_BOOL && !cuv->u.b) {
    weft_op_builder_t *b = start(c, "Svd", &a, 1);
    if (b) weft_op_set_attr_bool(b, "compute_uv", true);
    weft_output_t s = end(c, b, 0);
    if (!has(s)) return;
    weft_output_t u = weft_out(s.node, 1), v = weft_out(s.node, 2);
    dx[0] = bmm(c, u, bmm(c, U(c, "MatrixDiag", gs), v, false, true), false, false);
    return;
  }
  weft__shape_t sa;
  if (!static_shape(a, &sa) || sa.rank < 2) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (Svd) needs a static input "
                            "shape", n->name));
    return;
  }
  int64_t rows = sa.dims[sa.rank - 2], cols = sa.dims[sa.rank - 1];
  bool tall = rows > cols, full = attr_bool(n, "full_matrices");
  int64_t small = tall ? cols : rows, big = tall ? rows : cols;
  if (full && big - small > 1) {
    fail(c, weft_status_new(WEFT_UNIMPLEMENTED, "gradient of '%s' (Svd) is not implemented "
                            "for full_matrices when the sides differ by more than 1 (%"
                            G_GINT64_FORMAT "x%" G_GINT64_FORMAT ")", n->name, rows, cols));
    return;
  }
  weft_output_t s = weft_out(n, 0), u = weft_out(n, 1), v = weft_out(n, 2);
  weft_output_t gu = has(dy[1]) ? dy[1] : U(c, "ZerosLike", u);
  weft_output_t gv = has(dy[2]) ? dy[2] : U(c, "ZerosLike", v);
  if (tall) {
    weft_output_t t = u;
    u = v, v = t;
    t = gu;
    gu = gv, gv = t;
  }
  weft_output_t v2 = NONE, gv2 = NONE;
  if (full && big != small) {
    v2 = columns(c, v, sa.rank, small, big - small);
    gv2 = columns(c, gv, sa.rank, small, big - small);
    v = columns(c, v, sa.rank, 0, small);
    gv = columns(c, gv, sa.rank, 0, small);
  }
  weft_output_t s_mat = U(c, "MatrixDiag", s), s2 = U(c, "Square", s);
  weft_output_t m2 = scalar(c, WEFT_DT_INT32, -2), m1 = scalar(c, WEFT_DT_INT32, -1);
  weft_output_t f = B(c, "MatrixSetDiag",
                      safe_reciprocal(c, B(c, "Sub", B(c, "ExpandDims", s2, m2),
                                           B(c, "ExpandDims", s2, m1))),
                      U(c, "ZerosLike", s));
  weft_output_t fu = B(c, "Mul", f, bmm(c, u, gu, true, false));
  weft_output_t fv = B(c, "Mul", f, bmm(c, v, gv, true, false));
  weft_output_t inner = B(c, "AddV2", B(c, "AddV2", U(c, "MatrixDiag", gs),
                                        bmm(c, B(c, "AddV2", fu, adjoint(c, n, fu)), s_mat,
                                            false, false)),
                          bmm(c, s_mat, B(c, "AddV2", fv, adjoint(c, n, fv)), false, false));
  weft_output_t ga = bmm(c, u, bmm(c, inner, v, false, true), false, false);
  if (rows != cols) {
    /* The part of dV outside V's span: (I - V V^T) dV S^-1 U^T, transposed; with the full V,
     * less what the extra column's gradient says about V's own columns. */
    weft_output_t gvt = adjoint(c, n, gv);
    weft_output_t off = B(c, "Sub", gvt, bmm(c, bmm(c, gvt, v, false, false), v, false, true));
    if (has(v2))
      off = B(c, "Sub", off, bmm(c, bmm(c, v, gv2, true, false), v2, false, true));
    weft_output_t us_inv = bmm(c, u, U(c, "MatrixDiag", safe_reciprocal(c, s)), false, false);
    ga = B(c, "AddV2", ga, bmm(c, us_inv, off, false, false));
  }
  dx[0] = tall ? adjoint(c, n, ga) : ga;
}

/* SelfAdjointEigV2 (TensorFlow's _SelfAdjointEigV2Grad): V (diag(de) + F o V^T dV) V^T with
 * F_ij = 1 / (e_j - e_i) off the diagonal; the op reads only the lower triangle, so the
 * symmetrised gradient goes there (the diagonal once). Without compute_v the vectors come from
 * a second decomposition. */
static void gr_self_adjoint_eig(gb_t *c, weft_node_t *n, const weft_output_t *dy,
                                weft_output_t *dx) {
  weft_output_t e = weft_out(n, 0), v = weft_out(n, 1);
  weft_output_t ge = has(dy[0]) ? dy[0] : U(c, "ZerosLike", e);
  bool compute_v = true;
  const weft__attr_value_t *cv = weft__attrs_get(n->attrs, "compute_v");
  if (cv && cv->kind == WEFT_ATTR_BOOL) compute_v = cv->u.b;
  weft_output_t inner = U(c, "MatrixDiag", ge);
  if (compute_v) {
    weft_output_t gv = has(dy[1]) ? dy[1] : U(c, "ZerosLike", v);
    weft_output_t f = B(c, "MatrixSetDiag",
                        safe_reciprocal(c, B(c, "Sub",
                                             B(c, "ExpandDims", e, scalar(c, WEFT_DT_INT32, -2)),
                                             B(c, "ExpandDims", e, scalar(c, WEFT_DT_INT32, -1)))),
                        U(c, "ZerosLike", e));
    inner = B(c, "AddV2", inner, B(c, "Mul", f, bmm(c, v, gv, true, false)));
  } else {
    weft_output_t a = in(n, 0);
    weft_op_builder_t *b = start(c, "SelfAdjointEigV2", &a, 1);
    if (b) weft_op_set_attr_bool(b, "compute_v", true);
    weft_output_t again = end(c, b, 0);
    if (!has(again)) return;
    v = weft_out(again.node, 1);
  }
  weft_output_t ga = bmm(c, v, bmm(c, inner, v, false, true), false, false);
  ga = band(c, B(c, "AddV2", ga, adjoint(c, n, ga)), -1, 0);
  dx[0] = B(c, "MatrixSetDiag", ga,
            B(c, "Mul", scalar(c, dt(ga), 0.5), U(c, "MatrixDiagPart", ga)));
}

/* Cross: (cross(v, dy), cross(dy, u)), TensorFlow's _CrossGrad. */
static void gr_cross(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  dx[0] = B(c, "Cross", in(n, 1), dy[0]);
  dx[1] = B(c, "Cross", dy[0], in(n, 0));
}

static weft_output_t einsum(gb_t *c, const weft_output_t *ins, int n, const char *eq) {
  weft_op_builder_t *b = start(c, "Einsum", ins, 0);
  if (!b) return NONE;
  weft_op_add_input_list(b, ins, n);
  weft_op_set_attr_string(b, "equation", eq);
  weft_op_set_attr_int(b, "N", n);
  return end(c, b, 0);
}

/* Einsum's gradient for operand x (subscripts xs) from dy (subscripts o) and the other operand
 * (subscripts os; none for a one-input equation), as TensorFlow's _EinsumGrad: an einsum of dy
 * with the other operand into L, x's labels minus those summed in x alone, with "..." first.
 * Then the dims under "..." that x broadcast are summed back to x's (Shape + BroadcastGradientArgs
 * + Sum + Reshape, against the shape x has in L's layout), and where L is not x's subscripts
 * (summed labels, "..." not first) one more einsum with ones shaped like x spreads the gradient
 * over the summed labels, puts the dims back in x's order and zeroes what lies off a repeated
 * label's diagonal. */
static weft_output_t einsum_grad(gb_t *c, weft_output_t dy, const weft__einsum_subs_t *o,
                                 weft_output_t other, const weft__einsum_subs_t *os,
                                 weft_output_t x, const weft__einsum_subs_t *xs) {
  if (!has(dy)) return NONE;
  weft__einsum_subs_t l = {.ellipsis = xs->ellipsis};
  if (xs->ellipsis) l.label[l.n++] = WEFT__EINSUM_ELLIPSIS;
  for (int k = 0; k < xs->n; k++) {
    int lab = xs->label[k];
    if (lab == WEFT__EINSUM_ELLIPSIS) continue;
    if (weft__einsum_has(o, lab) || (os && weft__einsum_has(os, lab)))
      l.label[l.n++] = (signed char)lab;
  }
  char so[WEFT__EINSUM_MAX_SUBS + 3], sx[WEFT__EINSUM_MAX_SUBS + 3], sl[WEFT__EINSUM_MAX_SUBS + 3];
  char sy[WEFT__EINSUM_MAX_SUBS + 3] = "";
  weft__einsum_subs_str(o, so);
  weft__einsum_subs_str(xs, sx);
  weft__einsum_subs_str(&l, sl);
  if (os) weft__einsum_subs_str(os, sy);
  char *eq = os ? g_strdup_printf("%s,%s->%s", so, sy, sl) : g_strdup_printf("%s->%s", so, sl);
  weft_output_t ins[2] = {dy, other};
  weft_output_t g = einsum(c, ins, os ? 2 : 1, eq);
  g_free(eq);
  if (os && o->ellipsis) {
    eq = g_strdup_printf("%s->%s", sx, sl);
    weft_output_t xl = U(c, "Shape", einsum(c, &x, 1, eq));
    g_free(eq);
    weft_output_t shapes[2] = {xl, U(c, "Shape", g)};
    weft_output_t r0 = end(c, start(c, "BroadcastGradientArgs", shapes, 2), 0);
    g = B(c, "Reshape", sum(c, g, r0, false), xl);
  }
  if (strcmp(sl, sx) == 0) return g;
  eq = g_strdup_printf("%s,%s->%s", sl, sx, sx);
  weft_output_t spread[2] = {g, U(c, "OnesLike", x)};
  g = einsum(c, spread, 2, eq);
  g_free(eq);
  return g;
}

static void gr_einsum(gb_t *c, weft_node_t *n, const weft_output_t *dy, weft_output_t *dx) {
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, "equation");
  weft__einsum_eq_t e;
  weft_status_t *st =
      weft__einsum_parse(a && a->kind == WEFT_ATTR_STRING ? a->u.s.data : NULL, &e);
  if (st) {
    fail(c, st);
    return;
  }
  if (e.n_inputs == 1) {
    dx[0] = einsum_grad(c, dy[0], &e.out, NONE, NULL, in(n, 0), &e.in[0]);
    return;
  }
  /* An operand without "..." under an output with one has an empty "..." (TensorFlow appends
   * it), so that both gradients come out in the broadcast layout. */
  for (int i = 0; i < 2 && e.out.ellipsis; i++) {
    if (e.in[i].ellipsis) continue;
    if (e.in[i].n == WEFT__EINSUM_MAX_SUBS) {
      fail(c, weft_status_new(WEFT_INVALID_ARGUMENT, "gradient of '%s' (Einsum): too many "
                              "labels", n->name));
      return;
    }
    e.in[i].ellipsis = true;
    e.in[i].label[e.in[i].n++] = WEFT__EINSUM_ELLIPSIS;
  }
  dx[0] = einsum_grad(c, dy[0], &e.out, in(n, 1), &e.in[1], in(n, 0), &e.in[0]);
  dx[1] = einsum_grad(c, dy[0], &e.out, in(n, 0), &e.in[0], in(n, 1), &e.in[1]);
}

weft_status_t *weft__grad_zeros_like(weft_graph_t *g, weft_output_t x, weft_dtype_t dtype,
                                     weft_output_t *out) {
  gb_t c = {g, NULL};
  if (dt(x) != WEFT_DT_STRING) {
    *out = U(&c, "ZerosLike", x);
    return c.st;
  }
  /* A handle: zeros of the variable's value, read where the variable lives even when the
   * caller builds under another device (a gradient loop on a worker). */
  weft_node_t *root = x.node;
  for (int hops = 0; hops < 64 && root->n_inputs > 0 && dt(in(root, 0)) == WEFT_DT_STRING &&
                     strcmp(root->op_name, "VarHandleOp") != 0;
       hops++)
    root = root->inputs[0].src;
  const char *device = root->requested_device;
  if (device && *device) weft_graph_push_device(g, device);
  weft_op_builder_t *b = start(&c, "ReadVariableOp", &x, 1);
  if (b) weft_op_set_attr_type(b, "dtype", dtype);
  *out = U(&c, "ZerosLike", end(&c, b, 0));
  if (device && *device) weft_graph_pop_device(g);
  return c.st;
}

/* The ops a handle passes through, and the ones reading a variable's value from it: the only
 * consumers a handle's gradient comes from (a string x feeding StringToNumber gets none). */
static const char *const handle_pass[] = {"Identity", "Snapshot", "Enter", "RefEnter", "Exit",
                                          "RefExit", "Switch", "RefSwitch", "Merge", "RefMerge",
                                          "NextIteration"};

static bool in_list(const char *op, const char *const *list, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (strcmp(op, list[k]) == 0) return true;
  return false;
}

guint8 *weft__grad_handles(weft_graph_t *g, int n0, const weft_output_t *xs, int n_xs) {
  guint8 *handle = g_new0(guint8, n0 > 0 ? n0 : 1);
  for (int i = 0; i < n_xs; i++)
    if (dt(xs[i]) == WEFT_DT_STRING) handle[xs[i].node->id] = 1;
  for (int id = 0; id < n0; id++) {
    weft_node_t *n = weft_graph_node_at(g, id);
    if (strcmp(n->op_name, "VarHandleOp") == 0) handle[id] = 1;
    if (handle[id] || n->n_inputs == 0 || n->n_outputs == 0 || dt(weft_out(n, 0)) != WEFT_DT_STRING)
      continue;
    weft_node_t *src = n->inputs[0].src;
    if (src->id < id && in_list(n->op_name, handle_pass, G_N_ELEMENTS(handle_pass)))
      handle[id] = handle[src->id];
  }
  return handle;
}

bool weft__grad_edge(const guint8 *handle, const weft_node_t *n, int k) {
  static const char *const readers[] = {"ReadVariableOp", "ResourceGather"};
  weft_dtype_t t = weft__dtype_base(n->input_types[k]);
  if (is_float(t)) return true;
  return t == WEFT_DT_STRING && handle[n->inputs[k].src->id] &&
         (in_list(n->op_name, readers, G_N_ELEMENTS(readers)) ||
          in_list(n->op_name, handle_pass, G_N_ELEMENTS(handle_pass)));
}

typedef struct grad_entry {
  const char *op;
  grad_fn_t fn; /* NULL: the op has no gradient on purpose (stops propagation) */
} grad_entry_t;

static const grad_entry_t grad_table[] = {
    {"Add", gr_add},
    {"AddV2", gr_add},
    {"Sub", gr_sub},
    {"Mul", gr_mul},
    {"RealDiv", gr_div},
    {"Div", gr_div},
    {"Maximum", gr_maximum},
    {"Minimum", gr_minimum},
    {"SquaredDifference", gr_sqdiff},
    {"Pow", gr_pow},
    {"Neg", gr_neg},
    {"Abs", gr_abs},
    {"Square", gr_square},
    {"Sqrt", gr_sqrt},
    {"Rsqrt", gr_rsqrt},
    {"Reciprocal", gr_reciprocal},
    {"Inv", gr_reciprocal},
    {"Exp", gr_exp},
    {"Log", gr_log},
    {"Relu", gr_relu},
    {"Relu6", gr_relu6},
    {"Elu", gr_elu},
    {"LeakyRelu", gr_leaky_relu},
    {"ReluGrad", gr_relu_grad},
    {"Relu6Grad", gr_relu_grad},
    {"LeakyReluGrad", gr_relu_grad},
    {"EluGrad", gr_relu_grad},
    {"SeluGrad", gr_relu_grad},
    {"Softplus", gr_softplus},
    {"Softsign", gr_softsign},
    {"Sin", gr_sin},
    {"Cos", gr_cos},
    {"Tan", gr_tan},
    {"Sinh", gr_sinh},
    {"Cosh", gr_cosh},
    {"Atan", gr_atan},
    {"Log1p", gr_log1p},
    {"Expm1", gr_expm1},
    {"Erf", gr_erf},
    {"Slice", gr_slice},
    {"Pad", gr_pad},
    {"Tile", gr_tile},
    {"Sigmoid", gr_sigmoid},
    {"Tanh", gr_tanh},
    {"Identity", gr_identity},
    {"IdentityN", gr_identity_n},
    {"Snapshot", gr_identity},
    {"EnsureShape", gr_identity},
    {"AddN", gr_addn},
    {"L2Loss", gr_l2loss},
    {"MatMul", gr_matmul},
    {"SparseTensorDenseMatMul", gr_sparse_dense_matmul},
    {"SparseReorder", gr_sparse_reorder},
    {"SparseAdd", gr_sparse_add},
    {"SparseSlice", gr_sparse_slice},
    {"BatchMatMulV2", gr_batch_matmul},
    {"BatchMatMul", gr_batch_matmul},
    {"BiasAdd", gr_bias_add},
    {"BiasAddV1", gr_bias_add},
    {"Softmax", gr_softmax},
    {"LogSoftmax", gr_log_softmax},
    {"SoftmaxCrossEntropyWithLogits", gr_softmax_xent},
    {"SparseSoftmaxCrossEntropyWithLogits", gr_softmax_xent},
    {"CTCLoss", gr_ctc_loss},
    {"Sum", gr_sum},
    {"Mean", gr_mean},
    {"Max", gr_maxmin},
    {"Min", gr_maxmin},
    {"Reshape", gr_reshape},
    {"ExpandDims", gr_reshape},
    {"Squeeze", gr_reshape},
    {"Transpose", gr_transpose},
    {"ConcatV2", gr_concat},
    {"Cast", gr_cast},
    {"Select", gr_select},
    {"Split", gr_split},
    {"SplitV", gr_splitv},
    {"ReverseV2", gr_reverse},
    {"Conv2D", gr_conv},
    {"DepthwiseConv2dNative", gr_conv},
    {"Conv2DBackpropInput", gr_conv_bp_input},
    {"DepthwiseConv2dNativeBackpropInput", gr_conv_bp_input},
    {"Conv2DBackpropFilter", gr_conv_bp_filter},
    {"DepthwiseConv2dNativeBackpropFilter", gr_conv_bp_filter},
    {"MaxPool", gr_max_pool},
    {"AvgPool", gr_avg_pool},
    {"AvgPoolGrad", gr_avg_pool_grad},
    {"MaxPoolWithArgmax", gr_max_pool_argmax},
    {"BiasAddGrad", gr_bias_add_grad},
    {"FakeQuantWithMinMaxArgs", gr_fake_quant},
    {"FakeQuantWithMinMaxVars", gr_fake_quant},
    {"FakeQuantWithMinMaxVarsPerChannel", gr_fake_quant},
    {"MaxPoolV2", gr_max_pool_v2},
    {"MaxPoolGrad", gr_max_pool_grad},
    {"MaxPoolGradGrad", gr_max_pool_grad},
    {"Conv3D", gr_conv3d},
    {"Conv3DBackpropInputV2", gr_conv3d_bp},
    {"Conv3DBackpropFilterV2", gr_conv3d_bp},
    {"MaxPool3D", gr_max_pool3d},
    {"AvgPool3D", gr_avg_pool3d},
    {"LRN", gr_lrn},
    {"MirrorPad", gr_mirror_pad},
    {"FusedBatchNorm", gr_fused_bn},
    {"FusedBatchNormV2", gr_fused_bn},
    {"FusedBatchNormV3", gr_fused_bn},
    {"StridedSlice", gr_strided_slice},
    {"GatherV2", gr_gather},
    {"GatherNd", gr_gather_nd},
    {"ScatterNd", gr_scatter_nd},
    {"Cross", gr_cross},
    {"Einsum", gr_einsum},
    {"Gather", gr_gather},
    {"Pack", gr_pack},
    {"Unpack", gr_unpack},
    {"Fill", gr_fill},
    {"Prod", gr_prod},
    {"Selu", gr_selu},
    {"Asin", gr_asin},
    {"Acos", gr_acos},
    {"Atanh", gr_atanh},
    {"Asinh", gr_asinh},
    {"Acosh", gr_acosh},
    {"Atan2", gr_atan2},
    {"Lgamma", gr_lgamma},
    {"Digamma", gr_digamma},
    {"Xlogy", gr_xlogy},
    {"Xlog1py", gr_xlog1py},
    {"Xdivy", gr_xdivy},
    {"MulNoNan", gr_mul_no_nan},
    {"Erfinv", gr_erfinv},
    {"Ndtri", gr_ndtri},
    {"BesselI0e", gr_bessel_i0e},
    {"BesselI1e", gr_bessel_i1e},
    {"Zeta", gr_zeta},
    {"Polygamma", gr_polygamma},
    {"CumulativeLogsumexp", gr_cumulative_logsumexp},
    {"Sign", gr_sign},
    {"Cumsum", gr_cumsum},
    {"Cumprod", gr_cumprod},
    {"TopKV2", gr_top_k},
    {"TopK", gr_top_k},
    {"SegmentSum", gr_segment_sum},
    {"SegmentMean", gr_segment_mean},
    {"SegmentMax", gr_segment_minmax},
    {"SegmentMin", gr_segment_minmax},
    {"UnsortedSegmentSum", gr_unsorted_segment_sum},
    {"SegmentProd", gr_segment_prod},
    {"UnsortedSegmentProd", gr_segment_prod},
    {"UnsortedSegmentMax", gr_unsorted_segment_minmax},
    {"UnsortedSegmentMin", gr_unsorted_segment_minmax},
    {"DynamicStitch", gr_dynamic_stitch},
    {"ParallelDynamicStitch", gr_dynamic_stitch},
    {"DynamicPartition", gr_dynamic_partition},
    {"BroadcastTo", gr_broadcast_to},
    {"SelectV2", gr_select_v2},
    {"Roll", gr_roll},
    {"NthElement", gr_nth_element},
    {"PadV2", gr_pad},
    {"AccumulateNV2", gr_addn},
    {"ClipByValue", gr_clip_by_value},
    {"FloorMod", gr_floor_mod},
    {"DivNoNan", gr_div_no_nan},
    {"Erfc", gr_erfc},
    {"Betainc", gr_betainc},
    {"MatrixBandPart", gr_matrix_band_part},
    {"MatrixDiagPart", gr_matrix_diag_part},
    {"MatrixDiag", gr_matrix_diag},
    {"MatrixSetDiag", gr_matrix_set_diag},
    {"MatrixDiagPartV2", gr_matrix_diag_part_k},
    {"MatrixDiagPartV3", gr_matrix_diag_part_k},
    {"MatrixDiagV2", gr_matrix_diag_k},
    {"MatrixDiagV3", gr_matrix_diag_k},
    {"MatrixSetDiagV2", gr_matrix_set_diag_k},
    {"MatrixSetDiagV3", gr_matrix_set_diag_k},
    {"Diag", gr_diag},
    {"DiagPart", gr_diag_part},
    {"ReverseSequence", gr_reverse_sequence},
    {"ResizeBilinear", gr_resize_bilinear},
    {"ResizeBicubic", gr_resize_bicubic},
    {"CropAndResize", gr_crop_and_resize},
    {"ExtractImagePatches", gr_extract_patches},
    {"ResizeNearestNeighbor", gr_resize_nearest},
    {"DepthToSpace", gr_space_depth},
    {"SpaceToDepth", gr_space_depth},
    {"SpaceToBatchND", gr_space_batch},
    {"BatchToSpaceND", gr_space_batch},
    {"MatrixInverse", gr_matrix_inverse},
    {"MatrixDeterminant", gr_matrix_determinant},
    {"LogMatrixDeterminant", gr_log_matrix_determinant},
    {"Cholesky", gr_cholesky},
    {"MatrixSolve", gr_matrix_solve},
    {"MatrixTriangularSolve", gr_matrix_solve},
    {"MatrixSolveLs", gr_matrix_solve_ls},
    {"Qr", gr_qr},
    {"Svd", gr_svd},
    {"SelfAdjointEigV2", gr_self_adjoint_eig},
    /* TensorFlow's NotDifferentiable ops and the rounding ops whose gradient it defines as
     * None: nothing flows back through them. */
    {"ZerosLike", NULL},
    {"OnesLike", NULL},
    {"Floor", NULL},
    {"Ceil", NULL},
    {"Round", NULL},
    {"Rint", NULL},
    {"Shape", NULL},
    {"ShapeN", NULL},
    {"Size", NULL},
    {"Rank", NULL},
    {"ArgMax", NULL},
    {"ArgMin", NULL},
    {"FloorDiv", NULL},
    {"TruncateDiv", NULL},
    {"TruncateMod", NULL},
    {"Equal", NULL},
    {"NotEqual", NULL},
    {"Less", NULL},
    {"LessEqual", NULL},
    {"Greater", NULL},
    {"GreaterEqual", NULL},
    {"IsFinite", NULL},
    {"IsNan", NULL},
    {"IsInf", NULL},
    {"LogicalAnd", NULL},
    {"LogicalOr", NULL},
    {"LogicalNot", NULL},
    {"Range", NULL},
    {"LinSpace", NULL},
    {"OneHot", NULL},
    {"Where", NULL},
    {"Unique", NULL},
    {"InvertPermutation", NULL},
    {"BroadcastGradientArgs", NULL},
    {"Bitcast", NULL},
    {"Bucketize", NULL},
    {"CTCGreedyDecoder", NULL},
    {"CTCBeamSearchDecoder", NULL},
    {"EditDistance", NULL},
    /* sparse_grad.py's NotDifferentiable ops; SparseReshape's outputs are all int64. */
    {"SparseAddGrad", NULL},
    {"SparseConcat", NULL},
    {"SparseReshape", NULL},
    {"SparseSliceGrad", NULL},
    {"ReadVariableOp", gr_read_variable},
    {"ResourceGather", gr_resource_gather},
    {"VarHandleOp", NULL},
    {"TensorArrayReadV3", gr_ta_read},
    {"TensorArrayWriteV3", gr_ta_write},
    {"TensorArrayGatherV3", gr_ta_gather},
    {"TensorArrayScatterV3", gr_ta_scatter},
    {"TensorArrayConcatV3", gr_ta_concat},
    {"TensorArraySplitV3", gr_ta_split},
    {"TensorArrayV3", NULL},
    {"TensorArrayGradV3", NULL},
    {"TensorArraySizeV3", NULL},
    {"Switch", gr_switch},
    {"Merge", gr_merge},
    {"StopGradient", NULL},
    {"PreventGradient", NULL},
};

static const grad_entry_t *lookup(const char *op) {
  for (size_t k = 0; k < G_N_ELEMENTS(grad_table); k++)
    if (strcmp(grad_table[k].op, op) == 0) return &grad_table[k];
  /* Ops a plugin registered may carry a gradient program (weft_op_def_t.gradient); the walk
   * falls back to weft__gradient_lookup/weft__gradient_build for them. */
  return NULL;
}

bool weft__gradient_defined(const char *op) {
  const grad_entry_t *e = lookup(op);
  return e ? e->fn != NULL : weft__gradient_lookup(op) != NULL;
}

weft_status_t *weft__gradient_one(weft_graph_t *g, weft_node_t *n, const weft_output_t *dy,
                                  weft_output_t *dx) {
  const grad_entry_t *e = lookup(n->op_name);
  if (!e && weft__gradient_lookup(n->op_name) != NULL) return weft__gradient_build(g, n, dy, dx);
  if (!e)
    return weft_status_new(WEFT_UNIMPLEMENTED,
                           "No gradient defined for operation '%s' (op type: %s)", n->name,
                           n->op_name);
  gb_t c = {g, NULL};
  if (e->fn) e->fn(&c, n, dy, dx);
  return c.st;
}

/* ---------------------------------------------------------------------------------------------
 * The walk */

static weft_output_t aggregate(gb_t *c, GArray *list) {
  if (!list || list->len == 0) return NONE;
  if (list->len == 1) return g_array_index(list, weft_output_t, 0);
  weft_op_builder_t *b = start(c, "AddN", (const weft_output_t *)(void *)list->data, 0);
  if (b) weft_op_add_input_list(b, (const weft_output_t *)(void *)list->data, (int)list->len);
  return end(c, b, 0);
}

weft_status_t *weft_gradients(weft_graph_t *g, const weft_output_t *ys, int n_ys,
                              const weft_output_t *xs, int n_xs, const weft_output_t *grad_ys,
                              weft_output_t *grads_out) {
  if (!g || (n_ys > 0 && !ys) || (n_xs > 0 && (!xs || !grads_out)) || n_ys < 0 || n_xs < 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_gradients: missing graph, ys or xs");
  for (int i = 0; i < n_xs; i++) grads_out[i] = NONE;
  for (int i = 0; i < n_ys; i++) {
    if (!ys[i].node || ys[i].node->graph != g || ys[i].index < 0 ||
        ys[i].index >= ys[i].node->n_outputs)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_gradients: y %d is not an output of "
                             "this graph", i);
    if (!is_float(dt(ys[i])))
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "weft_gradients: y '%s:%d' is %s; gradients need a float tensor",
                             ys[i].node->name, ys[i].index, weft_dtype_name(dt(ys[i])));
  }
  for (int i = 0; i < n_xs; i++) {
    if (!xs[i].node || xs[i].node->graph != g || xs[i].index < 0 ||
        xs[i].index >= xs[i].node->n_outputs)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_gradients: x %d is not an output of "
                             "this graph", i);
  }

  int n0 = weft_graph_num_nodes(g);
  /* Nodes are created after their data inputs, so creation order is a topological order. */
  guint8 *from_y = g_new0(guint8, n0), *to_x = g_new0(guint8, n0);
  GPtrArray *stack = g_ptr_array_new();
  for (int i = 0; i < n_ys; i++) {
    if (!from_y[ys[i].node->id]) {
      from_y[ys[i].node->id] = 1;
      g_ptr_array_add(stack, ys[i].node);
    }
  }
  while (stack->len) {
    weft_node_t *n = g_ptr_array_steal_index(stack, stack->len - 1);
    for (int k = 0; k < n->n_inputs; k++) {
      weft_node_t *src = n->inputs[k].src;
      if (src->id < n0 && !from_y[src->id]) {
        from_y[src->id] = 1;
        g_ptr_array_add(stack, src);
      }
    }
  }
  g_ptr_array_free(stack, TRUE);
  for (int i = 0; i < n_xs; i++) to_x[xs[i].node->id] = 1;
  /* Until nothing changes: a loop's back edges lead to nodes created before them. */
  for (bool changed = true; changed;) {
    changed = false;
    for (int id = 0; id < n0; id++) {
      weft_node_t *n = weft_graph_node_at(g, id);
      for (int k = 0; k < n->n_inputs && !to_x[id]; k++) {
        int src = n->inputs[k].src->id;
        if (src < n0 && src != id && to_x[src]) to_x[id] = changed = 1;
      }
    }
  }
  /* Resource handles (string scalars in Weft) carry the gradients of their variables. */
  guint8 *handle = weft__grad_handles(g, n0, xs, n_xs);
  weft__cf_grad_t *cf = weft__cf_grad_new(g, n0, from_y, handle);

  /* Per node, per output: the gradients that arrived (weft_output_t arrays). */
  GArray ***arrived = g_new0(GArray **, n0);
  weft_output_t **total = g_new0(weft_output_t *, n0);
  gb_t c = {g, NULL};
  weft_graph_push_name_scope(g, "gradients");

  for (int i = 0; i < n_ys && !c.st; i++) {
    weft_node_t *n = ys[i].node;
    if (!to_x[n->id]) continue;
    weft_output_t gy = grad_ys ? grad_ys[i] : NONE;
    if (!has(gy)) gy = U(&c, "OnesLike", ys[i]);
    if (!arrived[n->id]) arrived[n->id] = g_new0(GArray *, n->n_outputs);
    if (!arrived[n->id][ys[i].index])
      arrived[n->id][ys[i].index] = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
    g_array_append_val(arrived[n->id][ys[i].index], gy);
  }

  for (int id = n0 - 1; id >= 0 && !c.st; id--) {
    /* A while loop's nodes: its gradient loop is built at once, at its last node. */
    if (weft__cf_grad_loop_of(cf, id) > 0) {
      if (weft__cf_grad_loop_due(cf, id))
        fail(&c, weft__cf_grad_loop(cf, id, arrived, from_y, to_x));
      continue;
    }
    if (!from_y[id] || !to_x[id] || !arrived[id]) continue;
    weft_node_t *n = weft_graph_node_at(g, id);
    char *scope = g_strdup_printf("%s_grad", n->name);
    weft_graph_push_name_scope(g, scope);
    g_free(scope);
    total[id] = g_new0(weft_output_t, n->n_outputs);
    bool any = false;
    for (int k = 0; k < n->n_outputs; k++) {
      total[id][k] = aggregate(&c, arrived[id][k]);
      any = any || has(total[id][k]);
    }
    /* Does any float input lead back to an x? */
    bool needed = false;
    for (int k = 0; k < n->n_inputs; k++) {
      weft_node_t *src = n->inputs[k].src;
      if (src->id < id && to_x[src->id] && from_y[src->id] && weft__grad_edge(handle, n, k))
        needed = true;
    }
    if (any && needed && !c.st) {
      const grad_entry_t *e = lookup(n->op_name);
      bool program = !e && weft__gradient_lookup(n->op_name) != NULL;
      if (!e && !program) {
        fail(&c, weft_status_new(WEFT_UNIMPLEMENTED,
                                 "No gradient defined for operation '%s' (op type: %s)", n->name,
                                 n->op_name));
      } else if (program || e->fn) {
        weft_output_t *dx = g_new0(weft_output_t, n->n_inputs > 0 ? n->n_inputs : 1);
        if (program) fail(&c, weft__gradient_build(g, n, total[id], dx));
        else e->fn(&c, n, total[id], dx);
        for (int k = 0; k < n->n_inputs && !c.st; k++) {
          weft_node_t *src = n->inputs[k].src;
          int si = n->inputs[k].src_index;
          if (!has(dx[k]) || src->id >= id || !to_x[src->id] || !from_y[src->id]) continue;
          if (!weft__grad_edge(handle, n, k)) continue;
          if (!arrived[src->id]) arrived[src->id] = g_new0(GArray *, src->n_outputs);
          if (!arrived[src->id][si])
            arrived[src->id][si] = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
          g_array_append_val(arrived[src->id][si], dx[k]);
        }
        g_free(dx);
      }
    }
    weft_graph_pop_name_scope(g);
  }
  weft_graph_pop_name_scope(g);

  if (!c.st) {
    for (int i = 0; i < n_xs; i++) {
      int id = xs[i].node->id;
      if (total[id]) grads_out[i] = total[id][xs[i].index];
    }
  }
  for (int id = 0; id < n0; id++) {
    if (arrived[id]) {
      weft_node_t *n = weft_graph_node_at(g, id);
      for (int k = 0; k < n->n_outputs; k++)
        if (arrived[id][k]) g_array_free(arrived[id][k], TRUE);
      g_free(arrived[id]);
    }
    g_free(total[id]);
  }
  weft__cf_grad_free(cf);
  g_free(arrived);
  g_free(total);
  g_free(from_y);
  g_free(to_x);
  g_free(handle);
  return c.st;
}
