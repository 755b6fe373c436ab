/* cpu_array.c: kernels that move elements around without arithmetic: Transpose, ConcatV2, Concat,
 * Pack, Unpack, Slice, StridedSlice (and StridedSliceGrad), Tile, Range, GatherV2, Gather, Split,
 * SplitV, Pad, PadV2, OneHot, BroadcastTo, Fill, ZerosLike, OnesLike, DynamicStitch. Every kernel
 * works for every dtype, strings included (moved element by element through host->string_assign).
 * The shapes and argument checks of the kernels the other plugins have too are shared
 * (plugins/common: the weft_pc_k_* kernels, which call array_ops below for the copying, and the
 * Tile, Pad and Fill plans). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * Block copies shared by Concat, Pack, Unpack, Split: out row o of length `out_len` gets
 * `len` elements from in row o (of length in_len) at out column `col`. */

typedef struct block_job {
  char *dst;
  const char *src;
  size_t es;
  int64_t dst_len, dst_col, src_len, src_col, len;
} block_job_t;

static void block_range(void *arg, int64_t b, int64_t e) {
  const block_job_t *j = arg;
  for (int64_t o = b; o < e; o++)
    memcpy(j->dst + (size_t)(o * j->dst_len + j->dst_col) * j->es,
           j->src + (size_t)(o * j->src_len + j->src_col) * j->es, (size_t)j->len * j->es);
}

