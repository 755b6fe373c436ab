/* reference_array_extra.c: references of the array ops of cases_array_extra.c (ReverseV2,
 * ReverseSequence, Roll, the MatrixDiag family, MatrixBandPart, SpaceToBatchND, BatchToSpaceND,
 * SpaceToDepth, DepthToSpace, Where, NthElement, TopKV2, Unique, InvertPermutation), written
 * from TensorFlow's documented definitions one output element at a time (coordinates in,
 * coordinates out), independently of how the kernels walk memory. */
#include <math.h>
#include <string.h>

#include "reference.h"

static void unravel(int64_t i, int rank, const int64_t *dims, int64_t *c) {
  for (int d = rank - 1; d >= 0; d--) {
    c[d] = dims[d] > 0 ? i % dims[d] : 0;
    i = dims[d] > 0 ? i / dims[d] : 0;
  }
}

static int64_t ravel(int rank, const int64_t *dims, const int64_t *c) {
  int64_t i = 0;
  for (int d = 0; d < rank; d++) i = i * dims[d] + c[d];
  return i;
}

cf_array_t *cf_ref_reverse(const cf_array_t *x, const bool *axes) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  int64_t c[WEFT_MAX_RANK];
  for (int64_t i = 0; i < x->n; i++) {
    unravel(i, x->rank, x->dims, c);
    for (int d = 0; d < x->rank; d++)
      if (axes[d]) c[d] = x->dims[d] - 1 - c[d];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, c));
  }
  return y;
}

cf_array_t *cf_ref_roll(const cf_array_t *x, const int64_t *shift) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  int64_t c[WEFT_MAX_RANK];
  for (int64_t i = 0; i < x->n; i++) {
    unravel(i, x->rank, x->dims, c);
    for (int d = 0; d < x->rank; d++) {
      int64_t n = x->dims[d];
      c[d] = ((c[d] + shift[d]) % n + n) % n; /* input element i lands here */
    }
    cf_copy_value(y, ravel(x->rank, x->dims, c), x, i);
  }
  return y;
}

cf_array_t *cf_ref_reverse_sequence(const cf_array_t *x, const int64_t *lens, int seq_dim,
                                    int batch_dim) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  int64_t c[WEFT_MAX_RANK];
  for (int64_t i = 0; i < x->n; i++) {
    unravel(i, x->rank, x->dims, c);
    int64_t len = lens[c[batch_dim]];
    if (c[seq_dim] < len) c[seq_dim] = len - 1 - c[seq_dim];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, c));
  }
  return y;
}

/* The position of element (r, c) of diagonal d = c - r in its packed row, or -1. */
static int64_t diag_pos(int64_t m, int64_t n, int64_t max_len, int64_t d, int64_t r, int64_t c,
                        bool super_right, bool sub_right) {
  int64_t len = fmin(m + fmin(0, d), n - fmax(0, d));
  bool right = d >= 0 ? super_right : sub_right;
  int64_t off = right ? max_len - len : 0;
  return off + (d >= 0 ? r : c);
}

cf_array_t *cf_ref_matrix_diag(const cf_array_t *diag, int64_t lower, int64_t upper, int64_t rows,
                               int64_t cols, const cf_array_t *pad, bool super_right,
                               bool sub_right) {
  int64_t nd = upper - lower + 1, max_len = diag->dims[diag->rank - 1];
  int brank = diag->rank - (nd > 1 ? 2 : 1);
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, diag->dims, sizeof(int64_t) * (size_t)brank);
  dims[brank] = rows;
  dims[brank + 1] = cols;
  cf_array_t *y = cf_array_new(diag->dtype, brank + 2, dims);
  for (int64_t i = 0; i < y->n; i++) {
    int64_t c = i % cols, r = (i / cols) % rows, b = i / cols / rows, d = c - r;
    if (d < lower || d > upper) {
      if (pad) cf_copy_value(y, i, pad, 0);
      continue;
    }
    int64_t p = diag_pos(rows, cols, max_len, d, r, c, super_right, sub_right);
    cf_copy_value(y, i, diag, (b * nd + (upper - d)) * max_len + p);
  }
  return y;
}

cf_array_t *cf_ref_matrix_diag_part(const cf_array_t *x, int64_t lower, int64_t upper,
                                    const cf_array_t *pad, bool super_right, bool sub_right) {
  int64_t m = x->dims[x->rank - 2], n = x->dims[x->rank - 1], nd = upper - lower + 1;
  int64_t max_len = fmin(m + fmin(upper, 0), n - fmax(lower, 0));
  int brank = x->rank - 2, rank = brank;
  int64_t dims[WEFT_MAX_RANK], batch = 1;
  for (int d = 0; d < brank; d++) {
    dims[d] = x->dims[d];
    batch *= x->dims[d];
  }
  if (nd > 1) dims[rank++] = nd;
  dims[rank++] = max_len;
  cf_array_t *y = cf_array_new(x->dtype, rank, dims);
  for (int64_t i = 0; i < y->n && pad; i++) cf_copy_value(y, i, pad, 0);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t r = 0; r < m; r++)
      for (int64_t c = 0; c < n; c++) {
        int64_t d = c - r;
        if (d < lower || d > upper) continue;
        int64_t p = diag_pos(m, n, max_len, d, r, c, super_right, sub_right);
        cf_copy_value(y, (b * nd + (upper - d)) * max_len + p, x, (b * m + r) * n + c);
      }
  return y;
}

