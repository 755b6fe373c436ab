/* cu_nn.c: the CUDA kernels that combine many elements per output (host side; device code in
 * kernels/reduce.cu): MatMul and BatchMatMulV2 through cuBLAS, Softmax / LogSoftmax, the
 * reductions Sum, Mean, Max, Min, Prod, All, Any over any axes, BiasAddGrad (a Sum), L2Loss,
 * ArgMax / ArgMin, and the softmax cross-entropy losses.
 *
 * A reduction first collapses the input into runs of kept (K) and reduced (R) dims, size-1 dims
 * dropped. [R] and [K,R] reduce rows (a block per row, or two passes for few long rows); [R,K]
 * and [K,R,K] reduce one output per thread along the columns; any other pattern, and column
 * reductions with too few outputs to fill the device, are first regrouped to [K..., R...] by the
 * strided copy. Shapes and argument checks are the shared ones (plugins/common), so the errors
 * are the CPU kernels'. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

#define H weft_pc_host

/* ---------------------------------------------------------------------------------------------
 * MatMul through cuBLAS. cuBLAS is column-major: a row-major matrix is its transpose there, so
 * C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands swapped. */

/* `batches` products C_i = op(A_i) op(B_i), C_i dense [m, n] at c + i * m * n, A_i at
 * a + i * stride_a, B_i at b + i * stride_b (elements; a stride of 0 repeats the matrix). */
static weft_status_t *gemm(weft_kernel_ctx_t *ctx, weft_dtype_t dtype, const void *a,
                           const void *b, void *c, int64_t m, int64_t n, int64_t k, bool ta,
                           bool tb, int64_t batches, int64_t stride_a, int64_t stride_b) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batches > INT_MAX)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED,
                          "matrix product of %lld x %lld x %lld (%lld batches) exceeds cuBLAS's "
                          "32-bit sizes",
                          (long long)m, (long long)k, (long long)n, (long long)batches);
  weft_cu_device_t *dev = weft__cu_ctx_device(ctx, NULL);
  weft__cu_blas_lock(dev);
  const weft_cu_blas_t *blas = NULL;
  cublasHandle_t handle = NULL;
  weft_status_t *s = weft__cu_blas_handle(dev, &blas, &handle);
  if (s != NULL) {
    weft__cu_blas_unlock(dev);
    return weft__cu_named(ctx, s);
  }
  cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = (int)(tb ? k : n), lda = (int)(ta ? m : k), ldc = (int)n;
  long long stride_c = (long long)(m * n);
  cublasStatus_t st;
  if (dtype == WEFT_DT_DOUBLE) {
    const double one = 1.0, zero = 0.0;
    st = blas->dgemm_strided_batched(handle, op_b, op_a, (int)n, (int)m, (int)k, &one, b, ldb,
                                     stride_b, a, lda, stride_a, &zero, c, ldc, stride_c,
                                     (int)batches);
  } else {
    const float one = 1.0f, zero = 0.0f;
    st = blas->sgemm_strided_batched(handle, op_b, op_a, (int)n, (int)m, (int)k, &one, b, ldb,
                                     stride_b, a, lda, stride_a, &zero, c, ldc, stride_c,
                                     (int)batches);
  }
  weft__cu_blas_unlock(dev);
  if (st != CUBLAS_STATUS_SUCCESS)
    return weft_pc_error(ctx, st == CUBLAS_STATUS_ALLOC_FAILED ? WEFT_RESOURCE_EXHAUSTED : WEFT_INTERNAL,
                          "%s: cuBLAS gemm of %lld x %lld x %lld failed: %s (status %d)",
                          weft__cu_device_name(dev), (long long)m, (long long)k, (long long)n,
                          blas->status_string != NULL ? blas->status_string(st) : "?", (int)st);
  return NULL;
}

static weft_status_t *zero_fill(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v) {
  const uint64_t zero = 0;
  return weft__cu_fill(ctx, v->data, v->dtype, v->num_elements, &zero);
}

static weft_status_t *k_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_matmul_t mm;
  WEFT_RETURN_IF_ERROR(weft_pc_matmul_prepare(ctx, &mm));
  if (mm.c.num_elements == 0) return NULL;
  if (mm.k == 0) return zero_fill(ctx, &mm.c);
  return gemm(ctx, mm.a.dtype, mm.a.data, mm.b.data, mm.c.data, mm.m, mm.n, mm.k, mm.ta, mm.tb, 1,
              0, 0);
}

/* BatchMatMulV2: the batch dims broadcast (collapsed); one strided-batched call per run of the
 * innermost collapsed batch dim, whose operands step by a fixed stride (0 when broadcast). */
