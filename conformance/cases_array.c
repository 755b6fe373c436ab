/* cases_array.c: conformance cases of the array and data-movement ops (Reshape, Transpose,
 * ConcatV2, Pack, Unpack, Fill, Shape, ShapeN, Size, Rank, ExpandDims, Squeeze, Slice,
 * StridedSlice with every mask (and StridedSliceGrad over the same specs), Tile, Range, Gather,
 * GatherV2, Split, SplitV, Pad, OneHot, BroadcastTo, DynamicStitch, BroadcastGradientArgs,
 * ConcatOffset, Cast between every numeric pair, IdentityN, PlaceholderWithDefault and Const)
 * over every dtype they accept, strings and bools included, with distinct element values so that
 * a misplaced element shows. */
#include <math.h>
#include <string.h>

#include "cases_array_common.h"

/* ---------------------------------------------------------------------------------------------
 * Reshape, Transpose, Concat, Pack, Unpack */

static void emit_reshape(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rin;
    int64_t din[4];
    int n_shape;
    int64_t shape[4];
    int rout;
    int64_t dout[4];
  } rs_t;
  static const rs_t cases[] = {
      {"2x6_to_3x4", 2, {2, 6}, 2, {3, 4}, 2, {3, 4}},
      {"infer_dim", 2, {2, 6}, 3, {-1, 2, 2}, 3, {3, 2, 2}},
      {"flatten", 3, {2, 3, 4}, 1, {-1}, 1, {24}},
      {"scalar_to_1", 0, {0}, 1, {1}, 1, {1}},
      {"1_to_scalar", 1, {1}, 0, {0}, 0, {0}},
      {"empty", 2, {0, 4}, 3, {2, 0, 3}, 3, {2, 0, 3}},
      {"odd_1023", 1, {1023}, 2, {3, 341}, 2, {3, 341}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const rs_t *r = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, r->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, r->rin, r->din);
    cf_case_expect(c, cf_array_reshape(x, r->rout, r->dout));
    cf_case_input(c, x);
    cf_case_const_input(c, ints(i == 3 ? WEFT_DT_INT64 : WEFT_DT_INT32, r->n_shape, r->shape));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_element_count", dt, &rng);
  int64_t d6 = 6, bad = 5;
  int i0 = cf_case_input(c, data(&rng, dt, 1, &d6));
  c->unknown_shape[i0] = true;
  cf_case_const_input(c, ints(WEFT_DT_INT32, 1, &bad));
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

static void emit_transpose(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[5];
    int64_t perm[5];
  } tr_t;
  static const tr_t cases[] = {
      {"2d", 2, {3, 5}, {1, 0}},
      {"3d_120", 3, {2, 3, 4}, {1, 2, 0}},
      {"3d_210", 3, {2, 3, 4}, {2, 1, 0}},
      {"4d_nhwc_to_nchw", 4, {2, 3, 4, 5}, {0, 3, 1, 2}},
      {"5d", 5, {2, 1, 3, 2, 2}, {4, 2, 0, 3, 1}},
      {"identity_perm", 3, {2, 3, 4}, {0, 1, 2}},
      {"scalar", 0, {0}, {0}},
      {"empty", 3, {2, 0, 3}, {2, 0, 1}},
      {"odd_1023x7", 2, {1023, 7}, {1, 0}},
      {"large_1024x1024", 2, {1024, 1024}, {1, 0}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const tr_t *t = &cases[i];
    if (strncmp(t->name, "large", 5) == 0 && dt != WEFT_DT_FLOAT) continue;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, t->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, t->rank, t->dims);
    cf_case_expect(c, cf_ref_transpose(x, t->perm));
    cf_case_input(c, x);
    cf_case_const_input(c, ints(i == 1 ? WEFT_DT_INT64 : WEFT_DT_INT32, t->rank, t->perm));
    cf_run_case(ctx, c);
  }
}

static void emit_concat(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int n, rank, axis;
    int64_t dims[3][3];
  } cc_t;
  static const cc_t cases[] = {
      {"axis0", 2, 2, 0, {{2, 3}, {4, 3}}},
      {"axis1", 3, 2, 1, {{2, 1}, {2, 3}, {2, 2}}},
      {"axis_neg1", 2, 3, -1, {{2, 3, 1}, {2, 3, 4}}},
      {"with_empty", 3, 2, 0, {{2, 3}, {0, 3}, {1, 3}}},
      {"rank1_odd", 2, 1, 0, {{1023}, {7}}},
      {"middle_axis", 2, 3, 1, {{2, 2, 3}, {2, 5, 3}}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const cc_t *cc = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cc->name, dt, &rng);
    cf_array_t *xs[3];
    for (int k = 0; k < cc->n; k++) {
      xs[k] = data(&rng, dt, cc->rank, cc->dims[k]);
      /* Shift so that the parts hold different values. */
      for (int64_t j = 0; xs[k]->v && j < xs[k]->n; j++)
        if (dt != WEFT_DT_BOOL) xs[k]->v[j] = cf_round_to_dtype(dt, xs[k]->v[j] + 37 * k);
      cf_case_input(c, xs[k]);
    }
    int axis = cc->axis < 0 ? cc->axis + cc->rank : cc->axis;
    cf_case_expect(c, cf_ref_concat(xs, cc->n, axis));
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, cc->axis));
    int lens[2] = {cc->n, 0};
    cf_case_args(c, 2, lens);
    cf_run_case(ctx, c);
  }
}

