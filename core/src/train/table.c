/* The LevelDB-style sorted string table a checkpoint's .index file is (written from the format's
 * public description): building one in memory and walking every entry of one, with every block's
 * crc32c checked and Snappy-compressed blocks inflated through libsnappy. Also crc32c and
 * varints, which the tensor bundle shares. */
#include "checkpoint_internal.h"

#include <snappy-c.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * crc32c, table-driven (reflected polynomial 0x82f63b78) */

static uint32_t crc_table[256];
static gsize crc_table_ready;

static void crc_table_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc_table[i] = c;
  }
}

uint32_t weft__crc32c_extend(uint32_t crc, const void *data, size_t len) {
  if (g_once_init_enter(&crc_table_ready)) {
    crc_table_init();
    g_once_init_leave(&crc_table_ready, 1);
  }
  const guint8 *p = data;
  uint32_t c = ~crc;
  for (size_t i = 0; i < len; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

/* ---------------------------------------------------------------------------------------------
 * Varints and fixed-width little-endian integers */

void weft__put_varint64(GByteArray *out, uint64_t v) {
  guint8 buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = (guint8)(v | 0x80);
    v >>= 7;
  }
  buf[n++] = (guint8)v;
  g_byte_array_append(out, buf, (guint)n);
}

bool weft__get_varint64(const guint8 **p, const guint8 *end, uint64_t *v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && *p < end; shift += 7) {
    guint8 b = *(*p)++;
    result |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

static void put_fixed32(GByteArray *out, uint32_t v) {
  guint8 b[4] = {(guint8)v, (guint8)(v >> 8), (guint8)(v >> 16), (guint8)(v >> 24)};
  g_byte_array_append(out, b, 4);
}

static uint32_t get_fixed32(const guint8 *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_fixed64(const guint8 *p) {
  return (uint64_t)get_fixed32(p) | (uint64_t)get_fixed32(p + 4) << 32;
}

/* ---------------------------------------------------------------------------------------------
 * Building */

#define RESTART_INTERVAL 16

typedef struct block_builder {
  GByteArray *buf;
  GArray *restarts; /* uint32 offsets */
  int since_restart;
  GByteArray *last_key;
  size_t n_entries;
} block_builder_t;

static void block_init(block_builder_t *b) {
  b->buf = g_byte_array_new();
  b->restarts = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  uint32_t zero = 0;
  g_array_append_val(b->restarts, zero);
  b->since_restart = 0;
  b->last_key = g_byte_array_new();
  b->n_entries = 0;
}

static void block_reset(block_builder_t *b) {
  g_byte_array_set_size(b->buf, 0);
  g_array_set_size(b->restarts, 0);
  uint32_t zero = 0;
  g_array_append_val(b->restarts, zero);
  b->since_restart = 0;
  g_byte_array_set_size(b->last_key, 0);
  b->n_entries = 0;
}

static void block_clear(block_builder_t *b) {
  g_byte_array_unref(b->buf);
  g_array_unref(b->restarts);
  g_byte_array_unref(b->last_key);
}

static void block_add(block_builder_t *b, const guint8 *key, size_t klen, const guint8 *val,
                      size_t vlen) {
  size_t shared = 0;
  if (b->since_restart < RESTART_INTERVAL) {
    size_t lim = MIN(klen, (size_t)b->last_key->len);
    while (shared < lim && b->last_key->data[shared] == key[shared]) shared++;
  } else {
    uint32_t off = b->buf->len;
    g_array_append_val(b->restarts, off);
    b->since_restart = 0;
  }
  weft__put_varint64(b->buf, shared);
  weft__put_varint64(b->buf, klen - shared);
  weft__put_varint64(b->buf, vlen);
  /* An empty key or value may come with a NULL pointer (an empty GByteArray has no storage),
   * and NULL + 0 is undefined: skip empty appends (found by fuzz/ checkpoint). */
  if (klen > shared) g_byte_array_append(b->buf, key + shared, (guint)(klen - shared));
  if (vlen) g_byte_array_append(b->buf, val, (guint)vlen);
  g_byte_array_set_size(b->last_key, 0);
  if (klen) g_byte_array_append(b->last_key, key, (guint)klen);
  b->since_restart++;
  b->n_entries++;
}

static size_t block_estimate(const block_builder_t *b) {
  return b->buf->len + 4 * (b->restarts->len + 1);
}

/* Appends the restart array to the block's bytes (the builder must be reset after). */
static void block_finish(block_builder_t *b) {
  for (guint i = 0; i < b->restarts->len; i++)
    put_fixed32(b->buf, g_array_index(b->restarts, uint32_t, i));
  put_fixed32(b->buf, b->restarts->len);
}

/* Writes a finished block plus its trailer to `out`; the handle goes to `handle`. */
static void write_block(GByteArray *out, const GByteArray *raw, bool snappy, GByteArray *handle) {
  const guint8 *contents = raw->data;
  size_t size = raw->len;
  guint8 type = 0;
  char *compressed = NULL;
  if (snappy) {
    size_t cap = snappy_max_compressed_length(raw->len);
    compressed = g_malloc(cap);
    size_t clen = cap;
    if (snappy_compress((const char *)raw->data, raw->len, compressed, &clen) == SNAPPY_OK &&
        clen < raw->len - raw->len / 8) {
      contents = (const guint8 *)compressed;
      size = clen;
      type = 1;
    }
  }
  weft__put_varint64(handle, out->len);
  weft__put_varint64(handle, size);
  g_byte_array_append(out, contents, (guint)size);
  uint32_t crc = weft__crc32c_extend(weft__crc32c(contents, size), &type, 1);
  g_byte_array_append(out, &type, 1);
  put_fixed32(out, weft__crc32c_mask(crc));
  g_free(compressed);
}

/* Shortens `start` to a key in [start, limit) when one byte can be bumped. */
static void shortest_separator(GByteArray *start, const GByteArray *limit) {
  size_t lim = MIN(start->len, limit->len), i = 0;
  while (i < lim && start->data[i] == limit->data[i]) i++;
  if (i >= lim) return; /* one is a prefix of the other */
  guint8 b = start->data[i];
  if (b < 0xff && (guint)b + 1 < limit->data[i]) {
    start->data[i] = b + 1;
    g_byte_array_set_size(start, (guint)i + 1);
  }
}

/* Shortens `key` to a short key at or above it. */
static void short_successor(GByteArray *key) {
  for (guint i = 0; i < key->len; i++) {
    if (key->data[i] != 0xff) {
      key->data[i]++;
      g_byte_array_set_size(key, i + 1);
      return;
    }
  }
}

GByteArray *weft__table_build(const GByteArray *const *keys, const GByteArray *const *values,
                              size_t n, size_t block_size, bool snappy) {
  if (block_size == 0) block_size = 4096;
  GByteArray *out = g_byte_array_new();
  block_builder_t data, index;
  block_init(&data);
  block_init(&index);
  GByteArray *handle = g_byte_array_new();
  for (size_t i = 0; i < n; i++) {
    block_add(&data, keys[i]->data, keys[i]->len, values[i]->data, values[i]->len);
    if (block_estimate(&data) >= block_size || i + 1 == n) {
      /* The index key of a block sorts at or above its last key and below the next block's
       * first key; the shortest such key (LevelDB's choice) keeps the index small and makes
       * the file byte-identical to what TensorFlow writes. */
      GByteArray *last = g_byte_array_new();
      g_byte_array_append(last, data.last_key->data, data.last_key->len);
      if (i + 1 < n) shortest_separator(last, keys[i + 1]);
      else short_successor(last);
      block_finish(&data);
      g_byte_array_set_size(handle, 0);
      write_block(out, data.buf, snappy, handle);
      block_add(&index, last->data, last->len, handle->data, handle->len);
      g_byte_array_unref(last);
      block_reset(&data);
    }
  }
  /* An empty metaindex block: no filters. */
  block_builder_t meta;
  block_init(&meta);
  block_finish(&meta);
  GByteArray *meta_handle = g_byte_array_new();
  write_block(out, meta.buf, false, meta_handle);
  block_clear(&meta);

  block_finish(&index);
  g_byte_array_set_size(handle, 0);
  write_block(out, index.buf, snappy, handle);

  guint8 footer[WEFT__TABLE_FOOTER_SIZE];
  memset(footer, 0, sizeof footer);
  memcpy(footer, meta_handle->data, meta_handle->len);
  memcpy(footer + meta_handle->len, handle->data, handle->len);
  uint64_t magic = WEFT__TABLE_MAGIC;
  for (int k = 0; k < 8; k++) footer[40 + k] = (guint8)(magic >> (8 * k));
  g_byte_array_append(out, footer, sizeof footer);

  g_byte_array_unref(meta_handle);
  g_byte_array_unref(handle);
  block_clear(&data);
  block_clear(&index);
  return out;
}

/* ---------------------------------------------------------------------------------------------
 * Reading */

static weft_status_t *read_handle(const guint8 **p, const guint8 *end, uint64_t *offset,
                                  uint64_t *size, const char *filename, const char *what) {
  if (!weft__get_varint64(p, end, offset) || !weft__get_varint64(p, end, size)) {
    return weft_status_new(WEFT_DATA_LOSS, "Checkpoint index '%s': malformed %s block handle",
                           filename, what);
  }
  return NULL;
}

/* The contents of the block at [offset, offset+size), checked and inflated. *owned is set when
 * the contents were decompressed into a new buffer the caller frees. */
static weft_status_t *load_block(const guint8 *data, size_t len, uint64_t offset, uint64_t size,
                                 const char *filename, const guint8 **contents, size_t *clen,
                                 guint8 **owned) {
  *owned = NULL;
  if (offset > len || size > len || offset + size + 5 > len) {
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s' is truncated or corrupted: block at offset %" G_GUINT64_FORMAT
                           " of %" G_GUINT64_FORMAT " bytes runs past the end of the file (%zu bytes)",
                           filename, offset, size, len);
  }
  const guint8 *block = data + offset;
  guint8 type = block[size];
  uint32_t stored = weft__crc32c_unmask(get_fixed32(block + size + 1));
  uint32_t actual = weft__crc32c_extend(weft__crc32c(block, size), &type, 1);
  if (stored != actual) {
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s' is corrupted: checksum mismatch in the block at "
                           "offset %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " bytes): stored "
                           "0x%08x, computed 0x%08x",
                           filename, offset, size, stored, actual);
  }
  if (type == 0) {
    *contents = block;
    *clen = size;
    return NULL;
  }
  if (type != 1) {
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s': block at offset %" G_GUINT64_FORMAT
                           " has unknown compression type %u (0 none and 1 Snappy are known)",
                           filename, offset, type);
  }
  size_t ulen = 0;
  if (snappy_uncompressed_length((const char *)block, size, &ulen) != SNAPPY_OK ||
      ulen > (size_t)1 << 31) {
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s': the Snappy block at offset %" G_GUINT64_FORMAT
                           " is corrupted (bad length header)",
                           filename, offset);
  }
  guint8 *buf = g_malloc(ulen ? ulen : 1);
  size_t got = ulen;
  if (snappy_uncompress((const char *)block, size, (char *)buf, &got) != SNAPPY_OK || got != ulen) {
    g_free(buf);
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s': the Snappy block at offset %" G_GUINT64_FORMAT
                           " does not decompress",
                           filename, offset);
  }
  *contents = buf;
  *clen = ulen;
  *owned = buf;
  return NULL;
}

