/* Tests for the `weft` command-line tool (core/tools/weft.c), run as a user would run it: the
 * built binary is spawned and its exit status, stdout and stderr checked. `devices` and `plugins`
 * report the CPU device and the cpu plugin (and broken plugins with their reasons, exiting 0),
 * `run --json` prints the known answers of the corpus graphs, and bad feeds, missing fetches,
 * corrupt graph files and bad command lines give the documented exit codes and error text. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process_util.h"
#include "weft/weft.h"

#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"

/* True (and the test skipped) when the binary is missing. */
static bool no_weft(void) {
  if (g_file_test(WEFT_EXE, G_FILE_TEST_IS_EXECUTABLE)) return false;
  g_test_skip("weft binary not built at " WEFT_EXE);
  return true;
}

/* Runs weft with args (NULL-terminated) and env overrides "NAME=VALUE" (may be NULL). */
static run_result_t run_weft(const char *const *args, const char *const *env) {
  return run_program(WEFT_EXE, args, env);
}

static char *corpus_graph(const char *name) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root != NULL ? g_strdup(root) : g_build_filename(WEFT_SOURCE_DIR, "..", "shared",
                                                                "corpus", NULL);
  char *path = g_build_filename(dir, "tf", "graphdef", name, NULL);
  g_free(dir);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    char *why = g_strdup_printf("corpus file %s not found (set WEFT_CORPUS)", path);
    g_test_skip(why);
    g_free(why);
    g_free(path);
    return NULL;
  }
  return path;
}

/* The line of text that contains needle, or NULL (caller g_free()s). */
static char *line_with(const char *text, const char *needle) {
  char **lines = g_strsplit(text, "\n", -1);
  char *found = NULL;
  for (int k = 0; lines[k] != NULL && found == NULL; k++) {
    if (strstr(lines[k], needle) != NULL) found = g_strdup(lines[k]);
  }
  g_strfreev(lines);
  return found;
}

/* The error line weft printed (stderr may also hold log lines, e.g. about a plugin that did not
 * load); "" if there is none. The caller g_free()s it. */
static char *error_line(const char *err) {
  char *line = line_with(err, "weft: error: ");
  if (line != NULL && !g_str_has_prefix(line, "weft: error: ")) g_clear_pointer(&line, g_free);
  return line != NULL ? line : g_strdup("");
}

static void assert_contains(const char *text, const char *needle) {
  if (strstr(text, needle) == NULL) g_assert_cmpstr(text, ==, needle);
}

/* --- JSON output --- */

/* Flattens a JSON number or nested array into doubles. */
static void flatten(JsonNode *node, GArray *out) {
  if (JSON_NODE_HOLDS_ARRAY(node)) {
    JsonArray *a = json_node_get_array(node);
    for (guint k = 0; k < json_array_get_length(a); k++)
      flatten(json_array_get_element(a, k), out);
  } else {
    double v = json_node_get_double(node);
    g_array_append_val(out, v);
  }
}

/* Parses `weft run --json` output and checks fetch `name`: dtype, shape and values. */
static void assert_json_fetch(const char *json, const char *name, const char *dtype,
                              const int64_t *shape, int rank, const double *values, int n,
                              double tol) {
  JsonParser *parser = json_parser_new();
  GError *error = NULL;
  g_assert_true(json_parser_load_from_data(parser, json, -1, &error));
  g_assert_no_error(error);
  JsonNode *root = json_parser_get_root(parser);
  g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
  JsonObject *obj = json_node_get_object(root);
  g_assert_true(json_object_has_member(obj, name));
  JsonObject *t = json_object_get_object_member(obj, name);
  g_assert_nonnull(t);
  g_assert_cmpstr(json_object_get_string_member(t, "dtype"), ==, dtype);
  JsonArray *sh = json_object_get_array_member(t, "shape");
  g_assert_nonnull(sh);
  g_assert_cmpint(json_array_get_length(sh), ==, rank);
  for (int k = 0; k < rank; k++) g_assert_cmpint(json_array_get_int_element(sh, k), ==, shape[k]);
  GArray *vals = g_array_new(FALSE, FALSE, sizeof(double));
  flatten(json_object_get_member(t, "values"), vals);
  g_assert_cmpint(vals->len, ==, n);
  for (int k = 0; k < n; k++) {
    double have = g_array_index(vals, double, k);
    if (fabs(have - values[k]) > tol + tol * fabs(values[k]))
      g_assert_cmpfloat(have, ==, values[k]);
  }
  g_array_free(vals, TRUE);
  g_object_unref(parser);
}

/* ---------------------------------------------------------------------------------------------
 * devices, plugins, help, version */

