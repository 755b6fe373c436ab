"""tf.nn.rnn_cell: TensorFlow 1.x's RNN cells (BasicRNNCell, BasicLSTMCell, LSTMCell, GRUCell,
MultiRNNCell, DropoutWrapper, LSTMStateTuple) with TensorFlow's variable names
("<scope>/basic_lstm_cell/kernel", ".../bias", "gru_cell/gates/kernel", ...) so checkpoints
written by TensorFlow restore into them."""
import collections

from . import framework as _fw
from . import ops as _ops
from . import variables as _vars


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's (c, h) state."""
    __slots__ = ()

    @property
    def dtype(self):
        if self.c.dtype != self.h.dtype:
            raise TypeError("Inconsistent internal state: %s vs %s"
                            % (self.c.dtype, self.h.dtype))
        return self.c.dtype


def _zeros_like_size(size, batch_size, dtype):
    if isinstance(size, (tuple, list)):
        return type(size)(*[_zeros_like_size(s, batch_size, dtype) for s in size]) \
            if hasattr(size, "_fields") else \
            type(size)(_zeros_like_size(s, batch_size, dtype) for s in size)
    if isinstance(batch_size, _fw.Tensor):
        # the Reshape keeps the state's static depth, which the cell's kernel shape needs
        return _ops.reshape(_ops.zeros(_ops.stack([batch_size, size]), dtype=dtype), [-1, size])
    return _ops.zeros([batch_size, size], dtype=dtype)


