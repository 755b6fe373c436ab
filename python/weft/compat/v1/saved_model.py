"""tf.saved_model (TF 1.x): loader.load(sess, tags, export_dir) imports the MetaGraphDef tagged
`tags` from export_dir/saved_model.pb into sess.graph and restores its variables from
export_dir/variables/variables; tag_constants and signature_constants. The protobuf is read at
the wire level: the Saver's own subgraph ("save/...", with SaveV2/RestoreV2) and nodes of ops
weft does not have (ParseExample, ...), with what reads them, are left out, and weft's Saver
restores the variables instead."""
import re
import os

from weft import _weft_checkpoints, errors
from .graph_io import _fields
from .train import saver as _saver


class tag_constants:  # noqa: N801 -- TensorFlow's module name
    SERVING = "serve"
    TRAINING = "train"
    EVAL = "eval"
    GPU = "gpu"
    TPU = "tpu"


class signature_constants:  # noqa: N801
    DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
    PREDICT_METHOD_NAME = "tensorflow/serving/predict"
    CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
    REGRESS_METHOD_NAME = "tensorflow/serving/regress"
    PREDICT_INPUTS = "inputs"
    PREDICT_OUTPUTS = "outputs"


# The protobuf wire format is read with graph_io's reader: (field, wire type, value).

def _map(buf_list):
    out = {}
    for entry in buf_list:
        key = value = b""
        for f, _, v in _fields(entry):
            if f == 1:
                key = v
            elif f == 2:
                value = v
        out[key.decode()] = value
    return out


class TensorInfo:
    def __init__(self, buf):
        self.name, self.dtype = "", 0
        for f, _, v in _fields(buf):
            if f == 1:
                self.name = v.decode()
            elif f == 2:
                self.dtype = v


class SignatureDef:
    def __init__(self, buf):
        ins, outs, self.method_name = [], [], ""
        for f, _, v in _fields(buf):
            if f == 1:
                ins.append(v)
            elif f == 2:
                outs.append(v)
            elif f == 3:
                self.method_name = v.decode()
        self.inputs = {k: TensorInfo(v) for k, v in _map(ins).items()}
        self.outputs = {k: TensorInfo(v) for k, v in _map(outs).items()}


class MetaInfoDef:
    def __init__(self, tags):
        self.tags = tags


class MetaGraphDef:
    """What programs read of loader.load's result: meta_info_def.tags and signature_def."""

    def __init__(self, buf):
        self.graph_def_bytes = b""
        tags, sigs = [], []
        for f, _, v in _fields(buf):
            if f == 1:
                tags = [t.decode() for ff, _, t in _fields(v) if ff == 4]
            elif f == 2:
                self.graph_def_bytes = v
            elif f == 5:
                sigs.append(v)
        self.meta_info_def = MetaInfoDef(tags)
        self.signature_def = {k: SignatureDef(v) for k, v in _map(sigs).items()}


def _enc_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ld(field, payload):
    return _enc_varint(field << 3 | 2) + _enc_varint(len(payload)) + payload


def _as_placeholder(name, device, attrs):
    """A Placeholder NodeDef standing in for Identity `name` (its dtype from attr T)."""
    dtype = b""
    for k, v in _map(attrs).items():
        if k == "T":
            dtype = v
    node = _ld(1, name.encode()) + _ld(2, b"Placeholder")
    if device:
        node += _ld(4, device)
    node += _ld(5, _ld(1, b"dtype") + _ld(2, dtype))
    return _ld(1, node)


def _without_saver(graph_def, skip_ops=(), clear_devices=False):
    """GraphDef bytes less the nodes of the Saver's subgraph (save/..., save_1/...), those of
    skip_ops and anything reading them -- except an Identity reading them, which becomes a
    Placeholder (serving graphs name their input so: x = identity(parse_example(...)["x"]), and
    clients feed x); returns (bytes, names of the VariableV2 nodes kept)."""
    nodes = []
    for f, _, v in _fields(graph_def):
        if f != 1:
            continue
        if clear_devices:
            v = b"".join(_ld(ff, vv) if wt == 2 else _enc_varint(ff << 3) + _enc_varint(vv)
                         for ff, wt, vv in _fields(v) if ff != 4)
        raw = _ld(1, v)
        name, op, inputs, device, attrs = "", "", [], b"", []
        for ff, _, vv in _fields(v):
            if ff == 1:
                name = vv.decode()
            elif ff == 2:
                op = vv.decode()
            elif ff == 3:
                inputs.append(vv.decode().lstrip("^").split(":")[0])
            elif ff == 4:
                device = vv
            elif ff == 5:
                attrs.append(vv)
        nodes.append((name, op, inputs, raw, device, attrs))
    dropped = {n[0] for n in nodes if n[0].split("/")[0] == "save"
               or n[0].split("/")[0].startswith("save_") or n[1] in skip_ops}
    fed = {}
    changed = True
    while changed:
        changed = False
        for name, op, inputs, _, device, attrs in nodes:
            if name in dropped or name in fed or not any(i in dropped for i in inputs):
                continue
            if op == "Identity":
                fed[name] = _as_placeholder(name, device, attrs)
            else:
                dropped.add(name)
            changed = True
    kept = b"".join(fed.get(n[0], n[3]) for n in nodes if n[0] not in dropped)
    other = b"".join(_ld(f, v) if wt == 2 else _enc_varint(f << 3) + _enc_varint(v)
                     for f, wt, v in _fields(graph_def) if f != 1 and wt in (0, 2))
    variables = [n[0] for n in nodes if n[0] not in dropped and n[1] in ("VariableV2",
                                                                         "Variable")]
    return kept + other, variables


