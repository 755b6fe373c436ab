"""TensorFlow 1.x names that common programs use, added over the core's ops (docs/python.md,
"More TensorFlow 1.x names"): array and image functions, learning-rate decays, moving averages,
optimizers, checkpoint readers, batch normalization layers, bidirectional RNNs, make_template
and losses, each against numpy or TensorFlow's documented formula, with its op types, node
names and errors."""
import math

import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed_dict=feed)


RNG = np.random.RandomState(11)


# ---------------------------------------------------------------------------------------------
# Array functions

@pytest.mark.parametrize("mode,np_mode", [("CONSTANT", "constant"), ("reflect", "reflect"),
                                          ("Symmetric", "symmetric")])
def test_pad_modes(mode, np_mode):
    x = RNG.randn(3, 4).astype(np.float32)
    p = [[1, 2], [2, 1]]
    out = tf.pad(x, p, mode)
    assert out.op.type == ("Pad" if np_mode == "constant" else "MirrorPad")
    np.testing.assert_array_equal(run(out), np.pad(x, p, np_mode))


def test_pad_constant_values_and_errors():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = tf.pad(x, [[0, 1], [1, 0]], constant_values=9, name="padded")
    assert out.op.type == "PadV2" and out.op.name == "padded"
    np.testing.assert_array_equal(run(out), np.pad(x, [[0, 1], [1, 0]], constant_values=9))
    with pytest.raises(ValueError, match="Unknown padding mode: WRAP"):
        tf.pad(x, [[0, 1], [1, 0]], "wrap")


def test_diag_and_diag_part():
    d = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    full = tf.diag(d)
    assert full.op.type == "Diag" and full.shape.as_list() == [2, 2, 2, 2]
    want = np.zeros([2, 2, 2, 2], np.float32)
    for i in range(2):
        for j in range(2):
            want[i, j, i, j] = d[i, j]
    np.testing.assert_array_equal(run(full), want)
    np.testing.assert_array_equal(run(tf.diag_part(want)), d)
    assert tf.diag_part(want).op.type == "DiagPart"


def test_space_depth_batch_round_trips():
    im = RNG.randn(2, 4, 6, 3).astype(np.float32)
    d = tf.space_to_depth(im, 2)
    assert d.op.type == "SpaceToDepth" and d.shape.as_list() == [2, 2, 3, 12]
    got = run(d)
    # SpaceToDepth: out[b, i, j, (di * 2 + dj) * C + c] = in[b, 2i + di, 2j + dj, c]
    want = im.reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 3, 2, 4, 5).reshape(2, 2, 3, 12)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(run(tf.nn.depth_to_space(d, 2)), im)
    pads = [[0, 0], [1, 1]]
    b = tf.space_to_batch(im, pads, block_size=2)
    assert b.op.type == "SpaceToBatchND"
    assert tf.get_default_graph().get_operations()[-3].type == "Const"
    got = run(b)
    assert got.shape == (8, 2, 4, 3)
    padded = np.pad(im, [[0, 0], [0, 0], [1, 1], [0, 0]])
    # out[(bi * 2 + bj) * N + n, i, j] = padded[n, 2i + bi, 2j + bj]
    for bi in range(2):
        for bj in range(2):
            for n in range(2):
                np.testing.assert_array_equal(got[(bi * 2 + bj) * 2 + n], padded[n, bi::2, bj::2])
    np.testing.assert_array_equal(run(tf.batch_to_space(b, pads, 2)), im)
    np.testing.assert_array_equal(run(tf.batch_to_space_nd(
        tf.space_to_batch_nd(im, [2, 1], [[0, 0], [0, 0]]), [2, 1], [[0, 0], [0, 0]])), im)
    with pytest.raises(ValueError, match="Cannot specify both"):
        tf.space_to_batch(im, pads, block_size=2, block_shape=2)


