/* shape_util.c: the shape half of the kernels every plugin implements, so that their shape rules
 * and error messages cannot drift apart: TensorFlow broadcasting, reduction axes and the runs a
 * reduction collapses into, ArgMax's view, MatMul and BatchMatMul, BiasAdd, AddN and Select
 * checks, the cross-entropy losses' shapes and labels, and the plans of Tile, Pad and Fill. The plugins do the moving and computing (the
 * other data-movement kernels are in array_kernels.c). */
#include <string.h>

#include "plugin_common.h"

#define H weft_pc_host

/* Inputs 0 and 1 of a kernel. */
static weft_status_t *two_inputs(weft_kernel_ctx_t *ctx, weft_tensor_view_t *a,
                                 weft_tensor_view_t *b) {
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, a));
  return weft_pc_input(ctx, 1, b);
}

/* ---------------------------------------------------------------------------------------------
 * Broadcasting */

weft_status_t *weft_pc_bcast_init(weft_kernel_ctx_t *ctx, weft_pc_bcast_t *b, int n_in,
                                  const int *ranks, const int64_t *const *dims) {
  memset(b, 0, sizeof *b);
  b->n_in = n_in;
  int rank = 0;
  for (int k = 0; k < n_in; k++)
    if (ranks[k] > rank) rank = ranks[k];
  /* Right-aligned padded dims of every input and the output. */
  int64_t pad[WEFT_PC_BCAST_MAX_IN][WEFT_MAX_RANK];
  int64_t out[WEFT_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    out[d] = 1;
    for (int k = 0; k < n_in; k++) {
      int lead = rank - ranks[k];
      pad[k][d] = d < lead ? 1 : dims[k][d - lead];
      int64_t v = pad[k][d];
      if (v == 1) continue;
      if (out[d] == 1) {
        out[d] = v;
      } else if (out[d] != v) {
        char s0[WEFT_PC_SHAPE_STR_LEN], s1[WEFT_PC_SHAPE_STR_LEN], s2[WEFT_PC_SHAPE_STR_LEN];
        if (n_in == 3)
          return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s vs. %s",
                               weft_pc_shape_str(ranks[0], dims[0], s0, sizeof s0),
                               weft_pc_shape_str(ranks[1], dims[1], s1, sizeof s1),
                               weft_pc_shape_str(ranks[2], dims[2], s2, sizeof s2));
        return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                             weft_pc_shape_str(ranks[0], dims[0], s0, sizeof s0),
                             weft_pc_shape_str(ranks[n_in - 1], dims[n_in - 1], s1, sizeof s1));
      }
    }
  }
  b->out_rank = rank;
  b->out_elements = 1;
  for (int d = 0; d < rank; d++) {
    b->out_dims[d] = out[d];
    b->out_elements *= out[d];
  }
  /* Collapse: drop dims of size 1 (nobody iterates them), then merge neighbours whose broadcast
   * pattern is the same, so that the innermost run is as long as possible. */
  int64_t cd[WEFT_MAX_RANK];
  unsigned cb[WEFT_MAX_RANK]; /* bit k set: input k is broadcast along this dim */
  int cr = 0;
  for (int d = 0; d < rank; d++) {
    if (out[d] == 1) continue;
    unsigned bits = 0;
    for (int k = 0; k < n_in; k++)
      if (pad[k][d] == 1) bits |= 1u << k;
    if (cr > 0 && cb[cr - 1] == bits) {
      cd[cr - 1] *= out[d];
    } else {
      cd[cr] = out[d];
      cb[cr] = bits;
      cr++;
    }
  }
  if (cr == 0) {
    cd[0] = b->out_elements; /* 1: a 0-sized dim is never dropped */
    cb[0] = 0;
    cr = 1;
  }
  b->rank = cr;
  for (int d = 0; d < cr; d++) b->dims[d] = cd[d];
  for (int k = 0; k < n_in; k++) {
    int64_t s = 1;
    for (int d = cr - 1; d >= 0; d--) {
      if (cb[d] & (1u << k)) {
        b->strides[k][d] = 0;
      } else {
        b->strides[k][d] = s;
        s *= cd[d];
      }
    }
  }
  return NULL;
}

