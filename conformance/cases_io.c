/* cases_io.c: conformance cases of the input-pipeline ops DecodeCSV, SerializeTensor,
 * ParseTensor and MatchingFiles. The expected outputs are worked out by hand from TensorFlow's
 * documented semantics (tensorflow/core/ops/parsing_ops.cc, io_ops.cc): CSV fields split with
 * its quoting rules, defaults for empty fields; TensorProto bytes written out byte by byte from
 * tensorflow/core/framework/tensor.proto (dtype = 1, tensor_shape = 2, tensor_content = 4,
 * float_val = 5, int_val = 7, string_val = 8, int64_val = 10, bool_val = 11); file names of a
 * directory made here, walked as internal::GetMatchingPaths walks it. Errors are TensorFlow's
 * messages. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "reference.h"

/* A string array of the given shape from n byte strings (lens[k] < 0: NUL-terminated). */
static cf_array_t *bytes(int rank, const int64_t *dims, int n, const char *const *v,
                         const int *lens) {
  cf_array_t *a = cf_array_new(WEFT_DT_STRING, rank, dims);
  for (int k = 0; k < n; k++) {
    g_string_truncate(a->s[k], 0);
    g_string_append_len(a->s[k], v[k], lens && lens[k] >= 0 ? lens[k] : (gssize)strlen(v[k]));
  }
  return a;
}

static cf_array_t *str_vec(int n, const char *const *v) {
  return bytes(1, (const int64_t[]){n}, n, v, NULL);
}

static cf_array_t *str_scalar(const char *s) { return bytes(0, NULL, 1, &s, NULL); }

/* ---------------------------------------------------------------------------------------------
 * DecodeCSV */

/* A DecodeCSV case over records with n defaults (each an array of 0 or 1 element). */
static cf_case_t *csv_case(const char *name, cf_array_t *records, int n, cf_array_t **defaults) {
  cf_case_t *c = cf_case_new("DecodeCSV", name, WEFT_DT_INVALID);
  c->tol = (cf_tol_t){0, 0, 0};
  weft_dtype_t types[8];
  cf_case_input(c, records);
  for (int k = 0; k < n; k++) {
    types[k] = defaults[k]->dtype;
    cf_case_input(c, defaults[k]);
  }
  cf_case_args(c, 2, (const int[]){0, n});
  cf_case_attr_types(c, "OUT_TYPE", types, n);
  return c;
}

static cf_array_t *none(weft_dtype_t dt) { return cf_array_new(dt, 1, (const int64_t[]){0}); }
static cf_array_t *one(weft_dtype_t dt, double v) { return cf_array_vec(dt, 1, &v); }

static cf_array_t *str_one(const char *s) { return str_vec(1, &s); }

