/* io_kernels.c: the core's CPU kernels for the ops TensorFlow 1.x input pipelines use beside
 * tf.data (graph/ops_io.c): DecodeCSV (tensorflow/core/kernels/decode_csv_op.cc), SerializeTensor
 * and ParseTensor (parse_tensor_op.cc) and MatchingFiles (matching_files_op.cc), with
 * TensorFlow's semantics and error messages. They live in the core because ParseTensor and
 * SerializeTensor reuse the TensorProto codec of GraphDefs and checkpoints (graph/graphdef.c)
 * and MatchingFiles walks directories with GLib, neither of which a plugin can link. The bytes
 * ParseTensor reads are untrusted: they are unpacked behind the protobuf depth guard and the
 * codec checks every declared size against the bytes present before it allocates. */
#include "exec_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/protobuf_internal.h"
#include "../graph/graphdef_internal.h"

static const weft__attr_value_t *attr(const weft_kernel_ctx_t *ctx, const char *name) {
  return weft__attrs_get(ctx->node->attrs, name);
}

/* Output i becomes t (the kernel's reference moves to the context). */
static void set_output(weft_kernel_ctx_t *ctx, int i, weft_tensor_t *t) {
  weft_tensor_unref(ctx->outputs[i].tensor);
  ctx->outputs[i].tensor = t;
}

/* INVALID_ARGUMENT "WHAT<t's shape>" (what ends with the words before the shape). */
static weft_status_t *shape_error(weft_kernel_ctx_t *ctx, const char *what,
                                  const weft_tensor_t *t) {
  char *shape = weft__shape_to_string(t->rank, t->dims);
  weft_status_t *st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "%s%s", what, shape);
  g_free(shape);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * DecodeCSV */

/* strings::safe_strto32/64: optional leading and trailing whitespace, an optional '-' (no '+'),
 * at least one digit, base 10, no overflow. */
static bool csv_int(const char *s, size_t n, int64_t vmax, int64_t *out) {
  size_t i = 0;
  while (i < n && isspace((unsigned char)s[i])) i++;
  int sign = 1;
  /* The largest magnitude, in unsigned arithmetic: 2^63 for a negative int64. */
  uint64_t limit = (uint64_t)vmax;
  if (i < n && s[i] == '-') {
    sign = -1;
    limit++;
    i++;
  }
  if (i >= n || !isdigit((unsigned char)s[i])) return false;
  uint64_t r = 0;
  while (i < n && isdigit((unsigned char)s[i])) {
    uint64_t d = (uint64_t)(s[i] - '0');
    if (r > (limit - d) / 10) return false;
    r = r * 10 + d;
    i++;
  }
  while (i < n && isspace((unsigned char)s[i])) i++;
  if (i != n) return false;
  *out = sign < 0 ? (int64_t)(0 - r) : (int64_t)r;
  return true;
}

/* strings::safe_strtof/strtod (double-conversion with leading and trailing spaces, hex integers,
 * case-insensitive "inf" and "nan"): anything else than one whole number is refused, and so is
 * a field of 32 bytes or more (TensorFlow's kFastToBufferSize). */
