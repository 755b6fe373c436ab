/* weft-train: TensorFlow's distributed example trainer as a program. A ps task serves the
 * variables until it is stopped; a worker task builds the model with the replica device setter
 * (variables round-robin over the ps tasks, everything else on itself), trains it through a
 * monitored session (the chief restores or initialises and saves checkpoints; every worker
 * recovers when a ps task is lost and restarted) asynchronously or, with --sync_replicas,
 * synchronously, prints its progress and ends with one JSON line of metrics. Two models over
 * data made in code: "linear" (y = 2x + 1 plus Gaussian noise of standard deviation 0.1) and
 * "mlp" (three classes of 2-D points: inside a circle, and the two diagonal quadrant pairs
 * outside it). --local trains the same model in one process instead (the baseline of weft
 * bench). The flags are documented in docs/training.md. Progress goes to stderr, the final JSON
 * line (the result) to stdout. Exit status: 0 done, 1 training or serving failed, 2 a command
 * line that does not make sense. */
#include <glib.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_from.h"
#include "tool_help.h"
#include "weft/weft.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MLP_HIDDEN 32
#define MLP_CLASSES 3
#define EVAL_EXAMPLES 2000
#define BAR_WIDTH 30

typedef struct flags {
  char *ps_hosts, *worker_hosts, *job_name, *model, *optimizer, *checkpoint_dir, *progress;
  char *device; /* device type for every node, or NULL: the placer's choice */
  char *bind;   /* the address this task's server listens on, or NULL: loopback */
  int bulk_port; /* its bulk channel's port; 0: a free one */
  cluster_from_flags_t from;
  int task_index; /* -1 until given or resolved */
  gint64 train_steps;
  int batch_size;
  double learning_rate;
  gboolean sync_replicas;
  gboolean local;
  int replicas_to_aggregate;
  double save_secs;
  gint64 save_steps;
  gint64 summary_steps;
  gint64 log_every;
  gint64 step_timeout_ms;
  double recovery_timeout_secs; /* the monitored session's recovery budget of one step */
  gint64 pause_at_step; /* stop this process (SIGSTOP) once the global step reaches it; 0: off */
  int seed;
} flags_t;

static int fail(int code, weft_status_t *st, const char *what) {
  fprintf(stderr, "weft-train: error: %s: %s: %s\n", what, weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  return code;
}

static int usage(const char *message) {
  fprintf(stderr, "weft-train: error: %s\nTry 'weft-train --help'.\n", message);
  return EXIT_USAGE;
}

/* ---------------------------------------------------------------------------------------------
 * Data */

static double gaussian(GRand *rng) {
  /* Box-Muller; 1 - u keeps the logarithm's argument above zero. */
  double u = 1.0 - g_rand_double(rng), v = g_rand_double(rng);
  return sqrt(-2.0 * log(u)) * cos(2.0 * G_PI * v);
}

/* The linear model's data: x uniform in [-1, 1], y = 2x + 1 + N(0, 0.1). */
static void linear_batch(GRand *rng, int n, float *x, float *y) {
  for (int i = 0; i < n; i++) {
    x[i] = (float)g_rand_double_range(rng, -1, 1);
    y[i] = (float)(2.0 * x[i] + 1.0 + 0.1 * gaussian(rng));
  }
}

/* The MLP's data: points uniform in [-1, 1]^2; class 0 within radius 0.5, else class 1 where
 * x*y > 0 and class 2 where x*y < 0. No straight line separates them: the hidden layer must. */
static void mlp_batch(GRand *rng, int n, float *x, int32_t *label) {
  for (int i = 0; i < n; i++) {
    float a = (float)g_rand_double_range(rng, -1, 1), b = (float)g_rand_double_range(rng, -1, 1);
    x[2 * i] = a;
    x[2 * i + 1] = b;
    label[i] = a * a + b * b < 0.25f ? 0 : (a * b > 0 ? 1 : 2);
  }
}

/* ---------------------------------------------------------------------------------------------
 * The model */

typedef struct model {
  weft_graph_t *graph;
  bool mlp;
  const char *loss;      /* tensor names */
  const char *accuracy;  /* NULL for the linear model: computed from predictions */
  const char *prediction;
  weft_output_t loss_out;
  weft_node_t *train_op;
  weft_sync_replicas_t *sync;
} model_t;

static weft_output_t variable_from(weft_graph_t *g, const char *name, weft_tensor_t *init,
                                   weft_status_t **st) {
  weft_output_t v = {0};
  char *init_name = g_strconcat(name, "/initial_value", NULL);
  weft_output_t c = weft_const(g, init_name, init, st);
  g_free(init_name);
  weft_tensor_unref(init);
  if (!*st) v = weft_variable(g, name, c, st);
  return v;
}

/* Glorot-uniform initial weights, from the fixed seed so every worker builds the same values. */
static weft_tensor_t *glorot(GRand *rng, int64_t rows, int64_t cols) {
  int64_t dims[2] = {rows, cols};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 2, dims);
  float *p = weft_tensor_data(t);
  double limit = sqrt(6.0 / (double)(rows + cols));
  for (int64_t i = 0; i < rows * cols; i++) p[i] = (float)g_rand_double_range(rng, -limit, limit);
  return t;
}

static weft_tensor_t *zeros(int64_t n) {
  return weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
}

