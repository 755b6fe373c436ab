/* cpu_scatter.c: the CPU kernels of the scatter, segment and partition ops and GatherNd, with
 * TensorFlow's semantics and error messages (tensorflow/core/kernels/scatter_op.cc,
 * scatter_nd_op.cc, gather_nd_op.cc, segment_reduction_ops_impl.h, dynamic_partition_op.cc):
 *   - ScatterUpdate/Add/Sub/Mul/Div/Min/Max update rows of a reference variable in place:
 *     var[indices[i], ...] op= updates[i, ...] (a scalar update applies to every row);
 *   - ScatterNdUpdate/Add/Sub (reference variables), TensorScatterUpdate/Add/Sub (a new tensor)
 *     and ScatterNd (zeros, then add) address slices by index tuples (indices[..., depth]),
 *     which GatherNd reads;
 *   - SegmentSum/Mean/Prod/Min/Max reduce rows by sorted segment ids (empty segments 0, 1 for
 *     Prod); UnsortedSegmentSum/Prod/Min/Max by any ids, negative ids dropped, empty segments the
 *     reduction's identity (0, 1, the dtype's highest for Min and lowest for Max);
 *   - SparseSegmentSum/Mean/SqrtN(WithNumSegments) reduce the data rows indices name by sorted
 *     segment ids;
 *   - DynamicPartition splits data's rows among num_partitions outputs.
 * Duplicate indices accumulate in order (Update: the last one wins). Every index from tensor data
 * is checked before anything is written, so a bad index leaves a variable untouched. Updates run
 * serially: they are small next to the graphs around them, and order fixes rounding. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

typedef enum sc_op {
  SC_ASSIGN = 0,
  SC_ADD,
  SC_SUB,
  SC_MUL,
  SC_DIV,
  SC_MIN,
  SC_MAX,
} sc_op_t;

typedef enum seg_op { SEG_SUM = 0, SEG_MEAN, SEG_PROD, SEG_MIN, SEG_MAX } seg_op_t;

/* ---------------------------------------------------------------------------------------------
 * Typed loops. Each dtype gets X(dtype, storage, value type, wrapping type, load, store, lowest,
 * highest): the 16-bit floats compute in float; integer sums and products wrap (TensorFlow's
 * behaviour) by running in an unsigned type. Min and max follow Eigen's std::min/std::max
 * (a NaN in the first operand stays, one in the second is dropped), as TensorFlow's kernels. */

#define LD_N(p, i) ((p)[i])
#define ST_N(p, i, v) ((p)[i] = (v))
#define LD_H(p, i) weft__cpu_half_to_float((p)[i])
#define ST_H(p, i, v) ((p)[i] = weft__cpu_float_to_half(v))
#define LD_B(p, i) weft__cpu_bf16_to_float((p)[i])
#define ST_B(p, i, v) ((p)[i] = weft__cpu_float_to_bf16(v))

#define SC_TYPES(X)                                                                          \
  X(WEFT_DT_FLOAT, float, float, float, LD_N, ST_N, -FLT_MAX, FLT_MAX)                       \
  X(WEFT_DT_DOUBLE, double, double, double, LD_N, ST_N, -DBL_MAX, DBL_MAX)                   \
  X(WEFT_DT_HALF, uint16_t, float, float, LD_H, ST_H, -65504.0f, 65504.0f)                   \
  X(WEFT_DT_BFLOAT16, uint16_t, float, float, LD_B, ST_B, -3.38953139e38f, 3.38953139e38f)   \
  X(WEFT_DT_INT32, int32_t, int32_t, uint32_t, LD_N, ST_N, INT32_MIN, INT32_MAX)             \
  X(WEFT_DT_INT64, int64_t, int64_t, uint64_t, LD_N, ST_N, INT64_MIN, INT64_MAX)             \
  X(WEFT_DT_INT8, int8_t, int8_t, uint32_t, LD_N, ST_N, INT8_MIN, INT8_MAX)                  \
  X(WEFT_DT_INT16, int16_t, int16_t, uint32_t, LD_N, ST_N, INT16_MIN, INT16_MAX)             \
  X(WEFT_DT_UINT8, uint8_t, uint8_t, uint32_t, LD_N, ST_N, 0, UINT8_MAX)                     \
  X(WEFT_DT_UINT16, uint16_t, uint16_t, uint32_t, LD_N, ST_N, 0, UINT16_MAX)                 \
  X(WEFT_DT_UINT32, uint32_t, uint32_t, uint32_t, LD_N, ST_N, 0, UINT32_MAX)                 \
  X(WEFT_DT_UINT64, uint64_t, uint64_t, uint64_t, LD_N, ST_N, 0, UINT64_MAX)

/* a op b for the arithmetic ops (not SC_ASSIGN). Integer division by -1 negates with wrapping
 * (INT_MIN / -1 would trap); division by zero was refused before. */
#define SC_APPLY(op, a, b, V, UT, is_sint)                                       \
  ((op) == SC_ADD   ? (V)((UT)(a) + (UT)(b))                                    \
   : (op) == SC_SUB ? (V)((UT)(a) - (UT)(b))                                    \
   : (op) == SC_MUL ? (V)((UT)(a) * (UT)(b))                                    \
   : (op) == SC_DIV ? ((is_sint) && (b) == (V)-1 ? (V)((UT)0 - (UT)(a)) : (V)((a) / (b))) \
   : (op) == SC_MIN ? ((b) < (a) ? (b) : (a))                                   \
                    : ((a) < (b) ? (b) : (a)))

