/* Tests for tensor transfers through shared memory between tasks of one host: the segment
 * protocol in one process (offers, growth, the checks on forged or inconsistent answers, the
 * fallbacks), the lifetimes of segments lent to received tensors, and a real two-weftd cluster
 * moving a large tensor with the path on and off. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process_util.h"
#include "distributed/distributed_internal.h"
#include "weft/weft.h"
#include "weftd_cluster.h"


#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                               \
  } while (0)

/* n float32 elements k * 0.5. */
static weft_tensor_t *ramp(int64_t n) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < n; k++) p[k] = (float)k * 0.5f;
  return t;
}

static void assert_ramp(const weft_tensor_t *t, int64_t n) {
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  const float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < n; k++)
    if (p[k] != (float)k * 0.5f) g_error("element %" G_GINT64_FORMAT " is %g", k, p[k]);
}

/* The token of the segment the last exchange offered ("" for none). */
static char last_token[33];

/* One RecvTensor exchange in this process: the receiver's request, the sender's answer. */
static bool exchange(weft__shm_segment_t *seg, const weft_tensor_t *t,
                     Weft__RecvTensorResponse *resp, Weft__TensorMeta *meta) {
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  weft__shm_fill_request(seg, &req);
  g_strlcpy(last_token, req.shm_token ? req.shm_token : "", sizeof last_token);
  weft__shm_offer_t offer;
  weft__shm_offer_from_request(&req, &offer);
  weft__recv_tensor_response__init(resp);
  return weft__shm_export(&offer, t, resp, meta);
}

static void test_protocol(void) {
  const int64_t n = 1 << 18; /* 1 MiB */
  weft_tensor_t *t = ramp(n);
  weft__shm_segment_t *seg = weft__shm_segment_new();
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta = WEFT__TENSOR_META__INIT;
  weft_tensor_t *got = NULL;

  /* No segment yet: the bytes go in the response, and the sender says what it needed. */
  g_assert_false(exchange(seg, t, &resp, &meta));
  g_assert_cmpuint(resp.shm_wanted, ==, (guint64)n * 4);
  OK(weft__shm_after_recv(seg, false, &resp, &got));
  g_assert_null(got);

  /* The next step goes through the grown segment. */
  for (int step = 0; step < 2; step++) {
    g_assert_true(exchange(seg, t, &resp, &meta));
    g_assert_true(resp.in_shm);
    g_assert_cmpuint(meta.nbytes, ==, (guint64)n * 4);
    OK(weft__shm_after_recv(seg, false, &resp, &got));
    assert_ramp(got, n);
    weft_tensor_unref(got);
    weft__shm_meta_clear(&meta);
  }

  /* Small tensors and strings always travel in the response. */
  weft_tensor_t *small = ramp(16);
  g_assert_false(exchange(seg, small, &resp, &meta));
  g_assert_cmpuint(resp.shm_wanted, ==, 0);
  weft_tensor_unref(small);
  weft_tensor_t *str = weft_tensor_new_string("abc", 3);
  g_assert_false(exchange(seg, str, &resp, &meta));
  weft_tensor_unref(str);

  /* A forged offer (a token that is not the segment's): the sender writes nothing. */
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  weft__shm_fill_request(seg, &req);
  weft__shm_offer_t offer;
  weft__shm_offer_from_request(&req, &offer);
  offer.token[0] = offer.token[0] == 'a' ? 'b' : 'a';
  weft__recv_tensor_response__init(&resp);
  g_assert_false(weft__shm_export(&offer, t, &resp, &meta));
  g_assert_false(resp.in_shm);
  /* A descriptor that is not the segment (here stdin), for a segment never written to. */
  weft__shm_segment_t *fresh = weft__shm_segment_new();
  g_assert_false(exchange(fresh, t, &resp, &meta));
  OK(weft__shm_after_recv(fresh, false, &resp, &got));
  weft__shm_fill_request(fresh, &req);
  weft__shm_offer_from_request(&req, &offer);
  offer.fd = 0;
  g_assert_false(weft__shm_export(&offer, t, &resp, &meta));
  weft__shm_segment_free(fresh);

  /* An answer whose shape does not match its byte count, or does not fit the segment. */
  g_assert_true(exchange(seg, t, &resp, &meta));
  meta.dims[0] = n + 1;
  weft_status_t *st = weft__shm_after_recv(seg, false, &resp, &got);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INTERNAL);
  g_assert_nonnull(strstr(weft_status_message(st), "does not match its shape"));
  g_assert_null(got);
  weft_status_free(st);
  weft__shm_meta_clear(&meta);
  /* ... which dropped the segment: the next exchange goes through a new one. */
  char dropped[33];
  g_strlcpy(dropped, last_token, sizeof dropped);
  g_assert_true(exchange(seg, t, &resp, &meta));
  g_assert_cmpstr(last_token, !=, dropped);
  meta.nbytes = (guint64)n * 8;
  meta.dims[0] = n * 2;
  st = weft__shm_after_recv(seg, false, &resp, &got);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INTERNAL);
  g_assert_nonnull(strstr(weft_status_message(st), "fit the"));
  weft_status_free(st);
  weft__shm_meta_clear(&meta);

  /* A failed call drops the segment (a late sender may still write into it): the next request
   * offers another. */
  weft__shm_fill_request(seg, &req);
  g_assert_cmpuint(req.shm_capacity, ==, (guint64)n * 4);
  g_strlcpy(dropped, req.shm_token, sizeof dropped);
  OK(weft__shm_after_recv(seg, true, NULL, &got));
  g_assert_null(got);
  weft__shm_fill_request(seg, &req);
  g_assert_cmpuint(req.shm_capacity, ==, (guint64)n * 4);
  g_assert_cmpstr(req.shm_token, !=, dropped);
  OK(weft__shm_after_recv(seg, true, NULL, &got));

  weft__shm_segment_free(seg);
  weft__shm_segment_free(NULL);
  weft_tensor_unref(t);
}

