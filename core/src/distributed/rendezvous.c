/* Steps on a worker and their rendezvous: the tensors this task's _Send kernels produced for
 * other tasks, kept under their keys until the other task's RecvTensor takes them, and the
 * RecvTensor calls that arrived before the tensor did. A step also carries its abort status
 * (every waiter is answered with it, every later operation fails with it), its deadline, and the
 * set of outgoing calls its _Recv kernels have in flight, which an abort cancels, and the
 * tensors of grouped receives that one _Recv fetched for the others. Nothing here blocks but
 * weft__step_wait_delivered (a _Recv kernel's thread): a RecvTensor that must wait leaves a
 * callback, answered by the _Send or the abort. */
#include "distributed_internal.h"

#include <malloc.h>
#include <string.h>

/* How long a cleaned-up or aborted step is remembered: a RecvTensor, RunGraph or Abort of it that
 * arrives late fails at once instead of starting the step afresh and waiting for its deadline. */
#define STEP_TOMBSTONE_US (60 * G_USEC_PER_SEC)

typedef struct waiter {
  weft__recv_done_fn done;
  void *user_data;
} waiter_t;

struct weft__step {
  gint refcount;
  int64_t id;
  GMutex lock;
  GHashTable *ready;    /* key -> weft_tensor_t* (a reference) */
  GHashTable *waiting;  /* key -> waiter_t* */
  weft_status_t *aborted;
  bool derived;
  weft__call_set_t *calls;
  gint64 deadline_us;   /* monotonic; G_MAXINT64 when none */
  gint64 touched_us;
  gint64 expires_us;    /* a tombstone's end; G_MAXINT64 for a live step */
  /* Grouped receives of this task's _Recv kernels (made on first use). */
  GHashTable *claimed;   /* group name (its first key), a set */
  GHashTable *delivered; /* key -> weft_tensor_t*, fetched by another _Recv of its group */
  GCond delivered_cond;  /* signalled by deliveries and the abort */
  /* Set by the abort: the executor of a RunGraph of this step reads it before each node, so a
   * partition busy computing (a loop that never ends) stops too, not only a blocked _Recv. */
  weft__cancel_t cancel;
};

/* A tombstone once nobody holds its step: what a late call needs to fail as the step did. A burst
 * of hundreds of aborted steps would otherwise keep a step struct, a status and its message each
 * for STEP_TOMBSTONE_US, small blocks spread over glibc's per-thread arenas that hold their
 * pages resident; these records live in one array and their messages in one buffer. */
typedef struct tomb {
  int64_t id;
  gint64 expires_us; /* 0: an empty slot */
  gint64 touched_us, deadline_us;
  gsize message;     /* offset of its message (without WEFT_DERIVED_PREFIX) in tomb_text */
  int code;
  bool derived;
} tomb_t;

struct weft__step_table {
  GMutex lock;
  GHashTable *steps; /* &step->id -> weft__step_t* (the table's reference) */
  /* Tombstones, open addressing (linear probing) over a power-of-two capacity, rebuilt without
   * the expired ones by each sweep; a step taken again from here goes back to `steps`, its
   * record staying until it expires (it is updated if the step is buried again). */
  tomb_t *tombs;
  gsize tomb_cap, tomb_count;
  GString *tomb_text;
  guint steps_peak;  /* most steps held since the table last emptied (see release_if_idle) */
  bool trim_again;   /* a burst ended: the next sweep that finds the table empty trims too */
  weft_status_t *shutdown;
  gint64 swept_us;   /* when sweep_locked last walked the table */
  /* A step no RunGraph holds is dropped once untouched this long, and never before its
   * deadline (--step_idle_timeout_ms): a RecvTensor for a step that never runs here, or tensors
   * sent for a receiver that never came, are not kept for longer. */
  gint64 idle_limit_us;
};

/* The sweep walks every step, so it runs at most this often rather than on every new step:
 * expiry is counted in seconds and minutes, and a busy worker starts thousands of steps a
 * second. */
