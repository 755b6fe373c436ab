/* test_constfold.c: plan-time constant folding (core/src/exec/constfold.c). Each case runs a
 * graph in a session planned with folding and in one with WEFT_NO_FUSION=constfold, asserts the
 * results are the same bits (and against values worked out by hand), and reads from the step
 * stats which nodes still ran: fed nodes, stateful ops, variables, nodes with a control input
 * from a non-constant node and erroring subgraphs stay; fetched folded nodes still answer. */
#include <glib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"

#define OK(st)                                                             \
  do {                                                                     \
    weft_status_t *st_ = (st);                                             \
    if (st_) g_error("%s: %s", #st, weft_status_message(st_));             \
  } while (0)

/* What one step gave: its fetches (up to 2), its status and "node=op;" of every node that ran. */
typedef struct step {
  weft_tensor_t *out[2];
  weft_status_t *status;
  char *ops;
} step_t;

static void step_clear(step_t *s) {
  for (int k = 0; k < 2; k++) weft_tensor_unref(s->out[k]);
  weft_status_free(s->status);
  g_free(s->ops);
}

/* One step of `s` fetching fetches[0..n) with feed `feed_name` = `feed` when feed is not NULL. */
static step_t run_in(weft_session_t *s, const char *const *fetches, int n, const char *feed_name,
                     weft_tensor_t *feed) {
  step_t r = {{NULL, NULL}, NULL, NULL};
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  weft_run_metadata_t *meta = NULL;
  r.status = weft_session_run_with_options(s, ro, &feed_name, &feed, feed ? 1 : 0, fetches, r.out,
                                           n, NULL, 0, &meta);
  GString *log = g_string_new(NULL);
  for (int k = 0; meta && k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *rec = weft_run_metadata_node_stats(meta, k);
    g_string_append_printf(log, "%s=%s;", rec->node_name, rec->op);
  }
  r.ops = g_string_free(log, FALSE);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  return r;
}

static weft_session_t *session(weft_graph_t *g, bool fold) {
  if (fold) g_unsetenv("WEFT_NO_FUSION");
  else g_setenv("WEFT_NO_FUSION", "constfold", TRUE);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  return s;
}

/* One step with and one without folding, each in a new session. */
static void run_both(weft_graph_t *g, const char *const *fetches, int n, const char *feed_name,
                     weft_tensor_t *feed, step_t *folded, step_t *plain) {
  weft_session_t *s = session(g, true);
  *folded = run_in(s, fetches, n, feed_name, feed);
  weft_session_free(s);
  s = session(g, false);
  *plain = run_in(s, fetches, n, feed_name, feed);
  weft_session_free(s);
  g_unsetenv("WEFT_NO_FUSION");
}

static bool ran(const step_t *s, const char *node) {
  char *key = g_strdup_printf("%s=", node);
  bool found = strncmp(s->ops, key, strlen(key)) == 0;
  char *inner = g_strdup_printf(";%s=", node);
  found = found || strstr(s->ops, inner) != NULL;
  g_free(key);
  g_free(inner);
  return found;
}

static void assert_same_bits(const weft_tensor_t *a, const weft_tensor_t *b) {
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  g_assert_cmpint(weft_tensor_dtype(a), ==, weft_tensor_dtype(b));
  g_assert_cmpint(weft_tensor_rank(a), ==, weft_tensor_rank(b));
  for (int d = 0; d < weft_tensor_rank(a); d++)
    g_assert_cmpint(weft_tensor_dims(a)[d], ==, weft_tensor_dims(b)[d]);
  g_assert_cmpint(weft_tensor_nbytes(a), ==, weft_tensor_nbytes(b));
  g_assert_cmpmem(weft_tensor_data(a), weft_tensor_nbytes(a), weft_tensor_data(b),
                  weft_tensor_nbytes(b));
}

static weft_output_t const_i32(weft_graph_t *g, const char *name, int n, const int32_t *v) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_INT32, 1, dims, v, sizeof(int32_t) * n,
                                               NULL);
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t node(weft_graph_t *g, const char *op, const char *name,
                          const weft_output_t *in, int n_in, weft_dtype_t t) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  for (int i = 0; i < n_in; i++) weft_op_add_input(b, in[i]);
  if (t != WEFT_DT_INVALID) weft_op_set_attr_type(b, "T", t);
  weft_node_t *nd = NULL;
  OK(weft_op_finish(b, &nd));
  return weft_out(nd, 0);
}

