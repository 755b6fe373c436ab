/* onnx/map_array.c: the ONNX ops that build, convert, select or combine tensors: Cast, CastLike,
 * Concat, Split, Gather and GatherElements (negative indices wrapped), Slice (StridedSlice with
 * ONNX's clamping), Tile, Pad (PadV2, MirrorPad, or gathers for edge and wrap), Constant,
 * ConstantOfShape, Range, OneHot, Trilu and EyeLike (constant masks). */
#include <string.h>

#include "map.h"

static weft_status_t *map_concat(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t ins[64];
  int n = 0;
  for (size_t i = 0; i < node->n_input && n < 64; i++)
    if (cf_onnx_has_in(node, i)) ins[n++] = cf_onnx_in(x, node, i);
  if (n == 0) return cf_onnx_unsupported(x, "Concat without inputs");
  if (n == 1) {
    cf_onnx_bind_out(x, node, 0, cf_onnx_unary(x, "Identity", ins[0], &st));
    return st;
  }
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  weft_op_builder_t *b = cf_onnx_op(x, "ConcatV2");
  weft_op_add_input_list(b, ins, n);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, &axis, 1, true, &st));
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_cast(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_dtype_t to;
  if (strcmp(node->op_type, "CastLike") == 0) {
    to = cf_onnx_out_dtype(cf_onnx_in(x, node, 1));
  } else {
    int64_t t = cf_onnx_attr_int(node, "to", 0);
    to = cf_onnx_dtype((int)t);
    if (to == WEFT_DT_INVALID)
      return cf_onnx_unsupported(x, "cast to ONNX type %" G_GINT64_FORMAT " (no Weft dtype)", t);
  }
  weft_output_t v = cf_onnx_in(x, node, 0);
  if (cf_onnx_out_dtype(v) == to) {
    cf_onnx_bind_out(x, node, 0, cf_onnx_unary(x, "Identity", v, &st));
    return st;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "Cast");
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "DstT", to);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_gather(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t p = cf_onnx_in(x, node, 0), idx = cf_onnx_in(x, node, 1);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, p, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) return st;
  /* Negative indices count from the end in ONNX; TensorFlow refuses them. */
  weft_output_t zero = cf_onnx_scalar_like(x, idx, 0, &st);
  weft_output_t neg = cf_onnx_binary(x, "Less", idx, zero, &st);
  weft_output_t wrapped =
      cf_onnx_binary(x, "AddV2", idx, cf_onnx_scalar_like(x, idx, (double)dims[axis], &st), &st);
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, neg);
  weft_op_add_input(b, wrapped);
  weft_op_add_input(b, idx);
  weft_output_t fixed = cf_onnx_finish(x, b, &st);
  weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
  if (st) {
    weft_op_finish(g, NULL);
    return st;
  }
  weft_op_add_input(g, p);
  weft_op_add_input(g, fixed);
  weft_op_add_input(g, cf_onnx_const_ints(x, WEFT_DT_INT64, &axis, 1, true, &st));
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, g, &st));
  return st;
}

/* StridedSlice with ONNX's clamping; starts, ends and axes are attributes, or (from_inputs)
 * inputs 1 to 3 with the steps as input 4. */
