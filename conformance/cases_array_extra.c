/* cases_array_extra.c: conformance cases of more array ops (ReverseV2, Roll, ReverseSequence,
 * MatrixDiag, MatrixDiagV2/V3, MatrixDiagPart (V1, V3), MatrixSetDiag (V1, V3), MatrixBandPart,
 * SpaceToBatchND, BatchToSpaceND, SpaceToDepth, DepthToSpace, Where, NthElement, TopKV2, TopK,
 * Unique, UniqueWithCounts, InvertPermutation, ParallelConcat, DeepCopy, Empty, BroadcastArgs)
 * over every dtype each accepts, with distinct element values so that a misplaced element
 * shows, empty tensors, non-default attributes and the errors TensorFlow reports. */
#include <math.h>
#include <string.h>

#include "cases_array_common.h"

/* Distinct values in random order (for the ops that order them). */
static cf_array_t *shuffled(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  cf_array_t *a = data(rng, dt, rank, dims);
  for (int64_t i = a->n - 1; i > 0 && a->v; i--) {
    int64_t j = cf_rng_int(rng, 0, i);
    double t = a->v[i];
    a->v[i] = a->v[j];
    a->v[j] = t;
  }
  return a;
}


static cf_array_t *int_matrix(weft_dtype_t dt, int rows, int cols, const int64_t *v) {
  cf_array_t *a = cf_array_ints(dt, rows * cols, v);
  a->rank = 2;
  a->dims[0] = rows;
  a->dims[1] = cols;
  return a;
}

/* The case must fail with code and a message holding `msg`; n_out outputs are fetched. */
static void expect_error(cf_case_t *c, int n_out, const char *msg) {
  for (int i = 0; i < n_out; i++) cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
}

/* ---------------------------------------------------------------------------------------------
 * ReverseV2, Roll, ReverseSequence */

static void emit_reverse(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[4];
    int n_axes;
    int64_t axes[3];
  } rv_t;
  static const rv_t cases[] = {
      {"rank1", 1, {7}, 1, {0}},           {"rank3_axes_0_2", 3, {2, 3, 4}, 2, {0, 2}},
      {"negative_axis", 3, {2, 3, 4}, 1, {-1}}, {"no_axes", 2, {3, 4}, 0, {0}},
      {"scalar", 0, {0}, 0, {0}},          {"empty", 2, {0, 3}, 1, {1}},
      {"rank4_all", 4, {2, 1, 3, 2}, 3, {0, 3, 2}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const rv_t *r = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, r->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, r->rank, r->dims);
    bool mask[WEFT_MAX_RANK] = {false};
    for (int k = 0; k < r->n_axes; k++)
      mask[r->axes[k] < 0 ? r->axes[k] + r->rank : r->axes[k]] = true;
    cf_case_expect(c, cf_ref_reverse(x, mask));
    cf_case_input(c, x);
    cf_case_const_input(c, ints(i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32, r->n_axes, r->axes));
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name, *msg;
    int64_t axes[2];
  } errs[] = {{"error_duplicate_axis", "specified more than once", {0, -2}},
              {"error_axis_out_of_range", "out of valid range", {2, 0}}};
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[i].name, dt, &rng);
    int64_t d[2] = {2, 3};
    int i0 = cf_case_input(c, data(&rng, dt, 2, d));
    c->unknown_shape[i0] = true;
    cf_case_const_input(c, ints(WEFT_DT_INT32, 2, errs[i].axes));
    expect_error(c, 1, errs[i].msg);
    cf_run_case(ctx, c);
  }
}

static void emit_roll(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int n;
    int64_t shift[2], axis[2];
    bool scalar;
  } rl_t;
  static const rl_t cases[] = {
      {"rank1_scalar", 1, {7}, 1, {2}, {0}, true},
      {"rank2_both", 2, {3, 4}, 2, {1, -1}, {0, 1}, false},
      {"same_axis_twice", 2, {3, 4}, 2, {1, 2}, {1, 1}, false},
      {"shift_past_size", 3, {2, 3, 2}, 1, {7}, {-2}, false},
      {"negative_shift", 1, {5}, 1, {-7}, {0}, false},
      {"empty", 2, {0, 4}, 1, {3}, {1}, false},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const rl_t *r = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, r->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, r->rank, r->dims);
    int64_t shift[WEFT_MAX_RANK] = {0};
    for (int k = 0; k < r->n; k++)
      shift[r->axis[k] < 0 ? r->axis[k] + r->rank : r->axis[k]] += r->shift[k];
    cf_case_expect(c, r->dims[0] == 0 ? cf_array_copy(x) : cf_ref_roll(x, shift));
    cf_case_input(c, x);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_case_const_input(c, r->scalar ? int_scalar(it, r->shift[0]) : ints(it, r->n, r->shift));
    cf_case_const_input(c, r->scalar ? int_scalar(it, r->axis[0]) : ints(it, r->n, r->axis));
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name, *msg;
    int n_shift;
  } errs[] = {{"error_axis_out_of_range", "out of range", 1},
              {"error_size_mismatch", "shift and axis must have the same size", 2}};
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[i].name, dt, &rng);
    int64_t d[2] = {2, 3}, sh[2] = {1, 1}, ax = 2;
    int i0 = cf_case_input(c, data(&rng, dt, 2, d));
    c->unknown_shape[i0] = true;
    cf_case_const_input(c, ints(WEFT_DT_INT32, errs[i].n_shift, sh));
    cf_case_const_input(c, ints(WEFT_DT_INT32, 1, &ax));
    expect_error(c, 1, errs[i].msg);
    cf_run_case(ctx, c);
  }
}

