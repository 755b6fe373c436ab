"""Resource variables in weft.compat.v1 (TensorFlow's ResourceVariable in graph mode): how they
are created (use_resource=, variable_scope, enable_resource_variables), read, updated and
scattered; a linear regression trained by each optimizer against numpy; gradients of a gather;
Saver round trips; a 1 ps + 1 worker cluster under MonitoredTrainingSession; the errors."""
import os

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import _weft_checkpoints
from _procs import Children, free_ports


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.disable_resource_variables()


def op_types():
    return [op.type for op in tf.get_default_graph().get_operations()]


def test_creation_paths_and_graph():
    a = tf.Variable([1.0, 2.0], name="a", use_resource=True)
    r = tf.Variable(1.0, name="r")
    assert isinstance(a, tf.ResourceVariable) and isinstance(a, tf.Variable)
    assert not isinstance(r, tf.ResourceVariable)
    assert a.name == "a:0" and a.op.type == "VarHandleOp" and a.dtype == tf.float32
    assert a.handle.dtype == tf.resource and a.shape.as_list() == [2]
    assert a.op.get_attr("shared_name") == b"a"
    assert a.initializer.name == "a/Assign/AssignVariableOp"
    assert a.initializer.type == "AssignVariableOp"
    assert a.value().op.type == "ReadVariableOp"
    with tf.variable_scope("outer", use_resource=True):
        b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
        with tf.variable_scope("inner"):  # inherited
            c = tf.get_variable("c", [], initializer=tf.ones_initializer())
            d = tf.get_variable("d", [], use_resource=False)
            e = tf.Variable(3.0, name="e")  # tf.Variable follows the scope too
    assert [type(v).__name__ for v in (b, c, d, e)] == [
        "ResourceVariable", "ResourceVariable", "Variable", "ResourceVariable"]
    assert b.name == "outer/b:0" and c.name == "outer/inner/c:0" and e.name == "outer/inner/e:0"
    tf.enable_resource_variables()
    assert tf.resource_variables_enabled()
    f = tf.get_variable("f", [1])
    assert isinstance(f, tf.ResourceVariable)
    tf.disable_resource_variables()
    assert not isinstance(tf.get_variable("g", [1]), tf.ResourceVariable)
    # collections as TensorFlow fills them
    assert tf.global_variables()[:1] == [a] and a in tf.trainable_variables()
    loc = tf.get_local_variable("loc", [], use_resource=True)
    assert isinstance(loc, tf.ResourceVariable) and tf.local_variables() == [loc]
    assert loc not in tf.trainable_variables() and loc not in tf.global_variables()
    with tf.variable_scope("outer", reuse=True):
        assert tf.get_variable("b") is b


