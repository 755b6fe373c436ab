/* The server of one task (TensorFlow's tf.train.Server): a gRPC server with the Master and Worker
 * services on one port. One thread at a time waits on the completion queue (with two waiting,
 * gRPC hands its poller role back and forth between them on every event: measured, about a
 * third more context switches per step). It handles calls that never block (RecvTensor, Abort,
 * CleanupGraph) itself; before one that may block for a whole step (RunStep, RunGraph, ...) it
 * wakes an idle thread (or starts one) to take the queue over, and then handles that call
 * itself, so a step's call reaches its handler with no hand-off (leader and followers, in
 * poll_cq); after a burst, spare threads beyond a few end. A replacement request is posted at
 * once so calls keep being accepted. RecvTensor never holds a thread: its answer is sent by
 * whoever makes the tensor available (the _Send kernel) or aborts the step.
 * Every request is decoded and validated before it reaches the master or the worker; a bad one
 * gets INVALID_ARGUMENT and the server carries on. With TLS options the port serves TLS (mutual
 * TLS with a CA), and with a token every call is checked for it before its message is even
 * received (security.c, docs/security.md); compressed messages are inflated here, within the
 * limit, not by gRPC. At most max_concurrent_steps calls that may block are handled at once,
 * and a thread that cannot be made refuses the call (RESOURCE_EXHAUSTED) rather than aborting.
 * During a flood of calls that come to nothing (HTTP/2 rapid reset) a second thread polls gRPC
 * so other connections are still read (io_help), and answers in flight are bounded per
 * connection (max_connection_answers).
 * Stopping refuses new calls, aborts running steps, waits for the handlers, then closes the
 * port. */
#include "distributed_internal.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
  M_CREATE_SESSION,
  M_EXTEND_SESSION,
  M_RUN_STEP,
  M_CLOSE_SESSION,
  M_LIST_DEVICES,
  M_RESET,
  W_GET_STATUS,
  W_REGISTER_GRAPH,
  W_DEREGISTER_GRAPH,
  W_RUN_GRAPH,
  W_RECV_TENSOR,
  W_CLEANUP_GRAPH,
  W_CLEANUP_ALL,
  W_ABORT,
  H_CHECK, /* gRPC's health checking service (health.c) */
  N_METHODS
};

static const char *const method_paths[N_METHODS] = {
    "/weft.Master/CreateSession", "/weft.Master/ExtendSession", "/weft.Master/RunStep",
    "/weft.Master/CloseSession",  "/weft.Master/ListDevices",   "/weft.Master/Reset",
    "/weft.Worker/GetStatus",     "/weft.Worker/RegisterGraph", "/weft.Worker/DeregisterGraph",
    "/weft.Worker/RunGraph",      "/weft.Worker/RecvTensor",    "/weft.Worker/CleanupGraph",
    "/weft.Worker/CleanupAll",    "/weft.Worker/Abort",       "/grpc.health.v1.Health/Check",
};

/* Requests of each method posted at once, so a burst of calls does not wait for re-posting. */
#define REQUESTS_PER_METHOD 4

struct weft_server_options {
  char *bind;
  int64_t status_timeout_ms;
  int64_t step_timeout_ms;
  char *tls_cert, *tls_key, *tls_ca; /* files; NULL: no TLS / no mutual TLS */
  char *auth_token_file;             /* NULL: no token */
  weft__limits_t limits;             /* what a request may hold (validate.c) */
  int max_concurrent_steps;          /* calls that may block handled at once */
  int max_rpc_threads;               /* the master's call pool */
  int64_t session_gc_seconds;        /* idle master sessions closed after this; 0: never */
  int max_registered_graphs;         /* the worker's registered graphs at once */
  int64_t step_idle_timeout_ms;      /* the worker's steps no RunGraph holds are dropped after */
  int max_sessions;                  /* master sessions open at once */
  int handshake_timeout_ms;          /* TLS handshake and HTTP/2 preface of a new connection */
  int max_connection_idle_ms;        /* a connection without calls is closed after this */
  int max_connection_answers;        /* answers not yet sent on one connection */
  int bulk_transfer;                 /* -1: on without TLS; 0: off; 1: on (docs/security.md) */
  int bulk_port;                     /* 0: a free one */
};

typedef enum { SERVER_NEW, SERVER_STARTED, SERVER_STOPPING, SERVER_STOPPED } server_state_t;

struct weft_server {
  weft_cluster_spec_t *spec;
  char *job;
  int task;
  char *address; /* host:port others reach it at */
  char *target;  /* grpc://address, grpcs:// with TLS */
  weft__security_t *security; /* what it serves with and talks to its peers with */
  weft__limits_t limits;
  weft__inflate_budget_t inflating; /* --max_inflating_bytes, across all calls (validate.c) */
  weft__master_t *master;
  weft__worker_t *worker;
  grpc_server *server;
  grpc_completion_queue *cq;
  /* Registered with the server but never given a request: a helper thread waits on it during a
   * flood of calls that come to nothing, so that gRPC keeps reading other connections (io_help). */
  grpc_completion_queue *io_cq;
  GThread *io_thread;   /* the helper, running or ended and not yet joined */
  bool io_running;      /* the helper has not decided to end */
  bool io_drained;      /* the helper saw the queue's GRPC_QUEUE_SHUTDOWN */
  gint64 wasted_since;  /* start of the current second of wasted calls (monotonic, us) */
  int wasted;           /* calls refused or abandoned by their caller in that second */
  gint64 last_wasted;   /* when the last such call came (monotonic, us) */
  int64_t rss_floor_kib; /* resident size after the last idle trim (trim_if_grown_locked); 0: unknown */
  int trim_backoff_ms;   /* the last wait before trying a trim that released nothing again */
  gint64 trim_again_us;  /* no idle trim before then (monotonic; 0: any idle second) */
  void *methods[N_METHODS];
  GPtrArray *pollers;   /* GThread*: every completion-queue thread (poll_cq), joined at stop */
  GCond follow;         /* idle pollers wait here for their turn */
  bool polling;         /* a thread is in grpc_completion_queue_next */
  bool queue_down;      /* the queue returned GRPC_QUEUE_SHUTDOWN */
  int idle_pollers;
  weft__pool_t *copies; /* large RecvTensor copies into shared memory, off the polling thread */
  GMutex lock;
  GCond cond;
  server_state_t state;
  int inflight;       /* calls being handled or answered */
  int blocking;       /* calls that may block being handled (at most max_concurrent_steps) */
  int max_concurrent_steps;
  int max_connection_answers; /* answers in flight on one connection before calls are refused */
  GHashTable *answers_by_peer; /* gRPC's peer string -> answers in flight (GINT_TO_POINTER) */
  int large_answers;           /* answers of LARGE_ANSWER_BYTES or more in flight */
  weft__bulk_server_t *bulk; /* the bulk channel (bulk_transfer.c); NULL: off */
  /* No token to check before a message is read: gRPC reads a registered call's message with the
   * call, one completion-queue event and batch fewer per call (as the raw echo service does). */
  bool payload_with_call;
  bool shutdown_done; /* the shutdown tag came back */
  int shutdown_tag;   /* its address is the tag */
};

typedef struct call_ctx {
  weft_server_t *server;
  int method; /* -1: a method this server does not have */
  grpc_call_details call_details;
  bool receiving; /* the token was accepted and the message is being received */
  bool answering;
  grpc_call *call;
  gpr_timespec deadline;
  grpc_metadata_array request_md;
  grpc_byte_buffer *payload;
  int64_t inflated; /* bytes of server->inflating its inflated payload holds */
  grpc_byte_buffer *response;
  grpc_slice details;
  int cancelled;
  weft__shm_offer_t shm; /* RecvTensor: the receiver's shared-memory segment, if offered */
  bool bulk_offer;       /* RecvTensor: the receiver can use the bulk channel */
  weft_tensor_t *deferred; /* RecvTensor: a large tensor to copy and answer from the pool */
  char *peer;  /* the connection its answer is in flight on (gRPC's string); NULL: none */
  bool large;  /* its answer holds LARGE_ANSWER_BYTES or more */
} call_ctx_t;

/* An answer this large that its caller abandons (a client that stopped reading, then died)
 * leaves its tensor in the host buffer cache; once no such answer is in flight the cache is
 * emptied and the memory handed back (8 clients fetching 64 MiB each left 256 MiB behind). */
#define LARGE_ANSWER_BYTES ((size_t)1 << 20)

/* Set while the polling thread handles a call that never blocks: nobody else polls meanwhile. */
static _Thread_local bool on_poller;

bool weft__server_on_poller(void) { return on_poller; }

/* A RunStep taken by the polling thread is handled there without first waking another thread
 * to poll in its place: the master calls weft__server_may_block before anything of the step
 * that could wait (an RPC, another thread, a lock held across one), and a step that never does
 * (one small partition of its own task: master.c) costs the server no thread hand-off at all,
 * as the echo service of the raw call does. Set while such a call is handled. */
static _Thread_local weft_server_t *deferred_poller;
static _Thread_local int deferred_method;