/* A frozen graph's output size: Shape of a Const [2, 3, 5] -> StridedSlice [1] -> Mul 2 ->
 * Pack with 5 -> Reshape of the fed x [30] to [6, 5]. */
static weft_graph_t *shape_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t dims[3] = {2, 3, 5};
  weft_tensor_t *zt = weft_tensor_new(WEFT_DT_FLOAT, 3, dims);
  weft_output_t z = weft_const(g, "z", zt, &st);
  weft_tensor_unref(zt);
  int64_t xd[1] = {30};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, xd, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Shape", "shape");
  weft_op_add_input(b, z);
  weft_node_t *shape = NULL;
  OK(weft_op_finish(b, &shape));
  int32_t one[1] = {1}, two[1] = {2};
  weft_output_t begin = const_i32(g, "begin", 1, one), end = const_i32(g, "end", 1, two);
  weft_output_t strides = const_i32(g, "strides", 1, one);
  b = weft_op_new(g, "StridedSlice", "slice");
  weft_op_add_input(b, weft_out(shape, 0));
  weft_op_add_input(b, begin);
  weft_op_add_input(b, end);
  weft_op_add_input(b, strides);
  weft_op_set_attr_int(b, "shrink_axis_mask", 1);
  weft_node_t *slice = NULL;
  OK(weft_op_finish(b, &slice));
  int64_t none[1] = {0};
  weft_tensor_t *two_t =
      weft_tensor_new_from_data(WEFT_DT_INT32, 0, none, two, sizeof(int32_t), NULL);
  weft_output_t c2 = weft_const(g, "two", two_t, &st);
  weft_tensor_unref(two_t);
  OK(st);
  weft_output_t mul = weft_binary(g, "Mul", "mul", weft_out(slice, 0), c2, &st);
  OK(st);
  int32_t five[1] = {5};
  weft_tensor_t *five_t =
      weft_tensor_new_from_data(WEFT_DT_INT32, 0, none, five, sizeof(int32_t), NULL);
  weft_output_t c5 = weft_const(g, "five", five_t, &st);
  weft_tensor_unref(five_t);
  OK(st);
  b = weft_op_new(g, "Pack", "pack");
  weft_output_t parts[2] = {mul, c5};
  weft_op_add_input_list(b, parts, 2);
  weft_node_t *pack = NULL;
  OK(weft_op_finish(b, &pack));
  weft_output_t rin[2] = {x, weft_out(pack, 0)};
  node(g, "Reshape", "out", rin, 2, WEFT_DT_INVALID);
  return g;
}

static weft_tensor_t *ramp30(void) {
  int64_t d[1] = {30};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
  float *p = weft_tensor_data(t);
  for (int k = 0; k < 30; k++) p[k] = 0.5f * (float)k - 3.0f;
  return t;
}

static void test_shape_chain(void) {
  weft_graph_t *g = shape_graph();
  weft_tensor_t *x = ramp30();
  const char *fetches[2] = {"out", "pack"};
  step_t f, p;
  run_both(g, fetches, 2, "x", x, &f, &p);
  OK(f.status);
  OK(p.status);
  assert_same_bits(f.out[0], p.out[0]);
  assert_same_bits(f.out[1], p.out[1]);
  g_assert_cmpint(weft_tensor_dims(f.out[0])[0], ==, 6);
  g_assert_cmpint(weft_tensor_dims(f.out[0])[1], ==, 5);
  const int32_t *pk = weft_tensor_data(f.out[1]);
  g_assert_cmpint(pk[0], ==, 6); /* 3 * 2 */
  g_assert_cmpint(pk[1], ==, 5);
  /* Folded: the shape arithmetic is gone, the fetched Pack answers from its Const. */
  g_assert_false(ran(&f, "shape"));
  g_assert_false(ran(&f, "slice"));
  g_assert_false(ran(&f, "mul"));
  g_assert_true(ran(&f, "out"));
  g_assert_nonnull(strstr(f.ops, "pack=Const;"));
  g_assert_true(ran(&p, "shape") && ran(&p, "slice") && ran(&p, "mul"));
  g_assert_nonnull(strstr(p.ops, "pack=Pack;"));
  step_clear(&f);
  step_clear(&p);
  weft_tensor_unref(x);
  weft_graph_free(g);
}

/* A node the caller feeds is not constant for that step, nor is what depends on it; the same
 * session folds it again in a step that does not feed it. */
