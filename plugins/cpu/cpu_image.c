/* cpu_image.c: the CPU kernels of TensorFlow's image-processing ops, following its CPU kernels
 * (tensorflow/core/kernels/image/) step for step, float32 arithmetic included, so that results
 * match TensorFlow's to the last bits where the order of operations allows:
 *   - ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea: TensorFlow's
 *     ImageResizerState (scale (in-1)/(out-1) with align_corners, in/out otherwise), the legacy
 *     coordinate x*scale and the half-pixel one (x+0.5)*scale-0.5 ((x+0.5)*scale for nearest),
 *     bicubic's 1025-entry coefficient table with a = -0.75 (legacy) or Keys' a = -0.5 with
 *     out-of-image taps dropped and the weights renormalised (half_pixel_centers);
 *   - ResizeBilinearGrad, ResizeNearestNeighborGrad, ResizeBicubicGrad: the resizes' adjoints,
 *     same weights;
 *   - CropAndResize (bilinear and nearest, extrapolation_value outside the image) and its
 *     gradients w.r.t. the image and the boxes (CropAndResizeGradImage, CropAndResizeGradBoxes);
 *   - RGBToHSV, HSVToRGB, AdjustHue, AdjustSaturation, AdjustContrast, AdjustContrastv2;
 *   - ExtractImagePatches (SAME/VALID, strides, rates; zeros outside the image);
 *   - NonMaxSuppression V1..V5: greedy selection by descending score (lower index first on
 *     ties), IOU on corner-normalised boxes, score_threshold, soft-NMS with a Gaussian weight
 *     exp(-0.5 * iou^2 / sigma), pad_to_max_output_size;
 *   - DrawBoundingBoxes (V1: TensorFlow's default colour table; V2: the given colours). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static const weft_dtype_t resize_types[] = {
    WEFT_DT_INT8, WEFT_DT_UINT8, WEFT_DT_INT16, WEFT_DT_UINT16, WEFT_DT_INT32,
    WEFT_DT_INT64, WEFT_DT_HALF, WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_BFLOAT16};
static const weft_dtype_t bilinear_grad_types[] = {WEFT_DT_FLOAT, WEFT_DT_BFLOAT16, WEFT_DT_HALF,
                                                   WEFT_DT_DOUBLE};
static const weft_dtype_t bicubic_grad_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_dtype_t nearest_grad_types[] = {WEFT_DT_UINT8, WEFT_DT_INT8,   WEFT_DT_INT32,
                                                  WEFT_DT_HALF,  WEFT_DT_FLOAT,  WEFT_DT_DOUBLE,
                                                  WEFT_DT_BFLOAT16};
static const weft_dtype_t crop_types[] = {
    WEFT_DT_UINT8, WEFT_DT_UINT16, WEFT_DT_INT8, WEFT_DT_INT16, WEFT_DT_INT32,
    WEFT_DT_INT64, WEFT_DT_HALF, WEFT_DT_BFLOAT16, WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_dtype_t crop_grad_image_types[] = {WEFT_DT_FLOAT, WEFT_DT_HALF, WEFT_DT_DOUBLE};
static const weft_dtype_t crop_grad_boxes_types[] = {
    WEFT_DT_UINT8, WEFT_DT_UINT16, WEFT_DT_INT8, WEFT_DT_INT16, WEFT_DT_INT32,
    WEFT_DT_INT64, WEFT_DT_HALF, WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
static const weft_dtype_t hsv_types[] = {WEFT_DT_HALF, WEFT_DT_BFLOAT16, WEFT_DT_FLOAT,
                                         WEFT_DT_DOUBLE};
static const weft_dtype_t half_float[] = {WEFT_DT_HALF, WEFT_DT_FLOAT};
static const weft_dtype_t contrast_types[] = {WEFT_DT_UINT8, WEFT_DT_INT8, WEFT_DT_INT16,
                                              WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_FLOAT,
                                              WEFT_DT_DOUBLE};
static const weft_dtype_t patch_types[] = {
    WEFT_DT_BFLOAT16, WEFT_DT_HALF, WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT8,
    WEFT_DT_INT16, WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_UINT8, WEFT_DT_UINT16,
    WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Element i of a real tensor as float, the conversion TensorFlow's static_cast<float> makes. */
static float ld(const weft_tensor_view_t *v, int64_t i) {
  return (float)weft__cpu_get_double(v, i);
}

/* "[2,3]" for messages that quote a tensor's shape the way TensorFlow's DebugString does. */
static const char *shape_of(const weft_tensor_view_t *v, char *buf) {
  return weft__cpu_shape_str(v->rank, v->dims, buf, CPU_SHAPE_STR_LEN);
}

/* A scalar float input (contrast_factor, delta, scale, ...); `what` names it in the error. */
static weft_status_t *scalar_float(weft_kernel_ctx_t *ctx, int index, const char *what,
                                   float *out) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &v));
  char buf[CPU_SHAPE_STR_LEN];
  if (v.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be scalar: %s", what,
                           shape_of(&v, buf));
  *out = ld(&v, 0);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Resizes: TensorFlow's ImageResizerState. */

typedef struct resize {
  weft_tensor_view_t x, y;
  int64_t b, ih, iw, c, oh, ow;
  float hs, ws;
  bool align, half;
} resize_t;

static float resize_scale(int64_t in, int64_t out, bool align) {
  return align && out > 1 ? (float)(in - 1) / (float)(out - 1) : (float)in / (float)out;
}

/* A cleared r with the sampling attrs, which exclude each other. */
static weft_status_t *resize_attrs(weft_kernel_ctx_t *ctx, resize_t *r) {
  memset(r, 0, sizeof *r);
  r->align = weft__cpu_attr_bool(ctx, "align_corners", false);
  r->half = weft__cpu_attr_bool(ctx, "half_pixel_centers", false);
  if (r->half && r->align)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "If half_pixel_centers is True, align_corners must be False.");
  return NULL;
}

