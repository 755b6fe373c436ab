/* The Weft plugin ABI, version 1.1: everything a backend or kernel-set plugin needs, and nothing
 * that needs libweft. A plugin is a shared object that exports one symbol, WEFT_PLUGIN_ENTRY_SYMBOL,
 * returning a const weft_plugin_info_t. The host calls its init() with a table of host functions
 * and a registrar through which the plugin adds device backends, op definitions and kernels.
 *
 * Rules that keep old plugins loading in new cores:
 *  - Every struct that crosses the boundary starts with `size_t struct_size`. Fields are only ever
 *    appended; a reader uses a field only when struct_size says the writer had it.
 *  - WEFT_ABI_MAJOR must match exactly; WEFT_ABI_MINOR only grows (additions).
 *  - Plugins never link against libweft; every service comes through weft_host_t.
 *  - Arrays of structs (weft_conformance_case_t.inputs) are walked with the stride of their first
 *    element's struct_size, so that their element type may grow too.
 *  - A field added in minor N is marked "ABI 1.N" below. A plugin built against an older minor
 *    simply has smaller structs (the host reads only what struct_size covers); a plugin that uses a
 *    host or registrar entry added in minor N checks host->abi_minor >= N (or the table's
 *    struct_size) first when it wants to keep loading in older cores. The loader refuses plugins
 *    whose minor is newer than its own, so a plugin built against this header never meets a core
 *    without these entries.
 *
 * Ownership: strings and arrays a plugin passes to the registrar are copied by the host during the
 * call (the plugin may free or reuse them when the call returns); function pointers and user_data
 * pointers are kept as they are and must stay valid while the plugin is loaded (plugins are never
 * unloaded once init succeeded). Views (weft_tensor_view_t, weft_case_array_t) the host fills are
 * borrowed: valid until the plugin function they were handed to returns. Tables the plugin hands
 * over by pointer (weft_plugin_info_t, the services a backend returns) stay owned by the plugin and
 * must outlive it. A weft_status_t returned by a plugin function is owned by the host from then
 * on; one returned by a host function is owned by the plugin, which returns it onward or frees it
 * with host->status_free. */
#ifndef WEFT_PLUGIN_H
#define WEFT_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_ABI_MAJOR 1
#define WEFT_ABI_MINOR 4

/* The one symbol a plugin exports; its type is weft_plugin_entry_fn. */
#define WEFT_PLUGIN_ENTRY_SYMBOL "weft_plugin_entry"

#if defined(__GNUC__)
#define WEFT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define WEFT_PLUGIN_EXPORT
#endif

typedef struct weft_host weft_host_t;
typedef struct weft_registrar weft_registrar_t;
typedef struct weft_attrs weft_attrs_t;           /* a node's attributes, host-owned */
typedef struct weft_kernel_ctx weft_kernel_ctx_t; /* one kernel invocation, host-owned */
typedef struct weft_shape_ctx weft_shape_ctx_t;   /* one shape-inference call, host-owned */

typedef enum weft_log_level {
  WEFT_LOG_ERROR = 0,
  WEFT_LOG_WARNING = 1,
  WEFT_LOG_INFO = 2,
  WEFT_LOG_DEBUG = 3,
} weft_log_level_t;

/* ---------------------------------------------------------------------------------------------
 * Tensor views: how a kernel sees its inputs and outputs. */

typedef struct weft_tensor_view {
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
} weft_tensor_view_t;

/* ---------------------------------------------------------------------------------------------
 * Device backends. */

typedef enum weft_device_class {
  WEFT_DEVICE_CPU_LIKE = 0,
  WEFT_DEVICE_GPU_LIKE = 1,
} weft_device_class_t;

typedef struct weft_device_props {
  size_t struct_size;
  char description[128];       /* e.g. "lavapipe (LLVM 15.0.6, 256 bits)" */
  uint64_t memory_bytes;       /* total device memory, 0 if unknown */
  char compute_capability[32]; /* free-form, "" if none */
  char bus_id[64];             /* free-form, "" if none */
  int host_accessible;         /* device pointers are plain host memory the core may touch */
  /* Since ABI 1.2. Non-zero when the device is itself an emulation running on the host's CPU
   * (lavapipe, VkPhysicalDeviceType CPU): placement ranks it below the CPU, gives it only the
   * ops pinned to it by its own type (/device:VULKAN:0), and never lets "/gpu:N" mean it. */
  int emulated;
} weft_device_props_t;

