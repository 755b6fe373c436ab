/* reference_math.c: double-precision references of the matrix products (MatMul, BatchMatMulV2
 * with broadcast batch dimensions), the reductions (Sum, Mean, Max, Min, Prod, All, Any with
 * TensorFlow's axis and keep_dims rules), ArgMax/ArgMin, Cumsum and AddN. */
#include <math.h>
#include <string.h>

#include "reference.h"

cf_array_t *cf_ref_matmul(const cf_array_t *a, const cf_array_t *b, bool ta, bool tb) {
  int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
  int64_t n = tb ? b->dims[0] : b->dims[1];
  int64_t dims[2] = {m, n};
  cf_array_t *c = cf_array_new(a->dtype, 2, dims);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) {
        double x = ta ? a->v[p * a->dims[1] + i] : a->v[i * a->dims[1] + p];
        double y = tb ? b->v[j * b->dims[1] + p] : b->v[p * b->dims[1] + j];
        s += x * y;
      }
      c->v[i * n + j] = s;
    }
  cf_array_round(c);
  return c;
}

cf_array_t *cf_ref_batch_matmul(const cf_array_t *a, const cf_array_t *b, bool adj_a,
                                bool adj_b) {
  int ra = a->rank, rb = b->rank;
  int64_t m = adj_a ? a->dims[ra - 1] : a->dims[ra - 2];
  int64_t k = adj_a ? a->dims[ra - 2] : a->dims[ra - 1];
  int64_t n = adj_b ? b->dims[rb - 2] : b->dims[rb - 1];
  int rbatch;
  int64_t dims[WEFT_MAX_RANK];
  if (!cf_broadcast_shapes(ra - 2, a->dims, rb - 2, b->dims, &rbatch, dims)) return NULL;
  dims[rbatch] = m;
  dims[rbatch + 1] = n;
  cf_array_t *c = cf_array_new(a->dtype, rbatch + 2, dims);
  int64_t nbatch = cf_num_elements(rbatch, dims);
  int64_t a_mat = a->dims[ra - 2] * a->dims[ra - 1], b_mat = b->dims[rb - 2] * b->dims[rb - 1];
  int64_t acols = a->dims[ra - 1], bcols = b->dims[rb - 1];
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t ao = cf_broadcast_offset(bi, rbatch, dims, ra - 2, a->dims) * a_mat;
    int64_t bo = cf_broadcast_offset(bi, rbatch, dims, rb - 2, b->dims) * b_mat;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++) {
          double x = adj_a ? a->v[ao + p * acols + i] : a->v[ao + i * acols + p];
          double y = adj_b ? b->v[bo + j * bcols + p] : b->v[bo + p * bcols + j];
          s += x * y;
        }
        c->v[bi * m * n + i * n + j] = s;
      }
  }
  cf_array_round(c);
  return c;
}

