/* array_kernels.c: the data-movement kernels every plugin shares but for the copying itself:
 * Transpose, BroadcastTo and Slice (a strided view of the input), ConcatV2, Concat and Pack (the
 * inputs joined along an axis), Split, SplitV and Unpack (the input cut along an axis). The
 * shape rules and argument checks, with TensorFlow's error messages, are here; the plugin's
 * weft_pc_array_ops_t, passed as the kernel's user_data, moves the elements on its device
 * (weft_pc_concat_strided and weft_pc_split_strided do it for devices with strided copies). */
#include <stdlib.h>
#include <string.h>

#include "plugin_common.h"

#define H weft_pc_host

/* ---------------------------------------------------------------------------------------------
 * Transpose, BroadcastTo, Slice: a strided view of the input. Each kernel is its plan, the
 * output it allocates, then the device's step. */

typedef weft_status_t *(*view_plan_fn)(weft_kernel_ctx_t *ctx, weft_pc_view_t *v);

static weft_status_t *run_view(weft_kernel_ctx_t *ctx, const weft_pc_array_ops_t *ops,
                               view_plan_fn plan, const char *op) {
  weft_pc_view_t v;
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(plan(ctx, &v));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, v.x.dtype, v.rank, v.dims, &y));
  if (y.num_elements == 0) return NULL;
  return ops->gather(ctx, &v, &y, op);
}

static weft_status_t *transpose_view(weft_kernel_ctx_t *ctx, weft_pc_view_t *v) {
  memset(v, 0, sizeof *v);
  const weft_tensor_view_t *x = &v->x;
  int64_t perm[WEFT_MAX_RANK], n = 0;
  WEFT_RETURN_IF_ERROR(weft_pc_tensor_and_ints(ctx, &v->x, "perm", perm, WEFT_MAX_RANK, &n));
  if (n != x->rank)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "transpose expects a vector of size %d. But input(1) is a vector of "
                         "size %lld",
                         x->rank, (long long)n);
  bool seen[WEFT_MAX_RANK] = {false};
  for (int i = 0; i < x->rank; i++) {
    int64_t p = perm[i] < 0 ? perm[i] + x->rank : perm[i];
    if (p < 0 || p >= x->rank || seen[p])
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "perm is not a permutation of [0, %d): perm[%d] = %lld", x->rank, i,
                           (long long)perm[i]);
    seen[p] = true;
    perm[i] = p;
  }
  int64_t in_strides[WEFT_MAX_RANK];
  weft_pc_contiguous_strides(x->rank, x->dims, in_strides);
  v->rank = x->rank;
  for (int i = 0; i < x->rank; i++) {
    v->dims[i] = x->dims[perm[i]];
    v->strides[i] = in_strides[perm[i]];
  }
  return NULL;
}

weft_status_t *weft_pc_k_transpose(weft_kernel_ctx_t *ctx, void *state) {
  return run_view(ctx, state, transpose_view, "Transpose");
}

static weft_status_t *broadcast_to_view(weft_kernel_ctx_t *ctx, weft_pc_view_t *v) {
  memset(v, 0, sizeof *v);
  const weft_tensor_view_t *x = &v->x;
  int64_t n = 0;
  WEFT_RETURN_IF_ERROR(weft_pc_tensor_and_ints(ctx, &v->x, "shape", v->dims, WEFT_MAX_RANK, &n));
  int rank = (int)n;
  bool ok = x->rank <= rank;
  int64_t in_strides[WEFT_MAX_RANK];
  weft_pc_contiguous_strides(x->rank, x->dims, in_strides);
  for (int d = 0; d < rank && ok; d++) {
    int k = d - (rank - x->rank);
    if (v->dims[d] < 0) ok = false;
    if (k < 0) v->strides[d] = 0;
    else if (x->dims[k] == v->dims[d]) v->strides[d] = in_strides[k];
    else if (x->dims[k] == 1) v->strides[d] = 0;
    else ok = false;
  }
  if (!ok) {
    char s0[WEFT_PC_SHAPE_STR_LEN], s1[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Unable to broadcast tensor of shape %s to tensor of shape %s",
                         weft_pc_shape_str(x->rank, x->dims, s0, sizeof s0),
                         weft_pc_shape_str(rank, v->dims, s1, sizeof s1));
  }
  v->rank = rank;
  v->expands = true;
  return NULL;
}

