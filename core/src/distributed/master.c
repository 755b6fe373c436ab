/* The master service of one task: holds client sessions (a graph that grows with ExtendSession),
 * learns every task's devices with GetStatus (all tasks at once, with a deadline; the error names
 * every task that did not answer), places new nodes over all the cluster's devices with the
 * placer local sessions use, partitions each step per task, registers the partitions with the
 * workers and caches them per feed/fetch/target signature. A step calls RunGraph on every
 * partition's worker in parallel (the worker of the master's own task directly, without gRPC;
 * a step of one partition on the calling thread); the first failure aborts the others' steps,
 * gives them a moment to report, then cancels what is still running, and the step fails with the
 * original error (not an echo of it from a task that was only aborted). Every call has a
 * deadline. */
#include "distributed_internal.h"

#include <string.h>

#include "../graph/graphdef_internal.h"
#include "../placement/placement_internal.h"

#define M_GET_STATUS "/weft.Worker/GetStatus"
#define M_REGISTER_GRAPH "/weft.Worker/RegisterGraph"
#define M_DEREGISTER_GRAPH "/weft.Worker/DeregisterGraph"
#define M_RUN_GRAPH "/weft.Worker/RunGraph"
#define M_CLEANUP_GRAPH "/weft.Worker/CleanupGraph"
#define M_ABORT "/weft.Worker/Abort"
#define M_CLEANUP_ALL "/weft.Worker/CleanupAll"

/* After the first failure, how long the other partitions get to report before being cancelled. */
#define ABORT_GRACE_US (1 * G_USEC_PER_SEC)
/* Extra time a RunGraph call gets over the step deadline, so the worker's own report of the
 * deadline arrives before gRPC's. */
#define RUN_GRAPH_SLACK_MS 2000
/* Calls to the tasks that wait for a thread of the master's pool before the caller makes them
 * itself (RunGraph never waits: see execute). */
#define MASTER_MAX_QUEUED 1024

typedef struct task_state {
  const weft__task_ref_t *ref; /* borrowed from the master */
  weft__peer_t peer;
  guint64 incarnation;
} task_state_t;

typedef struct mpart {
  task_state_t *task; /* borrowed from the session */
  char *graph_handle;
  int *feed_index;
  int n_feeds;
  int n_fetches;
  bool sends_first; /* run before the other task's RunGraph is sent (partition_sends_first) */
} mpart_t;

typedef struct mplan {
  gint refcount;
  GPtrArray *parts; /* mpart_t* */
  int n_fetches;
  int *fetch_part;
  int *fetch_slot;
  bool never_waits; /* runs on the RunStep thread with nothing to wait for (plan_never_waits) */
} mplan_t;

typedef struct msession {
  gint refcount;
  char *handle;
  int users;         /* calls using it now (under the master's lock): never reclaimed then */
  gint64 last_used;  /* g_get_monotonic_time() when the last call using it ended */
  weft__master_t *master;
  GMutex lock;
  weft_graph_t *graph;
  bool log_placement;
  bool soft_placement;
  int64_t timeout_ms;
  GPtrArray *tasks;         /* task_state_t* */
  GHashTable *task_by_name; /* name -> task_state_t* */
  weft__place_device_t *devices;
  int n_devices;
  GPtrArray *strings;       /* what the place devices point at */
  GHashTable *placement;    /* node name -> device */
  weft__plan_cache_t *plans; /* of mplan_t */
  weft__step_memo_t *memo;  /* recent RunSteps' name lists -> their plans in `plans` */
  bool stale;               /* a task restarted: learn incarnations again before the next step */
  char **device_filters;    /* NULL: every task */
  /* CloseSession cancels the steps in flight (TensorFlow's "Session has been closed."): `closed`
   * is set first, then every step in `runs` is cancelled; a step that starts afterwards sees
   * `closed` under runs_lock and never runs. Lock order: s->lock, runs_lock, a step's lock. */
  gint closed;
  GMutex runs_lock;
  GPtrArray *runs;          /* step_run_t* of execute() calls in flight */
} msession_t;

struct weft__master {
  gint refcount;
  weft_cluster_spec_t *spec;
  char *job;
  int task;
  char *task_name;
  weft__master_options_t opts;
  GPtrArray *tasks; /* weft__task_ref_t* */
  GMutex lock;
  GHashTable *sessions; /* handle -> msession_t* */
  GHashTable *running;  /* weft__call_set_t* of steps in flight */
  weft__call_set_t *control; /* every other call, cancelled when the master shuts down */
  bool shut_down;
  weft__pool_t *pool; /* the calls to the tasks (bounded: --max_rpc_threads) */
  /* The worker of this task, called without gRPC (NULL: through gRPC), and the direct calls in
   * it, which detaching waits for: the worker may be freed right after. Under `lock`. */
  weft__worker_t *local_worker;
  int local_worker_users;
  GCond local_worker_idle;
  /* Idle sessions are closed by this thread (session_gc_seconds); NULL when off or when no
   * thread could be made (then create_session collects them). Under `lock`. */
  GThread *gc_thread;
  GCond gc_wake;
  bool gc_stop;
  GHashTable *reclaimed; /* handles closed for being idle, for a clear error afterwards */
};

/* ---------------------------------------------------------------------------------------------
 * Running jobs on the master's pool */

typedef struct latch {
  GMutex lock;
  GCond cond;
  int pending;
} latch_t;

typedef struct job {
  void (*fn)(void *arg);
  void *arg;
  latch_t *latch; /* may be NULL: fire and forget */
} job_t;

static void run_job(void *data) {
  job_t *job = data;
  job->fn(job->arg);
  if (job->latch) {
    g_mutex_lock(&job->latch->lock);
    job->latch->pending--;
    g_cond_broadcast(&job->latch->cond);
    g_mutex_unlock(&job->latch->lock);
  }
  g_free(job);
}

static void submit(weft__master_t *m, void (*fn)(void *), void *arg, latch_t *latch) {
  job_t *job = g_new0(job_t, 1);
  job->fn = fn;
  job->arg = arg;
  job->latch = latch;
  if (latch) {
    g_mutex_lock(&latch->lock);
    latch->pending++;
    g_mutex_unlock(&latch->lock);
  }
  /* A full pool (or no thread to be had) leaves the call to this thread: the caller waits for
   * it rather than the server growing. These calls (GetStatus, RegisterGraph, Abort, ...) do not
   * wait for each other, so running them one after another only takes longer. */
  weft_status_t *full = weft__pool_try_submit(m->pool, run_job, job, true);
  if (full) {
    weft_status_free(full);
    run_job(job);
  }
}

static void latch_init(latch_t *l) {
  g_mutex_init(&l->lock);
  g_cond_init(&l->cond);
  l->pending = 0;
}

static void latch_wait_and_clear(latch_t *l) {
  g_mutex_lock(&l->lock);
  while (l->pending > 0) g_cond_wait(&l->cond, &l->lock);
  g_mutex_unlock(&l->lock);
  g_mutex_clear(&l->lock);
  g_cond_clear(&l->cond);
}

/* ---------------------------------------------------------------------------------------------
 * Reclaiming idle sessions (session_gc_seconds, as TensorFlow's): a client that went away
 * without closing its session would otherwise keep its graphs, and their threads on every
 * task, for the life of the server. */

/* Remembered reclaimed handles, so that a late call is told why; beyond this many the oldest
 * knowledge is dropped (the call then gets the generic "not known" error). */
#define MAX_RECLAIMED_REMEMBERED 4096

/* Closes every session idle for longer than the limit. */
static void collect_idle_sessions(weft__master_t *m) {
  if (m->opts.session_gc_seconds <= 0) return;
  gint64 now = g_get_monotonic_time();
  gint64 limit_us = m->opts.session_gc_seconds * G_USEC_PER_SEC;
  GPtrArray *idle = g_ptr_array_new_with_free_func(g_free);
  g_mutex_lock(&m->lock);
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, m->sessions);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    msession_t *s = value;
    if (s->users == 0 && now - s->last_used > limit_us) g_ptr_array_add(idle, g_strdup(s->handle));
  }
  for (guint k = 0; k < idle->len; k++) {
    if (g_hash_table_size(m->reclaimed) >= MAX_RECLAIMED_REMEMBERED)
      g_hash_table_remove_all(m->reclaimed);
    g_hash_table_add(m->reclaimed, g_strdup(idle->pdata[k]));
  }
  g_mutex_unlock(&m->lock);
  for (guint k = 0; k < idle->len; k++) {
    weft__log(WEFT_LOG_INFO, "master",
              "Closing session %s: unused for more than %" G_GINT64_FORMAT " s "
              "(--session_gc_seconds)", (const char *)idle->pdata[k],
              m->opts.session_gc_seconds);
    weft_status_free(weft__master_close_session(m, idle->pdata[k]));
  }
  g_ptr_array_free(idle, TRUE);
}

