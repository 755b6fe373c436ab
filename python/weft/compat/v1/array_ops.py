"""TensorFlow 1.x's array, segment, clipping and special-math functions that the top level,
tf.math and tf.linalg export, built from the ops TensorFlow 1.15's Python builds them from (the
same op types, attributes and, where practical, node names), so graphs and gradients match."""
import collections as _collections
import re as _re

import numpy as _np

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from .framework import Tensor
from .ops import _op, _to_tensor

_T = "type"


def _int32(x):
    return _to_tensor(x, dtype=_dtypes.int32)


def _static_int(x):
    """x as a Python int when it is one (or a Const holding one), else None."""
    if isinstance(x, (int, _np.integer)):
        return int(x)
    if isinstance(x, Tensor) and x.op.type == "Const" and x.shape.ndims == 0 and \
            x.dtype.is_integer:
        proto = x.op.get_attr("value")  # a TensorProto: packed bytes or a value list
        if proto.get("content"):
            return int(_np.frombuffer(proto["content"], x.dtype.as_numpy_dtype)[0])
        return int(proto["vals"][0]) if proto.get("vals") else 0
    return None


# ---------------------------------------------------------------------------------------------
# Scatter, masks, sorting

def gather_nd(params, indices, name=None, batch_dims=0):
    """Slices of params addressed by indices[..., depth] (GatherNd); batch_dims > 0 is TF 2's
    and raises."""
    if batch_dims:
        raise ValueError("gather_nd: batch_dims=%r is not supported by weft (TensorFlow 1.x has "
                         "no batch_dims)" % (batch_dims,))
    return _op("GatherNd", [_to_tensor(params), _to_tensor(indices)], (), name or "GatherNd")


def ensure_shape(x, shape, name=None):
    """x, its static shape merged with `shape` (None for an unknown dim or rank; EnsureShape),
    failing the step with InvalidArgumentError "Shape of tensor ... is not compatible with
    expected shape ..." when its shape at run time does not fit."""
    shp = _fw.as_shape(shape)
    return _op("EnsureShape", [_to_tensor(x)],
               [("shape", "shape", None if shp.ndims is None else shp.as_list())],
               name or "EnsureShape")


def scatter_nd(indices, updates, shape, name=None):
    indices = _to_tensor(indices)
    return _op("ScatterNd", [indices, _to_tensor(updates), _to_tensor(shape, dtype=indices.dtype)],
               (), name or "ScatterNd")


def _tensor_scatter(op_type):
    def fn(tensor, indices, updates, name=None):
        tensor = _to_tensor(tensor)
        return _op(op_type, [tensor, _to_tensor(indices),
                             _to_tensor(updates, dtype=tensor.dtype.base_dtype)], (),
                   name or op_type)
    fn.__name__ = op_type
    return fn


tensor_scatter_nd_update = tensor_scatter_update = _tensor_scatter("TensorScatterUpdate")
tensor_scatter_nd_add = tensor_scatter_add = _tensor_scatter("TensorScatterAdd")
tensor_scatter_nd_sub = tensor_scatter_sub = _tensor_scatter("TensorScatterSub")


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """The entries of tensor where mask is true: mask's dimensions (starting at axis) flattened
    into one, then Where + GatherV2 along it, as TensorFlow builds it."""
    with _fw.name_scope(name, values=[tensor, mask]):
        tensor = _to_tensor(tensor, name="tensor")
        mask = _to_tensor(mask, name="mask")
        ndims_mask = mask.shape.ndims
        if ndims_mask == 0:
            raise ValueError("mask cannot be scalar.")
        if ndims_mask is None:
            raise ValueError("Number of mask dimensions must be specified, even if some "
                             "dimensions are None.  E.g. shape=[None] is ok, but shape=None is "
                             "not.")
        axis = 0 if axis is None else axis
        shape_tensor = tensor.shape
        if shape_tensor.ndims is not None:
            part = _fw.TensorShape(shape_tensor.as_list()[axis:axis + ndims_mask])
            if not part.is_compatible_with(mask.shape):
                raise ValueError("Shapes %s and %s are incompatible" % (part, mask.shape))
        full = _ops.shape(tensor)
        leading_size = _ops.reduce_prod(full[axis:axis + ndims_mask], [0])
        tensor = _ops.reshape(tensor, _ops.concat([full[:axis], _ops.stack([leading_size]),
                                                   full[axis + ndims_mask:]], 0))
        mask = _ops.reshape(mask, [-1])
        indices = _ops.squeeze(_ops.where(mask), axis=[1])
        return _ops.gather(tensor, indices, axis=axis)


def sequence_mask(lengths, maxlen=None, dtype=_dtypes.bool, name=None):
    """mask[i..., j] = j < lengths[i...], for j below maxlen (the largest length by default)."""
    with _fw.name_scope(name, "SequenceMask", [lengths, maxlen]):
        lengths = _to_tensor(lengths)
        if maxlen is None:
            maxlen = _ops.reduce_max(lengths)
            maxlen = _ops.maximum(_to_tensor(0, dtype=maxlen.dtype), maxlen)
        else:
            maxlen = _to_tensor(maxlen)
        if maxlen.shape.ndims is not None and maxlen.shape.ndims != 0:
            raise ValueError("maxlen must be scalar for sequence_mask")
        row_vector = _op("Range", [_to_tensor(0, dtype=maxlen.dtype), maxlen,
                                   _to_tensor(1, dtype=maxlen.dtype)], (), "Range")
        matrix = _ops.cast(_ops.expand_dims(lengths, -1), maxlen.dtype)
        result = _ops.less(row_vector, matrix)
        dtype = _dtypes.as_dtype(dtype)
        return result if dtype == _dtypes.bool else _ops.cast(result, dtype)


