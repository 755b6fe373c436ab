/* op_def.c: op definitions. Parses TensorFlow's REGISTER_OP spec strings ("x: T", "values: N * T",
 * "ref: Ref(T)", "T: {float, int32} = DT_FLOAT", "N: int >= 2", ...) into weft__op_def_t, keeps
 * the process-wide op registry, registers the standard ops, and holds the small shape-inference
 * helpers the standard ops share (ops_shape.h). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "graph_internal.h"
#include "ops_shape.h"

/* ---------------------------------------------------------------------------------------------
 * Small text helpers */

static const char *skip_space(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

static bool valid_ident(const char *s) {
  if (!is_ident_start(*s)) return false;
  for (s++; *s; s++)
    if (!is_ident_char(*s)) return false;
  return true;
}

/* TensorFlow's op names are CamelCase; a leading underscore marks internal ops (_Send, _Recv). */
static bool valid_op_name(const char *s) {
  if (!((*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (s++; *s; s++)
    if (!is_ident_char(*s) && *s != '>') return false;
  return true;
}

/* Reads an identifier at *p into a new string (the caller frees it) and advances *p. */
static char *take_ident(const char **p) {
  const char *start = *p;
  if (!is_ident_start(*start)) return NULL;
  const char *q = start + 1;
  while (is_ident_char(*q)) q++;
  *p = q;
  return g_strndup(start, (gsize)(q - start));
}

static char *strip_copy(const char *s, size_t len) {
  char *copy = g_strndup(s, len);
  return g_strstrip(copy);
}

/* Splits a bracketed list's inner text at top-level commas, outside quotes. Empty text gives an
 * empty array. The caller frees with g_ptr_array_unref. */
static GPtrArray *split_items(const char *text) {
  GPtrArray *items = g_ptr_array_new_with_free_func(g_free);
  const char *t = skip_space(text);
  if (*t == '\0') return items;
  const char *start = text;
  char quote = 0;
  int depth = 0;
  for (const char *p = text;; p++) {
    char c = *p;
    if (quote) {
      if (c == '\\' && p[1]) {
        p++;
        continue;
      }
      if (c == quote) quote = 0;
      if (c != '\0') continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[' || c == '{' || c == '(') {
      depth++;
    } else if (c == ']' || c == '}' || c == ')') {
      depth--;
    } else if ((c == ',' && depth == 0) || c == '\0') {
      g_ptr_array_add(items, strip_copy(start, (size_t)(p - start)));
      start = p + 1;
      if (c == '\0') break;
    }
  }
  return items;
}

/* ---------------------------------------------------------------------------------------------
 * Type sets */

static const weft_dtype_t kRealNumberTypes[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_UINT8,    WEFT_DT_INT16,  WEFT_DT_INT8,
    WEFT_DT_INT64,  WEFT_DT_BFLOAT16, WEFT_DT_UINT16, WEFT_DT_HALF, WEFT_DT_UINT32, WEFT_DT_UINT64,
};
static const weft_dtype_t kFloatingPointTypes[] = {WEFT_DT_HALF, WEFT_DT_BFLOAT16, WEFT_DT_FLOAT,
                                                   WEFT_DT_DOUBLE};

/* TensorFlow's named groups of types. numbertype differs from realnumbertype only by complex and
 * quantized types, which Weft does not have; quantizedtype is therefore empty. */
static bool type_group(const char *name, const weft_dtype_t **types, size_t *n) {
  if (strcmp(name, "numbertype") == 0 || strcmp(name, "realnumbertype") == 0 ||
      strcmp(name, "realnumbertypes") == 0 || strcmp(name, "numbertypes") == 0) {
    *types = kRealNumberTypes;
    *n = G_N_ELEMENTS(kRealNumberTypes);
    return true;
  }
  if (strcmp(name, "floatingpointtype") == 0) {
    *types = kFloatingPointTypes;
    *n = G_N_ELEMENTS(kFloatingPointTypes);
    return true;
  }
  if (strcmp(name, "quantizedtype") == 0) {
    *types = NULL;
    *n = 0;
    return true;
  }
  return false;
}

static void add_type_unique(GArray *set, weft_dtype_t t) {
  for (guint i = 0; i < set->len; i++)
    if (g_array_index(set, weft_dtype_t, i) == t) return;
  g_array_append_val(set, t);
}

/* ---------------------------------------------------------------------------------------------
 * Parse errors */

typedef struct {
  const char *op;
  const char *what; /* "input", "output", "attr" */
  const char *spec;
} spec_ref_t;

static weft_status_t *bad_spec(const spec_ref_t *ref, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static weft_status_t *bad_spec(const spec_ref_t *ref, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  weft_status_t *status = weft_status_new(WEFT_INVALID_ARGUMENT,
                                          "op '%s': invalid %s spec \"%s\": %s", ref->op,
                                          ref->what, ref->spec, why);
  g_free(why);
  return status;
}

/* ---------------------------------------------------------------------------------------------
 * Attr specs */

static void attr_def_free(gpointer p) {
  weft__attr_def_t *a = p;
  if (a == NULL) return;
  g_free(a->name);
  g_free(a->type);
  weft__attr_value_free(a->default_value);
  g_free(a->allowed_types);
  g_free(a);
}

static void arg_def_free(gpointer p) {
  weft__arg_def_t *a = p;
  if (a == NULL) return;
  g_free(a->name);
  g_free(a->type_attr);
  g_free(a->number_attr);
  g_free(a->type_list_attr);
  g_free(a);
}

/* While parsing one attr: the allowed strings of a string enum ("{'SAME', 'VALID'}"), used only to
 * check the default; weft__attr_def_t has no place for them and nodes are checked by kernels. */
typedef struct {
  GPtrArray *allowed_strings;
} attr_extra_t;

static bool is_scalar_kind_name(const char *t) {
  static const char *const kinds[] = {"int", "float", "bool", "type", "string",
                                      "shape", "tensor", "func"};
  for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++)
    if (strcmp(t, kinds[i]) == 0) return true;
  return false;
}

/* Parses "'a'" or "\"a\"" into its unescaped contents. */
static bool parse_quoted(const char *text, char **out) {
  size_t len = strlen(text);
  if (len < 2 || (text[0] != '\'' && text[0] != '"') || text[len - 1] != text[0]) return false;
  char *inner = g_strndup(text + 1, len - 2);
  *out = g_strcompress(inner);
  g_free(inner);
  return true;
}

/* Parses the type-set text between braces into dtypes or (for quoted items) enum strings. */
static weft_status_t *parse_brace_set(const spec_ref_t *ref, const char *inner, GArray *types,
                                      GPtrArray *strings, bool *is_string_enum) {
  GPtrArray *items = split_items(inner);
  weft_status_t *status = NULL;
  if (items->len == 0) {
    status = bad_spec(ref, "empty set {}");
    goto out;
  }
  *is_string_enum = ((const char *)items->pdata[0])[0] == '\'' ||
                    ((const char *)items->pdata[0])[0] == '"';
  for (guint i = 0; i < items->len; i++) {
    const char *item = items->pdata[i];
    if (*is_string_enum) {
      char *s = NULL;
      if (!parse_quoted(item, &s)) {
        status = bad_spec(ref, "'%s' is not a quoted string in a string set", item);
        goto out;
      }
      g_ptr_array_add(strings, s);
      continue;
    }
    const weft_dtype_t *group;
    size_t n_group;
    weft_dtype_t t;
    if (type_group(item, &group, &n_group)) {
      for (size_t k = 0; k < n_group; k++) add_type_unique(types, group[k]);
    } else if (weft__dtype_from_spec_name(item, &t)) {
      add_type_unique(types, t);
    } else {
      status = bad_spec(ref, "unknown dtype '%s'", item);
      goto out;
    }
  }
  if (!*is_string_enum && types->len == 0)
    status = bad_spec(ref, "the type set holds no dtype Weft supports");
out:
  g_ptr_array_unref(items);
  return status;
}

/* Parses "{...}" starting at *p (which points at '{'), advancing *p past '}'. */
static weft_status_t *take_braces(const spec_ref_t *ref, const char **p, char **inner) {
  const char *end = strchr(*p, '}');
  if (end == NULL) return bad_spec(ref, "missing '}'");
  *inner = g_strndup(*p + 1, (gsize)(end - *p - 1));
  *p = end + 1;
  return NULL;
}

/* The type part of an attr spec: "int", "list(int)", "{float, int32}", "numbertype",
 * "list({float, int32})", "{'SAME', 'VALID'}". Sets def->type and allowed types. */
static weft_status_t *parse_attr_type(const spec_ref_t *ref, const char **p,
                                      weft__attr_def_t *def, attr_extra_t *extra) {
  bool is_list = false;
  const char *q = *p;
  if (strncmp(q, "list(", 5) == 0) {
    is_list = true;
    q = skip_space(q + 5);
  }
  char *elem = NULL;
  GArray *types = g_array_new(FALSE, FALSE, sizeof(weft_dtype_t));
  weft_status_t *status = NULL;
  if (*q == '{') {
    char *inner = NULL;
    status = take_braces(ref, &q, &inner);
    if (status) goto out;
    bool is_string_enum = false;
    extra->allowed_strings = g_ptr_array_new_with_free_func(g_free);
    status = parse_brace_set(ref, inner, types, extra->allowed_strings, &is_string_enum);
    g_free(inner);
    if (status) goto out;
    elem = g_strdup(is_string_enum ? "string" : "type");
  } else {
    elem = take_ident(&q);
    if (elem == NULL) {
      status = bad_spec(ref, "missing attr type");
      goto out;
    }
    const weft_dtype_t *group;
    size_t n_group;
    if (type_group(elem, &group, &n_group)) {
      if (n_group == 0) {
        status = bad_spec(ref, "the type set holds no dtype Weft supports");
        goto out;
      }
      for (size_t k = 0; k < n_group; k++) add_type_unique(types, group[k]);
      g_free(elem);
      elem = g_strdup("type");
    } else if (!is_scalar_kind_name(elem)) {
      status = bad_spec(ref, "unknown attr type '%s'", elem);
      goto out;
    }
  }
  if (is_list) {
    q = skip_space(q);
    if (*q != ')') {
      status = bad_spec(ref, "missing ')' after list(");
      goto out;
    }
    q++;
    def->type = g_strdup_printf("list(%s)", elem);
  } else {
    def->type = g_strdup(elem);
  }
  if (types->len > 0) {
    def->n_allowed_types = types->len;
    def->allowed_types = (weft_dtype_t *)g_array_free(types, FALSE);
    types = NULL;
  }
  *p = q;
out:
  g_free(elem);
  if (types) g_array_free(types, TRUE);
  return status;
}

static bool parse_int64(const char *text, int64_t *out) {
  if (*text == '\0') return false;
  char *end = NULL;
  errno = 0;
  gint64 v = g_ascii_strtoll(text, &end, 10);
  if (errno != 0 || end == text || *skip_space(end) != '\0') return false;
  *out = v;
  return true;
}

static bool parse_float(const char *text, float *out) {
  if (*text == '\0') return false;
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (end == text || *skip_space(end) != '\0') return false;
  *out = (float)v;
  return true;
}

static bool parse_bool(const char *text, bool *out) {
  if (strcmp(text, "true") == 0) {
    *out = true;
    return true;
  }
  if (strcmp(text, "false") == 0) {
    *out = false;
    return true;
  }
  return false;
}

/* Shape defaults: TensorFlow's text form "{ unknown_rank: true }" (and "{}" for a scalar), or the
 * short forms "?" (unknown rank) and "[2,?,-1]". */
static bool parse_shape(const char *text, weft__shape_t *out) {
  GString *compact = g_string_new(NULL);
  for (const char *c = text; *c; c++)
    if (*c != ' ' && *c != '\t' && *c != '\n') g_string_append_c(compact, *c);
  bool ok = false;
  memset(out, 0, sizeof *out);
  if (strcmp(compact->str, "{unknown_rank:true}") == 0 || strcmp(compact->str, "?") == 0) {
    out->rank = -1;
    ok = true;
  } else if (strcmp(compact->str, "{}") == 0) {
    out->rank = 0;
    ok = true;
  } else if (compact->len >= 2 && compact->str[0] == '[' &&
             compact->str[compact->len - 1] == ']') {
    char *inner = g_strndup(compact->str + 1, compact->len - 2);
    GPtrArray *items = split_items(inner);
    g_free(inner);
    ok = items->len <= WEFT_MAX_RANK;
    for (guint i = 0; ok && i < items->len; i++) {
      const char *item = items->pdata[i];
      int64_t d;
      if (strcmp(item, "?") == 0)
        out->dims[i] = WEFT_DIM_UNKNOWN;
      else if (parse_int64(item, &d) && d >= -1)
        out->dims[i] = d < 0 ? WEFT_DIM_UNKNOWN : d;
      else
        ok = false;
    }
    out->rank = (int)items->len;
    g_ptr_array_unref(items);
  }
  g_string_free(compact, TRUE);
  return ok;
}

static bool type_allowed(const weft__attr_def_t *def, weft_dtype_t t) {
  if (def->allowed_types == NULL) return true;
  for (size_t i = 0; i < def->n_allowed_types; i++)
    if (def->allowed_types[i] == t) return true;
  return false;
}

static bool string_allowed(const attr_extra_t *extra, const char *s) {
  if (extra->allowed_strings == NULL || extra->allowed_strings->len == 0) return true;
  for (guint i = 0; i < extra->allowed_strings->len; i++)
    if (strcmp(extra->allowed_strings->pdata[i], s) == 0) return true;
  return false;
}

/* A tensor default in the text-proto form TensorFlow's REGISTER_OP uses (ImageSummary's
 * bad_color): "{ dtype: DT_UINT8 tensor_shape: { dim { size: 4 } } int_val: 255 int_val: 0 }",
 * numbers in int_val or float_val; fewer values than elements repeat the last, as TensorFlow's
 * MakeTensorFromProto does. Integer and float32/64 dtypes; NULL when the text is not of that
 * form. */
static weft_tensor_t *parse_tensor_default(const char *text) {
  char *spaced = g_strdup(text);
  for (char *p = spaced; *p; p++)
    if (*p == '{' || *p == '}' || *p == ':') *p = ' ';
  char **tok = g_strsplit_set(g_strstrip(spaced), " \t", -1);
  weft_dtype_t dtype = WEFT_DT_INVALID;
  int64_t dims[WEFT_MAX_RANK];
  int rank = 0;
  GArray *vals = g_array_new(FALSE, FALSE, sizeof(double));
  bool ok = true;
  for (int i = 0; ok && tok[i]; i++) {
    if (!*tok[i] || strcmp(tok[i], "tensor_shape") == 0 || strcmp(tok[i], "dim") == 0) continue;
    const char *arg = NULL;
    int j = i + 1;
    while (tok[j] && !*tok[j]) j++;
    arg = tok[j];
    if (!arg) {
      ok = false;
      break;
    }
    char *end = NULL;
    if (strcmp(tok[i], "dtype") == 0) {
      ok = weft_dtype_from_name(arg, &dtype);
    } else if (strcmp(tok[i], "size") == 0 && rank < WEFT_MAX_RANK) {
      dims[rank++] = g_ascii_strtoll(arg, &end, 10);
      ok = end && !*end && dims[rank - 1] >= 0 && dims[rank - 1] <= 1024;
    } else if (strcmp(tok[i], "int_val") == 0 || strcmp(tok[i], "float_val") == 0) {
      double d = g_ascii_strtod(arg, &end);
      ok = end && !*end;
      g_array_append_val(vals, d);
    } else {
      ok = false;
    }
    i = j;
  }
  weft_tensor_t *t = NULL;
  if (ok && dtype != WEFT_DT_INVALID && dtype != WEFT_DT_STRING) {
    t = weft_tensor_new(dtype, rank, dims);
    int64_t n = weft_tensor_num_elements(t);
    void *data = weft_tensor_data(t);
    for (int64_t k = 0; k < n && vals->len; k++) {
      double d = g_array_index(vals, double, MIN((guint)k, vals->len - 1));
      switch (dtype) {
        case WEFT_DT_UINT8: ((uint8_t *)data)[k] = (uint8_t)d; break;
        case WEFT_DT_INT8: ((int8_t *)data)[k] = (int8_t)d; break;
        case WEFT_DT_INT16: ((int16_t *)data)[k] = (int16_t)d; break;
        case WEFT_DT_UINT16: ((uint16_t *)data)[k] = (uint16_t)d; break;
        case WEFT_DT_INT32: ((int32_t *)data)[k] = (int32_t)d; break;
        case WEFT_DT_INT64: ((int64_t *)data)[k] = (int64_t)d; break;
        case WEFT_DT_FLOAT: ((float *)data)[k] = (float)d; break;
        case WEFT_DT_DOUBLE: ((double *)data)[k] = d; break;
        default: k = n; break;
      }
    }
  }
  g_array_free(vals, TRUE);
  g_strfreev(tok);
  g_free(spaced);
  return t;
}

/* Parses one scalar default of element kind `elem` ("int", "type", ...). */
static weft_status_t *parse_scalar_default(const spec_ref_t *ref, const weft__attr_def_t *def,
                                           const attr_extra_t *extra, const char *elem,
                                           const char *text, weft__attr_value_t *scalar) {
  if (strcmp(elem, "int") == 0) {
    if (!parse_int64(text, &scalar->u.i)) return bad_spec(ref, "'%s' is not an int", text);
    scalar->kind = WEFT_ATTR_INT;
  } else if (strcmp(elem, "float") == 0) {
    if (!parse_float(text, &scalar->u.f)) return bad_spec(ref, "'%s' is not a float", text);
    scalar->kind = WEFT_ATTR_FLOAT;
  } else if (strcmp(elem, "bool") == 0) {
    if (!parse_bool(text, &scalar->u.b))
      return bad_spec(ref, "'%s' is not a bool (true or false)", text);
    scalar->kind = WEFT_ATTR_BOOL;
  } else if (strcmp(elem, "type") == 0) {
    if (!weft__dtype_from_spec_name(text, &scalar->u.type))
      return bad_spec(ref, "unknown dtype '%s'", text);
    if (!type_allowed(def, scalar->u.type))
      return bad_spec(ref, "default %s is not one of the allowed types", text);
    scalar->kind = WEFT_ATTR_TYPE;
  } else if (strcmp(elem, "string") == 0) {
    char *s = NULL;
    if (!parse_quoted(text, &s)) return bad_spec(ref, "'%s' is not a quoted string", text);
    if (!string_allowed(extra, s)) {
      g_free(s);
      return bad_spec(ref, "default %s is not one of the allowed values", text);
    }
    scalar->kind = WEFT_ATTR_STRING;
    scalar->u.s.data = s;
    scalar->u.s.len = strlen(s);
  } else if (strcmp(elem, "shape") == 0) {
    if (!parse_shape(text, &scalar->u.shape))
      return bad_spec(ref, "'%s' is not a shape ({ unknown_rank: true }, {} or [2,?])", text);
    scalar->kind = WEFT_ATTR_SHAPE;
  } else if (strcmp(elem, "tensor") == 0) {
    scalar->u.tensor = parse_tensor_default(text);
    if (!scalar->u.tensor)
      return bad_spec(ref, "'%s' is not a tensor ({ dtype: DT_.. tensor_shape: {..} int_val: ..})",
                      text);
    scalar->kind = WEFT_ATTR_TENSOR;
  } else {
    return bad_spec(ref, "defaults of %s attrs are not supported", elem);
  }
  return NULL;
}

static weft_status_t *parse_default(const spec_ref_t *ref, weft__attr_def_t *def,
                                    const attr_extra_t *extra, const char *text) {
  if (strncmp(def->type, "list(", 5) != 0) {
    weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_NONE);
    weft_status_t *status = parse_scalar_default(ref, def, extra, def->type, text, v);
    if (status) {
      weft__attr_value_free(v);
      return status;
    }
    if (v->kind == WEFT_ATTR_INT && def->has_minimum && v->u.i < def->minimum) {
      weft__attr_value_free(v);
      return bad_spec(ref, "default %s is below the minimum %" G_GINT64_FORMAT, text,
                      def->minimum);
    }
    def->default_value = v;
    return NULL;
  }

  size_t len = strlen(text);
  if (len < 2 || text[0] != '[' || text[len - 1] != ']')
    return bad_spec(ref, "list default '%s' is not in brackets", text);
  char elem[16];
  g_strlcpy(elem, def->type + 5, sizeof elem);
  char *paren = strchr(elem, ')');
  if (paren) *paren = '\0';

  char *inner = g_strndup(text + 1, len - 2);
  GPtrArray *items = split_items(inner);
  g_free(inner);
  size_t n = items->len;
  weft__attr_value_t *v = NULL;
  weft_status_t *status = NULL;
  if (strcmp(elem, "int") == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_INT);
    v->u.list.i = g_new0(int64_t, n ? n : 1);
  } else if (strcmp(elem, "float") == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_FLOAT);
    v->u.list.f = g_new0(float, n ? n : 1);
  } else if (strcmp(elem, "bool") == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_BOOL);
    v->u.list.b = g_new0(int, n ? n : 1);
  } else if (strcmp(elem, "type") == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_TYPE);
    v->u.list.type = g_new0(weft_dtype_t, n ? n : 1);
  } else if (strcmp(elem, "string") == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_STRING);
    v->u.list.s = g_new0(weft_string_t, n ? n : 1);
  } else if (strcmp(elem, "shape") == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_SHAPE);
    v->u.list.shape = g_new0(weft__shape_t, n ? n : 1);
  } else if (n == 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_EMPTY);
  } else {
    status = bad_spec(ref, "defaults of list(%s) attrs are not supported", elem);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    weft__attr_value_t scalar = {0};
    status = parse_scalar_default(ref, def, extra, elem, items->pdata[i], &scalar);
    if (status) goto out;
    switch (v->kind) {
      case WEFT_ATTR_LIST_INT: v->u.list.i[i] = scalar.u.i; break;
      case WEFT_ATTR_LIST_FLOAT: v->u.list.f[i] = scalar.u.f; break;
      case WEFT_ATTR_LIST_BOOL: v->u.list.b[i] = scalar.u.b; break;
      case WEFT_ATTR_LIST_TYPE: v->u.list.type[i] = scalar.u.type; break;
      case WEFT_ATTR_LIST_STRING: v->u.list.s[i] = scalar.u.s; break;
      case WEFT_ATTR_LIST_SHAPE: v->u.list.shape[i] = scalar.u.shape; break;
      default: break;
    }
    /* Counted as we go so that a later failure frees exactly what was filled. */
    v->u.list.n = i + 1;
  }
  if (def->has_minimum && (int64_t)n < def->minimum) {
    status = bad_spec(ref, "default has %zu elements, below the minimum length %" G_GINT64_FORMAT,
                      n, def->minimum);
    goto out;
  }
  def->default_value = v;
  v = NULL;
