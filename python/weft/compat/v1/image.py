"""tf.image: TensorFlow 1.x's image namespace over weft's image kernels (ResizeBilinear,
ResizeNearestNeighbor, ResizeBicubic, ResizeArea, RGBToHSV, HSVToRGB, AdjustContrastv2,
AdjustHue, AdjustSaturation, NonMaxSuppressionV3) and the array ops TensorFlow builds the rest
from (flips, rotations, crops, pads, dtype conversion, standardization). Images are [height,
width, channels] or batches [batch, height, width, channels]. The codecs (decode_jpeg,
decode_and_crop_jpeg, encode_jpeg, extract_jpeg_shape, decode_png, encode_png, decode_bmp,
decode_gif, decode_image, is_jpeg; also in tf.io) are the core's codec ops (DecodeJpeg ...,
plugins/cpu/cpu_codec.c)."""
import numpy as _np

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from . import strings as _strings


class ResizeMethod:
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _image(image):
    image = _ops._to_tensor(image)
    rank = image.shape.ndims
    if rank not in (3, 4):
        raise ValueError("'image' (shape %s) must be three or four-dimensional." % image.shape)
    return image, rank


# ---------------------------------------------------------------------------------------------
# dtype conversion

def _int_max(dtype):
    return int(_np.iinfo(dtype.as_numpy_dtype).max)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Integers hold [0, MAX] and floats [0, 1]: an integer image is scaled into [0, 1] (or into
    the other integer range), a float one by MAX + 0.5 and truncated; saturate clips first."""
    image = _ops._to_tensor(image)
    dtype = _dtypes.as_dtype(dtype).base_dtype
    src = image.dtype.base_dtype
    with _fw.name_scope(name, "convert_image", [image]) as scope:
        if src == dtype:
            return _ops.identity(image, name=scope)
        if src.is_integer and dtype.is_integer:
            smax, dmax = _int_max(src), _int_max(dtype)
            if smax > dmax:
                div = _ops._to_tensor((smax + 1) // (dmax + 1), dtype=src)
                return _ops.cast(_ops.floordiv(image, div), dtype, name=scope)
            return _ops.multiply(_ops.cast(image, dtype),
                                 _ops._to_tensor((dmax + 1) // (smax + 1), dtype=dtype),
                                 name=scope)
        if src.is_integer:
            return _ops.multiply(_ops.cast(image, dtype),
                                 _ops._to_tensor(1.0 / _int_max(src), dtype=dtype), name=scope)
        if dtype.is_integer:
            scaled = _ops.multiply(image, _ops._to_tensor(_int_max(dtype) + 0.5, dtype=src))
            if saturate:
                scaled = _ops.clip_by_value(scaled, 0, _int_max(dtype))
            return _ops.cast(scaled, dtype, name=scope)
        return _ops.cast(image, dtype, name=scope)


def _in_float(image, fn, name, default_name, float_types=(_dtypes.float16, _dtypes.float32)):
    """fn(image) computed in floating point, as TensorFlow's adjust_* do: an integer image is
    converted to float32 and back (saturating), a float one of another width through float32."""
    image = _ops._to_tensor(image)
    orig = image.dtype.base_dtype
    with _fw.name_scope(name, default_name, [image]) as scope:
        if orig in float_types:
            return _ops.identity(fn(image), name=scope)
        flt = convert_image_dtype(image, _dtypes.float32)
        return convert_image_dtype(fn(flt), orig, saturate=True, name=scope)


def adjust_brightness(image, delta):
    return _in_float(image, lambda x: _ops.add(x, _ops._to_tensor(delta, dtype=x.dtype)), None,
                     "adjust_brightness", float_types=(_dtypes.float16, _dtypes.float32,
                                                       _dtypes.float64))


def adjust_contrast(images, contrast_factor):
    """Each channel of each image moved away from (or toward) its mean by contrast_factor."""
    return _in_float(images, lambda x: _ops._op("AdjustContrastv2", [
        x, _ops._to_tensor(contrast_factor, dtype=_dtypes.float32)], (), "AdjustContrastv2"),
        None, "adjust_contrast")


def adjust_hue(image, delta, name=None):
    """The hue of RGB images rotated by delta (a fraction of the circle, in [-1, 1])."""
    return _in_float(image, lambda x: _ops._op("AdjustHue", [
        x, _ops._to_tensor(delta, dtype=_dtypes.float32)], (), "AdjustHue"), name, "adjust_hue")


def adjust_saturation(image, saturation_factor, name=None):
    """The saturation of RGB images multiplied by saturation_factor (clipped to [0, 1])."""
    return _in_float(image, lambda x: _ops._op("AdjustSaturation", [
        x, _ops._to_tensor(saturation_factor, dtype=_dtypes.float32)], (), "AdjustSaturation"),
        name, "adjust_saturation")


def rgb_to_hsv(images, name=None):
    return _ops._op("RGBToHSV", [_ops._to_tensor(images)], (), name or "RGBToHSV")


def hsv_to_rgb(images, name=None):
    return _ops._op("HSVToRGB", [_ops._to_tensor(images)], (), name or "HSVToRGB")


_GRAY_WEIGHTS = [0.2989, 0.5870, 0.1140]  # ITU-R 601's luma, as TensorFlow weighs it


def rgb_to_grayscale(images, name=None):
    """[..., 3] RGB to [..., 1] luma, computed in float32 and converted back to images' dtype."""
    images = _ops._to_tensor(images)
    with _fw.name_scope(name, "rgb_to_grayscale", [images]) as scope:
        flt = convert_image_dtype(images, _dtypes.float32)
        gray = _ops.reduce_sum(_ops.multiply(flt, _fw.constant(_GRAY_WEIGHTS, _dtypes.float32)),
                               axis=-1, keepdims=True)
        return convert_image_dtype(gray, images.dtype.base_dtype, name=scope)


