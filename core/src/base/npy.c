/* npy.c: NumPy's file formats, so tensors travel to and from numpy users as they keep them.
 * .npy (format versions 1.0, 2.0 and 3.0: magic, a header that is a Python dict literal, then
 * the raw C-order data) is read and written; .npz (a zip of .npy members, stored or deflated) is
 * read. Every byte read here is untrusted (a file named on a command line, bytes from a client):
 * each size is checked against the bytes present before anything is allocated, the header is
 * bounded, the shape's element and byte counts are checked for overflow and the data must be
 * exactly as long as the header says. Errors name the file (or `source`) and what is wrong.
 * docs/c-api.md, "NumPy files", lists what maps to what. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "base_internal.h"

/* numpy's reader refuses longer headers by default (max_header_size); a real header of a
 * rank-8 array is under 200 bytes, so this bound costs nothing and keeps a hostile length from
 * making the parser walk megabytes. */
#define NPY_MAX_HEADER 10000
/* Deflate cannot expand more than about 1032:1; a member that claims more is lying about its
 * size, and believing it would allocate gigabytes for a few bytes of input. */
#define DEFLATE_MAX_RATIO 1032u

typedef enum { ORDER_LITTLE, ORDER_BIG, ORDER_NONE } byte_order_t;

/* What a header's 'descr' says: the Weft dtype, the bytes per element in the file and their
 * order. Strings: kind 'S' (bytes, NUL-padded) or 'U' (UCS-4 code points). */
typedef struct npy_descr {
  weft_dtype_t dtype;
  char kind; /* 'b', 'i', 'u', 'f', 'S', 'U' */
  size_t itemsize;
  byte_order_t order;
} npy_descr_t;

static bool host_is_little(void) { return G_BYTE_ORDER == G_LITTLE_ENDIAN; }

/* ---------------------------------------------------------------------------------------------
 * The header: a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * parsed by a small recursive-descent reader that accepts exactly the three keys numpy writes. */

typedef struct hdr_parser {
  const char *p, *end;
  const char *source;
} hdr_parser_t;

static void skip_space(hdr_parser_t *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static bool accept(hdr_parser_t *h, char c) {
  skip_space(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

static weft_status_t *hdr_error(const hdr_parser_t *h, const char *what) {
  return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the .npy header is not a dict numpy "
                         "writes: %s", h->source, what);
}

/* A quoted string ('...' or "..."), without escapes (numpy's keys and dtype strings have none).
 * *out is the caller's. */
static bool parse_string(hdr_parser_t *h, char **out) {
  skip_space(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  const char *start = h->p;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\') return false;
    h->p++;
  }
  if (h->p >= h->end) return false;
  *out = g_strndup(start, (gsize)(h->p - start));
  h->p++;
  return true;
}

static bool parse_word(hdr_parser_t *h, const char *word) {
  skip_space(h);
  size_t n = strlen(word);
  if ((size_t)(h->end - h->p) < n || strncmp(h->p, word, n) != 0) return false;
  h->p += n;
  return true;
}

/* "(2, 3)", "(3,)", "()"; Python 2's "3L" is accepted. Dims must fit int64. */
static weft_status_t *parse_shape(hdr_parser_t *h, int *rank, int64_t *dims) {
  if (!accept(h, '(')) return hdr_error(h, "'shape' is not a tuple");
  *rank = 0;
  for (;;) {
    if (accept(h, ')')) return NULL;
    skip_space(h);
    if (h->p >= h->end || !g_ascii_isdigit(*h->p))
      return hdr_error(h, "'shape' holds something other than non-negative integers");
    uint64_t v = 0;
    while (h->p < h->end && g_ascii_isdigit(*h->p)) {
      unsigned d = (unsigned)(*h->p - '0');
      if (v > ((uint64_t)INT64_MAX - d) / 10) {
        return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: a dimension of the shape is larger "
                               "than %lld", h->source, (long long)INT64_MAX);
      }
      v = v * 10 + d;
      h->p++;
    }
    if (h->p < h->end && (*h->p == 'L' || *h->p == 'l')) h->p++;
    if (*rank >= WEFT_MAX_RANK) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the array has more than %d dimensions, "
                             "the most a Weft tensor has", h->source, WEFT_MAX_RANK);
    }
    dims[(*rank)++] = (int64_t)v;
    if (accept(h, ',')) continue;
    if (accept(h, ')')) return NULL;
    return hdr_error(h, "'shape' is not a tuple of integers");
  }
}