static weft_status_t *build_linear(model_t *m) {
  weft_graph_t *g = m->graph;
  weft_status_t *st = NULL;
  int64_t batch_dims[1] = {WEFT_DIM_UNKNOWN};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, batch_dims, &st);
  weft_output_t y = st ? x : weft_placeholder(g, "y", WEFT_DT_FLOAT, 1, batch_dims, &st);
  weft_output_t w = st ? x : variable_from(g, "W", weft_tensor_new_scalar_float(0), &st);
  weft_output_t b = st ? x : variable_from(g, "b", weft_tensor_new_scalar_float(0), &st);
  weft_output_t wx = st ? x : weft_binary(g, "Mul", "mul", w, x, &st);
  weft_output_t pred = st ? x : weft_binary(g, "AddV2", "prediction", wx, b, &st);
  if (!st) m->loss_out = weft_mean_squared_error(g, y, pred, &st);
  m->prediction = "prediction";
  return st;
}

static weft_status_t *dense(weft_graph_t *g, GRand *rng, const char *name, weft_output_t in,
                            int64_t n_in, int64_t n_out, bool relu, weft_output_t *out) {
  weft_status_t *st = NULL;
  char *wname = g_strconcat(name, "/weights", NULL), *bname = g_strconcat(name, "/biases", NULL);
  char *mname = g_strconcat(name, "/MatMul", NULL), *aname = g_strconcat(name, "/BiasAdd", NULL);
  char *rname = g_strconcat(name, "/Relu", NULL);
  weft_output_t w = variable_from(g, wname, glorot(rng, n_in, n_out), &st);
  weft_output_t b = st ? w : variable_from(g, bname, zeros(n_out), &st);
  weft_output_t mm = st ? w : weft_matmul(g, mname, in, w, false, false, &st);
  if (!st) {
    weft_op_builder_t *bb = weft_op_new(g, "BiasAdd", aname);
    weft_op_add_input(bb, mm);
    weft_op_add_input(bb, b);
    weft_op_set_attr_type(bb, "T", WEFT_DT_FLOAT);
    weft_node_t *node = NULL;
    st = weft_op_finish(bb, &node);
    if (!st) *out = weft_out(node, 0);
  }
  if (!st && relu) *out = weft_unary(g, "Relu", rname, *out, &st);
  g_free(wname);
  g_free(bname);
  g_free(mname);
  g_free(aname);
  g_free(rname);
  return st;
}

static weft_output_t int_const(weft_graph_t *g, const char *name, int32_t v, weft_status_t **st) {
  weft_tensor_t *t = weft_tensor_new_scalar_int32(v);
  weft_output_t out = weft_const(g, name, t, st);
  weft_tensor_unref(t);
  return out;
}

static weft_status_t *build_mlp(model_t *m, int seed) {
  weft_graph_t *g = m->graph;
  weft_status_t *st = NULL;
  GRand *rng = g_rand_new_with_seed((guint32)seed);
  int64_t x_dims[2] = {WEFT_DIM_UNKNOWN, 2}, y_dims[1] = {WEFT_DIM_UNKNOWN};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, x_dims, &st);
  weft_output_t y = st ? x : weft_placeholder(g, "y", WEFT_DT_INT32, 1, y_dims, &st);
  weft_output_t h1 = x, h2 = x, logits = x;
  if (!st) st = dense(g, rng, "hidden1", x, 2, MLP_HIDDEN, true, &h1);
  if (!st) st = dense(g, rng, "hidden2", h1, MLP_HIDDEN, MLP_HIDDEN, true, &h2);
  if (!st) st = dense(g, rng, "logits", h2, MLP_HIDDEN, MLP_CLASSES, false, &logits);
  g_rand_free(rng);
  if (!st) m->loss_out = weft_sparse_softmax_cross_entropy(g, y, logits, &st);
  /* accuracy = mean(cast(argmax(logits, 1) == y)) */
  weft_output_t axis = st ? x : int_const(g, "accuracy/axis", 1, &st);
  weft_node_t *argmax = NULL, *equal = NULL, *cast = NULL, *mean = NULL;
  if (!st) {
    weft_op_builder_t *b = weft_op_new(g, "ArgMax", "prediction");
    weft_op_add_input(b, logits);
    weft_op_add_input(b, axis);
    weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
    weft_op_set_attr_type(b, "Tidx", WEFT_DT_INT32);
    weft_op_set_attr_type(b, "output_type", WEFT_DT_INT32);
    st = weft_op_finish(b, &argmax);
  }
  if (!st) {
    weft_op_builder_t *b = weft_op_new(g, "Equal", "accuracy/equal");
    weft_op_add_input(b, weft_out(argmax, 0));
    weft_op_add_input(b, y);
    weft_op_set_attr_type(b, "T", WEFT_DT_INT32);
    st = weft_op_finish(b, &equal);
  }
  if (!st) {
    weft_op_builder_t *b = weft_op_new(g, "Cast", "accuracy/cast");
    weft_op_add_input(b, weft_out(equal, 0));
    weft_op_set_attr_type(b, "SrcT", WEFT_DT_BOOL);
    weft_op_set_attr_type(b, "DstT", WEFT_DT_FLOAT);
    st = weft_op_finish(b, &cast);
  }
  weft_output_t zero_axis = st ? x : int_const(g, "accuracy/reduction_axis", 0, &st);
  if (!st) {
    weft_op_builder_t *b = weft_op_new(g, "Mean", "accuracy");
    weft_op_add_input(b, weft_out(cast, 0));
    weft_op_add_input(b, zero_axis);
    weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
    weft_op_set_attr_type(b, "Tidx", WEFT_DT_INT32);
    st = weft_op_finish(b, &mean);
  }
  m->accuracy = "accuracy";
  m->prediction = "prediction";
  return st;
}

/* The loss (and the MLP's accuracy) as scalar summaries, merged: the monitored session writes
 * them to the event file every --summary_steps steps. They run on this worker's CPU (task -1:
 * no cluster), as TensorFlow's summary kernels do, whatever --device says. */
