/* Tensor bundles, TensorFlow's checkpoint format (written from its public description): the
 * reader (PREFIX.index parsed whole at open, tensors read from the data shards on demand with
 * their crc32c checked) and the writer (tensors streamed to a temporary data file, the index
 * built at finish, both fsynced and renamed into place so a checkpoint appears whole or not at
 * all). Data files are named per shard (data-0000N-of-0000M) so that a writer per ps task can
 * share one index; the writer here writes a single shard. */
#include "checkpoint_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/protobuf_internal.h"
#include "tensor_bundle.pb-c.h"

/* TensorFlow's tensor-bundle version; files it writes say producer 1. */
#define BUNDLE_VERSION 1

char *weft__bundle_data_filename(const char *prefix, int shard, int num_shards) {
  return g_strdup_printf("%s.data-%05d-of-%05d", prefix, shard, num_shards);
}

char *weft__bundle_index_filename(const char *prefix) {
  return g_strdup_printf("%s.index", prefix);
}

static weft_code_t code_from_errno(int err) {
  switch (err) {
  case ENOENT: return WEFT_NOT_FOUND;
  case EACCES:
  case EPERM:
  case EROFS: return WEFT_PERMISSION_DENIED;
  case ENOSPC:
  case EDQUOT: return WEFT_RESOURCE_EXHAUSTED;
  default: return WEFT_INTERNAL;
  }
}

static weft_status_t *errno_status(int err, const char *what, const char *path) {
  return weft_status_new(code_from_errno(err), "Checkpoint: cannot %s '%s': %s", what, path,
                         g_strerror(err));
}

/* An index value (the header when key is NULL, else the entry of tensor `key`) through the
 * nesting-checked unpack every untrusted protobuf takes. NULL with *st set for nesting too deep;
 * NULL with *st NULL when it does not parse (the caller says so). */
static ProtobufCMessage *unpack_index_value(const ProtobufCMessageDescriptor *desc,
                                            const guint8 *value, size_t value_len,
                                            const char *index_path, const char *key,
                                            weft_status_t **st) {
  char *what = key ? g_strdup_printf("Checkpoint index '%s': the entry of tensor '%s'",
                                     index_path, key)
                   : g_strdup_printf("Checkpoint index '%s': the header entry", index_path);
  ProtobufCMessage *m = weft__pb_unpack(desc, value, value_len, what, st);
  g_free(what);
  return m;
}

/* Bytes of one element in a checkpoint: 0 for strings (variable length) and unknown dtypes. */
static size_t element_size(weft_dtype_t dtype) {
  return dtype == WEFT_DT_STRING ? 0 : weft_dtype_size(dtype);
}

/* ---------------------------------------------------------------------------------------------
 * Reading */

typedef struct entry {
  char *key;
  weft_dtype_t dtype;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int shard;
  int64_t offset;
  int64_t size;
  uint32_t crc; /* unmasked */
  int n_slices;
} entry_t;

struct weft_checkpoint_reader {
  char *prefix;
  char *index_path;
  int num_shards;
  GPtrArray *entries; /* entry_t*, key order */
  GHashTable *by_key; /* borrowed key -> entry_t* */
  GMutex lock;        /* guards fds */
  int *fds;           /* per shard, -1 until opened */
  bool seen_header;
};

static void entry_free(entry_t *e) {
  g_free(e->key);
  g_free(e);
}