static bool csv_real(const char *s, size_t n, double *out) {
  if (n >= 32) return false;
  size_t b = 0, e = n;
  while (b < e && isspace((unsigned char)s[b])) b++;
  while (e > b && isspace((unsigned char)s[e - 1])) e--;
  if (b == e) return false;
  char tmp[32];
  memcpy(tmp, s + b, e - b);
  tmp[e - b] = '\0';
  const char *p = tmp;
  bool neg = false;
  if (*p == '+' || *p == '-') neg = *p++ == '-';
  if (g_ascii_strcasecmp(p, "inf") == 0) {
    *out = neg ? -INFINITY : INFINITY;
    return true;
  }
  if (g_ascii_strcasecmp(p, "nan") == 0) {
    *out = NAN;
    return true;
  }
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    if (!isxdigit((unsigned char)p[2])) return false;
    for (const char *q = p + 2; *q; q++)
      if (!isxdigit((unsigned char)*q)) return false;
    double v = (double)g_ascii_strtoull(p + 2, NULL, 16);
    *out = neg ? -v : v;
    return true;
  }
  /* The decimal grammar, checked here because strtod also reads "infinity", "nan(...)" and hex
   * floats, which double-conversion does not. */
  const char *q = p;
  size_t digits = 0;
  while (isdigit((unsigned char)*q)) q++, digits++;
  if (*q == '.') {
    q++;
    while (isdigit((unsigned char)*q)) q++, digits++;
  }
  if (digits == 0) return false;
  if (*q == 'e' || *q == 'E') {
    q++;
    if (*q == '+' || *q == '-') q++;
    if (!isdigit((unsigned char)*q)) return false;
    while (isdigit((unsigned char)*q)) q++;
  }
  if (*q) return false;
  double v = g_ascii_strtod(p, NULL);
  *out = neg ? -v : v;
  return true;
}

typedef struct csv_opts {
  char delim;
  bool quote;
  const int64_t *cols; /* select_cols, strictly increasing; NULL: every column */
  size_t n_cols;
} csv_opts_t;

/* DecodeCSVOp::ExtractFields: the fields of one record into `fields` (a GPtrArray of GString),
 * only the selected ones when select_cols is set, as TensorFlow splits them (newlines and
 * carriage returns between fields skipped; a trailing delimiter adds an empty last field). */
static weft_status_t *csv_fields(weft_kernel_ctx_t *ctx, const csv_opts_t *o, const char *in,
                                 size_t len, GPtrArray *fields) {
  size_t i = 0, sel = 0;
  int64_t parsed = 0;
  if (len == 0) return NULL;
  while (i < len) {
    if (in[i] == '\n' || in[i] == '\r') {
      i++;
      continue;
    }
    bool include = o->cols == NULL || o->cols[sel] == parsed;
    bool quoted = o->quote && in[i] == '"';
    if (quoted) i++;
    GString *f = g_string_new(NULL);
    if (!quoted) {
      for (; i < len && in[i] != o->delim; i++) {
        if ((o->quote && in[i] == '"') || in[i] == '\n' || in[i] == '\r') {
          g_string_free(f, TRUE);
          return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                    "Unquoted fields cannot have quotes/CRLFs inside");
        }
        if (include) g_string_append_c(f, in[i]);
      }
      i++; /* past the delimiter, or the end */
    } else {
      /* A quoted field ends at a quote followed by the delimiter or the end; a quote inside it
       * is written twice. */
      while (i < len - 1 && (in[i] != '"' || in[i + 1] != o->delim)) {
        if (in[i] != '"') {
          if (include) g_string_append_c(f, in[i]);
          i++;
        } else if (in[i + 1] != '"') {
          g_string_free(f, TRUE);
          return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                    "Quote inside a string has to be escaped by another quote");
        } else {
          if (include) g_string_append_c(f, '"');
          i += 2;
        }
      }
      if (!(i < len && in[i] == '"' && (i == len - 1 || in[i + 1] == o->delim))) {
        g_string_free(f, TRUE);
        return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                  "Quoted field has to end with quote followed by delim or end");
      }
      i += 2;
    }
    parsed++;
    if (!include) {
      g_string_free(f, TRUE);
      continue;
    }
    g_ptr_array_add(fields, f);
    if (o->cols && ++sel == o->n_cols) return NULL; /* the columns after the last are not read */
  }
  bool include = o->cols == NULL || o->cols[sel] == parsed;
  if (include && in[len - 1] == o->delim) g_ptr_array_add(fields, g_string_new(NULL));
  return NULL;
}

static void free_gstring(gpointer s) { g_string_free(s, TRUE); }

