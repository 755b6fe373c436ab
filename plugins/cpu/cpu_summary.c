/* cpu_summary.c: the CPU kernels of TensorFlow's summary ops (ScalarSummary, HistogramSummary,
 * ImageSummary, TensorSummaryV2, MergeSummary; ops in core/src/graph/ops_summary.c). Each writes
 * a serialized `Summary` protobuf (TensorFlow's core/framework/summary.proto field numbers) into
 * a scalar string; the plugin links no protobuf library, so the few fields are encoded by hand.
 * Errors, histogram buckets and image scaling are TensorFlow's (summary_op.cc,
 * lib/histogram/histogram.cc, summary_image_op.cc); images are PNG-encoded with libpng. */
#include <float.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * A growable byte buffer and the protobuf wire format */

typedef weft_cpu_buf_t buf_t;
#define buf_put weft__cpu_buf_put

static void put_varint(buf_t *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (uint8_t)v;
  buf_put(b, tmp, n);
}

static void put_key(buf_t *b, int field, int wire) {
  put_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

static void put_bytes(buf_t *b, int field, const void *p, size_t n) {
  put_key(b, field, 2);
  put_varint(b, n);
  buf_put(b, p, n);
}

/* proto3: a double field equal to 0 is not written. */
static void put_double(buf_t *b, int field, double v) {
  if (v == 0 && !signbit(v)) return;
  put_key(b, field, 1);
  buf_put(b, &v, 8);
}

static void put_float(buf_t *b, int field, float v) {
  put_key(b, field, 5);
  buf_put(b, &v, 4);
}

/* Reads a varint of [*p, end); false when cut short or too long. */
static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t r = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t c = *(*p)++;
    r |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = r;
      return true;
    }
  }
  return false;
}

/* The next field of a message: false at its end or (with *bad) when malformed. For a
 * length-delimited field *data and *n are its bytes; *start is where the field's key began. */
static bool next_field(const uint8_t **p, const uint8_t *end, int *field, int *wire,
                       const uint8_t **data, size_t *n, bool *bad) {
  *bad = false;
  if (*p >= end) return false;
  uint64_t key, v;
  if (!get_varint(p, end, &key)) goto malformed;
  *field = (int)(key >> 3);
  *wire = (int)(key & 7);
  *data = NULL;
  *n = 0;
  switch (*wire) {
    case 0:
      if (!get_varint(p, end, &v)) goto malformed;
      return true;
    case 1:
    case 5: {
      size_t k = *wire == 1 ? 8 : 4;
      if ((size_t)(end - *p) < k) goto malformed;
      *p += k;
      return true;
    }
    case 2:
      if (!get_varint(p, end, &v) || v > (uint64_t)(end - *p)) goto malformed;
      *data = *p;
      *n = (size_t)v;
      *p += v;
      return true;
    default:
      goto malformed;
  }
malformed:
  *bad = true;
  return false;
}

/* Output 0 = the buffer as a scalar string; frees the buffer. */
static weft_status_t *emit(weft_kernel_ctx_t *ctx, buf_t *b) {
  weft_status_t *st = NULL;
  if (b->oom) {
    st = weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory building the summary");
  } else {
    weft_tensor_view_t out;
    st = weft__cpu_output(ctx, 0, WEFT_DT_STRING, 0, NULL, &out);
    if (!st) st = H->string_assign(ctx, &out, 0, b->len ? (const char *)b->data : "", b->len);
  }
  free(b->data);
  return st;
}

static bool same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * ScalarSummary */

static weft_status_t *k_scalar_summary(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t tags, values;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &tags));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &values));
  if (!same_shape(&tags, &values) && !(tags.rank == 0 && values.rank == 0)) {
    weft_pc_shape_pair_t sp;
    weft_pc_shape_pair(&sp, &tags, &values);
    const weft_string_t *t = tags.data;
    if (tags.rank == 0) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "tags and values are not the same "
                             "shape: %s != %s (tag '%.*s')", sp.a, sp.b, (int)t[0].len, t[0].data);
    }
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "tags and values are not the same shape: %s != %s", sp.a, sp.b);
  }
  const weft_string_t *t = tags.data;
  buf_t b = {0}, v = {0};
  for (int64_t i = 0; i < tags.num_elements; i++) {
    v.len = 0;
    put_bytes(&v, 1, t[i].data, t[i].len);
    put_float(&v, 2, (float)weft__cpu_get_double(&values, i));
    put_bytes(&b, 1, v.data, v.len);
    b.oom |= v.oom;
  }
  free(v.data);
  return emit(ctx, &b);
}

