/* Synchronous replicated training (TensorFlow's SyncReplicasOptimizer) for between-graph
 * replication: each worker pushes its gradients into per-variable accumulators on the variables'
 * ps tasks; the chief waits until every accumulator holds replicas_to_aggregate gradients of the
 * current step, applies their averages once and advances the global step; gradients computed
 * from an older step are dropped. The waiting happens here, in the client, with a deadline:
 * no kernel blocks, so a slow or dead worker costs an error, never a hang or a tied-up thread. */
#include "train_internal.h"

#include <string.h>

struct weft_sync_replicas {
  int n;                  /* variables with a gradient */
  char **var_names;       /* the variables' node names (for messages) */
  char **count_names;     /* "<var>/sync_count", fetched by the chief's poll */
  char **accepted_names;  /* the WeftAccumulatorApply outputs, fetched by the gradient push */
  char *global_step_name;
  char *local_step_name;  /* the int64 placeholder the push is fed */
  char *update_name;      /* the chief's update: takes, Apply*, global step increment */
  weft_node_t *train_op;  /* the worker's push as one target (a NoOp on every accumulate op) */
  weft_node_t *update_op;
  int replicas_to_aggregate, total_num_replicas;
  int64_t stale;          /* this replica's gradients dropped as stale, per variable */
  bool pending;           /* pushed for pending_step, still waiting (a retry after a deadline) */
  int64_t pending_step;
};

static const weft_output_t NONE = {NULL, 0};

static weft_output_t zeros(weft_graph_t *g, const char *name, weft_dtype_t dtype, int rank,
                           const int64_t *dims, weft_status_t **st) {
  weft_tensor_t *t = weft_tensor_new(dtype, rank, dims);
  weft_output_t o = weft_const(g, name, t, st);
  weft_tensor_unref(t);
  return o;
}

/* "<var>/<suffix>": a non-trainable variable colocated with var (so on var's ps task), zeros. */
static weft_status_t *accumulator_variable(weft_graph_t *g, weft_node_t *var, const char *suffix,
                                           weft_dtype_t dtype, int rank, const int64_t *dims,
                                           weft_node_t **out) {
  char *name = g_strdup_printf("%s/%s", var->name, suffix);
  char *init_name = g_strdup_printf("%s/Initializer/zeros", name);
  weft_status_t *st = NULL;
  weft_output_t init = zeros(g, init_name, dtype, rank, dims, &st);
  if (!st) weft__train_variable(g, name, init, false, out, &st);
  g_free(name);
  g_free(init_name);
  return st;
}

typedef struct accumulator {
  weft_node_t *var, *acc, *count, *step;
  weft_output_t grad;
} accumulator_t;

static weft_status_t *build_accumulator(weft_graph_t *g, accumulator_t *a) {
  const weft__shape_t declared = weft__node_shape(a->var, 0), *shape = &declared;
  bool defined = shape->rank >= 0;
  for (int d = 0; defined && d < shape->rank; d++) defined = shape->dims[d] >= 0;
  if (!defined)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "variable '%s' needs a fully defined shape for its accumulator",
                           a->var->name);
  weft_dtype_t dtype = weft__dtype_base(a->var->output_types[0]);
  weft_graph_push_colocate(g, a->var);
  weft_status_t *st =
      accumulator_variable(g, a->var, "sync_acc", dtype, shape->rank, shape->dims, &a->acc);
  if (!st) st = accumulator_variable(g, a->var, "sync_count", WEFT_DT_INT64, 0, NULL, &a->count);
  if (!st) st = accumulator_variable(g, a->var, "sync_step", WEFT_DT_INT64, 0, NULL, &a->step);
  weft_graph_pop_colocate(g);
  return st;
}

