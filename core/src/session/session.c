/* The local session: resolves a step's feeds, fetches and targets, prunes the graph to what they
 * need, places new nodes (placement is kept across runs), instantiates kernels once per node, and
 * caches one executor per feed/fetch/target signature. Variables live in the session's resource
 * manager, as in TensorFlow's DirectSession. A grpc:// target hands every call to the remote
 * session (core/src/distributed/remote_session.c). The step resolution, pruning and kernel
 * helpers here are shared with the distributed master and worker (session_internal.h). */
#include "session_internal.h"

#include <stdio.h>
#include <string.h>

#include "../distributed/distributed_internal.h"
#include "../placement/placement_internal.h"

typedef struct plan {
  weft__executor_t *executor;
  int n_feeds;
} plan_t;

struct weft_session {
  weft_graph_t *graph;
  weft_session_options_t *opts;
  weft__remote_session_t *remote; /* set for grpc:// targets; nothing below is used then */
  GMutex lock;
  GHashTable *placement; /* node name -> device name */
  GHashTable *kernels;   /* weft_node_t* -> weft__kernel_instance_t* */
  GHashTable *plans;     /* signature -> plan_t* */
  weft__resource_mgr_t *resources;
  weft__threadpool_t *inter_pool;
  weft__threadpool_t *intra_pool;
  bool own_pools;
  bool closed;
};

static void plan_free(plan_t *p) {
  if (!p) return;
  weft__executor_free(p->executor);
  g_free(p);
}

weft_session_t *weft_session_new(weft_graph_t *graph, const weft_session_options_t *opts,
                                 weft_status_t **status) {
  if (status) *status = NULL;
  const char *target = opts && opts->target ? opts->target : "";
  if (!graph) {
    if (status) *status = weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_new: graph is NULL");
    return NULL;
  }
  if (weft__is_grpc_target(target)) {
    weft__remote_session_t *remote = NULL;
    weft_status_t *st = weft__remote_session_new(graph, opts, &remote);
    if (st) {
      if (status) *status = st;
      else weft_status_free(st);
      return NULL;
    }
    weft_session_t *s = g_new0(weft_session_t, 1);
    s->graph = graph;
    s->remote = remote;
    return s;
  }
  if (*target && strcmp(target, "local") != 0) {
    if (status) {
      *status = weft_status_new(WEFT_INVALID_ARGUMENT,
                                "Session target '%s' is not supported: use \"\" or \"local\" "
                                "for an in-process session, or grpc://HOST:PORT (grpcs:// for TLS) for a "
                                "server",
                                target);
    }
    return NULL;
  }
  weft__plugins_ensure_loaded();
  weft_session_t *s = g_new0(weft_session_t, 1);
  s->graph = graph;
  s->opts = weft__session_options_copy(opts);
  g_mutex_init(&s->lock);
  s->placement = weft__placement_new();
  s->kernels = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                     (GDestroyNotify)weft__kernel_instance_free);
  s->plans = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)plan_free);
  s->resources = weft__resource_mgr_new();
  if (s->opts->use_per_session_threads) {
    int inter = s->opts->inter_op_threads ? s->opts->inter_op_threads : weft__num_cores();
    int intra = s->opts->intra_op_threads ? s->opts->intra_op_threads : weft__num_cores();
    s->inter_pool = weft__threadpool_new(inter, "weft-inter");
    s->intra_pool = weft__threadpool_new(intra, "weft-intra");
    s->own_pools = true;
  } else {
    s->inter_pool = weft__default_inter_op_pool(s->opts->inter_op_threads);
    s->intra_pool = weft__default_intra_op_pool(s->opts->intra_op_threads);
  }
  return s;
}

weft__resource_mgr_t *weft__session_resources(weft_session_t *s) {
  return (s && !s->remote && !s->closed) ? s->resources : NULL;
}

weft_graph_t *weft__session_graph(weft_session_t *s) {
  return s ? s->graph : NULL;
}

const char *weft_session_node_device(weft_session_t *s, const char *node_name) {
  if (s->remote) return weft__remote_session_node_device(s->remote, node_name);
  g_mutex_lock(&s->lock);
  const char *d = g_hash_table_lookup(s->placement, node_name);
  g_mutex_unlock(&s->lock);
  return d ? d : "";
}

/* ---------------------------------------------------------------------------------------------
 * Planning (shared with the distributed master and worker) */