/* n float32 elements all equal to v. */
static weft_tensor_t *filled(int64_t n, float v) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < n; k++) p[k] = v;
  return t;
}

static void assert_filled(const weft_tensor_t *t, int64_t n, float v) {
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  const float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < n; k++)
    if (p[k] != v) g_error("element %" G_GINT64_FORMAT " is %g, not %g", k, p[k], v);
}

/* One step through the pool: t sent through shared memory, the received tensor returned. */
static weft_tensor_t *step_through(weft__shm_segment_t *pool, const weft_tensor_t *t) {
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta = WEFT__TENSOR_META__INIT;
  weft_tensor_t *got = NULL;
  g_assert_true(exchange(pool, t, &resp, &meta));
  OK(weft__shm_after_recv(pool, false, &resp, &got));
  weft__shm_meta_clear(&meta);
  g_assert_nonnull(got);
  return got;
}

static bool borrows(const weft_tensor_t *t) { return t->buffer->release != NULL; }

/* A received tensor borrows its segment: while it is held, later steps go through other
 * segments and never change its values; with every other segment lent, the last one is copied
 * out of; released, a segment is offered again; a pool freed under a held tensor leaves it
 * readable. */
static void test_lifetimes(void) {
  const int64_t n = 1 << 18; /* 1 MiB */
  weft__shm_segment_t *pool = weft__shm_segment_new();
  weft_tensor_t *vals[5];
  for (int k = 0; k < 5; k++) vals[k] = filled(n, (float)(k + 1));
  Weft__RecvTensorResponse resp;
  Weft__TensorMeta meta = WEFT__TENSOR_META__INIT;
  weft_tensor_t *got = NULL;
  g_assert_false(exchange(pool, vals[0], &resp, &meta)); /* sizes the pool */
  OK(weft__shm_after_recv(pool, false, &resp, &got));

  weft_tensor_t *s1 = step_through(pool, vals[0]);
  char tok1[33];
  g_strlcpy(tok1, last_token, sizeof tok1);
  g_assert_true(borrows(s1));
  weft_tensor_t *s2 = step_through(pool, vals[1]);
  char tok2[33];
  g_strlcpy(tok2, last_token, sizeof tok2);
  g_assert_cmpstr(tok2, !=, tok1);
  g_assert_true(borrows(s2));
  assert_filled(s1, n, 1.0f);
  assert_filled(s2, n, 2.0f);
  /* The third segment is the last free one: copied out of, so it stays free. */
  weft_tensor_t *s3 = step_through(pool, vals[2]);
  char tok3[33];
  g_strlcpy(tok3, last_token, sizeof tok3);
  g_assert_false(borrows(s3));
  weft_tensor_t *s4 = step_through(pool, vals[3]);
  g_assert_cmpstr(last_token, ==, tok3);
  g_assert_false(borrows(s4));
  assert_filled(s1, n, 1.0f);
  assert_filled(s2, n, 2.0f);
  assert_filled(s3, n, 3.0f);
  assert_filled(s4, n, 4.0f);
  /* A failed receive drops the segment it offered; the tensors lent before keep their values. */
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  weft__shm_fill_request(pool, &req);
  g_assert_cmpstr(req.shm_token, ==, tok3);
  OK(weft__shm_after_recv(pool, true, NULL, &got));
  g_assert_null(got);
  assert_filled(s1, n, 1.0f);
  /* Released, the first segment is offered again. */
  weft_tensor_unref(s1);
  weft_tensor_t *s5 = step_through(pool, vals[4]);
  g_assert_cmpstr(last_token, ==, tok1);
  g_assert_true(borrows(s5)); /* the dropped segment's slot has room for another */
  assert_filled(s5, n, 5.0f);
  assert_filled(s2, n, 2.0f);
  /* The pool goes first: the tensors still borrowing stay readable, and free their segments. */
  weft__shm_segment_free(pool);
  assert_filled(s2, n, 2.0f);
  assert_filled(s5, n, 5.0f);
  weft_tensor_unref(s2);
  weft_tensor_unref(s5);
  weft_tensor_unref(s3);
  weft_tensor_unref(s4);
  for (int k = 0; k < 5; k++) weft_tensor_unref(vals[k]);
}

