/* Tests of gRPC's health checking service on weftd (grpc.health.v1.Health/Check), over real
 * gRPC against real weftd processes: SERVING for the server and its two services, NOT_FOUND for
 * others, the bytes a Kubernetes probe sends and gets (packed by hand from the protocol's field
 * numbers), no token needed where every other method still requires it, `weft health` as an
 * exec probe (its output and exit status) before and after the server stops. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "distributed/distributed_internal.h"
#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"

static void check_serving(const char *target, const char *service) {
  weft_health_status_t status = WEFT_HEALTH_UNKNOWN;
  weft_status_t *st = weft_health_check(target, service, NULL, 10000, &status);
  g_assert_null(st);
  g_assert_cmpint(status, ==, WEFT_HEALTH_SERVING);
  g_assert_cmpstr(weft_health_status_name(status), ==, "SERVING");
}

static void test_check(void) {
  if (!weftd_available()) return;
  const char *args[] = {"--local", "--port", "0", NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, false);
  check_serving(d.target, NULL);
  check_serving(d.target, "");
  check_serving(d.target, "weft.Master");
  check_serving(d.target, "weft.Worker");
  weft_health_status_t status = WEFT_HEALTH_SERVING;
  weft_status_t *st = weft_health_check(d.target, "weft.Nope", NULL, 10000, &status);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  char *address = weft__target_address(d.target);
  char *expected = g_strdup_printf("Health check of %s: /grpc.health.v1.Health/Check: unknown "
                                   "service 'weft.Nope' (this server has '', 'weft.Master' and "
                                   "'weft.Worker')",
                                   address);
  g_assert_cmpstr(weft_status_message(st), ==, expected);
  g_assert_cmpint(status, ==, WEFT_HEALTH_UNKNOWN);
  g_free(expected);
  weft_status_free(st);

  /* What a probe sends: an empty HealthCheckRequest (zero bytes), or service "" spelled out
   * (field 1, length 0); the answer is field 1 varint SERVING (1): 08 01. */
  static const char spelled[] = {0x0a, 0x00};
  const char *requests[] = {"", spelled};
  size_t lens[] = {0, sizeof spelled};
  for (int k = 0; k < 2; k++) {
    char *answer = NULL;
    size_t len = 0;
    st = weft__rpc_raw(address, "/grpc.health.v1.Health/Check", requests[k], lens[k], 10000,
                       &answer, &len);
    g_assert_null(st);
    g_assert_cmpuint(len, ==, 2);
    g_assert_cmpint(answer[0], ==, 0x08);
    g_assert_cmpint(answer[1], ==, 0x01);
    g_free(answer);
  }
  /* Not a HealthCheckRequest (field 1 claims 100 bytes that are not there): refused, and the
   * server goes on answering. */
  static const char broken[] = {0x0a, 0x64, 'x'};
  char *answer = NULL;
  size_t len = 0;
  st = weft__rpc_raw(address, "/grpc.health.v1.Health/Check", broken, sizeof broken, 10000,
                     &answer, &len);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "/grpc.health.v1.Health/Check: the request is not a "
                  "grpc.health.v1.HealthCheckRequest");
  weft_status_free(st);
  check_serving(d.target, NULL);
  g_free(address);
  weftd_stop(&d);
}

/* A probe carries no token: the health check needs none, every other method still does. */
static void test_no_token_needed(void) {
  if (!weftd_available()) return;
  char *dir = g_dir_make_tmp("weft-health-XXXXXX", NULL);
  char *token = g_build_filename(dir, "token", NULL);
  g_assert_true(g_file_set_contents(token, "s3cret-cluster-token\n", -1, NULL));
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", token, NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, false);
  check_serving(d.target, NULL);
  weft_device_info_t *devices = NULL;
  int n = 0;
  weft_status_t *st = weft_cluster_list_devices(d.target, 10000, &devices, &n);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNAUTHENTICATED);
  weft_status_free(st);
  weftd_stop(&d);
  g_unlink(token);
  g_rmdir(dir);
  g_free(token);
  g_free(dir);
}

/* `weft health` as a Kubernetes exec probe: SERVING and 0 while the server runs, an error naming
 * the address and 1 once it is gone. */
static void test_cli(void) {
  if (!weftd_available()) return;
  const char *args[] = {"--local", "--port", "0", NULL};
  weftd_proc_t d = weftd_spawn(args, NULL, false);
  char *address = weft__target_address(d.target);
  run_result_t r = run_program(WEFT_EXE, (const char *[]){"health", address, NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==, "SERVING\n");
  run_result_clear(&r);
  r = run_program(WEFT_EXE,
                  (const char *[]){"health", d.target, "--service", "weft.Worker", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==, "SERVING\n");
  run_result_clear(&r);
  weftd_stop(&d);
  r = run_program(WEFT_EXE, (const char *[]){"health", address, NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  char *expected = g_strdup_printf("weft: error: UNAVAILABLE: Health check of %s: ", address);
  g_assert_true(g_str_has_prefix(r.err, expected));
  g_free(expected);
  run_result_clear(&r);
  r = run_program(WEFT_EXE, (const char *[]){"health", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_cmpstr(r.err, ==,
                  "weft: error: give one ADDRESS (HOST:PORT or grpc[s]://HOST:PORT)\n"
                  "Try 'weft help health'.\n");
  run_result_clear(&r);
  g_free(address);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/health/check", test_check);
  g_test_add_func("/health/no_token_needed", test_no_token_needed);
  g_test_add_func("/health/cli", test_cli);
  return g_test_run();
}