static void test_fed_node(void) {
  weft_graph_t *g = shape_graph();
  weft_tensor_t *x = ramp30();
  weft_session_t *s = session(g, true);
  const char *out[1] = {"out"};
  int64_t none[1] = {0};
  int32_t ten = 10;
  weft_tensor_t *mul = weft_tensor_new_from_data(WEFT_DT_INT32, 0, none, &ten, sizeof ten, NULL);
  const char *feed_names[2] = {"x", "mul"};
  weft_tensor_t *feeds[2] = {x, mul};
  for (int round = 0; round < 2; round++) {
    step_t a = run_in(s, out, 1, "x", x);
    OK(a.status);
    g_assert_cmpint(weft_tensor_dims(a.out[0])[0], ==, 6);
    g_assert_nonnull(strstr(a.ops, "pack=Const;"));
    step_clear(&a);
    weft_tensor_t *r = NULL;
    /* x and mul fed: the Pack reads 10 and cannot be folded; [10, 5] does not hold 30. */
    weft_status_t *st = weft_session_run(s, feed_names, feeds, 2, out, &r, 1, NULL, 0);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    g_assert_nonnull(strstr(weft_status_message(st), "out"));
    weft_status_free(st);
    weft_tensor_unref(r);
  }
  /* Fed with a fitting value, the step runs the Pack. */
  int32_t six = 6;
  weft_tensor_t *mul6 = weft_tensor_new_from_data(WEFT_DT_INT32, 0, none, &six, sizeof six, NULL);
  feeds[1] = mul6;
  weft_tensor_t *o = NULL;
  OK(weft_session_run(s, feed_names, feeds, 2, out, &o, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_dims(o)[0], ==, 6);
  g_assert_cmpint(weft_tensor_dims(o)[1], ==, 5);
  weft_tensor_unref(o);
  weft_tensor_unref(mul6);
  weft_tensor_unref(mul);
  weft_session_free(s);
  g_unsetenv("WEFT_NO_FUSION");
  weft_tensor_unref(x);
  weft_graph_free(g);
}

/* Float arithmetic of Consts: (a * b + c) / d, fetched alone (every node folded). */
static void test_arithmetic(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d[1] = {4};
  float av[4] = {1.5f, -2.0f, 3.25f, 0.1f}, bv[4] = {2.0f, 0.3f, -1.0f, 7.0f};
  weft_tensor_t *at = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d, av, sizeof av, NULL);
  weft_tensor_t *bt = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d, bv, sizeof bv, NULL);
  weft_output_t a = weft_const(g, "a", at, &st), b = weft_const(g, "b", bt, &st);
  weft_output_t c = weft_const_float(g, "c", 0.25f, &st), dd = weft_const_float(g, "d", 3.0f, &st);
  weft_output_t m = weft_binary(g, "Mul", "m", a, b, &st);
  weft_output_t s = weft_binary(g, "AddV2", "s", m, c, &st);
  weft_binary(g, "RealDiv", "q", s, dd, &st);
  OK(st);
  const char *fetches[1] = {"q"};
  step_t f, p;
  run_both(g, fetches, 1, NULL, NULL, &f, &p);
  OK(f.status);
  OK(p.status);
  assert_same_bits(f.out[0], p.out[0]);
  const float *q = weft_tensor_data(f.out[0]);
  for (int k = 0; k < 4; k++) {
    volatile float prod = av[k] * bv[k];
    volatile float sum = prod + 0.25f;
    g_assert_cmpfloat(q[k], ==, sum / 3.0f);
  }
  g_assert_cmpstr(f.ops, ==, "q=Const;");
  g_assert_true(ran(&p, "m") && ran(&p, "s") && ran(&p, "q"));
  step_clear(&f);
  step_clear(&p);
  weft_tensor_unref(at);
  weft_tensor_unref(bt);
  weft_graph_free(g);
}

/* RandomUniform of a Const shape is stateful: it and what reads it run every step (two steps
 * of one session differ). A node with a control input from it is not folded either, while one
 * whose control input is a Const is. */
