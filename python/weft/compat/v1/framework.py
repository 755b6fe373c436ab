"""TensorFlow 1.x's graph layer over weft._weft: Graph (default graph stack, names, scopes,
collections), Operation, Tensor (with operator overloading), TensorShape and
convert_to_tensor. Ops are added through _weft.Graph.add_op; names are made unique here, the
way TensorFlow's Graph.unique_name does, so the C graph receives final names."""
import contextlib
import threading

import numpy as np

from weft import _weft
from weft import errors
from . import dtypes as _dtypes


# ---------------------------------------------------------------------------------------------
# TensorShape

class Dimension:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = None if value is None else int(value)

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self.value is None or other is None:
            return None
        return self.value == other

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return "Dimension(%r)" % self.value

    def __str__(self):
        return "?" if self.value is None else str(self.value)


class TensorShape:
    """A possibly partial shape: dims None (unknown rank) or a list of int/None."""

    def __init__(self, dims):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = None if dims._dims is None else list(dims._dims)
        elif isinstance(dims, (int, np.integer)):
            self._dims = [int(dims)]
        else:
            self._dims = [None if d is None or (isinstance(d, Dimension) and d.value is None)
                          else int(d) for d in dims]

    @property
    def dims(self):
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self):
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self):
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        return int(np.prod(self._dims, dtype=np.int64))

    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other):
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are not compatible" % (self, other))
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError("Shapes %s and %s are incompatible" % (self, as_shape(other)))

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(Dimension(d) for d in self._dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return Dimension(self._dims[key])

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return "TensorShape(%s)" % [Dimension(d) for d in self._dims]

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return "(%s,)" % ("?" if self._dims[0] is None else self._dims[0])
        return "(%s)" % ", ".join("?" if d is None else str(d) for d in self._dims)


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape():
    return TensorShape(None)


# ---------------------------------------------------------------------------------------------
# Collections

class GraphKeys:
    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    VARIABLES = GLOBAL_VARIABLES


# ---------------------------------------------------------------------------------------------
# Operation and Tensor

class Operation:
    """A node of a Graph (TensorFlow's tf.Operation)."""

    def __init__(self, graph, node):
        self._graph = graph
        self._node = node
        self._name = node.name
        self._type = node.op
        self._outputs = None

    @property
    def name(self):
        return self._name

    @property
    def type(self):
        return self._type

    @property
    def graph(self):
        return self._graph

    @property
    def device(self):
        return self._node.device

    @property
    def outputs(self):
        if self._outputs is None:
            n = self._node
            self._outputs = [Tensor(self, i, _dtypes.as_dtype(n.output_dtype(i)))
                             for i in range(n.num_outputs)]
        return self._outputs

    @property
    def inputs(self):
        return [self._graph._op_of(node).outputs[i] for node, i in self._node.inputs]

    @property
    def control_inputs(self):
        return [self._graph._op_of(node) for node in self._node.control_inputs]

    @property
    def node_def(self):
        return _NodeDefView(self._name, self._type, self.device)

    def get_attr(self, name):
        """The attribute as TensorFlow returns it (DType, TensorShape, bytes, int, list...);
        ValueError naming the op when it has no such attribute."""
        from . import graph_io
        attrs = graph_io._node_attrs(self._graph, self._name)
        if name not in attrs:
            raise ValueError("Operation '%s' has no attr named '%s'." % (self._name, name))
        return graph_io.attr_to_python(*attrs[name])

    def colocation_groups(self):
        group = self._node.colocation_group
        return [("loc:@" + (group or self._name)).encode()]

    def values(self):
        return tuple(self.outputs)

    def run(self, feed_dict=None, session=None):
        from . import session as _session
        _session._run_using_default_session(self, feed_dict, self._graph, session)

    def __repr__(self):
        return "<tf.Operation '%s' type=%s>" % (self._name, self._type)

    def __str__(self):
        return 'name: "%s"\nop: "%s"\n' % (self._name, self._type)


class _NodeDefView:
    """What device functions and users read of op.node_def: .name, .op, .device."""

    def __init__(self, name, op, device):
        self.name = name
        self.op = op
        self.device = device


class _PendingOp:
    """The op a device function is asked about: its type and name (the node does not exist yet,
    so .inputs are unknown); TensorFlow's functions read op.type, op.name, op.device, node_def."""

    def __init__(self, op_type, name):
        self.type = op_type
        self.name = name
        self.device = ""
        self.node_def = _NodeDefView(name, op_type, "")
        self.inputs = []


class Tensor:
    """Output `value_index` of Operation `op` (TensorFlow's tf.Tensor), named "op:index"."""

    # numpy defers binary operators with a Tensor on the right to Tensor's reflected methods.
    __array_priority__ = 100

    def __init__(self, op, value_index, dtype):
        self._op = op
        self._value_index = value_index
        self._dtype = dtype

    @property
    def op(self):
        return self._op

    @property
    def value_index(self):
        return self._value_index

    @property
    def dtype(self):
        return self._dtype

    @property
    def graph(self):
        return self._op._graph

    @property
    def name(self):
        return "%s:%d" % (self._op._name, self._value_index)

    @property
    def device(self):
        return self._op.device

    @property
    def shape(self):
        inferred = TensorShape(self._op._node.output_shape(self._value_index))
        hint = self._op._graph._shape_hints.get((self._op._name, self._value_index))
        return inferred if hint is None else inferred.merge_with(hint)

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        """Refines the static shape the Python layer reports (tf.layers and the other Python
        code that reads .shape see it); the core's shape inference of later nodes does not
        (tf.ensure_shape refines it there too, checked when the step runs)."""
        if not self.shape.is_compatible_with(shape):
            raise ValueError("Shapes %s and %s are not compatible" % (self.shape, as_shape(shape)))
        self._op._graph._shape_hints[(self._op._name, self._value_index)] = \
            self.shape.merge_with(shape)

    @property
    def consumers_unsupported(self):
        raise NotImplementedError("Tensor.consumers is not supported by weft")

    def _as_output(self):
        return (self._op._node, self._value_index)

    def eval(self, feed_dict=None, session=None):
        from . import session as _session
        return _session._run_using_default_session(self, feed_dict, self.graph, session)

    def __repr__(self):
        return "<tf.Tensor '%s' shape=%s dtype=%s>" % (self.name, self.shape, self._dtype.name)

    def __str__(self):
        return 'Tensor("%s", shape=%s, dtype=%s)' % (self.name, self.shape, self._dtype.name)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use `if t is not "
                        "None:` instead of `if t:` to test if a tensor is defined, and use "
                        "TensorFlow ops such as tf.cond to execute subgraphs conditioned on the "
                        "value of a tensor.")

    def __iter__(self):
        shape = self.shape
        if shape.ndims is None or shape.as_list()[0] is None:
            raise TypeError("Tensor objects are only iterable when the first dimension is known.")
        from . import ops
        return iter(ops.unstack(self))

    def __len__(self):
        raise TypeError("len is not well defined for symbolic Tensors. (%s) Please call "
                        "`x.shape` rather than `len(x)` for shape information." % self.name)

    # operators: filled in by ops.py (_install_operators) to avoid a circular import
    def __getitem__(self, key):
        from . import ops
        return ops._slice_helper(self, key)


