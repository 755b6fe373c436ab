/* cpu_string.c: the CPU kernels of TensorFlow's string, logging and file ops (ops in
 * core/src/graph/ops_string.c): StringJoin, AsString, StringToNumber, StringLength, Substr,
 * StringSplit(V2), StringStrip/Upper/Lower, ReduceJoin, Encode/DecodeBase64, ReadFile, WriteFile,
 * DecodeRaw, Print, PrintV2 and StringFormat. Values, summaries and error messages follow
 * TensorFlow's kernels (string_ops, as_string_op.cc, logging_ops.cc, tensor.cc's
 * SummarizeValue); where Weft differs, docs/operations.md says so. Every length read from a
 * tensor is checked before it is used: these kernels see strings from files and feeds. */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * Text building */

typedef weft_cpu_buf_t sbuf_t;
#define sb_put weft__cpu_buf_put

static void sb_str(sbuf_t *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

/* ---------------------------------------------------------------------------------------------
 * Shared helpers */

static weft_status_t *assign(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *out, int64_t i,
                             const char *p, size_t n) {
  return H->string_assign(ctx, out, i, p, n);
}

static weft_status_t *string_input(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *v) {
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, v));
  if (v->dtype != WEFT_DT_STRING) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input %d must be a string tensor, got %s",
                           index, weft__cpu_dtype_name(v->dtype));
  }
  return NULL;
}

/* A scalar string input (TensorScalar's check), *s borrowed from the input. */
static weft_status_t *scalar_string(weft_kernel_ctx_t *ctx, int index, const char *what,
                                    const weft_string_t **s) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(string_input(ctx, index, &v));
  if (v.rank != 0) {
    char sh[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be a scalar, got shape: %s", what,
                           weft__cpu_shape_str(v.rank, v.dims, sh, sizeof sh));
  }
  *s = v.data;
  return NULL;
}

/* Output `index` with in's shape, every element f(in[i]) written through assign. */
typedef weft_status_t *(*map_fn)(weft_kernel_ctx_t *ctx, const weft_string_t *in,
                                 const weft_tensor_view_t *out, int64_t i, void *arg);

static weft_status_t *map_strings(weft_kernel_ctx_t *ctx, map_fn fn, void *arg) {
  weft_tensor_view_t in, out;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_STRING, in.rank, in.dims, &out));
  const weft_string_t *s = in.data;
  for (int64_t i = 0; i < in.num_elements; i++) WEFT_RETURN_IF_ERROR(fn(ctx, &s[i], &out, i, arg));
  return NULL;
}

/* At most the first 200 bytes of s, for messages (a hostile string must not flood them). */
#define SHOWN(s) (int)((s)->len < 200 ? (s)->len : 200), (s)->data

/* ---------------------------------------------------------------------------------------------
 * Tensor summaries (Tensor::SummarizeValue), for Print (v1 form) and StringFormat (v2 form). */

/* absl::Utf8SafeCEscape, TensorFlow's escaping of a string element. */
static void put_escaped(sbuf_t *b, const weft_string_t *s) {
  for (size_t k = 0; k < s->len; k++) {
    unsigned char c = (unsigned char)s->data[k];
    switch (c) {
      case '\n': sb_str(b, "\\n"); break;
      case '\r': sb_str(b, "\\r"); break;
      case '\t': sb_str(b, "\\t"); break;
      case '"': sb_str(b, "\\\""); break;
      case '\'': sb_str(b, "\\'"); break;
      case '\\': sb_str(b, "\\\\"); break;
      default:
        if (c < 0x20 || c == 0x7f) sb_printf(b, "\\%03o", c);
        else sb_put(b, &c, 1);
    }
  }
}

/* StrCat's float: %.6g, or %.9g where that does not read back (%.15g / %.17g for double). */
static void put_real(sbuf_t *b, double v, bool dbl) {
  char tmp[64];
  if (isnan(v)) {
    sb_str(b, "nan");
  } else if (isinf(v)) {
    sb_str(b, v < 0 ? "-inf" : "inf");
  } else if (dbl) {
    snprintf(tmp, sizeof tmp, "%.*g", DBL_DIG, v);
    if (strtod(tmp, NULL) != v) snprintf(tmp, sizeof tmp, "%.*g", DBL_DIG + 2, v);
    sb_str(b, tmp);
  } else {
    float f = (float)v;
    snprintf(tmp, sizeof tmp, "%.*g", FLT_DIG, (double)f);
    if (strtof(tmp, NULL) != f) snprintf(tmp, sizeof tmp, "%.*g", FLT_DIG + 3, (double)f);
    sb_str(b, tmp);
  }
}

static void put_element(sbuf_t *b, const weft_tensor_view_t *t, int64_t i, bool v2) {
  const void *p = t->data;
  switch (t->dtype) {
    case WEFT_DT_STRING:
      if (v2) sb_str(b, "\"");
      put_escaped(b, &((const weft_string_t *)p)[i]);
      if (v2) sb_str(b, "\"");
      return;
    case WEFT_DT_DOUBLE: put_real(b, ((const double *)p)[i], true); return;
    case WEFT_DT_FLOAT:
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16: put_real(b, weft__cpu_load_f(t->dtype, p, i), false); return;
    case WEFT_DT_INT8: sb_printf(b, "%d", ((const int8_t *)p)[i]); return;
    case WEFT_DT_INT16: sb_printf(b, "%d", ((const int16_t *)p)[i]); return;
    case WEFT_DT_INT32: sb_printf(b, "%d", ((const int32_t *)p)[i]); return;
    case WEFT_DT_INT64: sb_printf(b, "%lld", (long long)((const int64_t *)p)[i]); return;
    case WEFT_DT_UINT8: sb_printf(b, "%u", ((const uint8_t *)p)[i]); return;
    case WEFT_DT_UINT16: sb_printf(b, "%u", ((const uint16_t *)p)[i]); return;
    case WEFT_DT_UINT32: sb_printf(b, "%u", ((const uint32_t *)p)[i]); return;
    case WEFT_DT_UINT64:
      sb_printf(b, "%llu", (unsigned long long)((const uint64_t *)p)[i]);
      return;
    /* TensorFlow prints bools as 1 and 0. */
    case WEFT_DT_BOOL: sb_str(b, ((const uint8_t *)p)[i] ? "1" : "0"); return;
    default: sb_printf(b, "<%s>", weft__cpu_dtype_name(t->dtype)); return;
  }
}

