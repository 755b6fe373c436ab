/* onnx/map_conv_pool.c: ONNX Conv, MaxPool and AveragePool, NCHW transposed to NHWC around
 * Conv2D, MaxPool and AvgPool (explicit padding, ceil_mode as extra padding, count_include_pad as
 * a rescaling); pooling with dilations, 3-D windows or an argmax output is built from strided
 * slices. GlobalAveragePool and GlobalMaxPool are reductions. */
#include <math.h>
#include <string.h>

#include "map.h"

typedef struct window {
  int s; /* spatial rank */
  int64_t in[3], k[3], stride[3], dil[3], pb[3], pe[3], ext[3], out[3];
} window_t;

/* Reads kernel_shape/strides/dilations/pads/auto_pad/ceil_mode and computes the output size,
 * the padding before and after, and the extra padding ceil mode needs at the end. */
static weft_status_t *read_window(cf_onnx_ctx_t *x, const Onnx__NodeProto *node,
                                  const int64_t *dims, int rank, const int64_t *kernel,
                                  window_t *w) {
  memset(w, 0, sizeof *w);
  w->s = rank - 2;
  if (w->s < 1 || w->s > 3) return cf_onnx_unsupported(x, "%d-D windows are not mapped", w->s);
  size_t nk = 0, ns = 0, nd = 0, np = 0;
  const int64_t *ks = cf_onnx_attr_ints(node, "kernel_shape", &nk);
  const int64_t *st = cf_onnx_attr_ints(node, "strides", &ns);
  const int64_t *dl = cf_onnx_attr_ints(node, "dilations", &nd);
  const int64_t *pd = cf_onnx_attr_ints(node, "pads", &np);
  const char *auto_pad = cf_onnx_attr_string(node, "auto_pad", "NOTSET");
  bool ceil_mode = cf_onnx_attr_int(node, "ceil_mode", 0) != 0;
  for (int i = 0; i < w->s; i++) {
    w->in[i] = dims[2 + i];
    w->k[i] = nk == (size_t)w->s ? ks[i] : kernel ? kernel[i] : 1;
    w->stride[i] = ns == (size_t)w->s ? st[i] : 1;
    w->dil[i] = nd == (size_t)w->s ? dl[i] : 1;
    w->pb[i] = np == 2 * (size_t)w->s ? pd[i] : 0;
    w->pe[i] = np == 2 * (size_t)w->s ? pd[i + w->s] : 0;
    int64_t eff = (w->k[i] - 1) * w->dil[i] + 1;
    if (strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0) {
      w->out[i] = (w->in[i] + w->stride[i] - 1) / w->stride[i];
      int64_t total = (w->out[i] - 1) * w->stride[i] + eff - w->in[i];
      if (total < 0) total = 0;
      bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
      w->pb[i] = upper ? total / 2 : total - total / 2;
      w->pe[i] = total - w->pb[i];
    } else {
      if (strcmp(auto_pad, "VALID") == 0) w->pb[i] = w->pe[i] = 0;
      int64_t span = w->in[i] + w->pb[i] + w->pe[i] - eff;
      if (span < 0) return cf_onnx_unsupported(x, "the window is larger than the input");
      w->out[i] = (ceil_mode ? (span + w->stride[i] - 1) / w->stride[i] : span / w->stride[i]) + 1;
      /* A last window that would start in the end padding is dropped. */
      if (ceil_mode && (w->out[i] - 1) * w->stride[i] >= w->in[i] + w->pb[i]) w->out[i]--;
    }
    int64_t need = (w->out[i] - 1) * w->stride[i] + eff;
    int64_t have = w->in[i] + w->pb[i] + w->pe[i];
    w->ext[i] = need > have ? need - have : 0;
  }
  return NULL;
}

/* NCHW <-> NHWC for a spatial rank s (s + 2 dims). */
static void to_last_perm(int s, int64_t *perm) {
  perm[0] = 0;
  for (int i = 0; i < s; i++) perm[1 + i] = 2 + i;
  perm[s + 1] = 1;
}
static void to_first_perm(int s, int64_t *perm) {
  perm[0] = 0;
  perm[1] = s + 1;
  for (int i = 0; i < s; i++) perm[2 + i] = 1 + i;
}