static weft_status_t *parse_descr(const char *source, const char *s, npy_descr_t *d) {
  memset(d, 0, sizeof *d);
  const char *p = s;
  d->order = host_is_little() ? ORDER_LITTLE : ORDER_BIG;
  if (*p == '<') d->order = ORDER_LITTLE, p++;
  else if (*p == '>') d->order = ORDER_BIG, p++;
  else if (*p == '|') d->order = ORDER_NONE, p++;
  else if (*p == '=') p++;
  d->kind = *p;
  if (*p == 'O') {
    return weft_status_new(WEFT_UNIMPLEMENTED, "%s: dtype '%s' is an object array (pickled "
                           "Python objects), which Weft does not read; save numbers or "
                           "fixed-width strings (np.array(x, dtype='S'))", source, s);
  }
  char *end = NULL;
  guint64 size = *p ? g_ascii_strtoull(p + 1, &end, 10) : 0;
  bool sized = *p && end != NULL && end != p + 1 && *end == '\0' && g_ascii_isdigit(p[1]);
  struct { char kind; size_t size; weft_dtype_t dtype; } table[] = {
      {'b', 1, WEFT_DT_BOOL},   {'i', 1, WEFT_DT_INT8},   {'i', 2, WEFT_DT_INT16},
      {'i', 4, WEFT_DT_INT32},  {'i', 8, WEFT_DT_INT64},  {'u', 1, WEFT_DT_UINT8},
      {'u', 2, WEFT_DT_UINT16}, {'u', 4, WEFT_DT_UINT32}, {'u', 8, WEFT_DT_UINT64},
      {'f', 2, WEFT_DT_HALF},   {'f', 4, WEFT_DT_FLOAT},  {'f', 8, WEFT_DT_DOUBLE},
  };
  if (sized && (d->kind == 'S' || d->kind == 'U')) {
    /* A width beyond what any string could hold in memory is a hostile header, not a string. */
    if (size > (guint64)G_MAXINT32) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: dtype '%s' has a string width of %llu, "
                             "more than %d", source, s, (unsigned long long)size, G_MAXINT32);
    }
    d->dtype = WEFT_DT_STRING;
    d->itemsize = d->kind == 'S' ? (size_t)size : (size_t)size * 4;
    return NULL;
  }
  for (size_t i = 0; sized && i < G_N_ELEMENTS(table); i++) {
    if (table[i].kind == d->kind && table[i].size == size) {
      d->dtype = table[i].dtype;
      d->itemsize = table[i].size;
      return NULL;
    }
  }
  return weft_status_new(WEFT_UNIMPLEMENTED, "%s: dtype '%s' has no Weft type (Weft reads "
                         "bool, int8..int64, uint8..uint64, float16, float32, float64 and the "
                         "strings 'S' and 'U')", source, s);
}

typedef struct npy_header {
  npy_descr_t descr;
  bool fortran_order;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  size_t data_offset; /* where the data starts */
} npy_header_t;

