"""GraphDefs in Python without the protobuf package: GraphDef (TensorFlow's wire bytes, with a
read-only view of its nodes and attributes decoded here), its text format (as
tf.train.write_graph(as_text=True) writes it), import_graph_def and write_graph. Field numbers
are those of TensorFlow's graph.proto, node_def.proto, attr_value.proto and tensor.proto."""
import os
import struct

from . import dtypes as _dtypes
from . import framework as _fw

# ---------------------------------------------------------------------------------------------
# Wire format


def _varint(buf, pos):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated protobuf varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("protobuf varint longer than 10 bytes")


def _fields(buf):
    """(field number, wire type, value) of a message: ints for varints and fixed, bytes for
    length-delimited fields."""
    pos = 0
    n = len(buf)
    while pos < n:
        key, pos = _varint(buf, pos)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, pos = _varint(buf, pos)
        elif wt == 1:
            if pos + 8 > n:
                raise ValueError("truncated protobuf fixed64")
            v = buf[pos:pos + 8]
            pos += 8
        elif wt == 2:
            ln, pos = _varint(buf, pos)
            if pos + ln > n:
                raise ValueError("protobuf field %d says %d bytes, %d left" % (field, ln, n - pos))
            v = bytes(buf[pos:pos + ln])
            pos += ln
        elif wt == 5:
            if pos + 4 > n:
                raise ValueError("truncated protobuf fixed32")
            v = buf[pos:pos + 4]
            pos += 4
        else:
            raise ValueError("unsupported protobuf wire type %d (field %d)" % (wt, field))
        yield field, wt, v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed_varints(wt, v):
    if wt == 0:
        return [v]
    out, pos = [], 0
    while pos < len(v):
        x, pos = _varint(v, pos)
        out.append(x)
    return out


