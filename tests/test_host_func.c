/* test_host_func.c: host functions (weft_host_func_register) run by PyFunc, PyFuncStateless and
 * EagerPyFunc nodes in a local session: values in and out (several inputs and outputs, no
 * inputs, strings), the function's own status passed through, each check of what it returns
 * (count, NULL, dtype) and an unknown token with TensorFlow's messages, registration errors,
 * unregistering (destroy called once, the token then unknown), a stateless node that constant
 * folding must leave to run, and many steps calling one function from parallel nodes. */
#include <glib.h>
#include <string.h>

#include "weft/weft.h"

#define OK(expr)                                                                               \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                                \
  } while (0)

static void expect_status(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  if (weft_status_code(st) != code || !strstr(weft_status_message(st), message))
    g_error("expected %s containing \"%s\", got %s: %s", weft_code_name(code), message,
            weft_code_name(weft_status_code(st)), weft_status_message(st));
  weft_status_free(st);
}

static weft_output_t const_floats(weft_graph_t *g, const char *name, int n, const float *v) {
  int64_t dims[1] = {n};
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, dims);
  memcpy(weft_tensor_data(t), v, sizeof(float) * (size_t)n);
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

/* A host-function node of `op` calling token on inputs, returning outputs of types tout. */
static weft_node_t *host_node(weft_graph_t *g, const char *op, const char *name,
                              const char *token, const weft_output_t *in, int n_in,
                              const weft_dtype_t *tout, int n_out) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input_list(b, in, n_in);
  weft_dtype_t tin[8];
  for (int i = 0; i < n_in; i++) tin[i] = weft_node_output_dtype(in[i].node, in[i].index);
  weft_op_set_attr_type_list(b, "Tin", tin, n_in);
  weft_op_set_attr_type_list(b, "Tout", tout, n_out);
  weft_op_set_attr_string(b, "token", token);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return n;
}

static weft_status_t *run(weft_graph_t *g, const char *const *fetch, weft_tensor_t **out, int n) {
  weft_session_t *s = NULL;
  weft_status_t *st = NULL;
  s = weft_session_new(g, NULL, &st);
  if (st) return st;
  st = weft_session_run(s, NULL, NULL, 0, fetch, out, n, NULL, 0);
  weft_session_free(s);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Functions */

static gint calls;

/* out0 = a + b, out1 = sum(a) as a double scalar. */
static weft_status_t *add_and_sum(void *user, weft_tensor_t *const *in, int n_in,
                                  weft_tensor_t **out, int n_out) {
  g_atomic_int_inc(&calls);
  g_assert_cmpstr(user, ==, "add_and_sum");
  g_assert_cmpint(n_in, ==, 2);
  g_assert_cmpint(n_out, ==, 2);
  int64_t n = weft_tensor_num_elements(in[0]);
  out[0] = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  const float *a = weft_tensor_data(in[0]), *b = weft_tensor_data(in[1]);
  float *y = weft_tensor_data(out[0]);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    y[i] = a[i] + b[i];
    sum += a[i];
  }
  out[1] = weft_tensor_new(WEFT_DT_DOUBLE, 0, NULL);
  *(double *)weft_tensor_data(out[1]) = sum;
  return NULL;
}

/* No inputs: a string vector. */
static weft_status_t *greet(void *user, weft_tensor_t *const *in, int n_in, weft_tensor_t **out,
                            int n_out) {
  (void)user;
  (void)in;
  g_assert_cmpint(n_in, ==, 0);
  g_assert_cmpint(n_out, ==, 1);
  int64_t two = 2;
  out[0] = weft_tensor_new(WEFT_DT_STRING, 1, &two);
  OK(weft_tensor_set_string(out[0], 0, "hello", 5));
  OK(weft_tensor_set_string(out[0], 1, "", 0));
  return NULL;
}

static weft_status_t *fails(void *user, weft_tensor_t *const *in, int n_in, weft_tensor_t **out,
                            int n_out) {
  (void)user;
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  return weft_status_new(WEFT_OUT_OF_RANGE, "StopIteration: the generator is done");
}

