/* The local session kind (targets "" and "local"), TensorFlow's DirectSession: resolves a step's
 * feeds, fetches and targets, prunes the graph to what they need (both with exec's planning,
 * plan_internal.h), places new nodes on this process's devices (placement is kept across runs),
 * instantiates kernels once per node, and caches one executor per feed/fetch/target signature.
 * Variables live in the session's resource manager. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/constfold_internal.h"
#include "../exec/fuse_internal.h"
#include "../exec/plan_internal.h"
#include "../placement/placement_internal.h"
#include "session_internal.h"

typedef struct plan {
  weft__executor_t *executor;
  weft__fusion_t *fusion; /* the fused chains the executor runs, or NULL */
  weft__constfold_t *folded; /* the Consts of the folded nodes it runs, or NULL */
  int n_feeds;
} plan_t;

typedef struct local_session {
  weft_graph_t *graph;
  weft_session_options_t *opts;
  GMutex lock;
  GHashTable *placement;     /* node name -> device name */
  GHashTable *kernels;       /* weft_node_t* -> weft__kernel_instance_t* */
  weft__plan_cache_t *plans; /* of plan_t */
  weft__step_memo_t *memo;   /* recent name lists -> their plans in `plans` */
  weft__resource_mgr_t *resources;
  weft__threadpool_t *inter_pool;
  weft__threadpool_t *intra_pool;
  bool own_pools;
  gint closed; /* atomic; set under lock */
  /* The steps running now (weft__cancel_t*, under lock): close cancels them and waits for them
   * to end (idle_cond) before it frees the plans they run. */
  GPtrArray *running;
  GCond idle_cond;
} local_session_t;

static void plan_free(plan_t *p) {
  if (!p) return;
  weft__executor_free(p->executor);
  weft__fusion_free(p->fusion);
  weft__constfold_free(p->folded);
  g_free(p);
}

static bool local_accepts(const char *target) {
  return !*target || strcmp(target, "local") == 0;
}

static weft_status_t *local_create(weft_graph_t *graph, const weft_session_options_t *opts,
                                   void **impl) {
  weft__plugins_ensure_loaded();
  local_session_t *s = g_new0(local_session_t, 1);
  s->graph = graph;
  s->opts = weft__session_options_copy(opts);
  g_mutex_init(&s->lock);
  s->placement = weft__placement_new();
  s->kernels = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                     (GDestroyNotify)weft__kernel_instance_free);
  s->plans = weft__plan_cache_new((GDestroyNotify)plan_free);
  s->memo = weft__step_memo_new();
  s->resources = weft__resource_mgr_new();
  s->running = g_ptr_array_new();
  g_cond_init(&s->idle_cond);
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
  *impl = s;
  return NULL;
}

static weft__resource_mgr_t *local_resources(void *impl) {
  local_session_t *s = impl;
  return g_atomic_int_get(&s->closed) ? NULL : s->resources;
}

static const char *local_node_device(void *impl, const char *node_name) {
  local_session_t *s = impl;
  g_mutex_lock(&s->lock);
  const char *d = g_hash_table_lookup(s->placement, node_name);
  g_mutex_unlock(&s->lock);
  return d ? d : "";
}

/* ---------------------------------------------------------------------------------------------
 * Planning: placement and kernels are this kind's; resolving, pruning and the cache are exec's. */