/* WEFT_SERVER_INLINE_STEPS=0 wakes the follower before every RunStep, as before (measuring). */
static bool inline_steps_enabled(void) {
  static int enabled = -1;
  return weft__switch_enabled("WEFT_SERVER_INLINE_STEPS", &enabled);
}

static weft_status_t *promote_follower_locked(weft_server_t *s);

/* WEFT_SERVER_PAYLOAD_WITH_CALL=0 receives every message in a batch of its own, as a server
 * with a token must (measuring). */
static bool payload_with_call_enabled(void) {
  static int enabled = -1;
  return weft__switch_enabled("WEFT_SERVER_PAYLOAD_WITH_CALL", &enabled);
}

weft_status_t *weft__server_may_block(void) {
  weft_server_t *s = deferred_poller;
  if (!s) return NULL;
  deferred_poller = NULL;
  on_poller = false;
  g_mutex_lock(&s->lock);
  /* A follower whose idle wait ended may have taken the queue over already. */
  weft_status_t *st = s->polling || s->queue_down ? NULL : promote_follower_locked(s);
  g_mutex_unlock(&s->lock);
  /* No follower: this thread still is the only poller, and its calls must poll for themselves. */
  on_poller = st != NULL;
  return st ? weft_status_prefix(st, "%s", method_paths[deferred_method]) : NULL;
}

/* A copy into shared memory this large is left to the handler pool rather than made by the
 * polling thread, which would keep every other call waiting: about a millisecond of memcpy. */
#define POLLER_COPY_MAX_BYTES ((size_t)4 << 20)
/* The copy pool's bound: a few threads (a copy is bounded by memory bandwidth, not waiting),
 * and copies waiting for them; beyond that the polling thread makes the copy itself, so the
 * server takes no new calls meanwhile (back-pressure) instead of growing. */
#define COPY_THREADS 2
#define COPY_MAX_QUEUED 64

/* ---------------------------------------------------------------------------------------------
 * Servers in this process, for clients in the same process */

static GMutex local_lock;
static GHashTable *local_masters; /* address -> local_entry_t* */

/* A server of this process: its master and the security it serves with. */
typedef struct local_entry {
  weft__master_t *master;     /* a reference */
  weft__security_t *security; /* a reference; may be NULL */
} local_entry_t;

static void local_entry_free(local_entry_t *e) {
  weft__master_unref(e->master);
  weft__security_unref(e->security);
  g_free(e);
}

static void local_register(const char *address, weft__master_t *m, weft__security_t *security) {
  g_mutex_lock(&local_lock);
  if (!local_masters) {
    local_masters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)local_entry_free);
  }
  local_entry_t *e = g_new0(local_entry_t, 1);
  e->master = weft__master_ref(m);
  e->security = weft__security_ref(security);
  g_hash_table_replace(local_masters, g_strdup(address), e);
  g_mutex_unlock(&local_lock);
}

static void local_unregister(const char *address, weft__master_t *m) {
  g_mutex_lock(&local_lock);
  local_entry_t *e = local_masters ? g_hash_table_lookup(local_masters, address) : NULL;
  if (e && e->master == m) g_hash_table_remove(local_masters, address);
  g_mutex_unlock(&local_lock);
}

weft__master_t *weft__local_master_lookup(const char *address, const weft__security_t *client,
                                          weft_status_t **status) {
  *status = NULL;
  g_mutex_lock(&local_lock);
  local_entry_t *e = local_masters && address ? g_hash_table_lookup(local_masters, address) : NULL;
  weft__master_t *m = NULL;
  /* A client that asked for TLS against a plaintext server (or the reverse) goes through gRPC,
   * which fails the way it would from another process. */
  if (e && weft__security_tls(e->security) == weft__security_tls(client)) {
    if (weft__security_client_allowed(e->security, client)) {
      m = weft__master_ref(e->master);
    } else {
      *status = weft_status_new(WEFT_UNAUTHENTICATED,
                                "The server at %s requires the cluster auth token and the "
                                "client's is %s",
                                address, weft__security_has_token(client) ? "wrong" : "missing");
    }
  }
  g_mutex_unlock(&local_lock);
  return m;
}

/* ---------------------------------------------------------------------------------------------
 * Answering calls */

static void ctx_free(call_ctx_t *ctx) {
  if (ctx->call) grpc_call_unref(ctx->call);
  g_free(ctx->peer);
  grpc_call_details_destroy(&ctx->call_details);
  grpc_metadata_array_destroy(&ctx->request_md);
  if (ctx->payload) grpc_byte_buffer_destroy(ctx->payload);
  if (ctx->inflated) weft__inflate_budget_release(&ctx->server->inflating, ctx, ctx->inflated);
  if (ctx->response) grpc_byte_buffer_destroy(ctx->response);
  grpc_slice_unref(ctx->details);
  g_free(ctx);
}

static void call_done(weft_server_t *s) {
  g_mutex_lock(&s->lock);
  s->inflight--;
  /* Only weft_server_stop waits for inflight, once the state left STARTED (a broadcast is a
   * syscall even when no one waits, and this runs once per call). */
  if (s->state != SERVER_STARTED) g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->lock);
}

/* Counts the answer as in flight on its connection until gRPC has sent it (or the call ended):
 * a connection whose client does not read holds every answer in gRPC's memory, and beyond
 * max_connection_answers of them its new calls are refused (refuse_if_backlogged). */
static void answer_started(call_ctx_t *ctx) {
  weft_server_t *s = ctx->server;
  char *peer = grpc_call_get_peer(ctx->call);
  ctx->peer = g_strdup(peer ? peer : "");
  gpr_free(peer);
  ctx->large = ctx->response && grpc_byte_buffer_length(ctx->response) >= LARGE_ANSWER_BYTES;
  g_mutex_lock(&s->lock);
  int n = GPOINTER_TO_INT(g_hash_table_lookup(s->answers_by_peer, ctx->peer));
  g_hash_table_replace(s->answers_by_peer, g_strdup(ctx->peer), GINT_TO_POINTER(n + 1));
  if (ctx->large) s->large_answers++;
  g_mutex_unlock(&s->lock);
}

/* The answer is no longer in flight; true when it was a large one its caller abandoned and no
 * other large answer is in flight (the caller then empties the caches). */
static bool answer_ended(call_ctx_t *ctx) {
  weft_server_t *s = ctx->server;
  if (!ctx->peer) return false;
  g_mutex_lock(&s->lock);
  int n = GPOINTER_TO_INT(g_hash_table_lookup(s->answers_by_peer, ctx->peer));
  if (n <= 1) g_hash_table_remove(s->answers_by_peer, ctx->peer);
  else g_hash_table_replace(s->answers_by_peer, g_strdup(ctx->peer), GINT_TO_POINTER(n - 1));
  if (ctx->large) s->large_answers--;
  bool trim = ctx->large && ctx->cancelled && s->large_answers == 0;
  g_mutex_unlock(&s->lock);
  g_clear_pointer(&ctx->peer, g_free);
  return trim;
}

/* Sends the answer (status, and the message when OK) and closes the call. Takes `status` and
 * `response`. */
static void answer(call_ctx_t *ctx, weft_status_t *status, grpc_byte_buffer *response) {
  weft_server_t *s = ctx->server;
  ctx->answering = true;
  grpc_op ops[4];
  memset(ops, 0, sizeof ops);
  int n = 0;
  ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  if (!status && response) {
    ctx->response = response;
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = response;
  } else if (response) {
    grpc_byte_buffer_destroy(response);
  }
  ctx->details = grpc_slice_from_copied_string(status ? weft_status_message(status) : "");
  /* Says the status is the service's answer, not gRPC's account of a transport failure. */
  static grpc_metadata origin;
  static gsize origin_once = 0;
  if (g_once_init_enter(&origin_once)) {
    origin.key = grpc_slice_from_static_string(WEFT_ORIGIN_KEY);
    origin.value = grpc_slice_from_static_string("1");
    g_once_init_leave(&origin_once, 1);
  }
  /* Only a failure needs it (the client reads it for a non-OK code alone): an extra key costs
   * both sides HPACK work and the client a metadata entry on every call. */
  ops[n].data.send_status_from_server.trailing_metadata_count = status ? 1 : 0;
  ops[n].data.send_status_from_server.trailing_metadata = status ? &origin : NULL;
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status =
      status ? (grpc_status_code)weft_status_code(status) : GRPC_STATUS_OK;
  ops[n++].data.send_status_from_server.status_details = &ctx->details;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n++].data.recv_close_on_server.cancelled = &ctx->cancelled;
  weft_status_free(status);
  answer_started(ctx);
  if (grpc_call_start_batch(ctx->call, ops, (size_t)n, ctx, NULL) != GRPC_CALL_OK) {
    answer_ended(ctx);
    ctx_free(ctx);
    call_done(s);
  }
}

static void answer_msg(call_ctx_t *ctx, weft_status_t *status, const ProtobufCMessage *msg,
                       weft_tensor_t *const *tensors, int n_tensors) {
  grpc_byte_buffer *bb = NULL;
  if (!status) status = weft__wire_encode(msg, tensors, n_tensors, &bb);
  answer(ctx, status, bb);
}

/* ---------------------------------------------------------------------------------------------
 * Handlers */

