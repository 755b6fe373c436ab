"""tf.cond, tf.case, tf.while_loop, tf.TensorArray, tf.map_fn/scan/foldl/foldr and the RNN
layer over them: values against numpy, gradients against closed forms and finite differences,
the node structure TensorFlow 1.x builds, and TensorFlow's errors for bad inputs."""
import collections
import os
import subprocess
import sys

import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(fetches, feed=None):
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        return s.run(fetches, feed)


# ---------------------------------------------------------------------------------------------
# cond and case

def test_cond_picks_branch_and_captures_outer_tensors():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(3.0)
    y = tf.constant(4.0)
    r = tf.cond(p, lambda: x * y, lambda: x + y)
    assert run(r, {p: True}) == 12.0
    assert run(r, {p: False}) == 7.0
    ops = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"Switch", "Merge"} <= ops
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert "cond/switch_t" in names and "cond/pred_id" in names and "cond/Merge" in names


def test_cond_nested_structures_and_constants_in_branches():
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: {"a": tf.constant(1), "b": (tf.constant(2.0), tf.constant([3.0]))},
                  lambda: {"a": tf.constant(10), "b": (tf.constant(20.0), tf.constant([30.0]))})
    assert sorted(out) == ["a", "b"]
    v = run(out, {p: False})
    assert v["a"] == 10 and v["b"][0] == 20.0 and v["b"][1].tolist() == [30.0]
    v = run(out, {p: True})
    assert v["a"] == 1 and v["b"][1].tolist() == [3.0]


def test_cond_strict_and_singletons():
    p = tf.constant(True)
    assert isinstance(tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)]), tf.Tensor)
    out = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)], strict=True)
    assert isinstance(out, list) and run(out) == [1]


def test_cond_errors():
    with pytest.raises(TypeError, match="pred must not be a Python bool"):
        tf.cond(True, lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="does not match expected type of bool"):
        tf.cond(tf.constant(1), lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(tf.constant(True), 1, lambda: 2)
    with pytest.raises(ValueError, match="same type"):
        tf.cond(tf.constant(True), lambda: tf.constant(1), lambda: tf.constant(1.0))
    with pytest.raises(ValueError, match="same structure"):
        tf.cond(tf.constant(True), lambda: (1, 2), lambda: [1, 2])
    with pytest.raises(ValueError, match="true_fn must have a return value"):
        tf.cond(tf.constant(True), lambda: None, lambda: 2)


def test_cond_gradient():
    x = tf.Variable(2.0)
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: x * x * x, lambda: tf.sin(x))
    g, = tf.gradients(y, [x])
    assert np.isclose(run(g, {p: True}), 12.0)
    assert np.isclose(run(g, {p: False}), np.cos(2.0))


def test_case():
    x = tf.placeholder(tf.int32, [])
    r = tf.case([(tf.less(x, 0), lambda: tf.constant(-1)),
                 (tf.equal(x, 0), lambda: tf.constant(0))],
                default=lambda: tf.constant(1))
    assert [run(r, {x: v}) for v in (-5, 0, 7)] == [-1, 0, 1]
    r2 = tf.case([(tf.greater(x, 0), lambda: tf.constant(1)),
                  (tf.greater(x, 5), lambda: tf.constant(5))], default=lambda: tf.constant(0),
                 exclusive=True)
    assert run(r2, {x: 3}) == 1
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(r2, {x: 7})
    with pytest.raises(TypeError, match="must be callable"):
        tf.case([(tf.constant(True), 1)])


# ---------------------------------------------------------------------------------------------
# while_loop

def test_while_loop_sum_and_structure():
    i0 = tf.constant(0)
    s0 = tf.constant(0.0)
    x = tf.constant(0.5)  # read inside the body: a constant Enter
    i, s = tf.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + tf.cast(i, tf.float32) * x),
                         [i0, s0])
    assert run([i, s]) == [10, 22.5]
    g = tf.get_default_graph()
    enters = [op for op in g.get_operations() if op.type == "Enter"]
    assert sorted(e.get_attr("is_constant") for e in enters) == [False, False, True]
    assert {e.get_attr("frame_name") for e in enters} == {b"while/while_context"}
    types = {op.type for op in g.get_operations()}
    assert {"Merge", "Switch", "LoopCond", "NextIteration", "Exit"} <= types
    merge = g.get_operation_by_name("while/Merge")
    assert merge.inputs[1].op.type == "NextIteration"


