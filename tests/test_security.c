/* Tests of transport security and the cluster token with real `weftd` processes on loopback
 * ports (docs/security.md): a CA, server and client certificates made with the `openssl`
 * command at test time; TLS with a TLS client, a plaintext client refused with UNAVAILABLE well
 * within its deadline; mutual TLS refusing a client without a certificate (or with one from
 * another CA) and accepting one signed by the CA; a two-task mutual-TLS cluster with a token
 * running a step whose tensors cross tasks; the token: right, missing and wrong (UNAUTHENTICATED
 * and nothing ran), unreadable and empty files, the token with a server of the test's own
 * process; a certificate given with another's key named as such (weftd and client); `weftd
 * --bind 0.0.0.0` without TLS warning on
 * stderr; `weft devices` and `weft run` with `--target grpcs://`. Every weftd dies with the test process
 * (PR_SET_PDEATHSIG) and is stopped at the end of its test. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define WEFT_CLI WEFT_BUILD_DIR "/core/tools/weft"

#define OK(expr)                                                                               \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)), weft_status_message(st_)); \
  } while (0)

/* The folder of the certificates (NULL when they could not be made). */
static char *certs;

static char *cert_path(const char *name) { return g_build_filename(certs, name, NULL); }

static bool skip_without_certs(void) {
  if (!weftd_available()) return true;
  if (!certs) {
    g_test_skip("the openssl command is not installed (scripts/install-deps.sh installs it)");
    return true;
  }
  return false;
}

/* ---------------------------------------------------------------------------------------------
 * Certificates */

static bool sh(const char *script) {
  char *argv[] = {"/bin/sh", "-ec", (char *)script, NULL};
  char *out = NULL, *err = NULL;
  int status = 0;
  GError *error = NULL;
  gboolean ok = g_spawn_sync(certs, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                             &error);
  bool good = ok && g_spawn_check_wait_status(status, NULL);
  if (!good) g_test_message("openssl failed: %s%s", err ? err : "", error ? error->message : "");
  if (error) g_error_free(error);
  g_free(out);
  g_free(err);
  return good;
}

/* A CA; a server certificate for localhost, 127.0.0.1 and ::1 that is also a client certificate
 * (tasks present it to each other); a client certificate; and a second CA with a client
 * certificate of its own, which a mutual-TLS server must refuse. P-256 keys: quick to make. */
static void make_certs(void) {
  char *openssl = g_find_program_in_path("openssl");
  if (!openssl) return;
  g_free(openssl);
  certs = g_dir_make_tmp("weft-security-XXXXXX", NULL);
  g_assert_nonnull(certs);
  const char *script =
      "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out \"$1\" "
      "2>/dev/null; }\n"
      "ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.crt -days 2 -subj \"/CN=$1\" "
      "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign; }\n"
      "leaf() { key $1.key; openssl req -new -key $1.key -out $1.csr -subj \"/CN=$1\";\n"
      "  printf '%s\\n' \"$3\" > $1.ext;\n"
      "  openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial -out $1.crt "
      "-days 2 -extfile $1.ext 2>/dev/null; }\n"
      "ca ca\n"
      "ca rogue-ca\n"
      "leaf server ca 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n"
      "extendedKeyUsage=serverAuth,clientAuth'\n"
      "leaf client ca 'extendedKeyUsage=clientAuth'\n"
      "leaf rogue rogue-ca 'extendedKeyUsage=clientAuth'\n"
      "cat server.crt ca.crt > server-chain.crt\n"
      "printf 'sesame-0123456789\\n' > token\n"
      "printf 'not-the-token\\n' > wrong-token\n"
      ": > empty-token\n";
  if (!sh(script)) {
    g_error("could not make the test certificates with openssl in %s", certs);
  }
}

static void remove_certs(void) {
  if (!certs) return;
  GDir *dir = g_dir_open(certs, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name(dir))) {
    char *p = cert_path(name);
    g_unlink(p);
    g_free(p);
  }
  if (dir) g_dir_close(dir);
  g_rmdir(certs);
  g_free(certs);
  certs = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Processes */

/* A one-task server (--local) on a free port with extra flags; FILE arguments are resolved in
 * the certificate folder. */