static weft_status_t *copy_blocks(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                  int64_t dst_len, int64_t dst_col,
                                  const weft_tensor_view_t *src, int64_t src_len,
                                  int64_t src_col, int64_t len, int64_t outer) {
  if (len == 0 || outer == 0) return NULL;
  if (src->dtype == WEFT_DT_STRING) {
    for (int64_t o = 0; o < outer; o++)
      WEFT_RETURN_IF_ERROR(
          weft__cpu_copy_elems(ctx, dst, o * dst_len + dst_col, src, o * src_len + src_col, len));
    return NULL;
  }
  block_job_t j = {dst->data, src->data, weft__cpu_dtype_size(src->dtype),
                   dst_len,   dst_col,   src_len, src_col, len};
  weft__cpu_parallel(ctx, outer, len + 20, block_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The copying steps of the shared Transpose, BroadcastTo, Slice, Concat, Pack, Split, SplitV and
 * Unpack kernels (plugins/common/array_kernels.c). */

static weft_status_t *array_gather(weft_kernel_ctx_t *ctx, const weft_pc_view_t *v,
                                   const weft_tensor_view_t *y, const char *op) {
  (void)op;
  return weft__cpu_strided_gather(ctx, y, &v->x, v->base, v->rank, v->dims, v->strides);
}

/* Input i fills columns [col_i, col_i + len_i) of every outer row of the output. */
static weft_status_t *array_concat(weft_kernel_ctx_t *ctx, const weft_pc_concat_t *c,
                                   const weft_tensor_view_t *y, const char *op) {
  (void)op;
  int64_t outer = 1;
  for (int d = 0; d < c->axis; d++) outer *= c->out_dims[d];
  int64_t out_len = y->num_elements / outer, col = 0;
  for (int i = 0; i < c->n; i++) {
    int64_t len = outer > 0 ? c->ins[i].num_elements / outer : 0;
    WEFT_RETURN_IF_ERROR(copy_blocks(ctx, y, out_len, col, &c->ins[i], len, 0, len, outer));
    col += len;
  }
  return NULL;
}

/* Output i takes `sizes[i]` slices along the axis. */
static weft_status_t *array_split(weft_kernel_ctx_t *ctx, const weft_pc_split_t *p,
                                  const weft_tensor_view_t *ys) {
  const weft_tensor_view_t *x = &p->x;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < x->rank; d++) {
    if (d < p->axis) outer *= x->dims[d];
    if (d > p->axis) inner *= x->dims[d];
  }
  int64_t in_len = x->dims[p->axis] * inner, col = 0;
  for (int i = 0; i < p->n; i++) {
    int64_t len = p->sizes[i] * inner;
    WEFT_RETURN_IF_ERROR(copy_blocks(ctx, &ys[i], len, 0, x, in_len, col, len, outer));
    col += len;
  }
  return NULL;
}

static const weft_pc_array_ops_t array_ops = {array_gather, array_concat, array_split};

/* ---------------------------------------------------------------------------------------------
 * StridedSlice */

#define SS_NEW_AXIS (-1)
#define SS_SHRINK (-2)

/* The slice spec (inputs 1-3: begin, end, strides, and the mask attrs) resolved against a
 * tensor x of x->rank/x->dims (contiguous): the element offset of the first selected element,
 * per dim of x the count and the element stride, and the output shape. StridedSlice gathers
 * with it and StridedSliceGrad scatters with it, so the two cannot disagree. */
static weft_status_t *ss_resolve(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *xv,
                                 int64_t *base_out, int64_t *sizes, int64_t *strides,
                                 int *out_rank_out, int64_t *out_dims) {
  weft_tensor_view_t x = *xv, bv, ev, sv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &bv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &ev));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &sv));
  enum { SPARSE_MAX = 32 };
  int64_t sb[SPARSE_MAX], se[SPARSE_MAX], ss[SPARSE_MAX], n = 0, n2 = 0, n3 = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &bv, "begin", sb, SPARSE_MAX - 1, &n));
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &ev, "end", se, SPARSE_MAX - 1, &n2));
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &sv, "strides", ss, SPARSE_MAX - 1, &n3));
  if (n != n2 || n != n3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Expected begin, end, and strides to be 1D equal size tensors, but got "
                           "shapes [%lld], [%lld], and [%lld] instead.",
                           (long long)n, (long long)n2, (long long)n3);
  uint64_t begin_mask = (uint64_t)weft__cpu_attr_int(ctx, "begin_mask", 0);
  uint64_t end_mask = (uint64_t)weft__cpu_attr_int(ctx, "end_mask", 0);
  uint64_t ellipsis_mask = (uint64_t)weft__cpu_attr_int(ctx, "ellipsis_mask", 0);
  uint64_t new_axis_mask = (uint64_t)weft__cpu_attr_int(ctx, "new_axis_mask", 0);
  uint64_t shrink_mask = (uint64_t)weft__cpu_attr_int(ctx, "shrink_axis_mask", 0);
  if ((ellipsis_mask & (ellipsis_mask - 1)) != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Multiple ellipses in slice spec not allowed");
  /* No ellipsis in the spec means an implicit one at its end. */
  bool has_ellipsis = false;
  for (int64_t i = 0; i < n; i++) has_ellipsis |= (ellipsis_mask >> i) & 1u;
  if (!has_ellipsis) {
    ellipsis_mask |= (uint64_t)1 << n;
    sb[n] = se[n] = 0;
    ss[n] = 1;
    n++;
  }
  /* Expand the sparse spec into one entry per input dim (dense), remembering for each output
   * dim where it comes from. */
  int64_t db[WEFT_MAX_RANK], de[WEFT_MAX_RANK], ds[WEFT_MAX_RANK];
  bool dbm[WEFT_MAX_RANK], dem[WEFT_MAX_RANK], dshrink[WEFT_MAX_RANK];
  int gather[SPARSE_MAX + WEFT_MAX_RANK];
  int n_gather = 0, full = 0;
  for (int64_t i = 0; i < n; i++) {
    if ((ellipsis_mask >> i) & 1u) {
      int new_after = 0;
      for (int64_t k = i + 1; k < n; k++) new_after += (int)((new_axis_mask >> k) & 1u);
      int64_t next = x.rank - (n - 1 - i) + new_after;
      if (next > x.rank) next = x.rank;
      for (; full < next; full++) {
        db[full] = de[full] = 0;
        ds[full] = 1;
        dbm[full] = dem[full] = true;
        dshrink[full] = false;
        gather[n_gather++] = full;
      }
    } else if ((new_axis_mask >> i) & 1u) {
      gather[n_gather++] = SS_NEW_AXIS;
    } else {
      if (full >= x.rank) {
        char s[CPU_SHAPE_STR_LEN];
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "Index out of range using input dim %d; input has only %d dims "
                               "(shape %s)",
                               full, x.rank, weft__cpu_shape_str(x.rank, x.dims, s, sizeof s));
      }
      db[full] = sb[i];
      de[full] = se[i];
      ds[full] = ss[i];
      dbm[full] = (begin_mask >> i) & 1u;
      dem[full] = (end_mask >> i) & 1u;
      dshrink[full] = (shrink_mask >> i) & 1u;
      gather[n_gather++] = dshrink[full] ? SS_SHRINK : full;
      full++;
    }
  }
  /* Resolve each dense dim into begin, stride and size. */
  int64_t in_strides[WEFT_MAX_RANK], base = 0;
  weft_pc_contiguous_strides(x.rank, x.dims, in_strides);
  for (int d = 0; d < x.rank; d++) {
    int64_t dim = x.dims[d], st = ds[d], b, e;
    if (st == 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "strides[%d] must be non-zero", d);
    if (dshrink[d]) {
      b = db[d] < 0 ? db[d] + dim : db[d];
      if (b < 0 || b >= dim)
        return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                               "slice index %lld of dimension %d out of bounds.",
                               (long long)db[d], d);
      sizes[d] = 1;
      strides[d] = in_strides[d];
      base += b * in_strides[d];
      continue;
    }
    /* Masked ends take the whole range in the stride's direction; given ends are wrapped and
     * clamped to [0, dim] (forward) or [-1, dim - 1] (backward). */
    int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
    if (dbm[d]) {
      b = st > 0 ? 0 : dim - 1;
    } else {
      b = db[d] < 0 ? db[d] + dim : db[d];
      b = b < lo ? lo : (b > hi ? hi : b);
    }
    if (dem[d]) {
      e = st > 0 ? dim : -1;
    } else {
      e = de[d] < 0 ? de[d] + dim : de[d];
      e = e < lo ? lo : (e > hi ? hi : e);
    }
    int64_t len = e - b, size;
    if (len == 0 || ((len < 0) != (st < 0)))
      size = 0;
    else
      size = len / st + (len % st != 0 ? 1 : 0);
    sizes[d] = size;
    strides[d] = st * in_strides[d];
    if (size > 0) base += b * in_strides[d];
  }
  int out_rank = 0;
  for (int g = 0; g < n_gather; g++) {
    if (gather[g] == SS_SHRINK) continue;
    if (out_rank >= WEFT_MAX_RANK)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "StridedSlice output rank exceeds %d",
                             WEFT_MAX_RANK);
    out_dims[out_rank++] = gather[g] == SS_NEW_AXIS ? 1 : sizes[gather[g]];
  }
  *base_out = base;
  *out_rank_out = out_rank;
  return NULL;
}

