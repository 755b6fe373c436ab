/* The worker service of one task: reports the task's devices (GetStatus), imports the partition
 * graphs a master registers and builds their executors with the same exec code local sessions
 * use, runs one step of a partition per RunGraph, answers RecvTensor from its steps' rendezvous,
 * and aborts or cleans up steps. Every session on the task shares one resource manager, so
 * variables on a ps outlive and are shared by the clients that name them.
 *
 * Devices: the process's devices are registered as /job:localhost/...; a worker uses aliases of
 * them named in its task's namespace (/job:ps/replica:0/task:0/device:CPU:0) that share the
 * backend handle, so errors, variables and logs say where in the cluster things are. Aliases are
 * kept for the process lifetime (tensors may still point at them after a server is gone).
 *
 * Threads: a partition whose _Recv kernels block on their RecvTensor would starve a shared pool,
 * so each execution slot of a graph (one per concurrent RunGraph) has its own inter-op pool with
 * a thread per _Recv plus two: blocked receives can never stop the kernels that feed this task's
 * own sends. */
#include "distributed_internal.h"

#include <string.h>

#include "../graph/graphdef_internal.h"
#include "../placement/placement_internal.h"

/* Inter-op threads of a slot besides one per _Recv. */
#define SLOT_BASE_THREADS 2
/* Idle execution slots a graph keeps for its next steps. A burst of concurrent steps (hundreds
 * blocked on a frozen peer) makes one slot each; keeping them all would hold the burst's
 * executors until the graph is deregistered, scattered over the heap where their pages stay
 * resident (docs/security.md, "what the attacks measured"). Steady concurrency up to this many
 * steps reuses its slots. */
#define MAX_IDLE_SLOTS 4

typedef struct slot {
  weft__step_t *step; /* the step being run; read by the slot's _Send/_Recv kernels */
  weft__executor_t *executor;
  weft__kernel_instance_t **xfer; /* the slot's own _Send/_Recv instances */
  int n_xfer;
  weft__threadpool_t *pool;
} slot_t;

typedef struct reg_graph {
  gint refcount;
  char *handle;
  weft_graph_t *graph;
  GPtrArray *nodes;                  /* weft_node_t* the executor runs */
  weft__kernel_instance_t **kernels; /* per node; NULL for _Send/_Recv */
  weft__device_t **devices;          /* per node */
  weft__feed_t *feeds;
  int n_feeds;
  char **feed_names;
  weft__fetch_t *fetches;
  int n_fetches;
  GHashTable *peers; /* task name -> Weft__TaskAddress* */
  weft__security_t *security; /* how its _Recv kernels reach the peers (a reference) */
  grpc_completion_queue *queue; /* where their RecvTensor calls wait (the server's; borrowed) */
  int n_recv;
  GMutex lock;
  GPtrArray *free_slots;
  GPtrArray *slots; /* every slot, for freeing */
} reg_graph_t;

struct weft__worker {
  char *job;
  int task;
  char *task_name;
  guint64 incarnation;
  int64_t default_step_timeout_ms;
  weft__resource_mgr_t *resources;
  weft__step_table_t *steps;
  GMutex lock;
  GHashTable *graphs; /* handle -> reg_graph_t* */
  bool shut_down;
  weft__security_t *security; /* TLS material and token for the other tasks; may be NULL */
  grpc_completion_queue *queue; /* the server's completion queue (borrowed); NULL: none */
  /* The cluster it belongs to: a graph's peers and the devices its _Send/_Recv name must be
   * tasks of it (NULL: not checked, for workers made without a server). */
  weft_cluster_spec_t *spec;
  int max_graphs; /* registered at once (--max_registered_graphs) */
  /* Drops steps no RunGraph holds once idle (--step_idle_timeout_ms) even when no new step
   * comes to sweep them. Under `lock`. */
  GThread *sweeper;
  GCond sweep_wake;
  bool sweep_stop;
};

/* ---------------------------------------------------------------------------------------------
 * Device aliases */