static weftd_proc_t local_server(const char *const *extra) {
  const char *args[16] = {"--local", "--port", "0"};
  int n = 3;
  char *paths[16] = {0};
  for (int k = 0; extra && extra[k]; k++) {
    bool file = k > 0 && g_str_has_prefix(extra[k - 1], "--") &&
                (strstr(extra[k - 1], "tls") || strstr(extra[k - 1], "token"));
    args[n++] = file ? (paths[k] = cert_path(extra[k])) : extra[k];
  }
  args[n] = NULL;
  weftd_proc_t d = weftd_spawn(args, NULL, true);
  for (int k = 0; k < 16; k++) g_free(paths[k]);
  return d;
}

/* ---------------------------------------------------------------------------------------------
 * Clients */

/* Session options for `target` with TLS files (names in the certificate folder, may be NULL)
 * and a token file name (may be NULL). */
static weft_session_options_t *client_options(const char *target, const char *cert,
                                              const char *key, const char *ca,
                                              const char *token) {
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, target);
  char *c = cert ? cert_path(cert) : NULL, *k = key ? cert_path(key) : NULL,
       *a = ca ? cert_path(ca) : NULL, *t = token ? cert_path(token) : NULL;
  if (c || k || a) weft_session_options_set_tls(o, c, k, a);
  weft_session_options_set_auth_token_file(o, t);
  g_free(c);
  g_free(k);
  g_free(a);
  g_free(t);
  return o;
}

/* Lists the cluster's devices with these options: NULL when it worked (and found devices of the
 * local job), else the error. *seconds: how long it took. */
static weft_status_t *try_list(const char *target, const weft_session_options_t *o,
                               double *seconds) {
  weft_device_info_t *devices = NULL;
  int n = 0;
  gint64 t0 = g_get_monotonic_time();
  weft_status_t *st = weft_cluster_list_devices_with_options(target, o, 5000, &devices, &n);
  if (seconds) *seconds = (g_get_monotonic_time() - t0) / 1e6;
  if (!st) {
    g_assert_cmpint(n, >, 0);
    g_assert_true(g_str_has_prefix(devices[0].name, "/job:"));
  }
  weft_device_list_free(devices, n);
  return st;
}

static void expect_code(weft_status_t *st, weft_code_t code, const char *substring) {
  g_assert_nonnull(st);
  g_test_message("expected %s: %s", weft_code_name(code), weft_status_message(st));
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  if (substring) g_assert_nonnull(strstr(weft_status_message(st), substring));
  weft_status_free(st);
}

/* v (a float variable, 1 at init) and `set_v` (assigns 10 to it) on `device`; y = v * 3 on
 * `compute_device` (may be the same task or another). */
