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
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

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
  weft_tensor_view_t a, b, c;
  VK_TRY(weft__vk_input(ctx, 0, &a));
  VK_TRY(weft__vk_input(ctx, 1, &b));
  char s0[VK_SHAPE_STR_LEN], s1[VK_SHAPE_STR_LEN];
  if (a.rank != 2 || b.rank != 2)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "MatMul needs matrices (rank 2): In[0]: %s, In[1]: %s",
                          weft__vk_shape_str(a.rank, a.dims, s0, sizeof s0),
                          weft__vk_shape_str(b.rank, b.dims, s1, sizeof s1));
  bool ta = weft__vk_attr_bool(ctx, "transpose_a", false);
  bool tb = weft__vk_attr_bool(ctx, "transpose_b", false);
  int64_t m = ta ? a.dims[1] : a.dims[0], ka = ta ? a.dims[0] : a.dims[1];
  int64_t kb = tb ? b.dims[1] : b.dims[0], n = tb ? b.dims[0] : b.dims[1];
  if (ka != kb)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Matrix size-incompatible: In[0]: %s, In[1]: %s (transpose_a=%d, "
                          "transpose_b=%d)",
                          weft__vk_shape_str(a.rank, a.dims, s0, sizeof s0),
                          weft__vk_shape_str(b.rank, b.dims, s1, sizeof s1), ta, tb);
  int64_t dims[2] = {m, n};
  VK_TRY(weft__vk_output(ctx, 0, a.dtype, 2, dims, &c));
  if (c.num_elements == 0) return NULL;
  if (ka == 0) return weft__vk_fill(weft__vk_ctx_device(ctx), c.data, c.nbytes, 0u);
  VK_TRY(weft__vk_check_size(ctx, &a, "MatMul a"));
  VK_TRY(weft__vk_check_size(ctx, &b, "MatMul b"));
  VK_TRY(weft__vk_check_size(ctx, &c, "MatMul product"));
  return run_matmul(ctx, a.data, b.data, c.data, m, n, ka, ta, tb, 1, 0, 0, 0, 0, 0);
}

/* BatchMatMulV2: the batch dims broadcast (collapsed); one dispatch per run of the innermost
 * collapsed batch dim, its matrices a z layer each. */
