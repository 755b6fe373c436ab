"""tf.train's monitored training: SessionRunHook (before_run/after_run, SessionRunArgs),
StopAtStepHook, CheckpointSaverHook, LoggingTensorHook, Scaffold, the chief and worker session
creators (restore or initialise; wait until the model is ready), MonitoredSession and
MonitoredTrainingSession (with TensorFlow's recovery: a run failing UNAVAILABLE or ABORTED
closes the session and creates it again), Supervisor, Coordinator and the queue-runner calls
those programs make."""
import collections
import logging
import os
import threading
import time

from weft import errors
from .. import framework as _fw
from .. import ops as _ops
from .. import variables as _vars
from ..framework import GraphKeys
from ..session import Session
from .. import summary_pb as _summary_pb
from . import saver as _saver
from . import training_util

_log = logging.getLogger("tensorflow")

# How often a waiting worker looks at the model again: TensorFlow sleeps recovery_wait_secs
# (30 s by default) between looks; weft looks at least every second, so a worker that started
# before its chief does not idle, and waits as long in total.
_MAX_POLL_SECS = 1.0


# ---------------------------------------------------------------------------------------------
# Hooks

class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


SessionRunValues = collections.namedtuple("SessionRunValues",
                                          ["results", "options", "run_metadata"])


class SessionRunContext:
    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested

    def request_stop(self):
        self._stop_requested = True


class SessionRunHook:
    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class SecondOrStepTimer:
    def __init__(self, every_secs=None, every_steps=None):
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self._last_time = self._last_step = None

    def should_trigger_for_step(self, step):
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        self._last_time, self._last_step = time.time(), step

    def last_triggered_step(self):
        return self._last_step


class StopAtStepHook(SessionRunHook):
    """Requests a stop once the global step reaches last_step (or num_steps past its value
    when the session was created)."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        gs = training_util.get_global_step()
        if gs is None:
            raise RuntimeError("Global step should be created to use StopAtStepHook.")
        self._global_step_tensor = training_util._read(gs)

    def after_create_session(self, session, coord):
        if self._last_step is None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if int(run_values.results) + 1 >= self._last_step:
            step = int(run_context.session.run(self._global_step_tensor))
            if step >= self._last_step:
                run_context.request_stop()


class CheckpointSaverHook(SessionRunHook):
    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver, self._scaffold = saver, scaffold
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self):
        gs = training_util.get_global_step()
        if gs is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")
        self._global_step_tensor = training_util._read(gs)
        from ..summary import FileWriterCache
        self._summary_writer = FileWriterCache.get(self._checkpoint_dir)
        self._placed_graph_written = False
        for lst in self._listeners:
            lst.begin()

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step_tensor))
        # TensorFlow writes the graph here, after every hook's begin() has added its ops
        self._summary_writer.add_graph(_fw.get_default_graph())
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if not self._placed_graph_written:
            # once a step has run, the session knows where each node was placed: the graph
            # again with those devices, for TensorBoard's device colouring
            self._summary_writer._add_placed_graph(_fw.get_default_graph(), run_context.session)
            self._placed_graph_written = True
        stale = int(run_values.results)
        if self._timer.should_trigger_for_step(stale + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._global_step_tensor))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for lst in self._listeners:
            lst.end(session, step)

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = _fw.get_collection(GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection {}. Please add a saver to the collection "
                               "or provide a saver or scaffold.".format(GraphKeys.SAVERS))
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection {}. Please indicate which one "
                               "to use by passing it to the constructor."
                               .format(GraphKeys.SAVERS))
        self._saver = savers[0]
        return savers[0]

    def _save(self, session, step):
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        os.makedirs(self._checkpoint_dir, exist_ok=True)
        for lst in self._listeners:
            lst.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        self._summary_writer.add_session_log(
            _summary_pb.SessionLog(status=_summary_pb.SessionLog.CHECKPOINT,
                                   checkpoint_path=self._save_path), step)
        stop = False
        for lst in self._listeners:
            if lst.after_save(session, step):
                stop = True
        return stop


class LoggingTensorHook(SessionRunHook):
    """Logs "name = value, ..." every_n_iter steps or every_n_secs seconds (and at_end)."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError("invalid every_n_iter=%s." % every_n_iter)
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._log_at_end = at_end
        self._timer = (None if only_log_at_end
                       else SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter))

    def begin(self):
        self._iter_count = 0
        g = _fw.get_default_graph()
        self._current_tensors = {tag: self._as_tensor(g, t) for tag, t in self._tensors.items()}

    @staticmethod
    def _as_tensor(g, t):
        if isinstance(t, _vars.Variable):
            return t._fetch_tensor()
        if isinstance(t, str):
            return g.as_graph_element(t, allow_tensor=True, allow_operation=False)
        return t

    def before_run(self, run_context):
        self._should_trigger = (self._timer is not None
                                and self._timer.should_trigger_for_step(self._iter_count))
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def _log(self, values):
        if self._formatter:
            _log.info(self._formatter(values))
        else:
            _log.info(", ".join("%s = %s" % (tag, values[tag]) for tag in self._tag_order))

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._timer.update_last_triggered_step(self._iter_count)
            self._log(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log(session.run(self._current_tensors))


class FinalOpsHook(SessionRunHook):
    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops, self._feed = final_ops, final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is not None:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._feed)


