"""Stateless random functions: tf.random.stateless_uniform, stateless_normal,
stateless_truncated_normal, stateless_categorical and stateless_multinomial (TensorFlow 1.15's
stateless_random_ops.py over the Stateless* ops).

The numbers are checked against TensorFlow's own published outputs for seed (1, 2) and against a
plain Python rendering of TensorFlow's algorithm (GenerateKey, Philox-4x32-10, the conversions of
random_distributions.h, multinomial_op.cc's CPU stream): exactly for the uniform and integer
values, to float32 rounding for the normals (Python's math works in double). The conformance
suite compares every op and dtype exactly in C (conformance/cases_stateless.c)."""
import math
import struct

import numpy as np
import pytest

import weft.compat.v1 as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


# ---------------------------------------------------------------------------------------------
# The reference

M32 = 0xFFFFFFFF


def philox(key, ctr):
    k0, k1 = key
    c = list(ctr)
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c


class Gen:
    """GenerateKey's key and counter; block(n) is the Philox output at counter + n."""

    def __init__(self, seed0, seed1):
        s0, s1 = seed0 & (2**64 - 1), seed1 & (2**64 - 1)
        mix = philox((0x3EC8F720, 0x02461E29), (s0 & M32, s0 >> 32, s1 & M32, s1 >> 32))
        self.key = (mix[0], mix[1])
        self.ctr = (mix[2] << 64) | (mix[3] << 96)

    def block(self, n):
        c = (self.ctr + n) % 2**128
        return philox(self.key, [(c >> s) & M32 for s in (0, 32, 64, 96)])

    def words(self):
        n = 0
        while True:
            yield from self.block(n)
            n += 1


def unit_float(x):
    return np.float32((x & 0x7FFFFF) / 2.0**23)


def unit_double(x0, x1):
    return (((x0 & 0xFFFFF) << 32) | x1) / 2.0**52


def box_muller_float(x0, x1):
    u1 = max(float(unit_float(x0)), float(np.float32(1e-7)))
    v1 = float(np.float32(2 * math.pi * float(unit_float(x1))))
    r = float(np.float32(math.sqrt(float(np.float32(-2 * float(np.float32(math.log(u1))))))))
    return [np.float32(math.sin(v1) * r), np.float32(math.cos(v1) * r)]


