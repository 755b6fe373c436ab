"""tf.nn: activations, softmax, bias_add, xw_plus_b, convolution and pooling, dropout, l2_loss
and the cross entropies, over weft's ops of the same TensorFlow names."""
from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from .ops import _op, _to_tensor, _same_type, sigmoid, tanh  # noqa: F401 -- tf.nn.sigmoid/tanh


relu = _ops._unary("Relu")
relu6 = _ops._unary("Relu6")
elu = _ops._unary("Elu")
selu = _ops._unary("Selu")
softplus = _ops.softplus
softsign = _ops.softsign
top_k = _ops.top_k


def swish(features, name=None):
    """x * sigmoid(x) (SiLU)."""
    x = _to_tensor(features)
    return _ops.multiply(x, sigmoid(x), name=name or "swish")


silu = swish


def gelu(features, approximate=False, name=None):
    """0.5 x (1 + erf(x / sqrt 2)), or with approximate the tanh form 0.5 x (1 + tanh(sqrt(2 / pi)
    (x + 0.044715 x^3))), as TensorFlow composes them (its Pow(x, 3) runs as products)."""
    x = _to_tensor(features)
    if approximate:
        inner = _ops.multiply(0.7978845608028654,
                              _ops.add(x, _ops.multiply(0.044715, _ops.pow(x, 3.0))))
        return _ops.multiply(_ops.multiply(0.5, x), _ops.add(1.0, tanh(inner)),
                             name=name or "Gelu")
    return _ops.multiply(_ops.multiply(0.5, x),
                         _ops.add(1.0, _ops.erf(_ops.divide(x, 1.4142135623730951))),
                         name=name or "Gelu")


def leaky_relu(features, alpha=0.2, name=None):
    return _op("LeakyRelu", [_to_tensor(features)], [("alpha", "float", alpha)],
               name or "LeakyRelu")


def _softmax_like(op_type, logits, axis, name):
    logits = _to_tensor(logits)
    rank = logits.shape.ndims
    if axis is None or axis == -1 or (rank is not None and axis == rank - 1):
        return _op(op_type, [logits], (), name or op_type)
    if rank is None:
        raise ValueError("%s over axis %d needs a known rank" % (op_type, axis))
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    moved = _ops.transpose(logits, perm)
    return _ops.transpose(_op(op_type, [moved], (), op_type), perm, name=name or "transpose")


def softmax(logits, axis=None, name=None, dim=None):
    return _softmax_like("Softmax", logits, axis if axis is not None else dim, name)


def log_softmax(logits, axis=None, name=None, dim=None):
    return _softmax_like("LogSoftmax", logits, axis if axis is not None else dim, name)


def bias_add(value, bias, data_format=None, name=None):
    value, bias = _same_type(value, bias, "BiasAdd")
    return _op("BiasAdd", [value, bias], [("data_format", "string", data_format or "NHWC")],
               name or "BiasAdd")


def xw_plus_b(x, weights, biases, name=None):
    with _fw.name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        mm = _ops.matmul(x, weights)
        return bias_add(mm, biases, name=scope)


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    if filter is None:
        filter = filters
    x, f = _same_type(input, filter, "Conv2D")
    return _op("Conv2D", [x, f], [("strides", "list_int", list(strides)),
                                  ("padding", "string", padding),
                                  ("use_cudnn_on_gpu", "bool", use_cudnn_on_gpu),
                                  ("data_format", "string", data_format),
                                  ("dilations", "list_int", list(dilations))], name or "Conv2D")


def _pool(op_type, value, ksize, strides, padding, data_format, name):
    def four(v):
        if isinstance(v, int):
            return [1, v, v, 1] if data_format == "NHWC" else [1, 1, v, v]
        return list(v)
    return _op(op_type, [_to_tensor(value)], [("ksize", "list_int", four(ksize)),
                                              ("strides", "list_int", four(strides)),
                                              ("padding", "string", padding),
                                              ("data_format", "string", data_format)],
               name or op_type)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):
    return _pool("MaxPool", value if value is not None else input, ksize, strides, padding,
                 data_format, name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):
    return _pool("AvgPool", value if value is not None else input, ksize, strides, padding,
                 data_format, name)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """x / keep_prob where uniform noise + keep_prob >= 1, else 0 (TensorFlow's scaling)."""
    if keep_prob is None:
        if rate is None:
            raise ValueError("dropout needs keep_prob or rate")
        keep_prob = 1 - rate if not isinstance(rate, _fw.Tensor) else _ops.subtract(1.0, rate)
    if isinstance(keep_prob, (int, float)) and not 0 < keep_prob <= 1:
        raise ValueError("keep_prob must be a scalar tensor or a float in the range (0, 1], got "
                         "%g" % keep_prob)
    with _fw.name_scope(name, "dropout", [x]) as scope:
        x = _to_tensor(x, name="x")
        kp = _to_tensor(keep_prob, dtype=x.dtype.base_dtype, name="keep_prob")
        shape = noise_shape if noise_shape is not None else _ops.shape(x)
        random = _ops.add(kp, _ops.random_uniform(shape, dtype=x.dtype, seed=seed))
        binary = _ops.floor(random)
        return _ops.multiply(_ops.divide(x, kp), binary, name=scope)


def l2_loss(t, name=None):
    return _op("L2Loss", [_to_tensor(t)], (), name or "L2Loss")


