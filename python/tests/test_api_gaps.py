"""TensorFlow 1.x names that common programs use, added over the core's ops (docs/python.md,
"More TensorFlow 1.x names"): array and image functions, learning-rate decays, moving averages,
optimizers, checkpoint readers, batch normalization layers, bidirectional RNNs, make_template
and losses, each against numpy or TensorFlow's documented formula, with its op types, node
names and errors."""
import math
import os

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


def test_sobel_edges_colour_spaces_resize_with_pad():
    im = RNG.rand(2, 5, 6, 3).astype(np.float32)
    edges = run(tf.image.sobel_edges(im))
    assert edges.shape == (2, 5, 6, 3, 2)
    p = np.pad(im, [[0, 0], [1, 1], [1, 1], [0, 0]], "reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float32)
    for k, kern in enumerate((ky, ky.T)):
        want = sum(kern[i, j] * p[:, i:i + 5, j:j + 6] for i in range(3) for j in range(3))
        np.testing.assert_allclose(edges[..., k], want, rtol=1e-5, atol=1e-5)
    yiq = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                    [0.114, -0.32134392, 0.31119955]], np.float32)
    got = run(tf.image.rgb_to_yiq(im), tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(im)),
              tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(im)))
    np.testing.assert_allclose(got[0], im @ yiq, rtol=1e-5, atol=1e-6)
    # TensorFlow's inverse matrices are rounded: the round trips agree to about 1e-4
    np.testing.assert_allclose(got[1], im, atol=2e-4)
    np.testing.assert_allclose(got[2], im, atol=2e-4)
    # 5x6 into 4x12: ratio max(6/12, 5/4) = 1.25 -> 4 x 4.8, resized to 4x4 and padded on the
    # left by floor((12 - 4.8) / 2) = 3 columns, as TensorFlow computes it
    padded = run(tf.image.resize_image_with_pad(im, 4, 12))
    want = run(tf.image.resize_images(im, [4, 4]))
    assert padded.shape == (2, 4, 12, 3)
    np.testing.assert_allclose(padded[:, :, 3:7], want, rtol=1e-6)
    assert not padded[:, :, :3].any() and not padded[:, :, 7:].any()
    assert run(tf.image.random_crop(im[0], [2, 2, 3], seed=2)).shape == (2, 2, 3)

# ---------------------------------------------------------------------------------------------
# Learning-rate schedules, moving averages, optimizers, checkpoints

def _over_steps(fetches, steps):
    gs = tf.train.get_or_create_global_step()
    inc = tf.assign_add(gs, 1)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            out.append(sess.run(fetches))
            sess.run(inc)
    return np.array(out, np.float64)


def test_learning_rate_schedules():
    gs = tf.train.get_or_create_global_step()
    fetches = [
        tf.train.piecewise_constant(gs, [2, 5], [1.0, 0.5, 0.1]),
        tf.train.polynomial_decay(0.1, gs, 4, 0.01, power=2.0),
        tf.train.polynomial_decay(0.1, gs, 4, 0.01, power=2.0, cycle=True),
        tf.train.natural_exp_decay(0.1, gs, 2, 0.5),
        tf.train.natural_exp_decay(0.1, gs, 2, 0.5, staircase=True),
        tf.train.inverse_time_decay(0.1, gs, 2, 0.5),
        tf.train.inverse_time_decay(0.1, gs, 2, 0.5, staircase=True),
        tf.train.cosine_decay(0.1, gs, 4, alpha=0.1),
        tf.train.cosine_decay_restarts(0.1, gs, 2, t_mul=2.0, m_mul=0.5),
        tf.train.cosine_decay_restarts(0.1, gs, 2, t_mul=1.0),
        tf.train.linear_cosine_decay(0.1, gs, 4, num_periods=1.0, beta=0.01),
    ]
    assert [f.op.name for f in fetches[1:]] == [
        "PolynomialDecay", "PolynomialDecay_1", "ExponentialDecay", "ExponentialDecay_1",
        "InverseTimeDecay", "InverseTimeDecay_1", "CosineDecay", "SGDRDecay", "SGDRDecay_1",
        "LinearCosineDecay"]
    got = _over_steps(fetches, 8)

    def sgdr(step, t_mul, m_mul, first=2.0):
        frac = step / first
        if t_mul == 1.0:
            i = math.floor(frac)
            frac -= i
        else:
            i = math.floor(math.log(1 - frac * (1 - t_mul)) / math.log(t_mul))
            sum_r = (1 - t_mul ** i) / (1 - t_mul)
            frac = (frac - sum_r) / t_mul ** i
        return 0.1 * 0.5 * m_mul ** i * (1 + math.cos(math.pi * frac))

    for s in range(8):
        cyc = 4 * max(1, math.ceil(s / 4))
        lin = (4 - min(s, 4)) / 4
        cosl = 0.5 * (1 + math.cos(math.pi * 2 * 1.0 * min(s, 4) / 4))
        want = [1.0 if s <= 2 else 0.5 if s <= 5 else 0.1,
                0.09 * (1 - min(s, 4) / 4) ** 2 + 0.01,
                0.09 * (1 - s / cyc) ** 2 + 0.01,
                0.1 * math.exp(-0.5 * s / 2), 0.1 * math.exp(-0.5 * (s // 2)),
                0.1 / (1 + 0.5 * s / 2), 0.1 / (1 + 0.5 * (s // 2)),
                0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 4) / 4)) + 0.1),
                sgdr(s, 2.0, 0.5), sgdr(s, 1.0, 1.0),
                0.1 * ((0.0 + lin) * cosl + 0.01)]
        np.testing.assert_allclose(got[s], want, rtol=1e-5, atol=1e-7, err_msg="step %d" % s)


