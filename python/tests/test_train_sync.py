"""SyncReplicasOptimizer in one process: the Supervisor way (chief queue runner, init tokens,
local_step_init_op, ready_for_local_init_op), the hook way, and its error paths."""
import time

import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def model():
    w = tf.Variable([1.0, -2.0], name="w")
    loss = tf.reduce_sum(tf.square(w - [3.0, 1.0]))  # gradient 2 (w - t)
    gs = tf.train.get_or_create_global_step()
    return w, loss, gs


def test_supervisor_style_two_pushes_one_update():
    w, loss, gs = model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.25),
                                         replicas_to_aggregate=2, total_num_replicas=2)
    train = opt.minimize(loss, global_step=gs)
    assert train.name == "sync_replicas/train"
    g = tf.get_default_graph()
    assert g.get_operation_by_name("w/sync_acc").colocation_groups() == [b"loc:@w"]
    runner = opt.get_chief_queue_runner()
    init_tokens = opt.get_init_tokens_op()
    sv = tf.train.Supervisor(is_chief=True, logdir=None, global_step=gs,
                             local_init_op=opt.chief_init_op,
                             ready_for_local_init_op=opt.ready_for_local_init_op)
    with sv.managed_session() as sess:
        threads = sv.start_queue_runners(sess, [runner])
        assert len(threads) == 1
        sess.run(init_tokens)
        sess.run(train)
        assert sess.run(gs) == 0  # one gradient of two: no update yet
        sess.run(train)
        deadline = time.time() + 60
        while sess.run(gs) == 0 and time.time() < deadline:
            time.sleep(0.01)
        assert sess.run(gs) == 1
        # the average of two equal gradients 2 * (w - t) = [-4, -6], times 0.25
        np.testing.assert_allclose(sess.run(w), [2.0, -0.5])


def test_hook_style_single_replica():
    w, loss, gs = model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.25), 1)
    train = opt.minimize(loss, global_step=gs)
    hooks = [tf.train.StopAtStepHook(last_step=3), opt.make_session_run_hook(True)]
    with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
        n = 0
        while not sess.should_stop():
            sess.run(train)
            n += 1
        assert (n, sess.run(gs)) == (3, 3)
        want = np.array([1.0, -2.0])
        for _ in range(3):
            want = want - 0.25 * 2 * (want - [3.0, 1.0])
        np.testing.assert_allclose(sess.run(w), want)


def test_sync_errors():
    w, loss, gs = model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 3)
    with pytest.raises(ValueError) as e:
        opt.get_chief_queue_runner()
    assert str(e.value) == "get_chief_queue_runner() should be called after apply_gradients()."
    with pytest.raises(ValueError) as e:
        opt.make_session_run_hook(True).begin()
    assert str(e.value) == ("SyncReplicasOptimizer.apply_gradient should be called before using "
                            "the hook.")
    with pytest.raises(ValueError) as e:
        opt.minimize(loss)
    assert str(e.value) == "Global step is required to check staleness"
    opt.minimize(loss, global_step=gs)
    with pytest.raises(ValueError) as e:
        opt.get_init_tokens_op(0)
    assert str(e.value) == "Too few tokens to finish the first step: 0 (given) vs 1 (needed)"
    with pytest.raises(ValueError) as e:
        tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 0)
    assert str(e.value) == "replicas_to_aggregate must be at least 1, not 0"
