/* Internal declarations of core/src/base: the status struct, tensor and buffer layout, dtype
 * helpers, shapes and broadcasting, the intra-op parallel-for and logging. Shared by every core
 * folder; never installed. */
#ifndef WEFT_BASE_INTERNAL_H
#define WEFT_BASE_INTERNAL_H

#include <glib.h>
#include <stdbool.h>

#include "weft/plugin.h"
#include "weft/weft.h"

#define WEFT_LOG_DOMAIN "weft"

struct weft_status {
  weft_code_t code;
  char *message;
};

typedef struct weft__device weft__device_t;

/* A backend and its devices as the registry (plugin/registry.c) records them. They are defined
 * here, not with the registry, because buffers live on devices: tensor.c allocates and copies
 * through a device's backend table. */
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


/* A shape under inference or of a tensor: rank -1 is unknown rank, a dim of WEFT_DIM_UNKNOWN is an
 * unknown size. */
typedef struct weft__shape {
  int rank;
  int64_t dims[WEFT_MAX_RANK];
} weft__shape_t;

/* Memory holding a tensor's elements: host memory (device NULL) or memory of one device. */
typedef struct weft__buffer {
  gint refcount;
  weft__device_t *device;
  void *data;
  size_t nbytes;
  weft_dtype_t dtype;  /* for strings: the elements' bytes are freed with the buffer */
  int64_t n_elements;
  /* Set for host memory the buffer borrows (weft__buffer_new_borrowed): called with
   * release_arg instead of freeing data when the last reference goes. */
  void (*release)(void *release_arg);
  void *release_arg;
  /* Small host data lives in the same block, right after the struct: one allocation per tensor
   * instead of two (a chain of scalar ops spent a third of its time in malloc and free). */
  bool inline_data;
  /* Nonzero once the bytes are known never to change while the buffer lives (a Const's value,
   * weft__buffer_mark_constant): an id no other buffer of the process gets, under which kernels
   * may cache what they derive from the bytes (packed weights). */
  uint64_t constant_id;
} weft__buffer_t;

struct weft_tensor {
  gint refcount;
  weft_dtype_t dtype;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t num_elements;
  weft__buffer_t *buffer;
};

/* Status helpers. */
weft_status_t *weft__status_vnew(weft_code_t code, const char *fmt, va_list ap);
/* Moves *src into the caller's return path: returns it, sets *src to NULL. */
weft_status_t *weft__status_take(weft_status_t **src);

/* Buffers. alloc on a device goes through its backend; device NULL is 64-byte-aligned host memory.
 * The caller owns one reference. */
weft_status_t *weft__buffer_new(weft__device_t *device, weft_dtype_t dtype, int64_t n_elements,
                                weft__buffer_t **out);
/* A host buffer over memory the caller owns (not strings): release(release_arg) runs, on
 * whichever thread drops the last reference, instead of freeing `data`. NULL for a string dtype
 * or a NULL release. The caller owns one reference. */
weft__buffer_t *weft__buffer_new_borrowed(weft_dtype_t dtype, void *data, size_t nbytes,
                                          int64_t n_elements, void (*release)(void *release_arg),
                                          void *release_arg);
weft__buffer_t *weft__buffer_ref(weft__buffer_t *buffer);
/* Marks the buffer's bytes as never changing again (idempotent) and returns its constant id
 * (nonzero, unique in the process). Only for buffers nothing will write: a Const's value. */
uint64_t weft__buffer_mark_constant(weft__buffer_t *buffer);
void weft__buffer_unref(weft__buffer_t *buffer);
/* True if the core may read and write the buffer's memory directly. */
bool weft__buffer_host_accessible(const weft__buffer_t *buffer);

/* Host buffers found with overwritten guard bytes when freed (guards are on when the environment
 * has WEFT_GUARD_BYTES=1 at the first allocation); *last_nbytes (may be NULL) is the size of the
 * last damaged one. For weft-conformance's out-of-bounds checks. */
uint64_t weft__guard_violations(size_t *last_nbytes);

/* A tensor over an existing buffer (takes a new reference to it). */
weft_tensor_t *weft__tensor_wrap(weft_dtype_t dtype, int rank, const int64_t *dims,
                                 weft__buffer_t *buffer);
/* New tensor on `device` (NULL = host), uninitialised except strings (empty). */
weft_status_t *weft__tensor_alloc(weft__device_t *device, weft_dtype_t dtype, int rank,
                                  const int64_t *dims, weft_tensor_t **out);
/* Copies `src` to `device` (NULL = host), or returns a new reference to it when it already is
 * somewhere `device` can read directly. */
weft_status_t *weft__tensor_to_device(weft_tensor_t *src, weft__device_t *device,
                                      weft_tensor_t **out);
