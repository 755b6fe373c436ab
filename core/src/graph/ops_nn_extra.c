/* ops_nn_extra.c: TensorFlow's fused recurrent cells (LSTMBlockCell, BlockLSTM, BlockLSTMV2,
 * GRUBlockCell, from tensorflow/core/ops/rnn_ops.cc and the former contrib/rnn lstm_ops.cc and
 * gru_ops.cc), the fake-quantization ops of quantization-aware training (FakeQuantWithMinMax*,
 * and their gradients, array_ops.cc) and InTopK / InTopKV2 (nn_ops.cc), with TensorFlow's
 * names, args, attrs, type constraints and shape functions. */
#include "ops_shape.h"

/* Every output `n_out` gets the shape `out`. */
static weft_status_t *all_outputs(weft_shape_ctx_t *ctx, int n_out, const weft__shape_t *out) {
  for (int i = 0; i < n_out; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, out));
  return NULL;
}

/* LSTMBlockCell: x [batch, input], cs_prev [batch, cell]; the 7 outputs are [batch, cell]. */
static weft_status_t *lstm_cell_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x, cs_prev;
  weft__sh_input(ctx, 0, &x);
  weft__sh_input(ctx, 1, &cs_prev);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 2, "x"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &cs_prev, 2, "cs_prev"));
  weft__shape_t out = weft__sh_unknown_dims(2);
  if (x.rank == 2) out.dims[0] = x.dims[0];
  if (cs_prev.rank == 2) out.dims[1] = cs_prev.dims[1];
  return all_outputs(ctx, 7, &out);
}

/* BlockLSTM(V2): x [timelen, batch, input], cs_prev [batch, cell]; outputs are
 * [timelen, batch, cell]. */
static weft_status_t *block_lstm_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t seq_len_max, x, cs_prev;
  weft__sh_input(ctx, 0, &seq_len_max);
  weft__sh_input(ctx, 1, &x);
  weft__sh_input(ctx, 2, &cs_prev);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &seq_len_max, 0, "seq_len_max"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 3, "x"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &cs_prev, 2, "cs_prev"));
  weft__shape_t out = weft__sh_unknown_dims(3);
  if (x.rank == 3) {
    out.dims[0] = x.dims[0];
    out.dims[1] = x.dims[1];
  }
  if (cs_prev.rank == 2) out.dims[2] = cs_prev.dims[1];
  return all_outputs(ctx, 7, &out);
}

/* GRUBlockCell: x [batch, input], h_prev [batch, cell]; r, u, c, h are [batch, cell]. */
static weft_status_t *gru_cell_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t x, h_prev;
  weft__sh_input(ctx, 0, &x);
  weft__sh_input(ctx, 1, &h_prev);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &x, 2, "x"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &h_prev, 2, "h_prev"));
  weft__shape_t out = weft__sh_unknown_dims(2);
  if (x.rank == 2) out.dims[0] = x.dims[0];
  if (h_prev.rank == 2) out.dims[1] = h_prev.dims[1];
  return all_outputs(ctx, 4, &out);
}

/* FakeQuantWithMinMaxVars: min and max are scalars; the output has the input's shape. */
static weft_status_t *fake_quant_vars_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, mn, mx;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &mn);
  weft__sh_input(ctx, 2, &mx);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &mn, 0, "min"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &mx, 0, "max"));
  return weft__sh_output(ctx, 0, &in);
}

/* min and max [d] with d the input's last dimension. */
static weft_status_t *per_channel_minmax(weft_shape_ctx_t *ctx, int first, weft__shape_t *in,
                                         weft__shape_t *mm) {
  weft__shape_t mn, mx;
  weft__sh_input(ctx, first, in);
  weft__sh_input(ctx, first + 1, &mn);
  weft__sh_input(ctx, first + 2, &mx);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, in, 1, "inputs"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &mn, 1, "min"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &mx, 1, "max"));
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &mn, &mx, mm, "min and max"));
  if (in->rank >= 1 && mm->rank == 1 &&
      !weft__sh_merge_dim(in->dims[in->rank - 1], mm->dims[0], &mm->dims[0]))
    return weft__sh_error(ctx,
                          "Dimensions must be equal, but are %" G_GINT64_FORMAT
                          " and %" G_GINT64_FORMAT ": min and max must match the last dimension "
                          "of inputs",
                          in->dims[in->rank - 1], mm->dims[0]);
  return NULL;
}

