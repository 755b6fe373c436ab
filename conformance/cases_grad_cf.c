/* cases_grad_cf.c: gradient checks through TensorFlow 1.x control flow, one case per construct:
 * a cond with each branch taken, a while loop's loop-carried state, a cond inside a loop's body,
 * a loop reading a tensor from outside through a constant Enter, a while loop nested in another,
 * and an RNN cell loop that reads its inputs from a TensorArray, writes each step's state into
 * another and stacks it (TensorArrayGatherV3) after the loop. Each graph is laid out as tf.cond /
 * tf.while_loop lay theirs out, built on the device under test in the case's dtype with
 * weft_gradients of its scalar loss; every gradient is compared with central finite differences
 * of the same graph in float64 on the CPU. The gradient loops save forward values in
 * TensorArrays (gradients_cf.c), so every loop case also checks those; Stack push/pop get no
 * case: TensorFlow declares StackPushV2/StackPopV2 not differentiable. Records are named
 * "grad_cf_<case>" under the construct's op; a device without a kernel for a node (the
 * control-flow ops run on the CPU only) gets an "unsupported" record naming it. */
#include <math.h>
#include <string.h>

#include "conformance.h"
#include "graph/graph_internal.h" /* the loops' back edges are linked as an import links them */

#define CF_MAX_X 3

static const weft_output_t NONE = {NULL, 0};

/* A graph under construction in dtype dt: the first error stops it, later calls do nothing. */
typedef struct bld {
  weft_graph_t *g;
  weft_dtype_t dt;
  weft_status_t *st;
} bld_t;

/* The frame of a while loop being built (tf.while_loop's layout: Enter, Merge, LoopCond,
 * Switch, Identity, NextIteration, Exit per loop variable). */
typedef struct loop {
  bld_t *b;
  const char *frame;
  int n;
  weft_node_t *merges[4];
  weft_node_t *switches[4];
  weft_output_t cond;
} loop_t;

static weft_output_t finish(bld_t *b, weft_op_builder_t *ob, int index) {
  weft_node_t *n = NULL;
  if (b->st) {
    weft_status_free(weft_op_finish(ob, NULL));
    return NONE;
  }
  b->st = weft_op_finish(ob, &n);
  return n ? weft_out(n, index) : NONE;
}

/* op(x), op(x, y) or op(x, y, z) (NONE ends the inputs). */
static weft_output_t op(bld_t *b, const char *type, weft_output_t x, weft_output_t y,
                        weft_output_t z) {
  weft_op_builder_t *ob = weft_op_new(b->g, type, NULL);
  const weft_output_t in[3] = {x, y, z};
  for (int i = 0; i < 3 && in[i].node; i++) weft_op_add_input(ob, in[i]);
  if (!x.node && !b->st) b->st = weft_status_new(WEFT_INTERNAL, "%s built on a failed input", type);
  return finish(b, ob, 0);
}

static weft_output_t merge(bld_t *b, weft_output_t x, weft_output_t y) {
  const weft_output_t in[2] = {x, y};
  weft_op_builder_t *ob = weft_op_new(b->g, "Merge", NULL);
  if (x.node && y.node) weft_op_add_input_list(ob, in, 2);
  return finish(b, ob, 0);
}

#define OP1(b, t, x) op(b, t, x, NONE, NONE)
#define OP2(b, t, x, y) op(b, t, x, y, NONE)