static weft_status_t *on_index_entry(void *user, const guint8 *key, size_t key_len,
                                     const guint8 *value, size_t value_len) {
  weft_checkpoint_reader_t *r = user;
  if (key_len == 0) {
    weft_status_t *st = NULL;
    Tensorflow__BundleHeaderProto *h = (Tensorflow__BundleHeaderProto *)unpack_index_value(
        &tensorflow__bundle_header_proto__descriptor, value, value_len, r->index_path, NULL, &st);
    if (st) return st;
    if (!h) {
      return weft_status_new(WEFT_DATA_LOSS, "Checkpoint index '%s': the header entry does not parse",
                             r->index_path);
    }
    if (h->endianness != TENSORFLOW__BUNDLE_HEADER_PROTO__ENDIANNESS__LITTLE) {
      st = weft_status_new(WEFT_UNIMPLEMENTED,
                           "Checkpoint '%s' was written big-endian; only little-endian bundles are "
                           "supported", r->index_path);
    } else if (h->num_shards < 1 || h->num_shards > 100000) {
      st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint index '%s': bad number of shards %d",
                           r->index_path, h->num_shards);
    } else if (h->version && h->version->min_consumer > BUNDLE_VERSION) {
      st = weft_status_new(WEFT_UNIMPLEMENTED,
                           "Checkpoint '%s' needs a reader of bundle version %d or newer (this one "
                           "reads version %d)", r->index_path, h->version->min_consumer, BUNDLE_VERSION);
    } else {
      r->num_shards = h->num_shards;
      r->seen_header = true;
    }
    tensorflow__bundle_header_proto__free_unpacked(h, NULL);
    return st;
  }
  char *name = g_strndup((const char *)key, key_len);
  weft_status_t *deep = NULL;
  Tensorflow__BundleEntryProto *p = (Tensorflow__BundleEntryProto *)unpack_index_value(
      &tensorflow__bundle_entry_proto__descriptor, value, value_len, r->index_path, name, &deep);
  if (!p) {
    weft_status_t *st =
        deep ? deep
             : weft_status_new(WEFT_DATA_LOSS,
                               "Checkpoint index '%s': the entry of tensor '%s' does not parse",
                               r->index_path, name);
    g_free(name);
    return st;
  }
  entry_t *e = g_new0(entry_t, 1);
  e->key = name;
  e->dtype = (weft_dtype_t)p->dtype;
  e->shard = p->shard_id;
  e->offset = p->offset;
  e->size = p->size;
  e->crc = weft__crc32c_unmask(p->crc32c);
  e->n_slices = (int)p->n_slices;
  weft_status_t *st = NULL;
  if (p->shape && p->shape->unknown_rank) {
    st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' has an unknown rank",
                         r->index_path, name);
  } else if (p->shape && p->shape->n_dim > WEFT_MAX_RANK) {
    st = weft_status_new(WEFT_UNIMPLEMENTED, "Checkpoint '%s': tensor '%s' has rank %zu (at most %d)",
                         r->index_path, name, p->shape->n_dim, WEFT_MAX_RANK);
  } else {
    e->rank = p->shape ? (int)p->shape->n_dim : 0;
    for (int d = 0; d < e->rank; d++) {
      e->dims[d] = p->shape->dim[d]->size;
      if (e->dims[d] < 0) {
        st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' has dimension %d of "
                             "size %" G_GINT64_FORMAT, r->index_path, name, d, e->dims[d]);
      }
    }
  }
  if (!st && (e->offset < 0 || e->size < 0 || e->shard < 0)) {
    st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' has a negative offset, size "
                         "or shard", r->index_path, name);
  }
  if (!st && g_hash_table_contains(r->by_key, name)) {
    st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' appears twice",
                         r->index_path, name);
  }
  tensorflow__bundle_entry_proto__free_unpacked(p, NULL);
  if (st) {
    entry_free(e);
    return st;
  }
  g_ptr_array_add(r->entries, e);
  g_hash_table_insert(r->by_key, e->key, e);
  return NULL;
}

weft_status_t *weft_checkpoint_reader_open(const char *prefix, weft_checkpoint_reader_t **out) {
  *out = NULL;
  if (!prefix || !*prefix)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_checkpoint_reader_open: empty prefix");
  weft_checkpoint_reader_t *r = g_new0(weft_checkpoint_reader_t, 1);
  r->prefix = g_strdup(prefix);
  r->index_path = weft__bundle_index_filename(prefix);
  r->entries = g_ptr_array_new_with_free_func((GDestroyNotify)entry_free);
  r->by_key = g_hash_table_new(g_str_hash, g_str_equal);
  g_mutex_init(&r->lock);
  gchar *data = NULL;
  gsize len = 0;
  GError *err = NULL;
  weft_status_t *st = NULL;
  const char *kind = NULL;
  if (weft__file_is_special(r->index_path, &kind)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "Checkpoint index '%s' is %s, not a file",
                         r->index_path, kind);
  } else if (!g_file_get_contents(r->index_path, &data, &len, &err)) {
    st = weft_status_new(err->domain == G_FILE_ERROR && err->code == G_FILE_ERROR_NOENT
                             ? WEFT_NOT_FOUND : WEFT_INTERNAL,
                         "Checkpoint '%s' not found or unreadable: %s", prefix, err->message);
    g_error_free(err);
  } else {
    st = weft__table_walk((const guint8 *)data, len, r->index_path, on_index_entry, r);
    if (!st && !r->seen_header) {
      st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint index '%s' has no bundle header entry",
                           r->index_path);
    }
  }
  g_free(data);
  for (guint i = 0; !st && i < r->entries->len; i++) {
    entry_t *e = g_ptr_array_index(r->entries, i);
    if (e->shard >= r->num_shards) {
      st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' is in shard %d of %d",
                           r->index_path, e->key, e->shard, r->num_shards);
    }
  }
  if (st) {
    weft_checkpoint_reader_free(r);
    return st;
  }
  r->fds = g_new(int, r->num_shards);
  for (int i = 0; i < r->num_shards; i++) r->fds[i] = -1;
  *out = r;
  return NULL;
}