def test_while_loop_nested_vars_single_var_and_maximum_iterations():
    Pair = collections.namedtuple("Pair", "a b")
    out = tf.while_loop(lambda p: p.a < 5, lambda p: Pair(p.a + 1, p.b * 2),
                        [Pair(tf.constant(0), tf.constant(1))])
    # as in TensorFlow, several flat values keep loop_vars' structure: a list of one Pair
    assert isinstance(out, list) and isinstance(out[0], Pair)
    assert run(list(out[0])) == [5, 32]
    one = tf.while_loop(lambda v: v < 100, lambda v: v * 3, [tf.constant(1)])
    assert run(one) == 243
    capped = tf.while_loop(lambda v: v < 100, lambda v: v + 1, [tf.constant(0)],
                           maximum_iterations=7)
    assert run(capped) == 7


def test_nested_while_loops():
    def outer_body(i, acc):
        j, inner = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + j), [0, 0])
        return i + 1, acc + inner
    _, acc = tf.while_loop(lambda i, a: i < 5, outer_body, [tf.constant(0), tf.constant(0)])
    # sum over i < 5 of sum over j < i of j
    assert run(acc) == sum(sum(range(i)) for i in range(5))


def test_while_loop_shape_invariants():
    x0 = tf.constant([1.0])
    with pytest.raises(ValueError, match="enters the loop with shape"):
        tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x0])
    out = tf.while_loop(lambda x: tf.size(x) < 8, lambda x: tf.concat([x, x], 0), [x0],
                        shape_invariants=[tf.TensorShape([None])])
    assert out.shape.as_list() == [None]
    assert run(out).tolist() == [1.0] * 8
    with pytest.raises(ValueError, match="not compatible with the initial shape"):
        tf.while_loop(lambda x: tf.size(x) < 8, lambda x: x, [x0],
                      shape_invariants=[tf.TensorShape([2])])


def test_while_loop_errors():
    with pytest.raises(TypeError, match="cond must be callable"):
        tf.while_loop(1, lambda x: x, [tf.constant(0)])
    with pytest.raises(TypeError, match="body must be callable"):
        tf.while_loop(lambda x: x < 1, 1, [tf.constant(0)])
    with pytest.raises(ValueError, match="No loop variables provided"):
        tf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(TypeError, match="LoopCond"):
        tf.while_loop(lambda x: x, lambda x: x + 1, [tf.constant(0)])
    with pytest.raises(ValueError, match="type int32 after one iteration"):
        tf.while_loop(lambda x: x < 1.0, lambda x: tf.constant(1), [tf.constant(0.0)])


def test_while_loop_gradient_power():
    # x^n by repeated multiplication: d/dx = n x^(n-1); d/dy of y*x^n is x^n
    x = tf.Variable(1.5)
    y = tf.placeholder(tf.float32, [])
    _, p = tf.while_loop(lambda i, p: i < 4, lambda i, p: (i + 1, p * x), [0, y])
    gx, gy = tf.gradients(p, [x, y])
    vx, vy = run([gx, gy], {y: 2.0})
    assert np.isclose(vx, 2.0 * 4 * 1.5 ** 3)
    assert np.isclose(vy, 1.5 ** 4)


def test_cond_inside_while_and_while_inside_cond():
    x = tf.Variable(1.5)
    # even iterations add x, odd ones multiply by x: from 0, (x * x + x) * x = x^3 + x^2
    _, v = tf.while_loop(lambda i, v: i < 4,
                         lambda i, v: (i + 1, tf.cond(tf.equal(i % 2, 0), lambda: v + x,
                                                      lambda: v * x)), [0, 0.0])
    g, = tf.gradients(v, [x])
    assert np.isclose(run(v), 1.5 ** 3 + 1.5 ** 2)
    assert np.isclose(run(g), 3 * 1.5 ** 2 + 2 * 1.5)
    p = tf.placeholder(tf.bool, [])
    w = tf.cond(p, lambda: tf.while_loop(lambda k: k < 10.0, lambda k: k * x, [x]),
                lambda: x * 0.0)
    # x^3 = 3.375 >= 10 fails, x^6 = 11.4: three multiplications, w = x^6
    assert np.isclose(run(w, {p: True}), 1.5 ** 6) and run(w, {p: False}) == 0.0
    # a loop as a branch's output: the cond's gradient looks for the cond's Switch before the
    # loop, not at the loop's own Switch (gradients_cf.c)
    gw, = tf.gradients(w, [x])
    assert np.isclose(run(gw, {p: True}), 6 * 1.5 ** 5) and run(gw, {p: False}) == 0.0