static weft_status_t *parse_dict(hdr_parser_t *h, npy_header_t *out) {
  char *descr = NULL;
  bool have_descr = false, have_fortran = false, have_shape = false;
  weft_status_t *st = NULL;
  if (!accept(h, '{')) return hdr_error(h, "it does not start with '{'");
  while (!st) {
    if (accept(h, '}')) break;
    char *key = NULL;
    if (!parse_string(h, &key)) {
      st = hdr_error(h, "a key is not a quoted string");
      break;
    }
    if (!accept(h, ':')) {
      st = hdr_error(h, "a key is not followed by ':'");
    } else if (strcmp(key, "descr") == 0 && !have_descr) {
      have_descr = true;
      skip_space(h);
      if (h->p < h->end && *h->p == '[') {
        st = weft_status_new(WEFT_UNIMPLEMENTED, "%s: the array has a structured dtype (a "
                             "list of fields), which Weft does not read", h->source);
      } else if (!parse_string(h, &descr)) {
        st = hdr_error(h, "'descr' is not a string");
      }
    } else if (strcmp(key, "fortran_order") == 0 && !have_fortran) {
      have_fortran = true;
      if (parse_word(h, "True")) out->fortran_order = true;
      else if (parse_word(h, "False")) out->fortran_order = false;
      else st = hdr_error(h, "'fortran_order' is neither True nor False");
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      have_shape = true;
      st = parse_shape(h, &out->rank, out->dims);
    } else {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the .npy header has %s key '%s' "
                           "(it must have exactly 'descr', 'fortran_order' and 'shape')",
                           h->source, (strcmp(key, "descr") == 0 || strcmp(key, "shape") == 0 ||
                                       strcmp(key, "fortran_order") == 0) ? "a second"
                                                                          : "an unknown",
                           key);
    }
    g_free(key);
    if (st) break;
    if (accept(h, ',')) continue;
    if (accept(h, '}')) break;
    st = hdr_error(h, "entries are not separated by ','");
  }
  if (!st) {
    skip_space(h);
    if (h->p != h->end) st = hdr_error(h, "there is text after the closing '}'");
  }
  if (!st && !(have_descr && have_fortran && have_shape)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the .npy header lacks '%s'", h->source,
                         !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
  }
  if (!st) st = parse_descr(h->source, descr, &out->descr);
  g_free(descr);
  return st;
}

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint64_t get_le64(const uint8_t *p) {
  return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static weft_status_t *parse_header(const uint8_t *b, size_t len, const char *source,
                                   npy_header_t *out) {
  memset(out, 0, sizeof *out);
  static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (len < 6 || memcmp(b, magic, 6) != 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s is not a .npy file (it does not start "
                           "with \\x93NUMPY)", source);
  }
  if (len < 8) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: truncated .npy file: %zu bytes, too few "
                           "for the format version", source, len);
  }
  unsigned major = b[6], minor = b[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "%s: .npy format version %u.%u is not one Weft "
                           "reads (1.0, 2.0, 3.0)", source, major, minor);
  }
  size_t len_bytes = major == 1 ? 2 : 4;
  if (len < 8 + len_bytes) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: truncated .npy file: %zu bytes, too few "
                           "for the header length", source, len);
  }
  size_t hlen = major == 1 ? get_le16(b + 8) : get_le32(b + 8);
  if (hlen > NPY_MAX_HEADER) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the .npy header is %zu bytes long, more "
                           "than the %d allowed", source, hlen, NPY_MAX_HEADER);
  }
  size_t start = 8 + len_bytes;
  if (len - start < hlen) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: truncated .npy file: the header says "
                           "%zu bytes but %zu follow", source, hlen, len - start);
  }
  const char *text = (const char *)b + start;
  /* Versions 1.0 and 2.0 are latin-1 (in practice ASCII); 3.0 is UTF-8. Either way the dict
   * numpy writes is ASCII, and a NUL would end C string handling early. */
  if (memchr(text, '\0', hlen) != NULL) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the .npy header holds a NUL byte",
                           source);
  }
  hdr_parser_t h = {.p = text, .end = text + hlen, .source = source};
  weft_status_t *st = parse_dict(&h, out);
  if (st) return st;
  if (out->fortran_order && out->rank >= 2) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "%s: the array is in Fortran order "
                           "(fortran_order: True); Weft reads C-order arrays: save "
                           "np.ascontiguousarray(a)", source);
  }
  out->data_offset = start + hlen;
  return NULL;
}

/* "(2, 3)" as Python writes it: "()" for a scalar, "(3,)" for one dimension. */
static char *shape_text(int rank, const int64_t *dims) {
  GString *s = g_string_new("(");
  for (int d = 0; d < rank; d++)
    g_string_append_printf(s, "%s%lld", d ? ", " : "", (long long)dims[d]);
  if (rank == 1) g_string_append_c(s, ',');
  g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}

static void swap_bytes(uint8_t *p, size_t n, size_t size) {
  if (size < 2) return;
  for (size_t i = 0; i < n; i++, p += size) {
    for (size_t a = 0, z = size - 1; a < z; a++, z--) {
      uint8_t t = p[a];
      p[a] = p[z];
      p[z] = t;
    }
  }
}

static const char *descr_name(const npy_descr_t *d) {
  switch (d->kind) {
    case 'S': return "bytes";
    case 'U': return "unicode";
    default: return weft_dtype_name(d->dtype);
  }
}

/* Element i of a 'U' array (width code points, file byte order) as UTF-8 into the tensor,
 * trailing NULs dropped as numpy does. */
