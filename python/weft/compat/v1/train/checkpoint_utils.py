"""tf.train.list_variables, load_variable, init_from_checkpoint and NewCheckpointReader over
weft's checkpoint reader (weft._weft_checkpoints.checkpoint_info / checkpoint_read).

init_from_checkpoint reads the checkpoint's tensors when it is called and makes each mapped
variable's initializer assign that value (a Const): TensorFlow builds a RestoreV2 op that reads
the file when the initializer runs, and weft's core has no RestoreV2. The values are the same
unless the checkpoint changes in between."""
import os

import numpy as np

from weft import _weft_checkpoints
from .. import dtypes as _dtypes
from .. import framework as _fw
from .. import variables as _vars
from .saver import latest_checkpoint


def _checkpoint_filename(ckpt_dir_or_file):
    if os.path.isdir(ckpt_dir_or_file):
        return latest_checkpoint(ckpt_dir_or_file)
    return ckpt_dir_or_file


class CheckpointReader:
    """What tf.train.NewCheckpointReader returns: the names, shapes, dtypes and values of a
    checkpoint's tensors."""

    def __init__(self, prefix):
        self._prefix = prefix
        self._info = {key: (dtype, list(shape))
                      for key, dtype, shape in _weft_checkpoints.checkpoint_info(prefix)}

    def get_variable_to_shape_map(self):
        return {key: list(shape) for key, (_, shape) in self._info.items()}

    def get_variable_to_dtype_map(self):
        return {key: _dtypes.as_dtype(dtype) for key, (dtype, _) in self._info.items()}

    def has_tensor(self, name):
        return name in self._info

    def get_tensor(self, name):
        dtype, shape, data = _weft_checkpoints.checkpoint_read(self._prefix, name)
        if isinstance(data, list):
            if not shape:
                return data[0]
            return np.array(data, dtype=object).reshape(shape)
        value = np.frombuffer(data, dtype=_dtypes.as_dtype(dtype).as_numpy_dtype).reshape(shape)
        return value.copy() if shape else value[()]

    def debug_string(self):
        return "".join("%s (%s) %s\n" % (key, dtype, shape)
                       for key, (dtype, shape) in sorted(self._info.items())).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 -- TensorFlow's name
    return CheckpointReader(filepattern)


def load_checkpoint(ckpt_dir_or_file):
    filename = _checkpoint_filename(ckpt_dir_or_file)
    if filename is None:
        raise ValueError("Couldn't find 'checkpoint' file or checkpoints in given directory %s"
                         % ckpt_dir_or_file)
    return CheckpointReader(filename)


def load_variable(ckpt_dir_or_file, name):
    """The value (a numpy array) of tensor `name` in the checkpoint."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """[(name, shape)] of the checkpoint's tensors, sorted by name."""
    variable_map = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, variable_map[name]) for name in sorted(variable_map)]


def _set_initializer(var, reader, tensor_name):
    value = reader.get_tensor(tensor_name)
    g = var.graph
    with g.as_default(), g.name_scope(None), _fw.control_dependencies(None):
        with _fw.name_scope(var.op.name + "/checkpoint_initializer"):
            const = _fw.constant(value, dtype=var.dtype.base_dtype, name="Const")
            with g.colocate_with(var.op):
                init = var.assign(const, name="Assign", read_value=False)
    var._initializer_op = init if isinstance(init, _fw.Operation) else init.op
    var._initial_value = const


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """Makes the initializers of the variables assignment_map names load the checkpoint's
    tensors: {'ckpt_scope/': 'scope/'} maps a whole scope (of get_variable's variables),
    {'ckpt_scope/var': 'scope/var' or a Variable} one variable, '/' the root."""
    reader = load_checkpoint(ckpt_dir_or_file)
    variable_map = reader.get_variable_to_shape_map()
    store_vars = _vars._store().vars
    for tensor_name_in_ckpt, current in sorted(assignment_map.items(),
                                               key=lambda kv: kv[0]):
        if isinstance(current, (list, tuple)):
            raise NotImplementedError("partitioned variables are not supported by weft")
        var = current if isinstance(current, _vars.Variable) else store_vars.get(current)
        if var is not None:
            if tensor_name_in_ckpt not in variable_map:
                raise ValueError("Tensor %s is not found in %s checkpoint %s"
                                 % (tensor_name_in_ckpt, ckpt_dir_or_file, variable_map))
            if not var.shape.is_compatible_with(variable_map[tensor_name_in_ckpt]):
                raise ValueError("Shape of variable %s (%s) doesn't match with shape of tensor "
                                 "%s (%s) from checkpoint reader."
                                 % (var.name, var.shape, tensor_name_in_ckpt,
                                    variable_map[tensor_name_in_ckpt]))
            _set_initializer(var, reader, tensor_name_in_ckpt)
            continue
        scopes = ""
        if "/" in current:
            scopes = current[:current.rindex("/")]
        if not tensor_name_in_ckpt.endswith("/"):
            raise ValueError("Assignment map with scope only name {} should map to scope only "
                             "{}. Should be 'scope/': 'other_scope/'."
                             .format(scopes, tensor_name_in_ckpt))
        scope_variables = sorted(name for name in store_vars
                                 if not scopes or name.startswith(scopes + "/"))
        for var_name in scope_variables:
            full_tensor_name = var_name[len(scopes):]
            if current != "/":
                full_tensor_name = full_tensor_name[1:]
            if tensor_name_in_ckpt != "/":
                full_tensor_name = tensor_name_in_ckpt + full_tensor_name
            if full_tensor_name.endswith("/"):
                full_tensor_name = full_tensor_name[:-1]
            if full_tensor_name not in variable_map:
                raise ValueError("Tensor %s (%s in %s) is not found in %s checkpoint"
                                 % (full_tensor_name, var_name[len(scopes) + 1:],
                                    tensor_name_in_ckpt, ckpt_dir_or_file))
            _set_initializer(store_vars[var_name], reader, full_tensor_name)
