/* Tests for NumPy files (core/src/base/npy.c) and the `weft` tool's use of them: .npy files and
 * .npz archives written byte by byte here (no numpy needed) read back with exact values in every
 * format version, byte order and dtype; malformed files give exact errors; written files match
 * numpy's layout byte for byte; `weft run --feed NAME=@FILE --output DIR` and `weft inspect` on
 * the corpus models (WEFT_CORPUS) report real values. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <zlib.h>

#include "process_util.h"
#include "weft/weft.h"

#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"

/* ---- building files */

/* A .npy file: magic, version, header length (2 bytes for 1.0, 4 otherwise), the dict padded
 * with spaces and a newline to 64 bytes as numpy writes it, then the data. */
static GBytes *npy_file(int version, const char *dict, const void *data, size_t len) {
  size_t pre = version == 1 ? 10 : 12;
  size_t total = (pre + strlen(dict) + 1 + 63) / 64 * 64;
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)"\x93NUMPY", 6);
  guint8 v[2] = {(guint8)version, 0};
  g_byte_array_append(b, v, 2);
  guint32 hl = (guint32)(total - pre);
  guint8 l[4] = {hl & 0xff, (hl >> 8) & 0xff, (hl >> 16) & 0xff, hl >> 24};
  g_byte_array_append(b, l, version == 1 ? 2 : 4);
  g_byte_array_append(b, (const guint8 *)dict, (guint)strlen(dict));
  while (b->len < total - 1) g_byte_array_append(b, (const guint8 *)" ", 1);
  g_byte_array_append(b, (const guint8 *)"\n", 1);
  if (len) g_byte_array_append(b, data, (guint)len);
  return g_byte_array_free_to_bytes(b);
}

static weft_tensor_t *parse_ok(GBytes *file) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft_tensor_parse_npy(g_bytes_get_data(file, NULL), g_bytes_get_size(file),
                                            "t.npy", &t);
  g_assert_cmpstr(weft_status_message(st), ==, "");
  g_assert_nonnull(t);
  g_bytes_unref(file);
  return t;
}

static void parse_fails(GBytes *file, weft_code_t code, const char *message) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft_tensor_parse_npy(g_bytes_get_data(file, NULL), g_bytes_get_size(file),
                                            "t.npy", &t);
  g_assert_cmpstr(weft_status_message(st), ==, message);
  g_assert_cmpint(weft_status_code(st), ==, code);
  g_assert_null(t);
  weft_status_free(st);
  g_bytes_unref(file);
}

static void assert_shape(const weft_tensor_t *t, weft_dtype_t dtype, int rank,
                         const int64_t *dims) {
  g_assert_cmpint(weft_tensor_dtype(t), ==, dtype);
  g_assert_cmpint(weft_tensor_rank(t), ==, rank);
  for (int d = 0; d < rank; d++) g_assert_cmpint(weft_tensor_dims(t)[d], ==, dims[d]);
}

/* ---- reading */

static void test_read_float32_v1(void) {
  const guint8 data[24] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40,  /* 1 2 3 */
                           0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40, 0, 0, 0xc0, 0xc0}; /* 4 5 -6 */
  weft_tensor_t *t =
      parse_ok(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data,
                        sizeof data));
  assert_shape(t, WEFT_DT_FLOAT, 2, (int64_t[]){2, 3});
  const float want[6] = {1, 2, 3, 4, 5, -6};
  g_assert_cmpmem(weft_tensor_data(t), 24, want, 24);
  weft_tensor_unref(t);
}

