/* Clusters of real weftd processes for tests (see weftd_cluster.h). */
#include "weftd_cluster.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process_util.h"

static weftd_proc_t spawn(weftd_cluster_t *c, int k, const char *const *extra) {
  char index[16];
  snprintf(index, sizeof index, "%d", k < c->n_ps ? k : k - c->n_ps);
  GPtrArray *argv = g_ptr_array_new();
  const char *fixed[] = {WEFTD_PATH,   "--ps_hosts",   c->ps_hosts, "--worker_hosts",
                         c->worker_hosts, "--job_name", k < c->n_ps ? "ps" : "worker",
                         "--task_index", index};
  for (size_t a = 0; a < G_N_ELEMENTS(fixed); a++) g_ptr_array_add(argv, (char *)fixed[a]);
  for (int e = 0; extra && extra[e]; e++) g_ptr_array_add(argv, (char *)extra[e]);
  g_ptr_array_add(argv, NULL);
  char **envp = g_environ_unsetenv(g_get_environ(), "TF_CONFIG");
  weftd_proc_t p = {0};
  GError *error = NULL;
  gboolean ok = g_spawn_async_with_pipes(NULL, (char **)argv->pdata, envp,
                                         G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent, NULL, &p.pid,
                                         NULL, &p.out_fd, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  char *line = read_line(p.out_fd, 20000);
  if (!line) g_error("weftd for task %d did not start", k);
  char *want = g_strdup_printf("Started server with target: %s", c->target[k]);
  g_assert_cmpstr(line, ==, want);
  g_free(want);
  g_free(line);
  g_strfreev(envp);
  g_ptr_array_free(argv, TRUE);
  return p;
}

bool weftd_cluster_start(weftd_cluster_t *c, int n_ps, int n_workers, const char *const *extra,
                         const char *const *fixed) {
  memset(c, 0, sizeof *c);
  if (!g_file_test(WEFTD_PATH, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weftd not built at " WEFTD_PATH);
    return false;
  }
  c->n = n_ps + n_workers;
  c->n_ps = n_ps;
  g_assert_cmpint(c->n, <=, WEFTD_MAX_TASKS);
  GString *ps = g_string_new(NULL), *workers = g_string_new(NULL);
  for (int k = 0; k < c->n; k++) {
    c->address[k] = fixed && fixed[k] ? g_strdup(fixed[k])
                                      : g_strdup_printf("127.0.0.1:%d", free_port());
    c->target[k] = g_strdup_printf("grpc://%s", c->address[k]);
    GString *list = k < n_ps ? ps : workers;
    g_string_append_printf(list, "%s%s", list->len ? "," : "", c->address[k]);
  }
  c->ps_hosts = g_string_free(ps, FALSE);
  c->worker_hosts = g_string_free(workers, FALSE);
  for (int k = 0; k < c->n; k++) {
    if (!(fixed && fixed[k])) c->d[k] = spawn(c, k, extra);
  }
  return true;
}

void weftd_cluster_restart(weftd_cluster_t *c, int k, const char *const *extra) {
  g_assert_cmpint(c->d[k].pid, ==, 0);
  c->d[k] = spawn(c, k, extra);
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

int weftd_cluster_signal(weftd_cluster_t *c, int k, int sig) {
  weftd_proc_t *p = &c->d[k];
  if (!p->pid) return 0;
  kill(p->pid, sig);
  if (sig == SIGSTOP) {
    /* Each thread stops when it next runs; until then a busy one may still answer calls. */
    gint64 until = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
    while (!all_stopped(p->pid) && g_get_monotonic_time() < until) g_usleep(2000);
    g_assert_true(all_stopped(p->pid));
  }
  if (sig != SIGKILL && sig != SIGTERM) return 0;
  if (sig == SIGTERM) kill(p->pid, SIGCONT); /* a stopped task must run to exit */
  int status = 0;
  gint64 until = g_get_monotonic_time() + 15 * G_USEC_PER_SEC;
  while (waitpid(p->pid, &status, WNOHANG) == 0) {
    if (g_get_monotonic_time() > until) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &status, 0);
      break;
    }
    g_usleep(5000);
  }
  close(p->out_fd);
  p->pid = 0;
  return status;
}

void weftd_cluster_stop(weftd_cluster_t *c) {
  for (int k = 0; k < c->n; k++) {
    bool running = c->d[k].pid != 0;
    int status = weftd_cluster_signal(c, k, SIGTERM);
    if (running) {
      g_assert_true(WIFEXITED(status));
      g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    }
    g_free(c->address[k]);
    g_free(c->target[k]);
  }
  g_free(c->ps_hosts);
  g_free(c->worker_hosts);
  memset(c, 0, sizeof *c);
}

int64_t proc_rss_kib(GPid pid) {
  char *path = g_strdup_printf("/proc/%d/status", (int)pid);
  char *text = NULL;
  int64_t kib = -1;
  if (g_file_get_contents(path, &text, NULL, NULL)) {
    const char *at = strstr(text, "VmRSS:");
    if (at) kib = g_ascii_strtoll(at + 6, NULL, 10);
  }
  g_free(text);
  g_free(path);
  return kib;
}

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