weft_status_t *weft_pc_k_broadcast_to(weft_kernel_ctx_t *ctx, void *state) {
  return run_view(ctx, state, broadcast_to_view, "BroadcastTo");
}

static weft_status_t *slice_view(weft_kernel_ctx_t *ctx, weft_pc_view_t *v) {
  memset(v, 0, sizeof *v);
  const weft_tensor_view_t *x = &v->x;
  weft_tensor_view_t begin_v, size_v;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &v->x));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &begin_v));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 2, &size_v));
  int64_t begin[WEFT_MAX_RANK], nb = 0, ns = 0;
  int64_t *size = v->dims;
  WEFT_RETURN_IF_ERROR(weft_pc_read_indices(ctx, &begin_v, "begin", begin, WEFT_MAX_RANK, &nb));
  WEFT_RETURN_IF_ERROR(weft_pc_read_indices(ctx, &size_v, "size", size, WEFT_MAX_RANK, &ns));
  if (nb != x->rank || ns != x->rank)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Expected begin and size arguments to be 1-D tensors of size %d, but "
                         "got shapes [%lld] and [%lld] instead.",
                         x->rank, (long long)nb, (long long)ns);
  weft_pc_contiguous_strides(x->rank, x->dims, v->strides);
  for (int d = 0; d < x->rank; d++) {
    if (size[d] == -1) size[d] = x->dims[d] - begin[d];
    if (begin[d] < 0 || begin[d] > x->dims[d] || size[d] < 0 || begin[d] + size[d] > x->dims[d])
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Expected size[%d] in [0, %lld], but got %lld (begin[%d] = %lld, "
                           "dimension size %lld)",
                           d, (long long)(x->dims[d] - begin[d]), (long long)size[d], d,
                           (long long)begin[d], (long long)x->dims[d]);
    v->base += begin[d] * v->strides[d];
  }
  v->rank = x->rank;
  return NULL;
}

weft_status_t *weft_pc_k_slice(weft_kernel_ctx_t *ctx, void *state) {
  return run_view(ctx, state, slice_view, "Slice");
}

/* ---------------------------------------------------------------------------------------------
 * Concat, Pack */

typedef weft_status_t *(*concat_plan_fn)(weft_kernel_ctx_t *ctx, weft_pc_concat_t *c);

static weft_status_t *run_concat(weft_kernel_ctx_t *ctx, const weft_pc_array_ops_t *ops,
                                 concat_plan_fn plan, const char *op) {
  weft_pc_concat_t c;
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(plan(ctx, &c));
  weft_status_t *s = weft_pc_output(ctx, 0, c.ins[0].dtype, c.out_rank, c.out_dims, &y);
  if (s == NULL && y.num_elements > 0) s = ops->concat(ctx, &c, &y, op);
  free(c.ins);
  return s;
}

