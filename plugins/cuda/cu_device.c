/* cu_device.c: one open CUDA device: its compute stream and two copy streams, the pinned host
 * staging behind copies, the caching memory arena (cu_alloc.c) with the session's memory options,
 * the cuBLAS handle, and the error state.
 *
 * Streams. Kernels, fills and device-to-device copies are queued on the compute stream in the
 * order the executor issues them; nothing waits for the device after a kernel. A host-to-device
 * copy goes to the upload stream after an event makes that stream wait for the compute stream's
 * current tail (its destination may be memory that a queued kernel still reads: memory is reused
 * as soon as the core frees it), and another event makes the compute stream wait for the upload
 * before any later kernel. The source bytes are copied into pinned staging first, so the call
 * returns before the DMA finishes and the caller may free its buffer. A device-to-host copy goes
 * to the download stream behind the compute stream's tail, through pinned staging in chunks (the
 * next chunk's DMA overlaps the copy-out of the last), and returns when the bytes are in place.
 *
 * Memory. memory_fraction > 0 caps the arena at that share of the device's memory; without
 * allow_growth that share is reserved up front (one cudaMalloc at open, TensorFlow's default),
 * with it regions are reserved as needed up to the cap. memory_fraction 0 grows on demand with
 * no cap but the device's. Allocation failure is RESOURCE_EXHAUSTED naming the device, the size
 * asked for, what is in use, what is reserved and the limit. Memory is plain cudaMalloc memory,
 * never managed memory.
 *
 * Errors. A failed launch or copy is reported with the device's name; a fault that leaves the
 * CUDA context unusable (illegal address, kernel assert, ...) marks the device lost, and every
 * later call on it reports that first failure. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

#define H weft__cu_host

#define STAGE_SLOTS 4
#define STAGE_SLOT_BYTES ((size_t)4 << 20)

typedef struct stage_slot {
  char *buf;
  size_t used;
  cudaEvent_t done; /* recorded after the last copy that used buf */
  bool pending;
} stage_slot_t;

/* A copy stream with its staging ring. */
typedef struct copy_lane {
  pthread_mutex_t lock;
  cudaStream_t stream;
  cudaEvent_t after_compute; /* recorded on the compute stream, waited for by this one */
  cudaEvent_t done;          /* recorded on this stream, waited for by the compute stream */
  stage_slot_t slots[STAGE_SLOTS];
  int cur;
  bool staging;     /* the slots have pinned buffers */
  bool no_pinning;  /* cudaHostAlloc failed once: copy through pageable memory */
} copy_lane_t;

struct weft_cu_device {
  int ordinal;
  char name[32];
  pthread_mutex_t lock; /* lost */
  cudaStream_t compute;
  copy_lane_t up, down;
  weft_cu_arena_t *arena;
  uint64_t total_memory;
  double fraction;
  bool allow_growth;
  pthread_mutex_t blas_lock;
  cublasHandle_t blas;
  const weft_cu_blas_t *blas_fns;
  char lost[512];
  weft_cu_device_t *next_open;
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_cu_device_t *open_devices;

/* ---------------------------------------------------------------------------------------------
 * Errors */

static weft_status_t *dev_status(weft_cu_device_t *dev, weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static weft_status_t *dev_status(weft_cu_device_t *dev, weft_code_t code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return H->status_new(code, "%s: %s", dev->name, msg);
}

/* Errors after which the context is unusable: every later call fails the same way. */
static bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorDevicesUnavailable:
      return true;
    default:
      return false;
  }
}

/* The first failure that lost the device, as a new status, or NULL. */
static weft_status_t *lost_status(weft_cu_device_t *dev) {
  if (dev->lost[0] == '\0') return NULL;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *s = H->status_new(WEFT_INTERNAL, "%s", dev->lost);
  pthread_mutex_unlock(&dev->lock);
  return s;
}