cf_array_t *cf_ref_matrix_set_diag(const cf_array_t *x, const cf_array_t *diag, int64_t lower,
                                   int64_t upper, bool super_right, bool sub_right) {
  int64_t m = x->dims[x->rank - 2], n = x->dims[x->rank - 1], nd = upper - lower + 1;
  int64_t max_len = diag->dims[diag->rank - 1];
  cf_array_t *y = cf_array_copy(x);
  for (int64_t i = 0; i < y->n; i++) {
    int64_t c = i % n, r = (i / n) % m, b = i / n / m, d = c - r;
    if (d < lower || d > upper) continue;
    int64_t p = diag_pos(m, n, max_len, d, r, c, super_right, sub_right);
    cf_copy_value(y, i, diag, (b * nd + (upper - d)) * max_len + p);
  }
  return y;
}

cf_array_t *cf_ref_band_part(const cf_array_t *x, int64_t lo, int64_t up) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  int64_t m = x->dims[x->rank - 2], n = x->dims[x->rank - 1];
  for (int64_t i = 0; i < x->n; i++) {
    int64_t c = i % n, r = (i / n) % m;
    if ((lo < 0 || r - c <= lo) && (up < 0 || c - r <= up)) cf_copy_value(y, i, x, i);
  }
  return y;
}

/* SpaceToBatchND: output batch index = block offset (row-major over the block) * batch + b. */
cf_array_t *cf_ref_space_to_batch(const cf_array_t *x, int m, const int64_t *block,
                                  const int64_t *pads) {
  int64_t dims[WEFT_MAX_RANK], prod = 1;
  for (int i = 0; i < m; i++) prod *= block[i];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[0] = x->dims[0] * prod;
  for (int i = 0; i < m; i++)
    dims[1 + i] = (x->dims[1 + i] + pads[2 * i] + pads[2 * i + 1]) / block[i];
  cf_array_t *y = cf_array_new(x->dtype, x->rank, dims);
  int64_t c[WEFT_MAX_RANK], src[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, y->dims, c);
    memcpy(src, c, sizeof c);
    int64_t rest = c[0] / x->dims[0];
    src[0] = c[0] % x->dims[0];
    bool inside = true;
    for (int k = m - 1; k >= 0; k--) {
      int64_t off = rest % block[k];
      rest /= block[k];
      src[1 + k] = c[1 + k] * block[k] + off - pads[2 * k];
      inside = inside && src[1 + k] >= 0 && src[1 + k] < x->dims[1 + k];
    }
    if (inside) cf_copy_value(y, i, x, ravel(x->rank, x->dims, src));
  }
  return y;
}

cf_array_t *cf_ref_batch_to_space(const cf_array_t *x, int m, const int64_t *block,
                                  const int64_t *crops) {
  int64_t dims[WEFT_MAX_RANK], prod = 1;
  for (int i = 0; i < m; i++) prod *= block[i];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[0] = x->dims[0] / prod;
  for (int i = 0; i < m; i++)
    dims[1 + i] = x->dims[1 + i] * block[i] - crops[2 * i] - crops[2 * i + 1];
  cf_array_t *y = cf_array_new(x->dtype, x->rank, dims);
  int64_t c[WEFT_MAX_RANK], src[WEFT_MAX_RANK];
  for (int64_t i = 0; i < y->n; i++) {
    unravel(i, y->rank, y->dims, c);
    memcpy(src, c, sizeof c);
    int64_t bi = 0;
    for (int k = 0; k < m; k++) {
      int64_t u = c[1 + k] + crops[2 * k];
      bi = bi * block[k] + u % block[k];
      src[1 + k] = u / block[k];
    }
    src[0] = bi * dims[0] + c[0];
    cf_copy_value(y, i, x, ravel(x->rank, x->dims, src));
  }
  return y;
}