/* One field into element r of out (of dtype dt): the default when it is empty or na_value. */
static weft_status_t *csv_value(weft_kernel_ctx_t *ctx, weft_tensor_t *out, weft_dtype_t dt,
                                int f, int64_t r, const GString *s, const weft_tensor_t *dflt,
                                const char *na, size_t na_len) {
  void *d = weft_tensor_data(out);
  if (s->len == 0 || (s->len == na_len && memcmp(s->str, na, na_len) == 0)) {
    if (dflt->num_elements != 1)
      return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                "Field %d is required but missing in record %" G_GINT64_FORMAT "!",
                                f, r);
    const void *v = weft_tensor_data(dflt);
    switch (dt) {
      case WEFT_DT_INT32: ((int32_t *)d)[r] = *(const int32_t *)v; return NULL;
      case WEFT_DT_INT64: ((int64_t *)d)[r] = *(const int64_t *)v; return NULL;
      case WEFT_DT_FLOAT: ((float *)d)[r] = *(const float *)v; return NULL;
      case WEFT_DT_DOUBLE: ((double *)d)[r] = *(const double *)v; return NULL;
      default: {
        const weft_string_t *ds = v;
        return weft_tensor_set_string(out, r, ds->data, ds->len);
      }
    }
  }
  int64_t iv;
  double dv;
  bool ok = true;
  switch (dt) {
    case WEFT_DT_INT32:
      if ((ok = csv_int(s->str, s->len, INT32_MAX, &iv))) ((int32_t *)d)[r] = (int32_t)iv;
      break;
    case WEFT_DT_INT64:
      if ((ok = csv_int(s->str, s->len, INT64_MAX, &iv))) ((int64_t *)d)[r] = iv;
      break;
    case WEFT_DT_FLOAT:
      if ((ok = csv_real(s->str, s->len, &dv))) ((float *)d)[r] = (float)dv;
      break;
    case WEFT_DT_DOUBLE:
      if ((ok = csv_real(s->str, s->len, &dv))) ((double *)d)[r] = dv;
      break;
    default: return weft_tensor_set_string(out, r, s->str, s->len);
  }
  if (ok) return NULL;
  return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Field %d in record %" G_GINT64_FORMAT " is not a valid %s: %s", f, r,
                            weft__dtype_tf_name(dt), s->str);
}

/* The attrs DecodeCSVOp's constructor checks, in its order. */
static weft_status_t *csv_options(weft_kernel_ctx_t *ctx, size_t n_out, csv_opts_t *o,
                                  const char **na, size_t *na_len) {
  const weft__attr_value_t *sc = attr(ctx, "select_cols"), *fd = attr(ctx, "field_delim");
  const weft__attr_value_t *uq = attr(ctx, "use_quote_delim"), *nv = attr(ctx, "na_value");
  size_t nc = sc && sc->kind == WEFT_ATTR_LIST_INT ? sc->u.list.n : 0;
  if (nc != 0 && nc != n_out)
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "select_cols should match output size");
  for (size_t k = 1; k < nc; k++)
    if (sc->u.list.i[k - 1] >= sc->u.list.i[k])
      return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                "select_cols should be strictly increasing indices");
  if (nc > 0 && sc->u.list.i[0] < 0)
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                              "select_cols should be non-negative indices");
  if (fd && fd->kind == WEFT_ATTR_STRING && fd->u.s.len != 1)
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "field_delim should be only 1 char");
  o->delim = fd && fd->kind == WEFT_ATTR_STRING ? fd->u.s.data[0] : ',';
  o->quote = !(uq && uq->kind == WEFT_ATTR_BOOL) || uq->u.b;
  o->cols = nc ? sc->u.list.i : NULL;
  o->n_cols = nc;
  *na = nv && nv->kind == WEFT_ATTR_STRING ? nv->u.s.data : "";
  *na_len = nv && nv->kind == WEFT_ATTR_STRING ? nv->u.s.len : 0;
  return NULL;
}

