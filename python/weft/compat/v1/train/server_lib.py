"""tf.train.ClusterSpec, tf.train.Server (a task's server inside this Python process, through
weft_server_*) and tf.train.replica_device_setter, with TensorFlow's semantics and messages."""
import atexit

from weft import _weft
from .. import framework as _fw

_STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                    "MutableHashTableV2", "MutableHashTableOfTensors",
                    "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                    "MutableDenseHashTableV2", "VarHandleOp",
                    "BoostedTreesEnsembleResourceHandleOp",
                    "BoostedTreesQuantileStreamResourceHandleOp")


class ClusterSpec:
    """Jobs -> tasks -> "host:port", from a dict of lists or of {task_index: address}."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._spec = {j: dict(t) for j, t in cluster._spec.items()}
            return
        if not isinstance(cluster, dict):
            raise TypeError("`cluster` must be a dictionary mapping one or more job names to "
                            "lists of network addresses, or a `ClusterDef` protocol buffer")
        self._spec = {}
        for job, tasks in cluster.items():
            if isinstance(tasks, (list, tuple)):
                self._spec[job] = {i: a for i, a in enumerate(tasks)}
            elif isinstance(tasks, dict):
                for i in tasks:
                    if not isinstance(i, int) or isinstance(i, bool):
                        raise TypeError("Task index must be an integer: %r" % (i,))
                self._spec[job] = dict(tasks)
            else:
                raise TypeError("The tasks for job %r must be a list or a dictionary from "
                                "integers to strings." % job)

    def __bool__(self):
        return bool(self._spec)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._spec == other._spec

    def __ne__(self, other):
        return not self == other

    def __repr__(self):
        return "ClusterSpec(%r)" % self.as_dict()

    def as_dict(self):
        out = {}
        for job, tasks in self._spec.items():
            if sorted(tasks) == list(range(len(tasks))):
                out[job] = [tasks[i] for i in range(len(tasks))]
            else:
                out[job] = dict(tasks)
        return out

    @property
    def jobs(self):
        return list(self._spec)

    def _job(self, job_name):
        try:
            return self._spec[job_name]
        except KeyError:
            raise ValueError("No such job in cluster: %r" % job_name) from None

    def num_tasks(self, job_name):
        return len(self._job(job_name))

    def task_indices(self, job_name):
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        job = self._job(job_name)
        try:
            return job[task_index]
        except KeyError:
            raise ValueError("No task with index %r in job %r" % (task_index, job_name)) from None

    def job_tasks(self, job_name):
        job = self._job(job_name)
        out = [None] * (max(job) + 1 if job else 0)
        for i, a in job.items():
            out[i] = a
        return out

    def _weft_text(self):
        """weft_cluster_spec_parse's form: "ps=h:p,h:p;worker=h:p"."""
        parts = []
        for job, tasks in self._spec.items():
            if sorted(tasks) != list(range(len(tasks))):
                raise NotImplementedError("job %r has task indices %s: weft's servers need tasks "
                                          "0..n-1 (list the addresses of every task)"
                                          % (job, sorted(tasks)))
            parts.append("%s=%s" % (job, ",".join(tasks[i] for i in range(len(tasks)))))
        return ";".join(parts)


# Every server this process starts, kept until exit: TensorFlow's tf.train.Server keeps serving
# after its Python object is collected (programs make one in a function and drop it). At exit
# they stop, so their threads end before the interpreter does.
_SERVERS = []


def _servers_stop_at_exit():
    while _SERVERS:
        _SERVERS.pop().stop()


atexit.register(_servers_stop_at_exit)


