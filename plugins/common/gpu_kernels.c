/* gpu_kernels.c: the host side of the kernels the GPU backends share (gpu_kernels.h): elementwise
 * unary and binary ops with TensorFlow broadcasting, BiasAdd, AddN, Select, Cast, Tile, Pad, the
 * reductions over any axes, BiasAddGrad, L2Loss, ArgMax / ArgMin, Softmax, MatMul and
 * BatchMatMulV2. Each checks its arguments and shapes (the checks every plugin shares, so the
 * errors are the CPU kernels'), plans the launch and calls the backend's table for the device work.
 *
 * A reduction first collapses the input into runs of kept (K) and reduced (R) dims, size-1 dims
 * dropped (weft_pc_reduce_groups). [R] and [K,R] reduce rows; [R,K] and [K,R,K] reduce along the
 * columns; any other pattern, and column reductions with too few outputs to fill the device,
 * are first regrouped to [K..., R...] by the backend's gather (weft_pc_reduce_plan). */
#include "gpu_kernels.h"

#include <string.h>

#define H weft_pc_host
#define L weft_pc_launch

const weft_pc_launch_t *weft_pc_launch;

static weft_status_t *check(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v, const char *what) {
  return L->check != NULL ? L->check(ctx, v, what) : NULL;
}

static weft_status_t *no_kernel(weft_kernel_ctx_t *ctx, const char *op, weft_dtype_t dtype) {
  return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "%s has no %s kernel for %s", op, L->device,
                       weft_pc_dtype_name(dtype));
}

weft_status_t *weft_pc_device_properties(const weft_device_props_t *p, const char *device_type,
                                         int ordinal, weft_device_props_t *out) {
  if (p == NULL)
    return H->status_new(WEFT_INVALID_ARGUMENT, "%s: no device with ordinal %d", device_type,
                         ordinal);
  size_t size = out->struct_size;
  size_t n = size < sizeof *out ? size : sizeof *out;
  memcpy(out, p, n);
  out->struct_size = size;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise */

weft_status_t *weft_pc_k_unary(weft_kernel_ctx_t *ctx, void *state) {
  const weft_pc_unary_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  if (L->dt(x.dtype) < 0) return no_kernel(ctx, op->name, x.dtype);
  bool out_bool = op->code >= L->un_first_bool_out;
  WEFT_RETURN_IF_ERROR(
      weft_pc_output(ctx, 0, out_bool ? WEFT_DT_BOOL : x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &x, op->name));
  double alpha = op->param != NULL ? weft_pc_attr_float(ctx, op->param, op->param_default) : 0.0;
  return L->unary(ctx, op->code, alpha, &x, &y, op->name);
}

weft_status_t *weft_pc_k_binary(weft_kernel_ctx_t *ctx, void *state) {
  const weft_pc_binary_op_t *op = state;
  weft_tensor_view_t x, y, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, op->name, &x, &y));
  bool out_bool = op->code >= L->bin_first_bool_out;
  weft_pc_bcast_t bc;
  const weft_tensor_view_t *ins[2] = {&x, &y};
  weft_status_t *bs = weft_pc_bcast_views(ctx, &bc, 2, ins);
  if (bs != NULL) {
    /* Equal/NotEqual with incompatible_shape_error = false answer "not equal" as a scalar. */
    bool equality = op->code == L->bin_eq || op->code == L->bin_ne;
    if (!equality || weft_pc_attr_bool(ctx, "incompatible_shape_error", true)) return bs;
    H->status_free(bs);
    WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &z));
    return L->fill_bool(ctx, z.data, op->code == L->bin_ne);
  }
  WEFT_RETURN_IF_ERROR(
      weft_pc_output(ctx, 0, out_bool ? WEFT_DT_BOOL : x.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &x, op->name));
  WEFT_RETURN_IF_ERROR(check(ctx, &y, op->name));
  double alpha = op->param != NULL ? weft_pc_attr_float(ctx, op->param, op->param_default) : 0.0;
  return L->binary(ctx, op->code, alpha, x.dtype, &bc, x.data, y.data, z.data, op->name);
}

/* BiasAdd: a broadcast add with the bias viewed as [C] (NHWC) or [C, 1, ..., 1] (NCHW). */
weft_status_t *weft_pc_k_bias_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_bias_add_t ba;
  WEFT_RETURN_IF_ERROR(weft_pc_bias_add_prepare(ctx, &ba));
  const weft_tensor_view_t *x = &ba.x;
  if (x->num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, x, "BiasAdd value"));
  int64_t bdims[WEFT_MAX_RANK];
  int brank = x->rank - ba.cdim;
  bdims[0] = ba.bias.dims[0];
  for (int d = 1; d < brank; d++) bdims[d] = 1;
  const int ranks[2] = {x->rank, brank};
  const int64_t *dims[2] = {x->dims, bdims};
  weft_pc_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_init(ctx, &bc, 2, ranks, dims));
  return L->binary(ctx, L->bin_add, 0.0, x->dtype, &bc, x->data, ba.bias.data, ba.y.data,
                   "BiasAdd");
}

