/* cases_string.c: conformance cases of the string, printing and file ops (StringJoin,
 * ReduceJoin, AsString, StringToNumber, StringLength, Substr, StringSplit(V2), Strip/Upper/Lower,
 * Encode/DecodeBase64, ReadFile, WriteFile, DecodeRaw, Print, StringFormat, PrintV2, the regex
 * ops RegexReplace, RegexFullMatch and their Static* forms). Expected
 * values are TensorFlow's, written out by hand from its op docs and kernels; the error cases
 * check the code and TensorFlow's message. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "conformance.h"

static cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt) {
  cf_case_t *c = cf_case_new(op, name, dt);
  c->tol = (cf_tol_t){0, 0, 0};
  return c;
}

/* A string tensor of shape dims (rank 0: a scalar) from n C strings. */
static cf_array_t *strs(int rank, const int64_t *dims, const char *const *v) {
  cf_array_t *a = cf_array_new(WEFT_DT_STRING, rank, dims);
  for (int64_t i = 0; i < a->n; i++) g_string_assign(a->s[i], v[i]);
  return a;
}

static cf_array_t *svec(int64_t n, const char *const *v) { return strs(1, &n, v); }
static cf_array_t *sscalar(const char *v) { return strs(0, NULL, &v); }

/* A string case of one input and one expected output of the input's shape. */
static void map_case(cf_run_ctx_t *ctx, const char *op, const char *name, int64_t n,
                     const char *const *in, const char *const *want, const char *attr,
                     const char *value) {
  cf_case_t *c = new_case(op, name, WEFT_DT_STRING);
  cf_case_input(c, svec(n, in));
  if (attr) cf_case_attr_string(c, attr, value);
  cf_case_expect(c, svec(n, want));
  cf_run_case(ctx, c);
}

static void error_case(cf_run_ctx_t *ctx, cf_case_t *c, weft_code_t code, const char *msg) {
  cf_case_expect_error(c, code, msg);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * StringJoin, ReduceJoin */

static void emit_string_join(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  cf_case_t *c = new_case(op, "vector_scalar_vector", WEFT_DT_STRING);
  cf_case_input(c, svec(2, (const char *[]){"a", "b"}));
  cf_case_input(c, sscalar("+"));
  cf_case_input(c, svec(2, (const char *[]){"c", ""}));
  cf_case_args(c, 1, (int[]){3});
  cf_case_attr_int(c, "N", 3);
  cf_case_attr_string(c, "separator", ", ");
  cf_case_expect(c, svec(2, (const char *[]){"a, +, c", "b, +, "}));
  cf_run_case(ctx, c);

  c = new_case(op, "scalars", WEFT_DT_STRING);
  cf_case_input(c, sscalar("x"));
  cf_case_input(c, sscalar("y"));
  cf_case_args(c, 1, (int[]){2});
  cf_case_attr_int(c, "N", 2);
  cf_case_expect(c, sscalar("xy"));
  cf_run_case(ctx, c);

  c = new_case(op, "shape_mismatch", WEFT_DT_STRING);
  int i0 = cf_case_input(c, svec(2, (const char *[]){"a", "b"}));
  int i1 = cf_case_input(c, svec(3, (const char *[]){"a", "b", "c"}));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  cf_case_args(c, 1, (int[]){2});
  cf_case_attr_int(c, "N", 2);
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Input shapes do not match: [2] vs. [3]");
}

static void reduce_join_case(cf_run_ctx_t *ctx, const char *name, int n_axes,
                             const int64_t *axes, bool keep, const char *sep, int rank,
                             const int64_t *dims, const char *const *want, const char *error) {
  cf_case_t *c = new_case("ReduceJoin", name, WEFT_DT_STRING);
  int64_t d22[2] = {2, 2};
  cf_case_input(c, strs(2, d22, (const char *[]){"a", "b", "c", "d"}));
  cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, n_axes, axes));
  if (keep) cf_case_attr_bool(c, "keep_dims", true);
  if (sep) cf_case_attr_string(c, "separator", sep);
  if (error) {
    c->is_const[1] = false;
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, error);
    return;
  }
  cf_case_expect(c, strs(rank, dims, want));
  cf_run_case(ctx, c);
}