static weft_status_t *set_unicode(weft_tensor_t *t, int64_t i, const uint8_t *p, size_t width,
                                  byte_order_t order, const char *source) {
  size_t n = width;
  uint32_t *cps = g_new(uint32_t, width ? width : 1);
  for (size_t k = 0; k < width; k++) {
    const uint8_t *q = p + 4 * k;
    cps[k] = order == ORDER_BIG
                 ? (uint32_t)q[3] | (uint32_t)q[2] << 8 | (uint32_t)q[1] << 16 | (uint32_t)q[0] << 24
                 : get_le32(q);
  }
  while (n > 0 && cps[n - 1] == 0) n--;
  GString *s = g_string_sized_new(n);
  weft_status_t *st = NULL;
  for (size_t k = 0; k < n && !st; k++) {
    uint32_t c = cps[k];
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: element %lld of the unicode array holds "
                           "U+%X, which is not a Unicode code point", source, (long long)i, c);
    } else {
      g_string_append_unichar(s, (gunichar)c);
    }
  }
  if (!st) st = weft_tensor_set_string(t, i, s->str, s->len);
  g_string_free(s, TRUE);
  g_free(cps);
  return st;
}

weft_status_t *weft_tensor_parse_npy(const void *bytes, size_t len, const char *source,
                                     weft_tensor_t **out) {
  if (out == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "no output tensor given");
  *out = NULL;
  if (source == NULL) source = "npy data";
  if (bytes == NULL && len > 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: no bytes given", source);
  const uint8_t *b = bytes;
  npy_header_t h;
  weft_status_t *st = parse_header(b ? b : (const uint8_t *)"", len, source, &h);
  if (st) return st;
  /* Count elements and bytes without overflowing: the product must fit size_t and, before
   * anything is allocated, must equal the bytes that follow the header. */
  uint64_t n = 1;
  bool overflow = false;
  for (int d = 0; d < h.rank; d++) {
    uint64_t dim = (uint64_t)h.dims[d];
    if (dim != 0 && n > UINT64_MAX / dim) overflow = true;
    else n *= dim;
  }
  size_t have = len - h.data_offset;
  char *shape = shape_text(h.rank, h.dims);
  uint64_t need = 0;
  if (!overflow && h.descr.itemsize != 0 && n > UINT64_MAX / h.descr.itemsize) overflow = true;
  if (!overflow) need = n * h.descr.itemsize;
  if (overflow || need > SIZE_MAX || (int64_t)n < 0) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: shape %s of %s elements is too large to "
                         "address (the byte count overflows)", source, shape,
                         descr_name(&h.descr));
  } else if (have != need) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: %zu bytes of data follow the header, but "
                         "shape %s of %zu-byte %s elements needs %llu", source, have, shape,
                         h.descr.itemsize, descr_name(&h.descr), (unsigned long long)need);
  }
  g_free(shape);
  if (st) return st;
  const uint8_t *data = b + h.data_offset;
  weft_tensor_t *t = weft_tensor_new(h.descr.dtype, h.rank, h.dims);
  if (t == NULL) {
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "%s: could not allocate a tensor of %llu "
                           "bytes", source, (unsigned long long)need);
  }
  if (h.descr.dtype == WEFT_DT_STRING) {
    for (uint64_t i = 0; i < n && !st; i++) {
      const uint8_t *p = data + i * h.descr.itemsize;
      if (h.descr.kind == 'S') {
        size_t w = h.descr.itemsize;
        while (w > 0 && p[w - 1] == 0) w--; /* numpy drops the NUL padding */
        st = weft_tensor_set_string(t, (int64_t)i, (const char *)p, w);
      } else {
        st = set_unicode(t, (int64_t)i, p, h.descr.itemsize / 4, h.descr.order, source);
      }
    }
  } else {
    uint8_t *dst = weft_tensor_data(t);
    if (need) memcpy(dst, data, (size_t)need);
    bool file_little = h.descr.order != ORDER_BIG;
    if (h.descr.itemsize > 1 && file_little != host_is_little())
      swap_bytes(dst, (size_t)n, h.descr.itemsize);
    /* numpy's bool is a byte that is 0 or 1; anything else is read as true. */
    if (h.descr.dtype == WEFT_DT_BOOL) {
      for (uint64_t i = 0; i < n; i++) dst[i] = dst[i] != 0;
    }
  }
  if (st) {
    weft_tensor_unref(t);
    return st;
  }
  *out = t;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Files */

/* The file's bytes, mapped read-only; *mapped is the caller's (g_mapped_file_unref). */
static weft_status_t *map_file(const char *path, GMappedFile **mapped) {
  GError *err = NULL;
  *mapped = g_mapped_file_new(path, FALSE, &err);
  if (*mapped != NULL) return NULL;
  weft_code_t code = g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT) ? WEFT_NOT_FOUND
                                                                          : WEFT_UNAVAILABLE;
  weft_status_t *st = weft_status_new(code, "cannot read %s: %s", path, err->message);
  g_error_free(err);
  return st;
}

