/* cpu_shape.c: kernels about shapes: Reshape, ExpandDims and Squeeze (which forward the input
 * buffer under a new shape, no copy), Shape, ShapeN, Size, Rank, BroadcastGradientArgs and
 * BroadcastArgs. */
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static weft_status_t *k_reshape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, sv;
  CPU_TRY(weft__cpu_input(ctx, 0, &x));
  CPU_TRY(weft__cpu_input(ctx, 1, &sv));
  char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
  if (sv.rank > 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "sizes input must be 1-D, not %s",
                           weft__cpu_shape_str(sv.rank, sv.dims, s0, sizeof s0));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  CPU_TRY(weft__cpu_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &n));
  int unknown = -1;
  int64_t known = 1;
  for (int64_t d = 0; d < n; d++) {
    if (dims[d] == -1) {
      if (unknown >= 0)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "Only one input size may be -1, not both %d and %lld", unknown,
                               (long long)d);
      unknown = (int)d;
    } else if (dims[d] < 0) {
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Size %lld must be non-negative, not %lld",
                             (long long)d, (long long)dims[d]);
    } else {
      known *= dims[d];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.num_elements % known != 0) {
      dims[unknown] = -1;
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Input to reshape is a tensor with %lld values, but the requested "
                             "shape requires a multiple of %lld (shape %s)",
                             (long long)x.num_elements, (long long)known,
                             weft__cpu_shape_str((int)n, dims, s1, sizeof s1));
    }
    dims[unknown] = x.num_elements / known;
    known *= dims[unknown];
  }
  if (known != x.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input to reshape is a tensor with %lld values, but the requested "
                           "shape has %lld (input shape %s, requested %s)",
                           (long long)x.num_elements, (long long)known,
                           weft__cpu_shape_str(x.rank, x.dims, s0, sizeof s0),
                           weft__cpu_shape_str((int)n, dims, s1, sizeof s1));
  return H->kernel_forward_input(ctx, 0, 0, (int)n, dims);
}

static weft_status_t *k_expand_dims(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, dv;
  CPU_TRY(weft__cpu_input(ctx, 0, &x));
  CPU_TRY(weft__cpu_input(ctx, 1, &dv));
  int64_t dim;
  CPU_TRY(weft__cpu_read_scalar_index(ctx, &dv, "dim", &dim));
  if (x.rank + 1 > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "ExpandDims output rank exceeds %d",
                           WEFT_MAX_RANK);
  if (dim < -(int64_t)x.rank - 1 || dim > x.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Tried to expand dim index %lld for tensor with %d dimensions.",
                           (long long)dim, x.rank);
  int at = (int)(dim < 0 ? dim + x.rank + 1 : dim);
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0, k = 0; d <= x.rank; d++) dims[d] = d == at ? 1 : x.dims[k++];
  return H->kernel_forward_input(ctx, 0, 0, x.rank + 1, dims);
}

static weft_status_t *k_squeeze(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  CPU_TRY(weft__cpu_input(ctx, 0, &x));
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  const int64_t *axes = NULL;
  size_t n_axes = 0;
  const char *attr = H->attr_has(attrs, "squeeze_dims") ? "squeeze_dims"
                     : H->attr_has(attrs, "axis")       ? "axis"
                                                        : NULL;
  if (attr != NULL) {
    weft_status_t *s = H->attr_int_list(attrs, attr, &axes, &n_axes);
    if (s != NULL) { /* an empty list may come back typed otherwise: treat as "all" */
      H->status_free(s);
      axes = NULL;
      n_axes = 0;
    }
  }
  bool drop[WEFT_MAX_RANK] = {false};
  char s0[CPU_SHAPE_STR_LEN];
  for (size_t i = 0; i < n_axes; i++) {
    int a;
    CPU_TRY(weft__cpu_axis(ctx, axes[i], x.rank, "squeeze dimension", &a));
    if (x.dims[a] != 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Can not squeeze dim[%d], expected a dimension of 1, got %lld "
                             "(shape %s)",
                             a, (long long)x.dims[a],
                             weft__cpu_shape_str(x.rank, x.dims, s0, sizeof s0));
    drop[a] = true;
  }
  int64_t dims[WEFT_MAX_RANK];
  int r = 0;
  for (int d = 0; d < x.rank; d++) {
    bool gone = n_axes > 0 ? drop[d] : x.dims[d] == 1;
    if (!gone) dims[r++] = x.dims[d];
  }
  return H->kernel_forward_input(ctx, 0, 0, r, dims);
}

/* ---------------------------------------------------------------------------------------------
 * Shape, ShapeN, Size, Rank: outputs in host memory, int32 unless out_type says int64. */

static weft_status_t *out_type(weft_kernel_ctx_t *ctx, weft_dtype_t *t) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  *t = WEFT_DT_INT32;
  if (H->attr_has(attrs, "out_type")) CPU_TRY(H->attr_type(attrs, "out_type", t));
  if (*t != WEFT_DT_INT32 && *t != WEFT_DT_INT64)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "out_type must be int32 or int64, got %s",
                           weft__cpu_dtype_name(*t));
  return NULL;
}

static weft_status_t *write_ints(weft_kernel_ctx_t *ctx, int index, weft_dtype_t t, int rank,
                                 const int64_t *values, int64_t n) {
  weft_tensor_view_t y;
  CPU_TRY(weft__cpu_output(ctx, index, t, rank, &n, &y));
  for (int64_t i = 0; i < n; i++) {
    if (t == WEFT_DT_INT32) {
      if (values[i] > INT32_MAX)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "value %lld does not fit out_type int32; use int64",
                               (long long)values[i]);
      ((int32_t *)y.data)[i] = (int32_t)values[i];
    } else {
      ((int64_t *)y.data)[i] = values[i];
    }
  }
  return NULL;
}