static void emit_decode_csv(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  /* Four columns of four dtypes; record 1 leaves the float empty (its default) and quotes a
   * string holding the delimiter. */
  static const char *const mixed[] = {"1,2.5,hello,7", "-2147483648,,\"a,b\",-8"};
  cf_case_t *c = csv_case("mixed_types", str_vec(2, mixed), 4,
                          (cf_array_t *[]){one(WEFT_DT_INT32, -1), one(WEFT_DT_FLOAT, 0.5),
                                           str_one("x"), none(WEFT_DT_INT64)});
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT32, 2, (const int64_t[]){1, -2147483648LL}));
  cf_case_expect(c, cf_array_vec(WEFT_DT_FLOAT, 2, (const double[]){2.5, 0.5}));
  cf_case_expect(c, str_vec(2, (const char *const[]){"hello", "a,b"}));
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){7, -8}));
  cf_run_case(ctx, c);

  /* A doubled quote inside a quoted field is one quote. */
  c = csv_case("escaped_quotes", str_scalar("\"say \"\"hi\"\"\",x"), 2,
               (cf_array_t *[]){str_one(""), str_one("")});
  cf_case_expect(c, str_scalar("say \"hi\""));
  cf_case_expect(c, str_scalar("x"));
  cf_run_case(ctx, c);

  /* Records of shape [1, 2]; a trailing delimiter ends with an empty field (the default). */
  static const char *const grid[] = {"a,", ",b"};
  const int64_t d12[] = {1, 2};
  c = csv_case("rank2_trailing_delim", bytes(2, d12, 2, grid, NULL), 2,
               (cf_array_t *[]){str_one("d1"), str_one("d2")});
  cf_case_expect(c, bytes(2, d12, 2, (const char *const[]){"a", "d1"}, NULL));
  cf_case_expect(c, bytes(2, d12, 2, (const char *const[]){"d2", "b"}, NULL));
  cf_run_case(ctx, c);

  c = csv_case("na_value", str_scalar("NA,4"), 2,
               (cf_array_t *[]){one(WEFT_DT_DOUBLE, 9), one(WEFT_DT_INT64, 0)});
  cf_case_attr_string(c, "na_value", "NA");
  cf_case_expect(c, cf_array_scalar(WEFT_DT_DOUBLE, 9));
  cf_case_expect(c, cf_array_scalar(WEFT_DT_INT64, 4));
  cf_run_case(ctx, c);

  c = csv_case("select_cols", str_scalar("1,2,3,4"), 2,
               (cf_array_t *[]){one(WEFT_DT_INT32, 0), one(WEFT_DT_INT32, 0)});
  cf_case_attr_ints(c, "select_cols", (const int64_t[]){0, 2}, 2);
  cf_case_expect(c, cf_array_scalar(WEFT_DT_INT32, 1));
  cf_case_expect(c, cf_array_scalar(WEFT_DT_INT32, 3));
  cf_run_case(ctx, c);

  /* Without quote handling a quote is an ordinary byte. */
  c = csv_case("tab_no_quotes", str_scalar("a\"b\t\"c\""), 2,
               (cf_array_t *[]){str_one(""), str_one("")});
  cf_case_attr_string(c, "field_delim", "\t");
  cf_case_attr_bool(c, "use_quote_delim", false);
  cf_case_expect(c, str_scalar("a\"b"));
  cf_case_expect(c, str_scalar("\"c\""));
  cf_run_case(ctx, c);

  /* double-conversion's forms: exponents, surrounding spaces, hex integers, "INF". */
  c = csv_case("real_forms", str_scalar("1e3, -0.25 ,0x1A,-INF"), 4,
               (cf_array_t *[]){one(WEFT_DT_DOUBLE, 0), one(WEFT_DT_FLOAT, 0),
                                one(WEFT_DT_FLOAT, 0), one(WEFT_DT_DOUBLE, 0)});
  cf_case_expect(c, cf_array_scalar(WEFT_DT_DOUBLE, 1000));
  cf_case_expect(c, cf_array_scalar(WEFT_DT_FLOAT, -0.25));
  cf_case_expect(c, cf_array_scalar(WEFT_DT_FLOAT, 26));
  cf_case_expect(c, cf_array_scalar(WEFT_DT_DOUBLE, -INFINITY));
  cf_run_case(ctx, c);

  static const struct {
    const char *name, *record, *message;
    int n;
    weft_dtype_t dt;
    bool required;
  } errors[] = {
      {"required_missing", ",5", "Field 0 is required but missing in record 0!", 2,
       WEFT_DT_INT32, true},
      {"too_few_fields", "1,2", "Expect 3 fields but have 2 in record 0", 3, WEFT_DT_INT32,
       false},
      {"invalid_float", "abc", "Field 0 in record 0 is not a valid float: abc", 1,
       WEFT_DT_FLOAT, false},
      {"int32_overflow", "2147483648", "Field 0 in record 0 is not a valid int32: 2147483648",
       1, WEFT_DT_INT32, false},
      {"int64_overflow", "9223372036854775808",
       "Field 0 in record 0 is not a valid int64: 9223372036854775808", 1, WEFT_DT_INT64,
       false},
      /* safe_strtof refuses 32 bytes or more (kFastToBufferSize), whatever they hold. */
      {"float_32_bytes", "0.000000000000000000000000000001",
       "Field 0 in record 0 is not a valid float: 0.000000000000000000000000000001", 1,
       WEFT_DT_FLOAT, false},
      {"int_plus_sign", "+5", "Field 0 in record 0 is not a valid int32: +5", 1, WEFT_DT_INT32,
       false},
      {"unescaped_quote", "\"a\"b\",c", "Quote inside a string has to be escaped by another "
       "quote", 2, WEFT_DT_STRING, false},
      {"quote_in_unquoted", "a\"b,c", "Unquoted fields cannot have quotes/CRLFs inside", 2,
       WEFT_DT_STRING, false},
      {"unterminated_quote", "\"abc", "Quoted field has to end with quote followed by delim or "
       "end", 1, WEFT_DT_STRING, false},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(errors); k++) {
    cf_array_t *defs[3];
    for (int f = 0; f < errors[k].n; f++)
      defs[f] = errors[k].required ? none(errors[k].dt)
                : errors[k].dt == WEFT_DT_STRING ? str_one("")
                                                 : one(errors[k].dt, 0);
    c = csv_case(errors[k].name, str_scalar(errors[k].record), errors[k].n, defs);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, errors[k].message);
    cf_run_case(ctx, c);
  }

  c = csv_case("select_cols_not_increasing", str_scalar("1,2,3"), 2,
               (cf_array_t *[]){one(WEFT_DT_INT32, 0), one(WEFT_DT_INT32, 0)});
  cf_case_attr_ints(c, "select_cols", (const int64_t[]){2, 1}, 2);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "select_cols should be strictly increasing indices");
  cf_run_case(ctx, c);

  c = csv_case("two_defaults", str_scalar("1"), 1,
               (cf_array_t *[]){cf_array_vec(WEFT_DT_INT32, 2, (const double[]){1, 2})});
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "There should only be 1 default per field but field 0 has 2");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * SerializeTensor, ParseTensor */