weft_status_t *weft_tensor_read_npy(const char *path, weft_tensor_t **out) {
  if (out) *out = NULL;
  if (path == NULL || out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "no .npy path or output given");
  GMappedFile *mf = NULL;
  weft_status_t *st = map_file(path, &mf);
  if (st) return st;
  st = weft_tensor_parse_npy(g_mapped_file_get_contents(mf), g_mapped_file_get_length(mf), path,
                             out);
  g_mapped_file_unref(mf);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * .npz: a zip archive (PKWARE APPNOTE) of NAME.npy members. The central directory at the end is
 * the table of contents; each entry points at a local header followed by the member's bytes,
 * stored (method 0) or deflated (method 8). numpy writes ZIP64 extra fields (savez forces them),
 * so those are read too. */

typedef struct zip_entry {
  char *name;
  uint16_t method, flags;
  uint32_t crc;
  uint64_t csize, usize, offset;
} zip_entry_t;

static weft_status_t *zip_error(const char *path, const char *what) {
  return weft_status_new(WEFT_INVALID_ARGUMENT, "%s is not a valid .npz (zip) file: %s", path,
                         what);
}

/* The ZIP64 extra field (id 1) of a central directory entry replaces the 32-bit fields that are
 * 0xFFFFFFFF, in the order usize, csize, offset. */
static bool read_zip64_extra(const uint8_t *x, size_t n, zip_entry_t *e, bool need_u, bool need_c,
                             bool need_o) {
  while (n >= 4) {
    uint16_t id = get_le16(x), sz = get_le16(x + 2);
    if ((size_t)sz > n - 4) return false;
    if (id == 1) {
      const uint8_t *p = x + 4;
      size_t left = sz;
      if (need_u) {
        if (left < 8) return false;
        e->usize = get_le64(p), p += 8, left -= 8;
      }
      if (need_c) {
        if (left < 8) return false;
        e->csize = get_le64(p), p += 8, left -= 8;
      }
      if (need_o) {
        if (left < 8) return false;
        e->offset = get_le64(p);
      }
      return true;
    }
    x += 4 + sz;
    n -= 4 + (size_t)sz;
  }
  return !(need_u || need_c || need_o);
}

static void zip_entries_free(GArray *entries) {
  for (guint i = 0; i < entries->len; i++) g_free(g_array_index(entries, zip_entry_t, i).name);
  g_array_free(entries, TRUE);
}

static weft_status_t *zip_directory(const uint8_t *b, size_t len, const char *path,
                                    GArray **out) {
  *out = NULL;
  if (len < 22) return zip_error(path, "too short for the end of central directory record");
  /* The end record sits in the last 22 + 65535 bytes (its comment is at most 65535 long). */
  size_t lo = len - 22 > 65535 ? len - 22 - 65535 : 0;
  size_t eocd = SIZE_MAX;
  for (size_t i = len - 22 + 1; i-- > lo;) {
    if (get_le32(b + i) == 0x06054b50u) {
      eocd = i;
      break;
    }
  }
  if (eocd == SIZE_MAX) {
    if (len >= 4 && get_le32(b) == 0x04034b50u)
      return zip_error(path, "no end of central directory record (truncated?)");
    return zip_error(path, "no end of central directory record");
  }
  uint64_t count = get_le16(b + eocd + 10);
  uint64_t cd_size = get_le32(b + eocd + 12), cd_off = get_le32(b + eocd + 16);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
    /* ZIP64: a locator just before the end record points at the 64-bit end record. */
    if (eocd < 20 || get_le32(b + eocd - 20) != 0x07064b50u)
      return zip_error(path, "ZIP64 sizes without a ZIP64 end of central directory locator");
    uint64_t z = get_le64(b + eocd - 20 + 8);
    if (z > len || len - z < 56 || get_le32(b + z) != 0x06064b50u)
      return zip_error(path, "the ZIP64 end of central directory record is missing");
    count = get_le64(b + z + 32);
    cd_size = get_le64(b + z + 40);
    cd_off = get_le64(b + z + 48);
  }
  if (cd_off > len || cd_size > len - cd_off)
    return zip_error(path, "the central directory lies outside the file");
  /* Each entry takes at least 46 bytes, so the count is bounded by the directory's size. */
  if (count > cd_size / 46) return zip_error(path, "more entries than the central directory holds");
  GArray *entries = g_array_new(FALSE, TRUE, sizeof(zip_entry_t));
  const uint8_t *p = b + cd_off, *end = b + cd_off + cd_size;
  weft_status_t *st = NULL;
  for (uint64_t i = 0; i < count && !st; i++) {
    if ((size_t)(end - p) < 46 || get_le32(p) != 0x02014b50u) {
      st = zip_error(path, "a central directory entry is malformed");
      break;
    }
    zip_entry_t e = {0};
    e.flags = get_le16(p + 8);
    e.method = get_le16(p + 10);
    e.crc = get_le32(p + 16);
    e.csize = get_le32(p + 20);
    e.usize = get_le32(p + 24);
    size_t nlen = get_le16(p + 28), xlen = get_le16(p + 30), clen = get_le16(p + 32);
    e.offset = get_le32(p + 42);
    if ((size_t)(end - p) - 46 < nlen + xlen + clen) {
      st = zip_error(path, "a central directory entry runs past the directory");
      break;
    }
    if (!read_zip64_extra(p + 46 + nlen, xlen, &e, e.usize == 0xFFFFFFFFu,
                          e.csize == 0xFFFFFFFFu, e.offset == 0xFFFFFFFFu)) {
      st = zip_error(path, "a ZIP64 extra field is malformed");
      break;
    }
    e.name = g_strndup((const char *)p + 46, nlen);
    g_array_append_val(entries, e);
    p += 46 + nlen + xlen + clen;
  }
  if (st) {
    zip_entries_free(entries);
    return st;
  }
  *out = entries;
  return NULL;
}

