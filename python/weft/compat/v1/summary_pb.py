"""tf.Summary, tf.Event, tf.SessionLog and the messages inside them, serialized with TensorFlow's
field numbers (core/framework/summary.proto, core/util/event.proto, step_stats.proto) without the
protobuf package: enough for programs that build summaries by hand, and for reading event files
back (tf.train.summary_iterator). Proto3 rules: a field at its default is not written, unless it
is a member of a oneof (Summary.Value's value, Event's what), which is written once set."""
import struct

from .graph_io import _fields, _packed_varints, _signed


def _signed_list(packed):
    return [_signed(x) for x in _packed_varints(2, packed)]


class DecodeError(Exception):
    """Bytes that are not the message they were parsed as (protobuf's DecodeError)."""


def _varint_bytes(v):
    v &= 0xFFFFFFFFFFFFFFFF  # negative int64s take ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(num, wt):
    return _varint_bytes(num << 3 | wt)


def _check(name, kind, v):
    ok = {"double": (int, float), "float": (int, float), "int": (int,),
          "string": (str,), "bytes": (bytes, bytearray)}.get(kind)
    if ok and (not isinstance(v, ok) or isinstance(v, bool) and kind != "int"):
        raise TypeError("%r has type %s, but expected one of: %s (field %s)"
                        % (v, type(v).__name__, ", ".join(t.__name__ for t in ok), name))
    return bytes(v) if kind == "bytes" else v


class _Repeated(list):
    """A repeated field: `conv` checks or converts each element; `add` makes a message."""

    def __init__(self, cls, conv, items=()):
        super().__init__()
        self._cls, self._conv = cls, conv
        for x in items:
            self.append(x)

    def add(self, **kw):
        m = self._cls(**kw)
        self.append(m)
        return m

    def append(self, x):
        super().append(self._conv(x))

    def extend(self, xs):
        for x in xs:
            self.append(x)


class _Map(dict):
    """A map<string, message> field: reading a missing key adds an empty message, as protobuf's
    message maps do (features.feature["x"].float_list.value.append(...))."""

    def __init__(self, cls, name, items=()):
        super().__init__()
        self._cls, self._name = cls, name
        for k, v in dict(items).items():
            self[k] = v

    def __missing__(self, key):
        m = self[key] = self._cls()
        return m

    def __setitem__(self, key, v):
        if not isinstance(key, str):
            raise TypeError("%s keys are str, not %s" % (self._name, type(key).__name__))
        if not isinstance(v, self._cls):
            raise TypeError("%s takes %s messages, not %s"
                            % (self._name, self._cls.__name__, type(v).__name__))
        super().__setitem__(key, v)


# packed repeated scalars: struct format and wire type of one element (None: a varint)
_PACKED = {"packed_double": ("<d", 1), "packed_float": ("<f", 5), "packed_int": (None, 0)}


def _int64(x):
    if isinstance(x, bool) or not isinstance(x, int) and not hasattr(x, "__index__"):
        raise TypeError("%r has type %s, but expected one of: int" % (x, type(x).__name__))
    return int(x.__index__())


def _repeated(kind, cls, name):
    if kind == "message":
        def conv(x):
            if not isinstance(x, cls):
                raise TypeError("%s takes %s messages, not %s"
                                % (name, cls.__name__, type(x).__name__))
            return x
    elif kind in ("packed_double", "packed_float"):
        conv = float
    elif kind == "packed_int":
        conv = _int64
    else:
        def conv(x):
            return _check(name, kind, x)
    return _Repeated(cls, conv)