cf_array_t *cf_ref_reduce(const char *op, const cf_array_t *x, const int64_t *axes, int n_axes,
                          bool keep_dims) {
  bool reduced[WEFT_MAX_RANK] = {false};
  for (int i = 0; i < n_axes; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
    if (a >= 0 && a < x->rank) reduced[a] = true;
  }
  int64_t odims[WEFT_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < x->rank; d++) {
    if (!reduced[d])
      odims[orank++] = x->dims[d];
    else if (keep_dims)
      odims[orank++] = 1;
  }
  bool is_sum = strcmp(op, "Sum") == 0, is_mean = strcmp(op, "Mean") == 0;
  bool is_max = strcmp(op, "Max") == 0, is_min = strcmp(op, "Min") == 0;
  bool is_prod = strcmp(op, "Prod") == 0, is_all = strcmp(op, "All") == 0;
  weft_dtype_t dt = x->dtype;
  cf_array_t *y = cf_array_new(dt, orank, odims);
  double init = is_prod || is_all ? 1.0 : 0.0;
  /* The identity of an empty max/min is the dtype's lowest/highest value (as a double: 64-bit
   * extremes round to +-2^63 and 2^64, as the kernel's outputs do when read back). */
  if (is_max)
    init = cf_dtype_is_float(dt) ? -INFINITY
           : dt == WEFT_DT_INT64 ? -9223372036854775808.0
                                 : cf_dtype_min(dt);
  if (is_min)
    init = cf_dtype_is_float(dt) ? INFINITY
           : dt == WEFT_DT_INT64 ? 9223372036854775807.0
           : dt == WEFT_DT_UINT64 ? 18446744073709551615.0
                                  : cf_dtype_max(dt);
  int64_t *count = g_new0(int64_t, y->n > 0 ? y->n : 1);
  for (int64_t i = 0; i < y->n; i++) y->v[i] = init;
  /* Output offset of each input element: drop the reduced coordinates. */
  int64_t ostrides[WEFT_MAX_RANK], s = 1;
  for (int d = x->rank - 1; d >= 0; d--) {
    ostrides[d] = reduced[d] ? 0 : s;
    if (!reduced[d]) s *= x->dims[d];
  }
  for (int64_t i = 0; i < x->n; i++) {
    int64_t rem = i, off = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
      off += (rem % x->dims[d]) * ostrides[d];
      rem /= x->dims[d];
    }
    double v = x->v[i], *acc = &y->v[off];
    count[off]++;
    if (is_sum || is_mean)
      *acc += v;
    else if (is_prod)
      *acc = cf_dtype_is_int(dt) ? cf_round_to_dtype(dt, *acc * v) : *acc * v;
    else if (is_max)
      *acc = isnan(v) || isnan(*acc) ? NAN : (v > *acc ? v : *acc);
    else if (is_min)
      *acc = isnan(v) || isnan(*acc) ? NAN : (v < *acc ? v : *acc);
    else if (is_all)
      *acc = *acc != 0 && v != 0;
    else /* Any */
      *acc = *acc != 0 || v != 0;
  }
  if (is_mean)
    for (int64_t i = 0; i < y->n; i++) {
      if (cf_dtype_is_int(dt))
        y->v[i] = count[i] ? trunc(y->v[i] / (double)count[i]) : 0; /* exact sum, truncated */
      else
        y->v[i] = y->v[i] / (double)count[i];
    }
  g_free(count);
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_argminmax(bool is_max, const cf_array_t *x, int axis, weft_dtype_t out_dtype) {
  int64_t odims[WEFT_MAX_RANK];
  int orank = 0;
  for (int d = 0; d < x->rank; d++)
    if (d != axis) odims[orank++] = x->dims[d];
  cf_array_t *y = cf_array_new(out_dtype, orank, odims);
  int64_t inner = 1;
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  int64_t len = x->dims[axis];
  for (int64_t o = 0; o < y->n; o++) {
    int64_t outer = o / inner, in = o % inner;
    int64_t best = 0;
    for (int64_t k = 1; k < len; k++) {
      double v = x->v[(outer * len + k) * inner + in];
      double b = x->v[(outer * len + best) * inner + in];
      if (is_max ? v > b : v < b) best = k;
    }
    y->v[o] = (double)best;
  }
  return y;
}

cf_array_t *cf_ref_cumsum(const cf_array_t *x, int axis, bool exclusive, bool reverse) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  int64_t inner = 1;
  for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
  int64_t len = x->rank ? x->dims[axis] : 1;
  int64_t outer = (len * inner) != 0 ? x->n / (len * inner) : 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      double s = 0;
      for (int64_t kk = 0; kk < len; kk++) {
        int64_t k = reverse ? len - 1 - kk : kk;
        int64_t idx = (o * len + k) * inner + in;
        if (exclusive) {
          y->v[idx] = s;
          s += x->v[idx];
        } else {
          s += x->v[idx];
          y->v[idx] = s;
        }
      }
    }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_addn(cf_array_t *const *xs, int n) {
  cf_array_t *y = cf_array_new_like(xs[0], xs[0]->dtype);
  for (int64_t i = 0; i < y->n; i++) {
    double s = 0;
    for (int k = 0; k < n; k++) s += xs[k]->v[i];
    y->v[i] = s;
  }
  cf_array_round(y);
  return y;
}
