"""Small TensorFlow 1.x programs as users write them, run with only the import changed, their
printed numbers checked against numpy."""
import numpy as np
import pytest

import weft
import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_softmax_regression_with_gradients():
    rng = np.random.RandomState(1)
    xs = rng.rand(8, 4).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 8)]
    x = tf.placeholder("float", [None, 4])
    y_ = tf.placeholder("float", [None, 3])
    W = tf.Variable(tf.zeros([4, 3]))
    b = tf.Variable(tf.zeros([3]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    cross_entropy = -tf.reduce_sum(y_ * tf.log(y))
    gW, gb = tf.gradients(cross_entropy, [W, b])
    step = tf.group(W.assign_sub(0.01 * gW), b.assign_sub(0.01 * gb))
    correct = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, "float"))
    w_np, b_np = np.zeros((4, 3), np.float32), np.zeros(3, np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(20):
            sess.run(step, feed_dict={x: xs, y_: labels})
            logits = xs @ w_np + b_np
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            g = p * labels.sum(1, keepdims=True) - labels
            w_np -= 0.01 * xs.T @ g
            b_np -= 0.01 * g.sum(0)
        got_w, acc = sess.run([W, accuracy], feed_dict={x: xs, y_: labels})
    np.testing.assert_allclose(got_w, w_np, rtol=1e-4, atol=1e-6)
    p = xs @ w_np + b_np
    assert acc == pytest.approx(np.mean(p.argmax(1) == labels.argmax(1)))


def test_variable_operators_and_placeholder_with_default():
    v = tf.Variable(3.0)
    d = tf.placeholder_with_default(tf.constant(2.0), [])
    exprs = [v * 2, 2 * v, v + d, v - 1, 1 - v, -v, v / 2, v ** 2, v > 2]
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(exprs)
        assert sess.run(v + d, {d: 10.0}) == 13.0
    assert got == [6.0, 6.0, 5.0, 2.0, -2.0, -3.0, 1.5, 9.0, True]


def test_variable_scopes_nested_and_default_names():
    with tf.variable_scope("outer"):
        with tf.variable_scope("inner"):
            v = tf.get_variable("v", [1])
            c = tf.constant(1.0, name="c")
        with tf.variable_scope(None, default_name="blk"):
            a = tf.get_variable("a", [1])
        with tf.variable_scope(None, default_name="blk"):
            b = tf.get_variable("a", [1])
    with tf.variable_scope("outer", reuse=True):
        with tf.variable_scope("inner"):
            assert tf.get_variable("v") is v
            assert tf.get_variable_scope().reuse is True
    assert v.name == "outer/inner/v:0" and c.name == "outer/inner/c:0"
    assert a.name == "outer/blk/a:0" and b.name == "outer/blk_1/a:0"
    assert [x.name for x in tf.global_variables("outer/blk")] == ["outer/blk/a:0",
                                                                   "outer/blk_1/a:0"]
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("outer", reuse=True):
            tf.get_variable("inner/v", [5])
    assert str(e.value) == ("Trying to share variable outer/inner/v, but specified shape (5,) "
                            "and found shape (1,).")


def test_get_variable_initializers():
    tf.set_random_seed(7)
    k = tf.get_variable("k", [3, 2], initializer=tf.constant_initializer([1, 2, 3, 4, 5, 6]))
    i = tf.get_variable("i", [2], dtype=tf.int32)
    n = tf.get_variable("n", [500], initializer=tf.random_normal_initializer(1.0, 0.1, seed=3))
    t = tf.get_variable("t", [500], initializer=tf.truncated_normal_initializer(0.0, 1.0))
    u = tf.get_variable("u", [500], initializer=tf.random_uniform_initializer(-2, 2))
    o = tf.get_variable("o", [2], initializer=tf.ones_initializer())
    c = tf.get_variable("c", initializer=np.array([1.5, 2.5], np.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kv, iv, nv, tv, uv, ov, cv = sess.run([k, i, n, t, u, o, c])
    np.testing.assert_array_equal(kv, [[1, 2], [3, 4], [5, 6]])
    assert iv.dtype == np.int32 and list(iv) == [0, 0]
    assert abs(nv.mean() - 1.0) < 0.03 and abs(nv.std() - 0.1) < 0.03
    assert np.all(np.abs(tv) <= 2.0) and np.all(np.abs(uv) <= 2.0)
    assert list(ov) == [1.0, 1.0] and list(cv) == [1.5, 2.5]


def test_config_on_a_grpc_session_and_log_device_placement(capfd):
    server = weft._weft.Server(None)
    config = tf.ConfigProto(log_device_placement=True, inter_op_parallelism_threads=1,
                            intra_op_parallelism_threads=1, allow_soft_placement=True)
    x = tf.placeholder(tf.float32, [2], name="px")
    y = tf.multiply(x, 3.0, name="tripled")
    with tf.Session(server.target, config=config) as sess:
        np.testing.assert_allclose(sess.run(y, {x: [1.0, 2.0]}), [3.0, 6.0])
    with tf.Session(config=config) as sess:
        sess.run(y, {x: [1.0, 2.0]})
    err = capfd.readouterr().err
    assert "tripled: (Mul): /job:localhost/replica:0/task:0/device:CPU:0" in err
    server.stop()


def test_feed_errors():
    x = tf.placeholder(tf.float32, [2], name="f")
    i = tf.placeholder(tf.int32, [1], name="i")
    with tf.Session() as sess:
        with pytest.raises(ValueError) as e:
            sess.run(x, {x: ["a", "b"]})
        assert str(e.value) == "could not convert string to float32: feeding ['a', 'b'] into f:0"
        with pytest.raises(ValueError) as e:
            sess.run(i, {i: [1.5]})
        assert str(e.value) == "Cannot feed a float value into integer Tensor i:0 (int32)"
        with pytest.raises(TypeError):
            sess.run(x, {x: tf.constant([1.0, 2.0])})
        with pytest.raises(ValueError) as e:
            sess.run(x, {"nope:0": [1.0, 2.0]})
        assert str(e.value).startswith("Cannot interpret feed_dict key as Tensor: The name "
                                       "'nope:0' refers to a Tensor which does not exist.")


def test_operation_run_and_tensor_eval_with_feeds():
    x = tf.placeholder(tf.float32, [])
    v = tf.Variable(0.0)
    upd = v.assign(x * 2)
    with tf.Session():
        v.initializer.run()
        upd.op.run(feed_dict={x: 4.0})
        assert v.eval() == 8.0
        assert (x + 1).eval(feed_dict={x: 1.0}) == 2.0
