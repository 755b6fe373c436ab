/* ops_functional.c: ToBool (tensorflow/core/ops/functional_ops.cc), the conversion the lowering
 * of an If whose cond is not a bool puts before its Switch (function_inline.c). */
#include "ops_shape.h"

static weft_status_t *to_bool_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, 0, &s);
}

const weft_op_def_t weft__ops_functional[] = {
    WEFT__OP("ToBool", WEFT__SPECS("input: T"), WEFT__SPECS("output: bool"),
             WEFT__SPECS("T: type"), 0, to_bool_shape),
    WEFT__OPS_END,
};
