/* The image codec ops (plugins/cpu/cpu_codec.c) on hostile input: valid PNG, JPEG (baseline and
 * progressive), GIF and BMP files cut at every length and with bits flipped (a fixed LCG, so the
 * run is deterministic), huge declared sizes, fed to every decoder; each run must give an image
 * or INVALID_ARGUMENT, never a crash, an abort or (under the sanitizer build) a leak or a bad
 * read. Pixel values and TensorFlow's messages are checked by python/tests/test_image_codecs.py. */
#include <glib.h>
#include <string.h>

#include "weft/weft.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    weft_status_t *st_ = (expr);                                                   \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                   \
  } while (0)

/* An animated GIF (4x3 canvas, a full frame then a 2x2 one at (1, 1)), built by the Python
 * test's gif_file. */
static const guint8 k_gif[] = {
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x04, 0x00, 0x03, 0x00, 0x81, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0x00, 0x00, 0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
    0x03, 0x00, 0x00, 0x02, 0x0a, 0x0c, 0x43, 0x51, 0x1c, 0x47, 0x10, 0x0c, 0xc5, 0x11, 0x05, 0x00,
    0x2c, 0x01, 0x00, 0x01, 0x00, 0x02, 0x00, 0x02, 0x00, 0x00, 0x02, 0x04, 0x04, 0x47, 0x31, 0x05,
    0x00, 0x3b,
};

/* A 3x2 24-bit bottom-up BMP, built by the Python test's bmp_file. */
static const guint8 k_bmp[] = {
    0x42, 0x4d, 0x4e, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x36, 0x00, 0x00, 0x00, 0x28, 0x00,
    0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x18, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x18, 0x00, 0x00, 0x00, 0x13, 0x0b, 0x00, 0x00, 0x13, 0x0b, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1e, 0x14, 0x0a, 0x32, 0x64, 0xc8, 0xff, 0xff, 0xff, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xff, 0x00, 0xff, 0x00, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00,
};

/* A graph with one string placeholder "p" and one decoder per fetch. */
typedef struct {
  weft_graph_t *g;
  weft_session_t *s;
  GPtrArray *fetches;
} rig_t;

static weft_op_builder_t *decoder(rig_t *r, const char *op, weft_output_t p) {
  char *name = g_strdup_printf("d%u", r->fetches->len);
  weft_op_builder_t *b = weft_op_new(r->g, op, name);
  weft_op_add_input(b, p);
  g_ptr_array_add(r->fetches, g_strdup_printf("%s:0", name));
  g_free(name);
  return b;
}

static void rig_init(rig_t *r) {
  weft_status_t *st = NULL;
  r->g = weft_graph_new();
  r->fetches = g_ptr_array_new_with_free_func(g_free);
  weft_output_t p = weft_placeholder(r->g, "p", WEFT_DT_STRING, 0, NULL, &st);
  OK(st);
  weft_node_t *n;
  OK(weft_op_finish(decoder(r, "DecodeImage", p), &n));
  weft_op_builder_t *b = decoder(r, "DecodeImage", p);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_op_set_attr_bool(b, "expand_animations", false);
  OK(weft_op_finish(b, &n));
  b = decoder(r, "DecodeJpeg", p);
  weft_op_set_attr_bool(b, "try_recover_truncated", true);
  weft_op_set_attr_float(b, "acceptable_fraction", 0.25f);
  weft_op_set_attr_int(b, "ratio", 2);
  OK(weft_op_finish(b, &n));
  b = decoder(r, "DecodeJpeg", p);
  weft_op_set_attr_int(b, "channels", 1);
  weft_op_set_attr_string(b, "dct_method", "INTEGER_ACCURATE");
  OK(weft_op_finish(b, &n));
  int32_t win[4] = {1, 3, 6, 9};
  int64_t four = 4;
  weft_tensor_t *wt = weft_tensor_new_from_data(WEFT_DT_INT32, 1, &four, win, sizeof win, &st);
  OK(st);
  weft_output_t w = weft_const(r->g, "win", wt, &st);
  OK(st);
  weft_tensor_unref(wt);
  b = decoder(r, "DecodeAndCropJpeg", p);
  weft_op_add_input(b, w);
  OK(weft_op_finish(b, &n));
  b = decoder(r, "DecodePng", p);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_UINT16);
  weft_op_set_attr_int(b, "channels", 4);
  OK(weft_op_finish(b, &n));
  OK(weft_op_finish(decoder(r, "DecodeGif", p), &n));
  OK(weft_op_finish(decoder(r, "DecodeBmp", p), &n));
  OK(weft_op_finish(decoder(r, "ExtractJpegShape", p), &n));
  r->s = weft_session_new(r->g, NULL, &st);
  OK(st);
}

