/* Tensor transfers between two tasks of one host through shared memory. Each _Recv whose peer
 * has a loopback address owns a small pool of segments: anonymous memfds named
 * "weft-<128 random bits>", each mapped once and reused. Its RecvTensor request offers one free
 * segment (process id, descriptor, token, capacity); a sender on the same host opens it through
 * /proc/PID/fd/FD, checks that it is that memfd (the token in its name) and big enough, writes
 * the tensor's bytes at its start and answers with the dtype and shape only. The receiver checks
 * those against the capacity and hands out a tensor that borrows the segment: one memcpy instead
 * of gRPC's framing, HTTP/2 flow control and copies. The segment goes back to the pool when the
 * last reference to that tensor goes, and until then is never offered again, so no sender writes
 * under a reader. Meanwhile the next step offers another segment (at most POOL_MAX per _Recv,
 * SHM_POOL_BYTES per process beyond each pool's first); when no other segment would be left to
 * offer, the receiver copies the bytes out into a tensor of its own instead of borrowing, as
 * before. Segments have no name in any file system, so nothing can leak: the memory goes when
 * the last descriptor closes.
 *
 * Anything that fails on the sending side (another host or pid namespace, another user, a small
 * segment) falls back to the bytes in the response; a too-small segment is replaced by one of
 * the size the tensor needed (RecvTensorResponse.shm_wanted) for the next step. A receive that
 * fails drops the segment it offered, since a late sender might still write into it. Freeing the
 * pool (the _Recv's kernel instance) drops its free segments; borrowed ones go when their tensor
 * does. WEFT_SHM_TRANSFER=0 turns the path off on either side (docs/distributed.md). The
 * sender's copy of a tensor bigger than half the last-level cache streams past the cache
 * (weft__shm_copy; WEFT_SHM_STREAM). */
#include "distributed_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#define SHM_HAVE_STREAM 1
#endif

/* Below this, gRPC's copy costs about what opening and mapping the segment does. */
#define SHM_MIN_BYTES (256 * 1024)
/* Segments per _Recv: one being written for this step, one or two still borrowed by the tensors
 * of the steps before (a fetch the client still holds, a step still reading). */
#define POOL_MAX 3
/* Bytes of segments in this process beyond each pool's first: the price of borrowing. */
#define SHM_POOL_BYTES ((guint64)1 << 30)

typedef enum { SEG_FREE, SEG_OFFERED, SEG_BORROWED } seg_state_t;

typedef struct shm_seg {
  int fd;
  void *map;
  size_t capacity;
  char token[33];             /* 32 hex digits */
  seg_state_t state;
  bool extra;                 /* counted in extra_bytes (not its pool's only segment when made) */
  struct weft__shm_segment *pool; /* NULL once the pool is gone (a borrowed segment outlives it) */
} shm_seg_t;

/* One _Recv's segments (the type keeps its old name: callers see one object per _Recv). */
struct weft__shm_segment {
  shm_seg_t *slots[POOL_MAX]; /* NULL: empty slot */
  shm_seg_t *offered;         /* the segment of the request in flight, or NULL */
  guint64 want;               /* bytes the last large tensor needed: the size of new segments */
  bool disabled;              /* creating one failed: stop offering */
};

/* Guards every segment's state and pool pointer, every pool's slots, and extra_bytes: the release
 * of a borrowed segment comes from whichever thread drops its tensor. */
static GMutex pool_lock;
static guint64 extra_bytes; /* bytes of segments that are not the first of their pool */

bool weft__shm_enabled(void) {
  const char *v = g_getenv("WEFT_SHM_TRANSFER");
  return !(v && (strcmp(v, "0") == 0 || g_ascii_strcasecmp(v, "off") == 0 ||
                 g_ascii_strcasecmp(v, "false") == 0));
}

bool weft__address_is_loopback(const char *address) {
  if (!address) return false;
  return g_str_has_prefix(address, "127.") || g_str_has_prefix(address, "localhost:") ||
         g_str_has_prefix(address, "[::1]:");
}

