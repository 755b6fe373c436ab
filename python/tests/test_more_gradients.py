"""tf.gradients through the cumulative, segment, clipping, diagonal, resize and linear algebra
ops whose gradient functions tests/test_more_gradients.c checks in C: each symbolic gradient
against central differences of the same graph computed here in numpy float64."""
import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


RNG = np.random.RandomState(11)


def check(build, x0, eps=1e-6, tol=1e-5, shape=None):
    """d sum(sin(f(x))) / dx from tf.gradients against central differences; shape: the
    placeholder's, when some dims should be unknown while the graph is built."""
    x = tf.placeholder(tf.float64, x0.shape if shape is None else shape)
    loss = tf.reduce_sum(tf.sin(build(x)))
    (grad,) = tf.gradients(loss, [x])
    assert grad is not None
    with tf.Session() as sess:
        got = sess.run(grad, {x: x0})
        want = np.zeros_like(x0)
        for i in np.ndindex(*x0.shape):
            hi, lo = x0.copy(), x0.copy()
            hi[i] += eps
            lo[i] -= eps
            want[i] = (sess.run(loss, {x: hi}) - sess.run(loss, {x: lo})) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def well_conditioned(*shape):
    return RNG.uniform(-0.3, 0.3, shape) + 2 * np.eye(shape[-1])


def test_cumulative_and_segments():
    x0 = RNG.uniform(0.5, 1.5, (3, 4))
    check(lambda x: tf.cumsum(x, axis=1, exclusive=True, reverse=True), x0)
    check(lambda x: tf.cumprod(x, axis=0, reverse=True), x0)
    ids = np.array([0, 0, 2], np.int32)
    check(lambda x: tf.math.segment_max(x, ids), x0)
    check(lambda x: tf.math.unsorted_segment_sum(x, np.array([1, -1, 1], np.int32), 3), x0)
    check(lambda x: tf.math.unsorted_segment_max(x, np.array([1, -1, 0], np.int32), 2), x0)


def test_clip_band_and_top_k():
    x0 = RNG.uniform(-1, 1, (2, 3, 4))
    check(lambda x: tf.clip_by_value(x, -0.5, 0.5), x0)
    check(lambda x: tf.matrix_band_part(x, 1, 0), x0)
    check(lambda x: tf.matrix_set_diag(x, tf.matrix_diag_part(x) * 3.0), x0)
    check(lambda x: tf.nn.top_k(x, 2)[0], x0)
    check(lambda x: tf.broadcast_to(x[:, :1, :], [2, 3, 4]), x0)


def test_linear_algebra():
    a0 = well_conditioned(2, 3, 3)
    check(lambda a: tf.matrix_inverse(a), a0)
    check(lambda a: tf.matrix_determinant(a), a0)
    check(lambda a: tf.cholesky(tf.matmul(a, a, transpose_b=True)), a0)
    b = RNG.uniform(-1, 1, (2, 3, 2))
    check(lambda a: tf.matrix_solve(a, b), a0)
    check(lambda a: tf.matrix_triangular_solve(a, b, lower=True), a0)
    tall = RNG.uniform(-1, 1, (4, 3)) + np.eye(4, 3) * np.arange(1, 4)
    check(lambda a: tf.qr(a)[1], tall)
    check(lambda a: tf.svd(a, compute_uv=False), tall)


def test_resize_through_its_grad_op():
    x = tf.placeholder(tf.float32, [1, 3, 4, 2])
    y = tf.image.resize_bilinear(x, [5, 7], align_corners=True)
    (grad,) = tf.gradients(tf.reduce_sum(y * y), [x])
    assert grad.op.type == "ResizeBilinearGrad"
    x0 = RNG.uniform(-1, 1, (1, 3, 4, 2)).astype(np.float32)
    with tf.Session() as sess:
        g = sess.run(grad, {x: x0})
    # y is linear in x: the gradient of sum(y^2) is 2 R^T R x, R^T being the gradient op.
    z = tf.placeholder(tf.float32, [1, 5, 7, 2])
    (adj,) = tf.gradients(tf.reduce_sum(y * z), [x])
    with tf.Session() as sess:
        yv = sess.run(y, {x: x0})
        want = sess.run(adj, {x: x0, z: 2 * yv})
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
    check(lambda v: tf.image.resize_nearest_neighbor(v, [2, 3]), RNG.uniform(-1, 1, (1, 3, 4, 2)))


def test_unknown_batch_dims():
    """The gradients that compute shapes in the graph work when the leading dims are unknown."""
    x0 = RNG.uniform(-1, 1, (3, 5))
    check(lambda x: tf.nn.top_k(x, 2)[0], x0, shape=[None, 5])
    check(lambda x: tf.math.segment_mean(x, np.array([0, 1, 1], np.int32)), x0, shape=[None, 5])
    check(lambda x: tf.math.unsorted_segment_min(x, np.array([1, -1, 1], np.int32), 2), x0,
          shape=[None, None])
    check(lambda x: tf.cumsum(x, axis=1), x0, shape=[None, 5])
    check(lambda a: tf.matrix_inverse(a), well_conditioned(2, 3, 3), shape=[None, 3, 3])
    check(lambda a: tf.cholesky(tf.matmul(a, a, transpose_b=True)), well_conditioned(2, 3, 3),
          shape=[None, 3, 3])


def test_bicubic_roll_and_least_squares():
    x = tf.placeholder(tf.float32, [1, 4, 3, 1])
    (grad,) = tf.gradients(tf.reduce_sum(tf.image.resize_bicubic(x, [6, 5])), [x])
    assert grad.op.type == "ResizeBicubicGrad"
    x0 = RNG.uniform(-1, 1, (1, 4, 3, 1)).astype(np.float32)
    with tf.Session() as sess:
        g = sess.run(grad, {x: x0})
    # Each output pixel's bicubic weights sum to 1: the gradient of the sum totals 30 pixels.
    np.testing.assert_allclose(g.sum(), 30.0, rtol=1e-5)
    check(lambda v: tf.roll(v, shift=[2, -1], axis=[1, 0]), RNG.uniform(-1, 1, (3, 4)))
    b = RNG.uniform(-1, 1, (4, 2))
    check(lambda a: tf.matrix_solve_ls(a, b, l2_regularizer=0.05),
          RNG.uniform(-1, 1, (4, 3)) + np.eye(4, 3))
