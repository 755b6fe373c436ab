/* vk_image.c: the Vulkan image kernels, ResizeBilinear and ResizeNearestNeighbor of NHWC float32
 * images (resize.comp). The host side checks the arguments as the CPU kernels do (TensorFlow's
 * ImageResizerState, the same messages) and computes the scales in float, as they do, so that
 * both devices sample the same source pixels. Other dtypes stay on the CPU. */
#include "vk_internal.h"

typedef struct resize_push {
  uint32_t n, ih, iw, c, oh, ow;
  float hs, ws;
  uint32_t align, half_px, nearest;
} resize_push_t;

static float resize_scale(int64_t in, int64_t out, bool align) {
  return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

/* user_data: non-NULL for nearest neighbour. */
static weft_status_t *k_resize(weft_kernel_ctx_t *ctx, void *state) {
  bool align = weft__vk_attr_bool(ctx, "align_corners", false);
  bool half = weft__vk_attr_bool(ctx, "half_pixel_centers", false);
  if (half && align)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "If half_pixel_centers is True, align_corners must be False.");
  weft_tensor_view_t x, sv, y;
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__vk_input(ctx, 1, &sv));
  char buf[VK_SHAPE_STR_LEN];
  if (x.rank != 4)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "input must be 4-dimensional%s",
                          weft__vk_shape_str(x.rank, x.dims, buf, sizeof buf));
  if (sv.rank != 1)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s",
                          weft__vk_shape_str(sv.rank, sv.dims, buf, sizeof buf));
  if (sv.num_elements != 2)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "shape_t must have two elements%s",
                          weft__vk_shape_str(sv.rank, sv.dims, buf, sizeof buf));
  int64_t size[2], n = 0;
  WEFT_RETURN_IF_ERROR(weft__vk_read_indices(ctx, &sv, "size", size, 2, &n));
  int64_t b = x.dims[0], ih = x.dims[1], iw = x.dims[2], c = x.dims[3];
  if (ih > INT32_MAX || iw > INT32_MAX)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "input sizes must be between 0 and max int32");
  if (size[0] <= 0 || size[1] <= 0)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "output dimensions must be positive");
  if (c <= 0)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "image must have at least one channel");
  if (ih <= 0 || iw <= 0)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "input image must be of non-zero size");
  int64_t dims[4] = {b, size[0], size[1], c};
  WEFT_RETURN_IF_ERROR(weft__vk_output(ctx, 0, x.dtype, 4, dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &x, "image"));
  WEFT_RETURN_IF_ERROR(weft__vk_check_size(ctx, &y, "resized image"));
  resize_push_t p = {(uint32_t)y.num_elements, (uint32_t)ih, (uint32_t)iw, (uint32_t)c,
                     (uint32_t)size[0], (uint32_t)size[1], resize_scale(ih, size[0], align),
                     resize_scale(iw, size[1], align), align, half, state != NULL};
  void *bufs[2] = {x.data, y.data};
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_RESIZE, &p, sizeof p, bufs, 2,
                           weft__vk_groups(ctx, (uint64_t)y.num_elements), 1, 1);
}

static int nearest_marker;

weft_status_t *weft__vk_register_image(const weft_registrar_t *reg) {
  static const char *const size_host[] = {"size", NULL};
  WEFT_RETURN_IF_ERROR(weft__vk_register_typed(reg, "ResizeBilinear", k_resize, size_host, NULL,
                                               weft__vk_types_f, 1));
  return weft__vk_register_typed(reg, "ResizeNearestNeighbor", k_resize, size_host,
                                 &nearest_marker, weft__vk_types_f, 1);
}
