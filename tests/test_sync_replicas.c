/* Tests for synchronous replicated training (core/src/train/sync_replicas.c): the accumulator
 * kernels against hand-computed numbers (accumulate, stale drop, average, reset, step, too few
 * gradients); then in-process clusters (weft_server_new for one ps and two or three workers, a
 * thread, graph and session per worker, between-graph replication): one step checked by hand
 * (the update averages exactly N gradients), the linear model y = 2x + 1 trained to W ~ 2,
 * b ~ 1 with the global step equal to the number of synchronous steps, a backup worker, and a
 * worker that stops pushing (DEADLINE_EXCEEDED with its message, then a retry that completes). */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "process_util.h"
#include "weft/weft.h"

#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_)                                                                                  \
      g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),                    \
              weft_status_message(st_));                                                      \
  } while (0)

static void expect_error(weft_status_t *st, weft_code_t code, const char *substring) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  if (!strstr(weft_status_message(st), substring))
    g_error("expected '%s' in: %s", substring, weft_status_message(st));
  weft_status_free(st);
}

static weft_tensor_t *int64_scalar(int64_t v) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT64, 0, NULL);
  *(int64_t *)weft_tensor_data(t) = v;
  return t;
}

static weft_tensor_t *floats(const float *v, int n) {
  int64_t dims[1] = {n};
  weft_status_t *st = NULL;
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, v, sizeof(float) * n, &st);
  OK(st);
  return t;
}

static double fetch1(weft_session_t *s, const char *name, int64_t index) {
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &name, &out, 1, NULL, 0));
  double v = weft_tensor_get_double(out, index);
  weft_tensor_unref(out);
  return v;
}

/* ---------------------------------------------------------------------------------------------
 * Kernels */

typedef struct kernel_graph {
  weft_graph_t *g;
  weft_session_t *s;
} kernel_graph_t;

static kernel_graph_t kernel_graph(weft_dtype_t dtype) {
  kernel_graph_t k;
  k.g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t two = 2;
  weft_tensor_t *z = weft_tensor_new(dtype, 1, &two), *z64 = int64_scalar(0);
  weft_variable(k.g, "acc", weft_const(k.g, "acc_init", z, &st), &st);
  OK(st);
  weft_variable(k.g, "count", weft_const(k.g, "count_init", z64, &st), &st);
  OK(st);
  weft_variable(k.g, "step", weft_const(k.g, "step_init", z64, &st), &st);
  OK(st);
  weft_tensor_unref(z);
  weft_tensor_unref(z64);
  weft_output_t local_step = weft_placeholder(k.g, "local_step", WEFT_DT_INT64, 0, NULL, &st);
  OK(st);
  /* Unknown rank: a wrong shape reaches the kernel. */
  weft_output_t grad = weft_placeholder(k.g, "grad", dtype, -1, NULL, &st);
  OK(st);
  weft_output_t required = weft_placeholder(k.g, "required", WEFT_DT_INT64, 0, NULL, &st);
  OK(st);
  const char *refs[3] = {"acc", "count", "step"};
  weft_op_builder_t *b = weft_op_new(k.g, "WeftAccumulatorApply", "accumulate");
  for (int i = 0; i < 3; i++) weft_op_add_input(b, weft_out(weft_graph_node(k.g, refs[i]), 0));
  weft_op_add_input(b, local_step);
  weft_op_add_input(b, grad);
  OK(weft_op_finish(b, NULL));
  b = weft_op_new(k.g, "WeftAccumulatorTake", "take");
  for (int i = 0; i < 3; i++) weft_op_add_input(b, weft_out(weft_graph_node(k.g, refs[i]), 0));
  weft_op_add_input(b, required);
  OK(weft_op_finish(b, NULL));
  weft_global_variables_initializer(k.g, "init", &st);
  OK(st);
  k.s = weft_session_new(k.g, NULL, &st);
  OK(st);
  const char *init = "init";
  OK(weft_session_run(k.s, NULL, NULL, 0, NULL, NULL, 0, &init, 1));
  return k;
}