static weft_status_t *slice(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool from_inputs) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  int ns = 0, ne = 0, na = 0, nst = 0;
  bool got;
  if (from_inputs)
    got = cf_onnx_in_ints(x, node, 1, &starts, &ns, &st) &&
           cf_onnx_in_ints(x, node, 2, &ends, &ne, &st) &&
           cf_onnx_ints_arg(x, node, true, 3, "axes", &axes, &na, &st) &&
           cf_onnx_ints_arg(x, node, true, 4, "steps", &steps, &nst, &st);
  else
    got = cf_onnx_ints_arg(x, node, false, 1, "starts", &starts, &ns, &st) &&
           cf_onnx_ints_arg(x, node, false, 2, "ends", &ends, &ne, &st) &&
           cf_onnx_ints_arg(x, node, false, 3, "axes", &axes, &na, &st);
  if (!got) goto out;
  if (ns != ne || (axes && na != ns) || (steps && nst != ns)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: starts, ends, axes and steps differ in length",
                         x->node_name);
    goto out;
  }
  int64_t begin[WEFT_MAX_RANK], end[WEFT_MAX_RANK], stride[WEFT_MAX_RANK];
  int end_mask = 0;
  for (int d = 0; d < rank; d++) {
    begin[d] = 0;
    end[d] = dims[d];
    stride[d] = 1;
  }
  for (int i = 0; i < ns; i++) {
    int64_t a = axes ? axes[i] : i;
    if (!cf_onnx_norm_axes(x, &a, 1, rank, &st)) goto out;
    int64_t step = steps ? steps[i] : 1, dim = dims[a];
    if (step == 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: a step of 0", x->node_name);
      goto out;
    }
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = s < 0 ? 0 : s > dim ? dim : s;
      e = e < 0 ? 0 : e > dim ? dim : e;
    } else {
      s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
      e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
      /* -1 means "before index 0", which StridedSlice spells with the end mask. */
      if (e == -1) end_mask |= 1 << a;
    }
    begin[a] = s;
    end[a] = e;
    stride[a] = step;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "StridedSlice");
  weft_op_add_input(b, v);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, end, rank, false, &st));
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, stride, rank, false, &st));
  if (end_mask) weft_op_set_attr_int(b, "end_mask", end_mask);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
out:
  g_free(starts);
  g_free(ends);
  g_free(axes);
  g_free(steps);
  return st;
}

/* Slice-1: starts, ends and axes are attributes. */
static weft_status_t *map_slice_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return slice(x, node, false);
}

/* Slice-10: starts, ends, axes and steps are inputs. */
static weft_status_t *map_slice_v10(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return slice(x, node, true);
}

static weft_status_t *map_tile(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  int64_t *rep = NULL;
  int n = 0;
  if (!cf_onnx_in_ints(x, node, 1, &rep, &n, &st)) return st;
  weft_output_t m = cf_onnx_const_ints(x, WEFT_DT_INT64, rep, n, false, &st);
  g_free(rep);
  cf_onnx_bind_out(x, node, 0, cf_onnx_binary(x, "Tile", cf_onnx_in(x, node, 0), m, &st));
  return st;
}

/* Pad as PadV2, MirrorPad or gathers; since is the first opset of the op's definition: pads and
 * value are attributes before 11, inputs 1 and 2 from 11, and input 3 names the padded axes from
 * 18. */