static void emit_reduce_join(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)op;
  (void)dt;
  /* tf.reduce_join's documented examples on [["a", "b"], ["c", "d"]]. */
  int64_t two = 2, d12[2] = {1, 2}, d21[2] = {2, 1}, d22[2] = {2, 2};
  reduce_join_case(ctx, "axis0", 1, (int64_t[]){0}, false, NULL, 1, &two,
                   (const char *[]){"ac", "bd"}, NULL);
  reduce_join_case(ctx, "axis_minus1", 1, (int64_t[]){-1}, false, NULL, 1, &two,
                   (const char *[]){"ab", "cd"}, NULL);
  reduce_join_case(ctx, "axis0_keep_dims", 1, (int64_t[]){0}, true, NULL, 2, d12,
                   (const char *[]){"ac", "bd"}, NULL);
  reduce_join_case(ctx, "axis1_keep_dims", 1, (int64_t[]){1}, true, NULL, 2, d21,
                   (const char *[]){"ab", "cd"}, NULL);
  reduce_join_case(ctx, "axis0_separator", 1, (int64_t[]){0}, false, ".", 1, &two,
                   (const char *[]){"a.c", "b.d"}, NULL);
  reduce_join_case(ctx, "axes_0_1", 2, (int64_t[]){0, 1}, false, NULL, 0, NULL,
                   (const char *[]){"acbd"}, NULL);
  reduce_join_case(ctx, "axes_1_0", 2, (int64_t[]){1, 0}, false, NULL, 0, NULL,
                   (const char *[]){"abcd"}, NULL);
  reduce_join_case(ctx, "no_axes", 0, NULL, false, NULL, 2, d22,
                   (const char *[]){"a", "b", "c", "d"}, NULL);
  reduce_join_case(ctx, "duplicate_axis", 2, (int64_t[]){1, -1}, false, NULL, 0, NULL, NULL,
                   "Duplicate reduction dimension -1");
  reduce_join_case(ctx, "axis_out_of_range", 1, (int64_t[]){2}, false, NULL, 0, NULL, NULL,
                   "Invalid reduction dimension 2 for input with 2 dimensions");
}

/* ---------------------------------------------------------------------------------------------
 * AsString, StringToNumber */

static void as_string_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name, int64_t n,
                           const double *v, const char *const *want, int64_t precision,
                           int64_t width, const char *fill, int notation, const char *error) {
  cf_case_t *c = new_case("AsString", name, dt);
  cf_case_input(c, cf_array_vec(dt, n, v));
  if (precision >= 0) cf_case_attr_int(c, "precision", precision);
  if (width >= 0) cf_case_attr_int(c, "width", width);
  if (fill) cf_case_attr_string(c, "fill", fill);
  if (notation & 1) cf_case_attr_bool(c, "scientific", true);
  if (notation & 2) cf_case_attr_bool(c, "shortest", true);
  if (error) {
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, error);
    return;
  }
  cf_case_expect(c, svec(n, want));
  cf_run_case(ctx, c);
}

static void emit_as_string(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  if (dt == WEFT_DT_BOOL) {
    as_string_case(ctx, dt, "bool", 2, (const double[]){1, 0}, (const char *[]){"true", "false"},
                   -1, -1, NULL, 0, NULL);
    return;
  }
  if (cf_dtype_is_float(dt)) {
    const double v[3] = {1.5, -0.25, 100};
    as_string_case(ctx, dt, "default", 3, v,
                   (const char *[]){"1.500000", "-0.250000", "100.000000"}, -1, -1, NULL, 0,
                   NULL);
    as_string_case(ctx, dt, "precision_2", 3, v, (const char *[]){"1.50", "-0.25", "100.00"},
                   2, -1, NULL, 0, NULL);
    as_string_case(ctx, dt, "scientific", 3, v,
                   (const char *[]){"1.500000e+00", "-2.500000e-01", "1.000000e+02"}, -1, -1,
                   NULL, 1, NULL);
    as_string_case(ctx, dt, "shortest", 3, v, (const char *[]){"1.5", "-0.25", "100"}, -1, -1,
                   NULL, 2, NULL);
    as_string_case(ctx, dt, "width_8_fill_0", 3, v,
                   (const char *[]){"001.5000", "-00.2500", "100.0000"}, 4, 8, "0", 0, NULL);
    as_string_case(ctx, dt, "scientific_and_shortest", 3, v, NULL, -1, -1, NULL, 3,
                   "Cannot select both scientific and shortest notation");
    return;
  }
  const double v[3] = {7, 42, 0};
  as_string_case(ctx, dt, "default", 3, v, (const char *[]){"7", "42", "0"}, -1, -1, NULL, 0,
                 NULL);
  as_string_case(ctx, dt, "width_4", 3, v, (const char *[]){"   7", "  42", "   0"}, -1, 4,
                 NULL, 0, NULL);
  as_string_case(ctx, dt, "width_4_fill_0", 3, v, (const char *[]){"0007", "0042", "0000"}, -1,
                 4, "0", 0, NULL);
  as_string_case(ctx, dt, "width_4_fill_minus", 3, v, (const char *[]){"7   ", "42  ", "0   "},
                 -1, 4, "-", 0, NULL);
  as_string_case(ctx, dt, "fill_x", 3, v, NULL, -1, 4, "x", 0,
                 "Fill argument not supported: \"x\"");
  as_string_case(ctx, dt, "precision", 3, v, NULL, 2, -1, NULL, 0, "precision not supported");
}

