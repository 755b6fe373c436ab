/* cpu_edit_distance.c: the CPU kernel of TensorFlow's EditDistance (tf.edit_distance), with its
 * semantics and error messages (tensorflow/core/kernels/edit_distance_op.cc): two sparse tensors
 * of rank R hold variable-length sequences along their last dimension; the output, of rank R - 1
 * and each dim the larger of the two, holds the Levenshtein distance of the hypothesis and truth
 * sequences at each position, divided by the truth's length when normalize is set. A position
 * with a hypothesis but no truth gives its length (inf when normalized), one with a truth but no
 * hypothesis its length (1 when normalized), one with neither 0. Values of any dtype compare by
 * equality (strings bytewise, NaN equal to nothing). */
#include <math.h>
#include <stdlib.h>

#include "cpu_internal.h"

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

/* A sparse operand: indices [n, rank], values [n], dense shape [rank]. */
typedef struct sparse {
  const char *name; /* "hypothesis" or "truth" */
  weft_tensor_view_t ind, val, shp;
  int64_t dims[WEFT_MAX_RANK];
} sparse_t;

static weft_status_t *check_ranks(weft_kernel_ctx_t *ctx, const sparse_t *h, const sparse_t *t) {
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
#define SHAPE(v) weft__cpu_shape_str((v).rank, (v).dims, a, sizeof a)
  const sparse_t *ops[2] = {h, t};
  for (int k = 0; k < 2; k++)
    if (ops[k]->ind.rank != 2)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s_indices should be a matrix, but "
                             "got shape: %s", ops[k]->name, SHAPE(ops[k]->ind));
  for (int k = 0; k < 2; k++)
    if (ops[k]->val.rank != 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s_values should be a vector, but "
                             "got shape: %s", ops[k]->name, SHAPE(ops[k]->val));
  for (int k = 0; k < 2; k++)
    if (ops[k]->shp.rank != 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s_shape should be a vector, but "
                             "got shape: %s", ops[k]->name, SHAPE(ops[k]->shp));
#undef SHAPE
  if (h->shp.num_elements != h->ind.dims[1])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected hypothesis_shape.NumElements == "
                           "#cols(hypothesis_indices), their shapes are: %s and %s",
                           weft__cpu_shape_str(1, h->shp.dims, a, sizeof a),
                           weft__cpu_shape_str(2, h->ind.dims, b, sizeof b));
  if (t->shp.num_elements < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input SparseTensors must have rank at "
                           "least 2, but truth_shape rank is: %lld",
                           (long long)t->shp.num_elements);
  if (t->shp.num_elements != t->ind.dims[1])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected truth_shape.NumElements == "
                           "#cols(truth_indices), their shapes are: %s and %s",
                           weft__cpu_shape_str(1, t->shp.dims, a, sizeof a),
                           weft__cpu_shape_str(2, t->ind.dims, b, sizeof b));
  if (t->shp.num_elements != h->shp.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected truth and hypothesis to have "
                           "matching ranks, but their shapes are: %s and %s",
                           weft__cpu_shape_str(1, t->shp.dims, a, sizeof a),
                           weft__cpu_shape_str(1, h->shp.dims, b, sizeof b));
  for (int k = 0; k < 2; k++)
    if (ops[k]->val.num_elements != ops[k]->ind.dims[0])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected %s_values.NumElements == "
                             "#rows(%s_indices), their shapes are: %s and %s", ops[k]->name,
                             ops[k]->name, weft__cpu_shape_str(1, ops[k]->val.dims, a, sizeof a),
                             weft__cpu_shape_str(2, ops[k]->ind.dims, b, sizeof b));
  if (t->shp.num_elements > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "truth_shape has %lld elements, more than "
                           "the %d dimensions a tensor may have", (long long)t->shp.num_elements,
                           WEFT_MAX_RANK);
  return NULL;
}

/* The dense shape, then every index row within it and after the row before (the kernel walks
 * both operands in row-major order, as TensorFlow's assumes). */
static weft_status_t *check_sparse(weft_kernel_ctx_t *ctx, sparse_t *s, int rank) {
  for (int d = 0; d < rank; d++) {
    s->dims[d] = weft__cpu_index_at(&s->shp, d);
    if (s->dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                             (long long)s->dims[d]);
  }
  const int64_t n = s->ind.dims[0];
  char row[CPU_SHAPE_STR_LEN], shape[CPU_SHAPE_STR_LEN];
  for (int64_t z = 0; z < n; z++) {
    int cmp = z > 0 ? 0 : 1; /* against the row before: -1 below, 0 equal, 1 above */
    int64_t v[WEFT_MAX_RANK];
    bool out = false;
    for (int d = 0; d < rank; d++) {
      v[d] = weft__cpu_index_at(&s->ind, z * rank + d);
      if (v[d] < 0 || v[d] >= s->dims[d]) out = true;
      if (cmp == 0) {
        int64_t p = weft__cpu_index_at(&s->ind, (z - 1) * rank + d);
        cmp = v[d] > p ? 1 : v[d] < p ? -1 : 0;
      }
    }
    if (out || cmp <= 0) {
      weft__cpu_shape_str(rank, v, row, sizeof row);
      if (out)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s_indices[%lld] = %s is out of "
                               "bounds: need 0 <= index < %s", s->name, (long long)z, row,
                               weft__cpu_shape_str(rank, s->dims, shape, sizeof shape));
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s_indices[%lld] = %s is %s", s->name,
                             (long long)z, row, cmp < 0 ? "out of order" : "repeated");
    }
  }
  return NULL;
}

