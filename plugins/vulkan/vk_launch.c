/* vk_launch.c: the Vulkan backend's launch table (plugins/common/gpu_kernels.h): the device steps
 * of the kernels the GPU backends share, each one dispatch of an embedded shader (unary.comp,
 * binary.comp, select.comp, cast.comp, reduce_rows.comp, reduce_cols.comp, softmax.comp,
 * matmul.comp, gather through vk_util.c) or a fill or copy. The shared drivers decide what to
 * launch; these fill the shaders' push constants and count their workgroups.
 *
 * Shaders index 32-bit: the table's check (weft__vk_check_size) refuses larger tensors first.
 * Kernels writing bool handle 4 elements per invocation (a 32-bit word). */
#include <math.h>
#include <string.h>

#include "vk_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Elementwise */

typedef struct unary_push {
  uint32_t n, op, dtype;
  float alpha;
} unary_push_t;

static weft_status_t *vk_unary(weft_kernel_ctx_t *ctx, int op, double alpha,
                               const weft_tensor_view_t *x, const weft_tensor_view_t *y,
                               const char *what) {
  (void)what;
  bool out_bool = (uint32_t)op >= VK_UN_FIRST_BOOL_OUT;
  unary_push_t p = {(uint32_t)x->num_elements, (uint32_t)op, (uint32_t)weft__vk_dt(x->dtype),
                    (float)alpha};
  void *bufs[2] = {x->data, y->data};
  uint64_t items = out_bool ? ((uint64_t)x->num_elements + 3) / 4 : (uint64_t)x->num_elements;
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_UNARY, p.op, p.dtype, &p, sizeof p,
                              bufs, 2, weft__vk_groups(ctx, items), 1, 1);
}

typedef struct binary_push {
  uint32_t n, op, dtype, rank;
  float alpha;
  uint32_t pad[3];
  uint32_t dims[VK_MAX_DIMS];
  uint32_t sa[VK_MAX_DIMS];
  uint32_t sb[VK_MAX_DIMS];
} binary_push_t;

weft_status_t *weft__vk_binary(weft_kernel_ctx_t *ctx, uint32_t op, float alpha, weft_dtype_t dtype,
                               const weft_vk_bcast_t *bc, void *x, void *y, void *z) {
  if (bc->out_elements == 0) return NULL;
  if (bc->out_elements >= ((int64_t)1 << 32) - 4)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "%lld elements are too many for a Vulkan kernel (at most 2^32)",
                          (long long)bc->out_elements);
  binary_push_t p;
  memset(&p, 0, sizeof p);
  p.n = (uint32_t)bc->out_elements;
  p.op = op;
  p.dtype = (uint32_t)weft__vk_dt(dtype);
  p.rank = (uint32_t)bc->rank;
  p.alpha = alpha;
  for (int d = 0; d < bc->rank; d++) {
    p.dims[d] = (uint32_t)bc->dims[d];
    p.sa[d] = (uint32_t)bc->strides[0][d];
    p.sb[d] = (uint32_t)bc->strides[1][d];
  }
  void *bufs[3] = {x, y, z};
  uint64_t items = op >= VK_BIN_FIRST_BOOL_OUT ? ((uint64_t)p.n + 3) / 4 : (uint64_t)p.n;
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_BINARY, p.op, p.dtype, &p, sizeof p,
                              bufs, 3, weft__vk_groups(ctx, items), 1, 1);
}

static weft_status_t *vk_binary(weft_kernel_ctx_t *ctx, int op, double alpha, weft_dtype_t dtype,
                                const weft_pc_bcast_t *bc, const void *x, const void *y, void *z,
                                const char *what) {
  (void)what;
  return weft__vk_binary(ctx, (uint32_t)op, (float)alpha, dtype, bc, (void *)x, (void *)y, z);
}

