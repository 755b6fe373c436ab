/* weftd: the server of one task of a Weft cluster (TensorFlow's tf.train.Server as a program).
 * Which cluster and which task come from, in order of precedence: --cluster-from slurm (the
 * environment srun gives each task: weft_cluster_spec_from_slurm), --cluster, TensorFlow's
 * example-trainer flags (--ps_hosts, --worker_hosts), or the TF_CONFIG environment variable
 * (--cluster-from tf_config insists on it); --job_name and --task_index override TF_CONFIG's task. --local starts TensorFlow's
 * create_local_server instead (job "local", one task). Once serving it prints exactly
 * "Started server with target: grpc://HOST:PORT" on stdout; SIGINT or SIGTERM stop it cleanly
 * (exit 0). Exit status 2 for a command line or cluster spec that does not make sense, 1 when
 * the server cannot start (a port in use), 3 when it stopped accepting connections (out of file
 * descriptors: weft_server_check). --tls-cert/--tls-key[/--tls-ca] serve TLS (mutual TLS
 * with the CA) and --auth-token-file requires a token on every call (docs/security.md); a server
 * that listens beyond loopback without TLS says on stderr that it is unencrypted. The --max_*
 * flags bound what one request may hold (docs/security.md, "Request validation"). */
#include <glib.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "cluster_from.h"
#include "tool_help.h"
#include "weft/weft.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define EXIT_NO_ACCEPT 3 /* the server stopped accepting connections (weft_server_check) */

static int fail(int code, weft_status_t *st) {
  fprintf(stderr, "weftd: error: %s: %s\n", weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  return code;
}

static int usage(const char *message) {
  fprintf(stderr, "weftd: error: %s\nTry 'weftd --help'.\n", message);
  return EXIT_USAGE;
}

typedef struct flags {
  char *cluster, *ps_hosts, *worker_hosts, *job_name, *bind;
  char *tls_cert, *tls_key, *tls_ca, *auth_token_file;
  cluster_from_flags_t from;
  int task_index;
  gboolean local;
  int port;
  gint64 status_timeout_ms, step_timeout_ms;
  gint64 max_message_bytes, max_tensor_bytes, max_graph_nodes, max_node_attrs;
  gint64 max_inflating_bytes;
  int max_tensor_rank;
  int max_concurrent_steps, max_rpc_threads;
  gint64 session_gc_seconds;
  int max_registered_graphs;
  gint64 step_idle_timeout_ms;
  int max_sessions;
  int handshake_timeout_ms, max_connection_idle_ms;
  int max_connection_answers;
  gint64 thread_idle_ms;
  char *bulk_transfer; /* auto, on, off */
  int bulk_port;       /* 0: a free one */
} flags_t;

/* The cluster spec and this task, from the flags or TF_CONFIG. */
static weft_status_t *resolve_task(const flags_t *f, weft_cluster_spec_t **spec, char **job,
                                   int *task) {
  *spec = NULL;
  *job = NULL;
  *task = -1;
  weft_status_t *st = NULL;
  char *config_job = NULL;
  int config_task = -1;
  const char *tf_config = g_getenv("TF_CONFIG");
  if (cluster_from_slurm(&f->from)) {
    if (f->cluster || f->ps_hosts || f->worker_hosts || f->job_name || f->task_index >= 0)
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "--cluster-from slurm takes the cluster and this task from Slurm: "
                             "it goes without --cluster, --ps_hosts, --worker_hosts, --job_name "
                             "and --task_index");
    return weft_cluster_spec_from_slurm(NULL, NULL, f->from.ps_tasks, f->from.port_base, spec,
                                        job, task);
  }
  bool want_tf_config = f->from.source && strcmp(f->from.source, "tf_config") == 0;
  if (want_tf_config && !(tf_config && *tf_config))
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "--cluster-from tf_config: the TF_CONFIG environment variable is not "
                           "set");
  if (want_tf_config) {
    st = weft_cluster_spec_from_tf_config(tf_config, spec, &config_job, &config_task);
  } else if (f->cluster) {
    st = weft_cluster_spec_parse(f->cluster, spec);
  } else if (f->ps_hosts || f->worker_hosts) {
    st = weft_cluster_spec_from_hosts(f->ps_hosts, f->worker_hosts, spec);
  } else if (tf_config && *tf_config) {
    st = weft_cluster_spec_from_tf_config(tf_config, spec, &config_job, &config_task);
  } else {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "No cluster given: use --cluster, --ps_hosts/--worker_hosts, the "
                           "TF_CONFIG environment variable, or --local");
  }
  if (st) return st;
  *job = g_strdup(f->job_name ? f->job_name : config_job);
  *task = f->task_index >= 0 ? f->task_index : (config_task >= 0 && !f->job_name ? config_task : 0);
  free(config_job);
  if (!*job) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "No job name given: use --job_name (or \"task\" in TF_CONFIG)");
  } else {
    st = weft_cluster_spec_check_task(*spec, *job, *task);
  }
  return st;
}

