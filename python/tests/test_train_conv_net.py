"""A tiny conv net (Conv2D + FusedBatchNorm + MaxPool + dense, and the same with
tf.nn.batch_normalization, AvgPool and a strided slice) trained with
tf.train.GradientDescentOptimizer: minimize builds the conv, pool and batch norm gradients
(weft_gradients) and a few steps bring the loss down to a checked bound."""
import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def data():
    rng = np.random.RandomState(0)
    x = rng.randn(8, 6, 6, 1).astype(np.float32)
    # Label: is the top-left quadrant brighter than the rest?
    y = (x[:, :3, :3, 0].mean(axis=(1, 2)) > x[:, 3:, 3:, 0].mean(axis=(1, 2)))
    return x, np.stack([y, ~y], axis=1).astype(np.float32)


def train(build, steps=30, lr=0.1):
    x_np, y_np = data()
    x = tf.placeholder(tf.float32, [8, 6, 6, 1])
    y = tf.placeholder(tf.float32, [8, 2])
    logits = build(x)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            value, _ = sess.run([loss, train_op], {x: x_np, y: y_np})
            losses.append(value)
        losses.append(sess.run(loss, {x: x_np, y: y_np}))
    return losses


def weight(name, shape):
    rng = np.random.RandomState(len(name))
    return tf.Variable((rng.randn(*shape) * 0.3).astype(np.float32), name=name)


def test_conv_fused_batch_norm_max_pool():
    def build(x):
        h = tf.nn.conv2d(x, weight("w1", [3, 3, 1, 4]), strides=[1, 1, 1, 1], padding="SAME")
        scale = tf.Variable(np.ones(4, np.float32), name="scale")
        offset = tf.Variable(np.zeros(4, np.float32), name="offset")
        h, _, _ = tf.nn.fused_batch_norm(h, scale, offset, is_training=True)
        h = tf.nn.relu(h)
        h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
        h = tf.reshape(h, [8, 36])
        return tf.matmul(h, weight("w2", [36, 2])) + weight("b2", [2])

    losses = train(build)
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.1 < losses[0]
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Conv2DBackpropFilter", "MaxPoolGrad", "FusedBatchNormGradV3"} <= types


def test_conv_batch_normalization_avg_pool_slice():
    def build(x):
        h = tf.nn.conv2d(x, weight("w1", [3, 3, 1, 4]), strides=[1, 1, 1, 1], padding="VALID")
        mean, var = tf.nn.moments(h, axes=[0, 1, 2])
        h = tf.nn.batch_normalization(h, mean, var, tf.Variable(np.zeros(4, np.float32)),
                                      tf.Variable(np.ones(4, np.float32)), 1e-3)
        h = tf.nn.avg_pool(tf.nn.relu(h), ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                           padding="SAME")
        h = h[:, :, :, 1:]  # StridedSlice: channel 0 gets no gradient
        h = tf.reshape(h, [8, 12])
        return tf.matmul(h, weight("w2", [12, 2]))

    losses = train(build)
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.4 < 0.6 < losses[0]
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"AvgPoolGrad", "StridedSliceGrad"} <= types
