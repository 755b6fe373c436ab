/* cases_ragged.c: conformance cases of RaggedRange (tf.ragged.range) against hand-computed
 * answers: rows range(starts[i], limits[i], deltas[i]) with scalars broadcast, a limit behind
 * its start giving an empty row (not Range's error), negative and fractional deltas, both
 * Tsplits; and TensorFlow's errors (ragged_range_op.cc): a zero delta, vectors of different
 * lengths, an input of rank 2, a total past int32 splits. */
#include "reference.h"

static cf_array_t *vec(weft_dtype_t dt, int n, const double *v) {
  return n < 0 ? cf_array_scalar(dt, v[0]) : cf_array_vec(dt, n, v);
}

/* starts, limits, deltas (n < 0: a scalar) -> splits (Tsplits tsplits) and values. */
static void ragged_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                        const int n[3], const double *in[3], weft_dtype_t tsplits,
                        int n_splits, const double *splits, int n_values,
                        const double *values) {
  cf_case_t *c = cf_case_new(op, name, dt);
  for (int i = 0; i < 3; i++) cf_case_input(c, vec(dt, n[i], in[i]));
  if (tsplits != WEFT_DT_INVALID) cf_case_attr_type(c, "Tsplits", tsplits);
  cf_case_expect(c, cf_array_vec(tsplits == WEFT_DT_INVALID ? WEFT_DT_INT64 : tsplits, n_splits,
                                 splits));
  cf_case_expect(c, cf_array_vec(dt, n_values, values));
  cf_run_case(ctx, c);
}

static void error_case(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt, const char *name,
                       const int n[3], const double *in[3], weft_dtype_t tsplits,
                       const char *msg) {
  cf_case_t *c = cf_case_new(op, name, dt);
  for (int i = 0; i < 3; i++) {
    int k = cf_case_input(c, vec(dt, n[i], in[i]));
    c->unknown_shape[k] = true; /* the kernel, not shape inference, must refuse it */
  }
  if (tsplits != WEFT_DT_INVALID) cf_case_attr_type(c, "Tsplits", tsplits);
  cf_case_expect(c, NULL);
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
  cf_run_case(ctx, c);
}

static void emit_ragged_range(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool integer = dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64;
  /* ragged.range([2, 5, 8], [3, 5, 12], 1) = [[2], [], [8, 9, 10, 11]] */
  static const double s1[] = {2, 5, 8}, l1[] = {3, 5, 12}, d1[] = {1};
  ragged_case(ctx, op, dt, "vectors_scalar_delta", (const int[]){3, 3, -1},
              (const double *[]){s1, l1, d1}, WEFT_DT_INVALID, 4, (const double[]){0, 1, 1, 5},
              5, (const double[]){2, 8, 9, 10, 11});
  /* Negative deltas; a limit behind its start is an empty row. */
  static const double s2[] = {10, 0, -3}, l2[] = {4, 5, -8}, d2[] = {-2, -1, -2};
  ragged_case(ctx, op, dt, "negative_deltas_empty_row", (const int[]){3, 3, 3},
              (const double *[]){s2, l2, d2}, WEFT_DT_INT32, 4, (const double[]){0, 3, 3, 6}, 6,
              (const double[]){10, 8, 6, -3, -5, -7});
  /* All scalars: one row. */
  static const double s3[] = {-1}, l3[] = {6}, d3[] = {3};
  ragged_case(ctx, op, dt, "all_scalars", (const int[]){-1, -1, -1},
              (const double *[]){s3, l3, d3}, WEFT_DT_INT64, 2, (const double[]){0, 3}, 3,
              (const double[]){-1, 2, 5});
  /* Zero rows. */
  ragged_case(ctx, op, dt, "zero_rows", (const int[]){0, 0, -1},
              (const double *[]){s3, l3, d3}, WEFT_DT_INT64, 1, (const double[]){0}, 0,
              (const double[]){0});
  if (!integer) {
    static const double s4[] = {0, 1}, l4[] = {1, 2}, d4[] = {0.25, 0.5};
    ragged_case(ctx, op, dt, "fractional_deltas", (const int[]){2, 2, 2},
                (const double *[]){s4, l4, d4}, WEFT_DT_INT64, 3, (const double[]){0, 4, 6}, 6,
                (const double[]){0, 0.25, 0.5, 0.75, 1, 1.5});
  }
  static const double z[] = {0}, one[] = {1}, two[] = {1, 2}, three[] = {1, 2, 3};
  error_case(ctx, op, dt, "error_delta_0", (const int[]){-1, -1, 1},
             (const double *[]){z, one, z}, WEFT_DT_INVALID, "Requires delta != 0");
  error_case(ctx, op, dt, "error_lengths_differ", (const int[]){2, 3, -1},
             (const double *[]){two, three, one}, WEFT_DT_INVALID,
             "starts, limits, and deltas must have the same shape");
  cf_case_t *c = cf_case_new(op, "error_limits_rank2", dt);
  cf_case_input(c, cf_array_scalar(dt, 0));
  cf_case_input(c, cf_array_new(dt, 2, (const int64_t[]){1, 1}));
  cf_case_input(c, cf_array_scalar(dt, 1));
  for (int i = 0; i < 3; i++) c->unknown_shape[i] = true;
  cf_case_expect(c, NULL);
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "limits must be a scalar or vector");
  cf_run_case(ctx, c);
  if (dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64) {
    /* 2 x 2e9 values: past int32 splits, refused before any value is allocated. */
    static const double big[] = {2e9, 2e9};
    error_case(ctx, op, dt, "error_int32_splits_overflow", (const int[]){-1, 2, -1},
               (const double *[]){z, big, one}, WEFT_DT_INT32,
               "The total range size overflowed. Consider using int64 instead of int32 for "
               "row_splits_dtype.");
  }
}

static const weft_dtype_t ragged_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_BFLOAT16,
                                             WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};

const cf_suite_t cf_suites_ragged[] = {
    {"RaggedRange", ragged_dtypes, emit_ragged_range, NULL},
    {NULL, NULL, NULL, NULL},
};