/* The member's uncompressed bytes, checked against its size and CRC-32. *data is the caller's
 * (g_free). */
static weft_status_t *zip_extract(const uint8_t *b, size_t len, const char *path,
                                  const zip_entry_t *e, uint8_t **data) {
  *data = NULL;
  if (e->flags & 1) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "%s: member '%s' is encrypted", path, e->name);
  }
  if (e->method != 0 && e->method != 8) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "%s: member '%s' uses compression method %u "
                           "(Weft reads stored and deflated members)", path, e->name, e->method);
  }
  if (e->offset > len || len - e->offset < 30 || get_le32(b + e->offset) != 0x04034b50u) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: member '%s' has no local header at "
                           "offset %llu", path, e->name, (unsigned long long)e->offset);
  }
  uint64_t start = e->offset + 30 + (uint64_t)get_le16(b + e->offset + 26) +
                   get_le16(b + e->offset + 28);
  if (start > len || e->csize > len - start) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: member '%s' (%llu bytes) runs past the "
                           "end of the file (truncated?)", path, e->name,
                           (unsigned long long)e->csize);
  }
  if (e->method == 0 && e->csize != e->usize) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: stored member '%s' has a compressed size "
                           "%llu unlike its size %llu", path, e->name,
                           (unsigned long long)e->csize, (unsigned long long)e->usize);
  }
  if (e->method == 8 && (e->usize > (uint64_t)DEFLATE_MAX_RATIO * e->csize + 64 ||
                         e->usize > SIZE_MAX || e->csize > (uint64_t)UINT_MAX)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: deflated member '%s' claims %llu bytes "
                           "from %llu, more than deflate can expand to", path, e->name,
                           (unsigned long long)e->usize, (unsigned long long)e->csize);
  }
  uint8_t *buf = g_try_malloc(e->usize ? (size_t)e->usize : 1);
  if (buf == NULL) {
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "%s: no memory for member '%s' (%llu "
                           "bytes)", path, e->name, (unsigned long long)e->usize);
  }
  weft_status_t *st = NULL;
  if (e->method == 0) {
    memcpy(buf, b + start, (size_t)e->usize);
  } else {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
      g_free(buf);
      return weft_status_new(WEFT_INTERNAL, "%s: zlib could not start inflating", path);
    }
    zs.next_in = (Bytef *)(b + start);
    zs.avail_in = (uInt)e->csize;
    uint64_t done = 0;
    int rc = Z_OK;
    /* avail_out is 32 bits; feed the output in chunks so members over 4 GiB inflate too. */
    while (rc == Z_OK && done < e->usize) {
      uint64_t room = e->usize - done;
      zs.next_out = buf + done;
      zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
      uInt before = zs.avail_out;
      rc = inflate(&zs, Z_NO_FLUSH);
      done += before - zs.avail_out;
    }
    if (rc == Z_OK) {
      /* All declared bytes are out but the stream has not ended: it must end now, with no
       * byte more than the size the directory declared. */
      uint8_t extra;
      zs.next_out = &extra;
      zs.avail_out = 1;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (zs.avail_out == 0) rc = Z_BUF_ERROR;
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || done != e->usize) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: member '%s' does not inflate to its "
                           "declared %llu bytes (%s)", path, e->name,
                           (unsigned long long)e->usize,
                           rc == Z_DATA_ERROR ? "corrupt deflate data" : "wrong size");
    }
  }
  if (!st) {
    /* zlib's crc32 takes a 32-bit length; go in chunks. */
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t off = 0; off < e->usize;) {
      uint64_t chunk = MIN(e->usize - off, (uint64_t)1 << 30);
      crc = crc32(crc, buf + off, (uInt)chunk);
      off += chunk;
    }
    if ((uint32_t)crc != e->crc) {
      st = weft_status_new(WEFT_DATA_LOSS, "%s: member '%s' fails its CRC-32 check (stored "
                           "%08x, computed %08x)", path, e->name, e->crc, (uint32_t)crc);
    }
  }
  if (st) {
    g_free(buf);
    return st;
  }
  *data = buf;
  return NULL;
}