static weft_status_t *decode_csv(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft__attr_value_t *ot = attr(ctx, "OUT_TYPE");
  int n = ot && ot->kind == WEFT_ATTR_LIST_TYPE ? (int)ot->u.list.n : 0;
  if (ctx->node->n_inputs != n + 1)
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "has %d inputs, not 1 + %d defaults",
                              ctx->node->n_inputs, n);
  csv_opts_t o = {0};
  const char *na = "";
  size_t na_len = 0;
  WEFT_RETURN_IF_ERROR(csv_options(ctx, (size_t)n, &o, &na, &na_len));
  const weft_tensor_t *rec = ctx->inputs[0].tensor;
  if (rec->dtype != WEFT_DT_STRING)
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "records must be a string tensor");
  for (int f = 0; f < n; f++) {
    const weft_tensor_t *d = ctx->inputs[1 + f].tensor;
    if (d->rank > 1)
      return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                "Each record default should be at most rank 1");
    if (d->num_elements >= 2)
      return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                "There should only be 1 default per field but field %d has "
                                "%" G_GINT64_FORMAT,
                                f, d->num_elements);
    if (d->dtype != ot->u.list.type[f])
      return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                "record_defaults[%d] is %s, but OUT_TYPE[%d] is %s", f,
                                weft__dtype_tf_name(d->dtype), f,
                                weft__dtype_tf_name(ot->u.list.type[f]));
  }
  weft_tensor_t **outs = g_new0(weft_tensor_t *, (size_t)n + 1);
  weft_status_t *st = NULL;
  for (int f = 0; f < n && !st; f++)
    st = weft__tensor_alloc(NULL, ot->u.list.type[f], rec->rank, rec->dims, &outs[f]);
  const weft_string_t *recs = weft_tensor_data(rec);
  GPtrArray *fields = g_ptr_array_new_with_free_func(free_gstring);
  for (int64_t r = 0; !st && r < rec->num_elements; r++) {
    g_ptr_array_set_size(fields, 0);
    st = csv_fields(ctx, &o, recs[r].data, recs[r].len, fields);
    if (!st && fields->len != (guint)n)
      st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                              "Expect %d fields but have %u in record %" G_GINT64_FORMAT, n,
                              fields->len, r);
    for (int f = 0; f < n && !st; f++)
      st = csv_value(ctx, outs[f], ot->u.list.type[f], f, r, fields->pdata[f],
                     ctx->inputs[1 + f].tensor, na, na_len);
  }
  g_ptr_array_free(fields, TRUE);
  for (int f = 0; f < n; f++) {
    if (st) weft_tensor_unref(outs[f]);
    else set_output(ctx, f, outs[f]);
  }
  g_free(outs);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * SerializeTensor, ParseTensor */

/* SerializeTensor(tensor: T) -> string scalar: Tensor::AsProtoTensorContent's bytes (dtype,
 * tensor_shape, numbers in tensor_content, strings in string_val). */
static weft_status_t *serialize_tensor(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  Tensorflow__TensorProto *p = NULL;
  weft_status_t *st = weft__tensor_to_proto(ctx->inputs[0].tensor, &p);
  if (st) return weft_status_prefix(st, "node '%s'", ctx->node->name);
  size_t len = tensorflow__tensor_proto__get_packed_size(p);
  uint8_t *buf = g_try_malloc(len ? len : 1);
  weft_tensor_t *out = NULL;
  if (buf == NULL) {
    st = weft__kernel_error(ctx, WEFT_RESOURCE_EXHAUSTED,
                            "cannot allocate %zu bytes for the serialized tensor", len);
  } else {
    tensorflow__tensor_proto__pack(p, buf);
    st = weft__tensor_alloc(NULL, WEFT_DT_STRING, 0, NULL, &out);
    if (!st) st = weft_tensor_set_string(out, 0, (const char *)buf, len);
  }
  g_free(buf);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
  return weft__kernel_set_output0(ctx, out, st);
}

