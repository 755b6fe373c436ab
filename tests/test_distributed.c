/* Tests for the distributed runtime with real `weftd` processes on loopback ports: cluster specs
 * from the C API, the --cluster syntax, TensorFlow's flags and TF_CONFIG (with their exact error
 * messages, in the library and from weftd); a local server; placement across ps and worker
 * tasks; _Send/_Recv of every dtype including strings and empty tensors; a 256 MiB tensor;
 * variables on a ps shared by two clients, and Reset; a ps killed with SIGKILL in the middle of a
 * step (an error naming it, well within the deadline); a restarted task (ABORTED); malformed
 * requests sent with raw gRPC calls (errors, and the server keeps serving); sessions of several
 * client threads at once; the rendezvous dropping each finished step whichever of the sender's
 * RunGraph and the receiver's RecvTensor comes last. Every weftd dies with the test process (PR_SET_PDEATHSIG), so a failed
 * assertion leaves none behind. */
#include <arpa/inet.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "distributed/distributed_internal.h"
#include "graph/graphdef_internal.h"
#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define WEFT_CLI WEFT_BUILD_DIR "/core/tools/weft"

#define OK(expr)                                                                          \
  do {                                                                                    \
    weft_status_t *st_ = (expr);                                                          \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(st_->code), weft_status_message(st_)); \
  } while (0)

/* Element `index` of the fetched tensor `name`. */
static double fetch_at(weft_session_t *s, const char *name, int64_t index) {
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &name, &out, 1, NULL, 0));
  double v = weft_tensor_get_double(out, index);
  weft_tensor_unref(out);
  return v;
}

static double fetch1(weft_session_t *s, const char *name) { return fetch_at(s, name, 0); }

static void run_target(weft_session_t *s, const char *name) {
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &name, 1));
}

/* A tensor that crosses tasks through gRPC (no shared memory), received every way a task can:
 * its _Recv waiting on the server's queue (the default) or polling its own
 * (WEFT_RPC_OWN_QUEUE=1), with weftd's malloc settings or glibc's (WEFT_MALLOC_TUNING=0). Each
 * step's bytes are checked against the pattern the ps made, the first step's and a later
 * one's (the later reuses the receiver's buffers). */
static void test_recv_paths(void) {
  static const char *const envs[][3] = {
      {"WEFT_SHM_TRANSFER=0", NULL, NULL},
      {"WEFT_SHM_TRANSFER=0", "WEFT_RPC_OWN_QUEUE=1", NULL},
      {"WEFT_SHM_TRANSFER=0", "WEFT_MALLOC_TUNING=0", NULL},
  };
  const int64_t n = (int64_t)3 << 20; /* 12 MiB of float32: many gRPC reads */
  for (size_t e = 0; e < G_N_ELEMENTS(envs); e++) {
    weftd_cluster_t c;
    if (!weftd_cluster_start_full(&c, 1, 1, NULL, envs[e], NULL)) return;
    weft_graph_t *g = weft_graph_new();
    weft_status_t *st = NULL;
    weft_tensor_t *value = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
    float *v = weft_tensor_data(value);
    for (int64_t k = 0; k < n; k++) v[k] = (float)(k % 4093) - 2000.0f;
    weft_graph_push_device(g, "/job:ps/task:0/cpu:0");
    weft_output_t big = weft_const(g, "big", value, &st);
    OK(st);
    weft_graph_pop_device(g);
    weft_graph_push_device(g, "/job:worker/task:0/cpu:0");
    weft_unary(g, "Identity", "received", big, &st);
    OK(st);
    weft_graph_pop_device(g);
    weft_session_t *s = weftd_remote_session(g, c.target[1]);
    for (int step = 0; step < 3; step++) {
      const char *fetch = "received";
      weft_tensor_t *out = NULL;
      OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
      g_assert_cmpint(weft_tensor_num_elements(out), ==, n);
      g_assert_true(memcmp(weft_tensor_data(out), v, (size_t)n * sizeof(float)) == 0);
      weft_tensor_unref(out);
    }
    g_test_message("%s %s: three 12 MiB transfers exact", envs[e][0],
                   envs[e][1] ? envs[e][1] : "(defaults)");
    weft_tensor_unref(value);
    weft_session_free(s);
    weft_graph_free(g);
    weftd_cluster_stop(&c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Cluster specs */

static void expect_error(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
}

static void test_spec_parse(void) {
  weft_cluster_spec_t *spec = NULL;
  OK(weft_cluster_spec_parse(" ps=h1:2222,h2:2222 ; worker=h3:2222,[::1]:2223,h4:1 ", &spec));
  g_assert_cmpint(weft_cluster_spec_num_jobs(spec), ==, 2);
  g_assert_cmpstr(weft_cluster_spec_job_name(spec, 1), ==, "worker");
  g_assert_cmpint(weft_cluster_spec_num_tasks(spec, "ps"), ==, 2);
  g_assert_cmpint(weft_cluster_spec_num_tasks(spec, "worker"), ==, 3);
  g_assert_cmpint(weft_cluster_spec_num_tasks(spec, "chief"), ==, 0);
  g_assert_cmpstr(weft_cluster_spec_task_address(spec, "worker", 1), ==, "[::1]:2223");
  g_assert_null(weft_cluster_spec_task_address(spec, "worker", 3));
  char *text = weft_cluster_spec_to_string(spec);
  g_assert_cmpstr(text, ==, "ps=h1:2222,h2:2222;worker=h3:2222,[::1]:2223,h4:1");
  free(text);
  OK(weft_cluster_spec_check_task(spec, "worker", 2));
  /* Every host here holds one task. */
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "ps", 0), ==, 1);
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "worker", 1), ==, 1);
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "worker", 3), ==, 0);
  expect_error(weft_cluster_spec_check_task(spec, "worker", 3), WEFT_INVALID_ARGUMENT,
               "Task /job:worker/task:3 is not in the cluster spec: job 'worker' has tasks 0 to 2");
  expect_error(weft_cluster_spec_check_task(spec, "chief", 0), WEFT_INVALID_ARGUMENT,
               "Job 'chief' is not in the cluster spec (its jobs: ps, worker)");
  weft_cluster_spec_free(spec);

  /* Built in code, with a task index left out. */
  spec = weft_cluster_spec_new();
  OK(weft_cluster_spec_add_task(spec, "worker", 1, "localhost:2001"));
  OK(weft_cluster_spec_add_task(spec, "worker", -1, "localhost:2002"));
  g_assert_cmpint(weft_cluster_spec_num_tasks(spec, "worker"), ==, 3);
  g_assert_cmpstr(weft_cluster_spec_task_address(spec, "worker", 2), ==, "localhost:2002");
  /* The loopback names are one host; a task left out counts for nothing. */
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "worker", 1), ==, 2);
  OK(weft_cluster_spec_add_task(spec, "ps", 0, "127.0.0.1:2000"));
  OK(weft_cluster_spec_add_task(spec, "ps", 1, "[::1]:2000"));
  OK(weft_cluster_spec_add_task(spec, "ps", 2, "other-host:2000"));
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "worker", 2), ==, 4);
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "ps", 2), ==, 1);
  g_assert_cmpint(weft_cluster_spec_tasks_on_host(spec, "worker", 0), ==, 0);
  expect_error(weft_cluster_spec_check_task(spec, "worker", 0), WEFT_INVALID_ARGUMENT,
               "Task /job:worker/task:0 is not in the cluster spec: job 'worker' has tasks 0 to 2");
  expect_error(weft_cluster_spec_add_task(spec, "worker", 1, "localhost:2003"),
               WEFT_INVALID_ARGUMENT,
               "Task /job:worker/task:1 is already in the cluster spec (at localhost:2001)");
  weft_cluster_spec_free(spec);
}

