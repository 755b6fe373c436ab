/* Summaries and event files (docs/tensorboard.md): the summary ops' serialized Summary protobufs
 * checked byte by byte and field by field against TensorFlow's summary.proto numbers, their
 * errors, ImageSummary's PNGs decoded with libpng; the event writer and reader round trip, a
 * corrupted crc reported with its offset, a record cut short; the monitored session writing the graph with its placement, the summaries,
 * global_step/sec and SessionLog START after a restore. */
#include <float.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <png.h>
#include <string.h>

#include "process_util.h"
#include "weft/weft.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    weft_status_t *st_ = (expr);                                                   \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                   \
  } while (0)

static void expect_error(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  if (weft_status_code(st) != code || !strstr(weft_status_message(st), message)) {
    g_error("expected %s with '%s', got %s: %s", weft_code_name(code), message,
            weft_code_name(weft_status_code(st)), weft_status_message(st));
  }
  weft_status_free(st);
}

static char *tmpdir(void) {
  return test_tmpdir("weft-summary-XXXXXX");
}

/* The one events.out.tfevents.* file of `dir` (asserts there is exactly one). */
static char *event_file_in(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  char *found = NULL;
  const char *name;
  while ((name = g_dir_read_name(d))) {
    if (!g_str_has_prefix(name, "events.out.tfevents.")) continue;
    g_assert_null(found);
    found = g_build_filename(dir, name, NULL);
  }
  g_dir_close(d);
  g_assert_nonnull(found);
  return found;
}

/* Every record of `path`, decoded. */
static GPtrArray *read_events(const char *path) {
  GPtrArray *events = g_ptr_array_new_with_free_func((GDestroyNotify)weft_event_free);
  weft_event_reader_t *r = NULL;
  OK(weft_event_reader_open(path, &r));
  for (;;) {
    const void *data;
    size_t len;
    bool eof;
    OK(weft_event_reader_next(r, &data, &len, &eof));
    if (eof) break;
    weft_event_t *e = NULL;
    OK(weft_event_decode(data, len, &e));
    g_ptr_array_add(events, e);
  }
  weft_event_reader_free(r);
  return events;
}

/* ---------------------------------------------------------------------------------------------
 * The ops */

/* ImageSummary's max_images for run_summary_op (0: the default). */
static int64_t g_max_images;

/* Runs op `op` on fed inputs (placeholders of the tensors' dtypes) and returns its output's one
 * string, or NULL with *err set. */
static GBytes *run_summary_op(const char *op, weft_tensor_t *const *inputs, int n,
                              bool list_input, weft_status_t **err) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t *ph = g_new(weft_output_t, n);
  const char **names = g_new(const char *, n);
  for (int i = 0; i < n; i++) {
    char *name = g_strdup_printf("in%d", i);
    int64_t dims[8];
    int rank = weft_tensor_rank(inputs[i]);
    for (int k = 0; k < rank; k++) dims[k] = weft_tensor_dims(inputs[i])[k];
    ph[i] = weft_placeholder(g, name, weft_tensor_dtype(inputs[i]), rank, dims, &st);
    OK(st);
    names[i] = weft_node_name(ph[i].node);
    g_free(name);
  }
  weft_op_builder_t *b = weft_op_new(g, op, "s");
  if (list_input) {
    weft_op_add_input_list(b, ph, n);
  } else {
    for (int i = 0; i < n; i++) weft_op_add_input(b, ph[i]);
  }
  if (!list_input && n > 1 && strcmp(op, "MergeSummary") != 0)
    weft_op_set_attr_type(b, "T", weft_tensor_dtype(inputs[1]));
  if (g_max_images > 0) weft_op_set_attr_int(b, "max_images", g_max_images);
  weft_node_t *node = NULL;
  OK(weft_op_finish(b, &node));
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch = "s:0";
  weft_tensor_t *out = NULL;
  *err = weft_session_run(s, names, inputs, n, &fetch, &out, 1, NULL, 0);
  GBytes *bytes = NULL;
  if (!*err) {
    g_assert_cmpint(weft_tensor_dtype(out), ==, WEFT_DT_STRING);
    g_assert_cmpint(weft_tensor_rank(out), ==, 0);
    const weft_string_t *str = weft_tensor_data(out);
    bytes = g_bytes_new(str[0].data, str[0].len);
    weft_tensor_unref(out);
  }
  weft_session_free(s);
  weft_graph_free(g);
  g_free(ph);
  g_free(names);
  return bytes;
}

static weft_tensor_t *strings(int n, const char *const *values) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = n < 0 ? weft_tensor_new_string(values[0], strlen(values[0]))
                           : weft_tensor_new(WEFT_DT_STRING, 1, dims);
  for (int i = 0; i < n; i++) OK(weft_tensor_set_string(t, i, values[i], strlen(values[i])));
  return t;
}

static weft_tensor_t *floats(int n, const float *values) {
  int64_t dims[1] = {n};
  if (n < 0) return weft_tensor_new_from_data(WEFT_DT_FLOAT, 0, NULL, values, 4, NULL);
  return weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, values, (size_t)n * 4, NULL);
}

static void assert_bytes(GBytes *got, const guint8 *want, size_t n) {
  size_t len = 0;
  const guint8 *data = g_bytes_get_data(got, &len);
  g_assert_cmpmem(data, len, want, n);
}

