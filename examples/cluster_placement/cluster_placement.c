/* TensorFlow's "specifying distributed devices in your model" in Weft's C API: a cluster of two
 * ps tasks and three worker tasks on loopback, a variable pinned to /job:ps, b = a + 2 pinned to
 * /job:worker and c = a + b pinned to /job:worker/task:1. Prints c (4.0) and where every node ran.
 *
 * With no arguments it starts the five servers itself, in this process, on free loopback ports
 * (the client still talks gRPC to them). With --target grpc://HOST:PORT it uses a cluster of
 * five `weftd` processes started beforehand (see README.md next to this file). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "weft/weft.h"

static void check(weft_status_t *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "cluster_placement: %s: %s: %s\n", what, weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  exit(1);
}

/* A port nobody listens on right now (the kernel picks it). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
    perror("cluster_placement: finding a free port");
    exit(1);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

#define N_TASKS 5

int main(int argc, char **argv) {
  const char *target = NULL;
  if (argc == 3 && strcmp(argv[1], "--target") == 0) {
    target = argv[2];
  } else if (argc != 1) {
    fprintf(stderr, "Usage: cluster_placement [--target grpc://HOST:PORT]\n");
    return 2;
  }
  weft_plugins_load_default();

  /* The cluster: ps0, ps1, worker0, worker1, worker2, each its own server. */
  weft_server_t *servers[N_TASKS] = {NULL};
  if (!target) {
    weft_cluster_spec_t *spec = weft_cluster_spec_new();
    const char *jobs[N_TASKS] = {"ps", "ps", "worker", "worker", "worker"};
    const int tasks[N_TASKS] = {0, 1, 0, 1, 2};
    for (int k = 0; k < N_TASKS; k++) {
      char address[32];
      snprintf(address, sizeof address, "127.0.0.1:%d", free_port());
      check(weft_cluster_spec_add_task(spec, jobs[k], tasks[k], address), "cluster spec");
    }
    char *text = weft_cluster_spec_to_string(spec);
    printf("Cluster: %s\n", text);
    free(text);
    for (int k = 0; k < N_TASKS; k++) {
      check(weft_server_new(spec, jobs[k], tasks[k], NULL, &servers[k]), "server");
      check(weft_server_start(servers[k]), "start");
    }
    weft_cluster_spec_free(spec);
    target = weft_server_target(servers[2]); /* the client talks to worker 0 */
  }

  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t init = weft_const_float(g, "a_init", 1.0f, &st);
  check(st, "a_init");
  weft_output_t a = weft_variable(g, "a", init, &st);
  check(st, "a");
  weft_graph_pop_device(g);

  weft_graph_push_device(g, "/job:worker");
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  check(st, "two");
  weft_binary(g, "AddV2", "b", a, two, &st);
  check(st, "b");
  weft_graph_pop_device(g);

  weft_graph_push_device(g, "/job:worker/task:1");
  weft_output_t b = {weft_graph_node(g, "b"), 0};
  weft_binary(g, "AddV2", "c", a, b, &st);
  check(st, "c");
  weft_graph_pop_device(g);
  weft_node_t *init_op = weft_global_variables_initializer(g, "init", &st);
  check(st, "init");

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_target(opts, target);
  weft_session_options_set_log_device_placement(opts, true);
  weft_session_t *s = weft_session_new(g, opts, &st);
  check(st, "session");
  const char *init_name = weft_node_name(init_op);
  check(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init_name, 1), "init");
  const char *fetch[] = {"c"};
  weft_tensor_t *c = NULL;
  check(weft_session_run(s, NULL, NULL, 0, fetch, &c, 1, NULL, 0), "run c");
  printf("c = %.1f\n", weft_tensor_get_double(c, 0));
  weft_tensor_unref(c);

  printf("Placement:\n");
  for (int k = 0; k < weft_graph_num_nodes(g); k++) {
    const char *name = weft_node_name(weft_graph_node_at(g, k));
    printf("  %s: (%s): %s\n", name, weft_node_op(weft_graph_node_at(g, k)),
           weft_session_node_device(s, name));
  }
  check(weft_session_close(s), "close");
  weft_session_free(s);
  weft_session_options_free(opts);
  weft_graph_free(g);
  for (int k = 0; k < N_TASKS; k++) weft_server_free(servers[k]);
  return 0;
}
