/* The Python row of `weft bench`: microseconds per Session.run of a scalar AddV2 (a variable plus
 * a constant) from Python (weft.compat.v1's tf.Session.run, and the extension's own
 * _weft.Session.run beside it) next to the C API's weft_session_run of the same graph, measured
 * in the same invocation. The Python side runs in the interpreter meson found at configure time
 * (WEFT_BENCH_PYTHON), with the build tree's package first on PYTHONPATH when that folder exists;
 * the row is skipped, saying why, when the build has no Python package. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifndef WEFT_BENCH_PYTHON
#define WEFT_BENCH_PYTHON ""
#endif
#ifndef WEFT_BENCH_PYTHONPATH
#define WEFT_BENCH_PYTHONPATH ""
#endif

/* argv: calls per run, runs, "compat" or "raw". Prints "min median max" in microseconds. */
static const char kScript[] =
    "import sys, time\n"
    "import weft.compat.v1 as tf\n"
    "n, runs, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]\n"
    "with tf.device('/device:CPU:0'):\n"
    "    x = tf.Variable(1.0, name='x')\n"
    "    y = tf.add(x, tf.constant(1.0, name='one'), name='add')\n"
    "s = tf.Session()\n"
    "s.run(tf.global_variables_initializer())\n"
    "if mode == 'raw':\n"
    "    raw, names, none = s._s, ['add:0'], []\n"
    "    step = lambda: raw.run(none, none, names, none)\n"
    "else:\n"
    "    step = lambda: s.run(y)\n"
    "assert float(s.run(y)) == 2.0\n"
    "for _ in range(n):\n"
    "    step()\n"
    "res = []\n"
    "for _ in range(runs):\n"
    "    t = time.perf_counter()\n"
    "    for _ in range(n):\n"
    "        step()\n"
    "    res.append((time.perf_counter() - t) / n * 1e6)\n"
    "res.sort()\n"
    "print('%f %f %f' % (res[0], res[len(res) // 2], res[-1]))\n";

/* Runs the script; fills *out or returns a status naming what failed. */
static weft_status_t *python_steps(const char *mode, int n, int runs, bench_stats_t *out) {
  char n_arg[32], runs_arg[32];
  g_snprintf(n_arg, sizeof n_arg, "%d", n);
  g_snprintf(runs_arg, sizeof runs_arg, "%d", runs);
  const char *argv[] = {WEFT_BENCH_PYTHON, "-c", kScript, n_arg, runs_arg, mode, NULL};
  char **env = g_get_environ();
  if (g_file_test(WEFT_BENCH_PYTHONPATH, G_FILE_TEST_IS_DIR)) {
    const char *old = g_environ_getenv(env, "PYTHONPATH");
    char *path = old && *old ? g_strconcat(WEFT_BENCH_PYTHONPATH, ":", old, NULL)
                             : g_strdup(WEFT_BENCH_PYTHONPATH);
    env = g_environ_setenv(env, "PYTHONPATH", path, TRUE);
    g_free(path);
  }
  char *std_out = NULL, *std_err = NULL;
  int wait = 0;
  GError *error = NULL;
  weft_status_t *st = NULL;
  if (!g_spawn_sync(NULL, (char **)argv, env, G_SPAWN_DEFAULT, NULL, NULL, &std_out, &std_err,
                    &wait, &error)) {
    st = weft_status_new(WEFT_UNAVAILABLE, "cannot run %s: %s", WEFT_BENCH_PYTHON,
                         error->message);
    g_error_free(error);
  } else if (!g_spawn_check_wait_status(wait, NULL) ||
             sscanf(std_out, "%lf %lf %lf", &out->min, &out->median, &out->max) != 3) {
    char *tail = std_err ? g_strstrip(std_err) : NULL;
    const char *last = tail ? strrchr(tail, '\n') : NULL;
    st = weft_status_new(WEFT_INTERNAL, "the Python side failed: %s",
                         last ? last + 1 : (tail && *tail ? tail : "no output"));
  } else {
    out->runs = runs;
    out->calls_per_run = n;
  }
  g_free(std_out);
  g_free(std_err);
  g_strfreev(env);
  return st;
}

/* The C API's figure for the same graph, as the Python side builds it: x a variable, so that
 * the session's constant folding cannot answer the step from a cache (two constants' AddV2 took
 * 0.13 us in C, and the row then measured Python against a step that runs nothing). */
static weft_status_t *c_steps(const bench_options_t *o, bench_stats_t *out) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/device:CPU:0");
  weft_output_t initial = weft_const_float(g, "x/initial_value", 1.0f, &st);
  weft_output_t x = st ? initial : weft_variable(g, "x", initial, &st);
  weft_output_t one = st ? x : weft_const_float(g, "one", 1.0f, &st);
  if (!st) weft_binary(g, "AddV2", "add", x, one, &st);
  weft_graph_pop_device(g);
  if (!st) weft_global_variables_initializer(g, "init", &st);
  weft_session_t *s = st ? NULL : weft_session_new(g, NULL, &st);
  const char *init[] = {"init"};
  if (!st) st = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, init, 1);
  if (!st) {
    bench_steps_t args = {s, "add", o->quick ? 200 : 2000, NULL, NULL};
    bench_measure(o, bench_run_steps, &args, 1e6, false, out, &st);
  }
  weft_session_free(s);
  weft_graph_free(g);
  return st;
}

void bench_run_python(const bench_options_t *o, bench_report_t *r) {
  static const char *names[] = {"python/session_run", "python/extension_run"};
  static const char *modes[] = {"compat", "raw"};
  for (int k = 0; k < 2; k++) {
    if (!bench_selected(o, names[k])) continue;
    if (!*WEFT_BENCH_PYTHON) {
      bench_add_skip(r, names[k], "this build has no Python package (docs/python.md)");
      continue;
    }
    bench_stats_t c = {0}, py = {0};
    weft_status_t *st = c_steps(o, &c);
    if (!st) st = python_steps(modes[k], o->quick ? 500 : 5000, o->quick ? 3 : 7, &py);
    if (st) {
      bench_add_failure(r, names[k], st);
      continue;
    }
    char *params = g_strdup_printf("graph=AddV2 of variable x and a constant python=%s",
                                   WEFT_BENCH_PYTHON);
    bench_add_row(r, names[k], params, "us", false, &py, &c, "C API weft_session_run",
                  k == 0 ? "target <= 10 us and <= 3x the C API" : "the extension alone");
    if (k == 0) bench_set_target_met(r, py.median <= 10.0 && py.median <= 3.0 * c.median);
    g_free(params);
  }
}