static void emit_string_to_number(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  const double *want;
  const char *const *in;
  int64_t n;
  if (cf_dtype_is_float(dt)) {
    static const char *const fin[] = {"1.5", " -2.25 ", "1e3", "inf", "-0"};
    static const double fwant[] = {1.5, -2.25, 1000, INFINITY, -0.0};
    in = fin;
    want = fwant;
    n = 5;
  } else {
    static const char *const iin[] = {"12", " -7", "+3 ", "0"};
    static const double iwant[] = {12, -7, 3, 0};
    in = iin;
    want = iwant;
    n = 4;
  }
  cf_case_t *c = new_case(op, "values", dt);
  cf_case_input(c, svec(n, in));
  cf_case_attr_type(c, "out_type", dt);
  cf_case_expect(c, cf_array_vec(dt, n, want));
  cf_run_case(ctx, c);

  static const char *const bad[] = {"abc", "1.5x", "", "0x10"};
  for (int k = 0; k < 4; k++) {
    char name[32], msg[128];
    g_snprintf(name, sizeof name, "invalid_%d", k);
    g_snprintf(msg, sizeof msg, "StringToNumberOp could not correctly convert string: %s",
               bad[k]);
    c = new_case(op, name, dt);
    cf_case_input(c, svec(1, &bad[k]));
    cf_case_attr_type(c, "out_type", dt);
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, msg);
  }
  if (dt == WEFT_DT_INT32) {
    c = new_case(op, "int32_overflow", dt);
    cf_case_input(c, sscalar("2147483648"));
    cf_case_attr_type(c, "out_type", dt);
    error_case(ctx, c, WEFT_INVALID_ARGUMENT,
               "StringToNumberOp could not correctly convert string: 2147483648");
  }
}

/* ---------------------------------------------------------------------------------------------
 * StringLength, Substr */

static void emit_string_length(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  static const char *const in[] = {"", "hello", "h\xc3\xa9llo", "\xe2\x82\xac"};
  for (int u = 0; u < 2; u++) {
    cf_case_t *c = new_case(op, u ? "utf8_char" : "byte", WEFT_DT_STRING);
    cf_case_input(c, svec(4, in));
    if (u) cf_case_attr_string(c, "unit", "UTF8_CHAR");
    cf_case_expect(c, cf_array_vec(WEFT_DT_INT32, 4,
                                   u ? (const double[]){0, 5, 5, 1} : (const double[]){0, 5, 6, 3}));
    cf_run_case(ctx, c);
  }
}

static void substr_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name, const char *unit,
                        cf_array_t *in, cf_array_t *pos, cf_array_t *len, cf_array_t *want,
                        const char *error) {
  cf_case_t *c = new_case("Substr", name, dt);
  cf_case_input(c, in);
  cf_case_input(c, pos);
  cf_case_input(c, len);
  if (unit) cf_case_attr_string(c, "unit", unit);
  if (error) {
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, error);
    return;
  }
  cf_case_expect(c, want);
  cf_run_case(ctx, c);
}

static void emit_substr(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const char *const words[] = {"Hello", "World", "ab"};
  substr_case(ctx, dt, "scalar_pos_len", NULL, svec(3, words), cf_array_scalar(dt, 1),
              cf_array_scalar(dt, 3), svec(3, (const char *[]){"ell", "orl", "b"}), NULL);
  substr_case(ctx, dt, "elementwise", NULL, svec(3, words),
              cf_array_vec(dt, 3, (const double[]){0, 4, 2}),
              cf_array_vec(dt, 3, (const double[]){2, 1, 5}),
              svec(3, (const char *[]){"He", "d", ""}), NULL);
  substr_case(ctx, dt, "negative_pos", NULL, svec(3, words), cf_array_scalar(dt, -2),
              cf_array_scalar(dt, 2), svec(3, (const char *[]){"lo", "ld", "ab"}), NULL);
  substr_case(ctx, dt, "huge_len", NULL, sscalar("abc"), cf_array_scalar(dt, 1),
              cf_array_scalar(dt, dt == WEFT_DT_INT64 ? 1e15 : 2147483647), sscalar("bc"), NULL);
  substr_case(ctx, dt, "utf8_char", "UTF8_CHAR", sscalar("h\xc3\xa9llo"), cf_array_scalar(dt, 1),
              cf_array_scalar(dt, 2), sscalar("\xc3\xa9l"), NULL);
  substr_case(ctx, dt, "pos_out_of_range", NULL, svec(3, words), cf_array_scalar(dt, 3),
              cf_array_scalar(dt, 1), NULL, "pos 3 out of range for string b'ab' at index 2");
  substr_case(ctx, dt, "negative_pos_out_of_range", NULL, sscalar("abc"),
              cf_array_scalar(dt, -4), cf_array_scalar(dt, 1), NULL,
              "pos -4 out of range for string b'abc' at index 0");
}

/* ---------------------------------------------------------------------------------------------
 * StringSplit, StringSplitV2 */

static void split_case(cf_run_ctx_t *ctx, const char *op, const char *name, int64_t n,
                       const char *const *in, const char *delim, const char *attr, int64_t value,
                       int64_t n_tok, const int64_t *idx, const char *const *vals, int64_t width) {
  cf_case_t *c = new_case(op, name, WEFT_DT_STRING);
  cf_case_input(c, svec(n, in));
  cf_case_input(c, sscalar(delim));
  if (attr && strcmp(attr, "skip_empty") == 0) cf_case_attr_bool(c, attr, value != 0);
  else if (attr) cf_case_attr_int(c, attr, value);
  int64_t idims[2] = {n_tok, 2};
  cf_array_t *want_idx = cf_array_new(WEFT_DT_INT64, 2, idims);
  for (int64_t k = 0; k < 2 * n_tok; k++) want_idx->v[k] = (double)idx[k];
  cf_case_expect(c, want_idx);
  cf_case_expect(c, svec(n_tok, vals));
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, 2, (int64_t[]){n, width}));
  cf_run_case(ctx, c);
}

