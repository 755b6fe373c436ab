/* The monitored training session (TensorFlow's MonitoredTrainingSession): a session that sets
 * itself up the way a training program needs (the chief restores or initialises, the others wait
 * for the variables), runs the stop / checkpoint / logging hooks after each step, and survives
 * the loss of a task: a step that fails because a task went away or came back empty recreates
 * the session, restores the last checkpoint and runs again; a step that ran past its deadline (a
 * frozen peer) runs again on the same session; a periodic save that fails is logged and tried
 * again at the next save point. Retries pause with capped exponential backoff and stop once the
 * recovery budget (a time, default RECOVERY_TIMEOUT_SECS) is used: then the last error is
 * returned. */
#include <math.h>
#include <string.h>

#include "../base/base_internal.h"
#include "../session/session_internal.h"
#include "event_internal.h"
#include "train_internal.h"

#define MS_WHO "monitored_session"
#define READY_POLL_MS 50
#define BACKOFF_CAP_MS 5000
/* Long enough for a ps to be restarted by hand or by a scheduler, short enough that a cluster
 * that is not coming back ends the job instead of hanging it. */
#define RECOVERY_TIMEOUT_SECS 300.0

struct weft_monitored_session_options {
  weft_session_options_t *session;
  bool is_chief;
  char *checkpoint_dir;
  double save_secs;
  int64_t save_steps;
  int max_to_keep;
  int64_t last_step;
  int64_t log_steps;
  char *loss_tensor;
  weft_monitored_after_run_fn after_run;
  void *after_run_data;
  int max_retries;      /* < 0: no count limit, the time budget alone */
  int64_t backoff_ms;
  double recovery_secs; /* the time budget of one step's recovery */
  int64_t ready_timeout_ms;
  int64_t summary_steps; /* 0: no event file */
};

struct weft_monitored_session {
  weft_monitored_session_options_t opts; /* owns its strings and session options */
  weft_graph_t *graph;
  weft_session_t *session;
  weft_saver_t *saver;
  weft_node_t *init_op;
  char *checkpoint_prefix;   /* DIR/model.ckpt, or NULL */
  char *last_checkpoint;     /* "" when none */
  int64_t global_step;
  int64_t saved_step;        /* global step of the last save or restore */
  gint64 saved_time_us;
  int64_t save_tried_step;   /* global step and time of the last save attempt, failed or not: */
  gint64 save_tried_us;      /* the next periodic save is due counting from them */
  int failed_saves;          /* periodic saves failed in a row */
  bool ready_timed_out;      /* create_session's error is the readiness timeout: not retried */
  bool session_ready;        /* the session was set up completely (a step may run again on it) */
  int64_t local_steps;
  int64_t logged_step;
  gint64 logged_time_us;
  int recoveries;
  bool stop;
  bool closed;
  /* Summaries (the chief with a checkpoint folder and summary_steps > 0): */
  weft_event_writer_t *events;
  GPtrArray *summary_fetches; /* "node:0" of the summary ops to fetch; NULL: not collected yet */
  bool summary_due;           /* this step fetches them */
  bool graph_written;
  int64_t summary_step;       /* global step of the last summaries (-1: none yet) */
  gint64 summary_time_us;
};

weft_monitored_session_options_t *weft_monitored_session_options_new(void) {
  weft_monitored_session_options_t *o = g_new0(weft_monitored_session_options_t, 1);
  o->session = weft_session_options_new();
  o->is_chief = true;
  o->save_secs = 600;
  o->summary_steps = 100;
  o->max_to_keep = 5;
  o->last_step = -1;
  o->max_retries = -1;
  o->backoff_ms = 200;
  o->recovery_secs = RECOVERY_TIMEOUT_SECS;
  o->ready_timeout_ms = 60000;
  return o;
}

static void options_clear(weft_monitored_session_options_t *o) {
  weft_session_options_free(o->session);
  g_free(o->checkpoint_dir);
  g_free(o->loss_tensor);
}

void weft_monitored_session_options_free(weft_monitored_session_options_t *o) {
  if (!o) return;
  options_clear(o);
  g_free(o);
}

void weft_monitored_session_options_set_session_options(weft_monitored_session_options_t *o,
                                                        const weft_session_options_t *session) {
  weft_session_options_free(o->session);
  o->session = session ? weft__session_options_copy(session) : weft_session_options_new();
}

void weft_monitored_session_options_set_is_chief(weft_monitored_session_options_t *o,
                                                 bool is_chief) {
  o->is_chief = is_chief;
}

