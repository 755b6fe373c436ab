/* Tests for checkpoints in TensorFlow's tensor-bundle format: every checkpoint and SavedModel
 * variables folder of the corpus read (values checked against the frozen graph and the models'
 * known constants, Snappy-compressed index blocks and a string tensor included); writer -> reader
 * round trips for every dtype, empty tensors and many-block indexes, with and without Snappy;
 * corruption (flipped data byte, flipped index byte, truncated index, bad magic) refused with
 * DATA_LOSS naming the file and tensor, and every bit flip or truncation refused without a
 * crash; merging separately written checkpoints into one sharded checkpoint; atomic writes (an
 * abandoned writer leaves the previous checkpoint intact); the saver over a session's variables (save, restore, missing variable,
 * dtype and shape mismatch, uninitialised variable); max_to_keep and the state file. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include "weft/weft.h"
#include "session/session_internal.h"

#define OK(expr)                                                 \
  do {                                                           \
    weft_status_t *st_ = (expr);                                 \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

/* Asserts `st` has `code` and a message holding every non-NULL substring; frees it. */
static void expect_error(weft_status_t *st, weft_code_t code, const char *s1, const char *s2,
                         const char *s3) {
  g_assert_nonnull(st);
  const char *msg = weft_status_message(st);
  if (weft_status_code(st) != code) g_error("expected %s, got %s: %s", weft_code_name(code),
                                            weft_code_name(weft_status_code(st)), msg);
  const char *subs[3] = {s1, s2, s3};
  for (int i = 0; i < 3; i++)
    if (subs[i] && !strstr(msg, subs[i])) g_error("message lacks '%s': %s", subs[i], msg);
  weft_status_free(st);
}

static char *corpus_path(const char *rel) {
  const char *root = g_getenv("WEFT_CORPUS");
  return root ? g_build_filename(root, rel, NULL)
              : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", rel, NULL);
}

static bool need_corpus(const char *path) {
  if (g_file_test(path, G_FILE_TEST_EXISTS)) return true;
  char *why = g_strdup_printf("corpus file %s not found (set WEFT_CORPUS)", path);
  g_test_skip(why);
  g_free(why);
  return false;
}

static char *tmpdir(void) {
  GError *err = NULL;
  char *d = g_dir_make_tmp("weft-ckpt-XXXXXX", &err);
  g_assert_no_error(err);
  return d;
}

static void rm_rf(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (!d) return;
  const char *n;
  while ((n = g_dir_read_name(d))) {
    char *p = g_build_filename(dir, n, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_DIR)) rm_rf(p);
    else g_unlink(p);
    g_free(p);
  }
  g_dir_close(d);
  g_rmdir(dir);
}

static float read_scalar_float(weft_checkpoint_reader_t *r, const char *key) {
  weft_tensor_t *t = NULL;
  OK(weft_checkpoint_reader_read(r, key, &t));
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, 1);
  float v = ((float *)weft_tensor_data(t))[0];
  weft_tensor_unref(t);
  return v;
}

/* ---------------------------------------------------------------------------------------------
 * The corpus */

static void test_corpus_regression(void) {
  char *dir = corpus_path("tf/checkpoint/regression");
  if (!need_corpus(dir)) {
    g_free(dir);
    return;
  }
  char *latest = weft_checkpoint_latest(dir);
  char *prefix = g_build_filename(dir, "model", NULL);
  g_assert_cmpstr(latest, ==, prefix);
  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(prefix, &r));
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, 2);
  g_assert_cmpstr(weft_checkpoint_reader_key(r, 0), ==, "W");
  g_assert_cmpstr(weft_checkpoint_reader_key(r, 1), ==, "b");
  weft_dtype_t dt;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  OK(weft_checkpoint_reader_info(r, "W", &dt, &rank, dims));
  g_assert_cmpint(dt, ==, WEFT_DT_FLOAT);
  /* The values regression_frozen.pb holds as constants. */
  g_assert_cmpfloat_with_epsilon(read_scalar_float(r, "W"), 0.21396178f, 1e-7);
  g_assert_cmpfloat_with_epsilon(read_scalar_float(r, "b"), 1.04952538f, 1e-7);
  expect_error(weft_checkpoint_reader_read(r, "nope", &(weft_tensor_t *){NULL}), WEFT_NOT_FOUND,
               "nope", "model", NULL);
  weft_checkpoint_reader_free(r);
  g_free(prefix);
  g_free(latest);
  g_free(dir);
}

static weft_checkpoint_reader_t *open_saved_model(const char *name) {
  char *rel = g_strdup_printf("tf/saved_model/%s/variables/variables.index", name);
  char *path = corpus_path(rel);
  g_free(rel);
  weft_checkpoint_reader_t *r = NULL;
  if (need_corpus(path)) {
    path[strlen(path) - strlen(".index")] = '\0';
    OK(weft_checkpoint_reader_open(path, &r));
  }
  g_free(path);
  return r;
}

/* Every tensor of the checkpoint reads with a matching checksum. */
static void read_all(weft_checkpoint_reader_t *r) {
  for (int i = 0; i < weft_checkpoint_reader_num_tensors(r); i++) {
    const char *key = weft_checkpoint_reader_key(r, i);
    weft_tensor_t *t = NULL;
    OK(weft_checkpoint_reader_read(r, key, &t));
    weft_dtype_t dt;
    int rank;
    int64_t dims[WEFT_MAX_RANK];
    OK(weft_checkpoint_reader_info(r, key, &dt, &rank, dims));
    g_assert_cmpint(weft_tensor_dtype(t), ==, dt);
    g_assert_cmpint(weft_tensor_rank(t), ==, rank);
    weft_tensor_unref(t);
  }
}

static void test_corpus_half_plus_two(void) {
  weft_checkpoint_reader_t *r = open_saved_model("half_plus_two_cpu");
  if (!r) return;
  /* This index's blocks are Snappy-compressed. */
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, 5);
  const char *want[] = {"a", "a2", "b", "c", "c2"};
  for (int i = 0; i < 5; i++) g_assert_cmpstr(weft_checkpoint_reader_key(r, i), ==, want[i]);
  g_assert_cmpfloat(read_scalar_float(r, "a"), ==, 0.5f);
  g_assert_cmpfloat(read_scalar_float(r, "b"), ==, 2.0f);
  g_assert_cmpfloat(read_scalar_float(r, "c"), ==, 3.0f);
  g_assert_cmpfloat(read_scalar_float(r, "a2"), ==, 0.5f);
  g_assert_cmpfloat(read_scalar_float(r, "c2"), ==, 3.0f);
  read_all(r);
  weft_checkpoint_reader_free(r);

  r = open_saved_model("half_plus_three");
  if (!r) return;
  g_assert_cmpfloat(read_scalar_float(r, "a"), ==, 0.5f);
  g_assert_cmpfloat(read_scalar_float(r, "b"), ==, 3.0f);
  weft_checkpoint_reader_free(r);
}

