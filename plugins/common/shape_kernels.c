/* shape_kernels.c: kernels that only relabel or report shapes and so run the same on every
 * device: Reshape, ExpandDims and Squeeze forward the input's buffer under a new shape (no copy,
 * whatever memory it lives in), and Shape, ShapeN, Size and Rank write their answers to
 * host-memory outputs, so that shape arithmetic never has to read a device tensor. */
#include "plugin_common.h"

#define H weft_pc_host

weft_status_t *weft_pc_k_reshape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, sv;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &sv));
  char s0[WEFT_PC_SHAPE_STR_LEN], s1[WEFT_PC_SHAPE_STR_LEN];
  if (sv.rank > 1)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "sizes input must be 1-D, not %s",
                         weft_pc_shape_str(sv.rank, sv.dims, s0, sizeof s0));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  WEFT_RETURN_IF_ERROR(weft_pc_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &n));
  int unknown = -1;
  int64_t known = 1;
  for (int64_t d = 0; d < n; d++) {
    if (dims[d] == -1) {
      if (unknown >= 0)
        return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Only one input size may be -1, not both %d and %lld", unknown,
                             (long long)d);
      unknown = (int)d;
    } else if (dims[d] < 0) {
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Size %lld must be non-negative, not %lld",
                           (long long)d, (long long)dims[d]);
    } else {
      known *= dims[d];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.num_elements % known != 0) {
      dims[unknown] = -1;
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input to reshape is a tensor with %lld values, but the requested "
                           "shape requires a multiple of %lld (shape %s)",
                           (long long)x.num_elements, (long long)known,
                           weft_pc_shape_str((int)n, dims, s1, sizeof s1));
    }
    dims[unknown] = x.num_elements / known;
    known *= dims[unknown];
  }
  if (known != x.num_elements)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Input to reshape is a tensor with %lld values, but the requested "
                         "shape has %lld (input shape %s, requested %s)",
                         (long long)x.num_elements, (long long)known,
                         weft_pc_shape_str(x.rank, x.dims, s0, sizeof s0),
                         weft_pc_shape_str((int)n, dims, s1, sizeof s1));
  return H->kernel_forward_input(ctx, 0, 0, (int)n, dims);
}

weft_status_t *weft_pc_k_expand_dims(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, dv;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &dv));
  int64_t dim;
  WEFT_RETURN_IF_ERROR(weft_pc_read_scalar_index(ctx, &dv, "dim", &dim));
  if (x.rank + 1 > WEFT_MAX_RANK)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "ExpandDims output rank exceeds %d",
                         WEFT_MAX_RANK);
  if (dim < -(int64_t)x.rank - 1 || dim > x.rank)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Tried to expand dim index %lld for tensor with %d dimensions.",
                         (long long)dim, x.rank);
  int at = (int)(dim < 0 ? dim + x.rank + 1 : dim);
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0, k = 0; d <= x.rank; d++) dims[d] = d == at ? 1 : x.dims[k++];
  return H->kernel_forward_input(ctx, 0, 0, x.rank + 1, dims);
}

weft_status_t *weft_pc_k_squeeze(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  const int64_t *axes = NULL;
  size_t n_axes = 0;
  const char *attr = H->attr_has(attrs, "squeeze_dims") ? "squeeze_dims"
                     : H->attr_has(attrs, "axis")       ? "axis"
                                                        : NULL;
  if (attr != NULL) {
    weft_status_t *s = H->attr_int_list(attrs, attr, &axes, &n_axes);
    if (s != NULL) { /* an empty list may come back typed otherwise: it means "all" */
      H->status_free(s);
      axes = NULL;
      n_axes = 0;
    }
  }
  bool drop[WEFT_MAX_RANK] = {false};
  char s0[WEFT_PC_SHAPE_STR_LEN];
  for (size_t i = 0; i < n_axes; i++) {
    int a;
    WEFT_RETURN_IF_ERROR(weft_pc_axis(ctx, axes[i], x.rank, "squeeze dimension", &a));
    if (x.dims[a] != 1)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Can not squeeze dim[%d], expected a dimension of 1, got %lld "
                           "(shape %s)",
                           a, (long long)x.dims[a],
                           weft_pc_shape_str(x.rank, x.dims, s0, sizeof s0));
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

/* The dtype of Shape / ShapeN / Size outputs. */
static weft_status_t *out_type(weft_kernel_ctx_t *ctx, weft_dtype_t *t) {
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "out_type", WEFT_DT_INT32, t));
  if (*t != WEFT_DT_INT32 && *t != WEFT_DT_INT64)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "out_type must be int32 or int64, got %s",
                         weft_pc_dtype_name(*t));
  return NULL;
}

weft_status_t *weft_pc_k_shape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_dtype_t t;
  WEFT_RETURN_IF_ERROR(out_type(ctx, &t));
  int n = H->kernel_num_outputs(ctx); /* ShapeN: one per input */
  for (int i = 0; i < n; i++) {
    weft_tensor_view_t x;
    WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, i, &x));
    WEFT_RETURN_IF_ERROR(weft_pc_write_ints(ctx, i, t, 1, x.dims, x.rank));
  }
  return NULL;
}

weft_status_t *weft_pc_k_size(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_dtype_t t;
  WEFT_RETURN_IF_ERROR(out_type(ctx, &t));
  weft_tensor_view_t x;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  return weft_pc_write_ints(ctx, 0, t, 0, &x.num_elements, 1);
}

weft_status_t *weft_pc_k_rank(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  int64_t r = x.rank;
  return weft_pc_write_ints(ctx, 0, WEFT_DT_INT32, 0, &r, 1);
}
