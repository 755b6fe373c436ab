"""TensorFlow 1.x's variables: Variable (VariableV2 + Assign initializer + "read" snapshot, as
TensorFlow builds them), get_variable with variable_scope (reuse, AUTO_REUSE, nesting,
default initializers), the initializers, and the variable collections and their initializer
ops."""
import contextlib
import math

import numpy as np

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from .framework import GraphKeys, Tensor


def _checked_collections(initial_value, variable_def, collections, trainable):
    """The constructor's argument checks (ref and resource alike); the collections to join."""
    if variable_def is not None:
        raise NotImplementedError("Variable(variable_def=...) is not supported by weft: "
                                  "import the graph and use tf.get_variable with reuse")
    if initial_value is None:
        raise ValueError("initial_value must be specified.")
    if collections is None:
        collections = [GraphKeys.GLOBAL_VARIABLES]
    if not isinstance(collections, (list, tuple, set)):
        raise ValueError("collections argument to Variable constructor must be a list, tuple, "
                         "or set. Got %s of type %s" % (collections, type(collections)))
    collections = list(collections)
    if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
        collections.append(GraphKeys.TRAINABLE_VARIABLES)
    return collections


def _scope_values(initial_value):
    return [] if callable(initial_value) else [initial_value]


def _initial_value_tensor(g, initial_value, dtype):
    """The initial value as a tensor; a callable's ops go under "Initializer", on no device."""
    if callable(initial_value):
        with _fw.name_scope("Initializer"), g.device(None):
            return _fw.convert_to_tensor(initial_value(), name="initial_value", dtype=dtype)
    return _fw.convert_to_tensor(initial_value, name="initial_value", dtype=dtype)


def _use_resource(use_resource):
    """TensorFlow's default_variable_creator rule: the argument, else the variable scope's,
    else tf.enable_resource_variables()'s default."""
    from . import resource_variable_ops as _rvo
    if use_resource is None:
        use_resource = get_variable_scope().use_resource
    if use_resource is None:
        use_resource = _rvo.resource_variables_enabled()
    return bool(use_resource)


class Variable:
    """tf.Variable (a reference variable; a ResourceVariable with use_resource=True, inside a
    variable_scope(use_resource=True) or after tf.enable_resource_variables())."""

    def __new__(cls, *args, **kwargs):
        if cls is Variable and _use_resource(kwargs.get("use_resource")):
            from .resource_variable_ops import ResourceVariable
            cls = ResourceVariable
        return super().__new__(cls)

    def __init__(self, initial_value=None, trainable=True, collections=None, validate_shape=True,
                 caching_device=None, name=None, variable_def=None, dtype=None,
                 expected_shape=None, import_scope=None, constraint=None, use_resource=None,
                 synchronization=None, aggregation=None, shape=None):
        collections = _checked_collections(initial_value, variable_def, collections, trainable)
        g = _fw.get_default_graph()
        with g._outside_control_flow(), \
                _fw.name_scope(name, "Variable", _scope_values(initial_value)) as scope:
            value = _initial_value_tensor(g, initial_value, dtype)
            shape = value.shape if shape is None else _fw.as_shape(shape)
            if validate_shape and not shape.is_fully_defined():
                raise ValueError("initial_value must have a shape specified: %s" % value)
            vdtype = value.dtype.base_dtype
            self._variable_op = g._create_op(
                "VariableV2", [], [("shape", "shape", shape.as_list() if shape.ndims is not None
                                    else None),
                                   ("dtype", "type", vdtype.as_datatype_enum),
                                   ("container", "string", ""), ("shared_name", "string", "")],
                scope)
            self._variable = self._variable_op.outputs[0]
            self._variable._dtype = vdtype._as_ref
            with g.colocate_with(self._variable_op):
                self._initializer_op = g._create_op(
                    "Assign", [self._variable, value],
                    [("validate_shape", "bool", bool(validate_shape)),
                     ("use_locking", "bool", True)], "Assign")
                self._snapshot = g._create_op("Identity", [self._variable], (), "read").outputs[0]
        self._initial_value = value
        self._trainable = trainable
        self._dtype = vdtype
        self._graph = g
        self._save_slice_info = None
        g.add_to_collections(collections, self)

    # identity
    @property
    def name(self):
        return self._variable.name

    @property
    def op(self):
        return self._variable_op

    @property
    def graph(self):
        return self._graph

    @property
    def dtype(self):
        return self._dtype._as_ref

    @property
    def device(self):
        return self._variable_op.device

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self.shape

    @property
    def trainable(self):
        return self._trainable

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    def value(self):
        return self._snapshot

    def _ref(self):
        return self._variable

    def read_value(self):
        return _ops.identity(self._variable, name="read")

    def _as_graph_tensor(self):
        return self._snapshot

    def _fetch_tensor(self):
        """The tensor a session fetches or feeds for this variable."""
        return self._snapshot

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    def initialized_value(self):
        with _fw.control_dependencies(None):
            return _ops.identity(self._initial_value)

    def load(self, value, session=None):
        from . import session as _session
        s = session or _session.get_default_session()
        if s is None:
            raise ValueError("Either session argument should be provided or default session "
                             "should be established")
        s.run(self._initializer_op, {self._initializer_op.inputs[1]: value})

    # updates
    def _update(self, op_type, value, use_locking, name, read_value):
        value = _ops._to_tensor(value, dtype=self._dtype)
        op = self._graph._create_op(op_type, [self._variable, value],
                                    [("use_locking", "bool", bool(use_locking))],
                                    name or op_type)
        return op.outputs[0] if read_value else op

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._update("Assign", value, use_locking, name, read_value)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return self._update("AssignAdd", delta, use_locking, name, read_value)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return self._update("AssignSub", delta, use_locking, name, read_value)

    def __repr__(self):
        return "<tf.Variable '%s' shape=%s dtype=%s>" % (self.name, self.shape, self.dtype.name)

    # a Variable is used as its value in expressions
    def __getitem__(self, key):
        return self._snapshot[key]

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __iter__(self):
        return iter(self._snapshot)


