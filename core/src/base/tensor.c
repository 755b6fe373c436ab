/* tensor.c: reference-counted buffers (host memory or a device's memory through its backend) and
 * the tensors viewing them; copies between host and devices; element access for the client API.
 *
 * Host memory is 64-byte aligned (posix_memalign, or an aligned offset in the block of a small
 * buffer) so kernels may use aligned vector loads; 4 MiB or more starts on a huge page (below). A
 * device whose backend says host_accessible (the CPU backend) counts as host: its tensors are read
 * in place and never copied to or from host memory. String tensors only ever live in host memory:
 * their buffer is an array of weft_string_t whose bytes the buffer owns. A host buffer may also
 * borrow memory someone else owns (a received tensor over its shared-memory segment): its release
 * callback, not free(), runs when the last reference goes. */
#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "base_internal.h"

#define HOST_ALIGNMENT 64
/* Host data of at most this many bytes is allocated with its buffer (see weft__buffer_t), by
 * plain malloc (whose per-thread cache posix_memalign bypasses) with room to align the data to
 * HOST_ALIGNMENT inside the block. The block is sized for the data it holds: a scalar's is 144
 * bytes, not 208 (a graph of half a million constants has half a million of them). */
#define INLINE_MAX_BYTES 64
#define INLINE_BLOCK_BYTES(nbytes) (sizeof(weft__buffer_t) + HOST_ALIGNMENT - 1 + (nbytes))

static const char *device_name(const weft__device_t *device) {
  return device == NULL ? "host" : (device->name != NULL ? device->name : "<unnamed device>");
}

static bool device_is_host(const weft__device_t *device) {
  return device == NULL || device->props.host_accessible;
}

static void *device_handle(const weft__device_t *device) { return device->handle; }

