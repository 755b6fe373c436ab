"""tf.train.SyncReplicasOptimizer mapped onto weft's gradient accumulators (the ops
weft_sync_replicas_* builds on: WeftAccumulatorApply/Take, docs/training.md "Synchronous
training"). TensorFlow's version pushes into ConditionalAccumulators and blocks workers on a
token queue; weft has no queues, so:
- the worker's train_op pushes each gradient into "<var>/sync_acc" (with "<var>/sync_count" and
  "<var>/sync_step", colocated with the variable) tagged with its local step, and a gradient of a
  step already applied is dropped as stale;
- make_session_run_hook's hook does what the token queue did: before a run it reads the global
  step as the local step; after it the chief waits for replicas_to_aggregate gradients of every
  variable and applies their average with the wrapped optimizer (incrementing the global step),
  while other workers wait for the global step to move on;
- get_chief_queue_runner's runner is a thread of the chief applying each full round (the
  Supervisor programs' way); there, a worker's run is not held back.
"""
import threading
import time

import numpy as np

from weft import errors
from .. import dtypes as _dtypes
from .. import framework as _fw
from .. import ops as _ops
from .. import variables as _vars
from . import monitored
from . import training_util
from .optimizer import Optimizer

# A worker or chief waits this long at most for the others (TensorFlow waits forever).
_WAIT_SECS = 600.0


def _poll_sleep(secs):
    return min(secs * 2, 0.005)


class SyncReplicasOptimizer(Optimizer):
    def __init__(self, opt, replicas_to_aggregate, total_num_replicas=None,
                 variable_averages=None, variables_to_average=None, use_locking=False,
                 name="sync_replicas"):
        if variable_averages is not None or variables_to_average is not None:
            raise NotImplementedError("SyncReplicasOptimizer(variable_averages=) is not "
                                      "supported by weft")
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1:
            raise ValueError("replicas_to_aggregate must be at least 1, not %d"
                             % replicas_to_aggregate)
        super().__init__(use_locking, name)
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total_num_replicas)
        self._gradients_applied = False

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = [(g, v) for g, v in grads_and_vars]
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        graph = grads_and_vars[0][1].graph
        self._global_step = global_step
        self._global_step_read = training_util._read(global_step)
        self._accepted, self._counts, averaged = [], [], []
        with graph.as_default(), _fw.name_scope(None, self._name):
            step = self._global_step_read
            if step.dtype.base_dtype != _dtypes.int64:
                step = _ops.cast(step, _dtypes.int64)
            self._local_step = _ops.placeholder_with_default(step, [], name="local_step")
            required = _fw.constant(np.int64(self._replicas_to_aggregate),
                                    name="replicas_to_aggregate")
            for grad, var in grads_and_vars:
                if grad is None:
                    continue
                acc = self._slot(var, 0.0, "sync_acc", "sync_acc", use_resource=False)
                count = self._int_slot(var, "sync_count")
                last = self._int_slot(var, "sync_step")
                refs = [acc._ref(), count._ref(), last._ref()]
                with graph.colocate_with(var):
                    push = graph._create_op("WeftAccumulatorApply",
                                            refs + [self._local_step, grad], (), "accumulate")
                    take = graph._create_op("WeftAccumulatorTake", refs + [required], (),
                                            "take")
                self._accepted.append(push.outputs[0])
                self._counts.append(count.value())
                averaged.append((take.outputs[0], var))
            if not averaged:
                raise ValueError("No gradients provided for any variable: %s."
                                 % ([str(v) for _, v in grads_and_vars],))
            train_op = _ops.group(*[a.op for a in self._accepted], name=name or "train")
        self._update_op = self._opt.apply_gradients(averaged, global_step=global_step)
        with graph.as_default(), _fw.name_scope(None, self._name):
            self._chief_init_op = _ops.no_op(name="chief_init")
            self._local_step_init_op = _ops.no_op(name="local_step_init")
            self._init_tokens_op = _ops.no_op(name="init_tokens")
            self.ready_for_local_init_op = monitored.report_uninitialized_variables(
                _vars.global_variables())
        self._train_op = train_op
        self._gradients_applied = True
        return train_op

    def _int_slot(self, var, name):
        d = self._slots.setdefault(name, {})
        if var.op.name not in d:
            g = var.graph
            with g.name_scope(None), g.colocate_with(var):
                d[var.op.name] = _vars.Variable(np.int64(0), trainable=False,
                                                name=var.op.name + "/" + name,
                                                use_resource=False)  # ref ops update it
        return d[var.op.name]

    # TensorFlow's accessors
    @property
    def chief_init_op(self):
        return self._chief_init_op

    @property
    def local_step_init_op(self):
        return self._local_step_init_op

    def _check_applied(self, what):
        if not self._gradients_applied:
            raise ValueError("%s should be called after apply_gradients()." % what)

    def get_chief_queue_runner(self):
        self._check_applied("get_chief_queue_runner()")
        return _ChiefRunner(self)

    def get_init_tokens_op(self, num_tokens=-1):
        self._check_applied("get_init_tokens_op()")
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < self._total_num_replicas - self._replicas_to_aggregate:
            raise ValueError("Too few tokens to finish the first step: %d (given) vs %d "
                             "(needed)" % (num_tokens, self._total_num_replicas
                                           - self._replicas_to_aggregate))
        return self._init_tokens_op

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    # the rounds
    def _full(self, sess):
        return all(int(c) >= self._replicas_to_aggregate for c in sess.run(self._counts))

    def _wait(self, what, ready, deadline):
        sleep = 0.0002
        while not ready():
            if time.time() >= deadline:
                raise errors.DeadlineExceededError(None, None, what)
            time.sleep(sleep)
            sleep = _poll_sleep(sleep)


