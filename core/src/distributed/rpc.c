/* The RPC client every part of the distributed runtime uses: one gRPC channel per peer address
 * (cached for the process lifetime; gRPC reconnects it), unary calls with a deadline, each on its
 * own completion queue so any thread may block in one, and call sets that cancel a step's calls
 * in flight at once. Errors keep gRPC's status code (the same numbers as weft_code_t) and name
 * the peer and the method when the peer could not be reached in time. Channels are TLS or
 * plaintext after the peer's security (security.c), and every call carries the cluster token when
 * there is one. */
#include "distributed_internal.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#include <dlfcn.h>
#include <string.h>

/* gRPC's own log lines (e.g. its account of a port already in use, which Weft reports in its
 * own words) go through Weft's log: visible with WEFT_LOG_LEVEL=info or debug. */
static GMutex accept_failure_lock;
static char *accept_failure; /* gRPC's first "Failed accept4: ..." line, or NULL */

static void grpc_log(gpr_log_func_args *args) {
  /* gRPC 1.51 stops listening on a port for good when accept() fails with anything but EAGAIN
   * (tcp_server_posix.cc: EMFILE, ENFILE, ENOBUFS): the listener is never armed again, and the
   * server accepts no connection from then on while it seems alive. Its log line is the only
   * sign, so it is kept for weft_server_check. */
  if (args->message && g_str_has_prefix(args->message, "Failed accept4")) {
    g_mutex_lock(&accept_failure_lock);
    if (!accept_failure) accept_failure = g_strdup(args->message);
    g_mutex_unlock(&accept_failure_lock);
  }
  weft__log(args->severity == GPR_LOG_SEVERITY_ERROR ? WEFT_LOG_INFO : WEFT_LOG_DEBUG, "grpc",
            "%s:%d: %s", args->file, args->line, args->message);
}

/* Debian's abseil is built without NDEBUG, so every absl::Mutex lock gRPC takes (several per
 * call on each side) also runs abseil's lock-order check: a global graph of all mutexes under a
 * global lock (GraphCycles::GetId in `perf` of a small RunStep). Release builds of abseil leave
 * it off; so does Weft, unless WEFT_ABSL_DEADLOCK_CHECK=1 (for measuring, or for debugging a
 * gRPC hang). It is C++ with no C wrapper, so it is looked up by its mangled name: an abseil
 * of another namespace just keeps its check. */
static void quiet_absl_deadlock_check(void) {
  const char *env = g_getenv("WEFT_ABSL_DEADLOCK_CHECK");
  if (env && strcmp(env, "1") == 0) return;
  static const char *const names[] = {
      "_ZN4absl7debian329SetMutexDeadlockDetectionModeENS0_15OnDeadlockCycleE",
      "_ZN4absl29SetMutexDeadlockDetectionModeENS_15OnDeadlockCycleE",
  };
  for (size_t k = 0; k < G_N_ELEMENTS(names); k++) {
    void *sym = dlsym(RTLD_DEFAULT, names[k]);
    if (!sym) continue;
    void (*set_mode)(int) = NULL;
    memcpy(&set_mode, &sym, sizeof set_mode);
    set_mode(0); /* absl::OnDeadlockCycle::kIgnore */
    return;
  }
}

static gpointer init_grpc(gpointer unused) {
  (void)unused;
  /* Host names resolve the way the rest of the system resolves them (getaddrinfo: /etc/hosts,
   * nsswitch) rather than through gRPC's own c-ares resolver, unless the user chose otherwise. */
  g_setenv("GRPC_DNS_RESOLVER", "native", FALSE);
  gpr_set_log_function(grpc_log);
  quiet_absl_deadlock_check();
  grpc_init();
  return NULL;
}

char *weft__grpc_accept_failure(void) {
  g_mutex_lock(&accept_failure_lock);
  char *copy = g_strdup(accept_failure);
  g_mutex_unlock(&accept_failure_lock);
  return copy;
}

void weft__grpc_init_once(void) {
  static GOnce once = G_ONCE_INIT;
  g_once(&once, init_grpc, NULL);
}