/* ---------------------------------------------------------------------------------------------
 * HistogramSummary */

/* TensorFlow's default bucket limits into a new array (the caller frees): -DBL_MAX, the negated
 * exponential ones, 0, then 1e-12 growing by 10% while below 1e20, then DBL_MAX (histogram.cc,
 * InitDefaultBucketsInner). About 1550 doubles: cheap next to a summary's protobuf. */
static double *default_limits(size_t *n) {
  size_t k = 0;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) k++;
  size_t total = 2 * (k + 1) + 1;
  double *l = malloc(total * sizeof(double));
  if (!l) return NULL;
  double v = 1.0e-12;
  for (size_t j = 0; j < k; j++, v *= 1.1) l[k + 2 + j] = v;
  l[2 * k + 2] = DBL_MAX;
  for (size_t j = 0; j <= k; j++) l[j] = -l[2 * k + 2 - j];
  l[k + 1] = 0.0;
  *n = total;
  return l;
}

static weft_status_t *k_histogram_summary(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t tag, values;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &tag));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &values));
  if (tag.rank != 0) {
    char s[CPU_SHAPE_STR_LEN];
    weft__cpu_shape_str(tag.rank, tag.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "tags must be scalar, but has shape %s", s);
  }
  size_t nl = 0;
  double *limits = default_limits(&nl);
  double *counts = limits ? calloc(nl, sizeof(double)) : NULL;
  if (!counts) {
    free(limits);
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  double mn = DBL_MAX, mx = -DBL_MAX, num = 0, sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < values.num_elements; i++) {
    double x = weft__cpu_get_double(&values, i);
    if (isnan(x) || isinf(x)) {
      free(counts);
      free(limits);
      return H->status_new(WEFT_INVALID_ARGUMENT, "%s in summary histogram for: %s",
                           isnan(x) ? "Nan" : "Infinity", H->kernel_node_name(ctx));
    }
    /* upper_bound: the first limit above x. */
    size_t lo = 0, hi = nl;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (limits[mid] > x) hi = mid;
      else lo = mid + 1;
    }
    if (lo >= nl) lo = nl - 1;
    counts[lo] += 1;
    if (x < mn) mn = x;
    if (x > mx) mx = x;
    num += 1;
    sum += x;
    sum_sq += x * x;
  }
  /* EncodeToProto without zero buckets: a run of empty buckets collapses into one entry whose
   * limit is the run's last. */
  buf_t lim = {0}, cnt = {0};
  for (size_t i = 0; i < nl;) {
    double end = limits[i], c = counts[i];
    i++;
    if (c <= 0.0) {
      while (i < nl && counts[i] <= 0.0) {
        end = limits[i];
        c = counts[i];
        i++;
      }
    }
    buf_put(&lim, &end, 8);
    buf_put(&cnt, &c, 8);
  }
  free(counts);
  free(limits);
  buf_t h = {0};
  put_double(&h, 1, mn);
  put_double(&h, 2, mx);
  put_double(&h, 3, num);
  put_double(&h, 4, sum);
  put_double(&h, 5, sum_sq);
  put_bytes(&h, 6, lim.data, lim.len); /* packed, as proto3 writes repeated doubles */
  put_bytes(&h, 7, cnt.data, cnt.len);
  h.oom |= lim.oom || cnt.oom;
  free(lim.data);
  free(cnt.data);
  const weft_string_t *t = tag.data;
  buf_t v = {0}, b = {0};
  put_bytes(&v, 1, t[0].data, t[0].len);
  put_bytes(&v, 5, h.data, h.len);
  put_bytes(&b, 1, v.data, v.len);
  b.oom |= h.oom || v.oom;
  free(h.data);
  free(v.data);
  return emit(ctx, &b);
}

/* ---------------------------------------------------------------------------------------------
 * ImageSummary */

