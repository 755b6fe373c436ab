/* Internal declarations of core/src/plugin: the plugin loader, the registry objects (ops,
 * backends and devices, kernels), the host table, gradient programs and conformance cases. */
#ifndef WEFT_PLUGIN_INTERNAL_H
#define WEFT_PLUGIN_INTERNAL_H

#include "../placement/placement_internal.h"

typedef struct weft__kernel {
  weft_kernel_def_t def;     /* strings and arrays owned by the registry */
  weft_type_constraint_t *constraints_copy;
  char **host_memory_copy;
  char *plugin_path;
} weft__kernel_t;

/* Devices, process-wide, in placement order: gpu-like by priority then ordinal, then cpu-like,
 * then emulated devices (docs/c-api.md, "Placement"). */
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
/* weft__place_with (placement_internal.h) asking this registry about kernels. */
weft_status_t *weft__place(GPtrArray *nodes, const weft__place_device_t *devices, int n_devices,
                           const weft__placer_options_t *opts, GHashTable *placement);
/* Is input (is_output false) or output `index` of node a host-memory argument of kernel? */
bool weft__kernel_arg_in_host_memory(const weft__kernel_t *kernel, const weft_node_t *node,
                                     bool is_output, int index);

/* ---------------------------------------------------------------------------------------------
 * Registries (registry.c; docs/architecture.md, "The registry"). The default is the process's:
 * its op registry is weft__op_registry_process(), plugins commit into it, and it is never freed.
 * A private registry has its own op registry with the standard ops; everything else in it is
 * borrowed from the default (what the plugins it asked for registered there). */
struct weft_registry {
  GMutex lock;                 /* guards the tables below, not ops (it has its own lock) */
  weft__op_registry_t *ops;    /* owned when owns_ops */
  bool owns_ops;
  bool is_default;
  GPtrArray *backends;         /* weft__backend_t*; the default owns them */
  GPtrArray *devices;          /* weft__device_t*, placement order; the default owns them */
  GHashTable *kernels_by_op;   /* op -> GPtrArray of weft__kernel_t* (the default owns those) */
  GPtrArray *device_infos;     /* weft_device_info_t* for the public API, owned */
  GPtrArray *retired_infos;    /* infos of an older device set, kept: callers may hold them */
  GPtrArray *plugins;          /* const weft_plugin_record_t* this registry asked for (private) */
  GPtrArray *without_devices;  /* char* borrowed from the backends, for the public API */
};

/* The default registry, created (standard ops, no plugin) but not necessarily loaded: for the
 * loader and the lookups that must not load anything. */
weft_registry_t *weft__registry_process(void);
/* The default registry, loaded: its plugins loaded once per process (WEFT_PLUGIN_PATH, then the
 * build tree's or the install's plugin folder). This is the one place the default loads
 * (loader.c); the first of weft_session_new, weft_plugins_*, weft_devices_*, a graph naming an op
 * the standard ops lack, or weft__device_count triggers it. */
weft_registry_t *weft__registry_default(void);
/* The same, for callers that want the side effect only. */
void weft__plugins_ensure_loaded(void);
weft_registry_t *weft__registry_new_private(void);
void weft__registry_free(weft_registry_t *reg); /* the default: nothing happens */
int weft__registry_device_count(weft_registry_t *reg);
/* Borrowed for reg's life. */
const weft_device_info_t *weft__registry_device_get(weft_registry_t *reg, int index);
int weft__registry_without_devices(weft_registry_t *reg, const char ***reasons);
/* Adds to a private reg, borrowed, what the plugin loaded from plugin_path (as the loader
 * recorded the path) registered in the default: ops, kernels, backends and devices. */
void weft__registry_share_plugin(weft_registry_t *reg, const char *plugin_path);

/* Registry internals the loader uses (registry.c). */
weft__kernel_t *weft__kernel_copy_def(const weft_kernel_def_t *def, const char *plugin_path);
void weft__kernel_free(weft__kernel_t *kernel);
void weft__registry_add_kernel(weft__kernel_t *kernel);   /* takes ownership */
/* The function that registers the core's own kernels into the default at its one-time load
 * (exec/flow_kernels.c sets it from a constructor: the plugin layer cannot name exec). */
