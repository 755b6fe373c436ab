/* reference_linalg.c: references of the dense linear-algebra ops in double precision, by
 * algorithms other than the CPU kernels' where TensorFlow's answer does not depend on the
 * algorithm (Gauss-Jordan for MatrixInverse and MatrixSolve, Cholesky-Crout by rows), and by
 * TensorFlow's own procedure where it does (Lu's pivots and packed factors, SLogDet's rules for
 * empty and singular matrices, Qr's Householder signs, here with explicit reflectors). */
#include <math.h>
#include <string.h>

#include "reference.h"

static int64_t batch_count(const cf_array_t *a) {
  int64_t b = 1;
  for (int d = 0; d < a->rank - 2; d++) b *= a->dims[d];
  return b;
}

/* Partially pivoted LU of a[n,n] in place (Eigen's PartialPivLU: largest magnitude, first on
 * ties, no swap for an all-zero column); perm[i] = the row of A now at row i. Returns swaps. */
static int lu_inplace(double *a, int64_t n, int64_t *perm) {
  int swaps = 0;
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t k = 0; k < n; k++) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
    if (a[p * n + k] != 0) {
      if (p != k) {
        for (int64_t j = 0; j < n; j++) {
          double t = a[k * n + j];
          a[k * n + j] = a[p * n + j];
          a[p * n + j] = t;
        }
        int64_t t = perm[k];
        perm[k] = perm[p];
        perm[p] = t;
        swaps++;
      }
      for (int64_t i = k + 1; i < n; i++) a[i * n + k] /= a[k * n + k];
    }
    for (int64_t i = k + 1; i < n; i++)
      for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= a[i * n + k] * a[k * n + j];
  }
  return swaps;
}

cf_array_t *cf_ref_lu(const cf_array_t *x, weft_dtype_t idx_type, cf_array_t **p) {
  int64_t n = x->dims[x->rank - 1], nb = batch_count(x);
  cf_array_t *lu = cf_array_copy(x);
  int64_t pd[WEFT_MAX_RANK];
  memcpy(pd, x->dims, sizeof pd);
  *p = cf_array_new(idx_type, x->rank - 1, pd);
  int64_t *perm = g_new(int64_t, n > 0 ? n : 1);
  for (int64_t b = 0; b < nb && n > 0; b++) {
    lu_inplace(lu->v + b * n * n, n, perm);
    for (int64_t i = 0; i < n; i++) (*p)->v[b * n + i] = (double)perm[i];
  }
  g_free(perm);
  cf_array_round(lu);
  return lu;
}

void cf_ref_slogdet(const cf_array_t *x, cf_array_t **sign, cf_array_t **logdet) {
  int64_t n = x->dims[x->rank - 1], nb = batch_count(x);
  *sign = cf_array_new(x->dtype, x->rank - 2, x->dims);
  *logdet = cf_array_new(x->dtype, x->rank - 2, x->dims);
  double *a = g_new(double, n * n > 0 ? n * n : 1);
  int64_t *perm = g_new(int64_t, n > 0 ? n : 1);
  for (int64_t b = 0; b < nb; b++) {
    double s = 1, l = 0;
    if (n > 0) {
      memcpy(a, x->v + b * n * n, sizeof(double) * (size_t)(n * n));
      s = lu_inplace(a, n, perm) % 2 ? -1 : 1;
      for (int64_t i = 0; i < n; i++) {
        l += log(fabs(a[i * n + i]));
        s *= a[i * n + i] < 0 ? -1 : 1;
      }
    }
    if (!isfinite(l)) {
      s = 0;
      l = l > 0 ? INFINITY : -INFINITY;
    }
    (*sign)->v[b] = s;
    (*logdet)->v[b] = l;
  }
  g_free(a);
  g_free(perm);
  cf_array_round(*sign);
  cf_array_round(*logdet);
}