static weft_status_t *k_shape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_dtype_t t;
  CPU_TRY(out_type(ctx, &t));
  int n = H->kernel_num_outputs(ctx);
  for (int i = 0; i < n; i++) {
    weft_tensor_view_t x;
    CPU_TRY(weft__cpu_input(ctx, i, &x));
    CPU_TRY(write_ints(ctx, i, t, 1, x.dims, x.rank));
  }
  return NULL;
}

static weft_status_t *k_size(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_dtype_t t;
  CPU_TRY(out_type(ctx, &t));
  weft_tensor_view_t x;
  CPU_TRY(weft__cpu_input(ctx, 0, &x));
  return write_ints(ctx, 0, t, 0, &x.num_elements, 1);
}

static weft_status_t *k_rank(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  CPU_TRY(weft__cpu_input(ctx, 0, &x));
  int64_t r = x.rank;
  return write_ints(ctx, 0, WEFT_DT_INT32, 0, &r, 1);
}

/* ---------------------------------------------------------------------------------------------
 * BroadcastGradientArgs(s0, s1) -> (r0, r1): the output dims each input was broadcast along,
 * which its gradient must be summed over. Like TensorFlow, identical shapes need no reduction,
 * and otherwise every dim where an input has size 1 is listed (also where both have size 1). */

static weft_status_t *k_bcast_grad_args(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t v0, v1;
  CPU_TRY(weft__cpu_input(ctx, 0, &v0));
  CPU_TRY(weft__cpu_input(ctx, 1, &v1));
  enum { MAXR = 64 };
  int64_t a[MAXR], b[MAXR], na = 0, nb = 0;
  CPU_TRY(weft__cpu_read_indices(ctx, &v0, "s0", a, MAXR, &na));
  CPU_TRY(weft__cpu_read_indices(ctx, &v1, "s1", b, MAXR, &nb));
  int64_t r0[MAXR], r1[MAXR], n0 = 0, n1 = 0;
  bool same = na == nb && (na == 0 || memcmp(a, b, sizeof(int64_t) * (size_t)na) == 0);
  if (!same) {
    int64_t rank = na > nb ? na : nb;
    for (int64_t d = 0; d < rank; d++) {
      int64_t x = d < rank - na ? 1 : a[d - (rank - na)];
      int64_t y = d < rank - nb ? 1 : b[d - (rank - nb)];
      if (x != y && x != 1 && y != 1) {
        char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                               weft__cpu_shape_str((int)(na < 16 ? na : 16), a, s0, sizeof s0),
                               weft__cpu_shape_str((int)(nb < 16 ? nb : 16), b, s1, sizeof s1));
      }
      if (x == 1) r0[n0++] = d;
      if (y == 1) r1[n1++] = d;
    }
  }
  CPU_TRY(write_ints(ctx, 0, v0.dtype, 1, r0, n0));
  return write_ints(ctx, 1, v0.dtype, 1, r1, n1);
}

static weft_status_t *k_bcast_args(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t v0, v1;
  CPU_TRY(weft__cpu_input(ctx, 0, &v0));
  CPU_TRY(weft__cpu_input(ctx, 1, &v1));
  enum { MAXR = 64 };
  int64_t a[MAXR], b[MAXR], out[MAXR], na = 0, nb = 0;
  CPU_TRY(weft__cpu_read_indices(ctx, &v0, "s0", a, MAXR, &na));
  CPU_TRY(weft__cpu_read_indices(ctx, &v1, "s1", b, MAXR, &nb));
  int64_t rank = na > nb ? na : nb;
  for (int64_t d = 0; d < rank; d++) {
    int64_t x = d < rank - na ? 1 : a[d - (rank - na)];
    int64_t y = d < rank - nb ? 1 : b[d - (rank - nb)];
    if (x != y && x != 1 && y != 1) {
      char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                             weft__cpu_shape_str((int)(na < 16 ? na : 16), a, s0, sizeof s0),
                             weft__cpu_shape_str((int)(nb < 16 ? nb : 16), b, s1, sizeof s1));
    }
    out[d] = x == 1 ? y : x;
  }
  return write_ints(ctx, 0, v0.dtype, 1, out, rank);
}

weft_status_t *weft__cpu_register_shape(const weft_registrar_t *reg) {
  static const char *const hm_reshape[] = {"shape", NULL};
  static const char *const hm_expand[] = {"dim", NULL};
  static const char *const hm_out[] = {"output", NULL};
  static const char *const hm_bga[] = {"s0", "s1", "r0", "r1", NULL};
  static const char *const hm_ba[] = {"s0", "s1", "r0", NULL};
  static const struct {
    const char *op;
    weft_kernel_compute_fn fn;
    const char *const *hm;
  } kernels[] = {
      {"Reshape", k_reshape, hm_reshape},
      {"ExpandDims", k_expand_dims, hm_expand},
      {"Squeeze", k_squeeze, NULL},
      {"Shape", k_shape, hm_out},
      {"ShapeN", k_shape, hm_out},
      {"Size", k_size, hm_out},
      {"Rank", k_rank, hm_out},
      {"BroadcastGradientArgs", k_bcast_grad_args, hm_bga},
      {"BroadcastArgs", k_bcast_args, hm_ba},
  };
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    weft_cpu_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = kernels[i].op;
    spec.compute = kernels[i].fn;
    spec.host_memory = kernels[i].hm;
    CPU_TRY(weft__cpu_register(reg, &spec));
  }
  return NULL;
}
