/* The netns_transfer rows of `weft bench`: the transfer rows' graph (a Const on task 0, Identity
 * then Size on task 1) with the two weftd tasks and the measuring client each in a network
 * namespace of its own, joined by veth pairs on a bridge, so the bytes cross a real network
 * stack and never the loopback-only shared-memory path; beside a raw gRPC unary call carrying
 * the same bytes between the same two namespaces (a client in task 0's namespace, an echo
 * service in task 1's).
 *
 * gRPC makes its sockets on threads of its own, so nothing in the bench process can move into a
 * namespace: every side is a process started under `ip netns exec` — the weftd tasks, and this
 * very binary in a hidden mode (`weft bench --netns-child weft|raw|echo ...`) for the measuring
 * clients and the echo service. A measuring child prints its figures as one JSON line, which the
 * parent reads. The namespaces are named after the bench's pid (wb<PID>-br, -w0, -w1, -c), their
 * addresses (10.214.0.0/24) exist only inside them, and a guardian process started before them
 * deletes them should the bench die (Ctrl-C included); the children die with the bench
 * (PR_SET_PDEATHSIG). Where namespaces cannot be made the rows are skipped, saying why. */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <json-glib/json-glib.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_grpc.h"

#define NETNS_PREFIX "wb"
#define TASK_PORT 2222 /* every task has a namespace, hence ports, of its own */
#define ECHO_PORT 2223
#define START_TIMEOUT_MS 20000    /* a weftd or echo child must be serving by then */
#define MEASURE_TIMEOUT_MS 120000 /* a measuring child must print its figures by then */
#define READY BENCH_ECHO_READY

/* The namespaces, in a fixed list so that the guardian knows every name without being told. */
enum { NS_BR, NS_W0, NS_W1, NS_C, NS_COUNT };
static const char *const roles[NS_COUNT] = {"br", "w0", "w1", "c"};
static const char *const addresses[NS_COUNT] = {NULL, "10.214.0.1", "10.214.0.2", "10.214.0.9"};

typedef struct netns_size {
  const char *name;      /* netns_transfer/NAME: the tensor transfer alone */
  const char *step_name; /* netns_step/NAME: the whole step around it */
  int64_t bytes;
  double target; /* issue 22: the transfer's GB/s at least this times the raw call's; 0: report */
} netns_size_t;

/* The loopback transfer rows' smallest size, and a small message beside it; 64 MiB in full
 * runs only. */
static const netns_size_t sizes[] = {
    {"netns_transfer/1KiB", "netns_step/1KiB", 1024, 0.0},
    {"netns_transfer/1MiB", "netns_step/1MiB", (int64_t)1 << 20, 1.0},
    {"netns_transfer/64MiB", "netns_step/64MiB", (int64_t)64 << 20, 1.5},
};

/* ---------------------------------------------------------------------------------------------
 * The network */

typedef struct netns {
  char *ip; /* path of `ip` */
  char *ns[NS_COUNT];
  bool made;        /* some namespace may exist: delete them at the end */
  pid_t guardian;   /* 0: none */
  int guardian_fd;  /* write end of the guardian's pipe; -1: none */
} netns_t;

/* Runs `ip ARGS` (words separated by spaces); NULL on exit status 0. */
static weft_status_t *run_ip(const netns_t *n, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static weft_status_t *run_ip(const netns_t *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *args = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char **words = g_strsplit(args, " ", -1);
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, n->ip);
  for (char **w = words; *w; w++) g_ptr_array_add(argv, *w);
  g_ptr_array_add(argv, NULL);
  char *out = NULL, *err = NULL;
  int status = -1;
  GError *gerr = NULL;
  weft_status_t *st = NULL;
  if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                    &status, &gerr)) {
    st = weft_status_new(WEFT_UNAVAILABLE, "'ip %s': %s", args, gerr->message);
    g_error_free(gerr);
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    st = weft_status_new(WEFT_UNAVAILABLE, "'ip %s': %s", args, g_strstrip(err));
  }
  g_free(out);
  g_free(err);
  g_ptr_array_free(argv, TRUE);
  g_strfreev(words);
  g_free(args);
  return st;
}

static void delete_all(const netns_t *n) {
  for (int k = 0; k < NS_COUNT; k++) {
    char *path = g_strdup_printf("/run/netns/%s", n->ns[k]);
    if (g_file_test(path, G_FILE_TEST_EXISTS))
      weft_status_free(run_ip(n, "netns del %s", n->ns[k]));
    g_free(path);
  }
}