static weft_status_t *k_strided_slice(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  int64_t base = 0, sizes[WEFT_MAX_RANK], strides[WEFT_MAX_RANK], out_dims[WEFT_MAX_RANK];
  int out_rank = 0;
  WEFT_RETURN_IF_ERROR(ss_resolve(ctx, &x, &base, sizes, strides, &out_rank, out_dims));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, out_rank, out_dims, &y));
  if (y.num_elements == 0) return NULL;
  return weft__cpu_strided_gather(ctx, &y, &x, base, x.rank, sizes, strides);
}

/* StridedSliceGrad: zeros of `shape` with dy written where StridedSlice took its elements. */
static weft_status_t *k_strided_slice_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t shp, x, dy, dx;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &shp));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 4, &dy));
  memset(&x, 0, sizeof x);
  int64_t n = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &shp, "shape", x.dims, WEFT_MAX_RANK, &n));
  if (shp.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "StridedSliceGrad: shape must be 1-D");
  x.rank = (int)n;
  for (int d = 0; d < x.rank; d++)
    if (x.dims[d] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "StridedSliceGrad: shape has a negative dimension %lld",
                             (long long)x.dims[d]);
  int64_t base = 0, sizes[WEFT_MAX_RANK], strides[WEFT_MAX_RANK], out_dims[WEFT_MAX_RANK];
  int out_rank = 0;
  WEFT_RETURN_IF_ERROR(ss_resolve(ctx, &x, &base, sizes, strides, &out_rank, out_dims));
  bool same = dy.rank == out_rank;
  for (int d = 0; same && d < out_rank; d++) same = dy.dims[d] == out_dims[d];
  if (!same) {
    char s[CPU_SHAPE_STR_LEN], s2[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "StridedSliceGrad: shape of dy was %s instead of %s",
                           weft__cpu_shape_str(dy.rank, dy.dims, s, sizeof s),
                           weft__cpu_shape_str(out_rank, out_dims, s2, sizeof s2));
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dy.dtype, x.rank, x.dims, &dx));
  if (dx.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_zero(ctx, &dx));
  for (int64_t i = 0; i < dy.num_elements; i++) {
    int64_t rem = i, at = base;
    for (int d = x.rank - 1; d >= 0; d--) {
      at += (rem % sizes[d]) * strides[d];
      rem /= sizes[d];
    }
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &dx, at, &dy, i, 1));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Tile: output row r (all dims but the last) repeats input row (r mod dims) `multiples[-1]`
 * times. */

typedef struct tile_job {
  const weft_pc_tile_t *t;
  char *dst;
  const char *src;
  size_t es;
  int rank;
  int64_t in_strides[WEFT_MAX_RANK];
  int64_t in_row, reps;
} tile_job_t;

