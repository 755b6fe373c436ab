/* gpu_kernels.h: the kernels the GPU backends (CUDA, Vulkan) share, in the style of ggml's backend
 * interface. The host side of each kernel (argument and shape checks, broadcasting, reduction
 * plans, launch geometry in elements, which error when) is written once, in gpu_kernels.c; a
 * backend lends only its device steps, as one table of launch functions (weft_pc_launch_t) that
 * it installs in weft_pc_launch during init, before it registers the weft_pc_k_* kernels below.
 *
 * A backend's op codes are its own (the CUDA kernels' CU_*, the shaders' VK_*): the shared op
 * rows carry them through untouched, and the table names the few the drivers need to know
 * (Add for BiasAdd and AddN, the comparisons that answer incompatible shapes, the first op with
 * a bool output). */
#ifndef WEFT_PC_GPU_KERNELS_H
#define WEFT_PC_GPU_KERNELS_H

#include "plugin_common.h"

/* ---------------------------------------------------------------------------------------------
 * The device interface a GPU backend implements: the weft_backend_t entry points that take the
 * backend's device handle (its own record, behind void *), named <prefix>_device_close,
 * <prefix>_alloc, and so on. WEFT_PC_DEVICE_API(prefix) declares them; in the backend's
 * weft_backend_t initializer, WEFT_PC_DEVICE_ENTRIES(prefix) names them. */
#define WEFT_PC_DEVICE_API(prefix)                                                                 \
  void prefix##_device_close(void *device);                                                        \
  weft_status_t *prefix##_alloc(void *device, size_t nbytes, void **ptr);                          \
  void prefix##_free(void *device, void *ptr);                                                     \
  weft_status_t *prefix##_copy_to_device(void *device, void *dst, const void *src, size_t nbytes); \
  weft_status_t *prefix##_copy_from_device(void *device, void *dst, const void *src,               \
                                           size_t nbytes);                                         \
  weft_status_t *prefix##_copy_device_to_device(void *device, void *dst, const void *src,          \
                                                size_t nbytes);                                    \
  weft_status_t *prefix##_synchronize(void *device);                                               \
  weft_status_t *prefix##_memory_usage(void *device, uint64_t *in_use, uint64_t *limit);

#define WEFT_PC_DEVICE_ENTRIES(prefix)                                                          \
  .device_close = prefix##_device_close, .alloc = prefix##_alloc, .free = prefix##_free,        \
  .copy_to_device = prefix##_copy_to_device, .copy_from_device = prefix##_copy_from_device,     \
  .copy_device_to_device = prefix##_copy_device_to_device, .synchronize = prefix##_synchronize, \
  .memory_usage = prefix##_memory_usage

/* The start of a GPU plugin's init: WEFT_PC_PLUGIN_INIT, then weft_pc_launch = launch. */
#define WEFT_PC_GPU_PLUGIN_INIT(host, registrar, plugin_state, who, launch) \
  do {                                                                      \
    WEFT_PC_PLUGIN_INIT(host, registrar, plugin_state, who);                \
    weft_pc_launch = (launch);                                              \
  } while (0)

/* A GPU backend's weft_backend_t, `var` (static const), gpu-like, with no backend state: its
 * device_count, device_properties, device_open and backend_shutdown forward to
 *   int count_fn(const char **why_none);
 *   const weft_device_props_t *props_fn(int ordinal);             (NULL: no such device)
 *   weft_status_t *open_fn(int ordinal, const weft_device_options_t *opts, device_t **out);
 *   void shutdown_fn(void);
 * and its device entry points are WEFT_PC_DEVICE_ENTRIES(prefix). `extra` is one more
 * designated initializer (.device_services = ..., or one that changes nothing). */
