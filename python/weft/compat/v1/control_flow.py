"""TensorFlow 1.x's control flow for `weft.compat.v1`: tf.cond, tf.case, tf.while_loop,
tf.TensorArray, tf.map_fn, tf.scan, tf.foldl and tf.foldr. They build the nodes TensorFlow's v1
control_flow_ops.py builds (Switch/Merge around a pivot for a cond; Enter/Merge/LoopCond/Switch/
Identity/NextIteration/Exit frames for a loop, with constant Enters for the outer tensors a body
reads), so weft's executor runs them and weft_gradients (gradients_cf.c) differentiates them."""
import numpy as np

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from .framework import Operation, Tensor


# ---------------------------------------------------------------------------------------------
# Nested structures (TensorFlow's nest, for lists, tuples, namedtuples and dicts)

def _is_nested(s):
    return isinstance(s, (list, tuple, dict))


def _flatten(s):
    if isinstance(s, dict):
        return [x for k in sorted(s) for x in _flatten(s[k])]
    if isinstance(s, (list, tuple)):
        return [x for e in s for x in _flatten(e)]
    return [s]


def _pack(structure, flat):
    it = iter(flat)

    def rec(s):
        if isinstance(s, dict):
            return type(s)((k, rec(s[k])) for k in sorted(s))
        if isinstance(s, (list, tuple)):
            items = [rec(e) for e in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(it)
    return rec(structure)


def _same_structure(a, b):
    return _pack(a, [0] * len(_flatten(a))) == _pack(b, [0] * len(_flatten(b)))


def _to_flow(v):
    return v.flow if isinstance(v, TensorArray) else v


def _from_flow(like, v):
    """A TensorArray result carries its new flow in a TensorArray like the one given."""
    return like._with_flow(v) if isinstance(like, TensorArray) else v


# ---------------------------------------------------------------------------------------------
# Contexts: the branch or loop an op is built in

class _Context:
    """Where ops are being added: Graph._create_op passes each input through _enter_value (an
    outer tensor is captured once: a Switch in a branch, a constant Enter in a loop) and each
    op's control inputs through _control_inputs."""

    def __init__(self, graph):
        self._graph = graph
        self.outer = graph._cf_context
        self._captured = {}
        self._pivot = None

    def _holds(self, op):
        c = getattr(op, "_cf_ctx", None)
        while c is not None:
            if c is self:
                return True
            c = c.outer
        return False

    def _enter_value(self, t):
        if not isinstance(t, Tensor) or self._holds(t.op):
            return t
        v = self._captured.get(t.name)
        if v is None:
            with self._in(self.outer), self._graph.control_dependencies(None):
                v = self._capture(t)
            v.op._cf_ctx = self
            self._captured[t.name] = v
        return v

    def _control_inputs(self, controls, has_inputs):
        kept = [c for c in controls if self._keeps(c)]
        if not has_inputs and not any(self._holds(c) for c in kept):
            kept.append(self._pivot.op)
        return kept

    def _in(self, ctx):
        g = self._graph

        class _Scope:
            def __enter__(s):
                s.old = g._cf_context
                g._cf_context = ctx

            def __exit__(s, *exc):
                g._cf_context = s.old
        return _Scope()


class _CondContext(_Context):
    def __init__(self, graph, pred, pivot, branch):
        super().__init__(graph)
        self._pred = pred
        self._pivot = pivot
        self._branch = branch

    def _capture(self, t):
        return _switch(t, self._pred)[self._branch]

    def _keeps(self, c):
        return True

    def _build(self, fn, what):
        with self._in(self):
            res = fn()
            if res is None:
                raise ValueError("%s must have a return value." % what)
            flat = []
            for v in _flatten(res):
                if isinstance(v, Operation):
                    with _fw.control_dependencies([v]):
                        v = _ops.identity(self._pivot)
                else:
                    v = self._enter_value(_fw.convert_to_tensor(_to_flow(v)))
                flat.append(v)
        return res, flat


def _switch(data, pred, name="Switch"):
    return _fw._run_op("Switch", [data, pred], [("T", "type", data.dtype.base_dtype
                                                 .as_datatype_enum)], name)


def _merge(inputs, name="Merge"):
    return _fw._run_op("Merge", [list(inputs)],
                       [("T", "type", inputs[0].dtype.base_dtype.as_datatype_enum),
                        ("N", "int", len(inputs))], name)[0]


def _check_pred(pred, op):
    if isinstance(pred, (bool, np.bool_)):
        raise TypeError("pred must not be a Python bool")
    pred = _fw.convert_to_tensor(pred)
    if pred.dtype.base_dtype != _dtypes.bool:
        raise TypeError("Input 'pred' of '%s' Op has type %s that does not match expected type "
                        "of bool." % (op, pred.dtype.base_dtype.name))
    return pred


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """true_fn() if pred else false_fn(): both branches are built, a Switch on pred feeds each
    the outer tensors it reads, and a Merge per output takes the branch that ran."""
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    with _fw.name_scope(name, "cond", [pred]):
        pred = _check_pred(pred, "Switch")
        g = pred.graph
        p_f, p_t = _switch(pred, pred)
        pivot_t = _ops.identity(p_t, name="switch_t")
        pivot_f = _ops.identity(p_f, name="switch_f")
        pred = _ops.identity(pred, name="pred_id")
        res_t, flat_t = _CondContext(g, pred, pivot_t, 1)._build(true_fn, "true_fn")
        res_f, flat_f = _CondContext(g, pred, pivot_f, 0)._build(false_fn, "false_fn")
        if not _same_structure(res_t, res_f):
            raise ValueError("true_fn and false_fn must return the same structure: %s and %s"
                             % (_pack(res_t, ["."] * len(flat_t)),
                                _pack(res_f, ["."] * len(flat_f))))
        for t, f in zip(flat_t, flat_f):
            if t.dtype.base_dtype != f.dtype.base_dtype:
                raise ValueError("Outputs of true_fn and false_fn must have the same type: %s, %s"
                                 % (t.dtype.name, f.dtype.name))
        merges = [_merge([f, t]) for t, f in zip(flat_t, flat_f)]
        like = _flatten(res_t)
        out = _pack(res_t, [_from_flow(lk, m) for lk, m in zip(like, merges)])
        if not strict and isinstance(out, (list, tuple)) and len(out) == 1:
            out = out[0]
        return out


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The fn of the first true predicate (of the only one, checked at run time, when
    exclusive), else default(); without a default the last pair's fn is the default."""
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError("pred_fn_pairs must be a list, tuple, or dict")
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        if not callable(pair[1]):
            raise TypeError("fn for pred %s must be callable." % getattr(pair[0], "name", pair[0]))
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    pairs = list(pred_fn_pairs)
    if default is None:
        if not pairs:
            raise ValueError("pred_fn_pairs must not be empty without a default")
        default = pairs.pop()[1]
    with _fw.name_scope(name, "case", [p for p, _ in pred_fn_pairs]):
        preds = [_check_pred(p, "Switch") for p, _ in pred_fn_pairs]
        controls = []
        if exclusive and len(preds) > 1:
            from . import debugging
            count = _ops.reduce_sum(_ops.cast(_ops.stack(preds), _dtypes.int32))
            controls = [debugging.Assert(_ops.less_equal(count, 1),
                                         ["Input error: exclusive=True: more than 1 conditions "
                                          "evaluated as True:", _ops.stack(preds)])]
        fn = default
        for pred, f in reversed(list(zip(preds, [f for _, f in pairs]))):
            fn = (lambda p, t, e: lambda: cond(p, t, e, strict=strict))(pred, f, fn)
        with _fw.control_dependencies(controls):
            return fn()


# ---------------------------------------------------------------------------------------------
# while_loop

class _WhileContext(_Context):
    def __init__(self, graph, frame_name, parallel_iterations, back_prop):
        super().__init__(graph)
        self._frame = frame_name
        self._parallel = parallel_iterations
        self.back_prop = back_prop

    def _enter(self, t, is_constant, name="Enter"):
        e = _fw._run_op("Enter", [t], [("T", "type", t.dtype.base_dtype.as_datatype_enum),
                                       ("frame_name", "string", self._frame),
                                       ("is_constant", "bool", is_constant),
                                       ("parallel_iterations", "int", self._parallel)], name)
        e.op._cf_ctx = self
        return e

    def _capture(self, t):
        return self._enter(t, True)

    def _keeps(self, c):
        # an outer op cannot gate one inside the frame: TensorFlow drops such control edges too
        return self._holds(c)


def _loop_shape_error(t, before, after):
    return ValueError("Input tensor '%s' enters the loop with shape %s, but has shape %s after "
                      "one iteration. To allow the shape to vary across iterations, use the "
                      "`shape_invariants` argument of tf.while_loop to specify a less-specific "
                      "shape." % (t.name, before, after))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeats body while cond: one frame (Enter/Merge/LoopCond/Switch/Identity/NextIteration/
    Exit per loop variable). swap_memory is accepted and ignored (weft keeps values in place)."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if loop_vars is None or (_is_nested(loop_vars) and not _flatten(loop_vars)):
        raise ValueError("No loop variables provided")
    if not _is_nested(loop_vars):
        single = True
        loop_vars = [loop_vars]
        if shape_invariants is not None:
            shape_invariants = [shape_invariants]
    else:
        single = False
    with _fw.name_scope(name, "while", [v for v in _flatten(loop_vars)
                                        if isinstance(v, Tensor)]) as scope:
        if maximum_iterations is not None:
            maximum_iterations = _fw.convert_to_tensor(maximum_iterations,
                                                       name="maximum_iterations")
            if maximum_iterations.shape.ndims != 0:
                raise ValueError("maximum_iterations must be a scalar, saw shape: %s"
                                 % maximum_iterations.shape)
            counter = _fw.constant(0, dtype=maximum_iterations.dtype, name="iteration_counter")
            user_cond, user_body, mi = cond, body, maximum_iterations
            cond = lambda i, lv: _ops.logical_and(i < mi, user_cond(*lv))  # noqa: E731
            body = lambda i, lv: (i + 1, _as_list(user_body(*lv), lv))  # noqa: E731
            loop_vars = (counter, loop_vars)
            if shape_invariants is not None:
                shape_invariants = (_fw.TensorShape([]), shape_invariants)
        g = _fw.get_default_graph()
        ctx = _WhileContext(g, scope + "while_context", parallel_iterations, back_prop)
        structure = loop_vars
        like = _flatten(loop_vars)
        flat = [v.flow if isinstance(v, TensorArray) else _fw.convert_to_tensor(v) for v in like]
        if shape_invariants is None:
            shapes = [t.shape for t in flat]
        else:
            if not _same_structure(_pack(structure, [0] * len(flat)),
                                   _pack(shape_invariants,
                                         [0] * len(_flatten(shape_invariants)))) and \
                    len(_flatten(shape_invariants)) != len(flat):
                raise ValueError("The shape invariants must have the same structure as "
                                 "loop_vars")
            shapes = [_fw.as_shape(s) for s in _flatten(shape_invariants)]
            for t, s, lk in zip(flat, shapes, like):
                if isinstance(lk, TensorArray):
                    continue
                if not s.is_compatible_with(t.shape):
                    raise ValueError("The shape invariant specified for %s is not compatible "
                                     "with the initial shape of the loop variable. It enters "
                                     "the loop with shape %s, but the specified shape "
                                     "invariant is %s." % (t.name, t.shape, s))
            shapes = [t.shape if isinstance(lk, TensorArray) else s
                      for t, s, lk in zip(flat, shapes, like)]
        enters = []
        for t, s in zip(flat, shapes):
            if t.shape != s:
                # the loop's values take the invariant's (less specific) shape from the start,
                # so that no shape inferred inside the body is narrower than the loop allows
                t = _ops.placeholder_with_default(t, s)
            enters.append(ctx._enter(t, False))
        with ctx._in(ctx):
            merges = [_merge([e, e]) for e in enters]
            ctx._pivot = merges[0]
            packed = _pack(structure, [_from_flow(lk, m) for lk, m in zip(like, merges)])
            c = cond(*packed)
            c = _fw.convert_to_tensor(c)
            if c.dtype.base_dtype != _dtypes.bool:
                raise TypeError("Input 'input' of 'LoopCond' Op has type %s that does not match "
                                "expected type of bool." % c.dtype.base_dtype.name)
            loop_cond = _fw._run_op("LoopCond", [c], (), "LoopCond")
            switches = [_switch(m, loop_cond) for m in merges]
            idents = [_ops.identity(s[1]) for s in switches]
            ctx._pivot = idents[0]
            packed = _pack(structure, [_from_flow(lk, i) for lk, i in zip(like, idents)])
            result = body(*packed)
            result = _as_list(result, structure)
            if not _same_structure(list(structure), list(result)):
                raise ValueError("The two structures don't have the same nested structure: "
                                 "loop_vars %s, body result %s"
                                 % (_pack(structure, ["."] * len(flat)),
                                    _pack(result, ["."] * len(_flatten(result)))))
            res_flat = [v.flow if isinstance(v, TensorArray)
                        else ctx._enter_value(_fw.convert_to_tensor(v))
                        for v in _flatten(result)]
            for t, r, s in zip(flat, res_flat, shapes):
                if r.dtype.base_dtype != t.dtype.base_dtype:
                    raise ValueError("Loop variable %s enters the loop with type %s, but has "
                                     "type %s after one iteration"
                                     % (t.name, t.dtype.name, r.dtype.name))
                # a shape weft infers less precisely than TensorFlow (unknown) is let through
                if not s.is_compatible_with(r.shape):
                    raise _loop_shape_error(t, s, r.shape)
            nexts = [_fw._run_op("NextIteration", [r], [("T", "type", r.dtype.base_dtype
                                                         .as_datatype_enum)], "NextIteration")
                     for r in res_flat]
        exits = [_fw._run_op("Exit", [s[0]], [("T", "type", s[0].dtype.base_dtype
                                               .as_datatype_enum)], "Exit") for s in switches]
        g._close_loops({m.op.name: {1: n.name} for m, n in zip(merges, nexts)})
        if not back_prop:
            exits = [_ops.stop_gradient(e) for e in exits]
        out = _pack(structure, [_from_flow(lk, e) for lk, e in zip(like, exits)])
        if maximum_iterations is not None:
            out = out[1]
        if single:
            return out[0]
        if not return_same_structure and len(_flatten(out)) == 1:
            return _flatten(out)[0]
        return out


def _as_list(result, structure):
    """A body of one loop variable may return it bare (a namedtuple state included); the result
    takes loop_vars' sequence type so the two structures compare."""
    if not isinstance(result, (list, tuple)) or (
            len(structure) == 1 and not _same_structure(list(structure), list(result))
            and _same_structure(structure[0], result)):
        result = [result]
    if type(structure) in (list, tuple):
        result = type(structure)(result)
    return result


# ---------------------------------------------------------------------------------------------
# TensorArray

class TensorArray:
    """TensorFlow 1.x's TensorArray over the TensorArrayV3 ops: each operation returns a new
    TensorArray whose flow orders it after this one."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        self._dtype = _dtypes.as_dtype(dtype).base_dtype
        self._infer_shape = infer_shape
        # one list shared by every TensorArray derived from this one (as TensorFlow shares
        # it), so a shape learnt from a write inside a loop body holds for the loop's result
        self._shape_box = [_fw.TensorShape(None) if element_shape is None
                           else _fw.as_shape(element_shape)]
        if handle is not None:
            if flow is None:
                raise ValueError("flow must not be None if handle is not None.")
            self._handle, self._flow = handle, flow
            return
        if flow is not None:
            raise ValueError("Cannot provide both a flow and size at the same time")
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        with _fw.name_scope(name, "TensorArray", [size]) as scope:
            size = _ops._to_tensor(size, dtype=_dtypes.int32)
            es = self.element_shape
            self._handle, self._flow = _fw._run_op(
                "TensorArrayV3", [size],
                [("dtype", "type", self._dtype.as_datatype_enum),
                 ("element_shape", "shape", None if es.ndims is None else es.as_list()),
                 ("dynamic_size", "bool", bool(dynamic_size)),
                 ("clear_after_read", "bool", clear_after_read is None or
                  bool(clear_after_read)),
                 ("identical_element_shapes", "bool", bool(infer_shape)),
                 ("tensor_array_name", "string", tensor_array_name or "")], scope)

    @property
    def handle(self):
        return self._handle

    @property
    def flow(self):
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self):
        return self._shape_box[0]

    def _with_flow(self, flow):
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow,
                         infer_shape=self._infer_shape)
        ta._shape_box = self._shape_box
        return ta

    def _merge_shape(self, shape):
        if self._infer_shape:
            if not self.element_shape.is_compatible_with(shape):
                raise ValueError("Inconsistent shapes: saw %s but expected %s "
                                 "(and infer_shape=True)" % (shape, self.element_shape))
            self._shape_box[0] = self.element_shape.merge_with(shape)

    def _value(self, value):
        value = _fw.convert_to_tensor(value, name="value")
        if value.dtype.base_dtype != self._dtype:
            raise TypeError("TensorArray dtype is %s but Op is trying to write dtype %s "
                            % (self._dtype.name, value.dtype.base_dtype.name))
        return value

    def identity(self):
        return self._with_flow(_ops.identity(self._flow))

    def read(self, index, name=None):
        value = _fw._run_op("TensorArrayReadV3",
                            [self._handle, _ops._to_tensor(index, dtype=_dtypes.int32),
                             self._flow], [("dtype", "type", self._dtype.as_datatype_enum)],
                            name or "TensorArrayReadV3")
        es = self.element_shape
        if es.ndims is not None and sum(d is None for d in es.as_list()) <= 1:
            # TensorFlow sets the element shape on the value; weft's shapes are inferred only,
            # so a Reshape to that shape (a no-op at run time) carries it
            value = _ops.reshape(value, [-1 if d is None else d for d in es.as_list()])
        return value

    def write(self, index, value, name=None):
        with _fw.name_scope(name, "TensorArrayWrite", [self._handle, index, value]):
            value = self._value(value)
            self._merge_shape(value.shape)
            flow = _fw._run_op("TensorArrayWriteV3",
                               [self._handle, _ops._to_tensor(index, dtype=_dtypes.int32),
                                value, self._flow],
                               [("T", "type", self._dtype.as_datatype_enum)],
                               "TensorArrayWriteV3")
        return self._with_flow(flow)

    def gather(self, indices, name=None):
        es = self.element_shape
        return _fw._run_op("TensorArrayGatherV3",
                           [self._handle, _ops._to_tensor(indices, dtype=_dtypes.int32),
                            self._flow],
                           [("dtype", "type", self._dtype.as_datatype_enum),
                            ("element_shape", "shape",
                             None if es.ndims is None else es.as_list())],
                           name or "TensorArrayGatherV3")

    def stack(self, name=None):
        with _fw.name_scope(name, "TensorArrayStack", [self._handle]):
            return self.gather(_ops.range(0, self.size()), name="TensorArrayGatherV3")

    def concat(self, name=None):
        es = self.element_shape
        rest = None if es.ndims is None or es.ndims == 0 else es.as_list()[1:]
        return _fw._run_op("TensorArrayConcatV3", [self._handle, self._flow],
                           [("dtype", "type", self._dtype.as_datatype_enum),
                            ("element_shape_except0", "shape", rest)],
                           name or "TensorArrayConcatV3")[0]

    def scatter(self, indices, value, name=None):
        with _fw.name_scope(name, "TensorArrayScatter", [self._handle, value, indices]):
            value = self._value(value)
            if value.shape.ndims:
                self._merge_shape(value.shape[1:])
            flow = _fw._run_op("TensorArrayScatterV3",
                               [self._handle, _ops._to_tensor(indices, dtype=_dtypes.int32),
                                value, self._flow],
                               [("T", "type", self._dtype.as_datatype_enum)],
                               "TensorArrayScatterV3")
        return self._with_flow(flow)

    def unstack(self, value, name=None):
        with _fw.name_scope(name, "TensorArrayUnstack", [self._handle, value]):
            value = self._value(value)
            n = _ops.shape(value)[0]
            return self.scatter(_ops.range(0, n), value, name="TensorArrayScatterV3")

    def split(self, value, lengths, name=None):
        with _fw.name_scope(name, "TensorArraySplit", [self._handle, value, lengths]):
            value = self._value(value)
            lengths = _ops.cast(lengths, _dtypes.int64)
            flow = _fw._run_op("TensorArraySplitV3", [self._handle, value, lengths, self._flow],
                               [("T", "type", self._dtype.as_datatype_enum)],
                               "TensorArraySplitV3")
        return self._with_flow(flow)

    def size(self, name=None):
        return _fw._run_op("TensorArraySizeV3", [self._handle, self._flow], (),
                           name or "TensorArraySizeV3")

    def close(self, name=None):
        return _fw._run_op("TensorArrayCloseV3", [self._handle], (),
                           name or "TensorArrayCloseV3")


# ---------------------------------------------------------------------------------------------
# Higher-order functions over while_loop and TensorArray

def _elems(elems):
    flat = [_fw.convert_to_tensor(e, name="elem") for e in _flatten(elems)]
    if not flat:
        raise ValueError("elems must not be empty")
    n = flat[0].shape[0].value if flat[0].shape.ndims else None
    if flat[0].shape.ndims == 0:
        raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n_t = _fw.constant(n) if n is not None else _ops.shape(flat[0])[0]
    tas = [TensorArray(e.dtype, size=n_t, dynamic_size=False, infer_shape=True).unstack(e)
           for e in flat]
    return flat, n, n_t, tas


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True,
           swap_memory=False, infer_shape=True, name=None):
    """fn applied to each slice elems[i] (nested elems: each i-th slice, packed alike), the
    results stacked; dtype gives fn's output structure when it differs from elems'."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    parallel_iterations = parallel_iterations or 10
    with _fw.name_scope(name, "map", [e for e in _flatten(elems) if isinstance(e, Tensor)]):
        flat, n, n_t, elem_tas = _elems(elems)
        out_struct = elems if dtype is None else dtype
        out_dtypes = [e.dtype for e in flat] if dtype is None else \
            [_dtypes.as_dtype(d) for d in _flatten(dtype)]
        accs = [TensorArray(dt, size=n_t, dynamic_size=False, infer_shape=infer_shape)
                for dt in out_dtypes]

        def compute(i, tas):
            value = fn(_pack(elems, [ta.read(i) for ta in elem_tas]))
            if not _same_structure(_pack(out_struct, [0] * len(out_dtypes)),
                                   _pack(value, [0] * len(_flatten(value)))) and \
                    len(_flatten(value)) != len(out_dtypes):
                raise ValueError("The two structures don't have the same nested structure: "
                                 "dtype %s, fn output %s" % (out_struct, value))
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, _flatten(value))]
        _, accs = while_loop(lambda i, _: i < n_t, compute, (_fw.constant(0), accs),
                             parallel_iterations=parallel_iterations, back_prop=back_prop,
                             maximum_iterations=n_t)
        return _pack(out_struct, [ta.stack() for ta in accs])


