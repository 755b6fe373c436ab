/* cases_summary.c: conformance cases of the summary ops (ScalarSummary, HistogramSummary,
 * MergeSummary). Their output is a serialized `Summary` protobuf, so the checks decode it here
 * (the wire format by hand, TensorFlow's summary.proto field numbers, nothing of Weft's) and
 * compare the fields with references computed in double precision; MergeSummary's output is
 * compared byte for byte with the concatenation of its inputs. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "conformance.h"

/* ---------------------------------------------------------------------------------------------
 * A reader of the protobuf wire format */

typedef struct pbf {
  int field, wire;
  uint64_t u;            /* varint, or the raw fixed64 / fixed32 bits */
  const guint8 *data;    /* length-delimited bytes */
  size_t len;
} pbf_t;

static bool pb_varint(const guint8 **p, const guint8 *end, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    guint8 b = *(*p)++;
    r |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* The next field of [*p, end); false at the end or (*bad) when malformed. */
static bool pb_field(const guint8 **p, const guint8 *end, pbf_t *f, bool *bad) {
  *bad = false;
  if (*p >= end) return false;
  uint64_t key;
  *bad = true;
  if (!pb_varint(p, end, &key)) return false;
  f->field = (int)(key >> 3);
  f->wire = (int)(key & 7);
  f->u = 0;
  if (f->wire == 0) {
    if (!pb_varint(p, end, &f->u)) return false;
  } else if (f->wire == 1 || f->wire == 5) {
    size_t n = f->wire == 1 ? 8 : 4;
    if ((size_t)(end - *p) < n) return false;
    memcpy(&f->u, *p, n);
    *p += n;
  } else if (f->wire == 2) {
    if (!pb_varint(p, end, &f->u) || f->u > (uint64_t)(end - *p)) return false;
    f->data = *p;
    f->len = (size_t)f->u;
    *p += f->len;
  } else {
    return false;
  }
  *bad = false;
  return true;
}

/* The Summary.value messages of a serialized Summary (pointers into it), or NULL when the bytes
 * are not a Summary. */
static GArray *summary_values(const GString *s) {
  GArray *values = g_array_new(FALSE, FALSE, sizeof(pbf_t));
  const guint8 *p = (const guint8 *)s->str, *end = p + s->len;
  pbf_t f;
  bool bad;
  while (pb_field(&p, end, &f, &bad)) {
    if (f.field != 1 || f.wire != 2) continue;
    g_array_append_val(values, f);
  }
  if (bad) {
    g_array_free(values, TRUE);
    return NULL;
  }
  return values;
}

/* Field `field` of a message (the last one), as pbf; false when absent. */
static bool find_field(const pbf_t *msg, int field, pbf_t *out) {
  const guint8 *p = msg->data, *end = msg->data + msg->len;
  pbf_t f;
  bool bad, found = false;
  while (pb_field(&p, end, &f, &bad)) {
    if (f.field == field) {
      *out = f;
      found = true;
    }
  }
  return found && !bad;
}

static double as_double(const pbf_t *f) {
  double d;
  memcpy(&d, &f->u, 8);
  return d;
}

static float as_float(const pbf_t *f) {
  float v;
  uint32_t u = (uint32_t)f->u;
  memcpy(&v, &u, 4);
  return v;
}

/* A proto3 double field: absent is 0. */
static double double_field(const pbf_t *msg, int field) {
  pbf_t f;
  return find_field(msg, field, &f) && f.wire == 1 ? as_double(&f) : 0.0;
}

/* ---------------------------------------------------------------------------------------------
 * ScalarSummary */

static char *check_scalar(const cf_case_t *c, cf_array_t *const *outputs, int n_outputs) {
  if (n_outputs != 1 || outputs[0]->dtype != WEFT_DT_STRING || outputs[0]->n != 1)
    return g_strdup("the output is not one string");
  const cf_array_t *tags = c->inputs[0], *values = c->inputs[1];
  GArray *vals = summary_values(outputs[0]->s[0]);
  if (!vals) return g_strdup("the output is not a Summary protobuf");
  char *err = NULL;
  if ((int64_t)vals->len != tags->n)
    err = g_strdup_printf("%u values, want %" G_GINT64_FORMAT, vals->len, tags->n);
  for (guint i = 0; !err && i < vals->len; i++) {
    const pbf_t *v = &g_array_index(vals, pbf_t, i);
    pbf_t tag, simple;
    if (!find_field(v, 1, &tag) || tag.len != tags->s[i]->len ||
        memcmp(tag.data, tags->s[i]->str, tag.len) != 0) {
      err = g_strdup_printf("value %u: the tag is not '%s'", i, tags->s[i]->str);
    } else if (!find_field(v, 2, &simple) || simple.wire != 5) {
      err = g_strdup_printf("value %u: no simple_value", i);
    } else if (as_float(&simple) != (float)values->v[i]) {
      err = g_strdup_printf("value %u: simple_value %.9g, want %.9g", i, as_float(&simple),
                            (float)values->v[i]);
    }
  }
  g_array_free(vals, TRUE);
  return err;
}

static cf_array_t *tag_array(cf_rng_t *rng, int rank, const int64_t *dims) {
  cf_gen_t g = {CF_GEN_ARANGE, 0, 0};
  return cf_gen_array(rng, WEFT_DT_STRING, rank, dims, g);
}

static void emit_scalar(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  int64_t dims[2][2] = {{}, {2, 3}};
  int ranks[2] = {0, 2};
  const char *names[2] = {"scalar", "2x3"};
  for (int s = 0; s < 2; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_case_input(c, tag_array(&rng, ranks[s], dims[s]));
    cf_gen_t g = {CF_GEN_UNIFORM, cf_dtype_is_signed(dt) ? -20 : 0, 20};
    cf_case_input(c, cf_gen_array(&rng, dt, ranks[s], dims[s], g));
    cf_case_expect(c, NULL);
    c->check = check_scalar;
    cf_run_case(ctx, c);
  }
  /* TensorFlow's shape check. */
  cf_case_t *c = cf_case_new(op, "shape_mismatch", dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  int64_t two[1] = {2}, three[1] = {3};
  cf_case_input(c, tag_array(&rng, 1, two));
  cf_case_input(c, cf_gen_uniform(&rng, dt, 1, three, 0, 9));
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "tags and values are not the same shape: [2] != [3]");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * HistogramSummary */

static char *check_histogram(const cf_case_t *c, cf_array_t *const *outputs, int n_outputs) {
  if (n_outputs != 1 || outputs[0]->dtype != WEFT_DT_STRING || outputs[0]->n != 1)
    return g_strdup("the output is not one string");
  const cf_array_t *x = c->inputs[1];
  GArray *vals = summary_values(outputs[0]->s[0]);
  if (!vals) return g_strdup("the output is not a Summary protobuf");
  char *err = NULL;
  pbf_t histo;
  if (vals->len != 1 || !find_field(&g_array_index(vals, pbf_t, 0), 5, &histo)) {
    err = g_strdup("not one value with a histo");
  } else {
    /* An empty histogram keeps TensorFlow's starting min and max. */
    double mn = DBL_MAX, mx = -DBL_MAX, sum = 0, sum_sq = 0;
    for (int64_t i = 0; i < x->n; i++) {
      mn = fmin(mn, x->v[i]);
      mx = fmax(mx, x->v[i]);
      sum += x->v[i];
      sum_sq += x->v[i] * x->v[i];
    }
    double got[5], want[5] = {mn, mx, (double)x->n, sum, sum_sq};
    static const char *const what[5] = {"min", "max", "num", "sum", "sum_squares"};
    for (int k = 0; k < 5 && !err; k++) {
      got[k] = double_field(&histo, k + 1);
      if (fabs(got[k] - want[k]) > 1e-9 * fmax(1.0, fabs(want[k])))
        err = g_strdup_printf("%s %.17g, want %.17g", what[k], got[k], want[k]);
    }
    /* bucket_limit (6) increasing; bucket (7) counts summing to num; each value in the bucket
     * whose limit is the first above it (TensorFlow's upper_bound), with empty runs collapsed:
     * a value v lies in bucket k when limit[k-1] <= v < limit[k]. */
    pbf_t lim, cnt;
    if (!err && (!find_field(&histo, 6, &lim) || !find_field(&histo, 7, &cnt) ||
                 lim.wire != 2 || cnt.wire != 2 || lim.len != cnt.len || lim.len % 8)) {
      err = g_strdup("bucket_limit and bucket are not packed lists of one length");
    }
    size_t nb = err ? 0 : lim.len / 8;
    double total = 0;
    for (size_t k = 0; k < nb && !err; k++) {
      double l, n, prev = -INFINITY;
      memcpy(&l, lim.data + 8 * k, 8);
      memcpy(&n, cnt.data + 8 * k, 8);
      if (k) memcpy(&prev, lim.data + 8 * (k - 1), 8);
      if (!(l > prev)) err = g_strdup_printf("bucket_limit[%zu] %g is not above %g", k, l, prev);
      double in = 0;
      for (int64_t i = 0; i < x->n; i++) in += x->v[i] >= prev && x->v[i] < l;
      if (!err && in != n)
        err = g_strdup_printf("bucket %zu (limit %g) counts %g, want %g", k, l, n, in);
      total += n;
    }
    if (!err && total != (double)x->n) err = g_strdup_printf("buckets hold %g values", total);
  }
  g_array_free(vals, TRUE);
  return err;
}

static void emit_histogram(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  int64_t n[2] = {1000, 0};
  const char *names[2] = {"n1000", "empty"};
  for (int s = 0; s < 2; s++) {
    cf_case_t *c = cf_case_new(op, names[s], dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_case_input(c, tag_array(&rng, 0, NULL));
    cf_case_input(c, cf_gen_uniform(&rng, dt, 1, &n[s], cf_dtype_is_signed(dt) ? -50 : 0, 50));
    cf_case_expect(c, NULL);
    c->check = check_histogram;
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * MergeSummary */

/* A Summary of one simple value, encoded here. */
static GString *scalar_summary(const char *tag, float v) {
  GString *value = g_string_new(NULL), *out = g_string_new(NULL);
  g_string_append_c(value, 0x0a);
  g_string_append_c(value, (char)strlen(tag));
  g_string_append(value, tag);
  g_string_append_c(value, 0x15);
  g_string_append_len(value, (const char *)&v, 4);
  g_string_append_c(out, 0x0a);
  g_string_append_c(out, (char)value->len);
  g_string_append_len(out, value->str, (gssize)value->len);
  g_string_free(value, TRUE);
  return out;
}

static void emit_merge(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, NULL, dt)) return;
  static const char *const tags[3] = {"loss", "accuracy", "lr"};
  cf_case_t *c = cf_case_new(op, "three", dt);
  cf_array_t *want = cf_array_new(WEFT_DT_STRING, 0, NULL);
  for (int i = 0; i < 3; i++) {
    cf_array_t *in = cf_array_new(WEFT_DT_STRING, 0, NULL);
    GString *s = scalar_summary(tags[i], 0.5f * (float)i);
    g_string_assign(in->s[0], "");
    g_string_append_len(in->s[0], s->str, (gssize)s->len);
    g_string_append_len(want->s[0], s->str, (gssize)s->len);
    g_string_free(s, TRUE);
    cf_case_input(c, in);
  }
  int arg_len[1] = {3};
  cf_case_args(c, 1, arg_len);
  cf_case_attr_int(c, "N", 3);
  cf_case_expect(c, want);
  cf_run_case(ctx, c);

  c = cf_case_new(op, "duplicate_tag", dt);
  for (int i = 0; i < 2; i++) {
    cf_array_t *in = cf_array_new(WEFT_DT_STRING, 0, NULL);
    GString *s = scalar_summary("loss", (float)i);
    g_string_append_len(in->s[0], s->str, (gssize)s->len);
    g_string_free(s, TRUE);
    cf_case_input(c, in);
  }
  int two[1] = {2};
  cf_case_args(c, 1, two);
  cf_case_attr_int(c, "N", 2);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Duplicate tag loss found in summary inputs");
  cf_run_case(ctx, c);
}

static const weft_dtype_t string_only[] = {WEFT_DT_STRING, WEFT_DT_INVALID};

const cf_suite_t cf_suites_summary[] = {
    {"ScalarSummary", cf_dtypes_numeric, emit_scalar, NULL},
    {"HistogramSummary", cf_dtypes_numeric, emit_histogram, NULL},
    {"MergeSummary", string_only, emit_merge, NULL},
    {NULL, NULL, NULL, NULL},
};
