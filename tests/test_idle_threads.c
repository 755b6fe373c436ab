/* The executor pools give their threads back when idle (weft_threads_set_idle_ms,
 * core/src/base/threadpool.c): a pool starts threads as work comes, up to its size; they end after
 * the idle time; work that comes after that starts them again. Checked on the pool itself (the
 * threads counted by name in /proc/self/task), against the race between a thread ending and new
 * work arriving (thousands of rounds with a 1 ms idle time, every task run exactly once), and on
 * a local session with its own pools, whose steps before and after the release give the same
 * numbers. The weftd side (killed clients' sessions) is /limits/killed_clients. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "base/base_internal.h"
#include "weft/weft.h"

#define OK(expr)                                                 \
  do {                                                           \
    weft_status_t *st_ = (expr);                                 \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

/* Threads of this process whose name starts with `prefix`. */
static int threads_named(const char *prefix) {
  GDir *d = g_dir_open("/proc/self/task", 0, NULL);
  g_assert_nonnull(d);
  int n = 0;
  const char *tid;
  while ((tid = g_dir_read_name(d))) {
    char *path = g_strdup_printf("/proc/self/task/%s/comm", tid);
    char *comm = NULL;
    if (g_file_get_contents(path, &comm, NULL, NULL) && g_str_has_prefix(comm, prefix)) n++;
    g_free(comm);
    g_free(path);
  }
  g_dir_close(d);
  return n;
}

/* Waits (generously: a loaded machine) until no thread is named `prefix`; returns how many are. */
static int wait_threads_gone(const char *prefix) {
  int n = threads_named(prefix);
  for (int k = 0; k < 600 && n > 0; k++) {
    g_usleep(50000);
    n = threads_named(prefix);
  }
  return n;
}

typedef struct gate {
  GMutex lock;
  GCond cond;
  int arrived; /* tasks that started */
  int need;    /* tasks that must start before any may finish */
  int done;
} gate_t;

/* Returns only once gate->need tasks run at the same time: each needs a thread of its own. */
static void gate_task(void *arg) {
  gate_t *g = arg;
  g_mutex_lock(&g->lock);
  g->arrived++;
  g_cond_broadcast(&g->cond);
  while (g->arrived < g->need) g_cond_wait(&g->cond, &g->lock);
  g->done++;
  g_cond_broadcast(&g->cond);
  g_mutex_unlock(&g->lock);
}

static void run_gated(weft__threadpool_t *pool, int n) {
  gate_t g = {.need = n};
  g_mutex_init(&g.lock);
  g_cond_init(&g.cond);
  for (int k = 0; k < n; k++) weft__threadpool_schedule(pool, gate_task, &g);
  g_mutex_lock(&g.lock);
  while (g.done < n) g_cond_wait(&g.cond, &g.lock);
  g_mutex_unlock(&g.lock);
  g_mutex_clear(&g.lock);
  g_cond_clear(&g.cond);
}

/* A pool of 4 has no thread until work comes, 4 while 4 tasks must run at once, none once idle
 * for the idle time, and 4 again for the next such work. */
static void test_pool_release(void) {
  weft_threads_set_idle_ms(200);
  weft__threadpool_t *pool = weft__threadpool_new(4, "idle-test");
  g_assert_cmpint(threads_named("idle-test"), ==, 0);
  for (int round = 0; round < 3; round++) {
    run_gated(pool, 4);
    int during = threads_named("idle-test");
    int after = wait_threads_gone("idle-test");
    g_test_message("round %d: %d threads after the work, %d after 200 ms idle", round, during,
                   after);
    /* Those that already ended are not counted; none can be more than the pool's size. */
    g_assert_cmpint(during, <=, 4);
    g_assert_cmpint(after, ==, 0);
  }
  weft__threadpool_free(pool);
  weft_threads_set_idle_ms(0);
}

typedef struct churn {
  gint *runs; /* per task: how many times it ran */
  gint left;
  GMutex lock;
  GCond cond;
} churn_t;

