/* Internal declarations of core/src/distributed: cluster specs, the framing of tensors in gRPC
 * messages, the RPC client, the worker (graph registration, steps, rendezvous, _Send/_Recv), the
 * partitioner, the master and the remote session. See docs/distributed.md for the design. */
#ifndef WEFT_DISTRIBUTED_INTERNAL_H
#define WEFT_DISTRIBUTED_INTERNAL_H

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>

#include "../exec/plan_internal.h"
#include "distributed.pb-c.h"
#include "graph.pb-c.h"

#define WEFT_DEFAULT_STATUS_TIMEOUT_MS 10000
#define WEFT_DEFAULT_STEP_TIMEOUT_MS 120000
/* Deadline of the short control calls (RegisterGraph, CloseSession, Abort ...). */
#define WEFT_CONTROL_TIMEOUT_MS 10000
/* Prefix of an error a task reports only because another task's failure aborted the step; the
 * master prefers the original error and strips the prefix. */
#define WEFT_DERIVED_PREFIX "[derived] "
/* Trailing metadata every answer of a Weft server carries: a status with it is the service's
 * own error, one without is gRPC's (the peer could not be reached, the deadline passed). */
#define WEFT_ORIGIN_KEY "weft-origin"

/* ---------------------------------------------------------------------------------------------
 * Cluster specs (cluster_spec.c) */

/* One task of a spec. */
typedef struct weft__task_ref {
  char *name;    /* /job:J/replica:0/task:T */
  char *job;
  int task;
  char *address; /* host:port */
} weft__task_ref_t;

weft_cluster_spec_t *weft__cluster_spec_copy(const weft_cluster_spec_t *spec);
/* Every task, jobs in spec order then tasks by index; the array frees its entries. */
GPtrArray *weft__cluster_spec_tasks(const weft_cluster_spec_t *spec);
/* Replaces the address of an existing task (a local server learns its port after binding). */
void weft__cluster_spec_set_address(weft_cluster_spec_t *spec, const char *job, int task,
                                    const char *address);
/* "host:port" or "[v6]:port" into its parts (host without brackets; g_free()). */
bool weft__address_split(const char *address, char **host, int *port);
/* "/job:J/replica:0/task:T"; g_free(). */
char *weft__task_name(const char *job, int task);
/* The task part of a full device name ("/job:J/replica:0/task:T"), or NULL when the name has no
 * job or task; g_free(). */
char *weft__task_of_device(const char *device_name);

/* ---------------------------------------------------------------------------------------------
 * Framing (wire.c): [varint n][message][varint m][TensorList][tensor bytes...] */

/* Packs `msg` and the tensors into a byte buffer. Numeric tensors are handed to gRPC as slices
 * over their own buffers (each slice holds a tensor reference); string tensors are gathered into
 * one slice. Tensors on a device are copied to the host first. The caller owns *out. */
weft_status_t *weft__wire_encode(const ProtobufCMessage *msg, weft_tensor_t *const *tensors,
                                 int n_tensors, grpc_byte_buffer **out);
/* Unpacks a frame: the message (free with protobuf_c_message_free_unpacked(*msg, NULL)) and its
 * tensors (an array the caller frees with weft__tensors_free). Every size, dtype and shape is
 * checked before anything is allocated; INVALID_ARGUMENT saying what is wrong. */
weft_status_t *weft__wire_decode(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc,
                                 ProtobufCMessage **msg, weft_tensor_t ***tensors,
                                 int *n_tensors);
void weft__tensors_free(weft_tensor_t **tensors, int n); /* unrefs each, frees the array */

/* ---------------------------------------------------------------------------------------------
 * Request validation (validate.c, docs/security.md): limits a server holds every request to. */

#define WEFT_DEFAULT_MAX_MESSAGE_BYTES ((int64_t)1 << 30)
#define WEFT_DEFAULT_MAX_TENSOR_BYTES ((int64_t)1 << 30)
#define WEFT_DEFAULT_MAX_GRAPH_NODES ((int64_t)1000000)
#define WEFT_DEFAULT_MAX_NODE_ATTRS ((int64_t)1000)
#define WEFT_DEFAULT_MAX_INFLATING_BYTES ((int64_t)256 << 20)

typedef struct weft__limits {
  int64_t max_message_bytes; /* a whole request, tensors included */
  int64_t max_tensor_bytes;  /* one tensor: fed, or a constant in a graph attribute */
  int64_t max_graph_nodes;   /* nodes of one GraphDef; names of one RunStep */
  int64_t max_node_attrs;    /* attributes of one node */
  int max_rank;              /* of any tensor or shape (at most WEFT_MAX_RANK) */
  int64_t max_inflating_bytes; /* inflated bytes of all compressed requests held at once */
} weft__limits_t;

/* The server-wide bound on memory taken by inflating compressed requests (--max_inflating_bytes):
 * each request reserves every slice before inflate fills it, and keeps what it reserved until
 * its inflated payload is freed. A request may reserve while the bytes reserved by all stay
 * within the limit; one request at a time, the lead (the first to reserve while no lead holds
 * anything), may go past it up to --max_message_bytes, so a single compressed request of any
 * allowed size is still served when it is alone. At most limit + max_message_bytes are thus
 * held at once, whatever the number of callers. */
