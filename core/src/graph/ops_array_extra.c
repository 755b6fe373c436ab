/* ops_array_extra.c: more of TensorFlow's array ops, with its names, input order, attrs, type
 * constraints and defaults (tensorflow/core/ops/array_ops.cc, nn_ops.cc, math_ops.cc): ReverseV2,
 * ReverseSequence, Roll, the MatrixDiag / MatrixSetDiag / MatrixDiagPart families (V1, V2, V3),
 * MatrixBandPart, SpaceToBatchND, BatchToSpaceND, SpaceToDepth, DepthToSpace, Where, NthElement,
 * TopKV2, TopK, Unique, UniqueWithCounts, InvertPermutation, ParallelConcat, DeepCopy, Empty and
 * BroadcastArgs. Shape functions give what is known statically; data-dependent dims are unknown
 * and the kernels check everything again at run time. */
#include <string.h>

#include "ops_shape.h"

static const weft__shape_t kUnknown = {.rank = -1};

static weft_status_t *unknown_shape(weft_shape_ctx_t *ctx) {
  return weft__sh_output(ctx, 0, &kUnknown);
}

static weft_status_t *reverse_v2_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, axis;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &axis);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &axis, 1, "axis"));
  if (in.rank > 8)
    return weft__sh_error(ctx, "reverse does not work on tensors with more than 8 dimensions");
  return weft__sh_output(ctx, 0, &in);
}

/* MatrixDiag (V1): [..., N] -> [..., N, N]. */
static weft_status_t *matrix_diag_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "diagonal"));
  if (in.rank < 0 || in.rank + 1 > WEFT_MAX_RANK) return unknown_shape(ctx);
  weft__shape_t out = in;
  out.rank = in.rank + 1;
  out.dims[in.rank] = in.dims[in.rank - 1];
  return weft__sh_output(ctx, 0, &out);
}

/* MatrixDiagPart (V1): [..., M, N] -> [..., min(M, N)]. */
static weft_status_t *matrix_diag_part_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 2, "input"));
  if (in.rank < 0) return unknown_shape(ctx);
  weft__shape_t out = in;
  out.rank = in.rank - 1;
  int64_t m = in.dims[in.rank - 2], n = in.dims[in.rank - 1];
  out.dims[in.rank - 2] = m < 0 || n < 0 ? WEFT_DIM_UNKNOWN : (m < n ? m : n);
  return weft__sh_output(ctx, 0, &out);
}

/* MatrixSetDiag (all versions), MatrixBandPart: the output is the input matrix. */
static weft_status_t *matrix_input_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 2, "input"));
  return weft__sh_output(ctx, 0, &in);
}

/* Where: [num_true, rank(input)]. */
static weft_status_t *where_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  weft__shape_t out = {.rank = 2, .dims = {WEFT_DIM_UNKNOWN, in.rank >= 0 ? in.rank : -1}};
  if (in.rank < 0) out.dims[1] = WEFT_DIM_UNKNOWN;
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *nth_element_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, n;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &n);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "input"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &n, 0, "n"));
  if (in.rank < 0) return unknown_shape(ctx);
  int64_t *v = NULL, cnt = 0;
  if (weft__sh_const_ints(ctx, 1, &v, &cnt, NULL) && cnt == 1) {
    int64_t nv = v[0], last = in.dims[in.rank - 1];
    g_free(v);
    if (nv < 0) return weft__sh_error(ctx, "Need n >= 0, got %" G_GINT64_FORMAT, nv);
    if (last >= 0 && last <= nv)
      return weft__sh_error(ctx, "Input must have last dimension > n = %" G_GINT64_FORMAT, nv);
  } else {
    g_free(v);
  }
  weft__shape_t out = in;
  out.rank = in.rank - 1;
  return weft__sh_output(ctx, 0, &out);
}

/* TopKV2 (k an input) and TopK (k an attr): values and indices are the input's shape with the
 * last dimension k (unknown while k is). */
