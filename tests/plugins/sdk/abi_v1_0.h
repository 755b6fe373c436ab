/* A frozen copy of the plugin ABI header as it was at version 1.0 (before the 1.1 additions:
 * gradient programs, conformance cases, device services), with every name prefixed weft10_ /
 * WEFT10_ so that it compiles beside the current header. Two uses: old_minor.c is a plugin built
 * against it (what an old binary looks like to the loader), and tests/test_sdk.c checks that
 * every 1.0 field still sits at the same offset in the current structs. Never edit it: it is what
 * plugins built in the past were compiled with. */
#ifndef WEFT10_PLUGIN_H
#define WEFT10_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT10_ABI_MAJOR 1
#define WEFT10_ABI_MINOR 0

/* The one symbol a plugin exports; its type is weft10_plugin_entry_fn. */
#define WEFT10_PLUGIN_ENTRY_SYMBOL "weft10_plugin_entry"

#if defined(__GNUC__)
#define WEFT10_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define WEFT10_PLUGIN_EXPORT
#endif

typedef struct weft10_host weft10_host_t;
typedef struct weft10_registrar weft10_registrar_t;
typedef struct weft10_attrs weft10_attrs_t;           /* a node's attributes, host-owned */
typedef struct weft10_kernel_ctx weft10_kernel_ctx_t; /* one kernel invocation, host-owned */
typedef struct weft10_shape_ctx weft10_shape_ctx_t;   /* one shape-inference call, host-owned */

typedef enum weft10_log_level {
  WEFT10_LOG_ERROR = 0,
  WEFT10_LOG_WARNING = 1,
  WEFT10_LOG_INFO = 2,
  WEFT10_LOG_DEBUG = 3,
} weft10_log_level_t;

/* ---------------------------------------------------------------------------------------------
 * Tensor views: how a kernel sees its inputs and outputs. */

typedef struct weft10_tensor_view {
  size_t struct_size;
  weft_dtype_t dtype;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t num_elements;
  /* Memory of the kernel's device (the backend's own pointer or handle), or host memory for
   * arguments the kernel declared in host_memory_args and for host-accessible devices. For
   * WEFT_DT_STRING the data is an array of weft_string_t in host memory. */
  void *data;
  size_t nbytes;
} weft10_tensor_view_t;

/* ---------------------------------------------------------------------------------------------
 * Device backends. */

typedef enum weft10_device_class {
  WEFT10_DEVICE_CPU_LIKE = 0,
  WEFT10_DEVICE_GPU_LIKE = 1,
} weft10_device_class_t;

typedef struct weft10_device_props {
  size_t struct_size;
  char description[128];       /* e.g. "lavapipe (LLVM 15.0.6, 256 bits)" */
  uint64_t memory_bytes;       /* total device memory, 0 if unknown */
  char compute_capability[32]; /* free-form, "" if none */
  char bus_id[64];             /* free-form, "" if none */
  int host_accessible;         /* device pointers are plain host memory the core may touch */
} weft10_device_props_t;

/* Options a session hands to a device when it opens it (TensorFlow's GPUOptions). */
typedef struct weft10_device_options {
  size_t struct_size;
  double memory_fraction; /* share of device memory to take; 0 means the backend's default */
  int allow_growth;       /* allocate on demand instead of up front */
} weft10_device_options_t;