# ---------------------------------------------------------------------------------------------
# Readiness: TensorFlow's report_uninitialized_variables is a string tensor; weft computes the
# same list from one IsVariableInitialized per variable, built while the graph is still open.

class _UninitializedReport:
    def __init__(self, var_list):
        self._vars = list(var_list)
        self._checks = []
        for v in self._vars:
            # beside the variable: it reads the variable's reference, which cannot cross tasks
            with v.graph.colocate_with(v):
                self._checks.append(_vars.is_variable_initialized(v))

    def names(self, sess):
        if not self._vars:
            return []
        done = sess.run(self._checks)
        return [v.op.name for v, ok in zip(self._vars, done) if not ok]


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    if var_list is None:
        var_list = _vars.global_variables() + _vars.local_variables()
    return _UninitializedReport(var_list)


def _not_ready(report, sess):
    """None when ready, else the message naming what is not."""
    if report is None:
        return None
    if isinstance(report, _UninitializedReport):
        names = report.names(sess)
        return None if not names else "Variables not initialized: " + ", ".join(names)
    value = sess.run(report)
    if getattr(value, "size", len(value) if hasattr(value, "__len__") else 0) == 0:
        return None
    return "Variables not initialized: " + ", ".join(
        v.decode() if isinstance(v, bytes) else str(v) for v in list(value))