static void test_corpus_others(void) {
  weft_checkpoint_reader_t *r = open_saved_model("counter");
  if (!r) return;
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, 1);
  g_assert_cmpfloat(read_scalar_float(r, "counter"), ==, 0.0f);
  weft_checkpoint_reader_free(r);

  r = open_saved_model("rust_regression");
  if (!r) return;
  weft_tensor_t *w = NULL;
  OK(weft_checkpoint_reader_read(r, "w", &w));
  g_assert_cmpint(weft_tensor_rank(w), ==, 1);
  g_assert_cmpfloat_with_epsilon(((float *)weft_tensor_data(w))[0], -0.857862f, 1e-6);
  weft_tensor_unref(w);
  read_all(r);
  weft_checkpoint_reader_free(r);

  /* A TF2 object-based checkpoint: its object graph is a string tensor. */
  r = open_saved_model("cppflow_keras");
  if (!r) return;
  const char *graph_key = "_CHECKPOINTABLE_OBJECT_GRAPH";
  weft_dtype_t dt;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  OK(weft_checkpoint_reader_info(r, graph_key, &dt, &rank, dims));
  g_assert_cmpint(dt, ==, WEFT_DT_STRING);
  g_assert_cmpint(rank, ==, 0);
  weft_tensor_t *t = NULL;
  OK(weft_checkpoint_reader_read(r, graph_key, &t));
  const weft_string_t *s = weft_tensor_data(t);
  /* A serialized TrackableObjectGraph: non-empty, and it names the layer's variables. */
  g_assert_cmpuint(s[0].len, >, 16);
  g_assert_nonnull(memmem(s[0].data, s[0].len, "VARIABLE_VALUE", 14));
  g_assert_nonnull(memmem(s[0].data, s[0].len, "layer_with_weights-1", 20));
  weft_tensor_unref(t);
  OK(weft_checkpoint_reader_info(r, "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE", &dt,
                                 &rank, dims));
  g_assert_cmpint(dt, ==, WEFT_DT_FLOAT);
  g_assert_cmpint(rank, ==, 2);
  read_all(r);
  weft_checkpoint_reader_free(r);
}

/* Reads a corpus checkpoint and writes its tensors again in key order: for checkpoints whose
 * data TensorFlow also wrote in key order, both files come out byte for byte the same (index
 * blocks, separators, Snappy compression, entry protos, checksums, footer). */
static void test_corpus_rewrite_identical(void) {
  struct {
    const char *rel;
    bool snappy;
  } cases[] = {{"tf/checkpoint/regression/model", false},
               {"tf/saved_model/counter/variables/variables", false},
               {"tf/saved_model/half_plus_three/variables/variables", false},
               {"tf/saved_model/rust_regression/variables/variables", false},
               {"tf/saved_model/half_plus_two_cpu/variables/variables", true}};
  char *dir = tmpdir();
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    char *src = corpus_path(cases[c].rel);
    char *src_index = g_strconcat(src, ".index", NULL);
    if (!need_corpus(src_index)) {
      g_free(src_index);
      g_free(src);
      break;
    }
    char *dst = g_strdup_printf("%s/copy%zu", dir, c);
    weft_checkpoint_reader_t *r = NULL;
    OK(weft_checkpoint_reader_open(src, &r));
    weft_checkpoint_writer_t *w = NULL;
    OK(weft_checkpoint_writer_new(dst, &w));
    weft_checkpoint_writer_set_snappy(w, cases[c].snappy);
    for (int i = 0; i < weft_checkpoint_reader_num_tensors(r); i++) {
      weft_tensor_t *t = NULL;
      OK(weft_checkpoint_reader_read(r, weft_checkpoint_reader_key(r, i), &t));
      OK(weft_checkpoint_writer_add(w, weft_checkpoint_reader_key(r, i), t));
      weft_tensor_unref(t);
    }
    OK(weft_checkpoint_writer_finish(w));
    weft_checkpoint_writer_free(w);
    weft_checkpoint_reader_free(r);
    const char *suffixes[] = {".index", ".data-00000-of-00001"};
    for (int k = 0; k < 2; k++) {
      char *a = g_strconcat(src, suffixes[k], NULL), *b = g_strconcat(dst, suffixes[k], NULL);
      gchar *x, *y;
      gsize nx, ny;
      g_assert_true(g_file_get_contents(a, &x, &nx, NULL));
      g_assert_true(g_file_get_contents(b, &y, &ny, NULL));
      if (nx != ny || memcmp(x, y, nx) != 0) g_error("%s differs from TensorFlow's %s", b, a);
      g_free(x);
      g_free(y);
      g_free(a);
      g_free(b);
    }
    g_free(dst);
    g_free(src_index);
    g_free(src);
  }
  rm_rf(dir);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Round trips */

static weft_tensor_t *pattern_tensor(weft_dtype_t dt, int rank, const int64_t *dims, int seed) {
  weft_tensor_t *t = weft_tensor_new(dt, rank, dims);
  g_assert_nonnull(t);
  int64_t n = weft_tensor_num_elements(t);
  if (dt == WEFT_DT_STRING) {
    for (int64_t i = 0; i < n; i++) {
      /* Empty, short, binary with NULs, and longer than 127 bytes (a two-byte varint). */
      size_t len = (size_t)((i * 37 + seed) % 200);
      char *buf = g_malloc(len + 1);
      for (size_t k = 0; k < len; k++) buf[k] = (char)((k * 7 + i + seed) % 256);
      OK(weft_tensor_set_string(t, i, buf, len));
      g_free(buf);
    }
  } else {
    guint8 *p = weft_tensor_data(t);
    size_t nb = weft_tensor_nbytes(t);
    for (size_t k = 0; k < nb; k++) p[k] = (guint8)(k * 31 + (size_t)seed);
    if (dt == WEFT_DT_BOOL)
      for (size_t k = 0; k < nb; k++) p[k] &= 1;
  }
  return t;
}

static void assert_same(const weft_tensor_t *a, const weft_tensor_t *b) {
  g_assert_cmpint(weft_tensor_dtype(a), ==, weft_tensor_dtype(b));
  g_assert_cmpint(weft_tensor_rank(a), ==, weft_tensor_rank(b));
  for (int d = 0; d < weft_tensor_rank(a); d++)
    g_assert_cmpint(weft_tensor_dims(a)[d], ==, weft_tensor_dims(b)[d]);
  if (weft_tensor_dtype(a) == WEFT_DT_STRING) {
    const weft_string_t *x = weft_tensor_data(a), *y = weft_tensor_data(b);
    for (int64_t i = 0; i < weft_tensor_num_elements(a); i++) {
      g_assert_cmpuint(x[i].len, ==, y[i].len);
      g_assert_true(x[i].len == 0 || memcmp(x[i].data, y[i].data, x[i].len) == 0);
    }
  } else {
    g_assert_cmpuint(weft_tensor_nbytes(a), ==, weft_tensor_nbytes(b));
    g_assert_true(memcmp(weft_tensor_data(a), weft_tensor_data(b), weft_tensor_nbytes(a)) == 0);
  }
}

static const weft_dtype_t all_dtypes[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE,   WEFT_DT_INT32,  WEFT_DT_UINT8, WEFT_DT_INT16,
    WEFT_DT_INT8,   WEFT_DT_STRING,   WEFT_DT_INT64,  WEFT_DT_BOOL,  WEFT_DT_BFLOAT16,
    WEFT_DT_UINT16, WEFT_DT_HALF,     WEFT_DT_UINT32, WEFT_DT_UINT64};

