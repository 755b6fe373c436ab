/* Tests for the bulk channel (bulk_transfer.c): hostile peers on a real bulk port in this process
 * (no ticket, a wrong, replayed or expired ticket, oversized, inconsistent and truncated frames,
 * a peer that sends nothing) refused with exact messages while the server keeps serving; links
 * that cannot be opened leaving the receiver on gRPC; and two
 * real weftd tasks on loopback without shared memory moving tensors of several dtypes and sizes
 * over it (exact values, the channel's threads in /proc as proof), surviving attacks on their
 * bulk port, and a step whose sender stops mid-transfer ending at its deadline, the next step
 * working. */
#include <arpa/inet.h>
#include <dirent.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/distributed_internal.h"
#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                               \
  } while (0)

#define MAGIC 0x42544657u

static void put_u32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  g_assert_cmpint(fd, >=, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g_assert_cmpint(connect(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
  return fd;
}

static void send_all(int fd, const void *p, size_t n) {
  g_assert_cmpint(send(fd, p, n, MSG_NOSIGNAL), ==, (ssize_t)n);
}

/* n bytes within 10 s; false at EOF. */
static bool recv_all(int fd, void *p, size_t n) {
  uint8_t *b = p;
  while (n > 0) {
    struct pollfd pfd = {fd, POLLIN, 0};
    g_assert_cmpint(poll(&pfd, 1, 10000), ==, 1);
    ssize_t r = recv(fd, b, n, 0);
    if (r <= 0) return false;
    b += r;
    n -= (size_t)r;
  }
  return true;
}

/* An answer with an error: its code and message, then the server closes the connection (when
 * `closes`). */
static void expect_answer(int fd, weft_code_t code, const char *message, bool closes) {
  uint8_t head[12];
  g_assert_true(recv_all(fd, head, 12));
  g_assert_cmphex(get_u32(head), ==, MAGIC);
  g_assert_cmpstr(weft_code_name((weft_code_t)get_u32(head + 4)), ==, weft_code_name(code));
  uint32_t len = get_u32(head + 8);
  g_assert_cmpuint(len, <=, 4096);
  char *msg = g_malloc0(len + 1);
  g_assert_true(recv_all(fd, msg, len));
  g_assert_cmpstr(msg, ==, message);
  g_free(msg);
  if (closes) {
    uint8_t more;
    g_assert_false(recv_all(fd, &more, 1));
  }
}

static void hello(int fd, const uint8_t *ticket) {
  uint8_t h[24];
  put_u32(h, MAGIC);
  put_u32(h + 4, 1);
  memcpy(h + 8, ticket, 16);
  send_all(fd, h, sizeof h);
}

static void expect_accepted(int fd) {
  uint8_t head[8];
  g_assert_true(recv_all(fd, head, 8));
  g_assert_cmphex(get_u32(head), ==, MAGIC);
  g_assert_cmpuint(get_u32(head + 4), ==, 0);
}

/* A connection the server accepted with `ticket`. */
static int open_accepted(int port, const uint8_t *ticket) {
  int fd = connect_port(port);
  hello(fd, ticket);
  expect_accepted(fd);
  return fd;
}

static void request(int fd, int part, int n_parts, int64_t step, uint64_t incarnation,
                    const char *key, uint32_t key_len) {
  uint8_t h[28];
  put_u32(h, MAGIC);
  h[4] = (uint8_t)part, h[5] = 0, h[6] = (uint8_t)n_parts, h[7] = 0;
  put_u64(h + 8, (uint64_t)step);
  put_u64(h + 16, incarnation);
  put_u32(h + 24, key_len);
  send_all(fd, h, sizeof h);
  if (key) send_all(fd, key, strlen(key));
}

/* New tickets from the server (as a RecvTensor answer would carry them). */
static void tickets(weft__bulk_server_t *bs, uint8_t out[2][16]) {
  Weft__RecvTensorResponse resp = WEFT__RECV_TENSOR_RESPONSE__INIT;
  weft__bulk_tickets_t t;
  weft__bulk_issue_tickets(bs, &resp, &t);
  g_assert_cmpuint(resp.n_bulk_tickets, ==, 2);
  g_assert_cmpuint(resp.bulk_port, ==, (guint)weft__bulk_server_port(bs));
  memcpy(out[0], resp.bulk_tickets[0].data, 16);
  memcpy(out[1], resp.bulk_tickets[1].data, 16);
  g_assert_cmpint(memcmp(out[0], out[1], 16), !=, 0);
}

/* The worker's refusal of a request naming incarnation 0x1234 (g_free). */
static char *restarted_message(weft__worker_t *w) {
  return g_strdup_printf("Task %s was restarted: its incarnation is %016" G_GINT64_MODIFIER
                         "x but the master expected 0000000000001234; its graphs and variables "
                         "are gone, so create the session again",
                         weft__worker_task(w), weft__worker_incarnation(w));
}

/* The worker's answer to a request naming the wrong incarnation: proof the server serves. */
static void expect_serving(weft__worker_t *w, int fd) {
  request(fd, 0, 1, 7, 0x1234, "k", 1);
  char *msg = restarted_message(w);
  expect_answer(fd, WEFT_ABORTED, msg, false);
  g_free(msg);
}

/* A bulk server of this process on loopback, with its worker in *w; its port in *port. */
static weft__bulk_server_t *bulk_server(weft__worker_t **w, int *port) {
  *w = weft__worker_new("w", 0, 0);
  weft__bulk_server_t *bs = NULL;
  OK(weft__bulk_server_new(*w, "127.0.0.1", 0, &bs));
  *port = weft__bulk_server_port(bs);
  g_assert_cmpint(*port, >, 0);
  return bs;
}

static void test_hostile(void) {
  g_setenv("WEFT_BULK_HANDSHAKE_MS", "300", TRUE);
  weft__worker_t *w = NULL;
  int port = 0;
  weft__bulk_server_t *bs = bulk_server(&w, &port);
  uint8_t t[2][16], zero[28] = {0};

  /* A peer that sends nothing is dropped after the handshake timeout. */
  int fd = connect_port(port);
  expect_answer(fd, WEFT_UNAUTHENTICATED, "Bulk channel: no ticket (it timed out)", true);
  close(fd);
  /* A truncated hello. */
  fd = connect_port(port);
  send_all(fd, zero, 10);
  shutdown(fd, SHUT_WR);
  expect_answer(fd, WEFT_UNAUTHENTICATED, "Bulk channel: no ticket (the connection was closed)",
                true);
  close(fd);
  /* Not our protocol. */
  fd = connect_port(port);
  send_all(fd, zero, 24);
  expect_answer(fd, WEFT_UNAUTHENTICATED,
                "Bulk channel: not a Weft bulk hello (magic 00000000, version 0)", true);
  close(fd);
  /* A ticket the server never issued. */
  fd = connect_port(port);
  uint8_t forged[16];
  memset(forged, 0x5a, sizeof forged);
  hello(fd, forged);
  expect_answer(fd, WEFT_UNAUTHENTICATED, "Bulk channel: unknown, used or expired ticket", true);
  close(fd);

  /* A real ticket: accepted, and the connection carries requests. */
  tickets(bs, t);
  fd = open_accepted(port, t[0]);
  expect_serving(w, fd);
  /* An oversized key is refused before anything is allocated for it. */
  request(fd, 0, 1, 7, 0, NULL, 1u << 20);
  expect_answer(fd, WEFT_INVALID_ARGUMENT, "Bulk request: key of 1048576 bytes (1 to 65536)",
                true);
  close(fd);
  /* The same ticket again: used up. */
  fd = connect_port(port);
  hello(fd, t[0]);
  expect_answer(fd, WEFT_UNAUTHENTICATED, "Bulk channel: unknown, used or expired ticket", true);
  close(fd);
  /* Parts that do not add up. */
  fd = open_accepted(port, t[1]);
  request(fd, 3, 2, 7, 0, "k", 1);
  expect_answer(fd, WEFT_INVALID_ARGUMENT, "Bulk request: part 3 of 2 (1 to 8 parts)", true);
  close(fd);
  /* A request cut short, and one whose key stops early. */
  tickets(bs, t);
  fd = open_accepted(port, t[0]);
  send_all(fd, zero, 12);
  shutdown(fd, SHUT_WR);
  expect_answer(fd, WEFT_INVALID_ARGUMENT, "Bulk request: truncated (the connection was closed)",
                true);
  close(fd);
  tickets(bs, t);
  fd = open_accepted(port, t[0]);
  send_all(fd, zero, 28);
  expect_answer(fd, WEFT_INVALID_ARGUMENT, "Bulk request: bad magic 00000000", true);
  close(fd);
  fd = open_accepted(port, t[1]);
  request(fd, 0, 1, 7, 0, "ab", 5);
  shutdown(fd, SHUT_WR);
  expect_answer(fd, WEFT_INVALID_ARGUMENT, "Bulk request: truncated key", true);
  close(fd);
  /* An expired ticket. */
  g_setenv("WEFT_BULK_TICKET_TTL_MS", "20", TRUE);
  tickets(bs, t);
  g_unsetenv("WEFT_BULK_TICKET_TTL_MS");
  g_usleep(100 * 1000);
  fd = connect_port(port);
  hello(fd, t[0]);
  expect_answer(fd, WEFT_UNAUTHENTICATED, "Bulk channel: unknown, used or expired ticket", true);
  close(fd);

  /* After all that, a good receiver is still served; a silent one does not hold it up. */
  int silent = connect_port(port);
  tickets(bs, t);
  fd = open_accepted(port, t[0]);
  expect_serving(w, fd);
  g_assert_cmpint(weft__bulk_server_transfers(bs), ==, 0);
  /* Stopping with connections open (one idle, one authenticated) closes them. */
  weft__bulk_server_free(bs);
  uint8_t more;
  g_assert_false(recv_all(fd, &more, 1));
  close(fd);
  close(silent);
  weft__worker_free(w);
  g_unsetenv("WEFT_BULK_HANDSHAKE_MS");
}

/* WEFT_BULK_TRANSFER=0 turns the channel off; anything else leaves it on. */
static void test_switch(void) {
  g_setenv("WEFT_BULK_TRANSFER", "0", TRUE);
  g_assert_false(weft__bulk_enabled());
  g_assert_false(weft__bulk_should_offer("10.0.0.1:2222", WEFT_DT_FLOAT));
  g_setenv("WEFT_BULK_TRANSFER", "off", TRUE);
  g_assert_false(weft__bulk_enabled());
  g_setenv("WEFT_BULK_TRANSFER", "1", TRUE);
  g_assert_true(weft__bulk_enabled());
  g_unsetenv("WEFT_BULK_TRANSFER");
  g_assert_true(weft__bulk_enabled());
  /* Strings stay on gRPC. */
  g_assert_false(weft__bulk_should_offer("10.0.0.1:2222", WEFT_DT_STRING));
  g_assert_true(weft__bulk_should_offer("10.0.0.1:2222", WEFT_DT_FLOAT));
}

/* A socket bound to a free loopback port (*port). */
static int bound_socket(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
  g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &len), ==, 0);
  *port = ntohs(a.sin_port);
  return fd;
}