static weft_status_t *resize_prepare(weft_kernel_ctx_t *ctx, resize_t *r, weft_dtype_t out_dt) {
  WEFT_RETURN_IF_ERROR(resize_attrs(ctx, r));
  weft_tensor_view_t sv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &r->x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &sv));
  char buf[CPU_SHAPE_STR_LEN];
  if (r->x.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be 4-dimensional%s",
                           shape_of(&r->x, buf));
  if (sv.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shape_t must be 1-dimensional%s",
                           shape_of(&sv, buf));
  if (sv.num_elements != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shape_t must have two elements%s",
                           shape_of(&sv, buf));
  int64_t size[2], n = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &sv, "size", size, 2, &n));
  r->b = r->x.dims[0];
  r->ih = r->x.dims[1];
  r->iw = r->x.dims[2];
  r->c = r->x.dims[3];
  r->oh = size[0];
  r->ow = size[1];
  if (r->ih > INT32_MAX || r->iw > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input sizes must be between 0 and max "
                           "int32");
  if (r->oh <= 0 || r->ow <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output dimensions must be positive");
  if (r->c <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image must have at least one channel");
  if (r->ih <= 0 || r->iw <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input image must be of non-zero size");
  r->hs = resize_scale(r->ih, r->oh, r->align);
  r->ws = resize_scale(r->iw, r->ow, r->align);
  int64_t dims[4] = {r->b, r->oh, r->ow, r->c};
  return weft__cpu_output(ctx, 0, out_dt, 4, dims, &r->y);
}

/* TensorFlow's scalers: the legacy x*scale, or half-pixel centres. */
static float scaled(const resize_t *r, int64_t x, float scale) {
  return r->half ? ((float)x + 0.5f) * scale - 0.5f : (float)x * scale;
}

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct lerp_idx {
  int64_t lo, hi;
  float lerp;
} lerp_idx_t;

static void bilinear_weights(const resize_t *r, int64_t out, int64_t in, float scale,
                             lerp_idx_t *w) {
  for (int64_t i = 0; i < out; i++) {
    float v = scaled(r, i, scale), f = floorf(v);
    w[i].lo = imax((int64_t)f, 0);
    w[i].hi = imin((int64_t)ceilf(v), in - 1);
    w[i].lerp = v - f;
  }
}

static weft_status_t *k_resize_bilinear(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  resize_t r;
  WEFT_RETURN_IF_ERROR(resize_prepare(ctx, &r, WEFT_DT_FLOAT));
  if (r.y.num_elements == 0) return NULL;
  lerp_idx_t *ys = malloc(sizeof *ys * (size_t)r.oh), *xs = malloc(sizeof *xs * (size_t)r.ow);
  if (ys == NULL || xs == NULL) {
    free(ys);
    free(xs);
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  bilinear_weights(&r, r.oh, r.ih, r.hs, ys);
  bilinear_weights(&r, r.ow, r.iw, r.ws, xs);
  float *out = r.y.data;
  int64_t o = 0;
  for (int64_t b = 0; b < r.b; b++)
    for (int64_t y = 0; y < r.oh; y++) {
      int64_t top = (b * r.ih + ys[y].lo) * r.iw, bot = (b * r.ih + ys[y].hi) * r.iw;
      for (int64_t x = 0; x < r.ow; x++)
        for (int64_t c = 0; c < r.c; c++) {
          float tl = ld(&r.x, (top + xs[x].lo) * r.c + c);
          float tr = ld(&r.x, (top + xs[x].hi) * r.c + c);
          float bl = ld(&r.x, (bot + xs[x].lo) * r.c + c);
          float br = ld(&r.x, (bot + xs[x].hi) * r.c + c);
          float t = tl + (tr - tl) * xs[x].lerp, bo = bl + (br - bl) * xs[x].lerp;
          out[o++] = t + (bo - t) * ys[y].lerp;
        }
    }
  free(ys);
  free(xs);
  return NULL;
}

/* The input row (column) output row o reads: nearest uses (o + 0.5) * scale for half-pixel
 * centres (no -0.5), rounds with align_corners and floors otherwise. */
static int64_t nearest_src(const resize_t *r, int64_t o, float scale, int64_t in) {
  float f = r->half ? ((float)o + 0.5f) * scale : (float)o * scale;
  int64_t i = imin(r->align ? (int64_t)roundf(f) : (int64_t)floorf(f), in - 1);
  return r->half ? imax(i, 0) : i;
}

static weft_status_t *k_resize_nearest(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  resize_t r;
  weft_tensor_view_t x0;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x0));
  WEFT_RETURN_IF_ERROR(resize_prepare(ctx, &r, x0.dtype));
  if (r.y.num_elements == 0) return NULL;
  size_t es = weft__cpu_dtype_size(r.x.dtype);
  const char *src = r.x.data;
  char *dst = r.y.data;
  for (int64_t b = 0; b < r.b; b++)
    for (int64_t y = 0; y < r.oh; y++) {
      int64_t iy = nearest_src(&r, y, r.hs, r.ih);
      for (int64_t x = 0; x < r.ow; x++) {
        int64_t ix = nearest_src(&r, x, r.ws, r.iw);
        int64_t so = ((b * r.ih + iy) * r.iw + ix) * r.c, d = ((b * r.oh + y) * r.ow + x) * r.c;
        memcpy(dst + (size_t)d * es, src + (size_t)so * es, (size_t)r.c * es);
      }
    }
  return NULL;
}

/* Bicubic: TensorFlow's coefficient table of kTableSize + 1 entries for the given a. */
#define CUBIC_TABLE 1024
static void cubic_table(float *t, double a) {
  for (int i = 0; i <= CUBIC_TABLE; i++) {
    float x = (float)(i * 1.0 / CUBIC_TABLE);
    t[i * 2] = (float)(((a + 2) * x - (a + 3)) * x * x + 1);
    x += 1.0f;
    t[i * 2 + 1] = (float)(((a * x - 5 * a) * x + 8 * a) * x - 4 * a);
  }
}

typedef struct cubic_w {
  int64_t idx[4];
  float w[4];
} cubic_w_t;

static void cubic_weights(const resize_t *r, const float *table, int64_t out, int64_t limit,
                          float scale, cubic_w_t *cw) {
  for (int64_t i = 0; i < out; i++) {
    float f = scaled(r, i, scale);
    int64_t loc = (int64_t)floorf(f);
    float delta = f - (float)loc;
    int64_t off = lrintf(delta * CUBIC_TABLE);
    float w[4] = {table[off * 2 + 1], table[off * 2], table[(CUBIC_TABLE - off) * 2],
                  table[(CUBIC_TABLE - off) * 2 + 1]};
    for (int k = 0; k < 4; k++) {
      cw[i].idx[k] = imin(limit - 1, imax(0, loc - 1 + k));
      cw[i].w[k] = w[k];
    }
    if (r->half) {
      /* Keys' cubic: taps outside the image get no weight, the rest are renormalised. */
      float sum = 0;
      for (int k = 0; k < 4; k++) {
        if (cw[i].idx[k] != loc - 1 + k) cw[i].w[k] = 0.0f;
        sum += cw[i].w[k];
      }
      if (fabsf(sum) >= 1000.0f * FLT_MIN) {
        float inv = 1.0f / sum;
        for (int k = 0; k < 4; k++) cw[i].w[k] *= inv;
      }
    }
  }
}

static weft_status_t *k_resize_bicubic(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  resize_t r;
  WEFT_RETURN_IF_ERROR(resize_prepare(ctx, &r, WEFT_DT_FLOAT));
  if (r.y.num_elements == 0) return NULL;
  float *table = malloc(sizeof(float) * (CUBIC_TABLE + 1) * 2);
  cubic_w_t *ys = malloc(sizeof *ys * (size_t)r.oh), *xs = malloc(sizeof *xs * (size_t)r.ow);
  if (table == NULL || ys == NULL || xs == NULL) {
    free(table);
    free(ys);
    free(xs);
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  cubic_table(table, r.half ? -0.5 : -0.75);
  cubic_weights(&r, table, r.oh, r.ih, r.hs, ys);
  cubic_weights(&r, table, r.ow, r.iw, r.ws, xs);
  float *out = r.y.data;
  int64_t o = 0;
  for (int64_t b = 0; b < r.b; b++)
    for (int64_t y = 0; y < r.oh; y++)
      for (int64_t x = 0; x < r.ow; x++)
        for (int64_t c = 0; c < r.c; c++) {
          /* Along y first for each of the four columns, then along x (TensorFlow's order). */
          float col[4];
          for (int k = 0; k < 4; k++) {
            float v[4];
            for (int m = 0; m < 4; m++)
              v[m] = ld(&r.x, ((b * r.ih + ys[y].idx[m]) * r.iw + xs[x].idx[k]) * r.c + c);
            col[k] = v[0] * ys[y].w[0] + v[1] * ys[y].w[1] + v[2] * ys[y].w[2] +
                     v[3] * ys[y].w[3];
          }
          out[o++] = col[0] * xs[x].w[0] + col[1] * xs[x].w[1] + col[2] * xs[x].w[2] +
                     col[3] * xs[x].w[3];
        }
  free(table);
  free(ys);
  free(xs);
  return NULL;
}

/* ResizeBilinearGrad, ResizeNearestNeighborGrad, ResizeBicubicGrad (TensorFlow's *OpGrad
 * kernels): the forward resizes' adjoints. Each incoming gradient (input 0, the resized shape,
 * held in r->y) is added to the pixels of the original-size output (r->x) its pixel was sampled
 * from, with the forward weights; sums are kept in double. Bilinear and bicubic take the
 * original image (for its size and dtype), nearest the size. */
typedef enum { GRAD_NEAREST, GRAD_BILINEAR, GRAD_BICUBIC } resize_grad_kind_t;

static weft_status_t *resize_grad_prepare(weft_kernel_ctx_t *ctx, resize_t *r, bool from_image) {
  WEFT_RETURN_IF_ERROR(resize_attrs(ctx, r));
  weft_tensor_view_t other;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &r->y));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &other));
  char buf[CPU_SHAPE_STR_LEN];
  if (r->y.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input_grad must be 4-dimensional%s",
                           shape_of(&r->y, buf));
  weft_dtype_t out_dt = r->y.dtype;
  if (from_image) {
    if (other.rank != 4)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "original_image must be 4-dimensional%s", shape_of(&other, buf));
    r->ih = other.dims[1];
    r->iw = other.dims[2];
    out_dt = other.dtype;
  } else {
    if (other.rank != 1 || other.num_elements != 2)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "shape_t must be 1-dimensional with two elements%s",
                             shape_of(&other, buf));
    int64_t size[2], n = 0;
    WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &other, "size", size, 2, &n));
    r->ih = size[0];
    r->iw = size[1];
  }
  if (r->ih <= 0 || r->iw <= 0 || r->ih > INT32_MAX || r->iw > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "original sizes must be between 1 and "
                           "max int32, not %lldx%lld", (long long)r->ih, (long long)r->iw);
  r->b = r->y.dims[0];
  r->oh = r->y.dims[1];
  r->ow = r->y.dims[2];
  r->c = r->y.dims[3];
  r->hs = resize_scale(r->ih, r->oh, r->align);
  r->ws = resize_scale(r->iw, r->ow, r->align);
  int64_t dims[4] = {r->b, r->ih, r->iw, r->c};
  return weft__cpu_output(ctx, 0, out_dt, 4, dims, &r->x);
}

