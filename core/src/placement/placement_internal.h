/* Internal declarations of core/src/placement: matching device specs (graph_internal.h parses
 * them) against devices, and the placer that assigns every node of a graph to a device following
 * TensorFlow's rules (DESIGN 4.3). */
#ifndef WEFT_PLACEMENT_INTERNAL_H
#define WEFT_PLACEMENT_INTERNAL_H

#include "../graph/graph_internal.h"

/* A device the placer may choose. */
typedef struct weft__place_device {
  const char *name;       /* full: /job:localhost/replica:0/task:0/device:CPU:0 */
  const char *job;
  int replica;
  int task;
  const char *type;       /* CPU, VULKAN, CUDA */
  int id;
  bool gpu_like;
  int priority;           /* backend priority */
  bool emulated;          /* a GPU emulated on the CPU: selected only by a spec naming its type */
} weft__place_device_t;

/* Does `spec` select `device`? Type "GPU" matches devices of gpu_type (the highest-priority
 * gpu-like backend's type that is not emulated); "CPU" matches type CPU. An emulated device is
 * selected only by a spec that names its own type ("/device:VULKAN:0"), so unpinned ops and
 * "/gpu:N" never land on it. */
bool weft__device_spec_matches(const weft__device_spec_t *spec, const weft__place_device_t *device,
                               const char *gpu_type);

/* What the placer asks about kernels. Kernels are the plugin layer's, above this one: it answers
 * through this table (weft__place, plugin_internal.h, passes its registry's). */
typedef struct weft__kernel_catalog {
  /* True if some kernel exists for op on device_type for these attrs. */
  bool (*exists)(const char *op, const char *device_type, const weft_attrs_t *attrs);
  /* A sentence for errors: which dtypes and devices do have kernels for op (g_free(); NULL:
   * none). */
  char *(*describe_available)(const char *op);
} weft__kernel_catalog_t;

typedef struct weft__placer_options {
  bool allow_soft_placement;
  /* The job/replica/task that unqualified specs mean (localhost/0/0 for a local session). */
  const char *default_job;
  int default_replica;
  int default_task;
} weft__placer_options_t;

/* Places `nodes` (weft_node_t*, a subset of graph) on `devices`. `placement` maps node name (the
 * node's own name string, borrowed) -> device name (an interned string, g_intern_string), as
 * weft__placement_new's table holds them; nodes already in it keep their device. Rules:
 * requested specs, colocation groups (_class "loc:@x", ref edges), kernel
 * availability for the node's op and attrs on the device type (kernels->exists) -- for a
 * group with nothing placed yet, of every member reached, in `nodes` or not --, unpinned groups
 * to the first gpu-like device with kernels for them else CPU, soft placement. Callers pass
 * weft__colocation_closure's nodes so that a group is weighed whole. On error nothing is
 * added to `placement` and the status is INVALID_ARGUMENT naming node, op, requested device and,
 * when no kernel is the cause, the dtype and the devices that do have kernels. */
weft_status_t *weft__place_with(GPtrArray *nodes, const weft__place_device_t *devices,
                                int n_devices, const weft__placer_options_t *opts,
                                const weft__kernel_catalog_t *kernels, GHashTable *placement);

/* An empty placement table for weft__place. It owns nothing: its keys are the nodes' own names,
 * so the graph must outlive the table (a session's graph does, and a master session frees its
 * table before its graph), and its values are interned device names. A graph of a million nodes
 * had a copy of every node name and of one device name per node. */
GHashTable *weft__placement_new(void);

/* `nodes` plus every node of `graph` not yet in `placement` that shares a colocation group (ref
 * edges, _class "loc:@x") with one of them, so groups are placed whole. The caller frees the
 * array (g_ptr_array_free(a, TRUE)); the nodes belong to the graph. */
GPtrArray *weft__colocation_closure(weft_graph_t *graph, GPtrArray *nodes, GHashTable *placement);

/* Whether input `i` of `node` carries a resource variable's handle: its source is a VarHandleOp,
 * directly or through pass-through ops (Identity, Switch, Enter, Exit, NextIteration). Weft's
 * handles are strings, so the dtype cannot say it; TensorFlow colocates every DT_RESOURCE edge's
 * consumer with its producer, since the variable is only in its own device's resource manager. */
bool weft__input_is_resource_handle(const weft_node_t *node, int i);

#endif /* WEFT_PLACEMENT_INTERNAL_H */