static void test_spec_errors(void) {
  struct {
    const char *text, *message;
  } cases[] = {
      {"", "Cluster spec is empty (expected JOB=HOST:PORT,...;JOB=...)"},
      {"ps", "Malformed cluster spec entry 'ps': expected JOB=HOST:PORT[,HOST:PORT...]"},
      {"ps=h:1;worker", "Malformed cluster spec entry 'worker': expected JOB=HOST:PORT[,HOST:PORT...]"},
      {"1ps=h:1", "Invalid job name '1ps' in cluster spec: a job name is a letter followed by "
                  "letters, digits or '_'"},
      {"ps=h:1;ps=h:2", "Job 'ps' appears twice in the cluster spec"},
      {"ps=", "Job 'ps' has no tasks in the cluster spec"},
      {"ps=h:1,,h:2", "Task /job:ps/task:1 has an empty address in the cluster spec"},
      {"worker=h", "Invalid address 'h' for /job:worker/task:0 in the cluster spec: expected "
                   "HOST:PORT with a port from 1 to 65535"},
      {"worker=h:0", "Invalid address 'h:0' for /job:worker/task:0 in the cluster spec: expected "
                     "HOST:PORT with a port from 1 to 65535"},
      {"worker=h:70000", "Invalid address 'h:70000' for /job:worker/task:0 in the cluster spec: "
                         "expected HOST:PORT with a port from 1 to 65535"},
      {"ps=h:1;worker=h:2,h:1", "Address 'h:1' is used by both /job:ps/task:0 and "
                                "/job:worker/task:1 in the cluster spec"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    weft_cluster_spec_t *spec = (weft_cluster_spec_t *)&cases; /* must be reset to NULL */
    expect_error(weft_cluster_spec_parse(cases[k].text, &spec), WEFT_INVALID_ARGUMENT,
                 cases[k].message);
    g_assert_null(spec);
  }
  weft_cluster_spec_t *spec = NULL;
  expect_error(weft_cluster_spec_from_hosts(NULL, "", &spec), WEFT_INVALID_ARGUMENT,
               "No cluster given: --ps_hosts and --worker_hosts are both empty");
  expect_error(weft_cluster_spec_from_hosts("a:1", "a:1", &spec), WEFT_INVALID_ARGUMENT,
               "Address 'a:1' is used by both /job:ps/task:0 and /job:worker/task:0 in the "
               "cluster spec");
  OK(weft_cluster_spec_from_hosts("a:1,b:1", "c:1", &spec));
  char *text = weft_cluster_spec_to_string(spec);
  g_assert_cmpstr(text, ==, "ps=a:1,b:1;worker=c:1");
  free(text);
  weft_cluster_spec_free(spec);
}

static void test_spec_tf_config(void) {
  weft_cluster_spec_t *spec = NULL;
  char *job = NULL;
  int task = -7;
  OK(weft_cluster_spec_from_tf_config(
      "{\"cluster\": {\"chief\": [\"h:1\"], \"worker\": [\"h:2\", \"h:3\"]},"
      " \"task\": {\"type\": \"worker\", \"index\": 1}}",
      &spec, &job, &task));
  g_assert_cmpstr(job, ==, "worker");
  g_assert_cmpint(task, ==, 1);
  g_assert_cmpstr(weft_cluster_spec_task_address(spec, "chief", 0), ==, "h:1");
  free(job);
  weft_cluster_spec_free(spec);

  OK(weft_cluster_spec_from_tf_config("{\"cluster\": {\"ps\": [\"h:1\"]}}", &spec, &job, &task));
  g_assert_null(job);
  g_assert_cmpint(task, ==, -1);
  weft_cluster_spec_free(spec);

  struct {
    const char *json, *message;
  } cases[] = {
      {"", "TF_CONFIG is empty"},
      {"[1, 2]", "TF_CONFIG must be a JSON object with \"cluster\" and \"task\""},
      {"{\"task\": {\"type\": \"ps\"}}", "TF_CONFIG has no \"cluster\" object"},
      {"{\"cluster\": {}}", "TF_CONFIG: \"cluster\" has no jobs"},
      {"{\"cluster\": {\"ps\": \"h:1\"}}",
       "TF_CONFIG: cluster job 'ps' must be a non-empty list of \"host:port\" strings"},
      {"{\"cluster\": {\"ps\": [\"h:1\", 2]}}",
       "TF_CONFIG: cluster job 'ps' must be a non-empty list of \"host:port\" strings"},
      {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": 3}",
       "TF_CONFIG: \"task\" must be an object with \"type\" and \"index\""},
      {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"index\": 0}}",
       "TF_CONFIG: \"task\" has no \"type\" string"},
      {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"ps\", \"index\": -1}}",
       "TF_CONFIG: \"task\" \"index\" must be a non-negative integer"},
      {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "TF_CONFIG: Job 'worker' is not in the cluster spec (its jobs: ps)"},
      {"{\"cluster\": {\"ps\": [\"h:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 1}}",
       "TF_CONFIG: Task /job:ps/task:1 is not in the cluster spec: job 'ps' has only task 0"},
      {"{\"cluster\": {\"ps\": [\"h:1\"], \"worker\": [\"h:1\"]}}",
       "Address 'h:1' is used by both /job:ps/task:0 and /job:worker/task:0 in the cluster spec"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    expect_error(weft_cluster_spec_from_tf_config(cases[k].json, &spec, &job, &task),
                 WEFT_INVALID_ARGUMENT, cases[k].message);
    g_assert_null(spec);
  }
  weft_status_t *st = weft_cluster_spec_from_tf_config("{\"cluster\": ", &spec, NULL, NULL);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_true(g_str_has_prefix(weft_status_message(st), "TF_CONFIG is not valid JSON: "));
  weft_status_free(st);
}

/* weftd refuses bad command lines and specs with exit status 2 and the same messages. */
static void test_weftd_flag_errors(void) {
  if (!weftd_available()) return;
  struct {
    const char *args[9];
    const char *tf_config;
    const char *message;
  } cases[] = {
      {{"--ps_hosts", "localhost:1", "--worker_hosts", "localhost:1", "--job_name", "ps"},
       NULL,
       "weftd: error: INVALID_ARGUMENT: Address 'localhost:1' is used by both /job:ps/task:0 and "
       "/job:worker/task:0 in the cluster spec\n"},
      {{"--ps_hosts", "localhost:1", "--worker_hosts", "localhost:2,localhost:3", "--job_name",
        "worker", "--task_index", "3"},
       NULL,
       "weftd: error: INVALID_ARGUMENT: Task /job:worker/task:3 is not in the cluster spec: job "
       "'worker' has tasks 0 to 1\n"},
      {{"--cluster", "ps=localhost:1;worker=localhost", "--job_name", "ps"},
       NULL,
       "weftd: error: INVALID_ARGUMENT: Invalid address 'localhost' for /job:worker/task:0 in the "
       "cluster spec: expected HOST:PORT with a port from 1 to 65535\n"},
      {{"--cluster", "ps=localhost:1"},
       NULL,
       "weftd: error: INVALID_ARGUMENT: No job name given: use --job_name (or \"task\" in "
       "TF_CONFIG)\n"},
      {{NULL},
       NULL,
       "weftd: error: INVALID_ARGUMENT: No cluster given: use --cluster, --ps_hosts/--worker_hosts, "
       "the TF_CONFIG environment variable, or --local\n"},
      {{NULL},
       "{\"cluster\": {\"worker\": [\"localhost:1\"]}, \"task\": {\"type\": \"ps\"}}",
       "weftd: error: INVALID_ARGUMENT: TF_CONFIG: Job 'ps' is not in the cluster spec (its jobs: "
       "worker)\n"},
      {{NULL},
       "{\"cluster\": {\"worker\": [\"localhost:1\"]}, \"task\": {\"type\": \"worker\", "
       "\"index\": \"0\"}}",
       "weftd: error: INVALID_ARGUMENT: TF_CONFIG: \"task\" \"index\" must be a non-negative "
       "integer\n"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (char *)WEFTD_PATH);
    for (int a = 0; cases[k].args[a]; a++) g_ptr_array_add(argv, (char *)cases[k].args[a]);
    g_ptr_array_add(argv, NULL);
    char **envp = g_environ_unsetenv(g_get_environ(), "TF_CONFIG");
    if (cases[k].tf_config) envp = g_environ_setenv(envp, "TF_CONFIG", cases[k].tf_config, TRUE);
    char *out = NULL, *err = NULL;
    int status = 0;
    GError *error = NULL;
    g_spawn_sync(NULL, (char **)argv->pdata, envp, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                 &status, &error);
    g_assert_no_error(error);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 2);
    g_assert_cmpstr(out, ==, "");
    g_assert_cmpstr(err, ==, cases[k].message);
    g_free(out);
    g_free(err);
    g_strfreev(envp);
    g_ptr_array_free(argv, TRUE);
  }
}

/* TF_CONFIG starts a task; SIGTERM and SIGINT stop it with exit status 0; a second server on
 * the same port is refused. */
static void test_weftd_tf_config(void) {
  if (!weftd_available()) return;
  int ports[2];
  free_ports(2, ports);
  int p0 = ports[0], p1 = ports[1];
  char *config = g_strdup_printf("TF_CONFIG={\"cluster\": {\"worker\": [\"127.0.0.1:%d\", "
                                 "\"127.0.0.1:%d\"]}, \"task\": {\"type\": \"worker\", "
                                 "\"index\": 1}}",
                                 p0, p1);
  const char *env[] = {config, NULL};
  const char *no_args[] = {NULL};
  weftd_proc_t d = weftd_spawn(no_args, env, false);
  char *want = g_strdup_printf("grpc://127.0.0.1:%d", p1);
  g_assert_cmpstr(d.target, ==, want);
  g_free(want);

  /* The same task again: its port is taken. */
  const char *args[] = {WEFTD_PATH, "--cluster", NULL, "--job_name", "worker", NULL};
  char *cluster = g_strdup_printf("worker=127.0.0.1:%d", p1);
  args[2] = cluster;
  char *err = NULL;
  int status = 0;
  g_spawn_sync(NULL, (char **)args, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
               &status, NULL);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 1);
  g_assert_nonnull(strstr(err, "UNAVAILABLE: Could not listen on loopback port"));
  g_free(err);
  g_free(cluster);

  status = weftd_signal(&d, SIGTERM);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);

  const char *local[] = {"--local", NULL};
  d = weftd_spawn(local, NULL, false);
  g_assert_true(g_str_has_prefix(d.target, "grpc://localhost:"));
  status = weftd_signal(&d, SIGINT);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
  g_free(config);
}

/* ---------------------------------------------------------------------------------------------
 * In-process servers */

static gpointer stop_later(gpointer server) {
  g_usleep(100000);
  weft_status_free(weft_server_stop(server));
  return NULL;
}

static void test_local_server(void) {
  weft_server_t *server = NULL;
  OK(weft_server_new_local(true, &server));
  const char *target = weft_server_target(server);
  g_assert_true(g_str_has_prefix(target, "grpc://localhost:"));

  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  const char *hello = "Hello, distributed TensorFlow!";
  weft_tensor_t *value = weft_tensor_new_string(hello, strlen(hello));
  weft_const(g, "c", value, &st);
  OK(st);
  weft_tensor_unref(value);
  weft_session_t *s = weftd_remote_session(g, target);
  const char *fetch = "c";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  const weft_string_t *str = weft_tensor_data(out);
  g_assert_cmpmem(str->data, str->len, hello, strlen(hello));
  weft_tensor_unref(out);
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "c"), "/job:local/replica:0/task:0/"));

  /* Every device of the (one-task) cluster. */
  weft_device_info_t *devices = NULL;
  int n = 0;
  OK(weft_cluster_list_devices(target, 0, &devices, &n));
  g_assert_cmpint(n, ==, weft_devices_count());
  for (int k = 0; k < n; k++)
    g_assert_true(g_str_has_prefix(devices[k].name, "/job:local/replica:0/task:0/device:"));
  weft_device_list_free(devices, n);

  /* Stopped from another thread while this one joins; later steps fail, stop is idempotent. */
  GThread *t = g_thread_new("stop", stop_later, server);
  weft_server_join(server);
  g_thread_join(t);
  OK(weft_server_stop(server));
  st = weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNAVAILABLE);
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
  st = weft_server_start(server);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  weft_status_free(st);
  weft_server_free(server);

  /* A server that never started frees cleanly. */
  OK(weft_server_new_local(false, &server));
  g_assert_true(g_str_has_prefix(weft_server_target(server), "grpc://localhost:"));
  weft_server_free(server);

  /* A target nobody serves. */
  char *nobody = g_strdup_printf("grpc://127.0.0.1:%d", free_port());
  g = weft_graph_new();
  weft_const_float(g, "x", 1.0f, &st);
  OK(st);
  s = weftd_remote_session(g, nobody);
  fetch = "x";
  st = weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNAVAILABLE);
  g_assert_nonnull(strstr(weft_status_message(st), nobody + strlen("grpc://")));
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
  g_free(nobody);

  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, "grpc://nohostport");
  g = weft_graph_new();
  g_assert_null(weft_session_new(g, o, &st));
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  weft_status_free(st);
  weft_session_options_free(o);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * A real cluster */

/* The cluster_placement example's graph: a on ps 0, b = a + 2 on the worker job, c = a + b on
 * worker 1. */
