/* Training benchmarks: asynchronous training of weft-train's linear and MLP models by 1 ps + 2
 * workers (separate weft-train processes on loopback), in examples per second summed over the
 * workers, beside the same model trained by `weft-train --local` (one process, one local
 * session) in the same run. Every node runs on the CPU in both, so the figure is about the
 * runtime, not about which device the placer picks. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define TRAIN_TIMEOUT_S 300.0

typedef struct proc {
  GPid pid;
  int out;
  GString *text;
} proc_t;

static weft_status_t *spawn(char **argv, proc_t *p) {
  p->text = g_string_new(NULL);
  p->out = -1;
  GError *err = NULL;
  if (!g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL,
                                NULL, NULL, &p->pid, NULL, &p->out, NULL, &err)) {
    weft_status_t *st = weft_status_new(WEFT_NOT_FOUND, "cannot start %s: %s", argv[0], err->message);
    g_error_free(err);
    return st;
  }
  return NULL;
}

/* Reads the child's output until it exits (SIGKILL after the deadline); its exit status. */
static int finish(proc_t *p, double deadline) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(p->out, buf, sizeof buf);
    if (n > 0) {
      g_string_append_len(p->text, buf, n);
      continue;
    }
    break;
  }
  int status = 0;
  while (waitpid(p->pid, &status, WNOHANG) == 0) {
    if (bench_now() > deadline) kill(p->pid, SIGKILL);
    g_usleep(10000);
  }
  close(p->out);
  g_spawn_close_pid(p->pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void stop(proc_t *p) {
  kill(p->pid, SIGTERM);
  finish(p, bench_now() + 10);
}

/* "examples_per_sec" of the child's final JSON line; negative when it has none. */
static double examples_per_sec(const proc_t *p) {
  const char *at = strstr(p->text->str, "\"examples_per_sec\":");
  return at ? g_ascii_strtod(at + strlen("\"examples_per_sec\":"), NULL) : -1;
}

typedef struct train_args {
  char *exe;
  const char *model;
  int steps;
  int batch; /* 0: weft-train's default */
  bool cluster;
} train_args_t;

/* One training run; returns 1 / (examples per second), so that bench_measure's throughput
 * (scale / seconds) with scale 1 gives examples per second. */
static double train_once(void *arg, weft_status_t **error) {
  train_args_t *a = arg;
  char steps[32], batch[32];
  g_snprintf(steps, sizeof steps, "%d", a->steps);
  g_snprintf(batch, sizeof batch, "%d", a->batch > 0 ? a->batch : (strcmp(a->model, "mlp") ? 32 : 64));
  char *common[] = {"--model", (char *)a->model, "--train_steps", steps, "--batch_size", batch,
                    "--device", "CPU", "--progress", "lines", "--log_every", "1000000"};
  int n_common = (int)G_N_ELEMENTS(common);
  double deadline = bench_now() + TRAIN_TIMEOUT_S;
  weft_status_t *st = NULL;
  double eps = -1;
  if (!a->cluster) {
    char **argv = g_new0(char *, n_common + 3);
    argv[0] = a->exe;
    argv[1] = "--local";
    memcpy(argv + 2, common, sizeof common);
    proc_t p;
    st = spawn(argv, &p);
    if (!st) {
      int code = finish(&p, deadline);
      eps = examples_per_sec(&p);
      if (code != 0 || eps <= 0)
        st = weft_status_new(WEFT_INTERNAL, "weft-train --local exited %d: %s", code, p.text->str);
    }
    if (p.text) g_string_free(p.text, TRUE);
    g_free(argv);
  } else {
    int ports[3] = {0, 0, 0};
    if (!bench_free_ports(3, ports)) {
      *error = weft_status_new(WEFT_UNAVAILABLE, "could not find three free loopback ports");
      return -1;
    }
    char *ps_hosts = g_strdup_printf("localhost:%d", ports[0]);
    char *worker_hosts = g_strdup_printf("localhost:%d,localhost:%d", ports[1], ports[2]);
    char *ps_argv[] = {a->exe, "--ps_hosts", ps_hosts, "--worker_hosts", worker_hosts,
                       "--job_name", "ps", NULL};
    proc_t ps, workers[2] = {{0}, {0}};
    st = spawn(ps_argv, &ps);
    int started = 0;
    for (int k = 0; !st && k < 2; k++) {
      char index[8];
      g_snprintf(index, sizeof index, "%d", k);
      char **argv = g_new0(char *, n_common + 10);
      char *head[] = {a->exe, "--ps_hosts", ps_hosts, "--worker_hosts", worker_hosts,
                      "--job_name", "worker", "--task_index", index};
      memcpy(argv, head, sizeof head);
      memcpy(argv + G_N_ELEMENTS(head), common, sizeof common);
      st = spawn(argv, &workers[k]);
      if (!st) started++;
      g_free(argv);
    }
    eps = 0;
    for (int k = 0; k < started; k++) {
      int code = finish(&workers[k], deadline);
      double w = examples_per_sec(&workers[k]);
      if (!st && (code != 0 || w <= 0))
        st = weft_status_new(WEFT_INTERNAL, "weft-train worker %d exited %d: %s", k, code,
                             workers[k].text->str);
      eps += w;
      g_string_free(workers[k].text, TRUE);
    }
    if (ps.text) {
      stop(&ps);
      g_string_free(ps.text, TRUE);
    }
    g_free(ps_hosts);
    g_free(worker_hosts);
  }
  if (st) {
    *error = st;
    return -1;
  }
  return 1.0 / eps;
}

/* Below this many cores the cluster rows are reports: three processes training at once cannot
 * beat one session that has every core to itself. */
#define ASYNC_TARGET_MIN_CORES 4

static void bench_async(const bench_options_t *o, bench_report_t *r, const char *model, int steps,
                        int batch) {
  char name[64];
  if (batch) g_snprintf(name, sizeof name, "async_training/%s_batch%d", model, batch);
  else g_snprintf(name, sizeof name, "async_training/%s", model);
  if (!bench_selected(o, name)) return;
  char *exe = bench_tool_path("weft-train");
  if (!exe || !g_file_test(exe, G_FILE_TEST_IS_EXECUTABLE)) {
    char *why = g_strdup_printf("weft-train not found next to this program (%s)", exe ? exe : "?");
    bench_add_skip(r, name, why);
    g_free(why);
    g_free(exe);
    return;
  }
  /* Whole training runs are long: fewer repetitions than the kernel rows. */
  bench_options_t few = *o;
  few.warmup = 0;
  few.runs = o->quick ? 1 : 3;
  train_args_t cluster = {exe, model, steps, batch, true}, local = {exe, model, steps, batch, false};
  bench_stats_t weft = {0}, base = {0};
  weft_status_t *st = NULL;
  bench_measure_pair(&few, train_once, &cluster, train_once, &local, 1.0, true, &weft, &base, &st);
  if (st) {
    bench_add_failure(r, name, st);
  } else {
    char batch_text[32];
    if (batch) g_snprintf(batch_text, sizeof batch_text, "%d", batch);
    else g_strlcpy(batch_text, "default", sizeof batch_text);
    char *params = g_strdup_printf("model=%s steps=%d batch=%s 1 ps + 2 workers (weft-train "
                                   "processes, --device CPU) vs weft-train --local", model, steps,
                                   batch_text);
    /* Issue 22: reported, not targeted, on two cores, where the ps, both workers and their
     * kernels share the cores one local session has to itself. */
    int cores = g_get_num_processors();
    bool targeted = cores >= ASYNC_TARGET_MIN_CORES;
    char *note = targeted ? g_strdup("target >= 1.5x")
                          : g_strdup_printf("report: %d cores for the ps, both workers and their "
                                            "kernels (targeted, >= 1.5x, from %d cores: issue 22)",
                                            cores, ASYNC_TARGET_MIN_CORES);
    bench_add_row(r, name, params, "examples/s", true, &weft, &base, "one local session", note);
    if (targeted) bench_set_target_ratio(r, 1.5);
    g_free(note);
    g_free(params);
  }
  g_free(exe);
}

void bench_run_training(const bench_options_t *o, bench_report_t *r) {
  bench_async(o, r, "linear", o->quick ? 300 : 2000, 0);
  bench_async(o, r, "mlp", o->quick ? 200 : 1000, 0);
  /* Larger batches: compute per step grows while the per-step messages stay the same. */
  bench_async(o, r, "mlp", o->quick ? 50 : 200, 4096);
}
