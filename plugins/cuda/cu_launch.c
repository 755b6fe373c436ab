/* cu_launch.c: the CUDA backend's launch table (plugins/common/gpu_kernels.h): the device steps of
 * the kernels the GPU backends share, each one launch of kernels/elementwise.cu, reduce.cu or
 * movement.cu on the kernel's compute stream, or a cuBLAS call. The shared drivers decide what to
 * launch; these only translate to the CUDA kernels' codes and geometry.
 *
 * MatMul goes through cuBLAS, which is column-major: a row-major matrix is its transpose there,
 * so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands swapped. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "cu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Elementwise */

static weft_status_t *cu_unary(weft_kernel_ctx_t *ctx, int op, double alpha,
                               const weft_tensor_view_t *x, const weft_tensor_view_t *y,
                               const char *what) {
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_unary(s, op, (weft_cu_dt_t)weft__cu_dt(x->dtype), x->data,
                                            y->data, x->num_elements, alpha),
                           what);
}

static weft_status_t *cu_binary(weft_kernel_ctx_t *ctx, int op, double alpha, weft_dtype_t dtype,
                                const weft_pc_bcast_t *bc, const void *x, const void *y, void *z,
                                const char *what) {
  weft_cu_geom_t g;
  weft__cu_geom(bc, &g);
  if (g.n == 0) return NULL;
  int dt = weft__cu_dt(dtype);
  if (dt < 0)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CUDA kernel for %s", what,
                         weft_pc_dtype_name(dtype));
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_binary(s, op, (weft_cu_dt_t)dt, &g, x, y, z, alpha),
                           what);
}

static weft_status_t *cu_select(weft_kernel_ctx_t *ctx, const weft_pc_bcast_t *bc,
                                weft_dtype_t dtype, const void *c, const void *t, const void *e,
                                void *z, const char *what) {
  weft_cu_geom_t g;
  weft__cu_geom(bc, &g);
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_select(s, weft_pc_dtype_size(dtype), &g, c, t, e, z),
                           what);
}

static weft_status_t *cu_cast(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                              const weft_tensor_view_t *y) {
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(
      ctx,
      weft__cu_k_cast(s, (weft_cu_dt_t)weft__cu_dt(x->dtype), (weft_cu_dt_t)weft__cu_dt(y->dtype),
                      x->data, y->data, x->num_elements),
      "Cast");
}

static weft_status_t *cu_fill_bool(weft_kernel_ctx_t *ctx, void *dst, bool value) {
  const uint8_t v = value;
  return weft__cu_fill(ctx, dst, WEFT_DT_BOOL, 1, &v);
}

static weft_status_t *cu_zero(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v) {
  const uint64_t zero = 0;
  return weft__cu_fill(ctx, v->data, v->dtype, v->num_elements, &zero);
}

static weft_status_t *cu_gather(weft_kernel_ctx_t *ctx, void *out, const void *in,
                                weft_dtype_t dtype, int rank, const int64_t *dims,
                                const int64_t *strides) {
  return weft__cu_copy_strided(ctx, out, 0, NULL, in, 0, strides, dtype, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions: [R] and [K,R] reduce a row per block, or in two passes for few long rows; [R,K]
 * and [K,R,K] one output per thread along the columns. */

static weft_status_t *cu_reduce_rows(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                     weft_dtype_t dtype, const void *x, void *y, int64_t rows,
                                     int64_t len, int64_t count) {
  void *partial = NULL;
  WEFT_RETURN_IF_ERROR(weft__cu_scratch(ctx, weft__cu_reduce_partial_bytes(rows, len), &partial));
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_reduce_rows(s, op->code, (weft_cu_dt_t)weft__cu_dt(dtype), x,
                                                  y, rows, len, count, partial),
                           op->name);
}

static weft_status_t *cu_reduce_cols(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                     weft_dtype_t dtype, const void *x, void *y, int64_t outer,
                                     int64_t mid, int64_t inner, int64_t count) {
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_reduce_cols(s, op->code, (weft_cu_dt_t)weft__cu_dt(dtype), x,
                                                  y, outer, mid, inner, count),
                           op->name);
}

/* Every output folds in one element: Mean's count is 1, and the rest are that element; a row
 * reduction of length 1 does it with the right finishing. */
static weft_status_t *cu_reduce_single(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
                                       const weft_tensor_view_t *x, const weft_tensor_view_t *y,
                                       int64_t count) {
  return cu_reduce_rows(ctx, op, x->dtype, x->data, y->data, x->num_elements, 1, count);
}