weft_status_t *weft_pc_bcast_views(weft_kernel_ctx_t *ctx, weft_pc_bcast_t *b, int n_in,
                                   const weft_tensor_view_t *const *ins) {
  int ranks[WEFT_PC_BCAST_MAX_IN];
  const int64_t *dims[WEFT_PC_BCAST_MAX_IN];
  for (int k = 0; k < n_in; k++) {
    ranks[k] = ins[k]->rank;
    dims[k] = ins[k]->dims;
  }
  return weft_pc_bcast_init(ctx, b, n_in, ranks, dims);
}

weft_status_t *weft_pc_bcast3_prepare(weft_kernel_ctx_t *ctx, weft_tensor_view_t *in, int like,
                                      weft_pc_bcast_t *bc, weft_tensor_view_t *z) {
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  const weft_tensor_view_t *ins[3] = {&in[0], &in[1], &in[2]};
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_views(ctx, bc, 3, ins));
  return weft_pc_output(ctx, 0, in[like].dtype, bc->out_rank, bc->out_dims, z);
}

void weft_pc_bcast_row_offsets(const weft_pc_bcast_t *b, int64_t row, int64_t *offsets) {
  for (int k = 0; k < b->n_in; k++) offsets[k] = 0;
  for (int d = b->rank - 2; d >= 0; d--) {
    int64_t i = row % b->dims[d];
    row /= b->dims[d];
    for (int k = 0; k < b->n_in; k++) offsets[k] += i * b->strides[k][d];
  }
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

/* At most this many axes: more than WEFT_MAX_RANK, since TensorFlow allows repeats. */
#define MAX_AXES 64

weft_status_t *weft_pc_reduction_axes(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                      const weft_tensor_view_t *axes_v, weft_pc_reduction_t *r) {
  memset(r, 0, sizeof *r);
  int64_t axes[MAX_AXES], n_axes = 0;
  WEFT_RETURN_IF_ERROR(
      weft_pc_read_indices(ctx, axes_v, "reduction_indices", axes, MAX_AXES, &n_axes));
  for (int64_t i = 0; i < n_axes; i++) {
    if (axes[i] < -(int64_t)x->rank || axes[i] >= x->rank)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Invalid reduction dimension (%lld for input with %d dimension(s)",
                           (long long)axes[i], x->rank);
    r->reduced[axes[i] < 0 ? axes[i] + x->rank : axes[i]] = true;
  }
  bool keep_dims = weft_pc_attr_bool(ctx, "keep_dims", false);
  r->count = 1;
  for (int d = 0; d < x->rank; d++) {
    if (r->reduced[d]) {
      r->count *= x->dims[d];
      if (keep_dims) r->out_dims[r->out_rank++] = 1;
    } else {
      r->out_dims[r->out_rank++] = x->dims[d];
    }
  }
  return NULL;
}

weft_status_t *weft_pc_reduction_prepare(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                         weft_pc_reduction_t *r, weft_tensor_view_t *y) {
  weft_tensor_view_t axes_v;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &axes_v));
  WEFT_RETURN_IF_ERROR(weft_pc_reduction_axes(ctx, x, &axes_v, r));
  return weft_pc_output(ctx, 0, x->dtype, r->out_rank, r->out_dims, y);
}

void weft_pc_reduce_groups(const weft_tensor_view_t *x, const bool *reduced,
                           weft_pc_reduce_groups_t *g) {
  g->n = 0;
  g->any_reduced = false;
  for (int d = 0; d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    if (g->n > 0 && g->red[g->n - 1] == reduced[d]) {
      g->size[g->n - 1] *= x->dims[d];
    } else {
      g->red[g->n] = reduced[d];
      g->size[g->n] = x->dims[d];
      g->n++;
    }
    g->any_reduced |= reduced[d];
  }
}

