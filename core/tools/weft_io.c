/* weft_io.c: the `weft run` side of NumPy files. A feed value "@FILE" is read from a file
 * (FILE.npy, FILE.npz or FILE.npz:KEY, anything else JSON text: the way past the kernel's
 * 128 KiB limit on one command-line argument), converted to the dtype the graph wants the way
 * TensorFlow's feed_dict converts a numpy array, and `--output DIR` writes every fetch as
 * DIR/NAME.npy. docs/cli.md, "Feeds from files and fetches to files", is the user's view. */
#include "weft_io.h"

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* One element as read: an integer (sign and magnitude, exact to 64 bits) or a float. */
typedef struct num {
  bool is_float;
  double f;
  bool neg;
  uint64_t mag;
} num_t;

static bool is_numeric(weft_dtype_t t) {
  switch (t) {
    case WEFT_DT_BOOL: case WEFT_DT_INT8: case WEFT_DT_INT16: case WEFT_DT_INT32:
    case WEFT_DT_INT64: case WEFT_DT_UINT8: case WEFT_DT_UINT16: case WEFT_DT_UINT32:
    case WEFT_DT_UINT64: case WEFT_DT_FLOAT: case WEFT_DT_DOUBLE:
      return true;
    default:
      return false;
  }
}

static num_t get_num(const void *data, weft_dtype_t t, int64_t i) {
  num_t v = {0};
  int64_t s = 0;
  switch (t) {
    case WEFT_DT_FLOAT: v.is_float = true, v.f = ((const float *)data)[i]; return v;
    case WEFT_DT_DOUBLE: v.is_float = true, v.f = ((const double *)data)[i]; return v;
    case WEFT_DT_BOOL: v.mag = ((const uint8_t *)data)[i] != 0; return v;
    case WEFT_DT_UINT8: v.mag = ((const uint8_t *)data)[i]; return v;
    case WEFT_DT_UINT16: v.mag = ((const uint16_t *)data)[i]; return v;
    case WEFT_DT_UINT32: v.mag = ((const uint32_t *)data)[i]; return v;
    case WEFT_DT_UINT64: v.mag = ((const uint64_t *)data)[i]; return v;
    case WEFT_DT_INT8: s = ((const int8_t *)data)[i]; break;
    case WEFT_DT_INT16: s = ((const int16_t *)data)[i]; break;
    case WEFT_DT_INT32: s = ((const int32_t *)data)[i]; break;
    default: s = ((const int64_t *)data)[i]; break;
  }
  v.neg = s < 0;
  v.mag = s < 0 ? (uint64_t)(-(s + 1)) + 1 : (uint64_t)s;
  return v;
}

/* Stores v as element i of a `t` array; false when it does not fit exactly (an integer dtype
 * takes only whole numbers in its range, bool only 0 and 1; floats round as numpy's cast does). */
static bool put_num(void *data, weft_dtype_t t, int64_t i, num_t v) {
  if (t == WEFT_DT_FLOAT || t == WEFT_DT_DOUBLE) {
    double d = v.is_float ? v.f : (v.neg ? -(double)v.mag : (double)v.mag);
    if (t == WEFT_DT_FLOAT) ((float *)data)[i] = (float)d;
    else ((double *)data)[i] = d;
    return true;
  }
  if (v.is_float) {
    if (!isfinite(v.f) || v.f != floor(v.f) || fabs(v.f) >= 18446744073709551616.0) return false;
    v.neg = v.f < 0;
    v.mag = (uint64_t)fabs(v.f);
    if (v.mag == 0) v.neg = false;
  }
  uint64_t umax = 0, nmax = 0; /* largest magnitude when positive / negative */
  switch (t) {
    case WEFT_DT_BOOL: umax = 1; break;
    case WEFT_DT_UINT8: umax = UINT8_MAX; break;
    case WEFT_DT_UINT16: umax = UINT16_MAX; break;
    case WEFT_DT_UINT32: umax = UINT32_MAX; break;
    case WEFT_DT_UINT64: umax = UINT64_MAX; break;
    case WEFT_DT_INT8: umax = INT8_MAX, nmax = (uint64_t)INT8_MAX + 1; break;
    case WEFT_DT_INT16: umax = INT16_MAX, nmax = (uint64_t)INT16_MAX + 1; break;
    case WEFT_DT_INT32: umax = INT32_MAX, nmax = (uint64_t)INT32_MAX + 1; break;
    default: umax = INT64_MAX, nmax = (uint64_t)INT64_MAX + 1; break;
  }
  if (v.mag > (v.neg ? nmax : umax)) return false;
  int64_t s = v.neg ? (int64_t)(0 - v.mag) : (int64_t)v.mag;
  switch (t) {
    case WEFT_DT_BOOL: case WEFT_DT_UINT8: ((uint8_t *)data)[i] = (uint8_t)v.mag; break;
    case WEFT_DT_UINT16: ((uint16_t *)data)[i] = (uint16_t)v.mag; break;
    case WEFT_DT_UINT32: ((uint32_t *)data)[i] = (uint32_t)v.mag; break;
    case WEFT_DT_UINT64: ((uint64_t *)data)[i] = v.mag; break;
    case WEFT_DT_INT8: ((int8_t *)data)[i] = (int8_t)s; break;
    case WEFT_DT_INT16: ((int16_t *)data)[i] = (int16_t)s; break;
    case WEFT_DT_INT32: ((int32_t *)data)[i] = (int32_t)s; break;
    default: ((int64_t *)data)[i] = s; break;
  }
  return true;
}

