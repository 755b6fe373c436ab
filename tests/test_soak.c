/* A soak test: a 1 ps + 2 worker weftd cluster serves many client threads for a bounded time
 * (about 10 s, 4 s under sanitizers), each opening sessions, running steps whose every result is
 * checked, and closing them again. No step may fail, and the servers' resident memory and open
 * descriptors must stay flat once warmed up (within the margins below). The figures are printed
 * as TAP comments. */
#include <glib.h>
#include <signal.h>
#include <string.h>

#include "weft/weft.h"
#include "weftd_cluster.h"

#if WEFT_SANITIZE
#define SOAK_SECONDS 4.0
#define WARMUP_SECONDS 1.5
#else
#define SOAK_SECONDS 10.0
#define WARMUP_SECONDS 2.5
#endif
#define CLIENTS 6
#define STEPS_PER_SESSION 25
/* Allowed growth after the warm-up. Resident memory: allocator caches and gRPC's pools settle
 * slowly (a few hundred KiB over a run here); under AddressSanitizer freed memory sits in its
 * quarantine, up to 256 MiB, before it is reused, so only a leak beyond that fails there. A
 * finished step leaves nothing behind (an error step stays as a tombstone for a minute, and
 * no step here fails): the margin is well below the 1 KiB per step (about 14 MiB per run) that
 * steps left in the sender's table used to add.
 * Descriptors: a connection being re-established at the moment of measurement. */
#define RSS_MARGIN_KIB (WEFT_SANITIZE ? 320 * 1024 : 6 * 1024)
#define FD_MARGIN 4

typedef struct client {
  const char *target;
  int index;
  volatile gint *stop;
  gint64 steps, sessions;
  char *error; /* the first failure */
} client_t;

/* y = x * w + k: x fed on a worker, w on the ps, k per client. */
static weft_graph_t *client_graph(int worker, float k, weft_status_t **st) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/job:ps/task:0");
  weft_output_t w = weft_const_float(g, "w", 3.0f, st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, worker ? "/job:worker/task:1" : "/job:worker/task:0");
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 0, NULL, st);
  weft_output_t xw = weft_binary(g, "Mul", "xw", x, w, st);
  weft_binary(g, "AddV2", "y", xw, weft_const_float(g, "k", k, st), st);
  weft_graph_pop_device(g);
  return g;
}

static void fail(client_t *c, weft_status_t *st, const char *what) {
  if (!c->error) {
    c->error = g_strdup_printf("client %d: %s: %s: %s", c->index, what,
                               weft_code_name(weft_status_code(st)), weft_status_message(st));
  }
  weft_status_free(st);
}

static gpointer client_main(gpointer data) {
  client_t *c = data;
  weft_status_t *st = NULL;
  weft_graph_t *g = client_graph(c->index % 2, (float)c->index, &st);
  if (st) fail(c, st, "graph");
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_target(o, c->target);
  weft_session_options_set_operation_timeout_ms(o, 20000);
  while (!c->error && !g_atomic_int_get(c->stop)) {
    weft_session_t *s = weft_session_new(g, o, &st);
    if (st) {
      fail(c, st, "weft_session_new");
      break;
    }
    c->sessions++;
    for (int k = 0; k < STEPS_PER_SESSION && !c->error && !g_atomic_int_get(c->stop); k++) {
      float xv = (float)(c->steps % 1000);
      weft_tensor_t *x = weft_tensor_new_scalar_float(xv);
      const char *feed = "x", *fetch = "y";
      weft_tensor_t *y = NULL;
      st = weft_session_run(s, &feed, &x, 1, &fetch, &y, 1, NULL, 0);
      if (st) {
        fail(c, st, "weft_session_run");
      } else if (weft_tensor_get_double(y, 0) != 3.0 * xv + c->index) {
        c->error = g_strdup_printf("client %d: y = %g, want %g", c->index,
                                   weft_tensor_get_double(y, 0), 3.0 * xv + c->index);
      }
      c->steps++;
      weft_tensor_unref(x);
      weft_tensor_unref(y);
    }
    st = weft_session_close(s);
    if (st) fail(c, st, "weft_session_close");
    weft_session_free(s);
  }
  weft_session_options_free(o);
  weft_graph_free(g);
  return NULL;
}

