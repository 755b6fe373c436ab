/* TensorFlow's ResourceApply* optimizer updates on resource variables in a local session, through
 * the public C API: one step of each against numbers computed independently in float64
 * (tests/ref/resource_apply_ref.py), the variable's slots included, and the errors of
 * tensorflow/core/kernels/training_ops.cc for a gradient of the wrong shape and a variable that
 * was never assigned; weft_saver saving and restoring resource variables in a local session. */
#include <math.h>
#include <string.h>

#include <glib.h>

#include "weft/weft.h"

#define OK(expr)                                                                  \
  do {                                                                            \
    weft_status_t *st_ = (expr);                                                  \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                  \
  } while (0)

#define MAX_REFS 4
#define MAX_REST 7

static weft_node_t *finish(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

static weft_output_t const_floats(weft_graph_t *g, const char *name, int rank, const float *values) {
  int64_t dims[1] = {2};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  memcpy(weft_tensor_data(t), values, weft_tensor_nbytes(t));
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

/* One update: n_refs variables of shape [2] (the variable, then its slots) assigned `init`, the
 * op's other inputs from `rest` (scalars, except the [2] gradient at rest[grad_at]), then every
 * variable read back and compared with `want` (relative 1e-5: the kernel computes in float32). */
typedef struct update_case {
  const char *op;
  int n_refs;
  float init[MAX_REFS][2];
  int n_rest;
  float rest[MAX_REST];
  int grad_at;
  float grad[2];
  const char *bool_attr; /* set true when not NULL */
  double want[MAX_REFS][2];
} update_case_t;

static void build_update(weft_graph_t *g, const update_case_t *c, bool use_locking) {
  weft_output_t handles[MAX_REFS];
  for (int r = 0; r < c->n_refs; r++) {
    char name[32], init[32], assign[32], read[32];
    g_snprintf(name, sizeof name, "v%d", r);
    g_snprintf(init, sizeof init, "init%d", r);
    g_snprintf(assign, sizeof assign, "assign%d", r);
    g_snprintf(read, sizeof read, "read%d", r);
    weft_op_builder_t *b = weft_op_new(g, "VarHandleOp", name);
    weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
    weft_op_set_attr_shape(b, "shape", 1, (const int64_t[]){2});
    handles[r] = weft_out(finish(b), 0);
    b = weft_op_new(g, "AssignVariableOp", assign);
    weft_op_add_input(b, handles[r]);
    weft_op_add_input(b, const_floats(g, init, 1, c->init[r]));
    weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
    finish(b);
    b = weft_op_new(g, "ReadVariableOp", read);
    weft_op_add_input(b, handles[r]);
    weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
    finish(b);
  }
  weft_op_builder_t *b = weft_op_new(g, c->op, "update");
  for (int r = 0; r < c->n_refs; r++) weft_op_add_input(b, handles[r]);
  for (int k = 0; k < c->n_rest; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "arg%d", k);
    weft_op_add_input(b, k == c->grad_at ? const_floats(g, name, 1, c->grad)
                                         : const_floats(g, name, 0, &c->rest[k]));
  }
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_bool(b, "use_locking", use_locking);
  if (c->bool_attr) weft_op_set_attr_bool(b, c->bool_attr, true);
  finish(b);
}

static void run_targets(weft_session_t *s, int n_refs) {
  for (int r = 0; r < n_refs; r++) {
    char target[32];
    g_snprintf(target, sizeof target, "assign%d", r);
    const char *t = target;
    OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &t, 1));
  }
}