static void emit_pack(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool unpack = strcmp(op, "Unpack") == 0;
  typedef struct {
    const char *name;
    int n, rank, axis;
    int64_t dims[3];
  } pk_t;
  static const pk_t cases[] = {
      {"axis0", 3, 2, 0, {2, 3}},     {"axis1", 2, 2, 1, {2, 3}},
      {"axis_neg1", 4, 2, -1, {2, 3}}, {"scalars", 3, 0, 0, {0}},
      {"one", 1, 1, 0, {5}},           {"empty", 2, 2, 1, {0, 3}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const pk_t *p = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, p->name, dt, &rng);
    if (!unpack) {
      cf_array_t *xs[4];
      for (int k = 0; k < p->n; k++) {
        xs[k] = data(&rng, dt, p->rank, p->dims);
        for (int64_t j = 0; xs[k]->v && j < xs[k]->n; j++)
          if (dt != WEFT_DT_BOOL) xs[k]->v[j] = cf_round_to_dtype(dt, xs[k]->v[j] + 11 * k);
        cf_case_input(c, xs[k]);
      }
      int axis = p->axis < 0 ? p->axis + p->rank + 1 : p->axis;
      cf_case_expect(c, cf_ref_pack(xs, p->n, axis));
      int len = p->n;
      cf_case_args(c, 1, &len);
      if (p->axis) cf_case_attr_int(c, "axis", p->axis);
    } else {
      if (p->rank == 0) {
        cf_case_free(c);
        continue;
      }
      cf_array_t *x = data(&rng, dt, p->rank, p->dims);
      int axis = p->axis < 0 ? p->axis + p->rank : p->axis;
      int64_t num = x->dims[axis];
      if (num > CF_MAX_OUTPUTS) {
        cf_array_free(x);
        cf_case_free(c);
        continue;
      }
      for (int64_t k = 0; k < num; k++) cf_case_expect(c, cf_ref_unpack(x, axis, k));
      cf_case_input(c, x);
      cf_case_attr_int(c, "num", num);
      if (p->axis) cf_case_attr_int(c, "axis", p->axis);
    }
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Fill, Shape, Size, Rank, ExpandDims, Squeeze */

static void emit_fill(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const char *names[] = {"2x3", "scalar", "empty", "odd_1023"};
  int n_dims[] = {2, 0, 2, 1};
  int64_t dims[][2] = {{2, 3}, {0}, {0, 4}, {1023}};
  for (int s = 0; s < 4; s++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, names[s], dt, &rng);
    cf_array_t *value = data(&rng, dt, 0, NULL);
    if (value->v && dt != WEFT_DT_BOOL) value->v[0] = cf_round_to_dtype(dt, 7);
    cf_array_t *want = cf_array_new(dt, n_dims[s], dims[s]);
    for (int64_t i = 0; i < want->n; i++) cf_copy_value(want, i, value, 0);
    cf_case_expect(c, want);
    cf_case_input(c, ints(s == 0 ? WEFT_DT_INT64 : WEFT_DT_INT32, n_dims[s], dims[s]));
    cf_case_input(c, value);
    cf_run_case(ctx, c);
  }
}

static void emit_shape_ops(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  const char *names[] = {"rank3", "scalar", "empty", "rank3_int64"};
  int ranks[] = {3, 0, 2, 3};
  int64_t dims[][3] = {{2, 3, 4}, {0}, {0, 5}, {2, 3, 4}};
  for (int s = 0; s < 4; s++) {
    bool i64 = s == 3;
    if (i64 && strcmp(op, "Rank") == 0) continue;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, names[s], dt, &rng);
    cf_array_t *x = data(&rng, dt, ranks[s], dims[s]);
    weft_dtype_t out = i64 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    if (strcmp(op, "Shape") == 0 || strcmp(op, "ShapeN") == 0) {
      cf_case_expect(c, ints(out, ranks[s], dims[s]));
    } else if (strcmp(op, "Size") == 0) {
      cf_array_t *n = int_scalar(out, x->n);
      cf_case_expect(c, n);
    } else {
      cf_case_expect(c, int_scalar(WEFT_DT_INT32, ranks[s]));
    }
    cf_case_input(c, x);
    if (strcmp(op, "ShapeN") == 0) {
      /* Two inputs: the second a transposed shape. */
      int64_t other[3] = {dims[s][2], dims[s][0], dims[s][1]};
      int r2 = ranks[s] == 3 ? 3 : ranks[s];
      cf_array_t *y = data(&rng, dt, r2, ranks[s] == 3 ? other : dims[s]);
      cf_case_expect(c, ints(out, r2, ranks[s] == 3 ? other : dims[s]));
      cf_case_input(c, y);
      int len = 2;
      cf_case_args(c, 1, &len);
      cf_case_attr_int(c, "N", 2);
    }
    if (i64) cf_case_attr_type(c, "out_type", WEFT_DT_INT64);
    cf_run_case(ctx, c);
  }
}