static weft_status_t *pad(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, int since) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  const char *mode = cf_onnx_attr_string(node, "mode", "constant");
  bool gather_mode = strcmp(mode, "edge") == 0 || strcmp(mode, "wrap") == 0;
  if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && !gather_mode)
    return cf_onnx_unsupported(x, "Pad mode '%s' is not mapped", mode);
  int64_t *pads = NULL, *axes = NULL;
  int np = 0, na = 0;
  double value = 0;
  weft_output_t value_in = CF_ONNX_NONE;
  if (since < 11) {
    cf_onnx_ints_arg(x, node, false, 1, "pads", &pads, &np, &st);
    value = cf_onnx_attr_float(node, "value", 0.0f);
  } else {
    if (!cf_onnx_in_ints(x, node, 1, &pads, &np, &st)) return st;
    value_in = cf_onnx_in(x, node, 2);
    if (since >= 18 && !cf_onnx_ints_arg(x, node, true, 3, "axes", &axes, &na, &st)) {
      g_free(pads);
      return st;
    }
  }
  int n_axes = axes ? na : rank;
  int64_t paddings[2 * WEFT_MAX_RANK] = {0};
  bool ok = np == 2 * n_axes;
  for (int i = 0; ok && i < n_axes; i++) {
    int64_t a = axes ? axes[i] : i;
    if (a < 0) a += rank;
    ok = a >= 0 && a < rank && pads[i] >= 0 && pads[i + n_axes] >= 0;
    if (ok) {
      paddings[2 * a] = pads[i];
      paddings[2 * a + 1] = pads[i + n_axes];
    }
  }
  g_free(pads);
  g_free(axes);
  if (!ok) return cf_onnx_unsupported(x, "negative or malformed pads are not mapped");
  if (gather_mode) {
    /* edge repeats the border element, wrap continues from the other side: one GatherV2 per
     * padded axis with the source index of every output position. */
    bool edge = mode[0] == 'e';
    weft_output_t r = v;
    for (int d = 0; d < rank && !st; d++) {
      int64_t before = paddings[2 * d], after = paddings[2 * d + 1], n = dims[d];
      if (before == 0 && after == 0) continue;
      if (n == 0) return cf_onnx_unsupported(x, "padding an empty dimension in %s mode", mode);
      int64_t len = n + before + after;
      int64_t *idx = g_new(int64_t, len);
      for (int64_t i = 0; i < len; i++) {
        int64_t src = i - before;
        idx[i] = edge ? (src < 0 ? 0 : src >= n ? n - 1 : src) : ((src % n) + n) % n;
      }
      weft_output_t ic = cf_onnx_const_ints(x, WEFT_DT_INT64, idx, (int)len, false, &st);
      g_free(idx);
      int64_t ax = d;
      weft_op_builder_t *b = cf_onnx_op(x, "GatherV2");
      if (st) {
        weft_op_finish(b, NULL);
        break;
      }
      weft_op_add_input(b, r);
      weft_op_add_input(b, ic);
      weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, &ax, 1, true, &st));
      r = cf_onnx_finish(x, b, &st);
    }
    if (r.node == v.node && r.index == v.index) r = cf_onnx_unary(x, "Identity", v, &st);
    cf_onnx_bind_out(x, node, 0, r);
    return st;
  }
  int64_t pd[2] = {rank, 2};
  weft_tensor_t *pt = weft_tensor_new(WEFT_DT_INT64, 2, pd);
  memcpy(weft_tensor_data(pt), paddings, sizeof(int64_t) * 2 * (size_t)rank);
  weft_output_t p = cf_onnx_const_tensor(x, pt, &st);
  weft_tensor_unref(pt);
  weft_op_builder_t *b;
  if (strcmp(mode, "reflect") == 0) {
    b = cf_onnx_op(x, "MirrorPad");
    weft_op_add_input(b, v);
    weft_op_add_input(b, p);
    weft_op_set_attr_string(b, "mode", "REFLECT");
  } else {
    if (value_in.node == NULL) value_in = cf_onnx_scalar_like(x, v, value, &st);
    b = cf_onnx_op(x, "PadV2");
    weft_op_add_input(b, v);
    weft_op_add_input(b, p);
    weft_op_add_input(b, value_in);
  }
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

/* Pad-2: pads and value are attributes. */
static weft_status_t *map_pad_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return pad(x, node, 1);
}

/* Pad-11 and -13: pads and the constant value are inputs. */
static weft_status_t *map_pad_v11(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return pad(x, node, 11);
}

/* Pad-18: the optional input 3 names the axes the pads apply to. */
static weft_status_t *map_pad_v18(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return pad(x, node, 18);
}

static weft_status_t *map_constant(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_tensor_t *t = NULL;
  const Onnx__AttributeProto *a;
  if ((a = cf_onnx_attr(node, "value")) && a->t) {
    t = cf_onnx_tensor(a->t, &st);
  } else if ((a = cf_onnx_attr(node, "value_float"))) {
    t = weft_tensor_new_scalar_float(a->f);
  } else if ((a = cf_onnx_attr(node, "value_int"))) {
    t = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
    *(int64_t *)weft_tensor_data(t) = a->i;
  } else if ((a = cf_onnx_attr(node, "value_floats"))) {
    int64_t n = (int64_t)a->n_floats;
    t = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
    if (n) memcpy(weft_tensor_data(t), a->floats, sizeof(float) * (size_t)n);
  } else if ((a = cf_onnx_attr(node, "value_ints"))) {
    int64_t n = (int64_t)a->n_ints;
    t = weft_tensor_new(WEFT_DT_INT64, 1, &n);
    if (n) memcpy(weft_tensor_data(t), a->ints, sizeof(int64_t) * (size_t)n);
  } else {
    return cf_onnx_unsupported(x, "this kind of Constant value is not mapped");
  }
  if (st) return st;
  cf_onnx_bind_out(x, node, 0, cf_onnx_const_tensor(x, t, &st));
  g_hash_table_insert(x->values, g_strdup(node->output[0]), t);
  return st;
}