def test_learning_rate_schedule_errors():
    with pytest.raises(ValueError, match="global_step is required for polynomial_decay."):
        tf.train.polynomial_decay(0.1, None, 10)
    with pytest.raises(ValueError, match="global_step is required for cosine_decay."):
        tf.train.cosine_decay(0.1, None, 10)
    gs = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="length of boundaries should be 1 less"):
        tf.train.piecewise_constant(gs, [1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match=r"Boundaries \(float32\) must have the same dtype"):
        tf.train.piecewise_constant(gs, [1.5], [0.1, 0.2])
    with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
        tf.train.piecewise_constant(gs, [1], [0.1, 2])


def test_exponential_moving_average():
    v = tf.Variable([1.0, 2.0], name="v")
    t = tf.placeholder(tf.float32, [2], name="t")
    step = tf.Variable(0, trainable=False, name="n")
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    apply = ema.apply([v])
    ema_t = tf.train.ExponentialMovingAverage(0.8, zero_debias=True, name="avg")
    apply_t = ema_t.apply([t])
    assert apply.name == "ExponentialMovingAverage" and apply.type == "NoOp"
    assert ema.average(v).op.name == "v/ExponentialMovingAverage"
    assert ema.average_name(v) == "v/ExponentialMovingAverage"
    assert ema_t.average(t).op.name == "t/avg"
    names = [x.op.name for x in tf.global_variables()]
    assert names == ["v", "n", "v/ExponentialMovingAverage", "t/avg", "t/avg/biased",
                     "t/avg/local_step"]
    assert tf.moving_average_variables() == [v]
    assert tf.get_default_graph().get_operation_by_name(
        "ExponentialMovingAverage/AssignMovingAvg").type == "AssignSub"
    assert ema.variables_to_restore() == {
        "v/ExponentialMovingAverage": v, "n": step, "t/avg": ema_t.average(t),
        "t/avg/biased": tf.global_variables()[4], "t/avg/local_step": tf.global_variables()[5]}
    set_v = tf.assign(v, [3.0, 5.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(set_v)
        shadow, biased = np.array([1.0, 2.0]), np.zeros(2)
        for i, x in enumerate([[10.0, 20.0], [0.0, 4.0], [2.0, 2.0]]):
            sess.run([apply, apply_t], {t: x})
            decay = min(0.9, (1.0 + 0) / (10.0 + 0))  # num_updates stays 0
            shadow -= (shadow - [3.0, 5.0]) * (1 - decay)
            biased -= (biased - np.array(x)) * 0.2
            np.testing.assert_allclose(sess.run(ema.average(v)), shadow, rtol=1e-6)
            np.testing.assert_allclose(sess.run(ema_t.average(t)), biased / (1 - 0.8 ** (i + 1)),
                                       rtol=1e-5)
    with pytest.raises(TypeError, match="must be half, float, or double"):
        ema.apply([step])


def test_exponential_moving_average_variables_to_restore(tmp_path):
    w = tf.Variable([1.0, 2.0], name="w")
    step = tf.Variable(0, trainable=False, name="step")
    ema = tf.train.ExponentialMovingAverage(0.5)
    apply = ema.apply([w])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(w, [5.0, 6.0]))
        sess.run([apply, tf.assign(step, 7)])
        prefix = tf.train.Saver().save(sess, str(tmp_path / "model"))
    # evaluation: the variables restored from their averages' entries
    tf.reset_default_graph()
    w = tf.Variable([0.0, 0.0], name="w")
    step = tf.Variable(0, trainable=False, name="step")
    ema = tf.train.ExponentialMovingAverage(0.5)
    to_restore = ema.variables_to_restore()
    assert to_restore == {"w/ExponentialMovingAverage": w, "step": step}
    saver = tf.train.Saver(to_restore)
    with tf.Session() as sess:
        saver.restore(sess, prefix)
        got = sess.run([w, step])
    np.testing.assert_allclose(got[0], [3.0, 4.0])  # 1 + (5 - 1) / 2, 2 + (6 - 2) / 2
    assert got[1] == 7


def test_adadelta_and_proximal_gradient_descent():
    w0 = np.array([0.5, -0.3, 0.02], np.float32)
    w = tf.Variable(w0, name="w")
    u = tf.Variable(w0, name="u")
    ada = tf.train.AdadeltaOptimizer(0.5, rho=0.9, epsilon=1e-6)
    prox = tf.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=0.05,
                                                     l2_regularization_strength=0.1)
    train = tf.group(ada.minimize(tf.reduce_sum(w * w), var_list=[w]),
                     prox.minimize(tf.reduce_sum(u * u), var_list=[u]))
    assert sorted(x.op.name for x in ada.variables()) == ["w/Adadelta", "w/Adadelta_1"]
    assert tf.get_default_graph().get_operation_by_name(
        "Adadelta/update_w/ApplyAdadelta").type == "ApplyAdadelta"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, uv = w0.astype(np.float64), w0.astype(np.float64)
        accum, accum_update = np.zeros(3), np.zeros(3)
        for _ in range(3):
            sess.run(train)
            g = 2 * wv
            accum = 0.9 * accum + 0.1 * g * g
            update = np.sqrt(accum_update + 1e-6) / np.sqrt(accum + 1e-6) * g
            accum_update = 0.9 * accum_update + 0.1 * update * update
            wv = wv - 0.5 * update
            p = uv - 0.1 * 2 * uv
            uv = np.sign(p) * np.maximum(np.abs(p) - 0.1 * 0.05, 0) / (1 + 0.1 * 0.1)
            np.testing.assert_allclose(sess.run(w), wv, rtol=1e-5)
            np.testing.assert_allclose(sess.run(u), uv, rtol=1e-5, atol=1e-7)


def test_checkpoint_utils(tmp_path):
    with tf.variable_scope("a"):
        w = tf.get_variable("w", [2, 3], initializer=tf.ones_initializer())
        tf.get_variable("b", [3], dtype=tf.int32, initializer=tf.constant_initializer(7))
    saver = tf.train.Saver()
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign(w, value))
        prefix = saver.save(sess, str(tmp_path / "model"), global_step=3)
    assert tf.train.list_variables(str(tmp_path)) == [("a/b", [3]), ("a/w", [2, 3])]
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "a/w:0"), value)
    b = tf.train.load_variable(prefix, "a/b")
    assert b.dtype == np.int32 and list(b) == [7, 7, 7]
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.has_tensor("a/w") and not reader.has_tensor("a/c")
    assert reader.get_variable_to_dtype_map() == {"a/b": tf.int32, "a/w": tf.float32}
    with pytest.raises(tf.errors.NotFoundError, match="nope"):
        tf.train.load_variable(prefix, "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_variable(str(empty), "a/w")

    tf.reset_default_graph()
    with tf.variable_scope("new"):
        nw = tf.get_variable("w", [2, 3])
        nb = tf.get_variable("b", [3], dtype=tf.int32)
    other = tf.Variable(tf.zeros([2, 3]), name="other")
    keep = tf.Variable(5.0, name="keep")
    tf.train.init_from_checkpoint(str(tmp_path), {"a/": "new/"})
    tf.train.init_from_checkpoint(prefix, {"a/w": other})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([nw, nb, other, keep])
    np.testing.assert_array_equal(got[0], value)
    assert list(got[1]) == [7, 7, 7] and got[3] == 5.0
    np.testing.assert_array_equal(got[2], value)
    with pytest.raises(ValueError, match="Shape of variable keep:0"):
        tf.train.init_from_checkpoint(prefix, {"a/w": keep})
    with pytest.raises(ValueError, match="Tensor a/x is not found in"):
        tf.train.init_from_checkpoint(prefix, {"a/x": other})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(prefix, {"a/w": "new/"})


# ---------------------------------------------------------------------------------------------
# Losses

def _reduced(losses, weights):
    """SUM_BY_NONZERO_WEIGHTS: the weighted sum over the count of non-zero weights."""
    w = np.broadcast_to(weights, losses.shape)
    return (losses * w).sum() / max(np.count_nonzero(w), 1)


def test_huber_hinge_log_losses():
    labels = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]], np.float32)
    pred = np.array([[0.2, 0.9, 3.5], [-1.0, 0.4, 0.7]], np.float32)
    weights = np.array([[1.0], [0.0]], np.float32)
    err = np.abs(pred - labels)
    huber = np.where(err <= 0.5, 0.5 * err ** 2, 0.5 * 0.25 + 0.5 * (err - 0.5))
    probs = np.clip(pred, 0.05, 0.95)
    logl = -labels * np.log(probs + 1e-7) - (1 - labels) * np.log(1 - probs + 1e-7)
    hinge = np.maximum(0, 1 - (2 * labels - 1) * pred)
    got = run(tf.losses.huber_loss(labels, pred, delta=0.5),
              tf.losses.huber_loss(labels, pred, weights, delta=0.5),
              tf.losses.hinge_loss(labels, pred, weights=2.0),
              tf.losses.log_loss(labels, probs, reduction=tf.losses.Reduction.NONE),
              tf.losses.log_loss(labels, probs, weights))
    np.testing.assert_allclose(got[0], huber.mean(), rtol=1e-5)
    np.testing.assert_allclose(got[1], _reduced(huber, weights), rtol=1e-5)
    np.testing.assert_allclose(got[2], hinge.mean() * 2.0, rtol=1e-5)
    np.testing.assert_allclose(got[3], logl, rtol=1e-5)
    np.testing.assert_allclose(got[4], _reduced(logl, weights), rtol=1e-5)
    assert len(tf.losses.get_losses()) == 5
    assert tf.get_collection(tf.GraphKeys.LOSSES)[0].op.name == "huber_loss/value"
    with pytest.raises(ValueError, match="labels must not be None."):
        tf.losses.huber_loss(None, pred)
    with pytest.raises(ValueError, match="are incompatible"):
        tf.losses.log_loss(labels, pred[:, :2])