static weft_status_t *top_k_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "input"));
  int64_t kv = weft__sh_attr_int(ctx, "k", INT64_MIN); /* INT64_MIN: no attr, TopKV2 */
  bool known = kv != INT64_MIN;
  if (!known) {
    weft__shape_t k;
    weft__sh_input(ctx, 1, &k);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &k, 0, "k"));
    int64_t *v = NULL, cnt = 0;
    if (weft__sh_const_ints(ctx, 1, &v, &cnt, NULL) && cnt == 1) {
      kv = v[0];
      known = true;
    }
    g_free(v);
  }
  if (in.rank < 0) {
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &kUnknown));
    return weft__sh_output(ctx, 1, &kUnknown);
  }
  weft__shape_t out = in;
  out.dims[in.rank - 1] = WEFT_DIM_UNKNOWN;
  if (known) {
    int64_t last = in.dims[in.rank - 1];
    if (kv < 0) return weft__sh_error(ctx, "Need k >= 0, got %" G_GINT64_FORMAT, kv);
    if (last >= 0 && last < kv)
      return weft__sh_error(ctx, "input must have last dimension >= k = %" G_GINT64_FORMAT
                            " but is %" G_GINT64_FORMAT, kv, last);
    out.dims[in.rank - 1] = kv;
  }
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &out));
  return weft__sh_output(ctx, 1, &out);
}

/* Unique, UniqueWithCounts: y and count are [?], idx is x's shape ([n]). */
static weft_status_t *unique_shape_n(weft_shape_ctx_t *ctx, bool counts) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 1, "x"));
  weft__shape_t vec = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  weft__shape_t idx = {.rank = 1, .dims = {in.rank == 1 ? in.dims[0] : WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &vec));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &idx));
  if (counts) return weft__sh_output(ctx, 2, &vec);
  return NULL;
}

static weft_status_t *unique_shape(weft_shape_ctx_t *ctx) { return unique_shape_n(ctx, false); }

static weft_status_t *unique_counts_shape(weft_shape_ctx_t *ctx) {
  return unique_shape_n(ctx, true);
}

static weft_status_t *invert_permutation_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 1, "x"));
  return weft__sh_output(ctx, 0, &in);
}

/* SpaceToDepth / DepthToSpace over NHWC or NCHW (rank 4). */
static weft_status_t *depth_space_shape(weft_shape_ctx_t *ctx, bool to_depth) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t bs = weft__sh_attr_int(ctx, "block_size", 2);
  if (bs < 2) return weft__sh_error(ctx, "block_size must be at least 2, not %" G_GINT64_FORMAT,
                                    bs);
  const char *fmt = weft__sh_attr_string(ctx, "data_format", "NHWC");
  /* NCHW_VECT_C (rank 5) has no kernel here; the kernel reports it. */
  if (strcmp(fmt, "NHWC") != 0 && strcmp(fmt, "NCHW") != 0) return unknown_shape(ctx);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "input"));
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknown);
  bool nchw = strcmp(fmt, "NCHW") == 0;
  int h = nchw ? 2 : 1, w = nchw ? 3 : 2, c = nchw ? 1 : 3;
  weft__shape_t out = in;
  if (to_depth) {
    for (int d = h; d <= w; d++) {
      if (in.dims[d] >= 0 && in.dims[d] % bs != 0)
        return weft__sh_error(ctx, "Image width %" G_GINT64_FORMAT " and height %"
                              G_GINT64_FORMAT " should be divisible by block_size: %"
                              G_GINT64_FORMAT, in.dims[w], in.dims[h], bs);
      out.dims[d] = in.dims[d] < 0 ? WEFT_DIM_UNKNOWN : in.dims[d] / bs;
    }
    out.dims[c] = in.dims[c] < 0 ? WEFT_DIM_UNKNOWN : in.dims[c] * bs * bs;
  } else {
    if (in.dims[c] >= 0 && in.dims[c] % (bs * bs) != 0)
      return weft__sh_error(ctx, "Input depth dimension %" G_GINT64_FORMAT
                            " should be divisible by: %" G_GINT64_FORMAT, in.dims[c], bs * bs);
    for (int d = h; d <= w; d++) out.dims[d] = in.dims[d] < 0 ? WEFT_DIM_UNKNOWN : in.dims[d] * bs;
    out.dims[c] = in.dims[c] < 0 ? WEFT_DIM_UNKNOWN : in.dims[c] / (bs * bs);
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *space_to_depth_shape(weft_shape_ctx_t *ctx) {
  return depth_space_shape(ctx, true);
}

static weft_status_t *depth_to_space_shape(weft_shape_ctx_t *ctx) {
  return depth_space_shape(ctx, false);
}

/* SpaceToBatchND / BatchToSpaceND: the rank is the input's; the dims need the constant block
 * shape and paddings (crops), which the kernel reads; only the rank is given here. */
static weft_status_t *space_batch_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  weft__shape_t out = weft__sh_unknown_dims(in.rank);
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *parallel_concat_shape(weft_shape_ctx_t *ctx) {
  const weft_host_t *h = weft__graph_host();
  weft__shape_t declared = {.rank = -1};
  weft_status_t *status = h->attr_shape(h->shape_attrs(ctx), "shape", &declared.rank,
                                        declared.dims);
  if (status) {
    h->status_free(status);
    declared.rank = -1;
  }
  return weft__sh_output(ctx, 0, &declared);
}

static weft_status_t *empty_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 0, &out));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *broadcast_args_shape(weft_shape_ctx_t *ctx) {
  for (int i = 0; i < 2; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 1, i == 0 ? "s0" : "s1"));
  }
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  return weft__sh_output(ctx, 0, &out);
}

