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

/* The second half of weft_minimize (optimizers.c): slots, one Apply* op per variable with a
 * gradient (grads[i].node NULL: vars[i] is skipped), and the global step's increment when
 * global_step is not NULL; *train_op is the NoOp depending on all of it. Also used by the
 * synchronous replicas, whose gradients are the accumulators' averages. */
weft_status_t *weft__apply_gradients(weft_graph_t *graph, const weft_optimizer_spec_t *spec,
                                     weft_node_t *const *vars, const weft_output_t *grads,
                                     int n, weft_node_t *global_step, weft_node_t **train_op);

/* The IsVariableInitialized node "<var>/is_initialized" colocated with variable node `var`,
 * added on first use (checkpoint.c; the saver and the monitored session's readiness check share
 * it). *out is owned by the graph. */
weft_status_t *weft__variable_initialized_probe(weft_graph_t *graph, weft_node_t *var,
                                                weft_node_t **out);

#endif /* WEFT_TRAIN_INTERNAL_H */