static void emit_string_split(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  static const char *const in[] = {"a b", "c  d,e", ""};
  split_case(ctx, op, "space", 3, in, " ", NULL, 0, 4, (const int64_t[]){0, 0, 0, 1, 1, 0, 1, 1},
             (const char *[]){"a", "b", "c", "d,e"}, 2);
  split_case(ctx, op, "two_delimiters", 3, in, " ,", NULL, 0, 5,
             (const int64_t[]){0, 0, 0, 1, 1, 0, 1, 1, 1, 2},
             (const char *[]){"a", "b", "c", "d", "e"}, 3);
  split_case(ctx, op, "keep_empty", 3, in, " ", "skip_empty", 0, 6,
             (const int64_t[]){0, 0, 0, 1, 1, 0, 1, 1, 1, 2, 2, 0},
             (const char *[]){"a", "b", "c", "", "d,e", ""}, 3);
  split_case(ctx, op, "empty_delimiter", 1, (const char *[]){"xyz"}, "", NULL, 0, 3,
             (const int64_t[]){0, 0, 0, 1, 0, 2}, (const char *[]){"x", "y", "z"}, 3);
  cf_case_t *c = new_case(op, "input_not_vector", WEFT_DT_STRING);
  int i = cf_case_input(c, sscalar("a b"));
  c->unknown_shape[i] = true;
  cf_case_input(c, sscalar(" "));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "input must be a vector, got shape: []");
}

static void emit_string_split_v2(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  static const char *const in[] = {"a<>b<><>c", "x"};
  split_case(ctx, op, "sep", 2, in, "<>", NULL, 0, 5,
             (const int64_t[]){0, 0, 0, 1, 0, 2, 0, 3, 1, 0},
             (const char *[]){"a", "b", "", "c", "x"}, 4);
  split_case(ctx, op, "maxsplit_1", 2, in, "<>", "maxsplit", 1, 3,
             (const int64_t[]){0, 0, 0, 1, 1, 0}, (const char *[]){"a", "b<><>c", "x"}, 2);
  split_case(ctx, op, "whitespace", 1, (const char *[]){"  a \t b  "}, "", NULL, 0, 2,
             (const int64_t[]){0, 0, 0, 1}, (const char *[]){"a", "b"}, 2);
}

/* ---------------------------------------------------------------------------------------------
 * StringStrip, StringUpper, StringLower, Encode/DecodeBase64 */

static void emit_strip(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  map_case(ctx, op, "whitespace", 4, (const char *[]){"  a b \n", "\tx", "", "   "},
           (const char *[]){"a b", "x", "", ""}, NULL, NULL);
}

static void emit_upper(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  map_case(ctx, op, "ascii", 2, (const char *[]){"Hello, World 1", "\xc3\xa9t\xc3\xa9"},
           (const char *[]){"HELLO, WORLD 1", "\xc3\xa9T\xc3\xa9"}, NULL, NULL);
}

static void emit_lower(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  map_case(ctx, op, "ascii", 2, (const char *[]){"Hello, World 1", "ABC"},
           (const char *[]){"hello, world 1", "abc"}, NULL, NULL);
}

static void emit_encode_base64(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  static const char *const in[] = {"", "f", "fo", "foo", "hello?>~"};
  map_case(ctx, op, "web_safe", 5, in, (const char *[]){"", "Zg", "Zm8", "Zm9v", "aGVsbG8_Pn4"},
           NULL, NULL);
  cf_case_t *c = new_case(op, "pad", WEFT_DT_STRING);
  cf_case_input(c, svec(5, in));
  cf_case_attr_bool(c, "pad", true);
  cf_case_expect(c, svec(5, (const char *[]){"", "Zg==", "Zm8=", "Zm9v", "aGVsbG8_Pn4="}));
  cf_run_case(ctx, c);
}

static void emit_decode_base64(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  map_case(ctx, op, "padded_and_not", 5,
           (const char *[]){"", "Zg==", "Zm8", "Zm9v", "aGVsbG8_Pn4"},
           (const char *[]){"", "f", "fo", "foo", "hello?>~"}, NULL, NULL);
  cf_case_t *c = new_case(op, "standard_alphabet", WEFT_DT_STRING);
  cf_case_input(c, sscalar("aGVsbG8/Pn4="));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Invalid character found in base64");
  c = new_case(op, "bad_length", WEFT_DT_STRING);
  cf_case_input(c, sscalar("Zm9vY"));
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Invalid base64 data");
}

/* ---------------------------------------------------------------------------------------------
 * ReadFile, WriteFile, DecodeRaw */