static void test_placement(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 2, 2, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t a = weft_variable(g, "a", weft_const_float(g, "a_init", 1.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker");
  weft_output_t b = weft_binary(g, "AddV2", "b", a, weft_const_float(g, "two", 2.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:1/cpu:0");
  weft_binary(g, "AddV2", "c", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:ps/task:1");
  weft_binary(g, "Mul", "d", a, weft_const_float(g, "three", 3.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_node_t *init = weft_global_variables_initializer(g, "init", &st);
  OK(st);

  weft_session_t *s = weftd_remote_session(g, c.target[2]); /* worker 0's master */
  run_target(s, weft_node_name(init));
  g_assert_cmpfloat(fetch1(s, "c"), ==, 4.0);
  g_assert_cmpfloat(fetch1(s, "d"), ==, 3.0);
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "a"), "/job:ps/replica:0/task:0/device:"));
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "a/Assign"),
                                 "/job:ps/replica:0/task:0/device:"));
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "b"),
                                 "/job:worker/replica:0/task:0/device:"));
  g_assert_cmpstr(weft_session_node_device(s, "c"), ==, "/job:worker/replica:0/task:1/device:CPU:0");
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "d"), "/job:ps/replica:0/task:1/device:"));
  weft_session_free(s);

  /* A client of another task's master sees the same placement rules and the same variable. */
  s = weftd_remote_session(g, c.target[3]);
  g_assert_cmpfloat(fetch1(s, "c"), ==, 4.0);
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "b"),
                                 "/job:worker/replica:0/task:1/device:"));
  weft_session_free(s);

  /* Every task's devices, named in the cluster's namespace. */
  weft_device_info_t *devices = NULL;
  int n = 0;
  OK(weft_cluster_list_devices(c.target[0], 0, &devices, &n));
  g_assert_cmpint(n, ==, 4 * weft_devices_count());
  const char *tasks[] = {"/job:ps/replica:0/task:0/", "/job:ps/replica:0/task:1/",
                         "/job:worker/replica:0/task:0/", "/job:worker/replica:0/task:1/"};
  for (int k = 0; k < n; k++) {
    g_assert_true(g_str_has_prefix(devices[k].name, tasks[k / weft_devices_count()]));
  }
  weft_device_list_free(devices, n);

  /* A node pinned to a task the cluster does not have. */
  weft_graph_push_device(g, "/job:worker/task:7");
  weft_const_float(g, "nowhere", 1.0f, &st);
  OK(st);
  weft_graph_pop_device(g);
  s = weftd_remote_session(g, c.target[2]);
  const char *fetch = "nowhere";
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "nowhere"));
  g_assert_nonnull(strstr(weft_status_message(st), "/job:worker/task:7"));
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

static weft_tensor_t *sample_tensor(weft_dtype_t dtype, int rank, const int64_t *dims) {
  weft_tensor_t *t = weft_tensor_new(dtype, rank, dims);
  int64_t n = weft_tensor_num_elements(t);
  if (dtype == WEFT_DT_STRING) {
    for (int64_t k = 0; k < n; k++) {
      char buf[32];
      int len = (int)(k % 4 == 3 ? 0 : snprintf(buf, sizeof buf, "s%" G_GINT64_FORMAT "\n", k));
      if (k % 4 == 2) {
        memcpy(buf, "a\0b", 3); /* bytes, not C strings */
        len = 3;
      }
      OK(weft_tensor_set_string(t, k, buf, (size_t)len));
    }
    return t;
  }
  uint8_t *p = weft_tensor_data(t);
  size_t nbytes = weft_tensor_nbytes(t);
  for (size_t k = 0; k < nbytes; k++) p[k] = (uint8_t)(k * 37 + dtype);
  if (dtype == WEFT_DT_BOOL) {
    for (size_t k = 0; k < nbytes; k++) p[k] &= 1;
  }
  if (dtype == WEFT_DT_HALF || dtype == WEFT_DT_BFLOAT16 || dtype == WEFT_DT_FLOAT ||
      dtype == WEFT_DT_DOUBLE) {
    /* Bit patterns that are numbers (no NaN, which would not compare equal to itself). */
    size_t size = weft_dtype_size(dtype);
    for (size_t k = 0; k < nbytes; k += size) p[k + size - 1] &= 0x3f;
  }
  return t;
}

static void assert_same_tensor(const weft_tensor_t *a, const weft_tensor_t *b) {
  g_assert_cmpint(weft_tensor_dtype(a), ==, weft_tensor_dtype(b));
  g_assert_cmpint(weft_tensor_rank(a), ==, weft_tensor_rank(b));
  for (int k = 0; k < weft_tensor_rank(a); k++)
    g_assert_cmpint(weft_tensor_dims(a)[k], ==, weft_tensor_dims(b)[k]);
  if (weft_tensor_dtype(a) == WEFT_DT_STRING) {
    const weft_string_t *x = weft_tensor_data(a), *y = weft_tensor_data(b);
    for (int64_t k = 0; k < weft_tensor_num_elements(a); k++)
      g_assert_cmpmem(x[k].data, x[k].len, y[k].data, y[k].len);
  } else {
    g_assert_cmpmem(weft_tensor_data(a), weft_tensor_nbytes(a), weft_tensor_data(b),
                    weft_tensor_nbytes(b));
  }
}

/* Every dtype crosses from a ps to a worker (Const there, Identity here), including strings with
 * empty and binary elements, and tensors with no elements; fed tensors reach both tasks. */
