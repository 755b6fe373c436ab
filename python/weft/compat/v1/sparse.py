"""tf.sparse and tf.SparseTensor: TensorFlow 1.x's sparse tensors as (indices, values,
dense_shape) triples of graph tensors, fetched as SparseTensorValue. The ops are the ones weft
has: to_dense and sparse_to_dense (SparseToDense), add of a sparse and a dense tensor
(SparseTensorDenseAdd), add of two sparse tensors (SparseAdd), sparse_dense_matmul
(SparseTensorDenseMatMul; both differentiable), reorder (SparseReorder), reshape (SparseReshape), concat (SparseConcat),
slice (SparseSlice, differentiable to the values), segment_sum/_mean/_sqrt_n (SparseSegment*, on
dense tensors, as TensorFlow's) and tf.edit_distance (EditDistance). The other tf.sparse functions
(reduce_sum, split, retain, fill_empty_rows, ...) are absent: the core has no ops for them."""
import collections as _collections

import numpy as _np

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from .array_ops import sparse_segment_sum as segment_sum  # noqa: F401
from .array_ops import sparse_segment_mean as segment_mean  # noqa: F401
from .array_ops import sparse_segment_sqrt_n as segment_sqrt_n  # noqa: F401

SparseTensorValue = _collections.namedtuple("SparseTensorValue",
                                            ["indices", "values", "dense_shape"])


class SparseTensor:
    """indices (int64 [N, rank]), values ([N]) and dense_shape (int64 [rank])."""

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(*sparse_tensor_value)

    def __init__(self, indices, values, dense_shape):
        with _fw.name_scope(None, "SparseTensor", []):
            self._static_shape = None
            if not isinstance(dense_shape, _fw.Tensor):
                self._static_shape = [int(d) for d in _np.asarray(dense_shape).reshape(-1)]
            self._indices = _ops._to_tensor(indices, dtype=_dtypes.int64, name="indices")
            self._values = _ops._to_tensor(values, name="values")
            self._dense_shape = _ops._to_tensor(dense_shape, dtype=_dtypes.int64,
                                                name="dense_shape")

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)

    @property
    def shape(self):
        if self._static_shape is not None:
            return _fw.TensorShape(self._static_shape)
        rank = self._dense_shape.shape.as_list()[0] if self._dense_shape.shape.ndims else None
        return _fw.TensorShape(None if rank is None else [None] * rank)

    def get_shape(self):
        return self.shape

    def eval(self, feed_dict=None, session=None):
        from . import session as _session
        return _session._run_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self):
        return "SparseTensor(indices=%s, values=%s, dense_shape=%s)" % (
            self._indices, self._values, self._dense_shape)


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """tf.sparse_to_dense: a dense tensor of shape output_shape holding sparse_values (one per
    index row, or one scalar for all) at sparse_indices, default_value elsewhere (SparseToDense;
    with validate_indices, unsorted, repeated or out-of-bounds indices fail the step)."""
    sparse_values = _ops._to_tensor(sparse_values)
    dtype = sparse_values.dtype.base_dtype
    indices = _ops._to_tensor(sparse_indices)
    return _ops._op("SparseToDense",
                    [indices, _ops._to_tensor(output_shape, dtype=indices.dtype), sparse_values,
                     _ops._to_tensor(default_value, dtype=dtype)],
                    [("validate_indices", "bool", bool(validate_indices))], name or "SparseToDense")


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor of sp_input: its values at its indices, default_value (0, "" for
    strings) elsewhere; SparseToDense, as TensorFlow builds it."""
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    dtype = sp_input.dtype.base_dtype
    if default_value is None:
        default_value = "" if dtype == _dtypes.string else 0
    return sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values,
                           default_value, validate_indices, name)


def add(a, b, threshold=None, thresh=None):
    """a + b. For two SparseTensors (or SparseTensorValues) of one shape, in row-major order: a
    SparseTensor holding the union of their entries, an index in both summed and dropped when
    the sum's magnitude is below threshold (thresh in TensorFlow 1.x; default 0, nothing dropped)
    (SparseAdd; differentiable to both values through SparseAddGrad). For one SparseTensor and
    one dense tensor: a dense tensor (SparseTensorDenseAdd)."""
    sparse_classes = (SparseTensor, SparseTensorValue)
    if isinstance(a, sparse_classes) and isinstance(b, sparse_classes):
        a, b = _sparse(a), _sparse(b)
        if threshold is None:
            threshold = 0 if thresh is None else thresh
        real = a.dtype.base_dtype
        threshold = _ops._to_tensor(threshold, dtype=real)
        indices, values, shape = _ops._op(
            "SparseAdd", [a.indices, a.values, a.dense_shape, b.indices,
                          _ops._to_tensor(b.values, dtype=real), b.dense_shape, threshold],
            (), "SparseAdd")
        static = a._static_shape if a._static_shape is not None else b._static_shape
        if (a._static_shape is not None and b._static_shape is not None
                and a._static_shape != b._static_shape):
            raise ValueError("Shapes %s and %s are incompatible" % (a._static_shape,
                                                                    b._static_shape))
        return SparseTensor(indices, values, static if static is not None else shape)
    if isinstance(a, SparseTensorValue):
        a = _sparse(a)
    if isinstance(b, SparseTensorValue):
        b = _sparse(b)
    if not isinstance(a, SparseTensor):
        a, b = b, a
    if not isinstance(a, SparseTensor):
        raise TypeError("tf.sparse.add takes at least one SparseTensor")
    b = _ops._to_tensor(b, dtype=a.dtype.base_dtype)
    return _ops._op("SparseTensorDenseAdd", [a.indices, a.values, a.dense_shape, b], (),
                    "SparseTensorDenseAdd")


def edit_distance(hypothesis, truth, normalize=True, name="edit_distance"):
    """tf.edit_distance: the Levenshtein distance between the sequences (along the last
    dimension) of two SparseTensors, per position of the other dimensions, divided by the
    truth's length when normalize (EditDistance)."""
    if not isinstance(hypothesis, (SparseTensor, SparseTensorValue)):
        raise TypeError("Hypothesis must be a SparseTensor.")
    if not isinstance(truth, (SparseTensor, SparseTensorValue)):
        raise TypeError("Truth must be a SparseTensor.")
    hypothesis = SparseTensor.from_value(hypothesis)
    truth = SparseTensor.from_value(truth)
    return _ops._op("EditDistance",
                    [hypothesis.indices, hypothesis.values, hypothesis.dense_shape,
                     truth.indices, truth.values, truth.dense_shape],
                    [("normalize", "bool", bool(normalize))], name)


