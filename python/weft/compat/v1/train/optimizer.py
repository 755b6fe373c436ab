"""TensorFlow 1.x's optimizers (tf.train.GradientDescentOptimizer, Momentum, Adagrad, Adam,
RMSProp, Ftrl, Adadelta, ProximalGradientDescent, ProximalAdagrad) over weft's Apply* ops, building the graph TensorFlow builds: slot variables named
"<var>/<Optimizer>" (Adam's "<var>/Adam" and "<var>/Adam_1"), colocated with their variable;
Adam's "beta1_power"/"beta2_power" beside the first variable; one "update_<var>" scope per
variable and the global step's increment run after the updates. A resource variable is updated
by the ResourceApply* twin of each op, and its slots are resource variables too, as in
TensorFlow."""
import numpy as np

from .. import framework as _fw
from .. import ops as _ops
from .. import variables as _vars
from ..gradients import gradients
from . import training_util


def _ref(v):
    """The reference tensor an Apply op updates: a Variable's, or a ref Tensor itself."""
    return v._ref() if isinstance(v, _vars.Variable) else v


def _is_resource(v):
    from ..resource_variable_ops import ResourceVariable
    return isinstance(v, ResourceVariable)


def _is_indexed_slices(g):
    from ..resource_variable_ops import IndexedSlices
    return isinstance(g, IndexedSlices)


def _var_name(v):
    return v.op.name