def _fold(fn, elems, initializer, parallel_iterations, back_prop, name, default, reverse):
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with _fw.name_scope(name, default, [e for e in _flatten(elems) if isinstance(e, Tensor)]):
        flat, n, n_t, tas = _elems(elems)
        if initializer is None:
            a = _pack(elems, [ta.read(n_t - 1 if reverse else 0) for ta in tas])
            i = n_t - 2 if reverse else _fw.constant(1)
        else:
            a = initializer
            i = n_t - 1 if reverse else _fw.constant(0)
        return a, i, n_t, tas


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """fn(fn(fn(initializer, e0), e1), ...) over the first dimension of elems."""
    return _foldx(fn, elems, initializer, parallel_iterations, back_prop, name, "foldl", False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """fn(fn(initializer, e[n-1]), e[n-2]), ... from the last element down."""
    return _foldx(fn, elems, initializer, parallel_iterations, back_prop, name, "foldr", True)


def _foldx(fn, elems, initializer, parallel_iterations, back_prop, name, default, reverse):
    a, i, n_t, tas = _fold(fn, elems, initializer, parallel_iterations, back_prop, name,
                           default, reverse)

    def body(i, a):
        a = fn(a, _pack(elems, [ta.read(i) for ta in tas]))
        return (i - 1 if reverse else i + 1), a
    cond = (lambda i, a: i >= 0) if reverse else (lambda i, a: i < n_t)
    _, r = while_loop(cond, body, (i, a), parallel_iterations=parallel_iterations,
                      back_prop=back_prop)
    return r


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """The successive values of a = fn(a, elems[i]), stacked (from the end when reverse)."""
    a, i, n_t, tas = _fold(fn, elems, initializer, parallel_iterations, back_prop, name, "scan",
                           reverse)
    a_flat = [_fw.convert_to_tensor(x) for x in _flatten(a)]
    accs = [TensorArray(x.dtype, size=n_t, dynamic_size=False, infer_shape=infer_shape)
            for x in a_flat]
    if initializer is None:
        accs = [ta.write(n_t - 1 if reverse else 0, x) for ta, x in zip(accs, a_flat)]

    def body(i, a, accs):
        a = fn(a, _pack(elems, [ta.read(i) for ta in tas]))
        accs = [ta.write(i, x) for ta, x in zip(accs, _flatten(a))]
        return (i - 1 if reverse else i + 1), a, accs
    cond = (lambda i, a, _: i >= 0) if reverse else (lambda i, a, _: i < n_t)
    _, _, accs = while_loop(cond, body, (i, a, accs), parallel_iterations=parallel_iterations,
                            back_prop=back_prop)
    return _pack(a, [ta.stack() for ta in accs])