static void rig_free(rig_t *r) {
  weft_session_free(r->s);
  weft_graph_free(r->g);
  g_ptr_array_free(r->fetches, TRUE);
}

static int g_ok, g_invalid;

/* Every decoder of the rig on `data`: an output or INVALID_ARGUMENT. */
static void feed_all(rig_t *r, const guint8 *data, size_t len) {
  weft_tensor_t *in = weft_tensor_new_string((const char *)data, len);
  const char *feed = "p";
  for (guint i = 0; i < r->fetches->len; i++) {
    const char *fetch = r->fetches->pdata[i];
    weft_tensor_t *out = NULL;
    weft_status_t *st = weft_session_run(r->s, &feed, &in, 1, &fetch, &out, 1, NULL, 0);
    if (st) {
      if (weft_status_code(st) != WEFT_INVALID_ARGUMENT)
        g_error("%s on %zu bytes: %s: %s", fetch, len, weft_code_name(weft_status_code(st)),
                weft_status_message(st));
      weft_status_free(st);
      g_invalid++;
    } else {
      weft_tensor_unref(out);
      g_ok++;
    }
  }
  weft_tensor_unref(in);
}

/* An encoded image from EncodePng / EncodeJpeg of a smooth h x w x c picture. */
static GBytes *encode(const char *op, int64_t h, int64_t w, int64_t c, bool progressive) {
  weft_status_t *st = NULL;
  weft_graph_t *g = weft_graph_new();
  int64_t dims[3] = {h, w, c};
  guint8 *px = g_malloc((gsize)(h * w * c));
  for (int64_t i = 0; i < h; i++)
    for (int64_t j = 0; j < w; j++)
      for (int64_t k = 0; k < c; k++) px[(i * w + j) * c + k] = (guint8)(i * 7 + j * 3 + k * 50);
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_UINT8, 3, dims, px, (size_t)(h * w * c),
                                               &st);
  OK(st);
  weft_output_t img = weft_const(g, "img", t, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, op, "enc");
  weft_op_add_input(b, img);
  if (progressive) weft_op_set_attr_bool(b, "progressive", true);
  weft_node_t *n;
  OK(weft_op_finish(b, &n));
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch = "enc:0";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  const weft_string_t *str = weft_tensor_data(out);
  GBytes *bytes = g_bytes_new(str->data, str->len);
  weft_tensor_unref(out);
  weft_tensor_unref(t);
  g_free(px);
  weft_session_free(s);
  weft_graph_free(g);
  return bytes;
}

