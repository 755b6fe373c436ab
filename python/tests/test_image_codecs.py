"""tf.image's and tf.io's codecs (DecodePng, EncodePng, DecodeJpeg, EncodeJpeg, DecodeAndCropJpeg,
ExtractJpegShape, DecodeBmp, DecodeGif, DecodeImage, is_jpeg) against references that do not
use the kernels: PNG, BMP and GIF files built here byte by byte (zlib and struct) with known
pixels, PNG round trips that must be exact, JPEG decodes within an error bound of the image that
was encoded; then TensorFlow's error messages, and hostile files (truncated, bit-flipped, huge
declared sizes) that must fail with InvalidArgument, never crash. Everything is deterministic."""
import struct
import zlib

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(x, feed=None):
    with tf.Session() as s:
        return s.run(x, feed)


# ---------------------------------------------------------------------------------------------
# Files built by hand

def _chunk(kind, data):
    return (struct.pack(">I", len(data)) + kind + data +
            struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))


def png_file(rows, bit_depth, color_type, plte=None, trns=None):
    """A PNG of raw scanlines `rows` (bytes each, filter byte 0 prepended here)."""
    h = len(rows)
    w_bytes = len(rows[0])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color_type]
    width = w_bytes * 8 // (bit_depth * channels)
    ihdr = struct.pack(">IIBBBBB", width, h, bit_depth, color_type, 0, 0, 0)
    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
    if plte is not None:
        out += _chunk(b"PLTE", plte)
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    return out + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")


def png_of(arr):
    """A PNG of a uint8 or uint16 [h, w, c] array (c 1..4), written without the kernels."""
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[arr.shape[2]]
    bits = 16 if arr.dtype == np.uint16 else 8
    data = arr.astype(">u2") if bits == 16 else arr
    return png_file([data[i].tobytes() for i in range(arr.shape[0])], bits, color_type)


def bmp_file(pixels, bpp, top_down=False):
    """A BMP of uint8 [h, w, c] pixels (c = bpp / 8, RGB(A) order here, BGR(A) in the file)."""
    h, w, c = pixels.shape
    row_size = (c * w + 3) // 4 * 4
    rows = []
    for i in range(h):
        src = pixels[i] if top_down else pixels[h - 1 - i]
        px = src[:, ::-1] if c == 3 else (src[:, [2, 1, 0, 3]] if c == 4 else src)
        raw = px.astype(np.uint8).tobytes()
        rows.append(raw + b"\x00" * (row_size - len(raw)))
    data = b"".join(rows)
    header = 54
    file_header = b"BM" + struct.pack("<IHHI", header + len(data), 0, 0, header)
    info = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bpp, 0, len(data),
                       2835, 2835, 0, 0)
    return file_header + info + data


def _lzw_uncompressed(indices, min_code_size):
    """GIF LZW data that never grows the code table: a clear code before every pixel."""
    clear, end, size = 1 << min_code_size, (1 << min_code_size) + 1, min_code_size + 1
    codes = []
    for i in indices:
        codes += [clear, int(i)]
    codes.append(end)
    bits, nbits, out = 0, 0, bytearray()
    for c in codes:
        bits |= c << nbits
        nbits += size
        while nbits >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            nbits -= 8
    if nbits:
        out.append(bits & 0xFF)
    blocks = b"".join(bytes([len(out[k:k + 255])]) + bytes(out[k:k + 255])
                      for k in range(0, len(out), 255))
    return bytes([min_code_size]) + blocks + b"\x00"


PALETTE = np.array([[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255]], np.uint8)


def gif_file(w, h, frames, palette=PALETTE):
    """frames: (left, top, width, height, indices [height, width]) each, one global palette."""
    bits = max(1, int(np.ceil(np.log2(len(palette)))))
    out = b"GIF89a" + struct.pack("<HHBBB", w, h, 0x80 | (bits - 1), 0, 0)
    out += palette.astype(np.uint8).tobytes() + b"\x00" * (3 * ((1 << bits) - len(palette)))
    for left, top, fw, fh, idx in frames:
        out += b"\x2c" + struct.pack("<HHHHB", left, top, fw, fh, 0)
        out += _lzw_uncompressed(np.asarray(idx).reshape(-1), max(2, bits))
    return out + b"\x3b"


