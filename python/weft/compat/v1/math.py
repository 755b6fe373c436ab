"""tf.math: TensorFlow 1.x's math namespace, the same functions as at the top level of
weft.compat.v1 (and tf.nn's softmax family) under their tf.math names."""
from . import array_ops as _array_ops
from . import nn as _nn
from . import ops as _ops

_FROM_OPS = (
    "abs", "acos", "add", "add_n", "argmax", "argmin", "asin", "atan", "atan2", "ceil", "cos",
    "cosh", "cumprod", "cumsum", "digamma", "divide", "equal", "erf", "erfc", "exp", "expm1",
    "floor", "floordiv", "floormod", "greater", "greater_equal", "is_finite", "is_inf", "is_nan",
    "less", "less_equal", "lgamma", "log", "log1p", "log_sigmoid", "logical_and", "logical_not",
    "logical_or", "logical_xor", "maximum", "minimum", "mod", "multiply", "negative",
    "not_equal", "pow", "reciprocal", "reduce_all", "reduce_any", "reduce_logsumexp",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum", "rint", "round",
    "rsqrt", "segment_sum", "sigmoid", "sign", "sin", "sinh", "softplus", "softsign", "sqrt",
    "square", "squared_difference", "subtract", "tan", "tanh", "top_k", "truediv",
    "unsorted_segment_sum",
)
_FROM_NN = ("softmax", "log_softmax", "l2_normalize", "in_top_k")
_FROM_ARRAY_OPS = (
    "accumulate_n", "betainc", "bincount", "confusion_matrix", "count_nonzero", "igamma",
    "igammac", "invert_permutation", "lbeta", "reciprocal_no_nan", "reduce_std",
    "reduce_variance", "scalar_mul", "segment_max", "segment_mean", "segment_min",
    "segment_prod", "truncatediv", "truncatemod", "unsorted_segment_max", "unsorted_segment_mean",
    "unsorted_segment_min", "unsorted_segment_prod", "unsorted_segment_sqrt_n",
    # special math
    "approximate_equal", "bessel_i0", "bessel_i0e", "bessel_i1", "bessel_i1e",
    "cumulative_logsumexp", "erfinv", "multiply_no_nan", "ndtri", "nextafter", "polygamma",
    "xdivy", "xlog1py", "xlogy", "zeta",
)

for _name in _FROM_OPS:
    globals()[_name] = getattr(_ops, _name)
for _name in _FROM_NN:
    globals()[_name] = getattr(_nn, _name)
for _name in _FROM_ARRAY_OPS:
    globals()[_name] = getattr(_array_ops, _name)
divide_no_nan = _array_ops.div_no_nan
del _name

__all__ = list(_FROM_OPS) + list(_FROM_NN) + list(_FROM_ARRAY_OPS) + ["divide_no_nan"]