static bool is_loopback(const char *host) {
  return strcmp(host, "127.0.0.1") == 0 || strcmp(host, "::1") == 0 ||
         strcmp(host, "localhost") == 0 || g_str_has_prefix(host, "127.");
}

/* Everything after option parsing; returns the exit status. */
static int serve(const flags_t *f) {
  if (f->port < 0 || f->port > 65535) return usage("--port must be from 0 to 65535");
  if (!f->tls_cert != !f->tls_key) return usage("--tls-cert and --tls-key go together");
  if (f->tls_ca && !f->tls_cert) return usage("--tls-ca needs --tls-cert and --tls-key");
  if (f->max_message_bytes < 0 || f->max_tensor_bytes < 0 || f->max_graph_nodes < 0 ||
      f->max_node_attrs < 0)
    return usage("--max_message_bytes, --max_tensor_bytes, --max_graph_nodes and --max_node_attrs "
                 "must be positive (0: the default)");
  if (f->max_inflating_bytes < 0)
    return usage("--max_inflating_bytes must be positive (0: the default, 268435456)");
  if (f->max_tensor_rank < 0 || f->max_tensor_rank > WEFT_MAX_RANK)
    return usage("--max_tensor_rank must be from 1 to 8 (0: the default, 8)");
  if (f->max_concurrent_steps < 0 || f->max_rpc_threads < 0 || f->session_gc_seconds < 0 ||
      f->max_sessions < 0 || f->handshake_timeout_ms < 0 || f->max_connection_idle_ms < 0)
    return usage("--max_concurrent_steps, --max_rpc_threads, --session_gc_seconds, "
                 "--max_sessions, --handshake_timeout_ms and --max_connection_idle_ms must be "
                 "positive (0: the default)");
  if (f->max_registered_graphs < 0 || f->step_idle_timeout_ms < 0 ||
      f->max_connection_answers < 0)
    return usage("--max_registered_graphs, --step_idle_timeout_ms and --max_connection_answers "
                 "must be positive (0: the default)");
  if (f->bulk_transfer && strcmp(f->bulk_transfer, "auto") != 0 &&
      strcmp(f->bulk_transfer, "on") != 0 && strcmp(f->bulk_transfer, "off") != 0)
    return usage("--bulk_transfer must be auto, on or off");
  if (f->bulk_port < 0 || f->bulk_port > 65535)
    return usage("--bulk_port must be from 0 to 65535 (0: a free one)");
  if (f->thread_idle_ms < 0 || f->thread_idle_ms > G_MAXINT)
    return usage("--thread_idle_ms must be from 1 to 2147483647 (0: the default)");
  const char *from_error = cluster_from_check(&f->from, f->local);
  if (from_error) return usage(from_error);
  weft_cluster_spec_t *spec = NULL;
  char *job = NULL;
  int task = 0;
  weft_status_t *st = NULL;
  if (f->local) {
    spec = weft_cluster_spec_new();
    char *address = g_strdup_printf("localhost:%d", f->port);
    st = weft_cluster_spec_add_task(spec, "local", 0, address);
    g_free(address);
    job = g_strdup("local");
  } else {
    st = resolve_task(f, &spec, &job, &task);
  }
  if (st) {
    weft_cluster_spec_free(spec);
    g_free(job);
    return fail(EXIT_USAGE, st);
  }

  /* Every connection takes a descriptor, and one accept() that fails for want of one stops
   * gRPC listening for good (weft_server_check): take all the descriptors the hard limit
   * allows (often 1024 soft against 524288 hard), as Go's runtime does for every server. */
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  /* Signals are taken by sigtimedwait below; blocked now, before any thread starts, so that no
   * gRPC or pool thread is picked to run a handler. */
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

  /* Tasks of the cluster on this host share its cores (weft_threads_set_limit). */
  int sharing = weft_cluster_spec_tasks_on_host(spec, job, task);
  if (sharing > 1) weft_threads_set_limit(MAX(1, (int)g_get_num_processors() / sharing));
  if (f->thread_idle_ms > 0) weft_threads_set_idle_ms(f->thread_idle_ms);
  weft_plugins_load_default();
  weft_server_options_t *opts = weft_server_options_new();
  weft_server_options_set_bind_address(opts, f->bind);
  weft_server_options_set_tls(opts, f->tls_cert, f->tls_key, f->tls_ca);
  weft_server_options_set_auth_token_file(opts, f->auth_token_file);
  if (f->status_timeout_ms > 0) weft_server_options_set_status_timeout_ms(opts, f->status_timeout_ms);
  if (f->step_timeout_ms > 0) weft_server_options_set_step_timeout_ms(opts, f->step_timeout_ms);
  weft_server_options_set_max_message_bytes(opts, f->max_message_bytes);
  weft_server_options_set_max_inflating_bytes(opts, f->max_inflating_bytes);
  weft_server_options_set_max_tensor_bytes(opts, f->max_tensor_bytes);
  weft_server_options_set_max_graph_nodes(opts, f->max_graph_nodes);
  weft_server_options_set_max_node_attrs(opts, f->max_node_attrs);
  weft_server_options_set_max_tensor_rank(opts, f->max_tensor_rank);
  weft_server_options_set_max_concurrent_steps(opts, f->max_concurrent_steps);
  weft_server_options_set_max_rpc_threads(opts, f->max_rpc_threads);
  weft_server_options_set_session_gc_seconds(opts, f->session_gc_seconds);
  weft_server_options_set_max_registered_graphs(opts, f->max_registered_graphs);
  weft_server_options_set_step_idle_timeout_ms(opts, f->step_idle_timeout_ms);
  weft_server_options_set_max_sessions(opts, f->max_sessions);
  weft_server_options_set_connection_timeouts(opts, f->handshake_timeout_ms,
                                              f->max_connection_idle_ms);
  weft_server_options_set_max_connection_answers(opts, f->max_connection_answers);
  weft_server_options_set_bulk_transfer(
      opts, !f->bulk_transfer || strcmp(f->bulk_transfer, "auto") == 0 ? -1
            : strcmp(f->bulk_transfer, "on") == 0                       ? 1
                                                                        : 0);
  weft_server_options_set_bulk_port(opts, f->bulk_port);
  weft_server_t *server = NULL;
  st = weft_server_new(spec, job, task, opts, &server);
  weft_server_options_free(opts);
  weft_cluster_spec_free(spec);
  g_free(job);
  if (!st) st = weft_server_start(server);
  if (st) {
    weft_server_free(server);
    return fail(weft_status_code(st) == WEFT_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME, st);
  }
  if (f->bind && *f->bind && !is_loopback(f->bind) && !f->tls_cert) {
    /* Anyone who reaches the port can read and change what travels (and, without a token, run
     * any graph): say so where the operator looks. */
    fprintf(stderr,
            "weftd: WARNING: listening on %s without TLS: the connection is unencrypted%s. Use "
            "--tls-cert/--tls-key%s (docs/security.md).\n",
            f->bind,
            f->auth_token_file ? " and the auth token travels in clear"
                               : " and unauthenticated: anyone who reaches the port can run any "
                                 "graph",
            f->auth_token_file ? "" : " and --auth-token-file");
    fflush(stderr);
  }
  printf("Started server with target: %s\n", weft_server_target(server));
  if (weft_server_bulk_port(server) > 0)
    printf("Bulk channel on port: %d\n", weft_server_bulk_port(server));
  fflush(stdout);

  /* Waits for a stop signal, and once a second checks that the server still accepts
   * connections: one that no longer can is stopped with status 3, so that its supervisor
   * (systemd's Restart=, Kubernetes) starts it again rather than keeping a task no client or
   * restarted peer can reach. */
  int sig = -1;
  weft_status_t *broken = NULL;
  while (sig < 0 && !broken) {
    struct timespec second = {1, 0};
    sig = sigtimedwait(&stop_signals, NULL, &second);
    if (sig < 0) broken = weft_server_check(server);
  }
  if (broken) {
    fprintf(stderr, "weftd: error: %s: %s; stopping\n", weft_code_name(weft_status_code(broken)),
            weft_status_message(broken));
  } else {
    fprintf(stderr, "weftd: %s received, stopping %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            weft_server_target(server));
  }
  weft_status_free(weft_server_stop(server));
  weft_server_free(server);
#if defined(__SANITIZE_ADDRESS__)
  /* In a sanitizer build the leak check runs here, with the server gone and every thread idle,
   * rather than at exit, where it raced the libraries' exit-time teardown and a task sometimes
   * never finished (its main thread spinning while the checker waited). */
  __lsan_do_leak_check();
#endif
  if (broken) {
    weft_status_free(broken);
    return EXIT_NO_ACCEPT;
  }
  return 0;
}

/* GLib before 2.76 serves GList, GQueue, GHashTable, GString, GThread... from GSlice's magazines:
 * per-thread caches of slabs that a thread's exit hands to a global depot, which keeps them
 * until later allocations trim it. After a burst of hundreds of short-lived threads (300 steps
 * blocked on a frozen worker) the server kept about 2 MB of such slabs, spread over the heap
 * where they held about 10 MB resident for good (docs/security.md, "what the attacks
 * measured"). G_SLICE=always-malloc hands each block to malloc, which frees it; GLib reads it
 * once, before main (its constructor already allocates), so weftd starts itself again with it
 * set. The caller's own G_SLICE (e.g. debug-blocks) is kept; an exec that fails changes
 * nothing. From GLib 2.76 on, GSlice is malloc anyway. */
static void gslice_to_malloc(char **argv) {
#if !GLIB_CHECK_VERSION(2, 76, 0)
  if (getenv("G_SLICE") || glib_check_version(2, 76, 0) == NULL) return;
  if (setenv("G_SLICE", "always-malloc", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("G_SLICE");
#else
  (void)argv;
#endif
}

/* glibc's malloc, set for a server that moves large tensors. gRPC's read buffers for a message
 * came from the reading thread's arena (glibc gives each thread one; the threads that poll take
 * turns, server.c), and once freed (the bytes copied into the tensor) the arena's heap was
 * trimmed or deleted, so the next message's buffers faulted in fresh, zeroed pages: a 64 MiB
 * RecvTensor answer across network namespaces cost the receiving task 1,500 to 10,500 page
 * faults, a 1 MiB one 40 to 120, and the task a third more CPU than a plain gRPC receiver
 * (docs/performance.md, "netns transfers: one poller, one malloc arena"). One arena, no
 * automatic trim below 256 MiB and the mmap threshold at glibc's largest dynamic value
 * (32 MiB) keep them resident; the explicit trims after bursts (server.c, pool.c) still hand
 * memory back. WEFT_MALLOC_TUNING=0 keeps glibc's defaults. Set before any thread exists. */
static void malloc_tuning(void) {
  const char *env = getenv("WEFT_MALLOC_TUNING");
  if (env && strcmp(env, "0") == 0) return;
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

int main(int argc, char **argv) {
  gslice_to_malloc(argv);
  malloc_tuning();
  flags_t f = {0};
  f.task_index = -1;
  f.from = (cluster_from_flags_t)CLUSTER_FROM_DEFAULTS;
  gboolean show_version = FALSE, show_help = FALSE;
  GOptionEntry entries[] = {
      {"cluster", 0, 0, G_OPTION_ARG_STRING, &f.cluster,
       "the cluster: 'ps=host:port,...;worker=host:port,...'", "SPEC"},
      {"ps_hosts", 0, 0, G_OPTION_ARG_STRING, &f.ps_hosts, "the ps tasks: host:port,...", "HOSTS"},
      {"worker_hosts", 0, 0, G_OPTION_ARG_STRING, &f.worker_hosts,
       "the worker tasks: host:port,...", "HOSTS"},
      {"job_name", 0, 0, G_OPTION_ARG_STRING, &f.job_name, "this task's job", "JOB"},
      {"task_index", 0, 0, G_OPTION_ARG_INT, &f.task_index, "this task's index in its job (0)",
       "N"},
      {"bind", 0, 0, G_OPTION_ARG_STRING, &f.bind,
       "listen on this host instead of loopback (0.0.0.0: everywhere)", "ADDR"},
      {"tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &f.tls_cert,
       "serve TLS with this certificate chain (PEM; with --tls-key)", "FILE"},
      {"tls-key", 0, 0, G_OPTION_ARG_FILENAME, &f.tls_key, "the certificate's private key (PEM)",
       "FILE"},
      {"tls-ca", 0, 0, G_OPTION_ARG_FILENAME, &f.tls_ca,
       "mutual TLS: clients and peer tasks must present a certificate signed by this CA (PEM)",
       "FILE"},
      {"auth-token-file", 0, 0, G_OPTION_ARG_FILENAME, &f.auth_token_file,
       "every call must carry the token in this file (the cluster token)", "FILE"},
      CLUSTER_FROM_OPTION_ENTRIES(f.from),
      {"local", 0, 0, G_OPTION_ARG_NONE, &f.local,
       "a one-task server of job 'local' (TensorFlow's create_local_server)", NULL},
      {"port", 0, 0, G_OPTION_ARG_INT, &f.port, "with --local: the port (0: a free one)", "PORT"},
      {"status_timeout_ms", 0, 0, G_OPTION_ARG_INT64, &f.status_timeout_ms,
       "how long the master waits for every task to answer (10000)", "MS"},
      {"step_timeout_ms", 0, 0, G_OPTION_ARG_INT64, &f.step_timeout_ms,
       "the deadline of a step whose session sets none (120000)", "MS"},
      {"max_message_bytes", 0, 0, G_OPTION_ARG_INT64, &f.max_message_bytes,
       "refuse requests larger than this (1073741824)", "BYTES"},
      {"max_inflating_bytes", 0, 0, G_OPTION_ARG_INT64, &f.max_inflating_bytes,
       "compressed requests inflated at once may take this much; more get RESOURCE_EXHAUSTED "
       "(268435456)", "BYTES"},
      {"max_tensor_bytes", 0, 0, G_OPTION_ARG_INT64, &f.max_tensor_bytes,
       "refuse a fed or constant tensor larger than this (1073741824)", "BYTES"},
      {"max_graph_nodes", 0, 0, G_OPTION_ARG_INT64, &f.max_graph_nodes,
       "refuse graphs with more nodes, steps with more names (1000000)", "N"},
      {"max_node_attrs", 0, 0, G_OPTION_ARG_INT64, &f.max_node_attrs,
       "refuse nodes with more attributes (1000)", "N"},
      {"max_tensor_rank", 0, 0, G_OPTION_ARG_INT, &f.max_tensor_rank,
       "refuse tensors and shapes of a higher rank (8)", "N"},
      {"max_concurrent_steps", 0, 0, G_OPTION_ARG_INT, &f.max_concurrent_steps,
       "calls that may block (RunStep, RunGraph, ...) handled at once; more get "
       "RESOURCE_EXHAUSTED (256)", "N"},
      {"max_rpc_threads", 0, 0, G_OPTION_ARG_INT, &f.max_rpc_threads,
       "threads of the master's calls to the tasks; a step needing more gets "
       "RESOURCE_EXHAUSTED (256)", "N"},
      {"session_gc_seconds", 0, 0, G_OPTION_ARG_INT64, &f.session_gc_seconds,
       "close sessions no call has used for this long (86400)", "SECONDS"},
      {"max_registered_graphs", 0, 0, G_OPTION_ARG_INT, &f.max_registered_graphs,
       "partition graphs registered on this task at once; more get RESOURCE_EXHAUSTED (4096)",
       "N"},
      {"step_idle_timeout_ms", 0, 0, G_OPTION_ARG_INT64, &f.step_idle_timeout_ms,
       "drop a step no RunGraph holds after this long idle and past its deadline; its waiting "
       "RecvTensors get ABORTED (60000)", "MS"},
      {"max_sessions", 0, 0, G_OPTION_ARG_INT, &f.max_sessions,
       "sessions open at once; one more CreateSession gets RESOURCE_EXHAUSTED (1024)", "N"},
      {"handshake_timeout_ms", 0, 0, G_OPTION_ARG_INT, &f.handshake_timeout_ms,
       "close a connection that has not finished its TLS handshake and HTTP/2 preface by then "
       "(20000)", "MS"},
      {"max_connection_idle_ms", 0, 0, G_OPTION_ARG_INT, &f.max_connection_idle_ms,
       "close a connection that has carried no call for this long (300000)", "MS"},
      {"max_connection_answers", 0, 0, G_OPTION_ARG_INT, &f.max_connection_answers,
       "answers one connection's client has not yet received; beyond them its new calls get "
       "RESOURCE_EXHAUSTED (1024)", "N"},
      {"bulk_transfer", 0, 0, G_OPTION_ARG_STRING, &f.bulk_transfer,
       "auto, on or off: RecvTensor's bytes over plain TCP connections beside the gRPC port, "
       "authenticated by single-use tickets (auto: on without TLS; on with TLS they travel in "
       "plaintext; WEFT_BULK_TRANSFER=0 turns it off)", "MODE"},
      {"bulk_port", 0, 0, G_OPTION_ARG_INT, &f.bulk_port,
       "the bulk channel's TCP port, on the --bind address, for a firewall to let through "
       "(0: a free one, printed at start)", "PORT"},
      {"thread_idle_ms", 0, 0, G_OPTION_ARG_INT64, &f.thread_idle_ms,
       "end a graph's or session's executor threads after this long without work; the next "
       "step starts them again (15000, or WEFT_THREAD_IDLE_MS)", "MS"},
      {"version", 'V', 0, G_OPTION_ARG_NONE, &show_version, "print the version and exit", NULL},
      {"help", 'h', 0, G_OPTION_ARG_NONE, &show_help, "show this help and exit", NULL},
      {NULL},
  };
  GOptionContext *ctx = g_option_context_new(NULL);
  g_option_context_set_help_enabled(ctx, FALSE); /* tool_print_help lays it out for help2man */
  g_option_context_set_summary(ctx,
      "The server of one task of a Weft cluster (TensorFlow's tf.train.Server as a program).\n"
      "The cluster comes from --cluster, --ps_hosts/--worker_hosts, TF_CONFIG or Slurm\n"
      "(--cluster-from slurm, under srun); --local serves a one-task cluster. Once serving it prints \"Started server with target:\n"
      "grpc://HOST:PORT\" on stdout; SIGINT or SIGTERM stop it.");
  g_option_context_set_description(ctx,
      "Examples:\n"
      "  weftd --local --port 2222\n"
      "  weftd --ps_hosts localhost:2222 --worker_hosts localhost:2223 --job_name ps\n"
      "  weftd --local --port 2222 --tls-cert server.crt --tls-key server.key\n"
      "  srun -n 3 weftd --cluster-from slurm --ps 1 --port-base 2222 --bind 0.0.0.0\n"
      "\n"
      "Exit status: 0 stopped cleanly, 1 the server could not start, 2 a usage error or a\n"
      "cluster spec, TLS file or token file that does not make sense, 3 the server stopped\n"
      "accepting connections (out of open files) and stopped.\n"
      "See docs/distributed.md and docs/security.md.\n");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  int rc = 0;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    rc = usage(error->message);
    g_error_free(error);
  } else if (show_help) {
    tool_print_help(ctx, "weftd [OPTION]...");
  } else if (show_version) {
    printf("weftd %s\n", WEFT_VERSION);
  } else if (argc > 1) {
    char *msg = g_strdup_printf("unexpected argument '%s'", argv[1]);
    rc = usage(msg);
    g_free(msg);
  } else {
    rc = serve(&f);
  }
  g_option_context_free(ctx);
  g_free(f.cluster);
  g_free(f.ps_hosts);
  g_free(f.worker_hosts);
  g_free(f.job_name);
  g_free(f.bind);
  g_free(f.tls_cert);
  g_free(f.tls_key);
  g_free(f.tls_ca);
  g_free(f.auth_token_file);
  g_free(f.bulk_transfer);
  g_free(f.from.source);
  return rc;
}