void weft_monitored_session_options_set_checkpoint_dir(weft_monitored_session_options_t *o,
                                                       const char *dir) {
  g_free(o->checkpoint_dir);
  o->checkpoint_dir = dir && *dir ? g_strdup(dir) : NULL;
}

void weft_monitored_session_options_set_save_checkpoint_secs(weft_monitored_session_options_t *o,
                                                             double secs) {
  o->save_secs = secs > 0 ? secs : 0;
}

void weft_monitored_session_options_set_save_checkpoint_steps(
    weft_monitored_session_options_t *o, int64_t steps) {
  o->save_steps = steps > 0 ? steps : 0;
}

void weft_monitored_session_options_set_max_to_keep(weft_monitored_session_options_t *o,
                                                    int max_to_keep) {
  o->max_to_keep = max_to_keep;
}

void weft_monitored_session_options_set_last_step(weft_monitored_session_options_t *o,
                                                  int64_t last_step) {
  o->last_step = last_step;
}

void weft_monitored_session_options_set_log_every_steps(weft_monitored_session_options_t *o,
                                                        int64_t steps, const char *loss_tensor) {
  o->log_steps = steps > 0 ? steps : 0;
  g_free(o->loss_tensor);
  o->loss_tensor = loss_tensor && *loss_tensor ? g_strdup(loss_tensor) : NULL;
}

void weft_monitored_session_options_set_after_run(weft_monitored_session_options_t *o,
                                                  weft_monitored_after_run_fn fn,
                                                  void *user_data) {
  o->after_run = fn;
  o->after_run_data = user_data;
}

void weft_monitored_session_options_set_max_retries(weft_monitored_session_options_t *o,
                                                    int max_retries) {
  o->max_retries = max_retries >= 0 ? max_retries : -1;
}

void weft_monitored_session_options_set_recovery_timeout_secs(weft_monitored_session_options_t *o,
                                                              double secs) {
  o->recovery_secs = secs > 0 ? secs : 0;
}

void weft_monitored_session_options_set_retry_backoff_ms(weft_monitored_session_options_t *o,
                                                         int64_t ms) {
  o->backoff_ms = ms > 0 ? ms : 1;
}

void weft_monitored_session_options_set_summary_steps(weft_monitored_session_options_t *o,
                                                     int64_t steps) {
  o->summary_steps = steps < 0 ? 0 : steps;
}

const char *weft_monitored_session_event_file(const weft_monitored_session_t *ms) {
  return ms->events ? weft_event_writer_path(ms->events) : "";
}

void weft_monitored_session_options_set_ready_timeout_ms(weft_monitored_session_options_t *o,
                                                         int64_t ms) {
  o->ready_timeout_ms = ms > 0 ? ms : 1;
}

/* ---------------------------------------------------------------------------------------------
 * Setting up a session */

static bool is_variable_node(const weft_node_t *n) {
  return strcmp(n->op_name, "VariableV2") == 0 || strcmp(n->op_name, "Variable") == 0;
}

static GPtrArray *graph_variables(weft_graph_t *g) {
  GPtrArray *vars = g_ptr_array_new();
  int count = weft_graph_num_nodes(g);
  for (int i = 0; i < count; i++) {
    weft_node_t *n = weft_graph_node_at(g, i);
    if (is_variable_node(n)) g_ptr_array_add(vars, n);
  }
  return vars;
}

/* NULL when every variable of the graph is initialised; FAILED_PRECONDITION naming the ones
 * that are not (at most a few), or the step's own error. */
static weft_status_t *check_ready(weft_monitored_session_t *ms) {
  GPtrArray *vars = graph_variables(ms->graph);
  weft_status_t *st = NULL;
  char **probes = g_new0(char *, vars->len + 1);
  for (guint i = 0; !st && i < vars->len; i++) {
    weft_node_t *probe = NULL;
    st = weft__variable_initialized_probe(ms->graph, vars->pdata[i], &probe);
    if (!st) probes[i] = g_strdup(probe->name);
  }
  weft_tensor_t **inited = g_new0(weft_tensor_t *, vars->len + 1);
  if (!st && vars->len) {
    st = weft_session_run(ms->session, NULL, NULL, 0, (const char *const *)probes, inited,
                          (int)vars->len, NULL, 0);
  }
  if (!st) {
    GString *missing = g_string_new(NULL);
    int n_missing = 0;
    for (guint i = 0; i < vars->len; i++) {
      if (weft_tensor_get_double(inited[i], 0) != 0) continue;
      if (n_missing++ < 5) {
        g_string_append_printf(missing, "%s'%s'", missing->len ? ", " : "",
                               ((weft_node_t *)vars->pdata[i])->name);
      }
    }
    if (n_missing) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION, "%d variable%s not initialised: %s%s",
                           n_missing, n_missing == 1 ? " is" : "s are", missing->str,
                           n_missing > 5 ? ", ..." : "");
    }
    g_string_free(missing, TRUE);
  }
  for (guint i = 0; i < vars->len; i++) weft_tensor_unref(inited[i]);
  g_free(inited);
  g_strfreev(probes);
  g_ptr_array_unref(vars);
  return st;
}

