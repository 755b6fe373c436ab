/* ops_scatter.c: the scatter, segment and partition ops with TensorFlow's args, attrs and type
 * constraints (tensorflow/core/ops/state_ops.cc, array_ops.cc, math_ops.cc, data_flow_ops.cc):
 * GatherNd and ScatterNd; ScatterNdUpdate, ScatterNdAdd, ScatterNdSub on reference variables and their
 * non-ref forms TensorScatterUpdate, TensorScatterAdd, TensorScatterSub; ScatterUpdate,
 * ScatterAdd, ScatterSub, ScatterMul, ScatterDiv, ScatterMin, ScatterMax on reference variables;
 * the sorted segment reductions (SegmentSum, SegmentMean, SegmentProd, SegmentMin, SegmentMax);
 * the unsorted ones (UnsortedSegmentSum, UnsortedSegmentProd, UnsortedSegmentMin,
 * UnsortedSegmentMax); the sparse ones (SparseSegmentSum, SparseSegmentMean, SparseSegmentSqrtN
 * and their WithNumSegments forms); and DynamicPartition. The kernels own the data-dependent
 * checks. */
#include "ops_shape.h"

/* ScatterNd: the output's shape is the value of input 2. */
static weft_status_t *scatter_nd_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t indices, updates, out;
  weft__sh_input(ctx, 0, &indices);
  weft__sh_input(ctx, 1, &updates);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &indices, 1, "indices"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &updates, 1, "updates"));
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 2, &out));
  return weft__sh_output(ctx, 0, &out);
}

/* GatherNd: indices.shape[:-1] + params.shape[indices.shape[-1]:]. */
static weft_status_t *gather_nd_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t params, indices;
  weft__sh_input(ctx, 0, &params);
  weft__sh_input(ctx, 1, &indices);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &indices, 1, "indices"));
  if (indices.rank < 0) return weft__sh_output(ctx, 0, &indices);
  int64_t depth = indices.dims[indices.rank - 1];
  if (depth < 0 || params.rank < 0) {
    weft__shape_t out = {.rank = -1};
    return weft__sh_output(ctx, 0, &out);
  }
  if (depth > params.rank) {
    char *a = weft__sh_str(&indices), *b = weft__sh_str(&params);
    weft_status_t *st = weft__sh_error(ctx, "indices.shape[-1] must be <= params.rank, but saw "
                                            "indices shape: %s and params shape: %s", a, b);
    g_free(a);
    g_free(b);
    return st;
  }
  weft__shape_t out = {.rank = indices.rank - 1 + params.rank - (int)depth};
  if (out.rank > WEFT_MAX_RANK)
    return weft__sh_error(ctx, "GatherNd's output would have %d dimensions, above %d", out.rank,
                          WEFT_MAX_RANK);
  for (int d = 0; d < indices.rank - 1; d++) out.dims[d] = indices.dims[d];
  for (int d = (int)depth; d < params.rank; d++)
    out.dims[indices.rank - 1 + d - (int)depth] = params.dims[d];
  return weft__sh_output(ctx, 0, &out);
}

/* The sorted segment reductions: [?] + data.shape[1:] (the row count is the last id + 1). */
static weft_status_t *segment_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t data, ids;
  weft__sh_input(ctx, 0, &data);
  weft__sh_input(ctx, 1, &ids);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &data, 1, "data"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ids, 1, "segment_ids"));
  if (data.rank >= 1 && ids.rank == 1 &&
      !weft__sh_merge_dim(data.dims[0], ids.dims[0], &ids.dims[0]))
    return weft__sh_error(ctx, "segment_ids should be the same size as dimension 0 of input.");
  weft__shape_t out = data;
  if (out.rank >= 1) out.dims[0] = WEFT_DIM_UNKNOWN;
  return weft__sh_output(ctx, 0, &out);
}