static void emit_reverse_sequence(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "seq1_batch0", dt, &rng);
    int64_t d[3] = {3, 4, 2}, lens[3] = {4, 0, 2};
    cf_array_t *x = data(&rng, dt, 3, d);
    cf_case_expect(c, cf_ref_reverse_sequence(x, lens, 1, 0));
    cf_case_input(c, x);
    cf_case_input(c, ints(WEFT_DT_INT64, 3, lens));
    cf_case_attr_int(c, "seq_dim", 1);
    cf_run_case(ctx, c);
  }
  {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "seq0_batch2", dt, &rng);
    int64_t d[3] = {5, 2, 3}, lens[3] = {1, 5, 3};
    cf_array_t *x = data(&rng, dt, 3, d);
    cf_case_expect(c, cf_ref_reverse_sequence(x, lens, 0, 2));
    cf_case_input(c, x);
    cf_case_input(c, ints(WEFT_DT_INT32, 3, lens));
    cf_case_attr_int(c, "seq_dim", 0);
    cf_case_attr_int(c, "batch_dim", 2);
    cf_run_case(ctx, c);
  }
  {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "error_length_past_dim", dt, &rng);
    int64_t d[2] = {2, 3}, lens[2] = {1, 4};
    int i0 = cf_case_input(c, data(&rng, dt, 2, d));
    c->unknown_shape[i0] = true;
    cf_case_input(c, ints(WEFT_DT_INT64, 2, lens));
    cf_case_attr_int(c, "seq_dim", 1);
    expect_error(c, 1, "seq_lengths(1) > input.dims(1)");
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * The MatrixDiag family, MatrixBandPart */

static void emit_matrix_diag(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[2];
  } v1[] = {{"vector", 1, {3}}, {"batch", 2, {2, 4}}, {"empty", 1, {0}}, {"one", 1, {1}}};
  for (size_t i = 0; i < G_N_ELEMENTS(v1); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, v1[i].name, dt, &rng);
    cf_array_t *x = data(&rng, dt, v1[i].rank, v1[i].dims);
    int64_t n = v1[i].dims[v1[i].rank - 1];
    cf_case_expect(c, cf_ref_matrix_diag(x, 0, 0, n, n, NULL, false, false));
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_scalar", dt, &rng);
  int i0 = cf_case_input(c, data(&rng, dt, 0, NULL));
  c->unknown_shape[i0] = true;
  expect_error(c, 1, "diagonal must be at least 1-dim");
  cf_run_case(ctx, c);
}

/* MatrixDiagV2 / V3: k, num_rows, num_cols, padding_value. */
static void emit_matrix_diag_v3(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v3 = strcmp(op, "MatrixDiagV3") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int nk;
    int64_t k[2], rows, cols, out_rows, out_cols;
    const char *align;
  } md_t;
  static const md_t cases[] = {
      {"band_default_align", 3, {2, 3, 3}, 2, {-1, 1}, -1, -1, 3, 3, NULL},
      {"band_left_right", 3, {2, 3, 3}, 2, {-1, 1}, -1, -1, 3, 3, "LEFT_RIGHT"},
      {"band_right_right", 2, {3, 3}, 2, {-2, 0}, -1, -1, 3, 3, "RIGHT_RIGHT"},
      {"super_k1_rows4", 1, {3}, 1, {1}, 4, -1, 4, 4, NULL},
      {"sub_k_minus2_cols5", 1, {3}, 1, {-2}, -1, 5, 5, 5, "LEFT_LEFT"},
      {"k0_wide", 1, {3}, 1, {0}, 3, 6, 3, 6, NULL},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const md_t *m = &cases[i];
    if (!v3 && m->align != NULL) continue;
    const char *align = m->align ? m->align : (v3 ? "RIGHT_LEFT" : "LEFT_LEFT");
    bool super_right = strncmp(align, "RIGHT", 5) == 0;
    bool sub_right = strlen(align) > 6 && strcmp(align + strlen(align) - 5, "RIGHT") == 0;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, m->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, m->rank, m->dims);
    cf_array_t *pad = data(&rng, dt, 0, NULL);
    if (pad->v && dt != WEFT_DT_BOOL) pad->v[0] = cf_round_to_dtype(dt, 99);
    int64_t lower = m->k[0], upper = m->nk > 1 ? m->k[1] : m->k[0];
    cf_case_expect(c, cf_ref_matrix_diag(x, lower, upper, m->out_rows, m->out_cols, pad,
                                         super_right, sub_right));
    cf_case_input(c, x);
    cf_case_const_input(c, m->nk > 1 ? ints(WEFT_DT_INT32, 2, m->k)
                                     : int_scalar(WEFT_DT_INT32, m->k[0]));
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, m->rows));
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, m->cols));
    cf_case_input(c, pad);
    if (m->align) cf_case_attr_string(c, "align", m->align);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_lower_above_upper", dt, &rng);
  int64_t d = 3, k[2] = {1, 0};
  int i0 = cf_case_input(c, data(&rng, dt, 1, &d));
  c->unknown_shape[i0] = true;
  cf_case_const_input(c, ints(WEFT_DT_INT32, 2, k));
  cf_case_const_input(c, int_scalar(WEFT_DT_INT32, -1));
  cf_case_const_input(c, int_scalar(WEFT_DT_INT32, -1));
  cf_case_input(c, data(&rng, dt, 0, NULL));
  expect_error(c, 1, "must not be larger than upper_diag_index");
  cf_run_case(ctx, c);
}

