"""tf.debugging: TensorFlow 1.x's run-time checks (Assert, the assert_* comparisons,
check_numerics, assert_all_finite) and predicates (is_finite, is_inf, is_nan,
is_numeric_tensor). An assert_* returns the Assert Operation, which fails the step with
InvalidArgumentError ("assertion failed: [...]") when the condition is false; run it or put it
in control_dependencies."""
from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops

is_finite = _ops.is_finite
is_inf = _ops.is_inf
is_nan = _ops.is_nan


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 -- TensorFlow's name
    """An op that fails with "assertion failed: [d0] [d1] ..." when condition is false; each
    data tensor is printed with at most `summarize` (3) elements."""
    with _fw.name_scope(name, "Assert", [condition]):
        data = [_ops._to_tensor(d) for d in data]
        return _ops._op("Assert", [_ops._to_tensor(condition, dtype=_dtypes.bool), data],
                        [("T", "list_type", [d.dtype.base_dtype.as_datatype_enum for d in data]),
                         ("summarize", "int", 3 if summarize is None else int(summarize))],
                        "Assert")


def _comparison(condition_fn, condition, default_name):
    def fn(x, y, data=None, summarize=None, message=None, name=None):
        with _fw.name_scope(name, default_name, [x, y]):
            x, y = _ops._same_type(x, y, default_name)
            if data is None:
                data = ([message] if message else []) + [
                    condition, "x (%s) = " % x.name, x, "y (%s) = " % y.name, y]
            return Assert(_ops.reduce_all(condition_fn(x, y)), data, summarize)
    fn.__name__ = default_name
    return fn


def _elementwise(text):
    return "Condition x %s y did not hold element-wise:" % text


assert_equal = _comparison(_ops.equal, _elementwise("=="), "assert_equal")
assert_less = _comparison(_ops.less, _elementwise("<"), "assert_less")
assert_less_equal = _comparison(_ops.less_equal, _elementwise("<="), "assert_less_equal")
assert_greater = _comparison(_ops.greater, _elementwise(">"), "assert_greater")
assert_greater_equal = _comparison(_ops.greater_equal, _elementwise(">="),
                                   "assert_greater_equal")
assert_none_equal = _comparison(_ops.not_equal, "Condition x != y did not hold for every single "
                                                "element:", "assert_none_equal")


def _sign_check(compare, text, default_name):
    def fn(x, data=None, summarize=None, message=None, name=None):
        with _fw.name_scope(name, default_name, [x]):
            x = _ops._to_tensor(x)
            if data is None:
                data = ([message] if message else []) + [
                    "Condition x %s 0 did not hold element-wise:" % text, "x (%s) = " % x.name, x]
            zero = _ops._to_tensor(0, dtype=x.dtype.base_dtype)
            return Assert(_ops.reduce_all(compare(x, zero)), data, summarize)
    fn.__name__ = default_name
    return fn


assert_positive = _sign_check(_ops.greater, ">", "assert_positive")
assert_negative = _sign_check(_ops.less, "<", "assert_negative")
assert_non_negative = _sign_check(_ops.greater_equal, ">=", "assert_non_negative")
assert_non_positive = _sign_check(_ops.less_equal, "<=", "assert_non_positive")


def check_numerics(tensor, message, name=None):
    """tensor, failing the step with InvalidArgumentError "<message> : Tensor had NaN values"
    (or Inf) when it has any."""
    return _ops._op("CheckNumerics", [_ops._to_tensor(tensor)], [("message", "string", message)],
                    name or "CheckNumerics")


def assert_all_finite(t, msg, name=None):
    """t, after a CheckNumerics of it with msg has run."""
    with _fw.name_scope(name, "VerifyFinite", [t]) as scope:
        t = _ops._to_tensor(t)
        with _fw.control_dependencies([check_numerics(t, message=msg)]):
            return _ops.identity(t, name=scope)


verify_tensor_all_finite = assert_all_finite


def is_numeric_tensor(tensor):
    return isinstance(tensor, _fw.Tensor) and tensor.dtype.base_dtype in (
        _dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.bfloat16, _dtypes.int8,
        _dtypes.int16, _dtypes.int32, _dtypes.int64, _dtypes.uint8, _dtypes.uint16,
        _dtypes.uint32, _dtypes.uint64)