static void test_scalar_summary(void) {
  const char *tags[2] = {"loss", "acc"};
  float values[2] = {1.5f, 0.25f};
  weft_tensor_t *in[2] = {strings(2, tags), floats(2, values)};
  weft_status_t *st = NULL;
  GBytes *got = run_summary_op("ScalarSummary", in, 2, false, &st);
  OK(st);
  /* Summary{value{tag:"loss" simple_value:1.5} value{tag:"acc" simple_value:0.25}}: field 1
   * (0x0a) length-delimited; tag field 1 (0x0a), simple_value field 2 fixed32 (0x15). */
  const guint8 want[] = {0x0a, 0x0b, 0x0a, 0x04, 'l', 'o', 's', 's', 0x15, 0x00, 0x00, 0xc0, 0x3f,
                         0x0a, 0x0a, 0x0a, 0x03, 'a', 'c', 'c', 0x15, 0x00, 0x00, 0x80, 0x3e};
  assert_bytes(got, want, sizeof want);
  weft_summary_value_info_t *v = NULL;
  int n = 0;
  size_t len;
  const void *data = g_bytes_get_data(got, &len);
  OK(weft_summary_decode(data, len, &v, &n));
  g_assert_cmpint(n, ==, 2);
  g_assert_cmpstr(v[1].tag, ==, "acc");
  g_assert_cmpint(v[1].kind, ==, WEFT_SUMMARY_SIMPLE_VALUE);
  g_assert_cmpfloat(v[1].simple_value, ==, 0.25f);
  weft_summary_values_free(v, n);
  g_bytes_unref(got);
  weft_tensor_unref(in[0]);
  weft_tensor_unref(in[1]);

  /* TensorFlow's shape check, naming the tag when it is a scalar. */
  float three[3] = {1, 2, 3};
  const char *one[1] = {"x"};
  weft_tensor_t *bad[2] = {strings(-1, one), floats(3, three)};
  g_assert_null(run_summary_op("ScalarSummary", bad, 2, false, &st));
  expect_error(st, WEFT_INVALID_ARGUMENT,
               "tags and values are not the same shape: [] != [3] (tag 'x')");
  weft_tensor_unref(bad[0]);
  weft_tensor_unref(bad[1]);
}

/* TensorFlow's default limits, computed here the way histogram.cc describes them. */
static GArray *reference_limits(void) {
  GArray *pos = g_array_new(FALSE, FALSE, sizeof(double));
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) g_array_append_val(pos, v);
  GArray *all = g_array_new(FALSE, FALSE, sizeof(double));
  double x = -DBL_MAX;
  g_array_append_val(all, x);
  for (int i = (int)pos->len - 1; i >= 0; i--) {
    x = -g_array_index(pos, double, i);
    g_array_append_val(all, x);
  }
  x = 0;
  g_array_append_val(all, x);
  g_array_append_vals(all, pos->data, pos->len);
  x = DBL_MAX;
  g_array_append_val(all, x);
  g_array_free(pos, TRUE);
  return all;
}

static void test_histogram_summary(void) {
  const char *tag[1] = {"w"};
  float values[5] = {1.0f, 2.0f, -3.0f, 0.0f, 2.0f};
  weft_tensor_t *in[2] = {strings(-1, tag), floats(5, values)};
  weft_status_t *st = NULL;
  GBytes *got = run_summary_op("HistogramSummary", in, 2, false, &st);
  OK(st);
  size_t len;
  const void *data = g_bytes_get_data(got, &len);
  weft_summary_value_info_t *v = NULL;
  int n = 0;
  OK(weft_summary_decode(data, len, &v, &n));
  g_assert_cmpint(n, ==, 1);
  g_assert_cmpstr(v[0].tag, ==, "w");
  g_assert_cmpint(v[0].kind, ==, WEFT_SUMMARY_HISTO);
  g_assert_cmpfloat(v[0].histo_min, ==, -3.0);
  g_assert_cmpfloat(v[0].histo_max, ==, 2.0);
  g_assert_cmpfloat(v[0].histo_num, ==, 5.0);
  g_assert_cmpfloat(v[0].histo_sum, ==, 2.0);
  g_assert_cmpfloat(v[0].histo_sum_squares, ==, 18.0);
  /* Reference: each value counted in the bucket of the first limit above it, runs of empty
   * buckets collapsed to one entry carrying the run's last limit. */
  GArray *lim = reference_limits();
  g_assert_cmpint(lim->len, ==, 1551); /* 774 limits a side, +-DBL_MAX and 0 */
  double *counts = g_new0(double, lim->len);
  for (int i = 0; i < 5; i++) {
    guint k = 0;
    while (g_array_index(lim, double, k) <= values[i]) k++;
    counts[k] += 1;
  }
  GArray *want_l = g_array_new(FALSE, FALSE, sizeof(double));
  GArray *want_c = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < lim->len;) {
    double end = g_array_index(lim, double, i), c = counts[i];
    i++;
    if (c == 0)
      while (i < lim->len && counts[i] == 0) end = g_array_index(lim, double, i++);
    g_array_append_val(want_l, end);
    g_array_append_val(want_c, c);
  }
  g_assert_cmpint(v[0].n_bucket_limits, ==, (int)want_l->len);
  g_assert_cmpint(v[0].n_buckets, ==, (int)want_c->len);
  for (guint i = 0; i < want_l->len; i++) {
    g_assert_cmpfloat(v[0].bucket_limit[i], ==, g_array_index(want_l, double, i));
    g_assert_cmpfloat(v[0].bucket[i], ==, g_array_index(want_c, double, i));
  }
  g_array_free(want_l, TRUE);
  g_array_free(want_c, TRUE);
  g_free(counts);
  g_array_free(lim, TRUE);
  weft_summary_values_free(v, n);
  g_bytes_unref(got);
  weft_tensor_unref(in[1]);

  float nan_values[2] = {1.0f, NAN};
  in[1] = floats(2, nan_values);
  g_assert_null(run_summary_op("HistogramSummary", in, 2, false, &st));
  expect_error(st, WEFT_INVALID_ARGUMENT, "Nan in summary histogram for: s");
  weft_tensor_unref(in[1]);
  float inf_values[1] = {INFINITY};
  in[1] = floats(1, inf_values);
  g_assert_null(run_summary_op("HistogramSummary", in, 2, false, &st));
  expect_error(st, WEFT_INVALID_ARGUMENT, "Infinity in summary histogram for: s");
  weft_tensor_unref(in[1]);
  weft_tensor_unref(in[0]);
}

