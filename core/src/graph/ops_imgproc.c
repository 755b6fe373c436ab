/* ops_imgproc.c: TensorFlow's image-processing ops (tensorflow/core/ops/image_ops.cc and
 * array_ops.cc for ExtractImagePatches): the resizes (ResizeBilinear, ResizeNearestNeighbor,
 * ResizeBicubic, ResizeArea) and the gradients of three (ResizeBilinearGrad,
 * ResizeNearestNeighborGrad, ResizeBicubicGrad), CropAndResize and its gradients
 * (CropAndResizeGradImage, CropAndResizeGradBoxes), the colour ops (RGBToHSV, HSVToRGB, AdjustHue,
 * AdjustSaturation, AdjustContrast, AdjustContrastv2), ExtractImagePatches, the
 * non-max-suppression family (NonMaxSuppression V1..V5) and DrawBoundingBoxes (V1, V2), with
 * TensorFlow's names, args, attrs, type constraints and defaults, and their shape functions. */
#include <string.h>

#include "ops_shape.h"

/* Resize*: images [batch, height, width, channels] and size [2] -> [batch, size0, size1, chans];
 * the new height and width are known when size is a constant. */
static weft_status_t *resize_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, size;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &size);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "images"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &size, 1, "size"));
  if (size.rank == 1 && size.dims[0] >= 0 && size.dims[0] != 2)
    return weft__sh_error(ctx, "size must have 2 elements, not %" G_GINT64_FORMAT, size.dims[0]);
  weft__shape_t out = weft__sh_unknown_dims(4);
  if (in.rank == 4) {
    out.dims[0] = in.dims[0];
    out.dims[3] = in.dims[3];
  }
  int64_t *v = NULL, n = 0;
  if (weft__sh_const_ints(ctx, 1, &v, &n, NULL)) {
    if (n == 2) {
      out.dims[1] = v[0];
      out.dims[2] = v[1];
    }
    g_free(v);
  }
  return weft__sh_output(ctx, 0, &out);
}

/* CropAndResize: image [b, h, w, d], boxes [n, 4], box_ind [n], crop_size [2] ->
 * [n, crop_h, crop_w, d]. */
static weft_status_t *crop_and_resize_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in, boxes, ind, size;
  weft__sh_input(ctx, 0, &in);
  weft__sh_input(ctx, 1, &boxes);
  weft__sh_input(ctx, 2, &ind);
  weft__sh_input(ctx, 3, &size);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "image"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &boxes, 2, "boxes"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &ind, 1, "box_ind"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &size, 1, "crop_size"));
  int64_t n = WEFT_DIM_UNKNOWN;
  if (boxes.rank == 2) {
    if (boxes.dims[1] >= 0 && boxes.dims[1] != 4)
      return weft__sh_error(ctx, "boxes must have 4 columns, not %" G_GINT64_FORMAT,
                            boxes.dims[1]);
    n = boxes.dims[0];
  }
  if (ind.rank == 1 && !weft__sh_merge_dim(n, ind.dims[0], &n))
    return weft__sh_error(ctx, "box_ind has %" G_GINT64_FORMAT " elements for %" G_GINT64_FORMAT
                          " boxes", ind.dims[0], boxes.dims[0]);
  weft__shape_t out = weft__sh_unknown_dims(4);
  out.dims[0] = n;
  if (in.rank == 4) out.dims[3] = in.dims[3];
  int64_t *v = NULL, nv = 0;
  if (weft__sh_const_ints(ctx, 3, &v, &nv, NULL)) {
    if (nv == 2) {
      out.dims[1] = v[0];
      out.dims[2] = v[1];
    }
    g_free(v);
  }
  return weft__sh_output(ctx, 0, &out);
}

/* The colour ops keep the image's shape; the scalar factor is checked when known. */
static weft_status_t *image_with_scalar_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 3, "images"));
  return weft__sh_output(ctx, 0, &in);
}

static weft_status_t *rgb_hsv_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank_at_least(ctx, &in, 1, "images"));
  if (in.rank >= 1 && in.dims[in.rank - 1] >= 0 && in.dims[in.rank - 1] != 3)
    return weft__sh_error(ctx, "the last dimension of images must be 3, not %" G_GINT64_FORMAT,
                          in.dims[in.rank - 1]);
  return weft__sh_output(ctx, 0, &in);
}

