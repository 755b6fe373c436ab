/* onnx/registry.c: the ONNX op families and the dispatcher that picks, for a node of the default
 * domain, the row of its op type with the greatest since_opset not above the model's opset (as
 * ONNX Runtime resolves its versioned kernel registrations). */
#include <string.h>

#include "map.h"

/* One table per family file; a new family file adds its table here. */
static const cf_onnx_row_t *const families[] = {
    cf_onnx_rows_elementwise, cf_onnx_rows_nn,        cf_onnx_rows_math,
    cf_onnx_rows_reduce,      cf_onnx_rows_shape,     cf_onnx_rows_array,
    cf_onnx_rows_norm,        cf_onnx_rows_conv_pool, cf_onnx_rows_loss,
    cf_onnx_rows_control_flow, cf_onnx_rows_sequence,
};

cf_onnx_map_fn cf_onnx_find_mapper(const char *op_type, int64_t opset) {
  const cf_onnx_row_t *best = NULL, *first = NULL;
  for (size_t f = 0; f < G_N_ELEMENTS(families); f++)
    for (const cf_onnx_row_t *r = families[f]; r->op_type; r++) {
      if (strcmp(r->op_type, op_type) != 0) continue;
      if (r->since_opset <= opset && (best == NULL || r->since_opset > best->since_opset)) best = r;
      if (first == NULL || r->since_opset < first->since_opset) first = r;
    }
  /* An opset below every row (0, in a malformed model) gets the op's oldest row: the table tells
   * an op's definitions apart, it does not judge whether the model may use the op. */
  return best ? best->fn : first ? first->fn : NULL;
}