def test_extract_image_patches():
    im = np.arange(1 * 4 * 4 * 2, dtype=np.float32).reshape(1, 4, 4, 2)
    p = tf.extract_image_patches(im, ksizes=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                                 rates=[1, 1, 1, 1], padding="VALID")
    assert p.op.type == "ExtractImagePatches" and p.shape.as_list() == [1, 2, 2, 8]
    got = run(p)
    np.testing.assert_array_equal(got[0, 1, 0], im[0, 2:4, 0:2].reshape(-1))
    got2 = run(tf.image.extract_image_patches(im, sizes=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                                              rates=[1, 1, 1, 1], padding="VALID"))
    np.testing.assert_array_equal(got, got2)


def test_roll_nth_element_identity_n_parallel_stack():
    np.testing.assert_array_equal(run(tf.manip.roll([1, 2, 3, 4], 1, 0)), [4, 1, 2, 3])
    x = RNG.randn(3, 5).astype(np.float32)
    nth = tf.nn.nth_element(x, 2)
    assert nth.op.type == "NthElement"
    np.testing.assert_array_equal(run(nth), np.sort(x, -1)[:, 2])
    np.testing.assert_array_equal(run(tf.nn.nth_element(x, 0, reverse=True)), x.max(-1))
    outs = tf.identity_n([tf.constant(1.0), tf.constant([2, 3])])
    assert [t.name for t in outs] == ["IdentityN:0", "IdentityN:1"]
    a, b = run(*outs)
    assert a == 1.0 and list(b) == [2, 3]
    st = tf.parallel_stack([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert st.op.type == "ParallelConcat" and st.op.name == "parallel_stack/ParallelConcat"
    np.testing.assert_array_equal(run(st), [[1, 2], [3, 4], [5, 6]])


def test_random_crop():
    x = np.arange(5 * 6 * 3, dtype=np.float32).reshape(5, 6, 3)
    out = tf.random_crop(x, [2, 3, 3], seed=4)
    assert out.op.name == "random_crop"
    got = run(out)
    hits = [(i, j) for i in range(4) for j in range(4)
            if np.array_equal(x[i:i + 2, j:j + 3], got)]
    assert len(hits) == 1
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need value.shape >= size"):
        run(tf.random_crop(x, [6, 1, 1]))


def test_orthogonal_initializer():
    for shape in ([4, 6], [3, 2, 5], [6, 4]):
        tf.reset_default_graph()
        v = tf.get_variable("w", shape, initializer=tf.orthogonal_initializer(gain=2.0, seed=1))
        with tf.Session() as sess:
            sess.run(v.initializer)
            w = sess.run(v).reshape(-1, shape[-1])
        small = min(w.shape)
        gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
        np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-4)
    assert tf.initializers.orthogonal is tf.orthogonal_initializer
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.orthogonal_initializer()([3])


# ---------------------------------------------------------------------------------------------
# Images

def test_crop_and_resize():
    im = RNG.rand(2, 4, 4, 1).astype(np.float32)
    out = tf.image.crop_and_resize(im, [[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1 / 3, 1 / 3]],
                                   [1, 0], [4, 2])
    assert out.op.type == "CropAndResize"
    got = run(out)
    # box 0 covers image 1 exactly: rows sampled at 0..3, columns at 0 and 3
    np.testing.assert_allclose(got[0], im[1][:, [0, 3]], rtol=1e-6)
    # box 1 spans pixel (0, 0) to (1, 1): rows at 0, 1/3, 2/3, 1 interpolated, columns 0 and 1
    ys = np.array([0, 1 / 3, 2 / 3, 1.0])
    want = np.stack([(1 - ys) * im[0, 0, c, 0] + ys * im[0, 1, c, 0] for c in (0, 1)], 1)
    np.testing.assert_allclose(got[1, :, :, 0], want, rtol=1e-5)


def test_central_crop_and_crop_or_pad():
    im = np.arange(1 * 5 * 8 * 2, dtype=np.float32).reshape(1, 5, 8, 2)
    # int((5 - 2.5) / 2) = 1 -> 3 rows; int((8 - 4) / 2) = 2 -> 4 columns
    np.testing.assert_array_equal(run(tf.image.central_crop(im, 0.5)), im[:, 1:4, 2:6])
    ph = tf.placeholder(tf.float32, [None, None, 2])
    np.testing.assert_array_equal(run(tf.image.central_crop(ph, 0.5), feed={ph: im[0]}),
                                  im[0, 1:4, 2:6])
    with pytest.raises(ValueError, match=r"central_fraction must be within \(0, 1\]"):
        tf.image.central_crop(im, 1.5)
    out = run(tf.image.resize_image_with_crop_or_pad(im[0], 3, 10))
    want = np.pad(im[0, 1:4], [[0, 0], [1, 1], [0, 0]])
    np.testing.assert_array_equal(out, want)
    with pytest.raises(ValueError, match="target_width must be > 0."):
        tf.image.resize_image_with_crop_or_pad(im, 3, 0)


def test_random_flips_are_seeded():
    im = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3, 1)
    tf.set_random_seed(5)
    outs = [tf.image.random_flip_left_right(im[0]), tf.image.random_flip_up_down(im)]
    assert outs[0].op.name == "random_flip_left_right/Merge"
    with tf.Session() as sess:
        seen = [sess.run(outs) for _ in range(12)]
    lr = {a.tobytes() for a, _ in seen}
    assert lr == {im[0].tobytes(), im[0][:, ::-1].tobytes()}
    for _, b in seen:
        for i in range(2):
            assert b[i].tobytes() in (im[i].tobytes(), im[i][::-1].tobytes())
    tf.reset_default_graph()
    tf.set_random_seed(5)
    again = tf.image.random_flip_left_right(im[0])
    with tf.Session() as sess:
        assert [sess.run(again).tobytes() for _ in range(12)] == [a.tobytes() for a, _ in seen]