static void emit_matrix_diag_part(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v1 = strcmp(op, "MatrixDiagPart") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int64_t lower, upper;
    const char *align;
  } mp_t;
  static const mp_t cases[] = {
      {"tall", 2, {4, 3}, 0, 0, NULL},          {"batch_square", 3, {2, 3, 3}, 0, 0, NULL},
      {"wide", 2, {2, 5}, 0, 0, NULL},          {"empty_batch", 3, {0, 2, 2}, 0, 0, NULL},
      {"band", 3, {2, 3, 4}, -1, 2, NULL},      {"band_left_right", 2, {4, 3}, -2, 1, "LEFT_RIGHT"},
      {"super_only", 2, {3, 5}, 1, 3, "RIGHT_RIGHT"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const mp_t *m = &cases[i];
    if (v1 && (m->lower != 0 || m->upper != 0)) continue;
    const char *align = m->align ? m->align : "RIGHT_LEFT";
    bool super_right = strncmp(align, "RIGHT", 5) == 0;
    bool sub_right = strcmp(align + strlen(align) - 5, "RIGHT") == 0;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, m->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, m->rank, m->dims);
    cf_array_t *pad = data(&rng, dt, 0, NULL);
    if (pad->v && dt != WEFT_DT_BOOL) pad->v[0] = cf_round_to_dtype(dt, 77);
    cf_case_expect(c, cf_ref_matrix_diag_part(x, m->lower, m->upper, v1 ? NULL : pad, super_right,
                                              sub_right));
    cf_case_input(c, x);
    if (!v1) {
      int64_t k[2] = {m->lower, m->upper};
      cf_case_const_input(c, m->lower == m->upper ? int_scalar(WEFT_DT_INT32, m->lower)
                                                  : ints(WEFT_DT_INT32, 2, k));
      cf_case_input(c, pad);
      if (m->align) cf_case_attr_string(c, "align", m->align);
    } else {
      cf_array_free(pad);
    }
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_rank1", dt, &rng);
  int64_t d = 3;
  int i0 = cf_case_input(c, data(&rng, dt, 1, &d));
  c->unknown_shape[i0] = true;
  if (!v1) {
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, 0));
    cf_case_input(c, data(&rng, dt, 0, NULL));
  }
  expect_error(c, 1, "input must be at least 2-dim");
  cf_run_case(ctx, c);
}

static void emit_matrix_set_diag(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v1 = strcmp(op, "MatrixSetDiag") == 0;
  typedef struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int64_t lower, upper;
    int drank;
    int64_t ddims[3];
    const char *align;
  } ms_t;
  static const ms_t cases[] = {
      {"batch_tall", 3, {2, 4, 3}, 0, 0, 2, {2, 3}, NULL},
      {"wide", 2, {2, 5}, 0, 0, 1, {2}, NULL},
      {"band", 2, {3, 4}, -1, 1, 2, {3, 3}, NULL},
      {"band_left_right", 3, {2, 4, 3}, -2, 0, 3, {2, 3, 3}, "LEFT_RIGHT"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const ms_t *m = &cases[i];
    if (v1 && (m->lower != 0 || m->upper != 0)) continue;
    const char *align = m->align ? m->align : "RIGHT_LEFT";
    bool super_right = strncmp(align, "RIGHT", 5) == 0;
    bool sub_right = strcmp(align + strlen(align) - 5, "RIGHT") == 0;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, m->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, m->rank, m->dims);
    cf_array_t *dg = shuffled(&rng, dt, m->drank, m->ddims);
    for (int64_t k = 0; dg->v && dt != WEFT_DT_BOOL && k < dg->n; k++)
      dg->v[k] = cf_round_to_dtype(dt, dg->v[k] + 40);
    cf_case_expect(c, cf_ref_matrix_set_diag(x, dg, m->lower, m->upper, super_right, sub_right));
    cf_case_input(c, x);
    cf_case_input(c, dg);
    if (!v1) {
      int64_t k[2] = {m->lower, m->upper};
      cf_case_const_input(c, m->lower == m->upper ? int_scalar(WEFT_DT_INT32, m->lower)
                                                  : ints(WEFT_DT_INT32, 2, k));
      if (m->align) cf_case_attr_string(c, "align", m->align);
    }
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_diagonal_shape", dt, &rng);
  int64_t d[2] = {3, 3}, dd = 2;
  int i0 = cf_case_input(c, data(&rng, dt, 2, d));
  int i1 = cf_case_input(c, data(&rng, dt, 1, &dd));
  c->unknown_shape[i0] = c->unknown_shape[i1] = true;
  if (!v1) cf_case_const_input(c, int_scalar(WEFT_DT_INT32, 0));
  expect_error(c, 1, "diagonal");
  cf_run_case(ctx, c);
}