static void roundtrip_dtypes(bool snappy) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "sub", "model.ckpt", NULL);
  int nd = (int)G_N_ELEMENTS(all_dtypes);
  GPtrArray *tensors = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
  weft_checkpoint_writer_t *w = NULL;
  OK(weft_checkpoint_writer_new(prefix, &w));
  weft_checkpoint_writer_set_snappy(w, snappy);
  for (int i = 0; i < nd; i++) {
    int64_t shapes[3][2] = {{3, 5}, {0, 4}, {0, 0}};
    int ranks[3] = {2, 2, 0};
    for (int s = 0; s < 3; s++) {
      weft_tensor_t *t = pattern_tensor(all_dtypes[i], ranks[s], shapes[s], i + s);
      char *key = g_strdup_printf("%s/shape%d", weft_dtype_name(all_dtypes[i]), s);
      OK(weft_checkpoint_writer_add(w, key, t));
      g_ptr_array_add(tensors, t);
      g_ptr_array_add(keys, key);
    }
  }
  expect_error(weft_checkpoint_writer_add(w, keys->pdata[0], tensors->pdata[0]),
               WEFT_INVALID_ARGUMENT, keys->pdata[0], "twice", NULL);
  expect_error(weft_checkpoint_writer_add(w, "", tensors->pdata[0]), WEFT_INVALID_ARGUMENT,
               "empty key", NULL, NULL);
  OK(weft_checkpoint_writer_finish(w));
  weft_checkpoint_writer_free(w);

  char *data = g_strconcat(prefix, ".data-00000-of-00001", NULL);
  g_assert_true(g_file_test(data, G_FILE_TEST_IS_REGULAR));
  g_free(data);

  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(prefix, &r));
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, (int)tensors->len);
  for (int i = 1; i < weft_checkpoint_reader_num_tensors(r); i++)
    g_assert_cmpint(strcmp(weft_checkpoint_reader_key(r, i - 1), weft_checkpoint_reader_key(r, i)), <, 0);
  for (guint i = 0; i < tensors->len; i++) {
    weft_tensor_t *t = NULL;
    OK(weft_checkpoint_reader_read(r, keys->pdata[i], &t));
    assert_same(tensors->pdata[i], t);
    weft_tensor_unref(t);
  }
  weft_checkpoint_reader_free(r);
  g_ptr_array_unref(tensors);
  g_ptr_array_unref(keys);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static void test_roundtrip_dtypes(void) {
  roundtrip_dtypes(false);
}

static void test_roundtrip_dtypes_snappy(void) {
  roundtrip_dtypes(true);
}

static void many_keys(bool snappy) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "many", NULL);
  weft_checkpoint_writer_t *w = NULL;
  OK(weft_checkpoint_writer_new(prefix, &w));
  weft_checkpoint_writer_set_snappy(w, snappy);
  weft_checkpoint_writer_set_block_size(w, 256);
  const int n = 1500;
  /* Added out of order, with long shared prefixes: the index sorts them. */
  for (int i = n - 1; i >= 0; i--) {
    char *key = g_strdup_printf("layer_%04d/weights/.ATTRIBUTES/VARIABLE_VALUE", (i * 7919) % n);
    int64_t dims[1] = {2};
    int32_t v[2] = {(i * 7919) % n, -((i * 7919) % n)};
    weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_INT32, 1, dims, v, sizeof v, NULL);
    OK(weft_checkpoint_writer_add(w, key, t));
    weft_tensor_unref(t);
    g_free(key);
  }
  OK(weft_checkpoint_writer_finish(w));
  weft_checkpoint_writer_free(w);

  char *index = g_strconcat(prefix, ".index", NULL);
  gchar *bytes;
  gsize len;
  g_assert_true(g_file_get_contents(index, &bytes, &len, NULL));
  /* Many blocks: far more than one block's worth. Snappy shrinks the repetitive keys. */
  g_assert_cmpuint(len, >, 256 * 8);
  g_free(bytes);

  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(prefix, &r));
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, n);
  for (int i = 0; i < n; i++) {
    char *key = g_strdup_printf("layer_%04d/weights/.ATTRIBUTES/VARIABLE_VALUE", i);
    g_assert_cmpstr(weft_checkpoint_reader_key(r, i), ==, key);
    weft_tensor_t *t = NULL;
    OK(weft_checkpoint_reader_read(r, key, &t));
    g_assert_cmpint(((int32_t *)weft_tensor_data(t))[0], ==, i);
    g_assert_cmpint(((int32_t *)weft_tensor_data(t))[1], ==, -i);
    weft_tensor_unref(t);
    g_free(key);
  }
  weft_checkpoint_reader_free(r);
  g_free(index);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static void test_many_keys(void) {
  many_keys(false);
}

static void test_many_keys_snappy(void) {
  many_keys(true);
}

/* ---------------------------------------------------------------------------------------------
 * Corruption and atomicity */

static void write_simple(const char *prefix, float w0, bool snappy) {
  weft_checkpoint_writer_t *w = NULL;
  OK(weft_checkpoint_writer_new(prefix, &w));
  weft_checkpoint_writer_set_snappy(w, snappy);
  float wv[4] = {w0, 2, 3, 4};
  int64_t dims[2] = {2, 2};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, wv, sizeof wv, NULL);
  OK(weft_checkpoint_writer_add(w, "dense/kernel", t));
  weft_tensor_unref(t);
  t = weft_tensor_new_scalar_float(-1.5f);
  OK(weft_checkpoint_writer_add(w, "dense/bias", t));
  weft_tensor_unref(t);
  OK(weft_checkpoint_writer_finish(w));
  weft_checkpoint_writer_free(w);
}

static void flip_byte(const char *path, gssize at) {
  gchar *bytes;
  gsize len;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  gsize i = at >= 0 ? (gsize)at : len + (gsize)at;
  g_assert_cmpuint(i, <, len);
  bytes[i] ^= 0x10;
  g_assert_true(g_file_set_contents(path, bytes, (gssize)len, NULL));
  g_free(bytes);
}

static void truncate_to(const char *path, gsize n) {
  gchar *bytes;
  gsize len;
  g_assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  g_assert_true(g_file_set_contents(path, bytes, (gssize)MIN(n, len), NULL));
  g_free(bytes);
}

