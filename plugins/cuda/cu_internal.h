/* cu_internal.h: what the host-side files of the CUDA plugin share: the runtime probe and device
 * properties (cu_runtime.c), cuBLAS loaded on first use (cu_runtime.c), the open devices with
 * their streams, staging buffers and memory arenas (cu_device.c), and the CUDA kernel helpers
 * (cu_util.c). Errors, inputs, attributes, the shape rules and plans of every kernel and the
 * kernels with no device code come from the helpers all plugins share (plugins/common,
 * weft_pc_*).
 *
 * The plugin sees only the SDK headers, the CUDA runtime and cuBLAS headers, libc, libdl and
 * pthreads. The CUDA runtime is linked statically and loads the driver (libcuda.so.1) itself when
 * devices are first counted, so the plugin loads on a machine without the NVIDIA driver and
 * reports no devices with the reason; cuBLAS (hundreds of MiB) is dlopen'ed when a device first
 * multiplies matrices. Names shared between files start with weft__cu_ and stay hidden (only
 * weft_plugin_entry is exported). */
#ifndef WEFT_CU_INTERNAL_H
#define WEFT_CU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cu_alloc.h"
#include "cu_kernels.h"
#include "gpu_kernels.h"
#include "plugin_common.h"
#include "weft/plugin.h"
#include "weft/types.h"

#define WEFT_CU_PLUGIN_NAME "cuda"
#define WEFT_CU_DEVICE_TYPE "CUDA"

/* The host table handed to init() (plugins/common keeps it); valid for the life of the process
 * once the plugin loaded. */
#define weft__cu_host weft_pc_host

/* ---------------------------------------------------------------------------------------------
 * The runtime and the devices it sees (cu_runtime.c) */

/* Counts devices once per process (CUDA_VISIBLE_DEVICES applies: the runtime only sees those) and
 * logs each one's properties. When 0, *why_none is a static sentence saying why. */
int weft__cu_device_count(const char **why_none);
/* Properties as enumerated (NULL for a bad ordinal). */
const weft_device_props_t *weft__cu_props(int ordinal);
/* "cudaErrorMemoryAllocation (out of memory)" */
const char *weft__cu_error_str(cudaError_t e, char *buf, size_t len);

/* cuBLAS entry points, resolved from libcublas.so.<major> on first use (typed from
 * cublas_v2.h, which only declares them: nothing links cuBLAS). */
typedef struct weft_cu_blas {
  __typeof__(&cublasCreate_v2) create;
  __typeof__(&cublasDestroy_v2) destroy;
  __typeof__(&cublasSetStream_v2) set_stream;
  __typeof__(&cublasSetMathMode) set_math_mode;
  __typeof__(&cublasSgemmStridedBatched) sgemm_strided_batched;
  __typeof__(&cublasDgemmStridedBatched) dgemm_strided_batched;
  __typeof__(&cublasGetStatusString) status_string; /* may be NULL */
  int version;
} weft_cu_blas_t;

/* The loaded library, or NULL with *why set (a static sentence). */
const weft_cu_blas_t *weft__cu_blas(const char **why);

/* ---------------------------------------------------------------------------------------------
 * Open devices (cu_device.c). The backend's device handle is a weft_cu_device_t*; device pointers
 * are plain CUDA device addresses carved from the device's arena.
 *
 * Ordering: kernels, device-to-device copies and fills go to the device's one compute stream in
 * the order the executor issues them. Host-to-device copies go to a copy stream that first waits
 * for everything already on the compute stream (the destination may be memory a queued kernel
 * still reads) and that the compute stream then waits for; device-to-host copies go to a second
 * copy stream that waits for the compute stream, and return when the bytes are on the host.
 * Because every use of memory is ordered behind the compute stream, freed memory can be handed
 * out again at once. */

typedef struct weft_cu_device weft_cu_device_t;

weft_status_t *weft__cu_device_open(int ordinal, const weft_device_options_t *opts,
                                    weft_cu_device_t **out);
/* The device interface (plugins/common/gpu_kernels.h): close, alloc, free, the copies,
 * synchronize and memory_usage, with weft_backend_t's signatures (device: a weft_cu_device_t *). */
WEFT_PC_DEVICE_API(weft__cu)
/* Closes every device still open (backend shutdown). */
void weft__cu_close_all_devices(void);

/* "CUDA:0" */
const char *weft__cu_device_name(const weft_cu_device_t *dev);
/* Makes the device current on the calling thread and returns its compute stream. */
cudaStream_t weft__cu_enter(weft_cu_device_t *dev);
/* NULL when e is cudaSuccess; otherwise a status naming the device and `what`. An error that
 * leaves the context unusable (a kernel fault) marks the device lost: every later call reports
 * that first failure. */
weft_status_t *weft__cu_check(weft_cu_device_t *dev, cudaError_t e, const char *what);
/* The device's cuBLAS handle, bound to its compute stream, created on first use. Calls through
 * it are serialised: hold weft__cu_blas_lock around them. */