static gpointer gc_main(gpointer data) {
  weft__master_t *m = data;
  /* A quarter of the limit between looks: a session goes at most 25% past it. */
  gint64 period_us = m->opts.session_gc_seconds * G_USEC_PER_SEC / 4;
  period_us = CLAMP(period_us, G_USEC_PER_SEC / 4, 60 * G_USEC_PER_SEC);
  g_mutex_lock(&m->lock);
  while (!m->gc_stop) {
    gint64 until = g_get_monotonic_time() + period_us;
    while (!m->gc_stop && g_cond_wait_until(&m->gc_wake, &m->lock, until)) {
    }
    if (m->gc_stop) break;
    g_mutex_unlock(&m->lock);
    collect_idle_sessions(m);
    g_mutex_lock(&m->lock);
  }
  g_mutex_unlock(&m->lock);
  return NULL;
}

static void stop_gc(weft__master_t *m) {
  g_mutex_lock(&m->lock);
  GThread *t = m->gc_thread;
  m->gc_thread = NULL;
  m->gc_stop = true;
  g_cond_broadcast(&m->gc_wake);
  g_mutex_unlock(&m->lock);
  if (t) g_thread_join(t);
}

/* ---------------------------------------------------------------------------------------------
 * The master */

weft__master_t *weft__master_new(const weft_cluster_spec_t *spec, const char *job, int task,
                                 const weft__master_options_t *opts) {
  weft__master_t *m = g_new0(weft__master_t, 1);
  m->refcount = 1;
  m->spec = weft__cluster_spec_copy(spec);
  m->job = g_strdup(job);
  m->task = task;
  m->task_name = weft__task_name(job, task);
  m->opts.status_timeout_ms = opts && opts->status_timeout_ms > 0 ? opts->status_timeout_ms
                                                                  : WEFT_DEFAULT_STATUS_TIMEOUT_MS;
  m->opts.step_timeout_ms = opts && opts->step_timeout_ms > 0 ? opts->step_timeout_ms
                                                              : WEFT_DEFAULT_STEP_TIMEOUT_MS;
  m->opts.security = weft__security_ref(opts ? opts->security : NULL);
  m->tasks = weft__cluster_spec_tasks(m->spec);
  g_mutex_init(&m->lock);
  g_cond_init(&m->local_worker_idle);
  m->sessions = g_hash_table_new(g_str_hash, g_str_equal);
  m->running = g_hash_table_new(g_direct_hash, g_direct_equal);
  m->control = weft__call_set_new();
  int threads = opts && opts->max_rpc_threads > 0 ? opts->max_rpc_threads
                                                  : WEFT_DEFAULT_MAX_RPC_THREADS;
  m->pool = weft__pool_new("The master's call pool", "--max_rpc_threads", "weft-master", threads,
                           MASTER_MAX_QUEUED);
  m->opts.session_gc_seconds = opts ? opts->session_gc_seconds : 0;
  m->opts.max_graph_nodes = opts ? opts->max_graph_nodes : 0;
  m->opts.max_sessions = opts ? opts->max_sessions : 0;
  g_cond_init(&m->gc_wake);
  m->reclaimed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (m->opts.session_gc_seconds > 0) {
    GError *error = NULL;
    m->gc_thread = g_thread_try_new("weft-session-gc", gc_main, m, &error);
    if (!m->gc_thread) {
      weft__log(WEFT_LOG_WARNING, "master",
                "cannot start the idle-session collector (%s); idle sessions are closed when "
                "the next session is created", error ? error->message : "unknown error");
      g_clear_error(&error);
    }
  }
  return m;
}

weft__master_t *weft__master_ref(weft__master_t *m) {
  g_atomic_int_inc(&m->refcount);
  return m;
}

static void session_unref(msession_t *s);
static void stop_gc(weft__master_t *m);

void weft__master_unref(weft__master_t *m) {
  if (!m || !g_atomic_int_dec_and_test(&m->refcount)) return;
  stop_gc(m);
  weft__pool_free(m->pool);
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, m->sessions);
  while (g_hash_table_iter_next(&it, NULL, &value)) session_unref(value);
  g_hash_table_destroy(m->sessions);
  g_hash_table_destroy(m->reclaimed);
  g_cond_clear(&m->gc_wake);
  g_hash_table_destroy(m->running);
  weft__call_set_free(m->control);
  g_ptr_array_free(m->tasks, TRUE);
  weft_cluster_spec_free(m->spec);
  weft__security_unref(m->opts.security);
  g_mutex_clear(&m->lock);
  g_cond_clear(&m->local_worker_idle);
  g_free(m->job);
  g_free(m->task_name);
  g_free(m);
}

void weft__master_set_local_worker(weft__master_t *m, weft__worker_t *w) {
  g_mutex_lock(&m->lock);
  m->local_worker = w;
  while (!w && m->local_worker_users > 0) g_cond_wait(&m->local_worker_idle, &m->lock);
  g_mutex_unlock(&m->lock);
}

/* The worker of `task` when it is this master's own and attached (release it with
 * release_local_worker), else NULL. */
static weft__worker_t *acquire_local_worker(weft__master_t *m, const weft__task_ref_t *task) {
  if (task->task != m->task || strcmp(task->job, m->job) != 0) return NULL;
  g_mutex_lock(&m->lock);
  weft__worker_t *w = m->local_worker;
  if (w) m->local_worker_users++;
  g_mutex_unlock(&m->lock);
  return w;
}

static void release_local_worker(weft__master_t *m) {
  g_mutex_lock(&m->lock);
  /* Only a detach waits (local_worker NULL then): GLib's broadcast is a syscall even when no
   * one waits, and this runs on every step. */
  if (--m->local_worker_users == 0 && !m->local_worker) g_cond_broadcast(&m->local_worker_idle);
  g_mutex_unlock(&m->lock);
}

void weft__master_shutdown(weft__master_t *m) {
  weft_status_t *why = weft_status_new(WEFT_UNAVAILABLE, "The master of %s is shutting down",
                                       m->task_name);
  g_mutex_lock(&m->lock);
  m->shut_down = true;
  GHashTableIter it;
  gpointer set;
  g_hash_table_iter_init(&it, m->running);
  while (g_hash_table_iter_next(&it, &set, NULL)) weft__call_set_cancel(set, why);
  g_mutex_unlock(&m->lock);
  weft__call_set_cancel(m->control, why);
  weft_status_free(why);
  stop_gc(m);
}

static weft_status_t *check_running(weft__master_t *m) {
  g_mutex_lock(&m->lock);
  bool down = m->shut_down;
  g_mutex_unlock(&m->lock);
  if (!down) return NULL;
  return weft_status_new(WEFT_UNAVAILABLE, "The master of %s is shutting down", m->task_name);
}

/* ---------------------------------------------------------------------------------------------
 * Learning the cluster (GetStatus of every task at once) */

typedef struct status_call {
  weft__master_t *m;
  const weft__task_ref_t *task;
  int64_t timeout_ms;
  weft_status_t *status;
  Weft__GetStatusResponse *resp;
} status_call_t;

static void do_get_status(void *arg) {
  status_call_t *c = arg;
  weft__peer_t peer = {c->task->name, c->task->address, c->m->opts.security, NULL};
  Weft__GetStatusRequest req = WEFT__GET_STATUS_REQUEST__INIT;
  ProtobufCMessage *resp = NULL;
  /* Wait for tasks that are still starting, up to the deadline. */
  c->status = weft__rpc_unary(&peer, M_GET_STATUS, &req.base, NULL, 0, c->timeout_ms, true,
                              c->m->control,
                              &weft__get_status_response__descriptor, &resp, NULL, NULL);
  c->resp = (Weft__GetStatusResponse *)resp;
  if (!c->status && g_strcmp0(c->resp->task, c->task->name) != 0) {
    c->status = weft_status_new(WEFT_FAILED_PRECONDITION,
                                "The server at %s is task %s, but the cluster spec says %s is "
                                "there",
                                c->task->address, c->resp->task ? c->resp->task : "?",
                                c->task->name);
  }
}

/* True when task `ref` matches one of the device filters ("/job:ps", "/job:worker/task:1"; NULL
 * or empty: every task matches), as TensorFlow's device_filters select the tasks of a session. */
static bool task_matches_filters(const weft__task_ref_t *ref, char *const *filters) {
  if (!filters || !filters[0]) return true;
  for (int i = 0; filters[i]; i++) {
    bool ok = true;
    char **parts = g_strsplit(filters[i], "/", -1);
    for (int p = 0; ok && parts[p]; p++) {
      if (g_str_has_prefix(parts[p], "job:")) ok = strcmp(parts[p] + 4, ref->job) == 0;
      else if (g_str_has_prefix(parts[p], "task:")) ok = atoi(parts[p] + 5) == ref->task;
    }
    g_strfreev(parts);
    if (ok) return true;
  }
  return false;
}

