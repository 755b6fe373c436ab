/* cases_sparse.c: conformance cases of SparseTensorDenseMatMul (every adjoint pair, int32 and
 * int64 indices, repeated and unsorted entries, no entries, empty products, each of TensorFlow's
 * validation errors), SparseReorder (shuffled entries of ranks 1..3, already sorted, empty,
 * the errors), SparseAdd (overlapping and disjoint entries, the threshold, ranks 1..3, empty
 * operands, the errors), SparseAddGrad and SparseReshape (with and without -1, to and from rank
 * 1, no entries, each of TensorFlow's errors) and SparseConcat (each dim, a negative concat_dim,
 * three inputs, unsorted inputs, an empty input, the errors), SparseSlice (inside, clipped at
 * the end, past the end, empty, rank 3, the errors) and SparseSliceGrad. The references are computed here: the sparse matrix
 * densified and multiplied the schoolbook way, the reorder as an insertion sort of the entries,
 * and the sums by visiting every dense position in row-major order. */
#include <math.h>
#include <string.h>

#include "reference.h"

static void error_case(cf_run_ctx_t *ctx, cf_case_t *c, int n_outputs, const char *msg,
                       bool unknown) {
  for (int i = 0; i < c->n_inputs; i++) c->unknown_shape[i] = unknown;
  for (int i = c->n_outputs; i < n_outputs; i++) cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * SparseTensorDenseMatMul */

/* op(A) op(B) with A = the sum of its entries (repeats add up), in double. */
static cf_array_t *ref_sdmm(weft_dtype_t dt, int64_t nnz, const int64_t *idx, const double *val,
                            int64_t a0, int64_t a1, const cf_array_t *b, bool adj_a, bool adj_b) {
  int64_t rows = adj_a ? a1 : a0, inner = adj_a ? a0 : a1;
  int64_t cols = adj_b ? b->dims[0] : b->dims[1], bc = b->dims[1];
  cf_array_t *y = cf_array_new(dt, 2, (const int64_t[]){rows, cols});
  double *dense = g_new0(double, (gsize)(a0 * a1 > 0 ? a0 * a1 : 1));
  for (int64_t z = 0; z < nnz; z++) dense[idx[2 * z] * a1 + idx[2 * z + 1]] += val[z];
  for (int64_t m = 0; m < rows; m++)
    for (int64_t n = 0; n < cols; n++) {
      double s = 0;
      for (int64_t k = 0; k < inner; k++) {
        double a = adj_a ? dense[k * a1 + m] : dense[m * a1 + k];
        s += a * (adj_b ? b->v[n * bc + k] : b->v[k * bc + n]);
      }
      y->v[m * cols + n] = s;
    }
  g_free(dense);
  return y;
}

static void sdmm_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                      weft_dtype_t it, int64_t nnz, const int64_t *idx, int64_t a0, int64_t a1,
                      int64_t b0, int64_t b1, bool adj_a, bool adj_b, const char *err) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *ind = cf_array_new(it, 2, (const int64_t[]){nnz, 2});
  for (int64_t i = 0; i < nnz * 2; i++) ind->v[i] = (double)idx[i];
  cf_array_t *val = cf_gen_uniform(&rng, dt, 1, &nnz, -4, 4);
  cf_array_t *b = cf_gen_uniform(&rng, dt, 2, (const int64_t[]){b0, b1}, -4, 4);
  cf_case_attr_bool(c, "adjoint_a", adj_a);
  cf_case_attr_bool(c, "adjoint_b", adj_b);
  if (!err) cf_case_expect(c, ref_sdmm(dt, nnz, idx, val->v, a0, a1, b, adj_a, adj_b));
  cf_case_input(c, ind);
  cf_case_input(c, val);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){a0, a1}));
  cf_case_input(c, b);
  if (err) error_case(ctx, c, 1, err, true);
  else cf_run_case(ctx, c);
}