static weft_status_t *count_check(const char *what, size_t names, int tensors) {
  if ((size_t)tensors == names) return NULL;
  return weft_status_new(WEFT_INVALID_ARGUMENT, "Malformed request: %zu %s names but %d tensors",
                         names, what, tensors);
}

static void handle_master(call_ctx_t *ctx, ProtobufCMessage *msg, weft_tensor_t **tensors,
                          int n_tensors) {
  weft__master_t *m = ctx->server->master;
  switch (ctx->method) {
    case M_CREATE_SESSION: {
      const Weft__CreateSessionRequest *req = (const void *)msg;
      Weft__CreateSessionResponse resp = WEFT__CREATE_SESSION_RESPONSE__INIT;
      weft_status_t *st = weft__master_create_session(m, req->graph_def, req->config,
                                                      &resp.session_handle, &resp.graph_version);
      answer_msg(ctx, st, &resp.base, NULL, 0);
      g_free(resp.session_handle);
      break;
    }
    case M_EXTEND_SESSION: {
      const Weft__ExtendSessionRequest *req = (const void *)msg;
      Weft__ExtendSessionResponse resp = WEFT__EXTEND_SESSION_RESPONSE__INIT;
      weft_status_t *st = weft__master_extend_session(m, req->session_handle, req->graph_def,
                                                      req->current_graph_version,
                                                      &resp.new_graph_version);
      answer_msg(ctx, st, &resp.base, NULL, 0);
      break;
    }
    case M_RUN_STEP: {
      const Weft__RunStepRequest *req = (const void *)msg;
      weft_status_t *st = count_check("feed", req->n_feed, n_tensors);
      weft_tensor_t **fetched = g_new0(weft_tensor_t *, req->n_fetch + 1);
      GPtrArray *placements = g_ptr_array_new_with_free_func(
          (GDestroyNotify)weft__node_placement_free);
      weft_run_metadata_t *stats = req->trace_level > 0 ? weft__run_metadata_new() : NULL;
      if (!st) {
        st = weft__master_run_step(m, req->session_handle, (const char *const *)req->feed,
                                   tensors, (int)req->n_feed, (const char *const *)req->fetch,
                                   (int)req->n_fetch, (const char *const *)req->target,
                                   (int)req->n_target, req->timeout_ms, fetched, placements,
                                   stats);
      }
      Weft__RunStepResponse resp = WEFT__RUN_STEP_RESPONSE__INIT;
      resp.n_placement = placements->len;
      resp.placement = (Weft__NodePlacement **)placements->pdata;
      if (stats && !st) resp.step_stats = weft__step_stats_to_msg(stats);
      answer_msg(ctx, st, &resp.base, fetched, st ? 0 : (int)req->n_fetch);
      weft__step_stats_msg_free(resp.step_stats);
      weft_run_metadata_free(stats);
      weft__tensors_free(fetched, (int)req->n_fetch);
      g_ptr_array_free(placements, TRUE);
      break;
    }
    case M_CLOSE_SESSION: {
      const Weft__CloseSessionRequest *req = (const void *)msg;
      Weft__CloseSessionResponse resp = WEFT__CLOSE_SESSION_RESPONSE__INIT;
      answer_msg(ctx, weft__master_close_session(m, req->session_handle), &resp.base, NULL, 0);
      break;
    }
    case M_LIST_DEVICES: {
      GPtrArray *devices = NULL;
      weft_status_t *st = weft__master_list_devices(m, &devices);
      Weft__ListDevicesResponse resp = WEFT__LIST_DEVICES_RESPONSE__INIT;
      if (devices) {
        resp.n_device = devices->len;
        resp.device = (Weft__DeviceAttributes **)devices->pdata;
      }
      answer_msg(ctx, st, &resp.base, NULL, 0);
      if (devices) g_ptr_array_free(devices, TRUE);
      break;
    }
    case M_RESET: {
      const Weft__ResetRequest *req = (const void *)msg;
      Weft__ResetResponse resp = WEFT__RESET_RESPONSE__INIT;
      weft_status_t *st =
          weft__master_reset(m, (const char *const *)req->container, (int)req->n_container);
      answer_msg(ctx, st, &resp.base, NULL, 0);
      break;
    }
    default:
      answer(ctx, weft_status_new(WEFT_INTERNAL, "No master method %d", ctx->method), NULL);
  }
}

static void recv_done(void *user_data, weft_status_t *status, weft_tensor_t *tensor);

/* A deferred RecvTensor answer, on the copy pool. */
static void answer_deferred(void *data) {
  call_ctx_t *ctx = data;
  weft_tensor_t *tensor = ctx->deferred;
  ctx->deferred = NULL;
  recv_done(ctx, NULL, tensor);
}

static void recv_done(void *user_data, weft_status_t *status, weft_tensor_t *tensor) {
  call_ctx_t *ctx = user_data;
  if (on_poller && !status && ctx->shm.pid != 0 &&
      weft_tensor_nbytes(tensor) >= POLLER_COPY_MAX_BYTES) {
    ctx->deferred = tensor;
    weft_status_t *full = weft__pool_try_submit(ctx->server->copies, answer_deferred, ctx, true);
    if (!full) return;
    weft_status_free(full); /* the pool is full: the copy is made here */
    ctx->deferred = NULL;
  }
  Weft__RecvTensorResponse resp = WEFT__RECV_TENSOR_RESPONSE__INIT;
  Weft__TensorMeta meta = WEFT__TENSOR_META__INIT;
  bool in_shm = !status && weft__shm_export(&ctx->shm, tensor, &resp, &meta);
  weft__bulk_tickets_t tickets;
  if (!status && ctx->bulk_offer) weft__bulk_issue_tickets(ctx->server->bulk, &resp, &tickets);
  answer_msg(ctx, status, &resp.base, &tensor, status || in_shm ? 0 : 1);
  weft__shm_meta_clear(&meta);
  weft_tensor_unref(tensor);
}

/* A grouped RecvTensor's answer: one tensor per key, never in shared memory. */
static void recv_many_done(void *user_data, weft_status_t *status, weft_tensor_t **tensors,
                           int n) {
  call_ctx_t *ctx = user_data;
  Weft__RecvTensorResponse resp = WEFT__RECV_TENSOR_RESPONSE__INIT;
  answer_msg(ctx, status, &resp.base, tensors, status ? 0 : n);
  weft__tensors_free(tensors, n);
}

static void handle_worker(call_ctx_t *ctx, ProtobufCMessage *msg, weft_tensor_t **tensors,
                          int n_tensors) {
  weft__worker_t *w = ctx->server->worker;
  switch (ctx->method) {
    case W_GET_STATUS: {
      Weft__GetStatusResponse resp;
      weft__worker_get_status(w, &resp);
      answer_msg(ctx, NULL, &resp.base, NULL, 0);
      weft__get_status_clear(&resp);
      break;
    }
    case W_REGISTER_GRAPH: {
      Weft__RegisterGraphResponse resp = WEFT__REGISTER_GRAPH_RESPONSE__INIT;
      weft_status_t *st = weft__worker_register_graph(w, (const void *)msg, &resp.graph_handle);
      answer_msg(ctx, st, &resp.base, NULL, 0);
      g_free(resp.graph_handle);
      break;
    }
    case W_DEREGISTER_GRAPH: {
      const Weft__DeregisterGraphRequest *req = (const void *)msg;
      Weft__DeregisterGraphResponse resp = WEFT__DEREGISTER_GRAPH_RESPONSE__INIT;
      answer_msg(ctx, weft__worker_deregister_graph(w, req->graph_handle), &resp.base, NULL, 0);
      break;
    }
    case W_RUN_GRAPH: {
      weft_tensor_t **fetched = NULL;
      int n_fetched = 0;
      const Weft__RunGraphRequest *req = (const void *)msg;
      weft_run_metadata_t *stats = req->trace_level > 0 ? weft__run_metadata_new() : NULL;
      weft_status_t *st = weft__worker_run_graph(w, req, tensors, n_tensors, &fetched, &n_fetched,
                                                 stats);
      Weft__RunGraphResponse resp = WEFT__RUN_GRAPH_RESPONSE__INIT;
      if (stats && !st) resp.step_stats = weft__step_stats_to_msg(stats);
      answer_msg(ctx, st, &resp.base, fetched, n_fetched);
      weft__step_stats_msg_free(resp.step_stats);
      weft_run_metadata_free(stats);
      weft__tensors_free(fetched, n_fetched);
      break;
    }
    case W_RECV_TENSOR: {
      const Weft__RecvTensorRequest *req = (const void *)msg;
      if (req->n_more_keys > 0) {
        const char *keys[WEFT_MAX_RECV_GROUP];
        int n_keys = 0;
        keys[n_keys++] = req->rendezvous_key;
        for (size_t k = 0; k < req->n_more_keys; k++) keys[n_keys++] = req->more_keys[k];
        weft__worker_recv_tensors(w, req->step_id, keys, n_keys, req->incarnation,
                                  recv_many_done, ctx);
        break;
      }
      weft__shm_offer_from_request(req, &ctx->shm);
      ctx->bulk_offer = req->bulk_offer;
      weft__worker_recv_tensor(w, req->step_id, req->rendezvous_key, req->incarnation, recv_done,
                               ctx);
      break;
    }
    case W_CLEANUP_GRAPH: {
      const Weft__CleanupGraphRequest *req = (const void *)msg;
      weft__worker_cleanup_step(w, req->step_id);
      Weft__CleanupGraphResponse resp = WEFT__CLEANUP_GRAPH_RESPONSE__INIT;
      answer_msg(ctx, NULL, &resp.base, NULL, 0);
      break;
    }
    case W_CLEANUP_ALL: {
      const Weft__CleanupAllRequest *req = (const void *)msg;
      weft__worker_cleanup_all(w, (const char *const *)req->container, (int)req->n_container);
      Weft__CleanupAllResponse resp = WEFT__CLEANUP_ALL_RESPONSE__INIT;
      answer_msg(ctx, NULL, &resp.base, NULL, 0);
      break;
    }
    case W_ABORT: {
      const Weft__AbortRequest *req = (const void *)msg;
      weft_code_t code = req->code > 0 && req->code <= 16 ? (weft_code_t)req->code : WEFT_ABORTED;
      weft_status_t *why = weft_status_new(code, "%s", req->reason ? req->reason : "Aborted");
      weft__worker_abort_step(w, req->step_id, why);
      weft_status_free(why);
      Weft__AbortResponse resp = WEFT__ABORT_RESPONSE__INIT;
      answer_msg(ctx, NULL, &resp.base, NULL, 0);
      break;
    }
    default:
      answer(ctx, weft_status_new(WEFT_INTERNAL, "No worker method %d", ctx->method), NULL);
  }
}

