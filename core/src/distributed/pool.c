/* A bounded pool of threads for the work a server does on behalf of its callers (the master's
 * calls to the tasks, the large RecvTensor copies): at most max_threads threads and max_queued
 * waiting jobs. Work beyond that, or work that needs a thread when the system refuses one, is
 * refused with RESOURCE_EXHAUSTED naming the bound, and the caller decides (run it itself, or
 * fail the call): GLib's pools queue without a bound, and a failed thread start leaves the job
 * in the queue with nobody to run it. Threads idle for POOL_IDLE_US end, so a burst does not
 * keep its threads. */
#include "distributed_internal.h"

#include <malloc.h>

/* How long an idle thread waits for work before it ends: a steady load keeps its threads, and
 * an idle server keeps none. */
#define POOL_IDLE_US (2 * G_USEC_PER_SEC)

typedef struct pool_job {
  void (*fn)(void *arg);
  void *arg;
} pool_job_t;

struct weft__pool {
  char *name;        /* "The master's call pool", for messages */
  char *flag;        /* the flag that sets max_threads; NULL: a fixed size */
  char *thread_name; /* as the threads show in /proc (at most 15 characters) */
  int max_threads, max_queued;
  GMutex lock;
  GCond work;  /* a job was queued, or the pool stops */
  GCond ended; /* a thread ended */
  GQueue jobs; /* pool_job_t* */
  int threads, idle;
  bool stopping;
};

weft__pool_t *weft__pool_new(const char *name, const char *flag, const char *thread_name,
                             int max_threads, int max_queued) {
  weft__pool_t *p = g_new0(weft__pool_t, 1);
  p->name = g_strdup(name);
  p->flag = g_strdup(flag);
  p->thread_name = g_strdup(thread_name);
  p->max_threads = MAX(1, max_threads);
  p->max_queued = MAX(0, max_queued);
  g_mutex_init(&p->lock);
  g_cond_init(&p->work);
  g_cond_init(&p->ended);
  g_queue_init(&p->jobs);
  return p;
}

static gpointer pool_main(gpointer data) {
  weft__pool_t *p = data;
  g_mutex_lock(&p->lock);
  for (;;) {
    pool_job_t *job = g_queue_pop_head(&p->jobs);
    if (job) {
      g_mutex_unlock(&p->lock);
      job->fn(job->arg);
      g_free(job);
      g_mutex_lock(&p->lock);
      continue;
    }
    if (p->stopping) break;
    p->idle++;
    bool woken = g_cond_wait_until(&p->work, &p->lock, g_get_monotonic_time() + POOL_IDLE_US);
    p->idle--;
    if (!woken && g_queue_is_empty(&p->jobs)) break;
  }
  p->threads--;
  bool last = p->threads == 0 && !p->stopping;
  g_cond_broadcast(&p->ended);
  /* Nothing of the pool is touched after this: weft__pool_free may free it at once. */
  g_mutex_unlock(&p->lock);
  /* The burst is over: what its threads freed goes back to the system (glibc keeps it in their
   * arenas otherwise, and the server would stay at its high-water mark). */
  if (last) weft__malloc_trim();
  return NULL;
}

weft_status_t *weft__pool_try_submit(weft__pool_t *p, void (*fn)(void *), void *arg,
                                     bool may_queue) {
  pool_job_t *job = g_new0(pool_job_t, 1);
  job->fn = fn;
  job->arg = arg;
  weft_status_t *st = NULL;
  g_mutex_lock(&p->lock);
  int queued = (int)p->jobs.length;
  if (p->stopping) {
    st = weft_status_new(WEFT_UNAVAILABLE, "%s is stopping", p->name);
  } else if (queued < p->idle) {
    g_queue_push_tail(&p->jobs, job);
    g_cond_signal(&p->work);
  } else if (p->threads < p->max_threads) {
    /* Queued before the thread starts, which cannot take the lock until this returns. */
    g_queue_push_tail(&p->jobs, job);
    GError *error = NULL;
    GThread *t = g_thread_try_new(p->thread_name, pool_main, p, &error);
    if (t) {
      p->threads++;
      g_thread_unref(t);
    } else {
      g_queue_pop_tail(&p->jobs);
      if (may_queue && p->threads > 0 && queued < p->max_queued) {
        /* A busy thread takes it when done. */
        g_queue_push_tail(&p->jobs, job);
      } else {
        st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                             "%s cannot start a thread (%s); try again later", p->name,
                             error ? error->message : "unknown error");
      }
      g_clear_error(&error);
    }
  } else if (may_queue && queued < p->max_queued) {
    g_queue_push_tail(&p->jobs, job);
  } else if (may_queue) {
    st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                         "%s: all %d threads are busy and %d jobs wait, its limit%s%s%s; try "
                         "again later", p->name, p->max_threads, queued, p->flag ? " (" : "",
                         p->flag ? p->flag : "", p->flag ? ")" : "");
  } else {
    st = weft_status_new(WEFT_RESOURCE_EXHAUSTED,
                         "%s: all %d threads are busy, its limit%s%s%s; try again later",
                         p->name, p->max_threads, p->flag ? " (" : "", p->flag ? p->flag : "",
                         p->flag ? ")" : "");
  }
  g_mutex_unlock(&p->lock);
  if (st) g_free(job);
  return st;
}

void weft__pool_free(weft__pool_t *p) {
  if (!p) return;
  g_mutex_lock(&p->lock);
  p->stopping = true;
  g_cond_broadcast(&p->work);
  /* The threads run what is queued before they end. */
  while (p->threads > 0) g_cond_wait(&p->ended, &p->lock);
  g_mutex_unlock(&p->lock);
  g_mutex_clear(&p->lock);
  g_cond_clear(&p->work);
  g_cond_clear(&p->ended);
  g_free(p->name);
  g_free(p->flag);
  g_free(p->thread_name);
  g_free(p);
}
