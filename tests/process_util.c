/* Helpers for tests that run real processes (see process_util.h). */
#include "process_util.h"

#include <glib/gstdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

void free_ports(int n, int *ports) {
  int *fds = g_new(int, n);
  for (int k = 0; k < n; k++) {
    fds[k] = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    g_assert_cmpint(fds[k], >=, 0);
    g_assert_cmpint(bind(fds[k], (struct sockaddr *)&addr, sizeof addr), ==, 0);
    g_assert_cmpint(getsockname(fds[k], (struct sockaddr *)&addr, &len), ==, 0);
    ports[k] = ntohs(addr.sin_port);
  }
  for (int k = 0; k < n; k++) close(fds[k]);
  g_free(fds);
}

int free_port(void) {
  int port = 0;
  free_ports(1, &port);
  return port;
}

void die_with_parent(gpointer unused) {
  (void)unused;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* One line of fd, waiting at most timeout_ms; NULL on timeout or end of file. */
char *read_line(int fd, int timeout_ms) {
  GString *line = g_string_new(NULL);
  gint64 until = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  for (;;) {
    gint64 left = (until - g_get_monotonic_time()) / 1000;
    struct pollfd p = {fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, (int)left) <= 0) break;
    char ch;
    if (read(fd, &ch, 1) != 1) break;
    if (ch == '\n') return g_string_free(line, FALSE);
    g_string_append_c(line, ch);
  }
  g_string_free(line, TRUE);
  return NULL;
}

run_result_t run_program(const char *path, const char *const *args, const char *const *env) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)path);
  for (int k = 0; args[k] != NULL; k++) g_ptr_array_add(argv, (char *)args[k]);
  g_ptr_array_add(argv, NULL);
  char **envp = g_get_environ();
  for (int k = 0; env != NULL && env[k] != NULL; k++) {
    char **kv = g_strsplit(env[k], "=", 2);
    envp = g_environ_setenv(envp, kv[0], kv[1], TRUE);
    g_strfreev(kv);
  }
  run_result_t r = {0};
  int wait_status = 0;
  GError *error = NULL;
  gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL, &r.out,
                             &r.err, &wait_status, &error);
  g_assert_no_error(error);
  g_assert_true(ok);
  g_assert_true(WIFEXITED(wait_status));
  r.exit_code = WEXITSTATUS(wait_status);
  g_test_message("%s ... -> %d\nstdout: %s\nstderr: %s", path, r.exit_code, r.out, r.err);
  g_strfreev(envp);
  g_ptr_array_free(argv, TRUE);
  return r;
}

void run_result_clear(run_result_t *r) {
  g_free(r->out);
  g_free(r->err);
}

gboolean wait_stopped(GPid pid, int timeout_ms) {
  char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
  gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  gboolean stopped = FALSE;
  while (!stopped && g_get_monotonic_time() < deadline) {
    char *stat = NULL;
    if (!g_file_get_contents(path, &stat, NULL, NULL)) break;
    /* "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so from the last ')'. */
    const char *close = strrchr(stat, ')');
    stopped = close != NULL && close[1] == ' ' && close[2] == 'T';
    g_free(stat);
    if (!stopped) g_usleep(10 * 1000);
  }
  g_free(path);
  return stopped;
}

static void join_stderr_and_die_with_parent(gpointer unused) {
  die_with_parent(unused);
  dup2(STDOUT_FILENO, STDERR_FILENO); /* one stream to read */
}

proc_t proc_spawn(const char *cmdline, GSpawnFlags flags) {
  char **argv = NULL;
  g_assert_true(g_shell_parse_argv(cmdline, NULL, &argv, NULL));
  proc_t p = {0, -1, g_string_new(NULL)};
  GError *err = NULL;
  g_assert_true(g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD | flags,
                                         join_stderr_and_die_with_parent, NULL, &p.pid, NULL,
                                         &p.out, NULL, &err));
  g_assert_no_error(err);
  g_strfreev(argv);
  return p;
}

char *proc_read_until(proc_t *p, const char *needle, int timeout_ms) {
  gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  while (g_get_monotonic_time() < deadline) {
    char *line = read_line(p->out, (int)((deadline - g_get_monotonic_time()) / 1000) + 1);
    if (!line) return NULL;
    g_string_append_printf(p->log, "%s\n", line);
    if (needle && strstr(line, needle)) return line;
    g_free(line);
  }
  return NULL;
}

int proc_wait_exit(proc_t *p, int timeout_ms) {
  g_free(proc_read_until(p, NULL, timeout_ms));
  int status = 0;
  gint64 until = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  while (waitpid(p->pid, &status, WNOHANG) == 0) {
    if (g_get_monotonic_time() > until) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &status, 0);
      break;
    }
    g_usleep(10000);
  }
  close(p->out);
  g_spawn_close_pid(p->pid);
  p->pid = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int count_shm_segments(GPid pid) {
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

JsonObject *proc_final_json(proc_t *p, JsonParser **parser) {
  char **lines = g_strsplit(p->log->str, "\n", -1);
  const char *json = NULL;
  for (int i = 0; lines[i]; i++)
    if (lines[i][0] == '{') json = lines[i];
  if (!json) g_error("no JSON line in:\n%s", p->log->str);
  *parser = json_parser_new();
  GError *err = NULL;
  g_assert_true(json_parser_load_from_data(*parser, json, -1, &err));
  g_assert_no_error(err);
  g_strfreev(lines);
  return json_node_get_object(json_parser_get_root(*parser));
}

char *test_tmpdir(const char *pattern) {
  GError *err = NULL;
  char *dir = g_dir_make_tmp(pattern, &err);
  g_assert_no_error(err);
  return dir;
}

void test_rm_rf(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name(d))) {
      char *child = g_build_filename(path, name, NULL);
      test_rm_rf(child);
      g_free(child);
    }
    g_dir_close(d);
  }
  g_remove(path);
}
