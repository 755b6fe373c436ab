/* cases_imgproc.c: conformance cases of TensorFlow's image-processing ops: the four resizes
 * (upscale, downscale, identity, align_corners, half_pixel_centers, odd sizes, empty batch, every
 * registered dtype, TensorFlow's errors), the bilinear, nearest and bicubic ones' gradients over
 * the same sizes, CropAndResize (flipped and out-of-image boxes, extrapolation, nearest,
 * one-pixel crops) and its gradients w.r.t. image and boxes, RGBToHSV / HSVToRGB (grey pixels, primaries),
 * AdjustHue / AdjustSaturation / AdjustContrast(v2), ExtractImagePatches (SAME/VALID, strides,
 * rates), NonMaxSuppression V1..V5 (thresholds, ties, soft-NMS, padding, errors) and
 * DrawBoundingBoxes (V1, V2; boxes partly or wholly outside, inverted, 1/3/4 channels). */
#include <math.h>
#include <string.h>

#include "reference_imgproc.h"

static const weft_dtype_t resize_dtypes[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,  WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_UINT8, WEFT_DT_INT16,  WEFT_DT_UINT16, WEFT_DT_INT32,   WEFT_DT_INT64,
    WEFT_DT_INVALID};
static const weft_dtype_t resize_bilinear_grad_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE,
                                                           WEFT_DT_HALF, WEFT_DT_BFLOAT16,
                                                           WEFT_DT_INVALID};
static const weft_dtype_t resize_bicubic_grad_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE,
                                                          WEFT_DT_INVALID};
static const weft_dtype_t resize_nearest_grad_dtypes[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF, WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_UINT8, WEFT_DT_INT32, WEFT_DT_INVALID};
static const weft_dtype_t crop_dtypes[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,  WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_UINT8, WEFT_DT_INT16,  WEFT_DT_UINT16, WEFT_DT_INT32,   WEFT_DT_INT64,
    WEFT_DT_INVALID};
static const weft_dtype_t crop_grad_image_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,
                                                      WEFT_DT_INVALID};
static const weft_dtype_t crop_grad_boxes_dtypes[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,  WEFT_DT_INT8,  WEFT_DT_UINT8,
    WEFT_DT_INT16, WEFT_DT_UINT16, WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t half_float_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_HALF, WEFT_DT_INVALID};
static const weft_dtype_t contrast_dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT8,
                                               WEFT_DT_UINT8, WEFT_DT_INT16,  WEFT_DT_INT32,
                                               WEFT_DT_INT64, WEFT_DT_INVALID};
static const weft_dtype_t patch_dtypes[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL,  WEFT_DT_INVALID};

/* Image values for dt: [0, 1) floats (colour ops) or [lo, hi] clamped to integers. */
static cf_array_t *image(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims, double lo,
                         double hi) {
  if (dt == WEFT_DT_BOOL) {
    cf_gen_t g = {CF_GEN_BOOL, 0, 0};
    return cf_gen_array(rng, dt, rank, dims, g);
  }
  if (!cf_dtype_is_signed(dt) && lo < 0) lo = 0;
  return cf_gen_uniform(rng, dt, rank, dims, lo, hi);
}

static cf_array_t *size_vec(int64_t a, int64_t b) {
  int64_t v[2] = {a, b};
  return cf_array_ints(WEFT_DT_INT32, 2, v);
}

/* Float-output ops compare with float32's tolerance whatever their input dtype. */
static cf_tol_t float_out_tol(double factor) {
  return cf_tol_scale(cf_tol_default(WEFT_DT_FLOAT), factor);
}

/* ---------------------------------------------------------------------------------------------
 * Resizes */

typedef struct rs_spec {
  const char *name;
  int64_t in[4];
  int64_t oh, ow;
  bool align, half;
} rs_spec_t;

static const rs_spec_t resize_cases[] = {
    {"up_2x", {1, 3, 4, 2}, 6, 8, false, false},
    {"up_align", {2, 3, 4, 1}, 7, 5, true, false},
    {"up_half_pixel", {1, 4, 3, 3}, 9, 7, false, true},
    {"down", {1, 9, 8, 2}, 4, 3, false, false},
    {"down_align", {1, 9, 8, 2}, 4, 3, true, false},
    {"down_half_pixel", {2, 8, 9, 1}, 3, 5, false, true},
    {"identity", {1, 5, 6, 2}, 5, 6, false, false},
    {"to_1x1_align", {1, 4, 5, 1}, 1, 1, true, false},
    {"from_1x1", {1, 1, 1, 3}, 3, 2, false, false},
    {"odd_17x13_c5", {1, 17, 13, 5}, 11, 19, false, false},
    {"empty_batch", {0, 4, 4, 2}, 3, 5, false, false},
};