static void emit_band_part(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int64_t lo, up;
  } cases[] = {{"lo1_up2", 1, 2}, {"lower_triangle", -1, 0}, {"upper_triangle", 0, -1},
               {"diagonal", 0, 0}, {"everything", -1, -1}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    int64_t d[3] = {2, 4, 5};
    cf_array_t *x = data(&rng, dt, 3, d);
    cf_case_expect(c, cf_ref_band_part(x, cases[i].lo, cases[i].up));
    cf_case_input(c, x);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT32 : WEFT_DT_INT64;
    cf_case_const_input(c, int_scalar(it, cases[i].lo));
    cf_case_const_input(c, int_scalar(it, cases[i].up));
    cf_run_case(ctx, c);
  }
  {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "empty", dt, &rng);
    int64_t d[2] = {0, 3};
    cf_array_t *x = data(&rng, dt, 2, d);
    cf_case_expect(c, cf_array_copy(x));
    cf_case_input(c, x);
    cf_case_const_input(c, int_scalar(WEFT_DT_INT64, 0)); /* at most the 0 rows */
    cf_case_const_input(c, int_scalar(WEFT_DT_INT64, 1));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_num_lower_too_big", dt, &rng);
  int64_t d[2] = {2, 3};
  int i0 = cf_case_input(c, data(&rng, dt, 2, d));
  c->unknown_shape[i0] = true;
  cf_case_const_input(c, int_scalar(WEFT_DT_INT64, 3));
  cf_case_const_input(c, int_scalar(WEFT_DT_INT64, 0));
  expect_error(c, 1, "num_lower must be negative or less or equal to number of rows");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * SpaceToBatchND, BatchToSpaceND, SpaceToDepth, DepthToSpace */

typedef struct {
  const char *name;
  int rank;
  int64_t dims[4];
  int m;
  int64_t block[2], pads[4];
} sb_t;

static void emit_space_batch(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool to_batch = strcmp(op, "SpaceToBatchND") == 0;
  static const sb_t s2b[] = {
      {"block2x2", 4, {1, 4, 4, 1}, 2, {2, 2}, {0, 0, 0, 0}},
      {"padded_2x3", 4, {2, 3, 5, 2}, 2, {2, 3}, {1, 0, 0, 1}},
      {"one_spatial_dim", 3, {2, 5, 3}, 1, {3}, {1, 0}},
      {"empty_batch", 4, {0, 2, 2, 1}, 2, {2, 2}, {0, 0, 0, 0}},
      /* Uneven padding on both sides of both dims, blocks of different sizes (the dilated
       * depthwise convolution of the dl4j conv_4 graph). */
      {"padded_3x2_both_sides", 4, {2, 3, 4, 2}, 2, {3, 2}, {1, 2, 1, 1}},
  };
  static const sb_t b2s[] = {
      {"block2x2", 4, {4, 2, 2, 1}, 2, {2, 2}, {0, 0, 0, 0}},
      {"cropped_2x3", 4, {12, 2, 2, 2}, 2, {2, 3}, {1, 0, 0, 1}},
      {"one_spatial_dim", 3, {6, 2, 3}, 1, {3}, {1, 0}},
      {"empty_batch", 4, {0, 2, 2, 1}, 2, {2, 2}, {0, 0, 0, 0}},
      {"cropped_3x2_both_sides", 4, {12, 3, 2, 2}, 2, {3, 2}, {0, 1, 1, 1}},
  };
  G_STATIC_ASSERT(G_N_ELEMENTS(s2b) == G_N_ELEMENTS(b2s));
  const sb_t *cases = to_batch ? s2b : b2s;
  for (size_t i = 0; i < G_N_ELEMENTS(s2b); i++) {
    const sb_t *s = &cases[i];
    cf_rng_t rng;
    cf_case_t *c = new_case(op, s->name, dt, &rng);
    cf_array_t *x = data(&rng, dt, s->rank, s->dims);
    cf_case_expect(c, to_batch ? cf_ref_space_to_batch(x, s->m, s->block, s->pads)
                               : cf_ref_batch_to_space(x, s->m, s->block, s->pads));
    cf_case_input(c, x);
    weft_dtype_t it = i % 2 ? WEFT_DT_INT64 : WEFT_DT_INT32;
    cf_case_const_input(c, ints(it, s->m, s->block));
    cf_case_const_input(c, int_matrix(it, s->m, 2, s->pads));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, to_batch ? "error_not_divisible" : "error_batch_not_divisible", dt,
                          &rng);
  int64_t d[4] = {3, 3, 4, 1}, block[2] = {2, 2}, pads[4] = {0, 0, 0, 0};
  int i0 = cf_case_input(c, data(&rng, dt, 4, d));
  c->unknown_shape[i0] = true;
  cf_case_const_input(c, ints(WEFT_DT_INT32, 2, block));
  cf_case_const_input(c, int_matrix(WEFT_DT_INT32, 2, 2, pads));
  expect_error(c, 1, to_batch ? "is not divisible by block_shape" : "is not divisible by product");
  cf_run_case(ctx, c);
  c = new_case(op, "error_negative", dt, &rng);
  int64_t d2[4] = {4, 2, 2, 1}, neg[4] = {0, -1, 0, 0};
  i0 = cf_case_input(c, data(&rng, dt, 4, d2));
  c->unknown_shape[i0] = true;
  cf_case_const_input(c, ints(WEFT_DT_INT32, 2, block));
  cf_case_const_input(c, int_matrix(WEFT_DT_INT32, 2, 2, neg));
  expect_error(c, 1, "must be non-negative");
  cf_run_case(ctx, c);
}

