"""tf.nn: activations, softmax, bias_add, xw_plus_b, convolution and pooling, dropout, l2_loss
and the cross entropies, over weft's ops of the same TensorFlow names."""
import numpy as _np

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


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """The frequency-weighted mean and variance of x over axes (TensorFlow's two-pass
    formula: sum(w * x) / sum(w), then sum(w * (x - mean)^2) / sum(w))."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with _fw.name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = _to_tensor(x, name="x")
        frequency_weights = _to_tensor(frequency_weights, name="frequency_weights")
        needs_cast = x.dtype.base_dtype == _dtypes.float16
        if needs_cast:
            x = _ops.cast(x, _dtypes.float32)
        if frequency_weights.dtype.base_dtype != x.dtype.base_dtype:
            frequency_weights = _ops.cast(frequency_weights, x.dtype.base_dtype)
        weighted_input_sum = _ops.reduce_sum(frequency_weights * x, axes,
                                             name="weighted_input_sum", keepdims=True)
        broadcasted_weights = frequency_weights + _ops.zeros_like(x)
        sum_of_weights = _ops.reduce_sum(broadcasted_weights, axes, name="sum_of_weights",
                                         keepdims=True)
        divisor = _ops.reciprocal(sum_of_weights, name="inv_weight_sum")
        weighted_mean = _ops.multiply(weighted_input_sum, divisor)
        weighted_distsq = _ops.reduce_sum(
            frequency_weights * _ops.squared_difference(x, weighted_mean), axes,
            name="weighted_distsq", keepdims=True)
        weighted_variance = _ops.multiply(weighted_distsq, divisor)
        if not keep:
            weighted_mean = _ops.squeeze(weighted_mean, axis=axes)
            weighted_variance = _ops.squeeze(weighted_variance, axis=axes)
        if needs_cast:
            weighted_mean = _ops.cast(weighted_mean, _dtypes.float16)
            weighted_variance = _ops.cast(weighted_variance, _dtypes.float16)
        return weighted_mean, weighted_variance


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets, plus Stirling's approximation of log(targets!)
    for targets above 1 when compute_full_loss."""
    with _fw.name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = _to_tensor(log_input, name="log_input")
        targets = _to_tensor(targets, name="targets")
        if not targets.shape.is_compatible_with(log_input.shape):
            raise ValueError("log_input and targets must have the same shape (%s vs %s)"
                             % (log_input.shape, targets.shape))
        result = _ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            point_five = _fw.constant(0.5, dtype=targets.dtype.base_dtype)
            two_pi = _fw.constant(2 * _np.pi, dtype=targets.dtype.base_dtype)
            stirling_approx = (targets * _ops.log(targets)) - targets + (
                point_five * _ops.log(two_pi * targets))
            zeros = _ops.zeros_like(targets)
            ones = _ops.ones_like(targets)
            cond = _ops.logical_and(_ops.greater_equal(targets, zeros),
                                    _ops.less_equal(targets, ones))
            result += _ops.where(cond, zeros, stirling_approx)
        return result