static const ProtobufCMessageDescriptor *request_descriptor(int method) {
  switch (method) {
    case M_CREATE_SESSION: return &weft__create_session_request__descriptor;
    case M_EXTEND_SESSION: return &weft__extend_session_request__descriptor;
    case M_RUN_STEP: return &weft__run_step_request__descriptor;
    case M_CLOSE_SESSION: return &weft__close_session_request__descriptor;
    case M_LIST_DEVICES: return &weft__list_devices_request__descriptor;
    case M_RESET: return &weft__reset_request__descriptor;
    case W_GET_STATUS: return &weft__get_status_request__descriptor;
    case W_REGISTER_GRAPH: return &weft__register_graph_request__descriptor;
    case W_DEREGISTER_GRAPH: return &weft__deregister_graph_request__descriptor;
    case W_RUN_GRAPH: return &weft__run_graph_request__descriptor;
    case W_RECV_TENSOR: return &weft__recv_tensor_request__descriptor;
    case W_CLEANUP_GRAPH: return &weft__cleanup_graph_request__descriptor;
    case W_CLEANUP_ALL: return &weft__cleanup_all_request__descriptor;
    default: return &weft__abort_request__descriptor;
  }
}

static void handle_call(call_ctx_t *ctx) {
  if (ctx->method == H_CHECK) {
    /* Plain protobuf, not Weft's framing: the health clients are not Weft's. */
    grpc_byte_buffer *bb = NULL;
    weft_status_t *st = weft__health_answer(ctx->payload, &bb);
    answer(ctx, st, bb);
    return;
  }
  /* The token was checked (check_and_receive) before the message was received. */
  bool takes_tensors = ctx->method == M_RUN_STEP || ctx->method == W_RUN_GRAPH;
  ProtobufCMessage *msg = NULL;
  weft_tensor_t **tensors = NULL;
  int n_tensors = 0;
  /* A compressed request is inflated no further than the limits (its own, and all requests'
   * together, held until ctx_free frees the payload); then limits and declared sizes, so
   * nothing is allocated for a request that lies. */
  weft_status_t *st =
      weft__inflate_request(&ctx->server->limits, &ctx->server->inflating, ctx,
                            method_paths[ctx->method], &ctx->payload, &ctx->inflated);
  if (!st)
    st = weft__validate_frame(&ctx->server->limits, method_paths[ctx->method], ctx->payload);
  if (st) {
    answer(ctx, st, NULL);
    return;
  }
  st = weft__wire_decode(ctx->payload, request_descriptor(ctx->method), &msg,
                         takes_tensors ? &tensors : NULL, &n_tensors);
  if (st) {
    answer(ctx, weft_status_prefix(st, "%s", method_paths[ctx->method]), NULL);
    return;
  }
  st = weft__validate_request(&ctx->server->limits, ctx->server->spec, method_paths[ctx->method],
                              msg, n_tensors);
  if (st) {
    answer(ctx, st, NULL);
    weft__tensors_free(tensors, n_tensors);
    protobuf_c_message_free_unpacked(msg, NULL);
    return;
  }
  if (ctx->method <= M_RESET) handle_master(ctx, msg, tensors, n_tensors);
  else handle_worker(ctx, msg, tensors, n_tensors);
  weft__tensors_free(tensors, n_tensors);
  protobuf_c_message_free_unpacked(msg, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * The completion queue */

static void request_call(weft_server_t *s, int method) {
  call_ctx_t *ctx = g_new0(call_ctx_t, 1);
  ctx->server = s;
  ctx->method = method;
  ctx->details = grpc_empty_slice();
  grpc_metadata_array_init(&ctx->request_md);
  grpc_call_details_init(&ctx->call_details);
  grpc_call_error err;
  if (method < 0) {
    /* Calls of methods that are not registered: answered UNIMPLEMENTED rather than left to
     * wait for their deadline. */
    err = grpc_server_request_call(s->server, &ctx->call, &ctx->call_details, &ctx->request_md,
                                   s->cq, s->cq, ctx);
  } else {
    /* With a token no payload yet: the call surfaces with its metadata, the token is checked,
     * and only then is the message received (check_and_receive). Without one there is nothing
     * to check first, and gRPC reads the message with the call. */
    err = grpc_server_request_registered_call(s->server, s->methods[method], &ctx->call,
                                              &ctx->deadline, &ctx->request_md,
                                              s->payload_with_call ? &ctx->payload : NULL, s->cq,
                                              s->cq, ctx);
  }
  if (err != GRPC_CALL_OK) ctx_free(ctx);
}

/* Methods whose handler only looks up or updates the rendezvous and answers (or leaves the
 * answer to whoever sends the tensor). */
static bool never_blocks(int method) {
  return method == W_RECV_TENSOR || method == W_ABORT || method == W_CLEANUP_GRAPH ||
         method == H_CHECK;
}

static gpointer poll_cq(gpointer data);

/* The polling thread that waits for calls wakes once a second when none come, and then returns
 * what the process's allocator holds beyond its last trim to the system (IDLE_TRIM_KIB or more
 * resident since then). gRPC allocates a call's structures on the thread that reads it, and
 * glibc does not shrink a thread's arena once they are freed: a flood of streams reset before
 * their call ever surfaced (HTTP/2 rapid reset: Weft never sees them, so io_help need not run)
 * left 742 MiB resident for good (test_redteam2, 2026-11-27). */
#define IDLE_CHECK_MS 1000
#define IDLE_TRIM_KIB (64 * 1024)
/* A trim that releases nothing finds the memory still held: in use, or not yet freed by whoever
 * holds it (after a CONTINUATION flood gRPC freed its 745 MiB only as later calls came, after
 * the first idle trim had moved the floor up to it, so it stayed resident). It is tried again
 * after 1, 2, 4, ... s; past this wait the growth counts as the server's own. */
#define TRIM_BACKOFF_MAX_MS (64 * 1000)

static int64_t self_rss_kib(void) {
  char *text = NULL;
  int64_t kib = -1;
  if (g_file_get_contents("/proc/self/statm", &text, NULL, NULL)) {
    long long size = 0, resident = 0;
    if (sscanf(text, "%lld %lld", &size, &resident) == 2)
      kib = resident * (sysconf(_SC_PAGESIZE) / 1024);
  }
  g_free(text);
  return kib;
}

/* Called with s->lock held by the polling thread after an idle second. */
static void trim_if_grown_locked(weft_server_t *s) {
  int64_t rss = self_rss_kib();
  if (rss < 0) return;
  if (s->rss_floor_kib == 0 || rss < s->rss_floor_kib) {
    s->rss_floor_kib = rss;
    return;
  }
  if (rss - s->rss_floor_kib < IDLE_TRIM_KIB) return;
  gint64 now = g_get_monotonic_time();
  if (now < s->trim_again_us) return;
  weft__malloc_trim();
  int64_t after = self_rss_kib();
  bool released = after > 0 && rss - after >= IDLE_TRIM_KIB;
  if (released || s->trim_backoff_ms >= TRIM_BACKOFF_MAX_MS) {
    s->rss_floor_kib = after > 0 ? after : rss;
    s->trim_backoff_ms = 0;
    s->trim_again_us = 0;
  } else {
    s->trim_backoff_ms = s->trim_backoff_ms ? 2 * s->trim_backoff_ms : IDLE_CHECK_MS;
    s->trim_again_us = now + (gint64)s->trim_backoff_ms * 1000;
  }
}

/* Spare polling threads kept after a burst of concurrent calls; the others end. A spare that
 * no call needed for POLLER_IDLE_US ends too, and the last to end after a burst hands the
 * memory its threads freed back to the system (malloc_trim): the server returns to its size. */
#define MAX_IDLE_POLLERS 4
#define POLLER_IDLE_US (2 * G_USEC_PER_SEC)

/* A flood of calls that come to nothing (HTTP/2 rapid reset: HEADERS then RST_STREAM, 100,000
 * on one connection) keeps the polling thread inside gRPC, creating and tearing down calls, and
 * no other connection is read meanwhile: a good client's connection timed out before its
 * SETTINGS frame came (5 s). Past IO_HELP_CALLS such calls in a second, a helper thread waits
 * on a second completion queue, which makes it one of gRPC's pollers (its epoll1 engine shares
 * one epoll set among all queues): it takes the reading while the first handles the calls. It
 * ends IO_HELP_LINGER_US after the last such call. Not kept all the time: with two pollers gRPC
 * hands its poller role back and forth, which cost a remote step 150-250 us (measured). */
#define IO_HELP_CALLS 500
#define IO_HELP_LINGER_US (5 * G_USEC_PER_SEC)

static gpointer io_help(gpointer data) {
  weft_server_t *s = data;
  for (;;) {
    gpr_timespec until = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                      gpr_time_from_millis(500, GPR_TIMESPAN));
    if (grpc_completion_queue_next(s->io_cq, until, NULL).type == GRPC_QUEUE_SHUTDOWN) {
      s->io_drained = true; /* read after the join */
      break;
    }
    g_mutex_lock(&s->lock);
    bool quiet = g_get_monotonic_time() - s->last_wasted > IO_HELP_LINGER_US ||
                 s->state != SERVER_STARTED;
    if (quiet) s->io_running = false;
    g_mutex_unlock(&s->lock);
    if (quiet) {
      /* The flood's calls were made on this thread, in its malloc arena, which glibc does not
       * shrink by itself once another thread freed them: 20,000 reset calls left 727 MiB. */
      weft__malloc_trim();
      break;
    }
  }
  return NULL;
}

/* Counts a call refused before its message or abandoned by its caller; starts the helper when
 * they come fast. Called with s->lock held. */
static void note_wasted_locked(weft_server_t *s) {
  gint64 now = g_get_monotonic_time();
  if (now - s->wasted_since > G_USEC_PER_SEC) {
    s->wasted_since = now;
    s->wasted = 0;
  }
  s->wasted++;
  s->last_wasted = now;
  if (s->wasted < IO_HELP_CALLS || s->io_running || !s->io_cq || s->state != SERVER_STARTED)
    return;
  if (s->io_thread) g_thread_join(s->io_thread); /* it ended: io_running is false */
  s->io_thread = g_thread_try_new("weft-grpc-io", io_help, s, NULL);
  s->io_running = s->io_thread != NULL;
}

/* Called with s->lock held by the polling thread about to handle a call that may block: another
 * thread takes over the queue (an idle one, else a new one), so the call needs no hand-off. */
static weft_status_t *promote_follower_locked(weft_server_t *s) {
  if (s->idle_pollers > 0) {
    g_cond_signal(&s->follow);
    return NULL;
  }
  /* g_thread_new aborts the process when no thread can be made (RLIMIT_NPROC, a cgroup's pids
   * limit): the call is refused instead, and this thread goes on polling. */
  GError *error = NULL;
  GThread *t = g_thread_try_new("weft-grpc", poll_cq, s, &error);
  if (!t) {
    weft_status_t *st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                                        "The server cannot start a thread for the call (%s); "
                                        "try again later",
                                        error ? error->message : "unknown error");
    g_clear_error(&error);
    return st;
  }
  g_ptr_array_add(s->pollers, t);
  return NULL;
}