# ---------------------------------------------------------------------------------------------
# Graph

class Graph:
    """TensorFlow's tf.Graph over a weft graph."""

    def __init__(self):
        self._g = _weft.Graph()
        self._ops = {}
        self._names_in_use = {}
        self._name_stack = ""
        self._control_stack = []  # lists of Operations; None entry: cleared
        self._collections = {}
        # Tensor.set_shape's refinements: (op name, output index) -> TensorShape
        self._shape_hints = {}
        self._lock = threading.RLock()
        self._finalized = False
        self.seed = None
        self._last_id = 0  # ops created so far (Graph._last_id in TensorFlow)
        self._variable_scope_store = None
        self._building_function = False
        # None, or fn(outer Tensor) -> a Tensor of this graph standing for it (data.py)
        self._capture = None
        # the innermost cond or while_loop being built (control_flow.py); None at top level
        self._cf_context = None

    # names
    def unique_name(self, name, mark_as_used=True):
        """TensorFlow's rule: "a", then "a_1", "a_2", ... (case-insensitively unique)."""
        if self._name_stack:
            name = self._name_stack + "/" + name
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while key in self._names_in_use:
                key = "%s_%d" % (base, i)
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = "%s_%d" % (name, i - 1)
        return name

    def _mark_names_used(self, first_node):
        """Names of nodes added behind unique_name's back (imports) count as used."""
        for k in range(first_node, self._g.num_nodes()):
            self._names_in_use.setdefault(self._g.node_at(k).name.lower(), 1)

    def get_name_scope(self):
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        old = self._name_stack
        if name is None or name == "":
            new = ""
        elif isinstance(name, str) and name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield "" if new == "" else new + "/"
        finally:
            self._name_stack = old

    # ops
    def _op_of(self, node):
        op = self._ops.get(node.name)
        if op is None or op._node != node:
            op = Operation(self, node)
            self._ops[node.name] = op
        return op

    def _create_op(self, op_type, inputs=(), attrs=(), name=None, control_inputs=(),
                   device=None):
        """Adds an op. inputs: Tensors or lists of Tensors (list arguments); attrs: a list of
        (name, kind, value) as _weft.Graph.add_op takes them."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        if name and name.endswith("/"):
            # a name scope's own name ("v/" from `with name_scope("v") as scope`) names the op
            # itself, as in TensorFlow
            full = name[:-1]
            self._names_in_use.setdefault(full.lower(), 1)
        else:
            full = self.unique_name(name or op_type)
        ctx = self._cf_context
        if ctx is not None:
            inputs = [[ctx._enter_value(t) for t in x] if isinstance(x, (list, tuple))
                      else ctx._enter_value(x) for x in inputs]
        c_inputs = []
        for x in inputs:
            if isinstance(x, (list, tuple)):
                c_inputs.append([self._check_mine(t)._as_output() for t in x])
            else:
                c_inputs.append(self._check_mine(x)._as_output())
        controls = []
        for frame in self._control_stack:
            if frame is None:
                controls = []
            else:
                controls.extend(frame)
        controls.extend(control_inputs)
        if ctx is not None:
            controls = ctx._control_inputs(controls, bool(inputs))
        seen = set()
        c_controls = []
        for c in controls:
            if c._name not in seen:
                seen.add(c._name)
                c_controls.append(c._node)
        with self._lock:
            try:
                node = self._g.add_op(op_type, full, c_inputs, list(attrs), c_controls, device)
            except errors.InvalidArgumentError as e:
                # shape and attribute errors at construction are ValueErrors in TensorFlow
                raise ValueError(e.message) from None
            self._last_id += 1  # TensorFlow's op ids, which op seeds come from (get_seed)
        op = Operation(self, node)
        op._cf_ctx = ctx
        self._ops[node.name] = op
        return op

    @contextlib.contextmanager
    def _outside_control_flow(self):
        """TensorFlow's init_scope for graphs: variables made inside a loop body or a branch
        (an RNN cell's first call) are created once, outside every context."""
        old = self._cf_context
        self._cf_context = None
        try:
            with self.control_dependencies(None):
                yield
        finally:
            self._cf_context = old

    def _close_loops(self, back_edges):
        """Points Merge inputs at NextIteration outputs created after them (the back edges of
        while loops, weft_graph_close_loop). back_edges: {merge name: {input index: next name}}."""
        for merge, edges in back_edges.items():
            for k, src in edges.items():
                self._g.close_loop(self._g.node(merge), k, self._g.node(src.split(":")[0]))

    def _check_mine(self, t):
        if not isinstance(t, Tensor):
            raise TypeError("expected a Tensor, got %r" % (t,))
        if t.graph is not self:
            if self._capture is not None:
                # a graph traced for a function (tf.data's map): the outer tensor becomes an
                # input of the function, fed with its value
                return self._capture(t)
            raise ValueError("Tensor %s must be from the same graph as the other inputs." % t.name)
        return t

    def get_operation_by_name(self, name):
        node = self._g.node(name)
        if node is None:
            raise KeyError("The name '%s' refers to an Operation not in the graph." % name)
        return self._op_of(node)

    def get_tensor_by_name(self, name):
        if ":" not in name:
            raise ValueError("The name '%s' looks a like an Operation name, not a Tensor name. "
                             "Tensor names must be of the form \"<op_name>:<output_index>\"."
                             % name)
        op_name, _, idx = name.rpartition(":")
        node = self._g.node(op_name)
        if node is None:
            raise KeyError("The name '%s' refers to a Tensor which does not exist. The operation, "
                           "'%s', does not exist in the graph." % (name, op_name))
        op = self._op_of(node)
        i = int(idx)
        if i >= len(op.outputs):
            raise KeyError("The name '%s' refers to a Tensor which does not exist. The operation, "
                           "'%s', exists but only has %d outputs."
                           % (name, op_name, len(op.outputs)))
        return op.outputs[i]

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        from .variables import Variable
        if isinstance(obj, Variable):
            obj = obj._fetch_tensor() if allow_tensor else obj.op
        if isinstance(obj, Tensor) and allow_tensor:
            if obj.graph is not self:
                raise ValueError("Tensor %s is not an element of this graph." % obj)
            return obj
        if isinstance(obj, Operation) and allow_operation:
            if obj.graph is not self:
                raise ValueError("Operation %s is not an element of this graph." % obj)
            return obj
        if isinstance(obj, str):
            if ":" in obj and allow_tensor:
                return self.get_tensor_by_name(obj)
            if allow_operation:
                return self.get_operation_by_name(obj)
            raise ValueError("The name %r looks like an (invalid) Operation name" % obj)
        raise TypeError("Can not convert a %s into a %s." % (
            type(obj).__name__, "Tensor or Operation" if allow_tensor and allow_operation
            else ("Tensor" if allow_tensor else "Operation")))

    def get_operations(self):
        return [self._op_of(self._g.node_at(i)) for i in range(self._g.num_nodes())]

    @property
    def version(self):
        return self._g.num_nodes()

    def finalize(self):
        self._finalized = True

    @property
    def finalized(self):
        return self._finalized

    # scopes
    @contextlib.contextmanager
    def as_default(self):
        _graph_stack.stack.append(self)
        try:
            yield self
        finally:
            _graph_stack.stack.pop()

    @contextlib.contextmanager
    def device(self, spec):
        if callable(spec):
            fn = spec

            def c_fn(op_type, node_name):
                r = fn(_PendingOp(op_type, node_name))
                if r is None:
                    return None
                return r if isinstance(r, str) else r.to_string()
        else:
            if spec is not None and not isinstance(spec, str):
                spec = spec.to_string()
            c_fn = spec
        self._g.push_device(c_fn)
        try:
            yield
        finally:
            self._g.pop_device()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        if control_inputs is None:
            self._control_stack.append(None)
        else:
            ops = []
            for c in control_inputs:
                if isinstance(c, Tensor):
                    c = c.op
                elif not isinstance(c, Operation):
                    c = getattr(c, "op", None) if hasattr(c, "op") else c
                    if not isinstance(c, Operation):
                        raise TypeError("Control input must be Operation or Tensor: %r" % (c,))
                if c.graph is not self:
                    raise ValueError("Control input %s must be from the same graph." % c.name)
                ops.append(c)
            self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        from .variables import Variable
        if op is None:
            yield
            return
        if isinstance(op, Variable):
            op = op.op
        if isinstance(op, Tensor):
            op = op.op
        # As in TensorFlow, ops colocated with `op` take its placement: device scopes and
        # functions are set aside ("" clears the device; device functions see _colocating and
        # leave their state alone, so replica_device_setter's round robin is TensorFlow's).
        self._g.push_colocate(op._node)
        self._g.push_device(None)
        self._colocating = getattr(self, "_colocating", 0) + 1
        try:
            yield
        finally:
            self._colocating -= 1
            self._g.pop_device()
            self._g.pop_colocate()

    # collections
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        names = (names,) if isinstance(names, str) else set(names)
        for n in names:
            self.add_to_collection(n, value)

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_collection(self, name, scope=None):
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        import re
        pattern = re.compile(scope)
        return [i for i in items if hasattr(i, "name") and pattern.match(i.name)]

    def get_all_collection_keys(self):
        return [k for k in self._collections]

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # serialisation
    def as_graph_def(self, from_version=None, add_shapes=False):
        from . import graph_io
        return graph_io.GraphDef.FromString(self._g.export_graph_def())

    def _export_bytes(self):
        return self._g.export_graph_def()

    def gradient_override_map(self, op_type_map):
        raise NotImplementedError("gradient_override_map is not supported by weft: register a "
                                  "gradient with the op's definition in a kernel-set plugin "
                                  "(docs/sdk.md)")


class _ThreadStack(threading.local):
    """A stack per thread, as TensorFlow keeps its default graph and session: a new thread starts
    with the global default graph and no default session."""

    def __init__(self):
        super().__init__()
        self.stack = []


_graph_stack = _ThreadStack()
_global_default_graph = Graph()


def get_default_graph():
    if _graph_stack.stack:
        return _graph_stack.stack[-1]
    return _global_default_graph


def reset_default_graph():
    global _global_default_graph
    if _graph_stack.stack:
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If you "
                             "need a cleared graph, exit the nesting and create a new graph.")
    from . import session as _session
    _session._clear_default_session()
    _global_default_graph = Graph()


