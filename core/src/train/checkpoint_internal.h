/* Internal declarations of the checkpoint code in core/src/train: crc32c, the LevelDB-style
 * sorted table that a checkpoint's .index file is, the tensor bundle's file names, and the
 * resource-manager access the saver needs. */
#ifndef WEFT_CHECKPOINT_INTERNAL_H
#define WEFT_CHECKPOINT_INTERNAL_H

#include "../base/base_internal.h"

/* ---------------------------------------------------------------------------------------------
 * crc32c (Castagnoli), and the masking TensorFlow and LevelDB apply to stored checksums (a crc
 * of data that itself holds crcs is otherwise weak). */

uint32_t weft__crc32c_extend(uint32_t crc, const void *data, size_t len);
static inline uint32_t weft__crc32c(const void *data, size_t len) {
  return weft__crc32c_extend(0, data, len);
}
static inline uint32_t weft__crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
static inline uint32_t weft__crc32c_unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

/* Varints as protobuf and LevelDB write them. */
void weft__put_varint64(GByteArray *out, uint64_t v);
/* Reads one varint from [*p, end); advances *p. False when it runs past end or is too long. */
bool weft__get_varint64(const guint8 **p, const guint8 *end, uint64_t *v);

/* ---------------------------------------------------------------------------------------------
 * Sorted string tables (LevelDB's format): data blocks with prefix-compressed keys and restart
 * points, each followed by a 5-byte trailer (compression type, masked crc32c), a metaindex
 * block, an index block and a 48-byte footer ending in the magic number. */

#define WEFT__TABLE_MAGIC UINT64_C(0xdb4775248b80fb57)
#define WEFT__TABLE_FOOTER_SIZE 48

/* Builds a table of n entries; keys must be in strictly increasing bytewise order. Blocks are
 * cut at about block_size bytes (0: 4096) and Snappy-compressed when `snappy` is true and that
 * saves at least an eighth (LevelDB's rule). The caller owns the returned array. */
GByteArray *weft__table_build(const GByteArray *const *keys, const GByteArray *const *values,
                              size_t n, size_t block_size, bool snappy);

/* Called for each entry in order; key and value are borrowed for the call. Returning a status
 * stops the walk and is returned. */
typedef weft_status_t *(*weft__table_entry_fn)(void *user, const guint8 *key, size_t key_len,
                                               const guint8 *value, size_t value_len);
/* Walks every entry of the table held in `data`. DATA_LOSS naming `filename` (and the block's
 * offset) for a bad footer, magic, handle, checksum, compression or block layout. */
weft_status_t *weft__table_walk(const guint8 *data, size_t len, const char *filename,
                                weft__table_entry_fn fn, void *user);

/* ---------------------------------------------------------------------------------------------
 * Tensor bundles */

/* "PREFIX.data-00001-of-00004"; the caller g_free()s it. */
char *weft__bundle_data_filename(const char *prefix, int shard, int num_shards);
/* "PREFIX.index"; the caller g_free()s it. */
char *weft__bundle_index_filename(const char *prefix);

#endif /* WEFT_CHECKPOINT_INTERNAL_H */