def test_reads_updates_scatters_and_operators():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="v", use_resource=True)
    w = tf.Variable([1.0, 2.0], use_resource=True)
    assign = v.assign([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    add = v.assign_add(tf.ones([3, 2]))
    sub = v.assign_sub([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], read_value=False)
    rows = v.sparse_read([2, 0])
    scat = v.scatter_add(tf.IndexedSlices([[10.0, 20.0], [1.0, 1.0]], [1, 1]))
    upd = tf.scatter_update(v, [0], [[7.0, 8.0]])
    smul = v.scatter_mul(tf.IndexedSlices([[2.0, 3.0]], [2]))
    expr = (w * 2.0 + 1.0, -w, w * w, 10.0 - w, w[1])
    with tf.control_dependencies([w.assign([5.0, 6.0], read_value=False)]):
        after = w.read_value()
    with tf.Session() as sess:
        assert sess.run(v.is_initialized()) == False  # noqa: E712 -- a numpy bool
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.is_variable_initialized(v)) == True  # noqa: E712
        np.testing.assert_array_equal(sess.run(assign), [[0, 1], [2, 3], [4, 5]])
        np.testing.assert_array_equal(sess.run(add), [[1, 2], [3, 4], [5, 6]])
        assert sess.run(sub) is None
        np.testing.assert_array_equal(sess.run(v), [[0, 1], [2, 3], [4, 5]])
        np.testing.assert_array_equal(sess.run(rows), [[4, 5], [0, 1]])
        np.testing.assert_array_equal(sess.run(scat), [[0, 1], [13, 24], [4, 5]])
        np.testing.assert_array_equal(sess.run(upd), [[7, 8], [13, 24], [4, 5]])
        np.testing.assert_array_equal(sess.run(smul), [[7, 8], [13, 24], [8, 15]])
        np.testing.assert_array_equal(v.eval(), [[7, 8], [13, 24], [8, 15]])
        got = sess.run(expr)
        for x, want in zip(got, ([3.0, 5.0], [-1.0, -2.0], [1.0, 4.0], [9.0, 8.0], 2.0)):
            np.testing.assert_array_equal(x, want)
        np.testing.assert_array_equal(sess.run(after), [5.0, 6.0])  # the read follows
        v.load(np.zeros((3, 2), np.float32))
        np.testing.assert_array_equal(sess.run(v), np.zeros((3, 2)))


# --- a linear regression trained by each optimizer, against a numpy replay -------------------

X = np.array([[1.0, 0.5, -1.0], [0.0, 1.0, 2.0], [2.0, -1.0, 0.5], [1.5, 1.5, 1.0],
              [-1.0, 2.0, 0.0], [0.5, 0.0, -0.5]])
Y = X @ np.array([[0.7], [-1.2], [0.4]]) + 0.3
W0 = np.array([[0.1], [0.2], [-0.1]])
B0 = np.array([0.05])
STEPS = 12


def np_grads(w, b):
    r = X @ w + b - Y
    return [2.0 / len(X) * X.T @ r, np.array([2.0 / len(X) * r.sum()])]


def np_train(rule, hyper):
    params = [W0.copy(), B0.copy()]
    state = [dict() for _ in params]
    shared = {"b1p": hyper.get("beta1", 0.0), "b2p": hyper.get("beta2", 0.0)}
    for _ in range(STEPS):
        for p, g, s in zip(params, np_grads(*params), state):
            s["var"] = p.copy()
            p -= rule(g, s, shared, **hyper)
        shared["b1p"] *= hyper.get("beta1", 0.0)
        shared["b2p"] *= hyper.get("beta2", 0.0)
    return params


def step_gd(g, s, shared, lr):
    return lr * g


def step_momentum(g, s, shared, lr, momentum):
    s["acc"] = s.get("acc", 0.0) * momentum + g
    return lr * s["acc"]


def step_adagrad(g, s, shared, lr, init):
    s["acc"] = s.get("acc", init) + g * g
    return lr * g / np.sqrt(s["acc"])


def step_adam(g, s, shared, lr, beta1, beta2, eps):
    s["m"] = beta1 * s.get("m", 0.0) + (1 - beta1) * g
    s["v"] = beta2 * s.get("v", 0.0) + (1 - beta2) * g * g
    lr_t = lr * np.sqrt(1 - shared["b2p"]) / (1 - shared["b1p"])
    return lr_t * s["m"] / (np.sqrt(s["v"]) + eps)


def step_rmsprop(g, s, shared, lr, decay, momentum, eps):
    s["ms"] = decay * s.get("ms", 1.0) + (1 - decay) * g * g
    s["mom"] = momentum * s.get("mom", 0.0) + lr * g / np.sqrt(s["ms"] + eps)
    return s["mom"]


def step_centered_rmsprop(g, s, shared, lr, decay, momentum, eps):
    s["mg"] = decay * s.get("mg", 0.0) + (1 - decay) * g
    s["ms"] = decay * s.get("ms", 1.0) + (1 - decay) * g * g
    s["mom"] = momentum * s.get("mom", 0.0) + lr * g / np.sqrt(s["ms"] - s["mg"] ** 2 + eps)
    return s["mom"]


def step_ftrl(g, s, shared, lr, l1, l2, power, shrink=0.0):
    """training_ops.cc's ApplyFtrl(V2): returns old var - new var."""
    var = s["var"]
    accum = s.get("accum", 0.1)
    new_accum = accum + g * g
    g_shrunk = g + 2.0 * shrink * var
    s["linear"] = (s.get("linear", 0.0) + g_shrunk
                   - (new_accum ** -power - accum ** -power) / lr * var)
    s["accum"] = new_accum
    lin = s["linear"]
    new = np.where(np.abs(lin) > l1,
                   (l1 * np.sign(lin) - lin) / (new_accum ** -power / lr + 2.0 * l2), 0.0)
    return var - new


def make_ftrl(h):
    return tf.train.FtrlOptimizer(h["lr"], h["power"], l1_regularization_strength=h["l1"],
                                  l2_regularization_strength=h["l2"],
                                  l2_shrinkage_regularization_strength=h.get("shrink", 0.0))


OPTIMIZERS = [
    ("gd", lambda h: tf.train.GradientDescentOptimizer(h["lr"]), step_gd, {"lr": 0.1},
     "ResourceApplyGradientDescent", []),
    ("momentum", lambda h: tf.train.MomentumOptimizer(h["lr"], h["momentum"]), step_momentum,
     {"lr": 0.05, "momentum": 0.9}, "ResourceApplyMomentum", ["w/Momentum", "b/Momentum"]),
    ("adagrad", lambda h: tf.train.AdagradOptimizer(h["lr"], h["init"]), step_adagrad,
     {"lr": 0.3, "init": 0.1}, "ResourceApplyAdagrad", ["w/Adagrad", "b/Adagrad"]),
    ("adam", lambda h: tf.train.AdamOptimizer(h["lr"], h["beta1"], h["beta2"], h["eps"]),
     step_adam, {"lr": 0.1, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}, "ResourceApplyAdam",
     ["beta1_power", "beta2_power", "w/Adam", "w/Adam_1", "b/Adam", "b/Adam_1"]),
    ("rmsprop", lambda h: tf.train.RMSPropOptimizer(h["lr"], h["decay"], h["momentum"],
                                                    h["eps"]),
     step_rmsprop, {"lr": 0.02, "decay": 0.9, "momentum": 0.5, "eps": 1e-10},
     "ResourceApplyRMSProp", ["w/RMSProp", "w/RMSProp_1", "b/RMSProp", "b/RMSProp_1"]),
    ("centered_rmsprop", lambda h: tf.train.RMSPropOptimizer(
        h["lr"], h["decay"], h["momentum"], h["eps"], centered=True),
     step_centered_rmsprop, {"lr": 0.02, "decay": 0.9, "momentum": 0.5, "eps": 1e-10},
     "ResourceApplyCenteredRMSProp", ["w/RMSProp", "w/RMSProp_1", "w/RMSProp_2", "b/RMSProp",
                                      "b/RMSProp_1", "b/RMSProp_2"]),
    ("ftrl", make_ftrl, step_ftrl, {"lr": 0.5, "l1": 0.01, "l2": 0.1, "power": -0.5},
     "ResourceApplyFtrl", ["w/Ftrl", "w/Ftrl_1", "b/Ftrl", "b/Ftrl_1"]),
    ("ftrl_v2", make_ftrl, step_ftrl,
     {"lr": 0.5, "l1": 0.01, "l2": 0.1, "power": -0.6, "shrink": 0.05}, "ResourceApplyFtrlV2",
     ["w/Ftrl", "w/Ftrl_1", "b/Ftrl", "b/Ftrl_1"]),
]


def linear_model(use_resource=True):
    x = tf.constant(X, tf.float32)
    y = tf.constant(Y, tf.float32)
    w = tf.get_variable("w", initializer=tf.constant(W0, tf.float32), use_resource=use_resource)
    b = tf.get_variable("b", initializer=tf.constant(B0, tf.float32), use_resource=use_resource)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    return w, b, loss


@pytest.mark.parametrize("name,make,rule,hyper,apply_op,slots", OPTIMIZERS,
                         ids=[c[0] for c in OPTIMIZERS])
def test_linear_regression_each_optimizer(name, make, rule, hyper, apply_op, slots):
    w, b, loss = linear_model()
    gs = tf.train.get_or_create_global_step()
    opt = make(hyper)
    train = opt.minimize(loss, global_step=gs)
    types = op_types()
    assert types.count(apply_op) == 2 and not any(t.startswith("Apply") for t in types)
    names = sorted(v.op.name for v in opt.variables())
    assert names == sorted(slots)
    assert all(isinstance(v, tf.ResourceVariable) for v in opt.variables())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(STEPS):
            sess.run(train)
        got_w, got_b, step = sess.run([w, b, gs])
    want_w, want_b = np_train(rule, hyper)
    np.testing.assert_allclose(got_w, want_w, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(got_b, want_b, rtol=2e-4, atol=2e-5)
    assert step == STEPS


@pytest.mark.parametrize("case", ["centered_rmsprop", "ftrl_v2"])
def test_new_optimizers_on_reference_variables(case):
    # FtrlOptimizer and RMSProp's centered form came with resource variables; their ref ops
    # (ApplyCenteredRMSProp, ApplyFtrlV2) are checked too
    _, make, rule, hyper, apply_op, _ = [c for c in OPTIMIZERS if c[0] == case][0]
    w, b, loss = linear_model(use_resource=False)
    train = make(hyper).minimize(loss)
    assert op_types().count(apply_op[len("Resource"):]) == 2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(STEPS):
            sess.run(train)
        got = sess.run([w, b])
    for x, want in zip(got, np_train(rule, hyper)):
        np.testing.assert_allclose(x, want, rtol=2e-4, atol=2e-5)


def test_ftrl_argument_errors():
    with pytest.raises(ValueError) as e:
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    assert str(e.value) == "learning_rate_power 0.500000 needs to be negative or zero"
    with pytest.raises(ValueError) as e:
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)
    assert str(e.value) == "l1_regularization_strength -1.000000 needs to be positive or zero"


def test_gradients_through_handle_and_gather():
    emb = tf.get_variable("emb", initializer=tf.constant(np.arange(10.0).reshape(5, 2),
                                                         tf.float32), use_resource=True)
    ids = np.array([0, 2, 2, 4])
    weights = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    looked = tf.nn.embedding_lookup(emb, ids)
    rows = emb.sparse_read(ids)
    loss = tf.reduce_sum(looked * weights) + tf.reduce_sum(rows * weights) + tf.reduce_sum(emb)
    g_emb, = tf.gradients(loss, [emb])
    want = np.ones((5, 2))
    np.add.at(want, ids, 2 * weights)  # two lookups, each scattering its weights back
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(g_emb), want)
        sess.run(train)
        np.testing.assert_allclose(sess.run(emb), np.arange(10.0).reshape(5, 2) - 0.5 * want)
    assert tf.gradients(loss, [tf.Variable(1.0, use_resource=True)]) == [None]