/* The unsorted segment reductions: [num_segments] + data.shape[rank(segment_ids):]. */
static weft_status_t *unsorted_segment_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t data, ids, num;
  weft__sh_input(ctx, 0, &data);
  weft__sh_input(ctx, 1, &ids);
  weft__sh_input(ctx, 2, &num);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &num, 0, "num_segments"));
  if (data.rank < 0 || ids.rank < 0) {
    weft__shape_t unknown = {.rank = -1};
    return weft__sh_output(ctx, 0, &unknown);
  }
  if (ids.rank > data.rank)
    return weft__sh_error(ctx, "segment_ids has rank %d, above the rank %d of data", ids.rank,
                          data.rank);
  for (int d = 0; d < ids.rank; d++) {
    if (!weft__sh_merge_dim(data.dims[d], ids.dims[d], &ids.dims[d])) {
      char *a = weft__sh_str(&data), *b = weft__sh_str(&ids);
      weft_status_t *s =
          weft__sh_error(ctx, "data.shape = %s does not start with segment_ids.shape = %s", a, b);
      g_free(a);
      g_free(b);
      return s;
    }
  }
  weft__shape_t out = {.rank = 1 + data.rank - ids.rank};
  out.dims[0] = WEFT_DIM_UNKNOWN;
  int64_t *vals = NULL, n = 0;
  if (weft__sh_const_ints(ctx, 2, &vals, &n, NULL)) {
    if (n == 1 && vals[0] >= 0) out.dims[0] = vals[0];
    g_free(vals);
  }
  for (int d = ids.rank; d < data.rank; d++) out.dims[1 + d - ids.rank] = data.dims[d];
  return weft__sh_output(ctx, 0, &out);
}

/* The sparse segment reductions (SparseSegmentReductionShapeFn and its WithNumSegments form):
 * indices and segment_ids are vectors of one length; the output is [rows] + data.shape[1:], rows
 * num_segments' value when it is a constant, else unknown (the last id + 1 is a run-time fact). */
static weft_status_t *sparse_segment_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t data, ind, ids;
  weft__sh_input(ctx, 0, &data);
  weft__sh_input(ctx, 1, &ind);
  weft__sh_input(ctx, 2, &ids);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &data, 1, "data"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 1, "indices"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ids, 1, "segment_ids"));
  if (ind.rank == 1 && ids.rank == 1 &&
      !weft__sh_merge_dim(ind.dims[0], ids.dims[0], &ids.dims[0]))
    return weft__sh_error(ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %"
                          G_GINT64_FORMAT " for indices and segment_ids", ind.dims[0],
                          ids.dims[0]);
  weft__shape_t out = data;
  if (out.rank < 0) return weft__sh_output(ctx, 0, &out);
  out.dims[0] = WEFT_DIM_UNKNOWN;
  if (weft__shape_num_inputs(ctx) > 3) {
    weft__shape_t num;
    weft__sh_input(ctx, 3, &num);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &num, 0, "num_segments"));
    int64_t *vals = NULL, n = 0;
    if (weft__sh_const_ints(ctx, 3, &vals, &n, NULL)) {
      if (n == 1 && vals[0] >= 0) out.dims[0] = vals[0];
      g_free(vals);
    }
  }
  return weft__sh_output(ctx, 0, &out);
}

/* DynamicPartition: each output is [?] + data.shape[rank(partitions):]. */
static weft_status_t *dynamic_partition_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t data, parts;
  weft__sh_input(ctx, 0, &data);
  weft__sh_input(ctx, 1, &parts);
  int64_t num = weft__sh_attr_int(ctx, "num_partitions", 1);
  weft__shape_t out = {.rank = -1};
  if (data.rank >= 0 && parts.rank >= 0) {
    if (parts.rank > data.rank)
      return weft__sh_error(ctx, "partitions has rank %d, above the rank %d of data", parts.rank,
                            data.rank);
    out.rank = 1 + data.rank - parts.rank;
    out.dims[0] = WEFT_DIM_UNKNOWN;
    for (int d = parts.rank; d < data.rank; d++) out.dims[1 + d - parts.rank] = data.dims[d];
  }
  for (int64_t i = 0; i < num; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, (int)i, &out));
  return NULL;
}

#define REF_SCATTER(name, types, lock)                                                      \
  WEFT__OP(name, WEFT__SPECS("ref: Ref(T)", "indices: Tindices", "updates: T"),             \
           WEFT__SPECS("output_ref: Ref(T)"),                                               \
           WEFT__SPECS("T: " types, "Tindices: {int32, int64}", "use_locking: bool = " lock), \
           1, weft__shape_fn_unchanged)
#define TENSOR_SCATTER(name)                                                                 \
  WEFT__OP(name, WEFT__SPECS("tensor: T", "indices: Tindices", "updates: T"),                \
           WEFT__SPECS("output: T"), WEFT__SPECS("T: type", "Tindices: {int16, int32, int64}"), \
           0, weft__shape_fn_unchanged)
#define SEGMENT(name, types)                                                                 \
  WEFT__OP(name, WEFT__SPECS("data: T", "segment_ids: Tindices"), WEFT__SPECS("output: T"), \
           WEFT__SPECS("T: " types, "Tindices: {int32, int64}"), 0, segment_shape)
