/* Helpers for tests that run real server processes (see process_util.h). */
#include "process_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(bind(fd, (struct sockaddr *)&addr, sizeof addr), ==, 0);
  g_assert_cmpint(getsockname(fd, (struct sockaddr *)&addr, &len), ==, 0);
  close(fd);
  return ntohs(addr.sin_port);
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