static void emit_sdmm(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  /* A is 3x4 with a repeated entry (1,2) and the entries out of row-major order. */
  const int64_t idx[] = {0, 1, 2, 3, 1, 2, 0, 0, 1, 2, 2, 0};
  static const char *const names[4] = {"plain", "adjoint_b", "adjoint_a", "adjoint_both"};
  for (int v = 0; v < 4; v++) {
    bool aa = v >= 2, ab = v % 2;
    /* op(A) is 3x4 (4x3 adjoined); op(B) is inner x 5. */
    int64_t inner = aa ? 3 : 4;
    sdmm_case(ctx, op, dt, names[v], WEFT_DT_INT64, 6, idx, 3, 4, ab ? 5 : inner,
              ab ? inner : 5, aa, ab, NULL);
  }
  sdmm_case(ctx, op, dt, "int32_indices", WEFT_DT_INT32, 6, idx, 3, 4, 4, 2, false, false, NULL);
  /* 40 columns: TensorFlow's vectorized path; the result is the same. */
  sdmm_case(ctx, op, dt, "wide_b", WEFT_DT_INT64, 6, idx, 3, 4, 4, 40, false, false, NULL);
  sdmm_case(ctx, op, dt, "no_entries", WEFT_DT_INT64, 0, NULL, 3, 4, 4, 2, false, false, NULL);
  sdmm_case(ctx, op, dt, "empty_output", WEFT_DT_INT64, 0, NULL, 0, 4, 4, 2, false, false, NULL);
  sdmm_case(ctx, op, dt, "empty_inner", WEFT_DT_INT64, 0, NULL, 3, 0, 0, 2, false, false, NULL);
  /* Indices out of bounds are not looked at when the output is empty (TensorFlow returns
   * first), and are otherwise errors naming k before m. */
  sdmm_case(ctx, op, dt, "error_k_out_of_bounds", WEFT_DT_INT64, 2,
            (const int64_t[]){0, 0, 1, 3}, 2, 3, 3, 2, false, false,
            "k (3) from index[1,1] out of bounds (>=3)");
  sdmm_case(ctx, op, dt, "error_m_out_of_bounds", WEFT_DT_INT64, 1, (const int64_t[]){5, 0}, 2,
            3, 3, 2, false, false, "m (5) from index[0,0] out of bounds (>=2)");
  sdmm_case(ctx, op, dt, "error_negative_k_adjoint", WEFT_DT_INT32, 1, (const int64_t[]){-1, 0},
            2, 3, 2, 2, true, false, "k (-1) from index[0,0] out of bounds (>=2)");
  sdmm_case(ctx, op, dt, "error_inner_dimension", WEFT_DT_INT64, 0, NULL, 2, 3, 2, 2, false,
            false, "Cannot multiply A and B because inner dimension does not match: 3 vs. 2.  "
            "Did you forget a transpose?  Dimensions of A: [2, 3).  Dimensions of B: [2,2]");
  static const struct {
    const char *name;
    int irank, vrank, srank, brank;
    int64_t idims[2], vdim, sdim;
    const char *error;
  } bad[] = {
      {"error_b_not_matrix", 2, 1, 1, 1, {1, 2}, 1, 2, "Tensor 'b' is not a matrix"},
      {"error_shape_not_vector", 2, 1, 2, 2, {1, 2}, 1, 2, "Tensor 'a_shape' is not a vector"},
      {"error_shape_3_elements", 2, 1, 1, 2, {1, 2}, 1, 3,
       "Tensor 'a_shape' must have 2 elements"},
      {"error_values_not_vector", 2, 2, 1, 2, {1, 2}, 1, 2, "Tensor 'a_values' is not a vector"},
      {"error_indices_not_matrix", 1, 1, 1, 2, {2, 0}, 2, 2,
       "Tensor 'a_indices' is not a matrix"},
      {"error_nnz_mismatch", 2, 1, 1, 2, {2, 2}, 3, 2,
       "Number of rows of a_indices does not match number of entries in a_values"},
      {"error_indices_columns", 2, 1, 1, 2, {1, 3}, 1, 2,
       "Number of columns of a_indices does not match number of entries in a_shape"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    cf_case_t *c = cf_case_new(op, bad[i].name, dt);
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, bad[i].irank, bad[i].idims));
    cf_case_input(c, cf_array_new(dt, bad[i].vrank, (const int64_t[]){bad[i].vdim, 1}));
    cf_array_t *shp = cf_array_new(WEFT_DT_INT64, bad[i].srank,
                                   (const int64_t[]){bad[i].sdim, 1});
    for (int64_t k = 0; k < shp->n; k++) shp->v[k] = 2;
    cf_case_input(c, shp);
    cf_case_input(c, cf_array_new(dt, bad[i].brank, (const int64_t[]){2, 2}));
    error_case(ctx, c, 1, bad[i].error, true);
  }
}

/* ---------------------------------------------------------------------------------------------
 * SparseReorder */

static int cmp_row(const double *a, const double *b, int64_t rank) {
  for (int64_t d = 0; d < rank; d++)
    if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
  return 0;
}

static void reorder_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                         int64_t nnz, int64_t rank, const int64_t *idx, const int64_t *shape) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){nnz, rank});
  for (int64_t i = 0; i < nnz * rank; i++) ind->v[i] = (double)idx[i];
  cf_array_t *val = cf_gen_uniform(&rng, dt, 1, &nnz, 0, 100);
  /* Insertion sort of the entries (stable, as the kernel's). */
  cf_array_t *oi = cf_array_new(WEFT_DT_INT64, 2, ind->dims), *ov = cf_array_new(dt, 1, &nnz);
  for (int64_t i = 0; i < nnz; i++) {
    int64_t j = i;
    while (j > 0 && cmp_row(oi->v + (j - 1) * rank, ind->v + i * rank, rank) > 0) {
      memcpy(oi->v + j * rank, oi->v + (j - 1) * rank, sizeof(double) * (size_t)rank);
      ov->v[j] = ov->v[j - 1];
      j--;
    }
    memcpy(oi->v + j * rank, ind->v + i * rank, sizeof(double) * (size_t)rank);
    ov->v[j] = val->v[i];
  }
  cf_case_expect(c, oi);
  cf_case_expect(c, ov);
  cf_case_input(c, ind);
  cf_case_input(c, val);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, rank, shape));
  cf_run_case(ctx, c);
}

