"""tf.nn.ctc_loss, tf.nn.ctc_greedy_decoder, tf.nn.ctc_beam_search_decoder and tf.edit_distance
against references computed here by enumeration (every alignment path of a tiny case), by hand
and by the textbook edit-distance table; gradients through ctc_loss; their errors."""
import itertools
import math

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


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def collapse(path, blank, merge=True):
    out, prev = [], None
    for c in path:
        if c != blank and not (merge and c == prev):
            out.append(c)
        prev = c
    return tuple(out)


def brute_ctc(logits, labels, merge=True):
    """-log p(labels) and its gradient w.r.t. logits [T, C]: every path enumerated."""
    T, C = logits.shape
    y = softmax(logits.astype(np.float64))
    total, occ = 0.0, np.zeros((T, C))
    for path in itertools.product(range(C), repeat=T):
        if collapse(path, C - 1, merge) != tuple(labels):
            continue
        p = np.prod([y[t, c] for t, c in enumerate(path)])
        total += p
        for t, c in enumerate(path):
            occ[t, c] += p
    return -math.log(total), y - occ / total


def sparse_labels(seqs):
    idx = [[b, i] for b, s in enumerate(seqs) for i in range(len(s))]
    vals = [v for s in seqs for v in s]
    return tf.SparseTensor(np.array(idx, np.int64).reshape(-1, 2), np.array(vals, np.int32),
                           [len(seqs), max(len(s) for s in seqs)])


RNG = np.random.RandomState(11)


@pytest.mark.parametrize("merge", [True, False])
def test_ctc_loss_and_gradient_against_enumeration(merge):
    T, B, C = 5, 3, 4
    x = RNG.uniform(-2, 2, (T, B, C)).astype(np.float32)
    seqs, lens = [[0, 1], [2, 2], [1]], [5, 4, 3]
    inp = tf.constant(x)
    loss = tf.nn.ctc_loss(sparse_labels(seqs), inp, lens, ctc_merge_repeated=merge)
    w = np.array([0.5, -1.0, 2.0], np.float32)
    (grad,) = tf.gradients(tf.reduce_sum(loss * w), [inp])
    got_loss, got_grad = run(loss, grad)
    for b in range(B):
        want, g = brute_ctc(x[:lens[b], b], seqs[b], merge)
        np.testing.assert_allclose(got_loss[b], want, rtol=1e-5)
        np.testing.assert_allclose(got_grad[:lens[b], b], w[b] * g, atol=1e-5)
        np.testing.assert_array_equal(got_grad[lens[b]:, b], 0)


def test_op_structure_and_names():
    x = tf.constant(np.zeros((2, 3, 4), np.float32))
    loss = tf.nn.ctc_loss(sparse_labels([[0], [1]]), x, [3, 3], time_major=False)
    assert loss.op.type == "CTCLoss" and loss.op.name == "CTCLoss"
    assert loss.op.inputs[0].op.type == "Transpose"
    assert loss.shape.as_list() == [2]
    decoded, log_prob = tf.nn.ctc_beam_search_decoder(x, [2, 2, 2], beam_width=4, top_paths=2)
    assert len(decoded) == 2 and log_prob.shape.as_list() == [3, 2]
    assert log_prob.op.type == "CTCBeamSearchDecoder"
    decoded, log_prob = tf.nn.ctc_greedy_decoder(x, [2, 2, 2])
    assert decoded[0].indices.shape.as_list() == [None, 2]
    assert log_prob.shape.as_list() == [3, 1]
    h = tf.SparseTensor([[0, 0, 0]], [1], [2, 3, 4])
    t = tf.SparseTensor([[1, 2, 0]], [1], [3, 1, 2])
    d = tf.edit_distance(h, t)
    assert d.op.name == "edit_distance" and d.shape.as_list() == [3, 3]


def test_ctc_loss_tensorflow_example():
    """TensorFlow's own CTC loss example (ctc_loss_op_test's basic case): inputs the log of
    these probabilities, labels 0 1 2 1 0 and 0 1 1 0 over 5 steps, blank 5."""
    probs = np.array(
        [[[0.633766, 0.221185, 0.0917319, 0.0129757, 0.0142857, 0.0260553],
          [0.111121, 0.588392, 0.278779, 0.0055756, 0.00569609, 0.010436],
          [0.0357786, 0.633813, 0.321418, 0.00249248, 0.00272882, 0.0037688],
          [0.0663296, 0.643849, 0.280111, 0.00283995, 0.0035545, 0.00331533],
          [0.458235, 0.396634, 0.123377, 0.00648837, 0.00903441, 0.00623107]],
         [[0.30176, 0.28562, 0.0831517, 0.0862751, 0.0816851, 0.161508],
          [0.24082, 0.397533, 0.0557226, 0.0546814, 0.0557528, 0.19549],
          [0.230246, 0.450868, 0.0389607, 0.038309, 0.0391602, 0.202456],
          [0.280884, 0.429522, 0.0326593, 0.0339046, 0.0326856, 0.190345],
          [0.423286, 0.315517, 0.0338439, 0.0393744, 0.0339315, 0.154046]]], np.float32)
    loss = tf.nn.ctc_loss(sparse_labels([[0, 1, 2, 1, 0], [0, 1, 1, 0]]),
                          tf.constant(np.log(probs)), [5, 5], time_major=False)
    np.testing.assert_allclose(run(loss), [3.34211, 5.42262], atol=1e-5)


