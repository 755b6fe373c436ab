/* Tests of `weft bench --peer ort` (bench/bench_ort.c), run as a user runs it: the weft binary
 * spawned with ONNX Runtime's real library, which scripts/install-ort-peer.sh puts in the build
 * tree (or $WEFT_ORT_LIB names); without it the timed case is skipped with the reason. Checked:
 * the peer's column and JSON fields, its outputs equal to Weft's (a mismatch would turn the
 * figure into "failed: ..."), the reason printed when the library is absent (exit 0), and an
 * unknown peer as a usage error. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <string.h>

#include "process_util.h"

#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"

static bool no_weft(void) {
  if (g_file_test(WEFT_EXE, G_FILE_TEST_IS_EXECUTABLE)) return false;
  g_test_skip("weft binary not built at " WEFT_EXE);
  return true;
}

static void assert_contains(const char *text, const char *needle) {
  if (strstr(text, needle) == NULL) g_assert_cmpstr(text, ==, needle);
}

/* The library the bench would use: $WEFT_ORT_LIB, else the build tree's ort-peer/ copy; NULL
 * when neither exists (g_free). */
static char *ort_library(void) {
  const char *env = g_getenv("WEFT_ORT_LIB");
  if (env && *env) return g_file_test(env, G_FILE_TEST_EXISTS) ? g_strdup(env) : NULL;
  const char *bin = WEFT_BUILD_DIR "/ort-peer/node_modules/onnxruntime-node/bin";
  GDir *d = g_dir_open(bin, 0, NULL);
  char *found = NULL;
  const char *napi;
  while (d && !found && (napi = g_dir_read_name(d))) {
    char *lib = g_build_filename(bin, napi, "linux", "x64", "libonnxruntime.so.1", NULL);
    if (g_file_test(lib, G_FILE_TEST_EXISTS)) found = lib;
    else g_free(lib);
  }
  if (d) g_dir_close(d);
  return found;
}

/* The record of benchmark `name` in the --json file at path (unref), or NULL. */
static JsonObject *bench_record(const char *path, const char *name) {
  JsonParser *parser = json_parser_new();
  GError *error = NULL;
  g_assert_true(json_parser_load_from_file(parser, path, &error));
  g_assert_no_error(error);
  JsonArray *records = json_node_get_array(json_parser_get_root(parser));
  JsonObject *found = NULL;
  for (guint k = 0; k < json_array_get_length(records) && !found; k++) {
    JsonObject *rec = json_array_get_object_element(records, k);
    if (strcmp(json_object_get_string_member(rec, "name"), name) == 0)
      found = json_object_ref(rec);
  }
  g_object_unref(parser);
  return found;
}