static void check_case(const update_case_t *c, bool use_locking) {
  weft_graph_t *g = weft_graph_new();
  build_update(g, c, use_locking);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  run_targets(s, c->n_refs);
  const char *target = "update";
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1));
  for (int r = 0; r < c->n_refs; r++) {
    char name[32];
    g_snprintf(name, sizeof name, "read%d:0", r);
    const char *fetch = name;
    weft_tensor_t *t = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, &fetch, &t, 1, NULL, 0));
    g_assert_cmpint(weft_tensor_num_elements(t), ==, 2);
    const float *got = weft_tensor_data(t);
    for (int i = 0; i < 2; i++) {
      double tol = 1e-5 * fmax(1.0, fabs(c->want[r][i]));
      if (fabs(got[i] - c->want[r][i]) > tol)
        g_error("%s: variable %d element %d is %.8g, want %.8g", c->op, r, i, got[i],
                c->want[r][i]);
    }
    weft_tensor_unref(t);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

static const update_case_t cases[] = {
    {"ResourceApplyGradientDescent", 1, {{1, -2}}, 2, {0.1f, 0}, 1, {0.5f, -0.3f}, NULL,
     {{0.95, -1.97}}},
    /* accum = 0.9 accum + g; var -= lr g + lr momentum accum */
    {"ResourceApplyMomentum", 2, {{1, -2}, {0.1f, 0.2f}}, 3, {0.1f, 0, 0.9f}, 1, {0.5f, -0.3f},
     "use_nesterov", {{0.8969, -1.9592}, {0.59, -0.12}}},
    {"ResourceApplyMomentum", 2, {{1, -2}, {0.1f, 0.2f}}, 3, {0.1f, 0, 0.9f}, 1, {0.5f, -0.3f},
     NULL, {{0.941, -1.988}, {0.59, -0.12}}},
    {"ResourceApplyAdagrad", 2, {{1, -2}, {0.1f, 0.2f}}, 2, {0.1f, 0}, 1, {0.5f, -0.3f}, NULL,
     {{1 - 0.05 / sqrt(0.35), -2 + 0.03 / sqrt(0.29)}, {0.35, 0.29}}},
    {"ResourceApplyAdagradV2", 2, {{1, -2}, {0.1f, 0.2f}}, 3, {0.1f, 0.01f, 0}, 2,
     {0.5f, -0.3f}, NULL, {{0.9168894000700255, -1.945307021657801}, {0.35, 0.29}}},
    {"ResourceApplyAdam", 3, {{1, -2}, {0.1f, 0.2f}, {0.01f, 0.04f}}, 7,
     {0.9f, 0.999f, 0.01f, 0.9f, 0.999f, 1e-8f, 0}, 6, {0.5f, -0.3f}, NULL,
     {{0.9956250004323426, -2.0023702271972623}, {0.14, 0.15}, {0.01024, 0.04005}}},
    /* ms += (g^2 - ms)(1 - rho); mom = momentum mom + lr g / sqrt(ms + eps); var -= mom */
    {"ResourceApplyRMSProp", 3, {{1, -2}, {0.3f, 0.4f}, {0.01f, 0.02f}}, 5,
     {0.1f, 0.9f, 0.5f, 1e-3f, 0}, 4, {0.5f, -0.3f}, NULL,
     {{1 - (0.005 + 0.05 / sqrt(0.296)), -2 - (0.01 - 0.03 / sqrt(0.37))},
      {0.295, 0.369},
      {0.005 + 0.05 / sqrt(0.296), 0.01 - 0.03 / sqrt(0.37)}}},
    {"ResourceApplyCenteredRMSProp", 4, {{1, -2}, {0.05f, -0.1f}, {0.3f, 0.4f}, {0.01f, 0.02f}},
     5, {0.1f, 0.9f, 0.5f, 1e-3f, 0}, 4, {0.5f, -0.3f}, NULL,
     {{0.9016642606477075, -1.9596916146820846},
      {0.095, -0.12},
      {0.295, 0.369},
      {0.09833573935229241, -0.04030838531791532}}},
    {"ResourceApplyAdadelta", 3, {{1, -2}, {0.3f, 0.4f}, {0.02f, 0.03f}}, 4,
     {1.0f, 0.95f, 1e-6f, 0}, 3, {0.5f, -0.3f}, NULL,
     {{0.8703562321999634, -1.9162007014427134},
      {0.2975, 0.3845},
      {0.01984037532646949, 0.02885111612193466}}},
};