static bool is_fed(const weft__feed_t *feeds, int n, const weft_node_t *node, int index) {
  for (int k = 0; k < n; k++)
    if (feeds[k].node == node && feeds[k].index == index) return true;
  return false;
}

bool weft__node_fully_fed(const weft__feed_t *feeds, int n, const weft_node_t *node) {
  if (node->n_outputs == 0) return false;
  for (int k = 0; k < node->n_outputs; k++)
    if (!is_fed(feeds, n, node, k)) return false;
  return true;
}

static gint compare_node_ids(gconstpointer a, gconstpointer b) {
  const weft_node_t *x = *(weft_node_t *const *)a;
  const weft_node_t *y = *(weft_node_t *const *)b;
  return (x->id > y->id) - (x->id < y->id);
}

GPtrArray *weft__step_needed_nodes(const weft__step_spec_t *spec) {
  const weft__feed_t *feeds = spec->feeds;
  int n_feeds = spec->n_feeds;
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  GPtrArray *stack = g_ptr_array_new();
  for (int k = 0; k < spec->n_fetches; k++) {
    if (!is_fed(feeds, n_feeds, spec->fetches[k].node, spec->fetches[k].index))
      g_ptr_array_add(stack, (gpointer)spec->fetches[k].node);
  }
  for (int k = 0; k < spec->n_targets; k++) g_ptr_array_add(stack, spec->targets[k]);
  while (stack->len) {
    weft_node_t *n = g_ptr_array_steal_index(stack, stack->len - 1);
    if (g_hash_table_contains(seen, n)) continue;
    g_hash_table_add(seen, n);
    for (int i = 0; i < n->n_inputs; i++) {
      const weft__edge_t *e = &n->inputs[i];
      if (!is_fed(feeds, n_feeds, e->src, e->src_index)) g_ptr_array_add(stack, e->src);
    }
    for (guint c = 0; c < n->control_inputs->len; c++) {
      weft_node_t *ctl = n->control_inputs->pdata[c];
      if (!weft__node_fully_fed(feeds, n_feeds, ctl)) g_ptr_array_add(stack, ctl);
    }
  }
  g_ptr_array_free(stack, TRUE);
  GPtrArray *nodes = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, seen);
  while (g_hash_table_iter_next(&it, &key, NULL)) g_ptr_array_add(nodes, key);
  g_hash_table_destroy(seen);
  /* Creation order is a topological order: inputs exist before the nodes that use them. */
  g_ptr_array_sort(nodes, compare_node_ids);
  return nodes;
}

weft_status_t *weft__check_unfed_placeholders(GPtrArray *nodes) {
  for (guint k = 0; k < nodes->len; k++) {
    const weft_node_t *n = nodes->pdata[k];
    if (strcmp(n->op_name, "Placeholder") != 0) continue;
    weft__shape_t declared = weft__node_shape(n, 0);
    char *shape = weft__shape_to_string(declared.rank, declared.dims);
    weft_status_t *st = weft_status_new(
        WEFT_INVALID_ARGUMENT,
        "You must feed a value for placeholder tensor '%s' with dtype %s and shape %s", n->name,
        weft_dtype_name(weft__dtype_base(n->output_types[0])), shape);
    g_free(shape);
    return st;
  }
  return NULL;
}

void weft__log_placement(GPtrArray *nodes, GHashTable *placement) {
  GString *log = g_string_new(NULL);
  for (guint k = 0; k < nodes->len; k++) {
    const weft_node_t *n = nodes->pdata[k];
    const char *device = g_hash_table_lookup(placement, n->name);
    g_string_append_printf(log, "%s: (%s): %s\n", n->name, n->op_name, device ? device : "");
  }
  fputs(log->str, stderr);
  fflush(stderr);
  g_string_free(log, TRUE);
}