def _contains(fetches, op):
    if fetches is op:
        return True
    if isinstance(fetches, dict):
        return any(_contains(v, op) for v in fetches.values())
    if isinstance(fetches, (list, tuple)):
        return any(_contains(v, op) for v in fetches)
    return False


class _SyncReplicasOptimizerHook(monitored.SessionRunHook):
    _weft_after_run_first = True  # the round ends before StopAtStepHook looks at the step

    def __init__(self, opt, is_chief, num_tokens):
        self._opt, self._is_chief, self._num_tokens = opt, is_chief, num_tokens

    def begin(self):
        if not self._opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before "
                             "using the hook.")
        self._opt.get_init_tokens_op(self._num_tokens)

    def before_run(self, run_context):
        if not _contains(run_context.original_args.fetches, self._opt._train_op):
            self._step = None
            return None
        self._step = int(run_context.session.run(self._opt._global_step_read))
        return monitored.SessionRunArgs(None, feed_dict={self._opt._local_step: self._step})

    def after_run(self, run_context, run_values):
        if self._step is None:
            return
        sess, opt, step = run_context.session, self._opt, self._step
        deadline = time.time() + _WAIT_SECS
        if self._is_chief:
            opt._wait("sync replicas: fewer than %d gradients of step %d arrived within %d s; is "
                      "a worker slow or gone?" % (opt._replicas_to_aggregate, step, _WAIT_SECS),
                      lambda: opt._full(sess), deadline)
            sess.run(opt._update_op)
        else:
            opt._wait("sync replicas: the global step did not move past %d within %d s; is the "
                      "chief (or a worker) slow or gone?" % (step, _WAIT_SECS),
                      lambda: int(sess.run(opt._global_step_read)) > step, deadline)


class _ChiefRunner(monitored.QueueRunner):
    """The chief's thread: applies the average each time every variable has its gradients."""

    def __init__(self, opt):
        super().__init__()
        self._opt = opt

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        t = threading.Thread(target=self._loop, args=(sess, coord), daemon=daemon)
        if start:
            t.start()
        if coord is not None:
            coord.register_thread(t)
        return [t]

    def _loop(self, sess, coord):
        sleep = 0.0002
        try:
            while coord is None or not coord.should_stop():
                if self._opt._full(sess):
                    sess.run(self._opt._update_op)
                    sleep = 0.0002
                else:
                    time.sleep(sleep)
                    sleep = _poll_sleep(sleep)
        except (errors.CancelledError, RuntimeError):
            pass  # the session closed under the runner: training is over
        except errors.OpError as e:
            if coord is not None:
                coord.request_stop(e)