/* GetStatus of every task the filters select (NULL: all); *calls (one per master task, in order;
 * tasks filtered out have no answer) is the caller's to free with free_status_calls. UNAVAILABLE
 * naming every task that did not answer. */
static weft_status_t *discover(weft__master_t *m, char *const *filters, status_call_t **calls_out) {
  int n = (int)m->tasks->len;
  status_call_t *calls = g_new0(status_call_t, n > 0 ? n : 1);
  latch_t latch;
  latch_init(&latch);
  int n_asked = 0;
  for (int k = 0; k < n; k++) {
    calls[k].m = m;
    calls[k].task = m->tasks->pdata[k];
    calls[k].timeout_ms = m->opts.status_timeout_ms;
    if (!task_matches_filters(calls[k].task, filters)) continue;
    n_asked++;
    submit(m, do_get_status, &calls[k], &latch);
  }
  latch_wait_and_clear(&latch);
  GString *missing = g_string_new(NULL);
  int n_missing = 0;
  weft_status_t *first = NULL;
  for (int k = 0; k < n; k++) {
    if (!calls[k].status) continue;
    weft_code_t code = weft_status_code(calls[k].status);
    if (code == WEFT_UNAVAILABLE || code == WEFT_DEADLINE_EXCEEDED) {
      g_string_append_printf(missing, "%s%s (%s)", n_missing ? ", " : "", calls[k].task->name,
                             calls[k].task->address);
      n_missing++;
    } else if (!first) {
      first = calls[k].status;
    }
  }
  weft_status_t *st = NULL;
  if (n_missing) {
    st = weft_status_new(WEFT_UNAVAILABLE,
                         "%d of %d task%s did not answer GetStatus within %" G_GINT64_FORMAT
                         " ms: %s",
                         n_missing, n_asked, n_asked == 1 ? "" : "s", m->opts.status_timeout_ms,
                         missing->str);
  } else if (first) {
    st = weft_status_new(first->code, "%s", first->message);
  }
  g_string_free(missing, TRUE);
  *calls_out = calls;
  return st;
}

static void free_status_calls(status_call_t *calls, int n) {
  for (int k = 0; k < n; k++) {
    weft_status_free(calls[k].status);
    if (calls[k].resp) protobuf_c_message_free_unpacked(&calls[k].resp->base, NULL);
  }
  g_free(calls);
}

static const char *keep(msession_t *s, char *str) {
  g_ptr_array_add(s->strings, str);
  return str;
}