/* Options a session hands to a device when it opens it (TensorFlow's GPUOptions). */
typedef struct weft_device_options {
  size_t struct_size;
  double memory_fraction; /* share of device memory to take; 0 means the backend's default */
  int allow_growth;       /* allocate on demand instead of up front */
} weft_device_options_t;

typedef struct weft_backend {
  size_t struct_size;
  const char *device_type;         /* "CPU", "VULKAN", "CUDA", ...: upper case, [A-Z0-9_] */
  weft_device_class_t device_class;
  int priority;                    /* higher wins among backends of one class */
  void *backend_state;             /* passed back to every function below */

  /* Number of devices. When it is 0, *why_none may point at a static reason ("no driver"). */
  int (*device_count)(void *backend_state, const char **why_none);
  weft_status_t *(*device_properties)(void *backend_state, int ordinal, weft_device_props_t *out);
  /* Opens a device; *device is the backend's handle for it, passed to the functions below. */
  weft_status_t *(*device_open)(void *backend_state, int ordinal, const weft_device_options_t *opts,
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

  /* ABI 1.1, optional (NULL: none). Backend-specific services for kernels of other plugins that
   * run on this backend's devices: returns the table called `name` (a name carries its major
   * version, e.g. WEFT_VULKAN_SERVICES in weft/vulkan.h) for the opened device `device`, or NULL
   * when the backend has no such table. The table starts with size_t struct_size, is owned by the
   * backend and stays valid while the device is open. Kernels reach it through
   * host->kernel_device_services. */
  const void *(*device_services)(void *device, const char *name);
} weft_backend_t;

/* ---------------------------------------------------------------------------------------------
 * Op definitions, in TensorFlow's REGISTER_OP syntax, e.g.
 *   inputs  = { "x: T", "y: T", NULL }            outputs = { "z: T", NULL }
 *   attrs   = { "T: {float, double, int32}", NULL }
 * Inputs may be "values: N * T" (a list), "ref: Ref(T)" (a reference), or a fixed type ("shape:
 * int32"). Attrs: "name: type", "name: type = default", "N: int >= 1", "T: {float, int32} = DT_FLOAT". */

typedef weft_status_t *(*weft_shape_fn)(weft_shape_ctx_t *ctx);

typedef struct weft_op_def {
  size_t struct_size;
  const char *name;
  const char *const *inputs;  /* NULL-terminated */
  const char *const *outputs; /* NULL-terminated */
  const char *const *attrs;   /* NULL-terminated; may be NULL */
  int is_stateful;            /* never constant-folded or deduplicated */
  weft_shape_fn shape_fn;     /* NULL: outputs of unknown shape */

  /* ABI 1.1, optional (NULL: the op has no gradient). The gradient of the op as a small program
   * over existing ops, one statement per line (or ';'), e.g. for y = x * sigmoid(beta * x):
   *     s  = Sigmoid(Mul(x, $beta))
   *     dx = Mul(dy, AddV2(s, Mul(Mul($beta, y), Sub(1, s))))
   * Names: the op's input and output args ("x", "y"), "d<output>" for the gradient flowing into
   * an output ("dy"), earlier statements, "name:k" for output k. "$attr" is a scalar constant
   * from the forward node's attr, a number is a scalar constant; constants take the dtype of the
   * first non-constant input of their call. "Op(...){attr=value, attr=$attr}" sets attrs.
   * The statement "d<input>" is the gradient of input <input>; an input without one has none.
   * Checked when the op is registered (unknown ops or names are INVALID_ARGUMENT naming the op
   * and the line); copied by the host. The full grammar is in docs/sdk.md. */
  const char *gradient;
} weft_op_def_t;

/* ---------------------------------------------------------------------------------------------
 * Kernels: one implementation of an op on one device type for some dtypes. */

typedef struct weft_type_constraint {
  const char *attr;            /* a type attribute of the op, e.g. "T" */
  const weft_dtype_t *dtypes;  /* the values this kernel accepts */
  size_t n_dtypes;
} weft_type_constraint_t;

/* Called once per node when a session first prepares it; *state is passed to every compute. */
typedef weft_status_t *(*weft_kernel_create_fn)(const weft_host_t *host, const weft_attrs_t *attrs,
                                                void *user_data, void **state);
/* Computes one invocation. state is what create returned, or user_data when create is NULL. */
typedef weft_status_t *(*weft_kernel_compute_fn)(weft_kernel_ctx_t *ctx, void *state);
typedef void (*weft_kernel_destroy_fn)(void *state);

typedef struct weft_kernel_def {
  size_t struct_size;
  const char *op;
  const char *device_type;
  const weft_type_constraint_t *constraints;
  size_t n_constraints;
  const char *const *host_memory_args; /* NULL-terminated input/output arg names, or NULL */
  int priority;                        /* higher wins when several kernels match */
  weft_kernel_create_fn create;        /* optional */
  weft_kernel_compute_fn compute;
  weft_kernel_destroy_fn destroy;      /* optional */
  void *user_data;
} weft_kernel_def_t;

/* ---------------------------------------------------------------------------------------------
 * Conformance cases (ABI 1.1): a plugin ships cases for its ops, and weft-conformance runs them
 * beside its own, on every device that has a kernel for the op (docs/sdk.md, docs/conformance.md).
 * A case names the op, its attrs, how to generate each input, and a reference function that
 * computes the outputs in double precision from the same inputs. */

/* How an input's values are generated (deterministically, seeded from op, dtype and case name). */
typedef enum weft_case_gen {
  WEFT_CASE_GEN_UNIFORM = 0,  /* uniform in [lo, hi] (integers: within the dtype's range) */
  WEFT_CASE_GEN_NONZERO = 1,  /* as UNIFORM, never 0 (divisors) */
  WEFT_CASE_GEN_POSITIVE = 2, /* in (0, hi] */
  WEFT_CASE_GEN_SPECIAL = 3,  /* the dtype's special values (NaN, +-Inf, +-0, denormals, extremes)
                                 mixed with ordinary values */
  WEFT_CASE_GEN_ARANGE = 4,   /* 0, 1, 2, ... */
  WEFT_CASE_GEN_BOOL = 5,     /* random 0/1 */
} weft_case_gen_t;

typedef struct weft_case_input {
  size_t struct_size;
  weft_dtype_t dtype;          /* WEFT_DT_INVALID: the dtype the case is running with */
  int rank;                    /* 0..WEFT_MAX_RANK */
  int64_t dims[WEFT_MAX_RANK];
  weft_case_gen_t gen;
  double lo, hi;               /* lo == hi == 0: the generator's default range for the dtype */
  int is_const;                /* a Const node rather than a fed Placeholder (axes, shapes) */
} weft_case_input_t;

/* An array of values in double precision, row-major. The host owns the values: inputs are
 * read-only; the reference writes outputs' values (already shaped, zero-filled). */
typedef struct weft_case_array {
  size_t struct_size;
  weft_dtype_t dtype;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t num_elements;
  double *values;              /* num_elements values (bools as 0/1) */
} weft_case_array_t;

/* Computes the expected outputs from the inputs. attrs are the node's attributes (the case's,
 * the op's defaults and the type attribute), read with host->attr_*. outputs arrive with the
 * dtype and shape the op's shape function gives (the case fails if it cannot tell); the reference
 * fills their values, rounding is the host's business. A returned status fails the case. Called
 * from one thread at a time. */
typedef weft_status_t *(*weft_case_reference_fn)(const weft_host_t *host, const weft_attrs_t *attrs,
                                                 const weft_case_array_t *inputs, size_t n_inputs,
                                                 weft_case_array_t *outputs, size_t n_outputs,
                                                 void *user_data);

typedef struct weft_conformance_case {
  size_t struct_size;
  const char *op;                  /* an op this plugin (or an earlier one, or the core) defines */
  const char *name;                /* what the case checks: "odd_1023", "beta_2": [A-Za-z0-9_.-] */
  const weft_dtype_t *dtypes;      /* the case runs once per dtype (with type_attr set to it) */
  size_t n_dtypes;                 /* 0: once, with no type attribute set */
  const char *type_attr;           /* NULL: "T" */
  const char *const *attrs;        /* NULL-terminated "name=value" in the op's attr syntax
                                      ("beta=1.5", "transpose_a=true", "perm=[1,0]"), or NULL */
  const weft_case_input_t *inputs; /* n_inputs, one per input of the op (stride: struct_size) */
  size_t n_inputs;
  weft_case_reference_fn reference; /* required unless expect_code is set */
  void *user_data;                 /* passed to reference; kept, not copied */
  /* Tolerances (numpy's allclose |got - want| <= atol + rtol |want|, and the normalised mean
   * squared error): 0 keeps the conformance default for the dtype (a few ulps for floats, exact
   * for integers); tol_scale > 1 multiplies the defaults (transcendental functions). */
  double rtol, atol, max_nmse, tol_scale;
  /* Also check the op's gradient (weft_op_def_t.gradient) on the device against central finite
   * differences of the reference, for floating-point dtypes. */
  int check_gradient;
  /* WEFT_OK (0), or the code the run must fail with (and a substring of its message, or NULL). */
  weft_code_t expect_code;
  const char *expect_message;
} weft_conformance_case_t;

/* ---------------------------------------------------------------------------------------------
 * Registration: handed to the plugin's init(). ctx is the host's and goes back unchanged. Every
 * entry copies what it is given (see Ownership above) and returns a status the plugin owns. */

struct weft_registrar {
  size_t struct_size;
  void *ctx;
  weft_status_t *(*register_backend)(void *ctx, const weft_backend_t *backend);
  weft_status_t *(*register_op)(void *ctx, const weft_op_def_t *op);
  weft_status_t *(*register_kernel)(void *ctx, const weft_kernel_def_t *kernel);
  /* ABI 1.1. Its op must be defined already (by the core, an earlier plugin, or this plugin
   * before this call); its attrs must parse as the op's attr types. INVALID_ARGUMENT or NOT_FOUND
   * naming the case otherwise. */
  weft_status_t *(*register_conformance_case)(void *ctx, const weft_conformance_case_t *c);
};

/* ---------------------------------------------------------------------------------------------
 * Host services. */

typedef void (*weft_range_fn)(void *arg, int64_t begin, int64_t end);

struct weft_host {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* Logging, through the host's log (WEFT_LOG / G_MESSAGES_DEBUG decide what shows). */
  void (*log)(weft_log_level_t level, const char *plugin, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));

  /* Statuses. status_new returns a new status the caller owns. */
  weft_status_t *(*status_new)(weft_code_t code, const char *fmt, ...)
      __attribute__((format(printf, 2, 3)));
  weft_code_t (*status_code)(const weft_status_t *status);
  const char *(*status_message)(const weft_status_t *status);
  void (*status_free)(weft_status_t *status);

  /* Attributes. Each returns NOT_FOUND naming the attribute when it is absent, INVALID_ARGUMENT
   * when it has another type. Returned strings and arrays are borrowed from attrs. */
  int (*attr_has)(const weft_attrs_t *attrs, const char *name);
  weft_status_t *(*attr_int)(const weft_attrs_t *attrs, const char *name, int64_t *out);
  weft_status_t *(*attr_float)(const weft_attrs_t *attrs, const char *name, float *out);
  weft_status_t *(*attr_bool)(const weft_attrs_t *attrs, const char *name, int *out);
  weft_status_t *(*attr_type)(const weft_attrs_t *attrs, const char *name, weft_dtype_t *out);
  weft_status_t *(*attr_string)(const weft_attrs_t *attrs, const char *name, const char **out,
                                size_t *len);
  weft_status_t *(*attr_int_list)(const weft_attrs_t *attrs, const char *name,
                                  const int64_t **out, size_t *n);
  weft_status_t *(*attr_float_list)(const weft_attrs_t *attrs, const char *name,
                                    const float **out, size_t *n);
  weft_status_t *(*attr_type_list)(const weft_attrs_t *attrs, const char *name,
                                   const weft_dtype_t **out, size_t *n);
  /* A shape attribute; *rank is -1 for unknown rank, dims may hold WEFT_DIM_UNKNOWN. */
  weft_status_t *(*attr_shape)(const weft_attrs_t *attrs, const char *name, int *rank,
                               int64_t dims[WEFT_MAX_RANK]);
  /* A tensor attribute as a host-memory view. */
  weft_status_t *(*attr_tensor)(const weft_attrs_t *attrs, const char *name,
                                weft_tensor_view_t *out);

  /* Kernel invocation. */
  const weft_attrs_t *(*kernel_attrs)(weft_kernel_ctx_t *ctx);
  const char *(*kernel_node_name)(weft_kernel_ctx_t *ctx);
  int (*kernel_num_inputs)(weft_kernel_ctx_t *ctx);
  int (*kernel_num_outputs)(weft_kernel_ctx_t *ctx);
  weft_status_t *(*kernel_input)(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out);
  /* Allocates output `index` on the kernel's device (or in host memory for a host-memory arg). */
  weft_status_t *(*kernel_allocate_output)(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                           int rank, const int64_t *dims, weft_tensor_view_t *out);
  /* Makes output `output` share input `input`'s buffer with a new shape of the same element
   * count (Identity, Reshape, ExpandDims, Squeeze: no copy). */
  weft_status_t *(*kernel_forward_input)(weft_kernel_ctx_t *ctx, int input, int output, int rank,
                                         const int64_t *dims);
  /* Device scratch memory freed when compute returns. */
  weft_status_t *(*kernel_scratch)(weft_kernel_ctx_t *ctx, size_t nbytes, void **out);
  /* The backend's device handle (what device_open returned) and its ordinal. */
  void *(*kernel_device)(weft_kernel_ctx_t *ctx);
  int (*kernel_device_ordinal)(weft_kernel_ctx_t *ctx);
  /* Runs fn over [0, total) in chunks on the intra-op pool; returns when all chunks are done.
   * cost_per_unit is a rough cycle count per element, used to decide how finely to split. */
  void (*parallel_for)(weft_kernel_ctx_t *ctx, int64_t total, int64_t cost_per_unit,
                       weft_range_fn fn, void *arg);
  int (*kernel_num_threads)(weft_kernel_ctx_t *ctx);
  /* Sets element `index` of a host string tensor that this kernel allocated (copies the bytes). */
  weft_status_t *(*string_assign)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *tensor,
                                  int64_t index, const char *data, size_t len);
  /* Sets output `index` to the value of a tensor attribute (Const), copied to the device. */
  weft_status_t *(*kernel_output_from_attr)(weft_kernel_ctx_t *ctx, int index, const char *attr);

  /* Variables and references (TensorFlow's ref edges). kernel_variable finds or creates the
   * variable named by the node's container/shared_name attrs on this device and makes output 0
   * a reference to it. */
  weft_status_t *(*kernel_variable)(weft_kernel_ctx_t *ctx);
  /* The current value behind ref input `index`; FAILED_PRECONDITION naming the variable if it
   * was never assigned. A resource handle input (VarHandleOp's string scalar) reads as a ref to
   * the variable it names, in this entry, kernel_ref_assign, kernel_lock_ref and
   * kernel_unlock_ref: so a ref op's kernel registered under a ResourceApply* name serves it. */
  weft_status_t *(*kernel_ref_input)(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out);
  /* Gives ref input `index` a buffer of this dtype and shape (reusing the old one when the shape
   * is unchanged) and returns a writable view; the variable counts as initialised afterwards. */
  weft_status_t *(*kernel_ref_assign)(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                      int rank, const int64_t *dims, weft_tensor_view_t *out);
  /* Output `output` becomes the same reference as ref input `input` (Assign's output). */
  weft_status_t *(*kernel_forward_ref)(weft_kernel_ctx_t *ctx, int input, int output);
  /* Serialises updates when use_locking is true. */
  void (*kernel_lock_ref)(weft_kernel_ctx_t *ctx, int index);
  void (*kernel_unlock_ref)(weft_kernel_ctx_t *ctx, int index);

  /* Shape inference. shape_input returns the rank (-1 unknown) and fills dims. */
  const weft_attrs_t *(*shape_attrs)(weft_shape_ctx_t *ctx);
  const char *(*shape_node_name)(weft_shape_ctx_t *ctx);
  int (*shape_num_inputs)(weft_shape_ctx_t *ctx);
  int (*shape_input)(weft_shape_ctx_t *ctx, int index, int64_t dims[WEFT_MAX_RANK]);
  weft_dtype_t (*shape_input_dtype)(weft_shape_ctx_t *ctx, int index);
  /* Host view of input `index` when it is a constant known at graph-build time; NOT_FOUND if not. */
  weft_status_t *(*shape_input_const)(weft_shape_ctx_t *ctx, int index, weft_tensor_view_t *out);
  weft_status_t *(*shape_set_output)(weft_shape_ctx_t *ctx, int index, int rank,
                                     const int64_t *dims);

  /* ---- ABI 1.1 (present when abi_minor >= 1): device services for kernels. ---- */
  /* The kernel's device type ("VULKAN"); borrowed, valid for the process lifetime. */
  const char *(*kernel_device_type)(weft_kernel_ctx_t *ctx);
  /* Synchronous copies between host memory and memory of the kernel's device, through the
   * backend's copy functions: device_src / device_dst is a device pointer as a view's data holds
   * it (the buffer from its start; opaque handles have no meaningful offsets), host memory is the
   * caller's. Operations queued on the device before the call are complete before a copy to the
   * host reads; work queued after a copy from the host sees its bytes. On host-accessible
   * devices they are plain memcpy (host-memory arguments are host memory already: use memcpy).
   * This is how a kernel of one plugin works with memory of another plugin's backend it knows
   * nothing about. */
  weft_status_t *(*kernel_copy_to_host)(weft_kernel_ctx_t *ctx, void *host_dst,
                                        const void *device_src, size_t nbytes);
  weft_status_t *(*kernel_copy_from_host)(weft_kernel_ctx_t *ctx, void *device_dst,
                                          const void *host_src, size_t nbytes);
  /* The backend's services table `name` for the kernel's device (weft_backend_t.device_services),
   * or NULL when the backend offers none. Borrowed from the backend. */
  const void *(*kernel_device_services)(weft_kernel_ctx_t *ctx, const char *name);
  /* ABI 1.3: a list(string) attribute (TensorFlow's fused_ops): *n values, borrowed from attrs;
   * an empty list is *n = 0. Errors as the other attribute getters'. */
  weft_status_t *(*attr_string_list)(const weft_attrs_t *attrs, const char *name,
                                     const weft_string_t **out, size_t *n);
  /* ABI 1.4: nonzero when input `index`'s bytes never change while they live: a Const's value
   * in host memory, also through Identity or Reshape (which share its buffer). The same id
   * means the same bytes for the life of the process, so a kernel may cache what it derives
   * from them (packed weights) in its per-node state under the id. 0 for anything else (a
   * variable, a fed or computed tensor, a bad index). */
  uint64_t (*kernel_input_constant)(weft_kernel_ctx_t *ctx, int index);
};