def _graph_of(values):
    for v in values:
        g = getattr(v, "graph", None)
        if isinstance(g, Graph):
            return g
    return get_default_graph()


# ---------------------------------------------------------------------------------------------
# Conversion

_conversion_functions = []


def register_tensor_conversion_function(base_type, conversion_func, priority=100):
    _conversion_functions.append((priority, base_type, conversion_func))
    _conversion_functions.sort(key=lambda e: e[0])


def _infer_numpy(value, dtype):
    if dtype is not None:
        dtype = _dtypes.as_dtype(dtype).base_dtype
        if dtype == _dtypes.string:
            return np.array(value, dtype=object), dtype
        arr = np.asarray(value)
        np_t = dtype.as_numpy_dtype
        if arr.dtype.kind == "f" and np.dtype(np_t).kind in "iub":
            if not np.all(np.equal(np.mod(arr, 1), 0)):
                raise TypeError("Expected %s, got %r of type '%s' instead."
                                % (dtype.name, value, type(value).__name__))
        if arr.dtype.kind in "SUO" and dtype != _dtypes.string:
            raise TypeError("Expected %s, got %r of type '%s' instead."
                            % (dtype.name, value, type(value).__name__))
        return arr.astype(np_t), dtype
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
    else:
        arr = np.asarray(value)
        if arr.dtype.kind in "SU":
            # numpy's fixed-width bytes drop trailing NULs (b"\x01\x00" reads back as b"\x01");
            # an object array keeps every byte, as TensorFlow does.
            arr = np.array(value, dtype=object)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64:
            if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
                arr = arr.astype(np.int32)
    if arr.dtype.kind in "SUO":
        return arr.astype(object), _dtypes.string
    return arr, _dtypes.as_dtype(arr.dtype)


