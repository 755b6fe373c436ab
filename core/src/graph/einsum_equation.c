/* einsum_equation.c: parsing Einsum's equation (einsum_equation.h says what is accepted). */
#include "einsum_equation.h"

#include <string.h>

static int label_of(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -2;
}

static char char_of(int label) { return (char)(label < 26 ? 'a' + label : 'A' + label - 26); }

bool weft__einsum_has(const weft__einsum_subs_t *s, int label) {
  for (int i = 0; i < s->n; i++)
    if (s->label[i] == label) return true;
  return false;
}

void weft__einsum_subs_str(const weft__einsum_subs_t *s, char *buf) {
  size_t at = 0;
  for (int i = 0; i < s->n; i++) {
    if (s->label[i] == WEFT__EINSUM_ELLIPSIS) {
      memcpy(buf + at, "...", 3);
      at += 3;
    } else {
      buf[at++] = char_of(s->label[i]);
    }
  }
  buf[at] = '\0';
}

/* One subscript: eq[b, e). `which` names it in errors. The ellipsis checks and their texts are
 * TensorFlow's (ValidateEinsumEllipsis), with the equation added. */
static weft_status_t *parse_subs(const char *eq, size_t b, size_t e, const char *which,
                                 weft__einsum_subs_t *s) {
  memset(s, 0, sizeof *s);
  int periods = 0;
  for (size_t i = b; i < e; i++) periods += eq[i] == '.';
  const int len = (int)(e - b);
  if (periods != 0 && periods != 3)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Expected at most one ellipsis (...), but "
                           "found %d periods (.) in the input subscript: %.*s (einsum equation "
                           "'%s')", periods, len, eq + b, eq);
  for (size_t i = b; i < e; i++) {
    char ch = eq[i];
    if (ch == ' ') continue; /* tf.einsum drops spaces before building the op; so do we */
    if (s->n == WEFT__EINSUM_MAX_SUBS)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "%s subscript of einsum equation '%s' has "
                             "more than %d labels", which, eq, WEFT__EINSUM_MAX_SUBS);
    if (ch == '.') {
      if (i + 2 >= e || eq[i + 1] != '.' || eq[i + 2] != '.')
        return weft_status_new(WEFT_INVALID_ARGUMENT, "Periods found outside of ellipsis in "
                               "subscript: %.*s (einsum equation '%s')", len, eq + b, eq);
      s->ellipsis = true;
      s->label[s->n++] = WEFT__EINSUM_ELLIPSIS;
      i += 2;
      continue;
    }
    int l = label_of(ch);
    if (l < 0) {
      if (ch >= 0x20 && ch < 0x7f)
        return weft_status_new(WEFT_INVALID_ARGUMENT, "Invalid character '%c' in einsum "
                               "equation '%s': labels are letters a-z and A-Z", ch, eq);
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Invalid character (byte 0x%02x) in einsum "
                             "equation '%s': labels are letters a-z and A-Z",
                             (unsigned)(unsigned char)ch, eq);
    }
    s->label[s->n++] = (signed char)l;
  }
  return NULL;
}

weft_status_t *weft__einsum_parse(const char *equation, weft__einsum_eq_t *out) {
  memset(out, 0, sizeof *out);
  const char *eq = equation ? equation : "";
  const char *arrow = strstr(eq, "->");
  if (!arrow || strstr(arrow + 2, "->"))
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Expecting exactly one '->' in einsum equation: %s", eq);
  size_t lhs = (size_t)(arrow - eq);
  int n_in = 1;
  size_t comma[4] = {0};
  for (size_t i = 0; i < lhs; i++)
    if (eq[i] == ',') {
      if (n_in < 4) comma[n_in] = i;
      n_in++;
    }
  if (n_in != 1 && n_in != 2)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Expecting 1 or 2 input subscripts in "
                           "equation '%s' but got: %d", eq, n_in);
  out->n_inputs = n_in;
  if (n_in == 1) {
    WEFT_RETURN_IF_ERROR(parse_subs(eq, 0, lhs, "first input", &out->in[0]));
  } else {
    WEFT_RETURN_IF_ERROR(parse_subs(eq, 0, comma[1], "first input", &out->in[0]));
    WEFT_RETURN_IF_ERROR(parse_subs(eq, comma[1] + 1, lhs, "second input", &out->in[1]));
  }
  WEFT_RETURN_IF_ERROR(parse_subs(eq, lhs + 2, strlen(eq), "output", &out->out));
  for (int i = 0; i < out->out.n; i++) {
    int l = out->out.label[i];
    if (l == WEFT__EINSUM_ELLIPSIS) continue;
    bool found = false;
    for (int k = 0; k < n_in; k++) found = found || weft__einsum_has(&out->in[k], l);
    if (!found)
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Einsum output subscripts for equation "
                             "'%s' has label '%c' which is not present in the input subscripts",
                             eq, char_of(l));
  }
  return NULL;
}