class Optimizer:
    """tf.train.Optimizer: compute_gradients + apply_gradients; subclasses give their slots
    (_create_slots), per-variable update (_apply_dense) and _finish."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots = {}  # slot name -> {var name: Variable}
        self._non_slots = {}

    def get_name(self):
        return self._name

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        grads_and_vars = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                "support gradients, between variables %s and loss %s."
                % ([str(v) for _, v in grads_and_vars], loss))
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        if callable(loss):
            raise NotImplementedError("compute_gradients of a callable loss is eager mode, which "
                                      "weft does not have: pass the loss Tensor")
        if not isinstance(loss, _fw.Tensor):
            raise TypeError("`loss` must be a Tensor, got %r" % (loss,))
        if var_list is None:
            var_list = _vars.trainable_variables()
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, _vars.Variable):
                raise TypeError("Argument is not a tf.Variable: %r" % (v,))
        grads = gradients([loss], [v._ref() for v in var_list],
                          None if grad_loss is None else [grad_loss])
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = tuple(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        for g, v in grads_and_vars:
            if g is not None and not isinstance(g, _fw.Tensor) and not (
                    _is_indexed_slices(g) and self._apply_sparse is not None):
                raise TypeError("Gradient must be convertible to a Tensor or IndexedSlices, or "
                                "None: %s" % (g,))
            if not isinstance(v, _vars.Variable):
                raise TypeError("Argument is not a tf.Variable: %r" % (v,))
        var_list = [v for g, v in grads_and_vars if g is not None]
        if not var_list:
            raise ValueError("No gradients provided for any variable: %s."
                             % ([str(v) for _, v in grads_and_vars],))
        graph = var_list[0].graph
        with graph.as_default():
            self._create_slots(var_list)
            update_ops = []
            with _fw.name_scope(name, self._name) as scope:
                self._prepare()
                for g, v in grads_and_vars:
                    if g is None:
                        continue
                    with _fw.name_scope("update_" + _var_name(v)), graph.colocate_with(v):
                        if _is_indexed_slices(g):
                            update_ops.append(self._apply_sparse_duplicate_indices(g, v))
                        else:
                            update_ops.append(self._apply_dense(g, v))
                if global_step is None:
                    apply_updates = self._finish(update_ops, scope)
                else:
                    with _fw.control_dependencies([self._finish(update_ops, "update")]):
                        with graph.colocate_with(global_step):
                            inc = training_util._increment(global_step, scope)
                            apply_updates = inc if isinstance(inc, _fw.Operation) else inc.op
            train_ops = graph.get_collection_ref(_fw.GraphKeys.TRAIN_OP)
            if apply_updates not in train_ops:
                train_ops.append(apply_updates)
            return apply_updates

    # slots
    def get_slot_names(self):
        return sorted(self._slots)

    def get_slot(self, var, name):
        return self._slots.get(name, {}).get(var.op.name)

    def variables(self):
        out = []
        for d in self._slots.values():
            out.extend(d.values())
        out.extend(self._non_slots.values())
        return sorted(out, key=lambda v: v.name)

    def _slot(self, var, value, slot_name, op_name, use_resource=None):
        d = self._slots.setdefault(slot_name, {})
        if var.op.name not in d:
            g = var.graph
            # TensorFlow makes slots in an init_scope: outside the caller's name scope and
            # control dependencies (minimize under control_dependencies(UPDATE_OPS) is common)
            with g.name_scope(None), g.control_dependencies(None), g.colocate_with(var):
                d[var.op.name] = _vars.Variable(
                    _fw.constant(value, dtype=var.dtype.base_dtype, shape=var.shape.as_list(),
                                 name="Initializer"),
                    trainable=False, name=var.op.name + "/" + op_name,
                    use_resource=_is_resource(var) if use_resource is None else use_resource)
        return d[var.op.name]

    def _non_slot(self, value, name, colocate_with):
        if name not in self._non_slots:
            g = colocate_with.graph
            with g.name_scope(None), g.control_dependencies(None), g.colocate_with(colocate_with):
                self._non_slots[name] = _vars.Variable(value, trainable=False, name=name,
                                                       use_resource=_is_resource(colocate_with))
        return self._non_slots[name]

    def _create_slots(self, var_list):
        pass

    # An optimizer that takes IndexedSlices gradients defines _apply_sparse(grad, var), grad's
    # indices then distinct (TensorFlow's contract); None: only dense gradients.
    _apply_sparse = None

    def _apply_sparse_duplicate_indices(self, grad, var):
        """TensorFlow's default: sum the rows of repeated indices, then _apply_sparse."""
        from ..array_ops import unique
        from ..resource_variable_ops import IndexedSlices
        ids, pos = unique(grad.indices)
        summed = _ops.unsorted_segment_sum(grad.values, pos, _ops.shape(ids)[0])
        return self._apply_sparse(IndexedSlices(summed, ids, grad.dense_shape), var)

    def _prepare(self):
        pass

    def _finish(self, update_ops, name_scope):
        return _ops.group(*update_ops, name=name_scope or None)

    def _t(self, value, name, var):
        """A hyper-parameter as a tensor of var's dtype."""
        if isinstance(value, _fw.Tensor) or callable(getattr(value, "_as_graph_tensor", None)):
            t = _ops._to_tensor(value)
            if t.dtype.base_dtype != var.dtype.base_dtype:
                t = _ops.cast(t, var.dtype.base_dtype)
            return t
        return _fw.constant(value, dtype=var.dtype.base_dtype, name=name)

    def _apply(self, op_type, var, inputs, attrs=()):
        g = var.graph
        if _is_resource(var):
            op_type = "Resource" + op_type
        op = g._create_op(op_type, [_ref(var)] + inputs,
                          [("use_locking", "bool", bool(self._use_locking))] + list(attrs),
                          op_type)
        return op


class GradientDescentOptimizer(Optimizer):
    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate

    def _apply_dense(self, grad, var):
        return self._apply("ApplyGradientDescent", var,
                           [self._t(self._learning_rate, "learning_rate", var), grad])


class MomentumOptimizer(Optimizer):
    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, 0.0, "momentum", self._name)

    def _apply_dense(self, grad, var):
        return self._apply("ApplyMomentum", var,
                           [self.get_slot(var, "momentum")._ref(),
                            self._t(self._learning_rate, "learning_rate", var), grad,
                            self._t(self._momentum, "momentum", var)],
                           [("use_nesterov", "bool", bool(self._use_nesterov))])