void weft_checkpoint_reader_free(weft_checkpoint_reader_t *r) {
  if (!r) return;
  if (r->fds) {
    for (int i = 0; i < r->num_shards; i++)
      if (r->fds[i] >= 0) close(r->fds[i]);
    g_free(r->fds);
  }
  g_hash_table_destroy(r->by_key);
  g_ptr_array_unref(r->entries);
  g_mutex_clear(&r->lock);
  g_free(r->index_path);
  g_free(r->prefix);
  g_free(r);
}

int weft_checkpoint_reader_num_tensors(const weft_checkpoint_reader_t *r) {
  return r ? (int)r->entries->len : 0;
}

const char *weft_checkpoint_reader_key(const weft_checkpoint_reader_t *r, int index) {
  if (!r || index < 0 || (guint)index >= r->entries->len) return NULL;
  return ((entry_t *)g_ptr_array_index(r->entries, index))->key;
}

bool weft_checkpoint_reader_has(const weft_checkpoint_reader_t *r, const char *key) {
  return r && key && g_hash_table_contains(r->by_key, key);
}

static weft_status_t *lookup(const weft_checkpoint_reader_t *r, const char *key, entry_t **out) {
  *out = key ? g_hash_table_lookup(r->by_key, key) : NULL;
  if (!*out) {
    return weft_status_new(WEFT_NOT_FOUND, "Key '%s' not found in checkpoint '%s'",
                           key ? key : "(null)", r->prefix);
  }
  return NULL;
}

weft_status_t *weft_checkpoint_reader_info(const weft_checkpoint_reader_t *r, const char *key,
                                           weft_dtype_t *dtype, int *rank,
                                           int64_t dims[WEFT_MAX_RANK]) {
  entry_t *e;
  weft_status_t *st = lookup(r, key, &e);
  if (st) return st;
  if (dtype) *dtype = e->dtype;
  if (rank) *rank = e->rank;
  if (dims) memcpy(dims, e->dims, sizeof(int64_t) * (size_t)e->rank);
  return NULL;
}

static weft_status_t *shard_fd(weft_checkpoint_reader_t *r, int shard, int *fd, char **path) {
  *fd = -1;
  *path = weft__bundle_data_filename(r->prefix, shard, r->num_shards);
  const char *kind = NULL;
  if (weft__file_is_special(*path, &kind)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Checkpoint data file '%s' is %s, not a file",
                           *path, kind);
  }
  g_mutex_lock(&r->lock);
  if (r->fds[shard] < 0) r->fds[shard] = open(*path, O_RDONLY | O_CLOEXEC);
  *fd = r->fds[shard];
  int err = errno;
  g_mutex_unlock(&r->lock);
  if (*fd < 0) return errno_status(err, "open the data file", *path);
  return NULL;
}

/* Extends a string tensor's crc with one element length, the way TensorFlow's bundle writer
 * does: as a little-endian uint32 (uint64 past 4 GiB), not as the varint on disk. */
static uint32_t extend_with_length(uint32_t crc, uint64_t len) {
  guint8 b[8];
  for (int k = 0; k < 8; k++) b[k] = (guint8)(len >> (8 * k));
  return weft__crc32c_extend(crc, b, len <= UINT32_MAX ? 4 : 8);
}

static weft_status_t *string_corrupted(const entry_t *e, const char *path, const char *what) {
  return weft_status_new(WEFT_DATA_LOSS,
                         "Checkpoint data file '%s' is corrupted: %s of string tensor '%s' (offset %"
                         G_GINT64_FORMAT ", size %" G_GINT64_FORMAT ")",
                         path, what, e->key, e->offset, e->size);
}

/* A string tensor on disk: every element's length as a varint, a masked crc32c of the lengths,
 * then the elements' bytes. Its entry's crc32c covers the lengths (as fixed-width integers), the
 * lengths' checksum and the bytes. */
static weft_status_t *decode_strings(const guint8 *buf, size_t size, const entry_t *e,
                                     const char *path, weft_tensor_t *t) {
  int64_t n = t->num_elements;
  const guint8 *p = buf, *end = buf + size;
  uint64_t *lens = g_new(uint64_t, n > 0 ? n : 1);
  uint64_t total = 0;
  uint32_t crc = 0;
  weft_status_t *st = NULL;
  for (int64_t i = 0; i < n; i++) {
    if (!weft__get_varint64(&p, end, &lens[i]) || lens[i] > size) {
      st = string_corrupted(e, path, "an element length");
      break;
    }
    total += lens[i];
    crc = extend_with_length(crc, lens[i]);
  }
  if (!st && (size_t)(end - p) < 4) st = string_corrupted(e, path, "the end of the lengths");
  if (!st) {
    uint32_t stored = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (stored != weft__crc32c_mask(crc)) st = string_corrupted(e, path, "the lengths' checksum");
    crc = weft__crc32c_extend(crc, p, 4);
    p += 4;
  }
  if (!st && total != (uint64_t)(end - p)) st = string_corrupted(e, path, "the total length");
  if (!st) {
    crc = weft__crc32c_extend(crc, p, (size_t)(end - p));
    if (crc != e->crc) {
      st = weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint data file '%s' is corrupted: checksum of tensor '%s' (offset %"
                           G_GINT64_FORMAT ", size %" G_GINT64_FORMAT ") does not match: stored 0x%08x, "
                           "computed 0x%08x", path, e->key, e->offset, e->size, e->crc, crc);
    }
  }
  for (int64_t i = 0; i < n && !st; i++) {
    st = weft_tensor_set_string(t, i, (const char *)p, lens[i]);
    p += lens[i];
  }
  g_free(lens);
  return st;
}