/* A signed integer type (the integer division special case). */
#define IS_SINT_V(V, LO) ((V)0.5 == (V)0 && (LO) < 0)

/* dst[di + k] = dst[di + k] op src[si + k * step] for k < n (step 0: one value for all). */
static void sc_combine(weft_dtype_t dt, sc_op_t op, void *dst, int64_t di, const void *src,
                       int64_t si, int64_t n, int64_t step) {
#define COMBINE_CASE(DT, T, V, UT, LD, ST, LO, HI)                   \
  case DT: {                                                         \
    T *d = (T *)dst + di;                                            \
    const T *s = (const T *)src + si;                                \
    for (int64_t k = 0; k < n; k++) {                                \
      V a = LD(d, k), b = LD(s, k * step);                           \
      V r = SC_APPLY(op, a, b, V, UT, IS_SINT_V(V, LO));                  \
      ST(d, k, r);                                                   \
    }                                                                \
    break;                                                           \
  }
  switch (dt) {
    SC_TYPES(COMBINE_CASE)
    default: break;
  }
#undef COMBINE_CASE
}

/* True when some update is an integer zero (ScatterDiv's divisor). */
static bool has_int_zero(const weft_tensor_view_t *u) {
  if (!weft__cpu_dtype_is_int(u->dtype)) return false;
  for (int64_t i = 0; i < u->num_elements; i++)
    if (weft__cpu_get_double(u, i) == 0) return true;
  return false;
}

/* dst[di .. di + n) = src[si .. si + n) (step 1) or src[si] everywhere (step 0). */
static weft_status_t *sc_store(weft_kernel_ctx_t *ctx, sc_op_t op, const weft_tensor_view_t *dst,
                               int64_t di, const weft_tensor_view_t *src, int64_t si, int64_t n,
                               int64_t step) {
  if (op != SC_ASSIGN) {
    sc_combine(dst->dtype, op, dst->data, di, src->data, si, n, step);
    return NULL;
  }
  if (step == 1) return weft__cpu_copy_elems(ctx, dst, di, src, si, n);
  for (int64_t k = 0; k < n; k++)
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, dst, di + k, src, si, 1));
  return NULL;
}

static const char *shape_of(const weft_tensor_view_t *v, char *buf) {
  return weft__cpu_shape_str(v->rank, v->dims, buf, CPU_SHAPE_STR_LEN);
}

/* TensorFlow's SliceDebugString: "" for rank 0, "[i]" for rank 1, "[i,j,...]" above. */
static void slice_str(int rank, const int64_t *dims, int64_t flat, char *buf, size_t len) {
  int64_t coord[WEFT_MAX_RANK];
  for (int d = rank - 1; d >= 0; d--) {
    coord[d] = dims[d] > 0 ? flat % dims[d] : 0;
    flat = dims[d] > 0 ? flat / dims[d] : 0;
  }
  size_t at = 0;
  buf[0] = '\0';
  for (int d = 0; d < rank && at < len; d++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", d ? "," : "[", (long long)coord[d]);
  if (rank > 0 && at < len) snprintf(buf + at, len - at, "]");
}

/* ---------------------------------------------------------------------------------------------
 * ScatterUpdate, ScatterAdd, ... on a reference variable (scatter_op.cc). */

typedef struct sc_spec {
  sc_op_t op;
  bool lock_default;
} sc_spec_t;

static const sc_spec_t kScatter[] = {
    [SC_ASSIGN] = {SC_ASSIGN, true}, [SC_ADD] = {SC_ADD, false}, [SC_SUB] = {SC_SUB, false},
    [SC_MUL] = {SC_MUL, false},      [SC_DIV] = {SC_DIV, false}, [SC_MIN] = {SC_MIN, false},
    [SC_MAX] = {SC_MAX, false},
};

/* The reference variable, input 0. */
static weft_status_t *ref_var(weft_kernel_ctx_t *ctx, weft_tensor_view_t *var) {
  memset(var, 0, sizeof *var);
  var->struct_size = sizeof *var;
  return H->kernel_ref_input(ctx, 0, var);
}

typedef weft_status_t *(*ref_update_fn)(weft_kernel_ctx_t *ctx, sc_op_t op,
                                         const weft_tensor_view_t *ind,
                                         const weft_tensor_view_t *upd);

/* The ref-variable ops: indices and updates are inputs 1 and 2, fn runs under the variable's lock
 * when use_locking (default spec->lock_default) asks for it, and the variable is forwarded. */
static weft_status_t *run_on_ref(weft_kernel_ctx_t *ctx, const sc_spec_t *spec,
                                 ref_update_fn fn) {
  weft_tensor_view_t ind, upd;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &upd));
  bool lock = weft__cpu_attr_bool(ctx, "use_locking", spec->lock_default);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = fn(ctx, spec->op, &ind, &upd);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

static weft_status_t *scatter_locked(weft_kernel_ctx_t *ctx, sc_op_t op,
                                     const weft_tensor_view_t *ind,
                                     const weft_tensor_view_t *upd) {
  weft_tensor_view_t var;
  WEFT_RETURN_IF_ERROR(ref_var(ctx, &var));
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN], c[CPU_SHAPE_STR_LEN];
  if (var.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "params must be at least 1-D, got shape %s",
                           shape_of(&var, a));
  bool ok = upd->rank == 0;
  if (!ok && upd->rank == ind->rank + var.rank - 1) {
    ok = true;
    for (int d = 0; d < ind->rank && ok; d++) ok = upd->dims[d] == ind->dims[d];
    for (int d = 1; d < var.rank && ok; d++) ok = upd->dims[ind->rank + d - 1] == var.dims[d];
  }
  if (!ok)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Must have updates.shape = indices.shape + params.shape[1:] or "
                           "updates.shape = [], got updates.shape %s, indices.shape %s, "
                           "params.shape %s",
                           shape_of(upd, a), shape_of(ind, b), shape_of(&var, c));
  if (var.dtype != upd->dtype)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Cannot update a %s variable with %s updates",
                           weft__cpu_dtype_name(var.dtype), weft__cpu_dtype_name(upd->dtype));
  const int64_t n = ind->num_elements, rows = var.dims[0];
  for (int64_t i = 0; i < n; i++) {
    int64_t idx = weft__cpu_index_at(ind, i);
    if (idx < 0 || idx >= rows) {
      slice_str(ind->rank, ind->dims, i, a, sizeof a);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices%s = %lld is not in [0, %lld)", a,
                             (long long)idx, (long long)rows);
    }
  }
  if (op == SC_DIV && n > 0 && has_int_zero(upd))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Integer division by zero");
  const int64_t slice = rows > 0 ? var.num_elements / rows : 0;
  for (int64_t i = 0; i < n && slice > 0; i++) {
    int64_t idx = weft__cpu_index_at(ind, i);
    if (upd->rank == 0)
      WEFT_RETURN_IF_ERROR(sc_store(ctx, op, &var, idx * slice, upd, 0, slice, 0));
    else
      WEFT_RETURN_IF_ERROR(sc_store(ctx, op, &var, idx * slice, upd, i * slice, slice, 1));
  }
  return NULL;
}