static weft_status_t *read_global_step(weft_monitored_session_t *ms) {
  const char *name = "global_step";
  weft_tensor_t *value = NULL;
  weft_status_t *st = weft_session_run(ms->session, NULL, NULL, 0, &name, &value, 1, NULL, 0);
  if (!st) ms->global_step = (int64_t)weft_tensor_get_double(value, 0);
  weft_tensor_unref(value);
  return st;
}

static void set_last_checkpoint(weft_monitored_session_t *ms, const char *path) {
  g_free(ms->last_checkpoint);
  ms->last_checkpoint = g_strdup(path ? path : "");
}

static void mark_saved(weft_monitored_session_t *ms) {
  ms->saved_step = ms->save_tried_step = ms->global_step;
  ms->saved_time_us = ms->save_tried_us = g_get_monotonic_time();
  ms->failed_saves = 0;
}

static weft_status_t *save_now(weft_monitored_session_t *ms) {
  if (!ms->opts.is_chief || !ms->checkpoint_prefix) return NULL;
  char *saved = NULL;
  weft_status_t *st = weft_saver_save(ms->saver, ms->session, ms->graph, ms->checkpoint_prefix,
                                      ms->global_step, &saved);
  if (!st) {
    set_last_checkpoint(ms, saved);
    mark_saved(ms);
    weft__log(WEFT_LOG_INFO, MS_WHO, "saved checkpoint %s", saved);
  }
  g_free(saved);
  return st;
}

/* Summaries are an aid: a failed write (a full disk) is logged, never fails a training step. */
static void log_event_error(weft_monitored_session_t *ms, weft_status_t *st) {
  if (!st) return;
  weft__log(WEFT_LOG_WARNING, MS_WHO, "writing %s failed: %s",
            weft_event_writer_path(ms->events), weft_status_message(st));
  weft_status_free(st);
}

/* A new session in the state training can start from: the chief restores the latest checkpoint
 * (or initialises and saves a first one), the others wait until the chief has done so. */
static weft_status_t *setup_session(weft_monitored_session_t *ms) {
  if (ms->session) {
    weft_status_free(weft_session_close(ms->session));
    weft_session_free(ms->session);
    ms->session = NULL;
  }
  weft_status_t *st = NULL;
  ms->ready_timed_out = false;
  ms->session = weft_session_new(ms->graph, ms->opts.session, &st);
  if (st) return st;
  if (ms->opts.is_chief) {
    char *latest = ms->opts.checkpoint_dir ? weft_checkpoint_latest(ms->opts.checkpoint_dir) : NULL;
    if (latest) {
      st = weft_saver_restore(ms->saver, ms->session, ms->graph, latest);
      if (!st) {
        set_last_checkpoint(ms, latest);
        st = read_global_step(ms);
        mark_saved(ms);
        weft__log(WEFT_LOG_INFO, MS_WHO, "restored %s (global step %" G_GINT64_FORMAT ")",
                  latest, ms->global_step);
        /* TensorBoard drops the steps after this one that the previous run had written. */
        if (!st && ms->events) log_event_error(ms, weft_event_writer_add_session_log(
            ms->events, WEFT_SESSION_LOG_START, "restored", latest, ms->global_step));
      }
      g_free(latest);
      return st;
    }
    const char *init = ms->init_op->name;
    st = weft_session_run(ms->session, NULL, NULL, 0, NULL, NULL, 0, &init, 1);
    if (!st) st = read_global_step(ms);
    if (!st) st = save_now(ms);
    return st;
  }
  gint64 deadline = g_get_monotonic_time() + ms->opts.ready_timeout_ms * 1000;
  for (;;) {
    st = check_ready(ms);
    if (!st || weft_status_code(st) != WEFT_FAILED_PRECONDITION) break;
    if (g_get_monotonic_time() >= deadline) {
      ms->ready_timed_out = true;
      weft_status_t *late = weft_status_new(
          WEFT_DEADLINE_EXCEEDED, "Monitored session: the variables were not ready after %" G_GINT64_FORMAT
          " ms (is the chief running?): %s", ms->opts.ready_timeout_ms, weft_status_message(st));
      weft_status_free(st);
      return late;
    }
    weft_status_free(st);
    g_usleep(READY_POLL_MS * 1000);
  }
  if (!st) st = read_global_step(ms);
  return st;
}

