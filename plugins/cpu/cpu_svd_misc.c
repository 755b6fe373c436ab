/* cpu_svd_misc.c: the CPU kernels of Svd, LinSpace, Diag, DiagPart, SparseTensorDenseAdd and
 * SparseToDense with TensorFlow's CPU semantics (svd_op_impl.h, sequence_ops.cc, diag_op.cc,
 * sparse_tensor_dense_add_op.cc and sparse_to_dense_op.cc): their checks, error messages and
 * results.
 * Svd is a one-sided (Hestenes) Jacobi SVD in plain C with double accumulation, one matrix at a
 * time (the matrices of real graphs are small and the plugin adds no LAPACK dependency). The
 * singular values come out sorted in descending order as Eigen returns them; the singular
 * vectors are unique only up to sign (and rotation within repeated values), as with any SVD. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static weft_status_t *scratch_doubles(weft_kernel_ctx_t *ctx, int64_t n, double **out) {
  return H->kernel_scratch(ctx, sizeof(double) * (size_t)(n > 0 ? n : 1), (void **)out);
}

/* ---------------------------------------------------------------------------------------------
 * Svd */

/* One-sided Jacobi on w (r x c, column-major: column j at w + j * r, r >= c): rotates pairs of
 * columns until every pair is orthogonal to working precision, applying the same rotations to
 * the columns of v (c x c, column-major, starts as the identity). Afterwards w = U diag(s) and
 * A = w v^T. */
static void jacobi_orthogonalize(double *w, int64_t r, int64_t c, double *v) {
  for (int sweep = 0; sweep < 100; sweep++) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < c; p++)
      for (int64_t q = p + 1; q < c; q++) {
        double *wp = w + p * r, *wq = w + q * r;
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < r; i++) {
          alpha += wp[i] * wp[i];
          beta += wq[i] * wq[i];
          gamma += wp[i] * wq[i];
        }
        if (gamma == 0 || !(fabs(gamma) > DBL_EPSILON * sqrt(alpha) * sqrt(beta))) continue;
        rotated = true;
        double zeta = (beta - alpha) / (2 * gamma);
        double t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
        double cs = 1 / sqrt(1 + t * t), sn = cs * t;
        for (int64_t i = 0; i < r; i++) {
          double a = wp[i], b = wq[i];
          wp[i] = cs * a - sn * b;
          wq[i] = sn * a + cs * b;
        }
        double *vp = v + p * c, *vq = v + q * c;
        for (int64_t i = 0; i < c; i++) {
          double a = vp[i], b = vq[i];
          vp[i] = cs * a - sn * b;
          vq[i] = sn * a + cs * b;
        }
      }
    if (!rotated) break;
  }
}

/* Fills columns kv..k-1 of q (dim x k, column-major; columns 0..kv-1 orthonormal) with an
 * orthonormal basis of what the first kv columns do not span: the trailing columns of the Q of
 * a Householder QR of those columns (Q e_j for j >= kv), so O(kv dim k) work. h (dim x kv) and
 * beta (kv) are scratch. */
static void complete_basis(double *q, int64_t dim, int64_t kv, int64_t k, double *h,
                           double *beta) {
  memcpy(h, q, sizeof(double) * (size_t)(dim * kv));
  for (int64_t j = 0; j < kv; j++) {
    double *v = h + j * dim + j;
    int64_t len = dim - j;
    double nrm = 0;
    for (int64_t i = 0; i < len; i++) nrm += v[i] * v[i];
    nrm = sqrt(nrm);
    double alpha = v[0] >= 0 ? -nrm : nrm;
    v[0] -= alpha;
    double vv = 0;
    for (int64_t i = 0; i < len; i++) vv += v[i] * v[i];
    beta[j] = vv > 0 ? 2 / vv : 0;
    for (int64_t l = j + 1; l < kv; l++) { /* the later columns: (I - beta v v^T) col */
      double *col = h + l * dim + j, d = 0;
      for (int64_t i = 0; i < len; i++) d += v[i] * col[i];
      d *= beta[j];
      for (int64_t i = 0; i < len; i++) col[i] -= d * v[i];
    }
  }
  for (int64_t t = kv; t < k; t++) {
    double *y = q + t * dim;
    for (int64_t i = 0; i < dim; i++) y[i] = i == t ? 1 : 0;
    for (int64_t j = kv - 1; j >= 0; j--) { /* Q e_t = H_0 H_1 ... H_{kv-1} e_t */
      const double *v = h + j * dim + j;
      double d = 0;
      for (int64_t i = 0; i < dim - j; i++) d += v[i] * y[j + i];
      d *= beta[j];
      for (int64_t i = 0; i < dim - j; i++) y[j + i] -= d * v[i];
    }
  }
}

