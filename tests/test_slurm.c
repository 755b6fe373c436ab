/* Tests of the Slurm cluster resolver: Slurm's compressed host lists and tasks-per-node lists,
 * the cluster spec, job and task a step's environment gives (checked against specs written out
 * by hand from TensorFlow's SlurmClusterResolver rules), every bad environment with its exact
 * message naming the variable, `weftd`/`weft-train --cluster-from` refusing the same, and
 * weft-train tasks taking their cluster, job and index from TF_CONFIG alone (Kubeflow's TFJob). */
#include <glib.h>
#include <math.h>
#include <signal.h>
#include <string.h>

#include "process_util.h"
#include "weft/weft.h"

#define WEFTD WEFT_BUILD_DIR "/core/tools/weftd"
#define WEFT_TRAIN WEFT_BUILD_DIR "/core/tools/weft-train"

static void check_hosts(const char *text, const char *expected) {
  char **hosts = NULL;
  int n = -1;
  weft_status_t *st = weft_slurm_hostlist_expand(text, &hosts, &n);
  g_assert_null(st);
  char *joined = g_strjoinv(" ", hosts);
  g_assert_cmpstr(joined, ==, expected);
  g_assert_cmpint(n, ==, (int)g_strv_length(hosts));
  g_free(joined);
  weft_strv_free(hosts);
}

static void check_hosts_error(const char *text, const char *message) {
  char **hosts = (char **)1;
  weft_status_t *st = weft_slurm_hostlist_expand(text, &hosts, NULL);
  g_assert_nonnull(st);
  g_assert_null(hosts);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
}

static void test_hostlist(void) {
  check_hosts("node7", "node7");
  check_hosts("node[01-04,07]", "node01 node02 node03 node04 node07");
  check_hosts("a[1-2]b,c[3,5-6]", "a1b a2b c3 c5 c6");
  check_hosts("n[1-2]x[3-4]", "n1x3 n1x4 n2x3 n2x4");
  check_hosts("n[8-10]", "n8 n9 n10");
  check_hosts("n[098-100]", "n098 n099 n100");
  check_hosts("gpu-a.rack1,cpu[0]", "gpu-a.rack1 cpu0");
  check_hosts("[1-3]", "1 2 3");
}

static void test_hostlist_errors(void) {
  check_hosts_error("", "invalid host list '': it is empty");
  check_hosts_error("node[3-1]", "invalid host list 'node[3-1]': range '3-1' goes down");
  check_hosts_error("node[1-2", "invalid host list 'node[1-2': '[' without ']'");
  check_hosts_error("node1]", "invalid host list 'node1]': ']' without '['");
  check_hosts_error("a,,b", "invalid host list 'a,,b': an empty host name");
  check_hosts_error("a,", "invalid host list 'a,': an empty host name");
  check_hosts_error("n[a-b]",
                    "invalid host list 'n[a-b]': 'a-b' in brackets is not a number or a range "
                    "N-M");
  check_hosts_error("n[1,]",
                    "invalid host list 'n[1,]': '' in brackets is not a number or a range N-M");
  check_hosts_error("n[[1]]", "invalid host list 'n[[1]]': nested '['");
  check_hosts_error("n[0-99999999]", "invalid host list 'n[0-99999999]': more than 65536 hosts");
  check_hosts_error("a[0-999]b[0-999]",
                    "invalid host list 'a[0-999]b[0-999]': more than 65536 hosts");
  check_hosts_error("n 1", "invalid host list 'n 1': character ' ' is not allowed");
}

/* The environment of a test: a table NAME -> VALUE. */
static const char *table_lookup(const char *name, void *user) {
  return g_hash_table_lookup(user, name);
}

static GHashTable *env_of(const char *const *pairs) {
  GHashTable *env = g_hash_table_new(g_str_hash, g_str_equal);
  for (int k = 0; pairs[k]; k += 2) g_hash_table_insert(env, (char *)pairs[k], (char *)pairs[k + 1]);
  return env;
}

