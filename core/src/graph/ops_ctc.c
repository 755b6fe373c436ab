/* ops_ctc.c: TensorFlow's sequence ops with its names, inputs, attrs, defaults and shape
 * functions (tensorflow/core/ops/ctc_ops.cc, array_ops.cc): CTCLoss (connectionist temporal
 * classification loss and its gradient), CTCGreedyDecoder, CTCBeamSearchDecoder and EditDistance
 * (Levenshtein distance of sparse sequences). Decoded lengths are known only at run time; the
 * kernels check everything again. */
#include "ops_shape.h"

/* CTCLoss: loss [batch] and gradient of the inputs' shape, the batch merged with
 * sequence_length's length; labels_indices [n, 2] and labels_values [n]. */
static weft_status_t *ctc_loss_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t inputs, idx, vals, seq;
  weft__sh_input(ctx, 0, &inputs);
  weft__sh_input(ctx, 1, &idx);
  weft__sh_input(ctx, 2, &vals);
  weft__sh_input(ctx, 3, &seq);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &inputs, 3, "inputs"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &idx, 2, "labels_indices"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &vals, 1, "labels_values"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &seq, 1, "sequence_length"));
  int64_t rows = WEFT_DIM_UNKNOWN, batch = WEFT_DIM_UNKNOWN;
  if (!weft__sh_merge_dim(idx.rank == 2 ? idx.dims[0] : WEFT_DIM_UNKNOWN,
                          vals.rank == 1 ? vals.dims[0] : WEFT_DIM_UNKNOWN, &rows))
    return weft__sh_error(ctx, "labels_indices and labels_values must contain the same number "
                          "of rows");
  if (!weft__sh_merge_dim(inputs.rank == 3 ? inputs.dims[1] : WEFT_DIM_UNKNOWN,
                          seq.rank == 1 ? seq.dims[0] : WEFT_DIM_UNKNOWN, &batch))
    return weft__sh_error(ctx, "len(sequence_length) != batch_size");
  weft__shape_t loss = {.rank = 1, .dims = {batch}};
  weft__shape_t grad = inputs.rank == 3 ? inputs : weft__sh_unknown_dims(3);
  grad.dims[1] = batch;
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &loss));
  return weft__sh_output(ctx, 1, &grad);
}

/* The decoders: paths sparse triples ([?, 2] int64, [?] int64, [2] int64 each) and
 * log_probability [batch, paths]. */
static weft_status_t *ctc_decoder_shape(weft_shape_ctx_t *ctx, int64_t paths) {
  weft__shape_t inputs, seq;
  weft__sh_input(ctx, 0, &inputs);
  weft__sh_input(ctx, 1, &seq);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &inputs, 3, "inputs"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &seq, 1, "sequence_length"));
  int64_t batch = WEFT_DIM_UNKNOWN;
  if (!weft__sh_merge_dim(inputs.rank == 3 ? inputs.dims[1] : WEFT_DIM_UNKNOWN,
                          seq.rank == 1 ? seq.dims[0] : WEFT_DIM_UNKNOWN, &batch))
    return weft__sh_error(ctx, "len(sequence_length) != batch_size");
  weft__shape_t indices = {.rank = 2, .dims = {WEFT_DIM_UNKNOWN, 2}};
  weft__shape_t values = weft__sh_unknown_dims(1);
  weft__shape_t dense = {.rank = 1, .dims = {2}};
  weft__shape_t log_prob = {.rank = 2, .dims = {batch, paths}};
  for (int64_t p = 0; p < paths; p++) {
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)p, &indices));
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)(paths + p), &values));
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)(2 * paths + p), &dense));
  }
  return weft__sh_output(ctx, (int)(3 * paths), &log_prob);
}

static weft_status_t *ctc_greedy_shape(weft_shape_ctx_t *ctx) {
  return ctc_decoder_shape(ctx, 1);
}

static weft_status_t *ctc_beam_shape(weft_shape_ctx_t *ctx) {
  return ctc_decoder_shape(ctx, weft__sh_attr_int(ctx, "top_paths", 1));
}