def test_ctc_loss_batch_major_and_double():
    x = RNG.uniform(-1, 1, (2, 4, 3))  # [batch, time, classes], float64
    loss = tf.nn.ctc_loss(sparse_labels([[0], [1, 0]]), tf.constant(x), [4, 4], time_major=False)
    got = run(loss)
    assert got.dtype == np.float64
    for b, s in enumerate([[0], [1, 0]]):
        np.testing.assert_allclose(got[b], brute_ctc(x[b], s)[0], rtol=1e-10)


def test_ctc_loss_ignore_longer_and_errors():
    x = np.zeros((2, 2, 3), np.float32)
    labels = sparse_labels([[0, 1, 0], [1]])
    loss = tf.nn.ctc_loss(labels, tf.constant(x), [2, 2], ignore_longer_outputs_than_inputs=True)
    got = run(loss)
    assert got[0] == 0
    np.testing.assert_allclose(got[1], brute_ctc(x[:, 1], [1])[0], rtol=1e-6)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Not enough time for target transition sequence \(required: 3, "
                             r"available: 2\)0You can turn this error into a warning"):
        run(tf.nn.ctc_loss(labels, tf.constant(x), [2, 2]))
    with pytest.raises(errors.InvalidArgumentError, match=r"sequence_length\(0\) <= 2"):
        run(tf.nn.ctc_loss(labels, tf.constant(x), [3, 2]))
    with pytest.raises(TypeError, match="SparseTensor"):
        tf.nn.ctc_loss([[0]], tf.constant(x), [2, 2])


def test_ctc_greedy_decoder_by_hand():
    # best classes per step: entry 0: 0 0 2 1 (blank 2), entry 1: 1 2 1 (3 steps)
    best = [[0, 1], [0, 2], [2, 1], [1, 0]]
    x = np.zeros((4, 2, 3), np.float32)
    for t in range(4):
        for b in range(2):
            x[t, b, best[t][b]] = 1 + t
    for merge, want in [(True, [[0, 1], [1, 1]]), (False, [[0, 0, 1], [1, 1]])]:
        decoded, log_prob = tf.nn.ctc_greedy_decoder(tf.constant(x), [4, 3], merge)
        sp, lp = run(decoded[0], log_prob)
        rows = [[v for (b, _), v in zip(sp.indices, sp.values) if b == r] for r in range(2)]
        assert rows == want
        assert list(sp.dense_shape) == [2, max(len(w) for w in want)]
        np.testing.assert_allclose(lp, [[-10], [-6]])


def test_ctc_beam_search_decoder_exhaustive():
    T, C = 4, 3
    probs = softmax(RNG.uniform(-2, 2, (T, 1, C)))
    x = np.log(probs)
    decoded, log_prob = tf.nn.ctc_beam_search_decoder(tf.constant(x), [T], beam_width=32,
                                                      top_paths=3, merge_repeated=False)
    got = run(decoded + [log_prob])
    scores = {}
    for path in itertools.product(range(C), repeat=T):
        key = collapse(path, C - 1)
        scores[key] = scores.get(key, 0) + np.prod([probs[t, 0, c] for t, c in enumerate(path)])
    best = sorted(scores.items(), key=lambda kv: -kv[1])[:3]
    # TensorFlow's scores take each step's inputs less their maximum.
    offset = x.max(axis=2).sum()
    for p, (labels, prob) in enumerate(best):
        assert tuple(got[p].values) == labels
        np.testing.assert_allclose(got[3][0, p], math.log(prob) - offset, rtol=1e-9)


