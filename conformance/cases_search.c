/* cases_search.c: conformance cases of the set, search and index ops (ListDiff, LowerBound,
 * UpperBound, Bucketize, UnravelIndex, Cross) and of Einsum. Each reference is computed here
 * from the op's definition by the plainest means (membership by scanning, bounds by counting,
 * coordinates by enumerating every position, the cross product through the Levi-Civita symbol,
 * einsum by visiting every assignment of values to its labels) rather than the kernels'
 * algorithms. Error cases check TensorFlow's messages. */
#include <math.h>
#include <string.h>

#include "reference.h"

static cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt, cf_rng_t *rng) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_rng(c, rng);
  return c;
}

static cf_array_t *ints(weft_dtype_t dt, int rank, const int64_t *dims, const int64_t *v) {
  cf_array_t *a = cf_array_new(dt, rank, dims);
  for (int64_t i = 0; i < a->n; i++) a->v[i] = (double)v[i];
  return a;
}

/* Whole numbers in [lo, hi] for every dtype: duplicates and exact comparisons. */
static cf_array_t *small(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims, int lo,
                         int hi) {
  if (!cf_dtype_is_signed(dt) && lo < 0) lo = 0;
  cf_array_t *a = cf_array_new(dt, rank, dims);
  for (int64_t i = 0; i < a->n; i++) a->v[i] = (double)cf_rng_int(rng, lo, hi);
  return a;
}

static void run_error(cf_run_ctx_t *ctx, cf_case_t *c, weft_code_t code, const char *msg) {
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, code, msg);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * ListDiff: out = the x[i] equal to no y[j], in x's order; idx = their positions i. */

static void emit_list_diff(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *name;
    int64_t nx, ny;
    int lo, hi;
  } cases[] = {
      {"dups_kept", 12, 4, 0, 6}, {"all_removed", 5, 8, 1, 2}, {"none_removed", 6, 3, 0, 9},
      {"empty_x", 0, 3, 0, 5},    {"empty_y", 7, 0, 0, 5},     {"negatives", 10, 5, -5, 5},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    weft_dtype_t it = k % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *x = small(&rng, dt, 1, &cases[k].nx, cases[k].lo, cases[k].hi);
    cf_array_t *y = small(&rng, dt, 1, &cases[k].ny, cases[k].lo, cases[k].hi);
    if (cases[k].ny > 0 && strcmp(cases[k].name, "none_removed") == 0)
      for (int64_t j = 0; j < y->n; j++) y->v[j] = cases[k].hi + 1; /* absent from x */
    int64_t kept = 0;
    for (int64_t i = 0; i < x->n; i++) {
      bool found = false;
      for (int64_t j = 0; j < y->n; j++) found = found || x->v[i] == y->v[j];
      kept += !found;
    }
    cf_array_t *out = cf_array_new(dt, 1, &kept), *idx = cf_array_new(it, 1, &kept);
    for (int64_t i = 0, at = 0; i < x->n; i++) {
      bool found = false;
      for (int64_t j = 0; j < y->n; j++) found = found || x->v[i] == y->v[j];
      if (found) continue;
      out->v[at] = x->v[i];
      idx->v[at++] = (double)i;
    }
    cf_case_input(c, x);
    cf_case_input(c, y);
    cf_case_attr_type(c, "out_idx", it);
    cf_case_expect(c, out);
    cf_case_expect(c, idx);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c;
  if (cf_dtype_is_float(dt)) {
    /* NaN equals nothing, itself included: every NaN of x stays. */
    c = new_case(op, "nan_kept", dt, &rng);
    static const int64_t n = 5, m = 3;
    cf_array_t *x = cf_array_new(dt, 1, &n), *y = cf_array_new(dt, 1, &m);
    const double xv[5] = {NAN, 1, NAN, 2, 3}, yv[3] = {NAN, 2, 5};
    memcpy(x->v, xv, sizeof xv);
    memcpy(y->v, yv, sizeof yv);
    static const int64_t kept = 4, kept_idx[4] = {0, 1, 2, 4};
    cf_array_t *out = cf_array_new(dt, 1, &kept);
    for (int i = 0; i < 4; i++) out->v[i] = xv[kept_idx[i]];
    cf_case_input(c, x);
    cf_case_input(c, y);
    cf_case_expect(c, out);
    cf_case_expect(c, ints(WEFT_DT_INT32, 1, &kept, kept_idx));
    cf_run_case(ctx, c);
  }
  /* A matrix x: refused by the kernel (its shape unknown to the shape function). */
  c = new_case(op, "error_x_matrix", dt, &rng);
  int64_t d2[2] = {2, 2}, d1 = 2;
  int xi = cf_case_input(c, small(&rng, dt, 2, d2, 0, 3));
  c->unknown_shape[xi] = true;
  cf_case_input(c, small(&rng, dt, 1, &d1, 0, 3));
  cf_case_expect(c, NULL);
  run_error(ctx, c, WEFT_INVALID_ARGUMENT, "x should be a 1D vector.");
}

