/* Step profiling: run options (trace level, deadline), the run metadata a traced step fills with
 * one record per node (the executor adds them, the distributed runtime merges the records of
 * every task), and the Chrome trace writer (the JSON format chrome://tracing and Perfetto read:
 * one process per device, one complete event per node). */
#include "exec_internal.h"

#include <json-glib/json-glib.h>
#include <string.h>

struct weft_run_metadata {
  GMutex lock;
  GArray *nodes;       /* weft_node_stats_t; strings point into `strings` */
  GStringChunk *strings;
};

weft_run_options_t *weft_run_options_new(void) { return g_new0(weft_run_options_t, 1); }

void weft_run_options_free(weft_run_options_t *opts) { g_free(opts); }

void weft_run_options_set_trace_level(weft_run_options_t *opts, weft_trace_level_t level) {
  if (opts) opts->trace_level = level;
}

void weft_run_options_set_timeout_ms(weft_run_options_t *opts, int64_t ms) {
  /* Clamped so that microseconds and a server's slack added to it cannot overflow. */
  const int64_t max_ms = G_MAXINT64 / 4000;
  if (opts) opts->timeout_ms = ms > 0 ? (ms < max_ms ? ms : max_ms) : 0;
}

weft_run_metadata_t *weft__run_metadata_new(void) {
  weft_run_metadata_t *m = g_new0(weft_run_metadata_t, 1);
  g_mutex_init(&m->lock);
  m->nodes = g_array_new(FALSE, FALSE, sizeof(weft_node_stats_t));
  m->strings = g_string_chunk_new(4096);
  return m;
}

void weft_run_metadata_free(weft_run_metadata_t *meta) {
  if (!meta) return;
  g_array_free(meta->nodes, TRUE);
  g_string_chunk_free(meta->strings);
  g_mutex_clear(&meta->lock);
  g_free(meta);
}

/* Caller holds the lock. */
static void add_locked(weft_run_metadata_t *m, const weft_node_stats_t *rec) {
  weft_node_stats_t c = *rec;
  /* Insert (not _const): identical names in a chunk would otherwise need a hash of their own. */
  c.node_name = g_string_chunk_insert(m->strings, rec->node_name ? rec->node_name : "");
  c.op = g_string_chunk_insert(m->strings, rec->op ? rec->op : "");
  c.device = g_string_chunk_insert(m->strings, rec->device ? rec->device : "");
  c.inputs = g_string_chunk_insert(m->strings, rec->inputs ? rec->inputs : "");
  g_array_append_val(m->nodes, c);
}

void weft__run_metadata_add(weft_run_metadata_t *meta, const weft_node_stats_t *rec) {
  g_mutex_lock(&meta->lock);
  add_locked(meta, rec);
  g_mutex_unlock(&meta->lock);
}

void weft__run_metadata_merge(weft_run_metadata_t *into, const weft_run_metadata_t *from) {
  if (!into || !from || into == from) return;
  g_mutex_lock(&into->lock);
  for (guint k = 0; k < from->nodes->len; k++)
    add_locked(into, &g_array_index(from->nodes, weft_node_stats_t, k));
  g_mutex_unlock(&into->lock);
}

int weft_run_metadata_num_node_stats(const weft_run_metadata_t *meta) {
  return meta ? (int)meta->nodes->len : 0;
}

const weft_node_stats_t *weft_run_metadata_node_stats(const weft_run_metadata_t *meta, int i) {
  if (!meta || i < 0 || (guint)i >= meta->nodes->len) return NULL;
  return &g_array_index(meta->nodes, weft_node_stats_t, i);
}

/* ---------------------------------------------------------------------------------------------
 * Chrome trace */

static void metadata_event(JsonBuilder *b, const char *what, int pid, int tid, const char *key,
                           const char *str, int64_t num) {
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "name");
  json_builder_add_string_value(b, what);
  json_builder_set_member_name(b, "ph");
  json_builder_add_string_value(b, "M");
  json_builder_set_member_name(b, "pid");
  json_builder_add_int_value(b, pid);
  json_builder_set_member_name(b, "tid");
  json_builder_add_int_value(b, tid);
  json_builder_set_member_name(b, "args");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, key);
  if (str) json_builder_add_string_value(b, str);
  else json_builder_add_int_value(b, num);
  json_builder_end_object(b);
  json_builder_end_object(b);
}

