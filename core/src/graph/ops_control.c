/* ops_control.c: the standard control and pass-through ops (NoOp, Identity, IdentityN,
 * StopGradient, PreventGradient) with TensorFlow's names, args and attrs. */
#include "ops_shape.h"

/* Output i has input i's shape (IdentityN). */
static weft_status_t *identity_n_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx);
  for (int i = 0; i < n; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    weft_status_t *status = weft__sh_output(ctx, i, &s);
    if (status) return status;
  }
  return NULL;
}

static weft_status_t *no_outputs_shape(weft_shape_ctx_t *ctx) {
  (void)ctx;
  return NULL;
}

const weft_op_def_t weft__ops_control[] = {
    WEFT__OP("NoOp", WEFT__NO_SPECS, WEFT__NO_SPECS, WEFT__NO_SPECS, 0, no_outputs_shape),
    WEFT__OP("Identity", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_unchanged),
    WEFT__OP("IdentityN", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: list(type)"), 0, identity_n_shape),
    WEFT__OP("StopGradient", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_unchanged),
    WEFT__OP("PreventGradient", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "message: string = ''"), 0, weft__shape_fn_unchanged),
    WEFT__OPS_END,
};