/* A float image [hw, depth] to uint8 as NormalizeFloatImage does: the finite pixels' range picks
 * the transform (all >= 0: scale by 255 / max; else centre at 128 and scale by 127 / max |v|;
 * a range under 1e-6 scales by 0), the cast truncates, and a pixel with any non-finite channel
 * becomes bad_color. */
static void normalize_float_image(const weft_tensor_view_t *x, int64_t first, int64_t hw,
                                  int64_t depth, const uint8_t *bad, uint8_t *out) {
  double mn = INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < hw; i++) {
    bool finite = true;
    for (int64_t j = 0; j < depth && finite; j++)
      finite = isfinite(weft__cpu_get_double(x, first + i * depth + j));
    for (int64_t j = 0; j < depth && finite; j++) {
      /* TensorFlow keeps the range in float. */
      float v = (float)weft__cpu_get_double(x, first + i * depth + j);
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
  }
  const float kZeroThreshold = 1e-6f;
  double scale, offset;
  if (mn < 0) {
    float max_val = fmaxf(fabsf((float)mn), fabsf((float)mx));
    scale = max_val < kZeroThreshold ? 0.0f : 127.0f / max_val;
    offset = 128.0f;
  } else {
    scale = mx < kZeroThreshold ? 0.0f : 255.0f / (float)mx;
    offset = 0.0f;
  }
  bool dbl = x->dtype == WEFT_DT_DOUBLE;
  for (int64_t i = 0; i < hw; i++) {
    bool finite = true;
    for (int64_t j = 0; j < depth && finite; j++)
      finite = isfinite(weft__cpu_get_double(x, first + i * depth + j));
    for (int64_t j = 0; j < depth; j++) {
      double v = weft__cpu_get_double(x, first + i * depth + j);
      /* float32 arithmetic for float and half (Eigen computes in T; half rounds through float
       * here), double for double. */
      double y = dbl ? v * scale + offset : (double)((float)v * (float)scale + (float)offset);
      if (y < 0) y = 0;
      if (y > 255) y = 255;
      out[i * depth + j] = finite ? (uint8_t)y : bad[j];
    }
  }
}

/* PNG bytes of a [h, w, depth] uint8 image (depth 1 grey, 3 RGB, 4 RGBA) with zlib's default
 * compression, appended to `b` as field `field`. False when libpng fails. */
static bool put_png(buf_t *b, int field, const uint8_t *pixels, int64_t h, int64_t w,
                    int64_t depth) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  img.width = (png_uint_32)w;
  img.height = (png_uint_32)h;
  img.format = depth == 1 ? PNG_FORMAT_GRAY : depth == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  png_int_32 stride = (png_int_32)(w * depth);
  if (!png_image_write_to_memory(&img, NULL, &size, 0, pixels, stride, NULL)) return false;
  void *mem = malloc(size ? size : 1);
  if (!mem) return false;
  bool ok = png_image_write_to_memory(&img, mem, &size, 0, pixels, stride, NULL) != 0;
  if (ok) put_bytes(b, field, mem, size);
  free(mem);
  png_image_free(&img);
  return ok;
}

/* TensorFlow's DataTypeString ("float", "uint8") for its messages. */
static const char *tf_dtype_name(weft_dtype_t t) {
#define WEFT_SUMMARY_DT_NAME(e, c, name, tf, proto) \
  if (t == e) return tf;
  WEFT_DTYPE_LIST(WEFT_SUMMARY_DT_NAME)
#undef WEFT_SUMMARY_DT_NAME
  return "unknown";
}