static void emit_expand_squeeze(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool expand = strcmp(op, "ExpandDims") == 0;
  typedef struct {
    const char *name;
    int rin;
    int64_t din[4];
    int n_axes;
    int64_t axes[3];
    int rout;
    int64_t dout[4];
  } es_t;
  static const es_t expand_cases[] = {
      {"dim0", 2, {2, 3}, 1, {0}, 3, {1, 2, 3}},
      {"dim_last", 2, {2, 3}, 1, {2}, 3, {2, 3, 1}},
      {"dim_neg1", 2, {2, 3}, 1, {-1}, 3, {2, 3, 1}},
      {"dim_middle_neg", 2, {2, 3}, 1, {-2}, 3, {2, 1, 3}},
      {"scalar", 0, {0}, 1, {0}, 1, {1}},
      {"empty", 1, {0}, 1, {1}, 2, {0, 1}},
  };
  static const es_t squeeze_cases[] = {
      {"all_unit_dims", 4, {1, 2, 1, 3}, 0, {0}, 2, {2, 3}},
      {"given_dim", 4, {1, 2, 1, 3}, 1, {2}, 3, {1, 2, 3}},
      {"negative_dims", 4, {1, 2, 1, 3}, 2, {-4, -2}, 2, {2, 3}},
      {"to_scalar", 2, {1, 1}, 0, {0}, 0, {0}},
      {"empty", 3, {1, 0, 1}, 0, {0}, 1, {0}},
  };
  const es_t *cases = expand ? expand_cases : squeeze_cases;
  int n = expand ? (int)G_N_ELEMENTS(expand_cases) : (int)G_N_ELEMENTS(squeeze_cases);
  for (int i = 0; i < n; i++) {
    const es_t *e = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, e->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, e->rin, e->din);
    cf_case_expect(c, cf_array_reshape(x, e->rout, e->dout));
    cf_case_input(c, x);
    if (expand)
      cf_case_const_input(c, int_scalar(i == 2 ? WEFT_DT_INT64 : WEFT_DT_INT32, e->axes[0]));
    else if (e->n_axes)
      cf_case_attr_ints(c, "squeeze_dims", e->axes, e->n_axes);
    cf_run_case(ctx, c);
  }
  if (!expand) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "error_non_unit_dim", dt, &rng);
    int64_t d[2] = {2, 3}, ax = 0;
    int i0 = cf_case_input(c, data(&rng, dt, 2, d));
    c->unknown_shape[i0] = true;
    cf_case_attr_ints(c, "squeeze_dims", &ax, 1);
    cf_case_expect(c, NULL);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Slice, StridedSlice */

