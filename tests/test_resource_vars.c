/* Resource variables in a local session, through the public C API: VarHandleOp, ReadVariableOp,
 * AssignVariableOp, AssignAdd/SubVariableOp, VarIsInitializedOp, ResourceGather, ResourceScatter*,
 * VariableShape, DestroyResourceOp, with TensorFlow's semantics and messages
 * (resource_variable_ops.cc). */
#include <string.h>

#include <glib.h>

#include "weft/weft.h"

#define OK(expr)                                                                  \
  do {                                                                            \
    weft_status_t *st_ = (expr);                                                  \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));                  \
  } while (0)

static weft_node_t *finish(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

static weft_output_t var_handle(weft_graph_t *g, const char *name, const char *shared,
                                weft_dtype_t dtype, int rank, const int64_t *dims) {
  weft_op_builder_t *b = weft_op_new(g, "VarHandleOp", name);
  weft_op_set_attr_string(b, "shared_name", shared);
  weft_op_set_attr_type(b, "dtype", dtype);
  weft_op_set_attr_shape(b, "shape", rank, dims);
  return weft_out(finish(b), 0);
}

static weft_node_t *assign_op(weft_graph_t *g, const char *op, const char *name, weft_output_t h,
                              weft_output_t v, weft_dtype_t dtype) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input(b, h);
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "dtype", dtype);
  return finish(b);
}

static weft_output_t read_op(weft_graph_t *g, const char *name, weft_output_t h,
                             weft_dtype_t dtype) {
  weft_op_builder_t *b = weft_op_new(g, "ReadVariableOp", name);
  weft_op_add_input(b, h);
  weft_op_set_attr_type(b, "dtype", dtype);
  return weft_out(finish(b), 0);
}

static weft_output_t unary_handle(weft_graph_t *g, const char *op, const char *name,
                                  weft_output_t h) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input(b, h);
  return weft_out(finish(b), 0);
}

static weft_output_t const_floats(weft_graph_t *g, const char *name, int rank, const int64_t *dims,
                                  const float *values) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  memcpy(weft_tensor_data(t), values, weft_tensor_nbytes(t));
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static void run_target(weft_session_t *s, const char *target) {
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1));
}

static weft_tensor_t *fetch(weft_session_t *s, const char *name) {
  weft_tensor_t *t = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &name, &t, 1, NULL, 0));
  return t;
}

static void assert_floats(const weft_tensor_t *t, const float *want, int64_t n) {
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  const float *got = weft_tensor_data(t);
  for (int64_t i = 0; i < n; i++) g_assert_cmpfloat(got[i], ==, want[i]);
}

