"""Training writes TensorBoard's event files by default, as TensorFlow 1.15 does: the example
trainer as 1 ps + 2 workers, a MonitoredTrainingSession killed and restored, a Supervisor, and
the switches that turn it off. Every file is read back by tests/read_events.py (standard library
only: TFRecord framing, masked CRC-32C, TensorFlow's event.proto/summary.proto field numbers)."""
import importlib.util
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

import weft.compat.v1 as tf
from _procs import TRAINER, Children, free_ports

READER = pathlib.Path(__file__).resolve().parents[2] / "tests" / "read_events.py"
_spec = importlib.util.spec_from_file_location("read_events", READER)
rd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rd)

START, STOP, CHECKPOINT = 1, 2, 3  # SessionLog.SessionStatus


@pytest.fixture
def children():
    c = Children()
    yield c
    c.kill_all()


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.summary.FileWriterCache.clear()


def event_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if ".tfevents." in f)


def read(path):
    """read_events.py in its own process: it exits 1 on any bad crc or framing."""
    out = subprocess.run([sys.executable, str(READER), path], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    parsed = json.loads(out.stdout)
    assert parsed["file_version"] == "brain.Event:2"
    return parsed["events"]


def scalars(events, tag):
    return [(e["step"], v) for e in events for t, v in e["values"] if t == tag]


def f32(x):
    return float(np.float32(x))


def first_lines_until(p, prefix, secs=180):
    """p's stdout lines up to the first that starts with prefix; p is killed (so the read
    ends) if none comes within secs."""
    killer = threading.Timer(secs, p.kill)
    killer.start()
    try:
        lines = []
        for line in p.stdout:
            lines.append(line)
            if line.startswith(prefix):
                return lines
        raise AssertionError("no line %r within %d s: %s" % (prefix, secs, "".join(lines)))
    finally:
        killer.cancel()


def test_example_trainer_writes_event_files(children, tmp_path):
    ps, w0, w1 = free_ports(3)
    flags = ["--ps_hosts=localhost:%d" % ps,
             "--worker_hosts=localhost:%d,localhost:%d" % (w0, w1), "--train_steps=300"]
    ckpt = str(tmp_path / "train_logs")
    children.start([TRAINER] + flags + ["--job_name=ps", "--task_index=0"])
    p_w0 = children.start([TRAINER] + flags + ["--job_name=worker", "--task_index=0",
                                               "--checkpoint_dir=" + ckpt])
    # the chief first, so that its first step is step 0 and several summary steps follow
    head = first_lines_until(p_w0, "worker 0: step")
    p_w1 = children.start([TRAINER] + flags + ["--job_name=worker", "--task_index=1"])
    for i, p in ((0, p_w0), (1, p_w1)):
        rc, out, err = children.finish(p)
        assert rc == 0, "worker %d failed:\n%s\n%s" % (i, out, err)
        if i == 0:
            chief_out = "".join(head) + out
    printed = [f32(v) for v in re.findall(r"worker 0: step \d+ loss (\S+)", chief_out)]
    # step 0's loss is that of w = 0, b = 0: mean(y^2), computed here from the example's data
    sys.path.insert(0, os.path.dirname(TRAINER))
    import trainer
    assert printed[0] == pytest.approx(np.mean(trainer.dataset()[1].astype(np.float64) ** 2),
                                       rel=1e-5)

    files = event_files(ckpt)
    assert len(files) == 1, files  # only the chief writes, through one cached writer
    events = read(files[0])
    # the merged summaries: loss every 100 global steps from the chief's first step, each the
    # very value the chief fetched in that run
    losses = scalars(events, "loss")
    assert len(losses) >= 3
    steps = [s for s, _ in losses]
    assert steps == sorted(set(steps))
    assert losses[0][1] == printed[0]
    it = iter(printed)
    assert all(any(v == p for p in it) for _, v in losses), (losses, printed[:5])
    assert losses[-1][1] < losses[0][1] / 100
    # global_step/sec from StepCounterHook, at increasing steps
    rates = scalars(events, "global_step/sec")
    assert rates and all(r > 0 for _, r in rates)
    assert [s for s, _ in rates] == sorted(set(s for s, _ in rates))
    # SessionLog START before the first summary; CHECKPOINT at each save
    logs = [(e["step"], e["session_log"]) for e in events if "session_log" in e]
    assert [s for s, st in logs if st == START] == [steps[0]]
    assert any(st == CHECKPOINT for _, st in logs)
    # the graph: written as built, then with the devices the session placed each node on
    graphs = [e["graph_devices"] for e in events if "graph_devices" in e]
    assert len(graphs) >= 2
    placed = graphs[-1]
    assert placed["w"].startswith("/job:ps/") and placed["global_step"].startswith("/job:ps/")
    assert placed["mse"].startswith("/job:worker/replica:0/task:0")
    assert "/device:CPU:0" in placed["mse"]


MTS_PROGRAM = r"""
import sys, weft.compat.v1 as tf
gs = tf.train.get_or_create_global_step()
w = tf.get_variable("w", [], initializer=tf.constant_initializer(4.0))
loss = tf.square(w, name="w_squared")
tf.summary.scalar("loss", loss)
train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=gs)
with tf.train.MonitoredTrainingSession(checkpoint_dir=sys.argv[1], save_checkpoint_steps=5,
                                       save_summaries_steps=1, log_step_count_steps=1) as s:
    for _ in range(int(sys.argv[2])):
        _, step = s.run([train, gs])
        print("step", step, flush=True)
"""


def test_killed_and_restored_run_leaves_session_log_start(children, tmp_path):
    logdir = str(tmp_path / "mts")
    p = children.start(["-c", MTS_PROGRAM, logdir, "1000000"])
    line = first_lines_until(p, "step ")[-1]
    while int(line.split()[1]) < 13:
        line = first_lines_until(p, "step ")[-1]
    p.send_signal(signal.SIGKILL)
    p.wait(timeout=60)
    restored = int(tf.train.latest_checkpoint(logdir).rsplit("-", 1)[1])
    assert restored >= 10 and restored % 5 == 0
    before = set(event_files(logdir))

    rc, out, err = children.finish(children.start(["-c", MTS_PROGRAM, logdir, "3"]))
    assert rc == 0, err
    assert out.split()[1] in (str(restored), str(restored + 1))  # the first step after restore
    new = sorted(set(event_files(logdir)) - before)
    assert len(new) == 1, new
    events = read(new[0])
    # TensorFlow's SummarySaverHook: START at the global step read after the first run, so
    # TensorBoard discards what the killed run wrote at and after it
    logs = [(e["step"], e["session_log"]) for e in events if "session_log" in e]
    assert (restored + 1, START) in logs
    assert logs[0] == (restored, CHECKPOINT)  # CheckpointSaverHook saves at creation
    loss = scalars(events, "loss")
    assert [s for s, _ in loss] == [restored + 1, restored + 2, restored + 3]
    # w after k steps of w -= 0.01 * 2w from 4: the restored run continues the curve
    for s, v in loss:
        assert v == pytest.approx((4.0 * 0.98 ** (s - 1)) ** 2, rel=1e-4)


SV_PROGRAM = r"""
import sys, threading, time, weft.compat.v1 as tf
gs = tf.train.get_or_create_global_step()
w = tf.get_variable("w", [], initializer=tf.constant_initializer(4.0))
loss = tf.square(w, name="w_squared")
tf.summary.scalar("loss", loss)
tf.summary.scalar("twice_step", 2.0 * tf.cast(gs.value(), tf.float32))
train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=gs)
sv = tf.train.Supervisor(logdir=sys.argv[1], save_summaries_secs=0.05, save_model_secs=0)
seen = set()
add = sv.summary_writer.add_summary
def spy(summary, global_step=None):  # the real writer, watched: train until both threads wrote
    s = summary if isinstance(summary, tf.Summary) else tf.Summary.FromString(summary)
    seen.update(v.tag for v in s.value)
    return add(summary, global_step)
sv.summary_writer.add_summary = spy
assert sv.summary_op is tf.get_collection(tf.GraphKeys.SUMMARY_OP)[0]
with sv.managed_session() as sess:
    deadline = time.time() + 120
    while not ({"loss", "global_step/sec"} <= seen) and time.time() < deadline:
        sess.run(train)
        time.sleep(0.01)
    sv.summary_computed(sess, sess.run(sv.summary_op))
    print("seen", sorted(seen), "threads", threading.active_count(), flush=True)
print("after", threading.active_count(), flush=True)
"""


def test_supervisor_writes_graph_start_summaries_and_stop(children, tmp_path):
    logdir = str(tmp_path / "sv")
    rc, out, err = children.finish(children.start(["-c", SV_PROGRAM, logdir]))
    assert rc == 0, err
    assert "seen ['global_step/sec', 'loss', 'twice_step']" in out
    assert out.split("after ")[1].strip() == "1"  # the summary threads were joined
    files = event_files(logdir)
    assert len(files) == 1, files
    events = read(files[0])
    assert "graph_devices" in events[1]
    assert "w" in events[1]["graph_devices"] and "w_squared" in events[1]["graph_devices"]
    assert events[2].get("session_log") == START and events[2]["step"] == 0
    assert events[-1].get("session_log") == STOP and events[-1]["step"] == 0
    twice = scalars(events, "twice_step")
    assert len(twice) >= 2
    assert all(v == 2.0 * s for s, v in twice)  # one run read the step for both
    for s, v in scalars(events, "loss"):  # only this thread trains; each read is some step's
        k = [k for k in range(s + 2) if v == pytest.approx((4.0 * 0.98 ** k) ** 2, rel=1e-4)]
        assert k, (s, v)
    assert scalars(events, "global_step/sec")


def hook_types(sess):
    return [type(h).__name__ for h in sess._hooks]


def tiny_model():
    gs = tf.train.get_or_create_global_step()
    tf.summary.scalar("g", tf.cast(gs.value(), tf.float32))
    return tf.assign_add(gs, 1)


@pytest.mark.parametrize("kw", [
    dict(save_summaries_steps=0, log_step_count_steps=0),
    dict(save_summaries_steps=None, log_step_count_steps=None),
    dict(save_summaries_secs=0, log_step_count_steps=0),
])
def test_summaries_turned_off_write_no_summary_hooks(tmp_path, kw):
    train = tiny_model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), **kw) as s:
        assert hook_types(s) == ["CheckpointSaverHook"]
        for _ in range(3):
            s.run(train)
    tf.summary.FileWriterCache.clear()
    events = read(event_files(str(tmp_path))[0])
    assert not [e for e in events if e["values"]]  # no summary, no global_step/sec
    assert [e["session_log"] for e in events if "session_log" in e] == [CHECKPOINT, CHECKPOINT]