weft_status_t *weft_checkpoint_reader_read(weft_checkpoint_reader_t *r, const char *key,
                                           weft_tensor_t **out) {
  *out = NULL;
  if (!r) return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_checkpoint_reader_read: no reader");
  entry_t *e;
  weft_status_t *st = lookup(r, key, &e);
  if (st) return st;
  if (e->n_slices > 0) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "Checkpoint '%s': tensor '%s' is saved as %d slices "
                           "of a partitioned variable, which this reader does not assemble",
                           r->prefix, key, e->n_slices);
  }
  if (e->dtype != WEFT_DT_STRING && element_size(e->dtype) == 0) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "Checkpoint '%s': tensor '%s' has dtype %d, which "
                           "Weft does not support", r->prefix, key, (int)e->dtype);
  }
  /* Every element takes at least a byte on disk (a string at least its length's varint), so a
   * shape claiming more elements than the entry has bytes is corrupt; checking it first keeps
   * a hostile shape from sizing an allocation. Dims are >= 0 (checked at open). */
  uint64_t count = 1;
  bool overflow = false;
  for (int d = 0; d < e->rank && !overflow; d++) {
    uint64_t dim = (uint64_t)e->dims[d];
    if (dim != 0 && count > UINT64_MAX / dim) overflow = true;
    else count *= dim;
  }
  if (overflow || (count > 0 && count > (uint64_t)e->size)) {
    return weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' claims a shape of more "
                           "elements than its %" G_GINT64_FORMAT " bytes can hold",
                           r->index_path, key, e->size);
  }
  int64_t n = (int64_t)count;
  char *path = NULL;
  int fd;
  st = shard_fd(r, e->shard, &fd, &path);
  if (st) {
    g_free(path);
    return st;
  }
  if (e->dtype != WEFT_DT_STRING && (uint64_t)e->size != (uint64_t)n * element_size(e->dtype)) {
    st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint '%s': tensor '%s' of dtype %s and %"
                         G_GINT64_FORMAT " elements has %" G_GINT64_FORMAT " bytes in '%s'",
                         r->index_path, key, weft_dtype_name(e->dtype), n, e->size, path);
    g_free(path);
    return st;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    st = errno_status(errno, "stat", path);
    g_free(path);
    return st;
  }
  if ((uint64_t)e->offset + (uint64_t)e->size > (uint64_t)sb.st_size) {
    st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint data file '%s' is truncated: tensor '%s' "
                         "needs bytes %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT " but the file has %"
                         G_GINT64_FORMAT, path, key, e->offset, e->offset + e->size,
                         (int64_t)sb.st_size);
    g_free(path);
    return st;
  }
  guint8 *buf = g_malloc(e->size > 0 ? (size_t)e->size : 1);
  size_t done = 0;
  while (done < (size_t)e->size) {
    ssize_t got = pread(fd, buf + done, (size_t)e->size - done, (off_t)(e->offset + (int64_t)done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      st = got < 0 ? errno_status(errno, "read", path)
                   : weft_status_new(WEFT_DATA_LOSS, "Checkpoint data file '%s' ends inside tensor '%s'",
                                     path, key);
      break;
    }
    done += (size_t)got;
  }
  if (!st && e->dtype != WEFT_DT_STRING) {
    uint32_t actual = weft__crc32c(buf, (size_t)e->size);
    if (actual != e->crc) {
      st = weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint data file '%s' is corrupted: checksum of tensor '%s' (offset %"
                           G_GINT64_FORMAT ", size %" G_GINT64_FORMAT ") does not match: stored 0x%08x, "
                           "computed 0x%08x", path, key, e->offset, e->size, e->crc, actual);
    }
  }
  weft_tensor_t *t = NULL;
  if (!st && e->dtype == WEFT_DT_STRING) {
    t = weft_tensor_new(WEFT_DT_STRING, e->rank, e->dims);
    if (!t) st = weft_status_new(WEFT_RESOURCE_EXHAUSTED, "Cannot allocate tensor '%s'", key);
    else st = decode_strings(buf, (size_t)e->size, e, path, t);
  } else if (!st) {
    t = weft_tensor_new_from_data(e->dtype, e->rank, e->dims, buf, (size_t)e->size, &st);
  }
  g_free(buf);
  g_free(path);
  if (st) {
    weft_tensor_unref(t);
    return st;
  }
  *out = t;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Writing */

struct weft_checkpoint_writer {
  char *prefix;
  char *data_path, *data_tmp;
  char *index_path, *index_tmp;
  int fd;
  int64_t offset;
  int shard, num_shards;
  bool snappy;
  size_t block_size;
  GHashTable *entries; /* key -> GByteArray (packed BundleEntryProto) */
  weft_status_t *error; /* sticky: the first failure; later calls repeat it */
  bool finished;
};

static char *temp_name(const char *final) {
  return g_strdup_printf("%s.tempstate%d-%08x", final, (int)getpid(), g_random_int());
}

weft_status_t *weft_checkpoint_writer_new(const char *prefix, weft_checkpoint_writer_t **out) {
  *out = NULL;
  if (!prefix || !*prefix)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_checkpoint_writer_new: empty prefix");
  char *dir = g_path_get_dirname(prefix);
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    weft_status_t *st = errno_status(errno, "create the folder", dir);
    g_free(dir);
    return st;
  }
  g_free(dir);
  weft_checkpoint_writer_t *w = g_new0(weft_checkpoint_writer_t, 1);
  w->prefix = g_strdup(prefix);
  w->shard = 0;
  w->num_shards = 1;
  w->data_path = weft__bundle_data_filename(prefix, w->shard, w->num_shards);
  w->index_path = weft__bundle_index_filename(prefix);
  w->data_tmp = temp_name(w->data_path);
  w->index_tmp = temp_name(w->index_path);
  w->entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                     (GDestroyNotify)g_byte_array_unref);
  w->block_size = 4096;
  w->fd = open(w->data_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd < 0) {
    weft_status_t *st = errno_status(errno, "create", w->data_tmp);
    weft_checkpoint_writer_free(w);
    return st;
  }
  *out = w;
  return NULL;
}