def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows `ids` of params, or of a list of shards of it split by partition_strategy: "mod"
    puts id i in shard i % n at row i // n, "div" gives the shards consecutive ranges, the
    first (total % n) one row longer (TensorFlow 1.15's _embedding_lookup_and_transform)."""
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("Need at least one param")
        if len(params) == 1:
            params = params[0]
    if not isinstance(params, list):
        return _ops.gather(params, ids, name=name or "embedding_lookup")
    if partition_strategy not in ("mod", "div"):
        raise ValueError("Unrecognized partition strategy: " + str(partition_strategy))
    from . import array_ops as _array_ops
    n = len(params)
    with _fw.name_scope(name, "embedding_lookup", []):
        ids = _to_tensor(ids, name="ids")
        flat_ids = _ops.reshape(ids, [-1])
        original_indices = _ops.range(_ops.size(flat_ids))
        np_t = _to_tensor(n, dtype=flat_ids.dtype)
        if partition_strategy == "mod":
            p_assignments = _ops.floormod(flat_ids, np_t)
            new_ids = _ops.floordiv(flat_ids, np_t)
        else:
            dims = [p.shape[0] if p.shape.ndims else None for p in params]
            dims = [getattr(d, "value", d) for d in dims]
            if all(d is not None for d in dims):
                total = _to_tensor(sum(dims), dtype=flat_ids.dtype)
            else:
                total = _ops.reduce_sum(_ops.cast(_ops.stack(
                    [d if d is not None else _ops.shape(p)[0] for d, p in zip(dims, params)]),
                    flat_ids.dtype))
            per = _ops.floordiv(total, np_t)
            extras = _ops.floormod(total, np_t)
            one = _to_tensor(1, dtype=flat_ids.dtype)
            p_assignments = _ops.maximum(
                _ops.floordiv(flat_ids, _ops.add(per, one)),
                _ops.floordiv(_ops.subtract(flat_ids, extras), per))
            new_ids = _ops.where(_ops.less(p_assignments, extras),
                                 _ops.floormod(flat_ids, _ops.add(per, one)),
                                 _ops.floormod(_ops.subtract(flat_ids, extras), per))
        p_assignments = _ops.cast(p_assignments, _dtypes.int32)
        gather_ids = _array_ops.dynamic_partition(new_ids, p_assignments, n)
        pindices = _array_ops.dynamic_partition(original_indices, p_assignments, n)
        parts = [_ops.gather(params[p], gather_ids[p]) for p in range(n)]
        ret = _array_ops.dynamic_stitch(pindices, parts)
        return _ops.reshape(ret, _ops.concat(
            [_ops.shape(ids), _ops.slice(_ops.shape(ret), [1], [-1])], 0))


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



# ---------------------------------------------------------------------------------------------
# Candidate sampling (TensorFlow 1.15's candidate_sampling_ops.py and nn_impl.py). The samplers'
# random stream is weft's Philox, not TensorFlow's: the same seeds give the same candidates in
# every weft session, not TensorFlow's candidates.

def _candidate_sampler(op_type, true_classes, num_true, num_sampled, unique, range_max, seed,
                       name):
    s1, s2 = _ops.get_seed(seed)
    true_classes = _to_tensor(true_classes, dtype=_dtypes.int64, name="true_classes")
    return tuple(_op(op_type, [true_classes],
                     [("num_true", "int", int(num_true)), ("num_sampled", "int", int(num_sampled)),
                      ("unique", "bool", bool(unique)), ("range_max", "int", int(range_max)),
                      ("seed", "int", s1 or 0), ("seed2", "int", s2 or 0)], name or op_type))


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                              name=None):
    """(sampled_candidates, true_expected_count, sampled_expected_count) drawn uniformly from
    [0, range_max)."""
    return _candidate_sampler("UniformCandidateSampler", true_classes, num_true, num_sampled,
                              unique, range_max, seed, name)


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """As uniform_candidate_sampler, from P(k) = log((k + 2) / (k + 1)) / log(range_max + 1)."""
    return _candidate_sampler("LogUniformCandidateSampler", true_classes, num_true, num_sampled,
                              unique, range_max, seed, name)


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """(indices, ids, weights): each true class of row `indices` that is sampled candidate
    `ids`, with weight -FLT_MAX (to be added to that sampled logit)."""
    s1, s2 = _ops.get_seed(seed)
    return tuple(_op("ComputeAccidentalHits",
                     [_to_tensor(true_classes, dtype=_dtypes.int64),
                      _to_tensor(sampled_candidates, dtype=_dtypes.int64)],
                     [("num_true", "int", int(num_true)), ("seed", "int", s1 or 0),
                      ("seed2", "int", s2 or 0)], name or "ComputeAccidentalHits"))


