/* cpu_codec.c: the CPU kernels of TensorFlow's image codec ops (core/src/graph/ops_codec.c):
 * DecodeJpeg, DecodeAndCropJpeg, DecodePng, DecodeGif, DecodeBmp, DecodeImage, EncodeJpeg,
 * EncodePng and ExtractJpegShape. The checks, limits and messages follow TensorFlow 1.15's
 * kernels (decode_image_op.cc, decode_bmp_op.cc, encode_jpeg_op.cc, encode_png_op.cc,
 * extract_jpeg_shape_op.cc) and libraries (lib/jpeg/jpeg_mem.cc, lib/png/png_io.cc,
 * lib/gif/gif_io.cc); DecodeImage is the later DecodeImageV2Op. The same libraries do the work
 * (libjpeg-turbo, libpng, giflib) with the same settings, so pixels match TensorFlow's.
 *
 * Every byte here may come from a hostile file: libjpeg's and libpng's fatal errors longjmp
 * back to the decoder that set the jump (never exit()), declared sizes are checked against
 * TensorFlow's limits before anything is allocated, and every failure is an INVALID_ARGUMENT
 * status. Each decoder writes into a buffer it owns (freed on every path), which the kernel then
 * copies or converts into the output tensor. */
#include <gif_lib.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* TensorFlow's ceiling on decoded JPEG and PNG sizes (samples for JPEG, pixels for PNG). */
#define MAX_PIXELS (INT64_C(1) << 29)
/* libjpeg's own allocations (a progressive file's coefficients, read whole before the first
 * line) stop here: past it libjpeg errors out instead of asking for a hostile file's gigabytes. */
#define JPEG_MAX_MEMORY (INT64_C(1) << 31)

static weft_status_t *invalid(weft_kernel_ctx_t *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static weft_status_t *invalid(weft_kernel_ctx_t *ctx, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s", msg);
}

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

/* The scalar string input 0 (TensorFlow's "contents must be scalar" check). */
static weft_status_t *scalar_contents(weft_kernel_ctx_t *ctx, const weft_string_t **s) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &v));
  if (v.dtype != WEFT_DT_STRING || v.rank != 0) {
    char sh[CPU_SHAPE_STR_LEN];
    return invalid(ctx, "contents must be scalar, got shape %s",
                   weft__cpu_shape_str(v.rank, v.dims, sh, sizeof sh));
  }
  *s = v.data;
  return NULL;
}

/* A decoded image: rank 3 [h, w, c] or 4 [frames, h, w, c], 8 or 16 bits a sample. */
typedef struct {
  void *px;
  int bits;
  int rank;
  int64_t dims[4];
} image_t;