class Message:
    # (number, name, kind, message class or None, repeated, oneof name or None); kind is one of
    # double, float, int, string, bytes, message, packed_double, packed_float, packed_int, map
    # (map<string, message>: the class is the value's)
    _FIELDS = ()

    def __init__(self, **kw):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_set", set())
        for k, v in kw.items():
            if k not in self._by_name():
                raise ValueError('Protocol message %s has no "%s" field.'
                                 % (type(self).__name__, k))
            setattr(self, k, v)

    @classmethod
    def _by_name(cls):
        d = cls.__dict__.get("_NAMES")
        if d is None:
            d = {f[1]: f for f in cls._FIELDS}
            cls._NAMES = d
        return d

    def __getattr__(self, name):
        f = type(self)._by_name().get(name)
        if f is None:
            raise AttributeError(name)
        vals = self._values
        if name not in vals:
            _, _, kind, cls, rep, _ = f
            if kind == "map":
                vals[name] = _Map(cls, name)
            elif rep:
                vals[name] = _repeated(kind, cls, name)
            elif kind == "message":
                vals[name] = cls()
            else:
                return {"string": "", "bytes": b"", "int": 0}.get(kind, 0.0)
        return vals[name]

    def __setattr__(self, name, v):
        f = type(self)._by_name().get(name)
        if f is None:
            raise AttributeError('Protocol message %s has no "%s" field.'
                                 % (type(self).__name__, name))
        _, _, kind, cls, rep, oneof = f
        if kind == "map":
            v = _Map(cls, name, v)
        elif rep:
            items, v = v, _repeated(kind, cls, name)
            v.extend(items)
        elif kind == "message":
            if not isinstance(v, cls):
                raise TypeError("%s must be a %s, not %s" % (name, cls.__name__,
                                                               type(v).__name__))
        else:
            v = _check(name, kind, v)
        if oneof:
            for g in self._FIELDS:
                if g[5] == oneof and g[1] != name:
                    self._values.pop(g[1], None)
                    self._set.discard(g[1])
        self._values[name] = v
        self._set.add(name)

    def HasField(self, name):  # noqa: N802 -- protobuf's name
        f = type(self)._by_name().get(name)
        if f is None or f[4]:
            raise ValueError('Protocol message has no singular "%s" field.' % name)
        if name in self._set:
            return True
        v = self._values.get(name)
        return isinstance(v, Message) and v.ByteSize() > 0

    def WhichOneof(self, group):  # noqa: N802
        for f in self._FIELDS:
            if f[5] == group and self.HasField(f[1]):
                return f[1]
        return None

    def SerializeToString(self):  # noqa: N802
        out = []
        for num, name, kind, cls, rep, oneof in self._FIELDS:
            if name not in self._values:
                continue
            v = self._values[name]
            present = oneof is not None and name in self._set
            if kind == "map":
                for k, m in v.items():
                    key, body = k.encode(), m.SerializeToString()
                    entry = (_key(1, 2) + _varint_bytes(len(key)) + key + _key(2, 2)
                             + _varint_bytes(len(body)) + body)
                    out.append(_key(num, 2) + _varint_bytes(len(entry)) + entry)
            elif rep and kind in _PACKED:
                if v:
                    fmt = _PACKED[kind][0]
                    body = b"".join(_varint_bytes(x) if fmt is None else struct.pack(fmt, x)
                                    for x in v)
                    out.append(_key(num, 2) + _varint_bytes(len(body)) + body)
            elif rep:
                for m in v:
                    body = m.SerializeToString() if kind == "message" else m
                    out.append(_key(num, 2) + _varint_bytes(len(body)) + body)
            elif kind == "message":
                body = v.SerializeToString()
                if body or present or name in self._set:
                    out.append(_key(num, 2) + _varint_bytes(len(body)) + body)
            elif not v and not present:
                continue
            elif kind == "double":
                out.append(_key(num, 1) + struct.pack("<d", v))
            elif kind == "float":
                out.append(_key(num, 5) + struct.pack("<f", v))
            elif kind == "int":
                out.append(_key(num, 0) + _varint_bytes(v))
            else:
                body = v.encode() if kind == "string" else v
                out.append(_key(num, 2) + _varint_bytes(len(body)) + body)
        return b"".join(out)

    def ByteSize(self):  # noqa: N802
        return len(self.SerializeToString())

    def ParseFromString(self, data):  # noqa: N802
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_set", set())
        self.MergeFromString(data)
        return len(data)

    def MergeFromString(self, data):  # noqa: N802
        by_num = {f[0]: f for f in self._FIELDS}
        try:
            for num, wt, v in _fields(bytes(data)):
                f = by_num.get(num)
                if f is None:
                    continue  # an unknown field, as protobuf skips it
                _, name, kind, cls, rep, _ = f
                if kind == "map" and wt == 2:
                    entry = dict((n, x) for n, _, x in _fields(v))
                    getattr(self, name)[entry.get(1, b"").decode("utf-8")] = \
                        cls.FromString(entry.get(2, b""))
                elif kind in _PACKED and wt == 2:
                    fmt = _PACKED[kind][0]
                    if fmt is None:
                        getattr(self, name).extend(_signed_list(v))
                    elif len(v) % struct.calcsize(fmt):
                        raise ValueError("packed %s of %d bytes" % (kind, len(v)))
                    else:
                        getattr(self, name).extend(x for (x,) in struct.iter_unpack(fmt, v))
                elif kind in _PACKED and wt == _PACKED[kind][1]:
                    fmt = _PACKED[kind][0]
                    getattr(self, name).append(_signed(v) if fmt is None
                                               else struct.unpack(fmt, v)[0])
                elif kind == "message" and wt == 2:
                    m = cls.FromString(v)
                    if rep:
                        getattr(self, name).append(m)
                    else:
                        setattr(self, name, m)
                elif kind == "double" and wt == 1:
                    setattr(self, name, struct.unpack("<d", v)[0])
                elif kind == "float" and wt == 5:
                    setattr(self, name, struct.unpack("<f", v)[0])
                elif kind == "int" and wt == 0:
                    setattr(self, name, _signed(v))
                elif rep and kind == "bytes" and wt == 2:
                    getattr(self, name).append(v)
                elif kind in ("string", "bytes") and wt == 2:
                    setattr(self, name, v.decode("utf-8") if kind == "string" else v)
                else:
                    raise ValueError("field %d (%s) has wire type %d" % (num, name, wt))
        except (ValueError, UnicodeDecodeError) as e:
            raise DecodeError("Error parsing message %s: %s" % (type(self).__name__, e)) from None

    @classmethod
    def FromString(cls, data):  # noqa: N802
        m = cls()
        m.MergeFromString(data)
        return m

    def __eq__(self, other):
        return type(self) is type(other) and self.SerializeToString() == other.SerializeToString()

    def __repr__(self):
        parts = ["%s=%r" % (f[1], self._values[f[1]]) for f in self._FIELDS if f[1] in self._values]
        return "%s(%s)" % (type(self).__name__, ", ".join(parts))


