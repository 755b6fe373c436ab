/* tensor_json.c: tensors to and from JSON, for the CLI (`weft run --feed x='[[1,2],[3,4]]'`),
 * reports and tests.
 *
 * Input is a JSON number, bool, string or nested array, or the object weft_tensor_to_json writes
 * ({"dtype": .., "shape": .., "values": ..}), so output parses back into the same tensor.
 *
 * The reader is a small parser of its own rather than json-glib's: json-glib keeps integers as
 * gint64 and silently wraps anything larger (18446744073709551615 reads as -1), and reads "-0" as
 * integer 0, so uint64 values and negative zero would not survive a round trip. Values stream
 * straight into a flat list while the shape is checked, which also lets errors name the position
 * of a ragged row. The writer formats numbers itself for exact integers and shortest round-trip
 * floats. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base_internal.h"

typedef enum { LEAF_NUMBER, LEAF_STRING, LEAF_BOOL } leaf_kind_t;

typedef struct {
  leaf_kind_t kind;
  /* Numbers. */
  bool is_int;       /* no fraction or exponent in the literal */
  bool negative;
  bool int_overflow; /* an integer literal beyond 64 bits of magnitude */
  uint64_t magnitude;
  double d;
  const char *text; /* the literal as written, for messages (not NUL-terminated) */
  int text_len;
  /* Strings (owned, NUL-terminated) and bools. */
  char *str;
  size_t len;
  bool b;
} leaf_t;

typedef struct {
  const char *start;
  const char *p;
  GArray *leaves;
  int rank; /* -1 until the first leaf or empty array fixes it */
  int64_t dims[WEFT_MAX_RANK];
  bool dims_known[WEFT_MAX_RANK];
  int64_t path[WEFT_MAX_RANK + 1];
  weft_status_t *error;
} parser_t;

static void leaf_clear(gpointer data) {
  leaf_t *leaf = data;
  g_free(leaf->str);
}

