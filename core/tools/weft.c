/* weft.c: the `weft` command-line tool. One binary, several subcommands (a table below, so that
 * later ones such as bench and demo slot in): `devices` and `plugins` report what this machine
 * and its plugins offer, `run` imports a TensorFlow GraphDef (or a SavedModel) and runs it in a
 * local session, `checkpoint ls` lists the tensors of a checkpoint.
 *
 * Exit status: 0 on success, 1 when the runtime reports an error (printed as
 * "weft: error: CODE_NAME: message" on stderr), 2 for a command line that does not make sense. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "weft/plugin.h"
#include "weft_io.h"
#include "weft/weft.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "0.1.0"
#endif

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

typedef struct command {
  const char *name;
  const char *args;    /* the synopsis after the name */
  const char *summary; /* one line for `weft help` */
  int (*run)(int argc, char **argv);
} command_t;

static int cmd_devices(int argc, char **argv);
static int cmd_plugins(int argc, char **argv);
static int cmd_run(int argc, char **argv);
static int cmd_checkpoint(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_bench(int argc, char **argv);
static int cmd_health(int argc, char **argv);
static int cmd_inspect(int argc, char **argv) { return weft_cli_inspect(argc, argv); }

static const command_t commands[] = {
    {"devices", "[--target grpc[s]://HOST:PORT [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] "
                "[--auth-token-file FILE]]",
     "list the local devices (or a cluster's), and the backends that found none", cmd_devices},
    {"plugins", "", "list the plugins found, what each offers, and why any failed to load",
     cmd_plugins},
    {"health", "HOST:PORT|grpc[s]://HOST:PORT [--service NAME] [--timeout_ms MS] [--tls-ca FILE] "
               "[--tls-cert FILE --tls-key FILE]",
     "ask a server gRPC's health check (a Kubernetes exec probe): exit 0 when SERVING",
     cmd_health},
    {"run",
     "--graph FILE.pb [--feed NAME=VALUE]... [--fetch NAME]... [--target NODE]... [--trace FILE] "
     "[--target grpc[s]://HOST:PORT [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] "
     "[--auth-token-file FILE]]",
     "import a TensorFlow GraphDef (or SavedModel) and run it in a local session", cmd_run},
    {"checkpoint", "ls PATH [--json] [--values]",
     "list the tensors (name, dtype, shape) of a checkpoint or a SavedModel's variables",
     cmd_checkpoint},
    {"inspect", "MODEL [--json] | EVENTS | --dot GRAPH",
     "describe a SavedModel or GraphDef, list an event file's records, draw a graph (--dot)",
     cmd_inspect},
    {"bench", "[--only NAME] [--json FILE] [--device D] [--quick] [--threads N] [--peer ort] "
              "[--graph FILE.pb [--feed NAME=SHAPE] [--fetch NAME] [--batch N]]",
     "run the benchmarks, each beside a baseline measured in the same run", cmd_bench},
    {"help", "[COMMAND]", "show this help, or the options of COMMAND", cmd_help},
};

static const command_t *find_command(const char *name) {
  for (size_t k = 0; k < G_N_ELEMENTS(commands); k++) {
    if (strcmp(commands[k].name, name) == 0) return &commands[k];
  }
  return NULL;
}

/* Laid out for people and for help2man, which makes the man page from it (core/tools/
 * meson.build): "Usage:"/"or:" lines become the synopsis, "Options:" lines the options. */
static void print_usage(FILE *out) {
  fprintf(out, "Usage: weft COMMAND [OPTIONS]\n");
  for (size_t k = 0; k < G_N_ELEMENTS(commands); k++)
    fprintf(out, "  or:  weft %s %s\n", commands[k].name, commands[k].args);
  fprintf(out, "Run and inspect TensorFlow graphs with Weft, list devices and plugins, read\n"
               "checkpoints and run the benchmarks.\n\nCommands:\n");
  for (size_t k = 0; k < G_N_ELEMENTS(commands); k++)
    fprintf(out, "  %-10s  %s\n", commands[k].name, commands[k].summary);
  fprintf(out,
          "\nOptions:\n  -V, --version  print the version and exit\n"
          "  -h, --help     show this help and exit\n\n"
          "Run 'weft help COMMAND' for the options of one command.\n\n"
          "Exit status: 0 on success, 1 when the runtime reports an error (printed as\n"
          "'weft: error: CODE: message' on stderr), 2 for a usage error.\n");
}

/* Prints a runtime error the way every subcommand does, frees it, and gives the exit status. */
static int report_status(weft_status_t *st) {
  fprintf(stderr, "weft: error: %s: %s\n", weft_code_name(weft_status_code(st)),
          weft_status_message(st));
  weft_status_free(st);
  return EXIT_RUNTIME;
}

static int usage_error(const char *command, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int usage_error(const char *command, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  fprintf(stderr, "weft: error: %s\nTry 'weft help%s%s'.\n", msg, command ? " " : "",
          command ? command : "");
  g_free(msg);
  return EXIT_USAGE;
}

/* Parses a subcommand's options; argv[0] is the subcommand's name. False (and the usage error
 * printed) when the options are wrong or arguments are left over. */
static bool parse_options(const char *command, GOptionEntry *entries, const char *summary,
                          int *argc, char ***argv) {
  char *param = g_strdup_printf("- %s", summary);
  GOptionContext *ctx = g_option_context_new(param);
  g_free(param);
  char *prg = g_strdup_printf("weft %s", command);
  g_set_prgname(prg);
  g_free(prg);
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *error = NULL;
  bool ok = g_option_context_parse(ctx, argc, argv, &error);
  if (!ok) {
    usage_error(command, "%s", error->message);
    g_error_free(error);
  } else if (*argc > 1) {
    usage_error(command, "unexpected argument '%s'", (*argv)[1]);
    ok = false;
  }
  g_option_context_free(ctx);
  return ok;
}

/* ---------------------------------------------------------------------------------------------
 * weft devices */

/* "23.5 GiB" with a plain space (g_format_size puts a no-break space there, which scripts that
 * split on spaces trip over). */
static char *format_memory(uint64_t bytes) {
  if (bytes == 0) return g_strdup("memory unknown");
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = (double)bytes;
  size_t u = 0;
  while (value >= 1024.0 && u + 1 < G_N_ELEMENTS(units)) {
    value /= 1024.0;
    u++;
  }
  if (u == 0) return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", (guint64)bytes);
  return g_strdup_printf("%.1f %s", value, units[u]);
}

/* The flags that say how to reach a server: TLS files and the cluster token
 * (docs/security.md). */
typedef struct security_flags {
  char *tls_ca, *tls_cert, *tls_key, *auth_token_file;
} security_flags_t;

#define SECURITY_OPTION_ENTRIES(f)                                                              \
  {"tls-ca", 0, 0, G_OPTION_ARG_FILENAME, &(f).tls_ca,                                          \
   "with a grpcs:// target: verify the server against this CA (default: the system's roots)",  \
   "FILE"},                                                                                     \
      {"tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &(f).tls_cert,                                  \
       "with a grpcs:// target: the client certificate a mutual-TLS server asks for", "FILE"},  \
      {"tls-key", 0, 0, G_OPTION_ARG_FILENAME, &(f).tls_key, "the client certificate's key",    \
       "FILE"},                                                                                 \
      {"auth-token-file", 0, 0, G_OPTION_ARG_FILENAME, &(f).auth_token_file,                    \
       "send the cluster token in this file with every call", "FILE"}

static void security_flags_apply(const security_flags_t *f, weft_session_options_t *opts) {
  weft_session_options_set_tls(opts, f->tls_cert, f->tls_key, f->tls_ca);
  weft_session_options_set_auth_token_file(opts, f->auth_token_file);
}

static bool security_flags_given(const security_flags_t *f) {
  return f->tls_ca || f->tls_cert || f->tls_key || f->auth_token_file;
}

static void security_flags_clear(security_flags_t *f) {
  g_free(f->tls_ca);
  g_free(f->tls_cert);
  g_free(f->tls_key);
  g_free(f->auth_token_file);
}

static bool is_server_target(const char *t) {
  return g_str_has_prefix(t, "grpc://") || g_str_has_prefix(t, "grpcs://");
}

static int cmd_devices(int argc, char **argv) {
  char *target = NULL;
  security_flags_t sec = {0};
  GOptionEntry entries[] = {
      {"target", 't', 0, G_OPTION_ARG_STRING, &target,
       "list every device of the cluster behind this server instead", "grpc[s]://HOST:PORT"},
      SECURITY_OPTION_ENTRIES(sec),
      {NULL}};
  if (!parse_options("devices", entries, "list the local devices", &argc, &argv)) {
    security_flags_clear(&sec);
    return EXIT_USAGE;
  }
  if (!target && security_flags_given(&sec)) {
    security_flags_clear(&sec);
    return usage_error("devices", "--tls-* and --auth-token-file need --target");
  }
  weft_plugins_load_default();
  weft_device_info_t *cluster = NULL;
  int n = 0;
  if (target) {
    weft_session_options_t *opts = weft_session_options_new();
    security_flags_apply(&sec, opts);
    weft_status_t *st = weft_cluster_list_devices_with_options(target, opts, 0, &cluster, &n);
    weft_session_options_free(opts);
    security_flags_clear(&sec);
    g_free(target);
    if (st) return report_status(st);
  } else {
    n = weft_devices_count();
  }
  /* Columns line up so a glance down the list compares devices. */
  int w_name = 0, w_type = 0, w_desc = 0;
  for (int k = 0; k < n; k++) {
    const weft_device_info_t *d = cluster ? &cluster[k] : weft_devices_get(k);
    w_name = MAX(w_name, (int)strlen(d->name ? d->name : ""));
    w_type = MAX(w_type, (int)strlen(d->device_type ? d->device_type : ""));
    w_desc = MAX(w_desc, (int)strlen(d->description ? d->description : ""));
  }
  for (int k = 0; k < n; k++) {
    const weft_device_info_t *d = cluster ? &cluster[k] : weft_devices_get(k);
    char *mem = format_memory(d->memory_bytes);
    /* An emulation on the CPU says so: placement passes it by unless an op is pinned to it. */
    printf("%-*s  %-*s  %-*s  %s%s\n", w_name, d->name ? d->name : "", w_type,
           d->device_type ? d->device_type : "", w_desc, d->description ? d->description : "",
           mem, d->emulated ? "  (emulated on the CPU: only ops pinned to it run there)" : "");
    g_free(mem);
  }
  if (cluster) {
    weft_device_list_free(cluster, n);
    return 0;
  }
  const char **reasons = NULL;
  int n_without = weft_backends_without_devices(&reasons);
  for (int k = 0; k < n_without; k++) {
    /* Reasons read "TYPE: why"; the type leads the line like a device type does. */
    const char *r = reasons[k] ? reasons[k] : "";
    const char *colon = strstr(r, ": ");
    if (colon != NULL)
      printf("%.*s: no devices (%s)\n", (int)(colon - r), r, colon + 2);
    else
      printf("%s: no devices\n", r);
  }
  if (n == 0 && n_without == 0)
    printf("no devices: no backend plugin loaded (see 'weft plugins')\n");
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * weft health */

/* Prints the server's ServingStatus; the exit status is the probe's answer: 0 only for SERVING. */
static int cmd_health(int argc, char **argv) {
  char *service = NULL;
  char **rest = NULL;
  gint64 timeout_ms = 5000;
  security_flags_t sec = {0};
  GOptionEntry entries[] = {
      {"service", 's', 0, G_OPTION_ARG_STRING, &service,
       "the service to ask about: '' (the server, default), weft.Master or weft.Worker", "NAME"},
      {"timeout_ms", 0, 0, G_OPTION_ARG_INT64, &timeout_ms,
       "fail with DEADLINE_EXCEEDED after this long (5000)", "MS"},
      SECURITY_OPTION_ENTRIES(sec),
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL, "ADDRESS"},
      {NULL}};
  int code = EXIT_USAGE;
  char *target = NULL;
  if (!parse_options("health", entries, "ask a server's gRPC health service", &argc, &argv)) {
    /* printed */
  } else if (!rest || !rest[0] || rest[1]) {
    usage_error("health", "give one ADDRESS (HOST:PORT or grpc[s]://HOST:PORT)");
  } else if (timeout_ms <= 0) {
    usage_error("health", "--timeout_ms must be positive");
  } else {
    /* A bare HOST:PORT is TLS when TLS files are given, as a Kubernetes probe line reads best. */
    bool tls = sec.tls_ca || sec.tls_cert;
    target = is_server_target(rest[0]) ? g_strdup(rest[0])
                                       : g_strdup_printf("%s://%s", tls ? "grpcs" : "grpc",
                                                         rest[0]);
    weft_session_options_t *opts = weft_session_options_new();
    security_flags_apply(&sec, opts);
    weft_health_status_t status = WEFT_HEALTH_UNKNOWN;
    weft_status_t *st = weft_health_check(target, service, opts, timeout_ms, &status);
    weft_session_options_free(opts);
    if (st) {
      code = report_status(st);
    } else {
      printf("%s\n", weft_health_status_name(status));
      code = status == WEFT_HEALTH_SERVING ? 0 : EXIT_RUNTIME;
    }
  }
  g_free(target);
  g_free(service);
  g_strfreev(rest);
  security_flags_clear(&sec);
  return code;
}

/* ---------------------------------------------------------------------------------------------
 * weft plugins */

static int cmd_plugins(int argc, char **argv) {
  GOptionEntry entries[] = {{NULL}};
  if (!parse_options("plugins", entries, "list the plugins", &argc, &argv)) return EXIT_USAGE;
  /* The report below says why each plugin failed; the loader's warnings would say it twice. */
  if (g_getenv("WEFT_LOG_LEVEL") == NULL && g_getenv("WEFT_LOG") == NULL)
    g_setenv("WEFT_LOG_LEVEL", "error", TRUE);
  weft_plugins_load_default();
  int n = weft_plugins_count();
  if (n == 0) {
    printf("no plugins found (searched the build and install plugin folders and "
           "WEFT_PLUGIN_PATH)\n");
  }
  for (int k = 0; k < n; k++) {
    const weft_plugin_record_t *r = weft_plugins_get(k);
    if (r == NULL) continue;
    const char *path = r->path ? r->path : "?";
    if (r->error != NULL) {
      /* Loader messages start with the path; the line already does. */
      const char *why = r->error;
      size_t plen = strlen(path);
      if (strncmp(why, path, plen) == 0 && strncmp(why + plen, ": ", 2) == 0) why += plen + 2;
      printf("%s  FAILED: %s\n", path, why);
      continue;
    }
    const char *types = r->device_types && *r->device_types ? r->device_types : "-";
    printf("%s  %s %s  ABI %u.%u  devices: %s  kernels: %d  ops: %d\n", path,
           r->name ? r->name : "?", r->version ? r->version : "?", r->abi_major, r->abi_minor,
           types, r->n_kernels, r->n_ops);
  }
  /* A report, not a check: failed plugins are listed above and do not fail the command. */
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * weft run */

typedef struct feed_spec {
  char *arg;           /* as given, for messages */
  char *tensor_name;   /* "x" or "x:1" */
  char *node_name;
  int index;
  weft_dtype_t dtype;  /* WEFT_DT_INVALID: take the node's */
  const char *value;   /* JSON, inside arg */
} feed_spec_t;

static bool all_digits(const char *s) {
  if (*s == '\0') return false;
  for (; *s; s++) {
    if (!g_ascii_isdigit(*s)) return false;
  }
  return true;
}

/* "name[:index][:dtype]=value". A node name never holds ':' or '=', so the first '=' ends the
 * name part and its ':'-separated fields after the name are an index (digits) or a dtype. */
static bool parse_feed(const char *arg, feed_spec_t *f, char **why) {
  memset(f, 0, sizeof(*f));
  f->arg = g_strdup(arg);
  const char *eq = strchr(arg, '=');
  if (eq == NULL) {
    *why = g_strdup_printf("--feed '%s' has no '=': write NAME=VALUE", arg);
    return false;
  }
  f->value = f->arg + (eq - arg) + 1;
  char *left = g_strndup(arg, (gsize)(eq - arg));
  char **parts = g_strsplit(left, ":", -1);
  g_free(left);
  bool ok = parts[0] != NULL && parts[0][0] != '\0';
  bool have_index = false, have_dtype = false;
  if (!ok) *why = g_strdup_printf("--feed '%s' has no tensor name before '='", arg);
  for (int k = 1; ok && parts[k] != NULL; k++) {
    if (all_digits(parts[k]) && !have_index && !have_dtype && strlen(parts[k]) < 9) {
      f->index = atoi(parts[k]);
      have_index = true;
    } else if (!have_dtype && weft_dtype_from_name(parts[k], &f->dtype)) {
      have_dtype = true;
    } else {
      *why = g_strdup_printf("--feed '%s': '%s' is neither an output index nor a known dtype "
                             "(write NAME[:INDEX][:DTYPE]=VALUE, e.g. x:0:int32=[1,2])",
                             arg, parts[k]);
      ok = false;
    }
  }
  if (ok && *f->value == '\0') {
    *why = g_strdup_printf("--feed '%s' has no value after '='", arg);
    ok = false;
  }
  if (ok) {
    f->node_name = g_strdup(parts[0]);
    f->tensor_name =
        f->index > 0 ? g_strdup_printf("%s:%d", parts[0], f->index) : g_strdup(parts[0]);
  }
  g_strfreev(parts);
  return ok;
}

/* The tensor of a --feed value in `dtype` (WEFT_DT_INVALID: the JSON decides); a status naming
 * the --feed argument when the value does not read. The caller unrefs *out. */
static weft_status_t *feed_value(const feed_spec_t *f, weft_dtype_t dtype, weft_tensor_t **out) {
  weft_status_t *st = NULL;
  /* "@FILE": a .npy, .npz or JSON file (core/tools/weft_io.c). */
  if (f->value[0] == '@') {
    st = weft_cli_read_feed_file(f->value + 1, f->node_name, dtype, out);
    return st ? weft_status_prefix(st, "--feed %s", f->arg) : NULL;
  }
  *out = weft_tensor_from_json(f->value, dtype, &st);
  if (*out != NULL && st == NULL) return NULL;
  weft_tensor_unref(*out);
  *out = NULL;
  if (st == NULL)
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "could not read the value '%s'", f->value);
  return weft_status_prefix(st, "--feed %s", f->arg);
}

static void feed_spec_clear(feed_spec_t *f) {
  g_free(f->arg);
  g_free(f->tensor_name);
  g_free(f->node_name);
}

/* `"name"` as JSON text, escaped by json-glib. */
static char *json_quote(const char *s) {
  JsonNode *node = json_node_new(JSON_NODE_VALUE);
  json_node_set_string(node, s);
  char *out = json_to_string(node, FALSE);
  json_node_unref(node);
  return out;
}

static int print_fetches(char **fetches, weft_tensor_t **values, int n, bool as_json,
                         int max_elements, const char *output_dir) {
  if (output_dir != NULL) {
    weft_status_t *st = weft_cli_write_outputs(output_dir, fetches, values, n);
    if (st) return report_status(st);
  }
  if (!as_json) {
    for (int k = 0; k < n; k++) {
      char *text = weft_tensor_to_string(values[k], max_elements);
      printf("%s = %s\n", fetches[k], text);
      free(text);
    }
    return 0;
  }
  /* The tensors' own JSON is pasted in unchanged, so numbers print exactly as
   * weft_tensor_to_json writes them. */
  GString *out = g_string_new("{");
  /* A name fetched twice is one key: JSON readers disagree about duplicate keys. */
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (int k = 0; k < n; k++) {
    if (!g_hash_table_add(seen, fetches[k])) continue;
    char *key = json_quote(fetches[k]);
    char *value = weft_tensor_to_json(values[k]);
    g_string_append_printf(out, "%s%s: %s", out->len > 1 ? ", " : "", key,
                           value ? value : "null");
    g_free(key);
    free(value);
  }
  g_hash_table_destroy(seen);
  g_string_append(out, "}\n");
  fputs(out->str, stdout);
  g_string_free(out, TRUE);
  return 0;
}

/* `weft run --saved-model DIR`: the feeds and fetches of `weft run`, with names that may be keys
 * of --signature, against a SavedModel whose nodes are imported as the step needs them. The step
 * runs --repeat times in one session, so stateful models (a counter) show their state moving;
 * every run prints its fetches. */
static int run_saved_model(const char *dir, const char *tags, const char *signature, int repeat,
                           char **feed_args, char **fetches, char **targets, bool log_placement,
                           bool soft_placement, bool as_json, int max_elements,
                           const char *output_dir) {
  int n_feeds = feed_args ? (int)g_strv_length(feed_args) : 0;
  int n_fetches = fetches ? (int)g_strv_length(fetches) : 0;
  int n_targets = targets ? (int)g_strv_length(targets) : 0;
  if (repeat < 1) return usage_error("run", "--repeat must be at least 1, not %d", repeat);
  for (int k = 0; k < n_targets; k++) {
    if (is_server_target(targets[k]))
      return usage_error("run", "--saved-model runs in this process: no --target %s", targets[k]);
  }
  feed_spec_t *feeds = g_new0(feed_spec_t, n_feeds + 1);
  for (int k = 0; k < n_feeds; k++) {
    char *why = NULL;
    if (!parse_feed(feed_args[k], &feeds[k], &why)) {
      for (int j = 0; j <= k; j++) feed_spec_clear(&feeds[j]);
      g_free(feeds);
      int rc = usage_error("run", "%s", why);
      g_free(why);
      return rc;
    }
  }
  int status = EXIT_RUNTIME;
  weft_saved_model_t *model = NULL;
  weft_tensor_t **feed_values = g_new0(weft_tensor_t *, n_feeds + 1);
  const char **feed_names = g_new0(const char *, n_feeds + 1);
  char **fetch_names = NULL;
  weft_tensor_t **fetch_values = NULL;
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_log_device_placement(opts, log_placement);
  weft_session_options_set_allow_soft_placement(opts, soft_placement);
  weft_plugins_load_default();
  weft_status_t *st = weft_saved_model_load(dir, tags, opts, &model);
  weft_session_options_free(opts);
  if (!st && signature) st = weft_saved_model_signature(model, signature, NULL, NULL, NULL);
  if (st) {
    status = report_status(st);
    goto out;
  }
  /* Without --fetch, a signature's outputs are the fetches, in key order. */
  if (n_fetches == 0 && signature) {
    int n_out = 0;
    weft_status_free(weft_saved_model_signature(model, signature, NULL, &n_out, NULL));
    fetch_names = g_new0(char *, n_out + 1);
    for (int k = 0; k < n_out; k++) {
      weft_saved_model_tensor_info_t info;
      weft_status_free(weft_saved_model_signature_output(model, signature, k, &info));
      fetch_names[k] = g_strdup(info.key);
    }
    n_fetches = n_out;
  } else {
    fetch_names = g_strdupv(fetches ? fetches : (char *[]){NULL});
  }
  if (n_fetches == 0 && n_targets == 0) {
    GString *keys = g_string_new("");
    for (int k = 0; k < weft_saved_model_num_signatures(model); k++)
      g_string_append_printf(keys, "%s%s", k ? ", " : "", weft_saved_model_signature_key(model, k));
    status = usage_error("run", "nothing to run: give --signature KEY (this model has: %s), "
                         "--fetch or --target", keys->len ? keys->str : "none");
    g_string_free(keys, TRUE);
    goto out;
  }
  for (int k = 0; k < n_feeds; k++) {
    feed_spec_t *f = &feeds[k];
    weft_dtype_t dtype = f->dtype;
    /* Without a dtype the value takes the signature's or the node's, as plain `weft run`. */
    if (dtype == WEFT_DT_INVALID)
      weft_status_free(weft_saved_model_tensor_dtype(model, signature, f->tensor_name, &dtype));
    st = feed_value(f, dtype, &feed_values[k]);
    if (st) {
      status = report_status(st);
      goto out;
    }
    feed_names[k] = f->tensor_name;
  }
  /* A signature run as a whole (no --fetch) needs every input, as TensorFlow Serving does: say
   * which one is missing rather than what fails deep in the graph without it. With --fetch only
   * some inputs may matter, so a missing one is named only if the run then fails. */
  char *unfed = signature ? weft_cli_unfed_inputs(model, signature, feed_names, n_feeds) : NULL;
  if (unfed && (fetches == NULL || fetches[0] == NULL)) {
    status = report_status(weft_status_new(WEFT_INVALID_ARGUMENT, "signature '%s' needs input "
                                           "%s: feed it with --feed KEY=VALUE or KEY=@FILE.npy",
                                           signature, unfed));
    g_free(unfed);
    goto out;
  }
  fetch_values = g_new0(weft_tensor_t *, n_fetches + 1);
  status = 0;
  for (int r = 0; r < repeat && status == 0; r++) {
    st = weft_saved_model_run(model, signature, feed_names, feed_values, n_feeds,
                              (const char *const *)fetch_names, fetch_values, n_fetches,
                              (const char *const *)targets, n_targets);
    if (st && unfed) {
      st = weft_status_prefix(st, "signature '%s' input %s was not fed, and the run failed",
                              signature, unfed);
    }
    if (st) {
      status = report_status(st);
      break;
    }
    status = print_fetches(fetch_names, fetch_values, n_fetches, as_json, max_elements,
                           output_dir);
    for (int k = 0; k < n_fetches; k++) {
      weft_tensor_unref(fetch_values[k]);
      fetch_values[k] = NULL;
    }
  }
  g_free(unfed);

out:
  g_free(fetch_values);
  g_strfreev(fetch_names);
  weft_saved_model_free(model);
  for (int k = 0; k < n_feeds; k++) weft_tensor_unref(feed_values[k]);
  g_free(feed_values);
  g_free(feed_names);
  for (int k = 0; k < n_feeds; k++) feed_spec_clear(&feeds[k]);
  g_free(feeds);
  return status;
}

static int cmd_run(int argc, char **argv) {
  char *graph_path = NULL;
  char **feed_args = NULL, **fetches = NULL, **targets = NULL;
  gboolean log_placement = FALSE, soft_placement = FALSE, as_json = FALSE;
  int max_elements = 100;
  security_flags_t sec = {0};
  char *trace_path = NULL;
  char *saved_model_dir = NULL, *sm_tags = NULL, *sm_signature = NULL;
  char *output_dir = NULL;
  int sm_repeat = 1;
  GOptionEntry entries[] = {
      {"graph", 'g', 0, G_OPTION_ARG_FILENAME, &graph_path, "GraphDef to run (binary protobuf)",
       "FILE.pb"},
      {"saved-model", 0, 0, G_OPTION_ARG_FILENAME, &saved_model_dir,
       "run a TensorFlow SavedModel folder instead of --graph", "DIR"},
      {"tag", 0, 0, G_OPTION_ARG_STRING, &sm_tags,
       "with --saved-model: the MetaGraphDef's tag set (default serve)", "TAG[,TAG]"},
      {"signature", 0, 0, G_OPTION_ARG_STRING, &sm_signature,
       "with --saved-model: feed and fetch names may be this signature's keys; without --fetch, "
       "its outputs are fetched", "KEY"},
      {"repeat", 0, 0, G_OPTION_ARG_INT, &sm_repeat,
       "with --saved-model: run the step N times in one session, printing each", "N"},
      {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path,
       "write the step's per-node timings as a Chrome trace (chrome://tracing, Perfetto)",
       "FILE.json"},
      {"feed", 'f', 0, G_OPTION_ARG_STRING_ARRAY, &feed_args,
       "feed a tensor: VALUE is a JSON number or nested array, or @FILE (FILE.npy, FILE.npz, "
       "FILE.npz:KEY, else a JSON file); DTYPE defaults to the node's "
       "(e.g. x=2, x:0=[1,2], x:int32=[[1,2],[3,4]], x=@x.npy)",
       "NAME[:INDEX][:DTYPE]=VALUE"},
      {"fetch", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &fetches, "print this tensor", "NAME[:INDEX]"},
      {"output", 0, 0, G_OPTION_ARG_FILENAME, &output_dir,
       "also write each fetch to DIR/NAME.npy ('/', ':' and other characters not allowed in "
       "file names become '_')", "DIR"},
      {"target", 't', 0, G_OPTION_ARG_STRING_ARRAY, &targets,
       "run this node for its effects; a grpc://HOST:PORT (grpcs:// for TLS) target runs the "
       "graph on that server's cluster instead of in this process",
       "NODE|grpc[s]://HOST:PORT"},
      SECURITY_OPTION_ENTRIES(sec),
      {"log-device-placement", 0, 0, G_OPTION_ARG_NONE, &log_placement,
       "log the device each node is placed on", NULL},
      {"allow-soft-placement", 0, 0, G_OPTION_ARG_NONE, &soft_placement,
       "place a node elsewhere when its requested device has no kernel for it", NULL},
      {"json", 'j', 0, G_OPTION_ARG_NONE, &as_json,
       "print one JSON object {NAME: {dtype, shape, values}}", NULL},
      {"max-elements", 0, 0, G_OPTION_ARG_INT, &max_elements,
       "elements printed per tensor without --json (-1: all)", "N"},
      {NULL}};
  int status = EXIT_USAGE;
  int n_feeds = 0, n_fetches = 0, n_targets = 0;
  feed_spec_t *feeds = NULL;
  weft_graph_t *graph = NULL;
  weft_tensor_t **feed_values = NULL, **fetch_values = NULL;
  const char **feed_names = NULL;
  weft_session_t *session = NULL;
  weft_session_options_t *opts = NULL;
  weft_status_t *st = NULL;
  char *session_target = NULL;

  if (!parse_options("run", entries, "import a GraphDef and run it", &argc, &argv)) goto out;
  if (saved_model_dir != NULL) {
    status = graph_path ? usage_error("run", "--graph and --saved-model exclude each other")
                        : run_saved_model(saved_model_dir, sm_tags, sm_signature, sm_repeat,
                                          feed_args, fetches, targets, log_placement,
                                          soft_placement, as_json, max_elements, output_dir);
    goto out;
  }
  if (sm_tags || sm_signature || sm_repeat != 1) {
    usage_error("run", "--tag, --signature and --repeat need --saved-model DIR");
    goto out;
  }
  if (graph_path == NULL) {
    usage_error("run", "--graph FILE.pb is required");
    goto out;
  }
  n_feeds = feed_args ? (int)g_strv_length(feed_args) : 0;
  n_fetches = fetches ? (int)g_strv_length(fetches) : 0;
  n_targets = targets ? (int)g_strv_length(targets) : 0;
  /* TensorFlow calls the server a session's target: `--target grpc://...` is that one. */
  for (int k = 0; k < n_targets; k++) {
    if (!is_server_target(targets[k])) continue;
    if (session_target) {
      usage_error("run", "more than one --target grpc[s]://... given");
      goto out;
    }
    session_target = targets[k];
    memmove(&targets[k], &targets[k + 1], sizeof(char *) * (size_t)(n_targets - k));
    n_targets--;
    k--;
  }
  if (n_fetches == 0 && n_targets == 0) {
    usage_error("run", "nothing to run: give at least one --fetch or --target");
    goto out;
  }
  if (!session_target && security_flags_given(&sec)) {
    usage_error("run", "--tls-* and --auth-token-file need --target grpc[s]://HOST:PORT");
    goto out;
  }
  feeds = g_new0(feed_spec_t, n_feeds + 1);
  for (int k = 0; k < n_feeds; k++) {
    char *why = NULL;
    if (!parse_feed(feed_args[k], &feeds[k], &why)) {
      usage_error("run", "%s", why);
      g_free(why);
      goto out;
    }
  }

  status = EXIT_RUNTIME;
  graph = weft_graph_new();
  st = weft_graph_import_graphdef_file(graph, graph_path, NULL);
  if (st) {
    status = report_status(st);
    goto out;
  }
  weft_plugins_load_default();

  feed_values = g_new0(weft_tensor_t *, n_feeds + 1);
  feed_names = g_new0(const char *, n_feeds + 1);
  for (int k = 0; k < n_feeds; k++) {
    feed_spec_t *f = &feeds[k];
    weft_dtype_t dtype = f->dtype;
    /* Without a dtype the value takes the one the graph declares (a Placeholder's dtype), so
     * `--feed a=2` feeds 2.0 to a float placeholder rather than an int32 2. */
    weft_node_t *node = weft_graph_node(graph, f->node_name);
    if (dtype == WEFT_DT_INVALID && node != NULL && f->index < weft_node_num_outputs(node)) {
      int declared = (int)weft_node_output_dtype(node, f->index);
      if (declared > WEFT_DT_REF_OFFSET) declared -= WEFT_DT_REF_OFFSET;
      dtype = (weft_dtype_t)declared;
    }
    st = feed_value(f, dtype, &feed_values[k]);
    if (st) {
      status = report_status(st);
      goto out;
    }
    feed_names[k] = f->tensor_name;
  }

  opts = weft_session_options_new();
  weft_session_options_set_log_device_placement(opts, log_placement);
  weft_session_options_set_allow_soft_placement(opts, soft_placement);
  if (session_target) weft_session_options_set_target(opts, session_target);
  security_flags_apply(&sec, opts);
  st = NULL;
  session = weft_session_new(graph, opts, &st);
  weft_session_options_free(opts);
  if (session == NULL || st != NULL) {
    if (st == NULL) st = weft_status_new(WEFT_INTERNAL, "could not open a session");
    status = report_status(st);
    goto out;
  }
  fetch_values = g_new0(weft_tensor_t *, n_fetches + 1);
  {
    weft_run_options_t *run_opts = weft_run_options_new();
    weft_run_options_set_trace_level(run_opts, trace_path ? WEFT_TRACE_FULL : WEFT_TRACE_NONE);
    weft_run_metadata_t *meta = NULL;
    st = weft_session_run_with_options(session, run_opts, feed_names, feed_values, n_feeds,
                                       (const char *const *)fetches, fetch_values, n_fetches,
                                       (const char *const *)targets, n_targets,
                                       trace_path ? &meta : NULL);
    weft_run_options_free(run_opts);
    if (!st && trace_path) st = weft_run_metadata_write_chrome_trace(meta, trace_path);
    weft_run_metadata_free(meta);
  }
  if (st) {
    status = report_status(st);
    goto out;
  }
  status = print_fetches(fetches, fetch_values, n_fetches, as_json, max_elements, output_dir);

out:
  for (int k = 0; fetch_values && k < n_fetches; k++) weft_tensor_unref(fetch_values[k]);
  g_free(fetch_values);
  weft_session_free(session);
  for (int k = 0; feed_values && k < n_feeds; k++) weft_tensor_unref(feed_values[k]);
  g_free(feed_values);
  g_free(feed_names);
  weft_graph_free(graph);
  for (int k = 0; feeds && k < n_feeds; k++) feed_spec_clear(&feeds[k]);
  g_free(feeds);
  g_free(graph_path);
  g_free(trace_path);
  g_free(output_dir);
  g_free(saved_model_dir);
  g_free(sm_tags);
  g_free(sm_signature);
  g_free(session_target);
  security_flags_clear(&sec);
  g_strfreev(feed_args);
  g_strfreev(fetches);
  g_strfreev(targets);
  return status;
}

/* ---------------------------------------------------------------------------------------------
 * weft checkpoint ls */

/* The checkpoint prefix PATH names: a SavedModel folder's variables/variables, the latest
 * checkpoint of a folder's `checkpoint` state file, or PATH itself (a trailing ".index" dropped).
 * The caller g_free()s *prefix. */
static weft_status_t *checkpoint_prefix(const char *path, char **prefix) {
  *prefix = NULL;
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    char *sm = g_build_filename(path, "variables", "variables", NULL);
    char *sm_index = g_strconcat(sm, ".index", NULL);
    char *state = g_build_filename(path, "checkpoint", NULL);
    weft_status_t *st = NULL;
    if (g_file_test(sm_index, G_FILE_TEST_EXISTS)) {
      *prefix = g_strdup(sm);
    } else if (g_file_test(state, G_FILE_TEST_EXISTS)) {
      st = weft_checkpoint_state_read(path, prefix, NULL);
      if (!st && (*prefix == NULL || **prefix == '\0')) {
        g_free(*prefix);
        *prefix = NULL;
        st = weft_status_new(WEFT_NOT_FOUND, "'%s' names no latest checkpoint", state);
      }
    } else {
      st = weft_status_new(WEFT_NOT_FOUND, "'%s' is a folder with neither a `checkpoint` state "
                           "file nor variables/variables.index (a SavedModel's)", path);
    }
    g_free(state);
    g_free(sm_index);
    g_free(sm);
    return st;
  }
  *prefix = g_str_has_suffix(path, ".index") ? g_strndup(path, strlen(path) - strlen(".index"))
                                             : g_strdup(path);
  return NULL;
}

static char *dims_string(int rank, const int64_t *dims) {
  GString *s = g_string_new("[");
  for (int d = 0; d < rank; d++)
    g_string_append_printf(s, "%s%lld", d ? "," : "", (long long)dims[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static int checkpoint_ls(const char *path, bool as_json, bool values, int max_elements) {
  char *prefix = NULL;
  weft_checkpoint_reader_t *reader = NULL;
  weft_status_t *st = checkpoint_prefix(path, &prefix);
  if (!st) st = weft_checkpoint_reader_open(prefix, &reader);
  if (st) {
    g_free(prefix);
    return report_status(weft_status_prefix(st, "checkpoint ls %s", path));
  }
  GString *json = g_string_new("");
  if (as_json) {
    char *q = json_quote(prefix);
    g_string_append_printf(json, "{\"prefix\": %s, \"tensors\": [", q);
    g_free(q);
  }
  int n = weft_checkpoint_reader_num_tensors(reader);
  for (int i = 0; i < n && !st; i++) {
    const char *key = weft_checkpoint_reader_key(reader, i);
    weft_dtype_t dtype = WEFT_DT_INVALID;
    int rank = 0;
    int64_t dims[WEFT_MAX_RANK];
    st = weft_checkpoint_reader_info(reader, key, &dtype, &rank, dims);
    weft_tensor_t *t = NULL;
    if (!st && values) st = weft_checkpoint_reader_read(reader, key, &t);
    if (st) break;
    char *shape = dims_string(rank, dims);
    if (as_json) {
      char *q = json_quote(key);
      g_string_append_printf(json, "%s{\"name\": %s, \"dtype\": \"%s\", \"shape\": %s",
                             i ? ", " : "", q, weft_dtype_name(dtype), shape);
      g_free(q);
      if (t) {
        char *v = weft_tensor_to_json(t);
        g_string_append_printf(json, ", \"value\": %s", v ? v : "null");
        free(v);
      }
      g_string_append_c(json, '}');
    } else {
      printf("%s (%s) %s\n", key, weft_dtype_name(dtype), shape);
      if (t) {
        char *v = weft_tensor_to_string(t, max_elements);
        printf("  %s\n", v);
        free(v);
      }
    }
    weft_tensor_unref(t);
    g_free(shape);
  }
  weft_checkpoint_reader_free(reader);
  g_free(prefix);
  int status = 0;
  if (st) {
    status = report_status(weft_status_prefix(st, "checkpoint ls %s", path));
  } else if (as_json) {
    g_string_append(json, "]}\n");
    fputs(json->str, stdout);
  }
  g_string_free(json, TRUE);
  return status;
}

static int cmd_checkpoint(int argc, char **argv) {
  static const char help[] =
      "Usage:\n  weft checkpoint ls PATH [--json] [--values] [--max-elements N]\n\n"
      "Lists the tensors of a TensorFlow checkpoint, one line each: NAME (DTYPE) [SHAPE].\n"
      "PATH is a checkpoint prefix (PREFIX.index exists), a folder with a `checkpoint` state\n"
      "file (its latest checkpoint), or a SavedModel folder (its variables/variables).\n\n"
      "Options:\n  --json            one JSON object {prefix, tensors: [{name, dtype, shape}]}\n"
      "  --values          also print each tensor's values\n"
      "  --max-elements N  elements printed per tensor without --json (-1: all)\n";
  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    fputs(help, stdout);
    return 0;
  }
  if (argc < 2 || strcmp(argv[1], "ls") != 0)
    return usage_error("checkpoint", "expected 'ls PATH' (see weft help checkpoint)");
  gboolean as_json = FALSE, values = FALSE;
  int max_elements = 100;
  char **rest = NULL;
  GOptionEntry entries[] = {
      {"json", 'j', 0, G_OPTION_ARG_NONE, &as_json,
       "print one JSON object {prefix, tensors: [{name, dtype, shape}]}", NULL},
      {"values", 0, 0, G_OPTION_ARG_NONE, &values, "also print each tensor's values", NULL},
      {"max-elements", 0, 0, G_OPTION_ARG_INT, &max_elements,
       "elements printed per tensor without --json (-1: all)", "N"},
      {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &rest, NULL, "PATH"},
      {NULL}};
  int sub_argc = argc - 1;
  char **sub_argv = argv + 1;
  int status = EXIT_USAGE;
  if (!parse_options("checkpoint", entries, "list the tensors of a checkpoint", &sub_argc,
                     &sub_argv)) {
    goto out;
  }
  if (rest == NULL || rest[0] == NULL || rest[1] != NULL) {
    usage_error("checkpoint", "ls takes exactly one PATH");
    goto out;
  }
  status = checkpoint_ls(rest[0], as_json, values, max_elements);
out:
  g_strfreev(rest);
  return status;
}

/* ---------------------------------------------------------------------------------------------
 * weft help */

static int cmd_help(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stdout);
    return 0;
  }
  const command_t *c = find_command(argv[1]);
  if (c == NULL) return usage_error(NULL, "unknown command '%s'", argv[1]);
  if (c->run == cmd_help) {
    print_usage(stdout);
    return 0;
  }
  /* Each command's GOptionContext knows its options; --help makes it print them. */
  char *args[] = {(char *)c->name, (char *)"--help", NULL};
  return c->run(2, args);
}

/* The benchmarks live in bench/ (docs/performance.md). */
static int cmd_bench(int argc, char **argv) {
  g_set_prgname("weft bench"); /* its --help says "weft bench [OPTION...]" */
  return weft_bench_main(argc, argv);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "weft: error: no command given\n");
    print_usage(stderr);
    return EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
    printf("weft %s (plugin ABI %d.%d)\n", WEFT_VERSION, WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
    return 0;
  }
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
    print_usage(stdout);
    return 0;
  }
  const command_t *c = find_command(name);
  if (c == NULL) return usage_error(NULL, "unknown command '%s'", name);
  /* The subcommand sees itself as argv[0], as GOptionContext expects. */
  return c->run(argc - 1, argv + 1);
}