static weft_status_t *map_conv(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0), wt = cf_onnx_in(x, node, 1),
                bias = cf_onnx_in(x, node, 2);
  int64_t dims[WEFT_MAX_RANK], wd[WEFT_MAX_RANK];
  int rank, wr;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims)) || (st = cf_onnx_need_shape(x, wt, &wr, wd)))
    return st;
  if (rank != 4 && rank != 3) return cf_onnx_unsupported(x, "only 1-D and 2-D Conv are mapped");
  window_t w;
  if ((st = read_window(x, node, dims, rank, wd + 2, &w))) return st;
  int64_t group = cf_onnx_attr_int(node, "group", 1);
  (void)group; /* grouped filters show in the filter's depth (C / group) */
  if (rank == 3) {
    /* 1-D: a 2-D convolution over H = 1. */
    int64_t d4[4] = {dims[0], dims[1], 1, dims[2]}, w4[4] = {wd[0], wd[1], 1, wd[2]};
    v = cf_onnx_reshape(x, v, d4, 4, &st);
    wt = cf_onnx_reshape(x, wt, w4, 4, &st);
    w.in[1] = w.in[0];
    w.k[1] = w.k[0];
    w.stride[1] = w.stride[0];
    w.dil[1] = w.dil[0];
    w.pb[1] = w.pb[0];
    w.pe[1] = w.pe[0];
    w.out[1] = w.out[0];
    w.in[0] = w.k[0] = w.stride[0] = w.dil[0] = w.out[0] = 1;
    w.pb[0] = w.pe[0] = 0;
  }
  int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2}, filt[4] = {2, 3, 1, 0};
  weft_output_t xn = cf_onnx_transpose(x, v, to_nhwc, 4, &st);
  weft_output_t fn = cf_onnx_transpose(x, wt, filt, 4, &st);
  if (st) return st;
  weft_op_builder_t *b = cf_onnx_op(x, "Conv2D");
  weft_op_add_input(b, xn);
  weft_op_add_input(b, fn);
  int64_t strides[4] = {1, w.stride[0], w.stride[1], 1}, dil[4] = {1, w.dil[0], w.dil[1], 1};
  int64_t pads[8] = {0, 0, w.pb[0], w.pe[0], w.pb[1], w.pe[1], 0, 0};
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_int_list(b, "dilations", dil, 4);
  weft_op_set_attr_string(b, "padding", "EXPLICIT");
  weft_op_set_attr_int_list(b, "explicit_paddings", pads, 8);
  weft_output_t y = cf_onnx_finish(x, b, &st);
  if (bias.node) y = cf_onnx_binary(x, "BiasAdd", y, bias, &st);
  y = cf_onnx_transpose(x, y, to_nchw, 4, &st);
  if (rank == 3 && !st) {
    int64_t d3[3];
    int64_t d4[4];
    cf_onnx_shape(y, d4);
    d3[0] = d4[0];
    d3[1] = d4[1];
    d3[2] = d4[3];
    y = cf_onnx_reshape(x, y, d3, 3, &st);
  }
  cf_onnx_bind_out(x, node, 0, y);
  return st;
}

/* Number of window taps inside the counted region for every output position (row-major over
 * the spatial output dims). include_pad counts the explicit padding but never ceil's extra. */
static double *window_counts(const window_t *w, bool include_pad, int64_t *n_out) {
  int64_t total = 1;
  for (int i = 0; i < w->s; i++) total *= w->out[i];
  double *counts = g_new0(double, total > 0 ? total : 1);
  for (int64_t o = 0; o < total; o++) {
    int64_t rem = o, pos[3] = {0};
    for (int i = w->s - 1; i >= 0; i--) {
      pos[i] = rem % w->out[i];
      rem /= w->out[i];
    }
    double c = 1;
    for (int i = 0; i < w->s; i++) {
      int64_t lo = include_pad ? -w->pb[i] : 0, hi = include_pad ? w->in[i] + w->pe[i] : w->in[i];
      int64_t n = 0;
      for (int64_t k = 0; k < w->k[i]; k++) {
        int64_t at = pos[i] * w->stride[i] + k * w->dil[i] - w->pb[i];
        n += at >= lo && at < hi;
      }
      c *= (double)n;
    }
    counts[o] = c;
  }
  *n_out = total;
  return counts;
}