/* A new call on a connection that holds max_connection_answers answers its client has not read
 * (a client that pipelines calls and never reads, with a flow-control window of 0) is cancelled
 * with RESOURCE_EXHAUSTED, which gRPC sends as a few bytes of trailers instead of keeping a call
 * and its answer. True when it was refused (and freed). */
static bool refuse_if_backlogged(call_ctx_t *ctx) {
  weft_server_t *s = ctx->server;
  char *peer = grpc_call_get_peer(ctx->call);
  g_mutex_lock(&s->lock);
  int n = GPOINTER_TO_INT(g_hash_table_lookup(s->answers_by_peer, peer ? peer : ""));
  g_mutex_unlock(&s->lock);
  gpr_free(peer);
  if (n < s->max_connection_answers) return false;
  char *why = g_strdup_printf("%s: the server holds %d answers this connection has not received, "
                              "its limit (--max_connection_answers); read the answers, or try "
                              "again later",
                              ctx->method >= 0 ? method_paths[ctx->method] : "A call", n);
  grpc_call_cancel_with_status(ctx->call, GRPC_STATUS_RESOURCE_EXHAUSTED, why, NULL);
  g_free(why);
  ctx_free(ctx);
  call_done(s);
  return true;
}

/* A new call, with its metadata only: the token is checked before a byte of the message is
 * received, so a caller without it cannot make the server read, inflate or hold a body. Then
 * the message is received on the queue (the call comes back with `receiving` set). On a server
 * without a token the message came with the call: *received is set and the caller handles it
 * at once. False when the call was refused instead. */
static bool check_and_receive(call_ctx_t *ctx, bool *received) {
  /* The token first: a call without it learns nothing, not even whether the method exists.
   * Health checks go without it: Kubernetes' probes carry no metadata, and "it serves" is all
   * they learn (mutual TLS, when on, still stops strangers at the handshake). */
  weft_status_t *denied = ctx->method == H_CHECK ? NULL : weft__security_check_call(
      ctx->server->security, &ctx->request_md,
      ctx->method >= 0 ? method_paths[ctx->method] : "This server");
  if (denied) {
    answer(ctx, denied, NULL);
    return false;
  }
  if (ctx->method < 0) {
    char *method = grpc_slice_to_c_string(ctx->call_details.method);
    answer(ctx, weft_status_new(WEFT_UNIMPLEMENTED, "This server has no method '%s'", method),
           NULL);
    gpr_free(method);
    return false;
  }
  if (ctx->server->payload_with_call) {
    /* The message came with the call (NULL: the caller sent none). */
    ctx->receiving = true;
    *received = true;
    return true;
  }
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = &ctx->payload;
  ctx->receiving = true;
  grpc_call_error err = grpc_call_start_batch(ctx->call, &op, 1, ctx, NULL);
  if (err != GRPC_CALL_OK) {
    ctx->receiving = false;
    answer(ctx, weft_status_new(WEFT_INTERNAL, "%s: cannot receive the message: %s",
                                method_paths[ctx->method], grpc_call_error_to_string(err)),
           NULL);
    return false;
  }
  return true;
}

/* Leader and followers: one thread at a time waits on the completion queue (two in
 * grpc_completion_queue_next hand gRPC's poller role back and forth on every event). It
 * handles what cannot block itself; before a call that may block (RunStep, RunGraph, ...) it
 * wakes a follower to take the queue over, then handles the call on this thread and becomes
 * a follower when done. The thread that got the call runs it: no hand-off on the step's path. */
