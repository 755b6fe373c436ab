"""tf.losses: TensorFlow 1.x's losses with weights and the LOSSES collection (reduction
SUM_BY_NONZERO_WEIGHTS: the weighted sum over the count of non-zero weights)."""
from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from . import nn as _nn
from .framework import GraphKeys


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"


def _compute_weighted_loss(losses, weights, scope, loss_collection, reduction):
    losses = _ops._to_tensor(losses)
    weights = _ops._to_tensor(weights, dtype=losses.dtype.base_dtype)
    weighted = _ops.multiply(losses, weights)
    if reduction == Reduction.NONE:
        loss = weighted
    else:
        total = _ops.reduce_sum(weighted)
        if reduction == Reduction.SUM:
            loss = total
        else:
            ones = _ops.multiply(weights, _ops.ones_like(losses))
            if reduction == Reduction.MEAN:
                denom = _ops.reduce_sum(ones)
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                denom = _ops.cast(_ops.size(losses), losses.dtype)
            else:
                denom = _ops.reduce_sum(_ops.cast(_ops.not_equal(ones, 0.0), losses.dtype))
            # 0 / 0 is 0, as TensorFlow's safe division
            safe = _ops.where(_ops.greater(denom, 0.0), denom, _ops.ones_like(denom))
            loss = _ops.where(_ops.greater(denom, 0.0), _ops.divide(total, safe),
                              _ops.zeros_like(total), name="value")
    if loss_collection:
        _fw.add_to_collection(loss_collection, loss)
    return loss


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "mean_squared_error", [predictions, labels]) as s:
        predictions = _ops._to_tensor(predictions)
        labels = _ops.cast(labels, predictions.dtype)
        return _compute_weighted_loss(_ops.squared_difference(predictions, labels), weights, s,
                                      loss_collection, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "absolute_difference", [predictions, labels]) as s:
        predictions = _ops._to_tensor(predictions)
        labels = _ops.cast(labels, predictions.dtype)
        return _compute_weighted_loss(_ops.abs(_ops.subtract(predictions, labels)), weights, s,
                                      loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels]) as s:
        logits = _ops._to_tensor(logits)
        labels = _ops.cast(onehot_labels, logits.dtype)
        if label_smoothing:
            n = _ops.cast(_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1 - label_smoothing) + label_smoothing / n
        losses = _nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels]) as s:
        losses = _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    with _fw.name_scope(scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels]) as s:
        logits = _ops._to_tensor(logits)
        labels = _ops.cast(multi_class_labels, logits.dtype)
        if label_smoothing:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = _nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    if loss_collection:
        _fw.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    return _fw.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    return _fw.get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    return _ops.add_n(losses, name=name)


# TensorFlow 1.15's remaining elementwise losses: float32 predictions and labels of compatible
# shapes, weighted and reduced as the ones above.

def _float_pair(predictions, labels):
    predictions = _ops.cast(predictions, _dtypes.float32)
    labels = _ops.cast(labels, _dtypes.float32)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError("Shapes %s and %s are incompatible" % (predictions.shape, labels.shape))
    return predictions, labels


def _not_none(labels, predictions, what="predictions"):
    if labels is None:
        raise ValueError("labels must not be None.")
    if predictions is None:
        raise ValueError("%s must not be None." % what)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """0.5 * e^2 where |e| <= delta, else 0.5 * delta^2 + delta * (|e| - delta)."""
    _not_none(labels, predictions)
    with _fw.name_scope(scope, "huber_loss", [predictions, labels, weights]) as s:
        predictions, labels = _float_pair(predictions, labels)
        abs_error = _ops.abs(_ops.subtract(predictions, labels))
        quadratic = _ops.minimum(abs_error, _ops._to_tensor(delta, dtype=_dtypes.float32))
        linear = _ops.subtract(abs_error, quadratic)
        losses = _ops.add(_ops.multiply(_fw.constant(0.5, dtype=quadratic.dtype),
                                        _ops.multiply(quadratic, quadratic)),
                          _ops.multiply(_ops._to_tensor(delta, dtype=_dtypes.float32), linear))
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """relu(1 - (2 * labels - 1) * logits) for labels in {0, 1}."""
    _not_none(labels, logits, "logits")
    with _fw.name_scope(scope, "hinge_loss", [logits, labels, weights]) as s:
        logits, labels = _float_pair(logits, labels)
        all_ones = _ops.ones_like(labels)
        labels = _ops.subtract(2 * labels, all_ones)
        losses = _nn.relu(_ops.subtract(all_ones, _ops.multiply(labels, logits)))
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels * log(p + epsilon) - (1 - labels) * log(1 - p + epsilon)."""
    _not_none(labels, predictions)
    with _fw.name_scope(scope, "log_loss", [predictions, labels, weights]) as s:
        predictions, labels = _float_pair(predictions, labels)
        losses = _ops.subtract(
            _ops.negative(_ops.multiply(labels, _ops.log(predictions + epsilon))),
            _ops.multiply(1 - labels, _ops.log(1 - predictions + epsilon)))
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """1 - sum(labels * predictions, axis) (kept as a size-1 axis); the inputs are expected to
    be unit-normalized along axis."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'.")
        axis = dim
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    _not_none(labels, predictions)
    with _fw.name_scope(scope, "cosine_distance_loss", [predictions, labels, weights]) as s:
        predictions, labels = _float_pair(predictions, labels)
        radial_diffs = _ops.multiply(predictions, labels)
        losses = 1 - _ops.reduce_sum(radial_diffs, axis=[axis], keepdims=True)
        return _compute_weighted_loss(losses, weights, s, loss_collection, reduction)