static const weft_backend_t *device_backend(const weft__device_t *device) {
  return device->backend != NULL ? &device->backend->table : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Guard bytes. With WEFT_GUARD_BYTES=1 in the environment (weft-conformance sets it) every host
 * buffer gets GUARD bytes of a known pattern before and after its data, checked when it is freed,
 * so that a kernel writing outside its output (or input) shows. Decided once per process, at the
 * first buffer; GUARD is a multiple of HOST_ALIGNMENT so the data stays aligned. */

#define GUARD 64

static GMutex guard_lock;
static uint64_t guard_damaged;
static size_t guard_last_nbytes;

static bool guards_on(void) {
  static gsize once = 0;
  static bool on = false;
  if (g_once_init_enter(&once)) {
    const char *env = g_getenv("WEFT_GUARD_BYTES");
    on = env != NULL && env[0] != '\0' && strcmp(env, "0") != 0;
    g_once_init_leave(&once, 1);
  }
  return on;
}

static guint8 guard_byte(size_t i) { return (guint8)(0xA5 ^ (i * 29)); }

/* raw points at GUARD + nbytes + GUARD bytes; returns the data pointer. */
static void *guard_fill(void *raw, size_t nbytes) {
  guint8 *p = raw;
  for (size_t i = 0; i < GUARD; i++) {
    p[i] = guard_byte(i);
    p[GUARD + nbytes + i] = guard_byte(i + GUARD);
  }
  return p + GUARD;
}

/* Checks the guards around data; returns the pointer to free. */
static void *guard_check(void *data, size_t nbytes) {
  guint8 *raw = (guint8 *)data - GUARD;
  for (size_t i = 0; i < GUARD; i++) {
    if (raw[i] == guard_byte(i) && raw[GUARD + nbytes + i] == guard_byte(i + GUARD)) continue;
    g_mutex_lock(&guard_lock);
    guard_damaged++;
    guard_last_nbytes = nbytes;
    g_mutex_unlock(&guard_lock);
    weft__log(WEFT_LOG_WARNING, "tensor",
              "guard bytes around a %zu-byte host buffer were overwritten (a write out of bounds)",
              nbytes);
    break;
  }
  return raw;
}

uint64_t weft__guard_violations(size_t *last_nbytes) {
  g_mutex_lock(&guard_lock);
  uint64_t n = guard_damaged;
  if (last_nbytes != NULL) *last_nbytes = guard_last_nbytes;
  g_mutex_unlock(&guard_lock);
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * Buffers */

static void free_string_elements(weft_string_t *strings, int64_t n) {
  if (strings == NULL) return;
  for (int64_t i = 0; i < n; i++) g_free(strings[i].data);
}

/* ---------------------------------------------------------------------------------------------
 * Large host blocks are kept for reuse: a step that allocates a 64 MiB output every run would
 * otherwise get fresh pages from the kernel each time and pay to fault them in, which costs as
 * much as the kernel's own pass over the data (glibc hands blocks over 128 KiB out as fresh
 * mappings: a 256 KiB MatMul output faulted in its 64 pages every step). Blocks of at least
 * HOST_CACHE_MIN_BYTES go back to a small exact-size cache of at most HOST_CACHE_MAX_BLOCKS
 * blocks, capped by WEFT_HOST_BUFFER_CACHE_MB (default 256; 0 disables); the oldest block is
 * released first. Not used with guard bytes, which want every allocation fresh. */
#define HOST_CACHE_MIN_BYTES ((size_t)64 << 10)
/* Blocks kept at most, so that finding one (a scan for the exact size) stays short. */
#define HOST_CACHE_MAX_BLOCKS 64

/* Host blocks of at least HUGE_MIN_BYTES start on a 2 MiB boundary and their whole 2 MiB pages
 * are advised as transparent huge pages (madvise MADV_HUGEPAGE: Debian's default THP mode,
 * "madvise", gives them to no one else). A pass over a 64 MiB tensor then walks 32 pages where it
 * walked 16384, and the hardware prefetchers, which stop at every 4 KiB page, run on: Sigmoid over
 * 16M floats from memory 5.6-7.5 -> 4.3-5.1 ms, Relu 7.2-7.6 -> 4.5-4.9 ms (docs/performance.md,
 * branch kern). Below 4 MiB the rounding to whole huge pages would waste too large a share. Off
 * with WEFT_HOST_HUGE_PAGES=0. */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#define HUGE_MIN_BYTES ((size_t)4 << 20)

static bool huge_pages_on(void) {
  static gsize once = 0;
  static bool on = true;
  if (g_once_init_enter(&once)) {
    const char *env = g_getenv("WEFT_HOST_HUGE_PAGES");
    on = env == NULL || strcmp(env, "0") != 0;
    g_once_init_leave(&once, 1);
  }
  return on;
}

/* posix_memalign for host data of nbytes (> 0), on a huge-page boundary where it is that big. */
static int host_data_alloc(void **data, size_t nbytes) {
  if (nbytes < HUGE_MIN_BYTES || !huge_pages_on())
    return posix_memalign(data, HOST_ALIGNMENT, nbytes);
  int rc = posix_memalign(data, HUGE_PAGE_BYTES, nbytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* Advice only: a kernel without THP says EINVAL and the block keeps its small pages. */
  if (rc == 0) (void)madvise(*data, nbytes / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES, MADV_HUGEPAGE);
#endif
  return rc;
}

typedef struct cached_block {
  void *data;
  size_t nbytes;
} cached_block_t;

static atomic_size_t host_live_bytes; /* see weft__host_memory_stats */
static atomic_size_t host_peak_bytes;

static void host_memory_add(size_t nbytes) {
  size_t live = atomic_fetch_add_explicit(&host_live_bytes, nbytes, memory_order_relaxed) + nbytes;
  size_t peak = atomic_load_explicit(&host_peak_bytes, memory_order_relaxed);
  while (live > peak && !atomic_compare_exchange_weak_explicit(&host_peak_bytes, &peak, live,
                                                               memory_order_relaxed,
                                                               memory_order_relaxed)) {
  }
}

static void host_memory_sub(size_t nbytes) {
  atomic_fetch_sub_explicit(&host_live_bytes, nbytes, memory_order_relaxed);
}

void weft__host_memory_stats(size_t *live, size_t *peak) {
  if (live) *live = atomic_load(&host_live_bytes);
  if (peak) *peak = atomic_load(&host_peak_bytes);
}

void weft__host_memory_reset_peak(void) {
  atomic_store(&host_peak_bytes, atomic_load(&host_live_bytes));
}

static GMutex host_cache_lock;
static GQueue host_cache = G_QUEUE_INIT; /* cached_block_t*, oldest first */
static size_t host_cache_bytes;

static size_t host_cache_limit(void) {
  static gsize limit_plus_one = 0;
  if (g_once_init_enter(&limit_plus_one)) {
    const char *env = g_getenv("WEFT_HOST_BUFFER_CACHE_MB");
    guint64 mb = 256;
    if (env != NULL && *env != '\0') mb = g_ascii_strtoull(env, NULL, 10);
    g_once_init_leave(&limit_plus_one, (gsize)(mb << 20) + 1);
  }
  return (size_t)(limit_plus_one - 1);
}

static void *host_cache_take(size_t nbytes) {
  if (nbytes < HOST_CACHE_MIN_BYTES || guards_on()) return NULL;
  void *data = NULL;
  g_mutex_lock(&host_cache_lock);
  for (GList *l = host_cache.tail; l != NULL; l = l->prev) {
    cached_block_t *b = l->data;
    if (b->nbytes == nbytes) {
      data = b->data;
      host_cache_bytes -= nbytes;
      g_queue_delete_link(&host_cache, l);
      g_free(b);
      break;
    }
  }
  g_mutex_unlock(&host_cache_lock);
  return data;
}

/* Keeps the block for reuse, or frees it; true if the cache took it. */
static bool host_cache_give(void *data, size_t nbytes) {
  size_t limit = host_cache_limit();
  if (nbytes < HOST_CACHE_MIN_BYTES || guards_on() || nbytes > limit) return false;
  GSList *evicted = NULL;
  g_mutex_lock(&host_cache_lock);
  while ((host_cache_bytes + nbytes > limit || host_cache.length >= HOST_CACHE_MAX_BLOCKS) &&
         !g_queue_is_empty(&host_cache)) {
    cached_block_t *old = g_queue_pop_head(&host_cache);
    host_cache_bytes -= old->nbytes;
    evicted = g_slist_prepend(evicted, old);
  }
  cached_block_t *b = g_new(cached_block_t, 1);
  b->data = data;
  b->nbytes = nbytes;
  g_queue_push_tail(&host_cache, b);
  host_cache_bytes += nbytes;
  g_mutex_unlock(&host_cache_lock);
  for (GSList *l = evicted; l != NULL; l = l->next) {
    free(((cached_block_t *)l->data)->data);
    g_free(l->data);
  }
  g_slist_free(evicted);
  return true;
}

void weft__host_buffer_cache_flush(void) {
  g_mutex_lock(&host_cache_lock);
  GQueue blocks = host_cache;
  host_cache = (GQueue)G_QUEUE_INIT;
  host_cache_bytes = 0;
  g_mutex_unlock(&host_cache_lock);
  for (GList *l = blocks.head; l != NULL; l = l->next) {
    free(((cached_block_t *)l->data)->data);
    g_free(l->data);
  }
  g_list_free(blocks.head);
}

static weft_status_t *buffer_new(weft__device_t *device, weft_dtype_t dtype, int64_t n_elements,
                                bool zeroed, weft__buffer_t **out) {
  if (out == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "weft__buffer_new: out is NULL");
  *out = NULL;
  size_t elem = weft_dtype_size(dtype);
  if (elem == 0 || weft__dtype_is_ref((int)dtype))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "cannot allocate a buffer of dtype %s (%d)",
                           weft_dtype_name(dtype), (int)dtype);
  if (n_elements < 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "cannot allocate a %s buffer of %" G_GINT64_FORMAT " elements",
                           weft_dtype_name(dtype), n_elements);
  if ((uint64_t)n_elements > SIZE_MAX / elem)
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                           "%s buffer of %" G_GINT64_FORMAT " elements is too large to address",
                           weft_dtype_name(dtype), n_elements);
  size_t nbytes = (size_t)n_elements * elem;

  if (dtype == WEFT_DT_STRING) {
    if (!device_is_host(device))
      return weft_status_new(WEFT_FAILED_PRECONDITION,
                             "string tensors live in host memory only; cannot allocate one on "
                             "device %s",
                             device_name(device));
    device = NULL; /* the elements' bytes are host memory, so the array is too */
  }

  void *data = NULL;
  if (device == NULL && nbytes <= INLINE_MAX_BYTES && dtype != WEFT_DT_STRING && !guards_on()) {
    void *block = malloc(INLINE_BLOCK_BYTES(nbytes));
    if (block == NULL)
      return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                             "out of host memory allocating %zu bytes for %" G_GINT64_FORMAT
                             " %s elements",
                             nbytes, n_elements, weft_dtype_name(dtype));
    weft__buffer_t *buffer = block;
    memset(buffer, 0, sizeof *buffer);
    buffer->refcount = 1;
    uintptr_t after = (uintptr_t)block + sizeof *buffer;
    buffer->data = (void *)((after + HOST_ALIGNMENT - 1) & ~(uintptr_t)(HOST_ALIGNMENT - 1));
    buffer->nbytes = nbytes;
    buffer->dtype = dtype;
    buffer->n_elements = n_elements;
    buffer->inline_data = true;
    if (zeroed) memset(buffer->data, 0, nbytes);
    host_memory_add(nbytes);
    *out = buffer;
    return NULL;
  }
  if (device == NULL) {
    /* posix_memalign of 0 bytes may return NULL; a non-NULL pointer keeps "data == NULL" from
     * meaning anything. */
    size_t extra = guards_on() ? 2 * GUARD : 0;
    data = host_cache_take(nbytes);
    if (data == NULL && (extra ? posix_memalign(&data, HOST_ALIGNMENT, nbytes + extra)
                               : host_data_alloc(&data, nbytes > 0 ? nbytes : HOST_ALIGNMENT)) != 0)
      return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                             "out of host memory allocating %zu bytes for %" G_GINT64_FORMAT
                             " %s elements",
                             nbytes, n_elements, weft_dtype_name(dtype));
    if (extra) data = guard_fill(data, nbytes);
    /* Kernel outputs are written whole, so only callers that read before writing (and string
     * arrays, whose elements must start empty) pay for zeroing. */
    if (zeroed || dtype == WEFT_DT_STRING) memset(data, 0, nbytes);
    host_memory_add(nbytes);
  } else {
    const weft_backend_t *table = device_backend(device);
    if (table == NULL || table->alloc == NULL || table->free == NULL)
      return weft_status_new(WEFT_INTERNAL, "device %s has no memory allocator",
                             device_name(device));
    weft_status_t *status = table->alloc(device_handle(device), nbytes, &data);
    if (status != NULL)
      return weft_status_prefix(status, "allocating %zu bytes for %" G_GINT64_FORMAT
                                " %s elements on %s",
                                nbytes, n_elements, weft_dtype_name(dtype), device_name(device));
    if (data == NULL && nbytes > 0)
      return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                             "device %s returned no memory for %zu bytes", device_name(device),
                             nbytes);
    /* Memory the core can touch starts zeroed like host memory; other device memory is
     * uninitialised (kernels write every output element). */
    if (device_is_host(device) && data != NULL) memset(data, 0, nbytes);
  }

  weft__buffer_t *buffer = g_new(weft__buffer_t, 1); /* not g_new0: see weft__tensor_wrap */
  memset(buffer, 0, sizeof *buffer);
  buffer->refcount = 1;
  buffer->device = device;
  buffer->data = data;
  buffer->nbytes = nbytes;
  buffer->dtype = dtype;
  buffer->n_elements = n_elements;
  *out = buffer;
  return NULL;
}