static void emit_read_file(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  char *dir = g_dir_make_tmp("weft-conf-XXXXXX", NULL);
  if (!dir) return;
  char *path = g_build_filename(dir, "data.bin", NULL);
  static const char bytes[5] = {'a', '\0', 'b', '\n', '\xff'};
  g_file_set_contents(path, bytes, 5, NULL);
  cf_case_t *c = new_case(op, "binary_file", WEFT_DT_STRING);
  cf_case_input(c, sscalar(path));
  cf_array_t *want = cf_array_new(WEFT_DT_STRING, 0, NULL);
  g_string_append_len(want->s[0], bytes, 5);
  cf_case_expect(c, want);
  cf_run_case(ctx, c);

  char *missing = g_build_filename(dir, "missing.txt", NULL);
  c = new_case(op, "missing_file", WEFT_DT_STRING);
  cf_case_input(c, sscalar(missing));
  char *msg = g_strdup_printf("%s; No such file or directory", missing);
  error_case(ctx, c, WEFT_NOT_FOUND, msg);
  g_free(msg);

  c = new_case(op, "not_scalar", WEFT_DT_STRING);
  int i = cf_case_input(c, svec(1, (const char *[]){path}));
  c->unknown_shape[i] = true;
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "must be a scalar");

  /* WriteFile has no outputs: the case runs it, and its file is checked here. */
  char *out = g_build_filename(dir, "sub", "out.txt", NULL);
  c = new_case("WriteFile", "creates_folder", WEFT_DT_STRING);
  cf_case_input(c, sscalar(out));
  cf_case_input(c, sscalar("written"));
  cf_run_case(ctx, c);
  c = new_case(op, "reads_what_writefile_wrote", WEFT_DT_STRING);
  cf_case_input(c, sscalar(out));
  cf_case_expect(c, sscalar("written"));
  cf_run_case(ctx, c);
  g_remove(out);
  char *sub = g_path_get_dirname(out);
  g_rmdir(sub);
  g_free(sub);
  g_remove(path);
  g_rmdir(dir);
  g_free(out);
  g_free(missing);
  g_free(path);
  g_free(dir);
}

static void emit_write_file(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  cf_case_t *c = new_case(op, "unwritable_path", WEFT_DT_STRING);
  /* A folder that is a file: TensorFlow's errno mapping makes ENOTDIR FAILED_PRECONDITION. */
  cf_case_input(c, sscalar("/dev/null/x"));
  cf_case_input(c, sscalar("x"));
  error_case(ctx, c, WEFT_FAILED_PRECONDITION, "/dev/null/x; Not a directory");
}

static void decode_raw_case(cf_run_ctx_t *ctx, weft_dtype_t dt, const char *name,
                            const char *bytes, size_t len, int n_strings, bool little,
                            int64_t per, const double *want, const char *error) {
  cf_case_t *c = new_case("DecodeRaw", name, dt);
  int64_t n = n_strings;
  cf_array_t *in = cf_array_new(WEFT_DT_STRING, 1, &n);
  for (int i = 0; i < n_strings; i++) g_string_append_len(in->s[i], bytes + i * len, (gssize)len);
  if (error && n_strings > 1) g_string_append_c(in->s[1], 'x');
  cf_case_input(c, in);
  cf_case_attr_type(c, "out_type", dt);
  if (!little) cf_case_attr_bool(c, "little_endian", false);
  if (error) {
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, error);
    return;
  }
  int64_t dims[2] = {n, per};
  cf_array_t *w = cf_array_new(dt, 2, dims);
  if (n * per > 0) memcpy(w->v, want, sizeof(double) * (size_t)(n * per));
  cf_case_expect(c, w);
  cf_run_case(ctx, c);
}

static void emit_decode_raw(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "out_type", dt)) return;
  if (dt == WEFT_DT_INT32) {
    static const char b[] = "\x01\x00\x00\x00\xff\xff\xff\xff\x00\x01\x00\x00\x02\x00\x00\x00";
    decode_raw_case(ctx, dt, "little_endian", b, 8, 2, true, 2,
                    (const double[]){1, -1, 256, 2}, NULL);
    decode_raw_case(ctx, dt, "big_endian", b, 8, 2, false, 2,
                    (const double[]){16777216, -1, 65536, 33554432}, NULL);
    decode_raw_case(ctx, dt, "not_a_multiple", b, 5, 1, true, 0, NULL,
                    "Input to DecodeRaw has length 5 that is not a multiple of 4, the size of "
                    "int32");
    decode_raw_case(ctx, dt, "unequal_sizes", b, 4, 2, true, 0, NULL,
                    "DecodeRaw requires input strings to all be the same size, but element 1 "
                    "has size 5 != 4");
  } else if (dt == WEFT_DT_FLOAT) {
    float f[2] = {1.5f, -2.0f};
    decode_raw_case(ctx, dt, "little_endian", (const char *)f, 8, 1, true, 2,
                    (const double[]){1.5, -2.0}, NULL);
  } else if (dt == WEFT_DT_UINT8) {
    decode_raw_case(ctx, dt, "bytes", "\x00\x7f\x80\xff", 4, 1, true, 4,
                    (const double[]){0, 127, 128, 255}, NULL);
    decode_raw_case(ctx, dt, "empty_strings", "", 0, 2, true, 0, NULL, NULL);
  } else if (dt == WEFT_DT_INT16) {
    decode_raw_case(ctx, dt, "big_endian", "\x01\x02\xff\xfe", 4, 1, false, 2,
                    (const double[]){258, -2}, NULL);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Print, StringFormat, PrintV2 */

static void emit_print(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  /* The summary goes to stderr; the output is the first input, untouched. */
  cf_case_t *c = new_case(op, "passes_input_through", WEFT_DT_FLOAT);
  cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, 3, (const double[]){1, 2.5, -3}));
  cf_case_input(c, cf_array_vec(WEFT_DT_INT32, 5, (const double[]){1, 2, 3, 4, 5}));
  cf_case_input(c, sscalar("tag"));
  cf_case_args(c, 2, (int[]){0, 2});
  cf_case_attr_types(c, "U", (const weft_dtype_t[]){WEFT_DT_INT32, WEFT_DT_STRING}, 2);
  cf_case_attr_string(c, "message", "conformance Print: ");
  cf_case_attr_int(c, "first_n", 1);
  cf_case_expect(c, cf_array_vec(WEFT_DT_FLOAT, 3, (const double[]){1, 2.5, -3}));
  cf_run_case(ctx, c);
}