static weft_status_t *k_batch_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y, z;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &y));
  char s0[VK_SHAPE_STR_LEN], s1[VK_SHAPE_STR_LEN];
  if (x.rank < 2 || y.rank < 2)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "BatchMatMul needs inputs of rank >= 2: x %s, y %s",
                          weft__vk_shape_str(x.rank, x.dims, s0, sizeof s0),
                          weft__vk_shape_str(y.rank, y.dims, s1, sizeof s1));
  bool adj_x = weft__vk_attr_bool(ctx, "adj_x", false);
  bool adj_y = weft__vk_attr_bool(ctx, "adj_y", false);
  int64_t xr = x.dims[x.rank - 2], xc = x.dims[x.rank - 1];
  int64_t yr = y.dims[y.rank - 2], yc = y.dims[y.rank - 1];
  int64_t m = adj_x ? xc : xr, k = adj_x ? xr : xc;
  int64_t ky = adj_y ? yc : yr, n = adj_y ? yr : yc;
  if (k != ky)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Matrix size-incompatible: In[0]: %s, In[1]: %s (adj_x=%d, adj_y=%d)",
                          weft__vk_shape_str(x.rank, x.dims, s0, sizeof s0),
                          weft__vk_shape_str(y.rank, y.dims, s1, sizeof s1), adj_x, adj_y);
  const int ranks[2] = {x.rank - 2, y.rank - 2};
  const int64_t *bdims[2] = {x.dims, y.dims};
  weft_vk_bcast_t bc;
  VK_TRY(weft__vk_bcast_init(ctx, &bc, 2, ranks, bdims));
  if (bc.out_rank + 2 > WEFT_MAX_RANK)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "BatchMatMul output rank exceeds %d",
                          WEFT_MAX_RANK);
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0; d < bc.out_rank; d++) dims[d] = bc.out_dims[d];
  dims[bc.out_rank] = m;
  dims[bc.out_rank + 1] = n;
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, bc.out_rank + 2, dims, &z));
  if (z.num_elements == 0) return NULL;
  if (k == 0) return weft__vk_fill(weft__vk_ctx_device(ctx), z.data, z.nbytes, 0u);
  VK_TRY(weft__vk_check_size(ctx, &x, "BatchMatMul x"));
  VK_TRY(weft__vk_check_size(ctx, &y, "BatchMatMul y"));
  VK_TRY(weft__vk_check_size(ctx, &z, "BatchMatMul output"));
  int r = bc.rank - 1;
  int64_t inner = bc.dims[r], runs = bc.out_elements / inner;
  int64_t xm = xr * xc, ym = yr * yc;
  for (int64_t run = 0; run < runs; run++) {
    /* Matrix offsets of this run's first batch element: decompose the run index over the outer
     * collapsed dims. */
    int64_t rest = run, ox = 0, oy = 0;
    for (int d = r - 1; d >= 0; d--) {
      int64_t c = rest % bc.dims[d];
      rest /= bc.dims[d];
      ox += c * bc.strides[0][d];
      oy += c * bc.strides[1][d];
    }
    VK_TRY(run_matmul(ctx, x.data, y.data, z.data, m, n, k, adj_x, adj_y, inner,
                      bc.strides[0][r] * xm, bc.strides[1][r] * ym, ox * xm, oy * ym,
                      run * inner * m * n));
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
  VK_TRY(weft__vk_input(ctx, 0, &x));
  if (x.rank < 1)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "logits must have >= 1 dimension, got a scalar");
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &x, "logits"));
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
/* Column reductions with fewer outputs than this and longer runs are regrouped to rows. */
#define COLS_FEW_OUTPUTS 4096
#define COLS_LONG_RUN 1024

static weft_status_t *reduce_rows(weft_kernel_ctx_t *ctx, const red_op_t *op, weft_dtype_t dtype,
                                  void *x, void *y, int64_t rows, int64_t len, int64_t count) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  if (len < ROW_MIN_LEN || dtype == WEFT_DT_BOOL) {
    cols_push_t p = {(uint32_t)rows, (uint32_t)len, 1, op->code, (uint32_t)weft__vk_dt(dtype),
                     (float)count, 0};
    void *bufs[2] = {x, y};
    uint64_t items = dtype == WEFT_DT_BOOL ? ((uint64_t)rows + 3) / 4 : (uint64_t)rows;
    return weft__vk_dispatch(dev, VK_SH_REDUCE_COLS, &p, sizeof p, bufs, 2,
                             weft__vk_groups(ctx, items), 1, 1);
  }
  rows_push_t p = {(uint32_t)rows, (uint32_t)len, op->code, (uint32_t)weft__vk_dt(dtype),
                   (float)count};
  uint32_t max = weft__vk_max_groups(dev);
  uint32_t groups = rows > (int64_t)max ? max : (uint32_t)rows;
  void *bufs[2] = {x, y};
  return weft__vk_dispatch(dev, VK_SH_REDUCE_ROWS, &p, sizeof p, bufs, 2, groups, 1, 1);
}