/* Runs the accumulate op; returns its `accepted`. */
static bool accumulate(kernel_graph_t *k, int64_t local_step, float g0, float g1,
                       weft_dtype_t dtype) {
  int64_t two = 2;
  weft_tensor_t *grad = weft_tensor_new(dtype, 1, &two);
  if (dtype == WEFT_DT_FLOAT) {
    ((float *)weft_tensor_data(grad))[0] = g0;
    ((float *)weft_tensor_data(grad))[1] = g1;
  } else {
    ((double *)weft_tensor_data(grad))[0] = g0;
    ((double *)weft_tensor_data(grad))[1] = g1;
  }
  weft_tensor_t *ls = int64_scalar(local_step);
  const char *feeds[2] = {"local_step", "grad"}, *fetch = "accumulate";
  weft_tensor_t *vals[2] = {ls, grad}, *out = NULL;
  OK(weft_session_run(k->s, feeds, vals, 2, &fetch, &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_dtype(out), ==, WEFT_DT_BOOL);
  bool accepted = weft_tensor_get_double(out, 0) != 0.0;
  weft_tensor_unref(out);
  weft_tensor_unref(ls);
  weft_tensor_unref(grad);
  return accepted;
}

static weft_status_t *take(kernel_graph_t *k, int64_t required, weft_tensor_t **out) {
  weft_tensor_t *r = int64_scalar(required);
  const char *feed = "required", *fetch = "take";
  weft_status_t *st = weft_session_run(k->s, &feed, &r, 1, &fetch, out, 1, NULL, 0);
  weft_tensor_unref(r);
  return st;
}

static void assert_state(kernel_graph_t *k, double a0, double a1, int64_t count, int64_t step) {
  g_assert_cmpfloat(fetch1(k->s, "acc", 0), ==, a0);
  g_assert_cmpfloat(fetch1(k->s, "acc", 1), ==, a1);
  g_assert_cmpint((int64_t)fetch1(k->s, "count", 0), ==, count);
  g_assert_cmpint((int64_t)fetch1(k->s, "step", 0), ==, step);
}

static void kernels_for(weft_dtype_t dtype) {
  kernel_graph_t k = kernel_graph(dtype);
  g_assert_true(accumulate(&k, 0, 1.0f, 2.0f, dtype));
  assert_state(&k, 1, 2, 1, 0);
  g_assert_true(accumulate(&k, 0, 3.0f, 5.0f, dtype));
  assert_state(&k, 4, 7, 2, 0);

  weft_tensor_t *avg = NULL;
  expect_error(take(&k, 3, &avg), WEFT_FAILED_PRECONDITION,
               "node 'take': accumulator has 2 of 3 gradients");
  g_assert_null(avg);
  assert_state(&k, 4, 7, 2, 0); /* untouched */

  OK(take(&k, 2, &avg));
  g_assert_cmpint(weft_tensor_dtype(avg), ==, dtype);
  g_assert_cmpfloat(weft_tensor_get_double(avg, 0), ==, 2.0);
  g_assert_cmpfloat(weft_tensor_get_double(avg, 1), ==, 3.5);
  weft_tensor_unref(avg);
  assert_state(&k, 0, 0, 0, 1);

  /* Computed from step 0's variables: stale now. */
  g_assert_false(accumulate(&k, 0, 9.0f, 9.0f, dtype));
  assert_state(&k, 0, 0, 0, 1);
  g_assert_true(accumulate(&k, 1, 2.0f, 4.0f, dtype));
  assert_state(&k, 2, 4, 1, 1);
  /* A global step ahead of the accumulator (restored): the older sum is dropped. */
  g_assert_true(accumulate(&k, 5, 10.0f, 20.0f, dtype));
  assert_state(&k, 10, 20, 1, 5);
  OK(take(&k, 1, &avg));
  g_assert_cmpfloat(weft_tensor_get_double(avg, 1), ==, 20.0);
  weft_tensor_unref(avg);
  assert_state(&k, 0, 0, 0, 6);

  /* A gradient of the wrong shape names the node. */
  weft_tensor_t *bad = weft_tensor_new(dtype, 1, (int64_t[]){3}), *ls = int64_scalar(6);
  const char *feeds[2] = {"local_step", "grad"}, *fetch = "accumulate";
  weft_tensor_t *vals[2] = {ls, bad}, *out = NULL;
  expect_error(weft_session_run(k.s, feeds, vals, 2, &fetch, &out, 1, NULL, 0),
               WEFT_INVALID_ARGUMENT, "node 'accumulate': the gradient");
  weft_tensor_unref(bad);
  weft_tensor_unref(ls);
  assert_state(&k, 0, 0, 0, 6);
  expect_error(take(&k, 0, &avg), WEFT_INVALID_ARGUMENT, "num_required must be at least 1");

  weft_session_free(k.s);
  weft_graph_free(k.g);
}

static void test_kernels(void) {
  kernels_for(WEFT_DT_FLOAT);
  kernels_for(WEFT_DT_DOUBLE);
}

/* ---------------------------------------------------------------------------------------------
 * Clusters in this process */

typedef struct cluster {
  int n_workers;
  weft_server_t *servers[4]; /* ps first */
  char *worker_targets[3];
} cluster_t;

static void cluster_start(cluster_t *c, int n_workers) {
  memset(c, 0, sizeof *c);
  c->n_workers = n_workers;
  weft_cluster_spec_t *spec = weft_cluster_spec_new();
  char *address = g_strdup_printf("127.0.0.1:%d", free_port());
  OK(weft_cluster_spec_add_task(spec, "ps", 0, address));
  g_free(address);
  for (int i = 0; i < n_workers; i++) {
    address = g_strdup_printf("127.0.0.1:%d", free_port());
    OK(weft_cluster_spec_add_task(spec, "worker", i, address));
    c->worker_targets[i] = g_strdup_printf("grpc://%s", address);
    g_free(address);
  }
  OK(weft_server_new(spec, "ps", 0, NULL, &c->servers[0]));
  for (int i = 0; i < n_workers; i++)
    OK(weft_server_new(spec, "worker", i, NULL, &c->servers[i + 1]));
  for (int i = 0; i <= n_workers; i++) OK(weft_server_start(c->servers[i]));
  weft_cluster_spec_free(spec);
}

static void cluster_stop(cluster_t *c) {
  for (int i = 0; i <= c->n_workers; i++) weft_server_free(c->servers[i]);
  for (int i = 0; i < c->n_workers; i++) g_free(c->worker_targets[i]);
}

/* One worker's client: y = w * x + b with mean squared error, variables on the ps. */
typedef struct replica {
  weft_graph_t *g;
  weft_session_t *s;
  weft_sync_replicas_t *sync;
  int task;
} replica_t;

static replica_t replica_new(const cluster_t *c, int task, int n_aggregate, int n_total,
                             double lr) {
  replica_t r = {.task = task};
  r.g = weft_graph_new();
  char *worker = g_strdup_printf("/job:worker/task:%d", task);
  weft_replica_device_setter_t *setter =
      weft_replica_device_setter(r.g, 1, "/job:ps", worker, true, WEFT_PS_ROUND_ROBIN);
  g_free(worker);
  weft_graph_push_device_fn(r.g, weft_replica_device_setter_fn, setter);
  weft_status_t *st = NULL;
  int64_t unknown = -1;
  weft_output_t x = weft_placeholder(r.g, "x", WEFT_DT_FLOAT, 1, &unknown, &st);
  OK(st);
  weft_output_t y = weft_placeholder(r.g, "y", WEFT_DT_FLOAT, 1, &unknown, &st);
  OK(st);
  weft_output_t w = weft_variable(r.g, "w", weft_const_float(r.g, "w_init", 0.0f, &st), &st);
  OK(st);
  weft_output_t b = weft_variable(r.g, "b", weft_const_float(r.g, "b_init", 0.0f, &st), &st);
  OK(st);
  weft_output_t wx = weft_binary(r.g, "Mul", "wx", w, x, &st);
  OK(st);
  weft_output_t pred = weft_binary(r.g, "AddV2", "pred", wx, b, &st);
  OK(st);
  weft_output_t loss = weft_mean_squared_error(r.g, y, pred, &st);
  OK(st);
  weft_node_t *gs = weft_train_global_step(r.g, &st);
  OK(st);
  weft_optimizer_spec_t spec = weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, lr);
  OK(weft_sync_replicas_minimize(r.g, loss, &spec, NULL, 0, gs, n_aggregate, n_total, &r.sync));
  weft_global_variables_initializer(r.g, "init", &st);
  OK(st);
  weft_graph_pop_device(r.g);
  weft_replica_device_setter_free(setter);
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, c->worker_targets[task]);
  r.s = weft_session_new(r.g, o, &st);
  OK(st);
  weft_session_options_free(o);
  return r;
}