static void emit_depth_space(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool to_depth = strcmp(op, "SpaceToDepth") == 0;
  static const struct {
    const char *name;
    int64_t s2d[4], d2s[4], bs;
  } cases[] = {{"block2", {1, 4, 6, 2}, {1, 2, 3, 8}, 2},
               {"block3", {2, 3, 3, 1}, {2, 1, 2, 9}, 3},
               {"empty_batch", {0, 2, 2, 3}, {0, 1, 1, 12}, 2}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_array_t *x = data(&rng, dt, 4, to_depth ? cases[i].s2d : cases[i].d2s);
    cf_case_expect(c, cf_ref_space_to_depth(x, cases[i].bs, to_depth));
    cf_case_input(c, x);
    cf_case_attr_int(c, "block_size", cases[i].bs);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_not_divisible", dt, &rng);
  int64_t d[4] = {1, 3, 3, 3};
  int i0 = cf_case_input(c, data(&rng, dt, 4, d));
  c->unknown_shape[i0] = true;
  cf_case_attr_int(c, "block_size", 2);
  expect_error(c, 1, "should be divisible by");
  cf_run_case(ctx, c);
  c = new_case(op, "error_nchw_on_cpu", dt, &rng);
  int64_t d2[4] = {1, 8, 2, 2};
  i0 = cf_case_input(c, data(&rng, dt, 4, d2));
  c->unknown_shape[i0] = true;
  cf_case_attr_int(c, "block_size", 2);
  cf_case_attr_string(c, "data_format", "NCHW");
  expect_error(c, 1, "NCHW");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * Where, NthElement, TopKV2, TopK */

static void emit_where(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
  } cases[] = {{"rank3", 3, {2, 3, 4}}, {"rank1_1023", 1, {1023}}, {"scalar", 0, {0}},
               {"empty", 2, {0, 3}}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_UNIFORM, 0, 2};
    cf_array_t *x = cf_gen_array(&rng, dt, cases[i].rank, cases[i].dims, g);
    for (int64_t k = 0; k < x->n; k++) x->v[k] = cf_round_to_dtype(dt, x->v[k] < 1 ? 0 : x->v[k]);
    if (i == 2) x->v[0] = 1;
    cf_case_expect(c, cf_ref_where(x));
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
  if (cf_dtype_is_float(dt)) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "nan_true_minus_zero_false", dt, &rng);
    double v[] = {NAN, -0.0, 0.0, INFINITY, 1e-30, -2};
    cf_array_t *x = cf_array_vec(dt, G_N_ELEMENTS(v), v);
    for (int64_t k = 0; k < x->n; k++) x->v[k] = cf_round_to_dtype(dt, x->v[k]);
    cf_case_expect(c, cf_ref_where(x));
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
}

static void emit_nth_element(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int64_t n;
    bool reverse, dups;
  } cases[] = {{"first", 2, {3, 7}, 0, false, false},  {"middle", 2, {3, 7}, 3, false, false},
               {"last", 2, {3, 7}, 6, false, false},   {"reverse", 3, {2, 2, 5}, 1, true, false},
               {"rank1", 1, {9}, 4, false, false},     {"duplicates", 2, {4, 6}, 2, false, true},
               {"empty_rows", 2, {0, 3}, 1, false, false}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_array_t *x = shuffled(&rng, dt, cases[i].rank, cases[i].dims);
    for (int64_t k = 0; cases[i].dups && k < x->n; k++)
      x->v[k] = cf_round_to_dtype(dt, fmod(x->v[k], 3));
    cf_case_expect(c, cf_ref_nth_element(x, cases[i].n, cases[i].reverse));
    cf_case_input(c, x);
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, cases[i].n));
    if (cases[i].reverse) cf_case_attr_bool(c, "reverse", true);
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name, *msg;
    int64_t n;
  } errs[] = {{"error_n_too_big", "Input must have at least n+1 columns", 3},
              {"error_n_negative", "Need n >= 0, got -1", -1}};
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[i].name, dt, &rng);
    int64_t d[2] = {2, 3};
    int i0 = cf_case_input(c, data(&rng, dt, 2, d));
    c->unknown_shape[i0] = true;
    int i1 = cf_case_input(c, int_scalar(WEFT_DT_INT32, errs[i].n));
    c->unknown_shape[i1] = true;
    expect_error(c, 1, errs[i].msg);
    cf_run_case(ctx, c);
  }
}