static weft_status_t *reduce_cols(weft_kernel_ctx_t *ctx, const red_op_t *op, weft_dtype_t dtype,
                                  void *x, void *y, int64_t outer, int64_t mid, int64_t inner,
                                  int64_t count) {
  cols_push_t p = {(uint32_t)outer, (uint32_t)mid, (uint32_t)inner, op->code,
                   (uint32_t)weft__vk_dt(dtype), (float)count, 0};
  void *bufs[2] = {x, y};
  uint64_t outs = (uint64_t)outer * (uint64_t)inner;
  uint64_t items = dtype == WEFT_DT_BOOL ? (outs + 3) / 4 : outs;
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_REDUCE_COLS, &p, sizeof p, bufs, 2,
                           weft__vk_groups(ctx, items), 1, 1);
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
  VK_TRY(weft__vk_check_size(ctx, x, op->name));
  int n_groups = 0;
  bool g_red[WEFT_MAX_RANK];
  int64_t g_size[WEFT_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    if (x->dims[d] == 1) continue;
    if (n_groups > 0 && g_red[n_groups - 1] == reduced[d]) {
      g_size[n_groups - 1] *= x->dims[d];
    } else {
      g_red[n_groups] = reduced[d];
      g_size[n_groups] = x->dims[d];
      n_groups++;
    }
  }
  bool any_reduced = false;
  for (int g = 0; g < n_groups; g++) any_reduced |= g_red[g];
  if (!any_reduced) {
    /* Every output folds in exactly one element: the reduction of one element is itself. */
    return weft__vk_copy_device_to_device(dev, y->data, x->data, x->nbytes);
  }
  if (n_groups == 1) return reduce_rows(ctx, op, x->dtype, x->data, y->data, 1, g_size[0], count);
  if (n_groups == 2 && !g_red[0])
    return reduce_rows(ctx, op, x->dtype, x->data, y->data, g_size[0], g_size[1], count);
  int64_t outer = 1, mid = 0, inner = 1;
  bool cols_shape = false;
  if (n_groups == 2) { /* [R, K] */
    mid = g_size[0];
    inner = g_size[1];
    cols_shape = true;
  } else if (n_groups == 3 && !g_red[0]) { /* [K, R, K] */
    outer = g_size[0];
    mid = g_size[1];
    inner = g_size[2];
    cols_shape = true;
  }
  if (cols_shape && !(outer * inner < COLS_FEW_OUTPUTS && mid >= COLS_LONG_RUN))
    return reduce_cols(ctx, op, x->dtype, x->data, y->data, outer, mid, inner, count);
  /* Regroup: kept dims first, reduced dims last, then reduce rows. */
  int64_t sizes[WEFT_MAX_RANK], strides[WEFT_MAX_RANK], g_stride[WEFT_MAX_RANK];
  int64_t s = 1, kept = 1, red = 1;
  for (int g = n_groups - 1; g >= 0; g--) {
    g_stride[g] = s;
    s *= g_size[g];
  }
  int r = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int g = 0; g < n_groups; g++) {
      if (g_red[g] != (pass == 1)) continue;
      sizes[r] = g_size[g];
      strides[r] = g_stride[g];
      if (pass == 0) kept *= g_size[g];
      else red *= g_size[g];
      r++;
    }
  void *tmp = NULL;
  VK_TRY(weft__vk_scratch(ctx, x->nbytes, &tmp));
  VK_TRY(weft__vk_gather(ctx, tmp, x->data, x->dtype, r, sizes, strides));
  return reduce_rows(ctx, op, x->dtype, tmp, y->data, kept, red, count);
}

#define MAX_AXES 64

static weft_status_t *k_reduce(weft_kernel_ctx_t *ctx, void *state) {
  const red_op_t *op = state;
  weft_tensor_view_t x, axes_v, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &axes_v));
  int64_t axes[MAX_AXES], n_axes = 0;
  VK_TRY(weft__vk_read_indices(ctx, &axes_v, "reduction_indices", axes, MAX_AXES, &n_axes));
  bool reduced[WEFT_MAX_RANK] = {false};
  for (int64_t i = 0; i < n_axes; i++) {
    if (axes[i] < -(int64_t)x.rank || axes[i] >= x.rank)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Invalid reduction dimension (%lld for input with %d dimension(s)",
                            (long long)axes[i], x.rank);
    reduced[axes[i] < 0 ? axes[i] + x.rank : axes[i]] = true;
  }
  bool keep_dims = weft__vk_attr_bool(ctx, "keep_dims", false);
  int out_rank = 0;
  int64_t out_dims[WEFT_MAX_RANK];
  int64_t count = 1;
  for (int d = 0; d < x.rank; d++) {
    if (reduced[d]) {
      count *= x.dims[d];
      if (keep_dims) out_dims[out_rank++] = 1;
    } else {
      out_dims[out_rank++] = x.dims[d];
    }
  }
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, out_rank, out_dims, &y));
  return reduce_into(ctx, op, &x, reduced, &y, count);
}

