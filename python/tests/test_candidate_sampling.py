"""Candidate sampling: tf.nn.log_uniform_candidate_sampler, uniform_candidate_sampler,
compute_accidental_hits, and the word2vec losses nce_loss and sampled_softmax_loss built on them
as TensorFlow 1.15's nn_impl.py builds them. The losses are checked against a numpy rendering of
TensorFlow's formula given the same sampled_values, their gradients against central differences
of the same graph, and a tiny skip-gram model must learn with each. The samplers' statistics are
checked in C by the conformance suite (conformance/cases_candidate.c)."""
import numpy as np
import pytest

import weft.compat.v1 as tf

FLT_MAX = np.finfo(np.float32).max


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def dense(v):
    """A gradient's value as an array (gather's gradient may come back as IndexedSlices)."""
    if hasattr(v, "indices") and hasattr(v, "values"):
        out = np.zeros(tuple(v.dense_shape), dtype=v.values.dtype)
        np.add.at(out, v.indices, v.values)
        return out
    return np.asarray(v)


# ---------------------------------------------------------------------------------------------
# The samplers

def test_sampler_shapes_and_range():
    labels = tf.constant([[1, 2], [3, 40], [0, 7]], dtype=tf.int64)
    s, tec, sec = tf.nn.log_uniform_candidate_sampler(labels, num_true=2, num_sampled=16,
                                                      unique=True, range_max=50, seed=3)
    assert s.dtype == tf.int64 and tec.dtype == tf.float32 and sec.dtype == tf.float32
    assert s.shape.as_list() == [16] and sec.shape.as_list() == [16]
    assert tec.shape.as_list() == [3, 2]
    with tf.Session() as sess:
        sv, tv, ev = sess.run([s, tec, sec])
    assert len(set(sv.tolist())) == 16 and sv.min() >= 0 and sv.max() < 50
    assert tv.shape == (3, 2) and np.all(tv > 0) and np.all(ev > 0)


def test_log_uniform_expected_counts_closed_form():
    """unique=False: expected count = P(k) * num_sampled, P(k) = log((k+2)/(k+1))/log(R+1)."""
    labels = np.array([[0], [5], [99]], dtype=np.int64)
    s, tec, sec = tf.nn.log_uniform_candidate_sampler(labels, 1, 64, False, 100, seed=7)
    with tf.Session() as sess:
        sv, tv, ev = sess.run([s, tec, sec])
    p = lambda k: np.log((k + 2.0) / (k + 1.0)) / np.log(101.0)  # noqa: E731
    np.testing.assert_allclose(tv, p(labels.astype(np.float64)) * 64, rtol=1e-5)
    np.testing.assert_allclose(ev, p(sv.astype(np.float64)) * 64, rtol=1e-5)


def test_uniform_sampler_counts_and_frequencies():
    labels = np.array([[1], [2]], dtype=np.int64)
    s, tec, sec = tf.nn.uniform_candidate_sampler(labels, 1, 20000, False, 10, seed=5)
    with tf.Session() as sess:
        sv, tv, ev = sess.run([s, tec, sec])
    np.testing.assert_allclose(tv, np.full((2, 1), 2000.0), rtol=1e-6)
    np.testing.assert_allclose(ev, np.full(20000, 2000.0), rtol=1e-6)
    counts = np.bincount(sv, minlength=10)
    chi2 = np.sum((counts - 2000.0) ** 2 / 2000.0)
    assert chi2 < 9 + 6 * np.sqrt(18), counts