/* AddN: a chain of adds, the first into the output, the rest in place. */
weft_status_t *weft_pc_k_addn(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = 0;
  weft_tensor_view_t first, z;
  WEFT_RETURN_IF_ERROR(weft_pc_addn_first(ctx, &n, &first));
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft_pc_addn_input(ctx, k, &first, &v));
  }
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, first.dtype, first.rank, first.dims, &z));
  if (first.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &first, "AddN input"));
  /* Operands of one shape: one dense run (rank 1, unit strides). */
  weft_pc_bcast_t bc;
  const weft_tensor_view_t *ins[2] = {&first, &first};
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_views(ctx, &bc, 2, ins));
  if (n == 1) return L->copy(ctx, z.data, first.data, z.nbytes);
  for (int k = 1; k < n; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, k, &v));
    WEFT_RETURN_IF_ERROR(L->binary(ctx, L->bin_add, 0.0, first.dtype, &bc,
                                   k == 1 ? first.data : z.data, v.data, z.data, "AddN"));
  }
  return NULL;
}

weft_status_t *weft_pc_k_select(weft_kernel_ctx_t *ctx, void *state) {
  bool v2 = state != NULL;
  weft_tensor_view_t in[3], z; /* condition, then, else */
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  const weft_tensor_view_t *c = &in[0], *t = &in[1], *e = &in[2];
  weft_tensor_view_t cv = *c; /* the condition as broadcasting sees it */
  if (!v2) {
    /* Select: t and e alike; the condition is their shape, a scalar, or a vector along dim 0,
     * which broadcasts as [n, 1, ..., 1]. */
    weft_pc_select_cond_t kind;
    WEFT_RETURN_IF_ERROR(weft_pc_select_check(ctx, c, t, e, &kind));
    if (kind == WEFT_PC_SELECT_ROWS) {
      cv.rank = t->rank;
      for (int d = 1; d < cv.rank; d++) cv.dims[d] = 1;
    }
  }
  const weft_tensor_view_t *ins[3] = {&cv, t, e};
  weft_pc_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft_pc_bcast_views(ctx, &bc, 3, ins));
  if (!v2) {
    bc.out_rank = t->rank; /* a scalar condition never changes the output shape */
    memcpy(bc.out_dims, t->dims, sizeof bc.out_dims);
  }
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, t->dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &z, "Select output"));
  return L->select(ctx, &bc, t->dtype, c->data, t->data, e->data, z.data,
                   v2 ? "SelectV2" : "Select");
}

weft_status_t *weft_pc_k_cast(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  weft_dtype_t dst = x.dtype;
  WEFT_RETURN_IF_ERROR(H->attr_type(H->kernel_attrs(ctx), "DstT", &dst));
  if (x.dtype == dst) return H->kernel_forward_input(ctx, 0, 0, x.rank, x.dims);
  if (L->dt(x.dtype) < 0 || L->dt(dst) < 0)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "Cast %s to %s is not supported on %s",
                         weft_pc_dtype_name(x.dtype), weft_pc_dtype_name(dst), L->device);
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, dst, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &x, "Cast input"));
  return L->cast(ctx, &x, &y);
}

/* ---------------------------------------------------------------------------------------------
 * Tile, Pad */

weft_status_t *weft_pc_k_tile(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_tile_t t;
  WEFT_RETURN_IF_ERROR(weft_pc_tile_prepare(ctx, &t));
  const weft_tensor_view_t *x = &t.x, *y = &t.y;
  if (y->num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, y, "Tile output"));
  /* Output dim d of size m * s is the row-major pair (m, s) reading the input at (0, stride). */
  int64_t in_strides[WEFT_MAX_RANK], dims[2 * WEFT_MAX_RANK], strides[2 * WEFT_MAX_RANK];
  weft_pc_contiguous_strides(x->rank, x->dims, in_strides);
  for (int d = 0; d < x->rank; d++) {
    dims[2 * d] = t.multiples[d];
    strides[2 * d] = 0;
    dims[2 * d + 1] = x->dims[d];
    strides[2 * d + 1] = in_strides[d];
  }
  return L->gather(ctx, y->data, x->data, x->dtype, 2 * x->rank, dims, strides);
}

