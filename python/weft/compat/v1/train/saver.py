"""tf.train.Saver over weft_saver_* (TensorFlow's V2 checkpoint format, keyed by variable node
name, with the `checkpoint` state file and max_to_keep), latest_checkpoint and
checkpoint_exists."""
import os

from weft import _weft, _weft_checkpoints
from .. import framework as _fw
from .. import variables as _vars
from ..framework import GraphKeys
from . import training_util


def _raw_session(sess):
    """The compat Session under sess (a Session, or a MonitoredSession's)."""
    from ..session import BaseSession
    while not isinstance(sess, BaseSession):
        inner = getattr(sess, "_tf_sess", None)
        if inner is None:
            raise TypeError("'sess' must be a Session; %s" % sess)
        sess = inner()
    return sess


class Saver:
    def __init__(self, var_list=None, reshape=False, sharded=False, max_to_keep=5,
                 keep_checkpoint_every_n_hours=10000.0, name=None, restore_sequentially=False,
                 saver_def=None, builder=None, defer_build=False, allow_empty=False,
                 write_version=2, pad_step_number=False, save_relative_paths=False,
                 filename=None):
        if saver_def is not None or builder is not None:
            raise NotImplementedError("Saver(saver_def=, builder=) is not supported by weft")
        self._var_list = var_list
        self._allow_empty = allow_empty
        self._max_to_keep = 0 if max_to_keep is None else int(max_to_keep)
        self._pad = pad_step_number
        self._filename = filename
        self._c = None
        self._names = None
        self._renamed = []
        if not defer_build:
            self.build()

    def build(self):
        var_list = self._var_list
        if var_list is None:
            var_list = (_fw.get_collection(GraphKeys.GLOBAL_VARIABLES)
                        + _fw.get_collection(GraphKeys.SAVEABLE_OBJECTS))
        renamed = []
        if isinstance(var_list, dict):
            # a variable under a key other than its name is restored by an Assign fed the
            # checkpoint's tensor (weft's saver keys checkpoints by variable name)
            renamed = [(key, v) for key, v in sorted(var_list.items(), key=lambda kv: kv[0])
                       if key != v.op.name]
            var_list = [v for key, v in var_list.items() if key == v.op.name]
        names = []
        for v in var_list + [v for _, v in renamed]:
            if isinstance(v, (list, tuple)):
                raise NotImplementedError("partitioned variables are not supported by weft")
            if not isinstance(v, (_vars.Variable, _fw.Tensor)):
                raise TypeError("Variable to save is not a Variable: %s" % (v,))
            if v.op.name in names:
                raise ValueError("At least two variables have the same name: %s" % v.op.name)
            names.append(v.op.name)
        if not names and not self._allow_empty:
            raise ValueError("No variables to save")
        self._names = names[:len(var_list)]
        self._renamed = [(key, v) + self._restore_op(v) for key, v in renamed]
        self._c = _weft.Saver(self._max_to_keep, self._names)

    @staticmethod
    def _restore_op(v):
        """(placeholder, Assign of it to v) under a "save" name scope."""
        from .. import ops as _ops
        g = v.graph
        with g.as_default(), g.name_scope(None), g.control_dependencies(None), \
                _fw.name_scope("save"):
            ph = _ops.placeholder(v.dtype.base_dtype, v.shape, name="restore_value")
            if isinstance(v, _vars.Variable):
                op = v.assign(ph, name="Assign", read_value=False)
            else:  # a variable's ref tensor (an imported graph's VariableV2)
                op = g._create_op("Assign", [v, ph], [("validate_shape", "bool", True),
                                                      ("use_locking", "bool", True)], "Assign")
        return ph, op if isinstance(op, _fw.Operation) else op.op

    def save(self, sess, save_path, global_step=None, latest_filename=None,
             meta_graph_suffix="meta", write_meta_graph=True, write_state=True,
             strip_default_attrs=False, save_debug_info=False):
        if self._c is None:
            self.build()
        raw = _raw_session(sess)
        if self._renamed:
            key, v = self._renamed[0][:2]
            raise NotImplementedError(
                "Saver(var_list={%r: %s}).save: weft saves a variable under its own name (%r); "
                "saving under other checkpoint keys is not supported (restoring is)"
                % (key, v.op.name, v.op.name))
        if not self._names:
            return None
        if global_step is not None and not isinstance(global_step, int):
            global_step = training_util.global_step(sess, global_step)
        parent = os.path.dirname(save_path)
        if parent and not os.path.isdir(parent):
            raise ValueError("Parent directory of {} doesn't exist, can't save."
                             .format(save_path))
        return self._c.save(raw._s, save_path,
                            -1 if global_step is None else int(global_step))

    def restore(self, sess, save_path):
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if self._c is None:
            self.build()
        raw = _raw_session(sess)
        if not checkpoint_exists(save_path):
            raise ValueError("The passed save_path is not a valid checkpoint: " + save_path)
        if self._names:
            self._c.restore(raw._s, save_path)
        if self._renamed:
            from .checkpoint_utils import CheckpointReader
            reader = CheckpointReader(save_path)
            raw.run([op for _, _, _, op in self._renamed],
                    {ph: reader.get_tensor(key) for key, _, ph, _ in self._renamed})

    def as_saver_def(self):
        raise NotImplementedError("Saver.as_saver_def is not supported by weft")


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    if latest_filename not in (None, "checkpoint"):
        raise NotImplementedError("latest_checkpoint(latest_filename=%r): weft reads the "
                                  "`checkpoint` file only" % latest_filename)
    return _weft.latest_checkpoint(os.fspath(checkpoint_dir))


def checkpoint_exists(checkpoint_prefix):
    return _weft_checkpoints.checkpoint_exists(os.fspath(checkpoint_prefix))


class CheckpointState:
    """What get_checkpoint_state returns: the newest prefix and those kept, as the `checkpoint`
    file lists them (relative entries joined to the folder, as TensorFlow does)."""

    def __init__(self, model_checkpoint_path, all_model_checkpoint_paths):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = all_model_checkpoint_paths

    def __repr__(self):
        return "model_checkpoint_path: %r\nall_model_checkpoint_paths: %r" % (
            self.model_checkpoint_path, self.all_model_checkpoint_paths)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The folder's `checkpoint` file as a CheckpointState, or None when there is none."""
    if latest_filename not in (None, "checkpoint"):
        raise NotImplementedError("get_checkpoint_state(latest_filename=%r): weft reads the "
                                  "`checkpoint` file only" % latest_filename)
    state = _weft_checkpoints.checkpoint_state(os.fspath(checkpoint_dir))
    if state is None:
        return None
    latest, kept = state
    return CheckpointState(latest or "", kept)