/* A free port nobody listens on. */
static int closed_port(void) {
  int port = 0;
  close(bound_socket(&port));
  return port;
}

/* A receiver whose link cannot be opened (no one listens; the sender refuses its tickets) pools
 * nothing and stops offering to that peer for a while: its transfers stay on gRPC. */
static void test_link_failures(void) {
  uint8_t forged[2][16];
  memset(forged, 0x33, sizeof forged);
  ProtobufCBinaryData items[2] = {{16, forged[0]}, {16, forged[1]}};
  Weft__RecvTensorResponse resp = WEFT__RECV_TENSOR_RESPONSE__INIT;
  resp.n_bulk_tickets = 2;
  resp.bulk_tickets = items;

  resp.bulk_port = (uint32_t)closed_port();
  g_assert_true(weft__bulk_should_offer("127.0.0.1:1", WEFT_DT_FLOAT));
  weft__bulk_after_recv("127.0.0.1:1", &resp);
  g_assert_false(weft__bulk_should_offer("127.0.0.1:1", WEFT_DT_FLOAT));

  weft__worker_t *w = weft__worker_new("w", 0, 0);
  weft__bulk_server_t *bs = NULL;
  OK(weft__bulk_server_new(w, NULL, 0, &bs));
  resp.bulk_port = (uint32_t)weft__bulk_server_port(bs);
  g_assert_true(weft__bulk_should_offer("127.0.0.1:2", WEFT_DT_FLOAT));
  weft__bulk_after_recv("127.0.0.1:2", &resp);
  g_assert_false(weft__bulk_should_offer("127.0.0.1:2", WEFT_DT_FLOAT));
  weft__bulk_server_free(bs);
  weft__worker_free(w);
}

