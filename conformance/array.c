/* array.c: weft-conformance's value arrays (a tensor's values in double precision, or strings),
 * their conversion to and from Weft tensors, rounding to a dtype's storage, the deterministic
 * input generators, tolerances and the comparison of a result with its reference (allclose,
 * NMSE, NaN/Inf positions, dtype and shape). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/base_internal.h"
#include "conformance.h"

/* ---------------------------------------------------------------------------------------------
 * dtypes */

bool cf_dtype_is_float(weft_dtype_t dtype) {
  return dtype == WEFT_DT_FLOAT || dtype == WEFT_DT_DOUBLE || dtype == WEFT_DT_HALF ||
         dtype == WEFT_DT_BFLOAT16;
}

bool cf_dtype_is_int(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_INT8:
    case WEFT_DT_INT16:
    case WEFT_DT_INT32:
    case WEFT_DT_INT64:
    case WEFT_DT_UINT8:
    case WEFT_DT_UINT16:
    case WEFT_DT_UINT32:
    case WEFT_DT_UINT64:
      return true;
    default:
      return false;
  }
}

bool cf_dtype_is_signed(weft_dtype_t dtype) {
  return cf_dtype_is_float(dtype) || dtype == WEFT_DT_INT8 || dtype == WEFT_DT_INT16 ||
         dtype == WEFT_DT_INT32 || dtype == WEFT_DT_INT64;
}

double cf_dtype_min(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return -FLT_MAX;
    case WEFT_DT_DOUBLE: return -DBL_MAX;
    case WEFT_DT_HALF: return -65504.0;
    case WEFT_DT_BFLOAT16: return -3.3895313892515355e38;
    case WEFT_DT_INT8: return -128.0;
    case WEFT_DT_INT16: return -32768.0;
    case WEFT_DT_INT32: return -2147483648.0;
    case WEFT_DT_INT64: return -9007199254740992.0; /* -2^53: exact as a double */
    default: return 0.0;
  }
}

double cf_dtype_max(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return FLT_MAX;
    case WEFT_DT_DOUBLE: return DBL_MAX;
    case WEFT_DT_HALF: return 65504.0;
    case WEFT_DT_BFLOAT16: return 3.3895313892515355e38;
    case WEFT_DT_INT8: return 127.0;
    case WEFT_DT_INT16: return 32767.0;
    case WEFT_DT_INT32: return 2147483647.0;
    case WEFT_DT_INT64: return 9007199254740992.0;
    case WEFT_DT_UINT8: return 255.0;
    case WEFT_DT_UINT16: return 65535.0;
    case WEFT_DT_UINT32: return 4294967295.0;
    case WEFT_DT_UINT64: return 9007199254740992.0;
    case WEFT_DT_BOOL: return 1.0;
    default: return 0.0;
  }
}

/* Wraps an integer value modulo 2^bits into the signed or unsigned range. */
static double wrap_int(double v, int bits, bool is_signed) {
  if (!isfinite(v)) return 0.0;
  v = trunc(v);
  if (bits == 64) {
    /* Only values a double holds exactly are ever produced for 64-bit cases. */
    if (!is_signed && v < 0) v += 18446744073709551616.0;
    return v;
  }
  double m = ldexp(1.0, bits);
  double r = fmod(v, m);
  if (r < 0) r += m;
  if (is_signed && r >= m / 2) r -= m;
  return r;
}