static weft_status_t *add_summaries(model_t *m, int task) {
  char *dev = task >= 0 ? g_strdup_printf("/job:worker/task:%d/device:CPU:0", task)
                        : g_strdup("/device:CPU:0");
  weft_graph_push_device(m->graph, dev);
  g_free(dev);
  weft_status_t *st = NULL;
  weft_output_t parts[2];
  int n = 0;
  const char *tags[2] = {"loss", "accuracy"};
  for (int i = 0; i < (m->mlp ? 2 : 1) && !st; i++) {
    weft_tensor_t *tag = weft_tensor_new_string(tags[i], strlen(tags[i]));
    char *name = g_strdup_printf("summaries/%s_tag", tags[i]);
    weft_output_t tag_c = weft_const(m->graph, name, tag, &st);
    g_free(name);
    weft_tensor_unref(tag);
    if (st) break;
    name = g_strdup_printf("summaries/%s", tags[i]);
    weft_op_builder_t *b = weft_op_new(m->graph, "ScalarSummary", name);
    g_free(name);
    weft_op_add_input(b, tag_c);
    weft_op_add_input(b, i == 0 ? m->loss_out : weft_out(weft_graph_node(m->graph, "accuracy"), 0));
    weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
    weft_node_t *node = NULL;
    st = weft_op_finish(b, &node);
    if (!st) parts[n++] = weft_out(node, 0);
  }
  if (!st) {
    weft_op_builder_t *b = weft_op_new(m->graph, "MergeSummary", "summaries/merged");
    weft_op_add_input_list(b, parts, n);
    st = weft_op_finish(b, NULL);
  }
  weft_graph_pop_device(m->graph);
  return st;
}

static bool parse_optimizer(const char *name, weft_optimizer_kind_t *kind) {
  static const struct { const char *name; weft_optimizer_kind_t kind; } table[] = {
      {"sgd", WEFT_OPTIMIZER_GRADIENT_DESCENT}, {"gradient_descent", WEFT_OPTIMIZER_GRADIENT_DESCENT},
      {"momentum", WEFT_OPTIMIZER_MOMENTUM},    {"adagrad", WEFT_OPTIMIZER_ADAGRAD},
      {"adam", WEFT_OPTIMIZER_ADAM},            {"rmsprop", WEFT_OPTIMIZER_RMSPROP},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(table); i++) {
    if (g_ascii_strcasecmp(name, table[i].name) == 0) {
      *kind = table[i].kind;
      return true;
    }
  }
  return false;
}

/* Builds the model with its variables spread over the ps tasks and its train op. */
static weft_status_t *build_model(const flags_t *f, const weft_cluster_spec_t *spec,
                                  int num_workers, model_t *m) {
  m->graph = weft_graph_new();
  m->mlp = strcmp(f->model, "mlp") == 0;
  weft_optimizer_kind_t kind;
  parse_optimizer(f->optimizer, &kind);
  char *type = f->device ? g_strdup_printf("/device:%s:*", f->device) : g_strdup("");
  char *worker_device = g_strdup_printf("/job:worker/task:%d%s", f->task_index, type);
  char *ps_device = g_strdup_printf("/job:ps%s", type);
  weft_replica_device_setter_t *setter = NULL;
  /* No cluster (--local): one in-process session places everything itself. */
  weft_status_t *st = spec ? weft_replica_device_setter_from_cluster(
      m->graph, spec, ps_device, worker_device, true, WEFT_PS_ROUND_ROBIN, &setter) : NULL;
  g_free(worker_device);
  g_free(ps_device);
  if (!st && setter) weft_graph_push_device_fn(m->graph, weft_replica_device_setter_fn, setter);
  if (!st && !setter && f->device) weft_graph_push_device(m->graph, type);
  g_free(type);
  if (st) return st;
  weft_node_t *global_step = weft_train_global_step(m->graph, &st);
  if (!st) st = m->mlp ? build_mlp(m, f->seed) : build_linear(m);
  weft_output_t loss = m->loss_out;
  if (!st) m->loss = weft_node_name(loss.node);
  weft_optimizer_spec_t ospec = weft_optimizer_spec_default(kind, f->learning_rate);
  if (!st && f->sync_replicas) {
    int n = f->replicas_to_aggregate > 0 ? f->replicas_to_aggregate : num_workers;
    st = weft_sync_replicas_minimize(m->graph, loss, &ospec, NULL, 0, global_step, n, num_workers,
                                     &m->sync);
  } else if (!st) {
    st = weft_minimize(m->graph, loss, &ospec, NULL, 0, global_step, &m->train_op);
  }
  if (setter || f->device) weft_graph_pop_device(m->graph);
  weft_replica_device_setter_free(setter);
  if (!st) st = add_summaries(m, spec ? f->task_index : -1);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Training */

typedef struct trainer {
  const flags_t *f;
  model_t *model;
  GRand *rng;
  bool is_chief;
  weft_tensor_t *xt, *yt; /* the current batch */
  double last_loss;
  gint64 started_us;
  int64_t local_steps; /* steps this worker ran */
  int64_t last_printed;
  bool tty;
  bool past_last_step; /* sync: a non-chief waited in vain for the update after the last step */
} trainer_t;

/* Fresh batch tensors for the next step. */
static void next_batch(trainer_t *t) {
  weft_tensor_unref(t->xt);
  weft_tensor_unref(t->yt);
  int n = t->f->batch_size;
  if (t->model->mlp) {
    int64_t xd[2] = {n, 2}, yd[1] = {n};
    t->xt = weft_tensor_new(WEFT_DT_FLOAT, 2, xd);
    t->yt = weft_tensor_new(WEFT_DT_INT32, 1, yd);
    mlp_batch(t->rng, n, weft_tensor_data(t->xt), weft_tensor_data(t->yt));
  } else {
    int64_t d[1] = {n};
    t->xt = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
    t->yt = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
    linear_batch(t->rng, n, weft_tensor_data(t->xt), weft_tensor_data(t->yt));
  }
}

static double fetch_scalar(weft_session_t *session, const char *name) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft_session_run(session, NULL, NULL, 0, &name, &t, 1, NULL, 0);
  double v = st ? NAN : weft_tensor_get_double(t, 0);
  weft_status_free(st);
  weft_tensor_unref(t);
  return v;
}