typedef struct weft__inflate_budget {
  GMutex lock;
  int64_t limit;
  int64_t in_use;   /* reserved by all requests */
  const void *lead; /* NULL: none */
} weft__inflate_budget_t;

void weft__inflate_budget_init(weft__inflate_budget_t *b, int64_t limit);
void weft__inflate_budget_clear(weft__inflate_budget_t *b);
/* Hands back `bytes` that `owner` reserved (weft__inflate_request's *reserved), ending its lead. */
void weft__inflate_budget_release(weft__inflate_budget_t *b, const void *owner, int64_t bytes);

void weft__limits_default(weft__limits_t *l);
/* Before decoding: the frame's size and the tensors its TensorList declares (dtype, rank, shape
 * against bytes, bytes against the limit and against what follows). INVALID_ARGUMENT "Invalid
 * <Method> request: field '...' ..."; NULL when fine or when the frame is too broken to read
 * (weft__wire_decode then says how). */
weft_status_t *weft__validate_frame(const weft__limits_t *l, const char *method,
                                    grpc_byte_buffer *bb);
/* A request that arrived compressed (gzip or deflate; the server leaves gRPC's own inflating
 * off) is inflated here, in pieces, never past l->max_message_bytes: a small body that would
 * inflate beyond it is refused with INVALID_ARGUMENT naming --max_message_bytes, having taken at
 * most that much memory. Each piece is first reserved from `budget` (NULL: none) for `owner`;
 * one the budget refuses fails the request with RESOURCE_EXHAUSTED naming
 * --max_inflating_bytes. On success *bb is replaced by the inflated buffer (an uncompressed one
 * is left as it is) and *reserved says how many bytes of the budget it holds: the caller releases
 * them (weft__inflate_budget_release) when it frees *bb. On failure nothing stays reserved
 * (*reserved is 0) and the memory is freed. */
weft_status_t *weft__inflate_request(const weft__limits_t *l, weft__inflate_budget_t *budget,
                                     const void *owner, const char *method,
                                     grpc_byte_buffer **bb, int64_t *reserved);
/* After decoding: graph node and attribute counts, op names, device names inside `spec`,
 * constant tensors in attributes, names and handles that must not be empty, n_tensors against
 * the feeds. `method` is the full path ("/weft.Master/RunStep"). */
weft_status_t *weft__validate_request(const weft__limits_t *l, const weft_cluster_spec_t *spec,
                                      const char *method, const ProtobufCMessage *msg,
                                      int n_tensors);

/* ---------------------------------------------------------------------------------------------
 * Transport security and the cluster token (security.c, docs/security.md) */

/* TLS material and the token, read once; immutable and shared by reference. */
typedef struct weft__security weft__security_t;
/* Reads the files (each may be NULL or ""): tls says whether to use TLS at all (a client with
 * tls and no CA trusts the system's roots; a server without a CA verifies its peer tasks against
 * its own certificate chain). A certificate needs its key. INVALID_ARGUMENT naming the file when
 * one is unreadable, empty or not PEM, or the token is not printable ASCII. The caller owns
 * *out (weft__security_unref). */
weft_status_t *weft__security_new(bool tls, bool server, const char *cert_file,
                                  const char *key_file, const char *ca_file,
                                  const char *token_file, weft__security_t **out);
weft__security_t *weft__security_ref(weft__security_t *s); /* accepts NULL */
void weft__security_unref(weft__security_t *s);            /* accepts NULL */
bool weft__security_tls(const weft__security_t *s);        /* NULL: false */
bool weft__security_mutual(const weft__security_t *s);     /* TLS with a CA */
bool weft__security_has_token(const weft__security_t *s);
/* A string that differs between different TLS material ("plain" without TLS); borrowed. */
const char *weft__security_channel_key(const weft__security_t *s);
/* New credentials (the caller releases them): insecure when s is NULL or without TLS. */
grpc_server_credentials *weft__security_server_credentials(const weft__security_t *s);
grpc_channel_credentials *weft__security_channel_credentials(const weft__security_t *s);
/* The metadata key and value ("Bearer <token>", NULL without a token) a call carries. */
const char *weft__security_auth_key(void);
const char *weft__security_auth_value(const weft__security_t *s);
/* UNAUTHENTICATED (naming `method`) when the server has a token and the call's metadata does
 * not carry it; NULL otherwise. Constant-time comparison. */
weft_status_t *weft__security_check_call(const weft__security_t *s, const grpc_metadata_array *md,
                                         const char *method);
/* Whether an in-process client with `client`'s token may call a server with `server`'s. */
bool weft__security_client_allowed(const weft__security_t *server, const weft__security_t *client);

/* ---------------------------------------------------------------------------------------------
 * RPC client (rpc.c) */

void weft__grpc_init_once(void);
/* The line gRPC logged when accept() on a listening port first failed (its listener then stops
 * for good: see rpc.c), or NULL when none did. The caller g_free()s it. */