static void test_updates(void) {
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    check_case(&cases[k], false);
    check_case(&cases[k], true);
  }
}

static weft_status_t *run_update_status(const update_case_t *c, bool assign) {
  weft_graph_t *g = weft_graph_new();
  build_update(g, c, false);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  if (assign) run_targets(s, c->n_refs);
  const char *target = "update";
  st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
  weft_session_free(s);
  weft_graph_free(g);
  return st;
}

/* A variable never assigned: LookupResource's NOT_FOUND. A gradient of another shape than the
 * variable's: training_ops.cc's INVALID_ARGUMENT naming both shapes. */
static void test_errors(void) {
  update_case_t c = cases[0];
  weft_status_t *st = run_update_status(&c, false);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "node 'update': Resource localhost/v0/N10tensorflow3VarE does not exist. (op "
                  "ResourceApplyGradientDescent on /job:localhost/replica:0/task:0/device:CPU:0)");
  weft_status_free(st);
  c.grad_at = -1; /* every input after the handle a scalar: delta is [] against var's [2] */
  st = run_update_status(&c, true);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "node 'update': var and delta do not have the same shape[2] [] (op "
                  "ResourceApplyGradientDescent on /job:localhost/replica:0/task:0/device:CPU:0)");
  weft_status_free(st);
}

/* weft_saver in a local session: a resource variable saved under its VarHandleOp's name,
 * overwritten, restored; one never assigned is refused by name. */
static void test_saver(void) {
  update_case_t c = cases[0];
  weft_graph_t *g = weft_graph_new();
  build_update(g, &c, false);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  run_targets(s, 1);
  const char *target = "update";
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1));
  char *dir = g_dir_make_tmp("weft-resapply-XXXXXX", NULL);
  char *prefix = g_build_filename(dir, "ckpt", NULL);
  weft_saver_t *saver = weft_saver_new(1);
  OK(weft_saver_save(saver, s, g, prefix, -1, NULL));
  weft_checkpoint_reader_t *r = NULL;
  OK(weft_checkpoint_reader_open(prefix, &r));
  weft_tensor_t *t = NULL;
  OK(weft_checkpoint_reader_read(r, "v0", &t));
  g_assert_cmpfloat(((const float *)weft_tensor_data(t))[0], ==, 0.95f);
  g_assert_cmpfloat(((const float *)weft_tensor_data(t))[1], ==, -1.97f);
  weft_tensor_unref(t);
  weft_checkpoint_reader_free(r);
  run_targets(s, 1); /* back to [1, -2] */
  OK(weft_saver_restore(saver, s, g, prefix));
  const char *fetch = "read0:0";
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &t, 1, NULL, 0));
  g_assert_cmpfloat(((const float *)weft_tensor_data(t))[0], ==, 0.95f);
  g_assert_cmpfloat(((const float *)weft_tensor_data(t))[1], ==, -1.97f);
  weft_tensor_unref(t);
  weft_saver_free(saver);
  weft_session_free(s);

  /* A fresh session: v0 was never assigned, so there is nothing to save. */
  s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *names[] = {"v0"};
  saver = weft_saver_new(1);
  weft_saver_set_var_list(saver, names, 1);
  char *other = g_build_filename(dir, "other", NULL);
  st = weft_saver_save(saver, s, g, other, -1, NULL);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Saver: attempting to save uninitialized variable 'v0' (run its initializer or "
                  "restore it first)");
  weft_status_free(st);
  weft_saver_free(saver);
  weft_session_free(s);
  weft_graph_free(g);
  char *cmd[] = {"rm", "-rf", dir, NULL};
  g_spawn_sync(NULL, cmd, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
  g_free(other);
  g_free(prefix);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/resource_apply/updates", test_updates);
  g_test_add_func("/resource_apply/errors", test_errors);
  g_test_add_func("/resource_apply/saver", test_saver);
  return g_test_run();
}
