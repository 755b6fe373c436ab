/* Tests for step profiling: run options (trace level, deadline), the per-node stats a traced step
 * collects in a local session and across the tasks of a weftd cluster, the Chrome trace written
 * from them (parsed back with json-glib), and `weft run --trace`. */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/weft.h"
#include "weftd_cluster.h"

#define WEFT_CLI WEFT_BUILD_DIR "/core/tools/weft"
#define CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"

#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                               \
  } while (0)

/* z = x + y, w = z * x over scalar floats x = 2, y = 3, on the CPU (a GPU backend, when there
 * is one, would otherwise take the arithmetic). */
static weft_graph_t *small_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  weft_output_t x = weft_const_float(g, "x", 2.0f, &st);
  OK(st);
  weft_output_t y = weft_const_float(g, "y", 3.0f, &st);
  OK(st);
  weft_output_t z = weft_binary(g, "AddV2", "z", x, y, &st);
  OK(st);
  weft_binary(g, "Mul", "w", z, x, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

static const weft_node_stats_t *find_stats(const weft_run_metadata_t *meta, const char *node) {
  for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
    if (strcmp(r->node_name, node) == 0) return r;
  }
  return NULL;
}

/* Parses a Chrome trace and checks its shape: every event has ph/pid/tid, every "X" event a
 * name, ts, dur and args {name, op, inputs, bytes}, every pid a process_name. Returns the number
 * of process_name events; *x_events gets the X events' args keyed by node name (new refs). */
static int check_chrome_trace(const char *text, GHashTable *x_events, GHashTable *pid_names) {
  GError *err = NULL;
  JsonParser *p = json_parser_new();
  g_assert_true(json_parser_load_from_data(p, text, -1, &err));
  g_assert_no_error(err);
  JsonObject *root = json_node_get_object(json_parser_get_root(p));
  g_assert_cmpstr(json_object_get_string_member(root, "displayTimeUnit"), ==, "ms");
  JsonArray *events = json_object_get_array_member(root, "traceEvents");
  g_assert_nonnull(events);
  int processes = 0;
  GHashTable *pids_seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint k = 0; k < json_array_get_length(events); k++) {
    JsonObject *e = json_array_get_object_element(events, k);
    const char *ph = json_object_get_string_member(e, "ph");
    gint64 pid = json_object_get_int_member(e, "pid");
    g_assert_true(json_object_has_member(e, "tid"));
    g_assert_cmpint(pid, >, 0);
    if (strcmp(ph, "M") == 0) {
      const char *what = json_object_get_string_member(e, "name");
      if (strcmp(what, "process_name") == 0) {
        processes++;
        const char *dev = json_object_get_string_member(json_object_get_object_member(e, "args"),
                                                        "name");
        g_hash_table_insert(pid_names, GINT_TO_POINTER((int)pid), g_strdup(dev));
      }
      continue;
    }
    g_assert_cmpstr(ph, ==, "X");
    /* Metadata comes before the first event of its process. */
    g_assert_true(g_hash_table_contains(pid_names, GINT_TO_POINTER((int)pid)));
    g_hash_table_add(pids_seen, GINT_TO_POINTER((int)pid));
    g_assert_cmpint(json_object_get_int_member(e, "ts"), >=, 0);
    g_assert_cmpint(json_object_get_int_member(e, "dur"), >=, 0);
    JsonObject *args = json_object_get_object_member(e, "args");
    g_assert_cmpstr(json_object_get_string_member(args, "name"), ==,
                    json_object_get_string_member(e, "name"));
    g_assert_cmpstr(json_object_get_string_member(args, "op"), ==,
                    json_object_get_string_member(e, "cat"));
    g_assert_true(json_object_has_member(args, "inputs"));
    g_assert_true(json_object_has_member(args, "bytes"));
    /* Keep the device with the args so callers can check where each node ran. */
    JsonObject *copy = json_object_new();
    json_object_set_string_member(copy, "op", json_object_get_string_member(args, "op"));
    json_object_set_string_member(copy, "inputs", json_object_get_string_member(args, "inputs"));
    json_object_set_int_member(copy, "bytes", json_object_get_int_member(args, "bytes"));
    json_object_set_string_member(copy, "device",
                                  g_hash_table_lookup(pid_names, GINT_TO_POINTER((int)pid)));
    g_hash_table_insert(x_events, g_strdup(json_object_get_string_member(e, "name")), copy);
  }
  g_assert_cmpint(g_hash_table_size(pids_seen), ==, processes);
  g_hash_table_destroy(pids_seen);
  g_object_unref(p);
  return processes;
}