UniqueOutput = _collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCountsOutput = _collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def unique(x, out_idx=_dtypes.int32, name=None):
    """(y, idx): x's distinct values in order of first appearance, and x = y[idx]."""
    y, idx = _op("Unique", [_to_tensor(x)],
                 [("out_idx", _T, _dtypes.as_dtype(out_idx).as_datatype_enum)], name or "Unique")
    return UniqueOutput(y, idx)


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    y, idx, count = _op("UniqueWithCounts", [_to_tensor(x)],
                        [("out_idx", _T, _dtypes.as_dtype(out_idx).as_datatype_enum)],
                        name or "UniqueWithCounts")
    return UniqueWithCountsOutput(y, idx, count)


def _descending_sort(values, axis, return_argsort):
    """TopKV2 with k the axis' size, over the axis moved last (TensorFlow's sort)."""
    rank = values.shape.ndims
    k = _ops.shape(values)[axis]
    transposition = None
    if not (axis == -1 or (rank is not None and axis + 1 == rank)):
        if rank is None:
            raise ValueError("sort along an axis other than the last needs a known rank")
        if axis < 0:
            axis += rank
        perm = _np.r_[_np.arange(axis), [rank - 1], _np.arange(axis + 1, rank - 1), [axis]]
        transposition = _fw.constant(perm.astype(_np.int32), name="transposition")
        values = _ops.transpose(values, transposition)
    top, indices = _ops.top_k(values, k)
    out = indices if return_argsort else top
    if transposition is not None:
        out = _ops.transpose(out, transposition)
    return out


def _sort_or_argsort(values, axis, direction, return_argsort):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError("%s should be one of ASCENDING, DESCENDING" % direction)
    static_axis = _static_int(axis)
    if static_axis is None:
        raise ValueError("axis must be a constant scalar")
    values = _to_tensor(values, name="values")
    if direction == "DESCENDING":
        return _descending_sort(values, static_axis, return_argsort)
    out = _descending_sort(_ops.negative(values), static_axis, return_argsort)
    return out if return_argsort else _ops.negative(out)


