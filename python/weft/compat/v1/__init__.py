"""`import weft.compat.v1 as tf`: TensorFlow 1.x's API over weft (docs/python.md lists what it
covers and where it differs)."""
from weft import errors  # noqa: F401 -- tf.errors
from .dtypes import *  # noqa: F401,F403
from .dtypes import DType, as_dtype  # noqa: F401
from .framework import (Graph, Operation, Tensor, TensorShape, Dimension, GraphKeys,  # noqa: F401
                        get_default_graph, reset_default_graph, convert_to_tensor, constant,
                        name_scope, device, control_dependencies, colocate_with,
                        add_to_collection, add_to_collections, get_collection,
                        get_collection_ref, register_tensor_conversion_function)
from .ops import *  # noqa: F401,F403
from .ops import (range, tuple, slice, abs, pow, round)  # noqa: F401,A004
from .session import (Session, InteractiveSession, ConfigProto, GPUOptions,  # noqa: F401
                      RunOptions, RunMetadata, get_default_session)
from . import dtypes  # noqa: F401

newaxis = None
from .variables import (Variable, VariableScope, get_variable, get_local_variable,  # noqa: F401
                        variable_scope, get_variable_scope, AUTO_REUSE, global_variables,
                        all_variables, trainable_variables, local_variables, model_variables,
                        moving_average_variables, variables_initializer, initialize_variables,
                        global_variables_initializer, initialize_all_variables,
                        local_variables_initializer, initialize_local_variables,
                        is_variable_initialized, zeros_initializer, ones_initializer,
                        constant_initializer, random_normal_initializer,
                        truncated_normal_initializer, random_uniform_initializer,
                        variance_scaling_initializer, glorot_uniform_initializer,
                        glorot_normal_initializer)
from .gradients import gradients  # noqa: F401
from .resource_variable_ops import (ResourceVariable, IndexedSlices,  # noqa: F401
                                    enable_resource_variables, disable_resource_variables,
                                    resource_variables_enabled, scatter_add, scatter_sub,
                                    scatter_mul, scatter_div, scatter_min, scatter_max,
                                    scatter_update)
from . import resource_variable_ops  # noqa: F401
from .graph_io import GraphDef, NodeDef, import_graph_def  # noqa: F401
from .ops import set_random_seed, get_seed  # noqa: F401
from .unsupported import (contrib, estimator, FIFOQueue, RandomShuffleQueue,  # noqa: F401
                          PaddingFIFOQueue, TFRecordReader, TextLineReader, WholeFileReader,
                          FixedLengthRecordReader)
from . import nn, losses, train, test  # noqa: F401,E402
from . import math  # noqa: F401,E402 -- tf.math
from . import app, flags, saved_model  # noqa: F401,E402 -- tf.app, tf.flags, tf.saved_model
from . import summary  # noqa: F401,E402
from . import layers, metrics  # noqa: F401,E402
from . import tf_logging as logging  # noqa: F401,E402 -- tf.logging
from .summary_pb import (Summary, SummaryMetadata, Event, SessionLog,  # noqa: F401,E402
                         HistogramProto, LogMessage, TaggedRunMetadata)
from . import io, gfile  # noqa: F401,E402,A004 -- tf.io, tf.gfile
from .io import python_io  # noqa: F401,E402 -- tf.python_io
from . import compat  # noqa: F401,E402
from . import random, initializers  # noqa: F401,E402
# TensorFlow 1.x's top-level spellings of names that live in the namespaces below
from .random import shuffle as random_shuffle, gamma as random_gamma  # noqa: F401,E402
from .random import poisson as random_poisson  # noqa: F401,E402
from .random import multinomial  # noqa: F401,E402
from . import linalg  # noqa: F401,E402
from .linalg import (eye, trace, norm, cholesky, cholesky_solve, qr, svd,  # noqa: F401,E402
                     matrix_transpose, inv as matrix_inverse, det as matrix_determinant,
                     slogdet as log_matrix_determinant, solve as matrix_solve,
                     lstsq as matrix_solve_ls, triangular_solve as matrix_triangular_solve,
                     band_part as matrix_band_part, diag as matrix_diag,
                     diag_part as matrix_diag_part, set_diag as matrix_set_diag,
                     eigh as self_adjoint_eig, eigvalsh as self_adjoint_eigvals)
