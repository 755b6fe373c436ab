/* vk_array.c: Vulkan kernels that move elements without arithmetic, each a strided copy
 * (gather.comp): Transpose, BroadcastTo, Slice, Tile, Split, SplitV, Unpack, ConcatV2, Pack and
 * Pad (a fill, then the input copied inside); and Shape, ShapeN, Size and Rank, whose outputs
 * live in host memory so that shape arithmetic never downloads the tensor. Shape arguments arrive in host memory. Error
 * messages match the CPU kernels'. */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

static void contiguous_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

static weft_status_t *read_scalar_index(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                        const char *what, int64_t *out) {
  if (v->num_elements != 1) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be a scalar, got shape %s", what,
                          weft__vk_shape_str(v->rank, v->dims, s, sizeof s));
  }
  int64_t n = 0;
  return weft__vk_read_indices(ctx, v, what, out, 1, &n);
}

/* ---------------------------------------------------------------------------------------------
 * Transpose, BroadcastTo, Slice, Tile */

static weft_status_t *k_transpose(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, perm_v, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &perm_v));
  int64_t perm[WEFT_MAX_RANK], n = 0;
  VK_TRY(weft__vk_read_indices(ctx, &perm_v, "perm", perm, WEFT_MAX_RANK, &n));
  if (n != x.rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "transpose expects a vector of size %d. But input(1) is a vector of "
                          "size %lld",
                          x.rank, (long long)n);
  bool seen[WEFT_MAX_RANK] = {false};
  for (int i = 0; i < x.rank; i++) {
    int64_t p = perm[i] < 0 ? perm[i] + x.rank : perm[i];
    if (p < 0 || p >= x.rank || seen[p])
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "perm is not a permutation of [0, %d): perm[%d] = %lld", x.rank, i,
                            (long long)perm[i]);
    seen[p] = true;
    perm[i] = p;
  }
  int64_t in_strides[WEFT_MAX_RANK], dims[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
  contiguous_strides(x.rank, x.dims, in_strides);
  for (int i = 0; i < x.rank; i++) {
    dims[i] = x.dims[perm[i]];
    strides[i] = in_strides[perm[i]];
  }
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &x, "Transpose input"));
  return weft__vk_gather(ctx, y.data, x.data, x.dtype, x.rank, dims, strides);
}

static weft_status_t *k_broadcast_to(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, sv, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &sv));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  VK_TRY(weft__vk_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &n));
  char s0[VK_SHAPE_STR_LEN], s1[VK_SHAPE_STR_LEN];
  int rank = (int)n;
  bool ok = x.rank <= rank;
  int64_t in_strides[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
  contiguous_strides(x.rank, x.dims, in_strides);
  for (int d = 0; d < rank && ok; d++) {
    int k = d - (rank - x.rank);
    if (dims[d] < 0) ok = false;
    if (k < 0) strides[d] = 0;
    else if (x.dims[k] == dims[d]) strides[d] = in_strides[k];
    else if (x.dims[k] == 1) strides[d] = 0;
    else ok = false;
  }
  if (!ok)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Unable to broadcast tensor of shape %s to tensor of shape %s",
                          weft__vk_shape_str(x.rank, x.dims, s0, sizeof s0),
                          weft__vk_shape_str(rank, dims, s1, sizeof s1));
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &y, "BroadcastTo output"));
  return weft__vk_gather(ctx, y.data, x.data, x.dtype, rank, dims, strides);
}

static weft_status_t *k_slice(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, begin_v, size_v, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &begin_v));
  VK_TRY(weft__vk_input(ctx, 2, &size_v));
  int64_t begin[WEFT_MAX_RANK], size[WEFT_MAX_RANK], nb = 0, ns = 0;
  VK_TRY(weft__vk_read_indices(ctx, &begin_v, "begin", begin, WEFT_MAX_RANK, &nb));
  VK_TRY(weft__vk_read_indices(ctx, &size_v, "size", size, WEFT_MAX_RANK, &ns));
  if (nb != x.rank || ns != x.rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Expected begin and size arguments to be 1-D tensors of size %d, but "
                          "got shapes [%lld] and [%lld] instead.",
                          x.rank, (long long)nb, (long long)ns);
  int64_t strides[WEFT_MAX_RANK], base = 0;
  contiguous_strides(x.rank, x.dims, strides);
  for (int d = 0; d < x.rank; d++) {
    if (size[d] == -1) size[d] = x.dims[d] - begin[d];
    if (begin[d] < 0 || begin[d] > x.dims[d] || size[d] < 0 || begin[d] + size[d] > x.dims[d])
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Expected size[%d] in [0, %lld], but got %lld (begin[%d] = %lld, "
                            "dimension size %lld)",
                            d, (long long)(x.dims[d] - begin[d]), (long long)size[d], d,
                            (long long)begin[d], (long long)x.dims[d]);
    base += begin[d] * strides[d];
  }
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, size, &y));
  if (y.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &x, "Slice input"));
  int64_t out_strides[WEFT_MAX_RANK];
  contiguous_strides(x.rank, size, out_strides);
  return weft__vk_copy_strided(ctx, y.data, 0, out_strides, x.data, base, strides, x.dtype, x.rank,
                               size);
}