/* PrintOneDim: the first `limit` elements in row-major order, nested in brackets. */
static void summarize_v1_dim(sbuf_t *b, const weft_tensor_view_t *t, int dim, int64_t limit,
                             int64_t *at) {
  if (*at >= limit) return;
  int64_t count = t->dims[dim];
  if (dim == t->rank - 1) {
    for (int64_t i = 0; i < count; i++) {
      if (*at >= limit) {
        if (dim != 0) sb_str(b, "...");
        return;
      }
      if (i > 0) sb_str(b, " ");
      put_element(b, t, (*at)++, false);
    }
    return;
  }
  for (int64_t i = 0; i < count; i++) {
    bool opened = *at < limit;
    if (opened) sb_str(b, "[");
    summarize_v1_dim(b, t, dim + 1, limit, at);
    if (*at < limit || opened) sb_str(b, "]");
  }
}

/* PrintDimSpacing: a space inside the last dim, else newlines then indentation. */
static void v2_spacing(sbuf_t *b, int dim, int rank) {
  if (dim == rank - 1) {
    sb_str(b, " ");
    return;
  }
  for (int j = 0; j < rank - dim - 1; j++) sb_str(b, "\n");
  for (int j = 0; j <= dim; j++) sb_str(b, " ");
}

/* PrintOneDimV2: the first and last `ends` entries of every dim, "..." between. */
static void summarize_v2_dim(sbuf_t *b, const weft_tensor_view_t *t, int dim, int64_t ends,
                             int64_t base) {
  if (dim == t->rank) {
    put_element(b, t, base, true);
    return;
  }
  sb_str(b, "[");
  int64_t count = t->dims[dim], per = 1;
  for (int d = dim + 1; d < t->rank; d++) per *= t->dims[d];
  int64_t tail = count - ends > ends ? count - ends : ends;
  for (int64_t i = 0; i < ends && i < count; i++) {
    if (i > 0) v2_spacing(b, dim, t->rank);
    summarize_v2_dim(b, t, dim + 1, ends, base + per * i);
  }
  if (count > 2 * ends) {
    v2_spacing(b, dim, t->rank);
    sb_str(b, "...");
  }
  for (int64_t i = tail; i < count; i++) {
    v2_spacing(b, dim, t->rank);
    summarize_v2_dim(b, t, dim + 1, ends, base + per * i);
  }
  sb_str(b, "]");
}

static void summarize(sbuf_t *b, const weft_tensor_view_t *t, int64_t max_entries, bool v2) {
  int64_t n = t->num_elements;
  if (max_entries < 0) max_entries = n;
  int64_t limit = max_entries < n ? max_entries : n;
  if (t->rank == 0) {
    for (int64_t i = 0; i < limit; i++) {
      if (i > 0) sb_str(b, " ");
      put_element(b, t, i, v2);
    }
    if (n > limit) sb_str(b, "...");
  } else if (v2) {
    summarize_v2_dim(b, t, 0, limit, 0);
  } else {
    int64_t at = 0;
    summarize_v1_dim(b, t, 0, limit, &at);
    if (n > limit) sb_str(b, "...");
  }
}

/* ---------------------------------------------------------------------------------------------
 * Print, PrintV2, StringFormat (logging_ops.cc, string_format_op.cc) */

typedef struct print_state {
  int64_t first_n;
  atomic_llong count;
} print_state_t;

static weft_status_t *print_create(const weft_host_t *host, const weft_attrs_t *attrs,
                                   void *user_data, void **state) {
  (void)user_data;
  print_state_t *ps = calloc(1, sizeof *ps);
  if (!ps) return host->status_new(WEFT_RESOURCE_EXHAUSTED, "Print: out of memory");
  ps->first_n = -1;
  if (host->attr_has(attrs, "first_n")) {
    weft_status_t *st = host->attr_int(attrs, "first_n", &ps->first_n);
    if (st) {
      free(ps);
      return st;
    }
  }
  atomic_init(&ps->count, 0);
  *state = ps;
  return NULL;
}

static void write_out(FILE *f, const char *p, size_t n) {
  fwrite(p, 1, n, f);
  fflush(f);
}

static weft_status_t *k_print(weft_kernel_ctx_t *ctx, void *state) {
  print_state_t *ps = state;
  weft_tensor_view_t in;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(H->kernel_forward_input(ctx, 0, 0, in.rank, in.dims));
  if (ps->first_n >= 0 && atomic_fetch_add(&ps->count, 1) >= ps->first_n) return NULL;
  int64_t summarize_n = weft__cpu_attr_int(ctx, "summarize", 3);
  sbuf_t b = {0};
  size_t mlen;
  const char *msg = weft__cpu_attr_str(ctx, "message", "", &mlen);
  sb_put(&b, msg, mlen);
  for (int i = 1; i < H->kernel_num_inputs(ctx); i++) {
    weft_tensor_view_t d;
    weft_status_t *st = weft__cpu_input(ctx, i, &d);
    if (st) {
      free(b.data);
      return st;
    }
    sb_str(&b, "[");
    summarize(&b, &d, summarize_n, false);
    sb_str(&b, "]");
  }
  sb_str(&b, "\n");
  if (b.oom) {
    free(b.data);
    return oom(ctx);
  }
  write_out(stderr, b.data, b.len);
  free(b.data);
  return NULL;
}

