"""TensorFlow 1.x's sessions over weft._weft.Session: Session and InteractiveSession (context
manager, default session), run with nested fetches and feed_dict, ConfigProto and GPUOptions
turned into weft session options, RunOptions and RunMetadata (step stats, Chrome trace)."""
import collections
import json
import re

import numpy as np

from weft import _weft
from weft import errors
from . import dtypes as _dtypes
from . import framework as _fw


# ---------------------------------------------------------------------------------------------
# Configuration

class GPUOptions:
    def __init__(self, per_process_gpu_memory_fraction=0.0, allow_growth=False,
                 visible_device_list="", **unknown):
        _reject_unknown("GPUOptions", unknown)
        self.per_process_gpu_memory_fraction = per_process_gpu_memory_fraction
        self.allow_growth = allow_growth
        self.visible_device_list = visible_device_list


class GraphOptions:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


class ConfigProto:
    """The fields of TensorFlow's ConfigProto that weft honours; others are refused by name."""

    def __init__(self, log_device_placement=False, allow_soft_placement=False,
                 inter_op_parallelism_threads=0, intra_op_parallelism_threads=0,
                 use_per_session_threads=False, device_count=None, gpu_options=None,
                 device_filters=None, operation_timeout_in_ms=0, graph_options=None,
                 isolate_session_state=False, **unknown):
        _reject_unknown("ConfigProto", unknown)
        self.log_device_placement = log_device_placement
        self.allow_soft_placement = allow_soft_placement
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.use_per_session_threads = use_per_session_threads
        self.device_count = dict(device_count or {})
        self.gpu_options = gpu_options if gpu_options is not None else GPUOptions()
        self.device_filters = list(device_filters or [])
        self.operation_timeout_in_ms = operation_timeout_in_ms
        self.graph_options = graph_options
        self.isolate_session_state = isolate_session_state

    def _weft_options(self):
        """The dict _weft.Session takes (docs/python.md, "Session options")."""
        filters = list(self.device_filters)
        gpu = self.gpu_options
        opts = {
            "log_device_placement": int(bool(self.log_device_placement)),
            "allow_soft_placement": int(bool(self.allow_soft_placement)),
            "inter_op_threads": int(self.inter_op_parallelism_threads),
            "intra_op_threads": int(self.intra_op_parallelism_threads),
            "use_per_session_threads": int(bool(self.use_per_session_threads)),
            "gpu_allow_growth": int(bool(gpu.allow_growth)),
        }
        if gpu.per_process_gpu_memory_fraction:
            opts["gpu_memory_fraction"] = float(gpu.per_process_gpu_memory_fraction)
        if self.operation_timeout_in_ms:
            opts["operation_timeout_ms"] = int(self.operation_timeout_in_ms)
        if self.device_count:
            opts["device_count"] = {str(k): int(v) for k, v in self.device_count.items()}
        visible = str(gpu.visible_device_list or "")
        if visible:
            for v in visible.split(","):
                if not v.strip().isdigit():
                    raise ValueError("Could not parse entry in 'visible_device_list': '%s'. "
                                     "visible_device_list = %s" % (v, visible))
            opts["visible_gpus"] = visible
        if filters:
            opts["device_filters"] = filters
        return opts


def _reject_unknown(what, unknown):
    if unknown:
        raise ValueError("%s has no field %s that weft supports" % (what, sorted(unknown)[0]))


class RunOptions:
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    def __init__(self, trace_level=0, timeout_in_ms=0, **unknown):
        _reject_unknown("RunOptions", unknown)
        self.trace_level = trace_level
        self.timeout_in_ms = timeout_in_ms


NodeExecStats = collections.namedtuple(
    "NodeExecStats", ["node_name", "op", "all_start_micros", "op_start_rel_micros",
                      "op_end_rel_micros", "all_end_rel_micros", "thread_id", "timeline_label",
                      "output_bytes", "inputs"])


class DeviceStepStats:
    def __init__(self, device):
        self.device = device
        self.node_stats = []


class StepStats:
    def __init__(self):
        self.dev_stats = []


