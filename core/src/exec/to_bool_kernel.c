/* to_bool_kernel.c: the core's CPU kernel for ToBool, the If kernel's rule for a cond that is not
 * a bool (tensorflow/core/kernels/functional_ops.cc, ToBool): a scalar number is true when it is
 * not zero (NaN included), a scalar string when it is not empty, a tensor of rank > 0 when it has
 * elements. */
#include "exec_internal.h"

#include <math.h>

static bool scalar_truth(const weft_tensor_t *t) {
  const void *p = weft_tensor_data(t);
  switch (t->dtype) {
    case WEFT_DT_FLOAT: return *(const float *)p != 0.0f;
    case WEFT_DT_DOUBLE: return *(const double *)p != 0.0;
    /* Zero in float16 and bfloat16 is +-0: every bit but the sign's clear. */
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16: return (*(const uint16_t *)p & 0x7fff) != 0;
    case WEFT_DT_STRING: return ((const weft_string_t *)p)->len > 0;
    default: {
      const unsigned char *b = p;
      for (size_t k = 0; k < weft_dtype_size(t->dtype); k++)
        if (b[k]) return true;
      return false;
    }
  }
}

static weft_status_t *to_bool(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_tensor_t *in = ctx->inputs[0].tensor;
  if (in == NULL) {
    return weft_status_new(WEFT_INTERNAL, "ToBool node '%s' has no input value", ctx->node->name);
  }
  bool v = in->rank == 0 ? scalar_truth(in) : in->num_elements > 0;
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_BOOL, 0, NULL);
  *(uint8_t *)weft_tensor_data(t) = v;
  weft_tensor_unref(ctx->outputs[0].tensor);
  ctx->outputs[0].tensor = t;
  return NULL;
}

void weft__to_bool_kernel_register(void) {
  weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                           .op = "ToBool",
                           .device_type = "CPU",
                           .compute = to_bool};
  weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
}