static void check_spec(const char *const *pairs, int ps, int port_base, const char *expected,
                       const char *job, int task) {
  GHashTable *env = env_of(pairs);
  weft_cluster_spec_t *spec = NULL;
  char *got_job = NULL;
  int got_task = -7;
  weft_status_t *st =
      weft_cluster_spec_from_slurm(table_lookup, env, ps, port_base, &spec, &got_job, &got_task);
  g_assert_null(st);
  char *text = weft_cluster_spec_to_string(spec);
  g_assert_cmpstr(text, ==, expected);
  g_assert_cmpstr(got_job, ==, job);
  g_assert_cmpint(got_task, ==, task);
  weft_free(text);
  weft_free(got_job);
  weft_cluster_spec_free(spec);
  g_hash_table_destroy(env);
}

static void check_spec_error(const char *const *pairs, int ps, int port_base,
                             const char *message) {
  GHashTable *env = env_of(pairs);
  weft_cluster_spec_t *spec = (weft_cluster_spec_t *)1;
  char *job = (char *)1;
  int task = 5;
  weft_status_t *st = weft_cluster_spec_from_slurm(table_lookup, env, ps, port_base, &spec, &job,
                                                   &task);
  g_assert_nonnull(st);
  g_assert_null(spec);
  g_assert_null(job);
  g_assert_cmpint(task, ==, -1);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
  g_hash_table_destroy(env);
}

static void test_spec(void) {
  /* Two nodes with two tasks each: ranks 0, 1 on node1 (ports 2222, 2223), 2, 3 on node2. */
  const char *job_env[] = {"SLURM_PROCID", "2", "SLURM_NTASKS", "4", "SLURM_JOB_NODELIST",
                           "node[1-2]", "SLURM_TASKS_PER_NODE", "2(x2)", NULL};
  check_spec(job_env, 1, 2222, "ps=node1:2222;worker=node1:2223,node2:2222,node2:2223",
             "worker", 1);
  check_spec(job_env, 2, 5000, "ps=node1:5000,node1:5001;worker=node2:5000,node2:5001",
             "worker", 0);
  check_spec(job_env, 3, 2222, "ps=node1:2222,node1:2223,node2:2222;worker=node2:2223", "ps",
             2);
  /* No ps at all: every task a worker. */
  check_spec(job_env, 0, 2222, "worker=node1:2222,node1:2223,node2:2222,node2:2223", "worker",
             2);
  /* The step's own variables win over the job's (an srun inside a bigger allocation). */
  const char *step_env[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "9", "SLURM_STEP_NUM_TASKS",
                            "3", "SLURM_JOB_NODELIST", "c[01-09]", "SLURM_STEP_NODELIST",
                            "c[02,05]", "SLURM_TASKS_PER_NODE", "1(x9)",
                            "SLURM_STEP_TASKS_PER_NODE", "2,1", NULL};
  check_spec(step_env, 1, 2222, "ps=c02:2222;worker=c02:2223,c05:2222", "ps", 0);
  /* One node, three tasks: the single-node Slurm of test_slurm_cluster. */
  const char *one_env[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "3", "SLURM_JOB_NODELIST",
                           "localhost", "SLURM_TASKS_PER_NODE", "3", NULL};
  check_spec(one_env, 1, 2222, "ps=localhost:2222;worker=localhost:2223,localhost:2224",
             "worker", 0);
}

