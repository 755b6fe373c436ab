/* vk_nn.c: the Vulkan kernels that combine many elements per output: MatMul and BatchMatMulV2
 * (matmul.comp, tiled through shared memory), Softmax / LogSoftmax (softmax.comp, a workgroup
 * per row), the reductions Sum, Mean, Max, Min, Prod, All, Any over any axes (reduce_rows.comp
 * and reduce_cols.comp), BiasAddGrad (a Sum), L2Loss, and ArgMax / ArgMin.
 *
 * A reduction first collapses the input into runs of kept (K) and reduced (R) dims, size-1 dims
 * dropped. [R] and [K,R] with long rows reduce a row per workgroup; [R,K], [K,R,K] and short rows
 * reduce one output per invocation; any other pattern, and column reductions with too few
 * outputs to keep the device busy, are first regrouped to [K..., R...] by the gather shader. */
#include <math.h>

#include "vk_internal.h"

/* ---------------------------------------------------------------------------------------------
 * MatMul */

typedef struct matmul_push {
  uint32_t m, n, k, ta, tb, batch_a, batch_b, batch_c, off_a, off_b, off_c;
} matmul_push_t;

#define MM_TILE 64u

/* Records `batches` products C_i = op(A_i) op(B_i): A_i starts at element off_a + i * sa, B_i at
 * off_b + i * sb, C_i at off_c + i * m * n. */
static weft_status_t *run_matmul(weft_kernel_ctx_t *ctx, void *a, void *b, void *c, int64_t m,
                                 int64_t n, int64_t k, bool ta, bool tb, int64_t batches,
                                 int64_t sa, int64_t sb, int64_t off_a, int64_t off_b,
                                 int64_t off_c) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  int64_t gx = (n + MM_TILE - 1) / MM_TILE, gy = (m + MM_TILE - 1) / MM_TILE;
  if (gx > 65535 || gy > 65535 || batches > 65535)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "matrix product of %lld x %lld (%lld batches) exceeds one Vulkan "
                          "dispatch",
                          (long long)m, (long long)n, (long long)batches);
  matmul_push_t p = {(uint32_t)m,      (uint32_t)n,     (uint32_t)k,     ta,
                     tb,               (uint32_t)sa,    (uint32_t)sb,    (uint32_t)(m * n),
                     (uint32_t)off_a,  (uint32_t)off_b, (uint32_t)off_c};
  void *bufs[3] = {a, b, c};
  return weft__vk_dispatch(dev, VK_SH_MATMUL, &p, sizeof p, bufs, 3, (uint32_t)gx, (uint32_t)gy,
                           (uint32_t)batches);
}

static weft_status_t *k_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_matmul_t mm;
  WEFT_RETURN_IF_ERROR(weft_pc_matmul_prepare(ctx, &mm));
  const weft_tensor_view_t *a = &mm.a, *b = &mm.b, *c = &mm.c;
  if (c->num_elements == 0) return NULL;
  if (mm.k == 0) return weft__vk_fill(weft__vk_ctx_device(ctx), c->data, c->nbytes, 0u);
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, a, "MatMul a"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, b, "MatMul b"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, c, "MatMul product"));
  return run_matmul(ctx, a->data, b->data, c->data, mm.m, mm.n, mm.k, mm.ta, mm.tb, 1, 0, 0, 0, 0,
                    0);
}

/* BatchMatMulV2: the batch dims broadcast (collapsed); one dispatch per run of the innermost
 * collapsed batch dim, its matrices a z layer each. */