static int64_t image_samples(const image_t *img) {
  int64_t n = 1;
  for (int i = 0; i < img->rank; i++) n *= img->dims[i];
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * JPEG (jpeg_mem.cc, jpeg_handle.cc) */

typedef struct {
  int components; /* 0, 1 or 3 */
  int ratio;
  bool fancy_upscaling, try_recover_truncated;
  float min_acceptable_fraction;
  J_DCT_METHOD dct_method;
  bool crop;
  int64_t crop_x, crop_y, crop_w, crop_h;
} jpeg_flags_t;

static jpeg_flags_t jpeg_default_flags(void) {
  /* TensorFlow's UncompressFlags defaults, IFAST as its kernels choose for dct_method ''. */
  return (jpeg_flags_t){.ratio = 1, .fancy_upscaling = true, .min_acceptable_fraction = 1.0f,
                        .dct_method = JDCT_IFAST};
}

typedef struct {
  struct jpeg_error_mgr pub;
  jmp_buf jump;
} jpeg_err_t;

/* error_exit: back to the setjmp of the function that started libjpeg (libjpeg's own would
 * exit() the process). */
static void jpeg_error_jump(j_common_ptr cinfo) {
  jpeg_err_t *err = (jpeg_err_t *)cinfo->err;
  longjmp(err->jump, 1);
}

/* Warnings and errors stay out of the process's stderr: a hostile file could flood it. */
static void jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

static void jpeg_init_err(jpeg_err_t *err) {
  jpeg_std_error(&err->pub);
  err->pub.error_exit = jpeg_error_jump;
  err->pub.output_message = jpeg_quiet;
}

/* The memory source of jpeg_handle.cc: at the end of a truncated file it supplies a fake EOI
 * once when try_recover_truncated is set (libjpeg then fills the missing lines), and errors
 * otherwise. TensorFlow's also reads pub.bytes_in_buffer and the read pointer on entry, which
 * libjpeg's marker reader has not synced at that point (it keeps them in locals), and can then
 * hand back the same bytes or EOIs forever on a cut file: here only the whole buffer having been
 * read (libjpeg's contract for fill_input_buffer) and a flag decide. */
typedef struct {
  struct jpeg_source_mgr pub;
  size_t len;
  bool recover, eoi_inserted;
} jpeg_src_t;

static const JOCTET kJpegEoi[2] = {0xFF, JPEG_EOI};

static void jsrc_init(j_decompress_ptr cinfo) { (void)cinfo; }
static void jsrc_term(j_decompress_ptr cinfo) { (void)cinfo; }

static boolean jsrc_fill(j_decompress_ptr cinfo) {
  jpeg_src_t *src = (jpeg_src_t *)cinfo->src;
  if (src->len == 0) {
    ERREXIT(cinfo, JERR_INPUT_EMPTY);
    return FALSE;
  }
  if (!src->eoi_inserted && src->recover) {
    WARNMS(cinfo, JWRN_JPEG_EOF);
    src->eoi_inserted = true;
    src->pub.next_input_byte = kJpegEoi;
    src->pub.bytes_in_buffer = 2;
    return TRUE;
  }
  ERREXIT(cinfo, JERR_FILE_READ);
  return FALSE;
}

static void jsrc_skip(j_decompress_ptr cinfo, long jump) {
  jpeg_src_t *src = (jpeg_src_t *)cinfo->src;
  if (jump < 0) return;
  if ((unsigned long)jump > src->pub.bytes_in_buffer) {
    src->pub.bytes_in_buffer = 0;
    (void)jsrc_fill(cinfo);
  } else {
    src->pub.bytes_in_buffer -= (size_t)jump;
    src->pub.next_input_byte += jump;
  }
}

static void jpeg_set_src(j_decompress_ptr cinfo, jpeg_src_t *src, const uint8_t *data,
                         size_t len, bool recover) {
  memset(src, 0, sizeof *src);
  src->pub.init_source = jsrc_init;
  src->pub.fill_input_buffer = jsrc_fill;
  src->pub.skip_input_data = jsrc_skip;
  src->pub.resync_to_restart = jpeg_resync_to_restart;
  src->pub.term_source = jsrc_term;
  src->pub.next_input_byte = data;
  src->pub.bytes_in_buffer = len;
  src->len = len;
  src->recover = recover;
  cinfo->src = &src->pub;
}

/* jpeg::Uncompress: true with *img filled, or false for any failure (TensorFlow reports them all
 * as one message). */
static bool jpeg_uncompress(const uint8_t *data, size_t len, const jpeg_flags_t *f,
                            image_t *img) {
  struct jpeg_decompress_struct cinfo;
  jpeg_err_t err;
  jpeg_src_t src;
  /* Assigned after setjmp and used by its error branch, hence volatile. */
  uint8_t *volatile out = NULL;
  JSAMPLE *volatile tmp = NULL;
  memset(&cinfo, 0, sizeof cinfo);
  if (f->components != 0 && f->components != 1 && f->components != 3) return false;
  jpeg_init_err(&err);
  cinfo.err = &err.pub;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    free(out);
    free(tmp);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.mem->max_memory_to_use = JPEG_MAX_MEMORY;
  jpeg_set_src(&cinfo, &src, data, len, f->try_recover_truncated);
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) longjmp(err.jump, 1);
  int components = f->components;
  if (components == 0) components = cinfo.num_components < 3 ? cinfo.num_components : 3;
  switch (components) {
    case 1: cinfo.out_color_space = JCS_GRAYSCALE; break;
    case 3:
      /* libjpeg decodes CMYK (and YCCK to CMYK); the conversion to RGB is TensorFlow's. */
      cinfo.out_color_space = (cinfo.jpeg_color_space == JCS_CMYK ||
                               cinfo.jpeg_color_space == JCS_YCCK) ? JCS_CMYK : JCS_RGB;
      break;
    default: longjmp(err.jump, 1);
  }
  cinfo.do_fancy_upsampling = f->fancy_upscaling ? TRUE : FALSE;
  cinfo.scale_num = 1;
  cinfo.scale_denom = (unsigned)f->ratio;
  cinfo.dct_method = f->dct_method;
  /* The size before anything is decoded, so a hostile header cannot make us allocate. */
  jpeg_calc_output_dimensions(&cinfo);
  int64_t total = (int64_t)cinfo.output_height * cinfo.output_width * cinfo.num_components;
  if (cinfo.output_width == 0 || cinfo.output_height == 0 || total >= MAX_PIXELS)
    longjmp(err.jump, 1);
  if (!jpeg_start_decompress(&cinfo)) longjmp(err.jump, 1);
  int64_t out_w = cinfo.output_width, out_h = cinfo.output_height;
  JDIMENSION skipped = 0;
  if (f->crop) {
    /* IsCropWindowValid, in int64 so a hostile window cannot overflow the sums. */
    if (f->crop_w <= 0 || f->crop_h <= 0 || f->crop_x < 0 || f->crop_y < 0 ||
        f->crop_y + f->crop_h > out_h || f->crop_x + f->crop_w > out_w)
      longjmp(err.jump, 1);
    out_w = f->crop_w;
    out_h = f->crop_h;
    JDIMENSION cx = (JDIMENSION)f->crop_x, cw = (JDIMENSION)f->crop_w;
    /* cx moves left to an iMCU boundary and cw grows to match: the realignment below takes
     * the exact window out of the wider lines. */
    jpeg_crop_scanline(&cinfo, &cx, &cw);
    skipped = jpeg_skip_scanlines(&cinfo, (JDIMENSION)f->crop_y);
    if (skipped != (JDIMENSION)f->crop_y) longjmp(err.jump, 1);
  }
  const size_t stride = (size_t)out_w * (size_t)components;
  out = malloc(stride * (size_t)out_h);
  if (!out) longjmp(err.jump, 1);
  const bool realign = out_w != (int64_t)cinfo.output_width;
  const bool cmyk = cinfo.out_color_space == JCS_CMYK;
  if (cmyk || realign) {
    tmp = malloc((size_t)cinfo.output_width * (cmyk ? 4 : (size_t)components));
    if (!tmp) longjmp(err.jump, 1);
  }
  const size_t align = (size_t)(cinfo.output_width - out_w) * (cmyk ? 4 : (size_t)components);
  int64_t height_read = out_h;
  bool truncated = false;
  const JDIMENSION last = skipped + (JDIMENSION)out_h;
  uint8_t *line = out;
  while (cinfo.output_scanline < last) {
    JSAMPROW row = (cmyk || realign) ? tmp : line;
    JDIMENSION got = jpeg_read_scanlines(&cinfo, &row, 1);
    if (got == 0) {
      if (!f->try_recover_truncated) {
        height_read = cinfo.output_scanline - skipped;
        truncated = true;
      } else {
        /* As TensorFlow: the first missing line black, the others copies of the one above. */
        for (JDIMENSION l = cinfo.output_scanline; l < last; l++) {
          if (l == 0) memset(line, 0, stride);
          else memcpy(line, line - stride, stride);
          line += stride;
        }
        cinfo.output_scanline = last;
      }
      break;
    }
    if (cmyk) {
      const JSAMPLE *p = tmp + (realign ? align : 0);
      for (int64_t i = 0; i < out_w; i++) {
        int c = p[4 * i], m = p[4 * i + 1], y = p[4 * i + 2], k = p[4 * i + 3];
        if (cinfo.saw_Adobe_marker) { /* Adobe writes inverted CMYK */
          line[3 * i] = (uint8_t)(k * c / 255);
          line[3 * i + 1] = (uint8_t)(k * m / 255);
          line[3 * i + 2] = (uint8_t)(k * y / 255);
        } else {
          line[3 * i] = (uint8_t)((255 - k) * (255 - c) / 255);
          line[3 * i + 1] = (uint8_t)((255 - k) * (255 - m) / 255);
          line[3 * i + 2] = (uint8_t)((255 - k) * (255 - y) / 255);
        }
      }
    } else if (realign) {
      memcpy(line, tmp + align, stride);
    }
    line += stride;
  }
  free(tmp);
  tmp = NULL;
  if (!truncated) {
    if (f->crop && cinfo.output_scanline < cinfo.output_height)
      jpeg_skip_scanlines(&cinfo, cinfo.output_height - cinfo.output_scanline);
    jpeg_finish_decompress(&cinfo);
  } else {
    jpeg_abort_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  /* Uncompress's acceptance: enough of the lines read, the rest black. */
  float fraction = out_h == 0 ? 1.0f : (float)height_read / (float)out_h;
  float need = f->min_acceptable_fraction < 1.0f ? f->min_acceptable_fraction : 1.0f;
  if (fraction < need) {
    free(out);
    out = NULL;
    return false;
  }
  if (height_read < out_h)
    memset(out + (size_t)height_read * stride, 0, (size_t)(out_h - height_read) * stride);
  *img = (image_t){.px = out, .bits = 8, .rank = 3, .dims = {out_h, out_w, components}};
  return true;
}

/* jpeg::GetImageInfo: the output size and components of a default decode, from the headers
 * alone (TensorFlow starts the decompressor for them; the sizes are the same). */
static bool jpeg_image_info(const uint8_t *data, size_t len, int64_t *h, int64_t *w,
                            int64_t *c) {
  if (len == 0) return false;
  struct jpeg_decompress_struct cinfo;
  jpeg_err_t err;
  jpeg_src_t src;
  memset(&cinfo, 0, sizeof cinfo);
  jpeg_init_err(&err);
  cinfo.err = &err.pub;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_set_src(&cinfo, &src, data, len, false);
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) longjmp(err.jump, 1);
  jpeg_calc_output_dimensions(&cinfo);
  *h = cinfo.output_height;
  *w = cinfo.output_width;
  *c = cinfo.output_components;
  jpeg_destroy_decompress(&cinfo);
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * PNG (png_io.cc) */

/* The unread part of an encoded file, for libpng's and giflib's read callbacks. */
typedef struct {
  const uint8_t *data;
  size_t left;
} mem_reader_t;

static void png_read_cb(png_structp png, png_bytep out, png_size_t n) {
  mem_reader_t *r = png_get_io_ptr(png);
  if (r->left < n) {
    memset(out, 0, n);
    png_error(png, "More bytes requested to read than available");
  }
  memcpy(out, r->data, n);
  r->data += n;
  r->left -= n;
}

/* libpng's fatal errors jump back to the caller's setjmp; its default would print first. */
static void png_error_cb(png_structp png, png_const_charp msg) {
  (void)msg;
  png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_LITTLE_ENDIAN 1
#else
#define HOST_LITTLE_ENDIAN 0
#endif

/* CommonInitDecode + CommonFinishDecode: channels 0..4, bits 8 or 16. NULL with *img filled. */
static weft_status_t *png_decode(weft_kernel_ctx_t *ctx, const uint8_t *data, size_t len,
                                 int want_channels, int bits, image_t *img) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, png_error_cb,
                                           png_warning_cb);
  if (!png) return oom(ctx);
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, NULL, NULL);
    return oom(ctx);
  }
  mem_reader_t reader = {data, len};
  uint8_t *volatile out = NULL;
  volatile int stage = 0; /* 0: the header, 1: the pixels */
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, NULL);
    free(out);
    return stage == 0 ? invalid(ctx, "Invalid PNG header, data size %zu", len)
                      : invalid(ctx, "Invalid PNG data, size %zu", len);
  }
  png_set_read_fn(png, &reader, png_read_cb);
  png_read_info(png, info);
  png_uint_32 w, h;
  int bit_depth, color_type;
  png_get_IHDR(png, info, &w, &h, &bit_depth, &color_type, NULL, NULL, NULL);
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  int channels = want_channels;
  if (channels == 0) {
    if (color_type == PNG_COLOR_TYPE_PALETTE) channels = has_trns ? 4 : 3;
    else channels = png_get_channels(png, info);
  }
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if ((channels & 1) == 0) { /* alpha wanted */
    if (has_alpha) {
    } else if (has_trns) {
      png_set_tRNS_to_alpha(png);
    } else {
      /* TensorFlow's filler, (1 << bit_depth) - 1 of the file's depth. */
      png_set_add_alpha(png, (png_uint_32)((1u << bit_depth) - 1), PNG_FILLER_AFTER);
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (bit_depth > 8 && bits <= 8) png_set_strip_16(png);
  const bool synth16 = bit_depth <= 8 && bits == 16;
  png_set_packing(png);
  const int passes = png_set_interlace_handling(png);
  if (bits > 8 && HOST_LITTLE_ENDIAN) png_set_swap(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool want_gray = channels < 3;
  const bool is_gray = !(color_type & PNG_COLOR_MASK_COLOR);
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (want_gray) {
    if (!is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  } else if (is_gray) {
    png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, info);
  /* The kernel's size check (int dims with room to multiply), before the pixels are allocated. */
  if (w == 0 || h == 0 || w >= (1u << 27) || h >= (1u << 27) ||
      (int64_t)w * (int64_t)h >= MAX_PIXELS) {
    png_destroy_read_struct(&png, &info, NULL);
    return invalid(ctx, "PNG size too large for int: %u by %u", (unsigned)w, (unsigned)h);
  }
  const int read_bytes = synth16 ? 1 : bits / 8;
  const size_t row_bytes = (size_t)w * (size_t)channels * (size_t)read_bytes;
  /* libpng's rows must be exactly the size we allocate (a transform we did not expect would
   * otherwise write past them). */
  if (png_get_rowbytes(png, info) != row_bytes) {
    png_destroy_read_struct(&png, &info, NULL);
    return invalid(ctx, "Invalid PNG header, data size %zu", len);
  }
  out = malloc(row_bytes * h * (synth16 ? 2 : 1));
  if (!out) {
    png_destroy_read_struct(&png, &info, NULL);
    return oom(ctx);
  }
  stage = 1;
  for (int p = 0; p < passes; p++) {
    uint8_t *row = out;
    for (png_uint_32 y = 0; y < h; y++, row += row_bytes) png_read_row(png, row, NULL);
  }
  png_read_end(png, info);
  png_destroy_read_struct(&png, &info, NULL);
  uint8_t *px = out;
  if (synth16) { /* 8 bits to 16 as TensorFlow's Convert8to16: v * 257, back to front */
    uint16_t *o = (uint16_t *)(void *)px;
    for (size_t i = row_bytes * h; i-- > 0;) o[i] = (uint16_t)(px[i] * 257u);
  }
  *img = (image_t){.px = px, .bits = bits, .rank = 3, .dims = {h, w, channels}};
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * GIF (gif_io.cc) */

static int gif_read_cb(GifFileType *gif, GifByteType *buf, int n) {
  mem_reader_t *r = gif->UserData;
  size_t k = n < 0 ? 0 : (size_t)n;
  if (k > r->left) k = r->left;
  memcpy(buf, r->data, k);
  r->data += k;
  r->left -= k;
  return (int)k;
}

static const char *gif_error_string(int code) {
  const char *s = GifErrorString(code);
  return s ? s : "Unknown error";
}

/* DGifSlurp, with the sizes checked before each frame's raster is allocated (giflib's own would
 * allocate whatever a frame header declares). The rasters belong to gif (DGifCloseFile frees
 * them). NULL on success, else the reason. */
static const char *gif_slurp(GifFileType *gif, char *why, size_t why_len) {
  GifRecordType type;
  int64_t raster_bytes = 0; /* frames may be larger than the canvas: they count too */
  do {
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) goto gif_error;
    if (type == IMAGE_DESC_RECORD_TYPE) {
      if (DGifGetImageDesc(gif) == GIF_ERROR) goto gif_error;
      SavedImage *sp = &gif->SavedImages[gif->ImageCount - 1];
      int64_t w = sp->ImageDesc.Width, h = sp->ImageDesc.Height;
      if (w <= 0 || h <= 0 || w * h >= MAX_PIXELS) {
        snprintf(why, why_len, "frame %d has an invalid size %lld by %lld", gif->ImageCount - 1,
                 (long long)w, (long long)h);
        return why;
      }
      /* The output holds every frame at the canvas's size: refuse before it grows past int. */
      raster_bytes += w * h;
      if ((int64_t)gif->ImageCount * gif->SWidth * gif->SHeight * 3 > INT32_MAX ||
          raster_bytes > INT32_MAX) {
        snprintf(why, why_len, "%d frames of %d by %d are too large", gif->ImageCount,
                 gif->SWidth, gif->SHeight);
        return why;
      }
      sp->RasterBits = malloc((size_t)(w * h));
      if (!sp->RasterBits) {
        snprintf(why, why_len, "out of memory");
        return why;
      }
      if (sp->ImageDesc.Interlace) {
        static const int offset[] = {0, 4, 2, 1}, jump[] = {8, 8, 4, 2};
        for (int i = 0; i < 4; i++)
          for (int64_t j = offset[i]; j < h; j += jump[i])
            if (DGifGetLine(gif, sp->RasterBits + j * w, (int)w) == GIF_ERROR) goto gif_error;
      } else if (DGifGetLine(gif, sp->RasterBits, (int)(w * h)) == GIF_ERROR) {
        goto gif_error;
      }
    } else if (type == EXTENSION_RECORD_TYPE) {
      /* TensorFlow 1.15 reads no extension (no transparency, no delays): skipped. */
      int code;
      GifByteType *ext = NULL;
      if (DGifGetExtension(gif, &code, &ext) == GIF_ERROR) goto gif_error;
      while (ext != NULL)
        if (DGifGetExtensionNext(gif, &ext) == GIF_ERROR) goto gif_error;
    }
  } while (type != TERMINATE_RECORD_TYPE);
  return NULL;
gif_error:
  snprintf(why, why_len, "failed to slurp gif file: %s", gif_error_string(gif->Error));
  return why;
}

/* gif::Decode: every frame (only the first when first_only) on the canvas, RGB. */
static const char *gif_decode(const uint8_t *data, size_t len, bool first_only, image_t *img,
                              char *why, size_t why_len) {
  mem_reader_t reader = {data, len};
  int code = D_GIF_SUCCEEDED;
  GifFileType *gif = DGifOpen(&reader, gif_read_cb, &code);
  if (!gif) {
    snprintf(why, why_len, "failed to open gif file: %s", gif_error_string(code));
    return why;
  }
  const char *fail = gif_slurp(gif, why, why_len);
  if (!fail && gif->ImageCount <= 0) fail = "gif file does not contain any image";
  uint8_t *out = NULL;
  const int64_t W = gif->SWidth, Hh = gif->SHeight, C = 3;
  const int frames = fail ? 0 : first_only ? 1 : gif->ImageCount;
  if (!fail) {
    out = malloc((size_t)(frames * W * Hh * C) + 1);
    if (!out) fail = "out of memory";
  }
  for (int k = 0; !fail && k < frames; k++) {
    uint8_t *dst = out + k * W * Hh * C;
    const SavedImage *im = &gif->SavedImages[k];
    const GifImageDesc *d = &im->ImageDesc;
    int64_t left = d->Left, top = d->Top, right = left + d->Width, bottom = top + d->Height;
    if (d->Left != 0 || d->Top != 0 || d->Width != W || d->Height != Hh) {
      /* A frame short of the canvas: black around the first, the previous frame around the
       * others; and only its part inside the canvas is drawn. */
      if (k == 0) memset(dst, 0, (size_t)(W * Hh * C));
      else memcpy(dst, dst - W * Hh * C, (size_t)(W * Hh * C));
      if (left < 0) left = 0;
      if (top < 0) top = 0;
      if (right > W) right = W;
      if (bottom > Hh) bottom = Hh;
    }
    const ColorMapObject *map = d->ColorMap ? d->ColorMap : gif->SColorMap;
    if (!map) {
      fail = "missing color map";
      break;
    }
    for (int64_t i = top; i < bottom && !fail; i++) {
      uint8_t *p = dst + i * W * C;
      for (int64_t j = left; j < right; j++) {
        GifByteType idx = im->RasterBits[(i - d->Top) * d->Width + (j - d->Left)];
        if (idx >= map->ColorCount) {
          snprintf(why, why_len, "found color index %d outside of color map range %d", idx,
                   map->ColorCount);
          fail = why;
          break;
        }
        const GifColorType *c = &map->Colors[idx];
        p[j * C] = c->Red;
        p[j * C + 1] = c->Green;
        p[j * C + 2] = c->Blue;
      }
    }
  }
  int close_err;
  DGifCloseFile(gif, &close_err);
  if (fail) {
    free(out);
    return fail;
  }
  *img = (image_t){.px = out, .bits = 8, .rank = 4, .dims = {frames, Hh, W, C}};
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * BMP (decode_bmp_op.cc; DecodeImage's channel conversions from DecodeImageV2Op) */

static int32_t le32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

static weft_status_t *bmp_decode(weft_kernel_ctx_t *ctx, const uint8_t *data, size_t len,
                                 int channels, bool v2, image_t *img) {
  if (len < 32)
    return invalid(ctx, "Incomplete bmp content, requires at least 32 bytes to find the header "
                   "size, width, height, and bpp, got %zu bytes", len);
  const int32_t header_size = le32(data + 10), width = le32(data + 18),
                height = le32(data + 22);
  const int16_t bpp = (int16_t)(data[28] | data[29] << 8);
  const int img_channels = bpp / 8;
  int out_channels;
  if (v2) {
    if (channels == 1)
      return invalid(ctx, "`channels` must be 0, 3 or 4 for BMP, but got %d", channels);
    if (img_channels != 1 && img_channels != 3 && img_channels != 4)
      return invalid(ctx, "Number of channels inherent in the image must be 1, 3 or 4, was %d",
                     img_channels);
    out_channels = channels ? channels : img_channels;
  } else {
    if (channels && channels != img_channels)
      return invalid(ctx, "channels attribute %d does not match bits per pixel from file %d",
                     channels, img_channels);
    if (img_channels != 1 && img_channels != 3 && img_channels != 4)
      return invalid(ctx, "Number of channels must be 1, 3 or 4, was %d", img_channels);
    out_channels = img_channels;
  }
  if (width <= 0) return invalid(ctx, "Width must be positive");
  if (height == 0) return invalid(ctx, "Height must be nonzero");
  if (header_size < 0) return invalid(ctx, "header size must be nonnegative");
  const int64_t abs_h = height < 0 ? -(int64_t)height : height;
  if ((int64_t)width * abs_h >= INT32_MAX / 8)
    return invalid(ctx, "Total possible pixel bytes must be less than 2^30 as encoded in int32, "
                   "got %lld", (long long)((int64_t)width * abs_h));
  /* Rows are padded to 4 bytes. */
  const int64_t row_size = ((int64_t)img_channels * width + 3) / 4 * 4;
  const int64_t need = (int64_t)header_size + (abs_h - 1) * row_size +
                       (int64_t)(width - 1) * img_channels + img_channels;
  if (need > (int64_t)len)
    return invalid(ctx, "Incomplete bmp content, requires at least %lld bytes, got %zu bytes",
                   (long long)need, len);
  uint8_t *out = malloc((size_t)(abs_h * width * out_channels));
  if (!out) return oom(ctx);
  const bool top_down = height < 0;
  const uint8_t *pix = data + header_size;
  for (int64_t i = 0; i < abs_h; i++) {
    const uint8_t *src = pix + (top_down ? i : abs_h - 1 - i) * row_size;
    uint8_t *dst = out + i * width * out_channels;
    for (int64_t j = 0; j < width; j++, src += img_channels, dst += out_channels) {
      if (img_channels == 1) {
        dst[0] = src[0];
        if (out_channels >= 3) dst[1] = dst[2] = src[0];
        if (out_channels == 4) dst[3] = 0xFF;
      } else { /* BGR(A) -> RGB(A) */
        dst[0] = src[2];
        dst[1] = src[1];
        dst[2] = src[0];
        if (out_channels == 4) dst[3] = img_channels == 4 ? src[3] : 0xFF;
      }
    }
  }
  *img = (image_t){.px = out, .bits = 8, .rank = 3, .dims = {abs_h, width, out_channels}};
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The decode kernels (DecodeImageOp of 1.15 for the format ops, DecodeImageV2Op for DecodeImage)
 */

typedef enum { OP_JPEG, OP_CROP_JPEG, OP_PNG, OP_GIF, OP_BMP, OP_IMAGE } decode_op_t;
static const decode_op_t kDecodeOps[] = {OP_JPEG, OP_CROP_JPEG, OP_PNG, OP_GIF, OP_BMP, OP_IMAGE};

typedef enum { FMT_UNKNOWN, FMT_JPEG, FMT_PNG, FMT_GIF, FMT_BMP } file_format_t;

static file_format_t classify(const weft_string_t *s) {
  const uint8_t *p = (const uint8_t *)s->data;
  if (s->len >= 3 && memcmp(p, "\xff\xd8\xff", 3) == 0) return FMT_JPEG;
  if (s->len >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) return FMT_PNG;
  if (s->len >= 4 && memcmp(p, "GIF8", 4) == 0) return FMT_GIF;
  if (s->len >= 2 && memcmp(p, "BM", 2) == 0) return FMT_BMP;
  return FMT_UNKNOWN;
}

static const char *format_name(file_format_t f) {
  switch (f) {
    case FMT_JPEG: return "JPEG";
    case FMT_PNG: return "PNG";
    case FMT_GIF: return "GIF";
    case FMT_BMP: return "BMP";
    default: return "unknown format";
  }
}

/* absl::CEscape of the first 16 bytes, for the unknown-format message. */
static void c_escape16(const weft_string_t *s, char *out, size_t out_len) {
  size_t o = 0, n = s->len < 16 ? s->len : 16;
  for (size_t i = 0; i < n && o + 5 < out_len; i++) {
    unsigned char c = (unsigned char)s->data[i];
    const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '"' ? "\\\""
                      : c == '\'' ? "\\'" : c == '\\' ? "\\\\" : NULL;
    if (esc) o += (size_t)snprintf(out + o, out_len - o, "%s", esc);
    else if (c < 0x20 || c >= 0x7f) o += (size_t)snprintf(out + o, out_len - o, "\\%03o", c);
    else out[o++] = (char)c;
  }
  out[o] = '\0';
}

/* The output tensor from a decoded image: a copy, or DecodeImage's conversions (8-bit samples
 * times 256 to uint16 or over 255 to float, 16-bit over 65535 to float). */
static weft_status_t *emit(weft_kernel_ctx_t *ctx, const image_t *img, weft_dtype_t dtype) {
  weft_tensor_view_t out;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dtype, img->rank, img->dims, &out));
  const int64_t n = image_samples(img);
  if (n == 0) return NULL;
  if (img->bits == 8) {
    const uint8_t *s = img->px;
    if (dtype == WEFT_DT_UINT8) memcpy(out.data, s, (size_t)n);
    else if (dtype == WEFT_DT_UINT16)
      for (int64_t i = 0; i < n; i++) ((uint16_t *)out.data)[i] = (uint16_t)(s[i] * 256u);
    else
      for (int64_t i = 0; i < n; i++) ((float *)out.data)[i] = (float)s[i] * (1.0f / 255.0f);
  } else {
    const uint16_t *s = img->px;
    if (dtype == WEFT_DT_UINT16) memcpy(out.data, s, (size_t)n * 2);
    else
      for (int64_t i = 0; i < n; i++) ((float *)out.data)[i] = (float)s[i] * (1.0f / 65535.0f);
  }
  return NULL;
}

typedef struct {
  decode_op_t op;
  int channels;
  weft_dtype_t dtype;
  bool expand_animations;
  jpeg_flags_t jpeg;
} decode_args_t;

/* The attrs, checked as TensorFlow's constructors check them. */
static weft_status_t *decode_args(weft_kernel_ctx_t *ctx, decode_op_t op, decode_args_t *a) {
  *a = (decode_args_t){.op = op, .dtype = WEFT_DT_UINT8, .expand_animations = true,
                       .jpeg = jpeg_default_flags()};
  if (op == OP_GIF) {
    a->channels = 3;
  } else {
    int64_t c = weft__cpu_attr_int(ctx, "channels", 0);
    if (op == OP_IMAGE && c != 0 && c != 1 && c != 3 && c != 4)
      return invalid(ctx, "`channels` must be 0, 1, 3 or 4 but got %lld", (long long)c);
    if (op == OP_BMP && c != 0 && c != 1 && c != 3 && c != 4)
      return invalid(ctx, "channels must be 0, 1, 3 or 4, got %lld", (long long)c);
    if (c != 0 && c != 1 && c != 3 && c != 4)
      return invalid(ctx, "channels must be 0, 1, 3, or 4, got %lld", (long long)c);
    a->channels = (int)c;
  }
  if (op == OP_PNG || op == OP_IMAGE) {
    WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "dtype", WEFT_DT_UINT8, &a->dtype));
    if (a->dtype != WEFT_DT_UINT8 && a->dtype != WEFT_DT_UINT16 &&
        (op == OP_PNG || a->dtype != WEFT_DT_FLOAT))
      return invalid(ctx, "dtype %s is not supported", weft__cpu_dtype_name(a->dtype));
  }
  if (op == OP_IMAGE) a->expand_animations = weft__cpu_attr_bool(ctx, "expand_animations", true);
  if (op == OP_JPEG || op == OP_CROP_JPEG) {
    int64_t ratio = weft__cpu_attr_int(ctx, "ratio", 1);
    if (ratio != 1 && ratio != 2 && ratio != 4 && ratio != 8)
      return invalid(ctx, "ratio must be 1, 2, 4, or 8, got %lld", (long long)ratio);
    a->jpeg.ratio = (int)ratio;
    a->jpeg.fancy_upscaling = weft__cpu_attr_bool(ctx, "fancy_upscaling", true);
    a->jpeg.try_recover_truncated = weft__cpu_attr_bool(ctx, "try_recover_truncated", false);
    a->jpeg.min_acceptable_fraction = weft__cpu_attr_float(ctx, "acceptable_fraction", 1.0f);
    size_t n;
    const char *dct = weft__cpu_attr_str(ctx, "dct_method", "", &n);
    if (n == strlen("INTEGER_ACCURATE") && memcmp(dct, "INTEGER_ACCURATE", n) == 0)
      a->jpeg.dct_method = JDCT_ISLOW;
    else if (n == 0 || (n == strlen("INTEGER_FAST") && memcmp(dct, "INTEGER_FAST", n) == 0))
      a->jpeg.dct_method = JDCT_IFAST; /* TensorFlow's default for '': speed over quality */
    else
      return invalid(ctx, "dct_method must be one of {'', 'INTEGER_FAST', 'INTEGER_ACCURATE'}");
  }
  return NULL;
}

static weft_status_t *decode_jpeg_format(weft_kernel_ctx_t *ctx, const decode_args_t *a,
                                         const weft_string_t *s, image_t *img) {
  if (a->channels == 4) return invalid(ctx, "JPEG does not support 4 channels");
  jpeg_flags_t f = a->jpeg;
  f.components = a->channels;
  if (a->op == OP_CROP_JPEG) {
    weft_tensor_view_t win;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &win));
    char sh[CPU_SHAPE_STR_LEN];
    weft__cpu_shape_str(win.rank, win.dims, sh, sizeof sh);
    if (win.rank != 1) return invalid(ctx, "crop_window must be 1-D, got shape %s", sh);
    if (win.dims[0] != 4) return invalid(ctx, "crop_size must have four elements %s", sh);
    const int32_t *v = win.data;
    f.crop = true;
    f.crop_y = v[0];
    f.crop_x = v[1];
    f.crop_h = v[2];
    f.crop_w = v[3];
  }
  if (!jpeg_uncompress((const uint8_t *)s->data, s->len, &f, img))
    return invalid(ctx, "Invalid JPEG data or crop window, data size %zu", s->len);
  return NULL;
}