def sort(values, axis=-1, direction="ASCENDING", name=None):
    with _fw.name_scope(name, "sort"):
        return _sort_or_argsort(values, axis, direction, False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """int32 indices that sort values along axis (TopKV2's, so ties keep their order)."""
    with _fw.name_scope(name, "argsort"):
        return _sort_or_argsort(values, axis, direction, True)


ListDiffOutput = _collections.namedtuple("ListDiff", ["out", "idx"])


def setdiff1d(x, y, index_dtype=_dtypes.int32, name=None):
    """(out, idx): x's elements that are not in y, in x's order with duplicates kept, and their
    positions in x (ListDiff). Unlike numpy's setdiff1d nothing is sorted or made unique."""
    x = _to_tensor(x)
    out, idx = _op("ListDiff", [x, _to_tensor(y, dtype=x.dtype)],
                   [("out_idx", _T, _dtypes.as_dtype(index_dtype).as_datatype_enum)],
                   name or "ListDiff")
    return ListDiffOutput(out, idx)


def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    """Per innermost row, where values would go in sorted_sequence (LowerBound for side='left',
    UpperBound for 'right'); as TensorFlow, both are flattened to [-1, last dim] first, so the
    leading dims must hold the same number of rows."""
    if side not in ("left", "right"):
        raise ValueError("side must be either 'right' or 'left'.  Saw: %s." % side)
    seq = _to_tensor(sorted_sequence)
    vals = _to_tensor(values, dtype=seq.dtype)
    with _fw.name_scope(name, "searchsorted", [seq, vals]):
        seq_2d = _ops.reshape(seq, _ops.stack([-1, _ops.shape(seq)[-1]]))
        vals_2d = _ops.reshape(vals, _ops.stack([-1, _ops.shape(vals)[-1]]))
        out = _op("UpperBound" if side == "right" else "LowerBound", [seq_2d, vals_2d],
                  [("out_type", _T, _dtypes.as_dtype(out_type).as_datatype_enum)])
        return _ops.reshape(out, _ops.shape(vals))


def _bucketize(input, boundaries, name=None):  # noqa: A002 -- TensorFlow's names
    """Bucketize: for each value the number of boundaries (a sorted list of floats) at or below
    it, as int32; TensorFlow 1.15's math_ops._bucketize, which tf.feature_column uses."""
    if not isinstance(boundaries, (list, tuple)):
        raise TypeError("Expected list for 'boundaries' argument to 'bucketize' Op, not %r."
                        % (boundaries,))
    return _op("Bucketize", [_to_tensor(input)],
               [("boundaries", "list_float", [float(b) for b in boundaries])],
               name or "Bucketize")


def unravel_index(indices, dims, name=None):
    """The coordinates of flat indices in an array of shape dims (UnravelIndex): [len(dims)]
    for a scalar index, [len(dims), len(indices)] for a vector."""
    indices = _to_tensor(indices)
    return _op("UnravelIndex", [indices, _to_tensor(dims, dtype=indices.dtype)], (),
               name or "UnravelIndex")


def cross(a, b, name=None):
    """The cross product of the 3-vectors in the last dimension of a and b (Cross)."""
    a = _to_tensor(a)
    return _op("Cross", [a, _to_tensor(b, dtype=a.dtype)], (), name or "Cross")


def _einsum_output_labels(input_labels):
    """The implicit output of an equation without '->': the labels that appear once, sorted,
    after '...' when an input has one (numpy's and TensorFlow's rule)."""
    counts = {}
    for labels in input_labels:
        for ch in labels.replace("...", ""):
            counts[ch] = counts.get(ch, 0) + 1
    out = "".join(sorted(ch for ch, k in counts.items() if k == 1))
    return ("..." if any("..." in labels for labels in input_labels) else "") + out


def einsum(equation, *inputs, **kwargs):
    """Einstein summation (the Einsum op, as TensorFlow 1.15 builds it): spaces dropped, an
    implicit output resolved here, and more than two operands contracted left to right, each
    intermediate keeping the labels a later operand or the output still needs."""
    name = kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError("invalid keyword arguments for this function: " +
                        ", ".join(sorted(kwargs)))
    equation = equation.replace(" ", "")
    match = _re.match(r"^([a-zA-Z,.]+)(->[a-zA-Z.]*)?$", equation)
    if not match:
        raise ValueError("Indices have incorrect format: %s" % equation)
    input_labels = match.group(1).split(",")
    if len(input_labels) != len(inputs):
        raise ValueError('Got %d arguments for equation "%s", expecting %d' %
                         (len(inputs), equation, len(input_labels)))
    output_labels = match.group(2)[2:] if match.group(2) else \
        _einsum_output_labels(input_labels)
    tensors = [_to_tensor(t) for t in inputs]
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise TypeError("einsum: all operands must have one dtype, got %s and %s"
                            % (tensors[0].dtype.name, t.dtype.name))

    def build(ops, eq):
        return _op("Einsum", [ops], [("equation", "string", eq), ("N", "int", len(ops))],
                   "Einsum")

    with _fw.name_scope(name, "einsum", tensors):
        if len(tensors) <= 2:
            return build(tensors, "%s->%s" % (",".join(input_labels), output_labels))
        acc, acc_labels = tensors[0], input_labels[0]
        for k in range(1, len(tensors)):
            labels = input_labels[k]
            if k == len(tensors) - 1:
                result = output_labels
            else:
                needed = set(output_labels + "".join(input_labels[k + 1:])) - {"."}
                seen = []
                for ch in (acc_labels + labels).replace("...", ""):
                    if ch in needed and ch not in seen:
                        seen.append(ch)
                ell = "..." if "..." in acc_labels or "..." in labels else ""
                result = ell + "".join(seen)
            acc = build([acc, tensors[k]], "%s,%s->%s" % (acc_labels, labels, result))
            acc_labels = result
        return acc


# ---------------------------------------------------------------------------------------------
# Shapes, reversal, partitioning

def broadcast_to(input, shape, name=None):  # noqa: A002 -- TensorFlow's names
    return _op("BroadcastTo", [_to_tensor(input), _int32(shape) if not isinstance(shape, Tensor)
                               else shape], (), name or "BroadcastTo")


def linspace(start, stop, num, name=None):
    start = _to_tensor(start)
    return _op("LinSpace", [start, _to_tensor(stop, dtype=start.dtype.base_dtype),
                            _to_tensor(num, dtype=_dtypes.int32)
                            if not isinstance(num, Tensor) else num], (), name or "LinSpace")


lin_space = linspace


def meshgrid(*args, **kwargs):
    """N-D coordinate grids: each 1-D input reshaped to its own axis and multiplied by ones of
    the grid's shape; indexing 'xy' (default) swaps the first two axes."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        key = list(kwargs)[0]
        raise TypeError("'{}' is an invalid keyword argument for this function".format(key))
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    with _fw.name_scope(name, "meshgrid", args):
        args = [_to_tensor(a) for a in args]
        ndim = len(args)
        s0 = (1,) * ndim
        output = [_ops.reshape(x, s0[:i] + (-1,) + s0[i + 1:]) for i, x in enumerate(args)]
        shapes = [_ops.size(x) for x in args]
        dtype = args[0].dtype.base_dtype
        if indexing == "xy" and ndim > 1:
            output[0] = _ops.reshape(output[0], (1, -1) + (1,) * (ndim - 2))
            output[1] = _ops.reshape(output[1], (-1, 1) + (1,) * (ndim - 2))
            shapes[0], shapes[1] = shapes[1], shapes[0]
        mult_fact = _ops.ones(_ops.stack(shapes), dtype)
        return [_ops.multiply(x, mult_fact) for x in output]


def roll(input, shift, axis, name=None):  # noqa: A002
    shift = _to_tensor(shift, dtype=_dtypes.int32) if not isinstance(shift, Tensor) else shift
    axis = _to_tensor(axis, dtype=_dtypes.int32) if not isinstance(axis, Tensor) else axis
    return _op("Roll", [_to_tensor(input), shift, axis], (), name or "Roll")


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None, name=None,  # noqa: A002
                     seq_dim=None, batch_dim=None):
    seq_axis = seq_axis if seq_axis is not None else seq_dim
    batch_axis = batch_axis if batch_axis is not None else batch_dim
    lengths = _to_tensor(seq_lengths, dtype=_dtypes.int64) \
        if not isinstance(seq_lengths, Tensor) else seq_lengths
    return _op("ReverseSequence", [_to_tensor(input), lengths],
               [("seq_dim", "int", int(seq_axis)), ("batch_dim", "int", int(batch_axis or 0))],
               name or "ReverseSequence")


def reverse(tensor, axis, name=None):
    """tensor with the dimensions in axis reversed (TensorFlow 1.x's reverse_v2)."""
    axis = _int32(axis) if not isinstance(axis, Tensor) else axis
    return _op("ReverseV2", [_to_tensor(tensor), axis], (), name or "ReverseV2")


reverse_v2 = reverse


def dynamic_partition(data, partitions, num_partitions, name=None):
    outs = _op("DynamicPartition", [_to_tensor(data), _to_tensor(partitions, dtype=_dtypes.int32)],
               [("num_partitions", "int", int(num_partitions))], name or "DynamicPartition")
    return outs if isinstance(outs, list) else [outs]


def dynamic_stitch(indices, data, name=None):
    indices = [_to_tensor(i, dtype=_dtypes.int32) for i in indices]
    data = [_to_tensor(d) for d in data]
    return _op("DynamicStitch", [indices, data], (), name or "DynamicStitch")


def invert_permutation(x, name=None):
    return _op("InvertPermutation", [_to_tensor(x)], (), name or "InvertPermutation")


# ---------------------------------------------------------------------------------------------
# Counting

def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    with _fw.name_scope(name, "histogram_fixed_width", [values, value_range, nbins]) as scope:
        values = _to_tensor(values)
        return _op("HistogramFixedWidth",
                   [values, _to_tensor(value_range, dtype=values.dtype.base_dtype),
                    _to_tensor(nbins, dtype=_dtypes.int32)],
                   [("dtype", _T, _dtypes.as_dtype(dtype).as_datatype_enum)], scope)


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32):
    """Counts of each value of the int32 arr (weights summed instead when given), over
    max(arr) + 1 bins, at least minlength and at most maxlength."""
    with _fw.name_scope(None, "bincount", [arr, weights, minlength, maxlength]):
        arr = _to_tensor(arr, dtype=_dtypes.int32, name="arr")
        nonempty = _ops.greater(_ops.reduce_prod(_ops.shape(arr)), 0)
        output_size = _ops.multiply(_ops.cast(nonempty, _dtypes.int32),
                                    _ops.add(_ops.reduce_max(arr), 1))
        if minlength is not None:
            output_size = _ops.maximum(_to_tensor(minlength, dtype=_dtypes.int32,
                                                  name="minlength"), output_size)
        if maxlength is not None:
            output_size = _ops.minimum(_to_tensor(maxlength, dtype=_dtypes.int32,
                                                  name="maxlength"), output_size)
        if weights is not None:
            weights = _to_tensor(weights, name="weights")
            return _ops.unsorted_segment_sum(weights, arr, output_size)
        empty = _fw.constant(_np.zeros([0], _dtypes.as_dtype(dtype).as_numpy_dtype), dtype=dtype)
        return _op("Bincount", [arr, output_size, empty], (), "Bincount")


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=_dtypes.int64, name=None,
                  reduction_indices=None, keep_dims=None):
    keep = keepdims if keepdims is not None else keep_dims
    axis = axis if axis is not None else reduction_indices
    with _fw.name_scope(name, "count_nonzero", [input_tensor]):
        x = _to_tensor(input_tensor, name="input_tensor")
        zero = _ops.zeros([], dtype=x.dtype.base_dtype)
        nonzero = _ops.cast(_ops.not_equal(x, zero), _dtypes.int64)
        return _ops.cast(_ops.reduce_sum(nonzero, axis=axis, keepdims=keep), dtype)


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=_dtypes.int32,
                     name=None):
    """m[label, prediction] summed over the examples (weights, or 1 each): ScatterNd of the
    (label, prediction) pairs, which adds duplicates."""
    from . import debugging as _debugging
    with _fw.name_scope(name, "confusion_matrix", [predictions, labels, num_classes, weights]):
        labels = _ops.cast(_to_tensor(labels, name="labels"), _dtypes.int64)
        predictions = _ops.cast(_to_tensor(predictions, name="predictions"), _dtypes.int64)
        checks = [_debugging.assert_non_negative(labels, message="`labels` contains negative "
                                                 "values"),
                  _debugging.assert_non_negative(predictions, message="`predictions` contains "
                                                 "negative values")]
        if num_classes is None:
            num_classes = _ops.add(_ops.maximum(_ops.reduce_max(predictions),
                                                _ops.reduce_max(labels)), 1)
        else:
            num_classes = _ops.cast(_to_tensor(num_classes), _dtypes.int64)
            checks += [_debugging.assert_less(labels, num_classes,
                                              message="`labels` out of bound"),
                       _debugging.assert_less(predictions, num_classes,
                                              message="`predictions` out of bound")]
        with _fw.control_dependencies(checks):
            labels = _ops.identity(labels)
            predictions = _ops.identity(predictions)
        dtype = _dtypes.as_dtype(dtype)
        if weights is not None:
            weights = _to_tensor(weights, name="weights")
            if not predictions.shape.is_compatible_with(weights.shape):
                raise ValueError("Shapes %s and %s are incompatible"
                                 % (predictions.shape, weights.shape))
            values = _ops.cast(weights, dtype)
        else:
            values = _ops.ones_like(predictions, dtype)
        shape = _ops.stack([num_classes, num_classes])
        indices = _ops.stack([labels, predictions], axis=1)
        return scatter_nd(indices, values, shape)