static weft_status_t *k_scatter(weft_kernel_ctx_t *ctx, void *state) {
  return run_on_ref(ctx, state, scatter_locked);
}

/* ---------------------------------------------------------------------------------------------
 * The N-d scatters (scatter_nd_op.cc): indices[..., depth] address slices of the output. */

/* TensorFlow's PrepareAndValidateInputs and ScatterNdFunctor on an output `out` of shape
 * (rank, dims) that already holds its starting values. */
static weft_status_t *scatter_nd_apply(weft_kernel_ctx_t *ctx, sc_op_t op,
                                       const weft_tensor_view_t *out,
                                       const weft_tensor_view_t *ind,
                                       const weft_tensor_view_t *upd) {
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN], c[CPU_SHAPE_STR_LEN];
  if (out->rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Output must be at least 1-D, got shape: %s",
                           shape_of(out, a));
  if (!(out->num_elements > 0 || (ind->num_elements == 0 && upd->num_elements == 0)))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Indices and updates specified for empty output.  indices shape: %s",
                           shape_of(ind, a));
  if (ind->rank < 1 || upd->rank < 1 || upd->dims[0] != ind->dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Dimensions [0,1) of indices[shape=%s] = %lld must match dimensions "
                           "[0,1) of updates[shape=%s] = %lld",
                           shape_of(ind, a), (long long)(ind->rank ? ind->dims[0] : 1),
                           shape_of(upd, b), (long long)(upd->rank ? upd->dims[0] : 1));
  /* ValidateUpdateShape: updates = indices.shape[:batch_dim] + out.shape[depth:]. */
  const int64_t depth = ind->rank > 1 ? ind->dims[ind->rank - 1] : 1;
  const int batch_dim = ind->rank > 1 ? ind->rank - 1 : 1;
  bool prefix_ok = upd->rank >= batch_dim, suffix_ok = true;
  if (prefix_ok) {
    suffix_ok = out->rank >= depth + (upd->rank - batch_dim) &&
                upd->rank == batch_dim + out->rank - depth;
    if (suffix_ok)
      for (int d = 0; d < batch_dim && prefix_ok; d++) prefix_ok = upd->dims[d] == ind->dims[d];
    for (int d = 0; suffix_ok && prefix_ok && d < upd->rank - batch_dim; d++)
      suffix_ok = upd->dims[d + batch_dim] == out->dims[d + depth];
  }
  if (!prefix_ok)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Dimensions [0,%d) of indices[shape=%s] must match dimensions [0,%d) "
                           "of updates[shape=%s]",
                           batch_dim, shape_of(ind, a), batch_dim, shape_of(upd, b));
  if (!suffix_ok)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Dimensions [%lld,%d) of input[shape=%s] must match dimensions [%d,%d) "
                           "of updates[shape=%s]",
                           (long long)depth, out->rank, shape_of(out, a), batch_dim, upd->rank,
                           shape_of(upd, c));
  if (out->num_elements == 0) return NULL;
  if (depth < 1 || depth > 7)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Only indices.shape[-1] values between 1 and 7 are currently "
                           "supported.  Requested rank: %lld", (long long)depth);
  int64_t slice = 1;
  for (int d = (int)depth; d < out->rank; d++) slice *= out->dims[d];
  const int64_t n_upd = ind->num_elements / depth;
  int64_t strides[WEFT_MAX_RANK], st = 1; /* in slices, over the first depth dims */
  for (int d = (int)depth - 1; d >= 0; d--) {
    strides[d] = st;
    st *= out->dims[d];
  }
  for (int64_t u = 0; u < n_upd; u++) {
    for (int64_t k = 0; k < depth; k++) {
      int64_t v = weft__cpu_index_at(ind, u * depth + k);
      if (v >= 0 && v < out->dims[k]) continue;
      /* "indices[i] = [a, b] does not index into shape [..]" */
      slice_str(ind->rank > 1 ? ind->rank - 1 : 0, ind->dims, u, a, sizeof a);
      size_t at = 0;
      for (int64_t j = 0; j < depth && at < sizeof b; j++)
        at += (size_t)snprintf(b + at, sizeof b - at, "%s%lld", j ? ", " : "",
                               (long long)weft__cpu_index_at(ind, u * depth + j));
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "indices%s = [%s] does not index into shape %s", a, b,
                             shape_of(out, c));
    }
  }
  if (op == SC_DIV && has_int_zero(upd))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Integer division by zero");
  for (int64_t u = 0; u < n_upd && slice > 0; u++) {
    int64_t off = 0;
    for (int64_t k = 0; k < depth; k++) off += weft__cpu_index_at(ind, u * depth + k) * strides[k];
    WEFT_RETURN_IF_ERROR(sc_store(ctx, op, out, off * slice, upd, u * slice, slice, 1));
  }
  return NULL;
}