static void test_corruption(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "ckpt", NULL);
  char *data = g_strconcat(prefix, ".data-00000-of-00001", NULL);
  char *index = g_strconcat(prefix, ".index", NULL);
  weft_checkpoint_reader_t *r = NULL;
  weft_tensor_t *t = NULL;

  /* A flipped byte in the kernel's bytes (the bias comes first in the data file? no: data is in
   * add order, so the kernel's 16 bytes are at offset 0). */
  write_simple(prefix, 1, false);
  flip_byte(data, 5);
  OK(weft_checkpoint_reader_open(prefix, &r));
  expect_error(weft_checkpoint_reader_read(r, "dense/kernel", &t), WEFT_DATA_LOSS, "dense/kernel",
               data, "offset 0, size 16");
  g_assert_null(t);
  /* The other tensor is intact and still reads. */
  g_assert_cmpfloat(read_scalar_float(r, "dense/bias"), ==, -1.5f);
  weft_checkpoint_reader_free(r);

  /* A truncated data file. */
  write_simple(prefix, 1, false);
  truncate_to(data, 17);
  OK(weft_checkpoint_reader_open(prefix, &r));
  expect_error(weft_checkpoint_reader_read(r, "dense/bias", &t), WEFT_DATA_LOSS, "dense/bias",
               "truncated", data);
  weft_checkpoint_reader_free(r);

  /* A flipped byte inside the index's first data block. */
  for (int snappy = 0; snappy < 2; snappy++) {
    write_simple(prefix, 1, snappy);
    flip_byte(index, 3);
    expect_error(weft_checkpoint_reader_open(prefix, &r), WEFT_DATA_LOSS, index, "checksum", NULL);
    g_assert_null(r);
  }

  /* A truncated index: shorter than a footer, and cut in the middle. */
  write_simple(prefix, 1, false);
  truncate_to(index, 20);
  expect_error(weft_checkpoint_reader_open(prefix, &r), WEFT_DATA_LOSS, index, "truncated", NULL);
  write_simple(prefix, 1, false);
  gchar *bytes;
  gsize len;
  g_assert_true(g_file_get_contents(index, &bytes, &len, NULL));
  g_free(bytes);
  truncate_to(index, len - 7);
  expect_error(weft_checkpoint_reader_open(prefix, &r), WEFT_DATA_LOSS, index, "magic", NULL);

  /* A bad magic number. */
  write_simple(prefix, 1, false);
  flip_byte(index, -1);
  expect_error(weft_checkpoint_reader_open(prefix, &r), WEFT_DATA_LOSS, index, "bad magic", NULL);

  /* No checkpoint at all. */
  char *missing = g_build_filename(dir, "missing", NULL);
  expect_error(weft_checkpoint_reader_open(missing, &r), WEFT_NOT_FOUND, missing, NULL, NULL);
  g_free(missing);

  /* The data file gone. */
  write_simple(prefix, 1, false);
  g_unlink(data);
  OK(weft_checkpoint_reader_open(prefix, &r));
  expect_error(weft_checkpoint_reader_read(r, "dense/bias", &t), WEFT_NOT_FOUND, data, NULL, NULL);
  weft_checkpoint_reader_free(r);

  g_free(index);
  g_free(data);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

/* Every single-byte flip and every truncation of an index (plain and Snappy) and of a data file
 * is either refused with a status or, where the byte is not covered by a checksum (the footer's
 * padding), read as before: never a crash (this runs under AddressSanitizer in CI). */
static void test_corruption_every_byte(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "ckpt", NULL);
  char *index = g_strconcat(prefix, ".index", NULL);
  const char *targets[2] = {index, NULL};
  char *data = g_strconcat(prefix, ".data-00000-of-00001", NULL);
  targets[1] = data;
  for (int snappy = 0; snappy < 2; snappy++) {
    write_simple(prefix, 1, snappy);
    for (int f = 0; f < 2; f++) {
      gchar *orig;
      gsize len;
      g_assert_true(g_file_get_contents(targets[f], &orig, &len, NULL));
      for (gsize i = 0; i < 2 * len; i++) {
        gchar *copy = g_memdup2(orig, len);
        gsize n = len;
        if (i < len) copy[i] ^= (gchar)(1u << (i % 8));
        else n = i - len; /* truncated to 0..len-1 bytes */
        g_assert_true(g_file_set_contents(targets[f], copy, (gssize)n, NULL));
        g_free(copy);
        weft_checkpoint_reader_t *r = NULL;
        weft_status_t *st = weft_checkpoint_reader_open(prefix, &r);
        if (st) {
          g_assert_true(weft_status_code(st) == WEFT_DATA_LOSS);
          weft_status_free(st);
          continue;
        }
        int good = 0;
        for (int k = 0; k < weft_checkpoint_reader_num_tensors(r); k++) {
          weft_tensor_t *t = NULL;
          st = weft_checkpoint_reader_read(r, weft_checkpoint_reader_key(r, k), &t);
          if (st) {
            g_assert_true(weft_status_code(st) == WEFT_DATA_LOSS);
            weft_status_free(st);
          } else {
            good++;
          }
          weft_tensor_unref(t);
        }
        /* A data file that lost bytes can never read whole. */
        if (f == 1 && i >= len) g_assert_cmpint(good, <, 2);
        weft_checkpoint_reader_free(r);
      }
      g_assert_true(g_file_set_contents(targets[f], orig, (gssize)len, NULL));
      g_free(orig);
    }
  }
  g_free(data);
  g_free(index);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static int count_files(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  int n = 0;
  while (g_dir_read_name(d)) n++;
  g_dir_close(d);
  return n;
}

static void test_atomic(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "ckpt", NULL);
  write_simple(prefix, 7, true);
  g_assert_cmpint(count_files(dir), ==, 2);

  /* A writer over the same prefix, abandoned before finish (as if the process died). */
  weft_checkpoint_writer_t *w = NULL;
  OK(weft_checkpoint_writer_new(prefix, &w));
  float wv[4] = {99, 99, 99, 99};
  int64_t dims[2] = {2, 2};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, wv, sizeof wv, NULL);
  OK(weft_checkpoint_writer_add(w, "dense/kernel", t));
  weft_tensor_unref(t);
  /* While it writes, only temporary files are new. */
  g_assert_cmpint(count_files(dir), ==, 3);
  weft_checkpoint_writer_free(w);
  g_assert_cmpint(count_files(dir), ==, 2);

  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(prefix, &r));
  t = NULL;
  OK(weft_checkpoint_reader_read(r, "dense/kernel", &t));
  g_assert_cmpfloat(((float *)weft_tensor_data(t))[0], ==, 7);
  weft_tensor_unref(t);
  weft_checkpoint_reader_free(r);

  /* An abandoned writer of a new prefix leaves nothing under that prefix. */
  char *other = g_build_filename(dir, "other", NULL);
  OK(weft_checkpoint_writer_new(other, &w));
  t = weft_tensor_new_scalar_float(1);
  OK(weft_checkpoint_writer_add(w, "x", t));
  weft_tensor_unref(t);
  weft_checkpoint_writer_free(w);
  expect_error(weft_checkpoint_reader_open(other, &r), WEFT_NOT_FOUND, "other", NULL, NULL);
  g_assert_cmpint(count_files(dir), ==, 2);
  g_free(other);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

