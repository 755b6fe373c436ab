/* Tests of the bulk channel's port option (weft_server_options_set_bulk_port, `weftd
 * --bulk_port`): a fixed port is where the channel listens, so that a firewall between hosts can
 * let it through; a port outside 0-65535 is INVALID_ARGUMENT before anything listens; a fixed
 * port another socket holds fails the server with UNAVAILABLE naming the port (a free port
 * that cannot be had only leaves the channel off); weftd and weft-train refuse a bad flag with
 * exit status 2. */
#include <arpa/inet.h>
#include <glib.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/weft.h"

#define WEFTD WEFT_BUILD_DIR "/core/tools/weftd"
#define WEFT_TRAIN WEFT_BUILD_DIR "/core/tools/weft-train"

#define OK(expr)                                                                               \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_)                                                                                   \
      g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),                      \
              weft_status_message(st_));                                                       \
  } while (0)

/* A loopback TCP socket listening on a free port: *port is that port; the caller closes it. */
static int hold_port(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  g_assert_cmpint(fd, >=, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g_assert_cmpint(bind(fd, (struct sockaddr *)&a, sizeof a), ==, 0);
  g_assert_cmpint(listen(fd, 1), ==, 0);
  socklen_t len = sizeof a;
  g_assert_cmpint(getsockname(fd, (struct sockaddr *)&a, &len), ==, 0);
  *port = ntohs(a.sin_port);
  return fd;
}

static weft_status_t *new_server(int bulk_port, weft_server_t **out) {
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  OK(weft_cluster_spec_add_task(spec, "local", 0, "localhost:0"));
  weft_server_options_t *so = weft_server_options_new();
  weft_server_options_set_bulk_port(so, bulk_port);
  weft_status_t *st = weft_server_new(spec, "local", 0, so, out);
  weft_server_options_free(so);
  weft_cluster_spec_free(spec);
  return st;
}

static void expect(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
}

/* A server asking for `port` while something else holds it stops with the port's name. */
static void expect_port_in_use(int port) {
  weft_server_t *server = NULL;
  char *want = g_strdup_printf("Bulk channel: cannot listen on 127.0.0.1 port %d: Address "
                               "already in use", port);
  expect(new_server(port, &server), WEFT_UNAVAILABLE, want);
  g_assert_null(server);
  g_free(want);
}

static void test_fixed_port(void) {
  int port = 0;
  close(hold_port(&port)); /* a port that was free a moment ago */
  weft_server_t *server = NULL;
  OK(new_server(port, &server));
  g_assert_cmpint(weft_server_bulk_port(server), ==, port);
  OK(weft_server_start(server));
  g_assert_cmpint(weft_server_bulk_port(server), ==, port);
  /* Another server asking for the same port while the first holds it. */
  expect_port_in_use(port);
  OK(weft_server_stop(server));
  weft_server_free(server);
}

static void test_port_in_use(void) {
  int port = 0;
  int fd = hold_port(&port);
  expect_port_in_use(port);
  close(fd);
  weft_server_t *server = NULL;
  /* Port 0: a free one, whatever is held elsewhere. */
  OK(new_server(0, &server));
  g_assert_cmpint(weft_server_bulk_port(server), >, 0);
  weft_server_free(server);
}

static void test_bad_port(void) {
  weft_server_t *server = NULL;
  expect(new_server(70000, &server), WEFT_INVALID_ARGUMENT,
         "Bulk channel port 70000 for /job:local/task:0 is not from 0 to 65535");
  g_assert_null(server);
  expect(new_server(-1, &server), WEFT_INVALID_ARGUMENT,
         "Bulk channel port -1 for /job:local/task:0 is not from 0 to 65535");
  g_assert_null(server);
}

/* Runs argv; its exit status and stderr (g_free). */
static int run_tool(const char *const *argv, char **err) {
  int status = -1;
  GError *error = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                             NULL, err, &status, &error));
  g_assert_no_error(error);
  g_assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void test_flags(void) {
  const char *weftd[] = {WEFTD, "--local", "--port", "0", "--bulk_port", "65536", NULL};
  const char *train[] = {WEFT_TRAIN, "--local", "--bulk_port", "-5", NULL};
  const char *const *tools[] = {weftd, train};
  const char *names[] = {"weftd", "weft-train"};
  for (int k = 0; k < 2; k++) {
    char *err = NULL;
    g_assert_cmpint(run_tool(tools[k], &err), ==, 2);
    char *want = g_strdup_printf("%s: error: --bulk_port must be from 0 to 65535 (0: a free "
                                 "one)\n", names[k]);
    g_assert_true(g_str_has_prefix(err, want));
    g_free(want);
    g_free(err);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_unsetenv("WEFT_BULK_TRANSFER");
  weft_plugins_load_default();
  g_test_add_func("/bulk_port/fixed", test_fixed_port);
  g_test_add_func("/bulk_port/in_use", test_port_in_use);
  g_test_add_func("/bulk_port/bad", test_bad_port);
  g_test_add_func("/bulk_port/flags", test_flags);
  return g_test_run();
}