weft_status_t *weft__cu_blas_handle(weft_cu_device_t *dev, const weft_cu_blas_t **blas,
                                    cublasHandle_t *handle);
void weft__cu_blas_lock(weft_cu_device_t *dev);
void weft__cu_blas_unlock(weft_cu_device_t *dev);

/* ---------------------------------------------------------------------------------------------
 * Kernel helpers (cu_util.c). Shape rules, argument checks and error wording come from
 * plugins/common (weft_pc_*); these are the CUDA steps. */

/* The kernel's device, made current on this thread; *stream (if not NULL) its compute stream. */
weft_cu_device_t *weft__cu_ctx_device(weft_kernel_ctx_t *ctx, cudaStream_t *stream);
/* Device scratch memory freed after compute returns (safe: later users are queued behind the
 * work queued now). */
weft_status_t *weft__cu_scratch(weft_kernel_ctx_t *ctx, size_t nbytes, void **out);
/* The status of a launch (or of a device call, for a status s: weft__cu_named), naming the node,
 * what failed and the device. */
weft_status_t *weft__cu_launched(weft_kernel_ctx_t *ctx, cudaError_t e, const char *what);
weft_status_t *weft__cu_named(weft_kernel_ctx_t *ctx, weft_status_t *s);
/* The kernels' code for a dtype, or -1. */
int weft__cu_dt(weft_dtype_t dtype);
/* The kernels' geometry of a broadcast (plugins/common's collapsed form). */
void weft__cu_geom(const weft_pc_bcast_t *b, weft_cu_geom_t *g);
/* The geometry of n elements read and written in place, one run. */
void weft__cu_geom_flat(int64_t n, weft_cu_geom_t *g);
/* Queues a strided copy of elements of `dtype`: element coord goes from
 * in[in_off + coord . in_strides] to out[out_off + coord . out_strides] (out_strides NULL: the
 * output is dense over dims). Size-1 dims are dropped and dims contiguous on both sides merged
 * first. */
weft_status_t *weft__cu_copy_strided(weft_kernel_ctx_t *ctx, void *out, int64_t out_off,
                                     const int64_t *out_strides, const void *in, int64_t in_off,
                                     const int64_t *in_strides, weft_dtype_t dtype, int rank,
                                     const int64_t *dims);
/* Fills n elements of `dtype` at y with the value at `value` (host memory, one element). */
weft_status_t *weft__cu_fill(weft_kernel_ctx_t *ctx, void *y, weft_dtype_t dtype, int64_t n,
                             const void *value);
/* A device-to-device copy on the kernel's compute stream. */
weft_status_t *weft__cu_copy_d2d(weft_kernel_ctx_t *ctx, void *dst, const void *src, size_t n);

/* Registers one kernel on CUDA, with up to two type constraints. */
typedef struct weft_cu_kernel_spec {
  const char *op;
  weft_kernel_compute_fn compute;
  const char *type_attr; /* NULL: no constraint */
  const weft_dtype_t *dtypes;
  size_t n_dtypes;
  const char *const *host_memory; /* NULL-terminated or NULL */
  void *user_data;
  const char *type_attr2; /* a second constraint (Cast's DstT, ArgMax's output_type), or NULL */
  const weft_dtype_t *dtypes2;
  size_t n_dtypes2;
} weft_cu_kernel_spec_t;
weft_status_t *weft__cu_register(const weft_registrar_t *reg, const weft_cu_kernel_spec_t *spec);
/* The same for op `op` constrained on "T" to dtypes[0..n_dtypes), or unconstrained when dtypes is
 * NULL (weft_pc_register_typed_fn). */
weft_status_t *weft__cu_register_typed(const weft_registrar_t *reg, const char *op,
                                       weft_kernel_compute_fn compute,
                                       const char *const *host_memory, void *user_data,
                                       const weft_dtype_t *dtypes, size_t n_dtypes);

/* Dtype sets. */
extern const weft_dtype_t weft__cu_types_float[]; /* float, double */
extern const weft_dtype_t weft__cu_types_num[];   /* float, double, int32, int64 */
extern const weft_dtype_t weft__cu_types_all[];   /* float, double, int32, int64, bool */
#define CU_N_FLOAT 2
#define CU_N_NUM 4
#define CU_N_ALL 5

/* The device steps of the kernels the GPU backends share (cu_launch.c); init installs it as
 * weft_pc_launch. */
extern const weft_pc_launch_t weft__cu_launch;

weft_status_t *weft__cu_register_state(const weft_registrar_t *reg);
weft_status_t *weft__cu_register_math(const weft_registrar_t *reg);
weft_status_t *weft__cu_register_nn(const weft_registrar_t *reg);
weft_status_t *weft__cu_register_array(const weft_registrar_t *reg);
weft_status_t *weft__cu_register_train(const weft_registrar_t *reg);

#endif /* WEFT_CU_INTERNAL_H */
