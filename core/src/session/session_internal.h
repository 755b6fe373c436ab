/* Internal declarations of core/src/session: the options struct, the table of session kinds
 * that upper layers register into, and what the saver needs of a session. */
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
  /* Local sessions (TensorFlow's device_count and visible_device_list): "TYPE=N" limits, "GPU"
   * counting every gpu-like device; and the gpu-like devices kept, by index among them ("0,2");
   * NULL: no limit. */
  char **device_counts;
  char *visible_gpus;
};

weft_session_options_t *weft__session_options_copy(const weft_session_options_t *src);
/* The resource manager holding a local session's variables (for the saver); NULL for a remote
 * or closed session. Borrowed from the session. */
weft__resource_mgr_t *weft__session_resources(weft_session_t *session);
/* The graph the session runs (borrowed). */
weft_graph_t *weft__session_graph(weft_session_t *session);

/* ---------------------------------------------------------------------------------------------
 * Session kinds (session.c; docs/architecture.md, "Adding a session kind"). weft_session_new
 * picks the first registered kind that accepts the options' target, as TensorFlow's
 * SessionFactory does; the public weft_session_* functions call its operations on the session's
 * impl. The local kind is built in; kinds of upper layers register themselves, so this layer
 * names none of them. */

typedef struct weft__session_kind {
  const char *name; /* "local", ...: for messages */
  /* How to write a target of this kind, for the error about a target no kind accepts:
   * "\"\" or \"local\" for an in-process session". */
  const char *usage;
  /* Whether the target (never NULL; "" when unset) is this kind's. A kind that accepts a target
   * then owns its errors: a malformed one fails in create with the kind's own message. */
  bool (*accepts)(const char *target);
  /* A session over `graph` (borrowed: it outlives the session and may grow between runs); opts
   * may be NULL. On success *impl is the kind's, freed by free_impl. */
  weft_status_t *(*create)(weft_graph_t *graph, const weft_session_options_t *opts, void **impl);
  /* One step (arguments checked by the caller: session not NULL, trace level known). timeout_ms:
   * the step's deadline, 0 for the session's default. stats: NULL when untraced, otherwise the
   * metadata that receives the step's node records. fetch_outputs[k] gets a new reference. */
  weft_status_t *(*run)(void *impl, const char *const *feed_names,
                        weft_tensor_t *const *feed_values, int n_feeds,
                        const char *const *fetch_names, weft_tensor_t **fetch_outputs,
                        int n_fetches, const char *const *target_names, int n_targets,
                        int64_t timeout_ms, weft_run_metadata_t *stats);
  /* The device a node was placed on ("" when not placed yet); the string lives as long as the
   * session. */
  const char *(*node_device)(void *impl, const char *node_name);
  /* Releases what the session holds (variables, server-side state); later runs fail with
   * FAILED_PRECONDITION "Session has been closed". Steps running meanwhile (close may come from
   * another thread) are cancelled and end at their next node. Closing twice is a no-op. */
  weft_status_t *(*close)(void *impl);
  /* Closes if needed and frees impl. */
  void (*free_impl)(void *impl);
  /* Optional (NULL: none, as for a remote session): the resource manager holding the session's
   * variables, NULL once closed. */
  weft__resource_mgr_t *(*resources)(void *impl);
} weft__session_kind_t;

/* Adds a kind to the process's table (a kind already there is not added again). Thread-safe; may
 * run from a library constructor, before main. `kind` must live as long as the process. */
void weft__session_kind_register(const weft__session_kind_t *kind);
/* The first kind, in registration order after the built-in local kind, that accepts `target`
 * (NULL: ""); NULL when none does. */
const weft__session_kind_t *weft__session_kind_for_target(const char *target);

/* The built-in kind (session_local.c): "" and "local", sessions in this process. */
extern const weft__session_kind_t weft__local_session_kind;

#endif /* WEFT_SESSION_INTERNAL_H */