static void emit_reorder(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  reorder_case(ctx, op, dt, "rank1", 4, 1, (const int64_t[]){3, 0, 7, 2},
               (const int64_t[]){8});
  reorder_case(ctx, op, dt, "rank2", 5, 2, (const int64_t[]){2, 1, 0, 3, 1, 0, 0, 1, 2, 0},
               (const int64_t[]){3, 4});
  reorder_case(ctx, op, dt, "rank3", 4, 3,
               (const int64_t[]){1, 0, 1, 0, 2, 0, 1, 0, 0, 0, 0, 1}, (const int64_t[]){2, 3, 2});
  reorder_case(ctx, op, dt, "sorted", 3, 2, (const int64_t[]){0, 0, 0, 2, 1, 1},
               (const int64_t[]){2, 3});
  reorder_case(ctx, op, dt, "empty", 0, 2, NULL, (const int64_t[]){2, 3});
  static const struct {
    const char *name;
    int irank, vrank, srank;
    int64_t idims[2], vdim, sdim;
    const char *error;
  } bad[] = {
      {"error_indices_not_matrix", 1, 1, 1, {2, 0}, 2, 1,
       "Input indices should be a matrix but received shape [2]"},
      {"error_values_not_vector", 2, 2, 1, {2, 2}, 2, 2,
       "Input values should be a vector but received shape [2,1]"},
      {"error_shape_not_vector", 2, 1, 0, {2, 2}, 2, 2,
       "Input shape should be a vector but received shape []"},
      {"error_nnz_mismatch", 2, 1, 1, {2, 2}, 3, 2,
       "indices and values rows (indexing dimension) must match. (indices = 2, values = 3)"},
      {"error_rank_mismatch", 2, 1, 1, {2, 2}, 2, 3, "Shape rank must be SparseTensor rank."},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    cf_case_t *c = cf_case_new(op, bad[i].name, dt);
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, bad[i].irank, bad[i].idims));
    cf_case_input(c, cf_array_new(dt, bad[i].vrank, (const int64_t[]){bad[i].vdim, 1}));
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, bad[i].srank, &bad[i].sdim));
    error_case(ctx, c, 2, bad[i].error, true);
  }
}

/* ---------------------------------------------------------------------------------------------
 * SparseAdd and SparseAddGrad */

/* The dense positions of a sparse operand: present[p] and value[p], for p row-major. */
static void densify(const int64_t *idx, const double *val, int64_t nnz, int rank,
                    const int64_t *shape, bool *present, double *value) {
  for (int64_t z = 0; z < nnz; z++) {
    int64_t p = 0;
    for (int d = 0; d < rank; d++) p = p * shape[d] + idx[z * rank + d];
    present[p] = true;
    value[p] = val[z];
  }
}

static int64_t positions(int rank, const int64_t *shape) {
  int64_t total = 1;
  for (int d = 0; d < rank; d++) total *= shape[d];
  return total;
}

/* Row p's index into out (rank ints). */
static void unravel(int64_t p, int rank, const int64_t *shape, double *out) {
  for (int d = rank - 1; d >= 0; d--) {
    out[d] = (double)(p % shape[d]);
    p /= shape[d];
  }
}

static void sparse_add_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                            int rank, const int64_t *shape, int64_t an, const int64_t *aidx,
                            int64_t bn, const int64_t *bidx, double thresh) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *av = cf_gen_uniform(&rng, dt, 1, &an, -8, 8);
  cf_array_t *bv = cf_gen_uniform(&rng, dt, 1, &bn, -8, 8);
  /* A pair that cancels (a's first entry repeated in b, negated) when both have entries. */
  if (an > 0 && bn > 0 && memcmp(aidx, bidx, sizeof(int64_t) * (size_t)rank) == 0)
    bv->v[0] = -av->v[0];
  int64_t total = positions(rank, shape);
  bool *pa = g_new0(bool, (gsize)total + 1), *pb = g_new0(bool, (gsize)total + 1);
  double *va = g_new0(double, (gsize)total + 1), *vb = g_new0(double, (gsize)total + 1);
  densify(aidx, av->v, an, rank, shape, pa, va);
  densify(bidx, bv->v, bn, rank, shape, pb, vb);
  int64_t n = 0;
  for (int64_t p = 0; p < total; p++)
    n += (pa[p] || pb[p]) && !(pa[p] && pb[p] && fabs(va[p] + vb[p]) < thresh);
  cf_array_t *oi = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){n, rank});
  cf_array_t *ov = cf_array_new(dt, 1, &n);
  int64_t k = 0;
  for (int64_t p = 0; p < total; p++) {
    if (!(pa[p] || pb[p]) || (pa[p] && pb[p] && fabs(va[p] + vb[p]) < thresh)) continue;
    unravel(p, rank, shape, oi->v + k * rank);
    ov->v[k++] = va[p] + vb[p];
  }
  g_free(pa);
  g_free(pb);
  g_free(va);
  g_free(vb);
  cf_array_t *ai = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){an, rank});
  cf_array_t *bi = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){bn, rank});
  for (int64_t i = 0; i < an * rank; i++) ai->v[i] = (double)aidx[i];
  for (int64_t i = 0; i < bn * rank; i++) bi->v[i] = (double)bidx[i];
  cf_case_expect(c, oi);
  cf_case_expect(c, ov);
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, rank, shape));
  cf_case_input(c, ai);
  cf_case_input(c, av);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, rank, shape));
  cf_case_input(c, bi);
  cf_case_input(c, bv);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, rank, shape));
  cf_case_input(c, cf_array_scalar(dt, thresh));
  cf_run_case(ctx, c);
}

