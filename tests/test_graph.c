/* Tests for graph construction through the client API: unique names and name scopes, nested
 * device scopes and device functions, control-dependency and colocation scopes, and validation of
 * nodes against their op definitions (unknown op, input count and type, attrs). */
#include <glib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "weft/weft.h"

#define OK(expr)                                                 \
  do {                                                           \
    weft_status_t *st_ = (expr);                                 \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

static void test_unique_names_and_scopes(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t a = weft_const_float(g, NULL, 1.0f, &st);
  OK(st);
  weft_output_t b = weft_const_float(g, NULL, 2.0f, &st);
  OK(st);
  weft_output_t c = weft_const_float(g, "Const", 3.0f, &st);
  OK(st);
  g_assert_cmpstr(weft_node_name(a.node), ==, "Const");
  g_assert_cmpstr(weft_node_name(b.node), ==, "Const_1");
  g_assert_cmpstr(weft_node_name(c.node), ==, "Const_2");
  weft_graph_push_name_scope(g, "layer1");
  weft_graph_push_name_scope(g, "dense");
  weft_output_t d = weft_binary(g, "AddV2", NULL, a, b, &st);
  OK(st);
  g_assert_cmpstr(weft_node_name(d.node), ==, "layer1/dense/AddV2");
  weft_graph_pop_name_scope(g);
  weft_output_t e = weft_binary(g, "AddV2", "sum", a, b, &st);
  OK(st);
  g_assert_cmpstr(weft_node_name(e.node), ==, "layer1/sum");
  weft_graph_pop_name_scope(g);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 5);
  g_assert_true(weft_graph_node_at(g, 3) == d.node);
  weft_output_t found;
  OK(weft_graph_find_output(g, "layer1/sum:0", &found));
  g_assert_true(found.node == e.node);
  weft_graph_free(g);
}

static const char *pin_variables_to_ps(void *user_data, const char *op, const char *name) {
  (void)name;
  int *calls = user_data;
  (*calls)++;
  return strcmp(op, "VariableV2") == 0 ? "/job:ps/task:0" : NULL;
}

static void test_device_scopes(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/job:worker/task:1");
  weft_graph_push_device(g, "/gpu:0");
  weft_output_t a = weft_const_float(g, "a", 1.0f, &st);
  OK(st);
  g_assert_cmpstr(weft_node_requested_device(a.node), ==, "/job:worker/task:1/device:GPU:0");
  weft_graph_push_device(g, "/device:CPU:0");
  weft_output_t b = weft_const_float(g, "b", 1.0f, &st);
  OK(st);
  g_assert_cmpstr(weft_node_requested_device(b.node), ==, "/job:worker/task:1/device:CPU:0");
  weft_graph_pop_device(g);
  weft_graph_pop_device(g);
  /* An op's own device merges over the scopes. */
  weft_op_builder_t *ob = weft_op_new(g, "Const", "c");
  weft_tensor_t *t = weft_tensor_new_scalar_float(3.0f);
  weft_op_set_attr_tensor(ob, "value", t);
  weft_op_set_attr_type(ob, "dtype", WEFT_DT_FLOAT);
  weft_tensor_unref(t);
  weft_op_set_device(ob, "/task:2");
  weft_node_t *cn = NULL;
  OK(weft_op_finish(ob, &cn));
  g_assert_cmpstr(weft_node_requested_device(cn), ==, "/job:worker/task:2");
  weft_graph_pop_device(g);

  int calls = 0;
  weft_graph_push_device_fn(g, pin_variables_to_ps, &calls);
  weft_output_t zero = weft_const_float(g, "zero", 0.0f, &st);
  OK(st);
  weft_output_t read = weft_variable(g, "w", zero, &st);
  OK(st);
  weft_graph_pop_device(g);
  g_assert_cmpint(calls, >=, 4);
  g_assert_cmpstr(weft_node_requested_device(zero.node), ==, "");
  g_assert_cmpstr(weft_node_requested_device(weft_graph_node(g, "w")), ==, "/job:ps/task:0");
  /* The read is colocated with the variable (TensorFlow's _class "loc:@w"). */
  g_assert_cmpstr(read.node->colocation_group, ==, "w");
  g_assert_cmpstr(weft_graph_node(g, "w/Assign")->colocation_group, ==, "w");

  weft_graph_push_device(g, "/job:ps/tusk:0");
  weft_const_float(g, "bad", 1.0f, &st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "Node 'bad'"));
  g_assert_nonnull(strstr(weft_status_message(st), "/job:ps/tusk:0"));
  weft_status_free(st);
  weft_graph_pop_device(g);
  weft_graph_free(g);
}