static weft__device_t *device_alias(weft__device_t *orig, const char *name) {
  static GMutex lock;
  static GHashTable *aliases; /* name -> weft__device_t*, never freed */
  g_mutex_lock(&lock);
  if (!aliases) aliases = g_hash_table_new(g_str_hash, g_str_equal);
  weft__device_t *a = g_hash_table_lookup(aliases, name);
  if (!a) {
    a = g_new0(weft__device_t, 1);
    a->name = g_strdup(name);
    a->type = orig->type;
    a->ordinal = orig->ordinal;
    a->backend = orig->backend;
    a->props = orig->props;
    a->gpu_like = orig->gpu_like;
    a->emulated = orig->emulated;
    a->priority = orig->priority;
    g_mutex_init(&a->open_lock);
    g_mutex_init(&a->refs_lock);
    g_hash_table_insert(aliases, a->name, a);
  }
  g_mutex_unlock(&lock);
  if (!a->handle) {
    /* The backend opens a device once; the alias shares what it opened. */
    weft_status_t *st = weft__device_open(orig, NULL);
    if (st) {
      weft__log(WEFT_LOG_WARNING, "worker", "%s", weft_status_message(st));
      weft_status_free(st);
    }
    g_mutex_lock(&a->open_lock);
    a->handle = orig->handle;
    g_mutex_unlock(&a->open_lock);
  }
  return a;
}

static char *cluster_device_name(const weft__worker_t *w, const weft__device_t *d) {
  return g_strdup_printf("/job:%s/replica:0/task:%d/device:%s:%d", w->job, w->task, d->type,
                         d->ordinal);
}

/* The alias of this task's device named by a node's assigned device. */
static weft_status_t *resolve_device(weft__worker_t *w, const weft_node_t *node,
                                     weft__device_t **out) {
  const char *name = node->requested_device ? node->requested_device : "";
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  weft_status_t *st = weft__device_spec_parse(name, &spec);
  bool ours = !st && spec.job && strcmp(spec.job, w->job) == 0 && spec.task == w->task &&
              spec.replica <= 0 && spec.type && spec.id >= 0;
  weft__device_t *found = NULL;
  for (int k = 0; ours && k < weft__device_count() && !found; k++) {
    weft__device_t *d = weft__device_at(k);
    if (d && g_ascii_strcasecmp(d->type, spec.type) == 0 && d->ordinal == spec.id) found = d;
  }
  weft__device_spec_clear(&spec);
  weft_status_free(st);
  if (!found) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s' (%s) is assigned to device '%s', which is not a device of "
                           "task %s",
                           node->name, node->op_name, name, w->task_name);
  }
  char *full = cluster_device_name(w, found);
  *out = device_alias(found, full);
  g_free(full);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The worker */

weft__worker_t *weft__worker_new(const char *job, int task, int64_t default_step_timeout_ms) {
  weft__sendrecv_register_kernels();
  weft__worker_t *w = g_new0(weft__worker_t, 1);
  w->job = g_strdup(job);
  w->task = task;
  w->task_name = weft__task_name(job, task);
  do {
    w->incarnation = ((guint64)g_random_int() << 32) | g_random_int();
  } while (w->incarnation == 0);
  w->default_step_timeout_ms =
      default_step_timeout_ms > 0 ? default_step_timeout_ms : WEFT_DEFAULT_STEP_TIMEOUT_MS;
  w->resources = weft__resource_mgr_new();
  w->steps = weft__step_table_new();
  g_mutex_init(&w->lock);
  g_cond_init(&w->sweep_wake);
  w->graphs = g_hash_table_new(g_str_hash, g_str_equal);
  w->max_graphs = WEFT_DEFAULT_MAX_REGISTERED_GRAPHS;
  return w;
}

static gpointer sweep_main(gpointer data) {
  weft__worker_t *w = data;
  /* A quarter of the limit between sweeps: a step goes at most 25% past it. */
  gint64 period_us = weft__step_table_idle_limit_us(w->steps) / 4;
  period_us = CLAMP(period_us, G_USEC_PER_SEC / 10, 15 * G_USEC_PER_SEC);
  g_mutex_lock(&w->lock);
  while (!w->sweep_stop) {
    gint64 until = g_get_monotonic_time() + period_us;
    while (!w->sweep_stop && g_cond_wait_until(&w->sweep_wake, &w->lock, until)) {
    }
    if (w->sweep_stop) break;
    g_mutex_unlock(&w->lock);
    weft__step_table_sweep(w->steps);
    g_mutex_lock(&w->lock);
  }
  g_mutex_unlock(&w->lock);
  return NULL;
}

void weft__worker_set_cluster(weft__worker_t *w, const weft_cluster_spec_t *spec, int max_graphs,
                              int64_t step_idle_timeout_ms) {
  weft_cluster_spec_free(w->spec);
  w->spec = spec ? weft__cluster_spec_copy(spec) : NULL;
  w->max_graphs = max_graphs > 0 ? max_graphs : WEFT_DEFAULT_MAX_REGISTERED_GRAPHS;
  weft__step_table_set_idle_limit(w->steps, step_idle_timeout_ms);
  if (w->sweeper) return;
  GError *error = NULL;
  w->sweeper = g_thread_try_new("weft-step-sweep", sweep_main, w, &error);
  if (!w->sweeper) {
    /* New steps still sweep the table, at most once a second. */
    weft__log(WEFT_LOG_WARNING, "worker", "No thread to drop idle steps on %s: %s",
              w->task_name, error->message);
    g_error_free(error);
  }
}