class Server:
    """tf.train.Server(server_or_cluster_def, job_name, task_index, protocol, config, start):
    the master and worker services of one task, served by this process until it exits (also
    after this object is collected, as in TensorFlow)."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start=True):
        if protocol not in (None, "grpc"):
            raise ValueError("weft serves only the grpc protocol, not %r" % (protocol,))
        spec = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(spec.jobs) == 1:
                job_name = spec.jobs[0]
            else:
                raise ValueError("Must specify an explicit `job_name`.")
        if task_index is None:
            indices = spec.task_indices(job_name)
            if len(indices) == 1:
                task_index = indices[0]
            else:
                raise ValueError("Must specify an explicit `task_index`.")
        self._cluster_spec = spec
        self._job_name = job_name
        self._task_index = task_index
        self._config = config
        self._server = _weft.Server(spec._weft_text(), job_name, int(task_index), bool(start))
        _SERVERS.append(self._server)

    @staticmethod
    def create_local_server(config=None, start=True):
        self = Server.__new__(Server)
        self._server = _weft.Server(None, start=bool(start))
        _SERVERS.append(self._server)
        address = self._server.target[len("grpc://"):]
        self._cluster_spec = ClusterSpec({"local": [address]})
        self._job_name, self._task_index, self._config = "local", 0, config
        return self

    @property
    def target(self):
        return self._server.target

    @property
    def server_def(self):
        raise NotImplementedError("Server.server_def is not supported by weft: use "
                                  "server.target and the ClusterSpec")

    def start(self):
        self._server.start()

    def join(self):
        self._server.join()

    def stop(self):
        self._server.stop()


# ---------------------------------------------------------------------------------------------
# replica_device_setter

_FIELDS = ("job", "replica", "task", "device")


def _parse_device(s):
    """"/job:ps/task:0/device:CPU:0" -> {"job": "ps", "task": "0", "device": "CPU:0"}."""
    out = {}
    for part in (s or "").split("/"):
        if not part:
            continue
        key, _, value = part.partition(":")
        key = key.lower()
        if key in ("job", "replica", "task"):
            out[key] = value
        elif key == "device":
            out["device"] = value
        elif key in ("cpu", "gpu"):
            out["device"] = "%s:%s" % (key.upper(), value)
        else:
            out["device"] = part
    return out


def _device_string(d):
    return "".join("/%s:%s" % (k, d[k]) for k in _FIELDS if d.get(k) not in (None, ""))


class _RoundRobinStrategy:
    def __init__(self, num_tasks):
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op):
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class _ReplicaDeviceChooser:
    def __init__(self, ps_tasks, ps_device, worker_device, merge_devices, ps_ops, ps_strategy):
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = ps_ops
        self._ps_strategy = ps_strategy

    def device_function(self, op):
        if getattr(_fw.get_default_graph(), "_colocating", 0):
            return None  # TensorFlow calls no device function inside colocate_with
        current = _parse_device(op.device or "")
        node_def = getattr(op, "node_def", op)
        if self._ps_tasks and self._ps_device and node_def.op in self._ps_ops:
            ps = _parse_device(self._ps_device)
            if ps.get("job") and (not current.get("job") or current["job"] == ps["job"]):
                ps["task"] = str(self._ps_strategy(op))
            ps.update({k: v for k, v in current.items() if v})
            return _device_string(ps)
        worker = _parse_device(self._worker_device or "")
        worker.update({k: v for k, v in current.items() if v})
        return _device_string(worker)


def replica_device_setter(ps_tasks=0, ps_device="/job:ps", worker_device="/job:worker",
                          merge_devices=True, cluster=None, ps_ops=None, ps_strategy=None):
    """A device function placing variables round-robin on the ps tasks and every other op on
    worker_device (None when there is no ps task, as in TensorFlow)."""
    if cluster is not None:
        spec = cluster.as_dict() if isinstance(cluster, ClusterSpec) else cluster
        ps_job = _parse_device(ps_device).get("job")
        if ps_job not in spec or spec[ps_job] is None:
            return None
        ps_tasks = len(spec[ps_job])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(_STANDARD_PS_OPS)
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    return _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops,
                                 ps_strategy).device_function
