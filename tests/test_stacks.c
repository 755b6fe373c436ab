/* test_stacks.c: TensorFlow 1's stack ops (StackV2 family and the Ref forms) in a local session:
 * pushes and pops in LIFO order, each error with its exact code and message (empty, overflow,
 * wrong dtype, closed, bad and unknown handles), and a TF 1.x training graph laid out as
 * tf.gradients of a while loop lays it out (the forward loop pushes each iteration's values on
 * stacks made outside it, the gradient loop pops them in reverse), its gradient checked against
 * central differences of the recurrence computed here in double, built with the C API and
 * through a GraphDef round trip. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "weft/weft.h"

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

/* op(x), op(x, y), with an optional control input. */
static weft_output_t opc(weft_graph_t *g, const char *name, weft_output_t x, weft_output_t y,
                         weft_node_t *ctrl) {
  weft_op_builder_t *b = weft_op_new(g, name, NULL);
  if (x.node) weft_op_add_input(b, x);
  if (y.node) weft_op_add_input(b, y);
  if (ctrl) weft_op_add_control_input(b, ctrl);
  return weft_out(build(b), 0);
}

static weft_output_t op(weft_graph_t *g, const char *name, weft_output_t x, weft_output_t y) {
  return opc(g, name, x, y, NULL);
}

static weft_output_t scalar(weft_graph_t *g, weft_dtype_t dt, double v) {
  weft_tensor_t *t = weft_tensor_new(dt, 0, NULL);
  if (dt == WEFT_DT_DOUBLE) *(double *)weft_tensor_data(t) = v;
  else if (dt == WEFT_DT_FLOAT) *(float *)weft_tensor_data(t) = (float)v;
  else *(int32_t *)weft_tensor_data(t) = (int32_t)v;
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, "c", t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

/* A stack: StackV2(max_size) of elem_type, or the Ref form (max_size < -1). */
static weft_output_t new_stack(weft_graph_t *g, const char *name, weft_dtype_t elem, int max) {
  bool ref = max < -1;
  weft_op_builder_t *b = weft_op_new(g, ref ? "Stack" : "StackV2", name);
  if (!ref) weft_op_add_input(b, scalar(g, WEFT_DT_INT32, max));
  weft_op_set_attr_type(b, "elem_type", elem);
  weft_op_set_attr_string(b, "stack_name", name);
  return weft_out(build(b), 0);
}

static bool is_ref(weft_output_t h) { return h.node->output_types[0] >= WEFT_DT_REF_OFFSET; }

static weft_output_t push(weft_graph_t *g, weft_output_t h, weft_output_t v, weft_node_t *after) {
  return opc(g, is_ref(h) ? "StackPush" : "StackPushV2", h, v, after);
}

static weft_output_t pop(weft_graph_t *g, weft_output_t h, weft_dtype_t t, weft_node_t *after) {
  weft_op_builder_t *b = weft_op_new(g, is_ref(h) ? "StackPop" : "StackPopV2", "pop");
  weft_op_add_input(b, h);
  weft_op_set_attr_type(b, "elem_type", t);
  if (after) weft_op_add_control_input(b, after);
  return weft_out(build(b), 0);
}

static weft_node_t *close_stack(weft_graph_t *g, weft_output_t h, weft_node_t *after) {
  return opc(g, is_ref(h) ? "StackClose" : "StackCloseV2", h, NONE, after).node;
}

static char *tname(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

/* Runs the graph fetching outs (n of them); targets (may be NULL) run too. */
static weft_status_t *run(weft_graph_t *g, const char **feed_names, weft_tensor_t **feeds,
                          int n_feeds, const weft_output_t *outs, int n, weft_tensor_t **got,
                          weft_node_t *target) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  char *names[4] = {0};
  for (int i = 0; i < n; i++) names[i] = tname(outs[i]);
  const char *tg = target ? weft_node_name(target) : NULL;
  st = weft_session_run(s, feed_names, feeds, n_feeds, (const char **)names, got, n,
                        target ? &tg : NULL, target ? 1 : 0);
  for (int i = 0; i < n; i++) g_free(names[i]);
  weft_session_free(s);
  return st;
}

/* Three pushes and three pops, chained by control edges: last in, first out. */
static void lifo(bool ref) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t h = new_stack(g, "s", WEFT_DT_FLOAT, ref ? -2 : -1);
  weft_output_t p1 = push(g, h, scalar(g, WEFT_DT_FLOAT, 1.5), NULL);
  weft_output_t p2 = push(g, h, scalar(g, WEFT_DT_FLOAT, -2), p1.node);
  weft_output_t p3 = push(g, h, scalar(g, WEFT_DT_FLOAT, 7), p2.node);
  weft_output_t a = pop(g, h, WEFT_DT_FLOAT, p3.node);
  weft_output_t b = pop(g, h, WEFT_DT_FLOAT, a.node);
  weft_output_t c = pop(g, h, WEFT_DT_FLOAT, b.node);
  weft_node_t *cl = close_stack(g, h, c.node);
  weft_output_t outs[4] = {a, b, c, p2};
  weft_tensor_t *got[4] = {0};
  OK(run(g, NULL, NULL, 0, outs, 4, got, cl));
  const double want[4] = {7, -2, 1.5, -2}; /* a push forwards the element it pushed */
  for (int i = 0; i < 4; i++) {
    g_assert_cmpint(weft_tensor_dtype(got[i]), ==, WEFT_DT_FLOAT);
    g_assert_cmpfloat(weft_tensor_get_double(got[i], 0), ==, want[i]);
    weft_tensor_unref(got[i]);
  }
  weft_graph_free(g);
}