static weft_status_t *k_image_summary(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t tag, x;
  /* The host fills as much of a view as its struct_size says (the ABI's rule), so it is set
   * here; stack garbage there once made the view come back unfilled. */
  weft_tensor_view_t bad = {.struct_size = sizeof bad};
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &tag));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &x));
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  int64_t max_images = weft__cpu_attr_int(ctx, "max_images", 3);
  WEFT_RETURN_IF_ERROR(H->attr_tensor(attrs, "bad_color", &bad));
  char s[CPU_SHAPE_STR_LEN];
  if (tag.rank != 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tags must be a scalar");
  weft__cpu_shape_str(x.rank, x.dims, s, sizeof s);
  if (x.rank != 4 || (x.dims[3] != 1 && x.dims[3] != 3 && x.dims[3] != 4)) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Tensor must be 4-D with last dim 1, 3, or 4, not %s", s);
  }
  int64_t batch = x.dims[0], h = x.dims[1], w = x.dims[2], depth = x.dims[3];
  if (batch >= (1LL << 31) || h >= (1LL << 31) || w >= (1LL << 31) || h * w >= (1LL << 29))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tensor too large for summary %s", s);
  if (bad.rank != 1) {
    weft__cpu_shape_str(bad.rank, bad.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "bad_color must be a vector, got shape %s",
                           s);
  }
  if (bad.dtype != WEFT_DT_UINT8) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "bad_color must be uint8, got %s",
                           tf_dtype_name(bad.dtype));
  }
  if (bad.dims[0] < depth) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "bad_color size %lld < image depth %lld",
                           (long long)bad.dims[0], (long long)depth);
  }
  int64_t n = batch < max_images ? batch : max_images;
  int64_t hw = h * w;
  uint8_t *pixels = x.dtype == WEFT_DT_UINT8 ? NULL : malloc((size_t)(hw * depth) + 1);
  if (x.dtype != WEFT_DT_UINT8 && !pixels)
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  const weft_string_t *t = tag.data;
  buf_t b = {0}, v = {0}, img = {0};
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    const uint8_t *p;
    if (x.dtype == WEFT_DT_UINT8) {
      p = (const uint8_t *)x.data + i * hw * depth;
    } else {
      normalize_float_image(&x, i * hw * depth, hw, depth, bad.data, pixels);
      p = pixels;
    }
    /* The tag counts the images asked for, not those produced (TensorFlow's rule). */
    char suffix[48];
    if (max_images > 1) snprintf(suffix, sizeof suffix, "/image/%lld", (long long)i);
    else snprintf(suffix, sizeof suffix, "/image");
    v.len = img.len = 0;
    put_key(&v, 1, 2);
    put_varint(&v, t[0].len + strlen(suffix));
    buf_put(&v, t[0].data, t[0].len);
    buf_put(&v, suffix, strlen(suffix));
    put_key(&img, 1, 0);
    put_varint(&img, (uint64_t)h);
    put_key(&img, 2, 0);
    put_varint(&img, (uint64_t)w);
    put_key(&img, 3, 0);
    put_varint(&img, (uint64_t)depth);
    ok = hw == 0 || put_png(&img, 4, p, h, w, depth);
    put_bytes(&v, 4, img.data, img.len);
    put_bytes(&b, 1, v.data, v.len);
    b.oom |= v.oom || img.oom;
  }
  free(pixels);
  free(v.data);
  free(img.data);
  if (!ok) {
    free(b.data);
    return weft__cpu_error(ctx, WEFT_INTERNAL, "PNG encoding failed");
  }
  return emit(ctx, &b);
}

/* ---------------------------------------------------------------------------------------------
 * TensorSummaryV2 */

/* TensorProto: dtype(1), tensor_shape(2){dim(2){size(1)}}, tensor_content(4) for numbers, or
 * string_val(8) per element for strings (Tensor::AsProtoTensorContent / AsProtoField). */
static void put_tensor_proto(buf_t *b, const weft_tensor_view_t *x) {
  put_key(b, 1, 0);
  put_varint(b, (uint64_t)x->dtype);
  buf_t shape = {0}, dim = {0};
  for (int i = 0; i < x->rank; i++) {
    dim.len = 0;
    if (x->dims[i]) {
      put_key(&dim, 1, 0);
      put_varint(&dim, (uint64_t)x->dims[i]);
    }
    put_bytes(&shape, 2, dim.data, dim.len);
  }
  put_bytes(b, 2, shape.data, shape.len);
  b->oom |= shape.oom || dim.oom;
  free(shape.data);
  free(dim.data);
  if (x->dtype == WEFT_DT_STRING) {
    const weft_string_t *s = x->data;
    for (int64_t i = 0; i < x->num_elements; i++) put_bytes(b, 8, s[i].data, s[i].len);
  } else if (x->nbytes) {
    put_bytes(b, 4, x->data, x->nbytes);
  }
}

