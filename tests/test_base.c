/* Tests for core/src/base: statuses, dtypes, half/bfloat16 conversion, tensors and buffers
 * (including copies through a fake device backend), JSON in and out, shapes and broadcasting,
 * the thread pools' parallel-for, and logging. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/base_internal.h"
#include "plugin/plugin_internal.h"

/* Asserts st has `code` and a message containing `needle`, then frees it. */
#define assert_status(st, code, needle)                                        \
  do {                                                                         \
    weft_status_t *s_ = (st);                                                  \
    g_assert_nonnull(s_);                                                      \
    if (weft_status_code(s_) != (code) || !strstr(weft_status_message(s_), (needle))) \
      g_error("expected %s containing \"%s\", got %s: %s", weft_code_name(code), (needle), \
              weft_code_name(weft_status_code(s_)), weft_status_message(s_)); \
    weft_status_free(s_);                                                      \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Status */

static void test_status_basics(void) {
  g_assert_null(weft_status_new(WEFT_OK, "fine %d", 1));
  weft_status_t *s = weft_status_new(WEFT_NOT_FOUND, "node %s has no output %d", "x", 3);
  g_assert_cmpint(weft_status_code(s), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(s), ==, "node x has no output 3");
  g_assert_true(weft_status_prefix(s, "while importing %s", "g.pb") == s);
  g_assert_cmpstr(weft_status_message(s), ==, "while importing g.pb: node x has no output 3");
  weft_status_t *moved = weft__status_take(&s);
  g_assert_null(s);
  g_assert_cmpint(weft_status_code(moved), ==, WEFT_NOT_FOUND);
  weft_status_free(moved);

  /* NULL means OK everywhere. */
  g_assert_cmpint(weft_status_code(NULL), ==, WEFT_OK);
  g_assert_cmpstr(weft_status_message(NULL), ==, "");
  g_assert_null(weft_status_prefix(NULL, "context"));
  weft_status_free(NULL);
}

/* Code-only statuses allocate nothing: code and message work, freeing and prefixing leave the
 * constant as it was, so code that frees every status it gets is right with them too. */
static void test_status_code_only(void) {
  g_assert_null(weft_status_from_code(WEFT_OK));
  weft_status_t *oom = weft_status_from_code(WEFT_RESOURCE_EXHAUSTED);
  g_assert_nonnull(oom);
  g_assert_true(weft_status_from_code(WEFT_RESOURCE_EXHAUSTED) == oom);
  g_assert_cmpint(weft_status_code(oom), ==, WEFT_RESOURCE_EXHAUSTED);
  g_assert_cmpstr(weft_status_message(oom), ==, "out of memory");
  g_assert_true(weft_status_prefix(oom, "while importing %s", "g.pb") == oom);
  g_assert_cmpstr(weft_status_message(oom), ==, "out of memory");
  weft_status_free(oom);
  weft_status_free(oom);
  g_assert_cmpstr(weft_status_message(oom), ==, "out of memory");
  for (int code = 1; code <= 16; code++) {
    weft_status_t *st = weft_status_from_code((weft_code_t)code);
    g_assert_cmpint(weft_status_code(st), ==, code);
    if (code == WEFT_RESOURCE_EXHAUSTED) continue;
    char *want = g_strdup_printf("%s (no memory for the message)", weft_code_name(code));
    g_assert_cmpstr(weft_status_message(st), ==, want);
    g_free(want);
    weft_status_free(st);
  }
  weft_status_t *odd = weft_status_from_code((weft_code_t)99);
  g_assert_cmpint(weft_status_code(odd), ==, WEFT_UNKNOWN);
  weft_status_free(odd);
  /* An allocated status is unaffected: still owned, freed and prefixed in place. */
  weft_status_t *st = weft_status_new(WEFT_RESOURCE_EXHAUSTED, "no memory for %d bytes", 16);
  g_assert_true(st != oom);
  g_assert_cmpstr(weft_status_message(st), ==, "no memory for 16 bytes");
  weft_status_free(st);
}

/* weft_status_new returns the code-only status of its code when the message cannot be
 * allocated, rather than aborting (run in a child whose address space is capped). */
static void test_status_new_out_of_memory(void) {
#if defined(__SANITIZE_ADDRESS__)
  g_test_skip("ASan reserves more address space than the cap allows");
  return;
#endif
  if (!g_test_subprocess()) {
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    return;
  }
  long pages = 0;
  FILE *statm = fopen("/proc/self/statm", "r");
  if (statm == NULL || fscanf(statm, "%ld", &pages) != 1) {
    if (statm) fclose(statm);
    g_test_skip("no /proc/self/statm");
    return;
  }
  fclose(statm);
  struct rlimit cap = {.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64 << 20)};
  cap.rlim_max = cap.rlim_cur;
  g_assert_cmpint(setrlimit(RLIMIT_AS, &cap), ==, 0);
  /* A 512 MiB message cannot be allocated under the cap. */
  weft_status_t *st = weft_status_new(WEFT_NOT_FOUND, "%*s", 512 << 20, "x");
  g_assert_true(st == weft_status_from_code(WEFT_NOT_FOUND));
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==, "NOT_FOUND (no memory for the message)");
  weft_status_free(st);
  /* A small one still can. */
  st = weft_status_new(WEFT_NOT_FOUND, "node %s", "x");
  g_assert_cmpstr(weft_status_message(st), ==, "node x");
  weft_status_free(st);
}