# ---------------------------------------------------------------------------------------------
# Segments

def _segment(op_type):
    def fn(data, segment_ids, name=None):
        return _op(op_type, [_to_tensor(data), _to_tensor(segment_ids)], (), name or op_type)
    fn.__name__ = op_type
    return fn


segment_mean = _segment("SegmentMean")
segment_max = _segment("SegmentMax")
segment_min = _segment("SegmentMin")
segment_prod = _segment("SegmentProd")


def _unsorted_segment(op_type):
    def fn(data, segment_ids, num_segments, name=None):
        ids = _to_tensor(segment_ids)
        return _op(op_type, [_to_tensor(data), ids, _to_tensor(num_segments, dtype=ids.dtype)],
                   (), name or op_type)
    fn.__name__ = op_type
    return fn


unsorted_segment_max = _unsorted_segment("UnsortedSegmentMax")
unsorted_segment_min = _unsorted_segment("UnsortedSegmentMin")
unsorted_segment_prod = _unsorted_segment("UnsortedSegmentProd")


def _sparse_segment(op_type):
    def fn(data, indices, segment_ids, name=None, num_segments=None):
        """Rows indices names of data, reduced by sorted segment_ids (TF 1.15's signature); with
        num_segments, the WithNumSegments op, whose output has num_segments rows."""
        args = [_to_tensor(data), _to_tensor(indices), _to_tensor(segment_ids)]
        if num_segments is None:
            return _op(op_type, args, (), name or op_type)
        full = op_type + "WithNumSegments"
        return _op(full, args + [_to_tensor(num_segments)], (), name or full)
    fn.__name__ = op_type
    return fn