static int64_t tile_src_row(const tile_job_t *j, int64_t r) {
  int64_t off = 0;
  for (int d = j->rank - 2; d >= 0; d--) {
    int64_t i = r % j->t->y.dims[d];
    r /= j->t->y.dims[d];
    off += (i % j->t->x.dims[d]) * j->in_strides[d];
  }
  return off;
}

static void tile_range(void *arg, int64_t b, int64_t e) {
  const tile_job_t *j = arg;
  size_t row_bytes = (size_t)j->in_row * j->es;
  for (int64_t r = b; r < e; r++) {
    const char *src = j->src + (size_t)tile_src_row(j, r) * j->es;
    char *dst = j->dst + (size_t)(r * j->reps) * row_bytes;
    for (int64_t k = 0; k < j->reps; k++) memcpy(dst + (size_t)k * row_bytes, src, row_bytes);
  }
}

static weft_status_t *k_tile(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_tile_t t;
  WEFT_RETURN_IF_ERROR(weft_pc_tile_prepare(ctx, &t));
  const weft_tensor_view_t *x = &t.x, *y = &t.y;
  if (y->num_elements == 0) return NULL;
  if (x->rank == 0) return weft__cpu_copy_elems(ctx, y, 0, x, 0, 1);
  tile_job_t j = {.t = &t,
                  .dst = y->data,
                  .src = x->data,
                  .es = weft__cpu_dtype_size(x->dtype),
                  .rank = x->rank,
                  .in_row = x->dims[x->rank - 1],
                  .reps = t.multiples[x->rank - 1]};
  weft_pc_contiguous_strides(x->rank, x->dims, j.in_strides);
  int64_t rows = y->num_elements / y->dims[x->rank - 1];
  if (x->dtype == WEFT_DT_STRING) {
    for (int64_t r = 0; r < rows; r++) {
      int64_t src = tile_src_row(&j, r);
      for (int64_t k = 0; k < j.reps; k++)
        WEFT_RETURN_IF_ERROR(
            weft__cpu_copy_elems(ctx, y, (r * j.reps + k) * j.in_row, x, src, j.in_row));
    }
    return NULL;
  }
  weft__cpu_parallel(ctx, rows, j.in_row * j.reps + 20, tile_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Range */

static weft_status_t *k_range(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t sv, lv, dv, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &lv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &dv));
  if (sv.num_elements != 1 || lv.num_elements != 1 || dv.num_elements != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "start, limit and delta must be scalars");
  weft_dtype_t t = sv.dtype;
  int64_t size;
  if (t == WEFT_DT_INT32 || t == WEFT_DT_INT64) {
    int64_t s = weft__cpu_index_at(&sv, 0), l = weft__cpu_index_at(&lv, 0);
    int64_t d = weft__cpu_index_at(&dv, 0);
    if (d == 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Requires delta != 0: 0");
    if (d > 0 && s > l)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Requires start <= limit when delta > 0: %lld/%lld", (long long)s,
                             (long long)l);
    if (d < 0 && s < l)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Requires start >= limit when delta < 0: %lld/%lld", (long long)s,
                             (long long)l);
    uint64_t span = d > 0 ? (uint64_t)l - (uint64_t)s : (uint64_t)s - (uint64_t)l;
    uint64_t step = d > 0 ? (uint64_t)d : 0u - (uint64_t)d;
    size = (int64_t)((span + step - 1) / step);
    WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, t, 1, &size, &y));
    for (int64_t i = 0; i < size; i++) {
      int64_t v = (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
      if (t == WEFT_DT_INT32) ((int32_t *)y.data)[i] = (int32_t)v;
      else ((int64_t *)y.data)[i] = v;
    }
    return NULL;
  }
  double s = weft__cpu_get_double(&sv, 0), l = weft__cpu_get_double(&lv, 0);
  double d = weft__cpu_get_double(&dv, 0);
  if (d == 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Requires delta != 0: 0");
  if (d > 0 && s > l)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Requires start <= limit when delta > 0: %g/%g", s, l);
  if (d < 0 && s < l)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Requires start >= limit when delta < 0: %g/%g", s, l);
  double count = ceil(fabs((l - s) / d));
  if (!(count < 9.0e15))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Range of %g elements is too large", count);
  size = (int64_t)count;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, t, 1, &size, &y));
  for (int64_t i = 0; i < size; i++) {
    if (t == WEFT_DT_FLOAT) {
      float fs = (float)s, fd = (float)d;
      ((float *)y.data)[i] = fs + (float)i * fd;
    } else {
      ((double *)y.data)[i] = s + (double)i * d;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * GatherV2 (and Gather, axis 0): output = params[:axis] + indices[batch_dims:] + params[axis+1:].
 * With batch_dims b, the first b dims of params and indices are a shared batch. */

typedef struct gather_idx_job {
  const char *params;
  char *out;
  size_t es;
  const weft_tensor_view_t *indices;
  int64_t outer, per_batch_outer, axis_size, inner, n_idx; /* n_idx: indices per batch */
} gather_idx_job_t;

static void gather_idx_range(void *arg, int64_t b, int64_t e) {
  const gather_idx_job_t *j = arg;
  size_t block = (size_t)j->inner * j->es;
  for (int64_t t = b; t < e; t++) {
    int64_t o = t / j->n_idx, k = t % j->n_idx;
    int64_t batch = o / j->per_batch_outer;
    int64_t idx = weft__cpu_index_at(j->indices, batch * j->n_idx + k);
    memcpy(j->out + (size_t)t * block,
           j->params + (size_t)(o * j->axis_size + idx) * block, block);
  }
}

static weft_status_t *gather_impl(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *p,
                                  const weft_tensor_view_t *ind, int64_t axis_raw,
                                  int64_t batch_dims) {
  char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
  if (!weft__cpu_is_index_dtype(ind->dtype))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices must be integers, got %s",
                           weft__cpu_dtype_name(ind->dtype));
  if (batch_dims < 0) batch_dims += ind->rank;
  if (batch_dims < 0 || batch_dims > ind->rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "batch_dims must be in [-%d, %d], got %lld", ind->rank, ind->rank,
                           (long long)batch_dims);
  int axis;
  WEFT_RETURN_IF_ERROR(weft__cpu_axis(ctx, axis_raw, p->rank, "axis", &axis));
  if (axis < batch_dims)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "batch_dims (%lld) must be less than or equal to axis (%d)",
                           (long long)batch_dims, axis);
  for (int d = 0; d < batch_dims; d++)
    if (p->dims[d] != ind->dims[d])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "params and indices must agree on the %lld batch dims: %s vs. %s",
                             (long long)batch_dims,
                             weft__cpu_shape_str(p->rank, p->dims, s0, sizeof s0),
                             weft__cpu_shape_str(ind->rank, ind->dims, s1, sizeof s1));
  int out_rank = p->rank - 1 + ind->rank - (int)batch_dims;
  if (out_rank > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Gather output rank exceeds %d",
                           WEFT_MAX_RANK);
  int64_t dims[WEFT_MAX_RANK];
  int r = 0;
  int64_t outer = 1, inner = 1, batch = 1, n_idx = 1;
  for (int d = 0; d < axis; d++) {
    dims[r++] = p->dims[d];
    outer *= p->dims[d];
  }
  for (int d = 0; d < batch_dims; d++) batch *= ind->dims[d];
  for (int d = (int)batch_dims; d < ind->rank; d++) {
    dims[r++] = ind->dims[d];
    n_idx *= ind->dims[d];
  }
  for (int d = axis + 1; d < p->rank; d++) {
    dims[r++] = p->dims[d];
    inner *= p->dims[d];
  }
  int64_t axis_size = p->dims[axis];
  for (int64_t i = 0; i < ind->num_elements; i++) {
    int64_t v = weft__cpu_index_at(ind, i);
    if (v < 0 || v >= axis_size)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices[%lld] = %lld is not in [0, %lld)",
                             (long long)i, (long long)v, (long long)axis_size);
  }
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, p->dtype, out_rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  gather_idx_job_t j = {p->data, y.data,    weft__cpu_dtype_size(p->dtype),
                        ind,     outer,     batch > 0 ? outer / batch : 1,
                        axis_size, inner,   n_idx};
  if (p->dtype == WEFT_DT_STRING) {
    for (int64_t t = 0; t < outer * n_idx; t++) {
      int64_t o = t / n_idx, k = t % n_idx;
      int64_t idx = weft__cpu_index_at(ind, (o / j.per_batch_outer) * n_idx + k);
      WEFT_RETURN_IF_ERROR(
          weft__cpu_copy_elems(ctx, &y, t * inner, p, (o * axis_size + idx) * inner, inner));
    }
    return NULL;
  }
  weft__cpu_parallel(ctx, outer * n_idx, inner + 20, gather_idx_range, &j);
  return NULL;
}