static void emit_sparse_add(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int64_t s2[] = {3, 4}, s1[] = {6}, s3[] = {2, 2, 3};
  const int64_t a2[] = {0, 1, 1, 0, 1, 3, 2, 2}, b2[] = {0, 1, 0, 2, 1, 3, 2, 0, 2, 3};
  sparse_add_case(ctx, op, dt, "overlap", 2, s2, 4, a2, 5, b2, 0);
  /* Sums below 3 are dropped (the cancelling pair at (0,1) among them); single entries stay
   * whatever their magnitude. */
  sparse_add_case(ctx, op, dt, "threshold", 2, s2, 4, a2, 5, b2, 3);
  sparse_add_case(ctx, op, dt, "rank1_disjoint", 1, s1, 2, (const int64_t[]){1, 4}, 2,
                  (const int64_t[]){0, 5}, 0);
  sparse_add_case(ctx, op, dt, "rank3", 3, s3, 2, (const int64_t[]){0, 1, 2, 1, 0, 0}, 2,
                  (const int64_t[]){0, 1, 2, 1, 1, 1}, 0);
  sparse_add_case(ctx, op, dt, "a_empty", 2, s2, 0, NULL, 5, b2, 0);
  sparse_add_case(ctx, op, dt, "both_empty", 2, s2, 0, NULL, 0, NULL, 0);
  static const struct {
    const char *name;
    int64_t an, arank, bn, brank, avn, bvn, ashape, bshape, b1;
    int trank;
    const char *error;
  } bad[] = {
      {"error_indices_rank", 2, 2, 1, 3, 2, 1, 2, 2, 5, 0,
       "Input indices must have the same dimension, got 2 and 3"},
      {"error_values_length", 2, 2, 1, 2, 3, 1, 2, 2, 5, 0,
       "Expected 2 and 1 non-empty input values, got 3 and 1"},
      {"error_shape_length", 2, 2, 1, 2, 2, 1, 3, 3, 5, 0,
       "Second dimension of a_indices and length of a_shape must match, got 2 and 3"},
      {"error_shapes_ranks", 2, 2, 1, 2, 2, 1, 2, 3, 5, 0,
       "Operands do not have the same ranks; got shapes: 5 5 and 5 5 5"},
      {"error_shapes_differ", 2, 2, 1, 2, 2, 1, 2, 2, 6, 0,
       "Operands' shapes do not match: got 5 and 6 for dimension 1"},
      {"error_thresh_not_scalar", 2, 2, 1, 2, 2, 1, 2, 2, 5, 1,
       "The magnitude threshold must be a scalar: got shape [1]"},
      {"error_empty_rank", 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, "Tesors must not be empty"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    cf_case_t *c = cf_case_new(op, bad[i].name, dt);
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){bad[i].an, bad[i].arank}));
    cf_case_input(c, cf_array_new(dt, 1, &bad[i].avn));
    cf_array_t *as = cf_array_new(WEFT_DT_INT64, 1, &bad[i].ashape);
    for (int64_t k = 0; k < as->n; k++) as->v[k] = 5;
    cf_case_input(c, as);
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){bad[i].bn, bad[i].brank}));
    cf_case_input(c, cf_array_new(dt, 1, &bad[i].bvn));
    cf_array_t *bs = cf_array_new(WEFT_DT_INT64, 1, &bad[i].bshape);
    for (int64_t k = 0; k < bs->n; k++) bs->v[k] = k == 1 ? (double)bad[i].b1 : 5;
    cf_case_input(c, bs);
    cf_case_input(c, cf_array_new(dt, bad[i].trank, (const int64_t[]){1}));
    error_case(ctx, c, 3, bad[i].error, true);
  }
}

