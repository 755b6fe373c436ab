"""tf.io: TensorFlow 1.x's I/O namespace as far as weft has it: gfile (the local file system,
see gfile.py), write_graph, and tf.Example parsing (parse_example, parse_single_example with
FixedLenFeature and VarLenFeature, over the core's ParseExample and ParseSingleExample kernels).
read_file, write_file, decode_raw, encode_base64 and decode_base64 are the core's string and
file ops (strings.py); decode_jpeg, encode_png and the other image codecs are image.py's;
TFRecord files are written and read through the core's record framing (below). decode_csv,
serialize_tensor, parse_tensor and matching_files are the core's DecodeCSV, SerializeTensor,
ParseTensor and MatchingFiles kernels. FixedLenSequenceFeature (variable-length dense features,
which the kernels refuse) is absent."""
import collections as _collections
import os as _os

from . import dtypes as _dtypes
from . import framework as _fw
from . import gfile  # noqa: F401 -- tf.io.gfile
from . import ops as _ops
from .graph_io import write_graph  # noqa: F401
from .sparse import SparseTensor
from .strings import (read_file, write_file, decode_raw, encode_base64,  # noqa: F401
                      decode_base64)
# TensorFlow 1.15's tf.io names for the image codecs (image.py).
from .image import (decode_jpeg, decode_and_crop_jpeg, encode_jpeg,  # noqa: F401
                    extract_jpeg_shape, decode_png, encode_png, decode_bmp, decode_gif,
                    decode_image, is_jpeg)


class FixedLenFeature(_collections.namedtuple("FixedLenFeature",
                                              ["shape", "dtype", "default_value"])):
    """A dense feature of a fixed shape; without default_value every example must have it."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(_collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any length per example, parsed into a SparseTensor."""


def _specs(features):
    """(sparse keys and dtypes, dense keys, dtypes, shapes and default tensors), sorted by key
    as TensorFlow orders them."""
    if not features:
        raise ValueError("Missing: features was %s." % features)
    sparse, dense = [], []
    for key in sorted(features):
        f = features[key]
        if isinstance(f, VarLenFeature):
            sparse.append((key, _dtypes.as_dtype(f.dtype)))
        elif isinstance(f, FixedLenFeature):
            dtype = _dtypes.as_dtype(f.dtype)
            shape = _fw.as_shape(f.shape).as_list()
            if any(d is None for d in shape):
                raise ValueError("First dimension of shape for feature %s unknown. Consider "
                                 "using FixedLenSequenceFeature." % key)
            if f.default_value is None:
                default = _fw.constant([], dtype=dtype, name="key_%s" % key)
            else:
                default = _ops.reshape(_ops._to_tensor(f.default_value, dtype=dtype), shape,
                                       name="key_%s" % key)
            dense.append((key, dtype, shape, default))
        else:
            raise ValueError("Unsupported %s %s." % (type(f).__name__, f))
    for key, dtype in sparse + [(d[0], d[1]) for d in dense]:
        if dtype not in (_dtypes.float32, _dtypes.int64, _dtypes.string):
            raise ValueError("Unsupported dtype %s for feature %s: a tf.Example feature is "
                             "float32, int64 or string" % (dtype.name, key))
    return sparse, dense


def _outputs(out, sparse, dense):
    outs = out if isinstance(out, list) else [out] if isinstance(out, _fw.Tensor) else []
    ns = len(sparse)
    result = {}
    for i, (key, _) in enumerate(sparse):
        result[key] = SparseTensor(outs[i], outs[ns + i], outs[2 * ns + i])
    for i, (key, _, _, _) in enumerate(dense):
        result[key] = outs[3 * ns + i]
    return result


def _attrs(sparse, dense):
    return [("sparse_types", "list_type", [t.as_datatype_enum for _, t in sparse]),
            ("Tdense", "list_type", [d[1].as_datatype_enum for d in dense]),
            ("dense_shapes", "list_shape", [d[2] for d in dense])]