static void test_lifo_v2(void) { lifo(false); }
static void test_lifo_ref(void) { lifo(true); }

/* Runs fetch and expects code and a message "node '<node>': <prefix>NAME_<k><suffix> (op ...)"
 * where the stack's unique name is the stack_name attr and a process-wide counter, as
 * TensorFlow's; the executor adds the op and device. */
static void expect(weft_graph_t *g, weft_output_t fetch, weft_node_t *target, weft_code_t code,
                   const char *prefix, const char *suffix) {
  weft_tensor_t *got = NULL;
  weft_status_t *st = run(g, NULL, NULL, 0, fetch.node ? &fetch : NULL, fetch.node ? 1 : 0, &got,
                          target);
  g_assert_nonnull(st);
  const char *m = weft_status_message(st);
  const char *at = strstr(m, prefix);
  if (weft_status_code(st) != code || !at || !strstr(at + strlen(prefix), suffix) ||
      !strstr(m, " (op Stack"))
    g_error("got %s: %s; want %s: ...%s...%s", weft_code_name(weft_status_code(st)), m,
            weft_code_name(code), prefix, suffix);
  weft_status_free(st);
  weft_graph_free(g);
}

static void test_errors(void) {
  for (int ref = 0; ref < 2; ref++) {
    int unlimited = ref ? -2 : -1;
    weft_graph_t *g = weft_graph_new();
    weft_output_t h = new_stack(g, "empty", WEFT_DT_FLOAT, unlimited);
    expect(g, pop(g, h, WEFT_DT_FLOAT, NULL), NULL, WEFT_INVALID_ARGUMENT,
           "node 'pop': Stack[empty_", "] is empty when calling Pop().");

    g = weft_graph_new();
    h = new_stack(g, "typed", WEFT_DT_FLOAT, unlimited);
    expect(g, push(g, h, scalar(g, WEFT_DT_INT32, 3), NULL), NULL, WEFT_INVALID_ARGUMENT,
           "Must have type 1 but got 3", "");

    g = weft_graph_new();
    h = new_stack(g, "shut", WEFT_DT_FLOAT, unlimited);
    weft_node_t *cl = close_stack(g, h, NULL);
    expect(g, push(g, h, scalar(g, WEFT_DT_FLOAT, 1), cl), NULL, WEFT_INVALID_ARGUMENT,
           "Stack[shut_", "] has already been closed.");

    g = weft_graph_new();
    h = new_stack(g, "popty", WEFT_DT_FLOAT, unlimited);
    weft_output_t p = push(g, h, scalar(g, WEFT_DT_FLOAT, 1), NULL);
    expect(g, pop(g, h, WEFT_DT_DOUBLE, p.node), NULL, WEFT_INVALID_ARGUMENT, "Stack[popty_",
           "] holds type 1 but the pop's elem_type is 2");
  }
  /* max_size: StackV2 only. */
  weft_graph_t *g = weft_graph_new();
  weft_output_t h = new_stack(g, "small", WEFT_DT_FLOAT, 1);
  weft_output_t p = push(g, h, scalar(g, WEFT_DT_FLOAT, 1), NULL);
  expect(g, push(g, h, scalar(g, WEFT_DT_FLOAT, 2), p.node), NULL, WEFT_INVALID_ARGUMENT,
         "Stack[small_", "] overflowed its max_size (1)");
  /* Handles that name no stack of the step. */
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){2});
  OK(weft_tensor_set_string(t, 0, "_stacks", 7));
  OK(weft_tensor_set_string(t, 1, "nope", 4));
  g = weft_graph_new();
  weft_status_t *st = NULL;
  h = weft_const(g, "handle", t, &st);
  OK(st);
  weft_tensor_unref(t);
  expect(g, pop(g, h, WEFT_DT_FLOAT, NULL), NULL, WEFT_NOT_FOUND,
         "node 'pop': Resource _stacks/nope/N10tensorflow5StackE does not exist.", "");
  t = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){3});
  g = weft_graph_new();
  h = weft_const(g, "handle", t, &st);
  OK(st);
  weft_tensor_unref(t);
  weft_op_builder_t *b = weft_op_new(g, "StackPopV2", "pop");
  weft_op_add_input(b, h);
  weft_op_set_attr_type(b, "elem_type", WEFT_DT_FLOAT);
  weft_node_t *n = NULL;
  st = weft_op_finish(b, &n);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "node 'pop': Shape of stack handle must be [2], but is 3");
  weft_status_free(st);
  weft_graph_free(g);
  /* A max_size that is no scalar. */
  g = weft_graph_new();
  t = weft_tensor_new(WEFT_DT_INT32, 1, (int64_t[]){2});
  weft_output_t sz = weft_placeholder(g, "sz", WEFT_DT_INT32, -1, NULL, &st);
  OK(st);
  b = weft_op_new(g, "StackV2", "bad");
  weft_op_add_input(b, sz);
  weft_op_set_attr_type(b, "elem_type", WEFT_DT_FLOAT);
  weft_output_t bad = weft_out(build(b), 0);
  const char *fn = "sz";
  weft_tensor_t *got = NULL;
  st = run(g, &fn, &t, 1, &bad, 1, &got, NULL);
  weft_tensor_unref(t);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "node 'bad': Stack size must be a scalar, but had shape: [2] (op StackV2 on "
                  "/job:localhost/replica:0/task:0/device:CPU:0)");
  weft_status_free(st);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * A TF 1.x training graph: v_{k+1} = tanh(w v_k), v_0 = 0.5, N iterations, y = v_N; dy/dw by
 * a gradient loop over stacks, as tf.gradients of the tf.while_loop emits it. */