static void test_control_and_colocation_scopes(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t a = weft_const_float(g, "a", 1.0f, &st);
  OK(st);
  weft_output_t b = weft_const_float(g, "b", 1.0f, &st);
  OK(st);
  weft_node_t *deps[2] = {a.node, b.node};
  weft_graph_push_control_deps(g, deps, 2);
  weft_graph_push_colocate(g, b.node);
  weft_output_t c = weft_unary(g, "Neg", "c", a, &st);
  OK(st);
  weft_graph_pop_colocate(g);
  weft_graph_pop_control_deps(g);
  g_assert_cmpint(c.node->control_inputs->len, ==, 2);
  g_assert_cmpstr(c.node->colocation_group, ==, "b");
  weft_output_t d = weft_unary(g, "Neg", "d", a, &st);
  OK(st);
  g_assert_cmpint(d.node->control_inputs->len, ==, 0);
  g_assert_null(d.node->colocation_group);
  weft_graph_free(g);
}

static void test_validation_errors(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t f = weft_const_float(g, "f", 1.0f, &st);
  OK(st);
  weft_tensor_t *it = weft_tensor_new_scalar_int32(1);
  weft_output_t i = weft_const(g, "i", it, &st);
  OK(st);
  weft_tensor_unref(it);

  weft_op_builder_t *b = weft_op_new(g, "FrobnicateV7", "x");
  st = weft_op_finish(b, NULL);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Op type not registered 'FrobnicateV7' (while building node 'x')");
  weft_status_free(st);

  weft_binary(g, "AddV2", "mixed", f, i, &st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Input 1 of node 'mixed' (AddV2) was expected to be float32 but is int32 (from "
                  "'i:0')");
  weft_status_free(st);
  g_assert_null(weft_graph_node(g, "mixed"));

  b = weft_op_new(g, "AddV2", "one_input");
  weft_op_add_input(b, f);
  st = weft_op_finish(b, NULL);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "Node 'one_input' (AddV2) was given 1 input"));
  weft_status_free(st);

  b = weft_op_new(g, "Placeholder", "no_dtype");
  st = weft_op_finish(b, NULL);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st),
                          "Node 'no_dtype' (Placeholder) is missing required attr 'dtype'"));
  weft_status_free(st);

  weft_tensor_t *bt = weft_tensor_new(WEFT_DT_BOOL, 0, NULL);
  weft_output_t bc = weft_const(g, "flag", bt, &st);
  OK(st);
  weft_tensor_unref(bt);
  weft_unary(g, "Sqrt", "sqrt_bool", bc, &st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "Value for attr 'T' of bool is not in the list "
                                                   "of allowed values"));
  g_assert_nonnull(strstr(weft_status_message(st), "node 'sqrt_bool', op Sqrt"));
  weft_status_free(st);

  /* Shape errors name the node and both shapes. */
  int64_t d2[1] = {2}, d3[1] = {3};
  weft_output_t p2 = weft_placeholder(g, "p2", WEFT_DT_FLOAT, 1, d2, &st);
  OK(st);
  weft_output_t p3 = weft_placeholder(g, "p3", WEFT_DT_FLOAT, 1, d3, &st);
  OK(st);
  weft_binary(g, "Mul", "bad_mul", p2, p3, &st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "bad_mul"));
  g_assert_nonnull(strstr(weft_status_message(st), "[2]"));
  g_assert_nonnull(strstr(weft_status_message(st), "[3]"));
  weft_status_free(st);
  weft_graph_free(g);
}