/* ParseTensor(serialized: string scalar) -> out_type: Tensor::FromProto, which also reads the
 * typed *_val fields and repeats the last value over the rest of the shape. */
static weft_status_t *parse_tensor(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_tensor_t *in = ctx->inputs[0].tensor;
  if (in->dtype != WEFT_DT_STRING || in->rank != 0)
    return shape_error(ctx, "Expected `serialized` to be a scalar, got shape: ", in);
  const weft_string_t *s = weft_tensor_data(in);
  weft_status_t *st = NULL;
  Tensorflow__TensorProto *p = (Tensorflow__TensorProto *)weft__pb_unpack(
      &tensorflow__tensor_proto__descriptor, (const uint8_t *)s->data, s->len,
      "serialized TensorProto", &st);
  if (st) return weft_status_prefix(st, "node '%s'", ctx->node->name);
  if (p == NULL) {
    /* The bytes shown escaped and cut at 64: they may be anything, of any length. */
    char *head = g_strndup(s->data, s->len > 64 ? 64 : s->len);
    gchar *esc = g_strescape(head, NULL);
    st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Could not parse `serialized` as TensorProto: '%s%s'", esc,
                            s->len > 64 ? "..." : "");
    g_free(esc);
    g_free(head);
    return st;
  }
  weft_tensor_t *t = NULL;
  st = weft__tensor_from_proto(p, &t);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
  if (st) {
    weft_status_t *e = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                          "Cannot parse tensor from proto: %s",
                                          weft_status_message(st));
    weft_status_free(st);
    return e;
  }
  const weft__attr_value_t *ot = attr(ctx, "out_type");
  weft_dtype_t want = ot && ot->kind == WEFT_ATTR_TYPE ? ot->u.type : weft_tensor_dtype(t);
  if (weft_tensor_dtype(t) != want) {
    st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Type mismatch between parsed tensor (%s) and dtype (%s)",
                            weft__dtype_tf_name(weft_tensor_dtype(t)), weft__dtype_tf_name(want));
    weft_tensor_unref(t);
    return st;
  }
  set_output(ctx, 0, t);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MatchingFiles */

static bool has_wildcard(const char *s) { return strpbrk(s, "*?[\\") != NULL; }

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir);
  return n && dir[n - 1] == '/' ? g_strconcat(dir, name, NULL) : g_strconcat(dir, "/", name, NULL);
}

/* The paths under `dir` matching components[0..] added to out (only directories at the last
 * level when dirs_only). Each component holding a wildcard is matched with fnmatch against the
 * directory's entries, as TensorFlow's FileSystem::Match does (FNM_PATHNAME: a '*' does not cross
 * a '/', but matches a leading '.'); one without is taken as it is. A directory below the first
 * that cannot be read matches nothing. */
static void match_under(const char *dir, char **components, bool dirs_only, GPtrArray *out) {
  const char *comp = components[0];
  bool last = components[1] == NULL;
  GFileTest want = last && !dirs_only ? G_FILE_TEST_EXISTS : G_FILE_TEST_IS_DIR;
  if (!has_wildcard(comp)) {
    char *path = join(dir, comp);
    if (!g_file_test(path, want)) g_free(path);
    else if (last) g_ptr_array_add(out, path);
    else {
      match_under(path, components + 1, dirs_only, out);
      g_free(path);
    }
    return;
  }
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (const char *name; (name = g_dir_read_name(d)) != NULL;)
    if (fnmatch(comp, name, FNM_PATHNAME) == 0) g_ptr_array_add(names, g_strdup(name));
  g_dir_close(d);
  for (guint k = 0; k < names->len; k++) {
    char *path = join(dir, names->pdata[k]);
    if (!g_file_test(path, want)) g_free(path);
    else if (last) g_ptr_array_add(out, path);
    else {
      match_under(path, components + 1, dirs_only, out);
      g_free(path);
    }
  }
  g_ptr_array_free(names, TRUE);
}