static weft_graph_t *variable_graph(const char *device, const char *compute_device) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, device);
  weft_output_t v = weft_variable(g, "v", weft_const_float(g, "v_init", 1.0f, &st), &st);
  OK(st);
  weft_op_builder_t *assign = weft_op_new(g, "Assign", "set_v");
  weft_op_add_input(assign, weft_out(weft_graph_node(g, "v"), 0));
  weft_op_add_input(assign, weft_const_float(g, "ten", 10.0f, &st));
  OK(st);
  OK(weft_op_finish(assign, NULL));
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, compute_device);
  weft_binary(g, "Mul", "y", v, weft_const_float(g, "three", 3.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

static weft_status_t *run(weft_session_t *s, const char *fetch, const char *target,
                          double *value) {
  weft_tensor_t *out = NULL;
  weft_status_t *st = weft_session_run(s, NULL, NULL, 0, fetch ? &fetch : NULL, fetch ? &out : NULL,
                                       fetch ? 1 : 0, target ? &target : NULL, target ? 1 : 0);
  if (!st && out && value) *value = weft_tensor_get_double(out, 0);
  weft_tensor_unref(out);
  return st;
}

static weft_session_t *open_session(weft_graph_t *g, weft_session_options_t *o) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  weft_session_options_free(o);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Tests */

static void test_tls(void) {
  if (skip_without_certs()) return;
  /* Without --tls-ca the task trusts its own chain for its peers (its own master included). */
  const char *flags[] = {"--tls-cert", "server-chain.crt", "--tls-key", "server.key", NULL};
  weftd_proc_t d = local_server(flags);
  g_assert_true(g_str_has_prefix(d.target, "grpcs://localhost:"));

  /* A TLS client that trusts the CA: devices, and a step. */
  weft_session_options_t *o = client_options(d.target, NULL, NULL, "ca.crt", NULL);
  OK(try_list(d.target, o, NULL));
  weft_graph_t *g = variable_graph("/job:local/task:0", "/job:local/task:0");
  weft_session_t *s = open_session(g, o);
  double y = 0;
  OK(run(s, NULL, "init", NULL));
  OK(run(s, "y", NULL, &y));
  g_assert_cmpfloat(y, ==, 3.0);
  weft_session_free(s);

  /* A plaintext client: UNAVAILABLE at once, not at a deadline. */
  char *plain = g_strdup_printf("grpc://%s", d.target + strlen("grpcs://"));
  double seconds = 0;
  expect_code(try_list(plain, NULL, &seconds), WEFT_UNAVAILABLE, "unavailable");
  g_assert_cmpfloat(seconds, <, 4.0);
  /* A TLS client that does not trust the server's CA (the system's roots). */
  o = client_options(d.target, NULL, NULL, NULL, NULL);
  expect_code(try_list(d.target, o, &seconds), WEFT_UNAVAILABLE,
              "certificate verify failed [TLS handshake failed: check the CA file");
  g_assert_cmpfloat(seconds, <, 4.0);
  weft_session_options_free(o);

  /* TLS files with a plaintext target are refused rather than ignored. */
  o = client_options(plain, NULL, NULL, "ca.crt", NULL);
  weft_status_t *st = NULL;
  g_assert_null(weft_session_new(g, o, &st));
  expect_code(st, WEFT_INVALID_ARGUMENT, "use grpcs://");
  weft_session_options_free(o);
  /* A missing CA file is named. */
  o = client_options(d.target, NULL, NULL, "no-such-ca.crt", NULL);
  g_assert_null(weft_session_new(g, o, &st));
  expect_code(st, WEFT_INVALID_ARGUMENT, "no-such-ca.crt");
  weft_session_options_free(o);

  g_free(plain);
  weft_graph_free(g);
  weftd_stop(&d);
}

static void test_mutual_tls(void) {
  if (skip_without_certs()) return;
  const char *flags[] = {"--tls-cert", "server.crt", "--tls-key", "server.key",
                         "--tls-ca",   "ca.crt",     NULL};
  weftd_proc_t d = local_server(flags);
  double seconds = 0;
  /* No client certificate. */
  weft_session_options_t *o = client_options(d.target, NULL, NULL, "ca.crt", NULL);
  expect_code(try_list(d.target, o, &seconds), WEFT_UNAVAILABLE, NULL);
  g_assert_cmpfloat(seconds, <, 4.0);
  weft_session_options_free(o);
  /* A certificate from another CA. */
  o = client_options(d.target, "rogue.crt", "rogue.key", "ca.crt", NULL);
  expect_code(try_list(d.target, o, &seconds), WEFT_UNAVAILABLE, NULL);
  g_assert_cmpfloat(seconds, <, 4.0);
  weft_session_options_free(o);
  /* A certificate without its key. */
  o = client_options(d.target, "client.crt", NULL, "ca.crt", NULL);
  expect_code(try_list(d.target, o, NULL), WEFT_INVALID_ARGUMENT, "without a key");
  weft_session_options_free(o);
  /* One signed by the CA. */
  o = client_options(d.target, "client.crt", "client.key", "ca.crt", NULL);
  OK(try_list(d.target, o, NULL));
  weft_session_options_free(o);
  weftd_stop(&d);
}

/* A ps and a worker with mutual TLS and a token: the master on the worker reaches the ps, and
 * the worker's _Recv pulls the ps's variable, all over TLS with the token. */
static void test_tls_cluster(void) {
  if (skip_without_certs()) return;
  char *crt = cert_path("server.crt"), *key = cert_path("server.key"), *ca = cert_path("ca.crt"),
       *token = cert_path("token");
  const char *extra[] = {"--tls-cert", crt, "--tls-key",         key,   "--tls-ca",
                         ca,           "--auth-token-file", token, NULL};
  weftd_cluster_t c;
  g_assert_true(weftd_cluster_start(&c, 1, 1, extra));
  weftd_proc_t *d = c.d;
  char *expected = g_strdup_printf("grpcs://%s", c.address[1]);
  g_assert_cmpstr(d[1].target, ==, expected);
  g_free(expected);

  weft_graph_t *g = variable_graph("/job:ps/task:0", "/job:worker/task:0");
  weft_session_t *s =
      open_session(g, client_options(d[1].target, "client.crt", "client.key", "ca.crt", "token"));
  double y = 0;
  OK(run(s, NULL, "init", NULL));
  OK(run(s, "y", NULL, &y));
  g_assert_cmpfloat(y, ==, 3.0);
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "v"), "/job:ps/replica:0/task:0/"));
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "y"),
                                 "/job:worker/replica:0/task:0/"));
  OK(run(s, NULL, "set_v", NULL));
  OK(run(s, "y", NULL, &y));
  g_assert_cmpfloat(y, ==, 30.0);
  weft_session_free(s);

  /* The ps itself refuses a client without the token. */
  char *ps_target = g_strdup_printf("grpcs://%s", c.address[0]);
  weft_session_options_t *o = client_options(ps_target, "client.crt", "client.key", "ca.crt", NULL);
  expect_code(try_list(ps_target, o, NULL), WEFT_UNAUTHENTICATED, "auth token");
  weft_session_options_free(o);

  weft_graph_free(g);
  g_free(ps_target);
  weftd_cluster_stop(&c);
  g_free(crt);
  g_free(key);
  g_free(ca);
  g_free(token);
}

