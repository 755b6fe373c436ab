"""tf.train.ProximalAdagradOptimizer (dense and IndexedSlices gradients, ref and resource
variables) against a numpy reference of TensorFlow's update, and tf.strings.regex_replace /
regex_full_match / tf.regex_replace with RE2's answers and error messages."""
import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(x, feed=None):
    with tf.Session() as s:
        return s.run(x, feed_dict=feed)


# ---------------------------------------------------------------------------------------------
# ProximalAdagradOptimizer

W0 = np.array([1.0, -2.0, 0.05], dtype=np.float32)
C = np.array([1.0, 3.0, 0.5], dtype=np.float32)


def prox_step(w, acc, g, lr, l1, l2):
    """TensorFlow's ApplyProximalAdagrad functor in float64."""
    acc = acc + g * g
    rate = lr / np.sqrt(acc)
    prox = w - rate * g
    return np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0) / (1 + rate * l2), acc


@pytest.mark.parametrize("resource", [False, True])
@pytest.mark.parametrize("l1,l2", [(0.0, 0.0), (0.05, 0.1)])
def test_proximal_adagrad_dense(resource, l1, l2):
    w = tf.Variable(W0, name="w", use_resource=resource)
    loss = tf.reduce_sum(C * tf.square(w))
    opt = tf.train.ProximalAdagradOptimizer(0.2, initial_accumulator_value=0.1,
                                            l1_regularization_strength=l1,
                                            l2_regularization_strength=l2)
    train = opt.minimize(loss)
    assert [v.op.name for v in opt.variables()] == ["w/ProximalAdagrad"]
    op_types = {op.type for op in tf.get_default_graph().get_operations()}
    assert ("ResourceApplyProximalAdagrad" if resource else "ApplyProximalAdagrad") in op_types
    want, acc = W0.astype(np.float64), np.full(3, 0.1)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(4):
            s.run(train)
            want, acc = prox_step(want, acc, 2 * C * want, 0.2, l1, l2)
        got = s.run(w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if l1 > 0:
        assert got[2] == 0.0  # the l1 threshold holds the small weight at zero


@pytest.mark.parametrize("resource", [False, True])
def test_proximal_adagrad_sparse_sums_repeated_rows(resource):
    w0 = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    w = tf.Variable(w0, name="emb", use_resource=resource)
    values = tf.constant([[1.0, -1.0], [0.5, 2.0], [3.0, 0.25]])
    grad = tf.IndexedSlices(values, tf.constant([2, 0, 2]), tf.constant([4, 2]))
    opt = tf.train.ProximalAdagradOptimizer(0.5, l1_regularization_strength=0.1,
                                            l2_regularization_strength=0.2)
    train = opt.apply_gradients([(grad, w)])
    op_types = {op.type for op in tf.get_default_graph().get_operations()}
    assert ("ResourceSparseApplyProximalAdagrad" if resource
            else "SparseApplyProximalAdagrad") in op_types
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(train)
        got, acc = s.run([w, opt.get_slot(w, "accumulator")])
    # TensorFlow sums the rows of a repeated index before the update (_deduplicate_indexed_slices)
    want, want_acc = w0.astype(np.float64), np.full((4, 2), 0.1)
    g = np.zeros((4, 2))
    g[2] = [4.0, -0.75]
    g[0] = [0.5, 2.0]
    for r in (0, 2):
        want[r], want_acc[r] = prox_step(want[r], want_acc[r], g[r], 0.5, 0.1, 0.2)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(acc, want_acc, rtol=1e-6)


def test_proximal_adagrad_errors():
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    w = tf.Variable([1.0], name="w")
    train = tf.train.ProximalAdagradOptimizer(-0.1).minimize(tf.reduce_sum(w * w))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        with pytest.raises(errors.InvalidArgumentError, match="lr is not a positive scalar"):
            s.run(train)
    assert tf.train.GradientDescentOptimizer(0.1)._apply_sparse is None


# ---------------------------------------------------------------------------------------------
# Regular expressions

def test_regex_replace_static_and_dynamic():
    x = tf.constant(["a1b22c333", "no digits"])
    out = tf.strings.regex_replace(x, r"\d+", "#")
    assert out.op.type == "StaticRegexReplace"
    assert list(run(out)) == [b"a#b#c#", b"no digits"]
    first = tf.strings.regex_replace(x, r"\d+", "#", replace_global=False)
    assert list(run(first)) == [b"a#b22c333", b"no digits"]
    p = tf.placeholder(tf.string, [])
    dyn = tf.strings.regex_replace(x, p, tf.constant(r"<\0>"))
    assert dyn.op.type == "RegexReplace"
    assert list(run(dyn, {p: "[a-c]"})) == [b"<a>1<b>22<c>333", b"no digits"]
    assert run(tf.regex_replace("john smith", r"(\w+) (\w+)", r"\2, \1")) == b"smith, john"


def test_regex_replace_re2_semantics():
    # an empty match right after the previous match is stepped over (RE2's GlobalReplace)
    assert run(tf.strings.regex_replace("abc", "b*", "-")) == b"-a-c-"
    # \w is ASCII, . one UTF-8 character, $ the very end
    assert run(tf.strings.regex_replace("h\u00e9llo", r"\w+", "X")) == "X\u00e9X".encode()
    assert run(tf.strings.regex_replace("\u00e9t\u00e9", ".", "x")) == b"xxx"
    assert run(tf.strings.regex_replace("line\n", "e$", "E")) == b"line\n"


def test_regex_full_match():
    x = tf.constant([["abc", "ab"], ["abcd", ""]])
    out = tf.strings.regex_full_match(x, "ab|abc")
    assert out.op.type == "StaticRegexFullMatch"
    assert out.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run(out), [[True, True], [False, False]])
    p = tf.placeholder(tf.string)
    dyn = tf.strings.regex_full_match(tf.constant(["123", "12a"]), p)
    assert dyn.op.type == "RegexFullMatch"
    np.testing.assert_array_equal(run(dyn, {p: r"\d+"}), [True, False])


@pytest.mark.parametrize("pattern,message", [
    (r"(a)\1", r"Invalid pattern: \(a\)\\1, error: invalid escape sequence: \\1"),
    ("a(?=b)", r"invalid or unsupported Perl syntax: \(\?="),
    ("a(", r"Invalid pattern: a\(, error: "),
])
def test_regex_invalid_patterns(pattern, message):
    with pytest.raises(errors.InvalidArgumentError, match=message):
        run(tf.strings.regex_full_match("a", pattern))
    p = tf.placeholder(tf.string, [])
    with pytest.raises(errors.InvalidArgumentError, match=message):
        run(tf.strings.regex_replace("a", p, "x"), {p: pattern})


def test_regex_rewrite_and_shape_errors():
    with pytest.raises(errors.InvalidArgumentError,
                       match="Rewrite schema requests 2 matches, but the regexp only has 1"):
        run(tf.strings.regex_replace("aa", "(a)", r"\2"))
    with pytest.raises(ValueError, match="pattern"):
        tf.strings.regex_full_match("a", tf.constant(["a", "b"]))
