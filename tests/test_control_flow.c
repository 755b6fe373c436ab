/* test_control_flow.c: TensorFlow 1.x control flow (Switch/Merge conds, while loops, nested loops,
 * parallel_iterations), TensorArrays inside loops, Assert and fetching a dead tensor. The graphs
 * are GraphDefs built with protobuf-c, as TensorFlow writes them (loops close with a
 * NextIteration -> Merge back edge), imported and run through the public C API. */
#include <glib.h>
#include <stdarg.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/graphdef_internal.h"
#include "weft/weft.h"

#define ASSERT_OK(expr)                                                                        \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_ != NULL) {                                                                         \
      g_test_message("%s failed: %s: %s", #expr, weft_code_name(weft_status_code(st_)),        \
                     weft_status_message(st_));                                                \
      g_assert_cmpstr(weft_status_message(st_), ==, NULL);                                     \
    }                                                                                          \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * GraphDef building */

typedef struct gd {
  GPtrArray *nodes; /* Tensorflow__NodeDef* */
} gd_t;

static Tensorflow__NodeDef *add(gd_t *g, const char *name, const char *op, ...) {
  Tensorflow__NodeDef *nd = g_new(Tensorflow__NodeDef, 1);
  tensorflow__node_def__init(nd);
  nd->name = g_strdup(name);
  nd->op = g_strdup(op);
  va_list ap;
  va_start(ap, op);
  for (const char *in = va_arg(ap, const char *); in != NULL; in = va_arg(ap, const char *)) {
    nd->input = g_renew(char *, nd->input, nd->n_input + 1);
    nd->input[nd->n_input++] = g_strdup(in);
  }
  va_end(ap);
  g_ptr_array_add(g->nodes, nd);
  return nd;
}

static Tensorflow__AttrValue *av_new(Tensorflow__AttrValue__ValueCase c) {
  Tensorflow__AttrValue *v = g_new(Tensorflow__AttrValue, 1);
  tensorflow__attr_value__init(v);
  v->value_case = c;
  return v;
}

static void attr(Tensorflow__NodeDef *nd, const char *key, Tensorflow__AttrValue *v) {
  Tensorflow__AttrEntry *e = g_new(Tensorflow__AttrEntry, 1);
  tensorflow__attr_entry__init(e);
  e->key = g_strdup(key);
  e->value = v;
  nd->attr = g_renew(Tensorflow__AttrEntry *, nd->attr, nd->n_attr + 1);
  nd->attr[nd->n_attr++] = e;
}

static void attr_type(Tensorflow__NodeDef *nd, const char *key, int dtype) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
  v->type = (Tensorflow__DataType)dtype;
  attr(nd, key, v);
}

static void attr_int(Tensorflow__NodeDef *nd, const char *key, int64_t i) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_I);
  v->i = i;
  attr(nd, key, v);
}

static void attr_bool(Tensorflow__NodeDef *nd, const char *key, bool b) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_B);
  v->b = b;
  attr(nd, key, v);
}

static void attr_str(Tensorflow__NodeDef *nd, const char *key, const char *s) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_S);
  v->s.data = (uint8_t *)g_strdup(s);
  v->s.len = strlen(s);
  attr(nd, key, v);
}

static void attr_list_type(Tensorflow__NodeDef *nd, const char *key, int n, const int *dtypes) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  v->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(v->list);
  v->list->n_type = (size_t)n;
  v->list->type = g_new(Tensorflow__DataType, n);
  for (int k = 0; k < n; k++) v->list->type[k] = (Tensorflow__DataType)dtypes[k];
  attr(nd, key, v);
}

static Tensorflow__TensorProto *tp_new(int dtype, int rank, const int64_t *dims) {
  Tensorflow__TensorProto *t = g_new(Tensorflow__TensorProto, 1);
  tensorflow__tensor_proto__init(t);
  t->dtype = (Tensorflow__DataType)dtype;
  weft__shape_t s = {.rank = rank};
  for (int k = 0; k < rank; k++) s.dims[k] = dims[k];
  t->tensor_shape = weft__shape_to_proto(&s);
  return t;
}

static Tensorflow__NodeDef *const_node(gd_t *g, const char *name, Tensorflow__TensorProto *t,
                                       int dtype) {
  Tensorflow__NodeDef *nd = add(g, name, "Const", NULL);
  attr_type(nd, "dtype", dtype);
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
  v->tensor = t;
  attr(nd, "value", v);
  return nd;
}

static Tensorflow__NodeDef *const_i32(gd_t *g, const char *name, int rank, const int64_t *dims,
                                      const int32_t *vals, size_t n) {
  Tensorflow__TensorProto *t = tp_new(WEFT_DT_INT32, rank, dims);
  t->n_int_val = n;
  t->int_val = g_memdup2(vals, n * sizeof(int32_t));
  return const_node(g, name, t, WEFT_DT_INT32);
}

static Tensorflow__NodeDef *const_f32(gd_t *g, const char *name, int rank, const int64_t *dims,
                                      const float *vals, size_t n) {
  Tensorflow__TensorProto *t = tp_new(WEFT_DT_FLOAT, rank, dims);
  t->n_float_val = n;
  t->float_val = g_memdup2(vals, n * sizeof(float));
  return const_node(g, name, t, WEFT_DT_FLOAT);
}

static Tensorflow__NodeDef *placeholder(gd_t *g, const char *name, int dtype) {
  Tensorflow__NodeDef *nd = add(g, name, "Placeholder", NULL);
  attr_type(nd, "dtype", dtype);
  return nd;
}

