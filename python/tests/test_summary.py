"""tf.summary, FileWriter and summary_iterator as a TensorFlow 1.x program uses them: what the
program writes is read back by tests/read_events.py, a reader written without weft (standard
library: TFRecord framing, masked CRC-32C, protobuf wire format with TensorFlow's field numbers),
and compared with what the program computed; error paths with their exact classes and texts."""
import importlib.util
import json
import logging
import os
import pathlib
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import weft.compat.v1 as tf

READER = pathlib.Path(__file__).resolve().parents[2] / "tests" / "read_events.py"
_spec = importlib.util.spec_from_file_location("read_events", READER)
rd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rd)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.summary.FileWriterCache.clear()


def event_file(d):
    files = [f for f in os.listdir(d) if f.startswith("events.out.tfevents.")]
    assert len(files) == 1, files
    return os.path.join(d, files[0])


def read_independently(path):
    """read_events.py in its own process (every record's crcs checked there), and the raw
    records for the fields it does not summarise."""
    out = subprocess.run([sys.executable, str(READER), path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    parsed = json.loads(out.stdout)
    data = open(path, "rb").read()
    records, off = [], 0
    while off < len(data):
        (n,) = struct.unpack("<Q", data[off:off + 8])
        body = data[off + 12:off + 12 + n]
        assert struct.unpack("<I", data[off + 12 + n:off + 16 + n])[0] == rd.masked(body)
        records.append({num: v for num, _, v in rd.fields(body)})
        off += 16 + n
    assert len(records) == parsed["records"]
    return parsed, records


def values_of(summary_bytes):
    """{tag: {field number: value}} of a Summary's values."""
    out = {}
    for num, _, v in rd.fields(summary_bytes):
        assert num == 1
        fs = {}
        for n2, _, v2 in rd.fields(v):
            fs[n2] = v2
        out[fs[1].decode()] = fs
    return out


def png_pixels(png):
    """Decodes an 8-bit RGB PNG without weft (zlib + PNG's five row filters)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos:pos + 4])
        kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", png[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
    assert depth == 8 and color == 2
    raw, stride, bpp = zlib.decompress(idat), w * 3, 3
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return np.frombuffer(b"".join(rows), np.uint8).reshape(h, w, 3)


def test_program_writes_summaries_graph_and_run_metadata(tmp_path):
    rng = np.random.RandomState(7)
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.device("/cpu:0"):
        with tf.name_scope("train"):
            loss = tf.reduce_mean(tf.square(x))
            tf.summary.scalar("loss", loss)
        tf.summary.histogram("inputs", x)
        pixels = rng.randint(0, 256, size=(2, 3, 5, 3)).astype(np.uint8)
        tf.summary.image("picture", tf.constant(pixels), max_outputs=2)
        tf.summary.text("note", tf.constant("hello weft"))
    merged = tf.summary.merge_all()
    assert merged.op.name == "Merge/MergeSummary"
    assert [t.op.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)] == [
        "train/loss", "inputs", "picture", "note"]

    feeds, losses = [], []
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(tmp_path), flush_secs=1)
        assert writer.get_logdir() == str(tmp_path)
        for step in range(4):
            xv = rng.normal(size=7).astype(np.float32)
            s, lv = sess.run([merged, loss], {x: xv})
            writer.add_summary(s, step)
            feeds.append(xv)
            losses.append(lv)
        md = tf.RunMetadata()
        sess.run(merged, {x: feeds[0]}, run_metadata=md,
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
        writer.add_run_metadata(md, "step4", 4)
        writer.add_graph(sess.graph)
        writer.close()

    parsed, records = read_independently(event_file(str(tmp_path)))
    assert parsed["file_version"] == "brain.Event:2"
    assert parsed["records"] == 1 + 4 + 1 + 1
    summaries = [e for e in parsed["events"] if e["values"]]
    assert [e["step"] for e in summaries] == [0, 1, 2, 3]
    for e, xv, lv in zip(summaries, feeds, losses):
        values = dict((t, v) for t, v in e["values"])
        assert values["train/loss"] == lv  # the float the program fetched, bit for bit
        assert values["train/loss"] == pytest.approx(float(np.mean(xv.astype(np.float64) ** 2)),
                                                     rel=1e-6)
    for rec, xv in zip(records[1:5], feeds):
        vals = values_of(rec[5])
        assert sorted(vals) == ["inputs", "note", "picture/image/0", "picture/image/1",
                                "train/loss"]
        histo = {n: v for n, _, v in rd.fields(vals["inputs"][5])}
        dbl = lambda n: struct.unpack("<d", histo[n])[0]  # noqa: E731
        assert (dbl(1), dbl(2), dbl(3)) == (float(xv.min()), float(xv.max()), 7.0)
        assert dbl(4) == pytest.approx(float(np.sum(xv.astype(np.float64))), rel=1e-12)
        assert dbl(5) == pytest.approx(float(np.sum(xv.astype(np.float64) ** 2)), rel=1e-12)
        counts = struct.unpack("<%dd" % (len(histo[7]) // 8), histo[7])
        assert sum(counts) == 7.0
        for i in range(2):
            img = {n: v for n, _, v in rd.fields(vals["picture/image/%d" % i][4])}
            assert (img[1], img[2], img[3]) == (3, 5, 3)
            assert np.array_equal(png_pixels(img[4]), pixels[i])
        text = vals["note"]
        meta = {n: v for n, _, v in rd.fields(text[9])}
        assert {n: v for n, _, v in rd.fields(meta[1])}[1] == b"text"
        tensor = {n: v for n, _, v in rd.fields(text[8])}
        assert tensor[1] == 7 and tensor[8] == b"hello weft"  # DT_STRING, string_val

    # tagged_run_metadata{tag, run_metadata{step_stats{dev_stats{device, node_stats}}}}
    trm = {n: v for n, _, v in rd.fields(records[5][8])}
    assert records[5][2] == 4 and trm[1] == b"step4"
    step_stats = {n: v for n, _, v in rd.fields(trm[2])}[1]
    nodes = {}
    for n, _, dev in rd.fields(step_stats):
        d = {}
        for n2, _, v2 in rd.fields(dev):
            d.setdefault(n2, []).append(v2)
        for ns in d[2]:
            f = {n3: v3 for n3, _, v3 in rd.fields(ns)}
            nodes[f[1].decode()] = (d[1][0].decode(), f[8].decode())
    assert nodes["train/loss"][0].endswith("/device:CPU:0")
    assert nodes["train/loss"][1].startswith("train/loss = ScalarSummary(")

    graph = parsed["events"][6]["graph_devices"]
    assert graph["train/loss"] == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert graph["Merge/MergeSummary"].endswith("/device:CPU:0")
    assert len(graph) == len(sess.graph.get_operations())


def test_summary_objects_serialize_with_tensorflows_field_numbers(tmp_path):
    s = tf.Summary(value=[tf.Summary.Value(tag="a", simple_value=0.0)])
    # Summary.value 1 { tag 1 "a", simple_value 2 (fixed32): 0.0 written, a oneof member }
    assert s.SerializeToString() == b"\n\x08\n\x01a\x15\x00\x00\x00\x00"
    back = tf.Summary.FromString(s.SerializeToString())
    assert back.value[0].tag == "a" and back.value[0].WhichOneof("value") == "simple_value"
    s.value.add(tag="b", simple_value=2.5)
    ev = tf.Event(step=3, wall_time=1.5, summary=s)
    data = ev.SerializeToString()
    f = {n: v for n, _, v in rd.fields(data)}
    assert struct.unpack("<d", f[1])[0] == 1.5 and f[2] == 3
    assert [t for t, _ in rd.summary_values(f[5])] == ["a", "b"]
    assert tf.Event.FromString(data) == ev

    w = tf.summary.FileWriter(str(tmp_path), filename_suffix=".v1")
    w.add_summary(s, 10)
    w.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 10)
    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="c", simple_value=-1.0)]).
                  SerializeToString(), 11)
    w.close()
    w.add_summary(s, 12)  # after close: dropped, as TensorFlow drops it
    path = event_file(str(tmp_path))
    assert path.endswith(".v1")
    events = list(tf.train.summary_iterator(path))
    assert [e.WhichOneof("what") for e in events] == [
        "file_version", "summary", "session_log", "summary"]
    assert events[0].file_version == "brain.Event:2"
    assert [(v.tag, v.simple_value) for v in events[1].summary.value] == [("a", 0.0), ("b", 2.5)]
    assert events[2].step == 10 and events[2].session_log.status == tf.SessionLog.START
    assert events[3].step == 11 and events[3].summary.value[0].simple_value == -1.0

    w.reopen()
    w.add_summary(s, 13)
    w.flush()
    w.close()
    files = sorted(os.listdir(str(tmp_path)))
    assert len(files) == 2
    parsed, _ = read_independently(os.path.join(str(tmp_path), [
        f for f in files if os.path.join(str(tmp_path), f) != path][0]))
    assert [e["step"] for e in parsed["events"]] == [0, 13]


def test_graph_written_at_creation_keeps_requested_devices(tmp_path):
    with tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        a = tf.constant(1.0, name="a")
    tf.identity(a, name="b")
    tf.summary.FileWriter(str(tmp_path), tf.get_default_graph()).close()
    parsed, _ = read_independently(event_file(str(tmp_path)))
    assert parsed["events"][1]["graph_devices"] == {
        "a": "/job:localhost/replica:0/task:0/device:CPU:0", "b": ""}
    tf.summary.FileWriterCache.clear()
    gd = tf.get_default_graph().as_graph_def()
    d2 = tmp_path / "def"
    tf.summary.FileWriter(str(d2), graph_def=gd).close()
    parsed, _ = read_independently(event_file(str(d2)))
    assert sorted(parsed["events"][1]["graph_devices"]) == ["a", "b"]


def run_hooks(hooks, sess, train_op, steps):
    """A plain training loop calling the hooks as a MonitoredSession does."""
    import collections
    values = collections.namedtuple("SessionRunValues", ["results", "options", "run_metadata"])

    class Context:
        def __init__(self):
            self.session = sess

    for h in hooks:
        h.begin()
    for _ in range(steps):
        ctx = Context()
        args = [h.before_run(ctx) for h in hooks]
        out = sess.run([train_op] + [a.fetches for a in args])
        for h, r in zip(hooks, out[1:]):
            h.after_run(ctx, values(r, None, None))
    for h in hooks:
        h.end(sess)


def test_summary_saver_and_step_counter_hooks(tmp_path, caplog):
    gs = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False,
                     collections=[tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.GLOBAL_STEP])
    train_op = tf.assign_add(gs, 1)
    tf.summary.scalar("level", tf.constant(2.5))
    merged = tf.summary.merge_all()
    saver = tf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path), summary_op=merged)
    counter = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
    with tf.Session() as sess, caplog.at_level(logging.INFO, logger="tensorflow"):
        sess.run(tf.global_variables_initializer())
        run_hooks([saver, counter], sess, train_op, 6)
    # both hooks share the FileWriterCache's writer of the folder (one file, graph first)
    parsed, _ = read_independently(event_file(str(tmp_path)))
    got = [(e["step"], e.get("session_log"), e["values"]) for e in parsed["events"][1:]]
    assert "graph_devices" in parsed["events"][1]
    assert got[1] == (1, 1, [])  # SessionLog START at the first step
    level = [s for s, _, v in got if v and v[0][0] == "level"]
    rate = [(s, v[0][1]) for s, _, v in got if v and v[0][0] == "global_step/sec"]
    assert level == [1, 3, 5]  # TensorFlow's SecondOrStepTimer: first step, then every 2
    assert [s for s, _ in rate] == [3, 5] and all(r > 0 for _, r in rate)
    assert [v for _, _, v in got if v and v[0][0] == "level"][0] == [["level", 2.5]]
    assert sum("global_step/sec: " in r.getMessage() for r in caplog.records) == 2


def test_hook_arguments_and_global_step_errors():
    with pytest.raises(ValueError) as e:
        tf.train.SummarySaverHook(save_steps=1)
    assert str(e.value) == "Exactly one of scaffold or summary_op must be provided."
    with pytest.raises(ValueError) as e:
        tf.train.StepCounterHook(every_n_steps=None)
    assert str(e.value) == "exactly one of every_n_steps and every_n_secs should be provided."
    h = tf.train.StepCounterHook(every_n_steps=1)
    with pytest.raises(RuntimeError) as e:
        h.begin()
    assert str(e.value) == "Global step should be created to use StepCounterHook."


def test_summary_errors(tmp_path, caplog):
    with pytest.raises(ValueError) as e:
        tf.summary.scalar("v", tf.constant([1.0, 2.0]))
    assert str(e.value) == "tf.summary.scalar('v') takes a scalar, not a tensor of shape (2,)"
    with pytest.raises(TypeError) as e:
        tf.summary.scalar(3, 1.0)
    assert str(e.value) == "summary name must be a string, not int"
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        bad = tf.summary.scalar("bad name!", 1.0)
    assert bad.op.name == "bad_name_"
    assert "Summary name bad name! is illegal; using bad_name_ instead." in caplog.text
    with pytest.raises(ValueError) as e:
        tf.summary.text("t", tf.constant(1.0, name="num"))
    assert str(e.value) == "Expected tensor num:0 to have dtype string, got float32"
    with pytest.raises(TypeError) as e:
        tf.Summary.Value(tag=3)
    assert str(e.value) == "3 has type int, but expected one of: str (field tag)"
    with pytest.raises(ValueError) as e:
        tf.Summary(nope=1)
    assert str(e.value) == 'Protocol message Summary has no "nope" field.'

    p = tf.placeholder(tf.float32, None, name="p")
    s = tf.summary.scalar("x", p)
    h = tf.summary.histogram("weights", p)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(s, {p: [1.0, 2.0, 3.0]})
        assert e.value.message == (
            "node 'x': tags and values are not the same shape: [] != [3] (tag 'x') "
            "(op ScalarSummary on /job:localhost/replica:0/task:0/device:CPU:0)")
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            sess.run(h, {p: [1.0, np.nan]})
        assert e.value.message == ("Nan in summary histogram for: weights "
                                   "(op HistogramSummary on "
                                   "/job:localhost/replica:0/task:0/device:CPU:0)")

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(tf.errors.InternalError) as e:
        tf.summary.FileWriter(str(blocker / "logs"))
    assert e.value.message == ("Event writer: cannot create the folder %s: Not a directory"
                               % (blocker / "logs"))
    with pytest.raises(tf.errors.NotFoundError) as e:
        list(tf.train.summary_iterator(str(tmp_path / "none")))
    assert e.value.message == "Event reader: cannot open %s: No such file or directory" % (
        tmp_path / "none")

    w = tf.summary.FileWriter(str(tmp_path / "ok"))
    with pytest.raises(TypeError) as e:
        w.add_summary(3.0)
    assert str(e.value) == "add_summary takes a tf.Summary or its serialized bytes, not float"
    with pytest.raises(tf.summary.DecodeError) as e:
        w.add_summary(b"\x0a\x09")  # Summary.value said to be 9 bytes long, none there
    assert str(e.value) == ("Error parsing message Summary: protobuf field 1 says 9 bytes, "
                            "0 left")
    w.add_summary(tf.Summary(value=[tf.Summary.Value(tag="z", simple_value=1.0)]), 1)
    w.close()
    path = event_file(str(tmp_path / "ok"))
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 0xFF  # the last record's data crc
    open(path, "wb").write(bytes(data))
    with pytest.raises(tf.errors.DataLossError) as e:
        list(tf.train.summary_iterator(path))
    assert e.value.message.startswith("Event reader: %s: corrupted record at offset " % path)


def test_tensorboard_md_python_example_runs(tmp_path):
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "tensorboard.md").read_text()
    code = doc.split("## Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace("/tmp/py-logs", str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "0 file_version []",
        "0 summary ['train/loss', 'inputs', 'picture/image/0', 'note']",
        "1 summary ['train/loss', 'inputs', 'picture/image/0', 'note']",
        "2 summary ['train/loss', 'inputs', 'picture/image/0', 'note']",
        "3 tagged_run_metadata []", "0 graph_def []", "3 summary ['lr']"]
    parsed, _ = read_independently(event_file(str(tmp_path)))
    last = [e["values"][0] for e in parsed["events"] if e["values"]][-1]
    assert last == ["lr", pytest.approx(0.1)]