def _install_variable_operators():
    for nm in ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lt", "le",
               "gt", "ge", "and", "or", "xor", "radd", "rsub", "rmul", "rtruediv", "rfloordiv",
               "rmod", "rpow", "rmatmul", "rand", "ror"]:
        meth = getattr(Tensor, "__%s__" % nm)
        setattr(Variable, "__%s__" % nm,
                (lambda m: lambda self, other: m(self._snapshot, other))(meth))
    for nm in ["neg", "abs", "invert"]:
        meth = getattr(Tensor, "__%s__" % nm)
        setattr(Variable, "__%s__" % nm, (lambda m: lambda self: m(self._snapshot))(meth))


_install_variable_operators()
_fw.register_tensor_conversion_function(
    Variable, lambda v, dtype=None, name=None: _ops._to_tensor(v._snapshot, dtype=dtype))

RefVariable = Variable


# ---------------------------------------------------------------------------------------------
# Collections and initializer ops

def global_variables(scope=None):
    return _fw.get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


all_variables = global_variables


def trainable_variables(scope=None):
    return _fw.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def local_variables(scope=None):
    return _fw.get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def model_variables(scope=None):
    return _fw.get_collection(GraphKeys.MODEL_VARIABLES, scope)


def moving_average_variables(scope=None):
    return _fw.get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    if var_list:
        return _ops.group(*[v.initializer for v in var_list], name=name)
    return _ops.no_op(name=name)


initialize_variables = variables_initializer


def global_variables_initializer():
    return variables_initializer(global_variables())


initialize_all_variables = global_variables_initializer


def local_variables_initializer():
    return variables_initializer(local_variables())


initialize_local_variables = local_variables_initializer


def is_variable_initialized(variable):
    if hasattr(variable, "is_initialized"):
        return variable.is_initialized()
    return _fw._run_op("IsVariableInitialized", [variable._ref()],
                       [("dtype", "type", variable._dtype.as_datatype_enum)])


# ---------------------------------------------------------------------------------------------
# Initializers

def _fans(shape):
    if len(shape) < 1:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    def get_config(self):
        return {}


class zeros_initializer(Initializer):
    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.zeros(shape, dtype or self.dtype)


class ones_initializer(Initializer):
    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.ones(shape, dtype or self.dtype)


class constant_initializer(Initializer):
    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        self.value = value
        self.dtype = _dtypes.as_dtype(dtype)
        self.verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None):
        return _fw.constant(self.value, dtype=dtype or self.dtype, shape=shape,
                            verify_shape=self.verify_shape)


class random_normal_initializer(Initializer):
    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        self.mean, self.stddev, self.seed, self.dtype = mean, stddev, seed, _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.random_normal(shape, self.mean, self.stddev, dtype or self.dtype, self.seed)


class truncated_normal_initializer(random_normal_initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.truncated_normal(shape, self.mean, self.stddev, dtype or self.dtype,
                                     self.seed)


class random_uniform_initializer(Initializer):
    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        self.minval, self.maxval, self.seed = minval, maxval, seed
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        return _ops.random_uniform(shape, self.minval, self.maxval, dtype or self.dtype,
                                   self.seed)


class variance_scaling_initializer(Initializer):
    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 dtype=_dtypes.float32):
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError("Invalid `mode` argument: %s" % mode)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed
        self.dtype = _dtypes.as_dtype(dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = dtype or self.dtype
        fan_in, fan_out = _fans(list(shape))
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            return _ops.truncated_normal(shape, 0.0, math.sqrt(scale) / .87962566103423978,
                                         dtype, self.seed)
        if self.distribution == "untruncated_normal":
            return _ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, self.seed)
        limit = math.sqrt(3.0 * scale)
        return _ops.random_uniform(shape, -limit, limit, dtype, self.seed)