typedef struct {
  double s;
  int64_t j;
} svd_order_t;

static int by_value_desc(const void *a, const void *b) {
  const svd_order_t *x = a, *y = b;
  if (x->s != y->s) return x->s > y->s ? -1 : 1;
  return x->j < y->j ? -1 : x->j > y->j;
}

static weft_status_t *k_svd(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, s_out, u_out, v_out;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input tensor 0 must have rank >= 2, got %d", x.rank);
  bool uv = weft__cpu_attr_bool(ctx, "compute_uv", true);
  bool full = weft__cpu_attr_bool(ctx, "full_matrices", false);
  int64_t m = x.dims[x.rank - 2], n = x.dims[x.rank - 1], p = m < n ? m : n, batch = 1;
  for (int d = 0; d < x.rank - 2; d++) batch *= x.dims[d];
  int64_t uc = full ? m : p, vc = full ? n : p;
  int64_t sd[WEFT_MAX_RANK], ud[WEFT_MAX_RANK], vd[WEFT_MAX_RANK];
  memcpy(sd, x.dims, sizeof sd);
  memcpy(ud, x.dims, sizeof ud);
  memcpy(vd, x.dims, sizeof vd);
  sd[x.rank - 2] = p;
  ud[x.rank - 1] = uc;
  vd[x.rank - 2] = n;
  vd[x.rank - 1] = vc;
  /* Without compute_uv, LinearAlgebraOp allocates u and v as empty [0] tensors, as the shape
   * function says. */
  const int64_t none[1] = {0};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank - 1, sd, &s_out));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, x.dtype, uv ? x.rank : 1, uv ? ud : none, &u_out));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 2, x.dtype, uv ? x.rank : 1, uv ? vd : none, &v_out));
  if (batch == 0) return NULL;
  if (m == 0 || n == 0) {
    /* An empty matrix: no singular values; full U and V are identities (TensorFlow's special
     * case: the other of U and V is empty then). */
    if (uv && full) {
      for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < m * m; i++)
          weft__cpu_store_f(x.dtype, u_out.data, b * m * m + i, i % (m + 1) == 0 ? 1 : 0);
        for (int64_t i = 0; i < n * n; i++)
          weft__cpu_store_f(x.dtype, v_out.data, b * n * n + i, i % (n + 1) == 0 ? 1 : 0);
      }
    }
    return NULL;
  }
  /* Work on the tall orientation: w = A (m >= n) or A^T (m < n), r x c with r >= c. */
  bool tall = m >= n;
  int64_t r = tall ? m : n, c = p;
  double *w, *v, *uq, *vq, *h, *beta;
  svd_order_t *order;
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, r * c, &w));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, c * c, &v));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, r * r, &uq)); /* left vectors of w, column-major */
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, c * c, &vq)); /* right vectors of w, sorted */
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, r * c, &h));
  WEFT_RETURN_IF_ERROR(scratch_doubles(ctx, c, &beta));
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(svd_order_t) * (size_t)c, (void **)&order));
  int64_t rk = full ? r : c; /* columns of the left vectors wanted */
  for (int64_t b = 0; b < batch; b++) {
    int64_t base = b * m * n;
    bool finite = true;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double a = weft__cpu_load_f(x.dtype, x.data, base + i * n + j);
        if (!isfinite(a)) finite = false;
        /* w column-major: tall: w[j][i] = A[i][j]; wide: w[i][j] = A[i][j] (w = A^T). */
        if (tall) w[j * r + i] = a;
        else w[i * r + j] = a;
      }
    if (!finite) {
      /* TensorFlow's kernel answers NaN everywhere for a matrix with a NaN or an infinity. */
      for (int64_t i = 0; i < p; i++) weft__cpu_store_f(x.dtype, s_out.data, b * p + i, NAN);
      if (uv) {
        for (int64_t i = 0; i < m * uc; i++)
          weft__cpu_store_f(x.dtype, u_out.data, b * m * uc + i, NAN);
        for (int64_t i = 0; i < n * vc; i++)
          weft__cpu_store_f(x.dtype, v_out.data, b * n * vc + i, NAN);
      }
      continue;
    }
    for (int64_t i = 0; i < c * c; i++) v[i] = i % (c + 1) == 0 ? 1 : 0;
    jacobi_orthogonalize(w, r, c, v);
    double smax = 0;
    for (int64_t j = 0; j < c; j++) {
      double nrm = 0;
      for (int64_t i = 0; i < r; i++) nrm += w[j * r + i] * w[j * r + i];
      order[j].s = sqrt(nrm);
      order[j].j = j;
      if (order[j].s > smax) smax = order[j].s;
    }
    qsort(order, (size_t)c, sizeof *order, by_value_desc);
    for (int64_t i = 0; i < p; i++) weft__cpu_store_f(x.dtype, s_out.data, b * p + i, order[i].s);
    if (!uv) continue;
    /* Left vectors: the normalised columns of w, completed to rk orthonormal columns where a
     * singular value is (numerically) zero or full matrices ask for more. */
    double floor_s = smax * (double)r * DBL_EPSILON;
    int64_t kv = 0; /* the columns with a non-zero singular value (sorted first) */
    while (kv < c && order[kv].s > floor_s && order[kv].s > 0) {
      const double *col = w + order[kv].j * r;
      for (int64_t i = 0; i < r; i++) uq[kv * r + i] = col[i] / order[kv].s;
      kv++;
    }
    complete_basis(uq, r, kv, rk, h, beta);
    for (int64_t k = 0; k < c; k++) memcpy(vq + k * c, v + order[k].j * c, sizeof(double) * c);
    /* tall: U = uq (m x rk), V = vq (n x n = c x c). wide: U = vq (m x m), V = uq (n x rk). */
    const double *uu = tall ? uq : vq, *vv = tall ? vq : uq;
    int64_t ul = tall ? r : c, vl = tall ? c : r; /* column lengths */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < uc; j++)
        weft__cpu_store_f(x.dtype, u_out.data, b * m * uc + i * uc + j, uu[j * ul + i]);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < vc; j++)
        weft__cpu_store_f(x.dtype, v_out.data, b * n * vc + i * vc + j, vv[j * vl + i]);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * LinSpace: start + i * ((stop - start) / (num - 1)) in T, the last element exactly stop. */