static weft_status_t *k_tile(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, mv, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &mv));
  int64_t mult[WEFT_MAX_RANK], n = 0;
  VK_TRY(weft__vk_read_indices(ctx, &mv, "multiples", mult, WEFT_MAX_RANK, &n));
  if (n != x.rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Expected multiples argument to be a vector of length %d but got "
                          "length %lld",
                          x.rank, (long long)n);
  int64_t out_dims[WEFT_MAX_RANK];
  for (int d = 0; d < x.rank; d++) {
    if (mult[d] < 0)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Expected multiples[%d] >= 0, but got %lld", d, (long long)mult[d]);
    out_dims[d] = x.dims[d] * mult[d];
  }
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, out_dims, &y));
  if (y.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &y, "Tile output"));
  /* Output dim d of size m * s is the row-major pair (m, s) reading the input at (0, stride). */
  int64_t in_strides[WEFT_MAX_RANK], dims[VK_MAX_COPY_DIMS], strides[VK_MAX_COPY_DIMS];
  contiguous_strides(x.rank, x.dims, in_strides);
  for (int d = 0; d < x.rank; d++) {
    dims[2 * d] = mult[d];
    strides[2 * d] = 0;
    dims[2 * d + 1] = x.dims[d];
    strides[2 * d + 1] = in_strides[d];
  }
  return weft__vk_gather(ctx, y.data, x.data, x.dtype, 2 * x.rank, dims, strides);
}

/* ---------------------------------------------------------------------------------------------
 * ConcatV2, Pack, Pad: copies into parts of a larger output */

/* Concatenates inputs [0, n) along axis (new_axis: stacks them along a new one). */
static weft_status_t *concat(weft_kernel_ctx_t *ctx, int n, int64_t axis_raw, bool new_axis,
                             const char *what) {
  if (n < 1) return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s needs at least one value", what);
  weft_tensor_view_t *ins = calloc((size_t)n, sizeof *ins);
  if (ins == NULL) return weft__vk_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  weft_status_t *s = NULL;
  for (int i = 0; i < n && s == NULL; i++) s = weft__vk_input(ctx, i, &ins[i]);
  const weft_tensor_view_t *v0 = &ins[0];
  int out_rank = v0->rank + (new_axis ? 1 : 0);
  int axis = 0;
  if (s == NULL && out_rank > WEFT_MAX_RANK)
    s = weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s output rank exceeds %d", what, WEFT_MAX_RANK);
  if (s == NULL && out_rank == 0)
    s = weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                       "Can't concatenate scalars (use tf.stack instead)");
  if (s == NULL && (axis_raw < -(int64_t)out_rank || axis_raw >= out_rank))
    s = weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                       "axis %lld is out of range for a tensor of rank %d (must be in [%d, %d))",
                       (long long)axis_raw, out_rank, -out_rank, out_rank);
  if (s == NULL) axis = (int)(axis_raw < 0 ? axis_raw + out_rank : axis_raw);
  for (int i = 0; i < n && s == NULL; i++) {
    const weft_tensor_view_t *v = &ins[i];
    bool ok = v->rank == v0->rank && v->dtype == v0->dtype;
    for (int d = 0; ok && d < v->rank; d++)
      if (v->dims[d] != v0->dims[d] && (new_axis || d != axis)) ok = false;
    if (!ok) {
      char a[VK_SHAPE_STR_LEN], b[VK_SHAPE_STR_LEN];
      s = weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                         "%s : Dimensions of inputs should match: shape[0] = %s vs. shape[%d] = %s",
                         what, weft__vk_shape_str(v0->rank, v0->dims, a, sizeof a), i,
                         weft__vk_shape_str(v->rank, v->dims, b, sizeof b));
    }
  }
  weft_tensor_view_t y;
  int64_t out_dims[WEFT_MAX_RANK];
  if (s == NULL) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += new_axis ? 1 : ins[i].dims[axis];
    for (int d = 0, k = 0; d < out_rank; d++) {
      if (d == axis) {
        out_dims[d] = total;
        if (!new_axis) k++;
      } else {
        out_dims[d] = v0->dims[k++];
      }
    }
    s = weft__vk_output(ctx, 0, v0->dtype, out_rank, out_dims, &y);
  }
  if (s == NULL && y.num_elements > 0) s = weft__vk_check_size(ctx, &y, what);
  if (s == NULL && y.num_elements > 0) {
    int64_t out_strides[WEFT_MAX_RANK];
    contiguous_strides(out_rank, out_dims, out_strides);
    int64_t at = 0;
    for (int i = 0; i < n && s == NULL; i++) {
      /* Input i, viewed with the output's rank (a size-1 dim at the axis when stacking). */
      int64_t dims[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
      for (int d = 0, k = 0; d < out_rank; d++)
        dims[d] = (new_axis && d == axis) ? 1 : ins[i].dims[k++];
      contiguous_strides(out_rank, dims, strides);
      if (ins[i].num_elements > 0)
        s = weft__vk_copy_strided(ctx, y.data, at * out_strides[axis], out_strides, ins[i].data, 0,
                                  strides, v0->dtype, out_rank, dims);
      at += dims[axis];
    }
  }
  free(ins);
  return s;
}