const grpc_channel_args *weft__grpc_channel_args(void) {
  /* Tensors of any size (gRPC's default stops at 4 MiB), keep-alive pings that notice a peer
   * that vanished without closing its connection, and a short reconnect back-off so a task that
   * restarts is reachable again within a second. Every peer is one of ours, so servers accept
   * the clients' ping rate. gRPC also takes the minimum reconnect back-off as the least time a
   * connection attempt (TCP, TLS handshake, HTTP/2 settings) is given: it stays at seconds, or a
   * TLS handshake on a busy machine fails with "timed out before receiving SETTINGS frame"; a
   * peer that is down still fails at once (connection refused), and calls end at their
   * deadlines. */
  static grpc_arg args[] = {
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = -1}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = -1}},
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = 30000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 10000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, {.integer = 0}},
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, {.integer = 10000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MAX_PING_STRIKES, {.integer = 0}},
      {GRPC_ARG_INTEGER, GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, {.integer = 100}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, {.integer = 5000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, {.integer = 1000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_ENABLE_RETRIES, {.integer = 0}},
  };
  static grpc_channel_args all = {G_N_ELEMENTS(args), args};
  return &all;
}

static GMutex channels_lock;
static GHashTable *channels; /* "address|credentials key" -> grpc_channel* */

/* The channel a thread used last, looked up again without the key's allocation, the global lock
 * and the hash (1.2% of a small RunStep's client CPU): a thread usually calls one peer. Channels
 * live as long as the process, so the pointer stays valid. */
typedef struct last_channel {
  char *address;
  char *credentials; /* weft__security_channel_key's string */
  bool gzip;
  grpc_channel *channel;
} last_channel_t;

static void last_channel_free(gpointer p) {
  last_channel_t *l = p;
  g_free(l->address);
  g_free(l->credentials);
  g_free(l);
}

static GPrivate last_channel_key = G_PRIVATE_INIT(last_channel_free);

/* One channel per address and TLS material: a process may reach one server in plaintext and
 * another over TLS, or hold two servers with different certificates. */
static grpc_channel *channel_for(const char *address, const weft__security_t *security,
                                 bool gzip) {
  last_channel_t *last = g_private_get(&last_channel_key);
  const char *credentials = weft__security_channel_key(security);
  if (last && last->gzip == gzip && strcmp(last->address, address) == 0 &&
      strcmp(last->credentials, credentials) == 0) {
    return last->channel;
  }
  weft__grpc_init_once();
  char *key = g_strconcat(address, "|", credentials, gzip ? "|gzip" : "", NULL);
  g_mutex_lock(&channels_lock);
  if (!channels) channels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  grpc_channel *ch = g_hash_table_lookup(channels, key);
  if (!ch) {
    grpc_channel_credentials *creds = weft__security_channel_credentials(security);
    const grpc_channel_args *common = weft__grpc_channel_args();
    /* A channel whose calls say "grpc-encoding: gzip" (weft__rpc_raw_gzip): messages already
     * compressed are sent as they are. */
    grpc_arg *args = g_new0(grpc_arg, common->num_args + 1);
    memcpy(args, common->args, sizeof(grpc_arg) * common->num_args);
    args[common->num_args].type = GRPC_ARG_INTEGER;
    args[common->num_args].key = (char *)GRPC_COMPRESSION_CHANNEL_DEFAULT_ALGORITHM;
    args[common->num_args].value.integer = GRPC_COMPRESS_GZIP;
    grpc_channel_args with_gzip = {common->num_args + 1, args};
    ch = grpc_channel_create(address, creds, gzip ? &with_gzip : common);
    g_free(args);
    grpc_channel_credentials_release(creds);
    g_hash_table_insert(channels, key, ch);
    key = NULL;
  }
  g_mutex_unlock(&channels_lock);
  g_free(key);
  if (!last) {
    last = g_new0(last_channel_t, 1);
    g_private_set(&last_channel_key, last);
  }
  g_free(last->address);
  g_free(last->credentials);
  last->address = g_strdup(address);
  last->credentials = g_strdup(credentials);
  last->gzip = gzip;
  last->channel = ch;
  return ch;
}

char *weft__target_address(const char *target) {
  if (!weft__is_grpc_target(target)) return NULL;
  const char *rest = strstr(target, "://") + 3;
  size_t len = strcspn(rest, "/");
  return len > 0 ? g_strndup(rest, len) : NULL;
}