void weft__worker_set_security(weft__worker_t *w, weft__security_t *security) {
  weft__security_t *old = w->security;
  w->security = weft__security_ref(security);
  weft__security_unref(old);
}

void weft__worker_set_queue(weft__worker_t *w, grpc_completion_queue *cq) { w->queue = cq; }

const char *weft__worker_task(const weft__worker_t *w) { return w->task_name; }
guint64 weft__worker_incarnation(const weft__worker_t *w) { return w->incarnation; }

static void slot_free(slot_t *slot) {
  weft__executor_free(slot->executor);
  for (int k = 0; k < slot->n_xfer; k++) weft__xfer_instance_free(slot->xfer[k]);
  g_free(slot->xfer);
  weft__threadpool_free(slot->pool);
  g_free(slot);
}

static void reg_graph_unref(reg_graph_t *g) {
  if (!g || !g_atomic_int_dec_and_test(&g->refcount)) return;
  for (guint k = 0; k < g->slots->len; k++) slot_free(g->slots->pdata[k]);
  g_ptr_array_free(g->slots, TRUE);
  g_ptr_array_free(g->free_slots, TRUE);
  for (guint k = 0; g->kernels && k < g->nodes->len; k++) weft__kernel_instance_free(g->kernels[k]);
  g_free(g->kernels);
  g_free(g->devices);
  if (g->nodes) g_ptr_array_free(g->nodes, TRUE);
  g_free(g->feeds);
  g_strfreev(g->feed_names);
  g_free(g->fetches);
  g_hash_table_destroy(g->peers);
  weft__security_unref(g->security);
  weft_graph_free(g->graph);
  g_mutex_clear(&g->lock);
  g_free(g->handle);
  g_free(g);
}

void weft__worker_shutdown(weft__worker_t *w) {
  g_mutex_lock(&w->lock);
  w->shut_down = true;
  w->sweep_stop = true;
  GThread *sweeper = w->sweeper;
  w->sweeper = NULL;
  g_cond_broadcast(&w->sweep_wake);
  g_mutex_unlock(&w->lock);
  if (sweeper) g_thread_join(sweeper);
  weft_status_t *why = weft_status_new(WEFT_UNAVAILABLE, "Task %s is shutting down", w->task_name);
  weft__step_table_shutdown(w->steps, why);
  weft_status_free(why);
}

void weft__worker_free(weft__worker_t *w) {
  if (!w) return;
  weft__worker_shutdown(w);
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, w->graphs);
  while (g_hash_table_iter_next(&it, NULL, &value)) reg_graph_unref(value);
  g_hash_table_destroy(w->graphs);
  weft__step_table_free(w->steps);
  weft__resource_mgr_free(w->resources);
  g_mutex_clear(&w->lock);
  g_cond_clear(&w->sweep_wake);
  weft_cluster_spec_free(w->spec);
  weft__security_unref(w->security);
  g_free(w->job);
  g_free(w->task_name);
  g_free(w);
}

static weft_status_t *check_incarnation(weft__worker_t *w, guint64 expected) {
  if (expected == 0 || expected == w->incarnation) return NULL;
  return weft_status_new(WEFT_ABORTED,
                         "Task %s was restarted: its incarnation is %016" G_GINT64_MODIFIER
                         "x but the master expected %016" G_GINT64_MODIFIER
                         "x; its graphs and variables are gone, so create the session again",
                         w->task_name, w->incarnation, expected);
}

/* ---------------------------------------------------------------------------------------------
 * GetStatus */

void weft__worker_get_status(weft__worker_t *w, Weft__GetStatusResponse *resp) {
  weft__get_status_response__init(resp);
  int n = weft__device_count();
  resp->device = g_new0(Weft__DeviceAttributes *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++) {
    const weft__device_t *d = weft__device_at(k);
    if (!d) continue;
    Weft__DeviceAttributes *a = g_new0(Weft__DeviceAttributes, 1);
    weft__device_attributes__init(a);
    a->name = cluster_device_name(w, d);
    a->device_type = g_strdup(d->type);
    a->id = d->ordinal;
    a->gpu_like = d->gpu_like;
    a->emulated = d->emulated;
    a->priority = d->priority;
    a->description = g_strdup(d->props.description);
    a->memory_bytes = d->props.memory_bytes;
    a->job = g_strdup(w->job);
    a->replica = 0;
    a->task = w->task;
    resp->device[resp->n_device++] = a;
  }
  resp->incarnation = w->incarnation;
  resp->task = g_strdup(w->task_name);
}