/* A sum into the gradient's dtype; integers wrap as TensorFlow's adds in T would. */
static void store_sum(const weft_tensor_view_t *v, int64_t i, double x) {
  switch (v->dtype) {
    case WEFT_DT_UINT8: ((uint8_t *)v->data)[i] = (uint8_t)(int64_t)x; break;
    case WEFT_DT_INT8: ((int8_t *)v->data)[i] = (int8_t)(int64_t)x; break;
    case WEFT_DT_INT32: ((int32_t *)v->data)[i] = (int32_t)(int64_t)x; break;
    default: weft__cpu_store_f(v->dtype, v->data, i, x); break;
  }
}

/* The taps of each output row (or column): up to four input indices and their weights. */
typedef struct taps {
  int64_t idx[4];
  double w[4];
  int n;
} taps_t;

static bool grad_taps(const resize_t *r, resize_grad_kind_t kind, const float *table,
                      int64_t out, int64_t in, float scale, taps_t *t) {
  if (kind == GRAD_NEAREST) {
    for (int64_t i = 0; i < out; i++) t[i] = (taps_t){{nearest_src(r, i, scale, in)}, {1}, 1};
    return true;
  }
  if (kind == GRAD_BILINEAR) {
    lerp_idx_t *w = malloc(sizeof *w * (size_t)out);
    if (w == NULL) return false;
    bilinear_weights(r, out, in, scale, w);
    for (int64_t i = 0; i < out; i++)
      t[i] = (taps_t){{w[i].lo, w[i].hi}, {1 - (double)w[i].lerp, w[i].lerp}, 2};
    free(w);
    return true;
  }
  cubic_w_t *w = malloc(sizeof *w * (size_t)out);
  if (w == NULL) return false;
  cubic_weights(r, table, out, in, scale, w);
  for (int64_t i = 0; i < out; i++) {
    t[i].n = 4;
    for (int k = 0; k < 4; k++) t[i].idx[k] = w[i].idx[k], t[i].w[k] = w[i].w[k];
  }
  free(w);
  return true;
}

static weft_status_t *resize_grad(weft_kernel_ctx_t *ctx, resize_grad_kind_t kind) {
  resize_t r;
  WEFT_RETURN_IF_ERROR(resize_grad_prepare(ctx, &r, kind != GRAD_NEAREST));
  if (r.x.num_elements == 0) return NULL;
  double *acc = calloc((size_t)r.x.num_elements, sizeof *acc);
  taps_t *ys = malloc(sizeof *ys * (size_t)(r.oh > 0 ? r.oh : 1));
  taps_t *xs = malloc(sizeof *xs * (size_t)(r.ow > 0 ? r.ow : 1));
  float *table = kind == GRAD_BICUBIC ? malloc(sizeof(float) * (CUBIC_TABLE + 1) * 2) : NULL;
  if (table) cubic_table(table, r.half ? -0.5 : -0.75);
  bool ok = acc != NULL && ys != NULL && xs != NULL && (kind != GRAD_BICUBIC || table != NULL) &&
            grad_taps(&r, kind, table, r.oh, r.ih, r.hs, ys) &&
            grad_taps(&r, kind, table, r.ow, r.iw, r.ws, xs);
  if (ok) {
    int64_t g = 0;
    for (int64_t b = 0; b < r.b; b++)
      for (int64_t y = 0; y < r.oh; y++)
        for (int64_t x = 0; x < r.ow; x++)
          for (int64_t c = 0; c < r.c; c++) {
            double d = weft__cpu_get_double(&r.y, g++);
            for (int i = 0; i < ys[y].n; i++)
              for (int j = 0; j < xs[x].n; j++)
                acc[((b * r.ih + ys[y].idx[i]) * r.iw + xs[x].idx[j]) * r.c + c] +=
                    d * ys[y].w[i] * xs[x].w[j];
          }
    for (int64_t i = 0; i < r.x.num_elements; i++) store_sum(&r.x, i, acc[i]);
  }
  free(acc);
  free(ys);
  free(xs);
  free(table);
  return ok ? NULL : weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

static weft_status_t *k_resize_bilinear_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return resize_grad(ctx, GRAD_BILINEAR);
}

static weft_status_t *k_resize_nearest_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return resize_grad(ctx, GRAD_NEAREST);
}

static weft_status_t *k_resize_bicubic_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return resize_grad(ctx, GRAD_BICUBIC);
}

/* Area: each output pixel averages the input cells its footprint covers, weighted by the covered
 * fraction of each (TensorFlow's ResizeAreaOp, float accumulation in its order). */
typedef struct area_x {
  int64_t start, end;
  float start_scale, end_scale;
} area_x_t;

static float area_cell_scale(int64_t v, float in0, float in1, float scale) {
  return (float)v < in0 ? ((float)(v + 1) > in1 ? scale : (float)(v + 1) - in0)
                        : ((float)(v + 1) > in1 ? in1 - (float)v : 1.0f);
}

static weft_status_t *k_resize_area(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  resize_t r;
  WEFT_RETURN_IF_ERROR(resize_prepare(ctx, &r, WEFT_DT_FLOAT));
  if (r.y.num_elements == 0) return NULL;
  area_x_t *xs = malloc(sizeof *xs * (size_t)r.ow);
  if (xs == NULL) return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t x = 0; x < r.ow; x++) {
    float in0 = (float)x * r.ws, in1 = (float)(x + 1) * r.ws;
    xs[x].start = (int64_t)floorf(in0);
    xs[x].start_scale = area_cell_scale(xs[x].start, in0, in1, r.ws);
    xs[x].end = (int64_t)ceilf(in1);
    xs[x].end_scale = area_cell_scale(xs[x].end - 1, in0, in1, r.ws);
  }
  float scale = (float)(1.0 / (r.hs * r.ws));
  float *out = r.y.data;
  for (int64_t b = 0; b < r.b; b++)
    for (int64_t y = 0; y < r.oh; y++) {
      float in0 = (float)y * r.hs, in1 = (float)(y + 1) * r.hs;
      int64_t y0 = (int64_t)floorf(in0), y1 = (int64_t)ceilf(in1);
      for (int64_t x = 0; x < r.ow; x++)
        for (int64_t c = 0; c < r.c; c++) {
          float sum = 0;
          for (int64_t i = y0; i < y1; i++) {
            float sy = (float)i < in0 ? ((float)(i + 1) > in1 ? r.hs : (float)(i + 1) - in0)
                                      : ((float)(i + 1) > in1 ? in1 - (float)i : 1.0f);
            int64_t row = (b * r.ih + imin(r.ih - 1, imax(0, i))) * r.iw;
#define AREA_AT(X) ld(&r.x, (row + imin(r.iw - 1, imax(0, (X)))) * r.c + c)
            float sum_y = AREA_AT(xs[x].start) * xs[x].start_scale;
            if (xs[x].start + 1 != xs[x].end) {
              for (int64_t k = xs[x].start + 1; k < xs[x].end - 1; k++) sum_y += AREA_AT(k);
              sum_y += AREA_AT(xs[x].end - 1) * xs[x].end_scale;
            }
#undef AREA_AT
            sum += sum_y * sy;
          }
          out[((b * r.oh + y) * r.ow + x) * r.c + c] = sum * scale;
        }
    }
  free(xs);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * CropAndResize */

/* The checks the three CropAndResize kernels share: boxes [n, 4] and box_ind [n] (both may be
 * empty), each index an image of the batch. */
static weft_status_t *crop_boxes(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *boxes,
                                 const weft_tensor_view_t *ind, int64_t *nb) {
  char buf[CPU_SHAPE_STR_LEN];
  *nb = 0;
  if (boxes->num_elements == 0 && ind->num_elements == 0) return NULL;
  if (boxes->rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "boxes must be 2-D%s",
                           shape_of(boxes, buf));
  *nb = boxes->dims[0];
  if (boxes->dims[1] != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "boxes must have 4 columns");
  if (ind->rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "box_index must be 1-D%s",
                           shape_of(ind, buf));
  if (ind->dims[0] != *nb)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "box_index has incompatible shape");
  return NULL;
}

static weft_status_t *crop_box_images(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *ind,
                                      int64_t nb, int64_t batch) {
  for (int64_t b = 0; b < nb; b++) {
    int64_t bi = weft__cpu_index_at(ind, b);
    if (bi < 0 || bi >= batch)
      return weft__cpu_error(ctx, WEFT_OUT_OF_RANGE, "box_index has values outside [0, "
                             "batch_size)");
  }
  return NULL;
}

/* Row (column) i of a crop of `crop` samples between box edges a1 and a2 of an image side of
 * `in` pixels, in image coordinates, computed in float as TensorFlow does. */