def parse_example(serialized, features, name=None, example_names=None):
    """A batch of serialized tf.Example protos ([batch] strings) as a dict: each FixedLenFeature
    key a [batch] + shape tensor, each VarLenFeature key a SparseTensor with indices
    [example, position] and dense_shape [batch, longest]."""
    with _fw.name_scope(name, "ParseExample", []):
        sparse, dense = _specs(features)
        names = [] if example_names is None else example_names
        out = _ops._op("ParseExample", [
            _ops._to_tensor(serialized, dtype=_dtypes.string),
            _ops._to_tensor(names, dtype=_dtypes.string),
            [_fw.constant(k, dtype=_dtypes.string) for k, _ in sparse],
            [_fw.constant(d[0], dtype=_dtypes.string) for d in dense],
            [d[3] for d in dense]],
            [("Nsparse", "int", len(sparse)), ("Ndense", "int", len(dense))]
            + _attrs(sparse, dense), "ParseExample")
        return _outputs(out, sparse, dense)


def parse_single_example(serialized, features, name=None, example_names=None):
    """One serialized tf.Example (a scalar string) as a dict: each FixedLenFeature key a tensor
    of its shape, each VarLenFeature key a SparseTensor with indices [position]."""
    with _fw.name_scope(name, "ParseSingleExample", []):
        sparse, dense = _specs(features)
        out = _ops._op("ParseSingleExample", [
            _ops._to_tensor(serialized, dtype=_dtypes.string), [d[3] for d in dense]],
            [("num_sparse", "int", len(sparse)),
             ("sparse_keys", "list_string", [k for k, _ in sparse]),
             ("dense_keys", "list_string", [d[0] for d in dense])]
            + _attrs(sparse, dense), "ParseSingleExample")
        return _outputs(out, sparse, dense)


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None,
               na_value="", select_cols=None):
    """CSV records (a string tensor of any shape) to one tensor per column of records' shape.
    Each record_defaults entry (a tensor or a list like [0.0], [""] or []) gives its column's
    dtype and default; an empty one makes the column required. select_cols picks columns."""
    if select_cols is not None and any(select_cols[i] >= select_cols[i + 1]
                                       for i in range(len(select_cols) - 1)):
        raise ValueError("select_cols is not strictly increasing.")
    if select_cols is not None and select_cols[0] < 0:
        raise ValueError("select_cols contains negative values.")
    if select_cols is not None and len(select_cols) != len(record_defaults):
        raise ValueError("Length of select_cols and record_defaults do not match.")
    with _fw.name_scope(name, "DecodeCSV", []):
        defaults = [d if isinstance(d, _fw.Tensor) else _ops._to_tensor(d)
                    for d in record_defaults]
        out = _ops._op("DecodeCSV", [_ops._to_tensor(records, dtype=_dtypes.string), defaults],
                       [("OUT_TYPE", "list_type",
                         [d.dtype.base_dtype.as_datatype_enum for d in defaults]),
                        ("field_delim", "string", field_delim),
                        ("use_quote_delim", "bool", bool(use_quote_delim)),
                        ("na_value", "string", na_value),
                        ("select_cols", "list_int", list(select_cols or []))], "DecodeCSV")
        return out if isinstance(out, list) else [out]


def serialize_tensor(tensor, name=None):
    """A tensor as the bytes of its TensorProto (a scalar string)."""
    return _ops._op("SerializeTensor", [_ops._to_tensor(tensor)], (),
                    name or "SerializeTensor")


def parse_tensor(serialized, out_type, name=None):
    """The tensor a serialized TensorProto holds, which must be of out_type."""
    return _ops._op("ParseTensor", [_ops._to_tensor(serialized, dtype=_dtypes.string)],
                    [("out_type", "type", _dtypes.as_dtype(out_type).as_datatype_enum)],
                    name or "ParseTensor")


def matching_files(pattern, name=None):
    """The sorted names of the local files the glob pattern (or vector of patterns) matches."""
    return _ops._op("MatchingFiles", [_ops._to_tensor(pattern, dtype=_dtypes.string)], (),
                    name or "MatchingFiles")