/* An op with attr T. */
static Tensorflow__NodeDef *typed(gd_t *g, const char *name, const char *op, int dtype,
                                  const char *a, const char *b) {
  Tensorflow__NodeDef *nd = add(g, name, op, a, b, NULL);
  attr_type(nd, "T", dtype);
  return nd;
}

static Tensorflow__NodeDef *enter(gd_t *g, const char *name, const char *in, const char *frame,
                                  bool is_constant, int dtype, int parallel) {
  Tensorflow__NodeDef *nd = typed(g, name, "Enter", dtype, in, NULL);
  attr_str(nd, "frame_name", frame);
  attr_bool(nd, "is_constant", is_constant);
  attr_int(nd, "parallel_iterations", parallel);
  return nd;
}

static Tensorflow__NodeDef *merge(gd_t *g, const char *name, const char *a, const char *b,
                                  int dtype) {
  Tensorflow__NodeDef *nd = typed(g, name, "Merge", dtype, a, b);
  attr_int(nd, "N", 2);
  return nd;
}

static weft_graph_t *build(gd_t *g) {
  Tensorflow__GraphDef *gd = g_new(Tensorflow__GraphDef, 1);
  tensorflow__graph_def__init(gd);
  gd->n_node = g->nodes->len;
  gd->node = g_memdup2(g->nodes->pdata, g->nodes->len * sizeof(gpointer));
  size_t len = tensorflow__graph_def__get_packed_size(gd);
  uint8_t *buf = g_malloc(len + 1);
  tensorflow__graph_def__pack(gd, buf);
  tensorflow__graph_def__free_unpacked(gd, NULL);
  g_ptr_array_free(g->nodes, TRUE);
  weft_graph_t *graph = weft_graph_new();
  ASSERT_OK(weft_graph_import_graphdef(graph, buf, len, NULL));
  g_free(buf);
  return graph;
}

/* Runs fetches with feeds; returns the status (NULL: ok) and fills outs. */
static weft_status_t *run(weft_graph_t *g, const char *const *feed_names, weft_tensor_t **feeds,
                          int n_feeds, const char *const *fetches, weft_tensor_t **outs,
                          int n_fetches) {
  weft_status_t *st = NULL;
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_t *s = weft_session_new(g, opts, &st);
  weft_session_options_free(opts);
  ASSERT_OK(st);
  st = weft_session_run(s, feed_names, feeds, n_feeds, fetches, outs, n_fetches, NULL, 0);
  weft_session_free(s);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * cond: Switch / Merge */

static weft_graph_t *cond_graph(void) {
  gd_t g = {g_ptr_array_new()};
  placeholder(&g, "x", WEFT_DT_FLOAT);
  placeholder(&g, "p", WEFT_DT_BOOL);
  typed(&g, "sw", "Switch", WEFT_DT_FLOAT, "x", "p");
  typed(&g, "t", "Identity", WEFT_DT_FLOAT, "sw:1", NULL);
  typed(&g, "f", "Identity", WEFT_DT_FLOAT, "sw:0", NULL);
  /* Branch constants hang off their branch's pivot, as tf.cond builds them. */
  Tensorflow__NodeDef *two = const_f32(&g, "two", 0, NULL, (float[]){2.0f}, 1);
  two->input = g_new(char *, 1);
  two->input[0] = g_strdup("^t");
  two->n_input = 1;
  Tensorflow__NodeDef *one = const_f32(&g, "one", 0, NULL, (float[]){1.0f}, 1);
  one->input = g_new(char *, 1);
  one->input[0] = g_strdup("^f");
  one->n_input = 1;
  typed(&g, "mul", "Mul", WEFT_DT_FLOAT, "t", "two");
  typed(&g, "add", "Add", WEFT_DT_FLOAT, "f", "one");
  merge(&g, "m", "add", "mul", WEFT_DT_FLOAT);
  return build(&g);
}

static void test_cond(void) {
  weft_graph_t *g = cond_graph();
  for (int taken = 0; taken < 2; taken++) {
    weft_tensor_t *feeds[2] = {weft_tensor_new_scalar_float(5.0f),
                               weft_tensor_new(WEFT_DT_BOOL, 0, NULL)};
    ((uint8_t *)weft_tensor_data(feeds[1]))[0] = (uint8_t)taken;
    const char *feed_names[2] = {"x", "p"};
    const char *fetches[2] = {"m:0", "m:1"};
    weft_tensor_t *outs[2] = {NULL, NULL};
    ASSERT_OK(run(g, feed_names, feeds, 2, fetches, outs, 2));
    g_assert_cmpfloat(((float *)weft_tensor_data(outs[0]))[0], ==, taken ? 10.0f : 6.0f);
    g_assert_cmpint(((int32_t *)weft_tensor_data(outs[1]))[0], ==, taken ? 1 : 0);
    for (int k = 0; k < 2; k++) {
      weft_tensor_unref(feeds[k]);
      weft_tensor_unref(outs[k]);
    }
  }
  weft_graph_free(g);
}

/* Fetching the untaken branch is TensorFlow's "Retval[0] does not have value". */
static void test_fetch_dead(void) {
  weft_graph_t *g = cond_graph();
  weft_tensor_t *feeds[2] = {weft_tensor_new_scalar_float(5.0f),
                             weft_tensor_new(WEFT_DT_BOOL, 0, NULL)};
  const char *feed_names[2] = {"x", "p"};
  const char *fetch = "mul";
  weft_tensor_t *out = NULL;
  weft_status_t *st = run(g, feed_names, feeds, 2, &fetch, &out, 1);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "Retval[0] does not have value"));
  g_assert_null(out);
  weft_status_free(st);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * while loops */

/* One loop over int32 (i, s): while i < n: i += 1; s += i  (s = n (n + 1) / 2). Names start
 * with `p`; `n` is the limit tensor, `i0` and `s0` the initial values, `frame` the frame. */