static weft_status_t *k_gather_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t p, ind, axis_v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &p));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &ind));
  int64_t axis = 0;
  if (H->kernel_num_inputs(ctx) > 2) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &axis_v));
    WEFT_RETURN_IF_ERROR(weft__cpu_read_scalar_index(ctx, &axis_v, "axis", &axis));
  }
  return gather_impl(ctx, &p, &ind, axis, weft__cpu_attr_int(ctx, "batch_dims", 0));
}

/* ---------------------------------------------------------------------------------------------
 * Pad, PadV2 */

typedef struct pad_job {
  const weft_pc_pad_t *p;
  char *dst;
  const char *src;
  size_t es;
  int64_t out_strides[WEFT_MAX_RANK];
  int64_t inner;
} pad_job_t;

/* Where input row r (all dims but the last) starts in the output. */
static int64_t pad_dst_offset(const pad_job_t *j, int64_t r) {
  const weft_pc_pad_t *p = j->p;
  int last = p->x.rank - 1;
  int64_t off = p->before[last];
  for (int d = last - 1; d >= 0; d--) {
    int64_t i = r % p->x.dims[d];
    r /= p->x.dims[d];
    off += (i + p->before[d]) * j->out_strides[d];
  }
  return off;
}

static void pad_range(void *arg, int64_t b, int64_t e) {
  const pad_job_t *j = arg;
  for (int64_t r = b; r < e; r++)
    memcpy(j->dst + (size_t)pad_dst_offset(j, r) * j->es, j->src + (size_t)(r * j->inner) * j->es,
           (size_t)j->inner * j->es);
}