static weft_status_t *create_session(weft_monitored_session_t *ms) {
  ms->session_ready = false;
  weft_status_t *st = setup_session(ms);
  ms->session_ready = st == NULL;
  return st;
}

/* Errors a lost or restarted task causes; the step is worth running again on a new session. */
static bool needs_new_session(const weft_status_t *st) {
  weft_code_t code = weft_status_code(st);
  if (code == WEFT_UNAVAILABLE || code == WEFT_ABORTED) return true;
  /* A parameter server that came back empty: its variables are gone until the chief restores. */
  return code == WEFT_FAILED_PRECONDITION &&
         strstr(weft_status_message(st), "uninitialized value") != NULL;
}

/* A step (or a session's creation) that ran past its deadline: a peer frozen or cut off, whose
 * variables are still there once it answers again. The step runs again on the same session
 * (recreating it would throw away the steps since the last checkpoint for nothing). */
static bool retryable(const weft_monitored_session_t *ms, const weft_status_t *st) {
  if (needs_new_session(st)) return true;
  return weft_status_code(st) == WEFT_DEADLINE_EXCEEDED && !ms->ready_timed_out;
}

static double secs_since(gint64 t0_us) {
  return (double)(g_get_monotonic_time() - t0_us) / 1e6;
}

/* Retries `cause` until something works or the budget is used: recreates the session for a lost
 * or restarted task, or just pauses before the step runs again on the same session for a missed
 * deadline (*rerun then says so and nothing else is done). Pauses start at backoff_ms, double, are
 * capped at BACKOFF_CAP_MS and never end past the budget. *attempts counts the attempts since
 * *first_us, the monotonic time of the first failure of this step (set here when 0). Returns NULL
 * when the step may run again, else the error to give up with. */
static weft_status_t *recover(weft_monitored_session_t *ms, weft_status_t *cause, int *attempts,
                              gint64 *first_us) {
  weft_status_t *st = cause;
  if (!*first_us) *first_us = g_get_monotonic_time();
  double budget = ms->opts.recovery_secs;
  while (st && retryable(ms, st)) {
    double used = secs_since(*first_us);
    if (ms->opts.max_retries >= 0 && *attempts >= ms->opts.max_retries) {
      return weft_status_prefix(st, "Monitored session: giving up after %d recovery attempts",
                                *attempts);
    }
    if (used >= budget) {
      return weft_status_prefix(st, "Monitored session: gave up recovering after %d attempt%s "
                                "in %.1f s (recovery timeout %g s); last error: %s", *attempts,
                                *attempts == 1 ? "" : "s", used, budget,
                                weft_code_name(weft_status_code(st)));
    }
    int64_t pause = ms->opts.backoff_ms;
    for (int i = 0; i < *attempts && pause < BACKOFF_CAP_MS; i++) pause *= 2;
    if (pause > BACKOFF_CAP_MS) pause = BACKOFF_CAP_MS;
    if ((double)pause / 1e3 > budget - used) pause = (int64_t)((budget - used) * 1e3) + 1;
    (*attempts)++;
    bool same_session = !needs_new_session(st) && ms->session_ready;
    weft__log(WEFT_LOG_WARNING, MS_WHO, "%s (%s: %s); %s in %.1f s, %.1f s of %g s used "
              "(attempt %d)", same_session ? "a task did not answer in time" : "a task was lost "
              "or restarted", weft_code_name(weft_status_code(st)), weft_status_message(st),
              same_session ? "running the step again" : "recreating the session",
              (double)pause / 1e3, used, budget, *attempts);
    weft_status_free(st);
    g_usleep((gulong)pause * 1000);
    if (same_session) return NULL;
    st = create_session(ms);
    if (!st) ms->recoveries++;
  }
  return st;
}