/* Returns one float where the node may want more, or another dtype. */
static weft_status_t *one_float(void *user, weft_tensor_t *const *in, int n_in,
                                weft_tensor_t **out, int n_out) {
  (void)user;
  (void)in;
  (void)n_in;
  (void)n_out;
  out[0] = weft_tensor_new_scalar_float(3.0f);
  return NULL;
}

static gint destroyed;
static void count_destroy(void *user) {
  (void)user;
  g_atomic_int_inc(&destroyed);
}

/* ---------------------------------------------------------------------------------------------
 * Tests */

static void test_values(void) {
  OK(weft_host_func_register("t_add_and_sum", add_and_sum, "add_and_sum", NULL));
  OK(weft_host_func_register("t_greet", greet, NULL, NULL));
  weft_graph_t *g = weft_graph_new();
  const float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  weft_output_t in[2] = {const_floats(g, "a", 3, a), const_floats(g, "b", 3, b)};
  const weft_dtype_t tout[2] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  host_node(g, "PyFunc", "f", "t_add_and_sum", in, 2, tout, 2);
  const weft_dtype_t str[1] = {WEFT_DT_STRING};
  host_node(g, "EagerPyFunc", "hi", "t_greet", NULL, 0, str, 1);
  const char *fetch[] = {"f:0", "f:1", "hi:0"};
  weft_tensor_t *out[3] = {NULL, NULL, NULL};
  OK(run(g, fetch, out, 3));
  const float *y = weft_tensor_data(out[0]);
  g_assert_cmpfloat(y[0], ==, 11);
  g_assert_cmpfloat(y[1], ==, 22);
  g_assert_cmpfloat(y[2], ==, 33);
  g_assert_cmpint(weft_tensor_dtype(out[1]), ==, WEFT_DT_DOUBLE);
  g_assert_cmpfloat(*(const double *)weft_tensor_data(out[1]), ==, 6);
  const weft_string_t *s = weft_tensor_data(out[2]);
  g_assert_cmpint(s[0].len, ==, 5);
  g_assert_cmpmem(s[0].data, 5, "hello", 5);
  g_assert_cmpint(s[1].len, ==, 0);
  for (int i = 0; i < 3; i++) weft_tensor_unref(out[i]);
  weft_graph_free(g);
  g_assert_true(weft_host_func_unregister("t_add_and_sum"));
  g_assert_true(weft_host_func_unregister("t_greet"));
}