RGB = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255]],
                [[10, 20, 30], [200, 100, 50], [255, 255, 255]]], np.uint8)


def smooth(h, w, c=3):
    """A smooth image (gradients), what JPEG keeps well."""
    y, x = np.mgrid[0:h, 0:w]
    chans = [(x * 255 // max(1, w - 1)), (y * 255 // max(1, h - 1)), ((x + y) * 127 // (h + w))]
    return np.stack(chans[:c], axis=-1).astype(np.uint8)


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


# ---------------------------------------------------------------------------------------------
# PNG

def test_decode_png_hand_built():
    got = run(tf.image.decode_png(png_of(RGB)))
    assert got.dtype == np.uint8 and got.shape == (2, 3, 3)
    np.testing.assert_array_equal(got, RGB)
    # Gray to RGB, RGB to RGBA (opaque), RGBA to RGB (alpha dropped), 8 to 16 bits (v * 257).
    gray = np.array([[[0], [128]], [[255], [7]]], np.uint8)
    np.testing.assert_array_equal(run(tf.image.decode_png(png_of(gray), channels=3)),
                                  np.repeat(gray, 3, axis=2))
    rgba = run(tf.image.decode_png(png_of(RGB), channels=4))
    np.testing.assert_array_equal(rgba[..., :3], RGB)
    assert (rgba[..., 3] == 255).all()
    with_alpha = np.concatenate([RGB, np.full((2, 3, 1), 9, np.uint8)], axis=2)
    np.testing.assert_array_equal(run(tf.image.decode_png(png_of(with_alpha), channels=3)), RGB)
    wide = run(tf.image.decode_png(png_of(RGB), dtype=tf.uint16))
    assert wide.dtype == np.uint16
    np.testing.assert_array_equal(wide, RGB.astype(np.uint16) * 257)


def test_decode_png_palette_trns_and_16_bit():
    plte = bytes([255, 0, 0, 0, 255, 0, 0, 0, 255])
    rows = [bytes([0, 1, 2]), bytes([2, 1, 0])]
    got = run(tf.image.decode_png(png_file(rows, 8, 3, plte=plte)))
    np.testing.assert_array_equal(got[0], [[255, 0, 0], [0, 255, 0], [0, 0, 255]])
    # A tRNS chunk gives a palette image an alpha channel (4 channels when channels=0).
    got = run(tf.image.decode_png(png_file(rows, 8, 3, plte=plte, trns=bytes([0, 128]))))
    assert got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got[0, :, 3], [0, 128, 255])
    deep = np.array([[[0, 1000, 65535]], [[40000, 2, 3]]], np.uint16)
    got = run(tf.image.decode_png(png_of(deep), dtype=tf.uint16))
    np.testing.assert_array_equal(got, deep)
    # 16 bits read as 8 keep the high byte.
    np.testing.assert_array_equal(run(tf.image.decode_png(png_of(deep))), deep >> 8)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_round_trip_exact(channels, dtype):
    rng = np.random.RandomState(channels)
    top = np.iinfo(dtype).max
    img = rng.randint(0, int(top) + 1, size=(5, 7, channels)).astype(dtype)
    for compression in (-1, 0, 9):
        enc = tf.image.encode_png(img, compression=compression)
        # channels=2 is not an attr value TensorFlow accepts; 0 keeps the file's two.
        dec = tf.image.decode_png(enc, channels=0 if channels == 2 else channels,
                                  dtype=tf.as_dtype(dtype))
        got, png = run([dec, enc])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, img)


def test_encode_png_errors():
    with pytest.raises(errors.InvalidArgumentError, match=r"compression should be in \[-1,9\], got 10"):
        run(tf.image.encode_png(RGB, compression=10))
    with pytest.raises(errors.InvalidArgumentError,
                       match="image must have 1, 2, 3, or 4 channels, got 5"):
        run(tf.image.encode_png(np.zeros((2, 2, 5), np.uint8)))
    p = tf.placeholder(tf.uint8)
    with pytest.raises(errors.InvalidArgumentError, match="image must be 3-dimensional"):
        run(tf.image.encode_png(p), {p: np.zeros((2, 2), np.uint8)})
    with pytest.raises(errors.InternalError, match="PNG encoding failed"):
        run(tf.image.encode_png(np.zeros((0, 3, 3), np.uint8)))