char *weft__grpc_accept_failure(void);
/* The channel arguments every channel and server uses (unlimited message sizes, keep-alives,
 * short reconnect back-off). Static; valid for the process lifetime. */
const grpc_channel_args *weft__grpc_channel_args(void);

/* The calls in flight for one purpose (a step's transfers), so they can be cancelled at once. */
typedef struct weft__call_set weft__call_set_t;
weft__call_set_t *weft__call_set_new(void);
void weft__call_set_free(weft__call_set_t *set); /* nothing may still be in flight */
/* Cancels what is in flight and makes every later call through the set fail at once with a copy
 * of `why` (borrowed). */
void weft__call_set_cancel(weft__call_set_t *set, const weft_status_t *why);

/* What a unary call talks to, for messages: "/job:ps/replica:0/task:0" and "127.0.0.1:2222". */
typedef struct weft__peer {
  const char *name;
  const char *address;
  /* How to reach it: TLS material and token (borrowed; NULL: plaintext, no token). */
  const weft__security_t *security;
  /* A completion queue a thread of this process's server polls all along (server.c), or NULL.
   * A call from inside that server waits for its answer there instead of polling a queue of
   * its own: inside a server two pollers hand the reading of a large answer back and forth
   * (docs/performance.md, "netns transfers: one poller"). */
  grpc_completion_queue *queue;
} weft__peer_t;

/* One unary call: frames `msg` + tensors, waits for the answer (at most timeout_ms), unframes
 * it. wait_for_ready: wait for the peer to come up until the deadline instead of failing at once.
 * `set` may be NULL. Errors keep their code; those of the transport (not the peer's own answer)
 * name the peer and the method. On success *resp (protobuf_c_message_free_unpacked) and *resp_tensors
 * (weft__tensors_free) are the caller's; resp_tensors may be NULL when none are expected. */
weft_status_t *weft__rpc_unary(const weft__peer_t *peer, const char *method,
                               const ProtobufCMessage *msg, weft_tensor_t *const *tensors,
                               int n_tensors, int64_t timeout_ms, bool wait_for_ready,
                               weft__call_set_t *set, const ProtobufCMessageDescriptor *resp_desc,
                               ProtobufCMessage **resp, weft_tensor_t ***resp_tensors,
                               int *n_resp_tensors);
/* weft__rpc_unary in two halves, so that the caller can do something else while the call is
 * in flight: unary_start frames and sends the request (peer, method and set must outlive the
 * call; msg and tensors need not); unary_finish waits for the answer as weft__rpc_unary does,
 * frees the pending call, and must be called exactly once for each start. */
typedef struct weft__rpc_pending weft__rpc_pending_t;
weft__rpc_pending_t *weft__rpc_unary_start(const weft__peer_t *peer, const char *method,
                                           const ProtobufCMessage *msg,
                                           weft_tensor_t *const *tensors, int n_tensors,
                                           int64_t timeout_ms, bool wait_for_ready,
                                           weft__call_set_t *set);
/* A switch for measuring: false when the environment variable `name` is "0", else true; read
 * once into *cache (-1 before). */
bool weft__switch_enabled(const char *name, int *cache);
/* weft__rpc_unary_start with a request already framed (weft__wire_encode), which it takes: a
 * caller sending the same request again and again frames it once and passes a copy
 * (grpc_byte_buffer_copy shares the bytes). */
weft__rpc_pending_t *weft__rpc_unary_start_frame(const weft__peer_t *peer, const char *method,
                                                 grpc_byte_buffer *request, int64_t timeout_ms,
                                                 bool wait_for_ready, weft__call_set_t *set);
weft_status_t *weft__rpc_unary_finish(weft__rpc_pending_t *p,
                                      const ProtobufCMessageDescriptor *resp_desc,
                                      ProtobufCMessage **resp, weft_tensor_t ***resp_tensors,
                                      int *n_resp_tensors);
/* A call's tag on a server's queue (weft__peer_t.queue) is its waiter's address with the low bit
 * set, which no call_ctx_t has: the polling thread hands it to weft__rpc_waiter_done, which
 * wakes the caller. */
bool weft__rpc_is_waiter(const void *tag);
void weft__rpc_waiter_done(void *tag);
/* True on a server thread while it is the one that polls (server.c): it must not wait on its
 * own queue. */
bool weft__server_on_poller(void);
/* Called by a call's handler before anything that may wait (an RPC, another thread, a lock that
 * may be held across one): when this thread is the server's polling thread handling the call
 * without a follower polling in its place (a RunStep, server.c), it wakes or starts one now.
 * NULL elsewhere, and when one polls; RESOURCE_EXHAUSTED (the caller's to free) when no thread
 * could be made, and the call must then fail with it. */
weft_status_t *weft__server_may_block(void);
/* Sends raw bytes to a method and returns the raw answer (tests of malformed requests). */
weft_status_t *weft__rpc_raw(const char *address, const char *method, const void *bytes,
                             size_t len, int64_t timeout_ms, char **answer, size_t *answer_len);