static void test_read_big_endian_v2(void) {
  /* int64 big-endian: 1, -2, 2^40 */
  const guint8 data[24] = {0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
                           0, 0, 1, 0, 0, 0, 0, 0};
  weft_tensor_t *t = parse_ok(npy_file(2, "{'descr': '>i8', 'fortran_order': False, "
                                          "'shape': (3,), }", data, sizeof data));
  assert_shape(t, WEFT_DT_INT64, 1, (int64_t[]){3});
  const int64_t *v = weft_tensor_data(t);
  g_assert_cmpint(v[0], ==, 1);
  g_assert_cmpint(v[1], ==, -2);
  g_assert_cmpint(v[2], ==, (int64_t)1 << 40);
  weft_tensor_unref(t);
  /* big-endian float64 and uint16 too */
  const guint8 d2[8] = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18}; /* pi */
  t = parse_ok(npy_file(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (), }", d2, 8));
  assert_shape(t, WEFT_DT_DOUBLE, 0, NULL);
  g_assert_cmpfloat(*(double *)weft_tensor_data(t), ==, 3.141592653589793);
  weft_tensor_unref(t);
  const guint8 d3[4] = {0x01, 0x02, 0xff, 0xfe};
  t = parse_ok(npy_file(1, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", d3, 4));
  g_assert_cmpint(((uint16_t *)weft_tensor_data(t))[0], ==, 0x0102);
  g_assert_cmpint(((uint16_t *)weft_tensor_data(t))[1], ==, 0xfffe);
  weft_tensor_unref(t);
}

static void test_read_v3_and_dtypes(void) {
  /* Version 3.0 (UTF-8 header), a scalar uint32; key order and quotes as a person might write. */
  const guint8 u4[4] = {0x78, 0x56, 0x34, 0x12};
  weft_tensor_t *t = parse_ok(npy_file(3, "{\"shape\": (), 'fortran_order': False, "
                                          "'descr': '<u4'}", u4, 4));
  assert_shape(t, WEFT_DT_UINT32, 0, NULL);
  g_assert_cmpuint(*(uint32_t *)weft_tensor_data(t), ==, 0x12345678u);
  weft_tensor_unref(t);
  static const struct {
    const char *descr;
    weft_dtype_t dtype;
    size_t size;
  } cases[] = {
      {"|i1", WEFT_DT_INT8, 1},   {"|u1", WEFT_DT_UINT8, 1},   {"<i2", WEFT_DT_INT16, 2},
      {"<u2", WEFT_DT_UINT16, 2}, {"<i4", WEFT_DT_INT32, 4},   {"<u8", WEFT_DT_UINT64, 8},
      {"<f2", WEFT_DT_HALF, 2},   {"<f8", WEFT_DT_DOUBLE, 8},  {"<i8", WEFT_DT_INT64, 8},
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    guint8 data[16];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (guint8)(0xa0 + i);
    char *dict = g_strdup_printf("{'descr': '%s', 'fortran_order': False, 'shape': (2,), }",
                                 cases[c].descr);
    t = parse_ok(npy_file(1, dict, data, 2 * cases[c].size));
    g_free(dict);
    assert_shape(t, cases[c].dtype, 1, (int64_t[]){2});
    g_assert_cmpmem(weft_tensor_data(t), 2 * cases[c].size, data, 2 * cases[c].size);
    weft_tensor_unref(t);
  }
  /* bool: numpy's bytes are 0/1; anything else reads as true. Python 2's "3L" shapes too. */
  const guint8 b[3] = {0, 1, 7};
  t = parse_ok(npy_file(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3L,), }", b, 3));
  assert_shape(t, WEFT_DT_BOOL, 1, (int64_t[]){3});
  g_assert_cmpmem(weft_tensor_data(t), 3, ((guint8[]){0, 1, 1}), 3);
  weft_tensor_unref(t);
  /* An empty array: shape (0, 4), no data. */
  t = parse_ok(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }", NULL,
                        0));
  assert_shape(t, WEFT_DT_FLOAT, 2, (int64_t[]){0, 4});
  weft_tensor_unref(t);
  /* Fortran order of a 1-D array is the same layout as C order: accepted. */
  t = parse_ok(npy_file(1, "{'descr': '|u1', 'fortran_order': True, 'shape': (2,), }", b, 2));
  weft_tensor_unref(t);
}

static void test_read_strings(void) {
  const char s[9] = {'a', 'b', 0, 'a', 'b', 'c', 0, 0, 0};
  weft_tensor_t *t =
      parse_ok(npy_file(1, "{'descr': '|S3', 'fortran_order': False, 'shape': (3,), }", s, 9));
  assert_shape(t, WEFT_DT_STRING, 1, (int64_t[]){3});
  const weft_string_t *v = weft_tensor_data(t);
  g_assert_cmpmem(v[0].data, v[0].len, "ab", 2);
  g_assert_cmpmem(v[1].data, v[1].len, "abc", 3);
  g_assert_cmpuint(v[2].len, ==, 0);
  weft_tensor_unref(t);
  /* 'U2', little- and big-endian: "é" (U+00E9) and "hi" become UTF-8. */
  const guint8 le[16] = {0xe9, 0, 0, 0, 0, 0, 0, 0, 'h', 0, 0, 0, 'i', 0, 0, 0};
  const guint8 be[16] = {0, 0, 0, 0xe9, 0, 0, 0, 0, 0, 0, 0, 'h', 0, 0, 0, 'i'};
  for (int k = 0; k < 2; k++) {
    t = parse_ok(npy_file(1, k ? "{'descr': '>U2', 'fortran_order': False, 'shape': (2,), }"
                               : "{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }",
                          k ? be : le, 16));
    v = weft_tensor_data(t);
    g_assert_cmpmem(v[0].data, v[0].len, "\xc3\xa9", 2);
    g_assert_cmpmem(v[1].data, v[1].len, "hi", 2);
    weft_tensor_unref(t);
  }
}

/* ---- malformed files: exact errors */