static void test_tensor_summary_and_merge(void) {
  const char *tag[1] = {"notes"};
  const char *text[2] = {"hello", "world"};
  /* SummaryMetadata{plugin_data{plugin_name:"text"}} */
  const char meta_bytes[] = {0x0a, 0x06, 0x0a, 0x04, 't', 'e', 'x', 't', 0};
  const char *meta[1] = {meta_bytes};
  weft_tensor_t *in[3] = {strings(-1, tag), strings(2, text), strings(-1, meta)};
  weft_status_t *st = NULL;
  GBytes *got = run_summary_op("TensorSummaryV2", in, 3, false, &st);
  OK(st);
  /* Summary{value{tag:"notes" tensor{dtype:DT_STRING(7) tensor_shape{dim{size:2}}
   * string_val:"hello" string_val:"world"} metadata{...}}} */
  const guint8 want[] = {0x0a, 0x29, 0x0a, 0x05, 'n', 'o', 't', 'e', 's',
                         0x42, 0x16, 0x08, 0x07, 0x12, 0x04, 0x12, 0x02, 0x08, 0x02,
                         0x42, 0x05, 'h', 'e', 'l', 'l', 'o', 0x42, 0x05, 'w', 'o', 'r', 'l', 'd',
                         0x4a, 0x08, 0x0a, 0x06, 0x0a, 0x04, 't', 'e', 'x', 't'};
  assert_bytes(got, want, sizeof want);
  size_t len;
  const void *data = g_bytes_get_data(got, &len);
  weft_summary_value_info_t *v = NULL;
  int n = 0;
  OK(weft_summary_decode(data, len, &v, &n));
  g_assert_cmpint(n, ==, 1);
  g_assert_cmpint(v[0].kind, ==, WEFT_SUMMARY_TENSOR);
  g_assert_cmpstr(v[0].plugin_name, ==, "text");
  weft_summary_values_free(v, n);

  /* MergeSummary concatenates the values of its inputs, in order. */
  const char *tags[1] = {"loss"};
  float one[1] = {3.0f};
  weft_tensor_t *sin[2] = {strings(1, tags), floats(1, one)};
  GBytes *scalar = run_summary_op("ScalarSummary", sin, 2, false, &st);
  OK(st);
  weft_tensor_t *parts[2] = {weft_tensor_new_string(g_bytes_get_data(scalar, NULL),
                                                    g_bytes_get_size(scalar)),
                             weft_tensor_new_string(data, len)};
  GBytes *merged = run_summary_op("MergeSummary", parts, 2, true, &st);
  OK(st);
  GByteArray *want_merged = g_byte_array_new();
  g_byte_array_append(want_merged, g_bytes_get_data(scalar, NULL),
                      (guint)g_bytes_get_size(scalar));
  g_byte_array_append(want_merged, data, (guint)len);
  assert_bytes(merged, want_merged->data, want_merged->len);
  g_byte_array_free(want_merged, TRUE);
  g_bytes_unref(merged);

  /* The same tag twice: TensorFlow's error. */
  weft_tensor_t *dup[2] = {parts[0], parts[0]};
  g_assert_null(run_summary_op("MergeSummary", dup, 2, true, &st));
  expect_error(st, WEFT_INVALID_ARGUMENT, "Duplicate tag loss found in summary inputs");
  weft_tensor_t *junk[1] = {weft_tensor_new_string("\xff", 1)};
  g_assert_null(run_summary_op("MergeSummary", junk, 1, true, &st));
  expect_error(st, WEFT_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
  weft_tensor_unref(junk[0]);
  weft_tensor_unref(parts[0]);
  weft_tensor_unref(parts[1]);
  weft_tensor_unref(sin[0]);
  weft_tensor_unref(sin[1]);
  g_bytes_unref(scalar);
  g_bytes_unref(got);
  for (int i = 0; i < 3; i++) weft_tensor_unref(in[i]);
}

/* The pixels of PNG `png` (g_free), checking its size and channels. */
static guint8 *decode_png(const guint8 *png, size_t len, int w, int h, int channels) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  g_assert_true(png_image_begin_read_from_memory(&img, png, len));
  g_assert_cmpint(img.width, ==, w);
  g_assert_cmpint(img.height, ==, h);
  g_assert_cmpint(PNG_IMAGE_PIXEL_CHANNELS(img.format), ==, channels);
  guint8 *pixels = g_malloc(PNG_IMAGE_SIZE(img));
  g_assert_true(png_image_finish_read(&img, NULL, pixels, 0, NULL));
  return pixels;
}

/* The PNG of Summary value `k` (field 1 -> value, field 4 -> image, field 4 -> PNG bytes), found
 * by walking the wire format here rather than through Weft's decoder. */
static const guint8 *value_png(GBytes *summary, int k, size_t *len, char **tag) {
  size_t n;
  const guint8 *p = g_bytes_get_data(summary, &n), *end = p + n;
  for (int i = 0; p < end; i++) {
    g_assert_cmpint(p[0], ==, 0x0a);
    size_t vlen = p[1];
    int hdr = 2;
    if (vlen & 0x80) {
      vlen = (vlen & 0x7f) | ((size_t)p[2] << 7);
      hdr = 3;
      g_assert_cmpint(p[2] & 0x80, ==, 0);
    }
    const guint8 *v = p + hdr, *vend = v + vlen;
    p = vend;
    if (i != k) continue;
    g_assert_cmpint(v[0], ==, 0x0a); /* tag */
    *tag = g_strndup((const char *)v + 2, v[1]);
    v += 2 + v[1];
    g_assert_cmpint(v[0], ==, 0x22); /* image, field 4 */
    v += 2 + ((v[1] & 0x80) ? 1 : 0);
    /* height(1), width(2), colorspace(3): one-byte varints here */
    g_assert_cmpint(v[0], ==, 0x08);
    g_assert_cmpint(v[2], ==, 0x10);
    g_assert_cmpint(v[4], ==, 0x18);
    v += 6;
    g_assert_cmpint(v[0], ==, 0x22); /* encoded_image_string, field 4 */
    *len = v[1];
    int h2 = 2;
    if (v[1] & 0x80) {
      *len = (v[1] & 0x7f) | ((size_t)v[2] << 7);
      h2 = 3;
    }
    g_assert_true(v + h2 + *len <= vend);
    return v + h2;
  }
  g_assert_not_reached();
  return NULL;
}