static float crop_pos(float a1, float a2, int64_t in, int64_t crop, int64_t i) {
  if (crop <= 1) return (float)(0.5 * (a1 + a2) * (float)(in - 1));
  float scale = (a2 - a1) * (float)(in - 1) / (float)(crop - 1);
  return a1 * (float)(in - 1) + (float)i * scale;
}

static weft_status_t *k_crop_and_resize(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t img, boxes, ind, csz, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &img));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &boxes));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &ind));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &csz));
  char buf[CPU_SHAPE_STR_LEN];
  if (img.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input image must be 4-D%s",
                           shape_of(&img, buf));
  int64_t batch = img.dims[0], ih = img.dims[1], iw = img.dims[2], depth = img.dims[3];
  if (ih <= 0 || iw <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image dimensions must be positive");
  int64_t nb = 0;
  WEFT_RETURN_IF_ERROR(crop_boxes(ctx, &boxes, &ind, &nb));
  if (csz.rank != 1 || csz.num_elements != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           csz.rank != 1 ? "crop_size must be 1-D%s"
                                         : "crop_size must have two elements%s",
                           shape_of(&csz, buf));
  int64_t cs[2], n = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &csz, "crop_size", cs, 2, &n));
  int64_t ch = cs[0], cw = cs[1];
  if (ch <= 0 || cw <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "crop dimensions must be positive");
  const char *method = "bilinear";
  size_t mlen = 0;
  weft_status_t *st = H->attr_string(H->kernel_attrs(ctx), "method", &method, &mlen);
  if (st != NULL) {
    H->status_free(st);
    method = "bilinear";
  }
  bool nearest = strcmp(method, "nearest") == 0;
  if (!nearest && strcmp(method, "bilinear") != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "method must be 'bilinear' or 'nearest'");
  float extrap = weft__cpu_attr_float(ctx, "extrapolation_value", 0.0f);
  int64_t dims[4] = {nb, ch, cw, depth};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_FLOAT, 4, dims, &y));
  WEFT_RETURN_IF_ERROR(crop_box_images(ctx, &ind, nb, batch));
  const float *bx = boxes.data;
  float *out = y.data;
  for (int64_t b = 0; b < nb; b++) {
    float y1 = bx[b * 4], x1 = bx[b * 4 + 1], y2 = bx[b * 4 + 2], x2 = bx[b * 4 + 3];
    int64_t bi = weft__cpu_index_at(&ind, b);
    for (int64_t yy = 0; yy < ch; yy++) {
      float in_y = crop_pos(y1, y2, ih, ch, yy);
      float *row = out + ((b * ch + yy) * cw) * depth;
      /* Written negated so that a NaN coordinate extrapolates instead of indexing. */
      if (!(in_y >= 0 && in_y <= (float)(ih - 1))) {
        for (int64_t k = 0; k < cw * depth; k++) row[k] = extrap;
        continue;
      }
      int64_t ty = (int64_t)floorf(in_y), by = (int64_t)ceilf(in_y), ny = (int64_t)roundf(in_y);
      float yl = in_y - (float)ty;
      for (int64_t xx = 0; xx < cw; xx++) {
        float in_x = crop_pos(x1, x2, iw, cw, xx);
        float *px = row + xx * depth;
        if (!(in_x >= 0 && in_x <= (float)(iw - 1))) {
          for (int64_t d = 0; d < depth; d++) px[d] = extrap;
          continue;
        }
        int64_t lx = (int64_t)floorf(in_x), rx = (int64_t)ceilf(in_x), nx = (int64_t)roundf(in_x);
        float xl = in_x - (float)lx;
        for (int64_t d = 0; d < depth; d++) {
#define CR_AT(Y, X) ld(&img, ((bi * ih + (Y)) * iw + (X)) * depth + d)
          if (nearest) {
            px[d] = CR_AT(ny, nx);
          } else {
            float tl = CR_AT(ty, lx), tr = CR_AT(ty, rx), bl = CR_AT(by, lx), br = CR_AT(by, rx);
            float top = tl + (tr - tl) * xl, bot = bl + (br - bl) * xl;
            px[d] = top + (bot - top) * yl;
          }
#undef CR_AT
        }
      }
    }
  }
  return NULL;
}

/* CropAndResizeGradImage, CropAndResizeGradBoxes (crop_and_resize_op.cc): the forward sampling
 * run backwards. The image gradient adds each crop pixel's gradient to the pixels it was
 * interpolated from (or the nearest one); the boxes' gradient is d crop / d box edge through the
 * sampling positions, bilinear only, as TensorFlow (which uses it for nearest crops too). Samples
 * outside the image (extrapolated) contribute nothing. grads is [n, crop_h, crop_w, depth]. */
/* Where crop pixel (yy, xx) of a box samples the image: its cell's corners, the nearest pixel
 * and the fractions; false when the sample lies outside the image (extrapolated). */
typedef struct crop_sample {
  int64_t ty, by, lx, rx, ny, nx;
  double yl, xl;
} crop_sample_t;

static bool crop_sample(const float *box, int64_t ih, int64_t iw, int64_t ch, int64_t cw,
                        int64_t yy, int64_t xx, crop_sample_t *s) {
  float in_y = crop_pos(box[0], box[2], ih, ch, yy), in_x = crop_pos(box[1], box[3], iw, cw, xx);
  if (!(in_y >= 0 && in_y <= (float)(ih - 1)) || !(in_x >= 0 && in_x <= (float)(iw - 1)))
    return false;
  s->ty = (int64_t)floorf(in_y), s->by = (int64_t)ceilf(in_y), s->ny = (int64_t)roundf(in_y);
  s->lx = (int64_t)floorf(in_x), s->rx = (int64_t)ceilf(in_x), s->nx = (int64_t)roundf(in_x);
  s->yl = in_y - (float)s->ty;
  s->xl = in_x - (float)s->lx;
  return true;
}

static weft_status_t *crop_grad_inputs(weft_kernel_ctx_t *ctx, int grads_at, int boxes_at,
                                       weft_tensor_view_t *grads, weft_tensor_view_t *boxes,
                                       weft_tensor_view_t *ind, int64_t *nb) {
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, grads_at, grads));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, boxes_at, boxes));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, boxes_at + 1, ind));
  char buf[CPU_SHAPE_STR_LEN];
  if (grads->rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "grads image must be 4-D%s",
                           shape_of(grads, buf));
  if (grads->dims[1] <= 0 || grads->dims[2] <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "grads dimensions must be positive");
  WEFT_RETURN_IF_ERROR(crop_boxes(ctx, boxes, ind, nb));
  if (grads->dims[0] != *nb)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "boxes and grads have incompatible shape");
  return NULL;
}

static weft_status_t *k_crop_grad_image(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t grads, boxes, ind, size, y;
  int64_t nb;
  WEFT_RETURN_IF_ERROR(crop_grad_inputs(ctx, 0, 1, &grads, &boxes, &ind, &nb));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 3, &size));
  if (size.rank != 1 || size.num_elements != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image_size must be 1-D with 4 elements");
  int64_t is[4], n = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &size, "image_size", is, 4, &n));
  int64_t batch = is[0], ih = is[1], iw = is[2], depth = is[3];
  if (ih <= 0 || iw <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image dimensions must be positive");
  if (grads.dims[3] != depth)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image_size and grads are incompatible");
  const char *method = "bilinear";
  size_t mlen = 0;
  weft_status_t *st = H->attr_string(H->kernel_attrs(ctx), "method", &method, &mlen);
  if (st != NULL) {
    H->status_free(st);
    method = "bilinear";
  }
  bool nearest = strcmp(method, "nearest") == 0;
  weft_dtype_t dt = WEFT_DT_FLOAT;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "T", WEFT_DT_FLOAT, &dt));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, 4, is, &y));
  WEFT_RETURN_IF_ERROR(crop_box_images(ctx, &ind, nb, batch));
  if (y.num_elements == 0) return NULL;
  double *acc = calloc((size_t)y.num_elements, sizeof *acc);
  if (acc == NULL) return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  int64_t ch = grads.dims[1], cw = grads.dims[2];
  const float *bx = boxes.data;
  crop_sample_t p;
  for (int64_t b = 0; b < nb; b++) {
    int64_t bi = weft__cpu_index_at(&ind, b);
    for (int64_t yy = 0; yy < ch; yy++)
      for (int64_t xx = 0; xx < cw; xx++) {
        if (!crop_sample(bx + b * 4, ih, iw, ch, cw, yy, xx, &p)) continue;
        for (int64_t d = 0; d < depth; d++) {
          double g = ld(&grads, ((b * ch + yy) * cw + xx) * depth + d);
#define CG_AT(Y, X) acc[((bi * ih + (Y)) * iw + (X)) * depth + d]
          if (nearest) {
            CG_AT(p.ny, p.nx) += g;
          } else {
            CG_AT(p.ty, p.lx) += (1 - p.yl) * (1 - p.xl) * g;
            CG_AT(p.ty, p.rx) += (1 - p.yl) * p.xl * g;
            CG_AT(p.by, p.lx) += p.yl * (1 - p.xl) * g;
            CG_AT(p.by, p.rx) += p.yl * p.xl * g;
          }
#undef CG_AT
        }
      }
  }
  for (int64_t i = 0; i < y.num_elements; i++) weft__cpu_store_f(dt, y.data, i, acc[i]);
  free(acc);
  return NULL;
}