class glorot_uniform_initializer(variance_scaling_initializer):
    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):
    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)



class orthogonal_initializer(Initializer):
    """tf.orthogonal_initializer: the Q of a random normal matrix's QR (its columns' signs fixed
    by R's diagonal), of shape [prod(shape[:-1]), shape[-1]] (transposed when wider than tall)
    and reshaped, times gain, as TensorFlow's Orthogonal builds it."""

    def __init__(self, gain=1.0, seed=None, dtype=_dtypes.float32):
        self.gain, self.seed = gain, seed
        self.dtype = _dtypes.as_dtype(dtype)
        if not self.dtype.is_floating:
            raise ValueError("Expected floating point type, got %s." % self.dtype)

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = _dtypes.as_dtype(dtype or self.dtype)
        shape = list(shape)
        if len(shape) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional")
        num_rows = 1
        for dim in shape[:-1]:
            num_rows *= dim
        num_cols = shape[-1]
        flat_shape = (num_cols, num_rows) if num_rows < num_cols else (num_rows, num_cols)
        a = _ops.random_normal(flat_shape, dtype=dtype, seed=self.seed)
        q, r = _ops._op("Qr", [a], [("full_matrices", "bool", False)], "Qr")
        d = _ops._op("MatrixDiagPart", [r], (), "MatrixDiagPart")
        q = _ops.multiply(q, _ops.sign(d))
        if num_rows < num_cols:
            q = _ops.transpose(q, [1, 0], name="matrix_transpose")
        return _ops.multiply(_ops._to_tensor(self.gain, dtype=dtype), _ops.reshape(q, shape))

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}

# ---------------------------------------------------------------------------------------------
# variable_scope and get_variable

class _ReuseMode:
    def __repr__(self):
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode()


class VariableScope:
    def __init__(self, reuse, name="", initializer=None, regularizer=None, caching_device=None,
                 partitioner=None, custom_getter=None, name_scope="", dtype=_dtypes.float32,
                 use_resource=None, constraint=None):
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._name_scope = name_scope
        self._dtype = dtype
        self._custom_getter = custom_getter
        self._use_resource = use_resource

    @property
    def name(self):
        return self._name

    @property
    def original_name_scope(self):
        return self._name_scope

    @property
    def reuse(self):
        return self._reuse

    @property
    def initializer(self):
        return self._initializer

    @property
    def dtype(self):
        return self._dtype

    @property
    def use_resource(self):
        return self._use_resource

    def set_use_resource(self, use_resource):
        self._use_resource = use_resource

    def reuse_variables(self):
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def get_variable(self, name, shape=None, dtype=None, initializer=None, regularizer=None,
                     trainable=None, collections=None, **kwargs):
        full = self._name + "/" + name if self._name else name
        if initializer is None:
            initializer = self._initializer
        if kwargs.get("use_resource") is None:
            kwargs["use_resource"] = self._use_resource
        return _store().get_variable(full, shape, dtype or self._dtype, initializer, self._reuse,
                                     trainable, collections, regularizer or self._regularizer,
                                     **kwargs)


