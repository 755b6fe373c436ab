/* What TensorBoard would read after weft-train, checked by a reader written without Weft
 * (tests/read_events.py: the standard library, its own CRC-32C, the protobuf wire format by hand
 * with TensorFlow's field numbers): a local run and a 1 ps + 2 workers cluster run leave event
 * files whose every record's crcs are valid, whose first record is file_version brain.Event:2,
 * whose loss summaries are at increasing steps and equal to what the run printed, with the graph
 * and every node's device; a run killed with SIGKILL and restarted leaves SessionLog START at the
 * restored step. `weft inspect` lists the records and draws the placed graph as DOT. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "process_util.h"
#include "weft/weft.h"

#define WEFT_TRAIN WEFT_BUILD_DIR "/core/tools/weft-train"
#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"
#define READER WEFT_SOURCE_DIR "/tests/read_events.py"
#define PROCESS_TIMEOUT_MS 120000

static char *tmpdir(void) {
  return test_tmpdir("weft-tensorboard-XXXXXX");
}

/* g_ptr_array_sort hands the comparison pointers to the elements. */
static gint compare_paths(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The events.out.tfevents.* files of dir, sorted by name (their names start with the time). */
static GPtrArray *event_files(const char *dir) {
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  GDir *d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  const char *name;
  while ((name = g_dir_read_name(d)))
    if (g_str_has_prefix(name, "events.out.tfevents."))
      g_ptr_array_add(files, g_build_filename(dir, name, NULL));
  g_dir_close(d);
  g_ptr_array_sort(files, compare_paths);
  return files;
}

static const char *python3(void) {
  return g_getenv("WEFT_PYTHON3");
}

static bool skip_without_python3(void) {
  if (python3()) return false;
  g_test_skip("no python3 found by meson: the independent reader cannot run");
  return true;
}

/* The independent reader's JSON for `path` (it exits non-zero on any bad crc). */
static JsonObject *read_independently(const char *path, JsonParser **parser) {
  run_result_t r = run_program(python3(), (const char *const[]){READER, path, NULL}, NULL);
  if (r.exit_code != 0) g_error("read_events.py %s failed (%d): %s", path, r.exit_code, r.err);
  *parser = json_parser_new();
  GError *err = NULL;
  g_assert_true(json_parser_load_from_data(*parser, r.out, -1, &err));
  g_assert_no_error(err);
  run_result_clear(&r);
  return json_node_get_object(json_parser_get_root(*parser));
}

/* step -> loss as the run printed them ("progress worker=0 step=S ... loss=L ..."). */
static GHashTable *printed_losses(const char *log) {
  GHashTable *h = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
  char **lines = g_strsplit(log, "\n", -1);
  for (char **l = lines; *l; l++) {
    const char *s = strstr(*l, " step="), *x = strstr(*l, " loss=");
    if (!g_str_has_prefix(*l, "progress worker=0") || !s || !x) continue;
    gint64 *k = g_new(gint64, 1);
    double *v = g_new(double, 1);
    *k = g_ascii_strtoll(s + 6, NULL, 10);
    *v = g_ascii_strtod(x + 6, NULL);
    g_hash_table_replace(h, k, v);
  }
  g_strfreev(lines);
  return h;
}

/* Where a local run's nodes go: the CPU, or a GPU where the machine has one. */
#define LOCAL_DEVICE "/job:localhost/replica:0/task:0/device:"

/* The checks every run's event file passes; returns how many loss values it compared. */
static int check_event_file(const char *path, const char *log, const char *device_part) {
  JsonParser *parser;
  JsonObject *o = read_independently(path, &parser);
  g_assert_cmpstr(json_object_get_string_member(o, "file_version"), ==, "brain.Event:2");
  JsonArray *events = json_object_get_array_member(o, "events");
  GHashTable *printed = printed_losses(log);
  int graphs = 0, compared = 0;
  gint64 last_loss_step = -1;
  for (guint i = 0; i < json_array_get_length(events); i++) {
    JsonObject *e = json_array_get_object_element(events, i);
    gint64 step = json_object_get_int_member(e, "step");
    if (json_object_has_member(e, "graph_devices")) {
      graphs++;
      JsonObject *devs = json_object_get_object_member(e, "graph_devices");
      GList *names = json_object_get_members(devs);
      int total = 0, placed = 0;
      for (GList *n = names; n; n = n->next, total++) {
        if (strstr(json_object_get_string_member(devs, n->data), device_part)) placed++;
      }
      /* Nodes the session never ran (fed placeholders, gradients of inputs) keep their
       * requested device, often none; those that ran carry where they ran. */
      g_assert_cmpint(total, >, 10);
      g_assert_cmpint(placed, >, total / 2);
      const char *ran[] = {"global_step", "summaries/loss", "summaries/merged"};
      for (size_t k = 0; k < G_N_ELEMENTS(ran); k++) {
        const char *dev = json_object_get_string_member(devs, ran[k]);
        if (!strstr(dev, device_part)) g_error("node %s on '%s'", ran[k], dev);
      }
      g_list_free(names);
    }
    JsonArray *values = json_object_get_array_member(e, "values");
    for (guint k = 0; k < json_array_get_length(values); k++) {
      JsonArray *tv = json_array_get_array_element(values, k);
      if (strcmp(json_array_get_string_element(tv, 0), "loss") != 0) continue;
      g_assert_cmpint(step, >, last_loss_step);
      last_loss_step = step;
      double *want = g_hash_table_lookup(printed, &step);
      if (!want) continue;
      /* The run printed %.6f of the same float32 the summary holds. */
      g_assert_cmpfloat(fabs(json_array_get_double_element(tv, 1) - *want), <=, 5.1e-7);
      compared++;
    }
  }
  g_assert_cmpint(graphs, ==, 1);
  g_hash_table_destroy(printed);
  g_object_unref(parser);
  return compared;
}

static void test_local_run(void) {
  if (skip_without_python3()) return;
  char *dir = tmpdir();
  char *cmd = g_strdup_printf("%s --local --model mlp --train_steps 40 --summary_steps 5 "
                              "--log_every 1 --progress lines --checkpoint_dir %s", WEFT_TRAIN,
                              dir);
  proc_t p = proc_spawn(cmd, 0);
  g_free(cmd);
  int rc = proc_wait_exit(&p, PROCESS_TIMEOUT_MS);
  if (rc) g_error("weft-train exited %d:\n%s", rc, p.log->str);
  GPtrArray *files = event_files(dir);
  g_assert_cmpint(files->len, ==, 1);
  /* Summaries at global steps 1, 6, ..., 36: each compared with the printed loss. */
  g_assert_cmpint(check_event_file(files->pdata[0], p.log->str, LOCAL_DEVICE), ==, 8);

  /* weft inspect lists the records; --dot draws the placed graph. */
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"inspect", dir, NULL}, NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_nonnull(strstr(r.out, "file_version brain.Event:2"));
  g_assert_nonnull(strstr(r.out, "step 6"));
  g_assert_nonnull(strstr(r.out, "loss="));
  g_assert_nonnull(strstr(r.out, "graph_def ("));
  run_result_clear(&r);
  r = run_program(WEFT_EXE, (const char *const[]){"inspect", "--dot", files->pdata[0], NULL},
                  NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_true(g_str_has_prefix(r.out, "digraph "));
  g_assert_nonnull(strstr(r.out, "\"summaries/loss\""));
  g_assert_nonnull(strstr(r.out, "fillcolor="));
  run_result_clear(&r);
  g_ptr_array_unref(files);
  g_string_free(p.log, TRUE);
  test_rm_rf(dir);
  g_free(dir);
}

static void test_killed_and_restored(void) {
  if (skip_without_python3()) return;
  char *dir = tmpdir();
  char *cmd = g_strdup_printf("%s --local --train_steps 1000 --save_steps 10 --save_secs 0 "
                              "--summary_steps 5 --pause_at_step 25 --progress lines "
                              "--checkpoint_dir %s", WEFT_TRAIN, dir);
  proc_t p = proc_spawn(cmd, 0);
  g_free(cmd);
  char *line = proc_read_until(&p, "paused at global step", PROCESS_TIMEOUT_MS);
  g_assert_nonnull(line);
  g_free(line);
  g_assert_true(wait_stopped(p.pid, PROCESS_TIMEOUT_MS));
  kill(p.pid, SIGKILL);
  int status;
  waitpid(p.pid, &status, 0);
  g_assert_true(WIFSIGNALED(status));
  close(p.out);
  g_spawn_close_pid(p.pid);
  g_string_free(p.log, TRUE);
  /* The killed run's summaries were flushed only as far as its flush period allowed; what it
   * left is whole records (read below). The restart restores model.ckpt-20. */
  char *cmd2 = g_strdup_printf("%s --local --train_steps 30 --summary_steps 5 --progress lines "
                               "--log_every 1 --checkpoint_dir %s", WEFT_TRAIN, dir);
  proc_t q = proc_spawn(cmd2, 0);
  g_free(cmd2);
  int rc = proc_wait_exit(&q, PROCESS_TIMEOUT_MS);
  if (rc) g_error("weft-train exited %d:\n%s", rc, q.log->str);
  g_assert_nonnull(strstr(q.log->str, "global step 20, from"));
  GPtrArray *files = event_files(dir);
  g_assert_cmpint(files->len, ==, 2);
  JsonParser *parser;
  JsonObject *o = read_independently(files->pdata[0], &parser);
  g_assert_cmpstr(json_object_get_string_member(o, "file_version"), ==, "brain.Event:2");
  g_object_unref(parser);
  o = read_independently(files->pdata[1], &parser);
  JsonObject *second = json_array_get_object_element(json_object_get_array_member(o, "events"), 1);
  g_assert_cmpint(json_object_get_int_member(second, "session_log"), ==, 1); /* START */
  g_assert_cmpint(json_object_get_int_member(second, "step"), ==, 20);
  g_object_unref(parser);
  g_assert_cmpint(check_event_file(files->pdata[1], q.log->str, LOCAL_DEVICE), >=, 1);
  g_ptr_array_unref(files);
  g_string_free(q.log, TRUE);
  test_rm_rf(dir);
  g_free(dir);
}

static proc_t spawn_train(const char *hosts, const char *job, int task, const char *extra) {
  char *cmd = g_strdup_printf("%s %s --job_name %s --task_index %d --progress lines %s",
                              WEFT_TRAIN, hosts, job, task, extra ? extra : "");
  proc_t p = proc_spawn(cmd, 0);
  g_free(cmd);
  return p;
}

static void test_cluster_run(void) {
  if (skip_without_python3()) return;
  char *dir = tmpdir();
  int ports[3];
  free_ports(3, ports);
  char *hosts = g_strdup_printf("--ps_hosts localhost:%d --worker_hosts localhost:%d,localhost:%d",
                                ports[0], ports[1], ports[2]);
  proc_t ps = spawn_train(hosts, "ps", 0, NULL);
  char *chief = g_strdup_printf("--model mlp --train_steps 60 --summary_steps 10 --log_every 1 "
                                "--checkpoint_dir %s", dir);
  proc_t w0 = spawn_train(hosts, "worker", 0, chief);
  proc_t w1 = spawn_train(hosts, "worker", 1, "--model mlp --train_steps 60");
  int rc0 = proc_wait_exit(&w0, PROCESS_TIMEOUT_MS), rc1 = proc_wait_exit(&w1, PROCESS_TIMEOUT_MS);
  if (rc0 || rc1) g_error("workers exited %d and %d:\n%s\n%s", rc0, rc1, w0.log->str, w1.log->str);
  kill(ps.pid, SIGTERM);
  proc_wait_exit(&ps, PROCESS_TIMEOUT_MS);
  GPtrArray *files = event_files(dir);
  g_assert_cmpint(files->len, ==, 1);
  /* Devices are the cluster's: the variables on the ps, the rest on worker 0 ("/job:"). */
  g_assert_cmpint(check_event_file(files->pdata[0], w0.log->str, "/job:"), >=, 1);
  run_result_t r = run_program(WEFT_EXE, (const char *const[]){"inspect", "--dot", dir, NULL},
                               NULL);
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_nonnull(strstr(r.out, "cluster_job_ps_task_0"));
  g_assert_nonnull(strstr(r.out, "cluster_job_worker_task_0"));
  g_assert_nonnull(strstr(r.out, "Send/Recv"));
  run_result_clear(&r);
  g_ptr_array_unref(files);
  g_string_free(w0.log, TRUE);
  g_string_free(w1.log, TRUE);
  g_string_free(ps.log, TRUE);
  g_free(chief);
  g_free(hosts);
  test_rm_rf(dir);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/tensorboard/local_run", test_local_run);
  g_test_add_func("/tensorboard/killed_and_restored", test_killed_and_restored);
  g_test_add_func("/tensorboard/cluster_run", test_cluster_run);
  return g_test_run();
}
