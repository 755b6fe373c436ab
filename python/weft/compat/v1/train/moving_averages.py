"""tf.train.ExponentialMovingAverage and assign_moving_average as TensorFlow 1.15 builds them:
one shadow variable "<var>/<name>" per variable (initialized to the variable's initial value,
colocated with it, not trainable), updated by shadow -= (shadow - var) * (1 - decay) in an
"<name>/AssignMovingAvg" scope; a Tensor's shadow starts at zero and, with zero_debias, is
divided by 1 - decay ^ steps through "<shadow>/biased" and "<shadow>/local_step"."""
from .. import dtypes as _dtypes
from .. import framework as _fw
from .. import ops as _ops
from .. import variables as _vars
from ..framework import GraphKeys

def _is_resource(v):
    from ..resource_variable_ops import ResourceVariable
    return isinstance(v, ResourceVariable)


_FLOATS = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def _global_var(name, shape, dtype, colocate):
    """A non-trainable zeros variable named name exactly (unique by suffix like TF's), colocated
    with colocate."""
    g = colocate.graph
    with g.name_scope(None), g.control_dependencies(None), g.colocate_with(colocate):
        return _vars.Variable(_vars.zeros_initializer()(shape, dtype), trainable=False, name=name,
                              use_resource=_is_resource(colocate))


def _zero_debias(unbiased_var, value, decay):
    """unbiased_var := biased / (1 - (1 - decay) ^ local_step), biased being the plain moving
    average of value from zero (TensorFlow's _zero_debias)."""
    base = unbiased_var.op.name
    dtype = unbiased_var.dtype.base_dtype
    biased_var = _global_var(base + "/biased", unbiased_var.shape.as_list(), dtype, unbiased_var)
    local_step = _global_var(base + "/local_step", [], dtype, unbiased_var)
    update_biased = biased_var.assign_sub((biased_var - value) * decay)
    update_local_step = local_step.assign_add(1)
    bias_factor = 1 - _ops.pow(1.0 - decay, update_local_step)
    return unbiased_var.assign(update_biased / bias_factor,
                               name=_fw.get_default_graph().get_name_scope() + "/")


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """variable -= (variable - value) * (1 - decay), or the zero-debiased update."""
    with _fw.name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        decay = _fw.convert_to_tensor(1.0 - decay if isinstance(decay, (int, float))
                                      else 1.0 - _ops._to_tensor(decay), name="decay")
        if decay.dtype.base_dtype != variable.dtype.base_dtype:
            decay = _ops.cast(decay, variable.dtype.base_dtype)
        value = _ops._to_tensor(value)
        if zero_debias:
            return _zero_debias(variable, value, decay)
        return variable.assign_sub((variable - value) * decay, name=scope)


class ExponentialMovingAverage:
    """Shadow copies of variables (or tensors) that apply() moves toward their values: shadow
    -= (1 - decay) * (shadow - value), decay capped by (1 + num_updates) / (10 + num_updates)
    when num_updates is given."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        if var_list is None:
            var_list = _vars.trainable_variables()
        var_list = list(var_list)
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError("The variables must be half, float, or double: %s" % var.name)
            if var in self._averages:
                continue
            g = var.graph
            if isinstance(var, _vars.Variable):
                # TensorFlow's init_scope: no name scope and no control dependencies
                with g.name_scope(None), g.control_dependencies(None), g.colocate_with(var):
                    avg = _vars.Variable(var.initialized_value(), trainable=False,
                                         name=var.op.name + "/" + self._name,
                                         use_resource=_is_resource(var))
                _fw.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                if not var.shape.is_fully_defined():
                    raise ValueError("ExponentialMovingAverage of %s needs its shape fully "
                                     "defined, got %s" % (var.name, var.shape))
                with g.name_scope(None), g.control_dependencies(None):
                    avg = _vars.Variable(
                        _vars.zeros_initializer()(var.shape.as_list(), var.dtype.base_dtype),
                        trainable=False, name=var.op.name + "/" + self._name)
                if self._zero_debias:
                    zero_debias_true.add(avg)
            self._averages[var] = avg
        with _fw.name_scope(self._name) as scope:
            decay = _fw.convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = _ops.cast(self._num_updates, _dtypes.float32, name="num_updates")
                decay = _ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [assign_moving_average(self._averages[var], var, decay,
                                             zero_debias=self._averages[var] in zero_debias_true)
                       for var in var_list]
            return _ops.group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of var, or None."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name var's shadow has (or would have): "<var op name>/<name>"."""
        if var in self._averages:
            return self._averages[var].op.name
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables=None):
        """{checkpoint name: variable} restoring each variable from its shadow's entry and the
        other global variables from their own."""
        name_map = {}
        if moving_avg_variables is None:
            moving_avg_variables = _vars.trainable_variables()
            moving_avg_variables += _vars.moving_average_variables()
        moving_avg_variables = list(dict.fromkeys(moving_avg_variables))
        for v in moving_avg_variables:
            name_map[self.average_name(v)] = v
        names = {v.name for v in moving_avg_variables}
        for v in _vars.global_variables():
            if v.name not in names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