static weft_status_t *place_new_nodes(weft_session_t *s, GPtrArray *needed) {
  GPtrArray *nodes = weft__colocation_closure(s->graph, needed, s->placement);
  GPtrArray *todo = g_ptr_array_new();
  for (guint k = 0; k < nodes->len; k++) {
    weft_node_t *n = nodes->pdata[k];
    if (!g_hash_table_contains(s->placement, n->name)) g_ptr_array_add(todo, n);
  }
  g_ptr_array_free(nodes, TRUE);
  if (!todo->len) {
    g_ptr_array_free(todo, TRUE);
    return NULL;
  }
  int n_devices = weft__device_count();
  weft__place_device_t *devices = g_new0(weft__place_device_t, n_devices > 0 ? n_devices : 1);
  for (int k = 0; k < n_devices; k++) {
    weft__device_t *d = weft__device_at(k);
    devices[k].name = d->name;
    devices[k].job = "localhost";
    devices[k].replica = 0;
    devices[k].task = 0;
    devices[k].type = d->type;
    devices[k].id = d->ordinal;
    devices[k].gpu_like = d->gpu_like;
    devices[k].emulated = d->emulated;
    devices[k].priority = d->priority;
  }
  weft__placer_options_t popts = {s->opts->allow_soft_placement, "localhost", 0, 0};
  weft_status_t *st = NULL;
  if (n_devices == 0) {
    st = weft_status_new(WEFT_FAILED_PRECONDITION,
                         "No devices: no backend plugin was loaded (see `weft plugins`; set "
                         "WEFT_PLUGIN_PATH to the folder holding libweft-cpu.so)");
  } else {
    st = weft__place(todo, devices, n_devices, &popts, s->placement);
  }
  if (!st && s->opts->log_device_placement) weft__log_placement(todo, s->placement);
  g_free(devices);
  g_ptr_array_free(todo, TRUE);
  return st;
}

weft_status_t *weft__kernel_instance_for_node(const weft_node_t *n, weft__device_t *dev,
                                              const weft_device_options_t *dopts,
                                              weft__kernel_instance_t **out) {
  weft_status_t *st = weft__device_open(dev, dopts);
  if (st) return st;
  const weft__kernel_t *kernel = weft__kernel_lookup(n->op_name, dev->type, n->attrs);
  if (!kernel) {
    char *avail = weft__kernel_describe_available(n->op_name);
    st = weft_status_new(WEFT_NOT_FOUND, "No kernel for node '%s' (op %s) on %s; %s", n->name,
                         n->op_name, dev->name, avail);
    g_free(avail);
    return st;
  }
  return weft__kernel_instance_new(n, kernel, dev, out);
}

static weft_status_t *instantiate_kernels(weft_session_t *s, GPtrArray *nodes,
                                          weft__kernel_instance_t **out) {
  weft_device_options_t dopts = {sizeof(dopts), s->opts->gpu_memory_fraction,
                                 s->opts->gpu_allow_growth};
  for (guint k = 0; k < nodes->len; k++) {
    const weft_node_t *n = nodes->pdata[k];
    weft__kernel_instance_t *inst = g_hash_table_lookup(s->kernels, n);
    if (!inst) {
      const char *dev_name = g_hash_table_lookup(s->placement, n->name);
      weft__device_t *dev = dev_name ? weft__device_find(dev_name) : NULL;
      if (!dev) {
        return weft_status_new(WEFT_INTERNAL, "Node '%s' was placed on unknown device '%s'",
                               n->name, dev_name ? dev_name : "");
      }
      weft_status_t *st = weft__kernel_instance_for_node(n, dev, &dopts, &inst);
      if (st) return st;
      g_hash_table_insert(s->kernels, (gpointer)n, inst);
    }
    out[k] = inst;
  }
  return NULL;
}

/* Appends "name:index," without printf: this runs on every step. */
static void append_tensor_key(GString *sig, const char *name, int index) {
  char digits[16];
  int n = 0;
  unsigned v = index < 0 ? 0u : (unsigned)index;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n < (int)sizeof digits);
  g_string_append(sig, name);
  g_string_append_c(sig, ':');
  while (n > 0) g_string_append_c(sig, digits[--n]);
  g_string_append_c(sig, ',');
}

char *weft__step_spec_signature(const weft__step_spec_t *spec) {
  GString *sig = g_string_sized_new(64);
  for (int k = 0; k < spec->n_feeds; k++)
    append_tensor_key(sig, spec->feeds[k].node->name, spec->feeds[k].index);
  g_string_append_c(sig, '|');
  for (int k = 0; k < spec->n_fetches; k++)
    append_tensor_key(sig, spec->fetches[k].node->name, spec->fetches[k].index);
  g_string_append_c(sig, '|');
  for (int k = 0; k < spec->n_targets; k++) {
    g_string_append(sig, spec->targets[k]->name);
    g_string_append_c(sig, ',');
  }
  return g_string_free(sig, FALSE);
}