static gpointer poll_cq(gpointer data) {
  weft_server_t *s = data;
  g_mutex_lock(&s->lock);
  for (;;) {
    if (s->polling && !s->queue_down && s->idle_pollers >= MAX_IDLE_POLLERS) {
      /* Enough spares wait already: this one ends, and nothing joins it (the array held the
       * only other reference). */
      GThread *self = g_thread_self();
      g_ptr_array_remove_fast(s->pollers, self);
      g_mutex_unlock(&s->lock);
      g_thread_unref(self);
      return NULL;
    }
    bool idle_too_long = false;
    gint64 idle_until = g_get_monotonic_time() + POLLER_IDLE_US;
    while (s->polling && !s->queue_down && !idle_too_long) {
      s->idle_pollers++;
      idle_too_long = !g_cond_wait_until(&s->follow, &s->lock, idle_until);
      s->idle_pollers--;
    }
    if (idle_too_long && s->polling && !s->queue_down) {
      GThread *self = g_thread_self();
      g_ptr_array_remove_fast(s->pollers, self);
      bool last_spare = s->idle_pollers == 0;
      g_mutex_unlock(&s->lock);
      g_thread_unref(self);
      /* The burst's tensors went to the host buffer cache as their answers were sent. */
      if (last_spare) {
        weft__host_buffer_cache_flush();
        weft__malloc_trim();
      }
      return NULL;
    }
    if (s->queue_down) break;
    s->polling = true;
    g_mutex_unlock(&s->lock);
    grpc_event ev = grpc_completion_queue_next(
        s->cq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                            gpr_time_from_millis(IDLE_CHECK_MS, GPR_TIMESPAN)),
        NULL);
    g_mutex_lock(&s->lock);
    s->polling = false;
    if (ev.type == GRPC_QUEUE_TIMEOUT) {
      trim_if_grown_locked(s);
      continue;
    }
    if (ev.type == GRPC_QUEUE_SHUTDOWN) {
      s->queue_down = true;
      g_cond_broadcast(&s->follow);
      g_cond_broadcast(&s->cond);
      break;
    }
    if (ev.type != GRPC_OP_COMPLETE) continue;
    if (ev.tag == &s->shutdown_tag) {
      s->shutdown_done = true;
      g_cond_broadcast(&s->cond);
      continue;
    }
    if (weft__rpc_is_waiter(ev.tag)) {
      /* The answer to a call made from inside this server (weft__peer_t.queue). */
      g_mutex_unlock(&s->lock);
      weft__rpc_waiter_done(ev.tag);
      g_mutex_lock(&s->lock);
      continue;
    }
    call_ctx_t *ctx = ev.tag;
    if (ctx->answering || (!ev.success && !ctx->receiving)) {
      /* An answer sent, or a request the server cancelled as it shut down. */
      bool answered = ctx->answering;
      g_mutex_unlock(&s->lock);
      bool trim = answered && answer_ended(ctx);
      ctx_free(ctx); /* drops the answer's tensors, into the host buffer cache */
      if (trim) {
        weft__host_buffer_cache_flush();
        weft__malloc_trim();
      }
      if (answered) call_done(s);
      g_mutex_lock(&s->lock);
      continue;
    }
    bool serving = s->state == SERVER_STARTED;
    if (!ctx->receiving) {
      /* A new call: counted until its answer is sent, a refusal's included. */
      s->inflight++;
      g_mutex_unlock(&s->lock);
      bool wasted = false, received = false;
      if (!serving) {
        answer(ctx, weft_status_new(WEFT_UNAVAILABLE, "The server is stopping"), NULL);
      } else {
        request_call(s, ctx->method);
        wasted = refuse_if_backlogged(ctx) || !check_and_receive(ctx, &received);
      }
      g_mutex_lock(&s->lock);
      if (wasted) note_wasted_locked(s);
      if (wasted || !received) continue;
    }
    ctx->receiving = false;
    if (!ev.success || !ctx->payload) {
      /* The caller went away (or gRPC refused the message, e.g. beyond the receive limit, and
       * told the caller so): this answer only closes the call. */
      note_wasted_locked(s);
      g_mutex_unlock(&s->lock);
      answer(ctx, weft_status_new(WEFT_CANCELLED, "%s: the request carried no message",
                                  method_paths[ctx->method]), NULL);
      g_mutex_lock(&s->lock);
      continue;
    }
    bool blocks = serving && !never_blocks(ctx->method);
    bool deferred = blocks && ctx->method == M_RUN_STEP && inline_steps_enabled();
    weft_status_t *refused = NULL;
    if (!serving) {
      refused = weft_status_new(WEFT_UNAVAILABLE, "The server is stopping");
    } else if (blocks && s->blocking >= s->max_concurrent_steps) {
      /* Back-pressure: each call that may block holds a thread (and a step's worth more), so
       * beyond the bound the caller is told to come back instead of the server growing. */
      refused = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                                "%s: the server is handling %d calls that may block, its limit "
                                "(--max_concurrent_steps); try again later",
                                method_paths[ctx->method], s->blocking);
    } else if (blocks && !deferred) {
      refused = promote_follower_locked(s);
      if (refused) weft_status_prefix(refused, "%s", method_paths[ctx->method]);
    }
    if (refused) {
      g_mutex_unlock(&s->lock);
      answer(ctx, refused, NULL);
      g_mutex_lock(&s->lock);
      continue;
    }
    if (blocks) s->blocking++;
    g_mutex_unlock(&s->lock);
    on_poller = !blocks || deferred;
    deferred_poller = deferred ? s : NULL;
    deferred_method = ctx->method;
    handle_call(ctx);
    on_poller = false;
    deferred_poller = NULL;
    g_mutex_lock(&s->lock);
    if (blocks) s->blocking--;
  }
  g_mutex_unlock(&s->lock);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Options */

weft_server_options_t *weft_server_options_new(void) {
  weft_server_options_t *o = g_new0(weft_server_options_t, 1);
  o->status_timeout_ms = WEFT_DEFAULT_STATUS_TIMEOUT_MS;
  o->step_timeout_ms = WEFT_DEFAULT_STEP_TIMEOUT_MS;
  weft__limits_default(&o->limits);
  o->max_concurrent_steps = WEFT_DEFAULT_MAX_CONCURRENT_STEPS;
  o->max_rpc_threads = WEFT_DEFAULT_MAX_RPC_THREADS;
  o->session_gc_seconds = WEFT_DEFAULT_SESSION_GC_SECONDS;
  o->max_registered_graphs = WEFT_DEFAULT_MAX_REGISTERED_GRAPHS;
  o->step_idle_timeout_ms = WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS;
  o->max_sessions = WEFT_DEFAULT_MAX_SESSIONS;
  o->handshake_timeout_ms = WEFT_DEFAULT_HANDSHAKE_TIMEOUT_MS;
  o->max_connection_idle_ms = WEFT_DEFAULT_MAX_CONNECTION_IDLE_MS;
  o->max_connection_answers = WEFT_DEFAULT_MAX_CONNECTION_ANSWERS;
  o->bulk_transfer = -1;
  return o;
}

void weft_server_options_free(weft_server_options_t *o) {
  if (!o) return;
  g_free(o->bind);
  g_free(o->tls_cert);
  g_free(o->tls_key);
  g_free(o->tls_ca);
  g_free(o->auth_token_file);
  g_free(o);
}

static void set_path(char **field, const char *path) {
  g_free(*field);
  *field = path && *path ? g_strdup(path) : NULL;
}

void weft_server_options_set_tls(weft_server_options_t *o, const char *cert_file,
                                 const char *key_file, const char *ca_file) {
  set_path(&o->tls_cert, cert_file);
  set_path(&o->tls_key, key_file);
  set_path(&o->tls_ca, ca_file);
}

void weft_server_options_set_auth_token_file(weft_server_options_t *o, const char *path) {
  set_path(&o->auth_token_file, path);
}

void weft_server_options_set_bind_address(weft_server_options_t *o, const char *host) {
  g_free(o->bind);
  o->bind = host && *host ? g_strdup(host) : NULL;
}

void weft_server_options_set_status_timeout_ms(weft_server_options_t *o, int64_t ms) {
  o->status_timeout_ms = ms > 0 ? ms : WEFT_DEFAULT_STATUS_TIMEOUT_MS;
}

void weft_server_options_set_step_timeout_ms(weft_server_options_t *o, int64_t ms) {
  o->step_timeout_ms = ms > 0 ? ms : WEFT_DEFAULT_STEP_TIMEOUT_MS;
}

void weft_server_options_set_max_message_bytes(weft_server_options_t *o, int64_t bytes) {
  o->limits.max_message_bytes = bytes > 0 ? bytes : WEFT_DEFAULT_MAX_MESSAGE_BYTES;
}

void weft_server_options_set_max_inflating_bytes(weft_server_options_t *o, int64_t bytes) {
  o->limits.max_inflating_bytes = bytes > 0 ? bytes : WEFT_DEFAULT_MAX_INFLATING_BYTES;
}

void weft_server_options_set_max_tensor_bytes(weft_server_options_t *o, int64_t bytes) {
  o->limits.max_tensor_bytes = bytes > 0 ? bytes : WEFT_DEFAULT_MAX_TENSOR_BYTES;
}

void weft_server_options_set_max_graph_nodes(weft_server_options_t *o, int64_t n) {
  o->limits.max_graph_nodes = n > 0 ? n : WEFT_DEFAULT_MAX_GRAPH_NODES;
}

void weft_server_options_set_max_node_attrs(weft_server_options_t *o, int64_t n) {
  o->limits.max_node_attrs = n > 0 ? n : WEFT_DEFAULT_MAX_NODE_ATTRS;
}

void weft_server_options_set_max_tensor_rank(weft_server_options_t *o, int rank) {
  o->limits.max_rank = rank > 0 && rank <= WEFT_MAX_RANK ? rank : WEFT_MAX_RANK;
}

void weft_server_options_set_max_concurrent_steps(weft_server_options_t *o, int n) {
  o->max_concurrent_steps = n > 0 ? n : WEFT_DEFAULT_MAX_CONCURRENT_STEPS;
}

void weft_server_options_set_max_rpc_threads(weft_server_options_t *o, int n) {
  o->max_rpc_threads = n > 0 ? n : WEFT_DEFAULT_MAX_RPC_THREADS;
}

void weft_server_options_set_connection_timeouts(weft_server_options_t *o, int handshake_ms,
                                                 int idle_ms) {
  o->handshake_timeout_ms = handshake_ms > 0 ? handshake_ms : WEFT_DEFAULT_HANDSHAKE_TIMEOUT_MS;
  o->max_connection_idle_ms = idle_ms > 0 ? idle_ms : WEFT_DEFAULT_MAX_CONNECTION_IDLE_MS;
}

void weft_server_options_set_bulk_transfer(weft_server_options_t *o, int mode) {
  o->bulk_transfer = mode < 0 ? -1 : mode > 0 ? 1 : 0;
}

void weft_server_options_set_bulk_port(weft_server_options_t *o, int port) {
  o->bulk_port = port;
}

int weft_server_bulk_port(const weft_server_t *s) {
  return s ? weft__bulk_server_port(s->bulk) : 0;
}