def _sparse(sp_input):
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """tf.sparse.sparse_dense_matmul (tf.sparse_tensor_dense_matmul): the rank-2 SparseTensor
    sp_a (or its transpose, adjoint_a) times the dense matrix b (or its transpose, adjoint_b);
    a dense [rows, cols] tensor (SparseTensorDenseMatMul). Entries with the same index add up."""
    sp_a = _sparse(sp_a)
    b = _ops._to_tensor(b, dtype=sp_a.dtype.base_dtype)
    return _ops._op("SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, sp_a.dense_shape, b],
                    [("adjoint_a", "bool", bool(adjoint_a)),
                     ("adjoint_b", "bool", bool(adjoint_b))], name or "SparseTensorDenseMatMul")


sparse_tensor_dense_matmul = sparse_dense_matmul
matmul = sparse_dense_matmul


def reorder(sp_input, name=None):
    """tf.sparse.reorder (tf.sparse_reorder): sp_input with its entries sorted into row-major
    order of their indices, the values following (SparseReorder; the values' gradient is
    permuted back)."""
    sp_input = _sparse(sp_input)
    indices, values = _ops._op("SparseReorder",
                               [sp_input.indices, sp_input.values, sp_input.dense_shape], (),
                               name or "SparseReorder")
    return SparseTensor(indices, values, sp_input.dense_shape)