def _f(num, name, kind, cls=None, rep=False, oneof=None):
    return (num, name, kind, cls, rep, oneof)


class HistogramProto(Message):
    _FIELDS = (_f(1, "min", "double"), _f(2, "max", "double"), _f(3, "num", "double"),
               _f(4, "sum", "double"), _f(5, "sum_squares", "double"),
               _f(6, "bucket_limit", "packed_double", rep=True),
               _f(7, "bucket", "packed_double", rep=True))


class SummaryDescription(Message):
    _FIELDS = (_f(1, "type_hint", "string"),)


class SummaryMetadata(Message):
    class PluginData(Message):
        _FIELDS = (_f(1, "plugin_name", "string"), _f(2, "content", "bytes"))

    _FIELDS = (_f(1, "plugin_data", "message", PluginData), _f(2, "display_name", "string"),
               _f(3, "summary_description", "string"))


class TensorProto(Message):
    """The tensor of a tensor summary: its bytes are kept as they are (dtype 1, shape 2,
    tensor_content 4, string_val 8 are the fields weft's TensorSummaryV2 writes)."""
    _FIELDS = (_f(1, "dtype", "int"), _f(2, "tensor_shape", "bytes"),
               _f(4, "tensor_content", "bytes"), _f(8, "string_val", "bytes", rep=True))


class Summary(Message):
    class Image(Message):
        _FIELDS = (_f(1, "height", "int"), _f(2, "width", "int"), _f(3, "colorspace", "int"),
                   _f(4, "encoded_image_string", "bytes"))

    class Audio(Message):
        _FIELDS = (_f(1, "sample_rate", "float"), _f(2, "num_channels", "int"),
                   _f(3, "length_frames", "int"), _f(4, "encoded_audio_string", "bytes"),
                   _f(5, "content_type", "string"))

    class Value(Message):
        pass

    _FIELDS = ()