void weft_server_options_set_max_connection_answers(weft_server_options_t *o, int n) {
  o->max_connection_answers = n > 0 ? n : WEFT_DEFAULT_MAX_CONNECTION_ANSWERS;
}

void weft_server_options_set_max_sessions(weft_server_options_t *o, int n) {
  o->max_sessions = n > 0 ? n : WEFT_DEFAULT_MAX_SESSIONS;
}

void weft_server_options_set_session_gc_seconds(weft_server_options_t *o, int64_t seconds) {
  o->session_gc_seconds = seconds > 0 ? seconds : WEFT_DEFAULT_SESSION_GC_SECONDS;
}

void weft_server_options_set_max_registered_graphs(weft_server_options_t *o, int n) {
  o->max_registered_graphs = n > 0 ? n : WEFT_DEFAULT_MAX_REGISTERED_GRAPHS;
}

void weft_server_options_set_step_idle_timeout_ms(weft_server_options_t *o, int64_t ms) {
  o->step_idle_timeout_ms = ms > 0 ? ms : WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS;
}

/* ---------------------------------------------------------------------------------------------
 * Life cycle */

/* Shuts the helper's queue down, waits for the helper if one runs, and drains the queue. */
static void drain_io_queue(weft_server_t *s) {
  if (!s->io_cq) return;
  grpc_completion_queue_shutdown(s->io_cq);
  if (s->io_thread) g_thread_join(s->io_thread);
  s->io_thread = NULL;
  while (!s->io_drained &&
         grpc_completion_queue_next(s->io_cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
             GRPC_QUEUE_SHUTDOWN) {
  }
}

static int listen_on(grpc_server *server, const weft__security_t *security, const char *host,
                     int port) {
  char *addr = strchr(host, ':') ? g_strdup_printf("[%s]:%d", host, port)
                                 : g_strdup_printf("%s:%d", host, port);
  grpc_server_credentials *creds = weft__security_server_credentials(security);
  int bound = grpc_server_add_http2_port(server, addr, creds);
  grpc_server_credentials_release(creds);
  g_free(addr);
  return bound;
}

static grpc_server *create_grpc_server(const weft__limits_t *limits, int handshake_ms,
                                       int idle_ms) {
  const grpc_channel_args *common = weft__grpc_channel_args();
  grpc_arg *args = g_new0(grpc_arg, common->num_args + 4);
  memcpy(args, common->args, sizeof(grpc_arg) * common->num_args);
  /* gRPC drops a request far beyond the limit (RESOURCE_EXHAUSTED) before it is read whole; one
   * just beyond it is read and gets validate.c's INVALID_ARGUMENT naming the limit's flag. */
  int64_t receive = limits->max_message_bytes + (1 << 20);
  for (size_t k = 0; k < common->num_args; k++) {
    if (strcmp(args[k].key, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH) == 0)
      args[k].value.integer = receive > G_MAXINT ? -1 : (int)receive;
  }
  /* Two servers on one port would split the calls between them: refuse instead. */
  args[common->num_args].type = GRPC_ARG_INTEGER;
  args[common->num_args].key = (char *)GRPC_ARG_ALLOW_REUSEPORT;
  args[common->num_args].value.integer = 0;
  /* gRPC 1.51 inflates a compressed message in full before it looks at the limit (the receive
   * limit above bounds only the compressed bytes): 1 MB of gzip became 1 GiB in memory. The
   * server receives compressed messages as they came and inflates them itself, after the token
   * check and never past --max_message_bytes (weft__inflate_request). */
  args[common->num_args + 1].type = GRPC_ARG_INTEGER;
  args[common->num_args + 1].key = (char *)GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION;
  args[common->num_args + 1].value.integer = 0;
  /* A connection that stalls in its handshake, or stays open without a call (gRPC's keep-alive
   * pings only connections with calls), holds a descriptor: 1,000 half-sent prefaces were held
   * 120 s, silent connections for good. */
  args[common->num_args + 2].type = GRPC_ARG_INTEGER;
  args[common->num_args + 2].key = (char *)GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS;
  args[common->num_args + 2].value.integer = handshake_ms;
  args[common->num_args + 3].type = GRPC_ARG_INTEGER;
  args[common->num_args + 3].key = (char *)GRPC_ARG_MAX_CONNECTION_IDLE_MS;
  args[common->num_args + 3].value.integer = idle_ms;
  grpc_channel_args all = {common->num_args + 4, args};
  grpc_server *server = grpc_server_create(&all, NULL);
  g_free(args);
  return server;
}

weft_status_t *weft_server_new(const weft_cluster_spec_t *spec, const char *job, int task,
                               const weft_server_options_t *opts, weft_server_t **out) {
  *out = NULL;
  weft_status_t *st = weft_cluster_spec_check_task(spec, job, task);
  if (st) return st;
  if (opts && (opts->bulk_port < 0 || opts->bulk_port > 65535))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Bulk channel port %d for /job:%s/task:%d is "
                           "not from 0 to 65535", opts->bulk_port, job, task);
  weft__grpc_init_once();
  const char *address = weft_cluster_spec_task_address(spec, job, task);
  char *host = NULL;
  int port = 0;
  if (!weft__address_split(address, &host, &port)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Invalid address '%s' for /job:%s/task:%d",
                           address, job, task);
  }
  weft__security_t *security = NULL;
  if (opts && opts->tls_ca && !opts->tls_cert) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "A TLS CA ('%s') was given without the server's certificate and key",
                         opts->tls_ca);
  } else {
    st = weft__security_new(opts && opts->tls_cert, true, opts ? opts->tls_cert : NULL,
                            opts ? opts->tls_key : NULL, opts ? opts->tls_ca : NULL,
                            opts ? opts->auth_token_file : NULL, &security);
  }
  if (st) {
    g_free(host);
    return weft_status_prefix(st, "Server for /job:%s/task:%d", job, task);
  }
  weft_server_t *s = g_new0(weft_server_t, 1);
  s->security = security;
  s->spec = weft__cluster_spec_copy(spec);
  s->job = g_strdup(job);
  s->task = task;
  g_mutex_init(&s->lock);
  g_cond_init(&s->cond);
  g_cond_init(&s->follow);
  s->pollers = g_ptr_array_new();
  if (opts) s->limits = opts->limits;
  else weft__limits_default(&s->limits);
  weft__inflate_budget_init(&s->inflating, s->limits.max_inflating_bytes);
  s->max_concurrent_steps = opts ? opts->max_concurrent_steps : WEFT_DEFAULT_MAX_CONCURRENT_STEPS;
  s->max_connection_answers =
      opts ? opts->max_connection_answers : WEFT_DEFAULT_MAX_CONNECTION_ANSWERS;
  s->answers_by_peer = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  s->server = create_grpc_server(
      &s->limits, opts ? opts->handshake_timeout_ms : WEFT_DEFAULT_HANDSHAKE_TIMEOUT_MS,
      opts ? opts->max_connection_idle_ms : WEFT_DEFAULT_MAX_CONNECTION_IDLE_MS);
  s->cq = grpc_completion_queue_create_for_next(NULL);
  grpc_server_register_completion_queue(s->server, s->cq, NULL);
  /* The helper poller needs gRPC's epoll1 engine, where any queue's thread reads every
   * connection; with another engine a connection bound to the unpolled queue would stall. */
  const char *strategy = g_getenv("GRPC_POLL_STRATEGY");
  if (!strategy || g_str_has_prefix(strategy, "epoll1") || g_str_has_prefix(strategy, "all")) {
    s->io_cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->server, s->io_cq, NULL);
  }
  s->payload_with_call = !weft__security_has_token(security) && payload_with_call_enabled();
  for (int k = 0; k < N_METHODS; k++) {
    s->methods[k] = grpc_server_register_method(
        s->server, method_paths[k], NULL,
        s->payload_with_call ? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER : GRPC_SRM_PAYLOAD_NONE,
        0);
  }
  int bound = 0;
  const char *bind = opts ? opts->bind : NULL;
  if (bind) {
    bound = listen_on(s->server, security, bind, port);
  } else {
    /* Loopback unless told otherwise: IPv4, and IPv6 on the same port when the host has it. */
    bound = listen_on(s->server, security, "127.0.0.1", port);
    if (bound > 0) listen_on(s->server, security, "::1", bound);
  }
  if (bound <= 0) {
    /* Port 0 takes any free port, so it cannot be in use; with TLS, gRPC also refuses to listen
     * when it cannot use the certificate and key (their pairing was checked already). */
    bool tls = weft__security_tls(security);
    st = weft_status_new(WEFT_UNAVAILABLE, "Could not listen on %s port %d for /job:%s/task:%d (%s)",
                         bind ? bind : "loopback", port, job, task,
                         port == 0 && tls ? "gRPC refused the TLS certificate and key"
                         : tls ? "is the port in use? else gRPC refused the TLS certificate and key"
                               : "is the port in use?");
    grpc_server_destroy(s->server);
    grpc_completion_queue_shutdown(s->cq);
    grpc_completion_queue_destroy(s->cq);
    drain_io_queue(s);
    if (s->io_cq) grpc_completion_queue_destroy(s->io_cq);
    g_hash_table_destroy(s->answers_by_peer);
    weft_cluster_spec_free(s->spec);
    weft__security_unref(s->security);
    g_free(s->job);
    weft__inflate_budget_clear(&s->inflating);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->cond);
    g_cond_clear(&s->follow);
    g_ptr_array_free(s->pollers, TRUE);
    g_free(s);
    g_free(host);
    return st;
  }
  s->address = strchr(host, ':') ? g_strdup_printf("[%s]:%d", host, bound)
                                 : g_strdup_printf("%s:%d", host, bound);
  g_free(host);
  weft__cluster_spec_set_address(s->spec, job, task, s->address);
  s->target = g_strdup_printf("%s://%s", weft__security_tls(security) ? "grpcs" : "grpc",
                              s->address);
  weft__master_options_t mopts = {opts ? opts->status_timeout_ms : 0,
                                  opts ? opts->step_timeout_ms : 0, security,
                                  opts ? opts->session_gc_seconds
                                       : WEFT_DEFAULT_SESSION_GC_SECONDS,
                                  opts ? opts->max_rpc_threads : WEFT_DEFAULT_MAX_RPC_THREADS,
                                  s->limits.max_graph_nodes,
                                  opts ? opts->max_sessions : WEFT_DEFAULT_MAX_SESSIONS};
  s->master = weft__master_new(s->spec, job, task, &mopts);
  s->worker = weft__worker_new(job, task, mopts.step_timeout_ms);
  weft__worker_set_security(s->worker, security);
  weft__worker_set_queue(s->worker, s->cq);
  weft__worker_set_cluster(s->worker, s->spec,
                           opts ? opts->max_registered_graphs : WEFT_DEFAULT_MAX_REGISTERED_GRAPHS,
                           opts ? opts->step_idle_timeout_ms : WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS);
  weft__master_set_local_worker(s->master, s->worker);
  s->copies = weft__pool_new("The server's RecvTensor copy pool", NULL, "weft-copy", COPY_THREADS,
                             COPY_MAX_QUEUED);
  int bulk = opts ? opts->bulk_transfer : -1;
  if (weft__bulk_enabled() && (bulk > 0 || (bulk < 0 && !weft__security_tls(security)))) {
    /* Without it RecvTensor still works over gRPC: a failure here is only logged, unless the
     * operator asked for a fixed port (a firewall expects it there). */
    int bulk_port = opts ? opts->bulk_port : 0;
    weft_status_t *bst = weft__bulk_server_new(s->worker, bind, bulk_port, &s->bulk);
    if (bst && bulk_port > 0) {
      weft_server_free(s);
      return bst;
    }
    if (bst) weft__log(WEFT_LOG_WARNING, "server", "%s", weft_status_message(bst));
    weft_status_free(bst);
  }
  *out = s;
  return NULL;
}