/* sorted = false: the k largest in some order, each index pointing at its value. */
static char *check_top_k_unsorted(const cf_case_t *c, cf_array_t *const *out, int n_out) {
  if (n_out < 2 || out[0] == NULL || out[1] == NULL) return g_strdup("outputs missing");
  const cf_array_t *x = c->inputs[0], *v = out[0], *ix = out[1];
  int64_t cols = x->dims[x->rank - 1], k = v->dims[v->rank - 1];
  cf_array_t *want_v, *want_i;
  cf_ref_top_k(x, k, ix->dtype, &want_v, &want_i);
  char *why = NULL;
  if (v->n != want_v->n || ix->n != want_v->n) why = g_strdup("wrong output size");
  for (int64_t r = 0; why == NULL && k > 0 && r < v->n / k; r++) {
    double got[64], want[64];
    for (int64_t j = 0; j < k && j < 64; j++) {
      int64_t col = (int64_t)ix->v[r * k + j];
      if (col < 0 || col >= cols || x->v[r * cols + col] != v->v[r * k + j]) {
        why = g_strdup_printf("row %lld: index %lld does not hold value %g", (long long)r,
                              (long long)col, v->v[r * k + j]);
        break;
      }
      got[j] = v->v[r * k + j];
      want[j] = want_v->v[r * k + j];
    }
    for (int64_t j = 0; why == NULL && j < k && j < 64; j++) {
      int64_t hits = 0;
      for (int64_t q = 0; q < k; q++) hits += (got[q] == want[j]) - (want[q] == want[j]);
      if (hits != 0) why = g_strdup_printf("row %lld: not the k largest values", (long long)r);
    }
  }
  cf_array_free(want_v);
  cf_array_free(want_i);
  return why;
}

/* TopK (TensorFlow 1.x) has k as an attr and int32 indices only; TopKV2 has k as an input. */
static void top_k_set_k(cf_case_t *c, bool v1, int64_t k, bool unknown) {
  if (v1) {
    cf_case_attr_int(c, "k", k);
  } else if (unknown) {
    int i1 = cf_case_input(c, int_scalar(WEFT_DT_INT32, k));
    c->unknown_shape[i1] = true;
  } else {
    cf_case_const_input(c, int_scalar(WEFT_DT_INT32, k));
  }
}

static void emit_top_k(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v1 = strcmp(op, "TopK") == 0;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[3];
    int64_t k;
    bool dups;
    weft_dtype_t it;
  } cases[] = {{"k3", 2, {3, 7}, 3, false, WEFT_DT_INVALID},
               {"ties_lower_index_first", 2, {4, 6}, 4, true, WEFT_DT_INVALID},
               {"k_all_columns", 3, {2, 2, 5}, 5, false, WEFT_DT_INT64},
               {"k1", 1, {9}, 1, false, WEFT_DT_INVALID},
               {"k0", 2, {2, 3}, 0, false, WEFT_DT_INVALID},
               {"empty_rows", 2, {0, 3}, 2, false, WEFT_DT_INT16}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    if (v1 && cases[i].it != WEFT_DT_INVALID) continue;
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_array_t *x = shuffled(&rng, dt, cases[i].rank, cases[i].dims);
    for (int64_t k = 0; cases[i].dups && k < x->n; k++)
      x->v[k] = cf_round_to_dtype(dt, fmod(x->v[k], 3));
    weft_dtype_t it = cases[i].it == WEFT_DT_INVALID ? WEFT_DT_INT32 : cases[i].it;
    cf_array_t *vals, *inds;
    cf_ref_top_k(x, cases[i].k, it, &vals, &inds);
    cf_case_expect(c, vals);
    cf_case_expect(c, inds);
    cf_case_input(c, x);
    top_k_set_k(c, v1, cases[i].k, false);
    if (cases[i].it != WEFT_DT_INVALID) cf_case_attr_type(c, "index_type", it);
    cf_run_case(ctx, c);
  }
  {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "unsorted", dt, &rng);
    int64_t d[2] = {3, 10};
    cf_array_t *x = shuffled(&rng, dt, 2, d);
    cf_case_input(c, x);
    top_k_set_k(c, v1, 4, false);
    cf_case_attr_bool(c, "sorted", false);
    cf_case_expect(c, NULL);
    cf_case_expect(c, NULL);
    c->check = check_top_k_unsorted;
    cf_run_case(ctx, c);
  }
  static const struct {
    const char *name, *msg;
    int64_t k;
  } errs[] = {{"error_k_too_big", "input must have at least k columns. Had 3, needed 5", 5},
              {"error_k_negative", "Need k >= 0, got -1", -1}};
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, errs[i].name, dt, &rng);
    int64_t d[2] = {2, 3};
    int i0 = cf_case_input(c, data(&rng, dt, 2, d));
    c->unknown_shape[i0] = true;
    top_k_set_k(c, v1, errs[i].k, true);
    /* TopK's k is an `int >= 0` attr: a negative one is refused when the node is made, as in
     * TensorFlow, before the kernel's check can run. */
    expect_error(c, 2, v1 && errs[i].k < 0 ? "attr 'k' is -1, less than its minimum 0"
                                           : errs[i].msg);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Unique, UniqueWithCounts, InvertPermutation */