static void emit_sparse_add_grad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  /* a = {(0,1), (1,0), (1,3), (2,2)}, b = {(0,1), (0,2), (1,3), (2,0), (2,3)}; the sum lost
   * (0,1) to the threshold. */
  const int64_t a[] = {0, 1, 1, 0, 1, 3, 2, 2}, b[] = {0, 1, 0, 2, 1, 3, 2, 0, 2, 3};
  const int64_t sum[] = {0, 2, 1, 0, 1, 3, 2, 0, 2, 2, 2, 3};
  cf_case_t *c = cf_case_new(op, "thresholded", dt);
  cf_array_t *g = cf_array_new(dt, 1, (const int64_t[]){6});
  for (int k = 0; k < 6; k++) g->v[k] = k + 1;
  cf_array_t *ai = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){4, 2});
  cf_array_t *bi = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){5, 2});
  cf_array_t *si = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){6, 2});
  for (int k = 0; k < 8; k++) ai->v[k] = (double)a[k];
  for (int k = 0; k < 10; k++) bi->v[k] = (double)b[k];
  for (int k = 0; k < 12; k++) si->v[k] = (double)sum[k];
  /* sum rows: (0,2)=1 (1,0)=2 (1,3)=3 (2,0)=4 (2,2)=5 (2,3)=6 */
  cf_array_t *ga = cf_array_new(dt, 1, (const int64_t[]){4});
  cf_array_t *gb = cf_array_new(dt, 1, (const int64_t[]){5});
  const double want_a[] = {0, 2, 3, 5}, want_b[] = {0, 1, 3, 4, 6};
  memcpy(ga->v, want_a, sizeof want_a);
  memcpy(gb->v, want_b, sizeof want_b);
  cf_case_expect(c, ga);
  cf_case_expect(c, gb);
  cf_case_input(c, g);
  cf_case_input(c, ai);
  cf_case_input(c, bi);
  cf_case_input(c, si);
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_grad_length", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){2}));
  for (int k = 0; k < 3; k++)
    cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){3, 2}));
  error_case(ctx, c, 2, "# elements of backprop_val_grad and # rows of sum_indices should match "
             "(#nnz of sum): got 2 and 3", true);
}

/* ---------------------------------------------------------------------------------------------
 * SparseReshape: the reference numbers the dense positions of the input shape with a row-major
 * counter and reads each entry's position off the counter of the output shape. */

static void sparse_reshape_case(cf_run_ctx_t *ctx, const char *op, const char *name, int64_t nnz,
                                int in_rank, const int64_t *in_shape, const int64_t *idx,
                                int out_rank, const int64_t *new_shape, const int64_t *want_shape,
                                const char *err) {
  cf_case_t *c = cf_case_new(op, name, WEFT_DT_INT64);
  cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){nnz, in_rank});
  for (int64_t i = 0; i < nnz * in_rank; i++) ind->v[i] = (double)idx[i];
  if (!err) {
    cf_array_t *oi = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){nnz, out_rank});
    for (int64_t z = 0; z < nnz; z++) {
      /* Count positions up to the entry's index in the input shape, advancing an output-shape
       * odometer alongside. */
      int64_t in_c[WEFT_MAX_RANK] = {0}, out_c[WEFT_MAX_RANK] = {0};
      for (;;) {
        bool at = true;
        for (int d = 0; d < in_rank; d++) at = at && in_c[d] == idx[z * in_rank + d];
        if (at) break;
        for (int d = in_rank - 1; d >= 0 && ++in_c[d] == in_shape[d]; d--) in_c[d] = 0;
        for (int d = out_rank - 1; d >= 0 && ++out_c[d] == want_shape[d]; d--) out_c[d] = 0;
      }
      for (int d = 0; d < out_rank; d++) oi->v[z * out_rank + d] = (double)out_c[d];
    }
    cf_case_expect(c, oi);
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, out_rank, want_shape));
  }
  cf_case_input(c, ind);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, in_rank, in_shape));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, out_rank, new_shape));
  if (err) error_case(ctx, c, 2, err, true);
  else cf_run_case(ctx, c);
}