static void test_devices(void) {
  if (no_weft()) return;
  run_result_t r = run_weft((const char *[]){"devices", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  char *cpu = line_with(r.out, "/job:localhost/replica:0/task:0/device:CPU:0");
  g_assert_nonnull(cpu);
  assert_contains(cpu, "  CPU  ");
  /* Memory in binary units. */
  g_assert_true(strstr(cpu, "iB") != NULL || strstr(cpu, "bytes") != NULL);
  assert_contains(cpu, ", OpenBLAS ");
  /* On a CPU with AVX-512 libweft asks OpenBLAS for its SkylakeX kernels (Debian 12's OpenBLAS
   * falls back to its generic ones on CPUs newer than itself), unless the user chose. */
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512vl");
  if (avx512 && !g_getenv("OPENBLAS_CORETYPE")) assert_contains(cpu, "OpenBLAS SkylakeX kernels");
  if (__builtin_cpu_supports("avx2")) {
    run_result_t chosen = run_weft((const char *[]){"devices", NULL},
                                   (const char *[]){"OPENBLAS_CORETYPE=Haswell", NULL});
    g_assert_cmpint(chosen.exit_code, ==, 0);
    assert_contains(chosen.out, "OpenBLAS Haswell kernels");
    run_result_clear(&chosen);
  }
#endif
  g_free(cpu);
  run_result_clear(&r);
}

static void test_plugins(void) {
  if (no_weft()) return;
  run_result_t r = run_weft((const char *[]){"plugins", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  /* The report is on stdout; failures are not also logged to stderr. */
  g_assert_cmpstr(r.err, ==, "");
  char *cpu = line_with(r.out, "libweft-cpu");
  g_assert_nonnull(cpu);
  g_assert_null(strstr(cpu, "FAILED"));
  assert_contains(cpu, "ABI 1.");
  assert_contains(cpu, "devices: CPU");
  assert_contains(cpu, "kernels: ");
  g_free(cpu);
  run_result_clear(&r);
}

/* Broken plugins are listed with the reason each was refused, and the report still exits 0. */
static void test_plugins_broken(void) {
  if (no_weft()) return;
  const char *dir = g_getenv("WEFT_TEST_BROKEN_PLUGIN_DIR");
  if (dir == NULL) dir = WEFT_BUILD_DIR "/tests/plugins";
  char *probe = g_build_filename(dir, "libweft-broken-no-entry.so", NULL);
  bool have = g_file_test(probe, G_FILE_TEST_EXISTS);
  g_free(probe);
  if (!have) {
    g_test_skip("broken test plugins not built (WEFT_TEST_BROKEN_PLUGIN_DIR)");
    return;
  }
  char *env = g_strdup_printf("WEFT_PLUGIN_PATH=%s", dir);
  run_result_t r = run_weft((const char *[]){"plugins", NULL}, (const char *[]){env, NULL});
  g_free(env);
  g_assert_cmpint(r.exit_code, ==, 0);
  /* The healthy plugin still loads beside them. */
  char *cpu = line_with(r.out, "libweft-cpu");
  g_assert_nonnull(cpu);
  g_assert_null(strstr(cpu, "FAILED"));
  g_free(cpu);
  const struct {
    const char *file;
    const char *reason; /* what the loader's reason must say */
  } broken[] = {
      {"libweft-broken-no-entry.so", "missing entry symbol 'weft_plugin_entry'"},
      {"libweft-broken-bad-major.so", "major versions must match"},
      {"libweft-broken-init-fails.so", "init failed: device probe failed"},
      {"libweft-broken-small-table.so", "too small"},
      {"libweft-broken-unknown-op-kernel.so", "unknown op"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(broken); k++) {
    char *line = line_with(r.out, broken[k].file);
    if (line == NULL) g_assert_cmpstr(r.out, ==, broken[k].file);
    assert_contains(line, "FAILED: ");
    const char *reason = strstr(line, "FAILED: ") + strlen("FAILED: ");
    g_assert_cmpint(strlen(reason), >, 0);
    assert_contains(reason, broken[k].reason);
    g_free(line);
  }
  run_result_clear(&r);
}

static void test_version_and_help(void) {
  if (no_weft()) return;
  run_result_t r = run_weft((const char *[]){"--version", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "weft "));
  run_result_clear(&r);
  /* --help is laid out for help2man: the usage first, one "or:" line per command. */
  r = run_weft((const char *[]){"--help", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "Usage: weft COMMAND [OPTIONS]\n  or:  weft devices "));
  assert_contains(r.out, "\n  or:  weft bench [--only NAME]");
  assert_contains(r.out, "\nOptions:\n  -V, --version  print the version and exit\n");
  g_assert_cmpstr(r.err, ==, "");
  run_result_clear(&r);
  r = run_weft((const char *[]){"help", "bench", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "weft bench [OPTION");
  assert_contains(r.out, "--only=NAME");
  run_result_clear(&r);
  r = run_weft((const char *[]){"help", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "devices");
  assert_contains(r.out, "plugins");
  assert_contains(r.out, "run");
  run_result_clear(&r);
  r = run_weft((const char *[]){"help", "run", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "--feed");
  assert_contains(r.out, "--json");
  run_result_clear(&r);
}

static void test_usage_errors(void) {
  if (no_weft()) return;
  run_result_t r = run_weft((const char *[]){NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_true(g_str_has_prefix(r.err, "weft: error: no command given\nUsage: weft COMMAND"));
  g_assert_cmpstr(r.out, ==, "");
  run_result_clear(&r);
  r = run_weft((const char *[]){"frobnicate", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: unknown command 'frobnicate'");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--fetch", "c", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "--graph FILE.pb is required");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--graph", "x.pb", "--fetch", "c", "--feed", "a", NULL},
               NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: --feed 'a' has no '='");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--graph", "x.pb", "--fetch", "c", "--feed", "a:floot=1",
                                NULL},
               NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "'floot' is neither an output index nor a known dtype");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--graph", "x.pb", "--bogus", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "--bogus");
  run_result_clear(&r);
}

/* Every tool: --version and --help on stdout with exit 0 (the help laid out for help2man, which
 * makes the man pages from them), and a bad option as "PROG: error: ..." on stderr, exit 2. */
static void test_tools_version_help_usage(void) {
  static const struct {
    const char *path, *prog;
  } tools[] = {
      {WEFT_BUILD_DIR "/core/tools/weftd", "weftd"},
      {WEFT_BUILD_DIR "/core/tools/weft-train", "weft-train"},
      {WEFT_BUILD_DIR "/conformance/weft-conformance", "weft-conformance"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(tools); k++) {
    const char *prog = tools[k].prog;
    run_result_t r = run_program(tools[k].path, (const char *[]){"--version", NULL}, NULL);
    g_assert_cmpint(r.exit_code, ==, 0);
    char *want = g_strdup_printf("%s 0.1.0", prog);
    g_assert_true(g_str_has_prefix(r.out, want));
    g_free(want);
    run_result_clear(&r);
    r = run_program(tools[k].path, (const char *[]){"--help", NULL}, NULL);
    g_assert_cmpint(r.exit_code, ==, 0);
    want = g_strdup_printf("Usage: %s [OPTION]...\n\n", prog);
    g_assert_true(g_str_has_prefix(r.out, want));
    g_free(want);
    assert_contains(r.out, "\nOptions:\n");
    assert_contains(r.out, "  -V, --version ");
    g_assert_cmpstr(r.err, ==, "");
    run_result_clear(&r);
    r = run_program(tools[k].path, (const char *[]){"--bogus", NULL}, NULL);
    g_assert_cmpint(r.exit_code, ==, 2);
    want = g_strdup_printf("%s: error: Unknown option --bogus\nTry '%s --help'.\n", prog, prog);
    g_assert_cmpstr(r.err, ==, want);
    g_free(want);
    g_assert_cmpstr(r.out, ==, "");
    run_result_clear(&r);
  }
  /* weft-train: an argument left over names itself. */
  run_result_t r = run_program(WEFT_BUILD_DIR "/core/tools/weft-train",
                               (const char *[]){"--local", "stray", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_cmpstr(r.err, ==, "weft-train: error: unexpected argument 'stray'\n"
                             "Try 'weft-train --help'.\n");
  run_result_clear(&r);
  /* The man pages, when help2man was there to make them. */
  if (g_file_test(WEFT_BUILD_DIR "/core/tools/weft.1", G_FILE_TEST_EXISTS)) {
    const char *pages[] = {WEFT_BUILD_DIR "/core/tools/weft.1", WEFT_BUILD_DIR "/core/tools/weftd.1",
                           WEFT_BUILD_DIR "/core/tools/weft-train.1",
                           WEFT_BUILD_DIR "/conformance/weft-conformance.1"};
    for (size_t k = 0; k < G_N_ELEMENTS(pages); k++) {
      char *text = NULL;
      g_assert_true(g_file_get_contents(pages[k], &text, NULL, NULL));
      assert_contains(text, ".SH SYNOPSIS");
      assert_contains(text, ".SH OPTIONS");
      g_free(text);
    }
  } else {
    g_test_message("no man pages in the build (help2man missing?)");
  }
}

/* ---------------------------------------------------------------------------------------------
 * weft run on the corpus */

static void test_run_multiplication(void) {
  if (no_weft()) return;
  char *g = corpus_graph("multiplication.pb");
  if (g == NULL) return;
  /* `a=2` is an integer in JSON; the placeholder's float dtype decides. */
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", "a=2", "--feed", "b=3",
                                         "--fetch", "c", "--json", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_json_fetch(r.out, "c", "float32", NULL, 0, (double[]){6}, 1, 0);
  run_result_clear(&r);
  /* Text output: NAME = tensor. */
  r = run_weft((const char *[]){"run", "--graph", g, "--feed", "a=2.5", "--feed", "b=4", "--fetch",
                                "c:0", NULL},
               NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "c:0 = float32"));
  assert_contains(r.out, "10");
  run_result_clear(&r);
  /* A target alone runs and prints nothing. */
  r = run_weft((const char *[]){"run", "--graph", g, "--feed", "a=1", "--feed", "b=1", "--target",
                                "c", NULL},
               NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==, "");
  run_result_clear(&r);
  g_free(g);
}

static void test_run_addition_int32(void) {
  if (no_weft()) return;
  char *g = corpus_graph("addition_int32.pb");
  if (g == NULL) return;
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", "x=2147483000", "--feed",
                                         "y:0:int32=-1000", "--fetch", "z", "--json", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_json_fetch(r.out, "z", "int32", NULL, 0, (double[]){2147482000.0}, 1, 0);
  run_result_clear(&r);
  g_free(g);
}

static void test_run_regression(void) {
  if (no_weft()) return;
  char *g = corpus_graph("regression_frozen.pb");
  if (g == NULL) return;
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", "X=[[1,2],[3,-4]]",
                                         "--fetch", "pred", "--fetch", "W", "--json", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  double want[4];
  const double xs[] = {1, 2, 3, -4};
  for (int k = 0; k < 4; k++) want[k] = xs[k] * 0.21396178 + 1.04952538;
  assert_json_fetch(r.out, "pred", "float32", (int64_t[]){2, 2}, 2, want, 4, 1e-6);
  assert_json_fetch(r.out, "W", "float32", NULL, 0, (double[]){0.21396178}, 1, 1e-7);
  run_result_clear(&r);
  g_free(g);
}

/* The MLPs' answers from the CLI match the same graph run in-process (which test_graphdef
 * checks against a double-precision reference). */
static void check_mlp_against_library(const char *file, const char *input, const char *output,
                                      int n_in, int batch, int n_out) {
  if (no_weft()) return;
  char *g = corpus_graph(file);
  if (g == NULL) return;
  GString *json = g_string_new("[");
  float *xs = g_new(float, (gsize)batch * n_in);
  for (int b = 0; b < batch; b++) {
    g_string_append(json, b ? ",[" : "[");
    for (int i = 0; i < n_in; i++) {
      xs[b * n_in + i] = (float)((double)((b * n_in + i) % 17) / 8.0 - 1.0);
      g_string_append_printf(json, "%s%.9g", i ? "," : "", xs[b * n_in + i]);
    }
    g_string_append(json, "]");
  }
  g_string_append(json, "]");
  char *feed = g_strdup_printf("%s=%s", input, json->str);
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", feed, "--fetch", output,
                                         "--json", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 0);

  weft_graph_t *graph = weft_graph_new();
  weft_status_t *st = weft_graph_import_graphdef_file(graph, g, NULL);
  g_assert_null(st);
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_t *s = weft_session_new(graph, opts, &st);
  weft_session_options_free(opts);
  g_assert_null(st);
  weft_tensor_t *x = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, (int64_t[]){batch, n_in}, xs,
                                               sizeof(float) * batch * n_in, &st);
  g_assert_null(st);
  weft_tensor_t *y = NULL;
  st = weft_session_run(s, (const char *[]){input}, &x, 1, (const char *[]){output}, &y, 1, NULL,
                        0);
  if (st) g_assert_cmpstr(weft_status_message(st), ==, NULL);
  double *want = g_new(double, (gsize)batch * n_out);
  for (int k = 0; k < batch * n_out; k++) want[k] = weft_tensor_get_double(y, k);
  assert_json_fetch(r.out, output, "float32", (int64_t[]){batch, n_out}, 2, want, batch * n_out,
                    1e-6);
  g_free(want);
  weft_tensor_unref(y);
  weft_tensor_unref(x);
  weft_session_free(s);
  weft_graph_free(graph);
  run_result_clear(&r);
  g_free(feed);
  g_free(xs);
  g_string_free(json, TRUE);
  g_free(g);
}

static void test_run_mlp(void) {
  check_mlp_against_library("mlp_5_5_1_frozen.pb", "x", "Identity", 5, 3, 1);
}

static void test_run_fc_layers(void) {
  check_mlp_against_library("fc_layers_frozen.pb", "X", "output", 784, 2, 10);
}

/* ---------------------------------------------------------------------------------------------
 * weft run errors */

static void test_run_bad_feed_dtype(void) {
  if (no_weft()) return;
  char *g = corpus_graph("multiplication.pb");
  if (g == NULL) return;
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", "a:int32=2", "--feed",
                                         "b=3", "--fetch", "c", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  g_assert_cmpstr(r.out, ==, "");
  char *line = error_line(r.err);
  g_assert_cmpstr(line, ==,
                  "weft: error: INVALID_ARGUMENT: Feed 'a': expected a tensor of type float32 but "
                  "got int32");
  g_free(line);
  run_result_clear(&r);
  /* A value that is not JSON at all. */
  r = run_weft((const char *[]){"run", "--graph", g, "--feed", "a=[1,", "--feed", "b=3", "--fetch",
                                "c", NULL},
               NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  line = error_line(r.err);
  g_assert_true(g_str_has_prefix(line, "weft: error: INVALID_ARGUMENT: --feed a=[1,: "));
  g_free(line);
  run_result_clear(&r);
  g_free(g);
}

static void test_run_bad_feed_shape(void) {
  if (no_weft()) return;
  char *g = corpus_graph("mlp_5_5_1_frozen.pb");
  if (g == NULL) return;
  /* x is [?,5]: three columns cannot multiply the 5x5 kernel. */
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", "x=[[1,2,3]]", "--fetch",
                                         "Identity", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  g_assert_cmpstr(r.out, ==, "");
  char *line = error_line(r.err);
  g_assert_cmpstr(line, ==,
                  "weft: error: INVALID_ARGUMENT: Feed 'x': cannot feed a value of shape [1,3] to "
                  "a tensor of shape [?,5]");
  g_free(line);
  run_result_clear(&r);
  g_free(g);
}

static void test_run_missing_fetch(void) {
  if (no_weft()) return;
  char *g = corpus_graph("multiplication.pb");
  if (g == NULL) return;
  run_result_t r = run_weft((const char *[]){"run", "--graph", g, "--feed", "a=1", "--feed", "b=1",
                                         "--fetch", "no_such_node", NULL},
                        NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  char *line = error_line(r.err);
  g_assert_cmpstr(line, ==,
                  "weft: error: NOT_FOUND: The tensor 'no_such_node' does not exist in the graph: "
                  "no node 'no_such_node'");
  g_free(line);
  run_result_clear(&r);
  g_free(g);
}

static void test_run_corrupt_graph(void) {
  if (no_weft()) return;
  char *path = NULL;
  int fd = g_file_open_tmp("weft-cli-XXXXXX.pb", &path, NULL);
  g_assert_cmpint(fd, >=, 0);
  close(fd);
  uint8_t junk[100];
  memset(junk, 0xff, sizeof junk);
  g_assert_true(g_file_set_contents(path, (const char *)junk, sizeof junk, NULL));
  run_result_t r = run_weft((const char *[]){"run", "--graph", path, "--fetch", "c", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  g_assert_cmpstr(r.out, ==, "");
  char *want = g_strdup_printf(
      "weft: error: INVALID_ARGUMENT: while importing %s: could not parse GraphDef (100 bytes)",
      path);
  char *line = error_line(r.err);
  g_assert_cmpstr(line, ==, want);
  g_free(line);
  g_free(want);
  run_result_clear(&r);
  g_unlink(path);
  /* A file that is not there. */
  r = run_weft((const char *[]){"run", "--graph", path, "--fetch", "c", NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 1);
  line = error_line(r.err);
  g_assert_true(g_str_has_prefix(line, "weft: error: NOT_FOUND: "));
  assert_contains(line, path);
  g_free(line);
  run_result_clear(&r);
  g_free(path);
}

/* `weft bench` writes one well-formed record per benchmark (figures are not judged here). */
static void test_bench_json(void) {
  if (no_weft()) return;
  char *dir = g_dir_make_tmp("weft-bench-XXXXXX", NULL);
  char *path = g_build_filename(dir, "bench.json", NULL);
  const char *args[] = {"bench", "--quick", "--only", "step", "--json", path, NULL};
  run_result_t r = run_weft(args, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "step/scalar_addv2");
  assert_contains(r.out, "step/chain_100");
  JsonParser *parser = json_parser_new();
  GError *error = NULL;
  g_assert_true(json_parser_load_from_file(parser, path, &error));
  g_assert_no_error(error);
  JsonArray *records = json_node_get_array(json_parser_get_root(parser));
  guint measured = 0;
  for (guint k = 0; k < json_array_get_length(records); k++) {
    JsonObject *rec = json_array_get_object_element(records, k);
    const char *name = json_object_get_string_member(rec, "name");
    g_assert_nonnull(strstr(name, "step/"));
    /* Rows whose parts are not built yet are reported as skipped, with the reason. */
    if (json_object_get_boolean_member(rec, "skipped")) {
      g_assert_nonnull(json_object_get_string_member(rec, "note"));
      continue;
    }
    /* "step" is the group step/: remote_step/scalar is not in it (/cli/bench/remote runs it). */
    g_assert_true(g_str_has_prefix(name, "step/"));
    measured++;
    /* Both rows state an absolute target: the verdict is there, whichever it is. */
    const char *target = json_object_get_string_member(rec, "target");
    g_assert_true(strcmp(target, "met") == 0 || strcmp(target, "missed") == 0);
    g_assert_cmpstr(json_object_get_string_member(rec, "unit"), ==, "us");
    g_assert_cmpfloat(json_object_get_double_member(rec, "weft"), >, 0.0);
    JsonObject *runs = json_object_get_object_member(rec, "weft_runs");
    g_assert_cmpint(json_object_get_int_member(runs, "runs"), ==, 3);
    /* A short body is called several times per run (about 20 ms each); never zero times. */
    g_assert_cmpint(json_object_get_int_member(runs, "calls_per_run"), >=, 1);
    g_assert_cmpfloat(json_object_get_double_member(runs, "min"), <=,
                      json_object_get_double_member(runs, "max"));
  }
  g_assert_cmpuint(measured, ==, 2);
  g_object_unref(parser);
  /* The table has the target column; progress went to stderr, not into the table. */
  char *header = line_with(r.out, "benchmark");
  g_assert_nonnull(header);
  assert_contains(header, " ratio target  note");
  g_free(header);
  g_assert_null(strstr(r.out, "remote_step"));
  g_assert_null(strstr(r.out, "bench: step/scalar_addv2 done"));
  assert_contains(r.err, "bench: step/scalar_addv2 done");
  run_result_clear(&r);
  /* An exact name selects that row alone; a glob the rows it matches whole. */
  const char *exact[] = {"bench", "--quick", "--only", "step/chain_100", "--json", path, NULL};
  r = run_weft(exact, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_null(strstr(r.out, "step/scalar_addv2"));
  assert_contains(r.out, "step/chain_100");
  run_result_clear(&r);
  const char *glob[] = {"bench", "--quick", "--only", "*/scalar_addv2", "--json", path, NULL};
  r = run_weft(glob, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "step/scalar_addv2");
  g_assert_null(strstr(r.out, "step/chain_100"));
  run_result_clear(&r);
  /* A substring is not a name: "scalar_addv2" (of step/scalar_addv2) matches nothing. */
  const char *none[] = {"bench", "--only", "no-such-benchmark", "--only", "scalar_addv2", NULL};
  r = run_weft(none, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  g_assert_cmpstr(r.out, ==, "");
  char *err_line = error_line(r.err);
  g_assert_cmpstr(err_line, ==, "weft: error: no benchmark matches --only 'no-such-benchmark', 'scalar_addv2'");
  g_free(err_line);
  run_result_clear(&r);
  g_unlink(path);
  g_rmdir(dir);
  g_free(path);
  g_free(dir);
}

/* The record of one benchmark in a `weft bench --json` file (a new reference, or NULL). */
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

/* `weft bench --device` takes a device spec, a type or a type and ordinal in any case, runs the
 * kernel rows there (a device other than the CPU is a report against the CPU baseline), and
 * refuses a device the machine does not have, naming those it has. */
static void test_bench_device(void) {
  if (no_weft()) return;
  const char *missing[] = {"bench", "--device", "tpu:0", "--only", "matmul/256", NULL};
  run_result_t r = run_weft(missing, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: --device 'tpu:0' is not a device of this machine (it has: ");
  assert_contains(r.err, "/device:CPU:0");
  run_result_clear(&r);
  const char *bad[] = {"bench", "--device", "CPU:zero", "--only", "matmul/256", NULL};
  r = run_weft(bad, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: --device 'CPU:zero' is not a device of this machine");
  run_result_clear(&r);

  const char *list[] = {"devices", NULL};
  r = run_weft(list, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  bool have_vulkan = strstr(r.out, "device:VULKAN:0") != NULL;
  run_result_clear(&r);
  char *dir = g_dir_make_tmp("weft-bench-XXXXXX", NULL);
  char *path = g_build_filename(dir, "bench.json", NULL);
  const struct {
    const char *given, *spec, *note;
  } cases[] = {
      {"cpu", "/device:CPU:0", "target >= 0.95x"},
      {"Vulkan", "/device:VULKAN:0", "report: this device against the CPU"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    if (k == 1 && !have_vulkan) {
      g_test_message("no Vulkan device here (lavapipe missing?): its case is left out");
      continue;
    }
    const char *args[] = {"bench", "--quick", "--device", cases[k].given, "--only", "matmul/256",
                          "--json", path, NULL};
    r = run_weft(args, NULL);
    g_test_message("stdout: %s\nstderr: %s", r.out, r.err);
    g_assert_cmpint(r.exit_code, ==, 0);
    JsonObject *rec = bench_record(path, "matmul/256");
    g_assert_nonnull(rec);
    g_assert_false(json_object_get_boolean_member(rec, "skipped"));
    char *want = g_strdup_printf("device=%s", cases[k].spec);
    assert_contains(json_object_get_string_member(rec, "parameters"), want);
    g_free(want);
    g_assert_cmpstr(json_object_get_string_member(rec, "note"), ==, cases[k].note);
    /* The CPU row has a target, judged; another device's row is a report without one. */
    if (k == 0)
      g_assert_nonnull(json_object_get_string_member(rec, "target"));
    else
      g_assert_true(json_object_get_null_member(rec, "target"));
    g_assert_cmpfloat(json_object_get_double_member(rec, "weft"), >, 0.0);
    json_object_unref(rec);
    run_result_clear(&r);
  }
  g_unlink(path);
  g_rmdir(dir);
  g_free(path);
  g_free(dir);
}

/* The placement example (what scripts/demo.sh runs): its results and its placement log. */
static void test_example_placement(void) {
  const char *exe = WEFT_BUILD_DIR "/examples/placement";
  char *argv[] = {(char *)exe, NULL};
  char *out = NULL, *err = NULL;
  int wait_status = 0;
  GError *error = NULL;
  g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err,
                             &wait_status, &error));
  g_assert_no_error(error);
  g_test_message("stdout: %s\nstderr: %s", out, err);
  g_assert_true(WIFEXITED(wait_status));
  g_assert_cmpint(WEXITSTATUS(wait_status), ==, 0);
  assert_contains(out, "product = float32[2,2] [19, 25, 41.5, 56.5]\n");
  assert_contains(out, "step_after_increment = int64[] 1\nstep_after_increment = int64[] 2\n");
  const char *cpu = "/job:localhost/replica:0/task:0/device:CPU:0";
  char *want = g_strdup_printf("weights: (VariableV2): %s\n", cpu);
  assert_contains(err, want);
  g_free(want);
  want = g_strdup_printf("weights/Assign: (Assign): %s\n", cpu);
  assert_contains(err, want);
  g_free(want);
  /* Pinned to /gpu:0: CUDA:0 where there is one (CUDA has int64 variables, as TensorFlow's GPU
   * kernels do), else soft-placed onto the CPU (Vulkan has none). */
  const char *step_dev = cpu;
  for (int i = 0; i < weft_devices_count(); i++)
    if (strcmp(weft_devices_get(i)->device_type, "CUDA") == 0)
      step_dev = "/job:localhost/replica:0/task:0/device:CUDA:0";
  want = g_strdup_printf("global_step: (VariableV2): %s\n", step_dev);
  assert_contains(err, want);
  g_free(want);
  want = g_strdup_printf("increment_step: (AssignAdd): %s\n", step_dev);
  assert_contains(err, want);
  g_free(want);
  assert_contains(err, "product: (MatMul): /job:localhost/replica:0/task:0/device:");
  g_free(out);
  g_free(err);
}

/* `weft bench`'s remote step runs against a weftd child and is measured beside a raw gRPC call:
 * the record is a measurement (not skipped, not failed) with both figures (no timing judged). */
static void test_bench_remote(void) {
  if (no_weft()) return;
  char *dir = g_dir_make_tmp("weft-bench-XXXXXX", NULL);
  char *path = g_build_filename(dir, "bench.json", NULL);
  const char *args[] = {"bench", "--quick", "--only", "remote_step/", "--json", path, NULL};
  run_result_t r = run_weft(args, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "remote_step/scalar");
  JsonParser *parser = json_parser_new();
  GError *error = NULL;
  g_assert_true(json_parser_load_from_file(parser, path, &error));
  g_assert_no_error(error);
  JsonArray *records = json_node_get_array(json_parser_get_root(parser));
  g_assert_cmpuint(json_array_get_length(records), ==, 1);
  JsonObject *rec = json_array_get_object_element(records, 0);
  g_assert_cmpstr(json_object_get_string_member(rec, "name"), ==, "remote_step/scalar");
  if (json_object_get_boolean_member(rec, "skipped")) {
    g_test_message("note: %s", json_object_get_string_member(rec, "note"));
  }
  g_assert_false(json_object_get_boolean_member(rec, "skipped"));
  g_assert_cmpstr(json_object_get_string_member(rec, "unit"), ==, "us");
  g_assert_cmpfloat(json_object_get_double_member(rec, "weft"), >, 0.0);
  g_assert_cmpfloat(json_object_get_double_member(rec, "baseline"), >, 0.0);
  g_assert_cmpfloat(json_object_get_double_member(rec, "ratio"), >, 0.0);
  g_assert_cmpstr(json_object_get_string_member(rec, "baseline_name"), ==, "raw gRPC unary call");
  /* The raw call goes into another process, as the step goes into weftd. */
  assert_contains(json_object_get_string_member(rec, "parameters"),
                  "to an echo service in a child process");
  JsonObject *runs = json_object_get_object_member(rec, "baseline_runs");
  g_assert_cmpint(json_object_get_int_member(runs, "runs"), ==, 3);
  g_assert_cmpfloat(json_object_get_double_member(runs, "min"), <=,
                    json_object_get_double_member(runs, "max"));
  g_object_unref(parser);
  run_result_clear(&r);
  g_unlink(path);
  g_rmdir(dir);
  g_free(path);
  g_free(dir);
}

/* `weft bench --only netns_transfer --only netns_step` measures the transfers across network
 * namespaces it makes itself (bench/bench_netns.c) beside a raw gRPC call between the same
 * namespaces: the transfer alone (task 1's trace) and the whole step, each row with positive
 * figures and a ratio, their parameters saying no shared-memory segment was used; or, where
 * namespaces cannot be made (not root, no `ip`), every row skipped with the reason. */
static void test_bench_netns(void) {
  if (no_weft()) return;
  char *dir = g_dir_make_tmp("weft-bench-XXXXXX", NULL);
  char *path = g_build_filename(dir, "bench.json", NULL);
  const char *args[] = {"bench", "--quick",        "--only", "netns_transfer", "--only",
                        "netns_step", "--json", path, NULL};
  gint64 t0 = g_get_monotonic_time();
  run_result_t r = run_weft(args, NULL);
  g_test_message("stdout: %s\nstderr: %s", r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 60 * G_USEC_PER_SEC);
  const char *names[] = {"netns_transfer/1KiB", "netns_transfer/1MiB", "netns_step/1KiB",
                         "netns_step/1MiB"};
  for (size_t k = 0; k < G_N_ELEMENTS(names); k++) {
    JsonObject *rec = bench_record(path, names[k]);
    g_assert_nonnull(rec);
    const char *note = json_object_get_string_member(rec, "note");
    if (json_object_get_boolean_member(rec, "skipped")) {
      /* A skip says why; a failure ("failed: ...") is not a skip. */
      g_test_message("%s: %s", names[k], note);
      g_assert_nonnull(note);
      g_assert_false(g_str_has_prefix(note, "failed"));
      if (geteuid() != 0) assert_contains(note, "not root");
    } else {
      g_assert_cmpstr(json_object_get_string_member(rec, "unit"), ==, "GB/s");
      g_assert_cmpfloat(json_object_get_double_member(rec, "weft"), >, 0.0);
      g_assert_cmpfloat(json_object_get_double_member(rec, "baseline"), >, 0.0);
      g_assert_cmpfloat(json_object_get_double_member(rec, "ratio"), >, 0.0);
      g_assert_cmpstr(json_object_get_string_member(rec, "baseline_name"), ==,
                      "raw gRPC unary call");
      /* The bench checked the link counters and the segments before writing the row. */
      assert_contains(json_object_get_string_member(rec, "parameters"), "no shared memory (0 "
                      "segments; task 1's eth0 received ");
      /* --quick: two rounds, the sides in alternating order, each round's ratio in the note. */
      assert_contains(json_object_get_string_member(rec, "parameters"), "; 2 rounds, each a Weft "
                      "child and a raw child in alternating order");
      assert_contains(note, "against the raw call across the same namespaces (");
      assert_contains(note, "; rounds ");
      assert_contains(note, " / ");
      /* The transfer's row names the step's, whose figure it gives beside its own. */
      if (g_str_has_prefix(names[k], "netns_transfer/"))
        assert_contains(note, "the whole step around it: ");
      /* The rounds' own median beside it, and the machine's load while they ran. */
      assert_contains(note, ", their median ");
      assert_contains(note, "; load average ");
    }
    json_object_unref(rec);
  }
  run_result_clear(&r);
  g_unlink(path);
  g_rmdir(dir);
  g_free(path);
  g_free(dir);
}

/* `weft bench --peer ort` (bench/bench_ort.c) with ONNX Runtime's real library, which
 * scripts/install-ort-peer.sh puts in the build tree (or $WEFT_ORT_LIB names); without it the
 * timed case is skipped with the reason. Checked: the peer's column and JSON fields, its outputs
 * equal to Weft's (a mismatch would turn the figure into "failed: ..."), the reason printed when
 * the library is absent or is not ONNX Runtime (exit 0), and an unknown peer as a usage error. */

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

/* ort_library(), or NULL with the test skipped. */
static char *ort_library_or_skip(void) {
  char *lib = ort_library();
  if (!lib)
    g_test_skip("ONNX Runtime is not installed: run scripts/install-ort-peer.sh (or set "
                "WEFT_ORT_LIB)");
  return lib;
}

static void test_bench_peer_usage(void) {
  if (no_weft()) return;
  const char *nosuch[] = {"bench", "--peer", "nosuch", "--only", "step/scalar_addv2", NULL};
  run_result_t r = run_weft(nosuch, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: unknown --peer 'nosuch' (the peers are: ort)\n");
  g_assert_cmpstr(r.out, ==, "");
  run_result_clear(&r);
  const char *lib_alone[] = {"bench", "--peer-lib", "/x.so", "--only", "step/scalar_addv2", NULL};
  r = run_weft(lib_alone, NULL);
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "weft: error: --peer-lib needs --peer ort\n");
  run_result_clear(&r);
}

/* A library that is not there: the row is still measured, the peer column is empty, and the
 * reason is printed under the table and in the JSON; the exit status is 0. */
static void test_bench_peer_absent(void) {
  if (no_weft()) return;
  char *dir = g_dir_make_tmp("weft-peer-XXXXXX", NULL);
  char *json = g_build_filename(dir, "bench.json", NULL);
  char *missing = g_build_filename(dir, "libonnxruntime.so.1", NULL);
  const char *args[] = {"bench", "--quick", "--peer", "ort", "--only", "step/scalar_addv2",
                        "--json", json, NULL};
  char *env_lib = g_strdup_printf("WEFT_ORT_LIB=%s", missing);
  const char *env[] = {env_lib, NULL};
  run_result_t r = run_weft(args, env);
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

  /* A library that is there but is not ONNX Runtime (the C library's libm) is refused by name. */
  const char *not_ort[] = {"bench", "--quick", "--peer", "ort", "--peer-lib", "libm.so.6",
                           "--only", "step/scalar_addv2", NULL};
  r = run_weft(not_ort, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "\npeer: libm.so.6 has no OrtGetApiBase: not ONNX Runtime\n");
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
static void test_bench_peer_ort(void) {
  if (no_weft()) return;
  char *lib = ort_library_or_skip();
  if (!lib) return;
  char *dir = g_dir_make_tmp("weft-peer-XXXXXX", NULL);
  char *json = g_build_filename(dir, "bench.json", NULL);
  const char *args[] = {"bench", "--quick", "--threads", "1", "--peer", "ort", "--peer-lib", lib,
                        "--only", "step/scalar_addv2", "--only", "matmul/256", "--json", json,
                        NULL};
  run_result_t r = run_weft(args, NULL);
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

/* `weft bench --graph` (bench/bench_graph.c): its usage errors, exit status 2. */
static void test_bench_graph_usage(void) {
  if (no_weft()) return;
  struct {
    const char *args[8];
    const char *error;
  } cases[] = {
      {{"bench", "--batch", "4", NULL}, "--feed, --fetch and --batch go with --graph or "
                                        "--saved-model"},
      {{"bench", "--graph", "g.pb", "--saved-model", "d", NULL},
       "give one of --graph FILE.pb and --saved-model DIR"},
      {{"bench", "--graph", "g.pb", "--batch", "0", NULL}, "--batch 0 is out of range (1 or more)"},
      {{"bench", "--graph", "g.pb", "--feed", "x", NULL},
       "--feed 'x' is not NAME=SHAPE (e.g. input=64,28,28,1)"},
      {{"bench", "--graph", "g.pb", "--feed", "x=3xq", NULL},
       "--feed 'x=3xq' is not NAME=SHAPE (e.g. input=64,28,28,1)"},
      {{"bench", "--graph", "g.pb", "--fetch", "a", "--fetch", "b", NULL},
       "--graph times one fetch: give --fetch once"},
      {{"bench", "--graph", "g.pb", "--only", "matmul", NULL},
       "--only selects benchmarks; --graph runs one model instead"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    run_result_t r = run_weft(cases[k].args, NULL);
    char *want = g_strdup_printf("weft: error: %s\nTry 'weft help bench'.\n", cases[k].error);
    g_assert_cmpint(r.exit_code, ==, 2);
    g_assert_cmpstr(r.err, ==, want);
    g_assert_cmpstr(r.out, ==, "");
    g_free(want);
    run_result_clear(&r);
  }
}

/* One --graph (or, for a folder, --saved-model) row, without a peer or with ONNX Runtime (lib,
 * may be NULL), in dir/bench.json; the record of row `name` (json_object_unref). */
static JsonObject *bench_graph_row(const char *dir, const char *graph, const char *batch,
                                   const char *lib, const char *name) {
  char *json = g_build_filename(dir, "bench.json", NULL);
  bool saved_model = g_file_test(graph, G_FILE_TEST_IS_DIR);
  const char *args[] = {"bench", saved_model ? "--saved-model" : "--graph", graph, "--batch",
                        batch, "--quick", "--threads", "1",
                        "--json", json, lib ? "--peer" : NULL, "ort", "--peer-lib", lib, NULL};
  run_result_t r = run_weft(args, NULL);
  g_test_message("stdout: %s\nstderr: %s", r.out, r.err);
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, name);
  JsonObject *rec = bench_record(json, name);
  g_assert_nonnull(rec);
  g_assert_false(json_object_get_boolean_member(rec, "skipped"));
  g_assert_true(json_object_get_double_member(rec, "weft") > 0);
  g_assert_cmpstr(json_object_get_string_member(rec, "unit"), ==, "ms");
  run_result_clear(&r);
  g_unlink(json);
  g_free(json);
  return rec;
}

/* A corpus MLP and a SavedModel timed in Weft alone: unknown batch dimensions take --batch, the
 * default fetch is the graph's last output nothing reads (the signature's output), and the row
 * says so in its parameters. */
static void test_bench_graph(void) {
  if (no_weft()) return;
  char *graph = corpus_graph("mlp_5_5_1_frozen.pb");
  if (!graph) return;
  char *dir = g_dir_make_tmp("weft-graph-XXXXXX", NULL);
  JsonObject *rec = bench_graph_row(dir, graph, "8", NULL, "graph/mlp_5_5_1_frozen/batch_8");
  g_assert_cmpstr(json_object_get_string_member(rec, "parameters"), ==,
                  "x:0=8x5 fetch=Identity:0 threads=1");
  g_assert_true(json_object_get_null_member(rec, "peer"));
  json_object_unref(rec);
  /* A SavedModel's serving signature: its input x [-1, 1] fed a batch of 4 (through the
   * stand-in Placeholder the model reads a fed tensor by), its output y fetched. */
  /* A corpus conv net whose input is a Const: --feed of that Const frees its dimensions. */
  char *conv = corpus_graph("../dl4j/cnn2d_layers/channels_last_b1_k2_s1_d1_SAME_relu6/"
                            "frozen_model.pb");
  if (conv) {
    char *json = g_build_filename(dir, "bench.json", NULL);
    const char *args[] = {"bench", "--graph", conv, "--feed", "in_0=4,8,8,2", "--quick",
                          "--threads", "1", "--json", json, NULL};
    run_result_t r = run_weft(args, NULL);
    g_assert_cmpint(r.exit_code, ==, 0);
    rec = bench_record(json, "graph/cnn2d_layers/channels_last_b1_k2_s1_d1_SAME_relu6/batch_4");
    g_assert_nonnull(rec);
    g_assert_cmpstr(json_object_get_string_member(rec, "parameters"), ==,
                    "in_0_fed:0=4x8x8x2 fetch=conv2d/Relu6:0 threads=1");
    g_assert_true(json_object_get_double_member(rec, "weft") > 0);
    json_object_unref(rec);
    run_result_clear(&r);
    g_unlink(json);
    g_free(json);
    g_free(conv);
  }
  char *graphdefs = g_path_get_dirname(graph);
  char *sm = g_build_filename(graphdefs, "..", "saved_model", "half_plus_two_cpu", NULL);
  g_free(graphdefs);
  rec = bench_graph_row(dir, sm, "4", NULL, "graph/half_plus_two_cpu/batch_4");
  g_assert_cmpstr(json_object_get_string_member(rec, "parameters"), ==,
                  "_weft_feed/x/0:0=4x1 fetch=y:0 threads=1");
  json_object_unref(rec);
  g_free(sm);
  g_rmdir(dir);
  g_free(dir);
  g_free(graph);
}

/* With ONNX Runtime: the corpus MLP and a conv net (its input frozen as a Const, fed as a
 * Placeholder mapped in at --batch) run in both, outputs matched; a graph the exporter refuses
 * (a training-mode batch norm) keeps its Weft figure and says why the peer's is missing. */
static void test_bench_graph_ort(void) {
  if (no_weft()) return;
  char *lib = ort_library_or_skip();
  if (!lib) return;
  char *mlp = corpus_graph("mlp_5_5_1_frozen.pb");
  char *conv = mlp ? corpus_graph("../dl4j/cnn2d_layers/channels_last_b1_k2_s1_d1_SAME_relu6/"
                                  "frozen_model.pb") : NULL;
  char *bn = conv ? corpus_graph("../dl4j/fused_batch_norm/float32_nhwc/frozen_model.pb") : NULL;
  char *dir = g_dir_make_tmp("weft-graph-XXXXXX", NULL);
  const char *rows[][3] = {{mlp, "64", "graph/mlp_5_5_1_frozen/batch_64"},
                           {conv, "16",
                            "graph/cnn2d_layers/channels_last_b1_k2_s1_d1_SAME_relu6/batch_16"}};
  for (size_t k = 0; bn && k < G_N_ELEMENTS(rows); k++) {
    JsonObject *rec = bench_graph_row(dir, rows[k][0], rows[k][1], lib, rows[k][2]);
    g_assert_true(json_object_get_null_member(rec, "peer_note"));
    double weft = json_object_get_double_member(rec, "weft");
    double peer = json_object_get_double_member(rec, "peer");
    g_assert_true(peer > 0);
    g_assert_cmpfloat_with_epsilon(json_object_get_double_member(rec, "peer_ratio"), weft / peer,
                                   1e-4 * weft / peer);
    json_object_unref(rec);
  }
  if (bn) {
    JsonObject *rec = bench_graph_row(dir, bn, "1", lib,
                                      "graph/fused_batch_norm/float32_nhwc/batch_1");
    g_assert_true(json_object_get_null_member(rec, "peer"));
    g_assert_cmpstr(json_object_get_string_member(rec, "peer_note"), ==,
                    "ONNX export: FusedBatchNormV3 node 'FusedBatchNormV3': is_training is true "
                    "(only inference)");
    json_object_unref(rec);
  }
  g_rmdir(dir);
  g_free(dir);
  g_free(mlp);
  g_free(conv);
  g_free(bn);
  g_free(lib);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cli/devices", test_devices);
  g_test_add_func("/cli/plugins", test_plugins);
  g_test_add_func("/cli/plugins_broken", test_plugins_broken);
  g_test_add_func("/cli/version_and_help", test_version_and_help);
  g_test_add_func("/cli/usage_errors", test_usage_errors);
  g_test_add_func("/cli/tools_version_help_usage", test_tools_version_help_usage);
  g_test_add_func("/cli/run/multiplication", test_run_multiplication);
  g_test_add_func("/cli/run/addition_int32", test_run_addition_int32);
  g_test_add_func("/cli/run/regression", test_run_regression);
  g_test_add_func("/cli/run/mlp_5_5_1", test_run_mlp);
  g_test_add_func("/cli/run/fc_layers", test_run_fc_layers);
  g_test_add_func("/cli/run/bad_feed_dtype", test_run_bad_feed_dtype);
  g_test_add_func("/cli/run/bad_feed_shape", test_run_bad_feed_shape);
  g_test_add_func("/cli/run/missing_fetch", test_run_missing_fetch);
  g_test_add_func("/cli/run/corrupt_graph", test_run_corrupt_graph);
  g_test_add_func("/cli/example/placement", test_example_placement);
  g_test_add_func("/cli/bench/json", test_bench_json);
  g_test_add_func("/cli/bench/remote", test_bench_remote);
  g_test_add_func("/cli/bench/device", test_bench_device);
  g_test_add_func("/cli/bench/netns", test_bench_netns);
  g_test_add_func("/cli/bench/peer_usage", test_bench_peer_usage);
  g_test_add_func("/cli/bench/peer_absent", test_bench_peer_absent);
  g_test_add_func("/cli/bench/peer_ort", test_bench_peer_ort);
  g_test_add_func("/cli/bench/graph_usage", test_bench_graph_usage);
  g_test_add_func("/cli/bench/graph", test_bench_graph);
  g_test_add_func("/cli/bench/graph_ort", test_bench_graph_ort);
  return g_test_run();
}