static GHashTable *new_events_table(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)json_object_unref);
}

static GHashTable *new_pid_table(void) {
  return g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
}

/* ---------------------------------------------------------------------------------------------
 * Local sessions */

/* small_graph is all constants: constant folding (docs/performance.md) computes w once when the
 * step is planned, and the trace shows the one Const left, under w's name. */
static void test_local_trace_folded(void) {
  weft_graph_t *g = small_graph();
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  const char *fetch = "w";
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  g_assert_cmpfloat(*(float *)weft_tensor_data(out), ==, 10.0f);
  g_assert_cmpint(weft_run_metadata_num_node_stats(meta), ==, 1);
  const weft_node_stats_t *w = find_stats(meta, "w");
  g_assert_nonnull(w);
  g_assert_cmpstr(w->op, ==, "Const");
  g_assert_cmpuint(w->output_bytes, ==, 4);
  weft_tensor_unref(out);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_local_trace(void) {
  /* Every node traced: the folding is off for this session (read when its step is planned). */
  g_setenv("WEFT_NO_FUSION", "constfold", TRUE);
  weft_graph_t *g = small_graph();
  weft_session_t *s = NULL;
  weft_status_t *st = NULL;
  s = weft_session_new(g, NULL, &st);
  OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  const char *fetch = "w";
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  int64_t before = g_get_real_time();
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  int64_t after = g_get_real_time();
  g_unsetenv("WEFT_NO_FUSION");
  g_assert_cmpfloat(*(float *)weft_tensor_data(out), ==, 10.0f);
  weft_tensor_unref(out);
  g_assert_nonnull(meta);
  g_assert_cmpint(weft_run_metadata_num_node_stats(meta), ==, 4);
  g_assert_null(weft_run_metadata_node_stats(meta, 4));
  g_assert_null(weft_run_metadata_node_stats(meta, -1));
  const char *names[] = {"x", "y", "z", "w"};
  const char *ops[] = {"Const", "Const", "AddV2", "Mul"};
  const char *inputs[] = {"", "", "x:0, y:0", "z:0, x:0"};
  for (int k = 0; k < 4; k++) {
    const weft_node_stats_t *r = find_stats(meta, names[k]);
    g_assert_nonnull(r);
    g_assert_cmpstr(r->op, ==, ops[k]);
    g_assert_cmpstr(r->device, ==, CPU0);
    g_assert_cmpstr(r->inputs, ==, inputs[k]);
    g_assert_cmpuint(r->output_bytes, ==, 4);
    g_assert_cmpint(r->start_us, >=, before);
    g_assert_cmpint(r->start_us + r->duration_us, <=, after + 1);
    g_assert_cmpint(r->duration_us, >=, 0);
  }
  /* Dependencies show in the times: w cannot start before z has finished. */
  const weft_node_stats_t *z = find_stats(meta, "z"), *w = find_stats(meta, "w");
  g_assert_cmpint(w->start_us, >=, z->start_us);

  char *text = weft_run_metadata_chrome_trace(meta);
  GHashTable *events = new_events_table(), *pids = new_pid_table();
  g_assert_cmpint(check_chrome_trace(text, events, pids), ==, 1);
  g_assert_cmpuint(g_hash_table_size(events), ==, 4);
  JsonObject *ze = g_hash_table_lookup(events, "z");
  g_assert_cmpstr(json_object_get_string_member(ze, "op"), ==, "AddV2");
  g_assert_cmpstr(json_object_get_string_member(ze, "inputs"), ==, "x:0, y:0");
  g_assert_cmpint(json_object_get_int_member(ze, "bytes"), ==, 4);
  g_assert_cmpstr(json_object_get_string_member(ze, "device"), ==, CPU0);
  g_hash_table_destroy(events);
  g_hash_table_destroy(pids);
  g_free(text);

  /* The same through a file. */
  char *dir = g_dir_make_tmp("weft-trace-XXXXXX", NULL);
  char *path = g_build_filename(dir, "step.json", NULL);
  OK(weft_run_metadata_write_chrome_trace(meta, path));
  char *written = NULL;
  g_assert_true(g_file_get_contents(path, &written, NULL, NULL));
  text = weft_run_metadata_chrome_trace(meta);
  g_assert_cmpstr(written, ==, text);
  g_free(text);
  g_free(written);
  /* A path in a folder that does not exist: the status names the file. */
  char *bad = g_build_filename(dir, "no-such-folder", "step.json", NULL);
  st = weft_run_metadata_write_chrome_trace(meta, bad);
  g_assert_nonnull(st);
  g_assert_nonnull(strstr(weft_status_message(st), bad));
  weft_status_free(st);
  g_free(bad);
  g_unlink(path);
  g_rmdir(dir);
  g_free(path);
  g_free(dir);
  weft_run_metadata_free(meta);

  /* A second traced step of the cached plan reports its own nodes only. */
  meta = NULL;
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  weft_tensor_unref(out);
  g_assert_cmpint(weft_run_metadata_num_node_stats(meta), ==, 4);
  weft_run_metadata_free(meta);

  weft_run_options_free(ro);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_untraced(void) {
  weft_graph_t *g = small_graph();
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch = "w";
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  /* Default options: metadata, but no node stats. */
  OK(weft_session_run_with_options(s, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  g_assert_cmpfloat(*(float *)weft_tensor_data(out), ==, 10.0f);
  weft_tensor_unref(out);
  g_assert_nonnull(meta);
  g_assert_cmpint(weft_run_metadata_num_node_stats(meta), ==, 0);
  /* An empty trace is still a valid one. */
  char *text = weft_run_metadata_chrome_trace(meta);
  GHashTable *events = new_events_table(), *pids = new_pid_table();
  g_assert_cmpint(check_chrome_trace(text, events, pids), ==, 0);
  g_hash_table_destroy(events);
  g_hash_table_destroy(pids);
  g_free(text);
  weft_run_metadata_free(meta);

  /* Tracing asked for but no metadata to put it in. */
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, NULL));
  weft_tensor_unref(out);

  /* A trace level that does not exist. */
  weft_run_options_set_trace_level(ro, (weft_trace_level_t)7);
  meta = (weft_run_metadata_t *)ro; /* must be reset to NULL */
  st = weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "trace level 7"));
  g_assert_null(meta);
  weft_status_free(st);

  /* A failing step gives no metadata. */
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  fetch = "nope";
  meta = (weft_run_metadata_t *)ro;
  st = weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_null(meta);
  weft_status_free(st);
  weft_run_options_free(ro);
  weft_run_metadata_free(NULL);
  weft_run_options_free(NULL);
  weft_session_free(s);
  weft_graph_free(g);
}

