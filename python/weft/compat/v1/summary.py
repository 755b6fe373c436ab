"""tf.summary: the summary ops (ScalarSummary, HistogramSummary, ImageSummary, TensorSummaryV2,
MergeSummary) with TensorFlow's tags and collections, FileWriter and FileWriterCache over the
core's event writer (weft._weft.EventWriter), and tf.train.summary_iterator over its reader
(docs/tensorboard.md, "Python")."""
import logging
import re
import threading
import time

from weft import _weft
from . import framework as _fw
from . import dtypes as _dtypes
from .framework import GraphKeys
from .summary_pb import (Summary, SummaryDescription, SummaryMetadata, Event,  # noqa: F401
                         SessionLog, TaggedRunMetadata, HistogramProto, LogMessage, DecodeError,
                         run_metadata_bytes)

_log = logging.getLogger("tensorflow")
_INVALID_TAG_CHARS = re.compile(r"[^-/\w\.]")


def _clean_tag(name):
    """TensorFlow's summary_op_util.clean_tag: characters a tag may not hold become '_' and a
    leading '/' goes, with a log line saying so."""
    if not isinstance(name, str):
        raise TypeError("summary name must be a string, not %s" % type(name).__name__)
    if not name:
        raise ValueError("summary name must not be empty")
    new = _INVALID_TAG_CHARS.sub("_", name).lstrip("/")
    if new != name:
        _log.info("Summary name %s is illegal; using %s instead.", name, new)
    return new


def _summary_op(op_type, name, family, inputs, attrs, collections, default_collections):
    """Builds op_type under name_scope(family/name): the op is named by its scope, and that name
    is the tag (TensorFlow's summary_scope), so a scope around the call prefixes the tag. inputs
    is a function of the tag tensor that returns the op's inputs."""
    name = _clean_tag(name)
    scope_name = name if family is None else _clean_tag(family) + "/" + name
    g = _fw.get_default_graph()
    with g.name_scope(scope_name) as scope:
        tag = scope.rstrip("/")
        ins = inputs(_fw.constant(tag, dtype=_dtypes.string, name="tag"))
        g = _fw._graph_of([t for t in ins if isinstance(t, _fw.Tensor)])
        op = g._create_op(op_type, ins, attrs(ins), scope)
    out = op.outputs[0]
    for c in (default_collections if collections is None else collections):
        g.add_to_collection(c, out)
    return out


def _typed(t):
    return [("T", "type", t.dtype.base_dtype.as_datatype_enum)]


def scalar(name, tensor, collections=None, family=None):
    """A Summary with one simple_value; tensor must be a real-number scalar."""
    t = _fw.convert_to_tensor(tensor)
    dims = t.shape.ndims
    if dims is not None and dims != 0:
        raise ValueError("tf.summary.scalar('%s') takes a scalar, not a tensor of shape %s"
                         % (name, t.shape))
    return _summary_op("ScalarSummary", name, family, lambda tag: [tag, t],
                       lambda ins: _typed(t), collections, [GraphKeys.SUMMARIES])


def histogram(name, values, collections=None, family=None):
    """A HistogramProto of values with TensorFlow's default buckets."""
    t = _fw.convert_to_tensor(values)
    return _summary_op("HistogramSummary", name, family, lambda tag: [tag, t],
                       lambda ins: _typed(t), collections, [GraphKeys.SUMMARIES])


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """The first max_outputs images of a [batch, height, width, channels] tensor as PNG, tagged
    NAME/image/N (NAME/image when max_outputs is 1)."""
    t = _fw.convert_to_tensor(tensor)
    return _summary_op("ImageSummary", name, family, lambda tag: [tag, t],
                       lambda ins: _typed(t) + [("max_images", "int", int(max_outputs))],
                       collections, [GraphKeys.SUMMARIES])


def _metadata_tensor(metadata):
    return _fw.constant(metadata.SerializeToString(), dtype=_dtypes.string,
                        name="summary_metadata")


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """TensorSummaryV2: the tensor itself as a TensorProto, with its metadata."""
    t = _fw.convert_to_tensor(tensor)
    md = summary_metadata if summary_metadata is not None else SummaryMetadata()
    if display_name is not None:
        md.display_name = display_name
    if summary_description is not None:
        md.summary_description = summary_description
    return _summary_op("TensorSummaryV2", name, family,
                       lambda tag: [tag, t, _metadata_tensor(md)],
                       lambda ins: _typed(t), collections, [GraphKeys.SUMMARIES])


def text(name, tensor, collections=None):
    """A string tensor for TensorBoard's text plugin (TensorSummaryV2, plugin_name "text")."""
    t = _fw.convert_to_tensor(tensor)
    if t.dtype.base_dtype != _dtypes.string:
        raise ValueError("Expected tensor %s to have dtype string, got %s"
                         % (t.name, t.dtype.name))
    md = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return tensor_summary(name, t, collections=collections, summary_metadata=md)


def merge(inputs, collections=None, name=None):
    """MergeSummary of serialized Summary tensors: their values, in order."""
    ins = [_fw.convert_to_tensor(x) for x in inputs]
    if not ins:
        raise ValueError("tf.summary.merge needs at least one summary tensor")
    g = _fw._graph_of(ins)
    with g.as_default(), g.name_scope(name or "Merge"):  # TensorFlow's "Merge/MergeSummary"
        op = g._create_op("MergeSummary", [ins], [("N", "int", len(ins))], "MergeSummary")
    out = op.outputs[0]
    for c in collections or []:
        g.add_to_collection(c, out)
    return out


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """MergeSummary of every summary in collection `key` (under `scope`), or None when there is
    none."""
    found = _fw.get_collection(key, scope)
    return merge(found, name=name) if found else None