int weft_pc_reduce_regroup(const weft_pc_reduce_groups_t *g, int64_t *sizes, int64_t *strides,
                           int64_t *kept, int64_t *red) {
  int64_t g_stride[WEFT_MAX_RANK], s = 1;
  for (int i = g->n - 1; i >= 0; i--) {
    g_stride[i] = s;
    s *= g->size[i];
  }
  *kept = 1;
  *red = 1;
  int r = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < g->n; i++) {
      if (g->red[i] != (pass == 1)) continue;
      sizes[r] = g->size[i];
      strides[r] = g_stride[i];
      if (pass == 0) *kept *= g->size[i];
      else *red *= g->size[i];
      r++;
    }
  return r;
}

void weft_pc_reduce_plan(const weft_pc_reduce_groups_t *g, weft_pc_reduce_plan_t *p) {
  memset(p, 0, sizeof *p);
  p->outer = 1;
  p->inner = 1;
  if (g->n == 1 || (g->n == 2 && !g->red[0])) { /* [R] or [K, R] */
    p->kind = WEFT_PC_REDUCE_ROWS;
    p->rows = g->n == 1 ? 1 : g->size[0];
    p->len = g->size[g->n - 1];
    return;
  }
  bool cols_shape = false;
  if (g->n == 2) { /* [R, K] */
    p->mid = g->size[0];
    p->inner = g->size[1];
    cols_shape = true;
  } else if (g->n == 3 && !g->red[0]) { /* [K, R, K] */
    p->outer = g->size[0];
    p->mid = g->size[1];
    p->inner = g->size[2];
    cols_shape = true;
  }
  if (cols_shape &&
      !(p->outer * p->inner < WEFT_PC_COLS_FEW_OUTPUTS && p->mid >= WEFT_PC_COLS_LONG_RUN)) {
    p->kind = WEFT_PC_REDUCE_COLS;
    return;
  }
  /* Regroup: kept dims first, reduced dims last, then reduce rows. */
  p->kind = WEFT_PC_REDUCE_REGROUP;
  p->outer = p->mid = p->inner = 0;
  p->rank = weft_pc_reduce_regroup(g, p->sizes, p->strides, &p->rows, &p->len);
}

weft_status_t *weft_pc_arg_plan(weft_kernel_ctx_t *ctx, weft_pc_arg_t *a) {
  memset(a, 0, sizeof *a);
  weft_tensor_view_t dim_v;
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, &a->x, &dim_v));
  WEFT_RETURN_IF_ERROR(weft_pc_read_axis(ctx, &dim_v, a->x.rank, "dimension", &a->axis));
  return weft_pc_attr_type(ctx, "output_type", WEFT_DT_INT64, &a->out_dtype);
}

weft_status_t *weft_pc_arg_shape(weft_kernel_ctx_t *ctx, weft_pc_arg_t *a) {
  const weft_tensor_view_t *x = &a->x;
  a->n = x->dims[a->axis];
  a->outer = 1;
  a->inner = 1;
  a->out_rank = 0;
  for (int d = 0; d < x->rank; d++) {
    if (d < a->axis) a->outer *= x->dims[d];
    if (d > a->axis) a->inner *= x->dims[d];
    if (d != a->axis) a->out_dims[a->out_rank++] = x->dims[d];
  }
  if (a->n == 0) {
    char s[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Reduction axis %d is empty in shape %s",
                         a->axis, weft_pc_shape_str(x->rank, x->dims, s, sizeof s));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * MatMul, BatchMatMul */

weft_status_t *weft_pc_matmul_prepare(weft_kernel_ctx_t *ctx, weft_pc_matmul_t *mm) {
  memset(mm, 0, sizeof *mm);
  const weft_tensor_view_t *a = &mm->a, *b = &mm->b;
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, &mm->a, &mm->b));
  weft_pc_shape_pair_t s;
  if (a->rank != 2 || b->rank != 2) {
    weft_pc_shape_pair(&s, a, b);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "MatMul needs matrices (rank 2): In[0]: %s, In[1]: %s", s.a, s.b);
  }
  mm->ta = weft_pc_attr_bool(ctx, "transpose_a", false);
  mm->tb = weft_pc_attr_bool(ctx, "transpose_b", false);
  mm->m = mm->ta ? a->dims[1] : a->dims[0];
  mm->k = mm->ta ? a->dims[0] : a->dims[1];
  int64_t kb = mm->tb ? b->dims[1] : b->dims[0];
  mm->n = mm->tb ? b->dims[0] : b->dims[1];
  if (mm->k != kb) {
    weft_pc_shape_pair(&s, a, b);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Matrix size-incompatible: In[0]: %s, In[1]: %s (transpose_a=%d, "
                         "transpose_b=%d)",
                         s.a, s.b, mm->ta, mm->tb);
  }
  int64_t dims[2] = {mm->m, mm->n};
  return weft_pc_output(ctx, 0, a->dtype, 2, dims, &mm->c);
}