static void test_create_assign_read_update(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t dims[] = {2, 2};
  weft_output_t h = var_handle(g, "v", "v", WEFT_DT_FLOAT, 2, dims);
  weft_output_t init = const_floats(g, "init", 2, dims, (const float[]){1, 2, 3, 4});
  weft_output_t delta = const_floats(g, "delta", 2, dims, (const float[]){10, 20, 30, 40});
  assign_op(g, "AssignVariableOp", "assign", h, init, WEFT_DT_FLOAT);
  assign_op(g, "AssignAddVariableOp", "add", h, delta, WEFT_DT_FLOAT);
  assign_op(g, "AssignSubVariableOp", "sub", h, init, WEFT_DT_FLOAT);
  read_op(g, "read", h, WEFT_DT_FLOAT);
  unary_handle(g, "VarIsInitializedOp", "is_init", h);
  unary_handle(g, "VariableShape", "shape", h);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);

  weft_tensor_t *t = fetch(s, "is_init:0");
  g_assert_false(*(const uint8_t *)weft_tensor_data(t));
  weft_tensor_unref(t);
  run_target(s, "assign");
  t = fetch(s, "is_init:0");
  g_assert_true(*(const uint8_t *)weft_tensor_data(t));
  weft_tensor_unref(t);
  weft_tensor_t *before = fetch(s, "read:0");
  assert_floats(before, (const float[]){1, 2, 3, 4}, 4);
  run_target(s, "add");
  t = fetch(s, "read:0");
  assert_floats(t, (const float[]){11, 22, 33, 44}, 4);
  weft_tensor_unref(t);
  /* A value read earlier is a snapshot: the update did not change it. */
  assert_floats(before, (const float[]){1, 2, 3, 4}, 4);
  weft_tensor_unref(before);
  run_target(s, "sub");
  t = fetch(s, "read:0");
  assert_floats(t, (const float[]){10, 20, 30, 40}, 4);
  weft_tensor_unref(t);
  t = fetch(s, "shape:0");
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_INT32);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, 2);
  g_assert_cmpint(((const int32_t *)weft_tensor_data(t))[0], ==, 2);
  g_assert_cmpint(((const int32_t *)weft_tensor_data(t))[1], ==, 2);
  weft_tensor_unref(t);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_gather(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t dims[] = {3, 2};
  weft_output_t h = var_handle(g, "table", "table", WEFT_DT_FLOAT, 2, dims);
  weft_output_t init = const_floats(g, "init", 2, dims, (const float[]){1, 2, 3, 4, 5, 6});
  assign_op(g, "AssignVariableOp", "assign", h, init, WEFT_DT_FLOAT);
  weft_tensor_t *ix = weft_tensor_new(WEFT_DT_INT32, 2, (const int64_t[]){2, 2});
  memcpy(weft_tensor_data(ix), (const int32_t[]){2, 0, 1, 2}, 4 * sizeof(int32_t));
  weft_status_t *st = NULL;
  weft_output_t indices = weft_const(g, "indices", ix, &st);
  OK(st);
  weft_tensor_unref(ix);
  weft_tensor_t *bad = weft_tensor_new(WEFT_DT_INT64, 1, (const int64_t[]){2});
  memcpy(weft_tensor_data(bad), (const int64_t[]){0, 3}, 2 * sizeof(int64_t));
  weft_output_t bad_indices = weft_const(g, "bad_indices", bad, &st);
  OK(st);
  weft_tensor_unref(bad);
  for (int k = 0; k < 2; k++) {
    weft_op_builder_t *b = weft_op_new(g, "ResourceGather", k ? "gather_bad" : "gather");
    weft_op_add_input(b, h);
    weft_op_add_input(b, k ? bad_indices : indices);
    weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
    finish(b);
  }
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  run_target(s, "assign");
  weft_tensor_t *t = fetch(s, "gather:0");
  g_assert_cmpint(weft_tensor_rank(t), ==, 3);
  assert_floats(t, (const float[]){5, 6, 1, 2, 3, 4, 5, 6}, 8);
  weft_tensor_unref(t);
  const char *name = "gather_bad:0";
  st = weft_session_run(s, NULL, NULL, 0, &name, &t, 1, NULL, 0);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "indices[1] = 3 is not in [0, 3)"));
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_uninitialised_read(void) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t h = var_handle(g, "u", "scope/u", WEFT_DT_FLOAT, 0, NULL);
  read_op(g, "read", h, WEFT_DT_FLOAT);
  weft_output_t one = const_floats(g, "one", 0, NULL, (const float[]){1});
  assign_op(g, "AssignAddVariableOp", "add", h, one, WEFT_DT_FLOAT);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *name = "read:0";
  weft_tensor_t *t = NULL;
  st = weft_session_run(s, NULL, NULL, 0, &name, &t, 1, NULL, 0);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_nonnull(strstr(weft_status_message(st),
                          "Error while reading resource variable scope/u from Container: "
                          "localhost. This could mean that the variable was uninitialized. Not "
                          "found: Resource localhost/scope/u/N10tensorflow3VarE does not exist."));
  weft_status_free(st);
  const char *target = "add";
  st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
}

/* Two handles with one shared_name are one variable; DestroyResourceOp drops it for both. */
static void test_shared_name(void) {
  weft_graph_t *g = weft_graph_new();
  weft_output_t h1 = var_handle(g, "h1", "shared", WEFT_DT_FLOAT, 1, (const int64_t[]){2});
  weft_output_t h2 = var_handle(g, "h2", "shared", WEFT_DT_FLOAT, 1, (const int64_t[]){2});
  weft_output_t init = const_floats(g, "init", 1, (const int64_t[]){2}, (const float[]){7, 8});
  assign_op(g, "AssignVariableOp", "assign", h1, init, WEFT_DT_FLOAT);
  read_op(g, "read2", h2, WEFT_DT_FLOAT);
  unary_handle(g, "VarIsInitializedOp", "is_init2", h2);
  weft_op_builder_t *b = weft_op_new(g, "DestroyResourceOp", "destroy");
  weft_op_add_input(b, h1);
  finish(b);
  b = weft_op_new(g, "DestroyResourceOp", "destroy_strict");
  weft_op_add_input(b, h1);
  weft_op_set_attr_bool(b, "ignore_lookup_error", false);
  finish(b);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  run_target(s, "assign");
  weft_tensor_t *t = fetch(s, "read2:0");
  assert_floats(t, (const float[]){7, 8}, 2);
  weft_tensor_unref(t);
  run_target(s, "destroy");
  t = fetch(s, "is_init2:0");
  g_assert_false(*(const uint8_t *)weft_tensor_data(t));
  weft_tensor_unref(t);
  run_target(s, "destroy"); /* ignore_lookup_error defaults to true */
  const char *target = "destroy_strict";
  st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_nonnull(strstr(weft_status_message(st), "Resource localhost/shared/"));
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
}

