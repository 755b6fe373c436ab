"""TensorFlow 1.x's math, array, random and state ops as graph builders over weft's ops (same op
names and attributes as TensorFlow's), plus Tensor's operator overloading."""
import collections
import builtins as _b

import numpy as np

from . import dtypes as _dtypes
from . import framework as _fw
from .framework import Tensor, convert_to_tensor, constant

_T = "type"


def _same_type(x, y, name=None):
    """Converts x and y to tensors of one dtype: a Python/numpy scalar or list takes the other
    operand's dtype (TensorFlow's binary-op rule)."""
    if isinstance(x, Tensor) or hasattr(x, "_as_graph_tensor"):
        x = _to_tensor(x)
        y = _to_tensor(y, dtype=None if isinstance(y, Tensor) else x.dtype.base_dtype)
    elif isinstance(y, Tensor) or hasattr(y, "_as_graph_tensor"):
        y = _to_tensor(y)
        x = _to_tensor(x, dtype=y.dtype.base_dtype)
    else:
        x = _to_tensor(x)
        y = _to_tensor(y, dtype=x.dtype.base_dtype)
    if x.dtype.base_dtype != y.dtype.base_dtype:
        raise TypeError("Input 'y' of '%s' Op has type %s that does not match type %s of "
                        "argument 'x'." % (name or "binary", y.dtype.base_dtype.name,
                                           x.dtype.base_dtype.name))
    return x, y


def _to_tensor(x, dtype=None, name=None):
    if isinstance(x, Tensor):
        if dtype is not None and x.dtype.base_dtype != _dtypes.as_dtype(dtype).base_dtype:
            raise TypeError("Expected %s, got %s of dtype %s instead."
                            % (_dtypes.as_dtype(dtype).name, x.name, x.dtype.name))
        return x
    if hasattr(x, "_as_graph_tensor"):
        return _to_tensor(x._as_graph_tensor(), dtype)
    if isinstance(x, _fw.Operation):
        raise TypeError("Can't convert Operation '%s' to Tensor" % x.name)
    if dtype is not None and isinstance(x, (int, float, bool, np.generic, list, _b.tuple,
                                            np.ndarray)):
        return constant(x, dtype=dtype, name=name or "Const")
    return convert_to_tensor(x, dtype=dtype, name=name)


def _op(op_type, inputs, attrs=(), name=None):
    return _fw._run_op(op_type, inputs, attrs, name)


def _binary(op_type, name_default):
    def fn(x, y, name=None):
        x, y = _same_type(x, y, op_type)
        return _op(op_type, [x, y], (), name or name_default)
    fn.__name__ = name_default
    return fn


def _unary(op_type, name_default=None):
    def fn(x, name=None):
        return _op(op_type, [_to_tensor(x)], (), name or name_default or op_type)
    fn.__name__ = name_default or op_type
    return fn


