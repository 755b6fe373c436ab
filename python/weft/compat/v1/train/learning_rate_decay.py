"""TensorFlow 1.15's learning-rate schedules (tf.train.piecewise_constant, polynomial_decay,
natural_exp_decay, inverse_time_decay, cosine_decay, cosine_decay_restarts,
linear_cosine_decay): the formulas and name scopes of learning_rate_schedule.py, computed in
the learning rate's dtype from the global step. exponential_decay is in training_util.py."""
import math

from .. import control_flow as _cf
from .. import dtypes as _dtypes
from .. import framework as _fw
from .. import ops as _ops
from .training_util import _read, exponential_decay


def _need_step(global_step, fn):
    if global_step is None:
        raise ValueError("global_step is required for %s." % fn)
    return _read(global_step)


def _start(learning_rate, global_step, name="learning_rate"):
    lr = _fw.convert_to_tensor(learning_rate, name=name)
    dtype = lr.dtype.base_dtype
    return lr, dtype, _ops.cast(global_step, dtype)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] after the last boundary: an exclusive tf.case, as TensorFlow
    builds it. Boundaries must have x's dtype (int32 boundaries promote to an int64 x)."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with _fw.name_scope(name, "PiecewiseConstant", [x]):
        boundaries = [_fw.convert_to_tensor(b) for b in boundaries]
        values = [_fw.convert_to_tensor(v) for v in values]
        x_recomp = _fw.convert_to_tensor(_read(x) if hasattr(x, "_ref") else x)
        for i, b in enumerate(boundaries):
            if b.dtype.base_dtype != x_recomp.dtype.base_dtype:
                if b.dtype.base_dtype == _dtypes.int32 and \
                        x_recomp.dtype.base_dtype == _dtypes.int64:
                    boundaries[i] = _ops.cast(b, _dtypes.int64)
                else:
                    raise ValueError("Boundaries (%s) must have the same dtype as x (%s)."
                                     % (b.dtype.base_dtype.name, x_recomp.dtype.base_dtype.name))
        for v in values[1:]:
            if v.dtype.base_dtype != values[0].dtype.base_dtype:
                raise ValueError("Values must have elements all with the same dtype (%s vs %s)."
                                 % (values[0].dtype.base_dtype.name, v.dtype.base_dtype.name))
        pred_fn_pairs = [(_ops.less_equal(x_recomp, boundaries[0]), lambda: values[0]),
                         (_ops.greater(x_recomp, boundaries[-1]), lambda: values[-1])]
        for low, high, v in zip(boundaries[:-1], boundaries[1:], values[1:-1]):
            pred = _ops.logical_and(_ops.greater(x_recomp, low), _ops.less_equal(x_recomp, high))
            pred_fn_pairs.append((pred, lambda v=v: v))
        return _cf.case(pred_fn_pairs, lambda: values[0], exclusive=True)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, the step held at decay_steps, or
    with cycle decay_steps raised to the first multiple above the step."""
    step = _need_step(global_step, "polynomial_decay")
    with _fw.name_scope(name, "PolynomialDecay") as scope:
        lr, dtype, step = _start(learning_rate, step)
        end = _ops.cast(end_learning_rate, dtype)
        power = _ops.cast(power, dtype)
        decay_steps_recomp = _ops.cast(decay_steps, dtype)
        if cycle:
            multiplier = _cf.cond(_ops.equal(step, _ops._to_tensor(0, dtype=dtype)),
                                  lambda: _ops._to_tensor(1.0, dtype=dtype),
                                  lambda: _ops.ceil(step / _ops._to_tensor(decay_steps, dtype)))
            decay_steps_recomp = _ops.multiply(decay_steps_recomp, multiplier)
        else:
            step = _ops.minimum(step, _ops._to_tensor(decay_steps, dtype=dtype))
        p = _ops.divide(step, decay_steps_recomp)
        return _ops.add(_ops.multiply(lr - end, _ops.pow(1 - p, power)), end, name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * step / decay_steps) (the exponent floored when
    staircase): TensorFlow's exponential_decay with the rate exp(-decay_rate)."""
    _need_step(global_step, "natural_exp_decay")
    natural_exp_rate = _ops.exp(_ops.negative(_fw.convert_to_tensor(decay_rate)))
    return exponential_decay(learning_rate, global_step, decay_steps, natural_exp_rate,
                             staircase=staircase, name=name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * step / decay_steps), the ratio floored when
    staircase."""
    step = _need_step(global_step, "inverse_time_decay")
    with _fw.name_scope(name, "InverseTimeDecay") as scope:
        lr, dtype, step = _start(learning_rate, step)
        decay_steps = _ops.cast(decay_steps, dtype)
        decay_rate = _ops.cast(decay_rate, dtype)
        p = step / decay_steps
        if staircase:
            p = _ops.floor(p)
        const = _ops.cast(_fw.constant(1), dtype)
        denom = _ops.add(const, _ops.multiply(decay_rate, p))
        return _ops.divide(lr, denom, name=scope)


def _cos_pi(x, dtype):
    return _ops.cos(_ops._to_tensor(math.pi, dtype=dtype) * x)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)."""
    step = _need_step(global_step, "cosine_decay")
    with _fw.name_scope(name, "CosineDecay") as scope:
        lr, dtype, step = _start(learning_rate, step)
        decay_steps = _ops.cast(decay_steps, dtype)
        completed_fraction = _ops.minimum(step, decay_steps) / decay_steps
        cosine_decayed = 0.5 * (1.0 + _cos_pi(completed_fraction, dtype))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return _ops.multiply(lr, decayed, name=scope)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """SGDR: cosine decay restarted after first_decay_steps, each period t_mul times longer and
    its peak m_mul times lower."""
    step = _need_step(global_step, "cosine_decay_restarts")
    with _fw.name_scope(name, "SGDRDecay") as scope:
        lr, dtype, step = _start(learning_rate, step, "initial_learning_rate")
        first_decay_steps = _ops.cast(first_decay_steps, dtype)
        alpha_t = _ops.cast(alpha, dtype)
        t_mul_t = _ops.cast(t_mul, dtype)
        m_mul_t = _ops.cast(m_mul, dtype)
        completed_fraction = step / first_decay_steps
        if t_mul == 1.0:
            i_restart = _ops.floor(completed_fraction)
            completed_fraction = completed_fraction - i_restart
        else:
            i_restart = _ops.floor(_ops.log(1.0 - completed_fraction * (1.0 - t_mul_t))
                                   / _ops.log(t_mul_t))
            sum_r = (1.0 - _ops.pow(t_mul_t, i_restart)) / (1.0 - t_mul_t)
            completed_fraction = (completed_fraction - sum_r) / _ops.pow(t_mul_t, i_restart)
        m_fac = _ops.pow(m_mul_t, i_restart)
        cosine_decayed = 0.5 * m_fac * (1.0 + _cos_pi(completed_fraction, dtype))
        decayed = (1 - alpha_t) * cosine_decayed + alpha_t
        return _ops.multiply(lr, decayed, name=scope)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """learning_rate * ((alpha + (decay_steps - step) / decay_steps) * 0.5 * (1 + cos(pi * 2 *
    num_periods * step / decay_steps)) + beta), the step held at decay_steps."""
    step = _need_step(global_step, "linear_cosine_decay")
    with _fw.name_scope(name, "LinearCosineDecay") as scope:
        lr, dtype, step = _start(learning_rate, step)
        decay_steps = _ops.cast(decay_steps, dtype)
        num_periods = _ops.cast(num_periods, dtype)
        alpha = _ops.cast(alpha, dtype)
        beta = _ops.cast(beta, dtype)
        step = _ops.minimum(step, decay_steps)
        linear_decayed = (decay_steps - step) / decay_steps
        fraction = 2.0 * num_periods * step / decay_steps
        cosine_decayed = 0.5 * (1.0 + _cos_pi(fraction, dtype))
        linear_cosine_decayed = (alpha + linear_decayed) * cosine_decayed + beta
        return _ops.multiply(lr, linear_cosine_decayed, name=scope)
