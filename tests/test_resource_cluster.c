/* Resource variables across a real cluster (one ps and one worker weftd on loopback): VarHandleOps
 * pinned to the ps, the model and its gradients on the worker, ResourceApplyGradientDescent
 * placed with its variables (the placer colocates a handle's consumers with its VarHandleOp), a
 * linear model trained for a few steps and checked against the same steps computed here in
 * float64, then the variables saved with weft_saver (read through ReadVariableOp), overwritten,
 * and restored (written with AssignVariableOp), as TensorFlow's saver does for resource
 * variables. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "weft/weft.h"
#include "weftd_cluster.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    weft_status_t *st_ = (expr);                                                   \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                   \
  } while (0)

static const float xs[4] = {1, 2, 3, 4};
static const float ys[4] = {3, 5, 7, 9}; /* y = 2 x + 1 */
#define LR 0.05
#define STEPS 3

static weft_node_t *finish(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

static weft_output_t vec4(weft_graph_t *g, const char *name, const float *v) {
  int64_t dims[1] = {4};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, dims);
  memcpy(weft_tensor_data(t), v, sizeof(float) * 4);
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t op2(weft_graph_t *g, const char *op, const char *name, weft_output_t a,
                         weft_output_t b) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_binary(g, op, name, a, b, &st);
  OK(st);
  return o;
}

/* 2 * mean(v): the gradient of the mean squared error's term. */
static weft_output_t twice_mean(weft_graph_t *g, const char *name, weft_output_t v) {
  char *axis_name = g_strconcat(name, "/axis", NULL);
  weft_tensor_t *axis = weft_tensor_new(WEFT_DT_INT32, 0, NULL);
  *(int32_t *)weft_tensor_data(axis) = 0;
  weft_status_t *st = NULL;
  weft_output_t ax = weft_const(g, axis_name, axis, &st);
  OK(st);
  weft_tensor_unref(axis);
  g_free(axis_name);
  char *mean_name = g_strconcat(name, "/mean", NULL);
  weft_op_builder_t *b = weft_op_new(g, "Mean", mean_name);
  weft_op_add_input(b, v);
  weft_op_add_input(b, ax);
  weft_output_t m = weft_out(finish(b), 0);
  g_free(mean_name);
  char *two_name = g_strconcat(name, "/two", NULL);
  weft_output_t two = weft_const_float(g, two_name, 2.0f, &st);
  OK(st);
  g_free(two_name);
  return op2(g, "Mul", name, m, two);
}

static weft_output_t handle(weft_graph_t *g, const char *name) {
  weft_op_builder_t *b = weft_op_new(g, "VarHandleOp", name);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_op_set_attr_shape(b, "shape", 0, NULL);
  return weft_out(finish(b), 0);
}

static weft_output_t read_var(weft_graph_t *g, const char *name, weft_output_t h) {
  weft_op_builder_t *b = weft_op_new(g, "ReadVariableOp", name);
  weft_op_add_input(b, h);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  return weft_out(finish(b), 0);
}

static void assign_var(weft_graph_t *g, const char *name, weft_output_t h, weft_output_t v) {
  weft_op_builder_t *b = weft_op_new(g, "AssignVariableOp", name);
  weft_op_add_input(b, h);
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  finish(b);
}

static void apply_gd(weft_graph_t *g, const char *name, weft_output_t h, weft_output_t lr,
                     weft_output_t grad) {
  weft_op_builder_t *b = weft_op_new(g, "ResourceApplyGradientDescent", name);
  weft_op_add_input(b, h);
  weft_op_add_input(b, lr);
  weft_op_add_input(b, grad);
  finish(b);
}

static double fetch1(weft_session_t *s, const char *name) {
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &name, &out, 1, NULL, 0));
  double v = weft_tensor_get_double(out, 0);
  weft_tensor_unref(out);
  return v;
}

static void run_targets(weft_session_t *s, const char *const *targets, int n) {
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, n));
}