static void test_status_code_names(void) {
  static const char *const names[] = {
      "OK",        "CANCELLED",      "UNKNOWN",        "INVALID_ARGUMENT",    "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
      "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  for (int code = 0; code <= 16; code++)
    g_assert_cmpstr(weft_code_name((weft_code_t)code), ==, names[code]);
  g_assert_cmpstr(weft_code_name((weft_code_t)99), ==, "UNKNOWN_CODE");
}

/* ---------------------------------------------------------------------------------------------
 * dtypes */

static void test_dtype_names(void) {
  static const struct {
    weft_dtype_t dtype;
    const char *name, *tf, *enum_name;
    size_t size;
  } cases[] = {
      {WEFT_DT_FLOAT, "float32", "float", "DT_FLOAT", 4},
      {WEFT_DT_DOUBLE, "float64", "double", "DT_DOUBLE", 8},
      {WEFT_DT_HALF, "float16", "half", "DT_HALF", 2},
      {WEFT_DT_BFLOAT16, "bfloat16", "bfloat16", "DT_BFLOAT16", 2},
      {WEFT_DT_INT8, "int8", "int8", "DT_INT8", 1},
      {WEFT_DT_INT16, "int16", "int16", "DT_INT16", 2},
      {WEFT_DT_INT32, "int32", "int32", "DT_INT32", 4},
      {WEFT_DT_INT64, "int64", "int64", "DT_INT64", 8},
      {WEFT_DT_UINT8, "uint8", "uint8", "DT_UINT8", 1},
      {WEFT_DT_UINT16, "uint16", "uint16", "DT_UINT16", 2},
      {WEFT_DT_UINT32, "uint32", "uint32", "DT_UINT32", 4},
      {WEFT_DT_UINT64, "uint64", "uint64", "DT_UINT64", 8},
      {WEFT_DT_BOOL, "bool", "bool", "DT_BOOL", 1},
      {WEFT_DT_STRING, "string", "string", "DT_STRING", sizeof(weft_string_t)},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    weft_dtype_t out = WEFT_DT_INVALID;
    g_assert_cmpstr(weft_dtype_name(cases[i].dtype), ==, cases[i].name);
    g_assert_true(weft_dtype_from_name(cases[i].name, &out));
    g_assert_cmpint(out, ==, cases[i].dtype);
    out = WEFT_DT_INVALID;
    g_assert_true(weft_dtype_from_name(cases[i].tf, &out));
    g_assert_cmpint(out, ==, cases[i].dtype);
    out = WEFT_DT_INVALID;
    g_assert_true(weft_dtype_from_name(cases[i].enum_name, &out));
    g_assert_cmpint(out, ==, cases[i].dtype);
    out = WEFT_DT_INVALID;
    g_assert_true(weft__dtype_from_spec_name(cases[i].tf, &out));
    g_assert_cmpint(out, ==, cases[i].dtype);
    out = WEFT_DT_INVALID;
    g_assert_true(weft__dtype_from_spec_name(cases[i].enum_name, &out));
    g_assert_cmpint(out, ==, cases[i].dtype);
    g_assert_cmpuint(weft_dtype_size(cases[i].dtype), ==, cases[i].size);
    g_assert_true(weft__dtype_is_valid(cases[i].dtype));
  }
  weft_dtype_t out = WEFT_DT_INT8;
  g_assert_false(weft_dtype_from_name("float128", &out));
  g_assert_false(weft_dtype_from_name(NULL, &out));
  g_assert_false(weft__dtype_from_spec_name("DT_FLOAT_REF", &out));
  g_assert_cmpint(out, ==, WEFT_DT_INT8);
  g_assert_cmpstr(weft_dtype_name(WEFT_DT_INVALID), ==, "invalid");
  g_assert_cmpuint(weft_dtype_size(WEFT_DT_INVALID), ==, 0);
  g_assert_false(weft__dtype_is_valid(WEFT_DT_INVALID));
  g_assert_false(weft__dtype_is_valid(8)); /* DT_COMPLEX64: not supported */
}

static void test_dtype_refs(void) {
  int ref = WEFT_DT_FLOAT + WEFT_DT_REF_OFFSET;
  g_assert_true(weft__dtype_is_ref(ref));
  g_assert_false(weft__dtype_is_ref(WEFT_DT_FLOAT));
  g_assert_cmpint(weft__dtype_base(ref), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft__dtype_base(WEFT_DT_INT32), ==, WEFT_DT_INT32);
  g_assert_true(weft__dtype_is_valid(ref));
  g_assert_cmpstr(weft_dtype_name((weft_dtype_t)ref), ==, "float32_ref");
  g_assert_cmpuint(weft_dtype_size((weft_dtype_t)ref), ==, 4);
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static void test_half_bfloat16(void) {
  /* float16 */
  g_assert_cmphex(weft__float_to_half(1.0f), ==, 0x3c00);
  g_assert_cmpfloat(weft__half_to_float(0x3c00), ==, 1.0f);
  g_assert_cmphex(weft__float_to_half(-2.0f), ==, 0xc000);
  g_assert_cmphex(weft__float_to_half(65504.0f), ==, 0x7bff);
  g_assert_cmpfloat(weft__half_to_float(0x7bff), ==, 65504.0f);
  g_assert_cmphex(weft__float_to_half(65519.0f), ==, 0x7bff); /* below the midpoint */
  g_assert_cmphex(weft__float_to_half(65520.0f), ==, 0x7c00); /* ties to even: inf */
  g_assert_cmphex(weft__float_to_half(1e10f), ==, 0x7c00);
  g_assert_cmphex(weft__float_to_half(INFINITY), ==, 0x7c00);
  g_assert_cmphex(weft__float_to_half(-INFINITY), ==, 0xfc00);
  g_assert_true(isinf(weft__half_to_float(0x7c00)) && weft__half_to_float(0x7c00) > 0);
  uint16_t hnan = weft__float_to_half(NAN);
  g_assert_cmphex(hnan & 0x7c00, ==, 0x7c00);
  g_assert_cmphex(hnan & 0x03ff, !=, 0);
  g_assert_true(isnan(weft__half_to_float(hnan)));
  /* Subnormals: the smallest one is 2^-24. */
  g_assert_cmphex(weft__float_to_half(ldexpf(1.0f, -24)), ==, 0x0001);
  g_assert_cmpfloat(weft__half_to_float(0x0001), ==, ldexpf(1.0f, -24));
  g_assert_cmpfloat(weft__half_to_float(0x03ff), ==, 1023.0f * ldexpf(1.0f, -24));
  g_assert_cmphex(weft__float_to_half(ldexpf(1.0f, -25)), ==, 0x0000);       /* tie -> even 0 */
  g_assert_cmphex(weft__float_to_half(ldexpf(1.5f, -25)), ==, 0x0001);       /* above the tie */
  g_assert_cmphex(weft__float_to_half(ldexpf(3.0f, -25)), ==, 0x0002);       /* 1.5 ulp -> 2 */
  g_assert_cmphex(weft__float_to_half(ldexpf(1.0f, -14)), ==, 0x0400);       /* smallest normal */
  g_assert_cmphex(weft__float_to_half(-0.0f), ==, 0x8000);
  /* Round to nearest even in the normal range: 1 + 2^-11 is a tie between 1 and 1 + 2^-10. */
  g_assert_cmphex(weft__float_to_half(1.0f + ldexpf(1.0f, -11)), ==, 0x3c00);
  g_assert_cmphex(weft__float_to_half(1.0f + 3 * ldexpf(1.0f, -11)), ==, 0x3c02);
  /* Every half converts to float and back unchanged. */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = weft__half_to_float((uint16_t)h);
    if (isnan(f)) continue;
    g_assert_cmphex(weft__float_to_half(f), ==, h);
  }

  /* bfloat16 */
  g_assert_cmphex(weft__float_to_bfloat16(1.0f), ==, 0x3f80);
  g_assert_cmpfloat(weft__bfloat16_to_float(0x3f80), ==, 1.0f);
  g_assert_cmphex(weft__float_to_bfloat16(65504.0f), ==, 0x4780); /* 65536 after rounding */
  g_assert_cmpfloat(weft__bfloat16_to_float(0x4780), ==, 65536.0f);
  g_assert_cmphex(weft__float_to_bfloat16(INFINITY), ==, 0x7f80);
  g_assert_cmphex(weft__float_to_bfloat16(-INFINITY), ==, 0xff80);
  g_assert_true(isnan(weft__bfloat16_to_float(weft__float_to_bfloat16(NAN))));
  /* A NaN whose payload lives only in the low bits must not turn into inf. */
  float low_nan;
  uint32_t low_nan_bits = 0x7f800001u;
  memcpy(&low_nan, &low_nan_bits, 4);
  g_assert_true(isnan(weft__bfloat16_to_float(weft__float_to_bfloat16(low_nan))));
  g_assert_cmphex(weft__float_to_bfloat16(3.4e38f), ==, 0x7f80); /* rounds past the max */
  float denormal = ldexpf(1.0f, -130);
  g_assert_cmphex(weft__float_to_bfloat16(denormal), ==, bits_of(denormal) >> 16);
  g_assert_cmpfloat(weft__bfloat16_to_float(weft__float_to_bfloat16(denormal)), ==, denormal);
  /* Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7. */
  g_assert_cmphex(weft__float_to_bfloat16(1.0f + ldexpf(1.0f, -8)), ==, 0x3f80);
  g_assert_cmphex(weft__float_to_bfloat16(1.0f + 3 * ldexpf(1.0f, -8)), ==, 0x3f82);
}

/* ---------------------------------------------------------------------------------------------
 * Tensors */

static void test_tensor_new(void) {
  int64_t dims[] = {2, 3};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 2, dims);
  g_assert_nonnull(t);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_rank(t), ==, 2);
  g_assert_cmpint(weft_tensor_dims(t)[1], ==, 3);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, 6);
  g_assert_cmpuint(weft_tensor_nbytes(t), ==, 24);
  g_assert_cmpuint((uintptr_t)weft_tensor_data(t) % 64, ==, 0);
  g_assert_true(weft__tensor_is_host(t));
  const float *f = weft_tensor_data(t);
  for (int i = 0; i < 6; i++) g_assert_cmpfloat(f[i], ==, 0.0f);
  g_assert_true(weft_tensor_ref(t) == t);
  weft_tensor_unref(t);
  weft_tensor_unref(t);
  weft_tensor_unref(NULL);
  /* Around the size up to which the data shares the buffer's block: aligned and zeroed alike. */
  for (int64_t n = 0; n <= 20; n++) {
    weft_tensor_t *v = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
    g_assert_cmpuint((uintptr_t)weft_tensor_data(v) % 64, ==, 0);
    const float *e = weft_tensor_data(v);
    for (int64_t i = 0; i < n; i++) g_assert_cmpfloat(e[i], ==, 0);
    weft_tensor_unref(v);
  }

  /* Empty and scalar tensors. */
  int64_t zero[] = {0, 5};
  t = weft_tensor_new(WEFT_DT_INT32, 2, zero);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, 0);
  g_assert_cmpuint(weft_tensor_nbytes(t), ==, 0);
  weft_tensor_unref(t);
  t = weft_tensor_new_scalar_float(2.5f);
  g_assert_cmpint(weft_tensor_rank(t), ==, 0);
  g_assert_cmpfloat(weft_tensor_get_double(t, 0), ==, 2.5);
  weft_tensor_unref(t);
  t = weft_tensor_new_scalar_int32(-7);
  g_assert_cmpfloat(weft_tensor_get_double(t, 0), ==, -7.0);
  g_assert_true(isnan(weft_tensor_get_double(t, 1)));
  weft_tensor_unref(t);

  /* Bad shapes are refused (weft_tensor_new logs why). */
  int64_t bad[] = {2, -1};
  g_assert_null(weft_tensor_new(WEFT_DT_FLOAT, 2, bad));
  g_assert_null(weft_tensor_new(WEFT_DT_FLOAT, WEFT_MAX_RANK + 1, dims));
  g_assert_null(weft_tensor_new(WEFT_DT_INVALID, 0, NULL));
  weft_tensor_t *out = NULL;
  assert_status(weft__tensor_alloc(NULL, WEFT_DT_FLOAT, 2, bad, &out), WEFT_INVALID_ARGUMENT,
                "[2,?]");
  int64_t huge[] = {INT64_MAX / 2, 4};
  assert_status(weft__tensor_alloc(NULL, WEFT_DT_FLOAT, 2, huge, &out), WEFT_RESOURCE_EXHAUSTED,
                "too many elements");
  int64_t big[] = {(int64_t)1 << 61};
  assert_status(weft__tensor_alloc(NULL, WEFT_DT_DOUBLE, 1, big, &out), WEFT_RESOURCE_EXHAUSTED,
                "float64");
  g_assert_null(out);
}