/* WeftAccumulatorApply or WeftAccumulatorTake on a's accumulator, colocated with the variable. */
static weft_status_t *accumulator_op(weft_graph_t *g, const accumulator_t *a, const char *op,
                                     const char *prefix, weft_output_t scalar, bool with_grad,
                                     weft_node_t **out) {
  char *name = g_strdup_printf("%s_%s", prefix, a->var->name);
  weft_graph_push_colocate(g, a->var);
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input(b, weft_out(a->acc, 0));
  weft_op_add_input(b, weft_out(a->count, 0));
  weft_op_add_input(b, weft_out(a->step, 0));
  weft_op_add_input(b, scalar);
  if (with_grad) weft_op_add_input(b, a->grad);
  weft_status_t *st = weft_op_finish(b, out);
  weft_graph_pop_colocate(g);
  g_free(name);
  return st;
}

static char *tensor_name(weft_node_t *node) { return g_strdup(weft_node_name(node)); }

void weft_sync_replicas_free(weft_sync_replicas_t *sync) {
  if (!sync) return;
  for (int i = 0; i < sync->n; i++) {
    g_free(sync->var_names[i]);
    g_free(sync->count_names[i]);
    g_free(sync->accepted_names[i]);
  }
  g_free(sync->var_names);
  g_free(sync->count_names);
  g_free(sync->accepted_names);
  g_free(sync->global_step_name);
  g_free(sync->local_step_name);
  g_free(sync->update_name);
  g_free(sync);
}

static weft_status_t *build(weft_graph_t *g, weft_output_t loss, const weft_optimizer_spec_t *spec,
                            GPtrArray *vars, weft_node_t *global_step, weft_sync_replicas_t *sync) {
  int n = (int)vars->len;
  weft_output_t *xs = g_new0(weft_output_t, n);
  weft_output_t *grads = g_new0(weft_output_t, n);
  for (int i = 0; i < n; i++) xs[i] = weft_out(vars->pdata[i], 0);
  weft_status_t *st = weft_gradients(g, &loss, 1, xs, n, NULL, grads);
  GArray *accs = g_array_new(FALSE, TRUE, sizeof(accumulator_t));
  for (int i = 0; i < n && !st; i++) {
    if (!grads[i].node) continue; /* as minimize: a variable the loss does not depend on */
    accumulator_t a = {.var = vars->pdata[i], .grad = grads[i]};
    g_array_append_val(accs, a);
  }
  g_free(xs);
  g_free(grads);
  if (!st && accs->len == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "no gradients provided for any variable (the loss '%s' does not depend "
                         "on them)", loss.node->name);
  for (guint k = 0; k < accs->len && !st; k++)
    st = build_accumulator(g, &g_array_index(accs, accumulator_t, k));

  weft_output_t local_step = NONE, required = NONE;
  GPtrArray *applies = g_ptr_array_new();
  weft_output_t *averages = g_new0(weft_output_t, accs->len);
  weft_node_t **avg_vars = g_new0(weft_node_t *, accs->len);
  if (!st) {
    weft_graph_push_name_scope(g, "sync_replicas");
    local_step = weft_placeholder(g, "local_step", WEFT_DT_INT64, 0, NULL, &st);
    if (!st) {
      weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
      *(int64_t *)weft_tensor_data(t) = sync->replicas_to_aggregate;
      required = weft_const(g, "replicas_to_aggregate", t, &st);
      weft_tensor_unref(t);
    }
    for (guint k = 0; k < accs->len && !st; k++) {
      accumulator_t *a = &g_array_index(accs, accumulator_t, k);
      weft_node_t *apply = NULL, *take = NULL;
      st = accumulator_op(g, a, "WeftAccumulatorApply", "accumulate", local_step, true, &apply);
      if (!st) st = accumulator_op(g, a, "WeftAccumulatorTake", "take", required, false, &take);
      if (st) break;
      g_ptr_array_add(applies, apply);
      averages[k] = weft_out(take, 0);
      avg_vars[k] = a->var;
    }
    if (!st) {
      weft_op_builder_t *b = weft_op_new(g, "NoOp", "train");
      for (guint k = 0; k < applies->len; k++) weft_op_add_control_input(b, applies->pdata[k]);
      st = weft_op_finish(b, &sync->train_op);
    }
    weft_graph_pop_name_scope(g);
  }
  if (!st)
    st = weft__apply_gradients(g, spec, avg_vars, averages, (int)accs->len, global_step,
                               &sync->update_op);
  if (!st) {
    sync->n = (int)accs->len;
    sync->var_names = g_new0(char *, sync->n);
    sync->count_names = g_new0(char *, sync->n);
    sync->accepted_names = g_new0(char *, sync->n);
    for (int i = 0; i < sync->n; i++) {
      accumulator_t *a = &g_array_index(accs, accumulator_t, i);
      sync->var_names[i] = tensor_name(a->var);
      sync->count_names[i] = tensor_name(a->count);
      sync->accepted_names[i] = tensor_name(applies->pdata[i]);
    }
    sync->global_step_name = tensor_name(global_step);
    sync->local_step_name = tensor_name(local_step.node);
    sync->update_name = tensor_name(sync->update_op);
  }
  g_free(averages);
  g_free(avg_vars);
  g_ptr_array_free(applies, TRUE);
  g_array_free(accs, TRUE);
  return st;
}