static void replica_free(replica_t *r) {
  weft_sync_replicas_free(r->sync);
  weft_session_free(r->s);
  weft_graph_free(r->g);
}

/* One synchronous step on x, y (n values each); *loss (may be NULL) gets the loss. */
static weft_status_t *replica_step(replica_t *r, const float *x, const float *y, int n,
                                   int64_t timeout_ms, double *loss, int64_t *gs) {
  weft_tensor_t *feeds[2] = {floats(x, n), floats(y, n)};
  const char *names[2] = {"x", "y"}, *fetch = "mean_squared_error/value";
  weft_tensor_t *out = NULL;
  weft_status_t *st = weft_sync_replicas_step(r->sync, r->s, r->task == 0, names, feeds, 2,
                                              &fetch, &out, 1, timeout_ms, gs);
  if (!st && loss) *loss = weft_tensor_get_double(out, 0);
  if (st) g_assert_null(out);
  weft_tensor_unref(out);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  return st;
}

/* A worker thread: `steps` synchronous steps on its data (steps < 0: a backup worker that goes
 * on until the global step reaches -steps). */
typedef struct worker_run {
  replica_t *r;
  const float *x, *y;
  int n, steps;
  int64_t timeout_ms;
  int64_t last_gs;
  double last_loss;
  weft_status_t *error;
  GThread *thread;
} worker_run_t;