static void test_token(void) {
  if (skip_without_certs()) return;
  const char *flags[] = {"--auth-token-file", "token", NULL};
  weftd_proc_t d = local_server(flags);
  g_assert_true(g_str_has_prefix(d.target, "grpc://localhost:"));
  weft_graph_t *g = variable_graph("/job:local/task:0", "/job:local/task:0");

  weft_session_t *good = open_session(g, client_options(d.target, NULL, NULL, NULL, "token"));
  double y = 0;
  OK(run(good, NULL, "init", NULL));
  OK(run(good, "y", NULL, &y));
  g_assert_cmpfloat(y, ==, 3.0);

  /* Without the token and with a wrong one: refused, and the assignment did not happen. */
  weft_session_t *none = open_session(g, client_options(d.target, NULL, NULL, NULL, NULL));
  expect_code(run(none, NULL, "set_v", NULL), WEFT_UNAUTHENTICATED,
              "requires the cluster auth token and the call carried none");
  weft_session_t *wrong =
      open_session(g, client_options(d.target, NULL, NULL, NULL, "wrong-token"));
  expect_code(run(wrong, NULL, "set_v", NULL), WEFT_UNAUTHENTICATED, "auth token is wrong");
  expect_code(try_list(d.target, NULL, NULL), WEFT_UNAUTHENTICATED, "ListDevices");
  expect_code(weft_cluster_reset(d.target, NULL, 0), WEFT_UNAUTHENTICATED, "Reset");
  OK(run(good, "y", NULL, &y));
  g_assert_cmpfloat(y, ==, 3.0);
  /* The right token still does. */
  OK(run(good, NULL, "set_v", NULL));
  OK(run(good, "y", NULL, &y));
  g_assert_cmpfloat(y, ==, 30.0);
  weft_session_free(none);
  weft_session_free(wrong);
  weft_session_free(good);

  /* Unreadable and empty token files are named, in the client and in weftd. */
  weft_status_t *st = NULL;
  weft_session_options_t *o = client_options(d.target, NULL, NULL, NULL, "no-such-token");
  g_assert_null(weft_session_new(g, o, &st));
  expect_code(st, WEFT_INVALID_ARGUMENT, "no-such-token");
  weft_session_options_free(o);
  o = client_options(d.target, NULL, NULL, NULL, "empty-token");
  g_assert_null(weft_session_new(g, o, &st));
  expect_code(st, WEFT_INVALID_ARGUMENT, "empty-token' is empty");
  weft_session_options_free(o);
  weft_graph_free(g);
  weftd_stop(&d);

  char *empty = cert_path("empty-token");
  const char *args[] = {"--local", "--port", "0", "--auth-token-file", empty, NULL};
  run_result_t r = run_program(WEFTD_PATH, args, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_nonnull(strstr(r.err, "empty-token' is empty"));
  run_result_clear(&r);
  g_free(empty);
}

/* A certificate with another certificate's key is named as such, in weftd (exit 2) and in a
 * client, instead of gRPC's "is the port in use?" and "empty address list". */
static void test_key_mismatch(void) {
  if (skip_without_certs()) return;
  char *crt = cert_path("server.crt"), *wrong_key = cert_path("client.key");
  const char *args[] = {"--local", "--port", "0", "--tls-cert", crt, "--tls-key", wrong_key, NULL};
  run_result_t r = run_program(WEFTD_PATH, args, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_cmpstr(r.out, ==, "");
  char *want = g_strdup_printf("weftd: error: INVALID_ARGUMENT: Server for /job:local/task:0: The "
                               "TLS key file '%s' does not match the certificate in '%s' (the key "
                               "is not the private key of that certificate)\n", wrong_key, crt);
  /* This exact line (stderr may also hold a backend's log lines). */
  if (strstr(r.err, want) == NULL) g_assert_cmpstr(r.err, ==, want);
  g_free(want);
  run_result_clear(&r);

  /* A client whose certificate and key do not belong together, against a mutual-TLS server. */
  const char *flags[] = {"--tls-cert", "server.crt", "--tls-key", "server.key",
                         "--tls-ca",   "ca.crt",     NULL};
  weftd_proc_t d = local_server(flags);
  weft_session_options_t *o = client_options(d.target, "client.crt", "rogue.key", "ca.crt", NULL);
  weft_status_t *st = try_list(d.target, o, NULL);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  char *client_crt = cert_path("client.crt"), *rogue_key = cert_path("rogue.key");
  want = g_strdup_printf("The TLS key file '%s' does not match the certificate in '%s' (the key is "
                         "not the private key of that certificate)", rogue_key, client_crt);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
  /* The same through a session. */
  weft_graph_t *g = weft_graph_new();
  g_assert_null(weft_session_new(g, o, &st));
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "does not match the certificate"));
  weft_status_free(st);
  weft_graph_free(g);
  weft_session_options_free(o);
  weftd_stop(&d);
  g_free(client_crt);
  g_free(rogue_key);
  g_free(crt);
  g_free(wrong_key);
}

