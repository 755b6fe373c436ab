/* Internal declarations of core/src/exec: the kernel context and the host table's kernel entries
 * (kernel_host.c), the resource manager that keeps variables alive between steps, and the
 * executor that runs a placed set of nodes once per step. */
#ifndef WEFT_EXEC_INTERNAL_H
#define WEFT_EXEC_INTERNAL_H

#include "../plugin/plugin_internal.h"

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
typedef struct weft__step_resources weft__step_resources_t;

struct weft_kernel_ctx {
  const weft_node_t *node;
  const weft__kernel_t *kernel;
  weft__device_t *device;
  void *kernel_state;
  struct weft__kernel_instance *instance; /* the node's kernel instance, for its caches */
  weft__value_t *inputs;        /* node->n_inputs, borrowed from the executor */
  weft__value_t *outputs;       /* node->n_outputs, filled by the kernel */
  weft__threadpool_t *intra_pool;
  weft__resource_mgr_t *resources;
  GPtrArray *scratch;           /* weft__buffer_t* freed after compute */
  weft_status_t *deferred;      /* a status a void host function could not return */
  weft__step_resources_t *step_resources; /* the step's TensorArrays (frames_internal.h) */
  /* The while-loop frame instance ("parent;iteration;name" down from the root, the same on
   * every task) and iteration the node runs in: NULL and 0 in the root frame. _Send and _Recv
   * inside a loop add them to their rendezvous key, so each iteration has its own. */
  const char *frame_key;
  int64_t iteration;
};

/* The host table's kernel-context services (kernel_host.c) used by the executor. */
weft_status_t *weft__kernel_ctx_take_status(weft_kernel_ctx_t *ctx);


/* ---------------------------------------------------------------------------------------------
 * Resource manager: variables keyed by device, container and name. Thread-safe. */

weft__resource_mgr_t *weft__resource_mgr_new(void);
void weft__resource_mgr_free(weft__resource_mgr_t *rm);
/* Finds or creates the variable; the caller gets a new reference. */
weft__variable_t *weft__resource_mgr_variable(weft__resource_mgr_t *rm, weft__device_t *device,
                                              const char *container, const char *name);
/* The variable if it exists (a new reference), else NULL; nothing is created. */
weft__variable_t *weft__resource_mgr_lookup(weft__resource_mgr_t *rm, weft__device_t *device,
                                            const char *container, const char *name);
/* Drops one variable (DestroyResourceOp); false when there was none. */
bool weft__resource_mgr_remove(weft__resource_mgr_t *rm, weft__device_t *device,
                               const char *container, const char *name);
/* Drops every variable in the named containers (NULL or empty array: all containers). */
void weft__resource_mgr_clear(weft__resource_mgr_t *rm, const char *const *containers, int n);
/* Calls fn for every variable (device name "" when it has none), under the manager's lock: fn
 * must not call back into the manager; it may take a reference to var. */
typedef void (*weft__resource_mgr_fn)(void *user, const char *device, const char *container,
                                      const char *name, weft__variable_t *var);
void weft__resource_mgr_foreach(weft__resource_mgr_t *rm, weft__resource_mgr_fn fn, void *user);

/* The core's resource-variable kernels (resource_var_kernels.c), registered beside the flow
 * kernels. */