static gpointer worker_main(gpointer data) {
  worker_run_t *w = data;
  if (w->steps >= 0) {
    for (int i = 0; i < w->steps && !w->error; i++)
      w->error = replica_step(w->r, w->x, w->y, w->n, w->timeout_ms, &w->last_loss, &w->last_gs);
    return NULL;
  }
  int64_t until = -w->steps;
  while (w->last_gs < until) {
    weft_status_t *st = replica_step(w->r, w->x, w->y, w->n, w->timeout_ms, &w->last_loss,
                                     &w->last_gs);
    if (weft_status_code(st) == WEFT_DEADLINE_EXCEEDED) {
      /* The chief finished without this worker's last gradient (it was a backup), or is slow:
       * look at the global step, and wait again (a retry does not push twice). */
      weft_status_free(st);
      w->last_gs = (int64_t)fetch1(w->r->s, "global_step", 0);
      continue;
    }
    if (st) {
      w->error = st;
      break;
    }
  }
  return NULL;
}

static void worker_start(worker_run_t *w, replica_t *r, const float *x, const float *y, int n,
                         int steps, int64_t timeout_ms) {
  memset(w, 0, sizeof *w);
  w->r = r;
  w->x = x;
  w->y = y;
  w->n = n;
  w->steps = steps;
  w->timeout_ms = timeout_ms;
  w->thread = g_thread_new("worker", worker_main, w);
}

static void worker_join(worker_run_t *w) {
  g_thread_join(w->thread);
  OK(w->error);
}

static void run_init(replica_t *r) {
  const char *init = "init";
  OK(weft_session_run(r->s, NULL, NULL, 0, NULL, NULL, 0, &init, 1));
}

