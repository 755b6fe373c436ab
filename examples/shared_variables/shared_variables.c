/* Between-graph replication's shared state in Weft's C API: one ps task and two worker tasks,
 * each its own `weftd` process, and one client per worker. Both clients build the same graph:
 * variables a = 3 and b = 4 on /job:ps/task:0 and their product on their own worker. Worker 0's
 * client initialises the variables and prints a*b = 12.0; worker 1's client, a separate process
 * with a separate session, does not initialise anything: it rebinds a to 10 and prints 40.0,
 * because both sessions name the same variables on the same ps.
 *
 *   shared_variables                         starts the three weftd processes and both clients
 *   shared_variables --worker N --target T   runs only the client of worker N against server T
 *                                            (see README.md for running every process by hand)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weft/weft.h"

#ifndef WEFTD_PATH
#define WEFTD_PATH "weftd"
#endif

static void check(weft_status_t *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "shared_variables: %s: %s: %s\n", what, weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  exit(1);
}

/* The client of worker `index`: its own graph, its own session, the ps's variables. */
static int run_client(int index, const char *target) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t a = weft_variable(g, "a", weft_const_float(g, "a_init", 3.0f, &st), &st);
  check(st, "a");
  weft_output_t b = weft_variable(g, "b", weft_const_float(g, "b_init", 4.0f, &st), &st);
  check(st, "b");
  weft_output_t ten = weft_const_float(g, "ten", 10.0f, &st);
  check(st, "ten");
  weft_op_builder_t *assign = weft_op_new(g, "Assign", "rebind_a");
  weft_op_add_input(assign, (weft_output_t){weft_graph_node(g, "a"), 0});
  weft_op_add_input(assign, ten);
  check(weft_op_finish(assign, NULL), "rebind_a");
  weft_node_t *init = weft_global_variables_initializer(g, "init", &st);
  check(st, "init");
  weft_graph_pop_device(g);
  char device[64];
  snprintf(device, sizeof device, "/job:worker/task:%d", index);
  weft_graph_push_device(g, device);
  weft_binary(g, "Mul", "product", a, b, &st);
  check(st, "product");
  weft_graph_pop_device(g);

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_target(opts, target);
  weft_session_t *s = weft_session_new(g, opts, &st);
  check(st, "session");
  const char *step = index == 0 ? weft_node_name(init) : "rebind_a";
  check(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &step, 1), step);
  const char *fetch[] = {"product"};
  weft_tensor_t *out = NULL;
  check(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0), "product");
  printf("worker %d: a * b = %.1f (product on %s)\n", index, weft_tensor_get_double(out, 0),
         weft_session_node_device(s, "product"));
  fflush(stdout);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_session_options_free(opts);
  weft_graph_free(g);
  return 0;
}

/* n different loopback ports that were free a moment ago: all are held while they are chosen,
 * so none repeats (two tasks on one address would be a malformed cluster). */
static void free_ports(int n, int *ports) {
  int fds[8];
  for (int k = 0; k < n; k++) {
    fds[k] = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fds[k] < 0 || bind(fds[k], (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockname(fds[k], (struct sockaddr *)&addr, &len) != 0) {
      perror("shared_variables: finding a free port");
      exit(1);
    }
    ports[k] = ntohs(addr.sin_port);
  }
  for (int k = 0; k < n; k++) close(fds[k]);
}

/* Starts `weftd --cluster spec --job_name job --task_index task` and waits for its "Started"
 * line; -1 when it exits without one (*exit_code: its exit status, or -1 when it did not exit
 * by itself). */
static pid_t start_weftd(const char *spec, const char *job, int task, int *exit_code) {
  int out[2];
  if (pipe(out) != 0) {
    perror("pipe");
    exit(1);
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    char task_text[16];
    snprintf(task_text, sizeof task_text, "%d", task);
    execl(WEFTD_PATH, "weftd", "--cluster", spec, "--job_name", job, "--task_index", task_text,
          (char *)NULL);
    perror("shared_variables: exec " WEFTD_PATH);
    _exit(127);
  }
  close(out[1]);
  FILE *f = fdopen(out[0], "r");
  char line[256] = "";
  if (!fgets(line, sizeof line, f) || strncmp(line, "Started server", 14) != 0) {
    fclose(f);
    kill(pid, SIGKILL); /* does nothing when it has exited already */
    int status = 0;
    waitpid(pid, &status, 0);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return -1;
  }
  printf("/job:%s/task:%d: %s", job, task, line);
  fclose(f);
  return pid;
}

static void stop_weftd(const pid_t *pids, int n) {
  for (int k = 0; k < n; k++) {
    kill(pids[k], SIGTERM);
    waitpid(pids[k], NULL, 0);
  }
}

/* Starts the ps and both workers on free ports into pids; t0 and t1 get the workers' targets.
 * The ports are free when chosen, but another process may take one before its weftd listens
 * there (weftd then exits with status 1 and says so): the whole cluster moves to new ports,
 * three attempts at most. Any other failure is reported at once. */
static bool start_cluster(pid_t *pids, char *t0, char *t1, size_t target_size) {
  static const char *const jobs[3] = {"ps", "worker", "worker"};
  static const int tasks[3] = {0, 0, 1};
  for (int attempt = 1; attempt <= 3; attempt++) {
    int port[3];
    free_ports(3, port);
    char spec[128];
    snprintf(spec, sizeof spec, "ps=127.0.0.1:%d;worker=127.0.0.1:%d,127.0.0.1:%d", port[0],
             port[1], port[2]);
    printf("Cluster: %s\n", spec);
    int started = 0, exit_code = 0;
    while (started < 3 && (pids[started] = start_weftd(spec, jobs[started], tasks[started],
                                                       &exit_code)) > 0)
      started++;
    if (started == 3) {
      snprintf(t0, target_size, "grpc://127.0.0.1:%d", port[1]);
      snprintf(t1, target_size, "grpc://127.0.0.1:%d", port[2]);
      return true;
    }
    stop_weftd(pids, started);
    fprintf(stderr, "shared_variables: weftd for /job:%s/task:%d did not start (exit status %d)\n",
            jobs[started], tasks[started], exit_code);
    if (exit_code != 1) return false;
    if (attempt < 3) fprintf(stderr, "shared_variables: trying again on new ports\n");
  }
  return false;
}

static int run_child_client(int index, const char *target) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) _exit(run_client(index, target));
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[3], "--target") == 0)
    return run_client(atoi(argv[2]), argv[4]);
  if (argc != 1) {
    fprintf(stderr, "Usage: shared_variables [--worker N --target grpc://HOST:PORT]\n");
    return 2;
  }
  pid_t pids[3];
  char t0[64], t1[64];
  if (!start_cluster(pids, t0, t1, sizeof t0)) return 1;
  int rc = run_child_client(0, t0);
  if (rc == 0) rc = run_child_client(1, t1);
  stop_weftd(pids, 3);
  return rc;
}