static void add_sum_loop(gd_t *g, const char *p, const char *frame, const char *n, const char *i0,
                         const char *s0, int parallel) {
#define N(x) (g_snprintf(names[k], sizeof names[k], "%s/%s", p, x), names[k++])
  static char names[32][128];
  int k = 0;
  const char *ei = N("Enter"), *es = N("Enter_1"), *en = N("Enter_n");
  enter(g, ei, i0, frame, false, WEFT_DT_INT32, parallel);
  enter(g, es, s0, frame, false, WEFT_DT_INT32, parallel);
  enter(g, en, n, frame, true, WEFT_DT_INT32, parallel);
  const char *mi = N("Merge"), *ms = N("Merge_1"), *ni = N("NextIteration"),
             *ns = N("NextIteration_1");
  merge(g, mi, ei, ni, WEFT_DT_INT32);
  merge(g, ms, es, ns, WEFT_DT_INT32);
  const char *less = N("Less"), *lc = N("LoopCond");
  typed(g, less, "Less", WEFT_DT_INT32, mi, en);
  add(g, lc, "LoopCond", less, NULL);
  const char *si = N("Switch"), *ss = N("Switch_1");
  typed(g, si, "Switch", WEFT_DT_INT32, mi, lc);
  typed(g, ss, "Switch", WEFT_DT_INT32, ms, lc);
  const char *ii = N("Identity"), *is = N("Identity_1");
  char ti[160], ts[160];
  g_snprintf(ti, sizeof ti, "%s:1", si);
  g_snprintf(ts, sizeof ts, "%s:1", ss);
  typed(g, ii, "Identity", WEFT_DT_INT32, ti, NULL);
  typed(g, is, "Identity", WEFT_DT_INT32, ts, NULL);
  const char *one = N("one"), *inc = N("add"), *acc = N("add_1");
  Tensorflow__NodeDef *c = const_i32(g, one, 0, NULL, (int32_t[]){1}, 1);
  c->input = g_new(char *, 1);
  c->input[0] = g_strconcat("^", ii, NULL);
  c->n_input = 1;
  typed(g, inc, "Add", WEFT_DT_INT32, ii, one);
  typed(g, acc, "Add", WEFT_DT_INT32, is, inc);
  typed(g, ni, "NextIteration", WEFT_DT_INT32, inc, NULL);
  typed(g, ns, "NextIteration", WEFT_DT_INT32, acc, NULL);
  typed(g, N("Exit"), "Exit", WEFT_DT_INT32, si, NULL);
  typed(g, N("Exit_1"), "Exit", WEFT_DT_INT32, ss, NULL);
#undef N
}

static void test_while_sum(void) {
  for (int parallel = 1; parallel <= 10; parallel += 9) {
    gd_t g = {g_ptr_array_new()};
    placeholder(&g, "n", WEFT_DT_INT32);
    const_i32(&g, "zero", 0, NULL, (int32_t[]){0}, 1);
    add_sum_loop(&g, "while", "while/while_context", "n", "zero", "zero", parallel);
    weft_graph_t *graph = build(&g);
    for (int n = 0; n <= 100; n += 25) {
      weft_tensor_t *feed = weft_tensor_new_scalar_int32(n);
      const char *feed_name = "n";
      const char *fetches[2] = {"while/Exit", "while/Exit_1"};
      weft_tensor_t *outs[2] = {NULL, NULL};
      ASSERT_OK(run(graph, &feed_name, &feed, 1, fetches, outs, 2));
      g_assert_cmpint(((int32_t *)weft_tensor_data(outs[0]))[0], ==, n);
      g_assert_cmpint(((int32_t *)weft_tensor_data(outs[1]))[0], ==, n * (n + 1) / 2);
      weft_tensor_unref(outs[0]);
      weft_tensor_unref(outs[1]);
      weft_tensor_unref(feed);
    }
    weft_graph_free(graph);
  }
}

/* A traced step records each node once per run: the loop body's Add once per iteration. */
static void test_while_traced(void) {
  gd_t g = {g_ptr_array_new()};
  const_i32(&g, "n", 0, NULL, (int32_t[]){5}, 1);
  const_i32(&g, "zero", 0, NULL, (int32_t[]){0}, 1);
  add_sum_loop(&g, "while", "while/while_context", "n", "zero", "zero", 10);
  weft_graph_t *graph = build(&g);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(graph, NULL, &st);
  ASSERT_OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  const char *fetch = "while/Exit_1";
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  ASSERT_OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  g_assert_cmpint(((int32_t *)weft_tensor_data(out))[0], ==, 15);
  int adds = 0, merges = 0;
  for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *ns = weft_run_metadata_node_stats(meta, k);
    adds += strcmp(ns->node_name, "while/add_1") == 0;
    merges += strcmp(ns->node_name, "while/Merge_1") == 0;
  }
  g_assert_cmpint(adds, ==, 5);
  g_assert_cmpint(merges, ==, 6);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(graph);
}

/* A value used in a loop without an Enter: TensorFlow's "inputs from different frames". */
static void test_frames_mismatch(void) {
  gd_t g = {g_ptr_array_new()};
  const_i32(&g, "n", 0, NULL, (int32_t[]){3}, 1);
  const_i32(&g, "zero", 0, NULL, (int32_t[]){0}, 1);
  add_sum_loop(&g, "w", "w/ctx", "n", "zero", "zero", 10);
  typed(&g, "bad", "Add", WEFT_DT_INT32, "w/Identity", "n");
  weft_graph_t *graph = build(&g);
  const char *fetch = "w/Exit";
  const char *target = "bad";
  weft_tensor_t *out = NULL;
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(graph, NULL, &st);
  ASSERT_OK(st);
  st = weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, &target, 1);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  const char *msg = weft_status_message(st);
  if (!strstr(msg, "The node 'bad' has inputs from different frames."))
    g_assert_cmpstr(msg, ==, "The node 'bad' has inputs from different frames.");
  g_assert_nonnull(strstr(msg, "'w/ctx'"));
  g_assert_nonnull(strstr(msg, "'_root'"));
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(graph);
}