weft_status_t *weft__npz_parse(const uint8_t *b, size_t len, const char *path, const char *key,
                               weft_tensor_t **out) {
  *out = NULL;
  GArray *entries = NULL;
  weft_status_t *st = zip_directory(b ? b : (const uint8_t *)"", len, path, &entries);
  const zip_entry_t *found = NULL;
  if (!st) {
    char *want = key && !g_str_has_suffix(key, ".npy") ? g_strconcat(key, ".npy", NULL)
                                                        : g_strdup(key);
    for (guint i = 0; want && i < entries->len && !found; i++) {
      const zip_entry_t *e = &g_array_index(entries, zip_entry_t, i);
      if (strcmp(e->name, want) == 0) found = e;
    }
    if (key == NULL && entries->len == 1) found = &g_array_index(entries, zip_entry_t, 0);
    if (found == NULL) {
      GString *names = g_string_new("");
      for (guint i = 0; i < entries->len; i++) {
        const char *n = g_array_index(entries, zip_entry_t, i).name;
        g_string_append_printf(names, "%s'%.*s'", i ? ", " : "",
                               (int)(g_str_has_suffix(n, ".npy") ? strlen(n) - 4 : strlen(n)), n);
      }
      st = key ? weft_status_new(WEFT_NOT_FOUND, "%s has no array '%s'; it holds %s", path, key,
                                 names->len ? names->str : "none")
               : weft_status_new(WEFT_INVALID_ARGUMENT, "%s holds %u arrays (%s): name the one "
                                 "to read", path, entries->len,
                                 names->len ? names->str : "none");
      g_string_free(names, TRUE);
    }
    g_free(want);
  }
  if (!st) {
    uint8_t *data = NULL;
    st = zip_extract(b, len, path, found, &data);
    if (!st) {
      char *source = g_strdup_printf("%s:%s", path, found->name);
      st = weft_tensor_parse_npy(data, (size_t)found->usize, source, out);
      g_free(source);
    }
    g_free(data);
  }
  if (entries) zip_entries_free(entries);
  return st;
}

