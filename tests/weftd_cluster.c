/* Real weftd processes for tests (see weftd_cluster.h). */
#include "weftd_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <zlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process_util.h"

#define STARTED "Started server with target: "
/* weftd's exit status for a runtime failure, such as a port it cannot listen on. */
#define WEFTD_EXIT_RUNTIME 1
#define CLUSTER_ATTEMPTS 3

bool weftd_available(void) {
  if (g_file_test(WEFTD_PATH, G_FILE_TEST_IS_EXECUTABLE)) return true;
  g_test_skip("weftd not built at " WEFTD_PATH);
  return false;
}

/* Reaps pid, waiting at most timeout_s before SIGKILL; its wait status. */
/* Where each thread of a process that would not exit is (its name, state and kernel wait
 * channel), printed before it is killed: a CI log then says what it waited for. */
static void describe_threads(GPid pid) {
  char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *tid;
  fprintf(stderr, "weftd %d did not exit in time; its threads:\n", (int)pid);
  while (d && (tid = g_dir_read_name(d))) {
    char *comm = NULL, *wchan = NULL, *stat = NULL;
    char *path = g_strdup_printf("%s/%s/comm", dir, tid);
    g_file_get_contents(path, &comm, NULL, NULL);
    g_free(path);
    path = g_strdup_printf("%s/%s/wchan", dir, tid);
    g_file_get_contents(path, &wchan, NULL, NULL);
    g_free(path);
    path = g_strdup_printf("%s/%s/stat", dir, tid);
    g_file_get_contents(path, &stat, NULL, NULL);
    g_free(path);
    const char *paren = stat ? strrchr(stat, ')') : NULL;
    fprintf(stderr, "  %s %s state %c wchan %s\n", tid, comm ? g_strstrip(comm) : "?",
            paren && paren[1] ? paren[2] : '?', wchan && *wchan ? wchan : "-");
    g_free(comm);
    g_free(wchan);
    g_free(stat);
  }
  if (d) g_dir_close(d);
  g_free(dir);
}

static int reap(GPid pid, int timeout_s) {
  int status = 0;
  gint64 until = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (g_get_monotonic_time() > until) {
      describe_threads(pid);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    g_usleep(5000);
  }
  return status;
}

/* Starts weftd; true once its "Started server" line came (*p filled). Otherwise the process is
 * reaped and *status is its wait status: it exited before the line, or was killed after 20 s
 * without one. */
static bool try_spawn(const char *const *args, const char *const *env, bool capture_stderr,
                      weftd_proc_t *p, int *status) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)WEFTD_PATH);
  for (int k = 0; args[k]; k++) g_ptr_array_add(argv, (char *)args[k]);
  g_ptr_array_add(argv, NULL);
  char **envp = g_environ_unsetenv(g_get_environ(), "TF_CONFIG");