static weft_status_t *fake_quant_per_channel_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, mm;
  WEFT_RETURN_IF_ERROR(per_channel_minmax(ctx, 0, &in, &mm));
  return weft__sh_output(ctx, 0, &in);
}

/* The gradients: backprops like inputs (merged with gradients); min and max grads like min. */
static weft_status_t *fake_quant_grad_shape(weft_shape_ctx_t *ctx, bool per_channel) {
  weft__shape_t g, in, mm;
  weft__sh_input(ctx, 0, &g);
  if (per_channel) {
    WEFT_RETURN_IF_ERROR(per_channel_minmax(ctx, 1, &in, &mm));
  } else {
    weft__shape_t mn, mx;
    weft__sh_input(ctx, 1, &in);
    weft__sh_input(ctx, 2, &mn);
    weft__sh_input(ctx, 3, &mx);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &mn, 0, "min"));
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &mx, 0, "max"));
    mm = (weft__shape_t){.rank = 0};
  }
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &g, &in, &in, "gradients and inputs"));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &in));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &mm));
  return weft__sh_output(ctx, 2, &mm);
}
static weft_status_t *fake_quant_vars_grad_shape(weft_shape_ctx_t *ctx) {
  return fake_quant_grad_shape(ctx, false);
}
static weft_status_t *fake_quant_per_channel_grad_shape(weft_shape_ctx_t *ctx) {
  return fake_quant_grad_shape(ctx, true);
}

static weft_status_t *fake_quant_args_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t g, in;
  weft__sh_input(ctx, 0, &g);
  weft__sh_input(ctx, 1, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &g, &in, &in, "gradients and inputs"));
  return weft__sh_output(ctx, 0, &in);
}

/* InTopK(V2): predictions [batch, classes], targets [batch] -> precision [batch]. */
static weft_status_t *in_top_k_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t pred, targets, k;
  weft__sh_input(ctx, 0, &pred);
  weft__sh_input(ctx, 1, &targets);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &pred, 2, "predictions"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &targets, 1, "targets"));
  if (weft__sh_attr_int(ctx, "k", -1) < 0) { /* InTopKV2: k is an input */
    weft__sh_input(ctx, 2, &k);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &k, 0, "k"));
  }
  weft__shape_t out = weft__sh_unknown_dims(1);
  int64_t batch = pred.rank == 2 ? pred.dims[0] : WEFT_DIM_UNKNOWN;
  int64_t tb = targets.rank == 1 ? targets.dims[0] : WEFT_DIM_UNKNOWN;
  if (!weft__sh_merge_dim(batch, tb, &out.dims[0]))
    return weft__sh_error(ctx,
                          "Dimensions must be equal, but are %" G_GINT64_FORMAT
                          " and %" G_GINT64_FORMAT " for predictions and targets",
                          batch, tb);
  return weft__sh_output(ctx, 0, &out);
}

#define LSTM_OUTPUTS                                                                         \
  WEFT__SPECS("i: T", "cs: T", "f: T", "o: T", "ci: T", "co: T", "h: T")
#define LSTM_WEIGHTS "w: T", "wci: T", "wcf: T", "wco: T", "b: T"
#define FQ_ATTRS "num_bits: int = 8", "narrow_range: bool = false"