static void test_spec_errors(void) {
  const char *none[] = {NULL};
  check_spec_error(none, 1, 2222,
                   "SLURM_PROCID is not set: not inside a Slurm job step (run the task with "
                   "srun)");
  const char *no_ntasks[] = {"SLURM_PROCID", "0", NULL};
  check_spec_error(no_ntasks, 1, 2222,
                   "SLURM_STEP_NUM_TASKS or SLURM_NTASKS is not set: not inside a Slurm job "
                   "step (run the task with srun)");
  const char *no_nodes[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", NULL};
  check_spec_error(no_nodes, 1, 2222,
                   "SLURM_STEP_NODELIST or SLURM_JOB_NODELIST is not set: not inside a Slurm "
                   "job step (run the task with srun)");
  const char *no_tpn[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n1",
                          NULL};
  check_spec_error(no_tpn, 1, 2222,
                   "SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE is not set: not inside a "
                   "Slurm job step (run the task with srun)");
#define BASE "SLURM_JOB_NODELIST", "n[1-2]", "SLURM_TASKS_PER_NODE"
  const char *bad_procid[] = {"SLURM_PROCID", "-1", "SLURM_NTASKS", "2", BASE, "1,1", NULL};
  check_spec_error(bad_procid, 1, 2222, "SLURM_PROCID='-1' is not a non-negative integer");
  const char *bad_ntasks[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "two", BASE, "1,1", NULL};
  check_spec_error(bad_ntasks, 1, 2222, "SLURM_NTASKS='two' is not a non-negative integer");
  const char *zero_tasks[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "0", BASE, "1,1", NULL};
  check_spec_error(zero_tasks, 1, 2222, "SLURM_NTASKS='0': a step has at least one task");
  const char *high_procid[] = {"SLURM_PROCID", "2", "SLURM_NTASKS", "2", BASE, "1,1", NULL};
  check_spec_error(high_procid, 1, 2222, "SLURM_PROCID=2 is not below SLURM_NTASKS=2");
  const char *ok[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", BASE, "1,1", NULL};
  check_spec_error(ok, 2, 2222,
                   "--ps 2 leaves no worker: the step has 2 tasks (SLURM_NTASKS), so --ps is "
                   "from 0 to 1");
  check_spec_error(ok, 1, 0, "The port base 0 is not from 1 to 65535");
  const char *bad_nodes[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST",
                             "n[2-1]", "SLURM_TASKS_PER_NODE", "1,1", NULL};
  check_spec_error(bad_nodes, 1, 2222,
                   "SLURM_JOB_NODELIST: invalid host list 'n[2-1]': range '2-1' goes down");
  const char *bad_tpn[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", BASE, "1(x0)", NULL};
  check_spec_error(bad_tpn, 1, 2222,
                   "SLURM_TASKS_PER_NODE: '1(x0)' is not a task count N or N(xM) with N, M "
                   "from 1 (in '1(x0)'; at most 65536 nodes)");
  const char *bad_tpn2[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", BASE, "1,x", NULL};
  check_spec_error(bad_tpn2, 1, 2222,
                   "SLURM_TASKS_PER_NODE: 'x' is not a task count N or N(xM) with N, M from 1 "
                   "(in '1,x'; at most 65536 nodes)");
  const char *count_mismatch[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "3", BASE, "3", NULL};
  check_spec_error(count_mismatch, 1, 2222,
                   "SLURM_TASKS_PER_NODE='3' gives 1 nodes' task counts but "
                   "SLURM_JOB_NODELIST='n[1-2]' has 2 nodes");
  const char *sum_mismatch[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "3", BASE, "2(x2)", NULL};
  check_spec_error(sum_mismatch, 1, 2222,
                   "SLURM_TASKS_PER_NODE='2(x2)' adds up to 4 tasks but SLURM_NTASKS=3");
  const char *ports[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "4", BASE, "2(x2)", NULL};
  check_spec_error(ports, 1, 65535,
                   "The port base 65535 with 2 tasks on a node (SLURM_TASKS_PER_NODE) goes past "
                   "port 65535");
  const char *twice[] = {"SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "n1,n1",
                         "SLURM_TASKS_PER_NODE", "1(x2)", NULL};
  check_spec_error(twice, 1, 2222,
                   "The cluster of Slurm's SLURM_JOB_NODELIST: Address 'n1:2222' is used by "
                   "both /job:ps/task:0 and /job:worker/task:0 in the cluster spec");
#undef BASE
}

/* The tools print the library's message and exit 2 before anything starts. */
static void test_tools(void) {
  const char *env[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_JOB_NODELIST=n[1-x]",
                       "SLURM_TASKS_PER_NODE=1,1", NULL};
  const char *tools[] = {WEFTD, WEFT_TRAIN};
  const char *prefixes[] = {"weftd: error: ", "weft-train: error: the cluster: "};
  for (int k = 0; k < 2; k++) {
    if (!g_file_test(tools[k], G_FILE_TEST_IS_EXECUTABLE)) {
      g_test_skip("weftd or weft-train is not built");
      return;
    }
    run_result_t r = run_program(tools[k], (const char *[]){"--cluster-from", "slurm", NULL}, env);
    g_assert_cmpint(r.exit_code, ==, 2);
    char *expected = g_strdup_printf("%sINVALID_ARGUMENT: SLURM_JOB_NODELIST: invalid host list "
                                     "'n[1-x]': '1-x' in brackets is not a number or a range "
                                     "N-M\n",
                                     prefixes[k]);
    g_assert_cmpstr(r.err, ==, expected);
    g_free(expected);
    run_result_clear(&r);
    r = run_program(tools[k],
                    (const char *[]){"--cluster-from", "slurm", "--job_name", "ps", NULL}, env);
    g_assert_cmpint(r.exit_code, ==, 2);
    g_assert_nonnull(strstr(r.err, "--cluster-from slurm takes the cluster and this task from "
                                   "Slurm"));
    run_result_clear(&r);
    r = run_program(tools[k], (const char *[]){"--cluster-from", "pbs", NULL}, env);
    g_assert_cmpint(r.exit_code, ==, 2);
    g_assert_nonnull(strstr(r.err, "--cluster-from must be 'slurm' or 'tf_config'"));
    run_result_clear(&r);
    r = run_program(tools[k], (const char *[]){"--ps", "2", "--job_name", "ps", NULL}, env);
    g_assert_cmpint(r.exit_code, ==, 2);
    g_assert_nonnull(strstr(r.err, "--ps and --port-base go with --cluster-from slurm"));
    run_result_clear(&r);
  }
}

/* Kubeflow's TFJob sets only TF_CONFIG: weft-train --cluster-from tf_config takes its cluster,
 * job and index from it (no --job_name, no --task_index) and trains; a ps and a worker here. */
static void test_tf_config_tasks(void) {
  if (!g_file_test(WEFT_TRAIN, G_FILE_TEST_IS_EXECUTABLE)) {
    g_test_skip("weft-train is not built");
    return;
  }
  g_unsetenv("TF_CONFIG");
  run_result_t r = run_program(WEFT_TRAIN, (const char *[]){"--cluster-from", "tf_config", NULL},
                               NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_cmpstr(r.err, ==,
                  "weft-train: error: the cluster: INVALID_ARGUMENT: --cluster-from tf_config: "
                  "the TF_CONFIG environment variable is not set\n");
  run_result_clear(&r);
  int ports[2];
  free_ports(2, ports);
  const char *roles[] = {"ps", "worker"};
  proc_t procs[2];
  for (int k = 0; k < 2; k++) {
    char *tf_config = g_strdup_printf("{\"cluster\": {\"ps\": [\"localhost:%d\"], \"worker\": "
                                      "[\"localhost:%d\"]}, \"task\": {\"type\": \"%s\", "
                                      "\"index\": 0}}",
                                      ports[0], ports[1], roles[k]);
    g_setenv("TF_CONFIG", tf_config, TRUE);
    procs[k] = proc_spawn(k == 0 ? WEFT_TRAIN " --cluster-from tf_config"
                                 : WEFT_TRAIN " --cluster-from tf_config --model linear "
                                              "--train_steps 150 --progress lines",
                          0);
    g_unsetenv("TF_CONFIG");
    g_free(tf_config);
    if (k == 0) {
      char *line = proc_read_until(&procs[0], "Started server with target:", 60000);
      g_assert_nonnull(line);
      g_free(line);
    }
  }
  g_assert_cmpint(proc_wait_exit(&procs[1], 240000), ==, 0);
  JsonParser *parser = NULL;
  JsonObject *o = proc_final_json(&procs[1], &parser);
  /* One worker trains y = 2x + 1 as a local run would. */
  g_assert_cmpint(json_object_get_int_member(o, "worker"), ==, 0);
  g_assert_cmpint(json_object_get_int_member(o, "global_step"), >=, 150);
  g_assert_cmpfloat(json_object_get_double_member(o, "loss"), <, 0.05);
  g_assert_cmpfloat(fabs(json_object_get_double_member(o, "W") - 2.0), <, 0.2);
  g_assert_cmpfloat(fabs(json_object_get_double_member(o, "b") - 1.0), <, 0.2);
  g_object_unref(parser);
  kill(procs[0].pid, SIGTERM);
  g_assert_cmpint(proc_wait_exit(&procs[0], 60000), ==, 0);
  g_string_free(procs[0].log, TRUE);
  g_string_free(procs[1].log, TRUE);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/slurm/hostlist", test_hostlist);
  g_test_add_func("/slurm/hostlist_errors", test_hostlist_errors);
  g_test_add_func("/slurm/spec", test_spec);
  g_test_add_func("/slurm/spec_errors", test_spec_errors);
  g_test_add_func("/slurm/tools", test_tools);
  g_test_add_func("/slurm/tf_config_tasks", test_tf_config_tasks);
  return g_test_run();
}
