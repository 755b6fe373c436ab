"""tf.py_func and tf.numpy_function (tensorflow/python/ops/script_ops.py): a Python function as a
graph node. The function is registered in the C API's host function table under a fresh token
("pyfunc_N", as TensorFlow names them); a PyFunc or PyFuncStateless node naming the token calls
it with its inputs as numpy values, on the executor's thread, holding the GIL for the call. The
token is unregistered when its graph is garbage collected.

As in TensorFlow, the node runs in this process only: a step of a remote session that places it
on another task fails with "callback pyfunc_N is not found" (pin it to a device of a server in
this process), and the function's results are not converted to Tout: a float64 array where
float32 is expected fails with "0-th value returned by pyfunc_0 is double, but expects float"."""
import itertools as _itertools
import threading as _threading
import weakref as _weakref

import numpy as _np

from weft import _weft

from . import dtypes as _dtypes
from . import framework as _fw
from .ops import _to_tensor

_tokens = _itertools.count()
_tokens_lock = _threading.Lock()


def _next_token():
    with _tokens_lock:
        return "pyfunc_%d" % next(_tokens)


def _convert(value):
    """A value the function returned as a C-ordered numpy array; text becomes bytes, as
    TensorFlow's FuncRegistry._convert does."""
    result = _np.asarray(value, order="C")
    if result.dtype.char == "S" and result is not value:
        return _np.asarray(value, order="C", dtype=object)
    if result.dtype.char == "U" and result is not value:
        value = _np.vectorize(lambda x: x.encode("utf8"))(value)
        return _np.asarray(value, order="C", dtype=object)
    if result.dtype.char == "U":
        return result.astype(_np.bytes_)
    return result


def _call_with(func):
    """What the node calls: func's result as a list of arrays (one for a single value, none for
    None; a list or tuple is one value per element, as in TensorFlow)."""
    def call(*args):
        ret = func(*args)
        if ret is None:
            return []
        if isinstance(ret, bytes):
            ret = [ret]
        if isinstance(ret, (list, tuple)):
            return [_convert(x) for x in ret]
        return [_convert(ret)]
    return call


def _py_func(func, inp, Tout, stateful, name, default_name):
    if not callable(func):
        raise TypeError("Expected func to be callable, got func of type %s" % type(func))
    single = not isinstance(Tout, (list, tuple))
    touts = [_dtypes.as_dtype(Tout)] if single else [_dtypes.as_dtype(t) for t in Tout]
    inputs = [_to_tensor(x) for x in (inp or [])]
    token = _next_token()
    _weft.host_func_register(token, _call_with(func))
    try:
        attrs = [("token", "string", token),
                 ("Tin", "list_type", [t.dtype.base_dtype.as_datatype_enum for t in inputs]),
                 ("Tout", "list_type", [t.as_datatype_enum for t in touts])]
        result = _fw._run_op("PyFunc" if stateful else "PyFuncStateless", [inputs], attrs,
                             name or default_name)
    except BaseException:
        _weft.host_func_unregister(token)
        raise
    op = result if isinstance(result, _fw.Operation) else (
        result[0] if isinstance(result, list) else result).op
    _weakref.finalize(op.graph, _weft.host_func_unregister, token)
    if isinstance(result, _fw.Operation):
        return result  # Tout == []: the node itself, as in TensorFlow
    outs = result if isinstance(result, list) else [result]
    return outs[0] if single else list(outs)


def py_func(func, inp, Tout, stateful=True, name=None):
    """tf.py_func(func, inp, Tout, stateful=True, name=None): func(*numpy values) as a node
    (PyFunc, or PyFuncStateless when stateful is False); Tout a dtype (one Tensor back) or a
    list of them (a list back)."""
    return _py_func(func, inp, Tout, stateful, name, "PyFunc")


def numpy_function(func, inp, Tout, name=None):
    """tf.numpy_function(func, inp, Tout, name=None): py_func, stateful."""
    return _py_func(func, inp, Tout, True, name, "PyFunc")