weft_status_t *weft_cli_convert(weft_tensor_t *in, weft_dtype_t want, weft_tensor_t **out) {
  weft_dtype_t have = weft_tensor_dtype(in);
  *out = NULL;
  if (want == WEFT_DT_INVALID || want == have) {
    *out = weft_tensor_ref(in);
    return NULL;
  }
  if (!is_numeric(have) || !is_numeric(want)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "the array is %s and the tensor fed is %s; "
                           "Weft converts only between bool, integer and float32/float64 "
                           "arrays", weft_dtype_name(have), weft_dtype_name(want));
  }
  weft_tensor_t *t = weft_tensor_new(want, weft_tensor_rank(in), weft_tensor_dims(in));
  const void *src = weft_tensor_data(in);
  void *dst = weft_tensor_data(t);
  int64_t n = weft_tensor_num_elements(in);
  for (int64_t i = 0; i < n; i++) {
    num_t v = get_num(src, have, i);
    if (!put_num(dst, want, i, v)) {
      char text[64];
      if (v.is_float) g_ascii_dtostr(text, sizeof text, v.f);
      else g_snprintf(text, sizeof text, "%s%" G_GUINT64_FORMAT, v.neg ? "-" : "", v.mag);
      weft_tensor_unref(t);
      return weft_status_new(WEFT_INVALID_ARGUMENT, "element %lld of the %s array, %s, is not "
                             "a %s value", (long long)i, weft_dtype_name(have), text,
                             weft_dtype_name(want));
    }
  }
  *out = t;
  return NULL;
}

/* "FILE.npz:KEY" -> FILE.npz and KEY; a value without ".npz:" is all path. */
static void split_npz(const char *spec, char **path, char **key) {
  const char *k = g_strrstr(spec, ".npz:");
  if (k != NULL && !g_str_has_suffix(spec, ".npz")) {
    *path = g_strndup(spec, (gsize)(k - spec) + 4);
    *key = g_strdup(k + 5);
  } else {
    *path = g_strdup(spec);
    *key = NULL;
  }
}

weft_status_t *weft_cli_read_feed_file(const char *spec, const char *feed_name,
                                       weft_dtype_t want, weft_tensor_t **out) {
  *out = NULL;
  char *path = NULL, *key = NULL;
  split_npz(spec, &path, &key);
  weft_tensor_t *t = NULL;
  weft_status_t *st = NULL;
  if (g_str_has_suffix(path, ".npy")) {
    st = weft_tensor_read_npy(path, &t);
  } else if (g_str_has_suffix(path, ".npz")) {
    if (key == NULL) {
      /* The array named after the feed, else the archive's only array. */
      st = weft_tensor_read_npz(path, feed_name, &t);
      if (st && weft_status_code(st) == WEFT_NOT_FOUND) {
        weft_status_t *only = weft_tensor_read_npz(path, NULL, &t);
        if (only == NULL) {
          weft_status_free(st);
          st = NULL;
        } else {
          weft_status_free(only);
        }
      }
    } else {
      st = weft_tensor_read_npz(path, key, &t);
    }
  } else {
    /* JSON text, as a --feed value would be, but from a file of any size. */
    gchar *text = NULL;
    GError *err = NULL;
    if (!g_file_get_contents(path, &text, NULL, &err)) {
      st = weft_status_new(g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT)
                               ? WEFT_NOT_FOUND : WEFT_UNAVAILABLE,
                           "cannot read %s: %s", path, err->message);
      g_error_free(err);
    } else {
      t = weft_tensor_from_json(text, want, &st);
      if (st) st = weft_status_prefix(st, "%s", path);
      g_free(text);
    }
  }
  if (!st) {
    st = weft_cli_convert(t, want, out);
    if (st) st = weft_status_prefix(st, "%s", path);
  }
  weft_tensor_unref(t);
  g_free(path);
  g_free(key);
  return st;
}

