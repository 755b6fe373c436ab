/* cu_nn.c: the CUDA kernels that combine many elements per output: the tables of MatMul and
 * BatchMatMulV2 (cuBLAS), Softmax / LogSoftmax, the reductions Sum, Mean, Max, Min, Prod, All, Any
 * over any axes, BiasAddGrad (a Sum), L2Loss and ArgMax / ArgMin, whose host side is the GPU
 * backends' shared one (plugins/common/gpu_kernels.c, launching through cu_launch.c), and the
 * softmax cross-entropy losses, which are CUDA's own (device code in kernels/reduce.cu). Shapes
 * and argument checks are the shared ones (plugins/common), so the errors are the CPU kernels'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

#define H weft_pc_host

/* ---------------------------------------------------------------------------------------------
 * Cross-entropy */

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
 * Registration */

static int log_marker, max_marker;
static const weft_dtype_t types_index[] = {WEFT_DT_INT32, WEFT_DT_INT64};

static const weft_pc_reduce_op_t red_ops[] = {
    {"Sum", CU_RED_SUM, weft__cu_types_num, CU_N_NUM},
    {"Mean", CU_RED_MEAN, weft__cu_types_num, CU_N_NUM},
    {"Max", CU_RED_MAX, weft__cu_types_num, CU_N_NUM},
    {"Min", CU_RED_MIN, weft__cu_types_num, CU_N_NUM},
    {"Prod", CU_RED_PROD, weft__cu_types_num, CU_N_NUM},
    {"All", CU_RED_ALL, NULL, 0},
    {"Any", CU_RED_ANY, NULL, 0},
};

weft_status_t *weft__cu_register_nn(const weft_registrar_t *reg) {
  static const char *const hm_dim[] = {"dimension", NULL};
  static const char *const hm_labels[] = {"labels", NULL};
  const weft_dtype_t *f = weft__cu_types_float, *num = weft__cu_types_num;
  const weft_cu_kernel_spec_t specs[] = {
      {.op = "MatMul", .compute = weft_pc_k_matmul, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "BatchMatMulV2", .compute = weft_pc_k_batch_matmul, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "Softmax", .compute = weft_pc_k_softmax, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "LogSoftmax", .compute = weft_pc_k_softmax, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT, .user_data = &log_marker},
      {.op = "SoftmaxCrossEntropyWithLogits", .compute = k_xent, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "SparseSoftmaxCrossEntropyWithLogits", .compute = k_sparse_xent, .type_attr = "T",
       .dtypes = f, .n_dtypes = CU_N_FLOAT, .host_memory = hm_labels, .type_attr2 = "Tlabels",
       .dtypes2 = types_index, .n_dtypes2 = 2},
      {.op = "BiasAddGrad", .compute = weft_pc_k_bias_add_grad, .type_attr = "T", .dtypes = num,
       .n_dtypes = CU_N_NUM},
      {.op = "L2Loss", .compute = weft_pc_k_l2loss, .type_attr = "T", .dtypes = f,
       .n_dtypes = CU_N_FLOAT},
      {.op = "ArgMax", .compute = weft_pc_k_arg, .type_attr = "T", .dtypes = num,
       .n_dtypes = CU_N_NUM, .host_memory = hm_dim, .type_attr2 = "output_type",
       .dtypes2 = types_index, .n_dtypes2 = 2, .user_data = &max_marker},
      {.op = "ArgMin", .compute = weft_pc_k_arg, .type_attr = "T", .dtypes = num,
       .n_dtypes = CU_N_NUM, .host_memory = hm_dim, .type_attr2 = "output_type",
       .dtypes2 = types_index, .n_dtypes2 = 2},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &specs[i]));
  return weft_pc_register_reduce_ops(reg, weft__cu_register_typed, red_ops,
                                     sizeof red_ops / sizeof red_ops[0]);
}