Summary.Value._FIELDS = (
    _f(1, "tag", "string"), _f(2, "simple_value", "float", oneof="value"),
    _f(3, "obsolete_old_style_histogram", "bytes", oneof="value"),
    _f(4, "image", "message", Summary.Image, oneof="value"),
    _f(5, "histo", "message", HistogramProto, oneof="value"),
    _f(6, "audio", "message", Summary.Audio, oneof="value"),
    _f(7, "node_name", "string"), _f(8, "tensor", "message", TensorProto, oneof="value"),
    _f(9, "metadata", "message", SummaryMetadata))
Summary._FIELDS = (_f(1, "value", "message", Summary.Value, rep=True),)


class SessionLog(Message):
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    _FIELDS = (_f(1, "status", "int"), _f(2, "checkpoint_path", "string"),
               _f(3, "msg", "string"))


class LogMessage(Message):
    UNKNOWN, DEBUGGING, INFO, WARN, ERROR, FATAL = 0, 10, 20, 30, 40, 50
    _FIELDS = (_f(1, "level", "int"), _f(2, "message", "string"))


class TaggedRunMetadata(Message):
    _FIELDS = (_f(1, "tag", "string"), _f(2, "run_metadata", "bytes"))


class Event(Message):
    _FIELDS = (_f(1, "wall_time", "double"), _f(2, "step", "int"),
               _f(3, "file_version", "string", oneof="what"),
               _f(4, "graph_def", "bytes", oneof="what"),
               _f(5, "summary", "message", Summary, oneof="what"),
               _f(6, "log_message", "message", LogMessage, oneof="what"),
               _f(7, "session_log", "message", SessionLog, oneof="what"),
               _f(8, "tagged_run_metadata", "message", TaggedRunMetadata, oneof="what"),
               _f(9, "meta_graph_def", "bytes", oneof="what"))


# step_stats.proto / config.proto: what add_run_metadata writes of a traced run
class _NodeExecStats(Message):
    _FIELDS = (_f(1, "node_name", "string"), _f(2, "all_start_micros", "int"),
               _f(3, "op_start_rel_micros", "int"), _f(4, "op_end_rel_micros", "int"),
               _f(5, "all_end_rel_micros", "int"), _f(8, "timeline_label", "string"),
               _f(10, "thread_id", "int"))


class _DeviceStepStats(Message):
    _FIELDS = (_f(1, "device", "string"), _f(2, "node_stats", "message", _NodeExecStats, True))


class _StepStats(Message):
    _FIELDS = (_f(1, "dev_stats", "message", _DeviceStepStats, True),)


class _RunMetadata(Message):
    _FIELDS = (_f(1, "step_stats", "message", _StepStats),)


def run_metadata_bytes(run_metadata):
    """A RunMetadata as TensorFlow serializes it: bytes as they are, or compat's
    session.RunMetadata (step_stats of a traced run) encoded with step_stats.proto's numbers."""
    if isinstance(run_metadata, (bytes, bytearray)):
        return bytes(run_metadata)
    stats = getattr(run_metadata, "step_stats", None)
    if stats is None:
        raise TypeError("run_metadata must be a tf.RunMetadata or its serialized bytes, not %s"
                        % type(run_metadata).__name__)
    out = _RunMetadata()
    for dev in stats.dev_stats:
        d = out.step_stats.dev_stats.add(device=dev.device)
        for n in dev.node_stats:
            d.node_stats.add(node_name=n.node_name, all_start_micros=int(n.all_start_micros),
                             op_start_rel_micros=int(n.op_start_rel_micros),
                             op_end_rel_micros=int(n.op_end_rel_micros),
                             all_end_rel_micros=int(n.all_end_rel_micros),
                             timeline_label=n.timeline_label, thread_id=int(n.thread_id))
    return out.SerializeToString()