/* ---------------------------------------------------------------------------------------------
 * LowerBound / UpperBound: per row, the count of sorted elements < v (lower) or <= v (upper). */

static void sort_rows(cf_array_t *a) {
  const int64_t cols = a->dims[1];
  for (int64_t r = 0; r < a->dims[0]; r++)
    for (int64_t i = 1; i < cols; i++) /* insertion sort: the inputs are tiny */
      for (int64_t j = i; j > 0 && a->v[r * cols + j - 1] > a->v[r * cols + j]; j--) {
        double t = a->v[r * cols + j];
        a->v[r * cols + j] = a->v[r * cols + j - 1];
        a->v[r * cols + j - 1] = t;
      }
}

static void emit_bound(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  const bool upper = strcmp(op, "UpperBound") == 0;
  static const struct {
    const char *name;
    int64_t rows, n, m;
  } cases[] = {{"rows2", 2, 5, 3}, {"one_row_long", 1, 33, 17}, {"empty_sorted", 3, 0, 2},
               {"empty_values", 3, 4, 0}, {"no_rows", 0, 4, 2}};
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    weft_dtype_t ot = k % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    int64_t ds[2] = {cases[k].rows, cases[k].n}, dv[2] = {cases[k].rows, cases[k].m};
    cf_array_t *s = small(&rng, dt, 2, ds, -4, 9), *v = small(&rng, dt, 2, dv, -5, 10);
    sort_rows(s);
    cf_array_t *want = cf_array_new(ot, 2, dv);
    for (int64_t r = 0; r < dv[0]; r++)
      for (int64_t i = 0; i < dv[1]; i++) {
        int64_t count = 0;
        for (int64_t j = 0; j < ds[1]; j++) {
          double e = s->v[r * ds[1] + j], x = v->v[r * dv[1] + i];
          count += upper ? e <= x : e < x;
        }
        want->v[r * dv[1] + i] = (double)count;
      }
    cf_case_input(c, s);
    cf_case_input(c, v);
    if (ot != WEFT_DT_INT32) cf_case_attr_type(c, "out_type", ot);
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_rows_differ", dt, &rng);
  int64_t ds[2] = {2, 3}, dv[2] = {3, 1};
  cf_case_input(c, small(&rng, dt, 2, ds, 0, 3));
  cf_case_input(c, small(&rng, dt, 2, dv, 0, 3));
  run_error(ctx, c, WEFT_INVALID_ARGUMENT, "Leading dim_size of both tensors must match.");
}

/* ---------------------------------------------------------------------------------------------
 * Bucketize: the count of boundaries <= each value. */

static void emit_bucketize(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const float bounds[] = {-3.5f, 0.0f, 0.0f, 2.0f, 7.25f, 100.0f};
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int nb;
  } cases[] = {{"matrix", 2, {4, 5}, 6}, {"rank3", 3, {2, 3, 2}, 6},
               {"no_boundaries", 1, {5}, 0}, {"empty", 2, {0, 3}, 6}};
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    cf_array_t *x = cf_gen_uniform(&rng, dt, cases[k].rank, cases[k].dims, -6, 120);
    if (cf_dtype_is_int(dt))
      for (int64_t i = 0; i < x->n; i++) x->v[i] = (double)(int64_t)x->v[i];
    if (x->n > 3) x->v[0] = 0, x->v[1] = 2, x->v[2] = 100; /* on boundaries */
    cf_array_t *want = cf_array_new(WEFT_DT_INT32, cases[k].rank, cases[k].dims);
    for (int64_t i = 0; i < x->n; i++) {
      int count = 0;
      for (int b = 0; b < cases[k].nb; b++) count += (double)bounds[b] <= x->v[i];
      want->v[i] = count;
    }
    cf_case_input(c, x);
    cf_case_attr_floats(c, "boundaries", bounds, cases[k].nb);
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_unsorted", dt, &rng);
  static const float unsorted[] = {1.0f, 3.0f, 2.0f};
  int64_t d = 3;
  cf_case_input(c, cf_gen_uniform(&rng, dt, 1, &d, 0, 5));
  cf_case_attr_floats(c, "boundaries", unsorted, 3);
  run_error(ctx, c, WEFT_INVALID_ARGUMENT, "Expected sorted boundaries");
}

