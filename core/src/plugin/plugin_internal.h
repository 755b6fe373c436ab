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
  bool emulated;         /* props.emulated: a CPU emulation, ranked below the CPU */
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

/* Finds an op definition by name for the loader's checks: the registry's, or one the plugin
 * being loaded has staged. */
typedef const weft__op_def_t *(*weft__op_lookup_fn)(const char *op, void *arg);

/* Parses `text` ("name = value" of an attr of def, e.g. "beta" and "1.5", "perm" and "[1,0]")
 * as def's attr type. *out is the caller's (weft__attr_value_free). INVALID_ARGUMENT naming the
 * op, attr and text (gradient.c). */
weft_status_t *weft__attr_parse_value(const weft__op_def_t *def, const char *name,
                                      const char *text, weft__attr_value_t **out);

/* Sets attr `name` of a node under construction from an internal value (gradient.c). */
void weft__op_builder_set_attr_value(weft_op_builder_t *b, const char *name,
                                     const weft__attr_value_t *value);

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