static void emit_resize(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_resize_kind_t kind = strcmp(op, "ResizeBilinear") == 0          ? CF_RESIZE_BILINEAR
                          : strcmp(op, "ResizeNearestNeighbor") == 0 ? CF_RESIZE_NEAREST
                          : strcmp(op, "ResizeBicubic") == 0         ? CF_RESIZE_BICUBIC
                                                                     : CF_RESIZE_AREA;
  for (size_t i = 0; i < G_N_ELEMENTS(resize_cases); i++) {
    const rs_spec_t *s = &resize_cases[i];
    if (kind == CF_RESIZE_AREA && s->half) continue; /* ResizeArea has no half_pixel_centers */
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = image(&rng, dt, 4, s->in, -50, 100);
    cf_case_expect(c, cf_ref_resize(kind, x, s->oh, s->ow, s->align, s->half));
    cf_case_input(c, x);
    cf_case_const_input(c, size_vec(s->oh, s->ow));
    if (s->align) cf_case_attr_bool(c, "align_corners", true);
    if (s->half) cf_case_attr_bool(c, "half_pixel_centers", true);
    if (kind == CF_RESIZE_NEAREST)
      c->tol = cf_tol_default(dt);
    else
      c->tol = float_out_tol(kind == CF_RESIZE_AREA ? 8 : 4), c->tol.atol = 1e-4;
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT) return;
  /* A size fed at run time (the shape is only known to the kernel). */
  {
    cf_case_t *c = cf_case_new(op, "size_fed", dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[4] = {1, 3, 3, 2};
    cf_array_t *x = image(&rng, dt, 4, d, -1, 1);
    cf_case_expect(c, cf_ref_resize(kind, x, 5, 2, false, false));
    cf_case_input(c, x);
    cf_case_input(c, size_vec(5, 2));
    c->tol = float_out_tol(8);
    c->tol.atol = 1e-5;
    cf_run_case(ctx, c);
  }
  typedef struct {
    const char *name;
    int64_t in[4];
    int rank;
    int64_t size[3];
    int nsize;
    bool align, half;
    const char *msg;
  } err_t;
  static const err_t errs[] = {
      {"err_zero_size", {1, 3, 3, 1}, 4, {0, 2}, 2, false, false,
       "output dimensions must be positive"},
      {"err_negative_size", {1, 3, 3, 1}, 4, {2, -1}, 2, false, false,
       "output dimensions must be positive"},
      {"err_empty_image", {1, 0, 3, 1}, 4, {2, 2}, 2, false, false,
       "input image must be of non-zero size"},
      {"err_align_and_half", {1, 3, 3, 1}, 4, {2, 2}, 2, true, true,
       "If half_pixel_centers is True, align_corners must be False."},
      {"err_rank3", {3, 3, 1}, 3, {2, 2}, 2, false, false, "input must be 4-dimensional"},
      {"err_size_3", {1, 3, 3, 1}, 4, {2, 2, 2}, 3, false, false,
       "shape_t must have two elements"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    const err_t *e = &errs[i];
    if (kind == CF_RESIZE_AREA && e->half) continue;
    cf_case_t *c = cf_case_new(op, e->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = image(&rng, dt, e->rank, e->in, -1, 1);
    cf_case_input(c, x);
    c->unknown_shape[0] = true;
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, e->nsize, e->size));
    c->unknown_shape[1] = true;
    if (e->align) cf_case_attr_bool(c, "align_corners", true);
    if (e->half) cf_case_attr_bool(c, "half_pixel_centers", true);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, e->msg);
    cf_run_case(ctx, c);
  }
}

/* ResizeBilinearGrad and ResizeBicubicGrad(grads: float, original_image: T) and
 * ResizeNearestNeighborGrad(grads: T, size): the resize cases run backwards, grads of the
 * resized shape in, the original's out. */