add = _binary("AddV2", "add")
subtract = _binary("Sub", "sub")
sub = subtract
multiply = _binary("Mul", "mul")
mul = multiply
maximum = _binary("Maximum", "Maximum")
minimum = _binary("Minimum", "Minimum")
pow = _binary("Pow", "pow")  # noqa: A001 -- TensorFlow's name
squared_difference = _binary("SquaredDifference", "SquaredDifference")
floormod = _binary("FloorMod", "FloorMod")
mod = floormod
floordiv = _binary("FloorDiv", "floordiv")
equal = _binary("Equal", "Equal")
not_equal = _binary("NotEqual", "NotEqual")
less = _binary("Less", "Less")
less_equal = _binary("LessEqual", "LessEqual")
greater = _binary("Greater", "Greater")
greater_equal = _binary("GreaterEqual", "GreaterEqual")
logical_and = _binary("LogicalAnd", "LogicalAnd")
logical_or = _binary("LogicalOr", "LogicalOr")
logical_not = _unary("LogicalNot")
negative = _unary("Neg", "Neg")
neg = negative
square = _unary("Square")
sqrt = _unary("Sqrt")
rsqrt = _unary("Rsqrt")
exp = _unary("Exp")
log = _unary("Log")
log1p = _unary("Log1p")
abs = _unary("Abs")  # noqa: A001
sign = _unary("Sign")
sin = _unary("Sin")
cos = _unary("Cos")
tanh = _unary("Tanh")
sigmoid = _unary("Sigmoid")
floor = _unary("Floor")
ceil = _unary("Ceil")
round = _unary("Round")  # noqa: A001
reciprocal = _unary("Reciprocal")
erf = _unary("Erf")
erfc = _unary("Erfc")
expm1 = _unary("Expm1")
lgamma = _unary("Lgamma")
digamma = _unary("Digamma")
tan = _unary("Tan")
asin = _unary("Asin")
acos = _unary("Acos")
atan = _unary("Atan")
sinh = _unary("Sinh")
cosh = _unary("Cosh")
rint = _unary("Rint")
softplus = _unary("Softplus")
softsign = _unary("Softsign")
is_nan = _unary("IsNan")
is_inf = _unary("IsInf")
is_finite = _unary("IsFinite")
atan2 = _binary("Atan2", "Atan2")
identity = _unary("Identity")
stop_gradient = _unary("StopGradient")


def log_sigmoid(x, name=None):
    """log(sigmoid(x)) as TensorFlow writes it: -softplus(-x), exact for large |x|."""
    return negative(softplus(negative(x)), name=name or "LogSigmoid")


def _cumulative(op_type):
    def fn(x, axis=0, exclusive=False, reverse=False, name=None):
        return _op(op_type, [_to_tensor(x), _to_tensor(axis, dtype=_dtypes.int32)],
                   [("exclusive", "bool", bool(exclusive)), ("reverse", "bool", bool(reverse))],
                   name or op_type)
    fn.__name__ = op_type.lower()
    return fn


cumsum = _cumulative("Cumsum")
cumprod = _cumulative("Cumprod")


# TensorFlow's generated wrapper returns this namedtuple, so programs write top_k(x).values.
_TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 -- TensorFlow's names
    """The k largest entries of the last dimension and their indices, a (values, indices)
    namedtuple as TensorFlow's."""
    values, indices = _op("TopKV2", [_to_tensor(input), _to_tensor(k, dtype=_dtypes.int32)],
                          [("sorted", "bool", bool(sorted))], name or "TopKV2")
    return _TopKV2(values, indices)


def segment_sum(data, segment_ids, name=None):
    return _op("SegmentSum", [_to_tensor(data), _to_tensor(segment_ids)], (),
               name or "SegmentSum")


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    ids = _to_tensor(segment_ids)
    return _op("UnsortedSegmentSum", [_to_tensor(data), ids, _to_tensor(num_segments,
                                                                        dtype=ids.dtype)],
               (), name or "UnsortedSegmentSum")


def logical_xor(x, y, name="LogicalXor"):
    return logical_and(logical_or(x, y), logical_not(logical_and(x, y)), name=name)


def divide(x, y, name=None):
    x, y = _same_type(x, y, "RealDiv")
    if x.dtype.is_integer:
        x = cast(x, _dtypes.float64)
        y = cast(y, _dtypes.float64)
    return _op("RealDiv" if x.dtype.is_floating else "Div", [x, y], (), name or "truediv")


truediv = divide


def div(x, y, name=None):
    x, y = _same_type(x, y, "Div")
    return _op("Div", [x, y], (), name or "div")


realdiv = _binary("RealDiv", "RealDiv")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, name=None):
    a, b = _same_type(a, b, "MatMul")
    ta, tb = bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b)
    ra, rb = a.shape.ndims, b.shape.ndims
    if (ra is not None and ra > 2) or (rb is not None and rb > 2):
        return _op("BatchMatMulV2", [a, b], [("adj_x", "bool", ta), ("adj_y", "bool", tb)],
                   name or "MatMul")
    return _op("MatMul", [a, b], [("transpose_a", "bool", ta), ("transpose_b", "bool", tb)],
               name or "MatMul")


