/* Shape inference at graph construction: runs an op's shape function over a node's input shapes
 * (and constant inputs) through the same host-table services plugins' shape functions use. */
#include "graph_internal.h"

#include <string.h>

const weft_tensor_t *weft__node_constant_output(const weft_node_t *node, int index) {
  if (index != 0 || strcmp(node->op_name, "Const") != 0) return NULL;
  const weft__attr_value_t *v = weft__attrs_get(node->attrs, "value");
  return (v && v->kind == WEFT_ATTR_TENSOR) ? v->u.tensor : NULL;
}

const weft_attrs_t *weft__shape_attrs(weft_shape_ctx_t *ctx) { return ctx->node->attrs; }

const char *weft__shape_node_name(weft_shape_ctx_t *ctx) { return ctx->node->name; }

int weft__shape_num_inputs(weft_shape_ctx_t *ctx) { return ctx->node->n_inputs; }

int weft__shape_input(weft_shape_ctx_t *ctx, int index, int64_t dims[WEFT_MAX_RANK]) {
  if (index < 0 || index >= ctx->node->n_inputs) return -1;
  const weft__edge_t *e = &ctx->node->inputs[index];
  weft__shape_t s = weft__node_shape(e->src, e->src_index);
  if (s.rank > 0) memcpy(dims, s.dims, sizeof(int64_t) * (size_t)s.rank);
  return s.rank;
}

weft_dtype_t weft__shape_input_dtype(weft_shape_ctx_t *ctx, int index) {
  if (index < 0 || index >= ctx->node->n_inputs) return WEFT_DT_INVALID;
  const weft__edge_t *e = &ctx->node->inputs[index];
  return weft__dtype_base(e->src->output_types[e->src_index]);
}

weft_status_t *weft__shape_input_const(weft_shape_ctx_t *ctx, int index, weft_tensor_view_t *out) {
  if (index < 0 || index >= ctx->node->n_inputs) {
    return weft_status_new(WEFT_OUT_OF_RANGE, "Node '%s' has no input %d", ctx->node->name, index);
  }
  const weft__edge_t *e = &ctx->node->inputs[index];
  const weft_node_t *src = e->src;
  int src_index = e->src_index;
  /* Look through Identity chains, as frozen graphs wrap their constants in them. */
  while ((strcmp(src->op_name, "Identity") == 0 || strcmp(src->op_name, "StopGradient") == 0) &&
         src->n_inputs == 1 && src_index == 0) {
    src_index = src->inputs[0].src_index;
    src = src->inputs[0].src;
  }
  const weft_tensor_t *t = weft__node_constant_output(src, src_index);
  if (!t) {
    return weft_status_new(WEFT_NOT_FOUND, "Input %d of node '%s' is not a constant", index,
                           ctx->node->name);
  }
  weft__tensor_fill_view(t, out);
  return NULL;
}

weft_status_t *weft__shape_set_output(weft_shape_ctx_t *ctx, int index, int rank,
                                      const int64_t *dims) {
  weft_node_t *node = ctx->node;
  if (index < 0 || index >= node->n_outputs) {
    return weft_status_new(WEFT_INTERNAL, "Shape function of %s set output %d of node '%s', which "
                           "has %d outputs", node->op_name, index, node->name, node->n_outputs);
  }
  if (rank > WEFT_MAX_RANK) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "Node '%s' (%s): output %d has rank %d; Weft "
                           "supports at most %d dimensions", node->name, node->op_name, index,
                           rank, WEFT_MAX_RANK);
  }
  weft__shape_t *s = &ctx->shapes[index];
  s->rank = rank < 0 ? -1 : rank;
  for (int k = 0; k < rank; k++) s->dims[k] = dims[k] < 0 ? WEFT_DIM_UNKNOWN : dims[k];
  return NULL;
}

weft_status_t *weft__node_infer_shapes(weft_node_t *node, weft__shape_t *shapes) {
  for (int k = 0; k < node->n_outputs; k++) shapes[k].rank = -1;
  if (!node->def->shape_fn) return NULL;
  weft_shape_ctx_t ctx = {node, shapes};
  weft_status_t *st = node->def->shape_fn(&ctx);
  if (st && !strstr(weft_status_message(st), node->name)) {
    st = weft_status_prefix(st, "Node '%s' (%s)", node->name, node->op_name);
  }
  return st;
}