static weft_status_t *sync_step(void *user_data, weft_session_t *session) {
  trainer_t *t = user_data;
  const char *feeds[2] = {"x", "y"};
  weft_tensor_t *values[2] = {t->xt, t->yt};
  weft_tensor_t *loss = NULL;
  weft_status_t *st = weft_sync_replicas_step(t->model->sync, session, t->is_chief, feeds, values,
                                              2, &t->model->loss, &loss, 1,
                                              t->f->step_timeout_ms, NULL);
  /* The chief stops at the last step; a worker still waiting for that update then waits in
   * vain: past the last step there is nothing left to wait for. Said here, before the monitored
   * session would retry the missed deadline. */
  if (st && weft_status_code(st) == WEFT_DEADLINE_EXCEEDED && !t->is_chief &&
      fetch_scalar(session, "global_step") >= (double)t->f->train_steps - 1) {
    weft_status_free(st);
    st = NULL;
    t->past_last_step = true;
  }
  if (!st && loss) t->last_loss = weft_tensor_get_double(loss, 0);
  weft_tensor_unref(loss);
  return st;
}

static void print_progress(trainer_t *t, int64_t global_step, bool last) {
  double secs = (double)(g_get_monotonic_time() - t->started_us) / 1e6;
  double rate = secs > 0 ? (double)global_step / secs : 0;
  if (t->tty) {
    int64_t total = t->f->train_steps > 0 ? t->f->train_steps : 1;
    int filled = (int)(BAR_WIDTH * MIN(global_step, total) / total);
    char bar[BAR_WIDTH + 1];
    for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < filled ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    fprintf(stderr, "\rworker %d [%s] %3d%% step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
            " loss %.4f %.0f steps/s%s", t->f->task_index, bar, (int)(100 * MIN(global_step, total) / total),
            global_step, t->f->train_steps, t->last_loss, rate, last ? "\n" : "");
    fflush(stderr);
    return;
  }
  /* Progress is for people and logs: stderr. stdout carries only the result (the final JSON
   * line), so that `weft-train ... > metrics.json` keeps just that. */
  fprintf(stderr, "progress worker=%d step=%" G_GINT64_FORMAT " total=%" G_GINT64_FORMAT
          " loss=%.6f steps_per_sec=%.1f\n",
          t->f->task_index, global_step, t->f->train_steps, t->last_loss, rate);
  fflush(stderr);
}

static bool after_run(void *user_data, int64_t global_step, weft_tensor_t *const *fetched,
                      int n_fetched) {
  trainer_t *t = user_data;
  if (n_fetched > 0) t->last_loss = weft_tensor_get_double(fetched[0], 0);
  if (global_step - t->last_printed >= t->f->log_every) {
    print_progress(t, global_step, false);
    t->last_printed = global_step;
  }
  return false;
}

/* Loss and accuracy of the trained model on held-out data made with another seed. For the
 * linear model, "accuracy" is the share of predictions within 0.25 (2.5 noise deviations) of
 * the label. */
static weft_status_t *evaluate(weft_session_t *session, model_t *m, const flags_t *f, double *loss,
                               double *accuracy) {
  GRand *rng = g_rand_new_with_seed((guint32)(f->seed + 1000003));
  int n = EVAL_EXAMPLES;
  weft_tensor_t *xt, *yt;
  if (m->mlp) {
    int64_t xd[2] = {n, 2}, yd[1] = {n};
    xt = weft_tensor_new(WEFT_DT_FLOAT, 2, xd);
    yt = weft_tensor_new(WEFT_DT_INT32, 1, yd);
    mlp_batch(rng, n, weft_tensor_data(xt), weft_tensor_data(yt));
  } else {
    int64_t d[1] = {n};
    xt = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
    yt = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
    linear_batch(rng, n, weft_tensor_data(xt), weft_tensor_data(yt));
  }
  g_rand_free(rng);
  const char *feeds[2] = {"x", "y"};
  weft_tensor_t *values[2] = {xt, yt};
  const char *fetches[2] = {m->loss, m->mlp ? m->accuracy : m->prediction};
  weft_tensor_t *out[2] = {NULL, NULL};
  weft_status_t *st = weft_session_run(session, feeds, values, 2, fetches, out, 2, NULL, 0);
  if (!st) {
    *loss = weft_tensor_get_double(out[0], 0);
    if (m->mlp) {
      *accuracy = weft_tensor_get_double(out[1], 0);
    } else {
      const float *pred = weft_tensor_data(out[1]), *y = weft_tensor_data(yt);
      int close = 0;
      for (int i = 0; i < n; i++) close += fabsf(pred[i] - y[i]) < 0.25f;
      *accuracy = (double)close / n;
    }
  }
  weft_tensor_unref(out[0]);
  weft_tensor_unref(out[1]);
  weft_tensor_unref(xt);
  weft_tensor_unref(yt);
  return st;
}

static void print_json_number(GString *s, const char *key, double v) {
  if (isfinite(v)) g_string_append_printf(s, ",\"%s\":%.6g", key, v);
  else g_string_append_printf(s, ",\"%s\":null", key);
}

/* This task's server, listening on --bind when given (a cluster across machines or network
 * namespaces), else on loopback. */