static void test_malformed(void) {
  const guint8 f6[24] = {0};
  parse_fails(g_bytes_new_static("PK\x03\x04 not numpy", 15), WEFT_INVALID_ARGUMENT,
              "t.npy is not a .npy file (it does not start with \\x93NUMPY)");
  parse_fails(g_bytes_new_static("\x93NUMPY\x01", 7), WEFT_INVALID_ARGUMENT,
              "t.npy: truncated .npy file: 7 bytes, too few for the format version");
  parse_fails(g_bytes_new_static("\x93NUMPY\x04\x00\x10\x00", 10), WEFT_UNIMPLEMENTED,
              "t.npy: .npy format version 4.0 is not one Weft reads (1.0, 2.0, 3.0)");
  /* Truncated inside the header. */
  GBytes *whole = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f6,
                           24);
  parse_fails(g_bytes_new_from_bytes(whole, 0, 30), WEFT_INVALID_ARGUMENT,
              "t.npy: truncated .npy file: the header says 118 bytes but 20 follow");
  /* Truncated data, and data left over. */
  parse_fails(g_bytes_new_from_bytes(whole, 0, g_bytes_get_size(whole) - 4),
              WEFT_INVALID_ARGUMENT,
              "t.npy: 20 bytes of data follow the header, but shape (6,) of 4-byte float32 "
              "elements needs 24");
  g_bytes_unref(whole);
  parse_fails(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f6,
                       20),
              WEFT_INVALID_ARGUMENT,
              "t.npy: 20 bytes of data follow the header, but shape (2, 3) of 4-byte float32 "
              "elements needs 24");
  /* A header length over the bound. */
  parse_fails(g_bytes_new_static("\x93NUMPY\x02\x00\x20\x4e\x00\x00{", 13), WEFT_INVALID_ARGUMENT,
              "t.npy: the .npy header is 20000 bytes long, more than the 10000 allowed");
  parse_fails(npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f6, 24),
              WEFT_UNIMPLEMENTED,
              "t.npy: the array is in Fortran order (fortran_order: True); Weft reads C-order "
              "arrays: save np.ascontiguousarray(a)");
  parse_fails(npy_file(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", f6, 8),
              WEFT_UNIMPLEMENTED,
              "t.npy: dtype '|O' is an object array (pickled Python objects), which Weft does "
              "not read; save numbers or fixed-width strings (np.array(x, dtype='S'))");
  parse_fails(npy_file(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", f6, 8),
              WEFT_UNIMPLEMENTED,
              "t.npy: dtype '<c8' has no Weft type (Weft reads bool, int8..int64, "
              "uint8..uint64, float16, float32, float64 and the strings 'S' and 'U')");
  parse_fails(npy_file(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                       f6, 4),
              WEFT_UNIMPLEMENTED,
              "t.npy: the array has a structured dtype (a list of fields), which Weft does not "
              "read");
  /* Shape products that overflow, dims beyond int64, too many dims. */
  parse_fails(npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, "
                          "4294967296, 16), }", f6, 8),
              WEFT_INVALID_ARGUMENT,
              "t.npy: shape (4294967296, 4294967296, 16) of float64 elements is too large to "
              "address (the byte count overflows)");
  parse_fails(npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': "
                          "(99999999999999999999,), }", f6, 8),
              WEFT_INVALID_ARGUMENT,
              "t.npy: a dimension of the shape is larger than 9223372036854775807");
  parse_fails(npy_file(1, "{'descr': '|u1', 'fortran_order': False, 'shape': "
                          "(1, 1, 1, 1, 1, 1, 1, 1, 1), }", f6, 1),
              WEFT_INVALID_ARGUMENT,
              "t.npy: the array has more than 8 dimensions, the most a Weft tensor has");
  parse_fails(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", f6, 4),
              WEFT_INVALID_ARGUMENT,
              "t.npy: the .npy header is not a dict numpy writes: 'shape' holds something other "
              "than non-negative integers");
  parse_fails(npy_file(1, "{'descr': '<f4', 'shape': (1,), }", f6, 4), WEFT_INVALID_ARGUMENT,
              "t.npy: the .npy header lacks 'fortran_order'");
  parse_fails(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
                       f6, 4),
              WEFT_INVALID_ARGUMENT,
              "t.npy: the .npy header has an unknown key 'x' (it must have exactly 'descr', "
              "'fortran_order' and 'shape')");
  parse_fails(npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", f6, 4),
              WEFT_INVALID_ARGUMENT,
              "t.npy: the .npy header is not a dict numpy writes: there is text after the "
              "closing '}'");
  parse_fails(g_bytes_new_static("", 0), WEFT_INVALID_ARGUMENT,
              "t.npy is not a .npy file (it does not start with \\x93NUMPY)");
  /* Errors from a file name it. */
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft_tensor_read_npy("/nonexistent/x.npy", &t);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_true(g_str_has_prefix(weft_status_message(st), "cannot read /nonexistent/x.npy: "));
  weft_status_free(st);
}

/* ---- writing */