/* A server of this process: its clients skip gRPC, but the token is checked all the same. */
static void test_in_process(void) {
  if (skip_without_certs()) return;
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  OK(weft_cluster_spec_add_task(spec, "local", 0, "localhost:0"));
  weft_server_options_t *so = weft_server_options_new();
  char *token = cert_path("token"), *missing = cert_path("no-such-cert.crt");
  weft_server_options_set_tls(so, missing, missing, NULL);
  weft_server_t *server = NULL;
  weft_status_t *st = weft_server_new(spec, "local", 0, so, &server);
  g_assert_null(server);
  expect_code(st, WEFT_INVALID_ARGUMENT, "no-such-cert.crt");
  weft_server_options_set_tls(so, NULL, NULL, NULL);
  weft_server_options_set_auth_token_file(so, token);
  OK(weft_server_new(spec, "local", 0, so, &server));
  OK(weft_server_start(server));
  const char *target = weft_server_target(server);
  weft_graph_t *g = weft_graph_new();
  weft_const_float(g, "x", 2.0f, &st);
  OK(st);
  weft_session_options_t *o = client_options(target, NULL, NULL, NULL, NULL);
  g_assert_null(weft_session_new(g, o, &st));
  expect_code(st, WEFT_UNAUTHENTICATED, "requires the cluster auth token");
  weft_session_options_free(o);
  weft_session_t *s = open_session(g, client_options(target, NULL, NULL, NULL, "token"));
  double x = 0;
  OK(run(s, "x", NULL, &x));
  g_assert_cmpfloat(x, ==, 2.0);
  weft_session_free(s);
  weft_graph_free(g);
  weft_server_free(server);
  weft_server_options_free(so);
  weft_cluster_spec_free(spec);
  g_free(token);
  g_free(missing);
}