static void emit_slice(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3], begin[3], size[3];
  } sl_t;
  static const sl_t cases[] = {
      {"2d", 2, {4, 5}, {1, 2}, {2, 3}},
      {"size_minus1", 3, {2, 3, 4}, {1, 0, 2}, {-1, 2, -1}},
      {"full", 2, {3, 3}, {0, 0}, {3, 3}},
      {"empty_size", 2, {4, 5}, {2, 2}, {0, 3}},
      {"odd_1023", 1, {1023}, {17}, {999}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const sl_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, s->rank, s->dims);
    int64_t size[3], stride[3] = {1, 1, 1};
    for (int d = 0; d < s->rank; d++)
      size[d] = s->size[d] < 0 ? s->dims[d] - s->begin[d] : s->size[d];
    cf_case_expect(c, cf_ref_strided(x, s->begin, size, stride));
    cf_case_input(c, x);
    weft_dtype_t it = i == 1 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_case_const_input(c, ints(it, s->rank, s->begin));
    cf_case_const_input(c, ints(it, s->rank, s->size));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_out_of_bounds", dt, &rng);
  int64_t d = 4, b = 2, sz = 5;
  int i0 = cf_case_input(c, data(&rng, dt, 1, &d));
  c->unknown_shape[i0] = true;
  int i1 = cf_case_input(c, ints(WEFT_DT_INT32, 1, &b));
  int i2 = cf_case_input(c, ints(WEFT_DT_INT32, 1, &sz));
  c->unknown_shape[i1] = c->unknown_shape[i2] = true;
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

/* TensorFlow's StridedSlice spec resolution (masks, ellipsis, new axes, shrinking, clamping),
 * giving per input dim the begin, count and stride, and the output shape. */
static void resolve_strided(const int64_t *in_dims, int rank, const int64_t *b, const int64_t *e,
                            const int64_t *s, int n, int bm, int em, int ellm, int nam, int sam,
                            int64_t *begin, int64_t *count, int64_t *stride, int *out_rank,
                            int64_t *out_dims) {
  int full = 0;
  *out_rank = 0;
  bool in_full[WEFT_MAX_RANK] = {false};
  for (int d = 0; d < rank; d++) {
    begin[d] = 0;
    count[d] = in_dims[d];
    stride[d] = 1;
  }
  for (int i = 0; i < n; i++) {
    if (ellm & (1 << i)) {
      int after_new = 0, after = 0;
      for (int j = i + 1; j < n; j++) {
        after++;
        if (nam & (1 << j)) after_new++;
      }
      int next = rank - (after - after_new);
      for (; full < next; full++) out_dims[(*out_rank)++] = in_dims[full];
      continue;
    }
    if (nam & (1 << i)) {
      out_dims[(*out_rank)++] = 1;
      continue;
    }
    int d = full++;
    in_full[d] = true;
    int64_t dim = in_dims[d], st = s[i];
    stride[d] = st;
    if (sam & (1 << i)) {
      int64_t x = b[i] < 0 ? b[i] + dim : b[i];
      begin[d] = x;
      count[d] = 1;
      stride[d] = 1;
      continue;
    }
    int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
    int64_t bb, ee;
    if (bm & (1 << i))
      bb = st > 0 ? lo : hi;
    else {
      bb = b[i] < 0 ? b[i] + dim : b[i];
      bb = bb < lo ? lo : bb > hi ? hi : bb;
    }
    if (em & (1 << i))
      ee = st > 0 ? hi : lo;
    else {
      ee = e[i] < 0 ? e[i] + dim : e[i];
      ee = ee < lo ? lo : ee > hi ? hi : ee;
    }
    int64_t cnt = st > 0 ? (ee - bb + st - 1) / st : (bb - ee + (-st) - 1) / (-st);
    if (cnt < 0) cnt = 0;
    begin[d] = cnt ? bb : 0;
    count[d] = cnt;
    out_dims[(*out_rank)++] = cnt;
  }
  for (; full < rank; full++) out_dims[(*out_rank)++] = in_dims[full];
  (void)in_full;
}

/* StridedSlice, and StridedSliceGrad over the same specs. */
static void emit_strided_slice(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool grad = strcmp(op, "StridedSliceGrad") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int n;
    int64_t b[3], e[3], s[3];
    int bm, em, ellm, nam, sam;
  } ss_t;
  static const ss_t cases[] = {
      {"basic", 2, {4, 5}, 2, {1, 0}, {3, 4}, {1, 2}, 0, 0, 0, 0, 0},
      {"reverse", 1, {7}, 1, {0}, {0}, {-1}, 1, 1, 0, 0, 0},
      {"negative_stride_range", 1, {9}, 1, {7}, {1}, {-2}, 0, 0, 0, 0, 0},
      {"shrink_axis", 2, {4, 5}, 2, {1, 0}, {2, 0}, {1, 1}, 2, 2, 0, 1, 0},
      {"new_axis", 2, {4, 5}, 2, {0, 1}, {0, 3}, {1, 1}, 0, 0, 0, 1, 0},
      {"ellipsis_shrink_last", 3, {2, 3, 4}, 2, {0, 1}, {0, 2}, {1, 1}, 0, 0, 1, 0, 2},
      {"clamped", 1, {5}, 1, {-100}, {100}, {1}, 0, 0, 0, 0, 0},
      {"negative_indices", 1, {8}, 1, {-3}, {-1}, {1}, 0, 0, 0, 0, 0},
      {"empty_range", 1, {5}, 1, {3}, {1}, {1}, 0, 0, 0, 0, 0},
      {"stride3_odd", 1, {1023}, 1, {2}, {1020}, {3}, 0, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const ss_t *t = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, t->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, t->rank, t->dims);
    int64_t begin[WEFT_MAX_RANK], count[WEFT_MAX_RANK], stride[WEFT_MAX_RANK], od[WEFT_MAX_RANK];
    int orank;
    resolve_strided(t->dims, t->rank, t->b, t->e, t->s, t->n, t->bm, t->em, t->ellm, t->nam,
                    t->sam, begin, count, stride, &orank, od);
    weft_dtype_t it = i == 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    if (grad) {
      /* StridedSliceGrad(shape, begin, end, strides, dy): dy lands where the slice reads, found
       * by slicing the element indices of x. */
      cf_array_t *where = cf_array_new(WEFT_DT_DOUBLE, t->rank, t->dims);
      for (int64_t k = 0; k < where->n; k++) where->v[k] = (double)k;
      cf_array_t *picked = cf_ref_strided(where, begin, count, stride);
      cf_array_t *dy = data(&rng, dt, orank, od);
      cf_array_t *want = cf_array_new(dt, t->rank, t->dims);
      for (int64_t k = 0; k < picked->n; k++)
        cf_copy_value(want, (int64_t)picked->v[k], dy, k);
      cf_case_expect(c, want);
      cf_case_const_input(c, ints(it, t->rank, t->dims));
      cf_case_const_input(c, ints(it, t->n, t->b));
      cf_case_const_input(c, ints(it, t->n, t->e));
      cf_case_const_input(c, ints(it, t->n, t->s));
      cf_case_input(c, dy);
      cf_array_free(where);
      cf_array_free(picked);
      cf_array_free(x);
    } else {
      cf_array_t *flat = cf_ref_strided(x, begin, count, stride);
      cf_case_expect(c, cf_array_reshape(flat, orank, od));
      cf_array_free(flat);
      cf_case_input(c, x);
      cf_case_const_input(c, ints(it, t->n, t->b));
      cf_case_const_input(c, ints(it, t->n, t->e));
      cf_case_const_input(c, ints(it, t->n, t->s));
    }
    if (t->bm) cf_case_attr_int(c, "begin_mask", t->bm);
    if (t->em) cf_case_attr_int(c, "end_mask", t->em);
    if (t->ellm) cf_case_attr_int(c, "ellipsis_mask", t->ellm);
    if (t->nam) cf_case_attr_int(c, "new_axis_mask", t->nam);
    if (t->sam) cf_case_attr_int(c, "shrink_axis_mask", t->sam);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Tile, Range, Gather, Split, Pad, OneHot, BroadcastTo, DynamicStitch */

static void emit_tile(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3], mult[3];
  } tl_t;
  static const tl_t cases[] = {
      {"2x3_by_2x3", 2, {2, 3}, {2, 3}}, {"ones", 2, {2, 3}, {1, 1}},
      {"zero_multiple", 2, {2, 3}, {0, 2}}, {"rank3", 3, {1, 2, 3}, {3, 1, 2}},
      {"rank1_odd", 1, {7}, {147}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const tl_t *t = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, t->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, t->rank, t->dims);
    cf_case_expect(c, cf_ref_tile(x, t->mult));
    cf_case_input(c, x);
    cf_case_const_input(c, ints(i == 3 ? WEFT_DT_INT64 : WEFT_DT_INT32, t->rank, t->mult));
    cf_run_case(ctx, c);
  }
}

