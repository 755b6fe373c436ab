/* Pieces of the distributed benchmarks (bench_distributed.c) that the rows across network
 * namespaces (bench_netns.c) reuse: child processes, the raw gRPC echo service and its client,
 * and the transfer graph of a 2-task cluster. Internal to `weft bench`. */
#ifndef WEFT_BENCH_GRPC_H
#define WEFT_BENCH_GRPC_H

#include <grpc/grpc.h>
#include <sys/types.h>

#include "bench.h"

/* A child process of the bench (weftd, or the weft binary in a hidden mode). */
typedef struct bench_child {
  pid_t pid;    /* 0: not running */
  int out_fd;   /* read end of its stdout */
  int err_fd;   /* its stderr: an unlinked temporary file, read for error messages */
  char *target; /* what followed ready_prefix on its first line (weftd: grpc://HOST:PORT) */
} bench_child_t;

/* Starts PROGRAM ARGS... (PROGRAM found next to the weft binary; under `ip netns exec NETNS`
 * when netns is not NULL) in its own process group, killed should this process die, and waits
 * up to timeout_ms for its first line, which must start with ready_prefix. On failure the child
 * is already stopped and reaped; *port_in_use (may be NULL) tells a lost race for a port. */
weft_status_t *bench_child_start(const char *netns, const char *program,
                                 const char *const *args, const char *ready_prefix,
                                 int timeout_ms, bench_child_t *c, bool *port_in_use);
/* The same, with env ("KEY=VALUE", NULL-terminated; may be NULL) added to (or replacing in) this
 * process's environment for the child. */
weft_status_t *bench_child_start_env(const char *netns, const char *program,
                                     const char *const *args, const char *const *env,
                                     const char *ready_prefix, int timeout_ms, bench_child_t *c,
                                     bool *port_in_use);
/* Stops and reaps the child (SIGTERM, then SIGKILL after 5 s); safe to call twice. */
void bench_child_stop(bench_child_t *c);

/* An echo service on gRPC's C core, served in this process by a thread of its own. */
typedef struct echo_server {
  grpc_server *server;
  grpc_completion_queue *cq;
  void *method;
  GThread *thread;
  int port;
  grpc_byte_buffer *reply; /* answered to every call (a copy each time) */
  bool copy_request;       /* gather the request into one buffer, as a receiver that parses it */
  void *sink;              /* that buffer: kept and reused, as Weft's receiving tensors come */
  size_t sink_bytes;       /* from its buffer cache (a fresh buffer would fault in every page) */
} echo_server_t;

/* Serves the echo method on address ("HOST:PORT", port 0 for a free one); answers every call
 * with a copy of `reply` (taken). */
weft_status_t *bench_echo_start(echo_server_t *e, const char *address, grpc_byte_buffer *reply,
                                bool copy_request);
void bench_echo_stop(echo_server_t *e);

/* The client side of the baseline: raw unary calls on one channel and one completion queue. */
typedef struct raw_client {
  grpc_channel *channel;
  grpc_completion_queue *cq;
  grpc_byte_buffer *request; /* sent (a copy) by every call */
  int repeat;                /* calls per timed repetition */
  int64_t calls;             /* calls that succeeded so far */
} raw_client_t;

/* Opens a channel to address ("HOST:PORT"); takes `request`. */
void bench_raw_client_open(raw_client_t *c, const char *address, grpc_byte_buffer *request,
                           int repeat);
void bench_raw_client_close(raw_client_t *c);
/* A bench_body_fn: c->repeat raw calls; seconds per call. */
double bench_run_raw_calls(void *arg, weft_status_t **error);
/* A request of `bytes` bytes (a slice over one buffer, as Weft's frames point at tensor
 * buffers), and the 8-byte answer of the transfer baseline. */
grpc_byte_buffer *bench_raw_payload(int64_t bytes);
grpc_byte_buffer *bench_raw_reply(void);
/* remote_step/scalar's raw call: RunStep's own request frame (a 24-character session handle,
 * one fetch) and answer frame (one float scalar); the caller owns both (NULL on error). */
weft_status_t *bench_run_step_frames(grpc_byte_buffer **request, grpc_byte_buffer **reply);

/* The line a `weft bench --netns-child` process starts its one line of output with: figures as
 * JSON, or for the echo service "serving HOST:PORT (port N)" with the port it bound. */
#define BENCH_ECHO_READY "weft-bench-netns: "

/* The transfer graph: a float32 Const on /job:worker/task:0, Identity then Size on task 1, Size
 * fetched, so the bytes cross task 0 -> task 1 (RecvTensor) and only a scalar comes back. */
typedef struct transfer {
  weft_session_t *session;
  weft_graph_t *graph;
  const char *fetch;
  int64_t elements;
  int repeat;    /* steps per timed repetition */
  int64_t steps; /* steps run so far (the untimed first one included) */
} transfer_t;

/* Opens a grpc:// session on target and runs the first (untimed) step, which registers the
 * partitions. */
weft_status_t *bench_transfer_open(const char *target, int64_t elements, int repeat,
                                   transfer_t *t);
/* A bench_body_fn: t->repeat steps; seconds per step. */
double bench_run_transfer(void *arg, weft_status_t **error);
void bench_transfer_close(transfer_t *t);

/* The netns_transfer rows (bench_netns.c), called by bench_run_distributed. */
void bench_run_netns(const bench_options_t *o, bench_report_t *r);

#endif /* WEFT_BENCH_GRPC_H */