const weft_op_def_t weft__ops_nn_extra[] = {
    WEFT__OP("LSTMBlockCell", WEFT__SPECS("x: T", "cs_prev: T", "h_prev: T", LSTM_WEIGHTS),
             LSTM_OUTPUTS,
             WEFT__SPECS("forget_bias: float = 1.0", "cell_clip: float = 3.0",
                         "use_peephole: bool = false", "T: {half, float}"),
             0, lstm_cell_shape),
    WEFT__OP("BlockLSTM",
             WEFT__SPECS("seq_len_max: int64", "x: T", "cs_prev: T", "h_prev: T", LSTM_WEIGHTS),
             LSTM_OUTPUTS,
             WEFT__SPECS("forget_bias: float = 1.0", "cell_clip: float = 3.0",
                         "use_peephole: bool = false", "T: {half, float}"),
             0, block_lstm_shape),
    WEFT__OP("BlockLSTMV2",
             WEFT__SPECS("seq_len_max: int64", "x: T", "cs_prev: T", "h_prev: T", LSTM_WEIGHTS),
             LSTM_OUTPUTS,
             WEFT__SPECS("cell_clip: float = 0.0", "use_peephole: bool = false",
                         "T: {half, float}"),
             0, block_lstm_shape),
    WEFT__OP("GRUBlockCell",
             WEFT__SPECS("x: T", "h_prev: T", "w_ru: T", "w_c: T", "b_ru: T", "b_c: T"),
             WEFT__SPECS("r: T", "u: T", "c: T", "h: T"), WEFT__SPECS("T: {float}"), 0,
             gru_cell_shape),
    WEFT__OP("FakeQuantWithMinMaxArgs", WEFT__SPECS("inputs: float"), WEFT__SPECS("outputs: float"),
             WEFT__SPECS("min: float = -6.0", "max: float = 6.0", FQ_ATTRS), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("FakeQuantWithMinMaxArgsGradient", WEFT__SPECS("gradients: float", "inputs: float"),
             WEFT__SPECS("backprops: float"),
             WEFT__SPECS("min: float = -6.0", "max: float = 6.0", FQ_ATTRS), 0,
             fake_quant_args_grad_shape),
    WEFT__OP("FakeQuantWithMinMaxVars", WEFT__SPECS("inputs: float", "min: float", "max: float"),
             WEFT__SPECS("outputs: float"), WEFT__SPECS(FQ_ATTRS), 0, fake_quant_vars_shape),
    WEFT__OP("FakeQuantWithMinMaxVarsGradient",
             WEFT__SPECS("gradients: float", "inputs: float", "min: float", "max: float"),
             WEFT__SPECS("backprops_wrt_input: float", "backprop_wrt_min: float",
                         "backprop_wrt_max: float"),
             WEFT__SPECS(FQ_ATTRS), 0, fake_quant_vars_grad_shape),
    WEFT__OP("FakeQuantWithMinMaxVarsPerChannel",
             WEFT__SPECS("inputs: float", "min: float", "max: float"),
             WEFT__SPECS("outputs: float"), WEFT__SPECS(FQ_ATTRS), 0,
             fake_quant_per_channel_shape),
    WEFT__OP("FakeQuantWithMinMaxVarsPerChannelGradient",
             WEFT__SPECS("gradients: float", "inputs: float", "min: float", "max: float"),
             WEFT__SPECS("backprops_wrt_input: float", "backprop_wrt_min: float",
                         "backprop_wrt_max: float"),
             WEFT__SPECS(FQ_ATTRS), 0, fake_quant_per_channel_grad_shape),
    WEFT__OP("InTopK", WEFT__SPECS("predictions: float", "targets: T"),
             WEFT__SPECS("precision: bool"), WEFT__SPECS("k: int", "T: {int32, int64} = DT_INT32"),
             0, in_top_k_shape),
    WEFT__OP("InTopKV2", WEFT__SPECS("predictions: float", "targets: T", "k: T"),
             WEFT__SPECS("precision: bool"), WEFT__SPECS("T: {int32, int64} = DT_INT32"), 0,
             in_top_k_shape),
    WEFT__OPS_END,
};
