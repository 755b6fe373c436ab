/* The client side of a grpc:// session (TensorFlow's GrpcSession), registered as the session
 * layer's kind for grpc:// and grpcs:// targets (session_internal.h): sends the graph to the master
 * of the target server on the first run (CreateSession) and only the nodes added since on later
 * runs (ExtendSession), then runs steps with RunStep, feeds and fetches travelling as raw tensor
 * slices. When the target is a server of this very process the master is called directly,
 * without gRPC. The placement the master reports is kept for weft_session_node_device and
 * printed as TensorFlow's log_device_placement lines when asked. Also the cluster-wide client
 * calls of the public API: listing every device of a cluster and resetting its containers.
 * A grpcs:// target means TLS with the options' files; the options' token rides on every call. */
#include <stdio.h>
#include <string.h>

#include "../graph/graphdef_internal.h"
#include "../session/session_internal.h"
#include "distributed_internal.h"

#define M_CREATE_SESSION "/weft.Master/CreateSession"
#define M_EXTEND_SESSION "/weft.Master/ExtendSession"
#define M_RUN_STEP "/weft.Master/RunStep"
#define M_CLOSE_SESSION "/weft.Master/CloseSession"
#define M_LIST_DEVICES "/weft.Master/ListDevices"
#define M_RESET "/weft.Master/Reset"

/* CreateSession makes the master ask every task for its devices, which may take the master's
 * status timeout (10 s by default): the client waits longer than that. */
#define CREATE_TIMEOUT_MS 60000
/* Without an operation timeout the master's own step deadline applies; the client's call
 * deadline is only the backstop for a master that stopped answering. */
#define RUN_BACKSTOP_MS (3600 * 1000)
#define RUN_SLACK_MS 10000

typedef struct remote_session {
  weft_graph_t *graph;
  weft_session_options_t *opts;
  char *address;
  weft__peer_t peer;
  weft__security_t *security; /* the peer's TLS material and token (a reference) */
  weft__master_t *local; /* the in-process master of the target, or NULL */
  GMutex lock;           /* the graph sync: one CreateSession/ExtendSession at a time */
  char *handle;
  int n_sent;
  bool closed;
  GMutex placement_lock;
  GHashTable *placement; /* node name -> device */
  /* The last feedless RunStep request, framed once (under `lock`): a loop running the same step
   * sends a copy of it (the bytes shared) instead of packing the same message every step. */
  grpc_byte_buffer *frame;
  char **frame_names; /* its fetches, then its targets (NULL-terminated) */
  int frame_fetches;
  int64_t frame_timeout;
  int frame_trace;
} remote_session_t;

/* WEFT_RUNSTEP_FRAME_CACHE=0 frames every RunStep request anew (for measuring). */
static bool frame_cache_enabled(void) {
  static int enabled = -1;
  return weft__switch_enabled("WEFT_RUNSTEP_FRAME_CACHE", &enabled);
}

static bool names_match(char *const *have, const char *const *want, int n) {
  for (int k = 0; k < n; k++) {
    if (!have[k] || strcmp(have[k], want[k]) != 0) return false;
  }
  return true;
}

/* A copy of the framed request of a feedless step with these names, or NULL. Called with
 * r->lock held. */
static grpc_byte_buffer *frame_lookup(remote_session_t *r, const char *const *fetch_names,
                                      int n_fetches, const char *const *target_names,
                                      int n_targets, int64_t timeout, int trace) {
  if (!r->frame || r->frame_fetches != n_fetches || r->frame_timeout != timeout ||
      r->frame_trace != trace || g_strv_length(r->frame_names) != (guint)(n_fetches + n_targets))
    return NULL;
  if (!names_match(r->frame_names, fetch_names, n_fetches) ||
      !names_match(r->frame_names + n_fetches, target_names, n_targets))
    return NULL;
  return grpc_byte_buffer_copy(r->frame);
}

/* Keeps a copy of `frame` as the session's last feedless request. */
static void frame_store(remote_session_t *r, grpc_byte_buffer *frame,
                        const char *const *fetch_names, int n_fetches,
                        const char *const *target_names, int n_targets, int64_t timeout,
                        int trace) {
  char **names = g_new0(char *, n_fetches + n_targets + 1);
  for (int k = 0; k < n_fetches; k++) names[k] = g_strdup(fetch_names[k]);
  for (int k = 0; k < n_targets; k++) names[n_fetches + k] = g_strdup(target_names[k]);
  g_mutex_lock(&r->lock);
  if (r->frame) grpc_byte_buffer_destroy(r->frame);
  g_strfreev(r->frame_names);
  r->frame = grpc_byte_buffer_copy(frame);
  r->frame_names = names;
  r->frame_fetches = n_fetches;
  r->frame_timeout = timeout;
  r->frame_trace = trace;
  g_mutex_unlock(&r->lock);
}

