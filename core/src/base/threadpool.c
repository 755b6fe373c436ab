/* threadpool.c: the inter-op and intra-op thread pools and the parallel-for kernels use to split
 * work. The caller of parallel_for works through the chunks itself, so a kernel running on a pool
 * thread can call it without waiting on threads that may all be busy. A pool's threads start
 * with the work and end after weft_threads_set_idle_ms without any. */
#include <sched.h>
#include <stdlib.h>

#include "base_internal.h"

typedef struct pfor_state pfor_state_t;

struct weft__threadpool {
  GMutex lock;
  GCond work;  /* a task was queued, or the pool is being freed */
  GCond ended; /* a thread ended */
  GQueue tasks; /* pool_task_t*, under lock */
  int n_threads; /* the most threads it runs at once */
  int alive, idle; /* under lock */
  bool warned; /* a refused thread was logged */
  gint refs;   /* the owner and each running thread: the last one frees the pool */
  char *name;
  /* A helper that finished its part of a parallel_for waits a short while for the next one
   * (pfor_spin), which then hands it its state here rather than through the pool's queue:
   * waking a blocked thread costs tens of microseconds in a VM, a step of a small GEMM. */
  GMutex offer_lock;
  pfor_state_t *offer; /* under offer_lock; the state spinning helpers may join */
  int offer_seats;     /* under offer_lock: how many more may join it */
  gint spinners;       /* helpers in pfor_spin */
  gint queued;         /* tasks queued and not started: a spinner leaves for them */
  gint stopping;       /* set by threadpool_free (under lock): threads and spinners leave */
};

typedef struct {
  void (*fn)(void *arg);
  void *arg;
} pool_task_t;

/* The pool whose task this thread is running: only its own threads wait for work (pfor_spin), not
 * a caller that ran a task inline. */
static _Thread_local weft__threadpool_t *current_pool;

/* weft_threads_set_limit's cap; 0: one thread per core. */
static gint thread_limit;

void weft_threads_set_limit(int n) {
  g_atomic_int_set(&thread_limit, n > 0 ? n : 0);
  if (n > 0) {
    /* OpenBLAS reads this once, when the CPU plugin loads it; a value the user set wins. */
    char value[16];
    g_snprintf(value, sizeof value, "%d", n);
    g_setenv("OPENBLAS_NUM_THREADS", value, FALSE);
  }
}

int weft__num_cores(void) {
  int limit = g_atomic_int_get(&thread_limit);
  if (limit > 0) return limit;
  int n = (int)g_get_num_processors();
  return n > 0 ? n : 1;
}

/* weft_threads_set_idle_ms's value; 0: WEFT_THREAD_IDLE_MS, else the default. */
static gint idle_ms_set;

void weft_threads_set_idle_ms(int64_t idle_ms) {
  g_atomic_int_set(&idle_ms_set, idle_ms > 0 ? (gint)MIN(idle_ms, (int64_t)G_MAXINT) : 0);
}

static gpointer read_idle_env(gpointer unused) {
  (void)unused;
  const char *text = g_getenv("WEFT_THREAD_IDLE_MS");
  gint64 ms = WEFT_DEFAULT_THREAD_IDLE_MS;
  if (text && *text) {
    char *end = NULL;
    gint64 v = g_ascii_strtoll(text, &end, 10);
    if (end && !*end && v > 0 && v <= G_MAXINT) {
      ms = v;
    } else {
      weft__log(WEFT_LOG_WARNING, "threadpool", "WEFT_THREAD_IDLE_MS='%s' is not a positive "
                "number of milliseconds; using %d", text, WEFT_DEFAULT_THREAD_IDLE_MS);
    }
  }
  return GSIZE_TO_POINTER((gsize)ms);
}

static gint64 idle_us(void) {
  static GOnce once = G_ONCE_INIT;
  gint64 ms = g_atomic_int_get(&idle_ms_set);
  if (ms <= 0) ms = (gint64)GPOINTER_TO_SIZE(g_once(&once, read_idle_env, NULL));
  return ms * 1000;
}

weft__threadpool_t *weft__threadpool_new(int n_threads, const char *name) {
  if (n_threads <= 0) n_threads = weft__num_cores();
  weft__threadpool_t *pool = g_new0(weft__threadpool_t, 1);
  g_mutex_init(&pool->lock);
  g_cond_init(&pool->work);
  g_cond_init(&pool->ended);
  g_queue_init(&pool->tasks);
  pool->n_threads = n_threads;
  pool->refs = 1;
  pool->name = g_strdup(name != NULL ? name : "weft");
  g_mutex_init(&pool->offer_lock);
  return pool;
}

