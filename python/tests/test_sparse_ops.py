"""tf.sparse's matmul, reorder, add of two sparse tensors, reshape, concat and slice
(SparseTensorDenseMatMul, SparseReorder, SparseAdd, SparseReshape, SparseConcat, SparseSlice): results against numpy (the sparse tensors densified), TensorFlow's
InvalidArgument messages, tf.gradients to the values and the dense matrix against central
differences, and a wide (linear) model over sparse features trained with GradientDescent."""
import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


# A 3x4 sparse matrix, unsorted, with (1, 2) given twice (the entries add up).
IDX = np.array([[0, 1], [2, 3], [1, 2], [0, 0], [1, 2], [2, 0]], np.int64)
VALS = np.array([1.5, -2.0, 0.5, 3.0, 0.25, -1.0])


def dense_of(idx, vals, shape):
    d = np.zeros(shape, vals.dtype)
    for (i, j), v in zip(idx, vals):
        d[i, j] += v
    return d


@pytest.mark.parametrize("adj_a", [False, True])
@pytest.mark.parametrize("adj_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_sparse_dense_matmul_against_numpy(adj_a, adj_b, dtype):
    rng = np.random.RandomState(3)
    a = dense_of(IDX, VALS.astype(dtype), (3, 4))
    op_a = a.T if adj_a else a
    b = rng.randint(-4, 5, (op_a.shape[1], 5)).astype(dtype)
    b_in = b.T.copy() if adj_b else b
    sp = tf.SparseTensor(IDX, VALS.astype(dtype), [3, 4])
    y = tf.sparse.sparse_dense_matmul(sp, b_in, adjoint_a=adj_a, adjoint_b=adj_b)
    y2 = tf.sparse_tensor_dense_matmul(sp, b_in, adj_a, adj_b)
    assert y.shape.as_list() == [op_a.shape[0], 5]
    with tf.Session() as sess:
        got, got2 = sess.run([y, y2])
    assert got.dtype == dtype
    np.testing.assert_allclose(got, op_a @ b, rtol=1e-6)
    np.testing.assert_array_equal(got, got2)


def test_sparse_dense_matmul_errors():
    sp = tf.SparseTensor(tf.placeholder(tf.int64), tf.placeholder(tf.float32), [2, 3])
    b = tf.placeholder(tf.float32)
    y = tf.sparse.sparse_dense_matmul(sp, b)
    two = np.ones((2, 2), np.float32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"inner dimension does not match: 3 vs\. 2\.  Did you forget a "
                                 r"transpose\?  Dimensions of A: \[2, 3\)\.  Dimensions of B: "
                                 r"\[2,2\]"):
            sess.run(y, {sp.indices: np.zeros((0, 2)), sp.values: [], b: two})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"k \(3\) from index\[1,1\] out of bounds \(>=3\)"):
            sess.run(y, {sp.indices: [[0, 0], [1, 3]], sp.values: [1, 2], b: np.ones((3, 2))})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Number of rows of a_indices does not match number of entries "
                                 "in a_values"):
            sess.run(y, {sp.indices: [[0, 0]], sp.values: [1, 2], b: np.ones((3, 2))})
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 2"):
        tf.sparse.sparse_dense_matmul(tf.SparseTensor(IDX[:1], [1.0], [2, 3]), two)


def check_fd(loss, x, x0, feed, tol=1e-6):
    (grad,) = tf.gradients(loss, [x])
    with tf.Session() as sess:
        got = sess.run(grad, {**feed, x: x0})
        want = np.zeros_like(x0)
        eps = 1e-6
        for i in np.ndindex(*x0.shape):
            hi, lo = x0.copy(), x0.copy()
            hi[i] += eps
            lo[i] -= eps
            want[i] = (sess.run(loss, {**feed, x: hi}) -
                       sess.run(loss, {**feed, x: lo})) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("adj_a", [False, True])