/* The same over TLS and with the cluster token of `security` (NULL: plaintext, no token), for
 * tests and tools that probe a secured server. */
weft_status_t *weft__rpc_raw_secure(const char *address, const weft__security_t *security,
                                    const char *method, const void *bytes, size_t len,
                                    int64_t timeout_ms, char **answer, size_t *answer_len);
/* The same with `gz_bytes` a gzip stream of the message, sent as a gRPC message compressed with
 * gzip, byte for byte (tests of compressed requests: a small body that inflates to a huge one). */
weft_status_t *weft__rpc_raw_gzip(const char *address, const weft__security_t *security,
                                  const char *method, const void *gz_bytes, size_t len,
                                  int64_t timeout_ms, char **answer, size_t *answer_len);

/* Maps a grpc:// or grpcs:// target to "host:port" (g_free()); NULL when it is not one. */
char *weft__target_address(const char *target);
bool weft__is_grpc_target(const char *target); /* grpc:// or grpcs:// */
bool weft__is_tls_target(const char *target);  /* grpcs:// */

/* ---------------------------------------------------------------------------------------------
 * Worker (worker.c, rendezvous.c, sendrecv.c) */

typedef struct weft__worker weft__worker_t;
typedef struct weft__step weft__step_t;

/* The worker of task `job`/`task`. Its devices are this process's devices renamed into the
 * task's namespace; its resource manager is shared by every session on the task. */
weft__worker_t *weft__worker_new(const char *job, int task, int64_t default_step_timeout_ms);
/* How its _Recv kernels reach the other tasks (a reference is taken); set before serving. */
void weft__worker_set_security(weft__worker_t *w, weft__security_t *security);
/* The server's completion queue, which its _Recv kernels' RecvTensor calls wait on (borrowed:
 * the server outlives its worker's steps); set before serving. */
void weft__worker_set_queue(weft__worker_t *w, grpc_completion_queue *cq);
/* The cluster the task belongs to (copied): RegisterGraph refuses peers and _Send/_Recv devices
 * outside it; at most max_graphs graphs registered at once; steps no RunGraph holds dropped
 * after step_idle_timeout_ms (<= 0: the defaults). Starts the thread that drops them; set
 * before serving. */
void weft__worker_set_cluster(weft__worker_t *w, const weft_cluster_spec_t *spec, int max_graphs,
                              int64_t step_idle_timeout_ms);
void weft__worker_free(weft__worker_t *w);
/* Aborts every step (UNAVAILABLE: the server is stopping) and refuses new ones. */
void weft__worker_shutdown(weft__worker_t *w);
const char *weft__worker_task(const weft__worker_t *w); /* /job:J/replica:0/task:T */
guint64 weft__worker_incarnation(const weft__worker_t *w);

/* Fills resp (its strings and arrays are g_malloc'ed; free with weft__get_status_clear). */
void weft__worker_get_status(weft__worker_t *w, Weft__GetStatusResponse *resp);
void weft__get_status_clear(Weft__GetStatusResponse *resp);
weft_status_t *weft__worker_register_graph(weft__worker_t *w, const Weft__RegisterGraphRequest *req,
                                           char **graph_handle);
weft_status_t *weft__worker_deregister_graph(weft__worker_t *w, const char *graph_handle);
/* Runs one step of a registered graph; *fetched (n registered fetches) is the caller's
 * (weft__tensors_free). */
/* stats (NULL: not traced) receives the partition's node records. */
weft_status_t *weft__worker_run_graph(weft__worker_t *w, const Weft__RunGraphRequest *req,
                                      weft_tensor_t *const *feeds, int n_feeds,
                                      weft_tensor_t ***fetched, int *n_fetched,
                                      weft_run_metadata_t *stats);
/* Answers a RecvTensor when the tensor is there (maybe at once, maybe from the _Send kernel's
 * thread, maybe with an error when the step is aborted). done takes ownership of both. */
typedef void (*weft__recv_done_fn)(void *user_data, weft_status_t *status, weft_tensor_t *tensor);
void weft__worker_recv_tensor(weft__worker_t *w, int64_t step_id, const char *key,
                              guint64 incarnation, weft__recv_done_fn done, void *user_data);
/* A grouped RecvTensor: answers once every key is there (tensors in key order; done owns the
 * status, the array and its references), or with the first error. */
typedef void (*weft__recv_many_done_fn)(void *user_data, weft_status_t *status,
                                        weft_tensor_t **tensors, int n);
void weft__worker_recv_tensors(weft__worker_t *w, int64_t step_id, const char *const *keys,
                               int n_keys, guint64 incarnation, weft__recv_many_done_fn done,
                               void *user_data);
void weft__worker_abort_step(weft__worker_t *w, int64_t step_id, const weft_status_t *why);
void weft__worker_cleanup_step(weft__worker_t *w, int64_t step_id);
void weft__worker_cleanup_all(weft__worker_t *w, const char *const *containers, int n);

/* Steps and their rendezvous (rendezvous.c). A step is created by whichever comes first of
 * RunGraph and RecvTensor; it holds the tensors _Send produced until RecvTensor takes them. */