/* ---------------------------------------------------------------------------------------------
 * Two weftd tasks */

/* Threads of a process whose name is `name`. */
static int count_threads(GPid pid, const char *name) {
  char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char *path = g_strdup_printf("%s/%s/comm", dir, e->d_name);
    char *comm = NULL;
    if (g_file_get_contents(path, &comm, NULL, NULL) && strcmp(g_strstrip(comm), name) == 0) n++;
    g_free(comm);
    g_free(path);
  }
  if (d) closedir(d);
  g_free(dir);
  return n;
}

/* The "Bulk channel on port: N" line weftd prints after its "Started server" line. */
static int bulk_port_of(const weftd_proc_t *p) {
  char line[128];
  size_t n = 0;
  while (n + 1 < sizeof line) {
    struct pollfd pfd = {p->out_fd, POLLIN, 0};
    g_assert_cmpint(poll(&pfd, 1, 10000), ==, 1);
    if (read(p->out_fd, line + n, 1) != 1 || line[n] == '\n') break;
    n++;
  }
  line[n] = '\0';
  g_assert_true(g_str_has_prefix(line, "Bulk channel on port: "));
  return atoi(line + strlen("Bulk channel on port: "));
}

/* A tensor of n elements of dtype with bytes that depend on their position. */
static weft_tensor_t *pattern(weft_dtype_t dtype, int64_t n) {
  weft_tensor_t *t = weft_tensor_new(dtype, 1, &n);
  uint8_t *p = weft_tensor_data(t);
  size_t bytes = weft_tensor_nbytes(t);
  for (size_t k = 0; k < bytes; k++) p[k] = (uint8_t)((k * 131 + k / 4093) ^ (k >> 16));
  return t;
}

/* `value` as a Const on task 0, read by Identity ("received") on task 1. */
static weft_graph_t *transfer_graph_between(weft_tensor_t *value, int from, int to) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  char device[64];
  g_snprintf(device, sizeof device, "/job:worker/task:%d/device:CPU:0", from);
  weft_graph_push_device(g, device);
  weft_output_t out = weft_const(g, "payload", value, &st);
  OK(st);
  weft_graph_pop_device(g);
  g_snprintf(device, sizeof device, "/job:worker/task:%d/device:CPU:0", to);
  weft_graph_push_device(g, device);
  weft_unary(g, "Identity", "received", out, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

static weft_graph_t *transfer_graph(weft_tensor_t *value) {
  return transfer_graph_between(value, 0, 1);
}

/* Sends `value` from task 0 to task 1 `steps` times; every step's bytes exact. */
static void transfer(const weftd_cluster_t *c, weft_tensor_t *value, int steps) {
  weft_graph_t *g = transfer_graph(value);
  weft_session_t *s = weftd_remote_session(g, c->target[0]);
  const char *fetch = "received";
  for (int k = 0; k < steps; k++) {
    weft_tensor_t *got = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &got, 1, NULL, 0));
    g_assert_cmpint(weft_tensor_dtype(got), ==, weft_tensor_dtype(value));
    g_assert_cmpint(weft_tensor_num_elements(got), ==, weft_tensor_num_elements(value));
    g_assert_cmpint(memcmp(weft_tensor_data(got), weft_tensor_data(value),
                           weft_tensor_nbytes(value)), ==, 0);
    weft_tensor_unref(got);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

static void run_cluster(bool bulk) {
  const char *env[] = {"WEFT_SHM_TRANSFER=0", "WEFT_BULK_HANDSHAKE_MS=300",
                       bulk ? "WEFT_BULK_TRANSFER" : "WEFT_BULK_TRANSFER=0", NULL};
  weftd_cluster_t c;
  if (!weftd_cluster_start_full(&c, 0, 2, NULL, env, NULL)) return;
  int port = bulk ? bulk_port_of(&c.d[0]) : 0;
  static const struct {
    weft_dtype_t dtype;
    int64_t n;
  } cases[] = {{WEFT_DT_FLOAT, 0},       {WEFT_DT_INT32, 1},      {WEFT_DT_DOUBLE, 12345},
               {WEFT_DT_UINT8, 1000003}, {WEFT_DT_INT64, 300001}, {WEFT_DT_FLOAT, 8 << 20}};
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_test_message("%s[%" G_GINT64_FORMAT "]", weft_dtype_name(cases[k].dtype), cases[k].n);
    weft_tensor_t *v = pattern(cases[k].dtype, cases[k].n);
    transfer(&c, v, 3);
    weft_tensor_unref(v);
  }
  /* Proof of the path: task 0 answers on the channel's connections, task 1 reads with a link's
   * reader thread. */
  int senders = count_threads(c.d[0].pid, "weft-bulk");
  int readers = count_threads(c.d[1].pid, "weft-bulk-read");
  g_test_message("task 0: %d bulk connection threads; task 1: %d link readers", senders, readers);
  if (!bulk) {
    g_assert_cmpint(senders + readers, ==, 0);
    weftd_cluster_stop(&c);
    return;
  }
  g_assert_cmpint(senders, >=, 2);
  g_assert_cmpint(readers, >=, 1);

  /* Attacks on task 0's port while it serves: refused, and the next transfer is exact. */
  int silent = connect_port(port);
  int fd = connect_port(port);
  uint8_t forged[16] = {1, 2, 3};
  hello(fd, forged);
  expect_answer(fd, WEFT_UNAUTHENTICATED, "Bulk channel: unknown, used or expired ticket", true);
  close(fd);
  weft_tensor_t *v = pattern(WEFT_DT_FLOAT, 1 << 20);
  transfer(&c, v, 2);
  expect_answer(silent, WEFT_UNAUTHENTICATED, "Bulk channel: no ticket (it timed out)", true);
  close(silent);

  /* The sender stops mid-step (SIGSTOP): task 1's _Recv, waiting on its link, ends with the
   * step's deadline; once the sender runs again the next step works. The step is driven from
   * task 1, whose master is not stopped. */
  weft_graph_t *g = transfer_graph(v);
  weft_status_t *st = NULL;
  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  const char *fetch = "received";
  weft_tensor_t *got = NULL;
  for (int k = 0; k < 2; k++) { /* the second step goes over the link */
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &got, 1, NULL, 0));
    weft_tensor_unref(got);
  }
  weftd_cluster_signal(&c, 0, SIGSTOP);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_timeout_ms(ro, 1500);
  got = NULL;
  st = weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &got, 1, NULL, 0, NULL);
  weft_run_options_free(ro);
  g_assert_nonnull(st);
  g_test_message("%s: %s", weft_code_name(weft_status_code(st)), weft_status_message(st));
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(WEFT_DEADLINE_EXCEEDED));
  weft_status_free(st);
  g_assert_null(got);
  weftd_cluster_signal(&c, 0, SIGCONT);
  for (int k = 0; k < 2; k++) {
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &got, 1, NULL, 0));
    g_assert_cmpint(memcmp(weft_tensor_data(got), weft_tensor_data(v), weft_tensor_nbytes(v)), ==,
                    0);
    weft_tensor_unref(got);
  }
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(v);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * Review: floods, tickets, hostile senders, TLS and the token */

