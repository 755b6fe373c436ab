"""compat.v1 sessions: nested fetches, feeds, default sessions, config, run options and
metadata, errors with their exact classes and messages."""
import collections

import numpy as np
import pytest

import weft
import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_nested_fetches():
    a = tf.constant(1.0, name="a")
    b = tf.constant([2, 3], name="b")
    op = tf.no_op(name="nothing")
    Pair = collections.namedtuple("Pair", ["x", "y"])
    with tf.Session() as sess:
        out = sess.run({"l": [a, (b, op)], "p": Pair(a, "b:0"), "n": "a:0"})
    assert out["l"][0] == 1.0 and isinstance(out["l"][1], tuple)
    np.testing.assert_array_equal(out["l"][1][0], [2, 3])
    assert out["l"][1][1] is None
    assert isinstance(out["p"], Pair) and out["p"].x == 1.0
    np.testing.assert_array_equal(out["p"].y, [2, 3])
    assert out["n"] == 1.0 and isinstance(out["n"], np.float32)


def test_feeds_by_tensor_and_name_and_float64_conversion():
    x = tf.placeholder("float", [None, 2], name="x")
    y = x * 2
    v = np.array([[1.5, 2.5]], np.float64)
    with tf.Session() as sess:
        r1 = sess.run(y, {x: v})
        r2 = sess.run(y, {"x:0": v})
        r3 = sess.run(y, {"x": [[1, 2]]})
    assert r1.dtype == np.float32
    np.testing.assert_allclose(r1, v * 2)
    np.testing.assert_allclose(r2, v * 2)
    np.testing.assert_allclose(r3, [[2, 4]])


def test_feed_shape_mismatch():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.Session() as sess:
        with pytest.raises(ValueError) as e:
            sess.run(x, {x: np.zeros(3)})
    assert str(e.value) == ("Cannot feed value of shape (3,) for Tensor 'x:0', which has shape "
                            "'(?, 2)'")


def test_missing_feed_is_invalid_argument():
    x = tf.placeholder(tf.float32, [2], name="needs_feed")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(x * 2)
    assert e.value.message == ("You must feed a value for placeholder tensor 'needs_feed' with "
                               "dtype float32 and shape [2]")
    assert e.value.error_code == tf.errors.INVALID_ARGUMENT
    assert e.value.op is x.op


def test_uninitialized_variable_names_the_op():
    v = tf.Variable(1.0, name="u")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(v)
    assert e.value.message.startswith("Attempting to use uninitialized value u (input 0 of node "
                                      "'u/read')")
    assert e.value.op is v.value().op


def test_fetch_errors():
    tf.constant(1.0, name="c")
    with tf.Session() as sess:
        with pytest.raises(ValueError) as e:
            sess.run("nope:0")
        assert str(e.value) == ("Fetch argument 'nope:0' cannot be interpreted as a Tensor. (The "
                                "name 'nope:0' refers to a Tensor which does not exist. The "
                                "operation, 'nope', does not exist in the graph.)")
        with pytest.raises(TypeError) as e:
            sess.run(None)
        assert str(e.value) == "Fetch argument None has invalid type <class 'NoneType'>"
        with pytest.raises(TypeError):
            sess.run(3.5)


def test_strings_come_back_as_bytes():
    s = tf.constant(["ab", "c\x00d"])
    one = tf.constant(b"xyz")
    p = tf.placeholder(tf.string, [2])
    with tf.Session() as sess:
        got, scalar, fed = sess.run([s, one, p], {p: [b"q", "r"]})
    assert list(got) == [b"ab", b"c\x00d"]
    assert scalar == b"xyz"
    assert list(fed) == [b"q", b"r"]


def test_default_session_eval_and_run():
    c = tf.constant(3.0)
    v = tf.Variable(1.0)
    init = tf.global_variables_initializer()
    with pytest.raises(ValueError) as e:
        c.eval()
    assert str(e.value).startswith("Cannot evaluate tensor using `eval()`: No default session")
    with tf.Session() as sess:
        assert tf.get_default_session() is sess
        init.run()
        assert c.eval() == 3.0
        assert v.eval() == 1.0
    assert tf.get_default_session() is None
    sess = tf.InteractiveSession()
    init.run()
    assert (c * 2).eval() == 6.0
    sess.close()
    with pytest.raises(RuntimeError) as e:
        sess.run(c)
    assert str(e.value) == "Attempted to use a closed Session."