static void test_switches(void) {
  g_assert_true(weft__address_is_loopback("127.0.0.1:2222"));
  g_assert_true(weft__address_is_loopback("localhost:2222"));
  g_assert_true(weft__address_is_loopback("[::1]:2222"));
  g_assert_false(weft__address_is_loopback("10.0.0.2:2222"));
  g_assert_false(weft__address_is_loopback("localhostx:1"));
  g_assert_false(weft__address_is_loopback(NULL));
  g_assert_true(weft__shm_enabled());
  g_setenv("WEFT_SHM_TRANSFER", "0", TRUE);
  g_assert_false(weft__shm_enabled());
  /* Turned off on the sending side: offers are ignored. */
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  req.shm_pid = getpid();
  weft__shm_offer_t offer;
  weft__shm_offer_from_request(&req, &offer);
  g_assert_cmpint(offer.pid, ==, 0);
  g_unsetenv("WEFT_SHM_TRANSFER");
  g_assert_true(weft__shm_enabled());
}

/* The sender's copy, plain and streamed, at sizes around the 64-byte lines it streams and
 * destinations off a line's start: every byte copied, none written outside. */
static void test_stream_copy(void) {
  const size_t sizes[] = {0, 1, 63, 64, 65, 127, 128, 129, 191, 4096 + 17, 1000003};
  const size_t offsets[] = {0, 1, 15, 16, 33, 63};
  const size_t guard = 64;
  size_t biggest = 1000003 + 64 + 2 * guard;
  guint8 *src = g_malloc(biggest), *dst = g_malloc(biggest);
  for (size_t k = 0; k < biggest; k++) src[k] = (guint8)(k * 131 + k / 251 + 7);
  for (int stream = 0; stream < 2; stream++) {
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
      for (size_t j = 0; j < G_N_ELEMENTS(offsets); j++) {
        size_t n = sizes[i], at = guard + offsets[j], from = offsets[(j + 1) % 6];
        memset(dst, 0xa5, biggest);
        weft__shm_copy(dst + at, src + from, n, stream);
        for (size_t k = 0; k < biggest; k++) {
          guint8 want = k >= at && k < at + n ? src[from + k - at] : 0xa5;
          if (dst[k] != want)
            g_error("stream=%d n=%zu at=%zu: byte %zu is %u, expected %u", stream, n, at, k,
                    dst[k], want);
        }
      }
    }
  }
  g_free(src);
  g_free(dst);
  /* Set by main before anything read it: every export of 256 KiB or more streams. */
  g_assert_cmpuint(weft__shm_stream_min_bytes(), ==, 262144);
}

