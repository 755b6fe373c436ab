"""tf.graph_util: GraphDef surgery for deployment, on weft's GraphDef bytes (no protobuf
package): extract_sub_graph (the nodes an output needs), remove_training_nodes (Identity and
CheckNumerics spliced out) and convert_variables_to_constants (a frozen graph: each variable's
value, read in the session, becomes a Const node of the same name)."""
import re as _re

import numpy as _np

from . import dtypes as _dtypes
from . import tf_logging as _logging
from .graph_io import GraphDef, NodeDef, _fields
from .saved_model import _enc_varint, _ld

_VARIABLE_OPS = ("Variable", "VariableV2", "VarHandleOp")


class _Node:
    """A NodeDef's fields, attrs kept as raw AttrValue bytes so that a node passes through
    unchanged unless it is rewritten."""

    def __init__(self, raw):
        n = NodeDef(raw)
        self.name, self.op, self.device = n.name, n.op, n.device.encode()
        self.input, self.attrs = n.input, n._attr_bytes

    def attr(self, key):
        return dict(self.attrs).get(key)

    def encode(self):
        out = _ld(1, self.name.encode()) + _ld(2, self.op.encode())
        out += b"".join(_ld(3, i.encode()) for i in self.input)
        if self.device:
            out += _ld(4, self.device)
        out += b"".join(_ld(5, _ld(1, k.encode()) + _ld(2, v)) for k, v in self.attrs)
        return out


def _split(graph_def):
    """(nodes, the GraphDef's other fields as wire bytes: versions, library)."""
    data = graph_def.SerializeToString() if isinstance(graph_def, GraphDef) else bytes(graph_def)
    nodes, other = [], b""
    for f, wt, v in _fields(data):
        if f == 1:
            nodes.append(_Node(v))
        elif wt == 2:
            other += _ld(f, v)
        elif wt == 0:
            other += _enc_varint(f << 3) + _enc_varint(v)
    return nodes, other


def _join(nodes, other):
    return GraphDef.FromString(b"".join(_ld(1, n.encode()) for n in nodes) + other)


def _node_name(inp):
    return _re.sub(r":\d+$", "", inp.lstrip("^"))


def extract_sub_graph(graph_def, dest_nodes):
    """The nodes dest_nodes need (through data and control inputs), in graph_def's order."""
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list.")
    nodes, other = _split(graph_def)
    by_name = {n.name: n for n in nodes}
    for d in dest_nodes:
        if d not in by_name:
            raise AssertionError("%s is not in graph" % d)
    keep, todo = set(), list(dest_nodes)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        todo.extend(_node_name(i) for i in by_name[name].input)
    return _join([n for n in nodes if n.name in keep], other)


def remove_training_nodes(input_graph, protected_nodes=None):
    """input_graph with its Identity and CheckNumerics nodes spliced out (their consumers read
    their input instead), except protected nodes and those with control edges in or out: a
    control edge may order something that the splice would lose."""
    protected = set(protected_nodes or [])
    nodes, other = _split(input_graph)
    controlled = {n.name for n in nodes if any(i.startswith("^") for i in n.input)}
    control_sources = {i[1:] for n in nodes for i in n.input if i.startswith("^")}
    splice = {n.name: n.input[0] for n in nodes
              if n.op in ("Identity", "CheckNumerics") and n.input
              and n.name not in protected | controlled | control_sources}

    def resolve(inp):
        ctrl = inp.startswith("^")
        name = inp.lstrip("^")
        while _node_name(name) in splice and (":" not in name or name.endswith(":0")):
            name = splice[_node_name(name)]
        return ("^" + _node_name(name)) if ctrl else name

    kept = []
    for n in nodes:
        if n.name in splice:
            continue
        n.input = [resolve(i) for i in n.input]
        kept.append(n)
    return _join(kept, other)


def _tensor_proto(value, dtype_enum):
    """A TensorProto of a numpy value: strings as string_val, the rest as tensor_content."""
    value = _np.asarray(value)
    shape = b"".join(_ld(2, _enc_varint(1 << 3) + _enc_varint(d)) for d in value.shape)
    out = _enc_varint(1 << 3) + _enc_varint(dtype_enum) + _ld(2, shape)
    if _dtypes.as_dtype(dtype_enum) == _dtypes.string:
        items = value.reshape(-1)
        return out + b"".join(_ld(8, s if isinstance(s, bytes) else str(s).encode())
                              for s in items)
    arr = _np.ascontiguousarray(value, dtype=_dtypes.as_dtype(dtype_enum).as_numpy_dtype)
    return out + _ld(4, arr.astype(arr.dtype.newbyteorder("<")).tobytes())


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None, variable_names_blacklist=None):
    """A frozen GraphDef: the subgraph output_node_names need, with each variable (VariableV2 or
    resource VarHandleOp) replaced by a Const of its value in sess; a ReadVariableOp of a frozen
    handle becomes an Identity, a ResourceGather a Gather."""
    nodes, other = _split(extract_sub_graph(input_graph_def, output_node_names))
    everything, _ = _split(input_graph_def)
    wanted = [n for n in nodes if n.op in _VARIABLE_OPS
              and (variable_names_whitelist is None or n.name in variable_names_whitelist)
              and (variable_names_blacklist is None or n.name not in variable_names_blacklist)]
    fetch = {}
    for n in wanted:
        if n.op != "VarHandleOp":
            fetch[n.name] = n.name + ":0"
            continue
        reads = [r.name + ":0" for r in everything if r.op == "ReadVariableOp"
                 and r.input and _node_name(r.input[0]) == n.name]
        if not reads:
            raise ValueError("Cannot freeze resource variable %s: the graph has no "
                             "ReadVariableOp of it to read its value through" % n.name)
        fetch[n.name] = reads[0]
    values = dict(zip(fetch, sess.run([fetch[k] for k in fetch]))) if fetch else {}
    _logging.info("Froze %d variables.", len(values))
    frozen_dtype = {n.name: n.attr("dtype") for n in wanted}
    for n in nodes:
        if n.name in values:
            dtype_raw = n.attr("dtype")
            dtype_enum = next(v for f, _, v in _fields(dtype_raw) if f == 6)
            n.op, n.input, n.device = "Const", [], b""
            n.attrs = [("dtype", dtype_raw),
                       ("value", _ld(8, _tensor_proto(values[n.name], dtype_enum)))]
        elif n.input and _node_name(n.input[0]) in values:
            dtype_raw = frozen_dtype[_node_name(n.input[0])]
            if n.op == "ReadVariableOp":
                n.op, n.attrs = "Identity", [("T", dtype_raw)]
            elif n.op == "ResourceGather" and n.attr("batch_dims") in (None, b"\x18\x00"):
                n.op = "Gather"
                n.attrs = [("Tparams", dtype_raw)] + [(k, v) for k, v in n.attrs
                                                      if k in ("Tindices", "validate_indices")]
    _logging.info("Converted %d variables to const ops.", len(values))
    return _join(nodes, other)