cf_array_t *cf_ref_space_to_depth(const cf_array_t *x, int64_t bs, bool to_depth) {
  int64_t n = x->dims[0], h = x->dims[1], w = x->dims[2], ch = x->dims[3];
  int64_t dims[4] = {n, to_depth ? h / bs : h * bs, to_depth ? w / bs : w * bs,
                     to_depth ? ch * bs * bs : ch / (bs * bs)};
  cf_array_t *y = cf_array_new(x->dtype, 4, dims);
  int64_t c[4];
  for (int64_t i = 0; i < x->n; i++) {
    unravel(i, 4, x->dims, c);
    int64_t o[4];
    if (to_depth) {
      o[0] = c[0]; o[1] = c[1] / bs; o[2] = c[2] / bs;
      o[3] = ((c[1] % bs) * bs + c[2] % bs) * ch + c[3];
    } else {
      int64_t oc = dims[3], blk = c[3] / oc;
      o[0] = c[0]; o[1] = c[1] * bs + blk / bs; o[2] = c[2] * bs + blk % bs; o[3] = c[3] % oc;
    }
    cf_copy_value(y, ravel(4, dims, o), x, i);
  }
  return y;
}

cf_array_t *cf_ref_where(const cf_array_t *x) {
  int64_t count = 0;
  for (int64_t i = 0; i < x->n; i++) count += x->v[i] != 0;
  int64_t dims[2] = {count, x->rank};
  cf_array_t *y = cf_array_new(WEFT_DT_INT64, 2, dims);
  int64_t c[WEFT_MAX_RANK], k = 0;
  for (int64_t i = 0; i < x->n; i++) {
    if (x->v[i] == 0) continue; /* NaN is true */
    unravel(i, x->rank, x->dims, c);
    for (int d = 0; d < x->rank; d++) y->v[k * x->rank + d] = (double)c[d];
    k++;
  }
  return y;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : (x > y ? 1 : 0);
}

cf_array_t *cf_ref_nth_element(const cf_array_t *x, int64_t n, bool reverse) {
  int64_t cols = x->dims[x->rank - 1];
  cf_array_t *y = cf_array_new(x->dtype, x->rank - 1, x->dims);
  double *row = g_new(double, cols > 0 ? cols : 1);
  for (int64_t r = 0; r < y->n; r++) {
    memcpy(row, x->v + r * cols, sizeof(double) * (size_t)cols);
    qsort(row, (size_t)cols, sizeof(double), cmp_double);
    y->v[r] = row[reverse ? cols - 1 - n : n];
  }
  g_free(row);
  return y;
}

/* TopKV2, sorted: the k largest of each row in descending order, equal values by index. */
void cf_ref_top_k(const cf_array_t *x, int64_t k, weft_dtype_t index_type, cf_array_t **values,
                  cf_array_t **indices) {
  int64_t cols = x->dims[x->rank - 1], dims[WEFT_MAX_RANK];
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[x->rank - 1] = k;
  *values = cf_array_new(x->dtype, x->rank, dims);
  *indices = cf_array_new(index_type, x->rank, dims);
  int64_t rows = cols > 0 ? x->n / cols : 0;
  bool *taken = g_new0(bool, cols > 0 ? cols : 1);
  for (int64_t r = 0; r < rows && k > 0; r++) {
    memset(taken, 0, sizeof(bool) * (size_t)cols);
    for (int64_t j = 0; j < k; j++) {
      int64_t best = -1;
      for (int64_t c = 0; c < cols; c++)
        if (!taken[c] && (best < 0 || x->v[r * cols + c] > x->v[r * cols + best])) best = c;
      taken[best] = true;
      (*values)->v[r * k + j] = x->v[r * cols + best];
      (*indices)->v[r * k + j] = (double)best;
    }
  }
  g_free(taken);
}

static bool same_value(const cf_array_t *x, int64_t a, int64_t b) {
  if (x->s)
    return x->s[a]->len == x->s[b]->len && memcmp(x->s[a]->str, x->s[b]->str, x->s[a]->len) == 0;
  return x->v[a] == x->v[b]; /* 0 == -0; NaN equals nothing */
}

void cf_ref_unique(const cf_array_t *x, weft_dtype_t idx_type, cf_array_t **y, cf_array_t **idx,
                   cf_array_t **count) {
  int64_t n = x->n, ny = 0;
  int64_t *first = g_new(int64_t, n > 0 ? n : 1);
  *idx = cf_array_new(idx_type, 1, &n);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = 0;
    while (j < ny && !same_value(x, first[j], i)) j++;
    if (j == ny) first[ny++] = i;
    (*idx)->v[i] = (double)j;
  }
  *y = cf_array_new(x->dtype, 1, &ny);
  *count = cf_array_new(idx_type, 1, &ny);
  for (int64_t j = 0; j < ny; j++) cf_copy_value(*y, j, x, first[j]);
  for (int64_t i = 0; i < n; i++) (*count)->v[(int64_t)(*idx)->v[i]] += 1;
  g_free(first);
}

cf_array_t *cf_ref_invert_permutation(const cf_array_t *x) {
  cf_array_t *y = cf_array_new_like(x, x->dtype);
  for (int64_t i = 0; i < x->n; i++) y->v[(int64_t)x->v[i]] = (double)i;
  return y;
}