static weft_status_t *k_crop_grad_boxes(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t grads, img, boxes, ind, y;
  int64_t nb;
  WEFT_RETURN_IF_ERROR(crop_grad_inputs(ctx, 0, 2, &grads, &boxes, &ind, &nb));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &img));
  char buf[CPU_SHAPE_STR_LEN];
  if (img.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input image must be 4-D%s",
                           shape_of(&img, buf));
  int64_t batch = img.dims[0], ih = img.dims[1], iw = img.dims[2], depth = img.dims[3];
  if (ih <= 0 || iw <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image dimensions must be positive");
  if (grads.dims[3] != depth)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "image, grads depth differ");
  int64_t dims[2] = {nb, 4};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_FLOAT, 2, dims, &y));
  WEFT_RETURN_IF_ERROR(crop_box_images(ctx, &ind, nb, batch));
  int64_t ch = grads.dims[1], cw = grads.dims[2];
  const float *bx = boxes.data;
  float *out = y.data;
  for (int64_t b = 0; b < nb; b++) {
    int64_t bi = weft__cpu_index_at(&ind, b);
    /* d in_y / d y1 = (ih - 1) - yy * ratio and d in_y / d y2 = yy * ratio (both (ih - 1) / 2
     * for a one-row crop); likewise for x. */
    double hr = ch > 1 ? (double)(ih - 1) / (double)(ch - 1) : 0;
    double wr = cw > 1 ? (double)(iw - 1) / (double)(cw - 1) : 0;
    double acc[4] = {0, 0, 0, 0};
    crop_sample_t p;
    for (int64_t yy = 0; yy < ch; yy++)
      for (int64_t xx = 0; xx < cw; xx++) {
        if (!crop_sample(bx + b * 4, ih, iw, ch, cw, yy, xx, &p)) continue;
        double dy1 = ch > 1 ? (double)(ih - 1) - (double)yy * hr : 0.5 * (double)(ih - 1);
        double dy2 = ch > 1 ? (double)yy * hr : 0.5 * (double)(ih - 1);
        double dx1 = cw > 1 ? (double)(iw - 1) - (double)xx * wr : 0.5 * (double)(iw - 1);
        double dx2 = cw > 1 ? (double)xx * wr : 0.5 * (double)(iw - 1);
        for (int64_t d = 0; d < depth; d++) {
#define CB_AT(Y, X) (double)ld(&img, ((bi * ih + (Y)) * iw + (X)) * depth + d)
          double tl = CB_AT(p.ty, p.lx), tr = CB_AT(p.ty, p.rx);
          double bl = CB_AT(p.by, p.lx), br = CB_AT(p.by, p.rx);
#undef CB_AT
          double g = ld(&grads, ((b * ch + yy) * cw + xx) * depth + d);
          double gy = ((1 - p.xl) * (bl - tl) + p.xl * (br - tr)) * g;
          double gx = ((1 - p.yl) * (tr - tl) + p.yl * (br - bl)) * g;
          acc[0] += gy * dy1;
          acc[2] += gy * dy2;
          acc[1] += gx * dx1;
          acc[3] += gx * dx2;
        }
      }
    for (int k = 0; k < 4; k++) out[b * 4 + k] = (float)acc[k];
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * RGBToHSV and HSVToRGB: TensorFlow's Eigen expressions (colorspace_op.h) per pixel, in the
 * input's precision (double for float64, float otherwise). */

#define RGB_TO_HSV(T)                                                                        \
  static void rgb_to_hsv_##T(T r, T g, T b, T *h, T *s, T *v) {                              \
    T mx = r > g ? r : g, mn = r < g ? r : g;                                                \
    mx = mx > b ? mx : b;                                                                    \
    mn = mn < b ? mn : b;                                                                    \
    T range = mx - mn;                                                                       \
    *s = mx > 0 ? range / mx : 0;                                                            \
    T norm = (T)1 / range * ((T)1 / (T)6);                                                   \
    T hh = r == mx ? norm * (g - b)                                                          \
                   : (g == mx ? norm * (b - r) + (T)2 / (T)6 : norm * (r - g) + (T)4 / (T)6); \
    hh = range > 0 ? hh : 0;                                                                 \
    *h = hh < 0 ? hh + 1 : hh;                                                               \
    *v = mx;                                                                                 \
  }                                                                                          \
  static T clamp01_##T(T x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }                          \
  static void hsv_to_rgb_##T(T h, T s, T v, T *r, T *g, T *b) {                              \
    T dh = h * (T)6;                                                                         \
    T dr = clamp01_##T(fabs(dh - 3) - 1), dg = clamp01_##T(-fabs(dh - 2) + 2);              \
    T db = clamp01_##T(-fabs(dh - 4) + 2), one_s = -s + 1;                                   \
    *r = (one_s + s * dr) * v;                                                               \
    *g = (one_s + s * dg) * v;                                                               \
    *b = (one_s + s * db) * v;                                                               \
  }
RGB_TO_HSV(float)
RGB_TO_HSV(double)

