/* Tests for the plugin loader: broken plugins on WEFT_PLUGIN_PATH are reported with file, symbol,
 * versions and reason, and skipped (a kernel constraining an attr its own op lacks included); the
 * same plugin reached through two paths loads once; the CPU plugin registers its backend and
 * kernels; and building a node of a plugin's op with weft_op_new finds the op before anything
 * else has loaded the plugins (docs/sdk.md, step 6). */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "plugin/plugin_internal.h"
#include "weft/weft.h"

static const weft_plugin_record_t *record_for(const char *file_part) {
  for (int k = 0; k < weft_plugins_count(); k++) {
    const weft_plugin_record_t *r = weft_plugins_get(k);
    if (strstr(r->path, file_part)) return r;
  }
  return NULL;
}

static void test_cpu_plugin_loaded(void) {
  const weft_plugin_record_t *r = record_for("libweft-cpu.so");
  g_assert_nonnull(r);
  g_assert_null(r->error);
  g_assert_cmpstr(r->name, ==, "cpu");
  g_assert_cmpuint(r->abi_major, ==, WEFT_ABI_MAJOR);
  g_assert_cmpstr(r->device_types, ==, "CPU");
  g_assert_cmpint(r->n_kernels, >, 50);
  g_assert_cmpint(weft_devices_count(), >=, 1);
  /* Found by type: the ABI 1.0 test plugin on the path adds a device of its own. */
  const weft_device_info_t *d = NULL;
  for (int k = 0; k < weft_devices_count() && !d; k++)
    if (strcmp(weft_devices_get(k)->device_type, "CPU") == 0) d = weft_devices_get(k);
  g_assert_nonnull(d);
  g_assert_cmpstr(d->name, ==, "/job:localhost/replica:0/task:0/device:CPU:0");
  g_assert_cmpstr(d->device_type, ==, "CPU");
  g_assert_false(d->gpu_like);
  g_assert_cmpuint(d->memory_bytes, >, 0);
}

static void test_same_plugin_two_paths_loads_once(void) {
  int loaded = 0;
  for (int k = 0; k < weft_plugins_count(); k++) {
    const weft_plugin_record_t *r = weft_plugins_get(k);
    if (r->name && strcmp(r->name, "cpu") == 0 && !r->error) loaded++;
  }
  g_assert_cmpint(loaded, ==, 1);
  /* Loading it again by file is not an error and adds nothing. */
  char *path = g_build_filename(WEFT_BUILD_DIR, "plugins", "cpu", "libweft-cpu.so", NULL);
  int before = weft_plugins_count();
  weft_status_t *st = weft_plugins_load_file(path);
  g_assert_null(st);
  g_assert_cmpint(weft_plugins_count(), ==, before);
  g_free(path);
}

static void test_missing_entry_symbol(void) {
  const weft_plugin_record_t *r = record_for("libweft-broken-no-entry.so");
  g_assert_nonnull(r);
  g_assert_nonnull(r->error);
  g_assert_nonnull(strstr(r->error, "libweft-broken-no-entry.so"));
  g_assert_nonnull(strstr(r->error, "missing entry symbol 'weft_plugin_entry'"));
}