static weft_status_t *k_pad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_pad_t p;
  WEFT_RETURN_IF_ERROR(weft_pc_pad_prepare(ctx, &p));
  const weft_tensor_view_t *x = &p.x, *y = &p.y;
  if (y->num_elements == 0) return NULL;
  if (H->kernel_num_inputs(ctx) > 2) {
    weft_tensor_view_t cv;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &cv));
    if (cv.num_elements != 1 || cv.dtype != x->dtype)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "constant_values must be a scalar of the input's dtype");
    WEFT_RETURN_IF_ERROR(weft__cpu_fill_from(ctx, y, &cv, 0));
  } else {
    WEFT_RETURN_IF_ERROR(weft__cpu_zero(ctx, y));
  }
  if (x->num_elements == 0) return NULL;
  if (x->rank == 0) return weft__cpu_copy_elems(ctx, y, 0, x, 0, 1);
  pad_job_t j = {.p = &p, .dst = y->data, .src = x->data, .es = weft__cpu_dtype_size(x->dtype),
                 .inner = x->dims[x->rank - 1]};
  weft_pc_contiguous_strides(x->rank, y->dims, j.out_strides);
  int64_t rows = x->num_elements / j.inner;
  if (x->dtype == WEFT_DT_STRING) {
    for (int64_t r = 0; r < rows; r++)
      WEFT_RETURN_IF_ERROR(
          weft__cpu_copy_elems(ctx, y, pad_dst_offset(&j, r), x, r * j.inner, j.inner));
    return NULL;
  }
  weft__cpu_parallel(ctx, rows, j.inner + 20, pad_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * OneHot */

static weft_status_t *k_one_hot(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t ind, depth_v, on, off, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &depth_v));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &on));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &off));
  int64_t depth;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_scalar_index(ctx, &depth_v, "depth", &depth));
  if (depth < 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "depth must be non-negative, got: %lld",
                           (long long)depth);
  if (on.num_elements != 1 || off.num_elements != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "on_value and off_value must be scalars");
  int64_t axis_raw = weft__cpu_attr_int(ctx, "axis", -1);
  int out_rank = ind.rank + 1;
  if (out_rank > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "OneHot output rank exceeds %d",
                           WEFT_MAX_RANK);
  if (axis_raw < -1 || axis_raw >= out_rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Expected axis to be -1 or between [0, %d).  "
                           "But received: %lld", out_rank, (long long)axis_raw);
  int axis = axis_raw == -1 ? ind.rank : (int)axis_raw;
  int64_t dims[WEFT_MAX_RANK], prefix = 1, suffix = 1;
  for (int d = 0, k = 0; d < out_rank; d++) {
    if (d == axis) {
      dims[d] = depth;
    } else {
      dims[d] = ind.dims[k];
      if (d < axis) prefix *= ind.dims[k]; else suffix *= ind.dims[k];
      k++;
    }
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, on.dtype, out_rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_fill_from(ctx, &y, &off, 0));
  for (int64_t p = 0; p < prefix; p++)
    for (int64_t s = 0; s < suffix; s++) {
      int64_t v = weft__cpu_index_at(&ind, p * suffix + s);
      if (v >= 0 && v < depth)
        WEFT_RETURN_IF_ERROR(
            weft__cpu_copy_elems(ctx, &y, (p * depth + v) * suffix + s, &on, 0, 1));
    }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Fill, ZerosLike, OnesLike */

