"""compat.v1 ops against numpy: math, reductions, array ops, nn, losses, operators, slicing,
gradients."""
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


X = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, 0.5]], np.float32)
Y = np.array([[0.5, 2.0, -1.0], [3.0, -1.5, 2.0]], np.float32)


def test_elementwise_math():
    x, y = tf.constant(X), tf.constant(Y)
    got = run(tf.add(x, y), tf.subtract(x, y), tf.multiply(x, y), tf.divide(x, y),
              tf.maximum(x, y), tf.minimum(x, y), tf.square(x), tf.abs(x), tf.sign(x),
              tf.exp(x), tf.sqrt(tf.abs(x)), tf.log(tf.abs(x)), tf.negative(x))
    want = [X + Y, X - Y, X * Y, X / Y, np.maximum(X, Y), np.minimum(X, Y), X * X, np.abs(X),
            np.sign(X), np.exp(X), np.sqrt(np.abs(X)), np.log(np.abs(X)), -X]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)


def test_operators_broadcast_python_and_numpy_scalars():
    x = tf.constant(X)
    got = run(x + 1, 1 + x, x - 2, 2 - x, x * 3, 3 * x, x / 2, 2 / x, -x, x ** 2,
              np.float32(2) * x, x @ tf.constant(Y.T), x > 0, abs(x))
    want = [X + 1, 1 + X, X - 2, 2 - X, X * 3, 3 * X, X / 2, 2 / X, -X, X ** 2, 2 * X, X @ Y.T,
            X > 0, np.abs(X)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    assert (x + 1).dtype == tf.float32


def test_reductions_axis_keepdims():
    x = tf.constant(X)
    got = run(tf.reduce_sum(x), tf.reduce_sum(x, axis=1), tf.reduce_mean(x, 0, keepdims=True),
              tf.reduce_max(x, axis=[0, 1]), tf.reduce_min(x, 1), tf.reduce_prod(x, 0),
              tf.reduce_sum(x, reduction_indices=[1], keep_dims=True),
              tf.argmax(x, 1), tf.argmin(x, axis=0))
    want = [X.sum(), X.sum(1), X.mean(0, keepdims=True), X.max(), X.min(1), X.prod(0),
            X.sum(1, keepdims=True), X.argmax(1), X.argmin(0)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    assert got[7].dtype == np.int64


def test_cast_compare_logic():
    x = tf.constant(X)
    got = run(tf.cast(x, "float"), tf.cast(x > 0, tf.int32), tf.equal(x, 0.5),
              tf.not_equal(x, 0.5), tf.less(x, 1), tf.greater_equal(x, 1),
              tf.logical_and(x > 0, x < 2), tf.logical_or(x > 4, x < -3), tf.logical_not(x > 0))
    want = [X, (X > 0).astype(np.int32), X == 0.5, X != 0.5, X < 1, X >= 1, (X > 0) & (X < 2),
            (X > 4) | (X < -3), ~(X > 0)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_array_ops():
    x = tf.constant(X)
    a = np.arange(6, dtype=np.int32)
    got = run(tf.reshape(x, [3, 2]), tf.transpose(x), tf.concat([x, x], 1), tf.stack([x, x]),
              tf.expand_dims(x, 0), tf.squeeze(tf.expand_dims(x, 0)), tf.tile(x, [2, 1]),
              tf.gather(tf.constant(a), [4, 0]), tf.one_hot([0, 2], 3),
              tf.zeros([2, 2]), tf.ones([2], tf.int32), tf.fill([2, 3], 7.0),
              tf.zeros_like(x), tf.ones_like(x), tf.range(5), tf.range(1, 10, 3), tf.shape(x),
              tf.size(x), tf.rank(x), tf.identity(x), tf.add_n([x, x, x]),
              tf.clip_by_value(x, -1.0, 1.0), tf.where(x > 0, x, tf.zeros_like(x)))
    want = [X.reshape(3, 2), X.T, np.concatenate([X, X], 1), np.stack([X, X]), X[None],
            X, np.tile(X, [2, 1]), a[[4, 0]], np.eye(3)[[0, 2]], np.zeros((2, 2)), np.ones(2),
            np.full((2, 3), 7.0), np.zeros_like(X), np.ones_like(X), np.arange(5),
            np.arange(1, 10, 3), [2, 3], 6, 2, X, 3 * X, np.clip(X, -1, 1),
            np.where(X > 0, X, 0)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    parts = run(*tf.split(x, 3, axis=1))
    for k in range(3):
        np.testing.assert_array_equal(parts[k], X[:, k:k + 1])
    rows = run(*tf.unstack(x))
    np.testing.assert_array_equal(rows[1], X[1])


def test_slicing():
    x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    n = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = run(x[0], x[:, 1], x[1, :, ::2], x[..., -1], x[:, None, 0], x[0, 1:3, 1:-1])
    want = [n[0], n[:, 1], n[1, :, ::2], n[..., -1], n[:, None, 0], n[0, 1:3, 1:-1]]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_nn_ops():
    x = tf.constant(X)
    b = np.array([0.1, 0.2, 0.3], np.float32)
    w = np.array([[1.0, 0.0], [0.5, -1.0], [2.0, 1.0]], np.float32)
    sm = np.exp(X) / np.exp(X).sum(1, keepdims=True)
    got = run(tf.nn.relu(x), tf.nn.relu6(x * 2), tf.nn.sigmoid(x), tf.nn.tanh(x),
              tf.nn.softmax(x), tf.nn.log_softmax(x), tf.nn.bias_add(x, b),
              tf.nn.xw_plus_b(x, w, [1.0, 2.0]), tf.nn.l2_loss(x))
    want = [np.maximum(X, 0), np.clip(2 * X, 0, 6), 1 / (1 + np.exp(-X)), np.tanh(X), sm,
            np.log(sm), X + b, X @ w + [1.0, 2.0], (X * X).sum() / 2]
    for g, wv in zip(got, want):
        np.testing.assert_allclose(g, wv, rtol=1e-5, atol=1e-6)


def test_conv_and_pool():
    img = np.random.RandomState(0).rand(1, 4, 4, 1).astype(np.float32)
    k = np.ones((2, 2, 1, 1), np.float32)
    got = run(tf.nn.conv2d(img, k, [1, 1, 1, 1], "VALID"),
              tf.nn.max_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
              tf.nn.avg_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"))
    i = img[0, :, :, 0]
    conv = np.array([[i[r:r + 2, c:c + 2].sum() for c in range(3)] for r in range(3)])
    mx = np.array([[i[r:r + 2, c:c + 2].max() for c in (0, 2)] for r in (0, 2)])
    av = np.array([[i[r:r + 2, c:c + 2].mean() for c in (0, 2)] for r in (0, 2)])
    np.testing.assert_allclose(got[0][0, :, :, 0], conv, rtol=1e-5)
    np.testing.assert_allclose(got[1][0, :, :, 0], mx, rtol=1e-6)
    np.testing.assert_allclose(got[2][0, :, :, 0], av, rtol=1e-6)


def test_losses():
    logits = tf.constant(X)
    labels = np.array([[0, 0, 1], [0, 1, 0]], np.float32)
    sparse = np.array([2, 1], np.int32)
    logp = X - np.log(np.exp(X).sum(1, keepdims=True))
    xent = -(labels * logp).sum(1)
    z = (Y > 0).astype(np.float32)
    sig = np.maximum(X, 0) - X * z + np.log1p(np.exp(-np.abs(X)))
    got = run(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits),
              tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits),
              tf.nn.sparse_softmax_cross_entropy_with_logits(labels=sparse, logits=logits),
              tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=logits),
              tf.losses.mean_squared_error(Y, logits),
              tf.losses.softmax_cross_entropy(labels, logits))
    want = [xent, xent, xent, sig, ((X - Y) ** 2).mean(), xent.mean()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert len(tf.get_collection(tf.GraphKeys.LOSSES)) == 2


def test_random_ops_seeded_and_shaped():
    tf.set_random_seed(42)
    n = tf.random_normal([2000], mean=1.0, stddev=2.0)
    t = tf.truncated_normal([2000], stddev=1.0)
    u = tf.random_uniform([2000], minval=-1.0, maxval=3.0)
    a, b, c = run(n, t, u)
    assert abs(a.mean() - 1.0) < 0.25 and abs(a.std() - 2.0) < 0.25
    assert np.all(np.abs(b) <= 2.0)
    assert c.min() >= -1.0 and c.max() < 3.0 and abs(c.mean() - 1.0) < 0.2
    again = run(n)
    tf.reset_default_graph()
    tf.set_random_seed(42)
    n2 = tf.random_normal([2000], mean=1.0, stddev=2.0)
    np.testing.assert_array_equal(run(n2), again)


def test_gradients():
    x = tf.placeholder(tf.float32, [3])
    w = tf.Variable([1.0, 2.0, 3.0])
    y = tf.reduce_sum(w * x * x)
    unrelated = tf.constant(1.0)
    gx, gw, gu = tf.gradients(y, [x, w, unrelated])
    assert gu is None
    feed = np.array([1.0, -1.0, 2.0], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vx, vw = sess.run([gx, gw], {x: feed})
    np.testing.assert_allclose(vx, 2 * np.array([1, 2, 3]) * feed)
    np.testing.assert_allclose(vw, feed * feed)


def test_group_tuple_no_op_control_dependencies():
    v = tf.Variable(0.0)
    inc = tf.assign_add(v, 1.0)
    with tf.control_dependencies([inc]):
        after = v.read_value()  # reads the variable itself, after inc
    grp = tf.group(inc, tf.no_op())
    assert grp.type == "NoOp"
    assert [c.name for c in after.op.control_inputs] == [inc.op.name]
    assert after.op.inputs[0].op is v.op
    t1, t2 = tf.tuple([tf.constant(1.0), tf.constant(2.0)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(after) == 1.0
        assert sess.run(grp) is None
        assert sess.run(v) == 2.0
        assert sess.run([t1, t2]) == [1.0, 2.0]


def test_special_functions_and_tf_math():
    import math
    v = np.array([-3.5, -1.0, -0.25, 0.0, 0.5, 1.5, 4.0], np.float32)
    p = np.array([0.1, 0.5, 1.0, 2.5, 7.0], np.float32)
    u = np.array([-0.9, -0.3, 0.0, 0.4, 0.8], np.float32)
    x, xp, xu = tf.constant(v), tf.constant(p), tf.constant(u)
    got = run(tf.erf(x), tf.erfc(x), tf.expm1(x), tf.lgamma(xp), tf.tan(xu), tf.asin(xu),
              tf.acos(xu), tf.atan(x), tf.sinh(x), tf.cosh(x), tf.atan2(x, tf.constant(v[::-1])),
              tf.rint(tf.constant(np.array([0.5, 1.5, 2.5, -0.5, -1.7], np.float32))),
              tf.softplus(x), tf.log_sigmoid(x), tf.math.softsign(x))
    v64 = v.astype(np.float64)
    want = [np.vectorize(math.erf)(v64), np.vectorize(math.erfc)(v64), np.expm1(v64),
            np.vectorize(math.lgamma)(p.astype(np.float64)), np.tan(u), np.arcsin(u),
            np.arccos(u), np.arctan(v64), np.sinh(v64), np.cosh(v64), np.arctan2(v, v[::-1]),
            np.array([0.0, 2.0, 2.0, -0.0, -2.0]), np.log1p(np.exp(v64)),
            -np.log1p(np.exp(-v64)), v64 / (1 + np.abs(v64))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)
    # digamma at points with closed forms: -gamma, 1 - gamma, -gamma - 2 ln 2.
    euler = 0.5772156649015329
    np.testing.assert_allclose(run(tf.digamma(tf.constant([1.0, 2.0, 0.5]))),
                               [-euler, 1 - euler, -euler - 2 * math.log(2)], rtol=1e-6)
    specials = tf.constant(np.array([1.0, np.nan, np.inf, -np.inf], np.float32))
    nan, inf, fin = run(tf.is_nan(specials), tf.is_inf(specials), tf.is_finite(specials))
    assert nan.tolist() == [False, True, False, False]
    assert inf.tolist() == [False, False, True, True]
    assert fin.tolist() == [True, False, False, False]
    # tf.math holds the same functions as the top level and tf.nn.
    assert tf.math.erf is tf.erf and tf.math.reduce_sum is tf.reduce_sum
    assert tf.math.softmax is tf.nn.softmax and tf.math.top_k is tf.nn.top_k


def test_cumulative_top_k_segments_logsumexp():
    x = tf.constant(X)
    got = run(tf.cumsum(x, axis=1), tf.cumsum(x, axis=1, exclusive=True),
              tf.cumsum(x, axis=0, reverse=True), tf.math.cumprod(x, axis=1),
              tf.cumprod(x, axis=1, exclusive=True, reverse=True))
    want = [np.cumsum(X, 1), np.concatenate([np.zeros((2, 1)), np.cumsum(X, 1)[:, :-1]], 1),
            np.cumsum(X[::-1], 0)[::-1], np.cumprod(X, 1),
            np.concatenate([np.cumprod(X[:, ::-1], 1)[:, :-1][:, ::-1], np.ones((2, 1))], 1)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    top = tf.nn.top_k(tf.constant([[1.0, 5.0, 3.0, 4.0], [2.0, -1.0, 0.0, 9.0]]), k=2)
    values, indices = top  # a namedtuple, as TensorFlow's
    assert top.values is values and top.indices is indices and type(top).__name__ == "TopKV2"
    vals, idx = run(values, indices)
    np.testing.assert_array_equal(vals, [[5.0, 4.0], [9.0, 2.0]])
    np.testing.assert_array_equal(idx, [[1, 3], [3, 0]])
    assert idx.dtype == np.int32
    data = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    seg, useg = run(tf.segment_sum(data, tf.constant([0, 0, 1])),
                    tf.unsorted_segment_sum(data, tf.constant([2, 0, 2]), 3))
    np.testing.assert_array_equal(seg, [[4.0, 6.0], [5.0, 6.0]])
    np.testing.assert_array_equal(useg, [[3.0, 4.0], [0.0, 0.0], [6.0, 8.0]])
    # Large values do not overflow: the maximum comes out before the exponentials.
    big = np.array([[1000.0, 1000.0, 990.0], [-5.0, 0.0, 2.0]], np.float32)
    b = tf.constant(big)
    lse, lse_keep, lse_all = run(tf.reduce_logsumexp(b, axis=1),
                                 tf.math.reduce_logsumexp(b, 1, keepdims=True),
                                 tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf])))
    m = big.max(1, keepdims=True).astype(np.float64)
    ref = (m + np.log(np.exp(big - m).sum(1, keepdims=True)))
    np.testing.assert_allclose(lse, ref[:, 0], rtol=1e-6)
    np.testing.assert_allclose(lse_keep, ref, rtol=1e-6)
    assert lse_keep.shape == (2, 1) and lse_all == -np.inf


def test_gelu_swish():
    v = np.linspace(-5, 5, 41).astype(np.float32)
    x = tf.constant(v)
    exact, approx, swish = run(tf.nn.gelu(x), tf.nn.gelu(x, approximate=True), tf.nn.swish(x))
    import math
    v64 = v.astype(np.float64)
    np.testing.assert_allclose(exact, 0.5 * v64 * (1 + np.vectorize(math.erf)(v64 / math.sqrt(2))),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        approx, 0.5 * v64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (v64 + 0.044715 * v64 ** 3))),
        rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(swish, v64 / (1 + np.exp(-v64)), rtol=1e-5, atol=1e-6)


def test_random_seeds_and_values_as_tensorflow():
    # TensorFlow 1.15's random_seed.get_seed: with a graph seed only, the op seed is the number
    # of ops the graph has when the random op is made (random_uniform makes shape, min and max
    # first); with an op seed only, the graph seed is DEFAULT_GRAPH_SEED.
    tf.set_random_seed(1)
    u = tf.random_uniform([3])
    rnd = tf.get_default_graph().get_operation_by_name("random_uniform/RandomUniform")
    assert (rnd.get_attr("seed"), rnd.get_attr("seed2")) == (1, 3)
    tf.reset_default_graph()
    n = tf.random_normal([3], seed=7)
    rnd = tf.get_default_graph().get_operation_by_name("random_normal/RandomStandardNormal")
    assert (rnd.get_attr("seed"), rnd.get_attr("seed2")) == (87654321, 7)
    assert tf.get_seed(2**31 + 4) == (87654321, 5)
    del u, n
    tf.reset_default_graph()
    # TensorFlow's documented values (tf.random.uniform's docstring): graph seed 5, op seed 10,
    # an int in [0, 3): 2, then 0 as the same op runs again and continues its stream.
    tf.set_random_seed(5)
    x = tf.random_uniform([], maxval=3, dtype=tf.int32, seed=10)
    with tf.Session() as sess:
        assert (sess.run(x), sess.run(x)) == (2, 0)