static void emit_sparse_reshape(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  const int64_t s234[] = {2, 3, 4}, idx3[] = {0, 0, 0, 1, 2, 3, 0, 1, 2, 1, 0, 1};
  sparse_reshape_case(ctx, op, "3d_to_2d", 4, 3, s234, idx3, 2, (const int64_t[]){6, 4},
                      (const int64_t[]){6, 4}, NULL);
  sparse_reshape_case(ctx, op, "infer_dim", 4, 3, s234, idx3, 3, (const int64_t[]){4, -1, 2},
                      (const int64_t[]){4, 3, 2}, NULL);
  sparse_reshape_case(ctx, op, "to_rank1", 4, 3, s234, idx3, 1, (const int64_t[]){-1},
                      (const int64_t[]){24}, NULL);
  sparse_reshape_case(ctx, op, "from_rank1", 3, 1, (const int64_t[]){12},
                      (const int64_t[]){11, 0, 5}, 2, (const int64_t[]){3, 4},
                      (const int64_t[]){3, 4}, NULL);
  sparse_reshape_case(ctx, op, "same_shape", 4, 3, s234, idx3, 3, s234, s234, NULL);
  sparse_reshape_case(ctx, op, "no_entries", 0, 3, s234, NULL, 2, (const int64_t[]){-1, 8},
                      (const int64_t[]){3, 8}, NULL);
  sparse_reshape_case(ctx, op, "error_two_unknown", 1, 3, s234, idx3, 3,
                      (const int64_t[]){-1, 2, -1}, NULL,
                      "only one output dimension may be -1, not both 0 and 2");
  sparse_reshape_case(ctx, op, "error_negative_size", 1, 3, s234, idx3, 2,
                      (const int64_t[]){-2, 12}, NULL, "size 0 must be non-negative, not -2");
  sparse_reshape_case(ctx, op, "error_count", 1, 3, s234, idx3, 2, (const int64_t[]){5, 5}, NULL,
                      "Input to reshape is a tensor with 24 dense values, but the requested "
                      "shape has 25. input_shape=[2,3,4] output_shape=[5,5]");
  sparse_reshape_case(ctx, op, "error_not_multiple", 1, 3, s234, idx3, 2,
                      (const int64_t[]){5, -1}, NULL,
                      "Input to reshape is a SparseTensor with 24 dense values, but the "
                      "requested shape requires a multiple of 5. input_shape=[2,3,4] "
                      "output_shape=[5,1]");
  sparse_reshape_case(ctx, op, "error_infer_empty", 0, 2, (const int64_t[]){0, 3}, NULL, 2,
                      (const int64_t[]){0, -1}, NULL,
                      "reshape cannot infer the missing input size for an empty tensor unless "
                      "all specified input sizes are non-zero");
  cf_case_t *c = cf_case_new(op, "error_indices_columns", WEFT_DT_INT64);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){1, 2}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, s234));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){6, 4}));
  error_case(ctx, c, 2, "Input tensor rank must match input shape length, got 2 and 3", true);
  c = cf_case_new(op, "error_target_not_vector", WEFT_DT_INT64);
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){1, 3}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 3, s234));
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){1, 2}));
  error_case(ctx, c, 2, "Target shape should be a vector but received shape [1,2]", true);
}

/* ---------------------------------------------------------------------------------------------
 * SparseConcat: the reference places every input's entries in one dense grid of the output's
 * shape and reads them back in row-major order. Inputs are 2-D or 3-D, entries distinct. */

typedef struct {
  int64_t nnz;
  int64_t shape[3];
  const int64_t *idx;
} sc_input_t;

static void sparse_concat_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                               const char *name, int n, int rank, const sc_input_t *ins,
                               int64_t concat_dim, const char *err) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  int64_t cd = concat_dim < 0 ? concat_dim + rank : concat_dim;
  int64_t out_shape[3] = {0};
  for (int d = 0; d < rank; d++) out_shape[d] = ins[0].shape[d];
  if (!err) {
    out_shape[cd] = 0;
    for (int i = 0; i < n; i++) out_shape[cd] += ins[i].shape[cd];
  }
  int64_t cells = positions(rank, out_shape);
  int64_t *which = g_new(int64_t, (gsize)cells + 1);
  for (int64_t p = 0; p < cells; p++) which[p] = -1;
  cf_array_t *vals[8];
  double *flat = g_new0(double, 64);
  int64_t off = 0, total = 0;
  for (int i = 0; i < n; i++) {
    vals[i] = cf_gen_uniform(&rng, dt, 1, &ins[i].nnz, 1, 50);
    for (int64_t z = 0; z < ins[i].nnz && !err; z++) {
      int64_t p = 0;
      for (int d = 0; d < rank; d++)
        p = p * out_shape[d] + ins[i].idx[z * rank + d] + (d == cd ? off : 0);
      which[p] = total;
      flat[total++] = vals[i]->v[z];
    }
    if (!err) off += ins[i].shape[cd];
  }
  if (!err) {
    cf_array_t *oi = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){total, rank});
    cf_array_t *ov = cf_array_new(dt, 1, &total);
    int64_t k = 0;
    for (int64_t p = 0; p < cells; p++) {
      if (which[p] < 0) continue;
      unravel(p, rank, out_shape, oi->v + k * rank);
      ov->v[k++] = flat[which[p]];
    }
    cf_case_expect(c, oi);
    cf_case_expect(c, ov);
    cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, rank, out_shape));
  }
  g_free(which);
  g_free(flat);
  for (int i = 0; i < n; i++) {
    cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){ins[i].nnz, rank});
    for (int64_t k = 0; k < ins[i].nnz * rank; k++) ind->v[k] = (double)ins[i].idx[k];
    cf_case_input(c, ind);
  }
  for (int i = 0; i < n; i++) cf_case_input(c, vals[i]);
  for (int i = 0; i < n; i++) {
    int r = i == n - 1 && err && strstr(err, "Ranks") ? rank + 1 : rank;
    int64_t sh[4] = {ins[i].shape[0], ins[i].shape[1], ins[i].shape[2], 1};
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, r, sh));
  }
  int lens[3] = {n, n, n};
  cf_case_args(c, 3, lens);
  cf_case_attr_int(c, "concat_dim", concat_dim);
  if (err) error_case(ctx, c, 3, err, true);
  else cf_run_case(ctx, c);
}

