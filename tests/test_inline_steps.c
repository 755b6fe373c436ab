/* A weftd's polling thread runs a small RunStep itself, without first waking another thread to
 * poll in its place (server.c, weft__server_may_block; master.c, plan_never_waits), and every
 * other step still gets a follower before it may wait. Checked on real weftd processes by the
 * threads named weft-grpc (the pollers: a follower woken for a step stays for 2 s): small steps
 * on a server whose spare pollers have ended leave it one; WEFT_SERVER_INLINE_STEPS=0, a fed
 * tensor of unknown shape, a large constant each start a follower. Steps that loop for ever on
 * scalars (control flow, which never runs on the polling thread) are closed from another client
 * on a weftd in test_step_cancel's /step_cancel/remote. */
#include <glib.h>
#include <string.h>

#include "process_util.h"
#include "weftd_cluster.h"

#define OK(expr)                                                 \
  do {                                                           \
    weft_status_t *st_ = (expr);                                 \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

/* Waits (generously: a loaded machine) until the spare pollers have ended; returns how many
 * pollers are left. */
static int wait_one_poller(GPid pid) {
  int n = proc_threads_named(pid, "weft-grpc");
  for (int k = 0; k < 600 && n > 1; k++) {
    g_usleep(50000);
    n = proc_threads_named(pid, "weft-grpc");
  }
  return n;
}

static weftd_proc_t start_local(const char *const *env) {
  const char *const args[] = {"--local", "--port", "0", NULL};
  return weftd_spawn(args, env, false);
}

/* y = x + 1 over a scalar Placeholder x, or one of unknown length when `unknown_shape`. */
static weft_graph_t *add_one_graph(bool unknown_shape) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/device:CPU:0");
  int64_t dims[1] = {-1};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, unknown_shape ? 1 : 0, dims, &st);
  OK(st);
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  weft_binary(g, "AddV2", "y", x, one, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

/* Runs y for x = k, k + 1, ... (`len` elements, 0: a scalar) `steps` times; checks every value. */
static void run_add_one(weft_session_t *s, int len, int steps) {
  int64_t dims[1] = {len};
  for (int k = 0; k < steps; k++) {
    weft_tensor_t *x = weft_tensor_new(WEFT_DT_FLOAT, len ? 1 : 0, dims);
    float *xv = weft_tensor_data(x);
    for (int i = 0; i < (len ? len : 1); i++) xv[i] = (float)(k + i);
    const char *feed = "x", *fetch = "y";
    weft_tensor_t *y = NULL;
    OK(weft_session_run(s, &feed, &x, 1, &fetch, &y, 1, NULL, 0));
    g_assert_cmpint(weft_tensor_num_elements(y), ==, len ? len : 1);
    const float *yv = weft_tensor_data(y);
    for (int i = 0; i < (len ? len : 1); i++) g_assert_cmpfloat(yv[i], ==, (float)(k + i) + 1.0f);
    weft_tensor_unref(y);
    weft_tensor_unref(x);
  }
}

/* Small steps leave the server with its one poller; with the switch off every step wakes a
 * follower, and the polling role moving between them leaves two or more. */
static void test_small_steps(void) {
  if (!weftd_available()) return;
  const char *const off[] = {"WEFT_SERVER_INLINE_STEPS=0", NULL};
  for (int inline_on = 1; inline_on >= 0; inline_on--) {
    weftd_proc_t d = start_local(inline_on ? NULL : off);
    weft_graph_t *g = add_one_graph(false);
    weft_session_t *s = weftd_remote_session(g, d.target);
    run_add_one(s, 0, 1); /* CreateSession and the plan's registration wake a follower */
    g_assert_cmpint(wait_one_poller(d.pid), ==, 1);
    run_add_one(s, 0, 300);
    int pollers = proc_threads_named(d.pid, "weft-grpc");
    g_test_message("WEFT_SERVER_INLINE_STEPS=%d: %d poller(s) after 300 small steps", inline_on,
                   pollers);
    if (inline_on) g_assert_cmpint(pollers, ==, 1);
    else g_assert_cmpint(pollers, >=, 2);
    weft_session_free(s);
    weft_graph_free(g);
    weftd_stop(&d);
  }
}

/* A fed tensor of unknown shape, and a constant beyond 16 KiB, may make a step long: its
 * RunStep wakes a follower first, and the values are right. */
static void test_large_steps(void) {
  if (!weftd_available()) return;
  weftd_proc_t d = start_local(NULL);
  weft_graph_t *g = add_one_graph(true);
  weft_session_t *s = weftd_remote_session(g, d.target);
  run_add_one(s, 4, 1);
  g_assert_cmpint(wait_one_poller(d.pid), ==, 1);
  run_add_one(s, 4, 20);
  g_assert_cmpint(proc_threads_named(d.pid, "weft-grpc"), >=, 2);
  weft_session_free(s);
  weft_graph_free(g);

  enum { N = 8192 }; /* 32 KiB */
  weft_graph_t *big = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(big, "/device:CPU:0");
  float *values = g_new(float, N);
  for (int i = 0; i < N; i++) values[i] = (float)i;
  int64_t dims[1] = {N};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, values, sizeof(float) * N,
                                               &st);
  OK(st);
  weft_output_t c = weft_const(big, "c", t, &st);
  OK(st);
  weft_unary(big, "Neg", "neg", c, &st);
  OK(st);
  weft_graph_pop_device(big);
  weft_tensor_unref(t);
  s = weftd_remote_session(big, d.target);
  const char *fetch = "neg";
  for (int round = 0; round < 2; round++) {
    weft_tensor_t *out = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
    const float *ov = weft_tensor_data(out);
    for (int i = 0; i < N; i++) g_assert_cmpfloat(ov[i], ==, -values[i]);
    weft_tensor_unref(out);
    if (round == 0) g_assert_cmpint(wait_one_poller(d.pid), ==, 1);
  }
  g_assert_cmpint(proc_threads_named(d.pid, "weft-grpc"), >=, 2);
  weft_session_free(s);
  weft_graph_free(big);
  g_free(values);
  weftd_stop(&d);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/inline_steps/small_steps", test_small_steps);
  g_test_add_func("/inline_steps/large_steps", test_large_steps);
  return g_test_run();
}