void weft__device_attributes_free(Weft__DeviceAttributes *a) {
  if (!a) return;
  g_free(a->name);
  g_free(a->device_type);
  g_free(a->description);
  g_free(a->job);
  g_free(a);
}

void weft__get_status_clear(Weft__GetStatusResponse *resp) {
  for (size_t k = 0; k < resp->n_device; k++) weft__device_attributes_free(resp->device[k]);
  g_free(resp->device);
  g_free(resp->task);
  weft__get_status_response__init(resp);
}

/* ---------------------------------------------------------------------------------------------
 * RegisterGraph */

static void task_address_free(Weft__TaskAddress *a) {
  g_free(a->task);
  g_free(a->address);
  g_free(a);
}

static weft_status_t *resolve_names(weft_graph_t *graph, char *const *names, size_t n,
                                    const char *what, weft__feed_t *feeds,
                                    weft__fetch_t *fetches) {
  for (size_t k = 0; k < n; k++) {
    weft_output_t o;
    weft_status_t *st = weft_graph_find_output(graph, names[k], &o);
    if (st) return weft_status_prefix(st, "RegisterGraph: %s %zu", what, k);
    if (feeds) {
      feeds[k].node = o.node;
      feeds[k].index = o.index;
    } else {
      fetches[k].node = o.node;
      fetches[k].index = o.index;
    }
  }
  return NULL;
}

static weft_status_t *slot_new(reg_graph_t *g, slot_t **out) {
  slot_t *slot = g_new0(slot_t, 1);
  weft__kernel_instance_t **kernels = g_new0(weft__kernel_instance_t *, g->nodes->len + 1);
  bool *inexpensive = g_new0(bool, g->nodes->len + 1);
  slot->xfer = g_new0(weft__kernel_instance_t *, g->nodes->len + 1);
  weft_status_t *st = NULL;
  for (guint k = 0; k < g->nodes->len && !st; k++) {
    const weft_node_t *node = g->nodes->pdata[k];
    if (g->kernels[k]) {
      kernels[k] = g->kernels[k];
      continue;
    }
    st = weft__xfer_instance_new(node, g->devices[k], &slot->step, g->peers, g->security,
                                 g->queue, &kernels[k]);
    if (!st) {
      slot->xfer[slot->n_xfer++] = kernels[k];
      inexpensive[k] = weft__xfer_is_group_follower(kernels[k]);
    }
  }
  if (!st) {
    weft__executor_params_t p = {g->nodes,   kernels,      g->feeds, g->n_feeds,
                                 g->fetches, g->n_fetches, inexpensive, NULL, NULL};
    st = weft__executor_new(&p, &slot->executor);
  }
  g_free(kernels);
  g_free(inexpensive);
  if (st) {
    slot_free(slot);
    return st;
  }
  slot->pool = weft__threadpool_new(g->n_recv + SLOT_BASE_THREADS, "weft-worker");
  *out = slot;
  return NULL;
}

/* The address the cluster spec gives the task named `task` ("/job:J/replica:0/task:T"), or
 * NULL when it names no task of the cluster. */
static const char *cluster_address(const weft__worker_t *w, const char *task) {
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  weft_status_t *st = weft__device_spec_parse(task ? task : "", &spec);
  const char *address = NULL;
  if (!st && spec.job && spec.task >= 0 && spec.replica <= 0)
    address = weft_cluster_spec_task_address(w->spec, spec.job, spec.task);
  weft_status_free(st);
  weft__device_spec_clear(&spec);
  return address;
}

/* A caller of RegisterGraph must not make this task connect to any address it likes: every
 * peer is a task of the cluster at the address the cluster spec gives it, and the devices a
 * _Send or _Recv names are on tasks of the cluster. */