static void test_send_recv_dtypes(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_UINT8,
                                 WEFT_DT_INT16,  WEFT_DT_INT8,   WEFT_DT_STRING, WEFT_DT_INT64,
                                 WEFT_DT_BOOL,   WEFT_DT_BFLOAT16, WEFT_DT_UINT16, WEFT_DT_HALF,
                                 WEFT_DT_UINT32, WEFT_DT_UINT64};
  const int64_t shapes[3][2] = {{2, 3}, {0, 0}, {3, 0}};
  const int ranks[3] = {2, 1, 2};
  int n = (int)G_N_ELEMENTS(dtypes) * 3;
  weft_graph_t *g = weft_graph_new();
  weft_tensor_t **values = g_new0(weft_tensor_t *, n);
  char **fetches = g_new0(char *, n + 1);
  weft_status_t *st = NULL;
  for (int k = 0; k < n; k++) {
    weft_dtype_t dtype = dtypes[k / 3];
    values[k] = sample_tensor(dtype, ranks[k % 3], shapes[k % 3]);
    char *name = g_strdup_printf("v%d_%s", k, weft_dtype_name(dtype));
    weft_graph_push_device(g, "/job:ps/task:0/cpu:0");
    weft_output_t v = weft_const(g, name, values[k], &st);
    OK(st);
    weft_graph_pop_device(g);
    fetches[k] = g_strdup_printf("%s/copy", name);
    weft_graph_push_device(g, "/job:worker/task:0/cpu:0");
    weft_unary(g, "Identity", fetches[k], v, &st);
    OK(st);
    weft_graph_pop_device(g);
    g_free(name);
  }
  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  weft_tensor_t **out = g_new0(weft_tensor_t *, n);
  OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)fetches, out, n, NULL, 0));
  for (int k = 0; k < n; k++) {
    assert_same_tensor(out[k], values[k]);
    weft_tensor_unref(out[k]);
  }

  /* A fed string tensor read on both tasks; a fed tensor fetched as it is. */
  int64_t d3[1] = {3};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_STRING, 1, d3, &st);
  OK(st);
  weft_graph_push_device(g, "/job:ps/task:0/cpu:0");
  weft_unary(g, "Identity", "x_on_ps", x, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:0/cpu:0");
  weft_unary(g, "Identity", "x_on_worker", x, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_tensor_t *feed = sample_tensor(WEFT_DT_STRING, 1, d3);
  const char *feed_names[] = {"x"};
  const char *names[] = {"x_on_ps", "x_on_worker", "x"};
  weft_tensor_t *got[3] = {NULL};
  OK(weft_session_run(s, feed_names, &feed, 1, names, got, 3, NULL, 0));
  for (int k = 0; k < 3; k++) {
    assert_same_tensor(got[k], feed);
    weft_tensor_unref(got[k]);
  }
  weft_tensor_unref(feed);

  for (int k = 0; k < n; k++) weft_tensor_unref(values[k]);
  g_free(values);
  g_free(out);
  g_strfreev(fetches);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* 256 MiB made on the ps, summed on the worker (one RecvTensor of 256 MiB), and fed from the
 * client and fetched back (RunStep both ways). */
static void test_large_tensor(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const int32_t n = 64 * 1024 * 1024; /* int32 elements: 256 MiB */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0/cpu:0");
  int64_t d1[1] = {1};
  weft_tensor_t *dims = weft_tensor_new_from_data(WEFT_DT_INT32, 1, d1, &n, sizeof n, NULL);
  weft_output_t dims_out = weft_const(g, "dims", dims, &st);
  OK(st);
  weft_tensor_unref(dims);
  weft_tensor_t *one = weft_tensor_new_scalar_int32(1);
  weft_output_t one_out = weft_const(g, "one", one, &st);
  OK(st);
  weft_tensor_unref(one);
  weft_op_builder_t *b = weft_op_new(g, "Fill", "big");
  weft_op_add_input(b, dims_out);
  weft_op_add_input(b, one_out);
  weft_node_t *big = NULL;
  OK(weft_op_finish(b, &big));
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:0/cpu:0");
  weft_tensor_t *axis = weft_tensor_new_scalar_int32(0);
  weft_output_t axis_out = weft_const(g, "axis", axis, &st);
  OK(st);
  weft_tensor_unref(axis);
  weft_op_builder_t *sb = weft_op_new(g, "Sum", "total");
  weft_op_add_input(sb, weft_out(big, 0));
  weft_op_add_input(sb, axis_out);
  OK(weft_op_finish(sb, NULL));
  weft_graph_pop_device(g);

  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  gint64 t0 = g_get_monotonic_time();
  g_assert_cmpfloat(fetch1(s, "total"), ==, (double)n);
  g_test_message("256 MiB through RecvTensor: %.2f s", (g_get_monotonic_time() - t0) / 1e6);

  /* Feed 256 MiB of floats to the ps and fetch them back through the worker. */
  int64_t dn[1] = {n};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, dn, &st);
  OK(st);
  weft_graph_push_device(g, "/job:worker/task:0/cpu:0");
  weft_unary(g, "Identity", "x_back", x, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_tensor_t *feed = weft_tensor_new(WEFT_DT_FLOAT, 1, dn);
  float *p = weft_tensor_data(feed);
  for (int32_t k = 0; k < n; k++) p[k] = (float)(k & 1023);
  const char *feed_name = "x", *fetch = "x_back";
  weft_tensor_t *out = NULL;
  t0 = g_get_monotonic_time();
  OK(weft_session_run(s, &feed_name, &feed, 1, &fetch, &out, 1, NULL, 0));
  g_test_message("256 MiB fed and fetched: %.2f s", (g_get_monotonic_time() - t0) / 1e6);
  g_assert_cmpint(weft_tensor_num_elements(out), ==, n);
  g_assert_true(memcmp(weft_tensor_data(out), p, (size_t)n * sizeof(float)) == 0);
  weft_tensor_unref(out);
  weft_tensor_unref(feed);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

static void push_worker(weft_graph_t *g, int worker) {
  char *device = g_strdup_printf("/job:worker/task:%d", worker);
  weft_graph_push_device(g, device);
  g_free(device);
}

/* The same variable graph, as a separate client each time. */
static weft_graph_t *shared_graph(int worker) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t a = weft_variable(g, "a", weft_const_float(g, "a_init", 3.0f, &st), &st);
  OK(st);
  weft_output_t b = weft_variable(g, "b", weft_const_float(g, "b_init", 4.0f, &st), &st);
  OK(st);
  weft_op_builder_t *assign = weft_op_new(g, "Assign", "rebind_a");
  weft_op_add_input(assign, weft_out(weft_graph_node(g, "a"), 0));
  weft_op_add_input(assign, weft_const_float(g, "ten", 10.0f, &st));
  OK(weft_op_finish(assign, NULL));
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  push_worker(g, worker);
  weft_binary(g, "Mul", "product", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

static void test_shared_variables(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 2, NULL)) return;
  weft_graph_t *g0 = shared_graph(0), *g1 = shared_graph(1);
  weft_session_t *s0 = weftd_remote_session(g0, c.target[1]);
  weft_session_t *s1 = weftd_remote_session(g1, c.target[2]);
  run_target(s0, "init");
  g_assert_cmpfloat(fetch1(s0, "product"), ==, 12.0);
  run_target(s1, "rebind_a"); /* no initializer on this client: the variables are the ps's */
  g_assert_cmpfloat(fetch1(s1, "product"), ==, 40.0);
  g_assert_cmpfloat(fetch1(s0, "a"), ==, 10.0);

  /* They outlive the client sessions. */
  weft_session_free(s0);
  s0 = weftd_remote_session(g0, c.target[1]);
  g_assert_cmpfloat(fetch1(s0, "product"), ==, 40.0);

  /* Reset drops them on every task. */
  OK(weft_cluster_reset(c.target[1], NULL, 0));
  const char *fetch = "product";
  weft_tensor_t *out = NULL;
  weft_status_t *st = weft_session_run(s1, NULL, NULL, 0, &fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_nonnull(strstr(weft_status_message(st), "uninitialized"));
  weft_status_free(st);
  g_assert_null(out);
  weft_session_free(s0);
  weft_session_free(s1);
  weft_graph_free(g0);
  weft_graph_free(g1);
  weftd_cluster_stop(&c);
}

/* A step whose result goes to a variable on the ps (the ps waits for the worker's tensor). */
static weft_graph_t *store_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:worker/task:0");
  weft_output_t x = weft_const_float(g, "x", 2.5f, &st);
  OK(st);
  weft_output_t y = weft_binary(g, "Mul", "y", x, x, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_variable(g, "v", weft_const_float(g, "zero", 0.0f, &st), &st);
  OK(st);
  weft_op_builder_t *ab = weft_op_new(g, "Assign", "store");
  weft_op_add_input(ab, weft_out(weft_graph_node(g, "v"), 0));
  weft_op_add_input(ab, y);
  OK(weft_op_finish(ab, NULL));
  weft_graph_pop_device(g);
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  return g;
}

/* Initialises store_graph()'s variable and runs the step once. */
static void init_and_store(weft_session_t *s) {
  run_target(s, "init");
  run_target(s, "store");
  g_assert_cmpfloat(fetch1(s, "v"), ==, 6.25);
}

typedef struct step_thread {
  weft_session_t *s;
  const char *target;
  weft_status_t *status;
  gint64 finished;
} step_thread_t;

static gpointer run_store(gpointer data) {
  step_thread_t *t = data;
  t->status = weft_session_run(t->s, NULL, NULL, 0, NULL, NULL, 0, &t->target, 1);
  t->finished = g_get_monotonic_time();
  return NULL;
}

/* A ps that hangs (SIGSTOP) makes the step fail at its deadline, naming the ps; a ps killed
 * (SIGKILL) while a step waits on it fails the step at once with UNAVAILABLE naming it; a new
 * session then fails within the master's status timeout, naming the ps. */
static void test_ps_killed(void) {
  const char *extra[] = {"--status_timeout_ms", "2000", NULL};
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, extra)) return;
  weft_graph_t *g = store_graph();
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, c.target[1]);
  weft_session_options_set_operation_timeout_ms(o, 1500);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  init_and_store(s);
  /* A second client without a deadline of its own, with its graphs registered already. */
  weft_session_t *s2 = weftd_remote_session(g, c.target[1]);
  run_target(s2, "store");

  /* Hung: the deadline of the step (1.5 s, plus the master's slack) ends it. */
  weftd_cluster_signal(&c, 0, SIGSTOP);
  gint64 t0 = g_get_monotonic_time();
  const char *store = "store";
  st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &store, 1);
  double hung_s = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("hung ps: %.2f s: %s", hung_s, weft_status_message(st));
  g_assert_cmpint(weft_status_code(st), ==, WEFT_DEADLINE_EXCEEDED);
  g_assert_nonnull(strstr(weft_status_message(st), "/job:ps/replica:0/task:0"));
  g_assert_cmpfloat(hung_s, <, 8.0);
  weft_status_free(st);
  weft_session_free(s);

  /* Killed in the middle of a step. */
  step_thread_t t = {s2, "store", NULL, 0};
  GThread *th = g_thread_new("step", run_store, &t);
  g_usleep(500000);
  g_assert_cmpint(t.finished, ==, 0); /* still waiting for the frozen ps */
  gint64 killed = g_get_monotonic_time();
  weftd_cluster_signal(&c, 0, SIGKILL);
  g_thread_join(th);
  double after_kill = (t.finished - killed) / 1e6;
  g_test_message("killed ps: failed %.2f s after the kill: %s", after_kill,
                 weft_status_message(t.status));
  g_assert_cmpint(weft_status_code(t.status), ==, WEFT_UNAVAILABLE);
  g_assert_nonnull(strstr(weft_status_message(t.status), "/job:ps/replica:0/task:0"));
  g_assert_cmpfloat(after_kill, <, 5.0);
  weft_status_free(t.status);
  weft_session_free(s2);

  /* A new session cannot learn the cluster: the message names the task that is gone. */
  s = weftd_remote_session(g, c.target[1]);
  t0 = g_get_monotonic_time();
  st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &store, 1);
  double create_s = (g_get_monotonic_time() - t0) / 1e6;
  char *want = g_strdup_printf("CreateSession: 1 of 2 tasks did not answer GetStatus within 2000 "
                               "ms: /job:ps/replica:0/task:0 (%s)",
                               c.address[0]);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNAVAILABLE);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_assert_cmpfloat(create_s, <, 6.0);
  g_free(want);
  weft_status_free(st);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* A kernel that fails on worker 0 while the ps and worker 1 wait for what it would have sent:
 * every partition stops at once, and the step fails with the original error, not an echo. */