char *weft_cli_output_file_name(const char *tensor_name) {
  GString *s = g_string_new("");
  for (const char *p = tensor_name; *p; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) || *p == '.' || *p == '-' || *p == '_' ? *p : '_');
  /* With ".npy" appended no name can be "." or ".." or hold a '/': every file stays in DIR. */
  if (s->len == 0) g_string_append_c(s, '_');
  g_string_append(s, ".npy");
  return g_string_free(s, FALSE);
}

weft_status_t *weft_cli_write_outputs(const char *dir, char *const *names,
                                      weft_tensor_t *const *values, int n) {
  if (g_mkdir_with_parents(dir, 0777) != 0) {
    return weft_status_new(WEFT_UNAVAILABLE, "--output %s: cannot create the folder: %s", dir,
                           g_strerror(errno));
  }
  /* Two names that sanitise to one file would overwrite each other: refuse before writing. */
  GHashTable *files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  weft_status_t *st = NULL;
  for (int k = 0; k < n && !st; k++) {
    char *file = weft_cli_output_file_name(names[k]);
    const char *other = g_hash_table_lookup(files, file);
    if (other != NULL && strcmp(other, names[k]) != 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "--output %s: fetches '%s' and '%s' would "
                           "both be written to %s", dir, other, names[k], file);
      g_free(file);
    } else {
      g_hash_table_replace(files, file, (gpointer)names[k]);
    }
  }
  for (int k = 0; k < n && !st; k++) {
    char *file = weft_cli_output_file_name(names[k]);
    char *path = g_build_filename(dir, file, NULL);
    st = weft_tensor_write_npy(values[k], path);
    if (st) st = weft_status_prefix(st, "--output: fetch '%s'", names[k]);
    g_free(path);
    g_free(file);
  }
  g_hash_table_destroy(files);
  return st;
}

/* "x" and "x:0" name one tensor. */
static bool same_tensor(const char *a, const char *b) {
  if (strcmp(a, b) == 0) return true;
  size_t la = strlen(a), lb = strlen(b);
  if (la + 2 == lb && strncmp(a, b, la) == 0 && strcmp(b + la, ":0") == 0) return true;
  if (lb + 2 == la && strncmp(a, b, lb) == 0 && strcmp(a + lb, ":0") == 0) return true;
  return false;
}

char *weft_cli_unfed_inputs(const weft_saved_model_t *model, const char *signature,
                            const char *const *feed_names, int n_feeds) {
  int n_in = 0;
  weft_status_t *st = weft_saved_model_signature(model, signature, &n_in, NULL, NULL);
  if (st) {
    weft_status_free(st);
    return NULL;
  }
  GString *s = g_string_new("");
  for (int i = 0; i < n_in; i++) {
    weft_saved_model_tensor_info_t info;
    st = weft_saved_model_signature_input(model, signature, i, &info);
    if (st) {
      weft_status_free(st);
      continue;
    }
    bool fed = false;
    for (int k = 0; k < n_feeds && !fed; k++)
      fed = strcmp(feed_names[k], info.key) == 0 || same_tensor(feed_names[k], info.name);
    if (fed) continue;
    GString *shape = g_string_new("");
    if (info.rank < 0) {
      g_string_append(shape, "unknown shape");
    } else {
      g_string_append_c(shape, '[');
      for (int d = 0; d < info.rank; d++)
        g_string_append_printf(shape, "%s%lld", d ? "," : "", (long long)info.dims[d]);
      g_string_append_c(shape, ']');
    }
    g_string_append_printf(s, "%s'%s' (tensor %s, %s %s)", s->len ? ", " : "", info.key,
                           info.name, weft_dtype_name(info.dtype), shape->str);
    g_string_free(shape, TRUE);
  }
  if (s->len == 0) {
    g_string_free(s, TRUE);
    return NULL;
  }
  return g_string_free(s, FALSE);
}