static weft__peer_t server_peer(const char *address, const weft__security_t *security) {
  weft__peer_t peer = {"The server", address, security, NULL};
  return peer;
}

/* The TLS material and token of the options for `target`: TLS when it is grpcs://. */
static weft_status_t *client_security(const char *target, const weft_session_options_t *opts,
                                      weft__security_t **out) {
  *out = NULL;
  bool tls = weft__is_tls_target(target);
  bool files = opts && (opts->tls_cert || opts->tls_key || opts->tls_ca);
  if (files && !tls) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TLS files are set but target '%s' is plaintext: use grpcs://", target);
  }
  return weft__security_new(tls, false, opts ? opts->tls_cert : NULL, opts ? opts->tls_key : NULL,
                            opts ? opts->tls_ca : NULL, opts ? opts->auth_token_file : NULL, out);
}

static bool remote_accepts(const char *target) {
  return weft__is_grpc_target(target);
}

static weft_status_t *remote_create(weft_graph_t *graph, const weft_session_options_t *opts,
                                    void **out) {
  *out = NULL;
  const char *target = opts && opts->target ? opts->target : "";
  char *address = weft__target_address(target);
  if (!address || !weft__address_split(address, NULL, NULL)) {
    g_free(address);
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Session target '%s' is not of the form grpc://HOST:PORT or "
                           "grpcs://HOST:PORT",
                           target);
  }
  weft__security_t *security = NULL;
  weft_status_t *st = client_security(target, opts, &security);
  if (st) {
    g_free(address);
    return st;
  }
  weft__grpc_init_once();
  weft__master_t *local = weft__local_master_lookup(address, security, &st);
  if (st) {
    weft__security_unref(security);
    g_free(address);
    return st;
  }
  remote_session_t *r = g_new0(remote_session_t, 1);
  r->graph = graph;
  r->opts = weft__session_options_copy(opts);
  r->address = address;
  r->security = security;
  r->peer = server_peer(r->address, security);
  r->local = local;
  g_mutex_init(&r->lock);
  g_mutex_init(&r->placement_lock);
  r->placement = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  *out = r;
  return NULL;
}

/* Sends what the master does not have yet of the graph. Called with r->lock held. */
static weft_status_t *sync_graph(remote_session_t *r) {
  int n = weft_graph_num_nodes(r->graph);
  if (r->handle && n == r->n_sent) return NULL;
  Tensorflow__GraphDef *gd = NULL;
  weft_status_t *st = weft__graph_to_graphdef_proto(r->graph, &gd);
  if (st) return st;
  int n_now = (int)gd->n_node;
  /* Only the new nodes: a view of the tail of the export. */
  Tensorflow__GraphDef tail = *gd;
  tail.node = gd->node + r->n_sent;
  tail.n_node = (size_t)(n_now - r->n_sent);
  ProtobufCMessage *resp = NULL;
  if (!r->handle) {
    Weft__SessionConfig config = WEFT__SESSION_CONFIG__INIT;
    config.log_device_placement = r->opts->log_device_placement;
    config.allow_soft_placement = r->opts->allow_soft_placement;
    config.operation_timeout_ms = r->opts->operation_timeout_ms;
    config.n_device_filters = r->opts->device_filters ? g_strv_length(r->opts->device_filters) : 0;
    config.device_filters = r->opts->device_filters;
    char *handle = NULL;
    int64_t version = 0;
    if (r->local) {
      st = weft__master_create_session(r->local, gd, &config, &handle, &version);
    } else {
      Weft__CreateSessionRequest req = WEFT__CREATE_SESSION_REQUEST__INIT;
      req.graph_def = gd;
      req.config = &config;
      st = weft__rpc_unary(&r->peer, M_CREATE_SESSION, &req.base, NULL, 0, CREATE_TIMEOUT_MS,
                           false, NULL, &weft__create_session_response__descriptor, &resp, NULL,
                           NULL);
      if (!st) handle = g_strdup(((Weft__CreateSessionResponse *)resp)->session_handle);
    }
    if (!st) r->handle = handle;
  } else {
    int64_t version = 0;
    if (r->local) {
      st = weft__master_extend_session(r->local, r->handle, &tail, r->n_sent, &version);
    } else {
      Weft__ExtendSessionRequest req = WEFT__EXTEND_SESSION_REQUEST__INIT;
      req.session_handle = r->handle;
      req.graph_def = &tail;
      req.current_graph_version = r->n_sent;
      st = weft__rpc_unary(&r->peer, M_EXTEND_SESSION, &req.base, NULL, 0, CREATE_TIMEOUT_MS,
                           false, NULL, &weft__extend_session_response__descriptor, &resp, NULL,
                           NULL);
    }
  }
  if (!st) r->n_sent = n_now;
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  tensorflow__graph_def__free_unpacked(gd, NULL);
  return st;
}