static weft_status_t *k_string_format(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  size_t tlen, plen;
  const char *tmpl = weft__cpu_attr_str(ctx, "template", "%s", &tlen);
  const char *ph = weft__cpu_attr_str(ctx, "placeholder", "%s", &plen);
  if (plen == 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "placeholder must not be empty");
  int64_t summarize_n = weft__cpu_attr_int(ctx, "summarize", 3);
  int n_in = H->kernel_num_inputs(ctx);
  int64_t n_ph = 0;
  for (size_t k = 0; k + plen <= tlen;) {
    if (memcmp(tmpl + k, ph, plen) == 0) {
      n_ph++;
      k += plen;
    } else {
      k++;
    }
  }
  if (n_ph != n_in) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num placeholders in template and num inputs must match: %lld vs. %d",
                           (long long)n_ph, n_in);
  }
  sbuf_t b = {0};
  int next = 0;
  weft_status_t *st = NULL;
  for (size_t k = 0; k < tlen && !st;) {
    if (k + plen <= tlen && memcmp(tmpl + k, ph, plen) == 0) {
      weft_tensor_view_t t;
      st = weft__cpu_input(ctx, next++, &t);
      if (!st) summarize(&b, &t, summarize_n, true);
      k += plen;
    } else {
      sb_put(&b, tmpl + k, 1);
      k++;
    }
  }
  weft_tensor_view_t out;
  if (!st && b.oom) st = oom(ctx);
  if (!st) st = weft__cpu_output(ctx, 0, WEFT_DT_STRING, 0, NULL, &out);
  if (!st) st = assign(ctx, &out, 0, b.data ? b.data : "", b.len);
  free(b.data);
  return st;
}

static weft_status_t *k_print_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_string_t *s;
  WEFT_RETURN_IF_ERROR(scalar_string(ctx, 0, "Input is expected to be scalar, but got shape", &s));
  size_t slen, elen;
  const char *stream = weft__cpu_attr_str(ctx, "output_stream", "stderr", &slen);
  const char *end = weft__cpu_attr_str(ctx, "end", "\n", &elen);
  sbuf_t b = {0};
  sb_put(&b, s->data, s->len);
  sb_put(&b, end, elen);
  if (b.oom) {
    free(b.data);
    return oom(ctx);
  }
  weft_status_t *st = NULL;
  const char *text = b.data ? b.data : "";
  if (strcmp(stream, "stderr") == 0) {
    write_out(stderr, text, b.len);
  } else if (strcmp(stream, "stdout") == 0) {
    write_out(stdout, text, b.len);
  } else if (strcmp(stream, "log(info)") == 0 || strcmp(stream, "log(warning)") == 0 ||
             strcmp(stream, "log(error)") == 0) {
    weft_log_level_t level = stream[4] == 'i'   ? WEFT_LOG_INFO
                             : stream[4] == 'w' ? WEFT_LOG_WARNING
                                                : WEFT_LOG_ERROR;
    /* The log adds its own line end, as TensorFlow's LOG() does. */
    size_t shown = b.len >= elen ? b.len - elen : b.len;
    H->log(level, WEFT_CPU_PLUGIN_NAME, "%.*s", (int)(shown < INT32_MAX ? shown : INT32_MAX), text);
  } else {
    st = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Unknown output stream: %s, Valid streams are: stdout, stderr, "
                         "log(info), log(warning), log(error)",
                         stream);
  }
  free(b.data);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * StringJoin, ReduceJoin */

static weft_status_t *k_string_join(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_inputs(ctx);
  /* N is the graph's to choose: the views live on the heap, not on a pool thread's stack. */
  weft_tensor_view_t *in = calloc(n > 0 ? (size_t)n : 1, sizeof *in);
  if (!in) return oom(ctx);
  const weft_tensor_view_t *shape = NULL;
  weft_status_t *st = NULL;
  for (int i = 0; i < n && !st; i++) {
    st = string_input(ctx, i, &in[i]);
    if (st || in[i].rank == 0) continue;
    if (shape && !weft_pc_same_shape(shape, &in[i])) {
      char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
      st = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shapes do not match: %s vs. %s",
                           weft__cpu_shape_str(shape->rank, shape->dims, a, sizeof a),
                           weft__cpu_shape_str(in[i].rank, in[i].dims, b, sizeof b));
    }
    shape = &in[i];
  }
  weft_tensor_view_t out = {0};
  int64_t none[1] = {0};
  if (!st) {
    st = weft__cpu_output(ctx, 0, WEFT_DT_STRING, shape ? shape->rank : 0,
                          shape ? shape->dims : none, &out);
  }
  size_t slen;
  const char *sep = weft__cpu_attr_str(ctx, "separator", "", &slen);
  sbuf_t b = {0};
  for (int64_t e = 0; e < out.num_elements && !st; e++) {
    b.len = 0;
    for (int i = 0; i < n; i++) {
      const weft_string_t *s = &((const weft_string_t *)in[i].data)[in[i].rank == 0 ? 0 : e];
      if (i > 0) sb_put(&b, sep, slen);
      sb_put(&b, s->data, s->len);
    }
    st = b.oom ? oom(ctx) : assign(ctx, &out, e, b.data ? b.data : "", b.len);
  }
  free(b.data);
  free(in);
  return st;
}