static weft_status_t *map_constant_of_shape(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  int64_t *shape = NULL;
  int n = 0;
  if (!cf_onnx_in_ints(x, node, 0, &shape, &n, &st)) return st;
  const Onnx__AttributeProto *a = cf_onnx_attr(node, "value");
  weft_tensor_t *value = NULL;
  if (a && a->t) {
    value = cf_onnx_tensor(a->t, &st);
    if (st) {
      g_free(shape);
      return st;
    }
    /* The value is a one-element tensor; Fill wants a scalar. */
    weft_tensor_t *s =
        weft_tensor_new_from_data(weft_tensor_dtype(value), 0, NULL, weft_tensor_data(value),
                                  weft_dtype_size(weft_tensor_dtype(value)), &st);
    weft_tensor_unref(value);
    value = s;
  } else {
    value = weft_tensor_new_scalar_float(0.0f);
  }
  weft_output_t dims = cf_onnx_const_ints(x, WEFT_DT_INT64, shape, n, false, &st);
  weft_output_t v = cf_onnx_const_tensor(x, value, &st);
  weft_tensor_unref(value);
  g_free(shape);
  cf_onnx_bind_out(x, node, 0, cf_onnx_binary(x, "Fill", dims, v, &st));
  return st;
}

static weft_status_t *map_range(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_op_builder_t *b = cf_onnx_op(x, "Range");
  weft_op_add_input(b, cf_onnx_in(x, node, 0));
  weft_op_add_input(b, cf_onnx_in(x, node, 1));
  weft_op_add_input(b, cf_onnx_in(x, node, 2));
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

/* SplitV into the sizes given, else equal parts; since is the first opset of the op's
 * definition: the sizes are input 1 or the attribute split in Split-1, the attribute in Split-2
 * and -11, input 1 from 13; from 18 num_outputs (else the number of outputs) sets the parts. */
static weft_status_t *split(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, int since) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) return st;
  int n_out = (int)node->n_output;
  int64_t *sizes = NULL;
  int n = 0;
  bool sizes_input = since == 1 || since >= 13, sizes_attr = since < 13;
  if (sizes_input && cf_onnx_has_in(node, 1)) {
    if (!cf_onnx_in_ints(x, node, 1, &sizes, &n, &st)) return st;
  } else if (sizes_attr && cf_onnx_attr(node, "split")) {
    cf_onnx_ints_arg(x, node, false, 1, "split", &sizes, &n, &st);
  } else {
    /* Equal parts; with num_outputs the last one may be smaller. */
    int64_t parts = since >= 18 ? cf_onnx_attr_int(node, "num_outputs", n_out) : n_out;
    int64_t each = (dims[axis] + parts - 1) / parts;
    sizes = g_new0(int64_t, parts);
    for (int64_t i = 0; i < parts; i++) {
      int64_t left = dims[axis] - i * each;
      sizes[i] = left < each ? (left > 0 ? left : 0) : each;
    }
    n = (int)parts;
  }
  weft_op_builder_t *b = cf_onnx_op(x, "SplitV");
  weft_op_add_input(b, v);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, sizes, n, false, &st));
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT32, &axis, 1, true, &st));
  weft_op_set_attr_int(b, "num_split", n);
  g_free(sizes);
  weft_node_t *sn = NULL;
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  st = weft_op_finish(b, &sn);
  for (int k = 0; !st && k < n_out && k < n; k++) cf_onnx_bind_out(x, node, k, weft_out(sn, k));
  return st;
}

/* Split-1: the sizes are input 1 or the attribute split. */
static weft_status_t *map_split_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return split(x, node, 1);
}

/* Split-2 and -11: the sizes are the attribute split. */
static weft_status_t *map_split_v2(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return split(x, node, 2);
}

/* Split-13: the sizes are the optional input 1. */
static weft_status_t *map_split_v13(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return split(x, node, 13);
}

/* Split-18: without sizes, the attribute num_outputs gives the number of parts. */
static weft_status_t *map_split_v18(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return split(x, node, 18);
}