# ---------------------------------------------------------------------------------------------
# TFRecord files (tf.io.TFRecordWriter, tf.io.tf_record_iterator, tf.python_io): records of any
# bytes, each framed with its length and masked crc32cs by the core (weft_event_writer_add_record,
# weft_event_reader_next, which checks both crcs). A GZIP or ZLIB file is the same records
# compressed as one stream, as TensorFlow writes them: written to a temporary file and
# compressed at close, read by inflating into a temporary file first.


class TFRecordCompressionType:
    NONE = 0
    ZLIB = 1
    GZIP = 2


_COMPRESSION_NAMES = {None: "", "": "", 0: "", 1: "ZLIB", 2: "GZIP", "ZLIB": "ZLIB",
                      "GZIP": "GZIP"}


class TFRecordOptions:
    """tf.io.TFRecordOptions(compression_type): "" (none), "ZLIB" or "GZIP" (or the
    TFRecordCompressionType numbers); the zlib tuning arguments are accepted and unused."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, **zlib_options):
        if compression_type not in _COMPRESSION_NAMES:
            raise ValueError("Unsupported compression type: %s" % (compression_type,))
        self.compression_type = _COMPRESSION_NAMES[compression_type]

    @classmethod
    def get_compression_type_string(cls, options):
        if not options:
            return ""
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return TFRecordOptions(options).compression_type


def _compression(options):
    return TFRecordOptions.get_compression_type_string(options)


class TFRecordWriter:
    """tf.io.TFRecordWriter(path, options=None): write(record), flush(), close(); a context
    manager."""

    def __init__(self, path, options=None):
        import tempfile
        from weft import _weft
        self._path = str(path)
        self._compression = _compression(options)
        if self._compression:
            fd, self._raw = tempfile.mkstemp(prefix="tfrecord-", suffix=".raw")
            _os.close(fd)
        else:
            self._raw = self._path
        self._w = _weft.EventWriter(records=self._raw)
        self._closed = False

    def write(self, record):
        if isinstance(record, str):
            record = record.encode()
        self._w.add_record(record)

    def flush(self):
        self._w.flush()

    def close(self):
        if self._closed:
            return
        self._closed = True
        self._w.close()
        if self._compression:
            import gzip
            import shutil
            import zlib
            try:
                with open(self._raw, "rb") as src:
                    if self._compression == "GZIP":
                        with gzip.open(self._path, "wb") as dst:
                            shutil.copyfileobj(src, dst)
                    else:
                        with open(self._path, "wb") as dst:
                            dst.write(zlib.compress(src.read()))
            finally:
                _os.unlink(self._raw)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _records_of(path, compression):
    """The records of one TFRecord file, crcs checked (DataLossError naming the offset)."""
    import tempfile
    from weft import _weft
    from weft import errors
    path = path.decode() if isinstance(path, bytes) else str(path)
    raw = path
    if compression:
        import gzip
        import zlib
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, "%s; No such file or directory" % path) from None
        try:
            data = gzip.decompress(data) if compression == "GZIP" else zlib.decompress(data)
        except (OSError, zlib.error, EOFError) as e:
            raise errors.DataLossError(None, None, "%s: not a valid %s stream: %s"
                                       % (path, compression, e)) from None
        fd, raw = tempfile.mkstemp(prefix="tfrecord-", suffix=".raw")
        with _os.fdopen(fd, "wb") as f:
            f.write(data)
    try:
        reader = _weft.EventReader(raw)
        while True:
            record = reader.next()
            if record is None:
                return
            yield record
    finally:
        if raw != path:
            _os.unlink(raw)


def tf_record_iterator(path, options=None):
    """tf.io.tf_record_iterator(path, options=None): the records of the file as bytes."""
    return _records_of(path, _compression(options))


class _PythonIo:
    """tf.python_io."""
    TFRecordWriter = TFRecordWriter
    TFRecordOptions = TFRecordOptions
    TFRecordCompressionType = TFRecordCompressionType
    tf_record_iterator = staticmethod(tf_record_iterator)


python_io = _PythonIo()
