"""tf.train's global step: get_global_step, create_global_step, get_or_create_global_step and
global_step(sess, tensor), found as TensorFlow finds it (the GLOBAL_STEP collection, else the
tensor named "global_step:0")."""
from .. import dtypes as _dtypes
from .. import framework as _fw
from .. import variables as _vars
from ..framework import GraphKeys


def assert_global_step(global_step_tensor):
    if not isinstance(global_step_tensor, (_vars.Variable, _fw.Tensor)):
        raise TypeError('Existing "global_step" must be a Variable or Tensor: %s.'
                        % global_step_tensor)
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError('Existing "global_step" does not have integer type: %s'
                        % global_step_tensor.dtype)
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError('Existing "global_step" is not scalar: %s' % shape)


def get_global_step(graph=None):
    graph = graph or _fw.get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        gs = found[0]
    elif len(found) > 1:
        raise TypeError("Multiple tensors in global_step collection.")
    else:
        try:
            gs = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(gs)
    return gs


def create_global_step(graph=None):
    graph = graph or _fw.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return _vars.get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=_dtypes.int64,
                                  initializer=_vars.zeros_initializer(), trainable=False,
                                  collections=[GraphKeys.GLOBAL_VARIABLES,
                                               GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    graph = graph or _fw.get_default_graph()
    gs = get_global_step(graph)
    return gs if gs is not None else create_global_step(graph)


def global_step(sess, global_step_tensor):
    return int(sess.run(global_step_tensor))


def _read(gs):
    """A tensor that reads the global step (a Variable's snapshot, or the ref tensor)."""
    return gs.value() if isinstance(gs, _vars.Variable) else gs


def _increment(gs, name):
    """assign_add(gs, 1) for a Variable or a ref Tensor found by name."""
    if hasattr(gs, "is_initialized"):
        # a resource variable: the AssignAddVariableOp itself, as TF's unread assign's .op
        return gs.assign_add(1, name=name, read_value=False)
    if isinstance(gs, _vars.Variable):
        return gs.assign_add(1, name=name)
    g = gs.graph
    one = _fw.constant(1, dtype=gs.dtype.base_dtype)
    return g._create_op("AssignAdd", [gs, one], [("use_locking", "bool", False)],
                        name or "AssignAdd").outputs[0]


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ^ (global_step / decay_steps), the exponent floored when
    staircase, computed in the learning rate's dtype as TensorFlow does."""
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    from .. import ops as _ops
    with _fw.name_scope(name, "ExponentialDecay") as scope:
        lr = _fw.convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype.base_dtype
        step = _ops.cast(_read(global_step), dtype)
        p = step / _ops.cast(decay_steps, dtype)
        if staircase:
            p = _ops.floor(p)
        return _ops.multiply(lr, _ops.pow(_ops.cast(decay_rate, dtype), p), name=scope)
