"""tf.nn.dynamic_rnn and tf.nn.static_rnn: a cell unrolled by a while_loop over time (inputs
read from a TensorArray, outputs written to one), or by Python, as TensorFlow 1.x's rnn.py does;
past a sequence's length the output is zeros and the state is copied through."""
from . import control_flow as _cf
from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from . import variables as _vars


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def _masked(done, new, old):
    """old where the sequence is done (done: [batch] bool), new elsewhere."""
    keep = _ops.cast(_ops.expand_dims(_ops.logical_not(done), 1), new.dtype)
    return new * keep + old * (1 - keep)


def _copy_through(done, zero_output, output, state, new_state):
    output = _masked(done, output, zero_output)
    flat_new = _cf._flatten(new_state)
    flat_old = _cf._flatten(state)
    return output, _cf._pack(new_state, [_masked(done, n, o)
                                         for n, o in zip(flat_new, flat_old)])


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """(outputs [batch, time, units] or [time, batch, units], final state). inputs is a tensor
    (nested inputs are not supported by weft)."""
    if not callable(cell):
        raise TypeError("cell must be an instance of RNNCell")
    with _vars.variable_scope(scope or "rnn"):
        x = _fw.convert_to_tensor(inputs)
        if x.shape.ndims is not None and x.shape.ndims < 3:
            raise ValueError("Expected input to have rank at least 3, got %d" % x.shape.ndims)
        if not time_major:
            x = _ops.transpose(x, [1, 0, 2])
        batch = x.shape[1].value
        batch_t = batch if batch is not None else _ops.shape(x)[1]
        time_steps = _ops.shape(x)[0]
        state = _initial_state(cell, initial_state, batch_t, dtype)
        if sequence_length is not None:
            sequence_length = _ops.identity(_ops.cast(sequence_length, _dtypes.int32),
                                            name="sequence_length")
            if sequence_length.shape.ndims not in (None, 1):
                raise ValueError("sequence_length must be a vector of length batch_size, but "
                                 "saw shape: %s" % sequence_length.shape)
        depth = x.shape[2].value
        in_ta = _cf.TensorArray(x.dtype, size=time_steps, element_shape=[batch, depth],
                                tensor_array_name="input").unstack(x)
        out_ta = _cf.TensorArray(x.dtype, size=time_steps, tensor_array_name="output")
        zero_output = _ops.zeros(_ops.stack([batch_t, cell.output_size])
                                 if isinstance(batch_t, _fw.Tensor)
                                 else [batch_t, cell.output_size], dtype=x.dtype)
        time = _fw.constant(0, name="time")

        def body(t, out_ta, state):
            output, new_state = cell(in_ta.read(t), state)
            if sequence_length is not None:
                output, new_state = _copy_through(t >= sequence_length, zero_output, output,
                                                  state, new_state)
            return t + 1, out_ta.write(t, output), new_state
        _, out_ta, final = _cf.while_loop(lambda t, o, s: t < time_steps, body,
                                          (time, out_ta, state),
                                          parallel_iterations=parallel_iterations or 32,
                                          maximum_iterations=time_steps)
        outputs = out_ta.stack()
        steps = x.shape[0].value
        if steps is not None:
            # TensorFlow sets the known time and batch sizes on the outputs; here a Reshape to
            # them (a no-op at run time) carries them
            outputs = _ops.reshape(outputs, [steps, -1 if batch is None else batch,
                                             cell.output_size])
        if not time_major:
            outputs = _ops.transpose(outputs, [1, 0, 2])
        return outputs, final


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """The cell applied to each of a Python list of [batch, depth] inputs: (outputs list,
    final state)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with _vars.variable_scope(scope or "rnn"):
        x0 = _fw.convert_to_tensor(inputs[0])
        batch = x0.shape[0].value
        batch_t = batch if batch is not None else _ops.shape(x0)[0]
        state = _initial_state(cell, initial_state, batch_t, dtype)
        if sequence_length is not None:
            sequence_length = _ops.cast(sequence_length, _dtypes.int32)
        outputs = []
        for t, x in enumerate(inputs):
            output, new_state = cell(_fw.convert_to_tensor(x), state)
            if sequence_length is not None:
                zero_output = _ops.zeros_like(output)
                output, new_state = _copy_through(_ops.less_equal(sequence_length, t),
                                                  zero_output, output, state, new_state)
            outputs.append(output)
            state = new_state
        return outputs, state


def _reverse(x, seq_lengths, seq_axis, batch_axis):
    from . import array_ops as _array_ops
    if seq_lengths is not None:
        return _array_ops.reverse_sequence(x, seq_lengths, seq_axis=seq_axis,
                                           batch_axis=batch_axis)
    return _array_ops.reverse(x, axis=[seq_axis])


def _check_cell(name, cell):
    if not callable(cell) or not hasattr(cell, "output_size"):
        raise TypeError("The argument %r (%s) is not an RNNCell: 'output_size' property is "
                        "missing, 'state_size' property is missing, either 'zero_state' or "
                        "'get_initial_state' method is required, is not callable."
                        % (name, cell))


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """((output_fw, output_bw), (state_fw, state_bw)): dynamic_rnn forward under "fw" and over
    the time-reversed inputs (ReverseSequence by sequence_length, else ReverseV2) under "bw",
    its outputs reversed back, in a "bidirectional_rnn" scope as TensorFlow builds it."""
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    with _vars.variable_scope(scope or "bidirectional_rnn"):
        with _vars.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = dynamic_rnn(
                cell_fw, inputs, sequence_length=sequence_length,
                initial_state=initial_state_fw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=fw_scope)
        time_axis, batch_axis = (0, 1) if time_major else (1, 0)
        with _vars.variable_scope("bw") as bw_scope:
            inputs_reverse = _reverse(_fw.convert_to_tensor(inputs), sequence_length, time_axis,
                                      batch_axis)
            tmp, output_state_bw = dynamic_rnn(
                cell_bw, inputs_reverse, sequence_length=sequence_length,
                initial_state=initial_state_bw, dtype=dtype,
                parallel_iterations=parallel_iterations, swap_memory=swap_memory,
                time_major=time_major, scope=bw_scope)
    output_bw = _reverse(tmp, sequence_length, time_axis, batch_axis)
    return (output_fw, output_bw), (output_state_fw, output_state_bw)


def _reverse_seq(input_seq, lengths):
    """The list reversed in time: Python's reversal, or per batch entry by lengths (Stack +
    ReverseSequence + Unstack)."""
    if lengths is None:
        return list(reversed(input_seq))
    from . import array_ops as _array_ops
    s_joined = _ops.stack([_fw.convert_to_tensor(x) for x in input_seq])
    s_reversed = _array_ops.reverse_sequence(s_joined, lengths, seq_axis=0, batch_axis=1)
    return _ops.unstack(s_reversed)


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """(outputs, state_fw, state_bw): static_rnn forward under "fw" and over the reversed list
    under "bw", each step's outputs concatenated [fw, bw] on axis 1."""
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with _vars.variable_scope(scope or "bidirectional_rnn"):
        with _vars.variable_scope("fw") as fw_scope:
            output_fw, output_state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                                    sequence_length, scope=fw_scope)
        with _vars.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, output_state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                              sequence_length, scope=bw_scope)
    output_bw = _reverse_seq(tmp, sequence_length)
    outputs = [_ops.concat([f, b], 1) for f, b in zip(output_fw, output_bw)]
    return outputs, output_state_fw, output_state_bw