static weft_status_t *map_onehot(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  double depth;
  if (!cf_onnx_in_scalar(x, node, 1, &depth, &st)) return st;
  const weft_tensor_t *vals = cf_onnx_value(x, node->input[2], &st);
  if (!vals) return st;
  weft_output_t idx = cf_onnx_cast(x, cf_onnx_in(x, node, 0), WEFT_DT_INT64, &st);
  /* Negative indices count from depth. */
  weft_output_t neg = cf_onnx_binary(x, "Less", idx, cf_onnx_scalar_like(x, idx, 0, &st), &st);
  weft_output_t wrapped =
      cf_onnx_binary(x, "AddV2", idx, cf_onnx_scalar_like(x, idx, depth, &st), &st);
  weft_op_builder_t *s = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(s, NULL);
    return st;
  }
  weft_op_add_input(s, neg);
  weft_op_add_input(s, wrapped);
  weft_op_add_input(s, idx);
  idx = cf_onnx_finish(x, s, &st);
  weft_dtype_t dt = weft_tensor_dtype(vals);
  weft_output_t off = cf_onnx_const_scalar(x, dt, weft_tensor_get_double(vals, 0), &st);
  weft_output_t on = cf_onnx_const_scalar(x, dt, weft_tensor_get_double(vals, 1), &st);
  int64_t d = (int64_t)depth;
  weft_op_builder_t *b = cf_onnx_op(x, "OneHot");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, idx);
  weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT32, &d, 1, true, &st));
  weft_op_add_input(b, on);
  weft_op_add_input(b, off);
  /* TensorFlow takes -1 or a non-negative axis; ONNX counts any negative one from the end. */
  int64_t idims[WEFT_MAX_RANK];
  int axis = (int)cf_onnx_attr_int(node, "axis", -1), irank = cf_onnx_shape(idx, idims);
  if (axis < -1) axis += irank + 1;
  weft_op_set_attr_int(b, "axis", axis);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_trilu(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  if (rank < 2) return cf_onnx_unsupported(x, "Trilu of rank < 2");
  double k = 0;
  if (cf_onnx_has_in(node, 1) && !cf_onnx_in_scalar(x, node, 1, &k, &st)) return st;
  bool upper = cf_onnx_attr_int(node, "upper", 1) != 0;
  int64_t n = dims[rank - 2], m = dims[rank - 1], md[2] = {n, m};
  weft_tensor_t *mask = weft_tensor_new(WEFT_DT_BOOL, 2, md);
  uint8_t *mv = weft_tensor_data(mask);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++)
      mv[i * m + j] = upper ? (double)(j - i) >= k : (double)(j - i) <= k;
  weft_output_t mk = cf_onnx_const_tensor(x, mask, &st);
  weft_tensor_unref(mask);
  weft_output_t zero = cf_onnx_unary(x, "ZerosLike", v, &st);
  weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(b, NULL);
    return st;
  }
  weft_op_add_input(b, mk);
  weft_op_add_input(b, v);
  weft_op_add_input(b, zero);
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, b, &st));
  return st;
}

static weft_status_t *map_eyelike(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  if (rank != 2) return cf_onnx_unsupported(x, "EyeLike of rank %d", rank);
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  if (cf_onnx_attr(node, "dtype")) dt = cf_onnx_dtype((int)cf_onnx_attr_int(node, "dtype", 1));
  if (dt == WEFT_DT_INVALID) return cf_onnx_unsupported(x, "EyeLike to an unknown dtype");
  int64_t k = cf_onnx_attr_int(node, "k", 0);
  cf_array_t *a = cf_array_new(dt, 2, dims);
  for (int64_t i = 0; i < dims[0]; i++)
    if (i + k >= 0 && i + k < dims[1]) a->v[i * dims[1] + i + k] = 1;
  weft_tensor_t *t = cf_array_to_tensor(a, NULL);
  cf_array_free(a);
  cf_onnx_bind_out(x, node, 0, cf_onnx_unary(x, "Identity", cf_onnx_const_tensor(x, t, &st), &st));
  weft_tensor_unref(t);
  return st;
}