class RunMetadata:
    """Filled by Session.run(options=RunOptions(trace_level=FULL_TRACE)): step_stats per
    device, and chrome_trace, the step as Chrome trace JSON (weft_run_metadata_chrome_trace)."""

    def __init__(self):
        self.step_stats = StepStats()
        self.chrome_trace = ""
        self.partition_graphs = []

    def _fill(self, md):
        self.step_stats = StepStats()
        by_device = {}
        for s in md["step_stats"]:
            dev = by_device.get(s["device"])
            if dev is None:
                dev = by_device[s["device"]] = DeviceStepStats(s["device"])
                self.step_stats.dev_stats.append(dev)
            dev.node_stats.append(NodeExecStats(
                s["node_name"], s["op"], s["start_us"], 0, s["duration_us"], s["duration_us"],
                s["thread_id"], "%s = %s(%s)" % (s["node_name"], s["op"], s["inputs"]),
                s["output_bytes"], s["inputs"]))
        self.chrome_trace = md["chrome_trace"]

    def chrome_trace_events(self):
        return json.loads(self.chrome_trace) if self.chrome_trace else {}


# ---------------------------------------------------------------------------------------------
# Fetches

class _FetchPlan:
    """Flattens a nested fetch structure into tensor names and target op names, and rebuilds
    the structure from the values fetched."""

    def __init__(self, graph, fetches):
        self.graph = graph
        self.tensor_names = []
        self._tensor_index = {}
        self.target_names = []
        self.structure = self._plan(fetches)
        self.single = self.structure[0] == "tensor"

    def _plan(self, f):
        from .sparse import SparseTensor, SparseTensorValue
        from .variables import Variable
        if isinstance(f, SparseTensor):
            return ("namedtuple", SparseTensorValue,
                    [self._plan(x) for x in (f.indices, f.values, f.dense_shape)])
        if isinstance(f, (list, tuple)) and not isinstance(f, str):
            items = [self._plan(x) for x in f]
            if hasattr(f, "_fields"):  # namedtuple
                return ("namedtuple", type(f), items)
            return ("list" if isinstance(f, list) else "tuple", None, items)
        if isinstance(f, dict):
            return ("dict", type(f), [(k, self._plan(v)) for k, v in f.items()])
        if f is None:
            raise TypeError("Fetch argument None has invalid type <class 'NoneType'>")
        if isinstance(f, Variable):
            f = f._fetch_tensor()
        try:
            el = self.graph.as_graph_element(f, allow_tensor=True, allow_operation=True)
        except TypeError:
            raise TypeError("Fetch argument %r has invalid type %r, must be a string or Tensor. "
                            "(Can not convert a %s into a Tensor or Operation.)"
                            % (f, type(f), type(f).__name__)) from None
        except (KeyError, ValueError) as e:
            raise ValueError("Fetch argument %r cannot be interpreted as a Tensor. (%s)"
                             % (f, e.args[0] if e.args else e)) from None
        if isinstance(el, _fw.Operation):
            if el.name not in self.target_names:
                self.target_names.append(el.name)
            return ("op", None, None)
        name = el.name
        idx = self._tensor_index.get(name)
        if idx is None:
            idx = self._tensor_index[name] = len(self.tensor_names)
            self.tensor_names.append(name)
        return ("tensor", None, idx)

    def build(self, values, node=None):
        kind, typ, payload = node if node is not None else self.structure
        if kind == "tensor":
            return values[payload]
        if kind == "op":
            return None
        if kind == "list":
            return [self.build(values, x) for x in payload]
        if kind == "tuple":
            return tuple(self.build(values, x) for x in payload)
        if kind == "namedtuple":
            return typ(*[self.build(values, x) for x in payload])
        out = typ() if typ is not dict else {}
        for k, v in payload:
            out[k] = self.build(values, v)
        return out


def _feed_value(value):
    from .variables import Variable
    if isinstance(value, (_fw.Tensor, Variable)):
        raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable feed values "
                        "include Python scalars, strings, lists, numpy ndarrays, or "
                        "TensorHandles. For reference, the tensor object was %s which was passed "
                        "to the feed with key %s." % (value, "<key>"))
    return value


# ---------------------------------------------------------------------------------------------
# Sessions

_session_stack = _fw._ThreadStack()
_NO_FEEDS = []  # shared by runs without feeds; never modified


def get_default_session():
    return _session_stack.stack[-1] if _session_stack.stack else None


def _clear_default_session():
    del _session_stack.stack[:]