static weft_status_t *k_reduce_join(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in, ax;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ax));
  int64_t axes[WEFT_MAX_RANK + 1], n_axes = 0;
  if (ax.num_elements > WEFT_MAX_RANK) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "reduction_indices has %lld entries, more than an input of %d "
                           "dimensions can have distinct", (long long)ax.num_elements, in.rank);
  }
  WEFT_RETURN_IF_ERROR(
      weft__cpu_read_indices(ctx, &ax, "reduction_indices", axes, WEFT_MAX_RANK, &n_axes));
  bool reduced[WEFT_MAX_RANK] = {false};
  int order[WEFT_MAX_RANK];
  for (int64_t i = 0; i < n_axes; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + in.rank : axes[i];
    if (a < 0 || a >= in.rank) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Invalid reduction dimension %lld for input with %d dimensions",
                             (long long)axes[i], in.rank);
    }
    if (reduced[a]) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Duplicate reduction dimension %lld",
                             (long long)axes[i]);
    }
    reduced[a] = true;
    order[i] = (int)a;
  }
  bool keep = weft__cpu_attr_bool(ctx, "keep_dims", false);
  int64_t out_dims[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
  int out_rank = 0, kept[WEFT_MAX_RANK], n_kept = 0;
  weft_pc_contiguous_strides(in.rank, in.dims, strides);
  int64_t n_inner = 1;
  for (int d = 0; d < in.rank; d++) {
    if (!reduced[d]) {
      kept[n_kept++] = d;
      out_dims[out_rank++] = in.dims[d];
    } else {
      n_inner *= in.dims[d];
      if (keep) out_dims[out_rank++] = 1;
    }
  }
  weft_tensor_view_t out;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_STRING, out_rank, out_dims, &out));
  size_t slen;
  const char *sep = weft__cpu_attr_str(ctx, "separator", "", &slen);
  const weft_string_t *s = in.data;
  sbuf_t b = {0};
  weft_status_t *st = NULL;
  for (int64_t o = 0; o < out.num_elements && !st; o++) {
    int64_t base = 0, rest = o;
    for (int k = n_kept - 1; k >= 0; k--) {
      base += (rest % in.dims[kept[k]]) * strides[kept[k]];
      rest /= in.dims[kept[k]];
    }
    b.len = 0;
    /* The first listed reduction index varies fastest (TensorFlow's order: [0, 1] of
     * [["a","b"],["c","d"]] is "acbd"). */
    for (int64_t r = 0; r < n_inner; r++) {
      int64_t off = base, q = r;
      for (int64_t i = 0; i < n_axes; i++) {
        off += (q % in.dims[order[i]]) * strides[order[i]];
        q /= in.dims[order[i]];
      }
      if (r > 0) sb_put(&b, sep, slen);
      sb_put(&b, s[off].data, s[off].len);
    }
    st = b.oom ? oom(ctx) : assign(ctx, &out, o, b.data ? b.data : "", b.len);
  }
  free(b.data);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * AsString, StringToNumber */

static weft_status_t *k_as_string(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in, out;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &in));
  int64_t precision = weft__cpu_attr_int(ctx, "precision", -1);
  int64_t width = weft__cpu_attr_int(ctx, "width", -1);
  bool scientific = weft__cpu_attr_bool(ctx, "scientific", false);
  bool shortest = weft__cpu_attr_bool(ctx, "shortest", false);
  size_t flen;
  const char *fill = weft__cpu_attr_str(ctx, "fill", "", &flen);
  bool is_float = weft__cpu_dtype_is_float(in.dtype);
  if (flen > 1) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Fill string must be one or fewer characters");
  }
  if (scientific && shortest) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Cannot select both scientific and shortest notation");
  }
  if ((scientific || shortest) && !is_float) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "scientific and shortest format not supported for datatype %s",
                           weft__cpu_dtype_name(in.dtype));
  }
  if (precision > -1 && !is_float) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "precision not supported for datatype %s",
                           weft__cpu_dtype_name(in.dtype));
  }
  if (flen == 1 && !strchr(" +-0#", fill[0])) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Fill argument not supported: \"%s\"",
                           fill);
  }
  if (width > 4096 || precision > 4096) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "width %lld or precision %lld too large",
                           (long long)width, (long long)precision);
  }
  char fmt[64];
  int at = snprintf(fmt, sizeof fmt, "%%%s", flen ? fill : "");
  if (width > -1) at += snprintf(fmt + at, sizeof fmt - (size_t)at, "%lld", (long long)width);
  if (precision > -1)
    at += snprintf(fmt + at, sizeof fmt - (size_t)at, ".%lld", (long long)precision);
  const char *conv = is_float ? (shortest ? "g" : scientific ? "e" : "f")
                     : (in.dtype == WEFT_DT_UINT8 || in.dtype == WEFT_DT_UINT16 ||
                        in.dtype == WEFT_DT_UINT32 || in.dtype == WEFT_DT_UINT64)
                         ? "llu"
                         : "lld";
  snprintf(fmt + at, sizeof fmt - (size_t)at, "%s", conv);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_STRING, in.rank, in.dims, &out));
  char *tmp = malloc(8400);
  if (!tmp) return oom(ctx);
  weft_status_t *st = NULL;
  /* The format is built above from checked attrs. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  for (int64_t i = 0; i < in.num_elements && !st; i++) {
    int n;
    if (in.dtype == WEFT_DT_BOOL) {
      n = snprintf(tmp, 8400, "%s", ((const uint8_t *)in.data)[i] ? "true" : "false");
    } else if (is_float) {
      double v = in.dtype == WEFT_DT_DOUBLE ? ((const double *)in.data)[i]
                                            : weft__cpu_load_f(in.dtype, in.data, i);
      n = snprintf(tmp, 8400, fmt, v);
    } else if (conv[2] == 'u') {
      n = snprintf(tmp, 8400, fmt, (unsigned long long)weft_pc_index_at(&in, i));
    } else {
      n = snprintf(tmp, 8400, fmt, (long long)weft_pc_index_at(&in, i));
    }
    if (n < 0 || n >= 8400) n = 0;
    st = assign(ctx, &out, i, tmp, (size_t)n);
  }
#pragma GCC diagnostic pop
  free(tmp);
  return st;
}

/* safe_strto*'s rules: optional surrounding whitespace, the whole rest consumed, base 10. */
static bool parse_number(const weft_string_t *s, weft_dtype_t dt, void *out, int64_t i) {
  char tmp[128];
  size_t b = 0, e = s->len;
  while (b < e && isspace((unsigned char)s->data[b])) b++;
  while (e > b && isspace((unsigned char)s->data[e - 1])) e--;
  if (b == e || e - b >= sizeof tmp) return false;
  memcpy(tmp, s->data + b, e - b);
  tmp[e - b] = '\0';
  /* strtod also reads hex floats, which TensorFlow's parser does not. */
  if (strchr(tmp, 'x') || strchr(tmp, 'X')) return false;
  char *end;
  errno = 0;
  if (dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE) {
    double v = strtod(tmp, &end);
    if (*end) return false;
    if (dt == WEFT_DT_FLOAT) ((float *)out)[i] = (float)v;
    else ((double *)out)[i] = v;
    return true;
  }
  long long v = strtoll(tmp, &end, 10);
  if (*end || errno == ERANGE) return false;
  if (dt == WEFT_DT_INT32) {
    if (v < INT32_MIN || v > INT32_MAX) return false;
    ((int32_t *)out)[i] = (int32_t)v;
  } else {
    ((int64_t *)out)[i] = v;
  }
  return true;
}