def test_ops_added_after_session_and_several_sessions():
    a = tf.constant(2.0)
    s1 = tf.Session()
    s2 = tf.Session()
    assert s1.run(a) == 2.0
    b = a * 5
    assert s1.run(b) == 10.0 and s2.run(b) == 10.0
    v = tf.Variable(1.0)
    s1.run(v.initializer)
    s1.run(v.assign(7.0))
    s2.run(v.initializer)
    assert s1.run(v) == 7.0 and s2.run(v) == 1.0
    s1.close()
    s2.close()


def test_session_on_other_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(4.0)
    assert tf.get_default_graph() is not g
    with tf.Session(graph=g) as sess:
        assert sess.run(c) == 4.0
        assert tf.get_default_graph() is g
    other = tf.constant(1.0)
    with tf.Session(graph=g) as sess:
        with pytest.raises(ValueError) as e:
            sess.run(other)
    assert "is not an element of this graph" in str(e.value)


def test_config_proto_honoured():
    config = tf.ConfigProto(log_device_placement=True, allow_soft_placement=True,
                            inter_op_parallelism_threads=2, intra_op_parallelism_threads=1,
                            use_per_session_threads=True, device_count={"GPU": 0},
                            gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.5,
                                                      allow_growth=True),
                            device_filters=["/job:localhost"])
    with tf.device("/gpu:0"):
        c = tf.constant([1.0, 2.0]) * 3
    with tf.Session(config=config) as sess:
        np.testing.assert_allclose(sess.run(c), [3.0, 6.0])
        assert "CPU" in sess._s.node_device(c.op.name)
    with pytest.raises(ValueError) as e:
        tf.ConfigProto(no_such_field=1)
    assert str(e.value) == "ConfigProto has no field no_such_field that weft supports"


def test_run_options_and_metadata():
    x = tf.placeholder(tf.float32, [2])
    y = tf.reduce_sum(x * x, name="total")
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    md = tf.RunMetadata()
    with tf.Session() as sess:
        assert sess.run(y, {x: [1.0, 2.0]}, options=opts, run_metadata=md) == 5.0
    names = [n.node_name for d in md.step_stats.dev_stats for n in d.node_stats]
    assert "total" in names
    assert all(d.device.startswith("/job:localhost") for d in md.step_stats.dev_stats)
    events = md.chrome_trace_events()
    assert any(e.get("name") == "total" or e.get("args", {}).get("name") == "total"
               for e in events["traceEvents"])


def test_run_timeout_deadline_exceeded():
    x = tf.constant(1.0)
    with tf.Session() as sess:
        assert sess.run(x, options=tf.RunOptions(timeout_in_ms=60000)) == 1.0


def test_error_classes_map_codes():
    for code, cls in [(3, tf.errors.InvalidArgumentError), (5, tf.errors.NotFoundError),
                      (9, tf.errors.FailedPreconditionError), (12, tf.errors.UnimplementedError),
                      (14, tf.errors.UnavailableError), (4, tf.errors.DeadlineExceededError)]:
        e = tf.errors._from_status(code, "msg %d" % code)
        assert type(e) is cls and e.message == "msg %d" % code and e.error_code == code
        assert isinstance(e, tf.errors.OpError) and e.op is None
    assert tf.errors.exception_type_from_error_code(16) is tf.errors.UnauthenticatedError


def test_bad_target_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.Session("nope://x")
    assert e.value.message == ("Session target 'nope://x' is not supported: use \"\" or \"local\" "
                               "for an in-process session, or grpc://HOST:PORT (grpcs:// for TLS) "
                               "for a server")


def test_zero_copy_and_copies():
    v = tf.Variable([1.0, 2.0])
    y = v * 2
    with tf.Session() as sess:
        sess.run(v.initializer)
        shared = sess.run(v)
        computed = sess.run(y)
        sess.run(v.assign([5.0, 5.0]))
        np.testing.assert_array_equal(shared, [1.0, 2.0])  # a copy: the variable moved on
    assert computed.base is not None  # numpy array over the weft tensor, no copy
    np.testing.assert_array_equal(computed, [2.0, 4.0])