/* Joins inputs [first, first + n) along axis_raw (new_axis: stacks them along a new one). */
static weft_status_t *concat_plan(weft_kernel_ctx_t *ctx, int first, int n, int64_t axis_raw,
                                  bool new_axis, const char *what, weft_pc_concat_t *c) {
  memset(c, 0, sizeof *c);
  if (n < 1) return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s needs at least one value", what);
  weft_tensor_view_t *ins = calloc((size_t)n, sizeof *ins);
  if (ins == NULL) return weft_pc_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  weft_status_t *s = NULL;
  for (int i = 0; i < n && s == NULL; i++) s = weft_pc_input(ctx, first + i, &ins[i]);
  const weft_tensor_view_t *v0 = &ins[0];
  int out_rank = v0->rank + (new_axis ? 1 : 0);
  int axis = 0;
  if (s == NULL && out_rank > WEFT_MAX_RANK)
    s = weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s output rank exceeds %d", what,
                      WEFT_MAX_RANK);
  if (s == NULL && out_rank == 0)
    s = weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                      "Can't concatenate scalars (use tf.stack instead)");
  if (s == NULL) s = weft_pc_axis(ctx, axis_raw, out_rank, "axis", &axis);
  for (int i = 0; i < n && s == NULL; i++) {
    const weft_tensor_view_t *v = &ins[i];
    bool ok = v->rank == v0->rank && v->dtype == v0->dtype;
    for (int d = 0; ok && d < v->rank; d++)
      if (v->dims[d] != v0->dims[d] && (new_axis || d != axis)) ok = false;
    if (!ok) {
      weft_pc_shape_pair_t sp;
      weft_pc_shape_pair(&sp, v0, v);
      s = weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                        "%s : Dimensions of inputs should match: shape[0] = %s vs. shape[%d] = %s",
                        what, sp.a, i, sp.b);
    }
  }
  if (s != NULL) {
    free(ins);
    return s;
  }
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += new_axis ? 1 : ins[i].dims[axis];
  for (int d = 0, k = 0; d < out_rank; d++) {
    if (d == axis) {
      c->out_dims[d] = total;
      if (!new_axis) k++;
    } else {
      c->out_dims[d] = v0->dims[k++];
    }
  }
  c->ins = ins;
  c->n = n;
  c->new_axis = new_axis;
  c->axis = axis;
  c->out_rank = out_rank;
  return NULL;
}

/* ConcatV2 (values..., axis) and Concat (concat_dim, values...): the axis is a scalar input,
 * the last one or the first. */
static weft_status_t *concat_axis_input(weft_kernel_ctx_t *ctx, bool axis_last, const char *what,
                                        weft_pc_concat_t *c) {
  memset(c, 0, sizeof *c);
  int n = H->kernel_num_inputs(ctx) - 1;
  weft_tensor_view_t axis_v;
  int64_t axis = 0;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, axis_last ? n : 0, &axis_v));
  WEFT_RETURN_IF_ERROR(weft_pc_read_scalar_index(ctx, &axis_v, what, &axis));
  return concat_plan(ctx, axis_last ? 0 : 1, n, axis, false, "ConcatOp", c);
}

static weft_status_t *concat_v2_plan(weft_kernel_ctx_t *ctx, weft_pc_concat_t *c) {
  return concat_axis_input(ctx, true, "axis", c);
}

weft_status_t *weft_pc_k_concat_v2(weft_kernel_ctx_t *ctx, void *state) {
  return run_concat(ctx, state, concat_v2_plan, "ConcatOp");
}

static weft_status_t *concat_v1_plan(weft_kernel_ctx_t *ctx, weft_pc_concat_t *c) {
  return concat_axis_input(ctx, false, "concat_dim", c);
}

weft_status_t *weft_pc_k_concat_v1(weft_kernel_ctx_t *ctx, void *state) {
  return run_concat(ctx, state, concat_v1_plan, "ConcatOp");
}

static weft_status_t *pack_plan(weft_kernel_ctx_t *ctx, weft_pc_concat_t *c) {
  return concat_plan(ctx, 0, H->kernel_num_inputs(ctx), weft_pc_attr_int(ctx, "axis", 0), true,
                     "Pack", c);
}

weft_status_t *weft_pc_k_pack(weft_kernel_ctx_t *ctx, void *state) {
  return run_concat(ctx, state, pack_plan, "Pack");
}

/* ---------------------------------------------------------------------------------------------
 * Split, SplitV, Unpack */

/* sizes for n outputs (at least one slot, so that 0 outputs still get a pointer to free). */
static weft_status_t *alloc_sizes(weft_kernel_ctx_t *ctx, weft_pc_split_t *s) {
  s->sizes = malloc(sizeof(int64_t) * (size_t)(s->n > 0 ? s->n : 1));
  if (s->sizes == NULL) return weft_pc_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  return NULL;
}

static void split_free(weft_pc_split_t *s) {
  free(s->sizes);
  s->sizes = NULL;
}

typedef weft_status_t *(*split_plan_fn)(weft_kernel_ctx_t *ctx, weft_pc_split_t *s);

