/* regex_kernels.c: the core's CPU kernels for TensorFlow's regular-expression string ops
 * (RegexReplace, StaticRegexReplace, RegexFullMatch, StaticRegexFullMatch; tensorflow/core/
 * kernels/regex_replace_op.cc, regex_full_match_op.cc) on GLib's GRegex (PCRE2), with
 * TensorFlow's messages. They live in the core because a plugin never links GLib
 * (docs/plugin-abi.md).
 *
 * TensorFlow matches with RE2. A pattern is translated so that PCRE2 gives RE2's answers
 * (docs/strings.md, "Regular expressions"): \d \w \s \b and the POSIX classes are ASCII as in
 * RE2 (GRegex makes them Unicode), $ matches at the very end only, octal escapes read as RE2
 * reads them; and what RE2 refuses (backreferences, lookaround, atomic and possessive forms,
 * recursion, PCRE's verbs and escapes) is refused with RE2's message before PCRE2 sees it. The
 * rewrite (\0 .. \9, \\) is applied here, and the global replacement walks the string as RE2's
 * GlobalReplace does (an empty match right after the previous match is skipped). A string that
 * is not valid UTF-8 is matched byte by byte, as RE2 takes its bad bytes one at a time. */
#include "exec_internal.h"

#include <stdarg.h>
#include <string.h>

/* At most 200 bytes of text for a message, as valid UTF-8: other bytes (and a character cut
 * at the limit) as \xNN, so that the message reads back in any language binding. */
static char *shown(const char *p, size_t len) {
  GString *o = g_string_new(NULL);
  const char *end = p + MIN(len, 200);
  while (p < end) {
    gunichar c = g_utf8_get_char_validated(p, end - p);
    if (c == (gunichar)-1 || c == (gunichar)-2 || c == 0) {
      g_string_append_printf(o, "\\x%02x", (unsigned char)*p++);
    } else {
      const char *n = g_utf8_next_char(p);
      g_string_append_len(o, p, n - p);
      p = n;
    }
  }
  return g_string_free(o, FALSE);
}

/* ---------------------------------------------------------------------------------------------
 * RE2 syntax to PCRE2 */

typedef struct range {
  unsigned lo, hi;
} range_t;

typedef struct char_set {
  const char *name; /* the POSIX class name, or the escape letter as a string */
  const range_t *r;
  int n;
} char_set_t;

static const range_t kDigit[] = {{'0', '9'}};
static const range_t kWord[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
static const range_t kPerlSpace[] = {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}};
static const range_t kAlnum[] = {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}};
static const range_t kAlpha[] = {{'A', 'Z'}, {'a', 'z'}};
static const range_t kAscii[] = {{0, 0x7f}};
static const range_t kBlank[] = {{'\t', '\t'}, {' ', ' '}};
static const range_t kCntrl[] = {{0, 0x1f}, {0x7f, 0x7f}};
static const range_t kGraph[] = {{'!', '~'}};
static const range_t kLower[] = {{'a', 'z'}};
static const range_t kPrint[] = {{' ', '~'}};
static const range_t kPunct[] = {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}};
static const range_t kSpace[] = {{'\t', '\r'}, {' ', ' '}};
static const range_t kUpper[] = {{'A', 'Z'}};
static const range_t kXdigit[] = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};

#define SET(name, r) {name, r, (int)G_N_ELEMENTS(r)}
static const char_set_t kPosix[] = {
    SET("alnum", kAlnum), SET("alpha", kAlpha), SET("ascii", kAscii), SET("blank", kBlank),
    SET("cntrl", kCntrl), SET("digit", kDigit), SET("graph", kGraph), SET("lower", kLower),
    SET("print", kPrint), SET("punct", kPunct), SET("space", kSpace), SET("upper", kUpper),
    SET("word", kWord),   SET("xdigit", kXdigit),
};
static const char_set_t kPerl[] = {SET("d", kDigit), SET("w", kWord), SET("s", kPerlSpace)};
#undef SET