static void test_train_save_restore(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t w = handle(g, "w"), b = handle(g, "b");
  weft_graph_pop_device(g);
  /* The ops on the handles ask for no device: they go where their variable is. The model and
   * its gradients ask for the worker. */
  assign_var(g, "w_init", w, weft_const_float(g, "w0", 0.5f, &st));
  assign_var(g, "b_init", b, weft_const_float(g, "b0", -1.0f, &st));
  OK(st);
  weft_output_t w_read = read_var(g, "w_read", w), b_read = read_var(g, "b_read", b);
  weft_graph_push_device(g, "/job:worker/task:0");
  weft_output_t pred = op2(g, "AddV2", "pred", op2(g, "Mul", "wx", w_read, vec4(g, "x", xs)),
                           b_read);
  weft_output_t err = op2(g, "Sub", "err", pred, vec4(g, "y", ys));
  weft_output_t gw = twice_mean(g, "grad_w", op2(g, "Mul", "err_x", err, vec4(g, "x2", xs)));
  weft_output_t gb = twice_mean(g, "grad_b", err);
  weft_output_t lr = weft_const_float(g, "lr", (float)LR, &st);
  OK(st);
  weft_graph_pop_device(g);
  apply_gd(g, "w_apply", w, lr, gw);
  apply_gd(g, "b_apply", b, lr, gb);

  weft_session_t *s = weftd_remote_session(g, c.target[1]);
  const char *inits[] = {"w_init", "b_init"};
  run_targets(s, inits, 2);
  const char *steps[] = {"w_apply", "b_apply"};
  double wr = 0.5, br = -1.0;
  for (int k = 0; k < STEPS; k++) {
    run_targets(s, steps, 2);
    double gwr = 0, gbr = 0;
    for (int i = 0; i < 4; i++) {
      double e = wr * xs[i] + br - ys[i];
      gwr += 2 * e * xs[i] / 4;
      gbr += 2 * e / 4;
    }
    wr -= LR * gwr;
    br -= LR * gbr;
  }
  g_assert_cmpfloat_with_epsilon(fetch1(s, "w_read"), wr, 1e-5);
  g_assert_cmpfloat_with_epsilon(fetch1(s, "b_read"), br, 1e-5);
  static const char *const on_ps[] = {"w", "w_init", "w_read", "w_apply", "b_apply"};
  for (size_t k = 0; k < G_N_ELEMENTS(on_ps); k++)
    g_assert_true(g_str_has_prefix(weft_session_node_device(s, on_ps[k]),
                                   "/job:ps/replica:0/task:0/device:CPU:"));
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "err"),
                                 "/job:worker/replica:0/task:0/device:"));

  /* Saved (one shard: both on the ps task), overwritten, restored. */
  char *dir = g_dir_make_tmp("weft-rescluster-XXXXXX", NULL);
  char *prefix = g_build_filename(dir, "model", NULL);
  weft_saver_t *saver = weft_saver_new(2);
  char *saved = NULL;
  OK(weft_saver_save(saver, s, g, prefix, 3, &saved));
  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(saved, &r));
  weft_tensor_t *t = NULL;
  OK(weft_checkpoint_reader_read(r, "w", &t));
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_rank(t), ==, 0);
  g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(t, 0), wr, 1e-5);
  weft_tensor_unref(t);
  OK(weft_checkpoint_reader_read(r, "b", &t));
  g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(t, 0), br, 1e-5);
  weft_tensor_unref(t);
  weft_checkpoint_reader_free(r);
  run_targets(s, inits, 2);
  g_assert_cmpfloat(fetch1(s, "w_read"), ==, 0.5);
  OK(weft_saver_restore(saver, s, g, saved));
  g_assert_cmpfloat_with_epsilon(fetch1(s, "w_read"), wr, 1e-5);
  g_assert_cmpfloat_with_epsilon(fetch1(s, "b_read"), br, 1e-5);
  g_assert_true(g_str_has_prefix(weft_session_node_device(s, "w/restore"),
                                 "/job:ps/replica:0/task:0/device:CPU:"));
  /* One more step from the restored values: training goes on where it was. */
  run_targets(s, steps, 2);
  double e_sum_x = 0;
  for (int i = 0; i < 4; i++) e_sum_x += 2 * (wr * xs[i] + br - ys[i]) * xs[i] / 4;
  g_assert_cmpfloat_with_epsilon(fetch1(s, "w_read"), wr - LR * e_sum_x, 1e-5);

  /* A handle's consumer pinned to another task than its variable: refused, naming both. */
  weft_graph_push_device(g, "/job:worker/task:0");
  read_var(g, "pinned_read", w);
  weft_graph_pop_device(g);
  const char *fetch = "pinned_read";
  t = NULL;
  st = weft_session_run(s, NULL, NULL, 0, &fetch, &t, 1, NULL, 0);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Cannot colocate nodes 'pinned_read' and 'w': incompatible device "
                  "specifications: 'pinned_read' (op ReadVariableOp) requests "
                  "'/job:worker/task:0' and 'w' (op VarHandleOp) requests '/job:ps/task:0'");
  weft_status_free(st);

  weft_saver_free(saver);
  g_free(saved);
  weft_session_free(s);
  weft_graph_free(g);
  weftd_cluster_stop(&c);
  char *cmd[] = {"rm", "-rf", dir, NULL};
  g_spawn_sync(NULL, cmd, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
  g_free(prefix);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/resource_cluster/train_save_restore", test_train_save_restore);
  return g_test_run();
}