/* Waits (at most 30 s: a bound on liveness, not a timing) until at most `at_most` threads of
 * `pid` are named `name`. */
static void wait_threads(GPid pid, const char *name, int at_most) {
  for (int k = 0; k < 600 && count_threads(pid, name) > at_most; k++) g_usleep(50 * 1000);
  g_assert_cmpint(count_threads(pid, name), <=, at_most);
}

/* The server's end of a connection it refused: closed with no answer (0), or its "no ticket (it
 * timed out)" answer (1). */
static int closed_or_timed_out(int fd) {
  uint8_t head[12];
  if (!recv_all(fd, head, 12)) return 0;
  g_assert_cmpuint(get_u32(head + 4), ==, WEFT_UNAUTHENTICATED);
  char msg[64] = {0};
  g_assert_cmpuint(get_u32(head + 8), <, sizeof msg);
  g_assert_true(recv_all(fd, msg, get_u32(head + 8)));
  g_assert_cmpstr(msg, ==, "Bulk channel: no ticket (it timed out)");
  return 1;
}

/* Unauthenticated floods hold at most 32 threads (MAX_UNAUTHENTICATED) while they last, every
 * one of those threads is gone after them, and a good ticket holder is served again. */
static void test_flood(void) {
  g_setenv("WEFT_BULK_HANDSHAKE_MS", "2000", TRUE);
  weft__worker_t *w = NULL;
  int port = 0;
  weft__bulk_server_t *bs = bulk_server(&w, &port);
  GPid self = getpid();
  g_assert_cmpint(count_threads(self, "weft-bulk"), ==, 0);

  /* 40 silent connections: 32 hold a thread until their hello's time is up, the rest are closed
   * at once. */
  int fds[40];
  for (int k = 0; k < 40; k++) fds[k] = connect_port(port);
  g_assert_cmpint(count_threads(self, "weft-bulk"), <=, 32);
  int answered = 0;
  for (int k = 0; k < 40; k++) {
    answered += closed_or_timed_out(fds[k]);
    g_assert_cmpint(count_threads(self, "weft-bulk"), <=, 32);
    close(fds[k]);
  }
  g_test_message("%d of 40 silent connections held a thread until their hello's time", answered);
  g_assert_cmpint(answered, <=, 32);
  g_assert_cmpint(answered, >=, 1);
  wait_threads(self, "weft-bulk", 0);

  /* Slowloris: a byte of the hello every 100 ms, never all of it, is cut off at the handshake
   * time. */
  int slow = connect_port(port);
  uint8_t byte = 0x57;
  for (int k = 0; k < 23; k++) {
    if (send(slow, &byte, 1, MSG_NOSIGNAL) != 1) break;
    g_usleep(100 * 1000);
  }
  expect_answer(slow, WEFT_UNAUTHENTICATED, "Bulk channel: no ticket (it timed out)", true);
  close(slow);

  /* Connections opened and closed as fast as this thread can: no thread stays behind. Then a
   * ticket holder is accepted (after them: the server accepts in order) and served. */
  for (int k = 0; k < 300; k++) close(connect_port(port));
  uint8_t t[2][16], head[8];
  int fd = -1;
  for (int k = 0; k < 100 && fd < 0; k++) {
    /* Closed unanswered while 32 of the churn still hold their slots: a new ticket, again. */
    tickets(bs, t);
    fd = connect_port(port);
    hello(fd, t[0]);
    if (!recv_all(fd, head, sizeof head)) {
      close(fd);
      fd = -1;
      g_usleep(50 * 1000);
    }
  }
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpuint(get_u32(head + 4), ==, 0);
  wait_threads(self, "weft-bulk", 1);
  expect_serving(w, fd);
  g_assert_cmpint(count_threads(self, "weft-bulk"), ==, 1);
  weft__bulk_server_free(bs);
  close(fd);
  g_assert_cmpint(count_threads(self, "weft-bulk"), ==, 0);
  weft__worker_free(w);
  g_unsetenv("WEFT_BULK_HANDSHAKE_MS");
}

