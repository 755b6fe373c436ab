"""tf.gradients over weft_gradients (symbolic: the gradient nodes join the graph)."""
from . import framework as _fw
from .framework import Tensor


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients=None):
    """d(sum of ys)/d(x) for each x: a list with a Tensor per x, None where ys do not depend
    on it. xs may be Variables (the gradient with respect to their value)."""
    from .variables import Variable
    if stop_gradients:
        raise NotImplementedError("gradients(stop_gradients=...) is not supported by weft: wrap "
                                  "those tensors in tf.stop_gradient")
    single = lambda v: [v] if not isinstance(v, (list, tuple)) else list(v)  # noqa: E731
    ys = [_fw.convert_to_tensor(y) if not isinstance(y, Variable) else y.value()
          for y in single(ys)]
    xs = single(xs)
    x_tensors = []
    for x in xs:
        if isinstance(x, Variable):
            x_tensors.append(x._ref())
        elif isinstance(x, Tensor):
            x_tensors.append(x)
        else:
            raise TypeError("gradients: xs must be Tensors or Variables, got %r" % (x,))
    g = _fw._graph_of(ys)
    gys = None
    if grad_ys is not None:
        gys = [None if gy is None
               else _fw.convert_to_tensor(gy, dtype=y.dtype.base_dtype)._as_output()
               for gy, y in zip(single(grad_ys), ys)]
    before = g._g.num_nodes()
    outs = g._g.gradients([y._as_output() for y in ys], [x._as_output() for x in x_tensors], gys)
    g._mark_names_used(before)
    result = []
    for o in outs:
        if o is None:
            result.append(None)
        else:
            node, idx = o
            result.append(g._op_of(node).outputs[idx])
    return result