class RNNCell:
    """The cell interface: __call__(inputs, state) -> (output, new_state), state_size,
    output_size, zero_state. Variables are made on the first call under the cell's scope and
    reused after."""

    _default_name = "rnn_cell"

    def __init__(self, reuse=None, name=None, dtype=None):
        self._reuse = reuse
        self._name = name
        self._scope = None
        self._dtype = dtype

    @property
    def state_size(self):
        raise NotImplementedError("RNNCell subclasses define state_size")

    @property
    def output_size(self):
        raise NotImplementedError("RNNCell subclasses define output_size")

    def zero_state(self, batch_size, dtype):
        with _fw.name_scope(type(self).__name__ + "ZeroState"):
            return _zeros_like_size(self.state_size, batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        if self._scope is None:
            # tf.layers' naming: the cell's name (its kind by default) made unique within the
            # enclosing variable scope ("basic_lstm_cell", "basic_lstm_cell_1"), or used as it
            # is when reusing
            base = self._name or self._default_name
            if scope is not None or self._reuse:
                ctx = _vars.variable_scope(scope or base, reuse=self._reuse)
            else:
                ctx = _vars.variable_scope(None, default_name=base)
            with ctx as vs:
                self._scope = vs
                return self.call(inputs, state)
        with _vars.variable_scope(self._scope, reuse=True):
            return self.call(inputs, state)

    def _linear(self, args, out, bias_init=None, kernel_init=None, name=None):
        """concat(args) @ kernel + bias with TensorFlow's "kernel"/"bias" variable names."""
        x = _ops.concat(args, 1) if len(args) > 1 else args[0]
        dims = [a.shape[-1].value if a.shape.ndims else None for a in args]
        depth = None if None in dims else sum(dims)
        if depth is None:
            raise ValueError("The last dimension of the inputs to an RNN cell should be defined. "
                             "Found None.")
        dtype = x.dtype.base_dtype

        def build():
            k = _vars.get_variable("kernel", [depth, out], dtype=dtype, initializer=kernel_init)
            b = _vars.get_variable("bias", [out], dtype=dtype,
                                   initializer=bias_init or _vars.zeros_initializer(dtype))
            return _ops.matmul(x, k) + b
        if name is None:
            return build()
        with _vars.variable_scope(name):
            return build()


class _UnitsCell(RNNCell):
    """A cell whose state and output are both [batch, num_units]."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        super().__init__(reuse, name, dtype)
        self._num_units = num_units
        self._activation = activation or _ops.tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units


class BasicRNNCell(_UnitsCell):
    """h' = activation(concat(x, h) @ kernel + bias)."""

    _default_name = "basic_rnn_cell"

    def call(self, inputs, state):
        out = self._activation(self._linear([inputs, state], self._num_units))
        return out, out


class BasicLSTMCell(RNNCell):
    """TensorFlow's LSTM without peepholes: i, j, f, o from one kernel; forget_bias added to f."""

    _default_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        super().__init__(reuse, name, dtype)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or _ops.tanh
        self._initializer = None
        self._cell_clip = None

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    @property
    def output_size(self):
        return self._num_units

    def call(self, inputs, state):
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = _ops.split(state, 2, axis=1)
        gates = self._linear([inputs, h], 4 * self._num_units, kernel_init=self._initializer)
        i, j, f, o = _ops.split(gates, 4, axis=1)
        sig = _ops.sigmoid
        new_c = c * sig(f + self._forget_bias) + sig(i) * self._activation(j)
        if self._cell_clip is not None:
            new_c = _ops.clip_by_value(new_c, -self._cell_clip, self._cell_clip)
        new_h = self._activation(new_c) * sig(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple \
            else _ops.concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(BasicLSTMCell):
    """tf.nn.rnn_cell.LSTMCell: BasicLSTMCell's gates plus, as TensorFlow has them, peepholes
    (w_f_diag, w_i_diag, w_o_diag), cell_clip, and a projection of the output to num_proj
    ("projection/kernel", proj_clip). Sharded kernels (num_unit_shards, num_proj_shards) are
    not supported by weft: ValueError."""

    _default_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        if num_unit_shards or num_proj_shards:
            raise ValueError("LSTMCell: num_unit_shards and num_proj_shards are not supported "
                             "by weft")
        super().__init__(num_units, forget_bias, state_is_tuple, activation, reuse, name, dtype)
        self._initializer = initializer
        self._cell_clip = cell_clip
        self._peepholes = use_peepholes
        self._num_proj = num_proj
        self._proj_clip = proj_clip

    @property
    def state_size(self):
        n, m = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, m) if self._state_is_tuple else n + m

    @property
    def output_size(self):
        return self._num_proj or self._num_units

    def call(self, inputs, state):
        n = self._num_units
        if self._state_is_tuple:
            c, m = state
        else:
            c, m = _ops.split(state, [n, self.output_size], axis=1)
        gates = self._linear([inputs, m], 4 * n, kernel_init=self._initializer)
        i, j, f, o = _ops.split(gates, 4, axis=1)
        sig, act = _ops.sigmoid, self._activation
        if self._peepholes:
            diag = {k: _vars.get_variable(k, [n], dtype=inputs.dtype,
                                          initializer=self._initializer)
                    for k in ("w_f_diag", "w_i_diag", "w_o_diag")}
            new_c = sig(f + self._forget_bias + diag["w_f_diag"] * c) * c + \
                sig(i + diag["w_i_diag"] * c) * act(j)
        else:
            new_c = sig(f + self._forget_bias) * c + sig(i) * act(j)
        if self._cell_clip is not None:
            new_c = _ops.clip_by_value(new_c, -self._cell_clip, self._cell_clip)
        if self._peepholes:
            new_m = sig(o + diag["w_o_diag"] * new_c) * act(new_c)
        else:
            new_m = sig(o) * act(new_c)
        if self._num_proj is not None:
            with _vars.variable_scope("projection"):
                k = _vars.get_variable("kernel", [n, self._num_proj], dtype=inputs.dtype,
                                       initializer=self._initializer)
            new_m = _ops.matmul(new_m, k)
            if self._proj_clip is not None:
                new_m = _ops.clip_by_value(new_m, -self._proj_clip, self._proj_clip)
        new_state = LSTMStateTuple(new_c, new_m) if self._state_is_tuple \
            else _ops.concat([new_c, new_m], 1)
        return new_m, new_state


class GRUCell(_UnitsCell):
    """TensorFlow's GRU: "gates" (r, u; bias initialised to 1) and "candidate" kernels."""

    _default_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None):
        super().__init__(num_units, activation, reuse, name, dtype)
        self._kernel_init = kernel_initializer
        self._bias_init = bias_initializer

    def call(self, inputs, state):
        n = self._num_units
        gates = _ops.sigmoid(self._linear(
            [inputs, state], 2 * n, name="gates", kernel_init=self._kernel_init,
            bias_init=self._bias_init or _vars.constant_initializer(1.0,
                                                                    dtype=inputs.dtype)))
        r, u = _ops.split(gates, 2, axis=1)
        c = self._activation(self._linear([inputs, r * state], n, name="candidate",
                                          kernel_init=self._kernel_init,
                                          bias_init=self._bias_init))
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: cell k's output is cell k+1's input; variables under "cell_k"."""

    _default_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not state_is_tuple:
            raise ValueError("MultiRNNCell(state_is_tuple=False) is not supported by weft")
        self._cells = list(cells)

    @property
    def state_size(self):
        return tuple(c.state_size for c in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    def call(self, inputs, state):
        x, new_states = inputs, []
        for k, cell in enumerate(self._cells):
            with _vars.variable_scope("cell_%d" % k):
                x, s = cell(x, state[k])
            new_states.append(s)
        return x, tuple(new_states)


class DropoutWrapper(RNNCell):
    """Dropout on a cell's inputs and outputs (tf.nn.dropout); state_keep_prob and
    variational_recurrent are not supported by weft (ValueError)."""

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None):
        super().__init__()
        if state_keep_prob != 1.0 or variational_recurrent:
            raise ValueError("DropoutWrapper: state_keep_prob and variational_recurrent are not "
                             "supported by weft")
        self._cell = cell
        self._in_keep = input_keep_prob
        self._out_keep = output_keep_prob
        self._seed = seed

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)

    def _drop(self, x, keep):
        from . import nn
        if isinstance(keep, float) and keep == 1.0:
            return x
        return nn.dropout(x, keep_prob=keep, seed=self._seed)

    def __call__(self, inputs, state, scope=None):
        out, new_state = self._cell(self._drop(inputs, self._in_keep), state, scope)
        return self._drop(out, self._out_keep), new_state