/* A while loop inside a cond branch: on the untaken side its Enters are dead, so the whole loop
 * is dead (TensorFlow's dead Enter into a Merge) and its dead Exits reach the cond's Merge. */
static void test_loop_in_cond(void) {
  gd_t g = {g_ptr_array_new()};
  placeholder(&g, "n", WEFT_DT_INT32);
  placeholder(&g, "p", WEFT_DT_BOOL);
  typed(&g, "sw", "Switch", WEFT_DT_INT32, "n", "p");
  typed(&g, "t", "Identity", WEFT_DT_INT32, "sw:1", NULL);
  typed(&g, "f", "Identity", WEFT_DT_INT32, "sw:0", NULL);
  Tensorflow__NodeDef *z = const_i32(&g, "zero", 0, NULL, (int32_t[]){0}, 1);
  z->input = g_new(char *, 1);
  z->input[0] = g_strdup("^t");
  z->n_input = 1;
  add_sum_loop(&g, "w", "w/ctx", "t", "zero", "zero", 10);
  typed(&g, "neg", "Neg", WEFT_DT_INT32, "f", NULL);
  merge(&g, "m", "neg", "w/Exit_1", WEFT_DT_INT32);
  weft_graph_t *graph = build(&g);
  for (int taken = 0; taken < 2; taken++) {
    weft_tensor_t *feeds[2] = {weft_tensor_new_scalar_int32(6),
                               weft_tensor_new(WEFT_DT_BOOL, 0, NULL)};
    ((uint8_t *)weft_tensor_data(feeds[1]))[0] = (uint8_t)taken;
    const char *feed_names[2] = {"n", "p"};
    const char *fetches[2] = {"m:0", "m:1"};
    weft_tensor_t *outs[2] = {NULL, NULL};
    ASSERT_OK(run(graph, feed_names, feeds, 2, fetches, outs, 2));
    g_assert_cmpint(((int32_t *)weft_tensor_data(outs[0]))[0], ==, taken ? 21 : -6);
    g_assert_cmpint(((int32_t *)weft_tensor_data(outs[1]))[0], ==, taken ? 1 : 0);
    for (int k = 0; k < 2; k++) {
      weft_tensor_unref(feeds[k]);
      weft_tensor_unref(outs[k]);
    }
  }
  weft_graph_free(graph);
}

/* An outer loop over i < 3 whose body runs an inner loop j < 4 that adds 1 to the outer total:
 * 12 in all; the inner frame starts afresh in every outer iteration. */
static void test_nested_loops(void) {
  gd_t g = {g_ptr_array_new()};
  const_i32(&g, "zero", 0, NULL, (int32_t[]){0}, 1);
  const_i32(&g, "three", 0, NULL, (int32_t[]){3}, 1);
  const_i32(&g, "four", 0, NULL, (int32_t[]){4}, 1);
  enter(&g, "o/Enter", "zero", "outer", false, WEFT_DT_INT32, 10);
  enter(&g, "o/Enter_t", "zero", "outer", false, WEFT_DT_INT32, 10);
  enter(&g, "o/Enter_n", "three", "outer", true, WEFT_DT_INT32, 10);
  enter(&g, "o/Enter_m", "four", "outer", true, WEFT_DT_INT32, 10);
  merge(&g, "o/Merge", "o/Enter", "o/NextIteration", WEFT_DT_INT32);
  merge(&g, "o/Merge_t", "o/Enter_t", "o/NextIteration_t", WEFT_DT_INT32);
  typed(&g, "o/Less", "Less", WEFT_DT_INT32, "o/Merge", "o/Enter_n");
  add(&g, "o/LoopCond", "LoopCond", "o/Less", NULL);
  typed(&g, "o/Switch", "Switch", WEFT_DT_INT32, "o/Merge", "o/LoopCond");
  typed(&g, "o/Switch_t", "Switch", WEFT_DT_INT32, "o/Merge_t", "o/LoopCond");
  typed(&g, "o/Identity", "Identity", WEFT_DT_INT32, "o/Switch:1", NULL);
  typed(&g, "o/Identity_t", "Identity", WEFT_DT_INT32, "o/Switch_t:1", NULL);
  Tensorflow__NodeDef *c = const_i32(&g, "o/zero", 0, NULL, (int32_t[]){0}, 1);
  c->input = g_new(char *, 1);
  c->input[0] = g_strdup("^o/Identity");
  c->n_input = 1;
  /* The inner loop: i from o/zero to 4 (the outer frame's constant), total from o/Identity_t. */
  add_sum_loop(&g, "o/in", "o/in/ctx", "o/Enter_m", "o/zero", "o/Identity_t", 10);
  Tensorflow__NodeDef *c1 = const_i32(&g, "o/one", 0, NULL, (int32_t[]){1}, 1);
  c1->input = g_new(char *, 1);
  c1->input[0] = g_strdup("^o/Identity");
  c1->n_input = 1;
  typed(&g, "o/inc", "Add", WEFT_DT_INT32, "o/Identity", "o/one");
  typed(&g, "o/NextIteration", "NextIteration", WEFT_DT_INT32, "o/inc", NULL);
  typed(&g, "o/NextIteration_t", "NextIteration", WEFT_DT_INT32, "o/in/Exit_1", NULL);
  typed(&g, "o/Exit", "Exit", WEFT_DT_INT32, "o/Switch", NULL);
  typed(&g, "o/Exit_t", "Exit", WEFT_DT_INT32, "o/Switch_t", NULL);
  weft_graph_t *graph = build(&g);
  const char *fetches[2] = {"o/Exit", "o/Exit_t"};
  weft_tensor_t *outs[2] = {NULL, NULL};
  ASSERT_OK(run(graph, NULL, NULL, 0, fetches, outs, 2));
  g_assert_cmpint(((int32_t *)weft_tensor_data(outs[0]))[0], ==, 3);
  /* Each inner run adds 1 + 2 + 3 + 4 = 10 to the total. */
  g_assert_cmpint(((int32_t *)weft_tensor_data(outs[1]))[0], ==, 30);
  weft_tensor_unref(outs[0]);
  weft_tensor_unref(outs[1]);
  weft_graph_free(graph);
}