static void emit_range(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "Tidx", dt)) return;
  typedef struct {
    const char *name;
    double start, limit, delta;
    bool needs_signed, needs_float;
  } rg_t;
  static const rg_t cases[] = {
      {"0_10_1", 0, 10, 1, false, false},       {"2_13_3", 2, 13, 3, false, false},
      {"descending", 10, 0, -3, true, false},   {"empty", 5, 5, 1, false, false},
      {"fractional", 0.5, 3, 0.7, false, true}, {"n1023", 0, 1023, 1, false, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const rg_t *r = &cases[i];
    if (r->needs_signed && !cf_dtype_is_signed(dt)) continue;
    if (r->needs_float && !cf_dtype_is_float(dt)) continue;
    if (r->limit > cf_dtype_max(dt)) continue;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, r->name, dt, &rng);
    c->tol = cf_tol_default(dt);
    double s = cf_round_to_dtype(dt, r->start), l = cf_round_to_dtype(dt, r->limit),
           d = cf_round_to_dtype(dt, r->delta);
    int64_t n = (int64_t)ceil(fabs((l - s) / d));
    if ((d > 0 && l < s) || (d < 0 && l > s)) n = 0;
    cf_array_t *want = cf_array_new(dt, 1, &n);
    for (int64_t k = 0; k < n; k++) want->v[k] = s + (double)k * d;
    cf_array_round(want);
    cf_case_expect(c, want);
    cf_case_const_input(c, cf_array_scalar(dt, s));
    cf_case_const_input(c, cf_array_scalar(dt, l));
    cf_case_const_input(c, cf_array_scalar(dt, d));
    c->tol.atol = cf_dtype_is_float(dt) ? 1e-5 * 1023 : 0;
    cf_run_case(ctx, c);
  }
}

static void emit_gather(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "Tparams", dt)) return;
  bool v2 = strcmp(op, "GatherV2") == 0;
  typedef struct {
    const char *name;
    int rp, ri;
    int64_t dp[3], di[2];
    int axis, batch_dims;
    bool v2_only;
  } ga_t;
  static const ga_t cases[] = {
      {"axis0", 2, 1, {5, 3}, {4}, 0, 0, false},
      {"indices_2d", 2, 2, {5, 3}, {2, 3}, 0, 0, false},
      {"scalar_index", 2, 0, {5, 3}, {0}, 0, 0, false},
      {"empty_indices", 2, 1, {5, 3}, {0}, 0, 0, false},
      {"axis1", 3, 1, {2, 5, 3}, {4}, 1, 0, true},
      {"axis_neg1", 2, 2, {4, 6}, {2, 2}, -1, 0, true},
      {"batch_dims1", 2, 2, {3, 5}, {3, 2}, 1, 1, true},
      {"odd_1023", 1, 1, {1023}, {513}, 0, 0, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const ga_t *g = &cases[i];
    if (g->v2_only && !v2) continue;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, g->name, dt, &rng);
    cf_array_t *params = data(&rng, dt, g->rp, g->dp);
    int axis = g->axis < 0 ? g->axis + g->rp : g->axis;
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_array_t *idx = cf_array_new(it, g->ri, g->di);
    for (int64_t k = 0; k < idx->n; k++)
      idx->v[k] = (double)cf_rng_int(&rng, 0, g->dp[axis] - 1);
    cf_case_expect(c, cf_ref_gather(params, idx, axis, g->batch_dims));
    cf_case_input(c, params);
    cf_case_input(c, idx);
    if (v2) {
      cf_case_const_input(c, int_scalar(WEFT_DT_INT32, g->axis));
      if (g->batch_dims) cf_case_attr_int(c, "batch_dims", g->batch_dims);
    }
    cf_run_case(ctx, c);
  }
  /* An index past the end: TensorFlow's CPU kernels report it. */
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_index_out_of_range", dt, &rng);
  int64_t d = 4, n = 2;
  cf_case_input(c, data(&rng, dt, 1, &d));
  double iv[2] = {1, 4};
  cf_case_input(c, cf_array_vec(WEFT_DT_INT32, n, iv));
  if (v2) cf_case_const_input(c, int_scalar(WEFT_DT_INT32, 0));
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, NULL);
  cf_run_case(ctx, c);
}

static void emit_split(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool sv = strcmp(op, "SplitV") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int axis, num;
    int64_t sizes[4];
  } sp_t;
  static const sp_t cases[] = {
      {"axis1_3way", 2, {4, 6}, 1, 3, {2, 2, 2}},
      {"axis0_2way", 2, {4, 6}, 0, 2, {2, 2}},
      {"axis_neg1", 3, {2, 3, 4}, -1, 4, {1, 1, 1, 1}},
      {"one_way", 1, {5}, 0, 1, {5}},
      {"uneven", 1, {10}, 0, 3, {2, -1, 5}},
      {"empty_part", 2, {2, 5}, 1, 3, {0, 3, 2}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const sp_t *s = &cases[i];
    bool uneven = s->sizes[0] != s->sizes[s->num - 1] || s->sizes[1] < 0;
    if (uneven && !sv) continue;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, s->rank, s->dims);
    int axis = s->axis < 0 ? s->axis + s->rank : s->axis;
    int64_t sizes[4], known = 0;
    for (int k = 0; k < s->num; k++) known += s->sizes[k] > 0 ? s->sizes[k] : 0;
    int64_t begin = 0;
    for (int k = 0; k < s->num; k++) {
      sizes[k] = s->sizes[k] < 0 ? x->dims[axis] - known : s->sizes[k];
      cf_case_expect(c, cf_ref_split_part(x, axis, begin, sizes[k]));
      begin += sizes[k];
    }
    if (sv) {
      cf_case_input(c, x);
      cf_case_const_input(c, ints(WEFT_DT_INT64, s->num, s->sizes));
      cf_case_const_input(c, int_scalar(WEFT_DT_INT32, s->axis));
    } else {
      cf_case_const_input(c, int_scalar(WEFT_DT_INT32, s->axis));
      cf_case_input(c, x);
    }
    cf_case_attr_int(c, "num_split", s->num);
    cf_run_case(ctx, c);
  }
}