@pytest.mark.parametrize("adj_b", [False, True])
def test_sparse_dense_matmul_gradients(adj_a, adj_b):
    rng = np.random.RandomState(5)
    inner = 3 if adj_a else 4
    b0 = rng.uniform(-1, 1, (5, inner) if adj_b else (inner, 5))
    vals = tf.placeholder(tf.float64, [6])
    b = tf.placeholder(tf.float64, b0.shape)
    y = tf.sparse.sparse_dense_matmul(tf.SparseTensor(IDX, vals, [3, 4]), b, adj_a, adj_b)
    loss = tf.reduce_sum(tf.sin(y))
    check_fd(loss, vals, VALS.copy(), {b: b0})
    check_fd(loss, b, b0, {vals: VALS})
    g_idx, g_shape = tf.gradients(loss, [tf.constant(0), tf.constant(0)])
    assert g_idx is None and g_shape is None


def test_wide_model_trains():
    """A linear model over one-hot-ish sparse features (ids of 3 columns per example into a
    vocabulary of 20): logits = sparse [batch, 20] x weights [20, 1] + bias."""
    rng = np.random.RandomState(7)
    batch, vocab = 32, 20
    ids = np.stack([rng.randint(0, vocab, batch) for _ in range(3)], 1)
    true_w = rng.normal(size=vocab)
    labels = (true_w[ids].sum(1) > 0).astype(np.float32).reshape(-1, 1)
    idx = np.array([[r, ids[r, k]] for r in range(batch) for k in range(3)], np.int64)
    feats = tf.SparseTensor(idx, np.ones(len(idx), np.float32), [batch, vocab])
    w = tf.Variable(tf.zeros([vocab, 1]))
    bias = tf.Variable(0.0)
    logits = tf.sparse.sparse_dense_matmul(feats, w) + bias
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(100):
            sess.run(train)
        last = sess.run(loss)
    assert first == pytest.approx(np.log(2), rel=1e-5)
    assert last < 0.5 * first


def test_reorder_and_its_gradient():
    idx = np.array([[2, 1], [0, 3], [1, 0], [0, 1], [2, 0]], np.int64)
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    sp = tf.sparse.reorder(tf.SparseTensor(idx, vals, [3, 4]))
    sp2 = tf.sparse_reorder(tf.SparseTensorValue(idx, vals, [3, 4]))
    with tf.Session() as sess:
        got, got2 = sess.run([sp, sp2])
    order = np.lexsort((idx[:, 1], idx[:, 0]))
    np.testing.assert_array_equal(got.indices, idx[order])
    np.testing.assert_array_equal(got.values, vals[order])
    np.testing.assert_array_equal(got.dense_shape, [3, 4])
    np.testing.assert_array_equal(got2.values, vals[order])
    x = tf.placeholder(tf.float64, [5])
    out = tf.sparse.reorder(tf.SparseTensor(idx, x, [3, 4])).values
    weights = tf.constant(np.arange(1.0, 6.0))
    check_fd(tf.reduce_sum(tf.sin(out) * weights), x, vals.copy(), {})


