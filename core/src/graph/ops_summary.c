/* ops_summary.c: TensorFlow's summary ops (ScalarSummary, HistogramSummary, ImageSummary,
 * TensorSummaryV2, MergeSummary) with its names, args and attrs; each outputs a serialized
 * `Summary` protobuf as a scalar string (docs/tensorboard.md). Kernels:
 * plugins/cpu/cpu_summary.c. */
#include "ops_shape.h"

const weft_op_def_t weft__ops_summary[] = {
    WEFT__OP("ScalarSummary", WEFT__SPECS("tags: string", "values: T"),
             WEFT__SPECS("summary: string"), WEFT__SPECS("T: realnumbertype"), 0,
             weft__shape_fn_scalar),
    WEFT__OP("HistogramSummary", WEFT__SPECS("tag: string", "values: T"),
             WEFT__SPECS("summary: string"), WEFT__SPECS("T: realnumbertype = DT_FLOAT"), 0,
             weft__shape_fn_scalar),
    WEFT__OP("ImageSummary", WEFT__SPECS("tag: string", "tensor: T"),
             WEFT__SPECS("summary: string"),
             WEFT__SPECS("max_images: int >= 1 = 3", "T: {uint8, float, half, float64} = DT_FLOAT",
                         "bad_color: tensor = { dtype: DT_UINT8 tensor_shape: { dim { size: 4 } } "
                         "int_val: 255 int_val: 0 int_val: 0 int_val: 255 }"),
             0, weft__shape_fn_scalar),
    WEFT__OP("TensorSummaryV2",
             WEFT__SPECS("tag: string", "tensor: T", "serialized_summary_metadata: string"),
             WEFT__SPECS("summary: string"), WEFT__SPECS("T: type"), 0, weft__shape_fn_scalar),
    WEFT__OP("MergeSummary", WEFT__SPECS("inputs: N * string"), WEFT__SPECS("summary: string"),
             WEFT__SPECS("N: int >= 1"), 0, weft__shape_fn_scalar),
    WEFT__OPS_END,
};
