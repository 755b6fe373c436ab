"""tf.py_func and tf.numpy_function (PyFunc, PyFuncStateless over the C API's host functions):
values in and out against numpy computed here, strings, several outputs, no outputs, calls per
step, inside a while loop, TensorFlow's errors for what the function raises or returns, and the
token dropped with its graph."""
import gc
import subprocess
import textwrap

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import _weft, errors

from _procs import Children, free_ports


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_values_and_placeholder():
    x = tf.placeholder(tf.float32, [None])
    y = tf.py_func(lambda a: (a * 2 + 1).astype(np.float32), [x], tf.float32)
    assert y.dtype == tf.float32
    assert y.op.type == "PyFunc"
    z = y + 1
    with tf.Session() as sess:
        got = sess.run(z, {x: np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(got, [4, 6, 8])


def test_set_shape_refines_what_python_reads():
    x = tf.py_func(lambda: np.ones((3, 4), np.float32), [], tf.float32)
    assert x.shape.ndims is None
    x.set_shape([None, 4])
    assert x.shape.as_list() == [None, 4]
    y = tf.layers.dense(x, 2, kernel_initializer=tf.ones_initializer())
    assert y.shape.as_list() == [None, 2]
    with pytest.raises(ValueError, match="are not compatible"):
        x.set_shape([None, 5])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y), np.full((3, 2), 4.0))


def test_several_outputs_and_dtypes():
    a = tf.constant([[1, 2], [3, 4]], tf.int32)
    b = tf.constant(0.5, tf.float64)

    def f(m, s):
        assert m.dtype == np.int32 and m.shape == (2, 2)
        return m.sum(axis=0).astype(np.int64), m.T * s

    s, t = tf.py_func(f, [a, b], [tf.int64, tf.float64], stateful=False)
    assert s.op.type == "PyFuncStateless"
    with tf.Session() as sess:
        sv, tv = sess.run([s, t])
    np.testing.assert_array_equal(sv, [4, 6])
    np.testing.assert_array_equal(tv, [[0.5, 1.5], [1.0, 2.0]])


def test_strings():
    words = tf.constant([b"ab", b"c"])

    def f(w):
        return [x.decode() + "!" for x in w], np.array(len(w), np.int32)

    out, n = tf.py_func(lambda w: tuple(f(w)), [words], [tf.string, tf.int32])
    with tf.Session() as sess:
        o, nv = sess.run([out, n])
    assert list(o) == [b"ab!", b"c!"]
    assert nv == 2


def test_called_once_per_step_and_no_outputs():
    calls = []
    op = tf.py_func(lambda: calls.append(1), [], [])
    y = tf.numpy_function(lambda: np.float32(len(calls)), [], tf.float32)
    assert isinstance(op, tf.Operation)
    with tf.Session() as sess:
        for _ in range(3):
            sess.run(op)
        assert sess.run(y) == 3.0
    assert len(calls) == 3


def test_inside_while_loop():
    seen = []

    def body(i, acc):
        v = tf.py_func(lambda k: (seen.append(int(k)), np.float32(k * k))[1], [i], tf.float32)
        return i + 1, acc + v

    _, total = tf.while_loop(lambda i, acc: i < 4, body, [tf.constant(0), tf.constant(0.0)])
    with tf.Session() as sess:
        assert sess.run(total) == 0 + 1 + 4 + 9
    # once per iteration; iterations may overlap (parallel_iterations), so in any order
    assert sorted(seen) == [0, 1, 2, 3]


def test_errors_raised_by_the_function():
    def bad(x):
        raise ValueError("boom %d" % x)

    def done(x):
        raise StopIteration("no more")

    def unknown(x):
        raise KeyError("k")

    def end(x):
        raise errors.OutOfRangeError(None, None, "End of sequence")

    x = tf.constant(7)
    cases = [(bad, errors.InvalidArgumentError, "ValueError: boom 7"),
             (done, errors.OutOfRangeError, "StopIteration: no more"),
             (unknown, errors.UnknownError, "KeyError: 'k'")]
    with tf.Session() as sess:
        for fn, exc, text in cases:
            y = tf.py_func(fn, [x], tf.int32)
            with pytest.raises(exc) as info:
                sess.run(y)
            assert text in str(info.value)
            assert "Traceback (most recent call last):" in str(info.value)
        # A weft error keeps its class and text, without a traceback.
        with pytest.raises(errors.OutOfRangeError) as info:
            sess.run(tf.py_func(end, [x], tf.int32))
        assert str(info.value).endswith(": End of sequence")


def test_errors_in_what_the_function_returns():
    x = tf.constant([1.0, 2.0])
    wrong_dtype = tf.py_func(lambda a: a.astype(np.float64), [x], tf.float32)
    too_many = tf.py_func(lambda a: (a, a), [x], tf.float32)
    token_d = wrong_dtype.op.get_attr("token").decode()  # a string attr reads back as bytes
    token_m = too_many.op.get_attr("token").decode()
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(wrong_dtype)
        assert "0-th value returned by %s is double, but expects float" % token_d in str(info.value)
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(too_many)
        assert "%s returns 2 values, but expects to see 1 values." % token_m in str(info.value)
    with pytest.raises(TypeError):
        tf.py_func(3, [x], tf.float32)


def test_token_dropped_with_its_graph():
    g = tf.Graph()
    with g.as_default():
        y = tf.py_func(lambda: np.float32(1), [], tf.float32)
        token = y.op.get_attr("token").decode()
    assert token.startswith("pyfunc_")
    del y, g
    gc.collect()
    assert _weft.host_func_unregister(token) is False


def test_remote_sessions():
    """A server of this process runs the function; another process's server does not know it."""
    server = tf.train.Server.create_local_server()
    y = tf.py_func(lambda: np.int32(5), [], tf.int32)
    with tf.Session(server.target) as sess:
        assert sess.run(y) == 5
    children = Children()
    try:
        (port,) = free_ports(1)
        script = textwrap.dedent("""
            import sys
            import weft.compat.v1 as tf
            server = tf.train.Server({"remote": ["localhost:%d"]}, job_name="remote",
                                     task_index=0)
            print("serving", flush=True)
            sys.stdin.readline()
        """ % port)
        child = children.start(["-c", script], stdin=subprocess.PIPE)
        assert child.stdout.readline().strip() == "serving"
        with tf.device("/job:remote/task:0"):
            z = tf.py_func(lambda: np.int32(6), [], tf.int32)
        token = z.op.get_attr("token").decode()
        with tf.Session("grpc://localhost:%d" % port) as sess:
            with pytest.raises(errors.InvalidArgumentError) as info:
                sess.run(z)
        assert "ValueError: callback %s is not found" % token in str(info.value)
        child.stdin.write("stop\n")
        child.stdin.flush()
        rc, _, err = children.finish(child, timeout=60)
        assert rc == 0, err
    finally:
        children.kill_all()


def test_doc_example_prints_what_it_says():
    from _docs import check_section
    check_section("Python functions as nodes: `tf.py_func`",
                  ["3.0 [b'A', b'B']\n"])
