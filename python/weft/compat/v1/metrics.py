"""tf.metrics: streaming metrics over local variables (accuracy, mean), each returning
(value, update_op) as TensorFlow 1.x does; initialize them with
tf.local_variables_initializer()."""
from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from . import variables as _vars

METRIC_VARIABLES = "metric_variables"


def _local(name, dtype):
    return _vars.Variable(_ops.zeros([], dtype=dtype), name=name, trainable=False,
                          collections=[_fw.GraphKeys.LOCAL_VARIABLES, METRIC_VARIABLES])


def _safe_div(num, den, name):
    zero = _ops.zeros_like(den)
    return _ops.where(_ops.greater(den, zero), _ops.divide(num, den), zero, name=name)


def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name=None):
    """total / count of every value seen (weighted), as local variables mean/total and
    mean/count."""
    with _vars.variable_scope(name, "mean", [values, weights]):
        values = _ops.cast(_ops._to_tensor(values), _dtypes.float32)
        total = _local("total", _dtypes.float32)
        count = _local("count", _dtypes.float32)
        if weights is None:
            num = _ops.reduce_sum(values)
            den = _ops.cast(_ops.size(values), _dtypes.float32)
        else:
            w = _ops.multiply(_ops.ones_like(values), _ops.cast(weights, _dtypes.float32))
            num = _ops.reduce_sum(_ops.multiply(values, w))
            den = _ops.reduce_sum(w)
        update_total = _ops.assign_add(total, num)
        update_count = _ops.assign_add(count, den)
        value = _safe_div(total, count, "value")
        update_op = _safe_div(update_total, update_count, "update_op")
        for key in metrics_collections or ():
            _fw.add_to_collection(key, value)
        for key in updates_collections or ():
            _fw.add_to_collection(key, update_op)
        return value, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The running fraction of predictions equal to labels (local variables accuracy/total
    and accuracy/count)."""
    predictions = _ops._to_tensor(predictions)
    labels = _ops._to_tensor(labels)
    if labels.dtype.base_dtype != predictions.dtype.base_dtype:
        labels = _ops.cast(labels, predictions.dtype.base_dtype)
    is_correct = _ops.cast(_ops.equal(predictions, labels), _dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")