/* Listening beyond loopback without TLS says so on stderr; with TLS it does not. */
static void test_bind_warning(void) {
  if (skip_without_certs()) return;
  const char *flags[] = {"--bind", "0.0.0.0", NULL};
  weftd_proc_t d = local_server(flags);
  char *line = read_line(d.err_fd, 5000);
  g_assert_nonnull(line);
  g_test_message("%s", line);
  g_assert_nonnull(strstr(line, "WARNING: listening on 0.0.0.0 without TLS"));
  g_assert_nonnull(strstr(line, "unencrypted"));
  g_assert_nonnull(strstr(line, "unauthenticated"));
  g_free(line);
  weftd_stop(&d);

  const char *tls[] = {"--bind",    "0.0.0.0",    "--tls-cert", "server-chain.crt",
                       "--tls-key", "server.key", NULL};
  d = local_server(tls);
  line = read_line(d.err_fd, 300);
  g_assert_null(line);
  weftd_stop(&d);
}

/* weft devices and weft run --target grpcs://... with the TLS flags and the token. */
static void test_cli(void) {
  if (skip_without_certs()) return;
  if (!g_file_test(WEFT_CLI, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weft not built at " WEFT_CLI);
    return;
  }
  const char *flags[] = {"--tls-cert", "server.crt", "--tls-key", "server.key", "--tls-ca",
                         "ca.crt", "--auth-token-file", "token", NULL};
  weftd_proc_t d = local_server(flags);
  char *ca = cert_path("ca.crt"), *crt = cert_path("client.crt"), *key = cert_path("client.key"),
       *token = cert_path("token");
  char *argv[] = {WEFT_CLI, "devices", "--target", d.target, "--tls-ca", ca, "--tls-cert", crt,
                  "--tls-key", key, "--auth-token-file", token, NULL};
  char *out = NULL, *err = NULL;
  int status = 0;
  g_assert_true(
      g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, NULL));
  g_test_message("weft devices: %s%s", out, err);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  g_assert_nonnull(strstr(out, "/job:local/replica:0/task:0/device:CPU:0"));
  g_free(out);
  g_free(err);
  /* Without the token: the runtime's error, exit 1. */
  argv[10] = NULL;
  g_assert_true(
      g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, NULL));
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  g_assert_nonnull(strstr(err, "UNAUTHENTICATED"));
  g_free(out);
  g_free(err);

  /* weft run of a corpus graph (c = a * b) on the server. */
  const char *corpus = g_getenv("WEFT_CORPUS");
  char *graph = corpus ? g_build_filename(corpus, "tf", "graphdef", "multiplication.pb", NULL)
                       : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", "tf",
                                          "graphdef", "multiplication.pb", NULL);
  if (g_file_test(graph, G_FILE_TEST_EXISTS)) {
    char *run_argv[] = {WEFT_CLI, "run", "--graph", graph, "--feed", "a=2", "--feed", "b=3",
                        "--fetch", "c", "--json", "--target", d.target, "--tls-ca", ca,
                        "--tls-cert", crt, "--tls-key", key, "--auth-token-file", token, NULL};
    g_assert_true(g_spawn_sync(NULL, run_argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                               &status, NULL));
    g_test_message("weft run: %s%s", out, err);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    g_assert_nonnull(strstr(out, "\"c\""));
    g_assert_nonnull(strstr(out, "6"));
    g_free(out);
    g_free(err);
  } else {
    g_test_message("corpus graph %s not found: weft run not checked", graph);
  }
  g_free(graph);
  weftd_stop(&d);
  g_free(ca);
  g_free(crt);
  g_free(key);
  g_free(token);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  make_certs();
  g_test_add_func("/security/tls", test_tls);
  g_test_add_func("/security/mutual_tls", test_mutual_tls);
  g_test_add_func("/security/tls_cluster_with_token", test_tls_cluster);
  g_test_add_func("/security/token", test_token);
  g_test_add_func("/security/in_process", test_in_process);
  g_test_add_func("/security/key_mismatch", test_key_mismatch);
  g_test_add_func("/security/bind_warning", test_bind_warning);
  g_test_add_func("/security/cli", test_cli);
  int rc = g_test_run();
  remove_certs();
  return rc;
}
