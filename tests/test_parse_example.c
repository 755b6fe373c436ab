/* ParseExample, ParseExampleV2 and ParseSingleExample on tf.Example bytes built here by hand from
 * the wire format (tensorflow/core/example/example.proto, feature.proto): dense features with
 * and without defaults, sparse features as indices/values/dense_shape, and TensorFlow's errors
 * for a missing required feature, a wrong type, a wrong count, bytes that are no Example, and
 * ragged keys (refused). */
#include <string.h>

#include <glib.h>

#include "weft/weft.h"

#define OK(expr)                                                                  \
  do {                                                                            \
    weft_status_t *st_ = (expr);                                                  \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                  \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * The wire format */

static void put_varint(GByteArray *b, uint64_t v) {
  do {
    uint8_t byte = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) byte |= 0x80;
    g_byte_array_append(b, &byte, 1);
  } while (v);
}

/* Field `field` of wire type 2 holding `len` bytes. */
static void put_bytes(GByteArray *b, int field, const void *data, size_t len) {
  put_varint(b, (uint64_t)field << 3 | 2);
  put_varint(b, len);
  g_byte_array_append(b, data, (guint)len);
}

static void put_msg(GByteArray *b, int field, GByteArray *msg) {
  put_bytes(b, field, msg->data, msg->len);
  g_byte_array_unref(msg);
}

/* Feature{float_list{value: packed}} */
static GByteArray *floats(int n, const float *v) {
  GByteArray *list = g_byte_array_new(), *f = g_byte_array_new();
  put_bytes(list, 1, v, sizeof(float) * (size_t)n);
  put_msg(f, 2, list);
  return f;
}

/* Feature{int64_list{value: packed varints}} */
static GByteArray *ints(int n, const int64_t *v) {
  GByteArray *packed = g_byte_array_new(), *list = g_byte_array_new(), *f = g_byte_array_new();
  for (int k = 0; k < n; k++) put_varint(packed, (uint64_t)v[k]);
  put_msg(list, 1, packed);
  put_msg(f, 3, list);
  return f;
}

/* Feature{bytes_list{value, value, ...}} */
static GByteArray *strs(int n, const char *const *v) {
  GByteArray *list = g_byte_array_new(), *f = g_byte_array_new();
  for (int k = 0; k < n; k++) put_bytes(list, 1, v[k], strlen(v[k]));
  put_msg(f, 1, list);
  return f;
}

/* Example{features{feature: {keys[k]: features[k]}}}, taking the features. */
static GByteArray *example(int n, const char *const *keys, GByteArray **features) {
  GByteArray *fs = g_byte_array_new(), *ex = g_byte_array_new();
  for (int k = 0; k < n; k++) {
    GByteArray *entry = g_byte_array_new();
    put_bytes(entry, 1, keys[k], strlen(keys[k]));
    put_msg(entry, 2, features[k]);
    put_msg(fs, 1, entry);
  }
  put_msg(ex, 1, fs);
  return ex;
}

/* ---------------------------------------------------------------------------------------------
 * Graphs */

static weft_output_t const_tensor(weft_graph_t *g, const char *name, weft_tensor_t *t) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t strings(weft_graph_t *g, const char *name, int rank, int n,
                             GByteArray **bytes) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, rank, dims);
  for (int k = 0; k < n; k++) OK(weft_tensor_set_string(t, k, (const char *)bytes[k]->data,
                                                        bytes[k]->len));
  return const_tensor(g, name, t);
}

static weft_output_t text(weft_graph_t *g, const char *name, const char *s) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, 0, NULL);
  OK(weft_tensor_set_string(t, 0, s, strlen(s)));
  return const_tensor(g, name, t);
}

static weft_output_t text_vec(weft_graph_t *g, const char *name, int n, const char *const *s) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, 1, dims);
  for (int k = 0; k < n; k++) OK(weft_tensor_set_string(t, k, s[k], strlen(s[k])));
  return const_tensor(g, name, t);
}

/* The defaults: age (int64 []) required, score (float [2]) defaulting to [9, 9]. */
static void defaults(weft_graph_t *g, weft_output_t *out) {
  int64_t zero = 0, two = 2;
  out[0] = const_tensor(g, "age_default", weft_tensor_new(WEFT_DT_INT64, 1, &zero));
  weft_tensor_t *s = weft_tensor_new(WEFT_DT_FLOAT, 1, &two);
  ((float *)weft_tensor_data(s))[0] = 9;
  ((float *)weft_tensor_data(s))[1] = 9;
  out[1] = const_tensor(g, "score_default", s);
}

static const weft_dtype_t kTdense[] = {WEFT_DT_INT64, WEFT_DT_FLOAT};
static const weft_dtype_t kSparseTypes[] = {WEFT_DT_STRING};
static const int kRanks[] = {0, 1};
static const int64_t kScoreDims[] = {2};
static const int64_t *const kDims[] = {NULL, kScoreDims};

