/* ops_control.c: the standard control and pass-through ops (NoOp, Identity, IdentityN,
 * StopGradient, PreventGradient, Snapshot, EnsureShape, GuaranteeConst) with TensorFlow's names,
 * args and attrs. */
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

/* EnsureShape: the input's shape refined by the "shape" attr; a known mismatch fails now rather
 * than at run time. */
static weft_status_t *ensure_shape_shape(weft_shape_ctx_t *ctx) {
  const weft_host_t *h = weft__graph_host();
  weft__shape_t in, want = {.rank = -1}, out;
  weft__sh_input(ctx, 0, &in);
  weft_status_t *status = h->attr_shape(h->shape_attrs(ctx), "shape", &want.rank, want.dims);
  if (status) {
    h->status_free(status);
    return weft__sh_output(ctx, 0, &in);
  }
  WEFT_RETURN_IF_ERROR(weft__sh_merge(ctx, &in, &want, &out, "input and the shape attr"));
  return weft__sh_output(ctx, 0, &out);
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
    WEFT__OP("Snapshot", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_unchanged),
    WEFT__OP("EnsureShape", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("shape: shape", "T: type"), 0, ensure_shape_shape),
    /* A promise to optimizers that the value is constant; at run time an identity. */
    WEFT__OP("GuaranteeConst", WEFT__SPECS("input: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 1, weft__shape_fn_unchanged),
    WEFT__OPS_END,
};