weft_status_t *weft__cu_check(weft_cu_device_t *dev, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return NULL;
  char es[200];
  weft__cu_error_str(e, es, sizeof es);
  /* Clears the thread's last error, so that the next launch check only sees its own. */
  (void)cudaGetLastError();
  if (sticky(e)) {
    pthread_mutex_lock(&dev->lock);
    if (dev->lost[0] == '\0')
      snprintf(dev->lost, sizeof dev->lost,
               "%s: device lost: %s failed: %s (a kernel faulted; the device cannot be used "
               "again in this process)",
               dev->name, what, es);
    weft_status_t *s = H->status_new(WEFT_INTERNAL, "%s", dev->lost);
    pthread_mutex_unlock(&dev->lock);
    return s;
  }
  if (e == cudaErrorMemoryAllocation)
    return dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "%s: %s", what, es);
  if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion) {
    const weft_device_props_t *p = weft__cu_props(dev->ordinal);
    return dev_status(dev, WEFT_FAILED_PRECONDITION,
                      "%s: %s: the plugin's kernels are built for sm_80, sm_90 and compute_90 "
                      "PTX, which this GPU (compute capability %s) or its driver cannot run",
                      what, es, p != NULL ? p->compute_capability : "?");
  }
  return dev_status(dev, WEFT_INTERNAL, "%s: %s", what, es);
}

/* ---------------------------------------------------------------------------------------------
 * Memory */

static int arena_reserve(void *ctx, size_t bytes, void **base) {
  weft_cu_device_t *dev = ctx;
  cudaSetDevice(dev->ordinal);
  cudaError_t e = cudaMalloc(base, bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    *base = NULL;
    return 1;
  }
  return 0;
}

static void arena_release(void *ctx, void *base) {
  weft_cu_device_t *dev = ctx;
  cudaSetDevice(dev->ordinal);
  if (cudaFree(base) != cudaSuccess) (void)cudaGetLastError();
}

/* "memory_fraction 0.25 of 79.2 GiB, reserved up front" and the like. */
static void describe_options(const weft_cu_device_t *dev, char *buf, size_t len) {
  char total[48];
  weft__cu_bytes_str(dev->total_memory, total, sizeof total);
  if (dev->fraction > 0)
    snprintf(buf, len, "memory_fraction %.4g of %s, %s", dev->fraction, total,
             dev->allow_growth ? "allow_growth" : "reserved up front");
  else
    snprintf(buf, len, "growing on demand, device memory %s", total);
}

static weft_status_t *oom(weft_cu_device_t *dev, size_t nbytes, weft_cu_arena_result_t r) {
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(dev->arena, &st);
  char asked[48], state[400], opts[160], free_s[48] = "";
  weft__cu_bytes_str(nbytes, asked, sizeof asked);
  weft__cu_arena_describe(&st, state, sizeof state);
  describe_options(dev, opts, sizeof opts);
  const char *why = "the arena's limit is reached";
  if (r == WEFT_CU_ARENA_DEVICE_FULL) {
    size_t free_b = 0, total_b = 0;
    cudaSetDevice(dev->ordinal);
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      char f[48];
      snprintf(free_s, sizeof free_s, "%s", weft__cu_bytes_str(free_b, f, sizeof f));
    } else {
      (void)cudaGetLastError();
    }
    why = "cudaMalloc failed: the device has no room";
  } else if (r == WEFT_CU_ARENA_HOST_MEMORY) {
    why = "out of host memory for the allocator's bookkeeping";
  } else if (r == WEFT_CU_ARENA_TOO_LARGE) {
    why = "the size is too large";
  }
  return dev_status(dev, WEFT_RESOURCE_EXHAUSTED,
                    "out of device memory allocating %s (%s%s%s): %s; %s", asked, why,
                    free_s[0] ? ", free on the device " : "", free_s, state, opts);
}

weft_status_t *weft__cu_alloc(void *device, size_t nbytes, void **ptr) {
  weft_cu_device_t *dev = device;
  *ptr = NULL;
  WEFT_RETURN_IF_ERROR(lost_status(dev));
  if (nbytes == 0) return NULL;
  weft_cu_arena_result_t r = weft__cu_arena_alloc(dev->arena, nbytes, ptr);
  if (r != WEFT_CU_ARENA_OK) return oom(dev, nbytes, r);
  return NULL;
}

void weft__cu_free(void *device, void *ptr) {
  weft_cu_device_t *dev = device;
  if (ptr == NULL) return;
  if (weft__cu_arena_free(dev->arena, ptr) != 0)
    H->log(WEFT_LOG_WARNING, WEFT_CU_PLUGIN_NAME, "%s: freeing %p, which this device never handed out",
           dev->name, ptr);
}