typedef struct weft__step_table weft__step_table_t;
weft__step_table_t *weft__step_table_new(void);
void weft__step_table_free(weft__step_table_t *t);
/* Finds or creates step `id` (a new reference; weft__step_unref). NULL with *status when the
 * table is shut down. */
weft__step_t *weft__step_get(weft__step_table_t *t, int64_t id, weft_status_t **status);
void weft__step_unref(weft__step_t *step);
/* Fails what still waits on step `id` and keeps it only as a tombstone (CleanupGraph). */
void weft__step_table_remove(weft__step_table_t *t, int64_t id);
/* Lets the table drop the step a minute from now (it stays aborted until then). */
void weft__step_mark_finished(weft__step_t *step);
/* Drops step `id` when nothing of it is left (every sent tensor taken, nobody waiting). */
void weft__step_table_release_if_idle(weft__step_table_t *t, int64_t id);
/* RecvTensor's side of step `id`: takes `key` (done as in weft__step_take), then drops the step
 * when that was the last of it after its RunGraph ended. NULL, or the status (the caller owns
 * it) when the table is shut down, in which case done is not called. */
weft_status_t *weft__step_table_take(weft__step_table_t *t, int64_t id, const char *key,
                                     weft__recv_done_fn done, void *user_data);
/* Steps the table holds, live and tombstones (for tests). */
guint weft__step_table_size(weft__step_table_t *t);
/* How long a step no RunGraph holds may stay untouched (and past its deadline) before it is
 * dropped and its waiting RecvTensors answered ABORTED naming the step; ms <= 0: the default,
 * WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS. */
void weft__step_table_set_idle_limit(weft__step_table_t *t, int64_t ms);
gint64 weft__step_table_idle_limit_us(weft__step_table_t *t);
/* Drops the expired steps now (the worker's sweeper calls it; new steps also do, at most once a
 * second). */
void weft__step_table_sweep(weft__step_table_t *t);
/* Aborts every step and refuses new ones with `why`. */
void weft__step_table_shutdown(weft__step_table_t *t, const weft_status_t *why);
int64_t weft__step_id(const weft__step_t *step);
/* Sets the step's deadline (monotonic microseconds) when it is sooner than the current one. */
void weft__step_set_deadline(weft__step_t *step, gint64 deadline_us);
/* Fails the step: what waits gets `why` (copied) and later operations fail with it. `derived`
 * marks an abort caused by another task's failure. The first abort wins. */
void weft__step_abort(weft__step_t *step, const weft_status_t *why, bool derived);
/* A copy of the abort status (NULL when the step is fine); *derived says whose fault it was. */
weft_status_t *weft__step_status(weft__step_t *step, bool *derived);
/* Puts a tensor (a new reference is taken) under key; answers a waiting RecvTensor at once. */
weft_status_t *weft__step_put(weft__step_t *step, const char *key, weft_tensor_t *tensor);
/* Takes the tensor under key, now or when it is put (see weft__recv_done_fn). */
void weft__step_take(weft__step_t *step, const char *key, weft__recv_done_fn done,
                     void *user_data);
/* The receiving side of a grouped receive (sendrecv.c). weft__step_claim_group is true for the
 * first caller of a group (named by its first key), which fetches the group and hands the other
 * tensors over with weft__step_deliver (a new reference is taken); the others wait for theirs
 * with weft__step_wait_delivered until then, the step's abort or deadline_us (monotonic). */
bool weft__step_claim_group(weft__step_t *step, const char *group);
void weft__step_deliver(weft__step_t *step, const char *key, weft_tensor_t *tensor);
weft_status_t *weft__step_wait_delivered(weft__step_t *step, const char *key, gint64 deadline_us,
                                         weft_tensor_t **out);
/* The calls this step has in flight (cancelled when it is aborted). */
weft__call_set_t *weft__step_calls(weft__step_t *step);
/* The step's cancellation (borrowed from the step), requested by its abort: a RunGraph hands it
 * to the executor. */
weft__cancel_t *weft__step_cancel(weft__step_t *step);
gint64 weft__step_deadline(const weft__step_t *step);

/* _Send and _Recv (sendrecv.c). Registers their kernels on every device type present (again
 * after new backends appear; cheap when nothing changed). */
void weft__sendrecv_register_kernels(void);
/* What a _Send/_Recv kernel instance of one execution slot knows. The slot's current step is
 * read through *step when the kernel runs. */
typedef struct weft__xfer_state {
  weft__step_t *const *step; /* points into the execution slot */
  char *key;                 /* rendezvous key */
  weft__peer_t peer;         /* _Recv: the task that sends (strings owned here) */
  guint64 peer_incarnation;
  weft_dtype_t dtype;
  bool copy_on_send;
  struct weft__shm_segment *shm; /* _Recv from a task of this host: its segment; else NULL */
  char **group_keys;         /* _Recv of a group: every key of it (NULL-terminated); else NULL */
  int n_group_keys;
  uint64_t bulk_last_nbytes; /* _Recv: the last tensor's size (the bulk channel's split) */
} weft__xfer_state_t;