/* float32 [1, -2]: dtype 1, shape {dim {size 2}}, tensor_content 00 00 80 3f 00 00 00 c0. */
static const char kFloatVec[] = "\x08\x01\x12\x04\x12\x02\x08\x02\x22\x08"
                                "\x00\x00\x80\x3f\x00\x00\x00\xc0";
/* int32 scalar 7: dtype 3, an empty shape, tensor_content 07 00 00 00. */
static const char kIntScalar[] = "\x08\x03\x12\x00\x22\x04\x07\x00\x00\x00";
/* string ["ab", ""]: dtype 7, shape [2], string_val "ab" and "". */
static const char kStrVec[] = "\x08\x07\x12\x04\x12\x02\x08\x02\x42\x02" "ab" "\x42\x00";

static cf_array_t *proto(const char *b, size_t len) {
  return bytes(0, NULL, 1, &b, (const int[]){(int)len});
}
#define PROTO(lit) proto(lit, sizeof(lit) - 1)

static void emit_serialize_tensor(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  cf_case_t *c = cf_case_new(op, "float_vector", WEFT_DT_INVALID);
  cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, 2, (const double[]){1, -2}));
  cf_case_expect(c, PROTO(kFloatVec));
  cf_run_case(ctx, c);
  c = cf_case_new(op, "int32_scalar", WEFT_DT_INVALID);
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 7));
  cf_case_expect(c, PROTO(kIntScalar));
  cf_run_case(ctx, c);
  c = cf_case_new(op, "string_vector", WEFT_DT_INVALID);
  cf_case_input(c, str_vec(2, (const char *const[]){"ab", ""}));
  cf_case_expect(c, PROTO(kStrVec));
  cf_run_case(ctx, c);
}