/* GatherNd (gather_nd_op.cc): indices[..., depth] address slices of params; the output is
 * indices.shape[:-1] + params.shape[depth:], each slice copied from where its index points. An
 * index out of range fails the step naming it, as TensorFlow's CPU kernel does. */
static weft_status_t *k_gather_nd(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t params, ind, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &params));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ind));
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN], c[CPU_SHAPE_STR_LEN];
  if (params.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "params must be at least a vector: %s", shape_of(&params, a));
  if (ind.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "indices must be at least a vector: %s", shape_of(&ind, a));
  const int64_t depth = ind.dims[ind.rank - 1];
  if (depth > params.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "index innermost dimension length must be <= params rank; saw: %lld "
                           "vs. %d", (long long)depth, params.rank);
  int64_t out_dims[WEFT_MAX_RANK];
  int out_rank = ind.rank - 1 + params.rank - (int)depth;
  if (out_rank > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "the output would have %d dimensions, "
                           "above %d", out_rank, WEFT_MAX_RANK);
  for (int d = 0; d < ind.rank - 1; d++) out_dims[d] = ind.dims[d];
  int64_t slice = 1;
  for (int d = (int)depth; d < params.rank; d++) {
    out_dims[ind.rank - 1 + d - (int)depth] = params.dims[d];
    slice *= params.dims[d];
  }
  int64_t outer = 1; /* the slices asked for: indices' outer dimensions */
  for (int d = 0; d < ind.rank - 1; d++) outer *= ind.dims[d];
  if (outer > 0 && params.num_elements == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Requested more than 0 entries, but "
                           "params is empty.  Params shape: %s", shape_of(&params, a));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, params.dtype, out_rank, out_dims, &y));
  if (y.num_elements == 0) return NULL;
  int64_t strides[WEFT_MAX_RANK], st = 1; /* in slices, over the first depth dims */
  for (int d = (int)depth - 1; d >= 0; d--) {
    strides[d] = st;
    st *= params.dims[d];
  }
  for (int64_t u = 0; u < outer; u++) {
    int64_t off = 0;
    for (int64_t k = 0; k < depth; k++) {
      int64_t v = weft__cpu_index_at(&ind, u * depth + k);
      if (v < 0 || v >= params.dims[k]) {
        slice_str(ind.rank - 1, ind.dims, u, a, sizeof a);
        size_t at = 0;
        for (int64_t j = 0; j < depth && at < sizeof b; j++)
          at += (size_t)snprintf(b + at, sizeof b - at, "%s%lld", j ? ", " : "",
                                 (long long)weft__cpu_index_at(&ind, u * depth + j));
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "indices%s = [%s] does not index into param shape %s", a, b,
                               shape_of(&params, c));
      }
      off += v * strides[k];
    }
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, u * slice, &params, off * slice, slice));
  }
  return NULL;
}

/* The checks ScatterNd and the TensorScatter ops make before the shared ones. */
static weft_status_t *scatter_nd_outer_checks(weft_kernel_ctx_t *ctx, int rank,
                                              const int64_t *dims, int64_t shape_elems,
                                              const weft_tensor_view_t *ind,
                                              const weft_tensor_view_t *upd) {
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
  if (ind->rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Indices shape must have rank at least one. Found:%s", shape_of(ind, a));
  if (upd->rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Updates shape must have rank at least one. Found:%s", shape_of(upd, a));
  bool empty_ok = (ind->num_elements == 0 && upd->num_elements == 0) ||
                  (shape_elems != 0 && ind->num_elements != 0 && upd->num_elements != 0);
  if (!empty_ok)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Indices and updates specified for empty output shape");
  const int outer = ind->rank - 1;
  for (int i = 0; i < outer; i++)
    if (i >= upd->rank || ind->dims[i] != upd->dims[i])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Outer dimensions of indices and update must match. Indices shape: "
                             "%s, updates shape:%s", shape_of(ind, a), shape_of(upd, b));
  const int64_t ix = ind->dims[outer];
  char o[CPU_SHAPE_STR_LEN];
  weft__cpu_shape_str(rank, dims, o, sizeof o);
  if (upd->rank - outer != rank - ix)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Inner dimensions of output shape must match inner dimensions of "
                           "updates shape. Output: %s updates: %s", o, shape_of(upd, b));
  for (int i = 0; i + outer < upd->rank; i++)
    if (upd->dims[i + outer] != dims[ix + i])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "The inner %lld dimensions of output.shape=%s must match the inner "
                             "%d dimensions of updates.shape=%s",
                             (long long)(rank - ix), o, upd->rank - outer, shape_of(upd, b));
  return NULL;
}