class _VariableStore:
    def __init__(self):
        self.vars = {}
        self.scope_counts = {}

    def get_variable(self, name, shape, dtype, initializer, reuse, trainable, collections,
                     regularizer=None, validate_shape=True, use_resource=None, constraint=None,
                     partitioner=None, caching_device=None, custom_getter=None,
                     synchronization=None, aggregation=None, **unknown):
        if unknown:
            raise TypeError("get_variable() got an unexpected keyword argument '%s'"
                            % sorted(unknown)[0])
        if partitioner is not None:
            raise NotImplementedError("partitioned variables are not supported by weft: drop "
                                      "partitioner= (a replica device setter spreads whole "
                                      "variables over ps tasks)")
        dtype = _dtypes.as_dtype(dtype).base_dtype
        if name in self.vars:
            if reuse is False or reuse is None:
                raise ValueError("Variable %s already exists, disallowed. Did you mean to set "
                                 "reuse=True or reuse=tf.AUTO_REUSE in VarScope?" % name)
            v = self.vars[name]
            if shape is not None and not v.shape.is_compatible_with(shape):
                raise ValueError("Trying to share variable %s, but specified shape %s and found "
                                 "shape %s." % (name, _fw.as_shape(shape), v.shape))
            if dtype != v._dtype:
                raise ValueError("Trying to share variable %s, but specified dtype %s and found "
                                 "dtype %s." % (name, dtype.name, v._dtype.name))
            return v
        if reuse is True:
            raise ValueError("Variable %s does not exist, or was not created with "
                             "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                             "VarScope?" % name)
        if initializer is None:
            if dtype.is_floating:
                initializer = glorot_uniform_initializer()
            elif dtype.is_integer or dtype.is_bool or dtype == _dtypes.string:
                initializer = zeros_initializer()
            else:
                raise ValueError("An initializer for variable %s of %s is required"
                                 % (name, dtype.name))
        if isinstance(initializer, type) and issubclass(initializer, Initializer):
            initializer = initializer(dtype=dtype)
        if callable(initializer) and not isinstance(initializer, Tensor):
            if shape is None:
                raise ValueError("Shape of a new variable (%s) must be fully defined, but "
                                 "instead was %s." % (name, None))
            shp = _fw.as_shape(shape)
            if not shp.is_fully_defined():
                raise ValueError("Shape of a new variable (%s) must be fully defined, but "
                                 "instead was %s." % (name, shp))

            def init_val():
                return initializer(shp.as_list(), dtype=dtype)
            init = init_val
            vshape = None
        else:
            init = initializer
            vshape = None if shape is None else shape
            if shape is not None and isinstance(initializer, Tensor):
                raise ValueError("If initializer is a constant, do not specify shape.")
        g = _fw.get_default_graph()
        # the variable's full name is its scope's: make the ops' names absolute
        with g.name_scope(None):
            v = Variable(init, trainable=True if trainable is None else trainable,
                         collections=collections, validate_shape=validate_shape,
                         name=name, dtype=dtype, shape=vshape, use_resource=use_resource)
        if v.op.name != name:
            raise ValueError("Variable %s was created as %s: the name is taken by another op"
                             % (name, v.op.name))
        self.vars[name] = v
        if regularizer is not None:
            with g.name_scope(name + "/Regularizer/"):
                loss = regularizer(v)
            if loss is not None:
                g.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
        return v


def _store():
    g = _fw.get_default_graph()
    if g._variable_scope_store is None:
        g._variable_scope_store = _VariableStore()
        g._variable_scope_stack = [VariableScope(False)]
    return g._variable_scope_store


def get_variable_scope():
    _store()
    return _fw.get_default_graph()._variable_scope_stack[-1]


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    scope = get_variable_scope()
    return scope.get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                              regularizer=regularizer, trainable=trainable,
                              collections=collections, partitioner=partitioner,
                              validate_shape=validate_shape, use_resource=use_resource)


def get_local_variable(name, shape=None, dtype=None, initializer=None, **kwargs):
    collections = list(kwargs.pop("collections", None) or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, trainable=False,
                        collections=collections, **kwargs)


@contextlib.contextmanager
def variable_scope(name_or_scope, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None, custom_getter=None,
                   reuse=None, dtype=None, use_resource=None, constraint=None,
                   auxiliary_name_scope=True):
    """tf.variable_scope: names variables "outer/inner/v" and opens a name scope beside it;
    reuse True / AUTO_REUSE (inherited by inner scopes) shares variables by full name."""
    if name_or_scope is None and default_name is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    _store()
    g = _fw.get_default_graph()
    stack = g._variable_scope_stack
    parent = stack[-1]
    store = g._variable_scope_store
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        name_scope_name = name_or_scope.original_name_scope
        base_init = name_or_scope.initializer
        base_reuse = name_or_scope.reuse
    else:
        if name_or_scope is None:
            prefix = parent.name + "/" if parent.name else ""
            base = default_name
            key = prefix + base
            n = store.scope_counts.get(key, 0)
            store.scope_counts[key] = n + 1
            name_or_scope = base if n == 0 else "%s_%d" % (base, n)
        full = parent.name + "/" + name_or_scope if parent.name else name_or_scope
        name_scope_name = None
        base_init = parent.initializer
        base_reuse = parent.reuse
    if reuse is None or reuse is False:
        new_reuse = True if base_reuse is True else (AUTO_REUSE if base_reuse is AUTO_REUSE
                                                     else False)
    else:
        new_reuse = reuse
    if use_resource is None:
        use_resource = (name_or_scope.use_resource if isinstance(name_or_scope, VariableScope)
                        else parent.use_resource)
    scope = VariableScope(new_reuse, full, initializer or base_init, regularizer,
                          dtype=dtype or parent.dtype, use_resource=use_resource)
    ctx = None
    if auxiliary_name_scope:
        if name_scope_name:
            ctx = g.name_scope(name_scope_name)
        else:
            ctx = g.name_scope(full.rsplit("/", 1)[-1])
    stack.append(scope)
    try:
        if ctx is not None:
            with ctx as ns:
                scope._name_scope = ns
                yield scope
        else:
            yield scope
    finally:
        stack.pop()


def variable_op_scope(values, name_or_scope, default_name=None, **kwargs):
    return variable_scope(name_or_scope, default_name=default_name, values=values, **kwargs)