weft_status_t *weft_pc_batch_matmul_prepare(weft_kernel_ctx_t *ctx, bool equal_batch,
                                            weft_pc_batch_matmul_t *bm) {
  memset(bm, 0, sizeof *bm);
  const weft_tensor_view_t *x = &bm->x, *y = &bm->y;
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, &bm->x, &bm->y));
  weft_pc_shape_pair_t s;
  if (x->rank < 2 || y->rank < 2) {
    weft_pc_shape_pair(&s, x, y);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "BatchMatMul needs inputs of rank >= 2: x %s, y %s", s.a, s.b);
  }
  bm->adj_x = weft_pc_attr_bool(ctx, "adj_x", false);
  bm->adj_y = weft_pc_attr_bool(ctx, "adj_y", false);
  int64_t xr = x->dims[x->rank - 2], xc = x->dims[x->rank - 1];
  int64_t yr = y->dims[y->rank - 2], yc = y->dims[y->rank - 1];
  bm->m = bm->adj_x ? xc : xr;
  bm->k = bm->adj_x ? xr : xc;
  int64_t ky = bm->adj_y ? yc : yr;
  bm->n = bm->adj_y ? yr : yc;
  if (bm->k != ky) {
    weft_pc_shape_pair(&s, x, y);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Matrix size-incompatible: In[0]: %s, In[1]: %s (adj_x=%d, adj_y=%d)",
                         s.a, s.b, bm->adj_x, bm->adj_y);
  }
  /* The batch dims: each operand's dims but the last two. */
  const int ranks[2] = {x->rank - 2, y->rank - 2};
  const int64_t *dims[2] = {x->dims, y->dims};
  if (equal_batch && (ranks[0] != ranks[1] ||
                      memcmp(x->dims, y->dims, sizeof(int64_t) * (size_t)ranks[0]) != 0)) {
    weft_pc_shape_pair(&s, x, y);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "BatchMatMul needs equal batch dimensions: x %s, y %s", s.a, s.b);
  }
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_init(ctx, &bm->bc, 2, ranks, dims));
  if (bm->bc.out_rank + 2 > WEFT_MAX_RANK)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "BatchMatMul output rank exceeds %d",
                         WEFT_MAX_RANK);
  int64_t out_dims[WEFT_MAX_RANK];
  for (int d = 0; d < bm->bc.out_rank; d++) out_dims[d] = bm->bc.out_dims[d];
  out_dims[bm->bc.out_rank] = bm->m;
  out_dims[bm->bc.out_rank + 1] = bm->n;
  return weft_pc_output(ctx, 0, x->dtype, bm->bc.out_rank + 2, out_dims, &bm->z);
}

/* ---------------------------------------------------------------------------------------------
 * BiasAdd, AddN, Select */

weft_status_t *weft_pc_data_format_nchw(weft_kernel_ctx_t *ctx, bool *nchw) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  *nchw = false;
  if (!H->attr_has(attrs, "data_format")) return NULL;
  const char *fmt = NULL;
  size_t len = 0;
  WEFT_RETURN_IF_ERROR(H->attr_string(attrs, "data_format", &fmt, &len));
  if (len == 4 && memcmp(fmt, "NHWC", 4) == 0) return NULL;
  if (len == 4 && memcmp(fmt, "NCHW", 4) == 0) {
    *nchw = true;
    return NULL;
  }
  return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                       "data_format must be \"NHWC\" or \"NCHW\", got \"%.*s\"", (int)len, fmt);
}