# ---------------------------------------------------------------------------------------------
# JPEG

def test_jpeg_solid_and_smooth_images():
    solid = np.zeros((16, 24, 3), np.uint8) + np.array([200, 40, 90], np.uint8)
    got = run(tf.image.decode_jpeg(tf.image.encode_jpeg(solid, quality=95)))
    assert got.shape == (16, 24, 3)
    assert np.abs(got.astype(int) - solid).max() <= 3
    img = smooth(48, 64)
    for dct in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
        got = run(tf.image.decode_jpeg(tf.image.encode_jpeg(img, quality=95), dct_method=dct))
        assert got.shape == img.shape
        assert np.abs(got.astype(int) - img).max() <= 16
        assert psnr(got, img) > 35
    gray = smooth(32, 32, 1)
    enc = tf.image.encode_jpeg(gray, quality=95)
    got = run(tf.io.decode_jpeg(enc))
    assert got.shape == (32, 32, 1) and psnr(got, gray) > 35
    assert run(tf.image.decode_jpeg(enc, channels=3)).shape == (32, 32, 3)


def test_jpeg_ratio_crop_shape():
    img = smooth(40, 56)
    jpeg = run(tf.image.encode_jpeg(img, quality=95))
    for ratio in (2, 4, 8):
        got = run(tf.image.decode_jpeg(jpeg, ratio=ratio))
        assert got.shape == (-(-40 // ratio), -(-56 // ratio), 3)
    full = run(tf.image.decode_jpeg(jpeg, dct_method="INTEGER_ACCURATE"))
    crop = run(tf.image.decode_and_crop_jpeg(jpeg, [5, 11, 20, 30],
                                             dct_method="INTEGER_ACCURATE"))
    assert crop.shape == (20, 30, 3)
    assert np.abs(crop.astype(int) - full[5:25, 11:41]).max() <= 2
    shape = run(tf.image.extract_jpeg_shape(jpeg))
    assert shape.dtype == np.int32 and list(shape) == list(full.shape)
    assert run(tf.io.extract_jpeg_shape(jpeg, output_type=tf.int64)).dtype == np.int64
    assert run(tf.image.is_jpeg(jpeg)) and not run(tf.io.is_jpeg(png_of(RGB)))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Invalid JPEG data or crop window, data size %d" % len(jpeg)):
        run(tf.image.decode_and_crop_jpeg(jpeg, [30, 0, 20, 10]))
    with pytest.raises(errors.InvalidArgumentError, match="Invalid JPEG data, size 3"):
        run(tf.image.extract_jpeg_shape(b"abc"))


def test_encode_jpeg_options():
    img = smooth(24, 40)
    for kw in ({"progressive": True}, {"optimize_size": True}, {"chroma_downsampling": False},
               {"density_unit": "cm", "x_density": 72, "y_density": 96},
               {"xmp_metadata": "<x:xmpmeta/>"}, {"format": "rgb", "quality": 50}):
        data = run(tf.image.encode_jpeg(img, **kw))
        assert data[:3] == b"\xff\xd8\xff"
        assert psnr(run(tf.image.decode_jpeg(data)), img) > 25
    data = run(tf.image.encode_jpeg(img, density_unit="cm", x_density=72, y_density=96))
    assert data[6:11] == b"JFIF\x00" and data[13:18] == b"\x02\x00\x48\x00\x60"
    assert b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta/>" in \
        run(tf.image.encode_jpeg(img, xmp_metadata="<x:xmpmeta/>"))
    with pytest.raises(errors.InvalidArgumentError, match="image must have 1 or 3 channels"):
        run(tf.image.encode_jpeg(np.zeros((2, 2, 2), np.uint8)))
    with pytest.raises(errors.InvalidArgumentError, match="format grayscale expects 1 channels"):
        run(tf.image.encode_jpeg(img, format="grayscale"))
    with pytest.raises(errors.InvalidArgumentError,
                       match="format must be '', grayscale or rgb, got bgr"):
        run(tf.image.encode_jpeg(img, format="bgr"))
    with pytest.raises(errors.InvalidArgumentError, match=r"quality must be in \[0,100\], got 101"):
        run(tf.image.encode_jpeg(img, quality=101))


def test_decode_jpeg_attr_errors():
    jpeg = run(tf.image.encode_jpeg(smooth(8, 8)))
    with pytest.raises(errors.InvalidArgumentError, match="channels must be 0, 1, 3, or 4, got 2"):
        run(tf.image.decode_jpeg(jpeg, channels=2))
    with pytest.raises(errors.InvalidArgumentError, match="ratio must be 1, 2, 4, or 8, got 3"):
        run(tf.image.decode_jpeg(jpeg, ratio=3))
    with pytest.raises(errors.InvalidArgumentError, match="dct_method must be one of"):
        run(tf.image.decode_jpeg(jpeg, dct_method="FLOAT"))
    with pytest.raises(errors.InvalidArgumentError, match="JPEG does not support 4 channels"):
        run(tf.image.decode_jpeg(jpeg, channels=4))
    with pytest.raises(errors.InvalidArgumentError, match="JPEG does not support uint16 output"):
        run(tf.image.decode_png(jpeg, dtype=tf.uint16))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Expected image \(JPEG, PNG, or GIF\), got unknown format "
                             r"starting with 'hello\\n'"):
        run(tf.image.decode_jpeg(b"hello\n"))
    with pytest.raises(errors.InvalidArgumentError, match="got empty file"):
        run(tf.image.decode_png(b""))
    p = tf.placeholder(tf.string)
    with pytest.raises(errors.InvalidArgumentError, match=r"contents must be scalar, got shape \[2\]"):
        run(tf.image.decode_jpeg(p), {p: np.array([jpeg, jpeg], dtype=object)})


def test_jpeg_truncated_and_recovered():
    img = smooth(64, 64)
    jpeg = run(tf.image.encode_jpeg(img, quality=95))
    cut = jpeg[:len(jpeg) * 2 // 3]
    with pytest.raises(errors.InvalidArgumentError, match="Invalid JPEG data or crop window"):
        run(tf.image.decode_jpeg(cut))
    got = run(tf.image.decode_jpeg(cut, try_recover_truncated=True))
    assert got.shape == img.shape
    # The lines before the cut are intact.
    assert psnr(got[:16], img[:16]) > 35


def test_jpeg_huge_declared_size():
    jpeg = bytearray(run(tf.image.encode_jpeg(smooth(8, 8))))
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 5:sof + 9] = struct.pack(">HH", 60000, 60000)
    with pytest.raises(errors.InvalidArgumentError, match="Invalid JPEG data or crop window"):
        run(tf.image.decode_jpeg(bytes(jpeg)))
    # The headers alone still say what the file claims.
    assert list(run(tf.image.extract_jpeg_shape(bytes(jpeg)))) == [60000, 60000, 3]


# ---------------------------------------------------------------------------------------------
# BMP and GIF

def test_decode_bmp():
    np.testing.assert_array_equal(run(tf.image.decode_bmp(bmp_file(RGB, 24))), RGB)
    np.testing.assert_array_equal(run(tf.io.decode_bmp(bmp_file(RGB, 24, top_down=True))), RGB)
    rgba = np.concatenate([RGB, np.array([[[1], [2], [3]], [[4], [5], [6]]], np.uint8)], axis=2)
    np.testing.assert_array_equal(run(tf.image.decode_bmp(bmp_file(rgba, 32))), rgba)
    gray = RGB[..., :1].copy()
    np.testing.assert_array_equal(run(tf.image.decode_bmp(bmp_file(gray, 8))), gray)
    with pytest.raises(errors.InvalidArgumentError,
                       match="channels attribute 4 does not match bits per pixel from file 3"):
        run(tf.image.decode_bmp(bmp_file(RGB, 24), channels=4))
    with pytest.raises(errors.InvalidArgumentError, match="Incomplete bmp content"):
        run(tf.image.decode_bmp(bmp_file(RGB, 24)[:-4]))
    with pytest.raises(errors.InvalidArgumentError, match="requires at least 32 bytes"):
        run(tf.image.decode_bmp(b"BM1234"))
    huge = bytearray(bmp_file(RGB, 24))
    huge[18:26] = struct.pack("<ii", 100000, 100000)
    with pytest.raises(errors.InvalidArgumentError, match="Total possible pixel bytes"):
        run(tf.image.decode_bmp(bytes(huge)))


ANIMATED = gif_file(4, 3, [
    (0, 0, 4, 3, [[1, 1, 2, 2], [3, 3, 0, 0], [1, 2, 3, 0]]),
    (1, 1, 2, 2, [[0, 3], [2, 1]]),
])


def test_decode_gif_frames_and_canvas():
    got = run(tf.image.decode_gif(ANIMATED))
    assert got.shape == (2, 3, 4, 3)
    first = PALETTE[np.array([[1, 1, 2, 2], [3, 3, 0, 0], [1, 2, 3, 0]])]
    np.testing.assert_array_equal(got[0], first)
    # The second frame covers 2x2 at (1, 1); the rest is the first frame.
    second = first.copy()
    second[1:3, 1:3] = PALETTE[np.array([[0, 3], [2, 1]])]
    np.testing.assert_array_equal(got[1], second)
    # A first frame short of the canvas has black around it; a frame partly outside the canvas
    # is clipped to it.
    gif = gif_file(4, 3, [(2, 1, 3, 3, [[1, 1, 1], [2, 2, 2], [3, 3, 3]])])
    got = run(tf.io.decode_gif(gif))
    want = np.zeros((3, 4, 3), np.uint8)
    want[1, 2:4] = PALETTE[1]
    want[2, 2:4] = PALETTE[2]
    np.testing.assert_array_equal(got[0], want)
    with pytest.raises(errors.InvalidArgumentError,
                       match="Got 2 frames, but animated gifs can only be decoded by "
                             "tf.image.decode_gif or tf.image.decode_image"):
        run(tf.image.decode_png(ANIMATED))
    still = gif_file(4, 3, [(0, 0, 4, 3, np.ones((3, 4), int))])
    assert run(tf.image.decode_jpeg(still)).shape == (3, 4, 3)


def test_decode_gif_errors():
    # A two-colour palette; LZW's smallest code size (2) still codes index 3.
    bad_index = gif_file(2, 1, [(0, 0, 2, 1, [[1, 3]])], palette=PALETTE[:2])
    with pytest.raises(errors.InvalidArgumentError,
                       match="found color index 3 outside of color map range 2"):
        run(tf.image.decode_gif(bad_index))
    with pytest.raises(errors.InvalidArgumentError, match=r"Invalid GIF data \(size 10\)"):
        run(tf.image.decode_gif(ANIMATED[:10]))
    huge = gif_file(65535, 65535, [(0, 0, 65535, 65535, [[1]])])
    with pytest.raises(errors.InvalidArgumentError, match="invalid size 65535 by 65535"):
        run(tf.image.decode_gif(huge))
    no_frames = gif_file(2, 2, [])
    with pytest.raises(errors.InvalidArgumentError, match="gif file does not contain any image"):
        run(tf.image.decode_gif(no_frames))


# ---------------------------------------------------------------------------------------------
# DecodeImage

def test_decode_image_dispatch():
    jpeg = run(tf.image.encode_jpeg(smooth(16, 16)))
    assert run(tf.image.decode_image(png_of(RGB))).tolist() == RGB.tolist()
    assert run(tf.io.decode_image(bmp_file(RGB, 24))).tolist() == RGB.tolist()
    assert run(tf.image.decode_image(jpeg)).shape == (16, 16, 3)
    assert run(tf.image.decode_image(ANIMATED)).shape == (2, 3, 4, 3)
    first = run(tf.image.decode_image(ANIMATED, expand_animations=False))
    assert first.shape == (3, 4, 3)
    np.testing.assert_array_equal(first, run(tf.image.decode_gif(ANIMATED))[0])
    f = run(tf.image.decode_image(png_of(RGB), dtype=tf.float32))
    assert f.dtype == np.float32 and np.allclose(f, RGB / 255.0, atol=1e-6)
    w = run(tf.image.decode_image(bmp_file(RGB, 24), dtype=tf.uint16))
    np.testing.assert_array_equal(w, RGB.astype(np.uint16) * 256)
    assert run(tf.image.decode_image(bmp_file(RGB, 24), channels=4)).shape == (2, 3, 4)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Unknown image file format. One of JPEG, PNG, GIF, BMP required."):
        run(tf.image.decode_image(b"not an image"))
    with pytest.raises(errors.InvalidArgumentError, match="Input is empty."):
        run(tf.image.decode_image(b""))
    assert tf.image.decode_image(b"x", expand_animations=False, channels=3).shape.as_list() == \
        [None, None, 3]
    assert tf.image.decode_png(b"x", channels=1).shape.as_list() == [None, None, 1]
    assert tf.image.decode_gif(b"x").shape.as_list() == [None, None, None, 3]
    assert tf.image.decode_and_crop_jpeg(b"x", [0, 0, 5, 6]).shape.as_list() == [5, 6, None]


def test_png_hostile_headers():
    big = png_file([b"\x00"], 8, 0)
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 0, 0, 0, 0)
    big = big[:8] + _chunk(b"IHDR", ihdr) + big[8 + 25:]
    with pytest.raises(errors.InvalidArgumentError,
                       match="PNG size too large for int: 100000 by 100000"):
        run(tf.image.decode_png(big))
    good = png_of(RGB)
    with pytest.raises(errors.InvalidArgumentError, match="Invalid PNG header, data size 20"):
        run(tf.image.decode_png(good[:20]))
    cut = good[:len(good) - 20]
    with pytest.raises(errors.InvalidArgumentError, match="Invalid PNG data, size %d" % len(cut)):
        run(tf.image.decode_png(cut))