/* ---------------------------------------------------------------------------------------------
 * UnravelIndex: the coordinates of each flat index, found by walking every position of an
 * array of shape dims in row-major order. */

static void emit_unravel_index(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *name;
    int rank; /* of indices */
    int64_t n;
    int64_t idx[6];
    int nd;
    int64_t dims[3];
    const char *error;
  } cases[] = {
      {"vector", 1, 3, {22, 41, 37}, 2, {7, 6}, NULL},
      {"scalar", 0, 1, {321}, 3, {6, 7, 8}, NULL},
      {"rank3_dims", 1, 6, {0, 1, 5, 23, 12, 17}, 3, {2, 3, 4}, NULL},
      {"empty_indices", 1, 0, {0}, 2, {3, 4}, NULL},
      {"one_dim", 1, 4, {3, 0, 2, 1}, 1, {4}, NULL},
      {"error_too_large", 1, 2, {5, 12}, 2, {3, 4}, "index out of bounds"},
      {"error_negative", 1, 2, {-1, 2}, 2, {3, 4}, "index out of bounds"},
      {"error_zero_dim", 1, 1, {0}, 2, {3, 0}, "Input dims cannot contain a dim of zero"},
      {"error_negative_dim", 1, 1, {0}, 2, {3, -2}, "Input dims cannot be negative. Got dim = -2 "
       "at index 1"},
      {"error_overflow", 1, 1, {0}, 3, {1 << 22, 1 << 21, 1 << 21},
       "Input dims product is causing integer overflow"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    int64_t nd = cases[k].nd;
    cf_case_input(c, ints(dt, cases[k].rank, &cases[k].n, cases[k].idx));
    cf_case_input(c, ints(dt, 1, &nd, cases[k].dims));
    if (cases[k].error) {
      run_error(ctx, c, WEFT_INVALID_ARGUMENT, cases[k].error);
      continue;
    }
    int64_t od[2] = {nd, cases[k].n};
    cf_array_t *want = cf_array_new(dt, cases[k].rank == 0 ? 1 : 2, od);
    for (int64_t i = 0; i < cases[k].n; i++) {
      int64_t coord[3] = {0, 0, 0};
      for (int64_t pos = 0; pos < cases[k].idx[i]; pos++) /* count up to the index */
        for (int64_t d = nd - 1; d >= 0; d--) {
          if (++coord[d] < cases[k].dims[d]) break;
          coord[d] = 0;
        }
      for (int64_t d = 0; d < nd; d++) want->v[d * cases[k].n + i] = (double)coord[d];
    }
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_matrix_indices", dt, &rng);
  int64_t d2[2] = {2, 1}, nd = 2;
  static const int64_t iv[2] = {1, 2}, dv[2] = {3, 4};
  int xi = cf_case_input(c, ints(dt, 2, d2, iv));
  c->unknown_shape[xi] = true;
  cf_case_input(c, ints(dt, 1, &nd, dv));
  run_error(ctx, c, WEFT_INVALID_ARGUMENT, "The indices can only be scalar or vector, got");
}

/* ---------------------------------------------------------------------------------------------
 * Cross: c_i = sum over j, k of eps_ijk a_j b_k. */

static int levi_civita(int i, int j, int k) {
  if (i == j || j == k || i == k) return 0;
  return ((j - i + 3) % 3 == 1) ? 1 : -1; /* (0,1,2) and its rotations are even */
}

static void emit_cross(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
  } cases[] = {{"vector", 1, {3}}, {"rows", 2, {5, 3}}, {"batched", 3, {2, 4, 3}},
               {"empty", 2, {0, 3}}};
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    /* Non-negative results for unsigned dtypes would need chosen inputs; small values wrap
     * the same way in the reference (cf_round_to_dtype) as in the kernel. */
    cf_array_t *a = small(&rng, dt, cases[k].rank, cases[k].dims, -4, 4);
    cf_array_t *b = small(&rng, dt, cases[k].rank, cases[k].dims, -4, 4);
    if (cf_dtype_is_float(dt))
      for (int64_t i = 0; i < a->n; i++) a->v[i] += 0.5, b->v[i] -= 0.25;
    cf_array_t *want = cf_array_new(dt, cases[k].rank, cases[k].dims);
    for (int64_t v = 0; v < a->n / 3; v++)
      for (int i = 0; i < 3; i++) {
        double s = 0;
        for (int j = 0; j < 3; j++)
          for (int l = 0; l < 3; l++) s += levi_civita(i, j, l) * a->v[3 * v + j] * b->v[3 * v + l];
        want->v[3 * v + i] = cf_round_to_dtype(dt, s);
      }
    cf_case_input(c, a);
    cf_case_input(c, b);
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  int64_t d4[2] = {2, 4}, d3[2] = {2, 3}, d33[2] = {3, 3};
  cf_case_t *c = new_case(op, "error_last_dim_4", dt, &rng);
  cf_case_input(c, small(&rng, dt, 2, d4, 0, 3));
  cf_case_input(c, small(&rng, dt, 2, d4, 0, 3));
  run_error(ctx, c, WEFT_INVALID_ARGUMENT, "Dimension must be 3 but is 4");
  c = new_case(op, "error_kernel_last_dim_4", dt, &rng);
  for (int i = 0; i < 2; i++)
    c->unknown_shape[cf_case_input(c, small(&rng, dt, 2, d4, 0, 3))] = true;
  run_error(ctx, c, WEFT_FAILED_PRECONDITION,
            "Cross-products are only defined for 3-element vectors.");
  c = new_case(op, "error_shapes_differ", dt, &rng);
  c->unknown_shape[cf_case_input(c, small(&rng, dt, 2, d3, 0, 3))] = true;
  c->unknown_shape[cf_case_input(c, small(&rng, dt, 2, d33, 0, 3))] = true;
  run_error(ctx, c, WEFT_INVALID_ARGUMENT, "Both inputs must be of same shape: [2,3] vs. [3,3]");
}

