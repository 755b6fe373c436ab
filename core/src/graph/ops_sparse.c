/* ops_sparse.c: the sparse ops of TensorFlow 1.x's wide/linear models (SparseTensorDenseMatMul,
 * SparseReorder, SparseAdd and its gradient SparseAddGrad, SparseReshape, SparseConcat,
 * SparseSlice and its gradient SparseSliceGrad) with TensorFlow's names, args, attrs and shape functions
 * (tensorflow/core/ops/sparse_ops.cc). A sparse tensor is the usual triple of int64 indices
 * [nnz, rank], values [nnz] and dense shape [rank]. */
#include "ops_shape.h"

/* SparseTensorDenseMatMul: a_shape must be a 2-vector and b a matrix; product
 * [a_shape[adjoint_a ? 1 : 0], b[adjoint_b ? 0 : 1]], the inner dimensions merged (TensorFlow's
 * shape function). */
static weft_status_t *sparse_dense_matmul_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t ind, val, ashape, b;
  weft__sh_input(ctx, 0, &ind);
  weft__sh_input(ctx, 1, &val);
  weft__sh_input(ctx, 3, &b);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 2, "a_indices"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &val, 1, "a_values"));
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 2, &ashape));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ashape, 2, "a_shape"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &b, 2, "b"));
  bool adj_a = weft__sh_attr_bool(ctx, "adjoint_a", false);
  bool adj_b = weft__sh_attr_bool(ctx, "adjoint_b", false);
  int64_t left = WEFT_DIM_UNKNOWN, right = WEFT_DIM_UNKNOWN;
  int64_t inner_a = WEFT_DIM_UNKNOWN, inner_b = WEFT_DIM_UNKNOWN, merged;
  if (ashape.rank == 2) {
    left = ashape.dims[adj_a ? 1 : 0];
    inner_a = ashape.dims[adj_a ? 0 : 1];
  }
  if (b.rank == 2) {
    right = b.dims[adj_b ? 0 : 1];
    inner_b = b.dims[adj_b ? 1 : 0];
  }
  if (!weft__sh_merge_dim(inner_a, inner_b, &merged))
    return weft__sh_error(ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %"
                          G_GINT64_FORMAT, inner_a, inner_b);
  weft__shape_t out = {.rank = 2, .dims = {left, right}};
  return weft__sh_output(ctx, 0, &out);
}

/* SparseReorder: indices [nnz, rank] and values [nnz] keep their shapes; shape is a vector. */
static weft_status_t *sparse_reorder_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t ind, val, shp;
  weft__sh_input(ctx, 0, &ind);
  weft__sh_input(ctx, 1, &val);
  weft__sh_input(ctx, 2, &shp);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 2, "input_indices"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &val, 1, "input_values"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &shp, 1, "input_shape"));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &ind));
  return weft__sh_output(ctx, 1, &val);
}

/* SparseAdd: sum_indices [?, rank], sum_values [?], sum_shape = a_shape (a vector). */
static weft_status_t *sparse_add_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t a_shape;
  weft__sh_input(ctx, 2, &a_shape);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &a_shape, 1, "a_shape"));
  weft__shape_t ind = {.rank = 2, .dims = {WEFT_DIM_UNKNOWN, a_shape.dims[0]}};
  weft__shape_t val = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &val));
  return weft__sh_output(ctx, 2, &a_shape);
}

/* SparseAddGrad: one gradient per entry of a and of b: [a_nnz] and [b_nnz]. */
static weft_status_t *sparse_add_grad_shape(weft_shape_ctx_t *ctx) {
  for (int k = 0; k < 2; k++) {
    weft__shape_t ind;
    weft__sh_input(ctx, 1 + k, &ind);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 2, k ? "b_indices" : "a_indices"));
    weft__shape_t out = {.rank = 1, .dims = {ind.rank == 2 ? ind.dims[0] : WEFT_DIM_UNKNOWN}};
    WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, k, &out));
  }
  return NULL;
}

/* SparseReshape: output_indices [nnz, len(new_shape)], output_shape like new_shape. */
static weft_status_t *sparse_reshape_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t ind, in_shape, new_shape;
  weft__sh_input(ctx, 0, &ind);
  weft__sh_input(ctx, 1, &in_shape);
  weft__sh_input(ctx, 2, &new_shape);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 2, "input_indices"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in_shape, 1, "input_shape"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &new_shape, 1, "new_shape"));
  weft__shape_t out = {.rank = 2,
                       .dims = {ind.rank == 2 ? ind.dims[0] : WEFT_DIM_UNKNOWN,
                                new_shape.rank == 1 ? new_shape.dims[0] : WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &out));
  return weft__sh_output(ctx, 1, &new_shape);
}

/* SparseConcat: N indices [?, rank], N values [?], N shapes [rank]: output indices [?, rank],
 * values [?], shape [rank] (the shapes' lengths merged). */
