/* tf_graphs.c: weft-conformance --tf-graphs DIR: runs real TensorFlow graphs saved with the values
 * TensorFlow fed them and computed (the layout of Deeplearning4j's TensorFlow import tests, see
 * ../shared/corpus/README.md) and compares every saved output with Weft's: dtype, shape and values.
 *
 * Only the public C API is used, as a user importing a frozen graph would. Each graph ends as
 * passed, failed (a wrong answer: the worst element is reported), unsupported (the op, or op and
 * dtype, that Weft lacks) or error (anything else, with the message). Graphs that draw random
 * numbers are compared by value when every random op in them gives TensorFlow's stream exactly
 * (RandomUniform, RandomStandardNormal, TruncatedNormal, RandomUniformInt, RandomShuffle,
 * RandomGamma, RandomPoisson, RandomPoissonV2 with seed or seed2 set, read from the GraphDef
 * itself); otherwise only their shapes and dtypes are compared. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf_graphs.h"
#include "weft/weft.h"

typedef enum { TG_PASSED, TG_FAILED, TG_UNSUPPORTED, TG_ERROR, TG_N_RESULTS } tg_result_t;

static const char *const kResultNames[TG_N_RESULTS] = {"passed", "failed", "unsupported", "error"};

typedef struct {
  char *graph;   /* path relative to the corpus folder: family/case */
  char *family;  /* first component of graph */
  tg_result_t result;
  char *detail;  /* failed: the worst element; unsupported: what is missing; error: the message */
  char **missing; /* unsupported: the ops (or "op (dtype)"), NULL-terminated */
  bool shapes_only;
  int n_outputs;
} tg_record_t;

/* A saved tensor: the node output it belongs to and its files. */
typedef struct {
  char *node;
  int index;
  char *csv_path;
  char *shape_path;
} tg_file_t;

static void tg_file_free(gpointer p) {
  tg_file_t *f = p;
  g_free(f->node);
  g_free(f->csv_path);
  g_free(f->shape_path);
  g_free(f);
}

static void record_free(gpointer p) {
  tg_record_t *r = p;
  g_free(r->graph);
  g_free(r->family);
  g_free(r->detail);
  g_strfreev(r->missing);
  g_free(r);
}

/* ---------------------------------------------------------------------------------------------
 * Finding graphs and their files */

static void find_graphs(const char *dir, GPtrArray *out) {
  char *model = g_build_filename(dir, "frozen_model.pb", NULL);
  if (g_file_test(model, G_FILE_TEST_IS_REGULAR)) g_ptr_array_add(out, g_strdup(dir));
  g_free(model);
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return;
  GPtrArray *subs = g_ptr_array_new_with_free_func(g_free);
  for (const char *name; (name = g_dir_read_name(d)) != NULL;) {
    char *path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK))
      g_ptr_array_add(subs, path);
    else
      g_free(path);
  }
  g_dir_close(d);
  for (guint i = 0; i < subs->len; i++) find_graphs(subs->pdata[i], out);
  g_ptr_array_free(subs, TRUE);
}

static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a____b" -> "a/b": the corpus writes '/' of node names as four underscores. */
static char *node_name_from_file(const char *scope, const char *stem) {
  char **parts = g_strsplit(stem, "____", -1);
  char *name = g_strjoinv("/", parts);
  g_strfreev(parts);
  if (scope == NULL || *scope == '\0') return name;
  char *full = g_strconcat(scope, "/", name, NULL);
  g_free(name);
  return full;
}

/* Collects NAME.placeholder.csv (feeds) and NAME[.K].prediction.csv (outputs) below dir; scope
 * is the subfolder path, which names the node's scope. */
static void collect_files(const char *dir, const char *scope, const weft_graph_t *graph,
                          GPtrArray *feeds, GPtrArray *outputs) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (const char *name; (name = g_dir_read_name(d)) != NULL;) g_ptr_array_add(names, g_strdup(name));
  g_dir_close(d);
  g_ptr_array_sort(names, compare_strings);
  for (guint i = 0; i < names->len; i++) {
    const char *name = names->pdata[i];
    char *path = g_build_filename(dir, name, NULL);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
      char *sub = *scope ? g_strconcat(scope, "/", name, NULL) : g_strdup(name);
      collect_files(path, sub, graph, feeds, outputs);
      g_free(sub);
      g_free(path);
      continue;
    }
    bool is_feed = g_str_has_suffix(name, ".placeholder.csv");
    bool is_output = g_str_has_suffix(name, ".prediction.csv");
    if (!is_feed && !is_output) {
      g_free(path);
      continue;
    }
    size_t suffix = strlen(is_feed ? ".placeholder.csv" : ".prediction.csv");
    char *stem = g_strndup(name, strlen(name) - suffix);
    tg_file_t *f = g_new0(tg_file_t, 1);
    f->csv_path = path;
    char *base = g_strndup(path, strlen(path) - strlen(".csv"));
    f->shape_path = g_strconcat(base, ".shape", NULL);
    g_free(base);
    f->node = node_name_from_file(scope, stem);
    /* NAME.K names output K, unless the node's own name ends in ".K" (names may hold dots). */
    const char *dot = strrchr(stem, '.');
    if (is_output && dot != NULL && dot[1] != '\0' && weft_graph_node(graph, f->node) == NULL) {
      char *end = NULL;
      long k = strtol(dot + 1, &end, 10);
      if (*end == '\0' && k >= 0 && k < 1000000) {
        char *short_stem = g_strndup(stem, (size_t)(dot - stem));
        g_free(f->node);
        f->node = node_name_from_file(scope, short_stem);
        g_free(short_stem);
        f->index = (int)k;
      }
    }
    g_free(stem);
    g_ptr_array_add(is_feed ? feeds : outputs, f);
  }
  g_ptr_array_free(names, TRUE);
}