typedef struct figures {
  int64_t rss[3];
  int fds[3];
} figures_t;

static void measure(const weftd_cluster_t *c, figures_t *f) {
  for (int k = 0; k < 3; k++) {
    f->rss[k] = proc_rss_kib(c->d[k].pid);
    f->fds[k] = proc_fd_count(c->d[k].pid);
  }
}

static gint64 total_steps(const client_t *clients) {
  gint64 n = 0;
  for (int k = 0; k < CLIENTS; k++) n += clients[k].steps;
  return n;
}

static void test_soak(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 2, NULL)) return;
  /* Every task answers (and gRPC is set up before the client threads start). */
  weft_device_info_t *devices = NULL;
  int n_devices = 0;
  weft_status_t *st = weft_cluster_list_devices(c.target[0], 0, &devices, &n_devices);
  g_assert_null(st);
  g_assert_cmpint(n_devices, >=, 3);
  weft_device_list_free(devices, n_devices);
  volatile gint stop = 0;
  client_t clients[CLIENTS];
  GThread *threads[CLIENTS];
  for (int k = 0; k < CLIENTS; k++) {
    memset(&clients[k], 0, sizeof clients[k]);
    clients[k].index = k;
    /* Masters on every task: sessions are created on the ps and on both workers. */
    clients[k].target = c.target[k % 3];
    clients[k].stop = &stop;
    threads[k] = g_thread_new("soak-client", client_main, &clients[k]);
  }
  g_usleep((gulong)(WARMUP_SECONDS * G_USEC_PER_SEC));
  figures_t before, after;
  measure(&c, &before);
  gint64 t0 = g_get_monotonic_time(), steps0 = total_steps(clients);
  g_usleep((gulong)((SOAK_SECONDS - WARMUP_SECONDS) * G_USEC_PER_SEC));
  gint64 steps1 = total_steps(clients);
  double seconds = (g_get_monotonic_time() - t0) / 1e6;
  g_atomic_int_set(&stop, 1);
  for (int k = 0; k < CLIENTS; k++) g_thread_join(threads[k]);
  /* Closed sessions release their graphs; give the servers a moment to finish cleaning up. */
  g_usleep(300000);
  measure(&c, &after);

  gint64 sessions = 0;
  for (int k = 0; k < CLIENTS; k++) sessions += clients[k].sessions;
  g_test_message("soak: %d clients, %" G_GINT64_FORMAT " steps in %" G_GINT64_FORMAT
                 " sessions; %.0f steps/s over the measured %.1f s; RSS margin %d KiB",
                 CLIENTS, total_steps(clients), sessions, (steps1 - steps0) / seconds, seconds,
                 RSS_MARGIN_KIB);
  const char *names[3] = {"ps:0", "worker:0", "worker:1"};
  for (int k = 0; k < 3; k++) {
    g_test_message("soak: %s: RSS %" G_GINT64_FORMAT " KiB -> %" G_GINT64_FORMAT
                   " KiB (%+" G_GINT64_FORMAT "), fds %d -> %d",
                   names[k], before.rss[k], after.rss[k], after.rss[k] - before.rss[k],
                   before.fds[k], after.fds[k]);
  }
  for (int k = 0; k < CLIENTS; k++) {
    if (clients[k].error) g_test_message("soak: %s", clients[k].error);
    g_assert_null(clients[k].error);
    g_assert_cmpint(clients[k].steps, >, 0);
  }
  for (int k = 0; k < 3; k++) {
    g_assert_cmpint(before.rss[k], >, 0);
    g_assert_cmpint(after.rss[k] - before.rss[k], <=, RSS_MARGIN_KIB);
    g_assert_cmpint(before.fds[k], >, 0);
    g_assert_cmpint(after.fds[k] - before.fds[k], <=, FD_MARGIN);
  }
  weftd_cluster_stop(&c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  signal(SIGPIPE, SIG_IGN);
  weft_plugins_load_default();
  g_test_add_func("/soak/clients", test_soak);
  return g_test_run();
}