static weft_status_t *k_concat_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_inputs(ctx) - 1;
  weft_tensor_view_t axis_v;
  int64_t axis;
  VK_TRY(weft__vk_input(ctx, n, &axis_v));
  VK_TRY(read_scalar_index(ctx, &axis_v, "axis", &axis));
  return concat(ctx, n, axis, false, "ConcatOp");
}

static weft_status_t *k_pack(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t axis = 0;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (H->attr_has(attrs, "axis")) VK_TRY(H->attr_int(attrs, "axis", &axis));
  return concat(ctx, H->kernel_num_inputs(ctx), axis, true, "Pack");
}

static weft_status_t *k_pad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, pv, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &pv));
  int64_t pads[2 * WEFT_MAX_RANK], n = 0;
  VK_TRY(weft__vk_read_indices(ctx, &pv, "paddings", pads, 2 * WEFT_MAX_RANK, &n));
  if (pv.rank != 2 || pv.dims[0] != x.rank || pv.dims[1] != 2) {
    char s0[VK_SHAPE_STR_LEN], s1[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "The first dimension of paddings must be the rank of inputs and the "
                          "second 2: paddings %s, input %s",
                          weft__vk_shape_str(pv.rank, pv.dims, s0, sizeof s0),
                          weft__vk_shape_str(x.rank, x.dims, s1, sizeof s1));
  }
  int64_t out_dims[WEFT_MAX_RANK];
  for (int d = 0; d < x.rank; d++) {
    if (pads[2 * d] < 0 || pads[2 * d + 1] < 0)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld",
                            (long long)pads[2 * d], (long long)pads[2 * d + 1]);
    out_dims[d] = x.dims[d] + pads[2 * d] + pads[2 * d + 1];
  }
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, out_dims, &y));
  if (y.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &y, "Pad output"));
  VK_TRY(weft__vk_fill(weft__vk_ctx_device(ctx), y.data, y.nbytes, 0u));
  if (x.num_elements == 0) return NULL;
  int64_t out_strides[WEFT_MAX_RANK], in_strides[WEFT_MAX_RANK], off = 0;
  contiguous_strides(x.rank, out_dims, out_strides);
  contiguous_strides(x.rank, x.dims, in_strides);
  for (int d = 0; d < x.rank; d++) off += pads[2 * d] * out_strides[d];
  return weft__vk_copy_strided(ctx, y.data, off, out_strides, x.data, 0, in_strides, x.dtype,
                               x.rank, x.dims);
}

/* ---------------------------------------------------------------------------------------------
 * Split, SplitV, Unpack: parts of the input along an axis, each into its own output */

