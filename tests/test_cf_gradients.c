/* test_cf_gradients.c: weft_gradients through TensorFlow 1.x control flow (conds, nested conds,
 * while loops: x^n, a tanh recurrence over a TensorArray, a loop-invariant variable read;
 * resource variables read directly, gathered, in a cond and in loops, trained with Adam, and a
 * TF2 Keras SavedModel's) checked against central finite differences of the forward graph or
 * derivatives written out here, computed in double, and the refusals (UNIMPLEMENTED naming the
 * node). The graphs are built with the C graph API the way TensorFlow's tf.cond and
 * tf.while_loop lay them out, back edges linked as an import does. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define OK(expr)                                                                               \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                                \
  } while (0)

static const weft_output_t NONE = {NULL, 0};

static weft_node_t *build(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

/* op(x) or op(x, y). */
static weft_output_t op(weft_graph_t *g, const char *name, weft_output_t x, weft_output_t y) {
  weft_op_builder_t *b = weft_op_new(g, name, NULL);
  weft_op_add_input(b, x);
  if (y.node) weft_op_add_input(b, y);
  return weft_out(build(b), 0);
}

static weft_output_t cst(weft_graph_t *g, weft_dtype_t dt, int rank, const int64_t *dims,
                         const double *v) {
  weft_tensor_t *t = weft_tensor_new(dt, rank, dims);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) {
    if (dt == WEFT_DT_DOUBLE) ((double *)weft_tensor_data(t))[i] = v[i];
    else ((int32_t *)weft_tensor_data(t))[i] = (int32_t)v[i];
  }
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, "c", t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t scalar_d(weft_graph_t *g, double v) {
  return cst(g, WEFT_DT_DOUBLE, 0, NULL, &v);
}

static weft_output_t scalar_i(weft_graph_t *g, int v) {
  double d = v;
  return cst(g, WEFT_DT_INT32, 0, NULL, &d);
}

static weft_output_t placeholder(weft_graph_t *g, const char *name, weft_dtype_t dt, int rank,
                                 const int64_t *dims) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_placeholder(g, name, dt, rank, dims, &st);
  OK(st);
  return o;
}

static weft_node_t *switch_node(weft_graph_t *g, weft_output_t x, weft_output_t pred) {
  weft_op_builder_t *b = weft_op_new(g, "Switch", NULL);
  weft_op_add_input(b, x);
  weft_op_add_input(b, pred);
  return build(b);
}

static weft_output_t merge(weft_graph_t *g, weft_output_t a, weft_output_t b_in) {
  weft_output_t ins[2] = {a, b_in};
  weft_op_builder_t *b = weft_op_new(g, "Merge", NULL);
  weft_op_add_input_list(b, ins, 2);
  return weft_out(build(b), 0);
}

static weft_output_t enter(weft_graph_t *g, weft_output_t x, const char *frame, bool is_const,
                           int parallel) {
  weft_op_builder_t *b = weft_op_new(g, x.node->output_types[x.index] >= WEFT_DT_REF_OFFSET
                                            ? "RefEnter" : "Enter", NULL);
  weft_op_add_input(b, x);
  weft_op_set_attr_string(b, "frame_name", frame);
  weft_op_set_attr_bool(b, "is_constant", is_const);
  weft_op_set_attr_int(b, "parallel_iterations", parallel);
  return weft_out(build(b), 0);
}

/* A while loop under construction: loop variables are opened (Enter + Merge), the predicate set
 * from the Merges, the variables switched, and closed with their next values. */
typedef struct loop {
  weft_graph_t *g;
  const char *frame;
  int parallel;
  int n;
  weft_node_t *merges[4];
  weft_node_t *switches[4];
  weft_output_t cond;
} loop_t;

static weft_output_t loop_var(loop_t *l, weft_output_t init) {
  weft_output_t e = enter(l->g, init, l->frame, false, l->parallel);
  weft_output_t m = merge(l->g, e, e);
  l->merges[l->n++] = m.node;
  return m;
}

static void loop_cond(loop_t *l, weft_output_t pred) { l->cond = op(l->g, "LoopCond", pred, NONE); }

/* The body's view of variable k (Identity of the Switch's true output, as TensorFlow). */
static weft_output_t loop_body(loop_t *l, int k) {
  l->switches[k] = switch_node(l->g, weft_out(l->merges[k], 0), l->cond);
  return op(l->g, "Identity", weft_out(l->switches[k], 1), NONE);
}

/* Closes variable k with its next value; returns its Exit. */
static weft_output_t loop_close(loop_t *l, int k, weft_output_t next) {
  weft_output_t ni = op(l->g, "NextIteration", next, NONE);
  l->merges[k]->inputs[1].src = ni.node;
  l->merges[k]->inputs[1].src_index = 0;
  l->merges[k]->output_ranks[0] = -1;
  return op(l->g, "Exit", weft_out(l->switches[k], 0), NONE);
}

static weft_output_t invariant(loop_t *l, weft_output_t x) {
  return enter(l->g, x, l->frame, true, l->parallel);
}

static weft_output_t sum_all(weft_graph_t *g, weft_output_t x, int rank) {
  double axes[4] = {0, 1, 2, 3};
  int64_t n = rank;
  weft_output_t a = cst(g, WEFT_DT_INT32, 1, &n, axes);
  weft_op_builder_t *b = weft_op_new(g, "Sum", NULL);
  weft_op_add_input(b, x);
  weft_op_add_input(b, a);
  return weft_out(build(b), 0);
}

static char *tname(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

/* Feeds for one run: names, tensors. Feed 0 is the one differentiated. */
typedef struct feeds {
  int n;
  const char *names[4];
  weft_tensor_t *t[4];
} feeds_t;

static double run_scalar(weft_session_t *s, const feeds_t *f, weft_output_t y) {
  char *name = tname(y);
  const char *fetch = name;
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, f->names, f->t, f->n, &fetch, &out, 1, NULL, 0));
  double v = weft_tensor_get_double(out, 0);
  weft_tensor_unref(out);
  g_free(name);
  return v;
}

/* Checks d loss / d feed 0 (gradient output grad) against central differences of loss. */
static void check_fd(weft_graph_t *g, const feeds_t *f, weft_output_t loss, weft_output_t grad,
                     const char *label) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  char *gname = tname(grad);
  const char *fetch = gname;
  weft_tensor_t *gt = NULL;
  OK(weft_session_run(s, f->names, f->t, f->n, &fetch, &gt, 1, NULL, 0));
  weft_tensor_t *x = f->t[0];
  int64_t n = weft_tensor_num_elements(x);
  g_assert_cmpint(weft_tensor_num_elements(gt), ==, n);
  double *xv = weft_tensor_data(x);
  const double eps = 1e-6;
  for (int64_t k = 0; k < n; k++) {
    double orig = xv[k];
    xv[k] = orig + eps;
    double fp = run_scalar(s, f, loss);
    xv[k] = orig - eps;
    double fm = run_scalar(s, f, loss);
    xv[k] = orig;
    double num = (fp - fm) / (2 * eps);
    double sym = weft_tensor_get_double(gt, k);
    if (fabs(num - sym) > 1e-6 * fmax(1.0, fabs(num)))
      g_error("%s: d/dx[%" G_GINT64_FORMAT "]: symbolic %.9g, numeric %.9g", label, k, sym, num);
  }
  weft_tensor_unref(gt);
  g_free(gname);
  weft_session_free(s);
}

static weft_tensor_t *dtensor(int rank, const int64_t *dims, const double *v) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_DOUBLE, rank, dims);
  memcpy(weft_tensor_data(t), v, sizeof(double) * (size_t)weft_tensor_num_elements(t));
  return t;
}

static weft_tensor_t *btensor(bool v) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_BOOL, 0, NULL);
  *(bool *)weft_tensor_data(t) = v;
  return t;
}

static void free_feeds(feeds_t *f) {
  for (int i = 0; i < f->n; i++) weft_tensor_unref(f->t[i]);
}

/* tf.cond(p, lambda: 3 x^2, lambda: sin x) + x: each branch's gradient in turn, and the
 * gradient that bypasses the cond added to it. */
static void test_cond(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t d3 = 3;
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 1, &d3);
  weft_output_t p = placeholder(g, "p", WEFT_DT_BOOL, 0, NULL);
  weft_node_t *s = switch_node(g, x, p);
  weft_output_t t = op(g, "Mul", op(g, "Square", weft_out(s, 1), NONE), scalar_d(g, 3));
  weft_output_t f = op(g, "Sin", weft_out(s, 0), NONE);
  weft_output_t m = merge(g, f, t);
  double wv[3] = {0.5, -1.5, 2.0};
  weft_output_t y = op(g, "AddV2", op(g, "Mul", m, cst(g, WEFT_DT_DOUBLE, 1, &d3, wv)), x);
  weft_output_t loss = sum_all(g, y, 1);
  weft_output_t grad;
  OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &grad));
  double xv[3] = {0.3, -0.7, 1.1};
  for (int branch = 0; branch < 2; branch++) {
    feeds_t fd = {2, {"x", "p"}, {dtensor(1, &d3, xv), btensor(branch)}};
    check_fd(g, &fd, loss, grad, branch ? "cond (true branch)" : "cond (false branch)");
    /* And the formula: 6 x w + 1 or cos(x) w + 1. */
    weft_status_t *st = NULL;
    weft_session_t *sess = weft_session_new(g, NULL, &st);
    OK(st);
    char *gn = tname(grad);
    const char *fetch = gn;
    weft_tensor_t *gt = NULL;
    OK(weft_session_run(sess, fd.names, fd.t, 2, &fetch, &gt, 1, NULL, 0));
    for (int k = 0; k < 3; k++) {
      double want = (branch ? 6 * xv[k] : cos(xv[k])) * wv[k] + 1;
      g_assert_cmpfloat(fabs(weft_tensor_get_double(gt, k) - want), <, 1e-12);
    }
    weft_tensor_unref(gt);
    g_free(gn);
    weft_session_free(sess);
    free_feeds(&fd);
  }
  weft_graph_free(g);
}