weft_status_t *weft_monitored_session_new(weft_graph_t *graph,
                                          const weft_monitored_session_options_t *opts,
                                          weft_monitored_session_t **out) {
  *out = NULL;
  if (!graph) return weft_status_new(WEFT_INVALID_ARGUMENT, "Monitored session: graph is NULL");
  weft_node_t *gs = weft_graph_node(graph, "global_step");
  if (!gs || !is_variable_node(gs)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Monitored session: the graph has no "
                           "'global_step' variable (create it with weft_train_global_step)");
  }
  weft_monitored_session_t *ms = g_new0(weft_monitored_session_t, 1);
  weft_monitored_session_options_t *defaults = opts ? NULL : weft_monitored_session_options_new();
  const weft_monitored_session_options_t *o = opts ? opts : defaults;
  ms->opts = *o;
  ms->opts.session = weft__session_options_copy(o->session);
  ms->opts.checkpoint_dir = g_strdup(o->checkpoint_dir);
  ms->opts.loss_tensor = g_strdup(o->loss_tensor);
  weft_monitored_session_options_free(defaults);
  ms->graph = graph;
  ms->saver = weft_saver_new(ms->opts.max_to_keep);
  ms->last_checkpoint = g_strdup("");
  if (ms->opts.checkpoint_dir) {
    g_mkdir_with_parents(ms->opts.checkpoint_dir, 0755);
    ms->checkpoint_prefix = g_build_filename(ms->opts.checkpoint_dir, "model.ckpt", NULL);
    /* Temporary files of saves that a crash cut short: the chief owns the folder's saves. */
    if (ms->opts.is_chief)
      weft_status_free(weft_checkpoint_remove_stale_temp_files(ms->checkpoint_prefix, NULL));
  }
  weft_status_t *st = NULL;
  ms->init_op = weft_graph_node(graph, "monitored_session/init");
  if (!ms->init_op) ms->init_op = weft_global_variables_initializer(graph, "monitored_session/init", &st);
  ms->summary_step = -1;
  if (!st && ms->opts.is_chief && ms->opts.checkpoint_dir && ms->opts.summary_steps > 0)
    st = weft_event_writer_new(ms->opts.checkpoint_dir, NULL, &ms->events);
  int attempts = 0;
  gint64 first_us = 0;
  if (!st) st = create_session(ms);
  if (st) st = recover(ms, st, &attempts, &first_us);
  if (st) {
    weft_monitored_session_free(ms);
    return weft_status_prefix(st, "Monitored session");
  }
  ms->logged_step = ms->global_step;
  ms->logged_time_us = g_get_monotonic_time();
  ms->stop = ms->opts.last_step >= 0 && ms->global_step >= ms->opts.last_step;
  *out = ms;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Steps */

/* A save the schedule asked for (CheckpointSaverHook). One that fails (a full disk, the folder
 * gone) does not end training: the step ran, the previous checkpoint is still whole and still the
 * latest (a checkpoint appears only once complete), so the failure is logged and the save is tried
 * again at the next save point, counted from this attempt. The final save at close and an explicit
 * weft_monitored_session_save do return their errors. */
static weft_status_t *periodic_save(weft_monitored_session_t *ms) {
  ms->save_tried_step = ms->global_step;
  ms->save_tried_us = g_get_monotonic_time();
  weft_status_t *st = save_now(ms);
  if (!st) return NULL;
  ms->failed_saves++;
  GString *next = g_string_new(NULL);
  if (ms->opts.save_steps)
    g_string_append_printf(next, "in %" G_GINT64_FORMAT " steps", ms->opts.save_steps);
  if (ms->opts.save_secs > 0)
    g_string_append_printf(next, "%sin %g s", next->len ? " or " : "", ms->opts.save_secs);
  weft__log(WEFT_LOG_WARNING, MS_WHO, "checkpoint at global step %" G_GINT64_FORMAT " failed "
            "(%s: %s; %d in a row); the latest checkpoint is still %s; trying again at the next "
            "save point (%s)", ms->global_step, weft_code_name(weft_status_code(st)),
            weft_status_message(st), ms->failed_saves,
            *ms->last_checkpoint ? ms->last_checkpoint : "(none)", next->str);
  g_string_free(next, TRUE);
  weft_status_free(st);
  return NULL;
}

/* The hooks after a successful step; `fetched` holds the caller's fetches, then (when asked for)
 * the loss. */