#define WEFT_PC_GPU_BACKEND(var, prefix, device_t, type, prio, count_fn, props_fn, open_fn,        \
                            shutdown_fn, extra)                                                    \
  static int var##_device_count(void *backend_state, const char **why_none) {                      \
    (void)backend_state;                                                                           \
    return count_fn(why_none);                                                                     \
  }                                                                                                \
  static weft_status_t *var##_device_properties(void *backend_state, int ordinal,                  \
                                                weft_device_props_t *out) {                        \
    (void)backend_state;                                                                           \
    return weft_pc_device_properties(props_fn(ordinal), (type), ordinal, out);                     \
  }                                                                                                \
  static weft_status_t *var##_device_open(void *backend_state, int ordinal,                        \
                                          const weft_device_options_t *opts, void **device) {      \
    (void)backend_state;                                                                           \
    device_t *dev = NULL;                                                                          \
    WEFT_RETURN_IF_ERROR(open_fn(ordinal, opts, &dev));                                            \
    *device = dev;                                                                                 \
    return NULL;                                                                                   \
  }                                                                                                \
  static void var##_backend_shutdown(void *backend_state) {                                        \
    (void)backend_state;                                                                           \
    shutdown_fn();                                                                                 \
  }                                                                                                \
  static const weft_backend_t var = {                                                              \
      .struct_size = sizeof(weft_backend_t),                                                       \
      .device_type = (type),                                                                       \
      .device_class = WEFT_DEVICE_GPU_LIKE,                                                        \
      .priority = (prio),                                                                          \
      .backend_state = NULL,                                                                       \
      .device_count = var##_device_count,                                                          \
      .device_properties = var##_device_properties,                                                \
      .device_open = var##_device_open,                                                            \
      WEFT_PC_DEVICE_ENTRIES(prefix),                                                              \
      .backend_shutdown = var##_backend_shutdown,                                                  \
      extra,                                                                                       \
  }

/* weft_backend_t.device_properties from the backend's record p of device `ordinal` (NULL when
 * there is none: INVALID_ARGUMENT "<device_type>: no device with ordinal N"), copied no further
 * than the caller's struct_size (an older core's struct is smaller). */
weft_status_t *weft_pc_device_properties(const weft_device_props_t *p, const char *device_type,
                                         int ordinal, weft_device_props_t *out);

/* ---------------------------------------------------------------------------------------------
 * Kernels */

/* One elementwise op: the kernel's user_data. param names a float attribute (alpha) the op reads
 * with param_default when absent; NULL for none. */
typedef struct weft_pc_unary_op {
  const char *name;
  int code;
  bool with_int; /* registered for the backend's integer types too */
  const char *param;
  float param_default;
} weft_pc_unary_op_t;

typedef struct weft_pc_binary_op {
  const char *name;
  int code;
  const weft_dtype_t *dtypes; /* NULL: bool only, no type attribute (LogicalAnd/Or) */
  size_t n_dtypes;
  const char *param;
  float param_default;
} weft_pc_binary_op_t;

/* One reduction (Sum, Mean, ...): name is what messages call it. */
typedef struct weft_pc_reduce_op {
  const char *name;
  int code;
  const weft_dtype_t *dtypes; /* NULL: bool only (All, Any) */
  size_t n_dtypes;
} weft_pc_reduce_op_t;

/* A backend's device steps. Every pointer is an opaque device pointer as views carry it; counts
 * and offsets are in elements. A launch records or enqueues work on the kernel's device and
 * returns the status of doing so (errors name the node, through weft_pc_error). */
