/* main.c: the weft-conformance program: parses the options, loads the plugins, picks the devices,
 * runs every selected op's cases (and, with --onnx, the ONNX node tests) on every selected device,
 * and writes the console table, --json and --markdown reports. Exit status: 0 when nothing failed,
 * 1 when a case failed, 2 when the run could not test what was asked: a usage error, a plugin
 * (--plugin or WEFT_PLUGIN_PATH) that did not load, a --device, --op or --case that matches
 * nothing, an unreadable --onnx folder. The summary line is printed whatever the outcome (but
 * for --list, --help and --version), so that a script always finds it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/tools/tool_help.h"
#include "base/install_dirs.h"
#include "conformance.h"
#include "plugin/plugin_internal.h"
#include "tf_graphs.h"

#ifndef CF_SOURCE_DIR
#define CF_SOURCE_DIR "."
#endif
#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

#define PROG "weft-conformance"

static const cf_suite_t *const all_suites[] = {
    cf_suites_elementwise, cf_suites_math, cf_suites_nn, cf_suites_array, cf_suites_image,
    cf_suites_state, cf_suites_conv, cf_suites_scatter, cf_suites_search, cf_suites_ctc,
    cf_suites_array_extra, cf_suites_imgproc,
    cf_suites_bits, cf_suites_nn_extra, cf_suites_linalg, cf_suites_control_flow,
    cf_suites_svd_misc, cf_suites_sparse, cf_suites_resource_vars, cf_suites_summary,
    cf_suites_parsing, cf_suites_io, cf_suites_string, cf_suites_ragged, cf_suites_fused,
    cf_suites_special, cf_suites_candidate, cf_suites_stateless};

static char **opt_devices, **opt_ops, **opt_cases, **opt_plugins;
static char *opt_onnx, *opt_json, *opt_markdown, *opt_expected, *opt_tf_graphs, *opt_expect_passing,
    *opt_write_passing;
static gboolean opt_list, opt_verbose, opt_cases_too, opt_no_expanded, opt_no_guard, opt_version,
    opt_help;
static int opt_threads;
/* Per --op pattern: whether it selected an op, so that one matching nothing is reported. */
static bool *op_pattern_used;