/* The channel dim of a BiasAdd / BiasAddGrad value, which must be at least 2-D. */
static weft_status_t *bias_channel_dim(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                       bool *nchw, int *cdim) {
  WEFT_RETURN_IF_ERROR(weft_pc_data_format_nchw(ctx, nchw));
  if (x->rank < 2) {
    char s[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                         weft_pc_shape_str(x->rank, x->dims, s, sizeof s));
  }
  *cdim = *nchw ? 1 : x->rank - 1;
  return NULL;
}

weft_status_t *weft_pc_bias_add_prepare(weft_kernel_ctx_t *ctx, weft_pc_bias_add_t *b) {
  memset(b, 0, sizeof *b);
  const weft_tensor_view_t *x = &b->x, *bias = &b->bias;
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, &b->x, &b->bias));
  bool nchw;
  int *cdim = &b->cdim;
  WEFT_RETURN_IF_ERROR(bias_channel_dim(ctx, x, &nchw, cdim));
  weft_pc_shape_pair_t s;
  weft_pc_shape_pair(&s, bias, x);
  if (bias->rank != 1)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Biases must be 1D: %s", s.a);
  if (bias->dims[0] != x->dims[*cdim])
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Must provide as many biases as the %s dimension of the input tensor: "
                         "%s vs. %s",
                         nchw ? "channel" : "last", s.a, s.b);
  return weft_pc_output(ctx, 0, x->dtype, x->rank, x->dims, &b->y);
}

weft_status_t *weft_pc_bias_grad_shape(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *g,
                                       int *cdim, bool *reduced) {
  bool nchw;
  WEFT_RETURN_IF_ERROR(bias_channel_dim(ctx, g, &nchw, cdim));
  for (int d = 0; d < g->rank; d++) reduced[d] = d != *cdim;
  return NULL;
}

weft_status_t *weft_pc_binary_inputs(weft_kernel_ctx_t *ctx, const char *op, weft_tensor_view_t *x,
                                     weft_tensor_view_t *y) {
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, x, y));
  if (x->dtype == y->dtype) return NULL;
  return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s needs operands of one dtype, got %s and %s",
                       op, weft_pc_dtype_name(x->dtype), weft_pc_dtype_name(y->dtype));
}

weft_status_t *weft_pc_addn_first(weft_kernel_ctx_t *ctx, int *n, weft_tensor_view_t *first) {
  *n = H->kernel_num_inputs(ctx);
  if (*n < 1) return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "AddN needs at least one input");
  return weft_pc_input(ctx, 0, first);
}

weft_status_t *weft_pc_addn_input(weft_kernel_ctx_t *ctx, int k, const weft_tensor_view_t *first,
                                  weft_tensor_view_t *v) {
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, k, v));
  if (v->dtype == first->dtype && weft_pc_same_shape(v, first)) return NULL;
  weft_pc_shape_pair_t s;
  weft_pc_shape_pair(&s, first, v);
  return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                       "AddN inputs must have the same shape and dtype: input 0 is %s%s, "
                       "input %d is %s%s",
                       weft_pc_dtype_name(first->dtype), s.a, k, weft_pc_dtype_name(v->dtype),
                       s.b);
}