/* Deep copy into host memory (for fetches and for Assign's value semantics). */
weft_status_t *weft__tensor_copy_to_host(const weft_tensor_t *src, weft_tensor_t **out);
void weft__tensor_fill_view(const weft_tensor_t *tensor, weft_tensor_view_t *view);
bool weft__tensor_is_host(const weft_tensor_t *tensor);

/* dtype helpers. */
bool weft__dtype_is_ref(int dtype);
weft_dtype_t weft__dtype_base(int dtype);
bool weft__dtype_is_valid(int dtype);
/* TensorFlow's DataTypeString of a base dtype ("float", "double", "int32"), for messages that
 * quote TensorFlow's; "invalid" for anything else. */
const char *weft__dtype_tf_name(weft_dtype_t dtype);
/* "DT_FLOAT" style names used by op specs and error messages parsing ("float" accepted too). */
bool weft__dtype_from_spec_name(const char *name, weft_dtype_t *out);
/* IEEE half and bfloat16 bit patterns to and from float: round to nearest even, overflow to inf,
 * NaN stays NaN (quiet). */
float weft__half_to_float(uint16_t bits);
uint16_t weft__float_to_half(float value);
float weft__bfloat16_to_float(uint16_t bits);
uint16_t weft__float_to_bfloat16(float value);

/* Shapes. */
int64_t weft__shape_num_elements(int rank, const int64_t *dims); /* -1 if any dim unknown */
/* "[2,?,3]" or "<unknown>"; the caller g_free()s it. */
char *weft__shape_to_string(int rank, const int64_t *dims);
/* TensorFlow broadcasting of two shapes (unknown dims allowed). INVALID_ARGUMENT naming both
 * shapes when they are incompatible. */
weft_status_t *weft__broadcast_shapes(const weft__shape_t *a, const weft__shape_t *b,
                                      weft__shape_t *out);

/* Intra-op thread pools (per process, or per session when use_per_session_threads). */
typedef struct weft__threadpool weft__threadpool_t;
weft__threadpool_t *weft__threadpool_new(int n_threads, const char *name);
void weft__threadpool_free(weft__threadpool_t *pool);
int weft__threadpool_size(const weft__threadpool_t *pool);
/* Schedules fn(arg) on a pool thread. */
void weft__threadpool_schedule(weft__threadpool_t *pool, void (*fn)(void *arg), void *arg);
/* Runs fn over [0,total) in chunks on the pool and the calling thread; returns when done. Safe to
 * call from a pool thread (the caller works too, so it cannot deadlock). */
void weft__parallel_for(weft__threadpool_t *pool, int64_t total, int64_t cost_per_unit,
                        weft_range_fn fn, void *arg);
/* How weft__parallel_for cuts total units of cost_per_unit cycles each for a pool of n_threads:
 * returns the number of chunks (1: all on the caller) and sets *chunk_size (units per chunk). */
int64_t weft__parallel_for_plan(int64_t total, int64_t cost_per_unit, int n_threads,
                                int64_t *chunk_size);
/* Releases every host block kept for reuse (tensor.c), so that what follows allocates fresh
 * memory: for measurements of resident memory (weft bench's peak_memory row). */
void weft__host_buffer_cache_flush(void);
/* Host tensor memory in use (bytes of live host buffers, the cache not counted) and the most
 * that was in use since the last weft__host_memory_reset_peak(): what weft bench reports as a
 * step's peak memory, independent of what the C library keeps resident. */
void weft__host_memory_stats(size_t *live, size_t *peak);
void weft__host_memory_reset_peak(void);

/* Shared default pools; sizes from the first caller's options (0 = number of cores). */
weft__threadpool_t *weft__default_inter_op_pool(int n_threads);
weft__threadpool_t *weft__default_intra_op_pool(int n_threads);
int weft__num_cores(void);

/* Logging through GLib, domain "weft". */
void weft__log(weft_log_level_t level, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void weft__vlog(weft_log_level_t level, const char *who, const char *fmt, va_list ap);

/* weft_tensor_read_npz over the archive's bytes in memory (npy.c); `path` names it in errors.
 * The fuzz target reads archives this way, without a file per input. */
weft_status_t *weft__npz_parse(const uint8_t *bytes, size_t len, const char *path, const char *key,
                               weft_tensor_t **out);

/* True when `path` exists but is not a regular file (a FIFO, device, directory, socket);
 * *kind (may be NULL) then says which, e.g. "a FIFO". Readers check this before reading a
 * whole file (file.c). */
bool weft__file_is_special(const char *path, const char **kind);

/* Hands the C library's free memory back to the system (glibc's malloc_trim(0)). A no-op under
 * AddressSanitizer, whose allocator replaces glibc's: glibc's malloc_trim then walks arenas that
 * allocator never set up, and faulted in CI's sanitizer run (mtrim, address 0x8). */
void weft__malloc_trim(void);

#endif /* WEFT_BASE_INTERNAL_H */