/* The ticket table holds 256 (128 links' worth) and then offers nothing; a single free slot
 * offers nothing either and is not used up; expired tickets make room. */
static void test_ticket_table(void) {
  weft__worker_t *w = NULL;
  int port = 0;
  weft__bulk_server_t *bs = bulk_server(&w, &port);
  uint8_t t[2][16];
  for (int k = 0; k < 128; k++) tickets(bs, t);
  Weft__RecvTensorResponse resp = WEFT__RECV_TENSOR_RESPONSE__INIT;
  weft__bulk_tickets_t spare;
  weft__bulk_issue_tickets(bs, &resp, &spare);
  g_assert_cmpuint(resp.n_bulk_tickets, ==, 0);
  g_assert_cmpuint(resp.bulk_port, ==, 0);
  int a = open_accepted(port, t[0]); /* 255 left */
  weft__bulk_issue_tickets(bs, &resp, &spare);
  g_assert_cmpuint(resp.n_bulk_tickets, ==, 0);
  int b = open_accepted(port, t[1]); /* 254 left: room for a pair */
  tickets(bs, t);
  close(a);
  close(b);
  weft__bulk_server_free(bs);

  g_setenv("WEFT_BULK_TICKET_TTL_MS", "20", TRUE);
  OK(weft__bulk_server_new(w, "127.0.0.1", 0, &bs));
  for (int k = 0; k < 128; k++) tickets(bs, t);
  g_unsetenv("WEFT_BULK_TICKET_TTL_MS");
  g_usleep(100 * 1000);
  tickets(bs, t); /* the expired ones were swept */
  weft__bulk_server_free(bs);
  weft__worker_free(w);
}

/* A hostile sender: accepts a link's two hellos, answers the first request with `answer`, then
 * closes both connections. */
typedef struct fake_sender {
  int listen_fd;
  const uint8_t *answer;
  size_t n;
} fake_sender_t;

static gpointer fake_sender_main(gpointer data) {
  fake_sender_t *f = data;
  int fds[2];
  for (int k = 0; k < 2; k++) {
    fds[k] = accept(f->listen_fd, NULL, NULL);
    g_assert_cmpint(fds[k], >=, 0);
    uint8_t h[24], ok[8];
    g_assert_true(recv_all(fds[k], h, sizeof h));
    put_u32(ok, MAGIC);
    put_u32(ok + 4, 0);
    send_all(fds[k], ok, sizeof ok);
  }
  uint8_t head[28];
  char key[64];
  g_assert_true(recv_all(fds[0], head, sizeof head));
  g_assert_cmpuint(get_u32(head + 24), <, sizeof key);
  g_assert_true(recv_all(fds[0], key, get_u32(head + 24)));
  send_all(fds[0], f->answer, f->n);
  close(fds[0]);
  close(fds[1]);
  return NULL;
}

/* This process receives a float tensor from a fake sender answering with `answer` over a new
 * link (the real receiver's code: weft__bulk_after_recv, weft__bulk_recv). */
static weft_status_t *recv_from(const uint8_t *answer, size_t n, weft_tensor_t **out) {
  static int serial;
  int port = 0;
  int lfd = bound_socket(&port);
  g_assert_cmpint(listen(lfd, 4), ==, 0);
  fake_sender_t f = {lfd, answer, n};
  GThread *thread = g_thread_new("fake-sender", fake_sender_main, &f);
  uint8_t forged[2][16] = {{1}, {2}};
  ProtobufCBinaryData items[2] = {{16, forged[0]}, {16, forged[1]}};
  Weft__RecvTensorResponse resp = WEFT__RECV_TENSOR_RESPONSE__INIT;
  resp.bulk_port = (uint32_t)port;
  resp.n_bulk_tickets = 2;
  resp.bulk_tickets = items;
  char *address = g_strdup_printf("127.0.0.1:%d", 100 + serial++);
  weft__bulk_after_recv(address, &resp);
  weft__peer_t peer = {.name = "fake", .address = address};
  weft__step_table_t *table = weft__step_table_new();
  weft_status_t *st = NULL;
  weft__step_t *step = weft__step_get(table, 1, &st);
  OK(st);
  uint64_t last = 0;
  bool handled = false;
  st = weft__bulk_recv(&peer, step, "k", 0, WEFT_DT_FLOAT, &last, out, &handled);
  g_assert_true(handled);
  g_thread_join(thread);
  close(lfd);
  weft__step_unref(step);
  weft__step_table_free(table);
  g_free(address);
  return st;
}

/* A tensor answer's header (and no bytes). */
static size_t tensor_head(uint8_t *b, uint32_t dtype, uint32_t rank, const int64_t *dims,
                          uint64_t nbytes, uint64_t offset, uint64_t len) {
  put_u32(b, MAGIC);
  put_u32(b + 4, 0);
  put_u32(b + 8, dtype);
  put_u32(b + 12, rank);
  size_t at = 16;
  for (uint32_t k = 0; k < rank && dims; k++, at += 8) put_u64(b + at, (uint64_t)dims[k]);
  put_u64(b + at, nbytes);
  put_u64(b + at + 8, offset);
  put_u64(b + at + 16, len);
  return at + 24;
}

static void expect_refusal(const uint8_t *answer, size_t n, weft_code_t code, const char *msg) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = recv_from(answer, n, &t);
  g_assert_nonnull(st);
  g_assert_null(t);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  g_assert_cmpstr(weft_status_message(st), ==, msg);
  weft_status_free(st);
}

/* Answers no receiver may believe: refused with exact messages before anything is allocated
 * for them, a transfer cut off mid-bytes ends with a clear error, and the next one works. */
