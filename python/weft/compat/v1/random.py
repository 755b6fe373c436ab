"""tf.random: TensorFlow 1.x's random namespace (normal, uniform, truncated_normal, shuffle,
gamma, poisson, categorical, the seed functions) over weft's random ops, seeded by TensorFlow's
graph/op seed rules (ops.get_seed); and the stateless ones (stateless_uniform, stateless_normal,
stateless_truncated_normal, stateless_categorical, stateless_multinomial) over the Stateless*
ops, which take their seed as a [2] tensor and give TensorFlow's numbers."""
import numpy as _np

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops

normal = _ops.random_normal
uniform = _ops.random_uniform
truncated_normal = _ops.truncated_normal
set_random_seed = _ops.set_random_seed
get_seed = _ops.get_seed


def _seed_attrs(seed):
    s1, s2 = _ops.get_seed(seed)
    return [("seed", "int", s1 or 0), ("seed2", "int", s2 or 0)]


def shuffle(value, seed=None, name=None):
    """value with its first dimension randomly permuted."""
    value = _ops._to_tensor(value)
    return _ops._op("RandomShuffle", [value], _seed_attrs(seed), name or "RandomShuffle")


def gamma(shape, alpha, beta=None, dtype=_dtypes.float32, seed=None, name=None):
    """Gamma(alpha, beta) samples of shape `shape + alpha.shape` (beta is the rate; alpha and
    beta broadcast); clamped below at the dtype's smallest normal number, as TensorFlow does, so
    that a sample is never 0 for a small alpha."""
    dtype = _dtypes.as_dtype(dtype)
    with _fw.name_scope(name, "random_gamma", []) as scope:
        shape = _ops._to_tensor(shape, dtype=_dtypes.int32)
        alpha = _ops._to_tensor(alpha, dtype=dtype)
        beta = _ops._to_tensor(1 if beta is None else beta, dtype=dtype)
        alpha = _ops.add(alpha, _ops.zeros_like(beta))
        sample = _ops._op("RandomGamma", [shape, alpha], _seed_attrs(seed), "RandomGamma")
        tiny = _ops._to_tensor(_np.finfo(dtype.as_numpy_dtype).tiny, dtype=dtype)
        return _ops.maximum(tiny, _ops.divide(sample, beta), name=scope)


def poisson(lam, shape, dtype=_dtypes.float32, seed=None, name=None):
    """Poisson(lam) samples of shape `shape + lam.shape`, in dtype."""
    dtype = _dtypes.as_dtype(dtype)
    with _fw.name_scope(name, "random_poisson", []) as scope:
        shape = _ops._to_tensor(shape, dtype=_dtypes.int32)
        lam = _ops._to_tensor(lam)
        if not lam.dtype.is_floating and not lam.dtype.is_integer:
            lam = _ops.cast(lam, _dtypes.float32)
        return _ops._op("RandomPoissonV2", [shape, lam],
                        _seed_attrs(seed) + [("dtype", "type", dtype.as_datatype_enum)], scope)


def _multinomial(logits, num_samples, dtype, seed):
    """TensorFlow's multinomial_categorical_impl: one Multinomial node."""
    logits = _ops._to_tensor(logits, name="logits")
    attrs = _seed_attrs(seed)
    if dtype is not None:
        attrs.append(("output_dtype", "type", _dtypes.as_dtype(dtype).as_datatype_enum))
    return _ops._op("Multinomial", [logits, _ops._to_tensor(num_samples, dtype=_dtypes.int32)],
                    attrs, "Multinomial")


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """num_samples class ids per row of logits ([batch, classes]), drawn from softmax(row):
    [batch, num_samples], int64 unless dtype says int32."""
    with _fw.name_scope(name, "categorical", []):
        return _multinomial(logits, num_samples, dtype, seed)


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """tf.multinomial, TensorFlow 1's name of categorical."""
    with _fw.name_scope(name, "multinomial", []):
        return _multinomial(logits, num_samples, output_dtype, seed)


# ---------------------------------------------------------------------------------------------
# Stateless random functions (TensorFlow 1.15's stateless_random_ops.py).

