"""tf.strings and TensorFlow 1.x's top-level string, printing and raw-bytes functions (tf.as_string,
tf.string_join, tf.substr, tf.string_split, tf.reduce_join, tf.decode_raw, tf.encode_base64,
tf.Print, tf.print, ...) over the core's string ops (core/src/graph/ops_string.c), with
TensorFlow's names, defaults and attributes. tf.strings.regex_replace and regex_full_match take
TensorFlow's RE2 syntax, matched with GRegex (docs/strings.md, "Regular expressions")."""
import sys as _sys

from . import dtypes as _dtypes
from . import framework as _fw
from . import ops as _ops
from .sparse import SparseTensor


def _str(x, name=None):
    return _ops._to_tensor(x, dtype=_dtypes.string, name=name)


def join(inputs, separator="", name=None):
    """Joins the strings of a list of tensors elementwise (scalars broadcast)."""
    inputs = [_str(x) for x in inputs]
    return _ops._op("StringJoin", [inputs], [("N", "int", len(inputs)),
                                              ("separator", "string", separator)],
                    name or "StringJoin")


def length(input, name=None, unit="BYTE"):  # noqa: A002 -- TensorFlow's names
    """The length of each string in bytes, or in UTF-8 characters (unit="UTF8_CHAR")."""
    return _ops._op("StringLength", [_str(input)], [("unit", "string", unit)],
                    name or "StringLength")


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 -- TensorFlow's names
    """input[pos:pos + len] of each string; pos and len are scalars or of input's shape."""
    pos = _ops._to_tensor(pos, dtype=None if isinstance(pos, _fw.Tensor) else _dtypes.int32)
    len = _ops._to_tensor(len, dtype=pos.dtype.base_dtype)  # noqa: A001
    return _ops._op("Substr", [_str(input), pos, len], [("unit", "string", unit)],
                    name or "Substr")


def _split_result(out):
    return SparseTensor(out[0], out[1], out[2])


def _sparse_only(result_type):
    if result_type != "SparseTensor":
        raise NotImplementedError("result_type=%r: weft has no RaggedTensor; use the default "
                                  "'SparseTensor'" % (result_type,))


def split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor",  # noqa: A002
          source=None, name=None):
    """StringSplitV2: Python's str.split on each string of a vector, as a SparseTensor (sep None
    or "" splits on runs of whitespace)."""
    _sparse_only(result_type)
    source = input if source is None else source
    out = _ops._op("StringSplitV2", [_str(source), _str(sep or "")],
                   [("maxsplit", "int", int(maxsplit))], name or "StringSplit")
    return _split_result(out)


def string_split(source, sep=None, skip_empty=True, delimiter=None,
                 result_type="SparseTensor", name=None):
    """tf.string_split: StringSplit, every character of the delimiter (sep, " " by default)
    splits ("" splits into bytes), as a SparseTensor."""
    _sparse_only(result_type)
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'")
    delimiter = sep if sep is not None else " " if delimiter is None else delimiter
    out = _ops._op("StringSplit", [_str(source), _str(delimiter)],
                   [("skip_empty", "bool", bool(skip_empty))], name or "StringSplit")
    return _split_result(out)


def strip(input, name=None):  # noqa: A002
    return _ops._op("StringStrip", [_str(input)], (), name or "StringStrip")


def upper(input, encoding="", name=None):  # noqa: A002
    return _ops._op("StringUpper", [_str(input)], [("encoding", "string", encoding)],
                    name or "StringUpper")


def lower(input, encoding="", name=None):  # noqa: A002
    return _ops._op("StringLower", [_str(input)], [("encoding", "string", encoding)],
                    name or "StringLower")


def _is_text(x):
    return isinstance(x, (str, bytes))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Replaces the matches of pattern (RE2 syntax) with rewrite (\\0 .. \\9 name groups), every
    match or only the first. Python strings for both: StaticRegexReplace, the pattern compiled
    once, as TensorFlow does; tensors: RegexReplace."""
    if _is_text(pattern) and _is_text(rewrite):
        return _ops._op("StaticRegexReplace", [_str(input)],
                        [("pattern", "string", pattern),
                         ("rewrite", "string", rewrite),
                         ("replace_global", "bool", bool(replace_global))],
                        name or "StaticRegexReplace")
    return _ops._op("RegexReplace", [_str(input), _str(pattern), _str(rewrite)],
                    [("replace_global", "bool", bool(replace_global))], name or "RegexReplace")


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each string matches pattern (RE2 syntax) as a whole: a bool tensor of input's
    shape. A Python string pattern: StaticRegexFullMatch; a tensor: RegexFullMatch."""
    if _is_text(pattern):
        return _ops._op("StaticRegexFullMatch", [_str(input)],
                        [("pattern", "string", pattern)], name or "StaticRegexFullMatch")
    return _ops._op("RegexFullMatch", [_str(input), _str(pattern)], (),
                    name or "RegexFullMatch")


def to_number(string_tensor, out_type=_dtypes.float32, name=None):
    return _ops._op("StringToNumber", [_str(string_tensor)],
                    [("out_type", "type", _dtypes.as_dtype(out_type).as_datatype_enum)],
                    name or "StringToNumber")


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1,  # noqa: A002
              fill="", name=None):
    return _ops._op("AsString", [_ops._to_tensor(input)],
                    [("precision", "int", int(precision)), ("scientific", "bool", scientific),
                     ("shortest", "bool", shortest), ("width", "int", int(width)),
                     ("fill", "string", fill)], name or "AsString")