out:
  weft__attr_value_free(v);
  g_ptr_array_unref(items);
  return status;
}

/* The value kind an attr type string stands for; WEFT_ATTR_NONE for one without a kind. */
static weft__attr_kind_t attr_kind_for_type(const char *type) {
  static const struct {
    const char *name;
    weft__attr_kind_t kind;
  } table[] = {
      {"int", WEFT_ATTR_INT},          {"float", WEFT_ATTR_FLOAT},
      {"bool", WEFT_ATTR_BOOL},        {"type", WEFT_ATTR_TYPE},
      {"string", WEFT_ATTR_STRING},    {"shape", WEFT_ATTR_SHAPE},
      {"tensor", WEFT_ATTR_TENSOR},    {"func", WEFT_ATTR_FUNC},
      {"list(int)", WEFT_ATTR_LIST_INT}, {"list(float)", WEFT_ATTR_LIST_FLOAT},
      {"list(bool)", WEFT_ATTR_LIST_BOOL}, {"list(type)", WEFT_ATTR_LIST_TYPE},
      {"list(string)", WEFT_ATTR_LIST_STRING}, {"list(shape)", WEFT_ATTR_LIST_SHAPE},
      {"list(tensor)", WEFT_ATTR_LIST_TENSOR},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(table); k++) {
    if (strcmp(table[k].name, type) == 0) return table[k].kind;
  }
  return WEFT_ATTR_NONE;
}