/* ExtractImagePatches: [b, rows, cols, d] -> [b, out_rows, out_cols, kr * kc * d]. */
static weft_status_t *extract_patches_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "images"));
  const int64_t *k = NULL, *s = NULL, *r = NULL;
  size_t nk = 0, ns = 0, nr = 0;
  weft__sh_attr_int_list(ctx, "ksizes", &k, &nk);
  weft__sh_attr_int_list(ctx, "strides", &s, &ns);
  weft__sh_attr_int_list(ctx, "rates", &r, &nr);
  if (nk != 4 || ns != 4 || nr != 4)
    return weft__sh_error(ctx, "ksizes, strides and rates must have 4 values each");
  if (k[0] != 1 || k[3] != 1 || s[0] != 1 || s[3] != 1 || r[0] != 1 || r[3] != 1)
    return weft__sh_error(ctx, "ksizes, strides and rates are only supported across space");
  for (int i = 1; i < 3; i++)
    if (k[i] < 1 || s[i] < 1 || r[i] < 1)
      return weft__sh_error(ctx, "ksizes, strides and rates must be positive");
  weft__shape_t out = weft__sh_unknown_dims(4);
  if (in.rank == 4) {
    bool same = strcmp(weft__sh_attr_string(ctx, "padding", "VALID"), "SAME") == 0;
    out.dims[0] = in.dims[0];
    for (int i = 1; i < 3; i++) {
      int64_t eff = k[i] + (k[i] - 1) * (r[i] - 1), d = in.dims[i];
      if (d < 0) continue;
      out.dims[i] = same ? (d + s[i] - 1) / s[i] : (d - eff + s[i]) / s[i];
      if (out.dims[i] < 0) out.dims[i] = 0;
    }
    if (in.dims[3] >= 0) out.dims[3] = k[1] * k[2] * in.dims[3];
  }
  return weft__sh_output(ctx, 0, &out);
}

/* NonMaxSuppression*: selected_indices [M] (M = max_output_size when padded and known), then
 * selected_scores [M] (V5) and valid_outputs [] (V4, V5). */
static weft_status_t *nms_selected_shape(weft_shape_ctx_t *ctx, weft__shape_t *sel) {
  weft__shape_t boxes, scores;
  weft__sh_input(ctx, 0, &boxes);
  weft__sh_input(ctx, 1, &scores);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &boxes, 2, "boxes"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &scores, 1, "scores"));
  if (boxes.rank == 2 && boxes.dims[1] >= 0 && boxes.dims[1] != 4)
    return weft__sh_error(ctx, "boxes must have 4 columns, not %" G_GINT64_FORMAT,
                          boxes.dims[1]);
  if (boxes.rank == 2 && scores.rank == 1) {
    int64_t n;
    if (!weft__sh_merge_dim(boxes.dims[0], scores.dims[0], &n))
      return weft__sh_error(ctx, "scores has %" G_GINT64_FORMAT " elements for %" G_GINT64_FORMAT
                            " boxes", scores.dims[0], boxes.dims[0]);
  }
  *sel = weft__sh_unknown_dims(1);
  if (weft__sh_attr_bool(ctx, "pad_to_max_output_size", false)) {
    int64_t *v = NULL, n = 0;
    if (weft__sh_const_ints(ctx, 2, &v, &n, NULL)) {
      if (n == 1 && v[0] >= 0) sel->dims[0] = v[0];
      g_free(v);
    }
  }
  return weft__sh_output(ctx, 0, sel);
}

static weft_status_t *nms_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t sel;
  return nms_selected_shape(ctx, &sel);
}

static weft_status_t *nms4_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t sel, scalar = {.rank = 0};
  WEFT_RETURN_IF_ERROR(nms_selected_shape(ctx, &sel));
  return weft__sh_output(ctx, 1, &scalar);
}

static weft_status_t *nms5_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t sel, scalar = {.rank = 0};
  WEFT_RETURN_IF_ERROR(nms_selected_shape(ctx, &sel));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 1, &sel));
  return weft__sh_output(ctx, 2, &scalar);
}

/* DrawBoundingBoxes: the images' shape. */
/* ResizeBilinearGrad, ResizeBicubicGrad: grads [b, oh, ow, c] and original_image [b, h, w, c]
 * -> [b, h, w, c], its batch and channels those of grads. */
static weft_status_t *resize_bilinear_grad_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t grads, orig;
  weft__sh_input(ctx, 0, &grads);
  weft__sh_input(ctx, 1, &orig);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &grads, 4, "grads"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &orig, 4, "original_image"));
  weft__shape_t out = weft__sh_unknown_dims(4);
  if (orig.rank == 4) out.dims[1] = orig.dims[1], out.dims[2] = orig.dims[2];
  if (grads.rank == 4) out.dims[0] = grads.dims[0], out.dims[3] = grads.dims[3];
  return weft__sh_output(ctx, 0, &out);
}