weft_status_t *weft_pc_select_check(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *c,
                                    const weft_tensor_view_t *t, const weft_tensor_view_t *e,
                                    weft_pc_select_cond_t *kind) {
  weft_pc_shape_pair_t s;
  if (!weft_pc_same_shape(t, e)) {
    weft_pc_shape_pair(&s, t, e);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "'then' and 'else' must have the same size.  but received: %s vs. %s",
                         s.a, s.b);
  }
  if (weft_pc_same_shape(c, t)) {
    *kind = WEFT_PC_SELECT_SAME;
  } else if (c->rank == 0) {
    *kind = WEFT_PC_SELECT_SCALAR;
  } else if (c->rank == 1 && t->rank >= 1 && c->dims[0] == t->dims[0]) {
    *kind = WEFT_PC_SELECT_ROWS;
  } else {
    weft_pc_shape_pair(&s, c, t);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "'condition' must be a scalar, a vector matching the first dimension of "
                         "'then', or have the same shape as 'then': condition %s, then %s",
                         s.a, s.b);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Tile, Pad, Fill */

weft_status_t *weft_pc_tile_prepare(weft_kernel_ctx_t *ctx, weft_pc_tile_t *t) {
  memset(t, 0, sizeof *t);
  const weft_tensor_view_t *x = &t->x;
  int64_t n = 0, out_dims[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(
      weft_pc_tensor_and_ints(ctx, &t->x, "multiples", t->multiples, WEFT_MAX_RANK, &n));
  if (n != x->rank)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "Expected multiples argument to be a vector of length %d but got "
                         "length %lld",
                         x->rank, (long long)n);
  for (int d = 0; d < x->rank; d++) {
    if (t->multiples[d] < 0)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Expected multiples[%d] >= 0, but got %lld",
                           d, (long long)t->multiples[d]);
    out_dims[d] = x->dims[d] * t->multiples[d];
  }
  return weft_pc_output(ctx, 0, x->dtype, x->rank, out_dims, &t->y);
}

weft_status_t *weft_pc_pad_prepare(weft_kernel_ctx_t *ctx, weft_pc_pad_t *p) {
  memset(p, 0, sizeof *p);
  const weft_tensor_view_t *x = &p->x;
  weft_tensor_view_t pv;
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, &p->x, &pv));
  int64_t pads[2 * WEFT_MAX_RANK], n = 0, out_dims[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(weft_pc_read_indices(ctx, &pv, "paddings", pads, 2 * WEFT_MAX_RANK, &n));
  if (pv.rank != 2 || pv.dims[0] != x->rank || pv.dims[1] != 2) {
    weft_pc_shape_pair_t s;
    weft_pc_shape_pair(&s, &pv, x);
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "The first dimension of paddings must be the rank of inputs and the "
                         "second 2: paddings %s, input %s", s.a, s.b);
  }
  for (int d = 0; d < x->rank; d++) {
    if (pads[2 * d] < 0 || pads[2 * d + 1] < 0)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "Paddings must be non-negative: %lld %lld",
                           (long long)pads[2 * d], (long long)pads[2 * d + 1]);
    p->before[d] = pads[2 * d];
    out_dims[d] = x->dims[d] + pads[2 * d] + pads[2 * d + 1];
  }
  weft_pc_contiguous_strides(x->rank, out_dims, p->out_strides);
  weft_pc_contiguous_strides(x->rank, x->dims, p->in_strides);
  for (int d = 0; d < x->rank; d++) p->offset += p->before[d] * p->out_strides[d];
  return weft_pc_output(ctx, 0, x->dtype, x->rank, out_dims, &p->y);
}

weft_status_t *weft_pc_fill_prepare(weft_kernel_ctx_t *ctx, weft_pc_fill_t *f) {
  memset(f, 0, sizeof *f);
  weft_tensor_view_t dv;
  WEFT_RETURN_IF_ERROR(two_inputs(ctx, &dv, &f->value));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  WEFT_RETURN_IF_ERROR(weft_pc_read_indices(ctx, &dv, "dims", dims, WEFT_MAX_RANK, &n));
  if (f->value.num_elements != 1) {
    char s[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "value must be a scalar, got shape %s",
                         weft_pc_shape_str(f->value.rank, f->value.dims, s, sizeof s));
  }
  for (int64_t d = 0; d < n; d++)
    if (dims[d] < 0)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "dims[%lld] = %lld must be non-negative",
                           (long long)d, (long long)dims[d]);
  return weft_pc_output(ctx, 0, f->value.dtype, (int)n, dims, &f->y);
}

