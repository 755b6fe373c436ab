"""tf.train.Example and the messages inside it (Features, Feature, BytesList, FloatList,
Int64List, and SequenceExample's FeatureList(s)) with TensorFlow's field numbers
(core/example/example.proto, feature.proto), serialized without the protobuf package: the input
of tf.io.parse_example and what TFRecord writers of TensorFlow programs build."""
from .summary_pb import Message, _f


class BytesList(Message):
    _FIELDS = (_f(1, "value", "bytes", rep=True),)


class FloatList(Message):
    _FIELDS = (_f(1, "value", "packed_float", rep=True),)


class Int64List(Message):
    _FIELDS = (_f(1, "value", "packed_int", rep=True),)


class Feature(Message):
    _FIELDS = (_f(1, "bytes_list", "message", BytesList, oneof="kind"),
               _f(2, "float_list", "message", FloatList, oneof="kind"),
               _f(3, "int64_list", "message", Int64List, oneof="kind"))


class Features(Message):
    _FIELDS = (_f(1, "feature", "map", Feature),)


class FeatureList(Message):
    _FIELDS = (_f(1, "feature", "message", Feature, rep=True),)


class FeatureLists(Message):
    _FIELDS = (_f(1, "feature_list", "map", FeatureList),)


class Example(Message):
    _FIELDS = (_f(1, "features", "message", Features),)


class SequenceExample(Message):
    _FIELDS = (_f(1, "context", "message", Features),
               _f(2, "feature_lists", "message", FeatureLists))
