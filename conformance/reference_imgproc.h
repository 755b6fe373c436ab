/* reference_imgproc.h: the double-precision references of TensorFlow's image-processing ops
 * (reference_imgproc.c), used by cases_imgproc.c. Sampling positions (scales, source
 * coordinates) are computed in float32 as TensorFlow defines them; the values are interpolated
 * in double. Each returns a new array the caller frees. */
#ifndef WEFT_CONFORMANCE_REFERENCE_IMGPROC_H
#define WEFT_CONFORMANCE_REFERENCE_IMGPROC_H

#include "reference.h"

typedef enum cf_resize_kind {
  CF_RESIZE_BILINEAR,
  CF_RESIZE_NEAREST,
  CF_RESIZE_BICUBIC,
  CF_RESIZE_AREA,
} cf_resize_kind_t;

/* images [b, h, w, c] -> [b, oh, ow, c] (float32, or the input's dtype for nearest). */
cf_array_t *cf_ref_resize(cf_resize_kind_t kind, const cf_array_t *x, int64_t oh, int64_t ow,
                          bool align_corners, bool half_pixel_centers);
/* ResizeBilinearGrad / ResizeNearestNeighborGrad / ResizeBicubicGrad: the adjoint of
 * cf_ref_resize (kind bilinear, nearest or bicubic) applied to grads [b, oh, ow, c], giving
 * [b, ih, iw, c] in out_dtype. */
cf_array_t *cf_ref_resize_grad(cf_resize_kind_t kind, const cf_array_t *grads, int64_t ih,
                               int64_t iw, bool align_corners, bool half_pixel_centers,
                               weft_dtype_t out_dtype);
/* CropAndResize: crops [n, ch, cw, depth] in float32. */
cf_array_t *cf_ref_crop_and_resize(const cf_array_t *image, const cf_array_t *boxes,
                                   const cf_array_t *box_ind, int64_t ch, int64_t cw,
                                   bool nearest, double extrapolation);
/* CropAndResizeGradImage: the adjoint of cf_ref_crop_and_resize applied to grads
 * [n, ch, cw, depth], giving an image of image_size ([4]) in out_dtype. */
cf_array_t *cf_ref_crop_grad_image(const cf_array_t *grads, const cf_array_t *boxes,
                                   const cf_array_t *box_ind, const int64_t *image_size,
                                   bool nearest, weft_dtype_t out_dtype);
/* CropAndResizeGradBoxes: d sum(grads * crops) / d boxes for bilinear crops, [n, 4] float32. */
cf_array_t *cf_ref_crop_grad_boxes(const cf_array_t *grads, const cf_array_t *image,
                                   const cf_array_t *boxes, const cf_array_t *box_ind);
/* RGBToHSV (to_hsv) or HSVToRGB over the last dimension (3). */
cf_array_t *cf_ref_rgb_hsv(const cf_array_t *x, bool to_hsv);
/* AdjustHue (delta) or AdjustSaturation (scale). */
cf_array_t *cf_ref_adjust_hue_sat(const cf_array_t *x, bool hue, double f);
/* AdjustContrastv2 (v1 false: output in x's dtype) or AdjustContrast (v1: float32 output clamped
 * to [lo, hi]). */
cf_array_t *cf_ref_adjust_contrast(const cf_array_t *x, double factor, bool v1, double lo,
                                   double hi);
/* ExtractImagePatches with ksizes, strides and rates over (rows, cols). */
cf_array_t *cf_ref_extract_patches(const cf_array_t *x, const int64_t *k, const int64_t *s,
                                   const int64_t *r, bool same);
/* NonMaxSuppression: *selected (int32 [M]), *scores_out (scores' dtype, may be NULL) and the
 * number of valid outputs. */
void cf_ref_nms(const cf_array_t *boxes, const cf_array_t *scores, int64_t max_out,
                double iou_threshold, double score_threshold, double sigma, bool pad,
                cf_array_t **selected, cf_array_t **scores_out, int64_t *n_valid);

/* DrawBoundingBoxes (colors NULL: TensorFlow's default table of 10) or V2: boxes [b, n, 4]. */
cf_array_t *cf_ref_draw_boxes(const cf_array_t *images, const cf_array_t *boxes,
                              const cf_array_t *colors);

#endif /* WEFT_CONFORMANCE_REFERENCE_IMGPROC_H */