weft_status_t *weft_sync_replicas_minimize(weft_graph_t *g, weft_output_t loss,
                                           const weft_optimizer_spec_t *spec,
                                           weft_node_t *const *var_list, int n_vars,
                                           weft_node_t *global_step, int replicas_to_aggregate,
                                           int total_num_replicas, weft_sync_replicas_t **out) {
  if (out) *out = NULL;
  if (!g || !loss.node || !spec || !out)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas: missing graph, loss, optimizer spec or out");
  if (replicas_to_aggregate < 1)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas: replicas_to_aggregate must be at least 1, not %d",
                           replicas_to_aggregate);
  if (total_num_replicas == 0) total_num_replicas = replicas_to_aggregate;
  if (total_num_replicas < replicas_to_aggregate)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas: total_num_replicas (%d) is less than "
                           "replicas_to_aggregate (%d): no step could ever complete",
                           total_num_replicas, replicas_to_aggregate);
  weft_status_t *st = NULL;
  if (!global_step) {
    global_step = weft_train_global_step(g, &st);
    if (st) return weft_status_prefix(st, "sync replicas");
  }
  if (global_step->graph != g || global_step->n_outputs < 1 ||
      !weft__dtype_is_ref(global_step->output_types[0]) ||
      weft__dtype_base(global_step->output_types[0]) != WEFT_DT_INT64)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas: global step '%s' is not an int64 variable of the graph",
                           global_step->name);

  GPtrArray *vars = g_ptr_array_new();
  if (var_list && n_vars > 0) {
    for (int i = 0; i < n_vars; i++) g_ptr_array_add(vars, var_list[i]);
  } else {
    for (int i = 0; i < weft_graph_num_trainable_variables(g); i++)
      g_ptr_array_add(vars, weft_graph_trainable_variable(g, i));
  }
  for (guint k = 0; k < vars->len && !st; k++) {
    weft_node_t *v = vars->pdata[k];
    if (!v || v->graph != g || v->n_outputs < 1 || !weft__dtype_is_ref(v->output_types[0]))
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas: '%s' is not a variable (a node with a ref output)",
                           v ? v->name : "(null)");
  }
  if (!st && vars->len == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "sync replicas: no variables to optimize");
  weft_sync_replicas_t *sync = g_new0(weft_sync_replicas_t, 1);
  sync->replicas_to_aggregate = replicas_to_aggregate;
  sync->total_num_replicas = total_num_replicas;
  if (!st) st = build(g, loss, spec, vars, global_step, sync);
  g_ptr_array_free(vars, TRUE);
  if (st) {
    weft_sync_replicas_free(sync);
    return weft_status_prefix(st, "sync replicas");
  }
  *out = sync;
  return NULL;
}

weft_node_t *weft_sync_replicas_train_op(const weft_sync_replicas_t *sync) {
  return sync ? sync->train_op : NULL;
}

