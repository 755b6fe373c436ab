/* Tests for local sessions and the executor: feeds, fetches and targets; variables with
 * initializers and assigns across runs; control dependencies; errors for bad feeds, missing
 * fetches, unfed placeholders, uninitialised variables and failing kernels (with the node, op and
 * device named); placement logging and placement kept when the graph grows; many steps in
 * parallel; steps that repeat a name list (the step memo). */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weft/weft.h"

#define OK(expr)                                             \
  do {                                                       \
    weft_status_t *st_ = (expr);                             \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

static weft_tensor_t *vec_f32(int n, const float *v) {
  int64_t dims[1] = {n};
  return weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, v, sizeof(float) * (size_t)n, NULL);
}

static float f0(weft_tensor_t *t, int i) { return ((float *)weft_tensor_data(t))[i]; }

static weft_session_t *session(weft_graph_t *g, weft_session_options_t *o) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  return s;
}

static void test_feed_fetch(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d2[1] = {2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, d2, &st);
  OK(st);
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  OK(st);
  weft_output_t y = weft_binary(g, "Mul", "y", x, two, &st);
  OK(st);
  weft_binary(g, "AddV2", "z", y, x, &st);
  OK(st);
  weft_session_t *s = session(g, NULL);
  float xv[2] = {1.5f, -4.0f};
  weft_tensor_t *feed = vec_f32(2, xv);
  const char *feeds[] = {"x"};
  const char *fetches[] = {"z:0", "y"};
  weft_tensor_t *out[2] = {NULL, NULL};
  OK(weft_session_run(s, feeds, &feed, 1, fetches, out, 2, NULL, 0));
  g_assert_cmpfloat(f0(out[0], 0), ==, 4.5f);
  g_assert_cmpfloat(f0(out[0], 1), ==, -12.0f);
  g_assert_cmpfloat(f0(out[1], 1), ==, -8.0f);
  g_assert_cmpint(weft_tensor_rank(out[0]), ==, 1);
  g_assert_cmpint(weft_tensor_dims(out[0])[0], ==, 2);
  weft_tensor_unref(out[0]);
  weft_tensor_unref(out[1]);
  /* Feeding an intermediate tensor replaces it: y := [10, 20]. */
  float yv[2] = {10, 20};
  weft_tensor_t *yfeed = vec_f32(2, yv);
  const char *feeds2[] = {"x", "y"};
  weft_tensor_t *vals2[] = {feed, yfeed};
  OK(weft_session_run(s, feeds2, vals2, 2, fetches, out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out[0], 0), ==, 11.5f);
  g_assert_cmpfloat(f0(out[0], 1), ==, 16.0f);
  weft_tensor_unref(out[0]);
  /* Fetching a fed tensor gives the fed value back. */
  const char *fetch_y[] = {"y"};
  OK(weft_session_run(s, feeds2, vals2, 2, fetch_y, out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out[0], 1), ==, 20.0f);
  weft_tensor_unref(out[0]);
  weft_tensor_unref(yfeed);
  weft_tensor_unref(feed);
  weft_session_free(s);
  weft_graph_free(g);
}

/* Feeds x (a float32 [2] placeholder) a value of the wrong dtype, of the wrong shape, no value
 * at all, and no list of names, fetching `fetch`: each fails with its exact message and fetches
 * nothing. */
static void check_bad_feeds(weft_session_t *s, const char *fetch) {
  const char *feeds[] = {"x"};
  const char *fetches[] = {fetch};
  weft_tensor_t *out = NULL;
  float three[3] = {1, 2, 3};
  weft_tensor_t *bad[3] = {weft_tensor_new_scalar_int32(3), vec_f32(3, three), NULL};
  const char *want[3] = {"Feed 'x': expected a tensor of type float32 but got int32",
                         "Feed 'x': cannot feed a value of shape [3] to a tensor of shape [2]",
                         "Feed 'x' has no tensor"};
  for (int k = 0; k < 3; k++) {
    weft_status_t *st = weft_session_run(s, feeds, &bad[k], 1, fetches, &out, 1, NULL, 0);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    g_assert_cmpstr(weft_status_message(st), ==, want[k]);
    weft_status_free(st);
    weft_tensor_unref(bad[k]);
  }
  /* No list of names where the count says one. */
  weft_status_t *st = weft_session_run(s, NULL, NULL, 1, fetches, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==, "weft_session_run: feed name 0 is NULL");
  weft_status_free(st);
  g_assert_null(out);
}

