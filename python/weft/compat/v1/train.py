"""tf.train: what the graph layer provides (write_graph, the input-pipeline names weft leaves
out). The training layer (optimizers, Saver, Supervisor, MonitoredTrainingSession, Server,
ClusterSpec, replica_device_setter) is added here on top (docs/python.md, "Extending")."""
from .graph_io import write_graph  # noqa: F401
from .unsupported import (string_input_producer, input_producer,  # noqa: F401
                          slice_input_producer, batch, shuffle_batch, batch_join,
                          shuffle_batch_join)
