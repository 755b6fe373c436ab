/* Registry objects (docs/architecture.md, "The registry"): a private registry starts with the
 * standard ops and no device, importing a GraphDef of standard ops loads no plugin, a plugin file
 * loaded into a private registry shares its devices with it, and the default is one object.
 * The cases run in the order added: the first ones check that nothing has loaded the default's
 * plugins yet, so none of them may touch the default's devices or sessions. */
#include <glib.h>
#include <string.h>

#include "plugin/plugin_internal.h"
#include "weft/weft.h"

#define CPU_PLUGIN WEFT_BUILD_DIR "/plugins/cpu/libweft-cpu.so"

/* The default's plugin records, read without loading anything. */
static int default_plugins_tried(void) {
  return weft_registry_plugin_count(weft__registry_process());
}

static void test_fresh_private(void) {
  weft_registry_t *reg = weft_registry_new();
  g_assert_nonnull(reg);
  g_assert_cmpint(weft_registry_device_count(reg), ==, 0);
  g_assert_cmpint(weft_registry_plugin_count(reg), ==, 0);
  g_assert_null(weft_registry_device_get(reg, 0));
  /* The standard ops, as many as the default's before any plugin. */
  int n_ops = weft_registry_op_count(reg);
  g_assert_cmpint(n_ops, >, 100);
  g_assert_cmpint(n_ops, ==, weft_registry_op_count(weft__registry_process()));

  weft_graph_t *g = weft_graph_new_in(reg);
  weft_status_t *st = NULL;
  weft_output_t a = weft_const_float(g, "a", 1.0f, &st);
  g_assert_null(st);
  weft_output_t b = weft_binary(g, "Add", "b", a, a, &st);
  g_assert_null(st);
  g_assert_nonnull(b.node);
  /* An op no registry knows: the same error as ever, and a private registry loads nothing. */
  weft_op_builder_t *op = weft_op_new(g, "NoSuchOpAnywhere", "x");
  weft_node_t *node = NULL;
  st = weft_op_finish(op, &node);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_true(
      g_str_has_prefix(weft_status_message(st), "Op type not registered 'NoSuchOpAnywhere'"));
  weft_status_free(st);
  g_assert_cmpint(default_plugins_tried(), ==, 0);
  weft_graph_free(g);
  weft_registry_free(reg);
  weft_registry_free(NULL);
}

static void test_standard_import_loads_nothing(void) {
  weft_registry_t *reg = weft_registry_new();
  weft_graph_t *g = weft_graph_new_in(reg);
  weft_status_t *st = NULL;
  int64_t dims[1] = {2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 1, dims, &st);
  g_assert_null(st);
  weft_output_t y = weft_binary(g, "Mul", "y", x, x, &st);
  g_assert_null(st);
  (void)y;
  void *bytes = NULL;
  size_t len = 0;
  g_assert_null(weft_graph_export_graphdef(g, &bytes, &len));
  weft_graph_free(g);
  weft_registry_free(reg);

  /* Into the default's ops, through weft_graph_new: every op is standard, so no plugin loads. */
  weft_graph_t *dg = weft_graph_new();
  st = weft_graph_import_graphdef(dg, bytes, len, "imported");
  g_assert_null(st);
  g_assert_cmpint(default_plugins_tried(), ==, 0);
  weft_graph_free(dg);
  weft_free(bytes);
}

static void test_private_plugin(void) {
  if (!g_file_test(CPU_PLUGIN, G_FILE_TEST_EXISTS)) {
    g_test_skip("the CPU plugin is not built");
    return;
  }
  weft_registry_t *reg = weft_registry_new();
  int standard_ops = weft_registry_op_count(reg);
  weft_status_t *st = weft_registry_load_plugin(reg, CPU_PLUGIN);
  g_assert_null(st);
  g_assert_cmpint(weft_registry_plugin_count(reg), ==, 1);
  const weft_plugin_record_t *r = weft_registry_plugin_get(reg, 0);
  g_assert_nonnull(r);
  g_assert_null(r->error);
  g_assert_cmpint(r->n_kernels, >, 0);
  g_assert_cmpint(weft_registry_op_count(reg), ==, standard_ops + r->n_ops);
  g_assert_cmpint(weft_registry_device_count(reg), >=, 1);
  const weft_device_info_t *d = weft_registry_device_get(reg, 0);
  g_assert_nonnull(d);
  g_assert_cmpstr(d->name, ==, "/job:localhost/replica:0/task:0/device:CPU:0");
  /* Loading it again, or through the default, is the same file: loaded once per process. */
  g_assert_null(weft_registry_load_plugin(reg, CPU_PLUGIN));
  g_assert_cmpint(weft_registry_plugin_count(reg), ==, 1);
  weft_registry_free(reg);
  /* The default owns what the plugin registered: it is still there after the private is gone. */
  g_assert_nonnull(weft__device_find("/job:localhost/replica:0/task:0/device:CPU:0"));
}

static void test_default_is_one_object(void) {
  weft_registry_t *a = weft_registry_default();
  weft_registry_t *b = weft_registry_default();
  g_assert_true(a == b);
  g_assert_true(a == weft__registry_process());
  /* Freeing the default does nothing. */
  weft_registry_free(a);
  g_assert_true(weft_registry_default() == a);
  g_assert_cmpint(weft_registry_device_count(a), ==, weft_devices_count());
  g_assert_cmpint(weft_registry_plugin_count(a), ==, weft_plugins_count());
  /* A private registry can take every plugin the default loaded. */
  weft_registry_t *reg = weft_registry_new();
  weft_registry_load_default(reg);
  g_assert_cmpint(weft_registry_device_count(reg), ==, weft_devices_count());
  weft_registry_free(reg);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/registry/fresh_private", test_fresh_private);
  g_test_add_func("/registry/standard_import_loads_nothing", test_standard_import_loads_nothing);
  g_test_add_func("/registry/private_plugin", test_private_plugin);
  g_test_add_func("/registry/default_is_one_object", test_default_is_one_object);
  return g_test_run();
}