weft_status_t *weft__cu_memory_usage(void *device, uint64_t *in_use, uint64_t *limit) {
  weft_cu_device_t *dev = device;
  weft_cu_arena_stats_t st;
  weft__cu_arena_stats(dev->arena, &st);
  *in_use = st.in_use;
  *limit = st.limit ? st.limit : dev->total_memory;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Copies */

cudaStream_t weft__cu_enter(weft_cu_device_t *dev) {
  cudaSetDevice(dev->ordinal);
  return dev->compute;
}

/* Pinned buffers for a lane's slots, on first use; false (and no_pinning) if there are none. */
static bool lane_staging(weft_cu_device_t *dev, copy_lane_t *lane) {
  if (lane->staging) return true;
  if (lane->no_pinning) return false;
  for (int i = 0; i < STAGE_SLOTS; i++) {
    void *p = NULL;
    if (cudaHostAlloc(&p, STAGE_SLOT_BYTES, cudaHostAllocPortable) != cudaSuccess) {
      (void)cudaGetLastError();
      for (int k = 0; k < i; k++) {
        cudaFreeHost(lane->slots[k].buf);
        lane->slots[k].buf = NULL;
      }
      lane->no_pinning = true;
      H->log(WEFT_LOG_WARNING, WEFT_CU_PLUGIN_NAME,
             "%s: no pinned host memory for copy staging; copies will wait for the device",
             dev->name);
      return false;
    }
    lane->slots[i].buf = p;
    lane->slots[i].used = 0;
    lane->slots[i].pending = false;
  }
  lane->staging = true;
  lane->cur = 0;
  return true;
}

/* Makes the lane's stream wait for everything queued on the compute stream so far. */
static cudaError_t lane_after_compute(weft_cu_device_t *dev, copy_lane_t *lane) {
  cudaError_t e = cudaEventRecord(lane->after_compute, dev->compute);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(lane->stream, lane->after_compute, 0);
  return e;
}

/* Waits until a slot's last copy is done, then empties it. */
static cudaError_t slot_drain(stage_slot_t *slot) {
  cudaError_t e = cudaSuccess;
  if (slot->pending) e = cudaEventSynchronize(slot->done);
  slot->pending = false;
  slot->used = 0;
  return e;
}

static weft_status_t *upload(weft_cu_device_t *dev, copy_lane_t *lane, char *dst,
                             const char *src, size_t nbytes) {
  cudaError_t e = lane_after_compute(dev, lane);
  if (e != cudaSuccess) return weft__cu_check(dev, e, "ordering an upload after queued kernels");
  if (!lane_staging(dev, lane)) {
    /* Pageable source: the runtime stages it; wait so the caller may reuse its buffer. */
    e = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, lane->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(lane->stream);
    return weft__cu_check(dev, e, "copying from host memory");
  }
  size_t off = 0;
  while (off < nbytes) {
    size_t left = nbytes - off;
    stage_slot_t *slot = &lane->slots[lane->cur];
    size_t room = STAGE_SLOT_BYTES - slot->used;
    /* Small copies share a slot; a copy that does not fit moves on to the next one. */
    if (room < left && slot->used > 0) {
      lane->cur = (lane->cur + 1) % STAGE_SLOTS;
      slot = &lane->slots[lane->cur];
      e = slot_drain(slot);
      if (e != cudaSuccess) return weft__cu_check(dev, e, "waiting for an earlier upload");
      room = STAGE_SLOT_BYTES;
    }
    size_t n = left < room ? left : room;
    memcpy(slot->buf + slot->used, src + off, n);
    e = cudaMemcpyAsync(dst + off, slot->buf + slot->used, n, cudaMemcpyHostToDevice,
                        lane->stream);
    if (e == cudaSuccess) e = cudaEventRecord(slot->done, lane->stream);
    if (e != cudaSuccess) return weft__cu_check(dev, e, "queueing an upload");
    slot->pending = true;
    slot->used += n;
    off += n;
  }
  e = cudaEventRecord(lane->done, lane->stream);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(dev->compute, lane->done, 0);
  return weft__cu_check(dev, e, "ordering kernels after an upload");
}

weft_status_t *weft__cu_copy_to_device(void *device, void *dst, const void *src, size_t nbytes) {
  weft_cu_device_t *dev = device;
  WEFT_RETURN_IF_ERROR(lost_status(dev));
  if (nbytes == 0) return NULL;
  weft__cu_enter(dev);
  pthread_mutex_lock(&dev->up.lock);
  weft_status_t *s = upload(dev, &dev->up, dst, src, nbytes);
  pthread_mutex_unlock(&dev->up.lock);
  return s;
}

static weft_status_t *download(weft_cu_device_t *dev, copy_lane_t *lane, char *dst,
                               const char *src, size_t nbytes) {
  cudaError_t e = lane_after_compute(dev, lane);
  if (e != cudaSuccess) return weft__cu_check(dev, e, "ordering a download after queued kernels");
  if (!lane_staging(dev, lane)) {
    e = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, lane->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(lane->stream);
    return weft__cu_check(dev, e, "copying to host memory");
  }
  /* Chunk k goes through slot k % STAGE_SLOTS; up to STAGE_SLOTS chunks are in flight. */
  for (int i = 0; i < STAGE_SLOTS; i++) {
    e = slot_drain(&lane->slots[i]);
    if (e != cudaSuccess) return weft__cu_check(dev, e, "waiting for an earlier download");
  }
  size_t n_chunks = (nbytes + STAGE_SLOT_BYTES - 1) / STAGE_SLOT_BYTES;
  size_t issued = 0;
  for (size_t k = 0; k < n_chunks; k++) {
    while (issued < n_chunks && issued < k + STAGE_SLOTS) {
      stage_slot_t *slot = &lane->slots[issued % STAGE_SLOTS];
      size_t off = issued * STAGE_SLOT_BYTES;
      size_t n = nbytes - off < STAGE_SLOT_BYTES ? nbytes - off : STAGE_SLOT_BYTES;
      e = cudaMemcpyAsync(slot->buf, src + off, n, cudaMemcpyDeviceToHost, lane->stream);
      if (e == cudaSuccess) e = cudaEventRecord(slot->done, lane->stream);
      if (e != cudaSuccess) return weft__cu_check(dev, e, "queueing a download");
      slot->pending = true;
      issued++;
    }
    stage_slot_t *slot = &lane->slots[k % STAGE_SLOTS];
    e = slot_drain(slot);
    if (e != cudaSuccess) return weft__cu_check(dev, e, "copying to host memory");
    size_t off = k * STAGE_SLOT_BYTES;
    size_t n = nbytes - off < STAGE_SLOT_BYTES ? nbytes - off : STAGE_SLOT_BYTES;
    memcpy(dst + off, slot->buf, n);
  }
  return NULL;
}

weft_status_t *weft__cu_copy_from_device(void *device, void *dst, const void *src, size_t nbytes) {
  weft_cu_device_t *dev = device;
  WEFT_RETURN_IF_ERROR(lost_status(dev));
  if (nbytes == 0) return NULL;
  weft__cu_enter(dev);
  pthread_mutex_lock(&dev->down.lock);
  weft_status_t *s = download(dev, &dev->down, dst, src, nbytes);
  pthread_mutex_unlock(&dev->down.lock);
  return s;
}

weft_status_t *weft__cu_copy_device_to_device(void *device, void *dst, const void *src,
                                              size_t nbytes) {
  weft_cu_device_t *dev = device;
  WEFT_RETURN_IF_ERROR(lost_status(dev));
  if (nbytes == 0 || dst == src) return NULL;
  cudaStream_t s = weft__cu_enter(dev);
  return weft__cu_check(dev, cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, s),
                        "copying within the device");
}

