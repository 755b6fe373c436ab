/* ops_io.c: the ops TensorFlow 1.x input pipelines use beside tf.data: DecodeCSV (parsing_ops.cc),
 * SerializeTensor and ParseTensor (TensorProto bytes, parsing_ops.cc) and MatchingFiles
 * (io_ops.cc), with TensorFlow's names, args, attrs and shape functions. Their kernels are the
 * core's (core/src/exec/io_kernels.c): they need the core's TensorProto codec and GLib.
 * MatchingFiles is stateful: the files are listed when the step runs, never folded at plan time.
 */
#include "ops_shape.h"

/* DecodeCSV: every record_default is a scalar or a vector; each output has records' shape. */
static weft_status_t *decode_csv_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx) - 1;
  weft__shape_t s;
  for (int i = 1; i <= n; i++) {
    weft__sh_input(ctx, i, &s);
    if (s.rank > 1)
      return weft__sh_error(ctx, "Shape must be at most rank 1 but is rank %d", s.rank);
  }
  weft__sh_input(ctx, 0, &s);
  for (int i = 0; i < n; i++) WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, i, &s));
  return NULL;
}

/* SerializeTensor: a scalar. */
static weft_status_t *scalar_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, 0, &s);
}

/* ParseTensor: serialized is a scalar; the output's shape is known only when run. */
static weft_status_t *parse_tensor_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s, unknown = {.rank = -1};
  weft__sh_input(ctx, 0, &s);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, "serialized"));
  return weft__sh_output(ctx, 0, &unknown);
}

/* MatchingFiles: pattern is a scalar or a vector; the output a vector of unknown length. */
static weft_status_t *matching_files_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s, out = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  weft__sh_input(ctx, 0, &s);
  if (s.rank > 1) return weft__sh_error(ctx, "Shape must be at most rank 1 but is rank %d", s.rank);
  return weft__sh_output(ctx, 0, &out);
}

const weft_op_def_t weft__ops_io[] = {
    WEFT__OP("DecodeCSV", WEFT__SPECS("records: string", "record_defaults: OUT_TYPE"),
             WEFT__SPECS("output: OUT_TYPE"),
             WEFT__SPECS("OUT_TYPE: list({float, double, int32, int64, string})",
                         "field_delim: string = ','", "use_quote_delim: bool = true",
                         "na_value: string = ''", "select_cols: list(int) = []"),
             0, decode_csv_shape),
    WEFT__OP("SerializeTensor", WEFT__SPECS("tensor: T"), WEFT__SPECS("serialized: string"),
             WEFT__SPECS("T: type"), 0, scalar_shape),
    WEFT__OP("ParseTensor", WEFT__SPECS("serialized: string"), WEFT__SPECS("output: out_type"),
             WEFT__SPECS("out_type: type"), 0, parse_tensor_shape),
    WEFT__OP("MatchingFiles", WEFT__SPECS("pattern: string"), WEFT__SPECS("filenames: string"),
             WEFT__NO_SPECS, 1, matching_files_shape),
    WEFT__OPS_END,
};