static weft_status_t *k_scatter_nd(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, upd, shape_v, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &upd));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &shape_v));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  if (shape_v.num_elements > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shape has %lld dimensions, above %d",
                           (long long)shape_v.num_elements, WEFT_MAX_RANK);
  WEFT_RETURN_IF_ERROR(
      weft__cpu_read_indices(ctx, &shape_v, "shape", dims, WEFT_MAX_RANK, &n));
  int64_t elems = 1;
  for (int64_t d = 0; d < n; d++) {
    if (dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                             (long long)dims[d]);
    elems *= dims[d];
  }
  WEFT_RETURN_IF_ERROR(
      scatter_nd_outer_checks(ctx, (int)n, dims, shape_v.num_elements, &ind, &upd));
  if (shape_v.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Shape must be a vector");
  (void)elems;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, upd.dtype, (int)n, dims, &y));
  WEFT_RETURN_IF_ERROR(weft__cpu_zero(ctx, &y));
  return scatter_nd_apply(ctx, SC_ADD, &y, &ind, &upd);
}

static weft_status_t *k_tensor_scatter(weft_kernel_ctx_t *ctx, void *state) {
  const sc_spec_t *spec = state;
  weft_tensor_view_t x, ind, upd, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &upd));
  WEFT_RETURN_IF_ERROR(
      scatter_nd_outer_checks(ctx, x.rank, x.dims, x.num_elements, &ind, &upd));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, 0, &x, 0, x.num_elements));
  return scatter_nd_apply(ctx, spec->op, &y, &ind, &upd);
}

static weft_status_t *scatter_nd_ref_locked(weft_kernel_ctx_t *ctx, sc_op_t op,
                                            const weft_tensor_view_t *ind,
                                            const weft_tensor_view_t *upd) {
  weft_tensor_view_t var;
  WEFT_RETURN_IF_ERROR(ref_var(ctx, &var));
  if (var.dtype != upd->dtype)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Cannot update a %s variable with %s updates",
                           weft__cpu_dtype_name(var.dtype), weft__cpu_dtype_name(upd->dtype));
  return scatter_nd_apply(ctx, op, &var, ind, upd);
}

static weft_status_t *k_scatter_nd_ref(weft_kernel_ctx_t *ctx, void *state) {
  return run_on_ref(ctx, state, scatter_nd_ref_locked);
}

/* ---------------------------------------------------------------------------------------------
 * Segment reductions (segment_reduction_ops_impl.h). data is viewed as [rows, inner]. */

/* out row `o` = the reduction of data rows [b, e) (sorted: consecutive rows). */
static void seg_reduce_rows(weft_dtype_t dt, seg_op_t op, const void *data, void *out, int64_t b,
                            int64_t e, int64_t o, int64_t inner) {
#define SEG_CASE(DT, T, V, UT, LD, ST, LO, HI)                                       \
  case DT: {                                                                         \
    const T *x = data;                                                               \
    T *y = out;                                                                      \
    for (int64_t j = 0; j < inner; j++) {                                            \
      V acc = LD(x, b * inner + j);                                                  \
      for (int64_t r = b + 1; r < e; r++) {                                          \
        V t = LD(x, r * inner + j);                                                  \
        switch (op) {                                                                \
          case SEG_SUM:                                                              \
          case SEG_MEAN: acc = (V)((UT)acc + (UT)t); break;                          \
          case SEG_PROD: acc = (V)((UT)acc * (UT)t); break;                          \
          case SEG_MIN: acc = t < acc ? t : acc; break;                              \
          case SEG_MAX: acc = acc < t ? t : acc; break;                              \
        }                                                                            \
      }                                                                              \
      if (op == SEG_MEAN) acc = (V)(acc / (V)(e - b));                               \
      ST(y, o * inner + j, acc);                                                     \
    }                                                                                \
    break;                                                                           \
  }
  switch (dt) {
    SC_TYPES(SEG_CASE)
    default: break;
  }
#undef SEG_CASE
}

/* Fills out rows [b, e) with `value` (0 or 1), or the identity of op when `identity`. */
static void seg_fill(weft_dtype_t dt, seg_op_t op, bool identity, double value, void *out,
                     int64_t b, int64_t e, int64_t inner) {
#define FILL_CASE(DT, T, V, UT, LD, ST, LO, HI)                                   \
  case DT: {                                                                      \
    T *y = out;                                                                   \
    V v = (V)value;                                                               \
    if (identity) v = op == SEG_PROD ? (V)1 : op == SEG_MIN ? (V)(HI) : op == SEG_MAX ? (V)(LO) \
                                                                                 : (V)0; \
    for (int64_t i = b * inner; i < e * inner; i++) ST(y, i, v);                  \
    break;                                                                        \
  }
  switch (dt) {
    SC_TYPES(FILL_CASE)
    default: break;
  }
#undef FILL_CASE
}