static bool random_token(char out[33]) {
  guint8 bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += (size_t)n;
  }
  for (size_t k = 0; k < sizeof bytes; k++) g_snprintf(out + 2 * k, 3, "%02x", bytes[k]);
  return true;
}

weft__shm_segment_t *weft__shm_segment_new(void) {
  return g_new0(weft__shm_segment_t, 1);
}

/* A fresh mapped memfd of `bytes`, or NULL. */
static shm_seg_t *seg_create(guint64 bytes) {
  char token[33];
  if (bytes == 0 || bytes > G_MAXSIZE / 2 || !random_token(token)) return NULL;
  char *name = g_strdup_printf("weft-%s", token);
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  g_free(name);
  void *map = MAP_FAILED;
  /* Sealed against shrinking: the sender opens the segment read-write, and a segment cut short
   * under either side's mapping would fault (SIGBUS) on the next access (open_offer). */
  if (fd >= 0 && ftruncate(fd, (off_t)bytes) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) == 0)
    map = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  shm_seg_t *seg = g_new0(shm_seg_t, 1);
  seg->fd = fd;
  seg->map = map;
  seg->capacity = (size_t)bytes;
  memcpy(seg->token, token, sizeof seg->token);
  return seg;
}

/* Caller holds pool_lock. */
static void seg_destroy_locked(shm_seg_t *seg) {
  if (seg->extra) extra_bytes -= MIN(extra_bytes, (guint64)seg->capacity);
  munmap(seg->map, seg->capacity);
  close(seg->fd);
  g_free(seg);
}

/* Caller holds pool_lock. Takes seg out of its pool's slot k and destroys it. */
static void slot_drop_locked(weft__shm_segment_t *pool, int k) {
  shm_seg_t *seg = pool->slots[k];
  pool->slots[k] = NULL;
  if (pool->offered == seg) pool->offered = NULL;
  seg_destroy_locked(seg);
}

static int slot_of_locked(const weft__shm_segment_t *pool, const shm_seg_t *seg) {
  for (int k = 0; k < POOL_MAX; k++)
    if (pool->slots[k] == seg) return k;
  return -1;
}

void weft__shm_segment_free(weft__shm_segment_t *pool) {
  if (!pool) return;
  g_mutex_lock(&pool_lock);
  for (int k = 0; k < POOL_MAX; k++) {
    shm_seg_t *seg = pool->slots[k];
    if (!seg) continue;
    if (seg->state == SEG_BORROWED) {
      seg->pool = NULL; /* its tensor's release destroys it */
      pool->slots[k] = NULL;
    } else {
      slot_drop_locked(pool, k);
    }
  }
  g_mutex_unlock(&pool_lock);
  g_free(pool);
}

/* The release of a tensor borrowing a segment: back to its pool, or gone with it. */
static void seg_release(void *arg) {
  shm_seg_t *seg = arg;
  g_mutex_lock(&pool_lock);
  if (seg->pool) seg->state = SEG_FREE;
  else seg_destroy_locked(seg);
  g_mutex_unlock(&pool_lock);
}

/* Caller holds pool_lock. A free segment of at least pool->want bytes, made if need be (free
 * ones too small are replaced), or NULL when every slot is busy or the byte cap is reached. */
static shm_seg_t *pick_locked(weft__shm_segment_t *pool) {
  int empty = -1;
  for (int k = 0; k < POOL_MAX; k++) {
    shm_seg_t *seg = pool->slots[k];
    if (seg && seg->state == SEG_FREE && seg->capacity >= pool->want) return seg;
    if (seg && seg->state == SEG_FREE) slot_drop_locked(pool, k); /* too small */
    if (!pool->slots[k] && empty < 0) empty = k;
  }
  if (empty < 0 || pool->want < SHM_MIN_BYTES) return NULL;
  bool first = true;
  for (int k = 0; k < POOL_MAX; k++) first = first && pool->slots[k] == NULL;
  if (!first && extra_bytes + pool->want > SHM_POOL_BYTES) return NULL;
  shm_seg_t *seg = seg_create(pool->want);
  if (!seg) {
    pool->disabled = true;
    return NULL;
  }
  seg->pool = pool;
  pool->slots[empty] = seg;
  seg->extra = !first;
  if (seg->extra) extra_bytes += seg->capacity;
  return seg;
}