static weft_status_t *build_plan(weft_session_t *s, const weft__step_spec_t *spec, plan_t **out) {
  GPtrArray *nodes = weft__step_needed_nodes(spec);
  weft_status_t *st = weft__check_unfed_placeholders(nodes);
  if (!st) st = place_new_nodes(s, nodes);
  weft__kernel_instance_t **kernels = g_new0(weft__kernel_instance_t *, nodes->len + 1);
  if (!st) st = instantiate_kernels(s, nodes, kernels);
  if (!st) {
    weft__executor_params_t p = {nodes,         kernels,         spec->feeds,
                                 spec->n_feeds, spec->fetches, spec->n_fetches, NULL};
    weft__executor_t *ex = NULL;
    st = weft__executor_new(&p, &ex);
    if (!st) {
      plan_t *plan = g_new0(plan_t, 1);
      plan->executor = ex;
      plan->n_feeds = spec->n_feeds;
      *out = plan;
    }
  }
  g_free(kernels);
  g_ptr_array_free(nodes, TRUE);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Resolving a step */

weft_status_t *weft__check_feed(const weft_node_t *node, int index, const char *name,
                                const weft_tensor_t *t) {
  if (!t) return weft_status_new(WEFT_INVALID_ARGUMENT, "Feed '%s' has no tensor", name);
  weft_dtype_t want = weft__dtype_base(node->output_types[index]);
  if (t->dtype != want) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Feed '%s': expected a tensor of type %s but got %s", name,
                           weft_dtype_name(want), weft_dtype_name(t->dtype));
  }
  const weft__shape_t declared = weft__node_shape(node, index), *shape = &declared;
  bool ok = shape->rank < 0 || shape->rank == t->rank;
  for (int k = 0; ok && shape->rank >= 0 && k < t->rank; k++)
    ok = shape->dims[k] < 0 || shape->dims[k] == t->dims[k];
  if (!ok) {
    char *want_s = weft__shape_to_string(shape->rank, shape->dims);
    char *have_s = weft__shape_to_string(t->rank, t->dims);
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                        "Feed '%s': cannot feed a value of shape %s to a tensor "
                                        "of shape %s", name, have_s, want_s);
    g_free(want_s);
    g_free(have_s);
    return st;
  }
  return NULL;
}

weft_status_t *weft__step_spec_resolve(weft_graph_t *graph, const char *const *feed_names,
                                       weft_tensor_t *const *feed_values, int n_feeds,
                                       const char *const *fetch_names, int n_fetches,
                                       const char *const *target_names, int n_targets,
                                       weft__step_spec_t *spec) {
  memset(spec, 0, sizeof *spec);
  if (n_feeds < 0 || n_fetches < 0 || n_targets < 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: negative count");
  }
  weft_status_t *st = NULL;
  spec->feeds = g_new0(weft__feed_t, n_feeds + 1);
  spec->fetches = g_new0(weft__fetch_t, n_fetches + 1);
  spec->targets = g_new0(weft_node_t *, n_targets + 1);
  spec->n_feeds = n_feeds;
  spec->n_fetches = n_fetches;
  spec->n_targets = n_targets;
  for (int k = 0; k < n_feeds && !st; k++) {
    weft_output_t o;
    st = weft_graph_find_output(graph, feed_names[k], &o);
    if (!st) st = weft__check_feed(o.node, o.index, feed_names[k], feed_values[k]);
    if (!st) {
      for (int j = 0; j < k && !st; j++) {
        if (spec->feeds[j].node == o.node && spec->feeds[j].index == o.index)
          st = weft_status_new(WEFT_INVALID_ARGUMENT, "Tensor '%s' is fed more than once", feed_names[k]);
      }
      spec->feeds[k].node = o.node;
      spec->feeds[k].index = o.index;
      spec->feeds[k].tensor = feed_values[k];
    }
  }
  for (int k = 0; k < n_fetches && !st; k++) {
    weft_output_t o;
    st = weft_graph_find_output(graph, fetch_names[k], &o);
    if (!st) {
      spec->fetches[k].node = o.node;
      spec->fetches[k].index = o.index;
    }
  }
  for (int k = 0; k < n_targets && !st; k++) {
    spec->targets[k] = weft_graph_node(graph, target_names[k]);
    if (!spec->targets[k]) {
      /* Accept "name:0" as TensorFlow does for targets given as tensors. */
      weft_output_t o;
      weft_status_t *again = weft_graph_find_output(graph, target_names[k], &o);
      if (again) {
        weft_status_free(again);
        st = weft_status_new(WEFT_NOT_FOUND, "Target '%s' is not a node in the graph",
                             target_names[k]);
      } else {
        spec->targets[k] = o.node;
      }
    }
  }
  if (!st && n_fetches == 0 && n_targets == 0) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "Nothing to run: no fetches and no targets");
  }
  if (st) weft__step_spec_clear(spec);
  return st;
}