typedef struct select_push {
  uint32_t n, rank, bool_elems;
  uint32_t dims[VK_SELECT_MAX_DIMS];
  uint32_t sc[VK_SELECT_MAX_DIMS];
  uint32_t st[VK_SELECT_MAX_DIMS];
  uint32_t se[VK_SELECT_MAX_DIMS];
} select_push_t;

static weft_status_t *vk_select(weft_kernel_ctx_t *ctx, const weft_pc_bcast_t *bc,
                                weft_dtype_t dtype, const void *c, const void *t, const void *e,
                                void *z, const char *what) {
  (void)what;
  if (bc->out_elements == 0) return NULL;
  if (bc->rank > (int)VK_SELECT_MAX_DIMS)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "Select broadcasting over %d alternating dims is not supported on "
                          "Vulkan (at most %u)",
                          bc->rank, VK_SELECT_MAX_DIMS);
  select_push_t p;
  memset(&p, 0, sizeof p);
  p.n = (uint32_t)bc->out_elements;
  p.rank = (uint32_t)bc->rank;
  p.bool_elems = dtype == WEFT_DT_BOOL;
  for (int d = 0; d < bc->rank; d++) {
    p.dims[d] = (uint32_t)bc->dims[d];
    p.sc[d] = (uint32_t)bc->strides[0][d];
    p.st[d] = (uint32_t)bc->strides[1][d];
    p.se[d] = (uint32_t)bc->strides[2][d];
  }
  void *bufs[4] = {(void *)c, (void *)t, (void *)e, z};
  uint64_t items = p.bool_elems ? ((uint64_t)p.n + 3) / 4 : (uint64_t)p.n;
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_SELECT, &p, sizeof p, bufs, 4,
                           weft__vk_groups(ctx, items), 1, 1);
}

typedef struct cast_push {
  uint32_t n, src, dst;
} cast_push_t;

static weft_status_t *vk_cast(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                              const weft_tensor_view_t *y) {
  cast_push_t p = {(uint32_t)x->num_elements, (uint32_t)weft__vk_dt(x->dtype),
                   (uint32_t)weft__vk_dt(y->dtype)};
  void *bufs[2] = {x->data, y->data};
  uint64_t items = y->dtype == WEFT_DT_BOOL ? ((uint64_t)p.n + 3) / 4 : (uint64_t)p.n;
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_CAST, &p, sizeof p, bufs, 2,
                           weft__vk_groups(ctx, items), 1, 1);
}

static weft_status_t *vk_fill_bool(weft_kernel_ctx_t *ctx, void *dst, bool value) {
  return weft__vk_fill(weft__vk_ctx_device(ctx), dst, 1, value ? 1u : 0u);
}

static weft_status_t *vk_zero(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v) {
  return weft__vk_fill(weft__vk_ctx_device(ctx), v->data, v->nbytes, 0u);
}

static weft_status_t *vk_copy(weft_kernel_ctx_t *ctx, void *dst, const void *src, size_t nbytes) {
  return weft__vk_copy_device_to_device(weft__vk_ctx_device(ctx), dst, src, nbytes);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions: rows of ROW_MIN_LEN and more reduce a row per workgroup; shorter rows, bool rows
 * and columns reduce one output per invocation. */

typedef struct rows_push {
  uint32_t rows, len, op, dtype;
  float count;
} rows_push_t;

typedef struct cols_push {
  uint32_t outer, mid, inner, op, dtype;
  float count;
  uint32_t out64;
} cols_push_t;

#define ROW_MIN_LEN 64

static weft_status_t *vk_reduce_rows(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                     weft_dtype_t dtype, const void *x, void *y, int64_t rows,
                                     int64_t len, int64_t count) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  void *bufs[2] = {(void *)x, y};
  if (len < ROW_MIN_LEN || dtype == WEFT_DT_BOOL) {
    cols_push_t p = {(uint32_t)rows,
                     (uint32_t)len,
                     1,
                     (uint32_t)op->code,
                     (uint32_t)weft__vk_dt(dtype),
                     (float)count,
                     0};
    uint64_t items = dtype == WEFT_DT_BOOL ? ((uint64_t)rows + 3) / 4 : (uint64_t)rows;
    return weft__vk_dispatch_op(dev, VK_SH_REDUCE_COLS, p.op, p.dtype, &p, sizeof p, bufs, 2,
                                weft__vk_groups(ctx, items), 1, 1);
  }
  rows_push_t p = {(uint32_t)rows, (uint32_t)len, (uint32_t)op->code, (uint32_t)weft__vk_dt(dtype),
                   (float)count};
  uint32_t max = weft__vk_max_groups(dev);
  uint32_t groups = rows > (int64_t)max ? max : (uint32_t)rows;
  return weft__vk_dispatch_op(dev, VK_SH_REDUCE_ROWS, p.op, p.dtype, &p, sizeof p, bufs, 2, groups,
                              1, 1);
}