static weft_status_t *split_into(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x, int axis,
                                 const int64_t *sizes, int n, bool drop_axis) {
  int64_t in_strides[WEFT_MAX_RANK];
  contiguous_strides(x->rank, x->dims, in_strides);
  if (x->num_elements > 0) VK_TRY(weft__vk_check_size(ctx, x, "split input"));
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    int64_t dims[WEFT_MAX_RANK], part[WEFT_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
      part[d] = d == axis ? sizes[i] : x->dims[d];
      if (d != axis || !drop_axis) dims[r++] = part[d];
    }
    weft_tensor_view_t y;
    VK_TRY(weft__vk_output(ctx, i, x->dtype, r, dims, &y));
    if (y.num_elements > 0)
      VK_TRY(weft__vk_copy_strided(ctx, y.data, 0, NULL, x->data, at * in_strides[axis], in_strides,
                                   x->dtype, x->rank, part));
    at += sizes[i];
  }
  return NULL;
}

static weft_status_t *split_axis(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *axis_v,
                                 int rank, int *axis) {
  if (axis_v->num_elements != 1) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "split_dim must be a scalar, got shape %s",
                          weft__vk_shape_str(axis_v->rank, axis_v->dims, s, sizeof s));
  }
  int64_t a = 0, got = 0;
  VK_TRY(weft__vk_read_indices(ctx, axis_v, "split_dim", &a, 1, &got));
  if (a < -(int64_t)rank || a >= rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "split_dim %lld is out of range for a tensor of rank %d (must be in "
                          "[%d, %d))",
                          (long long)a, rank, -rank, rank);
  *axis = (int)(a < 0 ? a + rank : a);
  return NULL;
}

static weft_status_t *k_split(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t axis_v, x;
  VK_TRY(weft__vk_input(ctx, 0, &axis_v));
  VK_TRY(weft__vk_input(ctx, 1, &x));
  int axis;
  VK_TRY(split_axis(ctx, &axis_v, x.rank, &axis));
  int n = H->kernel_num_outputs(ctx);
  if (n < 1 || x.dims[axis] % n != 0)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Number of ways to split should evenly divide the split dimension, "
                          "but got split_dim %d (size = %lld) and num_split %d",
                          axis, (long long)x.dims[axis], n);
  int64_t *sizes = malloc(sizeof(int64_t) * (size_t)n);
  if (sizes == NULL) return weft__vk_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n; i++) sizes[i] = x.dims[axis] / n;
  weft_status_t *s = split_into(ctx, &x, axis, sizes, n, false);
  free(sizes);
  return s;
}

static weft_status_t *k_split_v(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, sizes_v, axis_v;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &sizes_v));
  VK_TRY(weft__vk_input(ctx, 2, &axis_v));
  int axis;
  VK_TRY(split_axis(ctx, &axis_v, x.rank, &axis));
  int n = H->kernel_num_outputs(ctx);
  if (sizes_v.num_elements != n)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "size_splits has %lld elements but num_split is %d",
                          (long long)sizes_v.num_elements, n);
  int64_t *sizes = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (sizes == NULL) return weft__vk_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  int64_t got = 0;
  weft_status_t *s = weft__vk_read_indices(ctx, &sizes_v, "size_splits", sizes, n, &got);
  int unknown = -1;
  int64_t known = 0;
  for (int i = 0; i < n && s == NULL; i++) {
    if (sizes[i] == -1 && unknown < 0) {
      unknown = i;
    } else if (sizes[i] < 0) {
      s = weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                         "size_splits may hold one -1 and otherwise non-negative sizes, got "
                         "%lld at %d",
                         (long long)sizes[i], i);
    } else {
      known += sizes[i];
    }
  }
  if (s == NULL) {
    if (unknown >= 0 && known <= x.dims[axis]) sizes[unknown] = x.dims[axis] - known;
    else if (unknown >= 0 || known != x.dims[axis])
      s = weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Determined shape must either match input shape along split_dim "
                         "exactly if fully specified, or be less than the size of the input "
                         "along split_dim if not fully specified.  Got: %lld",
                         (long long)known);
  }
  if (s == NULL) s = split_into(ctx, &x, axis, sizes, n, false);
  free(sizes);
  return s;
}

