"""tf.train.Saver: save with global_step returning the path, max_to_keep, restore, var_list,
latest_checkpoint of absolute and relative folders, across processes, and the error paths."""
import os
import textwrap

import numpy as np
import pytest

import weft.compat.v1 as tf
from _procs import Children


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_save_restore_max_to_keep(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    n = tf.Variable(5, name="n")
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = []
        for step in range(3):
            sess.run(v.assign_add([1.0, 1.0]))
            paths.append(saver.save(sess, prefix, global_step=step))
    assert paths == [prefix + "-0", prefix + "-1", prefix + "-2"]
    assert not os.path.exists(prefix + "-0.index")  # beyond max_to_keep
    assert os.path.exists(prefix + "-1.index") and os.path.exists(prefix + "-2.index")
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-2"
    with tf.Session() as sess:
        saver.restore(sess, prefix + "-1")
        np.testing.assert_allclose(sess.run(v), [3.0, 4.0])
        assert sess.run(n) == 5


def test_global_step_tensor_and_relative_folder(tmp_path, monkeypatch):
    v = tf.Variable(3.0, name="v")
    gs = tf.train.get_or_create_global_step()
    monkeypatch.chdir(tmp_path)
    os.mkdir("ckpts")
    saver = tf.train.Saver([v, gs])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(gs.assign(17))
        path = saver.save(sess, "ckpts/m", global_step=gs)
    assert path == "ckpts/m-17"
    assert tf.train.latest_checkpoint("ckpts") == "ckpts/m-17"
    assert tf.train.latest_checkpoint("nowhere") is None
    state = tf.train.get_checkpoint_state("ckpts")
    assert state.model_checkpoint_path == "ckpts/m-17"
    assert state.all_model_checkpoint_paths == ["ckpts/m-17"]
    assert tf.train.get_checkpoint_state("nowhere") is None


def test_var_list_restores_only_those(tmp_path):
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b")
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver({"a": a}).save(sess, prefix)
    with tf.Session() as sess:
        sess.run(b.initializer)
        sess.run(b.assign(9.0))
        tf.train.Saver([a]).restore(sess, prefix)
        assert sess.run([a, b]) == [1.0, 9.0]


def test_across_processes(tmp_path):
    children = Children()
    try:
        script = textwrap.dedent("""
            import weft.compat.v1 as tf
            w = tf.Variable([[0.25, -1.5]], name="w")
            gs = tf.train.get_or_create_global_step()
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                s.run(gs.assign(41))
                print(tf.train.Saver().save(s, %r, global_step=gs))
        """ % str(tmp_path / "model.ckpt"))
        rc, out, err = children.finish(children.start(["-c", script]), timeout=120)
        assert rc == 0, err
    finally:
        children.kill_all()
    assert out.strip() == str(tmp_path / "model.ckpt-41")
    w = tf.Variable([[0.0, 0.0]], name="w")
    gs = tf.train.get_or_create_global_step()
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_allclose(sess.run(w), [[0.25, -1.5]])
        assert sess.run(gs) == 41


def test_saver_errors(tmp_path):
    with pytest.raises(ValueError) as e:
        tf.train.Saver()
    assert str(e.value) == "No variables to save"
    v = tf.Variable([1.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(ValueError) as e:
            saver.restore(sess, None)
        assert str(e.value) == "Can't load save_path when it is None."
        missing = str(tmp_path / "missing")
        with pytest.raises(ValueError) as e:
            saver.restore(sess, missing)
        assert str(e.value) == "The passed save_path is not a valid checkpoint: " + missing
        bad = str(tmp_path / "no" / "dir" / "m")
        with pytest.raises(ValueError) as e:
            saver.save(sess, bad)
        assert str(e.value) == "Parent directory of %s doesn't exist, can't save." % bad
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            saver.save(sess, str(tmp_path / "m"))
        assert e.value.message == ("Saver: attempting to save uninitialized variable 'v' (run "
                                   "its initializer or restore it first)")
        with pytest.raises(TypeError) as e:
            saver.save("not a session", str(tmp_path / "m"))
        assert str(e.value) == "'sess' must be a Session; not a session"
    # a checkpoint lacking a variable the saver restores
    other = tf.Graph()
    with other.as_default():
        u = tf.Variable(1.0, name="u")
        with tf.Session() as sess:
            sess.run(u.initializer)
            path = tf.train.Saver().save(sess, str(tmp_path / "u"))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError) as e:
            saver.restore(sess, path)
        assert e.value.message == "Saver: variable 'v' not found in checkpoint '%s'" % path
    renamed = tf.train.Saver({"renamed": v})  # restores from "renamed"; cannot save there
    with tf.Session() as sess:
        with pytest.raises(NotImplementedError) as e:
            renamed.save(sess, str(tmp_path / "r"))
    assert "weft saves a variable under its own name ('v')" in str(e.value)