void weft__shm_fill_request(weft__shm_segment_t *pool, Weft__RecvTensorRequest *req) {
  if (!pool || pool->disabled) return;
  g_mutex_lock(&pool_lock);
  /* A request offered again without its answer (a retry) keeps the segment it offered. */
  shm_seg_t *seg = pool->offered ? pool->offered : pick_locked(pool);
  if (seg) {
    seg->state = SEG_OFFERED;
    pool->offered = seg;
  }
  g_mutex_unlock(&pool_lock);
  req->shm_pid = (int32_t)getpid();
  req->shm_fd = seg ? seg->fd : -1;
  req->shm_token = seg ? seg->token : (char *)"";
  req->shm_capacity = seg ? seg->capacity : 0;
}

/* Caller holds pool_lock. Whether another segment could be offered to the next step while seg
 * is borrowed: one free and big enough, or room to make one. */
static bool can_lend_locked(const weft__shm_segment_t *pool, const shm_seg_t *seg) {
  bool room = false;
  for (int k = 0; k < POOL_MAX; k++) {
    const shm_seg_t *other = pool->slots[k];
    if (other == seg) continue;
    if (!other || (other->state == SEG_FREE && other->capacity < pool->want))
      room = room || extra_bytes + pool->want <= SHM_POOL_BYTES;
    else if (other->state == SEG_FREE)
      return true;
  }
  return room;
}

weft_status_t *weft__shm_after_recv(weft__shm_segment_t *pool, bool call_failed,
                                    const Weft__RecvTensorResponse *resp, weft_tensor_t **out) {
  *out = NULL;
  if (!pool) return NULL;
  g_mutex_lock(&pool_lock);
  shm_seg_t *seg = pool->offered;
  pool->offered = NULL;
  if (call_failed || !resp) {
    /* A late sender may still write into what was offered: never offer it again. */
    if (seg) slot_drop_locked(pool, slot_of_locked(pool, seg));
    g_mutex_unlock(&pool_lock);
    return NULL;
  }
  if (!resp->in_shm) {
    if (seg) seg->state = SEG_FREE;
    /* Offered nothing big enough: have segments of the size this tensor needed next time. */
    if (resp->shm_wanted >= SHM_MIN_BYTES && resp->shm_wanted <= G_MAXSIZE / 2 &&
        resp->shm_wanted > (seg ? seg->capacity : 0))
      pool->want = resp->shm_wanted;
    g_mutex_unlock(&pool_lock);
    return NULL;
  }
  const Weft__TensorMeta *meta = resp->shm_tensor;
  if (!seg || !meta || meta->n_dims > WEFT_MAX_RANK) {
    if (seg) slot_drop_locked(pool, slot_of_locked(pool, seg));
    g_mutex_unlock(&pool_lock);
    return weft_status_new(WEFT_INTERNAL, "RecvTensor answered through shared memory without a "
                           "segment offered or a valid dtype and shape");
  }
  weft_dtype_t dtype = (weft_dtype_t)meta->dtype;
  size_t elem = dtype == WEFT_DT_STRING ? 0 : weft_dtype_size(dtype);
  int64_t dims[WEFT_MAX_RANK];
  /* The size the dtype and shape declare, checked for overflow: it must equal nbytes and fit
   * the segment before anything is read. */
  guint64 expected = elem;
  bool bad = elem == 0;
  for (size_t d = 0; d < meta->n_dims && !bad; d++) {
    dims[d] = meta->dims[d];
    if (dims[d] < 0 || (dims[d] > 0 && expected > G_MAXUINT64 / (guint64)dims[d])) bad = true;
    else expected *= (guint64)dims[d];
  }
  if (bad || expected != meta->nbytes || expected > seg->capacity) {
    size_t capacity = seg->capacity;
    slot_drop_locked(pool, slot_of_locked(pool, seg));
    g_mutex_unlock(&pool_lock);
    return weft_status_new(WEFT_INTERNAL, "RecvTensor's shared-memory answer declares %"
                           G_GUINT64_FORMAT " bytes of dtype %d, which does not match its shape "
                           "or fit the %zu-byte segment", (guint64)meta->nbytes, meta->dtype,
                           capacity);
  }
  bool lend = expected > 0 && can_lend_locked(pool, seg);
  seg->state = lend ? SEG_BORROWED : SEG_OFFERED; /* offered: nobody else may touch it yet */
  g_mutex_unlock(&pool_lock);
  int64_t n_elements = (int64_t)(expected / elem);
  if (lend) {
    weft__buffer_t *buffer = weft__buffer_new_borrowed(dtype, seg->map, (size_t)expected,
                                                       n_elements, seg_release, seg);
    *out = weft__tensor_wrap(dtype, (int)meta->n_dims, dims, buffer);
    weft__buffer_unref(buffer); /* the tensor holds the only reference */
    return NULL;
  }
  /* No other segment for the next step: copy out so this one can be offered again. */
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__tensor_alloc(NULL, dtype, (int)meta->n_dims, dims, &t);
  if (!st && expected > 0) memcpy(weft_tensor_data(t), seg->map, (size_t)expected);
  g_mutex_lock(&pool_lock);
  seg->state = SEG_FREE;
  g_mutex_unlock(&pool_lock);
  if (st) return st;
  *out = t;
  return NULL;
}