sparse_segment_sum = _sparse_segment("SparseSegmentSum")
sparse_segment_mean = _sparse_segment("SparseSegmentMean")
sparse_segment_sqrt_n = _sparse_segment("SparseSegmentSqrtN")


def _unsorted_segment_n(data, segment_ids, num_segments):
    """How many entries each segment has (at least 1), shaped to broadcast against its sums."""
    ones = _ops.ones(_ops.shape(segment_ids), dtype=data.dtype.base_dtype)
    n = _ops.unsorted_segment_sum(ones, segment_ids, num_segments)
    extra = data.shape.ndims - segment_ids.shape.ndims
    num = _ops.reshape(_to_tensor(num_segments, dtype=segment_ids.dtype), [1])
    shape = _ops.concat([num, _ops.ones([extra], dtype=num.dtype)], 0)
    return _ops.maximum(_ops.reshape(n, shape), _to_tensor(1, dtype=data.dtype.base_dtype))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    with _fw.name_scope(name, "UnsortedSegmentMean"):
        data, segment_ids = _to_tensor(data), _to_tensor(segment_ids)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return _ops.divide(_ops.unsorted_segment_sum(data, segment_ids, num_segments), n)


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    with _fw.name_scope(name, "UnsortedSegmentSqrtN"):
        data, segment_ids = _to_tensor(data), _to_tensor(segment_ids)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return _ops.divide(_ops.unsorted_segment_sum(data, segment_ids, num_segments),
                           _ops.sqrt(n))


# ---------------------------------------------------------------------------------------------
# Math

igamma = _ops._binary("Igamma", "Igamma")
igammac = _ops._binary("Igammac", "Igammac")
truncatediv = _ops._binary("TruncateDiv", "TruncateDiv")
truncatemod = _ops._binary("TruncateMod", "TruncateMod")
div_no_nan = _ops._binary("DivNoNan", "div_no_nan")
zeta = _ops._binary("Zeta", "Zeta")
polygamma = _ops._binary("Polygamma", "Polygamma")
xdivy = _ops._binary("Xdivy", "Xdivy")
xlogy = _ops._binary("Xlogy", "Xlogy")
xlog1py = _ops._binary("Xlog1py", "Xlog1py")
multiply_no_nan = _ops._binary("MulNoNan", "MulNoNan")
nextafter = _ops._binary("NextAfter", "NextAfter")
erfinv = _ops._unary("Erfinv")
ndtri = _ops._unary("Ndtri")
bessel_i0e = _ops._unary("BesselI0e")
bessel_i1e = _ops._unary("BesselI1e")
cumulative_logsumexp = _ops._cumulative("CumulativeLogsumexp")


def _bessel_unscaled(scaled, default_name):
    def fn(x, name=None):
        """exp(|x|) times the exponentially scaled function, as TensorFlow builds it."""
        with _fw.name_scope(name, default_name, [x]):
            x = _to_tensor(x, name="x")
            return _ops.multiply(_ops.exp(_ops.abs(x)), scaled(x))
    fn.__name__ = default_name
    return fn


bessel_i0 = _bessel_unscaled(bessel_i0e, "bessel_i0")
bessel_i1 = _bessel_unscaled(bessel_i1e, "bessel_i1")


def approximate_equal(x, y, tolerance=0.00001, name=None):
    """|x - y| < tolerance elementwise, x and y of one shape (ApproximateEqual)."""
    x, y = _ops._same_type(x, y, "ApproximateEqual")
    return _op("ApproximateEqual", [x, y], [("tolerance", "float", float(tolerance))],
               name or "ApproximateEqual")


def betainc(a, b, x, name=None):
    a = _to_tensor(a)
    dt = a.dtype.base_dtype
    return _op("Betainc", [a, _to_tensor(b, dtype=dt), _to_tensor(x, dtype=dt)], (),
               name or "Betainc")