/* cond(p, cond(q, exp x, x^2 * 0.5), sin x) on a scalar: all four (p, q). */
static void test_nested_cond(void) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  weft_output_t p = placeholder(g, "p", WEFT_DT_BOOL, 0, NULL);
  weft_output_t q = placeholder(g, "q", WEFT_DT_BOOL, 0, NULL);
  weft_node_t *so = switch_node(g, x, p);
  weft_node_t *si = switch_node(g, weft_out(so, 1), q);
  weft_output_t inner = merge(g, op(g, "Mul", op(g, "Square", weft_out(si, 0), NONE),
                                    scalar_d(g, 0.5)),
                              op(g, "Exp", weft_out(si, 1), NONE));
  weft_output_t outer = merge(g, op(g, "Sin", weft_out(so, 0), NONE), inner);
  weft_output_t loss = op(g, "Mul", outer, x);
  weft_output_t grad;
  OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &grad));
  for (int c = 0; c < 4; c++) {
    double xv = 0.7;
    feeds_t fd = {3, {"x", "p", "q"}, {dtensor(0, NULL, &xv), btensor(c & 1), btensor(c & 2)}};
    char *label = g_strdup_printf("nested cond (p=%d, q=%d)", c & 1, (c & 2) != 0);
    check_fd(g, &fd, loss, grad, label);
    g_free(label);
    free_feeds(&fd);
  }
  weft_graph_free(g);
}

/* while i < n: r = r * x: x^n, d/dx = n x^(n-1), x entering as a loop invariant. */
static void test_while_pow(void) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  loop_t l = {g, "pow", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, scalar_d(g, 1.0));
  loop_cond(&l, op(g, "Less", i, invariant(&l, scalar_i(g, 5))));
  weft_output_t bi = loop_body(&l, 0), br = loop_body(&l, 1);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t r = loop_close(&l, 1, op(g, "Mul", br, invariant(&l, x)));
  weft_output_t grad;
  OK(weft_gradients(g, &r, 1, &x, 1, NULL, &grad));
  double xv = 1.3;
  feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
  check_fd(g, &fd, r, grad, "while x^5");
  double got = 0;
  {
    weft_status_t *st = NULL;
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    got = run_scalar(s, &fd, grad);
    weft_session_free(s);
  }
  g_assert_cmpfloat(fabs(got - 5 * pow(xv, 4)), <, 1e-12);
  free_feeds(&fd);
  weft_graph_free(g);
}

enum { T = 4, H = 3 };

/* h = tanh(h W + x_t) over x_t read from a TensorArray (a dynamic_rnn's loop), loss = sum(h_T *
 * v); the gradients with respect to W (an invariant, summed over the steps) and h_0 (a loop
 * variable) against the recurrence computed here. */
static const double rnn_w[H * H] = {0.5, -0.3, 0.2, 0.1, 0.4, -0.6, -0.2, 0.3, 0.25};
static const double rnn_h0[H] = {0.1, -0.2, 0.3};
static const double rnn_x[T * H] = {0.5, -0.1, 0.2,  -0.4, 0.3,  0.1,
                                     0.2, 0.2,  -0.3, 0.05, -0.5, 0.4};
static const double rnn_v[H] = {0.7, -1.2, 0.4};

static double rnn_loss(const double *w, const double *h0, const double *xs, const double *v) {
  double h[H];
  memcpy(h, h0, sizeof h);
  for (int t = 0; t < T; t++) {
    double nh[H];
    for (int j = 0; j < H; j++) {
      double a = xs[t * H + j];
      for (int k = 0; k < H; k++) a += h[k] * w[k * H + j];
      nh[j] = tanh(a);
    }
    memcpy(h, nh, sizeof h);
  }
  double loss = 0;
  for (int j = 0; j < H; j++) loss += h[j] * v[j];
  return loss;
}

/* The recurrence's graph on W (a placeholder, or a variable's read): h0 and xs placeholders, the
 * loss, and the gradients with respect to W and h0. */
typedef struct rnn {
  weft_output_t w, loss, grads[2];
  /* Or W a resource variable (its handle, the x of dW), read inside the loop on the handle's
   * device (NULL: anywhere) each iteration, or once before the loop when read_outside. */
  weft_output_t handle;
  const char *handle_device;
  bool read_outside;
} rnn_t;

static void rnn_build(weft_graph_t *g, rnn_t *r) {
  int64_t hd[2] = {1, H}, xd[3] = {T, 1, H}, td = T;
  weft_output_t h0 = placeholder(g, "h0", WEFT_DT_DOUBLE, 2, hd);
  weft_output_t x = placeholder(g, "xs", WEFT_DT_DOUBLE, 3, xd);
  weft_op_builder_t *b = weft_op_new(g, "TensorArrayV3", NULL);
  weft_op_add_input(b, scalar_i(g, T));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_node_t *ta = build(b);
  double idx[T] = {0, 1, 2, 3};
  b = weft_op_new(g, "TensorArrayScatterV3", NULL);
  weft_op_add_input(b, weft_out(ta, 0));
  weft_op_add_input(b, cst(g, WEFT_DT_INT32, 1, &td, idx));
  weft_op_add_input(b, x);
  weft_op_add_input(b, weft_out(ta, 1));
  weft_output_t flow = weft_out(build(b), 0);

  loop_t l = {g, "rnn", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, h0);
  loop_cond(&l, op(g, "Less", i, invariant(&l, scalar_i(g, T))));
  weft_output_t bi = loop_body(&l, 0), bh = loop_body(&l, 1);
  b = weft_op_new(g, "TensorArrayReadV3", NULL);
  weft_op_add_input(b, invariant(&l, weft_out(ta, 0)));
  weft_op_add_input(b, bi);
  weft_op_add_input(b, invariant(&l, flow));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_output_t xt = weft_out(build(b), 0);
  weft_status_t *st = NULL;
  weft_output_t w_in;
  if (r->handle.node) {
    if (r->handle_device) weft_graph_push_device(g, r->handle_device);
    weft_op_builder_t *rb = weft_op_new(g, "ReadVariableOp", NULL);
    weft_op_add_input(rb, r->read_outside ? r->handle : invariant(&l, r->handle));
    weft_op_set_attr_type(rb, "dtype", WEFT_DT_DOUBLE);
    w_in = weft_out(build(rb), 0);
    if (r->read_outside) w_in = invariant(&l, w_in);
    if (r->handle_device) weft_graph_pop_device(g);
  } else {
    w_in = invariant(&l, r->w);
  }
  weft_output_t hw = weft_matmul(g, "hw", bh, w_in, false, false, &st);
  OK(st);
  weft_output_t hn = op(g, "Tanh", op(g, "AddV2", hw, xt), NONE);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t hT = loop_close(&l, 1, hn);
  r->loss = sum_all(g, op(g, "Mul", hT, cst(g, WEFT_DT_DOUBLE, 2, hd, rnn_v)), 2);
  weft_output_t wrt[2] = {r->handle.node ? r->handle : r->w, h0};
  OK(weft_gradients(g, &r->loss, 1, wrt, 2, NULL, r->grads));
}

/* Checks the loss and d loss / dW of a session against the recurrence computed here. */
static void rnn_check(weft_session_t *s, const rnn_t *r, const feeds_t *fd) {
  g_assert_cmpfloat(fabs(run_scalar(s, fd, r->loss) - rnn_loss(rnn_w, rnn_h0, rnn_x, rnn_v)), <,
                    1e-12);
  char *gn = tname(r->grads[0]);
  const char *fetch = gn;
  weft_tensor_t *gt = NULL;
  OK(weft_session_run(s, fd->names, fd->t, fd->n, &fetch, &gt, 1, NULL, 0));
  for (int k = 0; k < H * H; k++) {
    double wp[H * H], wm[H * H];
    memcpy(wp, rnn_w, sizeof wp);
    memcpy(wm, rnn_w, sizeof wm);
    wp[k] += 1e-6, wm[k] -= 1e-6;
    double num =
        (rnn_loss(wp, rnn_h0, rnn_x, rnn_v) - rnn_loss(wm, rnn_h0, rnn_x, rnn_v)) / 2e-6;
    g_assert_cmpfloat(fabs(weft_tensor_get_double(gt, k) - num), <, 1e-7);
  }
  weft_tensor_unref(gt);
  g_free(gn);
}

static void test_while_rnn(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t wd[2] = {H, H}, hd[2] = {1, H}, xd[3] = {T, 1, H};
  rnn_t r = {.w = placeholder(g, "W", WEFT_DT_DOUBLE, 2, wd)};
  rnn_build(g, &r);
  for (int which = 0; which < 2; which++) {
    feeds_t fd = {3, {"W", "h0", "xs"},
                  {dtensor(2, wd, rnn_w), dtensor(2, hd, rnn_h0), dtensor(3, xd, rnn_x)}};
    if (which == 1) {
      fd.names[0] = "h0", fd.names[1] = "W";
      weft_tensor_t *tmp = fd.t[0];
      fd.t[0] = fd.t[1], fd.t[1] = tmp;
    }
    check_fd(g, &fd, r.loss, r.grads[which], which ? "while rnn d/dh0" : "while rnn d/dW");
    free_feeds(&fd);
  }
  feeds_t fd = {3, {"W", "h0", "xs"},
                {dtensor(2, wd, rnn_w), dtensor(2, hd, rnn_h0), dtensor(3, xd, rnn_x)}};
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  rnn_check(s, &r, &fd);
  weft_session_free(s);
  free_feeds(&fd);
  weft_graph_free(g);
}

