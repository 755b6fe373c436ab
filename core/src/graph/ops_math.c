/* ops_math.c: the standard math ops (elementwise unary and binary arithmetic with broadcasting,
 * comparisons, logic, Select, MatMul, BatchMatMulV2, reductions, ArgMax, Cumsum, ClipByValue,
 * SqrtGrad-style gradients) with TensorFlow's names, args, attrs and type constraints, and their
 * shape functions. */
#include <string.h>

#include "ops_shape.h"

static const weft__shape_t kUnknownShape = {.rank = -1};

/* Equal/NotEqual: with incompatible_shape_error = false, mismatched shapes are not an error (the
 * kernel then answers a scalar false/true), so the shape is unknown. */
static weft_status_t *equality_shape(weft_shape_ctx_t *ctx) {
  if (weft__sh_attr_bool(ctx, "incompatible_shape_error", true))
    return weft__shape_fn_broadcast(ctx);
  weft__shape_t a, b, out;
  weft__sh_input(ctx, 0, &a);
  weft__sh_input(ctx, 1, &b);
  weft_status_t *status = weft__broadcast_shapes(&a, &b, &out);
  if (status) {
    weft_status_free(status);
    out = kUnknownShape;
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *select_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t cond, t, e, out;
  weft__sh_input(ctx, 0, &cond);
  weft__sh_input(ctx, 1, &t);
  weft__sh_input(ctx, 2, &e);
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &t, &e, &out, "Select's t and e"));
  if (cond.rank < 0 || cond.rank == 0 || out.rank < 0) return weft__sh_output(ctx, 0, &out);
  if (cond.rank == out.rank) {
    WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &cond, &out, &out, "Select's condition and t"));
  } else if (cond.rank == 1) {
    if (!weft__sh_merge_dim(cond.dims[0], out.dims[0], &out.dims[0])) {
      char *a = weft__sh_str(&cond), *b = weft__sh_str(&out);
      weft_status_t *status = weft__sh_error(
          ctx, "a vector condition %s must match the first dimension of t %s", a, b);
      g_free(a);
      g_free(b);
      return status;
    }
  } else {
    char *a = weft__sh_str(&cond), *b = weft__sh_str(&out);
    weft_status_t *status = weft__sh_error(
        ctx, "condition %s must be a scalar, a vector matching the first dimension of t, or the "
        "shape of t %s", a, b);
    g_free(a);
    g_free(b);
    return status;
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *select_v2_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t cond, t, e, te, out;
  weft__sh_input(ctx, 0, &cond);
  weft__sh_input(ctx, 1, &t);
  weft__sh_input(ctx, 2, &e);
  WEFT_RETURN_IF_ERROR(weft__sh_broadcast(ctx, &t, &e, &te));
  WEFT_RETURN_IF_ERROR(weft__sh_broadcast(ctx, &cond, &te, &out));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *matmul_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t a, b;
  weft__sh_input(ctx, 0, &a);
  weft__sh_input(ctx, 1, &b);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &a, 2, "MatMul's a"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &b, 2, "MatMul's b"));
  bool ta = weft__sh_attr_bool(ctx, "transpose_a", false);
  bool tb = weft__sh_attr_bool(ctx, "transpose_b", false);
  int64_t m = WEFT_DIM_UNKNOWN, ka = WEFT_DIM_UNKNOWN, kb = WEFT_DIM_UNKNOWN, n = WEFT_DIM_UNKNOWN;
  if (a.rank == 2) {
    m = a.dims[ta ? 1 : 0];
    ka = a.dims[ta ? 0 : 1];
  }
  if (b.rank == 2) {
    kb = b.dims[tb ? 1 : 0];
    n = b.dims[tb ? 0 : 1];
  }
  int64_t k;
  if (!weft__sh_merge_dim(ka, kb, &k)) {
    char *sa = weft__sh_str(&a), *sb = weft__sh_str(&b);
    weft_status_t *status = weft__sh_error(
        ctx, "Dimensions must be equal, but are %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
        ": MatMul with input shapes %s, %s (transpose_a=%s, transpose_b=%s)",
        ka, kb, sa, sb, ta ? "true" : "false", tb ? "true" : "false");
    g_free(sa);
    g_free(sb);
    return status;
  }
  weft__shape_t out = {.rank = 2, .dims = {m, n}};
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *batch_matmul_shape(weft_shape_ctx_t *ctx) {
  return weft__sh_batch_matmul(ctx, "BatchMatMulV2", true);
}