static void pool_unref(weft__threadpool_t *pool) {
  if (!g_atomic_int_dec_and_test(&pool->refs)) return;
  g_mutex_clear(&pool->lock);
  g_cond_clear(&pool->work);
  g_cond_clear(&pool->ended);
  g_mutex_clear(&pool->offer_lock);
  g_free(pool->name);
  g_free(pool);
}

/* Threads start when work comes and end when none came for the idle time, so a session or a
 * graph nobody runs holds no threads (a client that went away without closing its session
 * leaves nothing running behind it); a step after that pays for starting them again. */
static gpointer pool_thread(gpointer data) {
  weft__threadpool_t *pool = data;
  current_pool = pool;
  g_mutex_lock(&pool->lock);
  for (;;) {
    pool_task_t *task = g_queue_pop_head(&pool->tasks);
    if (task) {
      g_atomic_int_add(&pool->queued, -1);
      g_mutex_unlock(&pool->lock);
      task->fn(task->arg);
      g_free(task);
      g_mutex_lock(&pool->lock);
      continue;
    }
    if (g_atomic_int_get(&pool->stopping)) break;
    pool->idle++;
    bool woken = g_cond_wait_until(&pool->work, &pool->lock, g_get_monotonic_time() + idle_us());
    pool->idle--;
    /* A task queued as the wait timed out is still taken: it was counted on this thread. */
    if (!woken && g_queue_is_empty(&pool->tasks)) break;
  }
  pool->alive--;
  g_cond_broadcast(&pool->ended);
  g_mutex_unlock(&pool->lock);
  pool_unref(pool);
  return NULL;
}

void weft__threadpool_free(weft__threadpool_t *pool) {
  if (pool == NULL) return;
  /* Let queued tasks finish: they may hold references to state their submitters wait on. */
  g_mutex_lock(&pool->lock);
  g_atomic_int_set(&pool->stopping, 1);
  g_cond_broadcast(&pool->work);
  while (pool->alive > 0) g_cond_wait(&pool->ended, &pool->lock);
  g_mutex_unlock(&pool->lock);
  pool_unref(pool);
}

int weft__threadpool_size(const weft__threadpool_t *pool) {
  return pool != NULL ? pool->n_threads : 1;
}

void weft__threadpool_schedule(weft__threadpool_t *pool, void (*fn)(void *arg), void *arg) {
  if (fn == NULL) return;
  if (pool == NULL) {
    fn(arg);
    return;
  }
  pool_task_t *task = g_new(pool_task_t, 1);
  task->fn = fn;
  task->arg = arg;
  bool queued = true;
  g_mutex_lock(&pool->lock);
  if ((int)pool->tasks.length < pool->idle) {
    /* An idle thread takes it (every queued task already has one of them counted). */
    g_queue_push_tail(&pool->tasks, task);
    g_atomic_int_inc(&pool->queued);
    g_cond_signal(&pool->work);
  } else if (pool->alive < pool->n_threads) {
    GError *error = NULL;
    g_atomic_int_inc(&pool->refs);
    GThread *t = g_thread_try_new(pool->name, pool_thread, pool, &error);
    if (t) {
      /* It takes the task once this returns the lock. */
      pool->alive++;
      g_thread_unref(t);
      g_queue_push_tail(&pool->tasks, task);
      g_atomic_int_inc(&pool->queued);
    } else {
      g_atomic_int_add(&pool->refs, -1); /* the owner still holds one */
      /* No abort (g_thread_new's way) when the system refuses a thread (ulimit -u, a pids
       * cgroup): the caller runs the task itself, so the step still makes progress. */
      if (!pool->warned)
        weft__log(WEFT_LOG_WARNING, "threadpool", "cannot start a thread for pool %s (%s); "
                  "running its work on the calling thread", pool->name,
                  error ? error->message : "unknown error");
      pool->warned = true;
      g_clear_error(&error);
      queued = false;
    }
  } else {
    /* Every thread is busy (a spinning helper leaves for it): the first to finish takes it. */
    g_queue_push_tail(&pool->tasks, task);
    g_atomic_int_inc(&pool->queued);
  }
  g_mutex_unlock(&pool->lock);
  if (!queued) {
    g_free(task);
    fn(arg);
  }
}

/* ---------------------------------------------------------------------------------------------
 * parallel_for */

/* A parallel_for of less work than this many cycles runs whole on the caller. Handing a part to
 * another thread costs its wake-up (15-80 us in a VM, 50k-250k cycles) or, with a helper
 * spinning, the cache lines of the shared state and the caller's wait for the helper's last
 * chunk; below this the split steps measured slower at two threads than at one (issue 22:
 * Conv2DBackpropInput's col2im of ~25k cycles at batch 1, docs/performance.md). Eigen's tensor
 * cost model (TensorFlow's kernels) likewise keeps work under 100k cycles on one thread. */