/* The data of each worker: y = 2x + 1, x with mean 0 (so w and b converge separately). */
static const float xs[3][2] = {{-1.0f, 1.0f}, {-0.5f, 0.5f}, {-0.8f, 0.8f}};
static float ys[3][2];

static void make_data(void) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) ys[i][j] = 2.0f * xs[i][j] + 1.0f;
}

/* The first step by hand, from w = b = 0 with learning rate 0.5: worker 0 has x=1, y=3 (loss 9,
 * dw = 2 (0 - 3) 1 = -6, db = -6), worker 1 x=2, y=1 (loss 1, dw = 2 (0 - 1) 2 = -4, db = -2).
 * The average of exactly these two: dw = -5, db = -4, so w = 2.5 and b = 2. */
static const float hand_x[2] = {1.0f, 2.0f}, hand_y[2] = {3.0f, 1.0f};

static void test_two_workers(void) {
  make_data();
  cluster_t c;
  cluster_start(&c, 2);
  replica_t r0 = replica_new(&c, 0, 2, 2, 0.5), r1 = replica_new(&c, 1, 2, 2, 0.5);
  run_init(&r0);

  worker_run_t w1;
  worker_start(&w1, &r1, &hand_x[1], &hand_y[1], 1, 1, 10000);
  double loss0 = 0;
  int64_t gs = -1;
  OK(replica_step(&r0, &hand_x[0], &hand_y[0], 1, 10000, &loss0, &gs));
  worker_join(&w1);
  g_assert_cmpfloat(loss0, ==, 9.0);
  g_assert_cmpfloat(w1.last_loss, ==, 1.0);
  g_assert_cmpint(gs, ==, 1);
  g_assert_cmpint(w1.last_gs, ==, 1);
  g_assert_cmpfloat(fetch1(r0.s, "w", 0), ==, 2.5);
  g_assert_cmpfloat(fetch1(r1.s, "b", 0), ==, 2.0);
  g_assert_cmpint((int64_t)fetch1(r0.s, "w/sync_count", 0), ==, 0);
  g_assert_cmpint((int64_t)fetch1(r0.s, "w/sync_step", 0), ==, 1);
  /* The accumulators live with their variables on the ps; the gradients on each worker. */
  g_assert_cmpstr(weft_session_node_device(r0.s, "w/sync_acc"), ==,
                  "/job:ps/replica:0/task:0/device:CPU:0");
  g_assert_cmpstr(weft_session_node_device(r1.s, "sync_replicas/accumulate_b"), ==,
                  "/job:ps/replica:0/task:0/device:CPU:0");
  g_assert_cmpstr(weft_session_node_device(r1.s, "sync_replicas/take_b"), ==,
                  "/job:ps/replica:0/task:0/device:CPU:0");
  g_assert_true(g_str_has_prefix(weft_session_node_device(r1.s, "mean_squared_error/value"),
                                 "/job:worker/replica:0/task:1/"));

  enum { STEPS = 40 };
  worker_start(&w1, &r1, xs[1], ys[1], 2, STEPS, 10000);
  for (int i = 0; i < STEPS; i++) OK(replica_step(&r0, xs[0], ys[0], 2, 10000, NULL, &gs));
  worker_join(&w1);
  g_assert_cmpint(gs, ==, STEPS + 1);
  g_assert_cmpint(w1.last_gs, ==, STEPS + 1);
  g_assert_cmpint((int64_t)fetch1(r1.s, "global_step", 0), ==, STEPS + 1);
  g_assert_cmpfloat(fabs(fetch1(r0.s, "w", 0) - 2.0), <, 1e-4);
  g_assert_cmpfloat(fabs(fetch1(r0.s, "b", 0) - 1.0), <, 1e-4);
  g_assert_cmpint(weft_sync_replicas_num_stale(r0.sync), ==, 0);
  g_assert_cmpint(weft_sync_replicas_num_stale(r1.sync), ==, 0);

  replica_free(&r0);
  replica_free(&r1);
  cluster_stop(&c);
}

