/* cpu_sparse.c: the CPU kernels of SparseTensorDenseMatMul, SparseReorder, SparseAdd and
 * SparseAddGrad, SparseReshape, SparseConcat, SparseSlice and SparseSliceGrad with TensorFlow's
 * CPU semantics
 * (sparse_tensor_dense_matmul_op.cc, sparse_reorder_op.cc, util/sparse/sparse_tensor.cc,
 * sparse_add_op.cc, sparse_add_grad_op.cc, reshape_util.cc, sparse_concat_op.cc,
 * sparse_slice_op.cc and sparse_slice_grad_op.cc): their checks, error messages and
 * results. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * SparseTensorDenseMatMul: product = op(A) op(B), A given by (a_indices, a_values, a_shape) of
 * rank 2. Each entry (m, k, v) of op(A) adds v * op(B)[k, :] to row m. The sums are kept in
 * double (int64 for int32, which wraps as TensorFlow's int32 sums do) and stored once: TensorFlow
 * sums the 16-bit types in float, so no dtype is less accurate here. */

static weft_status_t *k_sparse_dense_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, val, shp, b, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &shp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &b));
  const bool adj_a = weft__cpu_attr_bool(ctx, "adjoint_a", false);
  const bool adj_b = weft__cpu_attr_bool(ctx, "adjoint_b", false);
  /* TensorFlow's checks, in its order. */
  if (b.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tensor 'b' is not a matrix");
  if (shp.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tensor 'a_shape' is not a vector");
  if (shp.num_elements != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tensor 'a_shape' must have 2 elements");
  if (val.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tensor 'a_values' is not a vector");
  if (ind.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tensor 'a_indices' is not a matrix");
  const int64_t nnz = ind.dims[0];
  if (nnz != val.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Number of rows of a_indices does not "
                           "match number of entries in a_values");
  if (ind.dims[1] != shp.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Number of columns of a_indices does not "
                           "match number of entries in a_shape");
  const int64_t a0 = weft__cpu_index_at(&shp, 0), a1 = weft__cpu_index_at(&shp, 1);
  const int64_t outer_left = adj_a ? a1 : a0, inner_left = adj_a ? a0 : a1;
  const int64_t outer_right = adj_b ? b.dims[0] : b.dims[1];
  const int64_t inner_right = adj_b ? b.dims[1] : b.dims[0];
  if (inner_left != inner_right) {
    char bs[CPU_SHAPE_STR_LEN];
    weft__cpu_shape_str(b.rank, b.dims, bs, sizeof bs);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Cannot multiply A and B because inner "
                           "dimension does not match: %lld vs. %lld.  Did you forget a "
                           "transpose?  Dimensions of A: [%lld, %lld).  Dimensions of B: %s",
                           (long long)inner_left, (long long)inner_right, (long long)a0,
                           (long long)a1, bs);
  }
  /* TensorShape's own check: a negative a_shape cannot make an output. */
  if (outer_left < 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                           (long long)outer_left);
  const int64_t dims[2] = {outer_left, outer_right};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, b.dtype, 2, dims, &y));
  const int64_t total = y.num_elements;
  if (total == 0) return NULL;
  const bool is_int = b.dtype == WEFT_DT_INT32;
  void *acc = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)total, &acc));
  memset(acc, 0, sizeof(double) * (size_t)total);
  double *accd = acc;
  int64_t *acci = acc;
  const int lhs_col = adj_a ? 1 : 0, rhs_col = adj_a ? 0 : 1;
  const int64_t bcols = b.dims[1];
  /* TensorFlow checks the indices only when there is something to multiply. */
  for (int64_t i = 0; i < nnz && b.num_elements > 0; i++) {
    const int64_t m = weft__cpu_index_at(&ind, i * 2 + lhs_col);
    const int64_t k = weft__cpu_index_at(&ind, i * 2 + rhs_col);
    if (k < 0 || k >= inner_right)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "k (%lld) from index[%lld,%d] out of "
                             "bounds (>=%lld)", (long long)k, (long long)i, rhs_col,
                             (long long)inner_right);
    if (m < 0 || m >= outer_left)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "m (%lld) from index[%lld,%d] out of "
                             "bounds (>=%lld)", (long long)m, (long long)i, lhs_col,
                             (long long)outer_left);
    if (is_int) {
      const int64_t av = ((const int32_t *)val.data)[i];
      const int32_t *bd = b.data;
      for (int64_t n = 0; n < outer_right; n++)
        acci[m * outer_right + n] += av * (int64_t)bd[adj_b ? n * bcols + k : k * bcols + n];
    } else {
      const double av = weft__cpu_load_f(val.dtype, val.data, i);
      for (int64_t n = 0; n < outer_right; n++)
        accd[m * outer_right + n] +=
            av * weft__cpu_load_f(b.dtype, b.data, adj_b ? n * bcols + k : k * bcols + n);
    }
  }
  for (int64_t j = 0; j < total; j++) {
    if (is_int) ((int32_t *)y.data)[j] = (int32_t)(uint32_t)(uint64_t)acci[j];
    else weft__cpu_store_f(b.dtype, y.data, j, accd[j]);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseReorder: the entries sorted into row-major (lexicographic) order of their indices, the
 * values following. The sort is stable, so repeated indices keep their order (TensorFlow's
 * std::sort leaves it unspecified). */

static int cmp_rows(const int64_t *a, const int64_t *b, int64_t rank) {
  for (int64_t d = 0; d < rank; d++)
    if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
  return 0;
}

/* Bottom-up merge sort of the permutation perm (tmp as long as perm), by the rows of ix. */
static void sort_perm(const int64_t *ix, int64_t rank, int64_t *perm, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi)
        tmp[o++] = cmp_rows(ix + perm[j] * rank, ix + perm[i] * rank, rank) < 0 ? perm[j++]
                                                                                : perm[i++];
      while (i < mid) tmp[o++] = perm[i++];
      while (j < hi) tmp[o++] = perm[j++];
    }
    memcpy(perm, tmp, sizeof(int64_t) * (size_t)n);
  }
}

