/* onnx/map_shape.c: the ONNX ops that only change a tensor's shape or layout: Transpose,
 * Reshape (0 copies a dimension unless allowzero), Flatten, Squeeze, Unsqueeze, Expand
 * (BroadcastTo of both shapes' broadcast), Shape (with start/end), Size, DepthToSpace and
 * SpaceToDepth (reshape, transpose, reshape). */
#include <string.h>

#include "map.h"

static weft_status_t *map_transpose(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK], perm[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  size_t n = 0;
  const int64_t *p = cf_onnx_attr_ints(node, "perm", &n);
  for (int d = 0; d < rank; d++) perm[d] = p && n == (size_t)rank ? p[d] : rank - 1 - d;
  cf_onnx_bind_out(x, node, 0, cf_onnx_transpose(x, v, perm, rank, &st));
  return st;
}

/* Reshape to the shape input (shape_input) or attribute. */
static weft_status_t *reshape(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool shape_input) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t *shape = NULL;
  int n = 0;
  if (!cf_onnx_ints_arg(x, node, shape_input, 1, "shape", &shape, &n, &st)) return st;
  if (n > WEFT_MAX_RANK) {
    g_free(shape);
    return cf_onnx_unsupported(x, "rank %d above %d", n, WEFT_MAX_RANK);
  }
  bool allowzero = cf_onnx_attr_int(node, "allowzero", 0) != 0;
  /* 0 copies the input's dimension (unless allowzero); TensorFlow infers the -1. */
  for (int i = 0; i < n; i++)
    if (shape[i] == 0 && !allowzero && i < rank) shape[i] = dims[i];
  cf_onnx_bind_out(x, node, 0, cf_onnx_reshape(x, v, shape, n, &st));
  g_free(shape);
  return st;
}

/* Reshape-1: the shape is an attribute. */
static weft_status_t *map_reshape_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return reshape(x, node, false);
}

/* Reshape-5: the shape is input 1. */
static weft_status_t *map_reshape_v5(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return reshape(x, node, true);
}

static weft_status_t *map_flatten(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 1);
  if (axis < 0) axis += rank;
  int64_t flat[2] = {1, 1};
  for (int d = 0; d < rank; d++) flat[d < axis ? 0 : 1] *= dims[d];
  cf_onnx_bind_out(x, node, 0, cf_onnx_reshape(x, v, flat, 2, &st));
  return st;
}

/* Squeeze axes given as input 1 (axes_input) or as the attribute axes; none: every size-1 axis. */
static weft_status_t *squeeze(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool axes_input) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t *axes = NULL;
  int n = 0;
  if (!cf_onnx_ints_arg(x, node, axes_input, 1, "axes", &axes, &n, &st) ||
      !cf_onnx_norm_axes(x, axes, n, rank, &st)) {
    g_free(axes);
    return st;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "Squeeze");
  weft_op_add_input(b, v);
  if (n > 0) weft_op_set_attr_int_list(b, "squeeze_dims", axes, n);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  g_free(axes);
  return st;
}

/* Squeeze-1 and -11: the axes are an attribute. */
static weft_status_t *map_squeeze_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return squeeze(x, node, false);
}

/* Squeeze-13: the axes are the optional input 1. */
static weft_status_t *map_squeeze_v13(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return squeeze(x, node, true);
}

/* Unsqueeze at the axes given as input 1 (axes_input) or as the attribute axes, counted in the
 * output's rank. */
static weft_status_t *unsqueeze(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool axes_input) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t *axes = NULL;
  int n = 0;
  if (!cf_onnx_ints_arg(x, node, axes_input, 1, "axes", &axes, &n, &st)) return st;
  int out_rank = rank + n;
  if (out_rank > WEFT_MAX_RANK || !cf_onnx_norm_axes(x, axes, n, out_rank, &st)) {
    g_free(axes);
    return st ? st : cf_onnx_unsupported(x, "rank %d above %d", out_rank, WEFT_MAX_RANK);
  }
  int64_t out[WEFT_MAX_RANK];
  for (int d = 0, k = 0; d < out_rank; d++) {
    bool inserted = false;
    for (int i = 0; i < n; i++) inserted |= axes[i] == d;
    out[d] = inserted ? 1 : dims[k++];
  }
  g_free(axes);
  cf_onnx_bind_out(x, node, 0, cf_onnx_reshape(x, v, out, out_rank, &st));
  return st;
}

/* Unsqueeze-1 and -11: the axes are an attribute. */
static weft_status_t *map_unsqueeze_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return unsqueeze(x, node, false);
}

