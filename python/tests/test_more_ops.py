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
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[0,0\] is out of order"):
        run(tf.sparse.to_dense(sp))
    np.testing.assert_array_equal(run(tf.sparse.to_dense(sp, validate_indices=False)),
                                  [[2, 0], [0, 1]])
    with pytest.raises(errors.InvalidArgumentError, match=r"is out of bounds: need 0 <= index"):
        run(tf.sparse_to_dense([[0, 3]], [2, 2], 1))
    with pytest.raises(errors.InvalidArgumentError, match=r"indices\[1\] = \[1\] is repeated"):
        run(tf.sparse_to_dense([[1], [1]], [2], 1))
