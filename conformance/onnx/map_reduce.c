/* onnx/map_reduce.c: the ONNX Reduce* ops as TensorFlow reductions (ReduceL1, ReduceL2,
 * ReduceSumSquare, ReduceLogSum and ReduceLogSumExp, shifted by the max, with arithmetic around
 * them; Max/Min of bools as Any/All), ArgMax and ArgMin (select_last_index on the reversed
 * axis). */
#include <string.h>

#include "map.h"

/* The reduced axes of a Reduce* node: input 1 (axes_input) or the attribute axes; none is every
 * axis. *noop: empty axes input with noop_with_empty_axes (the input passes through). */
static bool reduce_axes(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool axes_input, int rank,
                        int64_t **axes, int *n, bool *noop, weft_status_t **st) {
  *noop = false;
  if (!cf_onnx_ints_arg(x, node, axes_input, 1, "axes", axes, n, st)) return false;
  if (*n == 0) {
    g_free(*axes);
    if (axes_input && cf_onnx_attr_int(node, "noop_with_empty_axes", 0)) {
      *noop = true;
      *axes = NULL;
      return true;
    }
    *axes = g_new0(int64_t, rank > 0 ? rank : 1);
    for (int d = 0; d < rank; d++) (*axes)[d] = d;
    *n = rank;
  }
  return cf_onnx_norm_axes(x, *axes, *n, rank, st);
}

static weft_status_t *reduce(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool axes_input) {
  weft_status_t *st = NULL;
  const char *t = node->op_type;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t *axes = NULL;
  int n = 0;
  bool noop = false;
  if (!reduce_axes(x, node, axes_input, rank, &axes, &n, &noop, &st)) {
    g_free(axes);
    return st;
  }
  bool keep = cf_onnx_attr_int(node, "keepdims", 1) != 0;
  bool is_bool = cf_onnx_out_dtype(v) == WEFT_DT_BOOL;
  weft_output_t r;
  if (noop) {
    r = cf_onnx_unary(x, "Identity", v, &st);
  } else if (strcmp(t, "ReduceSum") == 0) {
    r = cf_onnx_reduce(x, "Sum", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceMean") == 0) {
    r = cf_onnx_reduce(x, "Mean", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceMax") == 0) {
    r = cf_onnx_reduce(x, is_bool ? "Any" : "Max", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceMin") == 0) {
    r = cf_onnx_reduce(x, is_bool ? "All" : "Min", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceProd") == 0) {
    r = cf_onnx_reduce(x, "Prod", v, axes, n, keep, &st);
  } else if (strcmp(t, "ReduceL1") == 0) {
    r = cf_onnx_reduce(x, "Sum", cf_onnx_ew(x, "Abs", v, CF_ONNX_NONE, &st), axes, n, keep, &st);
  } else if (strcmp(t, "ReduceL2") == 0) {
    r = cf_onnx_ew(
        x, "Sqrt",
        cf_onnx_reduce(x, "Sum", cf_onnx_ew(x, "Square", v, CF_ONNX_NONE, &st), axes, n, keep, &st),
        CF_ONNX_NONE, &st);
  } else if (strcmp(t, "ReduceSumSquare") == 0) {
    r = cf_onnx_reduce(x, "Sum", cf_onnx_ew(x, "Square", v, CF_ONNX_NONE, &st), axes, n, keep, &st);
  } else if (strcmp(t, "ReduceLogSum") == 0) {
    r = cf_onnx_ew(x, "Log", cf_onnx_reduce(x, "Sum", v, axes, n, keep, &st), CF_ONNX_NONE, &st);
  } else { /* ReduceLogSumExp, shifted by the max (0 where the max is not finite) */
    weft_output_t m = cf_onnx_reduce(x, "Max", v, axes, n, true, &st);
    weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
    weft_output_t fin = cf_onnx_ew(x, "IsFinite", m, CF_ONNX_NONE, &st);
    weft_output_t zero = cf_onnx_scalar_like(x, v, 0, &st);
    if (st) {
      weft_op_finish(b, NULL);
      g_free(axes);
      return st;
    }
    weft_op_add_input(b, fin);
    weft_op_add_input(b, m);
    weft_op_add_input(b, zero);
    weft_output_t m0 = cf_onnx_finish(x, b, &st);
    weft_output_t s = cf_onnx_reduce(
        x, "Sum", cf_onnx_ew(x, "Exp", cf_onnx_ew(x, "Sub", v, m0, &st), CF_ONNX_NONE, &st), axes,
        n, true, &st);
    r = cf_onnx_ew(x, "AddV2", cf_onnx_ew(x, "Log", s, CF_ONNX_NONE, &st), m0, &st);
    if (!keep && !st) {
      int64_t od[WEFT_MAX_RANK];
      int on = 0;
      for (int d = 0; d < rank; d++) {
        bool red = false;
        for (int i = 0; i < n; i++) red |= axes[i] == d;
        if (!red) od[on++] = dims[d];
      }
      r = cf_onnx_reshape(x, r, od, on, &st);
    }
  }
  g_free(axes);
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

/* Reduce* before ReduceSum-13 and the others' -18: the axes are an attribute. */
static weft_status_t *map_reduce_axes_attr(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return reduce(x, node, false);
}

/* ReduceSum-13, the others' -18: the axes are the optional input 1, and noop_with_empty_axes. */
static weft_status_t *map_reduce_axes_input(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return reduce(x, node, true);
}

static weft_status_t *map_argminmax(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  bool is_max = strcmp(node->op_type, "ArgMax") == 0;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) return st;
  bool keep = cf_onnx_attr_int(node, "keepdims", 1) != 0;
  bool last = cf_onnx_attr_int(node, "select_last_index", 0) != 0;
  weft_output_t in = v;
  if (last) {
    /* The last index among ties: the first one in the reversed axis, counted from the end. */
    int64_t begin[WEFT_MAX_RANK] = {0}, end[WEFT_MAX_RANK] = {0}, strides[WEFT_MAX_RANK];
    for (int d = 0; d < rank; d++) strides[d] = d == axis ? -1 : 1;
    weft_op_builder_t *b = cf_onnx_op(x, "StridedSlice");
    weft_op_add_input(b, v);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, end, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, strides, rank, false, &st));
    weft_op_set_attr_int(b, "begin_mask", (1 << rank) - 1);
    weft_op_set_attr_int(b, "end_mask", (1 << rank) - 1);
    in = cf_onnx_finish(x, b, &st);
  }
  if (st) return st;
  weft_op_builder_t *b = cf_onnx_op(x, is_max ? "ArgMax" : "ArgMin");
  weft_op_add_input(b, in);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, &axis, 1, true, &st));
  weft_op_set_attr_type(b, "output_type", WEFT_DT_INT64);
  weft_output_t r = cf_onnx_finish(x, b, &st);
  if (last && !st) {
    weft_output_t top =
        cf_onnx_const_ints(x, WEFT_DT_INT64, (int64_t[]){dims[axis] - 1}, 1, true, &st);
    r = cf_onnx_binary(x, "Sub", top, r, &st);
  }
  if (keep && !st) {
    dims[axis] = 1;
    r = cf_onnx_reshape(x, r, dims, rank, &st);
  }
  cf_onnx_bind_out(x, node, 0, r);
  return st;
}