weft_status_t *weft_server_new_local(bool start, weft_server_t **out) {
  *out = NULL;
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  weft_status_t *st = weft_cluster_spec_add_task(spec, "local", 0, "localhost:0");
  if (!st) st = weft_server_new(spec, "local", 0, NULL, out);
  weft_cluster_spec_free(spec);
  if (!st && start) {
    st = weft_server_start(*out);
    if (st) {
      weft_server_free(*out);
      *out = NULL;
    }
  }
  return st;
}

weft_status_t *weft_server_start(weft_server_t *s) {
  if (!s) return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_server_start: server is NULL");
  g_mutex_lock(&s->lock);
  server_state_t state = s->state;
  if (state == SERVER_NEW) s->state = SERVER_STARTED;
  g_mutex_unlock(&s->lock);
  if (state == SERVER_STARTED) return NULL;
  if (state != SERVER_NEW) {
    return weft_status_new(WEFT_FAILED_PRECONDITION, "The server for %s was stopped; create a new one",
                           s->target);
  }
  /* The first polling thread before anything listens: without it the server could not serve. */
  GError *error = NULL;
  g_mutex_lock(&s->lock);
  GThread *first = g_thread_try_new("weft-grpc", poll_cq, s, &error);
  if (first) g_ptr_array_add(s->pollers, first);
  else s->state = SERVER_NEW;
  g_mutex_unlock(&s->lock);
  if (!first) {
    weft_status_t *st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                                        "Cannot start the server %s: cannot start a thread: %s",
                                        s->target, error ? error->message : "unknown error");
    g_clear_error(&error);
    return st;
  }
  grpc_server_start(s->server);
  for (int m = -1; m < N_METHODS; m++)
    for (int k = 0; k < REQUESTS_PER_METHOD; k++) request_call(s, m);
  local_register(s->address, s->master, s->security);
  weft__log(WEFT_LOG_INFO, "server", "Started server with target: %s", s->target);
  return NULL;
}

/* Waits on the queue itself (no polling threads run) until the shutdown tag, then drains it. */
static void shutdown_unstarted(weft_server_t *s) {
  grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
  for (;;) {
    grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type != GRPC_OP_COMPLETE || ev.tag == &s->shutdown_tag) break;
  }
  grpc_completion_queue_shutdown(s->cq);
  while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
         GRPC_QUEUE_SHUTDOWN) {
  }
  drain_io_queue(s);
}

weft_status_t *weft_server_stop(weft_server_t *s) {
  if (!s) return NULL;
  g_mutex_lock(&s->lock);
  server_state_t state = s->state;
  if (state == SERVER_NEW || state == SERVER_STARTED) s->state = SERVER_STOPPING;
  g_mutex_unlock(&s->lock);
  if (state == SERVER_STOPPING || state == SERVER_STOPPED) {
    weft_server_join(s); /* someone else is stopping it (or did) */
    return NULL;
  }
  if (state == SERVER_NEW) {
    weft__bulk_server_free(s->bulk);
    s->bulk = NULL;
    shutdown_unstarted(s);
  } else {
    local_unregister(s->address, s->master);
    weft__master_shutdown(s->master);
    weft__worker_shutdown(s->worker);
    weft__bulk_server_free(s->bulk);
    s->bulk = NULL;
    /* Direct RunGraphs of the master end with their aborted steps; none starts after. */
    weft__master_set_local_worker(s->master, NULL);
    grpc_server_shutdown_and_notify(s->server, s->cq, &s->shutdown_tag);
    grpc_server_cancel_all_calls(s->server);
    g_mutex_lock(&s->lock);
    while (!s->shutdown_done || s->inflight > 0) g_cond_wait(&s->cond, &s->lock);
    g_mutex_unlock(&s->lock);
    grpc_completion_queue_shutdown(s->cq);
    /* No thread is added once the queue is down: the array is complete when it is. */
    g_mutex_lock(&s->lock);
    while (!s->queue_down) g_cond_wait(&s->cond, &s->lock);
    GPtrArray *pollers = s->pollers;
    s->pollers = g_ptr_array_new();
    g_mutex_unlock(&s->lock);
    for (guint k = 0; k < pollers->len; k++) g_thread_join(pollers->pdata[k]);
    g_ptr_array_free(pollers, TRUE);
    drain_io_queue(s);
  }
  grpc_server_destroy(s->server);
  grpc_completion_queue_destroy(s->cq);
  if (s->io_cq) grpc_completion_queue_destroy(s->io_cq);
  s->io_cq = NULL;
  s->server = NULL;
  s->cq = NULL;
  g_mutex_lock(&s->lock);
  s->state = SERVER_STOPPED;
  g_cond_broadcast(&s->cond);
  g_mutex_unlock(&s->lock);
  if (state == SERVER_STARTED) weft__log(WEFT_LOG_INFO, "server", "Stopped server %s", s->target);
  return NULL;
}

void weft_server_join(weft_server_t *s) {
  if (!s) return;
  g_mutex_lock(&s->lock);
  while (s->state != SERVER_STOPPED) g_cond_wait(&s->cond, &s->lock);
  g_mutex_unlock(&s->lock);
}

weft_status_t *weft_server_check(const weft_server_t *s) {
  if (!s) return NULL;
  char *failure = weft__grpc_accept_failure();
  if (!failure) return NULL;
  weft_status_t *st = weft_status_new(
      WEFT_UNAVAILABLE,
      "Server %s no longer accepts connections: gRPC's accept() failed (%s) and gRPC stops "
      "listening after that; raise the open-file limit (ulimit -n, LimitNOFILE=) and restart it",
      s->target, failure);
  g_free(failure);
  return st;
}

const char *weft_server_target(const weft_server_t *s) { return s ? s->target : ""; }

void weft_server_free(weft_server_t *s) {
  if (!s) return;
  weft_status_free(weft_server_stop(s));
  weft__pool_free(s->copies);
  /* A client of this process may still hold the master: it must not reach the freed worker. */
  weft__master_set_local_worker(s->master, NULL);
  weft__master_unref(s->master);
  weft__worker_free(s->worker);
  weft_cluster_spec_free(s->spec);
  weft__security_unref(s->security);
  weft__inflate_budget_clear(&s->inflating);
  g_mutex_clear(&s->lock);
  g_cond_clear(&s->cond);
  g_cond_clear(&s->follow);
  g_ptr_array_free(s->pollers, TRUE);
  g_hash_table_destroy(s->answers_by_peer);
  g_free(s->job);
  g_free(s->address);
  g_free(s->target);
  g_free(s);
}
