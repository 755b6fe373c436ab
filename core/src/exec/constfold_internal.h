/* constfold_internal.h: plan-time constant folding (constfold.c), run by the local session's step
 * planner before the fusion pass: the nodes of a step whose value cannot change from step to step
 * are computed once and become Const nodes. docs/performance.md, "Constant folding". */
#ifndef WEFT_EXEC_CONSTFOLD_INTERNAL_H
#define WEFT_EXEC_CONSTFOLD_INTERNAL_H

#include "plan_internal.h"

/* What a plan keeps of its folding: the Const nodes (in a private graph), their kernel instances
 * and the aliases (folded node -> its Const) the executor needs. */
typedef struct weft__constfold weft__constfold_t;

/* Where the pass evaluates: the pools and resources a kernel call sees (borrowed). */
typedef struct weft__constfold_env {
  weft__threadpool_t *intra_pool;
  weft__resource_mgr_t *resources;
  const weft_device_options_t *dopts;
} weft__constfold_env_t;

/* Folds what can be folded among p->nodes (kernels p->kernels; feeds and fetches as p's) and
 * `targets`: a deterministic, stateless node whose every data input is a Const or a folded node,
 * with no control input from anything else, not fed, outside control flow, one output of at most
 * 10 MB, evaluated with its CPU kernel. A node whose evaluation fails stays as it is (its error
 * then comes at run time as before). When something was folded: *nodes_out and *kernels_out are
 * the step's nodes and kernels with the folded nodes replaced by Consts or dropped (the caller
 * frees both arrays with g_ptr_array_free / g_free, not what they point at), *out owns the
 * Consts: pass weft__constfold_aliases(*out) to the executor (merged with the fusion's). When
 * nothing was (or WEFT_NO_FUSION is "constfold" or any value but "contraction"), all three are
 * NULL. The returned status is for internal errors only. */
weft_status_t *weft__constfold(const weft__executor_params_t *p, const weft_node_t *const *targets,
                               int n_targets, const weft__constfold_env_t *env,
                               GPtrArray **nodes_out, weft__kernel_instance_t ***kernels_out,
                               weft__constfold_t **out);
/* A folded node -> its Const (borrowed from f; NULL when f is NULL). */
GHashTable *weft__constfold_aliases(const weft__constfold_t *f);
void weft__constfold_free(weft__constfold_t *f); /* accepts NULL */

#endif /* WEFT_EXEC_CONSTFOLD_INTERNAL_H */