static weft_status_t *k_batch_matmul(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_batch_matmul_t bm;
  WEFT_RETURN_IF_ERROR(weft_pc_batch_matmul_prepare(ctx, false, &bm));
  const weft_tensor_view_t *x = &bm.x, *y = &bm.y, *z = &bm.z;
  if (z->num_elements == 0) return NULL;
  if (bm.k == 0) return zero_fill(ctx, z);
  const weft_pc_bcast_t *bc = &bm.bc;
  int r = bc->rank - 1;
  int64_t inner = weft_pc_bcast_inner(bc), runs = weft_pc_bcast_rows(bc);
  int64_t xm = x->dims[x->rank - 2] * x->dims[x->rank - 1];
  int64_t ym = y->dims[y->rank - 2] * y->dims[y->rank - 1];
  int64_t m = bm.m, n = bm.n;
  size_t es = weft_pc_dtype_size(x->dtype);
  for (int64_t run = 0; run < runs; run++) {
    int64_t off[WEFT_PC_BCAST_MAX_IN];
    weft_pc_bcast_row_offsets(bc, run, off);
    const char *xa = (const char *)x->data + (size_t)(off[0] * xm) * es;
    const char *ya = (const char *)y->data + (size_t)(off[1] * ym) * es;
    char *za = (char *)z->data + (size_t)(run * inner * m * n) * es;
    WEFT_RETURN_IF_ERROR(gemm(ctx, x->dtype, xa, ya, za, m, n, bm.k, bm.adj_x, bm.adj_y, inner,
                              bc->strides[0][r] * xm, bc->strides[1][r] * ym));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Softmax and cross-entropy */

static weft_status_t *k_softmax(weft_kernel_ctx_t *ctx, void *state) {
  bool log_softmax = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  if (x.rank < 1)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                          "logits must have >= 1 dimension, got a scalar");
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (x.num_elements == 0) return NULL;
  int64_t cols = x.dims[x.rank - 1], rows = x.num_elements / cols;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_softmax(s, (weft_cu_dt_t)weft__cu_dt(x.dtype), x.data,
                                              y.data, rows, cols, log_softmax),
                           log_softmax ? "LogSoftmax" : "Softmax");
}

static weft_status_t *nan_fill(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v) {
  const float nf = NAN;
  const double nd = NAN;
  return weft__cu_fill(ctx, v->data, v->dtype, v->num_elements,
                       v->dtype == WEFT_DT_FLOAT ? (const void *)&nf : (const void *)&nd);
}

static weft_status_t *k_xent(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_xent_t xe;
  WEFT_RETURN_IF_ERROR(weft_pc_xent_prepare(ctx, &xe));
  if (xe.rows == 0) return NULL;
  if (xe.n == 0) return nan_fill(ctx, &xe.loss); /* no classes: log of an empty sum */
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_xent(s, (weft_cu_dt_t)weft__cu_dt(xe.x.dtype), xe.x.data,
                                           xe.x_rstride, xe.labels.data, xe.l_rstride, 0,
                                           xe.loss.data, xe.backprop.data, xe.rows, xe.n),
                           "SoftmaxCrossEntropyWithLogits");
}

/* Labels arrive in host memory: they are checked there (a kernel could not report a label out
 * of range) and uploaded as int64. */
static weft_status_t *k_sparse_xent(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_pc_xent_t xe;
  WEFT_RETURN_IF_ERROR(weft_pc_sparse_xent_prepare(ctx, &xe));
  if (xe.rows == 0) return NULL;
  const weft_tensor_view_t *l = &xe.labels;
  size_t lbytes = sizeof(int64_t) * (size_t)xe.rows;
  int64_t *labels = malloc(lbytes);
  if (labels == NULL) return weft_pc_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
  for (int64_t r = 0; r < xe.rows; r++) labels[r] = weft_pc_index_at(l, r);
  void *dlabels = NULL;
  weft_status_t *st = weft__cu_scratch(ctx, lbytes, &dlabels);
  weft_cu_device_t *dev = weft__cu_ctx_device(ctx, NULL);
  if (st == NULL) st = weft__cu_named(ctx, weft__cu_copy_to_device(dev, dlabels, labels, lbytes));
  free(labels);
  WEFT_RETURN_IF_ERROR(st);
  cudaStream_t s = weft__cu_enter(dev);
  return weft__cu_launched(ctx,
                           weft__cu_k_xent(s, (weft_cu_dt_t)weft__cu_dt(xe.x.dtype), xe.x.data,
                                           xe.n, dlabels, 0, 1, xe.loss.data, xe.backprop.data,
                                           xe.rows, xe.n),
                           "SparseSoftmaxCrossEntropyWithLogits");
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

typedef struct red_op {
  const char *name;
  int code;
  const weft_dtype_t *dtypes;
  size_t n_dtypes;
} red_op_t;


static weft_status_t *reduce_rows(weft_kernel_ctx_t *ctx, const red_op_t *op, weft_dtype_t dtype,
                                  const void *x, void *y, int64_t rows, int64_t len,
                                  int64_t count) {
  void *partial = NULL;
  WEFT_RETURN_IF_ERROR(weft__cu_scratch(ctx, weft__cu_reduce_partial_bytes(rows, len), &partial));
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_reduce_rows(s, op->code, (weft_cu_dt_t)weft__cu_dt(dtype),
                                                  x, y, rows, len, count, partial),
                           op->name);
}