static weft_status_t *k_rgb_hsv(weft_kernel_ctx_t *ctx, void *state) {
  bool to_hsv = state == NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be at least 1D%s",
                           shape_of(&x, (char[CPU_SHAPE_STR_LEN]){0}));
  int64_t ch = x.dims[x.rank - 1];
  if (ch != 3)
    return weft__cpu_error(ctx, WEFT_FAILED_PRECONDITION,
                           "input must have 3 channels but input only has %lld channels.",
                           (long long)ch);
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  for (int64_t p = 0; p < x.num_elements / 3; p++) {
    if (x.dtype == WEFT_DT_DOUBLE) {
      const double *a = (const double *)x.data + 3 * p;
      double *o = (double *)y.data + 3 * p;
      if (to_hsv)
        rgb_to_hsv_double(a[0], a[1], a[2], &o[0], &o[1], &o[2]);
      else
        hsv_to_rgb_double(a[0], a[1], a[2], &o[0], &o[1], &o[2]);
    } else {
      float o[3], a0 = ld(&x, 3 * p), a1 = ld(&x, 3 * p + 1), a2 = ld(&x, 3 * p + 2);
      if (to_hsv)
        rgb_to_hsv_float(a0, a1, a2, &o[0], &o[1], &o[2]);
      else
        hsv_to_rgb_float(a0, a1, a2, &o[0], &o[1], &o[2]);
      for (int k = 0; k < 3; k++) weft__cpu_store_f(x.dtype, y.data, 3 * p + k, o[k]);
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * AdjustHue and AdjustSaturation (adjust_hue_op.cc, adjust_saturation_op.cc): float per pixel. */

static void rgb_to_hv_range(float r, float g, float b, float *h, float *vmin, float *vmax) {
  float vmid;
  int cat;
  if (r < g) {
    if (b < r) {
      *vmax = g, vmid = r, *vmin = b, cat = 1;
    } else if (b > g) {
      *vmax = b, vmid = g, *vmin = r, cat = 3;
    } else {
      *vmax = g, vmid = b, *vmin = r, cat = 2;
    }
  } else {
    if (b < g) {
      *vmax = r, vmid = g, *vmin = b, cat = 0;
    } else if (b > r) {
      *vmax = b, vmid = r, *vmin = g, cat = 4;
    } else {
      *vmax = r, vmid = b, *vmin = g, cat = 5;
    }
  }
  if (*vmax == *vmin) {
    *h = 0;
    return;
  }
  float ratio = (vmid - *vmin) / (*vmax - *vmin);
  *h = (float)cat + ((cat & 1) == 0 ? ratio : 1 - ratio);
}

static void hv_range_to_rgb(float h, float vmin, float vmax, float *r, float *g, float *b) {
  int cat = (int)h;
  float ratio = h - (float)cat;
  if ((cat & 1) != 0) ratio = 1 - ratio;
  float vmid = vmin + ratio * (vmax - vmin);
  switch (cat) {
    case 0: *r = vmax, *g = vmid, *b = vmin; break;
    case 1: *r = vmid, *g = vmax, *b = vmin; break;
    case 2: *r = vmin, *g = vmax, *b = vmid; break;
    case 3: *r = vmin, *g = vmid, *b = vmax; break;
    case 4: *r = vmid, *g = vmin, *b = vmax; break;
    default: *r = vmax, *g = vmin, *b = vmid; break;
  }
}

static void sat_rgb_to_hsv(float r, float g, float b, float *h, float *s, float *v) {
  float vv = fmaxf(r, fmaxf(g, b));
  float range = vv - fminf(r, fminf(g, b));
  *s = vv > 0 ? range / vv : 0;
  float norm = 1.0f / (6.0f * range), hh;
  if (r == vv)
    hh = norm * (g - b);
  else if (g == vv)
    hh = (float)(norm * (b - r) + 2.0 / 6.0);
  else
    hh = (float)(norm * (r - g) + 4.0 / 6.0);
  if (range <= 0.0) hh = 0;
  if (hh < 0.0) hh = hh + 1;
  *v = vv;
  *h = hh;
}

static void sat_hsv_to_rgb(float h, float s, float v, float *r, float *g, float *b) {
  float c = s * v, m = v - c, dh = h * 6, rr, gg, bb;
  int cat = (int)dh;
  float fmodu = dh;
  while (fmodu <= 0) fmodu += 2.0f;
  while (fmodu >= 2.0f) fmodu -= 2.0f;
  float x = c * (1 - fabsf(fmodu - 1));
  switch (cat) {
    case 0: rr = c, gg = x, bb = 0; break;
    case 1: rr = x, gg = c, bb = 0; break;
    case 2: rr = 0, gg = c, bb = x; break;
    case 3: rr = 0, gg = x, bb = c; break;
    case 4: rr = x, gg = 0, bb = c; break;
    case 5: rr = c, gg = 0, bb = x; break;
    default: rr = 0, gg = 0, bb = 0; break;
  }
  *r = rr + m;
  *g = gg + m;
  *b = bb + m;
}

static weft_status_t *k_adjust_hue_sat(weft_kernel_ctx_t *ctx, void *state) {
  bool hue = state == NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char buf[CPU_SHAPE_STR_LEN];
  if (x.rank < 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be at least 3-D, got shape%s",
                           shape_of(&x, buf));
  float f;
  WEFT_RETURN_IF_ERROR(scalar_float(ctx, 1, hue ? "delta" : "scale", &f));
  int64_t ch = x.dims[x.rank - 1];
  if (ch != 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "input must have 3 channels but instead has %lld channels.",
                           (long long)ch);
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  for (int64_t p = 0; p < x.num_elements / 3; p++) {
    float a0 = ld(&x, 3 * p), a1 = ld(&x, 3 * p + 1), a2 = ld(&x, 3 * p + 2), o[3];
    if (hue) {
      float h, vmin, vmax;
      rgb_to_hv_range(a0, a1, a2, &h, &vmin, &vmax);
      h += f * 6;
      while (h < 0) h += 6;
      while (h >= 6) h -= 6;
      hv_range_to_rgb(h, vmin, vmax, &o[0], &o[1], &o[2]);
    } else {
      float h, s, v;
      sat_rgb_to_hsv(a0, a1, a2, &h, &s, &v);
      s = fminf(1.0f, fmaxf(0.0f, s * f));
      sat_hsv_to_rgb(h, s, v, &o[0], &o[1], &o[2]);
    }
    for (int k = 0; k < 3; k++) weft__cpu_store_f(x.dtype, y.data, 3 * p + k, o[k]);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * AdjustContrast (v1: any real input, float output clamped to [min_value, max_value]) and
 * AdjustContrastv2 (half or float): per image and channel, mean + factor * (x - mean), the mean
 * over height and width. */

static weft_status_t *k_adjust_contrast(weft_kernel_ctx_t *ctx, void *state) {
  bool v1 = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char buf[CPU_SHAPE_STR_LEN];
  if (x.rank < 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be at least 3-D, got shape%s",
                           shape_of(&x, buf));
  float factor, lo = -INFINITY, hi = INFINITY;
  WEFT_RETURN_IF_ERROR(scalar_float(ctx, 1, "contrast_factor", &factor));
  if (v1) {
    WEFT_RETURN_IF_ERROR(scalar_float(ctx, 2, "min_value", &lo));
    WEFT_RETURN_IF_ERROR(scalar_float(ctx, 3, "max_value", &hi));
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, v1 ? WEFT_DT_FLOAT : x.dtype, &x, &y));
  int64_t h = x.dims[x.rank - 3], w = x.dims[x.rank - 2], c = x.dims[x.rank - 1];
  if (x.num_elements == 0) return NULL;
  int64_t batch = x.num_elements / (h * w * c);
  bool dbl = x.dtype == WEFT_DT_DOUBLE; /* v1 reads float64 input in double, then rounds */
  for (int64_t b = 0; b < batch; b++)
    for (int64_t ci = 0; ci < c; ci++) {
      int64_t base = b * h * w * c + ci;
      double sum = 0;
      for (int64_t k = 0; k < h * w; k++) sum += dbl ? weft__cpu_get_double(&x, base + k * c)
                                                     : ld(&x, base + k * c);
      float mean = (float)(sum / (double)(h * w));
      for (int64_t k = 0; k < h * w; k++) {
        float v = ld(&x, base + k * c);
        float o = v1 ? (v - mean) * factor + mean : mean + factor * (v - mean);
        if (v1) o = fmaxf(fminf(o, hi), lo);
        weft__cpu_store_f(y.dtype, y.data, base + k * c, o);
      }
    }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * ExtractImagePatches */

static weft_status_t *patch_list(weft_kernel_ctx_t *ctx, const char *name, const char *what,
                                 int64_t *a, int64_t *b) {
  const int64_t *v = NULL;
  size_t n = 0;
  weft_status_t *st = H->attr_int_list(H->kernel_attrs(ctx), name, &v, &n);
  if (st != NULL) {
    H->status_free(st);
    n = 0;
  }
  if (n != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Sliding window %s field must specify 4 dimensions", name);
  if (v[0] != 1 || v[3] != 1)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "Only support %s across space.", what);
  if (v[1] < 1 || v[2] < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be positive", name);
  *a = v[1];
  *b = v[2];
  return NULL;
}

static weft_status_t *k_extract_patches(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t kr, kc, sr, sc, rr, rc;
  WEFT_RETURN_IF_ERROR(patch_list(ctx, "ksizes", "ksizes", &kr, &kc));
  WEFT_RETURN_IF_ERROR(patch_list(ctx, "strides", "strides", &sr, &sc));
  WEFT_RETURN_IF_ERROR(patch_list(ctx, "rates", "rates", &rr, &rc));
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char buf[CPU_SHAPE_STR_LEN];
  if (x.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be 4-dimensional%s",
                           shape_of(&x, buf));
  const char *pad = "VALID";
  size_t plen = 0;
  weft_status_t *st = H->attr_string(H->kernel_attrs(ctx), "padding", &pad, &plen);
  if (st != NULL) {
    H->status_free(st);
    pad = "VALID";
  }
  bool same = strcmp(pad, "SAME") == 0;
  int64_t n = x.dims[0], ih = x.dims[1], iw = x.dims[2], d = x.dims[3];
  int64_t ekr = kr + (kr - 1) * (rr - 1), ekc = kc + (kc - 1) * (rc - 1);
  int64_t oh, ow, pt = 0, pl = 0;
  if (same) {
    oh = (ih + sr - 1) / sr;
    ow = (iw + sc - 1) / sc;
    pt = imax(0, (oh - 1) * sr + ekr - ih) / 2;
    pl = imax(0, (ow - 1) * sc + ekc - iw) / 2;
  } else {
    oh = (ih - ekr + sr) / sr;
    ow = (iw - ekc + sc) / sc;
  }
  if (oh < 0) oh = 0;
  if (ow < 0) ow = 0;
  int64_t dims[4] = {n, oh, ow, kr * kc * d};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 4, dims, &y));
  if (y.num_elements == 0) return NULL;
  size_t es = weft__cpu_dtype_size(x.dtype);
  const char *src = x.data;
  char *dst = y.data;
  for (int64_t b = 0; b < n; b++)
    for (int64_t r = 0; r < oh; r++)
      for (int64_t c = 0; c < ow; c++)
        for (int64_t i = 0; i < kr; i++)
          for (int64_t j = 0; j < kc; j++) {
            int64_t yy = r * sr - pt + i * rr, xx = c * sc - pl + j * rc;
            char *o = dst + (size_t)((((b * oh + r) * ow + c) * kr * kc + i * kc + j) * d) * es;
            if (yy < 0 || yy >= ih || xx < 0 || xx >= iw)
              memset(o, 0, (size_t)d * es);
            else
              memcpy(o, src + (size_t)(((b * ih + yy) * iw + xx) * d) * es, (size_t)d * es);
          }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * NonMaxSuppression V1..V5 (non_max_suppression_op.cc). state: the version (1..5). The scores,
 * thresholds and soft-NMS weights live in T (half rounds after each step). */

static float round_t(weft_dtype_t dt, float v) {
  return dt == WEFT_DT_HALF ? weft__cpu_half_to_float(weft__cpu_float_to_half(v)) : v;
}

static float nms_iou(const weft_tensor_view_t *boxes, int64_t i, int64_t j) {
  float bi[4], bj[4];
  for (int k = 0; k < 4; k++) {
    bi[k] = ld(boxes, i * 4 + k);
    bj[k] = ld(boxes, j * 4 + k);
  }
  float ymin_i = fminf(bi[0], bi[2]), xmin_i = fminf(bi[1], bi[3]);
  float ymax_i = fmaxf(bi[0], bi[2]), xmax_i = fmaxf(bi[1], bi[3]);
  float ymin_j = fminf(bj[0], bj[2]), xmin_j = fminf(bj[1], bj[3]);
  float ymax_j = fmaxf(bj[0], bj[2]), xmax_j = fmaxf(bj[1], bj[3]);
  float area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i);
  float area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j);
  if (area_i <= 0 || area_j <= 0) return 0.0f;
  float iy0 = fmaxf(ymin_i, ymin_j), ix0 = fmaxf(xmin_i, xmin_j);
  float iy1 = fminf(ymax_i, ymax_j), ix1 = fminf(xmax_i, xmax_j);
  float inter = fmaxf(iy1 - iy0, 0.0f) * fmaxf(ix1 - ix0, 0.0f);
  return inter / (area_i + area_j - inter);
}

/* A threshold input: scalar, `what` names it. */
static weft_status_t *nms_scalar(weft_kernel_ctx_t *ctx, int index, const char *what, float *out) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &v));
  char buf[CPU_SHAPE_STR_LEN];
  if (v.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be 0-D, got shape %s", what,
                           shape_of(&v, buf));
  *out = ld(&v, 0);
  return NULL;
}