/* Grouped receives (docs/distributed.md): the partitioner gives the _Recv nodes of the small
 * tensors one task sends another in a step the attr WEFT_RECV_GROUP_ATTR, the list of the
 * group's keys, when waiting for all of them at once cannot deadlock the step. */
#define WEFT_RECV_GROUP_ATTR "_weft_recv_group"
#define WEFT_MAX_RECV_GROUP 64
#define WEFT_RECV_GROUP_MAX_BYTES ((int64_t)64 << 10)
/* _Recv nodes of one registered partition graph. Each costs a thread of every execution slot of
 * the graph (worker.c), made when the graph is registered, so a RegisterGraph with 100,000 of
 * them would take 100,000 threads of the host; real partitions have a few per peer tensor. */
#define WEFT_MAX_RECV_PER_GRAPH 4096
/* The longest timeout a request may ask for (2^40 ms, about 34 years): deadlines in
 * microseconds from now must not overflow int64 (validate.c). */
#define WEFT_MAX_TIMEOUT_MS ((int64_t)1 << 40)
/* Builds the kernel instance of a _Send or _Recv node for a slot whose step pointer is *step;
 * peers maps task names to weft__task_ref_t* (address) and incarnations (GHashTable of
 * task name -> Weft__TaskAddress*). Free with weft__xfer_instance_free. */
weft_status_t *weft__xfer_instance_new(const weft_node_t *node, weft__device_t *device,
                                       weft__step_t *const *step, GHashTable *peers,
                                       const weft__security_t *security,
                                       grpc_completion_queue *queue,
                                       weft__kernel_instance_t **out);
void weft__xfer_instance_free(weft__kernel_instance_t *inst);
/* A _Recv of a group that is not its first: it runs after the first (the partitioner gives it a
 * control input on it) and only takes the tensor the first fetched. */
bool weft__xfer_is_group_follower(const weft__kernel_instance_t *inst);
bool weft__is_xfer_op(const char *op);

/* ---------------------------------------------------------------------------------------------
 * Partitioning (partition.c) */

/* One task's share of a step. */
typedef struct weft__partition {
  char *task;              /* /job:J/replica:0/task:T */
  weft_graph_t *graph;     /* owned; nodes carry their assigned device as requested device */
  GPtrArray *feed_names;   /* char*: tensors of `graph` the worker feeds */
  GArray *feed_index;      /* int per feed_names entry: which of the step's feeds */
  GPtrArray *fetch_names;  /* char*: tensors of `graph` the worker returns */
} weft__partition_t;

void weft__partition_free(weft__partition_t *p);

/* Splits the placed `nodes` (needed by `spec`, in topological order) per task: edges between
 * tasks become _Send/_Recv pairs with rendezvous keys, control edges between tasks a tiny tensor
 * sent for the purpose, fed tensors a Placeholder in every partition that reads them. placement
 * maps node names to full device names. Returns the partitions (freeing themselves) in *out;
 * for each fetch k, fetch_part[k] is the index of the partition returning it (and fetch_slot[k]
 * its position in that partition's fetch_names), or -1 when it is fed (fetch_slot = feed index). */
weft_status_t *weft__partition_step(GPtrArray *nodes, GHashTable *placement,
                                    const weft__step_spec_t *spec, GPtrArray **out,
                                    int *fetch_part, int *fetch_slot);

/* ---------------------------------------------------------------------------------------------
 * Bounded thread pools (pool.c) */

typedef struct weft__pool weft__pool_t;

/* A pool of at most max_threads threads (named thread_name) and max_queued waiting jobs. name
 * and flag (may be NULL: a fixed size) are for the refusal messages. */
weft__pool_t *weft__pool_new(const char *name, const char *flag, const char *thread_name,
                             int max_threads, int max_queued);
/* Runs fn(arg) on an idle thread, else a new one while fewer than max_threads run, else (with
 * may_queue) after the jobs already waiting, while fewer than max_queued wait. Otherwise,
 * or when the system refuses a thread, RESOURCE_EXHAUSTED naming the bound (the caller owns
 * it), and fn is not run: the caller runs it itself or fails its call. */
weft_status_t *weft__pool_try_submit(weft__pool_t *p, void (*fn)(void *), void *arg,
                                     bool may_queue);
/* Runs what is queued, waits for every thread to end, and frees the pool. */
void weft__pool_free(weft__pool_t *p);

/* ---------------------------------------------------------------------------------------------
 * Master (master.c) */

typedef struct weft__master weft__master_t;

typedef struct weft__master_options {
  int64_t status_timeout_ms;
  int64_t step_timeout_ms;
  weft__security_t *security; /* how to reach the workers (the master takes a reference) */
  int64_t session_gc_seconds; /* idle sessions are closed after this; 0 or less: never */
  int max_rpc_threads;        /* threads of the master's call pool; 0 or less: the default */
  int64_t max_graph_nodes;    /* nodes a session's graph may reach by ExtendSession; 0: no bound */
  int max_sessions;           /* sessions open at once; 0 or less: no bound */
} weft__master_options_t;