static void test_write_layout_and_round_trip(void) {
  float v[2] = {1, 2};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, (int64_t[]){2}, v, 8, NULL);
  void *bytes = NULL;
  size_t len = 0;
  g_assert_null(weft_tensor_to_npy(t, &bytes, &len));
  /* What np.save(f, np.array([1, 2], dtype='<f4')) writes. */
  GBytes *want = npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, 8);
  g_assert_cmpmem(bytes, len, g_bytes_get_data(want, NULL), g_bytes_get_size(want));
  g_bytes_unref(want);
  free(bytes);
  weft_tensor_unref(t);

  char *dir = g_dir_make_tmp("weft-npy-XXXXXX", NULL);
  static const weft_dtype_t dtypes[] = {WEFT_DT_BOOL,   WEFT_DT_INT8,   WEFT_DT_UINT8,
                                        WEFT_DT_INT16,  WEFT_DT_UINT16, WEFT_DT_INT32,
                                        WEFT_DT_UINT32, WEFT_DT_INT64,  WEFT_DT_UINT64,
                                        WEFT_DT_HALF,   WEFT_DT_FLOAT,  WEFT_DT_DOUBLE};
  for (size_t k = 0; k < G_N_ELEMENTS(dtypes); k++) {
    t = weft_tensor_new(dtypes[k], 2, (int64_t[]){2, 3});
    guint8 *d = weft_tensor_data(t);
    for (size_t i = 0; i < weft_tensor_nbytes(t); i++)
      d[i] = dtypes[k] == WEFT_DT_BOOL ? (guint8)(i & 1) : (guint8)(i * 37 + 1);
    char *path = g_build_filename(dir, "t.npy", NULL);
    g_assert_null(weft_tensor_write_npy(t, path));
    weft_tensor_t *back = NULL;
    g_assert_null(weft_tensor_read_npy(path, &back));
    assert_shape(back, dtypes[k], 2, (int64_t[]){2, 3});
    g_assert_cmpmem(weft_tensor_data(back), weft_tensor_nbytes(back), d, weft_tensor_nbytes(t));
    weft_tensor_unref(back);
    weft_tensor_unref(t);
    g_remove(path);
    g_free(path);
  }
  /* Strings: 'S' of the longest element. */
  t = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){2});
  g_assert_null(weft_tensor_set_string(t, 0, "hello", 5));
  g_assert_null(weft_tensor_set_string(t, 1, "a\0b", 3));
  g_assert_null(weft_tensor_to_npy(t, &bytes, &len));
  g_assert_nonnull(memmem(bytes, len, "'descr': '|S5'", 14));
  weft_tensor_t *back = NULL;
  g_assert_null(weft_tensor_parse_npy(bytes, len, NULL, &back));
  const weft_string_t *s = weft_tensor_data(back);
  g_assert_cmpmem(s[0].data, s[0].len, "hello", 5);
  g_assert_cmpmem(s[1].data, s[1].len, "a\0b", 3);
  weft_tensor_unref(back);
  weft_tensor_unref(t);
  free(bytes);
  /* bfloat16 has no numpy dtype. */
  t = weft_tensor_new(WEFT_DT_BFLOAT16, 0, NULL);
  weft_status_t *st = weft_tensor_to_npy(t, &bytes, &len);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
  g_assert_cmpstr(weft_status_message(st), ==, "a bfloat16 tensor has no numpy dtype to save as");
  weft_status_free(st);
  weft_tensor_unref(t);
  g_rmdir(dir);
  g_free(dir);
}

/* ---- .npz */

typedef struct member {
  const char *name;
  GBytes *data;
  bool deflate;
} member_t;

static void put16(GByteArray *b, unsigned v) {
  guint8 x[2] = {v & 0xff, (v >> 8) & 0xff};
  g_byte_array_append(b, x, 2);
}
static void put32(GByteArray *b, guint32 v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}

/* A zip archive of the members, as Python's zipfile writes one (no ZIP64). */
static GBytes *zip_file(const member_t *m, int n) {
  GByteArray *b = g_byte_array_new(), *cd = g_byte_array_new();
  for (int i = 0; i < n; i++) {
    gsize ulen = 0;
    const guint8 *u = g_bytes_get_data(m[i].data, &ulen);
    guint8 *c = (guint8 *)u;
    size_t clen = ulen;
    if (m[i].deflate) {
      z_stream zs;
      memset(&zs, 0, sizeof zs);
      g_assert_cmpint(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), ==,
                      Z_OK);
      c = g_malloc(deflateBound(&zs, ulen));
      zs.next_in = (Bytef *)u;
      zs.avail_in = (uInt)ulen;
      zs.next_out = c;
      zs.avail_out = (uInt)deflateBound(&zs, ulen);
      g_assert_cmpint(deflate(&zs, Z_FINISH), ==, Z_STREAM_END);
      clen = zs.total_out;
      deflateEnd(&zs);
    }
    guint32 crc = (guint32)crc32(0, u, (uInt)ulen);
    guint32 offset = b->len;
    put32(b, 0x04034b50);
    put16(b, 20), put16(b, 0), put16(b, m[i].deflate ? 8 : 0), put16(b, 0), put16(b, 0);
    put32(b, crc), put32(b, (guint32)clen), put32(b, (guint32)ulen);
    put16(b, (unsigned)strlen(m[i].name)), put16(b, 0);
    g_byte_array_append(b, (const guint8 *)m[i].name, (guint)strlen(m[i].name));
    g_byte_array_append(b, c, (guint)clen);
    put32(cd, 0x02014b50);
    put16(cd, 20), put16(cd, 20), put16(cd, 0), put16(cd, m[i].deflate ? 8 : 0);
    put16(cd, 0), put16(cd, 0);
    put32(cd, crc), put32(cd, (guint32)clen), put32(cd, (guint32)ulen);
    put16(cd, (unsigned)strlen(m[i].name)), put16(cd, 0), put16(cd, 0), put16(cd, 0);
    put16(cd, 0), put32(cd, 0), put32(cd, offset);
    g_byte_array_append(cd, (const guint8 *)m[i].name, (guint)strlen(m[i].name));
    if (c != u) g_free(c);
  }
  guint32 cd_off = b->len, cd_len = cd->len;
  g_byte_array_append(b, cd->data, cd->len);
  g_byte_array_free(cd, TRUE);
  put32(b, 0x06054b50), put16(b, 0), put16(b, 0), put16(b, (unsigned)n), put16(b, (unsigned)n);
  put32(b, cd_len), put32(b, cd_off), put16(b, 0);
  return g_byte_array_free_to_bytes(b);
}