typedef struct churn_task {
  churn_t *c;
  int index;
} churn_task_t;

static void churn_run(void *arg) {
  churn_task_t *t = arg;
  g_atomic_int_inc(&t->c->runs[t->index]);
  if (g_atomic_int_dec_and_test(&t->c->left)) {
    g_mutex_lock(&t->c->lock);
    g_cond_signal(&t->c->cond);
    g_mutex_unlock(&t->c->lock);
  }
}

static void sum_range(void *arg, int64_t begin, int64_t end) {
  gint64 s = 0;
  for (int64_t i = begin; i < end; i++) s += i;
  __atomic_fetch_add((gint64 *)arg, s, __ATOMIC_RELAXED);
}

/* Threads end 1 ms after their last task while new tasks keep coming, some rounds right away
 * and some after a pause that outlasts the idle time: every task runs exactly once, nothing
 * waits forever, and parallel_for's sums stay exact. */
static void test_release_races(void) {
  weft_threads_set_idle_ms(1);
  weft__threadpool_t *pool = weft__threadpool_new(3, "churn-test");
  enum { ROUNDS = 2000, PER_ROUND = 5 };
  churn_t c = {.runs = g_new0(gint, ROUNDS * PER_ROUND)};
  g_mutex_init(&c.lock);
  g_cond_init(&c.cond);
  churn_task_t *tasks = g_new0(churn_task_t, ROUNDS * PER_ROUND);
  const int64_t n = 200000;
  for (int r = 0; r < ROUNDS; r++) {
    g_atomic_int_set(&c.left, PER_ROUND);
    for (int k = 0; k < PER_ROUND; k++) {
      churn_task_t *t = &tasks[r * PER_ROUND + k];
      t->c = &c;
      t->index = r * PER_ROUND + k;
      weft__threadpool_schedule(pool, churn_run, t);
    }
    g_mutex_lock(&c.lock);
    while (g_atomic_int_get(&c.left) > 0) g_cond_wait(&c.cond, &c.lock);
    g_mutex_unlock(&c.lock);
    if (r % 50 == 0) {
      gint64 sum = 0;
      weft__parallel_for(pool, n, 1000, sum_range, &sum);
      g_assert_cmpint(sum, ==, n * (n - 1) / 2);
    }
    if (r % 3 == 0) g_usleep(1000 + (r % 7) * 300);
  }
  for (int k = 0; k < ROUNDS * PER_ROUND; k++)
    if (c.runs[k] != 1) g_error("task %d ran %d times", k, c.runs[k]);
  weft__threadpool_free(pool);
  /* A thread that ended is gone a moment after free returns (it was detached). */
  g_assert_cmpint(wait_threads_gone("churn-test"), ==, 0);
  g_mutex_clear(&c.lock);
  g_cond_clear(&c.cond);
  g_free(tasks);
  g_free(c.runs);
  weft_threads_set_idle_ms(0);
}

/* Freeing a pool waits for its queued work, even work a busy thread has yet to take. */
static void test_free_runs_queued(void) {
  weft__threadpool_t *pool = weft__threadpool_new(1, "free-test");
  churn_t c = {.runs = g_new0(gint, 50)};
  g_mutex_init(&c.lock);
  g_cond_init(&c.cond);
  churn_task_t tasks[50];
  g_atomic_int_set(&c.left, 50);
  for (int k = 0; k < 50; k++) {
    tasks[k].c = &c;
    tasks[k].index = k;
    weft__threadpool_schedule(pool, churn_run, &tasks[k]);
  }
  weft__threadpool_free(pool);
  for (int k = 0; k < 50; k++) g_assert_cmpint(c.runs[k], ==, 1);
  g_assert_cmpint(wait_threads_gone("free-test"), ==, 0);
  g_mutex_clear(&c.lock);
  g_cond_clear(&c.cond);
  g_free(c.runs);
}

#define BRANCHES 4
#define DIM 96 /* W is 36 KiB: more than the executor runs inline (16 KiB) */

