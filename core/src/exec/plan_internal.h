/* Step planning, shared by every runner of steps (the local session, the distributed master and
 * worker): a step's feeds, fetches and targets resolved against a graph, pruning to the nodes
 * they need, the plan cache keyed by the step's signature, and a node's kernel instance. What a
 * plan holds (an executor, partitions) is the runner's business; so are placement and locking. */
#ifndef WEFT_EXEC_PLAN_INTERNAL_H
#define WEFT_EXEC_PLAN_INTERNAL_H

#include "exec_internal.h"

/* A step's feeds, fetches and targets resolved against a graph. The arrays are owned by the
 * spec (freed by weft__step_spec_clear); feed tensors are borrowed from the caller. */
typedef struct weft__step_spec {
  weft__feed_t *feeds;
  int n_feeds;
  weft__fetch_t *fetches;
  int n_fetches;
  weft_node_t **targets;
  int n_targets;
} weft__step_spec_t;

/* Resolves names ("x", "x:1"; targets may be node names) against `graph` and checks each feed's
 * dtype and shape against the tensor it replaces. NOT_FOUND / INVALID_ARGUMENT naming the name at
 * fault; on error the spec is left empty. */
weft_status_t *weft__step_spec_resolve(weft_graph_t *graph, const char *const *feed_names,
                                       weft_tensor_t *const *feed_values, int n_feeds,
                                       const char *const *fetch_names, int n_fetches,
                                       const char *const *target_names, int n_targets,
                                       weft__step_spec_t *spec);
void weft__step_spec_clear(weft__step_spec_t *spec);
/* "feeds|fetches|targets" by name: the key of a cached plan. The caller g_free()s it. */
char *weft__step_spec_signature(const weft__step_spec_t *spec);
/* INVALID_ARGUMENT naming the feed when `t` does not fit output `index` of `node`. */
weft_status_t *weft__check_feed(const weft_node_t *node, int index, const char *name,
                                const weft_tensor_t *t);
/* True when every output of `node` is fed (the node itself then does not run). */
bool weft__node_fully_fed(const weft__feed_t *feeds, int n, const weft_node_t *node);
/* The nodes the step needs, in creation order (a topological order); the caller frees the array
 * (not the nodes). */
GPtrArray *weft__step_needed_nodes(const weft__step_spec_t *spec);
/* INVALID_ARGUMENT naming the first Placeholder in `nodes` (which therefore is not fed). */
weft_status_t *weft__check_unfed_placeholders(GPtrArray *nodes);
/* Prunes the graph to what the step needs: weft__step_needed_nodes, then
 * weft__check_unfed_placeholders. On success *nodes is the caller's; on error it is NULL. */
weft_status_t *weft__step_prune(const weft__step_spec_t *spec, GPtrArray **nodes);
/* Opens `dev`, picks the best kernel for the node there and instantiates it; NOT_FOUND naming
 * node, op, device and the kernels that do exist when there is none. */
weft_status_t *weft__kernel_instance_for_node(const weft_node_t *node, weft__device_t *dev,
                                              const weft_device_options_t *dopts,
                                              weft__kernel_instance_t **out);

/* ---------------------------------------------------------------------------------------------
 * The plan cache: one plan per step signature, built on the first step that needs it. The cache
 * owns its plans (free_plan drops one); it takes no lock: its owner's lock guards it. */

typedef struct weft__plan_cache weft__plan_cache_t;
/* Builds the plan of `spec`; on success *plan is handed to the cache. */
typedef weft_status_t *(*weft__plan_build_fn)(void *user_data, const weft__step_spec_t *spec,
                                              void **plan);

weft__plan_cache_t *weft__plan_cache_new(GDestroyNotify free_plan);
void weft__plan_cache_free(weft__plan_cache_t *cache); /* accepts NULL */
/* The cached plan of spec's signature (borrowed), built with build(user_data, spec, ...) and
 * cached on a miss. A failed build caches nothing and leaves *plan NULL. */
weft_status_t *weft__plan_cache_get(weft__plan_cache_t *cache, const weft__step_spec_t *spec,
                                    weft__plan_build_fn build, void *user_data, void **plan);
/* Calls fn(plan, user_data) for every cached plan. */
void weft__plan_cache_foreach(weft__plan_cache_t *cache, GFunc fn, void *user_data);
/* Drops every plan. */
void weft__plan_cache_clear(weft__plan_cache_t *cache);

/* ---------------------------------------------------------------------------------------------
 * The step memo: the last few name lists a runner saw, each with what they resolved to and its
 * plan, so that a step repeating an earlier one's names (a serving or training loop) skips
 * resolving them, hashing a signature and looking the plan up (TensorFlow's MakeCallable, without
 * a new API). An entry holds only while the graph has not grown since it was made: a name that
 * did not resolve to a node "x" then ("x:1" read as a node name) could resolve to one now. Like
 * the plan cache it takes no lock; its owner's lock guards it, and it must be cleared whenever
 * the plans it points to are dropped. */

typedef struct weft__step_memo weft__step_memo_t;

weft__step_memo_t *weft__step_memo_new(void);
void weft__step_memo_free(weft__step_memo_t *memo); /* accepts NULL */
void weft__step_memo_clear(weft__step_memo_t *memo);
/* The plan remembered for exactly these names (borrowed), with the fed outputs they name in
 * *feeds (n_feeds entries, borrowed from the memo: valid until the memo's next store or clear;
 * their tensors are not set); NULL when there is none. */
void *weft__step_memo_find(weft__step_memo_t *memo, const weft_graph_t *graph,
                           const char *const *feed_names, int n_feeds,
                           const char *const *fetch_names, int n_fetches,
                           const char *const *target_names, int n_targets,
                           const weft__feed_t **feeds);
/* Remembers `plan` (borrowed: owned by the caller's plan cache) for these names, which resolved
 * to `spec` against `graph`; replaces the oldest entry when the memo is full. */
void weft__step_memo_store(weft__step_memo_t *memo, const weft_graph_t *graph,
                           const char *const *feed_names, const char *const *fetch_names,
                           const char *const *target_names, const weft__step_spec_t *spec,
                           void *plan);

#endif /* WEFT_EXEC_PLAN_INTERNAL_H */