/* A shell, in a session of its own (away from the terminal's Ctrl-C), that deletes the
 * namespaces once this process is gone however it ended: it waits for the end of a pipe whose
 * only writer is this process (close-on-exec, so no child keeps it open). */
static weft_status_t *start_guardian(netns_t *n) {
  GString *script = g_string_new("cat >/dev/null;");
  for (int k = 0; k < NS_COUNT; k++)
    g_string_append_printf(script, " '%s' netns del %s 2>/dev/null;", n->ip, n->ns[k]);
  g_string_append(script, " exit 0");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    g_string_free(script, TRUE);
    return weft_status_new(WEFT_INTERNAL, "cannot make the guardian's pipe: %s",
                           g_strerror(errno));
  }
  pid_t pid = fork();
  if (pid == 0) {
    /* Only async-signal-safe calls between fork and exec: this process has threads. */
    setsid();
    dup2(fds[0], STDIN_FILENO);
    execl("/bin/sh", "sh", "-c", script->str, (char *)NULL);
    _exit(127);
  }
  int fork_errno = errno;
  close(fds[0]);
  g_string_free(script, TRUE);
  if (pid < 0) {
    close(fds[1]);
    return weft_status_new(WEFT_INTERNAL, "cannot start the guardian: %s",
                           g_strerror(fork_errno));
  }
  n->guardian = pid;
  n->guardian_fd = fds[1];
  return NULL;
}

/* Why namespaces cannot be made here, or NULL (g_free). */
static char *netns_unusable(void) {
  if (geteuid() != 0) return g_strdup("not root: network namespaces need CAP_SYS_ADMIN");
  char *ip = g_find_program_in_path("ip");
  if (!ip) return g_strdup("`ip` (iproute2) not found in PATH");
  g_free(ip);
  return NULL;
}

/* The bridge namespace, and w0, w1 and c each with eth0 on the bridge. *skip is set (and NULL
 * returned) when the first `ip netns add` fails: the machine cannot make namespaces. */
static weft_status_t *netns_up(netns_t *n, char **skip) {
  memset(n, 0, sizeof *n);
  n->guardian_fd = -1;
  n->ip = g_find_program_in_path("ip");
  for (int k = 0; k < NS_COUNT; k++)
    n->ns[k] = g_strdup_printf(NETNS_PREFIX "%d-%s", (int)getpid(), roles[k]);
  weft_status_t *st = start_guardian(n);
  if (st) return st;
  delete_all(n); /* what an earlier bench of the same pid may have left */
  st = run_ip(n, "netns add %s", n->ns[NS_BR]);
  if (st) {
    *skip = g_strdup_printf("cannot make a network namespace: %s", weft_status_message(st));
    weft_status_free(st);
    return NULL;
  }
  n->made = true;
  st = run_ip(n, "-n %s link add br0 type bridge", n->ns[NS_BR]);
  if (!st) st = run_ip(n, "-n %s link set br0 up", n->ns[NS_BR]);
  for (int k = NS_W0; k < NS_COUNT && !st; k++) {
    st = run_ip(n, "netns add %s", n->ns[k]);
    if (!st)
      st = run_ip(n, "-n %s link add p%d type veth peer name eth0 netns %s", n->ns[NS_BR], k,
                  n->ns[k]);
    if (!st) st = run_ip(n, "-n %s link set p%d master br0 up", n->ns[NS_BR], k);
    if (!st) st = run_ip(n, "-n %s link set lo up", n->ns[k]);
    if (!st) st = run_ip(n, "-n %s addr add %s/24 dev eth0", n->ns[k], addresses[k]);
    if (!st) st = run_ip(n, "-n %s link set eth0 up", n->ns[k]);
  }
  return st;
}