bool weft__is_grpc_target(const char *target) {
  return target && (g_str_has_prefix(target, "grpc://") || g_str_has_prefix(target, "grpcs://"));
}

bool weft__is_tls_target(const char *target) {
  return target && g_str_has_prefix(target, "grpcs://");
}

/* ---------------------------------------------------------------------------------------------
 * Call sets */

struct weft__call_set {
  GMutex lock;
  GHashTable *calls;      /* grpc_call* in flight; NULL while there are none */
  weft_status_t *cancelled; /* set once cancelled */
};

weft__call_set_t *weft__call_set_new(void) {
  weft__call_set_t *set = g_new0(weft__call_set_t, 1);
  g_mutex_init(&set->lock);
  return set;
}

void weft__call_set_free(weft__call_set_t *set) {
  if (!set) return;
  if (set->calls) g_hash_table_destroy(set->calls);
  weft_status_free(set->cancelled);
  g_mutex_clear(&set->lock);
  g_free(set);
}

void weft__call_set_cancel(weft__call_set_t *set, const weft_status_t *why) {
  g_mutex_lock(&set->lock);
  if (!set->cancelled) {
    set->cancelled = weft_status_new(why ? why->code : WEFT_CANCELLED, "%s",
                                     why ? why->message : "Cancelled");
  }
  GHashTableIter it;
  gpointer call;
  /* Under the lock: a call leaves the set (and may be freed) only with the lock held. */
  if (set->calls) g_hash_table_iter_init(&it, set->calls);
  while (set->calls && g_hash_table_iter_next(&it, &call, NULL)) grpc_call_cancel(call, NULL);
  g_mutex_unlock(&set->lock);
}

/* Adds the call; returns a copy of the cancel status instead when the set is cancelled. */
static weft_status_t *call_set_add(weft__call_set_t *set, grpc_call *call) {
  if (!set) return NULL;
  g_mutex_lock(&set->lock);
  weft_status_t *st = NULL;
  if (set->cancelled) st = weft_status_new(set->cancelled->code, "%s", set->cancelled->message);
  else {
    if (!set->calls) set->calls = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_add(set->calls, call);
  }
  g_mutex_unlock(&set->lock);
  return st;
}

static void call_set_remove(weft__call_set_t *set, grpc_call *call) {
  if (!set) return;
  g_mutex_lock(&set->lock);
  /* The table goes when its last call does: a failed step's set stays with its tombstone
   * (rendezvous.c) for a minute, and hundreds of them at once should not each keep a table. */
  if (set->calls && g_hash_table_remove(set->calls, call) && g_hash_table_size(set->calls) == 0)
    g_clear_pointer(&set->calls, g_hash_table_destroy);
  g_mutex_unlock(&set->lock);
}

/* ---------------------------------------------------------------------------------------------
 * Unary calls */

static bool from_service(const grpc_metadata_array *md) {
  for (size_t k = 0; k < md->count; k++) {
    if (grpc_slice_str_cmp(md->metadata[k].key, WEFT_ORIGIN_KEY) == 0) return true;
  }
  return false;
}

/* A call waiting on a server's queue (weft__peer_t.queue): the server's polling thread reads its
 * answer and wakes it. Lives on the caller's stack until done. */
typedef struct waiter {
  GMutex lock;
  GCond cond;
  bool done;
} waiter_t;

bool weft__rpc_is_waiter(const void *tag) { return ((uintptr_t)tag & 1) != 0; }

void weft__rpc_waiter_done(void *tag) {
  waiter_t *w = (waiter_t *)((uintptr_t)tag & ~(uintptr_t)1);
  g_mutex_lock(&w->lock);
  w->done = true;
  g_cond_signal(&w->cond);
  /* The caller may return (and its stack go) as soon as the lock is free. */
  g_mutex_unlock(&w->lock);
}

/* The server's queue to wait on, or NULL: poll a queue of the call's own. WEFT_RPC_OWN_QUEUE=1
 * always takes the call's own (for measuring). */
static grpc_completion_queue *shared_queue(const weft__peer_t *peer) {
  static int own = -1;
  if (own < 0) {
    const char *env = g_getenv("WEFT_RPC_OWN_QUEUE");
    own = env && strcmp(env, "1") == 0;
  }
  return peer && peer->queue && !own && !weft__server_on_poller() ? peer->queue : NULL;
}