static void test_errors(void) {
  OK(weft_host_func_register("t_fails", fails, NULL, NULL));
  OK(weft_host_func_register("t_one_float", one_float, NULL, NULL));
  const weft_dtype_t f1[1] = {WEFT_DT_FLOAT}, f2[2] = {WEFT_DT_FLOAT, WEFT_DT_FLOAT};
  const weft_dtype_t i1[1] = {WEFT_DT_INT32};
  struct {
    const char *token;
    const weft_dtype_t *tout;
    int n_out;
    weft_code_t code;
    const char *message;
  } cases[] = {
      {"t_fails", f1, 1, WEFT_OUT_OF_RANGE, "StopIteration: the generator is done"},
      {"t_one_float", f2, 2, WEFT_INVALID_ARGUMENT,
       "t_one_float returns 1 values, but expects to see 2 values."},
      {"t_one_float", i1, 1, WEFT_INVALID_ARGUMENT,
       "0-th value returned by t_one_float is float, but expects int32"},
      {"t_nobody", f1, 1, WEFT_INVALID_ARGUMENT, "ValueError: callback t_nobody is not found"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    weft_graph_t *g = weft_graph_new();
    host_node(g, "PyFunc", "f", cases[k].token, NULL, 0, cases[k].tout, cases[k].n_out);
    const char *fetch[] = {"f:0"};
    weft_tensor_t *out = NULL;
    expect_status(run(g, fetch, &out, 1), cases[k].code, cases[k].message);
    g_assert_null(out);
    weft_graph_free(g);
  }
  expect_status(weft_host_func_register("t_fails", one_float, NULL, NULL), WEFT_ALREADY_EXISTS,
                "a host function is already registered as 't_fails'");
  expect_status(weft_host_func_register("", one_float, NULL, NULL), WEFT_INVALID_ARGUMENT,
                "a host function needs a non-empty token");
  expect_status(weft_host_func_register("t_null", NULL, NULL, NULL), WEFT_INVALID_ARGUMENT,
                "host function 't_null': the function is NULL");
  g_assert_true(weft_host_func_unregister("t_fails"));
  g_assert_true(weft_host_func_unregister("t_one_float"));
  g_assert_false(weft_host_func_unregister("t_fails"));
  g_assert_false(weft_host_func_unregister(NULL));
}

/* A PyFuncStateless of constants is not folded at plan time: every step calls the function. */
static void test_stateless_runs_each_step(void) {
  OK(weft_host_func_register("t_sum", add_and_sum, "add_and_sum", NULL));
  weft_graph_t *g = weft_graph_new();
  const float a[2] = {1, 2};
  weft_output_t in[2] = {const_floats(g, "a", 2, a), const_floats(g, "b", 2, a)};
  const weft_dtype_t tout[2] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  host_node(g, "PyFuncStateless", "f", "t_sum", in, 2, tout, 2);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  int before = g_atomic_int_get(&calls);
  const char *fetch[] = {"f:1"};
  for (int k = 0; k < 3; k++) {
    weft_tensor_t *out = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
    g_assert_cmpfloat(*(const double *)weft_tensor_data(out), ==, 3);
    weft_tensor_unref(out);
  }
  g_assert_cmpint(g_atomic_int_get(&calls) - before, ==, 3);
  weft_session_free(s);
  weft_graph_free(g);
  g_assert_true(weft_host_func_unregister("t_sum"));
}

/* Sixteen nodes calling one function in each of many steps, the function then unregistered:
 * destroy runs once, and a step naming it afterwards fails. */
static void test_parallel_and_unregister(void) {
  destroyed = 0;
  OK(weft_host_func_register("t_par", add_and_sum, "add_and_sum", count_destroy));
  weft_graph_t *g = weft_graph_new();
  const float a[4] = {1, 2, 3, 4};
  weft_output_t in[2] = {const_floats(g, "a", 4, a), const_floats(g, "b", 4, a)};
  const weft_dtype_t tout[2] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  enum { NODES = 16 };
  char *names[NODES];
  for (int k = 0; k < NODES; k++) {
    names[k] = g_strdup_printf("f%d", k);
    host_node(g, "PyFunc", names[k], "t_par", in, 2, tout, 2);
  }
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  char *fetch1[NODES];
  for (int k = 0; k < NODES; k++) fetch1[k] = g_strdup_printf("%s:1", names[k]);
  for (int step = 0; step < 20; step++) {
    weft_tensor_t *out[NODES] = {NULL};
    OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)fetch1, out, NODES, NULL, 0));
    for (int k = 0; k < NODES; k++) {
      g_assert_cmpfloat(*(const double *)weft_tensor_data(out[k]), ==, 10);
      weft_tensor_unref(out[k]);
    }
  }
  g_assert_cmpint(destroyed, ==, 0);
  g_assert_true(weft_host_func_unregister("t_par"));
  g_assert_cmpint(destroyed, ==, 1);
  weft_tensor_t *out[NODES] = {NULL};
  expect_status(weft_session_run(s, NULL, NULL, 0, (const char *const *)fetch1, out, NODES, NULL,
                                 0),
                WEFT_INVALID_ARGUMENT, "ValueError: callback t_par is not found");
  for (int k = 0; k < NODES; k++) {
    g_free(names[k]);
    g_free(fetch1[k]);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  g_test_add_func("/host_func/values", test_values);
  g_test_add_func("/host_func/errors", test_errors);
  g_test_add_func("/host_func/stateless_runs_each_step", test_stateless_runs_each_step);
  g_test_add_func("/host_func/parallel_and_unregister", test_parallel_and_unregister);
  return g_test_run();
}