#define WORD_CLASS "[0-9A-Za-z_]"

/* The members of set (or of its complement up to max) for the inside of a class. */
static void put_ranges(GString *o, const char_set_t *set, bool negate, unsigned max) {
  unsigned next = 0;
  for (int k = 0; k <= set->n; k++) {
    unsigned lo, hi;
    if (!negate) {
      if (k == set->n) break;
      lo = set->r[k].lo;
      hi = set->r[k].hi;
    } else {
      lo = next;
      hi = k < set->n ? set->r[k].lo - 1 : max;
      if (k < set->n) next = set->r[k].hi + 1;
      if (k < set->n && set->r[k].lo == 0) continue;
      if (lo > hi) continue;
    }
    g_string_append_printf(o, "\\x{%x}", lo);
    if (hi > lo) g_string_append_printf(o, "-\\x{%x}", hi);
  }
}

typedef struct xlate {
  const char *p, *end;
  GString *out;
  bool utf;
  char *error; /* RE2's wording */
} xlate_t;

static bool fail(xlate_t *x, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static bool fail(xlate_t *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  x->error = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return false;
}

/* An octal escape after the backslash at p (p[1] a digit): RE2 reads \0 and \1..\7 followed by
 * another octal digit as up to three octal digits; a lone \1..\9 is a backreference. */
static bool octal(xlate_t *x) {
  const char *s = x->p + 1;
  if (*s >= '8' || (*s != '0' && (s + 1 >= x->end || s[1] < '0' || s[1] > '7')))
    return fail(x, "invalid escape sequence: \\%c", *s);
  unsigned v = 0;
  int n = 0;
  while (n < 3 && s < x->end && *s >= '0' && *s <= '7') v = v * 8 + (unsigned)(*s++ - '0'), n++;
  g_string_append_printf(x->out, "\\x{%x}", v);
  x->p = s;
  return true;
}

/* The escape at x->p (a backslash); in_class: inside [...]. */
static bool escape(xlate_t *x, bool in_class) {
  if (x->p + 1 >= x->end) return fail(x, "trailing \\");
  char c = x->p[1];
  if (c >= '0' && c <= '9') return octal(x);
  for (size_t k = 0; k < G_N_ELEMENTS(kPerl); k++) {
    if (c != kPerl[k].name[0] && c != g_ascii_toupper(kPerl[k].name[0])) continue;
    if (!in_class) g_string_append_c(x->out, '[');
    put_ranges(x->out, &kPerl[k], g_ascii_isupper(c), x->utf ? 0x10ffff : 0xff);
    if (!in_class) g_string_append_c(x->out, ']');
    x->p += 2;
    return true;
  }
  if (!in_class && c == 'b') {
    g_string_append(x->out, "(?:(?<=" WORD_CLASS ")(?!" WORD_CLASS ")|(?<!" WORD_CLASS
                            ")(?=" WORD_CLASS "))");
    x->p += 2;
    return true;
  }
  if (!in_class && c == 'B') {
    g_string_append(x->out, "(?:(?<=" WORD_CLASS ")(?=" WORD_CLASS ")|(?<!" WORD_CLASS
                            ")(?!" WORD_CLASS "))");
    x->p += 2;
    return true;
  }
  if (c == 'v') { /* RE2: the vertical tab; PCRE2: any vertical space */
    g_string_append(x->out, "\\x{b}");
    x->p += 2;
    return true;
  }
  /* PCRE2's escapes RE2 does not have: backreferences, \K, \G, \Z, \R, \X, \h, \V, \N ... */
  if (strchr("gkKGZRXhHVNco", c) != NULL) return fail(x, "invalid escape sequence: \\%c", c);
  if (c == 'Q') { /* literal up to \E (or the end, where \E is added: the wrapper follows) */
    const char *e = x->p + 2;
    while (e + 1 < x->end && !(e[0] == '\\' && e[1] == 'E')) e++;
    if (e + 1 >= x->end) e = x->end;
    g_string_append_len(x->out, x->p, e - x->p);
    g_string_append(x->out, "\\E");
    x->p = e < x->end ? e + 2 : e;
    return true;
  }
  const char *e = x->p + 2;
  if ((c == 'p' || c == 'P' || c == 'x') && e < x->end && *e == '{') {
    /* \p{Greek}, \x{10FFFF}: the braces belong to the escape, not a repetition */
    while (e < x->end && *e != '}') e++;
    if (e >= x->end) return fail(x, "invalid escape sequence: %.*s", 2, x->p);
    e++;
  }
  g_string_append_len(x->out, x->p, e - x->p);
  x->p = e;
  return true;
}

/* A character class from x->p ('['). */
static bool char_class(xlate_t *x) {
  g_string_append_c(x->out, '[');
  x->p++;
  if (x->p < x->end && *x->p == '^') g_string_append_c(x->out, *x->p++);
  if (x->p < x->end && *x->p == ']') { /* a leading ] is a member */
    g_string_append(x->out, "\\]");
    x->p++;
  }
  while (x->p < x->end && *x->p != ']') {
    if (*x->p == '\\') {
      if (!escape(x, true)) return false;
    } else if (*x->p == '[' && x->p + 1 < x->end && x->p[1] == ':') {
      const char *name = x->p + 2;
      bool negate = name < x->end && *name == '^';
      if (negate) name++;
      const char *close = name;
      while (close + 1 < x->end && !(close[0] == ':' && close[1] == ']')) close++;
      if (close + 1 >= x->end) return fail(x, "missing closing ]");
      const char_set_t *set = NULL;
      for (size_t k = 0; k < G_N_ELEMENTS(kPosix) && !set; k++)
        if (strlen(kPosix[k].name) == (size_t)(close - name) &&
            memcmp(kPosix[k].name, name, (size_t)(close - name)) == 0)
          set = &kPosix[k];
      if (!set) {
        char *what = shown(x->p, (size_t)(close + 2 - x->p));
        fail(x, "invalid character class range: %s", what);
        g_free(what);
        return false;
      }
      put_ranges(x->out, set, negate, x->utf ? 0x10ffff : 0xff);
      x->p = close + 2;
    } else if (*x->p == '[') {
      g_string_append(x->out, "\\[");
      x->p++;
    } else {
      g_string_append_c(x->out, *x->p++);
    }
  }
  if (x->p >= x->end) return fail(x, "missing closing ]");
  g_string_append_c(x->out, ']');
  x->p++;
  return true;
}

/* "(?" at x->p: groups and flags RE2 has pass; the rest of Perl's and PCRE's forms fail. */
static bool group(xlate_t *x) {
  const char *s = x->p + 2;
  size_t left = (size_t)(x->end - s);
  bool ok = false;
  if (left >= 1 && *s == ':') ok = true;
  else if (left >= 2 && s[0] == 'P' && s[1] == '<') ok = true;
  else if (left >= 2 && s[0] == '<' && (g_ascii_isalpha(s[1]) || s[1] == '_')) ok = true;
  else {
    const char *f = s;
    while (f < x->end && strchr("imsU-", *f) != NULL && *f != '\0') f++;
    ok = f > s && f < x->end && (*f == ')' || *f == ':');
  }
  if (!ok) {
    char *what = shown(s, left < 2 ? left : 2);
    fail(x, "invalid or unsupported Perl syntax: (?%s", what);
    g_free(what);
    return false;
  }
  g_string_append_len(x->out, x->p, 2);
  x->p += 2;
  return true;
}

/* A {n}, {n,} or {n,m} repetition at p: its end, or NULL when the brace is a literal. */
static const char *repetition(const xlate_t *x, const char *p, int64_t *lo, int64_t *hi) {
  const char *s = p + 1;
  *lo = *hi = -1;
  int64_t v = 0;
  const char *d = s;
  /* counts saturate (past RE2's limit of 1000 any value is refused alike) */
  for (; s < x->end && g_ascii_isdigit(*s); s++) v = MIN(v * 10 + (*s - '0'), 100000);
  if (s == d || s >= x->end) return NULL;
  *lo = *hi = v;
  if (*s == ',') {
    s++;
    d = s;
    v = 0;
    for (; s < x->end && g_ascii_isdigit(*s); s++) v = MIN(v * 10 + (*s - '0'), 100000);
    *hi = s == d ? -1 : v;
  }
  return s < x->end && *s == '}' ? s + 1 : NULL;
}

/* RE2 syntax -> PCRE2 syntax (a new string), or NULL with *error. */
static char *translate(const char *pattern, size_t len, bool utf, char **error) {
  xlate_t x = {pattern, pattern + len, g_string_new(NULL), utf, NULL};
  bool ok = true;
  int depth = 0; /* open groups: an unbalanced ) would close the full match's wrapper */
  while (ok && x.p < x.end) {
    char c = *x.p;
    if (c == '(') depth++;
    if (c == ')' && --depth < 0) {
      ok = fail(&x, "unexpected )");
      continue;
    }
    if (c == '\\') {
      ok = escape(&x, false);
    } else if (c == '[') {
      ok = char_class(&x);
    } else if (c == '(' && x.p + 1 < x.end && x.p[1] == '?') {
      ok = group(&x);
    } else if (c == '(' && x.p + 1 < x.end && x.p[1] == '*') {
      ok = fail(&x, "missing argument to repetition operator: *");
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      const char *q = x.p + 1;
      int64_t lo = -1, hi = -1;
      if (c == '{') q = repetition(&x, x.p, &lo, &hi);
      if (q == NULL) { /* a literal brace */
        g_string_append(x.out, "\\{");
        x.p++;
        continue;
      }
      if (lo > 1000 || hi > 1000 || (hi >= 0 && hi < lo)) {
        ok = fail(&x, "bad repetition operator: %.*s", (int)(q - x.p), x.p);
        continue;
      }
      if (q < x.end && *q == '?') q++; /* non-greedy */
      int64_t l2, h2;
      const char *again = q < x.end && *q == '{' ? repetition(&x, q, &l2, &h2) : NULL;
      if (again == NULL && q < x.end && (*q == '+' || *q == '*' || *q == '?')) again = q + 1;
      if (again != NULL) { /* PCRE's possessive form (*+), or a repetition repeated (**) */
        ok = fail(&x, "bad repetition operator: %.*s", (int)(again - x.p), x.p);
        continue;
      }
      g_string_append_len(x.out, x.p, q - x.p);
      x.p = q;
    } else if (c == '$') {
      g_string_append_c(x.out, '$'); /* compiled DOLLAR_ENDONLY: RE2's end of text */
      x.p++;
    } else {
      g_string_append_c(x.out, c);
      x.p++;
    }
  }
  if (ok && depth > 0) ok = fail(&x, "missing )");
  if (!ok) {
    g_string_free(x.out, TRUE);
    *error = x.error;
    return NULL;
  }
  return g_string_free(x.out, FALSE);
}

/* ---------------------------------------------------------------------------------------------
 * Compiled patterns */

/* One pattern compiled for UTF-8 text and for other bytes (raw: NULL when PCRE2 refused it
 * byte-wise, raw_error saying why). Immutable once built; shared by reference. */
typedef struct compiled {
  gint refs;
  char *pattern;
  size_t len;
  GRegex *utf, *raw;
  char *raw_error;
  int groups;
} compiled_t;

static void compiled_unref(compiled_t *c) {
  if (c == NULL || !g_atomic_int_dec_and_test(&c->refs)) return;
  if (c->utf) g_regex_unref(c->utf);
  if (c->raw) g_regex_unref(c->raw);
  g_free(c->raw_error);
  g_free(c->pattern);
  g_free(c);
}

/* GLib's message without its "Error while compiling regular expression '...' at char N: "
 * prefix, which quotes the translated pattern and an offset into it. */
static const char *gerror_reason(const GError *e) {
  const char *at = g_strrstr(e->message, " at char ");
  if (at == NULL) return e->message;
  const char *colon = strstr(at, ": ");
  return colon ? colon + 2 : e->message;
}

static GRegex *compile_one(const char *pattern, size_t len, bool utf, bool full, char **error) {
  char *body = translate(pattern, len, utf, error);
  if (body == NULL) return NULL;
  /* Full match: the whole of the pattern, to the end of the text (RE2::FullMatch); the group
   * keeps an alternation's branches together. */
  char *text = full ? g_strdup_printf("(?:%s)\\z", body) : g_strdup(body);
  g_free(body);
  GError *e = NULL;
  GRegexCompileFlags flags = G_REGEX_DOLLAR_ENDONLY | (full ? G_REGEX_ANCHORED : 0) |
                             (utf ? 0 : G_REGEX_RAW);
  GRegex *re = g_regex_new(text, flags, 0, &e);
  g_free(text);
  if (re == NULL) {
    *error = g_strdup(gerror_reason(e));
    g_error_free(e);
  }
  return re;
}

static weft_status_t *compile(weft_kernel_ctx_t *ctx, const char *pattern, size_t len, bool full,
                              compiled_t **out) {
  char *error = NULL;
  GRegex *utf = NULL;
  if (memchr(pattern, '\0', len) != NULL) error = g_strdup("pattern contains a NUL byte");
  else if (!g_utf8_validate(pattern, (gssize)len, NULL)) error = g_strdup("invalid UTF-8");
  else utf = compile_one(pattern, len, true, full, &error);
  if (utf == NULL) {
    char *what = shown(pattern, len);
    weft_status_t *st =
        ctx ? weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "Invalid pattern: %s, error: %s",
                                 what, error)
            : weft_status_new(WEFT_INVALID_ARGUMENT, "Invalid pattern: %s, error: %s", what,
                              error);
    g_free(what);
    g_free(error);
    return st;
  }
  compiled_t *c = g_new0(compiled_t, 1);
  c->refs = 1;
  c->pattern = g_strndup(pattern, len); /* no NUL inside: checked above */
  c->len = len;
  c->utf = utf;
  c->raw = compile_one(pattern, len, false, full, &c->raw_error);
  c->groups = g_regex_get_capture_count(utf);
  *out = c;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Kernel state: the static ops' pattern compiled once; the others' last pattern, as
 * TensorFlow's CachedRE2 keeps it. */

typedef enum { OP_REPLACE, OP_STATIC_REPLACE, OP_FULL_MATCH, OP_STATIC_FULL_MATCH } op_kind_t;

typedef struct re_state {
  op_kind_t kind;
  GMutex lock;
  compiled_t *cached;
  char *rewrite; /* the static replacement's */
  size_t rewrite_len;
} re_state_t;

static bool is_full(op_kind_t k) { return k == OP_FULL_MATCH || k == OP_STATIC_FULL_MATCH; }
static bool is_static(op_kind_t k) { return k == OP_STATIC_REPLACE || k == OP_STATIC_FULL_MATCH; }

static weft_status_t *check_rewrite(const char *rw, size_t len, int groups);
static void re_destroy(void *state);

static weft_status_t *re_create(const weft_host_t *host, const weft_attrs_t *attrs,
                                void *user_data, void **state) {
  re_state_t *s = g_new0(re_state_t, 1);
  s->kind = (op_kind_t)GPOINTER_TO_INT(user_data);
  g_mutex_init(&s->lock);
  *state = s;
  if (!is_static(s->kind)) return NULL;
  const char *pattern = NULL, *rewrite = NULL;
  size_t plen = 0, rlen = 0;
  weft_status_t *st = host->attr_string(attrs, "pattern", &pattern, &plen);
  if (!st) st = compile(NULL, pattern, plen, is_full(s->kind), &s->cached);
  if (!st && s->kind == OP_STATIC_REPLACE) {
    st = host->attr_string(attrs, "rewrite", &rewrite, &rlen);
    if (!st) st = check_rewrite(rewrite, rlen, s->cached->groups);
    if (!st) {
      s->rewrite = g_malloc(rlen + 1);
      memcpy(s->rewrite, rewrite, rlen);
      s->rewrite[rlen] = '\0';
      s->rewrite_len = rlen;
    }
  }
  if (st) { /* a failed create's state is never destroyed by the host */
    re_destroy(s);
    *state = NULL;
  }
  return st;
}

static void re_destroy(void *state) {
  re_state_t *s = state;
  if (s == NULL) return;
  compiled_unref(s->cached);
  g_mutex_clear(&s->lock);
  g_free(s->rewrite);
  g_free(s);
}

/* The compiled pattern for this call (a reference). */
static weft_status_t *pattern_for(weft_kernel_ctx_t *ctx, re_state_t *s, compiled_t **out) {
  if (is_static(s->kind)) {
    g_atomic_int_inc(&s->cached->refs);
    *out = s->cached;
    return NULL;
  }
  const weft_tensor_t *p = ctx->inputs[1].tensor;
  if (p == NULL || p->dtype != WEFT_DT_STRING || p->rank != 0) {
    char *shape = p ? weft__shape_to_string(p->rank, p->dims) : g_strdup("?");
    weft_status_t *st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                           "Pattern must be scalar, but received %s", shape);
    g_free(shape);
    return st;
  }
  const weft_string_t *ps = weft_tensor_data(p);
  g_mutex_lock(&s->lock);
  compiled_t *c = s->cached;
  if (c && c->len == ps->len && memcmp(c->pattern, ps->data, ps->len) == 0) {
    g_atomic_int_inc(&c->refs);
    g_mutex_unlock(&s->lock);
    *out = c;
    return NULL;
  }
  g_mutex_unlock(&s->lock);
  WEFT_RETURN_IF_ERROR(compile(ctx, ps->data, ps->len, is_full(s->kind), &c));
  g_mutex_lock(&s->lock);
  compiled_unref(s->cached);
  s->cached = c;
  g_atomic_int_inc(&c->refs);
  g_mutex_unlock(&s->lock);
  *out = c;
  return NULL;
}

