/* ops_bits.c: bit-level and assorted math ops with TensorFlow's names, args, attrs, type
 * constraints and shape functions: Bitcast, the bitwise ops (BitwiseAnd/Or/Xor, Invert,
 * LeftShift, RightShift, PopulationCount), BatchMatMul (v1), DivNoNan, TruncateDiv, TruncateMod,
 * Rint, Cumprod, AccumulateNV2, CompareAndBitpack, CheckNumerics, Bincount, HistogramFixedWidth
 * and the special functions Lgamma, Digamma, Igamma, Igammac and Betainc (from TensorFlow's
 * array_ops.cc, bitwise_ops.cc and math_ops.cc). */
#include <string.h>

#include "ops_shape.h"

static const weft__shape_t kUnknownShape = {.rank = -1};

/* A type attribute of the node, or WEFT_DT_INVALID when absent. */
static weft_dtype_t attr_type(weft_shape_ctx_t *ctx, const char *name) {
  const weft_host_t *h = weft__graph_host();
  weft_dtype_t t = WEFT_DT_INVALID;
  weft_status_t *status = h->attr_type(h->shape_attrs(ctx), name, &t);
  if (status) {
    h->status_free(status);
    return WEFT_DT_INVALID;
  }
  return t;
}

/* Bitcast: equal element sizes keep the shape; a wider output drops the last dim (which must be
 * the size ratio); a narrower output appends a dim of the size ratio. */
static weft_status_t *bitcast_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  weft_dtype_t from = attr_type(ctx, "T"), to = attr_type(ctx, "type");
  size_t in_size = weft_dtype_size(from), out_size = weft_dtype_size(to);
  if (in_size == 0 || out_size == 0)
    return weft__sh_error(ctx, "Cannot bitcast types %s to %s because one of the type sizes is "
                          "zero.", weft_dtype_name(from), weft_dtype_name(to));
  if (in_size == out_size) return weft__sh_output(ctx, 0, &in);
  if (in_size < out_size) {
    WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "Bitcast's input"));
    int64_t ratio = (int64_t)(out_size / in_size), last = in.dims[in.rank - 1];
    if (last != WEFT_DIM_UNKNOWN && last != ratio)
      return weft__sh_error(ctx, "Cannot bitcast due to shape. %" G_GINT64_FORMAT
                            " does not match %" G_GINT64_FORMAT, last, ratio);
    in.rank--;
    return weft__sh_output(ctx, 0, &in);
  }
  if (in.rank >= WEFT_MAX_RANK)
    return weft__sh_error(ctx, "Bitcast's output would have more than %d dimensions",
                          WEFT_MAX_RANK);
  in.dims[in.rank++] = (int64_t)(in_size / out_size);
  return weft__sh_output(ctx, 0, &in);
}

/* BatchMatMul (v1): both inputs rank >= 2 and the same batch dims (no broadcasting). */
static weft_status_t *batch_matmul_v1_shape(weft_shape_ctx_t *ctx) {
  return weft__sh_batch_matmul(ctx, "BatchMatMul", false);
}

/* AccumulateNV2: every input (and the shape attr) describe one shape. */
static weft_status_t *accumulate_shape(weft_shape_ctx_t *ctx) {
  return weft__shape_fn_merge_all(ctx);
}

/* CompareAndBitpack: threshold a scalar; input rank >= 1 with its last dim divided by 8. */
static weft_status_t *compare_and_bitpack_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, th;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &th);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &th, 0, "CompareAndBitpack's threshold"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "CompareAndBitpack's input"));
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  int64_t *last = &in.dims[in.rank - 1];
  if (*last != WEFT_DIM_UNKNOWN) {
    if (*last % 8 != 0)
      return weft__sh_error(ctx, "Dimension size must be evenly divisible by 8 but is %"
                            G_GINT64_FORMAT, *last);
    *last /= 8;
  }
  return weft__sh_output(ctx, 0, &in);
}

/* Bincount: a vector of `size` bins (unknown length unless size is a constant). */
static weft_status_t *bincount_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t size;
  weft__sh_input(ctx, 1, &size);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &size, 0, "Bincount's size"));
  int64_t *v = NULL, n = 0;
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  if (weft__sh_const_ints(ctx, 1, &v, &n, NULL)) {
    int64_t value = n == 1 ? v[0] : 0;
    g_free(v);
    if (n == 1 && value < 0)
      return weft__sh_error(ctx, "size (%" G_GINT64_FORMAT ") must be non-negative", value);
    if (n == 1) out.dims[0] = value;
  }
  return weft__sh_output(ctx, 0, &out);
}

/* HistogramFixedWidth: value_range a 2-vector, nbins a scalar; a vector of nbins counts. */
static weft_status_t *histogram_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t range, nbins;
  weft__sh_input(ctx, 1, &range);
  weft__sh_input(ctx, 2, &nbins);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &range, 1, "HistogramFixedWidth's value_range"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &nbins, 0, "HistogramFixedWidth's nbins"));
  if (range.rank == 1 && range.dims[0] != WEFT_DIM_UNKNOWN && range.dims[0] != 2)
    return weft__sh_error(ctx, "Dimension must be 2 but is %" G_GINT64_FORMAT, range.dims[0]);
  int64_t *v = NULL, n = 0;
  weft__shape_t out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  if (weft__sh_const_ints(ctx, 2, &v, &n, NULL)) {
    int64_t value = n == 1 ? v[0] : 0;
    g_free(v);
    if (n == 1 && value <= 0)
      return weft__sh_error(ctx, "Requires nbins > 0: %" G_GINT64_FORMAT, value);
    if (n == 1) out.dims[0] = value;
  }
  return weft__sh_output(ctx, 0, &out);
}