/* ---------------------------------------------------------------------------------------------
 * Einsum. The reference expands "..." into one label per broadcast dim (right-aligned), then
 * visits every assignment of values to all labels: each adds the product of the inputs'
 * elements there (a dim of 1 under "..." read at 0) to the output element those values name;
 * an output element whose repeated labels differ is never visited and stays 0. */

#define REF_LABELS 64

typedef struct ref_operand {
  int rank;
  int label[WEFT_MAX_RANK]; /* per axis */
} ref_operand_t;

/* Subscript text [b, e) of an operand of rank `rank` (-1: the output, ell_rank dims under
 * "..."). */
static void ref_axes(const char *b, const char *e, int rank, int ell_total, ref_operand_t *o) {
  int named = 0;
  for (const char *p = b; p < e; p++) named += (*p != '.');
  const int ell = rank < 0 ? ell_total : rank - named;
  o->rank = 0;
  for (const char *p = b; p < e; p++) {
    if (*p == '.') {
      for (int t = 0; t < ell; t++) o->label[o->rank++] = 52 + ell_total - ell + t;
      p += 2;
    } else {
      o->label[o->rank++] = *p >= 'a' ? *p - 'a' : 26 + *p - 'A';
    }
  }
}

static cf_array_t *ref_einsum(const char *eq, cf_array_t *const *in, int n_in, weft_dtype_t dt) {
  const char *arrow = strstr(eq, "->");
  const char *comma = strchr(eq, ',');
  const char *bounds[2][2] = {{eq, comma && comma < arrow ? comma : arrow}, {comma + 1, arrow}};
  int ell_total = 0;
  for (int i = 0; i < n_in; i++) {
    int named = 0;
    bool ell = false;
    for (const char *p = bounds[i][0]; p < bounds[i][1]; p++) {
      if (*p == '.') ell = true, p += 2;
      else named++;
    }
    if (ell && in[i]->rank - named > ell_total) ell_total = in[i]->rank - named;
  }
  ref_operand_t ops[3];
  int64_t size[REF_LABELS];
  for (int l = 0; l < REF_LABELS; l++) size[l] = 0;
  bool used[REF_LABELS] = {false};
  for (int i = 0; i < n_in; i++) {
    ref_axes(bounds[i][0], bounds[i][1], in[i]->rank, ell_total, &ops[i]);
    for (int a = 0; a < ops[i].rank; a++) {
      int l = ops[i].label[a];
      used[l] = true;
      if (in[i]->dims[a] > size[l] || (in[i]->dims[a] == 0)) size[l] = in[i]->dims[a];
    }
  }
  ref_axes(arrow + 2, eq + strlen(eq), -1, ell_total, &ops[2]);
  int64_t od[WEFT_MAX_RANK];
  for (int a = 0; a < ops[2].rank; a++) od[a] = size[ops[2].label[a]];
  cf_array_t *out = cf_array_new(dt, ops[2].rank, od);
  int labels[REF_LABELS], nl = 0;
  int64_t total = 1;
  for (int l = 0; l < REF_LABELS; l++)
    if (used[l]) labels[nl++] = l, total *= size[l];
  int64_t val[REF_LABELS] = {0};
  for (int64_t t = 0; t < total; t++) {
    int64_t rest = t;
    for (int k = nl - 1; k >= 0; k--) {
      val[labels[k]] = rest % size[labels[k]];
      rest /= size[labels[k]];
    }
    double prod = 1;
    for (int i = 0; i < n_in; i++) {
      int64_t off = 0;
      for (int a = 0; a < ops[i].rank; a++)
        off = off * in[i]->dims[a] + (in[i]->dims[a] == 1 ? 0 : val[ops[i].label[a]]);
      prod *= in[i]->v[off];
    }
    int64_t off = 0;
    for (int a = 0; a < ops[2].rank; a++) off = off * od[a] + val[ops[2].label[a]];
    out->v[off] += prod;
  }
  for (int64_t i = 0; i < out->n; i++) out->v[i] = cf_round_to_dtype(dt, out->v[i]);
  return out;
}