static char *path_string(const int64_t *path, int depth) {
  GString *s = g_string_new("[");
  for (int i = 0; i < depth; i++)
    g_string_append_printf(s, i > 0 ? ",%" G_GINT64_FORMAT : "%" G_GINT64_FORMAT, path[i]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static void fail_syntax(parser_t *ps, const char *what) {
  if (ps->error != NULL) return;
  long offset = (long)(ps->p - ps->start);
  char near[24];
  g_strlcpy(near, ps->p, sizeof near);
  ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "invalid JSON at offset %ld: %s%s%s%s",
                              offset, what, *ps->p ? " near '" : " at the end of the text",
                              *ps->p ? near : "", *ps->p ? "'" : "");
}

static void skip_ws(parser_t *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static bool literal(parser_t *ps, const char *word) {
  size_t n = strlen(word);
  if (strncmp(ps->p, word, n) != 0) return false;
  ps->p += n;
  return true;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool read_hex4(parser_t *ps, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hex_value(ps->p[i]);
    if (h < 0) return false;
    v = v * 16 + (unsigned)h;
  }
  ps->p += 4;
  *out = v;
  return true;
}

/* Reads a JSON string at ps->p (on the opening quote). The caller owns *out. */
static bool parse_string(parser_t *ps, char **out, size_t *len) {
  ps->p++;
  GString *s = g_string_new(NULL);
  for (;;) {
    unsigned char c = (unsigned char)*ps->p;
    if (c == '\0') {
      fail_syntax(ps, "unterminated string");
      break;
    }
    if (c < 0x20) {
      fail_syntax(ps, "control character in a string");
      break;
    }
    if (c == '"') {
      ps->p++;
      *len = s->len;
      *out = g_string_free(s, FALSE);
      return true;
    }
    if (c != '\\') {
      g_string_append_c(s, (char)c);
      ps->p++;
      continue;
    }
    char e = ps->p[1];
    ps->p += 2;
    switch (e) {
      case '"': g_string_append_c(s, '"'); continue;
      case '\\': g_string_append_c(s, '\\'); continue;
      case '/': g_string_append_c(s, '/'); continue;
      case 'b': g_string_append_c(s, '\b'); continue;
      case 'f': g_string_append_c(s, '\f'); continue;
      case 'n': g_string_append_c(s, '\n'); continue;
      case 'r': g_string_append_c(s, '\r'); continue;
      case 't': g_string_append_c(s, '\t'); continue;
      case 'u': {
        unsigned cp;
        if (!read_hex4(ps, &cp)) {
          fail_syntax(ps, "bad \\u escape");
          break;
        }
        if (cp >= 0xd800 && cp < 0xdc00 && ps->p[0] == '\\' && ps->p[1] == 'u') {
          const char *save = ps->p;
          unsigned lo;
          ps->p += 2;
          if (read_hex4(ps, &lo) && lo >= 0xdc00 && lo < 0xe000)
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          else
            ps->p = save;
        }
        /* A lone surrogate has no UTF-8 form; keep the replacement character. */
        if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
        g_string_append_unichar(s, (gunichar)cp);
        continue;
      }
      default:
        ps->p -= 1;
        fail_syntax(ps, "bad escape in a string");
        break;
    }
    break;
  }
  g_string_free(s, TRUE);
  return false;
}

/* Reads a number per JSON's grammar; keeps the exact integer when there is no fraction or
 * exponent. */
static bool parse_number(parser_t *ps, leaf_t *leaf) {
  const char *begin = ps->p;
  const char *q = ps->p;
  leaf->negative = *q == '-';
  if (*q == '-') q++;
  if (*q == '0') {
    q++;
  } else if (*q >= '1' && *q <= '9') {
    while (*q >= '0' && *q <= '9') q++;
  } else {
    fail_syntax(ps, "bad number");
    return false;
  }
  const char *int_end = q;
  leaf->is_int = true;
  if (*q == '.') {
    q++;
    if (!(*q >= '0' && *q <= '9')) {
      ps->p = q;
      fail_syntax(ps, "digits expected after '.'");
      return false;
    }
    while (*q >= '0' && *q <= '9') q++;
    leaf->is_int = false;
  }
  if (*q == 'e' || *q == 'E') {
    q++;
    if (*q == '+' || *q == '-') q++;
    if (!(*q >= '0' && *q <= '9')) {
      ps->p = q;
      fail_syntax(ps, "digits expected in an exponent");
      return false;
    }
    while (*q >= '0' && *q <= '9') q++;
    leaf->is_int = false;
  }
  leaf->kind = LEAF_NUMBER;
  leaf->text = begin;
  leaf->text_len = (int)(q - begin);
  if (leaf->is_int) {
    uint64_t m = 0;
    for (const char *d = begin + (leaf->negative ? 1 : 0); d < int_end; d++) {
      uint64_t digit = (uint64_t)(*d - '0');
      if (m > (UINT64_MAX - digit) / 10) {
        leaf->int_overflow = true;
        break;
      }
      m = m * 10 + digit;
    }
    leaf->magnitude = m;
  }
  /* strtod on a copy: the text after the literal must not extend it (e.g. "0x1p3"). */
  char small[64];
  char *copy = leaf->text_len < (int)sizeof small ? small : g_malloc((size_t)leaf->text_len + 1);
  memcpy(copy, begin, (size_t)leaf->text_len);
  copy[leaf->text_len] = '\0';
  leaf->d = g_ascii_strtod(copy, NULL);
  if (copy != small) g_free(copy);
  ps->p = q;
  return true;
}

static void fail_ragged(parser_t *ps, int depth, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void fail_ragged(parser_t *ps, int depth, const char *fmt, ...) {
  if (ps->error != NULL) return;
  va_list ap;
  va_start(ap, fmt);
  char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *where = path_string(ps->path, depth);
  ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "ragged array at %s: %s", where, what);
  g_free(where);
  g_free(what);
}

static bool parse_value(parser_t *ps, int depth);

static bool parse_array(parser_t *ps, int depth) {
  if (depth >= WEFT_MAX_RANK) {
    char *where = path_string(ps->path, depth);
    ps->error = weft_status_new(WEFT_INVALID_ARGUMENT,
                                "array at %s is nested deeper than the maximum rank %d", where,
                                WEFT_MAX_RANK);
    g_free(where);
    return false;
  }
  if (ps->rank >= 0 && depth >= ps->rank) {
    fail_ragged(ps, depth, "expected a scalar, got an array");
    return false;
  }
  ps->p++; /* '[' */
  int64_t count = 0;
  skip_ws(ps);
  if (*ps->p == ']') {
    ps->p++;
  } else {
    for (;;) {
      ps->path[depth] = count;
      if (!parse_value(ps, depth + 1)) return false;
      count++;
      skip_ws(ps);
      if (*ps->p == ',') {
        ps->p++;
        continue;
      }
      if (*ps->p == ']') {
        ps->p++;
        break;
      }
      fail_syntax(ps, "expected ',' or ']'");
      return false;
    }
  }
  /* The first array to close at each depth is the first one there, so it sets the length. */
  if (!ps->dims_known[depth]) {
    ps->dims_known[depth] = true;
    ps->dims[depth] = count;
  } else if (ps->dims[depth] != count) {
    fail_ragged(ps, depth, "expected %" G_GINT64_FORMAT " elements, got %" G_GINT64_FORMAT,
                ps->dims[depth], count);
    return false;
  }
  if (count == 0 && ps->rank < 0) ps->rank = depth + 1;
  return true;
}

static const char *leaf_kind_name(const leaf_t *leaf) {
  switch (leaf->kind) {
    case LEAF_NUMBER: return "a number";
    case LEAF_STRING: return "a string";
    case LEAF_BOOL: return "a bool";
  }
  return "a value";
}

static bool parse_value(parser_t *ps, int depth) {
  skip_ws(ps);
  char c = *ps->p;
  if (c == '[') return parse_array(ps, depth);
  leaf_t leaf;
  memset(&leaf, 0, sizeof leaf);
  if (c == '"') {
    if (!parse_string(ps, &leaf.str, &leaf.len)) return false;
    leaf.kind = LEAF_STRING;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    if (!parse_number(ps, &leaf)) return false;
  } else if (literal(ps, "true")) {
    leaf.kind = LEAF_BOOL;
    leaf.b = true;
  } else if (literal(ps, "false")) {
    leaf.kind = LEAF_BOOL;
    leaf.b = false;
  } else if (literal(ps, "null")) {
    char *where = path_string(ps->path, depth);
    ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "null at %s is not a tensor value", where);
    g_free(where);
    return false;
  } else if (c == '{') {
    char *where = path_string(ps->path, depth);
    ps->error = weft_status_new(WEFT_INVALID_ARGUMENT,
                                "object at %s: tensor values are numbers, bools or strings",
                                where);
    g_free(where);
    return false;
  } else {
    fail_syntax(ps, "expected a value");
    return false;
  }
  if (ps->rank < 0) ps->rank = depth;
  if (depth != ps->rank) {
    if (ps->dims_known[depth])
      fail_ragged(ps, depth, "expected an array of %" G_GINT64_FORMAT " elements, got %s",
                  ps->dims[depth], leaf_kind_name(&leaf));
    else
      fail_ragged(ps, depth, "expected an array, got %s", leaf_kind_name(&leaf));
    g_free(leaf.str);
    return false;
  }
  g_array_append_val(ps->leaves, leaf);
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * Leaves to elements */

static bool is_nan_like(const leaf_t *leaf, double *value) {
  if (leaf->kind != LEAF_STRING) return false;
  const char *s = leaf->str;
  if (g_ascii_strcasecmp(s, "nan") == 0) {
    *value = NAN;
  } else if (g_ascii_strcasecmp(s, "infinity") == 0 || g_ascii_strcasecmp(s, "inf") == 0 ||
             g_ascii_strcasecmp(s, "+infinity") == 0 || g_ascii_strcasecmp(s, "+inf") == 0) {
    *value = INFINITY;
  } else if (g_ascii_strcasecmp(s, "-infinity") == 0 || g_ascii_strcasecmp(s, "-inf") == 0) {
    *value = -INFINITY;
  } else {
    return false;
  }
  return true;
}

static weft_dtype_t infer_dtype(const GArray *leaves, weft_status_t **error) {
  bool has_bool = false, has_number = false, has_float = false, has_string = false;
  bool has_nan_like = false, beyond_int32 = false, beyond_int64 = false, has_negative = false;
  for (guint i = 0; i < leaves->len; i++) {
    const leaf_t *leaf = &g_array_index(leaves, leaf_t, i);
    double unused;
    switch (leaf->kind) {
      case LEAF_BOOL: has_bool = true; break;
      case LEAF_STRING:
        if (is_nan_like(leaf, &unused))
          has_nan_like = true;
        else
          has_string = true;
        break;
      case LEAF_NUMBER:
        has_number = true;
        if (!leaf->is_int) {
          has_float = true;
        } else {
          if (leaf->negative && leaf->magnitude > 0) has_negative = true;
          if (leaf->int_overflow)
            beyond_int64 = beyond_int32 = true;
          else if (leaf->magnitude > (leaf->negative ? 2147483648u : 2147483647u))
            beyond_int32 = true;
          if (!leaf->int_overflow &&
              leaf->magnitude > (leaf->negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
            beyond_int64 = true;
        }
        break;
    }
  }
  if (has_bool && (has_number || has_string || has_nan_like)) {
    *error = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "cannot infer a dtype: bools mixed with numbers or strings");
    return WEFT_DT_INVALID;
  }
  if (has_bool) return WEFT_DT_BOOL;
  if (has_string && has_number) {
    *error = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "cannot infer a dtype: strings mixed with numbers");
    return WEFT_DT_INVALID;
  }
  if (has_string || (has_nan_like && !has_number)) return WEFT_DT_STRING;
  if (has_float || has_nan_like) return WEFT_DT_FLOAT;
  if (!has_number) return WEFT_DT_FLOAT; /* [] : TensorFlow's default for an empty list */
  /* Integers that int32 cannot hold widen, as TensorFlow and numpy do. */
  if (!beyond_int32) return WEFT_DT_INT32;
  if (!beyond_int64) return WEFT_DT_INT64;
  if (!has_negative) return WEFT_DT_UINT64;
  *error = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "cannot infer a dtype: integers beyond int64 mixed with negative ones");
  return WEFT_DT_INVALID;
}

static char *position_string(int rank, const int64_t *dims, int64_t index) {
  if (rank == 0) return g_strdup("");
  int64_t path[WEFT_MAX_RANK];
  for (int i = rank - 1; i >= 0; i--) {
    path[i] = dims[i] > 0 ? index % dims[i] : 0;
    index = dims[i] > 0 ? index / dims[i] : 0;
  }
  char *p = path_string(path, rank);
  char *s = g_strdup_printf(" at %s", p);
  g_free(p);
  return s;
}

static char *leaf_text(const leaf_t *leaf) {
  switch (leaf->kind) {
    case LEAF_NUMBER: return g_strndup(leaf->text, (gsize)leaf->text_len);
    case LEAF_BOOL: return g_strdup(leaf->b ? "true" : "false");
    case LEAF_STRING: {
      char *escaped = g_strescape(leaf->str, NULL);
      char *s = g_strdup_printf("\"%s\"", escaped);
      g_free(escaped);
      return s;
    }
  }
  return g_strdup("?");
}

typedef enum { CONV_OK, CONV_RANGE, CONV_NOT_INTEGER, CONV_WRONG_KIND } conv_result_t;

static conv_result_t leaf_to_float(const leaf_t *leaf, bool accept_nan_strings, double *out) {
  if (leaf->kind == LEAF_STRING) {
    if (accept_nan_strings && is_nan_like(leaf, out)) return CONV_OK;
    return CONV_WRONG_KIND;
  }
  if (leaf->kind != LEAF_NUMBER) return CONV_WRONG_KIND;
  if (!isfinite(leaf->d)) return CONV_RANGE; /* 1e400 */
  *out = leaf->d;
  return CONV_OK;
}

/* Integer value of a leaf within [min, max] (as signed) or [0, umax] (unsigned). */
static conv_result_t leaf_to_int(const leaf_t *leaf, bool is_unsigned, int64_t min, int64_t max,
                                 uint64_t umax, int64_t *s_out, uint64_t *u_out) {
  if (leaf->kind == LEAF_BOOL || leaf->kind == LEAF_STRING) return CONV_WRONG_KIND;
  if (leaf->is_int) {
    if (leaf->int_overflow) return CONV_RANGE;
    if (is_unsigned) {
      if (leaf->negative && leaf->magnitude > 0) return CONV_RANGE;
      if (leaf->magnitude > umax) return CONV_RANGE;
      *u_out = leaf->magnitude;
      return CONV_OK;
    }
    if (leaf->negative) {
      if (leaf->magnitude > (uint64_t)(-(min + 1)) + 1) return CONV_RANGE;
      *s_out = leaf->magnitude == 0 ? 0 : -(int64_t)(leaf->magnitude - 1) - 1;
    } else {
      if (leaf->magnitude > (uint64_t)max) return CONV_RANGE;
      *s_out = (int64_t)leaf->magnitude;
    }
    return CONV_OK;
  }
  /* A literal like 2.0 or 1e3 names an integer; 1.5 does not. */
  double d = leaf->d;
  if (!isfinite(d)) return CONV_RANGE;
  if (d != floor(d)) return CONV_NOT_INTEGER;
  if (is_unsigned) {
    if (d < 0 || d >= 18446744073709551616.0 || d > (double)umax) return CONV_RANGE;
    *u_out = (uint64_t)d;
    if (*u_out > umax) return CONV_RANGE;
    return CONV_OK;
  }
  if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return CONV_RANGE;
  int64_t v = (int64_t)d;
  if (v < min || v > max) return CONV_RANGE;
  *s_out = v;
  return CONV_OK;
}

/* Writes every leaf into host tensor t; returns a status naming the first value that does not
 * fit. */
static weft_status_t *fill_tensor(weft_tensor_t *t, const GArray *leaves) {
  void *data = weft_tensor_data(t);
  weft_dtype_t dtype = t->dtype;
  for (guint i = 0; i < leaves->len; i++) {
    const leaf_t *leaf = &g_array_index(leaves, leaf_t, i);
    conv_result_t r = CONV_OK;
    double d = 0;
    int64_t s = 0;
    uint64_t u = 0;
    switch (dtype) {
      case WEFT_DT_FLOAT:
      case WEFT_DT_HALF:
      case WEFT_DT_BFLOAT16: {
        r = leaf_to_float(leaf, true, &d);
        if (r != CONV_OK) break;
        float f = (float)d;
        if (isinf(f) && isfinite(d)) {
          r = CONV_RANGE;
          break;
        }
        if (dtype == WEFT_DT_FLOAT) {
          ((float *)data)[i] = f;
        } else {
          uint16_t bits =
              dtype == WEFT_DT_HALF ? weft__float_to_half(f) : weft__float_to_bfloat16(f);
          float back =
              dtype == WEFT_DT_HALF ? weft__half_to_float(bits) : weft__bfloat16_to_float(bits);
          if (isinf(back) && isfinite(f)) {
            r = CONV_RANGE;
            break;
          }
          ((uint16_t *)data)[i] = bits;
        }
        break;
      }
      case WEFT_DT_DOUBLE:
        r = leaf_to_float(leaf, true, &d);
        if (r == CONV_OK) ((double *)data)[i] = d;
        break;
      case WEFT_DT_INT8:
        r = leaf_to_int(leaf, false, INT8_MIN, INT8_MAX, 0, &s, &u);
        if (r == CONV_OK) ((int8_t *)data)[i] = (int8_t)s;
        break;
      case WEFT_DT_INT16:
        r = leaf_to_int(leaf, false, INT16_MIN, INT16_MAX, 0, &s, &u);
        if (r == CONV_OK) ((int16_t *)data)[i] = (int16_t)s;
        break;
      case WEFT_DT_INT32:
        r = leaf_to_int(leaf, false, INT32_MIN, INT32_MAX, 0, &s, &u);
        if (r == CONV_OK) ((int32_t *)data)[i] = (int32_t)s;
        break;
      case WEFT_DT_INT64:
        r = leaf_to_int(leaf, false, INT64_MIN, INT64_MAX, 0, &s, &u);
        if (r == CONV_OK) ((int64_t *)data)[i] = s;
        break;
      case WEFT_DT_UINT8:
        r = leaf_to_int(leaf, true, 0, 0, UINT8_MAX, &s, &u);
        if (r == CONV_OK) ((uint8_t *)data)[i] = (uint8_t)u;
        break;
      case WEFT_DT_UINT16:
        r = leaf_to_int(leaf, true, 0, 0, UINT16_MAX, &s, &u);
        if (r == CONV_OK) ((uint16_t *)data)[i] = (uint16_t)u;
        break;
      case WEFT_DT_UINT32:
        r = leaf_to_int(leaf, true, 0, 0, UINT32_MAX, &s, &u);
        if (r == CONV_OK) ((uint32_t *)data)[i] = (uint32_t)u;
        break;
      case WEFT_DT_UINT64:
        r = leaf_to_int(leaf, true, 0, 0, UINT64_MAX, &s, &u);
        if (r == CONV_OK) ((uint64_t *)data)[i] = u;
        break;
      case WEFT_DT_BOOL:
        /* JSON true/false, and 0/1 as numpy accepts them. */
        if (leaf->kind == LEAF_BOOL) {
          ((uint8_t *)data)[i] = leaf->b ? 1 : 0;
        } else if (leaf->kind == LEAF_NUMBER && leaf->is_int && leaf->magnitude <= 1 &&
                   !(leaf->negative && leaf->magnitude == 1)) {
          ((uint8_t *)data)[i] = (uint8_t)leaf->magnitude;
        } else {
          r = CONV_WRONG_KIND;
        }
        break;
      case WEFT_DT_STRING:
        if (leaf->kind != LEAF_STRING) {
          r = CONV_WRONG_KIND;
          break;
        }
        weft_status_free(weft_tensor_set_string(t, (int64_t)i, leaf->str, leaf->len));
        break;
      default:
        return weft_status_new(WEFT_UNIMPLEMENTED, "JSON values for dtype %s are not supported",
                               weft_dtype_name(dtype));
    }
    if (r == CONV_OK) continue;
    char *value = leaf_text(leaf);
    char *where = position_string(t->rank, t->dims, (int64_t)i);
    weft_status_t *status;
    if (r == CONV_RANGE)
      status = weft_status_new(WEFT_INVALID_ARGUMENT, "value %s%s is out of range for %s", value,
                               where, weft_dtype_name(dtype));
    else if (r == CONV_NOT_INTEGER)
      status = weft_status_new(WEFT_INVALID_ARGUMENT, "value %s%s is not an integer, as %s needs",
                               value, where, weft_dtype_name(dtype));
    else
      status = weft_status_new(WEFT_INVALID_ARGUMENT, "value %s%s is %s, not a %s value", value,
                               where, leaf_kind_name(leaf), weft_dtype_name(dtype));
    g_free(value);
    g_free(where);
    return status;
  }
  return NULL;
}

/* The object form {"dtype": .., "shape": [..], "values": ..}. */
static bool parse_object(parser_t *ps, bool *have_dtype, weft_dtype_t *dtype, int *shape_rank,
                         int64_t *shape) {
  ps->p++; /* '{' */
  bool have_values = false;
  skip_ws(ps);
  if (*ps->p == '}') {
    ps->p++;
  } else {
    for (;;) {
      skip_ws(ps);
      if (*ps->p != '"') {
        fail_syntax(ps, "expected a key");
        return false;
      }
      char *key = NULL;
      size_t key_len = 0;
      if (!parse_string(ps, &key, &key_len)) return false;
      skip_ws(ps);
      if (*ps->p != ':') {
        g_free(key);
        fail_syntax(ps, "expected ':'");
        return false;
      }
      ps->p++;
      skip_ws(ps);
      bool ok = true;
      if (strcmp(key, "values") == 0 && !have_values) {
        have_values = true;
        ok = parse_value(ps, 0);
      } else if (strcmp(key, "dtype") == 0 && !*have_dtype) {
        char *name = NULL;
        size_t name_len = 0;
        if (*ps->p != '"') {
          fail_syntax(ps, "expected a dtype name");
          ok = false;
        } else if ((ok = parse_string(ps, &name, &name_len))) {
          if (!weft_dtype_from_name(name, dtype)) {
            ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "unknown dtype \"%s\"", name);
            ok = false;
          }
          *have_dtype = true;
          g_free(name);
        }
      } else if (strcmp(key, "shape") == 0 && *shape_rank < 0) {
        *shape_rank = 0;
        if (*ps->p != '[') {
          fail_syntax(ps, "expected the shape as an array");
          ok = false;
        } else {
          ps->p++;
          skip_ws(ps);
          while (ok && *ps->p != ']') {
            leaf_t dim;
            memset(&dim, 0, sizeof dim);
            if (*shape_rank >= WEFT_MAX_RANK) {
              ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "shape has more than %d dims",
                                          WEFT_MAX_RANK);
              ok = false;
            } else if (!parse_number(ps, &dim)) {
              ok = false;
            } else if (!dim.is_int || dim.int_overflow || (dim.negative && dim.magnitude > 0) ||
                       dim.magnitude > (uint64_t)INT64_MAX) {
              ps->error = weft_status_new(WEFT_INVALID_ARGUMENT,
                                          "shape dim %.*s is not a non-negative integer",
                                          dim.text_len, dim.text);
              ok = false;
            } else {
              shape[(*shape_rank)++] = (int64_t)dim.magnitude;
              skip_ws(ps);
              if (*ps->p == ',') {
                ps->p++;
                skip_ws(ps);
              } else if (*ps->p != ']') {
                fail_syntax(ps, "expected ',' or ']' in the shape");
                ok = false;
              }
            }
          }
          if (ok) ps->p++;
        }
      } else {
        ps->error = weft_status_new(WEFT_INVALID_ARGUMENT,
                                    "unexpected or repeated key \"%s\" in a tensor object "
                                    "(keys are dtype, shape, values)",
                                    key);
        ok = false;
      }
      g_free(key);
      if (!ok) return false;
      skip_ws(ps);
      if (*ps->p == ',') {
        ps->p++;
        continue;
      }
      if (*ps->p == '}') {
        ps->p++;
        break;
      }
      fail_syntax(ps, "expected ',' or '}'");
      return false;
    }
  }
  if (!have_values) {
    ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "tensor object has no \"values\"");
    return false;
  }
  return true;
}