def cast(x, dtype, name=None):
    x = _to_tensor(x)
    dtype = _dtypes.as_dtype(dtype).base_dtype
    if x.dtype.base_dtype == dtype:
        return x
    return _op("Cast", [x], [("DstT", _T, dtype.as_datatype_enum)], name or "Cast")


def to_float(x, name="ToFloat"):
    return cast(x, _dtypes.float32, name)


def to_int32(x, name="ToInt32"):
    return cast(x, _dtypes.int32, name)


def to_int64(x, name="ToInt64"):
    return cast(x, _dtypes.int64, name)


def _axis_tensor(x, axis):
    if axis is None:
        rank = x.shape.ndims
        if rank is not None:
            return constant(np.arange(rank, dtype=np.int32), name="Const")
        return _op("Range", [constant(0), _op("Rank", [x]), constant(1)])
    return _to_tensor(axis, dtype=_dtypes.int32)


def _reduction(op_type, default_name):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
           keep_dims=None):
        x = _to_tensor(input_tensor)
        if axis is None:
            axis = reduction_indices
        keep = bool(keepdims if keepdims is not None else (keep_dims or False))
        return _op(op_type, [x, _axis_tensor(x, axis)], [("keep_dims", "bool", keep)],
                   name or default_name)
    fn.__name__ = default_name
    return fn


reduce_sum = _reduction("Sum", "Sum")
reduce_mean = _reduction("Mean", "Mean")
reduce_max = _reduction("Max", "Max")
reduce_min = _reduction("Min", "Min")
reduce_prod = _reduction("Prod", "Prod")
reduce_all = _reduction("All", "All")
reduce_any = _reduction("Any", "Any")


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
                     keep_dims=None):
    """log(sum(exp(x))) over the axes, as TensorFlow computes it: the largest element (0 where it
    is not finite) taken out before the exponentials, so nothing overflows."""
    x = _to_tensor(input_tensor)
    if axis is None:
        axis = reduction_indices
    keep = bool(keepdims if keepdims is not None else (keep_dims or False))
    raw_max = reduce_max(x, axis, keepdims=True)
    my_max = stop_gradient(where(is_finite(raw_max), raw_max, zeros_like(raw_max)))
    result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=keep))
    if not keep:
        my_max = reshape(my_max, shape(result))
    return add(result, my_max, name=name or "ReduceLogSumExp")


def _arg_reduce(op_type):
    def fn(input, axis=None, name=None, dimension=None, output_type=_dtypes.int64):
        if axis is None:
            axis = dimension if dimension is not None else 0
        return _op(op_type, [_to_tensor(input), _to_tensor(axis, dtype=_dtypes.int32)],
                   [("output_type", _T, _dtypes.as_dtype(output_type).as_datatype_enum)],
                   name or op_type)
    fn.__name__ = op_type
    return fn


argmax = _arg_reduce("ArgMax")
argmin = _arg_reduce("ArgMin")


def placeholder(dtype, shape=None, name=None):
    dtype = _dtypes.as_dtype(dtype).base_dtype
    shp = None if shape is None else _fw.as_shape(shape).as_list() \
        if _fw.as_shape(shape).ndims is not None else None
    g = _fw.get_default_graph()
    return g._create_op("Placeholder", [], [("dtype", _T, dtype.as_datatype_enum),
                                            ("shape", "shape", shp)], name or "Placeholder"
                        ).outputs[0]


def placeholder_with_default(input, shape, name=None):
    x = _to_tensor(input)
    shp = _fw.as_shape(shape)
    return _op("PlaceholderWithDefault", [x],
               [("dtype", _T, x.dtype.base_dtype.as_datatype_enum),
                ("shape", "shape", None if shp.ndims is None else shp.as_list())],
               name or "PlaceholderWithDefault")


def reshape(tensor, shape, name=None):
    return _op("Reshape", [_to_tensor(tensor), _to_tensor(shape, dtype=_dtypes.int32)
                           if not isinstance(shape, Tensor) else shape], (), name or "Reshape")