/* The master of task job/task in `spec` (copied). */
weft__master_t *weft__master_new(const weft_cluster_spec_t *spec, const char *job, int task,
                                 const weft__master_options_t *opts);
weft__master_t *weft__master_ref(weft__master_t *m);
void weft__master_unref(weft__master_t *m);
/* Refuses new work with UNAVAILABLE and cancels the calls of running steps. */
void weft__master_shutdown(weft__master_t *m);
/* The worker of the master's own task (borrowed): RunGraph of that task's partitions calls it
 * directly instead of through gRPC. NULL detaches it, waiting for the direct calls in flight
 * (abort the worker's steps first so they end). */
void weft__master_set_local_worker(weft__master_t *m, weft__worker_t *w);

weft_status_t *weft__master_create_session(weft__master_t *m, const Tensorflow__GraphDef *gd,
                                           const Weft__SessionConfig *config, char **handle,
                                           int64_t *graph_version);
weft_status_t *weft__master_extend_session(weft__master_t *m, const char *handle,
                                           const Tensorflow__GraphDef *gd,
                                           int64_t current_version, int64_t *new_version);
/* placements (may be NULL) receives Weft__NodePlacement* (g_malloc'ed strings; free with
 * weft__node_placement_free) for nodes placed by this step. */
weft_status_t *weft__master_run_step(weft__master_t *m, const char *handle,
                                     const char *const *feed_names, weft_tensor_t *const *feeds,
                                     int n_feeds, const char *const *fetch_names, int n_fetches,
                                     const char *const *target_names, int n_targets,
                                     int64_t timeout_ms, weft_tensor_t **fetched,
                                     GPtrArray *placements, weft_run_metadata_t *stats);
weft_status_t *weft__master_close_session(weft__master_t *m, const char *handle);
/* *devices: Weft__DeviceAttributes* (free with weft__device_attributes_free). */
weft_status_t *weft__master_list_devices(weft__master_t *m, GPtrArray **devices);
weft_status_t *weft__master_reset(weft__master_t *m, const char *const *containers, int n);
void weft__node_placement_free(Weft__NodePlacement *p);
void weft__device_attributes_free(Weft__DeviceAttributes *d);

/* ---------------------------------------------------------------------------------------------
 * Server registry (server.c): masters of servers in this process, so a client in the same
 * process skips gRPC. */

/* How a client reaches `target` (remote_session.c): its "host:port" (g_free), what it talks
 * with (TLS for grpcs:// with the options' files, their token; weft__security_unref) and, when
 * a server of this process serves it, that master (a reference, else NULL). INVALID_ARGUMENT
 * for a target that is not grpc[s]://HOST:PORT or TLS files with a plaintext target. */
weft_status_t *weft__target_peer(const char *target, const weft_session_options_t *opts,
                                 char **address, weft__security_t **security,
                                 weft__master_t **local);

/* gRPC's health checking protocol (health.c): the answer of a Check call whose request is
 * `payload` (plain protobuf, as every health client sends it). *out is the caller's. */
weft_status_t *weft__health_answer(grpc_byte_buffer *payload, grpc_byte_buffer **out);

/* The master serving `address` in this process (a new reference), or NULL (also when the
 * client's TLS choice differs from the server's: it then goes through gRPC). NULL with
 * UNAUTHENTICATED in *status when the server requires a token `client` does not carry. */
weft__master_t *weft__local_master_lookup(const char *address, const weft__security_t *client,
                                          weft_status_t **status);

/* ---------------------------------------------------------------------------------------------
 * Step stats on the wire (step_stats_wire.c) */

/* A StepStats message holding copies of meta's records (NULL meta: an empty one); free it with
 * weft__step_stats_msg_free. */
Weft__StepStats *weft__step_stats_to_msg(const weft_run_metadata_t *meta);
void weft__step_stats_msg_free(Weft__StepStats *msg); /* accepts NULL */
/* Appends the records of msg (may be NULL) to meta. */
void weft__step_stats_from_msg(weft_run_metadata_t *meta, const Weft__StepStats *msg);

/* ---------------------------------------------------------------------------------------------
 * Tensor transfers through shared memory between tasks of one host (shm_transfer.c) */

/* False when the environment has WEFT_SHM_TRANSFER=0 (or off, false). */
bool weft__shm_enabled(void);
/* "127.x.x.x:port", "localhost:port", "[::1]:port". */
bool weft__address_is_loopback(const char *address);

/* Receiver: the segment of one _Recv, reused by its steps (one step at a time). */
typedef struct weft__shm_segment weft__shm_segment_t;
weft__shm_segment_t *weft__shm_segment_new(void);
void weft__shm_segment_free(weft__shm_segment_t *seg); /* accepts NULL */
/* Offers the segment in a RecvTensor request (req's strings borrow from seg). */
void weft__shm_fill_request(weft__shm_segment_t *seg, Weft__RecvTensorRequest *req);
/* After the call: *out gets the tensor when it came through the segment (checked against the
 * segment's size and the declared dtype and shape); grows the segment when the sender asked
 * for more; a failed call drops it. seg may be NULL (nothing to do). */
