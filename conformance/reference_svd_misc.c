/* reference_svd_misc.c: double-precision references of Svd's singular values (the square roots
 * of the eigenvalues of A^T A or A A^T by the cyclic Jacobi eigenvalue method: another route than
 * the kernel's one-sided Jacobi SVD), LinSpace, Diag, DiagPart and SparseTensorDenseAdd. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

static int desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x > y ? -1 : x < y;
}

/* The eigenvalues of the symmetric g (k x k, destroyed) into ev, by cyclic Jacobi rotations. */
static void sym_eigenvalues(double *g, int64_t k, double *ev) {
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0, tot = 0;
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j < k; j++) {
        tot += g[i * k + j] * g[i * k + j];
        if (i != j) off += g[i * k + j] * g[i * k + j];
      }
    if (off <= 1e-32 * tot) break;
    for (int64_t p = 0; p < k; p++)
      for (int64_t q = p + 1; q < k; q++) {
        if (g[p * k + q] == 0) continue;
        double theta = (g[q * k + q] - g[p * k + p]) / (2 * g[p * k + q]);
        double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int64_t i = 0; i < k; i++) { /* columns p, q */
          double a = g[i * k + p], b = g[i * k + q];
          g[i * k + p] = c * a - s * b;
          g[i * k + q] = s * a + c * b;
        }
        for (int64_t j = 0; j < k; j++) { /* rows p, q */
          double a = g[p * k + j], b = g[q * k + j];
          g[p * k + j] = c * a - s * b;
          g[q * k + j] = s * a + c * b;
        }
      }
  }
  for (int64_t i = 0; i < k; i++) ev[i] = g[i * k + i];
}

cf_array_t *cf_ref_singular_values(const cf_array_t *x) {
  int64_t m = x->dims[x->rank - 2], n = x->dims[x->rank - 1], p = m < n ? m : n;
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x->dims, sizeof dims);
  dims[x->rank - 2] = p;
  cf_array_t *s = cf_array_new(x->dtype, x->rank - 1, dims);
  int64_t batch = m * n > 0 ? x->n / (m * n) : 0;
  double *g = g_new0(double, p * p + 1), *ev = g_new0(double, p + 1);
  for (int64_t b = 0; b < batch; b++) {
    const double *a = x->v + b * m * n;
    /* g = A^T A (n <= m) or A A^T (m < n): p x p. */
    for (int64_t i = 0; i < p; i++)
      for (int64_t j = 0; j < p; j++) {
        double acc = 0;
        if (n <= m)
          for (int64_t r = 0; r < m; r++) acc += a[r * n + i] * a[r * n + j];
        else
          for (int64_t c = 0; c < n; c++) acc += a[i * n + c] * a[j * n + c];
        g[i * p + j] = acc;
      }
    sym_eigenvalues(g, p, ev);
    for (int64_t i = 0; i < p; i++) ev[i] = ev[i] > 0 ? sqrt(ev[i]) : 0;
    qsort(ev, (size_t)p, sizeof *ev, desc);
    memcpy(s->v + b * p, ev, sizeof(double) * (size_t)p);
  }
  g_free(g);
  g_free(ev);
  cf_array_round(s);
  return s;
}

cf_array_t *cf_ref_linspace(weft_dtype_t dt, double start, double stop, int64_t num) {
  cf_array_t *y = cf_array_new(dt, 1, &num);
  y->v[0] = start;
  if (num > 1) {
    /* In T, as TensorFlow computes it: the step rounded, each product and sum rounded. */
    double step = cf_round_to_dtype(dt, (stop - start) / (double)(num - 1));
    for (int64_t i = 1; i < num - 1; i++)
      y->v[i] = cf_round_to_dtype(dt, start + cf_round_to_dtype(dt, step * (double)i));
    y->v[num - 1] = stop;
  }
  return y;
}

cf_array_t *cf_ref_diag(const cf_array_t *x) {
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  memcpy(dims + x->rank, x->dims, sizeof(int64_t) * (size_t)x->rank);
  cf_array_t *y = cf_array_new(x->dtype, 2 * x->rank, dims);
  for (int64_t i = 0; i < x->n; i++) y->v[i * (x->n + 1)] = x->v[i];
  return y;
}

cf_array_t *cf_ref_diag_part(const cf_array_t *x) {
  int k = x->rank / 2;
  cf_array_t *y = cf_array_new(x->dtype, k, x->dims);
  for (int64_t i = 0; i < y->n; i++) y->v[i] = x->v[i * (y->n + 1)];
  return y;
}

cf_array_t *cf_ref_sparse_dense_add(const cf_array_t *ind, const cf_array_t *val,
                                    const cf_array_t *b) {
  cf_array_t *y = cf_array_copy(b);
  int64_t nnz = ind->dims[0], nd = ind->dims[1];
  for (int64_t z = 0; z < nnz; z++) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; d++) off = off * b->dims[d] + (int64_t)ind->v[z * nd + d];
    y->v[off] = cf_round_to_dtype(b->dtype, y->v[off] + val->v[z]);
  }
  return y;
}