def grayscale_to_rgb(images, name=None):
    images = _ops._to_tensor(images)
    with _fw.name_scope(name, "grayscale_to_rgb", [images]) as scope:
        multiples = [1] * (images.shape.ndims - 1) + [3]
        return _ops.tile(images, multiples, name=scope)


def per_image_standardization(image):
    """Each image (over height, width and channels) shifted to mean 0 and divided by its
    standard deviation, or by 1/sqrt(pixels) where that is larger (a uniform image)."""
    image, _ = _image(image)
    with _fw.name_scope(None, "per_image_standardization", [image]) as scope:
        image = _ops.cast(image, _dtypes.float32)
        axes = [-1, -2, -3]
        mean = _ops.reduce_mean(image, axis=axes, keepdims=True)
        centered = _ops.subtract(image, mean)
        stddev = _ops.sqrt(_ops.reduce_mean(_ops.square(centered), axis=axes, keepdims=True))
        pixels = _ops.cast(_ops.reduce_prod(_ops.shape(image)[-3:]), _dtypes.float32)
        return _ops.divide(centered, _ops.maximum(stddev, _ops.rsqrt(pixels)), name=scope)


# ---------------------------------------------------------------------------------------------
# geometry

def _reverse(image, axes, name):
    return _ops._op("ReverseV2", [image, _ops._to_tensor(axes, dtype=_dtypes.int32)], (), name)


def flip_left_right(image):
    image, rank = _image(image)
    return _reverse(image, [rank - 2], "flip_left_right")


def flip_up_down(image):
    image, rank = _image(image)
    return _reverse(image, [rank - 3], "flip_up_down")


def transpose_image(image, name=None):
    """Height and width swapped."""
    image, rank = _image(image)
    return _ops.transpose(image, [1, 0, 2] if rank == 3 else [0, 2, 1, 3],
                          name=name or "transpose")


transpose = transpose_image


