"""tf.train: optimizers, the global step, Saver and checkpoints, ClusterSpec/Server and
replica_device_setter, monitored sessions and hooks, Supervisor (docs/python-training.md)."""
from weft import _weft_checkpoints, errors as _errors

_weft_checkpoints.set_error_factory(_errors._from_status)
from .optimizer import (Optimizer, GradientDescentOptimizer, MomentumOptimizer,  # noqa: F401
                        AdagradOptimizer, AdamOptimizer, RMSPropOptimizer, FtrlOptimizer,
                        AdadeltaOptimizer, ProximalGradientDescentOptimizer,
                        ProximalAdagradOptimizer)
from .training_util import (get_global_step, create_global_step,  # noqa: F401
                            get_or_create_global_step, global_step, assert_global_step,
                            exponential_decay)
from .saver import (Saver, latest_checkpoint, checkpoint_exists,  # noqa: F401
                    get_checkpoint_state, CheckpointState)
from .server_lib import ClusterSpec, Server, replica_device_setter  # noqa: F401
from .monitored import (SessionRunHook, SessionRunArgs, SessionRunContext,  # noqa: F401
                        SessionRunValues, StopAtStepHook, CheckpointSaverHook,
                        LoggingTensorHook, FinalOpsHook, SecondOrStepTimer, Scaffold,
                        SessionManager, ChiefSessionCreator, WorkerSessionCreator,
                        MonitoredSession, SingularMonitoredSession, MonitoredTrainingSession,
                        Coordinator, QueueRunner, add_queue_runner, start_queue_runners)
from .supervisor import Supervisor  # noqa: F401
from .sync_replicas import SyncReplicasOptimizer  # noqa: F401
from ..summary import summary_iterator, FileWriterCache as SummaryWriterCache  # noqa: F401,E402
from ..summary_hooks import SummarySaverHook, StepCounterHook  # noqa: F401,E402
from ..graph_io import write_graph  # noqa: F401,E402
from ..unsupported import (string_input_producer, input_producer,  # noqa: F401,E402
                           slice_input_producer, batch, shuffle_batch, batch_join,
                           shuffle_batch_join)
from ..example_pb import (Example, SequenceExample, Features, Feature,  # noqa: F401,E402
                          FeatureList, FeatureLists, BytesList, FloatList, Int64List)
from .learning_rate_decay import (piecewise_constant, polynomial_decay,  # noqa: F401,E402
                                  natural_exp_decay, inverse_time_decay, cosine_decay,
                                  cosine_decay_restarts, linear_cosine_decay)
from .moving_averages import ExponentialMovingAverage  # noqa: F401,E402
from .checkpoint_utils import (list_variables, load_variable,  # noqa: F401,E402
                               init_from_checkpoint, load_checkpoint, NewCheckpointReader)


def import_meta_graph(meta_graph_or_file, clear_devices=False, import_scope=None, **kwargs):
    """The MetaGraphDef imported into the default graph, and a Saver over its variables
    (saved_model.import_meta_graph)."""
    from ..saved_model import import_meta_graph as _import
    return _import(meta_graph_or_file, clear_devices, import_scope, **kwargs)