static weft_status_t *check_cluster(weft__worker_t *w, const Weft__RegisterGraphRequest *req,
                                    weft_graph_t *graph) {
  if (!w->spec) return NULL;
  for (size_t k = 0; k < req->n_peer; k++) {
    const Weft__TaskAddress *p = req->peer[k];
    const char *address = cluster_address(w, p->task);
    if (!address) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "RegisterGraph on %s: peer '%s' is not a task of the cluster",
                             w->task_name, p->task ? p->task : "");
    }
    if (g_strcmp0(address, p->address) != 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "RegisterGraph on %s: peer %s is at '%s' in the cluster spec, not "
                             "'%s'",
                             w->task_name, p->task, address, p->address ? p->address : "");
    }
  }
  static const char *const device_attrs[] = {"send_device", "recv_device"};
  int n_nodes = weft_graph_num_nodes(graph);
  for (int k = 0; k < n_nodes; k++) {
    const weft_node_t *node = weft_graph_node_at(graph, k);
    if (!weft__is_xfer_op(node->op_name)) continue;
    for (int a = 0; a < 2; a++) {
      const weft__attr_value_t *v = weft__attrs_get(node->attrs, device_attrs[a]);
      const char *device = v && v->kind == WEFT_ATTR_STRING ? v->u.s.data : NULL;
      if (!device) continue; /* the kernel names what it misses */
      char *task = weft__task_of_device(device);
      bool known = task && cluster_address(w, task);
      g_free(task);
      if (!known) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "RegisterGraph on %s: node '%s' (%s) has %s '%s', which is not a "
                               "device of a task of the cluster",
                               w->task_name, node->name, node->op_name, device_attrs[a], device);
      }
    }
  }
  return NULL;
}

/* Imports and validates the partition; builds its kernels and a first execution slot. */
static weft_status_t *build_graph(weft__worker_t *w, const Weft__RegisterGraphRequest *req,
                                  reg_graph_t *g) {
  weft_status_t *st = weft__graph_import_graphdef_proto(g->graph, req->graph_def, NULL);
  if (st) return weft_status_prefix(st, "RegisterGraph on %s", w->task_name);
  st = check_cluster(w, req, g->graph);
  if (st) return st;
  for (size_t k = 0; k < req->n_peer; k++) {
    const Weft__TaskAddress *p = req->peer[k];
    if (!p->task || !p->address) continue;
    Weft__TaskAddress *copy = g_new0(Weft__TaskAddress, 1);
    weft__task_address__init(copy);
    copy->task = g_strdup(p->task);
    copy->address = g_strdup(p->address);
    copy->incarnation = p->incarnation;
    g_hash_table_replace(g->peers, copy->task, copy);
  }
  g->n_feeds = (int)req->n_feed;
  g->feeds = g_new0(weft__feed_t, req->n_feed + 1);
  g->feed_names = g_new0(char *, req->n_feed + 1);
  for (size_t k = 0; k < req->n_feed; k++) g->feed_names[k] = g_strdup(req->feed[k]);
  g->n_fetches = (int)req->n_fetch;
  g->fetches = g_new0(weft__fetch_t, req->n_fetch + 1);
  st = resolve_names(g->graph, req->feed, req->n_feed, "feed", g->feeds, NULL);
  if (!st) st = resolve_names(g->graph, req->fetch, req->n_fetch, "fetch", NULL, g->fetches);
  if (st) return st;

  g->nodes = g_ptr_array_new();
  int n_nodes = weft_graph_num_nodes(g->graph);
  for (int k = 0; k < n_nodes; k++) {
    weft_node_t *node = weft_graph_node_at(g->graph, k);
    if (!weft__node_fully_fed(g->feeds, g->n_feeds, node)) g_ptr_array_add(g->nodes, node);
  }
  st = weft__check_unfed_placeholders(g->nodes);
  if (st) return weft_status_prefix(st, "RegisterGraph on %s", w->task_name);
  g->kernels = g_new0(weft__kernel_instance_t *, g->nodes->len + 1);
  g->devices = g_new0(weft__device_t *, g->nodes->len + 1);
  weft_device_options_t dopts = {sizeof(dopts), 0.0, 0};
  for (guint k = 0; k < g->nodes->len && !st; k++) {
    const weft_node_t *node = g->nodes->pdata[k];
    st = resolve_device(w, node, &g->devices[k]);
    if (st) break;
    if (weft__is_xfer_op(node->op_name)) {
      if (strcmp(node->op_name, "_Recv") == 0) g->n_recv++;
      continue;
    }
    st = weft__kernel_instance_for_node(node, g->devices[k], &dopts, &g->kernels[k]);
  }
  if (st) return st;
  if (g->n_recv > WEFT_MAX_RECV_PER_GRAPH) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "RegisterGraph on %s: the graph has %d _Recv nodes, each of which "
                           "takes a thread; a graph may have at most %d",
                           w->task_name, g->n_recv, WEFT_MAX_RECV_PER_GRAPH);
  }
  slot_t *slot = NULL;
  st = slot_new(g, &slot);
  if (st) return st;
  g_ptr_array_add(g->slots, slot);
  g_ptr_array_add(g->free_slots, slot);
  return NULL;
}