/* The regex for one string: the UTF-8 one, or the byte-wise one for other bytes. */
static weft_status_t *regex_for(weft_kernel_ctx_t *ctx, const compiled_t *c,
                                const weft_string_t *s, GRegex **re, bool *utf) {
  if (s->len > (size_t)G_MAXINT) /* GRegex takes match offsets as int */
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                              "a string of %zu bytes is past the regex ops' limit of %d",
                              s->len, G_MAXINT);
  *utf = g_utf8_validate(s->data, (gssize)s->len, NULL);
  *re = *utf ? c->utf : c->raw;
  if (*re != NULL) return NULL;
  char *what = shown(c->pattern, c->len);
  weft_status_t *st = weft__kernel_error(
      ctx, WEFT_INVALID_ARGUMENT, "Invalid pattern: %s, error: %s (on an input that is not UTF-8)",
      what, c->raw_error);
  g_free(what);
  return st;
}

/* PCRE2's failures (a match limit on a pathological pattern; RE2 has none) as errors. */
static weft_status_t *match_error(weft_kernel_ctx_t *ctx, const compiled_t *c, GError *e) {
  char *what = shown(c->pattern, c->len);
  weft_status_t *st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                                         "matching pattern %s failed: %s", what, gerror_reason(e));
  g_free(what);
  g_error_free(e);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * RE2's rewrite strings: \0 .. \9 name a group, \\ is a backslash. */