static weft_status_t *vk_reduce_cols(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                     weft_dtype_t dtype, const void *x, void *y, int64_t outer,
                                     int64_t mid, int64_t inner, int64_t count) {
  cols_push_t p = {(uint32_t)outer,
                   (uint32_t)mid,
                   (uint32_t)inner,
                   (uint32_t)op->code,
                   (uint32_t)weft__vk_dt(dtype),
                   (float)count,
                   0};
  void *bufs[2] = {(void *)x, y};
  uint64_t outs = (uint64_t)outer * (uint64_t)inner;
  uint64_t items = dtype == WEFT_DT_BOOL ? (outs + 3) / 4 : outs;
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_REDUCE_COLS, p.op, p.dtype, &p,
                              sizeof p, bufs, 2, weft__vk_groups(ctx, items), 1, 1);
}

/* Every output folds in exactly one element: the reduction of one element is itself. */
static weft_status_t *vk_reduce_single(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                       const weft_tensor_view_t *x, const weft_tensor_view_t *y,
                                       int64_t count) {
  (void)op;
  (void)count;
  return weft__vk_copy_device_to_device(weft__vk_ctx_device(ctx), y->data, x->data, x->nbytes);
}

/* The identity of a reduction as a 32-bit fill pattern. */
static uint32_t identity_pattern(const weft_pc_reduce_op_t *op, weft_dtype_t dtype) {
  union {
    float f;
    uint32_t u;
  } v;
  bool f = dtype == WEFT_DT_FLOAT;
  switch ((uint32_t)op->code) {
    case VK_RED_PROD:
      v.f = 1.0f;
      return f ? v.u : 1u;
    case VK_RED_MAX:
      v.f = -INFINITY;
      return f ? v.u : 0x80000000u;
    case VK_RED_MIN:
      v.f = INFINITY;
      return f ? v.u : 0x7fffffffu;
    case VK_RED_MEAN:
      v.f = NAN;
      return f ? v.u : 0u;
    case VK_RED_ALL:
      return 0x01010101u;
    default:
      return 0u; /* Sum, Any, L2 */
  }
}

static weft_status_t *vk_reduce_identity(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                         const weft_tensor_view_t *y) {
  return weft__vk_fill(weft__vk_ctx_device(ctx), y->data, y->nbytes,
                       identity_pattern(op, y->dtype));
}

static weft_status_t *vk_arg(weft_kernel_ctx_t *ctx, bool is_max, const weft_pc_arg_t *a,
                             const weft_tensor_view_t *y) {
  cols_push_t p = {(uint32_t)a->outer,
                   (uint32_t)a->n,
                   (uint32_t)a->inner,
                   is_max ? VK_RED_ARGMAX : VK_RED_ARGMIN,
                   (uint32_t)weft__vk_dt(a->x.dtype),
                   0.0f,
                   a->out_dtype == WEFT_DT_INT64};
  void *bufs[2] = {a->x.data, y->data};
  return weft__vk_dispatch_op(weft__vk_ctx_device(ctx), VK_SH_REDUCE_COLS, p.op, p.dtype, &p,
                              sizeof p, bufs, 2,
                              weft__vk_groups(ctx, (uint64_t)(a->outer * a->inner)), 1, 1);
}