void weft__shm_offer_from_request(const Weft__RecvTensorRequest *req, weft__shm_offer_t *offer) {
  memset(offer, 0, sizeof *offer);
  offer->fd = -1;
  if (!req || req->shm_pid <= 0 || !weft__shm_enabled()) return;
  offer->pid = req->shm_pid;
  offer->fd = req->shm_fd;
  offer->capacity = req->shm_capacity;
  g_strlcpy(offer->token, req->shm_token ? req->shm_token : "", sizeof offer->token);
}

/* The segment behind an offer, opened for writing, or -1 when it is not the receiver's weft
 * memfd with that token (another host, pid namespace or user; a stale or forged offer). The
 * whole claimed capacity must lie inside the file, and the file must be sealed against
 * shrinking: the sender maps `capacity` bytes and reuses the mapping, and a write past the
 * file's end raises SIGBUS, which would kill the server for a forged offer. */
static int open_offer(const weft__shm_offer_t *offer, size_t nbytes) {
  if (offer->fd < 0 || strlen(offer->token) != 32) return -1;
  char path[64], link[128];
  g_snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)offer->pid, offer->fd);
  ssize_t len = readlink(path, link, sizeof link - 1);
  if (len <= 0) return -1;
  link[len] = '\0';
  char *want = g_strdup_printf("/memfd:weft-%s (deleted)", offer->token);
  bool same = strcmp(link, want) == 0;
  g_free(want);
  if (!same) return -1;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat sb;
  int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
      (guint64)sb.st_size < nbytes || (guint64)sb.st_size < offer->capacity || seals < 0 ||
      !(seals & F_SEAL_SHRINK)) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The sender keeps its mappings of the segments it wrote into, keyed by token, so the steps
 * after the first pay for neither opening nor mapping (mapping 64 MiB costs a third of copying
 * it). A segment its receiver dropped stays mapped until evicted: at most SENDER_MAPS_MAX
 * mappings, SENDER_MAPS_BYTES in all, least recently used out first. */
#define SENDER_MAPS_MAX 16
#define SENDER_MAPS_BYTES ((size_t)1 << 30)