def reduce_join(inputs, axis=None, keep_dims=False, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """Joins strings over axes; axis None joins over all of them in row-major order."""
    inputs = _str(inputs)
    if axis is None:
        axis = reduction_indices
    if keepdims is not None:
        keep_dims = keepdims
    if axis is None:
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError("reduce_join with axis=None needs an input of known rank")
        axis = list(range(rank - 1, -1, -1))
    elif isinstance(axis, int):
        axis = [axis]
    axis = _ops._to_tensor(axis, dtype=_dtypes.int32)
    return _ops._op("ReduceJoin", [inputs, axis],
                    [("keep_dims", "bool", bool(keep_dims)), ("separator", "string", separator)],
                    name or "ReduceJoin")


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """StringFormat: template with each placeholder replaced by a tensor's summary (the first and
    last `summarize` entries of each dimension)."""
    if isinstance(inputs, (_fw.Tensor,)) or not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    inputs = [_ops._to_tensor(x) for x in inputs]
    return _ops._op("StringFormat", [inputs],
                    [("T", "list_type", [t.dtype.base_dtype.as_datatype_enum for t in inputs]),
                     ("template", "string", template), ("placeholder", "string", placeholder),
                     ("summarize", "int", int(summarize))], name or "StringFormat")


def encode_base64(input, pad=False, name=None):  # noqa: A002
    """Web-safe base64 ('-' and '_'), '=' padding only with pad=True."""
    return _ops._op("EncodeBase64", [_str(input)], [("pad", "bool", bool(pad))],
                    name or "EncodeBase64")


def decode_base64(input, name=None):  # noqa: A002
    return _ops._op("DecodeBase64", [_str(input)], (), name or "DecodeBase64")


def decode_raw(input_bytes=None, out_type=None, little_endian=True, name=None, bytes=None):  # noqa: A002
    """The bytes of each string as a vector of out_type (all strings of one length)."""
    if input_bytes is None:
        input_bytes = bytes
    if out_type is None:
        raise TypeError("decode_raw() missing required argument 'out_type'")
    return _ops._op("DecodeRaw", [_str(input_bytes)],
                    [("out_type", "type", _dtypes.as_dtype(out_type).as_datatype_enum),
                     ("little_endian", "bool", bool(little_endian))], name or "DecodeRaw")


def read_file(filename, name=None):
    return _ops._op("ReadFile", [_str(filename)], (), name or "ReadFile")


def write_file(filename, contents, name=None):
    """Writes contents to filename (creating its folder); returns the op."""
    return _ops._op("WriteFile", [_str(filename), _str(contents)], (), name or "WriteFile")


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """An identity of input_ that writes message and each data tensor's first `summarize` (3)
    values to stderr when it runs (the first first_n times only, when first_n >= 0)."""
    input_ = _ops._to_tensor(input_)
    data = [_ops._to_tensor(d) for d in data]
    return _ops._op("Print", [input_, data],
                    [("U", "list_type", [d.dtype.base_dtype.as_datatype_enum for d in data]),
                     ("message", "string", message or ""),
                     ("first_n", "int", -1 if first_n is None else int(first_n)),
                     ("summarize", "int", 3 if summarize is None else int(summarize))],
                    name or "Print")


def _stream_name(stream):
    from . import tf_logging
    if isinstance(stream, str):
        return stream
    if stream is _sys.stderr:
        return "stderr"
    if stream is _sys.stdout:
        return "stdout"
    names = {tf_logging.info: "log(info)", tf_logging.warning: "log(warning)",
             tf_logging.error: "log(error)"}
    if stream in names:
        return names[stream]
    raise ValueError("Unsupported output stream, logging level, or file. %s" % (stream,))


def _template(obj, tensors, placeholder):
    """obj as text with placeholder where each tensor of it goes (TensorFlow's print_v2 prints
    Python objects as str() and structures with their tensors inside)."""
    if isinstance(obj, SparseTensor):
        tensors.extend([obj.indices, obj.values, obj.dense_shape])
        return "'SparseTensor(indices=%s, values=%s, shape=%s)'" % ((placeholder,) * 3)
    if isinstance(obj, _fw.Tensor) or hasattr(obj, "_as_graph_tensor"):
        tensors.append(_ops._to_tensor(obj))
        return placeholder
    if isinstance(obj, dict):
        return "{" + ", ".join("%r: %s" % (k, _template(obj[k], tensors, placeholder))
                               for k in sorted(obj)) + "}"
    if isinstance(obj, (list, tuple)):
        inner = ", ".join(_template(x, tensors, placeholder) for x in obj)
        return ("[%s]" if isinstance(obj, list) else "(%s)") % inner
    return str(obj)


def print_v2(*inputs, **kwargs):
    """tf.print: StringFormat of the inputs (tensors summarized, Python objects as str(),
    separated by sep) into PrintV2; returns the PrintV2 op (run it or make it a control
    dependency)."""
    output_stream = kwargs.pop("output_stream", _sys.stderr)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", "\n")
    name = kwargs.pop("name", None)
    if kwargs:
        raise ValueError("Unrecognized keyword arguments for tf.print: %s" % sorted(kwargs))
    stream = _stream_name(output_stream)
    with _fw.name_scope(name, "PrintV2", []):
        texts = [str(x) for x in inputs if not isinstance(x, _fw.Tensor)]
        placeholder = "{}"
        while any(placeholder in t for t in texts) or placeholder in sep:
            placeholder = "{" + placeholder + "}"
        tensors = []
        template = sep.join(_template(x, tensors, placeholder) for x in inputs)
        formatted = format(template, tensors, placeholder=placeholder,
                           summarize=-1 if summarize is None else summarize)
        return _ops._op("PrintV2", [formatted], [("output_stream", "string", stream),
                                                 ("end", "string", end)], "PrintV2")