#define SWEEP_INTERVAL_US G_USEC_PER_SEC

static weft__step_t *step_new(int64_t id) {
  weft__step_t *s = g_new0(weft__step_t, 1);
  s->refcount = 1;
  s->id = id;
  g_mutex_init(&s->lock);
  s->ready = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify)weft_tensor_unref);
  s->waiting = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  s->calls = weft__call_set_new();
  s->deadline_us = G_MAXINT64;
  s->touched_us = g_get_monotonic_time();
  s->expires_us = G_MAXINT64;
  g_cond_init(&s->delivered_cond);
  weft__cancel_init(&s->cancel);
  return s;
}

void weft__step_unref(weft__step_t *s) {
  if (!s || !g_atomic_int_dec_and_test(&s->refcount)) return;
  if (s->ready) g_hash_table_destroy(s->ready);
  if (s->waiting) g_hash_table_destroy(s->waiting);
  weft_status_free(s->aborted);
  weft__call_set_free(s->calls);
  if (s->claimed) g_hash_table_destroy(s->claimed);
  if (s->delivered) g_hash_table_destroy(s->delivered);
  g_cond_clear(&s->delivered_cond);
  weft__cancel_clear(&s->cancel);
  g_mutex_clear(&s->lock);
  g_free(s);
}

int64_t weft__step_id(const weft__step_t *step) { return step->id; }
weft__call_set_t *weft__step_calls(weft__step_t *step) { return step->calls; }
weft__cancel_t *weft__step_cancel(weft__step_t *step) { return &step->cancel; }

gint64 weft__step_deadline(const weft__step_t *step) {
  /* Set once by RunGraph before any kernel of the step runs. */
  return step->deadline_us;
}

void weft__step_set_deadline(weft__step_t *step, gint64 deadline_us) {
  g_mutex_lock(&step->lock);
  if (deadline_us < step->deadline_us) step->deadline_us = deadline_us;
  g_mutex_unlock(&step->lock);
}

static weft_status_t *copy_status(const weft_status_t *st, bool derived) {
  const char *msg = st->message;
  if (g_str_has_prefix(msg, WEFT_DERIVED_PREFIX)) msg += strlen(WEFT_DERIVED_PREFIX);
  return weft_status_new(st->code, "%s%s", derived ? WEFT_DERIVED_PREFIX : "", msg);
}

void weft__step_abort(weft__step_t *s, const weft_status_t *why, bool derived) {
  g_mutex_lock(&s->lock);
  if (s->aborted) {
    g_mutex_unlock(&s->lock);
    return;
  }
  s->aborted = copy_status(why, false);
  s->derived = derived;
  /* An aborted step keeps only its status (and its call set, cancelled below) while it stays as a
   * tombstone: every operation on it checks `aborted` first, so its tables go now. A burst of
   * hundreds of aborted steps would otherwise hold their tables for STEP_TOMBSTONE_US, spread
   * over the heap where they keep pages resident. */
  GHashTable *waiting = s->waiting, *ready = s->ready, *delivered = s->delivered,
             *claimed = s->claimed;
  s->waiting = s->ready = s->delivered = s->claimed = NULL;
  g_cond_broadcast(&s->delivered_cond);
  g_mutex_unlock(&s->lock);
  weft__cancel_request(&s->cancel, why);
  /* Outside the lock: dropping a tensor may run its owner's release. */
  g_hash_table_destroy(ready);
  if (delivered) g_hash_table_destroy(delivered);
  if (claimed) g_hash_table_destroy(claimed);
  weft__call_set_cancel(s->calls, why);
  /* A peer waiting here fails because of this task's trouble: for the peer it is derived. */
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, waiting);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    waiter_t *w = value;
    w->done(w->user_data, copy_status(why, true), NULL);
  }
  g_hash_table_destroy(waiting);
}

