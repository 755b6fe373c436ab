/* onnx/map_norm.c: the ONNX normalisations as arithmetic on moments: BatchNormalization
 * (inference and training mode), LayerNormalization and RMSNormalization (over the trailing axes,
 * in float32 by stash_type), InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
 * LpNormalization and LRN. */
#include "map.h"

/* A per-channel [C] tensor reshaped to broadcast over axis 1 of a rank-r input. */
static weft_output_t channel_param(cf_onnx_ctx_t *x, weft_output_t p, int rank, int64_t c,
                                   weft_status_t **st) {
  int64_t d[WEFT_MAX_RANK];
  for (int i = 0; i < rank; i++) d[i] = i == 1 ? c : 1;
  return cf_onnx_reshape(x, p, d, rank, st);
}

/* The statistics every normalisation starts from: the mean of v over axes (kept as size-1 dims,
 * in *mean), v minus it (*diff), and the mean of the squared differences (returned). */
static weft_output_t moments(cf_onnx_ctx_t *x, weft_output_t v, const int64_t *axes, int na,
                             weft_output_t *mean, weft_output_t *diff, weft_status_t **st) {
  *mean = cf_onnx_reduce(x, "Mean", v, axes, na, true, st);
  *diff = cf_onnx_ew(x, "Sub", v, *mean, st);
  return cf_onnx_reduce(x, "Mean", cf_onnx_ew(x, "Mul", *diff, *diff, st), axes, na, true, st);
}

/* 1 / sqrt(var + eps). */
static weft_output_t inv_std(cf_onnx_ctx_t *x, weft_output_t var, double eps, weft_status_t **st) {
  return cf_onnx_ew(x, "Rsqrt", cf_onnx_add_scalar(x, var, eps, st), CF_ONNX_NONE, st);
}

/* What LayerNormalization and RMSNormalization share: statistics over the axes from `axis` to
 * the last, computed in float32 when stash_type is 1 (the default), the result cast back. */
typedef struct trailing_norm {
  weft_output_t xv; /* the input, cast to float32 where stash_type asks */
  weft_dtype_t dt;  /* the input's dtype, for the result */
  double eps;
  int64_t axes[WEFT_MAX_RANK];
  int na;
} trailing_norm_t;

static weft_status_t *trailing_norm_setup(cf_onnx_ctx_t *x, const Onnx__NodeProto *node,
                                          weft_output_t v, trailing_norm_t *tn) {
  weft_status_t *st = NULL;
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", -1);
  if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) return st;
  tn->eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  tn->na = cf_onnx_axes_range(tn->axes, (int)axis, rank);
  tn->dt = cf_onnx_out_dtype(v);
  tn->xv =
      cf_onnx_attr_int(node, "stash_type", 1) == 1 ? cf_onnx_cast(x, v, WEFT_DT_FLOAT, &st) : v;
  return st;
}