def _xent(labels, logits, dim, name, default):
    logits = _to_tensor(logits)
    labels = _to_tensor(labels, dtype=logits.dtype.base_dtype)
    if dim not in (-1, None) and logits.shape.ndims not in (None, dim + 1):
        raise ValueError("softmax_cross_entropy_with_logits over dim %d is not supported by "
                         "weft: transpose the classes to the last axis" % dim)
    return _op("SoftmaxCrossEntropyWithLogits", [logits, labels], (), name or default)[0]


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=-1,
                                         name=None, axis=None):
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits_v2` with named arguments "
                         "(labels=..., logits=..., ...)")
    return _xent(labels, logits, axis if axis is not None else dim, name,
                 "softmax_cross_entropy_with_logits")


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    if _sentinel is not None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=..., ...)")
    labels = _ops.stop_gradient(_to_tensor(labels)) if isinstance(labels, _fw.Tensor) else labels
    return _xent(labels, logits, axis if axis is not None else dim, name,
                 "softmax_cross_entropy_with_logits")


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    if _sentinel is not None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...)")
    logits = _to_tensor(logits)
    labels = _to_tensor(labels)
    if not labels.dtype.is_integer:
        raise ValueError("sparse labels must be int32 or int64, got %s" % labels.dtype.name)
    return _op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], (),
               name or "SparseSoftmaxCrossEntropyWithLogits")[0]


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)), TensorFlow's stable form."""
    if _sentinel is not None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=..., ...)")
    with _fw.name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = _to_tensor(logits, name="logits")
        labels = _to_tensor(labels, dtype=logits.dtype.base_dtype, name="labels")
        zeros = _ops.zeros_like(logits)
        relu_logits = _ops.where(_ops.greater_equal(logits, zeros), logits, zeros)
        neg_abs = _ops.where(_ops.greater_equal(logits, zeros), _ops.negative(logits), logits)
        return _ops.add(_ops.subtract(relu_logits, _ops.multiply(logits, labels)),
                        _ops.log1p(_ops.exp(neg_abs)), name=scope)


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with _fw.name_scope(name, "moments", [x]):
        mean = _ops.reduce_mean(x, axes, keepdims=True, name="mean")
        var = _ops.reduce_mean(_ops.squared_difference(x, _ops.stop_gradient(mean)), axes,
                               keepdims=True, name="variance")
        if not keep:
            mean = _ops.squeeze(mean, axes)
            var = _ops.squeeze(var, axes)
        return mean, var


_FLOAT32 = _dtypes.float32


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """tf.nn.fused_batch_norm (FusedBatchNormV3): y, and the batch mean and variance in
    training or the given ones in inference. Training ignores absent mean/variance, as
    TensorFlow passes them empty."""
    x = _to_tensor(x)
    with _fw.name_scope(name, "FusedBatchNorm", [x, scale, offset]):
        if mean is None:
            mean = _fw.constant([], _FLOAT32)
        if variance is None:
            variance = _fw.constant([], _FLOAT32)
        # TensorFlow raises epsilon to cuDNN's minimum too.
        epsilon = max(float(epsilon), 1.001e-5)
        outs = _op("FusedBatchNormV3",
                   [x, _to_tensor(scale), _to_tensor(offset), _to_tensor(mean),
                    _to_tensor(variance)],
                   [("epsilon", "float", epsilon), ("data_format", "string", data_format),
                    ("is_training", "bool", bool(is_training)),
                    ("exponential_avg_factor", "float", float(exponential_avg_factor))],
                   "FusedBatchNormV3")
        return outs[0], outs[1], outs[2]


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """tf.nn.batch_normalization: (x - mean) * scale / sqrt(variance + epsilon) + offset with
    element-wise ops, so its gradient is the element-wise ops' gradients."""
    with _fw.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = _ops.rsqrt(_ops.add(variance, variance_epsilon))
        if scale is not None:
            inv = _ops.multiply(inv, scale)
        shift = _ops.multiply(mean, inv)
        shift = _ops.subtract(offset, shift) if offset is not None else _ops.negative(shift)
        return _ops.add(_ops.multiply(x, _ops.cast(inv, _to_tensor(x).dtype)), shift)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup over sharded params is not supported by "
                                      "weft: use one variable")
        params = params[0]
    return _ops.gather(params, ids, name=name or "embedding_lookup")


def in_top_k(predictions, targets, k, name=None):
    return _op("InTopKV2", [_to_tensor(predictions), _to_tensor(targets),
                            _to_tensor(k, dtype=_to_tensor(targets).dtype)], (),
               name or "in_top_k")


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    axis = axis if axis is not None else dim
    with _fw.name_scope(name, "l2_normalize", [x]) as scope:
        x = _to_tensor(x, name="x")
        sq = _ops.reduce_sum(_ops.square(x), axis, keepdims=True)
        inv = _ops.rsqrt(_ops.maximum(sq, _to_tensor(epsilon, dtype=x.dtype)))
        return _ops.multiply(x, inv, name=scope)



def _sampled(name):
    def unsupported(*args, **kwargs):
        raise NotImplementedError(
            "tf.nn.%s is not supported by weft: it needs TensorFlow's candidate sampler ops "
            "(LogUniformCandidateSampler, ComputeAccidentalHits), which weft's core does not "
            "have; use the full tf.nn.softmax_cross_entropy_with_logits over all classes "
            "instead" % name)
    unsupported.__name__ = name
    return unsupported


nce_loss = _sampled("nce_loss")
sampled_softmax_loss = _sampled("sampled_softmax_loss")

del _dtypes