static void emit_resize_grad(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_resize_kind_t kind = strcmp(op, "ResizeNearestNeighborGrad") == 0 ? CF_RESIZE_NEAREST
                          : strcmp(op, "ResizeBicubicGrad") == 0       ? CF_RESIZE_BICUBIC
                                                                       : CF_RESIZE_BILINEAR;
  bool from_image = kind != CF_RESIZE_NEAREST; /* float grads and an original image */
  for (size_t i = 0; i < G_N_ELEMENTS(resize_cases); i++) {
    const rs_spec_t *s = &resize_cases[i];
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t gd[4] = {s->in[0], s->oh, s->ow, s->in[3]};
    cf_array_t *grads = image(&rng, from_image ? WEFT_DT_FLOAT : dt, 4, gd,
                              cf_dtype_is_float(dt) ? -1 : -3, cf_dtype_is_float(dt) ? 1 : 3);
    cf_case_expect(c, cf_ref_resize_grad(kind, grads, s->in[1], s->in[2], s->align, s->half, dt));
    cf_case_input(c, grads);
    if (from_image)
      cf_case_input(c, image(&rng, dt, 4, s->in, -1, 1));
    else
      cf_case_const_input(c, size_vec(s->in[1], s->in[2]));
    if (s->align) cf_case_attr_bool(c, "align_corners", true);
    if (s->half) cf_case_attr_bool(c, "half_pixel_centers", true);
    /* Sums of up to (in/out)^2 terms, the interpolation weights float32 whatever the dtype. */
    c->tol = cf_tol_scale(from_image && dt == WEFT_DT_DOUBLE ? cf_tol_default(WEFT_DT_FLOAT)
                                                           : cf_tol_default(dt), 8);
    if (cf_dtype_is_float(dt))
      c->tol.atol = dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE ? 1e-5 : 2e-2;
    cf_run_case(ctx, c);
  }
  cf_case_t *c = cf_case_new(op, "err_align_and_half", dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  int64_t d[4] = {1, 2, 2, 1};
  cf_case_input(c, image(&rng, from_image ? WEFT_DT_FLOAT : dt, 4, d, 0, 1));
  if (from_image)
    cf_case_input(c, image(&rng, dt, 4, d, 0, 1));
  else
    cf_case_const_input(c, size_vec(3, 3));
  cf_case_attr_bool(c, "align_corners", true);
  cf_case_attr_bool(c, "half_pixel_centers", true);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "If half_pixel_centers is True, align_corners must be False.");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * CropAndResize */

static void emit_crop_and_resize(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  typedef struct {
    const char *name;
    int64_t n_boxes, ch, cw;
    double boxes[12];
    int64_t ind[3];
    bool nearest;
    double extrap;
  } cr_t;
  static const cr_t cases[] = {
      {"inside", 2, 3, 4, {0.1, 0.2, 0.8, 0.9, 0, 0, 1, 1}, {0, 1}, false, 0},
      {"flipped_box", 1, 4, 3, {0.9, 0.8, 0.2, 0.1}, {1}, false, 0},
      {"outside_extrapolate", 2, 5, 5, {-0.5, -0.2, 1.3, 0.7, 0.2, 0.9, 1.5, 1.8}, {1, 0}, false,
       -3.5},
      {"one_pixel_crop", 2, 1, 1, {0.2, 0.2, 0.6, 0.9, 0, 0, 1, 1}, {0, 0}, false, 0},
      {"nearest", 3, 4, 6, {0, 0, 1, 1, 0.13, 0.27, 0.71, 0.93, -0.2, 0.1, 0.9, 1.3}, {1, 0, 1},
       true, 7},
      {"no_boxes", 0, 2, 2, {0}, {0}, false, 0},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const cr_t *s = &cases[i];
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[4] = {2, 5, 7, 3}, bd[2] = {s->n_boxes, 4};
    cf_array_t *x = image(&rng, dt, 4, d, -50, 100);
    cf_array_t *boxes = cf_array_new(WEFT_DT_FLOAT, 2, bd);
    for (int64_t k = 0; k < 4 * s->n_boxes; k++) boxes->v[k] = cf_round_to_dtype(WEFT_DT_FLOAT,
                                                                                 s->boxes[k]);
    cf_array_t *ind = cf_array_ints(WEFT_DT_INT32, s->n_boxes, s->ind);
    cf_case_expect(c, cf_ref_crop_and_resize(x, boxes, ind, s->ch, s->cw, s->nearest, s->extrap));
    cf_case_input(c, x);
    cf_case_input(c, boxes);
    cf_case_input(c, ind);
    cf_case_const_input(c, size_vec(s->ch, s->cw));
    if (s->nearest) cf_case_attr_string(c, "method", "nearest");
    if (s->extrap != 0) cf_case_attr_float(c, "extrapolation_value", s->extrap);
    c->tol = float_out_tol(8);
    c->tol.atol = 1e-4;
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT) return;
  static const struct {
    const char *name;
    int64_t ind, ch;
    weft_code_t code;
    const char *msg;
  } errs[] = {
      {"err_box_index_out_of_range", 2, 2, WEFT_OUT_OF_RANGE,
       "box_index has values outside [0, batch_size)"},
      {"err_negative_box_index", -1, 2, WEFT_OUT_OF_RANGE,
       "box_index has values outside [0, batch_size)"},
      {"err_zero_crop", 0, 0, WEFT_INVALID_ARGUMENT, "crop dimensions must be positive"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    cf_case_t *c = cf_case_new(op, errs[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[4] = {2, 3, 3, 1}, bd[2] = {1, 4};
    cf_case_input(c, image(&rng, dt, 4, d, 0, 1));
    cf_array_t *boxes = cf_array_new(WEFT_DT_FLOAT, 2, bd);
    boxes->v[2] = boxes->v[3] = 1;
    cf_case_input(c, boxes);
    cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, &errs[i].ind));
    cf_case_input(c, size_vec(errs[i].ch, 2));
    cf_case_expect_error(c, errs[i].code, errs[i].msg);
    cf_run_case(ctx, c);
  }
}

/* CropAndResizeGradImage and CropAndResizeGradBoxes: boxes inside, flipped, partly outside the
 * image and one-pixel crops, against the adjoint of the forward reference and the chain rule
 * through its bilinear samples. */
static void emit_crop_grads(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool boxes_grad = strcmp(op, "CropAndResizeGradBoxes") == 0;
  typedef struct {
    const char *name;
    int64_t n_boxes, ch, cw;
    double boxes[8];
    int64_t ind[2];
    bool nearest;
  } cg_t;
  static const cg_t cases[] = {
      {"inside", 2, 3, 4, {0.1, 0.2, 0.8, 0.9, 0.05, 0.03, 0.97, 0.98}, {0, 1}, false},
      {"flipped_box", 1, 4, 3, {0.9, 0.8, 0.2, 0.1}, {1}, false},
      {"outside", 2, 5, 5, {-0.5, -0.2, 1.3, 0.7, 0.2, 0.9, 1.5, 1.8}, {1, 0}, false},
      {"one_pixel_crop", 2, 1, 1, {0.2, 0.2, 0.6, 0.9, 0.1, 0.3, 0.5, 0.4}, {0, 0}, false},
      {"nearest", 2, 4, 6, {0.13, 0.27, 0.71, 0.93, -0.2, 0.1, 0.9, 1.3}, {1, 0}, true},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const cg_t *s = &cases[i];
    if (boxes_grad && s->nearest) continue; /* the boxes' gradient is bilinear only */
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[4] = {2, 5, 7, 3}, bd[2] = {s->n_boxes, 4}, gd[4] = {s->n_boxes, s->ch, s->cw, 3};
    cf_array_t *boxes = cf_array_new(WEFT_DT_FLOAT, 2, bd);
    for (int64_t k = 0; k < 4 * s->n_boxes; k++)
      boxes->v[k] = cf_round_to_dtype(WEFT_DT_FLOAT, s->boxes[k]);
    cf_array_t *ind = cf_array_ints(WEFT_DT_INT32, s->n_boxes, s->ind);
    cf_array_t *grads = cf_gen_uniform(&rng, WEFT_DT_FLOAT, 4, gd, -1, 1);
    cf_case_input(c, grads);
    if (boxes_grad) {
      cf_array_t *x = image(&rng, dt, 4, d, -5, 10);
      cf_case_expect(c, cf_ref_crop_grad_boxes(grads, x, boxes, ind));
      cf_case_input(c, x);
      cf_case_input(c, boxes);
      cf_case_input(c, ind);
      c->tol = float_out_tol(64);
      c->tol.atol = 1e-3;
    } else {
      cf_case_expect(c, cf_ref_crop_grad_image(grads, boxes, ind, d, s->nearest, dt));
      cf_case_input(c, boxes);
      cf_case_input(c, ind);
      cf_case_const_input(c, cf_array_ints(WEFT_DT_INT32, 4, d));
      cf_case_attr_type(c, "T", dt);
      if (s->nearest) cf_case_attr_string(c, "method", "nearest");
      c->tol = cf_tol_scale(dt == WEFT_DT_DOUBLE ? cf_tol_default(WEFT_DT_FLOAT)
                                                 : cf_tol_default(dt), 8);
      c->tol.atol = dt == WEFT_DT_HALF ? 1e-2 : 1e-5;
    }
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Colour ops */

/* Random pixels plus grey, black, white, primaries and pixels with two equal channels. */
static cf_array_t *pixels(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  cf_array_t *x = image(rng, dt, rank, dims, 0, 1);
  static const double special[] = {0.5, 0.5, 0.5, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1,
                                   0.25, 0.75, 0.75, 0.8, 0.8, 0.1, 0.3, 0.9, 0.3, 0.6, 0.2, 0.6};
  for (int64_t i = 0; i < x->n && i < (int64_t)G_N_ELEMENTS(special); i++)
    x->v[i] = cf_round_to_dtype(dt, special[i]);
  return x;
}

static void emit_rgb_hsv(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool to_hsv = strcmp(op, "RGBToHSV") == 0;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[4];
  } cases[] = {
      {"rank1", 1, {3}},           {"rank2", 2, {10, 3}},       {"rank3", 3, {4, 5, 3}},
      {"rank4", 4, {2, 7, 9, 3}}, {"empty", 3, {0, 4, 3}},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = pixels(&rng, dt, cases[i].rank, cases[i].dims);
    cf_case_expect(c, cf_ref_rgb_hsv(x, to_hsv));
    cf_case_input(c, x);
    c->tol = cf_tol_scale(c->tol, 4);
    c->tol.atol = fmax(c->tol.atol, dt == WEFT_DT_DOUBLE ? 1e-12 : c->tol.rtol);
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT) return;
  cf_case_t *c = cf_case_new(op, "err_4_channels", dt);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  int64_t d[2] = {2, 4};
  cf_case_input(c, image(&rng, dt, 2, d, 0, 1));
  c->unknown_shape[0] = true;
  cf_case_expect_error(c, WEFT_FAILED_PRECONDITION,
                       "input must have 3 channels but input only has 4 channels.");
  cf_run_case(ctx, c);
}

static void emit_adjust(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool hue = strcmp(op, "AdjustHue") == 0, sat = strcmp(op, "AdjustSaturation") == 0;
  bool v1 = strcmp(op, "AdjustContrast") == 0;
  static const struct {
    const char *name;
    int rank;
    int64_t dims[5];
    double f;
  } cases[] = {
      {"rank3", 3, {4, 5, 3}, 0.3},          {"rank4", 4, {2, 6, 7, 3}, -0.7},
      {"rank5", 5, {2, 2, 3, 4, 3}, 1.6},    {"zero", 3, {3, 3, 3}, 0},
      {"one", 3, {3, 4, 3}, 1},              {"big", 3, {5, 5, 3}, 2.35},
      {"empty", 4, {0, 3, 3, 3}, 0.5},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    bool colour = hue || sat;
    cf_array_t *x = colour ? pixels(&rng, dt, cases[i].rank, cases[i].dims)
                           : image(&rng, dt, cases[i].rank, cases[i].dims, -20, 100);
    double f = cases[i].f;
    if (colour)
      cf_case_expect(c, cf_ref_adjust_hue_sat(x, hue, hue ? f : fabs(f)));
    else
      cf_case_expect(c, cf_ref_adjust_contrast(x, f, v1, -5, 60));
    cf_case_input(c, x);
    cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, colour && sat ? fabs(f) : f));
    if (v1) {
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, -5));
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 60));
      c->tol = float_out_tol(8);
      c->tol.atol = 1e-4;
    } else if (!colour) {
      c->tol = cf_tol_scale(c->tol, dt == WEFT_DT_HALF ? 2 : 8);
      c->tol.atol = dt == WEFT_DT_HALF ? 0.1 : 1e-4;
    } else {
      c->tol = cf_tol_scale(c->tol, 4);
      c->tol.atol = dt == WEFT_DT_HALF ? 2e-3 : 2e-6;
    }
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT) return;
  {
    cf_case_t *c = cf_case_new(op, "err_rank2", dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[2] = {4, 3};
    cf_case_input(c, image(&rng, dt, 2, d, 0, 1));
    c->unknown_shape[0] = true;
    cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 0.5));
    if (v1) {
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 0));
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 1));
    }
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "input must be at least 3-D, got shape[4,3]");
    cf_run_case(ctx, c);
  }
  {
    cf_case_t *c = cf_case_new(op, "err_factor_not_scalar", dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[3] = {2, 2, 3}, two = 2;
    cf_case_input(c, image(&rng, dt, 3, d, 0, 1));
    double fv[2] = {0.5, 0.5};
    cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, two, fv));
    c->unknown_shape[1] = true;
    if (v1) {
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 0));
      cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 1));
    }
    const char *msg = hue   ? "delta must be scalar: [2]"
                      : sat ? "scale must be scalar: [2]"
                            : "contrast_factor must be scalar: [2]";
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, msg);
    cf_run_case(ctx, c);
  }
  if (hue || sat) {
    cf_case_t *c = cf_case_new(op, "err_2_channels", dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t d[3] = {2, 2, 2};
    cf_case_input(c, image(&rng, dt, 3, d, 0, 1));
    c->unknown_shape[0] = true;
    cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 0.5));
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                         "input must have 3 channels but instead has 2 channels.");
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * ExtractImagePatches */