typedef struct nms_cand {
  int64_t index;
  float score;
  int64_t suppress_begin;
  bool live;
} nms_cand_t;

static weft_status_t *k_nms(weft_kernel_ctx_t *ctx, void *state) {
  int version = (int)(intptr_t)state;
  weft_tensor_view_t boxes, scores, mos;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &boxes));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &scores));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &mos));
  char buf[CPU_SHAPE_STR_LEN];
  if (mos.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "max_output_size must be 0-D, got shape %s",
                           shape_of(&mos, buf));
  float iou_t, score_t = -FLT_MAX, sigma = 0;
  if (version == 1) {
    iou_t = weft__cpu_attr_float(ctx, "iou_threshold", 0.5f);
  } else {
    WEFT_RETURN_IF_ERROR(nms_scalar(ctx, 3, "iou_threshold", &iou_t));
  }
  if (!(iou_t >= 0 && iou_t <= 1))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "iou_threshold must be in [0, 1]");
  if (version >= 3) WEFT_RETURN_IF_ERROR(nms_scalar(ctx, 4, "score_threshold", &score_t));
  if (version == 5) {
    WEFT_RETURN_IF_ERROR(nms_scalar(ctx, 5, "soft_nms_sigma", &sigma));
    if (!(sigma >= 0))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "soft_nms_sigma_val must be non-negative value");
  }
  if (boxes.rank != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "boxes must be 2-D%s",
                           shape_of(&boxes, buf));
  int64_t nb = boxes.dims[0];
  if (boxes.dims[1] != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "boxes must have 4 columns");
  if (scores.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "scores must be 1-D%s (Shape must be rank 1 but is rank %d)",
                           shape_of(&scores, buf), scores.rank);
  if (scores.dims[0] != nb)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "scores has incompatible shape (Dimensions must be equal, but are "
                           "%lld and %lld)",
                           (long long)nb, (long long)scores.dims[0]);
  int64_t max_out = weft__cpu_index_at(&mos, 0);
  if (max_out < 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "output size must be non-negative");
  weft_dtype_t dt = scores.dtype;
  bool pad = version >= 4 && weft__cpu_attr_bool(ctx, "pad_to_max_output_size", false);
  nms_cand_t *cand = malloc(sizeof *cand * (size_t)(nb > 0 ? nb : 1));
  int64_t cap = max_out < nb ? max_out : nb;
  int32_t *sel = malloc(sizeof(int32_t) * (size_t)(cap > 0 ? cap : 1));
  float *sel_scores = malloc(sizeof(float) * (size_t)(cap > 0 ? cap : 1));
  if (cand == NULL || sel == NULL || sel_scores == NULL) {
    free(cand);
    free(sel);
    free(sel_scores);
    return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  }
  /* The thresholds are T_threshold (float or half) compared with T scores. */
  iou_t = round_t(dt, iou_t);
  score_t = version >= 3 ? round_t(dt, score_t) : score_t;
  int64_t n_live = 0;
  for (int64_t i = 0; i < nb; i++) {
    float s = ld(&scores, i);
    cand[i] = (nms_cand_t){i, s, 0, s > score_t};
    n_live += cand[i].live;
  }
  bool soft = sigma > 0;
  float scale = soft ? round_t(dt, -0.5f / sigma) : 0.0f;
  int64_t n_sel = 0;
  while (n_sel < max_out && n_live > 0) {
    /* The queue's top: the highest score, the lower index among equal scores. */
    int64_t best = -1;
    for (int64_t i = 0; i < nb; i++)
      if (cand[i].live && (best < 0 || cand[i].score > cand[best].score)) best = i;
    nms_cand_t *c = &cand[best];
    c->live = false;
    n_live--;
    float original = c->score;
    bool hard = false;
    for (int64_t j = n_sel - 1; j >= c->suppress_begin; j--) {
      float sim = round_t(dt, nms_iou(&boxes, c->index, sel[j]));
      float weight = round_t(dt, expf(round_t(dt, round_t(dt, scale * sim) * sim)));
      weight = soft || sim <= iou_t ? weight : 0.0f;
      c->score = round_t(dt, c->score * weight);
      if (!soft && sim > iou_t) {
        hard = true;
        break;
      }
      if (c->score <= score_t) break;
    }
    c->suppress_begin = n_sel;
    if (!hard) {
      if (c->score == original) {
        sel[n_sel] = (int32_t)c->index;
        sel_scores[n_sel++] = c->score;
        continue;
      }
      if (c->score > score_t) {
        c->live = true;
        n_live++;
      }
    }
  }
  free(cand);
  int64_t n_valid = n_sel, n_outp = pad ? max_out : n_sel;
  weft_tensor_view_t out;
  weft_status_t *err = weft__cpu_output(ctx, 0, WEFT_DT_INT32, 1, &n_outp, &out);
  if (err == NULL) {
    for (int64_t i = 0; i < n_outp; i++) ((int32_t *)out.data)[i] = i < n_sel ? sel[i] : 0;
    if (version == 5) {
      err = weft__cpu_output(ctx, 1, dt, 1, &n_outp, &out);
      if (err == NULL)
        for (int64_t i = 0; i < n_outp; i++)
          weft__cpu_store_f(dt, out.data, i, i < n_sel ? sel_scores[i] : 0);
    }
    if (err == NULL && version >= 4) {
      err = weft__cpu_output(ctx, version == 5 ? 2 : 1, WEFT_DT_INT32, 0, NULL, &out);
      if (err == NULL) *(int32_t *)out.data = (int32_t)n_valid;
    }
  }
  free(sel);
  free(sel_scores);
  return err;
}

/* ---------------------------------------------------------------------------------------------
 * DrawBoundingBoxes and DrawBoundingBoxesV2 (draw_bounding_box_op.cc): a copy of the images with
 * each box's outline drawn in colour bb % n_colours; corners scale by (size - 1) and truncate;
 * inverted boxes and boxes wholly outside the image are skipped, edges outside are not drawn. */

/* float -> int64 truncating toward zero like C++'s cast, saturating far outside any image
 * (where the cast itself would be undefined). */
static int64_t trunc_i64(float v) {
  if (v >= 4e18f) return INT64_C(4000000000000000000);
  if (v <= -4e18f) return -INT64_C(4000000000000000000);
  return (int64_t)v;
}

static const float default_colors[10][4] = {
    {1, 1, 0, 1},   {0, 0, 1, 1}, {1, 0, 0, 1},   {0, 1, 0, 1}, {0.5f, 0, 0.5f, 1},
    {0.5f, 0.5f, 0, 1}, {0.5f, 0, 0, 1}, {0, 0, 0.5f, 1}, {0, 1, 1, 1}, {1, 0, 1, 1}};