static weft_status_t *reduce_cols(weft_kernel_ctx_t *ctx, const red_op_t *op, weft_dtype_t dtype,
                                  const void *x, void *y, int64_t outer, int64_t mid,
                                  int64_t inner, int64_t count) {
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_reduce_cols(s, op->code, (weft_cu_dt_t)weft__cu_dt(dtype),
                                                  x, y, outer, mid, inner, count),
                           op->name);
}

/* Writes the identity of a reduction (what reducing nothing gives) into every output. */
static weft_status_t *fill_identity(weft_kernel_ctx_t *ctx, const red_op_t *op,
                                    const weft_tensor_view_t *y) {
  union {
    float f;
    double d;
    int32_t i;
    int64_t l;
    uint8_t b;
  } v;
  memset(&v, 0, sizeof v);
  bool is_f = y->dtype == WEFT_DT_FLOAT, is_d = y->dtype == WEFT_DT_DOUBLE;
  bool is_i = y->dtype == WEFT_DT_INT32;
  switch (op->code) {
    case CU_RED_PROD:
      if (is_f) v.f = 1.0f;
      else if (is_d) v.d = 1.0;
      else if (is_i) v.i = 1;
      else v.l = 1;
      break;
    case CU_RED_MAX:
      if (is_f) v.f = -INFINITY;
      else if (is_d) v.d = -INFINITY;
      else if (is_i) v.i = INT32_MIN;
      else v.l = INT64_MIN;
      break;
    case CU_RED_MIN:
      if (is_f) v.f = INFINITY;
      else if (is_d) v.d = INFINITY;
      else if (is_i) v.i = INT32_MAX;
      else v.l = INT64_MAX;
      break;
    case CU_RED_MEAN:
      if (is_f) v.f = NAN;
      else if (is_d) v.d = NAN;
      break;
    case CU_RED_ALL: v.b = 1; break;
    default: break; /* Sum, Any, L2: zero */
  }
  return weft__cu_fill(ctx, y->data, y->dtype, y->num_elements, &v);
}

static weft_status_t *reduce_into(weft_kernel_ctx_t *ctx, const red_op_t *op,
                                  const weft_tensor_view_t *x, const bool *reduced,
                                  const weft_tensor_view_t *y, int64_t count) {
  if (y->num_elements == 0) return NULL;
  if (weft__cu_dt(x->dtype) < 0)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CUDA kernel for %s", op->name,
                          weft_pc_dtype_name(x->dtype));
  if (x->num_elements == 0) return fill_identity(ctx, op, y);
  weft_pc_reduce_groups_t g;
  weft_pc_reduce_groups(x, reduced, &g);
  if (!g.any_reduced) {
    /* Every output folds in one element: Mean's count is 1, and the rest are that element; a
     * row reduction of length 1 does it with the right finishing. */
    return reduce_rows(ctx, op, x->dtype, x->data, y->data, x->num_elements, 1, count);
  }
  weft_pc_reduce_plan_t p;
  weft_pc_reduce_plan(&g, &p);
  if (p.kind == WEFT_PC_REDUCE_ROWS)
    return reduce_rows(ctx, op, x->dtype, x->data, y->data, p.rows, p.len, count);
  if (p.kind == WEFT_PC_REDUCE_COLS)
    return reduce_cols(ctx, op, x->dtype, x->data, y->data, p.outer, p.mid, p.inner, count);
  void *tmp = NULL;
  WEFT_RETURN_IF_ERROR(weft__cu_scratch(ctx, x->nbytes, &tmp));
  WEFT_RETURN_IF_ERROR(
      weft__cu_copy_strided(ctx, tmp, 0, NULL, x->data, 0, p.strides, x->dtype, p.rank, p.sizes));
  return reduce_rows(ctx, op, x->dtype, tmp, y->data, p.rows, p.len, count);
}

static weft_status_t *k_reduce(weft_kernel_ctx_t *ctx, void *state) {
  const red_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  weft_pc_reduction_t red;
  WEFT_RETURN_IF_ERROR(weft_pc_reduction_prepare(ctx, &x, &red, &y));
  return reduce_into(ctx, op, &x, red.reduced, &y, red.count);
}

static const red_op_t sum_op = {"BiasAddGrad", CU_RED_SUM, NULL, 0};
static const red_op_t l2_op = {"L2Loss", CU_RED_L2, NULL, 0};