static void emit_pad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3], pads[6];
  } pd_t;
  static const pd_t cases[] = {
      {"2d", 2, {2, 3}, {1, 2, 0, 3}},      {"no_padding", 2, {2, 3}, {0, 0, 0, 0}},
      {"rank3", 3, {2, 1, 3}, {0, 1, 2, 0, 1, 1}}, {"empty_input", 2, {0, 3}, {1, 1, 0, 0}},
      {"scalar", 0, {0}, {0}},             {"rank1_odd", 1, {1023}, {3, 7}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const pd_t *p = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, p->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, p->rank, p->dims);
    if (x->v && dt != WEFT_DT_BOOL)
      for (int64_t k = 0; k < x->n; k++) x->v[k] = cf_round_to_dtype(dt, x->v[k] + 1);
    cf_case_expect(c, cf_ref_pad(x, p->pads, 0, 0));
    cf_case_input(c, x);
    int64_t pd[2] = {p->rank, 2};
    cf_array_t *pads = cf_array_new(i == 2 ? WEFT_DT_INT64 : WEFT_DT_INT32, 2, pd);
    for (int k = 0; k < 2 * p->rank; k++) pads->v[k] = (double)p->pads[k];
    cf_case_const_input(c, pads);
    cf_run_case(ctx, c);
  }
}

static void emit_one_hot(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[2];
    int64_t depth;
    int axis;
  } oh_t;
  static const oh_t cases[] = {
      {"vector", 1, {4}, 5, -1}, {"axis0", 1, {4}, 3, 0}, {"matrix", 2, {2, 3}, 4, -1},
      {"matrix_axis1", 2, {2, 3}, 4, 1}, {"scalar", 0, {0}, 6, -1}, {"empty", 1, {0}, 3, -1},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const oh_t *o = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, o->name, dt, &rng);
    if (dt == WEFT_DT_STRING) { /* on/off values of strings: not a numeric reference */
      cf_case_free(c);
      return;
    }
    cf_array_t *idx = cf_array_new(WEFT_DT_INT64, o->rank, o->dims);
    for (int64_t k = 0; k < idx->n; k++)
      idx->v[k] = (double)cf_rng_int(&rng, -1, o->depth); /* -1 and depth: all off */
    double on = dt == WEFT_DT_BOOL ? 1 : 5, off = dt == WEFT_DT_BOOL ? 0 : 2;
    cf_case_expect(c, cf_ref_one_hot(idx, o->depth, on, off, o->axis, dt));
    cf_case_input(c, idx);
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, o->depth));
    cf_case_input(c, cf_array_scalar(dt, on));
    cf_case_input(c, cf_array_scalar(dt, off));
    if (o->axis != -1) cf_case_attr_int(c, "axis", o->axis);
    cf_run_case(ctx, c);
  }
}

static void emit_broadcast_to(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rin;
    int64_t din[3];
    int rout;
    int64_t dout[3];
  } bt_t;
  static const bt_t cases[] = {
      {"vector_to_matrix", 1, {3}, 2, {2, 3}}, {"unit_dims", 2, {1, 3}, 3, {4, 2, 3}},
      {"scalar", 0, {0}, 2, {2, 2}},           {"same", 2, {2, 3}, 2, {2, 3}},
      {"empty", 1, {1}, 2, {0, 1}},            {"middle", 3, {2, 1, 3}, 3, {2, 5, 3}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const bt_t *b = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, b->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, b->rin, b->din);
    cf_case_expect(c, cf_ref_broadcast_to(x, b->rout, b->dout));
    cf_case_input(c, x);
    cf_case_const_input(c, ints(i == 1 ? WEFT_DT_INT64 : WEFT_DT_INT32, b->rout, b->dout));
    cf_run_case(ctx, c);
  }
}

static void emit_dynamic_stitch(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "two_parts", dt, &rng);
  /* indices [[0,2],[1,3,4]] over rows of 3 elements. */
  int64_t i0v[2] = {0, 2}, i1v[3] = {1, 3, 4}, d0[2] = {2, 3}, d1[2] = {3, 3}, dout[2] = {5, 3};
  cf_array_t *a = data(&rng, dt, 2, d0), *b = data(&rng, dt, 2, d1);
  for (int64_t k = 0; b->v && dt != WEFT_DT_BOOL && k < b->n; k++)
    b->v[k] = cf_round_to_dtype(dt, b->v[k] + 50);
  cf_array_t *want = cf_array_new(dt, 2, dout);
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 3; k++) cf_copy_value(want, i0v[r] * 3 + k, a, r * 3 + k);
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < 3; k++) cf_copy_value(want, i1v[r] * 3 + k, b, r * 3 + k);
  cf_case_input(c, ints(WEFT_DT_INT32, 2, i0v));
  cf_case_input(c, ints(WEFT_DT_INT32, 3, i1v));
  cf_case_input(c, a);
  cf_case_input(c, b);
  int lens[2] = {2, 2};
  cf_case_args(c, 2, lens);
  cf_case_attr_int(c, "N", 2);
  cf_case_expect(c, want);
  cf_run_case(ctx, c);
}

