/* Internal declarations of core/src/plugin: the plugin loader, the backend and device registry,
 * the kernel registry and the kernel context the host table reads from. */
#ifndef WEFT_PLUGIN_INTERNAL_H
#define WEFT_PLUGIN_INTERNAL_H

#include "../graph/graph_internal.h"

typedef struct weft__backend {
  weft_backend_t table;  /* copied from the plugin, strings owned by the registry */
  char *plugin_path;
  int n_devices;
  char *why_no_devices;  /* when n_devices == 0 */
  char *why_no_devices_line; /* "TYPE: reason", built on demand */
} weft__backend_t;

struct weft__device {
  char *name;            /* /job:localhost/replica:0/task:0/device:CPU:0 */
  char *type;            /* CPU */
  int ordinal;
  weft__backend_t *backend;
  weft_device_props_t props;
  bool gpu_like;
  int priority;
  GMutex open_lock;
  void *handle;          /* backend device handle once opened */
  GMutex refs_lock;      /* serialises kernel_lock_ref on this device's variables */
};

typedef struct weft__kernel {
  weft_kernel_def_t def;     /* strings and arrays owned by the registry */
  weft_type_constraint_t *constraints_copy;
  char **host_memory_copy;
  char *plugin_path;
} weft__kernel_t;

/* Devices, process-wide, in placement order: gpu-like by priority then ordinal, then cpu-like. */
int weft__device_count(void);
weft__device_t *weft__device_at(int index);
weft__device_t *weft__device_find(const char *full_name);
/* Opens the device once per process with these options (later options are ignored). */
weft_status_t *weft__device_open(weft__device_t *device, const weft_device_options_t *opts);
/* The highest-priority gpu-like device type ("CUDA"), or NULL if there is no gpu-like device. */
const char *weft__gpu_device_type(void);

/* Best kernel for a node's op and attrs on a device type; NULL if none. */
const weft__kernel_t *weft__kernel_lookup(const char *op, const char *device_type,
                                          const weft_attrs_t *attrs);
/* True if some kernel exists for op on device_type for these attrs. */
bool weft__kernel_exists(const char *op, const char *device_type, const weft_attrs_t *attrs);
/* A sentence for errors: which dtypes and devices do have kernels for op. */
char *weft__kernel_describe_available(const char *op);
/* Is input (is_output false) or output `index` of node a host-memory argument of kernel? */
bool weft__kernel_arg_in_host_memory(const weft__kernel_t *kernel, const weft_node_t *node,
                                     bool is_output, int index);

/* The value a ref edge carries: a variable living in a resource manager. */
typedef struct weft__variable {
  gint refcount;
  GRecMutex lock;         /* recursive: a kernel holding use_locking may assign through it */
  char *name;             /* container/shared_name */
  weft__device_t *device;
  weft_tensor_t *value;   /* NULL until initialised */
} weft__variable_t;
weft__variable_t *weft__variable_ref(weft__variable_t *var);
void weft__variable_unref(weft__variable_t *var);

/* One slot of a kernel's inputs or outputs: a tensor, or a ref to a variable. */
typedef struct weft__value {
  weft_tensor_t *tensor;
  weft__variable_t *ref;
} weft__value_t;

/* Resource manager lookups (exec/resource_mgr.c). */
typedef struct weft__resource_mgr weft__resource_mgr_t;

/* What a kernel invocation sees: built by the executor, read by the host table. */
struct weft_kernel_ctx {
  const weft_node_t *node;
  const weft__kernel_t *kernel;
  weft__device_t *device;
  void *kernel_state;
  weft__value_t *inputs;        /* node->n_inputs, borrowed from the executor */
  weft__value_t *outputs;       /* node->n_outputs, filled by the kernel */
  weft__threadpool_t *intra_pool;
  weft__resource_mgr_t *resources;
  GPtrArray *scratch;           /* weft__buffer_t* freed after compute */
  weft_status_t *deferred;      /* a status a void host function could not return */
};

/* Plugin loader (loader.c): loads the default plugins once per process. */
void weft__plugins_ensure_loaded(void);

/* Registry internals the loader uses (registry.c). */
weft__kernel_t *weft__kernel_copy_def(const weft_kernel_def_t *def, const char *plugin_path);
void weft__kernel_free(weft__kernel_t *kernel);
void weft__registry_add_kernel(weft__kernel_t *kernel);   /* takes ownership */
void weft__registry_add_backend(weft__backend_t *backend); /* takes ownership; enumerates */
int weft__registry_count_kernels_from(const char *plugin_path);
char *weft__registry_device_types_from(const char *plugin_path); /* g_free() */
/* The plugin path that registered device_type, or NULL (g_free() the result). */
char *weft__registry_backend_owner(const char *device_type);

/* The host table's kernel-context services (host.c) used by the executor. */
weft_status_t *weft__kernel_ctx_take_status(weft_kernel_ctx_t *ctx);

#endif /* WEFT_PLUGIN_INTERNAL_H */