static weft_status_t *k_sparse_reorder(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, val, shp, oi, ov;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &shp));
  char s[CPU_SHAPE_STR_LEN];
  if (ind.rank != 2) {
    weft__cpu_shape_str(ind.rank, ind.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input indices should be a matrix but "
                           "received shape %s", s);
  }
  if (val.rank != 1) {
    weft__cpu_shape_str(val.rank, val.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input values should be a vector but "
                           "received shape %s", s);
  }
  if (shp.rank != 1) {
    weft__cpu_shape_str(shp.rank, shp.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shape should be a vector but "
                           "received shape %s", s);
  }
  const int64_t nnz = ind.dims[0], rank = ind.dims[1];
  if (nnz != val.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices and values rows (indexing "
                           "dimension) must match. (indices = %lld, values = %lld)",
                           (long long)nnz, (long long)val.dims[0]);
  if (shp.dims[0] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Shape rank must be SparseTensor rank.");
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2, ind.dims, &oi));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, val.dtype, 1, val.dims, &ov));
  if (nnz == 0) return NULL;
  void *scratch = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(int64_t) * 2 * (size_t)nnz, &scratch));
  int64_t *perm = scratch, *tmp = perm + nnz;
  const int64_t *ix = ind.data;
  for (int64_t i = 0; i < nnz; i++) perm[i] = i;
  sort_perm(ix, rank, perm, tmp, nnz);
  int64_t *out = oi.data;
  for (int64_t i = 0; i < nnz; i++) {
    if (rank > 0) memcpy(out + i * rank, ix + perm[i] * rank, sizeof(int64_t) * (size_t)rank);
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &ov, i, &val, perm[i], 1));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseAdd: a + b for two sparse tensors of one shape whose entries are in row-major order (as
 * TensorFlow assumes; it does not check). The two lists are merged; an index in both gives one
 * entry, the sum, kept only when thresh <= |sum| (entries of only one operand are kept whatever
 * their magnitude, as TensorFlow's kernel does). The output indices and shape are int64. */

static int cmp_ix(const weft_tensor_view_t *a, int64_t i, const weft_tensor_view_t *b, int64_t j,
                  int64_t rank) {
  const int64_t *x = (const int64_t *)a->data + i * rank, *y = (const int64_t *)b->data + j * rank;
  return cmp_rows(x, y, rank);
}

static bool is_int_type(weft_dtype_t dt) {
  return dt != WEFT_DT_FLOAT && dt != WEFT_DT_DOUBLE && dt != WEFT_DT_HALF &&
         dt != WEFT_DT_BFLOAT16;
}

/* Element i of an integer buffer as an int64 (the integer dtypes SparseAdd registers). */
static int64_t load_i(weft_dtype_t dt, const void *p, int64_t i) {
  switch (dt) {
    case WEFT_DT_INT32: return ((const int32_t *)p)[i];
    case WEFT_DT_INT64: return ((const int64_t *)p)[i];
    default: return 0;
  }
}

static void store_i(weft_dtype_t dt, void *p, int64_t i, int64_t v) {
  switch (dt) {
    case WEFT_DT_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case WEFT_DT_INT64: ((int64_t *)p)[i] = v; break;
    default: break;
  }
}

static weft_status_t *k_sparse_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ai, av, as, bi, bv, bs, th, oi, ov, os;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ai));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &av));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &as));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &bi));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 4, &bv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 5, &bs));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 6, &th));
  char s1[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  if (ai.rank != 2 || bi.rank != 2) {
    weft__cpu_shape_str(ai.rank, ai.dims, s1, sizeof s1);
    weft__cpu_shape_str(bi.rank, bi.dims, s2, sizeof s2);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input indices should be matrices but "
                           "received shapes: %s and %s", s1, s2);
  }
  const int64_t a_nnz = ai.dims[0], b_nnz = bi.dims[0], rank = ai.dims[1];
  if (bi.dims[1] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input indices must have the same "
                           "dimension, got %lld and %lld", (long long)rank,
                           (long long)bi.dims[1]);
  if (av.rank != 1 || bv.rank != 1) {
    weft__cpu_shape_str(av.rank, av.dims, s1, sizeof s1);
    weft__cpu_shape_str(bv.rank, bv.dims, s2, sizeof s2);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input values should be vectors but "
                           "received shapes: %s and %s", s1, s2);
  }
  if (av.dims[0] != a_nnz || bv.dims[0] != b_nnz)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected %lld and %lld non-empty input "
                           "values, got %lld and %lld", (long long)a_nnz, (long long)b_nnz,
                           (long long)av.dims[0], (long long)bv.dims[0]);
  if (as.rank != 1 || bs.rank != 1) {
    weft__cpu_shape_str(as.rank, as.dims, s1, sizeof s1);
    weft__cpu_shape_str(bs.rank, bs.dims, s2, sizeof s2);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shapes should be a vector but "
                           "received shapes %s and %s", s1, s2);
  }
  if (as.dims[0] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Second dimension of a_indices and "
                           "length of a_shape must match, got %lld and %lld", (long long)rank,
                           (long long)as.dims[0]);
  /* "Tesors" is TensorFlow's spelling. */
  if (rank <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Tesors must not be empty");
  if (bs.dims[0] != as.dims[0]) {
    /* TensorFlow prints the shapes' values (SummarizeValue): separated by spaces. */
    for (int k = 0; k < 2; k++) {
      const weft_tensor_view_t *v = k ? &bs : &as;
      char *buf = k ? s2 : s1;
      size_t at = 0;
      buf[0] = '\0';
      for (int64_t d = 0; d < v->dims[0] && d < 10 && at < CPU_SHAPE_STR_LEN; d++)
        at += (size_t)snprintf(buf + at, CPU_SHAPE_STR_LEN - at, "%s%lld", d ? " " : "",
                               (long long)weft__cpu_index_at(v, d));
    }
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Operands do not have the same ranks; "
                           "got shapes: %s and %s", s1, s2);
  }
  for (int64_t d = 0; d < rank; d++) {
    int64_t x = weft__cpu_index_at(&as, d), y = weft__cpu_index_at(&bs, d);
    if (x != y)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Operands' shapes do not match: got "
                             "%lld and %lld for dimension %lld", (long long)x, (long long)y,
                             (long long)d);
  }
  if (th.rank != 0) {
    weft__cpu_shape_str(th.rank, th.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The magnitude threshold must be a "
                           "scalar: got shape %s", s1);
  }
  const double thresh = is_int_type(th.dtype) ? (double)load_i(th.dtype, th.data, 0)
                                              : weft__cpu_load_f(th.dtype, th.data, 0);
  const weft_dtype_t dt = av.dtype;
  const bool ints = is_int_type(dt);
  /* At most a_nnz + b_nnz entries: (from, index) pairs and the sums, in scratch. */
  const int64_t cap = a_nnz + b_nnz;
  if (cap < 0 || (uint64_t)cap > SIZE_MAX / (3 * sizeof(int64_t)))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "SparseAdd: %lld entries are too many",
                           (long long)cap);
  void *scratch = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, 3 * sizeof(int64_t) * (size_t)(cap ? cap : 1),
                                         &scratch));
  int64_t *from = scratch, *idx = from + cap, *sum_i = idx + cap;
  double *sum_f = (double *)(void *)sum_i;
  int64_t n = 0, i = 0, j = 0;
  while (i < a_nnz || j < b_nnz) {
    int c = i >= a_nnz ? 1 : j >= b_nnz ? -1 : cmp_ix(&ai, i, &bi, j, rank);
    if (c < 0) {
      from[n] = 0;
      idx[n] = i;
      if (ints) sum_i[n] = load_i(dt, av.data, i);
      else sum_f[n] = weft__cpu_load_f(dt, av.data, i);
      n++;
      i++;
    } else if (c > 0) {
      from[n] = 1;
      idx[n] = j;
      if (ints) sum_i[n] = load_i(dt, bv.data, j);
      else sum_f[n] = weft__cpu_load_f(dt, bv.data, j);
      n++;
      j++;
    } else {
      double mag;
      if (ints) {
        int64_t v = load_i(dt, av.data, i) + load_i(dt, bv.data, j);
        if (dt == WEFT_DT_INT32) v = (int32_t)(uint32_t)(uint64_t)v; /* the wrap of T's sum */
        sum_i[n] = v;
        mag = v < 0 ? -(double)v : (double)v;
      } else {
        /* Rounded to T first: the threshold sees the sum TensorFlow computes in T. */
        double v = weft__cpu_load_f(dt, av.data, i) + weft__cpu_load_f(dt, bv.data, j);
        if (dt == WEFT_DT_FLOAT) v = (float)v;
        sum_f[n] = v;
        mag = v < 0 ? -v : v;
      }
      if (thresh <= mag) {
        from[n] = 0;
        idx[n] = i;
        n++;
      }
      i++;
      j++;
    }
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2, (const int64_t[]){n, rank},
                                        &oi));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, dt, 1, &n, &ov));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2, WEFT_DT_INT64, 1, &rank, &os));
  for (int64_t d = 0; d < rank; d++) ((int64_t *)os.data)[d] = weft__cpu_index_at(&as, d);
  for (int64_t k = 0; k < n; k++) {
    const int64_t *src = (const int64_t *)(from[k] ? bi.data : ai.data) + idx[k] * rank;
    memcpy((int64_t *)oi.data + k * rank, src, sizeof(int64_t) * (size_t)rank);
    if (ints) store_i(dt, ov.data, k, sum_i[k]);
    else weft__cpu_store_f(dt, ov.data, k, sum_f[k]);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseAddGrad: the sum's gradient handed back to the entries of a and of b that made each sum
 * entry (0 for an entry whose sum fell under the threshold). All three index lists are in
 * row-major order, so one merge walk per operand finds them. */

static weft_status_t *k_sparse_add_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, ai, bi, si, ga, gb;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &g));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ai));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &bi));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &si));
  char s1[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN], s3[CPU_SHAPE_STR_LEN];
  if (ai.rank != 2 || bi.rank != 2 || si.rank != 2) {
    weft__cpu_shape_str(ai.rank, ai.dims, s1, sizeof s1);
    weft__cpu_shape_str(bi.rank, bi.dims, s2, sizeof s2);
    weft__cpu_shape_str(si.rank, si.dims, s3, sizeof s3);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input indices should be matrices but "
                           "received shapes: %s and %s and %s", s1, s2, s3);
  }
  if (g.rank != 1) {
    weft__cpu_shape_str(g.rank, g.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input backprop_val_grad should be a "
                           "vector but received shape: %s", s1);
  }
  const int64_t rank = ai.dims[1];
  if (bi.dims[1] != rank || si.dims[1] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The densified operands should have the "
                           "same ndims; for A, B, sum got: %lld, %lld, %lld", (long long)rank,
                           (long long)bi.dims[1], (long long)si.dims[1]);
  const int64_t n = si.dims[0];
  if (g.num_elements != n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "# elements of backprop_val_grad and # "
                           "rows of sum_indices should match (#nnz of sum): got %lld and %lld",
                           (long long)g.num_elements, (long long)n);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, g.dtype, 1, &ai.dims[0], &ga));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, g.dtype, 1, &bi.dims[0], &gb));
  const size_t es = weft__cpu_dtype_size(g.dtype);
  for (int op = 0; op < 2; op++) {
    const weft_tensor_view_t *x = op ? &bi : &ai;
    weft_tensor_view_t *out = op ? &gb : &ga;
    if (out->num_elements > 0) memset(out->data, 0, (size_t)out->num_elements * es);
    int64_t k = 0;
    for (int64_t i = 0; i < x->dims[0]; i++) {
      while (k < n && cmp_ix(&si, k, x, i, rank) < 0) k++;
      if (k < n && cmp_ix(&si, k, x, i, rank) == 0)
        WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, out, i, &g, k, 1));
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseReshape (reshape_util.cc): each entry's row-major position in input_shape, unravelled in
 * the new shape; one dimension of new_shape may be -1, inferred from the others. */