static void test_kernel_error_aborts_step(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 2, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:worker/task:0");
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, -1, NULL, &st);
  OK(st);
  weft_tensor_t *shape = weft_tensor_new(WEFT_DT_INT32, 1, (int64_t[]){2});
  ((int32_t *)weft_tensor_data(shape))[0] = 4;
  ((int32_t *)weft_tensor_data(shape))[1] = 4;
  weft_output_t r = weft_binary(g, "Reshape", "reshape", x, weft_const(g, "shape", shape, &st), &st);
  OK(st);
  weft_tensor_unref(shape);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t y = weft_binary(g, "AddV2", "y", r, weft_const_float(g, "one", 1.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  push_worker(g, 1);
  weft_binary(g, "Mul", "z", y, weft_const_float(g, "two", 2.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weftd_remote_session(g, c.target[2]);

  const char *feed = "x", *fetch = "z";
  weft_tensor_t *out = NULL;
  weft_tensor_t *bad = weft_tensor_new(WEFT_DT_FLOAT, 1, (int64_t[]){3});
  gint64 t0 = g_get_monotonic_time();
  st = weft_session_run(s, &feed, &bad, 1, &fetch, &out, 1, NULL, 0);
  double took = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("failed in %.2f s: %s", took, weft_status_message(st));
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "reshape"));
  g_assert_nonnull(strstr(weft_status_message(st), "/job:worker/replica:0/task:0/device:"));
  g_assert_null(strstr(weft_status_message(st), WEFT_DERIVED_PREFIX));
  g_assert_cmpfloat(took, <, 5.0);
  g_assert_null(out);
  weft_status_free(st);
  weft_tensor_unref(bad);

  /* The same partitions run the next step. */
  weft_tensor_t *good = weft_tensor_new(WEFT_DT_FLOAT, 1, (int64_t[]){16});
  ((float *)weft_tensor_data(good))[5] = 4.0f;
  OK(weft_session_run(s, &feed, &good, 1, &fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(out, 5), ==, 10.0);
  g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 2.0);
  weft_tensor_unref(out);
  weft_tensor_unref(good);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* A step whose master-task partition only computes what it sends (a fed 2x2 matrix inverted,
 * then sent to the ps) runs that partition before the ps's RunGraph is sent: traced, every node
 * of the worker's ends before the ps's first starts. When it fails, the ps's partition is not
 * started, and the step fails at once with the worker's own error. */
static void test_sends_first(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  push_worker(g, 0);
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, (int64_t[]){2, 2}, &st);
  OK(st);
  weft_output_t inv = weft_unary(g, "MatrixInverse", "inverse", x, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_binary(g, "Mul", "z", inv, weft_const_float(g, "two", 2.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weftd_remote_session(g, c.target[1]);

  const char *feed = "x", *fetch = "z";
  weft_tensor_t *m = weft_tensor_new(WEFT_DT_FLOAT, 2, (int64_t[]){2, 2});
  float *v = weft_tensor_data(m);
  v[0] = 2.0f, v[1] = 0.0f, v[2] = 0.0f, v[3] = 4.0f;
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  for (int round = 0; round < 2; round++) {
    weft_tensor_t *out = NULL;
    weft_run_metadata_t *meta = NULL;
    OK(weft_session_run_with_options(s, ro, &feed, &m, 1, &fetch, &out, 1, NULL, 0, &meta));
    g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 1.0);
    g_assert_cmpfloat(weft_tensor_get_double(out, 1), ==, 0.0);
    g_assert_cmpfloat(weft_tensor_get_double(out, 3), ==, 0.5);
    int64_t worker_end = 0, ps_start = G_MAXINT64;
    int on_worker = 0, on_ps = 0;
    for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
      const weft_node_stats_t *n = weft_run_metadata_node_stats(meta, k);
      if (strstr(n->device, "/job:worker/")) {
        worker_end = MAX(worker_end, n->start_us + n->duration_us);
        on_worker++;
      } else {
        ps_start = MIN(ps_start, n->start_us);
        on_ps++;
      }
    }
    g_assert_cmpint(on_worker, >=, 2); /* the inverse and its _Send */
    g_assert_cmpint(on_ps, >=, 2);     /* the _Recv and the Mul */
    g_assert_cmpint(worker_end, <=, ps_start);
    weft_run_metadata_free(meta);
    weft_tensor_unref(out);
  }
  weft_run_options_free(ro);

  v[3] = 0.0f; /* singular */
  weft_tensor_t *out = NULL;
  gint64 t0 = g_get_monotonic_time();
  st = weft_session_run(s, &feed, &m, 1, &fetch, &out, 1, NULL, 0);
  double took = (g_get_monotonic_time() - t0) / 1e6;
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "inverse"));
  g_assert_nonnull(strstr(weft_status_message(st), "Input is not invertible."));
  g_assert_null(strstr(weft_status_message(st), WEFT_DERIVED_PREFIX));
  g_assert_cmpfloat(took, <, 5.0);
  g_assert_null(out);
  weft_status_free(st);

  /* The same partitions run the next step. */
  v[3] = 4.0f;
  OK(weft_session_run(s, &feed, &m, 1, &fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(out, 3), ==, 0.5);
  weft_tensor_unref(out);
  weft_tensor_unref(m);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* A ps that restarts loses its graphs and variables: the next step fails with ABORTED, the one
 * after runs again (with the variable uninitialised until the client initialises it). */
static void test_restart_aborted(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = store_graph();
  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  init_and_store(s);

  weftd_cluster_signal(&c, 0, SIGKILL);
  weftd_cluster_restart(&c, 0, NULL);

  const char *store = "store";
  weft_status_t *st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &store, 1);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_ABORTED);
  g_assert_nonnull(strstr(weft_status_message(st), "/job:ps/replica:0/task:0 was restarted"));
  weft_status_free(st);
  const char *v = "v";
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, &v, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_nonnull(strstr(weft_status_message(st), "uninitialized"));
  weft_status_free(st);
  init_and_store(s);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

static void expect_raw_error(const char *address, const char *method, const void *bytes,
                             size_t len, weft_code_t code, const char *needle) {
  char *answer = NULL;
  size_t answer_len = 0;
  weft_status_t *st = weft__rpc_raw(address, method, bytes, len, 5000, &answer, &answer_len);
  g_test_message("%s: %s", method, weft_status_message(st));
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  g_assert_nonnull(strstr(weft_status_message(st), needle));
  weft_status_free(st);
  g_free(answer);
}


/* Requests that are garbage, lie about their sizes, name unknown ops or devices of another
 * task, or call methods that do not exist: each gets an error, and the server keeps serving. */
static void test_malformed_requests(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *ps = c.address[0];
  expect_raw_error(ps, "/weft.Master/RunStep", "\xff\xff\xff\xff garbage", 13,
                   WEFT_INVALID_ARGUMENT, "Malformed request");
  expect_raw_error(ps, "/weft.Worker/RunGraph", "", 0, WEFT_INVALID_ARGUMENT, "Malformed request");
  expect_raw_error(ps, "/weft.Worker/NoSuchMethod", "x", 1, WEFT_UNIMPLEMENTED,
                   "no method '/weft.Worker/NoSuchMethod'");

  /* A tensor that claims a terabyte. */
  Weft__RunGraphRequest run = WEFT__RUN_GRAPH_REQUEST__INIT;
  run.graph_handle = "nope";
  Weft__TensorMeta meta = WEFT__TENSOR_META__INIT;
  int64_t dims[1] = {250000000000LL};
  meta.dtype = WEFT_DT_FLOAT;
  meta.n_dims = 1;
  meta.dims = dims;
  meta.nbytes = 1000000000000ULL;
  Weft__TensorMeta *metas[1] = {&meta};
  Weft__TensorList list = WEFT__TENSOR_LIST__INIT;
  list.n_tensor = 1;
  list.tensor = metas;
  GByteArray *bytes = weftd_frame_request(&run.base, &list, NULL, 0);
  expect_raw_error(ps, "/weft.Worker/RunGraph", bytes->data, bytes->len, WEFT_INVALID_ARGUMENT,
                   "field 'feed[0].tensor_content' needs 1000000000000 bytes");
  g_byte_array_free(bytes, TRUE);
  /* A size that does not match the shape. */
  dims[0] = 4;
  meta.nbytes = 12;
  bytes = weftd_frame_request(&run.base, &list, NULL, 0);
  g_byte_array_append(bytes, (const guint8 *)"123456789012", 12);
  expect_raw_error(ps, "/weft.Worker/RunGraph", bytes->data, bytes->len, WEFT_INVALID_ARGUMENT,
                   "holds 12 bytes but dtype float32 and shape [4] need 16");
  g_byte_array_free(bytes, TRUE);
  /* A bad dtype. */
  meta.dtype = 77;
  bytes = weftd_frame_request(&run.base, &list, NULL, 0);
  expect_raw_error(ps, "/weft.Worker/RunGraph", bytes->data, bytes->len, WEFT_INVALID_ARGUMENT,
                   "field 'feed[0].dtype' is 77");
  g_byte_array_free(bytes, TRUE);

  /* Graphs with an unknown op, and with a node on another task's device. */
  Weft__TensorList empty = WEFT__TENSOR_LIST__INIT;
  const char *ops[2] = {"NoSuchOp", "NoOp"};
  const char *devices[2] = {"/job:ps/replica:0/task:0/device:CPU:0",
                            "/job:worker/replica:0/task:0/device:CPU:0"};
  const char *needles[2] = {"Op type not registered 'NoSuchOp'",
                            "which is not a device of task /job:ps/replica:0/task:0"};
  for (int k = 0; k < 2; k++) {
    Tensorflow__NodeDef node = TENSORFLOW__NODE_DEF__INIT;
    node.name = "n";
    node.op = (char *)ops[k];
    node.device = (char *)devices[k];
    Tensorflow__NodeDef *nodes[1] = {&node};
    Tensorflow__GraphDef gd = TENSORFLOW__GRAPH_DEF__INIT;
    gd.n_node = 1;
    gd.node = nodes;
    Weft__RegisterGraphRequest reg = WEFT__REGISTER_GRAPH_REQUEST__INIT;
    reg.graph_def = &gd;
    bytes = weftd_frame_request(&reg.base, &empty, NULL, 0);
    expect_raw_error(ps, "/weft.Worker/RegisterGraph", bytes->data, bytes->len,
                     WEFT_INVALID_ARGUMENT, needles[k]);
    g_byte_array_free(bytes, TRUE);
  }
  Weft__RecvTensorRequest recv = WEFT__RECV_TENSOR_REQUEST__INIT;
  bytes = weftd_frame_request(&recv.base, &empty, NULL, 0);
  expect_raw_error(ps, "/weft.Worker/RecvTensor", bytes->data, bytes->len, WEFT_INVALID_ARGUMENT,
                   "no rendezvous key");
  g_byte_array_free(bytes, TRUE);
  /* Grouped receives: too many keys, an empty one. */
  char *more[64];
  for (int k = 0; k < 64; k++) more[k] = "k:0;/job:ps/replica:0/task:0";
  recv.rendezvous_key = "k:0;/job:ps/replica:0/task:0";
  recv.n_more_keys = 64;
  recv.more_keys = more;
  bytes = weftd_frame_request(&recv.base, &empty, NULL, 0);
  expect_raw_error(ps, "/weft.Worker/RecvTensor", bytes->data, bytes->len, WEFT_INVALID_ARGUMENT,
                   "Invalid RecvTensor request: field 'more_keys' names 64 keys; a grouped "
                   "receive takes at most 64 keys in all");
  g_byte_array_free(bytes, TRUE);
  more[1] = "";
  recv.n_more_keys = 2;
  bytes = weftd_frame_request(&recv.base, &empty, NULL, 0);
  expect_raw_error(ps, "/weft.Worker/RecvTensor", bytes->data, bytes->len, WEFT_INVALID_ARGUMENT,
                   "Invalid RecvTensor request: field 'more_keys[1]' is empty");
  g_byte_array_free(bytes, TRUE);
  /* A _Recv whose group does not list its own key. */
  {
    weft_graph_t *rg = weft_graph_new();
    weft_graph_push_device(rg, "/job:ps/replica:0/task:0/device:CPU:0");
    weft_op_builder_t *rb = weft_op_new(rg, "_Recv", "r");
    weft_op_set_attr_string(rb, "tensor_name", "k:0;/job:ps/replica:0/task:0");
    weft_op_set_attr_string(rb, "send_device", "/job:worker/replica:0/task:0/device:CPU:0");
    weft_op_set_attr_string(rb, "recv_device", "/job:ps/replica:0/task:0/device:CPU:0");
    weft_op_set_attr_int(rb, "send_device_incarnation", 0);
    weft_op_set_attr_bool(rb, "client_terminated", false);
    weft_op_set_attr_type(rb, "tensor_type", WEFT_DT_FLOAT);
    const char *others[2] = {"one", "two"};
    weft_op_set_attr_string_list(rb, WEFT_RECV_GROUP_ATTR, others, 2);
    OK(weft_op_finish(rb, NULL));
    weft_graph_pop_device(rg);
    Tensorflow__GraphDef *gd = NULL;
    OK(weft__graph_to_graphdef_proto(rg, &gd));
    Weft__TaskAddress peer = WEFT__TASK_ADDRESS__INIT;
    peer.task = "/job:worker/replica:0/task:0";
    peer.address = (char *)c.address[1];
    Weft__TaskAddress *peers[1] = {&peer};
    Weft__RegisterGraphRequest reg = WEFT__REGISTER_GRAPH_REQUEST__INIT;
    reg.graph_def = gd;
    reg.n_peer = 1;
    reg.peer = peers;
    bytes = weftd_frame_request(&reg.base, &empty, NULL, 0);
    expect_raw_error(ps, "/weft.Worker/RegisterGraph", bytes->data, bytes->len,
                     WEFT_INVALID_ARGUMENT, "Node 'r' (_Recv): attr '_weft_recv_group' must list "
                     "2 to 64 distinct rendezvous keys, 'k:0;/job:ps/replica:0/task:0' among them");
    g_byte_array_free(bytes, TRUE);
    tensorflow__graph_def__free_unpacked(gd, NULL);
    weft_graph_free(rg);
  }
  Weft__RunStepRequest step = WEFT__RUN_STEP_REQUEST__INIT;
  step.session_handle = "no-such-session";
  char *fetch = "x";
  step.n_fetch = 1;
  step.fetch = &fetch;
  bytes = weftd_frame_request(&step.base, &empty, NULL, 0);
  expect_raw_error(ps, "/weft.Master/RunStep", bytes->data, bytes->len, WEFT_ABORTED,
                   "Session 'no-such-session' is not known");
  g_byte_array_free(bytes, TRUE);

  /* Still serving. */
  weft_graph_t *g = store_graph();
  weft_session_t *s = weftd_remote_session(g, c.target[0]);
  init_and_store(s);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

typedef struct client_thread {
  const char *target;
  int index;
  bool shared;
  weft_session_t *session;
} client_thread_t;

/* y = x * w + index with x fed, on the client's worker, w on the ps. */
static weft_graph_t *client_graph(int worker, int index) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t w = weft_const_float(g, "w", 3.0f, &st);
  OK(st);
  weft_graph_pop_device(g);
  push_worker(g, worker);
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 0, NULL, &st);
  OK(st);
  weft_output_t xw = weft_binary(g, "Mul", "xw", x, w, &st);
  OK(st);
  weft_binary(g, "AddV2", "y", xw, weft_const_float(g, "k", (float)index, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  return g;
}

static gpointer client_main(gpointer data) {
  client_thread_t *t = data;
  weft_graph_t *g = t->shared ? NULL : client_graph(t->index % 2, t->index);
  weft_session_t *s = t->shared ? t->session : weftd_remote_session(g, t->target);
  for (int step = 0; step < 15; step++) {
    weft_tensor_t *x = weft_tensor_new_scalar_float((float)step);
    const char *feed = "x", *fetch = "y";
    weft_tensor_t *y = NULL;
    OK(weft_session_run(s, &feed, &x, 1, &fetch, &y, 1, NULL, 0));
    double want = 3.0 * step + (t->shared ? 100 : t->index);
    g_assert_cmpfloat(weft_tensor_get_double(y, 0), ==, want);
    weft_tensor_unref(x);
    weft_tensor_unref(y);
  }
  if (!t->shared) {
    weft_session_free(s);
    weft_graph_free(g);
  }
  return NULL;
}

/* Six clients with their own sessions on two workers' masters, and three threads sharing one
 * session, all at once. */
static void test_concurrent_clients(void) {
  client_thread_t t[9];
  GThread *threads[9];
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 2, NULL)) return;
  weft_graph_t *shared_g = client_graph(1, 100);
  weft_session_t *shared = weftd_remote_session(shared_g, c.target[1]);
  for (int k = 0; k < 9; k++) {
    t[k].index = k;
    t[k].target = c.target[1 + k % 2];
    t[k].shared = k >= 6;
    t[k].session = shared;
    threads[k] = g_thread_new("client", client_main, &t[k]);
  }
  for (int k = 0; k < 9; k++) g_thread_join(threads[k]);
  weft_session_free(shared);
  weft_graph_free(shared_g);
  weftd_cluster_stop(&c);
}

