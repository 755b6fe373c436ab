"""MonitoredTrainingSession with its hooks (StopAtStepHook, CheckpointSaverHook,
LoggingTensorHook, a user SessionRunHook), Scaffold, recovery after UNAVAILABLE/ABORTED,
Supervisor on a local and a grpc:// master, and their error paths."""
import logging
import os

import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def linear_model():
    """y = 2x + 1 by gradient descent on four points: numpy gives every step's value."""
    x = tf.constant([[0.0], [1.0], [2.0], [3.0]])
    y = tf.constant([[1.0], [3.0], [5.0], [7.0]])
    w = tf.Variable([[0.0]], name="w")
    b = tf.Variable([0.0], name="b")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=gs)
    return w, b, loss, gs, train


def numpy_steps(n):
    x = np.array([0.0, 1.0, 2.0, 3.0])
    y = 2 * x + 1
    w = b = 0.0
    for _ in range(n):
        r = w * x + b - y
        w, b = w - 0.05 * np.mean(2 * r * x), b - 0.05 * np.mean(2 * r)
    return w, b


class Recorder(tf.train.SessionRunHook):
    def __init__(self, tensor):
        self.tensor = tensor
        self.calls = []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("create")

    def before_run(self, run_context):
        self.calls.append("before")
        return tf.train.SessionRunArgs({"v": self.tensor})

    def after_run(self, run_context, run_values):
        self.calls.append(("after", float(np.ravel(run_values.results["v"])[0])))

    def end(self, session):
        self.calls.append("end")


def test_monitored_training_session_hooks_and_checkpoints(tmp_path, caplog):
    w, b, loss, gs, train = linear_model()
    rec = Recorder(w)
    ckpt = str(tmp_path / "logs")
    hooks = [tf.train.StopAtStepHook(num_steps=6), rec,
             tf.train.LoggingTensorHook({"step": gs, "loss": loss}, every_n_iter=2)]
    runs = 0
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt, hooks=hooks,
                                               save_checkpoint_steps=4) as sess:
            while not sess.should_stop():
                sess.run(train)
                runs += 1
    assert runs == 6
    assert rec.calls[:3] == ["begin", "create", "before"]
    assert rec.calls[-1] == "end"
    seen = [c[1] for c in rec.calls if isinstance(c, tuple)]
    # before each run, the hook's fetch sees w as the previous step left it
    np.testing.assert_allclose(seen, [numpy_steps(i)[0] for i in range(6)], rtol=1e-5, atol=1e-7)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loss = ")]
    assert len(logged) == 3  # iterations 0, 2, 4; keys sorted
    assert logged[0] == "loss = %s, step = 0" % np.float32(25.0 * 0 + 21.0)
    # checkpoints at the first step, step 4 and the end (6)
    state = open(os.path.join(ckpt, "checkpoint")).read()
    assert 'model_checkpoint_path: "model.ckpt-6"' in state
    for step in (0, 4, 6):
        assert os.path.exists(os.path.join(ckpt, "model.ckpt-%d.index" % step))

    # a second session restores step 6 and trains on to 8
    tf.reset_default_graph()
    w, b, loss, gs, train = linear_model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt, save_checkpoint_secs=None,
                                           hooks=[tf.train.StopAtStepHook(last_step=8)]) as sess:
        assert sess.run(gs) == 6
        while not sess.should_stop():
            sess.run(train)
        wv, bv, step = sess.run([w, b, gs])
    assert step == 8
    np.testing.assert_allclose([wv[0][0], bv[0]], numpy_steps(8), rtol=1e-5)


def test_scaffold_and_recovery():
    w, b, loss, gs, train = linear_model()
    local = tf.Variable(0.0, name="local_counter", trainable=False,
                        collections=[tf.GraphKeys.LOCAL_VARIABLES])

    class FlakyOnce(tf.train.SessionRunHook):
        created = 0
        failed = False

        def after_create_session(self, session, coord):
            FlakyOnce.created += 1

        def before_run(self, run_context):
            if not FlakyOnce.failed:
                FlakyOnce.failed = True
                raise tf.errors.UnavailableError(None, None, "ps went away")

    init_fn_calls = []
    scaffold = tf.train.Scaffold(init_op=tf.global_variables_initializer(),
                                 local_init_op=local.initializer,
                                 init_fn=lambda scaffold, sess: init_fn_calls.append(1))
    with tf.train.MonitoredTrainingSession(scaffold=scaffold,
                                           hooks=[FlakyOnce(),
                                                  tf.train.StopAtStepHook(last_step=3)]) as sess:
        while not sess.should_stop():
            sess.run(train)
        assert sess.run(local) == 0.0
    assert FlakyOnce.created == 2 and len(init_fn_calls) == 2
    assert tf.get_default_graph().finalized