static void emit_sparse_concat(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  /* TensorFlow's documented example: [2,3] and [2,4] along dim 1. */
  const sc_input_t doc[2] = {{3, {2, 3}, (const int64_t[]){0, 2, 1, 0, 1, 1}},
                             {2, {2, 4}, (const int64_t[]){0, 1, 0, 2}}};
  sparse_concat_case(ctx, op, dt, "dim1", 2, 2, doc, 1, NULL);
  sparse_concat_case(ctx, op, dt, "dim_minus1", 2, 2, doc, -1, NULL);
  const sc_input_t rows[3] = {{2, {2, 3}, (const int64_t[]){1, 2, 0, 0}},
                              {0, {1, 3}, NULL},
                              {3, {3, 3}, (const int64_t[]){2, 1, 0, 2, 0, 0}}};
  sparse_concat_case(ctx, op, dt, "dim0_three_unsorted_empty", 3, 2, rows, 0, NULL);
  const sc_input_t cube[2] = {{2, {2, 1, 2}, (const int64_t[]){1, 0, 1, 0, 0, 0}},
                              {2, {2, 2, 2}, (const int64_t[]){0, 1, 1, 1, 0, 0}}};
  sparse_concat_case(ctx, op, dt, "rank3_dim1", 2, 3, cube, 1, NULL);
  sparse_concat_case(ctx, op, dt, "error_shapes", 2, 2, rows, 1,
                     "Input shapes must match: expected 2 for dimension 0 but got 1 at position "
                     "1");
  sparse_concat_case(ctx, op, dt, "error_concat_dim", 2, 2, doc, 2,
                     "Concat dimension must be in range [-2, 2), got 2");
  sparse_concat_case(ctx, op, dt, "error_ranks", 2, 2, doc, 0,
                     "Ranks of all input tensors must match: expected 2 but got 3 at position 1");
}

/* ---------------------------------------------------------------------------------------------
 * SparseSlice and SparseSliceGrad: the reference tests each entry against the box dimension by
 * dimension with start <= i < start + size (in double: no overflow at these sizes) and clips
 * the box to the shape with min/max. */

static void sparse_slice_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt,
                              const char *name, int64_t nnz, int rank, const int64_t *idx,
                              const int64_t *shape, const int64_t *start, const int64_t *size) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_rng_t rng;
  cf_rng_seed(&rng, op, name, "x");
  cf_array_t *val = cf_gen_uniform(&rng, dt, 1, &nnz, 1, 50);
  int64_t count = 0;
  bool keep[16];
  for (int64_t z = 0; z < nnz; z++) {
    keep[z] = true;
    for (int d = 0; d < rank; d++) {
      double v = (double)idx[z * rank + d];
      if (!(v >= (double)start[d] && v < (double)start[d] + (double)size[d])) keep[z] = false;
    }
    count += keep[z];
  }
  cf_array_t *oi = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){count, rank});
  cf_array_t *ov = cf_array_new(dt, 1, &count);
  int64_t k = 0, out_shape[4];
  for (int64_t z = 0; z < nnz; z++) {
    if (!keep[z]) continue;
    for (int d = 0; d < rank; d++) oi->v[k * rank + d] = (double)(idx[z * rank + d] - start[d]);
    ov->v[k++] = val->v[z];
  }
  for (int d = 0; d < rank; d++) {
    int64_t left = shape[d] - start[d];
    out_shape[d] = left < 0 ? 0 : size[d] < left ? size[d] : left;
  }
  cf_case_expect(c, oi);
  cf_case_expect(c, ov);
  cf_case_expect(c, cf_array_ints(WEFT_DT_INT64, rank, out_shape));
  cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){nnz, rank});
  for (int64_t i = 0; i < nnz * rank; i++) ind->v[i] = (double)idx[i];
  cf_case_input(c, ind);
  cf_case_input(c, val);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, rank, shape));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, rank, start));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, rank, size));
  cf_run_case(ctx, c);
}