def get_summary_description(node_def):
    raise NotImplementedError("get_summary_description is not supported by weft: read the "
                              "summary_metadata input of the TensorSummaryV2 node instead")


# ---------------------------------------------------------------------------------------------
# Writing and reading event files

class FileWriter:
    """Writes Event records to a new events.out.tfevents.SECS.HOST[SUFFIX] in logdir. A graph
    given here is written at once; a session given (or the default session when its graph is
    `graph`) makes each node's device the one it was placed on."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        if not isinstance(logdir, str) or not logdir:
            raise ValueError("FileWriter: logdir must be a non-empty string, not %r" % (logdir,))
        if max_queue < 1:
            raise ValueError("FileWriter: max_queue must be at least 1, not %r" % (max_queue,))
        self._logdir, self._max_queue, self._flush_secs = logdir, max_queue, flush_secs
        self._suffix, self._session = filename_suffix, session
        self._lock = threading.Lock()
        self._w = None
        self._open()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self):
        w = _weft.EventWriter(self._logdir, self._suffix)
        w.set_flush_secs(float(self._flush_secs))
        self._w, self._pending, self._closed = w, 0, False

    def get_logdir(self):
        return self._logdir

    def _path(self):
        return self._w.path

    def add_event(self, event):
        if not isinstance(event, Event):
            raise TypeError("add_event takes a tf.Event, not %s" % type(event).__name__)
        self._write(event.SerializeToString())

    def _write(self, data):
        with self._lock:
            if self._closed:
                return  # TensorFlow drops what is added after close()
            self._w.add_event(data)
            # max_queue: TensorFlow's queue of unwritten events; weft appends each at once and
            # flushes when that many are buffered
            self._pending += 1
            if self._pending >= self._max_queue:
                self._w.flush()
                self._pending = 0

    def _add(self, global_step, **what):
        ev = Event(wall_time=time.time(), **what)
        if global_step is not None:
            ev.step = int(global_step)
        self._write(ev.SerializeToString())

    def add_summary(self, summary, global_step=None):
        """summary: a Summary object or a serialized Summary (a summary op's output)."""
        if isinstance(summary, (bytes, bytearray)):
            summary = Summary.FromString(bytes(summary))
        elif not isinstance(summary, Summary):
            raise TypeError("add_summary takes a tf.Summary or its serialized bytes, not %s"
                            % type(summary).__name__)
        self._add(global_step, summary=summary)

    def add_session_log(self, session_log, global_step=None):
        if not isinstance(session_log, SessionLog):
            raise TypeError("add_session_log takes a tf.SessionLog, not %s"
                            % type(session_log).__name__)
        self._add(global_step, session_log=session_log)

    def add_graph(self, graph, global_step=None, graph_def=None):
        """graph: a tf.Graph (written with each node's device: the placed one where the
        session has run it) or a GraphDef; graph_def= a GraphDef or its bytes."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if isinstance(graph, _fw.Graph):
            sess = self._session
            if sess is None:
                from .session import get_default_session
                d = get_default_session()
                sess = d if d is not None and d.graph is graph else None
            self._add_placed_graph(graph, sess)
            return
        gd = graph if graph is not None else graph_def
        if isinstance(gd, (bytes, bytearray)):
            data = bytes(gd)
        elif hasattr(gd, "SerializeToString"):
            data = gd.SerializeToString()
        else:
            raise TypeError("add_graph takes a tf.Graph or a GraphDef, not %s"
                            % type(gd).__name__)
        self._add(global_step, graph_def=data)

    def _add_placed_graph(self, graph, session):
        """graph with each node's device where session (a tf.Session, or None) placed it: the
        training hooks write it once a step has run."""
        with self._lock:
            if not self._closed:
                self._w.add_graph(graph._g, getattr(session, "_s", None))
                self._pending += 1

    def add_meta_graph(self, meta_graph_def, global_step=None):
        data = meta_graph_def if isinstance(meta_graph_def, (bytes, bytearray)) else \
            meta_graph_def.SerializeToString()
        self._add(global_step, meta_graph_def=bytes(data))

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """The step stats of a traced run (tf.RunMetadata, or its bytes) under tag: TensorBoard
        shows each node's compute time. A tag used twice in one file is a ValueError."""
        if not isinstance(tag, str) or not tag:
            raise ValueError("add_run_metadata: tag must be a non-empty string, not %r" % (tag,))
        data = run_metadata_bytes(run_metadata)
        self._add(global_step, tagged_run_metadata=TaggedRunMetadata(tag=tag, run_metadata=data))

    def flush(self):
        with self._lock:
            if not self._closed:
                self._w.flush()
                self._pending = 0

    def close(self):
        with self._lock:
            if not self._closed:
                self._w.close()
                self._closed = True

    def reopen(self):
        """After close(): a new event file in the same folder."""
        with self._lock:
            if self._closed:
                self._open()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class FileWriterCache:
    """One FileWriter per logdir, shared by the hooks of a process (created with the default
    graph)."""
    _cache = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir):
        with FileWriterCache._lock:
            w = FileWriterCache._cache.get(logdir)
            if w is None:
                w = FileWriter(logdir, graph=_fw.get_default_graph())
                FileWriterCache._cache[logdir] = w
            return w

    @staticmethod
    def clear():
        with FileWriterCache._lock:
            for w in FileWriterCache._cache.values():
                w.close()
            FileWriterCache._cache.clear()


def summary_iterator(path):
    """The Events of an event file, in order, each record's crcs checked by the core's reader
    (a corrupt record raises DataLossError naming the file and offset)."""
    r = _weft.EventReader(path)
    while True:
        data = r.next()
        if data is None:
            return
        yield Event.FromString(data)