static const red_op_t sum_op = {"Sum", VK_RED_SUM, NULL, 0};
static const red_op_t l2_op = {"L2Loss", VK_RED_L2, NULL, 0};

static weft_status_t *k_l2loss(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, 0, NULL, &y));
  if (x.num_elements == 0) return weft__vk_fill(weft__vk_ctx_device(ctx), y.data, y.nbytes, 0u);
  VK_TRY(weft__vk_check_size(ctx, &x, "L2Loss input"));
  return reduce_rows(ctx, &l2_op, x.dtype, x.data, y.data, 1, x.num_elements, x.num_elements);
}

/* ArgMax / ArgMin over one axis, x viewed as [outer, n, inner]; int32 or int64 indices. */
static weft_status_t *k_arg(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  weft_tensor_view_t x, dim_v, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &dim_v));
  int64_t axis_raw = 0, got = 0;
  if (dim_v.num_elements != 1) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "dimension must be a scalar, got shape %s",
                          weft__vk_shape_str(dim_v.rank, dim_v.dims, s, sizeof s));
  }
  VK_TRY(weft__vk_read_indices(ctx, &dim_v, "dimension", &axis_raw, 1, &got));
  if (axis_raw < -(int64_t)x.rank || axis_raw >= x.rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "dimension %lld is out of range for a tensor of rank %d (must be in "
                          "[%d, %d))",
                          (long long)axis_raw, x.rank, -x.rank, x.rank);
  int axis = (int)(axis_raw < 0 ? axis_raw + x.rank : axis_raw);
  weft_dtype_t out_dtype = WEFT_DT_INT64;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (H->attr_has(attrs, "output_type")) VK_TRY(H->attr_type(attrs, "output_type", &out_dtype));
  if (out_dtype != WEFT_DT_INT32 && out_dtype != WEFT_DT_INT64)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "ArgMax/ArgMin on Vulkan write int32 or int64 indices, not %s",
                          weft__vk_dtype_name(out_dtype));
  int64_t n = x.dims[axis], outer = 1, inner = 1;
  int64_t out_dims[WEFT_MAX_RANK];
  int r = 0;
  for (int d = 0; d < x.rank; d++) {
    if (d < axis) outer *= x.dims[d];
    if (d > axis) inner *= x.dims[d];
    if (d != axis) out_dims[r++] = x.dims[d];
  }
  if (n == 0) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Reduction axis %d is empty in shape %s",
                          axis, weft__vk_shape_str(x.rank, x.dims, s, sizeof s));
  }
  VK_TRY(weft__vk_output(ctx, 0, out_dtype, r, out_dims, &y));
  if (y.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &x, is_max ? "ArgMax input" : "ArgMin input"));
  cols_push_t p = {(uint32_t)outer, (uint32_t)n, (uint32_t)inner,
                   is_max ? VK_RED_ARGMAX : VK_RED_ARGMIN, (uint32_t)weft__vk_dt(x.dtype), 0.0f,
                   out_dtype == WEFT_DT_INT64};
  void *bufs[2] = {x.data, y.data};
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_REDUCE_COLS, &p, sizeof p, bufs, 2,
                           weft__vk_groups(ctx, (uint64_t)(outer * inner)), 1, 1);
}