static void test_image_summary(void) {
  const char *tag[1] = {"img"};
  /* Two 2x2 grey uint8 images: max_images 3 gives both, tagged img/image/0 and /1, as they are. */
  guint8 u8[8] = {0, 50, 100, 255, 7, 8, 9, 10};
  int64_t dims[4] = {2, 2, 2, 1};
  weft_tensor_t *in[2] = {strings(-1, tag),
                          weft_tensor_new_from_data(WEFT_DT_UINT8, 4, dims, u8, 8, NULL)};
  weft_status_t *st = NULL;
  GBytes *got = run_summary_op("ImageSummary", in, 2, false, &st);
  OK(st);
  weft_summary_value_info_t *v = NULL;
  int n = 0;
  OK(weft_summary_decode(g_bytes_get_data(got, NULL), g_bytes_get_size(got), &v, &n));
  g_assert_cmpint(n, ==, 2);
  g_assert_cmpstr(v[1].tag, ==, "img/image/1");
  g_assert_cmpint(v[1].kind, ==, WEFT_SUMMARY_IMAGE);
  g_assert_cmpint(v[1].image_width, ==, 2);
  g_assert_cmpint(v[1].image_height, ==, 2);
  g_assert_cmpint(v[1].image_colorspace, ==, 1);
  weft_summary_values_free(v, n);
  for (int k = 0; k < 2; k++) {
    size_t len;
    char *t = NULL;
    const guint8 *png = value_png(got, k, &len, &t);
    char *want_tag = g_strdup_printf("img/image/%d", k);
    g_assert_cmpstr(t, ==, want_tag);
    guint8 *px = decode_png(png, len, 2, 2, 1);
    g_assert_cmpmem(px, 4, u8 + 4 * k, 4);
    g_free(px);
    g_free(t);
    g_free(want_tag);
  }
  g_bytes_unref(got);
  weft_tensor_unref(in[1]);

  /* float with negative values: centred at 128, scaled by 127 / max |v|, truncated; a NaN pixel
   * takes bad_color's first channel (255). All >= 0: scaled by 255 / max. max_images 1: one
   * image tagged img/image. */
  float f[8] = {-1.0f, 0.5f, NAN, 1.0f, 0.0f, 0.5f, 1.0f, 2.0f};
  in[1] = weft_tensor_new_from_data(WEFT_DT_FLOAT, 4, dims, f, sizeof f, NULL);
  got = run_summary_op("ImageSummary", in, 2, false, &st);
  OK(st);
  const guint8 want0[4] = {1, 191, 255, 255}, want1[4] = {0, 63, 127, 255};
  for (int k = 0; k < 2; k++) {
    size_t len;
    char *t = NULL;
    const guint8 *png = value_png(got, k, &len, &t);
    guint8 *px = decode_png(png, len, 2, 2, 1);
    g_assert_cmpmem(px, 4, k ? want1 : want0, 4);
    g_free(px);
    g_free(t);
  }
  g_bytes_unref(got);
  g_max_images = 1;
  got = run_summary_op("ImageSummary", in, 2, false, &st);
  g_max_images = 0;
  OK(st);
  OK(weft_summary_decode(g_bytes_get_data(got, NULL), g_bytes_get_size(got), &v, &n));
  g_assert_cmpint(n, ==, 1);
  g_assert_cmpstr(v[0].tag, ==, "img/image");
  weft_summary_values_free(v, n);
  g_bytes_unref(got);
  weft_tensor_unref(in[1]);

  /* RGB float64 with an infinity: the whole pixel is bad_color (255, 0, 0). */
  double rgb[6] = {0.0, 1.0, 0.5, INFINITY, 0.2, 0.3};
  int64_t rgb_dims[4] = {1, 1, 2, 3};
  in[1] = weft_tensor_new_from_data(WEFT_DT_DOUBLE, 4, rgb_dims, rgb, sizeof rgb, NULL);
  got = run_summary_op("ImageSummary", in, 2, false, &st);
  OK(st);
  size_t len;
  char *t = NULL;
  const guint8 *png = value_png(got, 0, &len, &t);
  guint8 *px = decode_png(png, len, 2, 1, 3);
  const guint8 want_rgb[6] = {0, 255, 127, 255, 0, 0};
  g_assert_cmpmem(px, 6, want_rgb, 6);
  g_free(px);
  g_free(t);
  g_bytes_unref(got);
  weft_tensor_unref(in[1]);

  int64_t bad_dims[3] = {2, 2, 1};
  in[1] = weft_tensor_new_from_data(WEFT_DT_UINT8, 3, bad_dims, u8, 4, NULL);
  g_assert_null(run_summary_op("ImageSummary", in, 2, false, &st));
  expect_error(st, WEFT_INVALID_ARGUMENT,
               "Tensor must be 4-D with last dim 1, 3, or 4, not [2,2,1]");
  weft_tensor_unref(in[1]);
  weft_tensor_unref(in[0]);
}

/* ---------------------------------------------------------------------------------------------
 * The event file */