static void set4(cf_case_t *c, const char *name, const int64_t *hw) {
  int64_t v[4] = {1, hw[0], hw[1], 1};
  cf_case_attr_ints(c, name, v, 4);
}

static void emit_extract_patches(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const struct {
    const char *name;
    int64_t in[4], k[2], s[2], r[2];
    bool same;
  } cases[] = {
      {"valid_3x3", {1, 6, 6, 2}, {3, 3}, {1, 1}, {1, 1}, false},
      {"same_3x3", {2, 5, 6, 2}, {3, 3}, {1, 1}, {1, 1}, true},
      {"same_stride2_rate2", {1, 8, 8, 2}, {2, 2}, {2, 2}, {2, 2}, true},
      {"valid_2x3_stride_3x1_rate_1x2", {1, 9, 10, 3}, {2, 3}, {3, 1}, {1, 2}, false},
      {"window_bigger_than_image_valid", {1, 2, 2, 1}, {3, 3}, {1, 1}, {1, 1}, false},
      {"1x1", {2, 3, 3, 4}, {1, 1}, {1, 1}, {1, 1}, false},
      {"empty_batch", {0, 4, 4, 2}, {2, 2}, {1, 1}, {1, 1}, true},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE, 0, 0};
    cf_array_t *x = cf_gen_array(&rng, dt, 4, cases[i].in, g);
    cf_case_expect(c, cf_ref_extract_patches(x, cases[i].k, cases[i].s, cases[i].r,
                                             cases[i].same));
    cf_case_input(c, x);
    set4(c, "ksizes", cases[i].k);
    set4(c, "strides", cases[i].s);
    set4(c, "rates", cases[i].r);
    cf_case_attr_string(c, "padding", cases[i].same ? "SAME" : "VALID");
    c->tol = (cf_tol_t){0, 0, 0};
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * NonMaxSuppression V1..V5 */

typedef struct nms_spec {
  const char *name;
  int64_t n, max_out;
  double iou, score_t, sigma;
  bool pad;
  int min_version; /* score_threshold from V3, pad from V4, sigma in V5 */
} nms_spec_t;

static const nms_spec_t nms_cases[] = {
    {"basic", 20, 10, 0.5, -INFINITY, 0, false, 1},
    {"all_boxes", 12, 100, 0.7, -INFINITY, 0, false, 1},
    {"iou_zero", 15, 15, 0, -INFINITY, 0, false, 1},
    {"iou_one", 10, 4, 1, -INFINITY, 0, false, 1},
    {"max_zero", 10, 0, 0.5, -INFINITY, 0, false, 1},
    {"no_boxes", 0, 5, 0.5, -INFINITY, 0, false, 1},
    {"score_threshold", 25, 20, 0.4, 0.45, 0, false, 3},
    {"score_threshold_all_below", 8, 5, 0.4, 2, 0, false, 3},
    {"pad", 18, 30, 0.5, 0.2, 0, true, 4},
    {"soft_nms", 20, 12, 0.5, 0.05, 0.5, false, 5},
    {"soft_nms_pad", 10, 15, 0.3, 0.3, 0.25, true, 5},
};

static int nms_version(const char *op) {
  size_t n = strlen(op);
  return op[n - 2] == 'V' ? op[n - 1] - '0' : 1;
}

/* Clustered boxes so that suppression happens; some flipped corners, some ties in score. */
static void nms_inputs(cf_rng_t *rng, weft_dtype_t dt, int64_t n, cf_array_t **boxes,
                       cf_array_t **scores) {
  int64_t bd[2] = {n, 4};
  *boxes = cf_array_new(dt, 2, bd);
  *scores = cf_array_new(dt, 1, &n);
  for (int64_t i = 0; i < n; i++) {
    double cy = (double)(i % 3) * 0.3 + cf_rng_uniform(rng, 0, 0.1);
    double cx = (double)(i % 2) * 0.4 + cf_rng_uniform(rng, 0, 0.1);
    double h = cf_rng_uniform(rng, 0.2, 0.5), w = cf_rng_uniform(rng, 0.2, 0.5);
    double b[4] = {cy, cx, cy + h, cx + w};
    if (i % 5 == 3) {
      double t = b[0];
      b[0] = b[2];
      b[2] = t;
    }
    for (int k = 0; k < 4; k++) (*boxes)->v[i * 4 + k] = cf_round_to_dtype(dt, b[k]);
    double s = i % 7 == 6 && i > 0 ? (*scores)->v[i - 1] : cf_rng_uniform(rng, 0, 1);
    (*scores)->v[i] = cf_round_to_dtype(dt, s);
  }
}

static void emit_nms(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  int ver = nms_version(op);
  if (!cf_supported(ctx, op, ver == 1 ? NULL : "T", dt)) return;
  weft_dtype_t vt = ver == 1 ? WEFT_DT_FLOAT : dt;
  weft_dtype_t tt = ver == 5 ? vt : WEFT_DT_FLOAT; /* T_threshold */
  for (size_t i = 0; i < G_N_ELEMENTS(nms_cases); i++) {
    const nms_spec_t *s = &nms_cases[i];
    if (s->min_version > ver) continue;
    cf_case_t *c = cf_case_new(op, s->name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *boxes, *scores;
    nms_inputs(&rng, vt, s->n, &boxes, &scores);
    cf_array_t *sel = NULL, *sel_scores = NULL;
    int64_t n_valid = 0;
    double score_t = ver >= 3 ? cf_round_to_dtype(vt, s->score_t) : -INFINITY;
    cf_ref_nms(boxes, scores, s->max_out, s->iou, score_t, s->sigma, s->pad, &sel,
               ver == 5 ? &sel_scores : NULL, &n_valid);
    cf_case_expect(c, sel);
    if (ver == 5) cf_case_expect(c, sel_scores);
    if (ver >= 4) cf_case_expect(c, cf_array_scalar(WEFT_DT_INT32, (double)n_valid));
    cf_case_input(c, boxes);
    cf_case_input(c, scores);
    cf_case_const_input(c, cf_array_scalar(WEFT_DT_INT32, (double)s->max_out));
    if (ver == 1) {
      cf_case_attr_float(c, "iou_threshold", s->iou);
    } else {
      cf_case_input(c, cf_array_scalar(tt, s->iou));
      if (ver < 5) cf_case_attr_type(c, "T_threshold", tt);
    }
    if (ver >= 3) cf_case_input(c, cf_array_scalar(tt, isinf(s->score_t) ? -1e4 : s->score_t));
    if (ver == 5) cf_case_input(c, cf_array_scalar(tt, s->sigma));
    if (ver >= 4 && s->pad) cf_case_attr_bool(c, "pad_to_max_output_size", true);
    c->tol = cf_tol_default(vt);
    c->tol.atol = vt == WEFT_DT_HALF ? 2e-3 : 1e-6;
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT && ver != 1) return;
  static const struct {
    const char *name;
    int64_t boxes_cols, n_scores, max_rank;
    double iou, sigma;
    const char *msg;
  } errs[] = {
      {"err_iou_above_1", 4, 3, 0, 1.5, 0, "iou_threshold must be in [0, 1]"},
      {"err_iou_negative", 4, 3, 0, -0.5, 0, "iou_threshold must be in [0, 1]"},
      {"err_boxes_3_columns", 3, 3, 0, 0.5, 0, "boxes must have 4 columns"},
      {"err_scores_size", 4, 2, 0, 0.5, 0,
       "scores has incompatible shape (Dimensions must be equal, but are 3 and 2)"},
      {"err_max_output_size_rank1", 4, 3, 1, 0.5, 0, "max_output_size must be 0-D, got shape [1]"},
      {"err_negative_sigma", 4, 3, 0, 0.5, -1, "soft_nms_sigma_val must be non-negative value"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    if (errs[i].sigma != 0 && ver != 5) continue;
    cf_case_t *c = cf_case_new(op, errs[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    int64_t bd[2] = {3, errs[i].boxes_cols};
    cf_case_input(c, cf_gen_uniform(&rng, vt, 2, bd, 0, 1));
    cf_case_input(c, cf_gen_uniform(&rng, vt, 1, &errs[i].n_scores, 0, 1));
    c->unknown_shape[0] = c->unknown_shape[1] = true;
    int64_t one = 1;
    if (errs[i].max_rank)
      cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 1, &one));
    else
      cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 2));
    c->unknown_shape[2] = true;
    if (ver == 1) {
      cf_case_attr_float(c, "iou_threshold", errs[i].iou);
    } else {
      cf_case_input(c, cf_array_scalar(tt, errs[i].iou));
      if (ver < 5) cf_case_attr_type(c, "T_threshold", tt);
    }
    if (ver >= 3) cf_case_input(c, cf_array_scalar(tt, 0));
    if (ver == 5) cf_case_input(c, cf_array_scalar(tt, errs[i].sigma));
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, errs[i].msg);
    cf_run_case(ctx, c);
  }
}