#if WEFT_SANITIZE
  /* LeakSanitizer's check at a weftd's exit stops the world with ptrace, and on the loaded CI
   * machine it sometimes never came back: the task's main thread spun in the checker (state R,
   * every other thread idle) until the test killed it. The tasks' code runs in-process in the
   * other tests, where leaks are still checked; here AddressSanitizer's other checks stay on. */
  const char *asan = g_environ_getenv(envp, "ASAN_OPTIONS");
  char *no_leaks =
      g_strdup_printf("%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
  envp = g_environ_setenv(envp, "ASAN_OPTIONS", no_leaks, TRUE);
  g_free(no_leaks);
#endif
  for (int k = 0; env && env[k]; k++) {
    char **kv = g_strsplit(env[k], "=", 2);
    envp = kv[1] ? g_environ_setenv(envp, kv[0], kv[1], TRUE) : g_environ_unsetenv(envp, kv[0]);
    g_strfreev(kv);
  }
  memset(p, 0, sizeof *p);
  p->err_fd = -1;
  GError *error = NULL;
  gboolean ok = g_spawn_async_with_pipes(NULL, (char **)argv->pdata, envp,
                                         G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent, NULL, &p->pid,
                                         NULL, &p->out_fd, capture_stderr ? &p->err_fd : NULL,
                                         &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  g_strfreev(envp);
  g_ptr_array_free(argv, TRUE);
  char *line = read_line(p->out_fd, 20000);
  if (!line) {
    /* End of file (it is exiting) or no line in time (hung: killed after 5 s more). */
    *status = reap(p->pid, 5);
    close(p->out_fd);
    if (p->err_fd >= 0) close(p->err_fd);
    memset(p, 0, sizeof *p);
    return false;
  }
  g_assert_true(g_str_has_prefix(line, STARTED));
  p->target = g_strdup(line + strlen(STARTED));
  g_free(line);
  return true;
}

/* How weftd exited, for messages. */
static char *describe(int status) {
  if (WIFEXITED(status)) return g_strdup_printf("exit status %d", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return g_strdup_printf("signal %d", WTERMSIG(status));
  return g_strdup_printf("wait status %d", status);
}

weftd_proc_t weftd_spawn(const char *const *args, const char *const *env, bool capture_stderr) {
  weftd_proc_t p;
  int status = 0;
  if (!try_spawn(args, env, capture_stderr, &p, &status)) {
    char *how = describe(status);
    g_error("weftd %s did not start (%s)", args[0] ? args[0] : "", how);
  }
  return p;
}

/* Whether every thread of pid is stopped ('T' in /proc/PID/task/TID/stat). */
static bool all_stopped(GPid pid) {
  char *dir = g_strdup_printf("/proc/%d/task", (int)pid);
  GDir *d = g_dir_open(dir, 0, NULL);
  bool stopped = d != NULL;
  const char *tid;
  while (stopped && d && (tid = g_dir_read_name(d))) {
    char *path = g_strdup_printf("%s/%s/stat", dir, tid);
    char *text = NULL;
    if (g_file_get_contents(path, &text, NULL, NULL)) {
      const char *paren = strrchr(text, ')');
      stopped = paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
    }
    g_free(text);
    g_free(path);
  }
  if (d) g_dir_close(d);
  g_free(dir);
  return stopped;
}

int weftd_signal(weftd_proc_t *p, int sig) {
  if (!p->pid) return 0;
  kill(p->pid, sig);
  if (sig == SIGSTOP) {
    gint64 until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (!all_stopped(p->pid) && g_get_monotonic_time() < until) g_usleep(2000);
    g_assert_true(all_stopped(p->pid));
  }
  if (sig != SIGKILL && sig != SIGTERM && sig != SIGINT) return 0;
  if (sig != SIGKILL) kill(p->pid, SIGCONT); /* a stopped task must run to exit */
  /* A stop takes milliseconds; the margin is for a sanitizer build on a loaded 2-core machine,
   * where a task finishing an aborted step's calls and LeakSanitizer's scan at exit add up. */
  int status = reap(p->pid, 45);
  close(p->out_fd);
  if (p->err_fd >= 0) close(p->err_fd);
  g_free(p->target);
  memset(p, 0, sizeof *p);
  return status;
}

void weftd_stop(weftd_proc_t *p) {
  if (!p->pid) return;
  int err_fd = p->err_fd;
  p->err_fd = -1; /* kept open until its text is shown */
  int status = weftd_signal(p, SIGTERM);
  if (err_fd >= 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    /* Say why before failing: the server's own stderr (a sanitizer report, an error). */
    char buf[4096];
    ssize_t got;
    fcntl(err_fd, F_SETFL, fcntl(err_fd, F_GETFL) | O_NONBLOCK);
    while ((got = read(err_fd, buf, sizeof buf - 1)) > 0) {
      buf[got] = '\0';
      fprintf(stderr, "%s", buf);
    }
  }
  if (err_fd >= 0) close(err_fd);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Clusters */

/* Starts task k; false when it exited with weftd's runtime status (a port taken by another
 * process since it was chosen), anything else fails the test. */
static bool spawn_task(weftd_cluster_t *c, int k, const char *const *extra) {
  char index[16];
  snprintf(index, sizeof index, "%d", k < c->n_ps ? k : k - c->n_ps);
  GPtrArray *args = g_ptr_array_new();
  const char *fixed[] = {"--ps_hosts",  c->ps_hosts, "--worker_hosts", c->worker_hosts,
                         "--job_name",  k < c->n_ps ? "ps" : "worker",
                         "--task_index", index};
  for (size_t a = 0; a < G_N_ELEMENTS(fixed); a++) g_ptr_array_add(args, (char *)fixed[a]);
  for (int e = 0; extra && extra[e]; e++) g_ptr_array_add(args, (char *)extra[e]);
  g_ptr_array_add(args, NULL);
  int status = 0;
  bool ok = try_spawn((const char *const *)args->pdata, c->env, false, &c->d[k], &status);
  g_ptr_array_free(args, TRUE);
  if (!ok) {
    char *how = describe(status);
    g_test_message("weftd for task %d (%s) did not start: %s", k, c->address[k], how);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != WEFTD_EXIT_RUNTIME)
      g_error("weftd for task %d (%s) did not start: %s", k, c->address[k], how);
    g_free(how);
    return false;
  }
  g_assert_cmpstr(c->d[k].target, ==, c->target[k]);
  return true;
}

static void free_names(weftd_cluster_t *c) {
  for (int k = 0; k < c->n; k++) {
    g_clear_pointer(&c->address[k], g_free);
    g_clear_pointer(&c->target[k], g_free);
  }
  g_clear_pointer(&c->ps_hosts, g_free);
  g_clear_pointer(&c->worker_hosts, g_free);
}

bool weftd_cluster_start_full(weftd_cluster_t *c, int n_ps, int n_workers,
                              const char *const *extra, const char *const *env,
                              const char *const *fixed) {
  memset(c, 0, sizeof *c);
  if (!weftd_available()) return false;
  c->n = n_ps + n_workers;
  c->n_ps = n_ps;
  c->env = env;
  g_assert_cmpint(c->n, <=, WEFTD_MAX_TASKS);
  const char *scheme = "grpc";
  for (int e = 0; extra && extra[e]; e++) {
    if (strcmp(extra[e], "--tls-cert") == 0) scheme = "grpcs";
  }
  for (int attempt = 1;; attempt++) {
    int ports[WEFTD_MAX_TASKS];
    free_ports(c->n, ports);
    GString *ps = g_string_new(NULL), *workers = g_string_new(NULL);
    for (int k = 0; k < c->n; k++) {
      c->address[k] = fixed && fixed[k] ? g_strdup(fixed[k])
                                        : g_strdup_printf("127.0.0.1:%d", ports[k]);
      c->target[k] = g_strdup_printf("%s://%s", scheme, c->address[k]);
      GString *list = k < n_ps ? ps : workers;
      g_string_append_printf(list, "%s%s", list->len ? "," : "", c->address[k]);
    }
    c->ps_hosts = g_string_free(ps, FALSE);
    c->worker_hosts = g_string_free(workers, FALSE);
    bool started = true;
    for (int k = 0; k < c->n && started; k++) {
      if (!(fixed && fixed[k])) started = spawn_task(c, k, extra);
    }
    if (started) return true;
    /* Another process took one of the ports between free_ports and weftd's listen: the whole
     * cluster names it, so all of it moves to new ports. */
    if (attempt == CLUSTER_ATTEMPTS) g_error("no cluster started in %d attempts", attempt);
    for (int k = 0; k < c->n; k++) weftd_signal(&c->d[k], SIGKILL);
    free_names(c);
  }
}

bool weftd_cluster_start(weftd_cluster_t *c, int n_ps, int n_workers, const char *const *extra) {
  return weftd_cluster_start_full(c, n_ps, n_workers, extra, NULL, NULL);
}

void weftd_cluster_restart(weftd_cluster_t *c, int k, const char *const *extra) {
  g_assert_cmpint(c->d[k].pid, ==, 0);
  if (!spawn_task(c, k, extra)) g_error("weftd for task %d did not start again", k);
}

int weftd_cluster_signal(weftd_cluster_t *c, int k, int sig) {
  return weftd_signal(&c->d[k], sig);
}

void weftd_cluster_stop(weftd_cluster_t *c) {
  for (int k = 0; k < c->n; k++) weftd_stop(&c->d[k]);
  free_names(c);
  memset(c, 0, sizeof *c);
}

weft_session_t *weftd_remote_session(weft_graph_t *g, const char *target) {
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, target);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  if (st) g_error("session on %s: %s", target, weft_status_message(st));
  weft_session_options_free(o);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Resources */

int64_t proc_status_kib(GPid pid, const char *field) {
  char *path = g_strdup_printf("/proc/%d/status", (int)pid);
  char *text = NULL, *key = g_strconcat(field, ":", NULL);
  int64_t kib = -1;
  if (g_file_get_contents(path, &text, NULL, NULL)) {
    const char *at = strstr(text, key);
    if (at) kib = g_ascii_strtoll(at + strlen(key), NULL, 10);
  }
  g_free(key);
  g_free(text);
  g_free(path);
  return kib;
}

int64_t proc_rss_kib(GPid pid) { return proc_status_kib(pid, "VmRSS"); }

int proc_fd_count(GPid pid) {
  char *path = g_strdup_printf("/proc/%d/fd", (int)pid);
  GDir *d = g_dir_open(path, 0, NULL);
  int n = -1;
  if (d) {
    n = 0;
    while (g_dir_read_name(d)) n++;
    g_dir_close(d);
  }
  g_free(path);
  return n;
}

int proc_threads_named(GPid pid, const char *name) {
  char *dir_path = g_strdup_printf("/proc/%d/task", (int)pid);
  GDir *dir = g_dir_open(dir_path, 0, NULL);
  g_assert_nonnull(dir);
  int count = 0;
  const char *tid;
  while ((tid = g_dir_read_name(dir)) != NULL) {
    char *comm_path = g_strdup_printf("%s/%s/comm", dir_path, tid);
    char *comm = NULL;
    if (g_file_get_contents(comm_path, &comm, NULL, NULL)) {
      g_strchomp(comm);
      if (strcmp(comm, name) == 0) count++;
    }
    g_free(comm);
    g_free(comm_path);
  }
  g_dir_close(dir);
  g_free(dir_path);
  return count;
}

GByteArray *weftd_frame_request(const ProtobufCMessage *msg, const Weft__TensorList *list,
                                const void *tail, size_t tail_len) {
  GByteArray *out = g_byte_array_new();
  const ProtobufCMessage *parts[2] = {msg, &list->base};
  for (int k = 0; k < 2; k++) {
    size_t len = protobuf_c_message_get_packed_size(parts[k]);
    uint8_t varint[10];
    int n = 0;
    size_t v = len;
    do {
      varint[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
      v >>= 7;
    } while (v);
    g_byte_array_append(out, varint, (guint)n);
    uint8_t *buf = g_malloc(len + 1);
    protobuf_c_message_pack(parts[k], buf);
    g_byte_array_append(out, buf, (guint)len);
    g_free(buf);
  }
  if (tail_len) g_byte_array_append(out, tail, (guint)tail_len);
  return out;
}

/* A gzip stream of `prefix` followed by `zeros` zero bytes (made piecewise: ~1 MB for 1 GiB). */
GByteArray *weftd_gzip_body(const GByteArray *prefix, uint64_t zeros) {
  z_stream z;
  memset(&z, 0, sizeof z);
  g_assert_cmpint(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), ==,
                  Z_OK);
  GByteArray *out = g_byte_array_new();
  enum { CHUNK = 1 << 20 };
  guint8 *in = g_malloc0(CHUNK);
  guint8 *buf = g_malloc(CHUNK);
  uint64_t left = zeros;
  bool first = prefix != NULL;
  for (;;) {
    int flush = Z_NO_FLUSH;
    if (first) {
      z.next_in = prefix->data;
      z.avail_in = prefix->len;
      first = false;
      if (zeros == 0) flush = Z_FINISH;
    } else {
      size_t n = left < CHUNK ? (size_t)left : CHUNK;
      z.next_in = in;
      z.avail_in = (uInt)n;
      left -= n;
      if (left == 0) flush = Z_FINISH;
    }
    int zr;
    do {
      z.next_out = buf;
      z.avail_out = CHUNK;
      zr = deflate(&z, flush);
      g_byte_array_append(out, buf, CHUNK - z.avail_out);
    } while (z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
    if (flush == Z_FINISH) break;
  }
  deflateEnd(&z);
  g_free(in);
  g_free(buf);
  return out;
}
