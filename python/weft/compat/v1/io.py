"""tf.io: TensorFlow 1.x's I/O namespace as far as weft has it: gfile (the local file system,
see gfile.py) and write_graph. The file and serialization ops (read_file, write_file,
decode_raw, serialize_tensor, parse_tensor, TFRecords) are absent: weft's core does not define
them."""
from . import gfile  # noqa: F401 -- tf.io.gfile
from .graph_io import write_graph  # noqa: F401