static float weight(int k, int i, int j) {
  return (float)(((i * DIM + j) * 7 + k * 3) % 13 - 6) / 8.0f;
}

/* y = W_0 x + W_1 x + W_2 x + W_3 x: four independent MatMuls, so the inter-op pool gets work. */
static weft_graph_t *branchy_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t xd[2] = {DIM, 1};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, xd, &st);
  OK(st);
  weft_output_t sum = {NULL, 0};
  for (int k = 0; k < BRANCHES; k++) {
    float w[DIM * DIM];
    for (int i = 0; i < DIM; i++)
      for (int j = 0; j < DIM; j++) w[i * DIM + j] = weight(k, i, j);
    int64_t wd[2] = {DIM, DIM};
    weft_tensor_t *wt = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, wd, w, sizeof w, NULL);
    char name[16];
    g_snprintf(name, sizeof name, "w%d", k);
    weft_output_t wc = weft_const(g, name, wt, &st);
    OK(st);
    weft_tensor_unref(wt);
    g_snprintf(name, sizeof name, "m%d", k);
    weft_output_t m = weft_matmul(g, name, wc, x, false, false, &st);
    OK(st);
    g_snprintf(name, sizeof name, k == BRANCHES - 1 ? "y" : "s%d", k);
    sum = k == 0 ? m : weft_binary(g, "AddV2", name, sum, m, &st);
    OK(st);
  }
  return g;
}

/* Runs a step; returns the largest difference from the reference computed in double. */
static double run_branchy(weft_session_t *s) {
  float xv[DIM];
  for (int i = 0; i < DIM; i++) xv[i] = (float)(i % 5) - 2.0f;
  int64_t xd[2] = {DIM, 1};
  weft_tensor_t *x = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, xd, xv, sizeof xv, NULL);
  const char *feed = "x", *fetch = "y";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, &feed, &x, 1, &fetch, &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_num_elements(out), ==, DIM);
  double worst = 0;
  for (int i = 0; i < DIM; i++) {
    double ref = 0;
    for (int k = 0; k < BRANCHES; k++)
      for (int j = 0; j < DIM; j++) ref += (double)weight(k, i, j) * xv[j];
    worst = fmax(worst, fabs(weft_tensor_get_double(out, i) - ref));
  }
  weft_tensor_unref(out);
  weft_tensor_unref(x);
  return worst;
}

/* A session with its own pools: its threads end while it sits idle, and its next step starts
 * them again and gives the same answer. */
static void test_session_release(void) {
  weft_threads_set_idle_ms(1000);
  weft_graph_t *g = branchy_graph();
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_use_per_session_threads(o, true);
  weft_session_options_set_inter_op_threads(o, 4);
  weft_session_options_set_intra_op_threads(o, 2);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  g_assert_cmpint(threads_named("weft-inter") + threads_named("weft-intra"), ==, 0);
  int seen = 0;
  for (int round = 0; round < 3; round++) {
    double worst = 0;
    int during = 0;
    /* Several steps, so that the pool surely runs some of the branches. */
    for (int k = 0; k < 20; k++) worst = fmax(worst, run_branchy(s));
    during = threads_named("weft-inter") + threads_named("weft-intra");
    g_assert_cmpfloat(worst, <=, 1e-3);
    int after = wait_threads_gone("weft-inter") + wait_threads_gone("weft-intra");
    g_test_message("round %d: largest error %.2g; session threads %d after its steps, %d once "
                   "idle", round, worst, during, after);
    g_assert_cmpint(after, ==, 0);
    seen = MAX(seen, during);
  }
  /* Read within 1 s of the last step: a loaded machine may miss them once, not three times. */
  g_assert_cmpint(seen, >, 0);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  weft_threads_set_idle_ms(0);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  g_test_add_func("/idle_threads/pool_release", test_pool_release);
  g_test_add_func("/idle_threads/release_races", test_release_races);
  g_test_add_func("/idle_threads/free_runs_queued", test_free_runs_queued);
  g_test_add_func("/idle_threads/session_release", test_session_release);
  return g_test_run();
}