def test_unique_expected_counts_use_the_number_of_tries():
    """unique=True: 1 - (1 - p)^tries for one whole number of tries >= num_sampled."""
    labels = np.array([[0, 3]], dtype=np.int64)
    s, tec, sec = tf.nn.log_uniform_candidate_sampler(labels, 2, 30, True, 40, seed=11)
    with tf.Session() as sess:
        sv, tv, ev = sess.run([s, tec, sec])
    p = lambda k: np.log((k + 2.0) / (k + 1.0)) / np.log(41.0)  # noqa: E731
    m = int(np.argmin(ev))  # the others may have rounded to 1 in float
    n = int(round(np.log1p(-float(ev[m])) / np.log1p(-p(float(sv[m])))))
    assert n > 30
    np.testing.assert_allclose(ev, -np.expm1(n * np.log1p(-p(sv.astype(np.float64)))),
                               rtol=1e-4)
    np.testing.assert_allclose(tv, -np.expm1(n * np.log1p(-p(labels.astype(np.float64)))),
                               rtol=1e-4)


def test_fixed_seeds_reproduce_and_runs_differ():
    def draw(runs):
        tf.reset_default_graph()
        s, _, _ = tf.nn.log_uniform_candidate_sampler([[1]], 1, 8, True, 1000, seed=42)
        with tf.Session() as sess:
            return [sess.run(s).tolist() for _ in range(runs)]
    a, b = draw(2), draw(2)
    assert a == b
    assert a[0] != a[1]
    tf.reset_default_graph()
    tf.set_random_seed(9)
    s, _, _ = tf.nn.uniform_candidate_sampler([[1]], 1, 8, False, 1000)
    with tf.Session() as sess:
        first = sess.run(s).tolist()
    tf.reset_default_graph()
    tf.set_random_seed(9)
    s, _, _ = tf.nn.uniform_candidate_sampler([[1]], 1, 8, False, 1000)
    with tf.Session() as sess:
        assert sess.run(s).tolist() == first


def test_sampler_errors():
    s = tf.nn.log_uniform_candidate_sampler([[1]], 1, 6, True, 5)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Sampler's range is too small"):
            sess.run(s)
    with pytest.raises(ValueError):
        tf.nn.uniform_candidate_sampler([1, 2], 1, 3, False, 5)  # true_classes must be a matrix


def test_compute_accidental_hits_by_hand():
    idx, ids, w = tf.nn.compute_accidental_hits([[1, 5], [7, 2], [5, 9]], [5, 3, 7, 5, 0], 2)
    with tf.Session() as sess:
        iv, dv, wv = sess.run([idx, ids, w])
    assert iv.dtype == np.int32 and dv.dtype == np.int64 and wv.dtype == np.float32
    assert iv.tolist() == [0, 1, 2] and dv.tolist() == [3, 2, 3]
    assert np.all(wv == -FLT_MAX)


# ---------------------------------------------------------------------------------------------
# The losses against numpy

def ref_logits(W, b, labels, x, sampled, tec, sec, num_true, remove_hits):
    """TensorFlow 1.15's _compute_sampled_logits in numpy float64."""
    true_logits = np.einsum("bd,btd->bt", x, W[labels]) + b[labels]
    sampled_logits = x @ W[sampled].T + b[sampled]
    if remove_hits:
        pos = {int(c): i for i, c in enumerate(sampled)}  # the last position of a candidate
        hits = np.zeros_like(sampled_logits)
        for r in range(labels.shape[0]):
            for t in labels[r]:
                if int(t) in pos:
                    hits[r, pos[int(t)]] = -FLT_MAX
        sampled_logits = sampled_logits + hits
    true_logits = true_logits - np.log(tec)
    sampled_logits = sampled_logits - np.log(sec)
    logits = np.concatenate([true_logits, sampled_logits], 1)
    lab = np.concatenate([np.full_like(true_logits, 1.0 / num_true),
                          np.zeros_like(sampled_logits)], 1)
    return logits, lab


def ref_nce(*args):
    z, lab = ref_logits(*args)
    return np.sum(np.maximum(z, 0) - z * lab + np.log1p(np.exp(-np.abs(z))), axis=1)


