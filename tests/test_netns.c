/* A cluster across network namespaces made by this test (`ip netns`, one namespace per task and
 * one for the client, joined by veth pairs on a bridge in a namespace of its own, addresses in
 * 10.213.0.0/24 that exist only inside them), so tensors between tasks cross a real network
 * stack instead of loopback and its shared-memory path. Checked: a remote session returns exact
 * values and no shared-memory segment is used while the bytes show up on the links; training
 * goes on under 20 ms latency and 1% loss (tc netem where the kernel has sch_netem, else the
 * test's own TUN impairment line, checked with ping first); a worker cut off for longer than
 * the step timeout leaves the others training and rejoins when the link comes back; a cut-off
 * ps is recovered from, and so is one killed and restarted behind the partition (the chief
 * restores the last checkpoint). Skipped, with the reason, when not root or when `ip netns
 * add` or a TUN device fails. Every namespace is deleted at the end of each case, and by
 * a guardian process should this one die half way (docs/operations.md, "Testing on real
 * networks"). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <linux/if_tun.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process_util.h"
#include "weft/weft.h"

#define WEFTD WEFT_BUILD_DIR "/core/tools/weftd"
#define WEFT_TRAIN WEFT_BUILD_DIR "/core/tools/weft-train"
/* The sanitizer build runs every process several times slower. */
#if WEFT_SANITIZE
#define SLOW 3
#else
#define SLOW 1
#endif
#define PROCESS_TIMEOUT_MS (40000 * SLOW)
#define STEP_TIMEOUT_MS (1500 * SLOW)
#define PARTITION_MS 3000 /* longer than the step timeout */
#define PORT 2222         /* every task has its own namespace, hence its own ports */
#define MAX_NS 5

/* The namespaces of this test process: "wn<pid>-<role>". Roles in a fixed list, so the guardian
 * knows every name without being told. */
static const char *const roles[MAX_NS] = {"br", "ps", "w0", "w1", "c"};
static const char *const addresses[MAX_NS] = {NULL, "10.213.0.1", "10.213.0.2", "10.213.0.3",
                                              "10.213.0.9"};
enum { NS_BR, NS_PS, NS_W0, NS_W1, NS_C };

static char *ns_name(int owner, int role) {
  return g_strdup_printf("wn%d-%s", owner, roles[role]);
}

/* Runs `ip ARGS` (a shell-like line); true on exit status 0, else *err (may be NULL) says why. */
static bool ip(char **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool ip(char **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *args = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *cmd = g_strdup_printf("ip %s", args);
  char **argv = NULL;
  g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
  char *out = NULL, *errout = NULL;
  int status = -1;
  GError *e = NULL;
  bool ok = g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &errout, &status,
                         &e) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok && err) *err = g_strdup_printf("'%s': %s", cmd, e ? e->message : g_strstrip(errout));
  g_clear_error(&e);
  g_free(out);
  g_free(errout);
  g_strfreev(argv);
  g_free(cmd);
  g_free(args);
  return ok;
}

static void delete_all(int owner) {
  for (int r = 0; r < MAX_NS; r++) {
    char *ns = ns_name(owner, r);
    char *path = g_strdup_printf("/run/netns/%s", ns);
    if (g_file_test(path, G_FILE_TEST_EXISTS)) ip(NULL, "netns del %s", ns);
    g_free(path);
    g_free(ns);
  }
}

/* A process forked before any thread exists that deletes this process's namespaces once it is
 * gone, however it ended (an assertion's abort, SIGKILL by meson's timeout). */
static void start_guardian(void) {
  int fds[2];
  if (geteuid() != 0 || pipe2(fds, O_CLOEXEC) != 0) return;
  int owner = (int)getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    setsid(); /* away from the terminal's and meson's signals to the group */
    char c;
    while (read(fds[0], &c, 1) != 0 && errno == EINTR) {
    }
    delete_all(owner);
    _exit(0);
  }
  close(fds[0]); /* fds[1] stays open, unseen, until this process ends */
}

/* ---------------------------------------------------------------------------------------------
 * The impairment line: latency and loss without sch_netem
 *
 * Where the kernel has no netem qdisc, each namespace's eth0 is a TUN device whose other end is a
 * file descriptor held by this test, and a thread of it (the line) is the router between them:
 * it reads each IPv4 packet a task sends, drops it at random with the loss probability, holds
 * it for the delay and writes it into the TUN device of the namespace its destination address
 * belongs to. Every packet still leaves one kernel's network stack and enters another's; the
 * line only stands where the wire would be. A cut namespace's packets are dropped silently, as
 * a downed bridge port drops them. */

#define LINE_MTU 65536

typedef struct held {
  gint64 due_us;
  int from, to;
  gsize len;
  guint8 data[];
} held_t;