/* Whether rows i of a and j of b agree on the first `dims` coordinates (-1, 0, 1 as a's row is
 * before, at or after b's). */
static int cmp_group(const sparse_t *a, int64_t i, const sparse_t *b, int64_t j, int rank) {
  for (int d = 0; d < rank - 1; d++) {
    int64_t x = weft__cpu_index_at(&a->ind, i * rank + d);
    int64_t y = weft__cpu_index_at(&b->ind, j * rank + d);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

/* The end of the group (rows sharing the first rank - 1 coordinates) that starts at row i. */
static int64_t group_end(const sparse_t *s, int64_t i, int rank) {
  int64_t e = i + 1;
  while (e < s->ind.dims[0] && cmp_group(s, e, s, i, rank) == 0) e++;
  return e;
}

/* The flat output position of row i's group. */
static int64_t group_pos(const sparse_t *s, int64_t i, int rank, const int64_t *out_dims) {
  int64_t pos = 0;
  for (int d = 0; d < rank - 1; d++)
    pos = pos * out_dims[d] + weft__cpu_index_at(&s->ind, i * rank + d);
  return pos;
}

/* Levenshtein distance of values [h0, h1) of h and [t0, t1) of t; row holds h1 - h0 + 1. */
static int64_t levenshtein(const sparse_t *h, int64_t h0, int64_t h1, const sparse_t *t,
                           int64_t t0, int64_t t1, int64_t *row) {
  const int64_t m = h1 - h0;
  for (int64_t j = 0; j <= m; j++) row[j] = j;
  for (int64_t i = t0; i < t1; i++) {
    int64_t diag = row[0];
    row[0] = i - t0 + 1;
    for (int64_t j = 1; j <= m; j++) {
      bool nan = false;
      bool same = weft__cpu_cmp_elems(&t->val, i, &h->val, h0 + j - 1, &nan) == 0 && !nan;
      int64_t best = diag + (same ? 0 : 1);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = row[j];
      row[j] = best;
    }
  }
  return row[m];
}

static weft_status_t *k_edit_distance(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  sparse_t h = {.name = "hypothesis"}, t = {.name = "truth"};
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &h.ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &h.val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &h.shp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &t.ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 4, &t.val));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 5, &t.shp));
  WEFT_RETURN_IF_ERROR(check_ranks(ctx, &h, &t));
  const int rank = (int)t.shp.num_elements;
  WEFT_RETURN_IF_ERROR(check_sparse(ctx, &h, rank));
  WEFT_RETURN_IF_ERROR(check_sparse(ctx, &t, rank));
  int64_t out_dims[WEFT_MAX_RANK], total = 1;
  for (int d = 0; d < rank - 1; d++) {
    out_dims[d] = h.dims[d] > t.dims[d] ? h.dims[d] : t.dims[d];
    if (out_dims[d] > 0 && total > INT64_MAX / out_dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "the output shape has too many "
                             "elements");
    total *= out_dims[d];
  }
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_FLOAT, rank - 1, out_dims, &y));
  float *out = y.data;
  for (int64_t i = 0; i < total; i++) out[i] = 0;
  const bool normalize = weft__cpu_attr_bool(ctx, "normalize", true);
  /* The longest hypothesis group bounds the DP row; every group is at most all rows. */
  int64_t *row = malloc(sizeof(int64_t) * (size_t)(h.ind.dims[0] + 1));
  if (!row) return oom(ctx);
  const int64_t nh = h.ind.dims[0], nt = t.ind.dims[0];
  int64_t i = 0, j = 0;
  while (i < nh || j < nt) {
    const int c = i >= nh ? 1 : j >= nt ? -1 : cmp_group(&h, i, &t, j, rank);
    if (c == 0) { /* both */
      const int64_t ie = group_end(&h, i, rank), je = group_end(&t, j, rank);
      /* In float, as TensorFlow's: the quotient rounded once. */
      float d = (float)levenshtein(&h, i, ie, &t, j, je, row);
      out[group_pos(&t, j, rank, out_dims)] = normalize ? d / (float)(je - j) : d;
      i = ie;
      j = je;
    } else if (c < 0) { /* a hypothesis without a truth */
      const int64_t ie = group_end(&h, i, rank);
      out[group_pos(&h, i, rank, out_dims)] = normalize ? INFINITY : (float)(ie - i);
      i = ie;
    } else { /* a truth without a hypothesis */
      const int64_t je = group_end(&t, j, rank);
      out[group_pos(&t, j, rank, out_dims)] = normalize ? 1.0f : (float)(je - j);
      j = je;
    }
  }
  free(row);
  return NULL;
}

weft_status_t *weft__cpu_register_edit_distance(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "EditDistance", .compute = k_edit_distance},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