#define UNSORTED_SEGMENT(name, types)                                                       \
  WEFT__OP(name, WEFT__SPECS("data: T", "segment_ids: Tindices", "num_segments: Tnumsegments"), \
           WEFT__SPECS("output: T"),                                                        \
           WEFT__SPECS("T: " types, "Tindices: {int32, int64}",                             \
                       "Tnumsegments: {int32, int64} = DT_INT32"),                          \
           0, unsorted_segment_shape)

/* Tsegmentids is TensorFlow 2's; its default keeps TensorFlow 1's int32 segment_ids. */
#define SPARSE_SEGMENT(name, types)                                                            \
  WEFT__OP(name, WEFT__SPECS("data: T", "indices: Tidx", "segment_ids: Tsegmentids"),          \
           WEFT__SPECS("output: T"),                                                          \
           WEFT__SPECS("T: " types, "Tidx: {int32, int64} = DT_INT32",                        \
                       "Tsegmentids: {int32, int64} = DT_INT32"),                             \
           0, sparse_segment_shape),                                                          \
  WEFT__OP(name "WithNumSegments",                                                            \
           WEFT__SPECS("data: T", "indices: Tidx", "segment_ids: Tsegmentids",                \
                       "num_segments: Tnumsegments"),                                         \
           WEFT__SPECS("output: T"),                                                          \
           WEFT__SPECS("T: " types, "Tidx: {int32, int64} = DT_INT32",                        \
                       "Tnumsegments: {int32, int64} = DT_INT32",                             \
                       "Tsegmentids: {int32, int64} = DT_INT32"),                             \
           0, sparse_segment_shape)

const weft_op_def_t weft__ops_scatter[] = {
    WEFT__OP("GatherNd", WEFT__SPECS("params: Tparams", "indices: Tindices"),
             WEFT__SPECS("output: Tparams"),
             WEFT__SPECS("Tparams: type", "Tindices: {int16, int32, int64}"), 0,
             gather_nd_shape),
    WEFT__OP("ScatterNd", WEFT__SPECS("indices: Tindices", "updates: T", "shape: Tindices"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: type", "Tindices: {int16, int32, int64}"),
             0, scatter_nd_shape),
    REF_SCATTER("ScatterNdUpdate", "type", "true"),
    REF_SCATTER("ScatterNdAdd", "numbertype", "false"),
    REF_SCATTER("ScatterNdSub", "numbertype", "false"),
    TENSOR_SCATTER("TensorScatterUpdate"),
    TENSOR_SCATTER("TensorScatterAdd"),
    TENSOR_SCATTER("TensorScatterSub"),
    REF_SCATTER("ScatterUpdate", "type", "true"),
    REF_SCATTER("ScatterAdd", "numbertype", "false"),
    REF_SCATTER("ScatterSub", "numbertype", "false"),
    REF_SCATTER("ScatterMul", "numbertype", "false"),
    REF_SCATTER("ScatterDiv", "numbertype", "false"),
    REF_SCATTER("ScatterMin", "{half, bfloat16, float, double, int32, int64}", "false"),
    REF_SCATTER("ScatterMax", "{half, bfloat16, float, double, int32, int64}", "false"),
    SEGMENT("SegmentSum", "numbertype"),
    SEGMENT("SegmentMean", "numbertype"),
    SEGMENT("SegmentProd", "numbertype"),
    SEGMENT("SegmentMin", "realnumbertype"),
    SEGMENT("SegmentMax", "realnumbertype"),
    UNSORTED_SEGMENT("UnsortedSegmentSum", "numbertype"),
    UNSORTED_SEGMENT("UnsortedSegmentProd", "numbertype"),
    UNSORTED_SEGMENT("UnsortedSegmentMin", "realnumbertype"),
    UNSORTED_SEGMENT("UnsortedSegmentMax", "realnumbertype"),
    SPARSE_SEGMENT("SparseSegmentSum", "realnumbertype"),
    SPARSE_SEGMENT("SparseSegmentMean", "{bfloat16, half, float, double}"),
    SPARSE_SEGMENT("SparseSegmentSqrtN", "{bfloat16, half, float, double}"),
    WEFT__OP("DynamicPartition", WEFT__SPECS("data: T", "partitions: int32"),
             WEFT__SPECS("outputs: num_partitions * T"),
             WEFT__SPECS("num_partitions: int >= 1", "T: type"), 0, dynamic_partition_shape),
    WEFT__OPS_END,
};
