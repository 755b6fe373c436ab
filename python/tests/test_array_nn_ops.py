"""compat.v1's array, segment, clipping and special-math functions (array_ops.py) and the added
tf.nn functions against numpy references computed here, their TensorFlow op structure and node
names, their errors, and gradients through them."""
import math

import numpy as np
import pytest

import weft.compat.v1 as tf
from weft import errors

from _docs import check_section


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def run(*fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(list(fetches) if len(fetches) > 1 else fetches[0], feed_dict=feed)


def op_types():
    return [op.type for op in tf.get_default_graph().get_operations()]


RNG = np.random.RandomState(7)


# ---------------------------------------------------------------------------------------------
# Scatter, masks, sorting

def test_scatter_nd_and_tensor_scatter():
    idx = np.array([[0, 1], [2, 0], [0, 1]], np.int32)
    upd = np.array([1.0, 2.0, 3.0], np.float32)
    want = np.zeros([3, 2], np.float32)
    np.add.at(want, tuple(idx.T), upd)
    base = np.arange(6, dtype=np.float32).reshape(3, 2)
    upd2 = np.array([10.0, 20.0], np.float32)
    idx2 = np.array([[0, 0], [2, 1]], np.int32)
    updated, added = base.copy(), base.copy()
    updated[0, 0], updated[2, 1] = 10, 20
    added[0, 0] += 10
    added[2, 1] += 20
    got = run(tf.scatter_nd(idx, upd, [3, 2]),
              tf.tensor_scatter_nd_update(base, idx2, upd2),
              tf.tensor_scatter_nd_add(base, idx2, upd2),
              tf.tensor_scatter_nd_sub(base, idx2, upd2))
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], updated)
    np.testing.assert_array_equal(got[2], added)
    np.testing.assert_array_equal(got[3], 2 * base - added)
    assert tf.tensor_scatter_update is tf.tensor_scatter_nd_update


def test_boolean_mask_structure_axis_and_errors():
    x = RNG.randn(2, 3, 4).astype(np.float32)
    m = np.array([[True, False, True], [False, True, True]])
    m1 = np.array([True, False, True, True])
    got = run(tf.boolean_mask(x, m), tf.boolean_mask(x, m1, axis=2))
    np.testing.assert_array_equal(got[0], x[m])
    np.testing.assert_array_equal(got[1], x[:, :, m1])
    types = op_types()
    assert {"Reshape", "Where", "Squeeze", "GatherV2", "Prod"} <= set(types)
    with pytest.raises(ValueError, match="mask cannot be scalar"):
        tf.boolean_mask(x, True)
    with pytest.raises(ValueError):
        tf.boolean_mask(x, np.ones([2, 4], bool))


def test_sequence_mask():
    lengths = np.array([[1, 3], [0, 2]], np.int32)
    got = run(tf.sequence_mask(lengths), tf.sequence_mask([2, 4], 5, dtype=tf.float32))
    np.testing.assert_array_equal(got[0], np.arange(3) < lengths[..., None])
    np.testing.assert_array_equal(got[1], (np.arange(5) < np.array([[2], [4]])).astype(np.float32))
    with pytest.raises(ValueError, match="maxlen must be scalar"):
        tf.sequence_mask([1, 2], [3, 4])


def test_unique_and_counts():
    x = np.array([4, 1, 4, 2, 1, 4], np.int32)
    y, idx = tf.unique(x)
    y2, idx2, count = tf.unique_with_counts(x, out_idx=tf.int64)
    assert idx2.dtype == tf.int64
    got = run(y, idx, y2, idx2, count)
    np.testing.assert_array_equal(got[0], [4, 1, 2])
    np.testing.assert_array_equal(got[0][got[1]], x)
    np.testing.assert_array_equal(got[2], [4, 1, 2])
    np.testing.assert_array_equal(got[3], [0, 1, 0, 2, 1, 0])
    np.testing.assert_array_equal(got[4], [3, 2, 1])


def test_sort_and_argsort_via_top_k():
    x = RNG.randn(3, 5, 4).astype(np.float32)
    got = run(tf.sort(x), tf.sort(x, axis=1, direction="DESCENDING"), tf.argsort(x, axis=0),
              tf.argsort(x[0, 0], direction="DESCENDING"))
    np.testing.assert_array_equal(got[0], np.sort(x, axis=-1))
    np.testing.assert_array_equal(got[1], -np.sort(-x, axis=1))
    np.testing.assert_array_equal(got[2], np.argsort(x, axis=0))
    np.testing.assert_array_equal(got[3], np.argsort(-x[0, 0]))
    assert "TopKV2" in op_types() and "Transpose" in op_types()
    with pytest.raises(ValueError, match="ASCENDING"):
        tf.sort(x, direction="UP")
    np.testing.assert_array_equal(run(tf.sort(x, axis=tf.constant(1))), np.sort(x, axis=1))
    with pytest.raises(ValueError, match="axis must be a constant scalar"):
        tf.sort(x, axis=tf.placeholder(tf.int32, []))


# ---------------------------------------------------------------------------------------------
# Shapes, reversal, partitioning

def test_broadcast_linspace_meshgrid_roll():
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([10, 20], np.int32)
    gx, gy = tf.meshgrid(a, a[:2])
    ix, iy = tf.meshgrid(a, a[:2], indexing="ij")
    got = run(tf.broadcast_to(a, [2, 3]), tf.linspace(0.0, 1.0, 5), tf.lin_space(-1.0, 1.0, 3),
              gx, gy, ix, iy, tf.roll(np.arange(10), 3, 0),
              tf.roll(np.arange(6).reshape(2, 3), [1, -1], [0, 1]), tf.broadcast_to(b, [3, 2]))
    np.testing.assert_array_equal(got[0], np.broadcast_to(a, [2, 3]))
    np.testing.assert_allclose(got[1], np.linspace(0, 1, 5), rtol=1e-6)
    np.testing.assert_allclose(got[2], np.linspace(-1, 1, 3), rtol=1e-6)
    want = np.meshgrid(a, a[:2])
    np.testing.assert_array_equal(got[3], want[0])
    np.testing.assert_array_equal(got[4], want[1])
    want = np.meshgrid(a, a[:2], indexing="ij")
    np.testing.assert_array_equal(got[5], want[0])
    np.testing.assert_array_equal(got[6], want[1])
    np.testing.assert_array_equal(got[7], np.roll(np.arange(10), 3))
    np.testing.assert_array_equal(got[8], np.roll(np.arange(6).reshape(2, 3), [1, -1], [0, 1]))
    np.testing.assert_array_equal(got[9], np.broadcast_to(b, [3, 2]))
    with pytest.raises(ValueError, match="indexing"):
        tf.meshgrid(a, a, indexing="xx")
    with pytest.raises(TypeError, match="invalid keyword"):
        tf.meshgrid(a, a, sparse=True)


def test_reverse_and_reverse_sequence():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    lengths = np.array([2, 4], np.int64)
    want = x.copy()
    for b, n in enumerate(lengths):
        want[b, :, :n] = x[b, :, :n][:, ::-1]
    got = run(tf.reverse(x, [1, 2]), tf.reverse_v2(x, [0]),
              tf.reverse_sequence(x, lengths, seq_axis=2, batch_axis=0))
    np.testing.assert_array_equal(got[0], x[:, ::-1, ::-1])
    np.testing.assert_array_equal(got[1], x[::-1])
    np.testing.assert_array_equal(got[2], want)