def lbeta(x, name=None):
    """log(|Beta(x)|) over the last dimension: sum(lgamma(x)) - lgamma(sum(x))."""
    with _fw.name_scope(name, "lbeta", [x]):
        x = _to_tensor(x, name="x")
        log_prod_gamma_x = _ops.reduce_sum(_ops.lgamma(x), axis=[-1])
        log_gamma_sum_x = _ops.lgamma(_ops.reduce_sum(x, axis=[-1]))
        return _ops.subtract(log_prod_gamma_x, log_gamma_sum_x)


def reciprocal_no_nan(x, name=None):
    """1 / x, and 0 where x is 0."""
    with _fw.name_scope(name, "reciprocal_no_nan", [x]) as scope:
        x = _to_tensor(x, name="x")
        one = _fw.constant(1, dtype=x.dtype.base_dtype, name="one")
        return _op("DivNoNan", [one, x], (), scope)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    with _fw.name_scope(name or "reduce_variance"):
        x = _to_tensor(input_tensor)
        means = _ops.reduce_mean(x, axis=axis, keepdims=True)
        return _ops.reduce_mean(_ops.square(_ops.subtract(x, means)), axis=axis,
                                keepdims=keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    with _fw.name_scope(name or "reduce_std"):
        return _ops.sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims))


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The sum of inputs, all of one shape and dtype (AccumulateNV2)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    inputs = [_to_tensor(i) for i in inputs]
    if any(i.dtype.base_dtype != inputs[0].dtype.base_dtype for i in inputs):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    if tensor_dtype is not None and _dtypes.as_dtype(tensor_dtype) != inputs[0].dtype.base_dtype:
        raise TypeError("tensor_dtype is {}, but input is of type {}".format(
            _dtypes.as_dtype(tensor_dtype).name, inputs[0].dtype.base_dtype.name))
    shape = _fw.as_shape(shape) if shape is not None else _fw.TensorShape(None)
    for i in inputs:
        shape = shape.merge_with(i.shape)
    if len(inputs) == 1:
        return inputs[0] if name is None else _ops.identity(inputs[0], name=name)
    return _op("AccumulateNV2", [inputs],
               [("shape", "shape", shape.as_list() if shape.ndims is not None else None)],
               name or "AccumulateNV2")


def scalar_mul(scalar, x, name=None):
    """scalar * x, for a Tensor or an IndexedSlices x (its values scaled)."""
    values = _to_tensor(_values_of(x))
    scalar = _to_tensor(scalar, dtype=values.dtype.base_dtype, name="scalar")
    if scalar.shape.ndims != 0:
        raise ValueError("Only scalar multiply works, got shape %s" % scalar.shape)
    with _fw.name_scope(name, "scalar_mul", [values]) as scope:
        return _like(x, _op("Mul", [scalar, values], (), scope))


def tensordot(a, b, axes, name=None):
    """sum over a's axes[0] and b's axes[1]: both transposed and reshaped to matrices, one
    MatMul, and the result reshaped to a's free dimensions + b's (static shapes)."""
    with _fw.name_scope(name, "Tensordot", [a, b, axes]) as scope:
        a = _to_tensor(a, name="a")
        b = _to_tensor(b, name="b", dtype=a.dtype.base_dtype)
        if a.shape.ndims is None or b.shape.ndims is None:
            raise ValueError("tensordot in weft needs a and b of known rank")
        if isinstance(axes, (int, _np.integer)):
            if axes < 0:
                raise ValueError("'axes' must be at least 0.")
            if axes > a.shape.ndims or axes > b.shape.ndims:
                raise ValueError("'axes' must not be larger than the number of dimensions of "
                                 "tensor %s." % (a if axes > a.shape.ndims else b))
            a_axes = list(range(a.shape.ndims - axes, a.shape.ndims))
            b_axes = list(range(axes))
        else:
            a_axes, b_axes = axes
            a_axes = [a_axes] if isinstance(a_axes, int) else list(a_axes)
            b_axes = [b_axes] if isinstance(b_axes, int) else list(b_axes)
            if len(a_axes) != len(b_axes):
                raise ValueError("Different number of contraction axes 'a' and 'b', %s != %s."
                                 % (len(a_axes), len(b_axes)))

        def reshaped(t, t_axes, flipped):
            rank = t.shape.ndims
            t_axes = [i % rank if rank else i for i in t_axes]
            free = [i for i in range(rank) if i not in t_axes]
            dims = t.shape.as_list()
            free_dims = [dims[i] for i in free]
            perm = t_axes + free if flipped else free + t_axes
            prod_free = int(_np.prod(free_dims)) if None not in free_dims else -1
            prod_axes = int(_np.prod([dims[i] for i in t_axes])) \
                if None not in [dims[i] for i in t_axes] else -1
            new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
            if perm != list(range(rank)):
                t = _ops.transpose(t, perm)
            if new_shape != dims:
                t = _ops.reshape(t, new_shape)
            return t, free_dims

        a_mat, a_free = reshaped(a, a_axes, False)
        b_mat, b_free = reshaped(b, b_axes, True)
        ab = _ops.matmul(a_mat, b_mat)
        out_dims = a_free + b_free
        if None in out_dims:
            raise ValueError("tensordot in weft needs the free dimensions to be known")
        return _ops.reshape(ab, out_dims, name=scope)


# ---------------------------------------------------------------------------------------------
# Clipping

def _values_of(t):
    from .resource_variable_ops import IndexedSlices
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t, values):
    from .resource_variable_ops import IndexedSlices
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def _as_sequence(t_list):
    if isinstance(t_list, (str, bytes)) or not isinstance(t_list, _collections.abc.Sequence):
        raise TypeError("t_list should be a sequence")
    return list(t_list)