weft_status_t *weft__cu_synchronize(void *device) {
  weft_cu_device_t *dev = device;
  WEFT_RETURN_IF_ERROR(lost_status(dev));
  cudaStream_t s = weft__cu_enter(dev);
  /* Uploads are waited for by the compute stream and downloads finish before they return, so
   * the compute stream's tail is everything. */
  return weft__cu_check(dev, cudaStreamSynchronize(s), "waiting for the device");
}

/* ---------------------------------------------------------------------------------------------
 * cuBLAS */

void weft__cu_blas_lock(weft_cu_device_t *dev) { pthread_mutex_lock(&dev->blas_lock); }
void weft__cu_blas_unlock(weft_cu_device_t *dev) { pthread_mutex_unlock(&dev->blas_lock); }

weft_status_t *weft__cu_blas_handle(weft_cu_device_t *dev, const weft_cu_blas_t **blas,
                                    cublasHandle_t *handle) {
  if (dev->blas == NULL) {
    const char *why = NULL;
    const weft_cu_blas_t *fns = weft__cu_blas(&why);
    if (fns == NULL) return dev_status(dev, WEFT_FAILED_PRECONDITION, "%s", why);
    cublasHandle_t h = NULL;
    cublasStatus_t st = fns->create(&h);
    if (st != CUBLAS_STATUS_SUCCESS)
      return dev_status(dev, st == CUBLAS_STATUS_ALLOC_FAILED ? WEFT_RESOURCE_EXHAUSTED : WEFT_INTERNAL,
                        "cublasCreate failed: %s (status %d)",
                        fns->status_string != NULL ? fns->status_string(st) : "?", (int)st);
    st = fns->set_stream(h, dev->compute);
    const char *tf32 = getenv("WEFT_CUDA_ALLOW_TF32");
    if (st == CUBLAS_STATUS_SUCCESS && tf32 != NULL && tf32[0] != '\0' && strcmp(tf32, "0") != 0)
      st = fns->set_math_mode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    if (st != CUBLAS_STATUS_SUCCESS) {
      fns->destroy(h);
      return dev_status(dev, WEFT_INTERNAL, "setting up cuBLAS failed: %s (status %d)",
                        fns->status_string != NULL ? fns->status_string(st) : "?", (int)st);
    }
    dev->blas = h;
    dev->blas_fns = fns;
  }
  *blas = dev->blas_fns;
  *handle = dev->blas;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Open and close */

const char *weft__cu_device_name(const weft_cu_device_t *dev) { return dev->name; }

static void lane_destroy(copy_lane_t *lane) {
  for (int i = 0; i < STAGE_SLOTS; i++) {
    if (lane->slots[i].done != NULL) cudaEventDestroy(lane->slots[i].done);
    if (lane->slots[i].buf != NULL) cudaFreeHost(lane->slots[i].buf);
  }
  if (lane->after_compute != NULL) cudaEventDestroy(lane->after_compute);
  if (lane->done != NULL) cudaEventDestroy(lane->done);
  if (lane->stream != NULL) cudaStreamDestroy(lane->stream);
  pthread_mutex_destroy(&lane->lock);
}

static void device_destroy(weft_cu_device_t *dev) {
  cudaSetDevice(dev->ordinal);
  if (dev->compute != NULL) cudaStreamSynchronize(dev->compute);
  if (dev->blas != NULL) dev->blas_fns->destroy(dev->blas);
  lane_destroy(&dev->up);
  lane_destroy(&dev->down);
  if (dev->compute != NULL) cudaStreamDestroy(dev->compute);
  weft__cu_arena_destroy(dev->arena);
  (void)cudaGetLastError();
  pthread_mutex_destroy(&dev->lock);
  pthread_mutex_destroy(&dev->blas_lock);
  free(dev);
}

static cudaError_t lane_init(copy_lane_t *lane) {
  pthread_mutex_init(&lane->lock, NULL);
  cudaError_t e = cudaStreamCreateWithFlags(&lane->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&lane->after_compute, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&lane->done, cudaEventDisableTiming);
  for (int i = 0; i < STAGE_SLOTS && e == cudaSuccess; i++)
    e = cudaEventCreateWithFlags(&lane->slots[i].done, cudaEventDisableTiming);
  return e;
}

weft_status_t *weft__cu_device_open(int ordinal, const weft_device_options_t *opts,
                                    weft_cu_device_t **out) {
  *out = NULL;
  const char *why = NULL;
  int n = weft__cu_device_count(&why);
  if (ordinal < 0 || ordinal >= n)
    return H->status_new(WEFT_INVALID_ARGUMENT, "CUDA: no device with ordinal %d (%d present%s%s)",
                         ordinal, n, why ? ": " : "", why ? why : "");
  double fraction = 0;
  int allow_growth = 0;
  if (opts != NULL && opts->struct_size >= offsetof(weft_device_options_t, memory_fraction) +
                                               sizeof opts->memory_fraction)
    fraction = opts->memory_fraction;
  if (opts != NULL && opts->struct_size >= offsetof(weft_device_options_t, allow_growth) +
                                               sizeof opts->allow_growth)
    allow_growth = opts->allow_growth;
  if (!(fraction >= 0 && fraction <= 1))
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "CUDA:%d: memory_fraction must be in [0, 1], got %g", ordinal, fraction);

  weft_cu_device_t *dev = calloc(1, sizeof *dev);
  if (dev == NULL) return H->status_new(WEFT_RESOURCE_EXHAUSTED, "CUDA:%d: out of host memory", ordinal);
  dev->ordinal = ordinal;
  snprintf(dev->name, sizeof dev->name, "%s:%d", WEFT_CU_DEVICE_TYPE, ordinal);
  pthread_mutex_init(&dev->lock, NULL);
  pthread_mutex_init(&dev->blas_lock, NULL);
  dev->fraction = fraction;
  dev->allow_growth = allow_growth != 0;

  cudaError_t e = cudaSetDevice(ordinal);
  size_t free_b = 0, total_b = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&dev->compute, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = lane_init(&dev->up);
  else pthread_mutex_init(&dev->up.lock, NULL);
  if (e == cudaSuccess) e = lane_init(&dev->down);
  else pthread_mutex_init(&dev->down.lock, NULL);
  if (e != cudaSuccess) {
    weft_status_t *s = weft__cu_check(dev, e, "opening the device");
    device_destroy(dev);
    return s;
  }
  dev->total_memory = total_b;

  uint64_t limit = 0;
  if (fraction > 0) {
    limit = (uint64_t)(fraction * (double)total_b);
    limit = limit / WEFT_CU_ARENA_ALIGN * WEFT_CU_ARENA_ALIGN;
    if (limit < WEFT_CU_ARENA_ALIGN) limit = WEFT_CU_ARENA_ALIGN;
  }
  weft_cu_arena_ops_t ops = {arena_reserve, arena_release, dev};
  dev->arena = weft__cu_arena_new(&ops, limit, fraction > 0 ? allow_growth : 1);
  if (dev->arena == NULL) {
    device_destroy(dev);
    return H->status_new(WEFT_RESOURCE_EXHAUSTED, "CUDA:%d: out of host memory", ordinal);
  }
  char opt_s[160], lim_s[48], free_s[48];
  describe_options(dev, opt_s, sizeof opt_s);
  if (fraction > 0 && !allow_growth) {
    weft_cu_arena_result_t r = weft__cu_arena_reserve(dev->arena, limit);
    if (r != WEFT_CU_ARENA_OK) {
      weft_status_t *s = dev_status(dev, WEFT_RESOURCE_EXHAUSTED,
                                    "could not reserve %s up front (%s): %s free on the device",
                                    weft__cu_bytes_str(limit, lim_s, sizeof lim_s), opt_s,
                                    weft__cu_bytes_str(free_b, free_s, sizeof free_s));
      device_destroy(dev);
      return s;
    }
  }
  H->log(WEFT_LOG_INFO, WEFT_CU_PLUGIN_NAME, "%s opened: %s; %s free", dev->name, opt_s,
         weft__cu_bytes_str(free_b, free_s, sizeof free_s));

  pthread_mutex_lock(&open_lock);
  dev->next_open = open_devices;
  open_devices = dev;
  pthread_mutex_unlock(&open_lock);
  *out = dev;
  return NULL;
}

void weft__cu_device_close(void *device) {
  weft_cu_device_t *dev = device;
  if (dev == NULL) return;
  pthread_mutex_lock(&open_lock);
  for (weft_cu_device_t **link = &open_devices; *link != NULL; link = &(*link)->next_open)
    if (*link == dev) {
      *link = dev->next_open;
      break;
    }
  pthread_mutex_unlock(&open_lock);
  device_destroy(dev);
}

void weft__cu_close_all_devices(void) {
  pthread_mutex_lock(&open_lock);
  weft_cu_device_t *dev = open_devices;
  open_devices = NULL;
  pthread_mutex_unlock(&open_lock);
  while (dev != NULL) {
    weft_cu_device_t *next = dev->next_open;
    device_destroy(dev);
    dev = next;
  }
}