static void test_writer_reader_round_trip(void) {
  char *dir = tmpdir();
  char *sub = g_build_filename(dir, "run1", NULL);
  weft_event_writer_t *w = NULL;
  OK(weft_event_writer_new(sub, ".v2", &w));
  char *base = g_path_get_basename(weft_event_writer_path(w));
  g_assert_true(g_str_has_prefix(base, "events.out.tfevents."));
  g_assert_true(g_str_has_suffix(base, ".v2"));
  g_free(base);
  OK(weft_event_writer_add_scalar(w, "loss", 0.5f, 3));
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_const_float(g, "c", 2.0f, &st);
  OK(st);
  OK(weft_event_writer_add_graph(w, g, NULL));
  OK(weft_event_writer_add_session_log(w, WEFT_SESSION_LOG_START, "restarted", "/ck/model-7", 7));
  OK(weft_event_writer_add_run_metadata(w, "step7", "\x0a\x00", 2, 7));
  expect_error(weft_event_writer_add_session_log(w, 9, NULL, NULL, 0), WEFT_INVALID_ARGUMENT,
               "session log status 9 is not one of SessionLog's (0..3)");
  /* Flushed records are visible to another reader while the writer is open. */
  OK(weft_event_writer_flush(w));
  char *path = g_strdup(weft_event_writer_path(w));
  GPtrArray *ev = read_events(path);
  g_assert_cmpint(ev->len, ==, 5);
  g_ptr_array_unref(ev);
  OK(weft_event_writer_close(w));
  expect_error(weft_event_writer_add_scalar(w, "x", 1, 1), WEFT_FAILED_PRECONDITION,
               "it was closed");
  weft_event_writer_free(w);

  ev = read_events(path);
  g_assert_cmpint(ev->len, ==, 5);
  weft_event_t *e = ev->pdata[0];
  g_assert_cmpstr(e->file_version, ==, "brain.Event:2");
  g_assert_cmpfloat(fabs(e->wall_time - (double)g_get_real_time() / 1e6), <, 3600);
  e = ev->pdata[1];
  g_assert_cmpint(e->step, ==, 3);
  g_assert_cmpint(e->n_values, ==, 1);
  g_assert_cmpstr(e->values[0].tag, ==, "loss");
  g_assert_cmpfloat(e->values[0].simple_value, ==, 0.5f);
  e = ev->pdata[2];
  g_assert_nonnull(e->graph_def);
  weft_graph_t *back = weft_graph_new();
  OK(weft_graph_import_graphdef(back, e->graph_def, e->graph_def_len, ""));
  g_assert_nonnull(weft_graph_node(back, "c"));
  weft_graph_free(back);
  e = ev->pdata[3];
  g_assert_cmpint(e->step, ==, 7);
  g_assert_cmpint(e->session_log_status, ==, WEFT_SESSION_LOG_START);
  g_assert_cmpstr(e->session_log_msg, ==, "restarted");
  g_assert_cmpstr(e->session_log_checkpoint, ==, "/ck/model-7");
  e = ev->pdata[4];
  g_assert_cmpstr(e->run_metadata_tag, ==, "step7");
  g_assert_cmpint(e->run_metadata_len, ==, 2);
  g_ptr_array_unref(ev);

  /* Corrupt one byte of the second record's data: DATA_LOSS naming the file and its offset. */
  gchar *bytes = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(path, &bytes, &n, NULL));
  uint64_t first_len;
  memcpy(&first_len, bytes, 8);
  int64_t second = 16 + (int64_t)first_len;
  bytes[second + 12 + 3] ^= 0x40;
  char *bad = g_build_filename(dir, "events.out.tfevents.bad", NULL);
  g_assert_true(g_file_set_contents(bad, bytes, (gssize)n, NULL));
  weft_event_reader_t *r = NULL;
  OK(weft_event_reader_open(bad, &r));
  const void *data;
  size_t len;
  bool eof;
  OK(weft_event_reader_next(r, &data, &len, &eof));
  g_assert_false(eof);
  char *msg = g_strdup_printf("Event reader: %s: corrupted record at offset %" G_GINT64_FORMAT
                              ": the data's crc32c does not match", bad, second);
  st = weft_event_reader_next(r, &data, &len, &eof);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_DATA_LOSS);
  g_assert_cmpstr(weft_status_message(st), ==, msg);
  weft_status_free(st);
  g_free(msg);
  weft_event_reader_free(r);
  bytes[second + 12 + 3] ^= 0x40;
  /* The length's crc, too. */
  bytes[second + 9] ^= 0x01;
  g_assert_true(g_file_set_contents(bad, bytes, (gssize)n, NULL));
  OK(weft_event_reader_open(bad, &r));
  OK(weft_event_reader_next(r, &data, &len, &eof));
  msg = g_strdup_printf("Event reader: %s: corrupted record at offset %" G_GINT64_FORMAT
                        ": the length's crc32c does not match", bad, second);
  st = weft_event_reader_next(r, &data, &len, &eof);
  g_assert_cmpstr(weft_status_message(st), ==, msg);
  weft_status_free(st);
  g_free(msg);
  weft_event_reader_free(r);
  bytes[second + 9] ^= 0x01;
  /* A record cut short (a writer in the middle of it): OUT_OF_RANGE at its offset. */
  g_assert_true(g_file_set_contents(bad, bytes, second + 20, NULL));
  OK(weft_event_reader_open(bad, &r));
  OK(weft_event_reader_next(r, &data, &len, &eof));
  st = weft_event_reader_next(r, &data, &len, &eof);
  msg = g_strdup_printf("truncated record at offset %" G_GINT64_FORMAT, second);
  expect_error(st, WEFT_OUT_OF_RANGE, msg);
  g_free(msg);
  weft_event_reader_free(r);
  expect_error(weft_event_reader_open("/nonexistent/events", &r), WEFT_NOT_FOUND,
               "Event reader: cannot open /nonexistent/events");
  expect_error(weft_event_decode("\x0a\x05", 2, &e), WEFT_DATA_LOSS, "malformed Event");
  g_free(bytes);
  g_free(bad);
  g_free(path);
  weft_graph_free(g);
  g_free(sub);
  test_rm_rf(dir);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * The monitored session */

typedef struct lin {
  weft_graph_t *g;
  weft_node_t *train_op;
} lin_t;