weft_node_t *weft_sync_replicas_update_op(const weft_sync_replicas_t *sync) {
  return sync ? sync->update_op : NULL;
}

int64_t weft_sync_replicas_num_stale(const weft_sync_replicas_t *sync) {
  return sync ? sync->stale : 0;
}

/* ---------------------------------------------------------------------------------------------
 * One step */

static weft_status_t *read_global_step(weft_sync_replicas_t *sync, weft_session_t *session,
                                       int64_t *out) {
  const char *name = sync->global_step_name;
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft_session_run(session, NULL, NULL, 0, &name, &t, 1, NULL, 0);
  if (st) return weft_status_prefix(st, "sync replicas: reading '%s'", name);
  *out = (int64_t)weft_tensor_get_double(t, 0);
  weft_tensor_unref(t);
  return NULL;
}

/* The gradient push, with the caller's feeds and fetches; counts the gradients dropped. When
 * `push` is false (a retry of a step whose push already went in) only the caller's fetches run. */
static weft_status_t *push(weft_sync_replicas_t *sync, weft_session_t *session, bool push,
                           int64_t local_step, const char *const *feed_names,
                           weft_tensor_t *const *feeds, int n_feeds,
                           const char *const *fetch_names, weft_tensor_t **outputs,
                           int n_fetches) {
  int nf = n_feeds + (push ? 1 : 0), nt = n_fetches + (push ? sync->n : 0);
  if (nt == 0) return NULL;
  const char **fnames = g_new0(const char *, nf + 1);
  weft_tensor_t **fvals = g_new0(weft_tensor_t *, nf + 1);
  const char **tnames = g_new0(const char *, nt + 1);
  weft_tensor_t **touts = g_new0(weft_tensor_t *, nt + 1);
  for (int i = 0; i < n_feeds; i++) {
    fnames[i] = feed_names[i];
    fvals[i] = feeds[i];
  }
  for (int i = 0; i < n_fetches; i++) tnames[i] = fetch_names[i];
  weft_tensor_t *step = NULL;
  if (push) {
    step = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
    *(int64_t *)weft_tensor_data(step) = local_step;
    fnames[n_feeds] = sync->local_step_name;
    fvals[n_feeds] = step;
    for (int i = 0; i < sync->n; i++) tnames[n_fetches + i] = sync->accepted_names[i];
  }
  weft_status_t *st = weft_session_run(session, fnames, fvals, nf, tnames, touts, nt, NULL, 0);
  if (!st) {
    for (int i = 0; i < n_fetches; i++) outputs[i] = touts[i];
    for (int i = n_fetches; i < nt; i++) {
      if (weft_tensor_get_double(touts[i], 0) == 0.0) sync->stale++;
      weft_tensor_unref(touts[i]);
    }
  }
  weft_tensor_unref(step);
  g_free(fnames);
  g_free(fvals);
  g_free(tnames);
  g_free(touts);
  return st;
}

/* Polls sleep from 0.2 ms, doubling up to 5 ms: a step of a small model takes about a
 * millisecond, and a poll is one cheap fetch. */
static gulong next_sleep(gulong us) { return us * 2 > 5000 ? 5000 : us * 2; }

/* The chief: until every accumulator has replicas_to_aggregate gradients, or the deadline. */
static weft_status_t *wait_for_gradients(weft_sync_replicas_t *sync, weft_session_t *session,
                                         gint64 deadline, int64_t timeout_ms) {
  weft_tensor_t **counts = g_new0(weft_tensor_t *, sync->n);
  weft_status_t *st = NULL;
  gulong sleep_us = 200;
  for (;;) {
    st = weft_session_run(session, NULL, NULL, 0, (const char *const *)sync->count_names, counts,
                          sync->n, NULL, 0);
    if (st) {
      st = weft_status_prefix(st, "sync replicas: polling the gradient counts");
      break;
    }
    int missing = -1;
    int64_t have = 0;
    for (int i = 0; i < sync->n; i++) {
      int64_t c = (int64_t)weft_tensor_get_double(counts[i], 0);
      if (missing < 0 && c < sync->replicas_to_aggregate) {
        missing = i;
        have = c;
      }
      weft_tensor_unref(counts[i]);
      counts[i] = NULL;
    }
    if (missing < 0) break;
    if (g_get_monotonic_time() >= deadline) {
      st = weft_status_new(WEFT_DEADLINE_EXCEEDED,
                           "sync replicas: %" G_GINT64_FORMAT " of %d gradients for variable "
                           "'%s' arrived within %" G_GINT64_FORMAT " ms; is a worker slow or gone?",
                           have, sync->replicas_to_aggregate, sync->var_names[missing],
                           timeout_ms);
      break;
    }
    g_usleep(sleep_us);
    sleep_us = next_sleep(sleep_us);
  }
  g_free(counts);
  return st;
}