static weft_status_t *k_bias_add_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, y;
  VK_TRY(weft__vk_input(ctx, 0, &g));
  bool nchw = false;
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (H->attr_has(attrs, "data_format")) {
    const char *fmt = NULL;
    size_t len = 0;
    VK_TRY(H->attr_string(attrs, "data_format", &fmt, &len));
    if (len == 4 && memcmp(fmt, "NCHW", 4) == 0) nchw = true;
    else if (!(len == 4 && memcmp(fmt, "NHWC", 4) == 0))
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "data_format must be \"NHWC\" or \"NCHW\", got \"%.*s\"", (int)len, fmt);
  }
  char s0[VK_SHAPE_STR_LEN];
  if (g.rank < 2)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Input tensor must be at least 2D: %s",
                          weft__vk_shape_str(g.rank, g.dims, s0, sizeof s0));
  int cdim = nchw ? 1 : g.rank - 1;
  bool reduced[WEFT_MAX_RANK];
  int64_t count = 1;
  for (int d = 0; d < g.rank; d++) {
    reduced[d] = d != cdim;
    if (reduced[d]) count *= g.dims[d];
  }
  VK_TRY(weft__vk_output(ctx, 0, g.dtype, 1, &g.dims[cdim], &y));
  return reduce_into(ctx, &sum_op, &g, reduced, &y, count);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int log_marker, max_marker;
static const weft_dtype_t types_index[] = {WEFT_DT_INT32, WEFT_DT_INT64};

static const weft_dtype_t types_f[] = {WEFT_DT_FLOAT};
static const weft_dtype_t types_fi[] = {WEFT_DT_FLOAT, WEFT_DT_INT32};

static const red_op_t red_ops[] = {
    {"Sum", VK_RED_SUM, types_fi, 2},   {"Mean", VK_RED_MEAN, types_f, 1},
    {"Max", VK_RED_MAX, types_fi, 2},   {"Min", VK_RED_MIN, types_fi, 2},
    {"Prod", VK_RED_PROD, types_fi, 2}, {"All", VK_RED_ALL, NULL, 0},
    {"Any", VK_RED_ANY, NULL, 0},
};

weft_status_t *weft__vk_register_nn(const weft_registrar_t *reg) {
  static const char *const hm_axes[] = {"reduction_indices", NULL};
  static const char *const hm_dim[] = {"dimension", NULL};
  const weft_vk_kernel_spec_t specs[] = {
      {.op = "MatMul", .compute = k_matmul, .type_attr = "T", .dtypes = types_f, .n_dtypes = 1},
      {.op = "BatchMatMulV2", .compute = k_batch_matmul, .type_attr = "T", .dtypes = types_f,
       .n_dtypes = 1},
      {.op = "Softmax", .compute = k_softmax, .type_attr = "T", .dtypes = types_f, .n_dtypes = 1},
      {.op = "LogSoftmax", .compute = k_softmax, .type_attr = "T", .dtypes = types_f,
       .n_dtypes = 1, .user_data = &log_marker},
      {.op = "BiasAddGrad", .compute = k_bias_add_grad, .type_attr = "T", .dtypes = types_fi,
       .n_dtypes = 2},
      {.op = "L2Loss", .compute = k_l2loss, .type_attr = "T", .dtypes = types_f, .n_dtypes = 1},
      {.op = "ArgMax", .compute = k_arg, .type_attr = "T", .dtypes = types_fi, .n_dtypes = 2,
       .host_memory = hm_dim, .type_attr2 = "output_type", .dtypes2 = types_index,
       .n_dtypes2 = 2, .user_data = &max_marker},
      {.op = "ArgMin", .compute = k_arg, .type_attr = "T", .dtypes = types_fi, .n_dtypes = 2,
       .host_memory = hm_dim, .type_attr2 = "output_type", .dtypes2 = types_index,
       .n_dtypes2 = 2},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) VK_TRY(weft__vk_register(reg, &specs[i]));
  for (size_t i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++) {
    weft_vk_kernel_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.op = red_ops[i].name;
    spec.compute = k_reduce;
    spec.host_memory = hm_axes;
    spec.user_data = (void *)&red_ops[i];
    if (red_ops[i].dtypes != NULL) {
      spec.type_attr = "T";
      spec.dtypes = red_ops[i].dtypes;
      spec.n_dtypes = red_ops[i].n_dtypes;
    }
    VK_TRY(weft__vk_register(reg, &spec));
  }
  return NULL;
}