static weft_status_t *rewrite_error(const char *rw, size_t len, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static weft_status_t *rewrite_error(const char *rw, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  char *what = shown(rw, len);
  weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                      "Invalid rewrite pattern: %s, error: %s", what, why);
  g_free(what);
  g_free(why);
  return st;
}

static weft_status_t *check_rewrite(const char *rw, size_t len, int groups) {
  int max = 0;
  for (size_t k = 0; k < len; k++) {
    if (rw[k] != '\\') continue;
    if (k + 1 >= len)
      return rewrite_error(rw, len, "Rewrite schema error: '\\' not allowed at end.");
    char c = rw[++k];
    if (c >= '0' && c <= '9') {
      max = MAX(max, c - '0');
    } else if (c != '\\') {
      return rewrite_error(rw, len,
                           "Rewrite schema error: '\\' must be followed by a digit or '\\'.");
    }
  }
  if (max > groups)
    return rewrite_error(rw, len,
                         "Rewrite schema requests %d matches, but the regexp only has %d "
                         "parenthesized subexpressions.",
                         max, groups);
  return NULL;
}

static void rewrite(GString *o, const char *text, const GMatchInfo *mi, const char *rw,
                    size_t len) {
  for (size_t k = 0; k < len; k++) {
    if (rw[k] != '\\' || k + 1 >= len) {
      g_string_append_c(o, rw[k]);
      continue;
    }
    char c = rw[++k];
    if (c == '\\') {
      g_string_append_c(o, '\\');
      continue;
    }
    int b = -1, e = -1; /* a group that did not take part adds nothing */
    if (g_match_info_fetch_pos(mi, c - '0', &b, &e) && b >= 0)
      g_string_append_len(o, text + b, e - b);
  }
}