/* A step of 64 Negs over 4 MiB cannot finish within 1 ms: it stops at a node boundary. The
 * input is fed (a Const's chain would be folded when the step is planned, before any deadline). */
static void test_local_deadline(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/device:CPU:0");
  int64_t dims[] = {1 << 20};
  weft_tensor_t *big = weft_tensor_new(WEFT_DT_FLOAT, 1, dims);
  memset(weft_tensor_data(big), 0, weft_tensor_nbytes(big));
  weft_output_t x = weft_placeholder(g, "big", WEFT_DT_FLOAT, 1, dims, &st);
  OK(st);
  const char *feed_name = "big";
  for (int k = 0; k < 64; k++) {
    char name[32];
    snprintf(name, sizeof name, "neg%d", k);
    x = weft_unary(g, "Neg", name, x, &st);
    OK(st);
  }
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_timeout_ms(ro, 1);
  const char *fetch = "neg63";
  weft_tensor_t *out = NULL;
  st = weft_session_run_with_options(s, ro, &feed_name, &big, 1, &fetch, &out, 1, NULL, 0, NULL);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_DEADLINE_EXCEEDED);
  g_assert_nonnull(strstr(weft_status_message(st), "passed its deadline before node '"));
  g_assert_null(out);
  weft_status_free(st);
  /* A generous deadline does not get in the way, nor does one too large to add to a clock. */
  weft_run_options_set_timeout_ms(ro, G_MAXINT64);
  OK(weft_session_run_with_options(s, ro, &feed_name, &big, 1, &fetch, &out, 1, NULL, 0, NULL));
  weft_tensor_unref(out);
  weft_run_options_set_timeout_ms(ro, 60000);
  OK(weft_session_run_with_options(s, ro, &feed_name, &big, 1, &fetch, &out, 1, NULL, 0, NULL));
  g_assert_cmpint(weft_tensor_nbytes(out), ==, 4 << 20);
  weft_tensor_unref(out);
  weft_run_options_free(ro);
  weft_tensor_unref(big);
  weft_session_free(s);
  weft_graph_free(g);
}