def test_gradient_of_loop_returned_by_a_cond_branch():
    x = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])
    # loop variables made inside the branch (constants hanging on the branch's pivot)
    y = tf.cond(p, lambda: tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                                         [0, tf.constant(1.0)])[1],
                lambda: x * 2.0)
    # a cond inside a loop inside a cond: x^2 + 2x
    def body(i, v):
        return i + 1, tf.cond(i < 1, lambda: v * x, lambda: v + x)
    z = tf.cond(p, lambda: tf.while_loop(lambda i, v: i < 3, body, [0, x])[1],
                lambda: tf.square(x))
    gy, = tf.gradients(y, [x])
    gz, = tf.gradients(z, [x])
    got = run([y, gy, z, gz], {x: 1.5, p: True})
    assert np.allclose(got, [1.5 ** 3, 3 * 1.5 ** 2, 1.5 ** 2 + 3.0, 2 * 1.5 + 2])
    got = run([y, gy, z, gz], {x: 1.5, p: False})
    assert np.allclose(got, [3.0, 2.0, 1.5 ** 2, 3.0])


def test_loop_inside_device_scope_and_graph_def_round_trip():
    with tf.device("/cpu:0"):
        r = tf.while_loop(lambda v: v < 50, lambda v: v * 2, [tf.constant(1)])
        after = tf.identity(r, name="after")  # the scope holds on the rebuilt graph
    assert "CPU:0" in after.device.upper() and "CPU:0" in r.op.device.upper()
    gd = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default() as g2:
        out, = tf.import_graph_def(gd, return_elements=["after:0"], name="")
        with tf.Session(graph=g2) as s:
            assert s.run(out) == 64


def test_while_loop_back_prop_false_stops_gradient():
    x = tf.constant(2.0)
    r = tf.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, [x], back_prop=False)
    assert tf.gradients(r, [x]) == [None] or run(tf.gradients(r, [x])[0]) == 0.0


# ---------------------------------------------------------------------------------------------
# TensorArray

def test_tensor_array_write_read_stack_and_ops():
    ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False)
    ta = ta.write(0, [1.0, 2.0]).write(1, [3.0, 4.0]).write(2, [5.0, 6.0])
    assert ta.handle.op.type == "TensorArrayV3"
    assert ta.element_shape.as_list() == [2]
    v = run([ta.read(1), ta.stack(), ta.size(), ta.gather([2, 0]), ta.concat()])
    assert v[0].tolist() == [3.0, 4.0]
    assert v[1].tolist() == [[1, 2], [3, 4], [5, 6]]
    assert v[2] == 3
    assert v[3].tolist() == [[5, 6], [1, 2]]
    assert v[4].tolist() == [1, 2, 3, 4, 5, 6]
    once = tf.TensorArray(tf.float32, size=1).write(0, 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="clear_after_read"):
        run([once.read(0), once.stack()])


def test_tensor_array_unstack_scatter_split_identity_close():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    ta = tf.TensorArray(tf.float32, size=3).unstack(x)
    sc = tf.TensorArray(tf.float32, size=3).scatter([2, 0, 1], x)
    sp = tf.TensorArray(tf.float32, size=2, infer_shape=False).split(
        tf.constant([1.0, 2.0, 3.0]), [1, 2])
    v = run([ta.identity().read(2), sc.read(0), sp.read(1), sp.size()])
    assert v[0].tolist() == [4.0, 5.0] and v[1].tolist() == [2.0, 3.0]
    assert v[2].tolist() == [2.0, 3.0] and v[3] == 2
    assert run(tf.TensorArray(tf.int32, size=1).close()) is None


