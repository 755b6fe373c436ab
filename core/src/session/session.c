/* The public session API over a table of session kinds, as TensorFlow's SessionFactory: a session
 * is a kind (chosen once, by the options' target) and the kind's own state. The local kind is
 * built in (session_local.c); upper layers register theirs (weft__session_kind_register), so this
 * layer knows no transport. docs/architecture.md, "Adding a session kind", is the recipe. */
#include "session_internal.h"

struct weft_session {
  const weft__session_kind_t *kind;
  void *impl; /* the kind's */
  weft_graph_t *graph;
};

/* ---------------------------------------------------------------------------------------------
 * The table of kinds */

/* Registrations may come from library constructors, before main: a static mutex and a plain
 * array need no initialisation. Kinds are never removed. */
static GMutex kinds_lock;
static const weft__session_kind_t **kinds; /* after the local kind, in registration order */
static int n_kinds;

void weft__session_kind_register(const weft__session_kind_t *kind) {
  g_mutex_lock(&kinds_lock);
  bool known = kind == &weft__local_session_kind;
  for (int k = 0; k < n_kinds && !known; k++) known = kinds[k] == kind;
  if (!known) {
    kinds = g_renew(const weft__session_kind_t *, kinds, n_kinds + 1);
    kinds[n_kinds++] = kind;
  }
  g_mutex_unlock(&kinds_lock);
}

const weft__session_kind_t *weft__session_kind_for_target(const char *target) {
  if (!target) target = "";
  if (weft__local_session_kind.accepts(target)) return &weft__local_session_kind;
  const weft__session_kind_t *found = NULL;
  g_mutex_lock(&kinds_lock);
  for (int k = 0; k < n_kinds && !found; k++)
    if (kinds[k]->accepts(target)) found = kinds[k];
  g_mutex_unlock(&kinds_lock);
  return found;
}

/* INVALID_ARGUMENT listing the targets every kind accepts. */
static weft_status_t *unsupported_target(const char *target) {
  GString *usage = g_string_new(weft__local_session_kind.usage);
  g_mutex_lock(&kinds_lock);
  for (int k = 0; k < n_kinds; k++) g_string_append_printf(usage, ", or %s", kinds[k]->usage);
  g_mutex_unlock(&kinds_lock);
  weft_status_t *st = weft_status_new(
      WEFT_INVALID_ARGUMENT, "Session target '%s' is not supported: use %s", target, usage->str);
  g_string_free(usage, TRUE);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * The public API */

weft_session_t *weft_session_new(weft_graph_t *graph, const weft_session_options_t *opts,
                                 weft_status_t **status) {
  if (status) *status = NULL;
  const char *target = opts && opts->target ? opts->target : "";
  if (!graph) {
    if (status) *status = weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_new: graph is NULL");
    return NULL;
  }
  const weft__session_kind_t *kind = weft__session_kind_for_target(target);
  void *impl = NULL;
  weft_status_t *st = kind ? kind->create(graph, opts, &impl) : unsupported_target(target);
  if (st) {
    if (status) *status = st;
    else weft_status_free(st);
    return NULL;
  }
  weft_session_t *s = g_new0(weft_session_t, 1);
  s->kind = kind;
  s->impl = impl;
  s->graph = graph;
  return s;
}

weft__resource_mgr_t *weft__session_resources(weft_session_t *s) {
  return s && s->kind->resources ? s->kind->resources(s->impl) : NULL;
}

weft_graph_t *weft__session_graph(weft_session_t *s) {
  return s ? s->graph : NULL;
}

const char *weft_session_node_device(weft_session_t *s, const char *node_name) {
  return s->kind->node_device(s->impl, node_name);
}

weft_status_t *weft_session_run(weft_session_t *s, const char *const *feed_names,
                                weft_tensor_t *const *feed_values, int n_feeds,
                                const char *const *fetch_names, weft_tensor_t **fetch_outputs,
                                int n_fetches, const char *const *target_names, int n_targets) {
  return weft_session_run_with_options(s, NULL, feed_names, feed_values, n_feeds, fetch_names,
                                       fetch_outputs, n_fetches, target_names, n_targets, NULL);
}

weft_status_t *weft_session_run_with_options(
    weft_session_t *s, const weft_run_options_t *ro, const char *const *feed_names,
    weft_tensor_t *const *feed_values, int n_feeds, const char *const *fetch_names,
    weft_tensor_t **fetch_outputs, int n_fetches, const char *const *target_names, int n_targets,
    weft_run_metadata_t **metadata) {
  if (metadata) *metadata = NULL;
  if (!s) return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: session is NULL");
  if (ro && (ro->trace_level < WEFT_TRACE_NONE || ro->trace_level > WEFT_TRACE_FULL)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: unknown trace level %d",
                           (int)ro->trace_level);
  }
  /* Untraced steps pass no collector at all, so the executor measures nothing. */
  weft_run_metadata_t *meta = metadata ? weft__run_metadata_new() : NULL;
  bool trace = meta && ro && ro->trace_level > WEFT_TRACE_NONE;
  weft_status_t *st = s->kind->run(s->impl, feed_names, feed_values, n_feeds, fetch_names,
                                   fetch_outputs, n_fetches, target_names, n_targets,
                                   ro ? ro->timeout_ms : 0, trace ? meta : NULL);
  if (st || !metadata) weft_run_metadata_free(meta);
  else *metadata = meta;
  return st;
}

weft_status_t *weft_session_close(weft_session_t *s) {
  if (!s) return NULL;
  return s->kind->close(s->impl);
}

void weft_session_free(weft_session_t *s) {
  if (!s) return;
  s->kind->free_impl(s->impl);
  g_free(s);
}
