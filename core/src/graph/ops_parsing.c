/* ops_parsing.c: TensorFlow's tf.Example parsing ops (ParseExample, ParseExampleV2,
 * ParseSingleExample) with the args and attrs of tensorflow/core/ops/parsing_ops.cc; their
 * kernels are the core's (exec/parse_example_kernels.c). Output shapes are left unknown. */
#include "ops_shape.h"

#define FEATURE_TYPES "{float, int64, string}"

const weft_op_def_t weft__ops_parsing[] = {
    WEFT__OP("ParseExample",
             WEFT__SPECS("serialized: string", "names: string", "sparse_keys: Nsparse * string",
                         "dense_keys: Ndense * string", "dense_defaults: Tdense"),
             WEFT__SPECS("sparse_indices: Nsparse * int64", "sparse_values: sparse_types",
                         "sparse_shapes: Nsparse * int64", "dense_values: Tdense"),
             WEFT__SPECS("Nsparse: int >= 0", "Ndense: int >= 0",
                         "sparse_types: list(" FEATURE_TYPES ") >= 0",
                         "Tdense: list(" FEATURE_TYPES ") >= 0", "dense_shapes: list(shape) >= 0"),
             0, NULL),
    WEFT__OP("ParseExampleV2",
             WEFT__SPECS("serialized: string", "names: string", "sparse_keys: string",
                         "dense_keys: string", "ragged_keys: string", "dense_defaults: Tdense"),
             WEFT__SPECS("sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
                         "sparse_shapes: num_sparse * int64", "dense_values: Tdense",
                         "ragged_values: ragged_value_types",
                         "ragged_row_splits: ragged_split_types"),
             WEFT__SPECS("Tdense: list(" FEATURE_TYPES ") >= 0", "num_sparse: int >= 0",
                         "sparse_types: list(" FEATURE_TYPES ") >= 0",
                         "ragged_value_types: list(" FEATURE_TYPES ") >= 0",
                         "ragged_split_types: list({int32, int64}) >= 0",
                         "dense_shapes: list(shape) >= 0"),
             0, NULL),
    WEFT__OP("ParseSingleExample", WEFT__SPECS("serialized: string", "dense_defaults: Tdense"),
             WEFT__SPECS("sparse_indices: num_sparse * int64", "sparse_values: sparse_types",
                         "sparse_shapes: num_sparse * int64", "dense_values: Tdense"),
             WEFT__SPECS("num_sparse: int >= 0", "sparse_keys: list(string) >= 0",
                         "dense_keys: list(string) >= 0",
                         "sparse_types: list(" FEATURE_TYPES ") >= 0",
                         "Tdense: list(" FEATURE_TYPES ") >= 0", "dense_shapes: list(shape) >= 0"),
             0, NULL),
    WEFT__OPS_END,
};