/* Host data of 4 MiB or more starts on a 2 MiB (huge page) boundary, where the process has not
 * turned that off; smaller data keeps the 64-byte alignment. Zeroed and writable either way. */
static void test_tensor_huge_pages(void) {
  const char *hp = g_getenv("WEFT_HOST_HUGE_PAGES"), *guard = g_getenv("WEFT_GUARD_BYTES");
  if ((hp != NULL && strcmp(hp, "0") == 0) || (guard != NULL && guard[0] != '\0')) {
    g_test_skip("WEFT_HOST_HUGE_PAGES=0 or WEFT_GUARD_BYTES is set");
    return;
  }
  const int64_t sizes[] = {((int64_t)4 << 20) / 4 - 1, ((int64_t)4 << 20) / 4,
                           ((int64_t)9 << 20) / 4 + 3};
  for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
    weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &sizes[k]);
    g_assert_nonnull(t);
    uintptr_t a = (uintptr_t)weft_tensor_data(t);
    g_assert_cmpuint(a % (k == 0 ? 64 : ((uintptr_t)2 << 20)), ==, 0);
    float *f = weft_tensor_data(t);
    g_assert_cmpfloat(f[0], ==, 0.0f);
    g_assert_cmpfloat(f[sizes[k] - 1], ==, 0.0f);
    f[sizes[k] - 1] = 1.5f;
    g_assert_cmpfloat(weft_tensor_get_double(t, sizes[k] - 1), ==, 1.5);
    weft_tensor_unref(t);
  }
}

static void test_tensor_from_data(void) {
  int64_t dims[] = {2, 2};
  float values[] = {1, 2, 3, 4};
  weft_status_t *status = NULL;
  weft_tensor_t *t =
      weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, values, sizeof values, &status);
  g_assert_null(status);
  g_assert_nonnull(t);
  values[0] = 100; /* the tensor has its own copy */
  g_assert_cmpfloat(weft_tensor_get_double(t, 0), ==, 1.0);
  g_assert_cmpfloat(weft_tensor_get_double(t, 3), ==, 4.0);
  char *text = weft_tensor_to_string(t, 10);
  g_assert_cmpstr(text, ==, "float32[2,2] [1, 2, 3, 4]");
  free(text);
  text = weft_tensor_to_string(t, 2);
  g_assert_cmpstr(text, ==, "float32[2,2] [1, 2, ...]");
  free(text);
  weft_tensor_unref(t);

  /* Size mismatch names both byte counts. */
  t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, values, 12, &status);
  g_assert_null(t);
  g_assert_cmpint(weft_status_code(status), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(status), "needs 16 bytes"));
  g_assert_nonnull(strstr(weft_status_message(status), "got 12"));
  g_assert_nonnull(strstr(weft_status_message(status), "float32[2,2]"));
  weft_status_free(status);
  status = NULL;
  t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, NULL, 16, &status);
  assert_status(status, WEFT_INVALID_ARGUMENT, "data is NULL");
  /* A NULL status pointer is allowed. */
  g_assert_null(weft_tensor_new_from_data(WEFT_DT_INT32, 2, dims, values, 3, NULL));

  /* Every numeric dtype reads back through get_double. */
  int64_t three[] = {3};
  int8_t i8[] = {-128, 0, 127};
  uint8_t u8[] = {0, 200, 255};
  int16_t i16[] = {-32768, 5, 32767};
  uint16_t u16[] = {0, 1, 65535};
  int32_t i32[] = {INT32_MIN, 7, INT32_MAX};
  uint32_t u32[] = {0, 9, UINT32_MAX};
  int64_t i64[] = {-((int64_t)1 << 40), 11, (int64_t)1 << 50};
  uint64_t u64[] = {0, 13, (uint64_t)1 << 63};
  double f64[] = {-0.5, 1e300, 3};
  uint16_t f16[] = {weft__float_to_half(1.5f), weft__float_to_half(-2), 0x7bff};
  uint16_t bf16[] = {weft__float_to_bfloat16(0.5f), weft__float_to_bfloat16(-4), 0x3f80};
  uint8_t b[] = {1, 0, 1};
  const struct {
    weft_dtype_t dtype;
    const void *data;
    size_t nbytes;
    double want[3];
  } cases[] = {
      {WEFT_DT_INT8, i8, sizeof i8, {-128, 0, 127}},
      {WEFT_DT_UINT8, u8, sizeof u8, {0, 200, 255}},
      {WEFT_DT_INT16, i16, sizeof i16, {-32768, 5, 32767}},
      {WEFT_DT_UINT16, u16, sizeof u16, {0, 1, 65535}},
      {WEFT_DT_INT32, i32, sizeof i32, {INT32_MIN, 7, INT32_MAX}},
      {WEFT_DT_UINT32, u32, sizeof u32, {0, 9, 4294967295.0}},
      {WEFT_DT_INT64, i64, sizeof i64, {-1099511627776.0, 11, 1125899906842624.0}},
      {WEFT_DT_UINT64, u64, sizeof u64, {0, 13, 9223372036854775808.0}},
      {WEFT_DT_DOUBLE, f64, sizeof f64, {-0.5, 1e300, 3}},
      {WEFT_DT_HALF, f16, sizeof f16, {1.5, -2, 65504}},
      {WEFT_DT_BFLOAT16, bf16, sizeof bf16, {0.5, -4, 1}},
      {WEFT_DT_BOOL, b, sizeof b, {1, 0, 1}},
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    t = weft_tensor_new_from_data(cases[c].dtype, 1, three, cases[c].data, cases[c].nbytes,
                                  &status);
    g_assert_null(status);
    for (int i = 0; i < 3; i++) g_assert_cmpfloat(weft_tensor_get_double(t, i), ==, cases[c].want[i]);
    weft_tensor_unref(t);
  }
  t = weft_tensor_new_from_data(WEFT_DT_BOOL, 1, three, b, sizeof b, NULL);
  text = weft_tensor_to_string(t, -1);
  g_assert_cmpstr(text, ==, "bool[3] [true, false, true]");
  free(text);
  weft_tensor_unref(t);
  t = weft_tensor_new_scalar_float(0.25f);
  text = weft_tensor_to_string(t, 5);
  g_assert_cmpstr(text, ==, "float32[] 0.25");
  free(text);
  weft_tensor_unref(t);
}