def rot90(image, k=1, name=None):
    """image rotated counter-clockwise by k quarter turns (k a Python int)."""
    image, rank = _image(image)
    k = int(k) % 4
    h, w = rank - 3, rank - 2
    with _fw.name_scope(name, "rot90", [image]) as scope:
        if k == 1:
            return transpose_image(_reverse(image, [w], "flip"), name=scope)
        if k == 2:
            return _reverse(image, [h, w], scope)
        if k == 3:
            return _reverse(transpose_image(image), [w], scope)
        return _ops.identity(image, name=scope)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    image, rank = _image(image)
    begin = [offset_height, offset_width, 0]
    size = [target_height, target_width, -1]
    if rank == 4:
        begin, size = [0] + begin, [-1] + size
    return _ops.slice(image, begin, size, name="crop_to_bounding_box")


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """image zero-padded to target_height x target_width, its top-left corner at the offsets
    (Python ints; the image's height and width must be known)."""
    image, rank = _image(image)
    height, width = image.shape.as_list()[rank - 3:rank - 1]
    if height is None or width is None:
        raise ValueError("pad_to_bounding_box needs the image's height and width, got shape %s"
                         % image.shape)
    after_h = target_height - offset_height - height
    after_w = target_width - offset_width - width
    if min(offset_height, offset_width, after_h, after_w) < 0:
        raise ValueError("the target box does not contain the image (offsets %d, %d; target "
                         "%dx%d; image %dx%d)" % (offset_height, offset_width, target_height,
                                                  target_width, height, width))
    pads = [[offset_height, after_h], [offset_width, after_w], [0, 0]]
    if rank == 4:
        pads = [[0, 0]] + pads
    return _ops._op("Pad", [image, _ops._to_tensor(pads, dtype=_dtypes.int32)], (),
                    "pad_to_bounding_box")


# ---------------------------------------------------------------------------------------------
# resizing

_RESIZE_OPS = {ResizeMethod.BILINEAR: "ResizeBilinear",
               ResizeMethod.NEAREST_NEIGHBOR: "ResizeNearestNeighbor",
               ResizeMethod.BICUBIC: "ResizeBicubic", ResizeMethod.AREA: "ResizeArea"}


def _resize(op_type, images, size, align_corners, half_pixel_centers, name):
    images, rank = _image(images)
    if rank == 3:
        images = _ops.expand_dims(images, 0)
    attrs = [("align_corners", "bool", bool(align_corners))]
    if op_type != "ResizeArea":
        attrs.append(("half_pixel_centers", "bool", bool(half_pixel_centers)))
    out = _ops._op(op_type, [images, _ops._to_tensor(size, dtype=_dtypes.int32)], attrs,
                   name or op_type)
    return _ops.squeeze(out, axis=[0]) if rank == 3 else out


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers,
                   name)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


def resize_area(images, size, align_corners=False, name=None):
    return _resize("ResizeArea", images, size, align_corners, False, name)


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """TensorFlow 1.x's resize: float32 out except for NEAREST_NEIGHBOR, which keeps the dtype;
    preserve_aspect_ratio scales both sides by the smaller of the two ratios."""
    if method not in _RESIZE_OPS:
        raise ValueError("Resize method is not implemented: %s" % (method,))
    images, rank = _image(images)
    with _fw.name_scope(name, "resize", [images]):
        if preserve_aspect_ratio:
            current = _ops.cast(_ops.shape(images)[rank - 3:rank - 1], _dtypes.float32)
            target = _ops.cast(_ops._to_tensor(size, dtype=_dtypes.int32), _dtypes.float32)
            factor = _ops.reduce_min(_ops.divide(target, current))
            size = _ops.cast(_ops.round(_ops.multiply(current, factor)), _dtypes.int32)
        return _resize(_RESIZE_OPS[method], images, size, align_corners, False, None)


resize = resize_images


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name=None):
    """Indices of at most max_output_size boxes ([y1, x1, y2, x2]) by descending score, each
    overlapping every box kept before it by at most iou_threshold."""
    return _ops._op("NonMaxSuppressionV3", [
        _ops._to_tensor(boxes, dtype=_dtypes.float32),
        _ops._to_tensor(scores, dtype=_dtypes.float32),
        _ops._to_tensor(max_output_size, dtype=_dtypes.int32),
        _ops._to_tensor(iou_threshold, dtype=_dtypes.float32),
        _ops._to_tensor(score_threshold, dtype=_dtypes.float32)], (),
        name or "NonMaxSuppressionV3")


# ---------------------------------------------------------------------------------------------
# Crops, random flips and adjustments, gradients and metrics TensorFlow 1.15 composes from
# other ops (sobel_edges, ssim and the codecs are absent).

