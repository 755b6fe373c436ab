/* Reading a node's inputs back through the client API: its data inputs (the producing output of
 * each), its control inputs and its colocation group. Bindings such as the Python package's
 * Operation.inputs and Operation.control_inputs walk a graph with these. */
#include "graph_internal.h"

int weft_node_num_inputs(const weft_node_t *node) { return node ? node->n_inputs : 0; }

weft_output_t weft_node_input(const weft_node_t *node, int index) {
  weft_output_t o = {NULL, 0};
  if (!node || index < 0 || index >= node->n_inputs) return o;
  o.node = node->inputs[index].src;
  o.index = node->inputs[index].src_index;
  return o;
}

int weft_node_num_control_inputs(const weft_node_t *node) {
  return node && node->control_inputs ? (int)node->control_inputs->len : 0;
}

weft_node_t *weft_node_control_input(const weft_node_t *node, int index) {
  if (index < 0 || index >= weft_node_num_control_inputs(node)) return NULL;
  return g_ptr_array_index(node->control_inputs, index);
}

const char *weft_node_colocation_group(const weft_node_t *node) {
  return node ? node->colocation_group : NULL;
}