/* The calling thread's own queue for calls it plucks, made once: each call's batch completes
 * there with the call as its tag before call_finish returns, so a call leaves nothing behind for
 * the next (calls started and not yet finished by one thread each pluck their own tag). Making
 * and destroying one per call was 3.4% of a small RunStep's client CPU. */
static void thread_queue_free(gpointer cq) {
  grpc_completion_queue_shutdown(cq);
  grpc_completion_queue_destroy(cq);
}

static GPrivate thread_queue_key = G_PRIVATE_INIT(thread_queue_free);

static grpc_completion_queue *thread_queue(void) {
  grpc_completion_queue *cq = g_private_get(&thread_queue_key);
  if (!cq) {
    cq = grpc_completion_queue_create_for_pluck(NULL);
    g_private_set(&thread_queue_key, cq);
  }
  return cq;
}

/* A call started and not yet waited for (call_start, call_finish): on the heap, since gRPC
 * writes into its fields, and the server's polling thread into its waiter, until it ends. */
struct weft__rpc_pending {
  const weft__peer_t *peer; /* weft__rpc_unary_start's; NULL for raw calls */
  const char *method;
  int64_t timeout_ms;
  grpc_byte_buffer *request; /* the caller's (raw calls) or ours (unary_start) */
  weft_status_t *failed; /* the call could not be made; nothing is in flight */
  grpc_completion_queue *cq;
  bool shared;
  grpc_call *call;
  gpr_timespec deadline; /* enforced by call_finish, not sent (call_start) */
  gint64 deadline_us;    /* the same on GLib's monotonic clock */
  weft__call_set_t *set;
  grpc_call_error err;
  grpc_metadata auth;
  grpc_metadata_array initial_md, trailing_md;
  grpc_status_code code;
  grpc_slice details;
  grpc_byte_buffer *response;
  waiter_t w;
};

/* Starts one call; call_finish waits for it and frees p. */
static void call_start(weft__rpc_pending_t *p, const char *address,
                       const weft__security_t *security, grpc_completion_queue *shared,
                       bool wait_for_ready) {
  grpc_byte_buffer *request = p->request;
  bool gzip = request->type == GRPC_BB_RAW && request->data.raw.compression == GRPC_COMPRESS_GZIP;
  grpc_channel *channel = channel_for(address, security, gzip);
  p->shared = shared != NULL;
  p->cq = shared ? shared : thread_queue();
  int64_t timeout_ms = p->timeout_ms;
  if (timeout_ms <= 0) timeout_ms = 1;
  p->deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                             gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
  p->deadline_us = g_get_monotonic_time() + timeout_ms * 1000;
  grpc_slice method_slice = grpc_slice_from_copied_string(p->method);
  /* The deadline stays with the caller, which cancels the call when it passes (call_finish):
   * given to gRPC it would travel as grpc-timeout, and the peer's gRPC turns that into a
   * deadline of its own from a clock it caches per polling pass. A task resumed after a pause
   * (SIGSTOP, a suspended VM) reads its first frames with the time from before the pause, so
   * calls made seconds after the resume expired the moment they arrived (faults/stopped_worker
   * under load: RunGraph and RecvTensor failed DEADLINE_EXCEEDED 2 ms after they were sent; calls
   * of 10 s sent during the pause arrived with 6.6 s left). Weft's services bound their own work
   * (a step's deadline, RunGraph's timeout_ms), and a caller that gives up cancels. */
  p->call = grpc_channel_create_call(channel, NULL, GRPC_PROPAGATE_DEFAULTS, p->cq,
                                     method_slice, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC),
                                     NULL);
  grpc_slice_unref(method_slice);
  p->failed = call_set_add(p->set, p->call);
  if (p->failed) return;

  grpc_metadata_array_init(&p->initial_md);
  grpc_metadata_array_init(&p->trailing_md);
  p->code = GRPC_STATUS_UNKNOWN;
  p->details = grpc_empty_slice();
  grpc_op ops[6];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  /* The cluster token rides on every call (the server checks it before anything runs). */
  const char *auth_value = weft__security_auth_value(security);
  if (auth_value) {
    p->auth.key = grpc_slice_from_static_string(weft__security_auth_key());
    p->auth.value = grpc_slice_from_static_string(auth_value);
    ops[0].data.send_initial_metadata.count = 1;
    ops[0].data.send_initial_metadata.metadata = &p->auth;
  }
  ops[0].flags = wait_for_ready ? (GRPC_INITIAL_METADATA_WAIT_FOR_READY |
                                   GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET)
                                : 0;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = request;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &p->initial_md;
  ops[4].op = GRPC_OP_RECV_MESSAGE;
  ops[4].data.recv_message.recv_message = &p->response;
  ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[5].data.recv_status_on_client.trailing_metadata = &p->trailing_md;
  ops[5].data.recv_status_on_client.status = &p->code;
  ops[5].data.recv_status_on_client.status_details = &p->details;
  if (shared) {
    g_mutex_init(&p->w.lock);
    g_cond_init(&p->w.cond);
    p->w.done = false;
  }
  void *tag = shared ? (void *)((uintptr_t)&p->w | 1) : (void *)p->call;
  p->err = grpc_call_start_batch(p->call, ops, 6, tag, NULL);
}