/* "[a,b,c]": TensorShape::DebugString of n dims. */
static void dims_str(const int64_t *d, int64_t n, char *buf, size_t len) {
  size_t at = (size_t)snprintf(buf, len, "[");
  for (int64_t i = 0; i < n && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? "," : "", (long long)d[i]);
  if (at < len) snprintf(buf + at, len - at, "]");
}

static weft_status_t *k_sparse_reshape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, ish, nsh, oi, osh;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ish));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &nsh));
  char s[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  if (ind.rank != 2) {
    weft__cpu_shape_str(ind.rank, ind.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input indices should be a matrix but "
                           "received shape %s", s);
  }
  if (ish.rank != 1) {
    weft__cpu_shape_str(ish.rank, ish.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shape should be a vector but "
                           "received shape %s", s);
  }
  if (nsh.rank != 1) {
    weft__cpu_shape_str(nsh.rank, nsh.dims, s, sizeof s);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Target shape should be a vector but "
                           "received shape %s", s);
  }
  const int64_t nnz = ind.dims[0], in_rank = ish.dims[0], out_rank = nsh.dims[0];
  if (ind.dims[1] != in_rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input tensor rank must match input "
                           "shape length, got %lld and %lld", (long long)ind.dims[1],
                           (long long)in_rank);
  if (in_rank > WEFT_MAX_RANK || out_rank > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "SparseReshape: ranks %lld and %lld, "
                           "more than the %d dimensions a tensor may have", (long long)in_rank,
                           (long long)out_rank, WEFT_MAX_RANK);
  int64_t in_dims[WEFT_MAX_RANK], out_dims[WEFT_MAX_RANK], dense = 1, product = 1;
  for (int64_t d = 0; d < in_rank; d++) {
    in_dims[d] = ((const int64_t *)ish.data)[d];
    if (in_dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                             (long long)in_dims[d]);
    if (in_dims[d] > 0 && dense > INT64_MAX / in_dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shape has too many elements");
    dense *= in_dims[d];
  }
  int64_t unknown = -1;
  for (int64_t d = 0; d < out_rank; d++) {
    const int64_t size = ((const int64_t *)nsh.data)[d];
    if (size == -1) {
      if (unknown != -1)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "only one output dimension may be "
                               "-1, not both %lld and %lld", (long long)unknown, (long long)d);
      unknown = d;
      out_dims[d] = 1;
      continue;
    }
    if (size < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "size %lld must be non-negative, not "
                             "%lld", (long long)d, (long long)size);
    if (size > 0 && product > INT64_MAX / size)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "New shape has too many elements");
    product *= size;
    out_dims[d] = size;
  }
  dims_str(in_dims, in_rank, s, sizeof s);
  if (unknown != -1) {
    if (product <= 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "reshape cannot infer the missing input "
                             "size for an empty tensor unless all specified input sizes are "
                             "non-zero");
    const int64_t missing = dense / product;
    if (product * missing != dense) {
      dims_str(out_dims, out_rank, s2, sizeof s2);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input to reshape is a SparseTensor "
                             "with %lld dense values, but the requested shape requires a "
                             "multiple of %lld. input_shape=%s output_shape=%s",
                             (long long)dense, (long long)product, s, s2);
    }
    out_dims[unknown] = missing;
    product *= missing;
  }
  if (product != dense) {
    dims_str(out_dims, out_rank, s2, sizeof s2);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input to reshape is a tensor with %lld "
                           "dense values, but the requested shape has %lld. input_shape=%s "
                           "output_shape=%s", (long long)dense, (long long)product, s, s2);
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2,
                                        (const int64_t[]){nnz, out_rank}, &oi));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, WEFT_DT_INT64, 1, &out_rank, &osh));
  if (out_rank > 0) memcpy(osh.data, out_dims, sizeof(int64_t) * (size_t)out_rank);
  const int64_t *ix = ind.data;
  int64_t *ox = oi.data;
  for (int64_t z = 0; z < nnz; z++) {
    int64_t p = 0;
    for (int64_t d = 0; d < in_rank; d++) p = p * in_dims[d] + ix[z * in_rank + d];
    for (int64_t d = out_rank - 1; d >= 0; d--) {
      ox[z * out_rank + d] = out_dims[d] > 0 ? p % out_dims[d] : 0;
      p = out_dims[d] > 0 ? p / out_dims[d] : 0;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseConcat (sparse_concat_op.cc): the N inputs' entries, each input's concat_dim offset by
 * the sizes of the inputs before it, in row-major order (TensorFlow reorders the concatenation
 * into the standard order; the sort here is stable). The shapes must agree off concat_dim. */

static weft_status_t *k_sparse_concat(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const int64_t n = weft__cpu_attr_int(ctx, "N", 0);
  const int64_t cd_attr = weft__cpu_attr_int(ctx, "concat_dim", 0);
  if (n < 1 || n > INT32_MAX / 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Must have at least 1 input");
  weft_tensor_view_t *in = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(weft_tensor_view_t) * 3 * (size_t)n,
                                         (void **)&in));
  weft_tensor_view_t *ind = in, *val = in + n, *shp = in + 2 * n;
  for (int64_t i = 0; i < 3 * n; i++) WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, (int)i, &in[i]));
  char s[CPU_SHAPE_STR_LEN];
  for (int64_t i = 0; i < n; i++)
    if (ind[i].rank != 2) {
      weft__cpu_shape_str(ind[i].rank, ind[i].dims, s, sizeof s);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input indices should be a matrix but "
                             "received shape %s at position %lld", s, (long long)i);
    }
  for (int64_t i = 0; i < n; i++)
    if (val[i].rank != 1) {
      weft__cpu_shape_str(val[i].rank, val[i].dims, s, sizeof s);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input values should be a vector but "
                             "received shape %s at position %lld", s, (long long)i);
    }
  for (int64_t i = 0; i < n; i++)
    if (shp[i].rank != 1) {
      weft__cpu_shape_str(shp[i].rank, shp[i].dims, s, sizeof s);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shapes should be a vector but "
                             "received shape %s at position %lld", s, (long long)i);
    }
  const int64_t rank = shp[0].dims[0];
  const int64_t cd = cd_attr < 0 ? rank + cd_attr : cd_attr;
  if (cd < 0 || cd >= rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Concat dimension must be in range [%lld, "
                           "%lld), got %lld", (long long)-rank, (long long)rank,
                           (long long)cd_attr);
  const int64_t *first = shp[0].data;
  int64_t total = 0, concat_size = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t *cur = shp[i].data;
    if (i > 0 && shp[i].dims[0] != rank)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Ranks of all input tensors must match: "
                             "expected %lld but got %lld at position %lld", (long long)rank,
                             (long long)shp[i].dims[0], (long long)i);
    for (int64_t j = 0; j < rank; j++) {
      if (cur[j] < 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                               (long long)cur[j]);
      if (j != cd && cur[j] != first[j])
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input shapes must match: expected "
                               "%lld for dimension %lld but got %lld at position %lld",
                               (long long)first[j], (long long)j, (long long)cur[j],
                               (long long)i);
    }
    /* SparseTensor::Create's checks of each input. */
    if (ind[i].dims[0] != val[i].dims[0])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices and values rows (indexing "
                             "dimension) must match. (indices = %lld, values = %lld)",
                             (long long)ind[i].dims[0], (long long)val[i].dims[0]);
    if (ind[i].dims[1] != rank)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Shape rank must be SparseTensor rank.");
    if (val[i].dtype != val[0].dtype)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "values %lld has another dtype than "
                             "values 0", (long long)i);
    if (cur[cd] > INT64_MAX - concat_size || ind[i].dims[0] > INT64_MAX / 4 - total)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "SparseConcat: the output is too large");
    concat_size += cur[cd];
    total += ind[i].dims[0];
  }
  if (rank > 0 && (uint64_t)total > SIZE_MAX / sizeof(int64_t) / (uint64_t)(rank + 4))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "SparseConcat: %lld entries are too many",
                           (long long)total);
  weft_tensor_view_t oi, ov, os;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2,
                                        (const int64_t[]){total, rank}, &oi));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, val[0].dtype, 1, &total, &ov));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2, WEFT_DT_INT64, 1, &rank, &os));
  for (int64_t j = 0; j < rank; j++) ((int64_t *)os.data)[j] = j == cd ? concat_size : first[j];
  if (total == 0) return NULL;
  /* The concatenated indices, each entry's (input, row), then the row-major permutation. */
  void *scratch = NULL;
  const size_t words = (size_t)total * (size_t)(rank + 4);
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(int64_t) * words, &scratch));
  int64_t *ix = scratch, *src_in = ix + total * rank, *src_row = src_in + total;
  int64_t *perm = src_row + total, *tmp = perm + total;
  int64_t at = 0, offset = 0;
  for (int64_t i = 0; i < n; i++) {
    const int64_t *x = ind[i].data;
    for (int64_t z = 0; z < ind[i].dims[0]; z++, at++) {
      memcpy(ix + at * rank, x + z * rank, sizeof(int64_t) * (size_t)rank);
      ix[at * rank + cd] += offset;
      src_in[at] = i;
      src_row[at] = z;
      perm[at] = at;
    }
    offset += ((const int64_t *)shp[i].data)[cd];
  }
  sort_perm(ix, rank, perm, tmp, total);
  for (int64_t k = 0; k < total; k++) {
    memcpy((int64_t *)oi.data + k * rank, ix + perm[k] * rank, sizeof(int64_t) * (size_t)rank);
    WEFT_RETURN_IF_ERROR(
        weft__cpu_copy_elems(ctx, &ov, k, &val[src_in[perm[k]]], src_row[perm[k]], 1));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseSlice (SparseTensor::Slice): the entries inside [start, start + size) on every dim,
 * shifted by start, in their input order; each output dim is the slice's size clipped to the
 * input (0 when start is past its end). */

static weft_status_t *k_sparse_slice(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, val, shp, st, sz, oi, ov, os;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &shp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &st));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 4, &sz));
  char s[CPU_SHAPE_STR_LEN];
  const struct {
    const weft_tensor_view_t *v;
    int rank;
    const char *what;
  } want[] = {{&ind, 2, "Input indices should be a matrix"},
              {&val, 1, "Input values should be a vector"},
              {&shp, 1, "Input shape should be a vector"},
              {&st, 1, "Input start should be a vector"},
              {&sz, 1, "Input size should be a vector"}};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
    if (want[k].v->rank != want[k].rank) {
      weft__cpu_shape_str(want[k].v->rank, want[k].v->dims, s, sizeof s);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s but received shape %s",
                             want[k].what, s);
    }
  const int64_t rank = shp.dims[0], nnz = ind.dims[0];
  if (st.dims[0] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected start to be a vector of length "
                           "%lld but got length %lld", (long long)rank, (long long)st.dims[0]);
  if (sz.dims[0] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected size to be a vector of length "
                           "%lld but got length %lld", (long long)rank, (long long)sz.dims[0]);
  /* SparseTensor::Create's checks. */
  if (val.dims[0] != nnz)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices and values rows (indexing "
                           "dimension) must match. (indices = %lld, values = %lld)",
                           (long long)nnz, (long long)val.dims[0]);
  if (ind.dims[1] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Shape rank must be SparseTensor rank.");
  const int64_t *dims = shp.data, *start = st.data, *size = sz.data, *ix = ind.data;
  for (int64_t d = 0; d < rank; d++)
    if (start[d] < 0 || size[d] < 0 || dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected start, size and shape to be "
                             "non-negative, got %lld, %lld and %lld for dimension %lld",
                             (long long)start[d], (long long)size[d], (long long)dims[d],
                             (long long)d);
  int64_t count = 0;
  for (int64_t z = 0; z < nnz; z++) {
    bool in = true;
    for (int64_t d = 0; d < rank && in; d++) {
      const int64_t v = ix[z * rank + d];
      /* v - start < size, without overflowing start + size. */
      in = v >= start[d] && v - start[d] < size[d];
    }
    count += in;
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2,
                                        (const int64_t[]){count, rank}, &oi));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, val.dtype, 1, &count, &ov));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2, WEFT_DT_INT64, 1, &rank, &os));
  for (int64_t d = 0; d < rank; d++)
    ((int64_t *)os.data)[d] = start[d] >= dims[d] ? 0
                              : size[d] < dims[d] - start[d] ? size[d] : dims[d] - start[d];
  int64_t k = 0;
  for (int64_t z = 0; z < nnz; z++) {
    bool in = true;
    for (int64_t d = 0; d < rank && in; d++) {
      const int64_t v = ix[z * rank + d];
      in = v >= start[d] && v - start[d] < size[d];
    }
    if (!in) continue;
    for (int64_t d = 0; d < rank; d++)
      ((int64_t *)oi.data)[k * rank + d] = ix[z * rank + d] - start[d];
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &ov, k, &val, z, 1));
    k++;
  }
  return NULL;
}