/* PadV2 of an NCHW tensor over its spatial dims (before, after + ext). */
static weft_output_t pad_spatial(cf_onnx_ctx_t *x, weft_output_t v, const window_t *w, double value,
                                 bool nhwc, weft_status_t **st) {
  int rank = w->s + 2;
  int64_t pd[2] = {rank, 2};
  weft_tensor_t *pt = weft_tensor_new(WEFT_DT_INT64, 2, pd);
  int64_t *p = weft_tensor_data(pt);
  for (int i = 0; i < w->s; i++) {
    int d = nhwc ? 1 + i : 2 + i;
    p[2 * d] = w->pb[i];
    p[2 * d + 1] = w->pe[i] + w->ext[i];
  }
  weft_output_t pads = cf_onnx_const_tensor(x, pt, st);
  weft_tensor_unref(pt);
  weft_output_t val = cf_onnx_scalar_like(x, v, value, st);
  if (*st) return CF_ONNX_NONE;
  weft_op_builder_t *b = cf_onnx_op(x, "PadV2");
  weft_op_add_input(b, v);
  weft_op_add_input(b, pads);
  weft_op_add_input(b, val);
  return cf_onnx_finish(x, b, st);
}

/* General pooling from strided slices of the padded input (any spatial rank, dilations, ceil
 * mode); for max also the flat NCHW argmax indices when `indices` is wanted. */