static void test_hostile_sender(void) {
  uint8_t b[4096 + 64];
  put_u32(b, MAGIC);
  put_u32(b + 4, WEFT_NOT_FOUND);
  put_u32(b + 8, 5000);
  expect_refusal(b, 12, WEFT_INTERNAL, "Bulk channel to fake: a malformed error answer");
  size_t n = tensor_head(b, WEFT_DT_FLOAT, 9, NULL, 0, 0, 0);
  char *msg = g_strdup_printf("Bulk channel to fake: an answer of dtype %d and rank 9 for a _Recv "
                              "of %s", (int)WEFT_DT_FLOAT, weft_dtype_name(WEFT_DT_FLOAT));
  expect_refusal(b, 16, WEFT_INTERNAL, msg);
  g_free(msg);
  msg = g_strdup_printf("Bulk channel to fake: an answer of dtype %d and rank 1 for a _Recv of %s",
                        (int)WEFT_DT_DOUBLE, weft_dtype_name(WEFT_DT_FLOAT));
  n = tensor_head(b, WEFT_DT_DOUBLE, 1, (int64_t[]){4}, 32, 0, 32);
  expect_refusal(b, n, WEFT_INTERNAL, msg);
  g_free(msg);
  n = tensor_head(b, WEFT_DT_FLOAT, 2, (int64_t[]){3, -4}, 48, 0, 48);
  expect_refusal(b, n, WEFT_INTERNAL, "Bulk channel to fake: an answer whose dimension 1 is -4");
  n = tensor_head(b, WEFT_DT_FLOAT, 1, (int64_t[]){(int64_t)1 << 40}, (uint64_t)4 << 40, 0,
                  (uint64_t)4 << 40);
  expect_refusal(b, n, WEFT_RESOURCE_EXHAUSTED,
                 "Bulk channel to fake: an answer of 4398046511104 bytes, over the receiver's "
                 "limit of 17179869184 (WEFT_BULK_MAX_TENSOR_BYTES)");
  n = tensor_head(b, WEFT_DT_FLOAT, 2, (int64_t[]){G_MAXINT64 / 2, 4}, 16, 0, 16);
  expect_refusal(b, n, WEFT_INTERNAL, "Bulk channel to fake: an inconsistent answer "
                 "(4611686018427387903 elements of float32 in 16 bytes, part 0 at 0 of 16)");
  n = tensor_head(b, WEFT_DT_FLOAT, 1, (int64_t[]){4}, 16, 0, 32); /* len beyond the part */
  expect_refusal(b, n, WEFT_INTERNAL, "Bulk channel to fake: an inconsistent answer (4 elements "
                 "of float32 in 16 bytes, part 0 at 0 of 32)");
  n = tensor_head(b, WEFT_DT_FLOAT, 1, (int64_t[]){1024}, 4096, 0, 4096);
  memset(b + n, 7, 100); /* 100 of its 4096 bytes, then the sender closes */
  expect_refusal(b, n + 100, WEFT_UNAVAILABLE,
                 "Bulk channel to fake: the tensor's bytes stopped (the connection was closed)");

  float values[3] = {1.5f, -2.0f, 3.25f};
  n = tensor_head(b, WEFT_DT_FLOAT, 1, (int64_t[]){3}, sizeof values, 0, sizeof values);
  memcpy(b + n, values, sizeof values);
  weft_tensor_t *t = NULL;
  OK(recv_from(b, n + sizeof values, &t));
  g_assert_cmpint(weft_tensor_num_elements(t), ==, 3);
  g_assert_cmpint(memcmp(weft_tensor_data(t), values, sizeof values), ==, 0);
  weft_tensor_unref(t);
}

/* A self-signed certificate for 127.0.0.1 in a new folder, or NULL without openssl. */
static char *make_cert(void) {
  char *openssl = g_find_program_in_path("openssl");
  if (!openssl) return NULL;
  g_free(openssl);
  char *dir = g_dir_make_tmp("weft-bulk-XXXXXX", NULL);
  char *argv[] = {"/bin/sh", "-ec",
                  "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
                  "-keyout key -out crt -subj /CN=localhost "
                  "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null",
                  NULL};
  int status = 0;
  g_assert_true(g_spawn_sync(dir, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &status,
                             NULL));
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  return dir;
}

static void remove_cert(char *dir) {
  const char *names[] = {"crt", "key", "token"};
  for (size_t k = 0; k < G_N_ELEMENTS(names); k++) {
    char *p = g_build_filename(dir, names[k], NULL);
    g_unlink(p);
    g_free(p);
  }
  g_rmdir(dir);
  g_free(dir);
}

/* With TLS the channel (plaintext) is off unless asked for: no port, so no RecvTensor answer can
 * offer one; --bulk_transfer on (weft_server_options_set_bulk_transfer 1) turns it on. */