/* ---------------------------------------------------------------------------------------------
 * Softmax (a workgroup per row), MatMul (tiled through shared memory) */

typedef struct softmax_push {
  uint32_t rows, cols, log_softmax;
} softmax_push_t;

static weft_status_t *vk_softmax(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                 const weft_tensor_view_t *y, int64_t rows, int64_t cols,
                                 bool log_softmax) {
  softmax_push_t p = {(uint32_t)rows, (uint32_t)cols, log_softmax};
  uint32_t groups = rows > weft__vk_max_groups(weft__vk_ctx_device(ctx))
                        ? weft__vk_max_groups(weft__vk_ctx_device(ctx))
                        : (uint32_t)rows;
  void *bufs[2] = {x->data, y->data};
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_SOFTMAX, &p, sizeof p, bufs, 2, groups,
                           1, 1);
}

typedef struct matmul_push {
  uint32_t m, n, k, ta, tb, batch_a, batch_b, batch_c, off_a, off_b, off_c;
} matmul_push_t;

#define MM_TILE 64u

static weft_status_t *vk_matmul(weft_kernel_ctx_t *ctx, weft_dtype_t dtype, const void *a,
                                const void *b, void *c, int64_t m, int64_t n, int64_t k, bool ta,
                                bool tb, int64_t batches, int64_t sa, int64_t sb, int64_t off_a,
                                int64_t off_b, int64_t off_c) {
  (void)dtype; /* float32 only */
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  int64_t gx = (n + MM_TILE - 1) / MM_TILE, gy = (m + MM_TILE - 1) / MM_TILE;
  if (gx > 65535 || gy > 65535 || batches > 65535)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "matrix product of %lld x %lld (%lld batches) exceeds one Vulkan "
                          "dispatch",
                          (long long)m, (long long)n, (long long)batches);
  matmul_push_t p = {(uint32_t)m,
                     (uint32_t)n,
                     (uint32_t)k,
                     ta,
                     tb,
                     (uint32_t)sa,
                     (uint32_t)sb,
                     (uint32_t)(m * n),
                     (uint32_t)off_a,
                     (uint32_t)off_b,
                     (uint32_t)off_c};
  void *bufs[3] = {(void *)a, (void *)b, c};
  return weft__vk_dispatch(dev, VK_SH_MATMUL, &p, sizeof p, bufs, 3, (uint32_t)gx, (uint32_t)gy,
                           (uint32_t)batches);
}

/* ---------------------------------------------------------------------------------------------
 * The table */

static const weft_pc_reduce_op_t sum_op = {"Sum", VK_RED_SUM, NULL, 0};
static const weft_pc_reduce_op_t l2_op = {"L2Loss", VK_RED_L2, NULL, 0};

const weft_pc_launch_t weft__vk_launch = {
    .device = "Vulkan",
    .dt = weft__vk_dt,
    .check = weft__vk_check_size,
    .unary = vk_unary,
    .binary = vk_binary,
    .select = vk_select,
    .cast = vk_cast,
    .fill_bool = vk_fill_bool,
    .zero = vk_zero,
    .copy = vk_copy,
    .scratch = weft__vk_scratch,
    .copy_strided = weft__vk_copy_strided,
    .gather = weft__vk_gather,
    .reduce_rows = vk_reduce_rows,
    .reduce_cols = vk_reduce_cols,
    .reduce_single = vk_reduce_single,
    .reduce_identity = vk_reduce_identity,
    .arg = vk_arg,
    .softmax = vk_softmax,
    .matmul = vk_matmul,
    .bin_add = VK_BIN_ADD,
    .bin_eq = VK_BIN_EQ,
    .bin_ne = VK_BIN_NE,
    .bin_first_bool_out = VK_BIN_FIRST_BOOL_OUT,
    .un_first_bool_out = VK_UN_FIRST_BOOL_OUT,
    .sum_op = &sum_op,
    .l2_op = &l2_op,
};
