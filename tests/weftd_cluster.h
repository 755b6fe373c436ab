/* Real weftd processes on loopback for the tests that start servers (distributed, security,
 * faults, soak, trace, shm_transfer): one weftd waited for until its "Started server with
 * target:" line, clusters of ps and worker tasks, signals (SIGSTOP returns only once the process
 * is really stopped), clean stops, and a process's resident memory and open descriptors. Every
 * weftd dies with the test process, so a failed assertion leaves none behind. */
#ifndef WEFT_TEST_WEFTD_CLUSTER_H
#define WEFT_TEST_WEFTD_CLUSTER_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "distributed/distributed_internal.h"
#include "weft/weft.h"

#define WEFTD_PATH WEFT_BUILD_DIR "/core/tools/weftd"
#define WEFTD_MAX_TASKS 8

typedef struct weftd_proc {
  GPid pid;     /* 0: not running (never started, or reaped) */
  int out_fd;   /* its stdout, after the "Started server" line */
  int err_fd;   /* its stderr when started with capture_stderr, else -1 (the test's stderr) */
  char *target; /* what its "Started server with target: " line names */
} weftd_proc_t;

/* False (and the test skipped) when weftd is not built. */
bool weftd_available(void);
/* Starts weftd with args (NULL-ended) and waits for its "Started server with target: " line;
 * the test fails when it does not come. env (NULL-ended, may be NULL): "NAME=VALUE" sets,
 * "NAME" unsets; TF_CONFIG is unset unless env sets it. */
weftd_proc_t weftd_spawn(const char *const *args, const char *const *env, bool capture_stderr);
/* Sends sig. SIGSTOP: returns once every thread has stopped (the signal is delivered to each
 * thread when it next runs, and until then a busy one still answers calls). SIGKILL, SIGTERM and
 * SIGINT: continues a stopped process, reaps it (SIGKILL after 15 s), closes its pipes, frees
 * target and returns its wait status. 0 for other signals and when p is not running. */
int weftd_signal(weftd_proc_t *p, int sig);
/* SIGTERM; the exit status must be 0 (under AddressSanitizer that also means nothing leaked).
 * A captured stderr is printed first when it is not. Nothing when p is not running. */
void weftd_stop(weftd_proc_t *p);

/* ps tasks first, then workers; address[k] "127.0.0.1:P", target[k] "grpc://127.0.0.1:P"
 * ("grpcs://" when extra has --tls-cert). A task given a fixed address (not started here) has
 * pid 0. */
typedef struct weftd_cluster {
  int n, n_ps;
  weftd_proc_t d[WEFTD_MAX_TASKS];
  char *address[WEFTD_MAX_TASKS];
  char *target[WEFTD_MAX_TASKS];
  char *ps_hosts, *worker_hosts;
  const char *const *env; /* the caller's, for restarts */
} weftd_cluster_t;

/* Starts n_ps ps and n_workers worker tasks with --ps_hosts/--worker_hosts on free loopback
 * ports, each checked to print its own target. False (and the test skipped) when weftd is not
 * built. extra: more weftd flags (NULL-ended, may be NULL). A task that cannot listen on its port
 * (another process took it since it was free) starts the whole cluster again on new ports, at
 * most three times. */
bool weftd_cluster_start(weftd_cluster_t *c, int n_ps, int n_workers, const char *const *extra);
/* The same with env for every task (see weftd_spawn; must outlive the cluster) and fixed (may be
 * NULL, else n_ps + n_workers entries): an address to use for that task instead of starting a
 * weftd for it (NULL entries are started). */
bool weftd_cluster_start_full(weftd_cluster_t *c, int n_ps, int n_workers,
                              const char *const *extra, const char *const *env,
                              const char *const *fixed);
/* Starts task k again on its address (same flags), e.g. after weftd_cluster_signal(SIGKILL). */
void weftd_cluster_restart(weftd_cluster_t *c, int k, const char *const *extra);
/* weftd_signal on task k. */
int weftd_cluster_signal(weftd_cluster_t *c, int k, int sig);
/* SIGTERM to every task still running; each must exit with status 0. */
void weftd_cluster_stop(weftd_cluster_t *c);

/* A session of g on target with default options; the test fails when it cannot be made. */
weft_session_t *weftd_remote_session(weft_graph_t *g, const char *target);

/* VmRSS in KiB and the number of open descriptors of a process (-1 when unreadable). */
int64_t proc_rss_kib(GPid pid);
/* A field of /proc/PID/status in KiB ("VmHWM", "VmRSS"); -1 if unreadable. */
int64_t proc_status_kib(GPid pid, const char *field);
/* A gzip stream of `prefix` (may be NULL) followed by `zeros` zero bytes, made piecewise (about
 * 1 MB for 1 GiB); the caller unrefs it. */
GByteArray *weftd_gzip_body(const GByteArray *prefix, uint64_t zeros);
int proc_fd_count(GPid pid);
/* Threads of process pid whose name is `name` (/proc/PID/task/TID/comm). */
int proc_threads_named(GPid pid, const char *name);

/* A request frame as the servers read it, built by hand so tests can also send malformed ones:
 * `msg`'s length and bytes, `list`'s length and bytes, then `tail` (the tensor bytes; may be
 * NULL). The caller frees it with g_byte_array_unref. */
GByteArray *weftd_frame_request(const ProtobufCMessage *msg, const Weft__TensorList *list,
                                const void *tail, size_t tail_len);

#endif /* WEFT_TEST_WEFTD_CLUSTER_H */