static weft_status_t *k_draw_boxes(weft_kernel_ctx_t *ctx, void *state) {
  bool v2 = state != NULL;
  weft_tensor_view_t img, boxes, colors, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &img));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &boxes));
  if (img.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The rank of the images should be 4");
  if (boxes.rank != 3)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "The rank of the boxes tensor should be 3");
  if (img.dims[0] != boxes.dims[0])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The batch sizes should be the same");
  int64_t depth = img.dims[3], h = img.dims[1], w = img.dims[2];
  if (depth != 1 && depth != 3 && depth != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Channel depth should be either 1 (GRY), 3 (RGB), or 4 (RGBA)");
  /* TensorFlow reads the first 4 values of each box; fewer would read past the tensor. */
  if (boxes.dims[2] < 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "boxes must have at least 4 coordinates, not %lld",
                           (long long)boxes.dims[2]);
  const float *table = &default_colors[0][0];
  int64_t n_colors = 10, stride = 4;
  float grey[10][4];
  if (v2) {
    char buf[CPU_SHAPE_STR_LEN];
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &colors));
    if (colors.rank != 2)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "colors must be a 2-D matrix%s",
                             shape_of(&colors, buf));
    if (colors.dims[1] < depth)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "colors must have equal or more channels than the image provided: "
                             "%s",
                             shape_of(&colors, buf));
    if (colors.num_elements != 0) {
      table = colors.data;
      n_colors = colors.dims[0];
      stride = colors.dims[1];
    }
  }
  if (depth == 1 && table == &default_colors[0][0]) {
    /* Grey images draw the default colours at full intensity. */
    memcpy(grey, default_colors, sizeof grey);
    for (int i = 0; i < 10; i++) grey[i][0] = 1;
    table = &grey[0][0];
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, img.dtype, &img, &y));
  if (img.num_elements > 0)
    memcpy(y.data, img.data, (size_t)img.num_elements * weft__cpu_dtype_size(img.dtype));
  const float *bx = boxes.data;
  int64_t nb = boxes.dims[1], bstride = boxes.dims[2];
  for (int64_t b = 0; b < img.dims[0]; b++)
    for (int64_t k = 0; k < nb; k++) {
      const float *box = bx + (b * nb + k) * bstride;
      const float *color = table + (k % n_colors) * stride;
      float fr0 = box[0] * (float)(h - 1), fr1 = box[2] * (float)(h - 1);
      float fc0 = box[1] * (float)(w - 1), fc1 = box[3] * (float)(w - 1);
      if (isnan(fr0) || isnan(fr1) || isnan(fc0) || isnan(fc1)) continue;
      int64_t r0 = trunc_i64(fr0), r1 = trunc_i64(fr1), c0 = trunc_i64(fc0), c1 = trunc_i64(fc1);
      if (r0 > r1 || c0 > c1) continue;               /* inverted */
      if (r0 >= h || r1 < 0 || c0 >= w || c1 < 0) continue; /* wholly outside */
      int64_t r0c = imax(r0, 0), r1c = imin(r1, h - 1), c0c = imax(c0, 0), c1c = imin(c1, w - 1);
#define PAINT(R, C)                                                                     \
  for (int64_t ch = 0; ch < depth; ch++)                                                \
  weft__cpu_store_f(img.dtype, y.data, ((b * h + (R)) * w + (C)) * depth + ch, color[ch])
      if (r0 >= 0)
        for (int64_t j = c0c; j <= c1c; j++) PAINT(r0, j);
      if (r1 < h)
        for (int64_t j = c0c; j <= c1c; j++) PAINT(r1, j);
      if (c0 >= 0)
        for (int64_t i = r0c; i <= r1c; i++) PAINT(i, c0);
      if (c1 < w)
        for (int64_t i = r0c; i <= r1c; i++) PAINT(i, c1);
#undef PAINT
    }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const char *const size_host[] = {"size", NULL};
static const char *const crop_host[] = {"crop_size", NULL};
static const char *const crop_grad_host[] = {"image_size", NULL};
static const char *const nms_host[] = {"max_output_size", NULL};
static int v1_tag;

static weft_status_t *reg_nms(const weft_registrar_t *reg, const char *op, int version) {
  void *ud = (void *)(intptr_t)version;
  if (version == 1) {
    weft_cpu_kernel_spec_t s = {op, k_nms, NULL, NULL, 0, nms_host, NULL, NULL, ud};
    return weft__cpu_register(reg, &s);
  }
  if (version == 5) {
    weft_cpu_kernel_spec_t s = {op, k_nms, "T", half_float, 2, nms_host, NULL, NULL, ud};
    return weft__cpu_register(reg, &s);
  }
  weft_type_constraint_t tc[2] = {{.attr = "T", .dtypes = half_float, .n_dtypes = 2},
                                  {.attr = "T_threshold", .dtypes = half_float, .n_dtypes = 2}};
  return weft__cpu_register_full(reg, op, tc, 2, nms_host, NULL, k_nms, NULL, ud);
}

weft_status_t *weft__cpu_register_image(const weft_registrar_t *reg) {
  const weft_cpu_kernel_spec_t specs[] = {
      {"ResizeBilinear", k_resize_bilinear, "T", resize_types, N_OF(resize_types), size_host,
       NULL, NULL, NULL},
      {"ResizeNearestNeighbor", k_resize_nearest, "T", resize_types, N_OF(resize_types),
       size_host, NULL, NULL, NULL},
      {"ResizeBilinearGrad", k_resize_bilinear_grad, "T", bilinear_grad_types,
       N_OF(bilinear_grad_types), NULL, NULL, NULL, NULL},
      {"ResizeNearestNeighborGrad", k_resize_nearest_grad, "T", nearest_grad_types,
       N_OF(nearest_grad_types), size_host, NULL, NULL, NULL},
      {"ResizeBicubic", k_resize_bicubic, "T", resize_types, N_OF(resize_types), size_host, NULL,
       NULL, NULL},
      {"ResizeBicubicGrad", k_resize_bicubic_grad, "T", bicubic_grad_types,
       N_OF(bicubic_grad_types), NULL, NULL, NULL, NULL},
      {"ResizeArea", k_resize_area, "T", resize_types, N_OF(resize_types), size_host, NULL, NULL,
       NULL},
      {"CropAndResize", k_crop_and_resize, "T", crop_types, N_OF(crop_types), crop_host, NULL,
       NULL, NULL},
      {"CropAndResizeGradImage", k_crop_grad_image, "T", crop_grad_image_types,
       N_OF(crop_grad_image_types), crop_grad_host, NULL, NULL, NULL},
      {"CropAndResizeGradBoxes", k_crop_grad_boxes, "T", crop_grad_boxes_types,
       N_OF(crop_grad_boxes_types), NULL, NULL, NULL, NULL},
      {"RGBToHSV", k_rgb_hsv, "T", hsv_types, N_OF(hsv_types), NULL, NULL, NULL, NULL},
      {"HSVToRGB", k_rgb_hsv, "T", hsv_types, N_OF(hsv_types), NULL, NULL, NULL, &v1_tag},
      {"AdjustHue", k_adjust_hue_sat, "T", half_float, N_OF(half_float), NULL, NULL, NULL, NULL},
      {"AdjustSaturation", k_adjust_hue_sat, "T", half_float, N_OF(half_float), NULL, NULL, NULL,
       &v1_tag},
      {"AdjustContrastv2", k_adjust_contrast, "T", half_float, N_OF(half_float), NULL, NULL,
       NULL, NULL},
      {"AdjustContrast", k_adjust_contrast, "T", contrast_types, N_OF(contrast_types), NULL,
       NULL, NULL, &v1_tag},
      {"DrawBoundingBoxes", k_draw_boxes, "T", half_float, N_OF(half_float), NULL, NULL, NULL,
       NULL},
      {"DrawBoundingBoxesV2", k_draw_boxes, "T", half_float, N_OF(half_float), NULL, NULL, NULL,
       &v1_tag},
      {"ExtractImagePatches", k_extract_patches, "T", patch_types, N_OF(patch_types), NULL, NULL,
       NULL, NULL},
  };
  WEFT_RETURN_IF_ERROR(weft__cpu_register_specs(reg, specs, N_OF(specs)));
  WEFT_RETURN_IF_ERROR(reg_nms(reg, "NonMaxSuppression", 1));
  WEFT_RETURN_IF_ERROR(reg_nms(reg, "NonMaxSuppressionV2", 2));
  WEFT_RETURN_IF_ERROR(reg_nms(reg, "NonMaxSuppressionV3", 3));
  WEFT_RETURN_IF_ERROR(reg_nms(reg, "NonMaxSuppressionV4", 4));
  return reg_nms(reg, "NonMaxSuppressionV5", 5);
}
