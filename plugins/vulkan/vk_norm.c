/* vk_norm.c: FusedBatchNorm, FusedBatchNormV2 and FusedBatchNormV3 on Vulkan (float32 x, scale,
 * offset, mean and variance; NHWC, NCHW, NDHWC, NCDHW), training and inference, with
 * exponential_avg_factor, following tensorflow/core/kernels/fused_batch_norm_op.cc as the CPU
 * kernel does (plugins/cpu/cpu_norm.c: the same checks and messages, the same reported
 * statistics). The sums run in float with compensation (the CPU's run in double). A half or
 * bfloat16 x has no kernel here, so placement keeps such nodes on the CPU. */
#include <string.h>

#include "vk_internal.h"

#define BN_STATS 0u
#define BN_COPY2 1u
#define BN_APPLY 2u
#define BN_OUT 3u

typedef struct bn_push {
  uint32_t mode, outer, c, inner;
  uint32_t off, which, blend, empty;
  float eps, factor, adjust;
} bn_push_t;

static weft_status_t *bn_run(weft_kernel_ctx_t *ctx, const bn_push_t *p, void *a, void *b, void *s,
                             uint64_t items, bool per_channel_group) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  uint32_t groups = weft__vk_groups(ctx, items);
  if (per_channel_group)
    groups = items > weft__vk_max_groups(dev) ? weft__vk_max_groups(dev) : (uint32_t)items;
  void *bufs[3] = {a, b, s};
  return weft__vk_dispatch(dev, VK_SH_BATCH_NORM, p, sizeof *p, bufs, 3, groups, 1, 1);
}

/* user_data non-NULL: V3 (a sixth output, reserve_space_3, a scalar 0 as on the CPU). */
static weft_status_t *k_fused_bn(weft_kernel_ctx_t *ctx, void *state) {
  static const char *const names[4] = {"scale", "offset", "mean", "variance"};
  weft_tensor_view_t x, prm[4], y, o[5];
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  for (int i = 0; i < 4; i++) WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, i + 1, &prm[i]));
  const char *fmt = NULL;
  size_t flen = 0;
  weft_status_t *st = weft_pc_host->attr_string(weft_pc_host->kernel_attrs(ctx), "data_format",
                                                &fmt, &flen);
  if (st != NULL) {
    weft_pc_host->status_free(st);
    fmt = "NHWC";
    flen = 4;
  }
  int rank = flen == 5 ? 5 : 4;
  bool cfirst = flen > 1 && fmt[1] == 'C';
  char buf[VK_SHAPE_STR_LEN];
  if (x.rank != rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "input must be %d-dimensional%s", rank,
                          weft__vk_shape_str(x.rank, x.dims, buf, sizeof buf));
  for (int i = 0; i < 4; i++)
    if (prm[i].rank != 1)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be 1-dimensional%s",
                            i == 2 ? "estimated_mean" : i == 3 ? "estimated_variance" : names[i],
                            weft__vk_shape_str(prm[i].rank, prm[i].dims, buf, sizeof buf));
  bool training = weft__vk_attr_bool(ctx, "is_training", true);
  float eps = weft__vk_attr_float(ctx, "epsilon", 0.0001f);
  float factor = weft__vk_attr_float(ctx, "exponential_avg_factor", 1.0f);
  int64_t C = x.dims[cfirst ? 1 : rank - 1];
  bool blend = training && factor != 1.0f;
  int checked = !training || blend ? 4 : 2; /* the given statistics are read only then */
  for (int i = 0; i < checked; i++)
    if (prm[i].dims[0] != C)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "%s must have the same number of elements as the channels of x, got "
                            "%lld and %lld", names[i], (long long)prm[i].dims[0], (long long)C);
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  for (int i = 0; i < 4; i++)
    WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, i + 1, prm[0].dtype, 1, &C, &o[i]));
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  if (state != NULL) {
    WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 5, prm[0].dtype, 0, NULL, &o[4]));
    WEFT_RETURN_IF_ERROR(weft__vk_fill(dev, o[4].data, sizeof(float), 0));
  }
  if (C == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, "x"));
  int64_t inner = 1;
  if (cfirst)
    for (int d = 2; d < rank; d++) inner *= x.dims[d];
  int64_t rest = x.num_elements / C;
  bn_push_t p = {.outer = (uint32_t)(rest / inner), .c = (uint32_t)C, .inner = (uint32_t)inner,
                 .blend = blend, .eps = eps, .factor = factor, .adjust = 1.0f};
  /* The given mean (even outputs) or variance (odd) that OUT blends with or passes on. */
  void *given[4] = {prm[2].data, prm[3].data, prm[2].data, prm[3].data};
  if (!training && !blend)
    for (int i = 0; i < 4; i++) given[i] = NULL; /* unread */
  if (x.num_elements == 0) {
    /* TensorFlow's empty batch: NaN statistics, or the given ones scaled by 1 - factor. */
    p.mode = BN_OUT;
    p.empty = 1;
    for (int i = 0; i < 4; i++)
      WEFT_RETURN_IF_ERROR(bn_run(ctx, &p, blend ? given[i] : NULL, o[i].data, NULL,
                                  (uint64_t)C, false));
    return NULL;
  }
  void *s = NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_scratch(ctx, sizeof(float) * 4 * (size_t)C, &s));
  if (training) {
    p.mode = BN_STATS;
    WEFT_RETURN_IF_ERROR(bn_run(ctx, &p, x.data, NULL, s, (uint64_t)C, true));
  } else {
    p.mode = BN_COPY2;
    p.off = 0;
    WEFT_RETURN_IF_ERROR(bn_run(ctx, &p, prm[2].data, prm[3].data, s, (uint64_t)C, false));
  }
  p.mode = BN_COPY2;
  p.off = 2 * (uint32_t)C;
  WEFT_RETURN_IF_ERROR(bn_run(ctx, &p, prm[0].data, prm[1].data, s, (uint64_t)C, false));
  p.mode = BN_APPLY;
  WEFT_RETURN_IF_ERROR(bn_run(ctx, &p, x.data, y.data, s, (uint64_t)x.num_elements, false));
  /* batch_mean, batch_variance (training: the unbiased variance, blended by the factor), then
   * the reserve spaces: the statistics that normalized, as they are. */
  double adjust = (double)rest / (double)(rest > 1 ? rest - 1 : 1);
  p.mode = BN_OUT;
  for (int i = 0; i < 4; i++) {
    p.which = (uint32_t)(i % 2);
    p.blend = i < 2 && blend;
    p.adjust = i == 1 && training ? (float)adjust : 1.0f;
    WEFT_RETURN_IF_ERROR(bn_run(ctx, &p, p.blend ? given[i] : NULL, o[i].data, s, (uint64_t)C,
                                false));
  }
  return NULL;
}

static int v3_marker;

weft_status_t *weft__vk_register_norm(const weft_registrar_t *reg) {
  const weft_dtype_t *f = weft__vk_types_f;
  WEFT_RETURN_IF_ERROR(
      weft__vk_register_typed(reg, "FusedBatchNorm", k_fused_bn, NULL, NULL, f, 1));
  const weft_type_constraint_t c[] = {{"T", f, 1}, {"U", f, 1}};
  WEFT_RETURN_IF_ERROR(
      weft__vk_register_full(reg, "FusedBatchNormV2", c, 2, NULL, k_fused_bn, NULL));
  return weft__vk_register_full(reg, "FusedBatchNormV3", c, 2, NULL, k_fused_bn, &v3_marker);
}