cf_array_t *cf_ref_determinant(const cf_array_t *x) {
  cf_array_t *sign, *logdet;
  cf_ref_slogdet(x, &sign, &logdet);
  for (int64_t i = 0; i < sign->n; i++) sign->v[i] *= exp(logdet->v[i]);
  cf_array_free(logdet);
  cf_array_round(sign);
  return sign;
}

/* Solves op(A) X = B for each batch by Gauss-Jordan elimination with partial pivoting; false
 * when a pivot is exactly 0. a: [n,n], b: [n,k] -> x: [n,k]. */
static bool gauss_jordan(const double *a_in, bool adjoint, int64_t n, const double *b_in,
                         int64_t k, double *x) {
  int64_t w = n + k;
  double *m = g_new(double, n * w > 0 ? n * w : 1);
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++) m[i * w + j] = adjoint ? a_in[j * n + i] : a_in[i * n + j];
    for (int64_t j = 0; j < k; j++) m[i * w + n + j] = b_in[i * k + j];
  }
  bool ok = true;
  for (int64_t c = 0; c < n && ok; c++) {
    int64_t p = c;
    for (int64_t i = c + 1; i < n; i++)
      if (fabs(m[i * w + c]) > fabs(m[p * w + c])) p = i;
    if (m[p * w + c] == 0) {
      ok = false;
      break;
    }
    for (int64_t j = 0; j < w; j++) {
      double t = m[c * w + j];
      m[c * w + j] = m[p * w + j];
      m[p * w + j] = t;
    }
    double piv = m[c * w + c];
    for (int64_t j = 0; j < w; j++) m[c * w + j] /= piv;
    for (int64_t i = 0; i < n; i++) {
      if (i == c || m[i * w + c] == 0) continue;
      double f = m[i * w + c];
      for (int64_t j = 0; j < w; j++) m[i * w + j] -= f * m[c * w + j];
    }
  }
  for (int64_t i = 0; i < n && ok; i++)
    for (int64_t j = 0; j < k; j++) x[i * k + j] = m[i * w + n + j];
  g_free(m);
  return ok;
}

cf_array_t *cf_ref_matrix_inverse(const cf_array_t *x, bool adjoint) {
  int64_t n = x->dims[x->rank - 1], nb = batch_count(x);
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  double *id = g_new0(double, n * n > 0 ? n * n : 1);
  for (int64_t i = 0; i < n; i++) id[i * n + i] = 1;
  bool ok = true;
  for (int64_t b = 0; b < nb && n > 0 && ok; b++)
    ok = gauss_jordan(x->v + b * n * n, adjoint, n, id, n, y->v + b * n * n);
  g_free(id);
  if (!ok) {
    cf_array_free(y);
    return NULL;
  }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_matrix_solve(const cf_array_t *m, const cf_array_t *r, bool adjoint) {
  int64_t n = m->dims[m->rank - 1], k = r->dims[r->rank - 1], nb = batch_count(m);
  cf_array_t *y = cf_array_new_like(r, m->dtype);
  bool ok = true;
  for (int64_t b = 0; b < nb && n > 0 && k > 0 && ok; b++)
    ok = gauss_jordan(m->v + b * n * n, adjoint, n, r->v + b * n * k, k, y->v + b * n * k);
  if (!ok) {
    cf_array_free(y);
    return NULL;
  }
  cf_array_round(y);
  return y;
}

cf_array_t *cf_ref_cholesky(const cf_array_t *x) {
  int64_t n = x->dims[x->rank - 1], nb = batch_count(x);
  cf_array_t *l = cf_array_new_like(x, x->dtype);
  for (int64_t b = 0; b < nb; b++) {
    const double *a = x->v + b * n * n;
    double *o = l->v + b * n * n;
    bool ok = true;
    /* Row by row (Cholesky-Banachiewicz), from the lower triangle of a. */
    for (int64_t i = 0; i < n && ok; i++)
      for (int64_t j = 0; j <= i && ok; j++) {
        double s = a[i * n + j];
        for (int64_t q = 0; q < j; q++) s -= o[i * n + q] * o[j * n + q];
        if (i == j) {
          if (s <= 0) ok = false;
          else o[i * n + i] = sqrt(s);
        } else {
          o[i * n + j] = s / o[j * n + j];
        }
      }
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < n; j++) o[i * n + j] = j > i ? 0 : ok ? o[i * n + j] : NAN;
  }
  cf_array_round(l);
  return l;
}