/* Six independent Muls m0..m5 of x = Identity(p), p fed (Muls of a Const would be folded
 * when the step is planned) with n floats i % 7 in *xt. */
static const char *const six_muls[6] = {"m0", "m1", "m2", "m3", "m4", "m5"};
static weft_graph_t *six_muls_graph(int64_t n, weft_tensor_t **xt) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  *xt = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  for (int64_t i = 0; i < n; i++) ((float *)weft_tensor_data(*xt))[i] = (float)(i % 7);
  weft_output_t p = weft_placeholder(g, "p", WEFT_DT_FLOAT, 1, &n, &st);
  OK(st);
  weft_output_t x = weft_unary(g, "Identity", "x", p, &st);
  OK(st);
  for (int k = 0; k < 6; k++) {
    weft_binary(g, "Mul", six_muls[k], x, x, &st);
    OK(st);
  }
  weft_graph_pop_device(g);
  return g;
}

/* Runs six_muls_graph(n) `warm` times untraced, then once traced; checks the products and
 * returns how many of the Muls ran on x's thread. */
static int muls_on_x_thread(int64_t n, int warm) {
  weft_tensor_t *xt = NULL;
  weft_graph_t *g = six_muls_graph(n, &xt);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *feed_name = "p";
  weft_tensor_t *out[6] = {NULL};
  for (int r = 0; r < warm; r++) {
    OK(weft_session_run(s, &feed_name, &xt, 1, six_muls, out, 6, NULL, 0));
    for (int k = 0; k < 6; k++) weft_tensor_unref(out[k]);
  }
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  weft_run_metadata_t *meta = NULL;
  OK(weft_session_run_with_options(s, ro, &feed_name, &xt, 1, six_muls, out, 6,
                                   NULL, 0, &meta));
  weft_tensor_unref(xt);
  const weft_node_stats_t *xs = find_stats(meta, "x");
  g_assert_nonnull(xs);
  int on_x_thread = 0;
  double last = (double)((n - 1) % 7);
  for (int k = 0; k < 6; k++) {
    g_assert_cmpfloat(weft_tensor_get_double(out[k], n - 1), ==, last * last);
    weft_tensor_unref(out[k]);
    const weft_node_stats_t *r = find_stats(meta, six_muls[k]);
    g_assert_nonnull(r);
    if (r->thread_id == xs->thread_id) on_x_thread++;
  }
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_session_free(s);
  weft_graph_free(g);
  return on_x_thread;
}

