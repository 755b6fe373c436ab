/* ops_control_flow.c: TensorFlow 1.x control flow (Switch, Merge, Enter, Exit, NextIteration,
 * LoopCond, ControlTrigger and their Ref forms) and Assert, with the names, args, attrs and shape
 * functions of tensorflow/core/ops/control_flow_ops.cc and logging_ops.cc. The executor gives
 * these ops their meaning (core/src/exec/frames.c); their kernels only let placement find them. */
#include "ops_shape.h"

/* Switch: both outputs are the data's shape. */
static weft_status_t *switch_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t data, pred;
  weft__sh_input(ctx, 0, &data);
  weft__sh_input(ctx, 1, &pred);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &pred, 0, "pred"));
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &data));
  return weft__sh_output(ctx, 1, &data);
}

/* Merge (TensorFlow's MergeShape): the inputs' common rank, with the dims they agree on; unknown
 * rank when a rank is unknown or they differ. value_index is a scalar. */
static weft_status_t *merge_shape(weft_shape_ctx_t *ctx) {
  int n = weft__graph_host()->shape_num_inputs(ctx);
  weft__shape_t out;
  weft__sh_input(ctx, 0, &out);
  for (int i = 1; i < n && out.rank >= 0; i++) {
    weft__shape_t s;
    weft__sh_input(ctx, i, &s);
    if (s.rank != out.rank) {
      out.rank = -1;
      break;
    }
    for (int d = 0; d < s.rank; d++)
      if (s.dims[d] != out.dims[d]) out.dims[d] = WEFT_DIM_UNKNOWN;
  }
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &out));
  weft__shape_t scalar = {.rank = 0};
  return weft__sh_output(ctx, 1, &scalar);
}

/* LoopCond: the predicate of a loop is a scalar. */
static weft_status_t *loop_cond_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s;
  weft__sh_input(ctx, 0, &s);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &s, 0, "input"));
  return weft__sh_output(ctx, 0, &s);
}

static weft_status_t *assert_shape(weft_shape_ctx_t *ctx) {
  (void)ctx;
  return NULL;
}

const weft_op_def_t weft__ops_control_flow[] = {
    WEFT__OP("Switch", WEFT__SPECS("data: T", "pred: bool"),
             WEFT__SPECS("output_false: T", "output_true: T"), WEFT__SPECS("T: type"), 0,
             switch_shape),
    WEFT__OP("RefSwitch", WEFT__SPECS("data: Ref(T)", "pred: bool"),
             WEFT__SPECS("output_false: Ref(T)", "output_true: Ref(T)"), WEFT__SPECS("T: type"), 0,
             switch_shape),
    WEFT__OP("Merge", WEFT__SPECS("inputs: N * T"), WEFT__SPECS("output: T", "value_index: int32"),
             WEFT__SPECS("T: type", "N: int >= 1"), 0, merge_shape),
    WEFT__OP("RefMerge", WEFT__SPECS("inputs: Ref(N * T)"),
             WEFT__SPECS("output: Ref(T)", "value_index: int32"),
             WEFT__SPECS("T: type", "N: int >= 1"), 0, merge_shape),
    WEFT__OP("Enter", WEFT__SPECS("data: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type", "frame_name: string", "is_constant: bool = false",
                         "parallel_iterations: int = 10"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("RefEnter", WEFT__SPECS("data: Ref(T)"), WEFT__SPECS("output: Ref(T)"),
             WEFT__SPECS("T: type", "frame_name: string", "is_constant: bool = false",
                         "parallel_iterations: int = 10"),
             0, weft__shape_fn_unchanged),
    WEFT__OP("Exit", WEFT__SPECS("data: T"), WEFT__SPECS("output: T"), WEFT__SPECS("T: type"), 0,
             weft__shape_fn_unchanged),
    WEFT__OP("RefExit", WEFT__SPECS("data: Ref(T)"), WEFT__SPECS("output: Ref(T)"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_unchanged),
    WEFT__OP("NextIteration", WEFT__SPECS("data: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_unchanged),
    WEFT__OP("RefNextIteration", WEFT__SPECS("data: Ref(T)"), WEFT__SPECS("output: Ref(T)"),
             WEFT__SPECS("T: type"), 0, weft__shape_fn_unchanged),
    WEFT__OP("LoopCond", WEFT__SPECS("input: bool"), WEFT__SPECS("output: bool"), WEFT__NO_SPECS,
             0, loop_cond_shape),
    WEFT__OP("ControlTrigger", WEFT__NO_SPECS, WEFT__NO_SPECS, WEFT__NO_SPECS, 0, assert_shape),
    WEFT__OP("Assert", WEFT__SPECS("condition: bool", "data: T"), WEFT__NO_SPECS,
             WEFT__SPECS("T: list(type)", "summarize: int = 3"), 1, assert_shape),
    WEFT__OPS_END,
};