def test_ctc_beam_search_decoder_tensorflow_example():
    """TensorFlow's own beam search example (ctc_decoder_ops_test): a beam of 2, so pruning
    happens; its expected paths and scores."""
    probs = np.array([[0.30999, 0.309938, 0.0679938, 0.0673362, 0.0708352, 0.173908],
                      [0.215136, 0.439699, 0.0370931, 0.0393967, 0.0381581, 0.230517],
                      [0.199959, 0.489485, 0.0233221, 0.0251417, 0.0233289, 0.238763],
                      [0.279611, 0.452966, 0.0204795, 0.0209126, 0.0194803, 0.20655],
                      [0.51286, 0.288951, 0.0243026, 0.0220788, 0.0219297, 0.129878]],
                     np.float32)
    # An arbitrary offset changes nothing; two steps past the sequence's end are ignored.
    x = np.concatenate([np.log(probs) + 2.0, np.zeros((2, 6), np.float32)])[:, None, :]
    decoded, log_prob = tf.nn.ctc_beam_search_decoder(tf.constant(x), [5], beam_width=2,
                                                      top_paths=2, merge_repeated=False)
    got = run(decoded + [log_prob])
    assert list(got[0].values) == [1, 0] and list(got[1].values) == [0, 1, 0]
    np.testing.assert_allclose(got[2], [[0.584855, 0.389139]], rtol=1e-5)


def test_edit_distance_documented_example():
    hypothesis = tf.SparseTensor([[0, 0, 0], [1, 0, 0]], ["a", "b"], (2, 1, 1))
    truth = tf.SparseTensor([[0, 1, 0], [1, 0, 0], [1, 0, 1], [1, 1, 0]], ["a", "b", "c", "a"],
                            (2, 2, 2))
    np.testing.assert_array_equal(run(tf.edit_distance(hypothesis, truth)),
                                  [[np.inf, 1.0], [0.5, 1.0]])
    np.testing.assert_array_equal(run(tf.edit_distance(hypothesis, truth, normalize=False)),
                                  [[1.0, 1.0], [1.0, 1.0]])


@pytest.mark.parametrize("hyp,truth,normalize,want", [
    # TensorFlow's edit_distance_op_test cases.
    (([[0, 0], [0, 1], [1, 0], [1, 1]], [0, 1, 1, -1], [2, 2]),
     ([[0, 0], [1, 0], [1, 1]], [0, 1, 1], [2, 2]), True, [1.0, 0.5]),
    (([[0, 0], [1, 0], [1, 1]], [10, 10, 11], [2, 2]),
     ([[0, 0], [0, 1], [1, 0], [1, 1]], [1, 2, 1, -1], [2, 3]), False, [2.0, 2.0]),
    ((np.zeros((0, 2)), [], [1, 0]), ([[0, 0]], [0], [1, 1]), True, [1.0]),
    (([[0, 0]], [0], [1, 1]), (np.zeros((0, 2)), [], [1, 0]), True, [np.inf]),
    ((np.zeros((0, 2)), [], [1, 0]), (np.zeros((0, 2)), [], [1, 0]), True, [0.0]),
])
def test_edit_distance_tensorflow_cases(hyp, truth, normalize, want):
    def sparse(t):
        return tf.SparseTensor(np.array(t[0], np.int64).reshape(-1, 2),
                               np.array(t[1], np.int64), t[2])
    got = run(tf.edit_distance(sparse(hyp), sparse(truth), normalize=normalize))
    np.testing.assert_array_equal(got, want)


def levenshtein(a, b):
    d = np.zeros((len(a) + 1, len(b) + 1))
    d[:, 0], d[0, :] = range(len(a) + 1), range(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1,
                          d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
    return d[-1, -1]


def test_edit_distance_against_table():
    seqs_h = [[RNG.randint(0, 3, RNG.randint(0, 5)).tolist() for _ in range(3)] for _ in range(2)]
    seqs_t = [[RNG.randint(0, 3, RNG.randint(1, 5)).tolist() for _ in range(3)] for _ in range(2)]

    def sparse(seqs):
        idx = [[r, c, i] for r in range(2) for c in range(3) for i in range(len(seqs[r][c]))]
        vals = [v for r in range(2) for c in range(3) for v in seqs[r][c]]
        return tf.SparseTensor(np.array(idx, np.int64).reshape(-1, 3), np.array(vals, np.int64),
                               [2, 3, 5])

    got = run(tf.edit_distance(sparse(seqs_h), sparse(seqs_t)))
    want = [[levenshtein(seqs_h[r][c], seqs_t[r][c]) / len(seqs_t[r][c]) for c in range(3)]
            for r in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(TypeError, match="Hypothesis must be a SparseTensor"):
        tf.edit_distance([[1]], sparse(seqs_t))


def test_edit_distance_unsorted_indices_refused():
    h = tf.SparseTensor([[0, 1], [0, 0]], [1, 2], [1, 2])
    t = tf.SparseTensor([[0, 0]], [1], [1, 2])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"hypothesis_indices\[1\] = \[0,0\] is out of order"):
        run(tf.edit_distance(h, t))