static void emit_sparse_slice(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const int64_t idx[] = {0, 0, 0, 3, 1, 1, 2, 0, 2, 4, 3, 2}, shape[] = {4, 5};
  sparse_slice_case(ctx, op, dt, "inside", 6, 2, idx, shape, (const int64_t[]){1, 1},
                    (const int64_t[]){2, 4});
  sparse_slice_case(ctx, op, dt, "clipped", 6, 2, idx, shape, (const int64_t[]){2, 2},
                    (const int64_t[]){10, 10});
  sparse_slice_case(ctx, op, dt, "past_end", 6, 2, idx, shape, (const int64_t[]){4, 0},
                    (const int64_t[]){2, 5});
  sparse_slice_case(ctx, op, dt, "zero_size", 6, 2, idx, shape, (const int64_t[]){0, 0},
                    (const int64_t[]){0, 5});
  sparse_slice_case(ctx, op, dt, "no_entries", 0, 2, NULL, shape, (const int64_t[]){1, 1},
                    (const int64_t[]){2, 2});
  sparse_slice_case(ctx, op, dt, "rank3", 3, 3, (const int64_t[]){0, 1, 2, 1, 1, 1, 1, 2, 0},
                    (const int64_t[]){2, 3, 3}, (const int64_t[]){1, 1, 0},
                    (const int64_t[]){1, 2, 2});
  static const struct {
    const char *name;
    int64_t nst, nsz, nval, start0;
    const char *error;
  } bad[] = {
      {"error_start_length", 1, 2, 6, 0, "Expected start to be a vector of length 2 but got "
       "length 1"},
      {"error_size_length", 2, 3, 6, 0, "Expected size to be a vector of length 2 but got "
       "length 3"},
      {"error_values_length", 2, 2, 5, 0, "indices and values rows (indexing dimension) must "
       "match. (indices = 6, values = 5)"},
      {"error_negative_start", 2, 2, 6, -1, "Expected start, size and shape to be non-negative, "
       "got -1, 2 and 4 for dimension 0"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
    cf_case_t *c = cf_case_new(op, bad[i].name, dt);
    cf_array_t *ind = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){6, 2});
    for (int k = 0; k < 12; k++) ind->v[k] = (double)idx[k];
    cf_case_input(c, ind);
    cf_case_input(c, cf_array_new(dt, 1, &bad[i].nval));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, shape));
    cf_array_t *st = cf_array_new(WEFT_DT_INT64, 1, &bad[i].nst);
    st->v[0] = (double)bad[i].start0;
    cf_case_input(c, st);
    cf_array_t *sz = cf_array_new(WEFT_DT_INT64, 1, &bad[i].nsz);
    for (int64_t k = 0; k < sz->n; k++) sz->v[k] = 2;
    cf_case_input(c, sz);
    error_case(ctx, c, 3, bad[i].error, true);
  }
}

static void emit_sparse_slice_grad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  /* The input of "inside" above: entries 2 and 5 ((1,1) and (3,2)) fall in start (1,1). */
  const int64_t idx[] = {0, 0, 0, 3, 1, 1, 2, 0, 2, 4, 3, 2};
  cf_case_t *c = cf_case_new(op, "inside", dt);
  cf_array_t *g = cf_array_new(dt, 1, (const int64_t[]){2});
  g->v[0] = 7;
  g->v[1] = 9;
  cf_array_t *ii = cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){6, 2});
  for (int k = 0; k < 12; k++) ii->v[k] = (double)idx[k];
  cf_array_t *want = cf_array_new(dt, 1, (const int64_t[]){6});
  want->v[2] = 7;
  want->v[5] = 9;
  cf_case_expect(c, want);
  cf_case_input(c, g);
  cf_case_input(c, ii);
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){1, 1}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 4, (const int64_t[]){0, 0, 2, 1}));
  /* cf_array_ints makes a vector: reshape it to the [2, 2] output indices. */
  c->inputs[3]->rank = 2;
  c->inputs[3]->dims[0] = 2;
  c->inputs[3]->dims[1] = 2;
  cf_run_case(ctx, c);
  c = cf_case_new(op, "error_more_outputs", dt);
  cf_case_input(c, cf_array_new(dt, 1, (const int64_t[]){3}));
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){2, 2}));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){0, 0}));
  cf_case_input(c, cf_array_new(WEFT_DT_INT64, 2, (const int64_t[]){3, 2}));
  error_case(ctx, c, 1, "# rows of output_indices should be not greater than of input_indices, "
             "got 3 and 2", true);
}

static const weft_dtype_t matmul_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                             WEFT_DT_HALF, WEFT_DT_BFLOAT16, WEFT_DT_INVALID};
static const weft_dtype_t reorder_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                              WEFT_DT_INT64, WEFT_DT_BOOL, WEFT_DT_INVALID};

static const weft_dtype_t add_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                          WEFT_DT_INT64, WEFT_DT_INVALID};

/* SparseReshape has no type attr: its cases are filed under int64, the type of its tensors. */
static const weft_dtype_t reshape_dtypes[] = {WEFT_DT_INT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_sparse[] = {
    {"SparseTensorDenseMatMul", matmul_dtypes, emit_sdmm, NULL},
    {"SparseReorder", reorder_dtypes, emit_reorder, NULL},
    {"SparseAdd", add_dtypes, emit_sparse_add, NULL},
    {"SparseAddGrad", add_dtypes, emit_sparse_add_grad, NULL},
    {"SparseReshape", reshape_dtypes, emit_sparse_reshape, NULL},
    {"SparseConcat", reorder_dtypes, emit_sparse_concat, NULL},
    {"SparseSlice", reorder_dtypes, emit_sparse_slice, NULL},
    {"SparseSliceGrad", add_dtypes, emit_sparse_slice_grad, NULL},
    {NULL, NULL, NULL, NULL},
};