/* Fills the session's tasks (incarnations) and devices from GetStatus answers. */
static void learn(msession_t *s, status_call_t *calls) {
  weft__master_t *m = s->master;
  int n_devices = 0;
  for (guint k = 0; k < m->tasks->len; k++)
    if (calls[k].resp) n_devices += (int)calls[k].resp->n_device;
  g_free(s->devices);
  s->devices = g_new0(weft__place_device_t, n_devices > 0 ? n_devices : 1);
  s->n_devices = 0;
  for (guint k = 0; k < m->tasks->len; k++) {
    const weft__task_ref_t *ref = m->tasks->pdata[k];
    if (!calls[k].resp) continue; /* filtered out */
    task_state_t *ts = g_hash_table_lookup(s->task_by_name, ref->name);
    if (!ts) {
      ts = g_new0(task_state_t, 1);
      ts->ref = ref;
      ts->peer.name = ref->name;
      ts->peer.address = ref->address;
      ts->peer.security = m->opts.security;
      g_ptr_array_add(s->tasks, ts);
      g_hash_table_insert(s->task_by_name, (gpointer)ref->name, ts);
    }
    ts->incarnation = calls[k].resp->incarnation;
    for (size_t d = 0; d < calls[k].resp->n_device; d++) {
      const Weft__DeviceAttributes *a = calls[k].resp->device[d];
      weft__place_device_t *pd = &s->devices[s->n_devices++];
      pd->name = keep(s, g_strdup(a->name));
      pd->job = keep(s, g_strdup(ref->job));
      pd->replica = 0;
      pd->task = ref->task;
      pd->type = keep(s, g_strdup(a->device_type));
      pd->id = a->id;
      pd->gpu_like = a->gpu_like;
      pd->emulated = a->emulated;
      pd->priority = a->priority;
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Sessions */

static void mplan_unref(mplan_t *p) {
  if (!p || !g_atomic_int_dec_and_test(&p->refcount)) return;
  for (guint k = 0; k < p->parts->len; k++) {
    mpart_t *part = p->parts->pdata[k];
    g_free(part->graph_handle);
    g_free(part->feed_index);
    g_free(part);
  }
  g_ptr_array_free(p->parts, TRUE);
  g_free(p->fetch_part);
  g_free(p->fetch_slot);
  g_free(p);
}

static void session_unref(msession_t *s) {
  if (!s || !g_atomic_int_dec_and_test(&s->refcount)) return;
  weft__step_memo_free(s->memo);
  weft__plan_cache_free(s->plans);
  g_hash_table_destroy(s->placement);
  g_hash_table_destroy(s->task_by_name);
  g_ptr_array_free(s->tasks, TRUE);
  g_ptr_array_free(s->strings, TRUE);
  g_free(s->devices);
  weft_graph_free(s->graph);
  g_mutex_clear(&s->lock);
  g_free(s->handle);
  g_strfreev(s->device_filters);
  g_ptr_array_free(s->runs, TRUE);
  g_mutex_clear(&s->runs_lock);
  g_free(s);
}

static msession_t *find_session(weft__master_t *m, const char *handle, weft_status_t **status) {
  *status = NULL;
  g_mutex_lock(&m->lock);
  msession_t *s = handle ? g_hash_table_lookup(m->sessions, handle) : NULL;
  if (s) {
    g_atomic_int_inc(&s->refcount);
    s->users++;
  }
  bool reclaimed = !s && handle && g_hash_table_contains(m->reclaimed, handle);
  g_mutex_unlock(&m->lock);
  if (reclaimed) {
    *status = weft_status_new(WEFT_ABORTED,
                              "Session '%s' was closed by the master of %s after %" G_GINT64_FORMAT
                              " s unused (--session_gc_seconds); create the session again",
                              handle, m->task_name, m->opts.session_gc_seconds);
  } else if (!s) {
    *status = weft_status_new(WEFT_ABORTED,
                              "Session '%s' is not known to the master of %s (it was closed, or "
                              "the server restarted); create the session again",
                              handle ? handle : "", m->task_name);
  }
  return s;
}

/* Ends a call's use of a session found with find_session. */
static void release_session(weft__master_t *m, msession_t *s) {
  g_mutex_lock(&m->lock);
  s->users--;
  s->last_used = g_get_monotonic_time();
  g_mutex_unlock(&m->lock);
  session_unref(s);
}

/* Sessions left open by clients that never close them would otherwise pile up (10,000 held
 * 20,000 threads and 330 MB until --session_gc_seconds, a day by default). */
static weft_status_t *session_room(weft__master_t *m) {
  if (m->opts.max_sessions <= 0) return NULL;
  g_mutex_lock(&m->lock);
  guint open = g_hash_table_size(m->sessions);
  g_mutex_unlock(&m->lock);
  if (open < (guint)m->opts.max_sessions) return NULL;
  return weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                         "CreateSession: the master of %s has %u sessions open, its limit "
                         "(--max_sessions); close sessions, or wait for idle ones to be "
                         "reclaimed (--session_gc_seconds), and try again",
                         m->task_name, open);
}

weft_status_t *weft__master_create_session(weft__master_t *m, const Tensorflow__GraphDef *gd,
                                           const Weft__SessionConfig *config, char **handle,
                                           int64_t *graph_version) {
  *handle = NULL;
  weft_status_t *st = check_running(m);
  if (st) return st;
  /* Without the collector thread (it could not be made), idle sessions go here. */
  g_mutex_lock(&m->lock);
  bool no_collector = !m->gc_thread;
  g_mutex_unlock(&m->lock);
  if (no_collector) collect_idle_sessions(m);
  st = session_room(m);
  if (st) return st;
  msession_t *s = g_new0(msession_t, 1);
  s->refcount = 1;
  s->master = m;
  g_mutex_init(&s->lock);
  g_mutex_init(&s->runs_lock);
  s->runs = g_ptr_array_new();
  s->graph = weft_graph_new();
  s->tasks = g_ptr_array_new_with_free_func(g_free);
  s->task_by_name = g_hash_table_new(g_str_hash, g_str_equal);
  s->strings = g_ptr_array_new_with_free_func(g_free);
  s->placement = weft__placement_new();
  s->plans = weft__plan_cache_new((GDestroyNotify)mplan_unref);
  s->memo = weft__step_memo_new();
  if (config) {
    s->log_placement = config->log_device_placement;
    s->soft_placement = config->allow_soft_placement;
    s->timeout_ms = config->operation_timeout_ms;
    if (config->n_device_filters) {
      s->device_filters = g_new0(char *, config->n_device_filters + 1);
      for (size_t i = 0; i < config->n_device_filters; i++)
        s->device_filters[i] = g_strdup(config->device_filters[i]);
    }
  }
  if (gd) st = weft__graph_import_graphdef_proto(s->graph, gd, NULL);
  status_call_t *calls = NULL;
  if (!st) {
    st = discover(m, s->device_filters, &calls);
    if (!st) learn(s, calls);
    free_status_calls(calls, (int)m->tasks->len);
  }
  if (st) {
    session_unref(s);
    return weft_status_prefix(st, "CreateSession");
  }
  s->handle = g_strdup_printf("%08x%08x%08x", g_random_int(), g_random_int(), g_random_int());
  s->last_used = g_get_monotonic_time();
  /* Checked again: other sessions may have been made while this one learnt the devices. */
  st = session_room(m);
  if (st) {
    session_unref(s);
    return st;
  }
  g_mutex_lock(&m->lock);
  g_hash_table_insert(m->sessions, s->handle, s);
  g_mutex_unlock(&m->lock);
  *handle = g_strdup(s->handle);
  *graph_version = weft_graph_num_nodes(s->graph);
  return NULL;
}

weft_status_t *weft__master_extend_session(weft__master_t *m, const char *handle,
                                           const Tensorflow__GraphDef *gd,
                                           int64_t current_version, int64_t *new_version) {
  weft_status_t *st = check_running(m);
  if (st) return st;
  msession_t *s = find_session(m, handle, &st);
  if (!s) return st;
  g_mutex_lock(&s->lock);
  int64_t have = weft_graph_num_nodes(s->graph);
  if (current_version != have) {
    st = weft_status_new(WEFT_FAILED_PRECONDITION,
                         "ExtendSession: the client extends a graph of %" G_GINT64_FORMAT
                         " nodes but the master holds %" G_GINT64_FORMAT,
                         current_version, have);
  } else if (gd && m->opts.max_graph_nodes > 0 &&
             (int64_t)gd->n_node > m->opts.max_graph_nodes - have) {
    /* Each request is held to --max_graph_nodes (validate.c); without this, repeated extends
     * would grow one session's graph without bound. */
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "ExtendSession: the session's graph would have %" G_GINT64_FORMAT
                         " nodes; the server allows at most %" G_GINT64_FORMAT
                         " (--max_graph_nodes)",
                         have + (int64_t)gd->n_node, m->opts.max_graph_nodes);
  } else if (gd) {
    st = weft__graph_import_graphdef_proto(s->graph, gd, NULL);
    if (st) weft_status_prefix(st, "ExtendSession");
  }
  *new_version = weft_graph_num_nodes(s->graph);
  g_mutex_unlock(&s->lock);
  release_session(m, s);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Planning: place, partition, register */

typedef struct register_call {
  msession_t *s;
  mpart_t *part;
  weft__partition_t *partition;
  weft_status_t *status;
} register_call_t;

static void do_register(void *arg) {
  register_call_t *c = arg;
  Tensorflow__GraphDef *gd = NULL;
  c->status = weft__graph_to_graphdef_proto(c->partition->graph, &gd);
  if (c->status) return;
  Weft__RegisterGraphRequest req = WEFT__REGISTER_GRAPH_REQUEST__INIT;
  req.session_handle = c->s->handle;
  req.graph_def = gd;
  req.incarnation = c->part->task->incarnation;
  req.n_feed = c->partition->feed_names->len;
  req.feed = (char **)c->partition->feed_names->pdata;
  req.n_fetch = c->partition->fetch_names->len;
  req.fetch = (char **)c->partition->fetch_names->pdata;
  int n_peers = (int)c->s->tasks->len;
  Weft__TaskAddress *peers = g_new0(Weft__TaskAddress, n_peers > 0 ? n_peers : 1);
  Weft__TaskAddress **peer_ptrs = g_new0(Weft__TaskAddress *, n_peers > 0 ? n_peers : 1);
  for (int k = 0; k < n_peers; k++) {
    const task_state_t *ts = c->s->tasks->pdata[k];
    weft__task_address__init(&peers[k]);
    peers[k].task = (char *)ts->ref->name;
    peers[k].address = (char *)ts->ref->address;
    peers[k].incarnation = ts->incarnation;
    peer_ptrs[k] = &peers[k];
  }
  req.n_peer = (size_t)n_peers;
  req.peer = peer_ptrs;
  ProtobufCMessage *resp = NULL;
  c->status = weft__rpc_unary(&c->part->task->peer, M_REGISTER_GRAPH, &req.base, NULL, 0,
                              c->s->master->opts.step_timeout_ms, false, c->s->master->control,
                              &weft__register_graph_response__descriptor, &resp, NULL, NULL);
  if (!c->status) {
    c->part->graph_handle = g_strdup(((Weft__RegisterGraphResponse *)resp)->graph_handle);
    protobuf_c_message_free_unpacked(resp, NULL);
  }
  g_free(peers);
  g_free(peer_ptrs);
  tensorflow__graph_def__free_unpacked(gd, NULL);
}

typedef struct deregister_call {
  weft__master_t *m;
  weft__peer_t peer;
  char *handle;
} deregister_call_t;

static void do_deregister(void *arg) {
  deregister_call_t *c = arg;
  Weft__DeregisterGraphRequest req = WEFT__DEREGISTER_GRAPH_REQUEST__INIT;
  req.graph_handle = c->handle;
  ProtobufCMessage *resp = NULL;
  weft_status_t *st = weft__rpc_unary(&c->peer, M_DEREGISTER_GRAPH, &req.base, NULL, 0,
                                      WEFT_CONTROL_TIMEOUT_MS, false, c->m->control,
                                      &weft__deregister_graph_response__descriptor, &resp, NULL,
                                      NULL);
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  weft_status_free(st); /* the task may be gone; its graphs went with it */
  g_free(c->handle);
  g_free((char *)c->peer.name);
  g_free((char *)c->peer.address);
  g_free(c);
}

/* Deregisters a plan's graphs in the background. */
static void forget_plan(weft__master_t *m, mplan_t *plan) {
  for (guint k = 0; k < plan->parts->len; k++) {
    mpart_t *part = plan->parts->pdata[k];
    if (!part->graph_handle) continue;
    deregister_call_t *c = g_new0(deregister_call_t, 1);
    c->m = m;
    c->peer.name = g_strdup(part->task->peer.name);
    c->peer.address = g_strdup(part->task->peer.address);
    c->peer.security = part->task->peer.security;
    c->handle = g_strdup(part->graph_handle);
    submit(m, do_deregister, c, NULL);
  }
}

static void forget_cached_plan(gpointer plan, gpointer m) {
  forget_plan(m, plan);
}

static weft_status_t *place_new_nodes(msession_t *s, GPtrArray *needed, GPtrArray *placements) {
  GPtrArray *nodes = weft__colocation_closure(s->graph, needed, s->placement);
  GPtrArray *todo = g_ptr_array_new();
  for (guint k = 0; k < nodes->len; k++) {
    weft_node_t *n = nodes->pdata[k];
    if (!g_hash_table_contains(s->placement, n->name)) g_ptr_array_add(todo, n);
  }
  g_ptr_array_free(nodes, TRUE);
  weft_status_t *st = NULL;
  if (todo->len) {
    weft__master_t *m = s->master;
    weft__placer_options_t popts = {s->soft_placement, m->job, 0, m->task};
    if (s->n_devices == 0) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION, "The cluster has no devices");
    } else {
      st = weft__place(todo, s->devices, s->n_devices, &popts, s->placement);
    }
  }
  for (guint k = 0; !st && placements && k < todo->len; k++) {
    const weft_node_t *n = todo->pdata[k];
    Weft__NodePlacement *p = g_new0(Weft__NodePlacement, 1);
    weft__node_placement__init(p);
    p->name = g_strdup(n->name);
    p->op = g_strdup(n->op_name);
    p->device = g_strdup(g_hash_table_lookup(s->placement, n->name));
    g_ptr_array_add(placements, p);
  }
  if (!st && todo->len && s->log_placement) {
    weft__log(WEFT_LOG_INFO, "master", "placed %u node(s) of session %s", todo->len, s->handle);
  }
  g_ptr_array_free(todo, TRUE);
  return st;
}