static weft_status_t *parse_attr(const char *op, const char *spec, weft__attr_def_t **out) {
  spec_ref_t ref = {op, "attr", spec};
  const char *colon = strchr(spec, ':');
  if (colon == NULL) return bad_spec(&ref, "expected 'name: type'");
  weft__attr_def_t *def = g_new0(weft__attr_def_t, 1);
  attr_extra_t extra = {NULL};
  weft_status_t *status = NULL;
  def->name = strip_copy(spec, (size_t)(colon - spec));
  if (!valid_ident(def->name)) {
    status = bad_spec(&ref, "'%s' is not a valid attr name", def->name);
    goto out;
  }
  const char *p = skip_space(colon + 1);
  status = parse_attr_type(&ref, &p, def, &extra);
  if (status) goto out;
  def->kind = attr_kind_for_type(def->type);
  p = skip_space(p);
  if (p[0] == '>' && p[1] == '=') {
    if (strcmp(def->type, "int") != 0 && strncmp(def->type, "list(", 5) != 0) {
      status = bad_spec(&ref, "a minimum (>=) applies only to int and list attrs");
      goto out;
    }
    p = skip_space(p + 2);
    const char *start = p;
    if (*p == '-') p++;
    while (*p >= '0' && *p <= '9') p++;
    char *num = g_strndup(start, (gsize)(p - start));
    bool ok = parse_int64(num, &def->minimum);
    g_free(num);
    if (!ok) {
      status = bad_spec(&ref, "missing number after '>='");
      goto out;
    }
    if (strncmp(def->type, "list(", 5) == 0 && def->minimum < 0) {
      status = bad_spec(&ref, "a list's minimum length cannot be negative");
      goto out;
    }
    def->has_minimum = true;
    p = skip_space(p);
  }
  if (*p == '=') {
    char *text = g_strstrip(g_strdup(p + 1));
    if (*text == '\0')
      status = bad_spec(&ref, "missing default value after '='");
    else
      status = parse_default(&ref, def, &extra, text);
    g_free(text);
    if (status) goto out;
  } else if (*p != '\0') {
    status = bad_spec(&ref, "unexpected '%s'", p);
    goto out;
  }
out:
  if (extra.allowed_strings) g_ptr_array_unref(extra.allowed_strings);
  if (status) {
    attr_def_free(def);
    return status;
  }
  *out = def;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Arg specs */

static const weft__attr_def_t *find_attr_in(GPtrArray *attrs, const char *name) {
  for (guint i = 0; i < attrs->len; i++) {
    const weft__attr_def_t *a = attrs->pdata[i];
    if (strcmp(a->name, name) == 0) return a;
  }
  return NULL;
}

static weft_status_t *parse_arg(const char *op, const char *what, const char *spec,
                                GPtrArray *attrs, weft__arg_def_t **out) {
  spec_ref_t ref = {op, what, spec};
  const char *colon = strchr(spec, ':');
  if (colon == NULL) return bad_spec(&ref, "expected 'name: type'");
  weft__arg_def_t *arg = g_new0(weft__arg_def_t, 1);
  weft_status_t *status = NULL;
  char *type_text = NULL;
  char *number = NULL;
  arg->name = strip_copy(spec, (size_t)(colon - spec));
  if (!valid_ident(arg->name)) {
    status = bad_spec(&ref, "'%s' is not a valid %s name", arg->name, what);
    goto out;
  }
  type_text = g_strstrip(g_strdup(colon + 1));
  if (strncmp(type_text, "Ref(", 4) == 0) {
    size_t len = strlen(type_text);
    if (type_text[len - 1] != ')') {
      status = bad_spec(&ref, "missing ')' after Ref(");
      goto out;
    }
    arg->is_ref = true;
    char *inner = strip_copy(type_text + 4, len - 5);
    g_free(type_text);
    type_text = inner;
  }
  char *star = strchr(type_text, '*');
  if (star != NULL) {
    number = strip_copy(type_text, (size_t)(star - type_text));
    char *rest = g_strstrip(g_strdup(star + 1));
    g_free(type_text);
    type_text = rest;
    const weft__attr_def_t *n_attr = find_attr_in(attrs, number);
    if (n_attr == NULL) {
      status = bad_spec(&ref, "'%s' is not a declared attr", number);
      goto out;
    }
    if (strcmp(n_attr->type, "int") != 0) {
      status = bad_spec(&ref, "attr '%s' is a %s, but a list length needs an int", number,
                        n_attr->type);
      goto out;
    }
    arg->number_attr = g_strdup(number);
  }
  if (!valid_ident(type_text)) {
    status = bad_spec(&ref, "'%s' is neither a dtype nor an attr name", type_text);
    goto out;
  }
  weft_dtype_t fixed;
  const weft__attr_def_t *t_attr = find_attr_in(attrs, type_text);
  if (t_attr == NULL && weft__dtype_from_spec_name(type_text, &fixed)) {
    arg->fixed_type = fixed;
  } else if (t_attr == NULL) {
    status = bad_spec(&ref, "'%s' is not a declared attr", type_text);
    goto out;
  } else if (strcmp(t_attr->type, "type") == 0) {
    arg->type_attr = g_strdup(type_text);
  } else if (strcmp(t_attr->type, "list(type)") == 0 && arg->number_attr == NULL) {
    arg->type_list_attr = g_strdup(type_text);
  } else {
    status = bad_spec(&ref, "attr '%s' is a %s, not a type%s", type_text, t_attr->type,
                      arg->number_attr ? "" : " or list(type)");
    goto out;
  }
out:
  g_free(type_text);
  g_free(number);
  if (status) {
    arg_def_free(arg);
    return status;
  }
  *out = arg;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Whole op definitions */

weft_status_t *weft__op_def_parse(const weft_op_def_t *spec, const char *origin,
                                  weft__op_def_t **out) {
  if (out) *out = NULL;
  if (spec == NULL || out == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "op definition: NULL argument");
  /* The fields up to attrs are what every version of the struct has; the rest are read only when
   * the writer's struct is big enough to hold them. */
  if (spec->struct_size < offsetof(weft_op_def_t, attrs) + sizeof(spec->attrs))
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "op definition from %s: struct_size %zu is too small (at least %zu)",
                           origin ? origin : "?", spec->struct_size,
                           offsetof(weft_op_def_t, attrs) + sizeof(spec->attrs));
  if (spec->name == NULL || !valid_op_name(spec->name))
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "op definition from %s: '%s' is not a valid op name (CamelCase, "
                           "letters, digits and '_')",
                           origin ? origin : "?", spec->name ? spec->name : "(null)");

  weft__op_def_t *def = g_new0(weft__op_def_t, 1);
  def->name = g_strdup(spec->name);
  def->origin = g_strdup(origin ? origin : "");
  def->inputs = g_ptr_array_new_with_free_func(arg_def_free);
  def->outputs = g_ptr_array_new_with_free_func(arg_def_free);
  def->attrs = g_ptr_array_new_with_free_func(attr_def_free);
  if (spec->struct_size >= offsetof(weft_op_def_t, is_stateful) + sizeof(spec->is_stateful))
    def->is_stateful = spec->is_stateful != 0;
  if (spec->struct_size >= offsetof(weft_op_def_t, shape_fn) + sizeof(spec->shape_fn))
    def->shape_fn = spec->shape_fn;

  weft_status_t *status = NULL;
  /* Attrs first: args refer to them. */
  for (const char *const *a = spec->attrs; a != NULL && *a != NULL; a++) {
    weft__attr_def_t *attr = NULL;
    status = parse_attr(def->name, *a, &attr);
    if (status) goto fail;
    if (find_attr_in(def->attrs, attr->name) != NULL) {
      spec_ref_t ref = {def->name, "attr", *a};
      status = bad_spec(&ref, "attr '%s' is declared twice", attr->name);
      attr_def_free(attr);
      goto fail;
    }
    g_ptr_array_add(def->attrs, attr);
  }
  for (int which = 0; which < 2; which++) {
    const char *const *specs = which == 0 ? spec->inputs : spec->outputs;
    GPtrArray *args = which == 0 ? def->inputs : def->outputs;
    const char *what = which == 0 ? "input" : "output";
    for (const char *const *s = specs; s != NULL && *s != NULL; s++) {
      weft__arg_def_t *arg = NULL;
      status = parse_arg(def->name, what, *s, def->attrs, &arg);
      if (status) goto fail;
      for (guint i = 0; i < args->len; i++) {
        if (strcmp(((weft__arg_def_t *)args->pdata[i])->name, arg->name) == 0) {
          spec_ref_t ref = {def->name, what, *s};
          status = bad_spec(&ref, "%s '%s' is declared twice", what, arg->name);
          arg_def_free(arg);
          goto fail;
        }
      }
      g_ptr_array_add(args, arg);
    }
  }
  *out = def;
  return NULL;
fail:
  weft__op_def_free(def);
  return status;
}