static const GOptionEntry entries[] = {
    {"device", 'd', 0, G_OPTION_ARG_STRING_ARRAY, &opt_devices,
     "Run on this device only (CPU:0, VULKAN:0, or a type: VULKAN); repeatable", "DEV"},
    {"op", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &opt_ops,
     "Run this op only (a Weft op, or an ONNX op with --onnx; globs allowed); repeatable", "OP"},
    {"case", 'c', 0, G_OPTION_ARG_STRING_ARRAY, &opt_cases,
     "Run the cases (or ONNX test folders) matching this glob only; repeatable", "GLOB"},
    {"plugin", 'p', 0, G_OPTION_ARG_FILENAME_ARRAY, &opt_plugins,
     "Load this plugin file too (after the default ones); repeatable", "PATH"},
    {"onnx", 0, 0, G_OPTION_ARG_FILENAME, &opt_onnx,
     "Run the ONNX node tests in DIR (test_*/model.onnx) instead of the cases", "DIR"},
    {"cases", 0, 0, G_OPTION_ARG_NONE, &opt_cases_too, "With --onnx: run the cases as well", NULL},
    {"no-expanded", 0, 0, G_OPTION_ARG_NONE, &opt_no_expanded,
     "With --onnx: skip the *_expanded tests", NULL},
    {"tf-graphs", 0, 0, G_OPTION_ARG_FILENAME, &opt_tf_graphs,
     "Run the saved TensorFlow graphs below DIR (folders with frozen_model.pb and TensorFlow's "
     "NAME.placeholder.csv feeds and NAME.prediction.csv answers) instead of the cases",
     "DIR"},
    {"expect-passing", 0, 0, G_OPTION_ARG_FILENAME, &opt_expect_passing,
     "With --tf-graphs: the graphs listed in FILE must pass (exit status 1 otherwise)", "FILE"},
    {"write-passing", 0, 0, G_OPTION_ARG_FILENAME, &opt_write_passing,
     "With --tf-graphs: write the graphs that passed to FILE", "FILE"},
    {"json", 'j', 0, G_OPTION_ARG_FILENAME, &opt_json, "Write one JSON record per case to FILE",
     "FILE"},
    {"markdown", 'm', 0, G_OPTION_ARG_FILENAME, &opt_markdown,
     "Write a Markdown coverage matrix to FILE", "FILE"},
    {"expected-failures", 0, 0, G_OPTION_ARG_FILENAME, &opt_expected,
     "Folder of <DEVICE_TYPE>.txt expected-failure lists (default: the source tree's "
     "conformance/expected_failures, or <datadir>/weft/expected_failures when installed)",
     "DIR"},
    {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads, "Intra-op threads (0: all cores)", "N"},
    {"no-guard", 0, 0, G_OPTION_ARG_NONE, &opt_no_guard,
     "Do not surround host buffers with guard bytes", NULL},
    {"list", 'l', 0, G_OPTION_ARG_NONE, &opt_list,
     "List the ops with cases, their dtypes and which devices have kernels, then exit", NULL},
    {"verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose, "Print every case as it runs", NULL},
    {"version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL},
    {"help", 'h', 0, G_OPTION_ARG_NONE, &opt_help, "Show this help and exit", NULL},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

static void error_message(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static void error_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  fprintf(stderr, PROG ": error: %s\n", msg);
  g_free(msg);
}

static bool op_selected(const char *op) {
  if (opt_ops == NULL) return true;
  bool any = false;
  /* Every pattern is tried (not only up to the first match) to note each one that matches. */
  for (int i = 0; opt_ops[i]; i++) {
    if (g_pattern_match_simple(opt_ops[i], op) || g_ascii_strcasecmp(opt_ops[i], op) == 0) {
      op_pattern_used[i] = true;
      any = true;
    }
  }
  return any;
}

/* "'a', 'b'": the patterns of a repeatable option, for messages. */
static char *quoted_list(char **patterns) {
  GString *s = g_string_new(NULL);
  for (char **p = patterns; p && *p; p++)
    g_string_append_printf(s, "%s'%s'", s->len ? ", " : "", *p);
  return g_string_free(s, FALSE);
}

/* Whether a plugin file came from WEFT_PLUGIN_PATH (named there, or in a folder named there):
 * a plugin the user asked for, unlike the build tree's and the installed ones. */
static bool from_plugin_path(const char *path) {
  const char *env = g_getenv("WEFT_PLUGIN_PATH");
  if (path == NULL || env == NULL || *env == '\0') return false;
  char **parts = g_strsplit(env, ":", -1);
  char *dir = g_path_get_dirname(path);
  bool found = false;
  for (char **p = parts; *p && !found; p++) {
    size_t n = strlen(*p);
    while (n > 1 && (*p)[n - 1] == '/') (*p)[--n] = '\0';
    found = n > 0 && (strcmp(*p, path) == 0 || strcmp(*p, dir) == 0);
  }
  g_free(dir);
  g_strfreev(parts);
  return found;
}

/* Reports each plugin from WEFT_PLUGIN_PATH that did not load; true when there was one. */
static bool report_failed_path_plugins(void) {
  bool failed = false;
  for (int k = 0; k < weft_plugins_count(); k++) {
    const weft_plugin_record_t *r = weft_plugins_get(k);
    if (r == NULL || r->error == NULL || !from_plugin_path(r->path)) continue;
    /* Loader messages start with the file already; those that do not get it added. */
    if (g_str_has_prefix(r->error, r->path))
      error_message("plugin from WEFT_PLUGIN_PATH did not load: %s", r->error);
    else
      error_message("plugin from WEFT_PLUGIN_PATH did not load: %s: %s", r->path, r->error);
    failed = true;
  }
  return failed;
}

/* "CPU:0", "/device:CPU:0", "/job:localhost/.../device:CPU:0", "cpu" -> matches type/ordinal. */
static bool device_selected(const char *type, int ordinal) {
  if (opt_devices == NULL) return true;
  for (char **p = opt_devices; *p; p++) {
    const char *s = *p;
    const char *dev = strstr(s, "device:");
    if (dev) s = dev + strlen("device:");
    if (s[0] == '/') s++;
    char **parts = g_strsplit(s, ":", 2);
    bool match = g_ascii_strcasecmp(parts[0], type) == 0 &&
                 (parts[1] == NULL || atoi(parts[1]) == ordinal);
    g_strfreev(parts);
    if (match) return true;
  }
  return false;
}

static GPtrArray *pick_devices(void) {
  GPtrArray *devices = g_ptr_array_new();
  for (int i = 0; i < weft__device_count(); i++) {
    weft__device_t *d = weft__device_at(i);
    if (!device_selected(d->type, d->ordinal)) continue;
    cf_device_t *cd = g_new0(cf_device_t, 1);
    cd->type = g_strdup(d->type);
    cd->ordinal = d->ordinal;
    cd->label = g_strdup_printf("%s:%d", d->type, d->ordinal);
    cd->spec = g_strdup_printf("/device:%s:%d", d->type, d->ordinal);
    cd->host_accessible = d->props.host_accessible != 0;
    g_ptr_array_add(devices, cd);
  }
  return devices;
}

static void device_free(cf_device_t *d) {
  g_free(d->label);
  g_free(d->type);
  g_free(d->spec);
  g_free(d);
}

static const char *cpu_input_spec(void) {
  for (int i = 0; i < weft__device_count(); i++)
    if (strcmp(weft__device_at(i)->type, "CPU") == 0) return "/device:CPU:0";
  return NULL;
}

static void list_suites(GPtrArray *devices) {
  for (size_t t = 0; t < G_N_ELEMENTS(all_suites); t++)
    for (const cf_suite_t *s = all_suites[t]; s->op; s++) {
      if (!op_selected(s->op)) continue;
      printf("%-36s", s->op);
      for (guint d = 0; d < devices->len; d++) {
        cf_device_t *dev = devices->pdata[d];
        cf_run_ctx_t ctx = {.device = dev};
        GString *line = g_string_new(NULL);
        for (const weft_dtype_t *dt = s->dtypes; ; dt++) {
          bool none = *dt == WEFT_DT_INVALID;
          if (none && dt != s->dtypes) break;
          if (cf_kernel_available(&ctx, s->op, none ? NULL : s->type_attr ? s->type_attr : "T",
                                  *dt))
            g_string_append_printf(line, "%s%s", line->len ? "," : "",
                                   none ? "any" : weft_dtype_name(*dt));
          if (none) break;
        }
        printf("  %s: %s", dev->label, line->len ? line->str : "(no kernel)");
        g_string_free(line, TRUE);
      }
      printf("\n");
    }
  cf_list_plugin_cases(devices, op_selected);
}

static void run_suites(cf_run_ctx_t *ctx) {
  for (size_t t = 0; t < G_N_ELEMENTS(all_suites); t++)
    for (const cf_suite_t *s = all_suites[t]; s->op; s++) {
      if (!op_selected(s->op)) continue;
      for (const weft_dtype_t *dt = s->dtypes;; dt++) {
        if (*dt == WEFT_DT_INVALID && dt != s->dtypes) break;
        s->emit(ctx, s->op, *dt);
        if (*dt == WEFT_DT_INVALID) break;
      }
    }
  /* Cases plugins registered for their own ops (--plugin, WEFT_PLUGIN_PATH). */
  cf_run_plugin_cases(ctx, op_selected);
  /* Symbolic gradients of the ops above against finite differences ("grad_*" cases). */
  cf_run_grad_cases(ctx, op_selected);
  /* The same through conds, while loops and TensorArrays ("grad_cf_*" cases). */
  cf_run_grad_cf_cases(ctx, op_selected);
}

static GPtrArray *strv_to_array(char **v) {
  if (v == NULL) return NULL;
  GPtrArray *a = g_ptr_array_new();
  for (char **p = v; *p; p++) g_ptr_array_add(a, *p);
  return a;
}

static void free_options(void) {
  g_strfreev(opt_devices);
  g_strfreev(opt_ops);
  g_strfreev(opt_cases);
  g_strfreev(opt_plugins);
  g_free(opt_onnx);
  g_free(opt_tf_graphs);
  g_free(opt_expect_passing);
  g_free(opt_write_passing);
  g_free(opt_json);
  g_free(opt_markdown);
  g_free(opt_expected);
}

int main(int argc, char **argv) {
  GOptionContext *octx = g_option_context_new(NULL);
  g_option_context_set_help_enabled(octx, FALSE); /* tool_print_help lays it out for help2man */
  g_option_context_add_main_entries(octx, entries, NULL);
  g_option_context_set_summary(
      octx,
      "Runs every op that has conformance cases on every device (or those selected) through\n"
      "the public runtime path and compares the outputs with double-precision references;\n"
      "with --onnx, runs the ONNX backend node tests instead; with --tf-graphs, saved\n"
      "TensorFlow graphs against TensorFlow's own answers. Prints a table, the failures\n"
      "and a summary line on stdout, progress on stderr.");
  g_option_context_set_description(
      octx,
      "Examples:\n"
      "  weft-conformance                                run every op on every device\n"
      "  weft-conformance --device CPU:0 --op MatMul     one op on one device\n"
      "  weft-conformance --plugin ./libweft-acme.so --device ACME:0 --json acme.json\n"
      "  weft-conformance --onnx ../shared/corpus/onnx-node --json onnx.json\n"
      "  weft-conformance --tf-graphs ../shared/corpus/tf/dl4j --json tf.json\n"
      "\n"
      "Each case reports passed, failed, unsupported (no kernel for the op and dtype on the\n"
      "device), expected failure or unexpectedly passed. Exit status: 0 when no case failed,\n"
      "1 when a case failed, 2 for a usage error, a plugin (--plugin or WEFT_PLUGIN_PATH)\n"
      "that did not load, or a --device, --op or --case that matches nothing.\n");
  GError *error = NULL;
  bool parsed = g_option_context_parse(octx, &argc, &argv, &error);
  if (parsed && opt_help) tool_print_help(octx, PROG " [OPTION]...");
  g_option_context_free(octx);
  if (parsed && opt_help) {
    free_options();
    return 0;
  }
  if (!parsed) {
    error_message("%s\nTry '" PROG " --help'.", error->message);
    g_error_free(error);
    free_options();
    return 2;
  }
  if (opt_version) {
    printf(PROG " %s (plugin ABI %d.%d)\n", WEFT_VERSION, WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
    free_options();
    return 0;
  }
  if (argc > 1) {
    error_message("unexpected argument '%s'\nTry '" PROG " --help'.", argv[1]);
    free_options();
    return 2;
  }

  if ((opt_expect_passing || opt_write_passing) && opt_tf_graphs == NULL) {
    error_message("--expect-passing and --write-passing go with --tf-graphs\nTry '" PROG
                  " --help'.");
    free_options();
    return 2;
  }
  if (opt_tf_graphs != NULL) {
    weft_plugins_load_default();
    GPtrArray *filter = strv_to_array(opt_cases);
    cf_tf_graphs_options_t to = {.dir = opt_tf_graphs,
                                 .case_filter = filter,
                                 .json = opt_json,
                                 .expect_passing = opt_expect_passing,
                                 .write_passing = opt_write_passing,
                                 .verbose = opt_verbose};
    int bad = cf_tf_graphs_run(&to, &error);
    if (filter) g_ptr_array_free(filter, TRUE);
    int tf_rc = bad < 0 ? 2 : bad > 0 ? 1 : 0;
    if (bad < 0) {
      error_message("--tf-graphs %s: %s", opt_tf_graphs, error->message);
      g_clear_error(&error);
    }
    free_options();
    return tf_rc;
  }

  int rc = 0;
  bool run_cases = opt_onnx == NULL || opt_cases_too;
  cf_report_t *report = cf_report_new();
  GPtrArray *case_filter = NULL, *op_filter = NULL, *devices = NULL;
  char *default_expected = NULL;
  op_pattern_used = g_new0(bool, opt_ops ? g_strv_length(opt_ops) + 1 : 1);
  /* Guard bytes around every host buffer, on before the first allocation (see harness.c). */
  if (!opt_no_guard) g_setenv("WEFT_GUARD_BYTES", "1", TRUE);
  weft_plugins_load_default();
  /* A plugin the user named that does not load is the first thing to fix: nothing runs. */
  if (report_failed_path_plugins()) {
    rc = 2;
    goto summary;
  }
  for (char **p = opt_plugins; p && *p; p++) {
    weft_status_t *st = weft_plugins_load_file(*p);
    if (st) {
      error_message("--plugin %s: %s", *p, weft_status_message(st));
      weft_status_free(st);
      rc = 2;
      goto summary;
    }
  }
  devices = pick_devices();
  if (devices->len == 0) {
    error_message("no device matches --device%s",
                  weft__device_count() == 0 ? " (no devices at all: did the plugins load?)" : "");
    rc = 2;
    goto summary;
  }
  if (opt_list) {
    list_suites(devices);
    goto out;
  }

  const char *expected_dir = opt_expected;
  if (expected_dir == NULL) expected_dir = g_getenv("WEFT_CONFORMANCE_EXPECTED");
  /* Run from the build tree: the source tree's lists; installed: the copies in the install's
   * <datadir>/weft, found relative to this program, so that a moved prefix still has them. */
  if (weft__running_from_build_tree()) {
    default_expected = g_build_filename(CF_SOURCE_DIR, "conformance", "expected_failures", NULL);
  } else {
    char *data_dir = weft__install_dir(WEFT__DIR_DATA);
    default_expected = g_build_filename(data_dir, "expected_failures", NULL);
    g_free(data_dir);
  }
  if (expected_dir == NULL) expected_dir = default_expected;

  case_filter = strv_to_array(opt_cases);
  op_filter = strv_to_array(opt_ops);
  for (guint d = 0; d < devices->len; d++) {
    cf_device_t *dev = devices->pdata[d];
    if (!opt_no_guard) cf_guard_install(dev);
    cf_report_load_expected(report, expected_dir, dev->type);
    cf_run_ctx_t ctx = {
        .report = report,
        .device = dev,
        .cpu_spec = cpu_input_spec(),
        .case_filter = case_filter,
        .intra_threads = opt_threads,
        .verbose = opt_verbose,
        .unsupported_seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
    };
    fprintf(stderr, PROG ": %s (%s)%s\n", dev->label, dev->spec,
            dev->guarded ? ", outputs guarded" : "");
    if (run_cases) run_suites(&ctx);
    if (opt_onnx != NULL) {
      cf_onnx_options_t oo = {.dir = opt_onnx,
                              .op_filter = op_filter,
                              .case_filter = case_filter,
                              .include_expanded = !opt_no_expanded};
      if (!cf_onnx_run_all(&ctx, &oo, &error)) {
        error_message("--onnx %s: %s", opt_onnx, error->message);
        g_clear_error(&error);
        rc = 2;
      }
    }
    g_hash_table_destroy(ctx.unsupported_seen);
    if (rc) goto summary;
  }

  /* A selection that ran nothing is an error, not an empty success: a misspelt --op or --case
   * would otherwise pass every check. */
  {
    int total = cf_report_n_records(report);
    int ran = total - cf_report_count(report, NULL, CF_UNSUPPORTED);
    GString *unmatched = g_string_new(NULL);
    for (int i = 0; run_cases && opt_ops && opt_ops[i]; i++)
      if (!op_pattern_used[i])
        g_string_append_printf(unmatched, "%s'%s'", unmatched->len ? ", " : "", opt_ops[i]);
    if (unmatched->len) {
      error_message("--op %s matches no op with conformance cases (see --list)", unmatched->str);
      rc = 2;
    } else if (opt_cases && ran == 0) {
      char *globs = quoted_list(opt_cases);
      error_message("--case %s matches no case that ran on the devices selected", globs);
      g_free(globs);
      rc = 2;
    } else if (total == 0) {
      char *ops = quoted_list(opt_ops);
      error_message("the selection ran no case%s%s", opt_ops ? ": --op " : "", ops);
      g_free(ops);
      rc = 2;
    }
    g_string_free(unmatched, TRUE);
  }

summary:
  if (!opt_list) {
    cf_report_print_console(report, opt_verbose, run_cases, opt_onnx != NULL);
    if (opt_json && !cf_report_write_json(report, opt_json, &error)) {
      error_message("--json %s: %s", opt_json, error->message);
      g_clear_error(&error);
      rc = 2;
    }
    if (opt_markdown && !cf_report_write_markdown(report, opt_markdown, &error)) {
      error_message("--markdown %s: %s", opt_markdown, error->message);
      g_clear_error(&error);
      rc = 2;
    }
    if (rc == 0 && cf_report_count(report, NULL, CF_FAILED) > 0) rc = 1;
  }

out:
  cf_report_free(report);
  if (case_filter) g_ptr_array_free(case_filter, TRUE);
  if (op_filter) g_ptr_array_free(op_filter, TRUE);
  for (guint d = 0; devices && d < devices->len; d++) device_free(devices->pdata[d]);
  if (devices) g_ptr_array_free(devices, TRUE);
  g_free(default_expected);
  g_free(op_pattern_used);
  free_options();
  return rc;
}