static weft_status_t *map_batchnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  if (rank < 2) return cf_onnx_unsupported(x, "BatchNormalization of rank < 2");
  double eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  double momentum = cf_onnx_attr_float(node, "momentum", 0.9f);
  bool training = cf_onnx_attr_int(node, "training_mode", 0) != 0;
  int64_t c = dims[1];
  weft_output_t scale = channel_param(x, cf_onnx_in(x, node, 1), rank, c, &st),
                bias = channel_param(x, cf_onnx_in(x, node, 2), rank, c, &st);
  weft_output_t mean = channel_param(x, cf_onnx_in(x, node, 3), rank, c, &st),
                var = channel_param(x, cf_onnx_in(x, node, 4), rank, c, &st);
  int64_t axes[WEFT_MAX_RANK];
  int na = 0;
  for (int d = 0; d < rank; d++)
    if (d != 1) axes[na++] = d;
  weft_output_t use_mean = mean, use_var = var;
  if (training) {
    weft_output_t diff;
    use_var = moments(x, v, axes, na, &use_mean, &diff, &st);
  }
  weft_output_t inv = inv_std(x, use_var, eps, &st);
  weft_output_t y = cf_onnx_ew(x, "AddV2",
                               cf_onnx_ew(x, "Mul", cf_onnx_ew(x, "Sub", v, use_mean, &st),
                                          cf_onnx_ew(x, "Mul", scale, inv, &st), &st),
                               bias, &st);
  cf_onnx_bind_out(x, node, 0, y);
  if (training) {
    /* running = input * momentum + current * (1 - momentum), as [C]. */
    weft_output_t rm = cf_onnx_ew(
        x, "AddV2", cf_onnx_mul_scalar(x, cf_onnx_in(x, node, 3), momentum, &st),
        cf_onnx_mul_scalar(x, cf_onnx_reshape(x, use_mean, &c, 1, &st), 1 - momentum, &st), &st);
    weft_output_t rv = cf_onnx_ew(
        x, "AddV2", cf_onnx_mul_scalar(x, cf_onnx_in(x, node, 4), momentum, &st),
        cf_onnx_mul_scalar(x, cf_onnx_reshape(x, use_var, &c, 1, &st), 1 - momentum, &st), &st);
    if (cf_onnx_has_out(node, 1)) cf_onnx_bind_out(x, node, 1, rm);
    if (cf_onnx_has_out(node, 2)) cf_onnx_bind_out(x, node, 2, rv);
  }
  return st;
}

static weft_status_t *map_layernorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  trailing_norm_t tn;
  weft_status_t *st = trailing_norm_setup(x, node, cf_onnx_in(x, node, 0), &tn);
  if (st) return st;
  weft_output_t mean, diff;
  weft_output_t var = moments(x, tn.xv, tn.axes, tn.na, &mean, &diff, &st);
  weft_output_t inv = inv_std(x, var, tn.eps, &st);
  weft_output_t y = cf_onnx_cast(x, cf_onnx_ew(x, "Mul", diff, inv, &st), tn.dt, &st);
  y = cf_onnx_ew(x, "Mul", y, cf_onnx_in(x, node, 1), &st);
  if (cf_onnx_has_in(node, 2)) y = cf_onnx_ew(x, "AddV2", y, cf_onnx_in(x, node, 2), &st);
  cf_onnx_bind_out(x, node, 0, y);
  if (cf_onnx_has_out(node, 1)) cf_onnx_bind_out(x, node, 1, mean);
  if (cf_onnx_has_out(node, 2)) cf_onnx_bind_out(x, node, 2, inv);
  return st;
}

static weft_status_t *map_instancenorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  double eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  int64_t axes[WEFT_MAX_RANK];
  int na = cf_onnx_axes_range(axes, 2, rank);
  weft_output_t mean, diff;
  weft_output_t var = moments(x, v, axes, na, &mean, &diff, &st);
  weft_output_t y = cf_onnx_ew(x, "Mul", diff, inv_std(x, var, eps, &st), &st);
  y = cf_onnx_ew(
      x, "AddV2",
      cf_onnx_ew(x, "Mul", y, channel_param(x, cf_onnx_in(x, node, 1), rank, dims[1], &st), &st),
      channel_param(x, cf_onnx_in(x, node, 2), rank, dims[1], &st), &st);
  cf_onnx_bind_out(x, node, 0, y);
  return st;
}

static weft_status_t *map_mvn(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  size_t n = 0;
  const int64_t *a = cf_onnx_attr_ints(node, "axes", &n);
  int64_t axes[WEFT_MAX_RANK] = {0, 2, 3};
  int na = a ? (int)n : 3;
  for (int i = 0; a && i < na; i++) axes[i] = a[i];
  if (!cf_onnx_norm_axes(x, axes, na, rank, &st)) return st;
  weft_output_t mean, diff;
  weft_output_t var = moments(x, v, axes, na, &mean, &diff, &st);
  cf_onnx_bind_out(
      x, node, 0,
      cf_onnx_ew(x, "Div", diff,
                 cf_onnx_add_scalar(x, cf_onnx_ew(x, "Sqrt", var, CF_ONNX_NONE, &st), 1e-9, &st),
                 &st));
  return st;
}