def mts_hooks(**kw):
    """The hooks MonitoredTrainingSession(**kw) runs, on a fresh graph (a session finalizes
    its graph)."""
    tf.reset_default_graph()
    train = tiny_model()
    with tf.train.MonitoredTrainingSession(**kw) as s:
        s.run(train)
        return s._hooks


def test_default_hooks_and_their_switches(tmp_path):
    d = str(tmp_path)
    hooks = mts_hooks(checkpoint_dir=d)
    assert [type(h).__name__ for h in hooks] == ["StepCounterHook", "SummarySaverHook",
                                                 "CheckpointSaverHook"]
    assert (hooks[0]._timer._every_steps, hooks[0]._timer._every_secs) == (100, None)
    assert (hooks[1]._timer._every_steps, hooks[1]._timer._every_secs) == (100, None)
    # Scaffold.finalize took merge_all() and put it in the SUMMARY_OP collection
    assert tf.get_collection(tf.GraphKeys.SUMMARY_OP)[0].op.type == "MergeSummary"
    # only secs given: steps is None; summary_dir instead of checkpoint_dir
    hooks = mts_hooks(summary_dir=d, save_summaries_secs=7, log_step_count_steps=0)
    assert [type(h).__name__ for h in hooks] == ["SummarySaverHook"]
    assert (hooks[0]._timer._every_steps, hooks[0]._timer._every_secs) == (None, 7)
    assert mts_hooks() == []  # nowhere to write


