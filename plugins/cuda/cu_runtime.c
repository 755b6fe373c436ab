/* cu_runtime.c: what the CUDA plugin learns from the CUDA runtime before any device opens: how
 * many devices there are (or why there are none: no driver, a driver too old for this runtime,
 * no GPU, CUDA_VISIBLE_DEVICES hiding them all, WEFT_CUDA_DISABLE), their properties, logged at
 * start-up the way TensorFlow does; names for CUDA errors; and cuBLAS, dlopen'ed the first time
 * a device multiplies matrices.
 *
 * The runtime is linked statically and loads libcuda.so.1 on its first call, so none of this
 * needs the driver to be installed for the plugin to load. Which devices the runtime sees, and
 * in which order, is CUDA_VISIBLE_DEVICES's business: CUDA:N is the N-th visible device. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

#define H weft__cu_host

/* ---------------------------------------------------------------------------------------------
 * Errors */

const char *weft__cu_error_str(cudaError_t e, char *buf, size_t len) {
  const char *name = cudaGetErrorName(e);
  const char *text = cudaGetErrorString(e);
  snprintf(buf, len, "%s (%s)", name != NULL ? name : "cudaError?", text != NULL ? text : "?");
  return buf;
}

/* ---------------------------------------------------------------------------------------------
 * Devices */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int n_devices;
static const char *why_no_devices;
static char why_buf[384];
static weft_device_props_t *device_props;

static void format_version(int v, char *buf, size_t len) {
  snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void no_devices(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void no_devices(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why_buf, sizeof why_buf, fmt, ap);
  va_end(ap);
  why_no_devices = why_buf;
  n_devices = 0;
}

static void describe_device(int ordinal, const struct cudaDeviceProp *p, weft_device_props_t *out) {
  int clock_khz = 0, mem_clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal) != cudaSuccess) {
    clock_khz = 0;
    (void)cudaGetLastError();
  }
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal) != cudaSuccess) {
    mem_clock_khz = 0;
    (void)cudaGetLastError();
  }
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  snprintf(out->description, sizeof out->description, "%.80s, %d SMs, %.2f GHz", p->name,
           p->multiProcessorCount, clock_khz / 1e6);
  out->memory_bytes = (uint64_t)p->totalGlobalMem;
  snprintf(out->compute_capability, sizeof out->compute_capability, "%d.%d", p->major, p->minor);
  if (cudaDeviceGetPCIBusId(out->bus_id, (int)sizeof out->bus_id, ordinal) != cudaSuccess) {
    snprintf(out->bus_id, sizeof out->bus_id, "%04x:%02x:%02x.0", (unsigned)p->pciDomainID,
             (unsigned)p->pciBusID, (unsigned)p->pciDeviceID);
    (void)cudaGetLastError();
  }
  out->host_accessible = 0;
  char mem[48];
  H->log(WEFT_LOG_INFO, WEFT_CU_PLUGIN_NAME,
         "Found device %d with properties: name: %s, compute capability: %d.%d, memory: %s, "
         "clock: %.2f GHz, memory clock: %.2f GHz, multiprocessors: %d, bus id: %s",
         ordinal, p->name, p->major, p->minor,
         weft__cu_bytes_str((uint64_t)p->totalGlobalMem, mem, sizeof mem), clock_khz / 1e6,
         mem_clock_khz / 1e6, p->multiProcessorCount, out->bus_id);
}