/* ---------------------------------------------------------------------------------------------
 * Reading the saved values */

/* The values of a .csv file: tokens separated by commas or line ends. */
static char **read_tokens(const char *path, int64_t *count, char **why) {
  char *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error)) {
    *why = g_strdup(error->message);
    g_error_free(error);
    return NULL;
  }
  GPtrArray *tokens = g_ptr_array_new();
  for (char *p = text; *p;) {
    size_t n = strcspn(p, ",\r\n");
    if (n > 0) g_ptr_array_add(tokens, g_strstrip(g_strndup(p, n)));
    p += n;
    if (*p) p++;
  }
  g_free(text);
  *count = tokens->len;
  g_ptr_array_add(tokens, NULL);
  return (char **)g_ptr_array_free(tokens, FALSE);
}

/* The dims of a .shape file; when they do not account for `count` values (an empty file, or a
 * listing some tests write for scalars), the values decide: one value is a scalar, else a vector. */
static bool read_shape(const char *path, int64_t count, int *rank, int64_t *dims, char **why) {
  char *text = NULL;
  GError *error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error)) {
    *why = g_strdup(error->message);
    g_error_free(error);
    return false;
  }
  int r = 0;
  int64_t product = 1;
  bool ok = true;
  char **lines = g_strsplit_set(text, ",\r\n", -1);
  for (char **l = lines; *l && ok; l++) {
    g_strstrip(*l);
    if (**l == '\0') continue;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(*l, &end, 10);
    if (errno || *end != '\0' || v < 0 || r >= WEFT_MAX_RANK) {
      ok = false;
      break;
    }
    dims[r++] = v;
    product = v == 0 || product > INT64_MAX / v ? (v == 0 ? 0 : -1) : product * v;
  }
  g_strfreev(lines);
  g_free(text);
  if (!ok || product != count) {
    /* One value is a scalar; anything else the dims do not account for, a vector. */
    r = count == 1 ? 0 : 1;
    dims[0] = count;
  }
  *rank = r;
  return true;
}

static bool is_float_type(weft_dtype_t dt) {
  return dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE || dt == WEFT_DT_HALF ||
         dt == WEFT_DT_BFLOAT16;
}

static bool parse_double(const char *s, double *out) {
  if (g_ascii_strcasecmp(s, "nan") == 0 || g_ascii_strcasecmp(s, "-nan") == 0) {
    *out = NAN;
    return true;
  }
  if (g_ascii_strcasecmp(s, "inf") == 0 || g_ascii_strcasecmp(s, "infinity") == 0) {
    *out = INFINITY;
    return true;
  }
  if (g_ascii_strcasecmp(s, "-inf") == 0 || g_ascii_strcasecmp(s, "-infinity") == 0) {
    *out = -INFINITY;
    return true;
  }
  if (g_ascii_strcasecmp(s, "true") == 0) {
    *out = 1;
    return true;
  }
  if (g_ascii_strcasecmp(s, "false") == 0) {
    *out = 0;
    return true;
  }
  char *end = NULL;
  *out = g_ascii_strtod(s, &end);
  return end != s && *end == '\0';
}

/* float32 <-> float16/bfloat16 bits, round to nearest even. */
static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (uint16_t)sign;
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) half++;
  return (uint16_t)half;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  uint32_t x = exp == 31 ? sign | 0x7f800000u | (man << 13)
                         : sign | ((exp - 15 + 127) << 23) | (man << 13);
  memcpy(&f, &x, 4);
  return f;
}

static uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float bfloat16_to_float(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* Element i of a numeric or bool tensor as a double (int64 beyond 2^53 loses bits: compared
 * exactly through element_int64 instead). */
static double element_double(const weft_tensor_t *t, int64_t i) {
  const void *d = weft_tensor_data(t);
  switch (weft_tensor_dtype(t)) {
    case WEFT_DT_FLOAT: return ((const float *)d)[i];
    case WEFT_DT_DOUBLE: return ((const double *)d)[i];
    case WEFT_DT_HALF: return half_to_float(((const uint16_t *)d)[i]);
    case WEFT_DT_BFLOAT16: return bfloat16_to_float(((const uint16_t *)d)[i]);
    case WEFT_DT_INT8: return ((const int8_t *)d)[i];
    case WEFT_DT_INT16: return ((const int16_t *)d)[i];
    case WEFT_DT_INT32: return ((const int32_t *)d)[i];
    case WEFT_DT_INT64: return (double)((const int64_t *)d)[i];
    case WEFT_DT_UINT8: return ((const uint8_t *)d)[i];
    case WEFT_DT_UINT16: return ((const uint16_t *)d)[i];
    case WEFT_DT_UINT32: return ((const uint32_t *)d)[i];
    case WEFT_DT_UINT64: return (double)((const uint64_t *)d)[i];
    case WEFT_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
    default: return NAN;
  }
}

static bool parse_integer(const char *s, bool is_unsigned, int64_t *out_signed,
                          uint64_t *out_unsigned) {
  char *end = NULL;
  errno = 0;
  if (is_unsigned) {
    *out_unsigned = g_ascii_strtoull(s, &end, 10);
  } else {
    *out_signed = g_ascii_strtoll(s, &end, 10);
  }
  if (errno == 0 && end != s && *end == '\0') return true;
  /* "3.0", "true": integral values written as floats or booleans. */
  double v;
  if (!parse_double(s, &v) || v != floor(v) || !isfinite(v)) return false;
  if (is_unsigned) {
    if (v < 0 || v >= 18446744073709551616.0) return false;
    *out_unsigned = (uint64_t)v;
  } else {
    if (v < -9223372036854775808.0 || v >= 9223372036854775808.0) return false;
    *out_signed = (int64_t)v;
  }
  return true;
}

/* A tensor of dtype and shape from the tokens; NULL with *why on a value that does not parse. */
static weft_tensor_t *tensor_from_tokens(weft_dtype_t dt, int rank, const int64_t *dims,
                                         char **tokens, int64_t count, char **why) {
  weft_tensor_t *t = weft_tensor_new(dt, rank, dims);
  if (t == NULL) {
    *why = g_strdup_printf("cannot make a %s tensor of %lld values", weft_dtype_name(dt),
                           (long long)count);
    return NULL;
  }
  void *d = weft_tensor_data(t);
  for (int64_t i = 0; i < count; i++) {
    const char *s = tokens[i];
    bool ok = true;
    if (dt == WEFT_DT_STRING) {
      weft_status_t *st = weft_tensor_set_string(t, i, s, strlen(s));
      ok = st == NULL;
      weft_status_free(st);
    } else if (is_float_type(dt) || dt == WEFT_DT_BOOL) {
      double v;
      ok = parse_double(s, &v);
      if (dt == WEFT_DT_FLOAT) ((float *)d)[i] = (float)v;
      else if (dt == WEFT_DT_DOUBLE) ((double *)d)[i] = v;
      else if (dt == WEFT_DT_HALF) ((uint16_t *)d)[i] = float_to_half((float)v);
      else if (dt == WEFT_DT_BFLOAT16) ((uint16_t *)d)[i] = float_to_bfloat16((float)v);
      else ((uint8_t *)d)[i] = v != 0;
    } else {
      bool is_unsigned = dt == WEFT_DT_UINT8 || dt == WEFT_DT_UINT16 || dt == WEFT_DT_UINT32 ||
                         dt == WEFT_DT_UINT64;
      int64_t sv = 0;
      uint64_t uv = 0;
      ok = parse_integer(s, is_unsigned, &sv, &uv);
      switch (dt) {
        case WEFT_DT_INT8: ((int8_t *)d)[i] = (int8_t)sv; break;
        case WEFT_DT_INT16: ((int16_t *)d)[i] = (int16_t)sv; break;
        case WEFT_DT_INT32: ((int32_t *)d)[i] = (int32_t)sv; break;
        case WEFT_DT_INT64: ((int64_t *)d)[i] = sv; break;
        case WEFT_DT_UINT8: ((uint8_t *)d)[i] = (uint8_t)uv; break;
        case WEFT_DT_UINT16: ((uint16_t *)d)[i] = (uint16_t)uv; break;
        case WEFT_DT_UINT32: ((uint32_t *)d)[i] = (uint32_t)uv; break;
        case WEFT_DT_UINT64: ((uint64_t *)d)[i] = uv; break;
        default: ok = false; break;
      }
    }
    if (!ok) {
      *why = g_strdup_printf("value %lld '%s' is not a %s", (long long)i, s, weft_dtype_name(dt));
      weft_tensor_unref(t);
      return NULL;
    }
  }
  return t;
}

/* Reads one saved tensor of dtype dt. */
static weft_tensor_t *read_saved(const tg_file_t *f, weft_dtype_t dt, char **why) {
  int64_t count = 0;
  char **tokens = read_tokens(f->csv_path, &count, why);
  if (tokens == NULL) return NULL;
  int rank = 0;
  int64_t dims[WEFT_MAX_RANK];
  weft_tensor_t *t = NULL;
  if (read_shape(f->shape_path, count, &rank, dims, why))
    t = tensor_from_tokens(dt, rank, dims, tokens, count, why);
  g_strfreev(tokens);
  return t;
}

/* ---------------------------------------------------------------------------------------------
 * Comparing */

static char *shape_string(const weft_tensor_t *t) {
  GString *s = g_string_new("[");
  for (int d = 0; d < weft_tensor_rank(t); d++)
    g_string_append_printf(s, "%s%lld", d ? "," : "", (long long)weft_tensor_dims(t)[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static bool same_shape(const weft_tensor_t *a, const weft_tensor_t *b) {
  if (weft_tensor_rank(a) != weft_tensor_rank(b)) return false;
  for (int d = 0; d < weft_tensor_rank(a); d++)
    if (weft_tensor_dims(a)[d] != weft_tensor_dims(b)[d]) return false;
  return true;
}

/* The corpus's exporter wrote some int64 answers through a double ("4561332011889286656.0"
 * for TensorFlow's 4561332011889286782, a Bitcast to int64), so a saved value of magnitude
 * 2^53 or more may be the nearest double of TensorFlow's: such a value matches a result that
 * rounds to it. Values below 2^53 are always compared exactly. */
static bool lossy_saved_match(int64_t got, int64_t want, bool is_unsigned) {
  double g = is_unsigned ? (double)(uint64_t)got : (double)got;
  double w = is_unsigned ? (double)(uint64_t)want : (double)want;
  if (fabs(w) < 9007199254740992.0) return false;
  return g == w;
}

/* NULL when got matches want (same dtype as declared, same shape, values within tolerance);
 * else what differs, for the worst element. */
static char *compare(const char *what, const weft_tensor_t *got, const weft_tensor_t *want,
                     bool shapes_only) {
  if (weft_tensor_dtype(got) != weft_tensor_dtype(want))
    return g_strdup_printf("%s: dtype %s, TensorFlow's graph declares %s", what,
                           weft_dtype_name(weft_tensor_dtype(got)),
                           weft_dtype_name(weft_tensor_dtype(want)));
  if (!same_shape(got, want)) {
    char *g = shape_string(got), *w = shape_string(want);
    char *msg = g_strdup_printf("%s: shape %s, TensorFlow's %s", what, g, w);
    g_free(g);
    g_free(w);
    return msg;
  }
  if (shapes_only) return NULL;
  weft_dtype_t dt = weft_tensor_dtype(got);
  int64_t n = weft_tensor_num_elements(got);
  if (dt == WEFT_DT_STRING) {
    const weft_string_t *g = weft_tensor_data(got), *w = weft_tensor_data(want);
    for (int64_t i = 0; i < n; i++)
      if (g[i].len != w[i].len || memcmp(g[i].data, w[i].data, g[i].len) != 0)
        return g_strdup_printf("%s: element %lld is '%.*s', TensorFlow's '%.*s'", what,
                               (long long)i, (int)MIN(g[i].len, 64), g[i].data,
                               (int)MIN(w[i].len, 64), w[i].data);
    return NULL;
  }
  if (dt == WEFT_DT_INT64 || dt == WEFT_DT_UINT64) {
    const int64_t *g = weft_tensor_data(got), *w = weft_tensor_data(want);
    bool u = dt == WEFT_DT_UINT64;
    for (int64_t i = 0; i < n; i++)
      if (g[i] != w[i] && !lossy_saved_match(g[i], w[i], u))
        return g_strdup_printf("%s: element %lld is %lld, TensorFlow's %lld", what, (long long)i,
                               (long long)g[i], (long long)w[i]);
    return NULL;
  }
  /* Per element, numpy's allclose (atol + rtol * |want|), plus stol * the largest finite |want|
   * of the tensor: an element that is small only because large terms cancelled (a deep float32
   * convolution stack whose outputs reach 1e4 has elements near 1) carries the rounding error of
   * those terms, a few ulps of the tensor's scale, which TensorFlow's own answer has too and which
   * no summation order removes; stol is about 8 float32 ulps (8 float16 ulps for the loose types). */
  bool loose = dt == WEFT_DT_HALF || dt == WEFT_DT_BFLOAT16;
  double rtol = loose ? 1e-2 : 1e-4, atol = loose ? 1e-2 : 1e-5, stol = loose ? 1e-2 : 1e-6;
  bool exact = !is_float_type(dt);
  double scale = 0;
  if (!exact)
    for (int64_t i = 0; i < n; i++) {
      double w = fabs(element_double(want, i));
      if (isfinite(w) && w > scale) scale = w;
    }
  int64_t worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < n; i++) {
    double g = element_double(got, i), w = element_double(want, i);
    double excess;
    if (isnan(w) || isnan(g)) {
      excess = isnan(w) && isnan(g) ? 0 : INFINITY;
    } else if (isinf(w) || isinf(g) || exact) {
      excess = g == w ? 0 : INFINITY;
    } else {
      excess = fabs(g - w) - (atol + rtol * fabs(w) + stol * scale);
    }
    if (excess > 0 && (worst < 0 || excess > worst_excess)) {
      worst = i;
      worst_excess = excess;
    }
  }
  if (worst < 0) return NULL;
  return g_strdup_printf("%s: element %lld is %.9g, TensorFlow's %.9g (rtol %g, atol %g, "
                         "%g of the largest |value| %.9g)",
                         what, (long long)worst, element_double(got, worst),
                         element_double(want, worst), rtol, atol, stol, scale);
}

/* ---------------------------------------------------------------------------------------------
 * Running one graph */

/* Ops whose outputs depend on TensorFlow's random stream. */
static bool draws_random_numbers(const char *op) {
  static const char *const kOps[] = {"RandomUniform", "RandomUniformInt", "RandomStandardNormal",
                                     "TruncatedNormal", "Multinomial", "RandomShuffle",
                                     "RandomGamma", "RandomPoisson", "RandomPoissonV2",
                                     "ParameterizedTruncatedNormal", "RandomCrop",
                                     "UniformCandidateSampler", "LogUniformCandidateSampler"};
  for (size_t i = 0; i < G_N_ELEMENTS(kOps); i++)
    if (strcmp(op, kOps[i]) == 0) return true;
  return false;
}

/* Ops whose seeded outputs are TensorFlow's numbers bit for bit (GuardedPhiloxRandom's stream). */
static bool random_is_exact(const char *op) {
  static const char *const kOps[] = {"RandomUniform",   "RandomUniformInt", "RandomStandardNormal",
                                     "TruncatedNormal", "RandomShuffle",    "RandomGamma",
                                     "RandomPoisson",   "RandomPoissonV2"};
  for (size_t i = 0; i < G_N_ELEMENTS(kOps); i++)
    if (strcmp(op, kOps[i]) == 0) return true;
  return false;
}

/* A minimal protobuf reader for the GraphDef's nodes: name, op and the seed / seed2 attrs. */
typedef struct {
  const uint8_t *p, *end;
} pb_t;

static bool pb_varint(pb_t *b, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
    uint8_t c = *b->p++;
    *v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

/* The next field: its number, wire type and (length-delimited) payload; false at the end or on
 * malformed input. Varint values land in *v. */
static bool pb_field(pb_t *b, uint32_t *field, uint32_t *wire, pb_t *sub, uint64_t *v) {
  uint64_t tag;
  if (b->p >= b->end || !pb_varint(b, &tag)) return false;
  *field = (uint32_t)(tag >> 3);
  *wire = (uint32_t)(tag & 7);
  switch (*wire) {
    case 0: return pb_varint(b, v);
    case 1: if (b->end - b->p < 8) return false; b->p += 8; return true;
    case 5: if (b->end - b->p < 4) return false; b->p += 4; return true;
    case 2: {
      uint64_t len;
      if (!pb_varint(b, &len) || len > (uint64_t)(b->end - b->p)) return false;
      sub->p = b->p;
      sub->end = b->p + len;
      b->p += len;
      return true;
    }
    default: return false;
  }
}

/* NodeDef's attr map entry: key (1) and AttrValue (2), whose i is field 3. */
static void pb_seed_attr(pb_t entry, int64_t *seed, int64_t *seed2) {
  uint32_t f, w;
  pb_t sub = {0}, key = {0}, val = {0};
  uint64_t v;
  bool have_val = false;
  while (pb_field(&entry, &f, &w, &sub, &v)) {
    if (f == 1 && w == 2) key = sub;
    if (f == 2 && w == 2) {
      val = sub;
      have_val = true;
    }
  }
  if (!have_val || key.p == NULL) return;
  size_t kl = (size_t)(key.end - key.p);
  int64_t *dst = kl == 4 && memcmp(key.p, "seed", 4) == 0    ? seed
                 : kl == 5 && memcmp(key.p, "seed2", 5) == 0 ? seed2
                                                              : NULL;
  if (dst == NULL) return;
  while (pb_field(&val, &f, &w, &sub, &v))
    if (f == 3 && w == 0) *dst = (int64_t)v;
}

/* Whether the GraphDef at path has a random op whose numbers Weft cannot reproduce: an op
 * outside random_is_exact, or one with seed and seed2 both 0 (seeded from the system). Nodes in
 * the library's functions are not looked at (the frozen graphs have none with random ops). */
static bool graphdef_has_inexact_random(const char *path) {
  gchar *bytes = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &bytes, &len, NULL)) return true;
  pb_t g = {(const uint8_t *)bytes, (const uint8_t *)bytes + len};
  uint32_t f, w;
  pb_t node = {0};
  uint64_t v;
  bool inexact = false;
  while (!inexact && pb_field(&g, &f, &w, &node, &v)) {
    if (f != 1 || w != 2) continue;
    char op[64] = "";
    int64_t seed = 0, seed2 = 0;
    pb_t sub = {0};
    while (pb_field(&node, &f, &w, &sub, &v)) {
      if (f == 2 && w == 2) {
        size_t n = (size_t)(sub.end - sub.p);
        if (n >= sizeof op) n = sizeof op - 1;
        memcpy(op, sub.p, n);
        op[n] = '\0';
      } else if (f == 5 && w == 2) {
        pb_seed_attr(sub, &seed, &seed2);
      }
    }
    if (draws_random_numbers(op) && (!random_is_exact(op) || (seed == 0 && seed2 == 0)))
      inexact = true;
  }
  g_free(bytes);
  return inexact;
}

/* A missing list of one (takes what). */
static char **one_missing(char *what) {
  char **v = g_new0(char *, 2);
  v[0] = what;
  return v;
}

/* Sorts a failed import or run into unsupported (with what is missing) or error. */
static void classify_status(tg_record_t *r, const weft_status_t *st) {
  const char *msg = weft_status_message(st);
  const char *p;
  r->detail = g_strdup(msg);
  if ((p = strstr(msg, "Op type not registered '")) != NULL) {
    p += strlen("Op type not registered '");
    r->result = TG_UNSUPPORTED;
    /* The importer names every op type the graph lacks: "...'X' in binary (node 'Y'); also not
     * registered: 'Z' (node 'W'), ..." (and, past its cap, " and N more", not counted). */
    GPtrArray *all = g_ptr_array_new();
    g_ptr_array_add(all, g_strndup(p, strcspn(p, "'")));
    const char *q = strstr(p, "; also not registered: ");
    if (q != NULL) q += strlen("; also not registered: ");
    while (q != NULL && *q == '\'') {
      g_ptr_array_add(all, g_strndup(q + 1, strcspn(q + 1, "'")));
      q = strstr(q + 1, "'), ");
      if (q != NULL) q += strlen("'), ");
    }
    g_ptr_array_add(all, NULL);
    r->missing = (char **)g_ptr_array_free(all, FALSE);
  } else if ((p = strstr(msg, "no supported kernel for ")) != NULL) {
    /* "... is available (op NAME, dtype T)" or "(op NAME)": the op and dtype nothing runs. */
    const char *op = strstr(p, "is available (op ");
    r->result = TG_UNSUPPORTED;
    if (op != NULL) {
      op += strlen("is available (op ");
      char *what = g_strndup(op, strcspn(op, ")"));
      char *comma = strstr(what, ", dtype ");
      if (comma != NULL) {
        *comma = '\0';
        r->missing = one_missing(g_strdup_printf("%s (%s)", what, comma + strlen(", dtype ")));
        g_free(what);
      } else {
        r->missing = one_missing(what);
      }
    } else {
      r->missing = one_missing(g_strndup(p, strcspn(p, "(")));
    }
  } else if ((p = strstr(msg, "No kernel for node '")) != NULL && (p = strstr(p, "(op ")) != NULL) {
    p += strlen("(op ");
    r->result = TG_UNSUPPORTED;
    r->missing = one_missing(g_strndup(p, strcspn(p, ")")));
  } else {
    r->result = TG_ERROR;
  }
}

static void run_graph(const char *dir, tg_record_t *r) {
  weft_graph_t *graph = weft_graph_new();
  GPtrArray *feeds = g_ptr_array_new_with_free_func(tg_file_free);
  GPtrArray *outputs = g_ptr_array_new_with_free_func(tg_file_free);
  GPtrArray *feed_tensors = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  weft_tensor_t **got = NULL;
  weft_session_t *session = NULL;
  char *model = g_build_filename(dir, "frozen_model.pb", NULL);
  weft_status_t *st = weft_graph_import_graphdef_file(graph, model, NULL);
  g_free(model);
  if (st) {
    classify_status(r, st);
    goto out;
  }
  bool random = false;
  for (int i = 0; i < weft_graph_num_nodes(graph); i++)
    if (draws_random_numbers(weft_node_op(weft_graph_node_at(graph, i)))) random = true;
  if (random) {
    char *pb = g_build_filename(dir, "frozen_model.pb", NULL);
    r->shapes_only = graphdef_has_inexact_random(pb);
    g_free(pb);
  }
  collect_files(dir, "", graph, feeds, outputs);
  if (outputs->len == 0) {
    r->result = TG_ERROR;
    r->detail = g_strdup("no NAME.prediction.csv file: nothing to compare");
    goto out;
  }
  const char **feed_names = g_new0(const char *, feeds->len + 1);
  for (guint i = 0; i < feeds->len && r->detail == NULL; i++) {
    const tg_file_t *f = feeds->pdata[i];
    weft_node_t *node = weft_graph_node(graph, f->node);
    if (node == NULL || weft_node_num_outputs(node) < 1) {
      r->result = TG_ERROR;
      r->detail = g_strdup_printf("feed file %s names no node of the graph", f->csv_path);
      break;
    }
    char *why = NULL;
    weft_tensor_t *t = read_saved(f, weft_node_output_dtype(node, 0), &why);
    if (t == NULL) {
      r->result = TG_ERROR;
      r->detail = g_strdup_printf("%s: %s", f->csv_path, why);
      g_free(why);
      break;
    }
    g_ptr_array_add(feed_tensors, t);
    feed_names[i] = f->node;
  }
  if (r->detail != NULL) {
    g_free(feed_names);
    goto out;
  }
  const char **fetch_names = g_new0(const char *, outputs->len + 1);
  for (guint i = 0; i < outputs->len; i++) {
    const tg_file_t *f = outputs->pdata[i];
    char *name = g_strdup_printf("%s:%d", f->node, f->index);
    g_ptr_array_add(names, name);
    fetch_names[i] = name;
  }
  got = g_new0(weft_tensor_t *, outputs->len);
  session = weft_session_new(graph, NULL, &st);
  if (st == NULL)
    st = weft_session_run(session, feed_names, (weft_tensor_t *const *)feed_tensors->pdata,
                          (int)feed_tensors->len, fetch_names, got, (int)outputs->len, NULL, 0);
  g_free(feed_names);
  g_free(fetch_names);
  if (st) {
    classify_status(r, st);
    goto out;
  }
  r->n_outputs = (int)outputs->len;
  r->result = TG_PASSED;
  for (guint i = 0; i < outputs->len && r->result == TG_PASSED; i++) {
    const tg_file_t *f = outputs->pdata[i];
    weft_node_t *node = weft_graph_node(graph, f->node);
    weft_dtype_t declared = node ? weft_node_output_dtype(node, f->index) : WEFT_DT_INVALID;
    if (declared == WEFT_DT_INVALID) declared = weft_tensor_dtype(got[i]);
    /* A ref output (a variable's) holds values of its base type. */
    if ((int)declared >= WEFT_DT_REF_OFFSET) declared = (weft_dtype_t)(declared - WEFT_DT_REF_OFFSET);
    char *why = NULL;
    weft_tensor_t *want = read_saved(f, declared, &why);
    if (want == NULL) {
      r->result = TG_ERROR;
      r->detail = g_strdup_printf("%s: %s", f->csv_path, why);
      g_free(why);
      break;
    }
    char *diff = compare(names->pdata[i], got[i], want, r->shapes_only);
    weft_tensor_unref(want);
    if (diff) {
      r->result = TG_FAILED;
      r->detail = diff;
    }
  }

out:
  weft_status_free(st);
  for (guint i = 0; got && i < outputs->len; i++) weft_tensor_unref(got[i]);
  g_free(got);
  weft_session_free(session);
  weft_graph_free(graph);
  g_ptr_array_free(feeds, TRUE);
  g_ptr_array_free(outputs, TRUE);
  g_ptr_array_free(feed_tensors, TRUE);
  g_ptr_array_free(names, TRUE);
}

/* ---------------------------------------------------------------------------------------------
 * Reporting */

static void json_string(GString *s, const char *v) {
  g_string_append_c(s, '"');
  for (const unsigned char *p = (const unsigned char *)v; p && *p; p++) {
    if (*p == '"' || *p == '\\') g_string_append_printf(s, "\\%c", *p);
    else if (*p < 0x20) g_string_append_printf(s, "\\u%04x", *p);
    else g_string_append_c(s, (char)*p);
  }
  g_string_append_c(s, '"');
}

static bool write_json(const char *path, GPtrArray *records, GError **error) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < records->len; i++) {
    const tg_record_t *r = records->pdata[i];
    g_string_append(s, "{\"graph\": ");
    json_string(s, r->graph);
    g_string_append(s, ", \"family\": ");
    json_string(s, r->family);
    g_string_append_printf(s, ", \"result\": \"%s\", \"shapes_only\": %s, \"outputs\": %d",
                           kResultNames[r->result], r->shapes_only ? "true" : "false",
                           r->n_outputs);
    if (r->missing) {
      char *joined = g_strjoinv(", ", r->missing);
      g_string_append(s, ", \"missing\": ");
      json_string(s, joined);
      g_free(joined);
    }
    if (r->detail) {
      g_string_append(s, ", \"detail\": ");
      json_string(s, r->detail);
    }
    g_string_append(s, "}\n");
  }
  bool ok = g_file_set_contents(path, s->str, (gssize)s->len, error);
  g_string_free(s, TRUE);
  return ok;
}