void weft__op_def_free(weft__op_def_t *def) {
  if (def == NULL) return;
  g_free(def->name);
  g_free(def->origin);
  if (def->inputs) g_ptr_array_unref(def->inputs);
  if (def->outputs) g_ptr_array_unref(def->outputs);
  if (def->attrs) g_ptr_array_unref(def->attrs);
  g_free(def);
}

const weft__attr_def_t *weft__op_def_find_attr(const weft__op_def_t *def, const char *name) {
  if (def == NULL || name == NULL) return NULL;
  return find_attr_in(def->attrs, name);
}

/* ---------------------------------------------------------------------------------------------
 * Op registries. Written rarely (creation, plugin loading), read on every node creation and
 * kernel lookup, so readers share a GRWLock. Definitions are never freed while their registry
 * lives, except those a failed plugin registered, which nothing has looked up yet. */

struct weft__op_registry {
  GRWLock lock;
  GHashTable *by_name; /* name (owned by the def) -> weft__op_def_t*, owned or borrowed */
  GPtrArray *owned;    /* the weft__op_def_t* this registry frees */
};

static weft_status_t *registry_add_locked(weft__op_registry_t *reg, weft__op_def_t *def,
                                          bool take) {
  const weft__op_def_t *existing = g_hash_table_lookup(reg->by_name, def->name);
  if (existing != NULL) {
    weft_status_t *status =
        weft_status_new(WEFT_ALREADY_EXISTS, "op '%s' from %s is already registered (by %s)",
                        def->name, def->origin, existing->origin);
    if (take) weft__op_def_free(def);
    return status;
  }
  g_hash_table_insert(reg->by_name, def->name, def);
  if (take) g_ptr_array_add(reg->owned, def);
  return NULL;
}