/* internal::GetMatchingPaths for one pattern: the walk starts at the directory of the pattern's
 * part before its first wildcard ("." when that part has no '/': the names found then start with
 * "./", as TensorFlow's do), which must be readable (NOT_FOUND "DIR; No such file or directory"
 * otherwise; a permission error matches nothing); a pattern ending with '/' matches directories,
 * named without the '/'. */
static weft_status_t *match_pattern(weft_kernel_ctx_t *ctx, const char *pattern, GPtrArray *out) {
  size_t fixed = strcspn(pattern, "*?[\\");
  const char *slash = g_strrstr_len(pattern, (gssize)fixed, "/");
  char *full = slash ? g_strdup(pattern) : g_strconcat("./", pattern, NULL);
  size_t cut = slash ? (size_t)(slash - pattern) : 1; /* full[cut] is the '/' after the dir */
  char *dir = g_strndup(full, cut ? cut : 1);         /* "/" for a pattern at the root */
  size_t n = strlen(full);
  bool dirs_only = n > cut + 1 && full[n - 1] == '/';
  if (dirs_only) full[n - 1] = '\0';
  weft_status_t *st = NULL;
  errno = 0;
  GDir *d = g_dir_open(dir, 0, NULL);
  int err = errno;
  if (d) {
    g_dir_close(d);
    char **comps = g_strsplit(full + cut + 1, "/", -1);
    if (comps[0] && *comps[0]) match_under(dir, comps, dirs_only, out);
    g_strfreev(comps);
  } else if (err != EACCES && err != EPERM) {
    st = weft__kernel_error(ctx, err == ENOENT ? WEFT_NOT_FOUND : WEFT_FAILED_PRECONDITION,
                            "%s; %s", dir, g_strerror(err ? err : EIO));
  }
  g_free(dir);
  g_free(full);
  return st;
}

static int cmp_paths(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* MatchingFiles(pattern: scalar or vector) -> the sorted paths every pattern matches (all of
 * them together, duplicates kept), an empty vector when none match. */
static weft_status_t *matching_files(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_tensor_t *in = ctx->inputs[0].tensor;
  if (in->dtype != WEFT_DT_STRING || in->rank > 1)
    return shape_error(ctx, "Input pattern tensor must be scalar or vector, but had shape: ", in);
  const weft_string_t *pats = weft_tensor_data(in);
  GPtrArray *found = g_ptr_array_new_with_free_func(g_free);
  weft_status_t *st = NULL;
  for (int64_t i = 0; !st && i < in->num_elements; i++) {
    /* An empty pattern matches nothing; a NUL byte cannot be in a file name. */
    if (pats[i].len == 0 || memchr(pats[i].data, '\0', pats[i].len)) continue;
    char *pat = g_strndup(pats[i].data, pats[i].len);
    st = match_pattern(ctx, pat, found);
    g_free(pat);
  }
  if (st) {
    g_ptr_array_free(found, TRUE);
    return st;
  }
  g_ptr_array_sort(found, cmp_paths);
  int64_t n = found->len;
  weft_tensor_t *out = NULL;
  st = weft__tensor_alloc(NULL, WEFT_DT_STRING, 1, &n, &out);
  for (int64_t k = 0; !st && k < n; k++)
    st = weft_tensor_set_string(out, k, found->pdata[k], strlen(found->pdata[k]));
  g_ptr_array_free(found, TRUE);
  return weft__kernel_set_output0(ctx, out, st);
}

void weft__io_kernels_register(void) {
  static const weft__core_kernel_t kernels[] = {{"DecodeCSV", decode_csv},
                                                {"SerializeTensor", serialize_tensor},
                                                {"ParseTensor", parse_tensor},
                                                {"MatchingFiles", matching_files}};
  weft__core_kernels_register(kernels, G_N_ELEMENTS(kernels));
}