def transpose(a, perm=None, name="transpose", conjugate=False):
    a = _to_tensor(a)
    if perm is None:
        rank = a.shape.ndims
        if rank is None:
            raise ValueError("transpose without perm needs a known rank (tensor %s)" % a.name)
        perm = list(_b.range(rank - 1, -1, -1))
    return _op("Transpose", [a, _to_tensor(perm, dtype=_dtypes.int32)], (), name)


def concat(values, axis, name="concat"):
    values = [_to_tensor(v) for v in values]
    if len(values) == 1:
        return identity(values[0], name=name)
    return _op("ConcatV2", [values, _to_tensor(axis, dtype=_dtypes.int32)], (), name)


def stack(values, axis=0, name="stack"):
    values = [_to_tensor(v) for v in values]
    return _op("Pack", [values], [("axis", "int", axis)], name)


def unstack(value, num=None, axis=0, name="unstack"):
    value = _to_tensor(value)
    if num is None:
        shape = value.shape
        if shape.ndims is None or shape.as_list()[axis] is None:
            raise ValueError("Cannot infer num from shape %s" % shape)
        num = shape.as_list()[axis]
    outs = _op("Unpack", [value], [("num", "int", num), ("axis", "int", axis)], name)
    return outs if isinstance(outs, list) else [outs] if isinstance(outs, Tensor) else []


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    value = _to_tensor(value)
    if isinstance(num_or_size_splits, (int, np.integer)):
        outs = _op("Split", [_to_tensor(axis, dtype=_dtypes.int32), value],
                   [("num_split", "int", int(num_or_size_splits))], name)
    else:
        sizes = _to_tensor(num_or_size_splits, dtype=_dtypes.int32)
        n = num if num is not None else sizes.shape.as_list()[0]
        outs = _op("SplitV", [value, sizes, _to_tensor(axis, dtype=_dtypes.int32)],
                   [("num_split", "int", int(n))], name)
    return outs if isinstance(outs, list) else [outs]


def expand_dims(input, axis=None, name=None, dim=None):
    if axis is None:
        axis = dim
    return _op("ExpandDims", [_to_tensor(input), _to_tensor(axis, dtype=_dtypes.int32)], (),
               name or "ExpandDims")


def squeeze(input, axis=None, name=None, squeeze_dims=None):
    if axis is None:
        axis = squeeze_dims
    if isinstance(axis, int):
        axis = [axis]
    return _op("Squeeze", [_to_tensor(input)], [("squeeze_dims", "list_int", list(axis or []))],
               name or "Squeeze")


def tile(input, multiples, name=None):
    return _op("Tile", [_to_tensor(input), _to_tensor(multiples, dtype=_dtypes.int32)], (),
               name or "Tile")


def gather(params, indices, validate_indices=None, name=None, axis=0, batch_dims=0):
    if hasattr(params, "sparse_read") and axis == 0 and batch_dims == 0:
        # a resource variable gathers through its handle (ResourceGather), as in TensorFlow
        return params.sparse_read(indices, name=name)
    indices = _to_tensor(indices)
    return _op("GatherV2", [_to_tensor(params), indices, _to_tensor(axis, dtype=_dtypes.int32)],
               [("batch_dims", "int", batch_dims)], name or "GatherV2")


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    indices = _to_tensor(indices)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else (
        on_value.dtype if isinstance(on_value, Tensor) else _dtypes.float32)
    on = _to_tensor(1 if on_value is None else on_value, dtype=dt)
    off = _to_tensor(0 if off_value is None else off_value, dtype=dt)
    return _op("OneHot", [indices, _to_tensor(depth, dtype=_dtypes.int32), on, off],
               [("axis", "int", -1 if axis is None else axis)], name or "one_hot")


def fill(dims, value, name=None):
    # Fill's index_type is int32 or int64: a dims tensor keeps its own.
    dims = dims if isinstance(dims, Tensor) and dims.dtype.base_dtype == _dtypes.int64 \
        else _to_tensor(dims, dtype=_dtypes.int32)
    return _op("Fill", [dims, _to_tensor(value)], (), name or "Fill")