static char *write_temp(const char *dir, const char *name, GBytes *bytes) {
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, g_bytes_get_data(bytes, NULL),
                                    (gssize)g_bytes_get_size(bytes), NULL));
  return path;
}

static GBytes *npy_f4(const float *v, int n) {
  char *dict = g_strdup_printf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", n);
  GBytes *b = npy_file(1, dict, v, sizeof(float) * (size_t)n);
  g_free(dict);
  return b;
}

static void test_npz(void) {
  char *dir = g_dir_make_tmp("weft-npz-XXXXXX", NULL);
  float a[3] = {1, 2, 3}, big[1000];
  for (int i = 0; i < 1000; i++) big[i] = (float)(i % 7);
  member_t m[2] = {{"a.npy", npy_f4(a, 3), false}, {"b.npy", npy_f4(big, 1000), true}};
  GBytes *zip = zip_file(m, 2);
  char *path = write_temp(dir, "t.npz", zip);
  weft_tensor_t *t = NULL;
  g_assert_null(weft_tensor_read_npz(path, "a", &t));
  g_assert_cmpmem(weft_tensor_data(t), 12, a, 12);
  weft_tensor_unref(t);
  g_assert_null(weft_tensor_read_npz(path, "b.npy", &t));
  assert_shape(t, WEFT_DT_FLOAT, 1, (int64_t[]){1000});
  g_assert_cmpmem(weft_tensor_data(t), sizeof big, big, sizeof big);
  weft_tensor_unref(t);
  weft_status_t *st = weft_tensor_read_npz(path, "c", &t);
  char *want = g_strdup_printf("%s has no array 'c'; it holds 'a', 'b'", path);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_free(want);
  weft_status_free(st);
  st = weft_tensor_read_npz(path, NULL, &t);
  want = g_strdup_printf("%s holds 2 arrays ('a', 'b'): name the one to read", path);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);

  /* A flipped byte in the deflated member: zlib or the CRC catches it. */
  GByteArray *bad = g_byte_array_new();
  g_byte_array_append(bad, g_bytes_get_data(zip, NULL), (guint)g_bytes_get_size(zip));
  gsize b_at = 30 + 5 + g_bytes_get_size(m[0].data) + 30 + 5 + 20;
  bad->data[b_at] ^= 0x55;
  GBytes *badb = g_byte_array_free_to_bytes(bad);
  char *bad_path = write_temp(dir, "bad.npz", badb);
  st = weft_tensor_read_npz(bad_path, "b", &t);
  g_assert_nonnull(st);
  g_assert_null(t);
  g_assert_true(g_str_has_prefix(weft_status_message(st), bad_path));
  weft_status_free(st);
  /* Truncated: the end record is gone. */
  GBytes *cut = g_bytes_new_from_bytes(zip, 0, g_bytes_get_size(zip) - 30);
  char *cut_path = write_temp(dir, "cut.npz", cut);
  st = weft_tensor_read_npz(cut_path, "a", &t);
  want = g_strdup_printf("%s is not a valid .npz (zip) file: no end of central directory record "
                         "(truncated?)", cut_path);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
  /* A member whose bad .npy is named as archive:member. */
  member_t m2[1] = {{"x.npy", g_bytes_new_static("\x93NUMPY\x09\x00", 8), false}};
  GBytes *z2 = zip_file(m2, 1);
  char *p2 = write_temp(dir, "x.npz", z2);
  st = weft_tensor_read_npz(p2, NULL, &t);
  want = g_strdup_printf("%s:x.npy: .npy format version 9.0 is not one Weft reads (1.0, 2.0, "
                         "3.0)", p2);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);

  for (int i = 0; i < 2; i++) g_bytes_unref(m[i].data);
  g_bytes_unref(m2[0].data);
  g_bytes_unref(zip);
  g_bytes_unref(badb);
  g_bytes_unref(cut);
  g_bytes_unref(z2);
  for (char **p = (char *[]){path, bad_path, cut_path, p2, NULL}; *p; p++) {
    g_remove(*p);
    g_free(*p);
  }
  g_rmdir(dir);
  g_free(dir);
}

/* ---- the weft tool */

static char *corpus(const char *rel) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root ? g_strdup(root)
                   : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", NULL);
  char *path = g_build_filename(dir, rel, NULL);
  g_free(dir);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    char *why = g_strdup_printf("corpus file %s not found (set WEFT_CORPUS)", path);
    g_test_skip(why);
    g_free(why);
    g_clear_pointer(&path, g_free);
  }
  return path;
}

static bool no_weft(void) {
  if (g_file_test(WEFT_EXE, G_FILE_TEST_IS_EXECUTABLE)) return false;
  g_test_skip("weft binary not built at " WEFT_EXE);
  return true;
}