weft_status_t *weft__step_status(weft__step_t *s, bool *derived) {
  g_mutex_lock(&s->lock);
  weft_status_t *st = s->aborted ? copy_status(s->aborted, false) : NULL;
  if (derived) *derived = s->derived;
  g_mutex_unlock(&s->lock);
  return st;
}

weft_status_t *weft__step_put(weft__step_t *s, const char *key, weft_tensor_t *tensor) {
  g_mutex_lock(&s->lock);
  s->touched_us = g_get_monotonic_time();
  if (s->aborted) {
    weft_status_t *st = copy_status(s->aborted, s->derived);
    g_mutex_unlock(&s->lock);
    return st;
  }
  waiter_t *w = NULL;
  gpointer stolen_key = NULL;
  if (g_hash_table_steal_extended(s->waiting, key, &stolen_key, (gpointer *)&w)) {
    g_mutex_unlock(&s->lock);
    g_free(stolen_key);
    w->done(w->user_data, NULL, weft_tensor_ref(tensor));
    g_free(w);
    return NULL;
  }
  if (g_hash_table_contains(s->ready, key)) {
    g_mutex_unlock(&s->lock);
    return weft_status_new(WEFT_INTERNAL, "Tensor '%s' was sent twice in step %" G_GINT64_FORMAT,
                           key, s->id);
  }
  g_hash_table_insert(s->ready, g_strdup(key), weft_tensor_ref(tensor));
  g_mutex_unlock(&s->lock);
  return NULL;
}

void weft__step_take(weft__step_t *s, const char *key, weft__recv_done_fn done, void *user_data) {
  g_mutex_lock(&s->lock);
  s->touched_us = g_get_monotonic_time();
  if (s->aborted) {
    weft_status_t *st = copy_status(s->aborted, true);
    g_mutex_unlock(&s->lock);
    done(user_data, st, NULL);
    return;
  }
  gpointer stolen_key = NULL, tensor = NULL;
  if (g_hash_table_steal_extended(s->ready, key, &stolen_key, &tensor)) {
    g_mutex_unlock(&s->lock);
    g_free(stolen_key);
    done(user_data, NULL, tensor);
    return;
  }
  if (g_hash_table_contains(s->waiting, key)) {
    g_mutex_unlock(&s->lock);
    done(user_data,
         weft_status_new(WEFT_INVALID_ARGUMENT,
                         "Tensor '%s' of step %" G_GINT64_FORMAT " is already being received",
                         key, s->id),
         NULL);
    return;
  }
  waiter_t *w = g_new0(waiter_t, 1);
  w->done = done;
  w->user_data = user_data;
  g_hash_table_insert(s->waiting, g_strdup(key), w);
  g_mutex_unlock(&s->lock);
}

bool weft__step_claim_group(weft__step_t *s, const char *group) {
  g_mutex_lock(&s->lock);
  if (s->aborted) {
    /* A tombstone has no tables: as a follower the caller's wait fails at once with the
     * step's status, and no fetch starts. */
    g_mutex_unlock(&s->lock);
    return false;
  }
  if (!s->claimed) s->claimed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  bool first = !g_hash_table_contains(s->claimed, group);
  if (first) g_hash_table_add(s->claimed, g_strdup(group));
  g_mutex_unlock(&s->lock);
  return first;
}

void weft__step_deliver(weft__step_t *s, const char *key, weft_tensor_t *tensor) {
  g_mutex_lock(&s->lock);
  if (!s->aborted) {
    if (!s->delivered) {
      s->delivered = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weft_tensor_unref);
    }
    g_hash_table_replace(s->delivered, g_strdup(key), weft_tensor_ref(tensor));
    g_cond_broadcast(&s->delivered_cond);
  }
  g_mutex_unlock(&s->lock);
}

