"""tf.initializers: TensorFlow 1.x's initializer namespace, the classes of variables.py under
their short names, the He and LeCun variance-scaling presets, and the initializer-op helpers
(global_variables, local_variables, variables)."""
from . import dtypes as _dtypes
from . import variables as _v

zeros = _v.zeros_initializer
ones = _v.ones_initializer
constant = _v.constant_initializer
random_normal = _v.random_normal_initializer
random_uniform = _v.random_uniform_initializer
truncated_normal = _v.truncated_normal_initializer
variance_scaling = _v.variance_scaling_initializer
glorot_uniform = _v.glorot_uniform_initializer
glorot_normal = _v.glorot_normal_initializer

global_variables = _v.global_variables_initializer
local_variables = _v.local_variables_initializer
variables = _v.variables_initializer


def _preset(name, scale, distribution):
    def make(seed=None, dtype=_dtypes.float32):
        return variance_scaling(scale, "fan_in", distribution, seed, dtype)
    make.__name__ = name
    make.__doc__ = ("variance_scaling(scale=%s, mode='fan_in', distribution='%s')"
                    % (scale, distribution))
    return make


he_normal = _preset("he_normal", 2.0, "truncated_normal")
he_uniform = _preset("he_uniform", 2.0, "uniform")
lecun_normal = _preset("lecun_normal", 1.0, "truncated_normal")
lecun_uniform = _preset("lecun_uniform", 1.0, "uniform")
orthogonal = _v.orthogonal_initializer