/* A constant of dtype dt (or int32 when ints) from values v. */
static weft_output_t cst(bld_t *b, weft_dtype_t dt, int rank, const int64_t *dims,
                         const double *v) {
  if (b->st) return NONE;
  cf_array_t *a = cf_array_new(dt, rank, dims);
  for (int64_t i = 0; i < a->n; i++) a->v[i] = v[i];
  weft_tensor_t *t = cf_array_to_tensor(a, &b->st);
  cf_array_free(a);
  if (b->st) return NONE;
  weft_output_t o = weft_const(b->g, "c", t, &b->st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t real(bld_t *b, double v) { return cst(b, b->dt, 0, NULL, &v); }
static weft_output_t i32(bld_t *b, int v) {
  double d = v;
  return cst(b, WEFT_DT_INT32, 0, NULL, &d);
}

static weft_output_t sum_all(bld_t *b, weft_output_t x, int rank) {
  double axes[4] = {0, 1, 2, 3};
  int64_t n = rank;
  return OP2(b, "Sum", x, cst(b, WEFT_DT_INT32, 1, &n, axes));
}

static weft_output_t enter(loop_t *l, weft_output_t x, bool is_const) {
  weft_op_builder_t *ob = weft_op_new(l->b->g, "Enter", NULL);
  if (x.node) weft_op_add_input(ob, x);
  weft_op_set_attr_string(ob, "frame_name", l->frame);
  weft_op_set_attr_bool(ob, "is_constant", is_const);
  weft_op_set_attr_int(ob, "parallel_iterations", 10);
  return finish(l->b, ob, 0);
}

static weft_output_t invariant(loop_t *l, weft_output_t x) { return enter(l, x, true); }

static weft_output_t loop_var(loop_t *l, weft_output_t init) {
  weft_output_t e = enter(l, init, false);
  /* The back edge is linked in loop_close, as an import links it. */
  weft_output_t m = merge(l->b, e, e);
  l->merges[l->n++] = m.node;
  return m;
}

static void loop_cond(loop_t *l, weft_output_t pred) { l->cond = OP1(l->b, "LoopCond", pred); }

static weft_output_t loop_body(loop_t *l, int k) {
  if (l->b->st) return NONE;
  weft_output_t s = OP2(l->b, "Switch", weft_out(l->merges[k], 0), l->cond);
  l->switches[k] = s.node;
  return s.node ? OP1(l->b, "Identity", weft_out(s.node, 1)) : NONE;
}

static weft_output_t loop_close(loop_t *l, int k, weft_output_t next) {
  weft_output_t ni = OP1(l->b, "NextIteration", next);
  if (l->b->st) return NONE;
  l->merges[k]->inputs[1].src = ni.node;
  l->merges[k]->inputs[1].src_index = 0;
  l->merges[k]->output_ranks[0] = -1;
  return OP1(l->b, "Exit", weft_out(l->switches[k], 0));
}

static weft_output_t counter_less(loop_t *l, weft_output_t i, int n) {
  return OP2(l->b, "Less", i, invariant(l, i32(l->b, n)));
}

static weft_output_t counter_next(loop_t *l, weft_output_t i) {
  return OP2(l->b, "AddV2", i, invariant(l, i32(l->b, 1)));
}

static const double w3[3] = {0.5, -1.5, 2.0};

/* loss = sum(w * cond(p, 3 x^2, sin x) + x): the branch taken is the feed p. */
static weft_output_t build_cond(bld_t *b, const weft_output_t *x, weft_output_t p) {
  int64_t d3 = 3;
  weft_output_t s = OP2(b, "Switch", x[0], p);
  if (!s.node) return NONE;
  weft_output_t t = OP2(b, "Mul", OP1(b, "Square", weft_out(s.node, 1)), real(b, 3));
  weft_output_t f = OP1(b, "Sin", weft_out(s.node, 0));
  weft_output_t m = merge(b, f, t);
  return sum_all(b, OP2(b, "AddV2", OP2(b, "Mul", m, cst(b, b->dt, 1, &d3, w3)), x[0]), 1);
}

/* One body step of a four-iteration loop: the next value of the carried v at counter i (both
 * the body's views), x the graph's input. */
typedef weft_output_t (*step_fn)(loop_t *l, weft_output_t i, weft_output_t v, weft_output_t x);

/* v = step(v) four times from v = init; loss = sum(w * v). */
static weft_output_t four_steps(bld_t *b, const char *frame, weft_output_t init, weft_output_t x,
                                step_fn step) {
  int64_t d3 = 3;
  loop_t l = {b, frame, 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, i32(b, 0));
  loop_var(&l, init);
  loop_cond(&l, counter_less(&l, i, 4));
  weft_output_t bi = loop_body(&l, 0), bv = loop_body(&l, 1);
  weft_output_t next = b->st ? NONE : step(&l, bi, bv, x);
  loop_close(&l, 0, counter_next(&l, bi));
  weft_output_t v = loop_close(&l, 1, next);
  return sum_all(b, OP2(b, "Mul", v, cst(b, b->dt, 1, &d3, w3)), 1);
}

static const double c3[3] = {1.3, -0.8, 0.6};

static weft_output_t times_c(loop_t *l, weft_output_t h) {
  int64_t d3 = 3;
  return OP2(l->b, "Mul", h, invariant(l, cst(l->b, l->b->dt, 1, &d3, c3)));
}

static weft_output_t half(loop_t *l, weft_output_t h) {
  return OP2(l->b, "Mul", h, invariant(l, real(l->b, 0.5)));
}

/* h = tanh(h c) + h / 2, from h = x: the state carried through NextIteration. */
static weft_output_t state_step(loop_t *l, weft_output_t i, weft_output_t h, weft_output_t x) {
  (void)i, (void)x;
  return OP2(l->b, "AddV2", OP1(l->b, "Tanh", times_c(l, h)), half(l, h));
}

static weft_output_t build_while_state(bld_t *b, const weft_output_t *x, weft_output_t p) {
  (void)p;
  return four_steps(b, "state", x[0], NONE, state_step);
}

/* A cond inside a loop's body: h = (i < 2 ? h c : sin h) + h / 2 from h = x, so the gradient
 * loop takes each branch in turn on the predicates it saved. */
static weft_output_t cond_step(loop_t *l, weft_output_t i, weft_output_t h, weft_output_t x) {
  (void)x;
  weft_output_t s = OP2(l->b, "Switch", h, counter_less(l, i, 2));
  if (!s.node) return NONE;
  weft_output_t t = times_c(l, weft_out(s.node, 1));
  weft_output_t f = OP1(l->b, "Sin", weft_out(s.node, 0));
  return OP2(l->b, "AddV2", merge(l->b, f, t), half(l, h));
}

static weft_output_t build_while_cond(bld_t *b, const weft_output_t *x, weft_output_t p) {
  (void)p;
  return four_steps(b, "loop_cond", x[0], NONE, cond_step);
}

/* r = r x + sin x from r = 1, x entering the frame through a constant Enter: its gradient is
 * the sum over the iterations. */
static weft_output_t outside_step(loop_t *l, weft_output_t i, weft_output_t r, weft_output_t x) {
  (void)i;
  weft_output_t xi = invariant(l, x);
  return OP2(l->b, "AddV2", OP2(l->b, "Mul", r, xi), OP1(l->b, "Sin", xi));
}

static weft_output_t build_while_outside(bld_t *b, const weft_output_t *x, weft_output_t p) {
  (void)p;
  static const double ones[3] = {1, 1, 1};
  int64_t d3 = 3;
  return four_steps(b, "outside", cst(b, b->dt, 1, &d3, ones), x[0], outside_step);
}

/* Outer i < 2 carries s from x; inner j < 3 carries t from s: t = t cos(x) + sin(t) / 2, x
 * entering both frames; s = the inner loop's t. */
static weft_output_t build_nested(bld_t *b, const weft_output_t *x, weft_output_t p) {
  (void)p;
  int64_t d2 = 2;
  loop_t outer = {b, "outer", 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&outer, i32(b, 0));
  loop_var(&outer, x[0]);
  loop_cond(&outer, counter_less(&outer, i, 2));
  weft_output_t bi = loop_body(&outer, 0), bs = loop_body(&outer, 1);
  weft_output_t xo = invariant(&outer, x[0]);
  loop_t inner = {b, "inner", 0, {0}, {0}, NONE};
  weft_output_t j = loop_var(&inner, invariant(&outer, i32(b, 0)));
  loop_var(&inner, bs);
  loop_cond(&inner, OP2(b, "Less", j, invariant(&inner, invariant(&outer, i32(b, 3)))));
  weft_output_t bj = loop_body(&inner, 0), bt = loop_body(&inner, 1);
  weft_output_t xi = invariant(&inner, xo);
  weft_output_t next =
      OP2(b, "AddV2", OP2(b, "Mul", bt, OP1(b, "Cos", xi)),
          OP2(b, "Mul", OP1(b, "Sin", bt), invariant(&inner, invariant(&outer, real(b, 0.5)))));
  loop_close(&inner, 0, OP2(b, "AddV2", bj, invariant(&inner, invariant(&outer, i32(b, 1)))));
  weft_output_t t = loop_close(&inner, 1, next);
  loop_close(&outer, 0, counter_next(&outer, bi));
  weft_output_t s = loop_close(&outer, 1, t);
  return sum_all(b, OP2(b, "Mul", s, cst(b, b->dt, 1, &d2, w3)), 1);
}

enum { RNN_T = 3, RNN_H = 3 };

static weft_output_t tensor_array(bld_t *b, int size, weft_node_t **node) {
  weft_op_builder_t *ob = weft_op_new(b->g, "TensorArrayV3", NULL);
  weft_op_add_input(ob, i32(b, size));
  weft_op_set_attr_type(ob, "dtype", b->dt);
  weft_output_t h = finish(b, ob, 0);
  *node = h.node;
  return h;
}

/* A dynamic_rnn's loop: x_t read from a TensorArray scattered from xs (x[2], [T, 1, H]),
 * h = tanh(h W + x_t) from h = h0 (x[1], [1, H]) with W (x[0], [H, H]) entering as a constant,
 * each h written into a second TensorArray whose flow is a loop variable, the writes stacked
 * after the loop (TensorArrayGatherV3 of 0..T-1); loss = sum(stack * v). */
static weft_output_t build_rnn(bld_t *b, const weft_output_t *x, weft_output_t p) {
  (void)p;
  static const double idx[RNN_T] = {0, 1, 2};
  static const double v[RNN_T * RNN_H] = {0.7, -1.2, 0.4, 0.3, 0.9, -0.5, -0.8, 0.2, 1.1};
  int64_t td = RNN_T, vd[3] = {RNN_T, 1, RNN_H};
  weft_node_t *in_ta = NULL, *out_ta = NULL;
  tensor_array(b, RNN_T, &in_ta);
  tensor_array(b, RNN_T, &out_ta);
  if (b->st) return NONE;
  weft_op_builder_t *ob = weft_op_new(b->g, "TensorArrayScatterV3", NULL);
  weft_op_add_input(ob, weft_out(in_ta, 0));
  weft_op_add_input(ob, cst(b, WEFT_DT_INT32, 1, &td, idx));
  weft_op_add_input(ob, x[2]);
  weft_op_add_input(ob, weft_out(in_ta, 1));
  weft_output_t in_flow = finish(b, ob, 0);
  loop_t l = {b, "rnn", 0, {0}, {0}, NONE};
  weft_output_t i = loop_var(&l, i32(b, 0));
  loop_var(&l, x[1]);
  loop_var(&l, weft_out(out_ta, 1));
  loop_cond(&l, counter_less(&l, i, RNN_T));
  weft_output_t bi = loop_body(&l, 0), bh = loop_body(&l, 1), bf = loop_body(&l, 2);
  if (b->st) return NONE;
  ob = weft_op_new(b->g, "TensorArrayReadV3", NULL);
  weft_op_add_input(ob, invariant(&l, weft_out(in_ta, 0)));
  weft_op_add_input(ob, bi);
  weft_op_add_input(ob, invariant(&l, in_flow));
  weft_op_set_attr_type(ob, "dtype", b->dt);
  weft_output_t xt = finish(b, ob, 0);
  weft_output_t hw = b->st ? NONE
                           : weft_matmul(b->g, "hw", bh, invariant(&l, x[0]), false, false, &b->st);
  weft_output_t hn = OP1(b, "Tanh", OP2(b, "AddV2", hw, xt));
  if (b->st) return NONE;
  ob = weft_op_new(b->g, "TensorArrayWriteV3", NULL);
  weft_op_add_input(ob, invariant(&l, weft_out(out_ta, 0)));
  weft_op_add_input(ob, bi);
  weft_op_add_input(ob, hn);
  weft_op_add_input(ob, bf);
  weft_output_t flow = finish(b, ob, 0);
  loop_close(&l, 0, counter_next(&l, bi));
  loop_close(&l, 1, hn);
  weft_output_t out_flow = loop_close(&l, 2, flow);
  if (b->st) return NONE;
  ob = weft_op_new(b->g, "TensorArrayGatherV3", NULL);
  weft_op_add_input(ob, weft_out(out_ta, 0));
  weft_op_add_input(ob, cst(b, WEFT_DT_INT32, 1, &td, idx));
  weft_op_add_input(ob, out_flow);
  weft_op_set_attr_type(ob, "dtype", b->dt);
  weft_output_t stack = finish(b, ob, 0);
  return sum_all(b, OP2(b, "Mul", stack, cst(b, b->dt, 3, vd, v)), 3);
}

typedef weft_output_t (*build_fn)(bld_t *b, const weft_output_t *x, weft_output_t p);

typedef struct cfspec {
  const char *op;   /* the construct's op, for --op and the report */
  const char *name; /* the record is grad_cf_<name> */
  build_fn build;
  int pred;         /* the bool fed to "p": 0 or 1; -1 when the graph has no predicate */
  int n_x;
  int rank[CF_MAX_X];
  int64_t dims[CF_MAX_X][3];
  double lo, hi; /* |x| drawn from [lo, hi], random signs */
} cfspec_t;

static const cfspec_t specs[] = {
    {"Merge", "cond_true_branch", build_cond, 1, 1, {1}, {{3}}, 0.2, 1.2},
    {"Merge", "cond_false_branch", build_cond, 0, 1, {1}, {{3}}, 0.2, 1.2},
    {"NextIteration", "while_loop_carried_state", build_while_state, -1, 1, {1}, {{3}}, 0.2, 1},
    {"Switch", "cond_inside_while", build_while_cond, -1, 1, {1}, {{3}}, 0.2, 1},
    {"Enter", "while_reads_outside_tensor", build_while_outside, -1, 1, {1}, {{3}}, 0.3, 0.9},
    {"Exit", "nested_while", build_nested, -1, 1, {1}, {{2}}, 0.2, 1.2},
    {"TensorArrayWriteV3", "rnn_tensor_array_write_read_stack", build_rnn, -1, 3, {2, 2, 3},
     {{RNN_H, RNN_H}, {1, RNN_H}, {RNN_T, 1, RNN_H}}, 0.1, 0.8},
};

/* The graph of s in dtype dt on `dev` (inputs on `host`): placeholders x0.. and p, the loss. */
static weft_output_t build_graph(const cfspec_t *s, weft_graph_t *g, weft_dtype_t dt,
                                 const char *dev, const char *host, weft_output_t *x,
                                 weft_status_t **st) {
  bld_t b = {g, dt, NULL};
  weft_output_t p = NONE;
  weft_graph_push_device(g, host);
  for (int i = 0; i < s->n_x && !b.st; i++) {
    char name[8];
    g_snprintf(name, sizeof name, "x%d", i);
    x[i] = weft_placeholder(g, name, dt, s->rank[i], s->dims[i], &b.st);
  }
  if (s->pred >= 0 && !b.st) p = weft_placeholder(g, "p", WEFT_DT_BOOL, 0, NULL, &b.st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, dev);
  weft_output_t loss = b.st ? NONE : s->build(&b, x, p);
  weft_graph_pop_device(g);
  *st = b.st;
  return loss;
}

/* Feeds x0.. (from inputs, as dtype dt) and p. */
typedef struct feeds {
  int n;
  const char *names[CF_MAX_X + 1];
  weft_tensor_t *t[CF_MAX_X + 1];
} feeds_t;

static const char *const x_names[CF_MAX_X] = {"x0", "x1", "x2"};

static weft_status_t *make_feeds(const cfspec_t *s, cf_array_t **inputs, weft_dtype_t dt,
                                 feeds_t *f) {
  weft_status_t *st = NULL;
  memset(f, 0, sizeof *f);
  for (int i = 0; i < s->n_x && !st; i++) {
    weft_dtype_t saved = inputs[i]->dtype;
    inputs[i]->dtype = dt;
    f->names[f->n] = x_names[i];
    f->t[f->n++] = cf_array_to_tensor(inputs[i], &st);
    inputs[i]->dtype = saved;
  }
  if (s->pred >= 0 && !st) {
    cf_array_t *p = cf_array_scalar(WEFT_DT_BOOL, s->pred);
    f->names[f->n] = "p";
    f->t[f->n++] = cf_array_to_tensor(p, &st);
    cf_array_free(p);
  }
  return st;
}

static void free_feeds(feeds_t *f) {
  for (int i = 0; i < f->n; i++) weft_tensor_unref(f->t[i]);
}

static weft_status_t *run_loss(weft_session_t *sess, const cfspec_t *s, cf_array_t **inputs,
                               const char *loss_name, double *out) {
  feeds_t f;
  weft_status_t *st = make_feeds(s, inputs, WEFT_DT_DOUBLE, &f);
  weft_tensor_t *y = NULL;
  if (!st) st = weft_session_run(sess, f.names, f.t, f.n, &loss_name, &y, 1, NULL, 0);
  if (!st) *out = weft_tensor_get_double(y, 0);
  weft_tensor_unref(y);
  free_feeds(&f);
  return st;
}

/* Central differences of the float64 graph on the CPU for every input; NULL and *why on
 * failure, else numeric[i] (the caller frees them). */
static bool numeric(const cfspec_t *s, cf_array_t **inputs, cf_array_t **grad, char **why) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t x[CF_MAX_X];
  weft_status_t *st = NULL;
  weft_output_t loss = build_graph(s, g, WEFT_DT_DOUBLE, "/device:CPU:0", "/device:CPU:0", x,
                                   &st);
  weft_session_t *sess = NULL;
  char *loss_name = NULL;
  if (!st) {
    loss_name = g_strdup_printf("%s:%d", weft_node_name(loss.node), loss.index);
    sess = weft_session_new(g, NULL, &st);
  }
  for (int i = 0; i < s->n_x && !st; i++) {
    grad[i] = cf_array_new(WEFT_DT_DOUBLE, inputs[i]->rank, inputs[i]->dims);
    for (int64_t e = 0; e < inputs[i]->n && !st; e++) {
      double saved = inputs[i]->v[e], h = 1e-6 * fmax(1.0, fabs(saved)), f[2] = {0, 0};
      for (int side = 0; side < 2 && !st; side++) {
        inputs[i]->v[e] = saved + (side ? -h : h);
        st = run_loss(sess, s, inputs, loss_name, &f[side]);
      }
      inputs[i]->v[e] = saved;
      grad[i]->v[e] = (f[0] - f[1]) / (2 * h);
    }
  }
  if (st) *why = g_strdup_printf("the float64 reference on the CPU: %s", weft_status_message(st));
  weft_status_free(st);
  weft_session_free(sess);
  g_free(loss_name);
  weft_graph_free(g);
  return *why == NULL;
}

static void run_one(cf_run_ctx_t *ctx, const cfspec_t *s, weft_dtype_t dtype) {
  cf_rng_t rng;
  char *name = cf_grad_begin(ctx, s->op, dtype, "grad_cf_", s->name, &rng);
  if (!name) return;
  const char *dev = ctx->device->spec;
  const char *host = ctx->cpu_spec ? ctx->cpu_spec : dev;
  cf_array_t *inputs[CF_MAX_X] = {NULL}, *want[CF_MAX_X] = {NULL};
  for (int i = 0; i < s->n_x; i++) {
    inputs[i] = cf_gen_uniform(&rng, dtype, s->rank[i], s->dims[i], s->lo, s->hi);
    for (int64_t e = 0; e < inputs[i]->n; e++)
      if (cf_rng_uniform(&rng, 0, 1) < 0.5) inputs[i]->v[e] = -inputs[i]->v[e];
    cf_array_round(inputs[i]); /* the reference differentiates at the values the device sees */
  }
  weft_output_t x[CF_MAX_X], grads[CF_MAX_X];
  weft_status_t *st = NULL;
  weft_session_t *sess = NULL;
  cf_status_t status = CF_PASSED;
  char *message = NULL;
  cf_compare_t cmp = {.ok = true};
  bool compared = false;
  feeds_t f = {0};
  weft_graph_t *g = weft_graph_new();
  weft_output_t loss = build_graph(s, g, dtype, dev, host, x, &st);
  if (!st) st = weft_gradients(g, &loss, 1, x, s->n_x, NULL, grads);
  if (st) {
    status = CF_FAILED;
    message = g_strdup_printf("building the graph or its gradient: %s", weft_status_message(st));
    goto done;
  }
  message = cf_grad_missing_kernel(ctx, g, 0, "the graph or its gradient");
  if (message) {
    status = CF_UNSUPPORTED;
    goto done;
  }
  sess = cf_grad_session(ctx, g, &st);
  if (!st) st = make_feeds(s, inputs, dtype, &f);
  char *why = NULL;
  if (!st && !numeric(s, inputs, want, &why)) {
    cmp.ok = false;
    cmp.message = why;
  }
  for (int i = 0; i < s->n_x && !st && cmp.ok; i++) {
    char *fetch = g_strdup_printf("%s:%d", weft_node_name(grads[i].node), grads[i].index);
    const char *fc = fetch;
    weft_tensor_t *got = NULL;
    st = weft_session_run(sess, f.names, f.t, f.n, &fc, &got, 1, NULL, 0);
    g_free(fetch);
    if (st) break;
    char what[48];
    g_snprintf(what, sizeof what, "gradient of x%d", i);
    cf_grad_compare(got, want[i], dtype, &cmp, what);
    compared = true;
    weft_tensor_unref(got);
  }
done:
  cf_grad_report(ctx, s->op, dtype, name, status, message, st, &cmp, compared);
  weft_status_free(st);
  weft_session_free(sess);
  free_feeds(&f);
  for (int i = 0; i < s->n_x; i++) {
    cf_array_free(inputs[i]);
    cf_array_free(want[i]);
  }
  weft_graph_free(g);
  g_free(name);
}

void cf_run_grad_cf_cases(cf_run_ctx_t *ctx, bool (*op_selected)(const char *op)) {
  static const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  for (size_t k = 0; k < G_N_ELEMENTS(specs); k++) {
    if (!op_selected(specs[k].op)) continue;
    for (size_t d = 0; d < G_N_ELEMENTS(dtypes); d++) run_one(ctx, &specs[k], dtypes[d]);
  }
}