/* Six Muls of a 4-element tensor: handing each to a pool thread would cost more than running
 * it, so they all run on the thread that readied them, the one that ran x, from the first
 * step. */
static void test_small_nodes_inline(void) { g_assert_cmpint(muls_on_x_thread(4, 0), ==, 6); }

/* Six Muls of 8192 floats (32 KiB: too large to be judged small by its inputs). A node whose
 * kernel was measured faster than a hand-off runs on the thread that readied it (WEFT_INLINE_US
 * fixes the bound the executor otherwise measures); before it was measured, or with the bound
 * 0, five of the six go to pool threads. */
static void test_measured_cheap_inline(void) {
  g_setenv("WEFT_INLINE_US", "1000000", TRUE);
  g_assert_cmpint(muls_on_x_thread(8192, 0), ==, 1);
  g_assert_cmpint(muls_on_x_thread(8192, 2), ==, 6);
  g_setenv("WEFT_INLINE_US", "0", TRUE);
  g_assert_cmpint(muls_on_x_thread(8192, 2), ==, 1);
  g_unsetenv("WEFT_INLINE_US");
}

/* ---------------------------------------------------------------------------------------------
 * Remote steps */

#define TASK(n) "/job:worker/replica:0/task:" #n "/device:CPU:0"

/* x and y on task 0, z = x + y and w = z * x on task 1: every node's record comes back through
 * RunGraph and RunStep, with the _Send/_Recv pairs between the tasks. */