/* Two checkpoints written apart (as two ps tasks would) merged into one two-shard checkpoint. */
static void test_merge_shards(void) {
  char *dir = tmpdir();
  char *a = g_build_filename(dir, "tmp", "part-0", NULL);
  char *b = g_build_filename(dir, "tmp", "part-1", NULL);
  char *out = g_build_filename(dir, "model.ckpt-7", NULL);
  weft_checkpoint_writer_t *w = NULL;
  OK(weft_checkpoint_writer_new(a, &w));
  weft_tensor_t *t = weft_tensor_new_scalar_float(1.25f);
  OK(weft_checkpoint_writer_add(w, "ps0/W", t));
  weft_tensor_unref(t);
  t = weft_tensor_new_string("hello", 5);
  OK(weft_checkpoint_writer_add(w, "ps0/name", t));
  weft_tensor_unref(t);
  OK(weft_checkpoint_writer_finish(w));
  weft_checkpoint_writer_free(w);
  OK(weft_checkpoint_writer_new(b, &w));
  t = weft_tensor_new_scalar_float(-2.5f);
  OK(weft_checkpoint_writer_add(w, "ps1/b", t));
  weft_tensor_unref(t);
  OK(weft_checkpoint_writer_finish(w));
  weft_checkpoint_writer_free(w);

  const char *inputs[] = {a, b};
  OK(weft_checkpoint_merge(inputs, 2, out, true));
  char *d0 = g_strconcat(out, ".data-00000-of-00002", NULL);
  char *d1 = g_strconcat(out, ".data-00001-of-00002", NULL);
  g_assert_true(g_file_test(d0, G_FILE_TEST_IS_REGULAR));
  g_assert_true(g_file_test(d1, G_FILE_TEST_IS_REGULAR));
  char *a_index = g_strconcat(a, ".index", NULL);
  g_assert_false(g_file_test(a_index, G_FILE_TEST_EXISTS));
  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(out, &r));
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, 3);
  g_assert_cmpfloat(read_scalar_float(r, "ps0/W"), ==, 1.25f);
  g_assert_cmpfloat(read_scalar_float(r, "ps1/b"), ==, -2.5f);
  OK(weft_checkpoint_reader_read(r, "ps0/name", &t));
  g_assert_cmpstr(((weft_string_t *)weft_tensor_data(t))[0].data, ==, "hello");
  weft_tensor_unref(t);
  weft_checkpoint_reader_free(r);
  /* A corrupted byte in the second shard names that shard's file. */
  flip_byte(d1, 1);
  OK(weft_checkpoint_reader_open(out, &r));
  expect_error(weft_checkpoint_reader_read(r, "ps1/b", &t), WEFT_DATA_LOSS, d1, "ps1/b", NULL);
  weft_checkpoint_reader_free(r);

  /* The same key in two inputs. */
  write_simple(a, 1, false);
  write_simple(b, 2, false);
  char *bad = g_build_filename(dir, "bad", NULL);
  expect_error(weft_checkpoint_merge(inputs, 2, bad, false), WEFT_INVALID_ARGUMENT, "dense/",
               "more than one input", NULL);
  char *bad_index = g_strconcat(bad, ".index", NULL);
  g_assert_false(g_file_test(bad_index, G_FILE_TEST_EXISTS));
  /* A missing input. */
  const char *missing[] = {a, bad};
  expect_error(weft_checkpoint_merge(missing, 2, out, false), WEFT_NOT_FOUND, bad, NULL, NULL);
  g_free(bad_index);
  g_free(bad);
  g_free(a_index);
  g_free(d0);
  g_free(d1);
  g_free(out);
  g_free(a);
  g_free(b);
  rm_rf(dir);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Saver over a session */

typedef struct model {
  weft_graph_t *graph;
  weft_session_t *session;
} model_t;

/* W: float [2,2], b: float [2] (or [3] with wide_b), step: int64 scalar. */
static model_t build_model(float w0, bool wide_b, bool extra) {
  model_t m;
  m.graph = weft_graph_new();
  weft_status_t *st = NULL;
  float wv[4] = {w0, w0 + 1, w0 + 2, w0 + 3};
  int64_t d22[2] = {2, 2};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, d22, wv, sizeof wv, NULL);
  weft_output_t c = weft_const(m.graph, "W_init", t, &st);
  OK(st);
  weft_tensor_unref(t);
  weft_variable(m.graph, "W", c, &st);
  OK(st);
  float bv[3] = {0.5f, -0.5f, 9};
  int64_t db[1] = {wide_b ? 3 : 2};
  t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, db, bv, sizeof(float) * (size_t)db[0], NULL);
  c = weft_const(m.graph, "b_init", t, &st);
  OK(st);
  weft_tensor_unref(t);
  weft_variable(m.graph, "b", c, &st);
  OK(st);
  int64_t step = 41;
  t = weft_tensor_new_from_data(WEFT_DT_INT64, 0, NULL, &step, sizeof step, NULL);
  c = weft_const(m.graph, "step_init", t, &st);
  OK(st);
  weft_tensor_unref(t);
  weft_variable(m.graph, "global_step", c, &st);
  OK(st);
  if (extra) {
    c = weft_const_float(m.graph, "extra_init", 1, &st);
    OK(st);
    weft_variable(m.graph, "extra", c, &st);
    OK(st);
  }
  weft_global_variables_initializer(m.graph, "init", &st);
  OK(st);
  m.session = weft_session_new(m.graph, NULL, &st);
  OK(st);
  return m;
}

static void model_free(model_t *m) {
  weft_session_free(m->session);
  weft_graph_free(m->graph);
}