static void test_output_types_and_shapes(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t dims[2] = {WEFT_DIM_UNKNOWN, 3};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, dims, &st);
  OK(st);
  int64_t wd[2] = {3, 5};
  weft_tensor_t *wt = weft_tensor_new(WEFT_DT_FLOAT, 2, wd);
  weft_output_t w = weft_const(g, "w", wt, &st);
  OK(st);
  weft_tensor_unref(wt);
  weft_output_t y = weft_matmul(g, "y", x, w, false, false, &st);
  OK(st);
  int64_t out[WEFT_MAX_RANK];
  g_assert_cmpint(weft_node_output_shape(y.node, 0, out), ==, 2);
  g_assert_cmpint(out[0], ==, WEFT_DIM_UNKNOWN);
  g_assert_cmpint(out[1], ==, 5);
  g_assert_cmpint(weft_node_output_dtype(y.node, 0), ==, WEFT_DT_FLOAT);
  weft_graph_free(g);
}

/* A node is one allocation with its attrs packed inside (graph.c alloc_node); changing a node's
 * attrs afterwards gives them separate entries again. Also builders with more inputs and input
 * args than they hold inline, and removal of such nodes. Run under ASan for the memory side. */
static void test_node_block_and_attrs(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t x = weft_const_float(g, "x", 1.0f, &st);
  OK(st);
  weft_output_t vars[3];
  const char *var_names[3] = {"var", "m", "v"};
  for (int k = 0; k < 3; k++) {
    weft_variable(g, var_names[k], x, &st);
    OK(st);
    vars[k] = weft_out(weft_graph_node(g, var_names[k]), 0);
  }
  int n_before = weft_graph_num_nodes(g);

  /* Ten input args: more than the builder keeps inline. */
  weft_op_builder_t *b = weft_op_new(g, "ApplyAdam", "adam");
  for (int k = 0; k < 3; k++) weft_op_add_input(b, vars[k]);
  for (int k = 0; k < 7; k++) weft_op_add_input(b, x);
  weft_op_set_attr_bool(b, "use_locking", true);
  weft_node_t *adam = NULL;
  OK(weft_op_finish(b, &adam));
  g_assert_cmpint(adam->n_inputs, ==, 10);
  g_assert_true(adam->inputs[2].src == vars[2].node);
  g_assert_true(adam->inputs[9].src == x.node);

  /* One list of six inputs, plus a string list and a string attr. */
  weft_output_t six[6] = {x, x, x, x, x, x};
  b = weft_op_new(g, "AddN", "sum");
  weft_op_add_input_list(b, six, 6);
  const char *classes[2] = {"loc:@x", "other"};
  weft_op_set_attr_string_list(b, "_class", classes, 2);
  weft_op_set_attr_string(b, "_note", "kept");
  int64_t ints[3] = {1, 2, 3};
  weft_op_set_attr_int_list(b, "_ints", ints, 3);
  weft_node_t *sum = NULL;
  OK(weft_op_finish(b, &sum));
  g_assert_cmpint(sum->n_inputs, ==, 6);
  g_assert_cmpstr(sum->colocation_group, ==, "x");
  const weft__attr_value_t *n_attr = weft__attrs_get(sum->attrs, "N");
  g_assert_nonnull(n_attr);
  g_assert_cmpint(n_attr->u.i, ==, 6);
  g_assert_true(sum->attrs->packed);

  /* A copy is separate; the node's own attrs unpack when they change, and keep their values. */
  weft_attrs_t *copy = weft__attrs_copy(sum->attrs);
  g_assert_cmpint(copy->n, ==, sum->attrs->n);
  g_assert_cmpstr(weft__attrs_get(copy, "_class")->u.list.s[1].data, ==, "other");
  weft__attrs_free(copy);
  /* Packed values are as long as their kind needs: copies read no more than that. */
  const weft_tensor_t *value = weft__attrs_get(x.node->attrs, "value")->u.tensor;
  copy = weft__attrs_copy(x.node->attrs);
  g_assert_true(weft__attrs_get(copy, "value")->u.tensor == value);
  g_assert_cmpint(weft__attrs_get(copy, "dtype")->u.type, ==, WEFT_DT_FLOAT);
  weft__attrs_free(copy);
  weft__attr_value_t *extra = weft__attr_value_new(WEFT_ATTR_INT);
  extra->u.i = 42;
  weft__attrs_set(sum->attrs, "_extra", extra);
  g_assert_false(sum->attrs->packed);
  g_assert_cmpint(weft__attrs_get(sum->attrs, "_extra")->u.i, ==, 42);
  g_assert_cmpstr(weft__attrs_get(sum->attrs, "_note")->u.s.data, ==, "kept");
  g_assert_cmpint(weft__attrs_get(sum->attrs, "_ints")->u.list.i[2], ==, 3);
  g_assert_cmpint(weft__attrs_get(sum->attrs, "T")->u.type, ==, WEFT_DT_FLOAT);
  weft__attrs_remove(adam->attrs, "use_locking");
  g_assert_null(weft__attrs_get(adam->attrs, "use_locking"));
  g_assert_nonnull(weft__attrs_get(adam->attrs, "T"));

  /* Removing the new nodes (undo of an import) frees them, packed or not. */
  weft__graph_truncate(g, n_before);
  g_assert_null(weft_graph_node(g, "adam"));
  g_assert_null(weft_graph_node(g, "sum"));
  weft_graph_free(g);
}