/* A non-chief: until the global step moves past local_step, or the deadline. */
static weft_status_t *wait_for_update(weft_sync_replicas_t *sync, weft_session_t *session,
                                      int64_t local_step, gint64 deadline, int64_t timeout_ms,
                                      int64_t *now) {
  gulong sleep_us = 200;
  for (;;) {
    weft_status_t *st = read_global_step(sync, session, now);
    if (st) return st;
    if (*now > local_step) return NULL;
    if (g_get_monotonic_time() >= deadline)
      return weft_status_new(WEFT_DEADLINE_EXCEEDED,
                             "sync replicas: the global step did not move past %" G_GINT64_FORMAT
                             " within %" G_GINT64_FORMAT " ms; is the chief (or a worker) slow "
                             "or gone?", local_step, timeout_ms);
    g_usleep(sleep_us);
    sleep_us = next_sleep(sleep_us);
  }
}

weft_status_t *weft_sync_replicas_step(weft_sync_replicas_t *sync, weft_session_t *session,
                                       bool is_chief, const char *const *feed_names,
                                       weft_tensor_t *const *feeds, int n_feeds,
                                       const char *const *fetch_names, weft_tensor_t **outputs,
                                       int n_fetches, int64_t timeout_ms,
                                       int64_t *global_step_out) {
  for (int i = 0; i < n_fetches && outputs; i++) outputs[i] = NULL;
  if (!sync || !session || n_feeds < 0 || n_fetches < 0 || (n_feeds > 0 && (!feed_names || !feeds))
      || (n_fetches > 0 && (!fetch_names || !outputs)))
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas step: missing sync, session, feeds or fetches");
  if (timeout_ms <= 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "sync replicas step: timeout_ms must be positive, not %" G_GINT64_FORMAT,
                           timeout_ms);
  gint64 deadline = g_get_monotonic_time() + timeout_ms * 1000;
  int64_t local_step = 0;
  weft_status_t *st = read_global_step(sync, session, &local_step);
  if (st) return st;
  /* A retry after a deadline for the same step waits again rather than adding a second
   * gradient of this replica to the step. */
  bool do_push = !(sync->pending && sync->pending_step == local_step);
  st = push(sync, session, do_push, local_step, feed_names, feeds, n_feeds, fetch_names, outputs,
            n_fetches);
  if (st) return weft_status_prefix(st, "sync replicas: pushing the gradients of step %"
                                    G_GINT64_FORMAT, local_step);
  sync->pending = true;
  sync->pending_step = local_step;
  int64_t now = local_step;
  if (is_chief) {
    st = wait_for_gradients(sync, session, deadline, timeout_ms);
    if (!st) {
      const char *target = sync->update_name;
      st = weft_session_run(session, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
      if (st) st = weft_status_prefix(st, "sync replicas: applying the averaged gradients");
      now = local_step + 1;
    }
  } else {
    st = wait_for_update(sync, session, local_step, deadline, timeout_ms, &now);
  }
  if (st) {
    for (int i = 0; i < n_fetches; i++) {
      weft_tensor_unref(outputs[i]);
      outputs[i] = NULL;
    }
    return st;
  }
  sync->pending = false;
  if (global_step_out) *global_step_out = now;
  return NULL;
}
