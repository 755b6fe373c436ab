"""tf.sparse_segment_* (SparseSegment*), tf.sparse_to_dense (SparseToDense),
tf.multinomial/tf.random.categorical (Multinomial) and tf.self_adjoint_eig/tf.linalg.eigh
(SelfAdjointEigV2) against numpy references computed here, and their TensorFlow errors."""
import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed_dict=feed)


def np_sparse_segment(data, indices, ids, rows, kind):
    out = np.zeros((rows,) + data.shape[1:], np.float64)
    count = np.zeros(rows)
    for i, s in zip(indices, ids):
        out[s] += data[i]
        count[s] += 1
    div = np.maximum(count, 1)
    if kind == "mean":
        out /= div.reshape((-1,) + (1,) * (data.ndim - 1))
    elif kind == "sqrt_n":
        out /= np.sqrt(div).reshape((-1,) + (1,) * (data.ndim - 1))
    return out


def test_sparse_segment_reductions():
    data = np.arange(15, dtype=np.float32).reshape(5, 3) - 4
    indices, ids = [0, 3, 3, 1], [0, 0, 2, 2]
    for kind, fn, alias in (("sum", tf.sparse_segment_sum, tf.sparse.segment_sum),
                            ("mean", tf.sparse_segment_mean, tf.sparse.segment_mean),
                            ("sqrt_n", tf.sparse_segment_sqrt_n, tf.sparse.segment_sqrt_n)):
        assert fn is alias
        y = fn(data, indices, ids)
        assert y.shape.as_list() == [None, 3]
        y5 = fn(data, indices, ids, num_segments=5)
        assert y5.shape.as_list() == [5, 3]
        got, got5 = run(y, y5)
        np.testing.assert_allclose(got, np_sparse_segment(data, indices, ids, 3, kind), 1e-6)
        np.testing.assert_allclose(got5, np_sparse_segment(data, indices, ids, 5, kind), 1e-6)
    types = [op.type for op in tf.get_default_graph().get_operations()]
    assert "SparseSegmentSqrtNWithNumSegments" in types and "SparseSegmentSum" in types


def test_sparse_segment_errors():
    data = np.ones((4, 2), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=r"Bad: indices\[1\] == 7 out of range"):
        run(tf.sparse_segment_sum(data, [0, 7], [0, 1]))
    with pytest.raises(errors.InvalidArgumentError, match="segment ids are not increasing"):
        run(tf.sparse_segment_mean(data, [0, 1, 2], [1, 0, 2]))
    with pytest.raises(errors.InvalidArgumentError, match="segment ids must be < num_segments"):
        run(tf.sparse_segment_sum(data, [0, 1], [0, 3], num_segments=2))


def test_sparse_to_dense():
    got = run(tf.sparse_to_dense([[0, 1], [2, 0]], [3, 2], [5.0, -1.0], default_value=7.0),
              tf.sparse_to_dense([1, 3], [5], 2), tf.sparse_to_dense(4, [6], True))
    np.testing.assert_array_equal(got[0], [[7, 5], [7, 7], [-1, 7]])
    np.testing.assert_array_equal(got[1], [0, 2, 0, 2, 0])
    np.testing.assert_array_equal(got[2], [False] * 4 + [True, False])
    assert "SparseToDense" in [op.type for op in tf.get_default_graph().get_operations()]
    assert tf.sparse_to_dense([[0], [1]], [2], [1, 2]).shape.as_list() == [2]
    sp = tf.SparseTensor([[1, 1], [0, 0]], [1, 2], [2, 2])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"indices\[1\] = \[0,0\] is out of order"):
        run(tf.sparse.to_dense(sp))
    np.testing.assert_array_equal(run(tf.sparse.to_dense(sp, validate_indices=False)),
                                  [[2, 0], [0, 1]])
    with pytest.raises(errors.InvalidArgumentError, match=r"is out of bounds: need 0 <= index"):
        run(tf.sparse_to_dense([[0, 3]], [2, 2], 1))
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[1\] is repeated"):
        run(tf.sparse_to_dense([[1], [1]], [2], 1))


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_categorical_and_multinomial():
    logits = np.array([[0.0, 1.0, 2.0], [-np.inf, 0.0, 0.0]], np.float32)
    n = 20000
    tf.set_random_seed(3)
    a = tf.random.categorical(logits, n, seed=7)
    b = tf.multinomial(logits, n, seed=7, output_dtype=tf.int32)
    assert a.dtype == tf.int64 and b.dtype == tf.int32
    assert a.shape.as_list() == [2, n]
    assert a.op.name == "categorical/Multinomial" and b.op.name == "multinomial/Multinomial"
    got_a, got_b = run(a, b)
    again = run(a)
    np.testing.assert_array_equal(got_a, again)  # fixed seeds: every session the same numbers
    p = softmax(logits)
    for got in (got_a, got_b):
        assert got.min() >= 0 and got.max() < 3
        assert not np.any(got[1] == 0)  # -inf is never drawn
        freq = np.stack([np.bincount(row, minlength=3) / n for row in got])
        se = np.sqrt(p * (1 - p) / n)
        assert np.all(np.abs(freq - p) <= 5 * se + 1e-3), (freq, p)
    with tf.Session() as sess:  # successive runs of one node differ
        assert not np.array_equal(sess.run(a), sess.run(a))


def test_multinomial_errors():
    ns = tf.placeholder(tf.int32, [])
    with pytest.raises(errors.InvalidArgumentError,
                       match="num_samples should be nonnegative, got -2"):
        run(tf.multinomial([[0.0, 1.0]], ns), feed={ns: -2})
    with pytest.raises(ValueError):
        tf.random.categorical([0.0, 1.0], 3)
    lg = tf.placeholder(tf.float32, [2, None])
    with pytest.raises(errors.InvalidArgumentError, match="num_classes should be positive, got 0"):
        run(tf.random.categorical(lg, 3), feed={lg: np.zeros((2, 0), np.float32)})


def test_self_adjoint_eig():
    rng = np.random.RandomState(5)
    a = rng.uniform(-1, 1, (2, 4, 4))
    a = a + np.swapaxes(a, -1, -2)
    e, v = tf.self_adjoint_eig(a)
    assert tf.linalg.eigh is tf.self_adjoint_eig and tf.linalg.eigvalsh is tf.self_adjoint_eigvals
    vals = tf.linalg.eigvalsh(a.astype(np.float32))
    assert e.shape.as_list() == [2, 4] and v.shape.as_list() == [2, 4, 4]
    assert vals.dtype == tf.float32 and vals.shape.as_list() == [2, 4]
    got_e, got_v, got_vals = run(e, v, vals)
    want = np.linalg.eigvalsh(a)  # ascending, as TensorFlow
    np.testing.assert_allclose(got_e, want, atol=1e-10)
    np.testing.assert_allclose(got_vals, want, atol=1e-5)
    # eigenvectors are unique up to sign: check A v = v diag(e) and orthonormality instead
    np.testing.assert_allclose(a @ got_v, got_v * got_e[:, None, :], atol=1e-10)
    np.testing.assert_allclose(np.swapaxes(got_v, -1, -2) @ got_v, np.broadcast_to(np.eye(4),
                               (2, 4, 4)), atol=1e-10)
    with pytest.raises(errors.InvalidArgumentError, match="Input matrix must be square"):
        x = tf.placeholder(tf.float64)
        run(tf.self_adjoint_eigvals(x), feed={x: np.zeros((2, 3))})
    with pytest.raises(ValueError):
        tf.linalg.eigh(np.zeros((2, 3)))