weft_tensor_t *weft_tensor_from_json(const char *json, weft_dtype_t dtype, weft_status_t **status) {
  weft_status_t *local = NULL;
  weft_tensor_t *tensor = NULL;
  parser_t ps;
  memset(&ps, 0, sizeof ps);
  ps.rank = -1;
  ps.leaves = g_array_new(FALSE, FALSE, sizeof(leaf_t));
  g_array_set_clear_func(ps.leaves, leaf_clear);
  bool have_obj_dtype = false;
  weft_dtype_t obj_dtype = WEFT_DT_INVALID;
  int shape_rank = -1;
  int64_t shape[WEFT_MAX_RANK] = {0};

  if (json == NULL) {
    local = weft_status_new(WEFT_INVALID_ARGUMENT, "weft_tensor_from_json: json is NULL");
    goto done;
  }
  if (dtype != WEFT_DT_INVALID &&
      (weft__dtype_is_ref((int)dtype) || !weft__dtype_is_valid((int)dtype))) {
    local = weft_status_new(WEFT_INVALID_ARGUMENT, "weft_tensor_from_json: invalid dtype %d",
                            (int)dtype);
    goto done;
  }
  ps.start = ps.p = json;
  skip_ws(&ps);
  bool ok = *ps.p == '{' ? parse_object(&ps, &have_obj_dtype, &obj_dtype, &shape_rank, shape)
                         : parse_value(&ps, 0);
  if (ok) {
    skip_ws(&ps);
    if (*ps.p != '\0') fail_syntax(&ps, "unexpected text after the value");
  }
  if (ps.error != NULL) {
    local = weft__status_take(&ps.error);
    goto done;
  }

  if (have_obj_dtype) {
    if (dtype != WEFT_DT_INVALID && dtype != obj_dtype) {
      local = weft_status_new(WEFT_INVALID_ARGUMENT,
                              "the JSON says dtype %s but %s was asked for",
                              weft_dtype_name(obj_dtype), weft_dtype_name(dtype));
      goto done;
    }
    dtype = obj_dtype;
  }
  if (dtype == WEFT_DT_INVALID) {
    dtype = infer_dtype(ps.leaves, &local);
    if (local != NULL) goto done;
  }

  int rank = ps.rank < 0 ? 0 : ps.rank;
  int64_t *dims = ps.dims;
  if (shape_rank >= 0) {
    int64_t n = weft__shape_num_elements(shape_rank, shape);
    if (n != (int64_t)ps.leaves->len) {
      char *want = weft__shape_to_string(shape_rank, shape);
      local = weft_status_new(WEFT_INVALID_ARGUMENT,
                              "shape %s needs %" G_GINT64_FORMAT " values, the JSON has %u", want,
                              n, ps.leaves->len);
      g_free(want);
      goto done;
    }
    rank = shape_rank;
    dims = shape;
  }
  local = weft__tensor_alloc(NULL, dtype, rank, dims, &tensor);
  if (local == NULL) local = fill_tensor(tensor, ps.leaves);

done:
  if (local != NULL) {
    weft_tensor_unref(tensor);
    tensor = NULL;
  }
  weft_status_free(ps.error);
  g_array_free(ps.leaves, TRUE);
  if (status != NULL)
    *status = local;
  else
    weft_status_free(local);
  return tensor;
}