static weft_status_t *k_fill(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_fill_t f;
  WEFT_RETURN_IF_ERROR(weft_pc_fill_prepare(ctx, &f));
  return weft__cpu_fill_from(ctx, &f.y, &f.value, 0);
}

static weft_status_t *k_zeros_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  return weft__cpu_zero(ctx, &y);
}

static weft_status_t *k_ones_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y, one;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  union {
    float f;
    double d;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
  } v;
  memset(&v, 0, sizeof v);
  switch (x.dtype) {
    case WEFT_DT_FLOAT: v.f = 1.0f; break;
    case WEFT_DT_DOUBLE: v.d = 1.0; break;
    case WEFT_DT_INT8: v.i8 = 1; break;
    case WEFT_DT_INT16: v.i16 = 1; break;
    case WEFT_DT_INT32: v.i32 = 1; break;
    case WEFT_DT_INT64: v.i64 = 1; break;
    case WEFT_DT_UINT8: case WEFT_DT_BOOL: v.u8 = 1; break;
    case WEFT_DT_UINT16: v.u16 = 1; break;
    case WEFT_DT_UINT32: v.u32 = 1; break;
    case WEFT_DT_UINT64: v.u64 = 1; break;
    case WEFT_DT_HALF: v.u16 = 0x3c00; break;
    case WEFT_DT_BFLOAT16: v.u16 = 0x3f80; break;
    default:
      return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "OnesLike has no CPU kernel for %s",
                             weft__cpu_dtype_name(x.dtype));
  }
  memset(&one, 0, sizeof one);
  one.dtype = x.dtype;
  one.num_elements = 1;
  one.data = &v;
  return weft__cpu_fill_from(ctx, &y, &one, 0);
}

/* ---------------------------------------------------------------------------------------------
 * DynamicStitch: merged[indices[i][j], ...] = data[i][j, ...]; later inputs win. */