/* Unsqueeze-13: the axes are input 1. */
static weft_status_t *map_unsqueeze_v13(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return unsqueeze(x, node, true);
}

static weft_status_t *map_expand(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t *shape = NULL;
  int n = 0;
  if (!cf_onnx_in_ints(x, node, 1, &shape, &n, &st)) return st;
  /* Expand broadcasts both ways: the result has the broadcast of both shapes. */
  int r = rank > n ? rank : n;
  int64_t out[WEFT_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int64_t a = i < r - rank ? 1 : dims[i - (r - rank)];
    int64_t b = i < r - n ? 1 : shape[i - (r - n)];
    out[i] = a == 1 ? b : a;
  }
  g_free(shape);
  weft_output_t s = cf_onnx_const_ints(x, WEFT_DT_INT64, out, r, false, &st);
  cf_onnx_bind_out(x, node, 0, cf_onnx_binary(x, "BroadcastTo", v, s, &st));
  return st;
}

static weft_status_t *map_shape(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  weft_op_builder_t *b = cf_onnx_op(x, "Shape");
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "out_type", WEFT_DT_INT64);
  weft_output_t s = cf_onnx_finish(x, b, &st);
  int64_t start = cf_onnx_attr_int(node, "start", 0), end = cf_onnx_attr_int(node, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = start < 0 ? 0 : start > rank ? rank : start;
  end = end < 0 ? 0 : end > rank ? rank : end;
  if (start != 0 || end != rank) {
    int64_t size = end > start ? end - start : 0;
    weft_op_builder_t *sl = cf_onnx_op(x, "Slice");
    weft_op_add_input(sl, s);
    weft_op_add_input(sl, cf_onnx_const_ints(x, WEFT_DT_INT64, &start, 1, false, &st));
    weft_op_add_input(sl, cf_onnx_const_ints(x, WEFT_DT_INT64, &size, 1, false, &st));
    s = cf_onnx_finish(x, sl, &st);
  }
  cf_onnx_bind_out(x, node, 0, s);
  return st;
}

static weft_status_t *map_size(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "Size");
  weft_op_add_input(b, cf_onnx_in(x, node, 0));
  weft_op_set_attr_type(b, "out_type", WEFT_DT_INT64);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_depth_space(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t d[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, d))) return st;
  int64_t b = cf_onnx_attr_int(node, "blocksize", 1);
  if (rank != 4 || b < 1) return cf_onnx_unsupported(x, "a block rearrangement of rank %d", rank);
  bool to_space = strcmp(node->op_type, "DepthToSpace") == 0;
  int64_t n = d[0], c = d[1], h = d[2], w = d[3];
  weft_output_t r;
  if (to_space) {
    bool crd = strcmp(cf_onnx_attr_string(node, "mode", "DCR"), "CRD") == 0;
    int64_t s6[6] = {n, b, b, c / (b * b), h, w}, p6[6] = {0, 3, 4, 1, 5, 2};
    int64_t s6c[6] = {n, c / (b * b), b, b, h, w}, p6c[6] = {0, 1, 4, 2, 5, 3};
    r = cf_onnx_reshape(x, v, crd ? s6c : s6, 6, &st);
    r = cf_onnx_transpose(x, r, crd ? p6c : p6, 6, &st);
    int64_t o[4] = {n, c / (b * b), h * b, w * b};
    r = cf_onnx_reshape(x, r, o, 4, &st);
  } else {
    int64_t s6[6] = {n, c, h / b, b, w / b, b}, p6[6] = {0, 3, 5, 1, 2, 4};
    r = cf_onnx_reshape(x, v, s6, 6, &st);
    r = cf_onnx_transpose(x, r, p6, 6, &st);
    int64_t o[4] = {n, c * b * b, h / b, w / b};
    r = cf_onnx_reshape(x, r, o, 4, &st);
  }
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

const cf_onnx_row_t cf_onnx_rows_shape[] = {
    {"Transpose", 1, map_transpose},
    {"Reshape", 1, map_reshape_v1},
    {"Reshape", 5, map_reshape_v5},
    {"Flatten", 1, map_flatten},
    {"Squeeze", 1, map_squeeze_v1},
    {"Squeeze", 13, map_squeeze_v13},
    {"Unsqueeze", 1, map_unsqueeze_v1},
    {"Unsqueeze", 13, map_unsqueeze_v13},
    {"Expand", 1, map_expand},
    {"Shape", 1, map_shape},
    {"Size", 1, map_size},
    {"DepthToSpace", 1, map_depth_space},
    {"SpaceToDepth", 1, map_depth_space},
    {NULL, 0, NULL},
};
