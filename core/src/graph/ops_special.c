/* ops_special.c: TensorFlow's special-math ops that real graphs use beyond ops_bits.c's gamma
 * family, with TensorFlow's names, args, attrs, type constraints and shape functions (from its
 * math_ops.cc): Zeta, Polygamma, Erfinv, Ndtri, BesselI0e, BesselI1e, Xdivy, Xlogy, Xlog1py,
 * MulNoNan, NextAfter, ApproximateEqual and CumulativeLogsumexp. */
#include "ops_shape.h"

#define FLOATS "{bfloat16, half, float, double}"

#define UNARY(name, types)                                                          \
  WEFT__OP(name, WEFT__SPECS("x: T"), WEFT__SPECS("y: T"), WEFT__SPECS("T: " types), 0, \
           weft__shape_fn_unchanged)
#define BINARY(name, a, b, out, types)                                                   \
  WEFT__OP(name, WEFT__SPECS(a ": T", b ": T"), WEFT__SPECS(out ": T"),                  \
           WEFT__SPECS("T: " types), 0, weft__shape_fn_broadcast)

const weft_op_def_t weft__ops_special[] = {
    BINARY("Zeta", "x", "q", "z", "{float, double}"),
    BINARY("Polygamma", "a", "x", "z", "{float, double}"),
    UNARY("Erfinv", FLOATS),
    UNARY("Ndtri", FLOATS),
    UNARY("BesselI0e", FLOATS),
    UNARY("BesselI1e", FLOATS),
    BINARY("Xdivy", "x", "y", "z", FLOATS),
    BINARY("Xlogy", "x", "y", "z", FLOATS),
    BINARY("Xlog1py", "x", "y", "z", FLOATS),
    BINARY("MulNoNan", "x", "y", "z", FLOATS),
    WEFT__OP("NextAfter", WEFT__SPECS("x1: T", "x2: T"), WEFT__SPECS("output: T"),
             WEFT__SPECS("T: {double, float} = DT_FLOAT"), 0, weft__shape_fn_broadcast),
    /* Not broadcasting: TensorFlow merges the two shapes and its kernel wants them equal. */
    WEFT__OP("ApproximateEqual", WEFT__SPECS("x: T", "y: T"), WEFT__SPECS("z: bool"),
             WEFT__SPECS("T: numbertype", "tolerance: float = 1e-05"), 0,
             weft__shape_fn_merge_all),
    WEFT__OP("CumulativeLogsumexp", WEFT__SPECS("x: T", "axis: Tidx"), WEFT__SPECS("out: T"),
             WEFT__SPECS("exclusive: bool = false", "reverse: bool = false",
                         "T: {half, float, double}", "Tidx: {int32, int64} = DT_INT32"),
             0, weft__shape_fn_unchanged),
    WEFT__OPS_END,
};