def test_saver_roundtrip_and_ref_interop(tmp_path):
    w, b, loss = linear_model()
    opt = tf.train.MomentumOptimizer(0.05, 0.9)
    train = opt.minimize(loss)
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        want = sess.run([w, b, opt.get_slot(w, "momentum")])
        saved = saver.save(sess, prefix, global_step=2)
    assert saved == prefix + "-2"
    assert sorted(_weft_checkpoints.checkpoint_keys(saved)) == [
        "b", "b/Momentum", "w", "w/Momentum"]
    # restored into resource variables, then into ref variables of the same names
    for use_resource in (True, False):
        tf.reset_default_graph()
        w2 = tf.get_variable("w", [3, 1], use_resource=use_resource)
        b2 = tf.get_variable("b", [1], use_resource=use_resource)
        m2 = tf.get_variable("w/Momentum", [3, 1], use_resource=use_resource)
        with tf.Session() as sess:
            tf.train.Saver([w2, b2, m2]).restore(sess, saved)
            got = sess.run([w2, b2, m2])
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)


def test_uninitialized_read_is_failed_precondition():
    v = tf.get_variable("v", [2], use_resource=True)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(v)
    # TensorFlow's text, inside the core's "node '...': ... (op ... on ...)" frame
    assert e.value.message == (
        "node 'v/Read/ReadVariableOp': Error while reading resource variable v from Container: "
        "localhost. This could mean that the variable was uninitialized. Not found: Resource "
        "localhost/v/N10tensorflow3VarE does not exist. (op ReadVariableOp on "
        "/job:localhost/replica:0/task:0/device:CPU:0)")
    assert e.value.op.name == "v/Read/ReadVariableOp"
    with pytest.raises(ValueError) as e:
        v.assign([1.0, 2.0, 3.0])
    assert str(e.value) == "Shapes (2,) and (3,) are incompatible"
    with pytest.raises(TypeError) as e:
        v.scatter_add([1.0])
    assert str(e.value) == "sparse_delta is not IndexedSlices: [1.0]"
    with pytest.raises(NotImplementedError):
        tf.scatter_add(tf.Variable([1.0]), [0], [1.0])