static weft_status_t *k_string_to_number(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in, out;
  weft_dtype_t dt;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "out_type", WEFT_DT_FLOAT, &dt));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, in.rank, in.dims, &out));
  const weft_string_t *s = in.data;
  for (int64_t i = 0; i < in.num_elements; i++) {
    if (!parse_number(&s[i], dt, out.data, i)) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "StringToNumberOp could not correctly convert string: %.*s",
                             SHOWN(&s[i]));
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * StringLength, Substr */

static bool utf8_unit(weft_kernel_ctx_t *ctx) {
  return weft__cpu_attr_is(ctx, "unit", "UTF8_CHAR", "BYTE");
}

/* Characters are the bytes that do not continue a UTF-8 sequence. */
static int64_t utf8_len(const char *p, size_t n) {
  int64_t c = 0;
  for (size_t k = 0; k < n; k++) c += ((unsigned char)p[k] & 0xC0) != 0x80;
  return c;
}

/* The byte offset of character `chr` (<= the character count) of p. */
static size_t utf8_offset(const char *p, size_t n, int64_t chr) {
  size_t k = 0;
  for (int64_t c = 0; k < n; k++) {
    if (((unsigned char)p[k] & 0xC0) != 0x80) {
      if (c == chr) return k;
      c++;
    }
  }
  return n;
}

static weft_status_t *k_string_length(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in, out;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT32, in.rank, in.dims, &out));
  bool utf8 = utf8_unit(ctx);
  const weft_string_t *s = in.data;
  for (int64_t i = 0; i < in.num_elements; i++) {
    int64_t n = utf8 ? utf8_len(s[i].data, s[i].len) : (int64_t)s[i].len;
    if (n > INT32_MAX) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "string %lld has length %lld, more than int32 holds", (long long)i,
                             (long long)n);
    }
    ((int32_t *)out.data)[i] = (int32_t)n;
  }
  return NULL;
}

static weft_status_t *k_substr(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in, pos, len, out;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &pos));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &len));
  if (!weft_pc_same_shape(&pos, &len)) {
    char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "pos and len should have the same shape, got: %s vs. %s",
                           weft__cpu_shape_str(pos.rank, pos.dims, a, sizeof a),
                           weft__cpu_shape_str(len.rank, len.dims, b, sizeof b));
  }
  if (pos.rank != 0 && !weft_pc_same_shape(&pos, &in)) {
    char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "pos and len must be scalars or have the shape of input: %s vs. %s",
                           weft__cpu_shape_str(pos.rank, pos.dims, a, sizeof a),
                           weft__cpu_shape_str(in.rank, in.dims, b, sizeof b));
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_STRING, in.rank, in.dims, &out));
  bool utf8 = utf8_unit(ctx);
  const weft_string_t *s = in.data;
  for (int64_t i = 0; i < in.num_elements; i++) {
    int64_t p = weft_pc_index_at(&pos, pos.rank ? i : 0);
    int64_t l = weft_pc_index_at(&len, len.rank ? i : 0);
    int64_t size = utf8 ? utf8_len(s[i].data, s[i].len) : (int64_t)s[i].len;
    /* A negative pos counts from the end (TensorFlow 1.13 and later). */
    int64_t at = p < 0 ? p + size : p;
    if (at < 0 || at > size) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "pos %lld out of range for string b'%.*s' at index %lld",
                             (long long)p, SHOWN(&s[i]), (long long)i);
    }
    /* A negative len reads to the end, as std::string::substr with npos. */
    int64_t take = l < 0 || l > size - at ? size - at : l;
    size_t b = utf8 ? utf8_offset(s[i].data, s[i].len, at) : (size_t)at;
    size_t e = utf8 ? utf8_offset(s[i].data, s[i].len, at + take) : (size_t)(at + take);
    WEFT_RETURN_IF_ERROR(assign(ctx, &out, i, s[i].data + b, e - b));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * StringSplit, StringSplitV2 */