/* A resource variable and a ref variable (VariableV2) of one container and name share storage. */
static void test_shared_with_ref_variable(void) {
  weft_graph_t *g = weft_graph_new();
  /* Storage is shared within one device's resource manager: both on the CPU, which has kernels
   * for both kinds (a GPU plugin may have VariableV2 alone). */
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  weft_output_t init = const_floats(g, "init", 1, (const int64_t[]){3}, (const float[]){1, 2, 3});
  weft_variable(g, "w", init, &st);
  OK(st);
  weft_output_t h = var_handle(g, "wh", "w", WEFT_DT_FLOAT, 1, (const int64_t[]){3});
  read_op(g, "read_res", h, WEFT_DT_FLOAT);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  run_target(s, "w/Assign");
  weft_tensor_t *t = fetch(s, "read_res:0");
  assert_floats(t, (const float[]){1, 2, 3}, 3);
  weft_tensor_unref(t);
  weft_session_free(s);
  weft_graph_free(g);
}

static weft_node_t *scatter(weft_graph_t *g, const char *op, const char *name, weft_output_t h,
                            int n, const int32_t *idx, weft_output_t updates) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 1, dims);
  memcpy(weft_tensor_data(t), idx, sizeof(int32_t) * (size_t)n);
  char *iname = g_strconcat(name, "/indices", NULL);
  weft_status_t *st = NULL;
  weft_output_t ix = weft_const(g, iname, t, &st);
  OK(st);
  g_free(iname);
  weft_tensor_unref(t);
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input(b, h);
  weft_op_add_input(b, ix);
  weft_op_add_input(b, updates);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  return finish(b);
}

/* ResourceScatterAdd/Update/Max on a [3, 2] variable, then TensorFlow's errors for an index out
 * of range and updates of the wrong shape. */
static void test_scatter(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t dims[] = {3, 2}, two[] = {2, 2}, one[] = {1, 2};
  weft_output_t h = var_handle(g, "v", "v", WEFT_DT_FLOAT, 2, dims);
  assign_op(g, "AssignVariableOp", "assign", h,
            const_floats(g, "init", 2, dims, (const float[]){1, 2, 3, 4, 5, 6}), WEFT_DT_FLOAT);
  weft_output_t u = const_floats(g, "u", 2, two, (const float[]){10, 20, 30, 40});
  scatter(g, "ResourceScatterAdd", "add", h, 2, (const int32_t[]){2, 0}, u);
  scatter(g, "ResourceScatterUpdate", "upd", h, 1, (const int32_t[]){1},
          const_floats(g, "seven", 0, NULL, (const float[]){7}));
  scatter(g, "ResourceScatterMax", "max", h, 1, (const int32_t[]){1},
          const_floats(g, "m", 2, one, (const float[]){0, 9}));
  scatter(g, "ResourceScatterAdd", "bad_index", h, 2, (const int32_t[]){0, 3}, u);
  scatter(g, "ResourceScatterAdd", "bad_shape", h, 1, (const int32_t[]){0}, u);
  read_op(g, "read", h, WEFT_DT_FLOAT);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  run_target(s, "assign");
  run_target(s, "add");
  run_target(s, "upd");
  run_target(s, "max");
  weft_tensor_t *t = fetch(s, "read:0");
  assert_floats(t, (const float[]){31, 42, 7, 9, 15, 26}, 6);
  weft_tensor_unref(t);
  static const char *const bad[] = {"bad_index", "bad_shape"};
  static const char *const want[] = {
      "node 'bad_index': indices[1] = 3 is not in [0, 3)",
      "node 'bad_shape': Must have updates.shape = indices.shape + params.shape[1:] or "
      "updates.shape = [], got updates.shape [2,2], indices.shape [1], params.shape [3,2]"};
  for (int k = 0; k < 2; k++) {
    st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &bad[k], 1);
    g_assert_nonnull(st);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    if (!strstr(weft_status_message(st), want[k]))
      g_assert_cmpstr(weft_status_message(st), ==, want[k]);
    weft_status_free(st);
  }
  /* The failed updates changed nothing. */
  t = fetch(s, "read:0");
  assert_floats(t, (const float[]){31, 42, 7, 9, 15, 26}, 6);
  weft_tensor_unref(t);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/resource_vars/create_assign_read_update", test_create_assign_read_update);
  g_test_add_func("/resource_vars/gather", test_gather);
  g_test_add_func("/resource_vars/scatter", test_scatter);
  g_test_add_func("/resource_vars/uninitialised_read", test_uninitialised_read);
  g_test_add_func("/resource_vars/shared_name", test_shared_name);
  g_test_add_func("/resource_vars/shared_with_ref_variable", test_shared_with_ref_variable);
  return g_test_run();
}