class _DefaultSession:
    def __init__(self, session):
        self._session = session

    def __enter__(self):
        _session_stack.stack.append(self._session)
        self._graph_ctx = self._session.graph.as_default()
        self._graph_ctx.__enter__()
        return self._session

    def __exit__(self, *exc):
        self._graph_ctx.__exit__(*exc)
        if _session_stack.stack and _session_stack.stack[-1] is self._session:
            _session_stack.stack.pop()
        return False


class BaseSession:
    def __init__(self, target="", graph=None, config=None):
        if graph is None:
            graph = _fw.get_default_graph()
        if not isinstance(graph, _fw.Graph):
            raise TypeError("graph must be a tf.Graph, but got %s" % type(graph))
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError("config must be a tf.ConfigProto, but got %s" % type(config))
        if not isinstance(target, (str, bytes)):
            raise TypeError("target must be a string, but got %s" % type(target))
        if isinstance(target, bytes):
            target = target.decode()
        self._graph = graph
        self._target = target
        self._config = config
        self._closed = False
        opts = config._weft_options() if config is not None else {}
        self._s = _weft.Session(graph._g, target or "", opts)
        self._default_ctx = None
        self._plans = {}
        self._fast = {}

    @property
    def graph(self):
        return self._graph

    @property
    def graph_def(self):
        return self._graph.as_graph_def()

    @property
    def sess_str(self):
        return self._target

    def as_default(self):
        return _DefaultSession(self)

    def close(self):
        if not self._closed:
            self._closed = True
            self._s.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- nothing to report to at collection time
            pass

    def list_devices(self):
        return [_DeviceAttributes(d) for d in _weft.devices()]

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        # The fast path: the same Tensor or Operation fetched again without feeds or options
        # (a training or serving loop) calls the step prepared for it (weft._weft.Step: names
        # converted once, no lists or tuples built per call); the cache entry keeps the object
        # alive, so its id stays its own.
        hit = self._fast.get(id(fetches))
        if hit is not None and hit[0] is fetches and not feed_dict and options is None \
                and not self._closed:
            try:
                return hit[1]()
            except errors.OpError as e:
                self._attach_op(e)
                raise
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        plan = self._plan(fetches)
        if isinstance(fetches, (_fw.Tensor, _fw.Operation)) and len(self._fast) < 256:
            self._fast[id(fetches)] = (
                fetches, self._s.prepare(plan.tensor_names, plan.target_names, plan.single))
        if feed_dict:
            feed_names, feed_values, feed_dtypes = self._feeds(feed_dict)
        else:
            feed_names = feed_values = feed_dtypes = _NO_FEEDS
        trace = timeout = 0
        if options is not None:
            trace = 1 if options.trace_level else 0
            timeout = int(options.timeout_in_ms or 0)
        try:
            values, md = self._s.run(feed_names, feed_values, plan.tensor_names,
                                     plan.target_names, trace, timeout, feed_dtypes)
        except errors.OpError as e:
            self._attach_op(e)
            raise
        if md is not None and run_metadata is not None:
            run_metadata._fill(md)
        if plan.single:
            return values[0]
        return plan.build(values)

    def _plan(self, fetches):
        """The fetch plan, cached for a Tensor, Operation or name and for flat lists and tuples
        of them: a training loop fetches the same things every step, and planning costs more
        than a small step (the cache keeps the fetched objects, so their ids stay theirs)."""
        if isinstance(fetches, (_fw.Tensor, _fw.Operation, str)):
            key = id(fetches)
            hit = self._plans.get(key)
            if hit is not None and hit[0][0] is fetches:
                return hit[1]
            items = (fetches,)
        elif type(fetches) in (list, tuple) and all(
                isinstance(f, (_fw.Tensor, _fw.Operation)) for f in fetches):
            key = (type(fetches),) + tuple(id(f) for f in fetches)
            items = tuple(fetches)
        else:
            return _FetchPlan(self._graph, fetches)
        hit = self._plans.get(key)
        if hit is not None and len(hit[0]) == len(items) and all(
                a is b for a, b in zip(hit[0], items)):
            return hit[1]
        plan = _FetchPlan(self._graph, fetches)
        if len(self._plans) > 256:
            self._plans.clear()
        self._plans[key] = (items, plan)
        return plan

    # "node 'X': ..." is how the core frames a kernel's error (a resource read's, for one)
    _NODE_IN_MESSAGE = re.compile(r"(?:^node|of node|placeholder tensor) '([^']+)'")

    def _attach_op(self, e):
        """Sets e.op to the Operation the core's message names, as TensorFlow's errors carry."""
        m = self._NODE_IN_MESSAGE.search(e.message or "")
        if e.op is None and m:
            try:
                e.op = self._graph.get_operation_by_name(m.group(1))
                e.node_def = e.op.node_def
            except KeyError:
                pass

    def _feeds(self, feed_dict):
        names, values, types = [], [], []
        if not feed_dict:
            return names, values, types
        from .variables import Variable
        for key, value in feed_dict.items():
            if isinstance(key, Variable):
                key = key._fetch_tensor()
            if isinstance(key, str):
                try:
                    key = self._graph.as_graph_element(key if ":" in key else key + ":0",
                                                       allow_tensor=True, allow_operation=False)
                except (KeyError, ValueError) as e:
                    raise ValueError("Cannot interpret feed_dict key as Tensor: %s"
                                     % (e.args[0] if e.args else e)) from None
            if not isinstance(key, _fw.Tensor):
                raise TypeError("The value of a feed cannot be a tf.Tensor object. Acceptable "
                                "feed values include Python scalars, strings, lists, numpy "
                                "ndarrays, or TensorHandles." if isinstance(value, _fw.Tensor)
                                else "Cannot interpret feed_dict key as Tensor: %r" % (key,))
            if key.graph is not self._graph:
                raise ValueError("Cannot interpret feed_dict key as Tensor: Tensor %s is not an "
                                 "element of this graph." % key.name)
            _feed_value(value)
            dt = key.dtype.base_dtype
            if dt == _dtypes.string:
                arr = np.asarray(value, dtype=object)
            else:
                arr = np.asarray(value)
                if arr.dtype.kind in "SUO":
                    raise ValueError("could not convert string to %s: feeding %r into %s"
                                     % (dt.name, value, key.name))
                if arr.dtype.kind == "f" and dt.is_integer and arr.size and \
                        not np.all(np.equal(np.mod(arr, 1), 0)):
                    raise ValueError("Cannot feed a float value into integer Tensor %s (%s)"
                                     % (key.name, dt.name))
            shape = key.shape
            if not shape.is_compatible_with(arr.shape):
                raise ValueError("Cannot feed value of shape %r for Tensor %r, which has shape %r"
                                 % (arr.shape, key.name, str(shape)))
            names.append(key.name)
            values.append(arr)
            types.append(dt.as_datatype_enum)
        return names, values, types

    def partial_run_setup(self, *args, **kwargs):
        raise NotImplementedError("partial_run is not supported by weft: run the whole step "
                                  "with Session.run")


