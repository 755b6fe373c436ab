/* TensorFlow's replica_device_setter as a Weft device function: variables go to the ps tasks
 * (round robin in creation order, or greedily by byte size), everything else to the worker. */
#include "train_internal.h"

#include "../placement/placement_internal.h"

#include <string.h>

struct weft_replica_device_setter {
  weft_graph_t *graph; /* borrowed */
  int ps_tasks;
  char *ps_device;
  char *worker_device;
  bool merge_devices;
  weft_ps_strategy_t strategy;
  int next_task;     /* round robin */
  uint64_t *load;    /* bytes per ps task */
  char *result;      /* the last answer (the graph copies it) */
};

/* TensorFlow's default ps_ops: the ops that hold variables' state. */
static bool is_ps_op(const char *op) {
  static const char *const ops[] = {"Variable", "VariableV2", "AutoReloadVariable", "VarHandleOp",
                                    "MutableHashTable", "MutableHashTableV2",
                                    "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
                                    "MutableDenseHashTable", "MutableDenseHashTableV2"};
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++)
    if (strcmp(op, ops[k]) == 0) return true;
  return false;
}

weft_replica_device_setter_t *weft_replica_device_setter(weft_graph_t *graph, int ps_tasks,
                                                         const char *ps_device,
                                                         const char *worker_device,
                                                         bool merge_devices,
                                                         weft_ps_strategy_t strategy) {
  weft_replica_device_setter_t *s = g_new0(weft_replica_device_setter_t, 1);
  s->graph = graph;
  s->ps_tasks = ps_tasks > 0 ? ps_tasks : 0;
  s->ps_device = g_strdup(ps_device ? ps_device : "/job:ps");
  s->worker_device = worker_device ? g_strdup(worker_device) : NULL;
  s->merge_devices = merge_devices;
  s->strategy = strategy;
  s->load = g_new0(uint64_t, s->ps_tasks > 0 ? s->ps_tasks : 1);
  return s;
}

weft_status_t *weft_replica_device_setter_from_cluster(weft_graph_t *graph,
                                                       const weft_cluster_spec_t *cluster,
                                                       const char *ps_device,
                                                       const char *worker_device,
                                                       bool merge_devices,
                                                       weft_ps_strategy_t strategy,
                                                       weft_replica_device_setter_t **out) {
  *out = NULL;
  int n = cluster ? weft_cluster_spec_num_tasks(cluster, "ps") : 0;
  if (n <= 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "replica_device_setter: the cluster spec has no \"ps\" job");
  *out = weft_replica_device_setter(graph, n, ps_device, worker_device, merge_devices, strategy);
  return NULL;
}

void weft_replica_device_setter_free(weft_replica_device_setter_t *s) {
  if (!s) return;
  g_free(s->ps_device);
  g_free(s->worker_device);
  g_free(s->load);
  g_free(s->result);
  g_free(s);
}

uint64_t weft_replica_device_setter_ps_load(const weft_replica_device_setter_t *s, int task) {
  return s && task >= 0 && task < s->ps_tasks ? s->load[task] : 0;
}

/* Bytes of the variable being built, from its "dtype" and "shape" attrs (unknown dims count as
 * 1, so such a variable still weighs something). */
static uint64_t building_bytes(const weft_graph_t *g) {
  const weft_attrs_t *attrs = g ? g->building_attrs : NULL;
  if (!attrs) return 0;
  const weft__attr_value_t *t = weft__attrs_get(attrs, "dtype");
  const weft__attr_value_t *sh = weft__attrs_get(attrs, "shape");
  uint64_t size = t && t->kind == WEFT_ATTR_TYPE ? weft_dtype_size(t->u.type) : 0;
  if (!size) size = 1;
  uint64_t n = 1;
  if (sh && sh->kind == WEFT_ATTR_SHAPE)
    for (int d = 0; d < sh->u.shape.rank; d++)
      if (sh->u.shape.dims[d] > 0) n *= (uint64_t)sh->u.shape.dims[d];
  return n * size;
}

/* With merge_devices false, an inner non-empty device scope decides alone. */
static bool inner_scope_sets_device(const weft_replica_device_setter_t *s) {
  GPtrArray *scopes = s->graph->device_scopes;
  bool inside = false;
  for (guint k = 0; k < scopes->len; k++) {
    const weft__device_scope_t *sc = scopes->pdata[k];
    if (sc->fn == weft_replica_device_setter_fn && sc->user_data == s) {
      inside = true;
      continue;
    }
    if (inside && sc->spec && *sc->spec) return true;
  }
  return false;
}

const char *weft_replica_device_setter_fn(void *user_data, const char *op, const char *node_name) {
  (void)node_name;
  weft_replica_device_setter_t *s = user_data;
  if (!s || s->ps_tasks == 0) return NULL;
  /* Colocated nodes follow their group (TensorFlow's colocate_with clears device functions). */
  if (s->graph && s->graph->colocate_stack->len) return NULL;
  if (s->graph && !s->merge_devices && inner_scope_sets_device(s)) return NULL;
  g_free(s->result);
  s->result = NULL;
  if (!is_ps_op(op)) return s->worker_device;

  int task = 0;
  if (s->strategy == WEFT_PS_BY_BYTE_SIZE) {
    for (int k = 1; k < s->ps_tasks; k++)
      if (s->load[k] < s->load[task]) task = k;
  } else {
    task = s->next_task;
    s->next_task = (s->next_task + 1) % s->ps_tasks;
  }
  s->load[task] += building_bytes(s->graph);

  weft__device_spec_t spec, t;
  weft__device_spec_init(&spec);
  weft__device_spec_init(&t);
  char *task_text = g_strdup_printf("/task:%d", task);
  weft_status_t *st = weft__device_spec_parse(s->ps_device, &spec);
  if (!st) st = weft__device_spec_parse(task_text, &t);
  if (!st) {
    weft__device_spec_merge(&spec, &t);
    s->result = weft__device_spec_to_string(&spec);
  } else {
    /* A malformed ps_device: hand it on so that the graph reports it for this node. */
    weft_status_free(st);
    s->result = g_strdup_printf("%s%s", s->ps_device, task_text);
  }
  g_free(task_text);
  weft__device_spec_clear(&spec);
  weft__device_spec_clear(&t);
  return s->result;
}