/* Sum, Mean, Max, Min, Prod, All, Any: reduce input 0 over the axes in input 1. */
static weft_status_t *reduction_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, axes_shape;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &axes_shape);
  bool keep = weft__sh_attr_bool(ctx, "keep_dims", false);
  if (axes_shape.rank > 1)
    return weft__sh_error(ctx, "reduction_indices must be a scalar or a vector, not rank %d",
                          axes_shape.rank);
  int64_t *axes = NULL, n = 0;
  if (!weft__sh_const_ints(ctx, 1, &axes, &n, NULL)) {
    if (axes_shape.rank == 1 && axes_shape.dims[0] == 0) return weft__sh_output(ctx, 0, &in);
    if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
    /* Which axes is unknown; with keep_dims the rank still is. */
    weft__shape_t out = keep ? weft__sh_unknown_dims(in.rank) : kUnknownShape;
    if (!keep && axes_shape.rank == 0)
      out = weft__sh_unknown_dims(in.rank - 1 >= 0 ? in.rank - 1 : 0);
    return weft__sh_output(ctx, 0, &out);
  }
  weft_status_t *status = NULL;
  if (in.rank < 0) {
    status = weft__sh_output(ctx, 0, &kUnknownShape);
    goto out;
  }
  bool reduce[WEFT_MAX_RANK] = {false};
  for (int64_t i = 0; i < n; i++) {
    if (axes[i] < -in.rank || axes[i] >= in.rank) {
      char *str = weft__sh_str(&in);
      status = weft__sh_error(ctx, "Invalid reduction dimension %" G_GINT64_FORMAT
                              " for input with %d dimensions (shape %s)", axes[i], in.rank, str);
      g_free(str);
      goto out;
    }
    reduce[axes[i] < 0 ? axes[i] + in.rank : axes[i]] = true;
  }
  weft__shape_t result = {.rank = 0};
  for (int d = 0; d < in.rank; d++) {
    if (!reduce[d])
      result.dims[result.rank++] = in.dims[d];
    else if (keep)
      result.dims[result.rank++] = 1;
  }
  status = weft__sh_output(ctx, 0, &result);
out:
  g_free(axes);
  return status;
}

static weft_status_t *arg_minmax_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  int64_t *dim = NULL, n = 0;
  if (!weft__sh_const_ints(ctx, 1, &dim, &n, NULL)) {
    weft__shape_t out = in.rank > 0 ? weft__sh_unknown_dims(in.rank - 1) : kUnknownShape;
    return weft__sh_output(ctx, 0, &out);
  }
  int64_t value = n == 1 ? dim[0] : 0;
  g_free(dim);
  if (n != 1) return weft__sh_error(ctx, "dimension must be a scalar");
  if (in.rank < 0) return weft__sh_output(ctx, 0, &kUnknownShape);
  int axis;
  WEFT_RETURN_IF_ERROR(weft__sh_axis(ctx, value, in.rank, "dimension", &axis));
  weft__shape_t out = {.rank = 0};
  for (int d = 0; d < in.rank; d++)
    if (d != axis) out.dims[out.rank++] = in.dims[d];
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *clip_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t t;
  weft__sh_input(ctx, 0, &t);
  for (int i = 1; i < 3; i++) {
    weft__shape_t s, merged;
    weft__sh_input(ctx, i, &s);
    if (s.rank == 0) continue;
    WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &t, &s, &merged,
                                        i == 1 ? "t and clip_value_min (unless a scalar)"
                                               : "t and clip_value_max (unless a scalar)"));
  }
  return weft__sh_output(ctx, 0, &t);
}

/* ---------------------------------------------------------------------------------------------
 * The table */

#define FLOATS "{bfloat16, half, float, double}"
#define SIGNED "{bfloat16, half, float, double, int8, int16, int32, int64}"