weft_status_t *weft__buffer_new(weft__device_t *device, weft_dtype_t dtype, int64_t n_elements,
                                weft__buffer_t **out) {
  return buffer_new(device, dtype, n_elements, true, out);
}

weft__buffer_t *weft__buffer_new_borrowed(weft_dtype_t dtype, void *data, size_t nbytes,
                                          int64_t n_elements, void (*release)(void *release_arg),
                                          void *release_arg) {
  if (dtype == WEFT_DT_STRING || release == NULL) return NULL;
  weft__buffer_t *buffer = g_new0(weft__buffer_t, 1);
  buffer->refcount = 1;
  buffer->data = data;
  buffer->nbytes = nbytes;
  buffer->dtype = dtype;
  buffer->n_elements = n_elements;
  buffer->release = release;
  buffer->release_arg = release_arg;
  return buffer;
}

uint64_t weft__buffer_mark_constant(weft__buffer_t *buffer) {
  static guint64 next_id = 1;
  uint64_t id = __atomic_load_n(&buffer->constant_id, __ATOMIC_ACQUIRE);
  if (id != 0) return id;
  uint64_t fresh = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
  /* Two threads marking at once: the first id stored wins and both return it. */
  if (__atomic_compare_exchange_n(&buffer->constant_id, &id, fresh, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return fresh;
  return id;
}

weft__buffer_t *weft__buffer_ref(weft__buffer_t *buffer) {
  if (buffer != NULL) g_atomic_int_inc(&buffer->refcount);
  return buffer;
}

void weft__buffer_unref(weft__buffer_t *buffer) {
  if (buffer == NULL || !g_atomic_int_dec_and_test(&buffer->refcount)) return;
  if (buffer->release != NULL) {
    buffer->release(buffer->release_arg);
    g_free(buffer);
    return;
  }
  if (buffer->inline_data) {
    host_memory_sub(buffer->nbytes);
    free(buffer);
    return;
  }
  if (buffer->dtype == WEFT_DT_STRING) free_string_elements(buffer->data, buffer->n_elements);
  if (buffer->device == NULL) {
    host_memory_sub(buffer->nbytes);
    if (guards_on()) free(guard_check(buffer->data, buffer->nbytes));
    else if (!host_cache_give(buffer->data, buffer->nbytes)) free(buffer->data);
  }
  else if (buffer->data != NULL)
    device_backend(buffer->device)->free(device_handle(buffer->device), buffer->data);
  g_free(buffer);
}

bool weft__buffer_host_accessible(const weft__buffer_t *buffer) {
  return buffer != NULL && device_is_host(buffer->device);
}

/* Copies nbytes from src to dst wherever each lives. String buffers are both host (allocation
 * guarantees it) and are deep-copied element by element. */
static weft_status_t *buffer_copy(weft__buffer_t *dst, const weft__buffer_t *src) {
  size_t nbytes = src->nbytes < dst->nbytes ? src->nbytes : dst->nbytes;
  if (src->dtype == WEFT_DT_STRING) {
    if (dst->dtype != WEFT_DT_STRING)
      return weft_status_new(WEFT_INTERNAL, "copying a string buffer into a %s buffer",
                             weft_dtype_name(dst->dtype));
    const weft_string_t *from = src->data;
    weft_string_t *to = dst->data;
    int64_t n = src->n_elements < dst->n_elements ? src->n_elements : dst->n_elements;
    for (int64_t i = 0; i < n; i++) {
      g_free(to[i].data);
      to[i].data = g_malloc(from[i].len + 1);
      if (from[i].len > 0) memcpy(to[i].data, from[i].data, from[i].len);
      to[i].data[from[i].len] = '\0';
      to[i].len = from[i].len;
    }
    return NULL;
  }
  if (nbytes == 0) return NULL;

  bool src_host = weft__buffer_host_accessible(src);
  bool dst_host = weft__buffer_host_accessible(dst);
  if (src_host && dst_host) {
    memcpy(dst->data, src->data, nbytes);
    return NULL;
  }
  if (src_host) {
    const weft_backend_t *t = device_backend(dst->device);
    if (t->copy_to_device == NULL)
      return weft_status_new(WEFT_UNIMPLEMENTED, "device %s cannot copy from host",
                             device_name(dst->device));
    weft_status_t *status =
        t->copy_to_device(device_handle(dst->device), dst->data, src->data, nbytes);
    return status != NULL ? weft_status_prefix(status, "copying %zu bytes from host to %s",
                                               nbytes, device_name(dst->device))
                          : NULL;
  }
  if (dst_host) {
    const weft_backend_t *t = device_backend(src->device);
    if (t->copy_from_device == NULL)
      return weft_status_new(WEFT_UNIMPLEMENTED, "device %s cannot copy to host",
                             device_name(src->device));
    weft_status_t *status =
        t->copy_from_device(device_handle(src->device), dst->data, src->data, nbytes);
    return status != NULL ? weft_status_prefix(status, "copying %zu bytes from %s to host",
                                               nbytes, device_name(src->device))
                          : NULL;
  }
  if (src->device == dst->device && device_backend(src->device)->copy_device_to_device != NULL) {
    weft_status_t *status = device_backend(src->device)->copy_device_to_device(
        device_handle(src->device), dst->data, src->data, nbytes);
    return status != NULL ? weft_status_prefix(status, "copying %zu bytes within %s", nbytes,
                                               device_name(src->device))
                          : NULL;
  }
  /* Two devices (possibly of different backends): stage through host memory. */
  const weft_backend_t *ts = device_backend(src->device);
  const weft_backend_t *td = device_backend(dst->device);
  if (ts->copy_from_device == NULL || td->copy_to_device == NULL)
    return weft_status_new(WEFT_UNIMPLEMENTED, "cannot copy from %s to %s",
                           device_name(src->device), device_name(dst->device));
  void *staging = g_try_malloc(nbytes);
  if (staging == NULL)
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                           "out of host memory staging %zu bytes from %s to %s", nbytes,
                           device_name(src->device), device_name(dst->device));
  weft_status_t *status =
      ts->copy_from_device(device_handle(src->device), staging, src->data, nbytes);
  if (status == NULL)
    status = td->copy_to_device(device_handle(dst->device), dst->data, staging, nbytes);
  g_free(staging);
  return status != NULL ? weft_status_prefix(status, "copying %zu bytes from %s to %s", nbytes,
                                             device_name(src->device),
                                             device_name(dst->device))
                        : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Tensors */

/* Validates dtype and shape for a new tensor; *n_out is the element count. */
static weft_status_t *check_new(const char *who, weft_dtype_t dtype, int rank,
                                const int64_t *dims, int64_t *n_out) {
  if (weft__dtype_is_ref((int)dtype) || !weft__dtype_is_valid((int)dtype))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: invalid dtype %d (%s)", who, (int)dtype,
                           weft_dtype_name(dtype));
  if (rank < 0 || rank > WEFT_MAX_RANK)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: rank %d is outside 0..%d", who, rank,
                           WEFT_MAX_RANK);
  if (rank > 0 && dims == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: rank %d but no dims", who, rank);
  int64_t n = weft__shape_num_elements(rank, dims);
  if (n < 0) {
    char *shape = weft__shape_to_string(rank, dims);
    bool unknown = false;
    for (int i = 0; i < rank; i++) unknown |= dims[i] < 0;
    weft_status_t *status =
        unknown ? weft_status_new(WEFT_INVALID_ARGUMENT,
                                  "%s: shape %s of a %s tensor has an unknown or negative dim",
                                  who, shape, weft_dtype_name(dtype))
                : weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                                  "%s: shape %s of a %s tensor has too many elements", who,
                                  shape, weft_dtype_name(dtype));
    g_free(shape);
    return status;
  }
  *n_out = n;
  return NULL;
}