static void test_tls(void) {
  char *dir = make_cert();
  if (!dir) {
    g_test_skip("the openssl command is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  char *crt = g_build_filename(dir, "crt", NULL), *key = g_build_filename(dir, "key", NULL);
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  OK(weft_cluster_spec_add_task(spec, "local", 0, "127.0.0.1:0"));
  weft_server_options_t *so = weft_server_options_new();
  weft_server_options_set_tls(so, crt, key, NULL);
  for (int mode = -1; mode <= 1; mode++) {
    weft_server_options_set_bulk_transfer(so, mode);
    weft_server_t *server = NULL;
    OK(weft_server_new(spec, "local", 0, so, &server));
    g_test_message("TLS, bulk_transfer %d: bulk port %d", mode, weft_server_bulk_port(server));
    if (mode > 0) g_assert_cmpint(weft_server_bulk_port(server), >, 0);
    else g_assert_cmpint(weft_server_bulk_port(server), ==, 0);
    /* The acceptor (named once it runs) exactly when there is a port, and weft_server_free
     * joins it. */
    for (int k = 0; k < 600 && mode > 0 && count_threads(getpid(), "weft-bulk-acc") == 0; k++)
      g_usleep(50 * 1000);
    g_assert_cmpint(count_threads(getpid(), "weft-bulk-acc"), ==, mode > 0 ? 1 : 0);
    weft_server_free(server);
    g_assert_cmpint(count_threads(getpid(), "weft-bulk-acc"), ==, 0);
  }
  weft_server_options_free(so);
  weft_cluster_spec_free(spec);

  /* weftd prints the channel's port only with --bulk_transfer on. */
  if (weftd_available()) {
    const char *args[] = {"--local", "--port", "0", "--tls-cert", crt, "--tls-key", key,
                          "--bulk_transfer", "on", NULL};
    weftd_proc_t d = weftd_spawn(args, NULL, false);
    g_assert_cmpint(bulk_port_of(&d), >, 0);
    weftd_stop(&d);
  }
  g_free(crt);
  g_free(key);
  remove_cert(dir);
}

/* A RecvTensor offering the channel without the cluster's token is refused before the worker
 * sees it: no answer, so no ticket. */
static void test_token(void) {
  if (!weftd_available()) return;
  char *dir = g_dir_make_tmp("weft-bulk-XXXXXX", NULL);
  char *token = g_build_filename(dir, "token", NULL);
  g_assert_true(g_file_set_contents(token, "sesame-0123456789\n", -1, NULL));
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token, NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, false);
  g_assert_cmpint(bulk_port_of(&d), >, 0);
  weft__peer_t peer = {.name = "weftd", .address = d.target + strlen("grpc://")};
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  req.step_id = 1;
  req.rendezvous_key = "k";
  req.bulk_offer = true;
  ProtobufCMessage *resp = NULL;
  weft_tensor_t **tensors = NULL;
  int n_tensors = 0;
  weft_status_t *st = weft__rpc_unary(&peer, "/weft.Worker/RecvTensor", &req.base, NULL, 0, 10000,
                                      false, NULL, &weft__recv_tensor_response__descriptor,
                                      &resp, &tensors, &n_tensors);
  g_assert_cmpint(n_tensors, ==, 0);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(WEFT_UNAUTHENTICATED));
  g_assert_cmpstr(weft_status_message(st), ==, "/weft.Worker/RecvTensor: this server requires the "
                  "cluster auth token and the call carried none (set --auth-token-file, or "
                  "weft_session_options_set_auth_token_file)");
  g_assert_null(resp);
  weft_status_free(st);
  weftd_stop(&d);
  g_free(token);
  remove_cert(dir);
}

/* An attacker of a bulk port: 40 connections that never say hello, each opened again once the
 * server has closed it (refused at once over the limit, or at its handshake time), until told
 * to stop. */
typedef struct flooder {
  int port;
  gint stop;
  int reopened;
} flooder_t;

static gpointer flooder_main(gpointer data) {
  flooder_t *f = data;
  int fds[40];
  for (int k = 0; k < 40; k++) fds[k] = connect_port(f->port);
  while (!g_atomic_int_get(&f->stop)) {
    for (int k = 0; k < 40; k++) {
      struct pollfd pfd = {fds[k], POLLIN, 0};
      if (poll(&pfd, 1, 0) != 1) continue;
      close(fds[k]);
      fds[k] = connect_port(f->port);
      f->reopened++;
    }
    g_usleep(10 * 1000);
  }
  for (int k = 0; k < 40; k++) close(fds[k]);
  return NULL;
}

typedef struct step_run {
  weft_session_t *session;
  weft_status_t *status;
  weft_tensor_t *got;
} step_run_t;

static gpointer step_main(gpointer data) {
  step_run_t *r = data;
  const char *fetch = "received";
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_timeout_ms(ro, 60000);
  r->status = weft_session_run_with_options(r->session, ro, NULL, NULL, 0, &fetch, &r->got, 1,
                                            NULL, 0, NULL);
  weft_run_options_free(ro);
  return NULL;
}

/* Two weftd while task 0's bulk port is flooded: every step's bytes exact (over the channel or
 * gRPC), task 0's bulk threads bounded while it lasts and back after, its memory too; then task 0
 * stopped in the middle of a 64 MiB transfer exits cleanly while task 1's step ends. */
static void test_cluster_flooded(void) {
  const char *env[] = {"WEFT_SHM_TRANSFER=0", "WEFT_BULK_HANDSHAKE_MS=300", "WEFT_BULK_TRANSFER",
                       NULL};
  weftd_cluster_t c;
  if (!weftd_cluster_start_full(&c, 0, 2, NULL, env, NULL)) return;
  int port = bulk_port_of(&c.d[0]);
  weft_tensor_t *v = pattern(WEFT_DT_FLOAT, 1 << 20);
  flooder_t f = {port, 0, 0};
  GThread *thread = g_thread_new("flooder", flooder_main, &f);
  /* The first steps open task 1's link during the flood: refused (gRPC carries them) or not. */
  transfer(&c, v, 2);
  int64_t rss_before = proc_rss_kib(c.d[0].pid);
  for (int k = 0; k < 4; k++) {
    transfer(&c, v, 2);
    /* 32 waiting for a hello at most, and the links' 2 connections each (4 links a peer). */
    g_assert_cmpint(count_threads(c.d[0].pid, "weft-bulk"), <=, 32 + 8);
  }
  g_atomic_int_set(&f.stop, 1);
  g_thread_join(thread);
  wait_threads(c.d[0].pid, "weft-bulk", 8);
  int64_t rss_after = proc_rss_kib(c.d[0].pid);
  g_test_message("flood: %d connections reopened; task 0 RSS %" G_GINT64_FORMAT " KiB before, %"
                 G_GINT64_FORMAT " KiB after", f.reopened, rss_before, rss_after);
  /* The sanitizer build keeps freed memory in quarantine (256 MB): no bound to check there. */
  if (!WEFT_SANITIZE) g_assert_cmpint(rss_after, <, rss_before + 64 * 1024);
  transfer(&c, v, 2);
  weft_tensor_unref(v);

  /* A step of 64 MiB from task 1 to task 0 (whose link to task 1 was opened with no flood),
   * driven from task 0; task 1 stopped (SIGTERM) while it runs, with a silent connection open on
   * its bulk port too: task 1 exits with 0 (under ASan: nothing leaked), and the step ends,
   * exact or with an error. */
  port = bulk_port_of(&c.d[1]);
  v = pattern(WEFT_DT_FLOAT, 16 << 20);
  weft_graph_t *g = transfer_graph_between(v, 1, 0);
  step_run_t r = {weftd_remote_session(g, c.target[0]), NULL, NULL};
  step_main(&r); /* the first step opens the link */
  OK(r.status);
  weft_tensor_unref(r.got);
  r.got = NULL;
  int silent = connect_port(port);
  thread = g_thread_new("step", step_main, &r);
  g_usleep(20 * 1000);
  int wait_status = weftd_cluster_signal(&c, 1, SIGTERM);
  g_assert_true(WIFEXITED(wait_status));
  g_assert_cmpint(WEXITSTATUS(wait_status), ==, 0);
  g_thread_join(thread);
  g_test_message("the step: %s", r.status ? weft_status_message(r.status) : "exact");
  if (!r.status) {
    g_assert_cmpint(memcmp(weft_tensor_data(r.got), weft_tensor_data(v), weft_tensor_nbytes(v)),
                    ==, 0);
  }
  weft_status_free(r.status);
  weft_tensor_unref(r.got);
  close(silent);
  weft_session_free(r.session);
  weft_graph_free(g);
  weft_tensor_unref(v);
  weftd_cluster_stop(&c);
}