double cf_round_to_dtype(weft_dtype_t dtype, double value) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return (double)(float)value;
    case WEFT_DT_DOUBLE: return value;
    case WEFT_DT_HALF: return (double)weft__half_to_float(weft__float_to_half((float)value));
    case WEFT_DT_BFLOAT16:
      return (double)weft__bfloat16_to_float(weft__float_to_bfloat16((float)value));
    case WEFT_DT_INT8: return wrap_int(value, 8, true);
    case WEFT_DT_INT16: return wrap_int(value, 16, true);
    case WEFT_DT_INT32: return wrap_int(value, 32, true);
    case WEFT_DT_INT64: return wrap_int(value, 64, true);
    case WEFT_DT_UINT8: return wrap_int(value, 8, false);
    case WEFT_DT_UINT16: return wrap_int(value, 16, false);
    case WEFT_DT_UINT32: return wrap_int(value, 32, false);
    case WEFT_DT_UINT64: return wrap_int(value, 64, false);
    case WEFT_DT_BOOL: return value != 0.0 ? 1.0 : 0.0;
    default: return value;
  }
}

void cf_array_round(cf_array_t *a) {
  if (a->v == NULL) return;
  for (int64_t i = 0; i < a->n; i++) a->v[i] = cf_round_to_dtype(a->dtype, a->v[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Arrays */

int64_t cf_num_elements(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  return n;
}

void cf_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

char *cf_shape_str(int rank, const int64_t *dims) {
  if (rank < 0) return g_strdup("<unknown>");
  GString *s = g_string_new("[");
  for (int d = 0; d < rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? "," : "", dims[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

cf_array_t *cf_array_new(weft_dtype_t dtype, int rank, const int64_t *dims) {
  cf_array_t *a = g_new0(cf_array_t, 1);
  a->dtype = dtype;
  a->rank = rank;
  for (int d = 0; d < rank; d++) a->dims[d] = dims[d];
  a->n = cf_num_elements(rank, dims);
  if (dtype == WEFT_DT_STRING) {
    a->s = g_new0(GString *, a->n > 0 ? a->n : 1);
    for (int64_t i = 0; i < a->n; i++) a->s[i] = g_string_new(NULL);
  } else {
    a->v = g_new0(double, a->n > 0 ? a->n : 1);
  }
  return a;
}

cf_array_t *cf_array_new_like(const cf_array_t *like, weft_dtype_t dtype) {
  return cf_array_new(dtype, like->rank, like->dims);
}

cf_array_t *cf_array_scalar(weft_dtype_t dtype, double value) {
  cf_array_t *a = cf_array_new(dtype, 0, NULL);
  if (a->v) a->v[0] = cf_round_to_dtype(dtype, value);
  return a;
}

cf_array_t *cf_array_vec(weft_dtype_t dtype, int64_t n, const double *values) {
  cf_array_t *a = cf_array_new(dtype, 1, &n);
  for (int64_t i = 0; i < n && a->v; i++) a->v[i] = cf_round_to_dtype(dtype, values[i]);
  return a;
}

cf_array_t *cf_array_ints(weft_dtype_t dtype, int64_t n, const int64_t *values) {
  cf_array_t *a = cf_array_new(dtype, 1, &n);
  for (int64_t i = 0; i < n; i++) a->v[i] = (double)values[i];
  return a;
}

cf_array_t *cf_array_copy(const cf_array_t *a) {
  cf_array_t *b = cf_array_new(a->dtype, a->rank, a->dims);
  if (a->v) memcpy(b->v, a->v, sizeof(double) * (size_t)a->n);
  for (int64_t i = 0; a->s && i < a->n; i++)
    g_string_append_len(b->s[i], a->s[i]->str, (gssize)a->s[i]->len);
  return b;
}

cf_array_t *cf_array_reshape(const cf_array_t *a, int rank, const int64_t *dims) {
  cf_array_t *b = cf_array_copy(a);
  g_assert(cf_num_elements(rank, dims) == a->n);
  b->rank = rank;
  for (int d = 0; d < rank; d++) b->dims[d] = dims[d];
  return b;
}

void cf_array_free(cf_array_t *a) {
  if (a == NULL) return;
  for (int64_t i = 0; a->s && i < a->n; i++) g_string_free(a->s[i], TRUE);
  g_free(a->s);
  g_free(a->v);
  g_free(a);
}

weft_tensor_t *cf_array_to_tensor(const cf_array_t *a, weft_status_t **status) {
  if (status) *status = NULL;
  weft_tensor_t *t = weft_tensor_new(a->dtype, a->rank, a->dims);
  if (t == NULL) {
    if (status)
      *status = weft_status_new(WEFT_INVALID_ARGUMENT, "cannot make a %s tensor",
                                weft_dtype_name(a->dtype));
    return NULL;
  }
  void *data = weft_tensor_data(t);
  for (int64_t i = 0; i < a->n; i++) {
    double v = a->v ? a->v[i] : 0.0;
    switch (a->dtype) {
      case WEFT_DT_FLOAT: ((float *)data)[i] = (float)v; break;
      case WEFT_DT_DOUBLE: ((double *)data)[i] = v; break;
      case WEFT_DT_HALF: ((uint16_t *)data)[i] = weft__float_to_half((float)v); break;
      case WEFT_DT_BFLOAT16: ((uint16_t *)data)[i] = weft__float_to_bfloat16((float)v); break;
      case WEFT_DT_INT8: ((int8_t *)data)[i] = (int8_t)wrap_int(v, 8, true); break;
      case WEFT_DT_INT16: ((int16_t *)data)[i] = (int16_t)wrap_int(v, 16, true); break;
      case WEFT_DT_INT32: ((int32_t *)data)[i] = (int32_t)wrap_int(v, 32, true); break;
      case WEFT_DT_INT64: ((int64_t *)data)[i] = (int64_t)v; break;
      case WEFT_DT_UINT8: ((uint8_t *)data)[i] = (uint8_t)wrap_int(v, 8, false); break;
      case WEFT_DT_UINT16: ((uint16_t *)data)[i] = (uint16_t)wrap_int(v, 16, false); break;
      case WEFT_DT_UINT32: ((uint32_t *)data)[i] = (uint32_t)wrap_int(v, 32, false); break;
      case WEFT_DT_UINT64: ((uint64_t *)data)[i] = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
        break;
      case WEFT_DT_BOOL: ((uint8_t *)data)[i] = v != 0.0; break;
      case WEFT_DT_STRING: {
        weft_status_t *st = weft_tensor_set_string(t, i, a->s[i]->str, a->s[i]->len);
        if (st) {
          weft_tensor_unref(t);
          if (status) *status = st; else weft_status_free(st);
          return NULL;
        }
        break;
      }
      default:
        weft_tensor_unref(t);
        if (status)
          *status = weft_status_new(WEFT_UNIMPLEMENTED, "conformance arrays do not hold %s",
                                    weft_dtype_name(a->dtype));
        return NULL;
    }
  }
  return t;
}

cf_array_t *cf_array_from_tensor(const weft_tensor_t *t) {
  weft_dtype_t dtype = weft_tensor_dtype(t);
  if (weft_dtype_size(dtype) == 0) return NULL;
  cf_array_t *a = cf_array_new(dtype, weft_tensor_rank(t), weft_tensor_dims(t));
  const void *data = weft_tensor_data(t);
  for (int64_t i = 0; i < a->n; i++) {
    switch (dtype) {
      case WEFT_DT_STRING: {
        const weft_string_t *s = (const weft_string_t *)data + i;
        g_string_append_len(a->s[i], s->data, (gssize)s->len);
        break;
      }
      case WEFT_DT_INT64: a->v[i] = (double)((const int64_t *)data)[i]; break;
      case WEFT_DT_UINT64: a->v[i] = (double)((const uint64_t *)data)[i]; break;
      default: a->v[i] = weft_tensor_get_double(t, i); break;
    }
  }
  return a;
}

/* ---------------------------------------------------------------------------------------------
 * Generators */

static uint64_t fnv1a(uint64_t h, const char *s) {
  for (; s && *s; s++) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h ^ 0xff; /* separates "ab","c" from "a","bc" */
}

void cf_rng_seed(cf_rng_t *rng, const char *a, const char *b, const char *c) {
  uint64_t h = 14695981039346656037ULL;
  h = fnv1a(h, a);
  h = fnv1a(h, b);
  h = fnv1a(h, c);
  rng->state = h;
}

uint64_t cf_rng_next(cf_rng_t *rng) { /* splitmix64 */
  uint64_t z = (rng->state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double cf_rng_uniform(cf_rng_t *rng, double lo, double hi) {
  double u = (double)(cf_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
  return lo + (hi - lo) * u;
}

int64_t cf_rng_int(cf_rng_t *rng, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  uint64_t span = (uint64_t)(hi - lo) + 1;
  return lo + (int64_t)(cf_rng_next(rng) % span);
}

/* The special values of a dtype, in an order that mixes kinds. */
static int special_values(weft_dtype_t dtype, double *out) {
  int n = 0;
  if (cf_dtype_is_float(dtype)) {
    double denorm, tiny;
    switch (dtype) {
      case WEFT_DT_FLOAT: denorm = FLT_TRUE_MIN; tiny = FLT_MIN; break;
      case WEFT_DT_DOUBLE: denorm = DBL_TRUE_MIN; tiny = DBL_MIN; break;
      case WEFT_DT_HALF: denorm = ldexp(1.0, -24); tiny = ldexp(1.0, -14); break;
      default: denorm = ldexp(1.0, -133); tiny = ldexp(1.0, -126); break;
    }
    double big = cf_dtype_max(dtype);
    double vals[] = {NAN,        INFINITY,  -INFINITY, 0.0,     -0.0,      denorm,
                     -denorm,    tiny,      -tiny,     big,     -big,      1.0,
                     -1.0,       0.5,       3 * denorm, big / 3, -big / 7, 1.0 + 1.0 / 1024};
    for (size_t i = 0; i < G_N_ELEMENTS(vals); i++) out[n++] = vals[i];
  } else if (dtype == WEFT_DT_BOOL) {
    out[n++] = 0;
    out[n++] = 1;
  } else {
    out[n++] = 0;
    out[n++] = 1;
    out[n++] = cf_dtype_max(dtype);
    out[n++] = cf_dtype_max(dtype) - 1;
    if (cf_dtype_is_signed(dtype)) {
      out[n++] = -1;
      out[n++] = cf_dtype_min(dtype);
      out[n++] = cf_dtype_min(dtype) + 1;
    } else {
      out[n++] = 2;
    }
  }
  return n;
}

static void default_range(weft_dtype_t dtype, cf_gen_kind_t kind, double *lo, double *hi) {
  if (cf_dtype_is_float(dtype)) {
    *lo = kind == CF_GEN_POSITIVE ? 0.01 : -4.0;
    *hi = 4.0;
  } else if (cf_dtype_is_signed(dtype)) {
    *lo = kind == CF_GEN_POSITIVE ? 1 : -50;
    *hi = 50;
  } else {
    *lo = kind == CF_GEN_POSITIVE ? 1 : 0;
    *hi = 100;
  }
}

cf_array_t *cf_gen_array(cf_rng_t *rng, weft_dtype_t dtype, int rank, const int64_t *dims,
                         cf_gen_t gen) {
  cf_array_t *a = cf_array_new(dtype, rank, dims);
  if (dtype == WEFT_DT_STRING) {
    static const char *const words[] = {"weft", "warp", "loom", "", "shuttle", "heddle",
                                        "reed", "a", "bobbin", "selvedge"};
    for (int64_t i = 0; i < a->n; i++) {
      g_string_assign(a->s[i], words[cf_rng_next(rng) % G_N_ELEMENTS(words)]);
      if (gen.kind == CF_GEN_ARANGE || (cf_rng_next(rng) & 1))
        g_string_append_printf(a->s[i], "%" G_GINT64_FORMAT, i);
    }
    return a;
  }
  double lo = gen.lo, hi = gen.hi;
  if (lo == 0.0 && hi == 0.0) default_range(dtype, gen.kind, &lo, &hi);
  if (lo < cf_dtype_min(dtype)) lo = cf_dtype_min(dtype);
  if (hi > cf_dtype_max(dtype)) hi = cf_dtype_max(dtype);
  bool is_int = !cf_dtype_is_float(dtype);
  double specials[32];
  int n_special = gen.kind == CF_GEN_SPECIAL ? special_values(dtype, specials) : 0;
  int64_t rotate = n_special ? (int64_t)(cf_rng_next(rng) % (uint64_t)n_special) : 0;
  for (int64_t i = 0; i < a->n; i++) {
    double v;
    switch (gen.kind) {
      case CF_GEN_ARANGE:
        v = (double)i;
        if (is_int && dtype != WEFT_DT_BOOL) v = fmod(v, cf_dtype_max(dtype) + 1.0);
        if (dtype == WEFT_DT_HALF && v > 2048) v = fmod(v, 2048.0);
        if (dtype == WEFT_DT_BFLOAT16 && v > 256) v = fmod(v, 256.0);
        break;
      case CF_GEN_BOOL:
        v = (double)(cf_rng_next(rng) & 1);
        break;
      case CF_GEN_SPECIAL:
        if (i < 2 * n_special && i % 2 == 0) {
          v = specials[(i / 2 + rotate) % n_special];
          break;
        }
        /* fallthrough */
      case CF_GEN_UNIFORM:
        if (dtype == WEFT_DT_BOOL)
          v = (double)(cf_rng_next(rng) & 1);
        else if (is_int)
          v = (double)cf_rng_int(rng, (int64_t)ceil(lo), (int64_t)floor(hi));
        else
          v = cf_rng_uniform(rng, lo, hi);
        break;
      case CF_GEN_POSITIVE:
        if (is_int)
          v = (double)cf_rng_int(rng, lo < 1 ? 1 : (int64_t)ceil(lo), (int64_t)floor(hi));
        else
          v = cf_rng_uniform(rng, lo > 0 ? lo : 1e-3, hi);
        break;
      case CF_GEN_NONZERO:
      default:
        if (is_int) {
          v = (double)cf_rng_int(rng, (int64_t)ceil(lo), (int64_t)floor(hi));
          if (v == 0) v = 1;
        } else {
          double mag = cf_rng_uniform(rng, 0.25, hi > 0.25 ? hi : 1.0);
          v = (cf_dtype_is_signed(dtype) && lo < 0 && (cf_rng_next(rng) & 1)) ? -mag : mag;
        }
        break;
    }
    a->v[i] = cf_round_to_dtype(dtype, v);
    if (gen.kind == CF_GEN_NONZERO && a->v[i] == 0) a->v[i] = 1;
  }
  return a;
}

cf_array_t *cf_gen_uniform(cf_rng_t *rng, weft_dtype_t dtype, int rank, const int64_t *dims,
                           double lo, double hi) {
  cf_gen_t g = {CF_GEN_UNIFORM, lo, hi};
  return cf_gen_array(rng, dtype, rank, dims, g);
}

/* ---------------------------------------------------------------------------------------------
 * Tolerances and comparison */

cf_tol_t cf_tol_default(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return (cf_tol_t){1e-5, 1e-6, 1e-9};
    case WEFT_DT_DOUBLE: return (cf_tol_t){1e-12, 1e-14, 1e-22};
    case WEFT_DT_HALF: return (cf_tol_t){2e-3, 1e-4, 1e-5};
    case WEFT_DT_BFLOAT16: return (cf_tol_t){1.6e-2, 1e-3, 1e-3};
    default: return (cf_tol_t){0, 0, 0};
  }
}

cf_tol_t cf_tol_scale(cf_tol_t t, double factor) {
  t.rtol *= factor;
  t.atol *= factor;
  t.max_nmse *= factor * factor;
  return t;
}

static void index_str(const cf_array_t *a, int64_t i, char *buf, size_t len) {
  int64_t strides[WEFT_MAX_RANK];
  cf_strides(a->rank, a->dims, strides);
  GString *s = g_string_new("[");
  for (int d = 0; d < a->rank; d++) {
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? "," : "", i / strides[d]);
    i %= strides[d];
  }
  g_string_append_c(s, ']');
  g_strlcpy(buf, s->str, len);
  g_string_free(s, TRUE);
}

static void fail(cf_compare_t *acc, char *message) {
  if (acc->ok) {
    acc->ok = false;
    acc->message = message;
  } else {
    g_free(message);
  }
}

void cf_compare_arrays(const cf_array_t *got, const cf_array_t *want, cf_tol_t tol,
                       cf_compare_t *acc, const char *what) {
  if (got->dtype != want->dtype) {
    fail(acc, g_strdup_printf("%s: dtype %s, expected %s", what, weft_dtype_name(got->dtype),
                              weft_dtype_name(want->dtype)));
    return;
  }
  bool same_shape = got->rank == want->rank;
  for (int d = 0; same_shape && d < got->rank; d++) same_shape = got->dims[d] == want->dims[d];
  if (!same_shape) {
    char *a = cf_shape_str(got->rank, got->dims), *b = cf_shape_str(want->rank, want->dims);
    fail(acc, g_strdup_printf("%s: shape %s, expected %s", what, a, b));
    g_free(a);
    g_free(b);
    return;
  }
  char where[128];
  if (want->dtype == WEFT_DT_STRING) {
    for (int64_t i = 0; i < want->n; i++) {
      if (got->s[i]->len == want->s[i]->len &&
          memcmp(got->s[i]->str, want->s[i]->str, want->s[i]->len) == 0)
        continue;
      index_str(want, i, where, sizeof where);
      fail(acc, g_strdup_printf("%s%s: got \"%s\", expected \"%s\"", what, where, got->s[i]->str,
                                want->s[i]->str));
      return;
    }
    return;
  }
  /* Scale by the largest finite reference magnitude so that sums of squares cannot overflow. */
  double scale = 0.0;
  for (int64_t i = 0; i < want->n; i++)
    if (isfinite(want->v[i]) && fabs(want->v[i]) > scale) scale = fabs(want->v[i]);
  if (scale == 0.0) scale = 1.0;
  double err2 = 0.0, ref2 = 0.0;
  for (int64_t i = 0; i < want->n; i++) {
    double w = want->v[i], g = got->v[i];
    if (isnan(w) || isinf(w) || !isfinite(g)) {
      bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : false;
      if (!ok) {
        index_str(want, i, where, sizeof where);
        fail(acc, g_strdup_printf("%s%s: got %.9g, expected %.9g (NaN/Inf positions differ)",
                                  what, where, g, w));
      }
      continue;
    }
    double err = fabs(g - w);
    double rel = w != 0.0 ? err / fabs(w) : (err > 0 ? INFINITY : 0.0);
    if (err > acc->max_abs_err) acc->max_abs_err = err;
    if (rel > acc->max_rel_err) acc->max_rel_err = rel;
    err2 += (err / scale) * (err / scale);
    ref2 += (w / scale) * (w / scale);
    if (err > tol.atol + tol.rtol * fabs(w)) {
      index_str(want, i, where, sizeof where);
      fail(acc, g_strdup_printf("%s%s: got %.9g, expected %.9g (abs err %.3g > atol %.3g + "
                                "rtol %.3g * |expected|)",
                                what, where, g, w, err, tol.atol, tol.rtol));
    }
  }
  double nmse = ref2 > 0 ? err2 / ref2 : err2;
  if (nmse > acc->nmse) acc->nmse = nmse;
  if (nmse > tol.max_nmse)
    fail(acc, g_strdup_printf("%s: NMSE %.3g above the limit %.3g", what, nmse, tol.max_nmse));
}