/* Prints TensorFlow's log_device_placement lines "name: (Op): device" for `nodes` to stderr. */
static void log_placement(GPtrArray *nodes, GHashTable *placement) {
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

/* The limit of "TYPE=N" entries for device type `type` (gpu_like devices also match "GPU"), or
 * -1 for none. */
static int device_limit(char **counts, const char *type, bool gpu_like) {
  int limit = -1;
  for (char **e = counts; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    size_t len = (size_t)(eq - *e);
    bool match = (strlen(type) == len && g_ascii_strncasecmp(*e, type, len) == 0) ||
                 (gpu_like && len == 3 && g_ascii_strncasecmp(*e, "GPU", 3) == 0);
    if (match) limit = atoi(eq + 1);
  }
  return limit;
}

/* Whether device k (of placement order) is the session's to use: TensorFlow's device_count
 * keeps the first N of a type, visible_device_list the gpu-like devices it lists (by index among
 * the gpu-like ones). */
static bool device_visible(const weft_session_options_t *o, int k, const weft__device_t *d) {
  if (!o->device_counts && !o->visible_gpus) return true;
  int same_type = 0, gpu_index = 0;
  for (int j = 0; j < k; j++) {
    const weft__device_t *e = weft__device_at(j);
    if (strcmp(e->type, d->type) == 0) same_type++;
    if (e->gpu_like) gpu_index++;
  }
  int limit = device_limit(o->device_counts, d->type, d->gpu_like);
  if (limit >= 0 && same_type >= limit) return false;
  if (d->gpu_like && limit >= 0 && gpu_index >= limit) return false;
  if (d->gpu_like && o->visible_gpus) {
    bool listed = false;
    char **ids = g_strsplit(o->visible_gpus, ",", -1);
    for (char **id = ids; *id; id++) {
      char *end = NULL;
      long v = strtol(g_strstrip(*id), &end, 10);
      if (end && *end == '\0' && end != *id && v == gpu_index) listed = true;
    }
    g_strfreev(ids);
    if (!listed) return false;
  }
  return true;
}

static weft_status_t *place_new_nodes(local_session_t *s, GPtrArray *needed) {
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
  int n_all = weft__device_count();
  weft__place_device_t *devices = g_new0(weft__place_device_t, n_all > 0 ? n_all : 1);
  int n_devices = 0;
  for (int k = 0; k < n_all; k++) {
    weft__device_t *d = weft__device_at(k);
    if (!device_visible(s->opts, k, d)) continue;
    weft__place_device_t *p = &devices[n_devices++];
    p->name = d->name;
    p->job = "localhost";
    p->replica = 0;
    p->task = 0;
    p->type = d->type;
    p->id = d->ordinal;
    p->gpu_like = d->gpu_like;
    p->emulated = d->emulated;
    p->priority = d->priority;
  }
  weft__placer_options_t popts = {s->opts->allow_soft_placement, "localhost", 0, 0};
  weft_status_t *st = NULL;
  if (n_all == 0) {
    st = weft_status_new(WEFT_FAILED_PRECONDITION,
                         "No devices: no backend plugin was loaded (see `weft plugins`; set "
                         "WEFT_PLUGIN_PATH to the folder holding libweft-cpu.so)");
  } else if (n_devices == 0) {
    st = weft_status_new(WEFT_FAILED_PRECONDITION,
                         "No devices: the session's device_count / visible_device_list hide "
                         "all %d of this process's devices", n_all);
  } else {
    st = weft__place(todo, devices, n_devices, &popts, s->placement);
  }
  if (!st && s->opts->log_device_placement) log_placement(todo, s->placement);
  g_free(devices);
  g_ptr_array_free(todo, TRUE);
  return st;
}

static weft_status_t *instantiate_kernels(local_session_t *s, GPtrArray *nodes,
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

/* The plan cache's build function: prune, place what is new, instantiate what is new, and build
 * the executor. */
static weft_status_t *build_plan(void *user_data, const weft__step_spec_t *spec, void **out) {
  local_session_t *s = user_data;
  GPtrArray *nodes = NULL;
  weft_status_t *st = weft__step_prune(spec, &nodes);
  if (st) return st;
  st = place_new_nodes(s, nodes);
  weft__kernel_instance_t **kernels = g_new0(weft__kernel_instance_t *, nodes->len + 1);
  if (!st) st = instantiate_kernels(s, nodes, kernels);
  if (!st) {
    weft__executor_params_t p = {nodes,         kernels,         spec->feeds,
                                 spec->n_feeds, spec->fetches, spec->n_fetches, NULL, NULL, NULL};
    weft_device_options_t dopts = {sizeof(dopts), s->opts->gpu_memory_fraction,
                                   s->opts->gpu_allow_growth};
    /* Constant folding first: the chains and contractions are then found among what is left. */
    weft__constfold_env_t fenv = {s->intra_pool, s->resources, &dopts};
    GPtrArray *folded_nodes = NULL;
    weft__kernel_instance_t **folded_kernels = NULL;
    weft__constfold_t *folded = NULL;
    st = weft__constfold(&p, (const weft_node_t *const *)spec->targets, spec->n_targets, &fenv,
                         &folded_nodes, &folded_kernels, &folded);
    if (folded) {
      p.nodes = folded_nodes;
      p.kernels = folded_kernels;
    }
    GPtrArray *fused_nodes = NULL;
    weft__kernel_instance_t **fused_kernels = NULL;
    weft__fusion_t *fusion = NULL;
    if (!st)
      st = weft__fuse_elementwise(&p, (const weft_node_t *const *)spec->targets, spec->n_targets,
                                  &dopts, &fused_nodes, &fused_kernels, &fusion);
    if (fusion) {
      p.nodes = fused_nodes;
      p.kernels = fused_kernels;
      p.fallbacks = weft__fusion_fallbacks(fusion);
    }
    /* The executor reads both passes' aliases (read only while it is built). */
    GHashTable *aliases = NULL;
    if (folded || fusion) {
      aliases = g_hash_table_new(g_direct_hash, g_direct_equal);
      GHashTable *from[2] = {weft__constfold_aliases(folded), weft__fusion_aliases(fusion)};
      for (int a = 0; a < 2; a++) {
        if (!from[a]) continue;
        GHashTableIter it;
        gpointer key, value;
        g_hash_table_iter_init(&it, from[a]);
        while (g_hash_table_iter_next(&it, &key, &value)) g_hash_table_insert(aliases, key, value);
      }
      p.aliases = aliases;
    }
    weft__executor_t *ex = NULL;
    if (!st) st = weft__executor_new(&p, &ex);
    if (aliases) g_hash_table_destroy(aliases);
    if (!st) {
      plan_t *plan = g_new0(plan_t, 1);
      plan->executor = ex;
      plan->fusion = fusion;
      plan->folded = folded;
      plan->n_feeds = spec->n_feeds;
      *out = plan;
    } else {
      weft__fusion_free(fusion);
      weft__constfold_free(folded);
    }
    if (fused_nodes) g_ptr_array_free(fused_nodes, TRUE);
    g_free(fused_kernels);
    if (folded_nodes) g_ptr_array_free(folded_nodes, TRUE);
    g_free(folded_kernels);
  }
  g_free(kernels);
  g_ptr_array_free(nodes, TRUE);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Running */

/* Checks each feed against the output it replaces (the memo's resolution of its name). */
static weft_status_t *check_feeds(const weft__feed_t *feeds, const char *const *feed_names,
                                  weft_tensor_t *const *feed_values, int n_feeds) {
  for (int k = 0; k < n_feeds; k++)
    WEFT_RETURN_IF_ERROR(
        weft__check_feed(feeds[k].node, feeds[k].index, feed_names[k], feed_values[k]));
  return NULL;
}

static weft_status_t *local_run(void *impl, const char *const *feed_names,
                                weft_tensor_t *const *feed_values, int n_feeds,
                                const char *const *fetch_names, weft_tensor_t **fetch_outputs,
                                int n_fetches, const char *const *target_names, int n_targets,
                                int64_t timeout_ms, weft_run_metadata_t *stats) {
  local_session_t *s = impl;
  if (g_atomic_int_get(&s->closed))
    return weft_status_new(WEFT_FAILED_PRECONDITION, "Session has been closed");
  if (n_feeds < 0 || n_fetches < 0 || n_targets < 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: negative count");
  }
  weft_status_t *st = NULL;
  weft__cancel_t cancel;
  weft__cancel_init(&cancel);
  /* A step that repeats a recent one's names takes its plan from the memo; its feeds are
   * still checked against the outputs they replace, as resolving them would. */
  const weft__feed_t *memo_feeds = NULL;
  void *plan = NULL;
  g_mutex_lock(&s->lock);
  /* Again under the lock: a close in progress waits only for the steps it finds registered. */
  if (s->closed) st = weft_status_new(WEFT_FAILED_PRECONDITION, "Session has been closed");
  if (!st) {
    plan = weft__step_memo_find(s->memo, s->graph, feed_names, n_feeds, fetch_names,
                                n_fetches, target_names, n_targets, &memo_feeds);
    if (plan) st = check_feeds(memo_feeds, feed_names, feed_values, n_feeds);
    if (plan && !st) g_ptr_array_add(s->running, &cancel);
  }
  g_mutex_unlock(&s->lock);

  if (!st && !plan) {
    weft__step_spec_t spec;
    st = weft__step_spec_resolve(s->graph, feed_names, feed_values, n_feeds, fetch_names,
                                 n_fetches, target_names, n_targets, &spec);
    if (!st) {
      g_mutex_lock(&s->lock);
      if (s->closed) st = weft_status_new(WEFT_FAILED_PRECONDITION, "Session has been closed");
      if (!st) st = weft__plan_cache_get(s->plans, &spec, build_plan, s, &plan);
      if (!st) {
        weft__step_memo_store(s->memo, s->graph, feed_names, fetch_names, target_names, &spec,
                              plan);
        g_ptr_array_add(s->running, &cancel);
      }
      g_mutex_unlock(&s->lock);
      weft__step_spec_clear(&spec);
    }
  }
  if (!st) {
    weft__run_args_t args = {feed_values, s->inter_pool, s->intra_pool, s->resources, NULL, NULL,
                             stats, timeout_ms > 0 ? g_get_monotonic_time() + timeout_ms * 1000
                                                   : 0, &cancel};
    st = weft__executor_run(((plan_t *)plan)->executor, &args, fetch_outputs);
    g_mutex_lock(&s->lock);
    g_ptr_array_remove_fast(s->running, &cancel);
    /* Only a close waits (it sets closed first): a broadcast costs a futex call per step. */
    if (s->closed && s->running->len == 0) g_cond_broadcast(&s->idle_cond);
    g_mutex_unlock(&s->lock);
  }
  weft__cancel_clear(&cancel);
  return st;
}

static weft_status_t *local_close(void *impl) {
  local_session_t *s = impl;
  g_mutex_lock(&s->lock);
  if (s->closed) {
    g_mutex_unlock(&s->lock);
    return NULL;
  }
  g_atomic_int_set(&s->closed, 1);
  /* Steps in flight end at their next node with TensorFlow's words for a step whose session
   * closed under it (DirectSession::Run); their plans are freed only once they have. */
  if (s->running->len > 0) {
    weft_status_t *why = weft_status_new(WEFT_CANCELLED, "Run call was cancelled");
    for (guint k = 0; k < s->running->len; k++) weft__cancel_request(s->running->pdata[k], why);
    weft_status_free(why);
  }
  while (s->running->len > 0) g_cond_wait(&s->idle_cond, &s->lock);
  weft__step_memo_clear(s->memo);
  weft__plan_cache_clear(s->plans);
  g_hash_table_remove_all(s->kernels);
  weft__resource_mgr_clear(s->resources, NULL, 0);
  g_mutex_unlock(&s->lock);
  return NULL;
}

static void local_free(void *impl) {
  local_session_t *s = impl;
  weft_status_free(local_close(s));
  weft__step_memo_free(s->memo);
  weft__plan_cache_free(s->plans);
  g_hash_table_destroy(s->kernels);
  g_hash_table_destroy(s->placement);
  weft__resource_mgr_free(s->resources);
  if (s->own_pools) {
    weft__threadpool_free(s->inter_pool);
    weft__threadpool_free(s->intra_pool);
  }
  weft_session_options_free(s->opts);
  g_ptr_array_free(s->running, TRUE);
  g_cond_clear(&s->idle_cond);
  g_mutex_clear(&s->lock);
  g_free(s);
}

const weft__session_kind_t weft__local_session_kind = {
    .name = "local",
    .usage = "\"\" or \"local\" for an in-process session",
    .accepts = local_accepts,
    .create = local_create,
    .run = local_run,
    .node_device = local_node_device,
    .close = local_close,
    .free_impl = local_free,
    .resources = local_resources,
};