def test_extension_roundtrip_every_dtype():
    for arr in [np.arange(4, dtype=t).reshape(2, 2) for t in
                (np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                 np.uint8, np.uint16, np.uint32, np.uint64)] + [np.array([True, False])]:
        back = weft._weft.roundtrip(arr)
        assert back.dtype == arr.dtype
        np.testing.assert_array_equal(back, arr)
    s = weft._weft.roundtrip(np.array([b"a", b"bc"]))
    assert list(s) == [b"a", b"bc"]
    with pytest.raises(TypeError) as e:
        weft._weft.roundtrip(np.array([1 + 2j]))
    assert str(e.value) == "no weft dtype for numpy dtype dtype('complex128')"


def test_default_graph_and_session_are_per_thread():
    import threading
    g = tf.Graph()
    seen = {}

    def other():
        seen["graph"] = tf.get_default_graph()
        seen["session"] = tf.get_default_session()
    with g.as_default():
        with tf.Session() as sess:
            t = threading.Thread(target=other)
            t.start()
            t.join()
            assert tf.get_default_session() is sess
    assert seen["graph"] is tf.get_default_graph() and seen["graph"] is not g
    assert seen["session"] is None


def test_device_count_and_visible_device_list():
    c = tf.constant([1.0, 2.0]) * 3
    with tf.Session(config=tf.ConfigProto(device_count={"GPU": 0},
                                          gpu_options=tf.GPUOptions(visible_device_list="0"))
                    ) as sess:
        np.testing.assert_allclose(sess.run(c), [3.0, 6.0])
        assert sess._s.node_device(c.op.name).endswith("/device:CPU:0")
    hidden = tf.ConfigProto(device_count={"CPU": 0, "GPU": 0, "VULKAN": 0, "CUDA": 0})
    with tf.Session(config=hidden) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError) as e:
            sess.run(c)
    assert e.value.message.startswith("No devices: the session's device_count / "
                                      "visible_device_list hide all ")
    with pytest.raises(ValueError) as e:
        tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="0,x"))._weft_options()
    assert str(e.value) == ("Could not parse entry in 'visible_device_list': 'x'. "
                            "visible_device_list = 0,x")


def test_repeated_fetch_runs_the_prepared_step():
    # The second run of the same Tensor or Operation without feeds takes the fast path
    # (weft._weft.Step); its results, errors and closed-session behaviour are the planned path's.
    a = tf.constant([1.5, -2.0], name="a")
    b = tf.constant(3.0, name="b")
    s = a * b
    v = tf.Variable(0.0, name="count")
    bump = v.assign_add(1.0).op
    x = tf.placeholder(tf.float32, [], name="later_fed")
    y = x + 1.0
    sess = tf.Session()
    sess.run(v.initializer)
    for _ in range(3):
        got = sess.run(s)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, np.array([1.5, -2.0], np.float32) * np.float32(3.0))
        assert sess.run(bump) is None
    assert sess.run(v) == 3.0
    # A fed run of a tensor the fast path knows plans again; an unfed one raises with the op.
    assert sess.run(y, {x: 2.0}) == 3.0
    for _ in range(2):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(y)
        assert e.value.message == ("You must feed a value for placeholder tensor 'later_fed' "
                                   "with dtype float32 and shape []")
        assert e.value.op is x.op
    step = sess._s.prepare(["a:0", "b:0"], [bump.name], False)
    first, second = step()
    np.testing.assert_array_equal(first, [1.5, -2.0])
    assert second == 3.0 and sess.run(v) == 4.0
    assert sess._s.prepare([], [bump.name], False)() is None and sess.run(v) == 5.0
    with pytest.raises(TypeError) as e:
        step(1)
    assert str(e.value) == "a prepared step takes no arguments"
    with pytest.raises(ValueError) as e:
        sess._s.prepare(["a:0", "b:0"], [], True)
    assert str(e.value) == "a single-fetch step needs exactly one fetch name"
    with pytest.raises(TypeError):
        sess._s.prepare(("a:0",), [], True)
    sess.close()
    with pytest.raises(RuntimeError) as e:
        sess.run(s)
    assert str(e.value) == "Attempted to use a closed Session."
    with pytest.raises(tf.errors.FailedPreconditionError) as e:
        step()
    assert e.value.message == "Attempted to use a closed Session."