def test_cosine_distance():
    a = RNG.randn(4, 3).astype(np.float32)
    b = RNG.randn(4, 3).astype(np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    dist = 1 - (a * b).sum(1, keepdims=True)
    got = run(tf.losses.cosine_distance(a, b, axis=1),
              tf.losses.cosine_distance(a, b, dim=1, reduction=tf.losses.Reduction.NONE),
              tf.losses.cosine_distance(a, b, axis=1, weights=[[1.0], [0.0], [2.0], [0.0]]))
    np.testing.assert_allclose(got[0], dist.mean(), rtol=1e-5)
    np.testing.assert_allclose(got[1], dist, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], (dist[0, 0] + 2 * dist[2, 0]) / 2, rtol=1e-5)
    with pytest.raises(ValueError, match="You must specify 'axis'."):
        tf.losses.cosine_distance(a, b)


def test_weighted_moments_and_log_poisson_loss():
    x = RNG.randn(4, 5).astype(np.float32)
    w = RNG.rand(4, 1).astype(np.float32)
    mean, var = run(*tf.nn.weighted_moments(x, [0], w))
    wb = np.broadcast_to(w, x.shape)
    want_mean = (wb * x).sum(0) / wb.sum(0)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5)
    np.testing.assert_allclose(var, (wb * (x - want_mean) ** 2).sum(0) / wb.sum(0), rtol=1e-5)
    m, _ = tf.nn.weighted_moments(x, [1], 1.0, keepdims=True)
    assert m.shape.as_list() == [4, 1]
    targets = np.array([0.0, 0.5, 1.0, 3.0, 7.0], np.float32)
    log_input = RNG.randn(5).astype(np.float32)
    base = np.exp(log_input) - log_input * targets
    with np.errstate(divide="ignore", invalid="ignore"):
        stirling = targets * np.log(targets) - targets + 0.5 * np.log(2 * np.pi * targets)
    full = base + np.where((targets >= 0) & (targets <= 1), 0, stirling)
    got = run(tf.nn.log_poisson_loss(targets, log_input),
              tf.nn.log_poisson_loss(targets, log_input, compute_full_loss=True))
    np.testing.assert_allclose(got[0], base, rtol=1e-5)
    np.testing.assert_allclose(got[1], full, rtol=1e-5)
    with pytest.raises(ValueError, match="log_input and targets must have the same shape"):
        tf.nn.log_poisson_loss(targets, log_input[:3])