/* ReduceSum took its axes as an input from opset 13, the other reductions from 18. */
const cf_onnx_row_t cf_onnx_rows_reduce[] = {
    {"ReduceSum", 1, map_reduce_axes_attr},
    {"ReduceSum", 13, map_reduce_axes_input},
    {"ReduceMean", 1, map_reduce_axes_attr},
    {"ReduceMean", 18, map_reduce_axes_input},
    {"ReduceMax", 1, map_reduce_axes_attr},
    {"ReduceMax", 18, map_reduce_axes_input},
    {"ReduceMin", 1, map_reduce_axes_attr},
    {"ReduceMin", 18, map_reduce_axes_input},
    {"ReduceProd", 1, map_reduce_axes_attr},
    {"ReduceProd", 18, map_reduce_axes_input},
    {"ReduceL1", 1, map_reduce_axes_attr},
    {"ReduceL1", 18, map_reduce_axes_input},
    {"ReduceL2", 1, map_reduce_axes_attr},
    {"ReduceL2", 18, map_reduce_axes_input},
    {"ReduceSumSquare", 1, map_reduce_axes_attr},
    {"ReduceSumSquare", 18, map_reduce_axes_input},
    {"ReduceLogSum", 1, map_reduce_axes_attr},
    {"ReduceLogSum", 18, map_reduce_axes_input},
    {"ReduceLogSumExp", 1, map_reduce_axes_attr},
    {"ReduceLogSumExp", 18, map_reduce_axes_input},
    {"ArgMax", 1, map_argminmax},
    {"ArgMin", 1, map_argminmax},
    {NULL, 0, NULL},
};