typedef struct tokens {
  int64_t *row;
  weft_string_t *tok;
  int64_t n, cap;
} tokens_t;

static bool tok_add(tokens_t *t, int64_t row, const char *p, size_t n) {
  if (t->n == t->cap) {
    int64_t cap = t->cap ? 2 * t->cap : 64;
    int64_t *r = realloc(t->row, (size_t)cap * sizeof *r);
    if (r) t->row = r;
    weft_string_t *k = r ? realloc(t->tok, (size_t)cap * sizeof *k) : NULL;
    if (!k) return false;
    t->tok = k;
    t->cap = cap;
  }
  t->row[t->n] = row;
  t->tok[t->n].data = (char *)p;
  t->tok[t->n++].len = n;
  return true;
}

static bool split_v1(tokens_t *t, int64_t row, const weft_string_t *s, const weft_string_t *d,
                     bool skip_empty) {
  if (d->len == 0) {
    for (size_t k = 0; k < s->len; k++)
      if (!tok_add(t, row, s->data + k, 1)) return false;
    return true;
  }
  size_t start = 0;
  for (size_t k = 0; k <= s->len; k++) {
    if (k < s->len && !memchr(d->data, s->data[k], d->len)) continue;
    if (!(skip_empty && k == start) && !tok_add(t, row, s->data + start, k - start)) return false;
    start = k + 1;
  }
  return true;
}

/* Python's str.split(sep, maxsplit); an empty sep splits on runs of whitespace. */
static bool split_v2(tokens_t *t, int64_t row, const weft_string_t *s, const weft_string_t *d,
                     int64_t maxsplit) {
  const char *p = s->data;
  size_t n = s->len, k = 0;
  int64_t splits = 0;
  if (n == 0) return true;
  if (d->len == 0) {
    while (k < n) {
      while (k < n && isspace((unsigned char)p[k])) k++;
      if (k == n) break;
      size_t start = k;
      if (maxsplit >= 0 && splits >= maxsplit) {
        size_t e = n;
        while (e > k && isspace((unsigned char)p[e - 1])) e--;
        return tok_add(t, row, p + k, e - k);
      }
      while (k < n && !isspace((unsigned char)p[k])) k++;
      if (!tok_add(t, row, p + start, k - start)) return false;
      splits++;
    }
    return true;
  }
  size_t start = 0;
  while (k + d->len <= n && (maxsplit < 0 || splits < maxsplit)) {
    if (memcmp(p + k, d->data, d->len) == 0) {
      if (!tok_add(t, row, p + start, k - start)) return false;
      splits++;
      k += d->len;
      start = k;
    } else {
      k++;
    }
  }
  return tok_add(t, row, p + start, n - start);
}

static weft_status_t *split_common(weft_kernel_ctx_t *ctx, bool v2) {
  weft_tensor_view_t in;
  const weft_string_t *d;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  if (in.rank != 1) {
    char sh[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be a vector, got shape: %s",
                           weft__cpu_shape_str(in.rank, in.dims, sh, sizeof sh));
  }
  WEFT_RETURN_IF_ERROR(scalar_string(ctx, 1, v2 ? "sep" : "delimiter", &d));
  bool skip_empty = weft__cpu_attr_bool(ctx, "skip_empty", true);
  int64_t maxsplit = weft__cpu_attr_int(ctx, "maxsplit", -1);
  tokens_t t = {0};
  const weft_string_t *s = in.data;
  bool ok = true;
  for (int64_t i = 0; i < in.num_elements && ok; i++)
    ok = v2 ? split_v2(&t, i, &s[i], d, maxsplit) : split_v1(&t, i, &s[i], d, skip_empty);
  weft_status_t *st = ok ? NULL : oom(ctx);
  int64_t width = 0;
  for (int64_t k = 0, run = 0; k < t.n; k++) {
    run = k > 0 && t.row[k] == t.row[k - 1] ? run + 1 : 1;
    if (run > width) width = run;
  }
  weft_tensor_view_t idx, vals, shape;
  int64_t idims[2] = {t.n, 2};
  if (!st) st = weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2, idims, &idx);
  if (!st) st = weft__cpu_output(ctx, 1, WEFT_DT_STRING, 1, &t.n, &vals);
  int64_t two = 2;
  if (!st) st = weft__cpu_output(ctx, 2, WEFT_DT_INT64, 1, &two, &shape);
  for (int64_t k = 0, col = 0; k < t.n && !st; k++) {
    col = k > 0 && t.row[k] == t.row[k - 1] ? col + 1 : 0;
    ((int64_t *)idx.data)[2 * k] = t.row[k];
    ((int64_t *)idx.data)[2 * k + 1] = col;
    st = assign(ctx, &vals, k, t.tok[k].data, t.tok[k].len);
  }
  if (!st) {
    ((int64_t *)shape.data)[0] = in.num_elements;
    ((int64_t *)shape.data)[1] = width;
  }
  free(t.row);
  free(t.tok);
  return st;
}

static weft_status_t *k_string_split(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return split_common(ctx, false);
}

static weft_status_t *k_string_split_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return split_common(ctx, true);
}

/* ---------------------------------------------------------------------------------------------
 * StringStrip, StringUpper, StringLower */

static weft_status_t *strip_one(weft_kernel_ctx_t *ctx, const weft_string_t *s,
                                const weft_tensor_view_t *out, int64_t i, void *arg) {
  (void)arg;
  size_t b = 0, e = s->len;
  while (b < e && isspace((unsigned char)s->data[b])) b++;
  while (e > b && isspace((unsigned char)s->data[e - 1])) e--;
  return assign(ctx, out, i, s->data + b, e - b);
}