static void write_summaries(weft_monitored_session_t *ms, weft_tensor_t *const *summaries,
                            int n_summaries) {
  gint64 now = g_get_monotonic_time();
  if (!ms->graph_written) {
    ms->graph_written = true;
    log_event_error(ms, weft_event_writer_add_graph(ms->events, ms->graph, ms->session));
  }
  if (ms->summary_step >= 0 && now > ms->summary_time_us) {
    double rate = (double)(ms->global_step - ms->summary_step) /
                  ((double)(now - ms->summary_time_us) / 1e6);
    log_event_error(ms, weft_event_writer_add_scalar(ms->events, "global_step/sec", (float)rate,
                                                     ms->global_step));
  }
  for (int i = 0; i < n_summaries; i++) {
    const weft_tensor_t *t = summaries[i];
    if (!t || weft_tensor_dtype(t) != WEFT_DT_STRING) continue;
    const weft_string_t *strs = weft_tensor_data(t);
    for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
      log_event_error(ms, weft_event_writer_add_summary(ms->events, strs[k].data, strs[k].len,
                                                        ms->global_step));
    }
  }
  ms->summary_step = ms->global_step;
  ms->summary_time_us = now;
  ms->summary_due = false;
  /* Every N steps is seldom enough to flush each time: TensorBoard (and a killed run's file)
   * then has them at once rather than after the writer's flush period. */
  log_event_error(ms, weft_event_writer_flush(ms->events));
}

static weft_status_t *after_step(weft_monitored_session_t *ms, weft_tensor_t *const *fetched,
                                 int n_user, const weft_tensor_t *loss,
                                 weft_tensor_t *const *summaries, int n_summaries) {
  ms->local_steps++;
  if (ms->events && ms->summary_due) write_summaries(ms, summaries, n_summaries);
  if (ms->opts.log_steps && ms->local_steps % ms->opts.log_steps == 0) {
    gint64 now = g_get_monotonic_time();
    double secs = (double)(now - ms->logged_time_us) / 1e6;
    double rate = secs > 0 ? (double)(ms->global_step - ms->logged_step) / secs : 0;
    if (loss) {
      weft__log(WEFT_LOG_INFO, MS_WHO, "global_step %" G_GINT64_FORMAT ", loss %g (%.1f steps/s)",
                ms->global_step, weft_tensor_get_double(loss, 0), rate);
    } else {
      weft__log(WEFT_LOG_INFO, MS_WHO, "global_step %" G_GINT64_FORMAT " (%.1f steps/s)",
                ms->global_step, rate);
    }
    ms->logged_step = ms->global_step;
    ms->logged_time_us = now;
  }
  if (ms->opts.after_run &&
      ms->opts.after_run(ms->opts.after_run_data, ms->global_step, fetched, n_user)) {
    ms->stop = true;
  }
  if (ms->opts.last_step >= 0 && ms->global_step >= ms->opts.last_step) ms->stop = true;
  bool due = (ms->opts.save_steps && ms->global_step - ms->save_tried_step >= ms->opts.save_steps) ||
             (ms->opts.save_secs > 0 && secs_since(ms->save_tried_us) >= ms->opts.save_secs);
  if (!due || ms->global_step == ms->saved_step) return NULL;
  return periodic_save(ms);
}

typedef struct run_call {
  const char *const *feed_names;
  weft_tensor_t *const *feeds;
  int n_feeds;
  const char *const *fetch_names;
  weft_tensor_t **fetch_outputs;
  int n_fetches;
  const char *const *target_names;
  int n_targets;
} run_call_t;

/* The global step as it is after the step's targets have run: an Identity of it with control
 * inputs on the targets ("global_step/after/<targets>", colocated with it, made once per set of
 * targets). A plain fetch of the variable in the same step could read it before the update. */