void weft_checkpoint_writer_set_snappy(weft_checkpoint_writer_t *w, bool on) {
  if (w) w->snappy = on;
}

void weft_checkpoint_writer_set_block_size(weft_checkpoint_writer_t *w, size_t bytes) {
  if (w) w->block_size = bytes ? bytes : 4096;
}

static weft_status_t *write_all(int fd, const void *data, size_t len, const char *path) {
  const guint8 *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status(errno, "write", path);
    p += n;
    len -= (size_t)n;
  }
  return NULL;
}

static weft_status_t *copy_error(const weft_status_t *st) {
  return weft_status_new(weft_status_code(st), "%s", weft_status_message(st));
}

weft_status_t *weft_checkpoint_writer_add(weft_checkpoint_writer_t *w, const char *key,
                                          const weft_tensor_t *tensor) {
  if (!w || !tensor) return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_checkpoint_writer_add: NULL argument");
  if (w->error) return copy_error(w->error);
  if (w->finished) {
    return weft_status_new(WEFT_FAILED_PRECONDITION, "Checkpoint '%s' is already finished; cannot "
                           "add '%s'", w->prefix, key ? key : "");
  }
  if (!key || !*key) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Checkpoint '%s': a tensor needs a non-empty "
                           "key (the empty key holds the bundle header)", w->prefix);
  }
  if (g_hash_table_contains(w->entries, key)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Checkpoint '%s': tensor '%s' added twice",
                           w->prefix, key);
  }
  weft_dtype_t dtype = tensor->dtype;
  if (dtype != WEFT_DT_STRING && element_size(dtype) == 0) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "Checkpoint '%s': tensor '%s' has dtype %s, which "
                           "cannot be saved", w->prefix, key, weft_dtype_name(dtype));
  }
  weft_tensor_t *host = NULL;
  weft_status_t *st = weft__tensor_copy_to_host(tensor, &host);
  if (st) return weft_status_prefix(st, "Checkpoint '%s', tensor '%s': ", w->prefix, key);

  GByteArray *bytes = g_byte_array_new();
  uint32_t crc;
  if (dtype == WEFT_DT_STRING) {
    const weft_string_t *s = host->buffer->data;
    crc = 0;
    for (int64_t i = 0; i < host->num_elements; i++) {
      weft__put_varint64(bytes, s[i].len);
      crc = extend_with_length(crc, s[i].len);
    }
    uint32_t lc = weft__crc32c_mask(crc);
    guint8 b[4] = {(guint8)lc, (guint8)(lc >> 8), (guint8)(lc >> 16), (guint8)(lc >> 24)};
    g_byte_array_append(bytes, b, 4);
    crc = weft__crc32c_extend(crc, b, 4);
    for (int64_t i = 0; i < host->num_elements; i++) {
      g_byte_array_append(bytes, (const guint8 *)s[i].data, (guint)s[i].len);
      crc = weft__crc32c_extend(crc, s[i].data, s[i].len);
    }
  } else {
    crc = weft__crc32c(host->buffer->data, host->buffer->nbytes);
  }
  /* Numbers go straight from the tensor's buffer; strings from their serialised form. */
  const void *out_data = dtype == WEFT_DT_STRING ? (const void *)bytes->data : host->buffer->data;
  size_t out_len = dtype == WEFT_DT_STRING ? bytes->len : host->buffer->nbytes;
  st = write_all(w->fd, out_data, out_len, w->data_tmp);
  if (st) {
    w->error = copy_error(st);
  } else {
    Tensorflow__BundleEntryProto e = TENSORFLOW__BUNDLE_ENTRY_PROTO__INIT;
    Tensorflow__TensorShapeProto shape = TENSORFLOW__TENSOR_SHAPE_PROTO__INIT;
    Tensorflow__TensorShapeProto__Dim dims[WEFT_MAX_RANK];
    Tensorflow__TensorShapeProto__Dim *dimp[WEFT_MAX_RANK];
    for (int d = 0; d < host->rank; d++) {
      tensorflow__tensor_shape_proto__dim__init(&dims[d]);
      dims[d].size = host->dims[d];
      dimp[d] = &dims[d];
    }
    shape.n_dim = (size_t)host->rank;
    shape.dim = dimp;
    e.dtype = (Tensorflow__DataType)dtype;
    e.shape = &shape;
    e.shard_id = w->shard;
    e.offset = w->offset;
    e.size = (int64_t)out_len;
    e.crc32c = weft__crc32c_mask(crc);
    GByteArray *packed = g_byte_array_sized_new((guint)tensorflow__bundle_entry_proto__get_packed_size(&e));
    g_byte_array_set_size(packed, (guint)tensorflow__bundle_entry_proto__get_packed_size(&e));
    tensorflow__bundle_entry_proto__pack(&e, packed->data);
    g_hash_table_insert(w->entries, g_strdup(key), packed);
    w->offset += (int64_t)out_len;
  }
  g_byte_array_unref(bytes);
  weft_tensor_unref(host);
  return st;
}