PS_CHILD = """
import sys
import weft.compat.v1 as tf
server = tf.train.Server({"ps": [sys.argv[1]], "worker": [sys.argv[2]]}, job_name="ps",
                         task_index=0)
print("ready", flush=True)
server.join()
"""


def test_one_ps_one_worker_monitored_training(tmp_path):
    ps_port, worker_port = free_ports(2)
    ps_addr, worker_addr = "localhost:%d" % ps_port, "localhost:%d" % worker_port
    children = Children()
    try:
        ps = children.start(["-c", PS_CHILD, ps_addr, worker_addr], env=dict(os.environ))
        assert ps.stdout.readline().strip() == "ready"
        cluster = tf.train.ClusterSpec({"ps": [ps_addr], "worker": [worker_addr]})
        worker = tf.train.Server(cluster, job_name="worker", task_index=0)
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            w, b, loss = linear_model()
            gs = tf.train.get_or_create_global_step()
            train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=gs)
        assert isinstance(gs, tf.Variable)
        assert [v.device for v in (w, b)] == ["/job:ps/task:0"] * 2
        ckpt = str(tmp_path / "logs")
        hooks = [tf.train.StopAtStepHook(last_step=STEPS)]
        with tf.train.MonitoredTrainingSession(master=worker.target, is_chief=True,
                                               checkpoint_dir=ckpt, hooks=hooks) as sess:
            while not sess.should_stop():
                sess.run(train)
        want_w, want_b = np_train(step_adam, OPTIMIZERS[3][3])
        with tf.Session(worker.target) as sess:  # the values live on the ps task
            got_w, got_b, step = sess.run([w, b, gs])
        np.testing.assert_allclose(got_w, want_w, rtol=2e-4, atol=2e-5)
        np.testing.assert_allclose(got_b, want_b, rtol=2e-4, atol=2e-5)
        assert step == STEPS
        keys = _weft_checkpoints.checkpoint_keys(tf.train.latest_checkpoint(ckpt))
        assert {"w", "b", "w/Adam", "b/Adam_1", "beta1_power", "global_step"} <= set(keys)
    finally:
        children.kill_all()