static void format_case(cf_run_ctx_t *ctx, const char *name, const char *tmpl, int64_t summarize,
                        cf_array_t *a, cf_array_t *b, const char *want, const char *error) {
  cf_case_t *c = new_case("StringFormat", name, WEFT_DT_STRING);
  weft_dtype_t types[2];
  int n = 0;
  cf_array_t *in[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    if (!in[k]) continue;
    types[n++] = in[k]->dtype;
    cf_case_input(c, in[k]);
  }
  cf_case_args(c, 1, (int[]){n});
  cf_case_attr_types(c, "T", types, n);
  cf_case_attr_string(c, "template", tmpl);
  cf_case_attr_string(c, "placeholder", "{}");
  if (summarize != 3) cf_case_attr_int(c, "summarize", summarize);
  if (error) {
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, error);
    return;
  }
  cf_case_expect(c, sscalar(want));
  cf_run_case(ctx, c);
}

static cf_array_t *arange(weft_dtype_t dt, int rank, const int64_t *dims) {
  cf_array_t *a = cf_array_new(dt, rank, dims);
  for (int64_t i = 0; i < a->n; i++) a->v[i] = (double)i;
  return a;
}

static void emit_string_format(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)op;
  (void)dt;
  int64_t ten = 10, d34[2] = {3, 4}, two = 2;
  /* tf.strings.format's documented examples. */
  format_case(ctx, "vector_summarized", "tensor: {}, suffix", 3, arange(WEFT_DT_INT32, 1, &ten),
              NULL, "tensor: [0 1 2 ... 7 8 9], suffix", NULL);
  format_case(ctx, "matrix_summarize_2", "{} and {}", 2, arange(WEFT_DT_INT32, 2, d34),
              cf_array_scalar(WEFT_DT_FLOAT, 0.5),
              "[[0 1 2 3]\n [4 5 6 7]\n [8 9 10 11]] and 0.5", NULL);
  format_case(ctx, "matrix_summarize_1", "{}", 1, arange(WEFT_DT_INT32, 2, d34), NULL,
              "[[0 ... 3]\n ...\n [8 ... 11]]", NULL);
  format_case(ctx, "strings_quoted", "{}", 3, svec(2, (const char *[]){"a", "b\"c"}), NULL,
              "[\"a\" \"b\\\"c\"]", NULL);
  format_case(ctx, "summarize_all", "x={}", -1, arange(WEFT_DT_FLOAT, 1, &ten), NULL,
              "x=[0 1 2 3 4 5 6 7 8 9]", NULL);
  format_case(ctx, "bool_and_double", "{} {}", 3,
              cf_array_vec(WEFT_DT_BOOL, 2, (const double[]){1, 0}),
              cf_array_vec(WEFT_DT_DOUBLE, 2, (const double[]){0.1, 1e20}), "[1 0] [0.1 1e+20]",
              NULL);
  format_case(ctx, "placeholder_count", "{} {}", 3, arange(WEFT_DT_INT32, 1, &two), NULL, NULL,
              "num placeholders in template and num inputs must match: 2 vs. 1");
}

static void emit_print_v2(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  cf_case_t *c = new_case(op, "log_info", WEFT_DT_STRING);
  cf_case_input(c, sscalar("conformance PrintV2"));
  cf_case_attr_string(c, "output_stream", "log(info)");
  cf_run_case(ctx, c);
  c = new_case(op, "unknown_stream", WEFT_DT_STRING);
  cf_case_input(c, sscalar("x"));
  cf_case_attr_string(c, "output_stream", "nowhere");
  error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Unknown output stream: nowhere");
}

/* ---------------------------------------------------------------------------------------------
 * RegexReplace, StaticRegexReplace, RegexFullMatch, StaticRegexFullMatch. The expected strings
 * are RE2's answers, worked out by hand from its syntax and GlobalReplace's loop (an empty match
 * right after the previous match is stepped over): where PCRE's defaults differ (Unicode \w and
 * POSIX classes, $ before a final newline, Perl's empty-match rule) a case pins RE2's. */

/* The pattern (and rewrite) as attrs for the Static* ops, as scalar inputs otherwise. */
static void regex_args(cf_case_t *c, bool is_static, const char *pattern, const char *rewrite) {
  if (is_static) {
    cf_case_attr_string(c, "pattern", pattern);
    if (rewrite) cf_case_attr_string(c, "rewrite", rewrite);
    return;
  }
  cf_case_input(c, sscalar(pattern));
  if (rewrite) cf_case_input(c, sscalar(rewrite));
}

