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
 * flow, or WEFT_NO_FUSION is set), all three are NULL and the step runs as it is. A chain
 * whose fused kernel cannot be made runs unfused; the returned status is for internal errors. */
weft_status_t *weft__fuse_elementwise(const weft__executor_params_t *p,
                                      const weft_node_t *const *targets, int n_targets,
                                      const weft_device_options_t *dopts, GPtrArray **nodes_out,
                                      weft__kernel_instance_t ***kernels_out,
                                      weft__fusion_t **out);
/* A fused chain's last node -> the fused node (borrowed from f; NULL when f is NULL). */
GHashTable *weft__fusion_aliases(const weft__fusion_t *f);
void weft__fusion_free(weft__fusion_t *f); /* accepts NULL */

#endif /* WEFT_EXEC_FUSE_INTERNAL_H */