#define MIN_CYCLES_TO_SPLIT 100000
/* A chunk is at least this many cycles of work. */
#define MIN_CYCLES_PER_CHUNK 10000
/* Chunks per participating thread: more than one evens out uneven chunk costs. */
#define CHUNKS_PER_THREAD 4

/* How long a helper waits for the next parallel_for after finishing its part of one, by default
 * (WEFT_POOL_SPIN_US; 0: not at all). Long enough to span the gap between two GEMMs of a step, or
 * the end of one step and the start of the next; short enough that an idle pool leaves its cores
 * within a fraction of a millisecond (OpenBLAS's own threads wait about 0.13 s). */
#define POOL_SPIN_US_DEFAULT 200
#define POOL_SPIN_US_MAX 100000

struct pfor_state {
  gint refcount; /* the caller, every queued helper and every spinner that joined; the last frees */
  gint next_chunk;
  gint chunks_done;
  int n_chunks;
  int64_t chunk_size;
  int64_t total;
  weft_range_fn fn;
  void *arg;
  weft__threadpool_t *pool;
  GMutex lock;
  GCond cond;
  bool finished;
};

static void pfor_unref(pfor_state_t *state) {
  if (!g_atomic_int_dec_and_test(&state->refcount)) return;
  g_mutex_clear(&state->lock);
  g_cond_clear(&state->cond);
  g_free(state);
}

static void pfor_work(pfor_state_t *state) {
  for (;;) {
    int chunk = g_atomic_int_add(&state->next_chunk, 1);
    if (chunk >= state->n_chunks) return;
    int64_t begin = (int64_t)chunk * state->chunk_size;
    int64_t end = begin + state->chunk_size;
    if (end > state->total) end = state->total;
    state->fn(state->arg, begin, end);
    if (g_atomic_int_add(&state->chunks_done, 1) + 1 == state->n_chunks) {
      g_mutex_lock(&state->lock);
      state->finished = true;
      g_cond_signal(&state->cond);
      g_mutex_unlock(&state->lock);
    }
  }
}

static int spin_us(void) {
  static gint value = -1;
  int v = g_atomic_int_get(&value);
  if (v < 0) {
    const char *env = g_getenv("WEFT_POOL_SPIN_US");
    v = POOL_SPIN_US_DEFAULT;
    if (env != NULL && *env != '\0') {
      char *end = NULL;
      long n = strtol(env, &end, 10);
      if (end != env && *end == '\0' && n >= 0 && n <= POOL_SPIN_US_MAX)
        v = (int)n;
      else
        weft__log(WEFT_LOG_WARNING, "threadpool",
                  "WEFT_POOL_SPIN_US=%s is not a whole number of microseconds in 0..%d; "
                  "using %d", env, POOL_SPIN_US_MAX, POOL_SPIN_US_DEFAULT);
    }
    g_atomic_int_set(&value, v);
  }
  return v;
}

/* Under offer_lock: a reference to the offered state and one of its seats, or NULL. */
static pfor_state_t *offer_take_locked(weft__threadpool_t *pool) {
  pfor_state_t *state = pool->offer;
  if (state == NULL) return NULL;
  g_atomic_int_inc(&state->refcount);
  if (--pool->offer_seats == 0) g_atomic_pointer_set(&pool->offer, NULL);
  return state;
}

/* A helper's wait for the next parallel_for: joins what parallel_for offers (starting the wait
 * again after each), leaves after spin_us() with none. It is counted in pool->spinners while it
 * waits, and uncounted under offer_lock, so that a parallel_for that counted it on offering
 * finds it joining, not gone. It yields the CPU as it waits, to whatever else is runnable. */
static void pfor_spin(weft__threadpool_t *pool) {
  int us = spin_us();
  if (us <= 0 || current_pool != pool || g_atomic_int_get(&pool->stopping)) return;
  g_atomic_int_inc(&pool->spinners);
  gint64 deadline = g_get_monotonic_time() + us;
  for (;;) {
    pfor_state_t *state = NULL;
    /* Queued work would wait for this thread (the pool counts it busy): leave for it. */
    bool leave = g_atomic_int_get(&pool->stopping) || g_atomic_int_get(&pool->queued) > 0 ||
                 g_get_monotonic_time() >= deadline;
    if (leave || g_atomic_pointer_get(&pool->offer) != NULL) {
      g_mutex_lock(&pool->offer_lock);
      state = offer_take_locked(pool);
      if (state != NULL || leave) g_atomic_int_add(&pool->spinners, -1);
      g_mutex_unlock(&pool->offer_lock);
    }
    if (state != NULL) {
      pfor_work(state);
      pfor_unref(state);
      if (leave) return;
      g_atomic_int_inc(&pool->spinners);
      deadline = g_get_monotonic_time() + us;
      continue;
    }
    if (leave) return;
    for (int i = 0; i < 32; i++) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    sched_yield();
  }
}