typedef struct weft_pc_launch {
  const char *device; /* "CUDA", "Vulkan": in messages */
  /* The backend's dtype code, or -1 where its kernels do not handle the dtype. */
  int (*dt)(weft_dtype_t dtype);
  /* Refuses a tensor its kernels cannot index (too many elements or bytes); `what` names it.
   * NULL: no limit. */
  weft_status_t *(*check)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v, const char *what);

  /* ---- Elementwise ---- */
  /* y = op(x) over x->num_elements (> 0) elements; y is bool when op >= un_first_bool_out. */
  weft_status_t *(*unary)(weft_kernel_ctx_t *ctx, int op, double alpha, const weft_tensor_view_t *x,
                          const weft_tensor_view_t *y, const char *what);
  /* z = op(x, y) over the broadcast geometry bc (inputs 0 and 1); z may be x. */
  weft_status_t *(*binary)(weft_kernel_ctx_t *ctx, int op, double alpha, weft_dtype_t dtype,
                           const weft_pc_bcast_t *bc, const void *x, const void *y, void *z,
                           const char *what);
  /* z = c ? t : e over bc (inputs c, t, e); elements of dtype. */
  weft_status_t *(*select)(weft_kernel_ctx_t *ctx, const weft_pc_bcast_t *bc, weft_dtype_t dtype,
                           const void *c, const void *t, const void *e, void *z, const char *what);
  /* y = x converted to y's dtype (both handled: dt() >= 0). */
  weft_status_t *(*cast)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                         const weft_tensor_view_t *y);
  /* One bool element. */
  weft_status_t *(*fill_bool)(weft_kernel_ctx_t *ctx, void *dst, bool value);
  /* Zeros in every element of v. */
  weft_status_t *(*zero)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v);
  weft_status_t *(*copy)(weft_kernel_ctx_t *ctx, void *dst, const void *src, size_t nbytes);
  /* Device memory freed after the kernel returns. */
  weft_status_t *(*scratch)(weft_kernel_ctx_t *ctx, size_t nbytes, void **out);
  /* Element coord goes from in[in_off + coord . in_strides] to out[out_off + coord . out_strides]
   * (out_strides NULL: dense); weft_pc_copy_strided_fn. */
  weft_pc_copy_strided_fn copy_strided;
  /* out (dense) element i, row-major over dims[0..rank), = in[sum(coord[d] * strides[d])]. */
  weft_status_t *(*gather)(weft_kernel_ctx_t *ctx, void *out, const void *in, weft_dtype_t dtype,
                           int rank, const int64_t *dims, const int64_t *strides);

  /* ---- Reductions (weft_pc_reduce_plan's shapes); count is Mean's divisor ---- */
  weft_status_t *(*reduce_rows)(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                weft_dtype_t dtype, const void *x, void *y, int64_t rows,
                                int64_t len, int64_t count);
  weft_status_t *(*reduce_cols)(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                weft_dtype_t dtype, const void *x, void *y, int64_t outer,
                                int64_t mid, int64_t inner, int64_t count);
  /* Every output folds in exactly one element of x (nothing is reduced). */
  weft_status_t *(*reduce_single)(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                  const weft_tensor_view_t *x, const weft_tensor_view_t *y,
                                  int64_t count);
  /* The identity of op (what reducing nothing gives) in every element of y. */
  weft_status_t *(*reduce_identity)(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                    const weft_tensor_view_t *y);
  /* ArgMax (is_max) / ArgMin over a's [outer, n, inner] view of a->x into y. */
  weft_status_t *(*arg)(weft_kernel_ctx_t *ctx, bool is_max, const weft_pc_arg_t *a,
                        const weft_tensor_view_t *y);

  /* ---- Softmax, matrix products ---- */
  weft_status_t *(*softmax)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                            const weft_tensor_view_t *y, int64_t rows, int64_t cols,
                            bool log_softmax);
  /* `batches` products C_i = op(A_i) op(B_i): A_i at element off_a + i * stride_a of a, B_i at
   * off_b + i * stride_b of b, C_i dense [m, n] at off_c + i * m * n of c. */
  weft_status_t *(*matmul)(weft_kernel_ctx_t *ctx, weft_dtype_t dtype, const void *a, const void *b,
                           void *c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                           int64_t batches, int64_t stride_a, int64_t stride_b, int64_t off_a,
                           int64_t off_b, int64_t off_c);

  /* The backend's op codes the drivers need. */
  int bin_add, bin_eq, bin_ne, bin_first_bool_out, un_first_bool_out;
  const weft_pc_reduce_op_t *sum_op; /* BiasAddGrad's */
  const weft_pc_reduce_op_t *l2_op;  /* L2Loss's */
} weft_pc_launch_t;