static weft_status_t *new_server(const flags_t *f, weft_cluster_spec_t *spec, const char *job,
                                 weft_server_t **server) {
  weft_server_options_t *o = weft_server_options_new();
  weft_server_options_set_bind_address(o, f->bind);
  weft_server_options_set_bulk_port(o, f->bulk_port);
  weft_status_t *st = weft_server_new(spec, job, f->task_index, o, server);
  weft_server_options_free(o);
  return st;
}

/* A worker task, or with spec NULL (--local) the whole training in this process. */
static int run_worker(const flags_t *f, weft_cluster_spec_t *spec) {
  weft_server_t *server = NULL;
  weft_status_t *st = spec ? new_server(f, spec, "worker", &server) : NULL;
  if (!st && server) st = weft_server_start(server);
  if (st) {
    weft_server_free(server);
    return fail(EXIT_RUNTIME, st, "starting the worker's server");
  }
  int num_workers = spec ? weft_cluster_spec_num_tasks(spec, "worker") : 1;
  model_t model = {0};
  st = build_model(f, spec, num_workers, &model);
  if (st) {
    weft_sync_replicas_free(model.sync);
    weft_graph_free(model.graph);
    weft_server_free(server);
    return fail(EXIT_RUNTIME, st, "building the model");
  }
  trainer_t t = {.f = f, .model = &model, .is_chief = f->task_index == 0,
                 .rng = g_rand_new_with_seed((guint32)(f->seed * 7919 + f->task_index)),
                 .last_loss = NAN, .tty = isatty(STDERR_FILENO) && strcmp(f->progress, "lines") != 0};
  weft_session_options_t *sopts = weft_session_options_new();
  if (server) {
    weft_session_options_set_target(sopts, weft_server_target(server));
    weft_session_options_set_operation_timeout_ms(sopts, f->step_timeout_ms);
    /* As TensorFlow's trainer does: this worker's sessions involve the ps tasks and itself
     * only, so a lost or slow other worker never holds it up. */
    char *own_task = g_strdup_printf("/job:worker/task:%d", f->task_index);
    const char *filters[2] = {"/job:ps", own_task};
    weft_session_options_set_device_filters(sopts, filters, 2);
    g_free(own_task);
  }
  weft_monitored_session_options_t *mopts = weft_monitored_session_options_new();
  weft_monitored_session_options_set_session_options(mopts, sopts);
  weft_session_options_free(sopts);
  weft_monitored_session_options_set_is_chief(mopts, t.is_chief);
  weft_monitored_session_options_set_checkpoint_dir(mopts, f->checkpoint_dir);
  weft_monitored_session_options_set_save_checkpoint_secs(mopts, f->save_secs);
  weft_monitored_session_options_set_save_checkpoint_steps(mopts, f->save_steps);
  weft_monitored_session_options_set_summary_steps(mopts, f->summary_steps);
  weft_monitored_session_options_set_last_step(mopts, f->train_steps);
  weft_monitored_session_options_set_after_run(mopts, after_run, &t);
  weft_monitored_session_options_set_recovery_timeout_secs(mopts, f->recovery_timeout_secs);
  weft_monitored_session_t *ms = NULL;
  st = weft_monitored_session_new(model.graph, mopts, &ms);
  weft_monitored_session_options_free(mopts);
  int code = 0;
  if (st) {
    code = fail(EXIT_RUNTIME, st, "starting the monitored session");
  } else {
    fprintf(stderr, "worker %d: %s training of the %s model, %s, global step %" G_GINT64_FORMAT
            "%s%s\n", f->task_index, model.sync ? "synchronous" : "asynchronous", f->model,
            t.is_chief ? "chief" : "not chief", weft_monitored_session_global_step(ms),
            *weft_monitored_session_last_checkpoint(ms) ? ", from " : "",
            weft_monitored_session_last_checkpoint(ms));
    t.started_us = g_get_monotonic_time();
    t.last_printed = weft_monitored_session_global_step(ms);
    const char *feeds[2] = {"x", "y"};
    const char *target = model.train_op ? weft_node_name(model.train_op) : NULL;
    int recoveries = 0;
    bool paused = false;
    while (!st && !weft_monitored_session_should_stop(ms)) {
      if (f->pause_at_step > 0 && !paused &&
          weft_monitored_session_global_step(ms) >= f->pause_at_step) {
        /* A fault drill (the demo kills the ps now): this worker holds still, with the chief's
         * checkpoint of the steps so far on disk, until someone sends SIGCONT. */
        paused = true;
        fprintf(stderr, "%sworker %d: paused at global step %" G_GINT64_FORMAT
                " (--pause_at_step); continues on SIGCONT\n", t.tty ? "\n" : "", f->task_index,
                weft_monitored_session_global_step(ms));
        fflush(stderr);
        raise(SIGSTOP);
      }
      if (weft_monitored_session_recoveries(ms) != recoveries) {
        recoveries = weft_monitored_session_recoveries(ms);
        const char *ckpt = weft_monitored_session_last_checkpoint(ms);
        fprintf(stderr, "%sworker %d: recovered from a lost task (session recreated%s%s), going on "
                "from global step %" G_GINT64_FORMAT "\n", t.tty ? "\n" : "", f->task_index,
                t.is_chief && *ckpt ? ", restored " : "", t.is_chief ? ckpt : "",
                weft_monitored_session_global_step(ms));
      }
      next_batch(&t);
      t.local_steps++;
      if (model.sync) {
        st = weft_monitored_session_run_step_fn(ms, sync_step, &t);
        if (!st && t.past_last_step) break;
      } else {
        weft_tensor_t *values[2] = {t.xt, t.yt};
        weft_tensor_t *loss = NULL;
        st = weft_monitored_session_run(ms, feeds, values, 2, &model.loss, &loss, 1, &target, 1);
        weft_tensor_unref(loss);
      }
    }
    if (st) {
      code = fail(EXIT_RUNTIME, st, "training");
    } else {
      int64_t global_step = weft_monitored_session_global_step(ms);
      double train_secs = (double)(g_get_monotonic_time() - t.started_us) / 1e6;
      /* The closing line, unless after_run just printed this very step (a bar always ends). */
      if (t.tty || global_step != t.last_printed) print_progress(&t, global_step, true);
      double loss = NAN, accuracy = NAN;
      st = evaluate(weft_monitored_session_session(ms), &model, f, &loss, &accuracy);
      double w = NAN, b = NAN;
      if (!st && !model.mlp) {
        w = fetch_scalar(weft_monitored_session_session(ms), "W");
        b = fetch_scalar(weft_monitored_session_session(ms), "b");
      }
      if (!st) st = weft_monitored_session_close(ms);
      if (st) {
        code = fail(EXIT_RUNTIME, st, "finishing");
      } else {
        GString *json = g_string_new(NULL);
        g_string_append_printf(json, "{\"global_step\":%" G_GINT64_FORMAT, global_step);
        print_json_number(json, "loss", loss);
        print_json_number(json, "accuracy", accuracy);
        if (!model.mlp) {
          print_json_number(json, "W", w);
          print_json_number(json, "b", b);
        }
        g_string_append_printf(json, ",\"worker\":%d,\"recoveries\":%d", f->task_index,
                               weft_monitored_session_recoveries(ms));
        /* This worker's own training throughput (the evaluation is not counted). */
        g_string_append_printf(json, ",\"steps\":%" G_GINT64_FORMAT ",\"seconds\":%.3f,"
                               "\"examples_per_sec\":%.1f", t.local_steps, train_secs,
                               train_secs > 0 ? (double)t.local_steps * f->batch_size / train_secs : 0.0);
        const char *ckpt = weft_monitored_session_last_checkpoint(ms);
        if (*ckpt) {
          char *esc = g_strescape(ckpt, NULL);
          g_string_append_printf(json, ",\"checkpoint\":\"%s\"", esc);
          g_free(esc);
        }
        g_string_append(json, "}");
        printf("%s\n", json->str);
        fflush(stdout);
        g_string_free(json, TRUE);
      }
    }
  }
  weft_monitored_session_free(ms);
  weft_tensor_unref(t.xt);
  weft_tensor_unref(t.yt);
  g_rand_free(t.rng);
  weft_sync_replicas_free(model.sync);
  weft_graph_free(model.graph);
  weft_server_free(server);
  return code;
}