static void probe(void) {
  const char *disable = getenv("WEFT_CUDA_DISABLE");
  if (disable != NULL && disable[0] != '\0' && strcmp(disable, "0") != 0) {
    no_devices("disabled by WEFT_CUDA_DISABLE");
    return;
  }
  const char *visible = getenv("CUDA_VISIBLE_DEVICES");
  char vis_note[160] = "";
  if (visible != NULL) snprintf(vis_note, sizeof vis_note, " (CUDA_VISIBLE_DEVICES=\"%.100s\")", visible);

  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = CUDART_VERSION;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  (void)cudaGetLastError();
  char rt_s[16], drv_s[16];
  format_version(runtime, rt_s, sizeof rt_s);
  format_version(driver, drv_s, sizeof drv_s);

  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  (void)cudaGetLastError();
  if (e == cudaErrorInsufficientDriver && driver == 0) {
    no_devices("no CUDA driver (libcuda.so.1, the NVIDIA driver, is not installed)");
    return;
  }
  if (e == cudaErrorInsufficientDriver) {
    no_devices("the CUDA driver (CUDA %s) is older than the CUDA %s runtime this plugin was built "
               "with",
               drv_s, rt_s);
    return;
  }
  if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
    no_devices("no CUDA-capable device is visible%s", vis_note);
    return;
  }
  if (e != cudaSuccess) {
    char es[160];
    no_devices("cudaGetDeviceCount failed: %s", weft__cu_error_str(e, es, sizeof es));
    return;
  }
  device_props = calloc((size_t)n, sizeof *device_props);
  if (device_props == NULL) {
    no_devices("out of host memory listing %d CUDA devices", n);
    return;
  }
  H->log(WEFT_LOG_INFO, WEFT_CU_PLUGIN_NAME, "CUDA runtime %s, driver supports CUDA %s: %d device%s%s",
         rt_s, drv_s, n, n == 1 ? "" : "s", vis_note);
  for (int i = 0; i < n; i++) {
    struct cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    e = cudaGetDeviceProperties(&p, i);
    if (e != cudaSuccess) {
      char es[160];
      (void)cudaGetLastError();
      memset(&device_props[i], 0, sizeof device_props[i]);
      device_props[i].struct_size = sizeof device_props[i];
      snprintf(device_props[i].description, sizeof device_props[i].description,
               "CUDA device %d (properties unavailable: %.70s)", i,
               weft__cu_error_str(e, es, sizeof es));
      continue;
    }
    describe_device(i, &p, &device_props[i]);
  }
  n_devices = n;
}

int weft__cu_device_count(const char **why_none) {
  pthread_once(&probe_once, probe);
  if (n_devices == 0 && why_none != NULL) *why_none = why_no_devices;
  return n_devices;
}

const weft_device_props_t *weft__cu_props(int ordinal) {
  pthread_once(&probe_once, probe);
  return ordinal >= 0 && ordinal < n_devices ? &device_props[ordinal] : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * cuBLAS */

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static weft_cu_blas_t blas;
static const char *blas_why;
static char blas_why_buf[512];

#ifndef WEFT_CU_LIB_DIR
#define WEFT_CU_LIB_DIR "/usr/local/cuda/lib64"
#endif

static void load_blas(void) {
  char soname[64];
  snprintf(soname, sizeof soname, "libcublas.so.%d", CUBLAS_VER_MAJOR);
  /* The toolkit the plugin was built against first, then the loader's search path. */
  char at_build[512];
  snprintf(at_build, sizeof at_build, "%s/%s", WEFT_CU_LIB_DIR, soname);
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) lib = dlopen(at_build, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *err = dlerror();
    snprintf(blas_why_buf, sizeof blas_why_buf, "cuBLAS could not be loaded (%s): %s", soname,
             err != NULL ? err : "not found");
    blas_why = blas_why_buf;
    return;
  }
  /* The dlsym results are function addresses; the casts name their cublas_v2.h types. */
#define RESOLVE(field, sym)                                       \
  do {                                                            \
    blas.field = (__typeof__(blas.field))dlsym(lib, sym);         \
    if (blas.field == NULL) {                                     \
      snprintf(blas_why_buf, sizeof blas_why_buf,                 \
               "cuBLAS (%s) lacks %s", soname, sym);              \
      blas_why = blas_why_buf;                                    \
      return;                                                     \
    }                                                             \
  } while (0)
  RESOLVE(create, "cublasCreate_v2");
  RESOLVE(destroy, "cublasDestroy_v2");
  RESOLVE(set_stream, "cublasSetStream_v2");
  RESOLVE(set_math_mode, "cublasSetMathMode");
  RESOLVE(sgemm_strided_batched, "cublasSgemmStridedBatched");
  RESOLVE(dgemm_strided_batched, "cublasDgemmStridedBatched");
#undef RESOLVE
  blas.status_string = (__typeof__(blas.status_string))dlsym(lib, "cublasGetStatusString");
  blas.version = CUBLAS_VERSION;
  /* The library stays loaded for the life of the process: cuBLAS handles may outlive any one
   * device's use of them. */
}

const weft_cu_blas_t *weft__cu_blas(const char **why) {
  pthread_once(&blas_once, load_blas);
  if (blas_why != NULL) {
    if (why != NULL) *why = blas_why;
    return NULL;
  }
  return &blas;
}