/* A step small enough for the server's polling thread (weft__server_may_block): so few nodes,
 * every output's shape known and so small, that the executor runs them all on the calling
 * thread in microseconds; and no op that waits for anything: no transfer (`_Send`/`_Recv`, a
 * partition of another task), no control flow or function call (a loop may run for ever on
 * scalars), and no stateful op but the variables' (a queue's dequeue waits for another
 * client's enqueue, which only the polling thread would receive). */
#define NEVER_WAITS_MAX_NODES 32
#define NEVER_WAITS_MAX_BYTES (16 << 10)

static bool op_never_waits(const weft_node_t *n) {
  static const char *const waits[] = {
      "Enter", "Exit", "NextIteration", "LoopCond", "Merge", "Switch", "RefEnter", "RefExit",
      "RefMerge", "RefSwitch", "RefNextIteration", "While", "StatelessWhile", "If",
      "StatelessIf", "Case", "PartitionedCall", "StatefulPartitionedCall", "SymbolicGradient",
      NULL,
  };
  static const char *const stateful_ok[] = {
      "VariableV2", "Variable", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized",
      NULL,
  };
  if (n->op_name[0] == '_') return false;
  for (const char *const *o = waits; *o; o++)
    if (strcmp(*o, n->op_name) == 0) return false;
  if (!n->def || !n->def->is_stateful) return n->def != NULL;
  for (const char *const *o = stateful_ok; *o; o++)
    if (strcmp(*o, n->op_name) == 0) return true;
  return false;
}

/* Every output's shape known and at most NEVER_WAITS_MAX_BYTES. */
static bool outputs_small(const weft_node_t *n) {
  for (int o = 0; o < n->n_outputs; o++) {
    weft__shape_t shape = weft__node_shape(n, o);
    int64_t count = shape.rank < 0 ? -1 : weft__shape_num_elements(shape.rank, shape.dims);
    weft_dtype_t dt = n->output_types[o];
    size_t size = weft_dtype_size(dt >= WEFT_DT_REF_OFFSET ? dt - WEFT_DT_REF_OFFSET : dt);
    if (count < 0 || size == 0 || (uint64_t)count * size > NEVER_WAITS_MAX_BYTES) return false;
  }
  return true;
}

static bool plan_never_waits(const weft__master_t *m, const GPtrArray *partitions,
                             const GPtrArray *nodes) {
  if (partitions->len > 1 || nodes->len > NEVER_WAITS_MAX_NODES) return false;
  if (partitions->len == 1) {
    const weft__partition_t *p = partitions->pdata[0];
    if (strcmp(p->task, m->task_name) != 0) return false;
  }
  for (guint k = 0; k < nodes->len; k++) {
    const weft_node_t *n = nodes->pdata[k];
    if (!op_never_waits(n) || !outputs_small(n)) return false;
  }
  return true;
}

/* A partition that only produces what it sends: so few nodes, none that waits for anything
 * (no _Recv: nothing of the other task's), nothing costly but constants and variables read
 * as they are. A two-task step runs such a partition of its own task before it sends the
 * other task's RunGraph (run_overlapped): that call's send takes the thread 40-140 us on a
 * 2-core VM (the kernel delivers the bytes on the sender's time), and meanwhile the other
 * task had already asked for a tensor this thread had not yet sent. */
static bool partition_sends_first(const weft__partition_t *p) {
  static const char *const free_ops[] = {"_Send", "Const", "Identity", "VariableV2", "Variable",
                                         "VarHandleOp", NULL};
  int n_nodes = weft_graph_num_nodes(p->graph);
  if (n_nodes > NEVER_WAITS_MAX_NODES) return false;
  for (int k = 0; k < n_nodes; k++) {
    const weft_node_t *n = weft_graph_node_at(p->graph, k);
    bool free_op = false;
    for (const char *const *o = free_ops; *o && !free_op; o++) free_op = !strcmp(*o, n->op_name);
    if (!free_op && (!op_never_waits(n) || !outputs_small(n))) return false;
  }
  return true;
}

/* What the plan cache hands build_plan. */
typedef struct build_ctx {
  msession_t *s;
  GPtrArray *placements;
} build_ctx_t;

/* The plan cache's build function: prune (exec's planning, as a local session does), place what
 * is new, partition and register the partitions with their workers. */
static weft_status_t *build_plan(void *user_data, const weft__step_spec_t *spec, void **out) {
  msession_t *s = ((build_ctx_t *)user_data)->s;
  GPtrArray *placements = ((build_ctx_t *)user_data)->placements;
  GPtrArray *nodes = NULL;
  /* Registering the partitions waits for the workers. */
  weft_status_t *st = weft__server_may_block();
  if (!st) st = weft__step_prune(spec, &nodes);
  if (!st) st = place_new_nodes(s, nodes, placements);
  mplan_t *plan = g_new0(mplan_t, 1);
  plan->refcount = 1;
  plan->parts = g_ptr_array_new();
  plan->n_fetches = spec->n_fetches;
  plan->fetch_part = g_new0(int, spec->n_fetches + 1);
  plan->fetch_slot = g_new0(int, spec->n_fetches + 1);
  GPtrArray *partitions = NULL;
  if (!st) {
    st = weft__partition_step(nodes, s->placement, spec, &partitions, plan->fetch_part,
                              plan->fetch_slot);
  }
  if (!st) plan->never_waits = plan_never_waits(s->master, partitions, nodes);
  if (nodes) g_ptr_array_free(nodes, TRUE);
  register_call_t *calls = NULL;
  if (!st) {
    int n = (int)partitions->len;
    calls = g_new0(register_call_t, n > 0 ? n : 1);
    latch_t latch;
    latch_init(&latch);
    for (int k = 0; k < n; k++) {
      weft__partition_t *p = partitions->pdata[k];
      mpart_t *part = g_new0(mpart_t, 1);
      part->task = g_hash_table_lookup(s->task_by_name, p->task);
      part->n_feeds = (int)p->feed_index->len;
      part->feed_index = g_memdup2(p->feed_index->data, sizeof(int) * (p->feed_index->len + 1));
      part->n_fetches = (int)p->fetch_names->len;
      part->sends_first = partition_sends_first(p);
      g_ptr_array_add(plan->parts, part);
      if (!part->task) {
        st = weft_status_new(WEFT_INTERNAL, "Partition for unknown task %s", p->task);
        break;
      }
      calls[k].s = s;
      calls[k].part = part;
      calls[k].partition = p;
      submit(s->master, do_register, &calls[k], &latch);
    }
    latch_wait_and_clear(&latch);
    for (int k = 0; k < n; k++) {
      if (!st && calls[k].status) {
        st = calls[k].status;
        calls[k].status = NULL;
      }
      weft_status_free(calls[k].status);
    }
    g_free(calls);
    g_ptr_array_free(partitions, TRUE);
  }
  if (st) {
    forget_plan(s->master, plan);
    mplan_unref(plan);
    return st;
  }
  *out = plan;
  return NULL;
}