#define UNARY(name, types)                                                          \
  WEFT__OP(name, WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: " types), 0, \
           weft__shape_fn_unchanged)
#define GRAD_FROM_Y(name)                                                                 \
  WEFT__OP(name, WEFT__SPECS("y: T", "dy: T"), WEFT__SPECS("z: T"), WEFT__SPECS("T: " FLOATS), \
           0, weft__shape_fn_merge_all)
#define BINARY(name, types)                                                                  \
  WEFT__OP(name, WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("z: T"), WEFT__SPECS("T: " types), 0, \
           weft__shape_fn_broadcast)
#define COMPARE(name)                                                                     \
  WEFT__OP(name, WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("z: bool"),                      \
           WEFT__SPECS("T: realnumbertype"), 0, weft__shape_fn_broadcast)
#define EQUALITY(name)                                                                    \
  WEFT__OP(name, WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("z: bool"),                      \
           WEFT__SPECS("T: type", "incompatible_shape_error: bool = true"), 0, equality_shape)
#define CLASSIFY(name)                                                                    \
  WEFT__OP(name, WEFT__SPECS("x: T"), WEFT__SPECS("y: bool"), WEFT__SPECS("T: " FLOATS), 0, \
           weft__shape_fn_unchanged)
#define REDUCTION(name, types)                                                                \
  WEFT__OP(name, WEFT__SPECS("input: T", "reduction_indices: Tidx"), WEFT__SPECS("output: T"), \
           WEFT__SPECS("keep_dims: bool = false", "T: " types, "Tidx: {int32, int64} = DT_INT32"), \
           0, reduction_shape)
#define BOOL_REDUCTION(name)                                                                  \
  WEFT__OP(name, WEFT__SPECS("input: bool", "reduction_indices: Tidx"),                       \
           WEFT__SPECS("output: bool"),                                                       \
           WEFT__SPECS("keep_dims: bool = false", "Tidx: {int32, int64} = DT_INT32"), 0,       \
           reduction_shape)
#define ARG_MINMAX(name)                                                                      \
  WEFT__OP(name, WEFT__SPECS("input: T", "dimension: Tidx"), WEFT__SPECS("output: output_type"), \
           WEFT__SPECS("T: {numbertype, bool}", "Tidx: {int16, int32, int64} = DT_INT32",      \
                       "output_type: {int16, uint16, int32, int64} = DT_INT64"),               \
           0, arg_minmax_shape)

const weft_op_def_t weft__ops_math[] = {
    /* Arithmetic. */
    BINARY("Add", "{numbertype, string}"),
    BINARY("AddV2", "numbertype"),
    WEFT__OP("AddN", WEFT__SPECS("inputs: N * T"), WEFT__SPECS("sum: T"),
             WEFT__SPECS("N: int >= 1", "T: numbertype"), 0, weft__shape_fn_merge_all),
    BINARY("Sub", "numbertype"),
    BINARY("Mul", "numbertype"),
    BINARY("Div", "numbertype"),
    BINARY("RealDiv", "numbertype"),
    BINARY("FloorDiv", "numbertype"),
    BINARY("FloorMod", "realnumbertype"),
    BINARY("Mod", "{int32, int64, half, bfloat16, float, double}"),
    BINARY("Pow", SIGNED),
    BINARY("Atan2", FLOATS),
    BINARY("Maximum", "realnumbertype"),
    BINARY("Minimum", "realnumbertype"),
    BINARY("SquaredDifference", "{bfloat16, half, float, double, int32, int64}"),
    UNARY("Neg", SIGNED),
    UNARY("Abs", SIGNED),
    UNARY("Square", "numbertype"),
    UNARY("Sign", SIGNED),
    UNARY("Reciprocal", SIGNED),
    UNARY("Inv", SIGNED),
    UNARY("Sqrt", FLOATS),
    UNARY("Rsqrt", FLOATS),
    /* Gradients from the forward op's output: dy times d(y)/dx written in y. */
    GRAD_FROM_Y("SqrtGrad"),
    GRAD_FROM_Y("RsqrtGrad"),
    GRAD_FROM_Y("ReciprocalGrad"),
    GRAD_FROM_Y("InvGrad"),
    UNARY("Exp", FLOATS),
    UNARY("Log", FLOATS),
    UNARY("Log1p", FLOATS),
    UNARY("Expm1", FLOATS),
    UNARY("Floor", FLOATS),
    UNARY("Ceil", FLOATS),
    UNARY("Round", SIGNED),
    UNARY("Sin", FLOATS),
    UNARY("Cos", FLOATS),
    UNARY("Tan", FLOATS),
    UNARY("Asin", FLOATS),
    UNARY("Acos", FLOATS),
    UNARY("Atan", FLOATS),
    UNARY("Sinh", FLOATS),
    UNARY("Cosh", FLOATS),
    UNARY("Asinh", FLOATS),
    UNARY("Acosh", FLOATS),
    UNARY("Atanh", FLOATS),
    UNARY("Erf", FLOATS),
    UNARY("Erfc", FLOATS),
    /* Comparisons and logic. */
    EQUALITY("Equal"),
    EQUALITY("NotEqual"),
    COMPARE("Less"),
    COMPARE("LessEqual"),
    COMPARE("Greater"),
    COMPARE("GreaterEqual"),
    WEFT__OP("LogicalAnd", WEFT__SPECS("x: bool", "y: bool"), WEFT__SPECS("z: bool"),
             WEFT__NO_SPECS, 0, weft__shape_fn_broadcast),
    WEFT__OP("LogicalOr", WEFT__SPECS("x: bool", "y: bool"), WEFT__SPECS("z: bool"),
             WEFT__NO_SPECS, 0, weft__shape_fn_broadcast),
    WEFT__OP("LogicalNot", WEFT__SPECS("x: bool"), WEFT__SPECS("y: bool"), WEFT__NO_SPECS, 0,
             weft__shape_fn_unchanged),
    WEFT__OP("Select", WEFT__SPECS("condition: bool", "t: T", "e: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, select_shape),
    WEFT__OP("SelectV2", WEFT__SPECS("condition: bool", "t: T", "e: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, select_v2_shape),
    CLASSIFY("IsNan"),
    CLASSIFY("IsInf"),
    CLASSIFY("IsFinite"),
    /* Matrix products. */
    WEFT__OP("MatMul", WEFT__SPECS("a: T", "b: T"), WEFT__SPECS("product: T"),
             WEFT__SPECS("transpose_a: bool = false", "transpose_b: bool = false",
                         "T: {bfloat16, half, float, double, int32, int64}",
                         "grad_a: bool = false", "grad_b: bool = false"),
             0, matmul_shape),
    /* MatMul with a BiasAdd and an activation applied to its product, as TensorFlow's grappler
     * remapper writes it (exec/fuse.c makes it too; docs/performance.md, "Fusion"). */
    WEFT__OP("_FusedMatMul", WEFT__SPECS("a: T", "b: T", "args: num_args * T"),
             WEFT__SPECS("product: T"),
             WEFT__SPECS("transpose_a: bool = false", "transpose_b: bool = false",
                         "T: {bfloat16, half, float}", "num_args: int >= 0",
                         "fused_ops: list(string) = []", "epsilon: float = 0.0001",
                         "leakyrelu_alpha: float = 0.2"),
             0, matmul_shape),
    WEFT__OP("BatchMatMulV2", WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {bfloat16, half, float, double, int16, int32, int64}",
                         "adj_x: bool = false", "adj_y: bool = false", "grad_x: bool = false",
                         "grad_y: bool = false"),
             0, batch_matmul_shape),
    /* Reductions and scans. */
    REDUCTION("Sum", "numbertype"),
    REDUCTION("Mean", "numbertype"),
    REDUCTION("Max", "realnumbertype"),
    REDUCTION("Min", "realnumbertype"),
    REDUCTION("Prod", "numbertype"),
    BOOL_REDUCTION("All"),
    BOOL_REDUCTION("Any"),
    ARG_MINMAX("ArgMax"),
    ARG_MINMAX("ArgMin"),
    WEFT__OP("Cumsum", WEFT__SPECS("x: T", "axis: Tidx"), WEFT__SPECS("out: T"),
             WEFT__SPECS("exclusive: bool = false", "reverse: bool = false", "T: numbertype",
                         "Tidx: {int32, int64} = DT_INT32"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("ClipByValue", WEFT__SPECS("t: T", "clip_value_min: T", "clip_value_max: T"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: numbertype"), 0, clip_shape),
    WEFT__OPS_END,
};
