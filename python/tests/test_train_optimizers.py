"""tf.train's optimizers and global step: each update rule against a numpy reference over
several steps, slot names as TensorFlow names them, and the error paths."""
import numpy as np
import pytest

import weft.compat.v1 as tf

W0 = np.array([1.0, 2.0])
TARGET = np.array([0.5, -1.0])
C = np.array([1.0, 3.0])


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def grad(w):
    return 2.0 * C * (w - TARGET)


def ref_gd(steps, lr=0.1):
    w = W0.copy()
    for _ in range(steps):
        w = w - lr * grad(w)
    return w


def ref_momentum(steps, lr=0.05, mom=0.9, nesterov=False):
    w, acc = W0.copy(), np.zeros(2)
    for _ in range(steps):
        g = grad(w)
        acc = acc * mom + g
        w = w - lr * (g + mom * acc if nesterov else acc)
    return w


def ref_adagrad(steps, lr=0.3, init=0.1):
    w, acc = W0.copy(), np.full(2, init)
    for _ in range(steps):
        g = grad(w)
        acc = acc + g * g
        w = w - lr * g / np.sqrt(acc)
    return w


def ref_adam(steps, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    w, m, v, b1p, b2p = W0.copy(), np.zeros(2), np.zeros(2), b1, b2
    for _ in range(steps):
        g = grad(w)
        lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr_t * m / (np.sqrt(v) + eps)
        b1p, b2p = b1p * b1, b2p * b2
    return w


def ref_rmsprop(steps, lr=0.01, decay=0.9, mom=0.5, eps=1e-10):
    w, ms, mo = W0.copy(), np.ones(2), np.zeros(2)
    for _ in range(steps):
        g = grad(w)
        ms = decay * ms + (1 - decay) * g * g
        mo = mom * mo + lr * g / np.sqrt(ms + eps)
        w = w - mo
    return w


CASES = [
    ("gd", lambda: tf.train.GradientDescentOptimizer(0.1), ref_gd, []),
    ("momentum", lambda: tf.train.MomentumOptimizer(0.05, 0.9), ref_momentum, ["w/Momentum"]),
    ("nesterov", lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
     lambda n: ref_momentum(n, nesterov=True), ["w/Momentum"]),
    ("adagrad", lambda: tf.train.AdagradOptimizer(0.3), ref_adagrad, ["w/Adagrad"]),
    ("adam", lambda: tf.train.AdamOptimizer(0.1), ref_adam,
     ["beta1_power", "beta2_power", "w/Adam", "w/Adam_1"]),
    ("rmsprop", lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5), ref_rmsprop,
     ["w/RMSProp", "w/RMSProp_1"]),
]


@pytest.mark.parametrize("name,make,ref,slots", CASES, ids=[c[0] for c in CASES])
def test_optimizer_matches_numpy(name, make, ref, slots):
    w = tf.Variable(W0.astype(np.float32), name="w")
    loss = tf.reduce_sum(C.astype(np.float32) * tf.square(w - TARGET.astype(np.float32)))
    gs = tf.train.get_or_create_global_step()
    opt = make()
    train = opt.minimize(loss, global_step=gs)
    assert isinstance(train, tf.Operation)
    assert sorted(v.op.name for v in opt.variables()) == slots
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(5):
            sess.run(train)
        got, step = sess.run([w, gs])
    np.testing.assert_allclose(got, ref(5), rtol=1e-5, atol=1e-6)
    assert step == 5


def test_compute_and_apply_gradients_var_list():
    a = tf.Variable(3.0, name="a")
    b = tf.Variable(4.0, name="b")
    loss = a * a + 10.0 * b
    opt = tf.train.GradientDescentOptimizer(0.5)
    gv = opt.compute_gradients(loss, var_list=[a])
    assert [v for _, v in gv] == [a]
    train = opt.apply_gradients(gv, name="step")
    assert train.name == "step"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(gv[0][0]), 6.0)
        sess.run(train)
        assert sess.run([a, b]) == [0.0, 4.0]  # 3 - 0.5 * 6; b untouched


def test_global_step_helpers():
    assert tf.train.get_global_step() is None
    gs = tf.train.get_or_create_global_step()
    assert gs.name == "global_step:0" and gs.dtype == tf.int64_ref
    assert tf.train.get_or_create_global_step() is gs
    assert tf.train.get_global_step() is gs
    with pytest.raises(ValueError) as e:
        tf.train.create_global_step()
    assert str(e.value) == '"global_step" already exists.'
    with tf.Session() as sess:
        sess.run(gs.initializer)
        assert tf.train.global_step(sess, gs) == 0


def test_global_step_found_by_name_int32():
    """TF 1.x programs make `tf.Variable(0, name="global_step", trainable=False)` (int32)."""
    gs = tf.Variable(0, name="global_step", trainable=False)
    found = tf.train.get_global_step()
    assert found.name == "global_step:0" and found.dtype.base_dtype == tf.int32
    x = tf.Variable(1.0, name="x")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(x * x, global_step=gs)
    hook = tf.train.StopAtStepHook(last_step=3)
    steps = 0
    with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        while not sess.should_stop():
            sess.run(train)
            steps += 1
        assert sess.run(gs) == 3
    assert steps == 3


def test_global_step_wrong_type():
    tf.Variable(0.0, name="global_step")
    with pytest.raises(TypeError) as e:
        tf.train.get_global_step()
    assert str(e.value) == ('Existing "global_step" does not have integer type: '
                            "<dtype: 'float32_ref'>")


def test_optimizer_errors():
    x = tf.Variable(1.0, name="x")
    c = tf.constant(2.0)
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError) as e:
        opt.minimize(c * 2.0, var_list=[])
    assert str(e.value) == "No variables to optimize."
    y = tf.Variable(1.0, name="y")
    with pytest.raises(ValueError) as e:
        opt.minimize(y * 2.0, var_list=[x])
    assert str(e.value).startswith("No gradients provided for any variable, check your graph "
                                   "for ops that do not support gradients, between variables "
                                   "[\"<tf.Variable 'x:0' shape=() dtype=float32_ref>\"] and "
                                   "loss Tensor(\"mul")
    with pytest.raises(ValueError) as e:
        opt.apply_gradients([(None, x)])
    assert str(e.value) == ("No gradients provided for any variable: "
                            "[\"<tf.Variable 'x:0' shape=() dtype=float32_ref>\"].")
    with pytest.raises(ValueError) as e:
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    assert str(e.value) == "initial_accumulator_value must be positive: 0.0"


def test_exponential_decay():
    gs = tf.train.get_or_create_global_step()
    stair = tf.train.exponential_decay(0.1, gs, 10, 0.5, staircase=True)
    smooth = tf.train.exponential_decay(0.1, gs, 10, 0.5, name="lr")
    assert (stair.name, smooth.name) == ("ExponentialDecay:0", "lr:0")
    with tf.Session() as sess:
        sess.run(gs.initializer)
        for step in (0, 9, 15, 30):
            sess.run(gs.assign(step))
            got = sess.run([stair, smooth])
            np.testing.assert_allclose(got, [0.1 * 0.5 ** (step // 10), 0.1 * 0.5 ** (step / 10)],
                                       rtol=1e-6)
    with pytest.raises(ValueError) as e:
        tf.train.exponential_decay(0.1, None, 10, 0.5)
    assert str(e.value) == "global_step is required for exponential_decay."