/* The recurrence on a worker, its weights a variable on a ps (a dynamic_rnn as
 * replica_device_setter places it), on real weftd processes: the variable's read crosses to the
 * worker before the loop (the _Recv outside the frame), the loop runs on the worker, and the
 * gradient loop's dW goes back to the ps for a GradientDescent step checked here. */
/* Runs y with x fed and returns the status; *out gets y's value when it ran. */
static weft_status_t *run_on(weft_session_t *s, double xv, weft_output_t y, double *out) {
  feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
  char *yname = tname(y);
  const char *fetch = yname;
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft_session_run(s, fd.names, fd.t, 1, &fetch, &t, 1, NULL, 0);
  if (!st) *out = weft_tensor_get_double(t, 0);
  weft_tensor_unref(t);
  g_free(yname);
  free_feeds(&fd);
  return st;
}

/* Opens `inner` in `outer`'s body (bi, br its counter and variable there): a counter from bi to
 * bi + 2 and a variable from br, all entered from the outer frame as a tf.while_loop inside
 * another's body reads them; closes the counter and returns the inner body's variable. */
static weft_output_t open_inner(loop_t *outer, loop_t *inner, weft_output_t bi, weft_output_t br) {
  weft_graph_t *g = outer->g;
  weft_output_t j = loop_var(inner, op(g, "Identity", bi, NONE));
  loop_var(inner, br);
  weft_output_t two = op(g, "AddV2", bi, invariant(outer, scalar_i(g, 2)));
  loop_cond(inner, op(g, "Less", j, invariant(inner, two)));
  weft_output_t bj = loop_body(inner, 0), bs = loop_body(inner, 1);
  loop_close(inner, 0, op(g, "AddV2", bj, invariant(inner, op(g, "OnesLike", two, NONE))));
  return bs;
}

/* Opens loop l with a counter i < trips and a variable fed as "x"; returns the body's i (the
 * caller switches x with loop_body(l, 1)). */
static weft_output_t open_counted(loop_t *l, int trips) {
  weft_output_t x = placeholder(l->g, "x", WEFT_DT_DOUBLE, 0, NULL);
  weft_output_t i = loop_var(l, scalar_i(l->g, 0));
  loop_var(l, x);
  loop_cond(l, op(l->g, "Less", i, invariant(l, scalar_i(l->g, trips))));
  return loop_body(l, 0);
}

/* A loop on the worker whose body squares on the ps (a node of the frame on another task, both
 * ways across every iteration): x^8 after three iterations. */
static void span_loop(const char *target) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/job:worker/task:0");
  loop_t l = {g, "span", 10, 0, {0}, {0}, NONE};
  weft_output_t bi = open_counted(&l, 3), bx = loop_body(&l, 1);
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_op_builder_t *b = weft_op_new(g, "Mul", "remote_mul");
  weft_op_add_input(b, bx);
  weft_op_add_input(b, bx);
  weft_output_t sq = weft_out(build(b), 0);
  weft_graph_pop_device(g);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t y = loop_close(&l, 1, sq);
  weft_graph_pop_device(g);
  weft_session_t *s = weftd_remote_session(g, target);
  const double xv = 1.1;
  double want = xv, got = 0;
  for (int k = 0; k < 3; k++) want = want * want;
  for (int run = 0; run < 2; run++) { /* the second run reuses the registered partitions */
    OK(run_on(s, xv, y, &got));
    g_assert_cmpfloat(got, ==, want);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

static weft_output_t var_handle(weft_graph_t *g, const char *name, weft_dtype_t dt, int rank,
                                const int64_t *dims) {
  weft_op_builder_t *b = weft_op_new(g, "VarHandleOp", name);
  weft_op_set_attr_type(b, "dtype", dt);
  weft_op_set_attr_shape(b, "shape", rank, dims);
  return weft_out(build(b), 0);
}

static weft_output_t read_handle(weft_graph_t *g, weft_output_t h, weft_dtype_t dt) {
  weft_op_builder_t *b = weft_op_new(g, "ReadVariableOp", NULL);
  weft_op_add_input(b, h);
  weft_op_set_attr_type(b, "dtype", dt);
  return weft_out(build(b), 0);
}

static const char *assign_handle(weft_graph_t *g, weft_output_t h, weft_output_t v,
                                 weft_dtype_t dt) {
  weft_op_builder_t *b = weft_op_new(g, "AssignVariableOp", NULL);
  weft_op_add_input(b, h);
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "dtype", dt);
  return weft_node_name(build(b));
}

/* Resource variables on the ps read inside a loop on the worker (ReadVariableOp, ResourceGather
 * and the handle's Enter colocate with its VarHandleOp, so they are nodes of the frame on the
 * ps): in the body, r = r * w + x + emb[i], with the trip count n a variable read by the loop's
 * condition; against the same recurrence here, for two values of n. */
static void resource_loop(const char *target) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t w = var_handle(g, "xloop_w", WEFT_DT_DOUBLE, 0, NULL);
  weft_output_t n = var_handle(g, "xloop_n", WEFT_DT_INT32, 0, NULL);
  int64_t ed = 8;
  const double emb[8] = {0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0};
  weft_output_t e = var_handle(g, "xloop_emb", WEFT_DT_DOUBLE, 1, &ed);
  const char *init_w = assign_handle(g, w, scalar_d(g, 1.5), WEFT_DT_DOUBLE);
  const char *init_e = assign_handle(g, e, cst(g, WEFT_DT_DOUBLE, 1, &ed, emb), WEFT_DT_DOUBLE);
  const char *init_n[2] = {assign_handle(g, n, scalar_i(g, 4), WEFT_DT_INT32),
                           assign_handle(g, n, scalar_i(g, 7), WEFT_DT_INT32)};
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:0");
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  loop_t l = {g, "resloop", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, scalar_d(g, 1.0));
  /* Reads go on the handle's device, as TensorFlow's ResourceVariable.value() puts them. */
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t limit = read_handle(g, invariant(&l, n), WEFT_DT_INT32);
  weft_graph_pop_device(g);
  loop_cond(&l, op(g, "Less", i, limit));
  weft_output_t bi = loop_body(&l, 0), br = loop_body(&l, 1);
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t wv = read_handle(g, invariant(&l, w), WEFT_DT_DOUBLE);
  /* An embedding row picked by the worker's counter: the index crosses to the ps, the row back. */
  weft_op_builder_t *b = weft_op_new(g, "ResourceGather", NULL);
  weft_op_add_input(b, invariant(&l, e));
  weft_op_add_input(b, bi);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_output_t row = weft_out(build(b), 0);
  weft_graph_pop_device(g);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t r = loop_close(
      &l, 1, op(g, "AddV2", op(g, "AddV2", op(g, "Mul", br, wv), invariant(&l, x)), row));
  weft_graph_pop_device(g);
  weft_session_t *s = weftd_remote_session(g, target);
  const double xv = 0.25;
  for (int trips = 0; trips < 2; trips++) {
    const char *targets[3] = {init_w, init_e, init_n[trips]};
    OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 3));
    double want = 1, got = 0;
    for (int k = 0; k < (trips ? 7 : 4); k++) want = want * 1.5 + xv + emb[k];
    OK(run_on(s, xv, r, &got));
    g_assert_cmpfloat(got, ==, want);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

/* Two loops on the worker, one in the other (2 outer iterations, 2 inner ones each), the inner
 * body squaring on the ps: x^16, so the ps runs both frames' control loops, the inner one
 * started once per outer iteration. Then refused, naming the node and the frame: the outer
 * loop's Switch on the ps, away from its LoopCond's task. */
static void nested_and_refused(const char *target) {
  for (int which = 0; which < 2; which++) {
    weft_graph_t *g = weft_graph_new();
    weft_graph_push_device(g, "/job:worker/task:0");
    loop_t l = {g, "outer", 10, 0, {0}, {0}, NONE};
    weft_output_t bi = open_counted(&l, 2);
    if (which == 1) weft_graph_push_device(g, "/job:ps/task:0");
    weft_output_t br = loop_body(&l, 1);
    if (which == 1) weft_graph_pop_device(g);
    weft_output_t next = op(g, "Square", br, NONE);
    if (which == 0) {
      loop_t inner = {g, "inner", 10, 0, {0}, {0}, NONE};
      weft_output_t bs = open_inner(&l, &inner, bi, br);
      weft_graph_push_device(g, "/job:ps/task:0");
      weft_output_t sq = op(g, "Square", bs, NONE);
      weft_graph_pop_device(g);
      next = loop_close(&inner, 1, sq);
    }
    loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
    weft_output_t y = loop_close(&l, 1, next);
    weft_graph_pop_device(g);
    weft_session_t *s = weftd_remote_session(g, target);
    const double xv = 1.01;
    double got = 0;
    weft_status_t *st = run_on(s, xv, y, &got);
    if (which == 0) {
      OK(st);
      double want = xv;
      for (int k = 0; k < 4; k++) want = want * want;
      g_assert_cmpfloat(got, ==, want);
    } else {
      g_assert_nonnull(st);
      g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
      char *want = g_strdup_printf(
          "Node '%s' (Switch) on /job:ps/replica:0/task:0/device:CPU:0 is part of while loop "
          "frame 'outer', whose LoopCond '%s' is on /job:worker/replica:0/task:0: a loop's Merge, "
          "Switch, NextIteration, Exit and LoopCond nodes and its non-constant Enters must be on "
          "the LoopCond's task (its body and condition may span tasks)",
          weft_node_name(l.switches[1]), weft_node_name(l.cond.node));
      g_assert_cmpstr(weft_status_message(st), ==, want);
      g_free(want);
      weft_status_free(st);
    }
    weft_session_free(s);
    weft_graph_free(g);
  }
}