static void emit_unique(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool counts = strcmp(op, "UniqueWithCounts") == 0;
  static const struct {
    const char *name;
    int64_t n;
    int mod;
    weft_dtype_t it;
  } cases[] = {{"repeats", 12, 4, WEFT_DT_INVALID},
               {"all_distinct", 7, 0, WEFT_DT_INT64},
               {"one", 1, 0, WEFT_DT_INVALID},
               {"empty", 0, 0, WEFT_DT_INVALID},
               {"long_1023", 1023, 37, WEFT_DT_INT64}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_array_t *x = shuffled(&rng, dt, 1, &cases[i].n);
    if (cases[i].mod > 0) {
      if (x->s) {
        for (int64_t k = 0; k < x->n; k++) g_string_assign(x->s[k], x->s[k % cases[i].mod]->str);
      } else if (dt != WEFT_DT_BOOL) {
        for (int64_t k = 0; k < x->n; k++)
          x->v[k] = cf_round_to_dtype(dt, fmod(x->v[k], cases[i].mod));
      }
    }
    weft_dtype_t it = cases[i].it == WEFT_DT_INVALID ? WEFT_DT_INT32 : cases[i].it;
    cf_array_t *y, *idx, *cnt;
    cf_ref_unique(x, it, &y, &idx, &cnt);
    cf_case_expect(c, y);
    cf_case_expect(c, idx);
    if (counts) cf_case_expect(c, cnt);
    else cf_array_free(cnt);
    cf_case_input(c, x);
    if (cases[i].it != WEFT_DT_INVALID) cf_case_attr_type(c, "out_idx", it);
    cf_run_case(ctx, c);
  }
  if (cf_dtype_is_float(dt)) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "zero_signs_and_nan", dt, &rng);
    double v[] = {0.0, -0.0, NAN, 1.5, NAN, 0.0, 1.5};
    cf_array_t *x = cf_array_vec(dt, G_N_ELEMENTS(v), v);
    cf_array_t *y, *idx, *cnt;
    cf_ref_unique(x, WEFT_DT_INT32, &y, &idx, &cnt);
    cf_case_expect(c, y);
    cf_case_expect(c, idx);
    if (counts) cf_case_expect(c, cnt);
    else cf_array_free(cnt);
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_rank2", dt, &rng);
  int64_t d[2] = {2, 2};
  int i0 = cf_case_input(c, data(&rng, dt, 2, d));
  c->unknown_shape[i0] = true;
  expect_error(c, counts ? 3 : 2, "unique expects a 1D vector.");
  cf_run_case(ctx, c);
}

static void emit_invert_permutation(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int n;
    int64_t v[6];
    const char *err;
  } cases[] = {{"six", 6, {3, 0, 5, 1, 4, 2}, NULL},
               {"identity", 3, {0, 1, 2}, NULL},
               {"empty", 0, {0}, NULL},
               {"error_duplicate", 3, {0, 2, 2}, "2 is duplicated in the input."},
               {"error_out_of_range", 3, {0, 3, 1}, "3 is not between 0 and 3"},
               {"error_negative", 2, {-1, 0}, "-1 is not between 0 and 2"}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_array_t *x = ints(dt, cases[i].n, cases[i].v);
    if (cases[i].err) {
      int i0 = cf_case_input(c, x);
      c->unknown_shape[i0] = true;
      expect_error(c, 1, cases[i].err);
    } else {
      cf_case_expect(c, cf_ref_invert_permutation(x));
      cf_case_input(c, x);
    }
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * ParallelConcat, DeepCopy, Empty, BroadcastArgs */

static void emit_parallel_concat(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "three", dt, &rng);
  int64_t d[3] = {1, 2, 3}, out[3] = {3, 2, 3};
  cf_array_t *parts[3];
  cf_array_t *want = cf_array_new(dt, 3, out);
  for (int i = 0; i < 3; i++) {
    parts[i] = shuffled(&rng, dt, 3, d);
    for (int64_t k = 0; k < 6; k++) cf_copy_value(want, i * 6 + k, parts[i], k);
  }
  for (int i = 0; i < 3; i++) cf_case_input(c, parts[i]);
  int len = 3;
  cf_case_args(c, 1, &len);
  cf_case_attr_int(c, "N", 3);
  cf_case_attr_shape(c, "shape", 3, out);
  cf_case_expect(c, want);
  cf_run_case(ctx, c);
  c = new_case(op, "error_shape_attr", dt, &rng);
  int64_t wrong[3] = {4, 2, 3};
  for (int i = 0; i < 3; i++) {
    int k = cf_case_input(c, shuffled(&rng, dt, 3, d));
    c->unknown_shape[k] = true;
  }
  cf_case_args(c, 1, &len);
  cf_case_attr_int(c, "N", 3);
  cf_case_attr_shape(c, "shape", 3, wrong);
  expect_error(c, 1, "do not make the attr shape");
  cf_run_case(ctx, c);
}