class _DeviceAttributes:
    def __init__(self, d):
        self.name = d["name"]
        self.device_type = d["device_type"]
        self.memory_limit_bytes = d["memory_bytes"]


class Session(BaseSession):
    """tf.Session(target='', graph=None, config=None); `with` makes it the default session and
    its graph the default graph, and closes it at the end."""

    def __enter__(self):
        self._default_ctx = self.as_default()
        return self._default_ctx.__enter__()

    def __exit__(self, exc_type, exc, tb):
        ctx, self._default_ctx = self._default_ctx, None
        if ctx is not None:
            ctx.__exit__(exc_type, exc, tb)
        self.close()
        return False


class InteractiveSession(BaseSession):
    """A session that makes itself the default on construction (for shells and notebooks)."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        self._default_ctx = self.as_default()
        self._default_ctx.__enter__()

    def close(self):
        ctx, self._default_ctx = self._default_ctx, None
        if ctx is not None:
            ctx.__exit__(None, None, None)
        super().close()


def _run_using_default_session(fetch, feed_dict, graph, session):
    if session is None:
        session = get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                             "registered. Use `with sess.as_default()` or pass an explicit "
                             "session to `eval(session=sess)`" if isinstance(fetch, _fw.Tensor)
                             else "Cannot execute operation using `run()`: No default session "
                             "is registered. Use `with sess.as_default():` or pass an explicit "
                             "session to `run(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's graph is "
                         "different from the session's graph." if isinstance(fetch, _fw.Tensor)
                         else "Cannot use the given session to execute operation: the "
                         "operation's graph is different from the session's graph.")
    return session.run(fetch, feed_dict)


__all__ = ["Session", "InteractiveSession", "ConfigProto", "GPUOptions", "RunOptions",
           "RunMetadata", "get_default_session", "errors"]
