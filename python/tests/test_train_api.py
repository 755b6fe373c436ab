"""The extension's training and cluster part, which tf.train builds on: minimize, global step,
Saver, latest_checkpoint, cluster specs, and an in-process server with a grpc:// session."""
import numpy as np
import pytest

import weft
import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def linear_model():
    x = tf.placeholder(tf.float32, [None, 1], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.Variable([[0.0]], name="w")
    b = tf.Variable([0.0], name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
    return x, y, w, b, loss


def test_minimize_gradient_descent_matches_numpy():
    x, y, w, b, loss = linear_model()
    g = tf.get_default_graph()
    gs = g._g.global_step()
    node = g._g.minimize(loss._as_output(), "GradientDescent", 0.1,
                         var_list=[w.op._node, b.op._node], global_step=gs)
    train_op = g._op_of(node)
    init = tf.global_variables_initializer()
    xs = np.array([[1.0], [2.0], [3.0]], np.float32)
    ys = 2 * xs + 1
    ww, bb = 0.0, 0.0
    with tf.Session() as sess:
        sess.run(init)
        sess.run("global_step/Assign")  # the core's global step is not in compat's collections
        for _ in range(5):
            sess.run(train_op, {x: xs, y: ys})
            err = xs[:, 0] * ww + bb - ys[:, 0]
            ww, bb = ww - 0.1 * 2 * np.mean(err * xs[:, 0]), bb - 0.1 * 2 * np.mean(err)
        got_w, got_b, step = sess.run([w, b, "global_step:0"])
    assert step == 5
    np.testing.assert_allclose(got_w[0, 0], ww, rtol=1e-5)
    np.testing.assert_allclose(got_b[0], bb, rtol=1e-5)
    with pytest.raises(ValueError) as e:
        g._g.minimize(loss._as_output(), "Nope", 0.1)
    assert str(e.value) == ("unknown optimizer 'Nope' (GradientDescent, Momentum, Adagrad, Adam "
                            "or RMSProp)")


def test_saver_roundtrip(tmp_path):
    x, y, w, b, loss = linear_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign([[3.5]]))
        saver = weft._weft.Saver(max_to_keep=2)
        path = saver.save(sess._s, str(tmp_path / "model.ckpt"), 7)
        assert path == str(tmp_path / "model.ckpt-7")
        assert weft._weft.latest_checkpoint(str(tmp_path)) == path
        sess.run(w.assign([[0.0]]))
        saver.restore(sess._s, path)
        assert sess.run(w)[0, 0] == 3.5
        with pytest.raises(tf.errors.NotFoundError):
            saver.restore(sess._s, str(tmp_path / "missing"))
    assert weft._weft.latest_checkpoint(str(tmp_path / "none")) is None


def test_cluster_spec_parse():
    spec = weft._weft.cluster_spec_parse("ps=localhost:2222;worker=localhost:2223,localhost:2224")
    assert spec == {"ps": {0: "localhost:2222"},
                    "worker": {0: "localhost:2223", 1: "localhost:2224"}}
    with pytest.raises(tf.errors.InvalidArgumentError):
        weft._weft.cluster_spec_parse("ps=nohostport")


def test_local_server_and_grpc_session():
    server = weft._weft.Server(None)
    assert server.target.startswith("grpc://")
    c = tf.constant([1.0, 2.0]) * 4
    with tf.Session(server.target) as sess:
        np.testing.assert_allclose(sess.run(c), [4.0, 8.0])
    server.stop()