static void test_tensor_strings(void) {
  weft_tensor_t *s = weft_tensor_new_string("hello", 5);
  g_assert_cmpint(weft_tensor_dtype(s), ==, WEFT_DT_STRING);
  const weft_string_t *e = weft_tensor_data(s);
  g_assert_cmpuint(e[0].len, ==, 5);
  g_assert_cmpmem(e[0].data, 5, "hello", 5);
  g_assert_cmpfloat(weft_tensor_get_double(s, 0), ==, 0.0);
  weft_tensor_unref(s);

  int64_t dims[] = {3};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, 1, dims);
  e = weft_tensor_data(t);
  for (int i = 0; i < 3; i++) g_assert_cmpuint(e[i].len, ==, 0);
  g_assert_null(weft_tensor_set_string(t, 0, "a\0b", 3));
  g_assert_null(weft_tensor_set_string(t, 2, "xyz", 3));
  g_assert_null(weft_tensor_set_string(t, 2, "second", 6)); /* replaces, frees the old bytes */
  g_assert_cmpmem(e[0].data, e[0].len, "a\0b", 3);
  g_assert_cmpstr(e[2].data, ==, "second");
  char *text = weft_tensor_to_string(t, 10);
  g_assert_cmpstr(text, ==, "string[3] [\"a\\x00b\", \"\", \"second\"]");
  free(text);
  assert_status(weft_tensor_set_string(t, 3, "x", 1), WEFT_OUT_OF_RANGE, "index 3");
  assert_status(weft_tensor_set_string(t, -1, "x", 1), WEFT_OUT_OF_RANGE, "3 elements");

  /* Deep copies: from_data over a weft_string_t array, and copy_to_host. */
  weft_string_t src[] = {{(char *)"one", 3}, {(char *)"two!", 4}};
  int64_t two[] = {2};
  weft_status_t *status = NULL;
  weft_tensor_t *u = weft_tensor_new_from_data(WEFT_DT_STRING, 1, two, src, sizeof src, &status);
  g_assert_null(status);
  const weft_string_t *ue = weft_tensor_data(u);
  g_assert_true(ue[0].data != src[0].data);
  g_assert_cmpmem(ue[1].data, ue[1].len, "two!", 4);
  weft_tensor_t *copy = NULL;
  g_assert_null(weft__tensor_copy_to_host(t, &copy));
  const weft_string_t *ce = weft_tensor_data(copy);
  g_assert_true(ce[2].data != e[2].data);
  g_assert_cmpstr(ce[2].data, ==, "second");
  weft_tensor_unref(copy);
  weft_tensor_unref(u);

  int64_t one[] = {1};
  weft_tensor_t *f = weft_tensor_new(WEFT_DT_FLOAT, 1, one);
  assert_status(weft_tensor_set_string(f, 0, "x", 1), WEFT_INVALID_ARGUMENT, "float32");
  weft_tensor_unref(f);
  weft_tensor_unref(t);
}

static void test_tensor_view(void) {
  int64_t dims[] = {4, 5};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT64, 2, dims);
  weft_tensor_view_t v;
  memset(&v, 0, sizeof v);
  weft__tensor_fill_view(t, &v);
  g_assert_cmpuint(v.struct_size, ==, sizeof v);
  g_assert_cmpint(v.dtype, ==, WEFT_DT_INT64);
  g_assert_cmpint(v.rank, ==, 2);
  g_assert_cmpint(v.dims[1], ==, 5);
  g_assert_cmpint(v.num_elements, ==, 20);
  g_assert_true(v.data == weft_tensor_data(t));
  g_assert_cmpuint(v.nbytes, ==, 160);

  /* An older plugin's smaller struct: nothing past its end is written. */
  memset(&v, 0xab, sizeof v);
  v.struct_size = offsetof(weft_tensor_view_t, num_elements);
  weft__tensor_fill_view(t, &v);
  g_assert_cmpuint(v.struct_size, ==, offsetof(weft_tensor_view_t, num_elements));
  g_assert_cmpint(v.rank, ==, 2);
  g_assert_cmpint(v.dims[0], ==, 4);
  int64_t untouched;
  memset(&untouched, 0xab, sizeof untouched);
  g_assert_cmpint(v.num_elements, ==, untouched);
  weft_tensor_unref(t);
}

/* A fake device backend: "device memory" is malloc'd with a tag so the test can tell it apart,
 * and every call is counted. */
typedef struct {
  int allocs, frees, to_device, from_device, device_to_device;
} fake_counts_t;

static weft_status_t *fake_alloc(void *device, size_t nbytes, void **ptr) {
  fake_counts_t *c = device;
  c->allocs++;
  *ptr = g_malloc0(nbytes + 16);
  return NULL;
}
static void fake_free(void *device, void *ptr) {
  ((fake_counts_t *)device)->frees++;
  g_free(ptr);
}
static weft_status_t *fake_to(void *device, void *dst, const void *src, size_t n) {
  ((fake_counts_t *)device)->to_device++;
  memcpy(dst, src, n);
  return NULL;
}
static weft_status_t *fake_from(void *device, void *dst, const void *src, size_t n) {
  ((fake_counts_t *)device)->from_device++;
  memcpy(dst, src, n);
  return NULL;
}
static weft_status_t *fake_d2d(void *device, void *dst, const void *src, size_t n) {
  ((fake_counts_t *)device)->device_to_device++;
  memcpy(dst, src, n);
  return NULL;
}
static weft_status_t *fake_alloc_fail(void *device, size_t nbytes, void **ptr) {
  return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "fake device is full");
}

static void make_fake_device(weft__device_t *dev, weft__backend_t *backend, fake_counts_t *counts,
                             const char *name, bool host_accessible) {
  memset(backend, 0, sizeof *backend);
  backend->table.struct_size = sizeof backend->table;
  backend->table.device_type = "FAKE";
  backend->table.alloc = fake_alloc;
  backend->table.free = fake_free;
  backend->table.copy_to_device = fake_to;
  backend->table.copy_from_device = fake_from;
  backend->table.copy_device_to_device = fake_d2d;
  memset(dev, 0, sizeof *dev);
  dev->name = (char *)name;
  dev->type = (char *)"FAKE";
  dev->backend = backend;
  dev->handle = counts;
  dev->props.host_accessible = host_accessible;
}

static void test_tensor_devices(void) {
  fake_counts_t ca = {0}, cb = {0}, cc = {0};
  weft__backend_t ba, bb, bc;
  weft__device_t a, b, host_like;
  make_fake_device(&a, &ba, &ca, "/job:localhost/replica:0/task:0/device:FAKE:0", false);
  make_fake_device(&b, &bb, &cb, "/job:localhost/replica:0/task:0/device:FAKE:1", false);
  make_fake_device(&host_like, &bc, &cc, "/job:localhost/replica:0/task:0/device:CPU:0", true);

  int64_t dims[] = {3};
  float values[] = {1.5f, -2, 8};
  weft_tensor_t *h = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, values, 12, NULL);

  /* host -> device A: allocated and copied through the backend. */
  weft_tensor_t *ta = NULL;
  g_assert_null(weft__tensor_to_device(h, &a, &ta));
  g_assert_true(ta != h);
  g_assert_false(weft__tensor_is_host(ta));
  g_assert_null(weft_tensor_data(ta));
  g_assert_cmpint(ca.allocs, ==, 1);
  g_assert_cmpint(ca.to_device, ==, 1);
  char *text = weft_tensor_to_string(ta, 3);
  g_assert_nonnull(strstr(text, "device:FAKE:0"));
  free(text);

  /* Same device: a new reference, no copy. */
  weft_tensor_t *same = NULL;
  g_assert_null(weft__tensor_to_device(ta, &a, &same));
  g_assert_true(same == ta);
  weft_tensor_unref(same);

  /* A -> B goes through host staging. */
  weft_tensor_t *tb = NULL;
  g_assert_null(weft__tensor_to_device(ta, &b, &tb));
  g_assert_cmpint(ca.from_device, ==, 1);
  g_assert_cmpint(cb.to_device, ==, 1);

  /* B -> host, and the values survived both hops. */
  weft_tensor_t *back = NULL;
  g_assert_null(weft__tensor_to_device(tb, NULL, &back));
  g_assert_true(weft__tensor_is_host(back));
  g_assert_cmpint(cb.from_device, ==, 1);
  for (int i = 0; i < 3; i++) g_assert_cmpfloat(weft_tensor_get_double(back, i), ==, values[i]);
  weft_tensor_unref(back);
  g_assert_null(weft__tensor_copy_to_host(ta, &back));
  g_assert_cmpfloat(weft_tensor_get_double(back, 2), ==, 8.0);
  weft_tensor_unref(back);
  char *json = weft_tensor_to_json(tb);
  g_assert_cmpstr(json, ==, "{\"dtype\": \"float32\", \"shape\": [3], \"values\": [1.5, -2, 8]}");
  g_free(json);

  /* A host-accessible device shares host memory both ways: no copies. */
  weft_tensor_t *th = NULL;
  g_assert_null(weft__tensor_to_device(h, &host_like, &th));
  g_assert_true(th == h);
  weft_tensor_unref(th);
  weft_tensor_t *on_cpu = NULL;
  g_assert_null(weft__tensor_alloc(&host_like, WEFT_DT_FLOAT, 1, dims, &on_cpu));
  g_assert_cmpint(cc.allocs, ==, 1);
  g_assert_true(weft__tensor_is_host(on_cpu));
  g_assert_nonnull(weft_tensor_data(on_cpu));
  g_assert_cmpfloat(weft_tensor_get_double(on_cpu, 0), ==, 0.0);
  g_assert_null(weft__tensor_to_device(on_cpu, NULL, &th));
  g_assert_true(th == on_cpu);
  weft_tensor_unref(th);
  /* device A -> host-accessible device: one copy from A. */
  g_assert_null(weft__tensor_to_device(ta, &host_like, &th));
  g_assert_true(weft__tensor_is_host(th));
  g_assert_cmpfloat(weft_tensor_get_double(th, 1), ==, -2.0);
  weft_tensor_unref(th);
  weft_tensor_unref(on_cpu);
  g_assert_cmpint(cc.frees, ==, 1);

  /* Strings stay on the host. */
  weft_tensor_t *s = weft_tensor_new_string("x", 1);
  weft_tensor_t *sa = NULL;
  assert_status(weft__tensor_to_device(s, &a, &sa), WEFT_FAILED_PRECONDITION,
                "device:FAKE:0");
  g_assert_null(sa);
  g_assert_null(weft__tensor_to_device(s, &host_like, &sa));
  g_assert_true(sa == s);
  weft_tensor_unref(sa);
  weft__buffer_t *buf = NULL;
  assert_status(weft__buffer_new(&a, WEFT_DT_STRING, 2, &buf), WEFT_FAILED_PRECONDITION,
                "device:FAKE:0");
  weft_tensor_unref(s);

  /* Allocation failures carry the backend's message and the device name. */
  ba.table.alloc = fake_alloc_fail;
  weft_tensor_t *fail = NULL;
  weft_status_t *st = weft__tensor_to_device(h, &a, &fail);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_RESOURCE_EXHAUSTED);
  g_assert_nonnull(strstr(weft_status_message(st), "fake device is full"));
  g_assert_nonnull(strstr(weft_status_message(st), "device:FAKE:0"));
  weft_status_free(st);
  ba.table.alloc = fake_alloc;

  weft_tensor_unref(ta);
  weft_tensor_unref(tb);
  weft_tensor_unref(h);
  g_assert_cmpint(ca.frees, ==, ca.allocs);
  g_assert_cmpint(cb.frees, ==, cb.allocs);
}

