"""tf.manip: TensorFlow 1.x's aliases of array functions kept under this name."""
from .array_ops import (gather_nd, scatter_nd, reverse, roll,  # noqa: F401
                        space_to_batch_nd, batch_to_space_nd)
from .ops import reshape, tile  # noqa: F401