static void record_placements(remote_session_t *r, Weft__NodePlacement *const *p, size_t n) {
  if (n == 0) return;
  GString *log = r->opts->log_device_placement ? g_string_new(NULL) : NULL;
  g_mutex_lock(&r->placement_lock);
  for (size_t k = 0; k < n; k++) {
    if (!p[k]->name || !p[k]->device) continue;
    if (!g_hash_table_contains(r->placement, p[k]->name)) {
      g_hash_table_insert(r->placement, g_strdup(p[k]->name), g_strdup(p[k]->device));
    }
    if (log) g_string_append_printf(log, "%s: (%s): %s\n", p[k]->name, p[k]->op, p[k]->device);
  }
  g_mutex_unlock(&r->placement_lock);
  if (log) {
    fputs(log->str, stderr);
    fflush(stderr);
    g_string_free(log, TRUE);
  }
}

static weft_status_t *remote_run(void *impl, const char *const *feed_names,
                                 weft_tensor_t *const *feeds, int n_feeds,
                                 const char *const *fetch_names, weft_tensor_t **fetch_outputs,
                                 int n_fetches, const char *const *target_names, int n_targets,
                                 int64_t timeout_ms, weft_run_metadata_t *stats) {
  remote_session_t *r = impl;
  if (n_feeds < 0 || n_fetches < 0 || n_targets < 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: negative count");
  }
  for (int k = 0; k < n_feeds; k++) {
    if (!feed_names[k] || !feeds[k])
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Feed %d has no name or no tensor", k);
  }
  /* As the master would say (weft__step_spec_resolve); the frame cache compares the names. */
  const char *const *lists[2] = {fetch_names, target_names};
  const int counts[2] = {n_fetches, n_targets};
  for (int l = 0; l < 2; l++) {
    for (int k = 0; k < counts[l]; k++) {
      if (!lists[l] || !lists[l][k])
        return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: %s name %d is NULL",
                               l == 0 ? "fetch" : "target", k);
    }
  }
  int64_t timeout = timeout_ms > 0 ? timeout_ms : r->opts->operation_timeout_ms;
  int trace = stats ? 1 : 0;
  bool cacheable = !r->local && n_feeds == 0 && frame_cache_enabled();
  g_mutex_lock(&r->lock);
  weft_status_t *st = r->closed ? weft_status_new(WEFT_FAILED_PRECONDITION,
                                                  "Session has been closed")
                                : sync_graph(r);
  grpc_byte_buffer *frame = NULL;
  if (!st && cacheable) {
    frame = frame_lookup(r, fetch_names, n_fetches, target_names, n_targets, timeout, trace);
  }
  char *handle = frame ? NULL : g_strdup(r->handle);
  g_mutex_unlock(&r->lock);
  if (st) {
    g_free(handle);
    return st;
  }
  if (r->local) {
    GPtrArray *placements =
        g_ptr_array_new_with_free_func((GDestroyNotify)weft__node_placement_free);
    st = weft__master_run_step(r->local, handle, feed_names, feeds, n_feeds, fetch_names,
                               n_fetches, target_names, n_targets, timeout, fetch_outputs,
                               placements, stats);
    record_placements(r, (Weft__NodePlacement *const *)placements->pdata, placements->len);
    g_ptr_array_free(placements, TRUE);
    g_free(handle);
    return st;
  }
  if (!frame) {
    Weft__RunStepRequest req = WEFT__RUN_STEP_REQUEST__INIT;
    req.session_handle = handle;
    req.n_feed = (size_t)n_feeds;
    req.feed = (char **)feed_names;
    req.n_fetch = (size_t)n_fetches;
    req.fetch = (char **)fetch_names;
    req.n_target = (size_t)n_targets;
    req.target = (char **)target_names;
    req.timeout_ms = timeout;
    req.trace_level = trace;
    st = weft__wire_encode(&req.base, feeds, n_feeds, &frame);
    g_free(handle);
    if (st) return st;
    if (cacheable) {
      frame_store(r, frame, fetch_names, n_fetches, target_names, n_targets, timeout, trace);
    }
  }
  ProtobufCMessage *resp = NULL;
  weft_tensor_t **tensors = NULL;
  int n = 0;
  weft__rpc_pending_t *call =
      weft__rpc_unary_start_frame(&r->peer, M_RUN_STEP, frame,
                                  timeout > 0 ? timeout + RUN_SLACK_MS : RUN_BACKSTOP_MS, false,
                                  NULL);
  st = weft__rpc_unary_finish(call, &weft__run_step_response__descriptor, &resp, &tensors, &n);
  if (!st && n != n_fetches) {
    st = weft_status_new(WEFT_INTERNAL, "RunStep returned %d tensors for %d fetches", n, n_fetches);
  }
  if (!st) {
    const Weft__RunStepResponse *rr = (const Weft__RunStepResponse *)resp;
    record_placements(r, rr->placement, rr->n_placement);
    weft__step_stats_from_msg(stats, rr->step_stats);
    for (int k = 0; k < n; k++) {
      fetch_outputs[k] = tensors[k];
      tensors[k] = NULL;
    }
  }
  weft__tensors_free(tensors, n);
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  return st;
}