static void emit_bcast_grad_args(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int r0, r1;
    int64_t s0[3], s1[3];
    int n0, n1;
    int64_t w0[3], w1[3];
  } bg_t;
  static const bg_t cases[] = {
      {"2x3x1_vs_3x5", 3, 2, {2, 3, 1}, {3, 5}, 1, 1, {2}, {0}},
      {"same", 2, 2, {2, 3}, {2, 3}, 0, 0, {0}, {0}},
      {"scalar_vs_matrix", 0, 2, {0}, {4, 5}, 2, 0, {0, 1}, {0}},
      /* Identical shapes take TensorFlow's fast path: nothing to reduce, even for 1s. */
      {"identical_ones", 2, 2, {1, 1}, {1, 1}, 0, 0, {0}, {0}},
      /* A dimension of 1 in both (and shapes differ): reduced for both. */
      {"both_one", 2, 2, {2, 1}, {1, 1}, 1, 2, {1}, {0, 1}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const bg_t *b = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, b->name, dt, &rng);
    cf_case_input(c, ints(dt, b->r0, b->s0));
    cf_case_input(c, ints(dt, b->r1, b->s1));
    cf_case_expect(c, ints(dt, b->n0, b->w0));
    cf_case_expect(c, ints(dt, b->n1, b->w1));
    cf_run_case(ctx, c);
  }
}

/* ConcatOffset: each input's start along the axis is the sum of the earlier inputs' sizes
 * there, 0 along every other dimension; shapes that differ off the axis, an axis out of range
 * and shapes of another length are errors. */
static void emit_concat_offset(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "shape_type", dt)) return;
  typedef struct {
    const char *name;
    int64_t dim;
    int n, rank[3];
    int64_t shapes[3][3];
    const char *error; /* NULL: valid */
  } co_t;
  static const co_t cases[] = {
      {"axis1_three", 1, 3, {3, 3, 3}, {{2, 3, 4}, {2, 5, 4}, {2, 1, 4}}, NULL},
      {"axis0_two", 0, 2, {2, 2}, {{4, 7}, {6, 7}}, NULL},
      {"negative_axis", -1, 2, {2, 2}, {{3, 2}, {3, 9}}, NULL},
      {"empty_inputs", 0, 3, {1, 1, 1}, {{0}, {5}, {0}}, NULL},
      {"mismatch_off_axis", 1, 2, {2, 2}, {{2, 3}, {4, 3}}, "All dimensions except 1 must match"},
      {"axis_out_of_range", 2, 2, {2, 2}, {{2, 3}, {2, 3}}, "Concat dim is out of range"},
      {"rank_differs", 0, 2, {2, 3}, {{2, 3}, {2, 3, 1}}, "should contain 2 elements"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const co_t *t = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, t->name, dt, &rng);
    cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, (double)t->dim));
    int64_t axis = t->dim < 0 ? t->dim + t->rank[0] : t->dim, start = 0;
    for (int k = 0; k < t->n; k++) {
      cf_case_input(c, ints(dt, t->rank[k], t->shapes[k]));
      if (t->error) continue;
      int64_t want[3] = {0, 0, 0};
      want[axis] = start;
      start += t->shapes[k][axis];
      cf_case_expect(c, ints(dt, t->rank[k], want));
    }
    int arg_len[2] = {0, t->n};
    cf_case_args(c, 2, arg_len);
    cf_case_attr_int(c, "N", t->n);
    if (t->error) cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, t->error);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Cast: every source dtype to every destination dtype. */

static const weft_dtype_t cast_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL};

static void emit_cast(cf_run_ctx_t *ctx, const char *op, weft_dtype_t src) {
  for (size_t k = 0; k < G_N_ELEMENTS(cast_types); k++) {
    weft_dtype_t dst = cast_types[k];
    char name[64];
    g_snprintf(name, sizeof name, "to_%s", weft_dtype_name(dst));
    cf_rng_t rng;
    cf_case_t *c = new_case(op, name, src, &rng);
    int64_t n = 257;
    /* Values both dtypes hold: within the destination's range (truncation toward zero). */
    double lo = fmax(cf_dtype_min(src), cf_dtype_min(dst));
    double hi = fmin(cf_dtype_max(src), cf_dtype_max(dst));
    if (dst == WEFT_DT_BOOL || src == WEFT_DT_BOOL) {
      lo = cf_dtype_is_signed(src) ? -2 : 0;
      hi = 2;
    }
    if (lo < -1000) lo = -1000;
    if (hi > 1000) hi = 1000;
    cf_gen_t g = {src == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_UNIFORM, lo, hi};
    cf_array_t *x = cf_gen_array(&rng, src, 1, &n, g);
    if (cf_dtype_is_float(src) && cf_dtype_is_float(dst)) {
      /* Float to float also carries the special values across. */
      x->v[0] = NAN;
      x->v[1] = INFINITY;
      x->v[2] = -INFINITY;
      x->v[3] = -0.0;
      x->v[4] = cf_round_to_dtype(src, 1e-30);
      x->v[5] = cf_round_to_dtype(src, 7e4); /* overflows half */
      x->v[6] = cf_round_to_dtype(src, 1.0 + 1.0 / 3);
    }
    cf_case_expect(c, cf_ref_cast(x, dst, false));
    cf_case_input(c, x);
    cf_case_attr_type(c, "DstT", dst);
    c->tol = (cf_tol_t){0, 0, 0};
    c->unsupported_per_case = true; /* one dtype pair may lack a kernel, the next not */
    cf_run_case(ctx, c);
  }
  if (src == WEFT_DT_FLOAT) {
    /* Out-of-range conversions to the smaller float types: Inf, and rounding to nearest even. */
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "float_to_half_rounding", src, &rng);
    double v[] = {65504, 65520, 1e5, -1e5, 1.0009765625, 1.00048828125, 1.00146484375, 6e-8,
                  2.9802322387695312e-08};
    cf_array_t *x = cf_array_vec(src, G_N_ELEMENTS(v), v);
    cf_case_expect(c, cf_ref_cast(x, WEFT_DT_HALF, false));
    cf_case_input(c, x);
    cf_case_attr_type(c, "DstT", WEFT_DT_HALF);
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

static void emit_cast_string(cf_run_ctx_t *ctx, const char *op, weft_dtype_t src) {
  (void)src;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "string_to_string", WEFT_DT_STRING, &rng);
  int64_t n = 5;
  cf_array_t *x = data(&rng, WEFT_DT_STRING, 1, &n);
  cf_case_expect(c, cf_array_copy(x));
  cf_case_input(c, x);
  cf_case_attr_type(c, "DstT", WEFT_DT_STRING);
  cf_run_case(ctx, c);
}