/* The length of the character at p (one byte where it is not valid UTF-8 or utf is false). */
static size_t char_len(const char *p, const char *end, bool utf) {
  if (!utf) return 1;
  const char *n = g_utf8_find_next_char(p, end);
  return n ? (size_t)(n - p) : (size_t)(end - p);
}

/* One string: RE2::Replace (first match) or RE2::GlobalReplace into *out. */
static weft_status_t *replace_one(weft_kernel_ctx_t *ctx, const compiled_t *c,
                                  const weft_string_t *s, const char *rw, size_t rw_len,
                                  bool global, GString *out) {
  GRegex *re;
  bool utf;
  WEFT_RETURN_IF_ERROR(regex_for(ctx, c, s, &re, &utf));
  const char *text = s->data;
  gssize len = (gssize)s->len;
  g_string_truncate(out, 0);
  gssize p = 0, lastend = -1;
  int count = 0;
  while (p <= len) {
    GMatchInfo *mi = NULL;
    GError *e = NULL;
    gboolean hit = g_regex_match_full(re, text, len, (gint)p, 0, &mi, &e);
    if (e) {
      g_match_info_free(mi);
      return match_error(ctx, c, e);
    }
    int b = -1, end = -1;
    if (hit) g_match_info_fetch_pos(mi, 0, &b, &end);
    if (!hit || b < 0) {
      g_match_info_free(mi);
      break;
    }
    if (p < b) g_string_append_len(out, text + p, b - p);
    if (b == lastend && b == end) {
      /* An empty match where the previous one ended: RE2 steps over one character. */
      g_match_info_free(mi);
      if (p < len) {
        size_t n = char_len(text + p, text + len, utf);
        g_string_append_len(out, text + p, (gssize)n);
        p += (gssize)n;
      } else {
        p++;
      }
      continue;
    }
    rewrite(out, text, mi, rw, rw_len);
    g_match_info_free(mi);
    p = end;
    lastend = end;
    count++;
    if (!global) break;
  }
  if (count == 0) {
    g_string_truncate(out, 0);
    g_string_append_len(out, text, len);
  } else if (p < len) {
    g_string_append_len(out, text + p, len - p);
  }
  return NULL;
}