typedef struct {
  int counts[TG_N_RESULTS];
} tg_family_t;

static gint compare_counts_desc(gconstpointer a, gconstpointer b, gpointer table) {
  int ca = GPOINTER_TO_INT(g_hash_table_lookup(table, *(char *const *)a));
  int cb = GPOINTER_TO_INT(g_hash_table_lookup(table, *(char *const *)b));
  if (ca != cb) return cb - ca;
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_report(GPtrArray *records, bool verbose, int *totals) {
  GHashTable *families = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  GPtrArray *family_order = g_ptr_array_new();
  GHashTable *missing = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < records->len; i++) {
    const tg_record_t *r = records->pdata[i];
    tg_family_t *f = g_hash_table_lookup(families, r->family);
    if (f == NULL) {
      f = g_new0(tg_family_t, 1);
      g_hash_table_insert(families, r->family, f);
      g_ptr_array_add(family_order, r->family);
    }
    f->counts[r->result]++;
    totals[r->result]++;
    /* Each op a graph lacks counts it as blocked. */
    for (char **m = r->missing; m != NULL && *m != NULL; m++) {
      int n = GPOINTER_TO_INT(g_hash_table_lookup(missing, *m));
      g_hash_table_replace(missing, g_strdup(*m), GINT_TO_POINTER(n + 1));
    }
    if (verbose || r->result == TG_FAILED || r->result == TG_ERROR)
      printf("%-11s %s%s%s%s\n", kResultNames[r->result], r->graph, r->detail ? ": " : "",
             r->detail ? r->detail : "", r->shapes_only ? " (shapes and dtypes only)" : "");
  }
  printf("\n%-40s %7s %7s %12s %6s\n", "family", "passed", "failed", "unsupported", "error");
  for (guint i = 0; i < family_order->len; i++) {
    const tg_family_t *f = g_hash_table_lookup(families, family_order->pdata[i]);
    printf("%-40s %7d %7d %12d %6d\n", (const char *)family_order->pdata[i], f->counts[TG_PASSED],
           f->counts[TG_FAILED], f->counts[TG_UNSUPPORTED], f->counts[TG_ERROR]);
  }
  if (g_hash_table_size(missing) > 0) {
    GPtrArray *keys = g_ptr_array_new();
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, missing);
    while (g_hash_table_iter_next(&it, &key, NULL)) g_ptr_array_add(keys, key);
    g_ptr_array_sort_with_data(keys, compare_counts_desc, missing);
    printf("\nmissing (graphs blocked):");
    for (guint i = 0; i < keys->len; i++)
      printf("%s %s (%d)", i ? "," : "", (const char *)keys->pdata[i],
             GPOINTER_TO_INT(g_hash_table_lookup(missing, keys->pdata[i])));
    printf("\n");
    g_ptr_array_free(keys, TRUE);
  }
  g_ptr_array_free(family_order, TRUE);
  g_hash_table_destroy(families);
  g_hash_table_destroy(missing);
}