static weft_status_t *run_split(weft_kernel_ctx_t *ctx, const weft_pc_array_ops_t *ops,
                                split_plan_fn plan) {
  weft_pc_split_t p;
  WEFT_RETURN_IF_ERROR(plan(ctx, &p));
  /* Every output is allocated here, so that the plugins only copy. */
  weft_tensor_view_t *ys = calloc((size_t)(p.n > 0 ? p.n : 1), sizeof *ys);
  weft_status_t *s = ys != NULL ? NULL
                                : weft_pc_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  for (int i = 0; i < p.n && s == NULL; i++) {
    int64_t dims[WEFT_MAX_RANK];
    int r = weft_pc_split_part_dims(&p, i, dims);
    s = weft_pc_output(ctx, i, p.x.dtype, r, dims, &ys[i]);
  }
  if (s == NULL) s = ops->split(ctx, &p, ys);
  free(ys);
  split_free(&p);
  return s;
}

static weft_status_t *split_plan(weft_kernel_ctx_t *ctx, weft_pc_split_t *s) {
  memset(s, 0, sizeof *s);
  weft_tensor_view_t axis_v;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &axis_v));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &s->x));
  WEFT_RETURN_IF_ERROR(weft_pc_read_axis(ctx, &axis_v, s->x.rank, "split_dim", &s->axis));
  s->n = H->kernel_num_outputs(ctx);
  int64_t dim = s->x.dims[s->axis];
  if (s->n < 1 || dim % s->n != 0)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Number of ways to split should evenly divide the split dimension, "
                         "but got split_dim %d (size = %lld) and num_split %d",
                         s->axis, (long long)dim, s->n);
  WEFT_RETURN_IF_ERROR(alloc_sizes(ctx, s));
  for (int i = 0; i < s->n; i++) s->sizes[i] = dim / s->n;
  return NULL;
}

weft_status_t *weft_pc_k_split(weft_kernel_ctx_t *ctx, void *state) {
  return run_split(ctx, state, split_plan);
}

/* SplitV's size_splits: one entry may be -1, standing for what the others leave. */
static weft_status_t *split_v_sizes(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *sizes_v,
                                    weft_pc_split_t *s) {
  int64_t got = 0, dim = s->x.dims[s->axis];
  WEFT_RETURN_IF_ERROR(weft_pc_read_indices(ctx, sizes_v, "size_splits", s->sizes, s->n, &got));
  int unknown = -1;
  int64_t known = 0;
  for (int i = 0; i < s->n; i++) {
    if (s->sizes[i] == -1 && unknown < 0)
      unknown = i;
    else if (s->sizes[i] < 0)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "size_splits may hold one -1 and otherwise non-negative sizes, got "
                           "%lld at %d",
                           (long long)s->sizes[i], i);
    else
      known += s->sizes[i];
  }
  if (unknown >= 0 && known <= dim) {
    s->sizes[unknown] = dim - known;
  } else if (unknown >= 0 || known != dim) {
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Determined shape must either match input shape along split_dim "
                         "exactly if fully specified, or be less than the size of the input "
                         "along split_dim if not fully specified.  Got: %lld",
                         (long long)known);
  }
  return NULL;
}

static weft_status_t *split_v_plan(weft_kernel_ctx_t *ctx, weft_pc_split_t *s) {
  memset(s, 0, sizeof *s);
  weft_tensor_view_t sizes_v, axis_v;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &s->x));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &sizes_v));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 2, &axis_v));
  WEFT_RETURN_IF_ERROR(weft_pc_read_axis(ctx, &axis_v, s->x.rank, "split_dim", &s->axis));
  s->n = H->kernel_num_outputs(ctx);
  if (sizes_v.num_elements != s->n)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "size_splits has %lld elements but num_split is %d",
                         (long long)sizes_v.num_elements, s->n);
  WEFT_RETURN_IF_ERROR(alloc_sizes(ctx, s));
  weft_status_t *st = split_v_sizes(ctx, &sizes_v, s);
  if (st != NULL) split_free(s);
  return st;
}

weft_status_t *weft_pc_k_split_v(weft_kernel_ctx_t *ctx, void *state) {
  return run_split(ctx, state, split_v_plan);
}