static void test_remote_trace(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 0, 2, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  weft_output_t x = weft_const_float(g, "x", 2.0f, &st);
  weft_output_t y = weft_const_float(g, "y", 3.0f, &st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
  weft_output_t z = weft_binary(g, "AddV2", "z", x, y, &st);
  weft_binary(g, "Mul", "w", z, x, &st);
  weft_graph_pop_device(g);
  OK(st);
  weft_session_t *s = weftd_remote_session(g, c.target[0]);

  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  weft_run_options_set_timeout_ms(ro, 30000);
  const char *fetch = "w";
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  g_assert_cmpfloat(*(float *)weft_tensor_data(out), ==, 10.0f);
  weft_tensor_unref(out);
  const char *where[][2] = {{"x", TASK(0)}, {"y", TASK(0)}, {"z", TASK(1)}, {"w", TASK(1)}};
  for (int k = 0; k < 4; k++) {
    const weft_node_stats_t *r = find_stats(meta, where[k][0]);
    g_assert_nonnull(r);
    g_assert_cmpstr(r->device, ==, where[k][1]);
    g_assert_cmpuint(r->output_bytes, ==, 4);
  }
  /* The transfers between the tasks are nodes too: a _Send on task 0 per tensor task 1 reads,
   * and a _Recv on task 1 for each. */
  int sends = 0, recvs = 0;
  for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
    if (strcmp(r->op, "_Send") == 0) {
      sends++;
      g_assert_cmpstr(r->device, ==, TASK(0));
    } else if (strcmp(r->op, "_Recv") == 0) {
      recvs++;
      g_assert_cmpstr(r->device, ==, TASK(1));
    }
  }
  g_assert_cmpint(sends, ==, 2);
  g_assert_cmpint(recvs, ==, 2);

  char *text = weft_run_metadata_chrome_trace(meta);
  GHashTable *events = new_events_table(), *pids = new_pid_table();
  g_assert_cmpint(check_chrome_trace(text, events, pids), ==, 2);
  JsonObject *we = g_hash_table_lookup(events, "w");
  g_assert_cmpstr(json_object_get_string_member(we, "device"), ==, TASK(1));
  g_assert_cmpstr(json_object_get_string_member(we, "op"), ==, "Mul");
  g_assert_cmpstr(json_object_get_string_member(g_hash_table_lookup(events, "x"), "device"), ==,
                  TASK(0));
  g_hash_table_destroy(events);
  g_hash_table_destroy(pids);
  g_free(text);
  weft_run_metadata_free(meta);

  /* Untraced remote steps carry no stats. */
  weft_run_options_set_trace_level(ro, WEFT_TRACE_NONE);
  meta = NULL;
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  weft_tensor_unref(out);
  g_assert_cmpint(weft_run_metadata_num_node_stats(meta), ==, 0);
  weft_run_metadata_free(meta);

  weft_run_options_free(ro);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* One traced gradient-descent step of y = W*x + b with the variables on task 0 (the ps) and the
 * rest on task 1, the master. The step's messages are its _Recv nodes: the worker reads W and b,
 * the ps the two gradients. The train op waits on two updates on the ps: without a global step
 * it sits on the worker and the two updates come as one control message; with one it sits beside
 * the global step (as TensorFlow's) and the worker waits for no control message at all. */
static void traced_training_step(weftd_cluster_t *c, bool with_global_step) {
  weft_graph_t *g = weft_graph_new();
  weft_replica_device_setter_t *setter =
      weft_replica_device_setter(g, 1, "/job:worker", "/job:worker/task:1", true,
                                 WEFT_PS_ROUND_ROBIN);
  weft_graph_push_device_fn(g, weft_replica_device_setter_fn, setter);
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  int64_t four[1] = {4};
  weft_tensor_t *xt = weft_tensor_new(WEFT_DT_FLOAT, 1, four);
  weft_tensor_t *yt = weft_tensor_new(WEFT_DT_FLOAT, 1, four);
  for (int i = 0; i < 4; i++) {
    ((float *)weft_tensor_data(xt))[i] = (float)(i + 1);
    ((float *)weft_tensor_data(yt))[i] = (float)(2 * (i + 1) + 1);
  }
  weft_output_t x = weft_const(g, "x", xt, &st);
  weft_output_t y = st ? x : weft_const(g, "y", yt, &st);
  weft_output_t w = st ? x : weft_variable(g, "W", weft_const_float(g, "W_init", 0.5f, &st), &st);
  weft_output_t b = st ? x : weft_variable(g, "b", weft_const_float(g, "b_init", 0.0f, &st), &st);
  weft_output_t wx = st ? x : weft_binary(g, "Mul", "wx", x, w, &st);
  weft_output_t pred = st ? x : weft_binary(g, "AddV2", "pred", wx, b, &st);
  weft_output_t loss = st ? x : weft_mean_squared_error(g, y, pred, &st);
  OK(st);
  weft_node_t *gs = with_global_step ? weft_train_global_step(g, &st) : NULL;
  OK(st);
  weft_optimizer_spec_t sgd = weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1);
  weft_node_t *train = NULL;
  OK(weft_minimize(g, loss, &sgd, NULL, 0, gs, &train));
  weft_node_t *init = weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_pop_device(g);
  weft_replica_device_setter_free(setter);
  weft_tensor_unref(xt);
  weft_tensor_unref(yt);

  weft_session_t *s = weftd_remote_session(g, c->target[1]);
  const char *target = weft_node_name(init);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1));
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  weft_run_options_set_timeout_ms(ro, 30000);
  weft_run_metadata_t *meta = NULL;
  target = weft_node_name(train);
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, NULL, NULL, 0, &target, 1, &meta));
  int data_recvs[2] = {0, 0}, control_recvs[2] = {0, 0};
  for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
    if (strcmp(r->op, "_Recv") != 0) continue;
    int task = strcmp(r->device, TASK(0)) == 0 ? 0 : 1;
    if (task == 1) g_assert_cmpstr(r->device, ==, TASK(1));
    if (g_str_has_prefix(r->node_name, "_weft/recv/ctrl/")) control_recvs[task]++;
    else data_recvs[task]++;
  }
  g_assert_cmpint(data_recvs[1], ==, 2);     /* W and b */
  g_assert_cmpint(data_recvs[0], ==, 2);     /* their gradients */
  g_assert_cmpint(control_recvs[0], ==, 0);
  g_assert_cmpint(control_recvs[1], ==, with_global_step ? 0 : 1);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);

  /* pred = 0.5x, so dL/dW = mean(2(pred - y)x) = -27.5 and dL/db = -9.5. */
  const char *fetches[3] = {"W", "b", "global_step"};
  weft_tensor_t *out[3] = {NULL, NULL, NULL};
  int n_fetches = with_global_step ? 3 : 2;
  OK(weft_session_run(s, NULL, NULL, 0, fetches, out, n_fetches, NULL, 0));
  g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(out[0], 0), 3.25, 1e-5);
  g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(out[1], 0), 0.95, 1e-5);
  if (with_global_step) g_assert_cmpfloat(weft_tensor_get_double(out[2], 0), ==, 1);
  for (int k = 0; k < n_fetches; k++) weft_tensor_unref(out[k]);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_remote_training_step(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 0, 2, NULL)) return;
  traced_training_step(&c, false);
  traced_training_step(&c, true);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * weft run --trace */