/* zlib's CRC-32 (PNG chunks), bit by bit: only a few bytes go through it. */
static guint32 crc32_of(const guint8 *p, size_t n) {
  guint32 c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

static guint32 g_lcg = 12345;
static guint32 lcg(void) {
  g_lcg = g_lcg * 1103515245u + 12345u;
  return g_lcg >> 8;
}

static void fuzz_file(rig_t *r, const guint8 *data, size_t len) {
  feed_all(r, data, len);
  /* Every prefix of a small file; a spread of prefixes of a larger one. */
  size_t step = len <= 160 ? 1 : len / 97;
  for (size_t k = 0; k < len; k += step) feed_all(r, data, k);
  guint8 *copy = g_memdup2(data, len);
  for (int round = 0; round < 120; round++) {
    memcpy(copy, data, len);
    int flips = 1 + (int)(lcg() % 3);
    for (int f = 0; f < flips; f++) copy[lcg() % len] ^= (guint8)(1u << (lcg() % 8));
    feed_all(r, copy, len);
  }
  g_free(copy);
}

static void test_fuzz(void) {
  rig_t r;
  rig_init(&r);
  GBytes *files[] = {
      encode("EncodePng", 6, 5, 3, false), encode("EncodePng", 4, 4, 4, false),
      encode("EncodeJpeg", 24, 33, 3, false), encode("EncodeJpeg", 17, 20, 3, true),
      encode("EncodeJpeg", 9, 16, 1, false),
      g_bytes_new_static(k_gif, sizeof k_gif), g_bytes_new_static(k_bmp, sizeof k_bmp),
  };
  for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
    size_t len;
    const guint8 *d = g_bytes_get_data(files[i], &len);
    fuzz_file(&r, d, len);
    g_bytes_unref(files[i]);
  }
  g_test_message("%d decodes, %d refused", g_ok, g_invalid);
  g_assert_cmpint(g_ok, >, 0);
  g_assert_cmpint(g_invalid, >, 0);
  rig_free(&r);
}

/* Files whose headers claim sizes far past TensorFlow's limits: refused before allocating. */
static void test_huge_sizes(void) {
  rig_t r;
  rig_init(&r);
  int before = g_ok;
  /* BMP: 100000 x -100000 (top-down). */
  guint8 bmp[sizeof k_bmp];
  memcpy(bmp, k_bmp, sizeof bmp);
  const guint8 dims[8] = {0xa0, 0x86, 0x01, 0x00, 0x60, 0x79, 0xfe, 0xff};
  memcpy(bmp + 18, dims, 8);
  feed_all(&r, bmp, sizeof bmp);
  /* GIF: a 65535 x 65535 canvas and frame. */
  guint8 gif[sizeof k_gif];
  memcpy(gif, k_gif, sizeof gif);
  gif[6] = gif[7] = gif[8] = gif[9] = 0xff;
  size_t desc = 6 + 7 + 3 * 4; /* header, screen descriptor, 4-colour palette */
  g_assert_cmpint(gif[desc], ==, 0x2c);
  memset(gif + desc + 5, 0xff, 4);
  feed_all(&r, gif, sizeof gif);
  /* JPEG: SOF0 claiming 65000 x 65000. */
  GBytes *jpeg = encode("EncodeJpeg", 8, 8, 3, false);
  size_t len;
  const guint8 *jd = g_bytes_get_data(jpeg, &len); /* len set before g_memdup2 reads it */
  guint8 *j = g_memdup2(jd, len);
  for (size_t i = 0; i + 9 < len; i++) {
    if (j[i] == 0xff && j[i + 1] == 0xc0) {
      j[i + 5] = j[i + 7] = 0xfd;
      j[i + 6] = j[i + 8] = 0xe8;
      break;
    }
  }
  feed_all(&r, j, len);
  /* PNG: IHDR claiming 2^31-1 x 2^31-1 (the CRC recomputed, so only the size is wrong). */
  GBytes *png = encode("EncodePng", 2, 2, 3, false);
  const guint8 *pd = g_bytes_get_data(png, &len);
  guint8 *p = g_memdup2(pd, len);
  memset(p + 16, 0x7f, 1);
  memset(p + 17, 0xff, 3);
  memset(p + 20, 0x7f, 1);
  memset(p + 21, 0xff, 3);
  guint32 crc = crc32_of(p + 12, 17);
  p[29] = (guint8)(crc >> 24), p[30] = (guint8)(crc >> 16), p[31] = (guint8)(crc >> 8),
  p[32] = (guint8)crc;
  feed_all(&r, p, len);
  /* ExtractJpegShape reads the JPEG's claim; everything else refused. */
  g_assert_cmpint(g_ok - before, ==, 1);
  g_free(j);
  g_free(p);
  g_bytes_unref(jpeg);
  g_bytes_unref(png);
  rig_free(&r);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/codec/fuzz", test_fuzz);
  g_test_add_func("/codec/huge_sizes", test_huge_sizes);
  return g_test_run();
}
