/* cases_parsing.c: conformance cases of TensorFlow's ParseExample on tf.Example protos whose
 * bytes are built here field by field from the wire format of
 * tensorflow/core/example/{example,feature}.proto. The expected tensors follow the op's
 * documented semantics (tensorflow/core/ops/parsing_ops.cc): a dense key gives
 * [batch] + dense_shape filled from its default where an example lacks it; a sparse key gives
 * indices, values and dense_shape [batch, longest]. Errors are TensorFlow's messages. */
#include <string.h>

#include "reference.h"

static void put_varint(GString *b, uint64_t v) {
  do {
    char byte = (char)(v & 0x7f);
    v >>= 7;
    if (v) byte = (char)(byte | 0x80);
    g_string_append_c(b, byte);
  } while (v);
}

/* Appends field `field` (wire type 2) holding msg, and frees msg. */
static void put_field(GString *b, int field, GString *msg) {
  put_varint(b, (uint64_t)field << 3 | 2);
  put_varint(b, msg->len);
  g_string_append_len(b, msg->str, (gssize)msg->len);
  g_string_free(msg, TRUE);
}

static GString *float_feature(int n, const float *v) {
  GString *packed = g_string_new_len((const char *)v, (gssize)(sizeof(float) * (size_t)n));
  GString *list = g_string_new(NULL), *f = g_string_new(NULL);
  put_field(list, 1, packed);
  put_field(f, 2, list);
  return f;
}

static GString *int64_feature(int n, const int64_t *v) {
  GString *packed = g_string_new(NULL), *list = g_string_new(NULL), *f = g_string_new(NULL);
  for (int k = 0; k < n; k++) put_varint(packed, (uint64_t)v[k]);
  put_field(list, 1, packed);
  put_field(f, 3, list);
  return f;
}

static GString *bytes_feature(int n, const char *const *v) {
  GString *list = g_string_new(NULL), *f = g_string_new(NULL);
  for (int k = 0; k < n; k++) put_field(list, 1, g_string_new(v[k]));
  put_field(f, 1, list);
  return f;
}

/* Example{features{feature{key: value}...}}: takes the features. */
static GString *example(int n, const char *const *keys, GString **features) {
  GString *fs = g_string_new(NULL), *ex = g_string_new(NULL);
  for (int k = 0; k < n; k++) {
    GString *entry = g_string_new(NULL);
    put_field(entry, 1, g_string_new(keys[k]));
    put_field(entry, 2, features[k]);
    put_field(fs, 1, entry);
  }
  put_field(ex, 1, fs);
  return ex;
}

static cf_array_t *strings(int rank, int n, GString **v) {
  int64_t dims[1] = {n};
  cf_array_t *a = cf_array_new(WEFT_DT_STRING, rank, dims);
  for (int k = 0; k < n; k++) {
    g_string_assign(a->s[k], "");
    g_string_append_len(a->s[k], v[k]->str, (gssize)v[k]->len);
    g_string_free(v[k], TRUE);
  }
  return a;
}

static cf_array_t *text(const char *s) {
  cf_array_t *a = cf_array_new(WEFT_DT_STRING, 0, NULL);
  g_string_assign(a->s[0], s);
  return a;
}

static cf_array_t *matrix_ints(int64_t rows, int64_t cols, const int64_t *v) {
  cf_array_t *flat = cf_array_ints(WEFT_DT_INT64, rows * cols, v);
  cf_array_t *m = cf_array_reshape(flat, 2, (const int64_t[]){rows, cols});
  cf_array_free(flat);
  return m;
}

/* The keys: sparse "kw" (string); dense "id" (int64 [], required) and "w" (float [2], default
 * [-1, -1]). */
static const weft_dtype_t kSparseTypes[] = {WEFT_DT_STRING};
static const weft_dtype_t kTdense[] = {WEFT_DT_INT64, WEFT_DT_FLOAT};
static const int kRanks[] = {0, 1};
static const int64_t kW[] = {2};
static const int64_t *const kDims[] = {NULL, kW};