static weft_status_t *case_one(weft_kernel_ctx_t *ctx, const weft_string_t *s,
                               const weft_tensor_view_t *out, int64_t i, void *arg) {
  bool upper = arg != NULL;
  char *tmp = malloc(s->len ? s->len : 1);
  if (!tmp) return oom(ctx);
  /* ASCII letters only: bytes from 0x80 (UTF-8 sequences) pass unchanged. */
  for (size_t k = 0; k < s->len; k++) {
    unsigned char c = (unsigned char)s->data[k];
    tmp[k] = (char)(c < 0x80 ? (upper ? toupper(c) : tolower(c)) : c);
  }
  weft_status_t *st = assign(ctx, out, i, tmp, s->len);
  free(tmp);
  return st;
}

static weft_status_t *k_string_strip(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return map_strings(ctx, strip_one, NULL);
}

static weft_status_t *k_string_case(weft_kernel_ctx_t *ctx, void *state) {
  size_t n;
  const char *enc = weft__cpu_attr_str(ctx, "encoding", "", &n);
  if (n != 0) {
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                           "encoding '%s' is not supported: Weft changes the case of ASCII "
                           "letters only (encoding '')", enc);
  }
  return map_strings(ctx, case_one, state);
}

/* ---------------------------------------------------------------------------------------------
 * EncodeBase64, DecodeBase64 (web-safe alphabet, as TensorFlow's lib/strings/base64.cc) */

static const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static weft_status_t *encode_one(weft_kernel_ctx_t *ctx, const weft_string_t *s,
                                 const weft_tensor_view_t *out, int64_t i, void *arg) {
  bool pad = arg != NULL;
  if (s->len > SIZE_MAX / 2) return oom(ctx);
  char *tmp = malloc((s->len + 2) / 3 * 4 + 1);
  if (!tmp) return oom(ctx);
  size_t o = 0, k = 0;
  const unsigned char *p = (const unsigned char *)s->data;
  for (; k + 3 <= s->len; k += 3) {
    uint32_t v = (uint32_t)p[k] << 16 | (uint32_t)p[k + 1] << 8 | p[k + 2];
    for (int j = 3; j >= 0; j--) tmp[o++] = kB64[(v >> (6 * j)) & 63];
  }
  size_t rest = s->len - k;
  if (rest) {
    uint32_t v = (uint32_t)p[k] << 16 | (rest == 2 ? (uint32_t)p[k + 1] << 8 : 0);
    tmp[o++] = kB64[(v >> 18) & 63];
    tmp[o++] = kB64[(v >> 12) & 63];
    if (rest == 2) tmp[o++] = kB64[(v >> 6) & 63];
    if (pad) {
      tmp[o++] = '=';
      if (rest == 1) tmp[o++] = '=';
    }
  }
  weft_status_t *st = assign(ctx, out, i, tmp, o);
  free(tmp);
  return st;
}

static int b64_value(unsigned char c) {
  const char *at = c ? memchr(kB64, c, 64) : NULL;
  return at ? (int)(at - kB64) : -1;
}

static weft_status_t *decode_one(weft_kernel_ctx_t *ctx, const weft_string_t *s,
                                 const weft_tensor_view_t *out, int64_t i, void *arg) {
  (void)arg;
  size_t n = s->len;
  /* Padding is optional; where present it completes the last group of four. */
  if (n % 4 == 0) {
    for (int j = 0; j < 2 && n > 0 && s->data[n - 1] == '='; j++) n--;
  }
  if (n % 4 == 1) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Invalid base64 data: length %zu of element %lld is not a valid "
                           "base64 length", s->len, (long long)i);
  }
  char *tmp = malloc(n / 4 * 3 + 3);
  if (!tmp) return oom(ctx);
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t k = 0; k < n; k++) {
    int v = b64_value((unsigned char)s->data[k]);
    if (v < 0) {
      free(tmp);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Invalid character found in base64: byte %zu of element %lld", k,
                             (long long)i);
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      tmp[o++] = (char)((acc >> bits) & 0xFF);
    }
  }
  weft_status_t *st = assign(ctx, out, i, tmp, o);
  free(tmp);
  return st;
}

static weft_status_t *k_encode_base64(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  static int pad_marker;
  return map_strings(ctx, encode_one, weft__cpu_attr_bool(ctx, "pad", false) ? &pad_marker : NULL);
}

static weft_status_t *k_decode_base64(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return map_strings(ctx, decode_one, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * ReadFile, WriteFile (io_ops.cc) */

static weft_code_t errno_code(int e) {
  switch (e) {
    case ENOENT: return WEFT_NOT_FOUND;
    case ENOTDIR: return WEFT_FAILED_PRECONDITION;
    case ENAMETOOLONG: return WEFT_INVALID_ARGUMENT;
    case EACCES:
    case EPERM: return WEFT_PERMISSION_DENIED;
    case ENOSPC:
    case ENOMEM: return WEFT_RESOURCE_EXHAUSTED;
    case EISDIR: return WEFT_FAILED_PRECONDITION;
    default: return WEFT_UNKNOWN;
  }
}

/* A NUL-terminated copy of a path (a path with a NUL byte inside names no file). */
static weft_status_t *path_of(weft_kernel_ctx_t *ctx, const weft_string_t *s, char **out) {
  if (s->len == 0 || memchr(s->data, '\0', s->len)) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "invalid file name '%.*s'", SHOWN(s));
  }
  *out = malloc(s->len + 1);
  if (!*out) return oom(ctx);
  memcpy(*out, s->data, s->len);
  (*out)[s->len] = '\0';
  return NULL;
}

