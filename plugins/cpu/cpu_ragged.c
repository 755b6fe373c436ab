/* cpu_ragged.c: the CPU kernel of RaggedRange (tf.ragged.range) with the semantics and error
 * texts of TensorFlow's ragged_range_op.cc: row i is range(starts[i], limits[i], deltas[i]),
 * empty (not an error, unlike Range) when the limit lies behind the start; scalar inputs
 * broadcast over the rows of the vector ones. */
#include <math.h>
#include <stdint.h>

#include "cpu_internal.h"

/* One input's element for `row` (element 0 when the input is a broadcast scalar). */
static double at(const weft_tensor_view_t *v, int64_t row) {
  return weft__cpu_get_double(v, v->rank == 0 ? 0 : row);
}

static int64_t at_int(const weft_tensor_view_t *v, int64_t row) {
  return weft__cpu_index_at(v, v->rank == 0 ? 0 : row);
}

/* The value a float of dtype dt holds for x (float32 and bfloat16 round as the type does). */
static double round_to(weft_dtype_t dt, double x) {
  if (dt == WEFT_DT_FLOAT) return (float)x;
  if (dt == WEFT_DT_BFLOAT16) return weft__cpu_bf16_to_float(weft__cpu_float_to_bf16((float)x));
  return x;
}

/* The number of elements of row `row`, or a status (TensorFlow's texts). */
static weft_status_t *row_size(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *in,
                               int64_t row, int64_t *size) {
  weft_dtype_t dt = in[0].dtype;
  bool integer = dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64;
  if (integer) {
    int64_t s = at_int(&in[0], row), l = at_int(&in[1], row), d = at_int(&in[2], row);
    if (d == 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Requires delta != 0");
    if ((d > 0 && l < s) || (d < 0 && l > s)) {
      *size = 0;
      return NULL;
    }
    /* |limit - start| and |delta| as unsigned, so int64 extremes do not overflow. */
    uint64_t span = l > s ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
    uint64_t step = d > 0 ? (uint64_t)d : 0u - (uint64_t)d;
    *size = (int64_t)((span + step - 1) / step);
    return NULL;
  }
  double s = at(&in[0], row), l = at(&in[1], row), d = at(&in[2], row);
  if (d == 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Requires delta != 0");
  if ((d > 0 && l < s) || (d < 0 && l > s)) {
    *size = 0;
    return NULL;
  }
  double n = ceil(fabs(round_to(dt, round_to(dt, l - s) / d)));
  if (!(n <= 9223372036854775807.0))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Requires ((limit - start) / delta) <= 9223372036854775807");
  *size = (int64_t)n;
  return NULL;
}

static weft_status_t *k_ragged_range(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  static const char *const names[] = {"starts", "limits", "deltas"};
  weft_tensor_view_t in[3];
  int64_t rows = -1;
  for (int i = 0; i < 3; i++) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i, &in[i]));
    if (in[i].rank > 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be a scalar or vector",
                             names[i]);
  }
  for (int i = 0; i < 3; i++) {
    if (in[i].rank == 0) continue;
    if (rows >= 0 && in[i].dims[0] != rows)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "starts, limits, and deltas must have the same shape");
    rows = in[i].dims[0];
  }
  if (rows < 0) rows = 1;
  weft_dtype_t split_dt;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "Tsplits", WEFT_DT_INT64, &split_dt));
  int64_t max_total = split_dt == WEFT_DT_INT32 ? INT32_MAX : INT64_MAX;
  int64_t n_splits = rows + 1;
  weft_tensor_view_t splits, values;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, split_dt, 1, &n_splits, &splits));
  int64_t total = 0;
  for (int64_t r = 0; r < rows; r++) {
    if (split_dt == WEFT_DT_INT32) ((int32_t *)splits.data)[r] = (int32_t)total;
    else ((int64_t *)splits.data)[r] = total;
    int64_t size = 0;
    WEFT_RETURN_IF_ERROR(row_size(ctx, in, r, &size));
    if (size > max_total - total)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "The total range size overflowed. Consider using int64 instead of "
                             "int32 for row_splits_dtype.");
    total += size;
  }
  if (split_dt == WEFT_DT_INT32) ((int32_t *)splits.data)[rows] = (int32_t)total;
  else ((int64_t *)splits.data)[rows] = total;
  weft_dtype_t dt = in[0].dtype;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, dt, 1, &total, &values));
  int64_t k = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t end = split_dt == WEFT_DT_INT32 ? ((int32_t *)splits.data)[r + 1]
                                            : ((int64_t *)splits.data)[r + 1];
    if (dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64) {
      /* Wrapping arithmetic in uint64: the last value stays within [start, limit). */
      uint64_t v = (uint64_t)at_int(&in[0], r), d = (uint64_t)at_int(&in[2], r);
      for (; k < end; k++, v += d) {
        if (dt == WEFT_DT_INT32) ((int32_t *)values.data)[k] = (int32_t)(int64_t)v;
        else ((int64_t *)values.data)[k] = (int64_t)v;
      }
    } else {
      /* TensorFlow adds delta to a value of type T row by row, rounding at each step. */
      double v = round_to(dt, at(&in[0], r)), d = at(&in[2], r);
      for (; k < end; k++, v = round_to(dt, v + d)) weft__cpu_store_f(dt, values.data, k, v);
    }
  }
  return NULL;
}

weft_status_t *weft__cpu_register_ragged(const weft_registrar_t *reg) {
  static const weft_dtype_t types[] = {WEFT_DT_BFLOAT16, WEFT_DT_FLOAT, WEFT_DT_DOUBLE,
                                       WEFT_DT_INT32, WEFT_DT_INT64};
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "RaggedRange", .compute = k_ragged_range, .type_attr = "T", .dtypes = types,
       .n_dtypes = 5},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