static void netns_down(netns_t *n) {
  if (n->made) delete_all(n);
  if (n->guardian_fd >= 0) close(n->guardian_fd); /* the guardian finds nothing left to do */
  if (n->guardian > 0) {
    while (waitpid(n->guardian, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  for (int k = 0; k < NS_COUNT; k++) g_free(n->ns[k]);
  g_free(n->ip);
  memset(n, 0, sizeof *n);
}

/* Bytes received so far on eth0 of namespace k (its own sysfs, as `ip netns exec` mounts it);
 * -1 when they cannot be read. */
static gint64 rx_bytes(const netns_t *n, int k) {
  char *argv[] = {n->ip, (char *)"netns", (char *)"exec", n->ns[k], (char *)"cat",
                  (char *)"/sys/class/net/eth0/statistics/rx_bytes", NULL};
  char *out = NULL;
  int status = -1;
  gint64 bytes = -1;
  if (g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                   NULL, &out, NULL, &status, NULL) &&
      WIFEXITED(status) && WEXITSTATUS(status) == 0)
    bytes = g_ascii_strtoll(out, NULL, 10);
  g_free(out);
  return bytes;
}

/* How many weft shared-memory segments (memfds "weft-...") process pid holds. */
static int count_segments(pid_t pid) {
  char *dir = g_strdup_printf("/proc/%d/fd", (int)pid);
  GDir *d = g_dir_open(dir, 0, NULL);
  int found = 0;
  const char *entry;
  while (d && (entry = g_dir_read_name(d))) {
    char *path = g_build_filename(dir, entry, NULL);
    char *target = g_file_read_link(path, NULL);
    found += target && g_str_has_prefix(target, "/memfd:weft-");
    g_free(target);
    g_free(path);
  }
  if (d) g_dir_close(d);
  g_free(dir);
  return found;
}

/* ---------------------------------------------------------------------------------------------
 * Measuring children */

typedef struct side {
  bench_stats_t stats;
  int64_t count; /* transfers (steps) or raw calls it made, the untimed ones included */
  gint64 rx;     /* bytes task 1's namespace received meanwhile */
} side_t;

/* Runs `weft bench --netns-child MODE ...` in namespace ns and reads its figures. */
static weft_status_t *measure_in(const netns_t *n, int ns, const char *const *args, side_t *out) {
  gint64 before = rx_bytes(n, NS_W1);
  bench_child_t c;
  weft_status_t *st = bench_child_start(n->ns[ns], "weft", args, READY, MEASURE_TIMEOUT_MS, &c,
                                        NULL);
  if (st) return st;
  JsonParser *p = json_parser_new();
  GError *gerr = NULL;
  if (!json_parser_load_from_data(p, c.target, -1, &gerr) ||
      !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
    st = weft_status_new(WEFT_INTERNAL, "the measuring child printed '%s': %s", c.target,
                         gerr ? gerr->message : "not a JSON object");
    g_clear_error(&gerr);
  } else {
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    if (json_object_has_member(o, "error")) {
      st = weft_status_new(WEFT_UNAVAILABLE, "in namespace %s: %s", n->ns[ns],
                           json_object_get_string_member(o, "error"));
    } else {
      out->stats.median = json_object_get_double_member(o, "median");
      out->stats.min = json_object_get_double_member(o, "min");
      out->stats.max = json_object_get_double_member(o, "max");
      out->stats.runs = (int)json_object_get_int_member(o, "runs");
      out->stats.calls_per_run = (int)json_object_get_int_member(o, "calls_per_run");
      out->count = json_object_get_int_member(o, "count");
    }
  }
  g_object_unref(p);
  /* Let it finish on its own (closing its session on the master) before stopping it: its
   * stdout ends when it exits. */
  double until = bench_now() + 10.0;
  char buf[256];
  for (;;) {
    struct pollfd pf = {c.out_fd, POLLIN, 0};
    int left_ms = (int)((until - bench_now()) * 1e3);
    if (left_ms <= 0) break;
    int ready = poll(&pf, 1, left_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t got = read(c.out_fd, buf, sizeof buf);
    if (got == 0 || (got < 0 && errno != EINTR)) break;
  }
  bench_child_stop(&c);
  gint64 after = rx_bytes(n, NS_W1);
  out->rx = before >= 0 && after >= 0 ? after - before : -1;
  return st;
}

/* The bytes must have crossed task 1's link: at least `bytes` received per transfer. */
static weft_status_t *check_link(const side_t *s, int64_t bytes, const char *what) {
  if (s->rx < 0) return weft_status_new(WEFT_INTERNAL, "cannot read eth0's rx_bytes");
  if (s->rx < s->count * bytes)
    return weft_status_new(WEFT_INTERNAL, "%s: task 1's link received %" G_GINT64_FORMAT
                           " bytes for %" G_GINT64_FORMAT " transfers of %" G_GINT64_FORMAT
                           ": the bytes did not cross the network", what, s->rx, s->count, bytes);
  return NULL;
}

/* Rounds of a row: each runs the Weft child and the raw child once, in alternating order (W B,
 * B W, W B, ...), so that the load of a shared machine, which changes over seconds, falls on
 * both sides alike; one side measured after the other gave ratios from 0.5x to 2x for one build
 * at 1 MiB. Seven rounds: on a busy machine single rounds ranged from 0.3x to 4x, and the median
 * of three still moved by half from one run to the next. */
#define ROUNDS 7

/* The 1-minute load average (/proc/loadavg), or -1: the note reports it beside the figures. */
static double load_average(void) {
  char *text = NULL;
  double load = -1;
  if (g_file_get_contents("/proc/loadavg", &text, NULL, NULL)) load = g_ascii_strtod(text, NULL);
  g_free(text);
  return load;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n-1] (sorts v). */
static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], compare_doubles);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One side's figures over the rounds: the median of the rounds' medians, the extremes of all. */
static bench_stats_t over_rounds(const side_t *rounds, int n) {
  double medians[ROUNDS];
  bench_stats_t s = rounds[0].stats;
  s.runs = 0;
  for (int k = 0; k < n; k++) {
    medians[k] = rounds[k].stats.median;
    s.min = MIN(s.min, rounds[k].stats.min);
    s.max = MAX(s.max, rounds[k].stats.max);
    s.runs += rounds[k].stats.runs;
  }
  s.median = median_of(medians, n);
  return s;
}

/* Seconds per transfer to GB/s (the slowest transfer is the least throughput). */
static bench_stats_t to_throughput(bench_stats_t seconds, int64_t bytes) {
  double gb = (double)bytes * 1e-9;
  bench_stats_t s = seconds;
  s.median = gb / seconds.median, s.min = gb / seconds.max, s.max = gb / seconds.min;
  return s;
}

/* Task 1's own timing of each tensor it received from task 0 (WEFT_BULK_TRACE: bytes, parts,
 * microseconds from its request to the last byte read), read from where the last call stopped:
 * the tensor transfer alone, without the step around it. Appends the times of `bytes`-sized
 * tensors to `us` in the order they came. */
typedef struct bulk_trace {
  char *path; /* NULL: not traced */
  gsize read; /* bytes of it read so far */
} bulk_trace_t;

static void read_bulk_trace(bulk_trace_t *t, int64_t bytes, GArray *us) {
  char *text = NULL;
  gsize len = 0;
  if (!t->path || !g_file_get_contents(t->path, &text, &len, NULL)) return;
  if (len > t->read) {
    gchar **lines = g_strsplit(text + t->read, "\n", -1);
    for (gchar **l = lines; *l; l++) {
      int64_t b = 0, micros = 0;
      int parts = 0;
      if (sscanf(*l, "%" SCNd64 " %d %" SCNd64, &b, &parts, &micros) == 3 && b == bytes &&
          micros > 0) {
        double v = (double)micros;
        g_array_append_val(us, v);
      }
    }
    g_strfreev(lines);
    t->read = len;
  }
  g_free(text);
}

/* The transfers of one Weft round as that round's child timed its steps: the child reports runs
 * of calls_per_run x repeat steps each, after untimed warm-up steps, so the last runs x
 * calls_per_run x repeat transfers of task 1's trace are the timed ones, and each run's figure is
 * their mean (seconds), as the raw child's runs are means over their calls. False when the
 * trace holds less than one run. */
static bool transfer_side(const GArray *us, const side_t *step, int repeat, side_t *out) {
  int per_run = MAX(step->stats.calls_per_run, 1) * repeat;
  int n_runs = MIN(step->stats.runs, (int)us->len / per_run);
  if (n_runs < 1) return false;
  double *runs = g_new(double, n_runs);
  int first = (int)us->len - n_runs * per_run;
  for (int k = 0; k < n_runs; k++) {
    double sum = 0;
    for (int j = 0; j < per_run; j++) sum += g_array_index(us, double, first + k * per_run + j);
    runs[k] = sum / per_run * 1e-6;
  }
  memset(out, 0, sizeof *out);
  out->stats.runs = n_runs;
  out->stats.calls_per_run = step->stats.calls_per_run;
  out->stats.min = runs[0], out->stats.max = runs[0];
  for (int k = 1; k < n_runs; k++) {
    out->stats.min = MIN(out->stats.min, runs[k]);
    out->stats.max = MAX(out->stats.max, runs[k]);
  }
  out->stats.median = median_of(runs, n_runs);
  out->count = us->len;
  g_free(runs);
  return true;
}

/* A row's figures over its rounds against the raw call's: the GB/s of each side (medians of the
 * rounds' medians), each round's ratio in `ratios` and their median in *mid. */
static void compare_rounds(const side_t *weft, const side_t *base, int rounds, int64_t bytes,
                           bench_stats_t *w, bench_stats_t *b, GString *ratios, double *mid) {
  double round_ratios[ROUNDS];
  for (int k = 0; k < rounds; k++) {
    round_ratios[k] = weft[k].stats.median > 0 ? base[k].stats.median / weft[k].stats.median
                                               : 0.0;
    g_string_append_printf(ratios, "%s%.2f", k ? " / " : "", round_ratios[k]);
  }
  *w = to_throughput(over_rounds(weft, rounds), bytes);
  *b = to_throughput(over_rounds(base, rounds), bytes);
  *mid = median_of(round_ratios, rounds);
}

static void measure_size(const bench_options_t *o, bench_report_t *r, const netns_t *n,
                         const bench_child_t tasks[2], bulk_trace_t *trace,
                         const netns_size_t *size) {
  /* As the loopback transfer rows: small transfers timed over several steps per repetition. */
  int repeat = size->bytes <= ((int64_t)4 << 20) ? (o->quick ? 4 : 16) : 1;
  int runs = size->bytes >= ((int64_t)64 << 20) && o->runs > 5 ? 5 : o->runs;
  int rounds = o->quick ? 2 : ROUNDS;
  char bytes_s[32], repeat_s[16], runs_s[16], warmup_s[16];
  g_snprintf(bytes_s, sizeof bytes_s, "%" G_GINT64_FORMAT, size->bytes);
  g_snprintf(repeat_s, sizeof repeat_s, "%d", repeat);
  g_snprintf(runs_s, sizeof runs_s, "%d", runs);
  g_snprintf(warmup_s, sizeof warmup_s, "%d", o->warmup);
  char *target = g_strdup_printf("grpc://%s:%d", addresses[NS_W0], TASK_PORT);
  char *echo = g_strdup_printf("%s:%d", addresses[NS_W1], ECHO_PORT);
  const char *weft_args[] = {"bench", "--netns-child", "weft", "--target", target, "--bytes",
                             bytes_s, "--repeat", repeat_s, "--runs", runs_s, "--warmup",
                             warmup_s, NULL};
  const char *raw_args[] = {"bench", "--netns-child", "raw", "--target", echo, "--bytes",
                            bytes_s, "--repeat", repeat_s, "--runs", runs_s, "--warmup",
                            warmup_s, NULL};
  side_t weft[ROUNDS], xfer[ROUNDS], base[ROUNDS];
  memset(weft, 0, sizeof weft);
  memset(xfer, 0, sizeof xfer);
  memset(base, 0, sizeof base);
  weft_status_t *st = NULL;
  bool traced = true;
  double load_before = load_average();
  for (int k = 0; k < rounds && !st; k++) {
    for (int half = 0; half < 2 && !st; half++) {
      bool weft_now = (half == 0) == (k % 2 == 0);
      if (weft_now) {
        GArray *us = g_array_new(FALSE, FALSE, sizeof(double));
        read_bulk_trace(trace, -1, us); /* skips what came before this round */
        st = measure_in(n, NS_C, weft_args, &weft[k]);
        if (!st) read_bulk_trace(trace, size->bytes, us);
        traced = traced && !st && transfer_side(us, &weft[k], repeat, &xfer[k]);
        g_array_free(us, TRUE);
        if (!st) st = check_link(&weft[k], size->bytes, "weft");
        int segments = 0;
        for (int t = 0; t < 2 && !st; t++) segments += count_segments(tasks[t].pid);
        if (!st && segments)
          st = weft_status_new(WEFT_INTERNAL, "the tasks hold %d shared-memory segments across "
                               "namespaces", segments);
      } else {
        st = measure_in(n, NS_W0, raw_args, &base[k]);
        if (!st) st = check_link(&base[k], size->bytes, "raw call");
      }
    }
  }
  double load_after = load_average();
  if (st) {
    if (bench_selected(o, size->name))
      bench_add_failure(r, size->name,
                        weft_status_new(weft_status_code(st), "%s", weft_status_message(st)));
    if (bench_selected(o, size->step_name)) bench_add_failure(r, size->step_name, st);
    else weft_status_free(st);
    g_free(target);
    g_free(echo);
    return;
  }
  side_t wsum = {{0}, 0, 0}, bsum = {{0}, 0, 0};
  for (int k = 0; k < rounds; k++) {
    wsum.count += weft[k].count, wsum.rx += weft[k].rx;
    bsum.count += base[k].count, bsum.rx += base[k].rx;
  }
  char *params = g_strdup_printf(
      "bytes=%" G_GINT64_FORMAT " float32; Const on /job:worker/task:0 (weftd in %s), "
      "Identity+Size on task 1 (weftd in %s), client in %s: veth pairs on a bridge, no shared "
      "memory (0 segments; task 1's eth0 received %" G_GINT64_FORMAT " bytes for %"
      G_GINT64_FORMAT " transfers); %d transfers (baseline: calls) per repetition; %d rounds, "
      "each a Weft child and a raw child in alternating order (medians of the rounds' "
      "medians); baseline: raw calls from %s to an echo child in %s (%" G_GINT64_FORMAT
      " bytes for %" G_GINT64_FORMAT " calls)", size->bytes, n->ns[NS_W0], n->ns[NS_W1],
      n->ns[NS_C], wsum.rx, wsum.count, repeat, rounds, n->ns[NS_W0], n->ns[NS_W1], bsum.rx,
      bsum.count);
  bench_stats_t ws, bs, wx, bx;
  double step_mid = 0, xfer_mid = 0;
  GString *step_ratios = g_string_new(NULL), *xfer_ratios = g_string_new(NULL);
  compare_rounds(weft, base, rounds, size->bytes, &ws, &bs, step_ratios, &step_mid);
  if (traced) compare_rounds(xfer, base, rounds, size->bytes, &wx, &bx, xfer_ratios, &xfer_mid);
  double step_ratio = bs.median > 0 ? ws.median / bs.median : 0.0;
  if (bench_selected(o, size->name) && !traced) {
    bench_add_failure(r, size->name,
                      weft_status_new(WEFT_INTERNAL, "task 1 traced fewer transfers of %"
                                      G_GINT64_FORMAT " bytes than its steps made "
                                      "(WEFT_BULK_TRACE): the transfer alone is not known",
                                      size->bytes));
  } else if (bench_selected(o, size->name)) {
    char *what = size->target > 0 ? g_strdup_printf("target >= %.1fx the raw call", size->target)
                                  : g_strdup("report");
    char *note = g_strdup_printf(
        "%s: the tensor transfer alone, timed by task 1 inside each step (WEFT_BULK_TRACE: its "
        "request to the last byte read, each run's mean over its steps), against the raw call "
        "across the same namespaces (%.2fx; rounds %s, their median %.2fx; load average %.1f "
        "to %.1f); the whole step around it: %.3g GB/s, %.2fx (%s)", what,
        bx.median > 0 ? wx.median / bx.median : 0.0, xfer_ratios->str, xfer_mid, load_before,
        load_after, ws.median, step_ratio, size->step_name);
    bench_add_row(r, size->name, params, "GB/s", true, &wx, &bx, "raw gRPC unary call", note);
    if (size->target > 0) bench_set_target_ratio(r, size->target);
    g_free(what);
    g_free(note);
  }
  if (bench_selected(o, size->step_name)) {
    /* The step is a remote step (RunStep from the client in its own namespace to task 0's
     * master, answered back: remote_step/scalar's target) with a RunGraph round trip to task 1
     * and the transfer inside it: four gRPC hops more than the one raw call. */
    char *note = g_strdup_printf(
        "report: the whole step (RunStep to task 0's master, RunGraph to task 1, the transfer, "
        "both answers) against the raw call across the same namespaces (%.2fx; rounds %s, "
        "their median %.2fx; load average %.1f to %.1f)", step_ratio, step_ratios->str,
        step_mid, load_before, load_after);
    bench_add_row(r, size->step_name, params, "GB/s", true, &ws, &bs, "raw gRPC unary call",
                  note);
    g_free(note);
  }
  g_string_free(step_ratios, TRUE);
  g_string_free(xfer_ratios, TRUE);
  g_free(params);
  g_free(target);
  g_free(echo);
}

void bench_run_netns(const bench_options_t *o, bench_report_t *r) {
  int count = o->quick ? 2 : 3;
  bool any = false;
  for (int k = 0; k < count; k++)
    any = any || bench_selected(o, sizes[k].name) || bench_selected(o, sizes[k].step_name);
  if (!any) return;
  char *skip = netns_unusable();
  netns_t n;
  memset(&n, 0, sizeof n);
  n.guardian_fd = -1;
  weft_status_t *st = skip ? NULL : netns_up(&n, &skip);
  bench_child_t tasks[2] = {{0, -1, -1, NULL}, {0, -1, -1, NULL}};
  bench_child_t echo = {0, -1, -1, NULL};
  bulk_trace_t trace = {NULL, 0};
  if (!st && !skip) {
    /* Task 1 (the receiver) traces its bulk transfers into a file of the bench's own. */
    char *tpath = g_build_filename(g_get_tmp_dir(), "weft-bench-bulk-XXXXXX", NULL);
    int tfd = g_mkstemp(tpath);
    if (tfd >= 0) {
      close(tfd);
      trace.path = tpath;
    } else {
      g_free(tpath);
    }
  }
  char *trace_env = trace.path ? g_strdup_printf("WEFT_BULK_TRACE=%s", trace.path) : NULL;
  if (!st && !skip) {
    char *cluster = g_strdup_printf("worker=%s:%d,%s:%d", addresses[NS_W0], TASK_PORT,
                                    addresses[NS_W1], TASK_PORT);
    for (int k = 0; k < 2 && !st; k++) {
      char index[16];
      g_snprintf(index, sizeof index, "%d", k);
      const char *args[] = {"--cluster", cluster, "--job_name", "worker", "--task_index", index,
                            "--bind", addresses[NS_W0 + k], NULL};
      const char *env[] = {k == 1 ? trace_env : NULL, NULL};
      st = bench_child_start_env(n.ns[NS_W0 + k], "weftd", args, env,
                                 "Started server with target: ", START_TIMEOUT_MS, &tasks[k],
                                 NULL);
    }
    g_free(cluster);
    char *listen = g_strdup_printf("%s:%d", addresses[NS_W1], ECHO_PORT);
    const char *echo_args[] = {"bench", "--netns-child", "echo", "--listen", listen, NULL};
    if (!st)
      st = bench_child_start(n.ns[NS_W1], "weft", echo_args, READY, START_TIMEOUT_MS, &echo,
                             NULL);
    g_free(listen);
  }
  for (int k = 0; k < count; k++) {
    const char *names[2] = {sizes[k].name, sizes[k].step_name};
    if (!bench_selected(o, names[0]) && !bench_selected(o, names[1])) continue;
    if (!skip && !st) {
      measure_size(o, r, &n, tasks, &trace, &sizes[k]);
      continue;
    }
    for (int j = 0; j < 2; j++) {
      if (!bench_selected(o, names[j])) continue;
      if (skip) bench_add_skip(r, names[j], skip);
      else
        bench_add_failure(r, names[j],
                          weft_status_new(weft_status_code(st), "%s", weft_status_message(st)));
    }
  }
  bench_child_stop(&echo);
  bench_child_stop(&tasks[0]);
  bench_child_stop(&tasks[1]);
  netns_down(&n);
  if (trace.path) unlink(trace.path);
  g_free(trace.path);
  g_free(trace_env);
  weft_status_free(st);
  g_free(skip);
}

/* ---------------------------------------------------------------------------------------------
 * The hidden modes of `weft bench --netns-child`, run in a namespace by the above */

/* Prints the one line the parent reads: READY and a JSON object (figures, or "error"). */
static int child_report(JsonBuilder *b) {
  JsonGenerator *g = json_generator_new();
  JsonNode *root = json_builder_get_root(b);
  json_generator_set_root(g, root);
  char *text = json_generator_to_data(g, NULL);
  printf(READY "%s\n", text);
  fflush(stdout);
  g_free(text);
  json_node_unref(root);
  g_object_unref(g);
  g_object_unref(b);
  return 0;
}

static int child_error(weft_status_t *st) {
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "error");
  json_builder_add_string_value(b, weft_status_message(st));
  json_builder_end_object(b);
  weft_status_free(st);
  child_report(b);
  return 1;
}