static cf_case_t *parse_case(const char *op, const char *name, int n, GString **ex) {
  cf_case_t *c = cf_case_new(op, name, WEFT_DT_INVALID);
  c->tol = (cf_tol_t){0, 0, 0};
  cf_case_input(c, strings(1, n, ex));
  cf_case_input(c, cf_array_new(WEFT_DT_STRING, 1, (const int64_t[]){0})); /* names */
  cf_case_input(c, text("kw"));
  cf_case_input(c, text("id"));
  cf_case_input(c, text("w"));
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 1, (const int64_t[]){0}));
  cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, 2, (const double[]){-1, -1}));
  cf_case_args(c, 5, (const int[]){0, 0, 1, 2, 2});
  cf_case_attr_int(c, "Nsparse", 1);
  cf_case_attr_int(c, "Ndense", 2);
  cf_case_attr_types(c, "sparse_types", kSparseTypes, 1);
  cf_case_attr_types(c, "Tdense", kTdense, 2);
  cf_case_attr_shapes(c, "dense_shapes", kRanks, kDims, 2);
  return c;
}

/* ex0 {id: [7], w: [0.25, 4], kw: ["x", "yz"]}, ex1 {kw: ["q"], id: [-3]}. */
static void two_examples(GString **ex) {
  static const char *const k0[] = {"id", "w", "kw"}, *const k1[] = {"kw", "id"};
  static const char *const kw0[] = {"x", "yz"}, *const kw1[] = {"q"};
  GString *f0[] = {int64_feature(1, (const int64_t[]){7}),
                   float_feature(2, (const float[]){0.25f, 4}), bytes_feature(2, kw0)};
  GString *f1[] = {bytes_feature(1, kw1), int64_feature(1, (const int64_t[]){-3})};
  ex[0] = example(3, k0, f0);
  ex[1] = example(2, k1, f1);
}

static void emit_parse_example(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  GString *ex[2];
  two_examples(ex);
  cf_case_t *c = parse_case(op, "dense_sparse_default", 2, ex);
  cf_case_expect(c, matrix_ints(3, 2, (const int64_t[]){0, 0, 0, 1, 1, 0}));
  GString *kw[] = {g_string_new("x"), g_string_new("yz"), g_string_new("q")};
  cf_case_expect(c, strings(1, 3, kw));
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){2, 2}));
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){7, -3}));
  cf_array_t *w = cf_array_vec(WEFT_DT_FLOAT, 4, (const double[]){0.25, 4, -1, -1});
  cf_case_expect(c, cf_array_reshape(w, 2, (const int64_t[]){2, 2}));
  cf_array_free(w);
  cf_run_case(ctx, c);

  static const char *const k_w[] = {"w"}, *const k_id[] = {"id"};
  GString *f[1] = {float_feature(2, (const float[]){1, 2})};
  GString *one[1] = {example(1, k_w, f)};
  c = parse_case(op, "missing_required", 1, one);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Name: <unknown>, Feature: id (data type: "
                       "int64) is required but could not be found.");
  cf_run_case(ctx, c);
  f[0] = float_feature(1, (const float[]){7});
  one[0] = example(1, k_id, f);
  c = parse_case(op, "wrong_type", 1, one);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Name: <unknown>, Feature: id.  Data types "
                       "don't match. Data type: float but expected type: int64");
  cf_run_case(ctx, c);
  static const char *const k_both[] = {"id", "w"};
  GString *f2[2] = {int64_feature(1, (const int64_t[]){1}),
                    float_feature(3, (const float[]){1, 2, 3})};
  one[0] = example(2, k_both, f2);
  c = parse_case(op, "wrong_size", 1, one);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Name: <unknown>, Key: w, Index: 0.  Number of "
                       "float values != expected.  values size: 3 but output shape: [2]");
  cf_run_case(ctx, c);
  /* A length that runs past the end of the bytes. */
  one[0] = g_string_new_len("\x0a\x7f\x0a", 3);
  c = parse_case(op, "truncated_bytes", 1, one);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Could not parse example input, value: "
                       "'\\n\\177\\n'");
  cf_run_case(ctx, c);
}

const cf_suite_t cf_suites_parsing[] = {
    {"ParseExample", cf_dtypes_none, emit_parse_example, NULL},
    {NULL, NULL, NULL, NULL},
};