static void test_stateful_and_control(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int32_t n[1] = {64};
  weft_output_t shape = const_i32(g, "shape", 1, n);
  weft_op_builder_t *b = weft_op_new(g, "RandomUniform", "rand");
  weft_op_add_input(b, shape);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_node_t *rand = NULL;
  OK(weft_op_finish(b, &rand));
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_output_t three = weft_const_float(g, "three", 3.0f, &st);
  OK(st);
  weft_binary(g, "Mul", "scaled", weft_out(rand, 0), two, &st);
  OK(st);
  b = weft_op_new(g, "Square", "after_rand"); /* control input from the random op */
  weft_op_add_input(b, three);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_add_control_input(b, rand);
  weft_node_t *after = NULL;
  OK(weft_op_finish(b, &after));
  b = weft_op_new(g, "Square", "after_const"); /* control input from a Const */
  weft_op_add_input(b, three);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_add_control_input(b, two.node);
  weft_node_t *after_const = NULL;
  OK(weft_op_finish(b, &after_const));
  weft_session_t *s = session(g, true);
  const char *fetches[2] = {"scaled", "after_rand"};
  step_t r1 = run_in(s, fetches, 2, NULL, NULL), r2 = run_in(s, fetches, 2, NULL, NULL);
  OK(r1.status);
  OK(r2.status);
  g_assert_true(ran(&r1, "rand") && ran(&r1, "scaled"));
  g_assert_nonnull(strstr(r1.ops, "after_rand=Square;"));
  g_assert_cmpmem(weft_tensor_data(r1.out[1]), 4, (float[]){9.0f}, 4);
  g_assert_true(memcmp(weft_tensor_data(r1.out[0]), weft_tensor_data(r2.out[0]), 64 * 4) != 0);
  const char *other[1] = {"after_const"};
  step_t r3 = run_in(s, other, 1, NULL, NULL);
  OK(r3.status);
  g_assert_cmpstr(r3.ops, ==, "after_const=Const;");
  g_assert_cmpmem(weft_tensor_data(r3.out[0]), 4, (float[]){9.0f}, 4);
  step_clear(&r1);
  step_clear(&r2);
  step_clear(&r3);
  weft_session_free(s);
  weft_graph_free(g);
}

/* StatelessRandomNormal is not stateful: of a Const shape and seed it folds into a Const, with
 * the bits the kernel gives unfolded, and every step of every session answers the same. */
static void test_stateless_random(void) {
  weft_graph_t *g = weft_graph_new();
  int32_t n[2] = {3, 5}, seed[2] = {1, 2};
  weft_output_t shape = const_i32(g, "shape", 2, n), sd = const_i32(g, "seed", 2, seed);
  weft_op_builder_t *b = weft_op_new(g, "StatelessRandomNormal", "rnd");
  weft_op_add_input(b, shape);
  weft_op_add_input(b, sd);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_node_t *rnd = NULL;
  OK(weft_op_finish(b, &rnd));
  const char *fetches[1] = {"rnd"};
  step_t folded, plain;
  run_both(g, fetches, 1, NULL, NULL, &folded, &plain);
  OK(folded.status);
  OK(plain.status);
  g_assert_cmpstr(folded.ops, ==, "rnd=Const;");
  g_assert_true(ran(&plain, "rnd"));
  g_assert_nonnull(strstr(plain.ops, "rnd=StatelessRandomNormal;"));
  assert_same_bits(folded.out[0], plain.out[0]);
  /* TensorFlow's guide: stateless_normal([2, 3], seed=[1, 2]) starts 0.5441101, 0.20738031. */
  const float *v = weft_tensor_data(plain.out[0]);
  g_assert_cmpfloat(fabsf(v[0] - 0.5441101f), <, 1e-7f);
  g_assert_cmpfloat(fabsf(v[1] - 0.20738031f), <, 1e-7f);
  weft_session_t *s = session(g, false);
  step_t again = run_in(s, fetches, 1, NULL, NULL);
  OK(again.status);
  assert_same_bits(again.out[0], plain.out[0]);
  g_unsetenv("WEFT_NO_FUSION");
  step_clear(&again);
  weft_session_free(s);
  step_clear(&folded);
  step_clear(&plain);
  weft_graph_free(g);
}

/* A Reshape of Consts that cannot hold: folding keeps it, and the step fails as it would
 * unfolded, with the same code and message. */
