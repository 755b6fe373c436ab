/* ops_random.c: the standard random ops (RandomStandardNormal, RandomUniform, RandomUniformInt,
 * TruncatedNormal) with TensorFlow's args and attrs. They are stateful: two nodes with the same
 * inputs must not be merged, and their values are never constant-folded. */
#include "ops_shape.h"

/* The output shape is the value of the 1-D shape input. */
static weft_status_t *random_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t out;
  WEFT_RETURN_IF_ERROR(weft__sh_shape_from_tensor(ctx, 0, &out));
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *random_int_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t minval, maxval;
  weft__sh_input(ctx, 1, &minval);
  weft__sh_input(ctx, 2, &maxval);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &minval, 0, "minval"));
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &maxval, 0, "maxval"));
  return random_shape(ctx);
}

#define RANDOM_FLOAT(name)                                                                    \
  WEFT__OP(name, WEFT__SPECS("shape: T"), WEFT__SPECS("output: dtype"),                        \
           WEFT__SPECS("seed: int = 0", "seed2: int = 0",                                    \
                       "dtype: {half, bfloat16, float, double}",                            \
                       "T: {int32, int64}"),                                                  \
           1, random_shape)

const weft_op_def_t weft__ops_random[] = {
    RANDOM_FLOAT("RandomStandardNormal"),
    RANDOM_FLOAT("RandomUniform"),
    RANDOM_FLOAT("TruncatedNormal"),
    WEFT__OP("RandomUniformInt", WEFT__SPECS("shape: T", "minval: Tout", "maxval: Tout"),
             WEFT__SPECS("output: Tout"),
             WEFT__SPECS("seed: int = 0", "seed2: int = 0", "Tout: {int32, int64}",
                         "T: {int32, int64}"),
             1, random_int_shape),
    WEFT__OPS_END,
};