def reshape(sp_input, shape, name=None):
    """tf.sparse.reshape (tf.sparse_reshape): sp_input with the dense shape `shape` (one -1
    inferred), each entry at its row-major position in the new shape (SparseReshape; the values
    pass through an Identity, so gradients flow to them). With a constant shape and sp_input's
    static shape known, the shapes are checked and the result's shape is static, as
    TensorFlow's."""
    sp_input = _sparse(sp_input)
    new_shape = _ops._to_tensor(shape, dtype=_dtypes.int64)
    indices, out_shape = _ops._op("SparseReshape",
                                  [sp_input.indices, sp_input.dense_shape, new_shape], (),
                                  name or "SparseReshape")
    static = None
    if not isinstance(shape, _fw.Tensor) and sp_input._static_shape is not None:
        static = [int(d) for d in _np.asarray(shape).reshape(-1)]
        if sum(d == -1 for d in static) > 1:
            raise ValueError("At most one dimension can be inferred (-1). Found: %s" % static)
        size = int(_np.prod(sp_input._static_shape, dtype=_np.int64))
        original = list(static)
        if -1 in static:
            known = int(_np.prod([d for d in static if d != -1], dtype=_np.int64))
            static[static.index(-1)] = size // known if known else 0
        if int(_np.prod(static, dtype=_np.int64)) != size:
            raise ValueError("Cannot reshape a tensor with %d elements to shape %s (%d elements)."
                             % (size, original, int(_np.prod(static, dtype=_np.int64))))
    return SparseTensor(indices, _ops._op("Identity", [sp_input.values], (), "Identity"),
                        static if static is not None else out_shape)


def concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None,
           expand_nonconcat_dims=None):
    """tf.sparse.concat (tf.sparse_concat): the SparseTensors sp_inputs joined along axis, the
    result's entries in row-major order (SparseConcat; the shapes must agree off axis). With
    expand_nonconcat_dim each input takes the largest size of every other dimension first."""
    if concat_dim is not None:
        axis = concat_dim
    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    sp_inputs = [_sparse(sp) for sp in sp_inputs]
    if len(sp_inputs) == 1:
        return sp_inputs[0]
    axis = int(axis)
    statics = [sp._static_shape for sp in sp_inputs]
    known = all(st is not None for st in statics)
    shapes = [sp.dense_shape for sp in sp_inputs]
    static_out = None
    if known:
        rank = len(statics[0])
        ax = axis + rank if axis < 0 else axis
        if expand_nonconcat_dim:
            top = [max(st[d] for st in statics) for d in range(rank)]
            statics = [[st[d] if d == ax else top[d] for d in range(rank)] for st in statics]
            shapes = [_ops._to_tensor(_np.array(st, _np.int64), dtype=_dtypes.int64)
                      for st in statics]
        if 0 <= ax < rank:
            static_out = list(statics[0])
            static_out[ax] = sum(st[ax] for st in statics)
    elif expand_nonconcat_dim:
        # The shapes at run time: the largest of each dimension, the input's own along axis.
        top = _ops._op("Max", [_ops._op("Pack", [shapes], [("axis", "int", 0)], "Pack"),
                               _ops._to_tensor(0, dtype=_dtypes.int32)],
                       [("keep_dims", "bool", False)], "Max")
        rank = _ops._op("Size", [shapes[0]], (), "Size")
        ax = axis if axis >= 0 else _ops._op("AddV2", [rank, _ops._to_tensor(axis)], (), "add")
        on_axis = _ops._op("Equal", [_ops._op("Range", [_ops._to_tensor(0), rank,
                                                        _ops._to_tensor(1)], (), "Range"),
                                     _ops._to_tensor(ax, dtype=_dtypes.int32)], (), "Equal")
        shapes = [_ops._op("SelectV2", [on_axis, sh, top], (), "SelectV2") for sh in shapes]
    n = len(sp_inputs)
    indices, values, shape = _ops._op(
        "SparseConcat", [[sp.indices for sp in sp_inputs], [sp.values for sp in sp_inputs],
                         shapes],
        [("concat_dim", "int", axis), ("N", "int", n)], name or "SparseConcat")
    return SparseTensor(indices, values, static_out if static_out is not None else shape)


def slice(sp_input, start, size, name=None):  # noqa: A001 -- TensorFlow's name
    """tf.sparse.slice (tf.sparse_slice): the entries of sp_input inside the box [start,
    start + size), shifted by start, in their order; the dense shape is size clipped to sp_input's
    (SparseSlice; the values' gradient goes back through SparseSliceGrad)."""
    sp_input = _sparse(sp_input)
    start = _ops._to_tensor(start, dtype=_dtypes.int64)
    size = _ops._to_tensor(size, dtype=_dtypes.int64)
    indices, values, shape = _ops._op("SparseSlice", [sp_input.indices, sp_input.values,
                                                      sp_input.dense_shape, start, size], (),
                                      name or "SparseSlice")
    return SparseTensor(indices, values, shape)
