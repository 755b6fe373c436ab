/* ops_fused.c: _FusedElementwise, the internal op the plan-time fusion pass (exec/fuse.c) puts in
 * place of a chain of float32 elementwise ops on one CPU device, so that the chain reads its input
 * and writes its output once (docs/performance.md, "Fusion"). Users never write it and graph
 * exports never hold it: the pass builds its nodes in a private graph owned by the step's plan. */
#include "ops_shape.h"

const weft_op_def_t weft__ops_fused[] = {
    /* y = ops[k-1](... ops[0](x) ...). ops: the TensorFlow op names joined by ';'. Per op:
     * operand[k] is -1 for a unary op, else the index in `operands` of its other argument (a
     * scalar, a tensor of x's shape, or a row repeated over x's last dimension); operand_left[k]
     * is 1 when that operand is the op's first argument (Sub, Div, ...); alpha[k] is the op's
     * float attribute (LeakyRelu's alpha), 0 otherwise. fused_nodes: the names of the nodes it
     * stands for, joined by ';', for traces and errors. */
    WEFT__OP("_FusedElementwise", WEFT__SPECS("x: T", "operands: N * T"), WEFT__SPECS("y: T"),
             WEFT__SPECS("T: {float}", "N: int >= 0", "ops: string", "operand: list(int)",
                         "operand_left: list(int)", "alpha: list(float)",
                         "fused_nodes: string = ''"),
             0, weft__shape_fn_unchanged),
    WEFT__OPS_END,
};