static weft_status_t *k_linspace(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], y;
  static const char *const names[] = {"start", "stop", "num"};
  for (int i = 0; i < 3; i++) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i, &in[i]));
    if (in[i].rank != 0) {
      char s[CPU_SHAPE_STR_LEN];
      weft__cpu_shape_str(in[i].rank, in[i].dims, s, sizeof s);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be a scalar, not shape %s",
                             names[i], s);
    }
  }
  int64_t num = weft__cpu_index_at(&in[2], 0);
  if (num <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Requires num > 0: %lld", (long long)num);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, in[0].dtype, 1, &num, &y));
  if (y.dtype == WEFT_DT_DOUBLE) {
    double start = *(const double *)in[0].data, stop = *(const double *)in[1].data;
    double *o = y.data;
    o[0] = start;
    if (num > 1) {
      double step = (stop - start) / (double)(num - 1);
      for (int64_t i = 1; i < num - 1; i++) o[i] = start + step * (double)i;
      o[num - 1] = stop;
    }
  } else {
    float start = *(const float *)in[0].data, stop = *(const float *)in[1].data;
    float *o = y.data;
    o[0] = start;
    if (num > 1) {
      float step = (stop - start) / (float)(num - 1);
      for (int64_t i = 1; i < num - 1; i++) o[i] = start + step * (float)i;
      o[num - 1] = stop;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Diag: input [d1..dk] -> out[i1..ik, j1..jk] = i == j ? in[i] : 0. */

static weft_status_t *k_diag(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input must be at least rank 1, got 0");
  if (2 * x.rank > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Diag of a rank-%d input would have "
                           "rank %d, more than %d", x.rank, 2 * x.rank, WEFT_MAX_RANK);
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x.dims, sizeof(int64_t) * (size_t)x.rank);
  memcpy(dims + x.rank, x.dims, sizeof(int64_t) * (size_t)x.rank);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 2 * x.rank, dims, &y));
  size_t es = weft__cpu_dtype_size(x.dtype);
  int64_t size = x.num_elements;
  if (y.num_elements == 0) return NULL;
  memset(y.data, 0, (size_t)y.num_elements * es);
  for (int64_t i = 0; i < size; i++)
    memcpy((char *)y.data + (size_t)(i * (size + 1)) * es, (const char *)x.data + (size_t)i * es,
           es);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * DiagPart: input [d1..dk, d1..dk] -> out[i1..ik] = in[i1..ik, i1..ik]. */

static weft_status_t *k_diag_part(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char s[CPU_SHAPE_STR_LEN];
  weft__cpu_shape_str(x.rank, x.dims, s, sizeof s);
  /* The spaces are TensorFlow's: its message continues a string literal across a line. */
  if (x.rank % 2 != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "The rank of the tensor should be                                    "
                           "      even and positive, got shape %s", s);
  int k = x.rank / 2;
  for (int i = 0; i < k; i++)
    if (x.dims[i] != x.dims[i + k])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Invalid shape %s: dimensions %d and %d do not match.", s, i, i + k);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, k, x.dims, &y));
  size_t es = weft__cpu_dtype_size(x.dtype);
  int64_t size = y.num_elements;
  for (int64_t i = 0; i < size; i++)
    memcpy((char *)y.data + (size_t)i * es, (const char *)x.data + (size_t)(i * (size + 1)) * es,
           es);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseTensorDenseAdd: sum = b, then sum[a_indices[i]] += a_values[i] (duplicates add up). */

static void add_at(weft_dtype_t dt, void *out, int64_t o, const void *vals, int64_t i) {
  switch (dt) {
#define ADD_CASE(D, C, U) \
  case D: ((C *)out)[o] = (C)((U)((C *)out)[o] + (U)((const C *)vals)[i]); break;
    CPU_NUMERIC_TYPES(ADD_CASE)
#undef ADD_CASE
    default: {
      double a = weft__cpu_load_f(dt, out, o), v = weft__cpu_load_f(dt, vals, i);
      weft__cpu_store_f(dt, out, o, (float)a + (float)v);
    }
  }
}

static weft_status_t *k_sparse_dense_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, val, shp, b, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &shp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &b));
  char s1[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
  if (ind.rank != 2) {
    weft__cpu_shape_str(ind.rank, ind.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input a_indices should be a matrix but received shape: %s", s1);
  }
  if (val.rank != 1 || shp.rank != 1) {
    weft__cpu_shape_str(val.rank, val.dims, s1, sizeof s1);
    weft__cpu_shape_str(shp.rank, shp.dims, s2, sizeof s2);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Inputs a_values and a_shape should be "
                           "vectors but received shapes: %s and %s", s1, s2);
  }
  int64_t nnz = ind.dims[0], ndims = ind.dims[1];
  if (val.dims[0] != nnz)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimensions %lld and %lld are not "
                           "compatible", (long long)nnz, (long long)val.dims[0]);
  if (shp.dims[0] != ndims)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimensions %lld and %lld are not "
                           "compatible", (long long)ndims, (long long)shp.dims[0]);
  if (shp.dims[0] != b.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Two operands have different ranks; "
                           "received: %lld and %d", (long long)shp.dims[0], b.rank);
  for (int i = 0; i < b.rank; i++) {
    int64_t d = weft__cpu_index_at(&shp, i);
    if (d != b.dims[i])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %d does not equal (no "
                             "broadcasting is supported): sparse side %lld vs dense side %lld",
                             i, (long long)d, (long long)b.dims[i]);
  }
  for (int64_t z = 0; z < nnz; z++)
    for (int64_t d = 0; d < ndims; d++) {
      int64_t idx = weft__cpu_index_at(&ind, z * ndims + d);
      if (idx < 0 || idx >= b.dims[d]) {
        /* TensorFlow prints the shape as an Eigen vector: its values separated by spaces. */
        char dims[CPU_SHAPE_STR_LEN] = "";
        size_t len = 0;
        for (int i = 0; i < b.rank && len < sizeof dims; i++)
          len += (size_t)snprintf(dims + len, sizeof dims - len, "%s%lld", i ? " " : "",
                                  (long long)b.dims[i]);
        return weft__cpu_error(
            ctx, WEFT_INVALID_ARGUMENT, "Sparse tensor has an invalid index on dimension %lld: "
            "a_indices(%lld,%lld) = %lld, dense tensor shape: %s", (long long)d, (long long)z,
            (long long)d, (long long)idx, dims);
      }
    }
  if (ndims < 1 || ndims > 5)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Only tensors with ranks between 1 and 5 "
                           "are currently supported.  Tensor rank: %lld", (long long)ndims);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, b.dtype, b.rank, b.dims, &y));
  if (y.num_elements > 0)
    memcpy(y.data, b.data, (size_t)y.num_elements * weft__cpu_dtype_size(b.dtype));
  for (int64_t z = 0; z < nnz; z++) {
    int64_t off = 0;
    for (int64_t d = 0; d < ndims; d++)
      off = off * b.dims[d] + weft__cpu_index_at(&ind, z * ndims + d);
    add_at(b.dtype, y.data, off, val.data, z);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * SparseToDense (sparse_to_dense_op.cc): default_value everywhere, then sparse_values (one per
 * index row, or one scalar for all) at sparse_indices. With validate_indices the rows must be in
 * bounds, strictly increasing in row-major order and distinct (SparseTensor::IndicesValid);
 * without, duplicates overwrite in order, but an index out of bounds still fails rather than
 * writing outside the output. */

/* "indices[z] = [a,b,...]": the row TensorFlow's messages name. */
static void index_row_str(const weft_tensor_view_t *ind, int64_t z, int64_t ndims, char *buf,
                          size_t len) {
  size_t at = (size_t)snprintf(buf, len, "indices[%lld] = [", (long long)z);
  for (int64_t d = 0; d < ndims && at < len; d++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", d ? "," : "",
                           (long long)weft__cpu_index_at(ind, z * ndims + d));
  if (at < len) snprintf(buf + at, len - at, "]");
}

static weft_status_t *k_sparse_to_dense(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, shp, val, def, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &shp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &def));
  char s1[CPU_SHAPE_STR_LEN];
  if (ind.rank > 2) {
    weft__cpu_shape_str(ind.rank, ind.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sparse_indices should be a scalar, "
                           "vector, or matrix, got shape %s", s1);
  }
  const int64_t nnz = ind.rank > 0 ? ind.dims[0] : 1, ndims = ind.rank > 1 ? ind.dims[1] : 1;
  if (shp.rank != 1) {
    weft__cpu_shape_str(shp.rank, shp.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output_shape should be a vector, got "
                           "shape %s", s1);
  }
  if (!(val.rank == 0 || (val.rank == 1 && val.dims[0] == nnz))) {
    weft__cpu_shape_str(val.rank, val.dims, s1, sizeof s1);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sparse_values has incorrect shape %s, "
                           "should be [] or [%lld]", s1, (long long)nnz);
  }
  if (def.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "default_value should be a scalar.");
  if (shp.num_elements != ndims)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output_shape has incorrect number of "
                           "elements: %lld should be: %lld", (long long)shp.num_elements,
                           (long long)ndims);
  if (ndims > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output_shape has %lld elements, more "
                           "than the %d dimensions a tensor may have", (long long)ndims,
                           WEFT_MAX_RANK);
  int64_t dims[WEFT_MAX_RANK], total = 1;
  for (int64_t d = 0; d < ndims; d++) {
    dims[d] = weft__cpu_index_at(&shp, d);
    if (dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                             (long long)dims[d]);
    if (dims[d] > 0 && total > INT64_MAX / dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output_shape has too many elements");
    total *= dims[d];
  }
  const bool validate = weft__cpu_attr_bool(ctx, "validate_indices", true);
  char row[CPU_SHAPE_STR_LEN], dstr[CPU_SHAPE_STR_LEN];
  size_t at = 0;
  dstr[0] = '\0';
  for (int64_t d = 0; d < ndims && at < sizeof dstr; d++)
    at += (size_t)snprintf(dstr + at, sizeof dstr - at, "%s%lld", d ? "," : "",
                           (long long)dims[d]);
  for (int64_t z = 0; z < nnz; z++) {
    int cmp = 0; /* this row against the one before: -1 below, 0 equal, 1 above */
    for (int64_t d = 0; d < ndims; d++) {
      int64_t v = weft__cpu_index_at(&ind, z * ndims + d);
      if (v < 0 || v >= dims[d]) {
        if (!validate)
          return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Indices are not valid (out of "
                                 "bounds).  Shape: [%s]", dstr);
        index_row_str(&ind, z, ndims, row, sizeof row);
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s is out of bounds: need 0 <= "
                               "index < [%s]", row, dstr);
      }
      if (z > 0 && cmp == 0) {
        int64_t p = weft__cpu_index_at(&ind, (z - 1) * ndims + d);
        cmp = v > p ? 1 : v < p ? -1 : 0;
      }
    }
    if (validate && z > 0 && cmp <= 0) {
      index_row_str(&ind, z, ndims, row, sizeof row);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s is %s", row,
                             cmp < 0 ? "out of order" : "repeated");
    }
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, def.dtype, (int)ndims, dims, &y));
  if (total == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_fill_from(ctx, &y, &def, 0));
  for (int64_t z = 0; z < nnz; z++) {
    int64_t off = 0;
    for (int64_t d = 0; d < ndims; d++)
      off = off * dims[d] + weft__cpu_index_at(&ind, z * ndims + d);
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, off, &val, val.rank ? z : 0, 1));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration: the dtypes of TensorFlow's CPU kernels. */

