"""tf.train.Supervisor: the chief restores from logdir or runs init_op, then saves every
save_model_secs on a thread and writes TensorBoard's event files to logdir (the graph, SessionLog
START/STOP, the summaries and global_step/sec every save_summaries_secs); other workers wait until
the model is ready; managed_session, prepare_or_wait_for_session, should_stop/stop and the queue
runners, as TensorFlow's."""
import contextlib
import logging
import os
import threading
import time

from weft import errors
from .. import framework as _fw
from .. import ops as _ops
from .. import variables as _vars
from ..framework import GraphKeys
from . import monitored
from . import saver as _saver
from . import training_util
from .. import summary as _summary
from ..summary_pb import SessionLog, Summary

_log = logging.getLogger("tensorflow")


class Supervisor:
    USE_DEFAULT = 0

    def __init__(self, graph=None, ready_op=USE_DEFAULT, ready_for_local_init_op=USE_DEFAULT,
                 is_chief=True, init_op=USE_DEFAULT, init_feed_dict=None,
                 local_init_op=USE_DEFAULT, logdir=None, summary_op=USE_DEFAULT,
                 saver=USE_DEFAULT, global_step=USE_DEFAULT, save_summaries_secs=120,
                 save_model_secs=600, recovery_wait_secs=30, stop_grace_secs=120,
                 checkpoint_basename="model.ckpt", session_manager=None, summary_writer=USE_DEFAULT,
                 init_fn=None, local_init_run_options=None):
        self._graph = graph or _fw.get_default_graph()
        d = self.USE_DEFAULT
        with self._graph.as_default():
            self._init_op = _vars.global_variables_initializer() if init_op is d else init_op
            self._ready_op = (monitored.report_uninitialized_variables() if ready_op is d
                              else ready_op)
            self._ready_for_local_init_op = (
                monitored.report_uninitialized_variables(_vars.global_variables())
                if ready_for_local_init_op is d else ready_for_local_init_op)
            self._local_init_op = (_ops.group(_vars.local_variables_initializer())
                                   if local_init_op is d else local_init_op)
            self._saver = (_saver.Saver(allow_empty=True) if saver is d and is_chief
                           else (None if saver is d else saver))
            self._global_step = (training_util.get_global_step() if global_step is d
                                 else global_step)
            # read ops made now: the graph is finalized below
            self._global_step_read = (None if self._global_step is None
                                      else training_util._read(self._global_step))
            if summary_op is d:
                summary_op = monitored._first(GraphKeys.SUMMARY_OP)
                if summary_op is None:
                    summary_op = _summary.merge_all()
                    if summary_op is not None:
                        self._graph.add_to_collection(GraphKeys.SUMMARY_OP, summary_op)
            self._summary_op = summary_op
        self._is_chief = is_chief
        # only the chief writes checkpoints and events
        self._logdir = logdir if is_chief else None
        self._save_path = (os.path.join(logdir, checkpoint_basename)
                           if logdir and is_chief else None)
        self._save_summaries_secs = save_summaries_secs if is_chief else None
        self._summary_writer = None
        if is_chief:
            if summary_writer is d:
                if logdir:
                    self._summary_writer = _summary.FileWriter(logdir)
            else:
                self._summary_writer = summary_writer
        self._graph_added_to_summary = False
        self._stop_grace_secs = stop_grace_secs
        self._save_model_secs = save_model_secs
        self._recovery_wait_secs = recovery_wait_secs
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._coord = monitored.Coordinator()
        self._threads = []
        self._sm = session_manager or monitored.SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs)
        self._graph.finalize()

    is_chief = property(lambda self: self._is_chief)
    coord = property(lambda self: self._coord)
    init_op = property(lambda self: self._init_op)
    ready_op = property(lambda self: self._ready_op)
    saver = property(lambda self: self._saver)
    global_step = property(lambda self: self._global_step)
    session_manager = property(lambda self: self._sm)
    save_path = property(lambda self: self._save_path)
    summary_op = property(lambda self: self._summary_op)
    summary_writer = property(lambda self: self._summary_writer)
    save_summaries_secs = property(lambda self: self._save_summaries_secs)

    def prepare_or_wait_for_session(self, master="", config=None, wait_for_checkpoint=False,
                                    max_wait_secs=7200, start_standard_services=True):
        self._coord.clear_stop()
        if self._is_chief:
            sess = self._sm.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            self._write_graph(sess)
            if start_standard_services:
                self.start_standard_services(sess)
        else:
            sess = self._sm.wait_for_session(master, config=config, max_wait_secs=max_wait_secs)
        self._sess = sess
        return sess

    def start_standard_services(self, sess):
        if not self._is_chief:
            raise TypeError("Chief only: start_standard_services() on a non-chief")
        if not self._logdir:
            _log.warning("Standard services need a 'logdir' passed to the SessionManager")
            return []
        if self._global_step is not None and self._summary_writer:
            # TensorBoard drops the events at and after this step that an earlier run wrote
            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START),
                                                 self._step(sess))
        threads = []
        if self._save_summaries_secs and self._summary_writer:
            if self._summary_op is not None:
                threads.append(self._looper(self._save_summaries_secs, self._summary_step,
                                            (sess,)))
            if self._global_step is not None:
                threads.append(self._looper(self._save_summaries_secs,
                                            self._step_counter(sess), (sess,)))
        if self._save_path and self._save_model_secs and self._saver is not None:
            t = threading.Thread(target=self._checkpoint_loop, args=(sess,), daemon=True)
            t.start()
            threads.append(t)
        self._threads.extend(threads)
        return threads

    def _step(self, sess):
        return training_util.global_step(sess, self._global_step_read)

    def _write_graph(self, sess):
        if self._summary_writer and not self._graph_added_to_summary:
            # the devices are those the session placed the nodes it has run on
            self._summary_writer._add_placed_graph(self._graph, sess)
            self._graph_added_to_summary = True

    def _looper(self, secs, target, args=(), kwargs=None):
        """TensorFlow's LooperThread: target(*args, **kwargs) at once, then every secs seconds
        until the coordinator stops; an error stops the coordinator with it."""
        def run():
            try:
                next_time = time.time()
                while not self._coord.wait_for_stop(max(0.0, next_time - time.time())):
                    next_time += secs
                    target(*args, **(kwargs or {}))
            except Exception as e:  # noqa: BLE001 -- reported through the coordinator
                self._coord.request_stop(e)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def _summary_step(self, sess):
        if self._global_step_read is not None:
            summary, step = sess.run([self._summary_op, self._global_step_read])
        else:
            summary, step = sess.run(self._summary_op), None
        _log.info("Recording summary at step %s.", step)
        self.summary_computed(sess, summary, step)

    def _step_counter(self, sess):
        """TensorFlow's SVStepCounterThread: `<global step op name>/sec` over each period."""
        tag = "%s/sec" % self._global_step.op.name
        last = {"time": time.time(), "step": self._step(sess)}

        def body(sess):
            step, now = self._step(sess), time.time()
            elapsed = now - last["time"]
            rate = (step - last["step"]) / elapsed if elapsed > 0 else float("inf")
            last.update(time=now, step=step)
            self._summary_writer.add_summary(
                Summary(value=[Summary.Value(tag=tag, simple_value=rate)]), step)
            _log.info("%s: %g", tag, rate)
        return body

    def _checkpoint_loop(self, sess):
        while not self._coord.wait_for_stop(self._save_model_secs):
            try:
                self._save(sess)
            except (errors.OpError, RuntimeError, ValueError):
                return  # the session has closed under the thread

    def _save(self, sess):
        step = None
        if self._global_step is not None:
            step = self._step(sess)
        self._saver.save(sess, self._save_path, global_step=step)

    def start_queue_runners(self, sess, queue_runners=None):
        if queue_runners is None:
            queue_runners = self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in queue_runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        self._threads.extend(threads)
        return threads

    def loop(self, timer_interval_secs, target, args=None, kwargs=None):
        t = self._looper(timer_interval_secs, target, args or (), kwargs)
        self._threads.append(t)
        return t

    def should_stop(self):
        return self._coord.should_stop()

    def request_stop(self, ex=None):
        self._coord.request_stop(ex)

    def stop(self, threads=None, close_summary_writer=True, ignore_live_threads=False):
        self._coord.request_stop()
        try:
            self._coord.join(list(threads or []) + self._threads,
                             stop_grace_period_secs=self._stop_grace_secs)
        finally:
            self._threads = []
            # last, as the threads write through it; STOP has no step: the session may be gone
            if close_summary_writer and self._summary_writer:
                self._summary_writer.add_session_log(SessionLog(status=SessionLog.STOP))
                self._summary_writer.close()
                self._graph_added_to_summary = False

    def wait_for_stop(self):
        self._coord.wait_for_stop()

    def summary_computed(self, sess, summary, global_step=None):
        """Writes summary (a Summary or its bytes) at global_step (the current one when None)."""
        if not self._summary_writer:
            raise RuntimeError("Writing a summary requires a summary writer.")
        if global_step is None and self._global_step_read is not None:
            global_step = self._step(sess)
        self._summary_writer.add_summary(summary, global_step)

    @contextlib.contextmanager
    def managed_session(self, master="", config=None, start_standard_services=True,
                        close_summary_writer=True):
        sess = self.prepare_or_wait_for_session(master, config=config,
                                                start_standard_services=start_standard_services)
        try:
            yield sess
        except Exception as e:  # noqa: BLE001 -- TensorFlow reports it through the coordinator
            if isinstance(e, (errors.OutOfRangeError, StopIteration)):
                self._coord.request_stop()
            else:
                self._coord.request_stop(e)
        finally:
            try:
                self.stop(close_summary_writer=close_summary_writer)
            finally:
                sess.close()