typedef struct weft10_backend {
  size_t struct_size;
  const char *device_type;         /* "CPU", "VULKAN", "CUDA", ...: upper case, [A-Z0-9_] */
  weft10_device_class_t device_class;
  int priority;                    /* higher wins among backends of one class */
  void *backend_state;             /* passed back to every function below */

  /* Number of devices. When it is 0, *why_none may point at a static reason ("no driver"). */
  int (*device_count)(void *backend_state, const char **why_none);
  weft_status_t *(*device_properties)(void *backend_state, int ordinal, weft10_device_props_t *out);
  /* Opens a device; *device is the backend's handle for it, passed to the functions below. */
  weft_status_t *(*device_open)(void *backend_state, int ordinal, const weft10_device_options_t *opts,
                                void **device);
  void (*device_close)(void *device);

  /* Device memory. alloc of 0 bytes may return NULL. */
  weft_status_t *(*alloc)(void *device, size_t nbytes, void **ptr);
  void (*free)(void *device, void *ptr);
  weft_status_t *(*copy_to_device)(void *device, void *dst, const void *host_src, size_t nbytes);
  weft_status_t *(*copy_from_device)(void *device, void *host_dst, const void *src, size_t nbytes);
  weft_status_t *(*copy_device_to_device)(void *device, void *dst, const void *src, size_t nbytes);
  /* Waits until every queued operation on the device has finished. */
  weft_status_t *(*synchronize)(void *device);

  /* Optional (may be NULL): bytes in use and the limit, for errors and `weft devices`. */
  weft_status_t *(*memory_usage)(void *device, uint64_t *in_use, uint64_t *limit);
  /* Optional: called once when the plugin is unloaded, after every device is closed. */
  void (*backend_shutdown)(void *backend_state);
} weft10_backend_t;

/* ---------------------------------------------------------------------------------------------
 * Op definitions, in TensorFlow's REGISTER_OP syntax, e.g.
 *   inputs  = { "x: T", "y: T", NULL }            outputs = { "z: T", NULL }
 *   attrs   = { "T: {float, double, int32}", NULL }
 * Inputs may be "values: N * T" (a list), "ref: Ref(T)" (a reference), or a fixed type ("shape:
 * int32"). Attrs: "name: type", "name: type = default", "N: int >= 1", "T: {float, int32} = DT_FLOAT". */

typedef weft_status_t *(*weft10_shape_fn)(weft10_shape_ctx_t *ctx);

typedef struct weft10_op_def {
  size_t struct_size;
  const char *name;
  const char *const *inputs;  /* NULL-terminated */
  const char *const *outputs; /* NULL-terminated */
  const char *const *attrs;   /* NULL-terminated; may be NULL */
  int is_stateful;            /* never constant-folded or deduplicated */
  weft10_shape_fn shape_fn;     /* NULL: outputs of unknown shape */
} weft10_op_def_t;

/* ---------------------------------------------------------------------------------------------
 * Kernels: one implementation of an op on one device type for some dtypes. */

typedef struct weft10_type_constraint {
  const char *attr;            /* a type attribute of the op, e.g. "T" */
  const weft_dtype_t *dtypes;  /* the values this kernel accepts */
  size_t n_dtypes;
} weft10_type_constraint_t;

/* Called once per node when a session first prepares it; *state is passed to every compute. */
typedef weft_status_t *(*weft10_kernel_create_fn)(const weft10_host_t *host, const weft10_attrs_t *attrs,
                                                void *user_data, void **state);
/* Computes one invocation. state is what create returned, or user_data when create is NULL. */
typedef weft_status_t *(*weft10_kernel_compute_fn)(weft10_kernel_ctx_t *ctx, void *state);
typedef void (*weft10_kernel_destroy_fn)(void *state);

typedef struct weft10_kernel_def {
  size_t struct_size;
  const char *op;
  const char *device_type;
  const weft10_type_constraint_t *constraints;
  size_t n_constraints;
  const char *const *host_memory_args; /* NULL-terminated input/output arg names, or NULL */
  int priority;                        /* higher wins when several kernels match */
  weft10_kernel_create_fn create;        /* optional */
  weft10_kernel_compute_fn compute;
  weft10_kernel_destroy_fn destroy;      /* optional */
  void *user_data;
} weft10_kernel_def_t;

/* ---------------------------------------------------------------------------------------------
 * Registration: handed to the plugin's init(). ctx is the host's and goes back unchanged. */