/* Output shapes are stored as long as the node's highest rank (graph.c alloc_node): outputs of
 * one node with different ranks, unknown ranks, and a node too big for the stack scratch
 * its checks run in. */
static void test_output_shapes_stored_compactly(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t dims[3] = {4, WEFT_DIM_UNKNOWN, 5};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 3, dims, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Unpack", "parts");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "num", 4);
  weft_node_t *parts = NULL;
  OK(weft_op_finish(b, &parts));
  g_assert_cmpint(weft_node_num_outputs(parts), ==, 4);
  int64_t out[WEFT_MAX_RANK];
  for (int k = 0; k < 4; k++) {
    g_assert_cmpint(weft_node_output_shape(parts, k, out), ==, 2);
    g_assert_cmpint(out[0], ==, WEFT_DIM_UNKNOWN);
    g_assert_cmpint(out[1], ==, 5);
  }
  weft_output_t u = weft_placeholder(g, "u", WEFT_DT_FLOAT, -1, NULL, &st);
  OK(st);
  g_assert_cmpint(weft_node_output_shape(u.node, 0, out), ==, -1);
  weft_output_t s = weft_const_float(g, "s", 1.0f, &st);
  OK(st);
  g_assert_cmpint(weft_node_output_shape(s.node, 0, out), ==, 0);
  /* Rank 3 next to rank 0 in one node's inputs; 100 inputs overflow the stack scratch. */
  weft_output_t many[100];
  for (int k = 0; k < 100; k++) many[k] = weft_out(parts, k % 4);
  b = weft_op_new(g, "AddN", "sum");
  weft_op_add_input_list(b, many, 100);
  weft_node_t *sum = NULL;
  OK(weft_op_finish(b, &sum));
  g_assert_cmpint(sum->n_inputs, ==, 100);
  g_assert_true(sum->inputs[99].src == parts && sum->inputs[99].src_index == 3);
  g_assert_cmpint(weft_node_output_shape(sum, 0, out), ==, 2);
  g_assert_cmpint(out[1], ==, 5);
  weft__shape_t shape = weft__node_shape(x.node, 0);
  g_assert_cmpint(shape.rank, ==, 3);
  g_assert_cmpint(shape.dims[0], ==, 4);
  g_assert_cmpint(shape.dims[2], ==, 5);
  g_assert_cmpint(shape.dims[3], ==, 0);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/graph/unique_names_and_scopes", test_unique_names_and_scopes);
  g_test_add_func("/graph/device_scopes", test_device_scopes);
  g_test_add_func("/graph/control_and_colocation_scopes", test_control_and_colocation_scopes);
  g_test_add_func("/graph/validation_errors", test_validation_errors);
  g_test_add_func("/graph/output_types_and_shapes", test_output_types_and_shapes);
  g_test_add_func("/graph/node_block_and_attrs", test_node_block_and_attrs);
  g_test_add_func("/graph/output_shapes_stored_compactly", test_output_shapes_stored_compactly);
  return g_test_run();
}