static weft_status_t *string_input(weft_kernel_ctx_t *ctx, const weft_tensor_t **in) {
  *in = ctx->inputs[0].tensor;
  if (*in == NULL || (*in)->dtype != WEFT_DT_STRING)
    return weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, "input must be a string tensor");
  return NULL;
}

/* The end of a compute: the pattern released, then out set as output 0, or dropped on error. */
static weft_status_t *finish(weft_kernel_ctx_t *ctx, compiled_t *c, weft_tensor_t *out,
                             weft_status_t *st) {
  compiled_unref(c);
  return weft__kernel_set_output0(ctx, out, st);
}

static weft_status_t *replace_compute(weft_kernel_ctx_t *ctx, re_state_t *s) {
  const weft_tensor_t *in;
  WEFT_RETURN_IF_ERROR(string_input(ctx, &in));
  compiled_t *c = NULL;
  WEFT_RETURN_IF_ERROR(pattern_for(ctx, s, &c));
  const char *rw = s->rewrite;
  size_t rw_len = s->rewrite_len;
  weft_status_t *st = NULL;
  if (s->kind == OP_REPLACE) {
    const weft_tensor_t *r = ctx->inputs[2].tensor;
    if (r == NULL || r->dtype != WEFT_DT_STRING || r->rank != 0) {
      char *shape = r ? weft__shape_to_string(r->rank, r->dims) : g_strdup("?");
      st = weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT,
                              "Rewrite must be scalar, but received %s", shape);
      g_free(shape);
    } else {
      const weft_string_t *rs = weft_tensor_data(r);
      rw = rs->data;
      rw_len = rs->len;
      st = check_rewrite(rw, rw_len, c->groups);
      if (st) st = weft_status_prefix(st, "node '%s'", ctx->node->name);
    }
  }
  int global = 1;
  const weft__attr_value_t *g = weft__attrs_get(ctx->node->attrs, "replace_global");
  if (g && g->kind == WEFT_ATTR_BOOL) global = g->u.b;
  weft_tensor_t *out = st ? NULL : weft_tensor_new(WEFT_DT_STRING, in->rank, in->dims);
  const weft_string_t *strs = weft_tensor_data(in);
  GString *buf = g_string_new(NULL);
  for (int64_t i = 0; !st && i < in->num_elements; i++) {
    st = replace_one(ctx, c, &strs[i], rw, rw_len, global, buf);
    if (!st) st = weft_tensor_set_string(out, i, buf->str, buf->len);
  }
  g_string_free(buf, TRUE);
  return finish(ctx, c, out, st);
}

