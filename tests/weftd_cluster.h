/* Clusters of real weftd processes on loopback for the fault-injection and soak tests: start,
 * signal, stop, and read a process's resident memory and open descriptors. */
#ifndef WEFT_TEST_WEFTD_CLUSTER_H
#define WEFT_TEST_WEFTD_CLUSTER_H

#include <glib.h>
#include <stdbool.h>

#define WEFTD_PATH WEFT_BUILD_DIR "/core/tools/weftd"
#define WEFTD_MAX_TASKS 8

typedef struct weftd_proc {
  GPid pid;
  int out_fd;
} weftd_proc_t;

/* ps tasks first, then workers; address[k] "127.0.0.1:P", target[k] "grpc://127.0.0.1:P". A
 * task given a fixed address (not started here) has pid 0. */
typedef struct weftd_cluster {
  int n, n_ps;
  weftd_proc_t d[WEFTD_MAX_TASKS];
  char *address[WEFTD_MAX_TASKS];
  char *target[WEFTD_MAX_TASKS];
  char *ps_hosts, *worker_hosts;
} weftd_cluster_t;

/* False (and the test skipped) when weftd is not built. extra: more weftd flags (NULL-ended,
 * may be NULL). fixed (may be NULL, else n_ps + n_workers entries): an address to use for that
 * task instead of starting a weftd for it (NULL entries are started). */
bool weftd_cluster_start(weftd_cluster_t *c, int n_ps, int n_workers, const char *const *extra,
                         const char *const *fixed);
/* Starts task k again (same flags), e.g. after weftd_cluster_kill. */
void weftd_cluster_restart(weftd_cluster_t *c, int k, const char *const *extra);
/* Sends sig; for SIGSTOP waits until every thread has stopped; for SIGKILL/SIGTERM reaps the
 * process and returns its wait status (0 otherwise). */
int weftd_cluster_signal(weftd_cluster_t *c, int k, int sig);
/* SIGTERM to every task still running; each must exit with status 0. */
void weftd_cluster_stop(weftd_cluster_t *c);
/* VmRSS in KiB and the number of open descriptors of a process (-1 when unreadable). */
int64_t proc_rss_kib(GPid pid);
int proc_fd_count(GPid pid);

#endif /* WEFT_TEST_WEFTD_CLUSTER_H */