static void test_usage(void) {
  if (no_weft()) return;
  const char *nosuch[] = {"bench", "--peer", "nosuch", "--only", "step/scalar_addv2", NULL};
  run_result_t r = run_program(WEFT_EXE, nosuch, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: unknown --peer 'nosuch' (the peers are: ort)\n");
  g_assert_cmpstr(r.out, ==, "");
  run_result_clear(&r);
  const char *lib_alone[] = {"bench", "--peer-lib", "/x.so", "--only", "step/scalar_addv2", NULL};
  r = run_program(WEFT_EXE, lib_alone, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: --peer-lib needs --peer ort\n");
  run_result_clear(&r);
}

/* A library that is not there: the row is still measured, the peer column is empty, and the
 * reason is printed under the table and in the JSON; the exit status is 0. */
static void test_absent(void) {
  if (no_weft()) return;
  char *dir = g_dir_make_tmp("weft-peer-XXXXXX", NULL);
  char *json = g_build_filename(dir, "bench.json", NULL);
  char *missing = g_build_filename(dir, "libonnxruntime.so.1", NULL);
  const char *args[] = {"bench", "--quick", "--peer", "ort", "--only", "step/scalar_addv2",
                        "--json", json, NULL};
  char *env_lib = g_strdup_printf("WEFT_ORT_LIB=%s", missing);
  const char *env[] = {env_lib, NULL};
  run_result_t r = run_program(WEFT_EXE, args, env);
  g_test_message("stdout: %s\nstderr: %s", r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 0);
  char *why = g_strdup_printf("peer: cannot open %s: %s: cannot open shared object file: No such "
                              "file or directory\n", missing, missing);
  assert_contains(r.out, why);
  assert_contains(r.out, "weft/peer");
  JsonObject *rec = bench_record(json, "step/scalar_addv2");
  g_assert_nonnull(rec);
  g_assert_false(json_object_get_boolean_member(rec, "skipped"));
  g_assert_true(json_object_get_double_member(rec, "weft") > 0);
  g_assert_true(json_object_get_null_member(rec, "peer"));
  g_assert_true(json_object_get_null_member(rec, "peer_ratio"));
  /* The note is the printed reason without "peer: " and the newline. */
  why[strlen(why) - 1] = '\0';
  g_assert_cmpstr(json_object_get_string_member(rec, "peer_note"), ==, why + strlen("peer: "));
  json_object_unref(rec);
  run_result_clear(&r);
  g_free(why);
  g_free(env_lib);
  g_unlink(json);
  g_rmdir(dir);
  g_free(missing);
  g_free(json);
  g_free(dir);
}

/* With ONNX Runtime installed: two small rows on one thread each side; both outputs matched
 * (no "failed:"), the peer's figure and ratio are in the table and the JSON. */
static void test_ort(void) {
  if (no_weft()) return;
  char *lib = ort_library();
  if (!lib) {
    g_test_skip("ONNX Runtime is not installed: run scripts/install-ort-peer.sh (or set "
                "WEFT_ORT_LIB)");
    return;
  }
  char *dir = g_dir_make_tmp("weft-peer-XXXXXX", NULL);
  char *json = g_build_filename(dir, "bench.json", NULL);
  const char *args[] = {"bench", "--quick", "--threads", "1", "--peer", "ort", "--peer-lib", lib,
                        "--only", "step/scalar_addv2", "--only", "matmul/256", "--json", json,
                        NULL};
  run_result_t r = run_program(WEFT_EXE, args, NULL);
  g_test_message("stdout: %s\nstderr: %s", r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "ort weft/peer");
  assert_contains(r.out, "peer: ONNX Runtime 1.");
  assert_contains(r.out, "1 intra-op thread, graph optimizations on");
  g_assert_null(strstr(r.out, "failed"));
  const char *rows[] = {"step/scalar_addv2", "matmul/256"};
  for (size_t k = 0; k < G_N_ELEMENTS(rows); k++) {
    JsonObject *rec = bench_record(json, rows[k]);
    g_assert_nonnull(rec);
    g_assert_true(json_object_get_null_member(rec, "peer_note"));
    double weft = json_object_get_double_member(rec, "weft");
    double peer = json_object_get_double_member(rec, "peer");
    double ratio = json_object_get_double_member(rec, "peer_ratio");
    g_assert_true(weft > 0 && peer > 0);
    /* The ratio is Weft's time over the peer's: for GFLOP/s that is peer / weft. */
    double want = strcmp(rows[k], "matmul/256") == 0 ? peer / weft : weft / peer;
    g_assert_cmpfloat_with_epsilon(ratio, want, 1e-4 * want);
    JsonObject *runs = json_object_get_object_member(rec, "peer_runs");
    g_assert_cmpint(json_object_get_int_member(runs, "runs"), ==, 3);
    json_object_unref(rec);
  }
  run_result_clear(&r);
  g_unlink(json);
  g_rmdir(dir);
  g_free(json);
  g_free(dir);
  g_free(lib);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/bench_peer/usage", test_usage);
  g_test_add_func("/bench_peer/absent", test_absent);
  g_test_add_func("/bench_peer/ort", test_ort);
  return g_test_run();
}
