/* Internal declarations of the training part of core/src/train (gradients, losses, optimizers,
 * the replica device setter), shared between its files and with weft-conformance's tests. */
#ifndef WEFT_TRAIN_INTERNAL_H
#define WEFT_TRAIN_INTERNAL_H

#include "../graph/graph_internal.h"
#include "weft/weft.h"

/* True when weft_gradients has a gradient function for op type `op` (gradients.c). */
bool weft__gradient_defined(const char *op);

/* A variable (VariableV2 + Assign + read, as weft_variable) that is not added to the graph's
 * trainable variables: optimizer slots, global_step, Adam's beta powers. Returns the read
 * output; *var_out (may be NULL) is the VariableV2 node. */
weft_output_t weft__train_variable(weft_graph_t *graph, const char *name,
                                   weft_output_t initial_value, bool trainable,
                                   weft_node_t **var_out, weft_status_t **status);

#endif /* WEFT_TRAIN_INTERNAL_H */