/* Sixteen clients at once on one worker's master: each RunStep waits for the ps, so the
 * server takes on a polling thread per call in flight; once the burst is over, at most a few
 * spare ones stay (server.c, MAX_IDLE_POLLERS = 4) besides the one polling. Counted against the
 * same process after one client's steps, since threads that libraries start lazily from a
 * polling thread (lavapipe's, OpenBLAS's) inherit its name. */
static void test_server_threads_after_burst(void) {
  enum { CLIENTS = 16 };
  client_thread_t t[CLIENTS];
  GThread *threads[CLIENTS];
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  for (int k = 0; k < CLIENTS; k++) {
    t[k].index = 2 * k; /* client_graph(index % 2): all on worker 0 */
    t[k].target = c.target[1];
    t[k].shared = false;
    t[k].session = NULL;
  }
  client_main(&t[0]);
  int warm = proc_threads_named(c.d[1].pid, "weft-grpc");
  for (int k = 0; k < CLIENTS; k++) threads[k] = g_thread_new("client", client_main, &t[k]);
  for (int k = 0; k < CLIENTS; k++) g_thread_join(threads[k]);
  /* The last answers' completions reach the queue after the clients return. */
  int after = 0;
  for (int tries = 0; tries < 50; tries++) {
    after = proc_threads_named(c.d[1].pid, "weft-grpc");
    if (after <= warm + 4) break;
    g_usleep(20000);
  }
  g_test_message("weft-grpc threads of the worker: %d after one client, %d after %d at once",
                 warm, after, CLIENTS);
  g_assert_cmpint(after, <=, warm + 4);
  weftd_cluster_stop(&c);
}

/* ---------------------------------------------------------------------------------------------
 * Grouped receives */

#define TASK0 "/job:worker/replica:0/task:0"
#define TASK1 "/job:worker/replica:0/task:1"

static weft_output_t small_const(weft_graph_t *g, const char *name, int64_t n, float value) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  for (int64_t k = 0; k < n; k++) ((float *)weft_tensor_data(t))[k] = value;
  weft_status_t *st = NULL;
  weft_output_t out = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return out;
}

static weft_output_t unary(weft_graph_t *g, const char *op, const char *name, weft_output_t x) {
  weft_status_t *st = NULL;
  weft_output_t out = weft_unary(g, op, name, x, &st);
  OK(st);
  return out;
}

static weft_output_t binary(weft_graph_t *g, const char *op, const char *name, weft_output_t x,
                            weft_output_t y) {
  weft_status_t *st = NULL;
  weft_output_t out = weft_binary(g, op, name, x, y, &st);
  OK(st);
  return out;
}

/* Small tensors: a, b; a big one (128 KiB) that is never grouped. Task 1 fetches u = a * b and
 * w = Identity(big). */
static weft_graph_t *simple_group_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, TASK0 "/device:CPU:0");
  weft_output_t a = small_const(g, "a", 1, 3.0f), b = small_const(g, "b", 4, 2.0f);
  weft_output_t big = small_const(g, "big", 32768, 1.0f);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK1 "/device:CPU:0");
  binary(g, "Mul", "u", a, b);
  unary(g, "Identity", "w", big);
  weft_graph_pop_device(g);
  return g;
}

/* c, sent to task 1 like a, is computed on task 0 from what task 1 made of a: waiting for a and
 * c together would wait forever. */
static weft_graph_t *dependent_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, TASK0 "/device:CPU:0");
  weft_output_t a = small_const(g, "a", 2, 1.5f);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK1 "/device:CPU:0");
  weft_output_t x = unary(g, "Neg", "x", a);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK0 "/device:CPU:0");
  weft_output_t c = binary(g, "Mul", "c", x, x);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK1 "/device:CPU:0");
  binary(g, "AddV2", "y", x, c); /* -1.5 + 2.25 */
  weft_graph_pop_device(g);
  return g;
}

/* Two groups that are each fine alone but wait on each other together: a1 = f(b2) and a2 go to
 * task 1, b1 = g(a2) and b2 to task 0. Only one of them may be made. */
static weft_graph_t *crossing_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, TASK1 "/device:CPU:0");
  weft_output_t b2 = small_const(g, "b2", 1, 5.0f);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK0 "/device:CPU:0");
  weft_output_t a1 = unary(g, "Neg", "a1", b2);
  weft_output_t a2 = small_const(g, "a2", 1, 7.0f);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK1 "/device:CPU:0");
  weft_output_t b1 = unary(g, "Neg", "b1", a2);
  unary(g, "Identity", "k", a1); /* -5 */
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK0 "/device:CPU:0");
  unary(g, "Identity", "h", b1); /* -7 */
  weft_graph_pop_device(g);
  return g;
}

/* Partitions the whole graph (every node placed where it asked, fetching `fetches`); returns
 * the partitions. */
static GPtrArray *partition_all(weft_graph_t *g, const char *const *fetches, int n_fetches) {
  GHashTable *placement = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  GPtrArray *nodes = g_ptr_array_new();
  for (int k = 0; k < weft_graph_num_nodes(g); k++) {
    weft_node_t *n = weft_graph_node_at(g, k); /* creation order is topological here */
    g_ptr_array_add(nodes, n);
    g_hash_table_insert(placement, (gpointer)weft_node_name(n),
                        g_strdup(weft_node_requested_device(n)));
  }
  weft__fetch_t *fs = g_new0(weft__fetch_t, n_fetches);
  for (int f = 0; f < n_fetches; f++) fs[f].node = weft_graph_node(g, fetches[f]);
  weft__step_spec_t spec = {.fetches = fs, .n_fetches = n_fetches};
  int fetch_part[8], fetch_slot[8];
  GPtrArray *parts = NULL;
  OK(weft__partition_step(nodes, placement, &spec, &parts, fetch_part, fetch_slot));
  g_free(fs);
  g_ptr_array_free(nodes, TRUE);
  g_hash_table_destroy(placement);
  return parts;
}

/* The keys of the group of the _Recv of `tensor` ("node_index") on `task`: NULL when the _Recv
 * is not grouped (a borrowed list; *n gets its length). Fails when there is no such _Recv. */
static const weft__attr_value_t *recv_group(GPtrArray *parts, const char *task, const char *tensor) {
  for (guint k = 0; k < parts->len; k++) {
    weft__partition_t *p = parts->pdata[k];
    if (strcmp(p->task, task) != 0) continue;
    char *name = g_strdup_printf("_weft/recv/%s", tensor);
    weft_node_t *n = weft_graph_node(p->graph, name);
    g_free(name);
    g_assert_nonnull(n);
    return weft__attrs_get(n->attrs, WEFT_RECV_GROUP_ATTR);
  }
  g_error("no partition for %s", task);
  return NULL;
}