/* Learns every task's incarnation again after one restarted, and drops the registered graphs. */
static weft_status_t *refresh(msession_t *s) {
  weft_status_t *st = weft__server_may_block();
  if (st) return st;
  status_call_t *calls = NULL;
  st = discover(s->master, s->device_filters, &calls);
  if (!st) {
    learn(s, calls);
    weft__step_memo_clear(s->memo);
    weft__plan_cache_foreach(s->plans, forget_cached_plan, s->master);
    weft__plan_cache_clear(s->plans);
    s->stale = false;
  }
  free_status_calls(calls, (int)s->master->tasks->len);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Running a step */

typedef struct step_run step_run_t;

typedef struct part_call {
  step_run_t *run;
  mpart_t *part;
  weft_status_t *status;
  weft_tensor_t **fetched;
  int n_fetched;
  gint64 finished_at;
} part_call_t;

struct step_run {
  weft__master_t *m;
  int64_t step_id;
  int64_t timeout_ms;
  weft_tensor_t *const *feeds;
  weft__call_set_t *calls;
  GMutex lock;
  GCond cond;
  int pending;
  int failures;
  GPtrArray *errors; /* part_call_t* in the order they failed */
  weft_run_metadata_t *stats; /* traced steps: every partition's records; else NULL */
  mplan_t *plan;
  bool abort_sent;   /* the other partitions were told to abort (under lock) */
  bool waiting;      /* execute waits on cond (under lock): only then is it signalled */
  weft_status_t *cancelled; /* why CloseSession cancelled the step (under lock), else NULL */
};

static void notify_parts(weft__master_t *m, mplan_t *plan, int64_t step_id, bool abort,
                         const weft_status_t *why, latch_t *latch);
static weft_status_t *pick_error(step_run_t *run);

static void finish_part(part_call_t *c);

/* The RunGraph request of a partition; *feeds (g_free) holds the step's feeds it takes. */
static void run_graph_request(part_call_t *c, Weft__RunGraphRequest *req, weft_tensor_t ***feeds) {
  step_run_t *run = c->run;
  weft__run_graph_request__init(req);
  req->graph_handle = c->part->graph_handle;
  req->step_id = run->step_id;
  req->incarnation = c->part->task->incarnation;
  req->timeout_ms = run->timeout_ms;
  req->trace_level = run->stats ? 1 : 0;
  *feeds = g_new0(weft_tensor_t *, c->part->n_feeds + 1);
  for (int k = 0; k < c->part->n_feeds; k++) (*feeds)[k] = run->feeds[c->part->feed_index[k]];
}

static weft__rpc_pending_t *start_remote_graph(part_call_t *c, const Weft__RunGraphRequest *req,
                                               weft_tensor_t **feeds) {
  return weft__rpc_unary_start(&c->part->task->peer, M_RUN_GRAPH, &req->base, feeds,
                               c->part->n_feeds, c->run->timeout_ms + RUN_GRAPH_SLACK_MS, false,
                               c->run->calls);
}

/* Checks a partition's fetch count, then counts it as ended. */
static void end_part(part_call_t *c) {
  if (!c->status && c->n_fetched != c->part->n_fetches) {
    c->status = weft_status_new(WEFT_INTERNAL, "%s returned %d fetches instead of %d",
                                c->part->task->peer.name, c->n_fetched, c->part->n_fetches);
  }
  finish_part(c);
}

/* Reads a remote partition's answer, then counts the partition as ended. */
static void end_remote_graph(part_call_t *c, weft__rpc_pending_t *pending) {
  step_run_t *run = c->run;
  ProtobufCMessage *resp = NULL;
  c->status = weft__rpc_unary_finish(pending, &weft__run_graph_response__descriptor, &resp,
                                     &c->fetched, &c->n_fetched);
  if (resp && !c->status && run->stats) {
    weft__step_stats_from_msg(run->stats, ((const Weft__RunGraphResponse *)resp)->step_stats);
  }
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  end_part(c);
}

static void do_run_graph(void *arg) {
  part_call_t *c = arg;
  step_run_t *run = c->run;
  Weft__RunGraphRequest req;
  weft_tensor_t **feeds = NULL;
  run_graph_request(c, &req, &feeds);
  weft__worker_t *local = acquire_local_worker(run->m, c->part->task->ref);
  if (!local) {
    weft__rpc_pending_t *pending = start_remote_graph(c, &req, feeds);
    g_free(feeds);
    end_remote_graph(c, pending);
    return;
  }
  /* This task's own worker: no RPC, no copies of the feeds and fetches, no thread hand-offs.
   * It ends at the step's deadline or when the step is aborted, as it would behind gRPC.
   * Traced records go through the message form, as other partitions' do, so that concurrent
   * partitions merge into run->stats the same way. */
  weft_run_metadata_t *stats = run->stats ? weft__run_metadata_new() : NULL;
  c->status = weft__worker_run_graph(local, &req, feeds, c->part->n_feeds, &c->fetched,
                                     &c->n_fetched, stats);
  release_local_worker(run->m);
  g_free(feeds);
  if (stats && !c->status) {
    Weft__StepStats *msg = weft__step_stats_to_msg(stats);
    weft__step_stats_from_msg(run->stats, msg);
    weft__step_stats_msg_free(msg);
  }
  weft_run_metadata_free(stats);
  end_part(c);
}

/* WEFT_STEP_OVERLAP=0: a step of one remote and one local partition hands the local one to a
 * pool thread, as before (measuring). */
static bool step_overlap_enabled(void) {
  static int enabled = -1;
  return weft__switch_enabled("WEFT_STEP_OVERLAP", &enabled);
}

/* WEFT_SENDS_FIRST=0: a partition that only sends still runs after the other task's RunGraph
 * is sent (measuring). */
static bool sends_first_enabled(void) {
  static int enabled = -1;
  return weft__switch_enabled("WEFT_SENDS_FIRST", &enabled);
}

/* A step of two partitions, calls[remote] on another task and calls[1 - remote] on this one:
 * the RunGraph call is sent first, then this thread runs its own task's partition and waits
 * for the answer, with no pool thread to wake and none to wake it. The remote partition's
 * completion is read by the server's poller, which may_block has set up already (execute).
 * A partition of this task that only computes what it sends (partition_sends_first) runs
 * before the call instead, and when it fails the other is not started. */
static void run_overlapped(part_call_t *calls, int remote) {
  Weft__RunGraphRequest req;
  weft_tensor_t **feeds = NULL;
  bool local_first = calls[1 - remote].part->sends_first && sends_first_enabled();
  if (local_first) {
    do_run_graph(&calls[1 - remote]);
    if (calls[1 - remote].status) {
      /* The other task would only wait for what this partition failed to send. */
      calls[remote].status = weft_status_new(WEFT_CANCELLED, WEFT_DERIVED_PREFIX "Step %"
                                             G_GINT64_FORMAT " was not started",
                                             calls[remote].run->step_id);
      finish_part(&calls[remote]);
      return;
    }
  }
  run_graph_request(&calls[remote], &req, &feeds);
  weft__rpc_pending_t *pending = start_remote_graph(&calls[remote], &req, feeds);
  g_free(feeds);
  if (!local_first) do_run_graph(&calls[1 - remote]);
  end_remote_graph(&calls[remote], pending);
}

/* Counts a partition's call as ended (c->status set when it failed); the first failure tells
 * the other partitions to abort. */
static void finish_part(part_call_t *c) {
  step_run_t *run = c->run;
  g_mutex_lock(&run->lock);
  run->pending--;
  bool tell_others = false;
  if (c->status) {
    run->failures++;
    g_ptr_array_add(run->errors, c);
    tell_others = !run->abort_sent && run->plan->parts->len > 1;
    run->abort_sent = run->abort_sent || tell_others;
  }
  if (tell_others) {
    /* The first failure tells the other partitions at once, from here: the thread that waits
     * for the step is itself busy with one of them (execute). Under the lock, so that the step
     * (and its plan) outlive this: notify_parts only queues the calls. */
    weft_status_t *first = pick_error(run);
    notify_parts(run->m, run->plan, run->step_id, true, first, NULL);
    weft_status_free(first);
  }
  /* A step of one partition ends on the thread that would wait: no syscall to wake nobody. */
  if (run->waiting) g_cond_broadcast(&run->cond);
  g_mutex_unlock(&run->lock);
}

typedef struct notify_call {
  weft__master_t *m;
  weft__peer_t peer;
  int64_t step_id;
  bool abort;
  weft_code_t code;
  char *reason;
} notify_call_t;

static void do_notify(void *arg) {
  notify_call_t *c = arg;
  ProtobufCMessage *resp = NULL;
  weft_status_t *st = NULL;
  if (c->abort) {
    Weft__AbortRequest req = WEFT__ABORT_REQUEST__INIT;
    req.step_id = c->step_id;
    req.code = c->code;
    req.reason = c->reason;
    st = weft__rpc_unary(&c->peer, M_ABORT, &req.base, NULL, 0, WEFT_CONTROL_TIMEOUT_MS, false,
                         c->m->control, &weft__abort_response__descriptor, &resp, NULL, NULL);
  } else {
    Weft__CleanupGraphRequest req = WEFT__CLEANUP_GRAPH_REQUEST__INIT;
    req.step_id = c->step_id;
    st = weft__rpc_unary(&c->peer, M_CLEANUP_GRAPH, &req.base, NULL, 0, WEFT_CONTROL_TIMEOUT_MS,
                         false, c->m->control, &weft__cleanup_graph_response__descriptor, &resp,
                         NULL, NULL);
  }
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  weft_status_free(st); /* best effort: a task that cannot be told has lost the step anyway */
  g_free(c->reason);
  g_free(c);
}

static void notify_parts(weft__master_t *m, mplan_t *plan, int64_t step_id, bool abort,
                         const weft_status_t *why, latch_t *latch) {
  for (guint k = 0; k < plan->parts->len; k++) {
    mpart_t *part = plan->parts->pdata[k];
    notify_call_t *c = g_new0(notify_call_t, 1);
    c->m = m;
    c->peer = part->task->peer;
    c->step_id = step_id;
    c->abort = abort;
    if (why) {
      c->code = why->code;
      c->reason = g_strdup(why->message);
    }
    submit(m, do_notify, c, latch);
  }
}

/* The step's error: the first one that is not an echo of another task's failure. */
static weft_status_t *pick_error(step_run_t *run) {
  part_call_t *best = NULL;
  for (guint k = 0; k < run->errors->len && !best; k++) {
    part_call_t *c = run->errors->pdata[k];
    if (!g_str_has_prefix(weft_status_message(c->status), WEFT_DERIVED_PREFIX)) best = c;
  }
  if (!best) best = run->errors->pdata[0];
  const char *msg = weft_status_message(best->status);
  if (g_str_has_prefix(msg, WEFT_DERIVED_PREFIX)) msg += strlen(WEFT_DERIVED_PREFIX);
  return weft_status_new(weft_status_code(best->status), "%s", msg);
}

/* TensorFlow's code and words for a step of a session closed under it. */
static weft_status_t *session_closed_status(void) {
  return weft_status_new(WEFT_CANCELLED, "Session has been closed.");
}

/* Cancels every step of a closing session at once: the calls to the tasks end (CANCELLED), and
 * every task is told to abort the step, so that its rendezvous wakes blocked _Recv kernels and
 * RecvTensor calls instead of leaving them to the step's deadline. */
static void cancel_runs(msession_t *s) {
  g_mutex_lock(&s->runs_lock);
  for (guint k = 0; k < s->runs->len; k++) {
    step_run_t *run = s->runs->pdata[k];
    /* The tasks hear which step and why: their waiting RecvTensors answer with it. */
    weft_status_t *why = weft_status_new(WEFT_CANCELLED,
                                         "Step %" G_GINT64_FORMAT " was cancelled: its session "
                                         "%s was closed",
                                         run->step_id, s->handle);
    g_mutex_lock(&run->lock);
    bool tell = !run->cancelled;
    if (tell) run->cancelled = session_closed_status();
    if (tell && !run->abort_sent) {
      run->abort_sent = true;
      notify_parts(run->m, run->plan, run->step_id, true, why, NULL);
    }
    g_cond_broadcast(&run->cond);
    g_mutex_unlock(&run->lock);
    if (tell) weft__call_set_cancel(run->calls, why);
    weft_status_free(why);
  }
  g_mutex_unlock(&s->runs_lock);
}

/* Ends what execute set up for a step (not the part calls, which its caller reads). */
static void step_run_clear(step_run_t *run) {
  g_mutex_lock(&run->m->lock);
  g_hash_table_remove(run->m->running, run->calls);
  g_mutex_unlock(&run->m->lock);
  weft__call_set_free(run->calls);
  g_ptr_array_free(run->errors, TRUE);
  g_mutex_clear(&run->lock);
  g_cond_clear(&run->cond);
}

static weft_status_t *execute(msession_t *s, mplan_t *plan, weft_tensor_t *const *feeds,
                              int64_t timeout_ms, weft_run_metadata_t *stats,
                              part_call_t **calls_out) {
  weft__master_t *m = s->master;
  int n = (int)plan->parts->len;
  bool small_feeds = true;
  for (guint k = 0; k < plan->parts->len && n == 1; k++) {
    const mpart_t *part = plan->parts->pdata[k];
    for (int f = 0; f < part->n_feeds; f++)
      small_feeds = small_feeds &&
                    weft_tensor_nbytes(feeds[part->feed_index[f]]) <= NEVER_WAITS_MAX_BYTES;
  }
  if (!plan->never_waits || !small_feeds) {
    weft_status_t *st = weft__server_may_block();
    if (st) {
      *calls_out = g_new0(part_call_t, n > 0 ? n : 1);
      return st;
    }
  }
  step_run_t run = {0};
  run.m = m;
  run.step_id = (((int64_t)g_random_int() << 31) ^ g_random_int()) & G_MAXINT64;
  run.timeout_ms = timeout_ms;
  run.feeds = feeds;
  run.stats = stats;
  run.calls = weft__call_set_new();
  g_mutex_init(&run.lock);
  g_cond_init(&run.cond);
  run.errors = g_ptr_array_new();
  part_call_t *calls = g_new0(part_call_t, n > 0 ? n : 1);
  g_mutex_lock(&m->lock);
  g_hash_table_add(m->running, run.calls);
  g_mutex_unlock(&m->lock);

  run.plan = plan;
  g_mutex_lock(&s->runs_lock);
  bool closed = g_atomic_int_get(&s->closed);
  if (!closed) g_ptr_array_add(s->runs, &run);
  g_mutex_unlock(&s->runs_lock);
  if (closed) {
    /* Closed between finding the session and starting: nothing of the step has run. */
    step_run_clear(&run);
    *calls_out = calls;
    return session_closed_status();
  }

  run.pending = n;
  /* This thread would only wait, so it runs one partition itself: another task's if there is
   * one (its RunGraph call then starts with no thread hand-off, and its answer wakes this
   * thread directly), else the only one. The others each get a pool thread, so that a call
   * blocked in one does not hold up the rest; the master's own partition usually ends first. */
  int here = n == 1 ? 0 : -1;
  for (int k = 0; k < n; k++) {
    calls[k].run = &run;
    calls[k].part = plan->parts->pdata[k];
    const weft__task_ref_t *task = calls[k].part->task->ref;
    if (here < 0 && !(task->task == m->task && strcmp(task->job, m->job) == 0)) here = k;
  }
  if (here < 0) here = 0;
  bool overlap = false;
  if (n == 2 && here >= 0 && step_overlap_enabled()) {
    const weft__task_ref_t *other = calls[1 - here].part->task->ref;
    overlap = other->task == m->task && strcmp(other->job, m->job) == 0;
  }
  /* The partitions exchange tensors, so each needs a thread of its own at once: one the pool
   * cannot give now fails the step (RESOURCE_EXHAUSTED naming --max_rpc_threads) instead of
   * waiting behind others that may wait for it. Partitions not started after that are only
   * counted (as echoes, so the step reports the pool's refusal). */
  bool refused = false;
  for (int k = 0; k < n && !overlap; k++) {
    if (k == here) continue;
    weft_status_t *full =
        refused ? NULL : weft__pool_try_submit(m->pool, do_run_graph, &calls[k], false);
    if (!refused && !full) continue;
    calls[k].status = full ? weft_status_prefix(full, "RunGraph on %s",
                                                calls[k].part->task->peer.name)
                           : weft_status_new(WEFT_CANCELLED, WEFT_DERIVED_PREFIX "Step %"
                                             G_GINT64_FORMAT " was not started", run.step_id);
    refused = true;
    finish_part(&calls[k]);
  }
  /* No partition at all when every fetch is fed (RunStep feeding and fetching 'y'): there is
   * nothing to run, and calls[0] has no partition. */
  if (overlap) {
    run_overlapped(calls, here);
  } else if (n > 0 && !refused) {
    do_run_graph(&calls[here]);
  } else if (n > 0) {
    calls[here].status = weft_status_new(WEFT_CANCELLED, WEFT_DERIVED_PREFIX "Step %"
                                         G_GINT64_FORMAT " was not started", run.step_id);
    finish_part(&calls[here]);
  }
  g_mutex_lock(&run.lock);
  run.waiting = true; /* from here on every wait of this step is on run.cond */
  while (run.pending > 0 && run.failures == 0) g_cond_wait(&run.cond, &run.lock);
  bool failed = run.failures > 0;
  g_mutex_unlock(&run.lock);

  weft_status_t *st = NULL;
  if (failed) {
    /* The first failure has told the others (do_run_graph); give them a moment to report (the
     * original error may still be on its way), then stop waiting for them. A closed session's
     * step does not wait: CloseSession has cancelled its calls already. */
    gint64 until = g_get_monotonic_time() + ABORT_GRACE_US;
    g_mutex_lock(&run.lock);
    while (run.pending > 0 && !run.cancelled && g_cond_wait_until(&run.cond, &run.lock, until)) {
    }
    g_mutex_unlock(&run.lock);
    weft_status_t *cancel = weft_status_new(WEFT_CANCELLED, "Step %" G_GINT64_FORMAT
                                            " was cancelled after another task failed",
                                            run.step_id);
    weft__call_set_cancel(run.calls, cancel);
    weft_status_free(cancel);
    g_mutex_lock(&run.lock);
    while (run.pending > 0) g_cond_wait(&run.cond, &run.lock);
    g_mutex_unlock(&run.lock);
    /* The cleanup below may be made on this thread (a full pool): not by the only poller. */
    weft_status_free(weft__server_may_block());
    st = pick_error(&run);
    notify_parts(m, plan, run.step_id, false, NULL, NULL);
    for (guint k = 0; k < run.errors->len; k++) {
      part_call_t *c = run.errors->pdata[k];
      if (weft_status_code(c->status) == WEFT_ABORTED &&
          !g_str_has_prefix(weft_status_message(c->status), WEFT_DERIVED_PREFIX)) {
        /* A task restarted (or lost the graph): learn the cluster again before the next step. */
        g_mutex_lock(&s->lock);
        s->stale = true;
        g_mutex_unlock(&s->lock);
      }
    }
  }
  g_mutex_lock(&s->runs_lock);
  g_ptr_array_remove_fast(s->runs, &run);
  g_mutex_unlock(&s->runs_lock);
  if (run.cancelled) {
    /* The step's own error is the echo of the cancellation; a step whose partitions had all
     * answered before it reached them still belongs to a session that is gone. Read once the
     * step is out of s->runs: nobody else touches it then. */
    weft_status_free(st);
    st = run.cancelled;
  }
  step_run_clear(&run);
  *calls_out = calls;
  return st;
}

/* WEFT_MASTER_STEP_MEMO=0 resolves every RunStep's names again (for measuring). */
static bool memo_enabled(void) {
  static int enabled = -1;
  return weft__switch_enabled("WEFT_MASTER_STEP_MEMO", &enabled);
}

weft_status_t *weft__master_run_step(weft__master_t *m, const char *handle,
                                     const char *const *feed_names, weft_tensor_t *const *feeds,
                                     int n_feeds, const char *const *fetch_names, int n_fetches,
                                     const char *const *target_names, int n_targets,
                                     int64_t timeout_ms, weft_tensor_t **fetched,
                                     GPtrArray *placements, weft_run_metadata_t *stats) {
  weft_status_t *st = check_running(m);
  if (st) return st;
  msession_t *s = find_session(m, handle, &st);
  if (!s) return st;
  /* Held across a plan's registration by another step: waiting for it may take a while. */
  if (!g_mutex_trylock(&s->lock)) {
    st = weft__server_may_block();
    if (st) {
      release_session(m, s);
      return st;
    }
    g_mutex_lock(&s->lock);
  }
  /* Closed while this call found it: no plan may be registered after CloseSession forgot them. */
  if (g_atomic_int_get(&s->closed)) st = session_closed_status();
  if (!st && s->stale) st = refresh(s);
  /* A step repeating a recent one's names (a client's loop) takes its plan from the memo:
   * no resolving, no signature string, no hash lookup (the client sends the names every step,
   * so the master remembers them, as TensorFlow's MakeCallable would have the client do). Its
   * feeds are still checked against the outputs they replace, as resolving them would. */
  mplan_t *plan = NULL;
  const weft__feed_t *memo_feeds = NULL;
  if (!st && memo_enabled()) {
    plan = weft__step_memo_find(s->memo, s->graph, feed_names, n_feeds, fetch_names, n_fetches,
                                target_names, n_targets, &memo_feeds);
    for (int k = 0; plan && !st && k < n_feeds; k++) {
      st = weft__check_feed(memo_feeds[k].node, memo_feeds[k].index, feed_names[k], feeds[k]);
    }
    if (st) plan = NULL;
  }
  weft__step_spec_t spec;
  memset(&spec, 0, sizeof spec);
  if (!st && !plan) {
    st = weft__step_spec_resolve(s->graph, feed_names, feeds, n_feeds, fetch_names, n_fetches,
                                 target_names, n_targets, &spec);
    if (!st) {
      build_ctx_t ctx = {s, placements};
      void *cached = NULL;
      st = weft__plan_cache_get(s->plans, &spec, build_plan, &ctx, &cached);
      plan = cached;
      if (plan) {
        weft__step_memo_store(s->memo, s->graph, feed_names, fetch_names, target_names, &spec,
                              plan);
      }
    }
  }
  if (plan) g_atomic_int_inc(&plan->refcount);
  int64_t timeout = timeout_ms > 0 ? timeout_ms
                    : s->timeout_ms > 0 ? s->timeout_ms
                                        : m->opts.step_timeout_ms;
  g_mutex_unlock(&s->lock);
  weft__step_spec_clear(&spec);

  part_call_t *calls = NULL;
  if (!st) st = execute(s, plan, feeds, timeout, stats, &calls);
  if (!st) {
    for (int k = 0; k < plan->n_fetches; k++) {
      int part = plan->fetch_part[k], slot = plan->fetch_slot[k];
      fetched[k] = weft_tensor_ref(part < 0 ? feeds[slot] : calls[part].fetched[slot]);
    }
  }
  for (guint k = 0; calls && k < plan->parts->len; k++) {
    weft__tensors_free(calls[k].fetched, calls[k].n_fetched);
    weft_status_free(calls[k].status);
  }
  g_free(calls);
  mplan_unref(plan);
  release_session(m, s);
  return st;
}

weft_status_t *weft__master_close_session(weft__master_t *m, const char *handle) {
  g_mutex_lock(&m->lock);
  msession_t *s = handle ? g_hash_table_lookup(m->sessions, handle) : NULL;
  if (s) g_hash_table_remove(m->sessions, handle);
  g_mutex_unlock(&m->lock);
  if (!s) return NULL; /* closing twice, or after a restart: nothing left to close */
  g_atomic_int_set(&s->closed, 1);
  cancel_runs(s);
  g_mutex_lock(&s->lock);
  weft__step_memo_clear(s->memo);
  weft__plan_cache_foreach(s->plans, forget_cached_plan, m);
  weft__plan_cache_clear(s->plans);
  g_mutex_unlock(&s->lock);
  session_unref(s);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * ListDevices and Reset */

weft_status_t *weft__master_list_devices(weft__master_t *m, GPtrArray **devices) {
  *devices = NULL;
  weft_status_t *st = check_running(m);
  if (st) return st;
  status_call_t *calls = NULL;
  st = discover(m, NULL, &calls);
  if (!st) {
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)weft__device_attributes_free);
    for (guint k = 0; k < m->tasks->len; k++) {
      Weft__GetStatusResponse *r = calls[k].resp;
      for (size_t d = 0; d < r->n_device; d++) {
        const Weft__DeviceAttributes *a = r->device[d];
        Weft__DeviceAttributes *c = g_new0(Weft__DeviceAttributes, 1);
        weft__device_attributes__init(c);
        c->name = g_strdup(a->name);
        c->device_type = g_strdup(a->device_type);
        c->id = a->id;
        c->gpu_like = a->gpu_like;
        c->emulated = a->emulated;
        c->priority = a->priority;
        c->description = g_strdup(a->description);
        c->memory_bytes = a->memory_bytes;
        c->job = g_strdup(a->job);
        c->replica = a->replica;
        c->task = a->task;
        g_ptr_array_add(out, c);
      }
    }
    *devices = out;
  }
  free_status_calls(calls, (int)m->tasks->len);
  return st;
}

