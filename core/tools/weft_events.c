/* weft_events.c: `weft inspect` on event files (docs/tensorboard.md): the records of an
 * events.out.tfevents.* file, or of every one in a folder (step, wall time, tags and values, the
 * graph, session logs), and `weft inspect --dot` drawing a graph (a GraphDef file, or the placed
 * graph an event file holds) as Graphviz DOT, nodes coloured by device and grouped by task, the
 * edges between tasks (Send/Recv pairs at run time) marked. */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_internal.h"
#include "base/protobuf_internal.h"
#include "graph.pb-c.h"
#include "weft_io.h"

/* g_ptr_array_sort hands the comparison pointers to the elements. */
static gint compare_paths(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A folder's event files, sorted by name (their names start with the time); or the file itself. */
static GPtrArray *event_paths(const char *path) {
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  if (!g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_ptr_array_add(files, g_strdup(path));
    return files;
  }
  GDir *d = g_dir_open(path, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    if (strstr(name, "tfevents")) g_ptr_array_add(files, g_build_filename(path, name, NULL));
  }
  if (d) g_dir_close(d);
  g_ptr_array_sort(files, compare_paths);
  return files;
}

bool weft_cli_is_event_path(const char *path) {
  char *base = g_path_get_basename(path);
  bool is = strstr(base, "tfevents") != NULL;
  g_free(base);
  if (!is && g_file_test(path, G_FILE_TEST_IS_DIR)) {
    GPtrArray *files = event_paths(path);
    is = files->len > 0;
    g_ptr_array_unref(files);
  }
  return is;
}

static int graph_node_count(const void *bytes, size_t len) {
  weft_status_t *st = NULL;
  Tensorflow__GraphDef *gd = (Tensorflow__GraphDef *)weft__pb_unpack(
      &tensorflow__graph_def__descriptor, bytes, len, "GraphDef", &st);
  weft_status_free(st);
  if (!gd) return -1;
  int n = (int)gd->n_node;
  protobuf_c_message_free_unpacked(&gd->base, NULL);
  return n;
}

static const char *const kSessionLogStatus[] = {"STATUS_UNSPECIFIED", "START", "STOP",
                                                "CHECKPOINT"};

static void print_event(int64_t offset, const weft_event_t *e) {
  printf("  offset %" G_GINT64_FORMAT ": step %" G_GINT64_FORMAT " wall_time %.3f:", offset,
         e->step, e->wall_time);
  if (e->file_version) printf(" file_version %s", e->file_version);
  if (e->graph_def) {
    printf(" graph_def (%zu bytes, %d nodes)", e->graph_def_len,
           graph_node_count(e->graph_def, e->graph_def_len));
  }
  for (int i = 0; i < e->n_values; i++) {
    const weft_summary_value_info_t *v = &e->values[i];
    switch (v->kind) {
      case WEFT_SUMMARY_SIMPLE_VALUE: printf(" %s=%.9g", v->tag, v->simple_value); break;
      case WEFT_SUMMARY_HISTO:
        printf(" %s=histogram(num %g, min %g, max %g, mean %g, %d buckets)", v->tag,
               v->histo_num, v->histo_min, v->histo_max,
               v->histo_num > 0 ? v->histo_sum / v->histo_num : 0.0, v->n_buckets);
        break;
      case WEFT_SUMMARY_IMAGE:
        printf(" %s=image(%dx%d, %zu bytes)", v->tag, v->image_width, v->image_height,
               v->image_png_len);
        break;
      case WEFT_SUMMARY_TENSOR:
        printf(" %s=tensor(%zu bytes%s%s)", v->tag, v->tensor_len,
               v->plugin_name ? ", plugin " : "", v->plugin_name ? v->plugin_name : "");
        break;
      default: printf(" %s=(empty)", v->tag); break;
    }
  }
  if (e->session_log_status >= 0) {
    int s = e->session_log_status;
    printf(" session_log %s", s < 4 ? kSessionLogStatus[s] : "unknown");
    if (e->session_log_checkpoint) printf(" checkpoint %s", e->session_log_checkpoint);
    if (e->session_log_msg) printf(" (%s)", e->session_log_msg);
  }
  if (e->run_metadata_tag) printf(" run_metadata %s (%zu bytes)", e->run_metadata_tag,
                                  e->run_metadata_len);
  if (e->has_meta_graph_def) printf(" meta_graph_def");
  printf("\n");
}

/* Calls fn on every record of `file`; stops at the first error, which it returns. */
typedef void (*record_fn)(void *user, int64_t offset, const weft_event_t *e);
static weft_status_t *each_record(const char *file, record_fn fn, void *user) {
  weft_event_reader_t *r = NULL;
  WEFT_RETURN_IF_ERROR(weft_event_reader_open(file, &r));
  weft_status_t *st = NULL;
  for (;;) {
    const void *data;
    size_t len;
    bool eof = false;
    st = weft_event_reader_next(r, &data, &len, &eof);
    if (st || eof) break;
    weft_event_t *e = NULL;
    st = weft_event_decode(data, len, &e);
    if (st) {
      st = weft_status_prefix(st, "%s: record at offset %" G_GINT64_FORMAT, file,
                              weft_event_reader_offset(r));
      break;
    }
    fn(user, weft_event_reader_offset(r), e);
    weft_event_free(e);
  }
  weft_event_reader_free(r);
  return st;
}

static void print_record(void *user, int64_t offset, const weft_event_t *e) {
  (*(int *)user)++;
  print_event(offset, e);
}

int weft_cli_inspect_events(const char *path) {
  GPtrArray *files = event_paths(path);
  int code = 0;
  for (guint i = 0; i < files->len && code == 0; i++) {
    printf("%s\n", (const char *)files->pdata[i]);
    int n = 0;
    weft_status_t *st = each_record(files->pdata[i], print_record, &n);
    printf("  %d record%s\n", n, n == 1 ? "" : "s");
    if (st) {
      fprintf(stderr, "weft: error: %s: inspect %s: %s\n", weft_code_name(weft_status_code(st)),
              path, weft_status_message(st));
      weft_status_free(st);
      code = 1;
    }
  }
  g_ptr_array_unref(files);
  return code;
}

/* ---------------------------------------------------------------------------------------------
 * DOT */

static void keep_graph(void *user, int64_t offset, const weft_event_t *e) {
  (void)offset;
  if (!e->graph_def) return;
  GBytes **last = user;
  if (*last) g_bytes_unref(*last);
  *last = g_bytes_new(e->graph_def, e->graph_def_len);
}

/* "/job:ps/replica:0/task:1/device:CPU:0" -> "job_ps_task_1"; "" when the device names no job. */
static char *task_of(const char *device) {
  const char *job = strstr(device, "/job:");
  if (!job) return g_strdup("");
  job += 5;
  size_t jl = strcspn(job, "/");
  const char *task = strstr(device, "/task:");
  int t = task ? atoi(task + 6) : 0;
  char *j = g_strndup(job, jl);
  g_strcanon(j, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", '_');
  char *out = g_strdup_printf("job_%s_task_%d", j, t);
  g_free(j);
  return out;
}

static void put_quoted(GString *s, const char *text) {
  g_string_append_c(s, '"');
  for (const char *p = text; *p; p++) {
    if (*p == '"' || *p == '\\') g_string_append_c(s, '\\');
    g_string_append_c(s, *p);
  }
  g_string_append_c(s, '"');
}

/* The input's node name: "x:1" -> "x", "^x" -> "x" (control). */
static char *input_node(const char *input, bool *control) {
  *control = input[0] == '^';
  const char *s = *control ? input + 1 : input;
  const char *colon = strrchr(s, ':');
  return colon ? g_strndup(s, (size_t)(colon - s)) : g_strdup(s);
}

static const char *const kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
                                       "#fdb462", "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd",
                                       "#ccebc5", "#ffed6f"};

static void gstring_free(gpointer s) {
  g_string_free(s, TRUE);
}

static char *graph_to_dot(const Tensorflow__GraphDef *gd) {
  GHashTable *colour = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GHashTable *task = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  GHashTable *clusters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                               gstring_free);
  GPtrArray *order = g_ptr_array_new(); /* cluster keys in first-seen order */
  GString *out = g_string_new("digraph \"weft\" {\n  rankdir=TB;\n  node [shape=box, "
                              "style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n");
  GString *legend = g_string_new(NULL);
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    const char *dev = nd->device ? nd->device : "";
    if (!g_hash_table_contains(colour, dev)) {
      guint k = g_hash_table_size(colour);
      g_hash_table_insert(colour, g_strdup(dev), GUINT_TO_POINTER(k));
      g_string_append_printf(legend, "  // colour %s: %s\n", kPalette[k % G_N_ELEMENTS(kPalette)],
                             *dev ? dev : "(no device)");
    }
    const char *fill = kPalette[GPOINTER_TO_UINT(g_hash_table_lookup(colour, dev)) %
                                G_N_ELEMENTS(kPalette)];
    char *t = task_of(dev);
    g_hash_table_insert(task, nd->name, g_strdup(t));
    GString *body = g_hash_table_lookup(clusters, t);
    if (!body) {
      body = g_string_new(NULL);
      g_hash_table_insert(clusters, t, body); /* takes t */
      g_ptr_array_add(order, t);
    } else {
      g_free(t);
    }
    bool transfer = strcmp(nd->op, "_Send") == 0 || strcmp(nd->op, "_Recv") == 0;
    g_string_append(body, "    ");
    put_quoted(body, nd->name);
    char *label = g_strdup_printf("%s\\n%s%s%s", nd->name, nd->op, *dev ? "\\n" : "", dev);
    g_string_append_printf(body, " [label=\"%s\", fillcolor=\"%s\"%s];\n", label, fill,
                           transfer ? ", color=red, penwidth=2" : "");
    g_free(label);
  }
  for (guint c = 0; c < order->len; c++) {
    const char *key = order->pdata[c];
    GString *body = g_hash_table_lookup(clusters, key);
    if (*key) {
      g_string_append_printf(out, "  subgraph cluster_%s {\n    label=\"%s\";\n    style=dashed;\n",
                             key, key);
      g_string_append(out, body->str);
      g_string_append(out, "  }\n");
    } else {
      g_string_append(out, body->str);
    }
  }
  for (size_t i = 0; i < gd->n_node; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    for (size_t k = 0; k < nd->n_input; k++) {
      bool control;
      char *src = input_node(nd->input[k], &control);
      const char *ts = g_hash_table_lookup(task, src), *td = g_hash_table_lookup(task, nd->name);
      g_string_append(out, "  ");
      put_quoted(out, src);
      g_string_append(out, " -> ");
      put_quoted(out, nd->name);
      /* An edge between tasks is a Send/Recv pair when the graph runs. */
      if (ts && td && strcmp(ts, td) != 0) {
        g_string_append_printf(out, " [color=red, penwidth=2, style=%s, label=\"Send/Recv\", "
                               "fontcolor=red, fontsize=8]", control ? "dotted" : "bold");
      } else if (control) {
        g_string_append(out, " [style=dotted]");
      }
      g_string_append(out, ";\n");
      g_free(src);
    }
  }
  g_string_append(out, legend->str);
  g_string_append(out, "}\n");
  g_string_free(legend, TRUE);
  g_ptr_array_free(order, TRUE);
  g_hash_table_destroy(clusters);
  g_hash_table_destroy(task);
  g_hash_table_destroy(colour);
  return g_string_free(out, FALSE);
}