struct weft10_registrar {
  size_t struct_size;
  void *ctx;
  weft_status_t *(*register_backend)(void *ctx, const weft10_backend_t *backend);
  weft_status_t *(*register_op)(void *ctx, const weft10_op_def_t *op);
  weft_status_t *(*register_kernel)(void *ctx, const weft10_kernel_def_t *kernel);
};

/* ---------------------------------------------------------------------------------------------
 * Host services. */

typedef void (*weft10_range_fn)(void *arg, int64_t begin, int64_t end);

struct weft10_host {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* Logging, through the host's log (WEFT_LOG / G_MESSAGES_DEBUG decide what shows). */
  void (*log)(weft10_log_level_t level, const char *plugin, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));

  /* Statuses. status_new returns a new status the caller owns. */
  weft_status_t *(*status_new)(weft_code_t code, const char *fmt, ...)
      __attribute__((format(printf, 2, 3)));
  weft_code_t (*status_code)(const weft_status_t *status);
  const char *(*status_message)(const weft_status_t *status);
  void (*status_free)(weft_status_t *status);

  /* Attributes. Each returns NOT_FOUND naming the attribute when it is absent, INVALID_ARGUMENT
   * when it has another type. Returned strings and arrays are borrowed from attrs. */
  int (*attr_has)(const weft10_attrs_t *attrs, const char *name);
  weft_status_t *(*attr_int)(const weft10_attrs_t *attrs, const char *name, int64_t *out);
  weft_status_t *(*attr_float)(const weft10_attrs_t *attrs, const char *name, float *out);
  weft_status_t *(*attr_bool)(const weft10_attrs_t *attrs, const char *name, int *out);
  weft_status_t *(*attr_type)(const weft10_attrs_t *attrs, const char *name, weft_dtype_t *out);
  weft_status_t *(*attr_string)(const weft10_attrs_t *attrs, const char *name, const char **out,
                                size_t *len);
  weft_status_t *(*attr_int_list)(const weft10_attrs_t *attrs, const char *name,
                                  const int64_t **out, size_t *n);
  weft_status_t *(*attr_float_list)(const weft10_attrs_t *attrs, const char *name,
                                    const float **out, size_t *n);
  weft_status_t *(*attr_type_list)(const weft10_attrs_t *attrs, const char *name,
                                   const weft_dtype_t **out, size_t *n);
  /* A shape attribute; *rank is -1 for unknown rank, dims may hold WEFT_DIM_UNKNOWN. */
  weft_status_t *(*attr_shape)(const weft10_attrs_t *attrs, const char *name, int *rank,
                               int64_t dims[WEFT_MAX_RANK]);
  /* A tensor attribute as a host-memory view. */
  weft_status_t *(*attr_tensor)(const weft10_attrs_t *attrs, const char *name,
                                weft10_tensor_view_t *out);

  /* Kernel invocation. */
  const weft10_attrs_t *(*kernel_attrs)(weft10_kernel_ctx_t *ctx);
  const char *(*kernel_node_name)(weft10_kernel_ctx_t *ctx);
  int (*kernel_num_inputs)(weft10_kernel_ctx_t *ctx);
  int (*kernel_num_outputs)(weft10_kernel_ctx_t *ctx);
  weft_status_t *(*kernel_input)(weft10_kernel_ctx_t *ctx, int index, weft10_tensor_view_t *out);
  /* Allocates output `index` on the kernel's device (or in host memory for a host-memory arg). */
  weft_status_t *(*kernel_allocate_output)(weft10_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                           int rank, const int64_t *dims, weft10_tensor_view_t *out);
  /* Makes output `output` share input `input`'s buffer with a new shape of the same element
   * count (Identity, Reshape, ExpandDims, Squeeze: no copy). */
  weft_status_t *(*kernel_forward_input)(weft10_kernel_ctx_t *ctx, int input, int output, int rank,
                                         const int64_t *dims);
  /* Device scratch memory freed when compute returns. */
  weft_status_t *(*kernel_scratch)(weft10_kernel_ctx_t *ctx, size_t nbytes, void **out);
  /* The backend's device handle (what device_open returned) and its ordinal. */
  void *(*kernel_device)(weft10_kernel_ctx_t *ctx);
  int (*kernel_device_ordinal)(weft10_kernel_ctx_t *ctx);
  /* Runs fn over [0, total) in chunks on the intra-op pool; returns when all chunks are done.
   * cost_per_unit is a rough cycle count per element, used to decide how finely to split. */
  void (*parallel_for)(weft10_kernel_ctx_t *ctx, int64_t total, int64_t cost_per_unit,
                       weft10_range_fn fn, void *arg);
  int (*kernel_num_threads)(weft10_kernel_ctx_t *ctx);
  /* Sets element `index` of a host string tensor that this kernel allocated (copies the bytes). */
  weft_status_t *(*string_assign)(weft10_kernel_ctx_t *ctx, const weft10_tensor_view_t *tensor,
                                  int64_t index, const char *data, size_t len);
  /* Sets output `index` to the value of a tensor attribute (Const), copied to the device. */
  weft_status_t *(*kernel_output_from_attr)(weft10_kernel_ctx_t *ctx, int index, const char *attr);

  /* Variables and references (TensorFlow's ref edges). kernel_variable finds or creates the
   * variable named by the node's container/shared_name attrs on this device and makes output 0
   * a reference to it. */
  weft_status_t *(*kernel_variable)(weft10_kernel_ctx_t *ctx);
  /* The current value behind ref input `index`; FAILED_PRECONDITION naming the variable if it
   * was never assigned. */
  weft_status_t *(*kernel_ref_input)(weft10_kernel_ctx_t *ctx, int index, weft10_tensor_view_t *out);
  /* Gives ref input `index` a buffer of this dtype and shape (reusing the old one when the shape
   * is unchanged) and returns a writable view; the variable counts as initialised afterwards. */
  weft_status_t *(*kernel_ref_assign)(weft10_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                      int rank, const int64_t *dims, weft10_tensor_view_t *out);
  /* Output `output` becomes the same reference as ref input `input` (Assign's output). */
  weft_status_t *(*kernel_forward_ref)(weft10_kernel_ctx_t *ctx, int input, int output);
  /* Serialises updates when use_locking is true. */
  void (*kernel_lock_ref)(weft10_kernel_ctx_t *ctx, int index);
  void (*kernel_unlock_ref)(weft10_kernel_ctx_t *ctx, int index);

  /* Shape inference. shape_input returns the rank (-1 unknown) and fills dims. */
  const weft10_attrs_t *(*shape_attrs)(weft10_shape_ctx_t *ctx);
  const char *(*shape_node_name)(weft10_shape_ctx_t *ctx);
  int (*shape_num_inputs)(weft10_shape_ctx_t *ctx);
  int (*shape_input)(weft10_shape_ctx_t *ctx, int index, int64_t dims[WEFT_MAX_RANK]);
  weft_dtype_t (*shape_input_dtype)(weft10_shape_ctx_t *ctx, int index);
  /* Host view of input `index` when it is a constant known at graph-build time; NOT_FOUND if not. */
  weft_status_t *(*shape_input_const)(weft10_shape_ctx_t *ctx, int index, weft10_tensor_view_t *out);
  weft_status_t *(*shape_set_output)(weft10_shape_ctx_t *ctx, int index, int rank,
                                     const int64_t *dims);
};

/* ---------------------------------------------------------------------------------------------
 * The plugin's table. */

typedef struct weft10_plugin_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char *name;
  const char *version;
  /* Registers what the plugin offers. *plugin_state goes to shutdown. A returned status means the
   * plugin is skipped (and everything it registered is dropped). */
  weft_status_t *(*init)(const weft10_host_t *host, const weft10_registrar_t *registrar,
                         void **plugin_state);
  void (*shutdown)(void *plugin_state); /* optional */
} weft10_plugin_info_t;

typedef const weft10_plugin_info_t *(*weft10_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* WEFT10_PLUGIN_H */