static void emit_regex_replace(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  bool is_static = strcmp(op, "StaticRegexReplace") == 0;
  static const struct {
    const char *name, *in, *pattern, *rewrite, *want;
    bool first_only;
  } cases[] = {
      {"global", "a1b22c333", "\\d+", "#", "a#b#c#", false},
      {"first_only", "a1b22c333", "\\d+", "#", "a#b22c333", true},
      {"groups", "john smith", "(\\w+) (\\w+)", "\\2, \\1", "smith, john", false},
      {"whole_match_and_backslash", "ab", "b", "[\\0\\\\]", "a[b\\]", false},
      {"empty_match_after_match_skipped", "abc", "b*", "-", "-a-c-", false},
      {"empty_match_first_only", "abc", "b*", "-", "-abc", true},
      {"empty_input", "", "x*", "-", "-", false},
      {"no_match", "abc", "z", "-", "abc", false},
      {"ascii_word_class", "h\xc3\xa9llo w\xc3\xb6rld", "\\w+", "X", "X\xc3\xa9X X\xc3\xb6X",
       false},
      {"dot_is_one_utf8_char", "\xc3\xa9t\xc3\xa9", ".", "x", "xxx", false},
      {"dollar_at_end_only", "line\n", "e$", "E", "line\n", false},
      {"word_boundary", "foo foobar", "\\bfoo\\b", "X", "X foobar", false},
      {"case_insensitive_flag", "ABC abc", "(?i)b", "_", "A_C a_c", false},
      {"posix_class_ascii", "a\xc3\xa9" "1", "[[:alpha:]]", "_", "_\xc3\xa9" "1", false},
      {"unmatched_group_is_empty", "b", "(a)|b", "<\\1>", "<>", false},
      {"hex_escape", "ABA", "\\x41", "_", "_B_", false},
      {"octal_escape", "ABA", "\\101", "_", "_B_", false},
      {"non_utf8_bytes_one_at_a_time", "\xff\xfe", ".", "?", "??", false},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_case_t *c = new_case(op, cases[k].name, WEFT_DT_STRING);
    cf_case_input(c, svec(1, &cases[k].in));
    regex_args(c, is_static, cases[k].pattern, cases[k].rewrite);
    if (cases[k].first_only) cf_case_attr_bool(c, "replace_global", false);
    cf_case_expect(c, svec(1, &cases[k].want));
    cf_run_case(ctx, c);
  }
  cf_case_t *c = new_case(op, "matrix", WEFT_DT_STRING);
  int64_t d[2] = {2, 2};
  cf_case_input(c, strs(2, d, (const char *[]){"aa", "ba", "", "cab"}));
  regex_args(c, is_static, "a", "z");
  cf_case_expect(c, strs(2, d, (const char *[]){"zz", "bz", "", "czb"}));
  cf_run_case(ctx, c);
  /* What RE2 refuses, with its words. */
  static const struct {
    const char *name, *pattern, *rewrite, *msg;
  } errs[] = {
      {"error_backreference", "(a)\\1", "x",
       "Invalid pattern: (a)\\1, error: invalid escape sequence: \\1"},
      {"error_lookahead", "a(?=b)", "x", "error: invalid or unsupported Perl syntax: (?="},
      {"error_possessive", "a*+", "x", "error: bad repetition operator: *+"},
      {"error_repeat_over_1000", "a{1001}", "x", "error: bad repetition operator: {1001}"},
      {"error_repeat_huge", "a{2,99999999999999999999}", "x",
       "error: bad repetition operator: {2,99999999999999999999}"},
      {"error_unbalanced", "a(", "x", "Invalid pattern: a(, error: "},
      {"error_trailing_backslash", "a\\", "x", "error: trailing \\"},
      {"error_rewrite_group", "(a)", "\\2",
       "Rewrite schema requests 2 matches, but the regexp only has 1 parenthesized "
       "subexpressions."},
      {"error_rewrite_escape", "a", "\\n", "'\\' must be followed by a digit or '\\'."},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(errs); k++) {
    c = new_case(op, errs[k].name, WEFT_DT_STRING);
    cf_case_input(c, svec(1, (const char *[]){"aa"}));
    regex_args(c, is_static, errs[k].pattern, errs[k].rewrite);
    cf_case_expect(c, NULL);
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, errs[k].msg);
  }
  if (!is_static) {
    c = new_case(op, "error_pattern_not_scalar", WEFT_DT_STRING);
    cf_case_input(c, svec(1, (const char *[]){"aa"}));
    int i1 = cf_case_input(c, svec(2, (const char *[]){"a", "b"}));
    c->unknown_shape[i1] = true;
    cf_case_input(c, sscalar("x"));
    cf_case_expect(c, NULL);
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, "Pattern must be scalar, but received [2]");
  }
}