static void run_init(model_t *m) {
  const char *targets[] = {"init"};
  OK(weft_session_run(m->session, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
}

static weft_tensor_t *fetch(model_t *m, const char *name) {
  weft_tensor_t *out = NULL;
  OK(weft_session_run(m->session, NULL, NULL, 0, &name, &out, 1, NULL, 0));
  return out;
}

static void count_initialised(void *user, const char *device, const char *container,
                              const char *name, weft__variable_t *var) {
  g_test_message("restored variable %s on %s", name, device);
  if (var->value && *device && !*container) ++*(int *)user;
}

static void test_saver(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "train", "model.ckpt", NULL);
  char *train_dir = g_build_filename(dir, "train", NULL);

  model_t a = build_model(10, false, false);
  /* Nothing initialised yet. */
  expect_error(weft_saver_save(NULL, a.session, NULL, prefix, 0, NULL), WEFT_FAILED_PRECONDITION,
               "uninitialized", "'W'", NULL);
  run_init(&a);
  char *saved = NULL;
  OK(weft_saver_save(NULL, a.session, NULL, prefix, 100, &saved));
  char *want = g_strconcat(prefix, "-100", NULL);
  g_assert_cmpstr(saved, ==, want);
  char *latest = weft_checkpoint_latest(train_dir);
  g_assert_cmpstr(latest, ==, want);
  g_free(latest);
  /* The state file names it relative to the folder, as TensorFlow's relative paths do. */
  char *state_path = g_build_filename(train_dir, "checkpoint", NULL);
  gchar *state;
  g_assert_true(g_file_get_contents(state_path, &state, NULL, NULL));
  g_assert_nonnull(strstr(state, "model_checkpoint_path: \"model.ckpt-100\""));
  g_assert_nonnull(strstr(state, "all_model_checkpoint_paths: \"model.ckpt-100\""));
  g_free(state);
  g_free(state_path);

  /* What was written is a plain bundle keyed by variable name. */
  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(saved, &r));
  g_assert_cmpint(weft_checkpoint_reader_num_tensors(r), ==, 3);
  g_assert_cmpstr(weft_checkpoint_reader_key(r, 0), ==, "W");
  g_assert_cmpstr(weft_checkpoint_reader_key(r, 1), ==, "b");
  g_assert_cmpstr(weft_checkpoint_reader_key(r, 2), ==, "global_step");
  weft_checkpoint_reader_free(r);

  /* A fresh session over a graph with other initial values: restore brings the saved ones. */
  model_t b = build_model(-3, false, false);
  OK(weft_saver_restore(NULL, b.session, NULL, saved));
  weft_tensor_t *w = fetch(&b, "W");
  g_assert_cmpfloat(((float *)weft_tensor_data(w))[0], ==, 10);
  g_assert_cmpfloat(((float *)weft_tensor_data(w))[3], ==, 13);
  weft_tensor_unref(w);
  weft_tensor_t *step = fetch(&b, "global_step");
  g_assert_cmpint(((int64_t *)weft_tensor_data(step))[0], ==, 41);
  weft_tensor_unref(step);
  /* The restored variables live in the session's resource manager. */
  int n_init = 0;
  weft__resource_mgr_foreach(weft__session_resources(b.session), count_initialised, &n_init);
  g_assert_cmpint(n_init, ==, 3);
  weft_tensor_t *bias = fetch(&b, "b/read");
  g_assert_cmpfloat(((float *)weft_tensor_data(bias))[1], ==, -0.5f);
  weft_tensor_unref(bias);
  /* Restoring over initialised variables replaces their values too. */
  model_t b2 = build_model(-3, false, false);
  run_init(&b2);
  OK(weft_saver_restore(NULL, b2.session, NULL, saved));
  w = fetch(&b2, "W");
  g_assert_cmpfloat(((float *)weft_tensor_data(w))[2], ==, 12);
  weft_tensor_unref(w);
  model_free(&b2);
  model_free(&b);

  /* A variable the checkpoint lacks. */
  model_t c = build_model(0, false, true);
  expect_error(weft_saver_restore(NULL, c.session, NULL, saved), WEFT_NOT_FOUND, "'extra'", saved,
               NULL);
  /* ... unless the saver is limited to the others. */
  weft_saver_t *limited = weft_saver_new(5);
  const char *names[] = {"W", "b"};
  weft_saver_set_var_list(limited, names, 2);
  OK(weft_saver_restore(limited, c.session, NULL, saved));
  w = fetch(&c, "W");
  g_assert_cmpfloat(((float *)weft_tensor_data(w))[1], ==, 11);
  weft_tensor_unref(w);
  weft_saver_free(limited);
  model_free(&c);

  /* A shape mismatch names the variable and both shapes. */
  model_t d = build_model(0, true, false);
  expect_error(weft_saver_restore(NULL, d.session, NULL, saved), WEFT_INVALID_ARGUMENT, "'b'",
               "[3]", "[2]");
  model_free(&d);

  /* A corrupted checkpoint is refused and leaves the variables alone. */
  char *data = g_strconcat(saved, ".data-00000-of-00001", NULL);
  flip_byte(data, 2);
  model_t e = build_model(5, false, false);
  run_init(&e);
  expect_error(weft_saver_restore(NULL, e.session, NULL, saved), WEFT_DATA_LOSS, "'W'", data, NULL);
  w = fetch(&e, "W");
  g_assert_cmpfloat(((float *)weft_tensor_data(w))[0], ==, 5);
  weft_tensor_unref(w);
  model_free(&e);
  g_free(data);

  model_free(&a);
  g_free(want);
  g_free(saved);
  g_free(train_dir);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static void test_saver_dtype_mismatch(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "m", NULL);
  /* A checkpoint whose W is int32. */
  weft_checkpoint_writer_t *w = NULL;
  OK(weft_checkpoint_writer_new(prefix, &w));
  int32_t v[4] = {1, 2, 3, 4};
  int64_t dims[2] = {2, 2};
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_INT32, 2, dims, v, sizeof v, NULL);
  OK(weft_checkpoint_writer_add(w, "W", t));
  weft_tensor_unref(t);
  OK(weft_checkpoint_writer_finish(w));
  weft_checkpoint_writer_free(w);
  model_t m = build_model(0, false, false);
  weft_saver_t *s = weft_saver_new(0);
  const char *names[] = {"W"};
  weft_saver_set_var_list(s, names, 1);
  expect_error(weft_saver_restore(s, m.session, NULL, prefix), WEFT_INVALID_ARGUMENT, "'W'",
               "float32", "int32");
  weft_saver_free(s);
  model_free(&m);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static bool exists_ckpt(const char *prefix, int64_t step) {
  char *p = g_strdup_printf("%s-%" G_GINT64_FORMAT ".index", prefix, step);
  char *d = g_strdup_printf("%s-%" G_GINT64_FORMAT ".data-00000-of-00001", prefix, step);
  bool a = g_file_test(p, G_FILE_TEST_EXISTS), b = g_file_test(d, G_FILE_TEST_EXISTS);
  g_assert_true(a == b);
  g_free(p);
  g_free(d);
  return a;
}

static void test_max_to_keep(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "model.ckpt", NULL);
  model_t m = build_model(1, false, false);
  run_init(&m);
  weft_saver_t *s = weft_saver_new(2);
  for (int step = 1; step <= 4; step++) OK(weft_saver_save(s, m.session, NULL, prefix, step, NULL));
  g_assert_false(exists_ckpt(prefix, 1));
  g_assert_false(exists_ckpt(prefix, 2));
  g_assert_true(exists_ckpt(prefix, 3));
  g_assert_true(exists_ckpt(prefix, 4));
  char *latest = NULL;
  char **all = NULL;
  OK(weft_checkpoint_state_read(dir, &latest, &all));
  char *p3 = g_strconcat(prefix, "-3", NULL), *p4 = g_strconcat(prefix, "-4", NULL);
  g_assert_cmpstr(latest, ==, p4);
  g_assert_cmpuint(g_strv_length(all), ==, 2);
  g_assert_cmpstr(all[0], ==, p3);
  g_assert_cmpstr(all[1], ==, p4);
  g_strfreev(all);
  g_free(latest);
  weft_saver_free(s);

  /* A new saver (a restarted program) picks the list up from the state file. */
  s = weft_saver_new(2);
  OK(weft_saver_save(s, m.session, NULL, prefix, 5, NULL));
  g_assert_false(exists_ckpt(prefix, 3));
  g_assert_true(exists_ckpt(prefix, 4));
  g_assert_true(exists_ckpt(prefix, 5));
  /* Saving the same step again keeps one entry for it. */
  OK(weft_saver_save(s, m.session, NULL, prefix, 5, NULL));
  g_assert_true(exists_ckpt(prefix, 4));
  weft_saver_free(s);
  /* max_to_keep 0 keeps everything. */
  s = weft_saver_new(0);
  for (int step = 6; step <= 8; step++) OK(weft_saver_save(s, m.session, NULL, prefix, step, NULL));
  g_assert_true(exists_ckpt(prefix, 4));
  g_assert_true(exists_ckpt(prefix, 8));
  weft_saver_free(s);
  g_free(p3);
  g_free(p4);
  model_free(&m);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static void touch(const char *dir, const char *name) {
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, "x", 1, NULL));
  g_free(path);
}

static bool present(const char *dir, const char *name) {
  char *path = g_build_filename(dir, name, NULL);
  bool yes = g_file_test(path, G_FILE_TEST_EXISTS);
  g_free(path);
  return yes;
}