static void emit_einsum(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *name, *eq;
    int n_in;
    int rank[2];
    int64_t dims[2][4];
    const char *error; /* NULL: a valid case */
  } cases[] = {
      {"matmul", "ij,jk->ik", 2, {2, 2}, {{3, 4}, {4, 5}}, NULL},
      {"batch_matmul", "bij,bjk->bik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, NULL},
      {"outer", "i,j->ij", 2, {1, 1}, {{4}, {3}}, NULL},
      {"dot", "i,i->", 2, {1, 1}, {{7}, {7}}, NULL},
      {"transpose", "ij->ji", 1, {2}, {{3, 5}}, NULL},
      {"sum_all", "ijk->", 1, {3}, {{2, 3, 4}}, NULL},
      {"sum_rows", "ij->i", 1, {2}, {{4, 6}}, NULL},
      {"trace", "ii->", 1, {2}, {{4, 4}}, NULL},
      {"diag_part", "ii->i", 1, {2}, {{5, 5}}, NULL},
      {"diag_inflate", "i->ii", 1, {1}, {{4}}, NULL},
      {"batch_diag", "bii->bi", 1, {3}, {{2, 3, 3}}, NULL},
      {"repeated_both", "iij,jk->ik", 2, {3, 2}, {{3, 3, 2}, {2, 4}}, NULL},
      {"summed_one_side", "ijk,kl->il", 2, {3, 2}, {{2, 3, 4}, {4, 5}}, NULL},
      {"permuted_out", "abc,cd->dba", 2, {3, 2}, {{2, 3, 4}, {4, 2}}, NULL},
      {"upper_labels", "aB,Bc->ca", 2, {2, 2}, {{3, 2}, {2, 4}}, NULL},
      {"ellipsis_matmul", "...ij,...jk->...ik", 2, {4, 3}, {{2, 1, 3, 4}, {5, 4, 2}}, NULL},
      {"ellipsis_transpose", "...ij->...ji", 1, {3}, {{2, 3, 4}}, NULL},
      {"ellipsis_empty", "...ij,...jk->...ik", 2, {2, 2}, {{3, 4}, {4, 2}}, NULL},
      {"ellipsis_middle", "i...j,j...->...i", 2, {3, 2}, {{2, 3, 4}, {4, 3}}, NULL},
      {"zero_contracted", "ij,jk->ik", 2, {2, 2}, {{3, 0}, {0, 2}}, NULL},
      {"zero_output", "ij,jk->ik", 2, {2, 2}, {{0, 3}, {3, 2}}, NULL},
      {"spaces", "ij, jk -> ik", 2, {2, 2}, {{2, 3}, {3, 2}}, NULL},
      {"many_batches", "bij,bjk->bik", 2, {3, 3}, {{9, 5, 6}, {9, 6, 7}}, NULL},
      {"broadcast_batches", "...ij,...jk->...ik", 2, {4, 4}, {{3, 1, 4, 5}, {1, 2, 5, 3}}, NULL},
      {"error_no_arrow", "ij,jk", 2, {2, 2}, {{2, 3}, {3, 2}},
       "Expecting exactly one '->' in einsum equation: ij,jk"},
      {"error_dim_mismatch", "ij,jk->ik", 2, {2, 2}, {{2, 3}, {4, 5}},
       "Expected dimension 3 at axis 0 of the input shaped [4,5] but got dimension 4"},
      {"error_rank", "ijk->i", 1, {2}, {{2, 3}}, "Expected input 0 to have rank 3 but got: 2"},
      {"error_bad_char", "i1->i", 1, {2}, {{2, 3}}, "Invalid character '1' in einsum equation"},
      {"error_output_label", "ij->k", 1, {2}, {{2, 3}},
       "Einsum output subscripts for equation 'ij->k' has label 'k' which is not present in the "
       "input subscripts"},
      {"error_two_ellipses", "...i...->i", 1, {2}, {{2, 3}},
       "Expected at most one ellipsis (...), but found 6 periods (.) in the input subscript: "
       "...i..."},
      {"error_periods", "..i.->i", 1, {2}, {{2, 3}},
       "Periods found outside of ellipsis in subscript: ..i."},
      {"error_n_mismatch", "ij,jk->ik", 1, {2}, {{2, 3}},
       "Expected 2 inputs for equation ij,jk->ik but got: 1"},
      {"error_no_output_ellipsis", "...ij->ij", 1, {3}, {{2, 3, 4}},
       "Output contains 1 broadcasting dimension(s) but no ellipsis"},
      {"error_three_inputs", "i,i,i->i", 2, {1, 1}, {{2}, {2}},
       "Expecting 1 or 2 input subscripts in equation 'i,i,i->i' but got: 3"},
      /* The same checks in the kernel, the shapes unknown while building. */
      {"error_kernel_rank", "ijk->i", 1, {2}, {{2, 3}},
       "Expected input 0 to have rank 3 but got: 2"},
      {"error_kernel_dim_mismatch", "ij,jk->ik", 2, {2, 2}, {{2, 3}, {4, 5}},
       "Expected dimension 3 at axis 0 of the input shaped [4,5] but got dimension 4"},
      {"error_kernel_no_broadcast", "...i,...i->...i", 2, {2, 2}, {{2, 3}, {3, 3}},
       "Dimensions 2 and 3 under '...' cannot broadcast"},
      {"error_kernel_no_output_ellipsis", "...ij->ij", 1, {3}, {{2, 3, 4}},
       "Output contains 1 broadcasting dimension(s) but no ellipsis"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[k].name, dt, &rng);
    cf_array_t *in[2];
    for (int i = 0; i < cases[k].n_in; i++) {
      in[i] = cf_gen_uniform(&rng, dt, cases[k].rank[i], cases[k].dims[i], -1, 1);
      const int at = cf_case_input(c, in[i]);
      c->unknown_shape[at] = g_str_has_prefix(cases[k].name, "error_kernel");
    }
    int len = cases[k].n_in;
    cf_case_args(c, 1, &len);
    cf_case_attr_string(c, "equation", cases[k].eq);
    cf_case_attr_int(c, "N", cases[k].n_in);
    if (cases[k].error) {
      run_error(ctx, c, WEFT_INVALID_ARGUMENT, cases[k].error);
      continue;
    }
    char *eq = g_strdup(cases[k].eq);
    size_t w = 0;
    for (size_t r = 0; eq[r]; r++)
      if (eq[r] != ' ') eq[w++] = eq[r];
    eq[w] = '\0';
    cf_case_expect(c, ref_einsum(eq, in, cases[k].n_in, dt));
    g_free(eq);
    c->tol = cf_tol_scale(c->tol, 4); /* sums of up to 12 products */
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t bucketize_dtypes[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_FLOAT,
                                                WEFT_DT_DOUBLE, WEFT_DT_INVALID};
static const weft_dtype_t index_dtypes[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_search[] = {
    {"ListDiff", cf_dtypes_numeric, emit_list_diff, NULL},
    {"LowerBound", cf_dtypes_numeric, emit_bound, NULL},
    {"UpperBound", cf_dtypes_numeric, emit_bound, NULL},
    {"Bucketize", bucketize_dtypes, emit_bucketize, NULL},
    {"UnravelIndex", index_dtypes, emit_unravel_index, "Tidx"},
    {"Cross", cf_dtypes_real_int, emit_cross, NULL},
    {"Einsum", cf_dtypes_float, emit_einsum, NULL},
    {NULL, NULL, NULL, NULL},
};