static lin_t build_linear(void) {
  lin_t m = {weft_graph_new(), NULL};
  weft_status_t *st = NULL;
  weft_node_t *gs = weft_train_global_step(m.g, &st);
  OK(st);
  weft_output_t w = weft_variable(m.g, "W", weft_const_float(m.g, "W/init", 0, &st), &st);
  OK(st);
  int64_t dims[1] = {4};
  weft_output_t x = weft_placeholder(m.g, "x", WEFT_DT_FLOAT, 1, dims, &st);
  weft_output_t y = weft_placeholder(m.g, "y", WEFT_DT_FLOAT, 1, dims, &st);
  weft_output_t pred = weft_binary(m.g, "Mul", "wx", w, x, &st);
  weft_output_t loss = weft_mean_squared_error(m.g, y, pred, &st);
  OK(st);
  weft_optimizer_spec_t spec = weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1);
  OK(weft_minimize(m.g, loss, &spec, NULL, 0, gs, &m.train_op));
  /* loss as a scalar summary and W as a histogram, merged. */
  weft_tensor_t *tag = weft_tensor_new_string("loss", 4);
  weft_output_t tag_c = weft_const(m.g, "loss_tag", tag, &st);
  weft_tensor_unref(tag);
  weft_op_builder_t *b = weft_op_new(m.g, "ScalarSummary", "loss_summary");
  weft_op_add_input(b, tag_c);
  weft_op_add_input(b, loss);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_node_t *s1 = NULL;
  OK(weft_op_finish(b, &s1));
  tag = weft_tensor_new_string("W", 1);
  tag_c = weft_const(m.g, "w_tag", tag, &st);
  weft_tensor_unref(tag);
  b = weft_op_new(m.g, "HistogramSummary", "w_summary");
  weft_op_add_input(b, tag_c);
  weft_op_add_input(b, w);
  weft_node_t *s2 = NULL;
  OK(weft_op_finish(b, &s2));
  weft_output_t both[2] = {weft_out(s1, 0), weft_out(s2, 0)};
  b = weft_op_new(m.g, "MergeSummary", "merged");
  weft_op_add_input_list(b, both, 2);
  OK(weft_op_finish(b, NULL));
  return m;
}

static void train(weft_monitored_session_t *ms, const lin_t *m, int n) {
  float xs[4] = {-1, 0, 0.5f, 1}, ys[4];
  for (int i = 0; i < 4; i++) ys[i] = 2 * xs[i];
  int64_t dims[1] = {4};
  weft_tensor_t *x = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, xs, sizeof xs, NULL);
  weft_tensor_t *y = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, ys, sizeof ys, NULL);
  const char *feeds[2] = {"x", "y"};
  weft_tensor_t *values[2] = {x, y};
  const char *target = weft_node_name(m->train_op);
  for (int i = 0; i < n && !weft_monitored_session_should_stop(ms); i++)
    OK(weft_monitored_session_run(ms, feeds, values, 2, NULL, NULL, 0, &target, 1));
  weft_tensor_unref(x);
  weft_tensor_unref(y);
}

static void test_monitored_session_events(void) {
  char *dir = tmpdir();
  lin_t m = build_linear();
  weft_monitored_session_options_t *o = weft_monitored_session_options_new();
  weft_monitored_session_options_set_checkpoint_dir(o, dir);
  weft_monitored_session_options_set_save_checkpoint_secs(o, 0);
  weft_monitored_session_options_set_summary_steps(o, 5);
  weft_monitored_session_options_set_last_step(o, 12);
  weft_monitored_session_t *ms = NULL;
  OK(weft_monitored_session_new(m.g, o, &ms));
  train(ms, &m, 100);
  char *path = g_strdup(weft_monitored_session_event_file(ms));
  OK(weft_monitored_session_close(ms));
  weft_monitored_session_free(ms);
  char *found = event_file_in(dir);
  g_assert_cmpstr(found, ==, path);
  g_free(found);

  GPtrArray *ev = read_events(path);
  weft_event_t *e = ev->pdata[0];
  g_assert_cmpstr(e->file_version, ==, "brain.Event:2");
  /* Summaries at global steps 1 (the first step), 6 and 11; global_step/sec from the second
   * time on; the graph once, with each node's device where the session placed it. */
  int n_graphs = 0, n_rates = 0;
  GArray *loss_steps = g_array_new(FALSE, FALSE, sizeof(int64_t));
  for (guint i = 1; i < ev->len; i++) {
    e = ev->pdata[i];
    if (e->graph_def) {
      n_graphs++;
      weft_graph_t *back = weft_graph_new();
      OK(weft_graph_import_graphdef(back, e->graph_def, e->graph_def_len, ""));
      const char *dev = weft_node_requested_device(weft_graph_node(back, "W"));
      /* The first device of the machine: CPU:0 here, CUDA:0 where there is a GPU. */
      g_assert_true(g_str_has_prefix(dev, "/job:localhost/replica:0/task:0/device:"));
      g_assert_true(g_str_has_suffix(dev, ":0"));
      weft_graph_free(back);
    }
    for (int k = 0; k < e->n_values; k++) {
      if (strcmp(e->values[k].tag, "global_step/sec") == 0) {
        n_rates++;
        g_assert_cmpfloat(e->values[k].simple_value, >, 0);
      } else if (strcmp(e->values[k].tag, "loss") == 0) {
        g_array_append_val(loss_steps, e->step);
        g_assert_true(isfinite(e->values[k].simple_value));
      } else {
        g_assert_cmpstr(e->values[k].tag, ==, "W");
        g_assert_cmpint(e->values[k].kind, ==, WEFT_SUMMARY_HISTO);
        g_assert_cmpfloat(e->values[k].histo_num, ==, 1);
      }
    }
  }
  g_assert_cmpint(n_graphs, ==, 1);
  g_assert_cmpint(n_rates, ==, 2);
  g_assert_cmpint(loss_steps->len, ==, 3);
  g_assert_cmpint(g_array_index(loss_steps, int64_t, 0), ==, 1);
  g_assert_cmpint(g_array_index(loss_steps, int64_t, 1), ==, 6);
  g_assert_cmpint(g_array_index(loss_steps, int64_t, 2), ==, 11);
  g_array_free(loss_steps, TRUE);
  g_ptr_array_unref(ev);

  /* A new chief restores step 12: its new event file starts with SessionLog START there. */
  g_remove(path);
  lin_t m2 = build_linear();
  weft_monitored_session_options_set_last_step(o, 14);
  OK(weft_monitored_session_new(m2.g, o, &ms));
  train(ms, &m2, 100);
  OK(weft_monitored_session_close(ms));
  weft_monitored_session_free(ms);
  g_free(path);
  path = event_file_in(dir);
  ev = read_events(path);
  e = ev->pdata[1];
  g_assert_cmpint(e->session_log_status, ==, WEFT_SESSION_LOG_START);
  g_assert_cmpint(e->step, ==, 12);
  g_assert_true(g_str_has_suffix(e->session_log_checkpoint, "model.ckpt-12"));
  g_ptr_array_unref(ev);

  /* summary_steps 0: no event file. */
  test_rm_rf(dir);
  lin_t m3 = build_linear();
  weft_monitored_session_options_set_summary_steps(o, 0);
  OK(weft_monitored_session_new(m3.g, o, &ms));
  train(ms, &m3, 3);
  g_assert_cmpstr(weft_monitored_session_event_file(ms), ==, "");
  weft_monitored_session_free(ms);
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *name;
  while ((name = g_dir_read_name(d))) g_assert_false(g_str_has_prefix(name, "events.out."));
  g_dir_close(d);

  weft_monitored_session_options_free(o);
  weft_graph_free(m.g);
  weft_graph_free(m2.g);
  weft_graph_free(m3.g);
  g_free(path);
  test_rm_rf(dir);
  g_free(dir);
}

