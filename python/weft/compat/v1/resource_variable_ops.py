"""TensorFlow 1.x's resource variables (tensorflow/python/ops/resource_variable_ops.py) in graph
mode: a VarHandleOp handle (shared_name = its name), an AssignVariableOp initializer, a fresh
ReadVariableOp per value() so reads order by control dependencies, the Assign*VariableOp
updates, ResourceGather and ResourceScatter*; plus IndexedSlices, which scatter_* take."""
from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from . import variables as _vars
from .variables import Variable

_DEFAULT_USE_RESOURCE = False


def enable_resource_variables():
    """tf.Variable and get_variable build resource variables unless told otherwise."""
    global _DEFAULT_USE_RESOURCE
    _DEFAULT_USE_RESOURCE = True


def disable_resource_variables():
    global _DEFAULT_USE_RESOURCE
    _DEFAULT_USE_RESOURCE = False


def resource_variables_enabled():
    return _DEFAULT_USE_RESOURCE


class IndexedSlices:
    """tf.IndexedSlices: rows `values` of a tensor at `indices` (what scatter_* apply)."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = _ops._to_tensor(values)
        self._indices = _ops._to_tensor(indices)
        self._dense_shape = None if dense_shape is None else _ops._to_tensor(dense_shape)

    @property
    def values(self):
        return self._values

    @property
    def indices(self):
        return self._indices

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self):
        return self._values.graph

    def __repr__(self):
        return "IndexedSlices(indices=%s, values=%s%s)" % (
            self._indices, self._values,
            "" if self._dense_shape is None else ", dense_shape=%s" % self._dense_shape)


class ResourceVariable(Variable):
    """A variable held in the session's resource manager and reached through its handle, as
    TensorFlow's ResourceVariable in graph mode. It is a Variable (isinstance holds), so
    optimizers, Saver, collections and tf.gradients take it as they take a ref variable."""

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        collections = _vars._checked_collections(initial_value, variable_def, collections,
                                                  trainable)
        g = _fw.get_default_graph()
        with g._outside_control_flow(), \
                _fw.name_scope(name, "Variable", _vars._scope_values(initial_value)) as scope:
            handle_name = scope[:-1]
            value = _vars._initial_value_tensor(g, initial_value, dtype)
            vshape = value.shape if shape is None else _fw.as_shape(shape)
            if validate_shape and not vshape.is_fully_defined():
                raise ValueError("initial_value must have a shape specified: %s" % value)
            vdtype = value.dtype.base_dtype
            self._handle_op = g._create_op(
                "VarHandleOp", [],
                [("shape", "shape", vshape.as_list() if vshape.ndims is not None else None),
                 ("dtype", "type", vdtype.as_datatype_enum),
                 ("container", "string", ""), ("shared_name", "string", handle_name)], scope)
            self._handle = self._handle_op.outputs[0]
            self._handle._dtype = _dtypes.resource
            self._dtype = vdtype
            self._graph = g
            with g.colocate_with(self._handle_op):
                with _fw.name_scope("IsInitialized"):
                    self._is_initialized_op = g._create_op(
                        "VarIsInitializedOp", [self._handle], (),
                        "VarIsInitializedOp").outputs[0]
                with _fw.name_scope("Assign"):
                    self._initializer_op = g._create_op(
                        "AssignVariableOp", [self._handle, value],
                        [("dtype", "type", vdtype.as_datatype_enum)], "AssignVariableOp")
                with _fw.name_scope("Read"):
                    self._read_element = self._read("ReadVariableOp")
        self._vshape = vshape
        self._initial_value = value
        self._trainable = trainable
        self._save_slice_info = None
        g.add_to_collections(collections, self)

    def _read(self, name):
        return self._graph._create_op("ReadVariableOp", [self._handle],
                                      [("dtype", "type", self._dtype.as_datatype_enum)],
                                      name).outputs[0]

    # identity: the handle names the variable (its op, "v:0"), the dtype is the value's
    @property
    def name(self):
        return self._handle.name

    @property
    def handle(self):
        return self._handle

    @property
    def op(self):
        return self._handle_op

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._handle_op.device

    @property
    def shape(self):
        return self._vshape

    @property
    def create(self):
        return self._initializer_op

    def _ref(self):
        # what tf.gradients differentiates and the ResourceApply* ops update: the handle
        return self._handle

    # reads: each is a new ReadVariableOp, seeing the updates its control dependencies order
    @property
    def _snapshot(self):
        return self.value()

    def value(self):
        with self._graph.colocate_with(self._handle_op):
            return self._read("ReadVariableOp")

    def read_value(self):
        with _fw.name_scope("Read"):
            v = self.value()
        return _ops.identity(v)

    def _as_graph_tensor(self):
        return self.value()

    def _fetch_tensor(self):
        # fetching or feeding the variable uses the read built with it, as TF's _graph_element
        return self._read_element

    def eval(self, session=None):
        return self._read_element.eval(session=session)

    def is_initialized(self, name=None):
        return self._graph._create_op("VarIsInitializedOp", [self._handle], (),
                                      name or "VarIsInitializedOp").outputs[0]

    def sparse_read(self, indices, name=None):
        """The rows `indices` of the value (ResourceGather; its gradient reaches the handle)."""
        with _fw.name_scope("Gather" if name is None else name) as scope:
            return self._graph._create_op(
                "ResourceGather", [self._handle, _ops._to_tensor(indices)],
                [("dtype", "type", self._dtype.as_datatype_enum), ("batch_dims", "int", 0),
                 ("validate_indices", "bool", True)], scope).outputs[0]

    def gather_nd(self, indices, name=None):
        raise NotImplementedError("ResourceVariable.gather_nd is not supported by weft (no "
                                  "ResourceGatherNd kernel): use tf.gather_nd(v.value(), ...)")

    # updates: the op, or with read_value a read ordered after it (TF's lazy read)
    def _update(self, op_type, value, use_locking, name, read_value):
        value = _ops._to_tensor(value, dtype=self._dtype)
        if not self._vshape.is_compatible_with(value.shape):
            raise ValueError("Shapes %s and %s are incompatible" % (self._vshape, value.shape))
        op = self._graph._create_op(op_type + "VariableOp", [self._handle, value],
                                    [("dtype", "type", self._dtype.as_datatype_enum)],
                                    name or op_type + "VariableOp")
        if not read_value:
            return op
        with _fw.control_dependencies([op]):
            return self.value()

    def _scatter(self, op_type, sparse_delta, use_locking, name):
        if not isinstance(sparse_delta, IndexedSlices):
            raise TypeError("sparse_delta is not IndexedSlices: %s" % (sparse_delta,))
        values = _ops._to_tensor(sparse_delta.values, dtype=self._dtype)
        op = self._graph._create_op(op_type, [self._handle, sparse_delta.indices, values],
                                    [("dtype", "type", self._dtype.as_datatype_enum)],
                                    name or op_type)
        with _fw.control_dependencies([op]):
            return self.value()

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s>" % (self.name, self.shape, self._dtype.name)


_SCATTERS = ("add", "sub", "mul", "div", "min", "max", "update")


def _install_scatter_methods():
    # v.scatter_add(IndexedSlices) ... v.scatter_update: ResourceScatterAdd ... Update
    for kind in _SCATTERS:
        op_type = "ResourceScatter" + kind.capitalize()
        setattr(ResourceVariable, "scatter_" + kind,
                (lambda t: lambda self, sparse_delta, use_locking=False, name=None:
                 self._scatter(t, sparse_delta, use_locking, name))(op_type))


_install_scatter_methods()


def is_resource_variable(var):
    return isinstance(var, ResourceVariable)


def _scatter_fn(method):
    def fn(ref, indices, updates, use_locking=False, name=None):
        """tf.scatter_*: on a resource variable, its scatter_* with IndexedSlices."""
        if not isinstance(ref, ResourceVariable):
            raise NotImplementedError("tf.%s of a ref variable is not supported by weft: create "
                                      "the variable with use_resource=True" % method)
        return getattr(ref, method)(IndexedSlices(updates, indices), use_locking, name)
    fn.__name__ = method
    return fn


scatter_add = _scatter_fn("scatter_add")
scatter_sub = _scatter_fn("scatter_sub")
scatter_mul = _scatter_fn("scatter_mul")
scatter_div = _scatter_fn("scatter_div")
scatter_min = _scatter_fn("scatter_min")
scatter_max = _scatter_fn("scatter_max")
scatter_update = _scatter_fn("scatter_update")