def _import_meta(graph, meta, import_scope, clear_devices=False):
    """Imports meta's GraphDef (less its Saver's subgraph) into graph; returns the names of the
    variables it holds."""
    skip = set()
    while True:
        graph_def, variables = _without_saver(meta.graph_def_bytes, skip, clear_devices)
        first = graph._g.num_nodes()
        try:
            with graph._lock:
                graph._g.import_graph_def(graph_def, import_scope)
            break
        except errors.NotFoundError as e:
            # an import that fails adds nothing: leave that op's nodes out and try again
            m = re.match(r"Op type not registered '([^']+)'", e.message)
            if not m or m.group(1) in skip:
                raise
            skip.add(m.group(1))
    graph._mark_names_used(first)
    return variables


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """tf.train.import_meta_graph: the MetaGraphDef (a file name, or a MetaGraphDef loader.load
    returned) imported into the default graph as loader.load imports it, and a Saver over its
    variables (None without variables) to restore them. The MetaGraphDef's collections are not
    restored: fetch by name (graph.get_tensor_by_name)."""
    if isinstance(meta_graph_or_file, MetaGraphDef):
        meta = meta_graph_or_file
    else:
        try:
            with open(meta_graph_or_file, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise IOError("File %s does not exist." % meta_graph_or_file) from None
        try:
            meta = MetaGraphDef(data)
        except ValueError as e:
            raise IOError("Cannot parse file %s: %s." % (meta_graph_or_file, e)) from None
    from .framework import get_default_graph
    graph = get_default_graph()
    imported = _import_meta(graph, meta, import_scope, clear_devices)
    if not imported:
        return None
    scope = import_scope + "/" if import_scope else ""
    # keyed by the checkpoint's names: under import_scope the variables restore from them
    return _saver.Saver({v: graph.get_tensor_by_name(scope + v + ":0") for v in imported},
                        **kwargs)


class _Loader:
    @staticmethod
    def maybe_saved_model_directory(export_dir):
        return os.path.exists(os.path.join(export_dir, "saved_model.pb"))

    @staticmethod
    def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
        path = os.path.join(export_dir, "saved_model.pb")
        if not os.path.exists(path):
            raise IOError("SavedModel file does not exist at: %s/{%s|%s}"
                          % (export_dir, "saved_model.pbtxt", "saved_model.pb"))
        with open(path, "rb") as f:
            data = f.read()
        try:
            metas = [MetaGraphDef(v) for fld, _, v in _fields(data) if fld == 2]
        except ValueError as e:
            raise IOError("Cannot parse file %s: %s." % (path, e)) from None
        want = set(tags)
        found = [m for m in metas if set(m.meta_info_def.tags) == want]
        if not found:
            raise RuntimeError(
                "MetaGraphDef associated with tags " + str(list(tags)).strip("[]") +
                " could not be found in SavedModel. To inspect available tag-sets in the "
                "SavedModel, please use the SavedModel CLI: `saved_model_cli`\navailable_tags: "
                + str([m.meta_info_def.tags for m in metas]))
        meta = found[0]
        graph = sess.graph
        variables = _import_meta(graph, meta, import_scope)
        prefix = os.path.join(export_dir, "variables", "variables")
        if variables and _saver.checkpoint_exists(prefix):
            # the variables the model's Saver saved (others, such as asset paths, are not)
            saved = set(_weft_checkpoints.checkpoint_keys(prefix))
            scope = import_scope + "/" if import_scope else ""
            tensors = [graph.get_tensor_by_name(scope + v + ":0") for v in variables
                       if v in saved]
            _saver.Saver(tensors).restore(sess, prefix)
        return meta


loader = _Loader()

__all__ = ["loader", "tag_constants", "signature_constants"]