static gint compare_keys(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static weft_status_t *sync_dir(const char *path) {
  char *dir = g_path_get_dirname(path);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  /* Some file systems refuse fsync on folders; the renames are done either way. */
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  g_free(dir);
  return NULL;
}

weft_status_t *weft_checkpoint_writer_finish(weft_checkpoint_writer_t *w) {
  if (!w) return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_checkpoint_writer_finish: no writer");
  if (w->error) return copy_error(w->error);
  if (w->finished) return NULL;

  /* Index entries: the header under "", then every tensor in bytewise key order. */
  guint n = g_hash_table_size(w->entries);
  const char **keys = (const char **)g_hash_table_get_keys_as_array(w->entries, NULL);
  qsort(keys, n, sizeof(char *), compare_keys);
  GByteArray **k = g_new(GByteArray *, n + 1);
  GByteArray **v = g_new(GByteArray *, n + 1);
  Tensorflow__VersionDef version = TENSORFLOW__VERSION_DEF__INIT;
  version.producer = BUNDLE_VERSION;
  Tensorflow__BundleHeaderProto header = TENSORFLOW__BUNDLE_HEADER_PROTO__INIT;
  header.num_shards = w->num_shards;
  header.endianness = TENSORFLOW__BUNDLE_HEADER_PROTO__ENDIANNESS__LITTLE;
  header.version = &version;
  k[0] = g_byte_array_new();
  v[0] = g_byte_array_new();
  g_byte_array_set_size(v[0], (guint)tensorflow__bundle_header_proto__get_packed_size(&header));
  tensorflow__bundle_header_proto__pack(&header, v[0]->data);
  for (guint i = 0; i < n; i++) {
    k[i + 1] = g_byte_array_new();
    g_byte_array_append(k[i + 1], (const guint8 *)keys[i], (guint)strlen(keys[i]));
    v[i + 1] = g_byte_array_ref(g_hash_table_lookup(w->entries, keys[i]));
  }
  GByteArray *table = weft__table_build((const GByteArray *const *)k, (const GByteArray *const *)v,
                                        n + 1, w->block_size, w->snappy);
  for (guint i = 0; i <= n; i++) {
    g_byte_array_unref(k[i]);
    g_byte_array_unref(v[i]);
  }
  g_free(k);
  g_free(v);
  g_free(keys);

  weft_status_t *st = NULL;
  if (fsync(w->fd) != 0) st = errno_status(errno, "fsync", w->data_tmp);
  if (close(w->fd) != 0 && !st) st = errno_status(errno, "close", w->data_tmp);
  w->fd = -1;
  if (!st) {
    int fd = open(w->index_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      st = errno_status(errno, "create", w->index_tmp);
    } else {
      st = write_all(fd, table->data, table->len, w->index_tmp);
      if (!st && fsync(fd) != 0) st = errno_status(errno, "fsync", w->index_tmp);
      if (close(fd) != 0 && !st) st = errno_status(errno, "close", w->index_tmp);
    }
  }
  g_byte_array_unref(table);
  /* Data first, index last: the index is what makes a checkpoint exist, and it only appears
   * once the data it points into is in place. */
  if (!st && rename(w->data_tmp, w->data_path) != 0) st = errno_status(errno, "rename into place", w->data_path);
  if (!st && rename(w->index_tmp, w->index_path) != 0) st = errno_status(errno, "rename into place", w->index_path);
  if (!st) st = sync_dir(w->index_path);
  if (st) {
    w->error = copy_error(st);
    return st;
  }
  w->finished = true;
  return NULL;
}

void weft_checkpoint_writer_free(weft_checkpoint_writer_t *w) {
  if (!w) return;
  if (w->fd >= 0) close(w->fd);
  if (!w->finished) {
    if (w->data_tmp) unlink(w->data_tmp);
    if (w->index_tmp) unlink(w->index_tmp);
  }
  if (w->entries) g_hash_table_destroy(w->entries);
  weft_status_free(w->error);
  g_free(w->prefix);
  g_free(w->data_path);
  g_free(w->data_tmp);
  g_free(w->index_path);
  g_free(w->index_tmp);
  g_free(w);
}

/* ---------------------------------------------------------------------------------------------
 * Merging shards */

typedef struct merge_input {
  const char *prefix;
  char *index_path;
  int base;       /* first shard number in the merged checkpoint */
  int num_shards; /* from its header */
  GHashTable *entries; /* shared with the merge: key -> GByteArray */
  weft_status_t *dup;
} merge_input_t;

static weft_status_t *on_merge_entry(void *user, const guint8 *key, size_t key_len,
                                     const guint8 *value, size_t value_len) {
  merge_input_t *in = user;
  if (key_len == 0) {
    weft_status_t *deep = NULL;
    Tensorflow__BundleHeaderProto *h = (Tensorflow__BundleHeaderProto *)unpack_index_value(
        &tensorflow__bundle_header_proto__descriptor, value, value_len, in->index_path, NULL,
        &deep);
    if (deep) return deep;
    if (!h || h->num_shards < 1 || h->endianness != TENSORFLOW__BUNDLE_HEADER_PROTO__ENDIANNESS__LITTLE) {
      if (h) tensorflow__bundle_header_proto__free_unpacked(h, NULL);
      return weft_status_new(WEFT_DATA_LOSS, "Checkpoint merge: bad bundle header in '%s'",
                             in->index_path);
    }
    in->num_shards = h->num_shards;
    tensorflow__bundle_header_proto__free_unpacked(h, NULL);
    return NULL;
  }
  char *name = g_strndup((const char *)key, key_len);
  if (g_hash_table_contains(in->entries, name)) {
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT, "Checkpoint merge: tensor '%s' "
                                        "is in more than one input (again in '%s')", name, in->prefix);
    g_free(name);
    return st;
  }
  weft_status_t *deep = NULL;
  Tensorflow__BundleEntryProto *p = (Tensorflow__BundleEntryProto *)unpack_index_value(
      &tensorflow__bundle_entry_proto__descriptor, value, value_len, in->index_path, name, &deep);
  if (!p) {
    weft_status_t *st =
        deep ? deep
             : weft_status_new(WEFT_DATA_LOSS, "Checkpoint merge: the entry of tensor '%s' in "
                               "'%s' does not parse", name, in->index_path);
    g_free(name);
    return st;
  }
  /* The header comes first in key order, so num_shards is known here. */
  if (p->shard_id < 0 || p->shard_id >= in->num_shards) {
    weft_status_t *st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint merge: tensor '%s' in '%s' "
                                        "is in shard %d of %d", name, in->index_path, p->shard_id,
                                        in->num_shards);
    tensorflow__bundle_entry_proto__free_unpacked(p, NULL);
    g_free(name);
    return st;
  }
  p->shard_id += in->base;
  GByteArray *packed = g_byte_array_new();
  g_byte_array_set_size(packed, (guint)tensorflow__bundle_entry_proto__get_packed_size(p));
  tensorflow__bundle_entry_proto__pack(p, packed->data);
  tensorflow__bundle_entry_proto__free_unpacked(p, NULL);
  g_hash_table_insert(in->entries, name, packed);
  return NULL;
}