enum { N = 5 };

static double recurrence(double w) {
  double v = 0.5;
  for (int k = 0; k < N; k++) v = tanh(w * v);
  return v;
}

static weft_output_t enter(weft_graph_t *g, weft_output_t x, const char *frame, bool constant) {
  weft_op_builder_t *b = weft_op_new(g, "Enter", NULL);
  weft_op_add_input(b, x);
  weft_op_set_attr_string(b, "frame_name", frame);
  weft_op_set_attr_bool(b, "is_constant", constant);
  weft_op_set_attr_int(b, "parallel_iterations", 10);
  return weft_out(build(b), 0);
}

typedef struct var {
  weft_node_t *merge, *sw;
  weft_output_t body;
} var_t;

static var_t open_var(weft_graph_t *g, weft_output_t init, const char *frame) {
  var_t v = {0};
  weft_output_t e = enter(g, init, frame, false);
  weft_output_t ins[2] = {e, e};
  weft_op_builder_t *b = weft_op_new(g, "Merge", NULL);
  weft_op_add_input_list(b, ins, 2);
  v.merge = build(b);
  return v;
}

static void switch_var(weft_graph_t *g, var_t *v, weft_output_t cond) {
  weft_op_builder_t *b = weft_op_new(g, "Switch", NULL);
  weft_op_add_input(b, weft_out(v->merge, 0));
  weft_op_add_input(b, cond);
  v->sw = build(b);
  v->body = op(g, "Identity", weft_out(v->sw, 1), NONE);
}