void weft__resource_var_kernels_register(void);
/* A status "node 'NAME': MESSAGE" for a core kernel's error (kernel_host.c). */
weft_status_t *weft__kernel_error(weft_kernel_ctx_t *ctx, weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A core kernel's last step: output 0 becomes t when st is NULL; else t is dropped and st
 * returned (resource_var_kernels.c). */
weft_status_t *weft__kernel_set_output0(weft_kernel_ctx_t *ctx, weft_tensor_t *t,
                                       weft_status_t *st);

/* A core CPU kernel: its op and compute function, for weft__core_kernels_register. */
typedef struct weft__core_kernel {
  const char *op;
  weft_kernel_compute_fn compute;
} weft__core_kernel_t;
/* Registers n kernels as the core's CPU kernels of their ops (flow_kernels.c). */
void weft__core_kernels_register(const weft__core_kernel_t *kernels, size_t n);

/* The core's ToBool kernel (to_bool_kernel.c), registered with the flow kernels. */
void weft__to_bool_kernel_register(void);
/* The kernel of PyFunc, PyFuncStateless and EagerPyFunc (host_func.c), registered with them. */
void weft__host_func_kernels_register(void);
/* The core's tf.Example parsing kernels (parse_example_kernels.c). */
void weft__parse_example_kernels_register(void);
/* The core's regular-expression kernels on GRegex (regex_kernels.c). */
void weft__regex_kernels_register(void);
/* The core's input-pipeline kernels: DecodeCSV, SerializeTensor, ParseTensor, MatchingFiles
 * (io_kernels.c). */
void weft__io_kernels_register(void);

/* The variable the resource handle input `index` of ctx names (a new reference in *out), for the
 * host's reference entries: TensorFlow's ResourceApply* ops run the ref ops' kernels. NOT_FOUND
 * in TensorFlow's words when no variable has that name; INVALID_ARGUMENT for a tensor that is
 * not a handle. */
weft_status_t *weft__resource_handle_variable(weft_kernel_ctx_t *ctx, int index,
                                              weft__variable_t **out);

/* ---------------------------------------------------------------------------------------------
 * Executor */

/* A kernel instance for one node, created once and reused by every step (TensorFlow caches
 * kernels per session the same way). */
typedef struct weft__kernel_instance {
  const weft__kernel_t *kernel;
  weft__device_t *device;
  void *state;
  bool has_state;
  /* An attr's tensor as a kernel outputs it (kernel_output_from_attr: Const), kept once it is
   * on the device, as TensorFlow's ConstantOp makes its device tensor once: without it every
   * step of a graph with constant weights would upload them again. Keyed by the attr's tensor
   * and the output's placement; guarded by attr_cache_lock, since steps run concurrently. */
  GMutex attr_cache_lock;
  const weft_tensor_t *attr_cache_source;
  weft__device_t *attr_cache_placement;
  weft_tensor_t *attr_cache_value;
} weft__kernel_instance_t;

weft_status_t *weft__kernel_instance_new(const weft_node_t *node, const weft__kernel_t *kernel,
                                         weft__device_t *device, weft__kernel_instance_t **out);
void weft__kernel_instance_free(weft__kernel_instance_t *inst);

/* A value fed into a step: it replaces output `index` of `node`. */
typedef struct weft__feed {
  const weft_node_t *node;
  int index;
  weft_tensor_t *tensor; /* borrowed */
} weft__feed_t;

typedef struct weft__fetch {
  const weft_node_t *node;
  int index;
} weft__fetch_t;

typedef struct weft__executor weft__executor_t;

/* One member of a fused elementwise chain (fuse.c), as the executor runs it when the chain's
 * shapes, unknown when the step was planned, turn out not to fit the fused kernel. */
typedef struct weft__fused_member {
  const weft_node_t *node;
  weft__kernel_instance_t *kinst;
  int main_input; /* which of node's inputs the chain flows through */
  int operand;    /* which input of the fused node feeds node's other input; -1: unary */
  bool bias_add;  /* BiasAdd: its operand must be a row of x's last dimension */
} weft__fused_member_t;

/* A fused chain whose shapes were not all known when it was planned: the fused kernel runs
 * only when, at run time, every operand is a scalar, of x's shape, or a row of its last
 * dimension, and x has at least min_elements; otherwise the members run one by one, so
 * results, broadcasting and errors are those of the unfused chain. */
typedef struct weft__fused_fallback {
  int n_members;
  weft__fused_member_t *members;
  int64_t min_elements;
} weft__fused_fallback_t;

typedef struct weft__executor_params {
  GPtrArray *nodes;                /* weft_node_t* to run (closed under needed inputs) */
  weft__kernel_instance_t **kernels; /* per entry of nodes */
  const weft__feed_t *feeds;       /* feeds define which outputs are replaced */
  int n_feeds;
  const weft__fetch_t *fetches;
  int n_fetches;
  /* Optional, per entry of nodes: run it on the thread that readied it, as the executor's own
   * inexpensive ops (the distributed runtime's _Recv nodes whose tensor is already here). */
  const bool *inexpensive;
  /* Optional: node -> the node in `nodes` that produces its outputs instead (a fused chain's
   * last node -> the fused node, fuse_internal.h); edges and fetches naming the first are read
   * from the second. Only for steps without control flow. */
  GHashTable *aliases;
  /* Optional: fused node -> its weft__fused_fallback_t (borrowed, outliving the executor). */
  GHashTable *fallbacks;
} weft__executor_params_t;

/* Builds the dependency structure once; the executor may then run many steps. */
weft_status_t *weft__executor_new(const weft__executor_params_t *params, weft__executor_t **out);
void weft__executor_free(weft__executor_t *ex);

/* A step's cancellation, as TensorFlow's CancellationManager: whoever ends the step from outside
 * (a session closed under it, a worker told to abort it) sets it once, and the executor reads
 * the flag before each node, so a step busy computing (a while loop that never ends) stops at
 * its next node instead of holding its threads forever. Embedded in its owner's struct. */
typedef struct weft__cancel {
  gint requested; /* atomic: nonzero once cancelled */
  GMutex lock;
  weft_status_t *why; /* under lock: the status the cancelled step fails with */
} weft__cancel_t;

void weft__cancel_init(weft__cancel_t *c);
void weft__cancel_clear(weft__cancel_t *c);
/* The first request wins (`why` is copied, borrowed for the call); later ones are ignored. */
void weft__cancel_request(weft__cancel_t *c, const weft_status_t *why);
static inline bool weft__cancel_requested(weft__cancel_t *c) {
  return c && g_atomic_int_get(&c->requested) != 0;
}
/* A copy of the status of a cancelled `c` (the caller frees it); NULL when not cancelled. */
weft_status_t *weft__cancel_status(weft__cancel_t *c);

typedef struct weft__run_args {
  weft_tensor_t *const *feed_values; /* in the order of params.feeds */
  weft__threadpool_t *inter_pool;
  weft__threadpool_t *intra_pool;
  weft__resource_mgr_t *resources;
  /* Optional: called once with the step's first error as soon as it is recorded, before the
   * step winds down (the distributed runtime uses it to abort the step's transfers, which would
   * otherwise wait for peers that never send). The status is borrowed for the call. */
  void (*on_error)(void *user_data, const weft_status_t *status);
  void *on_error_data;
  /* Optional (NULL: off, and then nothing is measured): receives one record per node run. */
  weft_run_metadata_t *stats;
  /* Optional (0: none): monotonic time (g_get_monotonic_time) after which no node starts. */
  gint64 deadline_us;
  /* Optional (NULL: none): once requested, no node starts and the step fails with its status. */
  weft__cancel_t *cancel;
} weft__run_args_t;

/* Why the step must stop before `node` starts: its cancellation, or its deadline (DEADLINE_EXCEEDED
 * naming the node) once passed; NULL to go on. Read before every node: one atomic load, and the
 * clock only when the step has a deadline. */
weft_status_t *weft__step_interrupted(const weft__run_args_t *args, const weft_node_t *node);

/* Runs one step; fetched[i] gets a new host reference for fetches[i]. The first failing kernel's
 * status, prefixed with node, op and device, cancels the rest. */
weft_status_t *weft__executor_run(weft__executor_t *ex, const weft__run_args_t *args,
                                  weft_tensor_t **fetched);

/* ---------------------------------------------------------------------------------------------
 * Step stats (step_stats.c): the public weft_run_options_t / weft_run_metadata_t. Adding to a
 * metadata is thread-safe (the nodes of a step finish on many threads). */

struct weft_run_options {
  weft_trace_level_t trace_level;
  int64_t timeout_ms;
};

weft_run_metadata_t *weft__run_metadata_new(void);
/* Copies every string. */
void weft__run_metadata_add(weft_run_metadata_t *meta, const weft_node_stats_t *rec);
/* Appends every record of `from` (copied). */
void weft__run_metadata_merge(weft_run_metadata_t *into, const weft_run_metadata_t *from);

#endif /* WEFT_EXEC_INTERNAL_H */