static weft_status_t *cu_reduce_identity(weft_kernel_ctx_t *ctx, const weft_pc_reduce_op_t *op,
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
      if (is_f)
        v.f = 1.0f;
      else if (is_d)
        v.d = 1.0;
      else if (is_i)
        v.i = 1;
      else
        v.l = 1;
      break;
    case CU_RED_MAX:
      if (is_f)
        v.f = -INFINITY;
      else if (is_d)
        v.d = -INFINITY;
      else if (is_i)
        v.i = INT32_MIN;
      else
        v.l = INT64_MIN;
      break;
    case CU_RED_MIN:
      if (is_f)
        v.f = INFINITY;
      else if (is_d)
        v.d = INFINITY;
      else if (is_i)
        v.i = INT32_MAX;
      else
        v.l = INT64_MAX;
      break;
    case CU_RED_MEAN:
      if (is_f)
        v.f = NAN;
      else if (is_d)
        v.d = NAN;
      break;
    case CU_RED_ALL:
      v.b = 1;
      break;
    default:
      break; /* Sum, Any, L2: zero */
  }
  return weft__cu_fill(ctx, y->data, y->dtype, y->num_elements, &v);
}

static weft_status_t *cu_arg(weft_kernel_ctx_t *ctx, bool is_max, const weft_pc_arg_t *a,
                             const weft_tensor_view_t *y) {
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(
      ctx,
      weft__cu_k_arg(s, is_max, (weft_cu_dt_t)weft__cu_dt(a->x.dtype), a->x.data, y->data,
                     a->out_dtype == WEFT_DT_INT64, a->outer, a->n, a->inner),
      is_max ? "ArgMax" : "ArgMin");
}

/* ---------------------------------------------------------------------------------------------
 * Softmax, MatMul */

static weft_status_t *cu_softmax(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                 const weft_tensor_view_t *y, int64_t rows, int64_t cols,
                                 bool log_softmax) {
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx,
                           weft__cu_k_softmax(s, (weft_cu_dt_t)weft__cu_dt(x->dtype), x->data,
                                              y->data, rows, cols, log_softmax),
                           log_softmax ? "LogSoftmax" : "Softmax");
}

/* `batches` products C_i = op(A_i) op(B_i), C_i dense [m, n] at c + i * m * n, A_i at
 * a + i * stride_a, B_i at b + i * stride_b (elements; a stride of 0 repeats the matrix). */
static weft_status_t *gemm(weft_kernel_ctx_t *ctx, weft_dtype_t dtype, const void *a, const void *b,
                           void *c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                           int64_t batches, int64_t stride_a, int64_t stride_b) {
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
    return weft_pc_error(ctx,
                         st == CUBLAS_STATUS_ALLOC_FAILED ? WEFT_RESOURCE_EXHAUSTED : WEFT_INTERNAL,
                         "%s: cuBLAS gemm of %lld x %lld x %lld failed: %s (status %d)",
                         weft__cu_device_name(dev), (long long)m, (long long)k, (long long)n,
                         blas->status_string != NULL ? blas->status_string(st) : "?", (int)st);
  return NULL;
}

static weft_status_t *cu_matmul(weft_kernel_ctx_t *ctx, weft_dtype_t dtype, const void *a,
                                const void *b, void *c, int64_t m, int64_t n, int64_t k, bool ta,
                                bool tb, int64_t batches, int64_t stride_a, int64_t stride_b,
                                int64_t off_a, int64_t off_b, int64_t off_c) {
  size_t es = weft_pc_dtype_size(dtype);
  const char *pa = (const char *)a + (size_t)off_a * es;
  const char *pb = (const char *)b + (size_t)off_b * es;
  char *pc = (char *)c + (size_t)off_c * es;
  return gemm(ctx, dtype, pa, pb, pc, m, n, k, ta, tb, batches, stride_a, stride_b);
}

/* ---------------------------------------------------------------------------------------------
 * The table */

static const weft_pc_reduce_op_t sum_op = {"BiasAddGrad", CU_RED_SUM, NULL, 0};
static const weft_pc_reduce_op_t l2_op = {"L2Loss", CU_RED_L2, NULL, 0};

const weft_pc_launch_t weft__cu_launch = {
    .device = "CUDA",
    .dt = weft__cu_dt,
    .check = NULL, /* the kernels index with 64 bits where 32 do not fit: no size limit */
    .unary = cu_unary,
    .binary = cu_binary,
    .select = cu_select,
    .cast = cu_cast,
    .fill_bool = cu_fill_bool,
    .zero = cu_zero,
    .copy = weft__cu_copy_d2d,
    .scratch = weft__cu_scratch,
    .copy_strided = weft__cu_copy_strided,
    .gather = cu_gather,
    .reduce_rows = cu_reduce_rows,
    .reduce_cols = cu_reduce_cols,
    .reduce_single = cu_reduce_single,
    .reduce_identity = cu_reduce_identity,
    .arg = cu_arg,
    .softmax = cu_softmax,
    .matmul = cu_matmul,
    .bin_add = CU_BIN_ADD,
    .bin_eq = CU_BIN_EQ,
    .bin_ne = CU_BIN_NE,
    .bin_first_bool_out = CU_BIN_FIRST_BOOL_OUT,
    .un_first_bool_out = CU_UN_FIRST_BOOL_OUT,
    .sum_op = &sum_op,
    .l2_op = &l2_op,
};