/* Varint at *p (advancing it). */
static uint64_t wire_varint(const guint8 **p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    guint8 b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

/* Every length-delimited field `field` of [p, p + n), appended to out as GBytes (views). */
static void wire_fields(const guint8 *p, size_t n, int field, GPtrArray *out) {
  const guint8 *end = p + n;
  while (p < end) {
    uint64_t key = wire_varint(&p);
    int wire = (int)(key & 7);
    if (wire == 0) {
      wire_varint(&p);
    } else if (wire == 1 || wire == 5) {
      p += wire == 1 ? 8 : 4;
    } else {
      g_assert_cmpint(wire, ==, 2);
      size_t len = (size_t)wire_varint(&p);
      if ((int)(key >> 3) == field) g_ptr_array_add(out, g_bytes_new_static(p, len));
      p += len;
    }
  }
  g_assert_true(p == end);
}

/* A traced step written as TensorFlow's RunMetadata: step_stats(1) -> dev_stats(1) ->
 * device(1) and node_stats(2) -> node_name(1), decoded here by hand. */
static void test_step_stats(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t a = weft_const_float(g, "a", 1.0f, &st);
  weft_output_t b = weft_const_float(g, "b", 2.0f, &st);
  weft_binary(g, "AddV2", "sum", a, b, &st);
  OK(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  const char *fetch = "sum:0";
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
  char *dir = tmpdir();
  weft_event_writer_t *w = NULL;
  OK(weft_event_writer_new(dir, NULL, &w));
  OK(weft_event_writer_add_step_stats(w, "step1", meta, 1));
  expect_error(weft_event_writer_add_step_stats(w, "x", NULL, 1), WEFT_INVALID_ARGUMENT,
               "no run metadata");
  OK(weft_event_writer_close(w));
  GPtrArray *ev = read_events(weft_event_writer_path(w));
  weft_event_t *e = ev->pdata[1];
  g_assert_cmpstr(e->run_metadata_tag, ==, "step1");
  g_assert_cmpint(e->step, ==, 1);
  GPtrArray *step_stats = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  GPtrArray *dev_stats = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  wire_fields(e->run_metadata, e->run_metadata_len, 1, step_stats);
  g_assert_cmpint(step_stats->len, ==, 1);
  size_t n;
  const guint8 *p = g_bytes_get_data(step_stats->pdata[0], &n);
  wire_fields(p, n, 1, dev_stats);
  g_assert_cmpint(dev_stats->len, >=, 1);
  GHashTable *names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < dev_stats->len; i++) {
    GPtrArray *dev = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    GPtrArray *nodes = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    p = g_bytes_get_data(dev_stats->pdata[i], &n);
    wire_fields(p, n, 1, dev);
    wire_fields(p, n, 2, nodes);
    g_assert_cmpint(dev->len, ==, 1);
    /* CPU:0, and CUDA:0 too where the machine has a GPU. */
    g_assert_nonnull(g_strstr_len(g_bytes_get_data(dev->pdata[0], NULL),
                                  (gssize)g_bytes_get_size(dev->pdata[0]),
                                  "/job:localhost/replica:0/task:0/device:"));
    for (guint k = 0; k < nodes->len; k++) {
      GPtrArray *name = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
      p = g_bytes_get_data(nodes->pdata[k], &n);
      wire_fields(p, n, 1, name);
      g_assert_cmpint(name->len, ==, 1);
      g_hash_table_add(names, g_strndup(g_bytes_get_data(name->pdata[0], NULL),
                                        g_bytes_get_size(name->pdata[0])));
      g_ptr_array_unref(name);
    }
    g_ptr_array_unref(dev);
    g_ptr_array_unref(nodes);
  }
  g_assert_true(g_hash_table_contains(names, "sum"));
  g_hash_table_destroy(names);
  g_ptr_array_unref(dev_stats);
  g_ptr_array_unref(step_stats);
  g_ptr_array_unref(ev);
  weft_event_writer_free(w);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
  test_rm_rf(dir);
  g_free(dir);
}

/* A step function (synchronous replicas' way) fetches what it wants itself: the graph and
 * global_step/sec are written, the summary ops' outputs are not. */
static weft_status_t *own_step(void *user, weft_session_t *session) {
  const lin_t *m = user;
  float xs[4] = {-1, 0, 0.5f, 1}, ys[4] = {-2, 0, 1, 2};
  int64_t dims[1] = {4};
  weft_tensor_t *x = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, xs, sizeof xs, NULL);
  weft_tensor_t *y = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, ys, sizeof ys, NULL);
  const char *feeds[2] = {"x", "y"};
  weft_tensor_t *values[2] = {x, y};
  const char *target = weft_node_name(m->train_op);
  weft_status_t *st = weft_session_run(session, feeds, values, 2, NULL, NULL, 0, &target, 1);
  weft_tensor_unref(x);
  weft_tensor_unref(y);
  return st;
}

