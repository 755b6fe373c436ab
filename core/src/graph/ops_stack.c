/* ops_stack.c: TensorFlow 1's stack ops (StackV2, StackPushV2, StackPopV2, StackCloseV2 and the
 * deprecated Ref forms Stack, StackPush, StackPop, StackClose), with the args, attrs and shape
 * functions of tensorflow/core/ops/data_flow_ops.cc. tf.gradients of a TF 1.x while loop saves
 * each iteration's forward values on them. As with the TensorArrays, Weft has no resource dtype:
 * a StackV2 handle is the string vector ["_stacks", name] naming the stack in the step's
 * resources (exec/stack_kernels.c), so both forms share one shape, TensorFlow's Vector(2). */
#include "ops_shape.h"

static weft_status_t *two_element_output(weft_shape_ctx_t *ctx) {
  weft__shape_t v = {.rank = 1, .dims = {2}};
  return weft__sh_output(ctx, 0, &v);
}

static weft_status_t *stack_v2_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t size;
  weft__sh_input(ctx, 0, &size);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &size, 0, "max_size"));
  return two_element_output(ctx);
}

static weft_status_t *stack_handle(weft_shape_ctx_t *ctx) {
  weft__shape_t h;
  weft__sh_input(ctx, 0, &h);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &h, 1, "handle"));
  if (h.dims[0] >= 0 && h.dims[0] != 2)
    return weft__sh_error(ctx, "Shape of stack handle must be [2], but is %" G_GINT64_FORMAT,
                          h.dims[0]);
  return NULL;
}

/* Push forwards the element it pushed. */
static weft_status_t *stack_push_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(stack_handle(ctx));
  weft__shape_t elem;
  weft__sh_input(ctx, 1, &elem);
  return weft__sh_output(ctx, 0, &elem);
}

/* A stack's elements may differ in shape: a pop's is unknown until it runs. */
static weft_status_t *stack_pop_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(stack_handle(ctx));
  weft__shape_t s = {.rank = -1};
  return weft__sh_output(ctx, 0, &s);
}

const weft_op_def_t weft__ops_stack[] = {
    WEFT__OP("StackV2", WEFT__SPECS("max_size: int32"), WEFT__SPECS("handle: string"),
             WEFT__SPECS("elem_type: type", "stack_name: string = ''"), 1, stack_v2_shape),
    WEFT__OP("StackPushV2", WEFT__SPECS("handle: string", "elem: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "swap_memory: bool = false"), 1, stack_push_shape),
    WEFT__OP("StackPopV2", WEFT__SPECS("handle: string"), WEFT__SPECS("elem: elem_type"),
             WEFT__SPECS("elem_type: type"), 1, stack_pop_shape),
    WEFT__OP("StackCloseV2", WEFT__SPECS("handle: string"), WEFT__NO_SPECS, WEFT__NO_SPECS, 1,
             stack_handle),
    WEFT__OP("Stack", WEFT__NO_SPECS, WEFT__SPECS("handle: Ref(string)"),
             WEFT__SPECS("elem_type: type", "stack_name: string = ''"), 1, two_element_output),
    WEFT__OP("StackPush", WEFT__SPECS("handle: Ref(string)", "elem: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "swap_memory: bool = false"), 1, stack_push_shape),
    WEFT__OP("StackPop", WEFT__SPECS("handle: Ref(string)"), WEFT__SPECS("elem: elem_type"),
             WEFT__SPECS("elem_type: type"), 1, stack_pop_shape),
    WEFT__OP("StackClose", WEFT__SPECS("handle: Ref(string)"), WEFT__NO_SPECS, WEFT__NO_SPECS, 1,
             stack_handle),
    WEFT__OPS_END,
};