void weft__registry_set_core_kernels(void (*register_fn)(void));
void weft__registry_add_backend(weft__backend_t *backend); /* takes ownership; enumerates */
int weft__registry_count_kernels_from(const char *plugin_path);
char *weft__registry_device_types_from(const char *plugin_path); /* g_free() */
/* The plugin path that registered device_type, or NULL (g_free() the result). */
char *weft__registry_backend_owner(const char *device_type);

/* The host table every plugin gets (host.c): weft__graph_host's entries and the kernel
 * context's, which the exec layer fills (weft__host_set_kernel_entries). Built once, on first
 * use; borrowed for the process's life. */
const weft_host_t *weft__host(void);
/* Sets the function that fills the kernel-context entries of the host table; exec calls it when
 * the library loads (exec/kernel_host.c), before anything can ask for the table. */
void weft__host_set_kernel_entries(void (*fill)(weft_host_t *table));

/* Finds an op definition by name for the loader's checks: the registry's, or one the plugin
 * being loaded has staged. */
typedef const weft__op_def_t *(*weft__op_lookup_fn)(const char *op, void *arg);

/* ---------------------------------------------------------------------------------------------
 * Gradient programs (gradient.c): weft_op_def_t.gradient, parsed when the op is registered. */

typedef struct weft__grad_program weft__grad_program_t;

/* Parses and checks def's gradient program (ops known through lookup, names, attrs). *out is the
 * caller's; INVALID_ARGUMENT naming the op and the line at fault. */
weft_status_t *weft__grad_program_parse(const weft__op_def_t *def, const char *text,
                                        weft__op_lookup_fn lookup, void *lookup_arg,
                                        weft__grad_program_t **out);
void weft__grad_program_free(weft__grad_program_t *prog);
/* The program's source text (borrowed from prog). */
const char *weft__grad_program_text(const weft__grad_program_t *prog);
/* Keeps prog as the gradient of its op (takes ownership). */
void weft__gradients_add(weft__grad_program_t *prog);
/* The gradient program of op, or NULL (borrowed; programs live as long as the process). */
const weft__grad_program_t *weft__gradient_lookup(const char *op);
/* Adds the gradient of `node` to `graph`, under the caller's name and device scopes
 * (weft_gradients pushes "gradients/<node>_grad"); statements name their nodes. dys[k] is the
 * gradient flowing into output k ({NULL, 0}: none, zeros where the program needs it; dys itself
 * may be NULL); dxs (node->n_inputs entries) receives the gradient of each input, {NULL, 0}
 * where there is none. NOT_FOUND when the op has no program; a graph error names the node and
 * the program's line. For weft_gradients (core/src/train): ops without a built-in gradient
 * function may have one here (weft__gradient_lookup). */
weft_status_t *weft__gradient_build(weft_graph_t *graph, weft_node_t *node,
                                    const weft_output_t *dys, weft_output_t *dxs);

/* ---------------------------------------------------------------------------------------------
 * Conformance cases plugins ship (cases.c), checked and copied at registration. */

typedef struct weft__plugin_case {
  char *op;
  char *name;
  char *plugin_path;
  weft_dtype_t *dtypes;       /* n_dtypes; empty: run once without a type attr */
  size_t n_dtypes;
  char *type_attr;            /* "T" unless the case said otherwise */
  weft_attrs_t *attrs;        /* parsed from the case's "name=value" strings */
  weft_case_input_t *inputs;  /* n_inputs, this core's struct layout */
  size_t n_inputs;
  weft_case_reference_fn reference;
  void *user_data;
  double rtol, atol, max_nmse, tol_scale;
  bool check_gradient;
  weft_code_t expect_code;
  char *expect_message;
} weft__plugin_case_t;

/* Checks c against its op (found through lookup) and copies it; *out is the caller's.
 * INVALID_ARGUMENT / NOT_FOUND / ALREADY_EXISTS naming the case and op. */
weft_status_t *weft__plugin_case_copy(const weft_conformance_case_t *c, weft__op_lookup_fn lookup,
                                      void *lookup_arg, const char *plugin_path,
                                      weft__plugin_case_t **out);
void weft__plugin_case_free(weft__plugin_case_t *c);
void weft__plugin_cases_add(weft__plugin_case_t *c); /* takes ownership */
/* Registered cases, in registration order; borrowed, process lifetime. */
int weft__plugin_case_count(void);
const weft__plugin_case_t *weft__plugin_case_at(int index);
const weft__plugin_case_t *weft__plugin_case_find(const char *op, const char *name);

#endif /* WEFT_PLUGIN_INTERNAL_H */