/* RESOURCE_EXHAUSTED when the task holds as many graphs as --max_registered_graphs allows. */
static weft_status_t *check_graph_count(weft__worker_t *w) {
  g_mutex_lock(&w->lock);
  guint n = g_hash_table_size(w->graphs);
  g_mutex_unlock(&w->lock);
  if (n < (guint)w->max_graphs) return NULL;
  return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                         "RegisterGraph on %s: %u graphs are registered, the most this task "
                         "allows (--max_registered_graphs %d); deregister graphs or close "
                         "sessions first",
                         w->task_name, n, w->max_graphs);
}

weft_status_t *weft__worker_register_graph(weft__worker_t *w,
                                           const Weft__RegisterGraphRequest *req,
                                           char **graph_handle) {
  *graph_handle = NULL;
  g_mutex_lock(&w->lock);
  bool down = w->shut_down;
  g_mutex_unlock(&w->lock);
  if (down) return weft_status_new(WEFT_UNAVAILABLE, "Task %s is shutting down", w->task_name);
  weft_status_t *st = check_incarnation(w, req->incarnation);
  if (st) return st;
  if (!req->graph_def) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "RegisterGraph on %s: no graph_def",
                           w->task_name);
  }
  st = check_graph_count(w);
  if (st) return st;
  reg_graph_t *g = g_new0(reg_graph_t, 1);
  g->refcount = 1;
  g->graph = weft_graph_new();
  g->peers = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                   (GDestroyNotify)task_address_free);
  g->security = weft__security_ref(w->security);
  g->queue = w->queue;
  g_mutex_init(&g->lock);
  g->slots = g_ptr_array_new();
  g->free_slots = g_ptr_array_new();
  st = build_graph(w, req, g);
  if (st) {
    reg_graph_unref(g);
    return st;
  }
  g->handle = g_strdup_printf("%08x%08x", g_random_int(), g_random_int());
  /* Counted again under the lock: concurrent registrations passed the first look together. */
  g_mutex_lock(&w->lock);
  bool full = g_hash_table_size(w->graphs) >= (guint)w->max_graphs;
  if (!full) g_hash_table_insert(w->graphs, g->handle, g);
  g_mutex_unlock(&w->lock);
  if (full) {
    reg_graph_unref(g);
    return check_graph_count(w);
  }
  *graph_handle = g_strdup(g->handle);
  return NULL;
}