static void test_cli_feed_and_output(void) {
  if (no_weft()) return;
  char *graph = corpus("tf/graphdef/multiplication.pb");
  if (!graph) return;
  char *dir = g_dir_make_tmp("weft-cli-npy-XXXXXX", NULL);
  /* a: a float64 scalar .npy (converted to the placeholder's float32, as feed_dict does);
   * b: from an .npz by the feed's name. */
  double two = 2;
  GBytes *a = npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &two, 8);
  float three = 3, nine = 9;
  char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
  member_t m[2] = {{"b.npy", npy_file(1, dict, &three, 4), true},
                   {"other.npy", npy_file(1, dict, &nine, 4), false}};
  GBytes *z = zip_file(m, 2);
  char *a_path = write_temp(dir, "a.npy", a), *z_path = write_temp(dir, "ab.npz", z);
  char *out = g_build_filename(dir, "out", NULL);
  char *fa = g_strdup_printf("a=@%s", a_path), *fb = g_strdup_printf("b=@%s", z_path);
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"run", "--graph", graph, "--feed",
                               fa, "--feed", fb, "--fetch", "c", "--fetch", "c:0", "--output",
                               out, NULL}, NULL);
  g_assert_cmpstr(r.err, ==, "");
  g_assert_cmpstr(r.out, ==, "c = float32[] 6\nc:0 = float32[] 6\n");
  g_assert_cmpint(r.exit_code, ==, 0);
  run_result_clear(&r);
  for (const char *const *f = (const char *const[]){"c.npy", "c_0.npy", NULL}; *f; f++) {
    char *p = g_build_filename(out, *f, NULL);
    weft_tensor_t *t = NULL;
    g_assert_null(weft_tensor_read_npy(p, &t));
    assert_shape(t, WEFT_DT_FLOAT, 0, NULL);
    g_assert_cmpfloat(*(float *)weft_tensor_data(t), ==, 6);
    weft_tensor_unref(t);
    g_remove(p);
    g_free(p);
  }
  /* FILE.npz:KEY picks another array. */
  char *fb2 = g_strdup_printf("b=@%s:other", z_path);
  r = run_program(WEFT_EXE, (const char *const[]){"run", "--graph", graph, "--feed", fa,
                  "--feed", fb2, "--fetch", "c", NULL}, NULL);
  g_assert_cmpstr(r.out, ==, "c = float32[] 18\n");
  run_result_clear(&r);
  /* A fractional float64 cannot feed an int32 placeholder. */
  char *int_graph = corpus("tf/graphdef/addition_int32.pb");
  if (int_graph) {
    double half = 2.5;
    GBytes *h = npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &half, 8);
    char *h_path = write_temp(dir, "half.npy", h);
    char *fx = g_strdup_printf("x=@%s", h_path);
    r = run_program(WEFT_EXE, (const char *const[]){"run", "--graph", int_graph, "--feed", fx,
                    "--feed", "y=1", "--fetch", "z", NULL}, NULL);
    char *want = g_strdup_printf("weft: error: INVALID_ARGUMENT: --feed %s: %s: element 0 of "
                                 "the float64 array, 2.5, is not a int32 value\n", fx, h_path);
    g_assert_cmpstr(r.err, ==, want);
    g_assert_cmpint(r.exit_code, ==, 1);
    g_free(want);
    run_result_clear(&r);
    g_remove(h_path);
    g_free(h_path);
    g_free(fx);
    g_bytes_unref(h);
    g_free(int_graph);
  }
  /* A malformed file: the error names the --feed and the file. */
  const guint8 f6[24] = {0};
  GBytes *fortran =
      npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f6, 24);
  char *f_path = write_temp(dir, "f.npy", fortran);
  char *ff = g_strdup_printf("a=@%s", f_path);
  r = run_program(WEFT_EXE, (const char *const[]){"run", "--graph", graph, "--feed", ff,
                  "--feed", "b=1", "--fetch", "c", NULL}, NULL);
  char *want = g_strdup_printf("weft: error: UNIMPLEMENTED: --feed %s: %s: the array is in "
                               "Fortran order (fortran_order: True); Weft reads C-order arrays: "
                               "save np.ascontiguousarray(a)\n", ff, f_path);
  g_assert_cmpstr(r.err, ==, want);
  g_assert_cmpint(r.exit_code, ==, 1);
  g_free(want);
  run_result_clear(&r);

  g_bytes_unref(a);
  g_bytes_unref(z);
  g_bytes_unref(fortran);
  for (int i = 0; i < 2; i++) g_bytes_unref(m[i].data);
  for (char **p = (char *[]){a_path, z_path, f_path, NULL}; *p; p++) {
    g_remove(*p);
    g_free(*p);
  }
  g_rmdir(out);
  g_rmdir(dir);
  g_free(out);
  g_free(dir);
  g_free(fa);
  g_free(fb);
  g_free(fb2);
  g_free(ff);
  g_free(graph);
}

/* A feed far past the kernel's 128 KiB limit on one argument, from a JSON file, and the output
 * written as .npy. */
