"""tf.random: TensorFlow 1.x's random namespace (normal, uniform, truncated_normal, shuffle,
gamma, poisson, the seed functions) over weft's random ops, seeded by TensorFlow's graph/op seed
rules (ops.get_seed). categorical/multinomial are absent: weft's core has no Multinomial op."""
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
