/* A loop of the same RunStep: the client frames a feedless request once and resends it
 * (remote_session.c), and the master takes the plan of names it saw recently from its step memo
 * (master.c) instead of resolving them again. Checked on a real weftd: steps alternating between
 * fetch and target lists, feeds and none, and timeouts all get their own values; a bad feed is
 * refused with the same words whether its names were remembered or not; and names that resolve
 * differently once the graph has grown ("n:1" read as a node name, then as output 1) are not
 * answered from the memo. */
#include <glib.h>
#include <string.h>

#include "weftd_cluster.h"

#define OK(expr)                                                 \
  do {                                                           \
    weft_status_t *st_ = (expr);                                 \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

/* a = 1, b = 2, add = a + b, p a float scalar Placeholder, q = p * b. */
static weft_graph_t *small_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/device:CPU:0");
  weft_output_t a = weft_const_float(g, "a", 1.0f, &st);
  OK(st);
  weft_output_t b = weft_const_float(g, "b", 2.0f, &st);
  OK(st);
  weft_binary(g, "AddV2", "add", a, b, &st);
  OK(st);
  weft_output_t p = weft_placeholder(g, "p", WEFT_DT_FLOAT, 0, NULL, &st);
  OK(st);
  weft_binary(g, "Mul", "q", p, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

/* A weftd --local, small_graph and a session on it. */
typedef struct fixture {
  weftd_proc_t d;
  weft_graph_t *g;
  weft_session_t *s;
} fixture_t;

static fixture_t fixture_open(void) {
  const char *const args[] = {"--local", "--port", "0", NULL};
  fixture_t f;
  f.d = weftd_spawn(args, NULL, false);
  f.g = small_graph();
  f.s = weftd_remote_session(f.g, f.d.target);
  return f;
}

static void fixture_close(fixture_t *f) {
  weft_session_free(f->s);
  weft_graph_free(f->g);
  weftd_stop(&f->d);
}

/* Fetches `names` (no feeds) with `timeout_ms` (0: the session's) and checks their values. */
static void expect(weft_session_t *s, const char *const *names, const float *want, int n,
                   int64_t timeout_ms) {
  weft_tensor_t *out[4] = {NULL};
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_timeout_ms(ro, timeout_ms);
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, names, out, n, NULL, 0, NULL));
  weft_run_options_free(ro);
  for (int k = 0; k < n; k++) {
    g_assert_cmpint(weft_tensor_num_elements(out[k]), ==, 1);
    g_assert_cmpfloat(weft_tensor_get_double(out[k], 0), ==, want[k]);
    weft_tensor_unref(out[k]);
  }
}

static float feed_q(weft_session_t *s, float p) {
  weft_tensor_t *t = weft_tensor_new_scalar_float(p);
  const char *feed = "p", *fetch = "q";
  weft_tensor_t *q = NULL;
  OK(weft_session_run(s, &feed, &t, 1, &fetch, &q, 1, NULL, 0));
  float v = (float)weft_tensor_get_double(q, 0);
  weft_tensor_unref(q);
  weft_tensor_unref(t);
  return v;
}

/* The status of feeding p an int32 (the caller frees it). */
static weft_status_t *feed_int(weft_session_t *s) {
  int64_t none[1] = {0};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 0, none);
  *(int32_t *)weft_tensor_data(t) = 3;
  const char *feed = "p", *fetch = "q";
  weft_tensor_t *q = NULL;
  weft_status_t *st = weft_session_run(s, &feed, &t, 1, &fetch, &q, 1, NULL, 0);
  g_assert_null(q);
  weft_tensor_unref(t);
  return st;
}

static void test_alternating_steps(void) {
  if (!weftd_available()) return;
  fixture_t f = fixture_open();
  weft_session_t *s = f.s;
  const char *add[] = {"add"}, *add_a[] = {"add", "a"}, *b_add[] = {"b", "add:0"};
  for (int round = 0; round < 3; round++) {
    expect(s, add, (const float[]){3.0f}, 1, 0);
    expect(s, add_a, (const float[]){3.0f, 1.0f}, 2, 0);
    expect(s, add, (const float[]){3.0f}, 1, 30000);
    expect(s, b_add, (const float[]){2.0f, 3.0f}, 2, 0);
    g_assert_cmpfloat(feed_q(s, (float)round), ==, 2.0f * (float)round);
    /* Targets only: nothing comes back, the step still runs. */
    const char *target = "add";
    OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1));
  }
  fixture_close(&f);
}

/* The same refusal for a feed of the wrong type on the step's first run (its names resolved)
 * and on a later one (its names remembered). */
static void test_bad_feed(void) {
  if (!weftd_available()) return;
  fixture_t f = fixture_open();
  weft_session_t *s = f.s;
  weft_status_t *first = feed_int(s);
  g_assert_nonnull(first);
  g_assert_cmpint(weft_status_code(first), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(first), ==,
                  "Feed 'p': expected a tensor of type float32 but got int32");
  g_assert_cmpfloat(feed_q(s, 4.0f), ==, 8.0f);
  weft_status_t *later = feed_int(s);
  g_assert_nonnull(later);
  g_assert_cmpint(weft_status_code(later), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(later), ==, weft_status_message(first));
  weft_status_free(first);
  weft_status_free(later);
  g_assert_cmpfloat(feed_q(s, 5.0f), ==, 10.0f);
  fixture_close(&f);
}

/* A name that names nothing yet fails NOT_FOUND, twice (nothing remembered for it); once the
 * graph has grown by that node and ExtendSession has sent it, the same names give its value. */
static void test_graph_grows(void) {
  if (!weftd_available()) return;
  fixture_t f = fixture_open();
  weft_session_t *s = f.s;
  const char *add[] = {"add"}, *later[] = {"later"};
  expect(s, add, (const float[]){3.0f}, 1, 0);
  weft_tensor_t *out = NULL;
  for (int k = 0; k < 2; k++) {
    weft_status_t *st = weft_session_run(s, NULL, NULL, 0, later, &out, 1, NULL, 0);
    g_assert_nonnull(st);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
    weft_status_free(st);
  }
  weft_status_t *st = NULL;
  weft_graph_push_device(f.g, "/device:CPU:0");
  weft_output_t a = {weft_graph_node(f.g, "a"), 0}, sum = {weft_graph_node(f.g, "add"), 0};
  weft_binary(f.g, "Mul", "later", a, sum, &st);
  OK(st);
  weft_graph_pop_device(f.g);
  for (int k = 0; k < 3; k++) {
    expect(s, later, (const float[]){3.0f}, 1, 0);
    expect(s, add, (const float[]){3.0f}, 1, 0);
  }
  fixture_close(&f);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/step_memo/alternating_steps", test_alternating_steps);
  g_test_add_func("/step_memo/bad_feed", test_bad_feed);
  g_test_add_func("/step_memo/graph_grows", test_graph_grows);
  return g_test_run();
}