static void test_cross_task_loops(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  span_loop(c.target[1]);
  resource_loop(c.target[1]);
  nested_and_refused(c.target[1]);
  weftd_cluster_stop(&c);
}

/* d rnn_loss / dW at w, by central differences. */
static void rnn_dw(const double *w, double *dw) {
  for (int k = 0; k < H * H; k++) {
    double wp[H * H], wm[H * H];
    memcpy(wp, w, sizeof wp);
    memcpy(wm, w, sizeof wm);
    wp[k] += 1e-6, wm[k] -= 1e-6;
    dw[k] = (rnn_loss(wp, rnn_h0, rnn_x, rnn_v) - rnn_loss(wm, rnn_h0, rnn_x, rnn_v)) / 2e-6;
  }
}

/* One GradientDescent step of learning rate 0.1 on the recurrence's W. */
static void rnn_sgd_step(const double *w, double *next) {
  double dw[H * H];
  rnn_dw(w, dw);
  for (int k = 0; k < H * H; k++) next[k] = w[k] - 0.1 * dw[k];
}

static void test_while_rnn_cluster(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  int64_t wd[2] = {H, H}, hd[2] = {1, H}, xd[3] = {T, 1, H};
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  rnn_t r = {.w = weft_variable(g, "W", cst(g, WEFT_DT_DOUBLE, 2, wd, rnn_w), &st)};
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:0");
  weft_node_t *init = weft_global_variables_initializer(g, NULL, &st);
  OK(st);
  rnn_build(g, &r);
  weft_graph_pop_device(g);
  /* The update colocates with W on the ps; dW comes from the worker's gradient loop. */
  weft_optimizer_spec_t sgd = weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1);
  weft_node_t *train = NULL;
  OK(weft_minimize(g, r.loss, &sgd, NULL, 0, NULL, &train));
  /* The ps is the master: nodes without a device (the update's gradient) default to it, and
   * the gradient loop must still follow the loop to the worker. */
  weft_session_t *s = weftd_remote_session(g, c.target[0]);
  const char *init_name = weft_node_name(init);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init_name, 1));
  feeds_t fd = {2, {"h0", "xs"}, {dtensor(2, hd, rnn_h0), dtensor(3, xd, rnn_x)}};
  rnn_check(s, &r, &fd);
  /* One step: W on the ps becomes W - 0.1 dW, dW by differences of the recurrence here. */
  const char *train_name = weft_node_name(train);
  OK(weft_session_run(s, fd.names, fd.t, fd.n, NULL, NULL, 0, &train_name, 1));
  char *wname = tname(r.w);
  const char *fetch = wname;
  weft_tensor_t *wt = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &wt, 1, NULL, 0));
  double next[H * H];
  rnn_sgd_step(rnn_w, next);
  for (int k = 0; k < H * H; k++)
    g_assert_cmpfloat(fabs(weft_tensor_get_double(wt, k) - next[k]), <, 1e-8);
  weft_tensor_unref(wt);
  g_free(wname);
  weft_session_free(s);
  free_feeds(&fd);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* The recurrence with W a resource variable on the ps read inside the worker's loop (a
 * dynamic_rnn's weights as TensorFlow 2-style variables under replica_device_setter): the read,
 * and its part of the gradient loop, run in the frame on the ps each iteration. The loss and dW
 * against the recurrence here, then a ResourceApplyGradientDescent step on the ps, twice: W
 * must follow W - 0.1 dW computed here from differences. */
static void test_resource_rnn_cluster(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  int64_t wd[2] = {H, H}, hd[2] = {1, H}, xd[3] = {T, 1, H};
  weft_graph_push_device(g, "/job:ps/task:0");
  rnn_t r = {.handle = var_handle(g, "rnn_w", WEFT_DT_DOUBLE, 2, wd),
             .handle_device = "/job:ps/task:0"};
  const char *init = assign_handle(g, r.handle, cst(g, WEFT_DT_DOUBLE, 2, wd, rnn_w),
                                   WEFT_DT_DOUBLE);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:0");
  rnn_build(g, &r);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_op_builder_t *b = weft_op_new(g, "ResourceApplyGradientDescent", "apply_w");
  weft_op_add_input(b, r.handle);
  weft_op_add_input(b, scalar_d(g, 0.1));
  weft_op_add_input(b, r.grads[0]);
  const char *train = weft_node_name(build(b));
  weft_output_t w_now = read_handle(g, r.handle, WEFT_DT_DOUBLE);
  weft_graph_pop_device(g);
  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1));
  double w[H * H];
  memcpy(w, rnn_w, sizeof w);
  feeds_t fd = {2, {"h0", "xs"}, {dtensor(2, hd, rnn_h0), dtensor(3, xd, rnn_x)}};
  for (int step = 0; step < 2; step++) {
    g_assert_cmpfloat(fabs(run_scalar(s, &fd, r.loss) - rnn_loss(w, rnn_h0, rnn_x, rnn_v)), <,
                      1e-12);
    OK(weft_session_run(s, fd.names, fd.t, fd.n, NULL, NULL, 0, &train, 1));
    double next[H * H];
    rnn_sgd_step(w, next);
    char *wname = tname(w_now);
    const char *fetch = wname;
    weft_tensor_t *wt = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &wt, 1, NULL, 0));
    for (int k = 0; k < H * H; k++) {
      g_assert_cmpfloat(fabs(weft_tensor_get_double(wt, k) - next[k]), <, 1e-8);
      w[k] = weft_tensor_get_double(wt, k);
    }
    weft_tensor_unref(wt);
    g_free(wname);
  }
  weft_session_free(s);
  free_feeds(&fd);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * Resource variables: gradients with respect to the handle are the dense gradients of the
 * variable's value (resource_variable_ops.py's _ReadGrad, _GatherGrad made dense), every read
 * adding its part, against references derived by hand here. */

/* o's value in session s (fd: feeds, or NULL); the caller unrefs it. */
static weft_tensor_t *fetch(weft_session_t *s, const feeds_t *fd, weft_output_t o) {
  char *name = tname(o);
  const char *fetch_name = name;
  weft_tensor_t *t = NULL;
  OK(weft_session_run(s, fd ? fd->names : NULL, fd ? fd->t : NULL, fd ? fd->n : 0, &fetch_name,
                      &t, 1, NULL, 0));
  g_free(name);
  return t;
}

static void assert_tensor(weft_tensor_t *t, const double *want, int64_t n, double tol,
                          const char *label) {
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  for (int64_t k = 0; k < n; k++)
    if (fabs(weft_tensor_get_double(t, k) - want[k]) > tol)
      g_error("%s[%" G_GINT64_FORMAT "]: got %.12g, want %.12g", label, k,
              weft_tensor_get_double(t, k), want[k]);
  weft_tensor_unref(t);
}

static weft_session_t *init_session(weft_graph_t *g, const char *const *init, int n) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, n));
  return s;
}

/* loss = sum((x W + b - t)^2) + 0.5 sum(W * W), W read twice: dW = x^T 2(y - t) + W, db the
 * column sums of 2(y - t); a variable the loss does not read gets no gradient (NULL). */
static void test_resource_linear(void) {
  enum { N = 2, I = 3, O = 2 };
  static const double xv[N * I] = {0.5, -1.0, 2.0, 1.5, 0.25, -0.5};
  static const double tv[N * O] = {1.0, -2.0, 0.5, 0.75};
  static const double wv[I * O] = {0.3, -0.2, 0.1, 0.4, -0.5, 0.6};
  static const double bv[O] = {0.05, -0.1};
  int64_t xd[2] = {N, I}, wd[2] = {I, O}, bd = O, td[2] = {N, O};
  weft_graph_t *g = weft_graph_new();
  weft_output_t w = var_handle(g, "lin_w", WEFT_DT_DOUBLE, 2, wd);
  weft_output_t b = var_handle(g, "lin_b", WEFT_DT_DOUBLE, 1, &bd);
  weft_output_t unused = var_handle(g, "lin_unused", WEFT_DT_DOUBLE, 0, NULL);
  const char *init[2] = {assign_handle(g, w, cst(g, WEFT_DT_DOUBLE, 2, wd, wv), WEFT_DT_DOUBLE),
                         assign_handle(g, b, cst(g, WEFT_DT_DOUBLE, 1, &bd, bv), WEFT_DT_DOUBLE)};
  weft_status_t *st = NULL;
  weft_output_t y = weft_matmul(g, "y", cst(g, WEFT_DT_DOUBLE, 2, xd, xv),
                                read_handle(g, w, WEFT_DT_DOUBLE), false, false, &st);
  OK(st);
  y = op(g, "AddV2", y, read_handle(g, b, WEFT_DT_DOUBLE));
  weft_output_t diff = op(g, "Sub", y, cst(g, WEFT_DT_DOUBLE, 2, td, tv));
  weft_output_t w2 = read_handle(g, w, WEFT_DT_DOUBLE);
  weft_output_t loss = op(g, "AddV2", sum_all(g, op(g, "Mul", diff, diff), 2),
                          op(g, "Mul", scalar_d(g, 0.5), sum_all(g, op(g, "Mul", w2, w2), 2)));
  weft_output_t xs[3] = {w, b, unused}, grads[3];
  OK(weft_gradients(g, &loss, 1, xs, 3, NULL, grads));
  g_assert_null(grads[2].node);
  double dy[N * O], dw[I * O], db[O] = {0};
  for (int n = 0; n < N; n++)
    for (int o = 0; o < O; o++) {
      double v = bv[o] - tv[n * O + o];
      for (int i = 0; i < I; i++) v += xv[n * I + i] * wv[i * O + o];
      dy[n * O + o] = 2 * v;
      db[o] += 2 * v;
    }
  for (int i = 0; i < I; i++)
    for (int o = 0; o < O; o++) {
      dw[i * O + o] = wv[i * O + o];
      for (int n = 0; n < N; n++) dw[i * O + o] += xv[n * I + i] * dy[n * O + o];
    }
  /* A placeholder standing for a handle (a DT_RESOURCE function argument, imported as a string)
   * is an x too: d sum(3 W) / d W through it, fed the variable's handle. */
  weft_output_t hp = placeholder(g, "hp", WEFT_DT_STRING, 0, NULL), dhp;
  weft_output_t three_w = op(g, "Mul", scalar_d(g, 3.0), read_handle(g, hp, WEFT_DT_DOUBLE));
  weft_output_t loss3 = sum_all(g, three_w, 2);
  OK(weft_gradients(g, &loss3, 1, &hp, 1, NULL, &dhp));
  weft_session_t *s = init_session(g, init, 2);
  assert_tensor(fetch(s, NULL, grads[0]), dw, I * O, 1e-12, "linear dW");
  assert_tensor(fetch(s, NULL, grads[1]), db, O, 1e-12, "linear db");
  feeds_t fd = {1, {"hp"}, {fetch(s, NULL, w)}};
  const double threes[I * O] = {3, 3, 3, 3, 3, 3};
  assert_tensor(fetch(s, &fd, dhp), threes, I * O, 0, "d/d handle placeholder");
  free_feeds(&fd);
  weft_session_free(s);
  weft_graph_free(g);
}