static void test_cli_large_json_feed(void) {
  if (no_weft()) return;
  char *model = corpus("tf/saved_model/half_plus_two_cpu");
  if (!model) return;
  char *dir = g_dir_make_tmp("weft-cli-json-XXXXXX", NULL);
  GString *json = g_string_new("[");
  for (int i = 0; i < 40000; i++) g_string_append_printf(json, "%s[%d]", i ? "," : "", i);
  g_string_append_c(json, ']');
  g_assert_cmpuint(json->len, >, 128 * 1024);
  char *x = g_build_filename(dir, "x.json", NULL);
  g_assert_true(g_file_set_contents(x, json->str, (gssize)json->len, NULL));
  g_string_free(json, TRUE);
  char *feed = g_strdup_printf("inputs=@%s", x);
  char *out = g_build_filename(dir, "out", NULL);
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"run", "--saved-model", model,
                               "--signature", "regress_x2_to_y3", "--feed", feed, "--output",
                               out, "--max-elements", "3", NULL}, NULL);
  g_assert_cmpstr(r.out, ==, "outputs = float32[40000,1] [3, 3.5, 4, ...]\n");
  g_assert_cmpint(r.exit_code, ==, 0);
  run_result_clear(&r);
  char *y = g_build_filename(out, "outputs.npy", NULL);
  weft_tensor_t *t = NULL;
  g_assert_null(weft_tensor_read_npy(y, &t));
  assert_shape(t, WEFT_DT_FLOAT, 2, (int64_t[]){40000, 1});
  /* y3 = 0.5 * x + 3 */
  g_assert_cmpfloat(((float *)weft_tensor_data(t))[39999], ==, 0.5f * 39999 + 3);
  weft_tensor_unref(t);
  g_remove(y);
  g_remove(x);
  g_rmdir(out);
  g_rmdir(dir);
  g_free(y);
  g_free(x);
  g_free(out);
  g_free(dir);
  g_free(feed);
  g_free(model);
}

static void test_cli_signature_missing_input(void) {
  if (no_weft()) return;
  char *model = corpus("tf/saved_model/matrix_half_plus_two");
  if (!model) return;
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"run", "--saved-model", model,
                               "--signature", "serving_default", NULL}, NULL);
  g_assert_cmpstr(r.err, ==, "weft: error: INVALID_ARGUMENT: signature 'serving_default' needs "
                  "input 'x' (tensor x:0, float32 [-1,3,3]): feed it with --feed KEY=VALUE or "
                  "KEY=@FILE.npy\n");
  g_assert_cmpint(r.exit_code, ==, 1);
  run_result_clear(&r);
  g_free(model);
}

static JsonObject *inspect_json(const char *model, JsonParser *parser) {
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"inspect", model, "--json", NULL},
                               NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_true(json_parser_load_from_data(parser, r.out, -1, NULL));
  run_result_clear(&r);
  return json_node_get_object(json_parser_get_root(parser));
}

static void test_cli_inspect_saved_model(void) {
  if (no_weft()) return;
  char *model = corpus("tf/saved_model/half_plus_two_cpu");
  if (!model) return;
  JsonParser *parser = json_parser_new();
  JsonObject *root = inspect_json(model, parser);
  g_assert_cmpstr(json_object_get_string_member(root, "format"), ==, "saved_model");
  JsonArray *graphs = json_object_get_array_member(root, "meta_graphs");
  g_assert_cmpuint(json_array_get_length(graphs), ==, 1);
  JsonObject *mg = json_array_get_object_element(graphs, 0);
  JsonArray *tags = json_object_get_array_member(mg, "tags");
  g_assert_cmpuint(json_array_get_length(tags), ==, 1);
  g_assert_cmpstr(json_array_get_string_element(tags, 0), ==, "serve");
  JsonArray *sigs = json_object_get_array_member(mg, "signatures");
  g_assert_cmpuint(json_array_get_length(sigs), ==, 5);
  JsonObject *sd = json_array_get_object_element(sigs, 4);
  g_assert_cmpstr(json_object_get_string_member(sd, "key"), ==, "serving_default");
  g_assert_cmpstr(json_object_get_string_member(sd, "method"), ==, "tensorflow/serving/predict");
  JsonObject *in = json_array_get_object_element(json_object_get_array_member(sd, "inputs"), 0);
  g_assert_cmpstr(json_object_get_string_member(in, "key"), ==, "x");
  g_assert_cmpstr(json_object_get_string_member(in, "name"), ==, "x:0");
  g_assert_cmpstr(json_object_get_string_member(in, "dtype"), ==, "float32");
  JsonArray *shape = json_object_get_array_member(in, "shape");
  g_assert_cmpuint(json_array_get_length(shape), ==, 2);
  g_assert_cmpint(json_array_get_int_element(shape, 0), ==, -1);
  g_assert_cmpint(json_array_get_int_element(shape, 1), ==, 1);
  JsonObject *ex = json_array_get_object_element(
      json_object_get_array_member(json_array_get_object_element(sigs, 0), "inputs"), 0);
  g_assert_cmpstr(json_object_get_string_member(ex, "name"), ==, "tf_example:0");
  g_assert_cmpstr(json_object_get_string_member(ex, "dtype"), ==, "string");
  g_assert_true(JSON_NODE_HOLDS_NULL(json_object_get_member(ex, "shape")));
  JsonArray *vars = json_object_get_array_member(mg, "variables");
  g_assert_cmpuint(json_array_get_length(vars), ==, 6);
  JsonObject *va = json_array_get_object_element(vars, 0);
  g_assert_cmpstr(json_object_get_string_member(va, "name"), ==, "a");
  g_assert_cmpstr(json_object_get_string_member(va, "op"), ==, "VariableV2");
  g_assert_cmpstr(json_object_get_string_member(va, "dtype"), ==, "float32");
  g_assert_cmpuint(json_array_get_length(json_object_get_array_member(va, "shape")), ==, 0);
  g_assert_cmpint(json_object_get_int_member(mg, "num_nodes"), ==, 74);
  JsonObject *ops = json_object_get_object_member(mg, "ops");
  g_assert_cmpint(json_object_get_int_member(ops, "Const"), ==, 22);
  g_assert_cmpint(json_object_get_int_member(ops, "VariableV2"), ==, 6);
  g_assert_cmpint(json_object_get_int_member(ops, "ParseExample"), ==, 1);
  /* SaveV2 is not a Weft op, whatever the plugins; Mul and ParseExample have CPU kernels. */
  JsonArray *missing = json_object_get_array_member(mg, "ops_without_kernel");
  bool save_v2 = false, mul = false, parse_example = false;
  for (guint i = 0; i < json_array_get_length(missing); i++) {
    JsonObject *o = json_array_get_object_element(missing, i);
    const char *op = json_object_get_string_member(o, "op");
    if (strcmp(op, "SaveV2") == 0) {
      save_v2 = true;
      g_assert_cmpstr(json_object_get_string_member(o, "node"), ==, "save/SaveV2");
      g_assert_cmpstr(json_object_get_string_member(o, "reason"), ==, "no such op in Weft");
    }
    if (strcmp(op, "Mul") == 0) mul = true;
    if (strcmp(op, "ParseExample") == 0) parse_example = true;
  }
  g_assert_true(save_v2);
  g_assert_false(mul);
  g_assert_false(parse_example);
  g_object_unref(parser);

  /* The text form lists the same. */
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"inspect", model, NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_nonnull(strstr(r.out, "MetaGraphDef with tag-set: 'serve'\n"));
  g_assert_nonnull(strstr(r.out, "    'serving_default' (method tensorflow/serving/predict)\n"
                                 "      input  'x': x:0  float32 [-1,1]\n"
                                 "      output 'y': y:0  float32 [-1,1]\n"));
  g_assert_nonnull(strstr(r.out, "    a  float32 []  (VariableV2)\n"));
  g_assert_nonnull(strstr(r.out, "    SaveV2  (1 node, e.g. save/SaveV2): no such op in Weft\n"));
  run_result_clear(&r);
  g_free(model);
}