def test_add_two_sparse_tensors_with_threshold():
    a_idx = np.array([[0, 1], [1, 0], [1, 3], [2, 2]], np.int64)
    b_idx = np.array([[0, 1], [0, 2], [1, 3], [2, 0], [2, 3]], np.int64)
    a_val = np.array([1.0, 0.5, 2.0, -3.0], np.float32)
    b_val = np.array([-1.0, 0.25, 2.0, 4.0, -0.5], np.float32)
    a = tf.SparseTensor(a_idx, a_val, [3, 4])
    b = tf.SparseTensorValue(b_idx, b_val, [3, 4])
    s0 = tf.sparse.add(a, b)
    s1 = tf.sparse_add(a, b, thresh=0.5)
    s2 = tf.sparse.add(a, b, threshold=5.0)
    assert s0.shape.as_list() == [3, 4]
    with tf.Session() as sess:
        got0, got1, got2, dense0 = sess.run([s0, s1, s2, tf.sparse.to_dense(s0)])
    np.testing.assert_array_equal(dense0, dense_of(a_idx, a_val, (3, 4)) +
                                  dense_of(b_idx, b_val, (3, 4)))
    # (0,1) sums to 0: kept with threshold 0 (|0| >= 0), dropped with 0.5; entries of one
    # operand are never dropped (TensorFlow's kernel thresholds only sums).
    np.testing.assert_array_equal(got0.indices, [[0, 1], [0, 2], [1, 0], [1, 3], [2, 0], [2, 2],
                                                 [2, 3]])
    np.testing.assert_array_equal(got0.values, [0, 0.25, 0.5, 4, 4, -3, -0.5])
    np.testing.assert_array_equal(got1.indices, [[0, 2], [1, 0], [1, 3], [2, 0], [2, 2], [2, 3]])
    np.testing.assert_array_equal(got2.values, [0.25, 0.5, 4, -3, -0.5])
    np.testing.assert_array_equal(got2.dense_shape, [3, 4])
    x = tf.placeholder(tf.float64, [4])
    y = tf.placeholder(tf.float64, [5])
    total = tf.sparse.add(tf.SparseTensor(a_idx, x, [3, 4]), tf.SparseTensor(b_idx, y, [3, 4]))
    loss = tf.reduce_sum(tf.sin(total.values))
    check_fd(loss, x, a_val.astype(np.float64), {y: b_val.astype(np.float64)})
    check_fd(loss, y, b_val.astype(np.float64), {x: a_val.astype(np.float64)})