from . import debugging, bitwise  # noqa: F401,E402
from .debugging import (Assert, assert_equal, assert_none_equal, assert_less,  # noqa: F401,E402
                        assert_less_equal, assert_greater, assert_greater_equal,
                        assert_positive, assert_negative, assert_non_negative,
                        assert_non_positive, check_numerics, verify_tensor_all_finite,
                        is_numeric_tensor)
from . import graph_util  # noqa: F401,E402
from . import sparse  # noqa: F401,E402
from .sparse import SparseTensor, SparseTensorValue  # noqa: F401,E402
from .sparse import to_dense as sparse_tensor_to_dense  # noqa: F401,E402
from .sparse import sparse_to_dense  # noqa: F401,E402
from .sparse import edit_distance  # noqa: F401,E402
from .sparse import sparse_tensor_dense_matmul  # noqa: F401,E402
from .sparse import reorder as sparse_reorder  # noqa: F401,E402
from .sparse import add as sparse_add  # noqa: F401,E402
from .sparse import reshape as sparse_reshape  # noqa: F401,E402
from .sparse import concat as sparse_concat  # noqa: F401,E402
from .sparse import slice as sparse_slice  # noqa: F401,E402
from .io import (FixedLenFeature, VarLenFeature, parse_example,  # noqa: F401,E402
                 parse_single_example, decode_csv, serialize_tensor, parse_tensor,
                 matching_files)
from . import image  # noqa: F401,E402
from . import strings  # noqa: F401,E402 -- tf.strings
from .strings import (as_string, reduce_join, string_split, decode_raw,  # noqa: F401,E402
                      read_file, write_file, encode_base64, decode_base64, Print)
from .strings import to_number as string_to_number, join as string_join  # noqa: F401,E402
from .strings import substr, print_v2 as print  # noqa: F401,E402,A004
from .strings import regex_replace  # noqa: F401,E402 -- tf.regex_replace (TensorFlow 1.x)
from .control_flow import (cond, case, while_loop, TensorArray, map_fn, scan,  # noqa: F401,E402
                           foldl, foldr)
# array, segment, clipping and special-math functions (array_ops.py) at TensorFlow's top level
from .array_ops import (ensure_shape, gather_nd, scatter_nd,  # noqa: F401,E402
                        tensor_scatter_nd_update,
                        setdiff1d, searchsorted, unravel_index, cross, einsum,
                        tensor_scatter_update, tensor_scatter_nd_add, tensor_scatter_add,
                        tensor_scatter_nd_sub, tensor_scatter_sub, boolean_mask, sequence_mask,
                        unique,
                        unique_with_counts, sort, argsort, broadcast_to, linspace, lin_space,
                        meshgrid, roll, reverse_sequence, reverse, reverse_v2, dynamic_partition,
                        dynamic_stitch, invert_permutation, histogram_fixed_width, bincount,
                        count_nonzero, confusion_matrix, segment_mean, segment_max, segment_min,
                        segment_prod, unsorted_segment_max, unsorted_segment_min,
                        unsorted_segment_prod, unsorted_segment_mean, unsorted_segment_sqrt_n,
                        sparse_segment_sum, sparse_segment_mean, sparse_segment_sqrt_n,
                        igamma, igammac, betainc, lbeta, zeta, polygamma, truncatediv,
                        truncatemod, div_no_nan,
                        accumulate_n, scalar_mul, tensordot, clip_by_norm, global_norm,
                        clip_by_global_norm, clip_by_average_norm)
from .array_ops import (pad, diag, diag_part, depth_to_space, space_to_depth,  # noqa: F401,E402
                        space_to_batch_nd, batch_to_space_nd, space_to_batch, batch_to_space,
                        extract_image_patches, identity_n, parallel_stack, random_crop)
from .variables import orthogonal_initializer  # noqa: F401,E402
from . import manip  # noqa: F401,E402 -- tf.manip
from .template import make_template  # noqa: F401,E402
from .script_ops import py_func, numpy_function  # noqa: F401,E402
from . import data  # noqa: F401,E402 -- tf.data