cf_array_t *cf_ref_triangular_solve(const cf_array_t *m, const cf_array_t *r, bool lower,
                                    bool adjoint) {
  int rm = m->rank, rr = r->rank, rbatch;
  int64_t dims[WEFT_MAX_RANK];
  if (!cf_broadcast_shapes(rm - 2, m->dims, rr - 2, r->dims, &rbatch, dims)) return NULL;
  int64_t n = m->dims[rm - 1], k = r->dims[rr - 1];
  dims[rbatch] = n;
  dims[rbatch + 1] = k;
  cf_array_t *y = cf_array_new(m->dtype, rbatch + 2, dims);
  int64_t nb = cf_num_elements(rbatch, dims);
  for (int64_t b = 0; b < nb; b++) {
    const double *a = m->v + cf_broadcast_offset(b, rbatch, dims, rm - 2, m->dims) * n * n;
    const double *rhs = r->v + cf_broadcast_offset(b, rbatch, dims, rr - 2, r->dims) * n * k;
    double *x = y->v + b * n * k;
    /* The effective matrix T = op(A); only the named triangle of A is read. */
    bool tlower = lower != adjoint;
    for (int64_t c = 0; c < k; c++)
      for (int64_t t = 0; t < n; t++) {
        int64_t i = tlower ? t : n - 1 - t;
        double s = rhs[i * k + c];
        for (int64_t j = 0; j < n; j++) {
          if (tlower ? j >= i : j <= i) continue;
          s -= (adjoint ? a[j * n + i] : a[i * n + j]) * x[j * k + c];
        }
        x[i * k + c] = s / a[i * n + i];
      }
  }
  cf_array_round(y);
  return y;
}

void cf_ref_qr(const cf_array_t *x, bool full, cf_array_t **q_out, cf_array_t **r_out) {
  int rank = x->rank;
  int64_t m = x->dims[rank - 2], n = x->dims[rank - 1], p = m < n ? m : n;
  int64_t qc = full ? m : p, rr = full ? m : p, nb = batch_count(x);
  int64_t qd[WEFT_MAX_RANK], rd[WEFT_MAX_RANK];
  memcpy(qd, x->dims, sizeof qd);
  memcpy(rd, x->dims, sizeof rd);
  qd[rank - 1] = qc;
  rd[rank - 2] = rr;
  *q_out = cf_array_new(x->dtype, rank, qd);
  *r_out = cf_array_new(x->dtype, rank, rd);
  /* The smallest normal number of the dtype: a column tail whose squared norm is at most this
   * gets no reflection (Eigen's makeHouseholder). */
  double tiny = x->dtype == WEFT_DT_DOUBLE ? 2.2250738585072014e-308
                : x->dtype == WEFT_DT_HALF ? 6.103515625e-05 : 1.1754943508222875e-38;
  double *a = g_new(double, m * n > 0 ? m * n : 1), *qm = g_new(double, m * m > 0 ? m * m : 1);
  double *u = g_new(double, m > 0 ? m : 1);
  for (int64_t b = 0; b < nb; b++) {
    memcpy(a, x->v + b * m * n, sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m * m; i++) qm[i] = i % (m + 1) == 0 ? 1 : 0;
    for (int64_t k = 0; k < p; k++) {
      double tail = 0, x0 = a[k * n + k];
      for (int64_t i = k + 1; i < m; i++) tail += a[i * n + k] * a[i * n + k];
      if (tail <= tiny) continue;
      /* H = I - 2 u u^T / u^T u with u = x - alpha e1, alpha = -sign(x0) |x|. */
      double alpha = sqrt(x0 * x0 + tail) * (x0 >= 0 ? -1 : 1), uu = 0;
      for (int64_t i = k; i < m; i++) {
        u[i] = a[i * n + k] - (i == k ? alpha : 0);
        uu += u[i] * u[i];
      }
      for (int64_t j = 0; j < n; j++) { /* A = H A */
        double s = 0;
        for (int64_t i = k; i < m; i++) s += u[i] * a[i * n + j];
        for (int64_t i = k; i < m; i++) a[i * n + j] -= 2 * u[i] * s / uu;
      }
      for (int64_t i = 0; i < m; i++) { /* Q = Q H */
        double s = 0;
        for (int64_t j = k; j < m; j++) s += qm[i * m + j] * u[j];
        for (int64_t j = k; j < m; j++) qm[i * m + j] -= 2 * s * u[j] / uu;
      }
    }
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < qc; j++) (*q_out)->v[b * m * qc + i * qc + j] = qm[i * m + j];
    for (int64_t i = 0; i < rr; i++)
      for (int64_t j = 0; j < n; j++)
        (*r_out)->v[b * rr * n + i * n + j] = j >= i ? a[i * n + j] : 0;
  }
  g_free(a);
  g_free(qm);
  g_free(u);
  cf_array_round(*q_out);
  cf_array_round(*r_out);
}