def ref_uniform(shape, seed):
    g, n = Gen(*seed), int(np.prod(shape))
    vals = [unit_float(w) for b in range((n + 3) // 4) for w in g.block(b)]
    return np.array(vals[:n], np.float32).reshape(shape)


def ref_uniform_double(shape, seed):
    g, n = Gen(*seed), int(np.prod(shape))
    vals = []
    for b in range((n + 1) // 2):
        w = g.block(b)
        vals += [unit_double(w[0], w[1]), unit_double(w[2], w[3])]
    return np.array(vals[:n], np.float64).reshape(shape)


def ref_uniform_int(shape, seed, lo, hi, bits):
    g, n = Gen(*seed), int(np.prod(shape))
    vals = []
    for b in range((n + (3 if bits == 32 else 1)) // (4 if bits == 32 else 2)):
        w = g.block(b)
        if bits == 32:
            vals += [lo + x % (hi - lo) for x in w]
        else:
            vals += [lo + (w[2 * k] | w[2 * k + 1] << 32) % (hi - lo) for k in range(2)]
    return np.array(vals[:n], np.int32 if bits == 32 else np.int64).reshape(shape)


def ref_normal(shape, seed):
    g, n = Gen(*seed), int(np.prod(shape))
    vals = []
    for b in range((n + 3) // 4):
        w = g.block(b)
        vals += box_muller_float(w[0], w[1]) + box_muller_float(w[2], w[3])
    return np.array(vals[:n], np.float32).reshape(shape)


def ref_truncated(shape, seed):
    g, n = Gen(*seed), int(np.prod(shape))
    vals = []
    for grp in range((n + 3) // 4):
        sub = Gen(0, 0)
        sub.key, sub.ctr = g.key, g.ctr + grp * 256  # kGeneratorSkipPerOutputGroup
        words, got = sub.words(), []
        while len(got) < 4:
            for v in box_muller_float(next(words), next(words)):
                if abs(v) < 2 and len(got) < 4:
                    got.append(v)
        vals += got
    return np.array(vals[:n], np.float32).reshape(shape)


def ref_categorical(logits, num_samples, seed):
    words = Gen(*seed).words()
    out = np.zeros((logits.shape[0], num_samples), np.int64)
    for b, row in enumerate(logits.astype(np.float64)):
        finite = np.isfinite(row)
        mx = row[finite].max()
        cdf = np.cumsum(np.where(finite, np.exp(row - mx), 0.0))
        for s in range(num_samples):
            u = unit_double(next(words), next(words)) * cdf[-1]
            out[b, s] = int(np.searchsorted(cdf, u, side="right"))
    return out


def run(t, config=None):
    with tf.Session(config=config) as sess:
        return sess.run(t)


# ---------------------------------------------------------------------------------------------
# TensorFlow's published numbers

def test_tf_guide_stateless_normal():
    # tensorflow.org/guide/random_numbers, "Stateless RNGs".
    got = run(tf.random.stateless_normal(shape=[2, 3], seed=[1, 2]))
    want = np.array([[0.5441101, 0.20738031, 0.07356433],
                     [0.04643455, -1.30159, -0.95385665]], np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-8)
    assert got.dtype == np.float32


def test_tf_stateless_random_brightness_docstring():
    # tf.image.stateless_random_brightness(x, 0.2, seed=(1, 2)): 1.0 + delta printed 1.1376241,
    # delta = stateless_uniform([], seed, -0.2, 0.2).
    delta = tf.random.stateless_uniform(shape=[], seed=(1, 2), minval=-0.2, maxval=0.2)
    got = run(tf.constant(1.0) + delta)
    assert got == np.float32("1.1376241")


# ---------------------------------------------------------------------------------------------
# Against the reference

@pytest.mark.parametrize("seed", [(1, 2), (7, 17), (-3, 2**40 + 5), (0, 0)])
def test_uniform_float_exact(seed):
    got = run(tf.random.stateless_uniform([3, 5], seed=seed))
    np.testing.assert_array_equal(got, ref_uniform((3, 5), seed))


def test_uniform_scaled_and_double():
    lo, hi = np.float32(-2.0), np.float32(3.0)
    got = run(tf.random.stateless_uniform([7], seed=[5, 6], minval=-2.0, maxval=3.0))
    np.testing.assert_array_equal(got, ref_uniform((7,), (5, 6)) * (hi - lo) + lo)
    got = run(tf.random.stateless_uniform([5], seed=[5, 6], dtype=tf.float64))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, ref_uniform_double((5,), (5, 6)))


@pytest.mark.parametrize("dtype,bits", [(tf.int32, 32), (tf.int64, 64)])
def test_uniform_int_exact(dtype, bits):
    got = run(tf.random.stateless_uniform([4, 3], seed=[11, -12], minval=-5, maxval=15,
                                          dtype=dtype))
    assert got.dtype == (np.int32 if bits == 32 else np.int64)
    np.testing.assert_array_equal(got, ref_uniform_int((4, 3), (11, -12), -5, 15, bits))
    assert got.min() >= -5 and got.max() < 15


def test_normal_and_truncated_against_reference():
    got = run(tf.random.stateless_normal([5, 5], seed=[3, 4], mean=1.0, stddev=2.0))
    np.testing.assert_allclose(got, ref_normal((5, 5), (3, 4)) * 2 + 1, rtol=1e-6, atol=1e-6)
    t = run(tf.random.stateless_truncated_normal([9, 7], seed=[3, 4]))
    np.testing.assert_allclose(t, ref_truncated((9, 7), (3, 4)), rtol=1e-6, atol=1e-6)
    assert np.abs(t).max() < 2


def test_categorical_and_multinomial():
    logits = np.log(np.array([[0.5, 0.5], [0.1, 0.9]], np.float32))
    got = run(tf.random.stateless_categorical(logits, 9, seed=[7, 17]))
    assert got.dtype == np.int64 and got.shape == (2, 9)
    np.testing.assert_array_equal(got, ref_categorical(logits, 9, (7, 17)))
    same = run(tf.random.stateless_multinomial(logits, 9, seed=[7, 17], output_dtype=tf.int32))
    assert same.dtype == np.int32
    np.testing.assert_array_equal(same, got)
    big = np.array([[0.0, -np.inf, 1.0, 2.0]], np.float32)
    draws = run(tf.random.stateless_categorical(big, 400, seed=[1, 1], dtype=tf.int32))
    assert 1 not in draws
    np.testing.assert_array_equal(draws, ref_categorical(big, 400, (1, 1)))


# ---------------------------------------------------------------------------------------------
# Determinism, errors, namespaces

def test_same_seed_same_values_across_sessions_and_threads():
    u = tf.random.stateless_uniform([300, 301], seed=[123, 456])
    n = tf.random.stateless_truncated_normal([300, 301], seed=[123, 456])
    one = tf.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    four = tf.ConfigProto(intra_op_parallelism_threads=4)
    a, b, c = run([u, n], one), run([u, n], four), run([u, n])
    for x, y in ((a, b), (a, c)):
        np.testing.assert_array_equal(x[0], y[0])
        np.testing.assert_array_equal(x[1], y[1])
    other = run(tf.random.stateless_uniform([300, 301], seed=[123, 457]))
    assert np.mean(other == a[0]) < 0.01
    swapped = run(tf.random.stateless_uniform([300, 301], seed=[456, 123]))
    assert np.mean(swapped == a[0]) < 0.01


def test_seed_dtype_int32_and_int64_agree():
    a = run(tf.random.stateless_uniform([6], seed=tf.constant([-1, 2], tf.int32)))
    b = run(tf.random.stateless_uniform([6], seed=tf.constant([-1, 2], tf.int64)))
    np.testing.assert_array_equal(a, b)


def test_bad_seed_shape():
    seed = tf.placeholder(tf.int64)
    u = tf.random.stateless_uniform([2], seed=seed)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"seed must have shape \[2\], not \[3\]"):
            sess.run(u, {seed: [1, 2, 3]})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"seed must have shape \[2\], not \[\]"):
            sess.run(u, {seed: 5})
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.random.stateless_normal([2], seed=[1, 2, 3])


def test_int_errors():
    with pytest.raises(ValueError, match="Must specify maxval"):
        tf.random.stateless_uniform([2], seed=[1, 2], dtype=tf.int32)
    with pytest.raises(ValueError, match="Invalid dtype"):
        tf.random.stateless_uniform([2], seed=[1, 2], dtype=tf.uint8)
    lo = tf.placeholder(tf.int32, [])
    r = tf.random.stateless_uniform([2], seed=[1, 2], minval=lo, maxval=3, dtype=tf.int32)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Need minval < maxval, got 3 >= 3"):
            sess.run(r, {lo: 3})


def test_namespaces():
    for nm in ("stateless_uniform", "stateless_normal", "stateless_truncated_normal",
               "stateless_categorical", "stateless_multinomial"):
        assert getattr(tf.compat.v1.random, nm) is getattr(tf.random, nm)