def crop_and_resize(image, boxes, box_ind=None, crop_size=None, method="bilinear",
                    extrapolation_value=0, name=None, box_indices=None):
    """CropAndResize: boxes [y1, x1, y2, x2] (normalized) of the images box_ind names, each
    resampled to crop_size; box_indices is TensorFlow 2's name for box_ind."""
    if box_indices is not None:
        if box_ind is not None:
            raise ValueError("Cannot specify both 'box_indices' and 'box_ind'.")
        box_ind = box_indices
    if box_ind is None or crop_size is None:
        raise TypeError("crop_and_resize() missing required argument: '%s'"
                        % ("box_ind" if box_ind is None else "crop_size"))
    return _ops._op("CropAndResize", [
        _ops._to_tensor(image), _ops._to_tensor(boxes, dtype=_dtypes.float32),
        _ops._to_tensor(box_ind, dtype=_dtypes.int32),
        _ops._to_tensor(crop_size, dtype=_dtypes.int32)],
        [("method", "string", method), ("extrapolation_value", "float",
                                        float(extrapolation_value))], name or "CropAndResize")


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None, name=None,
                          sizes=None):
    from .array_ops import extract_image_patches as _extract
    return _extract(images, ksizes, strides, rates, padding, name, sizes)


extract_image_patches.__doc__ = "tf.image.extract_image_patches: tf.extract_image_patches."


def central_crop(image, central_fraction):
    """The central central_fraction of each image's height and width (a slice whose start is
    int((size - size * fraction) / 2), as TensorFlow computes it)."""
    with _fw.name_scope(None, "central_crop", [image]):
        image = _ops._to_tensor(image, name="image")
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        rank = image.shape.ndims
        if rank not in (3, 4):
            raise ValueError("'image' should either be a 3D or 4D tensor.")
        dims = image.shape.as_list()[rank - 3:rank - 1]
        if None not in dims:
            starts = [int((d - d * central_fraction) / 2) for d in dims]
            sizes = [d - 2 * s for d, s in zip(dims, starts)]
            begin = _ops.stack(starts + [0])
            size = _ops.stack(sizes + [-1])
        else:
            shape = _ops.shape(image)
            hw = _ops.cast(shape[rank - 3:rank - 1], _dtypes.float64)
            starts = _ops.cast((hw - hw * central_fraction) / 2, _dtypes.int32)
            sizes = shape[rank - 3:rank - 1] - starts * 2
            begin = _ops.concat([starts, [0]], 0)
            size = _ops.concat([sizes, [-1]], 0)
        if rank == 4:
            begin = _ops.concat([[0], begin], 0)
            size = _ops.concat([[-1], size], 0)
        return _ops.slice(image, begin, size)


