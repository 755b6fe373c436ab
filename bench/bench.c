/* The `weft bench` harness: options, repeated timing with warm-up, median/min/max, the console
 * table and the JSON report. Benchmarks themselves live in bench_kernels.c and bench_session.c. */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct bench_report {
  GPtrArray *results; /* bench_result_t* */
};

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One --only pattern against a benchmark name: a glob (* or ?) must match the whole name;
 * otherwise NAME selects the benchmark of that exact name and the group NAME/ (every name that
 * starts with "NAME/"; a trailing '/' may be written). Substrings never match: "step" selects
 * step/chain_100 but not remote_step/scalar, and "chain_100" selects nothing. */
static bool pattern_selects(const char *pattern, const char *name) {
  if (strpbrk(pattern, "*?")) return g_pattern_match_simple(pattern, name);
  size_t n = strlen(pattern);
  if (n > 0 && pattern[n - 1] == '/') return g_str_has_prefix(name, pattern);
  return strcmp(pattern, name) == 0 || (g_str_has_prefix(name, pattern) && name[n] == '/');
}

bool bench_selected(const bench_options_t *o, const char *name) {
  if (!o->only) return true;
  for (const char *const *p = o->only; *p; p++)
    if (pattern_selects(*p, name)) return true;
  return false;
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void summarise(double *values, int n, bench_stats_t *out) {
  qsort(values, (size_t)n, sizeof(double), compare_doubles);
  out->runs = n;
  out->min = values[0];
  out->max = values[n - 1];
  out->median = (n % 2) ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/* A run lasts at least this long: a body of a fraction of a millisecond (matmul/256) timed once
 * per run is at the mercy of one timer interrupt or one descheduling. */
#define BENCH_MIN_RUN_SECONDS 0.02
#define BENCH_MAX_CALLS_PER_RUN 1000

/* One run: `calls` calls of body, each timing itself; the value is of their mean. */
static bool measure_once(bench_body_fn body, void *arg, int calls, double scale, bool throughput,
                         double *value, weft_status_t **error) {
  double seconds = 0;
  for (int k = 0; k < calls; k++) {
    double one = body(arg, error);
    if (one < 0) return false;
    seconds += one;
  }
  seconds /= calls;
  if (seconds < 1e-12) seconds = 1e-12;
  *value = throughput ? scale / seconds : seconds * scale;
  return true;
}

/* Calls per run so that a run of a body that took `seconds` of wall time (its last warm-up
 * call, timed here: a body may report a time per inner repetition) lasts
 * BENCH_MIN_RUN_SECONDS. */
static int calls_for(double seconds) {
  if (seconds >= BENCH_MIN_RUN_SECONDS) return 1;
  double calls = BENCH_MIN_RUN_SECONDS / (seconds > 1e-9 ? seconds : 1e-9);
  return calls >= BENCH_MAX_CALLS_PER_RUN ? BENCH_MAX_CALLS_PER_RUN : (int)calls + 1;
}

bool bench_measure(const bench_options_t *o, bench_body_fn body, void *arg, double scale,
                   bool throughput, bench_stats_t *out, weft_status_t **error) {
  double last = BENCH_MIN_RUN_SECONDS;
  for (int k = 0; k < o->warmup; k++) {
    double t0 = bench_now();
    if (body(arg, error) < 0) return false;
    last = bench_now() - t0;
  }
  int calls = o->warmup > 0 ? calls_for(last) : 1;
  double *values = g_new(double, o->runs);
  bool ok = true;
  for (int k = 0; ok && k < o->runs; k++)
    ok = measure_once(body, arg, calls, scale, throughput, &values[k], error);
  if (ok) summarise(values, o->runs, out);
  out->calls_per_run = calls;
  g_free(values);
  return ok;
}

/* Sides 0..n-1 of a row (Weft, then the others): after all warm up, each round runs every side
 * once, starting from another side each round and going the other way every second round
 * (W B P, P B W, B P W, ...), so that a machine getting busier or quieter during the row weighs
 * on every side alike. Every side makes the same number of calls per run, sized by the slowest. */
static bool measure_sides(const bench_options_t *o, int n, const bench_body_fn *bodies,
                          void *const *args, double scale, bool throughput, bench_stats_t **out,
                          weft_status_t **error) {
  double slowest = BENCH_MIN_RUN_SECONDS;
  for (int k = 0; k < o->warmup; k++) {
    slowest = 0;
    for (int s = 0; s < n; s++) {
      double t0 = bench_now();
      if (bodies[s](args[s], error) < 0) return false;
      double dt = bench_now() - t0;
      if (dt > slowest) slowest = dt;
    }
  }
  int calls = o->warmup > 0 ? calls_for(slowest) : 1;
  double *values = g_new(double, (size_t)n * (size_t)o->runs);
  bool ok = true;
  for (int k = 0; ok && k < o->runs; k++) {
    for (int j = 0; ok && j < n; j++) {
      int s = (k % 2 == 0) ? (k / 2 + j) % n : (k / 2 + n - j) % n;
      if (n == 2) s = (k % 2 == 0) ? j : 1 - j; /* the pair: W B, B W, ... as it always was */
      ok = measure_once(bodies[s], args[s], calls, scale, throughput, &values[s * o->runs + k],
                        error);
    }
  }
  for (int s = 0; s < n; s++) {
    if (ok) summarise(&values[s * o->runs], o->runs, out[s]);
    out[s]->calls_per_run = calls;
  }
  g_free(values);
  return ok;
}

bool bench_measure_pair(const bench_options_t *o, bench_body_fn weft_body, void *weft_arg,
                        bench_body_fn base_body, void *base_arg, double scale, bool throughput,
                        bench_stats_t *weft, bench_stats_t *base, weft_status_t **error) {
  bench_body_fn bodies[2] = {weft_body, base_body};
  void *args[2] = {weft_arg, base_arg};
  bench_stats_t *out[2] = {weft, base};
  return measure_sides(o, 2, bodies, args, scale, throughput, out, error);
}

bool bench_measure_row(const bench_options_t *o, bench_body_fn weft_body, void *weft_arg,
                       bench_body_fn base_body, void *base_arg, bench_body_fn peer_body,
                       void *peer_arg, double scale, bool throughput, bench_stats_t *weft,
                       bench_stats_t *base, bench_stats_t *peer, weft_status_t **error) {
  bench_body_fn bodies[3] = {weft_body};
  void *args[3] = {weft_arg};
  bench_stats_t *out[3] = {weft};
  int n = 1;
  if (base_body) {
    bodies[n] = base_body;
    args[n] = base_arg;
    out[n++] = base;
  }
  if (peer_body) {
    bodies[n] = peer_body;
    args[n] = peer_arg;
    out[n++] = peer;
  }
  return measure_sides(o, n, bodies, args, scale, throughput, out, error);
}

void bench_report_add(bench_report_t *r, bench_result_t *res) {
  g_ptr_array_add(r->results, res);
  /* Progress as it happens: the whole suite takes a while. */
  if (res->skipped) {
    fprintf(stderr, "bench: %s skipped: %s\n", res->name, res->note ? res->note : "");
  } else {
    fprintf(stderr, "bench: %s done\n", res->name);
  }
}

void bench_add_row(bench_report_t *r, const char *name, const char *params, const char *unit,
                   bool higher_is_better, const bench_stats_t *weft, const bench_stats_t *base,
                   const char *base_name, const char *note) {
  bench_result_t *res = g_new0(bench_result_t, 1);
  res->name = g_strdup(name);
  res->params = g_strdup(params);
  res->unit = g_strdup(unit);
  res->higher_is_better = higher_is_better;
  res->weft = *weft;
  if (base) res->baseline = *base;
  res->baseline_name = g_strdup(base_name);
  res->note = g_strdup(note);
  bench_report_add(r, res);
}

void bench_add_skip(bench_report_t *r, const char *name, const char *why) {
  bench_result_t *res = g_new0(bench_result_t, 1);
  res->name = g_strdup(name);
  res->params = g_strdup("");
  res->unit = g_strdup("");
  res->note = g_strdup(why);
  res->skipped = true;
  bench_report_add(r, res);
}

void bench_add_failure(bench_report_t *r, const char *name, weft_status_t *st) {
  char *why = g_strdup_printf("failed: %s", st ? weft_status_message(st) : "unknown error");
  bench_add_skip(r, name, why);
  g_free(why);
  weft_status_free(st);
}

/* weft/baseline, oriented so that > 1 means Weft is better. */
static double ratio_of(const bench_result_t *res);

static bench_result_t *last_row(bench_report_t *r) {
  return r->results->len ? r->results->pdata[r->results->len - 1] : NULL;
}

void bench_set_target_met(bench_report_t *r, bool met) {
  bench_result_t *res = last_row(r);
  if (res && !res->skipped) res->target = met ? BENCH_TARGET_MET : BENCH_TARGET_MISSED;
}

void bench_set_target_ratio(bench_report_t *r, double min_ratio) {
  bench_result_t *res = last_row(r);
  if (res && !res->skipped) bench_set_target_met(r, ratio_of(res) >= min_ratio);
}

void bench_set_peer(bench_report_t *r, const bench_stats_t *peer, const char *note) {
  bench_result_t *res = last_row(r);
  if (!res || res->skipped) return;
  if (peer) res->peer = *peer;
  g_free(res->peer_note);
  res->peer_note = g_strdup(note);
}

static const char *target_text(const bench_result_t *res) {
  return res->target == BENCH_TARGET_MET      ? "met"
         : res->target == BENCH_TARGET_MISSED ? "missed"
                                              : "-";
}

static void result_free(bench_result_t *res) {
  g_free(res->name);
  g_free(res->params);
  g_free(res->unit);
  g_free(res->baseline_name);
  g_free(res->note);
  g_free(res->peer_note);
  g_free(res);
}

/* weft/baseline, oriented so that > 1 means Weft is better. */
static double ratio_of(const bench_result_t *res) {
  if (res->baseline.runs == 0 || res->baseline.median <= 0 || res->weft.median <= 0) return 0;
  return res->higher_is_better ? res->weft.median / res->baseline.median
                               : res->baseline.median / res->weft.median;
}

/* Weft's time over the peer's (lower is better for Weft), from the medians; 0 without a peer. */
static double peer_ratio_of(const bench_result_t *res) {
  if (res->peer.runs == 0 || res->peer.median <= 0 || res->weft.median <= 0) return 0;
  return res->higher_is_better ? res->peer.median / res->weft.median
                               : res->weft.median / res->peer.median;
}

static void print_table(const bench_report_t *r, const bench_options_t *o) {
  bool peer = o->peer_name != NULL;
  printf("%-34s %14s %14s %-26s %8s %-6s", "benchmark", "weft", "baseline", "(baseline is)",
         "ratio", "target");
  if (peer) printf(" %14s %9s", o->peer_name, "weft/peer");
  printf("  note\n");
  for (guint k = 0; k < r->results->len; k++) {
    const bench_result_t *res = r->results->pdata[k];
    if (res->skipped) {
      printf("%-34s %14s %14s %-26s %8s %-6s", res->name, "-", "-", "", "-", "-");
      if (peer) printf(" %14s %9s", "-", "-");
      printf("  %s\n", res->note ? res->note : "skipped");
      continue;
    }
    char weft[64], base[64], ratio[32];
    g_snprintf(weft, sizeof weft, "%.4g %s", res->weft.median, res->unit);
    if (res->baseline.runs) {
      g_snprintf(base, sizeof base, "%.4g %s", res->baseline.median, res->unit);
      g_snprintf(ratio, sizeof ratio, "%.2fx", ratio_of(res));
    } else {
      g_strlcpy(base, "-", sizeof base);
      g_strlcpy(ratio, "-", sizeof ratio);
    }
    printf("%-34s %14s %14s %-26s %8s %-6s", res->name, weft, base,
           res->baseline_name ? res->baseline_name : "", ratio, target_text(res));
    if (peer) {
      char pv[64] = "-", pr[32] = "-";
      if (res->peer.runs) {
        g_snprintf(pv, sizeof pv, "%.4g %s", res->peer.median, res->unit);
        g_snprintf(pr, sizeof pr, "%.2fx", peer_ratio_of(res));
      }
      printf(" %14s %9s", pv, pr);
    }
    const char *note = res->note ? res->note : "";
    if (peer && res->peer_note) printf("  %s%speer: %s\n", note, *note ? "; " : "", res->peer_note);
    else printf("  %s\n", note);
  }
  printf("ratio: Weft relative to the baseline, > 1 means Weft is better; medians of each side.\n"
         "target: met or missed, for rows whose note states a target.\n");
  if (peer && o->peer)
    printf("peer: ONNX Runtime %s (%s), %d intra-op thread%s, graph optimizations on; weft/peer: "
           "Weft's time over the peer's, < 1 means Weft is faster.\n",
           bench_peer_version(o->peer), bench_peer_path(o->peer), o->threads,
           o->threads == 1 ? "" : "s");
  else if (peer)
    printf("peer: %s\n", o->peer_why);
}

static void json_stats(GString *s, const char *key, const bench_stats_t *st) {
  g_string_append_printf(s, "\"%s\": {\"median\": %.9g, \"min\": %.9g, \"max\": %.9g, "
                         "\"runs\": %d, \"calls_per_run\": %d}", key, st->median, st->min,
                         st->max, st->runs, st->calls_per_run > 0 ? st->calls_per_run : 1);
}

static void json_string(GString *s, const char *v) {
  if (!v) {
    g_string_append(s, "null");
    return;
  }
  g_string_append_c(s, '"');
  for (const char *p = v; *p; p++) {
    if (*p == '"' || *p == '\\') g_string_append_c(s, '\\');
    if ((unsigned char)*p < 0x20) g_string_append_printf(s, "\\u%04x", *p);
    else g_string_append_c(s, *p);
  }
  g_string_append_c(s, '"');
}

static bool write_json(const bench_report_t *r, const char *path, weft_status_t **error) {
  GString *s = g_string_new("[\n");
  for (guint k = 0; k < r->results->len; k++) {
    const bench_result_t *res = r->results->pdata[k];
    g_string_append(s, "  {\"name\": ");
    json_string(s, res->name);
    g_string_append(s, ", \"parameters\": ");
    json_string(s, res->params);
    g_string_append(s, ", \"unit\": ");
    json_string(s, res->unit);
    g_string_append_printf(s, ", \"skipped\": %s, \"note\": ", res->skipped ? "true" : "false");
    json_string(s, res->note);
    if (!res->skipped) {
      g_string_append_printf(s, ", \"weft\": %.9g, ", res->weft.median);
      json_stats(s, "weft_runs", &res->weft);
      if (res->baseline.runs) {
        g_string_append_printf(s, ", \"baseline\": %.9g, \"baseline_name\": ", res->baseline.median);
        json_string(s, res->baseline_name);
        g_string_append(s, ", ");
        json_stats(s, "baseline_runs", &res->baseline);
        g_string_append_printf(s, ", \"ratio\": %.6g", ratio_of(res));
      } else {
        g_string_append(s, ", \"baseline\": null, \"ratio\": null");
      }
      g_string_append_printf(s, ", \"runs\": %d", res->weft.runs);
      if (res->peer.runs) {
        g_string_append_printf(s, ", \"peer\": %.9g, ", res->peer.median);
        json_stats(s, "peer_runs", &res->peer);
        g_string_append_printf(s, ", \"peer_ratio\": %.6g", peer_ratio_of(res));
      } else {
        g_string_append(s, ", \"peer\": null, \"peer_runs\": null, \"peer_ratio\": null");
      }
      g_string_append(s, ", \"peer_note\": ");
      json_string(s, res->peer_note);
    }
    if (res->target == BENCH_NO_TARGET) g_string_append(s, ", \"target\": null");
    else g_string_append_printf(s, ", \"target\": \"%s\"", target_text(res));
    g_string_append_printf(s, "}%s\n", k + 1 < r->results->len ? "," : "");
  }
  g_string_append(s, "]\n");
  GError *gerr = NULL;
  bool ok = g_file_set_contents(path, s->str, (gssize)s->len, &gerr);
  if (!ok) {
    *error = weft_status_new(WEFT_PERMISSION_DENIED, "could not write %s: %s", path, gerr->message);
    g_error_free(gerr);
  }
  g_string_free(s, TRUE);
  return ok;
}

/* The local device --device names, as "/device:TYPE:N": a device spec ("/device:VULKAN:0"), a
 * type ("vulkan") or a type and ordinal ("CUDA:1"), the type in any case. NULL when no local
 * device is that one; *known then lists them. */
static char *resolve_device(const char *wanted, char **known) {
  const char *short_form = g_str_has_prefix(wanted, "/device:") ? wanted + strlen("/device:")
                                                                 : wanted;
  char **parts = g_strsplit(short_form, ":", 3);
  int ordinal = 0;
  bool ok = parts[0] && *parts[0] && (!parts[1] || !parts[2]);
  if (ok && parts[1]) {
    char *end = NULL;
    gint64 v = g_ascii_strtoll(parts[1], &end, 10);
    ok = *parts[1] && end && !*end && v >= 0 && v <= G_MAXINT;
    ordinal = (int)v;
  }
  char *found = NULL;
  GString *all = g_string_new(NULL);
  for (int k = 0; k < weft_devices_count(); k++) {
    const weft_device_info_t *d = weft_devices_get(k);
    char *spec = g_strdup_printf("/device:%s:%d", d->device_type, d->ordinal);
    g_string_append_printf(all, "%s%s", all->len ? ", " : "", spec);
    if (ok && !found && g_ascii_strcasecmp(parts[0], d->device_type) == 0 &&
        ordinal == d->ordinal)
      found = g_strdup(spec);
    g_free(spec);
  }
  g_strfreev(parts);
  *known = g_string_free(all, FALSE);
  return found;
}

/* A usage error of `weft bench`, printed as every weft subcommand prints one. */
static int usage_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  fprintf(stderr, "weft: error: %s\nTry 'weft help bench'.\n", msg);
  g_free(msg);
  return 2;
}

int weft_bench_main(int argc, char **argv) {
  /* The hidden mode the netns_transfer rows start in a namespace: none of the options below. */
  if (argc > 1 && g_str_has_prefix(argv[1], "--netns-child"))
    return bench_netns_child_main(argc, argv);
  if (argc > 1 && strcmp(argv[1], "--attack-child") == 0) return bench_attack_child_main(argc, argv);
  char **only = NULL, **feeds = NULL, **fetches = NULL;
  char *json = NULL, *device = NULL, *peer_name = NULL, *peer_lib = NULL;
  char *graph_path = NULL, *saved_model = NULL;
  gboolean quick = FALSE;
  gint threads = 0, batch = 1;
  GOptionEntry entries[] = {
      {"only", 0, 0, G_OPTION_ARG_STRING_ARRAY, &only,
       "run only this benchmark (an exact name: step/chain_100), this group (step or step/: every "
       "step/... name) or the names a glob matches whole (*/scalar_addv2); repeatable", "NAME"},
      {"json", 0, 0, G_OPTION_ARG_FILENAME, &json, "write one JSON record per benchmark to FILE", "FILE"},
      {"device", 0, 0, G_OPTION_ARG_STRING, &device,
       "device for the kernel benchmarks: /device:VULKAN:0, VULKAN, vulkan:0 (default "
       "/device:CPU:0)", "D"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &quick, "fewer runs and smaller sizes (a smoke run)", NULL},
      {"threads", 0, 0, G_OPTION_ARG_INT, &threads,
       "threads for Weft's kernels, the baselines and the peer (default: one per core)", "N"},
      {"peer", 0, 0, G_OPTION_ARG_STRING, &peer_name,
       "time a peer runtime beside Weft on the rows it can run: ort (ONNX Runtime, opened at run "
       "time; scripts/install-ort-peer.sh installs it)", "NAME"},
      {"peer-lib", 0, 0, G_OPTION_ARG_FILENAME, &peer_lib,
       "the peer's library (default: $WEFT_ORT_LIB, then the build tree's ort-peer/, then the "
       "loader's path)", "PATH"},
      {"graph", 0, 0, G_OPTION_ARG_FILENAME, &graph_path,
       "time a step of this frozen TensorFlow GraphDef instead of the benchmarks (with --peer ort: "
       "beside ONNX Runtime running it exported to ONNX)", "FILE.pb"},
      {"saved-model", 0, 0, G_OPTION_ARG_FILENAME, &saved_model,
       "the same for a SavedModel's serving signature", "DIR"},
      {"feed", 0, 0, G_OPTION_ARG_STRING_ARRAY, &feeds,
       "with --graph: feed tensor NAME random values of this shape (default: every Placeholder, "
       "its unknown dimensions --batch); repeatable", "NAME=SHAPE"},
      {"fetch", 0, 0, G_OPTION_ARG_STRING_ARRAY, &fetches,
       "with --graph: the tensor a step fetches (default: the last float32 output nothing reads)",
       "NAME"},
      {"batch", 0, 0, G_OPTION_ARG_INT, &batch,
       "with --graph: the size of the feeds' unknown (-1) dimensions (default 1)", "N"},
      {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  GOptionContext *ctx = g_option_context_new("- measure Weft against baselines run beside it");
  g_option_context_set_description(ctx,
      "The table goes to stdout, progress to stderr. Its target column says met or missed for\n"
      "each row whose note states a target. Exit status: 0 done (missed targets included),\n"
      "1 the --json file could not be written, 2 a usage error or an --only that matches\n"
      "no benchmark. See docs/performance.md.\n");
  g_option_context_add_main_entries(ctx, entries, NULL);
  GError *gerr = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &gerr)) {
    int rc = usage_error("%s", gerr->message);
    g_error_free(gerr);
    g_option_context_free(ctx);
    return rc;
  }
  g_option_context_free(ctx);
  char *why_bad = NULL;
  if (argc > 1) {
    why_bad = g_strdup_printf("unexpected argument '%s'", argv[1]);
  } else if (peer_name && strcmp(peer_name, "ort") != 0) {
    why_bad = g_strdup_printf("unknown --peer '%s' (the peers are: ort)", peer_name);
  } else if (peer_lib && !peer_name) {
    why_bad = g_strdup("--peer-lib needs --peer ort");
  } else if ((feeds || fetches || batch != 1) && !graph_path && !saved_model) {
    why_bad = g_strdup("--feed, --fetch and --batch go with --graph or --saved-model");
  } else if ((graph_path || saved_model) && only) {
    why_bad = g_strdup("--only selects benchmarks; --graph runs one model instead");
  } else if (threads < 0 || threads > 4096) {
    why_bad = g_strdup_printf("--threads %d is out of range (1 to 4096; 0 means one per core)", threads);
  }
  int rc = 0;
  char *peer_why = NULL;
  bench_options_t o = {0};
  bench_report_t report = {NULL};
  if (why_bad) {
    rc = usage_error("%s", why_bad);
    g_free(why_bad);
    goto out;
  }
  /* Before the plugins load: OpenBLAS reads its thread count then, and the pools keep theirs. */
  if (threads > 0) weft_threads_set_limit(threads);
  /* And how long its threads spin after a call (2^N cycles; its default, about 0.13 s, is longer
   * than a run): the baselines' threads would still be spinning through the next side's run,
   * taking its second core (matmul/256 at two threads: Weft 113 GFLOP/s after the baseline's run,
   * 206 with this). A value the user set wins. */
  g_setenv("OPENBLAS_THREAD_TIMEOUT", "4", FALSE);
  weft_plugins_load_default();
  if (device) {
    char *known = NULL;
    char *spec = resolve_device(device, &known);
    if (!spec) {
      rc = usage_error("--device '%s' is not a device of this machine (it has: %s)", device,
                       *known ? known : "none");
      g_free(known);
      goto out;
    }
    g_free(known);
    g_free(device);
    device = spec;
  }
  o = (bench_options_t){(const char *const *)only, device ? device : "/device:CPU:0", quick,
                        quick ? 1 : 2, quick ? 3 : 7, 0, NULL, NULL, NULL};
  o.threads = threads > 0 ? threads : (int)g_get_num_processors();
  if (peer_name) {
    o.peer_name = peer_name;
    o.peer = bench_peer_open(peer_lib, &peer_why);
    if (o.peer)
      fprintf(stderr, "bench: peer ONNX Runtime %s from %s\n", bench_peer_version(o.peer),
              bench_peer_path(o.peer));
    else
      fprintf(stderr, "bench: peer: %s\n", peer_why);
    o.peer_why = peer_why;
  }
  report.results = g_ptr_array_new_with_free_func((GDestroyNotify)result_free);
  if (graph_path || saved_model) {
    bench_graph_options_t g = {graph_path, saved_model, (const char *const *)feeds,
                               (const char *const *)fetches, batch};
    char *why = NULL;
    if (!bench_run_graph(&o, &g, &report, &why)) rc = usage_error("%s", why);
    g_free(why);
  } else {
    bench_run_kernels(&o, &report);
    bench_run_session(&o, &report);
  }
  if (rc != 0) {
    /* the usage error is printed */
  } else if (report.results->len == 0) {
    GString *names = g_string_new(NULL);
    for (char **p = only; p && *p; p++)
      g_string_append_printf(names, "%s'%s'", names->len ? ", " : "", *p);
    rc = usage_error("no benchmark matches --only %s", names->str);
    g_string_free(names, TRUE);
  } else {
    print_table(&report, &o);
  }
  weft_status_t *st = NULL;
  if (rc == 0 && json && !write_json(&report, json, &st)) {
    fprintf(stderr, "weft: error: %s: %s\n", weft_code_name(weft_status_code(st)),
            weft_status_message(st));
    weft_status_free(st);
    rc = 1;
  }
out:
  if (report.results) g_ptr_array_free(report.results, TRUE);
  bench_peer_close(o.peer);
  g_free(peer_why);
  g_free(peer_name);
  g_free(peer_lib);
  g_strfreev(only);
  g_strfreev(feeds);
  g_strfreev(fetches);
  g_free(graph_path);
  g_free(saved_model);
  g_free(json);
  g_free(device);
  return rc;
}
