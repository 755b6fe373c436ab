"""TensorFlow 1.x names weft does not implement (contrib, input queues and readers, estimators):
importing them works, calling them raises NotImplementedError naming what to use instead."""


class Unsupported:
    """A stand-in: any attribute is another stand-in, and a call raises."""

    def __init__(self, name, alternative):
        self._name = name
        self._alternative = alternative

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Unsupported(self._name + "." + attr, self._alternative)

    def __call__(self, *args, **kwargs):
        raise NotImplementedError("%s is not supported by weft: %s"
                                  % (self._name, self._alternative))

    def __repr__(self):
        return "<unsupported %s>" % self._name


_FEED = "feed numpy arrays through feed_dict (Session.run) instead"

contrib = Unsupported("tf.contrib", "use the core tf.* equivalents (tf.nn, tf.losses, "
                                    "tf.glorot_uniform_initializer, ...) instead")
estimator = Unsupported("tf.estimator", "build the graph and run it in a tf.Session or "
                                        "tf.train.MonitoredTrainingSession")
FIFOQueue = Unsupported("tf.FIFOQueue", _FEED)
RandomShuffleQueue = Unsupported("tf.RandomShuffleQueue", _FEED)
PaddingFIFOQueue = Unsupported("tf.PaddingFIFOQueue", _FEED)
TFRecordReader = Unsupported("tf.TFRecordReader", _FEED)
TextLineReader = Unsupported("tf.TextLineReader", _FEED)
WholeFileReader = Unsupported("tf.WholeFileReader", _FEED)
FixedLengthRecordReader = Unsupported("tf.FixedLengthRecordReader", _FEED)
string_input_producer = Unsupported("tf.train.string_input_producer", _FEED)
input_producer = Unsupported("tf.train.input_producer", _FEED)
slice_input_producer = Unsupported("tf.train.slice_input_producer", _FEED)
batch = Unsupported("tf.train.batch", _FEED)
shuffle_batch = Unsupported("tf.train.shuffle_batch", _FEED)
batch_join = Unsupported("tf.train.batch_join", _FEED)
shuffle_batch_join = Unsupported("tf.train.shuffle_batch_join", _FEED)