static weft_status_t *k_tensor_summary_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t tag, tensor, meta;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &tag));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &tensor));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &meta));
  if (tag.num_elements != 1 || meta.num_elements != 1) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "tag and serialized_summary_metadata "
                           "must be scalars, but have %lld and %lld elements",
                           (long long)tag.num_elements, (long long)meta.num_elements);
  }
  const weft_string_t *t = tag.data, *m = meta.data;
  /* SummaryMetadata is copied as it is: the same bytes TensorFlow's parse and re-serialize give
   * for a well-formed message; a malformed one is refused as TensorFlow's ParseFromString. */
  const uint8_t *p = (const uint8_t *)m[0].data, *end = p + m[0].len;
  int field, wire;
  const uint8_t *d;
  size_t n;
  bool bad = false;
  while (next_field(&p, end, &field, &wire, &d, &n, &bad)) {
  }
  if (bad) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "serialized_summary_metadata is not a valid SummaryMetadata");
  }
  buf_t v = {0}, tp = {0}, b = {0};
  put_bytes(&v, 1, t[0].data, t[0].len);
  put_tensor_proto(&tp, &tensor);
  put_bytes(&v, 8, tp.data, tp.len);
  put_bytes(&v, 9, m[0].data, m[0].len);
  put_bytes(&b, 1, v.data, v.len);
  b.oom |= v.oom || tp.oom;
  free(v.data);
  free(tp.data);
  return emit(ctx, &b);
}

/* ---------------------------------------------------------------------------------------------
 * MergeSummary */

static weft_status_t *k_merge_summary(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n_inputs = H->kernel_num_inputs(ctx);
  buf_t b = {0};
  /* Tags seen so far, as (pointer, length) into the inputs (alive for the call). */
  size_t n_tags = 0, cap_tags = 0;
  weft_string_t *tags = NULL;
  weft_status_t *st = NULL;
  for (int i = 0; i < n_inputs && !st; i++) {
    weft_tensor_view_t in;
    st = weft__cpu_input(ctx, i, &in);
    const weft_string_t *s = st ? NULL : in.data;
    for (int64_t j = 0; !st && j < in.num_elements; j++) {
      const uint8_t *p = (const uint8_t *)s[j].data, *end = p + s[j].len;
      int field, wire;
      const uint8_t *d;
      size_t n;
      bool bad = false;
      while (!st && next_field(&p, end, &field, &wire, &d, &n, &bad)) {
        if (field != 1 || wire != 2) continue;
        const uint8_t *q = d, *qe = d + n;
        int f2, w2;
        const uint8_t *td = NULL, *d2;
        size_t tn = 0, n2;
        bool bad2 = false;
        while (next_field(&q, qe, &f2, &w2, &d2, &n2, &bad2)) {
          if (f2 == 1 && w2 == 2) {
            td = d2;
            tn = n2;
          }
        }
        if (bad2) {
          bad = true;
          break;
        }
        for (size_t k = 0; tn && k < n_tags; k++) {
          if (tags[k].len == tn && memcmp(tags[k].data, td, tn) == 0) {
            st = H->status_new(WEFT_INVALID_ARGUMENT, "Duplicate tag %.*s found in summary "
                               "inputs ", (int)tn, (const char *)td);
          }
        }
        if (st) break;
        if (tn) {
          if (n_tags == cap_tags) {
            cap_tags = cap_tags ? 2 * cap_tags : 16;
            weft_string_t *nt = realloc(tags, cap_tags * sizeof *tags);
            if (!nt) {
              st = weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
              break;
            }
            tags = nt;
          }
          tags[n_tags].data = (char *)td;
          tags[n_tags++].len = tn;
        }
        put_bytes(&b, 1, d, n);
      }
      if (!st && bad) {
        st = H->status_new(WEFT_INVALID_ARGUMENT, "Could not parse one of the summary inputs");
      }
    }
  }
  free(tags);
  if (st) {
    free(b.data);
    return st;
  }
  return emit(ctx, &b);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_summary(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "ScalarSummary", .compute = k_scalar_summary},
      {.op = "HistogramSummary", .compute = k_histogram_summary},
      {.op = "ImageSummary", .compute = k_image_summary},
      {.op = "TensorSummaryV2", .compute = k_tensor_summary_v2},
      {.op = "MergeSummary", .compute = k_merge_summary},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