/* Pad: zeros, then the input copied inside. */
weft_status_t *weft_pc_k_pad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_pad_t p;
  WEFT_RETURN_IF_ERROR(weft_pc_pad_prepare(ctx, &p));
  const weft_tensor_view_t *x = &p.x, *y = &p.y;
  if (y->num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, y, "Pad output"));
  WEFT_RETURN_IF_ERROR(L->zero(ctx, y));
  if (x->num_elements == 0) return NULL;
  return L->copy_strided(ctx, y->data, p.offset, p.out_strides, x->data, 0, p.in_strides, x->dtype,
                         x->rank, x->dims);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

static weft_status_t *reduce_into(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                  const weft_tensor_view_t *x, const bool *reduced,
                                  const weft_tensor_view_t *y, int64_t count) {
  if (y->num_elements == 0) return NULL;
  if (L->dt(x->dtype) < 0) return no_kernel(ctx, op->name, x->dtype);
  if (x->num_elements == 0) return L->reduce_identity(ctx, op, y);
  WEFT_RETURN_IF_ERROR(check(ctx, x, op->name));
  weft_pc_reduce_groups_t g;
  weft_pc_reduce_groups(x, reduced, &g);
  if (!g.any_reduced) return L->reduce_single(ctx, op, x, y, count);
  weft_pc_reduce_plan_t p;
  weft_pc_reduce_plan(&g, &p);
  if (p.kind == WEFT_PC_REDUCE_ROWS)
    return L->reduce_rows(ctx, op, x->dtype, x->data, y->data, p.rows, p.len, count);
  if (p.kind == WEFT_PC_REDUCE_COLS)
    return L->reduce_cols(ctx, op, x->dtype, x->data, y->data, p.outer, p.mid, p.inner, count);
  void *tmp = NULL;
  WEFT_RETURN_IF_ERROR(L->scratch(ctx, x->nbytes, &tmp));
  WEFT_RETURN_IF_ERROR(L->gather(ctx, tmp, x->data, x->dtype, p.rank, p.sizes, p.strides));
  return L->reduce_rows(ctx, op, x->dtype, tmp, y->data, p.rows, p.len, count);
}

weft_status_t *weft_pc_k_reduce(weft_kernel_ctx_t *ctx, void *state) {
  const weft_pc_reduce_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  weft_pc_reduction_t red;
  WEFT_RETURN_IF_ERROR(weft_pc_reduction_prepare(ctx, &x, &red, &y));
  return reduce_into(ctx, op, &x, red.reduced, &y, red.count);
}

weft_status_t *weft_pc_k_bias_add_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &g));
  int cdim = 0;
  bool reduced[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(weft_pc_bias_grad_shape(ctx, &g, &cdim, reduced));
  int64_t count = 1;
  for (int d = 0; d < g.rank; d++)
    if (reduced[d]) count *= g.dims[d];
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, g.dtype, 1, &g.dims[cdim], &y));
  return reduce_into(ctx, L->sum_op, &g, reduced, &y, count);
}

weft_status_t *weft_pc_k_l2loss(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, x.dtype, 0, NULL, &y));
  if (x.num_elements == 0) return L->reduce_identity(ctx, L->l2_op, &y);
  WEFT_RETURN_IF_ERROR(check(ctx, &x, "L2Loss input"));
  return L->reduce_rows(ctx, L->l2_op, x.dtype, x.data, y.data, 1, x.num_elements, x.num_elements);
}

/* ArgMax / ArgMin over one axis, x viewed as [outer, n, inner]; int32 or int64 indices. */
weft_status_t *weft_pc_k_arg(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  weft_pc_arg_t a;
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft_pc_arg_plan(ctx, &a));
  if (a.out_dtype != WEFT_DT_INT32 && a.out_dtype != WEFT_DT_INT64)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED,
                         "ArgMax/ArgMin on %s write int32 or int64 indices, not %s", L->device,
                         weft_pc_dtype_name(a.out_dtype));
  WEFT_RETURN_IF_ERROR(weft_pc_arg_shape(ctx, &a));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, a.out_dtype, a.out_rank, a.out_dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &a.x, is_max ? "ArgMax input" : "ArgMin input"));
  return L->arg(ctx, is_max, &a, &y);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax, MatMul, BatchMatMulV2 */

weft_status_t *weft_pc_k_softmax(weft_kernel_ctx_t *ctx, void *state) {
  bool log_softmax = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  if (x.rank < 1)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "logits must have >= 1 dimension, got a scalar");
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(check(ctx, &x, "logits"));
  int64_t cols = x.dims[x.rank - 1], rows = x.num_elements / cols;
  return L->softmax(ctx, &x, &y, rows, cols, log_softmax);
}