static cf_case_t *parse_case(const char *name, cf_array_t *serialized, weft_dtype_t out) {
  cf_case_t *c = cf_case_new("ParseTensor", name, WEFT_DT_INVALID);
  c->tol = (cf_tol_t){0, 0, 0};
  cf_case_input(c, serialized);
  cf_case_attr_type(c, "out_type", out);
  return c;
}

static void emit_parse_tensor(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  cf_case_t *c = parse_case("float_content", PROTO(kFloatVec), WEFT_DT_FLOAT);
  cf_case_expect(c, cf_array_vec(WEFT_DT_FLOAT, 2, (const double[]){1, -2}));
  cf_run_case(ctx, c);
  c = parse_case("string_val", PROTO(kStrVec), WEFT_DT_STRING);
  cf_case_expect(c, str_vec(2, (const char *const[]){"ab", ""}));
  cf_run_case(ctx, c);
  /* float_val [2.5] over shape [3]: the last value repeats. */
  c = parse_case("float_val_splat", PROTO("\x08\x01\x12\x04\x12\x02\x08\x03\x2a\x04"
                                          "\x00\x00\x20\x40"), WEFT_DT_FLOAT);
  cf_case_expect(c, cf_array_vec(WEFT_DT_FLOAT, 3, (const double[]){2.5, 2.5, 2.5}));
  cf_run_case(ctx, c);
  /* int_val [5, -1] packed (-1 is a ten-byte varint). */
  c = parse_case("int_val", PROTO("\x08\x03\x12\x04\x12\x02\x08\x02\x3a\x0b\x05"
                                  "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"), WEFT_DT_INT32);
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT32, 2, (const int64_t[]){5, -1}));
  cf_run_case(ctx, c);
  /* int64_val [300] in a scalar. */
  c = parse_case("int64_val", PROTO("\x08\x09\x12\x00\x52\x02\xac\x02"), WEFT_DT_INT64);
  cf_case_expect(c, cf_array_scalar(WEFT_DT_INT64, 300));
  cf_run_case(ctx, c);
  c = parse_case("bool_val", PROTO("\x08\x0a\x12\x04\x12\x02\x08\x02\x5a\x02\x01\x00"),
                 WEFT_DT_BOOL);
  cf_case_expect(c, cf_array_vec(WEFT_DT_BOOL, 2, (const double[]){1, 0}));
  cf_run_case(ctx, c);

  c = parse_case("type_mismatch", PROTO(kFloatVec), WEFT_DT_INT32);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "Type mismatch between parsed tensor (float) and dtype (int32)");
  cf_run_case(ctx, c);
  c = parse_case("truncated", PROTO("\x08\x01\x12\x04\x12"), WEFT_DT_FLOAT);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Could not parse `serialized` as TensorProto");
  cf_run_case(ctx, c);
  /* shape [3] with 4 bytes of content. */
  c = parse_case("content_length", PROTO("\x08\x01\x12\x04\x12\x02\x08\x03\x22\x04"
                                         "\x00\x00\x80\x3f"), WEFT_DT_FLOAT);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Cannot parse tensor from proto");
  cf_run_case(ctx, c);
  /* shape [2^40] and no values: refused before anything is allocated. */
  c = parse_case("huge_shape", PROTO("\x08\x01\x12\x09\x12\x07\x08\x80\x80\x80\x80\x80\x20"),
                 WEFT_DT_FLOAT);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Cannot parse tensor from proto");
  cf_run_case(ctx, c);
  c = parse_case("not_scalar", str_vec(1, (const char *const[]){""}), WEFT_DT_FLOAT);
  c->unknown_shape[0] = true; /* the kernel's check, not the shape function's */
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "Expected `serialized` to be a scalar, got shape: [1]");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * MatchingFiles */

static void touch(const char *dir, const char *name) {
  char *p = g_build_filename(dir, name, NULL);
  g_file_set_contents(p, "", 0, NULL);
  g_free(p);
}