/* Closes the back edge (as an import links it) and returns the Exit. */
static weft_output_t close_var(weft_graph_t *g, var_t *v, weft_output_t next) {
  weft_output_t ni = op(g, "NextIteration", next, NONE);
  v->merge->inputs[1].src = ni.node;
  v->merge->inputs[1].src_index = 0;
  v->merge->output_ranks[0] = -1;
  return op(g, "Exit", weft_out(v->sw, 0), NONE);
}

/* Runs the training graph for three w, fetching y and dy/dw (names) and running target, and
 * checks them against the recurrence and its central differences. */
static void check_training(weft_graph_t *g, const char **names, const char *target) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const double ws[3] = {0.7, 1.3, -0.9};
  for (int k = 0; k < 3; k++) {
    weft_tensor_t *wt = weft_tensor_new(WEFT_DT_DOUBLE, 0, NULL);
    *(double *)weft_tensor_data(wt) = ws[k];
    const char *fn = "w";
    weft_tensor_t *got[2] = {0};
    OK(weft_session_run(s, &fn, &wt, 1, names, got, 2, &target, 1));
    double want_y = recurrence(ws[k]);
    const double eps = 1e-6;
    double want_g = (recurrence(ws[k] + eps) - recurrence(ws[k] - eps)) / (2 * eps);
    double got_y = weft_tensor_get_double(got[0], 0), got_g = weft_tensor_get_double(got[1], 0);
    if (fabs(got_y - want_y) > 1e-12 || fabs(got_g - want_g) > 1e-7 * fmax(1, fabs(want_g)))
      g_error("w=%g: y %.12g (want %.12g), dy/dw %.12g (central differences %.12g)", ws[k],
              got_y, want_y, got_g, want_g);
    g_assert_true(got_g != 0);
    for (int q = 0; q < 2; q++) weft_tensor_unref(got[q]);
    weft_tensor_unref(wt);
  }
  weft_session_free(s);
}