/* ---------------------------------------------------------------------------------------------
 * The table */

#define IDX(name) name ": {int32, int64} = DT_INT32"
#define ALIGN "align: {'LEFT_RIGHT', 'RIGHT_LEFT', 'LEFT_LEFT', 'RIGHT_RIGHT'} = 'RIGHT_LEFT'"

const weft_op_def_t weft__ops_array_extra[] = {
    WEFT__OP("ReverseV2", WEFT__SPECS("tensor: T", "axis: Tidx"), WEFT__SPECS("output: T"),
             WEFT__SPECS(IDX("Tidx"),
                         "T: {uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, "
                         "bfloat16, half, float, double, string}"),
             0, reverse_v2_shape),
    WEFT__OP("ReverseSequence", WEFT__SPECS("input: T", "seq_lengths: Tlen"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("seq_dim: int", "batch_dim: int = 0", "T: type",
                         "Tlen: {int32, int64} = DT_INT64"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("Roll", WEFT__SPECS("input: T", "shift: Tshift", "axis: Taxis"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "Tshift: {int32, int64}", "Taxis: {int32, int64}"), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("MatrixDiag", WEFT__SPECS("diagonal: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, matrix_diag_shape),
    WEFT__OP("MatrixDiagV2",
             WEFT__SPECS("diagonal: T", "k: int32", "num_rows: int32", "num_cols: int32",
                         "padding_value: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: type"), 0, unknown_shape),
    WEFT__OP("MatrixDiagV3",
             WEFT__SPECS("diagonal: T", "k: int32", "num_rows: int32", "num_cols: int32",
                         "padding_value: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: type", ALIGN), 0, unknown_shape),
    WEFT__OP("MatrixSetDiag", WEFT__SPECS("input: T", "diagonal: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, matrix_input_shape),
    WEFT__OP("MatrixSetDiagV2", WEFT__SPECS("input: T", "diagonal: T", "k: int32"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: type"), 0, matrix_input_shape),
    WEFT__OP("MatrixSetDiagV3", WEFT__SPECS("input: T", "diagonal: T", "k: int32"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: type", ALIGN), 0, matrix_input_shape),
    WEFT__OP("MatrixDiagPart", WEFT__SPECS("input: T"), WEFT__SPECS("diagonal: T"),
             WEFT__SPECS("T: type"), 0, matrix_diag_part_shape),
    WEFT__OP("MatrixDiagPartV2", WEFT__SPECS("input: T", "k: int32", "padding_value: T"),
             WEFT__SPECS("diagonal: T"), WEFT__SPECS("T: type"), 0, unknown_shape),
    WEFT__OP("MatrixDiagPartV3", WEFT__SPECS("input: T", "k: int32", "padding_value: T"),
             WEFT__SPECS("diagonal: T"), WEFT__SPECS("T: type", ALIGN), 0, unknown_shape),
    WEFT__OP("MatrixBandPart", WEFT__SPECS("input: T", "num_lower: Tindex", "num_upper: Tindex"),
             WEFT__SPECS("band: T"), WEFT__SPECS("T: type", "Tindex: {int32, int64} = DT_INT64"),
             0, matrix_input_shape),
    WEFT__OP("SpaceToBatchND", WEFT__SPECS("input: T", "block_shape: Tblock_shape",
                                           "paddings: Tpaddings"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", IDX("Tblock_shape"), IDX("Tpaddings")), 0, space_batch_shape),
    WEFT__OP("BatchToSpaceND", WEFT__SPECS("input: T", "block_shape: Tblock_shape",
                                           "crops: Tcrops"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", IDX("Tblock_shape"), IDX("Tcrops")), 0, space_batch_shape),
    WEFT__OP("SpaceToDepth", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "block_size: int >= 2",
                         "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"),
             0, space_to_depth_shape),
    WEFT__OP("DepthToSpace", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "block_size: int >= 2",
                         "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"),
             0, depth_to_space_shape),
    WEFT__OP("Where", WEFT__SPECS("input: T"), WEFT__SPECS("index: int64"),
             WEFT__SPECS("T: {numbertype, bool} = DT_BOOL"), 0, where_shape),
    WEFT__OP("NthElement", WEFT__SPECS("input: T", "n: int32"), WEFT__SPECS("values: T"),
             WEFT__SPECS("reverse: bool = false", "T: realnumbertype"), 0, nth_element_shape),
    WEFT__OP("TopKV2", WEFT__SPECS("input: T", "k: Tk"),
             WEFT__SPECS("values: T", "indices: index_type"),
             WEFT__SPECS("sorted: bool = true", "T: realnumbertype",
                         "Tk: {int16, int32, int64} = DT_INT32",
                         "index_type: {int16, int32, int64} = DT_INT32"),
             0, top_k_shape),
    /* TensorFlow 1.x's TopK: k an attr, int32 indices (TopKV2's kernel and gradient). */
    WEFT__OP("TopK", WEFT__SPECS("input: T"), WEFT__SPECS("values: T", "indices: int32"),
             WEFT__SPECS("k: int >= 0", "sorted: bool = true", "T: realnumbertype"), 0,
             top_k_shape),
    WEFT__OP("Unique", WEFT__SPECS("x: T"), WEFT__SPECS("y: T", "idx: out_idx"),
             WEFT__SPECS("T: type", IDX("out_idx")), 0, unique_shape),
    WEFT__OP("UniqueWithCounts", WEFT__SPECS("x: T"),
             WEFT__SPECS("y: T", "idx: out_idx", "count: out_idx"),
             WEFT__SPECS("T: type", IDX("out_idx")), 0, unique_counts_shape),
    WEFT__OP("InvertPermutation", WEFT__SPECS("x: T"), WEFT__SPECS("y: T"),
             WEFT__SPECS(IDX("T")), 0, invert_permutation_shape),
    WEFT__OP("ParallelConcat", WEFT__SPECS("values: N * T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("N: int >= 1", "T: type", "shape: shape"), 0, parallel_concat_shape),
    WEFT__OP("DeepCopy", WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: type"), 1,
             weft__shape_fn_unchanged),
    WEFT__OP("Empty", WEFT__SPECS("shape: int32"), WEFT__SPECS("output: dtype"),
             WEFT__SPECS("dtype: type", "init: bool = false"), 1, empty_shape),
    WEFT__OP("BroadcastArgs", WEFT__SPECS("s0: T", "s1: T"), WEFT__SPECS("r0: T"),
             WEFT__SPECS(IDX("T")), 0, broadcast_args_shape),
    WEFT__OPS_END,
};
