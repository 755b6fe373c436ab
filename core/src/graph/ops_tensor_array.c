/* ops_tensor_array.c: TensorFlow's TensorArray ops, version 3 (TensorArrayV3, Write, Read,
 * Gather, Scatter, Concat, Split, Size, Close, Grad), with the args, attrs and shape functions of
 * tensorflow/core/ops/data_flow_ops.cc. Weft has no resource dtype: the handle is a string vector
 * [container, name] naming the array in the step's resources, the shape TensorFlow's own shape
 * function gives it (Vector(2)); graphs whose attrs say DT_RESOURCE import it as a string. */
#include "ops_shape.h"

static weft_status_t *check_handle(weft_shape_ctx_t *ctx) {
  weft__shape_t h;
  weft__sh_input(ctx, 0, &h);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &h, 1, "handle"));
  if (h.rank == 1 && h.dims[0] >= 0 && h.dims[0] != 2)
    return weft__sh_error(ctx, "Shape of handle must be [2], but is %" G_GINT64_FORMAT, h.dims[0]);
  return NULL;
}

static weft_status_t *scalar_input(weft_shape_ctx_t *ctx, int index, const char *what) {
  weft__shape_t s;
  weft__sh_input(ctx, index, &s);
  return weft__sh_with_rank(ctx, &s, 0, what);
}

static weft_status_t *set_scalar(weft_shape_ctx_t *ctx, int index) {
  weft__shape_t s = {.rank = 0};
  return weft__sh_output(ctx, index, &s);
}

static weft_status_t *element_shape_attr(weft_shape_ctx_t *ctx, const char *name,
                                         weft__shape_t *s) {
  const weft_host_t *h = weft__graph_host();
  s->rank = -1;
  weft_status_t *st = h->attr_shape(h->shape_attrs(ctx), name, &s->rank, s->dims);
  if (st) {
    h->status_free(st);
    s->rank = -1;
  }
  return NULL;
}

static weft_status_t *ta_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 0, "size"));
  weft__shape_t v = {.rank = 1, .dims = {2}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &v));
  return set_scalar(ctx, 1);
}

static weft_status_t *ta_grad_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  weft__shape_t v = {.rank = 1, .dims = {2}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &v));
  return set_scalar(ctx, 1);
}

static weft_status_t *ta_write_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 1, "index"));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 3, "flow_in"));
  return set_scalar(ctx, 0);
}

static weft_status_t *ta_read_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 1, "index"));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 2, "flow_in"));
  weft__shape_t s = {.rank = -1};
  return weft__sh_output(ctx, 0, &s);
}

/* Gather: [len(indices)] + element_shape. */
static weft_status_t *ta_gather_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  weft__shape_t idx, es, out = {.rank = -1};
  weft__sh_input(ctx, 1, &idx);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &idx, 1, "indices"));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 2, "flow_in"));
  element_shape_attr(ctx, "element_shape", &es);
  if (es.rank >= 0 && es.rank < WEFT_MAX_RANK) {
    out.rank = es.rank + 1;
    out.dims[0] = idx.rank == 1 ? idx.dims[0] : WEFT_DIM_UNKNOWN;
    for (int d = 0; d < es.rank; d++) out.dims[d + 1] = es.dims[d];
  }
  return weft__sh_output(ctx, 0, &out);
}

static weft_status_t *ta_scatter_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  weft__shape_t idx;
  weft__sh_input(ctx, 1, &idx);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &idx, 1, "indices"));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 3, "flow_in"));
  return set_scalar(ctx, 0);
}

static weft_status_t *ta_concat_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 1, "flow_in"));
  weft__shape_t out = {.rank = -1}, lengths = {.rank = 1, .dims = {WEFT_DIM_UNKNOWN}};
  WEFT_RETURN_IF_ERROR(weft__sh_output(ctx, 0, &out));
  return weft__sh_output(ctx, 1, &lengths);
}

static weft_status_t *ta_split_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  weft__shape_t lengths;
  weft__sh_input(ctx, 2, &lengths);
  WEFT_RETURN_IF_ERROR(weft__sh_with_rank(ctx, &lengths, 1, "lengths"));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 3, "flow_in"));
  return set_scalar(ctx, 0);
}

static weft_status_t *ta_size_shape(weft_shape_ctx_t *ctx) {
  WEFT_RETURN_IF_ERROR(check_handle(ctx));
  WEFT_RETURN_IF_ERROR(scalar_input(ctx, 1, "flow_in"));
  return set_scalar(ctx, 0);
}

static weft_status_t *ta_close_shape(weft_shape_ctx_t *ctx) {
  return check_handle(ctx);
}

const weft_op_def_t weft__ops_tensor_array[] = {
    WEFT__OP("TensorArrayV3", WEFT__SPECS("size: int32"),
             WEFT__SPECS("handle: string", "flow: float"),
             WEFT__SPECS("dtype: type", "element_shape: shape = { unknown_rank: true }",
                         "dynamic_size: bool = false", "clear_after_read: bool = true",
                         "identical_element_shapes: bool = false",
                         "tensor_array_name: string = ''"),
             1, ta_shape),
    WEFT__OP("TensorArrayGradV3", WEFT__SPECS("handle: string", "flow_in: float"),
             WEFT__SPECS("grad_handle: string", "flow_out: float"), WEFT__SPECS("source: string"),
             1, ta_grad_shape),
    WEFT__OP("TensorArrayWriteV3",
             WEFT__SPECS("handle: string", "index: int32", "value: T", "flow_in: float"),
             WEFT__SPECS("flow_out: float"), WEFT__SPECS("T: type"), 1, ta_write_shape),
    WEFT__OP("TensorArrayReadV3", WEFT__SPECS("handle: string", "index: int32", "flow_in: float"),
             WEFT__SPECS("value: dtype"), WEFT__SPECS("dtype: type"), 1, ta_read_shape),
    WEFT__OP("TensorArrayGatherV3",
             WEFT__SPECS("handle: string", "indices: int32", "flow_in: float"),
             WEFT__SPECS("value: dtype"),
             WEFT__SPECS("dtype: type", "element_shape: shape = { unknown_rank: true }"), 1,
             ta_gather_shape),
    WEFT__OP("TensorArrayScatterV3",
             WEFT__SPECS("handle: string", "indices: int32", "value: T", "flow_in: float"),
             WEFT__SPECS("flow_out: float"), WEFT__SPECS("T: type"), 1, ta_scatter_shape),
    WEFT__OP("TensorArrayConcatV3", WEFT__SPECS("handle: string", "flow_in: float"),
             WEFT__SPECS("value: dtype", "lengths: int64"),
             WEFT__SPECS("dtype: type", "element_shape_except0: shape = { unknown_rank: true }"),
             1, ta_concat_shape),
    WEFT__OP("TensorArraySplitV3",
             WEFT__SPECS("handle: string", "value: T", "lengths: int64", "flow_in: float"),
             WEFT__SPECS("flow_out: float"), WEFT__SPECS("T: type"), 1, ta_split_shape),
    WEFT__OP("TensorArraySizeV3", WEFT__SPECS("handle: string", "flow_in: float"),
             WEFT__SPECS("size: int32"), WEFT__NO_SPECS, 1, ta_size_shape),
    WEFT__OP("TensorArrayCloseV3", WEFT__SPECS("handle: string"), WEFT__NO_SPECS, WEFT__NO_SPECS, 1,
             ta_close_shape),
    WEFT__OPS_END,
};