/* out row o = out row o (op) data row r (the unsorted reductions, Eigen's cwiseMin/Max order). */
static void seg_accumulate(weft_dtype_t dt, seg_op_t op, const void *data, void *out, int64_t r,
                           int64_t o, int64_t inner) {
#define ACC_CASE(DT, T, V, UT, LD, ST, LO, HI)                                  \
  case DT: {                                                                    \
    const T *x = data;                                                          \
    T *y = out;                                                                 \
    for (int64_t j = 0; j < inner; j++) {                                       \
      V a = LD(y, o * inner + j), t = LD(x, r * inner + j);                     \
      switch (op) {                                                             \
        case SEG_SUM:                                                           \
        case SEG_MEAN: a = (V)((UT)a + (UT)t); break;                           \
        case SEG_PROD: a = (V)((UT)a * (UT)t); break;                           \
        case SEG_MIN: a = a < t ? a : t; break;                                 \
        case SEG_MAX: a = t < a ? a : t; break;                                 \
      }                                                                         \
      ST(y, o * inner + j, a);                                                  \
    }                                                                           \
    break;                                                                      \
  }
  switch (dt) {
    SC_TYPES(ACC_CASE)
    default: break;
  }
#undef ACC_CASE
}

static weft_status_t *k_segment(weft_kernel_ctx_t *ctx, void *state) {
  const seg_op_t op = (seg_op_t)(intptr_t)state;
  weft_tensor_view_t x, ids, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ids));
  if (ids.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment_ids should be a vector.");
  if (x.rank < 1 || ids.num_elements != x.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "segment_ids should be the same size as dimension 0 of input.");
  const int64_t n = ids.num_elements;
  const int64_t rows = n > 0 ? weft__cpu_index_at(&ids, n - 1) + 1 : 0;
  if (rows < 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment ids must be >= 0");
  /* TensorFlow's walk over the runs of equal ids: each new id must grow and lie in range. */
  for (int64_t start = 0; start < n;) {
    int64_t id = weft__cpu_index_at(&ids, start), end = start + 1;
    while (end < n && weft__cpu_index_at(&ids, end) == id) end++;
    if (end < n && weft__cpu_index_at(&ids, end) < id)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment ids are not increasing");
    if (id < 0 || id >= rows)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Segment id %lld out of range [0, %lld), possibly because "
                             "'segment_ids' input is not sorted.",
                             (long long)id, (long long)rows);
    start = end;
  }
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x.dims, sizeof(int64_t) * (size_t)x.rank);
  dims[0] = rows;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, dims, &y));
  const int64_t inner = x.dims[0] > 0 ? x.num_elements / x.dims[0] : 0;
  if (y.num_elements == 0) return NULL;
  /* Rows no id names keep TensorFlow's default: 1 for Prod, 0 for the others. */
  seg_fill(x.dtype, op, false, op == SEG_PROD ? 1 : 0, y.data, 0, rows, inner);
  for (int64_t start = 0; start < n;) {
    int64_t id = weft__cpu_index_at(&ids, start), end = start + 1;
    while (end < n && weft__cpu_index_at(&ids, end) == id) end++;
    seg_reduce_rows(x.dtype, op, x.data, y.data, start, end, id, inner);
    start = end;
  }
  return NULL;
}

/* SparseSegmentSum/Mean/SqrtN(WithNumSegments) (segment_reduction_ops_impl.h): out row
 * segment_ids[i] gathers data row indices[i]; ids are sorted, rows no id names are 0. Mean and
 * SqrtN divide each segment by its size or its square root, summing in double. Every id and index
 * is checked before the sums, with TensorFlow's messages. */
static weft_status_t *k_sparse_segment(weft_kernel_ctx_t *ctx, void *state) {
  const seg_op_t op = (seg_op_t)((intptr_t)state & 0xff);
  const bool sqrt_n = ((intptr_t)state & 0x100) != 0;
  weft_tensor_view_t x, ind, ids, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &ids));
  const bool has_num = H->kernel_num_inputs(ctx) > 3;
  if (ind.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices should be a vector.");
  if (ids.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment_ids should be a vector.");
  if (x.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "data must be at least 1-D, got a scalar");
  const int64_t n = ind.num_elements;
  if (ids.num_elements != n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "segment_ids and indices should have same size.");
  const int64_t last = n > 0 ? weft__cpu_index_at(&ids, n - 1) + 1 : 0;
  int64_t rows = last;
  if (has_num) {
    weft_tensor_view_t num_v;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &num_v));
    if (num_v.rank != 0) {
      char a[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "num_segments should be a scalar, not shape %s", shape_of(&num_v, a));
    }
    rows = weft__cpu_index_at(&num_v, 0);
    if (rows < last)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment ids must be < num_segments");
  }
  if (rows < 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment ids must be >= 0");
  const int64_t data_rows = x.dims[0];
  for (int64_t start = 0; start < n;) {
    int64_t id = weft__cpu_index_at(&ids, start), end = start + 1;
    while (end < n && weft__cpu_index_at(&ids, end) == id) end++;
    if (id < 0 || id >= rows)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Segment id %lld out of range [0, %lld), possibly because "
                             "'segment_ids' input is not sorted.",
                             (long long)id, (long long)rows);
    if (end < n && weft__cpu_index_at(&ids, end) < id)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "segment ids are not increasing");
    for (int64_t i = start; i < end; i++) {
      int64_t r = weft__cpu_index_at(&ind, i);
      if (r < 0 || r >= data_rows)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "Bad: indices[%lld] == %lld out of range [0, %lld)", (long long)i,
                               (long long)r, (long long)data_rows);
    }
    start = end;
  }
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x.dims, sizeof(int64_t) * (size_t)x.rank);
  dims[0] = rows;
  if (rows > 0 && x.num_elements / (data_rows > 0 ? data_rows : 1) > INT64_MAX / rows)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_segments %lld makes the output too "
                           "large", (long long)rows);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, dims, &y));
  int64_t inner = 1;
  for (int d = 1; d < x.rank; d++) inner *= x.dims[d];
  if (y.num_elements == 0) return NULL;
  seg_fill(x.dtype, SEG_SUM, false, 0, y.data, 0, rows, inner);
  double *acc = NULL;
  if (op == SEG_MEAN)
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, sizeof(double) * (size_t)(inner > 0 ? inner : 1),
                                           (void **)&acc));
  for (int64_t start = 0; start < n;) {
    int64_t id = weft__cpu_index_at(&ids, start), end = start + 1;
    while (end < n && weft__cpu_index_at(&ids, end) == id) end++;
    if (op != SEG_MEAN) {
      for (int64_t i = start; i < end; i++)
        seg_accumulate(x.dtype, SEG_SUM, x.data, y.data, weft__cpu_index_at(&ind, i), id, inner);
    } else {
      memset(acc, 0, sizeof(double) * (size_t)inner);
      for (int64_t i = start; i < end; i++) {
        int64_t r = weft__cpu_index_at(&ind, i);
        for (int64_t j = 0; j < inner; j++)
          acc[j] += weft__cpu_load_f(x.dtype, x.data, r * inner + j);
      }
      double div = sqrt_n ? sqrt((double)(end - start)) : (double)(end - start);
      for (int64_t j = 0; j < inner; j++)
        weft__cpu_store_f(x.dtype, y.data, id * inner + j, acc[j] / div);
    }
    start = end;
  }
  return NULL;
}