/* Waits for a call call_start made and frees p. *answered: the status came from the service
 * itself (see WEFT_ORIGIN_KEY). *response is the caller's on success. */
static weft_status_t *call_finish(weft__rpc_pending_t *p, grpc_byte_buffer **response,
                                  bool *answered) {
  *response = NULL;
  *answered = false;
  weft_status_t *st = p->failed;
  if (st) {
    grpc_call_unref(p->call);
    return st;
  }
  if (p->err == GRPC_CALL_OK && p->shared) {
    g_mutex_lock(&p->w.lock);
    while (!p->w.done && g_cond_wait_until(&p->w.cond, &p->w.lock, p->deadline_us)) {
    }
    if (!p->w.done) {
      g_mutex_unlock(&p->w.lock);
      /* gRPC completes a cancelled call at once, with this status. */
      grpc_call_cancel_with_status(p->call, GRPC_STATUS_DEADLINE_EXCEEDED, "Deadline Exceeded",
                                   NULL);
      g_mutex_lock(&p->w.lock);
      while (!p->w.done) g_cond_wait(&p->w.cond, &p->w.lock);
    }
    g_mutex_unlock(&p->w.lock);
  } else if (p->err == GRPC_CALL_OK) {
    grpc_event ev = grpc_completion_queue_pluck(p->cq, p->call, p->deadline, NULL);
    /* (A pluck also returns early, as a timeout, when too many threads pluck one queue.) */
    while (ev.type == GRPC_QUEUE_TIMEOUT && g_get_monotonic_time() < p->deadline_us)
      ev = grpc_completion_queue_pluck(p->cq, p->call, p->deadline, NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT) {
      grpc_call_cancel_with_status(p->call, GRPC_STATUS_DEADLINE_EXCEEDED, "Deadline Exceeded",
                                   NULL);
      grpc_completion_queue_pluck(p->cq, p->call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    }
  } else {
    p->code = GRPC_STATUS_INTERNAL;
  }
  call_set_remove(p->set, p->call);

  if (p->err != GRPC_CALL_OK) {
    st = weft_status_new(WEFT_INTERNAL, "%s: could not start the call: %s", p->method,
                         grpc_call_error_to_string(p->err));
  } else if (p->code != GRPC_STATUS_OK) {
    *answered = from_service(&p->trailing_md);
    char *text = grpc_slice_to_c_string(p->details);
    weft_code_t wc = (p->code > 0 && p->code <= 16) ? (weft_code_t)p->code : WEFT_UNKNOWN;
    st = weft_status_new(wc, "%s", text && *text ? text : "(no details)");
    gpr_free(text);
  } else if (!p->response) {
    st = weft_status_new(WEFT_INTERNAL, "%s answered OK without a message", p->method);
  }
  if (st && p->response) {
    grpc_byte_buffer_destroy(p->response);
    p->response = NULL;
  }
  *response = p->response;
  grpc_slice_unref(p->details);
  grpc_metadata_array_destroy(&p->initial_md);
  grpc_metadata_array_destroy(&p->trailing_md);
  grpc_call_unref(p->call);
  if (p->shared) {
    g_mutex_clear(&p->w.lock);
    g_cond_clear(&p->w.cond);
  }
  return st;
}

/* *answered: the status came from the service itself (see WEFT_ORIGIN_KEY). */
static weft_status_t *call_raw(const char *address, const weft__security_t *security,
                               grpc_completion_queue *shared, const char *method,
                               grpc_byte_buffer *request, int64_t timeout_ms,
                               bool wait_for_ready, weft__call_set_t *set,
                               grpc_byte_buffer **response, bool *answered) {
  weft__rpc_pending_t *p = g_new0(weft__rpc_pending_t, 1);
  p->method = method;
  p->timeout_ms = timeout_ms;
  p->request = request;
  p->set = set;
  call_start(p, address, security, shared, wait_for_ready);
  weft_status_t *st = call_finish(p, response, answered);
  g_free(p);
  return st;
}

bool weft__switch_enabled(const char *name, int *cache) {
  int v = g_atomic_int_get(cache);
  if (v < 0) {
    const char *env = g_getenv(name);
    v = !(env && strcmp(env, "0") == 0);
    g_atomic_int_set(cache, v);
  }
  return v;
}

/* "/weft.Worker/RunGraph" -> "RunGraph". */
static const char *short_method(const char *method) {
  const char *slash = strrchr(method, '/');
  return slash ? slash + 1 : method;
}

weft__rpc_pending_t *weft__rpc_unary_start(const weft__peer_t *peer, const char *method,
                                           const ProtobufCMessage *msg,
                                           weft_tensor_t *const *tensors, int n_tensors,
                                           int64_t timeout_ms, bool wait_for_ready,
                                           weft__call_set_t *set) {
  grpc_byte_buffer *request = NULL;
  weft_status_t *st = weft__wire_encode(msg, tensors, n_tensors, &request);
  if (st) {
    /* A request that cannot be framed fails in unary_finish, as one that cannot be sent does. */
    weft__rpc_pending_t *p = g_new0(weft__rpc_pending_t, 1);
    p->peer = peer;
    p->method = method;
    p->failed = st;
    return p;
  }
  return weft__rpc_unary_start_frame(peer, method, request, timeout_ms, wait_for_ready, set);
}

weft__rpc_pending_t *weft__rpc_unary_start_frame(const weft__peer_t *peer, const char *method,
                                                 grpc_byte_buffer *request, int64_t timeout_ms,
                                                 bool wait_for_ready, weft__call_set_t *set) {
  weft__rpc_pending_t *p = g_new0(weft__rpc_pending_t, 1);
  p->peer = peer;
  p->method = method;
  p->timeout_ms = timeout_ms;
  p->set = set;
  p->request = request;
  call_start(p, peer->address, peer->security, shared_queue(peer), wait_for_ready);
  return p;
}

weft_status_t *weft__rpc_unary_finish(weft__rpc_pending_t *p,
                                      const ProtobufCMessageDescriptor *resp_desc,
                                      ProtobufCMessage **resp, weft_tensor_t ***resp_tensors,
                                      int *n_resp_tensors) {
  *resp = NULL;
  if (resp_tensors) *resp_tensors = NULL;
  if (n_resp_tensors) *n_resp_tensors = 0;
  const weft__peer_t *peer = p->peer;
  const char *method = p->method;
  int64_t timeout_ms = p->timeout_ms;
  if (!p->request) {
    weft_status_t *st = p->failed;
    g_free(p);
    return st;
  }
  grpc_byte_buffer *response = NULL;
  bool answered = false;
  weft_status_t *st = call_finish(p, &response, &answered);
  grpc_byte_buffer_destroy(p->request);
  g_free(p);
  if (st) {
    weft_code_t code = answered ? WEFT_OK : weft_status_code(st);
    /* Task names start with '/'; other peers (a client's server) come with their own words. */
    const char *what = peer->name[0] == '/' ? "Task " : "";
    if (code == WEFT_UNAVAILABLE) {
      weft_status_prefix(st, "%s%s at %s is unavailable (%s)", what, peer->name, peer->address,
                         short_method(method));
      /* gRPC's words for a failed handshake are terse: say where to look (docs/security.md). */
      if (weft__security_tls(peer->security) && strstr(weft_status_message(st), "andshake")) {
        char *hint = g_strdup_printf("%s [TLS handshake failed: check the CA file, the names in "
                                     "the server's certificate and, for mutual TLS, the client "
                                     "certificate]",
                                     weft_status_message(st));
        weft_status_t *with_hint = weft_status_new(WEFT_UNAVAILABLE, "%s", hint);
        g_free(hint);
        weft_status_free(st);
        st = with_hint;
      }
    } else if (code == WEFT_DEADLINE_EXCEEDED) {
      weft_status_prefix(st, "%s%s at %s did not answer %s within %" G_GINT64_FORMAT " ms", what,
                         peer->name, peer->address, short_method(method), timeout_ms);
    }
    return st;
  }
  st = weft__wire_decode(response, resp_desc, resp, resp_tensors, n_resp_tensors);
  grpc_byte_buffer_destroy(response);
  if (st) weft_status_prefix(st, "Answer of %s to %s", peer->name, short_method(method));
  return st;
}

weft_status_t *weft__rpc_unary(const weft__peer_t *peer, const char *method,
                               const ProtobufCMessage *msg, weft_tensor_t *const *tensors,
                               int n_tensors, int64_t timeout_ms, bool wait_for_ready,
                               weft__call_set_t *set, const ProtobufCMessageDescriptor *resp_desc,
                               ProtobufCMessage **resp, weft_tensor_t ***resp_tensors,
                               int *n_resp_tensors) {
  weft__rpc_pending_t *p = weft__rpc_unary_start(peer, method, msg, tensors, n_tensors,
                                                 timeout_ms, wait_for_ready, set);
  return weft__rpc_unary_finish(p, resp_desc, resp, resp_tensors, n_resp_tensors);
}

weft_status_t *weft__rpc_raw(const char *address, const char *method, const void *bytes,
                             size_t len, int64_t timeout_ms, char **answer, size_t *answer_len) {
  return weft__rpc_raw_secure(address, NULL, method, bytes, len, timeout_ms, answer, answer_len);
}

static weft_status_t *raw_call(const char *address, const weft__security_t *security,
                               const char *method, const void *bytes, size_t len, bool gzip,
                               int64_t timeout_ms, char **answer, size_t *answer_len) {
  *answer = NULL;
  *answer_len = 0;
  grpc_slice slice = grpc_slice_from_copied_buffer(bytes, len);
  grpc_byte_buffer *request = gzip ? grpc_raw_compressed_byte_buffer_create(&slice, 1,
                                                                            GRPC_COMPRESS_GZIP)
                                   : grpc_raw_byte_buffer_create(&slice, 1);
  grpc_slice_unref(slice);
  grpc_byte_buffer *response = NULL;
  bool answered = false;
  weft_status_t *st =
      call_raw(address, security, NULL, method, request, timeout_ms, false, NULL, &response,
               &answered);
  grpc_byte_buffer_destroy(request);
  if (st) return st;
  grpc_byte_buffer_reader reader;
  grpc_byte_buffer_reader_init(&reader, response);
  grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
  grpc_byte_buffer_reader_destroy(&reader);
  *answer_len = GRPC_SLICE_LENGTH(all);
  *answer = g_malloc(*answer_len + 1);
  memcpy(*answer, GRPC_SLICE_START_PTR(all), *answer_len);
  (*answer)[*answer_len] = '\0';
  grpc_slice_unref(all);
  grpc_byte_buffer_destroy(response);
  return NULL;
}

weft_status_t *weft__rpc_raw_secure(const char *address, const weft__security_t *security,
                                    const char *method, const void *bytes, size_t len,
                                    int64_t timeout_ms, char **answer, size_t *answer_len) {
  return raw_call(address, security, method, bytes, len, false, timeout_ms, answer, answer_len);
}

weft_status_t *weft__rpc_raw_gzip(const char *address, const weft__security_t *security,
                                  const char *method, const void *gz_bytes, size_t len,
                                  int64_t timeout_ms, char **answer, size_t *answer_len) {
  return raw_call(address, security, method, gz_bytes, len, true, timeout_ms, answer, answer_len);
}