/* Betainc: a, b and x are each a scalar or one common shape (no other broadcasting). */
static weft_status_t *betainc_shape(weft_shape_ctx_t *ctx) {
  return weft__sh_merge_non_scalars(ctx, "Betainc's a, b and x");
}

/* ---------------------------------------------------------------------------------------------
 * The table */

#define INTS "{int8, int16, int32, int64, uint8, uint16, uint32, uint64}"
#define FLOATS "{bfloat16, half, float, double}"
#define BITCAST_TYPES \
  "{bfloat16, half, float, double, int64, int32, uint8, uint16, uint32, uint64, int8, int16}"

#define UNARY(name, types)                                                          \
  WEFT__OP(name, WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: " types), 0, \
           weft__shape_fn_unchanged)
#define BINARY(name, types)                                                                  \
  WEFT__OP(name, WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("z: T"), WEFT__SPECS("T: " types), 0, \
           weft__shape_fn_broadcast)

const weft_op_def_t weft__ops_bits[] = {
    WEFT__OP("Bitcast", WEFT__SPECS("input: T"), WEFT__SPECS("output: type"),
             WEFT__SPECS("T: " BITCAST_TYPES, "type: " BITCAST_TYPES), 0, bitcast_shape),
    /* Bitwise. */
    BINARY("BitwiseAnd", INTS),
    BINARY("BitwiseOr", INTS),
    BINARY("BitwiseXor", INTS),
    UNARY("Invert", INTS),
    BINARY("LeftShift", INTS),
    BINARY("RightShift", INTS),
    WEFT__OP("PopulationCount", WEFT__SPECS("x: T"), WEFT__SPECS("y: uint8"),
             WEFT__SPECS("T: " INTS), 0, weft__shape_fn_unchanged),
    /* Arithmetic. */
    WEFT__OP("BatchMatMul", WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {bfloat16, half, float, double, int32, int64}",
                         "adj_x: bool = false", "adj_y: bool = false"),
             0, batch_matmul_v1_shape),
    BINARY("DivNoNan", "{half, float, bfloat16, double}"),
    BINARY("TruncateDiv",
           "{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, uint32, uint64, "
           "int64}"),
    BINARY("TruncateMod", "{int32, int64, bfloat16, half, float, double}"),
    UNARY("Rint", FLOATS),
    WEFT__OP("Cumprod", WEFT__SPECS("x: T", "axis: Tidx"), WEFT__SPECS("out: T"),
             WEFT__SPECS("exclusive: bool = false", "reverse: bool = false", "T: numbertype",
                         "Tidx: {int32, int64} = DT_INT32"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("AccumulateNV2", WEFT__SPECS("inputs: N * T"), WEFT__SPECS("sum: T"),
             WEFT__SPECS("N: int >= 1", "T: numbertype", "shape: shape"), 0, accumulate_shape),
    WEFT__OP("CompareAndBitpack", WEFT__SPECS("input: T", "threshold: T"),
             WEFT__SPECS("output: uint8"),
             WEFT__SPECS("T: {bool, half, float, double, int8, int16, int32, int64}"), 0,
             compare_and_bitpack_shape),
    /* Stateful, as in TensorFlow, so that it is never folded away: its error is its purpose. */
    WEFT__OP("CheckNumerics", WEFT__SPECS("tensor: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: " FLOATS, "message: string"), 1, weft__shape_fn_unchanged),
    WEFT__OP("Bincount", WEFT__SPECS("arr: int32", "size: int32", "weights: T"),
             WEFT__SPECS("bins: T"), WEFT__SPECS("T: {int32, int64, float, double}"), 0,
             bincount_shape),
    WEFT__OP("HistogramFixedWidth", WEFT__SPECS("values: T", "value_range: T", "nbins: int32"),
             WEFT__SPECS("out: dtype"),
             WEFT__SPECS("T: {int32, int64, float, double}", "dtype: {int32, int64} = DT_INT32"),
             0, histogram_shape),
    /* Special functions. */
    UNARY("Lgamma", FLOATS),
    UNARY("Digamma", FLOATS),
    WEFT__OP("Igamma", WEFT__SPECS("a: T", "x: T"), WEFT__SPECS("z: T"),
             WEFT__SPECS("T: " FLOATS), 0, weft__shape_fn_broadcast),
    WEFT__OP("Igammac", WEFT__SPECS("a: T", "x: T"), WEFT__SPECS("z: T"),
             WEFT__SPECS("T: " FLOATS), 0, weft__shape_fn_broadcast),
    WEFT__OP("Betainc", WEFT__SPECS("a: T", "b: T", "x: T"), WEFT__SPECS("z: T"),
             WEFT__SPECS("T: {float, double}"), 0, betainc_shape),
    WEFT__OPS_END,
};