static weft_status_t *k_dynamic_stitch(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_inputs(ctx) / 2;
  if (n < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "DynamicStitch needs at least one input");
  weft_tensor_view_t *v = malloc(sizeof(weft_tensor_view_t) * (size_t)(2 * n));
  if (v == NULL) return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  weft_status_t *s = NULL;
  for (int i = 0; i < 2 * n && s == NULL; i++) s = weft__cpu_input(ctx, i, &v[i]);
  /* data[i].shape = indices[i].shape + slice shape, the same slice shape for every i. */
  int slice_rank = 0;
  int64_t slice_dims[WEFT_MAX_RANK], slice = 1, max_index = -1;
  for (int i = 0; i < n && s == NULL; i++) {
    const weft_tensor_view_t *ind = &v[i], *data = &v[n + i];
    bool ok = data->rank >= ind->rank && weft__cpu_is_index_dtype(ind->dtype);
    for (int d = 0; ok && d < ind->rank; d++) ok = data->dims[d] == ind->dims[d];
    if (ok && i == 0) {
      slice_rank = data->rank - ind->rank;
      for (int d = 0; d < slice_rank; d++) {
        slice_dims[d] = data->dims[ind->rank + d];
        slice *= slice_dims[d];
      }
    } else if (ok) {
      ok = data->rank - ind->rank == slice_rank &&
           (slice_rank == 0 || memcmp(slice_dims, data->dims + ind->rank,
                                      sizeof(int64_t) * (size_t)slice_rank) == 0);
    }
    if (!ok) {
      char a[CPU_SHAPE_STR_LEN], b[CPU_SHAPE_STR_LEN];
      s = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                          "data[%d].shape = %s does not start with indices[%d].shape = %s (or "
                          "its slice shape differs from data[0]'s)",
                          i, weft__cpu_shape_str(data->rank, data->dims, a, sizeof a), i,
                          weft__cpu_shape_str(ind->rank, ind->dims, b, sizeof b));
      break;
    }
    for (int64_t k = 0; k < ind->num_elements; k++) {
      int64_t idx = weft__cpu_index_at(ind, k);
      if (idx < 0) {
        s = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "indices[%d][%lld] = %lld is negative", i,
                            (long long)k, (long long)idx);
        break;
      }
      if (idx > max_index) max_index = idx;
    }
  }
  weft_tensor_view_t y;
  if (s == NULL) {
    int64_t dims[WEFT_MAX_RANK];
    dims[0] = max_index + 1;
    for (int d = 0; d < slice_rank && d + 1 < WEFT_MAX_RANK; d++) dims[d + 1] = slice_dims[d];
    if (slice_rank + 1 > WEFT_MAX_RANK)
      s = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "DynamicStitch output rank exceeds %d",
                          WEFT_MAX_RANK);
    else
      s = weft__cpu_output(ctx, 0, v[n].dtype, slice_rank + 1, dims, &y);
  }
  if (s == NULL) s = weft__cpu_zero(ctx, &y);
  for (int i = 0; i < n && s == NULL; i++)
    for (int64_t k = 0; k < v[i].num_elements && s == NULL; k++)
      s = weft__cpu_copy_elems(ctx, &y, weft__cpu_index_at(&v[i], k) * slice, &v[n + i],
                               k * slice, slice);
  free(v);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_array(const weft_registrar_t *reg) {
  static const char *const hm_perm[] = {"perm", NULL};
  static const char *const hm_axis[] = {"axis", NULL};
  static const char *const hm_concat[] = {"concat_dim", NULL};
  static const char *const hm_split[] = {"split_dim", NULL};
  static const char *const hm_split_v[] = {"size_splits", "split_dim", NULL};
  static const char *const hm_slice[] = {"begin", "size", NULL};
  static const char *const hm_strided[] = {"begin", "end", "strides", NULL};
  static const char *const hm_strided_grad[] = {"shape", "begin", "end", "strides", NULL};
  static const char *const hm_tile[] = {"multiples", NULL};
  static const char *const hm_range[] = {"start", "limit", "delta", NULL};
  static const char *const hm_pad[] = {"paddings", NULL};
  static const char *const hm_one_hot[] = {"depth", NULL};
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_dims[] = {"dims", NULL};
  static const char *const hm_stitch[] = {"indices", NULL};
  static const weft_dtype_t range_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                             WEFT_DT_INT64};
  void *ops = (void *)&array_ops; /* the shared kernels' copying steps */
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "Transpose", .compute = weft_pc_k_transpose, .host_memory = hm_perm, .user_data = ops},
      {.op = "ConcatV2", .compute = weft_pc_k_concat_v2, .host_memory = hm_axis, .user_data = ops},
      {.op = "Concat", .compute = weft_pc_k_concat_v1, .host_memory = hm_concat, .user_data = ops},
      {.op = "Pack", .compute = weft_pc_k_pack, .user_data = ops},
      {.op = "Unpack", .compute = weft_pc_k_unpack, .user_data = ops},
      {.op = "Split", .compute = weft_pc_k_split, .host_memory = hm_split, .user_data = ops},
      {.op = "SplitV", .compute = weft_pc_k_split_v, .host_memory = hm_split_v, .user_data = ops},
      {.op = "Slice", .compute = weft_pc_k_slice, .host_memory = hm_slice, .user_data = ops},
      {.op = "StridedSlice", .compute = k_strided_slice, .host_memory = hm_strided},
      {.op = "StridedSliceGrad", .compute = k_strided_slice_grad,
       .host_memory = hm_strided_grad},
      {.op = "Tile", .compute = k_tile, .host_memory = hm_tile},
      {.op = "GatherV2", .compute = k_gather_v2, .host_memory = hm_axis},
      {.op = "Gather", .compute = k_gather_v2},
      {.op = "Pad", .compute = k_pad, .host_memory = hm_pad},
      {.op = "PadV2", .compute = k_pad, .host_memory = hm_pad},
      {.op = "OneHot", .compute = k_one_hot, .host_memory = hm_one_hot},
      {.op = "BroadcastTo", .compute = weft_pc_k_broadcast_to, .host_memory = hm_shape,
       .user_data = ops},
      {.op = "Fill", .compute = k_fill, .host_memory = hm_dims},
      {.op = "ZerosLike", .compute = k_zeros_like},
      {.op = "OnesLike", .compute = k_ones_like},
      {.op = "DynamicStitch", .compute = k_dynamic_stitch, .host_memory = hm_stitch},
      {.op = "ParallelDynamicStitch", .compute = k_dynamic_stitch, .host_memory = hm_stitch},
      {.op = "Range", .compute = k_range, .type_attr = "Tidx", .dtypes = range_types,
       .n_dtypes = 4, .host_memory = hm_range},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