def _shape_tensor(shape):
    if isinstance(shape, (list, tuple)) and not shape:
        return _ops._to_tensor([], dtype=_dtypes.int32)
    if isinstance(shape, (list, tuple, int)):
        return _ops._to_tensor(shape, dtype=_dtypes.int32)
    return _ops._to_tensor(shape)


def _seed_tensor(seed):
    """A Python seed converts as TensorFlow converts it for Tseed's default: to int64."""
    if isinstance(seed, (list, tuple)):
        return _ops._to_tensor(list(seed), dtype=_dtypes.int64)
    return _ops._to_tensor(seed)


def _stateless(op_type, shape, seed, dtype):
    return _ops._op(op_type, [_shape_tensor(shape), _seed_tensor(seed)],
                    [("dtype", "type", dtype.as_datatype_enum)], op_type)


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_dtypes.float32, name=None):
    """Uniform values in [minval, maxval) fully determined by seed (a [2] int32/int64 tensor):
    StatelessRandomUniform scaled for floats, StatelessRandomUniformInt for integers."""
    dtype = _dtypes.as_dtype(dtype)
    if dtype not in (_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64,
                     _dtypes.int32, _dtypes.int64):
        raise ValueError("Invalid dtype %r" % dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("Must specify maxval for integer dtype %r" % dtype)
        maxval = 1
    with _fw.name_scope(name, "stateless_random_uniform", []) as scope:
        shape = _shape_tensor(shape)
        minval = _ops._to_tensor(minval, dtype=dtype, name="min")
        maxval = _ops._to_tensor(maxval, dtype=dtype, name="max")
        if dtype.is_integer:
            return _ops._op("StatelessRandomUniformInt",
                            [shape, _seed_tensor(seed), minval, maxval], (), scope)
        rnd = _stateless("StatelessRandomUniform", shape, seed, dtype)
        return _ops.add(_ops.multiply(rnd, _ops.subtract(maxval, minval, name="sub"),
                                      name="mul"), minval, name=scope)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
    """Normal values fully determined by seed: StatelessRandomNormal * stddev + mean."""
    dtype = _dtypes.as_dtype(dtype)
    with _fw.name_scope(name, "stateless_random_normal", []) as scope:
        mean = _ops._to_tensor(mean, dtype=dtype, name="mean")
        stddev = _ops._to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _stateless("StatelessRandomNormal", shape, seed, dtype)
        return _ops.add(_ops.multiply(rnd, stddev, name="mul"), mean, name=scope)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32,
                               name=None):
    """Normal values within 2 standard deviations, fully determined by seed."""
    dtype = _dtypes.as_dtype(dtype)
    with _fw.name_scope(name, "stateless_truncated_normal", []) as scope:
        mean = _ops._to_tensor(mean, dtype=dtype, name="mean")
        stddev = _ops._to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _stateless("StatelessTruncatedNormal", shape, seed, dtype)
        return _ops.add(_ops.multiply(rnd, stddev, name="mul"), mean, name=scope)


def _stateless_multinomial(logits, num_samples, dtype, seed):
    logits = _ops._to_tensor(logits, name="logits")
    attrs = [("output_dtype", "type", _dtypes.as_dtype(dtype or _dtypes.int64).as_datatype_enum)]
    return _ops._op("StatelessMultinomial",
                    [logits, _ops._to_tensor(num_samples, dtype=_dtypes.int32),
                     _seed_tensor(seed)], attrs, "StatelessMultinomial")


def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64, name=None):
    """num_samples class ids per row of logits, fully determined by seed: [batch, num_samples]."""
    with _fw.name_scope(name, "stateless_categorical", []):
        return _stateless_multinomial(logits, num_samples, dtype, seed)


def stateless_multinomial(logits, num_samples, seed, output_dtype=_dtypes.int64, name=None):
    """TensorFlow 1's (deprecated) name of stateless_categorical."""
    with _fw.name_scope(name, "stateless_multinomial", []):
        return _stateless_multinomial(logits, num_samples, output_dtype, seed)


# tf.random's names of the candidate samplers (TensorFlow 1.15 exports them under both).
from .nn import (log_uniform_candidate_sampler, uniform_candidate_sampler)  # noqa: E402,F401