static void pfor_helper(void *arg) {
  pfor_state_t *state = arg;
  weft__threadpool_t *pool = state->pool;
  pfor_work(state);
  pfor_unref(state);
  pfor_spin(pool);
}

int64_t weft__parallel_for_plan(int64_t total, int64_t cost_per_unit, int n_threads,
                                int64_t *chunk_size) {
  *chunk_size = total;
  if (total <= 1 || n_threads <= 1) return total > 0 ? 1 : 0;
  if (cost_per_unit < 1) cost_per_unit = 1;
  if (cost_per_unit > ((int64_t)1 << 40)) cost_per_unit = (int64_t)1 << 40;
  /* Compared by division so that total * cost_per_unit cannot overflow. */
  if (total < (MIN_CYCLES_TO_SPLIT + cost_per_unit - 1) / cost_per_unit) return 1;
  int64_t min_units = (MIN_CYCLES_PER_CHUNK + cost_per_unit - 1) / cost_per_unit;
  /* Chunks of at least MIN_CYCLES_PER_CHUNK of work, and at most CHUNKS_PER_THREAD per thread
   * (the caller counts as one). */
  int64_t max_chunks = (int64_t)CHUNKS_PER_THREAD * (n_threads + 1);
  int64_t size = (total + max_chunks - 1) / max_chunks;
  if (size < min_units) size = min_units;
  int64_t n_chunks = (total + size - 1) / size;
  if (n_chunks > 1) *chunk_size = size;
  return n_chunks;
}

void weft__parallel_for(weft__threadpool_t *pool, int64_t total, int64_t cost_per_unit,
                        weft_range_fn fn, void *arg) {
  if (total <= 0 || fn == NULL) return;
  int n_threads = pool == NULL ? 0 : weft__threadpool_size(pool);
  int64_t chunk_size = total;
  int64_t n_chunks = weft__parallel_for_plan(total, cost_per_unit, n_threads, &chunk_size);
  if (n_chunks <= 1) {
    fn(arg, 0, total);
    return;
  }

  pfor_state_t *state = g_new0(pfor_state_t, 1);
  state->n_chunks = (int)n_chunks;
  state->chunk_size = chunk_size;
  state->total = total;
  state->fn = fn;
  state->arg = arg;
  state->pool = pool;
  g_mutex_init(&state->lock);
  g_cond_init(&state->cond);
  state->refcount = 1;
  int n_helpers = n_threads < n_chunks - 1 ? n_threads : (int)n_chunks - 1;
  /* Helpers still waiting after the last parallel_for take seats on this one; the rest are
   * queued. */
  int seats = 0;
  if (g_atomic_int_get(&pool->spinners) > 0) {
    g_mutex_lock(&pool->offer_lock);
    if (pool->offer == NULL) {
      int spinning = g_atomic_int_get(&pool->spinners);
      seats = spinning < n_helpers ? spinning : n_helpers;
      if (seats > 0) {
        pool->offer_seats = seats;
        g_atomic_pointer_set(&pool->offer, state);
      }
    }
    g_mutex_unlock(&pool->offer_lock);
  }
  g_atomic_int_add(&state->refcount, n_helpers - seats);
  for (int i = seats; i < n_helpers; i++) weft__threadpool_schedule(pool, pfor_helper, state);

  pfor_work(state);

  /* Every chunk is claimed now: no seat left is worth taking. */
  if (seats > 0) {
    g_mutex_lock(&pool->offer_lock);
    if (pool->offer == state) g_atomic_pointer_set(&pool->offer, NULL);
    g_mutex_unlock(&pool->offer_lock);
  }
  /* Wait for the chunks still running on helpers. */
  g_mutex_lock(&state->lock);
  while (!state->finished) g_cond_wait(&state->cond, &state->lock);
  g_mutex_unlock(&state->lock);
  pfor_unref(state);
}

/* ---------------------------------------------------------------------------------------------
 * Process-wide pools: created on first use with the first caller's size, never freed. */

static gpointer make_inter_op_pool(gpointer data) {
  return weft__threadpool_new(GPOINTER_TO_INT(data), "inter-op");
}

static gpointer make_intra_op_pool(gpointer data) {
  return weft__threadpool_new(GPOINTER_TO_INT(data), "intra-op");
}

weft__threadpool_t *weft__default_inter_op_pool(int n_threads) {
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, make_inter_op_pool, GINT_TO_POINTER(n_threads));
}

weft__threadpool_t *weft__default_intra_op_pool(int n_threads) {
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, make_intra_op_pool, GINT_TO_POINTER(n_threads));
}