weft_status_t *weft__step_wait_delivered(weft__step_t *s, const char *key, gint64 deadline_us,
                                         weft_tensor_t **out) {
  *out = NULL;
  weft_status_t *st = NULL;
  g_mutex_lock(&s->lock);
  for (;;) {
    gpointer stolen_key = NULL, tensor = NULL;
    if (s->aborted) {
      st = copy_status(s->aborted, s->derived);
      break;
    }
    if (s->delivered && g_hash_table_steal_extended(s->delivered, key, &stolen_key, &tensor)) {
      g_free(stolen_key);
      *out = tensor;
      break;
    }
    if (g_get_monotonic_time() >= deadline_us) {
      st = weft_status_new(WEFT_DEADLINE_EXCEEDED,
                           "Step %" G_GINT64_FORMAT " ran out of time before its group receive "
                           "delivered '%s'", s->id, key);
      break;
    }
    g_cond_wait_until(&s->delivered_cond, &s->lock, deadline_us);
  }
  g_mutex_unlock(&s->lock);
  return st;
}

/* Nothing of the step is left to hand over or wait for. An aborted step is never idle: it stays
 * as a tombstone until it expires. */
static void mark_finished_if_aborted(weft__step_t *s);

static bool step_idle(weft__step_t *s) {
  g_mutex_lock(&s->lock);
  bool idle = !s->aborted && g_hash_table_size(s->ready) == 0 &&
              g_hash_table_size(s->waiting) == 0;
  g_mutex_unlock(&s->lock);
  return idle;
}

/* ---------------------------------------------------------------------------------------------
 * The table */

weft__step_table_t *weft__step_table_new(void) {
  weft__step_table_t *t = g_new0(weft__step_table_t, 1);
  g_mutex_init(&t->lock);
  t->steps = g_hash_table_new(g_int64_hash, g_int64_equal);
  t->idle_limit_us = WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS * 1000;
  return t;
}

void weft__step_table_set_idle_limit(weft__step_table_t *t, int64_t ms) {
  g_mutex_lock(&t->lock);
  /* Bounded like every other timeout, so that deadlines counted from it cannot overflow. */
  int64_t limit_ms = ms > 0 ? MIN(ms, WEFT_MAX_TIMEOUT_MS) : WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS;
  t->idle_limit_us = limit_ms * 1000;
  g_mutex_unlock(&t->lock);
}

void weft__step_table_free(weft__step_table_t *t) {
  if (!t) return;
  weft_status_t *why = weft_status_new(WEFT_CANCELLED, "The worker is shutting down");
  weft__step_table_shutdown(t, why);
  weft_status_free(why);
  g_hash_table_destroy(t->steps);
  g_free(t->tombs);
  if (t->tomb_text) g_string_free(t->tomb_text, TRUE);
  weft_status_free(t->shutdown);
  g_mutex_clear(&t->lock);
  g_free(t);
}

/* A step that a RunGraph ran here may still be received from by a peer whose part of it runs
 * on: it is kept until its deadline, but never longer than this untouched (deadlines may be
 * years away). */
#define STEP_KEEP_MAX_US (15 * 60 * G_USEC_PER_SEC)

/* Whether a step nobody holds has outlived the idle limit (and its deadline) or its tombstone. */
static bool expired_at(gint64 touched_us, gint64 deadline_us, gint64 expires_us, gint64 now,
                       gint64 idle_limit_us) {
  gint64 until = touched_us + idle_limit_us;
  if (deadline_us != G_MAXINT64) {
    gint64 keep = MIN(deadline_us, touched_us + STEP_KEEP_MAX_US);
    if (keep > until) until = keep;
  }
  return now >= until || now >= expires_us;
}

static bool step_expired(weft__step_t *s, gint64 now, gint64 idle_limit_us) {
  g_mutex_lock(&s->lock);
  bool expired = expired_at(s->touched_us, s->deadline_us, s->expires_us, now, idle_limit_us);
  g_mutex_unlock(&s->lock);
  return expired;
}

/* ---------------------------------------------------------------------------------------------
 * Tombstones of steps nobody holds (tomb_t); all called with the table locked. */