class Scaffold:
    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op or c.init_op
            init_feed_dict = init_feed_dict or c._init_feed_dict
            init_fn = init_fn or c._user_init_fn
            ready_op = ready_op or c.ready_op
            ready_for_local_init_op = ready_for_local_init_op or c.ready_for_local_init_op
            local_init_op = local_init_op or c.local_init_op
            summary_op = summary_op or c.summary_op
            saver = saver or c.saver
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self):
        g = _fw.get_default_graph()
        if g.finalized:
            return self
        if self._init_op is None:
            self._init_op = _first(GraphKeys.INIT_OP) or _ops.group(
                _vars.global_variables_initializer())
        if self._ready_op is None:
            self._ready_op = _first(GraphKeys.READY_OP) or report_uninitialized_variables()
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = (
                _first(GraphKeys.READY_FOR_LOCAL_INIT_OP)
                or report_uninitialized_variables(_vars.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = _first(GraphKeys.LOCAL_INIT_OP) or _ops.group(
                _vars.local_variables_initializer())
        if self._summary_op is None:
            from .. import summary as _summary  # tf.summary builds on the graph layer only
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP,
                                                       _summary.merge_all)
        if self._saver is None:
            savers = _fw.get_collection(GraphKeys.SAVERS)
            if savers:
                self._saver = savers[0]
            else:
                self._saver = _saver.Saver(allow_empty=True)
                _fw.add_to_collection(GraphKeys.SAVERS, self._saver)
        g.finalize()
        return self

    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        found = _fw.get_collection(collection_key)
        if found:
            if len(found) > 1:
                raise RuntimeError("More than one item in the collection \"%s\". Please indicate "
                                   "which one to use by passing it to the tf.Scaffold "
                                   "constructor as:  tf.Scaffold(%s=item to use)"
                                   % (collection_key, arg_name))
            return found[0]
        op = default_constructor()
        if op is not None:
            _fw.add_to_collection(collection_key, op)
        return op


def _first(key):
    found = _fw.get_collection(key)
    return found[0] if found else None


# ---------------------------------------------------------------------------------------------
# Session creation (TensorFlow's SessionManager)

class SessionManager:
    def __init__(self, local_init_op=None, ready_op=None, ready_for_local_init_op=None,
                 graph=None, recovery_wait_secs=30, local_init_run_options=None,
                 local_init_feed_dict=None):
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph or _fw.get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_feed_dict = local_init_feed_dict

    def _new(self, master, config):
        return Session(master, graph=self._graph, config=config)

    def _try_local_init(self, sess):
        msg = _not_ready(self._ready_for_local_init_op, sess)
        if msg is not None:
            return False, msg
        if self._local_init_op is not None:
            sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict)
        return True, None

    def prepare_session(self, master, init_op=None, saver=None, checkpoint_dir=None,
                        checkpoint_filename_with_path=None, wait_for_checkpoint=False,
                        max_wait_secs=7200, config=None, init_feed_dict=None, init_fn=None):
        sess = self._new(master, config)
        restored = False
        if checkpoint_filename_with_path is not None:
            saver.restore(sess, checkpoint_filename_with_path)
            restored = True
        elif saver is not None and checkpoint_dir:
            latest = _saver.latest_checkpoint(checkpoint_dir)
            if latest:
                saver.restore(sess, latest)
                restored = True
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, msg = self._try_local_init(sess)
        if not ok:
            sess.close()
            raise RuntimeError("Init operations did not make model ready for local_init.  Init "
                               "op: %s, init fn: %s, error: %s"
                               % (_op_name(init_op), init_fn, msg))
        msg = _not_ready(self._ready_op, sess)
        if msg is not None:
            sess.close()
            raise RuntimeError("Init operations did not make model ready.  Init op: %s, init "
                               "fn: %s, local_init_op: %s, error: %s"
                               % (_op_name(init_op), init_fn, _op_name(self._local_init_op),
                                  msg))
        return sess

    def wait_for_session(self, master, config=None, max_wait_secs=float("Inf")):
        deadline = time.time() + max_wait_secs
        while True:
            sess = self._new(master, config)
            try:
                ok, msg = self._try_local_init(sess)
                if ok:
                    msg = _not_ready(self._ready_op, sess)
                    if msg is None:
                        return sess
            except (errors.UnavailableError, errors.AbortedError) as e:
                msg = e.message
            sess.close()
            remaining = deadline - time.time()
            if remaining <= 0:
                raise errors.DeadlineExceededError(
                    None, None, "Session was not ready after waiting %d secs." % max_wait_secs)
            _log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s", msg)
            time.sleep(min(self._recovery_wait_secs, _MAX_POLL_SECS, remaining))


def _op_name(op):
    return getattr(op, "name", op)