/* A MatchingFiles case: patterns in, the n names of want out. */
static void files_case(cf_run_ctx_t *ctx, const char *name, cf_array_t *patterns, int n,
                       const char *const *want) {
  cf_case_t *c = cf_case_new("MatchingFiles", name, WEFT_DT_INVALID);
  cf_case_input(c, patterns);
  cf_case_expect(c, str_vec(n, want));
  cf_run_case(ctx, c);
}

static void emit_matching_files(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  char *dir = g_dir_make_tmp("weft-cf-matching-XXXXXX", NULL);
  if (dir == NULL) return;
  char *sub = g_build_filename(dir, "sub", NULL);
  g_mkdir(sub, 0700);
  touch(dir, "b.txt");
  touch(dir, "a.txt");
  touch(dir, "c.csv");
  touch(sub, "d.txt");
  char *p_txt = g_strdup_printf("%s/*.txt", dir), *p_sub = g_strdup_printf("%s/*/d.txt", dir);
  char *p_q = g_strdup_printf("%s/?.csv", dir), *p_none = g_strdup_printf("%s/*.none", dir);
  char *p_set = g_strdup_printf("%s/[b-z].*", dir), *p_dirs = g_strdup_printf("%s/*/", dir);
  char *p_missing = g_strdup_printf("%s/nothere/*.txt", dir);
  char *a = g_strdup_printf("%s/a.txt", dir), *b = g_strdup_printf("%s/b.txt", dir);
  char *cc = g_strdup_printf("%s/c.csv", dir), *d = g_strdup_printf("%s/sub/d.txt", dir);

  /* Two patterns: their matches together, sorted. */
  files_case(ctx, "vector_sorted", str_vec(2, (const char *const[]){p_sub, p_txt}), 3,
             (const char *const[]){a, b, d});
  files_case(ctx, "question_mark", str_scalar(p_q), 1, (const char *const[]){cc});
  files_case(ctx, "bracket_set", str_scalar(p_set), 2, (const char *const[]){b, cc});
  files_case(ctx, "no_match", str_scalar(p_none), 0, NULL);
  files_case(ctx, "exact_name", str_scalar(a), 1, (const char *const[]){a});
  /* A trailing '/' matches directories, named without it. */
  files_case(ctx, "directories_only", str_scalar(p_dirs), 1, (const char *const[]){sub});
  /* The directory the walk starts from must exist (GetChildren's NotFound). */
  cf_case_t *c = cf_case_new(op, "missing_directory", WEFT_DT_INVALID);
  cf_case_input(c, str_scalar(p_missing));
  cf_case_expect_error(c, WEFT_NOT_FOUND, "nothere; No such file or directory");
  cf_run_case(ctx, c);
  c = cf_case_new(op, "rank2_pattern", WEFT_DT_INVALID);
  c->unknown_shape[cf_case_input(c, bytes(2, (const int64_t[]){1, 1}, 1,
                                          (const char *const[]){p_txt}, NULL))] = true;
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "Input pattern tensor must be scalar or vector, but had shape: [1,1]");
  cf_run_case(ctx, c);

  g_remove(d);
  g_rmdir(sub);
  g_remove(a);
  g_remove(b);
  g_remove(cc);
  g_rmdir(dir);
  char *all[] = {dir, sub, p_txt, p_sub, p_q, p_none, p_set, p_dirs, p_missing, a, b, cc, d};
  for (size_t k = 0; k < G_N_ELEMENTS(all); k++) g_free(all[k]);
}

const cf_suite_t cf_suites_io[] = {
    {"DecodeCSV", cf_dtypes_none, emit_decode_csv, NULL},
    {"SerializeTensor", cf_dtypes_none, emit_serialize_tensor, NULL},
    {"ParseTensor", cf_dtypes_none, emit_parse_tensor, NULL},
    {"MatchingFiles", cf_dtypes_none, emit_matching_files, NULL},
    {NULL, NULL, NULL, NULL},
};