/* A loop that writes i * 1.5 at index i of a TensorArray (the flow is a loop variable and the
 * handle a constant Enter, as tf.while_loop builds it), then gathers the array after the loop. */
static void test_loop_tensor_array(void) {
  gd_t g = {g_ptr_array_new()};
  const_i32(&g, "size", 0, NULL, (int32_t[]){4}, 1);
  const_i32(&g, "zero", 0, NULL, (int32_t[]){0}, 1);
  Tensorflow__NodeDef *ta = add(&g, "ta", "TensorArrayV3", "size", NULL);
  attr_type(ta, "dtype", WEFT_DT_FLOAT);
  enter(&g, "w/Enter", "zero", "w", false, WEFT_DT_INT32, 10);
  enter(&g, "w/Enter_flow", "ta:1", "w", false, WEFT_DT_FLOAT, 10);
  /* TensorFlow writes the handle's Enter with T = DT_RESOURCE. */
  enter(&g, "w/Enter_h", "ta", "w", true, TENSORFLOW__DATA_TYPE__DT_RESOURCE, 10);
  enter(&g, "w/Enter_n", "size", "w", true, WEFT_DT_INT32, 10);
  merge(&g, "w/Merge", "w/Enter", "w/NextIteration", WEFT_DT_INT32);
  merge(&g, "w/Merge_flow", "w/Enter_flow", "w/NextIteration_flow", WEFT_DT_FLOAT);
  typed(&g, "w/Less", "Less", WEFT_DT_INT32, "w/Merge", "w/Enter_n");
  add(&g, "w/LoopCond", "LoopCond", "w/Less", NULL);
  typed(&g, "w/Switch", "Switch", WEFT_DT_INT32, "w/Merge", "w/LoopCond");
  typed(&g, "w/Switch_flow", "Switch", WEFT_DT_FLOAT, "w/Merge_flow", "w/LoopCond");
  typed(&g, "w/Identity", "Identity", WEFT_DT_INT32, "w/Switch:1", NULL);
  typed(&g, "w/Identity_flow", "Identity", WEFT_DT_FLOAT, "w/Switch_flow:1", NULL);
  Tensorflow__NodeDef *cast = add(&g, "w/Cast", "Cast", "w/Identity", NULL);
  attr_type(cast, "SrcT", WEFT_DT_INT32);
  attr_type(cast, "DstT", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *k = const_f32(&g, "w/k", 0, NULL, (float[]){1.5f}, 1);
  k->input = g_new(char *, 1);
  k->input[0] = g_strdup("^w/Identity");
  k->n_input = 1;
  typed(&g, "w/mul", "Mul", WEFT_DT_FLOAT, "w/Cast", "w/k");
  Tensorflow__NodeDef *wr =
      add(&g, "w/write", "TensorArrayWriteV3", "w/Enter_h", "w/Identity", "w/mul",
          "w/Identity_flow", NULL);
  attr_type(wr, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *one = const_i32(&g, "w/one", 0, NULL, (int32_t[]){1}, 1);
  one->input = g_new(char *, 1);
  one->input[0] = g_strdup("^w/Identity");
  one->n_input = 1;
  typed(&g, "w/inc", "Add", WEFT_DT_INT32, "w/Identity", "w/one");
  typed(&g, "w/NextIteration", "NextIteration", WEFT_DT_INT32, "w/inc", NULL);
  typed(&g, "w/NextIteration_flow", "NextIteration", WEFT_DT_FLOAT, "w/write", NULL);
  typed(&g, "w/Exit", "Exit", WEFT_DT_INT32, "w/Switch", NULL);
  typed(&g, "w/Exit_flow", "Exit", WEFT_DT_FLOAT, "w/Switch_flow", NULL);
  const_i32(&g, "idx", 1, (int64_t[]){4}, (int32_t[]){3, 2, 1, 0}, 4);
  Tensorflow__NodeDef *ga = add(&g, "gather", "TensorArrayGatherV3", "ta", "idx", "w/Exit_flow",
                                NULL);
  attr_type(ga, "dtype", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *sz = add(&g, "size_out", "TensorArraySizeV3", "ta", "w/Exit_flow", NULL);
  (void)sz;
  weft_graph_t *graph = build(&g);
  const char *fetches[2] = {"gather", "size_out"};
  weft_tensor_t *outs[2] = {NULL, NULL};
  ASSERT_OK(run(graph, NULL, NULL, 0, fetches, outs, 2));
  g_assert_cmpint(weft_tensor_num_elements(outs[0]), ==, 4);
  const float *v = weft_tensor_data(outs[0]);
  for (int i = 0; i < 4; i++) g_assert_cmpfloat(v[i], ==, (float)(3 - i) * 1.5f);
  g_assert_cmpint(((int32_t *)weft_tensor_data(outs[1]))[0], ==, 4);
  weft_tensor_unref(outs[0]);
  weft_tensor_unref(outs[1]);
  weft_graph_free(graph);
}

/* Reading an element twice with clear_after_read, and writing one twice: TensorFlow's words. */
static void test_tensor_array_errors(void) {
  for (int which = 0; which < 3; which++) {
    gd_t g = {g_ptr_array_new()};
    const_i32(&g, "size", 0, NULL, (int32_t[]){2}, 1);
    const_i32(&g, "i", 0, NULL, (int32_t[]){which == 2 ? 5 : 0}, 1);
    const_f32(&g, "v", 0, NULL, (float[]){3.0f}, 1);
    Tensorflow__NodeDef *ta = add(&g, "ta", "TensorArrayV3", "size", NULL);
    attr_type(ta, "dtype", WEFT_DT_FLOAT);
    Tensorflow__NodeDef *w = add(&g, "w", "TensorArrayWriteV3", "ta", "i", "v", "ta:1", NULL);
    attr_type(w, "T", WEFT_DT_FLOAT);
    const char *fetch;
    if (which == 0) {
      Tensorflow__NodeDef *r1 = add(&g, "r1", "TensorArrayReadV3", "ta", "i", "w", NULL);
      attr_type(r1, "dtype", WEFT_DT_FLOAT);
      Tensorflow__NodeDef *r2 = add(&g, "r2", "TensorArrayReadV3", "ta", "i", "w", "^r1", NULL);
      attr_type(r2, "dtype", WEFT_DT_FLOAT);
      fetch = "r2";
    } else {
      Tensorflow__NodeDef *w2 = add(&g, "w2", "TensorArrayWriteV3", "ta", "i", "v", "w", NULL);
      attr_type(w2, "T", WEFT_DT_FLOAT);
      fetch = "w2";
    }
    weft_graph_t *graph = build(&g);
    weft_tensor_t *out = NULL;
    weft_status_t *st = run(graph, NULL, NULL, 0, &fetch, &out, 1);
    g_assert_nonnull(st);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    const char *want[] = {
        "Could not read index 0 twice because it was cleared after a previous read",
        "Could not write to TensorArray index 0 because it has already been written to.",
        "Tried to write to index 5 but array is not resizeable and size is: 2"};
    if (!strstr(weft_status_message(st), want[which]))
      g_assert_cmpstr(weft_status_message(st), ==, want[which]);
    weft_status_free(st);
    weft_graph_free(graph);
  }
}

/* Scatter sets the element shape, so an element never written reads as zeros; Split then Concat
 * gives the value back with the lengths; a read of another dtype is TensorFlow's message. */
static void test_tensor_array_scatter_split(void) {
  gd_t g = {g_ptr_array_new()};
  const_i32(&g, "three", 0, NULL, (int32_t[]){3}, 1);
  const_i32(&g, "two", 0, NULL, (int32_t[]){2}, 1);
  const_i32(&g, "one", 0, NULL, (int32_t[]){1}, 1);
  const_i32(&g, "idx", 1, (int64_t[]){2}, (int32_t[]){0, 2}, 2);
  const_f32(&g, "v", 2, (int64_t[]){2, 2}, (float[]){1, 2, 3, 4}, 4);
  const_f32(&g, "w", 1, (int64_t[]){5}, (float[]){1, 2, 3, 4, 5}, 5);
  Tensorflow__TensorProto *lt = tp_new(WEFT_DT_INT64, 1, (int64_t[]){2});
  lt->n_int64_val = 2;
  lt->int64_val = g_new(int64_t, 2);
  lt->int64_val[0] = 2;
  lt->int64_val[1] = 3;
  const_node(&g, "lengths", lt, WEFT_DT_INT64);
  Tensorflow__NodeDef *a = add(&g, "a", "TensorArrayV3", "three", NULL);
  attr_type(a, "dtype", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *sc = add(&g, "sc", "TensorArrayScatterV3", "a", "idx", "v", "a:1", NULL);
  attr_type(sc, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *r = add(&g, "r", "TensorArrayReadV3", "a", "one", "sc", NULL);
  attr_type(r, "dtype", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *ri = add(&g, "ri", "TensorArrayReadV3", "a", "two", "sc", NULL);
  attr_type(ri, "dtype", WEFT_DT_INT32);
  Tensorflow__NodeDef *b = add(&g, "b", "TensorArrayV3", "two", NULL);
  attr_type(b, "dtype", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *sp = add(&g, "sp", "TensorArraySplitV3", "b", "w", "lengths", "b:1", NULL);
  attr_type(sp, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *cc = add(&g, "cc", "TensorArrayConcatV3", "b", "sp", NULL);
  attr_type(cc, "dtype", WEFT_DT_FLOAT);
  weft_graph_t *graph = build(&g);
  const char *fetches[3] = {"r", "cc:0", "cc:1"};
  weft_tensor_t *outs[3] = {NULL, NULL, NULL};
  ASSERT_OK(run(graph, NULL, NULL, 0, fetches, outs, 3));
  g_assert_cmpint(weft_tensor_num_elements(outs[0]), ==, 2);
  g_assert_cmpfloat(((float *)weft_tensor_data(outs[0]))[0], ==, 0.0f);
  g_assert_cmpfloat(((float *)weft_tensor_data(outs[0]))[1], ==, 0.0f);
  g_assert_cmpint(weft_tensor_num_elements(outs[1]), ==, 5);
  for (int i = 0; i < 5; i++)
    g_assert_cmpfloat(((float *)weft_tensor_data(outs[1]))[i], ==, (float)(i + 1));
  g_assert_cmpint(((int64_t *)weft_tensor_data(outs[2]))[0], ==, 2);
  g_assert_cmpint(((int64_t *)weft_tensor_data(outs[2]))[1], ==, 3);
  for (int k = 0; k < 3; k++) weft_tensor_unref(outs[k]);
  const char *bad = "ri";
  weft_tensor_t *out = NULL;
  weft_status_t *st = run(graph, NULL, NULL, 0, &bad, &out, 1);
  g_assert_nonnull(st);
  g_assert_nonnull(strstr(weft_status_message(st),
                          "TensorArray dtype is float but Op requested dtype int32."));
  weft_status_free(st);
  weft_graph_free(graph);
}

/* TensorArrayGradV3: writes to one index of the gradient array add up; an index never written
 * reads as zeros of the forward element's shape. */
static void test_tensor_array_grad(void) {
  gd_t g = {g_ptr_array_new()};
  const_i32(&g, "two", 0, NULL, (int32_t[]){2}, 1);
  const_i32(&g, "i0", 0, NULL, (int32_t[]){0}, 1);
  const_i32(&g, "i1", 0, NULL, (int32_t[]){1}, 1);
  const_f32(&g, "v", 1, (int64_t[]){2}, (float[]){1, 2}, 2);
  const_f32(&g, "d", 1, (int64_t[]){2}, (float[]){0.5f, 1}, 2);
  Tensorflow__NodeDef *a = add(&g, "a", "TensorArrayV3", "two", NULL);
  attr_type(a, "dtype", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *w0 = add(&g, "w0", "TensorArrayWriteV3", "a", "i0", "v", "a:1", NULL);
  attr_type(w0, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *w1 = add(&g, "w1", "TensorArrayWriteV3", "a", "i1", "v", "w0", NULL);
  attr_type(w1, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *gr = add(&g, "g", "TensorArrayGradV3", "a", "w1", NULL);
  attr_str(gr, "source", "gradients");
  Tensorflow__NodeDef *g0 = add(&g, "g0", "TensorArrayWriteV3", "g", "i0", "d", "g:1", NULL);
  attr_type(g0, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *g1 = add(&g, "g1", "TensorArrayWriteV3", "g", "i0", "d", "g0", NULL);
  attr_type(g1, "T", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *r0 = add(&g, "r0", "TensorArrayReadV3", "g", "i0", "g1", NULL);
  attr_type(r0, "dtype", WEFT_DT_FLOAT);
  Tensorflow__NodeDef *r1 = add(&g, "r1", "TensorArrayReadV3", "g", "i1", "g1", NULL);
  attr_type(r1, "dtype", WEFT_DT_FLOAT);
  weft_graph_t *graph = build(&g);
  const char *fetches[2] = {"r0", "r1"};
  weft_tensor_t *outs[2] = {NULL, NULL};
  ASSERT_OK(run(graph, NULL, NULL, 0, fetches, outs, 2));
  const float *x = weft_tensor_data(outs[0]), *y = weft_tensor_data(outs[1]);
  g_assert_cmpfloat(x[0], ==, 1.0f);
  g_assert_cmpfloat(x[1], ==, 2.0f);
  g_assert_cmpint(weft_tensor_num_elements(outs[1]), ==, 2);
  g_assert_cmpfloat(y[0], ==, 0.0f);
  g_assert_cmpfloat(y[1], ==, 0.0f);
  weft_tensor_unref(outs[0]);
  weft_tensor_unref(outs[1]);
  weft_graph_free(graph);
}

/* ---------------------------------------------------------------------------------------------
 * Assert */

static void test_assert(void) {
  gd_t g = {g_ptr_array_new()};
  placeholder(&g, "c", WEFT_DT_BOOL);
  const_f32(&g, "x", 2, (int64_t[]){2, 2}, (float[]){1.5f, 2.0f, 3.0f, 4.0f}, 4);
  const_i32(&g, "y", 0, NULL, (int32_t[]){7}, 1);
  Tensorflow__NodeDef *a = add(&g, "check", "Assert", "c", "x", "y", NULL);
  attr_list_type(a, "T", 2, (int[]){WEFT_DT_FLOAT, WEFT_DT_INT32});
  attr_int(a, "summarize", 3);
  Tensorflow__NodeDef *out = const_f32(&g, "out", 0, NULL, (float[]){1.0f}, 1);
  out->input = g_new(char *, 1);
  out->input[0] = g_strdup("^check");
  out->n_input = 1;
  weft_graph_t *graph = build(&g);
  for (int ok = 0; ok < 2; ok++) {
    weft_tensor_t *feed = weft_tensor_new(WEFT_DT_BOOL, 0, NULL);
    ((uint8_t *)weft_tensor_data(feed))[0] = (uint8_t)ok;
    const char *feed_name = "c", *fetch = "out";
    weft_tensor_t *res = NULL;
    weft_status_t *st = run(graph, &feed_name, &feed, 1, &fetch, &res, 1);
    if (ok) {
      ASSERT_OK(st);
      weft_tensor_unref(res);
    } else {
      g_assert_nonnull(st);
      g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
      const char *msg = weft_status_message(st);
      g_assert_true(g_str_has_prefix(msg, "assertion failed: [[1.5 2][3...]...] [7]"));
      g_assert_nonnull(strstr(msg, "check"));
      weft_status_free(st);
    }
    weft_tensor_unref(feed);
  }
  weft_graph_free(graph);
}

static weft_output_t scalar_i32(weft_graph_t *g, const char *name, int32_t v, weft_status_t **st) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 0, NULL);
  *(int32_t *)weft_tensor_data(t) = v;
  weft_output_t out = weft_const(g, name, t, st);
  weft_tensor_unref(t);
  return out;
}

/* One node of op `op` with inputs ins (n), attr T (or "T" absent when t is INVALID). */
static weft_output_t built(weft_graph_t *g, const char *op, const char *name,
                           const weft_output_t *ins, int n, bool list, weft_dtype_t t) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  if (list) weft_op_add_input_list(b, ins, n);
  else
    for (int i = 0; i < n; i++) weft_op_add_input(b, ins[i]);
  if (t != WEFT_DT_INVALID) weft_op_set_attr_type(b, "T", t);
  if (strcmp(op, "Enter") == 0) {
    weft_op_set_attr_string(b, "frame_name", "w/ctx");
    /* The loop variable enters once; the bound and the step are loop invariants. */
    weft_op_set_attr_bool(b, "is_constant", strcmp(name, "w/Enter") != 0);
  }
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st) g_error("%s: %s", name, weft_status_message(st));
  return weft_out(node, 0);
}

/* A loop built forward with the op builder, as tf.while_loop builds it (i = 0; while i < 5:
 * i += 1), its Merge's back edge set last with weft_graph_close_loop, run to 5; and the edges it
 * refuses, each with its message. */
static void test_close_loop(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t zero = scalar_i32(g, "zero", 0, &st);
  ASSERT_OK(st);
  weft_output_t five = scalar_i32(g, "five", 5, &st);
  ASSERT_OK(st);
  weft_output_t one = scalar_i32(g, "one", 1, &st);
  ASSERT_OK(st);
  const weft_dtype_t i32 = WEFT_DT_INT32;
  weft_output_t enter = built(g, "Enter", "w/Enter", &zero, 1, false, i32);
  weft_output_t lim = built(g, "Enter", "w/Enter_lim", &five, 1, false, i32);
  weft_output_t step = built(g, "Enter", "w/Enter_one", &one, 1, false, i32);
  /* The Merge's second input stands in for the NextIteration until the body exists. */
  weft_output_t two[2] = {enter, enter};
  weft_output_t merge = built(g, "Merge", "w/Merge", two, 2, true, i32);
  weft_output_t less_in[2] = {merge, lim};
  weft_output_t less = built(g, "Less", "w/Less", less_in, 2, false, i32);
  weft_output_t cond = built(g, "LoopCond", "w/LoopCond", &less, 1, false, WEFT_DT_INVALID);
  weft_output_t sw_in[2] = {merge, cond};
  weft_output_t sw = built(g, "Switch", "w/Switch", sw_in, 2, false, i32);
  weft_output_t body = built(g, "Identity", "w/Identity", (weft_output_t[]){{sw.node, 1}}, 1,
                             false, i32);
  weft_output_t inc_in[2] = {body, step};
  weft_output_t inc = built(g, "AddV2", "w/add", inc_in, 2, false, i32);
  weft_output_t next = built(g, "NextIteration", "w/NextIteration", &inc, 1, false, i32);
  built(g, "Exit", "w/Exit", &sw, 1, false, i32);
  /* The edges it refuses. */
  static const struct {
    int merge_index;
    const char *merge, *next, *message;
  } bad[] = {
      {1, "w/Less", "w/NextIteration", "weft_graph_close_loop: 'w/Less' is a Less, not a Merge"},
      {1, "w/Merge", "w/add",
       "weft_graph_close_loop: the back edge into 'w/Merge' must come from output 0 of a "
       "NextIteration, not output 0 of 'w/add' (AddV2)"},
      {2, "w/Merge", "w/NextIteration",
       "weft_graph_close_loop: 'w/Merge' has 2 inputs, not an input 2"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
    st = weft_graph_close_loop(g, weft_graph_node(g, bad[k].merge), bad[k].merge_index,
                               weft_out(weft_graph_node(g, bad[k].next), 0));
    g_assert_nonnull(st);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    g_assert_cmpstr(weft_status_message(st), ==, bad[k].message);
    weft_status_free(st);
  }
  weft_graph_t *other = weft_graph_new();
  st = weft_graph_close_loop(other, merge.node, 1, next);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "weft_graph_close_loop: 'w/Merge' and 'w/NextIteration' must both be nodes of "
                  "the graph");
  weft_status_free(st);
  weft_graph_free(other);
  ASSERT_OK(weft_graph_close_loop(g, merge.node, 1, next));
  g_assert_true(weft_node_input(merge.node, 1).node == next.node);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  ASSERT_OK(st);
  const char *fetch = "w/Exit";
  weft_tensor_t *out = NULL;
  ASSERT_OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  g_assert_cmpint((int)weft_tensor_get_double(out, 0), ==, 5);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/control_flow/cond", test_cond);
  g_test_add_func("/control_flow/close_loop", test_close_loop);
  g_test_add_func("/control_flow/fetch_dead", test_fetch_dead);
  g_test_add_func("/control_flow/while_sum", test_while_sum);
  g_test_add_func("/control_flow/while_traced", test_while_traced);
  g_test_add_func("/control_flow/nested_loops", test_nested_loops);
  g_test_add_func("/control_flow/loop_in_cond", test_loop_in_cond);
  g_test_add_func("/control_flow/frames_mismatch", test_frames_mismatch);
  g_test_add_func("/control_flow/loop_tensor_array", test_loop_tensor_array);
  g_test_add_func("/control_flow/tensor_array_errors", test_tensor_array_errors);
  g_test_add_func("/control_flow/tensor_array_scatter_split", test_tensor_array_scatter_split);
  g_test_add_func("/control_flow/tensor_array_grad", test_tensor_array_grad);
  g_test_add_func("/control_flow/assert", test_assert);
  return g_test_run();
}