cf_array_t *cf_ref_matrix_solve_ls(const cf_array_t *m, const cf_array_t *r, double l2) {
  int rank = m->rank;
  int64_t rows = m->dims[rank - 2], cols = m->dims[rank - 1], k = r->dims[rank - 1];
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, m->dims, sizeof dims);
  dims[rank - 2] = cols;
  dims[rank - 1] = k;
  cf_array_t *y = cf_array_new(m->dtype, rank, dims);
  if (rows == 0 || cols == 0 || k == 0) return y; /* zeros: no equations */
  bool over = rows >= cols;
  int64_t g = over ? cols : rows, nb = batch_count(m);
  double *gram = g_new(double, g * g), *rhs = g_new(double, g * k), *z = g_new(double, g * k);
  bool ok = true;
  for (int64_t b = 0; b < nb && ok; b++) {
    const double *a = m->v + b * rows * cols, *bb = r->v + b * rows * k;
    for (int64_t i = 0; i < g; i++)
      for (int64_t j = 0; j < g; j++) {
        double s = i == j ? l2 : 0;
        for (int64_t q = 0; q < (over ? rows : cols); q++)
          s += over ? a[q * cols + i] * a[q * cols + j] : a[i * cols + q] * a[j * cols + q];
        gram[i * g + j] = s;
      }
    /* Over: (A^T A + l2 I) X = A^T B. Under: X = A^T (A A^T + l2 I)^-1 B. */
    for (int64_t i = 0; i < g; i++)
      for (int64_t c = 0; c < k; c++) {
        double s = 0;
        if (over)
          for (int64_t q = 0; q < rows; q++) s += a[q * cols + i] * bb[q * k + c];
        else
          s = bb[i * k + c];
        rhs[i * k + c] = s;
      }
    ok = gauss_jordan(gram, false, g, rhs, k, z);
    double *x = y->v + b * cols * k;
    for (int64_t i = 0; i < cols && ok; i++)
      for (int64_t c = 0; c < k; c++) {
        double s = 0;
        if (over)
          s = z[i * k + c];
        else
          for (int64_t q = 0; q < rows; q++) s += a[q * cols + i] * z[q * k + c];
        x[i * k + c] = s;
      }
  }
  g_free(gram);
  g_free(rhs);
  g_free(z);
  if (!ok) {
    cf_array_free(y);
    return NULL;
  }
  cf_array_round(y);
  return y;
}