weft_status_t *weft_pc_k_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_matmul_t mm;
  WEFT_RETURN_IF_ERROR(weft_pc_matmul_prepare(ctx, &mm));
  const weft_tensor_view_t *a = &mm.a, *b = &mm.b, *c = &mm.c;
  if (c->num_elements == 0) return NULL;
  if (mm.k == 0) return L->zero(ctx, c);
  WEFT_RETURN_IF_ERROR(check(ctx, a, "MatMul a"));
  WEFT_RETURN_IF_ERROR(check(ctx, b, "MatMul b"));
  WEFT_RETURN_IF_ERROR(check(ctx, c, "MatMul product"));
  return L->matmul(ctx, a->dtype, a->data, b->data, c->data, mm.m, mm.n, mm.k, mm.ta, mm.tb, 1, 0,
                   0, 0, 0, 0);
}

/* BatchMatMulV2: the batch dims broadcast (collapsed); one launch per run of the innermost
 * collapsed batch dim, whose operands step by a fixed stride (0 when broadcast). */
weft_status_t *weft_pc_k_batch_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_batch_matmul_t bm;
  WEFT_RETURN_IF_ERROR(weft_pc_batch_matmul_prepare(ctx, false, &bm));
  const weft_tensor_view_t *x = &bm.x, *y = &bm.y, *z = &bm.z;
  const weft_pc_bcast_t *bc = &bm.bc;
  int64_t m = bm.m, n = bm.n, k = bm.k;
  if (z->num_elements == 0) return NULL;
  if (k == 0) return L->zero(ctx, z);
  WEFT_RETURN_IF_ERROR(check(ctx, x, "BatchMatMul x"));
  WEFT_RETURN_IF_ERROR(check(ctx, y, "BatchMatMul y"));
  WEFT_RETURN_IF_ERROR(check(ctx, z, "BatchMatMul output"));
  int r = bc->rank - 1;
  int64_t inner = weft_pc_bcast_inner(bc), runs = weft_pc_bcast_rows(bc);
  int64_t xm = x->dims[x->rank - 2] * x->dims[x->rank - 1];
  int64_t ym = y->dims[y->rank - 2] * y->dims[y->rank - 1];
  for (int64_t run = 0; run < runs; run++) {
    /* Matrix offsets of this run's first batch element. */
    int64_t off[WEFT_PC_BCAST_MAX_IN];
    weft_pc_bcast_row_offsets(bc, run, off);
    WEFT_RETURN_IF_ERROR(L->matmul(ctx, x->dtype, x->data, y->data, z->data, m, n, k, bm.adj_x,
                                   bm.adj_y, inner, bc->strides[0][r] * xm, bc->strides[1][r] * ym,
                                   off[0] * xm, off[1] * ym, run * inner * m * n));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft_pc_register_unary_ops(const weft_registrar_t *reg,
                                          weft_pc_register_typed_fn register_typed,
                                          const weft_pc_unary_op_t *ops, size_t n_ops,
                                          const weft_dtype_t *dtypes, size_t n_float, size_t n_int,
                                          int untyped) {
  for (size_t i = 0; i < n_ops; i++) {
    const weft_pc_unary_op_t *op = &ops[i];
    bool typed = op->code != untyped;
    WEFT_RETURN_IF_ERROR(register_typed(reg, op->name, weft_pc_k_unary, NULL, (void *)op,
                                        typed ? dtypes : NULL, op->with_int ? n_int : n_float));
  }
  return NULL;
}

weft_status_t *weft_pc_register_binary_ops(const weft_registrar_t *reg,
                                           weft_pc_register_typed_fn register_typed,
                                           const weft_pc_binary_op_t *ops, size_t n_ops) {
  for (size_t i = 0; i < n_ops; i++)
    WEFT_RETURN_IF_ERROR(register_typed(reg, ops[i].name, weft_pc_k_binary, NULL, (void *)&ops[i],
                                        ops[i].dtypes, ops[i].n_dtypes));
  return NULL;
}

weft_status_t *weft_pc_register_reduce_ops(const weft_registrar_t *reg,
                                           weft_pc_register_typed_fn register_typed,
                                           const weft_pc_reduce_op_t *ops, size_t n_ops) {
  static const char *const hm_axes[] = {"reduction_indices", NULL};
  for (size_t i = 0; i < n_ops; i++)
    WEFT_RETURN_IF_ERROR(register_typed(reg, ops[i].name, weft_pc_k_reduce, hm_axes,
                                        (void *)&ops[i], ops[i].dtypes, ops[i].n_dtypes));
  return NULL;
}