typedef struct cleanup_all_call {
  weft__master_t *m;
  const weft__task_ref_t *task;
  const char *const *containers;
  int n;
  weft_status_t *status;
} cleanup_all_call_t;

static void do_cleanup_all(void *arg) {
  cleanup_all_call_t *c = arg;
  weft__peer_t peer = {c->task->name, c->task->address, c->m->opts.security, NULL};
  Weft__CleanupAllRequest req = WEFT__CLEANUP_ALL_REQUEST__INIT;
  req.n_container = (size_t)c->n;
  req.container = (char **)c->containers;
  ProtobufCMessage *resp = NULL;
  c->status = weft__rpc_unary(&peer, M_CLEANUP_ALL, &req.base, NULL, 0, WEFT_CONTROL_TIMEOUT_MS,
                              false, c->m->control, &weft__cleanup_all_response__descriptor, &resp,
                              NULL, NULL);
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
}

weft_status_t *weft__master_reset(weft__master_t *m, const char *const *containers, int n) {
  weft_status_t *st = check_running(m);
  if (st) return st;
  int n_tasks = (int)m->tasks->len;
  cleanup_all_call_t *calls = g_new0(cleanup_all_call_t, n_tasks > 0 ? n_tasks : 1);
  latch_t latch;
  latch_init(&latch);
  for (int k = 0; k < n_tasks; k++) {
    calls[k].m = m;
    calls[k].task = m->tasks->pdata[k];
    calls[k].containers = containers;
    calls[k].n = n;
    submit(m, do_cleanup_all, &calls[k], &latch);
  }
  latch_wait_and_clear(&latch);
  for (int k = 0; k < n_tasks; k++) {
    if (!st && calls[k].status) {
      st = calls[k].status;
      calls[k].status = NULL;
    }
    weft_status_free(calls[k].status);
  }
  g_free(calls);
  return st ? weft_status_prefix(st, "Reset") : NULL;
}

void weft__node_placement_free(Weft__NodePlacement *p) {
  if (!p) return;
  g_free(p->name);
  g_free(p->op);
  g_free(p->device);
  g_free(p);
}