static weft_status_t *k_unsorted_segment(weft_kernel_ctx_t *ctx, void *state) {
  const seg_op_t op = (seg_op_t)(intptr_t)state;
  weft_tensor_view_t x, ids, num_v, y;
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ids));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &num_v));
  if (num_v.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_segments should be a scalar, not shape %s",
                           shape_of(&num_v, a));
  bool starts = ids.rank <= x.rank;
  for (int d = 0; starts && d < ids.rank; d++) starts = ids.dims[d] == x.dims[d];
  if (!starts)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "data.shape = %s does not start with segment_ids.shape = %s",
                           shape_of(&x, a), shape_of(&ids, b));
  int64_t num = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_scalar_index(ctx, &num_v, "num_segments", &num));
  if (num < 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input num_segments == %lld must not be negative.", (long long)num);
  const int64_t n = ids.num_elements;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = weft__cpu_index_at(&ids, i);
    if (j >= num) {
      slice_str(ids.rank, ids.dims, i, a, sizeof a);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "segment_ids%s = %lld is out of range [0, %lld)",
                             a, (long long)j, (long long)num);
    }
  }
  int64_t dims[WEFT_MAX_RANK];
  int rank = 1 + x.rank - ids.rank;
  dims[0] = num;
  for (int d = ids.rank; d < x.rank; d++) dims[1 + d - ids.rank] = x.dims[d];
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  const int64_t inner = y.num_elements / num;
  seg_fill(x.dtype, op, true, 0, y.data, 0, num, inner);
  for (int64_t i = 0; i < n; i++) {
    int64_t j = weft__cpu_index_at(&ids, i);
    if (j >= 0) seg_accumulate(x.dtype, op, x.data, y.data, i, j, inner); /* negative: dropped */
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * DynamicPartition (dynamic_partition_op.cc): output p holds, in order, the slices of data whose
 * partition is p. */

static weft_status_t *k_dynamic_partition(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, parts;
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &parts));
  const int np = H->kernel_num_outputs(ctx);
  bool starts = parts.rank <= x.rank;
  for (int d = 0; starts && d < parts.rank; d++) starts = parts.dims[d] == x.dims[d];
  if (!starts)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "data.shape must start with partitions.shape, got data.shape = %s, "
                           "partitions.shape = %s", shape_of(&x, a), shape_of(&parts, b));
  const int64_t n = parts.num_elements;
  int64_t *count = calloc((size_t)np + 1, sizeof(int64_t));
  weft_tensor_view_t *ys = calloc((size_t)np + 1, sizeof(weft_tensor_view_t));
  weft_status_t *s = NULL;
  if (count == NULL || ys == NULL)
    s = weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t i = 0; i < n && s == NULL; i++) {
    int64_t p = weft__cpu_index_at(&parts, i);
    if (p < 0 || p >= np) {
      slice_str(parts.rank, parts.dims, i, a, sizeof a);
      s = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "partitions%s = %lld is not in [0, %d)", a,
                          (long long)p, np);
    } else {
      count[p]++;
    }
  }
  const int64_t slice = n > 0 ? x.num_elements / n : 0;
  int64_t dims[WEFT_MAX_RANK];
  const int rank = 1 + x.rank - parts.rank;
  for (int d = parts.rank; d < x.rank; d++) dims[1 + d - parts.rank] = x.dims[d];
  for (int p = 0; p < np && s == NULL; p++) {
    dims[0] = count[p];
    s = weft__cpu_output(ctx, p, x.dtype, rank, dims, &ys[p]);
    count[p] = 0; /* from here: slices written */
  }
  for (int64_t i = 0; i < n && s == NULL && slice > 0; i++) {
    int64_t p = weft__cpu_index_at(&parts, i);
    s = weft__cpu_copy_elems(ctx, &ys[p], count[p] * slice, &x, i * slice, slice);
    count[p]++;
  }
  free(count);
  free(ys);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_scatter(const weft_registrar_t *reg) {
  /* numbertype without the complex types; ScatterMin/Max take TensorFlow's narrower list. */
  static const weft_dtype_t num_types[] = {
      WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT32,
      WEFT_DT_INT64, WEFT_DT_INT8,   WEFT_DT_INT16,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
      WEFT_DT_UINT32, WEFT_DT_UINT64};
  static const weft_dtype_t minmax_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                              WEFT_DT_BFLOAT16, WEFT_DT_INT32, WEFT_DT_INT64};
  const size_t n_num = sizeof num_types / sizeof num_types[0];
  const size_t n_mm = sizeof minmax_types / sizeof minmax_types[0];
  /* realnumbertype is numbertype without the complex types: the same list here. */
  const weft_dtype_t *real_types = num_types;
  const size_t n_real = n_num;
  static const weft_dtype_t float_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                             WEFT_DT_BFLOAT16};
  const size_t n_float = sizeof float_types / sizeof float_types[0];
  const weft_dtype_t *all = weft__cpu_all_types;
  const size_t n_all = weft__cpu_n_all_types;
  void *upd = (void *)&kScatter[SC_ASSIGN], *add = (void *)&kScatter[SC_ADD];
  void *sub = (void *)&kScatter[SC_SUB];
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_num[] = {"num_segments", NULL};
  const weft_cpu_kernel_spec_t specs[] = {
      {"ScatterUpdate", k_scatter, "T", all, n_all, NULL, NULL, NULL, upd},
      {"ScatterAdd", k_scatter, "T", num_types, n_num, NULL, NULL, NULL, add},
      {"ScatterSub", k_scatter, "T", num_types, n_num, NULL, NULL, NULL, sub},
      {"ScatterMul", k_scatter, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)&kScatter[SC_MUL]},
      {"ScatterDiv", k_scatter, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)&kScatter[SC_DIV]},
      {"ScatterMin", k_scatter, "T", minmax_types, n_mm, NULL, NULL, NULL,
       (void *)&kScatter[SC_MIN]},
      {"ScatterMax", k_scatter, "T", minmax_types, n_mm, NULL, NULL, NULL,
       (void *)&kScatter[SC_MAX]},
      {"GatherNd", k_gather_nd, "Tparams", all, n_all, NULL, NULL, NULL, NULL},
      {"ScatterNd", k_scatter_nd, "T", num_types, n_num, hm_shape, NULL, NULL, NULL},
      {"ScatterNdUpdate", k_scatter_nd_ref, "T", all, n_all, NULL, NULL, NULL, upd},
      {"ScatterNdAdd", k_scatter_nd_ref, "T", num_types, n_num, NULL, NULL, NULL, add},
      {"ScatterNdSub", k_scatter_nd_ref, "T", num_types, n_num, NULL, NULL, NULL, sub},
      {"TensorScatterUpdate", k_tensor_scatter, "T", all, n_all, NULL, NULL, NULL, upd},
      {"TensorScatterAdd", k_tensor_scatter, "T", num_types, n_num, NULL, NULL, NULL, add},
      {"TensorScatterSub", k_tensor_scatter, "T", num_types, n_num, NULL, NULL, NULL, sub},
      {"SegmentSum", k_segment, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_SUM},
      {"SegmentMean", k_segment, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_MEAN},
      {"SegmentProd", k_segment, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_PROD},
      {"SegmentMin", k_segment, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_MIN},
      {"SegmentMax", k_segment, "T", num_types, n_num, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_MAX},
      {"UnsortedSegmentSum", k_unsorted_segment, "T", num_types, n_num, hm_num, NULL, NULL,
       (void *)(intptr_t)SEG_SUM},
      {"UnsortedSegmentProd", k_unsorted_segment, "T", num_types, n_num, hm_num, NULL, NULL,
       (void *)(intptr_t)SEG_PROD},
      {"UnsortedSegmentMin", k_unsorted_segment, "T", num_types, n_num, hm_num, NULL, NULL,
       (void *)(intptr_t)SEG_MIN},
      {"UnsortedSegmentMax", k_unsorted_segment, "T", num_types, n_num, hm_num, NULL, NULL,
       (void *)(intptr_t)SEG_MAX},
      {"SparseSegmentSum", k_sparse_segment, "T", real_types, n_real, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_SUM},
      {"SparseSegmentSumWithNumSegments", k_sparse_segment, "T", real_types, n_real, hm_num,
       NULL, NULL, (void *)(intptr_t)SEG_SUM},
      {"SparseSegmentMean", k_sparse_segment, "T", float_types, n_float, NULL, NULL, NULL,
       (void *)(intptr_t)SEG_MEAN},
      {"SparseSegmentMeanWithNumSegments", k_sparse_segment, "T", float_types, n_float, hm_num,
       NULL, NULL, (void *)(intptr_t)SEG_MEAN},
      {"SparseSegmentSqrtN", k_sparse_segment, "T", float_types, n_float, NULL, NULL, NULL,
       (void *)(intptr_t)(SEG_MEAN | 0x100)},
      {"SparseSegmentSqrtNWithNumSegments", k_sparse_segment, "T", float_types, n_float, hm_num,
       NULL, NULL, (void *)(intptr_t)(SEG_MEAN | 0x100)},
      {"DynamicPartition", k_dynamic_partition, "T", all, n_all, NULL, NULL, NULL, NULL},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