def test_tensor_array_errors():
    with pytest.raises(ValueError, match="Size must be provided"):
        tf.TensorArray(tf.float32)
    with pytest.raises(TypeError, match="TensorArray dtype is float32"):
        tf.TensorArray(tf.float32, size=1).write(0, tf.constant(1))
    with pytest.raises(ValueError, match="Inconsistent shapes"):
        tf.TensorArray(tf.float32, size=2).write(0, [1.0]).write(1, [1.0, 2.0])


def test_tensor_array_in_while_loop_dynamic_size_and_gradient():
    x = tf.placeholder(tf.float32, [4])
    ta_in = tf.TensorArray(tf.float32, size=4).unstack(x)

    def body(i, acc, out):
        v = ta_in.read(i)
        acc = acc + v * v
        return i + 1, acc, out.write(i, acc)
    _, total, out = tf.while_loop(lambda i, a, o: i < 4, body,
                                  [0, 0.0, tf.TensorArray(tf.float32, size=0, dynamic_size=True)])
    cums = out.stack()
    g, = tf.gradients(tf.reduce_sum(cums), [x])
    xv = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    vt, vc, vg = run([total, cums, g], {x: xv})
    assert vt == 30.0 and vc.tolist() == np.cumsum(xv * xv).tolist()
    # d/dx_k of sum_j cumsum_j = 2 x_k (4 - k)
    assert np.allclose(vg, 2 * xv * np.array([4, 3, 2, 1]))


# ---------------------------------------------------------------------------------------------
# map_fn, scan, foldl, foldr

def test_map_fn():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    sq = tf.map_fn(lambda r: r * r, x)
    sums = tf.map_fn(lambda p: p[0] + tf.cast(p[1], tf.float32), (tf.constant([1.0, 2.0]),
                                                                   tf.constant([10, 20])),
                     dtype=tf.float32)
    v = run([sq, sums])
    assert v[0].tolist() == (np.array([[1, 2], [3, 4], [5, 6]]) ** 2).tolist()
    assert v[1].tolist() == [11.0, 22.0]
    with pytest.raises(TypeError, match="fn must be callable"):
        tf.map_fn(1, x)


def test_map_fn_gradient():
    x = tf.placeholder(tf.float32, [3])
    y = tf.map_fn(lambda v: tf.sin(v) * v, x)
    g, = tf.gradients(tf.reduce_sum(y), [x])
    xv = np.array([0.5, 1.0, 2.0], np.float32)
    assert np.allclose(run(g, {x: xv}), np.cos(xv) * xv + np.sin(xv), atol=1e-6)


def test_scan_foldl_foldr():
    e = tf.constant([1, 2, 3, 4])
    v = run([tf.scan(lambda a, x: a + x, e), tf.scan(lambda a, x: a * x, e, initializer=1),
             tf.scan(lambda a, x: a + x, e, reverse=True),
             tf.foldl(lambda a, x: a - x, e), tf.foldr(lambda a, x: a - x, e),
             tf.foldl(lambda a, x: a * 10 + x, e, initializer=0),
             tf.foldr(lambda a, x: a * 10 + x, e, initializer=0)])
    assert v[0].tolist() == [1, 3, 6, 10]
    assert v[1].tolist() == [1, 2, 6, 24]
    assert v[2].tolist() == [10, 9, 7, 4]
    assert v[3] == 1 - 2 - 3 - 4 and v[4] == 4 - 3 - 2 - 1
    assert v[5] == 1234 and v[6] == 4321


# ---------------------------------------------------------------------------------------------
# RNN

def _np_lstm(x, kernel, bias, h0, c0, forget_bias=1.0):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h, c, outs = h0, c0, []
    for t in range(x.shape[1]):
        z = np.concatenate([x[:, t], h], 1) @ kernel + bias
        i, j, f, o = np.split(z, 4, axis=1)
        c = c * sig(f + forget_bias) + sig(i) * np.tanh(j)
        h = np.tanh(c) * sig(o)
        outs.append(h)
    return np.stack(outs, 1), c, h