static void emit_regex_full_match(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  bool is_static = strcmp(op, "StaticRegexFullMatch") == 0;
  static const struct {
    const char *name, *pattern, *in[4];
    int n;
    bool want[4];
  } cases[] = {
      {"alternation_reaches_the_end", "ab|abc", {"abc", "ab", "abcd", ""}, 4, {1, 1, 0, 0}},
      {"ascii_digits", "\\d+", {"123", "\xd9\xa1\xd9\xa2", "12a", ""}, 4, {1, 0, 0, 0}},
      {"posix_alpha_ascii", "[[:alpha:]]+", {"abc", "\xc3\xa9", "ab1"}, 3, {1, 0, 0}},
      {"dot_newline", "a.c", {"abc", "a\nc", "a\xc3\xa9" "c"}, 3, {1, 0, 1}},
      {"dot_all_flag", "(?s)a.c", {"a\nc", "ac"}, 2, {1, 0}},
      {"trailing_newline_not_matched", "a$", {"a", "a\n"}, 2, {1, 0}},
      {"empty_pattern", "", {"", "a"}, 2, {1, 0}},
      {"quoted_literal", "\\Qa.b", {"a.b", "axb"}, 2, {1, 0}},
      {"named_group", "(?P<x>a+)b", {"aab", "b"}, 2, {1, 0}},
      {"unicode_script_and_hex_braces", "\\p{Greek}+\\x{10FFFF}",
       {"\xce\xb1\xce\xb2\xf4\x8f\xbf\xbf", "\xce\xb1", "a\xf4\x8f\xbf\xbf"}, 3, {1, 0, 0}},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_case_t *c = new_case(op, cases[k].name, WEFT_DT_STRING);
    cf_case_input(c, svec(cases[k].n, cases[k].in));
    regex_args(c, is_static, cases[k].pattern, NULL);
    cf_array_t *want = cf_array_new(WEFT_DT_BOOL, 1, (int64_t[]){cases[k].n});
    for (int i = 0; i < cases[k].n; i++) want->v[i] = cases[k].want[i];
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name, *pattern, *msg;
  } errs[] = {
      {"error_backreference", "(a)\\1",
       "Invalid pattern: (a)\\1, error: invalid escape sequence: \\1"},
      {"error_lookbehind", "(?<=a)b", "error: invalid or unsupported Perl syntax: (?<="},
      {"error_atomic", "(?>a)", "error: invalid or unsupported Perl syntax: (?>"},
      {"error_pcre_verb", "(*UCP)a", "error: missing argument to repetition operator: *"},
      {"error_unknown_posix_class", "[[:foo:]]",
       "error: invalid character class range: [:foo:]"},
      {"error_extended_flag", "(?x)a", "error: invalid or unsupported Perl syntax: (?x"},
      {"error_unexpected_paren", "a)", "error: unexpected )"},
      {"error_repeated_repetition", "a{2}{3}", "error: bad repetition operator: {2}{3}"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(errs); k++) {
    cf_case_t *c = new_case(op, errs[k].name, WEFT_DT_STRING);
    cf_case_input(c, svec(1, (const char *[]){"a"}));
    regex_args(c, is_static, errs[k].pattern, NULL);
    cf_case_expect(c, NULL);
    error_case(ctx, c, WEFT_INVALID_ARGUMENT, errs[k].msg);
  }
}

static const weft_dtype_t string_only[] = {WEFT_DT_STRING, WEFT_DT_INVALID};
static const weft_dtype_t to_number_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                               WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t as_string_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT8,  WEFT_DT_INT16, WEFT_DT_INT32,
    WEFT_DT_INT64, WEFT_DT_UINT8,  WEFT_DT_BOOL,  WEFT_DT_INVALID};
static const weft_dtype_t index_types[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t raw_types[] = {WEFT_DT_INT32, WEFT_DT_FLOAT, WEFT_DT_UINT8,
                                         WEFT_DT_INT16, WEFT_DT_INVALID};

const cf_suite_t cf_suites_string[] = {
    {"StringJoin", string_only, emit_string_join, NULL},
    {"ReduceJoin", string_only, emit_reduce_join, NULL},
    {"AsString", as_string_types, emit_as_string, NULL},
    {"StringToNumber", to_number_types, emit_string_to_number, NULL},
    {"StringLength", string_only, emit_string_length, NULL},
    {"Substr", index_types, emit_substr, NULL},
    {"StringSplit", string_only, emit_string_split, NULL},
    {"StringSplitV2", string_only, emit_string_split_v2, NULL},
    {"StringStrip", string_only, emit_strip, NULL},
    {"StringUpper", string_only, emit_upper, NULL},
    {"StringLower", string_only, emit_lower, NULL},
    {"EncodeBase64", string_only, emit_encode_base64, NULL},
    {"DecodeBase64", string_only, emit_decode_base64, NULL},
    {"ReadFile", string_only, emit_read_file, NULL},
    {"WriteFile", string_only, emit_write_file, NULL},
    {"DecodeRaw", raw_types, emit_decode_raw, NULL},
    {"Print", string_only, emit_print, NULL},
    {"StringFormat", string_only, emit_string_format, NULL},
    {"PrintV2", string_only, emit_print_v2, NULL},
    {"RegexReplace", string_only, emit_regex_replace, NULL},
    {"StaticRegexReplace", string_only, emit_regex_replace, NULL},
    {"RegexFullMatch", string_only, emit_regex_full_match, NULL},
    {"StaticRegexFullMatch", string_only, emit_regex_full_match, NULL},
    {NULL, NULL, NULL, NULL},
};