def test_non_chief_writes_nothing(tmp_path):
    tiny_model()
    ready = tf.constant([], dtype=tf.string)  # nothing left uninitialised: ready at once
    sc = tf.train.Scaffold(ready_op=ready, ready_for_local_init_op=ready)
    with tf.train.MonitoredTrainingSession(is_chief=False, checkpoint_dir=str(tmp_path),
                                           scaffold=sc) as sess:
        assert sess._hooks == []
    assert event_files(str(tmp_path)) == []


def test_scaffold_summary_op_none_without_summaries():
    tf.train.get_or_create_global_step()
    sc = tf.train.Scaffold().finalize()
    assert sc.summary_op is None
    assert tf.get_collection(tf.GraphKeys.SUMMARY_OP) == []


def test_supervisor_without_writer_and_its_loop(tmp_path):
    import threading
    gs = tf.train.get_or_create_global_step()
    train = tf.assign_add(gs, 1)
    tf.summary.scalar("g", tf.cast(gs.value(), tf.float32))
    sv = tf.train.Supervisor(logdir=str(tmp_path), summary_writer=None, save_model_secs=0)
    ran = threading.Event()
    with sv.managed_session() as sess:
        sess.run(train)
        with pytest.raises(RuntimeError) as e:
            sv.summary_computed(sess, sess.run(sv.summary_op))
        assert str(e.value) == "Writing a summary requires a summary writer."
        t = sv.loop(3600, ran.set)  # TensorFlow's LooperThread: the target runs at once
        assert ran.wait(120)
    assert not t.is_alive()  # stopped and joined on leaving managed_session
    assert event_files(str(tmp_path)) == []