/* A ps task: serves until SIGINT or SIGTERM. */
static int run_ps(const flags_t *f, weft_cluster_spec_t *spec) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
  weft_server_t *server = NULL;
  weft_status_t *st = new_server(f, spec, "ps", &server);
  if (!st) st = weft_server_start(server);
  if (st) {
    weft_server_free(server);
    return fail(EXIT_RUNTIME, st, "starting the ps server");
  }
  printf("Started server with target: %s\n", weft_server_target(server));
  fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  weft_status_free(weft_server_stop(server));
  weft_server_free(server);
  return 0;
}

static int train_checked(flags_t *f, weft_cluster_spec_t *resolved);

/* The cluster spec from a scheduler (--cluster-from), or from TF_CONFIG when no host flags
 * are given; this task's job and index from it where the flags leave them out. *spec stays
 * NULL when the host flags give the cluster. */
static weft_status_t *resolve_cluster(flags_t *f, weft_cluster_spec_t **spec) {
  *spec = NULL;
  char *job = NULL;
  int task = -1;
  weft_status_t *st = NULL;
  const char *tf_config = g_getenv("TF_CONFIG");
  bool slurm = cluster_from_slurm(&f->from);
  if (slurm) {
    if (f->ps_hosts || f->worker_hosts || f->job_name || f->task_index >= 0)
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "--cluster-from slurm takes the cluster and this task from Slurm: "
                             "it goes without --ps_hosts, --worker_hosts, --job_name and "
                             "--task_index");
    st = weft_cluster_spec_from_slurm(NULL, NULL, f->from.ps_tasks, f->from.port_base, spec, &job,
                                      &task);
  } else if (f->from.source || (!f->ps_hosts && !f->worker_hosts && tf_config && *tf_config)) {
    if (!tf_config || !*tf_config)
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "--cluster-from tf_config: the TF_CONFIG environment variable is "
                             "not set");
    st = weft_cluster_spec_from_tf_config(tf_config, spec, &job, &task);
  }
  if (!st && job && !f->job_name) {
    f->job_name = g_strdup(job);
    if (f->task_index < 0) f->task_index = task;
  }
  weft_free(job);
  return st;
}

static int train_main(flags_t *f) {
  const char *from_error = cluster_from_check(&f->from, f->local);
  if (from_error) return usage(from_error);
  if (f->task_index < -1) return usage("--task_index must be 0 or more");
  if (f->bulk_port < 0 || f->bulk_port > 65535)
    return usage("--bulk_port must be from 0 to 65535 (0: a free one)");
  weft_cluster_spec_t *resolved = NULL;
  if (!f->local) {
    weft_status_t *st = resolve_cluster(f, &resolved);
    if (st) return fail(EXIT_USAGE, st, "the cluster");
  }
  if (f->task_index < 0) f->task_index = 0;
  int code = train_checked(f, resolved);
  weft_cluster_spec_free(resolved);
  return code;
}