# ---------------------------------------------------------------------------------------------
# Layers, RNNs, templates

def test_batch_normalization_fused_and_updates():
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, momentum=0.9, training=training)
    assert y.op.name == "batch_normalization/cond/Merge"
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert "FusedBatchNormV3" in ops
    assert [v.op.name for v in tf.global_variables()] == [
        "batch_normalization/gamma", "batch_normalization/beta",
        "batch_normalization/moving_mean", "batch_normalization/moving_variance"]
    assert [v.op.name for v in tf.trainable_variables()] == [
        "batch_normalization/gamma", "batch_normalization/beta"]
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [u.op.name for u in updates] == ["batch_normalization/AssignMovingAvg",
                                            "batch_normalization/AssignMovingAvg_1"]
    xv = RNG.randn(6, 4, 4, 3).astype(np.float32) * 2 + 1
    mean, var = xv.mean((0, 1, 2)), xv.var((0, 1, 2))
    n = 6 * 4 * 4
    g = tf.get_default_graph()
    mm = g.get_tensor_by_name("batch_normalization/moving_mean:0")
    mv = g.get_tensor_by_name("batch_normalization/moving_variance:0")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, updates], {x: xv, training: True})
        np.testing.assert_allclose(out, (xv - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(sess.run(mm), 0.1 * mean, rtol=1e-5)
        # the fused path moves toward the Bessel-corrected batch variance
        np.testing.assert_allclose(sess.run(mv), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-5)
        moving = sess.run([mm, mv])
        out, _ = sess.run([y, updates], {x: xv, training: False})
        np.testing.assert_allclose(out, (xv - moving[0]) / np.sqrt(moving[1] + 1e-3),
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(sess.run([mm, mv]), moving)  # momentum 1 when not training


def test_batch_normalization_layer_plain_path_and_reuse():
    layer = tf.layers.BatchNormalization(axis=1, center=False, momentum=0.5, name="bn")
    x = tf.constant(RNG.randn(8, 3, 2).astype(np.float32))
    y = layer.apply(x, training=True)
    assert layer.beta is None and layer.gamma.op.name == "bn/gamma"
    assert layer.moving_mean.shape.as_list() == [3]
    assert "FusedBatchNormV3" not in {op.type for op in tf.get_default_graph().get_operations()}
    assert len(layer.updates) == 2
    y_inf = layer(x, training=False)
    assert len(tf.global_variables()) == 3
    xv = run(x)
    mean, var = xv.mean((0, 2)), xv.var((0, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, layer.updates])
        np.testing.assert_allclose(out, (xv - mean[:, None]) / np.sqrt(var[:, None] + 1e-3),
                                   rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sess.run(layer.moving_mean), 0.5 * mean, rtol=1e-5)
        np.testing.assert_allclose(sess.run(layer.moving_variance), 0.5 + 0.5 * var,
                                   rtol=1e-5)
        mm, mv = sess.run([layer.moving_mean, layer.moving_variance])
        np.testing.assert_allclose(sess.run(y_inf),
                                   (xv - mm[:, None]) / np.sqrt(mv[:, None] + 1e-3), rtol=1e-4,
                                   atol=1e-5)
    with pytest.raises(ValueError, match="Invalid axis: 5"):
        tf.layers.batch_normalization(x, axis=5)
    tf.layers.batch_normalization(x, name="shared")
    tf.layers.batch_normalization(x, name="shared", reuse=True)
    assert sum(v.op.name.startswith("shared/") for v in tf.global_variables()) == 4


def _np_rnn(xs, kernel, bias, lengths=None):
    """BasicRNNCell over xs [batch, time, depth]: outputs zero and state held past a length."""
    batch, steps, _ = xs.shape
    h = np.zeros([batch, bias.shape[0]], np.float32)
    outs = np.zeros([batch, steps, bias.shape[0]], np.float32)
    for t in range(steps):
        new = np.tanh(np.concatenate([xs[:, t], h], 1) @ kernel + bias)
        live = np.ones(batch, bool) if lengths is None else t < np.asarray(lengths)
        h = np.where(live[:, None], new, h)
        outs[:, t] = np.where(live[:, None], new, 0)
    return outs, h


def _np_reverse(xs, lengths):
    out = xs.copy()
    for b, n in enumerate(lengths):
        out[b, :n] = xs[b, :n][::-1]
    return out


def test_bidirectional_dynamic_rnn():
    xs = RNG.randn(3, 5, 2).astype(np.float32)
    lengths = [5, 2, 4]
    init = tf.random_normal_initializer(seed=3)
    with tf.variable_scope("m", initializer=init):
        (out_fw, out_bw), (st_fw, st_bw) = tf.nn.bidirectional_dynamic_rnn(
            tf.nn.rnn_cell.BasicRNNCell(4), tf.nn.rnn_cell.BasicRNNCell(3), tf.constant(xs),
            sequence_length=lengths, dtype=tf.float32)
    names = [v.op.name for v in tf.global_variables()]
    assert names == ["m/bidirectional_rnn/fw/basic_rnn_cell/kernel",
                     "m/bidirectional_rnn/fw/basic_rnn_cell/bias",
                     "m/bidirectional_rnn/bw/basic_rnn_cell/kernel",
                     "m/bidirectional_rnn/bw/basic_rnn_cell/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kf, bf, kb, bb = sess.run(tf.global_variables())
        got = sess.run([out_fw, out_bw, st_fw, st_bw])
    want_fw, want_st_fw = _np_rnn(xs, kf, bf, lengths)
    rev_out, want_st_bw = _np_rnn(_np_reverse(xs, lengths), kb, bb, lengths)
    np.testing.assert_allclose(got[0], want_fw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], _np_reverse(rev_out, lengths), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], want_st_fw, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[3], want_st_bw, rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="is not an RNNCell"):
        tf.nn.bidirectional_dynamic_rnn(None, tf.nn.rnn_cell.BasicRNNCell(3), xs,
                                        dtype=tf.float32)


def test_bidirectional_dynamic_rnn_trains_through_sequence_length():
    # the backward direction reverses each sequence by its length (ReverseSequence), whose
    # gradient reverses dy the same way
    x = tf.placeholder(tf.float32, [2, 4, 3])
    with tf.variable_scope("m", initializer=tf.random_normal_initializer(seed=5)):
        (of, ob), _ = tf.nn.bidirectional_dynamic_rnn(
            tf.nn.rnn_cell.BasicRNNCell(5), tf.nn.rnn_cell.BasicRNNCell(5), x,
            sequence_length=[4, 2], dtype=tf.float32)
    loss = tf.reduce_sum(tf.square(of)) + tf.reduce_sum(tf.square(ob))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    xv = np.random.RandomState(7).randn(2, 4, 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xv})
        for _ in range(120):
            sess.run(train, {x: xv})
        last = sess.run(loss, {x: xv})
    assert last < 0.25 * first


def test_static_bidirectional_rnn():
    xs = RNG.randn(2, 3, 2).astype(np.float32)
    for lengths in (None, [3, 1]):
        tf.reset_default_graph()
        outs, st_fw, st_bw = tf.nn.static_bidirectional_rnn(
            tf.nn.rnn_cell.BasicRNNCell(2), tf.nn.rnn_cell.BasicRNNCell(2),
            [tf.constant(xs[:, t]) for t in range(3)], dtype=tf.float32,
            sequence_length=lengths)
        assert len(outs) == 3 and outs[0].shape.as_list() == [2, 4]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            kf, bf, kb, bb = sess.run(tf.global_variables())
            got = sess.run(outs + [st_fw, st_bw])
        n = [3, 3] if lengths is None else lengths
        want_fw, want_st_fw = _np_rnn(xs, kf, bf, lengths)
        rev_out, want_st_bw = _np_rnn(_np_reverse(xs, n), kb, bb, lengths)
        want_bw = _np_reverse(rev_out, n)
        for t in range(3):
            np.testing.assert_allclose(got[t], np.concatenate([want_fw[:, t], want_bw[:, t]], 1),
                                       rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[3], want_st_fw, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got[4], want_st_bw, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="inputs must not be empty"):
        tf.nn.static_bidirectional_rnn(tf.nn.rnn_cell.BasicRNNCell(2),
                                       tf.nn.rnn_cell.BasicRNNCell(2), [], dtype=tf.float32)


def test_make_template_shares_variables():
    def linear(x, scale=1.0):
        w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
        return x * w * scale

    tmpl = tf.make_template("lin", linear, scale=2.0)
    a, b = tmpl(tf.constant(1.0)), tmpl(tf.constant(3.0))
    now = tf.make_template("lin", linear, create_scope_now_=True)
    with tf.variable_scope("outer"):
        c, d = now(tf.constant(1.0)), now(tf.constant(5.0))
    assert [v.op.name for v in tf.global_variables()] == ["lin/w", "lin_1/w"]
    assert tmpl.variable_scope_name == "lin/" and now.variable_scope.name == "lin_1"
    assert [v.op.name for v in tmpl.trainable_variables] == ["lin/w"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert [list(v) for v in sess.run([a, b, c, d])] == [[2.0], [6.0], [1.0], [5.0]]

    def bad(x):
        return x * tf.Variable(1.0)

    tmpl_bad = tf.make_template("bad", bad)
    tmpl_bad(1.0)
    with pytest.raises(ValueError, match="Trainable variable created when calling a template"):
        tmpl_bad(1.0)
    with pytest.raises(ValueError, match="name cannot be None."):
        tf.make_template(None, linear)


CORPUS = os.environ.get("WEFT_CORPUS", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "..", "..", "shared", "corpus"))
REGRESSION = os.path.join(CORPUS, "tf", "checkpoint", "regression")


@pytest.mark.skipif(not os.path.exists(REGRESSION), reason="no shared/corpus")
def test_import_meta_graph_restores_a_tensorflow_checkpoint():
    # TensorFlow 1.x's model.meta (a MetaGraphDef with its Saver's save/ subgraph) and
    # checkpoint: pred = X * W + b with W = 0.21396178, b = 1.04952538
    saver = tf.train.import_meta_graph(os.path.join(REGRESSION, "model.meta"),
                                       clear_devices=True)
    g = tf.get_default_graph()
    assert not any(op.name.startswith("save/") for op in g.get_operations())
    assert g.get_operation_by_name("W").type == "VariableV2"
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(REGRESSION))
        w, b = sess.run(["W:0", "b:0"])
        pred = sess.run("pred:0", {"X:0": np.array([1.0, 2.0], np.float32)})
    np.testing.assert_allclose([w, b], [0.21396178, 1.04952538], rtol=1e-6)
    np.testing.assert_allclose(pred, np.array([1.0, 2.0]) * w + b, rtol=1e-6)
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(os.path.join(REGRESSION, "model.meta"), import_scope="m")
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(REGRESSION))
        np.testing.assert_allclose(sess.run(["m/W:0", "m/b:0"]), [w, b])
    with pytest.raises(IOError, match="does not exist"):
        tf.train.import_meta_graph(os.path.join(REGRESSION, "missing.meta"))


def test_slots_and_shadows_ignore_the_callers_control_dependencies():
    # minimize under control_dependencies(UPDATE_OPS) with a fed batch: the slots and shadows
    # are made outside those dependencies (TensorFlow's init_scope), so initializing them needs
    # no feed
    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable([1.0, 2.0])
    loss = tf.reduce_sum(x * w)
    with tf.control_dependencies([tf.identity(x)]):
        train = tf.train.AdamOptimizer(0.1).minimize(loss)
        ema = tf.train.ExponentialMovingAverage(0.5, zero_debias=True)
        avg = ema.apply([w, tf.reduce_mean(x, 0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([train, avg], {x: [[1.0, 1.0]]})


def test_doc_example_prints_what_it_says():
    from _docs import check_section
    check_section("More TensorFlow 1.x names", [
        "['batch_normalization/moving_mean', 'batch_normalization/moving_variance']\n"
        "(2, 6, 6, 3)\n"])