/* ---------------------------------------------------------------------------------------------
 * Writing */

/* Shortest decimal that reads back to the same value of the dtype. */
static void append_float(GString *s, weft_dtype_t dtype, const void *data, int64_t i) {
  double v;
  int first, last;
  switch (dtype) {
    case WEFT_DT_DOUBLE: v = ((const double *)data)[i]; first = 15; last = 17; break;
    case WEFT_DT_FLOAT: v = ((const float *)data)[i]; first = 6; last = 9; break;
    case WEFT_DT_HALF:
      v = weft__half_to_float(((const uint16_t *)data)[i]); first = 3; last = 9; break;
    default: v = weft__bfloat16_to_float(((const uint16_t *)data)[i]); first = 2; last = 9; break;
  }
  if (isnan(v)) {
    g_string_append(s, "\"NaN\"");
    return;
  }
  if (isinf(v)) {
    g_string_append(s, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return;
  }
  /* Whole numbers every float type holds exactly print in full: 65504 rather than the shorter
   * 6.55e+04 that would also read back as the same float16. */
  if (v == floor(v) && fabs(v) < 16777216.0) {
    g_string_append_printf(s, "%.0f", v); /* no fraction digits, so no locale decimal point */
    return;
  }
  /* `first` is the most digits every decimal of that length survives the trip through the type
   * with (FLT_DIG and friends), so nothing shorter can be missed, except among subnormals, whose
   * precision is lower. */
  double smallest_normal = dtype == WEFT_DT_DOUBLE ? 2.2250738585072014e-308
                           : dtype == WEFT_DT_HALF ? 6.103515625e-05
                                                   : 1.17549435082228750797e-38;
  if (fabs(v) < smallest_normal) first = 1;
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int precision = first; precision <= last; precision++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", precision);
    g_ascii_formatd(buf, sizeof buf, fmt, v);
    double back = g_ascii_strtod(buf, NULL);
    bool same;
    switch (dtype) {
      case WEFT_DT_DOUBLE: same = back == v; break;
      case WEFT_DT_FLOAT: same = (float)back == (float)v; break;
      case WEFT_DT_HALF:
        same = weft__float_to_half((float)back) == ((const uint16_t *)data)[i]; break;
      default: same = weft__float_to_bfloat16((float)back) == ((const uint16_t *)data)[i]; break;
    }
    if (same) break;
  }
  g_string_append(s, buf);
}