weft_status_t *weft__shm_after_recv(weft__shm_segment_t *seg, bool call_failed,
                                    const Weft__RecvTensorResponse *resp, weft_tensor_t **out);

/* Sender: the offer of one RecvTensor request (pid 0: none). */
typedef struct weft__shm_offer {
  int pid;
  int fd;
  guint64 capacity;
  char token[33];
} weft__shm_offer_t;
void weft__shm_offer_from_request(const Weft__RecvTensorRequest *req, weft__shm_offer_t *offer);
/* Writes t into the offered segment and sets resp->in_shm and resp->shm_tensor = meta (clear it
 * with weft__shm_meta_clear); false when the bytes must go in the response instead (small or
 * string tensor, no usable offer; resp->shm_wanted is set when the segment was too small). */
bool weft__shm_export(const weft__shm_offer_t *offer, const weft_tensor_t *t,
                      Weft__RecvTensorResponse *resp, Weft__TensorMeta *meta);
void weft__shm_meta_clear(Weft__TensorMeta *meta);
/* The sender's copy into a segment: memcpy, or with stream non-temporal stores (x86; memcpy
 * elsewhere). Any alignment and size. */
void weft__shm_copy(void *dst, const void *src, size_t n, bool stream);
/* The size from which exports stream: half the last-level cache, or WEFT_SHM_STREAM's number of
 * bytes; SIZE_MAX where there is no streaming copy or WEFT_SHM_STREAM=0. Read once. */
size_t weft__shm_stream_min_bytes(void);

/* ---------------------------------------------------------------------------------------------
 * The bulk channel (bulk_transfer.c, docs/distributed.md "The bulk channel"): RecvTensor's
 * bytes over plain TCP connections beside gRPC, between tasks that cannot share memory. */

/* Connections of one pooled link, and parts a large tensor is split into. */
#define WEFT_BULK_LINK_PARTS 2

/* False when the environment has WEFT_BULK_TRANSFER=0 (or off, false). */
bool weft__bulk_enabled(void);

/* Sender: the listening socket and its connections' threads. */
typedef struct weft__bulk_server weft__bulk_server_t;
/* Listens on bind_host (NULL: 127.0.0.1) at port (0: a free one); *out is the caller's
 * (weft__bulk_server_free, which closes every connection and joins their threads). */
weft_status_t *weft__bulk_server_new(weft__worker_t *worker, const char *bind_host, int port,
                                     weft__bulk_server_t **out);
void weft__bulk_server_free(weft__bulk_server_t *s); /* accepts NULL */
int weft__bulk_server_port(const weft__bulk_server_t *s);
/* Parts answered with bytes so far (tests). */
gint64 weft__bulk_server_transfers(weft__bulk_server_t *s);
/* Tensors sent in parts whose other parts have not all been asked for yet (for tests). */
int weft__bulk_server_pending(weft__bulk_server_t *s);
/* Sets that wait (default: WEFT_BULK_TICKET_TTL_MS when the server was made; for tests). */
void weft__bulk_server_set_pending_ttl_ms(weft__bulk_server_t *s, int ms);
/* Storage for the tickets of one answer (the response borrows it). */
typedef struct weft__bulk_tickets {
  uint8_t bytes[WEFT_BULK_LINK_PARTS][16];
  ProtobufCBinaryData items[WEFT_BULK_LINK_PARTS];
} weft__bulk_tickets_t;
/* Puts the port and new single-use tickets into a RecvTensor answer (s NULL: nothing). */
void weft__bulk_issue_tickets(weft__bulk_server_t *s, Weft__RecvTensorResponse *resp,
                              weft__bulk_tickets_t *tickets);

/* Receiver: whether a RecvTensor to `address` for a tensor of dtype should offer the channel
 * (no idle link to that peer yet, and room for one). */
bool weft__bulk_should_offer(const char *address, weft_dtype_t dtype);
/* After a RecvTensor that offered it: opens a link with the answer's tickets and pools it. */
void weft__bulk_after_recv(const char *address, const Weft__RecvTensorResponse *resp);
/* Takes `key` of `step` over a pooled link to `peer`. *handled false (and NULL): no link, or the
 * request could not be sent; gRPC must carry it. Otherwise the tensor or the error (the step's
 * own when it was aborted or ran out of time). *last_nbytes is the _Recv's last size, which
 * decides the split; updated on success. */
weft_status_t *weft__bulk_recv(const weft__peer_t *peer, weft__step_t *step, const char *key,
                               guint64 incarnation, weft_dtype_t dtype, uint64_t *last_nbytes,
                               weft_tensor_t **out, bool *handled);
/* WEFT_BULK_TRACE=FILE: appends "bytes parts microseconds" for a tensor received from a task
 * that shares no memory with this one (parts 0: it came in a gRPC RecvTensor answer); nothing
 * when the variable is unset. */
void weft__transfer_trace(uint64_t nbytes, int n_parts, gint64 us);

#endif /* WEFT_DISTRIBUTED_INTERNAL_H */
