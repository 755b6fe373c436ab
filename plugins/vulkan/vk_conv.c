/* vk_conv.c: DepthwiseConv2dNative on Vulkan (float32, NHWC or NCHW, channel multiplier >= 1,
 * strides, dilations, SAME / VALID / EXPLICIT padding; depthwise.comp). The attribute and shape
 * checks are the CPU kernel's (plugins/cpu/cpu_conv_nd.c), with its messages, and the output size
 * and padding TensorFlow's GetWindowedOutputSizeVerbose (SAME puts the odd padding after). */
#include <string.h>

#include "vk_internal.h"

#define H weft_pc_host
#define LABEL "DepthwiseConv2dNative"

typedef struct dw_push {
  uint32_t total, h, w, c, oh, ow, mult, kh, kw, sh, sw, dh, dw;
  int32_t pt, pl;
  uint32_t cfirst;
} dw_push_t;

static bool attr_is(weft_kernel_ctx_t *ctx, const char *name, const char *value,
                    const char *dflt) {
  const char *s = NULL;
  size_t len = 0;
  weft_status_t *st = H->attr_string(H->kernel_attrs(ctx), name, &s, &len);
  if (st != NULL) {
    H->status_free(st);
    s = dflt;
  }
  return s != NULL && strcmp(s, value) == 0;
}

/* The two spatial values of list attr `name` (4 values, 1 for batch and channels) into out. */
static weft_status_t *spatial_list(weft_kernel_ctx_t *ctx, bool cfirst, const char *name,
                                   bool required, int64_t out[2]) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  out[0] = out[1] = 1;
  if (!H->attr_has(attrs, name)) {
    if (required)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "attribute %s is required", name);
    return NULL;
  }
  const int64_t *v = NULL;
  size_t n = 0;
  WEFT_RETURN_IF_ERROR(H->attr_int_list(attrs, name, &v, &n));
  if (n == 0 && !required) return NULL;
  if (n != 4)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Sliding window %s field must specify 4 dimensions", name);
  int ic = cfirst ? 1 : 3, s0 = cfirst ? 2 : 1;
  if (v[0] != 1 || v[ic] != 1)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                          "Current implementation does not yet support %s in the batch and "
                          "depth dimensions.", name);
  for (int i = 0; i < 2; i++) {
    if (v[s0 + i] < 1)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be positive, got %lld", name,
                            (long long)v[s0 + i]);
    out[i] = v[s0 + i];
  }
  return NULL;
}

static weft_status_t *need_rank4(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *t,
                                 const char *what) {
  if (t->rank == 4) return NULL;
  char s[VK_SHAPE_STR_LEN];
  return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s: %s must be 4-dimensional, got %s", LABEL,
                        what, weft__vk_shape_str(t->rank, t->dims, s, sizeof s));
}

static weft_status_t *k_depthwise(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  bool cfirst = attr_is(ctx, "data_format", "NCHW", "");
  int64_t s[2], d[2], k[2], in[2], out[2], pb[2];
  WEFT_RETURN_IF_ERROR(spatial_list(ctx, cfirst, "strides", true, s));
  WEFT_RETURN_IF_ERROR(spatial_list(ctx, cfirst, "dilations", false, d));
  weft_tensor_view_t x, f, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(need_rank4(ctx, &x, "input"));
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 1, &f));
  WEFT_RETURN_IF_ERROR(need_rank4(ctx, &f, "filter"));
  int64_t n = x.dims[0], c = x.dims[cfirst ? 1 : 3];
  in[0] = x.dims[cfirst ? 2 : 1];
  in[1] = x.dims[cfirst ? 3 : 2];
  k[0] = f.dims[0];
  k[1] = f.dims[1];
  int64_t mult = f.dims[3];
  if (c != f.dims[2])
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "%s: input and filter must have the same depth: %lld vs %lld", LABEL,
                          (long long)c, (long long)f.dims[2]);
  bool same = attr_is(ctx, "padding", "SAME", "VALID");
  bool expl = attr_is(ctx, "padding", "EXPLICIT", "VALID");
  const int64_t *ep = NULL;
  size_t nep = 0;
  if (expl) {
    WEFT_RETURN_IF_ERROR(H->attr_int_list(H->kernel_attrs(ctx), "explicit_paddings", &ep, &nep));
    if (nep != 8)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "explicit_paddings attribute must contain 8 values, but got: %zu",
                            nep);
    for (size_t i = 0; i < nep; i++)
      if (ep[i] < 0)
        return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                              "All elements of explicit_paddings must be nonnegative");
  }
  for (int i = 0; i < 2; i++) {
    int64_t eff = (k[i] - 1) * d[i] + 1;
    if (same) {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t need = (out[i] - 1) * s[i] + eff - in[i];
      pb[i] = need < 0 ? 0 : need / 2;
      continue;
    }
    int dim = (cfirst ? 2 : 1) + i;
    int64_t before = expl ? ep[2 * dim] : 0, after = expl ? ep[2 * dim + 1] : 0;
    int64_t span = in[i] + before + after - eff;
    if ((span + s[i]) / s[i] < 0)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Computed output size would be negative: %lld [input_size: %lld, "
                            "effective_filter_size: %lld, stride: %lld]",
                            (long long)((span + s[i]) / s[i]), (long long)in[i], (long long)eff,
                            (long long)s[i]);
    out[i] = (span + s[i]) / s[i];
    pb[i] = before;
  }
  int64_t ydims[4] = {n, out[0], out[1], c * mult};
  if (cfirst) {
    ydims[1] = c * mult;
    ydims[2] = out[0];
    ydims[3] = out[1];
  }
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, 4, ydims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, "input"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &f, "filter"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &y, "output"));
  /* The shader's window arithmetic is 32-bit (signed for the padded coordinates). */
  for (int i = 0; i < 2; i++)
    if ((out[i] - 1) * s[i] + (k[i] - 1) * d[i] >= INT32_MAX || pb[i] >= INT32_MAX ||
        in[i] >= INT32_MAX)
      return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                            "%s on Vulkan: a window spans more than 2^31 positions", LABEL);
  dw_push_t p = {(uint32_t)y.num_elements, (uint32_t)in[0], (uint32_t)in[1], (uint32_t)c,
                 (uint32_t)out[0], (uint32_t)out[1], (uint32_t)mult, (uint32_t)k[0],
                 (uint32_t)k[1], (uint32_t)s[0], (uint32_t)s[1], (uint32_t)d[0], (uint32_t)d[1],
                 (int32_t)pb[0], (int32_t)pb[1], cfirst};
  void *bufs[3] = {x.data, f.data, y.data};
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_DEPTHWISE, &p, sizeof p, bufs, 3,
                           weft__vk_groups(ctx, (uint64_t)y.num_elements), 1, 1);
}

weft_status_t *weft__vk_register_conv(const weft_registrar_t *reg) {
  return weft__vk_register_typed(reg, LABEL, k_depthwise, NULL, NULL, weft__vk_types_f, 1);
}