static weft_status_t *pool_by_slices(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, weft_output_t v,
                                     const int64_t *dims, const window_t *w, bool is_max,
                                     bool include_pad, bool column_major) {
  weft_status_t *st = NULL;
  int rank = w->s + 2;
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  double lowest = cf_dtype_is_float(dt) ? -INFINITY : cf_dtype_min(dt);
  weft_output_t padded = pad_spatial(x, v, w, is_max ? lowest : 0, false, &st);
  bool want_idx = is_max && cf_onnx_has_out(node, 1);
  int64_t taps = 1;
  for (int i = 0; i < w->s; i++) taps *= w->k[i];
  if (taps > 1024)
    return cf_onnx_unsupported(x, "a pooling window of %" G_GINT64_FORMAT " taps", taps);
  weft_output_t acc = CF_ONNX_NONE, idx = CF_ONNX_NONE;
  int64_t out_dims[WEFT_MAX_RANK] = {dims[0], dims[1]};
  for (int i = 0; i < w->s; i++) out_dims[2 + i] = w->out[i];
  int64_t n_out = cf_num_elements(rank, out_dims);
  for (int64_t t = 0; t < taps && !st; t++) {
    int64_t rem = t, off[3];
    for (int i = w->s - 1; i >= 0; i--) {
      off[i] = rem % w->k[i];
      rem /= w->k[i];
    }
    int64_t begin[WEFT_MAX_RANK] = {0}, end[WEFT_MAX_RANK], stride[WEFT_MAX_RANK];
    end[0] = dims[0];
    end[1] = dims[1];
    stride[0] = stride[1] = 1;
    for (int i = 0; i < w->s; i++) {
      begin[2 + i] = off[i] * w->dil[i];
      end[2 + i] = begin[2 + i] + (w->out[i] - 1) * w->stride[i] + 1;
      stride[2 + i] = w->stride[i];
    }
    weft_op_builder_t *b = cf_onnx_op(x, "StridedSlice");
    weft_op_add_input(b, padded);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, end, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, stride, rank, false, &st));
    weft_output_t slice = cf_onnx_finish(x, b, &st);
    if (want_idx) {
      /* The flat NCHW input index each output position reads at this tap. */
      weft_tensor_t *it = weft_tensor_new(WEFT_DT_INT64, rank, out_dims);
      int64_t *iv = weft_tensor_data(it);
      for (int64_t o = 0; o < n_out; o++) {
        int64_t r2 = o, pos[WEFT_MAX_RANK] = {0};
        for (int d = rank - 1; d >= 0; d--) {
          pos[d] = r2 % out_dims[d];
          r2 /= out_dims[d];
        }
        int64_t at[3];
        for (int i = 0; i < w->s; i++) {
          at[i] = pos[2 + i] * w->stride[i] + off[i] * w->dil[i] - w->pb[i];
          if (at[i] < 0) at[i] = 0;
          if (at[i] >= dims[2 + i]) at[i] = dims[2 + i] - 1;
        }
        /* storage_order 1 numbers the spatial positions column-major (the last dim slowest). */
        int64_t flat = pos[0] * dims[1] + pos[1];
        for (int k = 0; k < w->s; k++) {
          int i = column_major ? w->s - 1 - k : k;
          flat = flat * dims[2 + i] + at[i];
        }
        iv[o] = flat;
      }
      weft_output_t ic = cf_onnx_const_tensor(x, it, &st);
      weft_tensor_unref(it);
      if (t == 0) {
        idx = ic;
      } else {
        weft_output_t better = cf_onnx_ew(x, "Greater", slice, acc, &st);
        weft_op_builder_t *sb = cf_onnx_op(x, "SelectV2");
        if (st) {
          weft_op_finish(sb, NULL);
          break;
        }
        weft_op_add_input(sb, better);
        weft_op_add_input(sb, ic);
        weft_op_add_input(sb, idx);
        idx = cf_onnx_finish(x, sb, &st);
      }
    }
    acc = t == 0 ? slice : cf_onnx_ew(x, is_max ? "Maximum" : "AddV2", acc, slice, &st);
  }
  if (st) return st;
  if (!is_max) {
    int64_t n_counts;
    double *counts = window_counts(w, include_pad, &n_counts);
    int64_t cd[WEFT_MAX_RANK] = {1, 1};
    for (int i = 0; i < w->s; i++) cd[2 + i] = w->out[i];
    cf_array_t *ca = cf_array_new(dt, rank, cd);
    memcpy(ca->v, counts, sizeof(double) * (size_t)n_counts);
    g_free(counts);
    weft_tensor_t *ct = cf_array_to_tensor(ca, NULL);
    cf_array_free(ca);
    acc = cf_onnx_ew(x, "Div", acc, cf_onnx_const_tensor(x, ct, &st), &st);
    weft_tensor_unref(ct);
  }
  cf_onnx_bind_out(x, node, 0, acc);
  if (want_idx) cf_onnx_bind_out(x, node, 1, idx);
  return st;
}