static weft_status_t *k_batch_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_batch_matmul_t bm;
  WEFT_RETURN_IF_ERROR(weft_pc_batch_matmul_prepare(ctx, false, &bm));
  const weft_tensor_view_t *x = &bm.x, *y = &bm.y, *z = &bm.z;
  const weft_vk_bcast_t *bc = &bm.bc;
  int64_t m = bm.m, n = bm.n, k = bm.k;
  if (z->num_elements == 0) return NULL;
  if (k == 0) return weft__vk_fill(weft__vk_ctx_device(ctx), z->data, z->nbytes, 0u);
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, x, "BatchMatMul x"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, y, "BatchMatMul y"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, z, "BatchMatMul output"));
  int r = bc->rank - 1;
  int64_t inner = weft_pc_bcast_inner(bc), runs = weft_pc_bcast_rows(bc);
  int64_t xm = x->dims[x->rank - 2] * x->dims[x->rank - 1];
  int64_t ym = y->dims[y->rank - 2] * y->dims[y->rank - 1];
  for (int64_t run = 0; run < runs; run++) {
    /* Matrix offsets of this run's first batch element. */
    int64_t off[WEFT_PC_BCAST_MAX_IN];
    weft_pc_bcast_row_offsets(bc, run, off);
    WEFT_RETURN_IF_ERROR(run_matmul(ctx, x->data, y->data, z->data, m, n, k, bm.adj_x, bm.adj_y,
                                    inner, bc->strides[0][r] * xm, bc->strides[1][r] * ym,
                                    off[0] * xm, off[1] * ym, run * inner * m * n));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Softmax */

typedef struct softmax_push {
  uint32_t rows, cols, log_softmax;
} softmax_push_t;

static weft_status_t *k_softmax(weft_kernel_ctx_t *ctx, void *state) {
  bool log_softmax = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  if (x.rank < 1)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "logits must have >= 1 dimension, got a scalar");
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, "logits"));
  int64_t cols = x.dims[x.rank - 1], rows = x.num_elements / cols;
  softmax_push_t p = {(uint32_t)rows, (uint32_t)cols, log_softmax};
  uint32_t groups = rows > weft__vk_max_groups(weft__vk_ctx_device(ctx))
                        ? weft__vk_max_groups(weft__vk_ctx_device(ctx))
                        : (uint32_t)rows;
  void *bufs[2] = {x.data, y.data};
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_SOFTMAX, &p, sizeof p, bufs, 2, groups,
                           1, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

typedef struct red_op {
  const char *name;
  uint32_t code;
  const weft_dtype_t *dtypes;
  size_t n_dtypes;
} red_op_t;

typedef struct rows_push {
  uint32_t rows, len, op, dtype;
  float count;
} rows_push_t;

typedef struct cols_push {
  uint32_t outer, mid, inner, op, dtype;
  float count;
  uint32_t out64;
} cols_push_t;

/* Below this row length a row is one invocation's loop rather than a workgroup's. */
#define ROW_MIN_LEN 64

static weft_status_t *reduce_rows(weft_kernel_ctx_t *ctx, const red_op_t *op, weft_dtype_t dtype,
                                  void *x, void *y, int64_t rows, int64_t len, int64_t count) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  if (len < ROW_MIN_LEN || dtype == WEFT_DT_BOOL) {
    cols_push_t p = {(uint32_t)rows, (uint32_t)len, 1, op->code, (uint32_t)weft__vk_dt(dtype),
                     (float)count, 0};
    void *bufs[2] = {x, y};
    uint64_t items = dtype == WEFT_DT_BOOL ? ((uint64_t)rows + 3) / 4 : (uint64_t)rows;
    return weft__vk_dispatch_op(dev, VK_SH_REDUCE_COLS, p.op, p.dtype, &p, sizeof p, bufs, 2,
                                weft__vk_groups(ctx, items), 1, 1);
  }
  rows_push_t p = {(uint32_t)rows, (uint32_t)len, op->code, (uint32_t)weft__vk_dt(dtype),
                   (float)count};
  uint32_t max = weft__vk_max_groups(dev);
  uint32_t groups = rows > (int64_t)max ? max : (uint32_t)rows;
  void *bufs[2] = {x, y};
  return weft__vk_dispatch_op(dev, VK_SH_REDUCE_ROWS, p.op, p.dtype, &p, sizeof p, bufs, 2,
                              groups, 1, 1);
}

