/* cases_scatter.c: conformance cases of the scatter, segment and partition ops (ScatterUpdate,
 * ScatterAdd/Sub/Mul/Div/Min/Max on variables; ScatterNd; ScatterNdUpdate/Add/Sub on variables;
 * TensorScatterUpdate/Add/Sub; SegmentSum/Mean/Prod/Min/Max; UnsortedSegmentSum/Prod/Min/Max;
 * SparseSegmentSum/Mean/SqrtN(WithNumSegments);
 * DynamicPartition) over every dtype their kernels take. The references (here, in double, each
 * update rounded to the dtype in order so that duplicate indices accumulate as the kernels do)
 * follow TensorFlow's documented semantics: empty sorted segments are 0 (1 for Prod); empty
 * unsorted segments the identity (the dtype's highest for Min, lowest for Max); negative
 * unsorted ids are dropped. Error cases check TensorFlow's INVALID_ARGUMENT messages for
 * out-of-range indices and ids, unsorted ids and mismatched shapes. */
#include <math.h>
#include <string.h>

#include "reference.h"

typedef enum { OP_ASSIGN, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MIN, OP_MAX } sc_op_t;

static sc_op_t op_kind(const char *op) {
  static const struct {
    const char *suffix;
    sc_op_t kind;
  } map[] = {{"Update", OP_ASSIGN}, {"Add", OP_ADD}, {"Sub", OP_SUB}, {"Mul", OP_MUL},
             {"Div", OP_DIV},       {"Min", OP_MIN}, {"Max", OP_MAX}};
  for (size_t i = 0; i < G_N_ELEMENTS(map); i++)
    if (g_str_has_suffix(op, map[i].suffix)) return map[i].kind;
  return OP_ADD; /* ScatterNd */
}

/* a op b in the dtype (integer division truncates). */
static double apply(sc_op_t k, double a, double b, weft_dtype_t dt) {
  double r = b;
  switch (k) {
    case OP_ASSIGN: r = b; break;
    case OP_ADD: r = a + b; break;
    case OP_SUB: r = a - b; break;
    case OP_MUL: r = a * b; break;
    case OP_DIV: r = cf_dtype_is_int(dt) ? trunc(a / b) : a / b; break;
    case OP_MIN: r = b < a ? b : a; break;
    case OP_MAX: r = a < b ? b : a; break;
  }
  return cf_round_to_dtype(dt, r);
}

/* dst[di + k] = dst[di + k] op src[si + k * step], k < n. */
static void ref_store(sc_op_t k, cf_array_t *dst, int64_t di, const cf_array_t *src, int64_t si,
                      int64_t n, int64_t step) {
  for (int64_t j = 0; j < n; j++) {
    if (k == OP_ASSIGN)
      cf_copy_value(dst, di + j, src, si + j * step);
    else
      dst->v[di + j] = apply(k, dst->v[di + j], src->v[si + j * step], dst->dtype);
  }
}

/* Small values, so that products of duplicates stay exact; nonzero divisors for Div. */
static cf_array_t *values(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims,
                          bool nonzero) {
  cf_gen_t g = {CF_GEN_UNIFORM, cf_dtype_is_signed(dt) ? -6 : 0, 6};
  if (dt == WEFT_DT_BOOL) g.kind = CF_GEN_BOOL;
  if (dt == WEFT_DT_STRING) g.kind = CF_GEN_ARANGE;
  if (nonzero) g = (cf_gen_t){CF_GEN_NONZERO, cf_dtype_is_signed(dt) ? -4 : 1, 4};
  cf_array_t *a = cf_gen_array(rng, dt, rank, dims, g);
  /* Integers: whole numbers; floats keep a fraction. */
  for (int64_t i = 0; a->v && cf_dtype_is_int(dt) && i < a->n; i++) {
    a->v[i] = cf_round_to_dtype(dt, round(a->v[i]));
    if (nonzero && a->v[i] == 0) a->v[i] = 1;
  }
  return a;
}

static cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt, cf_rng_t *rng) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_rng(c, rng);
  return c;
}

static cf_array_t *idx(weft_dtype_t it, int rank, const int64_t *dims, const int64_t *v) {
  cf_array_t *a = cf_array_new(it, rank, dims);
  for (int64_t i = 0; i < a->n; i++) a->v[i] = (double)v[i];
  return a;
}

static void expect_error(cf_run_ctx_t *ctx, cf_case_t *c, const char *msg) {
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * GatherNd: out[i..., :] = params[indices[i..., 0], ..., indices[i..., depth - 1], ...]. */

static void emit_gather_nd(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "Tparams", dt)) return;
  static const struct {
    const char *name;
    int rp, ri;
    int64_t dp[3], di[3];
    int64_t iv[8];
    const char *error; /* NULL: a valid case */
  } cases[] = {
      {"elements", 2, 2, {4, 3}, {3, 2}, {3, 2, 0, 0, 1, 1}, NULL},
      {"rows", 2, 2, {4, 3}, {2, 1}, {3, 1}, NULL},
      {"batched_depth2", 3, 3, {2, 3, 2}, {2, 1, 2}, {1, 2, 0, 1}, NULL},
      {"whole_params", 2, 2, {2, 2}, {3, 0}, {0}, NULL},
      {"empty_indices", 2, 2, {4, 3}, {0, 2}, {0}, NULL},
      {"error_out_of_range", 2, 2, {4, 3}, {2, 2}, {1, 1, 3, 3},
       "indices[1] = [3, 3] does not index into param shape [4,3]"},
      {"error_negative", 1, 2, {4}, {2, 1}, {0, -1},
       "indices[1] = [-1] does not index into param shape [4]"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *params = values(&rng, dt, cases[i].rp, cases[i].dp, false);
    cf_array_t *ind = idx(it, cases[i].ri, cases[i].di, cases[i].iv);
    cf_array_t *want = NULL;
    if (!cases[i].error) {
      /* The reference: the same addressing, written out: slices of params' trailing dims. */
      const int64_t depth = cases[i].di[cases[i].ri - 1];
      int64_t out_dims[WEFT_MAX_RANK], slice = 1, outer = 1;
      int out_rank = cases[i].ri - 1 + cases[i].rp - (int)depth;
      for (int d = 0; d < cases[i].ri - 1; d++) outer *= out_dims[d] = cases[i].di[d];
      for (int d = (int)depth; d < cases[i].rp; d++)
        slice *= out_dims[cases[i].ri - 1 + d - (int)depth] = cases[i].dp[d];
      want = cf_array_new(dt, out_rank, out_dims);
      for (int64_t u = 0; u < outer; u++) {
        int64_t off = 0;
        for (int64_t d = 0; d < depth; d++)
          off = off * cases[i].dp[d] + (int64_t)ind->v[u * depth + d];
        for (int64_t e = 0; e < slice; e++) want->v[u * slice + e] = params->v[off * slice + e];
      }
    }
    cf_case_input(c, params);
    cf_case_input(c, ind);
    if (cases[i].error) {
      expect_error(ctx, c, cases[i].error);
      continue;
    }
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * ScatterUpdate, ScatterAdd, ... on a variable: var[indices[i], ...] op= updates[i, ...]. */

typedef struct {
  const char *name;
  int rv, ri, ru;
  int64_t dv[3], di[2], du[4];
  int64_t iv[6];
  const char *error; /* NULL: a valid case */
} sc_case_t;

static void emit_scatter(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const sc_op_t k = op_kind(op);
  static const sc_case_t cases[] = {
      {"rows_dup", 2, 1, 2, {5, 3}, {4}, {4, 3}, {1, 3, 1, 0}, NULL},
      {"vector", 1, 1, 1, {6}, {3}, {3}, {5, 0, 5}, NULL},
      {"indices_2d", 2, 2, 3, {4, 2}, {2, 2}, {2, 2, 2}, {3, 0, 3, 2}, NULL},
      {"scalar_update", 2, 1, 0, {4, 3}, {2}, {0}, {2, 0}, NULL},
      {"scalar_index", 2, 0, 1, {4, 3}, {0}, {3}, {2}, NULL},
      {"empty_indices", 2, 1, 2, {4, 3}, {0}, {0, 3}, {0}, NULL},
      {"error_out_of_range", 2, 1, 2, {4, 3}, {3}, {3, 3}, {1, 4, 0},
       "indices[1] = 4 is not in [0, 4)"},
      {"error_negative", 1, 1, 1, {4}, {2}, {2}, {-1, 0}, "indices[0] = -1 is not in [0, 4)"},
      {"error_shape", 2, 1, 2, {4, 3}, {2}, {2, 2}, {0, 1},
       "Must have updates.shape = indices.shape + params.shape[1:] or updates.shape = [], got "
       "updates.shape [2,2], indices.shape [2], params.shape [4,3]"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const sc_case_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *var = values(&rng, dt, s->rv, s->dv, false);
    cf_array_t *ind = idx(it, s->ri, s->di, s->iv);
    cf_array_t *upd = values(&rng, dt, s->ru, s->du, k == OP_DIV);
    if (s->error) {
      cf_case_variable_input(c, var, NULL);
      cf_case_input(c, ind);
      cf_case_input(c, upd);
      expect_error(ctx, c, s->error);
      continue;
    }
    cf_array_t *want = cf_array_copy(var);
    int64_t slice = var->n / var->dims[0];
    for (int64_t j = 0; j < ind->n; j++)
      ref_store(k, want, (int64_t)ind->v[j] * slice, upd, s->ru == 0 ? 0 : j * slice, slice,
                s->ru == 0 ? 0 : 1);
    cf_case_variable_input(c, var, cf_array_copy(want));
    cf_case_input(c, ind);
    cf_case_input(c, upd);
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * ScatterNd (from zeros), ScatterNdUpdate/Add/Sub (a variable), TensorScatter* (a new tensor). */

typedef struct {
  const char *name;
  int ro, ri, ru;
  int64_t dout[3], di[3], du[3];
  int64_t iv[8];
  const char *error;
} nd_case_t;

static void emit_scatter_nd(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const bool from_zeros = strcmp(op, "ScatterNd") == 0;
  const bool on_var = g_str_has_prefix(op, "ScatterNd") && !from_zeros;
  const sc_op_t k = op_kind(op);
  static const nd_case_t cases[] = {
      {"rows_dup", 2, 2, 2, {4, 3}, {3, 1}, {3, 3}, {1, 3, 1}, NULL},
      {"elements", 2, 2, 1, {4, 3}, {4, 2}, {4}, {0, 0, 3, 2, 1, 1, 0, 0}, NULL},
      {"rank3_depth1", 3, 2, 3, {3, 2, 2}, {2, 1}, {2, 2, 2}, {2, 0}, NULL},
      {"rank3_depth2", 3, 2, 2, {3, 2, 2}, {3, 2}, {3, 2}, {2, 1, 0, 0, 2, 1}, NULL},
      {"batch_2d", 1, 3, 2, {6}, {2, 2, 1}, {2, 2}, {5, 0, 1, 5}, NULL},
      {"empty_indices", 2, 2, 2, {4, 3}, {0, 1}, {0, 3}, {0}, NULL},
      {"error_out_of_range", 2, 2, 1, {4, 3}, {2, 2}, {2}, {1, 1, 3, 3},
       "indices[1] = [3, 3] does not index into shape [4,3]"},
      {"error_negative", 1, 2, 1, {4}, {2, 1}, {2}, {0, -2},
       "indices[1] = [-2] does not index into shape [4]"},
      {"error_updates_shape", 2, 2, 2, {4, 3}, {2, 1}, {2, 2}, {0, 1}, "updates"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const nd_case_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *base = from_zeros ? cf_array_new(dt, s->ro, s->dout)
                                  : values(&rng, dt, s->ro, s->dout, false);
    cf_array_t *ind = idx(it, s->ri, s->di, s->iv);
    cf_array_t *upd = values(&rng, dt, s->ru, s->du, false);
    cf_array_t *want = NULL;
    if (!s->error) {
      want = cf_array_copy(base);
      int64_t depth = s->di[s->ri - 1], slice = 1, n_upd = depth ? ind->n / depth : 0;
      for (int d = (int)depth; d < s->ro; d++) slice *= s->dout[d];
      for (int64_t u = 0; u < n_upd; u++) {
        int64_t off = 0;
        for (int64_t d = 0; d < depth; d++) off = off * s->dout[d] + (int64_t)ind->v[u * depth + d];
        ref_store(k, want, off * slice, upd, u * slice, slice, 1);
      }
    }
    if (from_zeros) {
      cf_array_free(base);
      cf_case_input(c, ind);
      cf_case_input(c, upd);
      cf_case_const_input(c, cf_array_ints(it, s->ro, s->dout));
    } else {
      if (on_var)
        cf_case_variable_input(c, base, want ? cf_array_copy(want) : NULL);
      else
        cf_case_input(c, base);
      cf_case_input(c, ind);
      cf_case_input(c, upd);
    }
    if (s->error) {
      expect_error(ctx, c, s->error);
      continue;
    }
    cf_case_expect(c, want);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Segment reductions. */

typedef enum { SEG_SUM, SEG_MEAN, SEG_PROD, SEG_MIN, SEG_MAX } seg_t;

static seg_t seg_kind(const char *op) {
  if (g_str_has_suffix(op, "Mean")) return SEG_MEAN;
  if (g_str_has_suffix(op, "Prod")) return SEG_PROD;
  if (g_str_has_suffix(op, "Min")) return SEG_MIN;
  if (g_str_has_suffix(op, "Max")) return SEG_MAX;
  return SEG_SUM;
}

/* The reduction of the rows of x (with inner elements each) whose id is `o` into want row o;
 * `empty` when no row has that id. */
static void ref_segment(seg_t k, const cf_array_t *x, const cf_array_t *ids, int64_t o,
                        int64_t inner, cf_array_t *want, double empty) {
  weft_dtype_t dt = x->dtype;
  for (int64_t j = 0; j < inner; j++) {
    double acc = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < ids->n; r++) {
      if ((int64_t)ids->v[r] != o) continue;
      double t = x->v[r * inner + j];
      if (count == 0)
        acc = t;
      else if (k == SEG_SUM || k == SEG_MEAN)
        acc = cf_round_to_dtype(dt, acc + t);
      else if (k == SEG_PROD)
        acc = cf_round_to_dtype(dt, acc * t);
      else if (k == SEG_MIN)
        acc = t < acc ? t : acc;
      else
        acc = acc < t ? t : acc;
      count++;
    }
    if (count && k == SEG_MEAN)
      acc = cf_dtype_is_int(dt) ? trunc(acc / (double)count) : acc / (double)count;
    want->v[o * inner + j] = count ? cf_round_to_dtype(dt, acc) : empty;
  }
}

static void emit_segment(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const seg_t k = seg_kind(op);
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int64_t ids[8];
    const char *error;
  } sg_t;
  static const sg_t cases[] = {
      {"gaps", 2, {6, 3}, {0, 0, 2, 2, 2, 5}, NULL},
      {"rank1", 1, {5}, {0, 1, 1, 3, 3}, NULL},
      {"rank3", 3, {4, 2, 2}, {1, 1, 1, 2}, NULL},
      {"one_segment", 1, {7}, {0, 0, 0, 0, 0, 0, 0}, NULL},
      {"empty", 2, {0, 3}, {0}, NULL},
      {"error_not_sorted", 1, {4}, {0, 2, 1, 3}, "segment ids are not increasing"},
      {"error_negative", 1, {3}, {-1, 0, 0},
       "Segment id -1 out of range [0, 1), possibly because 'segment_ids' input is not sorted."},
      {"error_all_negative", 1, {2}, {-3, -2}, "segment ids must be >= 0"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const sg_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *x = values(&rng, dt, s->rank, s->dims, false);
    cf_array_t *ids = cf_array_ints(it, s->dims[0], s->ids);
    if (s->error) {
      cf_case_input(c, x);
      cf_case_input(c, ids);
      expect_error(ctx, c, s->error);
      continue;
    }
    int64_t rows = ids->n ? (int64_t)ids->v[ids->n - 1] + 1 : 0, dims[3];
    memcpy(dims, s->dims, sizeof dims);
    dims[0] = rows;
    cf_array_t *want = cf_array_new(dt, s->rank, dims);
    int64_t inner = s->dims[0] ? x->n / s->dims[0] : 0;
    for (int64_t o = 0; o < rows; o++)
      ref_segment(k, x, ids, o, inner, want, k == SEG_PROD ? 1 : 0);
    cf_case_input(c, x);
    cf_case_input(c, ids);
    cf_case_expect(c, want);
    c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
  /* segment_ids must match data's first dimension. */
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_size", dt, &rng);
  int64_t d[2] = {3, 2}, iv[2] = {0, 1};
  cf_case_input(c, values(&rng, dt, 2, d, false));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, iv));
  expect_error(ctx, c, "segment_ids should be the same size as dimension 0 of input.");
}

/* ---------------------------------------------------------------------------------------------
 * SparseSegmentSum/Mean/SqrtN and their WithNumSegments forms: out[ids[i]] (+)= data[indices[i]];
 * Mean divides a segment by its size, SqrtN by the square root of it; unnamed rows are 0. */

static void emit_sparse_segment(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const bool with_num = g_str_has_suffix(op, "WithNumSegments");
  const bool mean = strstr(op, "Mean") != NULL, sqrt_n = strstr(op, "SqrtN") != NULL;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int64_t n;
    int64_t ind[6], ids[6];
    int64_t num; /* num_segments, WithNumSegments only: 0 means the last id + 1 */
    const char *error;
  } ss_t;
  static const ss_t cases[] = {
      {"gap", 2, {5, 3}, 4, {0, 2, 4, 1}, {0, 0, 1, 3}, 0, NULL},
      {"repeated_index", 2, {3, 2}, 3, {1, 1, 1}, {0, 0, 0}, 0, NULL},
      {"rank1", 1, {6}, 3, {5, 0, 3}, {0, 1, 1}, 0, NULL},
      {"rank3", 3, {4, 2, 2}, 3, {3, 0, 2}, {0, 0, 2}, 0, NULL},
      {"trailing_empty_segments", 2, {4, 2}, 2, {2, 3}, {0, 1}, 4, NULL},
      {"empty", 2, {5, 3}, 0, {0}, {0}, 0, NULL},
      {"error_index_high", 2, {5, 3}, 2, {0, 5}, {0, 0}, 0,
       "Bad: indices[1] == 5 out of range [0, 5)"},
      {"error_index_negative", 1, {4}, 2, {1, -1}, {0, 1}, 0,
       "Bad: indices[1] == -1 out of range [0, 4)"},
      {"error_not_sorted", 1, {4}, 3, {0, 1, 2}, {1, 0, 2}, 0, "segment ids are not increasing"},
      {"error_negative_id", 1, {4}, 2, {0, 1}, {-1, 0}, 0,
       "Segment id -1 out of range [0, 1), possibly because 'segment_ids' input is not sorted."},
      {"error_all_negative", 1, {4}, 2, {0, 1}, {-3, -2}, 0, "segment ids must be >= 0"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const ss_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    weft_dtype_t st = i % 3 ? WEFT_DT_INT32 : WEFT_DT_INT64;
    cf_array_t *x = values(&rng, dt, s->rank, s->dims, false);
    cf_array_t *ind = cf_array_ints(it, s->n, s->ind), *ids = cf_array_ints(st, s->n, s->ids);
    int64_t rows = s->n ? s->ids[s->n - 1] + 1 : 0;
    if (with_num && s->num) rows = s->num;
    cf_case_input(c, x);
    cf_case_input(c, ind);
    cf_case_input(c, ids);
    /* A constant num_segments lets the shape function fix the row count; a fed one does not. */
    if (with_num && i % 2) cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, (double)rows));
    else if (with_num) cf_case_input(c, cf_array_scalar(WEFT_DT_INT64, (double)rows));
    if (s->error) {
      expect_error(ctx, c, s->error);
      continue;
    }
    int64_t dims[3], inner = 1;
    memcpy(dims, s->dims, sizeof dims);
    dims[0] = rows;
    for (int d = 1; d < s->rank; d++) inner *= s->dims[d];
    cf_array_t *want = cf_array_new(dt, s->rank, dims);
    for (int64_t o = 0; o < rows; o++)
      for (int64_t j = 0; j < inner; j++) {
        double acc = 0;
        int64_t count = 0;
        for (int64_t k = 0; k < s->n; k++) {
          if (s->ids[k] != o) continue;
          double t = x->v[s->ind[k] * inner + j];
          /* Sum adds in the dtype, as TensorFlow; Mean and SqrtN keep the sum exact. */
          acc = mean || sqrt_n ? acc + t : cf_round_to_dtype(dt, acc + t);
          count++;
        }
        if (count && mean) acc /= (double)count;
        if (count && sqrt_n) acc /= sqrt((double)count);
        want->v[o * inner + j] = cf_round_to_dtype(dt, acc);
      }
    cf_case_expect(c, want);
    c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
  /* indices and segment_ids of different lengths: the kernel's check, then the shape
   * function's. */
  for (int known = 0; known < 2; known++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, known ? "error_size_shape_inference" : "error_size", dt, &rng);
    int64_t d[2] = {3, 2}, iv[3] = {0, 1, 2};
    cf_case_input(c, values(&rng, dt, 2, d, false));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 3, iv));
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, iv));
    if (with_num) cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 2));
    for (int k = 0; k < c->n_inputs; k++) c->unknown_shape[k] = !known;
    expect_error(ctx, c, known ? "Dimensions must be equal, but are 3 and 2"
                               : "segment_ids and indices should have same size.");
  }
  if (!with_num) return;
  /* num_segments below the last id + 1. */
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_num_segments_small", dt, &rng);
  int64_t d[2] = {3, 2}, iv[2] = {0, 1}, sv[2] = {0, 3};
  cf_case_input(c, values(&rng, dt, 2, d, false));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, iv));
  cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, sv));
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 2));
  expect_error(ctx, c, "segment ids must be < num_segments");
}