/* SparseSliceGrad: the output entries are a subsequence of the input's, shifted by start; each
 * input entry that made one takes its gradient, the others 0. */
static weft_status_t *k_sparse_slice_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, ii, st, oi, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &g));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ii));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &st));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &oi));
  char s1[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  if (ii.rank != 2 || oi.rank != 2) {
    weft__cpu_shape_str(ii.rank, ii.dims, s1, sizeof s1);
    weft__cpu_shape_str(oi.rank, oi.dims, s2, sizeof s2);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input and output indices should be "
                           "matrices but received shapes: %s and %s", s1, s2);
  }
  if (g.rank != 1) {
    weft__cpu_shape_str(g.rank, g.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input backprop_val_grad should be a "
                           "vector but received shape: %s", s1);
  }
  const int64_t rank = ii.dims[1], n_in = ii.dims[0], n_out = oi.dims[0];
  if (oi.dims[1] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The input and output should have the "
                           "same ndims: got: %lld and %lld", (long long)rank,
                           (long long)oi.dims[1]);
  if (n_out > n_in)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "# rows of output_indices should be not "
                           "greater than of input_indices, got %lld and %lld", (long long)n_out,
                           (long long)n_in);
  if (g.num_elements != n_out)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "# elements of backprop_val_grad and # "
                           "rows of output_indices should match (#nnz of sum): got %lld and "
                           "%lld", (long long)g.num_elements, (long long)n_out);
  if (st.rank != 1) {
    weft__cpu_shape_str(st.rank, st.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The input_start should be a vector but "
                           "received shape %s", s1);
  }
  if (st.dims[0] != rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected input_start to be a vector of "
                           "length %lld but got length %lld", (long long)rank,
                           (long long)st.dims[0]);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, g.dtype, 1, &n_in, &y));
  if (n_in > 0) memset(y.data, 0, (size_t)n_in * weft__cpu_dtype_size(g.dtype));
  const int64_t *in = ii.data, *out = oi.data, *start = st.data;
  int64_t j = 0;
  for (int64_t i = 0; i < n_in && j < n_out; i++) {
    bool same = true;
    for (int64_t d = 0; d < rank && same; d++)
      same = in[i * rank + d] - start[d] == out[j * rank + d];
    if (!same) continue;
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, i, &g, j, 1));
    j++;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration: the dtypes of TensorFlow's CPU kernels, less complex. */