def _packed_fixed(wt, v, fmt, size):
    if wt != 2:
        return [struct.unpack("<" + fmt, v)[0]]
    return list(struct.unpack("<%d%s" % (len(v) // size, fmt), v))


# ---------------------------------------------------------------------------------------------
# Decoded messages (plain Python values)

_DT_NAMES = {1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
             6: "DT_INT8", 7: "DT_STRING", 9: "DT_INT64", 10: "DT_BOOL", 14: "DT_BFLOAT16",
             17: "DT_UINT16", 19: "DT_HALF", 20: "DT_RESOURCE", 21: "DT_VARIANT",
             22: "DT_UINT32", 23: "DT_UINT64"}


def _dt_name(v):
    if v > 100 and v - 100 in _DT_NAMES:
        return _DT_NAMES[v - 100] + "_REF"
    return _DT_NAMES.get(v, str(v))


def _shape(buf):
    dims, unknown = [], False
    for f, wt, v in _fields(buf):
        if f == 2:
            size = -1
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    size = _signed(v2)
            dims.append(size)
        elif f == 3:
            unknown = bool(v)
    return ("shape", None if unknown else dims)


def _tensor(buf):
    t = {"dtype": 0, "shape": [], "content": None, "vals": []}
    for f, wt, v in _fields(buf):
        if f == 1:
            t["dtype"] = v
        elif f == 2:
            t["shape"] = _shape(v)[1]
        elif f == 4:
            t["content"] = v
        elif f == 5:
            t["vals"] += _packed_fixed(wt, v, "f", 4)
        elif f == 6:
            t["vals"] += _packed_fixed(wt, v, "d", 8)
        elif f in (7, 10, 11, 13, 16, 17):
            t["vals"] += [_signed(x) for x in _packed_varints(wt, v)]
        elif f == 8:
            t["vals"].append(v)
    return t


def _list(buf):
    out = {"s": [], "i": [], "f": [], "b": [], "type": [], "shape": [], "tensor": []}
    for f, wt, v in _fields(buf):
        if f == 2:
            out["s"].append(v)
        elif f == 3:
            out["i"] += [_signed(x) for x in _packed_varints(wt, v)]
        elif f == 4:
            out["f"] += _packed_fixed(wt, v, "f", 4)
        elif f == 5:
            out["b"] += [bool(x) for x in _packed_varints(wt, v)]
        elif f == 6:
            out["type"] += _packed_varints(wt, v)
        elif f == 7:
            out["shape"].append(_shape(v)[1])
        elif f == 8:
            out["tensor"].append(_tensor(v))
    return out


def _attr_value(buf):
    """An AttrValue as (kind, value)."""
    for f, wt, v in _fields(buf):
        if f == 1:
            return ("list", _list(v))
        if f == 2:
            return ("s", v)
        if f == 3:
            return ("i", _signed(v))
        if f == 4:
            return ("f", struct.unpack("<f", v)[0])
        if f == 5:
            return ("b", bool(v))
        if f == 6:
            return ("type", v)
        if f == 7:
            return _shape(v)
        if f == 8:
            return ("tensor", _tensor(v))
        if f == 9:
            return ("placeholder", v.decode())
        if f == 10:
            return ("func", v)
    return ("list", _list(b""))


class NodeDef:
    """A decoded NodeDef: name, op, input, device, attr (name -> (kind, value)); _attr_bytes
    keeps each attr's AttrValue bytes, in order, for rewriting a node (graph_util)."""

    def __init__(self, buf=b""):
        self.name, self.op, self.device = "", "", ""
        self.input = []
        self.attr = {}
        self._attr_bytes = []
        for f, wt, v in _fields(buf):
            if f == 1:
                self.name = v.decode()
            elif f == 2:
                self.op = v.decode()
            elif f == 3:
                self.input.append(v.decode())
            elif f == 4:
                self.device = v.decode()
            elif f == 5:
                key, value = "", b""
                for f2, _, v2 in _fields(v):
                    if f2 == 1:
                        key = v2.decode()
                    elif f2 == 2:
                        value = v2
                self.attr[key] = _attr_value(value)
                self._attr_bytes.append((key, value))


class GraphDef:
    """TensorFlow's GraphDef as bytes (SerializeToString, FromString, ParseFromString), with
    .node decoded on first use and .versions.producer."""

    def __init__(self, data=b""):
        self._bytes = bytes(data)
        self._nodes = None

    @classmethod
    def FromString(cls, data):  # noqa: N802 -- protobuf's name
        g = cls(data)
        g.node  # noqa: B018 -- decode now: a malformed GraphDef fails here, as protobuf's would
        return g

    def ParseFromString(self, data):  # noqa: N802
        self._bytes = bytes(data)
        self._nodes = None
        self.node  # noqa: B018

    def SerializeToString(self):  # noqa: N802
        return self._bytes

    def ByteSize(self):  # noqa: N802
        return len(self._bytes)

    @property
    def node(self):
        if self._nodes is None:
            try:
                self._nodes = [NodeDef(v) for f, wt, v in _fields(self._bytes) if f == 1]
            except (ValueError, UnicodeDecodeError) as e:
                raise DecodeError("Error parsing message: %s" % e) from None
        return self._nodes

    @property
    def versions(self):
        producer = 0
        for f, wt, v in _fields(self._bytes):
            if f == 4:
                for f2, _, v2 in _fields(v):
                    if f2 == 1:
                        producer = v2

        class _Versions:
            pass
        out = _Versions()
        out.producer = producer
        return out

    def __str__(self):
        return graph_def_to_text(self)

    def __eq__(self, other):
        return isinstance(other, GraphDef) and other._bytes == self._bytes


class DecodeError(Exception):
    """protobuf's DecodeError: the bytes are not a GraphDef."""


# ---------------------------------------------------------------------------------------------
# Text format

def _escape(b):
    out = []
    for c in b:
        if c == 0x22:
            out.append('\\"')
        elif c == 0x27:
            out.append("\\'")
        elif c == 0x5C:
            out.append("\\\\")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x0D:
            out.append("\\r")
        elif c == 0x09:
            out.append("\\t")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\%03o" % c)
    return '"' + "".join(out) + '"'


def _float(f):
    r = repr(float(f))
    if r in ("inf", "-inf", "nan"):
        return r
    return r[:-2] if r.endswith(".0") else r


def _text_shape(dims, ind):
    if dims is None:
        return [ind + "unknown_rank: true"]
    lines = []
    for d in dims:
        lines += [ind + "dim {", ind + "  size: %d" % d, ind + "}"]
    return lines


def _text_tensor(t, ind):
    lines = [ind + "dtype: " + _dt_name(t["dtype"])]
    lines += [ind + "tensor_shape {"] + _text_shape(t["shape"], ind + "  ") + [ind + "}"]
    if t["content"] is not None:
        lines.append(ind + "tensor_content: " + _escape(t["content"]))
    field = {1: "float_val", 2: "double_val", 7: "string_val", 9: "int64_val", 10: "bool_val",
             19: "half_val"}.get(t["dtype"], "int_val")
    for v in t["vals"]:
        if field == "string_val":
            lines.append(ind + "string_val: " + _escape(v))
        elif field in ("float_val", "double_val"):
            lines.append(ind + "%s: %s" % (field, _float(v)))
        elif field == "bool_val":
            lines.append(ind + "bool_val: %s" % ("true" if v else "false"))
        else:
            lines.append(ind + "%s: %d" % (field, v))
    return lines


def _text_attr(kind, v, ind):
    if kind == "s":
        return [ind + "s: " + _escape(v)]
    if kind == "i":
        return [ind + "i: %d" % v]
    if kind == "f":
        return [ind + "f: " + _float(v)]
    if kind == "b":
        return [ind + "b: " + ("true" if v else "false")]
    if kind == "type":
        return [ind + "type: " + _dt_name(v)]
    if kind == "shape":
        return [ind + "shape {"] + _text_shape(v, ind + "  ") + [ind + "}"]
    if kind == "tensor":
        return [ind + "tensor {"] + _text_tensor(v, ind + "  ") + [ind + "}"]
    if kind == "placeholder":
        return [ind + "placeholder: " + _escape(v.encode())]
    if kind == "func":
        return [ind + "func {", ind + "}"]
    lines = [ind + "list {"]
    i2 = ind + "  "
    lines += [i2 + "s: " + _escape(s) for s in v["s"]]
    lines += [i2 + "i: %d" % i for i in v["i"]]
    lines += [i2 + "f: " + _float(f) for f in v["f"]]
    lines += [i2 + "b: " + ("true" if b else "false") for b in v["b"]]
    lines += [i2 + "type: " + _dt_name(t) for t in v["type"]]
    for s in v["shape"]:
        lines += [i2 + "shape {"] + _text_shape(s, i2 + "  ") + [i2 + "}"]
    for t in v["tensor"]:
        lines += [i2 + "tensor {"] + _text_tensor(t, i2 + "  ") + [i2 + "}"]
    return lines + [ind + "}"]


def graph_def_to_text(graph_def):
    """protobuf's text format of a GraphDef, as TensorFlow's write_graph(as_text=True) prints."""
    lines = []
    for n in graph_def.node:
        lines += ["node {", '  name: %s' % _escape(n.name.encode()),
                  '  op: %s' % _escape(n.op.encode())]
        lines += ["  input: %s" % _escape(i.encode()) for i in n.input]
        if n.device:
            lines.append("  device: %s" % _escape(n.device.encode()))
        for key in sorted(n.attr):
            kind, v = n.attr[key]
            lines += ["  attr {", '    key: %s' % _escape(key.encode()), "    value {"]
            lines += _text_attr(kind, v, "      ")
            lines += ["    }", "  }"]
        lines.append("}")
    producer = graph_def.versions.producer
    if producer:
        lines += ["versions {", "  producer: %d" % producer, "}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# import / write

def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Adds graph_def's nodes to the default graph under `name` ("import" by default, "" for
    none); input_map replaces GraphDef tensors by tensors of the graph; return_elements are
    names of tensors ("x:0") or operations ("x") of graph_def, returned in order."""
    if isinstance(graph_def, (bytes, bytearray)):
        data = bytes(graph_def)
    elif isinstance(graph_def, GraphDef):
        data = graph_def.SerializeToString()
    else:
        raise TypeError("graph_def must be a GraphDef proto.")
    g = _fw.get_default_graph()
    pairs = []
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError("input_map keys must be strings, got %r" % (key,))
        if not isinstance(value, _fw.Tensor):
            value = _fw.convert_to_tensor(value)
        pairs.append((key, value._as_output()))
    if name == "":
        prefix = ""
    else:
        with g.name_scope(name or "import") as scope:
            prefix = scope[:-1] if scope else ""
    before = g._g.num_nodes()
    g._g.import_graph_def(data, prefix or None, pairs)
    g._mark_names_used(before)
    if return_elements is None:
        return None
    out = []
    for el in return_elements:
        full = (prefix + "/" + el) if prefix else el
        try:
            out.append(g.as_graph_element(full))
        except (KeyError, ValueError):
            raise ValueError("Requested return_element %r not found in graph_def." % el) from None
    return out


def write_graph(graph_or_graph_def, logdir, name, as_text=True):
    """Writes the GraphDef to logdir/name (text or binary); returns the path."""
    if isinstance(graph_or_graph_def, _fw.Graph):
        gd = graph_or_graph_def.as_graph_def()
    elif isinstance(graph_or_graph_def, GraphDef):
        gd = graph_or_graph_def
    else:
        raise TypeError("write_graph takes a Graph or a GraphDef, not %s"
                        % type(graph_or_graph_def).__name__)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "w" if as_text else "wb") as f:
        f.write(graph_def_to_text(gd) if as_text else gd.SerializeToString())
    os.replace(tmp, path)
    return path


def _node_attrs(graph, name):
    """The attributes of node `name` of a weft graph, decoded from its exported GraphDef (cached
    per graph size: a node's attributes never change once it is added)."""
    cache = getattr(graph, "_attr_cache", None)
    if cache is None or cache[0] != graph._g.num_nodes():
        gd = GraphDef(graph._g.export_graph_def())
        cache = (graph._g.num_nodes(), {n.name: n.attr for n in gd.node})
        graph._attr_cache = cache
    return cache[1].get(name, {})


def attr_to_python(kind, v):
    if kind == "s":
        return v
    if kind in ("i", "f", "b"):
        return v
    if kind == "type":
        return _dtypes.as_dtype(v)
    if kind == "shape":
        return _fw.TensorShape(None if v is None else [None if d < 0 else d for d in v])
    if kind == "list":
        for key in ("s", "i", "f", "b", "type", "shape"):
            if v[key]:
                return [attr_to_python(key, x) for x in v[key]]
        return []
    return v