static weft_status_t *registry_add(weft__op_registry_t *reg, weft__op_def_t *def, bool take) {
  g_rw_lock_writer_lock(&reg->lock);
  weft_status_t *status = registry_add_locked(reg, def, take);
  g_rw_lock_writer_unlock(&reg->lock);
  return status;
}

static void register_table(weft__op_registry_t *reg, const weft_op_def_t *table) {
  for (const weft_op_def_t *spec = table; spec->name != NULL; spec++) {
    weft__op_def_t *def = NULL;
    weft_status_t *status = weft__op_def_parse(spec, "core", &def);
    if (status == NULL) status = registry_add(reg, def, true);
    if (status != NULL) {
      /* A built-in that does not parse is a bug in this file set, not a user error. */
      g_critical("standard op %s: %s", spec->name, weft_status_message(status));
      weft_status_free(status);
    }
  }
}

weft__op_registry_t *weft__op_registry_new(void) {
  weft__op_registry_t *reg = g_new0(weft__op_registry_t, 1);
  g_rw_lock_init(&reg->lock);
  reg->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  reg->owned = g_ptr_array_new_with_free_func((GDestroyNotify)weft__op_def_free);
  /* The standard ops go in first, so a plugin cannot take a standard op's name. */
  register_table(reg, weft__ops_control);
  register_table(reg, weft__ops_array);
  register_table(reg, weft__ops_math);
  register_table(reg, weft__ops_nn);
  register_table(reg, weft__ops_state);
  register_table(reg, weft__ops_random);
  register_table(reg, weft__ops_image);
  register_table(reg, weft__ops_imgproc);
  register_table(reg, weft__ops_conv);
  register_table(reg, weft__ops_nn_grad);
  register_table(reg, weft__ops_array_extra);
  register_table(reg, weft__ops_scatter);
  register_table(reg, weft__ops_search);
  register_table(reg, weft__ops_einsum);
  register_table(reg, weft__ops_ctc);
  register_table(reg, weft__ops_bits);
  register_table(reg, weft__ops_special);
  register_table(reg, weft__ops_nn_extra);
  register_table(reg, weft__ops_linalg);
  register_table(reg, weft__ops_svd_misc);
  register_table(reg, weft__ops_sparse);
  register_table(reg, weft__ops_control_flow);
  register_table(reg, weft__ops_tensor_array);
  register_table(reg, weft__ops_stack);
  register_table(reg, weft__ops_resource_vars);
  register_table(reg, weft__ops_resource_apply);
  register_table(reg, weft__ops_functional);
  register_table(reg, weft__ops_parsing);
  register_table(reg, weft__ops_io);
  register_table(reg, weft__ops_distributed);
  register_table(reg, weft__ops_fused);
  register_table(reg, weft__ops_summary);
  register_table(reg, weft__ops_ragged);
  register_table(reg, weft__ops_sparse_apply);
  register_table(reg, weft__ops_string);
  register_table(reg, weft__ops_codec);
  return reg;
}