/* `resolved` (may be NULL) stays the caller's. */
static int train_checked(flags_t *f, weft_cluster_spec_t *resolved) {
  if (f->local && (f->ps_hosts || f->worker_hosts || f->job_name || f->sync_replicas))
    return usage("--local trains in this process: it takes no cluster, --job_name or --sync_replicas");
  if (!f->local && !f->job_name) return usage("--job_name is required (ps or worker)");
  if (f->job_name && strcmp(f->job_name, "ps") != 0 && strcmp(f->job_name, "worker") != 0)
    return usage("--job_name must be 'ps' or 'worker'");
  if (strcmp(f->model, "linear") != 0 && strcmp(f->model, "mlp") != 0)
    return usage("--model must be 'linear' or 'mlp'");
  weft_optimizer_kind_t kind;
  if (!parse_optimizer(f->optimizer, &kind))
    return usage("--optimizer must be one of sgd, momentum, adagrad, adam, rmsprop");
  if (f->train_steps <= 0) return usage("--train_steps must be positive");
  if (f->batch_size <= 0) return usage("--batch_size must be positive");
  if (!(f->learning_rate > 0)) return usage("--learning_rate must be positive");
  if (f->log_every <= 0) return usage("--log_every must be positive");
  if (f->summary_steps < 0) return usage("--summary_steps must be 0 (off) or positive");
  if (f->step_timeout_ms <= 0) return usage("--step_timeout_ms must be positive");
  if (!(f->recovery_timeout_secs >= 0)) return usage("--recovery_timeout_secs must be 0 or more");
  if (strcmp(f->progress, "auto") != 0 && strcmp(f->progress, "lines") != 0)
    return usage("--progress must be 'auto' or 'lines'");
  if (f->task_index < 0) return usage("--task_index must be 0 or more");
  if (f->pause_at_step < 0) return usage("--pause_at_step must be 0 (off) or positive");
  if (f->local) {
    weft_plugins_load_default();
    return run_worker(f, NULL);
  }
  weft_cluster_spec_t *spec = NULL;
  weft_status_t *st = NULL;
  if (resolved) {
    char *text = weft_cluster_spec_to_string(resolved);
    st = weft_cluster_spec_parse(text, &spec);
    weft_free(text);
  } else if (f->ps_hosts || f->worker_hosts) {
    st = weft_cluster_spec_from_hosts(f->ps_hosts, f->worker_hosts, &spec);
  } else {
    return usage("no cluster: give --ps_hosts and --worker_hosts (or TF_CONFIG, or "
                 "--cluster-from slurm)");
  }
  if (!st) st = weft_cluster_spec_check_task(spec, f->job_name, f->task_index);
  if (!st && weft_cluster_spec_num_tasks(spec, "ps") == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "the cluster has no ps task (--ps_hosts)");
  if (!st && weft_cluster_spec_num_tasks(spec, "worker") == 0)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "the cluster has no worker task (--worker_hosts)");
  if (!st && f->replicas_to_aggregate > weft_cluster_spec_num_tasks(spec, "worker"))
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "--replicas_to_aggregate %d is more than the %d "
                         "workers", f->replicas_to_aggregate, weft_cluster_spec_num_tasks(spec, "worker"));
  if (st) {
    weft_cluster_spec_free(spec);
    return fail(EXIT_USAGE, st, "the cluster");
  }
  /* Tasks of the cluster on this host share its cores (weft_threads_set_limit). */
  int sharing = weft_cluster_spec_tasks_on_host(spec, f->job_name, f->task_index);
  if (sharing > 1) weft_threads_set_limit(MAX(1, (int)g_get_num_processors() / sharing));
  weft_plugins_load_default();
  int code = strcmp(f->job_name, "ps") == 0 ? run_ps(f, spec) : run_worker(f, spec);
  weft_cluster_spec_free(spec);
  return code;
}