def _sum_rows(x):
    """The row sums of a matrix, as a matmul with a column of ones (TensorFlow's _sum_rows,
    whose gradient is cheaper than reduce_sum's)."""
    cols = _ops.shape(x)[1]
    ones = _ops.ones(_ops.stack([cols, 1]), x.dtype)
    return _ops.reshape(_ops.matmul(x, ones), [-1])


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true=1, sampled_values=None, subtract_log_q=True,
                            remove_accidental_hits=False, partition_strategy="mod", name=None,
                            seed=None):
    """nn_impl.py's _compute_sampled_logits: logits [batch, num_true + num_sampled] (the true
    classes' first) and their labels (1 / num_true for the true columns, 0 elsewhere)."""
    from . import sparse as _sparse
    if not isinstance(weights, (list, tuple)):
        weights = [weights]
    weights = list(weights)
    with _fw.name_scope(name, "compute_sampled_logits", []):
        inputs = _to_tensor(inputs, name="inputs")
        labels = _to_tensor(labels)
        if labels.dtype != _dtypes.int64:
            labels = _ops.cast(labels, _dtypes.int64)
        labels_flat = _ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True,
                range_max=num_classes, seed=seed)
        # No gradient reaches the sampler: its outputs are constants of the loss.
        sampled, true_expected_count, sampled_expected_count = (
            _ops.stop_gradient(s) for s in sampled_values)
        sampled = _ops.cast(sampled, _dtypes.int64)
        all_ids = _ops.concat([labels_flat, sampled], 0)
        n_true = _ops.shape(labels_flat)[0]

        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype != inputs.dtype:
            all_w = _ops.cast(all_w, inputs.dtype)
        true_w = _ops.slice(all_w, [0, 0], _ops.stack([n_true, -1]))
        sampled_w = _ops.slice(all_w, _ops.stack([n_true, 0]), [-1, -1])
        sampled_logits = _ops.matmul(inputs, sampled_w, transpose_b=True)

        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = _ops.cast(all_b, inputs.dtype)
        true_b = _ops.slice(all_b, [0], _ops.shape(labels_flat))
        sampled_b = _ops.slice(all_b, _ops.shape(labels_flat), [-1])

        dim = _ops.shape(true_w)[1:2]
        new_true_w_shape = _ops.concat([[-1, num_true], dim], 0)
        row_wise_dots = _ops.multiply(_ops.expand_dims(inputs, 1),
                                      _ops.reshape(true_w, new_true_w_shape))
        dots_as_matrix = _ops.reshape(row_wise_dots, _ops.concat([[-1], dim], 0))
        true_logits = _ops.reshape(_sum_rows(dots_as_matrix), [-1, num_true])
        true_b = _ops.reshape(true_b, [-1, num_true])
        true_logits = _ops.add(true_logits, true_b)
        sampled_logits = _ops.add(sampled_logits, sampled_b)

        if remove_accidental_hits:
            acc_indices, acc_ids, acc_weights = compute_accidental_hits(labels, sampled,
                                                                        num_true=num_true)
            acc_indices_2d = _ops.reshape(acc_indices, [-1, 1])
            acc_ids_2d_int32 = _ops.reshape(_ops.cast(acc_ids, _dtypes.int32), [-1, 1])
            sparse_indices = _ops.concat([acc_indices_2d, acc_ids_2d_int32], 1, "sparse_indices")
            sampled_logits_shape = _ops.concat(
                [_ops.shape(labels)[:1], _ops.expand_dims(num_sampled, 0)], 0)
            if sampled_logits.dtype != acc_weights.dtype:
                acc_weights = _ops.cast(acc_weights, sampled_logits.dtype)
            sampled_logits = _ops.add(sampled_logits, _sparse.sparse_to_dense(
                sparse_indices, sampled_logits_shape, acc_weights, default_value=0.0,
                validate_indices=False))

        if subtract_log_q:
            # Subtract log Q(l), the expected count of l in the sampled set.
            true_logits = _ops.subtract(true_logits, _ops.log(true_expected_count))
            sampled_logits = _ops.subtract(sampled_logits, _ops.log(sampled_expected_count))

        out_logits = _ops.concat([true_logits, sampled_logits], 1)
        out_labels = _ops.concat([
            _ops.divide(_ops.ones_like(true_logits), _to_tensor(float(num_true),
                                                                dtype=true_logits.dtype)),
            _ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation: per example, the sum of the sigmoid cross entropies of the
    true and sampled logits ([batch])."""
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="sampled_losses")
    return _sum_rows(sampled_losses)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
                         sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """The softmax cross entropy over the true and sampled classes only ([batch])."""
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs, num_sampled=num_sampled,
        num_classes=num_classes, num_true=num_true, sampled_values=sampled_values,
        subtract_log_q=True, remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    labels = _ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)


# ---------------------------------------------------------------------------------------------
# Normalization, more convolutions and pooling, and TensorFlow's Python-built activations and
# losses. embedding_lookup_sparse and safe_embedding_lookup_sparse (not written yet, though the
# SparseSegment* ops they use are there) are absent.

def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, as TensorFlow writes it:
    x * inv + (offset - mean * inv)."""
    with _fw.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = _to_tensor(x)
        dt = x.dtype.base_dtype
        variance = _to_tensor(variance, dtype=dt)
        inv = _ops.rsqrt(_ops.add(variance, _to_tensor(variance_epsilon, dtype=dt)))
        if scale is not None:
            inv = _ops.multiply(inv, _to_tensor(scale, dtype=dt))
        mean = _to_tensor(mean, dtype=dt)
        shift = _ops.negative(_ops.multiply(mean, inv)) if offset is None else \
            _ops.subtract(_to_tensor(offset, dtype=dt), _ops.multiply(mean, inv))
        return _ops.add(_ops.multiply(x, inv), shift)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    """(y, batch_mean, batch_variance) from FusedBatchNormV3; in training the statistics are the
    batch's (mean and variance must then be None), else mean and variance are used."""
    x = _to_tensor(x, name="input")
    scale = _to_tensor(scale, name="scale")
    offset = _to_tensor(offset, name="offset")
    if is_training and (mean is not None or variance is not None):
        raise ValueError("Both 'mean' and 'variance' must be None when is_training is True.")
    if not is_training and (mean is None or variance is None):
        raise ValueError("Both 'mean' and 'variance' must be a 1D tensor when is_training is "
                         "False.")
    mean = _fw.constant([], dtype=scale.dtype) if mean is None else _to_tensor(mean)
    variance = _fw.constant([], dtype=scale.dtype) if variance is None else _to_tensor(variance)
    # TensorFlow raises epsilon to cuDNN's minimum whatever the device
    epsilon = max(float(epsilon), 1.001e-5)
    y, batch_mean, batch_var = _op(
        "FusedBatchNormV3", [x, scale, offset, mean, variance],
        [("epsilon", "float", epsilon), ("data_format", "string", data_format),
         ("is_training", "bool", bool(is_training))], name or "FusedBatchNormV3")[:3]
    return y, batch_mean, batch_var


def _sequence(value, n, channel_index, arg_name):
    """A per-dimension attribute (strides, dilations) of n spatial dims as the op's full list."""
    if value is None:
        value = [1]
    elif isinstance(value, int):
        value = [value]
    value = list(value)
    if len(value) not in (1, n, n + 2):
        raise ValueError("%s should be of length 1, %d or %d but was %d"
                         % (arg_name, n, n + 2, len(value)))
    if len(value) == n + 2:
        return value
    value = value * n if len(value) == 1 else value
    return [1] + value + [1] if channel_index != 1 else [1, 1] + value


def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """Conv2D over [batch, 1, width, channels]: ExpandDims of the input and the filter, then
    Squeeze, as TensorFlow builds it."""
    value = value if value is not None else input
    with _fw.name_scope(name, "conv1d", [value, filters]) as scope:
        if data_format is None or data_format in ("NHWC", "NWC"):
            data_format, spatial_start_dim, channel_index = "NHWC", 1, 2
        elif data_format in ("NCHW", "NCW"):
            data_format, spatial_start_dim, channel_index = "NCHW", 2, 1
        else:
            raise ValueError("data_format must be \"NWC\" or \"NCW\".")
        strides = [1] + _sequence(stride, 1, channel_index, "stride")
        dilations = [1] + _sequence(dilations, 1, channel_index, "dilations")
        value = _ops.expand_dims(value, spatial_start_dim)
        filters = _ops.expand_dims(filters, 0)
        result = conv2d(value, filters, strides, padding,
                        use_cudnn_on_gpu=True if use_cudnn_on_gpu is None else use_cudnn_on_gpu,
                        data_format=data_format, dilations=dilations, name=scope)
        return _ops.squeeze(result, [spatial_start_dim])


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=(1, 1, 1, 1), name=None, filters=None):  # noqa: A002
    f = filter if filter is not None else filters
    out_backprop, f = _same_type(out_backprop, f, "Conv2DBackpropInput")
    sizes = input_sizes if isinstance(input_sizes, _fw.Tensor) else \
        _to_tensor(input_sizes, dtype=_dtypes.int32)
    return _op("Conv2DBackpropInput", [sizes, f, out_backprop],
               [("strides", "list_int", list(strides)), ("padding", "string", padding),
                ("use_cudnn_on_gpu", "bool", use_cudnn_on_gpu),
                ("data_format", "string", data_format),
                ("dilations", "list_int", list(dilations))], name or "Conv2DBackpropInput")


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None, filters=None,
                     dilations=None):
    """The gradient of conv2d with respect to its input (Conv2DBackpropInput): filter is
    [height, width, output_channels, in_channels]."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    with _fw.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        value = _to_tensor(value, name="value")
        filter = _to_tensor(filter, name="filter")
        if data_format not in ("NCHW", "NHWC"):
            raise ValueError("data_format has to be either NCHW or NHWC.")
        axis = 3 if data_format == "NHWC" else 1
        in_ch, f_in = value.shape, filter.shape
        if in_ch.ndims is not None and f_in.ndims is not None and \
                in_ch.as_list()[axis] is not None and f_in.as_list()[3] is not None and \
                in_ch.as_list()[axis] != f_in.as_list()[3]:
            raise ValueError("input channels does not match filter's input channels, "
                             "{} != {}".format(in_ch.as_list()[axis], f_in.as_list()[3]))
        sizes = output_shape if isinstance(output_shape, _fw.Tensor) else \
            _to_tensor(output_shape, dtype=_dtypes.int32, name="output_shape")
        if sizes.shape.ndims is not None and sizes.shape.as_list() != [4]:
            raise ValueError("output_shape must have shape (4,), got {}".format(sizes.shape))
        if isinstance(output_shape, (list, tuple)) and f_in.ndims is not None and \
                f_in.as_list()[2] is not None and output_shape[axis] != f_in.as_list()[2]:
            raise ValueError("output_shape does not match filter's output channels, "
                             "{} != {}".format(output_shape[axis], f_in.as_list()[2]))
        return conv2d_backprop_input(sizes, filter, value, _sequence(strides, 2, axis,
                                                                     "strides"),
                                     padding, data_format=data_format,
                                     dilations=_sequence(dilations, 2, axis, "dilations"),
                                     name=scope)


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    x, f = _same_type(input, filter if filter is not None else filters, "Conv3D")
    return _op("Conv3D", [x, f], [("strides", "list_int", list(strides)),
                                  ("padding", "string", padding),
                                  ("data_format", "string", data_format),
                                  ("dilations", "list_int", list(dilations))], name or "Conv3D")


def _pool3d(op_type):
    def fn(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
        channel = 1 if data_format == "NCDHW" else 4
        return _op(op_type, [_to_tensor(input)],
                   [("ksize", "list_int", _sequence(ksize, 3, channel, "ksize")),
                    ("strides", "list_int", _sequence(strides, 3, channel, "strides")),
                    ("padding", "string", padding), ("data_format", "string", data_format)],
                   name or op_type)
    fn.__name__ = op_type
    return fn


max_pool3d = _pool3d("MaxPool3D")
avg_pool3d = _pool3d("AvgPool3D")


def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    x, f = _same_type(input, filter, "DepthwiseConv2dNative")
    return _op("DepthwiseConv2dNative", [x, f],
               [("strides", "list_int", list(strides)), ("padding", "string", padding),
                ("data_format", "string", data_format),
                ("dilations", "list_int", list(dilations))], name or "DepthwiseConv2dNative")


def _with_space_to_batch(x, filter_spatial, rate, padding, op):
    """op(x, padding) dilated by rate as TensorFlow's with_space_to_batch does it: SpaceToBatchND
    with rate as the block (padded so the blocks tile, plus SAME's padding), op over the VALID
    windows, BatchToSpaceND cropping the extra back off. Rate 1 calls op(x, padding) itself.
    The spatial dimensions (1 and 2: channels last) must be known."""
    rate = [int(r) for r in (rate if isinstance(rate, (list, tuple, _np.ndarray)) else [rate] * 2)]
    if any(r < 1 for r in rate):
        raise ValueError("dilation_rate must be positive")
    if all(r == 1 for r in rate):
        return op(x, padding)
    n = len(rate)
    spatial = x.shape.as_list()[1:1 + n] if x.shape.ndims is not None else [None] * n
    if None in spatial or None in list(filter_spatial):
        raise ValueError("dilated convolution and pooling in weft need known spatial "
                         "dimensions, got input %s" % x.shape)
    if padding == "SAME":
        dilated = [f + (f - 1) * (r - 1) for f, r in zip(filter_spatial, rate)]
        base = [[(d - 1) // 2, d - 1 - (d - 1) // 2] for d in dilated]
    elif padding == "VALID":
        base = [[0, 0]] * n
    else:
        raise ValueError("Invalid padding method %r" % padding)
    extra = [(r - (s + b[0] + b[1]) % r) % r for s, b, r in zip(spatial, base, rate)]
    paddings = [[b[0], b[1] + e] for b, e in zip(base, extra)]
    crops = [[0, e] for e in extra]
    block = _to_tensor(rate, dtype=_dtypes.int32)
    converted = _op("SpaceToBatchND", [x, block, _to_tensor(paddings, dtype=_dtypes.int32)], (),
                    "SpaceToBatchND")
    result = op(converted, "VALID")
    return _op("BatchToSpaceND", [result, block, _to_tensor(crops, dtype=_dtypes.int32)], (),
               "BatchToSpaceND")


def _filter_spatial(f, n):
    return f.shape.as_list()[:n] if f.shape.ndims is not None else [None] * n


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """DepthwiseConv2dNative; with a rate above 1 wrapped in SpaceToBatchND/BatchToSpaceND."""
    rate = rate if rate is not None else dilations
    with _fw.name_scope(name, "depthwise", [input, filter]) as scope:
        x = _to_tensor(input, name="tensor_in")
        f = _to_tensor(filter, name="filter_in", dtype=x.dtype.base_dtype)
        rate = [1, 1] if rate is None else rate
        return _with_space_to_batch(
            x, _filter_spatial(f, 2), rate, padding,
            lambda v, pad: depthwise_conv2d_native(v, f, strides, pad,
                                                   data_format=data_format or "NHWC",
                                                   name=scope))


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding,  # noqa: A002
                     rate=None, name=None, data_format=None, dilations=None):
    """A depthwise convolution, then a 1x1 Conv2D mixing the channels."""
    rate = rate if rate is not None else dilations
    with _fw.name_scope(name, "separable_conv2d",
                        [input, depthwise_filter, pointwise_filter]) as scope:
        x = _to_tensor(input, name="tensor_in")
        df = _to_tensor(depthwise_filter, name="depthwise_filter", dtype=x.dtype.base_dtype)
        pf = _to_tensor(pointwise_filter, name="pointwise_filter", dtype=x.dtype.base_dtype)
        if pf.shape.ndims is not None:
            if pf.shape.ndims != 4:
                raise ValueError("Shape must be rank 4 but is rank %d" % pf.shape.ndims)
            if pf.shape.as_list()[:2] != [1, 1]:
                raise ValueError("Dimension must be 1 but is %s for pointwise_filter"
                                 % pf.shape.as_list()[:2])
        rate = [1, 1] if rate is None else rate
        depthwise = _with_space_to_batch(
            x, _filter_spatial(df, 2), rate, padding,
            lambda v, pad: depthwise_conv2d_native(v, df, strides, pad,
                                                   data_format=data_format or "NHWC",
                                                   name="depthwise"))
        return conv2d(depthwise, pf, [1, 1, 1, 1], padding="VALID",
                      data_format=data_format or "NHWC", name=scope)


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None,  # noqa: A002
                name=None, data_format=None, filters=None, dilations=None):
    """N-D convolution for N = 1, 2, 3 (from the filter's rank): Conv2D (via conv1d's
    ExpandDims for 1-D) or Conv3D, dilation by SpaceToBatchND, channels last."""
    filter = filter if filter is not None else filters
    dilation_rate = dilation_rate if dilation_rate is not None else dilations
    with _fw.name_scope(name, "convolution", [input, filter]) as scope:
        x = _to_tensor(input, name="input")
        f = _to_tensor(filter, name="filter", dtype=x.dtype.base_dtype)
        if f.shape.ndims is None:
            raise ValueError("convolution needs a filter of known rank")
        n = f.shape.ndims - 2
        if n not in (1, 2, 3):
            raise ValueError("Input tensor must be of rank 3, 4 or 5 but was %d."
                             % (n + 2))
        if data_format is not None and data_format.startswith("NC"):
            raise ValueError("convolution in weft supports channels-last data formats only")
        strides = [1] * n if strides is None else list(_np.broadcast_to(strides, [n]))
        rate = [1] * n if dilation_rate is None else list(_np.broadcast_to(dilation_rate, [n]))
        if any(s > 1 for s in strides) and any(r > 1 for r in rate):
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        if n == 1:
            if any(r > 1 for r in rate):
                raise ValueError("1-D dilated convolution is not supported by weft")
            return conv1d(x, f, strides, padding, name=scope)

        def op(v, pad):
            full = [1] + [int(s) for s in strides] + [1]
            if n == 2:
                return conv2d(v, f, full, pad, name=scope)
            return conv3d(v, f, full, pad, name=scope)
        return _with_space_to_batch(x, _filter_spatial(f, n), rate, padding, op)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """Conv2D with holes: convolution with dilation_rate (rate, rate)."""
    return convolution(value, filters, padding, dilation_rate=[rate, rate], name=name)


def pool(input, window_shape, pooling_type, padding, dilation_rate=None,  # noqa: A002
         strides=None, name=None, data_format=None, dilations=None):
    """N-D max or average pooling for N = 1, 2, 3 (channels last), dilation by SpaceToBatchND."""
    dilation_rate = dilation_rate if dilation_rate is not None else dilations
    if pooling_type not in ("AVG", "MAX"):
        raise ValueError("Invalid pooling_type: %s" % pooling_type)
    window_shape = list(window_shape)
    n = len(window_shape)
    if n not in (1, 2, 3):
        raise ValueError("window_shape must have length 1, 2 or 3")
    if data_format is not None and data_format.startswith("NC"):
        raise ValueError("pool in weft supports channels-last data formats only")
    strides = [1] * n if strides is None else list(strides)
    rate = [1] * n if dilation_rate is None else list(dilation_rate)
    if len(strides) != n or len(rate) != n:
        raise ValueError("strides and dilation_rate must have the length of window_shape")
    if any(s > 1 for s in strides) and any(r > 1 for r in rate):
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
    if padding == "SAME" and any(r > 1 for r in rate):
        # SpaceToBatchND's zero padding would enter the windows (averaged, or max over negatives)
        raise ValueError("pooling with SAME padding is not implemented for dilation_rate > 1")
    with _fw.name_scope(name, "%s_pool" % pooling_type.lower(), [input]) as scope:
        x = _to_tensor(input)
        one_d = n == 1
        if one_d:
            # TensorFlow pools 1-D inputs as [batch, 1, width, channels] images too
            if rate[0] > 1:
                raise ValueError("1-D dilated pooling is not supported by weft")
            x = _ops.expand_dims(x, 1)
            window_shape, strides, rate, n = [1] + window_shape, [1] + strides, [1, 1], 2
        if n == 3:
            fn = max_pool3d if pooling_type == "MAX" else avg_pool3d
        else:
            fn = max_pool if pooling_type == "MAX" else avg_pool
        out = _with_space_to_batch(
            x, window_shape, rate, padding,
            lambda v, pad: fn(v, [1] + window_shape + [1], [1] + strides + [1], pad,
                              name=None if one_d else scope))
        return _ops.squeeze(out, [1], name=scope) if one_d else out


def local_response_normalization(input, depth_radius=5, bias=1, alpha=1, beta=0.5,  # noqa: A002
                                 name=None):
    return _op("LRN", [_to_tensor(input)], [("depth_radius", "int", int(depth_radius)),
                                            ("bias", "float", float(bias)),
                                            ("alpha", "float", float(alpha)),
                                            ("beta", "float", float(beta))], name or "LRN")


lrn = local_response_normalization


def crelu(features, name=None, axis=-1):
    """relu of [features, -features] concatenated along axis."""
    with _fw.name_scope(name, "CRelu", [features]) as scope:
        features = _to_tensor(features, name="features")
        c = _ops.concat([features, _ops.negative(features)], axis, name=scope)
        return relu(c)


def relu_layer(x, weights, biases, name=None):
    with _fw.name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return relu(bias_add(_ops.matmul(x, weights), biases), name=scope)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """sigmoid cross entropy with the positive term weighted by pos_weight:
    (1 - z) x + (1 + (q - 1) z) (log1p(exp(-|x|)) + relu(-x))."""
    labels = labels if labels is not None else targets
    with _fw.name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = _to_tensor(logits, name="logits")
        labels = _to_tensor(labels, name="labels", dtype=logits.dtype.base_dtype)
        if not labels.shape.is_compatible_with(logits.shape):
            raise ValueError("logits and labels must have the same shape (%s vs %s)"
                             % (logits.shape, labels.shape))
        dt = logits.dtype.base_dtype
        one = _to_tensor(1, dtype=dt)
        log_weight = _ops.add(one, _ops.multiply(
            _ops.subtract(_to_tensor(pos_weight, dtype=dt), one), labels))
        softplus_neg = _ops.add(_ops.log1p(_ops.exp(_ops.negative(_ops.abs(logits)))),
                                relu(_ops.negative(logits)))
        return _ops.add(_ops.multiply(_ops.subtract(one, labels), logits),
                        _ops.multiply(log_weight, softplus_neg), name=scope)


from . import rnn_cell  # noqa: E402 -- tf.nn.rnn_cell
from .rnn import (dynamic_rnn, static_rnn, bidirectional_dynamic_rnn,  # noqa: E402,F401
                  static_bidirectional_rnn)
from .array_ops import (depth_to_space, space_to_depth, space_to_batch,  # noqa: E402,F401
                        batch_to_space, nth_element)


# ---------------------------------------------------------------------------------------------
# Connectionist temporal classification (CTCLoss, CTCGreedyDecoder, CTCBeamSearchDecoder), as
# TensorFlow 1's tf.nn.ctc_* build them. The blank is the last class.

def _sparse_tensor(indices, values, dense_shape):
    from .sparse import SparseTensor
    return SparseTensor(indices, values, dense_shape)


def ctc_loss(labels, inputs=None, sequence_length=None, preprocess_collapse_repeated=False,
             ctc_merge_repeated=True, ignore_longer_outputs_than_inputs=False, time_major=True,
             logits=None):
    """tf.nn.ctc_loss (v1): the CTC loss [batch] of labels (a SparseTensor of int32 class ids,
    indices [batch, position]) given unnormalised inputs [max_time, batch, num_classes] (batch
    major when time_major is False). Differentiable w.r.t. inputs (TensorFlow's _CTCLossGrad)."""
    from .sparse import SparseTensor
    if not isinstance(labels, SparseTensor):
        raise TypeError("Expected labels (first argument) to be a SparseTensor")
    if inputs is not None and logits is not None:
        raise ValueError("Cannot specify both 'logits' and 'inputs'")
    inputs = _to_tensor(logits if inputs is None else inputs)
    # No name scope: TensorFlow's nodes are "transpose" and "CTCLoss" where it is called.
    if not time_major:
        inputs = _ops.transpose(inputs, [1, 0, 2])
    loss, _ = _op("CTCLoss",
                  [inputs, labels.indices, _to_tensor(labels.values, dtype=_dtypes.int32),
                   _to_tensor(sequence_length, dtype=_dtypes.int32)],
                  [("preprocess_collapse_repeated", "bool", bool(preprocess_collapse_repeated)),
                   ("ctc_merge_repeated", "bool", bool(ctc_merge_repeated)),
                   ("ignore_longer_outputs_than_inputs", "bool",
                    bool(ignore_longer_outputs_than_inputs))], "CTCLoss")
    return loss


def ctc_greedy_decoder(inputs, sequence_length, merge_repeated=True, blank_index=None):
    """tf.nn.ctc_greedy_decoder: ([SparseTensor of the best class per step, blanks dropped,
    repeats merged when merge_repeated], -sum of those steps' greatest inputs [batch, 1])."""
    ix, val, shape, log_prob = _op(
        "CTCGreedyDecoder", [_to_tensor(inputs), _to_tensor(sequence_length, dtype=_dtypes.int32)],
        [("merge_repeated", "bool", bool(merge_repeated)),
         ("blank_index", "int", -1 if blank_index is None else int(blank_index))],
        "CTCGreedyDecoder")
    return [_sparse_tensor(ix, val, shape)], log_prob


def ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1,
                            merge_repeated=True):
    """tf.nn.ctc_beam_search_decoder (v1): ([top_paths SparseTensors, best first], their scores
    [batch, top_paths]) by TensorFlow's prefix beam search."""
    top_paths = int(top_paths)
    outs = _op("CTCBeamSearchDecoder",
               [_to_tensor(inputs), _to_tensor(sequence_length, dtype=_dtypes.int32)],
               [("beam_width", "int", int(beam_width)), ("top_paths", "int", top_paths),
                ("merge_repeated", "bool", bool(merge_repeated))], "CTCBeamSearchDecoder")
    ix, val, shape = (outs[:top_paths], outs[top_paths:2 * top_paths],
                      outs[2 * top_paths:3 * top_paths])
    return ([_sparse_tensor(i, v, s) for i, v, s in zip(ix, val, shape)], outs[3 * top_paths])


def ctc_beam_search_decoder_v2(inputs, sequence_length, beam_width=100, top_paths=1):
    """tf.nn.ctc_beam_search_decoder_v2: the v1 decoder without merging repeats."""
    return ctc_beam_search_decoder(inputs, sequence_length, beam_width, top_paths,
                                   merge_repeated=False)
