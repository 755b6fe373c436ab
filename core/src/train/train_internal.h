/* Internal declarations of the training part of core/src/train (gradients, losses, optimizers,
 * the replica device setter), shared between its files and with weft-conformance's tests. */
#ifndef WEFT_TRAIN_INTERNAL_H
#define WEFT_TRAIN_INTERNAL_H

#include "../graph/graph_internal.h"
#include "weft/weft.h"

/* True when weft_gradients has a gradient function for op type `op` (gradients.c). */
bool weft__gradient_defined(const char *op);

/* Runs node n's gradient function, built in or a plugin's program (gradients.c): dy has one
 * entry per output ({NULL, 0}: none arrived), dx one per input, preset to {NULL, 0}; the nodes
 * it adds belong to the graph. UNIMPLEMENTED when the op has no gradient. */
weft_status_t *weft__gradient_one(weft_graph_t *g, weft_node_t *n, const weft_output_t *dy,
                                  weft_output_t *dx);

/* Resource variables in weft_gradients (gradients.c). Per node of the first n0: whether its
 * output 0 is a resource handle (a VarHandleOp, a string x, or one passed through Identity,
 * Enter, Switch, Merge, Exit or NextIteration); caller frees it with g_free. */
guint8 *weft__grad_handles(weft_graph_t *g, int n0, const weft_output_t *xs, int n_xs);
/* Whether a gradient flows over input k of n: a float tensor, or a handle (whose gradient is the
 * dense gradient of its variable's value) into a read (ReadVariableOp, ResourceGather) or one of
 * the ops it passes through. */
bool weft__grad_edge(const guint8 *handle, const weft_node_t *n, int k);
/* Zeros standing for "no gradient" of x: ZerosLike(x), or for a handle zeros of its variable's
 * value (of `dtype`, read for its shape). *out belongs to the graph. */
weft_status_t *weft__grad_zeros_like(weft_graph_t *g, weft_output_t x, weft_dtype_t dtype,
                                     weft_output_t *out);

/* Gradients through control flow (gradients_cf.c). The frames of the graph's first n0 nodes,
 * for one weft_gradients call (from_y: per node, whether it leads to the ys); freed with
 * weft__cf_grad_free. */
typedef struct weft__cf_grad weft__cf_grad_t;
weft__cf_grad_t *weft__cf_grad_new(weft_graph_t *g, int n0, const guint8 *from_y,
                                   const guint8 *handle);
void weft__cf_grad_free(weft__cf_grad_t *cf);
/* The while loop node `id` belongs to (its Enters, its frame's nodes and Exits), 0 for none. */
int weft__cf_grad_loop_of(const weft__cf_grad_t *cf, int id);
/* True when `id` is its loop's last node and the loop's gradient is not built yet. */
bool weft__cf_grad_loop_due(const weft__cf_grad_t *cf, int id);
/* Builds the gradient loop of the while loop of node `id`, from the gradients that arrived at
 * its Exits (arrived: per node, per output, GArray of weft_output_t, as the walk keeps them),
 * and adds the gradients of the values entering the loop to `arrived`. */
weft_status_t *weft__cf_grad_loop(weft__cf_grad_t *cf, int id, GArray ***arrived,
                                  const guint8 *from_y, const guint8 *to_x);
/* The predicate of the cond that input `input` of Merge `merge` comes from, and its branch (0:
 * false, 1: true); UNIMPLEMENTED naming the Merge when no Switch leads to it. */
weft_status_t *weft__cf_cond_branch(const weft_node_t *merge, int input, weft_output_t *pred,
                                    int *branch);

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
