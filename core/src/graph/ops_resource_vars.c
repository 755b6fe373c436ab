/* ops_resource_vars.c: TensorFlow's resource-variable ops (VarHandleOp, ReadVariableOp,
 * AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp, VarIsInitializedOp, ResourceGather,
 * ResourceScatter{Update,Add,Sub,Mul,Div,Min,Max}, VariableShape, DestroyResourceOp) with the
 * args and attrs of tensorflow/core/ops/resource_variable_ops.cc. Weft has no resource dtype: the handle is a string
 * scalar naming the variable (the shape TensorFlow gives it), and graphs whose attrs say
 * DT_RESOURCE import it as a string. Weft carries no handle shape data from VarHandleOp to its
 * readers, so what a read returns has the shape it has at run time. */
#include "ops_shape.h"

static weft_status_t *scalar_handle(weft_shape_ctx_t *ctx) {
  weft__shape_t h;
  weft__sh_input(ctx, 0, &h);
  return weft__sh_with_rank(ctx, &h, 0, "resource");
}

static weft_status_t *var_handle_shape(weft_shape_ctx_t *ctx) {
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, 0, &s);
}

static weft_status_t *read_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_handle(ctx));
  weft__shape_t s = {.rank = -1};
  return weft__sh_output(ctx, 0, &s);
}

static weft_status_t *no_output_shape(weft_shape_ctx_t *ctx) { return scalar_handle(ctx); }

static weft_status_t *is_initialized_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_handle(ctx));
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, 0, &s);
}

static weft_status_t *variable_shape_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_handle(ctx));
  weft__shape_t s = {.rank = 1, .dims = {-1}};
  return weft__sh_output(ctx, 0, &s);
}

/* indices.shape + params.shape[1:]: params' rank is not known here, so the rank is not either. */
static weft_status_t *gather_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_handle(ctx));
  weft__shape_t s = {.rank = -1};
  return weft__sh_output(ctx, 0, &s);
}

/* The handle is a scalar; updates' shape is checked against the variable's at run time. */
static weft_status_t *scatter_shape(weft_shape_ctx_t *ctx) { return scalar_handle(ctx); }

const weft_op_def_t weft__ops_resource_vars[] = {
    WEFT__OP("VarHandleOp", WEFT__NO_SPECS, WEFT__SPECS("resource: string"),
             WEFT__SPECS("container: string = ''", "shared_name: string = ''", "dtype: type",
                         "shape: shape", "allowed_devices: list(string) = []"),
             1, var_handle_shape),
    WEFT__OP("ReadVariableOp", WEFT__SPECS("resource: string"), WEFT__SPECS("value: dtype"),
             WEFT__SPECS("dtype: type"), 1, read_shape),
    WEFT__OP("AssignVariableOp", WEFT__SPECS("resource: string", "value: dtype"), WEFT__NO_SPECS,
             WEFT__SPECS("dtype: type", "validate_shape: bool = false"), 1, no_output_shape),
    WEFT__OP("AssignAddVariableOp", WEFT__SPECS("resource: string", "value: dtype"),
             WEFT__NO_SPECS, WEFT__SPECS("dtype: type"), 1, no_output_shape),
    WEFT__OP("AssignSubVariableOp", WEFT__SPECS("resource: string", "value: dtype"),
             WEFT__NO_SPECS, WEFT__SPECS("dtype: type"), 1, no_output_shape),
    WEFT__OP("VarIsInitializedOp", WEFT__SPECS("resource: string"),
             WEFT__SPECS("is_initialized: bool"), WEFT__NO_SPECS, 1, is_initialized_shape),
    WEFT__OP("ResourceGather", WEFT__SPECS("resource: string", "indices: Tindices"),
             WEFT__SPECS("output: dtype"),
             WEFT__SPECS("batch_dims: int = 0", "validate_indices: bool = true", "dtype: type",
                         "Tindices: {int32, int64}"),
             1, gather_shape),
#define SCATTER_OP(name, types)                                                             \
  WEFT__OP(name, WEFT__SPECS("resource: string", "indices: Tindices", "updates: dtype"),    \
           WEFT__NO_SPECS, WEFT__SPECS("dtype: " types, "Tindices: {int32, int64}"), 1,     \
           scatter_shape)
    SCATTER_OP("ResourceScatterUpdate", "type"),
    SCATTER_OP("ResourceScatterAdd", "numbertype"),
    SCATTER_OP("ResourceScatterSub", "numbertype"),
    SCATTER_OP("ResourceScatterMul", "numbertype"),
    SCATTER_OP("ResourceScatterDiv", "numbertype"),
    SCATTER_OP("ResourceScatterMin", "{half, bfloat16, float, double, int32, int64}"),
    SCATTER_OP("ResourceScatterMax", "{half, bfloat16, float, double, int32, int64}"),
#undef SCATTER_OP
    WEFT__OP("VariableShape", WEFT__SPECS("input: string"), WEFT__SPECS("output: out_type"),
             WEFT__SPECS("out_type: {int32, int64} = DT_INT32"), 1, variable_shape_shape),
    WEFT__OP("DestroyResourceOp", WEFT__SPECS("resource: string"), WEFT__NO_SPECS,
             WEFT__SPECS("ignore_lookup_error: bool = true"), 1, no_output_shape),
    WEFT__OPS_END,
};