static weft_status_t *k_decode(weft_kernel_ctx_t *ctx, void *state) {
  const decode_op_t op = *(const decode_op_t *)state;
  decode_args_t a;
  WEFT_RETURN_IF_ERROR(decode_args(ctx, op, &a));
  const weft_string_t *s;
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx, &s));
  const uint8_t *data = (const uint8_t *)s->data;
  image_t img = {0};
  weft_status_t *st = NULL;
  if (op == OP_BMP) {
    /* decode_bmp_op.cc reads any bytes as a BMP header. */
    WEFT_RETURN_IF_ERROR(bmp_decode(ctx, data, s->len, a.channels, false, &img));
    st = emit(ctx, &img, WEFT_DT_UINT8);
    free(img.px);
    return st;
  }
  file_format_t fmt = classify(s);
  if (op == OP_IMAGE) {
    if (s->len == 0) return invalid(ctx, "Input is empty.");
    if (fmt == FMT_UNKNOWN)
      return invalid(ctx, "Unknown image file format. One of JPEG, PNG, GIF, BMP required.");
  } else if (fmt != FMT_JPEG && fmt != FMT_PNG && fmt != FMT_GIF) {
    if (s->len == 0) return invalid(ctx, "Expected image (JPEG, PNG, or GIF), got empty file");
    char esc[128];
    c_escape16(s, esc, sizeof esc);
    return invalid(ctx, "Expected image (JPEG, PNG, or GIF), got unknown format starting with "
                   "'%s'", esc);
  }
  if (s->len > INT_MAX)
    return invalid(ctx, "%s contents are too large for int: %zu", format_name(fmt), s->len);
  if (op == OP_PNG && a.dtype == WEFT_DT_UINT16 && fmt != FMT_PNG)
    return invalid(ctx, "%s does not support uint16 output", format_name(fmt));
  switch (fmt) {
    case FMT_JPEG: st = decode_jpeg_format(ctx, &a, s, &img); break;
    case FMT_PNG: {
      int bits = a.dtype == WEFT_DT_UINT8 ? 8 : 16;
      st = png_decode(ctx, data, s->len, a.channels, bits, &img);
      break;
    }
    case FMT_GIF: {
      if (a.channels != 0 && a.channels != 3)
        return invalid(ctx, "channels must be 0 or 3 for GIF, got %d", a.channels);
      char why[256];
      const bool first_only = op == OP_IMAGE && !a.expand_animations;
      const char *fail = gif_decode(data, s->len, first_only, &img, why, sizeof why);
      if (fail) return invalid(ctx, "Invalid GIF data (size %zu), %s", s->len, fail);
      if (op != OP_GIF && !(op == OP_IMAGE && a.expand_animations)) {
        if (img.dims[0] != 1) {
          st = invalid(ctx, "Got %lld frames, but animated gifs can only be decoded by "
                       "tf.image.decode_gif or tf.image.decode_image", (long long)img.dims[0]);
        }
        img.rank = 3;
        memmove(img.dims, img.dims + 1, 3 * sizeof(int64_t));
      }
      break;
    }
    case FMT_BMP: st = bmp_decode(ctx, data, s->len, a.channels, true, &img); break;
    default: break;
  }
  if (!st && img.rank == 3 && op == OP_GIF) { /* DecodeGif of a still image: one frame */
    memmove(img.dims + 1, img.dims, 3 * sizeof(int64_t));
    img.dims[0] = 1;
    img.rank = 4;
  }
  if (!st) st = emit(ctx, &img, a.dtype);
  free(img.px);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * ExtractJpegShape (extract_jpeg_shape_op.cc) */