/* Walks the entries of one block's contents, rebuilding each key from its shared prefix. */
static weft_status_t *walk_block(const guint8 *b, size_t n, uint64_t offset, const char *filename,
                                 weft__table_entry_fn fn, void *user) {
  if (n < 4) {
    return weft_status_new(WEFT_DATA_LOSS, "Checkpoint index '%s': block at offset %" G_GUINT64_FORMAT
                           " is too short (%zu bytes)", filename, offset, n);
  }
  uint32_t num_restarts = get_fixed32(b + n - 4);
  if ((uint64_t)num_restarts * 4 + 4 > n) {
    return weft_status_new(WEFT_DATA_LOSS, "Checkpoint index '%s': block at offset %" G_GUINT64_FORMAT
                           " has a bad restart count (%u)", filename, offset, num_restarts);
  }
  const guint8 *p = b, *end = b + n - 4 - (size_t)num_restarts * 4;
  GByteArray *key = g_byte_array_new();
  weft_status_t *st = NULL;
  while (p < end && !st) {
    uint64_t shared, non_shared, vlen;
    if (!weft__get_varint64(&p, end, &shared) || !weft__get_varint64(&p, end, &non_shared) ||
        !weft__get_varint64(&p, end, &vlen) || shared > key->len ||
        non_shared > (uint64_t)(end - p) || vlen > (uint64_t)(end - p) - non_shared) {
      st = weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s': corrupted entry at byte %td of the block at "
                           "offset %" G_GUINT64_FORMAT,
                           filename, p - b, offset);
      break;
    }
    g_byte_array_set_size(key, (guint)shared);
    g_byte_array_append(key, p, (guint)non_shared);
    p += non_shared;
    st = fn(user, key->data, key->len, p, vlen);
    p += vlen;
  }
  g_byte_array_unref(key);
  return st;
}