static const char *remote_node_device(void *impl, const char *node_name) {
  remote_session_t *r = impl;
  g_mutex_lock(&r->placement_lock);
  /* Entries are never replaced or removed while the session lives, so the string stays valid. */
  const char *d = g_hash_table_lookup(r->placement, node_name);
  g_mutex_unlock(&r->placement_lock);
  return d ? d : "";
}

static weft_status_t *remote_close(void *impl) {
  remote_session_t *r = impl;
  g_mutex_lock(&r->lock);
  if (r->closed) {
    g_mutex_unlock(&r->lock);
    return NULL;
  }
  r->closed = true;
  char *handle = r->handle;
  r->handle = NULL;
  g_mutex_unlock(&r->lock);
  if (!handle) return NULL;
  weft_status_t *st = NULL;
  if (r->local) {
    st = weft__master_close_session(r->local, handle);
  } else {
    Weft__CloseSessionRequest req = WEFT__CLOSE_SESSION_REQUEST__INIT;
    req.session_handle = handle;
    ProtobufCMessage *resp = NULL;
    st = weft__rpc_unary(&r->peer, M_CLOSE_SESSION, &req.base, NULL, 0, WEFT_CONTROL_TIMEOUT_MS,
                         false, NULL, &weft__close_session_response__descriptor, &resp, NULL, NULL);
    if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  }
  g_free(handle);
  return st;
}

static void remote_free(void *impl) {
  remote_session_t *r = impl;
  if (!r) return;
  weft_status_free(remote_close(r));
  if (r->local) weft__master_unref(r->local);
  weft__security_unref(r->security);
  if (r->frame) grpc_byte_buffer_destroy(r->frame);
  g_strfreev(r->frame_names);
  g_hash_table_destroy(r->placement);
  weft_session_options_free(r->opts);
  g_mutex_clear(&r->lock);
  g_mutex_clear(&r->placement_lock);
  g_free(r->address);
  g_free(r);
}

/* The session kind of grpc:// and grpcs:// targets. A target of that scheme that is malformed is
 * still this kind's: create refuses it with its own message. */
static const weft__session_kind_t grpc_session_kind = {
    .name = "grpc",
    .usage = "grpc://HOST:PORT (grpcs:// for TLS) for a server",
    .accepts = remote_accepts,
    .create = remote_create,
    .run = remote_run,
    .node_device = remote_node_device,
    .close = remote_close,
    .free_impl = remote_free,
    .resources = NULL,
};

/* Registered when the library is loaded, as TensorFlow's GrpcSessionRegistrar does, so that the
 * session layer needs no knowledge of this one. Programs that link the core statically take the
 * whole archive (core/meson.build), or this object would be left out. */
__attribute__((constructor)) static void register_grpc_session_kind(void) {
  weft__session_kind_register(&grpc_session_kind);
}

/* ---------------------------------------------------------------------------------------------
 * Cluster-wide client calls */

/* The address of `target`, its security and, when it is served in this process, its master.
 * On error nothing is left to free. */