static void dense_attrs(weft_op_builder_t *b) {
  weft_op_set_attr_type_list(b, "sparse_types", kSparseTypes, 1);
  weft_op_set_attr_type_list(b, "Tdense", kTdense, 2);
  weft_op_set_attr_shape_list(b, "dense_shapes", kRanks, kDims, 2);
}

static void parse_v1(weft_graph_t *g, weft_output_t serialized) {
  weft_output_t d[2];
  defaults(g, d);
  weft_output_t sk = text(g, "sk", "tags");
  weft_output_t dk[2] = {text(g, "dk0", "age"), text(g, "dk1", "score")};
  weft_op_builder_t *b = weft_op_new(g, "ParseExample", "parse");
  weft_op_add_input(b, serialized);
  weft_op_add_input(b, text_vec(g, "names", 0, NULL));
  weft_op_add_input_list(b, &sk, 1);
  weft_op_add_input_list(b, dk, 2);
  weft_op_add_input_list(b, d, 2);
  weft_op_set_attr_int(b, "Nsparse", 1);
  weft_op_set_attr_int(b, "Ndense", 2);
  dense_attrs(b);
  OK(weft_op_finish(b, NULL));
}

static void parse_v2(weft_graph_t *g, weft_output_t serialized, bool ragged) {
  weft_output_t d[2];
  defaults(g, d);
  static const char *const sk[] = {"tags"}, *const dk[] = {"age", "score"};
  static const char *const rk[] = {"r"};
  weft_op_builder_t *b = weft_op_new(g, "ParseExampleV2", "parse");
  weft_op_add_input(b, serialized);
  weft_op_add_input(b, text_vec(g, "names", 0, NULL));
  weft_op_add_input(b, text_vec(g, "sk", 1, sk));
  weft_op_add_input(b, text_vec(g, "dk", 2, dk));
  weft_op_add_input(b, text_vec(g, "rk", ragged ? 1 : 0, rk));
  weft_op_add_input_list(b, d, 2);
  weft_op_set_attr_int(b, "num_sparse", 1);
  weft_op_set_attr_type_list(b, "ragged_value_types", NULL, 0);
  weft_op_set_attr_type_list(b, "ragged_split_types", NULL, 0);
  dense_attrs(b);
  OK(weft_op_finish(b, NULL));
}

static void parse_single(weft_graph_t *g, weft_output_t serialized) {
  weft_output_t d[2];
  defaults(g, d);
  static const char *const sk[] = {"tags"}, *const dk[] = {"age", "score"};
  weft_op_builder_t *b = weft_op_new(g, "ParseSingleExample", "parse");
  weft_op_add_input(b, serialized);
  weft_op_add_input_list(b, d, 2);
  weft_op_set_attr_int(b, "num_sparse", 1);
  weft_op_set_attr_string_list(b, "sparse_keys", sk, 1);
  weft_op_set_attr_string_list(b, "dense_keys", dk, 2);
  dense_attrs(b);
  OK(weft_op_finish(b, NULL));
}

/* ex0 {age: [31], score: [0.5, 1.5], tags: ["a", "bc"]}, ex1 {age: [40], tags: ["d"]}. */
static void two_examples(GByteArray **ex) {
  static const char *const k0[] = {"age", "score", "tags"}, *const k1[] = {"tags", "age"};
  static const char *const t0[] = {"a", "bc"}, *const t1[] = {"d"};
  GByteArray *f0[] = {ints(1, (const int64_t[]){31}), floats(2, (const float[]){0.5f, 1.5f}),
                      strs(2, t0)};
  GByteArray *f1[] = {strs(1, t1), ints(1, (const int64_t[]){40})};
  ex[0] = example(3, k0, f0);
  ex[1] = example(2, k1, f1);
}

static weft_status_t *run(weft_graph_t *g, int n, weft_tensor_t **out) {
  static const char *const fetch[] = {"parse:0", "parse:1", "parse:2", "parse:3", "parse:4"};
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  st = weft_session_run(s, NULL, NULL, 0, fetch, out, n, NULL, 0);
  weft_session_free(s);
  return st;
}

static void assert_ints(const weft_tensor_t *t, int rank, const int64_t *dims, const int64_t *v) {
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_INT64);
  g_assert_cmpint(weft_tensor_rank(t), ==, rank);
  for (int d = 0; d < rank; d++) g_assert_cmpint(weft_tensor_dims(t)[d], ==, dims[d]);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++)
    g_assert_cmpint(((const int64_t *)weft_tensor_data(t))[k], ==, v[k]);
}

static void assert_strings(const weft_tensor_t *t, int n, const char *const *v) {
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_STRING);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  for (int k = 0; k < n; k++) {
    const weft_string_t *s = (const weft_string_t *)weft_tensor_data(t) + k;
    g_assert_cmpint((int)s->len, ==, (int)strlen(v[k]));
    g_assert_cmpint(memcmp(s->data, v[k], s->len), ==, 0);
  }
}