weft_status_t *weft__worker_deregister_graph(weft__worker_t *w, const char *handle) {
  g_mutex_lock(&w->lock);
  reg_graph_t *g = handle ? g_hash_table_lookup(w->graphs, handle) : NULL;
  if (g) g_hash_table_remove(w->graphs, handle);
  g_mutex_unlock(&w->lock);
  if (!g) {
    return weft_status_new(WEFT_NOT_FOUND, "Graph handle '%s' is not registered on task %s",
                           handle ? handle : "", w->task_name);
  }
  /* Steps of the graph in flight end now, as TensorFlow's worker aborts their rendezvous,
   * instead of running on to their deadline for a graph nobody can run again. */
  GArray *running = g_array_new(FALSE, FALSE, sizeof(int64_t));
  g_mutex_lock(&g->lock);
  for (guint k = 0; k < g->slots->len; k++) {
    slot_t *slot = g->slots->pdata[k];
    int64_t id = slot->step ? weft__step_id(slot->step) : 0;
    if (slot->step) g_array_append_val(running, id);
  }
  g_mutex_unlock(&g->lock);
  for (guint k = 0; k < running->len; k++) {
    int64_t id = g_array_index(running, int64_t, k);
    weft_status_t *why = weft_status_new(WEFT_CANCELLED,
                                         "Step %" G_GINT64_FORMAT " was aborted: its graph %s "
                                         "was deregistered from task %s",
                                         id, g->handle, w->task_name);
    weft__worker_abort_step(w, id, why);
    weft_status_free(why);
  }
  g_array_free(running, TRUE);
  reg_graph_unref(g);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * RunGraph */

static void on_step_error(void *user_data, const weft_status_t *status) {
  weft__step_abort(user_data, status, false);
}

static weft_status_t *take_slot(reg_graph_t *g, slot_t **out) {
  g_mutex_lock(&g->lock);
  slot_t *slot = g->free_slots->len ? g_ptr_array_steal_index(g->free_slots, g->free_slots->len - 1)
                                    : NULL;
  g_mutex_unlock(&g->lock);
  if (!slot) {
    weft_status_t *st = slot_new(g, &slot);
    if (st) return st;
    g_mutex_lock(&g->lock);
    g_ptr_array_add(g->slots, slot);
    g_mutex_unlock(&g->lock);
  }
  *out = slot;
  return NULL;
}

static void give_slot(reg_graph_t *g, slot_t *slot) {
  g_mutex_lock(&g->lock);
  slot->step = NULL;
  bool keep = g->free_slots->len < MAX_IDLE_SLOTS;
  if (keep) {
    g_ptr_array_add(g->free_slots, slot);
  } else {
    g_ptr_array_remove_fast(g->slots, slot);
  }
  g_mutex_unlock(&g->lock);
  if (!keep) slot_free(slot);
}

weft_status_t *weft__worker_run_graph(weft__worker_t *w, const Weft__RunGraphRequest *req,
                                      weft_tensor_t *const *feeds, int n_feeds,
                                      weft_tensor_t ***fetched, int *n_fetched,
                                      weft_run_metadata_t *stats) {
  *fetched = NULL;
  *n_fetched = 0;
  weft_status_t *st = check_incarnation(w, req->incarnation);
  if (st) return st;
  g_mutex_lock(&w->lock);
  reg_graph_t *g = req->graph_handle ? g_hash_table_lookup(w->graphs, req->graph_handle) : NULL;
  if (g) g_atomic_int_inc(&g->refcount);
  bool down = w->shut_down;
  g_mutex_unlock(&w->lock);
  if (down) {
    reg_graph_unref(g);
    return weft_status_new(WEFT_UNAVAILABLE, "Task %s is shutting down", w->task_name);
  }
  if (!g) {
    return weft_status_new(WEFT_ABORTED,
                           "Graph handle '%s' is not registered on task %s (the task may have "
                           "restarted); create the session again",
                           req->graph_handle ? req->graph_handle : "", w->task_name);
  }
  if (n_feeds != g->n_feeds) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "RunGraph on %s: the graph takes %d feeds but %d were sent", w->task_name,
                         g->n_feeds, n_feeds);
  }
  for (int k = 0; k < n_feeds && !st; k++)
    st = weft__check_feed(g->feeds[k].node, g->feeds[k].index, g->feed_names[k], feeds[k]);
  weft__step_t *step = NULL;
  if (!st) step = weft__step_get(w->steps, req->step_id, &st);
  slot_t *slot = NULL;
  if (!st) {
    int64_t timeout = req->timeout_ms > 0 ? req->timeout_ms : w->default_step_timeout_ms;
    weft__step_set_deadline(step, g_get_monotonic_time() + timeout * 1000);
    bool derived = false;
    weft_status_t *abort_st = weft__step_status(step, &derived);
    if (abort_st) {
      st = weft_status_new(abort_st->code, "%s%s", derived ? WEFT_DERIVED_PREFIX : "",
                           abort_st->message);
      weft_status_free(abort_st);
    }
    if (!st) st = take_slot(g, &slot);
  }
  weft_tensor_t **out = NULL;
  if (!st) {
    g_mutex_lock(&g->lock); /* DeregisterGraph reads it */
    slot->step = step;
    g_mutex_unlock(&g->lock);
    out = g_new0(weft_tensor_t *, g->n_fetches + 1);
    /* The step's deadline and abort reach its nodes too, not only its transfers: a partition
     * that computes forever ends at RunGraph's timeout, CloseSession, DeregisterGraph or Abort. */
    gint64 deadline = weft__step_deadline(step);
    weft__run_args_t args = {feeds, slot->pool, weft__default_intra_op_pool(0), w->resources,
                             on_step_error, step, stats, deadline == G_MAXINT64 ? 0 : deadline,
                             weft__step_cancel(step)};
    st = weft__executor_run(slot->executor, &args, out);
    give_slot(g, slot);
    if (st) {
      g_free(out);
      out = NULL;
      bool derived = false;
      weft_status_t *abort_st = weft__step_status(step, &derived);
      if (abort_st && derived) {
        /* Another task failed first: report its error, marked, not our echo of it. */
        weft_status_free(st);
        st = weft_status_new(abort_st->code, WEFT_DERIVED_PREFIX "%s", abort_st->message);
      }
      weft_status_free(abort_st);
    }
  }
  if (step) {
    weft__step_unref(step);
    weft__step_table_release_if_idle(w->steps, req->step_id);
  }
  reg_graph_unref(g);
  if (st) return st;
  *fetched = out;
  *n_fetched = g->n_fetches;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * RecvTensor, Abort, Cleanup */