static weft_status_t *k_unpack(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  int64_t a = 0;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (H->attr_has(attrs, "axis")) VK_TRY(H->attr_int(attrs, "axis", &a));
  if (a < -(int64_t)x.rank || a >= x.rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "axis %lld is out of range for a tensor of rank %d (must be in [%d, %d))",
                          (long long)a, x.rank, -x.rank, x.rank);
  int axis = (int)(a < 0 ? a + x.rank : a);
  int n = H->kernel_num_outputs(ctx);
  if (x.dims[axis] != n) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Input shape axis %d must equal %d, got shape %s", axis, n,
                          weft__vk_shape_str(x.rank, x.dims, s, sizeof s));
  }
  int64_t *sizes = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (sizes == NULL) return weft__vk_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < n; i++) sizes[i] = 1;
  weft_status_t *s = split_into(ctx, &x, axis, sizes, n, true);
  free(sizes);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Shape, ShapeN, Size, Rank: host-memory outputs, int32 unless out_type says int64 */

static weft_status_t *write_ints(weft_kernel_ctx_t *ctx, int index, int rank,
                                 const int64_t *values, int64_t n) {
  weft_dtype_t t = WEFT_DT_INT32;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (H->attr_has(attrs, "out_type")) VK_TRY(H->attr_type(attrs, "out_type", &t));
  if (t != WEFT_DT_INT32 && t != WEFT_DT_INT64)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "out_type must be int32 or int64, got %s",
                          weft__vk_dtype_name(t));
  weft_tensor_view_t y;
  VK_TRY(weft__vk_output(ctx, index, t, rank, &n, &y));
  for (int64_t i = 0; i < n; i++) {
    if (t == WEFT_DT_INT32) {
      if (values[i] > INT32_MAX)
        return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
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
  int n = H->kernel_num_outputs(ctx); /* ShapeN: one per input */
  for (int i = 0; i < n; i++) {
    weft_tensor_view_t x;
    VK_TRY(weft__vk_input(ctx, i, &x));
    VK_TRY(write_ints(ctx, i, 1, x.dims, x.rank));
  }
  return NULL;
}

static weft_status_t *k_size(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  return write_ints(ctx, 0, 0, &x.num_elements, 1);
}

static weft_status_t *k_rank(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_output(ctx, 0, WEFT_DT_INT32, 0, NULL, &y));
  *(int32_t *)y.data = x.rank;
  return NULL;
}

weft_status_t *weft__vk_register_array(const weft_registrar_t *reg) {
  static const char *const hm_perm[] = {"perm", NULL};
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_slice[] = {"begin", "size", NULL};
  static const char *const hm_tile[] = {"multiples", NULL};
  static const char *const hm_axis[] = {"axis", NULL};
  static const char *const hm_pad[] = {"paddings", NULL};
  static const char *const hm_out[] = {"output", NULL};
  static const char *const hm_split[] = {"split_dim", NULL};
  static const char *const hm_split_v[] = {"size_splits", "split_dim", NULL};
  const weft_dtype_t *fib = weft__vk_types_fib, *fi = weft__vk_types_fi;
  const weft_vk_kernel_spec_t specs[] = {
      {.op = "Transpose", .compute = k_transpose, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_perm},
      {.op = "BroadcastTo", .compute = k_broadcast_to, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3, .host_memory = hm_shape},
      {.op = "Slice", .compute = k_slice, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_slice},
      {.op = "Tile", .compute = k_tile, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_tile},
      /* bool parts would share output words between invocations: CPU only */
      {.op = "ConcatV2", .compute = k_concat_v2, .type_attr = "T", .dtypes = fi, .n_dtypes = 2,
       .host_memory = hm_axis},
      {.op = "Pack", .compute = k_pack, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "Pad", .compute = k_pad, .type_attr = "T", .dtypes = fi, .n_dtypes = 2,
       .host_memory = hm_pad},
      {.op = "Split", .compute = k_split, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_split},
      {.op = "SplitV", .compute = k_split_v, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_split_v},
      {.op = "Unpack", .compute = k_unpack, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "Shape", .compute = k_shape, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_out},
      {.op = "ShapeN", .compute = k_shape, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_out},
      {.op = "Size", .compute = k_size, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_out},
      {.op = "Rank", .compute = k_rank, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_out},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) VK_TRY(weft__vk_register(reg, &specs[i]));
  return NULL;
}