static weft_status_t *global_step_after(weft_monitored_session_t *ms, const run_call_t *c,
                                        char **name_out) {
  *name_out = NULL;
  if (c->n_targets == 0) {
    *name_out = g_strdup("global_step");
    return NULL;
  }
  GString *name = g_string_new("global_step/after/");
  for (int i = 0; i < c->n_targets; i++)
    g_string_append_printf(name, "%s%s", i ? "+" : "", c->target_names[i]);
  weft_node_t *node = weft_graph_node(ms->graph, name->str);
  weft_status_t *st = NULL;
  for (int i = 0; !node && !st && i < c->n_targets; i++) {
    if (!weft_graph_node(ms->graph, c->target_names[i])) {
      st = weft_status_new(WEFT_NOT_FOUND, "Monitored session: no target node '%s' in the graph",
                           c->target_names[i]);
    }
  }
  if (!node && !st) {
    weft_node_t *gs = weft_graph_node(ms->graph, "global_step");
    weft_graph_push_colocate(ms->graph, gs);
    weft_op_builder_t *b = weft_op_new(ms->graph, "Identity", name->str);
    weft_op_add_input(b, weft_out(gs, 0));
    weft_op_set_attr_type(b, "T", WEFT_DT_INT64);
    for (int i = 0; i < c->n_targets; i++)
      weft_op_add_control_input(b, weft_graph_node(ms->graph, c->target_names[i]));
    st = weft_op_finish(b, &node);
    weft_graph_pop_colocate(ms->graph);
  }
  if (!st) *name_out = g_strdup(node->name);
  g_string_free(name, TRUE);
  return st;
}

/* The summary ops SummarySaverHook would run: every MergeSummary, and every other op whose name
 * ends in "Summary" or "SummaryV2" that no MergeSummary consumes (its value is in the merge). */
static GPtrArray *collect_summary_fetches(weft_graph_t *g) {
  GHashTable *merged = g_hash_table_new(g_direct_hash, g_direct_equal);
  int n = weft_graph_num_nodes(g);
  for (int i = 0; i < n; i++) {
    const weft_node_t *node = weft_graph_node_at(g, i);
    if (strcmp(node->op_name, "MergeSummary") != 0) continue;
    for (int k = 0; k < node->n_inputs; k++) g_hash_table_add(merged, node->inputs[k].src);
  }
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (int i = 0; i < n; i++) {
    weft_node_t *node = weft_graph_node_at(g, i);
    bool merge = strcmp(node->op_name, "MergeSummary") == 0;
    bool summary = g_str_has_suffix(node->op_name, "Summary") ||
                   g_str_has_suffix(node->op_name, "SummaryV2");
    if (merge || (summary && !g_hash_table_contains(merged, node)))
      g_ptr_array_add(names, g_strdup_printf("%s:0", node->name));
  }
  g_hash_table_destroy(merged);
  return names;
}

/* SummarySaverHook's and StepCounterHook's timer: the first step, then every summary_steps
 * global steps. */
static bool summaries_due(weft_monitored_session_t *ms) {
  if (!ms->summary_fetches) ms->summary_fetches = collect_summary_fetches(ms->graph);
  return ms->summary_step < 0 || ms->global_step + 1 - ms->summary_step >= ms->opts.summary_steps;
}

/* One attempt at the caller's step, with global_step (and the loss) fetched along. */
static weft_status_t *run_once(weft_monitored_session_t *ms, const run_call_t *c) {
  char *gs_name = NULL;
  weft_status_t *gs_st = global_step_after(ms, c, &gs_name);
  if (gs_st) return gs_st;
  bool want_loss = ms->opts.log_steps && ms->opts.loss_tensor;
  int n_summaries = 0;
  if (ms->events && summaries_due(ms)) {
    ms->summary_due = true;
    n_summaries = (int)ms->summary_fetches->len;
  }
  int first_summary = c->n_fetches + 1 + (want_loss ? 1 : 0);
  int n = first_summary + n_summaries;
  const char **names = g_new(const char *, n);
  weft_tensor_t **outs = g_new0(weft_tensor_t *, n);
  for (int i = 0; i < c->n_fetches; i++) names[i] = c->fetch_names[i];
  names[c->n_fetches] = gs_name;
  if (want_loss) names[c->n_fetches + 1] = ms->opts.loss_tensor;
  for (int i = 0; i < n_summaries; i++)
    names[first_summary + i] = g_ptr_array_index(ms->summary_fetches, i);
  weft_status_t *st = weft_session_run(ms->session, c->feed_names, c->feeds, c->n_feeds, names,
                                       outs, n, c->target_names, c->n_targets);
  if (!st) {
    ms->global_step = (int64_t)weft_tensor_get_double(outs[c->n_fetches], 0);
    st = after_step(ms, outs, c->n_fetches, want_loss ? outs[c->n_fetches + 1] : NULL,
                    outs + first_summary, n_summaries);
    /* When a hook failed (a save with the ps gone), the step may be run again after recovery:
     * the caller gets the outputs of the attempt that succeeded as a whole, or none. */
    for (int i = 0; i < c->n_fetches && !st; i++) {
      c->fetch_outputs[i] = outs[i];
      outs[i] = NULL;
    }
  }
  for (int i = 0; i < n; i++) weft_tensor_unref(outs[i]);
  g_free(outs);
  g_free(names);
  g_free(gs_name);
  return st;
}