static void test_cli_inspect_graphdef(void) {
  if (no_weft()) return;
  char *graph = corpus("tf/graphdef/multiplication.pb");
  if (!graph) return;
  JsonParser *parser = json_parser_new();
  JsonObject *root = inspect_json(graph, parser);
  g_assert_cmpstr(json_object_get_string_member(root, "format"), ==, "graphdef");
  JsonObject *mg =
      json_array_get_object_element(json_object_get_array_member(root, "meta_graphs"), 0);
  g_assert_cmpuint(json_array_get_length(json_object_get_array_member(mg, "signatures")), ==, 0);
  JsonArray *ph = json_object_get_array_member(mg, "placeholders");
  g_assert_cmpuint(json_array_get_length(ph), ==, 2);
  g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(ph, 0), "name"),
                  ==, "a");
  g_assert_cmpstr(json_object_get_string_member(json_array_get_object_element(ph, 1), "dtype"),
                  ==, "float32");
  g_assert_cmpint(json_object_get_int_member(mg, "num_nodes"), ==, 3);
  g_assert_cmpint(json_object_get_int_member(json_object_get_object_member(mg, "ops"), "Mul"),
                  ==, 1);
  g_assert_cmpuint(json_array_get_length(json_object_get_array_member(mg, "ops_without_kernel")),
                   ==, 0);
  g_object_unref(parser);
  /* Not a model: exit 1 naming it. */
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"inspect", "/nonexistent", NULL},
                               NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  g_assert_true(g_str_has_prefix(r.err, "weft: error: NOT_FOUND: inspect /nonexistent: cannot "
                                        "read /nonexistent: "));
  run_result_clear(&r);
  g_free(graph);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/npy/read/float32_v1", test_read_float32_v1);
  g_test_add_func("/npy/read/big_endian_v2", test_read_big_endian_v2);
  g_test_add_func("/npy/read/v3_and_dtypes", test_read_v3_and_dtypes);
  g_test_add_func("/npy/read/strings", test_read_strings);
  g_test_add_func("/npy/read/malformed", test_malformed);
  g_test_add_func("/npy/write", test_write_layout_and_round_trip);
  g_test_add_func("/npy/npz", test_npz);
  g_test_add_func("/npy/cli/feed_and_output", test_cli_feed_and_output);
  g_test_add_func("/npy/cli/large_json_feed", test_cli_large_json_feed);
  g_test_add_func("/npy/cli/signature_missing_input", test_cli_signature_missing_input);
  g_test_add_func("/npy/cli/inspect_saved_model", test_cli_inspect_saved_model);
  g_test_add_func("/npy/cli/inspect_graphdef", test_cli_inspect_graphdef);
  return g_test_run();
}
