/* ops_functional.c: ToBool (tensorflow/core/ops/functional_ops.cc), the conversion the lowering
 * of an If whose cond is not a bool puts before its Switch (function_inline.c); and the host
 * function ops PyFunc, PyFuncStateless and EagerPyFunc (tensorflow/core/ops/script_ops.cc), whose
 * kernel calls what the process registered under their token (exec/host_func.c). Their outputs'
 * shapes are unknown until they run, as in TensorFlow. */
#include "ops_shape.h"

static weft_status_t *to_bool_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, 0, &s);
}

const weft_op_def_t weft__ops_functional[] = {
    WEFT__OP("ToBool", WEFT__SPECS("input: T"), WEFT__SPECS("output: bool"),
             WEFT__SPECS("T: type"), 0, to_bool_shape),
    WEFT__OP("PyFunc", WEFT__SPECS("input: Tin"), WEFT__SPECS("output: Tout"),
             WEFT__SPECS("token: string", "Tin: list(type) >= 0", "Tout: list(type) >= 0"), 1,
             NULL),
    WEFT__OP("PyFuncStateless", WEFT__SPECS("input: Tin"), WEFT__SPECS("output: Tout"),
             WEFT__SPECS("token: string", "Tin: list(type) >= 0", "Tout: list(type) >= 0"), 0,
             NULL),
    WEFT__OP("EagerPyFunc", WEFT__SPECS("input: Tin"), WEFT__SPECS("output: Tout"),
             WEFT__SPECS("token: string", "is_async: bool = false", "Tin: list(type) >= 0",
                         "Tout: list(type) >= 0"),
             1, NULL),
    WEFT__OPS_END,
};