static void emit_unsorted_segment(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const seg_t k = seg_kind(op);
  typedef struct {
    const char *name;
    int rank, rids;
    int64_t dims[3], dids[2];
    int64_t ids[8];
    int64_t num;
    const char *error;
  } us_t;
  static const us_t cases[] = {
      {"empty_segments", 2, 1, {6, 3}, {6}, {3, -1, 0, 3, 1, 3}, 5, NULL},
      {"rank1", 1, 1, {5}, {5}, {2, 2, 0, 2, 0}, 3, NULL},
      {"ids_2d", 3, 2, {2, 3, 2}, {2, 3}, {1, 0, 1, 1, -4, 0}, 2, NULL},
      {"empty_data", 2, 1, {0, 2}, {0}, {0}, 3, NULL},
      {"zero_segments", 1, 1, {2}, {2}, {-1, -1}, 0, NULL},
      {"error_out_of_range", 1, 1, {3}, {3}, {0, 3, 1}, 3,
       "segment_ids[1] = 3 is out of range [0, 3)"},
      {"error_ids_2d_out_of_range", 2, 2, {2, 2}, {2, 2}, {0, 1, 1, 9}, 2,
       "segment_ids[1,1] = 9 is out of range [0, 2)"},
      {"error_negative_num", 1, 1, {2}, {2}, {0, 0}, -1,
       "Input num_segments == -1 must not be negative."},
  };
  /* The dtype's true extremes (cf_dtype_min/max stop at 2^53 for the 64-bit integers; these
   * are 2^63 and 2^64 as doubles, which is how the fetched values compare). */
  double lowest = cf_dtype_is_float(dt) ? -cf_dtype_max(dt) : cf_dtype_min(dt);
  double highest = cf_dtype_max(dt);
  if (dt == WEFT_DT_INT64) {
    lowest = -ldexp(1, 63);
    highest = ldexp(1, 63);
  } else if (dt == WEFT_DT_UINT64) {
    highest = ldexp(1, 64);
  }
  const double empty = k == SEG_PROD ? 1 : k == SEG_MIN ? highest : k == SEG_MAX ? lowest : 0;
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const us_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *x = values(&rng, dt, s->rank, s->dims, false);
    cf_array_t *ids = idx(it, s->rids, s->dids, s->ids);
    cf_array_t *want = NULL;
    if (!s->error) {
      int64_t dims[3] = {s->num}, inner = 1;
      for (int d = s->rids; d < s->rank; d++) {
        dims[1 + d - s->rids] = s->dims[d];
        inner *= s->dims[d];
      }
      want = cf_array_new(dt, 1 + s->rank - s->rids, dims);
      for (int64_t o = 0; o < s->num; o++) ref_segment(k, x, ids, o, inner, want, empty);
    }
    cf_case_input(c, x);
    cf_case_input(c, ids);
    cf_case_const_input(c, cf_array_scalar(i % 3 ? WEFT_DT_INT32 : WEFT_DT_INT64, (double)s->num));
    if (s->error) {
      expect_error(ctx, c, s->error);
      continue;
    }
    cf_case_expect(c, want);
    c->tol = cf_tol_scale(c->tol, 4);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * DynamicPartition */

static void emit_dynamic_partition(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank, rp;
    int64_t dims[3], dp[2];
    int64_t parts[8];
    int num;
    const char *error;
  } dp_t;
  static const dp_t cases[] = {
      {"rows", 2, 1, {6, 2}, {6}, {1, 0, 2, 1, 1, 0}, 3, NULL},
      {"empty_partition", 1, 1, {5}, {5}, {3, 0, 3, 0, 1}, 4, NULL},
      {"partitions_2d", 3, 2, {2, 3, 2}, {2, 3}, {1, 0, 1, 1, 0, 0}, 2, NULL},
      {"empty_data", 2, 1, {0, 3}, {0}, {0}, 2, NULL},
      {"error_out_of_range", 1, 1, {3}, {3}, {0, 2, 1}, 2, "partitions[1] = 2 is not in [0, 2)"},
      {"error_negative", 2, 2, {2, 2}, {2, 2}, {0, 1, -1, 0}, 2,
       "partitions[1,0] = -1 is not in [0, 2)"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const dp_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dt, s->rank, s->dims, g);
    cf_array_t *parts = idx(WEFT_DT_INT32, s->rp, s->dp, s->parts);
    cf_case_input(c, x);
    cf_case_input(c, parts);
    cf_case_attr_int(c, "num_partitions", s->num);
    if (s->error) {
      expect_error(ctx, c, s->error);
      continue;
    }
    int64_t slice = parts->n ? x->n / parts->n : 0;
    for (int p = 0; p < s->num; p++) {
      int64_t dims[3] = {0};
      for (int64_t j = 0; j < parts->n; j++) dims[0] += (int64_t)parts->v[j] == p;
      for (int d = s->rp; d < s->rank; d++) dims[1 + d - s->rp] = s->dims[d];
      cf_array_t *want = cf_array_new(dt, 1 + s->rank - s->rp, dims);
      int64_t at = 0;
      for (int64_t j = 0; j < parts->n; j++) {
        if ((int64_t)parts->v[j] != p) continue;
        for (int64_t e = 0; e < slice; e++) cf_copy_value(want, at * slice + e, x, j * slice + e);
        at++;
      }
      cf_case_expect(c, want);
    }
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t minmax_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_BFLOAT16, WEFT_DT_INT32, WEFT_DT_INT64,
                                             WEFT_DT_INVALID};

const cf_suite_t cf_suites_scatter[] = {
    {"ScatterUpdate", cf_dtypes_all, emit_scatter, NULL},
    {"ScatterAdd", cf_dtypes_numeric, emit_scatter, NULL},
    {"ScatterSub", cf_dtypes_numeric, emit_scatter, NULL},
    {"ScatterMul", cf_dtypes_numeric, emit_scatter, NULL},
    {"ScatterDiv", cf_dtypes_numeric, emit_scatter, NULL},
    {"ScatterMin", minmax_dtypes, emit_scatter, NULL},
    {"ScatterMax", minmax_dtypes, emit_scatter, NULL},
    {"GatherNd", cf_dtypes_numeric, emit_gather_nd, NULL},
    {"ScatterNd", cf_dtypes_numeric, emit_scatter_nd, NULL},
    {"ScatterNdUpdate", cf_dtypes_all, emit_scatter_nd, NULL},
    {"ScatterNdAdd", cf_dtypes_numeric, emit_scatter_nd, NULL},
    {"ScatterNdSub", cf_dtypes_numeric, emit_scatter_nd, NULL},
    {"TensorScatterUpdate", cf_dtypes_all, emit_scatter_nd, NULL},
    {"TensorScatterAdd", cf_dtypes_numeric, emit_scatter_nd, NULL},
    {"TensorScatterSub", cf_dtypes_numeric, emit_scatter_nd, NULL},
    {"SegmentSum", cf_dtypes_numeric, emit_segment, NULL},
    {"SegmentMean", cf_dtypes_numeric, emit_segment, NULL},
    {"SegmentProd", cf_dtypes_numeric, emit_segment, NULL},
    {"SegmentMin", cf_dtypes_numeric, emit_segment, NULL},
    {"SegmentMax", cf_dtypes_numeric, emit_segment, NULL},
    {"SparseSegmentSum", cf_dtypes_numeric, emit_sparse_segment, NULL},
    {"SparseSegmentSumWithNumSegments", cf_dtypes_numeric, emit_sparse_segment, NULL},
    {"SparseSegmentMean", cf_dtypes_float, emit_sparse_segment, NULL},
    {"SparseSegmentMeanWithNumSegments", cf_dtypes_float, emit_sparse_segment, NULL},
    {"SparseSegmentSqrtN", cf_dtypes_float, emit_sparse_segment, NULL},
    {"SparseSegmentSqrtNWithNumSegments", cf_dtypes_float, emit_sparse_segment, NULL},
    {"UnsortedSegmentSum", cf_dtypes_numeric, emit_unsorted_segment, NULL},
    {"UnsortedSegmentProd", cf_dtypes_numeric, emit_unsorted_segment, NULL},
    {"UnsortedSegmentMin", cf_dtypes_numeric, emit_unsorted_segment, NULL},
    {"UnsortedSegmentMax", cf_dtypes_numeric, emit_unsorted_segment, NULL},
    {"DynamicPartition", cf_dtypes_all, emit_dynamic_partition, NULL},
    {NULL, NULL, NULL, NULL},
};