static void test_bad_major(void) {
  const weft_plugin_record_t *r = record_for("libweft-broken-bad-major.so");
  g_assert_nonnull(r);
  g_assert_nonnull(r->error);
  char *want = g_strdup_printf("was built for ABI %d.0; this Weft provides ABI %d.%d (major versions "
                               "must match)", WEFT_ABI_MAJOR + 1, WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
  g_assert_nonnull(strstr(r->error, want));
  g_assert_nonnull(strstr(r->error, "plugin 'future'"));
  g_free(want);
}

static void test_init_fails(void) {
  const weft_plugin_record_t *r = record_for("libweft-broken-init-fails.so");
  g_assert_nonnull(r);
  g_assert_nonnull(r->error);
  g_assert_nonnull(strstr(r->error, "plugin 'flaky' init failed: device probe failed: no FLAKY "
                                    "hardware on bus 3"));
  /* What it registered before failing is gone. */
  for (int k = 0; k < weft_devices_count(); k++)
    g_assert_cmpstr(weft_devices_get(k)->device_type, !=, "FLAKY");
}

static void test_unknown_op_kernel(void) {
  const weft_plugin_record_t *r = record_for("libweft-broken-unknown-op-kernel.so");
  g_assert_nonnull(r);
  g_assert_nonnull(r->error);
  g_assert_nonnull(strstr(r->error, "kernel registered for unknown op 'NoSuchOpAnywhere' on device "
                                    "type CPU"));
  g_assert_null(weft__kernel_lookup("NoSuchOpAnywhere", "CPU", NULL));
}

static void test_kernel_attr_not_in_own_op(void) {
  const weft_plugin_record_t *r = record_for("libweft-broken-kernel-attr.so");
  g_assert_nonnull(r);
  g_assert_nonnull(r->error);
  char *want = g_strdup_printf("%s: plugin 'kernelattr' registered something invalid: kernel for "
                               "BrokenKernelAttrOp on CPU constrains attr 'T', which the op does "
                               "not have", r->path);
  g_assert_cmpstr(r->error, ==, want);
  g_free(want);
  /* Refused as a whole: its op is not registered either. */
  g_assert_null(weft__op_registry_lookup("BrokenKernelAttrOp"));
  g_assert_null(weft__kernel_lookup("BrokenKernelAttrOp", "CPU", NULL));
}

/* Runs first, before anything has loaded the plugins: weft_op_finish must load them to find a
 * plugin's op, as GraphDef import does. OldMinorScale comes from tests/plugins/sdk's ABI 1.0
 * plugin, which main puts on WEFT_PLUGIN_PATH. */
static void test_op_new_finds_plugin_op(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t x = weft_const_float(g, "x", 3.0f, &st);
  g_assert_null(st);
  weft_op_builder_t *b = weft_op_new(g, "OldMinorScale", "scaled");
  weft_op_add_input(b, x);
  weft_node_t *node = NULL;
  st = weft_op_finish(b, &node);
  if (st) g_error("weft_op_finish: %s", weft_status_message(st));
  g_assert_nonnull(node);
  g_assert_cmpstr(weft_node_op(node), ==, "OldMinorScale");
  /* An op nobody registers still fails, naming it. */
  b = weft_op_new(g, "NoSuchOpAnywhere", "nothing");
  st = weft_op_finish(b, NULL);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Op type not registered 'NoSuchOpAnywhere' (while building node 'nothing')");
  weft_status_free(st);
  weft_graph_free(g);
}

static void test_small_table(void) {
  const weft_plugin_record_t *r = record_for("libweft-broken-small-table.so");
  g_assert_nonnull(r);
  g_assert_nonnull(r->error);
  g_assert_nonnull(strstr(r->error, "is too small (struct_size 8"));
}

static void test_missing_path_entry(void) {
  const weft_plugin_record_t *r = record_for("/nonexistent/weft-plugins");
  g_assert_nonnull(r);
  g_assert_nonnull(strstr(r->error, "no such file or folder"));
}

static void test_load_file_errors(void) {
  weft_status_t *st = weft_plugins_load_file("/nonexistent/libweft-x.so");
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  g_assert_nonnull(strstr(weft_status_message(st), "/nonexistent/libweft-x.so: plugin file not found"));
  weft_status_free(st);
  /* A file that is not a shared object at all. */
  char *bogus = g_build_filename(g_get_tmp_dir(), "libweft-bogus-test.so", NULL);
  g_assert_true(g_file_set_contents(bogus, "not an ELF file", -1, NULL));
  st = weft_plugins_load_file(bogus);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "dlopen failed"));
  weft_status_free(st);
  g_unlink(bogus);
  g_free(bogus);
}

static void test_graph_still_runs(void) {
  /* Broken plugins on the path change nothing for a real graph. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t a = weft_const_float(g, "a", 2.0f, &st);
  g_assert_null(st);
  weft_output_t b = weft_const_float(g, "b", 5.0f, &st);
  g_assert_null(st);
  weft_binary(g, "Mul", "c", a, b, &st);
  g_assert_null(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  g_assert_null(st);
  const char *fetch[] = {"c"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  g_assert_null(st);
  g_assert_cmpfloat(((float *)weft_tensor_data(out))[0], ==, 10.0f);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  const char *broken = g_getenv("WEFT_TEST_BROKEN_PLUGIN_DIR");
  char *cpu_dir = g_build_filename(WEFT_BUILD_DIR, "plugins", "cpu", NULL);
  char *cpu_file = g_build_filename(cpu_dir, "libweft-cpu.so", NULL);
  /* The CPU plugin twice (folder and file) plus the build tree's own copy: loaded once. */
  char *old_minor = g_build_filename(WEFT_BUILD_DIR, "tests", "plugins", "sdk",
                                     "libweft-sdk-old-minor.so", NULL);
  char *path = g_strdup_printf("%s:%s:%s:%s:/nonexistent/weft-plugins", broken ? broken : "",
                               cpu_dir, cpu_file, old_minor);
  g_free(old_minor);
  g_setenv("WEFT_PLUGIN_PATH", path, TRUE);
  g_free(path);
  g_free(cpu_dir);
  g_free(cpu_file);
  /* First: nothing may have loaded the plugins before it. */
  g_test_add_func("/plugin_loader/op_new_finds_plugin_op", test_op_new_finds_plugin_op);
  g_test_add_func("/plugin_loader/cpu_plugin_loaded", test_cpu_plugin_loaded);
  g_test_add_func("/plugin_loader/same_plugin_two_paths_loads_once",
                  test_same_plugin_two_paths_loads_once);
  g_test_add_func("/plugin_loader/missing_entry_symbol", test_missing_entry_symbol);
  g_test_add_func("/plugin_loader/bad_major", test_bad_major);
  g_test_add_func("/plugin_loader/init_fails", test_init_fails);
  g_test_add_func("/plugin_loader/unknown_op_kernel", test_unknown_op_kernel);
  g_test_add_func("/plugin_loader/kernel_attr_not_in_own_op", test_kernel_attr_not_in_own_op);
  g_test_add_func("/plugin_loader/small_table", test_small_table);
  g_test_add_func("/plugin_loader/missing_path_entry", test_missing_path_entry);
  g_test_add_func("/plugin_loader/load_file_errors", test_load_file_errors);
  g_test_add_func("/plugin_loader/graph_still_runs", test_graph_still_runs);
  return g_test_run();
}