def _fuzz_cases(data, rng, n_cuts=40, n_flips=80):
    cases = [data[:k] for k in sorted(set(rng.randint(0, len(data), size=n_cuts)))]
    for _ in range(n_flips):
        b = bytearray(data)
        for pos in rng.randint(0, len(b), size=rng.randint(1, 4)):
            b[pos] ^= 1 << rng.randint(0, 8)
        cases.append(bytes(b))
    return cases


def test_fuzz_truncated_and_flipped():
    """Cut and bit-flipped files through every decoder: a result or InvalidArgument, nothing
    else (the C test test_codec runs the same under the sanitizers)."""
    rng = np.random.RandomState(1234)
    jpeg = run(tf.image.encode_jpeg(smooth(24, 32), quality=90))
    prog = run(tf.image.encode_jpeg(smooth(24, 32), progressive=True))
    files = [png_of(RGB), png_of(np.zeros((4, 5, 4), np.uint16) + 300), jpeg, prog, ANIMATED,
             bmp_file(RGB, 24)]
    p = tf.placeholder(tf.string, shape=[])
    ops = [tf.image.decode_image(p), tf.image.decode_gif(p), tf.image.decode_bmp(p),
           tf.image.decode_jpeg(p, try_recover_truncated=True, acceptable_fraction=0.5),
           tf.image.decode_and_crop_jpeg(p, [1, 2, 8, 8]), tf.image.extract_jpeg_shape(p),
           tf.image.decode_png(p, dtype=tf.uint16)]
    outcomes = {"ok": 0, "invalid": 0}
    with tf.Session() as s:
        for data in files:
            for case in _fuzz_cases(data, rng):
                for op in ops:
                    try:
                        s.run(op, {p: case})
                        outcomes["ok"] += 1
                    except errors.InvalidArgumentError:
                        outcomes["invalid"] += 1
    assert outcomes["ok"] > 0 and outcomes["invalid"] > 0