def convert_to_tensor(value, dtype=None, name=None, preferred_dtype=None):
    """Tensors pass through (checked against dtype); Variables give their value; anything
    numpy can make an array of becomes a Const."""
    if isinstance(value, Tensor):
        if dtype is not None and not _dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError("Tensor conversion requested dtype %s for Tensor with dtype %s: %r"
                             % (_dtypes.as_dtype(dtype).name, value.dtype.name, value))
        return value
    for _, base, fn in _conversion_functions:
        if isinstance(value, base):
            return fn(value, dtype=dtype, name=name)
    if isinstance(value, Operation):
        raise TypeError("Can't convert Operation '%s' to Tensor (target dtype=%s, name=%s, "
                        "as_ref=False)" % (value.name, dtype, name))
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name)
        except (TypeError, ValueError):
            pass
    return constant(value, dtype=dtype, name=name)


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    arr, dt = _infer_numpy(value, dtype)
    if shape is not None:
        shape = [int(d) for d in as_shape(shape).as_list()]
        if arr.size == 1 and int(np.prod(shape)) != 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif verify_shape and list(arr.shape) != shape:
            raise TypeError("Expected Tensor's shape: %s, got %s." % (tuple(shape), arr.shape))
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        elif arr.size < int(np.prod(shape)) and arr.ndim <= 1 and arr.size > 0:
            flat = np.concatenate([arr.reshape(-1),
                                   np.repeat(arr.reshape(-1)[-1:], int(np.prod(shape)) - arr.size)])
            arr = flat.reshape(shape)
        else:
            raise TypeError("Too many elements provided. Needed at most %d, but received %d"
                            % (int(np.prod(shape)), arr.size))
    g = get_default_graph()
    op = g._create_op("Const", [], [("dtype", "type", dt.as_datatype_enum),
                                    ("value", "tensor", (arr, dt.as_datatype_enum))], name)
    return op.outputs[0]