void weft__op_registry_free(weft__op_registry_t *reg) {
  if (reg == NULL) return;
  g_hash_table_destroy(reg->by_name);
  g_ptr_array_free(reg->owned, TRUE);
  g_rw_lock_clear(&reg->lock);
  g_free(reg);
}

weft_status_t *weft__op_registry_insert(weft__op_registry_t *reg, weft__op_def_t *def) {
  if (def == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "op registry: NULL definition");
  return registry_add(reg, def, true);
}

void weft__op_registry_share_origin(weft__op_registry_t *dst, weft__op_registry_t *src,
                                    const char *origin) {
  GPtrArray *defs = g_ptr_array_new();
  g_rw_lock_reader_lock(&src->lock);
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, src->by_name);
  while (g_hash_table_iter_next(&it, NULL, &v))
    if (g_strcmp0(((weft__op_def_t *)v)->origin, origin) == 0) g_ptr_array_add(defs, v);
  g_rw_lock_reader_unlock(&src->lock);
  for (guint k = 0; k < defs->len; k++) weft_status_free(registry_add(dst, defs->pdata[k], false));
  g_ptr_array_free(defs, TRUE);
}

const weft__op_def_t *weft__op_registry_find(weft__op_registry_t *reg, const char *name) {
  if (reg == NULL || name == NULL) return NULL;
  g_rw_lock_reader_lock(&reg->lock);
  const weft__op_def_t *def = g_hash_table_lookup(reg->by_name, name);
  g_rw_lock_reader_unlock(&reg->lock);
  return def;
}

int weft__op_registry_size(weft__op_registry_t *reg) {
  g_rw_lock_reader_lock(&reg->lock);
  int n = (int)g_hash_table_size(reg->by_name);
  g_rw_lock_reader_unlock(&reg->lock);
  return n;
}

/* The process's op registry: the default registry's ops. Creating it is where the standard ops
 * are registered for the process; it loads no plugin. */
static gpointer create_process_ops(gpointer unused) {
  (void)unused;
  return weft__op_registry_new();
}

weft__op_registry_t *weft__op_registry_process(void) {
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, create_process_ops, NULL);
}

static void (*process_ops_loader)(void);

void weft__op_registry_set_process_loader(void (*load)(void)) { process_ops_loader = load; }

const weft__op_def_t *weft__op_registry_find_loading(weft__op_registry_t *reg, const char *name) {
  const weft__op_def_t *def = weft__op_registry_find(reg, name);
  if (def == NULL && name != NULL && reg == weft__op_registry_process() && process_ops_loader) {
    process_ops_loader();
    def = weft__op_registry_find(reg, name);
  }
  return def;
}

/* Takes ownership of def even on failure (it is freed then). */
weft_status_t *weft__op_registry_add(weft__op_def_t *def) {
  return weft__op_registry_insert(weft__op_registry_process(), def);
}

void weft__op_registry_remove(const char *name) {
  if (name == NULL) return;
  weft__op_registry_t *reg = weft__op_registry_process();
  g_rw_lock_writer_lock(&reg->lock);
  weft__op_def_t *def = g_hash_table_lookup(reg->by_name, name);
  if (def != NULL) {
    g_hash_table_remove(reg->by_name, name);
    g_ptr_array_remove_fast(reg->owned, def); /* frees it */
  }
  g_rw_lock_writer_unlock(&reg->lock);
}

const weft__op_def_t *weft__op_registry_lookup(const char *name) {
  return weft__op_registry_find(weft__op_registry_process(), name);
}

void weft__ops_register_standard(void) { (void)weft__op_registry_process(); }

/* ---------------------------------------------------------------------------------------------
 * Shape-function helpers (ops_shape.h). They go through the host table like a plugin would, so
 * the standard ops exercise the same path plugin ops use. */

void weft__sh_input(weft_shape_ctx_t *ctx, int index, weft__shape_t *out) {
  const weft_host_t *h = weft__graph_host();
  memset(out, 0, sizeof *out);
  out->rank = -1;
  if (index < 0 || index >= h->shape_num_inputs(ctx)) return;
  int rank = h->shape_input(ctx, index, out->dims);
  out->rank = rank > WEFT_MAX_RANK ? -1 : rank;
  for (int i = 0; i < out->rank; i++)
    if (out->dims[i] < 0) out->dims[i] = WEFT_DIM_UNKNOWN;
}

weft_status_t *weft__sh_output(weft_shape_ctx_t *ctx, int index, const weft__shape_t *shape) {
  return weft__graph_host()->shape_set_output(ctx, index, shape->rank, shape->dims);
}

weft_status_t *weft__sh_error(weft_shape_ctx_t *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  const weft_host_t *h = weft__graph_host();
  const char *node = h->shape_node_name(ctx);
  weft_status_t *status =
      h->status_new(WEFT_INVALID_ARGUMENT, "node '%s': %s", node ? node : "?", msg);
  g_free(msg);
  return status;
}

char *weft__sh_str(const weft__shape_t *shape) {
  return weft__shape_to_string(shape->rank, shape->dims);
}

static bool const_view(weft_shape_ctx_t *ctx, int index, weft_tensor_view_t *view) {
  const weft_host_t *h = weft__graph_host();
  if (index < 0 || index >= h->shape_num_inputs(ctx)) return false;
  memset(view, 0, sizeof *view);
  view->struct_size = sizeof *view;
  weft_status_t *status = h->shape_input_const(ctx, index, view);
  if (status != NULL) {
    h->status_free(status);
    return false;
  }
  return view->data != NULL || view->num_elements == 0;
}