/* ---------------------------------------------------------------------------------------------
 * Cross-entropy losses */

weft_status_t *weft_pc_xent_prepare(weft_kernel_ctx_t *ctx, weft_pc_xent_t *xe) {
  const weft_tensor_view_t *x = &xe->x, *l = &xe->labels;
  weft_status_t *st = weft_pc_input(ctx, 0, &xe->x);
  if (st == NULL) st = weft_pc_input(ctx, 1, &xe->labels);
  if (st != NULL) return st;
  char s0[WEFT_PC_SHAPE_STR_LEN], s1[WEFT_PC_SHAPE_STR_LEN];
  /* Rank-1 inputs are one row; rank-2 rows broadcast when one side has a single row. */
  int64_t xr = x->rank == 2 ? x->dims[0] : 1, lr = l->rank == 2 ? l->dims[0] : 1;
  int64_t xn = x->rank >= 1 ? x->dims[x->rank - 1] : -1;
  int64_t ln = l->rank >= 1 ? l->dims[l->rank - 1] : -2;
  if (x->rank < 1 || x->rank > 2 || l->rank < 1 || l->rank > 2 || xn != ln ||
      (xr != lr && xr != 1 && lr != 1))
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "logits and labels must be broadcastable: logits_size=%s "
                         "labels_size=%s",
                         weft_pc_shape_str(x->rank, x->dims, s0, sizeof s0),
                         weft_pc_shape_str(l->rank, l->dims, s1, sizeof s1));
  xe->rows = xr > lr ? xr : lr;
  xe->n = xn;
  xe->x_rstride = xr == 1 ? 0 : xn;
  xe->l_rstride = lr == 1 ? 0 : xn;
  int64_t dims[2] = {xe->rows, xn};
  st = weft_pc_output(ctx, 0, x->dtype, 1, dims, &xe->loss);
  if (st == NULL) st = weft_pc_output(ctx, 1, x->dtype, 2, dims, &xe->backprop);
  return st;
}

weft_status_t *weft_pc_sparse_xent_prepare(weft_kernel_ctx_t *ctx, weft_pc_xent_t *xe) {
  const weft_tensor_view_t *x = &xe->x, *l = &xe->labels;
  weft_status_t *st = weft_pc_input(ctx, 0, &xe->x);
  if (st == NULL) st = weft_pc_input(ctx, 1, &xe->labels);
  if (st != NULL) return st;
  char s0[WEFT_PC_SHAPE_STR_LEN], s1[WEFT_PC_SHAPE_STR_LEN];
  if (x->rank != 2)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "logits must be 2-D, but got shape %s",
                         weft_pc_shape_str(x->rank, x->dims, s0, sizeof s0));
  if (l->rank != 1 || l->dims[0] != x->dims[0])
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "logits and labels must have the same first dimension, got logits "
                         "shape %s and labels shape %s",
                         weft_pc_shape_str(x->rank, x->dims, s0, sizeof s0),
                         weft_pc_shape_str(l->rank, l->dims, s1, sizeof s1));
  if (l->dtype != WEFT_DT_INT32 && l->dtype != WEFT_DT_INT64)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "labels must be int32 or int64, got %s",
                         weft_pc_dtype_name(l->dtype));
  xe->rows = x->dims[0];
  xe->n = x->dims[1];
  xe->x_rstride = xe->n;
  xe->l_rstride = 0;
  for (int64_t r = 0; r < xe->rows; r++) {
    int64_t v = weft_pc_index_at(l, r);
    if (v < 0 || v >= xe->n)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Received a label value of %lld which is outside the valid range "
                           "of [0, %lld).  Label index: %lld",
                           (long long)v, (long long)xe->n, (long long)r);
  }
  st = weft_pc_output(ctx, 0, x->dtype, 1, x->dims, &xe->loss);
  if (st == NULL) st = weft_pc_output(ctx, 1, x->dtype, 2, x->dims, &xe->backprop);
  return st;
}