static void test_backup_worker(void) {
  make_data();
  cluster_t c;
  cluster_start(&c, 3);
  replica_t r[3];
  for (int i = 0; i < 3; i++) r[i] = replica_new(&c, i, 2, 3, 0.5);
  run_init(&r[0]);
  enum { STEPS = 40 };
  worker_run_t w[3];
  for (int i = 1; i < 3; i++) worker_start(&w[i], &r[i], xs[i], ys[i], 2, -STEPS, 300);
  int64_t gs = -1;
  for (int i = 0; i < STEPS; i++) OK(replica_step(&r[0], xs[0], ys[0], 2, 10000, NULL, &gs));
  for (int i = 1; i < 3; i++) worker_join(&w[i]);
  g_assert_cmpint(gs, ==, STEPS);
  g_assert_cmpint((int64_t)fetch1(r[1].s, "global_step", 0), ==, STEPS);
  g_assert_cmpint((int64_t)fetch1(r[1].s, "b/sync_step", 0), ==, STEPS);
  g_assert_cmpfloat(fabs(fetch1(r[2].s, "w", 0) - 2.0), <, 1e-3);
  g_assert_cmpfloat(fabs(fetch1(r[2].s, "b", 0) - 1.0), <, 1e-3);
  g_test_message("stale gradients dropped: worker 1 %" G_GINT64_FORMAT ", worker 2 %"
                 G_GINT64_FORMAT, weft_sync_replicas_num_stale(r[1].sync),
                 weft_sync_replicas_num_stale(r[2].sync));
  g_assert_cmpint(weft_sync_replicas_num_stale(r[0].sync), ==, 0); /* the chief is never late */
  for (int i = 0; i < 3; i++) replica_free(&r[i]);
  cluster_stop(&c);
}

static void test_worker_gone(void) {
  cluster_t c;
  cluster_start(&c, 2);
  replica_t r0 = replica_new(&c, 0, 2, 2, 0.5), r1 = replica_new(&c, 1, 2, 2, 0.5);
  run_init(&r0);

  /* Worker 1 pushes nothing: the chief gives up at its deadline, naming what is missing. */
  gint64 start = g_get_monotonic_time();
  int64_t gs = -1;
  expect_error(replica_step(&r0, &hand_x[0], &hand_y[0], 1, 300, NULL, &gs),
               WEFT_DEADLINE_EXCEEDED,
               "sync replicas: 1 of 2 gradients for variable 'w' arrived within 300 ms; is a "
               "worker slow or gone?");
  gint64 elapsed_ms = (g_get_monotonic_time() - start) / 1000;
  g_assert_cmpint(elapsed_ms, >=, 300);
  g_assert_cmpint(elapsed_ms, <, 3000);
  g_assert_cmpint(gs, ==, -1);
  g_assert_cmpint((int64_t)fetch1(r0.s, "global_step", 0), ==, 0);

  /* Worker 1 comes back; the chief's retry waits again without pushing a second gradient, so
   * the update is the hand-computed average of exactly two. */
  worker_run_t w1;
  worker_start(&w1, &r1, &hand_x[1], &hand_y[1], 1, 1, 10000);
  OK(replica_step(&r0, &hand_x[0], &hand_y[0], 1, 10000, NULL, &gs));
  worker_join(&w1);
  g_assert_cmpint(gs, ==, 1);
  g_assert_cmpfloat(fetch1(r0.s, "w", 0), ==, 2.5);
  g_assert_cmpfloat(fetch1(r0.s, "b", 0), ==, 2.0);

  /* The chief gone: a worker gives up too. */
  expect_error(replica_step(&r1, &hand_x[1], &hand_y[1], 1, 300, NULL, &gs),
               WEFT_DEADLINE_EXCEEDED,
               "sync replicas: the global step did not move past 1 within 300 ms; is the chief "
               "(or a worker) slow or gone?");
  g_assert_cmpint((int64_t)fetch1(r0.s, "w/sync_count", 0), ==, 1);

  /* A push computed at step 0 that arrives now (a late backup worker's) is dropped, on the ps. */
  weft_tensor_t *feeds[3] = {floats(&hand_x[1], 1), floats(&hand_y[1], 1), int64_scalar(0)};
  const char *names[3] = {"x", "y", "sync_replicas/local_step"};
  const char *fetches[2] = {"sync_replicas/accumulate_w", "sync_replicas/accumulate_b"};
  weft_tensor_t *accepted[2] = {NULL, NULL};
  OK(weft_session_run(r1.s, names, feeds, 3, fetches, accepted, 2, NULL, 0));
  for (int i = 0; i < 2; i++) {
    g_assert_cmpfloat(weft_tensor_get_double(accepted[i], 0), ==, 0.0);
    weft_tensor_unref(accepted[i]);
  }
  const char *train = weft_node_name(weft_sync_replicas_train_op(r1.sync));
  OK(weft_session_run(r1.s, names, feeds, 3, NULL, NULL, 0, &train, 1));
  for (int i = 0; i < 3; i++) weft_tensor_unref(feeds[i]);
  g_assert_cmpint((int64_t)fetch1(r0.s, "w/sync_count", 0), ==, 1);
  g_assert_cmpint((int64_t)fetch1(r0.s, "b/sync_count", 0), ==, 1);
  g_assert_cmpint((int64_t)fetch1(r0.s, "w/sync_step", 0), ==, 1);
  replica_free(&r0);
  replica_free(&r1);
  cluster_stop(&c);
}