static weft_status_t *sparse_concat_shape(weft_shape_ctx_t *ctx) {
  const int64_t n = weft__sh_attr_int(ctx, "N", 0);
  int64_t rank = WEFT_DIM_UNKNOWN;
  for (int64_t i = 0; i < n; i++) {
    weft__shape_t ind, val, shp;
    weft__sh_input(ctx, (int)i, &ind);
    weft__sh_input(ctx, (int)(n + i), &val);
    weft__sh_input(ctx, (int)(2 * n + i), &shp);
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 2, "indices"));
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &val, 1, "values"));
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &shp, 1, "shapes"));
    int64_t merged;
    if (ind.rank == 2) {
      if (!weft__sh_merge_dim(rank, ind.dims[1], &merged))
        return weft__sh_error(ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %"
                              G_GINT64_FORMAT, rank, ind.dims[1]);
      rank = merged;
    }
    if (shp.rank == 1) {
      if (!weft__sh_merge_dim(rank, shp.dims[0], &merged))
        return weft__sh_error(ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %"
                              G_GINT64_FORMAT, rank, shp.dims[0]);
      rank = merged;
    }
  }
  weft__shape_t oi = {.rank = 2, .dims = {WEFT_DIM_UNKNOWN, rank}};
  weft__shape_t ov = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}}, os = {.rank = 1, .dims = {rank}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &oi));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &ov));
  return weft__sh_output(ctx, 2, &os);
}

/* SparseSlice: output_indices [?, len(shape)], output_values [?], output_shape like shape. */
static weft_status_t *sparse_slice_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t shp;
  weft__sh_input(ctx, 2, &shp);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &shp, 1, "shape"));
  weft__shape_t oi = {.rank = 2, .dims = {WEFT_DIM_UNKNOWN, shp.dims[0]}};
  weft__shape_t ov = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &oi));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &ov));
  return weft__sh_output(ctx, 2, &shp);
}

/* SparseSliceGrad: one gradient per input entry, [nnz of input_indices]. */
static weft_status_t *sparse_slice_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t ind;
  weft__sh_input(ctx, 1, &ind);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 2, "input_indices"));
  weft__shape_t out = {.rank = 1, .dims = {ind.rank == 2 ? ind.dims[0] : WEFT_DIM_UNKNOWN}};
  return weft__sh_output(ctx, 0, &out);
}

const weft_op_def_t weft__ops_sparse[] = {
    WEFT__OP("SparseTensorDenseMatMul",
             WEFT__SPECS("a_indices: Tindices", "a_values: T", "a_shape: int64", "b: T"),
             WEFT__SPECS("product: T"),
             WEFT__SPECS("T: type", "Tindices: {int32, int64} = DT_INT64",
                         "adjoint_a: bool = false", "adjoint_b: bool = false"),
             0, sparse_dense_matmul_shape),
    WEFT__OP("SparseReorder",
             WEFT__SPECS("input_indices: int64", "input_values: T", "input_shape: int64"),
             WEFT__SPECS("output_indices: int64", "output_values: T"), WEFT__SPECS("T: type"), 0,
             sparse_reorder_shape),
    WEFT__OP("SparseAdd",
             WEFT__SPECS("a_indices: int64", "a_values: T", "a_shape: int64", "b_indices: int64",
                         "b_values: T", "b_shape: int64", "thresh: Treal"),
             WEFT__SPECS("sum_indices: int64", "sum_values: T", "sum_shape: int64"),
             WEFT__SPECS("T: numbertype", "Treal: realnumbertype"), 0, sparse_add_shape),
    WEFT__OP("SparseAddGrad",
             WEFT__SPECS("backprop_val_grad: T", "a_indices: int64", "b_indices: int64",
                         "sum_indices: int64"),
             WEFT__SPECS("a_val_grad: T", "b_val_grad: T"), WEFT__SPECS("T: numbertype"), 0,
             sparse_add_grad_shape),
    WEFT__OP("SparseReshape",
             WEFT__SPECS("input_indices: int64", "input_shape: int64", "new_shape: int64"),
             WEFT__SPECS("output_indices: int64", "output_shape: int64"), WEFT__NO_SPECS, 0,
             sparse_reshape_shape),
    WEFT__OP("SparseConcat",
             WEFT__SPECS("indices: N * int64", "values: N * T", "shapes: N * int64"),
             WEFT__SPECS("output_indices: int64", "output_values: T", "output_shape: int64"),
             WEFT__SPECS("concat_dim: int", "N: int >= 2", "T: type"), 0, sparse_concat_shape),
    WEFT__OP("SparseSlice",
             WEFT__SPECS("indices: int64", "values: T", "shape: int64", "start: int64",
                         "size: int64"),
             WEFT__SPECS("output_indices: int64", "output_values: T", "output_shape: int64"),
             WEFT__SPECS("T: type"), 0, sparse_slice_shape),
    WEFT__OP("SparseSliceGrad",
             WEFT__SPECS("backprop_val_grad: T", "input_indices: int64", "input_start: int64",
                         "output_indices: int64"),
             WEFT__SPECS("val_grad: T"), WEFT__SPECS("T: numbertype"), 0,
             sparse_slice_grad_shape),
    WEFT__OPS_END,
};