static void test_recv_groups_partition(void) {
  const char *simple_fetches[2] = {"u", "w"};
  weft_graph_t *g = simple_group_graph();
  GPtrArray *parts = partition_all(g, simple_fetches, 2);
  const weft__attr_value_t *ga = recv_group(parts, TASK1, "a_0");
  const weft__attr_value_t *gb = recv_group(parts, TASK1, "b_0");
  g_assert_nonnull(ga);
  g_assert_cmpint(ga->kind, ==, WEFT_ATTR_LIST_STRING);
  g_assert_cmpuint(ga->u.list.n, ==, 2);
  g_assert_cmpstr(ga->u.list.s[0].data, ==, "a:0;" TASK1);
  g_assert_cmpstr(ga->u.list.s[1].data, ==, "b:0;" TASK1);
  g_assert_nonnull(gb);
  g_assert_cmpuint(gb->u.list.n, ==, 2);
  /* b's _Recv runs after a's, which fetches both. */
  weft__partition_t *p1 = strcmp(((weft__partition_t *)parts->pdata[0])->task, TASK1) == 0
                              ? parts->pdata[0] : parts->pdata[1];
  weft_node_t *rb = weft_graph_node(p1->graph, "_weft/recv/b_0");
  g_assert_cmpuint(rb->control_inputs->len, ==, 1);
  g_assert_cmpstr(((weft_node_t *)rb->control_inputs->pdata[0])->name, ==, "_weft/recv/a_0");
  g_assert_cmpuint(weft_graph_node(p1->graph, "_weft/recv/a_0")->control_inputs->len, ==, 0);
  g_assert_null(recv_group(parts, TASK1, "big_0")); /* over 64 KiB */
  g_ptr_array_free(parts, TRUE);
  weft_graph_free(g);

  const char *y = "y";
  g = dependent_graph();
  parts = partition_all(g, &y, 1);
  g_assert_null(recv_group(parts, TASK1, "a_0"));
  g_assert_null(recv_group(parts, TASK1, "c_0"));
  g_ptr_array_free(parts, TRUE);
  weft_graph_free(g);

  const char *kh[2] = {"k", "h"};
  g = crossing_graph();
  parts = partition_all(g, kh, 2);
  bool to1 = recv_group(parts, TASK1, "a1_0") != NULL, to0 = recv_group(parts, TASK0, "b1_0") != NULL;
  g_assert_true((recv_group(parts, TASK1, "a2_0") != NULL) == to1);
  g_assert_true((recv_group(parts, TASK0, "b2_0") != NULL) == to0);
  g_assert_true(to1 != to0);
  g_ptr_array_free(parts, TRUE);
  weft_graph_free(g);
}

/* The graphs above, and 70 small tensors (groups of 64 and 6), run on two weftd tasks; a group
 * member that fails on the sender fails the step with the sender's error, at once. */
static void test_recv_groups_cluster(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 0, 2, NULL)) return;
  weft_graph_t *g = simple_group_graph();
  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  for (int step = 0; step < 3; step++) {
    g_assert_cmpfloat(fetch_at(s, "u", 3), ==, 6.0);
    g_assert_cmpfloat(fetch_at(s, "w", 32767), ==, 1.0);
  }
  weft_session_free(s);
  weft_graph_free(g);

  g = dependent_graph();
  s = weftd_remote_session(g, c.target[1]);
  g_assert_cmpfloat(fetch_at(s, "y", 1), ==, 0.75);
  weft_session_free(s);
  weft_graph_free(g);

  g = crossing_graph();
  s = weftd_remote_session(g, c.target[1]);
  const char *kh[2] = {"k", "h"};
  weft_tensor_t *out[2] = {NULL, NULL};
  OK(weft_session_run(s, NULL, NULL, 0, kh, out, 2, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(out[0], 0), ==, -5.0);
  g_assert_cmpfloat(weft_tensor_get_double(out[1], 0), ==, -7.0);
  weft_tensor_unref(out[0]);
  weft_tensor_unref(out[1]);
  weft_session_free(s);
  weft_graph_free(g);

  g = weft_graph_new();
  weft_output_t sum = {NULL, 0};
  for (int k = 0; k < 70; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "c%d", k);
    weft_graph_push_device(g, TASK0 "/device:CPU:0");
    weft_output_t v = small_const(g, name, 1, (float)k);
    weft_graph_pop_device(g);
    weft_graph_push_device(g, TASK1 "/device:CPU:0");
    g_snprintf(name, sizeof name, "sum%d", k);
    sum = k == 0 ? unary(g, "Identity", name, v) : binary(g, "AddV2", name, sum, v);
    weft_graph_pop_device(g);
  }
  s = weftd_remote_session(g, c.target[1]);
  g_assert_cmpfloat(fetch_at(s, "sum69", 0), ==, 69.0 * 70 / 2);
  weft_session_free(s);
  weft_graph_free(g);

  /* x fed with 3 elements cannot become [2, 2] on task 0; task 1 waits for it and ok together. */
  g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, TASK0 "/device:CPU:0");
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, -1, NULL, &st);
  OK(st);
  weft_tensor_t *shape = weft_tensor_new(WEFT_DT_INT32, 1, (int64_t[]){2});
  ((int32_t *)weft_tensor_data(shape))[0] = 2;
  ((int32_t *)weft_tensor_data(shape))[1] = 2;
  weft_output_t r = binary(g, "Reshape", "reshape", x, weft_const(g, "shape", shape, &st));
  OK(st);
  weft_tensor_unref(shape);
  weft_output_t ok = small_const(g, "ok", 1, 1.0f);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, TASK1 "/device:CPU:0");
  binary(g, "AddV2", "z", r, ok);
  weft_graph_pop_device(g);
  s = weftd_remote_session(g, c.target[1]);
  const char *feed = "x", *fetch = "z";
  weft_tensor_t *bad = weft_tensor_new(WEFT_DT_FLOAT, 1, (int64_t[]){3});
  weft_tensor_t *z = NULL;
  gint64 t0 = g_get_monotonic_time();
  st = weft_session_run(s, &feed, &bad, 1, &fetch, &z, 1, NULL, 0);
  double took = (g_get_monotonic_time() - t0) / 1e6;
  g_test_message("failed in %.2f s: %s", took, weft_status_message(st));
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "reshape"));
  g_assert_null(strstr(weft_status_message(st), WEFT_DERIVED_PREFIX));
  g_assert_cmpfloat(took, <, 5.0);
  g_assert_null(z);
  weft_status_free(st);
  weft_tensor_unref(bad);
  weft_tensor_t *good = weft_tensor_new(WEFT_DT_FLOAT, 1, (int64_t[]){4});
  memset(weft_tensor_data(good), 0, 16);
  OK(weft_session_run(s, &feed, &good, 1, &fetch, &z, 1, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(z, 3), ==, 1.0);
  weft_tensor_unref(z);
  weft_tensor_unref(good);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

/* Runs the weft CLI; returns its exit status, stdout and stderr (g_free). */
static int run_weft(const char *const *args, char **out, char **err) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (char *)WEFT_CLI);
  for (int k = 0; args[k]; k++) g_ptr_array_add(argv, (char *)args[k]);
  g_ptr_array_add(argv, NULL);
  int status = 0;
  GError *error = NULL;
  g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out, err, &status,
               &error);
  g_assert_no_error(error);
  g_ptr_array_free(argv, TRUE);
  g_test_message("weft %s %s -> %d\nstdout: %s\nstderr: %s", args[0], args[1], status, *out, *err);
  g_assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* `weft devices --target` lists every task's devices; `weft run --target grpc://...` runs a
 * GraphDef whose NodeDefs pin nodes to the ps and a worker, and --log-device-placement prints
 * full cluster device names. */
/* ---------------------------------------------------------------------------------------------
 * The rendezvous keeps nothing of a finished step */

typedef struct received {
  gint calls;
  float value;
  weft_code_t code;
} received_t;

static void on_received(void *user_data, weft_status_t *status, weft_tensor_t *tensor) {
  received_t *r = user_data;
  r->code = status ? weft_status_code(status) : WEFT_OK;
  r->value = tensor ? (float)weft_tensor_get_double(tensor, 0) : NAN;
  weft_status_free(status);
  weft_tensor_unref(tensor);
  g_atomic_int_inc(&r->calls);
}

/* A sender's RunGraph as the worker runs it: the step, one _Send, the end of the RunGraph. */
static void sender_run_graph(weft__step_table_t *t, int64_t id, float value) {
  weft_status_t *st = NULL;
  weft__step_t *step = weft__step_get(t, id, &st);
  g_assert_null(st);
  weft_tensor_t *x = weft_tensor_new_scalar_float(value);
  OK(weft__step_put(step, "edge;0", x));
  weft_tensor_unref(x);
  weft__step_unref(step);
  weft__step_table_release_if_idle(t, id);
}

typedef struct race {
  weft__step_table_t *table;
  int steps;
  received_t *got;
} race_t;

static gpointer race_sender(gpointer data) {
  race_t *r = data;
  for (int k = 0; k < r->steps; k++) sender_run_graph(r->table, k + 1, (float)k);
  return NULL;
}

static gpointer race_receiver(gpointer data) {
  race_t *r = data;
  for (int k = 0; k < r->steps; k++) {
    OK(weft__step_table_take(r->table, k + 1, "edge;0", on_received, &r->got[k]));
  }
  return NULL;
}

static void test_rendezvous_release(void) {
  weft__step_table_t *t = weft__step_table_new();
  /* The receiver asks after the sender's RunGraph ended: the tensor waits in the step, and the
   * RecvTensor that takes it drops the step. */
  sender_run_graph(t, 7, 2.5f);
  g_assert_cmpuint(weft__step_table_size(t), ==, 1);
  received_t late = {0, 0, WEFT_UNKNOWN};
  OK(weft__step_table_take(t, 7, "edge;0", on_received, &late));
  g_assert_cmpint(late.calls, ==, 1);
  g_assert_cmpint(late.code, ==, WEFT_OK);
  g_assert_cmpfloat(late.value, ==, 2.5f);
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);

  /* The receiver asks first: it waits in the step, the _Send answers it, and the end of the
   * sender's RunGraph drops the step. */
  received_t early = {0, 0, WEFT_UNKNOWN};
  OK(weft__step_table_take(t, 8, "edge;0", on_received, &early));
  g_assert_cmpint(early.calls, ==, 0);
  g_assert_cmpuint(weft__step_table_size(t), ==, 1);
  sender_run_graph(t, 8, -1.0f);
  g_assert_cmpint(early.calls, ==, 1);
  g_assert_cmpfloat(early.value, ==, -1.0f);
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);

  /* Both at once on many steps, as a busy worker sees them: each step is answered once with its
   * own value and none is left behind. (The soak test, under load, is what found a step freed
   * under a concurrent release; this loop rarely hits that window.) */
  race_t race = {t, 3000, g_new0(received_t, 3000)};
  GThread *a = g_thread_new("sender", race_sender, &race);
  GThread *b = g_thread_new("receiver", race_receiver, &race);
  g_thread_join(a);
  g_thread_join(b);
  for (int k = 0; k < race.steps; k++) {
    g_assert_cmpint(race.got[k].calls, ==, 1);
    g_assert_cmpint(race.got[k].code, ==, WEFT_OK);
    g_assert_cmpfloat(race.got[k].value, ==, (float)k);
  }
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);
  g_free(race.got);

  /* A shut-down table refuses the RecvTensor with its reason and does not call back. */
  weft_status_t *why = weft_status_new(WEFT_CANCELLED, "The worker is shutting down");
  weft__step_table_shutdown(t, why);
  weft_status_free(why);
  received_t refused = {0, 0, WEFT_UNKNOWN};
  expect_error(weft__step_table_take(t, 9, "edge;0", on_received, &refused), WEFT_CANCELLED,
               "The worker is shutting down");
  g_assert_cmpint(refused.calls, ==, 0);
  weft__step_table_free(t);
}