class ChiefSessionCreator:
    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        s = self._scaffold
        return SessionManager(
            local_init_op=s.local_init_op, ready_op=s.ready_op,
            ready_for_local_init_op=s.ready_for_local_init_op).prepare_session(
                self._master, saver=s.saver, checkpoint_dir=self._checkpoint_dir,
                checkpoint_filename_with_path=self._checkpoint_filename_with_path,
                config=self._config, init_op=s.init_op, init_feed_dict=s.init_feed_dict,
                init_fn=s.init_fn)


class WorkerSessionCreator:
    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        self._scaffold.finalize()
        s = self._scaffold
        return SessionManager(
            local_init_op=s.local_init_op, ready_op=s.ready_op,
            ready_for_local_init_op=s.ready_for_local_init_op).wait_for_session(
                self._master, config=self._config, max_wait_secs=self._max_wait_secs)


# ---------------------------------------------------------------------------------------------
# MonitoredSession

class Coordinator:
    def __init__(self, clean_stop_exception_types=None):
        self._stop = threading.Event()
        self._exc = None
        self._threads = []

    def request_stop(self, ex=None):
        if ex is not None and self._exc is None and not isinstance(
                ex, (errors.OutOfRangeError, StopIteration)):
            self._exc = ex
        self._stop.set()

    def should_stop(self):
        return self._stop.is_set()

    def clear_stop(self):
        self._stop.clear()

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    def register_thread(self, thread):
        self._threads.append(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        for t in list(threads or []) + self._threads:
            t.join(stop_grace_period_secs)
        if self._exc is not None:
            raise self._exc

    def raise_requested_exception(self):
        if self._exc is not None:
            raise self._exc

    @property
    def joined(self):
        return False


class _MonitoredSession:
    def __init__(self, session_creator, hooks, stop_grace_period_secs=120, max_wait_secs=7200):
        self._creator = session_creator
        self._max_wait_secs = max_wait_secs
        self._hooks = list(hooks or [])
        self._graph = _fw.get_default_graph()
        for h in self._hooks:
            h.begin()
        self._coord = Coordinator()
        self._should_stop = False
        self._sess = None
        self._create()

    def _create(self):
        # TensorFlow's _RecoverableSession: a task not up yet (UNAVAILABLE) or a session lost
        # (ABORTED) while creating means creating it again.
        deadline = time.time() + self._max_wait_secs
        while True:
            try:
                self._sess = self._creator.create_session()
                break
            except (errors.UnavailableError, errors.AbortedError) as e:
                if time.time() >= deadline:
                    raise
                _log.info("An error was raised while a session was being created. This may be "
                          "due to a preemption of a connected worker or parameter server. A new "
                          "session will be created. Error: %s", e)
                time.sleep(_MAX_POLL_SECS / 2)
        for h in self._hooks:
            h.after_create_session(self._sess, self._coord)

    def _tf_sess(self):
        return self._sess

    @property
    def graph(self):
        return self._graph

    def should_stop(self):
        return self._should_stop or self._coord.should_stop() or self._sess is None

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        while True:
            try:
                return self._run_hooked(fetches, feed_dict, options, run_metadata)
            except (errors.UnavailableError, errors.AbortedError) as e:
                _log.info("An error was raised. This may be due to a preemption in a connected "
                          "worker or parameter server. The current session will be closed and "
                          "a new session will be created. This error may also occur due to a "
                          "gRPC failure caused by high memory or network bandwidth usage in the "
                          "parameter servers. If this error occurs repeatedly, try increasing "
                          "the number of parameter servers assigned to the job. Error: %s", e)
                try:
                    self._sess.close()
                except Exception:  # noqa: BLE001 -- the session is gone either way
                    pass
                self._create()

    def run_step_fn(self, step_fn):
        class _StepContext:
            def __init__(ctx, sess):
                ctx.session = sess

            def run_with_hooks(ctx, *args, **kwargs):
                return self.run(*args, **kwargs)

            def request_stop(ctx):
                self._should_stop = True
        return step_fn(_StepContext(self._sess))

    def _run_hooked(self, fetches, feed_dict, options, run_metadata):
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self._sess)
        hook_fetches, feeds = {}, dict(feed_dict or {})
        for i, h in enumerate(self._hooks):
            req = h.before_run(ctx)
            if req is None:
                continue
            if req.fetches is not None:
                hook_fetches[i] = req.fetches
            if req.feed_dict:
                for k in req.feed_dict:
                    if k in feeds:
                        raise RuntimeError("Same tensor is fed by two hooks.")
                feeds.update(req.feed_dict)
        out = self._sess.run({"caller": fetches, "hooks": hook_fetches}, feed_dict=feeds or None,
                             options=options, run_metadata=run_metadata)
        # hooks standing in for blocking ops (SyncReplicasOptimizer's) finish the step first
        order = sorted(range(len(self._hooks)),
                       key=lambda i: not getattr(self._hooks[i], "_weft_after_run_first", False))
        for i in order:
            self._hooks[i].after_run(ctx, SessionRunValues(out["hooks"].get(i), options,
                                                           run_metadata))
        if ctx.stop_requested:
            self._should_stop = True
        return out["caller"]

    def close(self):
        self._close(None)

    def _close(self, exc_type):
        if self._sess is None:
            return
        try:
            if exc_type is None:
                for h in self._hooks:
                    h.end(self._sess)
        finally:
            self._sess.close()
            self._sess = None
            self._coord.request_stop()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type in (errors.OutOfRangeError, StopIteration):
            exc_type = None
        self._close(exc_type)
        return exc_type is None