static void test_feed_errors(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d2[1] = {2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, d2, &st);
  OK(st);
  weft_unary(g, "Neg", "n", x, &st);
  OK(st);
  weft_session_t *s = session(g, NULL);
  const char *fetches[] = {"n"};
  weft_tensor_t *out = NULL;

  check_bad_feeds(s, fetches[0]);

  st = weft_session_run(s, NULL, NULL, 0, fetches, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "You must feed a value for placeholder tensor 'x' with dtype float32 and shape [2]");
  weft_status_free(st);

  const char *missing[] = {"nope:0"};
  st = weft_session_run(s, NULL, NULL, 0, missing, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "The tensor 'nope:0' does not exist in the graph: no node 'nope'");
  weft_status_free(st);

  const char *bad_index[] = {"n:3"};
  st = weft_session_run(s, NULL, NULL, 0, bad_index, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "The tensor 'n:3' does not exist: node 'n' (Neg) has 1 output");
  weft_status_free(st);

  /* A NULL name is refused by position, whatever list it is in. */
  const char *null_fetch[] = {"n", NULL};
  weft_tensor_t *outs[2] = {NULL, NULL};
  st = weft_session_run(s, NULL, NULL, 0, null_fetch, outs, 2, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==, "weft_session_run: fetch name 1 is NULL");
  weft_status_free(st);
  g_assert_null(outs[0]);

  const char *bad_target[] = {"ghost"};
  st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, bad_target, 1);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==, "Target 'ghost' is not a node in the graph");
  weft_status_free(st);
  g_assert_null(out);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_variables(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  float init_v[3] = {1, 2, 3};
  int64_t d3[1] = {3};
  weft_tensor_t *init_t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d3, init_v, sizeof init_v, NULL);
  weft_output_t init_value = weft_const(g, "v_init", init_t, &st);
  OK(st);
  weft_tensor_unref(init_t);
  weft_output_t read = weft_variable(g, "v", init_value, &st);
  OK(st);
  g_assert_cmpstr(weft_node_name(read.node), ==, "v/read");
  weft_node_t *var = weft_graph_node(g, "v");
  g_assert_nonnull(weft_graph_node(g, "v/Assign"));
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  /* AssignAdd broadcasts nothing: add a [3] of ones. */
  float ones_v[3] = {1, 1, 1};
  weft_tensor_t *ones_t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d3, ones_v, sizeof ones_v, NULL);
  weft_output_t ones = weft_const(g, "ones", ones_t, &st);
  OK(st);
  weft_tensor_unref(ones_t);
  (void)one;
  weft_op_builder_t *b = weft_op_new(g, "AssignAdd", "incr");
  weft_op_add_input(b, weft_out(var, 0));
  weft_op_add_input(b, ones);
  weft_node_t *incr = NULL;
  OK(weft_op_finish(b, &incr));
  weft_node_t *init = weft_global_variables_initializer(g, NULL, &st);
  OK(st);
  g_assert_cmpstr(weft_node_name(init), ==, "init");

  weft_session_t *s = session(g, NULL);
  const char *fetch_read[] = {"v/read"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_nonnull(strstr(weft_status_message(st), "Attempting to use uninitialized value v"));
  weft_status_free(st);

  const char *targets[] = {"init"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
  OK(weft_session_run(s, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 2), ==, 3.0f);
  /* The fetched value must not change when the variable is updated later. */
  weft_tensor_t *before = out;
  const char *incr_t[] = {"incr"};
  for (int k = 0; k < 5; k++) OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, incr_t, 1));
  OK(weft_session_run(s, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 0), ==, 6.0f);
  g_assert_cmpfloat(f0(out, 2), ==, 8.0f);
  g_assert_cmpfloat(f0(before, 2), ==, 3.0f);
  weft_tensor_unref(before);
  weft_tensor_unref(out);
  /* Fetching the AssignAdd's output gives the updated value. */
  const char *fetch_incr[] = {"incr"};
  OK(weft_session_run(s, NULL, NULL, 0, fetch_incr, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 1), ==, 8.0f);
  weft_tensor_unref(out);
  /* A second session has its own variables (TensorFlow's DirectSession). */
  weft_session_t *s2 = session(g, NULL);
  st = weft_session_run(s2, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  weft_status_free(st);
  weft_session_free(s2);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_control_dependencies(void) {
  /* counter += 1 under a control dependency of the read: each run reads the new value. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t zero = weft_const_float(g, "zero", 0.0f, &st);
  OK(st);
  weft_variable(g, "counter", zero, &st);
  OK(st);
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "AssignAdd", "bump");
  weft_op_add_input(b, weft_out(weft_graph_node(g, "counter"), 0));
  weft_op_add_input(b, one);
  weft_node_t *bump = NULL;
  OK(weft_op_finish(b, &bump));
  weft_graph_push_control_deps(g, &bump, 1);
  weft_op_builder_t *r = weft_op_new(g, "Identity", "after_bump");
  weft_op_add_input(r, weft_out(weft_graph_node(g, "counter"), 0));
  weft_node_t *after = NULL;
  OK(weft_op_finish(r, &after));
  weft_graph_pop_control_deps(g);
  (void)after;
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_session_t *s = session(g, NULL);
  const char *init[] = {"init"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 1));
  const char *fetch[] = {"after_bump"};
  for (int k = 1; k <= 4; k++) {
    weft_tensor_t *out = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
    g_assert_cmpfloat(f0(out, 0), ==, (float)k);
    weft_tensor_unref(out);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_kernel_error_cancels_step(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  /* Pinned: with a gpu-like backend present, unpinned nodes would go there. */
  weft_graph_push_device(g, "/cpu:0");
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, -1, NULL, &st);
  OK(st);
  int64_t shape_v[2] = {4, 4};
  int64_t d2[1] = {2};
  weft_tensor_t *shape_t = weft_tensor_new(WEFT_DT_INT32, 1, d2);
  ((int32_t *)weft_tensor_data(shape_t))[0] = (int32_t)shape_v[0];
  ((int32_t *)weft_tensor_data(shape_t))[1] = (int32_t)shape_v[1];
  weft_output_t shape = weft_const(g, "shape", shape_t, &st);
  OK(st);
  weft_tensor_unref(shape_t);
  weft_binary(g, "Reshape", "reshape", x, shape, &st);
  OK(st);
  weft_session_t *s = session(g, NULL);
  float v[3] = {1, 2, 3};
  weft_tensor_t *feed = vec_f32(3, v);
  const char *feeds[] = {"x"};
  const char *fetches[] = {"reshape"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, feeds, &feed, 1, fetches, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  const char *msg = weft_status_message(st);
  g_assert_nonnull(strstr(msg, "reshape"));
  g_assert_nonnull(strstr(msg, "Reshape"));
  g_assert_nonnull(strstr(msg, "/job:localhost/replica:0/task:0/device:CPU:0"));
  weft_status_free(st);
  g_assert_null(out);
  /* The session keeps working after a failed step. */
  float v16[16] = {0};
  int64_t d16[1] = {16};
  weft_tensor_t *good = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d16, v16, sizeof v16, NULL);
  OK(weft_session_run(s, feeds, &good, 1, fetches, &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_dims(out)[1], ==, 4);
  weft_tensor_unref(out);
  weft_tensor_unref(good);
  weft_tensor_unref(feed);
  weft_session_free(s);
  weft_graph_free(g);
}

/* Captures what the session writes to stderr while fn runs. */
static char *capture_stderr(void (*fn)(void *), void *arg) {
  char *path = g_build_filename(g_get_tmp_dir(), "weft-test-stderr-XXXXXX", NULL);
  int fd = g_mkstemp(path);
  g_assert_cmpint(fd, >=, 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  char *text = NULL;
  g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_unlink(path);
  g_free(path);
  return text;
}

/* Where c and d landed: unpinned, they go to a gpu-like device when one is present. */
static char placed_c[256], placed_d[256];

static void run_logged(void *arg) {
  weft_graph_t *g = arg;
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_log_device_placement(o, true);
  weft_session_t *s = session(g, o);
  weft_session_options_free(o);
  const char *fetch[] = {"c"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  weft_tensor_unref(out);
  /* A second run of the same signature logs nothing new. */
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  weft_tensor_unref(out);
  /* The graph grows: only the new node is placed and logged. */
  weft_status_t *st = NULL;
  weft_unary(g, "Neg", "d", weft_out(weft_graph_node(g, "c"), 0), &st);
  OK(st);
  const char *fetch_d[] = {"d"};
  OK(weft_session_run(s, NULL, NULL, 0, fetch_d, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 0), ==, -5.0f);
  weft_tensor_unref(out);
  g_strlcpy(placed_c, weft_session_node_device(s, "c"), sizeof placed_c);
  g_strlcpy(placed_d, weft_session_node_device(s, "d"), sizeof placed_d);
  weft_session_free(s);
}

static void test_log_device_placement(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:localhost");
  weft_graph_push_device(g, "/cpu:0");
  weft_output_t a = weft_const_float(g, "a", 2.0f, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_output_t b = weft_const_float(g, "b", 3.0f, &st);
  OK(st);
  weft_binary(g, "AddV2", "c", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  char *log = capture_stderr(run_logged, g);
  const char *dev = "/job:localhost/replica:0/task:0/device:CPU:0";
  g_assert_true(g_str_has_prefix(placed_c, "/job:localhost/replica:0/task:0/device:"));
  char *want_a = g_strdup_printf("a: (Const): %s\n", dev);
  char *want_c = g_strdup_printf("c: (AddV2): %s\n", placed_c);
  char *want_d = g_strdup_printf("d: (Neg): %s\n", placed_d);
  g_assert_nonnull(strstr(log, want_a));
  g_assert_nonnull(strstr(log, want_c));
  g_assert_nonnull(strstr(log, want_d));
  /* Each node is logged once. */
  g_assert_true(strstr(log, want_c) == g_strrstr(log, want_c));
  g_free(want_a);
  g_free(want_c);
  g_free(want_d);
  g_free(log);
  weft_graph_free(g);
}

typedef struct parallel_args {
  weft_session_t *s;
  int id;
  int failures;
} parallel_args_t;

static gpointer parallel_worker(gpointer p) {
  parallel_args_t *a = p;
  for (int k = 0; k < 50; k++) {
    float v[2] = {(float)a->id, (float)k};
    weft_tensor_t *feed = vec_f32(2, v);
    const char *feeds[] = {"x"};
    const char *fetch[] = {"out"};
    weft_tensor_t *out = NULL;
    weft_status_t *st = weft_session_run(a->s, feeds, &feed, 1, fetch, &out, 1, NULL, 0);
    if (st || fabsf(f0(out, 0) - 20.0f * (float)a->id) > 1e-4f || fabsf(f0(out, 1) - 20.0f * (float)k) > 1e-3f)
      a->failures++;
    weft_status_free(st);
    weft_tensor_unref(out);
    weft_tensor_unref(feed);
  }
  return NULL;
}

static void test_parallel_branches_and_runs(void) {
  /* out = sum of 20 independent branches x*1; run from 4 threads at once. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d2[1] = {2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, d2, &st);
  OK(st);
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  weft_output_t branches[20];
  for (int k = 0; k < 20; k++) {
    branches[k] = weft_binary(g, "Mul", "branch", x, one, &st);
    OK(st);
  }
  g_assert_cmpstr(weft_node_name(branches[1].node), ==, "branch_1");
  weft_op_builder_t *b = weft_op_new(g, "AddN", "out");
  weft_op_add_input_list(b, branches, 20);
  OK(weft_op_finish(b, NULL));
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_use_per_session_threads(o, true);
  weft_session_options_set_inter_op_threads(o, 3);
  weft_session_options_set_intra_op_threads(o, 2);
  weft_session_t *s = session(g, o);
  weft_session_options_free(o);
  parallel_args_t args[4];
  GThread *threads[4];
  for (int k = 0; k < 4; k++) {
    args[k] = (parallel_args_t){s, k + 1, 0};
    threads[k] = g_thread_new("runner", parallel_worker, &args[k]);
  }
  for (int k = 0; k < 4; k++) {
    g_thread_join(threads[k]);
    g_assert_cmpint(args[k].failures, ==, 0);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

/* Steps that repeat an earlier step's names reuse what those names resolved to (the session's
 * step memo): each such step still checks its feeds and reads its own feed values, the memo
 * holds several name lists at once, and a name is resolved again once the graph has grown. */
static void test_repeated_steps(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d2[1] = {2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, d2, &st);
  OK(st);
  weft_output_t n = weft_unary(g, "Neg", "n", x, &st);
  OK(st);
  weft_output_t sq = weft_unary(g, "Square", "sq", x, &st);
  OK(st);
  weft_binary(g, "AddV2", "sum", n, sq, &st);
  OK(st);
  weft_session_t *s = session(g, NULL);
  const char *feeds[] = {"x"};
  weft_tensor_t *out = NULL;

  /* The same names with new values each step, then bad feeds under names the memo knows. */
  const char *fetch_n[] = {"n"};
  for (int k = 0; k < 5; k++) {
    float xv[2] = {(float)k, 0.5f * (float)k};
    weft_tensor_t *feed = vec_f32(2, xv);
    OK(weft_session_run(s, feeds, &feed, 1, fetch_n, &out, 1, NULL, 0));
    g_assert_cmpfloat(f0(out, 0), ==, -(float)k);
    g_assert_cmpfloat(f0(out, 1), ==, -0.5f * (float)k);
    weft_tensor_unref(out);
    out = NULL;
    weft_tensor_unref(feed);
  }
  check_bad_feeds(s, fetch_n[0]);

  /* More name lists than the memo holds, in turn, several rounds: every step gets its own. */
  const char *fetch_sets[6][2] = {{"n", NULL},   {"sq", NULL}, {"sum", NULL},
                                  {"n", "sq"},   {"sq:0", "n:0"}, {"sum:0", "x"}};
  int n_fetch[6] = {1, 1, 1, 2, 2, 2};
  float xv[2] = {3.0f, -2.0f};
  weft_tensor_t *feed = vec_f32(2, xv);
  for (int round = 0; round < 3; round++) {
    for (int k = 0; k < 6; k++) {
      weft_tensor_t *outs[2] = {NULL, NULL};
      OK(weft_session_run(s, feeds, &feed, 1, fetch_sets[k], outs, n_fetch[k], NULL, 0));
      for (int f = 0; f < n_fetch[k]; f++) {
        const char *name = fetch_sets[k][f];
        for (int i = 0; i < 2; i++) {
          float v = xv[i], want = name[0] == 'x'   ? v
                                  : name[1] == 'q' ? v * v
                                  : name[1] == 'u' ? v * v - v
                                                   : -v;
          g_assert_cmpfloat(f0(outs[f], i), ==, want);
        }
        weft_tensor_unref(outs[f]);
      }
    }
  }

  /* The graph grows: "y:1" named output 1 of nothing and fell back to a node named "y:1"; once a
   * node "y" with two outputs exists, TensorFlow's reading (output 1 of "y") wins. */
  weft_tensor_t *seven = weft_tensor_new_scalar_float(7.0f);
  weft_const(g, "y:1", seven, &st);
  weft_tensor_unref(seven);
  OK(st);
  const char *fetch_y1[] = {"y:1"};
  OK(weft_session_run(s, NULL, NULL, 0, fetch_y1, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 0), ==, 7.0f);
  weft_tensor_unref(out);
  OK(weft_session_run(s, NULL, NULL, 0, fetch_y1, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 0), ==, 7.0f);
  weft_tensor_unref(out);
  float uv[3] = {5.0f, 5.0f, 3.0f};
  weft_tensor_t *u = vec_f32(3, uv);
  weft_output_t uc = weft_const(g, "u", u, &st);
  weft_tensor_unref(u);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Unique", "y");
  weft_op_add_input(b, uc);
  OK(weft_op_finish(b, NULL));
  OK(weft_session_run(s, NULL, NULL, 0, fetch_y1, &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_dtype(out), ==, WEFT_DT_INT32);
  g_assert_cmpint(weft_tensor_dims(out)[0], ==, 3);
  const int32_t *idx = weft_tensor_data(out);
  g_assert_cmpint(idx[0], ==, 0);
  g_assert_cmpint(idx[1], ==, 0);
  g_assert_cmpint(idx[2], ==, 1);
  weft_tensor_unref(out);
  weft_tensor_unref(feed);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_string_hello(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  const char *msg = "Hello, distributed TensorFlow!";
  weft_tensor_t *t = weft_tensor_new_string(msg, strlen(msg));
  weft_const(g, "hello", t, &st);
  OK(st);
  weft_tensor_unref(t);
  weft_session_t *s = session(g, NULL);
  const char *fetch[] = {"hello"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_dtype(out), ==, WEFT_DT_STRING);
  weft_string_t *sv = weft_tensor_data(out);
  g_assert_cmpmem(sv[0].data, sv[0].len, msg, strlen(msg));
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_closed(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_const_float(g, "a", 1.0f, &st);
  OK(st);
  weft_session_t *s = session(g, NULL);
  OK(weft_session_close(s));
  const char *fetch[] = {"a"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_cmpstr(weft_status_message(st), ==, "Session has been closed");
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
}

/* A variable initialised in one run and updated by an op in a later run is placed with its whole
 * colocation group at the first run, so the update finds it on a device that has its kernel
 * (an unpinned variable would otherwise go to a gpu-like device lacking ApplyGradientDescent). */
static void test_colocation_group_placed_whole(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  float init_v[2] = {1.0f, 2.0f};
  weft_tensor_t *init_t = vec_f32(2, init_v);
  weft_output_t init_value = weft_const(g, "w_init", init_t, &st);
  OK(st);
  weft_tensor_unref(init_t);
  weft_variable(g, "w", init_value, &st);
  OK(st);
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_output_t lr = weft_const_float(g, "lr", 0.5f, &st);
  OK(st);
  float delta_v[2] = {2.0f, 4.0f};
  weft_tensor_t *delta_t = vec_f32(2, delta_v);
  weft_output_t delta = weft_const(g, "delta", delta_t, &st);
  OK(st);
  weft_tensor_unref(delta_t);
  weft_op_builder_t *b = weft_op_new(g, "ApplyGradientDescent", "update");
  weft_op_add_input(b, weft_out(weft_graph_node(g, "w"), 0));
  weft_op_add_input(b, lr);
  weft_op_add_input(b, delta);
  OK(weft_op_finish(b, NULL));
  weft_session_t *s = session(g, NULL);
  const char *init[] = {"init"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 1));
  g_assert_cmpstr(weft_session_node_device(s, "update"), ==, weft_session_node_device(s, "w"));
  const char *fetch[] = {"update"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(f0(out, 0), ==, 0.0f);
  g_assert_cmpfloat(f0(out, 1), ==, 0.0f);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

static long rss_kib(void) {
  char *status = NULL;
  long kib = -1;
  if (g_file_get_contents("/proc/self/status", &status, NULL, NULL)) {
    const char *at = strstr(status, "VmRSS:");
    if (at) kib = atol(at + 6);
  }
  g_free(status);
  return kib;
}

/* A large graph and its session, created, run, closed and freed again and again: what they took
 * goes back (glibc otherwise keeps the freed blocks: a 1M-node graph left 600 MB resident after
 * close, growing with each cycle). 200 000 nodes keep it fast; the bounds are relative. */
static void test_large_graph_memory_returned(void) {
#if defined(__SANITIZE_ADDRESS__)
  g_test_skip("ASan's allocator keeps freed memory in quarantine");
  return;
#endif
  const int n = 200000;
  long start = rss_kib(), first_closed = 0;
  if (start < 0) {
    g_test_skip("no /proc/self/status");
    return;
  }
  for (int cycle = 0; cycle < 3; cycle++) {
    weft_graph_t *g = weft_graph_new();
    weft_status_t *st = NULL;
    weft_output_t x = weft_const_float(g, "c", 1, &st);
    char name[32];
    for (int i = 0; i < n && !st; i++) {
      snprintf(name, sizeof name, "n%d", i);
      x = weft_unary(g, "Identity", name, x, &st);
    }
    g_assert_null(st);
    weft_session_t *s = weft_session_new(g, NULL, &st);
    g_assert_null(st);
    const char *fetch = name;
    weft_tensor_t *out = NULL;
    g_assert_null(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
    g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 1);
    weft_tensor_unref(out);
    long peak = rss_kib();
    g_assert_null(weft_session_close(s));
    weft_session_free(s);
    weft_graph_free(g);
    long closed = rss_kib();
    g_test_message("cycle %d: %ld KiB at start, %ld KiB built and run, %ld KiB after close",
                   cycle, start, peak, closed);
    /* Most of what the graph and session took is given back... */
    g_assert_cmpint(closed - start, <=, (peak - start) / 2);
    /* ...and repeating does not pile up. */
    if (cycle == 0) first_closed = closed;
    else g_assert_cmpint(closed, <=, first_closed + 16 * 1024);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/session/feed_fetch", test_feed_fetch);
  g_test_add_func("/session/feed_errors", test_feed_errors);
  g_test_add_func("/session/variables", test_variables);
  g_test_add_func("/session/control_dependencies", test_control_dependencies);
  g_test_add_func("/session/kernel_error_cancels_step", test_kernel_error_cancels_step);
  g_test_add_func("/session/log_device_placement", test_log_device_placement);
  g_test_add_func("/session/parallel_branches_and_runs", test_parallel_branches_and_runs);
  g_test_add_func("/session/repeated_steps", test_repeated_steps);
  g_test_add_func("/session/string_hello", test_string_hello);
  g_test_add_func("/session/closed", test_closed);
  g_test_add_func("/session/colocation_group_placed_whole", test_colocation_group_placed_whole);
  g_test_add_func("/session/large_graph_memory_returned", test_large_graph_memory_returned);
  return g_test_run();
}