static weft_status_t *map_lpnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t axis = cf_onnx_attr_int(node, "axis", -1), p = cf_onnx_attr_int(node, "p", 2);
  if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) return st;
  weft_output_t norm =
      p == 1 ? cf_onnx_reduce(x, "Sum", cf_onnx_ew(x, "Abs", v, CF_ONNX_NONE, &st), &axis, 1, true,
                              &st)
             : cf_onnx_ew(x, "Sqrt",
                          cf_onnx_reduce(x, "Sum", cf_onnx_ew(x, "Square", v, CF_ONNX_NONE, &st),
                                         &axis, 1, true, &st),
                          CF_ONNX_NONE, &st);
  /* A zero norm gives 0, not 0/0. */
  weft_output_t is_zero = cf_onnx_ew(x, "Equal", norm, cf_onnx_scalar_like(x, v, 0, &st), &st);
  weft_output_t safe =
      cf_onnx_ew(x, "AddV2", norm, cf_onnx_cast(x, is_zero, cf_onnx_out_dtype(v), &st), &st);
  cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, "Div", v, safe, &st));
  return st;
}

static weft_status_t *map_rmsnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  trailing_norm_t tn;
  weft_status_t *st = trailing_norm_setup(x, node, cf_onnx_in(x, node, 0), &tn);
  if (st) return st;
  weft_output_t ms =
      cf_onnx_reduce(x, "Mean", cf_onnx_ew(x, "Mul", tn.xv, tn.xv, &st), tn.axes, tn.na, true, &st);
  weft_output_t y = cf_onnx_ew(x, "Mul", tn.xv, inv_std(x, ms, tn.eps, &st), &st);
  y = cf_onnx_ew(x, "Mul", cf_onnx_cast(x, y, tn.dt, &st), cf_onnx_in(x, node, 1), &st);
  cf_onnx_bind_out(x, node, 0, y);
  return st;
}

/* GroupNormalization; with per_group, scale and bias are [G] (one value per group, repeated over
 * its channels), else [C]. */
static weft_status_t *groupnorm(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, bool per_group) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t groups = cf_onnx_attr_int(node, "num_groups", 1), c = dims[1];
  if (rank < 3 || groups <= 0 || c % groups != 0 || rank + 1 > WEFT_MAX_RANK)
    return cf_onnx_unsupported(x, "GroupNormalization of this shape");
  double eps = cf_onnx_attr_float(node, "epsilon", 1e-5f);
  /* [N, G, C/G, spatial...]: statistics over everything but N and G. */
  int64_t gd[WEFT_MAX_RANK] = {dims[0], groups, c / groups}, axes[WEFT_MAX_RANK];
  for (int d = 2; d < rank; d++) gd[d + 1] = dims[d];
  int na = cf_onnx_axes_range(axes, 2, rank + 1);
  weft_dtype_t dt = cf_onnx_out_dtype(v);
  weft_output_t g = cf_onnx_reshape(x, cf_onnx_cast(x, v, WEFT_DT_FLOAT, &st), gd, rank + 1, &st);
  weft_output_t mean, diff;
  weft_output_t var = moments(x, g, axes, na, &mean, &diff, &st);
  weft_output_t y = cf_onnx_ew(x, "Mul", diff, inv_std(x, var, eps, &st), &st);
  y = cf_onnx_cast(x, cf_onnx_reshape(x, y, dims, rank, &st), dt, &st);
  weft_output_t scale = cf_onnx_in(x, node, 1), bias = cf_onnx_in(x, node, 2);
  if (per_group && groups != c) {
    int64_t rep = c / groups, gd2[2] = {groups, 1}, cd = c;
    weft_output_t t = cf_onnx_const_ints(x, WEFT_DT_INT64, (int64_t[]){1, rep}, 2, false, &st);
    scale = cf_onnx_reshape(
        x, cf_onnx_binary(x, "Tile", cf_onnx_reshape(x, scale, gd2, 2, &st), t, &st), &cd, 1, &st);
    bias = cf_onnx_reshape(
        x, cf_onnx_binary(x, "Tile", cf_onnx_reshape(x, bias, gd2, 2, &st), t, &st), &cd, 1, &st);
  }
  y = cf_onnx_ew(x, "AddV2", cf_onnx_ew(x, "Mul", y, channel_param(x, scale, rank, c, &st), &st),
                 channel_param(x, bias, rank, c, &st), &st);
  cf_onnx_bind_out(x, node, 0, y);
  return st;
}