static void test_training_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t w = weft_placeholder(g, "w", WEFT_DT_DOUBLE, 0, NULL, &st);
  OK(st);
  /* The accumulators, made outside the loop (GradLoopState.AddForwardAccumulator). */
  weft_output_t acc_v = new_stack(g, "v_acc", WEFT_DT_DOUBLE, -1);
  weft_output_t acc_t = new_stack(g, "t_acc", WEFT_DT_DOUBLE, -1);

  /* Forward: i < N; v = tanh(w * push(v)); the counter waits for both pushes (TensorFlow
   * orders its forward_index after the push the same way). */
  const char *f = "while";
  var_t i = open_var(g, scalar(g, WEFT_DT_INT32, 0), f);
  var_t v = open_var(g, scalar(g, WEFT_DT_DOUBLE, 0.5), f);
  weft_output_t cond =
      op(g, "LoopCond", op(g, "Less", weft_out(i.merge, 0), enter(g, scalar(g, WEFT_DT_INT32, N),
                                                                  f, true)), NONE);
  switch_var(g, &i, cond);
  switch_var(g, &v, cond);
  weft_output_t pv = push(g, enter(g, acc_v, f, true), v.body, NULL);
  weft_output_t pre = op(g, "Mul", enter(g, w, f, true), pv);
  weft_output_t tk = op(g, "Tanh", pre, NONE);
  weft_output_t pt = push(g, enter(g, acc_t, f, true), tk, NULL);
  weft_op_builder_t *ob = weft_op_new(g, "AddV2", NULL);
  weft_op_add_input(ob, i.body);
  weft_op_add_input(ob, enter(g, scalar(g, WEFT_DT_INT32, 1), f, true));
  weft_op_add_control_input(ob, pv.node);
  weft_op_add_control_input(ob, pt.node);
  weft_output_t inext = weft_out(build(ob), 0);
  weft_output_t count = close_var(g, &i, inext);
  weft_output_t y = close_var(g, &v, pt);

  /* Gradient: count iterations back; g = dy/dv_k; each iteration pops t_k and v_k (after the
   * previous iteration's gradient, so the pops keep the pushes' order). */
  const char *bf = "while/grad";
  var_t j = open_var(g, count, bf);
  var_t gv = open_var(g, op(g, "OnesLike", y, NONE), bf);
  var_t dw = open_var(g, op(g, "ZerosLike", w, NONE), bf);
  weft_output_t bcond =
      op(g, "LoopCond",
         op(g, "Greater", weft_out(j.merge, 0), enter(g, scalar(g, WEFT_DT_INT32, 0), bf, true)),
         NONE);
  switch_var(g, &j, bcond);
  switch_var(g, &gv, bcond);
  switch_var(g, &dw, bcond);
  weft_output_t t_pop = pop(g, enter(g, acc_t, bf, true), WEFT_DT_DOUBLE, gv.body.node);
  weft_output_t v_pop = pop(g, enter(g, acc_v, bf, true), WEFT_DT_DOUBLE, gv.body.node);
  weft_output_t one = enter(g, scalar(g, WEFT_DT_DOUBLE, 1), bf, true);
  weft_output_t dpre =
      op(g, "Mul", gv.body, op(g, "Sub", one, op(g, "Mul", t_pop, t_pop)));
  weft_output_t dw_next = op(g, "AddV2", dw.body, op(g, "Mul", dpre, v_pop));
  weft_output_t g_next = op(g, "Mul", dpre, enter(g, w, bf, true));
  weft_output_t j_next = op(g, "Sub", j.body, enter(g, scalar(g, WEFT_DT_INT32, 1), bf, true));
  close_var(g, &j, j_next);
  close_var(g, &gv, g_next);
  weft_output_t dw_out = close_var(g, &dw, dw_next);
  /* The stacks are closed once the gradient is out (both empty by then). */
  weft_node_t *c1 = close_stack(g, acc_v, dw_out.node);
  weft_node_t *c2 = close_stack(g, acc_t, c1);

  char *names[2] = {tname(y), tname(dw_out)};
  check_training(g, (const char **)names, weft_node_name(c2));
  /* The same graph through TensorFlow's wire format, as a TF 1.x graph file holds it. */
  void *bytes = NULL;
  size_t len = 0;
  OK(weft_graph_export_graphdef(g, &bytes, &len));
  weft_graph_t *g2 = weft_graph_new();
  OK(weft_graph_import_graphdef(g2, bytes, len, NULL));
  weft_free(bytes);
  check_training(g2, (const char **)names, weft_node_name(c2));
  weft_graph_free(g2);
  g_free(names[0]);
  g_free(names[1]);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/stacks/lifo_v2", test_lifo_v2);
  g_test_add_func("/stacks/lifo_ref", test_lifo_ref);
  g_test_add_func("/stacks/errors", test_errors);
  g_test_add_func("/stacks/tf1_while_gradient", test_training_graph);
  return g_test_run();
}