/* Puts `from` at `to` without touching `from` when the file system allows a hard link. */
static weft_status_t *link_into_place(const char *from, const char *to) {
  if (unlink(to) != 0 && errno != ENOENT) return errno_status(errno, "replace", to);
  if (link(from, to) == 0) return NULL;
  if (rename(from, to) == 0) return NULL;
  return errno_status(errno, "move into place", to);
}

weft_status_t *weft_checkpoint_merge(const char *const *inputs, int n, const char *prefix,
                                     bool delete_inputs) {
  if (!inputs || n <= 0 || !prefix || !*prefix)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_checkpoint_merge: no inputs or no prefix");
  GHashTable *entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                              (GDestroyNotify)g_byte_array_unref);
  merge_input_t *in = g_new0(merge_input_t, n);
  weft_status_t *st = NULL;
  int total = 0;
  for (int i = 0; i < n && !st; i++) {
    in[i].prefix = inputs[i];
    in[i].index_path = weft__bundle_index_filename(inputs[i]);
    in[i].entries = entries;
    in[i].base = total;
    gchar *data = NULL;
    gsize len = 0;
    GError *err = NULL;
    if (!g_file_get_contents(in[i].index_path, &data, &len, &err)) {
      st = weft_status_new(err->code == G_FILE_ERROR_NOENT ? WEFT_NOT_FOUND : WEFT_INTERNAL,
                           "Checkpoint merge: input '%s' is unreadable: %s", inputs[i], err->message);
      g_error_free(err);
      break;
    }
    st = weft__table_walk((const guint8 *)data, len, in[i].index_path, on_merge_entry, &in[i]);
    g_free(data);
    if (!st && in[i].num_shards < 1)
      st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint merge: '%s' has no bundle header", in[i].index_path);
    total += in[i].num_shards;
  }
  char *dir = g_path_get_dirname(prefix);
  if (!st && g_mkdir_with_parents(dir, 0755) != 0) st = errno_status(errno, "create the folder", dir);
  g_free(dir);
  /* Data first, under their final names; the index last, atomically. */
  for (int i = 0; i < n && !st; i++) {
    for (int s = 0; s < in[i].num_shards && !st; s++) {
      char *from = weft__bundle_data_filename(inputs[i], s, in[i].num_shards);
      char *to = weft__bundle_data_filename(prefix, in[i].base + s, total);
      if (strcmp(from, to) != 0) st = link_into_place(from, to);
      g_free(from);
      g_free(to);
    }
  }
  if (!st) {
    guint count = g_hash_table_size(entries);
    const char **keys = (const char **)g_hash_table_get_keys_as_array(entries, NULL);
    qsort(keys, count, sizeof(char *), compare_keys);
    GByteArray **k = g_new(GByteArray *, count + 1);
    GByteArray **v = g_new(GByteArray *, count + 1);
    Tensorflow__VersionDef version = TENSORFLOW__VERSION_DEF__INIT;
    version.producer = BUNDLE_VERSION;
    Tensorflow__BundleHeaderProto header = TENSORFLOW__BUNDLE_HEADER_PROTO__INIT;
    header.num_shards = total;
    header.version = &version;
    k[0] = g_byte_array_new();
    v[0] = g_byte_array_new();
    g_byte_array_set_size(v[0], (guint)tensorflow__bundle_header_proto__get_packed_size(&header));
    tensorflow__bundle_header_proto__pack(&header, v[0]->data);
    for (guint i = 0; i < count; i++) {
      k[i + 1] = g_byte_array_new();
      g_byte_array_append(k[i + 1], (const guint8 *)keys[i], (guint)strlen(keys[i]));
      v[i + 1] = g_byte_array_ref(g_hash_table_lookup(entries, keys[i]));
    }
    GByteArray *table = weft__table_build((const GByteArray *const *)k,
                                          (const GByteArray *const *)v, count + 1, 0, false);
    for (guint i = 0; i <= count; i++) {
      g_byte_array_unref(k[i]);
      g_byte_array_unref(v[i]);
    }
    g_free(k);
    g_free(v);
    g_free(keys);
    char *index = weft__bundle_index_filename(prefix);
    char *tmp = temp_name(index);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      st = errno_status(errno, "create", tmp);
    } else {
      st = write_all(fd, table->data, table->len, tmp);
      if (!st && fsync(fd) != 0) st = errno_status(errno, "fsync", tmp);
      if (close(fd) != 0 && !st) st = errno_status(errno, "close", tmp);
      if (!st && rename(tmp, index) != 0) st = errno_status(errno, "rename into place", index);
      if (st) unlink(tmp);
    }
    if (!st) sync_dir(index);
    g_byte_array_unref(table);
    g_free(tmp);
    g_free(index);
  }
  if (!st && delete_inputs) {
    for (int i = 0; i < n; i++) {
      if (strcmp(inputs[i], prefix) == 0) continue;
      unlink(in[i].index_path);
      for (int s = 0; s < in[i].num_shards; s++) {
        char *from = weft__bundle_data_filename(inputs[i], s, in[i].num_shards);
        unlink(from);
        g_free(from);
      }
    }
  }
  for (int i = 0; i < n; i++) g_free(in[i].index_path);
  g_free(in);
  g_hash_table_destroy(entries);
  return st;
}
