/* fuse_internal.h: the plan-time fusion of float32 elementwise chains on CPU devices (fuse.c),
 * run by the step planners (the local session) between kernel instantiation and the executor. */
#ifndef WEFT_EXEC_FUSE_INTERNAL_H
#define WEFT_EXEC_FUSE_INTERNAL_H

#include "plan_internal.h"

/* What a plan keeps of a fusion: the fused nodes (in a private graph), their kernel instances
 * and the aliases the executor needs. Freed with weft__fusion_free after the executor. */
typedef struct weft__fusion weft__fusion_t;

/* Finds the chains among p->nodes (with their kernels p->kernels, feeds, fetches) and `targets`
 * that can run fused. When some can: *nodes_out and *kernels_out are the step's nodes and
 * kernels with each chain replaced by its fused node (the caller frees both arrays with
 * g_ptr_array_free / g_free, not what they point at), and *out owns the fused nodes; pass
 * weft__fusion_aliases(*out) as the executor's aliases. When none can (or the step has control
 * flow, or WEFT_NO_FUSION is set to anything but "constfold"; WEFT_NO_FUSION=contraction turns
 * off only the contraction groups of fuse_contraction.c), all three are NULL and the step runs
 * as it is. A chain whose fused kernel cannot be made runs unfused; the returned status is for
 * internal errors. */
weft_status_t *weft__fuse_elementwise(const weft__executor_params_t *p,
                                      const weft_node_t *const *targets, int n_targets,
                                      const weft_device_options_t *dopts, GPtrArray **nodes_out,
                                      weft__kernel_instance_t ***kernels_out,
                                      weft__fusion_t **out);
/* What the contraction half of the pass (fuse_contraction.c) reads of a step: per node k
 * (index_of maps a node to k + 1), whether its output must exist (fetched, fed, a target, a
 * control input), its data edges out and those from output 0; consumer_of maps a node to the
 * GPtrArray of nodes reading it (one entry per edge). */
typedef struct weft__fuse_view {
  const weft__executor_params_t *p;
  GHashTable *index_of;
  const bool *pinned;
  const int *consumers, *consumers_of_0;
  GHashTable *consumer_of;
} weft__fuse_view_t;
/* The groups [MatMul, BiasAdd (, activation)] and [Conv2D or DepthwiseConv2dNative, BiasAdd or
 * inference FusedBatchNorm (, activation)] whose intermediates feed only the next member on the
 * same device, float32, NHWC: a GPtrArray (caller unrefs) of GPtrArrays of members in order. */
GPtrArray *weft__fuse_find_contractions(const weft__fuse_view_t *v);
/* The _FusedMatMul / _FusedConv2D / _FusedDepthwiseConv2dNative node of one such group, added
 * to `graph` under the last member's name. */
weft_status_t *weft__fuse_build_contraction(weft_graph_t *graph, const GPtrArray *members,
                                            weft_node_t **out);
/* A fused chain's last node -> the fused node (borrowed from f; NULL when f is NULL). */
GHashTable *weft__fusion_aliases(const weft__fusion_t *f);
/* Fused node -> its weft__fused_fallback_t, for the chains planned with shapes known only at
 * run time (borrowed from f; NULL when f is NULL): the executor's fallbacks. */
GHashTable *weft__fusion_fallbacks(const weft__fusion_t *f);
void weft__fusion_free(weft__fusion_t *f); /* accepts NULL */

#endif /* WEFT_EXEC_FUSE_INTERNAL_H */