/* The plugin's launch table, set in its init before it registers these kernels (each plugin has
 * its own copy of plugins/common, as it has of weft_pc_host). */
extern const weft_pc_launch_t *weft_pc_launch;

/* Kernels; user_data as said. */
weft_status_t *weft_pc_k_unary(weft_kernel_ctx_t *ctx, void *state);    /* weft_pc_unary_op_t */
weft_status_t *weft_pc_k_binary(weft_kernel_ctx_t *ctx, void *state);   /* weft_pc_binary_op_t */
weft_status_t *weft_pc_k_bias_add(weft_kernel_ctx_t *ctx, void *state); /* unused */
weft_status_t *weft_pc_k_addn(weft_kernel_ctx_t *ctx, void *state);     /* unused */
/* Select (user_data NULL) and SelectV2 (any non-NULL user_data). */
weft_status_t *weft_pc_k_select(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_cast(weft_kernel_ctx_t *ctx, void *state);   /* unused */
weft_status_t *weft_pc_k_reduce(weft_kernel_ctx_t *ctx, void *state); /* weft_pc_reduce_op_t */
weft_status_t *weft_pc_k_bias_add_grad(weft_kernel_ctx_t *ctx, void *state); /* unused */
weft_status_t *weft_pc_k_l2loss(weft_kernel_ctx_t *ctx, void *state);        /* unused */
/* ArgMax (any non-NULL user_data) and ArgMin (NULL). */
weft_status_t *weft_pc_k_arg(weft_kernel_ctx_t *ctx, void *state);
/* Softmax (user_data NULL) and LogSoftmax (non-NULL). */
weft_status_t *weft_pc_k_softmax(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_tile(weft_kernel_ctx_t *ctx, void *state);         /* unused */
weft_status_t *weft_pc_k_pad(weft_kernel_ctx_t *ctx, void *state);          /* unused */
weft_status_t *weft_pc_k_matmul(weft_kernel_ctx_t *ctx, void *state);       /* unused */
weft_status_t *weft_pc_k_batch_matmul(weft_kernel_ctx_t *ctx, void *state); /* unused */

/* ---------------------------------------------------------------------------------------------
 * Registration of the op tables, through the backend's own registration (which names its device
 * type): op `op` computed by `compute` with user_data, constrained on "T" to dtypes[0..n_dtypes),
 * or unconstrained when dtypes is NULL. */
typedef weft_status_t *(*weft_pc_register_typed_fn)(const weft_registrar_t *reg, const char *op,
                                                    weft_kernel_compute_fn compute,
                                                    const char *const *host_memory, void *user_data,
                                                    const weft_dtype_t *dtypes, size_t n_dtypes);

/* Each unary op on dtypes[0..n_float), or [0..n_int) when it takes integers too (with_int); the
 * op whose code is `untyped` (LogicalNot: bool only, no type attribute) unconstrained. */
weft_status_t *weft_pc_register_unary_ops(const weft_registrar_t *reg,
                                          weft_pc_register_typed_fn register_typed,
                                          const weft_pc_unary_op_t *ops, size_t n_ops,
                                          const weft_dtype_t *dtypes, size_t n_float, size_t n_int,
                                          int untyped);
/* Each binary op on its own dtypes. */
weft_status_t *weft_pc_register_binary_ops(const weft_registrar_t *reg,
                                           weft_pc_register_typed_fn register_typed,
                                           const weft_pc_binary_op_t *ops, size_t n_ops);
/* Each reduction on its own dtypes, its axes in host memory ("reduction_indices"). */
weft_status_t *weft_pc_register_reduce_ops(const weft_registrar_t *reg,
                                           weft_pc_register_typed_fn register_typed,
                                           const weft_pc_reduce_op_t *ops, size_t n_ops);

#endif /* WEFT_PC_GPU_KERNELS_H */