/* ---------------------------------------------------------------------------------------------
 * JSON */

static weft_tensor_t *json_ok(const char *json, weft_dtype_t dtype) {
  weft_status_t *status = NULL;
  weft_tensor_t *t = weft_tensor_from_json(json, dtype, &status);
  if (status != NULL) g_error("%s: %s", json, weft_status_message(status));
  g_assert_nonnull(t);
  return t;
}

static void json_err(const char *json, weft_dtype_t dtype, const char *needle) {
  weft_status_t *status = NULL;
  weft_tensor_t *t = weft_tensor_from_json(json, dtype, &status);
  g_assert_null(t);
  assert_status(status, WEFT_INVALID_ARGUMENT, needle);
}

static void test_json_parse(void) {
  weft_tensor_t *t = json_ok(" [[1, 2, 3], [4, 5, 6]] ", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_INT32);
  g_assert_cmpint(weft_tensor_rank(t), ==, 2);
  g_assert_cmpint(weft_tensor_dims(t)[0], ==, 2);
  g_assert_cmpint(weft_tensor_dims(t)[1], ==, 3);
  for (int i = 0; i < 6; i++) g_assert_cmpfloat(weft_tensor_get_double(t, i), ==, i + 1);
  weft_tensor_unref(t);

  t = json_ok("[[[1.5], [2]], [[3e2], [-4]]]", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_rank(t), ==, 3);
  g_assert_cmpfloat(weft_tensor_get_double(t, 2), ==, 300.0);
  g_assert_cmpfloat(weft_tensor_get_double(t, 3), ==, -4.0);
  weft_tensor_unref(t);

  t = json_ok("7", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_INT32);
  g_assert_cmpint(weft_tensor_rank(t), ==, 0);
  g_assert_cmpfloat(weft_tensor_get_double(t, 0), ==, 7.0);
  weft_tensor_unref(t);

  t = json_ok("[true, false]", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_BOOL);
  g_assert_cmpfloat(weft_tensor_get_double(t, 0), ==, 1.0);
  weft_tensor_unref(t);

  t = json_ok("[\"a\", \"\\u00e9\\n\", \"\\ud83d\\ude00\"]", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_STRING);
  const weft_string_t *s = weft_tensor_data(t);
  g_assert_cmpstr(s[1].data, ==, "\xc3\xa9\n");
  g_assert_cmpstr(s[2].data, ==, "\xf0\x9f\x98\x80");
  weft_tensor_unref(t);

  t = json_ok("[]", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_rank(t), ==, 1);
  g_assert_cmpint(weft_tensor_dims(t)[0], ==, 0);
  weft_tensor_unref(t);
  t = json_ok("[[], []]", WEFT_DT_INT64);
  g_assert_cmpint(weft_tensor_dims(t)[0], ==, 2);
  g_assert_cmpint(weft_tensor_dims(t)[1], ==, 0);
  weft_tensor_unref(t);

  /* Explicit dtypes, and integers beyond int32 widening to int64. */
  t = json_ok("[1, 2.0, 1e3]", WEFT_DT_INT16);
  g_assert_cmpfloat(weft_tensor_get_double(t, 2), ==, 1000.0);
  weft_tensor_unref(t);
  t = json_ok("[3000000000]", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_INT64);
  weft_tensor_unref(t);
  t = json_ok("[-9223372036854775808, 9223372036854775807]", WEFT_DT_INT64);
  g_assert_cmpint(((int64_t *)weft_tensor_data(t))[0], ==, INT64_MIN);
  g_assert_cmpint(((int64_t *)weft_tensor_data(t))[1], ==, INT64_MAX);
  weft_tensor_unref(t);
  t = json_ok("18446744073709551615", WEFT_DT_UINT64);
  g_assert_cmpuint(*(uint64_t *)weft_tensor_data(t), ==, UINT64_MAX);
  weft_tensor_unref(t);
  t = json_ok("[\"NaN\", \"Infinity\", \"-Infinity\", -0.0]", WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_true(isnan(weft_tensor_get_double(t, 0)));
  g_assert_true(isinf(weft_tensor_get_double(t, 1)) && weft_tensor_get_double(t, 1) > 0);
  g_assert_true(isinf(weft_tensor_get_double(t, 2)) && weft_tensor_get_double(t, 2) < 0);
  g_assert_true(signbit(weft_tensor_get_double(t, 3)));
  weft_tensor_unref(t);
  t = json_ok("[1, 0, true]", WEFT_DT_BOOL);
  g_assert_cmpfloat(weft_tensor_get_double(t, 0), ==, 1.0);
  weft_tensor_unref(t);
  t = json_ok("[0.5, 65504]", WEFT_DT_HALF);
  g_assert_cmpfloat(weft_tensor_get_double(t, 1), ==, 65504.0);
  weft_tensor_unref(t);

  /* Ragged arrays name the position. */
  json_err("[[1, 2, 3], [4, 5]]", WEFT_DT_INVALID, "ragged array at [1]: expected 3 elements, got 2");
  json_err("[[1, 2], 3]", WEFT_DT_INVALID,
           "ragged array at [1]: expected an array of 2 elements, got a number");
  json_err("[1, [2]]", WEFT_DT_INVALID, "ragged array at [1]: expected a scalar, got an array");
  json_err("[[[1], [2]], [[3], [4, 5]]]", WEFT_DT_INVALID,
           "ragged array at [1,1]: expected 1 elements, got 2");
  json_err("[[], [1]]", WEFT_DT_INVALID, "ragged array at [1]: expected 0 elements, got 1");

  /* Values the dtype cannot hold name the value and the dtype. */
  json_err("[1, 300]", WEFT_DT_UINT8, "value 300 at [1] is out of range for uint8");
  json_err("[-1]", WEFT_DT_UINT32, "value -1 at [0] is out of range for uint32");
  json_err("[[1], [1.5]]", WEFT_DT_INT32, "value 1.5 at [1,0] is not an integer, as int32 needs");
  json_err("2147483648", WEFT_DT_INT32, "value 2147483648 is out of range for int32");
  json_err("9223372036854775808", WEFT_DT_INT64, "out of range for int64");
  json_err("1e39", WEFT_DT_FLOAT, "value 1e39 is out of range for float32");
  json_err("1e400", WEFT_DT_DOUBLE, "out of range for float64");
  json_err("70000", WEFT_DT_HALF, "out of range for float16");
  json_err("[\"x\"]", WEFT_DT_FLOAT, "value \"x\" at [0] is a string, not a float32 value");
  json_err("[2]", WEFT_DT_BOOL, "not a bool value");
  json_err("[1]", WEFT_DT_STRING, "is a number, not a string value");
  json_err("[\"NaN\"]", WEFT_DT_INT32, "not a int32 value");

  /* Syntax and other errors. */
  json_err("[1, 2", WEFT_DT_INVALID, "invalid JSON at offset 5");
  json_err("[1,]", WEFT_DT_INVALID, "invalid JSON at offset 3");
  json_err("[01]", WEFT_DT_INVALID, "invalid JSON");
  json_err("", WEFT_DT_INVALID, "invalid JSON at offset 0");
  json_err("[1] x", WEFT_DT_INVALID, "unexpected text after the value");
  json_err("[1, null]", WEFT_DT_INVALID, "null at [1]");
  json_err("[1, \"a\"]", WEFT_DT_INVALID, "strings mixed with numbers");
  json_err("[true, 1]", WEFT_DT_INVALID, "bools mixed");
  json_err("[[[[[[[[[1]]]]]]]]]", WEFT_DT_INVALID, "deeper than the maximum rank 8");
  json_err("[\"\\q\"]", WEFT_DT_INVALID, "bad escape");
  weft_status_t *status = NULL;
  g_assert_null(weft_tensor_from_json(NULL, WEFT_DT_INVALID, &status));
  assert_status(status, WEFT_INVALID_ARGUMENT, "json is NULL");
  g_assert_null(weft_tensor_from_json("[", WEFT_DT_INVALID, NULL));
}

static void test_json_print(void) {
  /* float32 values print shortest and read back to the same bits. */
  float f[] = {0.1f, 1e-30f, 1.0f / 3.0f, -0.0f, 3.4028235e38f, 1.4e-45f, 16777216.0f, 2.5f};
  int64_t n = G_N_ELEMENTS(f);
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, &n, f, sizeof f, NULL);
  char *json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"float32\", \"shape\": [8], \"values\": [0.1, 1e-30, 0.33333334, "
                  "-0, 3.4028235e+38, 1e-45, 16777216, 2.5]}");
  weft_tensor_t *back = json_ok(json, WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(back), ==, WEFT_DT_FLOAT);
  g_assert_cmpmem(weft_tensor_data(back), sizeof f, f, sizeof f);
  weft_tensor_unref(back);
  /* Also readable as a plain array with an explicit dtype. */
  const char *values = strstr(json, "[0.1");
  char *array = g_strndup(values, strlen(values) - 1);
  back = json_ok(array, WEFT_DT_FLOAT);
  g_assert_cmpmem(weft_tensor_data(back), sizeof f, f, sizeof f);
  weft_tensor_unref(back);
  g_free(array);
  g_free(json);
  weft_tensor_unref(t);

  double d[] = {0.1, 1e-300, 1.0 / 3.0, NAN, INFINITY, -INFINITY};
  int64_t dims[] = {2, 3};
  t = weft_tensor_new_from_data(WEFT_DT_DOUBLE, 2, dims, d, sizeof d, NULL);
  json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"float64\", \"shape\": [2, 3], \"values\": [0.1, 1e-300, "
                  "0.3333333333333333, \"NaN\", \"Infinity\", \"-Infinity\"]}");
  back = json_ok(json, WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(back), ==, WEFT_DT_DOUBLE);
  g_assert_cmpint(weft_tensor_rank(back), ==, 2);
  g_assert_cmpfloat(weft_tensor_get_double(back, 2), ==, 1.0 / 3.0);
  g_assert_true(isnan(weft_tensor_get_double(back, 3)));
  g_assert_true(isinf(weft_tensor_get_double(back, 5)));
  weft_tensor_unref(back);
  g_free(json);
  weft_tensor_unref(t);

  int64_t i64[] = {INT64_MAX, INT64_MIN, 0};
  int64_t three = 3;
  t = weft_tensor_new_from_data(WEFT_DT_INT64, 1, &three, i64, sizeof i64, NULL);
  json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"int64\", \"shape\": [3], \"values\": [9223372036854775807, "
                  "-9223372036854775808, 0]}");
  back = json_ok(json, WEFT_DT_INVALID);
  g_assert_cmpmem(weft_tensor_data(back), sizeof i64, i64, sizeof i64);
  weft_tensor_unref(back);
  g_free(json);
  weft_tensor_unref(t);

  uint64_t u64 = UINT64_MAX;
  t = weft_tensor_new_from_data(WEFT_DT_UINT64, 0, NULL, &u64, 8, NULL);
  json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"uint64\", \"shape\": [], \"values\": [18446744073709551615]}");
  back = json_ok(json, WEFT_DT_INVALID);
  g_assert_cmpuint(*(uint64_t *)weft_tensor_data(back), ==, UINT64_MAX);
  weft_tensor_unref(back);
  g_free(json);
  weft_tensor_unref(t);

  uint16_t h[] = {weft__float_to_half(0.1f), weft__float_to_half(65504), 0x0001, 0x7c00};
  int64_t four = 4;
  t = weft_tensor_new_from_data(WEFT_DT_HALF, 1, &four, h, sizeof h, NULL);
  json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"float16\", \"shape\": [4], \"values\": [0.1, 65504, 6e-08, "
                  "\"Infinity\"]}");
  back = json_ok(json, WEFT_DT_INVALID);
  g_assert_cmpmem(weft_tensor_data(back), sizeof h, h, sizeof h);
  weft_tensor_unref(back);
  g_free(json);
  weft_tensor_unref(t);

  uint16_t bf[] = {weft__float_to_bfloat16(0.1f), weft__float_to_bfloat16(3.0e38f)};
  int64_t two = 2;
  t = weft_tensor_new_from_data(WEFT_DT_BFLOAT16, 1, &two, bf, sizeof bf, NULL);
  json = weft_tensor_to_json(t);
  back = json_ok(json, WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(back), ==, WEFT_DT_BFLOAT16);
  g_assert_cmpmem(weft_tensor_data(back), sizeof bf, bf, sizeof bf);
  weft_tensor_unref(back);
  g_free(json);
  weft_tensor_unref(t);

  t = json_ok("[[true, false]]", WEFT_DT_INVALID);
  json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"bool\", \"shape\": [1, 2], \"values\": [true, false]}");
  g_free(json);
  weft_tensor_unref(t);

  weft_string_t strs[] = {{(char *)"q\"\\\n\x01", 5}, {(char *)"\xc3\xa9", 2}, {(char *)"\xff", 1}};
  t = weft_tensor_new_from_data(WEFT_DT_STRING, 1, (int64_t[]){3}, strs, sizeof strs, NULL);
  json = weft_tensor_to_json(t);
  g_assert_cmpstr(json, ==,
                  "{\"dtype\": \"string\", \"shape\": [3], \"values\": "
                  "[\"q\\\"\\\\\\u000a\\u0001\", \"\xc3\xa9\", \"\\u00ff\"]}");
  back = json_ok(json, WEFT_DT_INVALID);
  const weft_string_t *bs = weft_tensor_data(back);
  g_assert_cmpmem(bs[0].data, bs[0].len, "q\"\\\n\x01", 5);
  g_assert_cmpmem(bs[1].data, bs[1].len, "\xc3\xa9", 2);
  weft_tensor_unref(back);
  g_free(json);
  weft_tensor_unref(t);

  /* The object form's dtype and shape are checked. */
  json_err("{\"dtype\": \"int8\", \"values\": [1]}", WEFT_DT_FLOAT,
           "the JSON says dtype int8 but float32 was asked for");
  json_err("{\"shape\": [2, 2], \"values\": [1, 2, 3]}", WEFT_DT_INVALID,
           "shape [2,2] needs 4 values, the JSON has 3");
  json_err("{\"dtype\": \"float99\", \"values\": [1]}", WEFT_DT_INVALID, "unknown dtype");
  json_err("{\"valuez\": [1]}", WEFT_DT_INVALID, "unexpected or repeated key \"valuez\"");
  json_err("{\"shape\": [1]}", WEFT_DT_INVALID, "no \"values\"");
  t = json_ok("{\"shape\": [2, 2], \"values\": [1, 2, 3, 4], \"dtype\": \"DT_DOUBLE\"}",
              WEFT_DT_INVALID);
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_DOUBLE);
  g_assert_cmpint(weft_tensor_rank(t), ==, 2);
  weft_tensor_unref(t);
}

