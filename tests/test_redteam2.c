/* Connection- and session-level attacks on a real weftd (docs/security.md, "Threat model"):
 * from a raw socket without the token, connections until the process runs out of descriptors
 * (gRPC 1.51 then stops listening for good, so weftd must say so and exit 3 for its supervisor
 * to restart it), stalled handshakes and silent connections (closed by --handshake_timeout_ms
 * and --max_connection_idle_ms), and HTTP/2 floods (rapid reset, CONTINUATION without
 * END_HEADERS, 10,000 headers) after which the server still serves a good client and its memory
 * comes back; with the token, sessions never closed (bounded by --max_sessions). */
#include <arpa/inet.h>
#include <glib.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/* A token file in a new folder; the caller removes both. */
static char *write_token(char **dir) {
  *dir = test_tmpdir("weft-redteam2-XXXXXX");
  char *path = g_build_filename(*dir, "token", NULL);
  g_assert_true(g_file_set_contents(path, "redteam2-token-0123456789", -1, NULL));
  return path;
}

static int port_of(const char *target) {
  const char *colon = strrchr(target, ':');
  g_assert_nonnull(colon);
  return atoi(colon + 1);
}

/* A TCP connection to loopback:port, or -1 when connect() fails. */
static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint(fd, >=, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Writes all of b; false when the server closed the connection. */
static bool send_all(int fd, const void *b, size_t n) {
  const char *p = b;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

static void append_frame(GByteArray *out, uint8_t type, uint8_t flags, uint32_t stream,
                         const void *payload, size_t len) {
  uint8_t h[9] = {(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, type, flags,
                  (uint8_t)(stream >> 24), (uint8_t)(stream >> 16), (uint8_t)(stream >> 8),
                  (uint8_t)stream};
  g_byte_array_append(out, h, 9);
  if (len) g_byte_array_append(out, payload, (guint)len);
}

/* An HPACK literal header without indexing, names and values under 127 bytes. */
static void append_header(GByteArray *out, const char *name, const char *value) {
  uint8_t zero = 0, nl = (uint8_t)strlen(name), vl = (uint8_t)strlen(value);
  g_assert_cmpuint(strlen(name), <, 127);
  g_assert_cmpuint(strlen(value), <, 127);
  g_byte_array_append(out, &zero, 1);
  g_byte_array_append(out, &nl, 1);
  g_byte_array_append(out, (const guint8 *)name, nl);
  g_byte_array_append(out, &vl, 1);
  g_byte_array_append(out, (const guint8 *)value, vl);
}

/* The header block of a ListDevices call, with the token when `token` is not NULL. */
static GByteArray *call_headers_with(const char *token) {
  GByteArray *h = g_byte_array_new();
  append_header(h, ":method", "POST");
  append_header(h, ":scheme", "http");
  append_header(h, ":path", "/weft.Master/ListDevices");
  append_header(h, ":authority", "localhost");
  append_header(h, "content-type", "application/grpc");
  append_header(h, "te", "trailers");
  if (token) {
    char *value = g_strdup_printf("Bearer %s", token);
    append_header(h, "authorization", value);
    g_free(value);
  }
  return h;
}

static GByteArray *call_headers(void) { return call_headers_with(NULL); }

/* A connection that has sent the client preface and an empty SETTINGS frame. */
static int h2_open(int port) {
  int fd = dial(port);
  g_assert_cmpint(fd, >=, 0);
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)preface, sizeof preface - 1);
  append_frame(b, 4, 0, 0, NULL, 0);
  g_assert_true(send_all(fd, b->data, b->len));
  g_byte_array_unref(b);
  return fd;
}

/* The good client: ListDevices with the token must answer with the CPU device. d (or NULL): the
 * server's process, whose stderr and exit status a failure shows first. */
static void expect_serves_proc(weftd_proc_t *d, const char *target, const char *token) {
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_auth_token_file(opts, token);
  weft_device_info_t *devices = NULL;
  int n = 0;
  weft_status_t *st = weft_cluster_list_devices_with_options(target, opts, 60000, &devices, &n);
  if (st) {
    /* The server's own account first (its stderr and exit status, where it is gone). */
    g_printerr("ListDevices on %s: %s\n", target, weft_status_message(st));
    if (d) weftd_stop(d);
    g_error("ListDevices on %s: %s", target, weft_status_message(st));
  }
  g_assert_cmpint(n, >=, 1);
  weft_device_list_free(devices, n);
  weft_session_options_free(opts);
}

static void expect_serves(const char *target, const char *token) {
  expect_serves_proc(NULL, target, token);
}

/* Polls VmRSS until it is within 10% (or 8 MiB) of before, at most 90 s; returns the last. The
 * good client keeps calling meanwhile (every 4 s), as a served cluster's clients do: gRPC 1.51
 * tears down a flooded connection, and frees what it parsed (a CONTINUATION flood's 745 MiB),
 * only as the server's later calls drive it; with no call after the flood's last byte the memory
 * stayed resident for good (CI, 2026-11-27). */
static int64_t rss_settles(GPid pid, int64_t before, const char *target, const char *token) {
  int64_t now = proc_rss_kib(pid);
  for (int k = 0; k < (WEFT_SANITIZE ? 4 : 180) && now > MAX(before + before / 10, before + 8192);
       k++) {
    g_usleep(500000);
    if (k % 8 == 7) expect_serves(target, token);
    now = proc_rss_kib(pid);
  }
  return now;
}

/* ---------------------------------------------------------------------------------------------
 * Out of descriptors */

static void test_out_of_descriptors(void) {
  if (!weftd_available()) return;
  char *prlimit = g_find_program_in_path("prlimit");
  if (!prlimit) {
    g_test_skip("prlimit (util-linux) is not installed");
    return;
  }
  char *dir = NULL, *token = write_token(&dir);
  /* Soft and hard limit 64: weftd cannot raise it, and the connections below exhaust it. */
  char *cmd = g_strdup_printf("%s --nofile=64 %s --local --port 0 --auth-token-file %s", prlimit,
                              WEFTD_PATH, token);
  proc_t p = proc_spawn(cmd, 0);
  char *line = proc_read_until(&p, "Started server with target: ", 60000);
  g_assert_nonnull(line);
  int port = port_of(line);
  int fds[200], n = 0;
  for (; n < 200; n++) {
    fds[n] = h2_open(port);
  }
  /* gRPC's accept() failed with EMFILE: the listener is gone for good, so weftd says why and
   * exits 3 (it checks once a second) instead of seeming alive to nobody. */
  int code = proc_wait_exit(&p, 60000);
  g_test_message("weftd after %d connections: exit %d; %s", n, code, p.log->str);
  g_assert_cmpint(code, ==, 3);
  g_assert_nonnull(strstr(p.log->str, "weftd: error: UNAVAILABLE: Server grpc://localhost:"));
  g_assert_nonnull(strstr(p.log->str,
                          " no longer accepts connections: gRPC's accept() failed (Failed "
                          "accept4: Too many open files) and gRPC stops listening after that; "
                          "raise the open-file limit (ulimit -n, LimitNOFILE=) and restart it"));
  for (int k = 0; k < n; k++) close(fds[k]);
  /* Restarted, as its supervisor would, it serves again. */
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token, NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  expect_serves(d.target, token);
  weftd_stop(&d);
  g_free(line);
  g_string_free(p.log, TRUE);
  g_free(cmd);
  g_free(prlimit);
  test_rm_rf(dir);
  g_free(token);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * HTTP/2 floods */

/* HEADERS then RST_STREAM(CANCEL) on streams 1, 3, 5, ... (CVE-2023-44487). */
static void rapid_reset(int port, int streams) {
  int fd = h2_open(port);
  GByteArray *h = call_headers(), *b = g_byte_array_new();
  uint8_t cancel[4] = {0, 0, 0, 8};
  for (int k = 0; k < streams; k++) {
    uint32_t id = 1 + 2 * (uint32_t)k;
    append_frame(b, 1, 4, id, h->data, h->len);
    append_frame(b, 3, 0, id, cancel, 4);
    if (b->len > 65536 || k == streams - 1) {
      if (!send_all(fd, b->data, b->len)) break;
      g_byte_array_set_size(b, 0);
    }
  }
  g_byte_array_unref(b);
  g_byte_array_unref(h);
  close(fd);
}

/* HEADERS without END_HEADERS, then 16 KB CONTINUATION frames that never end the block. */
static void continuation_flood(int port, int frames) {
  int fd = h2_open(port);
  GByteArray *h = call_headers(), *c = g_byte_array_new();
  append_frame(c, 1, 0, 1, h->data, h->len);
  send_all(fd, c->data, c->len);
  g_byte_array_set_size(c, 0);
  char *block = g_malloc0(16000);
  for (int k = 0; k < frames; k++) {
    append_frame(c, 9, 0, 1, block, 16000);
    if (!send_all(fd, c->data, c->len)) break;
    g_byte_array_set_size(c, 0);
  }
  g_free(block);
  g_byte_array_unref(c);
  g_byte_array_unref(h);
  close(fd);
}

/* One HEADERS frame of 10,000 headers (more than fits gRPC's 8 KiB metadata limit). */
static void many_headers(int port) {
  int fd = h2_open(port);
  GByteArray *h = call_headers();
  for (int k = 0; k < 10000 && h->len < 16000; k++) {
    char name[16];
    g_snprintf(name, sizeof name, "x-h%d", k);
    append_header(h, name, "v");
  }
  GByteArray *b = g_byte_array_new();
  append_frame(b, 1, 5, 1, h->data, h->len);
  send_all(fd, b->data, b->len);
  g_byte_array_unref(b);
  g_byte_array_unref(h);
  close(fd);
}

static void test_h2_floods(void) {
  if (!weftd_available()) return;
  char *dir = NULL, *token = write_token(&dir);
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token, NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  int port = port_of(d.target);
  expect_serves(d.target, token);
  int64_t rss0 = proc_rss_kib(d.pid);
  struct {
    const char *name;
    int arg;
  } floods[] = {{"rapid reset", 20000}, {"continuation", 2000}, {"10,000 headers", 0}};
  for (size_t k = 0; k < G_N_ELEMENTS(floods); k++) {
    if (k == 0) rapid_reset(port, floods[k].arg);
    if (k == 1) continuation_flood(port, floods[k].arg);
    if (k == 2) many_headers(port);
    expect_serves_proc(&d, d.target, token);
    int64_t rss = rss_settles(d.pid, rss0, d.target, token);
    /* Gone after serving: weftd_stop shows its stderr and fails on its exit status. */
    if (rss < 0) weftd_stop(&d);
    g_test_message("%s: VmRSS %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT " KiB", floods[k].name,
                   rss0, rss);
    /* Memory taken by the flood comes back (allowing for this build's own caches); not under
     * AddressSanitizer, whose quarantine keeps freed memory. */
    if (!WEFT_SANITIZE) g_assert_cmpint(rss, <=, MAX(rss0 + rss0 / 10, rss0 + 8192));
  }
  weftd_stop(&d);
  test_rm_rf(dir);
  g_free(token);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Answers a client never reads */

/* Reads frames from fd until `want` streams were ended by the server (HEADERS with END_STREAM:
 * trailers) or `ms` passed; returns how many. */
static int count_ended(int fd, int want, int ms) {
  GByteArray *in = g_byte_array_new();
  GHashTable *seen = g_hash_table_new(NULL, NULL); /* streams whose trailers came */
  gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
  int resets = 0;
  while (resets < want) {
    gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (left_ms <= 0 || poll(&pfd, 1, (int)left_ms) <= 0) break;
    guint8 buf[65536];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    g_byte_array_append(in, buf, (guint)r);
    guint used = 0;
    while (in->len - used >= 9) {
      const guint8 *f = in->data + used;
      guint len = (guint)f[0] << 16 | (guint)f[1] << 8 | f[2];
      if (in->len - used < 9 + len) break;
      guint32 stream =
          ((guint32)f[5] & 0x7f) << 24 | (guint32)f[6] << 16 | (guint32)f[7] << 8 | f[8];
      if (f[3] == 1 && (f[4] & 1) && g_hash_table_add(seen, GUINT_TO_POINTER(stream))) {
        resets++;
      }
      used += 9 + len;
    }
    g_byte_array_remove_range(in, 0, used);
  }
  g_byte_array_unref(in);
  g_hash_table_destroy(seen);
  return resets;
}

static void test_unread_answers(void) {
  if (!weftd_available()) return;
  char *dir = NULL, *token = write_token(&dir);
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token,
                        "--max_connection_answers", "100", NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  int port = port_of(d.target);
  expect_serves(d.target, token);
  int64_t rss0 = proc_rss_kib(d.pid);
  /* 600 ListDevices calls with the token on a connection whose flow-control window is 0: no
   * answer can be sent. Beyond 100 answers in flight (--max_connection_answers) calls are
   * refused with a few bytes of trailers; none is held. */
  char *text = NULL;
  g_assert_true(g_file_get_contents(token, &text, NULL, NULL));
  int fd = dial(port);
  g_assert_cmpint(fd, >=, 0);
  GByteArray *b = g_byte_array_new(), *h = call_headers_with(text);
  g_byte_array_append(b, (const guint8 *)preface, sizeof preface - 1);
  const uint8_t window0[6] = {0, 4, 0, 0, 0, 0}; /* SETTINGS_INITIAL_WINDOW_SIZE = 0 */
  append_frame(b, 4, 0, 0, window0, sizeof window0);
  /* A gRPC message of 2 bytes: Weft's framing of an empty request (no fields, no tensors). */
  const uint8_t empty_message[7] = {0, 0, 0, 0, 2, 0, 0};
  for (uint32_t k = 0; k < 600; k++) {
    append_frame(b, 1, 4, 1 + 2 * k, h->data, h->len);                          /* END_HEADERS */
    append_frame(b, 0, 1, 1 + 2 * k, empty_message, sizeof empty_message); /* END_STREAM */
  }
  g_assert_true(send_all(fd, b->data, b->len));
  int ended = count_ended(fd, 600, 60000);
  /* Another connection is served meanwhile. */
  expect_serves(d.target, token);
  g_test_message("600 unread calls, --max_connection_answers 100: %d ended by the server",
                 ended);
  /* None is held for good: each is refused, or answered and ended with its call (gRPC 1.51
   * counts an answer sent once it waits for the window). */
  g_assert_cmpint(ended, ==, 600);
  close(fd);
  expect_serves(d.target, token);
  int64_t rss = rss_settles(d.pid, rss0, d.target, token);
  g_test_message("VmRSS %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT " KiB", rss0, rss);
  if (!WEFT_SANITIZE) g_assert_cmpint(rss, <=, MAX(rss0 + rss0 / 10, rss0 + 8192));
  g_byte_array_unref(b);
  g_byte_array_unref(h);
  g_free(text);
  weftd_stop(&d);
  test_rm_rf(dir);
  g_free(token);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Stalled and silent connections */

static void test_stalled_connections(void) {
  if (!weftd_available()) return;
  char *dir = NULL, *token = write_token(&dir);
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token,
                        "--handshake_timeout_ms", "2000", "--max_connection_idle_ms", "2000",
                        NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  int port = port_of(d.target);
  int fds0 = proc_fd_count(d.pid);
  /* 100 connections that send half the client preface and stall (slowloris), 100 that send all
   * of it and a SETTINGS frame, then nothing (no call, no ping acknowledged). */
  int conns[200];
  for (int k = 0; k < 100; k++) {
    conns[k] = dial(port);
    g_assert_cmpint(conns[k], >=, 0);
    g_assert_true(send_all(conns[k], preface, 12));
  }
  for (int k = 100; k < 200; k++) conns[k] = h2_open(port);
  int during = proc_fd_count(d.pid);
  /* Each must be closed by the server: without the timeouts gRPC held the first kind 120 s and
   * the second for good. Read (and drop what the server sends: SETTINGS, GOAWAY) until end of
   * file, for at most 90 s in all. */
  gint64 deadline = g_get_monotonic_time() + 90 * G_USEC_PER_SEC;
  int closed = 0;
  for (int k = 0; k < 200; k++) {
    for (;;) {
      gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
      struct pollfd pfd = {.fd = conns[k], .events = POLLIN};
      if (left_ms <= 0 || poll(&pfd, 1, (int)left_ms) <= 0) break;
      char buf[4096];
      ssize_t r = recv(conns[k], buf, sizeof buf, 0);
      if (r <= 0) {
        closed++;
        break;
      }
    }
  }
  int now = proc_fd_count(d.pid);
  for (int k = 0; k < 20 && now > fds0 + 2; k++) {
    g_usleep(500000);
    now = proc_fd_count(d.pid);
  }
  g_test_message("weftd descriptors: %d at start, %d with 200 stalled connections, %d after; "
                 "%d connections closed by the server",
                 fds0, during, now, closed);
  g_assert_cmpint(closed, ==, 200);
  g_assert_cmpint(now, <=, fds0 + 2);
  for (int k = 0; k < 200; k++) close(conns[k]);
  expect_serves(d.target, token);
  weftd_stop(&d);
  test_rm_rf(dir);
  g_free(token);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Sessions never closed */

static weft_status_t *session_step(weft_graph_t *g, weft_session_options_t *opts,
                                   weft_session_t **out) {
  weft_status_t *st = NULL;
  *out = weft_session_new(g, opts, &st);
  if (st) return st;
  const char *fetch = "c:0";
  weft_tensor_t *value = NULL;
  st = weft_session_run(*out, NULL, NULL, 0, &fetch, &value, 1, NULL, 0);
  if (!st) {
    g_assert_cmpfloat(*(float *)weft_tensor_data(value), ==, 3.0f);
    weft_tensor_unref(value);
  }
  return st;
}

static void test_max_sessions(void) {
  if (!weftd_available()) return;
  char *dir = NULL, *token = write_token(&dir);
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token, "--max_sessions",
                        "5", NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_target(opts, d.target);
  weft_session_options_set_auth_token_file(opts, token);
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_const_float(g, "c", 3.0f, &st);
  g_assert_null(st);
  weft_session_t *sessions[6] = {NULL};
  for (int k = 0; k < 5; k++) g_assert_null(session_step(g, opts, &sessions[k]));
  /* The sixth, while five are open and in use: refused, and the server keeps serving. */
  st = session_step(g, opts, &sessions[5]);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_RESOURCE_EXHAUSTED);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "CreateSession: the master of /job:local/replica:0/task:0 has 5 sessions "
                  "open, its limit (--max_sessions); close sessions, or wait for idle ones to be "
                  "reclaimed (--session_gc_seconds), and try again");
  weft_status_free(st);
  weft_session_free(sessions[5]);
  /* One closed makes room for one more. */
  g_assert_null(weft_session_close(sessions[0]));
  weft_session_free(sessions[0]);
  g_assert_null(session_step(g, opts, &sessions[0]));
  for (int k = 0; k < 5; k++) weft_session_free(sessions[k]);
  weft_graph_free(g);
  weft_session_options_free(opts);
  weftd_stop(&d);
  test_rm_rf(dir);
  g_free(token);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/redteam2/out_of_descriptors", test_out_of_descriptors);
  g_test_add_func("/redteam2/h2_floods", test_h2_floods);
  g_test_add_func("/redteam2/stalled_connections", test_stalled_connections);
  g_test_add_func("/redteam2/unread_answers", test_unread_answers);
  g_test_add_func("/redteam2/max_sessions", test_max_sessions);
  return g_test_run();
}