static weft_status_t *step_with_recovery(weft_monitored_session_t *ms, const run_call_t *call,
                                         weft_monitored_step_fn fn, void *user_data) {
  if (ms->closed) {
    return weft_status_new(WEFT_FAILED_PRECONDITION, "Monitored session: it was closed");
  }
  int attempts = 0;
  gint64 first_us = 0;
  for (;;) {
    weft_status_t *st;
    if (call) {
      st = run_once(ms, call);
    } else {
      /* The step function fetches what it wants: global_step/sec and the graph are written, the
       * summary ops' outputs are not. */
      ms->summary_due = ms->events && summaries_due(ms);
      st = fn(user_data, ms->session);
      if (!st) st = read_global_step(ms);
      if (!st) st = after_step(ms, NULL, 0, NULL, NULL, 0);
    }
    if (!st && attempts) {
      weft__log(WEFT_LOG_WARNING, MS_WHO, "recovered: the step ran after %d attempt%s in %.1f s "
                "(global step %" G_GINT64_FORMAT ")", attempts, attempts == 1 ? "" : "s",
                secs_since(first_us), ms->global_step);
    }
    if (!st || !retryable(ms, st)) return st;
    st = recover(ms, st, &attempts, &first_us);
    if (st) return st;
  }
}

weft_status_t *weft_monitored_session_run(weft_monitored_session_t *ms,
                                          const char *const *feed_names,
                                          weft_tensor_t *const *feeds, int n_feeds,
                                          const char *const *fetch_names,
                                          weft_tensor_t **fetch_outputs, int n_fetches,
                                          const char *const *target_names, int n_targets) {
  run_call_t call = {feed_names, feeds, n_feeds, fetch_names, fetch_outputs, n_fetches,
                     target_names, n_targets};
  for (int i = 0; i < n_fetches; i++) fetch_outputs[i] = NULL;
  return step_with_recovery(ms, &call, NULL, NULL);
}

weft_status_t *weft_monitored_session_run_step_fn(weft_monitored_session_t *ms,
                                                  weft_monitored_step_fn fn, void *user_data) {
  if (!fn) return weft_status_new(WEFT_INVALID_ARGUMENT, "Monitored session: step function is NULL");
  return step_with_recovery(ms, NULL, fn, user_data);
}

bool weft_monitored_session_should_stop(const weft_monitored_session_t *ms) {
  return ms->stop || ms->closed;
}

int64_t weft_monitored_session_global_step(const weft_monitored_session_t *ms) {
  return ms->global_step;
}

int weft_monitored_session_recoveries(const weft_monitored_session_t *ms) {
  return ms->recoveries;
}

const char *weft_monitored_session_last_checkpoint(const weft_monitored_session_t *ms) {
  return ms->last_checkpoint;
}

weft_session_t *weft_monitored_session_session(weft_monitored_session_t *ms) {
  return ms->session;
}

weft_status_t *weft_monitored_session_save(weft_monitored_session_t *ms) {
  if (ms->closed) return weft_status_new(WEFT_FAILED_PRECONDITION, "Monitored session: it was closed");
  return save_now(ms);
}

weft_status_t *weft_monitored_session_close(weft_monitored_session_t *ms) {
  if (ms->closed) return NULL;
  weft_status_t *st = NULL;
  if (ms->session && ms->global_step != ms->saved_step) st = save_now(ms);
  ms->closed = true;
  if (ms->events) log_event_error(ms, weft_event_writer_flush(ms->events));
  if (ms->session) {
    weft_status_t *close_st = weft_session_close(ms->session);
    if (!st) st = close_st;
    else weft_status_free(close_st);
  }
  return st;
}

void weft_monitored_session_free(weft_monitored_session_t *ms) {
  if (!ms) return;
  if (!ms->closed && ms->session) weft_status_free(weft_session_close(ms->session));
  weft_session_free(ms->session);
  weft_saver_free(ms->saver);
  weft_event_writer_free(ms->events);
  if (ms->summary_fetches) g_ptr_array_free(ms->summary_fetches, TRUE);
  options_clear(&ms->opts);
  g_free(ms->checkpoint_prefix);
  g_free(ms->last_checkpoint);
  g_free(ms);
}