def test_dynamic_partition_stitch_and_invert_permutation():
    data = np.array([10, 20, 30, 40, 50], np.float32)
    parts = np.array([0, 1, 0, 2, 1], np.int32)
    outs = tf.dynamic_partition(data, parts, 3)
    assert len(outs) == 3
    stitched = tf.dynamic_stitch([[0, 2], [1, 4], [3]], outs)
    got = run(outs + [stitched, tf.invert_permutation([2, 0, 3, 1])])
    for p in range(3):
        np.testing.assert_array_equal(got[p], data[parts == p])
    np.testing.assert_array_equal(got[3], data[[0, 2, 1, 4, 3]][np.argsort([0, 2, 1, 4, 3])])
    np.testing.assert_array_equal(got[4], np.argsort([2, 0, 3, 1]))


# ---------------------------------------------------------------------------------------------
# Counting

def test_histogram_bincount_count_nonzero():
    v = RNG.uniform(-1, 6, 50).astype(np.float32)
    arr = np.array([1, 1, 3, 0, 7, 3, 3], np.int32)
    w = RNG.rand(7).astype(np.float32)
    x = np.array([[0, 1.5, 0], [2, 0, -1]], np.float32)
    got = run(tf.histogram_fixed_width(v, [0.0, 5.0], nbins=5), tf.bincount(arr),
              tf.bincount(arr, minlength=10), tf.bincount(arr, maxlength=4),
              tf.bincount(arr, weights=w), tf.count_nonzero(x), tf.count_nonzero(x, axis=1),
              tf.count_nonzero(x, 0, keepdims=True, dtype=tf.int32),
              tf.math.bincount(np.zeros([0], np.int32)))
    want = np.histogram(np.clip(v, 0, 5 - 1e-6), bins=5, range=(0, 5))[0]
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], np.bincount(arr))
    np.testing.assert_array_equal(got[2], np.bincount(arr, minlength=10))
    np.testing.assert_array_equal(got[3], np.bincount(arr[arr < 4]))
    np.testing.assert_allclose(got[4], np.bincount(arr, weights=w), rtol=1e-6)
    assert got[5] == 3 and got[5].dtype == np.int64
    np.testing.assert_array_equal(got[6], [1, 2])
    np.testing.assert_array_equal(got[7], [[1, 1, 1]])
    assert got[7].dtype == np.int32
    assert got[8].shape == (0,)


def test_confusion_matrix_scatter_nd_and_bounds():
    labels = np.array([0, 1, 2, 1, 1], np.int32)
    preds = np.array([0, 2, 2, 1, 2], np.int32)
    w = np.array([1.0, 0.5, 2.0, 1.0, 0.25], np.float32)
    want = np.zeros([3, 3], np.int32)
    np.add.at(want, (labels, preds), 1)
    want_w = np.zeros([4, 4], np.float32)
    np.add.at(want_w, (labels, preds), w)
    cm = tf.confusion_matrix(labels, preds)
    got = run(cm, tf.math.confusion_matrix(labels, preds, num_classes=4, weights=w,
                                           dtype=tf.float32))
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_allclose(got[1], want_w)
    assert "ScatterNd" in op_types()
    with pytest.raises(errors.InvalidArgumentError, match="out of bound"):
        run(tf.confusion_matrix(labels, preds, num_classes=2))
    with pytest.raises(errors.InvalidArgumentError, match="negative"):
        run(tf.confusion_matrix([0, -1], [0, 1]))


# ---------------------------------------------------------------------------------------------
# Segments

def test_segment_reductions():
    data = RNG.randn(6, 2).astype(np.float32)
    ids = np.array([0, 0, 1, 1, 1, 3], np.int32)
    uids = np.array([2, 0, 2, 1, 0, 2], np.int32)
    got = run(tf.segment_mean(data, ids), tf.segment_max(data, ids), tf.segment_min(data, ids),
              tf.segment_prod(data, ids), tf.unsorted_segment_max(data, uids, 4),
              tf.unsorted_segment_min(data, uids, 4), tf.unsorted_segment_prod(data, uids, 4),
              tf.unsorted_segment_mean(data, uids, 4), tf.unsorted_segment_sqrt_n(data, uids, 4))
    for k, (reduce, empty) in enumerate([(np.mean, 0), (np.max, None), (np.min, None),
                                         (np.prod, 1)]):
        for s in (0, 1, 3):
            np.testing.assert_allclose(got[k][s], reduce(data[ids == s], axis=0), rtol=1e-5)
        if empty is not None:
            np.testing.assert_array_equal(got[k][2], [empty, empty])
    for k, reduce in ((4, np.max), (5, np.min), (6, np.prod)):
        for s in (0, 1, 2):
            np.testing.assert_allclose(got[k][s], reduce(data[uids == s], axis=0), rtol=1e-5)
    lowest = np.finfo(np.float32).min
    np.testing.assert_array_equal(got[4][3], [lowest, lowest])
    np.testing.assert_array_equal(got[6][3], [1, 1])
    for s in range(4):
        rows = data[uids == s]
        n = max(len(rows), 1)
        np.testing.assert_allclose(got[7][s], rows.sum(0) / n, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got[8][s], rows.sum(0) / math.sqrt(n), rtol=1e-5, atol=1e-7)
    with pytest.raises(errors.InvalidArgumentError):
        run(tf.segment_max(data, np.array([1, 0, 0, 0, 0, 0], np.int32)))


# ---------------------------------------------------------------------------------------------
# Math

def _lgamma(v):
    return np.vectorize(math.lgamma)(v)


def _igamma_series(a, x, terms=200):
    """P(a, x) from its power series (a reference independent of the core's algorithm)."""
    total, term = 0.0, 1.0 / a
    for n in range(terms):
        total += term
        term *= x / (a + n + 1)
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * total


def _betainc_series(a, b, x, terms=3000):
    """I_x(a, b) from B(x; a, b) = x^a sum_n (1 - b)_n x^n / (n! (a + n))."""
    total, coef = 0.0, 1.0
    for n in range(terms):
        total += coef * x ** n / (a + n)
        coef *= (n + 1 - b) / (n + 1)
    return x ** a * total * math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b))


def test_special_functions():
    a = np.array([0.5, 1.0, 2.5, 4.0])
    x = np.array([0.3, 1.0, 2.0, 5.0])
    b = np.array([2.0, 3.0, 1.5, 2.0])
    xb = np.array([0.2, 0.5, 0.7, 0.9])
    lb_in = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]])
    got = run(tf.igamma(a, x), tf.math.igammac(a, x), tf.betainc(a, b, xb), tf.lbeta(lb_in))
    p = np.array([_igamma_series(ai, xi) for ai, xi in zip(a, x)])
    np.testing.assert_allclose(got[0], p, rtol=1e-8)
    np.testing.assert_allclose(got[1], 1 - p, rtol=1e-8)
    want = [_betainc_series(ai, bi, xi) for ai, bi, xi in zip(a, b, xb)]
    np.testing.assert_allclose(got[2], want, rtol=1e-8)
    np.testing.assert_allclose(got[3], _lgamma(lb_in).sum(-1) - _lgamma(lb_in.sum(-1)),
                               rtol=1e-12)