typedef struct line {
  int fd[MAX_NS];            /* the TUN devices' descriptors, -1 for none */
  guint32 addr[MAX_NS];      /* their addresses, network order */
  gint64 delay_us;
  double loss;
  gint cut[MAX_NS];          /* atomic: drop everything to or from this namespace */
  int wake[2];               /* a byte on wake[1] stops the thread */
  GThread *thread;
  GQueue held;               /* held_t*, due in order: every packet waits the same delay */
  gint forwarded, dropped;   /* atomic; dropped: at random, cut off or a full device */
  gint stray;                /* atomic: not IPv4 to one of the namespaces (IPv6 autoconf) */
} line_t;

static void line_deliver(line_t *l, held_t *h) {
  if (g_atomic_int_get(&l->cut[h->from]) || g_atomic_int_get(&l->cut[h->to]) ||
      write(l->fd[h->to], h->data, h->len) != (ssize_t)h->len) {
    g_atomic_int_inc(&l->dropped); /* a full TUN queue drops too, as a full link would */
  } else {
    g_atomic_int_inc(&l->forwarded);
  }
  g_free(h);
}

/* Takes every packet waiting on namespace r's device. */
static void line_take(line_t *l, int r, guint8 *buf) {
  for (;;) {
    ssize_t got = read(l->fd[r], buf, LINE_MTU);
    if (got <= 0) return;
    int to = -1;
    if (got >= 20 && buf[0] >> 4 == 4) { /* IPv4 only: the tasks speak nothing else */
      guint32 dst;
      memcpy(&dst, buf + 16, 4);
      for (int k = 0; k < MAX_NS && to < 0; k++)
        if (l->fd[k] >= 0 && l->addr[k] == dst) to = k;
    }
    if (to < 0) {
      g_atomic_int_inc(&l->stray);
      continue;
    }
    if (g_atomic_int_get(&l->cut[r]) || g_random_double() < l->loss) {
      g_atomic_int_inc(&l->dropped);
      continue;
    }
    held_t *h = g_malloc(sizeof *h + (gsize)got);
    h->due_us = g_get_monotonic_time() + l->delay_us;
    h->from = r;
    h->to = to;
    h->len = (gsize)got;
    memcpy(h->data, buf, (gsize)got);
    g_queue_push_tail(&l->held, h);
  }
}

static gpointer line_run(gpointer data) {
  line_t *l = data;
  guint8 *buf = g_malloc(LINE_MTU);
  struct pollfd fds[MAX_NS + 1];
  int who[MAX_NS + 1];
  for (;;) {
    int nfds = 0;
    fds[nfds++] = (struct pollfd){.fd = l->wake[0], .events = POLLIN};
    for (int r = 0; r < MAX_NS; r++) {
      if (l->fd[r] < 0) continue;
      who[nfds] = r;
      fds[nfds++] = (struct pollfd){.fd = l->fd[r], .events = POLLIN};
    }
    int timeout = -1;
    held_t *head = g_queue_peek_head(&l->held);
    if (head) {
      gint64 wait_us = head->due_us - g_get_monotonic_time();
      timeout = wait_us > 0 ? (int)((wait_us + 999) / 1000) : 0;
    }
    if (poll(fds, (nfds_t)nfds, timeout) < 0 && errno != EINTR)
      g_error("poll: %s", g_strerror(errno));
    if (fds[0].revents) break;
    for (int i = 1; i < nfds; i++)
      if (fds[i].revents & POLLIN) line_take(l, who[i], buf);
    gint64 now = g_get_monotonic_time();
    while ((head = g_queue_peek_head(&l->held)) && head->due_us <= now)
      line_deliver(l, g_queue_pop_head(&l->held));
  }
  g_queue_clear_full(&l->held, g_free);
  g_free(buf);
  return NULL;
}

/* Runs fn(data) with this thread in namespace ns (the others stay where they are). */
static void in_namespace(const char *ns, void (*fn)(void *), void *data) {
  int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  char *path = g_strdup_printf("/run/netns/%s", ns);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (home < 0 || fd < 0 || setns(fd, CLONE_NEWNET) != 0)
    g_error("entering %s: %s", ns, g_strerror(errno));
  fn(data);
  if (setns(home, CLONE_NEWNET) != 0) g_error("leaving %s: %s", ns, g_strerror(errno));
  close(fd);
  close(home);
  g_free(path);
}

static void make_tun(void *data) {
  int *fd = data;
  *fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0) return;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  g_strlcpy(ifr.ifr_name, "eth0", IFNAMSIZ);
  if (ioctl(*fd, TUNSETIFF, &ifr) != 0) {
    int e = errno;
    close(*fd);
    *fd = -1;
    errno = e;
  }
}

static void line_stop(line_t *l) {
  if (l->thread) {
    g_assert_cmpint(write(l->wake[1], "x", 1), ==, 1);
    g_thread_join(l->thread);
  }
  for (int r = 0; r < MAX_NS; r++)
    if (l->fd[r] >= 0) close(l->fd[r]);
  close(l->wake[0]);
  close(l->wake[1]);
  g_free(l);
}

/* ---------------------------------------------------------------------------------------------
 * Ping across the network: ICMP echo requests from one namespace to another's address, answered
 * by the other kernel itself */

typedef struct ping {
  const char *to;    /* dotted address */
  int count;
  int interval_us;
  int received;
  double min_ms, avg_ms;
} ping_t;