typedef struct sender_map {
  char token[33];
  void *map;
  size_t size;
  int users;       /* copies in progress; unmapped when evicted and 0 */
  bool evicted;
  gint64 last_used;
} sender_map_t;

static GMutex maps_lock;
static GPtrArray *maps; /* sender_map_t*, not evicted */

static void sender_map_release(sender_map_t *m) {
  g_mutex_lock(&maps_lock);
  bool last = --m->users == 0 && m->evicted;
  g_mutex_unlock(&maps_lock);
  if (last) {
    munmap(m->map, m->size);
    g_free(m);
  }
}

/* Caller holds maps_lock. Evicts the least recently used mappings until `adding` more bytes
 * fit the limits. */
static void evict_locked(size_t adding) {
  for (;;) {
    size_t total = adding;
    guint oldest = 0;
    for (guint k = 0; k < maps->len; k++) {
      sender_map_t *m = maps->pdata[k];
      total += m->size;
      if (m->last_used < ((sender_map_t *)maps->pdata[oldest])->last_used) oldest = k;
    }
    if (maps->len == 0 || (maps->len < SENDER_MAPS_MAX && total <= SENDER_MAPS_BYTES)) return;
    sender_map_t *m = g_ptr_array_steal_index_fast(maps, oldest);
    m->evicted = true;
    if (m->users == 0) {
      munmap(m->map, m->size);
      g_free(m);
    }
  }
}

/* A mapping of the offered segment with room for nbytes (one more user), or NULL. */
static sender_map_t *sender_map_get(const weft__shm_offer_t *offer, size_t nbytes) {
  g_mutex_lock(&maps_lock);
  if (!maps) maps = g_ptr_array_new();
  for (guint k = 0; k < maps->len; k++) {
    sender_map_t *m = maps->pdata[k];
    if (strcmp(m->token, offer->token) == 0 && m->size >= nbytes) {
      m->users++;
      m->last_used = g_get_monotonic_time();
      g_mutex_unlock(&maps_lock);
      return m;
    }
  }
  g_mutex_unlock(&maps_lock);
  int fd = open_offer(offer, nbytes);
  if (fd < 0) return NULL;
  size_t size = (size_t)offer->capacity;
  void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return NULL;
  sender_map_t *m = g_new0(sender_map_t, 1);
  g_strlcpy(m->token, offer->token, sizeof m->token);
  m->map = map;
  m->size = size;
  m->users = 1;
  m->last_used = g_get_monotonic_time();
  g_mutex_lock(&maps_lock);
  evict_locked(size);
  g_ptr_array_add(maps, m);
  g_mutex_unlock(&maps_lock);
  return m;
}

/* Copies whose source and destination together overflow the last-level cache skip it: at the
 * least STREAM_FALLBACK_BYTES when the cache's size is unknown. */
#define STREAM_FALLBACK_BYTES ((size_t)16 << 20)

/* Half the last-level cache as sysfs reports it for CPU 0 (the hypervisor's CPUID, which the C
 * library reads, can claim ten times the real size), or STREAM_FALLBACK_BYTES. */