static weft_status_t *k_extract_jpeg_shape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_string_t *s;
  WEFT_RETURN_IF_ERROR(scalar_contents(ctx, &s));
  weft_dtype_t dt;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "output_type", WEFT_DT_INT32, &dt));
  int64_t v[3];
  if (s->len > INT_MAX || !jpeg_image_info((const uint8_t *)s->data, s->len, &v[0], &v[1], &v[2]))
    return invalid(ctx, "Invalid JPEG data, size %zu", s->len);
  return weft_pc_write_ints(ctx, 0, dt, 1, v, 3);
}

/* ---------------------------------------------------------------------------------------------
 * EncodePng (encode_png_op.cc, png_io.cc's WriteImageToBuffer) */

static void png_write_cb(png_structp png, png_bytep p, png_size_t n) {
  weft__cpu_buf_put(png_get_io_ptr(png), p, n);
}

static void png_flush_cb(png_structp png) { (void)png; }

/* False when libpng refuses (a zero-sized image) or memory runs out. */
static bool png_encode(const uint8_t *image, int64_t h, int64_t w, int channels, int bits,
                       int compression, weft_cpu_buf_t *out) {
  static const int color_types[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                    PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_error_cb,
                                            png_warning_cb);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, NULL);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_set_write_fn(png, out, png_write_cb, png_flush_cb);
  png_set_compression_level(png, compression < 0 ? Z_DEFAULT_COMPRESSION : compression);
  png_set_compression_mem_level(png, MAX_MEM_LEVEL);
  png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, bits, color_types[channels],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  if (bits > 8 && HOST_LITTLE_ENDIAN) png_set_swap(png);
  const size_t row_bytes = (size_t)w * (size_t)channels * (size_t)(bits / 8);
  for (int64_t y = 0; y < h; y++) png_write_row(png, image + (size_t)y * row_bytes);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  return !out->oom;
}