/* ---------------------------------------------------------------------------------------------
 * DrawBoundingBoxes */

static void emit_draw_boxes(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  bool v2 = strcmp(op, "DrawBoundingBoxesV2") == 0;
  /* Inside, partly outside (edges beyond the image not drawn), inverted, wholly outside, a
   * point, and more boxes than colours. */
  static const double box_values[] = {0.1, 0.2, 0.7, 0.8, -0.3, 0.5, 0.6, 1.4, 0.8, 0.1,
                                      0.2, 0.9, 1.2, 1.1, 1.5, 1.6, 0.5, 0.5, 0.5, 0.5,
                                      0,   0,   1,   1,   0.3, 0.3, 0.4, 0.45, 0.05, 0.6,
                                      0.95, 0.65, 0.2, 0.1, 0.3, 0.3, 0.4, 0.4, 0.9, 0.9,
                                      0.6, 0.0, 0.7, 0.2, 0.01, 0.01, 0.02, 0.99};
  static const struct {
    const char *name;
    int64_t in[4];
    int64_t n_boxes;
    int n_colors, color_depth;
  } cases[] = {
      {"rgb", {2, 9, 11, 3}, 6, 3, 3},   {"grey", {1, 8, 8, 1}, 5, 2, 1},
      {"rgba_12_boxes", {1, 10, 12, 4}, 12, 5, 4}, {"no_boxes", {2, 4, 4, 3}, 0, 1, 4},
      {"one_pixel_image", {1, 1, 1, 3}, 2, 1, 3},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    cf_case_t *c = cf_case_new(op, cases[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_array_t *x = image(&rng, dt, 4, cases[i].in, 0, 1);
    int64_t bd[3] = {cases[i].in[0], cases[i].n_boxes, 4};
    cf_array_t *boxes = cf_array_new(WEFT_DT_FLOAT, 3, bd);
    for (int64_t k = 0; k < boxes->n; k++)
      boxes->v[k] = cf_round_to_dtype(WEFT_DT_FLOAT,
                                      box_values[k % (int64_t)G_N_ELEMENTS(box_values)]);
    cf_array_t *colors = NULL;
    if (v2) {
      int64_t cd[2] = {cases[i].n_colors, cases[i].color_depth};
      colors = cf_gen_uniform(&rng, WEFT_DT_FLOAT, 2, cd, 0, 1);
    }
    cf_case_expect(c, cf_ref_draw_boxes(x, boxes, colors));
    cf_case_input(c, x);
    cf_case_input(c, boxes);
    if (v2) cf_case_input(c, colors);
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT) return;
  static const struct {
    const char *name;
    int64_t in[4], boxes[3];
    const char *msg;
  } errs[] = {
      {"err_2_channels", {1, 4, 4, 2}, {1, 1, 4},
       "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)"},
      {"err_batch_mismatch", {2, 4, 4, 3}, {1, 1, 4}, "The batch sizes should be the same"},
      {"err_3_coordinates", {1, 4, 4, 3}, {1, 1, 3}, "boxes must have at least 4 coordinates"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(errs); i++) {
    cf_case_t *c = cf_case_new(op, errs[i].name, dt);
    cf_rng_t rng;
    cf_case_rng(c, &rng);
    cf_case_input(c, image(&rng, dt, 4, errs[i].in, 0, 1));
    cf_case_input(c, cf_gen_uniform(&rng, WEFT_DT_FLOAT, 3, errs[i].boxes, 0, 1));
    c->unknown_shape[0] = c->unknown_shape[1] = true;
    if (v2) {
      int64_t cd[2] = {2, 4};
      cf_case_input(c, cf_gen_uniform(&rng, WEFT_DT_FLOAT, 2, cd, 0, 1));
    }
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, errs[i].msg);
    cf_run_case(ctx, c);
  }
}

const cf_suite_t cf_suites_imgproc[] = {
    {"ResizeBilinear", resize_dtypes, emit_resize, NULL},
    {"ResizeNearestNeighbor", resize_dtypes, emit_resize, NULL},
    {"ResizeBilinearGrad", resize_bilinear_grad_dtypes, emit_resize_grad, NULL},
    {"ResizeNearestNeighborGrad", resize_nearest_grad_dtypes, emit_resize_grad, NULL},
    {"ResizeBicubicGrad", resize_bicubic_grad_dtypes, emit_resize_grad, NULL},
    {"ResizeBicubic", resize_dtypes, emit_resize, NULL},
    {"ResizeArea", resize_dtypes, emit_resize, NULL},
    {"CropAndResize", crop_dtypes, emit_crop_and_resize, NULL},
    {"CropAndResizeGradImage", crop_grad_image_dtypes, emit_crop_grads, NULL},
    {"CropAndResizeGradBoxes", crop_grad_boxes_dtypes, emit_crop_grads, NULL},
    {"RGBToHSV", cf_dtypes_float, emit_rgb_hsv, NULL},
    {"HSVToRGB", cf_dtypes_float, emit_rgb_hsv, NULL},
    {"AdjustHue", half_float_dtypes, emit_adjust, NULL},
    {"AdjustSaturation", half_float_dtypes, emit_adjust, NULL},
    {"AdjustContrastv2", half_float_dtypes, emit_adjust, NULL},
    {"AdjustContrast", contrast_dtypes, emit_adjust, NULL},
    {"ExtractImagePatches", patch_dtypes, emit_extract_patches, NULL},
    {"NonMaxSuppression", cf_dtypes_none, emit_nms, NULL},
    {"NonMaxSuppressionV2", half_float_dtypes, emit_nms, NULL},
    {"NonMaxSuppressionV3", half_float_dtypes, emit_nms, NULL},
    {"NonMaxSuppressionV4", half_float_dtypes, emit_nms, NULL},
    {"NonMaxSuppressionV5", half_float_dtypes, emit_nms, NULL},
    {"DrawBoundingBoxes", half_float_dtypes, emit_draw_boxes, NULL},
    {"DrawBoundingBoxesV2", half_float_dtypes, emit_draw_boxes, NULL},
    {NULL, NULL, NULL, NULL},
};