void weft__step_spec_clear(weft__step_spec_t *spec) {
  g_free(spec->feeds);
  g_free(spec->fetches);
  g_free(spec->targets);
  memset(spec, 0, sizeof *spec);
}

/* ---------------------------------------------------------------------------------------------
 * Running */

weft_status_t *weft_session_run(weft_session_t *s, const char *const *feed_names,
                                weft_tensor_t *const *feed_values, int n_feeds,
                                const char *const *fetch_names, weft_tensor_t **fetch_outputs,
                                int n_fetches, const char *const *target_names, int n_targets) {
  return weft_session_run_with_options(s, NULL, feed_names, feed_values, n_feeds, fetch_names,
                                       fetch_outputs, n_fetches, target_names, n_targets, NULL);
}

static weft_status_t *run_step(weft_session_t *s, const weft_run_options_t *ro,
                               const char *const *feed_names, weft_tensor_t *const *feed_values,
                               int n_feeds, const char *const *fetch_names,
                               weft_tensor_t **fetch_outputs, int n_fetches,
                               const char *const *target_names, int n_targets,
                               weft_run_metadata_t *stats) {
  int64_t timeout_ms = ro ? ro->timeout_ms : 0;
  if (s->remote) {
    return weft__remote_session_run(s->remote, feed_names, feed_values, n_feeds, fetch_names,
                                    fetch_outputs, n_fetches, target_names, n_targets,
                                    timeout_ms, stats);
  }
  if (s->closed) return weft_status_new(WEFT_FAILED_PRECONDITION, "Session has been closed");
  weft__step_spec_t spec;
  weft_status_t *st = weft__step_spec_resolve(s->graph, feed_names, feed_values, n_feeds,
                                              fetch_names, n_fetches, target_names, n_targets,
                                              &spec);
  if (st) return st;

  plan_t *plan = NULL;
  char *sig = weft__step_spec_signature(&spec);
  g_mutex_lock(&s->lock);
  plan = g_hash_table_lookup(s->plans, sig);
  if (!plan) {
    st = build_plan(s, &spec, &plan);
    if (!st) g_hash_table_insert(s->plans, sig, plan);
    else g_free(sig);
  } else {
    g_free(sig);
  }
  g_mutex_unlock(&s->lock);
  if (!st) {
    weft__run_args_t args = {feed_values, s->inter_pool, s->intra_pool, s->resources, NULL, NULL,
                             stats, timeout_ms > 0 ? g_get_monotonic_time() + timeout_ms * 1000
                                                   : 0};
    st = weft__executor_run(plan->executor, &args, fetch_outputs);
  }
  weft__step_spec_clear(&spec);
  return st;
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
  weft_status_t *st = run_step(s, ro, feed_names, feed_values, n_feeds, fetch_names,
                               fetch_outputs, n_fetches, target_names, n_targets,
                               trace ? meta : NULL);
  if (st || !metadata) weft_run_metadata_free(meta);
  else *metadata = meta;
  return st;
}

weft_status_t *weft_session_close(weft_session_t *s) {
  if (!s) return NULL;
  if (s->remote) return weft__remote_session_close(s->remote);
  if (s->closed) return NULL;
  g_mutex_lock(&s->lock);
  s->closed = true;
  g_hash_table_remove_all(s->plans);
  g_hash_table_remove_all(s->kernels);
  weft__resource_mgr_clear(s->resources, NULL, 0);
  g_mutex_unlock(&s->lock);
  return NULL;
}

void weft_session_free(weft_session_t *s) {
  if (!s) return;
  if (s->remote) {
    weft__remote_session_free(s->remote);
    g_free(s);
    return;
  }
  weft_status_free(weft_session_close(s));
  g_hash_table_destroy(s->plans);
  g_hash_table_destroy(s->kernels);
  g_hash_table_destroy(s->placement);
  weft__resource_mgr_free(s->resources);
  if (s->own_pools) {
    weft__threadpool_free(s->inter_pool);
    weft__threadpool_free(s->intra_pool);
  }
  weft_session_options_free(s->opts);
  g_mutex_clear(&s->lock);
  g_free(s);
}
