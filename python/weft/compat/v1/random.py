"""tf.random: TensorFlow 1.x's random namespace (normal, uniform, truncated_normal, shuffle,
gamma, poisson, categorical, the seed functions) over weft's random ops, seeded by TensorFlow's
graph/op seed rules (ops.get_seed)."""
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


# tf.random's names of the candidate samplers (TensorFlow 1.15 exports them under both).
from .nn import (log_uniform_candidate_sampler, uniform_candidate_sampler)  # noqa: E402,F401