/* The graphs listed (one per line, '#' comments) in the expect-passing file. */
static GHashTable *read_expected(const char *path, GError **error) {
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error)) return NULL;
  GHashTable *set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  char **lines = g_strsplit(text, "\n", -1);
  for (char **l = lines; *l; l++) {
    g_strstrip(*l);
    if (**l && **l != '#') g_hash_table_add(set, g_strdup(*l));
  }
  g_strfreev(lines);
  g_free(text);
  return set;
}

int cf_tf_graphs_run(const cf_tf_graphs_options_t *o, GError **error) {
  if (!g_file_test(o->dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "no such folder");
    return -1;
  }
  GHashTable *expected = NULL;
  if (o->expect_passing && (expected = read_expected(o->expect_passing, error)) == NULL) return -1;
  GPtrArray *dirs = g_ptr_array_new_with_free_func(g_free);
  find_graphs(o->dir, dirs);
  g_ptr_array_sort(dirs, compare_strings);
  GPtrArray *records = g_ptr_array_new_with_free_func(record_free);
  size_t root_len = strlen(o->dir);
  while (root_len > 1 && o->dir[root_len - 1] == '/') root_len--;
  for (guint i = 0; i < dirs->len; i++) {
    const char *dir = dirs->pdata[i];
    const char *rel = dir + root_len;
    while (*rel == '/') rel++;
    if (*rel == '\0') rel = ".";
    bool selected = o->case_filter == NULL;
    for (guint k = 0; o->case_filter && k < o->case_filter->len && !selected; k++)
      selected = g_pattern_match_simple(o->case_filter->pdata[k], rel);
    if (!selected) continue;
    tg_record_t *r = g_new0(tg_record_t, 1);
    r->graph = g_strdup(rel);
    r->family = g_strndup(rel, strcspn(rel, "/"));
    if (o->verbose) fprintf(stderr, "weft-conformance: %s\n", rel);
    run_graph(dir, r);
    g_ptr_array_add(records, r);
  }
  int totals[TG_N_RESULTS] = {0};
  print_report(records, o->verbose, totals);
  int regressions = 0;
  if (expected) {
    GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < records->len; i++) {
      const tg_record_t *r = records->pdata[i];
      g_hash_table_add(seen, r->graph);
      if (r->result != TG_PASSED && g_hash_table_contains(expected, r->graph)) {
        printf("regression  %s: passed before (listed in %s), now %s\n", r->graph,
               o->expect_passing, kResultNames[r->result]);
        regressions++;
      }
    }
    /* A listed graph that is not in the corpus any more is a regression too, unless the run was
     * narrowed with --case. */
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, expected);
    while (o->case_filter == NULL && g_hash_table_iter_next(&it, &key, NULL))
      if (!g_hash_table_contains(seen, key)) {
        printf("regression  %s: passed before (listed in %s), now not found\n",
               (const char *)key, o->expect_passing);
        regressions++;
      }
    g_hash_table_destroy(seen);
    g_hash_table_destroy(expected);
  }
  if (o->json && !write_json(o->json, records, error)) {
    g_ptr_array_free(records, TRUE);
    g_ptr_array_free(dirs, TRUE);
    return -1;
  }
  if (o->write_passing) {
    GString *s = g_string_new(
        "# Graphs of the TensorFlow graph corpus that Weft runs to TensorFlow's answers; the\n"
        "# test command fails when one of them stops passing (weft-conformance --tf-graphs\n"
        "# DIR --write-passing FILE rewrites this list).\n");
    for (guint i = 0; i < records->len; i++) {
      const tg_record_t *r = records->pdata[i];
      if (r->result == TG_PASSED) g_string_append_printf(s, "%s\n", r->graph);
    }
    bool ok = g_file_set_contents(o->write_passing, s->str, (gssize)s->len, error);
    g_string_free(s, TRUE);
    if (!ok) {
      g_ptr_array_free(records, TRUE);
      g_ptr_array_free(dirs, TRUE);
      return -1;
    }
  }
  printf("\ntf graphs: %u graphs: %d passed, %d failed, %d unsupported, %d errors", records->len,
         totals[TG_PASSED], totals[TG_FAILED], totals[TG_UNSUPPORTED], totals[TG_ERROR]);
  if (expected || o->expect_passing) printf(", %d regressions", regressions);
  printf("\n");
  int ran = (int)records->len;
  g_ptr_array_free(records, TRUE);
  g_ptr_array_free(dirs, TRUE);
  if (ran == 0) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                o->case_filter ? "--case matches no graph (a folder holding frozen_model.pb)"
                               : "no graph (a folder holding frozen_model.pb) below it");
    return -1;
  }
  return totals[TG_FAILED] + regressions;
}