static void test_errors(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t w = weft_variable(g, "w", weft_const_float(g, "w_init", 1.0f, &st), &st);
  OK(st);
  weft_output_t loss = weft_unary(g, "Square", "loss", w, &st);
  OK(st);
  weft_optimizer_spec_t spec = weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1);
  weft_sync_replicas_t *sync = NULL;
  expect_error(weft_sync_replicas_minimize(g, loss, &spec, NULL, 0, NULL, 0, 0, &sync),
               WEFT_INVALID_ARGUMENT, "replicas_to_aggregate must be at least 1, not 0");
  expect_error(weft_sync_replicas_minimize(g, loss, &spec, NULL, 0, NULL, 3, 2, &sync),
               WEFT_INVALID_ARGUMENT,
               "total_num_replicas (2) is less than replicas_to_aggregate (3)");
  weft_node_t *not_var = loss.node;
  expect_error(weft_sync_replicas_minimize(g, loss, &spec, &not_var, 1, NULL, 1, 1, &sync),
               WEFT_INVALID_ARGUMENT, "'loss' is not a variable");
  g_assert_null(sync);

  /* A local session, one replica: each step applies its own gradient once. */
  OK(weft_sync_replicas_minimize(g, loss, &spec, NULL, 0, NULL, 1, 1, &sync));
  g_assert_nonnull(weft_sync_replicas_train_op(sync));
  g_assert_nonnull(weft_sync_replicas_update_op(sync));
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *init = "init";
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &init, 1));
  int64_t gs = 0;
  OK(weft_sync_replicas_step(sync, s, true, NULL, NULL, 0, NULL, NULL, 0, 1000, &gs));
  g_assert_cmpint(gs, ==, 1);
  g_assert_cmpfloat(fabs(fetch1(s, "w", 0) - 0.8), <, 1e-6); /* 1 - 0.1 * 2 */
  expect_error(weft_sync_replicas_step(sync, s, true, NULL, NULL, 0, NULL, NULL, 0, 0, &gs),
               WEFT_INVALID_ARGUMENT, "timeout_ms must be positive");
  weft_sync_replicas_free(sync);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  g_test_add_func("/sync_replicas/kernels", test_kernels);
  g_test_add_func("/sync_replicas/errors", test_errors);
  g_test_add_func("/sync_replicas/two_workers", test_two_workers);
  g_test_add_func("/sync_replicas/backup_worker", test_backup_worker);
  g_test_add_func("/sync_replicas/worker_gone", test_worker_gone);
  return g_test_run();
}