static gsize tomb_slot(const tomb_t *tombs, gsize cap, int64_t id) {
  /* Fibonacci hashing: step ids are random or consecutive, and either spreads. */
  gsize k = (gsize)(((guint64)id * G_GUINT64_CONSTANT(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
  while (tombs[k].expires_us != 0 && tombs[k].id != id) k = (k + 1) & (cap - 1);
  return k;
}

/* Moves the tombstones still current at `now` (all of them when now is G_MININT64) to a table
 * with room for `room` more and their messages to a new buffer; with none, both go. */
static void tombs_rebuild(weft__step_table_t *t, gint64 now, gsize room) {
  tomb_t *old = t->tombs;
  gsize old_cap = t->tomb_cap, live = 0;
  GString *old_text = t->tomb_text;
  for (gsize k = 0; k < old_cap; k++) {
    const tomb_t *r = &old[k];
    if (r->expires_us != 0 &&
        (now == G_MININT64 ||
         !expired_at(r->touched_us, r->deadline_us, r->expires_us, now, t->idle_limit_us))) {
      live++;
    } else {
      old[k].expires_us = 0;
    }
  }
  t->tombs = NULL;
  t->tomb_cap = t->tomb_count = 0;
  t->tomb_text = NULL;
  if (live + room > 0) {
    gsize cap = 64;
    while (cap < 2 * (live + room)) cap *= 2;
    t->tombs = g_new0(tomb_t, cap);
    t->tomb_cap = cap;
    t->tomb_text = g_string_sized_new(old_text ? old_text->len : 256);
    for (gsize k = 0; k < old_cap; k++) {
      if (old[k].expires_us == 0) continue;
      tomb_t *r = &t->tombs[tomb_slot(t->tombs, cap, old[k].id)];
      *r = old[k];
      r->message = t->tomb_text->len;
      const char *msg = old_text->str + old[k].message;
      g_string_append_len(t->tomb_text, msg, (gssize)strlen(msg) + 1);
    }
    t->tomb_count = live;
  }
  g_free(old);
  if (old_text) g_string_free(old_text, TRUE);
}

/* Records the aborted step `s` (locked by the caller) as a tombstone. */
static void tomb_put(weft__step_table_t *t, const weft__step_t *s) {
  if (2 * (t->tomb_count + 1) > t->tomb_cap) tombs_rebuild(t, G_MININT64, t->tomb_count + 1);
  tomb_t *r = &t->tombs[tomb_slot(t->tombs, t->tomb_cap, s->id)];
  if (r->expires_us == 0) t->tomb_count++;
  r->id = s->id;
  r->expires_us = s->expires_us;
  r->touched_us = s->touched_us;
  r->deadline_us = s->deadline_us;
  r->code = s->aborted->code;
  r->derived = s->derived;
  /* A step buried again leaves its former message in the buffer until the next rebuild. */
  r->message = t->tomb_text->len;
  g_string_append_len(t->tomb_text, s->aborted->message, (gssize)strlen(s->aborted->message) + 1);
}

/* The step of a tombstone as it was buried: aborted, with no tables and no call set (a call on
 * it fails on its status before it would make one). */
static weft__step_t *tomb_raise(weft__step_table_t *t, int64_t id) {
  if (!t->tomb_cap) return NULL;
  const tomb_t *r = &t->tombs[tomb_slot(t->tombs, t->tomb_cap, id)];
  if (r->expires_us == 0) return NULL;
  weft__step_t *s = g_new0(weft__step_t, 1);
  s->refcount = 1;
  s->id = id;
  g_mutex_init(&s->lock);
  g_cond_init(&s->delivered_cond);
  s->aborted = weft_status_new(r->code, "%s", t->tomb_text->str + r->message);
  weft__cancel_init(&s->cancel);
  weft__cancel_request(&s->cancel, s->aborted);
  s->derived = r->derived;
  s->deadline_us = r->deadline_us;
  s->touched_us = r->touched_us;
  s->expires_us = r->expires_us;
  return s;
}

/* Drops steps nobody touched for a long time; called with the table locked. The dropped ones
 * are aborted after the lock is released (their waiters' callbacks may take other locks). */
static GPtrArray *sweep_locked(weft__step_table_t *t) {
  GPtrArray *stale = NULL;
  gint64 now = g_get_monotonic_time();
  if (now - t->swept_us < MIN(SWEEP_INTERVAL_US, t->idle_limit_us / 4)) return NULL;
  t->swept_us = now;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, t->steps);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    weft__step_t *s = value;
    if (g_atomic_int_get(&s->refcount) > 1 || !step_expired(s, now, t->idle_limit_us)) continue;
    if (!stale) stale = g_ptr_array_new();
    g_ptr_array_add(stale, s);
    g_hash_table_iter_remove(&it);
  }
  if (t->tomb_cap) tombs_rebuild(t, now, 0);
  return stale;
}

static void abort_and_drop(GPtrArray *steps, gint64 idle_limit_us) {
  if (!steps) return;
  for (guint k = 0; k < steps->len; k++) {
    weft__step_t *s = steps->pdata[k];
    weft_status_t *why = weft_status_new(WEFT_ABORTED,
                                         "Step %" G_GINT64_FORMAT " was dropped: no RunGraph of it "
                                         "ran on this task for %" G_GINT64_FORMAT
                                         " ms (--step_idle_timeout_ms)",
                                         s->id, idle_limit_us / 1000);
    weft__step_abort(s, why, false);
    weft__step_unref(s);
    weft_status_free(why);
  }
  g_ptr_array_free(steps, TRUE);
}

void weft__step_table_sweep(weft__step_table_t *t) {
  g_mutex_lock(&t->lock);
  GPtrArray *stale = t->shutdown ? NULL : sweep_locked(t);
  gint64 limit = t->idle_limit_us;
  /* What the burst's RPC and executor threads freed after its last step went (they end a little
   * later) is handed back once the server is idle. */
  bool trim = t->trim_again && g_hash_table_size(t->steps) == 0;
  if (trim) t->trim_again = false;
  g_mutex_unlock(&t->lock);
  abort_and_drop(stale, limit);
  if (trim) weft__malloc_trim();
}

gint64 weft__step_table_idle_limit_us(weft__step_table_t *t) {
  g_mutex_lock(&t->lock);
  gint64 limit = t->idle_limit_us;
  g_mutex_unlock(&t->lock);
  return limit;
}

weft__step_t *weft__step_get(weft__step_table_t *t, int64_t id, weft_status_t **status) {
  *status = NULL;
  g_mutex_lock(&t->lock);
  if (t->shutdown) {
    *status = copy_status(t->shutdown, false);
    g_mutex_unlock(&t->lock);
    return NULL;
  }
  weft__step_t *s = g_hash_table_lookup(t->steps, &id);
  GPtrArray *stale = NULL;
  if (!s) {
    stale = sweep_locked(t);
    s = tomb_raise(t, id);
    if (!s) s = step_new(id);
    g_hash_table_insert(t->steps, &s->id, s);
    t->steps_peak = MAX(t->steps_peak, g_hash_table_size(t->steps));
  }
  g_atomic_int_inc(&s->refcount);
  g_mutex_lock(&s->lock);
  s->touched_us = g_get_monotonic_time();
  g_mutex_unlock(&s->lock);
  gint64 limit = t->idle_limit_us;
  g_mutex_unlock(&t->lock);
  abort_and_drop(stale, limit);
  return s;
}

void weft__step_table_remove(weft__step_table_t *t, int64_t id) {
  weft_status_t *st = NULL;
  weft__step_t *s = weft__step_get(t, id, &st);
  weft_status_free(st);
  if (!s) return;
  /* Kept as a tombstone for a while: see STEP_TOMBSTONE_US. */
  weft_status_t *why = weft_status_new(WEFT_CANCELLED, "Step %" G_GINT64_FORMAT " was cleaned up",
                                       id);
  weft__step_abort(s, why, true);
  weft_status_free(why);
  weft__step_mark_finished(s);
  weft__step_unref(s);
  weft__step_table_release_if_idle(t, id);
}

static void mark_finished_if_aborted(weft__step_t *s) {
  g_mutex_lock(&s->lock);
  bool aborted = s->aborted != NULL;
  g_mutex_unlock(&s->lock);
  if (aborted) weft__step_mark_finished(s);
}

void weft__step_mark_finished(weft__step_t *s) {
  g_mutex_lock(&s->lock);
  gint64 until = g_get_monotonic_time() + STEP_TOMBSTONE_US;
  if (until < s->expires_us) s->expires_us = until;
  g_mutex_unlock(&s->lock);
}

/* A burst of steps held this many at once left glibc's arenas holding the memory their threads
 * freed: when the last of them goes, it is handed back to the system (malloc_trim). */
#define TRIM_AFTER_STEPS 64

void weft__step_table_release_if_idle(weft__step_table_t *t, int64_t id) {
  g_mutex_lock(&t->lock);
  weft__step_t *s = g_hash_table_lookup(t->steps, &id);
  /* The table's reference is the only one left: no RunGraph or RecvTensor is using it. */
  weft__step_t *drop = NULL;
  if (s && g_atomic_int_get(&s->refcount) == 1 && step_idle(s)) {
    g_hash_table_remove(t->steps, &id);
    drop = s;
  } else if (s) {
    /* Still under the table's lock: once it is released, another caller (the RecvTensor that
     * holds the other reference) may drop and free the step. */
    mark_finished_if_aborted(s);
    if (g_atomic_int_get(&s->refcount) == 1) {
      /* Nobody else holds it, and nobody can take it while the table is locked: an aborted
       * step leaves only its tombstone record. */
      g_mutex_lock(&s->lock);
      bool aborted = s->aborted != NULL;
      if (aborted) tomb_put(t, s);
      g_mutex_unlock(&s->lock);
      if (aborted) {
        g_hash_table_remove(t->steps, &id);
        drop = s;
      }
    }
  }
  bool trim = drop && g_hash_table_size(t->steps) == 0 && t->steps_peak >= TRIM_AFTER_STEPS;
  if (g_hash_table_size(t->steps) == 0) t->steps_peak = 0;
  if (trim) t->trim_again = true;
  g_mutex_unlock(&t->lock);
  weft__step_unref(drop);
  if (trim) weft__malloc_trim();
}

weft_status_t *weft__step_table_take(weft__step_table_t *t, int64_t id, const char *key,
                                     weft__recv_done_fn done, void *user_data) {
  weft_status_t *st = NULL;
  weft__step_t *step = weft__step_get(t, id, &st);
  if (!step) return st;
  weft__step_take(step, key, done, user_data);
  weft__step_unref(step);
  /* When this took the step's last tensor after its RunGraph had ended, nothing else would drop
   * the step: it would stay in the table until the idle limit, and every new step's sweep
   * would walk it. */
  weft__step_table_release_if_idle(t, id);
  return NULL;
}

guint weft__step_table_size(weft__step_table_t *t) {
  g_mutex_lock(&t->lock);
  guint n = g_hash_table_size(t->steps);
  g_mutex_unlock(&t->lock);
  return n;
}

void weft__step_table_shutdown(weft__step_table_t *t, const weft_status_t *why) {
  g_mutex_lock(&t->lock);
  if (!t->shutdown) t->shutdown = copy_status(why, false);
  GPtrArray *all = g_ptr_array_new();
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, t->steps);
  while (g_hash_table_iter_next(&it, NULL, &value)) g_ptr_array_add(all, value);
  g_hash_table_steal_all(t->steps);
  g_mutex_unlock(&t->lock);
  for (guint k = 0; k < all->len; k++) {
    weft__step_abort(all->pdata[k], why, false);
    weft__step_unref(all->pdata[k]);
  }
  g_ptr_array_free(all, TRUE);
}