static weft_status_t *k_read_file(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_string_t *name;
  WEFT_RETURN_IF_ERROR(scalar_string(ctx, 0, "Input filename tensor", &name));
  char *path;
  WEFT_RETURN_IF_ERROR(path_of(ctx, name, &path));
  weft_status_t *st = NULL;
  FILE *f = fopen(path, "rb");
  struct stat sb;
  if (!f || fstat(fileno(f), &sb) != 0 || S_ISDIR(sb.st_mode)) {
    int e = !f ? errno : S_ISDIR(sb.st_mode) ? EISDIR : errno;
    st = weft__cpu_error(ctx, errno_code(e), "%s; %s", path, strerror(e));
  }
  sbuf_t b = {0};
  char chunk[65536];
  size_t got;
  while (!st && (got = fread(chunk, 1, sizeof chunk, f)) > 0) sb_put(&b, chunk, got);
  if (!st && ferror(f)) st = weft__cpu_error(ctx, WEFT_DATA_LOSS, "%s; read error", path);
  if (!st && b.oom) st = oom(ctx);
  if (f) fclose(f);
  weft_tensor_view_t out;
  if (!st) st = weft__cpu_output(ctx, 0, WEFT_DT_STRING, 0, NULL, &out);
  if (!st) st = assign(ctx, &out, 0, b.data ? b.data : "", b.len);
  free(b.data);
  free(path);
  return st;
}

/* mkdir -p of path's folder (WriteFile creates it, as TensorFlow's kernel does). */
static void make_parents(char *path) {
  for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
    *p = '\0';
    mkdir(path, 0777);
    *p = '/';
  }
}

static weft_status_t *k_write_file(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_string_t *name, *contents;
  WEFT_RETURN_IF_ERROR(scalar_string(ctx, 0, "Input filename tensor", &name));
  WEFT_RETURN_IF_ERROR(scalar_string(ctx, 1, "Contents tensor", &contents));
  char *path;
  WEFT_RETURN_IF_ERROR(path_of(ctx, name, &path));
  make_parents(path);
  weft_status_t *st = NULL;
  FILE *f = fopen(path, "wb");
  if (!f) {
    int e = errno;
    st = weft__cpu_error(ctx, errno_code(e), "%s; %s", path, strerror(e));
  } else {
    bool ok = fwrite(contents->data, 1, contents->len, f) == contents->len;
    ok = (fclose(f) == 0) && ok;
    if (!ok) st = weft__cpu_error(ctx, errno_code(errno), "%s; %s", path, strerror(errno));
  }
  free(path);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * DecodeRaw (decode_raw_op.cc) */

static weft_status_t *k_decode_raw(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in, out;
  weft_dtype_t dt;
  WEFT_RETURN_IF_ERROR(string_input(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "out_type", WEFT_DT_FLOAT, &dt));
  size_t esize = weft__cpu_dtype_size(dt);
  if (esize == 0 || dt == WEFT_DT_STRING || dt == WEFT_DT_BOOL) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "DecodeRaw cannot decode %s",
                           weft__cpu_dtype_name(dt));
  }
  if (in.rank >= WEFT_MAX_RANK) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input of rank %d leaves no room for the "
                           "decoded dimension", in.rank);
  }
  const weft_string_t *s = in.data;
  size_t str_size = in.num_elements > 0 ? s[0].len : 0;
  for (int64_t i = 0; i < in.num_elements; i++) {
    if (s[i].len != str_size) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "DecodeRaw requires input strings to all be the same size, but "
                             "element %lld has size %zu != %zu",
                             (long long)i, s[i].len, str_size);
    }
  }
  if (str_size % esize != 0) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input to DecodeRaw has length %zu that is not a multiple of %zu, "
                           "the size of %s",
                           str_size, esize, weft__cpu_dtype_name(dt));
  }
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, in.dims, sizeof(int64_t) * (size_t)in.rank);
  dims[in.rank] = (int64_t)(str_size / esize);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, in.rank + 1, dims, &out));
  const uint16_t one = 1;
  bool host_little = *(const uint8_t *)&one == 1;
  bool swap = weft__cpu_attr_bool(ctx, "little_endian", true) != host_little;
  uint8_t *dst = out.data;
  for (int64_t i = 0; i < in.num_elements; i++) {
    uint8_t *row = dst + (size_t)i * str_size;
    if (str_size) memcpy(row, s[i].data, str_size);
    if (!swap || esize == 1) continue;
    for (size_t k = 0; k < str_size; k += esize) {
      for (size_t a = 0, z = esize - 1; a < z; a++, z--) {
        uint8_t t = row[k + a];
        row[k + a] = row[k + z];
        row[k + z] = t;
      }
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_string(const weft_registrar_t *reg) {
  static int upper_marker;
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "StringJoin", .compute = k_string_join},
      {.op = "ReduceJoin", .compute = k_reduce_join},
      {.op = "AsString", .compute = k_as_string},
      {.op = "StringToNumber", .compute = k_string_to_number},
      {.op = "StringLength", .compute = k_string_length},
      {.op = "Substr", .compute = k_substr},
      {.op = "StringSplit", .compute = k_string_split},
      {.op = "StringSplitV2", .compute = k_string_split_v2},
      {.op = "StringStrip", .compute = k_string_strip},
      {.op = "StringUpper", .compute = k_string_case, .user_data = &upper_marker},
      {.op = "StringLower", .compute = k_string_case},
      {.op = "EncodeBase64", .compute = k_encode_base64},
      {.op = "DecodeBase64", .compute = k_decode_base64},
      {.op = "ReadFile", .compute = k_read_file},
      {.op = "WriteFile", .compute = k_write_file},
      {.op = "DecodeRaw", .compute = k_decode_raw},
      {.op = "Print", .compute = k_print, .create = print_create, .destroy = free},
      {.op = "PrintV2", .compute = k_print_v2},
      {.op = "StringFormat", .compute = k_string_format},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