/* ---------------------------------------------------------------------------------------------
 * Shapes */

static weft__shape_t shape_of(int rank, ...) {
  weft__shape_t s = {.rank = rank};
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) s.dims[i] = va_arg(ap, int64_t);
  va_end(ap);
  return s;
}

static char *broadcast_str(weft__shape_t a, weft__shape_t b) {
  weft__shape_t out;
  weft_status_t *status = weft__broadcast_shapes(&a, &b, &out);
  if (status != NULL) {
    char *msg = g_strdup_printf("%s: %s", weft_code_name(weft_status_code(status)),
                                weft_status_message(status));
    weft_status_free(status);
    return msg;
  }
  return weft__shape_to_string(out.rank, out.dims);
}

#define assert_broadcast(a, b, want)       \
  do {                                     \
    char *got_ = broadcast_str((a), (b));  \
    g_assert_cmpstr(got_, ==, (want));     \
    g_free(got_);                          \
  } while (0)

static void test_shapes(void) {
  int64_t d[] = {2, 3, 4};
  g_assert_cmpint(weft__shape_num_elements(3, d), ==, 24);
  g_assert_cmpint(weft__shape_num_elements(0, NULL), ==, 1);
  g_assert_cmpint(weft__shape_num_elements(-1, NULL), ==, -1);
  int64_t u[] = {2, -1, 3};
  g_assert_cmpint(weft__shape_num_elements(3, u), ==, -1);
  int64_t z[] = {INT64_MAX, 0};
  g_assert_cmpint(weft__shape_num_elements(2, z), ==, 0);
  int64_t o[] = {INT64_MAX, 2};
  g_assert_cmpint(weft__shape_num_elements(2, o), ==, -1);
  char *s = weft__shape_to_string(3, u);
  g_assert_cmpstr(s, ==, "[2,?,3]");
  g_free(s);
  s = weft__shape_to_string(-1, NULL);
  g_assert_cmpstr(s, ==, "<unknown>");
  g_free(s);
  s = weft__shape_to_string(0, NULL);
  g_assert_cmpstr(s, ==, "[]");
  g_free(s);

  const int64_t Q = WEFT_DIM_UNKNOWN;
  assert_broadcast(shape_of(2, (int64_t)2, (int64_t)3), shape_of(1, (int64_t)3), "[2,3]");
  assert_broadcast(shape_of(0), shape_of(2, (int64_t)4, (int64_t)5), "[4,5]");
  assert_broadcast(shape_of(3, (int64_t)5, (int64_t)1, (int64_t)3),
                   shape_of(2, (int64_t)4, (int64_t)1), "[5,4,3]");
  assert_broadcast(shape_of(1, (int64_t)0), shape_of(1, (int64_t)1), "[0]");
  assert_broadcast(shape_of(2, Q, (int64_t)3), shape_of(2, (int64_t)4, (int64_t)1), "[4,3]");
  assert_broadcast(shape_of(1, Q), shape_of(1, (int64_t)1), "[?]");
  assert_broadcast(shape_of(1, Q), shape_of(1, Q), "[?]");
  assert_broadcast(shape_of(-1), shape_of(1, (int64_t)3), "<unknown>");
  assert_broadcast(shape_of(2, (int64_t)2, (int64_t)3), shape_of(1, (int64_t)4),
                   "INVALID_ARGUMENT: Incompatible shapes: [2,3] vs. [4]");
  assert_broadcast(shape_of(2, (int64_t)2, Q), shape_of(2, (int64_t)3, (int64_t)1),
                   "INVALID_ARGUMENT: Incompatible shapes: [2,?] vs. [3,1]");
  /* out may alias an input. */
  weft__shape_t a = shape_of(1, (int64_t)3), b = shape_of(2, (int64_t)2, (int64_t)1);
  g_assert_null(weft__broadcast_shapes(&a, &b, &a));
  g_assert_cmpint(a.rank, ==, 2);
  g_assert_cmpint(a.dims[0], ==, 2);
  g_assert_cmpint(a.dims[1], ==, 3);
}