static weft_status_t *reduce_cols(weft_kernel_ctx_t *ctx, const red_op_t *op, weft_dtype_t dtype,
                                  void *x, void *y, int64_t outer, int64_t mid, int64_t inner,
                                  int64_t count) {
  cols_push_t p = {(uint32_t)outer, (uint32_t)mid, (uint32_t)inner, op->code,
                   (uint32_t)weft__vk_dt(dtype), (float)count, 0};
  void *bufs[2] = {x, y};
  uint64_t outs = (uint64_t)outer * (uint64_t)inner;
  uint64_t items = dtype == WEFT_DT_BOOL ? (outs + 3) / 4 : outs;
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_REDUCE_COLS, p.op, p.dtype,
                              &p, sizeof p, bufs, 2, weft__vk_groups(ctx, items), 1, 1);
}

/* The identity of a reduction, written to every output when nothing is reduced into it. */
static uint32_t identity_pattern(const red_op_t *op, weft_dtype_t dtype) {
  union {
    float f;
    uint32_t u;
  } v;
  bool f = dtype == WEFT_DT_FLOAT;
  switch (op->code) {
    case VK_RED_PROD: v.f = 1.0f; return f ? v.u : 1u;
    case VK_RED_MAX: v.f = -INFINITY; return f ? v.u : 0x80000000u;
    case VK_RED_MIN: v.f = INFINITY; return f ? v.u : 0x7fffffffu;
    case VK_RED_MEAN: v.f = NAN; return f ? v.u : 0u;
    case VK_RED_ALL: return 0x01010101u;
    default: return 0u; /* Sum, Any */
  }
}

static weft_status_t *reduce_into(weft_kernel_ctx_t *ctx, const red_op_t *op,
                                  const weft_tensor_view_t *x, const bool *reduced,
                                  const weft_tensor_view_t *y, int64_t count) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  if (y->num_elements == 0) return NULL;
  if (x->num_elements == 0) return weft__vk_fill(dev, y->data, y->nbytes, identity_pattern(op, x->dtype));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, x, op->name));
  weft_pc_reduce_groups_t g;
  weft_pc_reduce_groups(x, reduced, &g);
  if (!g.any_reduced) {
    /* Every output folds in exactly one element: the reduction of one element is itself. */
    return weft__vk_copy_device_to_device(dev, y->data, x->data, x->nbytes);
  }
  weft_pc_reduce_plan_t p;
  weft_pc_reduce_plan(&g, &p);
  if (p.kind == WEFT_PC_REDUCE_ROWS)
    return reduce_rows(ctx, op, x->dtype, x->data, y->data, p.rows, p.len, count);
  if (p.kind == WEFT_PC_REDUCE_COLS)
    return reduce_cols(ctx, op, x->dtype, x->data, y->data, p.outer, p.mid, p.inner, count);
  void *tmp = NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_scratch(ctx, x->nbytes, &tmp));
  WEFT_RETURN_IF_ERROR(weft__vk_gather(ctx, tmp, x->data, x->dtype, p.rank, p.sizes, p.strides));
  return reduce_rows(ctx, op, x->dtype, tmp, y->data, p.rows, p.len, count);
}

static weft_status_t *k_reduce(weft_kernel_ctx_t *ctx, void *state) {
  const red_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  weft_pc_reduction_t red;
  WEFT_RETURN_IF_ERROR(weft_pc_reduction_prepare(ctx, &x, &red, &y));
  return reduce_into(ctx, op, &x, red.reduced, &y, red.count);
}

static const red_op_t sum_op = {"Sum", VK_RED_SUM, NULL, 0};
static const red_op_t l2_op = {"L2Loss", VK_RED_L2, NULL, 0};

static weft_status_t *k_l2loss(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, 0, NULL, &y));
  if (x.num_elements == 0) return weft__vk_fill(weft__vk_ctx_device(ctx), y.data, y.nbytes, 0u);
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, "L2Loss input"));
  return reduce_rows(ctx, &l2_op, x.dtype, x.data, y.data, 1, x.num_elements, x.num_elements);
}

