"""tf.make_template: a function whose variables (made by tf.get_variable) are created on its
first call, under a variable scope unique to the template, and shared by its later calls, as
TensorFlow 1.15's template.py does."""
import functools

from . import framework as _fw
from . import variables as _vars
from .framework import GraphKeys


class Template:
    def __init__(self, name, func, create_scope_now=False, unique_name=None,
                 custom_getter=None):
        if name is None:
            raise ValueError("name cannot be None.")
        if custom_getter is not None:
            raise NotImplementedError("make_template(custom_getter_=) is not supported by weft: "
                                      "weft's variable_scope has no custom getters")
        self._func = func
        self._name = name
        self._unique_name = unique_name
        self._variable_scope = None
        if create_scope_now:
            with _vars.variable_scope(unique_name, default_name=None if unique_name else name,
                                      auxiliary_name_scope=False) as vs:
                self._variable_scope = vs
        self._variables_created = False
        self._first_call = True

    def _call_func(self, args, kwargs):
        trainable_at_start = len(_fw.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            trainable_variables = _fw.get_collection(GraphKeys.TRAINABLE_VARIABLES)
            if trainable_at_start != len(trainable_variables):
                raise ValueError("Trainable variable created when calling a template after the "
                                 "first time, perhaps you used tf.Variable when you meant "
                                 "tf.get_variable: %s"
                                 % (trainable_variables[trainable_at_start:],))
        else:
            self._first_call = False
        self._variables_created = True
        return result

    def __call__(self, *args, **kwargs):
        if self._variable_scope is not None:
            with _vars.variable_scope(self._variable_scope, reuse=not self._first_call):
                return self._call_func(args, kwargs)
        with _vars.variable_scope(self._unique_name, self._name) as vs:
            self._variable_scope = vs
            return self._call_func(args, kwargs)

    @property
    def name(self):
        return self._name

    @property
    def func(self):
        return self._func

    @property
    def variable_scope(self):
        return self._variable_scope

    @property
    def variable_scope_name(self):
        if self._variable_scope is None:
            return None
        name = self._variable_scope.name
        return name if not name or name.endswith("/") else name + "/"

    def _collection(self, key):
        prefix = self.variable_scope_name
        if prefix is None:
            return []
        return [v for v in _fw.get_collection(key) if v.op.name.startswith(prefix)]

    @property
    def variables(self):
        return self.global_variables + self.local_variables

    @property
    def trainable_variables(self):
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self):
        trainable = set(map(id, self.trainable_variables))
        return [v for v in self.global_variables if id(v) not in trainable]

    @property
    def global_variables(self):
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self):
        return self._collection(GraphKeys.LOCAL_VARIABLES)

    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables
    weights = variables


def make_template(name_, func_, create_scope_now_=False, unique_name_=None,
                  custom_getter_=None, **kwargs):
    """func_ (with kwargs bound) as a Template named name_."""
    if kwargs:
        func_ = functools.wraps(func_)(functools.partial(func_, **kwargs))
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_,
                    custom_getter=custom_getter_)