int bench_netns_child_main(int argc, char **argv) {
  char *mode = NULL, *target = NULL, *listen = NULL, *reply_kind = NULL;
  gint64 bytes = 0;
  int repeat = 1, runs = 3, warmup = 1;
  GOptionEntry entries[] = {
      {"netns-child", 0, 0, G_OPTION_ARG_STRING, &mode, "weft, raw or echo", "MODE"},
      {"target", 0, 0, G_OPTION_ARG_STRING, &target, "grpc://HOST:PORT or HOST:PORT", "T"},
      {"listen", 0, 0, G_OPTION_ARG_STRING, &listen, "HOST:PORT of the echo service", "A"},
      {"reply", 0, 0, G_OPTION_ARG_STRING, &reply_kind,
       "the echo service's answer: raw (8 bytes, the default) or run_step (RunStep's frame)",
       "KIND"},
      {"bytes", 0, 0, G_OPTION_ARG_INT64, &bytes, "bytes per transfer", "N"},
      {"repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "transfers per timed repetition", "N"},
      {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed repetitions", "N"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "untimed repetitions", "N"},
      {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  GOptionContext *ctx = g_option_context_new("- internal: one side of a netns_transfer row");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *gerr = NULL;
  weft_status_t *st = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &gerr)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s", gerr->message);
    g_error_free(gerr);
  } else if (reply_kind && strcmp(reply_kind, "raw") != 0 && strcmp(reply_kind, "run_step") != 0) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "--reply is raw or run_step, not '%s'",
                         reply_kind);
  } else if (!mode || (strcmp(mode, "echo") == 0 ? !listen
                                                   : (!target || bytes <= 0 || repeat < 1 ||
                                                      runs < 1 || warmup < 0))) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "--netns-child needs a mode and, for echo, "
                         "--listen; otherwise --target, --bytes, --repeat, --runs, --warmup");
  }
  g_option_context_free(ctx);
  int rc = 0;
  bench_options_t o = {.device = "/device:CPU:0", .warmup = warmup, .runs = runs, .threads = 1};
  bench_stats_t stats = {0};
  int64_t count = 0;
  if (st) {
    rc = child_error(st);
  } else if (strcmp(mode, "echo") == 0) {
    echo_server_t e;
    /* The transfer rows' echo gathers each request into a buffer it keeps, as Weft's receiver
     * does; remote_step's answers RunStep's frame and reads nothing, as its old thread did. */
    bool run_step = reply_kind && strcmp(reply_kind, "run_step") == 0;
    grpc_byte_buffer *request = NULL, *reply = NULL;
    if (run_step) st = bench_run_step_frames(&request, &reply);
    else reply = bench_raw_reply();
    if (request) grpc_byte_buffer_destroy(request);
    if (!st) st = bench_echo_start(&e, listen, reply, !run_step);
    if (st) {
      rc = child_error(st);
    } else {
      printf(READY "serving %s (port %d)\n", listen, e.port);
      fflush(stdout);
      /* Until the parent stops it (SIGTERM) or dies (PR_SET_PDEATHSIG). */
      for (;;) pause();
    }
  } else if (strcmp(mode, "weft") == 0) {
    weft_plugins_load_default();
    transfer_t t;
    st = bench_transfer_open(target, bytes / (int64_t)sizeof(float), repeat, &t);
    if (!st) {
      bench_measure(&o, bench_run_transfer, &t, 1.0, false, &stats, &st);
      count = t.steps;
      bench_transfer_close(&t);
    }
  } else if (strcmp(mode, "raw") == 0) {
    raw_client_t c;
    bench_raw_client_open(&c, target, bench_raw_payload(bytes), repeat);
    bench_measure(&o, bench_run_raw_calls, &c, 1.0, false, &stats, &st);
    count = c.calls;
    bench_raw_client_close(&c);
  } else {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "unknown --netns-child mode '%s'", mode);
  }
  if (rc == 0 && st) {
    rc = child_error(st);
  } else if (rc == 0) {
    /* Seconds per transfer; the parent turns them into GB/s. */
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "median");
    json_builder_add_double_value(b, stats.median);
    json_builder_set_member_name(b, "min");
    json_builder_add_double_value(b, stats.min);
    json_builder_set_member_name(b, "max");
    json_builder_add_double_value(b, stats.max);
    json_builder_set_member_name(b, "runs");
    json_builder_add_int_value(b, stats.runs);
    json_builder_set_member_name(b, "calls_per_run");
    json_builder_add_int_value(b, stats.calls_per_run);
    json_builder_set_member_name(b, "count");
    json_builder_add_int_value(b, count);
    json_builder_end_object(b);
    child_report(b);
  }
  g_free(mode);
  g_free(target);
  g_free(listen);
  g_free(reply_kind);
  return rc;
}