def test_dynamic_rnn_basic_lstm_matches_numpy_and_names_variables():
    rng = np.random.RandomState(0)
    xv = rng.randn(2, 5, 3).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 5, 3])
    cell = tf.nn.rnn_cell.BasicLSTMCell(4)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    assert [v.op.name for v in tf.trainable_variables()] == ["rnn/basic_lstm_cell/kernel",
                                                             "rnn/basic_lstm_cell/bias"]
    assert outputs.shape.as_list()[1:] == [5, 4]
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k, b = s.run(tf.trainable_variables())
        out, c, h = s.run([outputs, state.c, state.h], {x: xv})
    ref_out, ref_c, ref_h = _np_lstm(xv, k, b, np.zeros((2, 4)), np.zeros((2, 4)))
    assert np.allclose(out, ref_out, atol=1e-5)
    assert np.allclose(c, ref_c, atol=1e-5) and np.allclose(h, ref_h, atol=1e-5)


def test_dynamic_rnn_sequence_length_copies_state_through():
    rng = np.random.RandomState(1)
    xv = rng.randn(3, 4, 2).astype(np.float32)
    x = tf.constant(xv)
    cell = tf.nn.rnn_cell.GRUCell(3)
    outputs, state = tf.nn.dynamic_rnn(cell, x, sequence_length=[4, 2, 0], dtype=tf.float32)
    full, full_state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")
    assert [v.op.name for v in tf.trainable_variables()] == [
        "rnn/gru_cell/gates/kernel", "rnn/gru_cell/gates/bias",
        "rnn/gru_cell/candidate/kernel", "rnn/gru_cell/candidate/bias"]
    o, s, fo = run([outputs, state, full])
    assert np.allclose(o[0], fo[0], atol=1e-6) and np.allclose(s[0], fo[0, 3], atol=1e-6)
    assert np.allclose(o[1, :2], fo[1, :2], atol=1e-6) and np.all(o[1, 2:] == 0)
    assert np.allclose(s[1], fo[1, 1], atol=1e-6)
    assert np.all(o[2] == 0) and np.all(s[2] == 0)


def test_multi_rnn_cell_time_major_and_static_rnn_agree():
    rng = np.random.RandomState(2)
    xv = rng.randn(3, 2, 2).astype(np.float32)  # time-major
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicRNNCell(3),
                                        tf.nn.rnn_cell.LSTMCell(2)])
    out_d, st_d = tf.nn.dynamic_rnn(cell, tf.constant(xv), time_major=True, dtype=tf.float32)
    assert sorted(v.op.name for v in tf.trainable_variables()) == sorted([
        "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/kernel",
        "rnn/multi_rnn_cell/cell_0/basic_rnn_cell/bias",
        "rnn/multi_rnn_cell/cell_1/lstm_cell/kernel", "rnn/multi_rnn_cell/cell_1/lstm_cell/bias"])
    out_s, st_s = tf.nn.static_rnn(cell, [tf.constant(xv[t]) for t in range(3)],
                                   dtype=tf.float32)
    vd, vs = run([out_d, tf.stack(out_s)])
    assert np.allclose(vd, vs, atol=1e-6)
    with pytest.raises(ValueError, match="you must give a dtype"):
        tf.nn.dynamic_rnn(cell, tf.constant(xv))
    with pytest.raises(ValueError, match="not supported by weft"):
        tf.nn.rnn_cell.LSTMCell(2, num_unit_shards=2)