static void test_cli_trace(void) {
  if (!g_file_test(WEFT_CLI, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weft not built at " WEFT_CLI);
    return;
  }
  weft_graph_t *g = small_graph();
  void *bytes = NULL;
  size_t len = 0;
  OK(weft_graph_export_graphdef(g, &bytes, &len));
  weft_graph_free(g);
  char *dir = g_dir_make_tmp("weft-trace-cli-XXXXXX", NULL);
  char *pb = g_build_filename(dir, "g.pb", NULL);
  char *json = g_build_filename(dir, "trace.json", NULL);
  g_assert_true(g_file_set_contents(pb, bytes, (gssize)len, NULL));
  free(bytes);
  const char *argv[] = {WEFT_CLI, "run", "--graph", pb, "--fetch", "w", "--trace", json, NULL};
  char *out = NULL, *err = NULL;
  int status = 0;
  /* Every node traced: the graph is all constants, which the folding would compute at plan time
   * (/trace/local_folded). */
  char **env = g_environ_setenv(g_get_environ(), "WEFT_NO_FUSION", "constfold", TRUE);
  g_assert_true(g_spawn_sync(NULL, (char **)argv, env, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                             &status, NULL));
  g_strfreev(env);
  if (!g_spawn_check_wait_status(status, NULL)) g_error("weft run --trace failed: %s", err);
  g_assert_nonnull(strstr(out, "10"));
  char *text = NULL;
  g_assert_true(g_file_get_contents(json, &text, NULL, NULL));
  GHashTable *events = new_events_table(), *pids = new_pid_table();
  g_assert_cmpint(check_chrome_trace(text, events, pids), ==, 1);
  g_assert_cmpuint(g_hash_table_size(events), ==, 4);
  g_assert_cmpstr(json_object_get_string_member(g_hash_table_lookup(events, "w"), "op"), ==,
                  "Mul");
  g_hash_table_destroy(events);
  g_hash_table_destroy(pids);
  g_free(text);
  g_free(out);
  g_free(err);

  /* An unwritable trace file: the step's error names it, exit status 1. */
  char *bad = g_build_filename(dir, "missing", "trace.json", NULL);
  argv[7] = bad;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                             &status, NULL));
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  g_assert_nonnull(strstr(err, bad));
  g_free(out);
  g_free(err);
  g_free(bad);
  g_unlink(json);
  g_unlink(pb);
  g_rmdir(dir);
  g_free(json);
  g_free(pb);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  g_test_add_func("/trace/local", test_local_trace);
  g_test_add_func("/trace/local_folded", test_local_trace_folded);
  g_test_add_func("/trace/untraced", test_untraced);
  g_test_add_func("/trace/local_deadline", test_local_deadline);
  g_test_add_func("/trace/small_nodes_inline", test_small_nodes_inline);
  g_test_add_func("/trace/measured_cheap_inline", test_measured_cheap_inline);
  g_test_add_func("/trace/remote", test_remote_trace);
  g_test_add_func("/trace/remote_training_step", test_remote_training_step);
  g_test_add_func("/trace/cli", test_cli_trace);
  return g_test_run();
}