weft_tensor_t *weft__tensor_wrap(weft_dtype_t dtype, int rank, const int64_t *dims,
                                 weft__buffer_t *buffer) {
  if (buffer == NULL || rank < 0 || rank > WEFT_MAX_RANK || (rank > 0 && dims == NULL))
    return NULL;
  /* Not g_new0: glibc's calloc skips its per-thread cache, and this runs once per kernel
   * output. */
  weft_tensor_t *tensor = g_new(weft_tensor_t, 1);
  memset(tensor, 0, sizeof *tensor);
  tensor->refcount = 1;
  tensor->dtype = dtype;
  tensor->rank = rank;
  for (int i = 0; i < rank; i++) tensor->dims[i] = dims[i];
  tensor->num_elements = weft__shape_num_elements(rank, dims);
  tensor->buffer = weft__buffer_ref(buffer);
  return tensor;
}

static weft_status_t *tensor_alloc(weft__device_t *device, weft_dtype_t dtype, int rank,
                                   const int64_t *dims, bool zeroed, weft_tensor_t **out) {
  if (out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft__tensor_alloc: out is NULL");
  *out = NULL;
  int64_t n = 0;
  weft_status_t *status = check_new("allocating a tensor", dtype, rank, dims, &n);
  if (status != NULL) return status;
  weft__buffer_t *buffer = NULL;
  status = buffer_new(device, dtype, n, zeroed, &buffer);
  if (status != NULL) return status;
  *out = weft__tensor_wrap(dtype, rank, dims, buffer);
  weft__buffer_unref(buffer);
  return NULL;
}

weft_status_t *weft__tensor_alloc(weft__device_t *device, weft_dtype_t dtype, int rank,
                                  const int64_t *dims, weft_tensor_t **out) {
  return tensor_alloc(device, dtype, rank, dims, false, out);
}

bool weft__tensor_is_host(const weft_tensor_t *tensor) {
  return tensor != NULL && weft__buffer_host_accessible(tensor->buffer);
}

weft_status_t *weft__tensor_to_device(weft_tensor_t *src, weft__device_t *device,
                                      weft_tensor_t **out) {
  if (src == NULL || out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft__tensor_to_device: NULL argument");
  *out = NULL;
  bool target_host = device_is_host(device);
  if (src->buffer->device == device || (target_host && weft__tensor_is_host(src))) {
    *out = weft_tensor_ref(src);
    return NULL;
  }
  if (src->dtype == WEFT_DT_STRING && !target_host) {
    char *shape = weft__shape_to_string(src->rank, src->dims);
    weft_status_t *status = weft_status_new(
        WEFT_FAILED_PRECONDITION,
        "cannot copy string tensor %s to device %s: string tensors live in host memory only",
        shape, device_name(device));
    g_free(shape);
    return status;
  }
  /* A target that reads host memory gets plain host memory. */
  weft_tensor_t *dst = NULL;
  weft_status_t *status =
      weft__tensor_alloc(target_host ? NULL : device, src->dtype, src->rank, src->dims, &dst);
  if (status == NULL) status = buffer_copy(dst->buffer, src->buffer);
  if (status != NULL) {
    weft_tensor_unref(dst);
    return status;
  }
  *out = dst;
  return NULL;
}

weft_status_t *weft__tensor_copy_to_host(const weft_tensor_t *src, weft_tensor_t **out) {
  if (src == NULL || out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft__tensor_copy_to_host: NULL argument");
  *out = NULL;
  weft_tensor_t *dst = NULL;
  weft_status_t *status = weft__tensor_alloc(NULL, src->dtype, src->rank, src->dims, &dst);
  if (status == NULL) status = buffer_copy(dst->buffer, src->buffer);
  if (status != NULL) {
    weft_tensor_unref(dst);
    return status;
  }
  *out = dst;
  return NULL;
}

void weft__tensor_fill_view(const weft_tensor_t *tensor, weft_tensor_view_t *view) {
  if (view == NULL) return;
  /* The plugins built with this SDK pass the whole struct: fill it in place. This runs for every
   * input and output of every kernel call, and the copy through `full` below was a tenth of a
   * small step. */
  if (tensor != NULL && (view->struct_size == 0 || view->struct_size == sizeof *view)) {
    view->struct_size = sizeof *view;
    view->dtype = tensor->dtype;
    view->rank = tensor->rank;
    memcpy(view->dims, tensor->dims, sizeof view->dims);
    view->num_elements = tensor->num_elements;
    view->data = tensor->buffer != NULL ? tensor->buffer->data : NULL;
    view->nbytes = weft_tensor_nbytes(tensor);
    return;
  }
  weft_tensor_view_t full;
  memset(&full, 0, sizeof full);
  full.struct_size = view->struct_size != 0 ? view->struct_size : sizeof full;
  if (tensor != NULL) {
    full.dtype = tensor->dtype;
    full.rank = tensor->rank;
    memcpy(full.dims, tensor->dims, sizeof full.dims);
    full.num_elements = tensor->num_elements;
    full.data = tensor->buffer != NULL ? tensor->buffer->data : NULL;
    full.nbytes = weft_tensor_nbytes(tensor);
  }
  /* A plugin built against an older SDK passes a smaller struct: write only what it has. */
  size_t limit = full.struct_size;
#define COPY_FIELD(f)                                            \
  do {                                                           \
    if (offsetof(weft_tensor_view_t, f) + sizeof full.f <= limit) \
      memcpy(&view->f, &full.f, sizeof full.f);                  \
  } while (0)
  COPY_FIELD(struct_size);
  COPY_FIELD(dtype);
  COPY_FIELD(rank);
  COPY_FIELD(dims);
  COPY_FIELD(num_elements);
  COPY_FIELD(data);
  COPY_FIELD(nbytes);
#undef COPY_FIELD
}

/* ---------------------------------------------------------------------------------------------
 * Client API */

weft_tensor_t *weft_tensor_new(weft_dtype_t dtype, int rank, const int64_t *dims) {
  weft_tensor_t *tensor = NULL;
  weft_status_t *status = tensor_alloc(NULL, dtype, rank, dims, true, &tensor);
  if (status != NULL) {
    /* The API has no status here; say why in the log rather than fail silently. */
    weft__log(WEFT_LOG_WARNING, "weft_tensor_new", "%s", weft_status_message(status));
    weft_status_free(status);
    return NULL;
  }
  return tensor;
}

weft_tensor_t *weft_tensor_new_from_data(weft_dtype_t dtype, int rank, const int64_t *dims,
                                         const void *data, size_t nbytes, weft_status_t **status) {
  weft_status_t *local = NULL;
  weft_tensor_t *tensor = NULL;
  int64_t n = 0;
  local = check_new("weft_tensor_new_from_data", dtype, rank, dims, &n);
  if (local == NULL) {
    size_t expected = (size_t)n * weft_dtype_size(dtype);
    if (nbytes != expected) {
      char *shape = weft__shape_to_string(rank, dims);
      local = weft_status_new(WEFT_INVALID_ARGUMENT,
                              "weft_tensor_new_from_data: %s%s needs %zu bytes (%" G_GINT64_FORMAT
                              " elements of %zu bytes), got %zu",
                              weft_dtype_name(dtype), shape, expected, n, weft_dtype_size(dtype),
                              nbytes);
      g_free(shape);
    } else if (data == NULL && nbytes > 0) {
      local = weft_status_new(WEFT_INVALID_ARGUMENT, "weft_tensor_new_from_data: data is NULL");
    }
  }
  if (local == NULL) local = weft__tensor_alloc(NULL, dtype, rank, dims, &tensor);
  if (local == NULL && nbytes > 0) {
    if (dtype == WEFT_DT_STRING) {
      /* data is the caller's weft_string_t array: copy the bytes, not the pointers. */
      weft__buffer_t view = {.data = (void *)data, .nbytes = nbytes, .dtype = dtype,
                             .n_elements = n};
      local = buffer_copy(tensor->buffer, &view);
    } else {
      memcpy(tensor->buffer->data, data, nbytes);
    }
  }
  if (local != NULL) {
    weft_tensor_unref(tensor);
    tensor = NULL;
  }
  if (status != NULL)
    *status = local;
  else
    weft_status_free(local);
  return tensor;
}

weft_tensor_t *weft_tensor_new_scalar_float(float value) {
  weft_tensor_t *tensor = weft_tensor_new(WEFT_DT_FLOAT, 0, NULL);
  if (tensor != NULL) *(float *)tensor->buffer->data = value;
  return tensor;
}

weft_tensor_t *weft_tensor_new_scalar_int32(int32_t value) {
  weft_tensor_t *tensor = weft_tensor_new(WEFT_DT_INT32, 0, NULL);
  if (tensor != NULL) *(int32_t *)tensor->buffer->data = value;
  return tensor;
}

weft_tensor_t *weft_tensor_new_string(const char *bytes, size_t len) {
  weft_tensor_t *tensor = weft_tensor_new(WEFT_DT_STRING, 0, NULL);
  if (tensor == NULL) return NULL;
  weft_status_t *status = weft_tensor_set_string(tensor, 0, bytes, len);
  if (status != NULL) {
    weft_status_free(status);
    weft_tensor_unref(tensor);
    return NULL;
  }
  return tensor;
}

weft_tensor_t *weft_tensor_ref(weft_tensor_t *tensor) {
  if (tensor != NULL) g_atomic_int_inc(&tensor->refcount);
  return tensor;
}

void weft_tensor_unref(weft_tensor_t *tensor) {
  if (tensor == NULL || !g_atomic_int_dec_and_test(&tensor->refcount)) return;
  weft__buffer_unref(tensor->buffer);
  g_free(tensor);
}

weft_dtype_t weft_tensor_dtype(const weft_tensor_t *tensor) {
  return tensor != NULL ? tensor->dtype : WEFT_DT_INVALID;
}

int weft_tensor_rank(const weft_tensor_t *tensor) { return tensor != NULL ? tensor->rank : 0; }

const int64_t *weft_tensor_dims(const weft_tensor_t *tensor) {
  return tensor != NULL ? tensor->dims : NULL;
}

int64_t weft_tensor_num_elements(const weft_tensor_t *tensor) {
  return tensor != NULL ? tensor->num_elements : 0;
}

size_t weft_tensor_nbytes(const weft_tensor_t *tensor) {
  if (tensor == NULL || tensor->num_elements < 0) return 0;
  return (size_t)tensor->num_elements * weft_dtype_size(tensor->dtype);
}

/* NULL for a tensor whose memory the host cannot read (a device tensor the client never sees). */
void *weft_tensor_data(const weft_tensor_t *tensor) {
  if (tensor == NULL || !weft__buffer_host_accessible(tensor->buffer)) return NULL;
  return tensor->buffer->data;
}

weft_status_t *weft_tensor_set_string(weft_tensor_t *tensor, int64_t index, const char *bytes,
                                      size_t len) {
  if (tensor == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_tensor_set_string: tensor is NULL");
  if (tensor->dtype != WEFT_DT_STRING)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_tensor_set_string: tensor has dtype %s, not string",
                           weft_dtype_name(tensor->dtype));
  if (index < 0 || index >= tensor->num_elements)
    return weft_status_new(WEFT_OUT_OF_RANGE,
                           "weft_tensor_set_string: index %" G_GINT64_FORMAT
                           " is outside a string tensor of %" G_GINT64_FORMAT " elements",
                           index, tensor->num_elements);
  if (bytes == NULL && len > 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_tensor_set_string: bytes is NULL");
  weft_string_t *element = (weft_string_t *)tensor->buffer->data + index;
  /* NUL-terminated as a convenience for callers that print it. */
  char *copy = g_malloc(len + 1);
  if (len > 0) memcpy(copy, bytes, len);
  copy[len] = '\0';
  g_free(element->data);
  element->data = copy;
  element->len = len;
  return NULL;
}

/* Element `index` of host memory `data` of dtype as a double; NAN for strings' callers to skip. */
static double element_as_double(weft_dtype_t dtype, const void *data, int64_t index) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return ((const float *)data)[index];
    case WEFT_DT_DOUBLE: return ((const double *)data)[index];
    case WEFT_DT_HALF: return weft__half_to_float(((const uint16_t *)data)[index]);
    case WEFT_DT_BFLOAT16: return weft__bfloat16_to_float(((const uint16_t *)data)[index]);
    case WEFT_DT_INT8: return ((const int8_t *)data)[index];
    case WEFT_DT_INT16: return ((const int16_t *)data)[index];
    case WEFT_DT_INT32: return ((const int32_t *)data)[index];
    case WEFT_DT_INT64: return (double)((const int64_t *)data)[index];
    case WEFT_DT_UINT8: return ((const uint8_t *)data)[index];
    case WEFT_DT_UINT16: return ((const uint16_t *)data)[index];
    case WEFT_DT_UINT32: return ((const uint32_t *)data)[index];
    case WEFT_DT_UINT64: return (double)((const uint64_t *)data)[index];
    case WEFT_DT_BOOL: return ((const uint8_t *)data)[index] != 0 ? 1.0 : 0.0;
    default: return 0.0;
  }
}

/* Strings read as 0 (as the API says); a NULL tensor, an index out of range or memory the host
 * cannot read give NaN so that the mistake shows in any arithmetic that follows. */
double weft_tensor_get_double(const weft_tensor_t *tensor, int64_t index) {
  if (tensor == NULL || index < 0 || index >= tensor->num_elements ||
      !weft__tensor_is_host(tensor))
    return NAN;
  if (tensor->dtype == WEFT_DT_STRING) return 0.0;
  return element_as_double(tensor->dtype, tensor->buffer->data, index);
}

static void append_element(GString *s, const weft_tensor_t *tensor, int64_t i) {
  const void *data = tensor->buffer->data;
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  switch (tensor->dtype) {
    case WEFT_DT_FLOAT:
    case WEFT_DT_DOUBLE:
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16:
      /* Locale-independent: a client in a comma-decimal locale still gets "1.5". */
      g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%g",
                                         element_as_double(tensor->dtype, data, i)));
      break;
    case WEFT_DT_INT64:
      g_string_append_printf(s, "%" G_GINT64_FORMAT, ((const int64_t *)data)[i]);
      break;
    case WEFT_DT_UINT64:
      g_string_append_printf(s, "%" G_GUINT64_FORMAT, ((const uint64_t *)data)[i]);
      break;
    case WEFT_DT_BOOL:
      g_string_append(s, ((const uint8_t *)data)[i] ? "true" : "false");
      break;
    case WEFT_DT_STRING: {
      const weft_string_t *str = (const weft_string_t *)data + i;
      /* g_strescape stops at NUL; the bytes may hold one, so escape piecewise. */
      g_string_append_c(s, '"');
      for (size_t k = 0; k < str->len; k++) {
        unsigned char c = (unsigned char)str->data[k];
        if (c == '"' || c == '\\')
          g_string_append_printf(s, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
          g_string_append_printf(s, "\\x%02x", c);
        else
          g_string_append_c(s, (char)c);
      }
      g_string_append_c(s, '"');
      break;
    }
    default:
      g_string_append_printf(s, "%.0f", element_as_double(tensor->dtype, data, i));
      break;
  }
}

char *weft_tensor_to_string(const weft_tensor_t *tensor, int max_elements) {
  if (tensor == NULL) return g_strdup("<null tensor>");
  char *shape = weft__shape_to_string(tensor->rank, tensor->dims);
  GString *s = g_string_new(weft_dtype_name(tensor->dtype));
  g_string_append(s, shape);
  g_free(shape);
  if (!weft__tensor_is_host(tensor)) {
    g_string_append_printf(s, " <on %s>", device_name(tensor->buffer->device));
    return g_string_free(s, FALSE);
  }
  g_string_append_c(s, ' ');
  int64_t n = tensor->num_elements;
  int64_t shown = max_elements < 0 || max_elements >= n ? n : max_elements;
  if (tensor->rank > 0) g_string_append_c(s, '[');
  for (int64_t i = 0; i < shown; i++) {
    if (i > 0) g_string_append(s, ", ");
    append_element(s, tensor, i);
  }
  if (shown < n) g_string_append(s, shown > 0 ? ", ..." : "...");
  if (tensor->rank > 0) g_string_append_c(s, ']');
  /* GLib allocates with the system malloc, so free() works as the API promises. */
  return g_string_free(s, FALSE);
}