static void emit_deep_copy(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[2];
  } cases[] = {{"rank2", 2, {2, 3}}, {"scalar", 0, {0}}, {"empty", 2, {3, 0}}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_array_t *x = data(&rng, dt, cases[i].rank, cases[i].dims);
    cf_case_expect(c, cf_array_copy(x));
    cf_case_input(c, x);
    cf_run_case(ctx, c);
  }
}

static void emit_empty(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  static const struct {
    const char *name;
    int n;
    int64_t dims[3];
  } cases[] = {{"rank2", 2, {2, 3}}, {"scalar", 0, {0}}, {"empty", 3, {2, 0, 4}}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_case_const_input(c, ints(WEFT_DT_INT32, cases[i].n, cases[i].dims));
    cf_case_attr_type(c, "dtype", dt);
    cf_case_attr_bool(c, "init", true); /* init: zeros, so the values are defined */
    cf_case_expect(c, cf_array_new(dt, cases[i].n, cases[i].dims));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_negative_dim", dt, &rng);
  int64_t bad[2] = {2, -1};
  int i0 = cf_case_input(c, ints(WEFT_DT_INT32, 2, bad));
  c->unknown_shape[i0] = true;
  cf_case_attr_type(c, "dtype", dt);
  expect_error(c, 1, "must be >= 0");
  cf_run_case(ctx, c);
}

static void emit_broadcast_args(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int r0, r1, rw;
    int64_t s0[3], s1[3], w[3];
  } cases[] = {{"2x1x3_vs_4x1", 3, 2, 3, {2, 1, 3}, {4, 1}, {2, 4, 3}},
               {"scalar_vs_vector", 0, 1, 1, {0}, {3}, {3}},
               {"same", 2, 2, 2, {2, 5}, {2, 5}, {2, 5}},
               {"zero_dim", 2, 1, 2, {0, 1}, {4}, {0, 4}}};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, cases[i].name, dt, &rng);
    cf_case_input(c, ints(dt, cases[i].r0, cases[i].s0));
    cf_case_input(c, ints(dt, cases[i].r1, cases[i].s1));
    cf_case_expect(c, ints(dt, cases[i].rw, cases[i].w));
    cf_run_case(ctx, c);
  }
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "error_incompatible", dt, &rng);
  int64_t a[2] = {2, 3}, b[1] = {4};
  cf_case_input(c, ints(dt, 2, a));
  cf_case_input(c, ints(dt, 1, b));
  expect_error(c, 1, "Incompatible shapes");
  cf_run_case(ctx, c);
}

static const weft_dtype_t index_dtypes[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t where_dtypes[] = {
    WEFT_DT_BOOL,  WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16,
    WEFT_DT_INT8,  WEFT_DT_INT16,  WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,
    WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_array_extra[] = {
    {"ReverseV2", cf_dtypes_all, emit_reverse, NULL},
    {"Roll", cf_dtypes_all, emit_roll, NULL},
    {"ReverseSequence", cf_dtypes_all, emit_reverse_sequence, NULL},
    {"MatrixDiag", cf_dtypes_all, emit_matrix_diag, NULL},
    {"MatrixDiagV2", cf_dtypes_all, emit_matrix_diag_v3, NULL},
    {"MatrixDiagV3", cf_dtypes_all, emit_matrix_diag_v3, NULL},
    {"MatrixDiagPart", cf_dtypes_all, emit_matrix_diag_part, NULL},
    {"MatrixDiagPartV3", cf_dtypes_all, emit_matrix_diag_part, NULL},
    {"MatrixSetDiag", cf_dtypes_all, emit_matrix_set_diag, NULL},
    {"MatrixSetDiagV3", cf_dtypes_all, emit_matrix_set_diag, NULL},
    {"MatrixBandPart", cf_dtypes_all, emit_band_part, NULL},
    {"SpaceToBatchND", cf_dtypes_all, emit_space_batch, NULL},
    {"BatchToSpaceND", cf_dtypes_all, emit_space_batch, NULL},
    {"SpaceToDepth", cf_dtypes_all, emit_depth_space, NULL},
    {"DepthToSpace", cf_dtypes_all, emit_depth_space, NULL},
    {"Where", where_dtypes, emit_where, NULL},
    {"NthElement", cf_dtypes_real_int, emit_nth_element, NULL},
    {"TopKV2", cf_dtypes_real_int, emit_top_k, NULL},
    {"TopK", cf_dtypes_real_int, emit_top_k, NULL},
    {"Unique", cf_dtypes_all, emit_unique, NULL},
    {"UniqueWithCounts", cf_dtypes_all, emit_unique, NULL},
    {"InvertPermutation", index_dtypes, emit_invert_permutation, NULL},
    {"ParallelConcat", cf_dtypes_all, emit_parallel_concat, NULL},
    {"DeepCopy", cf_dtypes_all, emit_deep_copy, NULL},
    {"Empty", cf_dtypes_all, emit_empty, "dtype"},
    {"BroadcastArgs", index_dtypes, emit_broadcast_args, NULL},
    {NULL, NULL, NULL, NULL},
};
