/* Fuzz entry point for the ONNX model reader of weft-conformance (conformance/onnx_runner.c): the
 * bytes of a model.onnx are unpacked as the runner does, then every tensor the runner would turn
 * into a Weft tensor (initializers and the tensor attributes of nodes, Constant's `value`) goes
 * through cf_onnx_tensor, the part that trusts sizes and dtypes in the file. Mapping nodes to ops
 * needs a device and a session and is left to the conformance suite. */
#include "fuzz_targets.h"

#include "onnx_internal.h"

static void decode_tensor(const Onnx__TensorProto *tp) {
  if (tp == NULL) return;
  weft_status_t *st = NULL;
  weft_tensor_t *t = cf_onnx_tensor(tp, &st);
  weft_tensor_unref(t);
  weft_status_free(st);
}

static void walk_graph(const Onnx__GraphProto *g) {
  /* proto/onnx.proto models no subgraph attributes, so there is nothing to recurse into. */
  if (g == NULL) return;
  for (size_t i = 0; i < g->n_initializer; i++) decode_tensor(g->initializer[i]);
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    for (size_t a = 0; a < n->n_attribute; a++) {
      const Onnx__AttributeProto *attr = n->attribute[a];
      decode_tensor(attr->t);
      for (size_t k = 0; k < attr->n_tensors; k++) decode_tensor(attr->tensors[k]);
    }
  }
}

int weft_fuzz_onnx(const uint8_t *data, size_t size) {
  /* The runner's own parse (nesting bounded before protobuf-c recurses). */
  weft_status_t *st = NULL;
  Onnx__ModelProto *m = cf_onnx_model_parse(data, size, "model.onnx", &st);
  weft_status_free(st);
  if (m == NULL) return 0;
  walk_graph(m->graph);
  onnx__model_proto__free_unpacked(m, NULL);
  return 0;
}