/* ---------------------------------------------------------------------------------------------
 * Thread pools */

typedef struct {
  const int32_t *data;
  gint64 sum;
  guint8 *visits;
  gint calls;
} sum_ctx_t;

static void sum_range(void *arg, int64_t begin, int64_t end) {
  sum_ctx_t *ctx = arg;
  int64_t local = 0;
  for (int64_t i = begin; i < end; i++) {
    local += ctx->data[i];
    ctx->visits[i]++;
  }
  __atomic_fetch_add(&ctx->sum, local, __ATOMIC_RELAXED);
  g_atomic_int_inc(&ctx->calls);
}

static void test_parallel_for_sum(void) {
  const int64_t n = 10 * 1000 * 1000;
  int32_t *data = g_new(int32_t, n);
  guint32 x = 12345;
  int64_t serial = 0;
  for (int64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    data[i] = (int32_t)(x >> 8) - (1 << 23);
    serial += data[i];
  }
  weft__threadpool_t *pool = weft__threadpool_new(4, "test");
  g_assert_cmpint(weft__threadpool_size(pool), ==, 4);
  sum_ctx_t ctx = {.data = data, .visits = g_new0(guint8, n)};
  weft__parallel_for(pool, n, 2, sum_range, &ctx);
  g_assert_cmpint(ctx.sum, ==, serial);
  g_assert_cmpint(ctx.calls, >, 1);
  for (int64_t i = 0; i < n; i++)
    if (ctx.visits[i] != 1) g_error("element %" G_GINT64_FORMAT " visited %d times", i, ctx.visits[i]);

  /* Cheap work runs inline in one call. */
  memset(ctx.visits, 0, (size_t)n);
  ctx.sum = 0;
  ctx.calls = 0;
  weft__parallel_for(pool, 100, 10, sum_range, &ctx);
  g_assert_cmpint(ctx.calls, ==, 1);
  int64_t first100 = 0;
  for (int i = 0; i < 100; i++) first100 += data[i];
  g_assert_cmpint(ctx.sum, ==, first100);
  /* Nothing to do, and no pool at all. */
  weft__parallel_for(pool, 0, 10, sum_range, &ctx);
  g_assert_cmpint(ctx.calls, ==, 1);
  ctx.sum = 0;
  weft__parallel_for(NULL, n, 1000, sum_range, &ctx);
  g_assert_cmpint(ctx.sum, ==, serial);

  weft__threadpool_free(pool);
  g_free(ctx.visits);
  g_free(data);
}

typedef struct {
  weft__threadpool_t *pool;
  gint64 total;
} nested_ctx_t;

static void inner_range(void *arg, int64_t begin, int64_t end) {
  __atomic_fetch_add((gint64 *)arg, end - begin, __ATOMIC_RELAXED);
}

static void outer_range(void *arg, int64_t begin, int64_t end) {
  nested_ctx_t *ctx = arg;
  for (int64_t i = begin; i < end; i++) {
    gint64 inner = 0;
    weft__parallel_for(ctx->pool, 100000, 50, inner_range, &inner);
    g_assert_cmpint(inner, ==, 100000);
    __atomic_fetch_add(&ctx->total, inner, __ATOMIC_RELAXED);
  }
}

typedef struct {
  nested_ctx_t *nested;
  GMutex lock;
  GCond cond;
  int pending;
} schedule_ctx_t;

static void scheduled_task(void *arg) {
  schedule_ctx_t *ctx = arg;
  /* A parallel_for from inside a pool thread, while every other thread does the same. */
  weft__parallel_for(ctx->nested->pool, 32, 1000000, outer_range, ctx->nested);
  g_mutex_lock(&ctx->lock);
  ctx->pending--;
  g_cond_signal(&ctx->cond);
  g_mutex_unlock(&ctx->lock);
}

static void test_parallel_for_nested(void) {
  weft__threadpool_t *pool = weft__threadpool_new(3, "nested");
  nested_ctx_t nested = {.pool = pool};
  weft__parallel_for(pool, 64, 1000000, outer_range, &nested);
  g_assert_cmpint(nested.total, ==, 64 * 100000);

  /* Fill every pool thread with tasks that themselves run nested parallel_fors. */
  nested.total = 0;
  schedule_ctx_t ctx = {.nested = &nested, .pending = 6};
  g_mutex_init(&ctx.lock);
  g_cond_init(&ctx.cond);
  for (int i = 0; i < 6; i++) weft__threadpool_schedule(pool, scheduled_task, &ctx);
  g_mutex_lock(&ctx.lock);
  while (ctx.pending > 0) g_cond_wait(&ctx.cond, &ctx.lock);
  g_mutex_unlock(&ctx.lock);
  g_assert_cmpint(nested.total, ==, 6 * 32 * 100000);
  g_mutex_clear(&ctx.lock);
  g_cond_clear(&ctx.cond);
  weft__threadpool_free(pool);
}

typedef struct {
  gint visits[64];
  gint64 total;
} rounds_ctx_t;

static void rounds_range(void *arg, int64_t begin, int64_t end) {
  rounds_ctx_t *ctx = arg;
  for (int64_t i = begin; i < end; i++) {
    g_atomic_int_inc(&ctx->visits[i]);
    __atomic_fetch_add(&ctx->total, i + 1, __ATOMIC_RELAXED);
  }
}