def ref_softmax(*args):
    z, lab = ref_logits(*args)
    m = z.max(axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.sum(lab * logp, axis=1)


def problem(num_true, dtype=np.float64, seed=0):
    rng = np.random.RandomState(seed)
    classes, dim, batch = 12, 4, 5
    W = rng.randn(classes, dim).astype(dtype)
    b = rng.randn(classes).astype(dtype) * 0.5
    x = rng.randn(batch, dim).astype(dtype)
    labels = rng.randint(0, classes, size=(batch, num_true)).astype(np.int64)
    labels[0, 0] = 3  # sampled below: an accidental hit
    sampled = np.array([3, 8, 0, 11, 3, 6], dtype=np.int64)  # 3 twice: the last one is hit
    tec = rng.uniform(0.2, 2.0, size=(batch, num_true)).astype(dtype)
    sec = rng.uniform(0.2, 2.0, size=6).astype(dtype)
    return W, b, labels, x, sampled, tec, sec


@pytest.mark.parametrize("loss_name,num_true,remove_hits", [
    ("nce_loss", 1, False), ("nce_loss", 2, True), ("nce_loss", 1, True),
    ("sampled_softmax_loss", 1, True), ("sampled_softmax_loss", 3, True),
    ("sampled_softmax_loss", 2, False)])
def test_losses_match_numpy(loss_name, num_true, remove_hits):
    W, b, labels, x, sampled, tec, sec = problem(num_true, np.float32)
    loss = getattr(tf.nn, loss_name)(
        weights=tf.constant(W), biases=tf.constant(b), labels=tf.constant(labels),
        inputs=tf.constant(x), num_sampled=6, num_classes=12, num_true=num_true,
        sampled_values=(tf.constant(sampled), tf.constant(tec), tf.constant(sec)),
        remove_accidental_hits=remove_hits)
    assert loss.shape.ndims == 1
    with tf.Session() as sess:
        got = sess.run(loss)
    ref = ref_nce if loss_name == "nce_loss" else ref_softmax
    want = ref(W.astype(np.float64), b.astype(np.float64), labels, x.astype(np.float64),
               sampled, tec.astype(np.float64), sec.astype(np.float64), num_true, remove_hits)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("loss_name,num_true", [("nce_loss", 2), ("sampled_softmax_loss", 1),
                                                ("sampled_softmax_loss", 2)])
def test_loss_gradients_match_finite_differences(loss_name, num_true):
    W0, b0, labels, x0, sampled, tec, sec = problem(num_true)
    W = tf.placeholder(tf.float64, W0.shape)
    b = tf.placeholder(tf.float64, b0.shape)
    x = tf.placeholder(tf.float64, x0.shape)
    loss = tf.reduce_sum(getattr(tf.nn, loss_name)(
        weights=W, biases=b, labels=labels, inputs=x, num_sampled=6, num_classes=12,
        num_true=num_true, sampled_values=(sampled, tec, sec), remove_accidental_hits=True))
    grads = tf.gradients(loss, [W, b, x])
    assert all(g is not None for g in grads)
    vals = {W: W0, b: b0, x: x0}
    with tf.Session() as sess:
        got = [dense(g) for g in sess.run(grads, feed_dict=vals)]
        for (ph, v0), g in zip(vals.items(), got):
            num = np.zeros_like(v0)
            eps = 1e-6
            for i in np.ndindex(v0.shape):
                hi, lo = v0.copy(), v0.copy()
                hi[i] += eps
                lo[i] -= eps
                f_hi = sess.run(loss, feed_dict={**vals, ph: hi})
                f_lo = sess.run(loss, feed_dict={**vals, ph: lo})
                num[i] = (f_hi - f_lo) / (2 * eps)
            np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


def test_no_gradient_reaches_the_sampler():
    """The sampled values pass through stop_gradient, as in TensorFlow."""
    W0, b0, labels, x0, sampled, tec, sec = problem(1)
    tec_t = tf.placeholder(tf.float64, tec.shape)
    loss = tf.reduce_sum(tf.nn.nce_loss(W0, b0, labels, x0, 6, 12,
                                        sampled_values=(sampled, tec_t, sec)))
    assert tf.gradients(loss, [tec_t]) == [None]


# ---------------------------------------------------------------------------------------------
# A tiny skip-gram model

@pytest.mark.parametrize("loss_name", ["nce_loss", "sampled_softmax_loss"])
def test_skip_gram_trains(loss_name):
    tf.set_random_seed(1)
    vocab, dim, batch = 40, 8, 32
    rng = np.random.RandomState(3)
    centers = tf.placeholder(tf.int32, [batch])
    contexts = tf.placeholder(tf.int64, [batch, 1])
    emb = tf.Variable(tf.random_uniform([vocab, dim], -1.0, 1.0))
    w = tf.Variable(tf.truncated_normal([vocab, dim], stddev=1.0 / np.sqrt(dim)))
    bias = tf.Variable(tf.zeros([vocab]))
    embed = tf.nn.embedding_lookup(emb, centers)
    loss = tf.reduce_mean(getattr(tf.nn, loss_name)(
        weights=w, biases=bias, labels=contexts, inputs=embed, num_sampled=8,
        num_classes=vocab))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(300):
            c = rng.randint(0, vocab, size=batch)
            # each word's context is its successor: a relation the embeddings can learn
            ctx = ((c + 1) % vocab).reshape(batch, 1)
            _, lv = sess.run([train, loss], feed_dict={centers: c, contexts: ctx})
            losses.append(lv)
    first, last = np.mean(losses[:20]), np.mean(losses[-20:])
    assert np.isfinite(last) and last < 0.5 * first, (first, last)


# ---------------------------------------------------------------------------------------------
# Sharded weights

def shards(full, n, strategy):
    """full's rows split as embedding_lookup's partition_strategy expects them."""
    if strategy == "mod":
        return [full[p::n] for p in range(n)]
    per, extras = divmod(full.shape[0], n)
    sizes = [per + 1 if p < extras else per for p in range(n)]
    return np.split(full, np.cumsum(sizes)[:-1])


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_embedding_lookup_over_shards(strategy):
    full = np.arange(30, dtype=np.float32).reshape(10, 3)
    ids = np.array([[9, 0, 4], [3, 3, 7]], dtype=np.int64)
    parts = [tf.Variable(s) for s in shards(full, 3, strategy)]
    got = tf.nn.embedding_lookup(parts, ids, partition_strategy=strategy)
    grads = tf.gradients(tf.reduce_sum(got * got), parts)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, gv = sess.run([got, grads])
    np.testing.assert_array_equal(out, full[ids])
    dfull = np.zeros_like(full)
    np.add.at(dfull, ids.reshape(-1), 2 * full[ids.reshape(-1)])
    for g, want in zip(gv, shards(dfull, 3, strategy)):
        np.testing.assert_allclose(dense(g), want)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_losses_over_sharded_weights(strategy):
    W, b, labels, x, sampled, tec, sec = problem(2, np.float32)
    kw = dict(biases=tf.constant(b), labels=labels, inputs=x, num_sampled=6, num_classes=12,
              num_true=2, sampled_values=(sampled, tec, sec))
    one = tf.nn.sampled_softmax_loss(weights=tf.constant(W), **kw)
    parts = [tf.constant(s) for s in shards(W, 5, strategy)]
    split = tf.nn.sampled_softmax_loss(weights=parts, partition_strategy=strategy, **kw)
    nce = tf.nn.nce_loss(weights=parts, partition_strategy=strategy, **kw)
    with tf.Session() as sess:
        a, c, d = sess.run([one, split, nce])
    np.testing.assert_allclose(c, a, rtol=1e-6)
    want = ref_nce(W.astype(np.float64), b.astype(np.float64), labels, x.astype(np.float64),
                   sampled, tec.astype(np.float64), sec.astype(np.float64), 2, False)
    np.testing.assert_allclose(d, want, rtol=2e-5, atol=2e-5)