def test_doc_example_prints_what_it_says():
    """docs/python.md's "Resource variables" example, run as written."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    doc = open(os.path.join(root, "docs", "python.md")).read()
    section = doc.split("## Resource variables", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    children = Children()
    try:
        rc, out, err = children.finish(children.start(["-c", code], cwd=root), timeout=120)
    finally:
        children.kill_all()
    assert rc == 0, err
    first, second = out.splitlines()
    assert first == ("ResourceVariable ['model/emb', 'model/w', 'beta1_power', 'beta2_power', "
                     "'model/emb/Adam', 'model/emb/Adam_1', 'model/w/Adam', 'model/w/Adam_1']")
    # Adam's first step moves each touched element by lr (up to epsilon and float32 rounding)
    np.testing.assert_allclose(np.array(second.strip("[]").split(), np.float64),
                               [0.9, 1.0, 0.9, 1.0], rtol=1e-6)


def test_layers_and_metrics_under_a_resource_scope():
    x = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    with tf.variable_scope("net", use_resource=True):
        y = tf.layers.dense(tf.constant(x), 1, kernel_initializer=tf.constant_initializer(0.5),
                            bias_initializer=tf.constant_initializer(0.25))
        mean, update = tf.metrics.mean(tf.constant([1.0, 3.0]))
    kernel, bias = tf.trainable_variables()
    assert (kernel.name, bias.name) == ("net/dense/kernel:0", "net/dense/bias:0")
    assert all(isinstance(v, tf.ResourceVariable)
               for v in tf.trainable_variables() + tf.local_variables())
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        np.testing.assert_allclose(sess.run(y), x @ np.full((2, 1), 0.5) + 0.25)
        sess.run(update)
        assert sess.run(update) == 2.0 and sess.run(mean) == 2.0
