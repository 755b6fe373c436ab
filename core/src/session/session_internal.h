/* Internal declarations of core/src/session: the options struct and helpers shared with the
 * distributed runtime, which runs the same plans on its workers. */
#ifndef WEFT_SESSION_INTERNAL_H
#define WEFT_SESSION_INTERNAL_H

#include "../exec/exec_internal.h"

struct weft_session_options {
  char *target;
  bool log_device_placement;
  bool allow_soft_placement;
  int inter_op_threads;
  int intra_op_threads;
  bool use_per_session_threads;
  double gpu_memory_fraction;
  bool gpu_allow_growth;
  int64_t operation_timeout_ms; /* remote sessions: deadline of one step; 0 = the server's */
  /* Remote sessions (docs/security.md): TLS files for grpcs:// targets and the cluster token
   * file; NULL when unset. */
  char *tls_cert, *tls_key, *tls_ca;
  char *auth_token_file;
  char **device_filters; /* remote sessions: NULL, or the tasks to involve */
};

weft_session_options_t *weft__session_options_copy(const weft_session_options_t *src);
/* The resource manager holding a local session's variables (for the saver); NULL for a remote
 * or closed session. Borrowed from the session. */
weft__resource_mgr_t *weft__session_resources(weft_session_t *session);
/* The graph the session runs (borrowed). */
weft_graph_t *weft__session_graph(weft_session_t *session);

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
/* Opens `dev`, picks the best kernel for the node there and instantiates it; NOT_FOUND naming
 * node, op, device and the kernels that do exist when there is none. */
weft_status_t *weft__kernel_instance_for_node(const weft_node_t *node, weft__device_t *dev,
                                              const weft_device_options_t *dopts,
                                              weft__kernel_instance_t **out);
/* Prints TensorFlow's log_device_placement lines "name: (Op): device" for `nodes` to stderr. */
void weft__log_placement(GPtrArray *nodes, GHashTable *placement);

#endif /* WEFT_SESSION_INTERNAL_H */
