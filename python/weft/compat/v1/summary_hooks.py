"""tf.train.SummarySaverHook and tf.train.StepCounterHook with TensorFlow's semantics
(basic_session_run_hooks.py): the merged summaries every N steps or seconds and global_step/sec,
written through FileWriterCache to the output folder. They derive from the training layer's
SessionRunHook (train/monitored.py)."""
import logging
import time

from . import framework as _fw
from .framework import GraphKeys
from .summary import FileWriterCache, Summary, SessionLog

from .train.monitored import SessionRunHook, SessionRunArgs

_log = logging.getLogger("tensorflow")


class _Timer:
    """TensorFlow's SecondOrStepTimer: triggers every `every_steps` global steps or
    `every_secs` seconds, and reports what elapsed since it last triggered."""

    def __init__(self, every_secs=None, every_steps=None):
        self._every_secs, self._every_steps = every_secs, every_steps
        self._last_time = self._last_step = None

    def should_trigger_for_step(self, step):
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None and time.time() >= self._last_time + self._every_secs:
            return True
        return self._every_steps is not None and step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        now = time.time()
        elapsed = (None, None) if self._last_time is None else \
            (now - self._last_time, step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed


def _global_step():
    """The graph's global step (GraphKeys.GLOBAL_STEP, else the tensor 'global_step:0'), as
    training_util.get_global_step finds it, as (tensor to fetch, its variable's op name); (None,
    None) when there is none."""
    found = _fw.get_collection(GraphKeys.GLOBAL_STEP)
    if found:
        gs = found[0]
        name = gs.op.name
        return (gs if isinstance(gs, _fw.Tensor) else gs.value()), name
    try:
        t = _fw.get_default_graph().get_tensor_by_name("global_step:0")
        return t, t.op.name
    except (KeyError, ValueError):
        return None, None


class SummarySaverHook(SessionRunHook):
    """Saves the summaries (summary_op, or scaffold.summary_op) every save_steps steps or
    save_secs seconds, and SessionLog START at the first step."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) + (summary_op is None) != 1:
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        if (save_steps is None) == (save_secs is None):
            raise ValueError("Either save_secs or save_steps should be provided, not both.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._timer = _Timer(every_secs=save_secs, every_steps=save_steps)
        self._next_step = None
        self._request_summary = False

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _global_step()[0]
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")

    def _get_summary_op(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request_summary = (self._next_step is None
                                 or self._timer.should_trigger_for_step(self._next_step))
        requests = {"global_step": self._global_step_tensor}
        if self._request_summary:
            ops = self._get_summary_op()
            if ops is not None:
                requests["summary"] = ops
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        stale = run_values.results["global_step"]
        global_step = stale + 1
        if self._next_step is None or self._request_summary:
            global_step = int(run_context.session.run(self._global_step_tensor))
        if self._next_step is None:
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for s in run_values.results.get("summary", ()):
                self._summary_writer.add_summary(s, global_step)
        self._next_step = global_step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()


class StepCounterHook(SessionRunHook):
    """Writes `global_step/sec` (the global step's op name + "/sec") every every_n_steps steps
    or every_n_secs seconds, and logs it."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = _Timer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer, self._output_dir = summary_writer, output_dir
        self._last_global_step = None

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = FileWriterCache.get(self._output_dir)
        self._global_step_tensor, name = _global_step()
        if self._global_step_tensor is None:
            raise RuntimeError("Global step should be created to use StepCounterHook.")
        self._summary_tag = name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def _log_and_record(self, elapsed_steps, elapsed_time, global_step):
        steps_per_sec = elapsed_steps / elapsed_time if elapsed_time > 0 else float("inf")
        if self._summary_writer is not None:
            self._summary_writer.add_summary(
                Summary(value=[Summary.Value(tag=self._summary_tag,
                                             simple_value=steps_per_sec)]), global_step)
        _log.info("%s: %g", self._summary_tag, steps_per_sec)

    def after_run(self, run_context, run_values):
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            global_step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None:
                    self._log_and_record(elapsed_steps, elapsed_time, global_step)
        if stale == self._last_global_step:
            _log.warning("It seems that global step (tf.train.get_global_step) has not been "
                         "increased. Current value (could be stable): %s vs previous value: %s. "
                         "You could increase the global step by passing "
                         "tf.train.get_global_step() to Optimizer.apply_gradients or "
                         "Optimizer.minimize.", stale, self._last_global_step)
        self._last_global_step = stale