def test_integer_and_no_nan_division():
    x = np.array([7, -7, 7, -7], np.int32)
    y = np.array([2, 2, -2, -2], np.int32)
    f = np.array([1.0, 0.0, -4.0], np.float32)
    got = run(tf.truncatediv(x, y), tf.truncatemod(x, y), tf.floordiv(x, y),
              tf.math.floordiv(x, y), tf.math.reciprocal_no_nan(f),
              tf.div_no_nan(f, np.array([2.0, 0.0, 0.0], np.float32)),
              tf.math.divide_no_nan(f, f))
    np.testing.assert_array_equal(got[0], np.trunc(x / y).astype(np.int32))
    np.testing.assert_array_equal(got[1], np.fmod(x, y))
    np.testing.assert_array_equal(got[2], x // y)
    np.testing.assert_array_equal(got[3], x // y)
    np.testing.assert_array_equal(got[4], [1.0, 0.0, -0.25])
    np.testing.assert_array_equal(got[5], [0.5, 0.0, 0.0])
    np.testing.assert_array_equal(got[6], [1.0, 0.0, 1.0])


def test_reduce_std_variance():
    x = RNG.randn(3, 4).astype(np.float64)
    got = run(tf.math.reduce_variance(x), tf.math.reduce_std(x, axis=1),
              tf.math.reduce_variance(x, axis=0, keepdims=True))
    np.testing.assert_allclose(got[0], np.var(x), rtol=1e-12)
    np.testing.assert_allclose(got[1], np.std(x, axis=1), rtol=1e-12)
    np.testing.assert_allclose(got[2], np.var(x, axis=0, keepdims=True), rtol=1e-12)


def test_accumulate_n_scalar_mul_and_errors():
    a, b, c = (RNG.randn(2, 3).astype(np.float32) for _ in range(3))
    acc = tf.accumulate_n([a, b, c])
    assert acc.op.type == "AccumulateNV2"
    got = run(acc, tf.accumulate_n([a], name="one"), tf.scalar_mul(2.5, a),
              tf.math.scalar_mul(tf.constant(-1.0), a))
    np.testing.assert_allclose(got[0], a + b + c, rtol=1e-6)
    np.testing.assert_array_equal(got[1], a)
    np.testing.assert_allclose(got[2], 2.5 * a, rtol=1e-6)
    np.testing.assert_array_equal(got[3], -a)
    with pytest.raises(ValueError):
        tf.accumulate_n([])
    with pytest.raises(ValueError):
        tf.accumulate_n([a, np.ones([3, 2], np.float32)])
    with pytest.raises(ValueError, match="Only scalar multiply"):
        tf.scalar_mul([1.0, 2.0], a)


def test_tensordot():
    a = RNG.randn(2, 3, 4).astype(np.float32)
    b = RNG.randn(4, 3, 5).astype(np.float32)
    got = run(tf.tensordot(a, b, [[1, 2], [1, 0]]), tf.tensordot(a, b[:, 0, :], 1),
              tf.linalg.tensordot(a[0], a[1], 0), tf.tensordot(a[0], a[0], [[0, 1], [0, 1]]))
    np.testing.assert_allclose(got[0], np.tensordot(a, b, [[1, 2], [1, 0]]), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.tensordot(a, b[:, 0, :], 1), rtol=1e-5)
    np.testing.assert_allclose(got[2], np.tensordot(a[0], a[1], 0), rtol=1e-5)
    np.testing.assert_allclose(got[3], np.tensordot(a[0], a[0], 2), rtol=1e-5)
    assert "MatMul" in op_types()
    with pytest.raises(ValueError, match="Different number of contraction axes"):
        tf.tensordot(a, b, [[1], [0, 1]])


# ---------------------------------------------------------------------------------------------
# Clipping

def test_clip_by_norm_average_norm_and_global_norm():
    t = RNG.randn(3, 4).astype(np.float32)
    norm = np.sqrt((t ** 2).sum())
    rows = np.sqrt((t ** 2).sum(1, keepdims=True))
    got = run(tf.clip_by_norm(t, 1.0), tf.clip_by_norm(t, 100.0),
              tf.clip_by_norm(t, 0.5, axes=[1]), tf.clip_by_norm(np.zeros([2], np.float32), 1.0),
              tf.clip_by_average_norm(t, 0.1), tf.global_norm([t, None, 2 * t]),
              tf.clip_by_average_norm(t.astype(np.float64), 0.1))
    np.testing.assert_allclose(got[0], t / norm, rtol=1e-5)
    np.testing.assert_allclose(got[1], t, rtol=1e-6)
    np.testing.assert_allclose(got[2], t * 0.5 / np.maximum(rows, 0.5), rtol=1e-5)
    np.testing.assert_array_equal(got[3], [0, 0])
    np.testing.assert_allclose(got[4], t * 0.1 / max(norm / t.size, 0.1), rtol=1e-5)
    np.testing.assert_allclose(got[5], np.sqrt(5) * norm, rtol=1e-5)
    np.testing.assert_allclose(got[6], t * 0.1 / max(norm / t.size, 0.1), rtol=1e-6)
    assert got[6].dtype == np.float64
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.global_norm(tf.constant(t))


def test_clip_by_global_norm_none_indexed_slices_and_names():
    t1 = RNG.randn(3, 2).astype(np.float32)
    t2 = RNG.randn(4).astype(np.float32)
    sl = tf.IndexedSlices(tf.constant(t2[:2]), tf.constant([0, 3]), tf.constant([4]))
    clipped, gnorm = tf.clip_by_global_norm([t1, None, sl], 1.0)
    assert clipped[1] is None
    assert isinstance(clipped[2], tf.IndexedSlices)
    assert clipped[0].name == "clip_by_global_norm/clip_by_global_norm/_0:0"
    assert gnorm.name == "global_norm/global_norm:0"
    norm = np.sqrt((t1 ** 2).sum() + (t2[:2] ** 2).sum())
    got = run(clipped[0], clipped[2].values, clipped[2].indices, gnorm)
    np.testing.assert_allclose(got[0], t1 / norm, rtol=1e-5)
    np.testing.assert_allclose(got[1], t2[:2] / norm, rtol=1e-5)
    np.testing.assert_array_equal(got[2], [0, 3])
    np.testing.assert_allclose(got[3], norm, rtol=1e-6)
    inf_clip, _ = tf.clip_by_global_norm([np.array([np.inf, 1.0], np.float32)], 1.0)
    assert np.isnan(run(inf_clip[0])).all()
    small, n = tf.clip_by_global_norm([t1], 1e3, use_norm=tf.constant(2.0))
    np.testing.assert_allclose(run(small[0]), t1, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# nn

def _conv2d_ref(x, f, stride=1, pad="VALID", dil=1):
    """Direct NHWC cross-correlation (TensorFlow's SAME split: the extra pad after)."""
    kh, kw = f.shape[:2]
    ekh, ekw = (kh - 1) * dil + 1, (kw - 1) * dil + 1
    n, h, w, c = x.shape
    if pad == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
        ph = max((oh - 1) * stride + ekh - h, 0)
        pw = max((ow - 1) * stride + ekw - w, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    h, w = x.shape[1:3]
    oh, ow = (h - ekh) // stride + 1, (w - ekw) // stride + 1
    out = np.zeros([n, oh, ow, f.shape[3]], np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + ekh:dil, j * stride:j * stride + ekw:dil, :]
            out[:, i, j, :] = np.tensordot(patch, f, axes=3)
    return out


def _depthwise_ref(x, f, pad="VALID", dil=1):
    c, m = f.shape[2:]
    outs = [_conv2d_ref(x[..., k:k + 1], f[:, :, k:k + 1, :], pad=pad, dil=dil) for k in range(c)]
    return np.concatenate(outs, axis=-1)


def test_batch_normalization_and_fused_batch_norm():
    x = RNG.randn(4, 3, 3, 2).astype(np.float32)
    scale = np.array([1.5, 0.5], np.float32)
    offset = np.array([0.1, -0.2], np.float32)
    mean = x.mean((0, 1, 2))
    var = x.var((0, 1, 2))
    want = (x - mean) / np.sqrt(var + 1e-3) * scale + offset
    bn = tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)
    bn_plain = tf.nn.batch_normalization(x, mean, var, None, None, 1e-3)
    y, m, v = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
    mv, vv = np.array([0.5, -0.5], np.float32), np.array([2.0, 0.5], np.float32)
    yi, mi, vi = tf.nn.fused_batch_norm(x, scale, offset, mv, vv, epsilon=1e-3,
                                        is_training=False)
    assert y.op.type == "FusedBatchNormV3" and y.op.get_attr("is_training") is True
    got = run(bn, bn_plain, y, m, v, yi, mi, vi)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[3], mean, rtol=1e-5, atol=1e-6)
    # the batch variance output is Bessel-corrected (n / (n - 1)), as TensorFlow's kernels give it
    n = x.size // 2
    np.testing.assert_allclose(got[4], var * n / (n - 1), rtol=1e-4)
    np.testing.assert_allclose(got[5], (x - mv) / np.sqrt(vv + 1e-3) * scale + offset, rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(got[6], mv)
    np.testing.assert_allclose(got[7], vv)
    with pytest.raises(ValueError, match="must be None when is_training"):
        tf.nn.fused_batch_norm(x, scale, offset, mv, vv)
    with pytest.raises(ValueError, match="is_training is False"):
        tf.nn.fused_batch_norm(x, scale, offset, is_training=False)


def test_conv1d_conv2d_transpose_conv3d_and_pool3d():
    x1 = RNG.randn(2, 7, 3).astype(np.float32)
    f1 = RNG.randn(3, 3, 4).astype(np.float32)
    c1 = tf.nn.conv1d(x1, f1, 2, "SAME")
    got = run(c1)
    want = _conv2d_ref(x1[:, None], f1[None], stride=2, pad="SAME")[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert {"ExpandDims", "Conv2D", "Squeeze"} <= set(op_types())
    assert c1.op.name == "conv1d/Squeeze" and c1.op.inputs[0].op.name == "conv1d"

    # conv2d_transpose is the adjoint of conv2d: <conv2d(x, f), y> == <x, conv2d_transpose(y, f)>
    x = RNG.randn(2, 5, 5, 3).astype(np.float32)
    f = RNG.randn(3, 3, 3, 4).astype(np.float32)
    y = RNG.randn(2, 3, 3, 4).astype(np.float32)
    fwd = tf.nn.conv2d(x, f, [1, 2, 2, 1], "SAME")
    back = tf.nn.conv2d_transpose(y, f, [2, 5, 5, 3], [1, 2, 2, 1], "SAME")
    assert back.op.type == "Conv2DBackpropInput" and back.op.name == "conv2d_transpose"
    gf, gb = run(fwd, back)
    assert gb.shape == (2, 5, 5, 3)
    np.testing.assert_allclose((gf * y).sum(), (x * gb).sum(), rtol=1e-4)
    with pytest.raises(ValueError, match="input channels does not match"):
        tf.nn.conv2d_transpose(x, f, [2, 5, 5, 3], [1, 1, 1, 1])

    x3 = RNG.randn(1, 4, 4, 4, 2).astype(np.float32)
    f3 = RNG.randn(2, 2, 2, 2, 3).astype(np.float32)
    got = run(tf.nn.conv3d(x3, f3, [1, 1, 1, 1, 1], "VALID"),
              tf.nn.max_pool3d(x3, 2, 2, "VALID"), tf.nn.avg_pool3d(x3, [1, 2, 2, 2, 1],
                                                                  [1, 2, 2, 2, 1], "VALID"))
    want = np.zeros([1, 3, 3, 3, 3])
    for i in range(3):
        for j in range(3):
            for k in range(3):
                want[:, i, j, k] = np.tensordot(x3[:, i:i + 2, j:j + 2, k:k + 2], f3, axes=4)
    np.testing.assert_allclose(got[0], want, rtol=1e-4, atol=1e-5)
    blocks = x3.reshape(1, 2, 2, 2, 2, 2, 2, 2).transpose(0, 1, 3, 5, 7, 2, 4, 6)
    np.testing.assert_allclose(got[1], blocks.reshape(1, 2, 2, 2, 2, 8).max(-1), rtol=1e-6)
    np.testing.assert_allclose(got[2], blocks.reshape(1, 2, 2, 2, 2, 8).mean(-1), rtol=1e-5)


def test_depthwise_separable_atrous_and_generic_forms():
    x = RNG.randn(2, 7, 7, 3).astype(np.float32)
    df = RNG.randn(3, 3, 3, 2).astype(np.float32)
    pf = RNG.randn(1, 1, 6, 4).astype(np.float32)
    f = RNG.randn(3, 3, 3, 5).astype(np.float32)
    native = tf.nn.depthwise_conv2d_native(x, df, [1, 1, 1, 1], "VALID")
    dw = tf.nn.depthwise_conv2d(x, df, [1, 1, 1, 1], "SAME")
    dw_rate = tf.nn.depthwise_conv2d(x, df, [1, 1, 1, 1], "SAME", rate=[2, 2])
    sep = tf.nn.separable_conv2d(x, df, pf, [1, 1, 1, 1], "VALID")
    atrous = tf.nn.atrous_conv2d(x, f, 2, "VALID")
    atrous_same = tf.nn.atrous_conv2d(x, f, 3, "SAME")
    conv = tf.nn.convolution(x, f, "SAME", strides=[2, 2])
    mx = tf.nn.pool(x, [2, 2], "MAX", "VALID", strides=[2, 2])
    av = tf.nn.pool(x, [3, 2], "AVG", "VALID", dilation_rate=[2, 3])
    got = run(native, dw, dw_rate, sep, atrous, atrous_same, conv, mx, av)
    types = op_types()
    assert {"SpaceToBatchND", "BatchToSpaceND", "DepthwiseConv2dNative"} <= set(types)
    np.testing.assert_allclose(got[0], _depthwise_ref(x, df), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1], _depthwise_ref(x, df, "SAME"), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2], _depthwise_ref(x, df, "SAME", dil=2), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(got[3], np.tensordot(_depthwise_ref(x, df), pf[0, 0], 1),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[4], _conv2d_ref(x, f, dil=2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[5], _conv2d_ref(x, f, pad="SAME", dil=3), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(got[6], _conv2d_ref(x, f, stride=2, pad="SAME"), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(got[7], x[:, :6, :6].reshape(2, 3, 2, 3, 2, 3).max((2, 4)),
                               rtol=1e-6)
    # dilated windows: rows i, i+2, i+4 and columns j, j+3
    want = np.zeros([2, 3, 4, 3], np.float32)
    for i in range(3):
        for j in range(4):
            want[:, i, j] = x[:, i:i + 5:2, j:j + 4:3].mean((1, 2))
    np.testing.assert_allclose(got[8], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid pooling_type"):
        tf.nn.pool(x, [2, 2], "MIN", "VALID")
    with pytest.raises(ValueError, match="SAME padding is not implemented"):
        tf.nn.pool(x, [2, 2], "MAX", "SAME", dilation_rate=[2, 2])
    with pytest.raises(ValueError, match="strides > 1 not supported"):
        tf.nn.convolution(x, f, "SAME", strides=[2, 2], dilation_rate=[2, 2])
    with pytest.raises(ValueError):
        tf.nn.separable_conv2d(x, df, np.ones([2, 1, 6, 4], np.float32), [1, 1, 1, 1], "VALID")


def test_lrn_crelu_relu_layer_weighted_xent():
    x = RNG.randn(2, 3, 3, 6).astype(np.float32)
    sq = np.pad(x ** 2, [(0, 0)] * 3 + [(2, 2)])
    sums = sum(sq[..., k:k + 6] for k in range(5))
    want_lrn = x / (1.0 + 0.1 * sums) ** 0.75
    h = RNG.randn(4, 3).astype(np.float32)
    w = RNG.randn(3, 2).astype(np.float32)
    bias = np.array([0.5, -0.5], np.float32)
    logits = RNG.randn(5).astype(np.float32) * 3
    labels = RNG.rand(5).astype(np.float32)
    got = run(tf.nn.lrn(x, 2, 1.0, 0.1, 0.75),
              tf.nn.local_response_normalization(x, depth_radius=2, alpha=0.1, beta=0.75),
              tf.nn.crelu(h), tf.nn.relu_layer(h, w, bias),
              tf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       pos_weight=2.5))
    np.testing.assert_allclose(got[0], want_lrn, rtol=1e-4)
    np.testing.assert_allclose(got[1], want_lrn, rtol=1e-4)
    np.testing.assert_array_equal(got[2], np.maximum(np.concatenate([h, -h], -1), 0))
    np.testing.assert_allclose(got[3], np.maximum(h @ w + bias, 0), rtol=1e-5, atol=1e-6)
    sig = 1 / (1 + np.exp(-logits.astype(np.float64)))
    want = -(2.5 * labels * np.log(sig) + (1 - labels) * np.log(1 - sig))
    np.testing.assert_allclose(got[4], want, rtol=1e-4)
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.weighted_cross_entropy_with_logits(labels=labels[:3], logits=logits, pos_weight=1.0)


def test_bad_inputs_raise_tensorflows_errors():
    # caught by shape inference while the graph is built: ValueError
    with pytest.raises(ValueError, match="broadcast"):
        tf.broadcast_to([1.0, 2.0, 3.0], [2, 2])
    with pytest.raises(ValueError, match="rank 1"):
        tf.unique(np.zeros([2, 2], np.int32))
    with pytest.raises(ValueError, match="num > 0"):
        tf.linspace(0.0, 1.0, 0)
    with pytest.raises(ValueError, match="rank 5"):
        tf.nn.conv3d(np.zeros([1, 4, 4, 4], np.float32), np.zeros([2, 2, 2, 1, 1], np.float32),
                     [1] * 5, "VALID")
    # caught by the kernels: InvalidArgumentError when the step runs
    for bad in (lambda: tf.invert_permutation([0, 0]),
                lambda: tf.reverse_sequence(np.zeros([2, 4], np.float32), [5, 1], 1, 0),
                lambda: tf.dynamic_partition([1.0, 2.0], [0, 3], 2)[0],
                lambda: tf.scatter_nd([[5]], [1.0], [3]),
                lambda: tf.bincount([-1, 2])):
        tf.reset_default_graph()
        with pytest.raises(errors.InvalidArgumentError):
            run(bad())


def test_gather_nd():
    p = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for idx in ([[1, 2], [0, 1]], [[[1]], [[0]]], [[1, 2, 3]], [[0], [1]]):
        tf.reset_default_graph()
        ii = np.array(idx, np.int32)
        got = run(tf.gather_nd(p, ii))
        np.testing.assert_array_equal(got, p[tuple(np.moveaxis(ii, -1, 0))])
    tf.reset_default_graph()
    with pytest.raises(errors.InvalidArgumentError) as e:
        run(tf.gather_nd(p, [[1, 3]]))
    assert "indices[0] = [1, 3] does not index into param shape [2,3,4]" in str(e.value)


def test_ensure_shape():
    """The static shape merged with the expected one; a run-time shape that does not fit fails
    with TensorFlow's message; the gradient passes through."""
    x = tf.placeholder(tf.float32, [None, None], name="x")
    y = tf.ensure_shape(x, [None, 3])
    assert y.op.type == "EnsureShape" and y.shape.as_list() == [None, 3]
    np.testing.assert_array_equal(run(y, feed={x: np.ones((2, 3), np.float32)}), np.ones((2, 3)))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Shape of tensor .* \[2,4\] is not compatible with expected shape "
                             r"\[\?,3\]"):
        run(y, feed={x: np.ones((2, 4), np.float32)})
    g = tf.gradients(tf.reduce_sum(y * 2.0), x)[0]
    np.testing.assert_array_equal(run(g, feed={x: np.ones((1, 3), np.float32)}), [[2, 2, 2]])
    with pytest.raises(ValueError):
        tf.ensure_shape(tf.constant([1.0, 2.0]), [3])


def test_gather_nd_and_scatter_nd_gradients():
    """GatherNd's gradient scatters dy back (summing repeated indices); ScatterNd's gathers."""
    p = tf.constant(np.arange(12, dtype=np.float64).reshape(3, 4))
    idx = np.array([[0, 1], [2, 3], [0, 1]], np.int64)
    y = tf.gather_nd(p, idx)
    g = tf.gradients(tf.reduce_sum(y * tf.constant([1., 2., 3.], tf.float64)), p)[0]
    u = tf.constant(np.array([1., 2., 3.]))
    sc = tf.scatter_nd(idx, u, tf.constant([3, 4], tf.int64))
    gu = tf.gradients(tf.reduce_sum(sc * p), u)[0]
    want = np.zeros((3, 4))
    want[0, 1], want[2, 3] = 4.0, 2.0
    np.testing.assert_array_equal(run(g), want)
    np.testing.assert_array_equal(run(gu), [1.0, 11.0, 1.0])


def test_setdiff1d_keeps_x_order():
    x = np.array([5, 1, 7, 1, 3, 9, 7], np.int64)
    for y in ([1, 9], [], [5, 1, 7, 3, 9], [4]):
        tf.reset_default_graph()
        out, idx = run(*tf.setdiff1d(x, np.array(y, np.int64), index_dtype=tf.int64))
        # numpy's setdiff1d sorts and dedups; TensorFlow keeps x's order and duplicates
        want_idx = [i for i, v in enumerate(x) if v not in y]
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(out, x[want_idx])
        assert set(out) == set(np.setdiff1d(x, y))
    assert tf.compat.v1.setdiff1d is tf.setdiff1d
    assert op_types().count("ListDiff") == 1  # the last graph's


def test_searchsorted_matches_numpy():
    seq = np.sort(RNG.randint(0, 9, (2, 3, 7)), axis=-1).astype(np.float32)
    vals = RNG.randint(-1, 10, (2, 3, 5)).astype(np.float32)
    for side in ("left", "right"):
        for out_type in (tf.int32, tf.int64):
            tf.reset_default_graph()
            got = run(tf.searchsorted(seq, vals, side=side, out_type=out_type))
            assert got.dtype == out_type.as_numpy_dtype and got.shape == vals.shape
            want = np.array([[np.searchsorted(seq[i, j], vals[i, j], side=side)
                              for j in range(3)] for i in range(2)])
            np.testing.assert_array_equal(got, want)
    tf.reset_default_graph()
    np.testing.assert_array_equal(run(tf.searchsorted([1, 3, 3, 8], [3, 0, 9])),
                                  np.searchsorted([1, 3, 3, 8], [3, 0, 9]))
    with pytest.raises(ValueError, match="side must be either 'right' or 'left'"):
        tf.searchsorted([1.0], [1.0], side="middle")


def test_unravel_index_matches_numpy():
    for idx, dims in (([22, 41, 37], [7, 6]), (1621 % 336, [6, 7, 8]), ([], [3, 4])):
        tf.reset_default_graph()
        idx = np.array(idx, np.int64)
        got = run(tf.unravel_index(idx, np.array(dims, np.int64)))
        np.testing.assert_array_equal(got, np.array(np.unravel_index(idx, dims)))
    tf.reset_default_graph()
    with pytest.raises(errors.InvalidArgumentError, match="index out of bounds"):
        run(tf.unravel_index([3, 12], [3, 4]))


def test_bucketize():
    from weft.compat.v1 import array_ops
    x = np.array([[-3.0, 0.0, 0.5], [10.0, 99.0, 1e6]], np.float32)
    got = run(array_ops._bucketize(x, boundaries=[0.0, 10.0, 100.0]))
    np.testing.assert_array_equal(got, np.searchsorted([0.0, 10.0, 100.0], x, side="right"))
    assert got.dtype == np.int32
    with pytest.raises(errors.InvalidArgumentError, match="Expected sorted boundaries"):
        run(array_ops._bucketize(x, boundaries=[1.0, 0.0]))


def test_cross_matches_numpy():
    a, b = RNG.randn(4, 2, 3), RNG.randn(4, 2, 3)
    np.testing.assert_allclose(run(tf.linalg.cross(a, b)), np.cross(a, b), rtol=1e-12)
    assert tf.cross is tf.linalg.cross
    with pytest.raises(ValueError, match="Dimension must be 3 but is 4"):
        tf.cross(np.ones((2, 4)), np.ones((2, 4)))


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 5)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ba,ca", [(2, 3), (4, 3)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("ij->", [(3, 5)]),
    ("i,j->ij", [(3,), (2,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij", [(2, 3, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 2), (2, 3)]),
    ("i j , j k -> i k", [(2, 3), (3, 2)]),
])
def test_einsum_matches_numpy(eq, shapes):
    ops = [RNG.randn(*s) for s in shapes]
    got = run(tf.einsum(eq, *ops))
    np.testing.assert_allclose(got, np.einsum(eq.replace(" ", ""), *ops), rtol=1e-10,
                               atol=1e-12)
    assert "Einsum" in op_types()


def test_einsum_errors_and_gradient():
    with pytest.raises(ValueError, match="Expected dimension 3 at axis 0"):
        tf.einsum("ij,jk->ik", np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="Indices have incorrect format"):
        tf.einsum("ij->i1", np.ones((2, 3)))
    with pytest.raises(ValueError, match="Got 1 arguments"):
        tf.einsum("ij,jk->ik", np.ones((2, 3)))
    tf.reset_default_graph()
    a = tf.constant(RNG.randn(2, 3))
    b = tf.constant(RNG.randn(3, 4))
    ga, gb = tf.gradients(tf.reduce_sum(tf.einsum("ij,jk->ik", a, b) ** 2), [a, b])
    av, bv, gav, gbv = run(a, b, ga, gb)
    np.testing.assert_allclose(gav, 2 * (av @ bv) @ bv.T, rtol=1e-10)
    np.testing.assert_allclose(gbv, 2 * av.T @ (av @ bv), rtol=1e-10)


def test_absent_names_stay_absent():
    for name in ("cumulative_logsumexp",):
        assert not hasattr(tf, name), name
    for name in ("embedding_lookup_sparse", "safe_embedding_lookup_sparse"):
        assert not hasattr(tf.nn, name), name


# ---------------------------------------------------------------------------------------------
# Gradients through the new wrappers

def _numeric_grad(f, x, eps=1e-3):
    g = np.zeros_like(x, dtype=np.float64)
    flat = x.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = f(x)
        flat[i] = old - eps
        lo = f(x)
        flat[i] = old
        g.reshape(-1)[i] = (hi - lo) / (2 * eps)
    return g


def _check_numeric(loss, xs, arrays, feed=None, eps=1e-4, rtol=1e-4):
    """tf.gradients of the scalar loss against central differences, in float64."""
    grads = tf.gradients(loss, xs)
    feed = dict(feed or {})
    with tf.Session() as sess:
        fd = dict(feed)
        fd.update(zip(xs, arrays))
        got = sess.run(grads, fd)
        for k, (x, arr) in enumerate(zip(xs, arrays)):
            def value(v, x=x):
                fd = dict(feed)
                fd.update(zip(xs, arrays))
                fd[x] = v
                return float(sess.run(loss, fd))
            np.testing.assert_allclose(got[k], _numeric_grad(value, arr.copy(), eps), rtol=rtol,
                                       atol=1e-6)


def test_gradients_batch_normalization_tensordot_clip_by_norm():
    x, scale = RNG.randn(6, 3), np.array([1.0, 2.0, 0.5])
    xt = tf.placeholder(tf.float64, [6, 3])
    st = tf.placeholder(tf.float64, [3])
    mean, var = tf.nn.moments(xt, [0])
    y = tf.nn.batch_normalization(xt, mean, var, tf.constant([0.1, 0.2, 0.3], tf.float64), st,
                                  1e-3)
    _check_numeric(tf.reduce_sum(tf.sin(y)), [xt, st], [x, scale])

    tf.reset_default_graph()
    a, b = RNG.randn(2, 3, 4), RNG.randn(4, 3, 2)
    at, bt = tf.placeholder(tf.float64, a.shape), tf.placeholder(tf.float64, b.shape)
    _check_numeric(tf.reduce_sum(tf.square(tf.tensordot(at, bt, [[1, 2], [1, 0]]))), [at, bt],
                   [a, b])

    tf.reset_default_graph()
    t = RNG.randn(3, 4)
    tt = tf.placeholder(tf.float64, t.shape)
    _check_numeric(tf.reduce_sum(tf.sin(tf.clip_by_norm(tt, 1.5, axes=[1]))), [tt], [t])


def test_gradients_activations_losses_and_reduce_std():
    h, w = RNG.randn(4, 3), RNG.randn(3, 2)
    logits, labels = RNG.randn(5) * 2, RNG.rand(5)
    ht, wt = tf.placeholder(tf.float64, h.shape), tf.placeholder(tf.float64, w.shape)
    lt = tf.placeholder(tf.float64, logits.shape)
    loss = (tf.reduce_sum(tf.square(tf.nn.relu_layer(ht, wt, tf.constant([0.5, -0.5],
                                                                          tf.float64))))
            + tf.reduce_sum(tf.sin(tf.nn.crelu(ht)))
            + tf.reduce_sum(tf.nn.weighted_cross_entropy_with_logits(
                labels=tf.constant(labels), logits=lt, pos_weight=3.0))
            + tf.math.reduce_std(ht))
    _check_numeric(loss, [ht, wt, lt], [h, w, logits])


def test_clip_by_global_norm_training_path():
    """The usual use: clip the gradients, then apply them."""
    w0, b0 = np.array([3.0, 4.0], np.float32), np.array([12.0], np.float32)
    w, b = tf.Variable(w0), tf.Variable(b0)
    loss = tf.reduce_sum(w * w) + tf.reduce_sum(b)
    grads = tf.gradients(loss, [w, b])
    clipped, norm = tf.clip_by_global_norm(grads, 5.0)
    train = tf.train.GradientDescentOptimizer(0.1).apply_gradients(zip(clipped, [w, b]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_norm, _ = sess.run([norm, train])
        got_w, got_b = sess.run([w, b])
    g = np.array([6.0, 8.0, 1.0])
    n = np.linalg.norm(g)
    np.testing.assert_allclose(got_norm, n, rtol=1e-6)
    np.testing.assert_allclose(got_w, w0 - 0.1 * g[:2] * 5.0 / n, rtol=1e-6)
    np.testing.assert_allclose(got_b, b0 - 0.1 * g[2:] * 5.0 / n, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# docs/python.md

DOC_OUTPUTS = [
    "[3. 2. 5.]\n[[1 0 0 0]\n [1 1 1 0]]\n[[0 2 1]\n [1 0 2]]\n[4 1] [0 1 0 0] [3 1]\n"
    "[[ 0.   0.   0. ]\n [ 1.5  2.  -1. ]]\n[[1 0]\n [1 1]]\n[[4. 4.]\n [1. 1.]]\n",
    "['SpaceToBatchND', 'BatchToSpaceND']\n(2, 16, 16, 1) True 1.6321\n",
]


def test_doc_examples_print_what_they_say():
    """docs/python.md's "Array, math and nn functions" examples, run as written."""
    check_section("Array, math and nn functions", DOC_OUTPUTS)


# ---------------------------------------------------------------------------------------------
# Special math: Zeta, Polygamma, Erfinv, Ndtri, the Bessel functions, the zero-guarded Xdivy,
# Xlogy, Xlog1py and MulNoNan, NextAfter, ApproximateEqual, CumulativeLogsumexp; closed forms,
# numpy and series written here, gradients against central differences

def _zeta_series(x, q, n=20000):
    """sum_{k<n} (q+k)^-x plus the integral and half-term of the rest."""
    k = np.arange(n, dtype=np.float64)
    a = q + n
    return np.sum((q + k) ** -x) + a ** (1 - x) / (x - 1) + a ** -x / 2


def test_zeta_closed_forms_series_and_domain():
    x = np.array([2.0, 4.0, 2.0, 3.5, 6.0])
    q = np.array([1.0, 1.0, 0.5, 2.25, 0.75])
    got = run(tf.zeta(x, q))
    want = [math.pi ** 2 / 6, math.pi ** 4 / 90, math.pi ** 2 / 2,
            _zeta_series(3.5, 2.25), _zeta_series(6.0, 0.75)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    edge = run(tf.math.zeta([0.5, 1.0, 2.0, 3.0], [1.0, 1.0, 0.0, 0.0]))
    assert np.isnan(edge[0]) and edge[1] == np.inf and edge[2] == np.inf and np.isnan(edge[3])
    # Broadcasting, float32.
    got = run(tf.zeta(tf.constant([[2.0], [4.0]], tf.float32), tf.constant([1.0, 2.0])))
    assert got.shape == (2, 2) and got.dtype == np.float32
    np.testing.assert_allclose(got[:, 0], [math.pi ** 2 / 6, math.pi ** 4 / 90], rtol=1e-6)


def test_polygamma_is_digamma_and_scaled_zeta():
    x = np.array([0.5, 1.0, 2.5, 7.0])
    p0, p1, p3 = run(tf.polygamma(tf.zeros_like(x), x), tf.math.polygamma(np.ones(4), x),
                     tf.polygamma(3.0 * np.ones(4), x))
    np.testing.assert_allclose(p0, run(tf.digamma(x)), rtol=1e-13)
    np.testing.assert_allclose(p1, [_zeta_series(2, v) for v in x], rtol=1e-10)
    np.testing.assert_allclose(p3, [6 * _zeta_series(4, v) for v in x], rtol=1e-10)
    bad = run(tf.polygamma([0.5, -1.0], [1.0, 1.0]))
    assert np.isnan(bad).all()


def test_erfinv_and_ndtri_invert_erf_and_the_normal_cdf():
    y = np.array([-0.999, -0.5, -1e-8, 0.0, 0.3, 0.9, 0.999999])
    x = run(tf.math.erfinv(y))
    np.testing.assert_allclose([math.erf(v) for v in x], y, rtol=1e-14, atol=1e-16)
    p = np.array([1e-20, 0.001, 0.25, 0.5, 0.975, 0.999999])
    z = run(tf.math.ndtri(p))
    np.testing.assert_allclose([0.5 * math.erfc(-v / math.sqrt(2)) for v in z], p, rtol=1e-12)
    assert abs(z[4] - 1.959963984540054) < 1e-13
    assert z[3] == 0 and not np.signbit(z[3])
    ends = run(tf.math.erfinv([1.0, -1.0, 2.0]), tf.math.ndtri([0.0, 1.0, -0.5]))
    assert list(ends[0][:2]) == [np.inf, -np.inf] and np.isnan(ends[0][2])
    assert list(ends[1][:2]) == [-np.inf, np.inf] and np.isnan(ends[1][2])
    assert run(tf.math.erfinv(tf.constant([0.5], tf.float16))).dtype == np.float16


def _i1_series(x, terms=200):
    t = x / 2.0
    s = t
    for k in range(1, terms):
        t *= (x * x / 4.0) / (k * (k + 1))
        s += t
    return s


def test_bessel_functions_against_numpy_i0_and_a_series():
    x = np.array([-25.0, -3.0, -0.5, 0.0, 0.5, 3.0, 19.0, 21.0, 40.0])
    i0e, i1e, i0, i1 = run(tf.math.bessel_i0e(x), tf.math.bessel_i1e(x),
                           tf.math.bessel_i0(x), tf.math.bessel_i1(x))
    np.testing.assert_allclose(i0e, np.i0(x) * np.exp(-np.abs(x)), rtol=1e-13)
    np.testing.assert_allclose(i1e, [_i1_series(v) * math.exp(-abs(v)) for v in x], rtol=1e-13)
    np.testing.assert_allclose(i0, np.i0(x), rtol=1e-13)
    np.testing.assert_allclose(i1, [_i1_series(v) for v in x], rtol=1e-13)


def test_zero_guarded_ops_follow_tensorflow():
    x = np.array([0.0, 0.0, 0.0, 2.0, -1.0, np.nan])
    y = np.array([0.0, np.nan, np.inf, 4.0, 0.5, 1.0])
    xlogy, xdivy, xlog1py = run(tf.math.xlogy(x, y), tf.math.xdivy(x, y), tf.math.xlog1py(x, y))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(xlogy, [0, 0, 0, 2 * np.log(4.0), -np.log(0.5), np.nan])
        np.testing.assert_array_equal(xdivy, [0, 0, 0, 0.5, -2.0, np.nan])
        np.testing.assert_array_equal(xlog1py, [0, 0, 0, 2 * np.log1p(4.0), -np.log1p(0.5),
                                                np.nan])
    got = run(tf.math.multiply_no_nan([np.inf, np.nan, 3.0, 2.0], [0.0, 0.0, 0.0, 1.5]))
    np.testing.assert_array_equal(got, [0, 0, 0, 3.0])
    with pytest.raises(TypeError):
        tf.math.xlogy(tf.constant([1.0]), tf.constant([1.0], tf.float64))


def test_nextafter_matches_numpy_in_each_float_type():
    for dt in (np.float32, np.float64):
        a = np.array([0.0, 1.0, 1.0, -2.5, 1e30, np.inf], dt)
        b = np.array([1.0, 2.0, 0.0, -np.inf, 0.0, 0.0], dt)
        got = run(tf.math.nextafter(tf.constant(a), tf.constant(b)))
        assert got.dtype == dt
        np.testing.assert_array_equal(got, np.nextafter(a, b))


def test_approximate_equal():
    x = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    y = np.array([1.000001, 2.1, 3.0, np.nan], np.float32)
    np.testing.assert_array_equal(run(tf.math.approximate_equal(x, y)),
                                  [True, False, True, False])
    np.testing.assert_array_equal(run(tf.math.approximate_equal(x, y, tolerance=0.5)),
                                  [True, True, True, False])
    with pytest.raises(ValueError):
        tf.math.approximate_equal(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0]))
    a = tf.placeholder(tf.float32, [None])
    with pytest.raises(errors.InvalidArgumentError):
        run(tf.math.approximate_equal(a, [1.0, 2.0]), feed={a: [1.0, 2.0, 3.0]})


def _cumulative_logsumexp(x, axis, exclusive, reverse):
    x = np.moveaxis(x, axis, -1)
    if reverse:
        x = x[..., ::-1]
    out = np.logaddexp.accumulate(x, axis=-1)
    if exclusive:
        out = np.concatenate([np.full(x.shape[:-1] + (1,), -np.inf), out[..., :-1]], axis=-1)
    if reverse:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)


def test_cumulative_logsumexp_against_numpy_logaddexp():
    x = np.random.RandomState(3).uniform(-5, 5, (3, 4, 5))
    for axis in (0, 1, -1):
        for exclusive in (False, True):
            for reverse in (False, True):
                got = run(tf.math.cumulative_logsumexp(x, axis=axis, exclusive=exclusive,
                                                       reverse=reverse))
                np.testing.assert_allclose(got, _cumulative_logsumexp(x, axis, exclusive,
                                                                      reverse), rtol=1e-13)
    big = run(tf.math.cumulative_logsumexp(tf.constant([1000.0, 1000.0], tf.float32)))
    np.testing.assert_allclose(big, [1000.0, 1000.0 + math.log(2)], rtol=1e-6)


@pytest.mark.parametrize("name,lo,hi", [("xlogy", 0.5, 3), ("xdivy", 0.5, 3),
                                         ("xlog1py", -0.5, 3), ("multiply_no_nan", -2, 2),
                                         ("zeta", 0.5, 3), ("polygamma", 0.5, 3)])
def test_special_gradients_against_central_differences(name, lo, hi):
    rng = np.random.RandomState(7)
    fn = getattr(tf.math, name)
    a_val = {"zeta": np.array([2.5, 3.0, 4.0]), "polygamma": np.array([0.0, 1.0, 2.0])}.get(
        name, rng.uniform(-2, 2, 3))
    b_val = rng.uniform(lo, hi, (2, 3))
    a = tf.placeholder(tf.float64, [3])
    b = tf.placeholder(tf.float64, [2, 3])
    loss = tf.reduce_sum(tf.sin(fn(a, b)))
    ga, gb = tf.gradients(loss, [a, b])
    with tf.Session() as sess:
        def f(av, bv):
            return sess.run(loss, {a: av, b: bv})
        got_b = sess.run(gb, {a: a_val, b: b_val})
        want_b = _numeric_grad(lambda v: f(a_val, v), b_val.copy(), eps=1e-6)
        np.testing.assert_allclose(got_b, want_b, rtol=1e-6, atol=1e-8)
        if name in ("zeta", "polygamma"):
            assert ga is None  # TensorFlow differentiates only q and x
        else:
            got_a = sess.run(ga, {a: a_val, b: b_val})
            want_a = _numeric_grad(lambda v: f(v, b_val), a_val.copy(), eps=1e-6)
            np.testing.assert_allclose(got_a, want_a, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["erfinv", "ndtri", "bessel_i0e", "bessel_i1e",
                                  "cumulative_logsumexp"])
def test_special_unary_gradients_against_central_differences(name):
    x_val = np.array([0.1, 0.35, 0.6, 0.85]) if name in ("erfinv", "ndtri") else \
        np.array([-2.0, -0.3, 0.4, 1.7])
    x = tf.placeholder(tf.float64, [4])
    loss = tf.reduce_sum(tf.sin(getattr(tf.math, name)(x)))
    (g,) = tf.gradients(loss, [x])
    with tf.Session() as sess:
        got = sess.run(g, {x: x_val})
        want = _numeric_grad(lambda v: sess.run(loss, {x: v}), x_val.copy(), eps=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_special_names_in_tensorflow_1_namespaces():
    for name in ("zeta", "polygamma"):
        assert getattr(tf, name) is getattr(tf.math, name)
    for name in ("erfinv", "xlogy", "cumulative_logsumexp", "bessel_i0e", "multiply_no_nan"):
        assert not hasattr(tf, name), name