static weft_status_t *map_gather_elements(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t data = cf_onnx_in(x, node, 0), idx = cf_onnx_in(x, node, 1);
  int64_t dd[WEFT_MAX_RANK], id[WEFT_MAX_RANK];
  int dr, ir;
  if ((st = cf_onnx_need_shape(x, data, &dr, dd)) || (st = cf_onnx_need_shape(x, idx, &ir, id)))
    return st;
  if (dr != ir) return cf_onnx_unsupported(x, "GatherElements with ranks %d and %d", dr, ir);
  int64_t axis = cf_onnx_attr_int(node, "axis", 0);
  if (!cf_onnx_norm_axes(x, &axis, 1, dr, &st)) return st;
  /* out[i] = data[flat(i with its axis coordinate replaced by idx[i])]: a gather from the
   * flattened data with index idx * stride(axis) + (the other coordinates' offset). */
  int64_t strides[WEFT_MAX_RANK];
  cf_strides(dr, dd, strides);
  int64_t n = cf_num_elements(ir, id);
  weft_tensor_t *ot = weft_tensor_new(WEFT_DT_INT64, ir, id);
  int64_t *off = weft_tensor_data(ot);
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, o = 0;
    for (int d = ir - 1; d >= 0; d--) {
      int64_t coord = rem % id[d];
      rem /= id[d];
      if (d != axis) o += coord * strides[d];
    }
    off[i] = o;
  }
  weft_output_t offsets = cf_onnx_const_tensor(x, ot, &st);
  weft_tensor_unref(ot);
  weft_output_t i64 = cf_onnx_cast(x, idx, WEFT_DT_INT64, &st);
  weft_output_t neg = cf_onnx_binary(x, "Less", i64, cf_onnx_scalar_like(x, i64, 0, &st), &st);
  weft_output_t wrapped =
      cf_onnx_binary(x, "AddV2", i64, cf_onnx_scalar_like(x, i64, (double)dd[axis], &st), &st);
  weft_op_builder_t *sb = cf_onnx_op(x, "SelectV2");
  if (st) {
    weft_op_finish(sb, NULL);
    return st;
  }
  weft_op_add_input(sb, neg);
  weft_op_add_input(sb, wrapped);
  weft_op_add_input(sb, i64);
  weft_output_t fixed = cf_onnx_finish(x, sb, &st);
  weft_output_t flat_idx =
      cf_onnx_binary(x, "AddV2",
                     cf_onnx_binary(x, "Mul", fixed,
                                    cf_onnx_scalar_like(x, fixed, (double)strides[axis], &st), &st),
                     offsets, &st);
  int64_t all = cf_num_elements(dr, dd), zero = 0;
  weft_output_t flat = cf_onnx_reshape(x, data, &all, 1, &st);
  weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
  if (st) {
    weft_op_finish(g, NULL);
    return st;
  }
  weft_op_add_input(g, flat);
  weft_op_add_input(g, flat_idx);
  weft_op_add_input(g, cf_onnx_const_ints(x, WEFT_DT_INT64, &zero, 1, true, &st));
  cf_onnx_bind_out(x, node, 0, cf_onnx_finish(x, g, &st));
  return st;
}

const cf_onnx_row_t cf_onnx_rows_array[] = {
    {"Concat", 1, map_concat},
    {"Cast", 1, map_cast},
    {"CastLike", 1, map_cast},
    {"Gather", 1, map_gather},
    {"GatherElements", 1, map_gather_elements},
    {"Slice", 1, map_slice_v1},
    {"Slice", 10, map_slice_v10},
    {"Tile", 1, map_tile},
    {"Pad", 1, map_pad_v1},
    {"Pad", 11, map_pad_v11},
    {"Pad", 18, map_pad_v18},
    {"Constant", 1, map_constant},
    {"ConstantOfShape", 1, map_constant_of_shape},
    {"Range", 1, map_range},
    {"Split", 1, map_split_v1},
    {"Split", 2, map_split_v2},
    {"Split", 13, map_split_v13},
    {"Split", 18, map_split_v18},
    {"OneHot", 1, map_onehot},
    {"Trilu", 1, map_trilu},
    {"EyeLike", 1, map_eyelike},
    {NULL, 0, NULL},
};