static guint16 icmp_checksum(const guint8 *p, gsize len) {
  guint32 sum = 0;
  for (gsize i = 0; i + 1 < len; i += 2) sum += (guint32)(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += (guint32)(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (guint16)~sum;
}

/* Takes the echo replies waiting on socket s: their round trips into p. */
static void ping_receive(ping_t *p, int s, gint64 *sent, double *sum_ms, int timeout_ms) {
  guint8 buf[1500];
  struct pollfd pfd = {.fd = s, .events = POLLIN};
  while (poll(&pfd, 1, timeout_ms) > 0) {
    timeout_ms = 0;
    ssize_t got = recv(s, buf, sizeof buf, 0);
    if (got < 28) continue;
    gsize ihl = (gsize)(buf[0] & 0xf) * 4;
    const guint8 *icmp = buf + ihl;
    if ((gsize)got < ihl + 8 || icmp[0] != 0 /* echo reply */) continue;
    int id = icmp[4] << 8 | icmp[5], seq = icmp[6] << 8 | icmp[7];
    if (id != (getpid() & 0xffff) || seq >= p->count || !sent[seq]) continue;
    double ms = (double)(g_get_monotonic_time() - sent[seq]) / 1e3;
    sent[seq] = 0; /* a duplicate counts once */
    p->received++;
    *sum_ms += ms;
    p->min_ms = p->received == 1 ? ms : MIN(p->min_ms, ms);
  }
}

static void ping_run(void *data) {
  ping_t *p = data;
  int s = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
  if (s < 0) g_error("ICMP socket: %s", g_strerror(errno));
  struct sockaddr_in to = {.sin_family = AF_INET};
  g_assert_cmpint(inet_pton(AF_INET, p->to, &to.sin_addr), ==, 1);
  gint64 *sent = g_new0(gint64, p->count);
  double sum_ms = 0;
  for (int seq = 0; seq < p->count; seq++) {
    guint8 req[64] = {8 /* echo request */, 0};
    req[4] = (guint8)(getpid() >> 8);
    req[5] = (guint8)getpid();
    req[6] = (guint8)(seq >> 8);
    req[7] = (guint8)seq;
    guint16 sum = icmp_checksum(req, sizeof req);
    req[2] = (guint8)(sum >> 8);
    req[3] = (guint8)sum;
    sent[seq] = g_get_monotonic_time();
    if (sendto(s, req, sizeof req, 0, (struct sockaddr *)&to, sizeof to) != sizeof req)
      sent[seq] = 0; /* not sent at all: counts as lost */
    ping_receive(p, s, sent, &sum_ms, 0);
    g_usleep((gulong)p->interval_us);
  }
  /* The stragglers: one second is 25 round trips of the line. */
  gint64 until = g_get_monotonic_time() + G_USEC_PER_SEC;
  while (g_get_monotonic_time() < until) ping_receive(p, s, sent, &sum_ms, 50);
  p->avg_ms = p->received ? sum_ms / p->received : 0;
  g_free(sent);
  close(s);
}

/* ---------------------------------------------------------------------------------------------
 * The network */

typedef struct net {
  bool up;
  char *ns[MAX_NS];
  line_t *line; /* NULL: the namespaces are joined by the bridge */
} net_t;

/* Whether this machine can make namespaces; else the case is skipped, saying why. */
static bool net_usable(void) {
  if (geteuid() != 0) {
    g_test_skip("not root: network namespaces need CAP_SYS_ADMIN");
    return false;
  }
  if (!g_file_test(WEFT_TRAIN, G_FILE_TEST_IS_EXECUTABLE) ||
      !g_file_test(WEFTD, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weftd or weft-train not built");
    return false;
  }
  return true;
}

static void net_down(net_t *n);

/* Makes the bridge namespace (the first one: whether namespaces can be made at all), or the
 * case is skipped saying why. */
static bool net_begin(net_t *n) {
  memset(n, 0, sizeof *n);
  if (!net_usable()) return false;
  int owner = (int)getpid();
  for (int r = 0; r < MAX_NS; r++) n->ns[r] = ns_name(owner, r);
  delete_all(owner); /* what an earlier case of this process may have left */
  char *err = NULL;
  if (!ip(&err, "netns add %s", n->ns[NS_BR])) {
    char *why = g_strdup_printf("cannot make a network namespace: %s", err);
    g_test_skip(why);
    g_free(why);
    g_free(err);
    net_down(n);
    return false;
  }
  n->up = true;
  return true;
}

/* Namespace r with lo up and its address on eth0 (which exists already). */
static bool net_address(net_t *n, int r, char **err) {
  return ip(err, "-n %s link set lo up", n->ns[r]) &&
         ip(err, "-n %s addr add %s/24 dev eth0", n->ns[r], addresses[r]) &&
         ip(err, "-n %s link set eth0 up", n->ns[r]);
}

/* The bridge namespace and the task namespaces in `which` (1 << NS_...), each with eth0 on the
 * bridge and its address. False (the case skipped) when `ip netns add` fails. */
static bool net_up(net_t *n, unsigned which) {
  if (!net_begin(n)) return false;
  char *err = NULL;
  bool ok = ip(&err, "-n %s link add br0 type bridge", n->ns[NS_BR]) &&
            ip(&err, "-n %s link set br0 up", n->ns[NS_BR]);
  for (int r = 1; r < MAX_NS && ok; r++) {
    if (!(which & (1u << r))) continue;
    ok = ip(&err, "netns add %s", n->ns[r]) &&
         ip(&err, "-n %s link add p%d type veth peer name eth0 netns %s", n->ns[NS_BR], r,
            n->ns[r]) &&
         ip(&err, "-n %s link set p%d master br0 up", n->ns[NS_BR], r) && net_address(n, r, &err);
  }
  if (!ok) g_error("setting up the namespaces: %s", err);
  return true;
}

/* The task namespaces in `which` joined by the impairment line instead of the bridge (which
 * stays empty): each namespace's eth0 is a TUN device, and the line delays every packet by
 * delay_ms and drops it with probability `loss`. False (the case skipped) when a namespace or a
 * TUN device cannot be made. */
static bool net_up_line(net_t *n, unsigned which, int delay_ms, double loss) {
  if (!net_begin(n)) return false;
  line_t *l = g_new0(line_t, 1);
  l->delay_us = (gint64)delay_ms * 1000;
  l->loss = loss;
  for (int r = 0; r < MAX_NS; r++) l->fd[r] = -1;
  g_assert_cmpint(pipe2(l->wake, O_CLOEXEC), ==, 0);
  n->line = l;
  char *err = NULL;
  for (int r = 1; r < MAX_NS; r++) {
    if (!(which & (1u << r))) continue;
    if (!ip(&err, "netns add %s", n->ns[r])) g_error("%s", err);
    in_namespace(n->ns[r], make_tun, &l->fd[r]);
    if (l->fd[r] < 0) {
      char *why = g_strdup_printf("cannot make a TUN device (/dev/net/tun): %s",
                                  g_strerror(errno));
      g_test_skip(why);
      g_free(why);
      net_down(n);
      return false;
    }
    g_assert_cmpint(inet_pton(AF_INET, addresses[r], &l->addr[r]), ==, 1);
    if (!net_address(n, r, &err)) g_error("setting up the namespaces: %s", err);
  }
  l->thread = g_thread_new("line", line_run, l);
  return true;
}

static void net_down(net_t *n) {
  if (n->line) line_stop(n->line);
  if (n->up) delete_all((int)getpid());
  for (int r = 0; r < MAX_NS; r++) g_free(n->ns[r]);
  memset(n, 0, sizeof *n);
}

/* Cuts task namespace r off the bridge (its port down: nothing goes through, and nothing tells
 * the endpoints so, as with a pulled cable or a dead switch), or joins it again; on the line,
 * the line drops its packets instead. */
static void net_cut(net_t *n, int r, bool cut) {
  if (n->line) {
    g_atomic_int_set(&n->line->cut[r], cut);
    return;
  }
  char *err = NULL;
  if (!ip(&err, "-n %s link set p%d %s", n->ns[NS_BR], r, cut ? "down" : "up"))
    g_error("%s", err);
}

/* Bytes received on namespace r's eth0 so far. */
static gint64 rx_bytes(net_t *n, int r) {
  char *cmd = g_strdup_printf("ip -n %s -s -j link show eth0", n->ns[r]);
  char *out = NULL;
  int status = 0;
  g_assert_true(g_spawn_command_line_sync(cmd, &out, NULL, &status, NULL));
  JsonParser *p = json_parser_new();
  g_assert_true(json_parser_load_from_data(p, out, -1, NULL));
  JsonObject *link = json_array_get_object_element(json_node_get_array(json_parser_get_root(p)), 0);
  JsonObject *rx = json_object_get_object_member(
      json_object_get_object_member(link, "stats64"), "rx");
  gint64 bytes = json_object_get_int_member(rx, "bytes");
  g_object_unref(p);
  g_free(out);
  g_free(cmd);
  return bytes;
}

/* Whether tc netem works here: a netem qdisc on the loopback of a scratch namespace. */
static bool netem_available(net_t *n) {
  return ip(NULL, "netns exec %s tc qdisc add dev lo root netem delay 1ms", n->ns[NS_C]) &&
         ip(NULL, "netns exec %s tc qdisc del dev lo root", n->ns[NS_C]);
}

/* ---------------------------------------------------------------------------------------------
 * Processes in namespaces (ip netns exec execs the program: the pid is the program's) */

static proc_t spawn_in(const char *ns, const char *cmdline) {
  char *cmd = g_strdup_printf("ip netns exec %s %s", ns, cmdline);
  proc_t p = proc_spawn(cmd, G_SPAWN_SEARCH_PATH);
  g_free(cmd);
  return p;
}

static void stop_proc(proc_t *p) {
  if (p->pid) {
    kill(p->pid, SIGTERM);
    proc_wait_exit(p, PROCESS_TIMEOUT_MS);
  }
  g_string_free(p->log, TRUE);
  p->log = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Exact values across namespaces */

#define RAMP (1 << 20) /* 4 MiB of float32: far above the shared-memory path's 256 KiB floor */

/* The client's half, in a subprocess that first moves into the client namespace (before gRPC
 * starts a thread, so all of them are there): a ramp on task 0 doubled on task 1, and a scalar
 * sum across the two, fetched three times; every element must be exact. */
static void remote_exact_client(void) {
  char *ns = ns_name((int)getppid(), NS_C);
  char *path = g_strdup_printf("/run/netns/%s", ns);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) g_error("entering %s: %s", ns, g_strerror(errno));
  close(fd);
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t n = RAMP;
  weft_tensor_t *ramp = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  float *p = weft_tensor_data(ramp);
  for (int64_t k = 0; k < n; k++) p[k] = (float)k * 0.5f;
  weft_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  weft_output_t c = weft_const(g, "ramp", ramp, &st);
  weft_output_t a = weft_const_float(g, "a", 1.5f, &st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:1/device:CPU:0");
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_output_t b = weft_const_float(g, "b", 2.25f, &st);
  weft_binary(g, "Mul", "doubled", c, two, &st);
  weft_binary(g, "AddV2", "sum", a, b, &st);
  weft_graph_pop_device(g);
  if (st) g_error("%s", weft_status_message(st));
  weft_tensor_unref(ramp);
  weft_session_options_t *o = weft_session_options_new();
  char *target = g_strdup_printf("grpc://%s:%d", addresses[NS_W0], PORT);
  weft_session_options_set_target(o, target);
  weft_session_options_set_operation_timeout_ms(o, PROCESS_TIMEOUT_MS);
  weft_session_t *s = weft_session_new(g, o, &st);
  if (st) g_error("session on %s: %s", target, weft_status_message(st));
  for (int step = 0; step < 3; step++) {
    const char *fetch[2] = {"doubled", "sum"};
    weft_tensor_t *out[2] = {NULL, NULL};
    st = weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0);
    if (st) g_error("step %d: %s", step, weft_status_message(st));
    g_assert_cmpint(weft_tensor_num_elements(out[0]), ==, n);
    const float *d = weft_tensor_data(out[0]);
    for (int64_t k = 0; k < n; k++)
      if (d[k] != (float)k) g_error("step %d: element %" G_GINT64_FORMAT " is %g", step, k, d[k]);
    g_assert_cmpfloat(weft_tensor_get_double(out[1], 0), ==, 3.75);
    weft_tensor_unref(out[0]);
    weft_tensor_unref(out[1]);
  }
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  g_free(target);
  g_free(path);
  g_free(ns);
}

static proc_t start_weftd(net_t *n, int r, int index) {
  char *cmd = g_strdup_printf("%s --cluster worker=%s:%d,%s:%d --job_name worker --task_index %d "
                              "--bind %s --step_timeout_ms %d", WEFTD, addresses[NS_W0], PORT,
                              addresses[NS_W1], PORT, index, addresses[r], PROCESS_TIMEOUT_MS);
  proc_t p = spawn_in(n->ns[r], cmd);
  char *line = proc_read_until(&p, "Started server with target: ", PROCESS_TIMEOUT_MS);
  if (!line) g_error("weftd in %s did not start:\n%s", n->ns[r], p.log->str);
  g_free(line);
  g_free(cmd);
  return p;
}

static void test_remote_exact(void) {
  if (g_test_subprocess()) {
    remote_exact_client();
    return;
  }
  net_t n;
  if (!net_up(&n, 1u << NS_W0 | 1u << NS_W1 | 1u << NS_C)) return;
  proc_t t0 = start_weftd(&n, NS_W0, 0), t1 = start_weftd(&n, NS_W1, 1);
  gint64 rx_before = rx_bytes(&n, NS_W1);
  g_test_trap_subprocess(NULL, (guint64)PROCESS_TIMEOUT_MS * 1000, G_TEST_SUBPROCESS_DEFAULT);
  if (!g_test_trap_has_passed()) g_printerr("%s", t0.log->str);
  g_test_trap_assert_passed();
  /* The ramp crossed the link into task 1 (three steps of 4 MiB), not shared memory: the
   * receiver never made a segment, as the peer's address is not a loopback one. */
  gint64 rx = rx_bytes(&n, NS_W1) - rx_before;
  g_test_message("task 1 received %" G_GINT64_FORMAT " bytes on its link", rx);
  g_assert_cmpint(rx, >=, 3 * (gint64)RAMP * 4);
  g_assert_cmpint(count_shm_segments(t1.pid), ==, 0);
  g_assert_cmpint(count_shm_segments(t0.pid), ==, 0);
  stop_proc(&t0);
  stop_proc(&t1);
  net_down(&n);
}

/* ---------------------------------------------------------------------------------------------
 * Training across namespaces */

static gint64 number_after(const char *text, const char *marker) {
  const char *at = strstr(text, marker);
  g_assert_nonnull(at);
  return g_ascii_strtoll(at + strlen(marker), NULL, 10);
}

/* As in test_training_cluster.c: asynchronous training's bounds for the linear model (y = 2x +
 * 1), which an untrained model misses by 2 and 1 with a loss of 2.33. */
#define ASYNC_PARAM_TOLERANCE 0.25
#define ASYNC_LOSS_LIMIT 0.1

typedef struct cluster {
  proc_t ps, w[2];
  char *dir;
} cluster_t;

static proc_t start_task(net_t *n, int r, const char *job, int index, const char *extra) {
  char *cmd = g_strdup_printf("%s --ps_hosts %s:%d --worker_hosts %s:%d,%s:%d --job_name %s "
                              "--task_index %d --bind %s --progress lines --device CPU %s",
                              WEFT_TRAIN, addresses[NS_PS], PORT, addresses[NS_W0], PORT,
                              addresses[NS_W1], PORT, job, index, addresses[r], extra);
  proc_t p = spawn_in(n->ns[r], cmd);
  g_free(cmd);
  return p;
}

/* 1 ps + 2 workers training the linear model, the chief saving every 50 steps into c->dir. */
static void cluster_start(net_t *n, cluster_t *c, int train_steps) {
  GError *err = NULL;
  c->dir = g_dir_make_tmp("weft-netns-XXXXXX", &err);
  g_assert_no_error(err);
  c->ps = start_task(n, NS_PS, "ps", 0, "");
  char *line = proc_read_until(&c->ps, "Started server with target: ", PROCESS_TIMEOUT_MS);
  if (!line) g_error("the ps did not start:\n%s", c->ps.log->str);
  g_free(line);
  char *common = g_strdup_printf("--model linear --train_steps %d --log_every 10 "
                                 "--step_timeout_ms %d", train_steps, STEP_TIMEOUT_MS);
  char *chief = g_strdup_printf("%s --save_steps 50 --checkpoint_dir %s", common, c->dir);
  c->w[0] = start_task(n, NS_W0, "worker", 0, chief);
  c->w[1] = start_task(n, NS_W1, "worker", 1, common);
  g_free(chief);
  g_free(common);
}

/* Reads worker k's progress until its global step reaches `step`; the step reached. */
static gint64 wait_step(cluster_t *c, int k, gint64 step, int timeout_ms) {
  char *needle = g_strdup_printf("progress worker=%d step=", k);
  for (;;) {
    char *line = proc_read_until(&c->w[k], needle, timeout_ms);
    if (!line) g_error("worker %d did not reach step %" G_GINT64_FORMAT ":\n%s", k, step,
                       c->w[k].log->str);
    gint64 at = number_after(line, "step=");
    g_free(line);
    if (at >= step) {
      g_free(needle);
      return at;
    }
  }
}

/* Reads what worker k printed so far (until it is quiet for 100 ms, at most 300 ms: a worker
 * that is training prints all the time); its latest global step, or `latest` when it printed
 * no progress line. */
static gint64 drain_step(cluster_t *c, int k, gint64 latest) {
  char *needle = g_strdup_printf("progress worker=%d step=", k);
  char *line;
  gint64 until = g_get_monotonic_time() + 300 * 1000;
  while (g_get_monotonic_time() < until && (line = proc_read_until(&c->w[k], needle, 100))) {
    latest = MAX(latest, number_after(line, "step="));
    g_free(line);
  }
  g_free(needle);
  return latest;
}

/* Both workers finish with status 0 and a well-trained model: no wrong value was ever applied. */
static void cluster_finish(cluster_t *c, int train_steps) {
  int rc0 = proc_wait_exit(&c->w[0], PROCESS_TIMEOUT_MS);
  int rc1 = proc_wait_exit(&c->w[1], PROCESS_TIMEOUT_MS);
  if (rc0 || rc1)
    g_error("workers exited %d and %d:\n--- worker 0\n%s--- worker 1\n%s", rc0, rc1,
            c->w[0].log->str, c->w[1].log->str);
  for (int k = 0; k < 2; k++) {
    JsonParser *parser;
    JsonObject *o = proc_final_json(&c->w[k], &parser);
    g_assert_cmpint(json_object_get_int_member(o, "global_step"), >=, train_steps);
    g_assert_cmpfloat(json_object_get_double_member(o, "loss"), <, ASYNC_LOSS_LIMIT);
    g_assert_cmpfloat(fabs(json_object_get_double_member(o, "W") - 2), <, ASYNC_PARAM_TOLERANCE);
    g_assert_cmpfloat(fabs(json_object_get_double_member(o, "b") - 1), <, ASYNC_PARAM_TOLERANCE);
    g_object_unref(parser);
  }
}

static void cluster_stop(cluster_t *c) {
  stop_proc(&c->w[0]);
  stop_proc(&c->w[1]);
  stop_proc(&c->ps);
  char *cmd = g_strdup_printf("rm -rf %s", c->dir);
  g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, NULL, NULL));
  g_free(cmd);
  g_free(c->dir);
}

#define ALL_TASKS (1u << NS_PS | 1u << NS_W0 | 1u << NS_W1 | 1u << NS_C)

#define LINE_DELAY_MS 20
#define LINE_LOSS 0.01
#define PING_COUNT 1000

/* The network of the impaired cases: every task's packets delayed by LINE_DELAY_MS and lost
 * with probability LINE_LOSS on their way out (so a round trip between two tasks takes twice the
 * delay): tc netem on the bridged links where the kernel has sch_netem, else the line. Then,
 * as a precondition, ping from worker 0 to the ps proves it: round trips no shorter than twice
 * the delay, and some but few of PING_COUNT lost (each is lost with about 2%: two crossings). */
static bool net_up_impaired(net_t *n, unsigned which) {
  if (!net_up(n, which)) return false;
  if (netem_available(n)) {
    for (int r = NS_PS; r < MAX_NS; r++) {
      char *err = NULL;
      if ((which & (1u << r)) &&
          !ip(&err, "netns exec %s tc qdisc add dev eth0 root netem delay %dms loss %g%%", n->ns[r],
              LINE_DELAY_MS, LINE_LOSS * 100))
        g_error("%s", err);
    }
    g_test_message("impairment: tc netem on every task's link");
  } else {
    net_down(n);
    if (!net_up_line(n, which, LINE_DELAY_MS, LINE_LOSS)) return false;
    g_test_message("impairment: the line (this kernel has no sch_netem)");
  }
  ping_t p = {.to = addresses[NS_PS], .count = PING_COUNT, .interval_us = 2000};
  in_namespace(n->ns[NS_W0], ping_run, &p);
  g_test_message("ping worker 0 -> ps: %d of %d answered, round trip min %.1f ms, mean %.1f ms",
                 p.received, p.count, p.min_ms, p.avg_ms);
  if (n->line) {
    g_test_message("the line forwarded %d packets, dropped %d and had no route for %d",
                   g_atomic_int_get(&n->line->forwarded), g_atomic_int_get(&n->line->dropped),
                   g_atomic_int_get(&n->line->stray));
  }
  g_assert_cmpint(p.received, <, p.count);
  g_assert_cmpint(p.received, >=, p.count * 9 / 10);
  g_assert_cmpfloat(p.min_ms, >=, 2 * LINE_DELAY_MS - 1);
  return true;
}

/* 20 ms each way on every task's link and 1% loss: slower, but it trains to the same model. */
static void test_train_netem(void) {
  net_t n;
  if (!net_up_impaired(&n, ALL_TASKS)) return;
  cluster_t c;
  cluster_start(&n, &c, 60);
  cluster_finish(&c, 60);
  cluster_stop(&c);
  net_down(&n);
}

/* Worker 1 cut off for longer than the step timeout: worker 0 goes on training meanwhile (its
 * sessions involve the ps and itself only), and worker 1's failed steps are retried until the
 * link is back, when it rejoins and both finish. On the impaired network (20 ms, 1% loss), as
 * a real partition seldom strikes a perfect network; fewer steps, as each takes round trips. */
static void test_worker_partition(void) {
  net_t n;
  if (!net_up_impaired(&n, ALL_TASKS)) return;
  cluster_t c;
  const int steps = 400 / SLOW;
  cluster_start(&n, &c, steps);
  wait_step(&c, 1, 100, PROCESS_TIMEOUT_MS);
  /* From the step it printed last, not 0: on a slow link it may print nothing while draining. */
  gint64 before = drain_step(&c, 0, wait_step(&c, 0, 100, PROCESS_TIMEOUT_MS));
  drain_step(&c, 1, 0);
  net_cut(&n, NS_W1, true);
  g_usleep(PARTITION_MS * 1000);
  /* The cluster survived: the chief's global step moved while worker 1 was away. */
  gint64 during = drain_step(&c, 0, before);
  drain_step(&c, 1, 0);
  net_cut(&n, NS_W1, false);
  g_test_message("worker 0 went from step %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                 " while worker 1 was cut off", before, during);
  g_assert_cmpint(during, >, before);
  /* Worker 1 rejoined: it runs steps again (a progress line of its own after the link came
   * back; the last one at least, should the chief have finished meanwhile). */
  char *line = proc_read_until(&c.w[1], "progress worker=1 step=", PROCESS_TIMEOUT_MS);
  if (!line) g_error("worker 1 did not rejoin:\n%s", c.w[1].log->str);
  g_free(line);
  cluster_finish(&c, steps);
  cluster_stop(&c);
  net_down(&n);
}

/* Waits until the chief's global step reaches `step`; the global step of the latest checkpoint
 * then, at least step - 100 (it saves every 50 steps). */
static gint64 train_past(cluster_t *c, gint64 step) {
  wait_step(c, 0, step, PROCESS_TIMEOUT_MS);
  drain_step(c, 0, 0);
  char *latest = weft_checkpoint_latest(c->dir);
  g_assert_nonnull(latest);
  gint64 saved = number_after(latest, "model.ckpt-");
  g_assert_cmpint(saved, >=, step - 100);
  g_free(latest);
  return saved;
}

/* The ps cut off for longer than the step timeout: every worker's step fails, the monitored
 * sessions recreate theirs once the link is back (the chief restoring the last checkpoint
 * should the ps have lost its variables), and training goes on from no earlier than that
 * checkpoint to a well-trained model. */
static void test_ps_partition(void) {
  net_t n;
  if (!net_up(&n, ALL_TASKS)) return;
  cluster_t c;
  const int steps = 8000 / SLOW;
  cluster_start(&n, &c, steps);
  gint64 saved = train_past(&c, 300);
  net_cut(&n, NS_PS, true);
  g_usleep(PARTITION_MS * 1000);
  net_cut(&n, NS_PS, false);
  cluster_finish(&c, steps);
  const char *rec = strstr(c.w[0].log->str, "worker 0: recovered");
  if (rec) {
    g_assert_cmpint(number_after(rec, "going on from global step "), >=, saved);
  } else {
    /* Its steps that ran past their deadline were run again on the same session: the ps kept
     * its variables, so nothing needed restoring. */
    g_test_message("the chief recreated no session (its steps were retried)");
  }
  cluster_stop(&c);
  net_down(&n);
}

/* Every progress line of worker k in `log` (from the point given) reports a global step of at
 * least `floor`: after a restore, training goes on from the checkpoint, never from 0. */
static void assert_steps_from(const char *log, int k, gint64 floor) {
  char *needle = g_strdup_printf("progress worker=%d step=", k);
  int lines = 0;
  for (const char *at = strstr(log, needle); at; at = strstr(at + 1, needle), lines++)
    g_assert_cmpint(number_after(at, "step="), >=, floor);
  g_test_message("worker %d: %d progress lines after its recovery, none below step %"
                 G_GINT64_FORMAT, k, lines, floor);
  g_free(needle);
}

/* The ps cut off, then killed and started again while still cut off (a ps that died behind a
 * partition: nobody saw it go), then the link heals. The workers' steps fail at their deadline
 * meanwhile and are retried; once the link is back the new ps answers that it is another
 * incarnation (ABORTED), so each monitored session is recreated: the chief restores the last
 * checkpoint into the empty ps, worker 1 waits for the variables, and the global step goes on
 * from the checkpoint's, not from 0, to a well-trained model. On the line, so the ps's old
 * connections are silent, not refused. */
static void test_ps_restarted_behind_partition(void) {
  net_t n;
  if (!net_up_line(&n, ALL_TASKS, 0, 0)) return;
  cluster_t c;
  const int steps = 2000 / SLOW;
  cluster_start(&n, &c, steps);
  gint64 saved = train_past(&c, 200);
  net_cut(&n, NS_PS, true);
  kill(c.ps.pid, SIGKILL);
  proc_wait_exit(&c.ps, PROCESS_TIMEOUT_MS);
  g_string_free(c.ps.log, TRUE);
  c.ps = start_task(&n, NS_PS, "ps", 0, "");
  char *line = proc_read_until(&c.ps, "Started server with target: ", PROCESS_TIMEOUT_MS);
  if (!line) g_error("the ps did not start again:\n%s", c.ps.log->str);
  g_free(line);
  g_usleep(PARTITION_MS * 1000);
  net_cut(&n, NS_PS, false);
  cluster_finish(&c, steps);
  const char *rec = strstr(c.w[0].log->str, "worker 0: recovered");
  if (!rec) g_error("no recovery in the chief's log:\n%s", c.w[0].log->str);
  gint64 restored = number_after(rec, "model.ckpt-");
  gint64 resumed = number_after(rec, "going on from global step ");
  g_test_message("the chief restored model.ckpt-%" G_GINT64_FORMAT " (on disk when the ps was "
                 "cut off: model.ckpt-%" G_GINT64_FORMAT ") and went on from global step %"
                 G_GINT64_FORMAT, restored, saved, resumed);
  g_assert_cmpint(restored, >=, saved);
  g_assert_cmpint(resumed, >=, restored);
  assert_steps_from(rec, 0, restored);
  /* Worker 1 recreated its session too (the new ps's ABORTED reached it) unless it ran no step
   * between the heal and the chief's restore; either way it never went back past it. */
  const char *rec1 = strstr(c.w[1].log->str, "worker 1: recovered");
  if (rec1) {
    g_assert_cmpint(number_after(rec1, "going on from global step "), >=, restored);
    assert_steps_from(rec1, 1, restored);
  }
  JsonParser *parser;
  JsonObject *o = proc_final_json(&c.w[0], &parser);
  g_assert_cmpint(json_object_get_int_member(o, "recoveries"), >=, 1);
  g_object_unref(parser);
  cluster_stop(&c);
  net_down(&n);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  if (!g_test_subprocess()) start_guardian();
  weft_plugins_load_default();
  g_test_add_func("/netns/remote_exact", test_remote_exact);
  g_test_add_func("/netns/train_netem", test_train_netem);
  g_test_add_func("/netns/worker_partition", test_worker_partition);
  g_test_add_func("/netns/ps_partition", test_ps_partition);
  g_test_add_func("/netns/ps_restarted_behind_partition", test_ps_restarted_behind_partition);
  return g_test_run();
}