static const weft_dtype_t matmul_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                            WEFT_DT_HALF, WEFT_DT_BFLOAT16};
static const weft_dtype_t add_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                         WEFT_DT_INT64};
/* SparseReshape runs on the host, as TensorFlow's CPU kernel: its inputs are small int64s. */
static const char *const reshape_host[] = {"input_shape", "new_shape", NULL};
/* a_shape decides the allocation, so it is read on the host. */
static const char *const matmul_host[] = {"a_shape", NULL};

weft_status_t *weft__cpu_register_sparse(const weft_registrar_t *reg) {
#define N(a) (sizeof a / sizeof a[0])
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "SparseTensorDenseMatMul", .compute = k_sparse_dense_matmul, .type_attr = "T",
       .dtypes = matmul_types, .n_dtypes = N(matmul_types), .host_memory = matmul_host},
      {.op = "SparseReorder", .compute = k_sparse_reorder, .type_attr = "T",
       .dtypes = weft__cpu_all_types, .n_dtypes = weft__cpu_n_all_types},
      {.op = "SparseAdd", .compute = k_sparse_add, .type_attr = "T", .dtypes = add_types,
       .n_dtypes = N(add_types)},
      {.op = "SparseAddGrad", .compute = k_sparse_add_grad, .type_attr = "T",
       .dtypes = add_types, .n_dtypes = N(add_types)},
      {.op = "SparseReshape", .compute = k_sparse_reshape, .host_memory = reshape_host},
      {.op = "SparseConcat", .compute = k_sparse_concat, .type_attr = "T",
       .dtypes = weft__cpu_all_types, .n_dtypes = weft__cpu_n_all_types},
      {.op = "SparseSlice", .compute = k_sparse_slice, .type_attr = "T",
       .dtypes = weft__cpu_all_types, .n_dtypes = weft__cpu_n_all_types},
      {.op = "SparseSliceGrad", .compute = k_sparse_slice_grad, .type_attr = "T",
       .dtypes = add_types, .n_dtypes = N(add_types)},
  };
  return weft__cpu_register_specs(reg, specs, N(specs));
#undef N
}