/* Expects step `id` of `t` to be a tombstone failing with `code` and `message` (as the step's own
 * status; a RecvTensor of it gets the message marked derived), and nothing else of it held. */
static void expect_tombstone(weft__step_table_t *t, int64_t id, weft_code_t code,
                             const char *message, bool derived) {
  weft_status_t *st = NULL;
  weft__step_t *step = weft__step_get(t, id, &st);
  g_assert_null(st);
  bool was_derived = !derived;
  expect_error(weft__step_status(step, &was_derived), code, message);
  g_assert_cmpint(was_derived, ==, derived);
  char *marked = g_strconcat(WEFT_DERIVED_PREFIX, message, NULL);
  weft_tensor_t *x = weft_tensor_new_scalar_float(1.0f);
  expect_error(weft__step_put(step, "edge;0", x), code, derived ? marked : message);
  weft_tensor_unref(x);
  weft__step_unref(step);
  weft__step_table_release_if_idle(t, id);
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);
  received_t late = {0, 0, WEFT_UNKNOWN};
  OK(weft__step_table_take(t, id, "edge;0", on_received, &late));
  g_assert_cmpint(late.calls, ==, 1);
  g_assert_cmpint(late.code, ==, code);
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);
  g_free(marked);
}

static void test_rendezvous_tombstones(void) {
  weft__step_table_t *t = weft__step_table_new();
  /* Aborted steps nobody holds leave the table for their compact records; each answers late
   * calls with its own status, through many growths of the records' table. */
  enum { N = 1000 };
  for (int64_t id = 1; id <= N; id++) {
    weft_status_t *st = NULL;
    weft__step_t *step = weft__step_get(t, id * 7919, &st);
    g_assert_null(st);
    weft_status_t *why = weft_status_new(id % 2 ? WEFT_ABORTED : WEFT_DEADLINE_EXCEEDED,
                                         "%sstep %" G_GINT64_FORMAT " failed here",
                                         id % 3 ? "" : WEFT_DERIVED_PREFIX, id);
    weft__step_abort(step, why, id % 5 == 0);
    weft_status_free(why);
    weft__step_unref(step);
    weft__step_table_release_if_idle(t, id * 7919);
  }
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);
  for (int64_t id = N; id >= 1; id--) {
    char *msg = g_strdup_printf("step %" G_GINT64_FORMAT " failed here", id);
    expect_tombstone(t, id * 7919, id % 2 ? WEFT_ABORTED : WEFT_DEADLINE_EXCEEDED, msg,
                     id % 5 == 0);
    g_free(msg);
  }
  /* A cleaned-up step, and one aborted by its master. */
  sender_run_graph(t, 5, 1.0f);
  weft__step_table_remove(t, 5);
  g_assert_cmpuint(weft__step_table_size(t), ==, 0);
  expect_tombstone(t, 5, WEFT_CANCELLED, "Step 5 was cleaned up", true);

  /* Records expire with the idle limit like the steps did: the step then starts afresh. */
  weft__step_table_set_idle_limit(t, 1);
  g_usleep(5000);
  weft__step_table_sweep(t);
  weft_status_t *st = NULL;
  weft__step_t *step = weft__step_get(t, 5, &st);
  g_assert_null(st);
  g_assert_null(weft__step_status(step, NULL));
  weft__step_unref(step);
  weft__step_table_free(t);
}

static void test_cli(void) {
  if (!g_file_test(WEFT_CLI, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weft not built at " WEFT_CLI);
    return;
  }
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  const char *devices[] = {"devices", "--target", c.target[1], NULL};
  char *out = NULL, *err = NULL;
  g_assert_cmpint(run_weft(devices, &out, &err), ==, 0);
  char **lines = g_strsplit(g_strchomp(out), "\n", -1);
  g_assert_cmpint(g_strv_length(lines), ==, 2 * weft_devices_count());
  g_assert_true(g_str_has_prefix(lines[0], "/job:ps/replica:0/task:0/device:"));
  g_assert_true(g_str_has_prefix(lines[g_strv_length(lines) - 1],
                                 "/job:worker/replica:0/task:0/device:"));
  g_strfreev(lines);
  g_free(out);
  g_free(err);

  /* x (fed) * w on the ps, + 1 on the worker's CPU. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 0, NULL, &st);
  OK(st);
  weft_output_t xw = weft_binary(g, "Mul", "xw", x, weft_const_float(g, "w", 3.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:0/device:CPU:0");
  weft_binary(g, "AddV2", "y", xw, weft_const_float(g, "one", 1.0f, &st), &st);
  OK(st);
  weft_graph_pop_device(g);
  void *bytes = NULL;
  size_t len = 0;
  OK(weft_graph_export_graphdef(g, &bytes, &len));
  char *path = NULL;
  int fd = g_file_open_tmp("weft-distributed-XXXXXX.pb", &path, NULL);
  g_assert_cmpint(fd, >=, 0);
  g_assert_cmpint(write(fd, bytes, len), ==, (ssize_t)len);
  close(fd);
  free(bytes);
  weft_graph_free(g);

  const char *run[] = {"run",   "--graph", path, "--target", c.target[1], "--feed", "x=2",
                       "--fetch", "y",    "--json", "--log-device-placement", NULL};
  g_assert_cmpint(run_weft(run, &out, &err), ==, 0);
  g_assert_cmpstr(out, ==, "{\"y\": {\"dtype\": \"float32\", \"shape\": [], \"values\": [7]}}\n");
  g_assert_nonnull(strstr(err, "y: (AddV2): /job:worker/replica:0/task:0/device:CPU:0\n"));
  g_assert_nonnull(strstr(err, "xw: (Mul): /job:ps/replica:0/task:0/device:"));
  g_free(out);
  g_free(err);

  const char *down[] = {"run", "--graph", path, "--target", "grpc://127.0.0.1:1", "--fetch", "y",
                        NULL};
  g_assert_cmpint(run_weft(down, &out, &err), ==, 1);
  g_assert_nonnull(strstr(err, "weft: error: UNAVAILABLE: The server at 127.0.0.1:1 is "
                              "unavailable (CreateSession)"));
  g_free(out);
  g_free(err);
  g_unlink(path);
  g_free(path);
  weftd_cluster_stop(&c);
}

/* The three examples, run as a user runs them, print their known answers. */
static void test_examples(void) {
  struct {
    const char *name;
    const char *lines[3];
  } cases[] = {
      {"hello_distributed", {"Hello, distributed TensorFlow!\n"}},
      {"cluster_placement", {"c = 4.0\n", "  c: (AddV2): /job:worker/replica:0/task:1/device:"}},
      {"shared_variables",
       {"worker 0: a * b = 12.0 (product on /job:worker/replica:0/task:0/device:",
        "worker 1: a * b = 40.0 (product on /job:worker/replica:0/task:1/device:"}},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    char *path = g_build_filename(WEFT_BUILD_DIR, "examples", cases[k].name, NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_EXECUTABLE)) {
      g_test_message("%s not built", path);
      g_free(path);
      continue;
    }
    const char *argv[] = {path, NULL};
    char *out = NULL, *err = NULL;
    int status = 0;
    GError *error = NULL;
    g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                 &error);
    g_assert_no_error(error);
    g_test_message("%s -> %d\nstdout: %s\nstderr: %s", cases[k].name, status, out, err);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    for (int l = 0; l < 3 && cases[k].lines[l]; l++) g_assert_nonnull(strstr(out, cases[k].lines[l]));
    g_free(out);
    g_free(err);
    g_free(path);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  signal(SIGPIPE, SIG_IGN);
  weft_plugins_load_default();
  g_test_add_func("/distributed/spec/parse", test_spec_parse);
  g_test_add_func("/distributed/spec/errors", test_spec_errors);
  g_test_add_func("/distributed/spec/tf_config", test_spec_tf_config);
  g_test_add_func("/distributed/weftd/flag_errors", test_weftd_flag_errors);
  g_test_add_func("/distributed/weftd/tf_config_and_signals", test_weftd_tf_config);
  g_test_add_func("/distributed/local_server", test_local_server);
  g_test_add_func("/distributed/placement", test_placement);
  g_test_add_func("/distributed/send_recv_dtypes", test_send_recv_dtypes);
  g_test_add_func("/distributed/large_tensor", test_large_tensor);
  g_test_add_func("/distributed/recv_paths", test_recv_paths);
  g_test_add_func("/distributed/shared_variables", test_shared_variables);
  g_test_add_func("/distributed/ps_killed", test_ps_killed);
  g_test_add_func("/distributed/kernel_error_aborts_step", test_kernel_error_aborts_step);
  g_test_add_func("/distributed/sends_first", test_sends_first);
  g_test_add_func("/distributed/restart_aborted", test_restart_aborted);
  g_test_add_func("/distributed/malformed_requests", test_malformed_requests);
  g_test_add_func("/distributed/concurrent_clients", test_concurrent_clients);
  g_test_add_func("/distributed/server_threads_after_burst", test_server_threads_after_burst);
  g_test_add_func("/distributed/rendezvous/release", test_rendezvous_release);
  g_test_add_func("/distributed/rendezvous/tombstones", test_rendezvous_tombstones);
  g_test_add_func("/distributed/recv_groups/partition", test_recv_groups_partition);
  g_test_add_func("/distributed/recv_groups/cluster", test_recv_groups_cluster);
  g_test_add_func("/distributed/cli", test_cli);
  g_test_add_func("/distributed/examples", test_examples);
  return g_test_run();
}