static void test_error_kept(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d[1] = {6};
  weft_tensor_t *vt = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
  weft_output_t v = weft_const(g, "v", vt, &st);
  weft_tensor_unref(vt);
  OK(st);
  /* [2] + [2]: a folded node, so that shape inference cannot read the bad size early. */
  int32_t half[1] = {2};
  weft_output_t h1 = const_i32(g, "h1", 1, half), h2 = const_i32(g, "h2", 1, half);
  weft_output_t shape = weft_binary(g, "AddV2", "bad_shape", h1, h2, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Reshape", "reshape");
  weft_op_add_input(b, v);
  weft_op_add_input(b, shape);
  weft_node_t *reshape = NULL;
  /* Shape inference may already refuse it: then there is nothing to run. */
  st = weft_op_finish(b, &reshape);
  if (st) {
    weft_status_free(st);
    weft_graph_free(g);
    g_test_skip("Reshape [6] -> [4] refused at graph construction");
    return;
  }
  weft_unary(g, "Neg", "neg", weft_out(reshape, 0), &st);
  OK(st);
  const char *fetches[1] = {"neg"};
  step_t f, p;
  run_both(g, fetches, 1, NULL, NULL, &f, &p);
  g_assert_nonnull(f.status);
  g_assert_cmpint(weft_status_code(f.status), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpint(weft_status_code(f.status), ==, weft_status_code(p.status));
  g_assert_cmpstr(weft_status_message(f.status), ==, weft_status_message(p.status));
  g_assert_nonnull(strstr(weft_status_message(f.status), "reshape"));
  step_clear(&f);
  step_clear(&p);
  weft_graph_free(g);
}

/* A chain of 40 Negs over a 4 MiB Const: the pass folds until it holds 64 MiB of values (or has
 * spent its time), and the rest of the chain runs in the step, to the same value. */
static void test_bounded(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/device:CPU:0");
  int64_t n = 1 << 20;
  weft_tensor_t *big = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  float *v = weft_tensor_data(big);
  for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 7) - 3.0f;
  weft_output_t x = weft_const(g, "big", big, &st);
  OK(st);
  for (int k = 0; k < 40; k++) {
    char name[16];
    g_snprintf(name, sizeof name, "neg%d", k);
    x = weft_unary(g, "Neg", name, x, &st);
    OK(st);
  }
  weft_graph_pop_device(g);
  weft_session_t *s = session(g, true);
  const char *fetch[] = {"neg39"};
  step_t r = run_in(s, fetch, 1, NULL, NULL);
  OK(r.status);
  r.status = NULL;
  g_assert_cmpint(memcmp(weft_tensor_data(r.out[0]), v, (size_t)n * sizeof(float)), ==, 0);
  g_test_message("ran: %s", r.ops);
  g_assert_null(strstr(r.ops, "neg0="));             /* folded */
  /* Past the bound the rest runs in the step (here fused into one node named neg39). */
  g_assert_nonnull(strstr(r.ops, "neg39="));
  g_assert_null(strstr(r.ops, "neg39=Const"));
  step_clear(&r);
  weft_session_free(s);
  weft_tensor_unref(big);
  weft_graph_free(g);
}

/* A variable's read is not constant: Mul(read, 2) runs, and sees a new assignment. */
static void test_variable_kept(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t init = weft_const_float(g, "init", 1.5f, &st);
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_output_t read = weft_variable(g, "var", init, &st);
  weft_binary(g, "Mul", "twice", read, two, &st);
  weft_output_t four = weft_const_float(g, "four", 4.0f, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Assign", "set4");
  weft_op_add_input(b, weft_out(weft_graph_node(g, "var"), 0));
  weft_op_add_input(b, four);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_node_t *set4 = NULL;
  OK(weft_op_finish(b, &set4));
  weft_node_t *init_op = weft_global_variables_initializer(g, "init_all", &st);
  OK(st);
  (void)init_op;
  weft_session_t *s = session(g, true);
  const char *init_names[1] = {"init_all"}, *fetch[1] = {"twice"}, *set[1] = {"set4"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init_names, 1));
  step_t r1 = run_in(s, fetch, 1, NULL, NULL);
  OK(r1.status);
  g_assert_cmpmem(weft_tensor_data(r1.out[0]), 4, (float[]){3.0f}, 4);
  g_assert_true(ran(&r1, "twice"));
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, set, 1));
  step_t r2 = run_in(s, fetch, 1, NULL, NULL);
  OK(r2.status);
  g_assert_cmpmem(weft_tensor_data(r2.out[0]), 4, (float[]){8.0f}, 4);
  step_clear(&r1);
  step_clear(&r2);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/constfold/shape_chain", test_shape_chain);
  g_test_add_func("/constfold/fed_node", test_fed_node);
  g_test_add_func("/constfold/arithmetic", test_arithmetic);
  g_test_add_func("/constfold/stateful_and_control", test_stateful_and_control);
  g_test_add_func("/constfold/stateless_random", test_stateless_random);
  g_test_add_func("/constfold/error_kept", test_error_kept);
  g_test_add_func("/constfold/variable_kept", test_variable_kept);
  g_test_add_func("/constfold/bounded", test_bounded);
  return g_test_run();
}