/* Element i of a host view as a double; false for dtypes that are not real numbers. */
static bool view_double(const weft_tensor_view_t *v, int64_t i, double *out) {
  const void *d = v->data;
  switch (v->dtype) {
    case WEFT_DT_FLOAT: *out = ((const float *)d)[i]; return true;
    case WEFT_DT_DOUBLE: *out = ((const double *)d)[i]; return true;
    case WEFT_DT_HALF: *out = weft__half_to_float(((const uint16_t *)d)[i]); return true;
    case WEFT_DT_BFLOAT16: *out = weft__bfloat16_to_float(((const uint16_t *)d)[i]); return true;
    case WEFT_DT_INT8: *out = ((const int8_t *)d)[i]; return true;
    case WEFT_DT_INT16: *out = ((const int16_t *)d)[i]; return true;
    case WEFT_DT_INT32: *out = ((const int32_t *)d)[i]; return true;
    case WEFT_DT_INT64: *out = (double)((const int64_t *)d)[i]; return true;
    case WEFT_DT_UINT8: *out = ((const uint8_t *)d)[i]; return true;
    case WEFT_DT_UINT16: *out = ((const uint16_t *)d)[i]; return true;
    case WEFT_DT_UINT32: *out = ((const uint32_t *)d)[i]; return true;
    case WEFT_DT_UINT64: *out = (double)((const uint64_t *)d)[i]; return true;
    case WEFT_DT_BOOL: *out = ((const uint8_t *)d)[i] != 0; return true;
    default: return false;
  }
}

static bool view_int(const weft_tensor_view_t *v, int64_t i, int64_t *out) {
  const void *d = v->data;
  switch (v->dtype) {
    case WEFT_DT_INT8: *out = ((const int8_t *)d)[i]; return true;
    case WEFT_DT_INT16: *out = ((const int16_t *)d)[i]; return true;
    case WEFT_DT_INT32: *out = ((const int32_t *)d)[i]; return true;
    case WEFT_DT_INT64: *out = ((const int64_t *)d)[i]; return true;
    case WEFT_DT_UINT8: *out = ((const uint8_t *)d)[i]; return true;
    case WEFT_DT_UINT16: *out = ((const uint16_t *)d)[i]; return true;
    case WEFT_DT_UINT32: *out = ((const uint32_t *)d)[i]; return true;
    case WEFT_DT_UINT64: *out = (int64_t)((const uint64_t *)d)[i]; return true;
    case WEFT_DT_BOOL: *out = ((const uint8_t *)d)[i] != 0; return true;
    default: return false;
  }
}

bool weft__sh_const_ints(weft_shape_ctx_t *ctx, int index, int64_t **values, int64_t *n,
                         int *rank) {
  weft_tensor_view_t view;
  if (!const_view(ctx, index, &view)) return false;
  int64_t count = view.num_elements;
  if (count < 0) return false;
  int64_t *vals = g_new0(int64_t, count > 0 ? count : 1);
  for (int64_t i = 0; i < count; i++) {
    if (!view_int(&view, i, &vals[i])) {
      g_free(vals);
      return false;
    }
  }
  *values = vals;
  *n = count;
  if (rank) *rank = view.rank;
  return true;
}

bool weft__sh_const_doubles(weft_shape_ctx_t *ctx, int index, double **values, int64_t *n,
                            int *rank) {
  weft_tensor_view_t view;
  if (!const_view(ctx, index, &view)) return false;
  int64_t count = view.num_elements;
  if (count < 0) return false;
  double *vals = g_new0(double, count > 0 ? count : 1);
  for (int64_t i = 0; i < count; i++) {
    if (!view_double(&view, i, &vals[i])) {
      g_free(vals);
      return false;
    }
  }
  *values = vals;
  *n = count;
  if (rank) *rank = view.rank;
  return true;
}

weft_status_t *weft__sh_shape_from_tensor(weft_shape_ctx_t *ctx, int index, weft__shape_t *out) {
  memset(out, 0, sizeof *out);
  out->rank = -1;
  int64_t *vals = NULL;
  int64_t n = 0;
  int rank = 0;
  if (weft__sh_const_ints(ctx, index, &vals, &n, &rank)) {
    weft_status_t *status = NULL;
    if (rank > 1) {
      status = weft__sh_error(ctx, "input %d must be a 1-D shape tensor, but has rank %d", index,
                              rank);
    } else if (n > WEFT_MAX_RANK) {
      status = weft__sh_error(ctx, "input %d asks for rank %" G_GINT64_FORMAT
                              ", above the maximum %d", index, n, WEFT_MAX_RANK);
    } else {
      out->rank = (int)n;
      for (int64_t i = 0; i < n && status == NULL; i++) {
        if (vals[i] < -1)
          status = weft__sh_error(ctx, "input %d: dimension %" G_GINT64_FORMAT
                                  " has size %" G_GINT64_FORMAT ", which is negative",
                                  index, i, vals[i]);
        out->dims[i] = vals[i] < 0 ? WEFT_DIM_UNKNOWN : vals[i];
      }
    }
    g_free(vals);
    if (status) out->rank = -1;
    return status;
  }
  weft__shape_t s;
  weft__sh_input(ctx, index, &s);
  if (s.rank > 1) {
    char *str = weft__sh_str(&s);
    weft_status_t *status =
        weft__sh_error(ctx, "input %d must be a 1-D shape tensor, but has shape %s", index, str);
    g_free(str);
    return status;
  }
  if (s.rank == 1 && s.dims[0] >= 0) {
    if (s.dims[0] > WEFT_MAX_RANK)
      return weft__sh_error(ctx, "input %d asks for rank %" G_GINT64_FORMAT
                            ", above the maximum %d", index, s.dims[0], WEFT_MAX_RANK);
    out->rank = (int)s.dims[0];
    for (int i = 0; i < out->rank; i++) out->dims[i] = WEFT_DIM_UNKNOWN;
  } else if (s.rank == 0) {
    out->rank = 0; /* a scalar shape input means a scalar (TensorFlow accepts it) */
  }
  return NULL;
}

int64_t weft__sh_attr_int(weft_shape_ctx_t *ctx, const char *name, int64_t fallback) {
  const weft_host_t *h = weft__graph_host();
  int64_t v = fallback;
  weft_status_t *status = h->attr_int(h->shape_attrs(ctx), name, &v);
  if (status) {
    h->status_free(status);
    return fallback;
  }
  return v;
}

float weft__sh_attr_float(weft_shape_ctx_t *ctx, const char *name, float fallback) {
  const weft_host_t *h = weft__graph_host();
  float v = fallback;
  weft_status_t *status = h->attr_float(h->shape_attrs(ctx), name, &v);
  if (status) {
    h->status_free(status);
    return fallback;
  }
  return v;
}

bool weft__sh_attr_bool(weft_shape_ctx_t *ctx, const char *name, bool fallback) {
  const weft_host_t *h = weft__graph_host();
  int v = fallback;
  weft_status_t *status = h->attr_bool(h->shape_attrs(ctx), name, &v);
  if (status) {
    h->status_free(status);
    return fallback;
  }
  return v != 0;
}

const char *weft__sh_attr_string(weft_shape_ctx_t *ctx, const char *name, const char *fallback) {
  const weft_host_t *h = weft__graph_host();
  const char *v = NULL;
  size_t len = 0;
  weft_status_t *status = h->attr_string(h->shape_attrs(ctx), name, &v, &len);
  if (status) {
    h->status_free(status);
    return fallback;
  }
  return v ? v : fallback;
}

