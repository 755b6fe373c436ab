"""Held-out TensorFlow 1.x programs from the wild (python/tests/programs/, each with its source
and license), run in a subprocess with only the import line changed and synthetic data, their
printed numbers checked against numpy replays of the same training; then the tf.layers,
tf.metrics, tf.logging and tf.nn names they and their kind use, checked in-process."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from _procs import Children, free_ports

import weft.compat.v1 as tf

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
sys.path.insert(0, PROGRAMS)
import synthetic_mnist  # noqa: E402 -- the programs' data, replayed here

NUM = r"([-+0-9.eE]+)"


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PROGRAMS, env.get("PYTHONPATH", "")])
    return env


def run_program(name, *args, seed=None, cwd=None):
    """Runs programs/NAME as `python NAME args` (numpy's global seed set first when seed is
    given, for programs that draw their initial weights from numpy.random); returns
    (stdout, stderr)."""
    path = os.path.join(PROGRAMS, name)
    if seed is None:
        cmd = [sys.executable, path] + list(args)
    else:
        boot = ("import numpy, runpy, sys; numpy.random.seed(%d); sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')" % seed)
        cmd = [sys.executable, "-c", boot, path] + list(args)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300,
                           cwd=cwd)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("%s did not finish within 300 s:\n%s\n%s"
                             % (name, e.stdout, e.stderr)) from None
    assert p.returncode == 0, "%s failed (%d):\n%s\n%s" % (name, p.returncode, p.stdout,
                                                             p.stderr)
    return p.stdout, p.stderr


def softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_linear_regression_aymericdamien():
    out, _ = run_program("linear_regression.py", seed=3)
    rs = np.random.RandomState(3)
    w, b = np.float32(rs.randn()), np.float32(rs.randn())
    tx = np.array([3.3, 4.4, 5.5, 6.71, 6.93, 4.168, 9.779, 6.182, 7.59, 2.167, 7.042, 10.791,
                   5.313, 7.997, 5.654, 9.27, 3.1], np.float32)
    ty = np.array([1.7, 2.76, 2.09, 3.19, 1.694, 1.573, 3.366, 2.596, 2.53, 1.221, 2.827,
                   3.465, 1.65, 2.904, 2.42, 2.94, 1.3], np.float32)
    n = np.float32(len(tx))
    expected = []
    for epoch in range(100):
        for x, y in zip(tx, ty):
            g = (x * w + b - y) / n  # d/dpred of (pred - y)^2 / (2n)
            w, b = w - np.float32(0.01) * g * x, b - np.float32(0.01) * g
        if (epoch + 1) % 20 == 0:
            expected.append((epoch + 1, np.sum((tx * w + b - ty) ** 2) / (2 * n), w, b))
    got = re.findall(r"Epoch: (\d{4}) cost= (\d+\.\d{9}) W= %s b= %s" % (NUM, NUM), out)
    assert [int(g[0]) for g in got] == [20, 40, 60, 80, 100]
    for (epoch, cost, w_e, b_e), g in zip(expected, got):
        np.testing.assert_allclose([float(v) for v in g[1:]], [cost, w_e, b_e], rtol=2e-4)
    m = re.search(r"Training cost= %s W= %s b= %s" % (NUM, NUM, NUM), out)
    np.testing.assert_allclose([float(v) for v in m.groups()], expected[-1][1:], rtol=2e-4)
    assert "Optimization Finished!" in out


def replay_softmax_regression(batches, lr, steps, mean_loss=True):
    images, labels = synthetic_mnist.arrays()
    xs, ys = images[:synthetic_mnist.N_TRAIN], labels[:synthetic_mnist.N_TRAIN]
    w, b = np.zeros((784, 10), np.float32), np.zeros(10, np.float32)
    losses, pos = [], 0
    for step in range(steps):
        idx = (pos + np.arange(batches)) % len(xs)
        pos = (pos + batches) % len(xs)
        x, y = xs[idx], ys[idx]
        z = x @ w + b
        p = softmax(z)
        log_p = z - z.max(1, keepdims=True)
        log_p -= np.log(np.exp(log_p).sum(1, keepdims=True))
        losses.append(float(np.mean(-np.sum(y * log_p, 1))))
        g = (p - y) / len(x)
        rate = lr(step) if callable(lr) else lr
        w, b = w - rate * x.T @ g, b - rate * g.sum(0)
    tx, ty = images[synthetic_mnist.N_TRAIN:], labels[synthetic_mnist.N_TRAIN:]
    acc = float(np.mean(np.argmax(tx @ w + b, 1) == np.argmax(ty, 1)))
    return losses, acc


def test_logistic_regression_aymericdamien():
    out, _ = run_program("logistic_regression.py")
    losses, acc = replay_softmax_regression(100, 0.01, 25)
    got = re.findall(r"Epoch: (\d{4}) cost= (\d+\.\d{9})", out)
    assert [int(g[0]) for g in got] == [1, 2, 3, 4, 5]
    expected = [np.sum(np.array(losses[e * 5:(e + 1) * 5]) / 5) for e in range(5)]
    np.testing.assert_allclose([float(g[1]) for g in got], expected, rtol=1e-5)
    assert float(re.search(r"Accuracy: %s" % NUM, out).group(1)) == pytest.approx(acc,
                                                                                abs=0.006)


def test_mnist_softmax_tensorflow_tutorial():
    out, _ = run_program("mnist_softmax.py", "--data_dir=/nonexistent")
    _, acc = replay_softmax_regression(100, 0.5, 50)
    assert float(out.strip()) == pytest.approx(acc, abs=0.006)
    assert 0.2 < acc < 1  # above chance (0.1): not a vacuous comparison


def test_get_started_prints_what_tensorflow_printed():
    out, _ = run_program("get_started_linear.py")
    m = re.search(r"W: \[\s*%s\] b: \[\s*%s\] loss: %s" % (NUM, NUM, NUM), out)
    w_got, b_got, loss_got = (float(v) for v in m.groups())
    x = np.array([1, 2, 3, 4], np.float32)
    y = np.array([0, -1, -2, -3], np.float32)
    w, b = np.float32(0.3), np.float32(-0.3)
    for _ in range(1000):
        r = w * x + b - y
        w, b = w - np.float32(0.01) * np.sum(2 * r * x), b - np.float32(0.01) * np.sum(2 * r)
    np.testing.assert_allclose([w_got, b_got], [w, b], rtol=1e-5)
    # the guide's printed result: W: [-0.9999969] b: [ 0.99999082] loss: 5.69997e-11
    np.testing.assert_allclose([w_got, b_got], [-0.9999969, 0.99999082], atol=2e-6)
    assert 0 <= loss_got < 1e-9


def test_supervisor_guide_managed_session(tmp_path):
    logdir = tmp_path / "train"
    out, err = run_program("supervisor_guide.py", str(logdir))
    lr = lambda step: 0.5 * 0.5 ** (step // 20)  # noqa: E731 -- exponential_decay, staircase
    losses, acc = replay_softmax_regression(100, lr, 60)
    logged = re.findall(r"INFO:tensorflow:step (\d+): loss = %s" % NUM, err)
    assert [int(s) for s, _ in logged] == [0, 10, 20, 30, 40, 50]
    np.testing.assert_allclose([float(v) for _, v in logged], losses[::10], rtol=1e-5)
    assert losses[0] == pytest.approx(np.log(10), rel=1e-6)  # zero weights: uniform softmax
    m = re.search(r"final step (\d+) loss %s accuracy %s" % (NUM, NUM), out)
    assert int(m.group(1)) == 60
    assert float(m.group(2)) == pytest.approx(losses[-1], rel=1e-5)
    assert float(m.group(3)) == pytest.approx(acc, abs=0.006)
    # the chief's Supervisor wrote TensorBoard's events (its first checkpoint would come after
    # save_model_secs: docs/python.md, "Differences")
    assert [f.name.startswith("events.out.tfevents.") for f in logdir.iterdir()] == [True]


@pytest.fixture
def children():
    c = Children()
    yield c
    c.kill_all()


def test_distributed_r012_trainer_one_ps_two_workers(children, tmp_path):
    """Between-graph replication: 1 ps + 2 workers in separate processes, asynchronous
    Adagrad; each worker's final weights against numpy's least-squares solution."""
    ps, w0, w1 = free_ports(3)
    prog = os.path.join(PROGRAMS, "dist_trainer_r012.py")
    flags = ["--ps_hosts=localhost:%d" % ps,
             "--worker_hosts=localhost:%d,localhost:%d" % (w0, w1),
             "--logdir=%s" % (tmp_path / "train_logs")]
    env = _env()
    p_ps = children.start([prog] + flags + ["--job_name=ps", "--task_index=0"], env=env)
    p_w0 = children.start([prog] + flags + ["--job_name=worker", "--task_index=0"], env=env)
    p_w1 = children.start([prog] + flags + ["--job_name=worker", "--task_index=1"], env=env)
    # the program's dataset(), rebuilt here (importing it would define its flags twice)
    rng = np.random.RandomState(7)
    x = rng.rand(64, 3).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25
         + 0.01 * rng.randn(64, 1).astype(np.float32))
    a = np.hstack([x.astype(np.float64), np.ones((len(x), 1))])
    sol, *_ = np.linalg.lstsq(a, y.astype(np.float64), rcond=None)
    min_mse = float(np.mean((a @ sol - y) ** 2))
    for i, p in ((0, p_w0), (1, p_w1)):
        rc, out, err = children.finish(p)
        assert rc == 0, "worker %d failed:\n%s\n%s" % (i, out, err)
        m = re.search(r"worker %d: loss %s w %s %s %s b %s" % ((i,) + (NUM,) * 5), out)
        assert m, out
        loss, *wb = (float(v) for v in m.groups())
        np.testing.assert_allclose(wb, sol.ravel(), atol=0.02)
        # Asynchronous: a worker's gradient computed at an early w can land late (two first
        # steps at once, on a loaded machine), and the 300 global steps may end before the
        # other worker has undone it; the loss then stays within what the weights' tolerance
        # above allows (|dw| and |db| <= 0.02 with x in [0, 1]: at most (4 * 0.02)^2 more).
        assert min_mse <= loss * (1 + 1e-4) + 1e-7 and loss < min_mse + (4 * 0.02) ** 2
    assert p_ps.poll() is None  # the ps joins until it is killed


@pytest.fixture
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_layers_dense_variables_and_values(fresh_graph):
    """tf.layers.dense as TensorFlow builds it: dense/kernel (glorot_uniform), dense/bias
    (zeros), dense_1/... for the next; values against numpy with the kernels read back."""
    x = tf.placeholder(tf.float32, [None, 6])
    h = tf.layers.dense(x, 4, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 3, name=None)
    names = [(v.name, v.shape.as_list()) for v in tf.trainable_variables()]
    assert names == [("dense/kernel:0", [6, 4]), ("dense/bias:0", [4]),
                     ("dense_1/kernel:0", [4, 3]), ("dense_1/bias:0", [3])]
    xv = np.random.RandomState(0).randn(5, 6).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k0, b0, k1, b1 = sess.run(tf.trainable_variables())
        got = sess.run(logits, {x: xv})
    assert np.abs(k0).max() <= np.sqrt(6 / (6 + 4)) and np.abs(k0).max() > 0
    assert not b0.any() and not b1.any()
    np.testing.assert_allclose(got, np.maximum(xv @ k0 + b0, 0) @ k1 + b1, rtol=1e-5,
                               atol=1e-6)


def test_layers_conv_pool_flatten_dropout(fresh_graph):
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    c = tf.layers.conv2d(x, 3, 3, padding="same", activation=tf.nn.relu)
    p = tf.layers.max_pooling2d(c, pool_size=2, strides=2)
    f = tf.layers.flatten(p)
    training = tf.placeholder_with_default(False, [])
    d = tf.layers.dropout(f, rate=0.5, training=training)
    assert f.shape.as_list() == [None, 27]
    assert [v.name for v in tf.global_variables()] == ["conv2d/kernel:0", "conv2d/bias:0"]
    xv = np.random.RandomState(1).randn(2, 6, 6, 2).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        k = sess.run(tf.global_variables()[0])
        got, kept = sess.run([f, d], {x: xv})
        dropped = sess.run(d, {x: xv, training: True})
    pad = np.pad(xv, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((2, 6, 6, 3), np.float32)
    for i in range(6):
        for j in range(6):
            conv[:, i, j, :] = np.einsum("nhwc,hwcf->nf", pad[:, i:i + 3, j:j + 3, :], k)
    conv = np.maximum(conv, 0)
    pooled = conv.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4))
    np.testing.assert_allclose(got, pooled.reshape(2, 27), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(kept, got)  # not training: the identity
    assert set(np.unique(np.round(dropped / np.where(got == 0, 1, got), 5))) <= {0.0, 2.0}


def test_metrics_accuracy_streams_over_local_variables(fresh_graph):
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.int64, [None])
    acc, update = tf.metrics.accuracy(labels=labels, predictions=preds)
    assert [v.name for v in tf.local_variables()] == ["accuracy/total:0", "accuracy/count:0"]
    assert tf.global_variables() == []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(acc) == 0.0
        assert sess.run(update, {labels: [1, 2, 3, 4], preds: [1, 2, 0, 0]}) == 0.5
        assert sess.run(update, {labels: [5, 6], preds: [5, 6]}) == pytest.approx(4 / 6)
        assert sess.run(acc) == pytest.approx(4 / 6)


def test_logging_levels(fresh_graph, capfd):
    tf.logging.set_verbosity(tf.logging.INFO)
    try:
        assert tf.logging.get_verbosity() == tf.logging.INFO
        tf.logging.info("loss %d", 3)
        tf.logging.debug("hidden")
        tf.logging.set_verbosity(tf.logging.WARN)
        tf.logging.info("hidden too")
        tf.logging.warning("careful")
    finally:
        tf.logging.set_verbosity(tf.logging.WARN)
    err = capfd.readouterr().err
    assert "INFO:tensorflow:loss 3" in err and "WARNING:tensorflow:careful" in err
    assert "hidden" not in err


def test_reduction_gradients_over_unknown_rank(fresh_graph):
    """reduce_sum/reduce_mean of a placeholder without a shape (linear_regression.py's cost):
    the gradient's kept shape is computed at run time, for scalars and matrices alike."""
    x = tf.placeholder("float")
    w = tf.Variable(2.0)
    total = tf.reduce_sum(tf.pow(x * w, 2))
    part = tf.reduce_mean(x * w, axis=-1)
    g_total = tf.gradients(total, [w, x])
    g_part = tf.gradients(part, x)[0]
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(g_total, {x: 3.0}) == [pytest.approx(2 * 3 * 3 * 2), 2 * 6 * 2]
        gw, gx = sess.run(g_total, {x: m})
        assert gw == pytest.approx(np.sum(2 * m * 2 * m))
        np.testing.assert_allclose(gx, 2 * m * 2 * 2)
        np.testing.assert_allclose(sess.run(g_part, {x: m}), np.full((2, 3), 2 / 3, np.float32))
