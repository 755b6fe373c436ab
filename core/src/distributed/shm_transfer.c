/* Tensor transfers between two tasks of one host through shared memory. Each _Recv whose peer
 * has a loopback address owns a segment: an anonymous memfd named "weft-<128 random bits>",
 * mapped once and reused by every step. Its RecvTensor request offers the segment (process id,
 * descriptor, token, capacity); a sender on the same host opens it through /proc/PID/fd/FD,
 * checks that it is that memfd (the token in its name) and big enough, writes the tensor's
 * bytes at its start and answers with the dtype and shape only. The receiver checks those
 * against the capacity and copies the bytes into a tensor of its own: two memcpys instead of
 * gRPC's framing, HTTP/2 flow control and copies. Segments have no name in any file system, so
 * nothing can leak: the memory goes when the last descriptor closes.
 *
 * Anything that fails on the sending side (another host or pid namespace, another user, a small
 * segment) falls back to the bytes in the response; a too-small segment is grown for the next
 * step (RecvTensorResponse.shm_wanted). A receive that fails drops the segment, since a late
 * sender might still write into it. WEFT_SHM_TRANSFER=0 turns the path off on either side
 * (docs/distributed.md). */
#include "distributed_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* Below this, gRPC's copy costs about what opening and mapping the segment does. */
#define SHM_MIN_BYTES (256 * 1024)

struct weft__shm_segment {
  int fd;          /* -1: none yet (or dropped) */
  void *map;
  size_t capacity;
  char token[33];  /* 32 hex digits */
  bool disabled;   /* creating one failed: stop offering */
};

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
  weft__shm_segment_t *seg = g_new0(weft__shm_segment_t, 1);
  seg->fd = -1;
  return seg;
}

static void segment_drop(weft__shm_segment_t *seg) {
  if (seg->map) munmap(seg->map, seg->capacity);
  if (seg->fd >= 0) close(seg->fd);
  seg->map = NULL;
  seg->fd = -1;
  seg->capacity = 0;
}

void weft__shm_segment_free(weft__shm_segment_t *seg) {
  if (!seg) return;
  segment_drop(seg);
  g_free(seg);
}

/* A fresh segment of `bytes` (the old one is dropped: a sender may still hold it). */
static void segment_grow(weft__shm_segment_t *seg, guint64 bytes) {
  segment_drop(seg);
  if (bytes > G_MAXSIZE / 2 || !random_token(seg->token)) {
    seg->disabled = true;
    return;
  }
  char *name = g_strdup_printf("weft-%s", seg->token);
  int fd = memfd_create(name, MFD_CLOEXEC);
  g_free(name);
  void *map = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, (off_t)bytes) == 0)
    map = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    if (fd >= 0) close(fd);
    seg->disabled = true;
    return;
  }
  seg->fd = fd;
  seg->map = map;
  seg->capacity = (size_t)bytes;
}

void weft__shm_fill_request(weft__shm_segment_t *seg, Weft__RecvTensorRequest *req) {
  if (!seg || seg->disabled) return;
  req->shm_pid = (int32_t)getpid();
  req->shm_fd = seg->fd;
  req->shm_token = seg->fd >= 0 ? seg->token : (char *)"";
  req->shm_capacity = seg->fd >= 0 ? seg->capacity : 0;
}

weft_status_t *weft__shm_after_recv(weft__shm_segment_t *seg, bool call_failed,
                                    const Weft__RecvTensorResponse *resp, weft_tensor_t **out) {
  *out = NULL;
  if (!seg) return NULL;
  if (call_failed) {
    segment_drop(seg);
    return NULL;
  }
  if (!resp) return NULL;
  if (!resp->in_shm) {
    /* Offered nothing big enough: have a segment of the size this tensor needed next time. */
    if (resp->shm_wanted >= SHM_MIN_BYTES && resp->shm_wanted > seg->capacity && !seg->disabled)
      segment_grow(seg, resp->shm_wanted);
    return NULL;
  }
  const Weft__TensorMeta *meta = resp->shm_tensor;
  if (seg->fd < 0 || !meta || meta->n_dims > WEFT_MAX_RANK) {
    segment_drop(seg);
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
    segment_drop(seg);
    return weft_status_new(WEFT_INTERNAL, "RecvTensor's shared-memory answer declares %"
                           G_GUINT64_FORMAT " bytes of dtype %d, which does not match its shape "
                           "or fit the %zu-byte segment", (guint64)meta->nbytes, meta->dtype,
                           seg->capacity);
  }
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__tensor_alloc(NULL, dtype, (int)meta->n_dims, dims, &t);
  if (st) return st;
  if (expected > 0) memcpy(weft_tensor_data(t), seg->map, (size_t)expected);
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
 * memfd with that token (another host, pid namespace or user; a stale or forged offer). */
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
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
      (guint64)sb.st_size < nbytes) {
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
  memcpy(m->map, weft_tensor_data(t), nbytes);
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