static void test_step_fn_events(void) {
  char *dir = tmpdir();
  lin_t m = build_linear();
  weft_monitored_session_options_t *o = weft_monitored_session_options_new();
  weft_monitored_session_options_set_checkpoint_dir(o, dir);
  weft_monitored_session_options_set_summary_steps(o, 3);
  weft_monitored_session_t *ms = NULL;
  OK(weft_monitored_session_new(m.g, o, &ms));
  for (int i = 0; i < 7; i++) OK(weft_monitored_session_run_step_fn(ms, own_step, &m));
  OK(weft_monitored_session_close(ms));
  GPtrArray *ev = read_events(weft_monitored_session_event_file(ms));
  int graphs = 0, rates = 0;
  for (guint i = 0; i < ev->len; i++) {
    weft_event_t *e = ev->pdata[i];
    graphs += e->graph_def != NULL;
    for (int k = 0; k < e->n_values; k++) {
      g_assert_cmpstr(e->values[k].tag, ==, "global_step/sec");
      rates++;
    }
  }
  /* Due at global steps 1, 4 and 7: a rate at the last two. */
  g_assert_cmpint(graphs, ==, 1);
  g_assert_cmpint(rates, ==, 2);
  g_ptr_array_unref(ev);
  weft_monitored_session_free(ms);
  weft_monitored_session_options_free(o);
  weft_graph_free(m.g);
  test_rm_rf(dir);
  g_free(dir);
}

/* CRC-32C bit by bit (an independent reference for the core's table) and TFRecord's mask. */
static uint32_t crc32c_bits(const void *data, size_t n) {
  const unsigned char *p = data;
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (crc & 1 ? 0x82F63B78u : 0);
  }
  return crc ^ 0xFFFFFFFFu;
}

static uint32_t crc_masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

/* Records of any bytes (TFRecord files): the bytes on disk are TensorFlow's framing, the reader
 * gives them back, a truncated file ends in OUT_OF_RANGE and a missing folder is NOT_FOUND. */
static void test_tfrecord_files(void) {
  g_assert_cmpuint(crc32c_bits("123456789", 9), ==, 0xE3069283u); /* the CRC's check value */
  char *dir = g_dir_make_tmp("weft-records-XXXXXX", NULL);
  char *path = g_build_filename(dir, "r.tfrecord", NULL);
  weft_event_writer_t *w = NULL;
  OK(weft_event_writer_open_records(path, &w));
  OK(weft_event_writer_add_record(w, "123456789", 9));
  OK(weft_event_writer_add_record(w, "", 0));
  OK(weft_event_writer_close(w));
  weft_event_writer_free(w);
  gchar *bytes = NULL;
  gsize n = 0;
  g_assert_true(g_file_get_contents(path, &bytes, &n, NULL));
  g_assert_cmpuint(n, ==, (12 + 9 + 4) + (12 + 0 + 4));
  uint64_t len;
  uint32_t crc;
  memcpy(&len, bytes, 8);
  g_assert_cmpuint(len, ==, 9);
  memcpy(&crc, bytes + 8, 4);
  g_assert_cmpuint(crc, ==, crc_masked(crc32c_bits(bytes, 8)));
  g_assert_cmpmem(bytes + 12, 9, "123456789", 9);
  memcpy(&crc, bytes + 21, 4);
  g_assert_cmpuint(crc, ==, crc_masked(0xE3069283u));
  weft_event_reader_t *r = NULL;
  OK(weft_event_reader_open(path, &r));
  const void *data;
  size_t got;
  bool eof = false;
  OK(weft_event_reader_next(r, &data, &got, &eof));
  g_assert_false(eof);
  g_assert_cmpmem(data, got, "123456789", 9);
  OK(weft_event_reader_next(r, &data, &got, &eof));
  g_assert_false(eof);
  g_assert_cmpuint(got, ==, 0);
  OK(weft_event_reader_next(r, &data, &got, &eof));
  g_assert_true(eof);
  weft_event_reader_free(r);
  /* cut inside the first record's data */
  g_assert_true(g_file_set_contents(path, bytes, 15, NULL));
  OK(weft_event_reader_open(path, &r));
  weft_status_t *st = weft_event_reader_next(r, &data, &got, &eof);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_OUT_OF_RANGE);
  g_assert_nonnull(strstr(weft_status_message(st), "truncated record at offset 0"));
  weft_status_free(st);
  weft_event_reader_free(r);
  g_free(bytes);
  char *missing = g_build_filename(dir, "no", "such", "r.tfrecord", NULL);
  st = weft_event_writer_open_records(missing, &w);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_null(w);
  weft_status_free(st);
  g_unlink(path);
  g_rmdir(dir);
  g_free(missing);
  g_free(path);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/summary/scalar", test_scalar_summary);
  g_test_add_func("/summary/histogram", test_histogram_summary);
  g_test_add_func("/summary/image", test_image_summary);
  g_test_add_func("/summary/tensor_and_merge", test_tensor_summary_and_merge);
  g_test_add_func("/summary/writer_reader", test_writer_reader_round_trip);
  g_test_add_func("/summary/tfrecord_files", test_tfrecord_files);
  g_test_add_func("/summary/monitored_session", test_monitored_session_events);
  g_test_add_func("/summary/step_fn", test_step_fn_events);
  g_test_add_func("/summary/step_stats", test_step_stats);
  return g_test_run();
}