def test_out_of_range_ends_the_loop_cleanly():
    w, b, loss, gs, train = linear_model()
    with tf.train.MonitoredTrainingSession() as sess:
        sess.run(train)
        raise tf.errors.OutOfRangeError(None, None, "End of sequence")
    # no exception: TensorFlow treats the end of the input as the end of training


def test_hook_errors():
    with pytest.raises(ValueError) as e:
        tf.train.StopAtStepHook()
    assert str(e.value) == "One of num_steps or last_step must be specified."
    with pytest.raises(ValueError) as e:
        tf.train.StopAtStepHook(num_steps=1, last_step=2)
    assert str(e.value) == "Only one of num_steps or last_step can be specified."
    with pytest.raises(ValueError) as e:
        tf.train.LoggingTensorHook(["a:0"])
    assert str(e.value) == ("either at_end and/or exactly one of every_n_iter and every_n_secs "
                            "must be provided.")
    with pytest.raises(ValueError) as e:
        tf.train.CheckpointSaverHook("/tmp/x")
    assert str(e.value) == "Either every_secs or every_steps should be provided."
    tf.Variable(1.0, name="x")
    with pytest.raises(RuntimeError) as e:
        tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=1)])
    assert str(e.value) == "Global step should be created to use StopAtStepHook."


def test_supervisor_program(tmp_path):
    """The Supervisor's chief loop of TF 1.x tutorials, on a local server's grpc:// target."""
    server = tf.train.Server.create_local_server()
    w, b, loss, gs, train = linear_model()
    sv = tf.train.Supervisor(is_chief=True, logdir=str(tmp_path), global_step=gs,
                             init_op=tf.global_variables_initializer(), save_model_secs=600,
                             recovery_wait_secs=1)
    assert sv.is_chief and sv.global_step is gs and sv.saver is not None
    with sv.managed_session(server.target) as sess:
        assert sv.start_queue_runners(sess) == []
        step = 0
        while not sv.should_stop() and step < 5:
            sess.run(train)
            step = sess.run(gs)
        sv.saver.save(sess, sv.save_path, global_step=gs)
    assert sv.should_stop()
    assert tf.train.latest_checkpoint(str(tmp_path)) == os.path.join(str(tmp_path),
                                                                     "model.ckpt-5")
    # a new chief restores what the first saved instead of initialising
    tf.reset_default_graph()
    w, b, loss, gs, train = linear_model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), global_step=gs)
    sess = sv.prepare_or_wait_for_session(server.target)
    try:
        wv, bv, step = sess.run([w, b, gs])
    finally:
        sv.stop()
        sess.close()
    assert step == 5
    np.testing.assert_allclose([wv[0][0], bv[0]], numpy_steps(5), rtol=1e-5)


def test_supervisor_worker_waits_for_chief():
    """A worker's graph (built by its own program) waits until the chief has initialised the
    variables on the shared server."""
    server = tf.train.Server.create_local_server()
    chief_graph, worker_graph = tf.Graph(), tf.Graph()
    with chief_graph.as_default():
        _, _, _, gs, train = linear_model()
        chief = tf.train.Supervisor(is_chief=True, logdir=None, global_step=gs)
    with worker_graph.as_default():
        _, _, _, worker_gs, _ = linear_model()
        worker = tf.train.Supervisor(is_chief=False, global_step=worker_gs,
                                     recovery_wait_secs=1)
        with pytest.raises(tf.errors.DeadlineExceededError) as e:
            worker.prepare_or_wait_for_session(server.target, max_wait_secs=0)
        assert e.value.message == "Session was not ready after waiting 0 secs."
    with chief_graph.as_default(), chief.managed_session(server.target) as s:
        s.run(train)
        with worker_graph.as_default():
            ws = worker.prepare_or_wait_for_session(server.target, max_wait_secs=60)
            assert ws.run(worker_gs) == 1
            ws.close()