/* Temporary files that writers killed half way left: the ones of this prefix whose process is
 * gone go (files, and the part files and folder of a sharded save); those of a live process or
 * of this one, of another prefix, or not named as the writers name them stay. The saver does it
 * before each save. */
static void test_stale_temp_files(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "model.ckpt", NULL);
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  g_assert_cmpint(dead, >, 0);
  g_assert_cmpint(waitpid(dead, NULL, 0), ==, dead);
  char *gone[] = {
      g_strdup_printf("model.ckpt-5.data-00000-of-00001.tempstate%d-0badc0de", (int)dead),
      g_strdup_printf("model.ckpt-5.index.tempstate%d-12345678", (int)dead),
      g_strdup_printf("model.ckpt.index.tempstate%d-abcdef01", (int)dead),
      NULL};
  char *stay[] = {
      g_strdup_printf("model.ckpt-5.data-00000-of-00001.tempstate%d-0badc0de", (int)getpid()),
      g_strdup_printf("model.ckpt-5.data-00000-of-00001.tempstate%d-0badc0de", (int)getppid()),
      g_strdup_printf("other.ckpt-5.data-00000-of-00001.tempstate%d-0badc0de", (int)dead),
      g_strdup_printf("model.ckpt-5.data-00000-of-00001.tempstate%d-0badc0de.keep", (int)dead),
      g_strdup_printf("xmodel.ckpt-5.index.tempstate%d-12345678", (int)dead),
      g_strdup("model.ckpt-5.data-00000-of-00001"),
      g_strdup("notes.txt"),
      NULL};
  for (int i = 0; gone[i]; i++) touch(dir, gone[i]);
  for (int i = 0; stay[i]; i++) touch(dir, stay[i]);
  /* A sharded save's folder: its parts go, then the folder. One with something else inside
   * loses its parts only. */
  char *shard_dir = g_strdup_printf("%s-7_temp_%d-0123456789abcdef", prefix, (int)dead);
  char *other_dir = g_strdup_printf("%s-8_temp_%d-0123456789abcdef", prefix, (int)dead);
  g_assert_cmpint(g_mkdir(shard_dir, 0755), ==, 0);
  g_assert_cmpint(g_mkdir(other_dir, 0755), ==, 0);
  touch(shard_dir, "part-00000-of-00002.data-00000-of-00001");
  char *part_temp = g_strdup_printf("part-00001-of-00002.index.tempstate%d-0badc0de", (int)dead);
  touch(shard_dir, part_temp);
  touch(other_dir, "part-00000-of-00002.index");
  touch(other_dir, "mine.txt");
  int removed = -1;
  OK(weft_checkpoint_remove_stale_temp_files(prefix, &removed));
  g_assert_cmpint(removed, ==, 3 + 2 + 1 + 1);
  for (int i = 0; gone[i]; i++) g_assert_false(present(dir, gone[i]));
  for (int i = 0; stay[i]; i++) g_assert_true(present(dir, stay[i]));
  g_assert_false(g_file_test(shard_dir, G_FILE_TEST_EXISTS));
  g_assert_true(present(other_dir, "mine.txt"));
  g_assert_false(present(other_dir, "part-00000-of-00002.index"));
  /* Nothing left to do: nothing more goes. */
  OK(weft_checkpoint_remove_stale_temp_files(prefix, &removed));
  g_assert_cmpint(removed, ==, 0);
  /* The saver cleans up before it saves. */
  touch(dir, gone[0]);
  model_t m = build_model(1, false, false);
  run_init(&m);
  weft_saver_t *s = weft_saver_new(5);
  OK(weft_saver_save(s, m.session, NULL, prefix, 9, NULL));
  g_assert_false(present(dir, gone[0]));
  g_assert_true(present(dir, stay[0]));
  weft_saver_free(s);
  model_free(&m);
  /* A folder that does not exist has nothing to clean. */
  char *nowhere = g_build_filename(dir, "nowhere", "model.ckpt", NULL);
  OK(weft_checkpoint_remove_stale_temp_files(nowhere, &removed));
  g_assert_cmpint(removed, ==, 0);
  g_free(nowhere);
  for (int i = 0; gone[i]; i++) g_free(gone[i]);
  for (int i = 0; stay[i]; i++) g_free(stay[i]);
  g_free(part_temp);
  g_free(shard_dir);
  g_free(other_dir);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

/* Sets the modification time of DIR/NAME to 2001, before any process of this machine started. */
static void backdate(const char *dir, const char *name) {
  char *path = g_build_filename(dir, name, NULL);
  struct utimbuf t = {.actime = 1000000000, .modtime = 1000000000};
  g_assert_cmpint(g_utime(path, &t), ==, 0);
  g_free(path);
}

/* A pid reused: a trainer killed during a save and restarted as pid 1 of its container again, or
 * any process that took the dead writer's pid. Files last written before that process started
 * cannot be its and go (they stayed for good); what it writes now, and files of a live process
 * written since it started, stay. */
static void test_stale_temp_files_pid_reused(void) {
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "model.ckpt", NULL);
  char *gone[] = {
      g_strdup_printf("model.ckpt-5.data-00000-of-00001.tempstate%d-0badc0de", (int)getpid()),
      g_strdup_printf("model.ckpt-6.index.tempstate%d-12345678", (int)getppid()),
      NULL};
  char *stay[] = {
      g_strdup_printf("model.ckpt-7.data-00000-of-00001.tempstate%d-0badc0de", (int)getpid()),
      g_strdup_printf("model.ckpt-7.index.tempstate%d-12345678", (int)getppid()),
      NULL};
  for (int i = 0; gone[i]; i++) {
    touch(dir, gone[i]);
    backdate(dir, gone[i]);
  }
  for (int i = 0; stay[i]; i++) touch(dir, stay[i]);
  char *shard_dir = g_strdup_printf("%s-8_temp_%d-0123456789abcdef", prefix, (int)getpid());
  g_assert_cmpint(g_mkdir(shard_dir, 0755), ==, 0);
  char *shard_name = g_path_get_basename(shard_dir);
  backdate(dir, shard_name);
  int removed = -1;
  OK(weft_checkpoint_remove_stale_temp_files(prefix, &removed));
  g_assert_cmpint(removed, ==, 3);
  for (int i = 0; gone[i]; i++) g_assert_false(present(dir, gone[i]));
  for (int i = 0; stay[i]; i++) g_assert_true(present(dir, stay[i]));
  g_assert_false(g_file_test(shard_dir, G_FILE_TEST_EXISTS));
  for (int i = 0; gone[i]; i++) g_free(gone[i]);
  for (int i = 0; stay[i]; i++) g_free(stay[i]);
  g_free(shard_name);
  g_free(shard_dir);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

/* Copies checkpoint `from`'s files (index, one data shard) to the names of checkpoint `to`. */
static void copy_ckpt(const char *prefix, int from, int to) {
  const char *suffixes[] = {".index", ".data-00000-of-00001"};
  for (int i = 0; i < 2; i++) {
    char *src = g_strdup_printf("%s-%d%s", prefix, from, suffixes[i]);
    char *dst = g_strdup_printf("%s-%d%s", prefix, to, suffixes[i]);
    char *bytes = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(src, &bytes, &len, NULL));
    g_assert_true(g_file_set_contents(dst, bytes, (gssize)len, NULL));
    g_free(bytes);
    g_free(src);
    g_free(dst);
  }
}