/* WEFT_BULK_PARTS: one part or two, every byte exact, and WEFT_BULK_TRACE's lines say each
 * tensor went over the channel in the parts asked for (the first over gRPC: parts 0). */
static void run_parts(const char *parts) {
  char *trace = g_build_filename(g_get_tmp_dir(), "weft-bulk-trace-XXXXXX", NULL);
  int tfd = g_mkstemp(trace);
  g_assert_cmpint(tfd, >=, 0);
  close(tfd);
  char *parts_env = g_strdup_printf("WEFT_BULK_PARTS=%s", parts);
  char *trace_env = g_strdup_printf("WEFT_BULK_TRACE=%s", trace);
  const char *env[] = {"WEFT_SHM_TRANSFER=0", parts_env, trace_env, NULL};
  weftd_cluster_t c;
  if (weftd_cluster_start_full(&c, 0, 2, NULL, env, NULL)) {
    weft_tensor_t *v = pattern(WEFT_DT_FLOAT, (3 << 20) + 7); /* parts of unequal lengths */
    transfer(&c, v, 3);
    weft_tensor_unref(v);
    weftd_cluster_stop(&c);
    char *text = NULL;
    g_assert_true(g_file_get_contents(trace, &text, NULL, NULL));
    g_test_message("trace:\n%s", text);
    /* Step 1 goes over gRPC and opens the link; steps 2 and 3 over the link. */
    gchar **lines = g_strsplit(text, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 4);
    char *want = g_strdup_printf("12582940 %s ", parts);
    g_assert_true(g_str_has_prefix(lines[0], "12582940 0 "));
    g_assert_true(g_str_has_prefix(lines[1], want));
    g_assert_true(g_str_has_prefix(lines[2], want));
    g_assert_cmpstr(lines[3], ==, "");
    g_free(want);
    g_strfreev(lines);
    g_free(text);
  }
  unlink(trace);
  g_free(trace);
  g_free(parts_env);
  g_free(trace_env);
}

static void test_parts(void) {
  run_parts("1");
  run_parts("2");
}

static void test_cluster_on(void) { run_cluster(true); }
static void test_cluster_off(void) { run_cluster(false); }

/* A peer that asks for one part of a tensor split in eight and never for the others does not
 * make the sender hold it for good: the acceptor sweeps it once a ticket's lifetime has passed
 * (WEFT_BULK_TICKET_TTL_MS when the server was made; shortened here once the entry is seen),
 * even with no further request coming. Here the worker's answer is an error (a wrong
 * incarnation), which waits for its other parts as a tensor would. */
static void test_pending_swept(void) {
  weft__worker_t *w = NULL;
  int port = 0;
  weft__bulk_server_t *bs = bulk_server(&w, &port);
  uint8_t t[2][16];
  tickets(bs, t);
  int fd = open_accepted(port, t[0]);
  request(fd, 0, 8, 7, 0x1234, "k", 1);
  char *msg = restarted_message(w);
  expect_answer(fd, WEFT_ABORTED, msg, false);
  g_free(msg);
  g_assert_cmpint(weft__bulk_server_pending(bs), ==, 1); /* kept for a minute by default */
  weft__bulk_server_set_pending_ttl_ms(bs, 200);
  /* Within 30 s (a bound on liveness, not a timing): swept with no request arriving. */
  for (int k = 0; k < 3000 && weft__bulk_server_pending(bs) > 0; k++) g_usleep(10 * 1000);
  g_assert_cmpint(weft__bulk_server_pending(bs), ==, 0);
  close(fd);
  weft__bulk_server_free(bs);
  weft__worker_free(w);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("WEFT_BULK_TRANSFER");
  weft_plugins_load_default();
  g_test_add_func("/bulk_transfer/hostile", test_hostile);
  g_test_add_func("/bulk_transfer/switch", test_switch);
  g_test_add_func("/bulk_transfer/link_failures", test_link_failures);
  g_test_add_func("/bulk_transfer/cluster_on", test_cluster_on);
  g_test_add_func("/bulk_transfer/cluster_off", test_cluster_off);
  g_test_add_func("/bulk_transfer/flood", test_flood);
  g_test_add_func("/bulk_transfer/ticket_table", test_ticket_table);
  g_test_add_func("/bulk_transfer/hostile_sender", test_hostile_sender);
  g_test_add_func("/bulk_transfer/tls", test_tls);
  g_test_add_func("/bulk_transfer/token", test_token);
  g_test_add_func("/bulk_transfer/cluster_flooded", test_cluster_flooded);
  g_test_add_func("/bulk_transfer/pending_swept", test_pending_swept);
  g_test_add_func("/bulk_transfer/parts", test_parts);
  return g_test_run();
}
