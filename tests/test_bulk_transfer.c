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
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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

/* The worker's answer to a request naming the wrong incarnation: proof the server serves. */
static void expect_serving(weft__worker_t *w, int fd) {
  request(fd, 0, 1, 7, 0x1234, "k", 1);
  char *msg = g_strdup_printf("Task %s was restarted: its incarnation is %016" G_GINT64_MODIFIER
                              "x but the master expected 0000000000001234; its graphs and "
                              "variables are gone, so create the session again",
                              weft__worker_task(w), weft__worker_incarnation(w));
  expect_answer(fd, WEFT_ABORTED, msg, false);
  g_free(msg);
}

static void test_hostile(void) {
  g_setenv("WEFT_BULK_HANDSHAKE_MS", "300", TRUE);
  weft__worker_t *w = weft__worker_new("w", 0, 0);
  weft__bulk_server_t *bs = NULL;
  OK(weft__bulk_server_new(w, "127.0.0.1", 0, &bs));
  int port = weft__bulk_server_port(bs);
  g_assert_cmpint(port, >, 0);
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

/* A free port nobody listens on. */
static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
  g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &len), ==, 0);
  close(fd);
  return ntohs(a.sin_port);
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
static weft_graph_t *transfer_graph(weft_tensor_t *value) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  weft_output_t out = weft_const(g, "payload", value, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
  weft_unary(g, "Identity", "received", out, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
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

static void test_cluster_on(void) { run_cluster(true); }
static void test_cluster_off(void) { run_cluster(false); }

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("WEFT_BULK_TRANSFER");
  weft_plugins_load_default();
  g_test_add_func("/bulk_transfer/hostile", test_hostile);
  g_test_add_func("/bulk_transfer/switch", test_switch);
  g_test_add_func("/bulk_transfer/link_failures", test_link_failures);
  g_test_add_func("/bulk_transfer/cluster_on", test_cluster_on);
  g_test_add_func("/bulk_transfer/cluster_off", test_cluster_off);
  return g_test_run();
}