static const weft_dtype_t svd_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
/* diag_op.cc: no bfloat16 on the CPU. */
static const weft_dtype_t diag_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                          WEFT_DT_INT32, WEFT_DT_INT64};
static const weft_dtype_t sparse_add_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_INT8,  WEFT_DT_INT16,
    WEFT_DT_UINT8, WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_HALF, WEFT_DT_BFLOAT16};

/* output_shape decides the allocation, so it is read on the host. */
static const char *const sparse_to_dense_host[] = {"output_shape", NULL};

weft_status_t *weft__cpu_register_svd_misc(const weft_registrar_t *reg) {
#define N(a) (sizeof a / sizeof a[0])
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "Svd", .compute = k_svd, .type_attr = "T", .dtypes = svd_types,
       .n_dtypes = N(svd_types)},
      {.op = "LinSpace", .compute = k_linspace, .type_attr = "T", .dtypes = svd_types,
       .n_dtypes = N(svd_types)},
      {.op = "Diag", .compute = k_diag, .type_attr = "T", .dtypes = diag_types,
       .n_dtypes = N(diag_types)},
      {.op = "DiagPart", .compute = k_diag_part, .type_attr = "T", .dtypes = diag_types,
       .n_dtypes = N(diag_types)},
      {.op = "SparseTensorDenseAdd", .compute = k_sparse_dense_add, .type_attr = "T",
       .dtypes = sparse_add_types, .n_dtypes = N(sparse_add_types)},
      {.op = "SparseToDense", .compute = k_sparse_to_dense, .type_attr = "T",
       .dtypes = weft__cpu_all_types, .n_dtypes = weft__cpu_n_all_types,
       .host_memory = sparse_to_dense_host},
  };
  return weft__cpu_register_specs(reg, specs, N(specs));
#undef N
}