/* parallel_fors back to back, as a step's kernels make them: the helpers that finished one wait
 * for the next (pfor_spin) and join it through the pool's offer rather than its queue; every
 * unit still runs exactly once per call, and freeing the pool while helpers wait does not hang. */
static void test_parallel_for_back_to_back(void) {
  const int sizes[] = {2, 5};
  for (size_t p = 0; p < G_N_ELEMENTS(sizes); p++) {
    weft__threadpool_t *pool = weft__threadpool_new(sizes[p], "rounds");
    rounds_ctx_t ctx = {0};
    const int rounds = 3000;
    for (int r = 0; r < rounds; r++) {
      /* 64 units of a million cycles each: as many chunks as the pool takes. */
      weft__parallel_for(pool, 64, 1000000, rounds_range, &ctx);
      for (int i = 0; i < 64; i++)
        if (g_atomic_int_get(&ctx.visits[i]) != r + 1)
          g_error("pool of %d, call %d: unit %d ran %d times in all", sizes[p], r, i,
                  g_atomic_int_get(&ctx.visits[i]));
    }
    g_assert_cmpint(ctx.total, ==, (gint64)rounds * 64 * 65 / 2);
    weft__threadpool_free(pool);
  }
}

/* How a parallel_for is cut: work under 100k cycles stays on the caller (issue 22: waking a
 * helper costs more), chunks are at least 10k cycles and at most 4 per thread, caller included. */
static void test_parallel_for_plan(void) {
  static const struct {
    int64_t total, cost;
    int threads;
    int64_t chunks, chunk_size;
  } cases[] = {
      {32, 769, 2, 1, 32},          /* conv2d_transpose's col2im at batch 1: 24,608 cycles */
      {130, 769, 2, 1, 130},        /* 99,970 cycles */
      {131, 769, 2, 10, 14},        /* 100,739: chunks of ceil(10000 / 769) = 14 units */
      {100000, 1, 2, 10, 10000},    /* at the threshold: 10 chunks of 10k */
      {99999, 1, 4, 1, 99999},
      {10000000, 2, 4, 20, 500000}, /* 4 chunks for each of 5 threads */
      {64, 1000000, 5, 22, 3},      /* 24 chunks wanted, of ceil(64 / 24) = 3 units */
      {2, (int64_t)1 << 30, 2, 2, 1},
      {1000000, 1000, 1, 1, 1000000}, /* one thread: never split */
      {1, (int64_t)1 << 30, 4, 1, 1},
      {0, 10, 4, 0, 0},
      {G_MAXINT64 / 2, (int64_t)1 << 50, 2, 12, G_MAXINT64 / 2 / 12 + 1}, /* no overflow */
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    int64_t size = -1;
    int64_t n = weft__parallel_for_plan(cases[i].total, cases[i].cost, cases[i].threads, &size);
    if (n != cases[i].chunks || size != cases[i].chunk_size)
      g_error("case %zu: %" G_GINT64_FORMAT " chunks of %" G_GINT64_FORMAT ", expected %"
              G_GINT64_FORMAT " of %" G_GINT64_FORMAT, i, n, size, cases[i].chunks,
              cases[i].chunk_size);
  }
}

static void test_default_pools(void) {
  weft__threadpool_t *a = weft__default_intra_op_pool(0);
  weft__threadpool_t *b = weft__default_intra_op_pool(7);
  g_assert_true(a == b);
  g_assert_cmpint(weft__threadpool_size(a), ==, weft__num_cores());
  weft__threadpool_t *inter = weft__default_inter_op_pool(2);
  g_assert_true(inter != a);
  g_assert_cmpint(weft__threadpool_size(inter), ==, 2);
  g_assert_cmpint(weft__num_cores(), ==, (int)g_get_num_processors());
}

/* ---------------------------------------------------------------------------------------------
 * Logging (in subprocesses: the level is read once per process) */

static void test_log_levels(void) {
  if (g_test_subprocess()) {
    weft__log(WEFT_LOG_INFO, "tester", "value %d", 42);
    weft__log(WEFT_LOG_DEBUG, "tester", "hidden %d", 1);
    weft__log(WEFT_LOG_WARNING, NULL, "no who");
    return;
  }
  char *saved = g_strdup(g_getenv("WEFT_LOG_LEVEL"));
  g_setenv("WEFT_LOG_LEVEL", "info", TRUE);
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stderr("*weft: I tester: value 42\n*weft: W no who\n*");
  g_test_trap_assert_stderr_unmatched("*hidden*");
  if (saved != NULL)
    g_setenv("WEFT_LOG_LEVEL", saved, TRUE);
  else
    g_unsetenv("WEFT_LOG_LEVEL");
  g_free(saved);
}

static void test_log_default(void) {
  if (g_test_subprocess()) {
    weft__log(WEFT_LOG_INFO, "tester", "quiet");
    weft__log(WEFT_LOG_ERROR, "tester", "loud %s", "error");
    return;
  }
  char *saved = g_strdup(g_getenv("WEFT_LOG_LEVEL"));
  g_unsetenv("WEFT_LOG_LEVEL");
  g_unsetenv("WEFT_LOG");
  g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed(); /* an error log must not abort, even under g_test_init */
  g_test_trap_assert_stderr("*weft: E tester: loud error\n*");
  g_test_trap_assert_stderr_unmatched("*quiet*");
  if (saved != NULL) g_setenv("WEFT_LOG_LEVEL", saved, TRUE);
  g_free(saved);
}

static void test_thread_limit(void) {
  int cores = (int)g_get_num_processors();
  /* OpenBLAS's variable is set for the CPU plugin to find, unless the user set it. */
  g_unsetenv("OPENBLAS_NUM_THREADS");
  weft_threads_set_limit(3);
  g_assert_cmpint(weft__num_cores(), ==, 3);
  g_assert_cmpstr(g_getenv("OPENBLAS_NUM_THREADS"), ==, "3");
  g_setenv("OPENBLAS_NUM_THREADS", "5", TRUE);
  weft_threads_set_limit(2);
  g_assert_cmpint(weft__num_cores(), ==, 2);
  g_assert_cmpstr(g_getenv("OPENBLAS_NUM_THREADS"), ==, "5");
  /* 0 (or less) goes back to one thread per core. */
  weft_threads_set_limit(0);
  g_assert_cmpint(weft__num_cores(), ==, cores > 0 ? cores : 1);
  weft_threads_set_limit(-4);
  g_assert_cmpint(weft__num_cores(), ==, cores > 0 ? cores : 1);
  g_unsetenv("OPENBLAS_NUM_THREADS");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* First: they set environment variables, which is only safe before any thread exists. */
  g_test_add_func("/base/log/levels", test_log_levels);
  g_test_add_func("/base/log/default", test_log_default);
  g_test_add_func("/base/status/basics", test_status_basics);
  g_test_add_func("/base/status/code_names", test_status_code_names);
  g_test_add_func("/base/status/code_only", test_status_code_only);
  g_test_add_func("/base/status/new_out_of_memory", test_status_new_out_of_memory);
  g_test_add_func("/base/dtype/names", test_dtype_names);
  g_test_add_func("/base/dtype/refs", test_dtype_refs);
  g_test_add_func("/base/dtype/half_bfloat16", test_half_bfloat16);
  g_test_add_func("/base/tensor/new", test_tensor_new);
  g_test_add_func("/base/tensor/huge_pages", test_tensor_huge_pages);
  g_test_add_func("/base/tensor/from_data", test_tensor_from_data);
  g_test_add_func("/base/tensor/strings", test_tensor_strings);
  g_test_add_func("/base/tensor/view", test_tensor_view);
  g_test_add_func("/base/tensor/devices", test_tensor_devices);
  g_test_add_func("/base/json/parse", test_json_parse);
  g_test_add_func("/base/json/print", test_json_print);
  g_test_add_func("/base/shape/broadcast", test_shapes);
  g_test_add_func("/base/threadpool/parallel_for_sum", test_parallel_for_sum);
  g_test_add_func("/base/threadpool/parallel_for_nested", test_parallel_for_nested);
  g_test_add_func("/base/threadpool/parallel_for_back_to_back", test_parallel_for_back_to_back);
  g_test_add_func("/base/threadpool/parallel_for_plan", test_parallel_for_plan);
  g_test_add_func("/base/threadpool/default_pools", test_default_pools);
  g_test_add_func("/base/threadpool/thread_limit", test_thread_limit);
  return g_test_run();
}