def test_lstm_cell_peepholes_clip_and_projection_match_numpy():
    rng = np.random.RandomState(5)
    xv = rng.randn(2, 3, 2).astype(np.float32)
    cell = tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True, cell_clip=0.5, num_proj=3,
                                   proj_clip=0.4)
    outputs, state = tf.nn.dynamic_rnn(cell, tf.constant(xv), dtype=tf.float32)
    names = [v.op.name for v in tf.trainable_variables()]
    assert names == ["rnn/lstm_cell/kernel", "rnn/lstm_cell/bias", "rnn/lstm_cell/w_f_diag",
                     "rnn/lstm_cell/w_i_diag", "rnn/lstm_cell/w_o_diag",
                     "rnn/lstm_cell/projection/kernel"]
    assert outputs.shape.as_list() == [2, 3, 3] and cell.state_size == (4, 3)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        k, b, wf, wi, wo, p = s.run(tf.trainable_variables())
        out, c_final = s.run([outputs, state.c])
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c, m = np.zeros((2, 4)), np.zeros((2, 3))
    for t in range(3):
        i, j, f, o = np.split(np.concatenate([xv[:, t], m], 1) @ k + b, 4, axis=1)
        c = np.clip(sig(f + 1.0 + wf * c) * c + sig(i + wi * c) * np.tanh(j), -0.5, 0.5)
        m = np.clip((sig(o + wo * c) * np.tanh(c)) @ p, -0.4, 0.4)
        assert np.allclose(out[:, t], m, atol=1e-5)
    assert np.allclose(c_final, c, atol=1e-5)


def test_dynamic_rnn_gradient_matches_finite_differences():
    rng = np.random.RandomState(3)
    xv = rng.randn(2, 3, 2).astype(np.float64)
    x = tf.placeholder(tf.float64, [2, 3, 2])
    outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), x, dtype=tf.float64)
    loss = tf.reduce_sum(outputs * outputs)
    g, = tf.gradients(loss, [x])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        gv = s.run(g, {x: xv})
        num = np.zeros_like(xv)
        eps = 1e-6
        for idx in np.ndindex(*xv.shape):
            d = np.zeros_like(xv)
            d[idx] = eps
            num[idx] = (s.run(loss, {x: xv + d}) - s.run(loss, {x: xv - d})) / (2 * eps)
    assert np.allclose(gv, num, atol=1e-6)


def test_train_tiny_lstm_with_gradient_descent():
    tf.set_random_seed(7)
    rng = np.random.RandomState(4)
    xv = rng.randn(4, 6, 2).astype(np.float32)
    target = xv.sum(axis=(1, 2)).reshape(4, 1).astype(np.float32) * 0.1
    x = tf.constant(xv)
    outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(5), x, dtype=tf.float32)
    w = tf.get_variable("w", [5, 1], initializer=tf.constant_initializer(0.1))
    pred = tf.matmul(state.h, w)
    loss = tf.reduce_mean(tf.square(pred - target))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        losses = [s.run(loss)]
        for _ in range(30):
            s.run(train)
            losses.append(s.run(loss))
    assert all(b <= a + 1e-7 for a, b in zip(losses, losses[1:5]))
    assert losses[-1] < 0.5 * losses[0]


def test_dropout_wrapper_and_cell_reuse():
    x = tf.constant(np.ones((2, 3, 2), np.float32))
    base = tf.nn.rnn_cell.BasicRNNCell(4)
    kept, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.DropoutWrapper(base, output_keep_prob=1.0), x,
                                dtype=tf.float32)
    dropped, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.DropoutWrapper(base, output_keep_prob=0.5),
                                   x, dtype=tf.float32, scope="rnn")
    assert len(tf.trainable_variables()) == 2  # the wrapped cell's variables, made once
    k, d = run([kept, dropped])
    # tf.nn.dropout keeps each value scaled by 1/keep_prob or zeroes it
    assert np.all(np.isclose(d, 0) | np.isclose(d, 2 * k, atol=1e-6))
    with pytest.raises(ValueError, match="not supported by weft"):
        tf.nn.rnn_cell.DropoutWrapper(base, state_keep_prob=0.5)


def test_session_created_before_a_loop_runs_it():
    """A loop is closed in place (weft_graph_close_loop): a session made before it runs it."""
    s = tf.Session()
    assert s.run(tf.constant(1)) == 1
    x = tf.while_loop(lambda v: v < 3, lambda v: v + 1, [tf.constant(0)])
    assert s.run(x) == 3
    s.close()


def test_doc_example_prints_what_it_says():
    """docs/python.md's "Control flow and RNNs" example, run as written."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    doc = open(os.path.join(root, "docs", "python.md")).read()
    section = doc.split("## Control flow and RNNs", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "['rnn/basic_lstm_cell/kernel', 'rnn/basic_lstm_cell/bias', 'dense/kernel', "
        "'dense/bias']", "45 [1, 4, 9] True"]