static weft_status_t *full_match_compute(weft_kernel_ctx_t *ctx, re_state_t *s) {
  const weft_tensor_t *in;
  WEFT_RETURN_IF_ERROR(string_input(ctx, &in));
  compiled_t *c = NULL;
  WEFT_RETURN_IF_ERROR(pattern_for(ctx, s, &c));
  weft_tensor_t *out = weft_tensor_new(WEFT_DT_BOOL, in->rank, in->dims);
  uint8_t *o = weft_tensor_data(out);
  const weft_string_t *strs = weft_tensor_data(in);
  weft_status_t *st = NULL;
  for (int64_t i = 0; !st && i < in->num_elements; i++) {
    GRegex *re;
    bool utf;
    st = regex_for(ctx, c, &strs[i], &re, &utf);
    if (st) break;
    GError *e = NULL;
    o[i] = g_regex_match_full(re, strs[i].data, (gssize)strs[i].len, 0, 0, NULL, &e);
    if (e) st = match_error(ctx, c, e);
  }
  return finish(ctx, c, out, st);
}

static weft_status_t *re_compute(weft_kernel_ctx_t *ctx, void *state) {
  re_state_t *s = state;
  return is_full(s->kind) ? full_match_compute(ctx, s) : replace_compute(ctx, s);
}

void weft__regex_kernels_register(void) {
  static const struct {
    const char *op;
    op_kind_t kind;
  } kernels[] = {{"RegexReplace", OP_REPLACE},
                 {"StaticRegexReplace", OP_STATIC_REPLACE},
                 {"RegexFullMatch", OP_FULL_MATCH},
                 {"StaticRegexFullMatch", OP_STATIC_FULL_MATCH}};
  for (size_t k = 0; k < G_N_ELEMENTS(kernels); k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = kernels[k].op,
                             .device_type = "CPU",
                             .create = re_create,
                             .compute = re_compute,
                             .destroy = re_destroy,
                             .user_data = GINT_TO_POINTER(kernels[k].kind)};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
}