/* An embedding lookup with repeated indices (ResourceGather, indices of rank 2): loss =
 * sum(gather(E, idx) * C), so dE's row r is the sum of C's rows where idx is r, zero for rows
 * never read. */
static void test_resource_gather(void) {
  enum { V = 5, D = 3, P = 4 };
  static const double ev[V * D] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8,
                                   0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5};
  static const double iv[P] = {1, 3, 1, 0};
  static const double cv[P * D] = {1, -2, 3, 0.5, 0.25, -1, -4, 2, 0.125, 7, 8, 9};
  int64_t ed[2] = {V, D}, id[2] = {2, 2}, cd[3] = {2, 2, D};
  weft_graph_t *g = weft_graph_new();
  weft_output_t e = var_handle(g, "emb", WEFT_DT_DOUBLE, 2, ed);
  const char *init = assign_handle(g, e, cst(g, WEFT_DT_DOUBLE, 2, ed, ev), WEFT_DT_DOUBLE);
  weft_op_builder_t *b = weft_op_new(g, "ResourceGather", NULL);
  weft_op_add_input(b, e);
  weft_op_add_input(b, cst(g, WEFT_DT_INT32, 2, id, iv));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_output_t rows = weft_out(build(b), 0);
  weft_output_t loss = sum_all(g, op(g, "Mul", rows, cst(g, WEFT_DT_DOUBLE, 3, cd, cv)), 3);
  weft_output_t grad;
  OK(weft_gradients(g, &loss, 1, &e, 1, NULL, &grad));
  double want[V * D] = {0};
  for (int p = 0; p < P; p++)
    for (int d = 0; d < D; d++) want[(int)iv[p] * D + d] += cv[p * D + d];
  weft_session_t *s = init_session(g, &init, 1);
  double lv = 0;
  for (int p = 0; p < P; p++)
    for (int d = 0; d < D; d++) lv += ev[(int)iv[p] * D + d] * cv[p * D + d];
  assert_tensor(fetch(s, NULL, loss), &lv, 1, 1e-12, "gather loss");
  assert_tensor(fetch(s, NULL, grad), want, V * D, 1e-12, "gather dE");
  weft_session_free(s);
  weft_graph_free(g);
}

/* tf.cond(p, lambda: sum(W * W) + x, lambda: 3 x) on a vector W read in the true branch (the
 * handle switched on p, as cond captures it): dW is 2 W, or zeros of W's shape, not of the
 * handle's, when the branch is not taken. */