static void append_json_string(GString *s, const char *data, size_t len) {
  g_string_append_c(s, '"');
  const char *p = data;
  const char *end = data + len;
  while (p < end) {
    unsigned char c = (unsigned char)*p;
    if (c == '"' || c == '\\') {
      g_string_append_c(s, '\\');
      g_string_append_c(s, (char)c);
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      g_string_append_printf(s, "\\u%04x", c);
      p++;
    } else if (c < 0x80) {
      g_string_append_c(s, (char)c);
      p++;
    } else {
      /* Valid UTF-8 passes through; any other byte is written as the code point of the same
       * number (Latin-1), since JSON text cannot hold raw bytes. */
      const gchar *next = NULL;
      gsize avail = (gsize)(end - p);
      gunichar ch = g_utf8_get_char_validated(p, (gssize)avail);
      if (ch != (gunichar)-1 && ch != (gunichar)-2) {
        next = g_utf8_next_char(p);
        g_string_append_len(s, p, next - p);
        p = next;
      } else {
        g_string_append_printf(s, "\\u%04x", c);
        p++;
      }
    }
  }
  g_string_append_c(s, '"');
}

/* The caller frees the result with g_free (or free). NULL for a NULL tensor or one that cannot be
 * copied to the host. */
char *weft_tensor_to_json(const weft_tensor_t *tensor) {
  if (tensor == NULL) return NULL;
  weft_tensor_t *host = NULL;
  if (weft__tensor_is_host(tensor)) {
    host = weft_tensor_ref((weft_tensor_t *)tensor);
  } else {
    weft_status_t *status = weft__tensor_copy_to_host(tensor, &host);
    if (status != NULL) {
      weft__log(WEFT_LOG_WARNING, "weft_tensor_to_json", "%s", weft_status_message(status));
      weft_status_free(status);
      return NULL;
    }
  }
  GString *s = g_string_new("{\"dtype\": \"");
  g_string_append(s, weft_dtype_name(host->dtype));
  g_string_append(s, "\", \"shape\": [");
  for (int i = 0; i < host->rank; i++)
    g_string_append_printf(s, i > 0 ? ", %" G_GINT64_FORMAT : "%" G_GINT64_FORMAT,
                           host->dims[i]);
  g_string_append(s, "], \"values\": ");
  const void *data = weft_tensor_data(host);
  int64_t n = host->num_elements;
  /* Always a flat list, scalars included, so readers need no special case. */
  g_string_append_c(s, '[');
  for (int64_t i = 0; i < n; i++) {
    if (i > 0) g_string_append(s, ", ");
    switch (host->dtype) {
      case WEFT_DT_FLOAT:
      case WEFT_DT_DOUBLE:
      case WEFT_DT_HALF:
      case WEFT_DT_BFLOAT16: append_float(s, host->dtype, data, i); break;
      case WEFT_DT_INT8: g_string_append_printf(s, "%d", ((const int8_t *)data)[i]); break;
      case WEFT_DT_INT16: g_string_append_printf(s, "%d", ((const int16_t *)data)[i]); break;
      case WEFT_DT_INT32:
        g_string_append_printf(s, "%" G_GINT32_FORMAT, ((const int32_t *)data)[i]);
        break;
      case WEFT_DT_INT64:
        g_string_append_printf(s, "%" G_GINT64_FORMAT, ((const int64_t *)data)[i]);
        break;
      case WEFT_DT_UINT8: g_string_append_printf(s, "%u", ((const uint8_t *)data)[i]); break;
      case WEFT_DT_UINT16: g_string_append_printf(s, "%u", ((const uint16_t *)data)[i]); break;
      case WEFT_DT_UINT32:
        g_string_append_printf(s, "%" G_GUINT32_FORMAT, ((const uint32_t *)data)[i]);
        break;
      case WEFT_DT_UINT64:
        g_string_append_printf(s, "%" G_GUINT64_FORMAT, ((const uint64_t *)data)[i]);
        break;
      case WEFT_DT_BOOL:
        g_string_append(s, ((const uint8_t *)data)[i] ? "true" : "false");
        break;
      case WEFT_DT_STRING: {
        const weft_string_t *str = (const weft_string_t *)data + i;
        append_json_string(s, str->data != NULL ? str->data : "", str->len);
        break;
      }
      default: g_string_append(s, "null"); break;
    }
  }
  g_string_append_c(s, ']');
  g_string_append_c(s, '}');
  weft_tensor_unref(host);
  return g_string_free(s, FALSE);
}