bool weft__sh_attr_int_list(weft_shape_ctx_t *ctx, const char *name, const int64_t **values,
                            size_t *n) {
  const weft_host_t *h = weft__graph_host();
  *values = NULL;
  *n = 0;
  weft_status_t *status = h->attr_int_list(h->shape_attrs(ctx), name, values, n);
  if (status) {
    h->status_free(status);
    *values = NULL;
    *n = 0;
    return false;
  }
  return true;
}

bool weft__sh_merge_dim(int64_t a, int64_t b, int64_t *out) {
  if (a < 0) {
    *out = b < 0 ? WEFT_DIM_UNKNOWN : b;
    return true;
  }
  if (b < 0 || a == b) {
    *out = a;
    return true;
  }
  return false;
}

weft_status_t *weft__sh_merge(weft_shape_ctx_t *ctx, const weft__shape_t *a,
                              const weft__shape_t *b, weft__shape_t *out, const char *what) {
  weft__shape_t result;
  if (a->rank < 0) {
    result = *b;
  } else if (b->rank < 0) {
    result = *a;
  } else {
    bool ok = a->rank == b->rank;
    result.rank = a->rank;
    for (int i = 0; ok && i < a->rank; i++) ok = weft__sh_merge_dim(a->dims[i], b->dims[i],
                                                                   &result.dims[i]);
    if (!ok) {
      char *sa = weft__sh_str(a), *sb = weft__sh_str(b);
      weft_status_t *status =
          weft__sh_error(ctx, "%s must have the same shape, but have %s and %s", what, sa, sb);
      g_free(sa);
      g_free(sb);
      return status;
    }
  }
  *out = result;
  return NULL;
}

weft_status_t *weft__sh_with_rank(weft_shape_ctx_t *ctx, const weft__shape_t *s, int rank,
                                  const char *what) {
  if (s->rank < 0 || s->rank == rank) return NULL;
  char *str = weft__sh_str(s);
  weft_status_t *status =
      weft__sh_error(ctx, "%s must be rank %d but is rank %d (shape %s)", what, rank, s->rank, str);
  g_free(str);
  return status;
}

weft_status_t *weft__sh_with_rank_at_least(weft_shape_ctx_t *ctx, const weft__shape_t *s,
                                           int rank, const char *what) {
  if (s->rank < 0 || s->rank >= rank) return NULL;
  char *str = weft__sh_str(s);
  weft_status_t *status =
      weft__sh_error(ctx, "%s must be at least rank %d but is rank %d (shape %s)",
                                         what, rank, s->rank, str);
  g_free(str);
  return status;
}

weft_status_t *weft__sh_broadcast(weft_shape_ctx_t *ctx, const weft__shape_t *a,
                                  const weft__shape_t *b, weft__shape_t *out) {
  weft_status_t *status = weft__broadcast_shapes(a, b, out);
  if (status == NULL) return NULL;
  weft_status_t *named = weft__sh_error(ctx, "%s", weft_status_message(status));
  weft_status_free(status);
  return named;
}

weft_status_t *weft__sh_axis(weft_shape_ctx_t *ctx, int64_t axis, int rank, const char *what,
                             int *out) {
  if (axis < -(int64_t)rank || axis >= rank)
    return weft__sh_error(ctx, "%s %" G_GINT64_FORMAT " is out of range [%d, %d)", what, axis,
                          -rank, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return NULL;
}

weft_status_t *weft__shape_fn_unchanged(weft_shape_ctx_t *ctx) {
  weft__shape_t s;
  weft__sh_input(ctx, 0, &s);
  return weft__sh_output(ctx, 0, &s);
}

weft_status_t *weft__shape_fn_scalar(weft_shape_ctx_t *ctx) {
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, 0, &s);
}

weft_status_t *weft__shape_fn_broadcast(weft_shape_ctx_t *ctx) {
  weft__shape_t a, b, out;
  weft__sh_input(ctx, 0, &a);
  weft__sh_input(ctx, 1, &b);
  weft_status_t *status = weft__sh_broadcast(ctx, &a, &b, &out);
  if (status) return status;
  return weft__sh_output(ctx, 0, &out);
}

weft_status_t *weft__sh_batch_matmul(weft_shape_ctx_t *ctx, const char *op, bool broadcast) {
  weft__shape_t x, y;
  weft__sh_input(ctx, 0, &x);
  weft__sh_input(ctx, 1, &y);
  char what[64];
  g_snprintf(what, sizeof what, "%s's x", op);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &x, 2, what));
  g_snprintf(what, sizeof what, "%s's y", op);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &y, 2, what));
  if (x.rank < 0 || y.rank < 0) {
    weft__shape_t unknown = {.rank = -1};
    return weft__sh_output(ctx, 0, &unknown);
  }
  bool adj_x = weft__sh_attr_bool(ctx, "adj_x", false);
  bool adj_y = weft__sh_attr_bool(ctx, "adj_y", false);
  int64_t m = x.dims[x.rank - (adj_x ? 1 : 2)], kx = x.dims[x.rank - (adj_x ? 2 : 1)];
  int64_t ky = y.dims[y.rank - (adj_y ? 1 : 2)], n = y.dims[y.rank - (adj_y ? 2 : 1)];
  int64_t k;
  if (!weft__sh_merge_dim(kx, ky, &k)) {
    char *sx = weft__sh_str(&x), *sy = weft__sh_str(&y);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": %s with input shapes %s, %s (adj_x=%s, adj_y=%s)",
        kx, ky, op, sx, sy, adj_x ? "true" : "false", adj_y ? "true" : "false");
    g_free(sx);
    g_free(sy);
    return status;
  }
  weft__shape_t bx = {.rank = x.rank - 2}, by = {.rank = y.rank - 2}, batch;
  memcpy(bx.dims, x.dims, sizeof(int64_t) * (size_t)bx.rank);
  memcpy(by.dims, y.dims, sizeof(int64_t) * (size_t)by.rank);
  if (broadcast) {
    WEFT_RETURN_IF_ERROR(weft__sh_broadcast(ctx, &bx, &by, &batch));
  } else {
    g_snprintf(what, sizeof what, "%s's batch dimensions", op);
    WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &bx, &by, &batch, what));
  }
  batch.dims[batch.rank++] = m;
  batch.dims[batch.rank++] = n;
  return weft__sh_output(ctx, 0, &batch);
}

weft_status_t *weft__sh_merge_non_scalars(weft_shape_ctx_t *ctx, const char *what) {
  int n = weft__graph_host()->shape_num_inputs(ctx);
  weft__shape_t out = {.rank = 0};
  bool any = false;
  for (int i = 0; i < n; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    if (s.rank == 0) continue;
    if (!any) {
      out = s;
      any = true;
      continue;
    }
    WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &out, &s, &out, what));
  }
  return weft__sh_output(ctx, 0, &out);
}

weft_status_t *weft__shape_fn_merge_all(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx);
  weft__shape_t merged = {.rank = -1};
  for (int i = 0; i < n; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    char what[48];
    g_snprintf(what, sizeof what, "inputs 0 and %d", i);
    weft_status_t *status = weft__sh_merge(ctx, &merged, &s, &merged, what);
    if (status) return status;
  }
  return weft__sh_output(ctx, 0, &merged);
}