class AdagradOptimizer(Optimizer):
    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s"
                             % initial_accumulator_value)
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, self._initial, "accumulator", self._name)

    def _apply_dense(self, grad, var):
        return self._apply("ApplyAdagrad", var,
                           [self.get_slot(var, "accumulator")._ref(),
                            self._t(self._learning_rate, "learning_rate", var), grad])


class AdamOptimizer(Optimizer):
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _create_slots(self, var_list):
        first = min(var_list, key=lambda x: x.name)
        self._non_slot(np.float32(self._beta1), "beta1_power", first)
        self._non_slot(np.float32(self._beta2), "beta2_power", first)
        for v in var_list:
            self._slot(v, 0.0, "m", self._name)
            self._slot(v, 0.0, "v", self._name + "_1")

    def _get_beta_accumulators(self):
        return self._non_slots["beta1_power"], self._non_slots["beta2_power"]

    def _apply_dense(self, grad, var):
        b1p, b2p = self._get_beta_accumulators()
        cast = (lambda t: t if t.dtype.base_dtype == var.dtype.base_dtype
                else _ops.cast(t, var.dtype.base_dtype))
        return self._apply("ApplyAdam", var,
                           [self.get_slot(var, "m")._ref(), self.get_slot(var, "v")._ref(),
                            cast(b1p.value()), cast(b2p.value()),
                            self._t(self._lr, "learning_rate", var),
                            self._t(self._beta1, "beta1", var),
                            self._t(self._beta2, "beta2", var),
                            self._t(self._epsilon, "epsilon", var), grad])

    def _finish(self, update_ops, name_scope):
        b1p, b2p = self._get_beta_accumulators()
        with _fw.control_dependencies(update_ops):
            with b1p.graph.colocate_with(b1p):
                u1 = b1p.assign(b1p * np.float32(self._beta1), use_locking=self._use_locking)
                u2 = b2p.assign(b2p * np.float32(self._beta2), use_locking=self._use_locking)
        return _ops.group(*(update_ops + [u1, u2]), name=name_scope or None)


class RMSPropOptimizer(Optimizer):
    """Slots "<var>/RMSProp" (rms, ones) and "<var>/RMSProp_1" (momentum); centered adds the
    gradient's mean "mg" first, as TensorFlow orders them: mg is "_1", momentum "_2"."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, use_locking=False,
                 centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum, self._epsilon = (learning_rate, decay, momentum,
                                                                epsilon)
        self._centered = centered

    def _create_slots(self, var_list):
        for v in var_list:
            names = iter([self._name + "_1", self._name + "_2"])
            self._slot(v, 1.0, "rms", self._name)
            if self._centered:
                self._slot(v, 0.0, "mg", next(names))
            self._slot(v, 0.0, "momentum", next(names))

    def _apply_dense(self, grad, var):
        slots = [self.get_slot(var, "rms")._ref(), self.get_slot(var, "momentum")._ref()]
        if self._centered:
            slots.insert(0, self.get_slot(var, "mg")._ref())
        return self._apply("ApplyCenteredRMSProp" if self._centered else "ApplyRMSProp", var,
                           slots + [self._t(self._lr, "learning_rate", var),
                                    self._t(self._decay, "decay", var),
                                    self._t(self._momentum, "momentum", var),
                                    self._t(self._epsilon, "epsilon", var), grad])


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (tf.train.FtrlOptimizer): slots "<var>/Ftrl" (the accumulator) and
    "<var>/Ftrl_1" (the linear term); ApplyFtrlV2 when l2 shrinkage is asked for."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0):
        super().__init__(use_locking, name)
        for value, what, rule in (
                (initial_accumulator_value, "initial_accumulator_value", "positive or zero"),
                (-learning_rate_power, "learning_rate_power", "negative or zero"),
                (l1_regularization_strength, "l1_regularization_strength", "positive or zero"),
                (l2_regularization_strength, "l2_regularization_strength", "positive or zero"),
                (l2_shrinkage_regularization_strength, "l2_shrinkage_regularization_strength",
                 "positive or zero")):
            if value < 0.0:
                raise ValueError("%s %f needs to be %s"
                                 % (what, -value if what == "learning_rate_power" else value,
                                    rule))
        self._lr, self._lr_power = learning_rate, learning_rate_power
        self._initial = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, self._initial, "accum", self._accum_name or self._name)
            self._slot(v, 0.0, "linear", self._linear_name or self._name + "_1")

    def _apply_dense(self, grad, var):
        t = lambda value, name: self._t(value, name, var)  # noqa: E731
        head = [self.get_slot(var, "accum")._ref(), self.get_slot(var, "linear")._ref(), grad,
                t(self._lr, "learning_rate"), t(self._l1, "l1_regularization_strength"),
                t(self._l2, "l2_regularization_strength")]
        if self._l2_shrinkage <= 0.0:
            return self._apply("ApplyFtrl", var, head + [t(self._lr_power, "learning_rate_power")])
        return self._apply("ApplyFtrlV2", var,
                           head + [t(self._l2_shrinkage, "l2_shrinkage_regularization_strength"),
                                   t(self._lr_power, "learning_rate_power")])


class AdadeltaOptimizer(Optimizer):
    """Adadelta (ApplyAdadelta): slots "<var>/Adadelta" (the squared-gradient average) and
    "<var>/Adadelta_1" (the squared-update average), both starting at zero."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, 0.0, "accum", self._name)
            self._slot(v, 0.0, "accum_update", self._name + "_1")

    def _apply_dense(self, grad, var):
        return self._apply("ApplyAdadelta", var,
                           [self.get_slot(var, "accum")._ref(),
                            self.get_slot(var, "accum_update")._ref(),
                            self._t(self._lr, "lr", var), self._t(self._rho, "rho", var),
                            self._t(self._epsilon, "epsilon", var), grad])