static void assert_floats(const weft_tensor_t *t, int rank, const int64_t *dims, const float *v) {
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_rank(t), ==, rank);
  for (int d = 0; d < rank; d++) g_assert_cmpint(weft_tensor_dims(t)[d], ==, dims[d]);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++)
    g_assert_cmpfloat(((const float *)weft_tensor_data(t))[k], ==, v[k]);
}

static void check_batch(weft_tensor_t **out) {
  static const char *const tags[] = {"a", "bc", "d"};
  assert_ints(out[0], 2, (const int64_t[]){3, 2}, (const int64_t[]){0, 0, 0, 1, 1, 0});
  assert_strings(out[1], 3, tags);
  assert_ints(out[2], 1, (const int64_t[]){2}, (const int64_t[]){2, 2});
  assert_ints(out[3], 1, (const int64_t[]){2}, (const int64_t[]){31, 40});
  assert_floats(out[4], 2, (const int64_t[]){2, 2}, (const float[]){0.5f, 1.5f, 9, 9});
  for (int k = 0; k < 5; k++) weft_tensor_unref(out[k]);
}

static void test_parse_batch(void) {
  for (int v2 = 0; v2 < 2; v2++) {
    GByteArray *ex[2];
    two_examples(ex);
    weft_graph_t *g = weft_graph_new();
    weft_output_t ser = strings(g, "serialized", 1, 2, ex);
    if (v2)
      parse_v2(g, ser, false);
    else
      parse_v1(g, ser);
    weft_tensor_t *out[5] = {0};
    OK(run(g, 5, out));
    check_batch(out);
    weft_graph_free(g);
    g_byte_array_unref(ex[0]);
    g_byte_array_unref(ex[1]);
  }
}

static void test_parse_single(void) {
  GByteArray *ex[2];
  two_examples(ex);
  weft_graph_t *g = weft_graph_new();
  parse_single(g, strings(g, "serialized", 0, 1, ex));
  weft_tensor_t *out[5] = {0};
  OK(run(g, 5, out));
  static const char *const tags[] = {"a", "bc"};
  assert_ints(out[0], 2, (const int64_t[]){2, 1}, (const int64_t[]){0, 1});
  assert_strings(out[1], 2, tags);
  assert_ints(out[2], 1, (const int64_t[]){1}, (const int64_t[]){2});
  assert_ints(out[3], 0, NULL, (const int64_t[]){31});
  assert_floats(out[4], 1, (const int64_t[]){2}, (const float[]){0.5f, 1.5f});
  for (int k = 0; k < 5; k++) weft_tensor_unref(out[k]);
  weft_graph_free(g);
  g_byte_array_unref(ex[0]);
  g_byte_array_unref(ex[1]);
}

static void expect_error(GByteArray *ex, int v2, weft_code_t code, const char *want) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t ser = strings(g, "serialized", 1, 1, &ex);
  if (v2)
    parse_v2(g, ser, v2 == 2);
  else
    parse_v1(g, ser);
  weft_tensor_t *out[5] = {0};
  weft_status_t *st = run(g, 5, out);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, code);
  if (strstr(weft_status_message(st), want) == NULL)
    g_assert_cmpstr(weft_status_message(st), ==, want);
  weft_status_free(st);
  weft_graph_free(g);
  g_byte_array_unref(ex);
}

static void test_errors(void) {
  static const char *const k_score[] = {"score"}, *const k_age[] = {"age"};
  static const char *const k_both[] = {"age", "score"};
  GByteArray *f[2] = {floats(2, (const float[]){1, 2})};
  expect_error(example(1, k_score, f), 0, WEFT_INVALID_ARGUMENT,
               "Name: <unknown>, Feature: age (data type: int64) is required but could not be "
               "found.");
  f[0] = floats(1, (const float[]){31});
  expect_error(example(1, k_age, f), 0, WEFT_INVALID_ARGUMENT,
               "Name: <unknown>, Feature: age.  Data types don't match. Data type: float but "
               "expected type: int64");
  f[0] = ints(1, (const int64_t[]){31});
  f[1] = floats(3, (const float[]){1, 2, 3});
  expect_error(example(2, k_both, f), 1, WEFT_INVALID_ARGUMENT,
               "Name: <unknown>, Key: score, Index: 0.  Number of float values != expected.  "
               "values size: 3 but output shape: [2]");
  GByteArray *junk = g_byte_array_new();
  g_byte_array_append(junk, (const guint8 *)"\x0a\xff\xff", 3);
  expect_error(junk, 0, WEFT_INVALID_ARGUMENT,
               "Could not parse example input, value: '\\n\\377\\377'");
  f[0] = ints(1, (const int64_t[]){31});
  expect_error(example(1, k_age, f), 2, WEFT_UNIMPLEMENTED,
               "ragged features (ragged_keys) are not supported");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/parse_example/batch", test_parse_batch);
  g_test_add_func("/parse_example/single", test_parse_single);
  g_test_add_func("/parse_example/errors", test_errors);
  return g_test_run();
}
