/* onnx/map_loss.c: ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as arithmetic: a
 * one-hot pick of the class axis, weights, ignore_index and the reduction. */
#include <string.h>

#include "map.h"

/* NegativeLogLikelihoodLoss of log-probabilities [N, C, d...] and targets [N, d...]: the picked
 * entry (a one-hot over C), weighted, zero where target == ignore_index, then reduced. */
static weft_output_t nll(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, weft_output_t logp,
                         weft_output_t target, weft_output_t weight, weft_status_t **st) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = cf_onnx_shape(logp, dims);
  if (rank < 2) {
    if (!*st) *st = cf_onnx_unsupported(x, "a loss over rank %d scores", rank);
    return CF_ONNX_NONE;
  }
  const char *reduction = cf_onnx_attr_string(node, "reduction", "mean");
  bool has_ignore = cf_onnx_attr(node, "ignore_index") != NULL;
  int64_t ignore = cf_onnx_attr_int(node, "ignore_index", 0);
  weft_dtype_t dt = cf_onnx_out_dtype(logp);
  weft_output_t t64 = cf_onnx_cast(x, target, WEFT_DT_INT64, st);
  weft_output_t keep = CF_ONNX_NONE, tsafe = t64;
  if (has_ignore) {
    keep = cf_onnx_binary(x, "NotEqual", t64, cf_onnx_scalar_like(x, t64, (double)ignore, st), st);
    weft_op_builder_t *b = cf_onnx_op(x, "SelectV2");
    weft_output_t zero = cf_onnx_scalar_like(x, t64, 0, st);
    if (*st) {
      weft_op_finish(b, NULL);
      return CF_ONNX_NONE;
    }
    weft_op_add_input(b, keep);
    weft_op_add_input(b, t64);
    weft_op_add_input(b, zero);
    tsafe = cf_onnx_finish(x, b, st);
  }
  /* One-hot over the class axis (1), picked by multiplying and summing. */
  weft_op_builder_t *oh = cf_onnx_op(x, "OneHot");
  int64_t c = dims[1];
  weft_output_t depth = cf_onnx_const_ints(x, WEFT_DT_INT32, &c, 1, true, st);
  weft_output_t on = cf_onnx_const_scalar(x, dt, 1, st), off = cf_onnx_const_scalar(x, dt, 0, st);
  if (*st) {
    weft_op_finish(oh, NULL);
    return CF_ONNX_NONE;
  }
  weft_op_add_input(oh, tsafe);
  weft_op_add_input(oh, depth);
  weft_op_add_input(oh, on);
  weft_op_add_input(oh, off);
  weft_op_set_attr_int(oh, "axis", 1);
  weft_output_t onehot = cf_onnx_finish(x, oh, st);
  int64_t one = 1;
  weft_output_t picked =
      cf_onnx_reduce(x, "Sum", cf_onnx_ew(x, "Mul", logp, onehot, st), &one, 1, false, st);
  weft_output_t w = CF_ONNX_NONE;
  if (weight.node) {
    weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
    int64_t zero = 0;
    weft_output_t ax = cf_onnx_const_ints(x, WEFT_DT_INT64, &zero, 1, true, st);
    if (*st) {
      weft_op_finish(g, NULL);
      return CF_ONNX_NONE;
    }
    weft_op_add_input(g, weight);
    weft_op_add_input(g, tsafe);
    weft_op_add_input(g, ax);
    w = cf_onnx_finish(x, g, st);
  }
  if (keep.node) {
    weft_output_t kf = cf_onnx_cast(x, keep, dt, st);
    w = w.node ? cf_onnx_ew(x, "Mul", w, kf, st) : kf;
  }
  weft_output_t loss = cf_onnx_ew(x, "Neg", picked, CF_ONNX_NONE, st);
  if (w.node) loss = cf_onnx_ew(x, "Mul", loss, w, st);
  if (*st) return CF_ONNX_NONE;
  int64_t axes[WEFT_MAX_RANK];
  int na = rank - 1;
  for (int d = 0; d < na; d++) axes[d] = d;
  if (strcmp(reduction, "none") == 0) return loss;
  weft_output_t total = cf_onnx_reduce(x, "Sum", loss, axes, na, false, st);
  if (strcmp(reduction, "sum") == 0) return total;
  weft_output_t denom =
      w.node ? cf_onnx_reduce(x, "Sum", w, axes, na, false, st)
             : cf_onnx_const_scalar(x, dt, (double)(cf_num_elements(rank, dims) / c), st);
  return cf_onnx_ew(x, "Div", total, denom, st);
}

static weft_status_t *map_nll(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  cf_onnx_bind_out(
      x, node, 0,
      nll(x, node, cf_onnx_in(x, node, 0), cf_onnx_in(x, node, 1), cf_onnx_in(x, node, 2), &st));
  return st;
}

static weft_status_t *map_sce(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  weft_output_t v = cf_onnx_in(x, node, 0);
  int64_t dims[WEFT_MAX_RANK], perm[WEFT_MAX_RANK];
  int rank;
  if ((st = cf_onnx_need_shape(x, v, &rank, dims))) return st;
  /* log-softmax over the class axis (1): moved last for LogSoftmax, then back. */
  weft_output_t logp;
  if (rank == 2) {
    logp = cf_onnx_ew(x, "LogSoftmax", v, CF_ONNX_NONE, &st);
  } else {
    for (int d = 0; d < rank; d++) perm[d] = d;
    perm[1] = rank - 1;
    perm[rank - 1] = 1;
    logp = cf_onnx_transpose(
        x, cf_onnx_ew(x, "LogSoftmax", cf_onnx_transpose(x, v, perm, rank, &st), CF_ONNX_NONE, &st),
        perm, rank, &st);
  }
  cf_onnx_bind_out(x, node, 0,
                   nll(x, node, logp, cf_onnx_in(x, node, 1), cf_onnx_in(x, node, 2), &st));
  if (cf_onnx_has_out(node, 1)) cf_onnx_bind_out(x, node, 1, logp);
  return st;
}

const cf_onnx_row_t cf_onnx_rows_loss[] = {
    {"NegativeLogLikelihoodLoss", 1, map_nll},
    {"SoftmaxCrossEntropyLoss", 1, map_sce},
    {NULL, 0, NULL},
};