static void test_resource_cond(void) {
  static const double wv[3] = {0.5, -1.5, 2.0};
  int64_t wd = 3;
  weft_graph_t *g = weft_graph_new();
  weft_output_t w = var_handle(g, "cond_w", WEFT_DT_DOUBLE, 1, &wd);
  const char *init = assign_handle(g, w, cst(g, WEFT_DT_DOUBLE, 1, &wd, wv), WEFT_DT_DOUBLE);
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  weft_output_t p = placeholder(g, "p", WEFT_DT_BOOL, 0, NULL);
  weft_node_t *sw = switch_node(g, w, p), *sx = switch_node(g, x, p);
  weft_output_t r = read_handle(g, weft_out(sw, 1), WEFT_DT_DOUBLE);
  weft_output_t yes = op(g, "AddV2", sum_all(g, op(g, "Mul", r, r), 1), weft_out(sx, 1));
  weft_output_t no = op(g, "Mul", weft_out(sx, 0), scalar_d(g, 3.0));
  weft_output_t loss = merge(g, no, yes), grad;
  OK(weft_gradients(g, &loss, 1, &w, 1, NULL, &grad));
  weft_session_t *s = init_session(g, &init, 1);
  for (int branch = 0; branch < 2; branch++) {
    double xv = 0.75;
    bool pv = branch;
    int64_t one = 1;
    feeds_t fd = {2, {"x", "p"}, {dtensor(0, NULL, &xv), weft_tensor_new(WEFT_DT_BOOL, 0, &one)}};
    *(bool *)weft_tensor_data(fd.t[1]) = pv;
    double want[3];
    for (int k = 0; k < 3; k++) want[k] = branch ? 2 * wv[k] : 0;
    assert_tensor(fetch(s, &fd, grad), want, 3, 1e-12, branch ? "cond dW (taken)" : "cond dW");
    free_feeds(&fd);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

/* The recurrence with W a resource variable read in every iteration, and read once before the
 * loop: the same dW (and the one of the differences here); then ResourceApplyAdam steps on the
 * per-iteration graph follow Adam computed here from differences, and the loss falls. */
static void test_resource_rnn_reads(void) {
  int64_t wd[2] = {H, H}, hd[2] = {1, H}, xd[3] = {T, 1, H};
  double dw[2][H * H];
  for (int outside = 0; outside < 2; outside++) {
    weft_graph_t *g = weft_graph_new();
    rnn_t r = {.handle = var_handle(g, "rnn_w", WEFT_DT_DOUBLE, 2, wd), .read_outside = outside};
    const char *init = assign_handle(g, r.handle, cst(g, WEFT_DT_DOUBLE, 2, wd, rnn_w),
                                     WEFT_DT_DOUBLE);
    rnn_build(g, &r);
    weft_session_t *s = init_session(g, &init, 1);
    feeds_t fd = {2, {"h0", "xs"}, {dtensor(2, hd, rnn_h0), dtensor(3, xd, rnn_x)}};
    rnn_check(s, &r, &fd);
    weft_tensor_t *gt = fetch(s, &fd, r.grads[0]);
    for (int k = 0; k < H * H; k++) dw[outside][k] = weft_tensor_get_double(gt, k);
    weft_tensor_unref(gt);
    free_feeds(&fd);
    weft_session_free(s);
    weft_graph_free(g);
  }
  for (int k = 0; k < H * H; k++) g_assert_cmpfloat(fabs(dw[0][k] - dw[1][k]), <, 1e-12);

  weft_graph_t *g = weft_graph_new();
  rnn_t r = {.handle = var_handle(g, "rnn_w", WEFT_DT_DOUBLE, 2, wd)};
  weft_output_t m = var_handle(g, "rnn_m", WEFT_DT_DOUBLE, 2, wd);
  weft_output_t v = var_handle(g, "rnn_v", WEFT_DT_DOUBLE, 2, wd);
  double zeros[H * H] = {0};
  const char *init[3] = {
      assign_handle(g, r.handle, cst(g, WEFT_DT_DOUBLE, 2, wd, rnn_w), WEFT_DT_DOUBLE),
      assign_handle(g, m, cst(g, WEFT_DT_DOUBLE, 2, wd, zeros), WEFT_DT_DOUBLE),
      assign_handle(g, v, cst(g, WEFT_DT_DOUBLE, 2, wd, zeros), WEFT_DT_DOUBLE)};
  rnn_build(g, &r);
  const double lr = 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  weft_op_builder_t *b = weft_op_new(g, "ResourceApplyAdam", "adam_w");
  weft_output_t ins[10] = {r.handle, m, v, placeholder(g, "b1p", WEFT_DT_DOUBLE, 0, NULL),
                           placeholder(g, "b2p", WEFT_DT_DOUBLE, 0, NULL), scalar_d(g, lr),
                           scalar_d(g, b1), scalar_d(g, b2), scalar_d(g, eps), r.grads[0]};
  for (int k = 0; k < 10; k++) weft_op_add_input(b, ins[k]);
  const char *train = weft_node_name(build(b));
  weft_output_t w_now = read_handle(g, r.handle, WEFT_DT_DOUBLE);
  weft_session_t *s = init_session(g, init, 3);
  double w[H * H], mv[H * H] = {0}, vv[H * H] = {0}, b1p = 1, b2p = 1;
  memcpy(w, rnn_w, sizeof w);
  double before = rnn_loss(w, rnn_h0, rnn_x, rnn_v);
  for (int step = 0; step < 3; step++) {
    b1p *= b1, b2p *= b2;
    feeds_t fd = {4, {"h0", "xs", "b1p", "b2p"},
                  {dtensor(2, hd, rnn_h0), dtensor(3, xd, rnn_x), dtensor(0, NULL, &b1p),
                   dtensor(0, NULL, &b2p)}};
    OK(weft_session_run(s, fd.names, fd.t, fd.n, NULL, NULL, 0, &train, 1));
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p), next[H * H], gw[H * H];
    rnn_dw(w, gw);
    for (int k = 0; k < H * H; k++) {
      mv[k] += (gw[k] - mv[k]) * (1 - b1);
      vv[k] += (gw[k] * gw[k] - vv[k]) * (1 - b2);
      next[k] = w[k] - lr_t * mv[k] / (sqrt(vv[k]) + eps);
    }
    assert_tensor(fetch(s, NULL, w_now), next, H * H, 1e-6, "adam W");
    memcpy(w, next, sizeof w);
    double after = rnn_loss(w, rnn_h0, rnn_x, rnn_v);
    g_assert_cmpfloat(after, <, before);
    assert_tensor(fetch(s, &fd, r.loss), &after, 1, 1e-9, "adam loss");
    before = after;
    free_feeds(&fd);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

/* Rows of an embedding gathered inside a loop at index i mod 2 (0, 1, 0: a repeated row): acc +=
 * gather(E, i mod 2) * c, so dE's row 0 is 2 c, row 1 c, the rest zero; a gather with
 * batch_dims != 0 is refused naming the node. */
static void test_resource_gather_loop(void) {
  enum { V = 3, D = 2 };
  static const double ev[V * D] = {0.5, -1.0, 2.0, 0.25, 3.0, 4.0}, cv[D] = {1.5, -0.5};
  int64_t ed[2] = {V, D}, dd = D;
  weft_graph_t *g = weft_graph_new();
  weft_output_t e = var_handle(g, "loop_emb", WEFT_DT_DOUBLE, 2, ed);
  const char *init = assign_handle(g, e, cst(g, WEFT_DT_DOUBLE, 2, ed, ev), WEFT_DT_DOUBLE);
  double zeros[D] = {0};
  loop_t l = {g, "gloop", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, cst(g, WEFT_DT_DOUBLE, 1, &dd, zeros));
  loop_cond(&l, op(g, "Less", i, invariant(&l, scalar_i(g, 3))));
  weft_output_t bi = loop_body(&l, 0), bacc = loop_body(&l, 1);
  weft_op_builder_t *b = weft_op_new(g, "ResourceGather", NULL);
  weft_op_add_input(b, invariant(&l, e));
  weft_op_add_input(b, op(g, "FloorMod", bi, invariant(&l, scalar_i(g, 2))));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_output_t row = weft_out(build(b), 0);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t acc = loop_close(
      &l, 1, op(g, "AddV2", bacc, op(g, "Mul", row, invariant(&l, cst(g, WEFT_DT_DOUBLE, 1,
                                                                         &dd, cv)))));
  weft_output_t loss = sum_all(g, acc, 1), grad;
  OK(weft_gradients(g, &loss, 1, &e, 1, NULL, &grad));
  weft_session_t *s = init_session(g, &init, 1);
  double want[V * D] = {2 * cv[0], 2 * cv[1], cv[0], cv[1], 0, 0};
  assert_tensor(fetch(s, NULL, grad), want, V * D, 1e-12, "loop gather dE");
  weft_session_free(s);

  b = weft_op_new(g, "ResourceGather", "batched");
  weft_op_add_input(b, e);
  weft_op_add_input(b, scalar_i(g, 1));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_op_set_attr_int(b, "batch_dims", 1);
  weft_output_t batched = sum_all(g, weft_out(build(b), 0), 1);
  weft_status_t *st = weft_gradients(g, &batched, 1, &e, 1, NULL, &grad);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
  g_assert_cmpstr(weft_status_message(st), ==, "gradient of 'batched' (ResourceGather): "
                  "batch_dims=1 is not supported, only 0");
  weft_status_free(st);
  weft_graph_free(g);
}

/* The corpus folder tf/a/b (WEFT_CORPUS, else ../shared/corpus), or NULL after skipping the
 * test when it is absent; the caller frees it. */
static char *corpus_dir(const char *a, const char *b) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root ? g_build_filename(root, "tf", a, b, NULL)
                   : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", "tf", a, b, NULL);
  if (g_file_test(dir, G_FILE_TEST_IS_DIR)) return dir;
  char *why = g_strdup_printf("corpus folder %s not found (set WEFT_CORPUS)", dir);
  g_test_skip(why);
  g_free(why);
  g_free(dir);
  return NULL;
}

/* A TF2 Keras SavedModel from the corpus (Dense(5, relu) -> Dense(1, sigmoid), resource
 * variables read inside the inlined StatefulPartitionedCall): the gradients of sum(y) with
 * respect to the four VarHandleOps against the derivatives written out here in double from the
 * restored values. */
static void test_resource_keras_saved_model(void) {
  char *dir = corpus_dir("saved_model", "cppflow_keras");
  if (!dir) return;
  weft_saved_model_t *m = NULL;
  OK(weft_saved_model_load(dir, NULL, NULL, &m));
  g_free(dir);
  weft_graph_t *g = weft_saved_model_graph(m);
  static const char *const names[4] = {"dense/kernel", "dense/bias", "dense_1/kernel",
                                       "dense_1/bias"};
  enum { N = 3, I = 5, J = 5 };
  static const float xv[N * I] = {1, 2, 3, 4, 5, 0, 0, 0, 0, 0, -1, 0.5f, 2, -3, 1};
  int64_t xd[2] = {N, I};
  weft_tensor_t *x = weft_tensor_new(WEFT_DT_FLOAT, 2, xd), *out = NULL;
  memcpy(weft_tensor_data(x), xv, sizeof xv);
  /* A run imports the signature's nodes. */
  const char *feed = "serving_default_input_1:0", *fetch_name = "StatefulPartitionedCall:0";
  OK(weft_saved_model_run(m, "serving_default", &feed, &x, 1, &fetch_name, &out, 1, NULL, 0));
  weft_tensor_unref(out);
  weft_output_t h[4], grads[4], y;
  for (int k = 0; k < 4; k++) OK(weft_graph_find_output(g, names[k], &h[k]));
  OK(weft_graph_find_output(g, "StatefulPartitionedCall", &y));
  weft_output_t loss = sum_all(g, y, 2);
  OK(weft_gradients(g, &loss, 1, h, 4, NULL, grads));
  /* The restored values and the gradients, in one step of the model's session. */
  char *names_out[8];
  weft_tensor_t *got[8];
  for (int k = 0; k < 4; k++) {
    names_out[k] = tname(read_handle(g, h[k], WEFT_DT_FLOAT));
    names_out[4 + k] = tname(grads[k]);
  }
  /* The nodes imported by the first run read the input through its stand-in placeholder. */
  feed = "_weft_feed/serving_default_input_1/0";
  OK(weft_session_run(weft_saved_model_session(m), &feed, &x, 1,
                      (const char *const *)names_out, got, 8, NULL, 0));
  double val[4][I * J];
  for (int k = 0; k < 4; k++) {
    for (int64_t e = 0; e < weft_tensor_num_elements(got[k]); e++)
      val[k][e] = weft_tensor_get_double(got[k], e);
    weft_tensor_unref(got[k]);
  }
  /* y_n = s(sum_j relu(a_nj) K1_j + b1), a_nj = sum_i x_ni K0_ij + b0_j. */
  double want[4][I * J] = {{0}};
  for (int n = 0; n < N; n++) {
    double a[J], z = val[3][0];
    for (int j = 0; j < J; j++) {
      a[j] = val[1][j];
      for (int i = 0; i < I; i++) a[j] += xv[n * I + i] * val[0][i * J + j];
      z += fmax(a[j], 0) * val[2][j];
    }
    double sy = 1 / (1 + exp(-z)), dz = sy * (1 - sy);
    want[3][0] += dz;
    for (int j = 0; j < J; j++) {
      want[2][j] += dz * fmax(a[j], 0);
      double da = a[j] > 0 ? dz * val[2][j] : 0;
      want[1][j] += da;
      for (int i = 0; i < I; i++) want[0][i * J + j] += da * xv[n * I + i];
    }
  }
  static const int64_t sizes[4] = {I * J, J, J, 1};
  for (int k = 0; k < 4; k++) {
    g_assert_cmpint(weft_tensor_dtype(got[4 + k]), ==, WEFT_DT_FLOAT);
    assert_tensor(got[4 + k], want[k], sizes[k], 1e-5, names[k]);
    g_free(names_out[k]);
    g_free(names_out[4 + k]);
  }
  weft_tensor_unref(x);
  weft_saved_model_free(m);
}

/* A scalar variable read in the outer loop's body and in the inner loop's (twice two inner
 * iterations per outer): r = x w^6, so dr/dw = 6 x w^5 and dr/dx = w^6. */
static void test_resource_nested(void) {
  const double wv = 0.9, xv = 1.3;
  weft_graph_t *g = weft_graph_new();
  weft_output_t w = var_handle(g, "nest_w", WEFT_DT_DOUBLE, 0, NULL);
  const char *init = assign_handle(g, w, scalar_d(g, wv), WEFT_DT_DOUBLE);
  loop_t outer = {g, "router", 10, 0, {0}, {0}, NONE};
  weft_output_t bi = open_counted(&outer, 2), br = loop_body(&outer, 1);
  weft_output_t x;
  OK(weft_graph_find_output(g, "x", &x));
  weft_output_t w_outer = invariant(&outer, w);
  loop_t inner = {g, "rinner", 10, 0, {0}, {0}, NONE};
  weft_output_t bs = open_inner(&outer, &inner, bi, br);
  weft_output_t w_inner = read_handle(g, invariant(&inner, w_outer), WEFT_DT_DOUBLE);
  weft_output_t s_exit = loop_close(&inner, 1, op(g, "Mul", bs, w_inner));
  loop_close(&outer, 0, op(g, "AddV2", bi, invariant(&outer, scalar_i(g, 1))));
  weft_output_t r =
      loop_close(&outer, 1, op(g, "Mul", s_exit, read_handle(g, w_outer, WEFT_DT_DOUBLE)));
  weft_output_t xs[2] = {w, x}, grads[2];
  OK(weft_gradients(g, &r, 1, xs, 2, NULL, grads));
  weft_session_t *s = init_session(g, &init, 1);
  feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
  double want[3] = {xv * pow(wv, 6), 6 * xv * pow(wv, 5), pow(wv, 6)};
  assert_tensor(fetch(s, &fd, r), &want[0], 1, 1e-12, "nested r");
  assert_tensor(fetch(s, &fd, grads[0]), &want[1], 1, 1e-12, "nested dr/dw");
  assert_tensor(fetch(s, &fd, grads[1]), &want[2], 1, 1e-12, "nested dr/dx");
  free_feeds(&fd);
  weft_session_free(s);
  weft_graph_free(g);
}

/* TensorFlow's own dynamic_rnn graphs (float64, from the corpus: BasicRNNCell, BasicLSTMCell,
 * GRUCell, LSTMCell with peepholes, a bidirectional RNN): the gradients of the outputs (a
 * TensorArray gathered after the loop) or of the final state with respect to the inputs
 * (scattered into a TensorArray before it), the weights and the initial state, against central
 * differences of the same graph. */
typedef struct tf_case {
  const char *dir, *x, *y;
  int y_rank;
} tf_case_t;

static void test_imported_dynamic_rnn(void) {
  static const tf_case_t cases[] = {
      {"basicrnncell/dynamic_b1_nIn5_nOut3_ts4_sigmoid_withIS_noTM_double", "in_0:0", "concat:0",
       3},
      {"basicrnncell/dynamic_b1_nIn5_nOut3_ts4_sigmoid_withIS_noTM_double",
       "rnn/basic_rnn_cell/kernel/read:0", "rnn/while/Exit_3:0", 2},
      {"basicrnncell/dynamic_b1_nIn5_nOut3_ts4_sigmoid_withIS_noTM_double",
       "rnn/basic_rnn_cell/bias/read:0", "concat:0", 3},
      {"basicrnncell/dynamic_b1_nIn5_nOut3_ts4_sigmoid_withIS_noTM_double", "in_1:0",
       "rnn/while/Exit_3:0", 2},
      {"basiclstmcell/dynamic_b1_nIn5_nOut3_ts4_softsign_withIS_noTM_fb2_double", "in_0:0",
       "concat_1:0", -1},
      {"grucell/dynamic_b1_nIn5_nOut3_ts4_sigmoid_withIS_noTM_double", "in_0:0", "concat:0", -1},
      {"lstmcell/dynamic_b2_nIn2_nOut3_ts4_withPH_noClip_fB1_Tanh_noIS_double_noTM", "in_0:0",
       "concat:0", -1},
      {"bidir_basic/dynamic_b1_n5-3_ts4_sig_withIS_noTM_f64", "in_0:0", "concat:0", -1},
  };
  char *base = corpus_dir("dl4j", "rnn");
  if (!base) return;
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    const tf_case_t *tc = &cases[k];
    char *path = g_build_filename(base, tc->dir, "frozen_model.pb", NULL);
    weft_graph_t *g = weft_graph_new();
    OK(weft_graph_import_graphdef_file(g, path, NULL));
    weft_output_t x, y;
    OK(weft_graph_find_output(g, tc->x, &x));
    OK(weft_graph_find_output(g, tc->y, &y));
    int64_t dims[WEFT_MAX_RANK];
    int rank = tc->y_rank >= 0 ? tc->y_rank : weft_node_output_shape(y.node, y.index, dims);
    g_assert_cmpint(rank, >, 0);
    weft_output_t loss = sum_all(g, y, rank), grad;
    OK(weft_gradients(g, &loss, 1, &x, 1, NULL, &grad));
    weft_status_t *st = NULL;
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    feeds_t fd = {1, {tc->x}, {NULL}};
    OK(weft_session_run(s, NULL, NULL, 0, &tc->x, &fd.t[0], 1, NULL, 0));
    weft_session_free(s);
    char *label = g_strdup_printf("%s: d %s / d %s", tc->dir, tc->y, tc->x);
    check_fd(g, &fd, loss, grad, label);
    g_test_message("%s: matches central differences", label);
    g_free(label);
    free_feeds(&fd);
    weft_graph_free(g);
    g_free(path);
  }
  g_free(base);
}

/* A variable read inside a loop: r = r * v + x, 4 times, from r = 1: d r / d v against the
 * recurrence's differences here (the variable's value is set by its initializer). */
static double var_loop(double v, double x) {
  double r = 1;
  for (int k = 0; k < 4; k++) r = r * v + x;
  return r;
}

static void test_while_variable(void) {
  const double v0 = 0.9, xv = 0.6;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t v = weft_variable(g, "v", scalar_d(g, v0), &st);
  OK(st);
  weft_node_t *init = weft_global_variables_initializer(g, NULL, &st);
  OK(st);
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  loop_t l = {g, "varloop", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, scalar_d(g, 1.0));
  loop_cond(&l, op(g, "Less", i, invariant(&l, scalar_i(g, 4))));
  weft_output_t bi = loop_body(&l, 0), br = loop_body(&l, 1);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t r = loop_close(&l, 1, op(g, "AddV2", op(g, "Mul", br, invariant(&l, v)),
                                         invariant(&l, x)));
  weft_output_t grad[2], wrt[2] = {v, x};
  OK(weft_gradients(g, &r, 1, wrt, 2, NULL, grad));
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *init_name = weft_node_name(init);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init_name, 1));
  feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
  g_assert_cmpfloat(fabs(run_scalar(s, &fd, r) - var_loop(v0, xv)), <, 1e-12);
  double num_v = (var_loop(v0 + 1e-6, xv) - var_loop(v0 - 1e-6, xv)) / 2e-6;
  double num_x = (var_loop(v0, xv + 1e-6) - var_loop(v0, xv - 1e-6)) / 2e-6;
  g_assert_cmpfloat(fabs(run_scalar(s, &fd, grad[0]) - num_v), <, 1e-7);
  g_assert_cmpfloat(fabs(run_scalar(s, &fd, grad[1]) - num_x), <, 1e-7);
  weft_session_free(s);
  free_feeds(&fd);
  weft_graph_free(g);
}