def test_reshape():
    idx = np.array([[0, 0, 0], [0, 1, 2], [1, 0, 1], [1, 2, 3]], np.int64)
    vals = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    sp = tf.SparseTensor(idx, vals, [2, 3, 4])
    r1 = tf.sparse.reshape(sp, [4, -1])
    r2 = tf.sparse_reshape(sp, [-1])
    assert r1.shape.as_list() == [4, 6] and r2.shape.as_list() == [24]
    shape_in = tf.placeholder(tf.int64, [2])
    r3 = tf.sparse.reshape(sp, shape_in)
    with tf.Session() as sess:
        got1, got2, dense1 = sess.run([r1, r2, tf.sparse.to_dense(r1)])
        got3 = sess.run(r3, {shape_in: [6, 4]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"only one output dimension may be -1, not both 0 and 1"):
            sess.run(r3, {shape_in: [-1, -1]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Input to reshape is a tensor with 24 dense values, but the "
                                 r"requested shape has 25\. input_shape=\[2,3,4\] "
                                 r"output_shape=\[5,5\]"):
            sess.run(r3, {shape_in: [5, 5]})
    full = np.zeros((2, 3, 4), np.float32)
    full[tuple(idx.T)] = vals
    np.testing.assert_array_equal(dense1, full.reshape(4, 6))
    np.testing.assert_array_equal(got1.dense_shape, [4, 6])
    np.testing.assert_array_equal(got2.indices[:, 0], np.ravel_multi_index(idx.T, (2, 3, 4)))
    np.testing.assert_array_equal(got3.indices, np.stack(np.unravel_index(
        np.ravel_multi_index(idx.T, (2, 3, 4)), (6, 4)), 1))
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 24 elements"):
        tf.sparse.reshape(sp, [5, 5])
    x = tf.placeholder(tf.float64, [4])
    out = tf.sparse.reshape(tf.SparseTensor(idx, x, [2, 3, 4]), [6, 4]).values
    check_fd(tf.reduce_sum(tf.sin(out) * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)), x,
             vals.astype(np.float64), {})


def test_concat():
    # TensorFlow's documented example: [2,3] and [2,4] along axis 1, the output row-major.
    a = tf.SparseTensor([[0, 2], [1, 0], [1, 1]], np.array([b"a", b"b", b"c"]), [2, 3])
    b = tf.SparseTensor([[0, 1], [0, 2]], np.array([b"d", b"e"]), [2, 4])
    out = tf.sparse.concat(1, [a, b])
    out_neg = tf.sparse_concat(-1, [a, b])
    assert out.shape.as_list() == [2, 7]
    c = tf.SparseTensor([[0, 0], [2, 1]], [1.0, 2.0], [3, 2])
    d = tf.SparseTensor([[1, 0]], [3.0], [1, 3])
    wide = tf.sparse.concat(1, [c, d], expand_nonconcat_dim=True)
    tall = tf.sparse.concat(0, [c, tf.SparseTensor([[0, 1]], [4.0], [1, 2])])
    shape_in = tf.placeholder(tf.int64, [2])
    dyn = tf.sparse.concat(1, [c, tf.SparseTensor([[1, 0]], [3.0], shape_in)],
                           expand_nonconcat_dim=True)
    with tf.Session() as sess:
        got, got_neg, got_wide, got_tall = sess.run([out, out_neg, wide, tall])
        got_dyn = sess.run(dyn, {shape_in: [1, 3]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Input shapes must match: expected 3 for dimension 0 but got 1 "
                                 "at position 1"):
            sess.run(tf.sparse.concat(1, [c, tf.SparseTensor([[0, 0]], [1.0], shape_in)]),
                     {shape_in: [1, 3]})
    np.testing.assert_array_equal(got.indices, [[0, 2], [0, 4], [0, 5], [1, 0], [1, 1]])
    np.testing.assert_array_equal(got.values, [b"a", b"d", b"e", b"b", b"c"])
    np.testing.assert_array_equal(got.dense_shape, [2, 7])
    np.testing.assert_array_equal(got_neg.indices, got.indices)
    np.testing.assert_array_equal(got_wide.indices, [[0, 0], [1, 2], [2, 1]])
    np.testing.assert_array_equal(got_wide.values, [1.0, 3.0, 2.0])
    np.testing.assert_array_equal(got_wide.dense_shape, [3, 5])
    np.testing.assert_array_equal(got_dyn.indices, got_wide.indices)
    np.testing.assert_array_equal(got_dyn.dense_shape, [3, 5])
    np.testing.assert_array_equal(got_tall.indices, [[0, 0], [2, 1], [3, 1]])
    np.testing.assert_array_equal(got_tall.dense_shape, [4, 2])


def test_slice_and_its_gradient():
    idx = np.array([[0, 0], [0, 3], [1, 1], [2, 0], [2, 4], [3, 2]], np.int64)
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    sp = tf.SparseTensor(idx, vals, [4, 5])
    inside = tf.sparse.slice(sp, [1, 1], [2, 4])
    clipped = tf.sparse_slice(sp, [2, 2], [10, 10])
    with tf.Session() as sess:
        got, got_c, dense = sess.run([inside, clipped, tf.sparse.to_dense(inside)])
    full = dense_of(idx, vals, (4, 5))
    np.testing.assert_array_equal(dense, full[1:3, 1:5])
    np.testing.assert_array_equal(got.indices, [[0, 0], [1, 3]])
    np.testing.assert_array_equal(got.values, [3.0, 5.0])
    np.testing.assert_array_equal(got.dense_shape, [2, 4])
    np.testing.assert_array_equal(got_c.indices, [[0, 2], [1, 0]])
    np.testing.assert_array_equal(got_c.values, [5.0, 6.0])
    np.testing.assert_array_equal(got_c.dense_shape, [2, 3])
    x = tf.placeholder(tf.float64, [6])
    out = tf.sparse.slice(tf.SparseTensor(idx, x, [4, 5]), [0, 0], [3, 4]).values
    check_fd(tf.reduce_sum(tf.sin(out)), x, vals.copy(), {})
