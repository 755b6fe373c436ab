/* The client API language bindings (python/) use beyond the basics (docs/c-api.md, "Reading
 * nodes back", "Sharing a fetched tensor", "Importing with an input map"): a node's data inputs,
 * control inputs and colocation group, whether a tensor's memory is the caller's alone,
 * GraphDef import with TensorFlow's input_map, and local sessions' device_count and
 * visible_device_list. */
#include <glib.h>

#include "weft/weft.h"

static void test_inputs_and_controls(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t a = weft_const_float(g, "a", 1.0f, &st);
  g_assert_null(st);
  weft_output_t b = weft_const_float(g, "b", 2.0f, &st);
  g_assert_null(st);
  weft_op_builder_t *op = weft_op_new(g, "AddN", "sum");
  weft_output_t list[2] = {b, a};
  weft_op_add_input_list(op, list, 2);
  weft_op_add_control_input(op, a.node);
  weft_node_t *sum = NULL;
  g_assert_null(weft_op_finish(op, &sum));

  g_assert_cmpint(weft_node_num_inputs(sum), ==, 2);
  g_assert_true(weft_node_input(sum, 0).node == b.node);
  g_assert_true(weft_node_input(sum, 1).node == a.node);
  g_assert_cmpint(weft_node_input(sum, 1).index, ==, 0);
  g_assert_null(weft_node_input(sum, 2).node);
  g_assert_null(weft_node_input(sum, -1).node);
  g_assert_cmpint(weft_node_num_control_inputs(sum), ==, 1);
  g_assert_true(weft_node_control_input(sum, 0) == a.node);
  g_assert_null(weft_node_control_input(sum, 1));
  g_assert_cmpint(weft_node_num_inputs(a.node), ==, 0);
  g_assert_cmpint(weft_node_num_control_inputs(a.node), ==, 0);
  g_assert_null(weft_node_colocation_group(sum));

  weft_graph_push_colocate(g, a.node);
  weft_output_t c = weft_const_float(g, "c", 3.0f, &st);
  weft_graph_pop_colocate(g);
  g_assert_null(st);
  g_assert_cmpstr(weft_node_colocation_group(c.node), ==, "a");
  weft_graph_free(g);
}

static void test_tensor_is_exclusive(void) {
  weft_tensor_t *t = weft_tensor_new_scalar_float(2.0f);
  g_assert_true(weft_tensor_is_exclusive(t));
  weft_tensor_t *second = weft_tensor_ref(t);
  g_assert_false(weft_tensor_is_exclusive(t));
  weft_tensor_unref(second);
  g_assert_true(weft_tensor_is_exclusive(t));
  g_assert_false(weft_tensor_is_exclusive(NULL));

  /* A variable's value fetched is shared with the variable; a computed one is not. On the CPU:
   * a fetch from a GPU's memory is a copy. */
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  weft_output_t init = weft_const(g, "init", t, &st);
  g_assert_null(st);
  weft_variable(g, "v", init, &st);
  g_assert_null(st);
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_binary(g, "Mul", "twice", weft_out(weft_graph_node(g, "v"), 0), two, &st);
  g_assert_null(st);
  g_assert_nonnull(weft_global_variables_initializer(g, "init_all", &st));
  g_assert_null(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  g_assert_null(st);
  const char *targets[] = {"init_all"};
  g_assert_null(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
  const char *fetches[] = {"v", "twice"};
  weft_tensor_t *out[2] = {NULL, NULL};
  g_assert_null(weft_session_run(s, NULL, NULL, 0, fetches, out, 2, NULL, 0));
  g_assert_false(weft_tensor_is_exclusive(out[0]));
  g_assert_true(weft_tensor_is_exclusive(out[1]));
  g_assert_cmpfloat(weft_tensor_get_double(out[1], 0), ==, 4.0);
  weft_tensor_unref(out[0]);
  weft_tensor_unref(out[1]);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(t);
}

static void test_import_input_map(void) {
  /* GraphDef: x (Placeholder) -> y = x * two */
  weft_graph_t *src = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t x = weft_placeholder(src, "x", WEFT_DT_FLOAT, 0, NULL, &st);
  weft_output_t two = weft_const_float(src, "two", 2.0f, &st);
  weft_binary(src, "Mul", "y", x, two, &st);
  g_assert_null(st);
  void *bytes = NULL;
  size_t len = 0;
  g_assert_null(weft_graph_export_graphdef(src, &bytes, &len));
  weft_graph_free(src);

  weft_graph_t *g = weft_graph_new();
  weft_output_t five = weft_const_float(g, "five", 5.0f, &st);
  g_assert_null(st);
  const char *keys[] = {"x"};
  g_assert_null(weft_graph_import_graphdef_mapped(g, bytes, len, "imp", keys, &five, 1));
  weft_node_t *y = weft_graph_node(g, "imp/y");
  g_assert_nonnull(y);
  g_assert_true(weft_node_input(y, 0).node == five.node);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  g_assert_null(st);
  const char *fetch[] = {"imp/y"};
  weft_tensor_t *out = NULL;
  g_assert_null(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 10.0);
  weft_tensor_unref(out);
  weft_session_free(s);

  int before = weft_graph_num_nodes(g);
  const char *bad[] = {"nope:0"};
  st = weft_graph_import_graphdef_mapped(g, bytes, len, "imp2", bad, &five, 1);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Attempted to map inputs that were not found in graph_def: [nope:0]");
  weft_status_free(st);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, before);
  weft_free(bytes);
  weft_graph_free(g);
}

/* device_count / visible_device_list of a local session: the CPU hidden leaves no device. */
static void test_device_count(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_binary(g, "Mul", "four", two, two, &st);
  g_assert_null(st);
  const char *fetch[] = {"four"};
  weft_tensor_t *out = NULL;

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_device_count(opts, "GPU", 0);
  weft_session_options_set_visible_gpus(opts, "0");
  weft_session_t *s = weft_session_new(g, opts, &st);
  g_assert_null(st);
  g_assert_null(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 4.0);
  g_assert_true(g_str_has_suffix(weft_session_node_device(s, "four"), "/device:CPU:0"));
  weft_tensor_unref(out);
  weft_session_free(s);

  weft_session_options_set_device_count(opts, "CPU", 0);
  weft_session_options_set_device_count(opts, "GPU", 0);
  weft_session_options_set_device_count(opts, "VULKAN", 0);
  weft_session_options_set_device_count(opts, "CUDA", 0);
  s = weft_session_new(g, opts, &st);
  g_assert_null(st);
  out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  g_assert_true(g_str_has_prefix(weft_status_message(st),
                                 "No devices: the session's device_count / visible_device_list "
                                 "hide all "));
  g_assert_null(out);
  weft_status_free(st);
  weft_session_free(s);

  weft_session_options_set_device_count(opts, "CPU", -1); /* the limit goes again */
  s = weft_session_new(g, opts, &st);
  g_assert_null(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_session_options_free(opts);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/bindings_api/inputs_and_controls", test_inputs_and_controls);
  g_test_add_func("/bindings_api/tensor_is_exclusive", test_tensor_is_exclusive);
  g_test_add_func("/bindings_api/import_input_map", test_import_input_map);
  g_test_add_func("/bindings_api/device_count", test_device_count);
  return g_test_run();
}
