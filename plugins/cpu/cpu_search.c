/* cpu_search.c: the CPU kernels of TensorFlow's set, search and index ops, with its semantics
 * and error messages (tensorflow/core/kernels/listdiff_op.cc, searchsorted_op.cc,
 * bucketize_op.cc, unravel_index_op.cc, cross_op.cc):
 *   - ListDiff keeps the elements of x absent from y, in x's order, with their positions;
 *   - LowerBound / UpperBound search each row of values in the same row of sorted_inputs;
 *   - Bucketize counts the boundaries at or below each value;
 *   - UnravelIndex turns flat indices into coordinates of an array of shape dims;
 *   - Cross is the cross product of the 3-vectors in the last dimension. */
#include <limits.h>
#include <stdlib.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

static void put_index(const weft_tensor_view_t *t, int64_t i, int64_t v) {
  if (t->dtype == WEFT_DT_INT32) ((int32_t *)t->data)[i] = (int32_t)v;
  else ((int64_t *)t->data)[i] = v;
}

/* ---------------------------------------------------------------------------------------------
 * ListDiff: y sorted once, each x looked up by binary search (n log m, as a hash set would be
 * without hashing every dtype). A NaN equals nothing, so it is always kept, as in TensorFlow. */

static bool sorted_contains(const weft_tensor_view_t *y, const int64_t *order, int64_t m,
                            const weft_tensor_view_t *x, int64_t i) {
  int64_t lo = 0, hi = m;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    bool nan;
    int r = weft__cpu_cmp_elems(y, order[mid], x, i, &nan);
    if (r == 0 && !nan) return true; /* two NaNs compare 0 but are not equal */
    if (r < 0) lo = mid + 1;
    else hi = mid;
  }
  return false;
}

static weft_status_t *k_list_diff(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y, out, idx;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &y));
  if (x.rank != 1) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "x should be a 1D vector.");
  if (y.rank != 1) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "y should be a 1D vector.");
  weft_dtype_t it = WEFT_DT_INT32;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "out_idx", WEFT_DT_INT32, &it));
  const int64_t n = x.num_elements, m = y.num_elements;
  if (it == WEFT_DT_INT32 && n > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "x has %lld elements, more than out_idx "
                           "int32 can index", (long long)n);
  /* order: y's indices sorted; keep: x's kept positions. One allocation for both. */
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(2 * m + n + 1));
  if (!order) return oom(ctx);
  int64_t *tmp = order + m, *keep = order + 2 * m, kept = 0;
  for (int64_t j = 0; j < m; j++) order[j] = j;
  weft__cpu_sort_ascending(&y, order, tmp, m);
  for (int64_t i = 0; i < n; i++)
    if (!sorted_contains(&y, order, m, &x, i)) keep[kept++] = i;
  weft_status_t *st = weft__cpu_output(ctx, 0, x.dtype, 1, &kept, &out);
  if (!st) st = weft__cpu_output(ctx, 1, it, 1, &kept, &idx);
  for (int64_t k = 0; !st && k < kept; k++) {
    st = weft__cpu_copy_elems(ctx, &out, k, &x, keep[k], 1);
    put_index(&idx, k, keep[k]);
  }
  free(order);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * LowerBound / UpperBound: per row b, output[b, i] = the first position in sorted_inputs[b]
 * whose element is >= (lower) or > (upper) values[b, i]. */

static weft_status_t *bound(weft_kernel_ctx_t *ctx, bool upper) {
  weft_tensor_view_t s, v, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &s));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &v));
  char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
  if (s.rank != 2 || v.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sorted_inputs and values must be "
                           "matrices, got %s and %s", weft__cpu_shape_str(s.rank, s.dims, a,
                           sizeof a), weft__cpu_shape_str(v.rank, v.dims, b, sizeof b));
  if (s.dims[0] != v.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Leading dim_size of both tensors must match.");
  if (v.num_elements >= INT_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "values tensor size must less than INT_MAX");
  weft_dtype_t ot = WEFT_DT_INT32;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "out_type", WEFT_DT_INT32, &ot));
  const int64_t rows = s.dims[0], n = s.dims[1], m = v.dims[1];
  if (ot == WEFT_DT_INT32 && n >= INT_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "trailing dim_size must less than "
                           "INT_MAX for int32 output type, was %lld", (long long)n);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, ot, 2, v.dims, &y));
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t i = 0; i < m; i++) {
      int64_t lo = 0, hi = n;
      while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        bool nan;
        int c = weft__cpu_cmp_elems(&s, r * n + mid, &v, r * m + i, &nan);
        if (upper ? c <= 0 : c < 0) lo = mid + 1;
        else hi = mid;
      }
      put_index(&y, r * m + i, lo);
    }
  }
  return NULL;
}

static weft_status_t *k_lower_bound(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return bound(ctx, false);
}

static weft_status_t *k_upper_bound(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return bound(ctx, true);
}

/* ---------------------------------------------------------------------------------------------
 * Bucketize: output = the number of boundaries <= input (upper bound), compared in double. */