int main(int argc, char **argv) {
  flags_t f = {.task_index = -1, .from = CLUSTER_FROM_DEFAULTS, .train_steps = 1000,
               .batch_size = 0, .learning_rate = 0, .save_secs = 600, .summary_steps = 100,
               .log_every = 50, .step_timeout_ms = 30000,
               .recovery_timeout_secs = 300, .seed = 1};
  gboolean show_version = FALSE, show_help = FALSE;
  GOptionEntry entries[] = {
      {"ps_hosts", 0, 0, G_OPTION_ARG_STRING, &f.ps_hosts, "the ps tasks: host:port,...", "HOSTS"},
      {"worker_hosts", 0, 0, G_OPTION_ARG_STRING, &f.worker_hosts,
       "the worker tasks: host:port,...", "HOSTS"},
      {"job_name", 0, 0, G_OPTION_ARG_STRING, &f.job_name, "ps or worker", "JOB"},
      {"task_index", 0, 0, G_OPTION_ARG_INT, &f.task_index, "this task's index in its job (0)",
       "N"},
      CLUSTER_FROM_OPTION_ENTRIES(f.from),
      {"model", 0, 0, G_OPTION_ARG_STRING, &f.model, "linear (default) or mlp", "MODEL"},
      {"train_steps", 0, 0, G_OPTION_ARG_INT64, &f.train_steps,
       "stop at this global step (1000)", "N"},
      {"batch_size", 0, 0, G_OPTION_ARG_INT, &f.batch_size,
       "examples per step and worker (linear 32, mlp 64)", "N"},
      {"learning_rate", 0, 0, G_OPTION_ARG_DOUBLE, &f.learning_rate,
       "the optimizer's learning rate (linear 0.1, mlp 0.01)", "LR"},
      {"optimizer", 0, 0, G_OPTION_ARG_STRING, &f.optimizer,
       "sgd, momentum, adagrad, adam or rmsprop (linear sgd, mlp adam)", "NAME"},
      {"local", 0, 0, G_OPTION_ARG_NONE, &f.local,
       "train in this process alone (one local session, no cluster): the baseline of weft bench",
       NULL},
      {"sync_replicas", 0, 0, G_OPTION_ARG_NONE, &f.sync_replicas,
       "synchronous training: one update per step from the workers' gradients", NULL},
      {"replicas_to_aggregate", 0, 0, G_OPTION_ARG_INT, &f.replicas_to_aggregate,
       "with --sync_replicas: gradients per update (default: the number of workers; fewer "
       "makes the others backup workers)", "N"},
      {"checkpoint_dir", 0, 0, G_OPTION_ARG_FILENAME, &f.checkpoint_dir,
       "restore from and save checkpoints to this folder (chief)", "DIR"},
      {"save_secs", 0, 0, G_OPTION_ARG_DOUBLE, &f.save_secs,
       "save a checkpoint every this many seconds (600; 0: off)", "S"},
      {"save_steps", 0, 0, G_OPTION_ARG_INT64, &f.save_steps,
       "save a checkpoint every this many global steps (0: off)", "N"},
      {"summary_steps", 0, 0, G_OPTION_ARG_INT64, &f.summary_steps,
       "write the loss (and accuracy) and global_step/sec to an event file in --checkpoint_dir "
       "every this many global steps, for TensorBoard (chief; 100; 0: off)", "N"},
      {"log_every", 0, 0, G_OPTION_ARG_INT64, &f.log_every,
       "print progress every this many global steps (50)", "N"},
      {"progress", 0, 0, G_OPTION_ARG_STRING, &f.progress,
       "auto (a bar on a terminal, else lines) or lines", "MODE"},
      {"step_timeout_ms", 0, 0, G_OPTION_ARG_INT64, &f.step_timeout_ms,
       "deadline of one step, and of a synchronous step's wait (30000)", "MS"},
      {"recovery_timeout_secs", 0, 0, G_OPTION_ARG_DOUBLE, &f.recovery_timeout_secs,
       "how long a failed step is retried (a task lost, restarted or not answering in time) "
       "before training fails (300; 0: no retries)", "S"},
      {"bind", 0, 0, G_OPTION_ARG_STRING, &f.bind,
       "listen on this address instead of loopback (0.0.0.0: every interface), as weftd --bind",
       "ADDR"},
      {"bulk_port", 0, 0, G_OPTION_ARG_INT, &f.bulk_port,
       "the bulk channel's TCP port, as weftd --bulk_port (0: a free one)", "PORT"},
      {"device", 0, 0, G_OPTION_ARG_STRING, &f.device,
       "put every node on a device of this type (CPU, VULKAN, CUDA; default: the placer's choice, "
       "the highest-priority device)", "TYPE"},
      {"pause_at_step", 0, 0, G_OPTION_ARG_INT64, &f.pause_at_step,
       "for fault drills: stop this worker (SIGSTOP) once the global step reaches N, until "
       "SIGCONT (0: off)", "N"},
      {"seed", 0, 0, G_OPTION_ARG_INT, &f.seed, "seed of the data and initial weights (1)", "N"},
      {"version", 'V', 0, G_OPTION_ARG_NONE, &show_version, "print the version and exit", NULL},
      {"help", 'h', 0, G_OPTION_ARG_NONE, &show_help, "show this help and exit", NULL},
      {NULL},
  };
  GOptionContext *ctx = g_option_context_new(NULL);
  g_option_context_set_help_enabled(ctx, FALSE); /* tool_print_help lays it out for help2man */
  g_option_context_set_summary(ctx,
      "TensorFlow's distributed example trainer: a ps task serves the variables, worker tasks\n"
      "train the linear or mlp model asynchronously (or --sync_replicas) through a monitored\n"
      "session; --local trains in this process alone. Progress goes to stderr; the final\n"
      "metrics are one JSON line on stdout.");
  g_option_context_set_description(ctx,
      "Examples:\n"
      "  weft-train --local --model linear --train_steps 200\n"
      "  weft-train --ps_hosts localhost:2222 --worker_hosts localhost:2223 --job_name ps\n"
      "  weft-train --ps_hosts localhost:2222 --worker_hosts localhost:2223 --job_name worker\n"
      "  srun -n 3 weft-train --cluster-from slurm --ps 1 --bind 0.0.0.0\n"
      "\n"
      "Exit status: 0 done, 1 training or serving failed, 2 a usage error.\n"
      "See docs/training.md.\n");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    int code = usage(err->message);
    g_error_free(err);
    g_option_context_free(ctx);
    return code;
  }
  if (show_help) {
    tool_print_help(ctx, "weft-train [OPTION]...");
    g_option_context_free(ctx);
    return 0;
  }
  g_option_context_free(ctx);
  if (show_version) {
    printf("weft-train %s\n", WEFT_VERSION);
    return 0;
  }
  if (argc > 1) {
    char *msg = g_strdup_printf("unexpected argument '%s'", argv[1]);
    int code = usage(msg);
    g_free(msg);
    return code;
  }
  if (!f.model) f.model = g_strdup("linear");
  bool mlp = strcmp(f.model, "mlp") == 0;
  if (!f.optimizer) f.optimizer = g_strdup(mlp ? "adam" : "sgd");
  if (!f.progress) f.progress = g_strdup("auto");
  if (f.batch_size == 0) f.batch_size = mlp ? 64 : 32;
  if (f.learning_rate == 0) f.learning_rate = mlp ? 0.01 : 0.1;
  int code = train_main(&f);
  g_free(f.ps_hosts);
  g_free(f.worker_hosts);
  g_free(f.job_name);
  g_free(f.model);
  g_free(f.optimizer);
  g_free(f.checkpoint_dir);
  g_free(f.progress);
  g_free(f.device);
  g_free(f.bind);
  g_free(f.from.source);
  return code;
}