class ProximalGradientDescentOptimizer(Optimizer):
    """Proximal gradient descent with l1/l2 regularization. weft's core has no
    ApplyProximalGradientDescent, so the update is composed from ops with its kernel's formula:
    prox = var - lr * grad; var = sign(prox) * max(|prox| - lr * l1, 0) / (1 + lr * l2)."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _apply_dense(self, grad, var):
        lr = self._t(self._lr, "learning_rate", var)
        l1 = self._t(self._l1, "l1_regularization_strength", var)
        l2 = self._t(self._l2, "l2_regularization_strength", var)
        prox = _ops.subtract(var.value(), _ops.multiply(lr, grad))
        shrunk = _ops.maximum(_ops.subtract(_ops.abs(prox), _ops.multiply(lr, l1)),
                              _ops.zeros_like(prox))
        new = _ops.divide(_ops.multiply(_ops.sign(prox), shrunk),
                          _ops.add(_ops._to_tensor(1.0, dtype=var.dtype.base_dtype),
                                   _ops.multiply(lr, l2)))
        out = var.assign(new, use_locking=self._use_locking)
        return out if isinstance(out, _fw.Operation) else out.op


class ProximalAdagradOptimizer(Optimizer):
    """Proximal Adagrad (FOBOS at Adagrad's per-element rate; ApplyProximalAdagrad, or
    SparseApplyProximalAdagrad for an IndexedSlices gradient): slot "<var>/ProximalAdagrad" (the
    accumulator, starting at initial_accumulator_value)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError("initial_accumulator_value must be positive: %s"
                             % initial_accumulator_value)
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._initial = initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _create_slots(self, var_list):
        for v in var_list:
            self._slot(v, self._initial, "accumulator", self._name)

    def _hyper(self, var):
        return [self._t(self._lr, "learning_rate", var),
                self._t(self._l1, "l1_regularization_strength", var),
                self._t(self._l2, "l2_regularization_strength", var)]

    def _apply_dense(self, grad, var):
        return self._apply("ApplyProximalAdagrad", var,
                           [self.get_slot(var, "accumulator")._ref()] + self._hyper(var) + [grad])

    def _apply_sparse(self, grad, var):
        return self._apply("SparseApplyProximalAdagrad", var,
                           [self.get_slot(var, "accumulator")._ref()] + self._hyper(var)
                           + [grad.values, grad.indices])