def _ones_like(t):
    """TensorFlow's graph-mode ones_like: a constant for a fully defined shape, else Fill of the
    Shape, neither of which the gradient walks through (the core has no OnesLike gradient)."""
    dtype = t.dtype.base_dtype
    if t.shape.is_fully_defined():
        return _ops.ones(t.shape.as_list(), dtype, name="ones_like")
    return _ops.ones(_ops.shape(t), dtype, name="ones_like")


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(l2norm(t), clip_norm), the norm over axes (all by default); an
    IndexedSlices clips its values."""
    with _fw.name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = _to_tensor(_values_of(t), name="t")
        l2sum = _ops.reduce_sum(_ops.multiply(values, values), axes, keepdims=True)
        pred = _ops.greater(l2sum, _to_tensor(0, dtype=l2sum.dtype.base_dtype))
        # sqrt only of positive sums, so its gradient stays finite at a zero t
        l2sum_safe = _ops.where(pred, l2sum, _ones_like(l2sum))
        l2norm = _ops.where(pred, _ops.sqrt(l2sum_safe), l2sum)
        clip = _to_tensor(clip_norm, dtype=values.dtype.base_dtype)
        intermediate = _ops.multiply(values, clip)
        clipped = _ops.identity(_ops.divide(intermediate, _ops.maximum(l2norm, clip)),
                                name=scope)
        return _like(t, clipped)


def global_norm(t_list, name=None):
    """sqrt(sum of l2norm(t)^2) over t_list (None entries skipped, IndexedSlices' values)."""
    t_list = _as_sequence(t_list)
    with _fw.name_scope(name, "global_norm", [t for t in t_list if t is not None]):
        values = [_to_tensor(_values_of(t), name="t_%d" % i)
                  for i, t in enumerate(t_list) if t is not None]
        half_squared_norms = [_op("L2Loss", [v], (), "L2Loss") for v in values]
        half_squared_norm = _ops.reduce_sum(_ops.stack(half_squared_norms))
        return _ops.sqrt(_ops.multiply(half_squared_norm,
                                       _fw.constant(2.0, dtype=half_squared_norm.dtype)),
                         name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(t_list scaled by clip_norm / max(global_norm, clip_norm), global_norm): None stays None,
    an IndexedSlices stays one; an infinite norm gives NaNs, as in TensorFlow."""
    t_list = _as_sequence(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with _fw.name_scope(name, "clip_by_global_norm",
                        [t for t in t_list if t is not None]) as scope:
        dt = use_norm.dtype.base_dtype
        clip = _to_tensor(clip_norm, dtype=dt)
        one = _fw.constant(1.0, dtype=dt)
        scale_for_finite = _ops.multiply(clip, _ops.minimum(_ops.divide(one, use_norm),
                                                            _ops.divide(one, clip)))
        # use_norm - use_norm is NaN for an infinite norm: the result says so
        scale = _ops.add(scale_for_finite, _ops.subtract(use_norm, use_norm))
        clipped = []
        for i, t in enumerate(t_list):
            if t is None:
                clipped.append(None)
                continue
            v = _to_tensor(_values_of(t), name="t_%d" % i)
            clipped.append(_like(t, _ops.identity(_ops.multiply(v, scale),
                                                  name="%s_%d" % (scope, i))))
        return clipped, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """t * clip_norm / max(l2norm(t) / size(t), clip_norm)."""
    with _fw.name_scope(name, "clip_by_average_norm", [t, clip_norm]) as scope:
        t = _to_tensor(t, name="t")
        dt = t.dtype.base_dtype
        # in t's dtype, where TensorFlow's float32 constants refuse a float64 t
        n_element = _ops.cast(_ops.size(t), dt)
        l2norm_inv = _ops.rsqrt(_ops.reduce_sum(_ops.multiply(t, t),
                                                _ops.range(_ops.rank(t))))
        clip = _to_tensor(clip_norm, dtype=dt)
        factor = _ops.minimum(_ops.multiply(l2norm_inv, n_element),
                              _ops.divide(_fw.constant(1.0, dtype=dt), clip))
        return _ops.identity(_ops.multiply(_ops.multiply(t, clip), factor), name=scope)


# ---------------------------------------------------------------------------------------------
# Padding, diagonals, space/depth/batch rearrangement, patches, identity_n, parallel_stack,
# random_crop: TensorFlow 1.15's array_ops/random_ops functions over the same ops.

def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """Pad (PadV2 when constant_values is a tensor or non-zero), or MirrorPad for REFLECT and
    SYMMETRIC; mode is case-insensitive."""
    mode = mode.upper()
    if mode == "CONSTANT":
        if not isinstance(constant_values, Tensor) and _np.all(_np.asarray(constant_values) == 0):
            return _op("Pad", [_to_tensor(tensor), _to_tensor(paddings)], (), name or "Pad")
        tensor = _to_tensor(tensor)
        return _op("PadV2", [tensor, _to_tensor(paddings),
                             _to_tensor(constant_values, dtype=tensor.dtype.base_dtype)], (),
                   name or "PadV2")
    if mode in ("REFLECT", "SYMMETRIC"):
        return _op("MirrorPad", [_to_tensor(tensor), _to_tensor(paddings)],
                   [("mode", "string", mode)], name or "MirrorPad")
    raise ValueError("Unknown padding mode: %s" % mode)


def diag(diagonal, name=None):
    """A tensor of rank 2k with diagonal (rank k) on its diagonal (Diag)."""
    return _op("Diag", [_to_tensor(diagonal)], (), name or "Diag")


def diag_part(input, name=None):  # noqa: A002 -- TensorFlow's name
    """The diagonal of a rank-2k tensor (DiagPart)."""
    return _op("DiagPart", [_to_tensor(input)], (), name or "DiagPart")


def _block_op(op_type):
    def fn(input, block_size, name=None, data_format="NHWC"):  # noqa: A002
        return _op(op_type, [_to_tensor(input)],
                   [("block_size", "int", int(block_size)),
                    ("data_format", "string", data_format)], name or op_type)
    fn.__name__ = "depth_to_space" if op_type == "DepthToSpace" else "space_to_depth"
    return fn


depth_to_space = _block_op("DepthToSpace")
space_to_depth = _block_op("SpaceToDepth")


def space_to_batch_nd(input, block_shape, paddings, name=None):  # noqa: A002
    return _op("SpaceToBatchND", [_to_tensor(input), _to_tensor(block_shape),
                                  _to_tensor(paddings)], (), name or "SpaceToBatchND")


def batch_to_space_nd(input, block_shape, crops, name=None):  # noqa: A002
    return _op("BatchToSpaceND", [_to_tensor(input), _to_tensor(block_shape),
                                  _to_tensor(crops)], (), name or "BatchToSpaceND")


def _block_size(block_size, block_shape, fn):
    if block_shape is not None and block_size is not None:
        raise ValueError("Cannot specify both 'block_shape' and 'block_size'.")
    block = block_size if block_size is not None else block_shape
    if block is None:
        raise TypeError("%s() missing required argument: 'block_size'" % fn)
    return _np.array([block, block], dtype=_np.int64)


def space_to_batch(input, paddings, block_size=None, name=None, block_shape=None):  # noqa: A002
    """space_to_batch_nd with a square block over the two spatial dimensions of a 4-D input."""
    result = space_to_batch_nd(input, _block_size(block_size, block_shape, "space_to_batch"),
                               paddings, name=name)
    result.set_shape([None] * 4)
    return result


def batch_to_space(input, crops, block_size=None, name=None, block_shape=None):  # noqa: A002
    """batch_to_space_nd with a square block over the two spatial dimensions of a 4-D input."""
    result = batch_to_space_nd(input, _block_size(block_size, block_shape, "batch_to_space"),
                               crops, name=name)
    result.set_shape([None] * 4)
    return result


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None, name=None,
                          sizes=None):
    """ExtractImagePatches; sizes is TensorFlow 2's name for ksizes."""
    if sizes is not None:
        if ksizes is not None:
            raise ValueError("Cannot specify both 'sizes' and 'ksizes'.")
        ksizes = sizes
    for arg, value in (("ksizes", ksizes), ("strides", strides), ("rates", rates),
                       ("padding", padding)):
        if value is None:
            raise TypeError("extract_image_patches() missing required argument: '%s'" % arg)
    return _op("ExtractImagePatches", [_to_tensor(images)],
               [("ksizes", "list_int", [int(k) for k in ksizes]),
                ("strides", "list_int", [int(s) for s in strides]),
                ("rates", "list_int", [int(r) for r in rates]),
                ("padding", "string", padding)], name or "ExtractImagePatches")


def nth_element(input, n, reverse=False, name=None):  # noqa: A002
    """The n-th smallest (largest when reverse) value along the last dimension (NthElement)."""
    return _op("NthElement", [_to_tensor(input), _int32(n)], [("reverse", "bool", bool(reverse))],
               name or "NthElement")


def identity_n(input, name=None):  # noqa: A002
    """IdentityN: a list of tensors passed through together."""
    outs = _op("IdentityN", [[_to_tensor(t) for t in input]], (), name or "IdentityN")
    if isinstance(outs, _fw.Operation):
        return []
    return list(outs) if isinstance(outs, list) else [outs]


def parallel_stack(values, name="parallel_stack"):
    """values (of one known shape) stacked on a new first axis by ParallelConcat."""
    with _fw.name_scope(name):
        value_t = _to_tensor(values[0])
        value_shape = value_t.shape
        if not value_shape.is_fully_defined():
            raise ValueError("parallel_stack needs the values' shape fully defined, got %s"
                             % value_shape)
        output_shape = [len(values)] + value_shape.as_list()
        return _op("ParallelConcat",
                   [[_ops.expand_dims(_to_tensor(v), 0) for v in values]],
                   [("shape", "shape", output_shape)], "ParallelConcat")


def random_crop(value, size, seed=None, name=None):
    """A random slice of value of the given size: an offset drawn uniformly (RandomUniformInt,
    modulo shape - size + 1) after an Assert that value.shape >= size, as TensorFlow builds it."""
    from . import debugging as _debugging
    with _fw.name_scope(name, "random_crop", [value, size]) as name:
        value = _to_tensor(value, name="value")
        size = _to_tensor(size, dtype=_dtypes.int32, name="size")
        shape = _ops.shape(value)
        check = _debugging.Assert(_ops.reduce_all(_ops.greater_equal(shape, size)),
                                  ["Need value.shape >= size, got ", shape, size], summarize=1000)
        with _fw.control_dependencies([check]):
            shape = _ops.identity(shape)
        limit = shape - size + 1
        offset = _ops.random_uniform(_ops.shape(shape), dtype=size.dtype,
                                     maxval=size.dtype.max, seed=seed) % limit
        return _ops.slice(value, offset, size, name=name)