/* ArgMax / ArgMin over one axis, x viewed as [outer, n, inner]; int32 or int64 indices. */
static weft_status_t *k_arg(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  weft_pc_arg_t a;
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft_pc_arg_plan(ctx, &a));
  const weft_tensor_view_t *x = &a.x;
  weft_dtype_t out_dtype = a.out_dtype;
  if (out_dtype != WEFT_DT_INT32 && out_dtype != WEFT_DT_INT64)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "ArgMax/ArgMin on Vulkan write int32 or int64 indices, not %s",
                          weft__vk_dtype_name(out_dtype));
  WEFT_RETURN_IF_ERROR(weft_pc_arg_shape(ctx, &a));
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, out_dtype, a.out_rank, a.out_dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, x, is_max ? "ArgMax input" : "ArgMin input"));
  cols_push_t p = {(uint32_t)a.outer, (uint32_t)a.n, (uint32_t)a.inner,
                   is_max ? VK_RED_ARGMAX : VK_RED_ARGMIN, (uint32_t)weft__vk_dt(x->dtype), 0.0f,
                   out_dtype == WEFT_DT_INT64};
  void *bufs[2] = {x->data, y.data};
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_REDUCE_COLS, p.op, p.dtype,
                              &p, sizeof p, bufs, 2,
                              weft__vk_groups(ctx, (uint64_t)(a.outer * a.inner)), 1, 1);
}

static weft_status_t *k_bias_add_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &g));
  int cdim;
  bool reduced[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(weft_pc_bias_grad_shape(ctx, &g, &cdim, reduced));
  int64_t count = 1;
  for (int d = 0; d < g.rank; d++)
    if (reduced[d]) count *= g.dims[d];
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, g.dtype, 1, &g.dims[cdim], &y));
  return reduce_into(ctx, &sum_op, &g, reduced, &y, count);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int log_marker, max_marker;
static const weft_dtype_t types_index[] = {WEFT_DT_INT32, WEFT_DT_INT64};

static const red_op_t red_ops[] = {
    {"Sum", VK_RED_SUM, weft__vk_types_fi, 2},   {"Mean", VK_RED_MEAN, weft__vk_types_f, 1},
    {"Max", VK_RED_MAX, weft__vk_types_fi, 2},   {"Min", VK_RED_MIN, weft__vk_types_fi, 2},
    {"Prod", VK_RED_PROD, weft__vk_types_fi, 2}, {"All", VK_RED_ALL, NULL, 0},
    {"Any", VK_RED_ANY, NULL, 0},
};

weft_status_t *weft__vk_register_nn(const weft_registrar_t *reg) {
  static const char *const hm_axes[] = {"reduction_indices", NULL};
  static const char *const hm_dim[] = {"dimension", NULL};
  const weft_dtype_t *f = weft__vk_types_f, *fi = weft__vk_types_fi;
  const weft_vk_kernel_spec_t specs[] = {
      {.op = "MatMul", .compute = k_matmul, .type_attr = "T", .dtypes = f, .n_dtypes = 1},
      {.op = "BatchMatMulV2", .compute = k_batch_matmul, .type_attr = "T", .dtypes = f,
       .n_dtypes = 1},
      {.op = "Softmax", .compute = k_softmax, .type_attr = "T", .dtypes = f, .n_dtypes = 1},
      {.op = "LogSoftmax", .compute = k_softmax, .type_attr = "T", .dtypes = f, .n_dtypes = 1,
       .user_data = &log_marker},
      {.op = "BiasAddGrad", .compute = k_bias_add_grad, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2},
      {.op = "L2Loss", .compute = k_l2loss, .type_attr = "T", .dtypes = f, .n_dtypes = 1},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__vk_register(reg, &specs[i]));
  const weft_type_constraint_t arg_types[] = {{"T", fi, 2}, {"output_type", types_index, 2}};
  WEFT_RETURN_IF_ERROR(
      weft__vk_register_full(reg, "ArgMax", arg_types, 2, hm_dim, k_arg, &max_marker));
  WEFT_RETURN_IF_ERROR(weft__vk_register_full(reg, "ArgMin", arg_types, 2, hm_dim, k_arg, NULL));
  for (size_t i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++) {
    const red_op_t *op = &red_ops[i];
    WEFT_RETURN_IF_ERROR(weft__vk_register_typed(reg, op->name, k_reduce, hm_axes, (void *)op,
                                                 op->dtypes, op->n_dtypes));
  }
  return NULL;
}