/* ---------------------------------------------------------------------------------------------
 * The plugin's table. */

typedef struct weft_plugin_info {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char *name;
  const char *version;
  /* Registers what the plugin offers. *plugin_state goes to shutdown. A returned status means the
   * plugin is skipped (and everything it registered is dropped). host is valid for the life of
   * the process (keep it); registrar only until init returns. name and version are borrowed for
   * the call (copied). */
  weft_status_t *(*init)(const weft_host_t *host, const weft_registrar_t *registrar,
                         void **plugin_state);
  void (*shutdown)(void *plugin_state); /* optional */
} weft_plugin_info_t;

typedef const weft_plugin_info_t *(*weft_plugin_entry_fn)(void);

/* The first statement of a plugin's init(), in the spirit of SQLITE_EXTENSION_INIT:
 *
 *   static weft_status_t *my_init(const weft_host_t *host, const weft_registrar_t *reg,
 *                                 void **plugin_state) {
 *     *plugin_state = NULL;
 *     WEFT_PLUGIN_INIT(host, reg, "my plugin");
 *     ...
 *
 * It returns from init() when the host or registrar table is smaller than the ones this plugin
 * was compiled against (a shorter table cannot be trusted for any function): FAILED_PRECONDITION
 * "<who>: host table too small (N < M bytes)" (or "registrar table ..."), or NULL when the host
 * table is too small even to hold status_new. Needs nothing but this header. */