void weft__worker_recv_tensor(weft__worker_t *w, int64_t step_id, const char *key,
                              guint64 incarnation, weft__recv_done_fn done, void *user_data) {
  weft_status_t *st = check_incarnation(w, incarnation);
  if (!st && (!key || !*key)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "RecvTensor on %s: no rendezvous key",
                         w->task_name);
  }
  if (!st) st = weft__step_table_take(w->steps, step_id, key, done, user_data);
  if (st) done(user_data, st, NULL);
}

/* A grouped RecvTensor in progress: one reference per key still to come back, one for the
 * caller of weft__worker_recv_tensors. */
typedef struct gather {
  gint refs;
  GMutex lock;
  int n, left;
  bool answered;
  weft_tensor_t **tensors;
  weft__recv_many_done_fn done;
  void *user_data;
} gather_t;

typedef struct gather_slot {
  gather_t *gather;
  int index;
} gather_slot_t;

static void gather_unref(gather_t *g) {
  if (!g_atomic_int_dec_and_test(&g->refs)) return;
  if (g->tensors) weft__tensors_free(g->tensors, g->n);
  g_mutex_clear(&g->lock);
  g_free(g);
}

/* One key came back: the answer goes out with the first error, or when the last key is in. */
static void gather_one(void *user_data, weft_status_t *status, weft_tensor_t *tensor) {
  gather_slot_t *slot = user_data;
  gather_t *g = slot->gather;
  int index = slot->index;
  g_free(slot);
  weft_tensor_t **answer = NULL;
  bool answer_now = false;
  g_mutex_lock(&g->lock);
  if (g->answered) {
    weft_status_free(status);
    weft_tensor_unref(tensor);
    status = NULL;
  } else if (status) {
    g->answered = answer_now = true;
  } else {
    g->tensors[index] = tensor;
    if (--g->left == 0) {
      g->answered = answer_now = true;
      answer = g->tensors;
      g->tensors = NULL;
    }
  }
  g_mutex_unlock(&g->lock);
  if (answer_now) g->done(g->user_data, status, answer, answer ? g->n : 0);
  gather_unref(g);
}

void weft__worker_recv_tensors(weft__worker_t *w, int64_t step_id, const char *const *keys,
                               int n_keys, guint64 incarnation, weft__recv_many_done_fn done,
                               void *user_data) {
  weft_status_t *st = check_incarnation(w, incarnation);
  for (int k = 0; k < n_keys && !st; k++) {
    if (!keys[k] || !*keys[k]) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "RecvTensor on %s: rendezvous key %d is empty",
                           w->task_name, k);
    }
  }
  if (st || n_keys <= 0) {
    if (!st) st = weft_status_new(WEFT_INVALID_ARGUMENT, "RecvTensor on %s: no rendezvous key",
                                  w->task_name);
    done(user_data, st, NULL, 0);
    return;
  }
  gather_t *g = g_new0(gather_t, 1);
  g->refs = n_keys + 1;
  g_mutex_init(&g->lock);
  g->n = g->left = n_keys;
  g->tensors = g_new0(weft_tensor_t *, n_keys);
  g->done = done;
  g->user_data = user_data;
  for (int k = 0; k < n_keys; k++) {
    gather_slot_t *slot = g_new(gather_slot_t, 1);
    slot->gather = g;
    slot->index = k;
    st = weft__step_table_take(w->steps, step_id, keys[k], gather_one, slot);
    if (st) gather_one(slot, st, NULL);
  }
  gather_unref(g);
}

void weft__worker_abort_step(weft__worker_t *w, int64_t step_id, const weft_status_t *why) {
  weft_status_t *st = NULL;
  weft__step_t *step = weft__step_get(w->steps, step_id, &st);
  weft_status_free(st);
  if (!step) return;
  weft__step_abort(step, why, true);
  weft__step_mark_finished(step);
  weft__step_unref(step);
  /* Unless a RunGraph still holds it, only its tombstone stays. */
  weft__step_table_release_if_idle(w->steps, step_id);
}

void weft__worker_cleanup_step(weft__worker_t *w, int64_t step_id) {
  weft__step_table_remove(w->steps, step_id);
}

void weft__worker_cleanup_all(weft__worker_t *w, const char *const *containers, int n) {
  weft__resource_mgr_clear(w->resources, containers, n);
}
