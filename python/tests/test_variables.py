"""Variables, initializers, scopes and collections against numpy references."""
import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_variable_assign_ops():
    v = tf.Variable([1.0, 2.0], name="v")
    assert v.name == "v:0"
    assert v.op.name == "v" and v.op.type == "VariableV2"
    assert v.initializer.name == "v/Assign"
    assert v.value().name == "v/read:0"
    add = v.assign_add([0.5, 0.5])
    sub = v.assign_sub([1.0, 1.0])
    setv = v.assign([10.0, 20.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(v), [1.0, 2.0])
        np.testing.assert_allclose(sess.run(add), [1.5, 2.5])
        np.testing.assert_allclose(sess.run(sub), [0.5, 1.5])
        np.testing.assert_allclose(sess.run(setv), [10.0, 20.0])
        np.testing.assert_allclose(sess.run(v.read_value() * 2), [20.0, 40.0])


def test_get_variable_scopes_reuse():
    with tf.variable_scope("layer"):
        w = tf.get_variable("w", [3, 4])
        b = tf.get_variable("b", [4], initializer=tf.zeros_initializer())
    with tf.variable_scope("layer", reuse=True):
        w2 = tf.get_variable("w")
    assert w2 is w
    assert w.name == "layer/w:0" and b.name == "layer/b:0"
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("layer"):
            tf.get_variable("w", [3, 4])
    assert str(e.value) == ("Variable layer/w already exists, disallowed. Did you mean to set "
                            "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    with pytest.raises(ValueError) as e:
        with tf.variable_scope("other", reuse=True):
            tf.get_variable("nope", [1])
    assert str(e.value) == ("Variable other/nope does not exist, or was not created with "
                            "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                            "VarScope?")
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        a1 = tf.get_variable("a", [2], initializer=tf.constant_initializer(3.0))
    with tf.variable_scope("auto", reuse=tf.AUTO_REUSE):
        a2 = tf.get_variable("a", [2])
    assert a1 is a2
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        wv, bv, av = sess.run([w, b, a1])
    limit = np.sqrt(6.0 / (3 + 4))  # glorot_uniform, TensorFlow's default
    assert wv.shape == (3, 4) and np.all(np.abs(wv) <= limit) and np.std(wv) > 0
    np.testing.assert_array_equal(bv, np.zeros(4, np.float32))
    np.testing.assert_array_equal(av, [3.0, 3.0])


def test_collections_and_initializers():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(2.0, name="b", trainable=False)
    c = tf.Variable(3.0, name="c", trainable=False,
                    collections=[tf.GraphKeys.LOCAL_VARIABLES])
    tf.add_to_collection("mine", a)
    assert tf.global_variables() == [a, b]
    assert tf.trainable_variables() == [a]
    assert tf.local_variables() == [c]
    assert tf.get_collection("mine") == [a]
    init = tf.global_variables_initializer()
    local_init = tf.local_variables_initializer()
    assert init.name == "init" and local_init.name == "init_1"
    with tf.Session() as sess:
        sess.run([init, local_init])
        assert sess.run([a, b, c]) == [1.0, 2.0, 3.0]


def test_uninitialized_variable_error():
    v = tf.Variable(1.0, name="u")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(v)
    assert "u" in e.value.message
    assert isinstance(e.value, tf.errors.OpError)