#define WEFT_PLUGIN_INIT(host, registrar, who)                                         \
  do {                                                                                 \
    weft_status_t *weft_plugin_init_err_ = NULL;                                       \
    if (!weft_plugin_check_tables((host), (registrar), (who), &weft_plugin_init_err_)) \
      return weft_plugin_init_err_;                                                    \
  } while (0)

/* What WEFT_PLUGIN_INIT checks: false (and *err set as above) when init must return at once. */
static inline int weft_plugin_check_tables(const weft_host_t *host,
                                           const weft_registrar_t *registrar, const char *who,
                                           weft_status_t **err) {
  *err = NULL;
  if (host->struct_size < sizeof(weft_host_t)) {
    if (host->struct_size >= offsetof(weft_host_t, status_new) + sizeof host->status_new)
      *err =
          host->status_new(WEFT_FAILED_PRECONDITION, "%s: host table too small (%zu < %zu bytes)",
                           who, host->struct_size, sizeof(weft_host_t));
    return 0;
  }
  if (registrar->struct_size < sizeof(weft_registrar_t)) {
    *err = host->status_new(WEFT_FAILED_PRECONDITION,
                            "%s: registrar table too small (%zu < %zu bytes)", who,
                            registrar->struct_size, sizeof(weft_registrar_t));
    return 0;
  }
  return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* WEFT_PLUGIN_H */