static weft_status_t *k_encode_png(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t compression = weft__cpu_attr_int(ctx, "compression", -1);
  if (compression < -1 || compression > 9)
    return invalid(ctx, "compression should be in [-1,9], got %lld", (long long)compression);
  weft_tensor_view_t in;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &in));
  char sh[CPU_SHAPE_STR_LEN];
  weft__cpu_shape_str(in.rank, in.dims, sh, sizeof sh);
  if (in.dtype != WEFT_DT_UINT8 && in.dtype != WEFT_DT_UINT16)
    return invalid(ctx, "image must be uint8 or uint16, got %s", weft__cpu_dtype_name(in.dtype));
  if (in.rank != 3) return invalid(ctx, "image must be 3-dimensional%s", sh);
  if (in.num_elements >= INT32_MAX)
    return invalid(ctx, "image cannot have >= int32 max elements");
  const int64_t channels = in.dims[2];
  if (channels < 1 || channels > 4)
    return invalid(ctx, "image must have 1, 2, 3, or 4 channels, got %lld", (long long)channels);
  weft_cpu_buf_t buf = {0};
  bool ok = png_encode(in.data, in.dims[0], in.dims[1], (int)channels,
                       in.dtype == WEFT_DT_UINT8 ? 8 : 16, (int)compression, &buf);
  weft_status_t *st = NULL;
  if (!ok) st = weft__cpu_error(ctx, WEFT_INTERNAL, "PNG encoding failed");
  weft_tensor_view_t out;
  if (!st) st = weft__cpu_output(ctx, 0, WEFT_DT_STRING, 0, NULL, &out);
  if (!st) st = H->string_assign(ctx, &out, 0, buf.data ? buf.data : "", buf.len);
  free(buf.data);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * EncodeJpeg (encode_jpeg_op.cc, jpeg_mem.cc's Compress) */

typedef struct {
  int quality;
  bool progressive, optimize_size, chroma_downsampling;
  int density_unit; /* 1: dots per inch, 2: per cm */
  int x_density, y_density;
  const char *xmp;
  size_t xmp_len;
} jpeg_compress_t;

typedef struct {
  struct jpeg_destination_mgr pub;
  weft_cpu_buf_t *out;
  JOCTET chunk[4096];
} jpeg_dest_t;

static void jdst_init(j_compress_ptr cinfo) {
  jpeg_dest_t *d = (jpeg_dest_t *)cinfo->dest;
  d->pub.next_output_byte = d->chunk;
  d->pub.free_in_buffer = sizeof d->chunk;
}

static boolean jdst_empty(j_compress_ptr cinfo) {
  jpeg_dest_t *d = (jpeg_dest_t *)cinfo->dest;
  weft__cpu_buf_put(d->out, d->chunk, sizeof d->chunk);
  if (d->out->oom) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
  jdst_init(cinfo);
  return TRUE;
}

static void jdst_term(j_compress_ptr cinfo) {
  jpeg_dest_t *d = (jpeg_dest_t *)cinfo->dest;
  weft__cpu_buf_put(d->out, d->chunk, sizeof d->chunk - d->pub.free_in_buffer);
}

static bool jpeg_compress(const uint8_t *image, int64_t h, int64_t w, int components,
                          const jpeg_compress_t *f, weft_cpu_buf_t *out) {
  /* Compress's own refusals: empty, or past JPEG's 16-bit dimensions. */
  if (w <= 0 || h <= 0 || w >= 65536 || h >= 65536) return false;
  struct jpeg_compress_struct cinfo;
  jpeg_err_t err;
  jpeg_dest_t dest;
  memset(&cinfo, 0, sizeof cinfo);
  jpeg_init_err(&err);
  cinfo.err = &err.pub;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  memset(&dest, 0, sizeof dest);
  dest.pub.init_destination = jdst_init;
  dest.pub.empty_output_buffer = jdst_empty;
  dest.pub.term_destination = jdst_term;
  dest.out = out;
  cinfo.dest = &dest.pub;
  cinfo.image_width = (JDIMENSION)w;
  cinfo.image_height = (JDIMENSION)h;
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  if (f->optimize_size) cinfo.optimize_coding = TRUE;
  cinfo.density_unit = (UINT8)f->density_unit;
  cinfo.X_density = (UINT16)f->x_density;
  cinfo.Y_density = (UINT16)f->y_density;
  jpeg_set_quality(&cinfo, f->quality, TRUE);
  if (f->progressive) jpeg_simple_progression(&cinfo);
  if (!f->chroma_downsampling) {
    for (int i = 0; i < cinfo.num_components; i++)
      cinfo.comp_info[i].h_samp_factor = cinfo.comp_info[i].v_samp_factor = 1;
  }
  jpeg_start_compress(&cinfo, TRUE);
  if (f->xmp_len > 0) {
    /* XMP rides in APP1 behind its null-terminated namespace (libjpeg refuses a marker over
     * 65533 bytes, which fails the encode as TensorFlow's does). */
    static const char ns[] = "http://ns.adobe.com/xap/1.0/";
    size_t n = sizeof ns + f->xmp_len;
    JOCTET *packet = malloc(n);
    if (!packet) longjmp(err.jump, 1);
    memcpy(packet, ns, sizeof ns);
    memcpy(packet + sizeof ns, f->xmp, f->xmp_len);
    if (n > 65533) {
      free(packet);
      longjmp(err.jump, 1);
    }
    jpeg_write_marker(&cinfo, JPEG_APP0 + 1, packet, (unsigned)n);
    free(packet);
  }
  const size_t stride = (size_t)w * (size_t)components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = (JSAMPROW)(image + (size_t)cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return !out->oom;
}

static weft_status_t *k_encode_jpeg(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  size_t flen, ulen;
  const char *format = weft__cpu_attr_str(ctx, "format", "", &flen);
  int fmt_channels = 0;
  if (flen == 9 && memcmp(format, "grayscale", 9) == 0) fmt_channels = 1;
  else if (flen == 3 && memcmp(format, "rgb", 3) == 0) fmt_channels = 3;
  else if (flen != 0)
    return invalid(ctx, "format must be '', grayscale or rgb, got %.*s", (int)flen, format);
  jpeg_compress_t f = {0};
  int64_t quality = weft__cpu_attr_int(ctx, "quality", 95);
  if (quality < 0 || quality > 100)
    return invalid(ctx, "quality must be in [0,100], got %lld", (long long)quality);
  f.quality = (int)quality;
  f.progressive = weft__cpu_attr_bool(ctx, "progressive", false);
  f.optimize_size = weft__cpu_attr_bool(ctx, "optimize_size", false);
  f.chroma_downsampling = weft__cpu_attr_bool(ctx, "chroma_downsampling", true);
  const char *unit = weft__cpu_attr_str(ctx, "density_unit", "in", &ulen);
  if (ulen == 2 && memcmp(unit, "in", 2) == 0) f.density_unit = 1;
  else if (ulen == 2 && memcmp(unit, "cm", 2) == 0) f.density_unit = 2;
  else return invalid(ctx, "density_unit must be 'in' or 'cm'%.*s", (int)ulen, unit);
  f.x_density = (int)weft__cpu_attr_int(ctx, "x_density", 300);
  f.y_density = (int)weft__cpu_attr_int(ctx, "y_density", 300);
  f.xmp = weft__cpu_attr_str(ctx, "xmp_metadata", "", &f.xmp_len);

  weft_tensor_view_t in;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &in));
  char sh[CPU_SHAPE_STR_LEN];
  weft__cpu_shape_str(in.rank, in.dims, sh, sizeof sh);
  if (in.dtype != WEFT_DT_UINT8)
    return invalid(ctx, "image must be uint8, got %s", weft__cpu_dtype_name(in.dtype));
  if (in.rank != 3) return invalid(ctx, "image must be 3-dimensional%s", sh);
  if (in.num_elements >= INT32_MAX)
    return invalid(ctx, "Cannot encode images with >= max int32 elements");
  int channels;
  if (fmt_channels == 0) {
    channels = (int)in.dims[2];
    if (channels != 1 && channels != 3)
      return invalid(ctx, "image must have 1 or 3 channels, got %s", sh);
  } else {
    channels = fmt_channels;
    if (in.dims[2] != channels)
      return invalid(ctx, "format %.*s expects %d channels, got %s", (int)flen, format, channels,
                     sh);
  }
  weft_cpu_buf_t buf = {0};
  bool ok = jpeg_compress(in.data, in.dims[0], in.dims[1], channels, &f, &buf);
  weft_status_t *st = NULL;
  if (!ok) st = weft__cpu_error(ctx, WEFT_INTERNAL, "JPEG encoding failed");
  weft_tensor_view_t out;
  if (!st) st = weft__cpu_output(ctx, 0, WEFT_DT_STRING, 0, NULL, &out);
  if (!st) st = H->string_assign(ctx, &out, 0, buf.data ? buf.data : "", buf.len);
  free(buf.data);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_codec(const weft_registrar_t *reg) {
  static const char *const crop_host[] = {"crop_window", NULL};
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "DecodeJpeg", .compute = k_decode, .user_data = (void *)&kDecodeOps[OP_JPEG]},
      {.op = "DecodeAndCropJpeg", .compute = k_decode, .host_memory = crop_host,
       .user_data = (void *)&kDecodeOps[OP_CROP_JPEG]},
      {.op = "DecodePng", .compute = k_decode, .user_data = (void *)&kDecodeOps[OP_PNG]},
      {.op = "DecodeGif", .compute = k_decode, .user_data = (void *)&kDecodeOps[OP_GIF]},
      {.op = "DecodeBmp", .compute = k_decode, .user_data = (void *)&kDecodeOps[OP_BMP]},
      {.op = "DecodeImage", .compute = k_decode, .user_data = (void *)&kDecodeOps[OP_IMAGE]},
      {.op = "ExtractJpegShape", .compute = k_extract_jpeg_shape},
      {.op = "EncodePng", .compute = k_encode_png},
      {.op = "EncodeJpeg", .compute = k_encode_jpeg},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