char *weft_run_metadata_chrome_trace(const weft_run_metadata_t *meta) {
  guint n = meta ? meta->nodes->len : 0;
  /* Times are made relative to the step's first node: small numbers read better in the viewers,
   * and the absolute start goes into otherData. */
  int64_t t0 = 0;
  for (guint k = 0; k < n; k++) {
    const weft_node_stats_t *r = &g_array_index(meta->nodes, weft_node_stats_t, k);
    if (k == 0 || r->start_us < t0) t0 = r->start_us;
  }
  GHashTable *pids = g_hash_table_new(g_str_hash, g_str_equal);       /* device -> pid */
  GHashTable *tids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  JsonBuilder *b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "traceEvents");
  json_builder_begin_array(b);
  int next_pid = 1;
  for (guint k = 0; k < n; k++) {
    const weft_node_stats_t *r = &g_array_index(meta->nodes, weft_node_stats_t, k);
    const char *device = r->device[0] ? r->device : "<no device>";
    int pid = GPOINTER_TO_INT(g_hash_table_lookup(pids, device));
    if (!pid) {
      pid = next_pid++;
      g_hash_table_insert(pids, (gpointer)device, GINT_TO_POINTER(pid));
      metadata_event(b, "process_name", pid, 0, "name", device, 0);
      metadata_event(b, "process_sort_index", pid, 0, "sort_index", NULL, pid);
    }
    /* Threads are numbered per device in order of appearance: the raw ids are addresses. */
    char *tkey = g_strdup_printf("%d/%" G_GUINT64_FORMAT, pid, (guint64)r->thread_id);
    int tid = GPOINTER_TO_INT(g_hash_table_lookup(tids, tkey));
    if (!tid) {
      tid = (int)g_hash_table_size(tids) + 1;
      g_hash_table_insert(tids, tkey, GINT_TO_POINTER(tid));
      char *tname = g_strdup_printf("thread %d", tid);
      metadata_event(b, "thread_name", pid, tid, "name", tname, 0);
      g_free(tname);
    } else {
      g_free(tkey);
    }
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, r->node_name);
    json_builder_set_member_name(b, "cat");
    json_builder_add_string_value(b, r->op);
    json_builder_set_member_name(b, "ph");
    json_builder_add_string_value(b, "X");
    json_builder_set_member_name(b, "pid");
    json_builder_add_int_value(b, pid);
    json_builder_set_member_name(b, "tid");
    json_builder_add_int_value(b, tid);
    json_builder_set_member_name(b, "ts");
    json_builder_add_int_value(b, r->start_us - t0);
    json_builder_set_member_name(b, "dur");
    json_builder_add_int_value(b, r->duration_us > 0 ? r->duration_us : 0);
    json_builder_set_member_name(b, "args");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, r->node_name);
    json_builder_set_member_name(b, "op");
    json_builder_add_string_value(b, r->op);
    json_builder_set_member_name(b, "inputs");
    json_builder_add_string_value(b, r->inputs);
    json_builder_set_member_name(b, "bytes");
    json_builder_add_int_value(b, (gint64)r->output_bytes);
    json_builder_end_object(b);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_set_member_name(b, "displayTimeUnit");
  json_builder_add_string_value(b, "ms");
  json_builder_set_member_name(b, "otherData");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "start_us");
  json_builder_add_int_value(b, t0);
  json_builder_end_object(b);
  json_builder_end_object(b);
  JsonNode *root = json_builder_get_root(b);
  JsonGenerator *gen = json_generator_new();
  json_generator_set_root(gen, root);
  char *text = json_generator_to_data(gen, NULL);
  g_object_unref(gen);
  json_node_unref(root);
  g_object_unref(b);
  g_hash_table_destroy(tids);
  g_hash_table_destroy(pids);
  return text;
}

weft_status_t *weft_run_metadata_write_chrome_trace(const weft_run_metadata_t *meta,
                                                    const char *path) {
  if (!path || !*path) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_run_metadata_write_chrome_trace: no path");
  }
  char *text = weft_run_metadata_chrome_trace(meta);
  GError *err = NULL;
  gboolean ok = g_file_set_contents(path, text, -1, &err);
  g_free(text);
  if (!ok) {
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT, "Cannot write the trace '%s': %s",
                                        path, err->message);
    g_error_free(err);
    return st;
  }
  return NULL;
}