class MonitoredSession(_MonitoredSession):
    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120,
                 max_wait_secs=7200):
        super().__init__(session_creator or ChiefSessionCreator(), hooks, stop_grace_period_secs,
                         max_wait_secs)


SingularMonitoredSession = MonitoredSession

USE_DEFAULT = object()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,
                             hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT, save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None):
    """TensorFlow's factory: the chief restores or initialises, saves checkpoints every
    save_checkpoint_secs (600) or save_checkpoint_steps, and writes TensorBoard's event files to
    summary_dir (default checkpoint_dir): global_step/sec every log_step_count_steps (100) and
    the merged summaries every save_summaries_steps (100) or save_summaries_secs; other workers
    wait for the model and write nothing."""
    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_secs is USE_DEFAULT and save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, list(hooks or []), stop_grace_period_secs,
                                max_wait_secs)
    # TensorFlow's order: the chief-only hooks, the standard ones, then the caller's
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                  master=master, config=config)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        from ..summary_hooks import StepCounterHook, SummarySaverHook  # they derive from here
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir,
                                             every_n_steps=log_step_count_steps))
        if ((save_summaries_steps and save_summaries_steps > 0)
                or (save_summaries_secs and save_summaries_secs > 0)):
            all_hooks.append(SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs,
                                              output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_secs=save_checkpoint_secs,
                                             save_steps=save_checkpoint_steps,
                                             scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs, max_wait_secs)


# ---------------------------------------------------------------------------------------------
# Queue runners: weft has no input queues; the runners synchronous training and Supervisor
# start are Python threads running their ops.

class QueueRunner:
    def __init__(self, queue=None, enqueue_ops=None, close_op=None, cancel_op=None,
                 queue_closed_exception_types=None, queue_runner_def=None, import_scope=None):
        self._queue, self._enqueue_ops = queue, list(enqueue_ops or [])

    @property
    def enqueue_ops(self):
        return self._enqueue_ops

    def create_threads(self, sess, coord=None, daemon=False, start=False):
        return []


def add_queue_runner(qr, collection=GraphKeys.QUEUE_RUNNERS):
    _fw.add_to_collection(collection, qr)


def start_queue_runners(sess=None, coord=None, daemon=True, start=True,
                        collection=GraphKeys.QUEUE_RUNNERS):
    threads = []
    for qr in _fw.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