static void emit_cast_any(cf_run_ctx_t *ctx, const char *op, weft_dtype_t src) {
  if (src == WEFT_DT_STRING)
    emit_cast_string(ctx, op, src);
  else
    emit_cast(ctx, op, src);
}

/* ---------------------------------------------------------------------------------------------
 * IdentityN, PlaceholderWithDefault, Const */

static void emit_identity_n(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "float_int32_string", WEFT_DT_INVALID, &rng);
  int64_t d3[2] = {2, 3}, d5 = 5;
  cf_array_t *a = cf_gen_uniform(&rng, WEFT_DT_FLOAT, 2, d3, -1, 1);
  cf_array_t *b = data(&rng, WEFT_DT_INT32, 1, &d5);
  cf_array_t *s = data(&rng, WEFT_DT_STRING, 0, NULL);
  cf_case_expect(c, cf_array_copy(a));
  cf_case_expect(c, cf_array_copy(b));
  cf_case_expect(c, cf_array_copy(s));
  cf_case_input(c, a);
  cf_case_input(c, b);
  cf_case_input(c, s);
  int len = 3;
  cf_case_args(c, 1, &len);
  cf_run_case(ctx, c);
}

static void emit_placeholder_with_default(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "default_value", dt, &rng);
  int64_t d[2] = {2, 3};
  cf_array_t *x = data(&rng, dt, 2, d);
  cf_case_expect(c, cf_array_copy(x));
  cf_case_const_input(c, x);
  cf_case_attr_shape(c, "shape", 2, d);
  cf_run_case(ctx, c);
}

static void emit_const(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  const char *names[] = {"rank2", "scalar", "empty"};
  int ranks[] = {2, 0, 1};
  int64_t dims[][2] = {{3, 4}, {0}, {0}};
  for (int s = 0; s < 3; s++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, names[s], dt, &rng);
    cf_array_t *x = data(&rng, dt, ranks[s], dims[s]);
    cf_case_expect(c, cf_array_copy(x));
    cf_case_attr_tensor(c, "value", x);
    cf_case_attr_type(c, "dtype", dt);
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t index_dtypes[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t range_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                            WEFT_DT_INT64, WEFT_DT_HALF,  WEFT_DT_BFLOAT16,
                                            WEFT_DT_INT8,  WEFT_DT_INT16, WEFT_DT_UINT16,
                                            WEFT_DT_UINT32, WEFT_DT_INVALID};

const cf_suite_t cf_suites_array[] = {
    {"Reshape", cf_dtypes_all, emit_reshape, NULL},
    {"Transpose", cf_dtypes_all, emit_transpose, NULL},
    {"ConcatV2", cf_dtypes_all, emit_concat, NULL},
    {"Pack", cf_dtypes_all, emit_pack, NULL},
    {"Unpack", cf_dtypes_all, emit_pack, NULL},
    {"Fill", cf_dtypes_all, emit_fill, NULL},
    {"Shape", cf_dtypes_all, emit_shape_ops, NULL},
    {"ShapeN", cf_dtypes_all, emit_shape_ops, NULL},
    {"Size", cf_dtypes_all, emit_shape_ops, NULL},
    {"Rank", cf_dtypes_all, emit_shape_ops, NULL},
    {"ExpandDims", cf_dtypes_all, emit_expand_squeeze, NULL},
    {"Squeeze", cf_dtypes_all, emit_expand_squeeze, NULL},
    {"Slice", cf_dtypes_all, emit_slice, NULL},
    {"StridedSlice", cf_dtypes_all, emit_strided_slice, NULL},
    {"StridedSliceGrad", cf_dtypes_numeric, emit_strided_slice, NULL},
    {"Tile", cf_dtypes_all, emit_tile, NULL},
    {"Range", range_dtypes, emit_range, "Tidx"},
    {"Gather", cf_dtypes_all, emit_gather, "Tparams"},
    {"GatherV2", cf_dtypes_all, emit_gather, "Tparams"},
    {"Split", cf_dtypes_all, emit_split, NULL},
    {"SplitV", cf_dtypes_all, emit_split, NULL},
    {"Pad", cf_dtypes_all, emit_pad, NULL},
    {"OneHot", cf_dtypes_all, emit_one_hot, NULL},
    {"BroadcastTo", cf_dtypes_all, emit_broadcast_to, NULL},
    {"DynamicStitch", cf_dtypes_all, emit_dynamic_stitch, NULL},
    {"ParallelDynamicStitch", cf_dtypes_all, emit_dynamic_stitch, NULL},
    {"BroadcastGradientArgs", index_dtypes, emit_bcast_grad_args, NULL},
    {"ConcatOffset", index_dtypes, emit_concat_offset, "shape_type"},
    {"Cast", cf_dtypes_all, emit_cast_any, "SrcT"},
    {"IdentityN", cf_dtypes_none, emit_identity_n, NULL},
    {"PlaceholderWithDefault", cf_dtypes_all, emit_placeholder_with_default, "dtype"},
    {"Const", cf_dtypes_all, emit_const, "dtype"},
    {NULL, NULL, NULL, NULL},
};