weft_status_t *weft_tensor_read_npz(const char *path, const char *key, weft_tensor_t **out) {
  if (out) *out = NULL;
  if (path == NULL || out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "no .npz path or output given");
  GMappedFile *mf = NULL;
  weft_status_t *st = map_file(path, &mf);
  if (st) return st;
  st = weft__npz_parse((const uint8_t *)g_mapped_file_get_contents(mf),
                       g_mapped_file_get_length(mf), path, key, out);
  g_mapped_file_unref(mf);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Writing */

weft_status_t *weft_tensor_to_npy(const weft_tensor_t *tensor, void **bytes, size_t *len) {
  if (bytes) *bytes = NULL;
  if (len) *len = 0;
  if (tensor == NULL || bytes == NULL || len == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "no tensor or output given");
  weft_dtype_t dtype = weft_tensor_dtype(tensor);
  int rank = weft_tensor_rank(tensor);
  const int64_t *dims = weft_tensor_dims(tensor);
  int64_t n = weft_tensor_num_elements(tensor);
  const char *order = host_is_little() ? "<" : ">";
  char *descr = NULL;
  size_t width = 0; /* for strings: the longest element */
  switch (dtype) {
    case WEFT_DT_BOOL: descr = g_strdup("|b1"); break;
    case WEFT_DT_INT8: descr = g_strdup("|i1"); break;
    case WEFT_DT_UINT8: descr = g_strdup("|u1"); break;
    case WEFT_DT_INT16: descr = g_strdup_printf("%si2", order); break;
    case WEFT_DT_INT32: descr = g_strdup_printf("%si4", order); break;
    case WEFT_DT_INT64: descr = g_strdup_printf("%si8", order); break;
    case WEFT_DT_UINT16: descr = g_strdup_printf("%su2", order); break;
    case WEFT_DT_UINT32: descr = g_strdup_printf("%su4", order); break;
    case WEFT_DT_UINT64: descr = g_strdup_printf("%su8", order); break;
    case WEFT_DT_HALF: descr = g_strdup_printf("%sf2", order); break;
    case WEFT_DT_FLOAT: descr = g_strdup_printf("%sf4", order); break;
    case WEFT_DT_DOUBLE: descr = g_strdup_printf("%sf8", order); break;
    case WEFT_DT_STRING: {
      const weft_string_t *s = weft_tensor_data(tensor);
      for (int64_t i = 0; i < n; i++) width = MAX(width, s[i].len);
      /* numpy reads 'S0' as 'S1' would be; an array of empty strings is 'S1' as numpy saves. */
      if (width == 0) width = 1;
      descr = g_strdup_printf("|S%zu", width);
      break;
    }
    default:
      return weft_status_new(WEFT_UNIMPLEMENTED, "a %s tensor has no numpy dtype to save as",
                             weft_dtype_name(dtype));
  }
  char *shape = shape_text(rank, dims);
  GString *h = g_string_new("");
  g_string_append_printf(h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
                         shape);
  g_free(shape);
  g_free(descr);
  /* Magic, version and length, then the dict padded with spaces and a newline so that the data
   * starts on a 64-byte boundary, as numpy writes it. Version 2.0 only when 1.0's 16-bit length
   * cannot hold the header. */
  size_t prefix = 10;
  int version = 1;
  size_t total = prefix + h->len + 1;
  total = (total + 63) / 64 * 64;
  if (total - prefix > 65535) {
    version = 2;
    prefix = 12;
    total = (prefix + h->len + 1 + 63) / 64 * 64;
  }
  while (prefix + h->len + 1 < total) g_string_append_c(h, ' ');
  g_string_append_c(h, '\n');
  size_t item = dtype == WEFT_DT_STRING ? width : weft_dtype_size(dtype);
  size_t data_len = (size_t)n * item;
  uint8_t *buf = g_try_malloc(total + data_len + 1);
  if (buf == NULL) {
    g_string_free(h, TRUE);
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "no memory for %zu bytes of .npy",
                           total + data_len);
  }
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (uint8_t)version;
  buf[7] = 0;
  size_t hl = h->len;
  if (version == 1) {
    buf[8] = (uint8_t)(hl & 0xff);
    buf[9] = (uint8_t)(hl >> 8);
  } else {
    for (int k = 0; k < 4; k++) buf[8 + k] = (uint8_t)(hl >> (8 * k));
  }
  memcpy(buf + prefix, h->str, hl);
  g_string_free(h, TRUE);
  uint8_t *data = buf + total;
  if (dtype == WEFT_DT_STRING) {
    const weft_string_t *s = weft_tensor_data(tensor);
    memset(data, 0, data_len);
    for (int64_t i = 0; i < n; i++)
      if (s[i].len) memcpy(data + (size_t)i * width, s[i].data, s[i].len);
  } else if (data_len) {
    memcpy(data, weft_tensor_data(tensor), data_len);
  }
  *bytes = buf;
  *len = total + data_len;
  return NULL;
}

weft_status_t *weft_tensor_write_npy(const weft_tensor_t *tensor, const char *path) {
  if (path == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "no .npy path given");
  void *bytes = NULL;
  size_t len = 0;
  weft_status_t *st = weft_tensor_to_npy(tensor, &bytes, &len);
  if (st) return weft_status_prefix(st, "%s", path);
  GError *err = NULL;
  /* g_file_set_contents writes a temporary file and renames it: a reader never sees half. */
  if (!g_file_set_contents(path, bytes, (gssize)len, &err)) {
    st = weft_status_new(WEFT_UNAVAILABLE, "cannot write %s: %s", path, err->message);
    g_error_free(err);
  }
  g_free(bytes);
  return st;
}