static weft_status_t *map_pool(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  bool is_max = strcmp(node->op_type, "MaxPool") == 0;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  window_t w;
  if ((st = read_window(x, node, dims, rank, NULL, &w))) return st;
  bool include_pad = cf_onnx_attr_int(node, "count_include_pad", 0) != 0;
  bool dilated = false;
  for (int i = 0; i < w.s; i++) dilated |= w.dil[i] != 1;
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  const char *tf_op = is_max ? "MaxPool" : "AvgPool";
  bool kernel_ok = cf_onnx_has_kernel(x, tf_op, dt);
  bool column_major = cf_onnx_attr_int(node, "storage_order", 0) != 0;
  if (w.s == 3 || dilated || (is_max && cf_onnx_has_out(node, 1)) || !kernel_ok)
    return pool_by_slices(x, node, v, dims, &w, is_max, include_pad, column_major);
  /* 1-D and 2-D windows: MaxPool / AvgPool in NHWC. */
  weft_output_t in = v;
  int s = w.s;
  if (s == 1) {
    int64_t d4[4] = {dims[0], dims[1], 1, dims[2]};
    in = cf_onnx_reshape(x, v, d4, 4, &st);
    w.in[1] = w.in[0];
    w.k[1] = w.k[0];
    w.stride[1] = w.stride[0];
    w.pb[1] = w.pb[0];
    w.pe[1] = w.pe[0];
    w.ext[1] = w.ext[0];
    w.out[1] = w.out[0];
    w.in[0] = w.k[0] = w.stride[0] = w.out[0] = 1;
    w.pb[0] = w.pe[0] = w.ext[0] = 0;
    w.s = 2;
  }
  int64_t perm_in[4], perm_out[4];
  to_last_perm(2, perm_in);
  to_first_perm(2, perm_out);
  weft_output_t xn = cf_onnx_transpose(x, in, perm_in, 4, &st);
  bool padded = false;
  for (int i = 0; i < 2; i++) padded |= w.pb[i] || w.pe[i] || w.ext[i];
  int64_t ksize[4] = {1, w.k[0], w.k[1], 1}, strides[4] = {1, w.stride[0], w.stride[1], 1};
  weft_output_t y;
  if (is_max) {
    weft_op_builder_t *b = cf_onnx_op(x, "MaxPool");
    weft_op_add_input(b, xn);
    weft_op_set_attr_int_list(b, "ksize", ksize, 4);
    weft_op_set_attr_int_list(b, "strides", strides, 4);
    if (padded) {
      int64_t pads[8] = {0, 0, w.pb[0], w.pe[0] + w.ext[0], w.pb[1], w.pe[1] + w.ext[1], 0, 0};
      weft_op_set_attr_string(b, "padding", "EXPLICIT");
      weft_op_set_attr_int_list(b, "explicit_paddings", pads, 8);
    } else {
      weft_op_set_attr_string(b, "padding", "VALID");
    }
    y = cf_onnx_finish(x, b, &st);
  } else {
    /* AvgPool VALID over the zero-padded input averages over whole windows; rescale by
     * taps / counted taps (the counted region excludes ceil mode's extra padding, and the
     * explicit padding unless count_include_pad). */
    weft_output_t src = padded ? pad_spatial(x, xn, &w, 0, true, &st) : xn;
    weft_op_builder_t *b = cf_onnx_op(x, "AvgPool");
    if (st) {
      weft_op_finish(b, NULL);
      return st;
    }
    weft_op_add_input(b, src);
    weft_op_set_attr_int_list(b, "ksize", ksize, 4);
    weft_op_set_attr_int_list(b, "strides", strides, 4);
    weft_op_set_attr_string(b, "padding", "VALID");
    y = cf_onnx_finish(x, b, &st);
    if (padded) {
      int64_t n_counts;
      double *counts = window_counts(&w, include_pad, &n_counts);
      int64_t cd[4] = {1, w.out[0], w.out[1], 1};
      cf_array_t *ca = cf_array_new(dt, 4, cd);
      double taps = (double)(w.k[0] * w.k[1]);
      for (int64_t i = 0; i < n_counts; i++) ca->v[i] = taps / counts[i];
      g_free(counts);
      cf_array_round(ca);
      weft_tensor_t *ct = cf_array_to_tensor(ca, NULL);
      cf_array_free(ca);
      y = cf_onnx_ew(x, "Mul", y, cf_onnx_const_tensor(x, ct, &st), &st);
      weft_tensor_unref(ct);
    }
  }
  y = cf_onnx_transpose(x, y, perm_out, 4, &st);
  if (s == 1 && !st) {
    int64_t d3[3] = {dims[0], dims[1], w.out[1]};
    y = cf_onnx_reshape(x, y, d3, 3, &st);
  }
  cf_onnx_bind_out(x, node, 0, y);
  return st;
}

static weft_status_t *map_global_pool(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK], axes[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int na = cf_onnx_axes_range(axes, 2, rank);
  bool is_max = strcmp(node->op_type, "GlobalMaxPool") == 0;
  cf_onnx_bind_out(x, node, 0, cf_onnx_reduce(x, is_max ? "Max" : "Mean", v, axes, na, true, &st));
  return st;
}

const cf_onnx_row_t cf_onnx_rows_conv_pool[] = {
    {"Conv", 1, map_conv},
    {"MaxPool", 1, map_pool},
    {"AveragePool", 1, map_pool},
    {"GlobalAveragePool", 1, map_global_pool},
    {"GlobalMaxPool", 1, map_global_pool},
    {NULL, 0, NULL},
};