def zeros(shape, dtype=_dtypes.float32, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(shape, Tensor):
        return fill(shape, constant(0, dtype=dtype), name=name or "zeros")
    return constant(np.zeros(_fw.as_shape(shape).as_list(), dtype.as_numpy_dtype)
                    if dtype != _dtypes.string else np.zeros(shape, object),
                    dtype=dtype, name=name or "zeros")


def ones(shape, dtype=_dtypes.float32, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(shape, Tensor):
        return fill(shape, constant(1, dtype=dtype), name=name or "ones")
    return constant(np.ones(_fw.as_shape(shape).as_list(), dtype.as_numpy_dtype), dtype=dtype,
                    name=name or "ones")


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    t = _to_tensor(tensor)
    if dtype is not None and _dtypes.as_dtype(dtype) != t.dtype.base_dtype:
        return cast(_op("ZerosLike", [t], (), "zeros_like"), dtype, name)
    return _op("ZerosLike", [t], (), name or "zeros_like")


def ones_like(tensor, dtype=None, name=None, optimize=True):
    t = _to_tensor(tensor)
    if dtype is not None and _dtypes.as_dtype(dtype) != t.dtype.base_dtype:
        return cast(_op("OnesLike", [t], (), "ones_like"), dtype, name)
    return _op("OnesLike", [t], (), name or "ones_like")


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    if limit is None:
        start, limit = 0, start
    if dtype is None:
        kinds = [v.dtype for v in (start, limit, delta) if isinstance(v, Tensor)]
        if kinds:
            dtype = kinds[0]
        elif any(isinstance(v, float) for v in (start, limit, delta)):
            dtype = _dtypes.float32
        else:
            dtype = _dtypes.int32
    dtype = _dtypes.as_dtype(dtype)
    return _op("Range", [_to_tensor(start, dtype), _to_tensor(limit, dtype),
                         _to_tensor(delta, dtype)], (), name)


def shape(input, name=None, out_type=_dtypes.int32):
    return _op("Shape", [_to_tensor(input)],
               [("out_type", _T, _dtypes.as_dtype(out_type).as_datatype_enum)], name or "Shape")


def size(input, name=None, out_type=_dtypes.int32):
    return _op("Size", [_to_tensor(input)],
               [("out_type", _T, _dtypes.as_dtype(out_type).as_datatype_enum)], name or "Size")


def rank(input, name=None):
    return _op("Rank", [_to_tensor(input)], (), name or "Rank")


def add_n(inputs, name=None):
    inputs = [_to_tensor(i) for i in inputs]
    if not inputs:
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    if len(inputs) == 1:
        return identity(inputs[0], name=name)
    return _op("AddN", [inputs], (), name or "AddN")


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    t = _to_tensor(t)
    lo = _to_tensor(clip_value_min, dtype=t.dtype.base_dtype)
    hi = _to_tensor(clip_value_max, dtype=t.dtype.base_dtype)
    return _op("ClipByValue", [t, lo, hi], (), name or "clip_by_value")


def where(condition, x=None, y=None, name=None):
    condition = _to_tensor(condition)
    if x is None and y is None:
        return _op("Where", [condition], (), name or "Where")
    x, y = _same_type(x, y, "Select")
    return _op("Select", [condition, x, y], (), name or "Select")


def where_v2(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return where(condition, name=name)
    x, y = _same_type(x, y, "SelectV2")
    return _op("SelectV2", [_to_tensor(condition), x, y], (), name or "SelectV2")


def slice(input_, begin, size, name=None):  # noqa: A001
    return _op("Slice", [_to_tensor(input_), _to_tensor(begin, dtype=_dtypes.int32),
                         _to_tensor(size, dtype=_dtypes.int32)], (), name or "Slice")


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, name=None):
    begin = _to_tensor(begin, dtype=_dtypes.int32)
    if strides is None:
        strides = [1] * begin.shape.as_list()[0]
    return _op("StridedSlice", [_to_tensor(input_), begin, _to_tensor(end, dtype=_dtypes.int32),
                                _to_tensor(strides, dtype=_dtypes.int32)],
               [("begin_mask", "int", begin_mask), ("end_mask", "int", end_mask),
                ("ellipsis_mask", "int", ellipsis_mask), ("new_axis_mask", "int", new_axis_mask),
                ("shrink_axis_mask", "int", shrink_axis_mask)], name or "strided_slice")


def _slice_helper(tensor, key):
    """tensor[key] as TensorFlow builds it: one StridedSlice with masks."""
    if not isinstance(key, (_b.tuple, list)):
        key = (key,)
    begin, end, strides = [], [], []
    begin_mask = end_mask = ellipsis_mask = new_axis_mask = shrink_mask = 0
    for i, k in enumerate(key):
        bit = 1 << i
        if isinstance(k, _b.slice):
            if k.step is not None and k.step == 0:
                raise ValueError("slice step cannot be zero")
            begin.append(0 if k.start is None else k.start)
            end.append(0 if k.stop is None else k.stop)
            strides.append(1 if k.step is None else k.step)
            if k.start is None:
                begin_mask |= bit
            if k.stop is None:
                end_mask |= bit
        elif k is Ellipsis:
            begin.append(0)
            end.append(0)
            strides.append(1)
            ellipsis_mask |= bit
        elif k is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            new_axis_mask |= bit
        elif isinstance(k, (int, np.integer)):
            begin.append(int(k))
            end.append(int(k) + 1)
            strides.append(1)
            shrink_mask |= bit
        else:
            raise TypeError("Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) "
                            "and scalar tf.int32/tf.int64 tensors are valid indices, got %r" % (k,))
    with _fw.name_scope(None, "strided_slice", [tensor]) as scope:
        return strided_slice(tensor, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                             new_axis_mask, shrink_mask, name=scope)


def no_op(name=None):
    return _fw.get_default_graph()._create_op("NoOp", [], (), name or "NoOp")


def group(*inputs, **kwargs):
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError("Unknown keyword arguments: " + ", ".join(kwargs))
    ops = []
    for i in inputs:
        if isinstance(i, (list, _b.tuple)):
            ops.extend(i)
        else:
            ops.append(i)
    ops = [o.op if isinstance(o, Tensor) else (o.op if hasattr(o, "_variable_op") else o)
           for o in ops]
    g = _fw.get_default_graph()
    with g.control_dependencies(ops):
        return no_op(name=name or "group_deps")


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001
    tensors = [_to_tensor(t) if t is not None else None for t in tensors]
    deps = [t for t in tensors if t is not None] + list(control_inputs or [])
    with _fw.name_scope(name, "tuple", [t for t in tensors if t is not None]):
        gate = group(*deps)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with _fw.control_dependencies([gate]):
                out.append(identity(t))
        return out


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    return ref.assign(value, use_locking=use_locking, name=name)


def assign_add(ref, value, use_locking=None, name=None):
    return ref.assign_add(value, use_locking=use_locking, name=name)


def assign_sub(ref, value, use_locking=None, name=None):
    return ref.assign_sub(value, use_locking=use_locking, name=name)


# ---------------------------------------------------------------------------------------------
# Random ops: seeds as TensorFlow derives them (graph seed + op seed).

DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


def set_random_seed(seed):
    _fw.get_default_graph().seed = seed


def _truncate_seed(seed):
    return seed % _MAXINT32  # a seed is an int64 attr; TensorFlow keeps it below 2**31 - 1


def get_seed(op_seed):
    """(graph-level seed, op seed) as TensorFlow 1.15's random_seed.get_seed: with a graph seed
    and no op seed, the op seed is the graph's count of ops created so far (Graph._last_id); with
    only an op seed, the graph seed is DEFAULT_GRAPH_SEED; with neither, (None, None), which the
    kernels take as seeds from the system. (0, 0) becomes (0, 2**31 - 1)."""
    g = _fw.get_default_graph()
    if g.seed is not None:
        if op_seed is None:
            op_seed = g._last_id
        seeds = (_truncate_seed(g.seed), _truncate_seed(op_seed))
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        seeds = (None, None)
    if seeds == (0, 0):
        seeds = (0, _MAXINT32)
    return seeds


# The random ops create their ops in TensorFlow 1.15's order (random_ops.py: the shape, then the
# other constants, then get_seed, then the random op), so that a graph seed gives each op the
# op seed TensorFlow gives it.

def _shape_tensor(shape):
    if isinstance(shape, Tensor):
        return shape
    return _to_tensor(shape, dtype=_dtypes.int32, name="shape")


def _random_op(op_type, shape_t, dtype, seed):
    s1, s2 = get_seed(seed)
    return _op(op_type, [shape_t],
               [("dtype", _T, dtype.as_datatype_enum), ("seed", "int", s1 or 0),
                ("seed2", "int", s2 or 0)], op_type)


def _normal_like(op_type, scope_default, shape, mean, stddev, dtype, seed, name):
    dtype = _dtypes.as_dtype(dtype)
    with _fw.name_scope(name, scope_default, []) as scope:
        shape_t = _shape_tensor(shape)
        mean_t = _to_tensor(mean, dtype=dtype, name="mean")
        stddev_t = _to_tensor(stddev, dtype=dtype, name="stddev")
        r = _random_op(op_type, shape_t, dtype, seed)
        return add(multiply(r, stddev_t, name="mul"), mean_t, name=scope)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _normal_like("RandomStandardNormal", "random_normal", shape, mean, stddev, dtype, seed,
                        name)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _normal_like("TruncatedNormal", "truncated_normal", shape, mean, stddev, dtype, seed,
                        name)


def random_uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if maxval is None:
        if dtype.is_integer:
            raise ValueError("Must specify maxval for integer dtype %r" % dtype)
        maxval = 1
    with _fw.name_scope(name, "random_uniform", []) as scope:
        shape_t = _shape_tensor(shape)
        lo = _to_tensor(minval, dtype=dtype, name="min")
        hi = _to_tensor(maxval, dtype=dtype, name="max")
        if dtype.is_integer:
            s1, s2 = get_seed(seed)
            return _op("RandomUniformInt", [shape_t, lo, hi],
                       [("seed", "int", s1 or 0), ("seed2", "int", s2 or 0)], scope)
        r = _random_op("RandomUniform", shape_t, dtype, seed)
        return add(multiply(r, subtract(hi, lo, name="sub"), name="mul"), lo, name=scope)


# ---------------------------------------------------------------------------------------------
# Operators on Tensor (reverse forms included, so 2 * t and np.float32(2) * t work)

def _install_operators():
    def binop(fn, reverse=False):
        if reverse:
            return lambda self, other: fn(other, self)
        return lambda self, other: fn(self, other)

    pairs = {
        "add": add, "sub": subtract, "mul": multiply, "truediv": divide, "floordiv": floordiv,
        "mod": floormod, "pow": pow, "matmul": matmul,
    }
    for nm, fn in pairs.items():
        setattr(Tensor, "__%s__" % nm, binop(fn))
        setattr(Tensor, "__r%s__" % nm, binop(fn, True))
    Tensor.__lt__ = binop(less)
    Tensor.__le__ = binop(less_equal)
    Tensor.__gt__ = binop(greater)
    Tensor.__ge__ = binop(greater_equal)
    Tensor.__and__ = binop(logical_and)
    Tensor.__rand__ = binop(logical_and, True)
    Tensor.__or__ = binop(logical_or)
    Tensor.__ror__ = binop(logical_or, True)
    Tensor.__xor__ = binop(logical_xor)
    Tensor.__invert__ = lambda self: logical_not(self)
    Tensor.__neg__ = lambda self: negative(self)
    Tensor.__abs__ = lambda self: abs(self)


_install_operators()