static weft_status_t *k_bucketize(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  const float *bd = NULL;
  size_t nb = 0;
  WEFT_RETURN_IF_ERROR(H->attr_float_list(H->kernel_attrs(ctx), "boundaries", &bd, &nb));
  for (size_t k = 1; k < nb; k++)
    if (!(bd[k - 1] <= bd[k]))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected sorted boundaries");
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, WEFT_DT_INT32, &x, &y));
  int32_t *out = y.data;
  for (int64_t i = 0; i < x.num_elements; i++) {
    const double v = weft__cpu_get_double(&x, i);
    size_t lo = 0, hi = nb;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if ((double)bd[mid] <= v) lo = mid + 1;
      else hi = mid;
    }
    out[i] = (int32_t)lo;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * UnravelIndex: output[d, i] = (indices[i] / prod(dims[d+1:])) % dims[d]; a scalar index gives
 * a vector. Any index outside [0, prod(dims)) fails the step, as TensorFlow's kernel does. */

static weft_status_t *k_unravel_index(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, dims, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &dims));
  char a[CPU_SHAPE_STR_LEN];
  if (ind.rank > 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The indices can only be scalar or "
                           "vector, got \"%s\"", weft__cpu_shape_str(ind.rank, ind.dims, a,
                           sizeof a));
  if (dims.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The indices can only be 1-D, got \"%s\"",
                           weft__cpu_shape_str(dims.rank, dims.dims, a, sizeof a));
  const int64_t nd = dims.num_elements, n = ind.num_elements;
  /* The product must fit the index dtype: every in-range index is representable. */
  const int64_t limit = ind.dtype == WEFT_DT_INT32 ? INT32_MAX : INT64_MAX;
  int64_t prod = 1;
  for (int64_t d = 0; d < nd; d++) {
    int64_t v = weft__cpu_index_at(&dims, d);
    if (v == 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input dims cannot contain a dim of "
                             "zero, but dims contains zero at index %lld", (long long)d);
    if (v < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input dims cannot be negative. Got "
                             "dim = %lld at index %lld", (long long)v, (long long)d);
    if (prod > limit / v)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Input dims product is causing integer overflow");
    prod *= v;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t v = weft__cpu_index_at(&ind, i);
    if (v < 0 || v >= prod)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "index out of bounds");
  }
  int64_t out_dims[2] = {nd, n};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, ind.dtype, ind.rank == 0 ? 1 : 2, out_dims, &y));
  for (int64_t i = 0; i < n; i++) {
    int64_t v = weft__cpu_index_at(&ind, i);
    for (int64_t d = nd - 1; d >= 0; d--) {
      int64_t dim = weft__cpu_index_at(&dims, d);
      put_index(&y, d * n + i, v % dim);
      v /= dim;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Cross: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0) per 3-vector; integers wrap. */

static weft_status_t *k_cross(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t a, b, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &a));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &b));
  char sa[CPU_SHAPE_STR_LEN], sb[CPU_SHAPE_STR_LEN];
  if (!weft_pc_same_shape(&a, &b))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Both inputs must be of same shape: %s "
                           "vs. %s", weft__cpu_shape_str(a.rank, a.dims, sa, sizeof sa),
                           weft__cpu_shape_str(b.rank, b.dims, sb, sizeof sb));
  if (a.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input must be at least 1D%s",
                           weft__cpu_shape_str(a.rank, a.dims, sa, sizeof sa));
  if (a.dims[a.rank - 1] != 3)
    return weft__cpu_error(ctx, WEFT_FAILED_PRECONDITION,
                           "Cross-products are only defined for 3-element vectors.");
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, a.dtype, &a, &y));
  const int64_t n = a.num_elements / 3;
  switch (a.dtype) {
#define CROSS(dt, type, U)                                                           \
  case dt: {                                                                         \
    const type *p = a.data, *q = b.data;                                             \
    type *o = y.data;                                                                \
    for (int64_t v = 0; v < n; v++, p += 3, q += 3, o += 3) {                        \
      U p0 = (U)p[0], p1 = (U)p[1], p2 = (U)p[2], q0 = (U)q[0], q1 = (U)q[1], q2 = (U)q[2]; \
      o[0] = (type)(p1 * q2 - p2 * q1);                                              \
      o[1] = (type)(p2 * q0 - p0 * q2);                                              \
      o[2] = (type)(p0 * q1 - p1 * q0);                                              \
    }                                                                                \
    break;                                                                           \
  }
    CPU_NUMERIC_TYPES(CROSS)
#undef CROSS
    default: /* half, bfloat16: in float */
      for (int64_t v = 0; v < n; v++) {
        float p[3], q[3];
        for (int k = 0; k < 3; k++) {
          p[k] = (float)weft__cpu_load_f(a.dtype, a.data, 3 * v + k);
          q[k] = (float)weft__cpu_load_f(a.dtype, b.data, 3 * v + k);
        }
        weft__cpu_store_f(a.dtype, y.data, 3 * v, p[1] * q[2] - p[2] * q[1]);
        weft__cpu_store_f(a.dtype, y.data, 3 * v + 1, p[2] * q[0] - p[0] * q[2]);
        weft__cpu_store_f(a.dtype, y.data, 3 * v + 2, p[0] * q[1] - p[1] * q[0]);
      }
      break;
  }
  return NULL;
}

weft_status_t *weft__cpu_register_search(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "ListDiff", .compute = k_list_diff},
      {.op = "LowerBound", .compute = k_lower_bound},
      {.op = "UpperBound", .compute = k_upper_bound},
      {.op = "Bucketize", .compute = k_bucketize},
      {.op = "UnravelIndex", .compute = k_unravel_index},
      {.op = "Cross", .compute = k_cross},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