/* CropAndResizeGradImage: the image's shape is the image_size input ([4]) when constant. */
static weft_status_t *crop_grad_image_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t size;
  weft__sh_input(ctx, 3, &size);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &size, 1, "image_size"));
  weft__shape_t out = weft__sh_unknown_dims(4);
  int64_t *v = NULL, nv = 0;
  if (weft__sh_const_ints(ctx, 3, &v, &nv, NULL)) {
    if (nv == 4) memcpy(out.dims, v, sizeof(int64_t) * 4);
    g_free(v);
  }
  return weft__sh_output(ctx, 0, &out);
}

/* CropAndResizeGradBoxes: one gradient per box coordinate, boxes' shape [n, 4]. */
static weft_status_t *crop_grad_boxes_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t boxes;
  weft__sh_input(ctx, 2, &boxes);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &boxes, 2, "boxes"));
  return weft__sh_output(ctx, 0, &boxes);
}

static weft_status_t *draw_boxes_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 4, "images"));
  return weft__sh_output(ctx, 0, &in);
}

#define RESIZE_TYPES "{int8, uint8, int16, uint16, int32, int64, half, float, double, bfloat16}"
#define NMS_TYPES "{half, float} = DT_FLOAT"

const weft_op_def_t weft__ops_imgproc[] = {
    WEFT__OP("ResizeBilinear", WEFT__SPECS("images: T", "size: int32"),
             WEFT__SPECS("resized_images: float"),
             WEFT__SPECS("T: " RESIZE_TYPES, "align_corners: bool = false",
                         "half_pixel_centers: bool = false"),
             0, resize_shape),
    WEFT__OP("ResizeNearestNeighbor", WEFT__SPECS("images: T", "size: int32"),
             WEFT__SPECS("resized_images: T"),
             WEFT__SPECS("T: " RESIZE_TYPES, "align_corners: bool = false",
                         "half_pixel_centers: bool = false"),
             0, resize_shape),
    /* The adjoints of the two resizes above, what their gradients are built from. */
    WEFT__OP("ResizeBilinearGrad", WEFT__SPECS("grads: float", "original_image: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {float, bfloat16, half, double}", "align_corners: bool = false",
                         "half_pixel_centers: bool = false"),
             0, resize_bilinear_grad_shape),
    /* grads [b, oh, ow, c] and size [2] -> [b, size0, size1, c]: resize_shape's rule. */
    WEFT__OP("ResizeNearestNeighborGrad", WEFT__SPECS("grads: T", "size: int32"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {uint8, int8, int32, half, float, double, bfloat16}",
                         "align_corners: bool = false", "half_pixel_centers: bool = false"),
             0, resize_shape),
    WEFT__OP("ResizeBicubicGrad", WEFT__SPECS("grads: float", "original_image: T"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {float, double}", "align_corners: bool = false",
                         "half_pixel_centers: bool = false"),
             0, resize_bilinear_grad_shape),
    WEFT__OP("ResizeBicubic", WEFT__SPECS("images: T", "size: int32"),
             WEFT__SPECS("resized_images: float"),
             WEFT__SPECS("T: " RESIZE_TYPES, "align_corners: bool = false",
                         "half_pixel_centers: bool = false"),
             0, resize_shape),
    WEFT__OP("ResizeArea", WEFT__SPECS("images: T", "size: int32"),
             WEFT__SPECS("resized_images: float"),
             WEFT__SPECS("T: " RESIZE_TYPES, "align_corners: bool = false"), 0, resize_shape),
    WEFT__OP("CropAndResize",
             WEFT__SPECS("image: T", "boxes: float", "box_ind: int32", "crop_size: int32"),
             WEFT__SPECS("crops: float"),
             WEFT__SPECS("T: {uint8, uint16, int8, int16, int32, int64, half, bfloat16, float, "
                         "double}",
                         "method: {'bilinear', 'nearest'} = 'bilinear'",
                         "extrapolation_value: float = 0"),
             0, crop_and_resize_shape),
    /* CropAndResize's gradients w.r.t. the image and the box coordinates. */
    WEFT__OP("CropAndResizeGradImage",
             WEFT__SPECS("grads: float", "boxes: float", "box_ind: int32", "image_size: int32"),
             WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {float, half, double}",
                         "method: {'bilinear', 'nearest'} = 'bilinear'"),
             0, crop_grad_image_shape),
    WEFT__OP("CropAndResizeGradBoxes",
             WEFT__SPECS("grads: float", "image: T", "boxes: float", "box_ind: int32"),
             WEFT__SPECS("output: float"),
             WEFT__SPECS("T: {uint8, uint16, int8, int16, int32, int64, half, float, double}",
                         "method: {'bilinear'} = 'bilinear'"),
             0, crop_grad_boxes_shape),
    WEFT__OP("RGBToHSV", WEFT__SPECS("images: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, bfloat16, float, double} = DT_FLOAT"), 0, rgb_hsv_shape),
    WEFT__OP("HSVToRGB", WEFT__SPECS("images: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, bfloat16, float, double} = DT_FLOAT"), 0, rgb_hsv_shape),
    WEFT__OP("AdjustHue", WEFT__SPECS("images: T", "delta: float"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {half, float} = DT_FLOAT"), 0, image_with_scalar_shape),
    WEFT__OP("AdjustSaturation", WEFT__SPECS("images: T", "scale: float"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: {half, float} = DT_FLOAT"), 0,
             image_with_scalar_shape),
    WEFT__OP("AdjustContrastv2", WEFT__SPECS("images: T", "contrast_factor: float"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: {half, float} = DT_FLOAT"), 0,
             image_with_scalar_shape),
    WEFT__OP("AdjustContrast",
             WEFT__SPECS("images: T", "contrast_factor: float", "min_value: float",
                         "max_value: float"),
             WEFT__SPECS("output: float"),
             WEFT__SPECS("T: {uint8, int8, int16, int32, int64, float, double}"), 0,
             image_with_scalar_shape),
    WEFT__OP("ExtractImagePatches", WEFT__SPECS("images: T"), WEFT__SPECS("patches: T"),
             WEFT__SPECS("ksizes: list(int) >= 4", "strides: list(int) >= 4",
                         "rates: list(int) >= 4",
                         "T: {bfloat16, half, float, double, int8, int16, int32, int64, uint8, "
                         "uint16, uint32, uint64, bool}",
                         "padding: {'SAME', 'VALID'}"),
             0, extract_patches_shape),
    WEFT__OP("NonMaxSuppression",
             WEFT__SPECS("boxes: float", "scores: float", "max_output_size: int32"),
             WEFT__SPECS("selected_indices: int32"), WEFT__SPECS("iou_threshold: float = 0.5"), 0,
             nms_shape),
    WEFT__OP("NonMaxSuppressionV2",
             WEFT__SPECS("boxes: T", "scores: T", "max_output_size: int32",
                         "iou_threshold: T_threshold"),
             WEFT__SPECS("selected_indices: int32"),
             WEFT__SPECS("T: " NMS_TYPES, "T_threshold: " NMS_TYPES), 0, nms_shape),
    WEFT__OP("NonMaxSuppressionV3",
             WEFT__SPECS("boxes: T", "scores: T", "max_output_size: int32",
                         "iou_threshold: T_threshold", "score_threshold: T_threshold"),
             WEFT__SPECS("selected_indices: int32"),
             WEFT__SPECS("T: " NMS_TYPES, "T_threshold: " NMS_TYPES), 0, nms_shape),
    WEFT__OP("NonMaxSuppressionV4",
             WEFT__SPECS("boxes: T", "scores: T", "max_output_size: int32",
                         "iou_threshold: T_threshold", "score_threshold: T_threshold"),
             WEFT__SPECS("selected_indices: int32", "valid_outputs: int32"),
             WEFT__SPECS("T: " NMS_TYPES, "T_threshold: " NMS_TYPES,
                         "pad_to_max_output_size: bool = false"),
             0, nms4_shape),
    WEFT__OP("NonMaxSuppressionV5",
             WEFT__SPECS("boxes: T", "scores: T", "max_output_size: int32", "iou_threshold: T",
                         "score_threshold: T", "soft_nms_sigma: T"),
             WEFT__SPECS("selected_indices: int32", "selected_scores: T", "valid_outputs: int32"),
             WEFT__SPECS("T: " NMS_TYPES, "pad_to_max_output_size: bool = false"), 0, nms5_shape),
    WEFT__OP("DrawBoundingBoxes", WEFT__SPECS("images: T", "boxes: float"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: {float, half} = DT_FLOAT"), 0,
             draw_boxes_shape),
    WEFT__OP("DrawBoundingBoxesV2", WEFT__SPECS("images: T", "boxes: float", "colors: float"),
             WEFT__SPECS("output: T"), WEFT__SPECS("T: {float, half} = DT_FLOAT"), 0,
             draw_boxes_shape),
    WEFT__OPS_END,
};