/* Refused: a loop that assigns a Ref variable with parallel_iterations > 1. */
static void test_refusals(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t v = weft_variable(g, "v", scalar_d(g, 1.0), &st);
  OK(st);
  weft_node_t *var = v.node->inputs[0].src;
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  loop_t l = {g, "mut", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, x);
  loop_cond(&l, op(g, "Less", i, invariant(&l, scalar_i(g, 3))));
  weft_output_t bi = loop_body(&l, 0), br = loop_body(&l, 1);
  weft_op_builder_t *b = weft_op_new(g, "AssignAdd", "bump");
  weft_op_add_input(b, invariant(&l, weft_out(var, 0)));
  weft_op_add_input(b, br);
  weft_output_t bumped = weft_out(build(b), 0);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  weft_output_t r = loop_close(&l, 1, op(g, "Mul", br, bumped));
  weft_output_t grad;
  st = weft_gradients(g, &r, 1, &x, 1, NULL, &grad);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "gradient of while loop 'mut': node 'bump' (AssignAdd) mutates a Ref variable "
                  "with parallel_iterations=10; gradients of such loops are not supported");
  weft_status_free(st);
  weft_graph_free(g);
}

/* A loop nested in a loop: r = x, twice (outer) squared twice (inner): x^16, against central
 * differences and 16 x^15; the inner loop's counter starts at the outer's and its bound is the
 * outer's value, as a tf.while_loop inside another's body reads them. */
static void test_nested_pow(void) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  loop_t outer = {g, "outer", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&outer, scalar_i(g, 0));
  loop_var(&outer, x);
  loop_cond(&outer, op(g, "Less", i, invariant(&outer, scalar_i(g, 2))));
  weft_output_t bi = loop_body(&outer, 0), br = loop_body(&outer, 1);
  loop_t inner = {g, "inner", 10, 0, {0}, {0}, NONE};
  weft_output_t bs = open_inner(&outer, &inner, bi, br);
  weft_output_t s_exit = loop_close(&inner, 1, op(g, "Square", bs, NONE));
  loop_close(&outer, 0, op(g, "AddV2", bi, invariant(&outer, scalar_i(g, 1))));
  weft_output_t r = loop_close(&outer, 1, s_exit);
  weft_output_t grad;
  OK(weft_gradients(g, &r, 1, &x, 1, NULL, &grad));
  double xv = 1.05;
  feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
  check_fd(g, &fd, r, grad, "nested x^16");
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  double got = run_scalar(s, &fd, grad);
  weft_session_free(s);
  g_assert_cmpfloat(fabs(got - 16 * pow(xv, 15)), <, 1e-9 * 16 * pow(xv, 15));
  free_feeds(&fd);
  weft_graph_free(g);
}

/* Nested loops, i < 3 outside, j <= i inside (so the inner loop runs 1, 2, 3 times):
 * recurrence: t = t cos(x (i+1)) + sin(x (j+1)) from t = s, s = the inner loop's t;
 * !recurrence: t = t + sin(x (i+1) + j) from t = 0, s = s + t (a sum over i and j). Both start
 * at s = x; the results against the same loops in double, the gradient against central
 * differences. */
static double nested_ref(double x, bool recurrence) {
  double sv = x;
  for (int i = 0; i < 3; i++) {
    double t = recurrence ? sv : 0;
    for (int j = 0; j <= i; j++)
      t = recurrence ? t * cos(x * (i + 1)) + sin(x * (j + 1)) : t + sin(x * (i + 1) + j);
    sv = recurrence ? t : sv + t;
  }
  return sv;
}