def _sized_image(image, target_height, target_width, fn):
    """(image tensor, height, width) after TensorFlow's checks of fn's arguments; weft needs
    the height and width known."""
    image = _ops._to_tensor(image, name="image")
    rank = image.shape.ndims
    if rank not in (3, 4):
        raise ValueError("'image' (shape %s) must have either 3 or 4 dimensions." % image.shape)
    if target_width <= 0:
        raise ValueError("target_width must be > 0.")
    if target_height <= 0:
        raise ValueError("target_height must be > 0.")
    height, width = image.shape.as_list()[rank - 3:rank - 1]
    if height is None or width is None:
        raise ValueError("%s needs the image's height and width, got shape %s"
                         % (fn, image.shape))
    return image, height, width


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """image centrally cropped and/or zero-padded to target_height x target_width (the image's
    height and width must be known to weft)."""
    with _fw.name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, height, width = _sized_image(image, target_height, target_width,
                                            "resize_image_with_crop_or_pad")
        width_diff, height_diff = target_width - width, target_height - height
        cropped = crop_to_bounding_box(image, max(-height_diff // 2, 0),
                                       max(-width_diff // 2, 0), min(target_height, height),
                                       min(target_width, width))
        return pad_to_bounding_box(cropped, max(height_diff // 2, 0), max(width_diff // 2, 0),
                                   target_height, target_width)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def _random_flip(image, flip_index, seed, scope_name):
    from . import control_flow as _cf
    with _fw.name_scope(None, scope_name, [image]) as scope:
        image = _ops._to_tensor(image, name="image")
        rank = image.shape.ndims
        if rank is not None and rank < 3:
            raise ValueError("'image' (shape %s) must be at least three-dimensional."
                             % image.shape)
        if rank == 4:
            batch_size = _ops.shape(image)[0]
            uniform_random = _ops.random_uniform(_ops.stack([batch_size]), 0, 1.0, seed=seed)
            flips = _ops.round(_ops.reshape(uniform_random, _ops.stack([batch_size, 1, 1, 1])))
            flips = _ops.cast(flips, image.dtype)
            flipped_input = _reverse(image, [flip_index + 1], "ReverseV2")
            return flips * flipped_input + (1 - flips) * image
        if rank != 3:
            raise ValueError("'image' (shape %s) must have either 3 or 4 dimensions."
                             % image.shape)
        uniform_random = _ops.random_uniform([], 0, 1.0, seed=seed)
        mirror_cond = _ops.less(uniform_random, .5)
        return _cf.cond(mirror_cond, lambda: _reverse(image, [flip_index], "ReverseV2"),
                        lambda: image, name=scope)


def random_flip_left_right(image, seed=None):
    """Each image mirrored horizontally with probability 1/2."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """Each image flipped vertically with probability 1/2."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = _ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def _check_range(lower, upper):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")


def random_contrast(image, lower, upper, seed=None):
    _check_range(lower, upper)
    return adjust_contrast(image, _ops.random_uniform([], lower, upper, seed=seed))


def random_saturation(image, lower, upper, seed=None):
    _check_range(lower, upper)
    return adjust_saturation(image, _ops.random_uniform([], lower, upper, seed=seed))


def random_hue(image, max_delta, seed=None):
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, _ops.random_uniform([], -max_delta, max_delta, seed=seed))


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma, in float32 for an integer image (converted back, saturating)."""
    with _fw.name_scope(None, "adjust_gamma", [image, gamma, gain]):
        image = _ops._to_tensor(image, name="image")
        orig_dtype = image.dtype.base_dtype
        if orig_dtype in (_dtypes.float16, _dtypes.float32):
            flt_image = image
        else:
            flt_image = convert_image_dtype(image, _dtypes.float32)
        if not isinstance(gamma, _fw.Tensor) and gamma < 0:
            raise ValueError("Gamma should be a non-negative real number.")
        gamma = _ops._to_tensor(gamma, dtype=flt_image.dtype.base_dtype, name="gamma")
        gain = _ops._to_tensor(gain, dtype=flt_image.dtype.base_dtype, name="gain")
        adjusted_img = gain * _ops.pow(flt_image, gamma)
        return convert_image_dtype(adjusted_img, orig_dtype, saturate=True)


def total_variation(images, name=None):
    """The sum of absolute differences of neighbouring pixels (per image for a batch)."""
    with _fw.name_scope(name, "total_variation"):
        images = _ops._to_tensor(images)
        ndims = images.shape.ndims
        if ndims == 3:
            pixel_dif1 = images[1:, :, :] - images[:-1, :, :]
            pixel_dif2 = images[:, 1:, :] - images[:, :-1, :]
            sum_axis = None
        elif ndims == 4:
            pixel_dif1 = images[:, 1:, :, :] - images[:, :-1, :, :]
            pixel_dif2 = images[:, :, 1:, :] - images[:, :, :-1, :]
            sum_axis = [1, 2, 3]
        else:
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        return (_ops.reduce_sum(_ops.abs(pixel_dif1), axis=sum_axis)
                + _ops.reduce_sum(_ops.abs(pixel_dif2), axis=sum_axis))


def image_gradients(image):
    """(dy, dx): forward differences of a [batch, h, w, d] image, zero in the last row/column."""
    image = _ops._to_tensor(image)
    if image.shape.ndims != 4:
        raise ValueError("image_gradients expects a 4D tensor [batch_size, h, w, d], not %s."
                         % image.shape)
    image_shape = _ops.shape(image)
    batch_size, height, width, depth = _ops.unstack(image_shape)
    dy = image[:, 1:, :, :] - image[:, :-1, :, :]
    dx = image[:, :, 1:, :] - image[:, :, :-1, :]
    shape = _ops.stack([batch_size, 1, width, depth])
    dy = _ops.reshape(_ops.concat([dy, _ops.zeros(shape, image.dtype)], 1), image_shape)
    shape = _ops.stack([batch_size, height, 1, depth])
    dx = _ops.reshape(_ops.concat([dx, _ops.zeros(shape, image.dtype)], 2), image_shape)
    return dy, dx


def psnr(a, b, max_val, name=None):
    """Peak signal-to-noise ratio of each image pair, over the last three dimensions."""
    with _fw.name_scope(name, "PSNR", [a, b]):
        a, b = _ops._to_tensor(a), _ops._to_tensor(b)
        max_val = _ops.cast(max_val, a.dtype)
        max_val = convert_image_dtype(max_val, _dtypes.float32)
        a = convert_image_dtype(a, _dtypes.float32)
        b = convert_image_dtype(b, _dtypes.float32)
        mse = _ops.reduce_mean(_ops.squared_difference(a, b), [-3, -2, -1])
        psnr_val = _ops.subtract(
            20 * _ops.log(max_val) / _ops.log(_ops._to_tensor(10.0)),
            _np.float32(10 / _np.log(10)) * _ops.log(mse), name="psnr")
        return _ops.identity(psnr_val)


def random_crop(value, size, seed=None, name=None):
    from .array_ops import random_crop as _random_crop
    return _random_crop(value, size, seed, name)


random_crop.__doc__ = "tf.image.random_crop: tf.random_crop."


def resize_image_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR,
                          align_corners=False):
    """image resized keeping its aspect ratio to fit target_height x target_width, then
    zero-padded to it, centred (the image's height and width must be known to weft)."""
    with _fw.name_scope(None, "resize_image_with_pad", [image]):
        image, height, width = _sized_image(image, target_height, target_width,
                                            "resize_image_with_pad")
        f32 = _np.float32
        ratio = max(f32(width) / f32(target_width), f32(height) / f32(target_height))
        resized_height_float, resized_width_float = f32(height) / ratio, f32(width) / ratio
        p_height = max(0, int(_np.floor((f32(target_height) - resized_height_float) / f32(2))))
        p_width = max(0, int(_np.floor((f32(target_width) - resized_width_float) / f32(2))))
        resized = resize_images(image, [int(_np.floor(resized_height_float)),
                                        int(_np.floor(resized_width_float))], method,
                                align_corners)
        return pad_to_bounding_box(resized, p_height, p_width, target_height, target_width)


# TensorFlow's colour-space matrices (rows: input channels, columns: output channels)
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _colour(kernel):
    def fn(images):
        from .array_ops import tensordot
        images = _ops._to_tensor(images, name="images")
        k = _fw.constant(kernel, dtype=images.dtype.base_dtype, name="kernel")
        ndims = images.shape.ndims
        return tensordot(images, k, axes=[[ndims - 1], [0]])
    return fn


rgb_to_yiq = _colour(_RGB_TO_YIQ)
yiq_to_rgb = _colour(_YIQ_TO_RGB)
rgb_to_yuv = _colour(_RGB_TO_YUV)
yuv_to_rgb = _colour(_YUV_TO_RGB)
for _fn, _n in ((rgb_to_yiq, "rgb_to_yiq"), (yiq_to_rgb, "yiq_to_rgb"),
                (rgb_to_yuv, "rgb_to_yuv"), (yuv_to_rgb, "yuv_to_rgb")):
    _fn.__name__ = _n
    _fn.__doc__ = "tf.image.%s: the last axis times TensorFlow's 3x3 matrix." % _n


def sobel_edges(image):
    """[batch, h, w, d, 2]: each channel's vertical and horizontal Sobel responses (a REFLECT
    pad and a depthwise convolution, as TensorFlow builds it)."""
    from . import nn as _nn
    from .array_ops import pad
    image = _ops._to_tensor(image)
    static_image_shape = image.shape
    image_shape = _ops.shape(image)
    kernels = [[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]
    num_kernels = len(kernels)
    kernels = _np.expand_dims(_np.transpose(_np.asarray(kernels), (1, 2, 0)), -2)
    kernels_tf = _fw.constant(kernels, dtype=image.dtype.base_dtype)
    kernels_tf = _ops.tile(kernels_tf, _ops.stack([1, 1, image_shape[-1], 1]),
                           name="sobel_filters")
    padded = pad(image, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    output = _nn.depthwise_conv2d(padded, kernels_tf, [1, 1, 1, 1], "VALID")
    output = _ops.reshape(output, _ops.concat([image_shape, [num_kernels]], 0))
    if static_image_shape.ndims is not None:
        output.set_shape(static_image_shape.as_list() + [num_kernels])
    return output


# ---------------------------------------------------------------------------------------------
# Codecs (image_ops.cc's ops; kernels in plugins/cpu/cpu_codec.c)

def _contents(contents):
    return _ops._to_tensor(contents, dtype=_dtypes.string)


def _jpeg_attrs(channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction,
                dct_method):
    return [("channels", "int", int(channels)), ("ratio", "int", int(ratio)),
            ("fancy_upscaling", "bool", bool(fancy_upscaling)),
            ("try_recover_truncated", "bool", bool(try_recover_truncated)),
            ("acceptable_fraction", "float", float(acceptable_fraction)),
            ("dct_method", "string", dct_method)]


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    """A JPEG (or PNG or GIF, as TensorFlow's kernel sniffs them) into uint8 [h, w, channels]."""
    return _ops._op("DecodeJpeg", [_contents(contents)],
                    _jpeg_attrs(channels, ratio, fancy_upscaling, try_recover_truncated,
                                acceptable_fraction, dct_method), name or "DecodeJpeg")


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """The window [y, x, height, width] of a JPEG, decoding only the lines it needs."""
    return _ops._op("DecodeAndCropJpeg",
                    [_contents(contents), _ops._to_tensor(crop_window, dtype=_dtypes.int32)],
                    _jpeg_attrs(channels, ratio, fancy_upscaling, try_recover_truncated,
                                acceptable_fraction, dct_method), name or "DecodeAndCropJpeg")


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """A uint8 [h, w, 1 or 3] image as a JPEG string."""
    return _ops._op("EncodeJpeg", [_ops._to_tensor(image)], [
        ("format", "string", format), ("quality", "int", int(quality)),
        ("progressive", "bool", bool(progressive)),
        ("optimize_size", "bool", bool(optimize_size)),
        ("chroma_downsampling", "bool", bool(chroma_downsampling)),
        ("density_unit", "string", density_unit), ("x_density", "int", int(x_density)),
        ("y_density", "int", int(y_density)), ("xmp_metadata", "string", xmp_metadata)],
        name or "EncodeJpeg")


def extract_jpeg_shape(contents, output_type=_dtypes.int32, name=None):
    """[height, width, channels] of a JPEG, read from its headers without decoding it."""
    return _ops._op("ExtractJpegShape", [_contents(contents)],
                    [("output_type", "type", _dtypes.as_dtype(output_type).as_datatype_enum)],
                    name or "ExtractJpegShape")


def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    """A PNG (or JPEG or GIF, as TensorFlow's kernel sniffs them) into uint8 or uint16."""
    return _ops._op("DecodePng", [_contents(contents)], [
        ("channels", "int", int(channels)),
        ("dtype", "type", _dtypes.as_dtype(dtype).as_datatype_enum)], name or "DecodePng")


def encode_png(image, compression=-1, name=None):
    """A uint8 or uint16 [h, w, 1..4] image as a PNG string (compression -1: zlib's default)."""
    image = _ops._to_tensor(image)
    return _ops._op("EncodePng", [image], [
        ("compression", "int", int(compression)),
        ("T", "type", image.dtype.base_dtype.as_datatype_enum)], name or "EncodePng")


def decode_bmp(contents, channels=0, name=None):
    """An uncompressed BMP (8, 24 or 32 bits a pixel) into uint8 [h, w, channels]."""
    return _ops._op("DecodeBmp", [_contents(contents)], [("channels", "int", int(channels))],
                    name or "DecodeBmp")


def decode_gif(contents, name=None):
    """Every frame of a GIF as uint8 [frames, h, w, 3]."""
    return _ops._op("DecodeGif", [_contents(contents)], (), name or "DecodeGif")


def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None,
                 expand_animations=True):
    """Any of JPEG, PNG, GIF and BMP, told apart by their first bytes (the DecodeImage op):
    3-D, or 4-D for a GIF while expand_animations; float images are in [0, 1]."""
    return _ops._op("DecodeImage", [_contents(contents)], [
        ("channels", "int", int(channels or 0)),
        ("dtype", "type", _dtypes.as_dtype(dtype).as_datatype_enum),
        ("expand_animations", "bool", bool(expand_animations))], name or "decode_image")


def is_jpeg(contents, name=None):
    """Whether contents starts with JPEG's magic bytes (a bool scalar)."""
    head = _strings.substr(_contents(contents), 0, 3)
    return _ops.equal(head, _ops._to_tensor(b"\xff\xd8\xff", dtype=_dtypes.string),
                      name=name or "is_jpeg")