def test_random_adjustments_and_gamma():
    im = RNG.rand(4, 4, 3).astype(np.float32)
    got = run(tf.image.random_brightness(im, 0.2, seed=1))
    delta = got - im
    assert np.allclose(delta, delta.flat[0], atol=1e-6) and abs(delta.flat[0]) <= 0.2
    for fn, args in ((tf.image.random_contrast, (0.5, 1.5)),
                     (tf.image.random_saturation, (0.5, 1.5)), (tf.image.random_hue, (0.2,))):
        assert run(fn(im, *args, seed=3)).shape == im.shape
    with pytest.raises(ValueError, match="upper must be > lower."):
        tf.image.random_contrast(im, 1.0, 0.5)
    with pytest.raises(ValueError, match="max_delta must be <= 0.5."):
        tf.image.random_hue(im, 0.7)
    with pytest.raises(ValueError, match="max_delta must be non-negative."):
        tf.image.random_brightness(im, -1.0)
    np.testing.assert_allclose(run(tf.image.adjust_gamma(im, 2.0, 0.5)), 0.5 * im ** 2,
                               rtol=1e-6)
    u8 = (im * 255).astype(np.uint8)
    want = np.clip(((u8 / 255.0) ** 0.5) * 255.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(run(tf.image.adjust_gamma(u8, 0.5)), want)


def test_total_variation_gradients_psnr():
    a = RNG.rand(2, 5, 4, 3).astype(np.float32)
    b = RNG.rand(2, 5, 4, 3).astype(np.float32)
    tv = (np.abs(np.diff(a, axis=1)).sum((1, 2, 3)) + np.abs(np.diff(a, axis=2)).sum((1, 2, 3)))
    np.testing.assert_allclose(run(tf.image.total_variation(a)), tv, rtol=1e-5)
    dy, dx = run(*tf.image.image_gradients(a))
    np.testing.assert_allclose(dy[:, :-1], np.diff(a, axis=1), rtol=1e-6)
    assert not dy[:, -1].any() and not dx[:, :, -1].any()
    mse = ((a - b) ** 2).mean((1, 2, 3))
    np.testing.assert_allclose(run(tf.image.psnr(a, b, 1.0)), 10 * np.log10(1.0 / mse),
                               rtol=1e-5)