static weft_output_t as_double(weft_graph_t *g, weft_output_t v) {
  weft_op_builder_t *b = weft_op_new(g, "Cast", NULL);
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "DstT", WEFT_DT_DOUBLE);
  return weft_out(build(b), 0);
}

static void nested_sum(bool recurrence) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  loop_t outer = {g, "outer", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&outer, scalar_i(g, 0));
  loop_var(&outer, x);
  loop_cond(&outer, op(g, "Less", i, invariant(&outer, scalar_i(g, 3))));
  weft_output_t bi = loop_body(&outer, 0), bs = loop_body(&outer, 1);
  weft_output_t xo = invariant(&outer, x);
  weft_output_t i1 = as_double(g, op(g, "AddV2", bi, invariant(&outer, scalar_i(g, 1))));
  loop_t inner = {g, "inner", 10, 0, {0}, {0}, NONE};
  weft_output_t j = loop_var(&inner, invariant(&outer, scalar_i(g, 0)));
  loop_var(&inner, recurrence ? bs : invariant(&outer, scalar_d(g, 0)));
  loop_cond(&inner, op(g, "LessEqual", j, invariant(&inner, bi)));
  weft_output_t bj = loop_body(&inner, 0), bt = loop_body(&inner, 1);
  weft_output_t xi = invariant(&inner, xo), ii = invariant(&inner, i1);
  weft_output_t jd = as_double(g, bj);
  weft_output_t next;
  if (recurrence) {
    weft_output_t j1 = op(g, "AddV2", jd, invariant(&inner, invariant(&outer, scalar_d(g, 1))));
    next = op(g, "AddV2", op(g, "Mul", bt, op(g, "Cos", op(g, "Mul", xi, ii), NONE)),
              op(g, "Sin", op(g, "Mul", xi, j1), NONE));
  } else {
    next = op(g, "AddV2", bt, op(g, "Sin", op(g, "AddV2", op(g, "Mul", xi, ii), jd), NONE));
  }
  loop_close(&inner, 0, op(g, "AddV2", bj, invariant(&inner, invariant(&outer, scalar_i(g, 1)))));
  weft_output_t t_exit = loop_close(&inner, 1, next);
  loop_close(&outer, 0, op(g, "AddV2", bi, invariant(&outer, scalar_i(g, 1))));
  weft_output_t r = loop_close(&outer, 1, recurrence ? t_exit : op(g, "AddV2", bs, t_exit));
  weft_output_t grad;
  OK(weft_gradients(g, &r, 1, &x, 1, NULL, &grad));
  const double xs[2] = {0.37, -1.1};
  for (int k = 0; k < 2; k++) {
    feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xs[k])}};
    weft_status_t *st = NULL;
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    double y = run_scalar(s, &fd, r);
    weft_session_free(s);
    g_assert_cmpfloat(fabs(y - nested_ref(xs[k], recurrence)), <, 1e-12);
    check_fd(g, &fd, r, grad, recurrence ? "nested recurrence" : "nested sum");
    free_feeds(&fd);
  }
  weft_graph_free(g);
}

/* Three loops deep, two iterations each, the innermost multiplying by sin x entered through
 * every level: r = x sin(x)^8. */
static void test_nested_three(void) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
  weft_output_t sx = op(g, "Sin", x, NONE);
  static const char *const frames[3] = {"l0", "l1", "l2"};
  loop_t l[3];
  weft_output_t r = x, c = sx, counters[3];
  for (int d = 0; d < 3; d++) {
    l[d] = (loop_t){g, frames[d], 10, 0, {0}, {0}, NONE};
    weft_output_t zero = scalar_i(g, 0), two = scalar_i(g, 2);
    for (int e = 0; e < d; e++) {
      zero = invariant(&l[e], zero);
      two = invariant(&l[e], two);
    }
    weft_output_t i = loop_var(&l[d], zero);
    loop_var(&l[d], r);
    loop_cond(&l[d], op(g, "Less", i, invariant(&l[d], two)));
    counters[d] = loop_body(&l[d], 0);
    r = loop_body(&l[d], 1);
    c = invariant(&l[d], c);
  }
  r = op(g, "Mul", r, c);
  for (int d = 2; d >= 0; d--) {
    weft_output_t one = scalar_i(g, 1);
    for (int e = 0; e <= d; e++) one = invariant(&l[e], one);
    loop_close(&l[d], 0, op(g, "AddV2", counters[d], one));
    r = loop_close(&l[d], 1, r);
  }
  weft_output_t grad;
  OK(weft_gradients(g, &r, 1, &x, 1, NULL, &grad));
  double xv = 0.8;
  feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
  check_fd(g, &fd, r, grad, "three nested loops");
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  double y = run_scalar(s, &fd, r);
  weft_session_free(s);
  g_assert_cmpfloat(fabs(y - xv * pow(sin(xv), 8)), <, 1e-14);
  free_feeds(&fd);
  weft_graph_free(g);
}

static void test_nested_sum(void) { nested_sum(false); }
static void test_nested_recurrence(void) { nested_sum(true); }

/* A cond inside a loop body, its predicate changing from iteration to iteration:
 * r = r < 1 ? r (x + 1.5) : sin(r) x, four times from r = x (x = 0.3 takes the true branch three
 * times, then the false one). With `switched`, the values from outside a branch reach it through
 * a Switch of their own, as tf.cond does; without, the branches read them directly. */
static weft_output_t cond_loop(weft_graph_t *g, weft_output_t x, bool switched) {
  weft_output_t factor = op(g, "AddV2", x, scalar_d(g, 1.5));
  loop_t l = {g, "L", 10, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, scalar_i(g, 0));
  loop_var(&l, x);
  loop_cond(&l, op(g, "Less", i, invariant(&l, scalar_i(g, 4))));
  weft_output_t bi = loop_body(&l, 0), br = loop_body(&l, 1);
  weft_output_t p = op(g, "Less", br, invariant(&l, scalar_d(g, 1.0)));
  weft_node_t *sw = switch_node(g, br, p);
  weft_output_t in_t = invariant(&l, factor), in_f = invariant(&l, x);
  if (switched) {
    in_t = weft_out(switch_node(g, in_t, p), 1);
    in_f = weft_out(switch_node(g, in_f, p), 0);
  }
  weft_output_t t = op(g, "Mul", weft_out(sw, 1), in_t);
  weft_output_t f = op(g, "Mul", op(g, "Sin", weft_out(sw, 0), NONE), in_f);
  loop_close(&l, 0, op(g, "AddV2", bi, invariant(&l, scalar_i(g, 1))));
  return loop_close(&l, 1, merge(g, f, t));
}

static void test_while_with_cond(void) {
  for (int switched = 1; switched >= 0; switched--) {
    weft_graph_t *g = weft_graph_new();
    weft_output_t x = placeholder(g, "x", WEFT_DT_DOUBLE, 0, NULL);
    weft_output_t r = cond_loop(g, x, switched), grad;
    OK(weft_gradients(g, &r, 1, &x, 1, NULL, &grad));
    double xv = 0.3;
    feeds_t fd = {1, {"x"}, {dtensor(0, NULL, &xv)}};
    check_fd(g, &fd, r, grad, switched ? "while with a cond inside" : "cond without Switches");
    /* The value against the recurrence computed here. */
    double want = xv;
    for (int k = 0; k < 4; k++) want = want < 1 ? want * (xv + 1.5) : sin(want) * xv;
    weft_status_t *st = NULL;
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    g_assert_cmpfloat(fabs(run_scalar(s, &fd, r) - want), <, 1e-12);
    weft_session_free(s);
    free_feeds(&fd);
    weft_graph_free(g);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cf_gradients/cond", test_cond);
  g_test_add_func("/cf_gradients/nested_cond", test_nested_cond);
  g_test_add_func("/cf_gradients/while_pow", test_while_pow);
  g_test_add_func("/cf_gradients/while_rnn_tensor_array", test_while_rnn);
  g_test_add_func("/cf_gradients/imported_dynamic_rnn", test_imported_dynamic_rnn);
  g_test_add_func("/cf_gradients/while_rnn_ps_worker_cluster", test_while_rnn_cluster);
  g_test_add_func("/cf_gradients/cross_task_loops", test_cross_task_loops);
  g_test_add_func("/cf_gradients/resource_rnn_ps_worker_cluster", test_resource_rnn_cluster);
  g_test_add_func("/cf_gradients/resource_linear", test_resource_linear);
  g_test_add_func("/cf_gradients/resource_gather", test_resource_gather);
  g_test_add_func("/cf_gradients/resource_cond", test_resource_cond);
  g_test_add_func("/cf_gradients/resource_rnn_reads", test_resource_rnn_reads);
  g_test_add_func("/cf_gradients/resource_gather_loop", test_resource_gather_loop);
  g_test_add_func("/cf_gradients/resource_nested", test_resource_nested);
  g_test_add_func("/cf_gradients/resource_keras_saved_model", test_resource_keras_saved_model);
  g_test_add_func("/cf_gradients/while_variable_read", test_while_variable);
  g_test_add_func("/cf_gradients/refusals", test_refusals);
  g_test_add_func("/cf_gradients/nested_pow", test_nested_pow);
  g_test_add_func("/cf_gradients/nested_sum", test_nested_sum);
  g_test_add_func("/cf_gradients/nested_recurrence", test_nested_recurrence);
  g_test_add_func("/cf_gradients/nested_three_deep", test_nested_three);
  g_test_add_func("/cf_gradients/while_with_cond", test_while_with_cond);
  return g_test_run();
}