/* GroupNormalization-18: scale and bias per group. */
static weft_status_t *map_groupnorm_v1(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return groupnorm(x, node, true);
}

/* GroupNormalization-21: scale and bias per channel. */
static weft_status_t *map_groupnorm_v21(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  return groupnorm(x, node, false);
}

static weft_status_t *map_lrn(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  int64_t size = cf_onnx_attr_int(node, "size", 1);
  double alpha = cf_onnx_attr_float(node, "alpha", 1e-4f),
         beta = cf_onnx_attr_float(node, "beta", 0.75f);
  double bias = cf_onnx_attr_float(node, "bias", 1.0f);
  /* Sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)]. */
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  weft_output_t sq = cf_onnx_ew(x, "Mul", v, v, &st);
  int64_t pd[2] = {rank, 2};
  weft_tensor_t *pt = weft_tensor_new(WEFT_DT_INT64, 2, pd);
  ((int64_t *)weft_tensor_data(pt))[2] = before;
  ((int64_t *)weft_tensor_data(pt))[3] = after;
  weft_output_t pads = cf_onnx_const_tensor(x, pt, &st);
  weft_tensor_unref(pt);
  weft_op_builder_t *pb = cf_onnx_op(x, "PadV2");
  weft_output_t zero = cf_onnx_scalar_like(x, v, 0, &st);
  if (st) {
    weft_op_finish(pb, NULL);
    return st;
  }
  weft_op_add_input(pb, sq);
  weft_op_add_input(pb, pads);
  weft_op_add_input(pb, zero);
  weft_output_t padded = cf_onnx_finish(x, pb, &st);
  weft_output_t sum = CF_ONNX_NONE;
  for (int64_t k = 0; k < size && !st; k++) {
    int64_t begin[WEFT_MAX_RANK] = {0}, sz[WEFT_MAX_RANK];
    for (int d = 0; d < rank; d++) sz[d] = dims[d];
    begin[1] = k;
    weft_op_builder_t *b = cf_onnx_op(x, "Slice");
    weft_op_add_input(b, padded);
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, begin, rank, false, &st));
    weft_op_add_input(b, cf_onnx_const_ints(x, WEFT_DT_INT64, sz, rank, false, &st));
    weft_output_t sl = cf_onnx_finish(x, b, &st);
    sum = k == 0 ? sl : cf_onnx_ew(x, "AddV2", sum, sl, &st);
  }
  weft_output_t denom =
      cf_onnx_add_scalar(x, cf_onnx_mul_scalar(x, sum, alpha / (double)size, &st), bias, &st);
  denom = cf_onnx_ew(x, "Pow", denom, cf_onnx_scalar_like(x, v, beta, &st), &st);
  cf_onnx_bind_out(x, node, 0, cf_onnx_ew(x, "Div", v, denom, &st));
  return st;
}

const cf_onnx_row_t cf_onnx_rows_norm[] = {
    {"BatchNormalization", 1, map_batchnorm},
    {"LayerNormalization", 1, map_layernorm},
    {"InstanceNormalization", 1, map_instancenorm},
    {"MeanVarianceNormalization", 1, map_mvn},
    {"LpNormalization", 1, map_lpnorm},
    {"RMSNormalization", 1, map_rmsnorm},
    {"GroupNormalization", 1, map_groupnorm_v1},
    {"GroupNormalization", 21, map_groupnorm_v21},
    {"LRN", 1, map_lrn},
    {NULL, 0, NULL},
};