/* EditDistance: the sparse shapes' elementwise maximum without the last dim when both are
 * constants (as TensorFlow's); else their length less one, when known, gives the rank. */
static weft_status_t *edit_distance_shape(weft_shape_ctx_t *ctx) {
  static const char *const names[6] = {"hypothesis_indices", "hypothesis_values",
                                       "hypothesis_shape",   "truth_indices",
                                       "truth_values",       "truth_shape"};
  weft__shape_t in[6];
  for (int i = 0; i < 6; i++) {
    weft__sh_input(ctx, i, &in[i]);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in[i], i % 3 == 0 ? 2 : 1, names[i]));
  }
  int64_t *h = NULL, *t = NULL, nh = 0, nt = 0;
  weft_status_t *st = NULL;
  weft__shape_t out = {.rank = -1};
  if (weft__sh_const_ints(ctx, 2, &h, &nh, NULL) && weft__sh_const_ints(ctx, 5, &t, &nt, NULL)) {
    if (nh != nt)
      st = weft__sh_error(ctx, "Num elements of hypothesis_shape does not match truth_shape: "
                          "%lld vs. %lld", (long long)nh, (long long)nt);
    else if (nt < 2)
      st = weft__sh_error(ctx, "Input SparseTensors must have rank at least 2, but truth_shape "
                          "rank is: %lld", (long long)nt);
    else if (nt - 1 <= WEFT_MAX_RANK) {
      out.rank = (int)(nt - 1);
      /* A negative dim is the kernel's error to give; here it is only unknown. */
      for (int d = 0; d < out.rank; d++) {
        out.dims[d] = h[d] > t[d] ? h[d] : t[d];
        if (out.dims[d] < 0) out.dims[d] = WEFT_DIM_UNKNOWN;
      }
    }
  } else {
    int64_t len = in[5].rank == 1 ? in[5].dims[0] : WEFT_DIM_UNKNOWN;
    if (len < 0 && in[2].rank == 1) len = in[2].dims[0];
    if (len >= 2 && len - 1 <= WEFT_MAX_RANK) out = weft__sh_unknown_dims((int)(len - 1));
  }
  g_free(h);
  g_free(t);
  if (st) return st;
  return weft__sh_output(ctx, 0, &out);
}

#define CTC_T "T: {float, double} = DT_FLOAT"

const weft_op_def_t weft__ops_ctc[] = {
    WEFT__OP("CTCLoss",
             WEFT__SPECS("inputs: T", "labels_indices: int64", "labels_values: int32",
                         "sequence_length: int32"),
             WEFT__SPECS("loss: T", "gradient: T"),
             WEFT__SPECS("preprocess_collapse_repeated: bool = false",
                         "ctc_merge_repeated: bool = true",
                         "ignore_longer_outputs_than_inputs: bool = false", CTC_T),
             0, ctc_loss_shape),
    WEFT__OP("CTCGreedyDecoder", WEFT__SPECS("inputs: T", "sequence_length: int32"),
             WEFT__SPECS("decoded_indices: int64", "decoded_values: int64",
                         "decoded_shape: int64", "log_probability: T"),
             WEFT__SPECS("merge_repeated: bool = false", "blank_index: int = -1", CTC_T), 0,
             ctc_greedy_shape),
    WEFT__OP("CTCBeamSearchDecoder", WEFT__SPECS("inputs: T", "sequence_length: int32"),
             WEFT__SPECS("decoded_indices: top_paths * int64",
                         "decoded_values: top_paths * int64", "decoded_shape: top_paths * int64",
                         "log_probability: T"),
             WEFT__SPECS("beam_width: int >= 1", "top_paths: int >= 1",
                         "merge_repeated: bool = true", CTC_T),
             0, ctc_beam_shape),
    WEFT__OP("EditDistance",
             WEFT__SPECS("hypothesis_indices: int64", "hypothesis_values: T",
                         "hypothesis_shape: int64", "truth_indices: int64", "truth_values: T",
                         "truth_shape: int64"),
             WEFT__SPECS("output: float"), WEFT__SPECS("normalize: bool = true", "T: type"), 0,
             edit_distance_shape),
    WEFT__OPS_END,
};