/* ---------------------------------------------------------------------------------------------
 * Two weftd tasks */

/* A ramp of 1 MiB and 12 bytes (not whole 64-byte lines: the streamed copy's tail) on task 0
 * read by Identity on task 1 and fetched, three steps: the first grows task 1's segment, the next
 * go through it, streamed (main sets WEFT_SHM_STREAM). With env_shm "0" there is no segment and
 * the same values. */
static void run_cluster(const char *env_shm, bool expect_segment) {
  char *shm = env_shm ? g_strdup_printf("WEFT_SHM_TRANSFER=%s", env_shm)
                      : g_strdup("WEFT_SHM_TRANSFER");
  const char *env[] = {shm, NULL};
  weftd_cluster_t cluster;
  if (!weftd_cluster_start_full(&cluster, 0, 2, NULL, env, NULL)) {
    g_free(shm);
    return;
  }
  const int64_t n = (1 << 18) + 3;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_tensor_t *value = ramp(n);
  weft_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  weft_output_t c = weft_const(g, "payload", value, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_tensor_unref(value);
  weft_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
  weft_unary(g, "Identity", "received", c, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weftd_remote_session(g, cluster.target[0]);
  const char *fetch = "received";
  for (int step = 0; step < 3; step++) {
    weft_tensor_t *out = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
    assert_ramp(out, n);
    weft_tensor_unref(out);
  }
  /* Fetched tensors held by this client are copies: task 1's segments are back in its pool, and
   * there are no more than its cap of 3. */
  int segments = count_shm_segments(cluster.d[1].pid);
  g_test_message("task 1 holds %d shared-memory segment(s)", segments);
  if (expect_segment) g_assert_cmpint(segments, >=, 1);
  else g_assert_cmpint(segments, ==, 0);
  g_assert_cmpint(segments, <=, 3);
  g_assert_cmpint(count_shm_segments(cluster.d[0].pid), ==, 0); /* task 0 receives nothing */
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&cluster);
  g_free(shm);
}

static void test_cluster_on(void) { run_cluster(NULL, true); }
static void test_cluster_off(void) { run_cluster("0", false); }

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("WEFT_SHM_TRANSFER");
  /* The exports here (1 MiB) and the children's stream from 256 KiB: the path of big tensors. */
  g_setenv("WEFT_SHM_STREAM", "262144", TRUE);
  weft_plugins_load_default();
  g_test_add_func("/shm_transfer/protocol", test_protocol);
  g_test_add_func("/shm_transfer/lifetimes", test_lifetimes);
  g_test_add_func("/shm_transfer/switches", test_switches);
  g_test_add_func("/shm_transfer/stream_copy", test_stream_copy);
  g_test_add_func("/shm_transfer/cluster_on", test_cluster_on);
  g_test_add_func("/shm_transfer/cluster_off", test_cluster_off);
  return g_test_run();
}
