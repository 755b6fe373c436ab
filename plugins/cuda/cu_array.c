/* cu_array.c: CUDA kernels that move elements without arithmetic, each a strided copy
 * (kernels/movement.cu): Transpose, BroadcastTo, Slice, Tile, Split, SplitV, Unpack, ConcatV2,
 * Pack and Pad (a fill, then the input copied inside); and the registrations of Shape, ShapeN,
 * Size and Rank, whose shared kernels write host-memory outputs so that shape arithmetic never
 * downloads the tensor. Shape arguments arrive in host memory. The kernels, their shapes and
 * argument checks are the ones every plugin shares (plugins/common), so the errors are the CPU
 * kernels'; the copies they need are queued here. Every element size moves, bools included. */
#include <string.h>

#include "cu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * The device steps of the shared kernels (plugins/common/array_kernels.c) */

/* Transpose, BroadcastTo, Slice: one strided gather. */
static weft_status_t *array_gather(weft_kernel_ctx_t *ctx, const weft_pc_view_t *v,
                                   const weft_tensor_view_t *y, const char *op) {
  (void)op;
  return weft__cu_copy_strided(ctx, y->data, 0, NULL, v->x.data, v->base, v->strides, v->x.dtype,
                               v->rank, v->dims);
}

/* ConcatV2, Concat, Pack: input i, viewed with the output's rank (a size-1 dim at the axis when
 * stacking), goes to the output from position at_i along the axis. */
static weft_status_t *array_concat(weft_kernel_ctx_t *ctx, const weft_pc_concat_t *c,
                                   const weft_tensor_view_t *y, const char *op) {
  (void)op;
  return weft_pc_concat_strided(ctx, c, y, weft__cu_copy_strided);
}

/* Split, SplitV, Unpack: part i of the input along the axis into output i. */
static weft_status_t *array_split(weft_kernel_ctx_t *ctx, const weft_pc_split_t *p,
                                  const weft_tensor_view_t *ys) {
  return weft_pc_split_strided(ctx, p, ys, weft__cu_copy_strided);
}

static const weft_pc_array_ops_t array_ops = {array_gather, array_concat, array_split};

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cu_register_array(const weft_registrar_t *reg) {
  static const char *const hm_perm[] = {"perm", NULL};
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_slice[] = {"begin", "size", NULL};
  static const char *const hm_tile[] = {"multiples", NULL};
  static const char *const hm_axis[] = {"axis", NULL};
  static const char *const hm_concat_dim[] = {"concat_dim", NULL};
  static const char *const hm_pad[] = {"paddings", NULL};
  static const char *const hm_out[] = {"output", NULL};
  static const char *const hm_split[] = {"split_dim", NULL};
  static const char *const hm_split_v[] = {"size_splits", "split_dim", NULL};
  const weft_dtype_t *all = weft__cu_types_all;
  const size_t n = CU_N_ALL;
  void *ops = (void *)&array_ops;
  const weft_cu_kernel_spec_t specs[] = {
      {.op = "Transpose", .compute = weft_pc_k_transpose, .type_attr = "T", .dtypes = all,
       .n_dtypes = n, .host_memory = hm_perm, .user_data = ops},
      {.op = "BroadcastTo", .compute = weft_pc_k_broadcast_to, .type_attr = "T", .dtypes = all,
       .n_dtypes = n, .host_memory = hm_shape, .user_data = ops},
      {.op = "Slice", .compute = weft_pc_k_slice, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_slice, .user_data = ops},
      {.op = "Tile", .compute = weft_pc_k_tile, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_tile},
      {.op = "ConcatV2", .compute = weft_pc_k_concat_v2, .type_attr = "T", .dtypes = all,
       .n_dtypes = n, .host_memory = hm_axis, .user_data = ops},
      {.op = "Concat", .compute = weft_pc_k_concat_v1, .type_attr = "T", .dtypes = all,
       .n_dtypes = n, .host_memory = hm_concat_dim, .user_data = ops},
      {.op = "Pack", .compute = weft_pc_k_pack, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .user_data = ops},
      {.op = "Pad", .compute = weft_pc_k_pad, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_pad},
      {.op = "Split", .compute = weft_pc_k_split, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_split, .user_data = ops},
      {.op = "SplitV", .compute = weft_pc_k_split_v, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_split_v, .user_data = ops},
      {.op = "Unpack", .compute = weft_pc_k_unpack, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .user_data = ops},
      {.op = "Shape", .compute = weft_pc_k_shape, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_out},
      {.op = "ShapeN", .compute = weft_pc_k_shape, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_out},
      {.op = "Size", .compute = weft_pc_k_size, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_out},
      {.op = "Rank", .compute = weft_pc_k_rank, .type_attr = "T", .dtypes = all, .n_dtypes = n,
       .host_memory = hm_out},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    WEFT_RETURN_IF_ERROR(weft__cu_register(reg, &specs[i]));
  return NULL;
}