typedef struct index_walk {
  const guint8 *data;
  size_t len;
  const char *filename;
  weft__table_entry_fn fn;
  void *user;
} index_walk_t;

static weft_status_t *on_index_entry(void *user, const guint8 *key, size_t key_len,
                                     const guint8 *value, size_t value_len) {
  index_walk_t *w = user;
  const guint8 *p = value;
  uint64_t off = 0, size = 0; /* GCC cannot see read_handle sets them on success */
  weft_status_t *st = read_handle(&p, value + value_len, &off, &size, w->filename, "data");
  if (st) return st;
  const guint8 *contents;
  size_t clen;
  guint8 *owned;
  st = load_block(w->data, w->len, off, size, w->filename, &contents, &clen, &owned);
  if (!st) st = walk_block(contents, clen, off, w->filename, w->fn, w->user);
  g_free(owned);
  return st;
}

weft_status_t *weft__table_walk(const guint8 *data, size_t len, const char *filename,
                                weft__table_entry_fn fn, void *user) {
  if (len < WEFT__TABLE_FOOTER_SIZE) {
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s' is truncated: %zu bytes is shorter than a table "
                           "footer (%d bytes)",
                           filename, len, WEFT__TABLE_FOOTER_SIZE);
  }
  const guint8 *footer = data + len - WEFT__TABLE_FOOTER_SIZE;
  uint64_t magic = get_fixed64(footer + 40);
  if (magic != WEFT__TABLE_MAGIC) {
    return weft_status_new(WEFT_DATA_LOSS,
                           "Checkpoint index '%s' is not a table or is truncated: bad magic number "
                           "0x%016" G_GINT64_MODIFIER "x (expected 0x%016" G_GINT64_MODIFIER "x)",
                           filename, magic, WEFT__TABLE_MAGIC);
  }
  const guint8 *p = footer, *end = footer + 40;
  uint64_t meta_off, meta_size, index_off, index_size;
  weft_status_t *st = read_handle(&p, end, &meta_off, &meta_size, filename, "metaindex");
  if (!st) st = read_handle(&p, end, &index_off, &index_size, filename, "index");
  if (st) return st;
  const guint8 *contents;
  size_t clen;
  guint8 *owned;
  st = load_block(data, len, index_off, index_size, filename, &contents, &clen, &owned);
  if (st) return st;
  index_walk_t w = {data, len, filename, fn, user};
  st = walk_block(contents, clen, index_off, filename, on_index_entry, &w);
  g_free(owned);
  return st;
}