static weft_status_t *k_l2loss(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, x.dtype, 0, NULL, &y));
  if (x.num_elements == 0) return fill_identity(ctx, &l2_op, &y);
  return reduce_rows(ctx, &l2_op, x.dtype, x.data, y.data, 1, x.num_elements, x.num_elements);
}

static weft_status_t *k_bias_add_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t g, y;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, &g));
  int cdim = 0;
  bool reduced[WEFT_MAX_RANK];
  WEFT_RETURN_IF_ERROR(weft_pc_bias_grad_shape(ctx, &g, &cdim, reduced));
  int64_t count = g.num_elements / (g.dims[cdim] > 0 ? g.dims[cdim] : 1);
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, g.dtype, 1, &g.dims[cdim], &y));
  return reduce_into(ctx, &sum_op, &g, reduced, &y, count);
}

/* ArgMax / ArgMin over one axis, x viewed as [outer, n, inner]; int32 or int64 indices. */
static weft_status_t *k_arg(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  weft_pc_arg_t a;
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft_pc_arg_plan(ctx, &a));
  if (a.out_dtype != WEFT_DT_INT32 && a.out_dtype != WEFT_DT_INT64)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED,
                         "ArgMax/ArgMin on CUDA write int32 or int64 indices, not %s",
                         weft_pc_dtype_name(a.out_dtype));
  WEFT_RETURN_IF_ERROR(weft_pc_arg_shape(ctx, &a));
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, 0, a.out_dtype, a.out_rank, a.out_dims, &y));
  if (y.num_elements == 0) return NULL;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_arg(s, is_max, (weft_cu_dt_t)weft__cu_dt(a.x.dtype),
                                          a.x.data, y.data, a.out_dtype == WEFT_DT_INT64, a.outer,
                                          a.n, a.inner),
                           is_max ? "ArgMax" : "ArgMin");
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static int log_marker, max_marker;
static const weft_dtype_t types_index[] = {WEFT_DT_INT32, WEFT_DT_INT64};

static const red_op_t red_ops[] = {
    {"Sum", CU_RED_SUM, weft__cu_types_num, CU_N_NUM},
    {"Mean", CU_RED_MEAN, weft__cu_types_num, CU_N_NUM},
    {"Max", CU_RED_MAX, weft__cu_types_num, CU_N_NUM},
    {"Min", CU_RED_MIN, weft__cu_types_num, CU_N_NUM},
    {"Prod", CU_RED_PROD, weft__cu_types_num, CU_N_NUM},
    {"All", CU_RED_ALL, NULL, 0},
    {"Any", CU_RED_ANY, NULL, 0},
};

weft_status_t *weft__cu_register_nn(const weft_registrar_t *reg) {
  static const char *const hm_axes[] = {"reduction_indices", NULL};
  static const char *const hm_dim[] = {"dimension", NULL};
  static const char *const hm_labels[] = {"labels", NULL};
  const weft_dtype_t *f = weft__cu_types_float, *num = weft__cu_types_num;
  const weft_cu_kernel_spec_t specs[] = {
      {.op = "MatMul", .compute = k_matmul, .type_attr = "T", .dtypes = f, .n_dtypes = CU_N_FLOAT},
      {.op = "BatchMatMulV2", .compute = k_batch_matmul, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "Softmax", .compute = k_softmax, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "LogSoftmax", .compute = k_softmax, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT, .user_data = &log_marker},
      {.op = "SoftmaxCrossEntropyWithLogits", .compute = k_xent, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "SparseSoftmaxCrossEntropyWithLogits", .compute = k_sparse_xent, .type_attr = "T",
       .dtypes = f, .n_dtypes = CU_N_FLOAT, .host_memory = hm_labels,
       .type_attr2 = "Tlabels", .dtypes2 = types_index, .n_dtypes2 = 2},
      {.op = "BiasAddGrad", .compute = k_bias_add_grad, .type_attr = "T", .dtypes = num,
       .n_dtypes = CU_N_NUM},
      {.op = "L2Loss", .compute = k_l2loss, .type_attr = "T", .dtypes = f, .n_dtypes = CU_N_FLOAT},
      {.op = "ArgMax", .compute = k_arg, .type_attr = "T", .dtypes = num, .n_dtypes = CU_N_NUM,
       .host_memory = hm_dim, .type_attr2 = "output_type", .dtypes2 = types_index,
       .n_dtypes2 = 2, .user_data = &max_marker},
      {.op = "ArgMin", .compute = k_arg, .type_attr = "T", .dtypes = num, .n_dtypes = CU_N_NUM,
       .host_memory = hm_dim, .type_attr2 = "output_type", .dtypes2 = types_index,
       .n_dtypes2 = 2},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &specs[i]));
  for (size_t i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++) {
    weft_cu_kernel_spec_t spec;
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
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &spec));
  }
  return NULL;
}