static weft_status_t *unpack_plan(weft_kernel_ctx_t *ctx, weft_pc_split_t *s) {
  memset(s, 0, sizeof *s);
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &s->x));
  WEFT_RETURN_IF_ERROR(
      weft_pc_axis(ctx, weft_pc_attr_int(ctx, "axis", 0), s->x.rank, "axis", &s->axis));
  s->n = H->kernel_num_outputs(ctx);
  s->drop_axis = true;
  if (s->x.dims[s->axis] != s->n) {
    char str[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Input shape axis %d must equal %d, got shape %s", s->axis, s->n,
                         weft_pc_shape_str(s->x.rank, s->x.dims, str, sizeof str));
  }
  WEFT_RETURN_IF_ERROR(alloc_sizes(ctx, s));
  for (int i = 0; i < s->n; i++) s->sizes[i] = 1;
  return NULL;
}

weft_status_t *weft_pc_k_unpack(weft_kernel_ctx_t *ctx, void *state) {
  return run_split(ctx, state, unpack_plan);
}

int weft_pc_split_part_dims(const weft_pc_split_t *s, int i, int64_t *dims) {
  int r = 0;
  for (int d = 0; d < s->x.rank; d++) {
    if (d != s->axis) dims[r++] = s->x.dims[d];
    else if (!s->drop_axis) dims[r++] = s->sizes[i];
  }
  return r;
}

/* Where part i of a concat (input i) or a split (output i) lies in the joined tensor (the
 * concat's output, the split's input): its dims over the joined tensor's rank (size 1 at a
 * Pack's new axis), the part's own contiguous strides, the joined tensor's strides, and the
 * element at which the part starts there. */
typedef struct part {
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t strides[WEFT_MAX_RANK];
  int64_t joined_strides[WEFT_MAX_RANK];
  int64_t offset;
} part_t;

/* Input k viewed with the output's rank: a size-1 dim at a Pack's new axis. */
static void concat_part_dims(const weft_pc_concat_t *c, int k, int64_t *dims) {
  for (int d = 0, j = 0; d < c->out_rank; d++)
    dims[d] = (c->new_axis && d == c->axis) ? 1 : c->ins[k].dims[j++];
}

weft_status_t *weft_pc_concat_strided(weft_kernel_ctx_t *ctx, const weft_pc_concat_t *c,
                                      const weft_tensor_view_t *y, weft_pc_copy_strided_fn copy) {
  part_t p;
  p.rank = c->out_rank;
  weft_pc_contiguous_strides(c->out_rank, c->out_dims, p.joined_strides);
  int64_t at = 0;
  for (int i = 0; i < c->n; i++) {
    concat_part_dims(c, i, p.dims);
    weft_pc_contiguous_strides(p.rank, p.dims, p.strides);
    p.offset = at * p.joined_strides[c->axis];
    at += p.dims[c->axis];
    if (c->ins[i].num_elements > 0)
      WEFT_RETURN_IF_ERROR(copy(ctx, y->data, p.offset, p.joined_strides, c->ins[i].data, 0,
                                p.strides, y->dtype, p.rank, p.dims));
  }
  return NULL;
}

weft_status_t *weft_pc_split_strided(weft_kernel_ctx_t *ctx, const weft_pc_split_t *s,
                                     const weft_tensor_view_t *ys, weft_pc_copy_strided_fn copy) {
  const weft_tensor_view_t *x = &s->x;
  part_t p;
  p.rank = x->rank;
  weft_pc_contiguous_strides(x->rank, x->dims, p.joined_strides);
  int64_t at = 0;
  for (int i = 0; i < s->n; i++) {
    for (int d = 0; d < x->rank; d++) p.dims[d] = d == s->axis ? s->sizes[i] : x->dims[d];
    p.offset = at * p.joined_strides[s->axis];
    at += s->sizes[i];
    if (ys[i].num_elements > 0)
      WEFT_RETURN_IF_ERROR(copy(ctx, ys[i].data, 0, NULL, x->data, p.offset, p.joined_strides,
                                x->dtype, p.rank, p.dims));
  }
  return NULL;
}
