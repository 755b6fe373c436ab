/* Helpers for tests that run real processes (see process_util.h). */
#include "process_util.h"

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
