/* ops_codec.c: TensorFlow's image codec ops (tensorflow/core/ops/image_ops.cc): DecodeJpeg,
 * DecodeAndCropJpeg, EncodeJpeg, ExtractJpegShape, DecodePng, EncodePng, DecodeBmp, DecodeGif and
 * DecodeImage, with TensorFlow's names, args, attrs, defaults and shape functions, so an input
 * pipeline's GraphDef imports as it is. Kernels: plugins/cpu/cpu_codec.c. */
#include "ops_shape.h"

/* contents must be a scalar string. */
static weft_status_t *scalar_contents(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  return weft__sh_with_rank(ctx, &in, 0, "contents");
}

/* The channels attr as a dim: 0 means "whatever the file has", unknown until run time. */
static int64_t channels_dim(weft_shape_ctx_t *ctx) {
  int64_t c = weft__sh_attr_int(ctx, "channels", 0);
  return c > 0 ? c : WEFT_DIM_UNKNOWN;
}

/* DecodeJpeg, DecodePng, DecodeBmp (DecodeImageShapeFn): [?, ?, channels]. */
static weft_status_t *decode_image_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx));
  weft__shape_t out = weft__sh_unknown_dims(3);
  out.dims[2] = channels_dim(ctx);
  return weft__sh_output(ctx, 0, &out);
}

/* DecodeGif: [frames, ?, ?, 3]. */
static weft_status_t *decode_gif_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx));
  weft__shape_t out = weft__sh_unknown_dims(4);
  out.dims[3] = 3;
  return weft__sh_output(ctx, 0, &out);
}

/* DecodeImage: a GIF gives 4-D when expand_animations, everything else 3-D, so the rank is only
 * known when expand_animations is false (DecodeImageV2ShapeFn). */
static weft_status_t *decode_image_v2_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx));
  if (weft__sh_attr_bool(ctx, "expand_animations", true)) {
    weft__shape_t out = {.rank = -1};
    return weft__sh_output(ctx, 0, &out);
  }
  return decode_image_shape(ctx);
}

/* DecodeAndCropJpeg: [crop_window[2], crop_window[3], channels] when crop_window is constant. */
static weft_status_t *decode_and_crop_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx));
  weft__shape_t win;
  weft__sh_input(ctx, 1, &win);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &win, 1, "crop_window"));
  weft__shape_t out = weft__sh_unknown_dims(3);
  out.dims[2] = channels_dim(ctx);
  int64_t *v = NULL, n = 0;
  if (weft__sh_const_ints(ctx, 1, &v, &n, NULL)) {
    if (n == 4 && v[2] >= 0 && v[3] >= 0) out.dims[0] = v[2], out.dims[1] = v[3];
    g_free(v);
  }
  return weft__sh_output(ctx, 0, &out);
}

/* EncodeJpeg, EncodePng: a 3-D image into one string. */
static weft_status_t *encode_image_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t in;
  weft__sh_input(ctx, 0, &in);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &in, 3, "image"));
  weft__shape_t out = {.rank = 0};
  return weft__sh_output(ctx, 0, &out);
}

/* ExtractJpegShape: [3] (height, width, channels). */
static weft_status_t *extract_jpeg_shape_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx));
  weft__shape_t out = {.rank = 1, .dims = {3}};
  return weft__sh_output(ctx, 0, &out);
}

#define JPEG_DECODE_ATTRS                                                                  \
  "channels: int = 0", "ratio: int = 1", "fancy_upscaling: bool = true",                   \
      "try_recover_truncated: bool = false", "acceptable_fraction: float = 1",             \
      "dct_method: string = ''"

const weft_op_def_t weft__ops_codec[] = {
    WEFT__OP("DecodeJpeg", WEFT__SPECS("contents: string"), WEFT__SPECS("image: uint8"),
             WEFT__SPECS(JPEG_DECODE_ATTRS), 0, decode_image_shape),
    WEFT__OP("DecodeAndCropJpeg", WEFT__SPECS("contents: string", "crop_window: int32"),
             WEFT__SPECS("image: uint8"), WEFT__SPECS(JPEG_DECODE_ATTRS), 0,
             decode_and_crop_shape),
    WEFT__OP("EncodeJpeg", WEFT__SPECS("image: uint8"), WEFT__SPECS("contents: string"),
             WEFT__SPECS("format: {'', 'grayscale', 'rgb'} = ''", "quality: int = 95",
                         "progressive: bool = false", "optimize_size: bool = false",
                         "chroma_downsampling: bool = true",
                         "density_unit: {'in', 'cm'} = 'in'", "x_density: int = 300",
                         "y_density: int = 300", "xmp_metadata: string = ''"),
             0, encode_image_shape),
    WEFT__OP("ExtractJpegShape", WEFT__SPECS("contents: string"),
             WEFT__SPECS("image_shape: output_type"),
             WEFT__SPECS("output_type: {int32, int64} = DT_INT32"), 0, extract_jpeg_shape_shape),
    WEFT__OP("DecodePng", WEFT__SPECS("contents: string"), WEFT__SPECS("image: dtype"),
             WEFT__SPECS("channels: int = 0", "dtype: {uint8, uint16} = DT_UINT8"), 0,
             decode_image_shape),
    WEFT__OP("EncodePng", WEFT__SPECS("image: T"), WEFT__SPECS("contents: string"),
             WEFT__SPECS("compression: int = -1", "T: {uint8, uint16} = DT_UINT8"), 0,
             encode_image_shape),
    WEFT__OP("DecodeBmp", WEFT__SPECS("contents: string"), WEFT__SPECS("image: uint8"),
             WEFT__SPECS("channels: int = 0"), 0, decode_image_shape),
    WEFT__OP("DecodeGif", WEFT__SPECS("contents: string"), WEFT__SPECS("image: uint8"),
             WEFT__NO_SPECS, 0, decode_gif_shape),
    WEFT__OP("DecodeImage", WEFT__SPECS("contents: string"), WEFT__SPECS("image: dtype"),
             WEFT__SPECS("channels: int = 0", "dtype: {uint8, uint16, float} = DT_UINT8",
                         "expand_animations: bool = true"),
             0, decode_image_v2_shape),
    WEFT__OPS_END,
};