def _run_op(op_type, inputs, attrs=(), name=None, dtype_hint=None):
    """Adds an op of the default graph (or the inputs' graph) and returns its outputs: one Tensor,
    or a list when the op has several (or none: the Operation)."""
    g = _graph_of([i for i in inputs if not isinstance(i, (list, tuple))]
                  + [t for i in inputs if isinstance(i, (list, tuple)) for t in i])
    with g.as_default():
        op = g._create_op(op_type, inputs, attrs, name)
    outs = op.outputs
    if not outs:
        return op
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------------------------------
# Module-level scopes (tf.name_scope, tf.device, ...)

class name_scope:
    """tf.name_scope(name, default_name=None, values=None)."""

    def __init__(self, name, default_name=None, values=None):
        self._name = default_name if name is None else name
        self._values = values
        self._ctx = None

    def __enter__(self):
        g = _graph_of(self._values or [])
        self._graph_ctx = g.as_default()
        self._graph_ctx.__enter__()
        self._ctx = g.name_scope(self._name)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        self._graph_ctx.__exit__(*exc)
        return False


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def add_to_collections(names, value):
    get_default_graph().add_to_collections(names, value)


def get_collection(key, scope=None):
    return get_default_graph().get_collection(key, scope)


def get_collection_ref(key):
    return get_default_graph().get_collection_ref(key)