int weft_cli_inspect_dot(const char *path) {
  GBytes *bytes = NULL;
  weft_status_t *st = NULL;
  if (weft_cli_is_event_path(path)) {
    GPtrArray *files = event_paths(path);
    for (guint i = 0; i < files->len && !st; i++) st = each_record(files->pdata[i], keep_graph,
                                                                   &bytes);
    g_ptr_array_unref(files);
    if (!st && !bytes) {
      st = weft_status_new(WEFT_NOT_FOUND, "no event file there holds a graph");
    }
  } else {
    gchar *data = NULL;
    gsize len = 0;
    GError *err = NULL;
    if (g_file_get_contents(path, &data, &len, &err)) {
      bytes = g_bytes_new_take(data, len);
    } else {
      st = weft_status_new(WEFT_NOT_FOUND, "cannot read %s: %s", path, err->message);
      g_error_free(err);
    }
  }
  Tensorflow__GraphDef *gd = NULL;
  if (!st) {
    gsize len = 0;
    const void *data = g_bytes_get_data(bytes, &len);
    gd = (Tensorflow__GraphDef *)weft__pb_unpack(&tensorflow__graph_def__descriptor, data, len,
                                                "GraphDef", &st);
    if (!gd && !st)
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "not a GraphDef (it does not parse)");
  }
  if (bytes) g_bytes_unref(bytes);
  if (st) {
    fprintf(stderr, "weft: error: %s: inspect --dot %s: %s\n",
            weft_code_name(weft_status_code(st)), path, weft_status_message(st));
    weft_status_free(st);
    return 1;
  }
  char *dot = graph_to_dot(gd);
  fputs(dot, stdout);
  g_free(dot);
  protobuf_c_message_free_unpacked(&gd->base, NULL);
  return 0;
}