static size_t stream_min_from_sysfs(void) {
  size_t best = 0;
  for (int index = 0; index < 8; index++) {
    char *path = g_strdup_printf("/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    char *text = NULL;
    bool read = g_file_get_contents(path, &text, NULL, NULL);
    g_free(path);
    if (!read) continue;
    char *end = NULL;
    guint64 v = g_ascii_strtoull(text, &end, 10);
    if (end && (*end == 'K' || *end == 'k')) v <<= 10;
    else if (end && (*end == 'M' || *end == 'm')) v <<= 20;
    g_free(text);
    if (v > best && v < ((guint64)1 << 40)) best = (size_t)v;
  }
  return best >= ((size_t)2 << 20) ? best / 2 : STREAM_FALLBACK_BYTES;
}

size_t weft__shm_stream_min_bytes(void) {
  static gsize value;
  if (g_once_init_enter(&value)) {
    /* WEFT_SHM_STREAM: 0 (off, false) never streams, a number of bytes streams from that size
     * (the tests' way through the path with small tensors), unset (on, true) the default. */
    const char *v = g_getenv("WEFT_SHM_STREAM");
    char *end = NULL;
    guint64 bytes = v ? g_ascii_strtoull(v, &end, 10) : 0;
    bool number = v && *v && end && *end == '\0';
    bool off = v && ((number && bytes == 0) || g_ascii_strcasecmp(v, "off") == 0 ||
                     g_ascii_strcasecmp(v, "false") == 0);
    bool on = v && (g_ascii_strcasecmp(v, "on") == 0 || g_ascii_strcasecmp(v, "true") == 0);
    if (v && !number && !off && !on)
      weft__log(WEFT_LOG_WARNING, "shm_transfer", "WEFT_SHM_STREAM=%s is not 0, off, false, on, "
                "true or a number of bytes; streaming from half the last-level cache", v);
    gsize min = off ? G_MAXSIZE : number ? (gsize)MIN(bytes, (guint64)G_MAXSIZE)
                                         : stream_min_from_sysfs();
#ifndef SHM_HAVE_STREAM
    min = G_MAXSIZE;
#endif
    g_once_init_leave(&value, min);
  }
  return value;
}

/* An ordinary memcpy writes each destination line through the cache: for a copy bigger than the
 * cache every line is first read from memory (to own it), then written back when evicted, so
 * the copy moves three times its size. Non-temporal stores write whole lines straight to
 * memory: twice its size. The receiver maps the segment in another process and reads it later,
 * if at all, so nothing is lost by leaving the lines out of this core's cache. */
void weft__shm_copy(void *dst, const void *src, size_t n, bool stream) {
#ifdef SHM_HAVE_STREAM
  if (stream && n >= 128) {
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63); /* up to the destination's next line */
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; d += 64, s += 64, n -= 64) {
      __m128i a = _mm_loadu_si128((const __m128i *)s);
      __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
      __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
      __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
      _mm_stream_si128((__m128i *)d, a);
      _mm_stream_si128((__m128i *)(d + 16), b);
      _mm_stream_si128((__m128i *)(d + 32), c);
      _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy(d, s, n);
    /* Streamed stores are weakly ordered: all of them land before the answer that says so. */
    _mm_sfence();
    return;
  }
#endif
  (void)stream;
  memcpy(dst, src, n);
}

bool weft__shm_export(const weft__shm_offer_t *offer, const weft_tensor_t *t,
                      Weft__RecvTensorResponse *resp, Weft__TensorMeta *meta) {
  if (!offer || offer->pid <= 0 || !t || t->dtype == WEFT_DT_STRING || !weft__tensor_is_host(t))
    return false;
  size_t nbytes = weft_tensor_nbytes(t);
  if (nbytes < SHM_MIN_BYTES) return false;
  if (offer->capacity < nbytes) {
    resp->shm_wanted = nbytes;
    return false;
  }
  sender_map_t *m = sender_map_get(offer, nbytes);
  if (!m) return false;
  weft__shm_copy(m->map, weft_tensor_data(t), nbytes, nbytes >= weft__shm_stream_min_bytes());
  sender_map_release(m);
  weft__tensor_meta__init(meta);
  meta->dtype = t->dtype;
  meta->n_dims = (size_t)t->rank;
  meta->dims = g_new0(int64_t, t->rank > 0 ? t->rank : 1);
  for (int d = 0; d < t->rank; d++) meta->dims[d] = t->dims[d];
  meta->nbytes = nbytes;
  resp->in_shm = true;
  resp->shm_tensor = meta;
  return true;
}

void weft__shm_meta_clear(Weft__TensorMeta *meta) {
  g_free(meta->dims);
  meta->dims = NULL;
  meta->n_dims = 0;
}