weft_status_t *weft__target_peer(const char *target, const weft_session_options_t *opts,
                                 char **address, weft__security_t **security,
                                 weft__master_t **local) {
  *security = NULL;
  *local = NULL;
  *address = weft__target_address(target);
  if (!*address || !weft__address_split(*address, NULL, NULL)) {
    g_free(*address);
    *address = NULL;
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Target '%s' is not of the form grpc://HOST:PORT or grpcs://HOST:PORT",
                           target ? target : "");
  }
  weft_status_t *st = client_security(target, opts, security);
  if (!st) {
    weft__grpc_init_once();
    *local = weft__local_master_lookup(*address, *security, &st);
  }
  if (st) {
    weft__security_unref(*security);
    *security = NULL;
    g_free(*address);
    *address = NULL;
  }
  return st;
}

weft_status_t *weft_cluster_list_devices(const char *target, int64_t timeout_ms,
                                         weft_device_info_t **devices, int *n) {
  return weft_cluster_list_devices_with_options(target, NULL, timeout_ms, devices, n);
}

weft_status_t *weft_cluster_list_devices_with_options(const char *target,
                                                      const weft_session_options_t *opts,
                                                      int64_t timeout_ms,
                                                      weft_device_info_t **devices, int *n) {
  *devices = NULL;
  *n = 0;
  char *address = NULL;
  weft__security_t *security = NULL;
  weft__master_t *local = NULL;
  weft_status_t *st = weft__target_peer(target, opts, &address, &security, &local);
  if (st) return st;
  GPtrArray *list = NULL;
  ProtobufCMessage *resp = NULL;
  if (local) {
    st = weft__master_list_devices(local, &list);
    weft__master_unref(local);
  } else {
    weft__peer_t peer = server_peer(address, security);
    Weft__ListDevicesRequest req = WEFT__LIST_DEVICES_REQUEST__INIT;
    st = weft__rpc_unary(&peer, M_LIST_DEVICES, &req.base, NULL, 0,
                         timeout_ms > 0 ? timeout_ms : CREATE_TIMEOUT_MS, false, NULL,
                         &weft__list_devices_response__descriptor, &resp, NULL, NULL);
    if (!st) {
      const Weft__ListDevicesResponse *lr = (const Weft__ListDevicesResponse *)resp;
      list = g_ptr_array_new();
      for (size_t k = 0; k < lr->n_device; k++) g_ptr_array_add(list, lr->device[k]);
    }
  }
  if (!st) {
    weft_device_info_t *out = g_new0(weft_device_info_t, list->len + 1);
    for (guint k = 0; k < list->len; k++) {
      const Weft__DeviceAttributes *a = list->pdata[k];
      out[k].name = g_strdup(a->name);
      out[k].device_type = g_strdup(a->device_type);
      out[k].ordinal = a->id;
      out[k].description = g_strdup(a->description);
      out[k].memory_bytes = a->memory_bytes;
      out[k].gpu_like = a->gpu_like;
      out[k].emulated = a->emulated;
    }
    *devices = out;
    *n = (int)list->len;
  }
  if (list) g_ptr_array_free(list, TRUE);
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  weft__security_unref(security);
  g_free(address);
  return st;
}

void weft_device_list_free(weft_device_info_t *devices, int n) {
  if (!devices) return;
  for (int k = 0; k < n; k++) {
    g_free((char *)devices[k].name);
    g_free((char *)devices[k].device_type);
    g_free((char *)devices[k].description);
  }
  g_free(devices);
}

weft_status_t *weft_cluster_reset(const char *target, const char *const *containers, int n) {
  return weft_cluster_reset_with_options(target, NULL, containers, n);
}

weft_status_t *weft_cluster_reset_with_options(const char *target,
                                               const weft_session_options_t *opts,
                                               const char *const *containers, int n) {
  char *address = NULL;
  weft__security_t *security = NULL;
  weft__master_t *local = NULL;
  weft_status_t *st = weft__target_peer(target, opts, &address, &security, &local);
  if (st) return st;
  if (local) {
    st = weft__master_reset(local, containers, n);
    weft__master_unref(local);
  } else {
    weft__peer_t peer = server_peer(address, security);
    Weft__ResetRequest req = WEFT__RESET_REQUEST__INIT;
    req.n_container = n > 0 ? (size_t)n : 0;
    req.container = (char **)containers;
    ProtobufCMessage *resp = NULL;
    st = weft__rpc_unary(&peer, M_RESET, &req.base, NULL, 0, CREATE_TIMEOUT_MS, false, NULL,
                         &weft__reset_response__descriptor, &resp, NULL, NULL);
    if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  }
  weft__security_unref(security);
  g_free(address);
  return st;
}