/* A saver (max_to_keep 2) killed after its state file named steps 2 and 3 but before it deleted
 * step 1 left step 1 on disk (made here by copying step 2's files, plus a second data shard):
 * the next saver's save of step 4 removes it (index and both shards) along with step 2, which it
 * dropped itself, and says so on stderr; files of another prefix, names the saver never writes,
 * a step newer than the oldest kept that no state file names, and a folder named like a
 * checkpoint stay. Without a state file nothing is removed. */
static void test_orphaned_checkpoints(void) {
  if (g_test_subprocess()) {
    char *dir = g_strdup(g_getenv("WEFT_TEST_ORPHAN_DIR"));
    char *prefix = g_build_filename(dir, "model.ckpt", NULL);
    model_t m = build_model(1, false, false);
    run_init(&m);
    weft_saver_t *s = weft_saver_new(2);
    OK(weft_saver_save(s, m.session, NULL, prefix, 4, NULL));
    weft_saver_free(s);
    model_free(&m);
    g_free(prefix);
    g_free(dir);
    return;
  }
  char *dir = tmpdir();
  char *prefix = g_build_filename(dir, "model.ckpt", NULL);
  model_t m = build_model(1, false, false);
  run_init(&m);
  weft_saver_t *s = weft_saver_new(2);
  for (int step = 1; step <= 3; step++) OK(weft_saver_save(s, m.session, NULL, prefix, step, NULL));
  weft_saver_free(s);
  g_assert_false(exists_ckpt(prefix, 1));
  copy_ckpt(prefix, 2, 1);
  touch(dir, "model.ckpt-1.data-00001-of-00002");
  const char *stay[] = {"model.ckpt-1.index.bak", "model.ckpt-1x.index", "other.ckpt-1.index",
                        "model.ckpt-0.data-00000-of-00001.keep", "model.ckpt-01.meta",
                        "xmodel.ckpt-1.index", "model.ckpt-9.index", "notes.txt", NULL};
  for (int i = 0; stay[i]; i++) touch(dir, stay[i]);
  char *folder = g_build_filename(dir, "model.ckpt-0.index", NULL);
  g_assert_cmpint(g_mkdir(folder, 0755), ==, 0);

  /* The next program's saver, in a child so that its log can be read. */
  g_setenv("WEFT_TEST_ORPHAN_DIR", dir, TRUE);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  char *expected = g_strdup_printf("*W checkpoint: removed '%s-1.index': a checkpoint older than "
                                   "the oldest one kept (step 3) that no state file names, left "
                                   "by a saver stopped before it deleted it*", prefix);
  g_test_trap_assert_stderr(expected);
  g_free(expected);
  g_assert_false(present(dir, "model.ckpt-1.index"));
  g_assert_false(present(dir, "model.ckpt-1.data-00000-of-00001"));
  g_assert_false(present(dir, "model.ckpt-1.data-00001-of-00002"));
  g_assert_false(exists_ckpt(prefix, 2));
  g_assert_true(exists_ckpt(prefix, 3));
  g_assert_true(exists_ckpt(prefix, 4));
  for (int i = 0; stay[i]; i++) g_assert_true(present(dir, stay[i]));
  g_assert_true(g_file_test(folder, G_FILE_TEST_IS_DIR));
  /* The restored checkpoint is whole. */
  char *latest = weft_checkpoint_latest(dir);
  char *p4 = g_strconcat(prefix, "-4", NULL);
  g_assert_cmpstr(latest, ==, p4);
  g_free(p4);
  g_free(latest);

  /* No state file (deleted by hand): the older files are someone's, and stay. */
  char *state = g_build_filename(dir, "checkpoint", NULL);
  g_assert_cmpint(g_remove(state), ==, 0);
  copy_ckpt(prefix, 3, 1);
  s = weft_saver_new(2);
  OK(weft_saver_save(s, m.session, NULL, prefix, 5, NULL));
  weft_saver_free(s);
  g_assert_true(exists_ckpt(prefix, 1));
  g_assert_true(exists_ckpt(prefix, 3));
  g_free(state);
  g_free(folder);
  model_free(&m);
  g_free(prefix);
  rm_rf(dir);
  g_free(dir);
}

static void test_state_file(void) {
  char *dir = tmpdir();
  char *inside = g_build_filename(dir, "a b \"q\"", NULL);
  const char *all[] = {"/elsewhere/x-1", inside};
  OK(weft_checkpoint_state_write(dir, inside, all, 2));
  char *latest = NULL;
  char **paths = NULL;
  OK(weft_checkpoint_state_read(dir, &latest, &paths));
  g_assert_cmpstr(latest, ==, inside);
  g_assert_cmpstr(paths[0], ==, "/elsewhere/x-1");
  g_assert_cmpstr(paths[1], ==, inside);
  g_strfreev(paths);
  g_free(latest);
  /* The latest prefix has no index, so there is no latest checkpoint. */
  g_assert_null(weft_checkpoint_latest(dir));
  char *empty = g_build_filename(dir, "empty", NULL);
  g_mkdir(empty, 0755);
  expect_error(weft_checkpoint_state_read(empty, &latest, NULL), WEFT_NOT_FOUND, "checkpoint",
               NULL, NULL);
  g_free(empty);
  g_free(inside);
  rm_rf(dir);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/checkpoint/corpus/regression", test_corpus_regression);
  g_test_add_func("/checkpoint/corpus/half_plus_two", test_corpus_half_plus_two);
  g_test_add_func("/checkpoint/corpus/others", test_corpus_others);
  g_test_add_func("/checkpoint/corpus/rewrite_identical", test_corpus_rewrite_identical);
  g_test_add_func("/checkpoint/roundtrip/dtypes", test_roundtrip_dtypes);
  g_test_add_func("/checkpoint/roundtrip/dtypes_snappy", test_roundtrip_dtypes_snappy);
  g_test_add_func("/checkpoint/roundtrip/many_keys", test_many_keys);
  g_test_add_func("/checkpoint/roundtrip/many_keys_snappy", test_many_keys_snappy);
  g_test_add_func("/checkpoint/corruption", test_corruption);
  g_test_add_func("/checkpoint/corruption/every_byte", test_corruption_every_byte);
  g_test_add_func("/checkpoint/atomic", test_atomic);
  g_test_add_func("/checkpoint/merge_shards", test_merge_shards);
  g_test_add_func("/checkpoint/state_file", test_state_file);
  g_test_add_func("/checkpoint/saver", test_saver);
  g_test_add_func("/checkpoint/saver/dtype_mismatch", test_saver_dtype_mismatch);
  g_test_add_func("/checkpoint/saver/max_to_keep", test_max_to_keep);
  g_test_add_func("/checkpoint/saver/stale_temp_files", test_stale_temp_files);
  g_test_add_func("/checkpoint/saver/stale_temp_files_pid_reused",
                  test_stale_temp_files_pid_reused);
  g_test_add_func("/checkpoint/saver/orphaned_checkpoints", test_orphaned_checkpoints);
  return g_test_run();
}
