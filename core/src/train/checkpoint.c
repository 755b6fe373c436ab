/* The `checkpoint` state file (TensorFlow's CheckpointState in protobuf text form), the latest
 * checkpoint of a folder, and the saver: TensorFlow's Saver over the variables of a local
 * session, reading and writing their values straight from the session's resource manager. */
#include "checkpoint_internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../graph/graph_internal.h"
#include "../session/session_internal.h"

#define STATE_FILE "checkpoint"

/* ---------------------------------------------------------------------------------------------
 * State file */

static char *resolve(const char *dir, const char *path) {
  return g_path_is_absolute(path) ? g_strdup(path) : g_build_filename(dir, path, NULL);
}

weft_status_t *weft_checkpoint_state_read(const char *dir, char **latest, char ***all) {
  if (latest) *latest = NULL;
  if (all) *all = NULL;
  char *path = g_build_filename(dir, STATE_FILE, NULL);
  gchar *text = NULL;
  GError *err = NULL;
  if (!g_file_get_contents(path, &text, NULL, &err)) {
    weft_status_t *st = weft_status_new(
        err->domain == G_FILE_ERROR && err->code == G_FILE_ERROR_NOENT ? WEFT_NOT_FOUND : WEFT_INTERNAL,
        "No checkpoint state file '%s': %s", path, err->message);
    g_error_free(err);
    g_free(path);
    return st;
  }
  GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
  char *last = NULL;
  weft_status_t *st = NULL;
  char **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i] && !st; i++) {
    char *line = g_strstrip(lines[i]);
    if (!*line || *line == '#') continue;
    char *colon = strchr(line, ':');
    char *q1 = colon ? strchr(colon, '"') : NULL;
    char *q2 = q1 ? strrchr(q1 + 1, '"') : NULL;
    if (!q2) {
      st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint state file '%s', line %d: expected "
                           "field: \"value\", got '%s'", path, i + 1, line);
      break;
    }
    *colon = '\0';
    *q2 = '\0';
    char *field = g_strstrip(line);
    char *value = g_strcompress(q1 + 1);
    if (strcmp(field, "model_checkpoint_path") == 0) {
      g_free(last);
      last = resolve(dir, value);
    } else if (strcmp(field, "all_model_checkpoint_paths") == 0) {
      g_ptr_array_add(paths, resolve(dir, value));
    } /* other fields (timestamps) are not needed */
    g_free(value);
  }
  g_strfreev(lines);
  g_free(text);
  g_free(path);
  if (!st && latest) {
    *latest = last;
    last = NULL;
  }
  if (!st && all) {
    g_ptr_array_add(paths, NULL);
    *all = (char **)g_ptr_array_free(paths, FALSE);
    paths = NULL;
  }
  g_free(last);
  if (paths) g_ptr_array_unref(paths);
  return st;
}

/* `path` relative to `dir` when it lies directly in it, so the folder can move. */
static char *relative_to(const char *dir, const char *path) {
  char *cdir = g_canonicalize_filename(dir, NULL);
  char *cpath = g_canonicalize_filename(path, NULL);
  char *pdir = g_path_get_dirname(cpath);
  char *out = strcmp(pdir, cdir) == 0 ? g_path_get_basename(cpath) : g_strdup(path);
  g_free(cdir);
  g_free(cpath);
  g_free(pdir);
  return out;
}

static void append_field(GString *s, const char *dir, const char *field, const char *path) {
  char *rel = relative_to(dir, path);
  char *esc = g_strescape(rel, NULL);
  g_string_append_printf(s, "%s: \"%s\"\n", field, esc);
  g_free(esc);
  g_free(rel);
}

weft_status_t *weft_checkpoint_state_write(const char *dir, const char *latest,
                                           const char *const *all, int n_all) {
  GString *s = g_string_new(NULL);
  if (latest) append_field(s, dir, "model_checkpoint_path", latest);
  for (int i = 0; i < n_all; i++) append_field(s, dir, "all_model_checkpoint_paths", all[i]);
  char *path = g_build_filename(dir, STATE_FILE, NULL);
  GError *err = NULL;
  weft_status_t *st = NULL;
  if (!g_file_set_contents_full(path, s->str, (gssize)s->len,
                                G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE, 0644,
                                &err)) {
    st = weft_status_new(WEFT_INTERNAL, "Cannot write checkpoint state file '%s': %s", path,
                         err->message);
    g_error_free(err);
  }
  g_free(path);
  g_string_free(s, TRUE);
  return st;
}

static bool checkpoint_exists(const char *prefix) {
  char *index = weft__bundle_index_filename(prefix);
  bool ok = g_file_test(index, G_FILE_TEST_IS_REGULAR);
  g_free(index);
  return ok;
}

char *weft_checkpoint_latest(const char *dir) {
  char *latest = NULL;
  weft_status_t *st = weft_checkpoint_state_read(dir, &latest, NULL);
  weft_status_free(st);
  if (latest && !checkpoint_exists(latest)) {
    g_free(latest);
    latest = NULL;
  }
  return latest;
}

/* Removes checkpoint `prefix`: the index first, so it stops being a checkpoint before its data
 * goes. */
static void delete_checkpoint(const char *prefix) {
  char *index = weft__bundle_index_filename(prefix);
  unlink(index);
  g_free(index);
  char *dir = g_path_get_dirname(prefix);
  char *base = g_path_get_basename(prefix);
  char *data_prefix = g_strconcat(base, ".data-", NULL);
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d) {
    const char *name;
    while ((name = g_dir_read_name(d))) {
      if (g_str_has_prefix(name, data_prefix)) {
        char *full = g_build_filename(dir, name, NULL);
        unlink(full);
        g_free(full);
      }
    }
    g_dir_close(d);
  }
  g_free(data_prefix);
  g_free(base);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Saver */

struct weft_saver {
  int max_to_keep;
  char **var_list; /* NULL: every variable */
  bool snappy;
  GPtrArray *kept; /* prefixes saved, oldest first */
  bool recovered;  /* kept was seeded from the state file */
};

weft_saver_t *weft_saver_new(int max_to_keep) {
  weft_saver_t *s = g_new0(weft_saver_t, 1);
  s->max_to_keep = max_to_keep;
  s->kept = g_ptr_array_new_with_free_func(g_free);
  return s;
}

void weft_saver_free(weft_saver_t *s) {
  if (!s) return;
  g_strfreev(s->var_list);
  g_ptr_array_unref(s->kept);
  g_free(s);
}

void weft_saver_set_var_list(weft_saver_t *s, const char *const *names, int n) {
  g_strfreev(s->var_list);
  s->var_list = NULL;
  if (!names || n <= 0) return;
  s->var_list = g_new0(char *, n + 1);
  for (int i = 0; i < n; i++) s->var_list[i] = g_strdup(names[i]);
}

void weft_saver_set_snappy(weft_saver_t *s, bool on) {
  s->snappy = on;
}

static bool is_variable_op(const weft_node_t *n) {
  return strcmp(n->op_name, "VariableV2") == 0 || strcmp(n->op_name, "Variable") == 0;
}

static const char *string_attr(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, name);
  return (a && a->kind == WEFT_ATTR_STRING) ? a->u.s.data : "";
}

/* The variable nodes the saver covers, in creation order. */
static weft_status_t *collect_variables(const weft_saver_t *saver, const weft_graph_t *graph,
                                        GPtrArray **out) {
  *out = g_ptr_array_new();
  if (saver && saver->var_list) {
    for (int i = 0; saver->var_list[i]; i++) {
      weft_node_t *n = weft_graph_node(graph, saver->var_list[i]);
      if (!n || !is_variable_op(n)) {
        g_ptr_array_unref(*out);
        *out = NULL;
        return weft_status_new(WEFT_NOT_FOUND, "Saver: '%s' is not a variable of the graph%s",
                               saver->var_list[i], n ? " (it is not a VariableV2 node)" : "");
      }
      g_ptr_array_add(*out, n);
    }
    return NULL;
  }
  int count = weft_graph_num_nodes(graph);
  for (int i = 0; i < count; i++) {
    weft_node_t *n = weft_graph_node_at(graph, i);
    if (is_variable_op(n)) g_ptr_array_add(*out, n);
  }
  return NULL;
}

static weft_status_t *session_parts(weft_session_t *session, const weft_graph_t *graph,
                                    const weft_graph_t **g, weft__resource_mgr_t **rm) {
  if (!session) return weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: session is NULL");
  *rm = weft__session_resources(session);
  if (!*rm) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "Saver: the session is closed or remote; saving "
                           "and restoring need a local, open session");
  }
  *g = graph ? graph : weft__session_graph(session);
  return NULL;
}

/* The variable behind node `n` in `rm`, or NULL when the node never ran (so it was never
 * placed, created nor initialised). The caller unrefs it. */
static weft__variable_t *find_variable(weft_session_t *session, weft__resource_mgr_t *rm,
                                       const weft_node_t *n) {
  const char *devname = weft_session_node_device(session, n->name);
  if (!devname || !*devname) return NULL;
  weft__device_t *dev = weft__device_find(devname);
  const char *shared = string_attr(n, "shared_name");
  return weft__resource_mgr_variable(rm, dev, string_attr(n, "container"),
                                     *shared ? shared : n->name);
}

static void forget_kept(weft_saver_t *saver, const char *prefix) {
  for (guint i = 0; i < saver->kept->len; i++) {
    if (strcmp(g_ptr_array_index(saver->kept, i), prefix) == 0) {
      g_ptr_array_remove_index(saver->kept, i);
      return;
    }
  }
}

weft_status_t *weft_saver_save(weft_saver_t *saver, weft_session_t *session,
                               const weft_graph_t *graph, const char *prefix,
                               int64_t global_step, char **saved_path) {
  if (saved_path) *saved_path = NULL;
  if (!prefix || !*prefix) return weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: empty prefix");
  weft_saver_t *tmp_saver = NULL;
  if (!saver) saver = tmp_saver = weft_saver_new(5);
  const weft_graph_t *g;
  weft__resource_mgr_t *rm;
  GPtrArray *vars = NULL;
  weft_checkpoint_writer_t *w = NULL;
  char *path = global_step >= 0 ? g_strdup_printf("%s-%" G_GINT64_FORMAT, prefix, global_step)
                                : g_strdup(prefix);
  weft_status_t *st = session_parts(session, graph, &g, &rm);
  if (!st) st = collect_variables(saver, g, &vars);
  if (!st) st = weft_checkpoint_writer_new(path, &w);
  if (!st) weft_checkpoint_writer_set_snappy(w, saver->snappy);
  for (guint i = 0; !st && i < vars->len; i++) {
    const weft_node_t *n = vars->pdata[i];
    weft__variable_t *var = find_variable(session, rm, n);
    weft_tensor_t *value = NULL;
    if (var) {
      g_rec_mutex_lock(&var->lock);
      if (var->value) st = weft__tensor_copy_to_host(var->value, &value);
      g_rec_mutex_unlock(&var->lock);
      weft__variable_unref(var);
    }
    if (!st && !value) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION, "Saver: attempting to save uninitialized "
                           "variable '%s' (run its initializer or restore it first)", n->name);
    }
    if (!st) st = weft_checkpoint_writer_add(w, n->name, value);
    weft_tensor_unref(value);
  }
  if (!st) st = weft_checkpoint_writer_finish(w);
  weft_checkpoint_writer_free(w);
  if (vars) g_ptr_array_unref(vars);

  if (!st) {
    char *dir = g_path_get_dirname(path);
    if (!saver->recovered) {
      /* Pick up the checkpoints an earlier run left, so max_to_keep holds across restarts. */
      char **all = NULL;
      weft_status_free(weft_checkpoint_state_read(dir, NULL, &all));
      for (int i = 0; all && all[i]; i++) {
        if (checkpoint_exists(all[i])) {
          forget_kept(saver, all[i]);
          g_ptr_array_add(saver->kept, g_strdup(all[i]));
        }
      }
      g_strfreev(all);
      saver->recovered = true;
    }
    for (guint i = 0; i < saver->kept->len; i++) {
      char *a = g_canonicalize_filename(g_ptr_array_index(saver->kept, i), NULL);
      char *b = g_canonicalize_filename(path, NULL);
      bool same = strcmp(a, b) == 0;
      g_free(a);
      g_free(b);
      if (same) {
        g_ptr_array_remove_index(saver->kept, i);
        break;
      }
    }
    g_ptr_array_add(saver->kept, g_strdup(path));
    while (saver->max_to_keep > 0 && saver->kept->len > (guint)saver->max_to_keep) {
      delete_checkpoint(g_ptr_array_index(saver->kept, 0));
      g_ptr_array_remove_index(saver->kept, 0);
    }
    st = weft_checkpoint_state_write(dir, path, (const char *const *)saver->kept->pdata,
                                     (int)saver->kept->len);
    g_free(dir);
  }
  if (!st && saved_path) {
    *saved_path = path;
    path = NULL;
  }
  g_free(path);
  weft_saver_free(tmp_saver);
  return st;
}

weft_status_t *weft_saver_restore(weft_saver_t *saver, weft_session_t *session,
                                  const weft_graph_t *graph, const char *prefix) {
  if (!prefix || !*prefix) return weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: empty prefix");
  const weft_graph_t *g;
  weft__resource_mgr_t *rm;
  GPtrArray *vars = NULL;
  weft_checkpoint_reader_t *r = NULL;
  weft_status_t *st = session_parts(session, graph, &g, &rm);
  if (!st) st = collect_variables(saver, g, &vars);
  if (!st) st = weft_checkpoint_reader_open(prefix, &r);
  weft_tensor_t **values = vars ? g_new0(weft_tensor_t *, vars->len + 1) : NULL;

  /* Read and check everything before assigning anything, so a bad checkpoint leaves the
   * variables as they were. */
  for (guint i = 0; !st && i < vars->len; i++) {
    const weft_node_t *n = vars->pdata[i];
    weft_dtype_t dtype;
    int rank;
    int64_t dims[WEFT_MAX_RANK];
    if (!weft_checkpoint_reader_has(r, n->name)) {
      st = weft_status_new(WEFT_NOT_FOUND, "Saver: variable '%s' not found in checkpoint '%s'",
                           n->name, prefix);
      break;
    }
    st = weft_checkpoint_reader_info(r, n->name, &dtype, &rank, dims);
    if (st) break;
    weft_dtype_t want = weft__dtype_base(n->output_types[0]);
    const weft__shape_t *shape = &n->output_shapes[0];
    if (dtype != want) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: variable '%s' has dtype %s but "
                           "checkpoint '%s' holds %s", n->name, weft_dtype_name(want), prefix,
                           weft_dtype_name(dtype));
      break;
    }
    bool shape_ok = shape->rank < 0 || shape->rank == rank;
    for (int d = 0; shape_ok && shape->rank >= 0 && d < rank; d++)
      shape_ok = shape->dims[d] == WEFT_DIM_UNKNOWN || shape->dims[d] == dims[d];
    if (!shape_ok) {
      char *a = weft__shape_to_string(shape->rank, shape->dims);
      char *b = weft__shape_to_string(rank, dims);
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: variable '%s' has shape %s but "
                           "checkpoint '%s' holds shape %s", n->name, a, prefix, b);
      g_free(a);
      g_free(b);
      break;
    }
    st = weft_checkpoint_reader_read(r, n->name, &values[i]);
  }
  /* Variables that never ran have no place nor resource yet: running their nodes places them
   * and creates them (uninitialised), as the first step of a training program would. */
  if (!st && vars->len) {
    const char **names = g_new(const char *, vars->len);
    for (guint i = 0; i < vars->len; i++) names[i] = ((weft_node_t *)vars->pdata[i])->name;
    st = weft_session_run(session, NULL, NULL, 0, NULL, NULL, 0, names, (int)vars->len);
    g_free(names);
  }
  for (guint i = 0; !st && i < vars->len; i++) {
    const weft_node_t *n = vars->pdata[i];
    weft__variable_t *var = find_variable(session, rm, n);
    if (!var) {
      st = weft_status_new(WEFT_INTERNAL, "Saver: variable '%s' has no device after running it",
                           n->name);
      break;
    }
    weft__device_t *placement = (var->device && !var->device->props.host_accessible) ? var->device : NULL;
    weft_tensor_t *t = NULL;
    st = weft__tensor_to_device(values[i], placement, &t);
    if (!st) {
      g_rec_mutex_lock(&var->lock);
      weft_tensor_unref(var->value);
      var->value = t;
      g_rec_mutex_unlock(&var->lock);
    }
    weft__variable_unref(var);
  }
  for (guint i = 0; vars && i < vars->len; i++) weft_tensor_unref(values[i]);
  g_free(values);
  if (vars) g_ptr_array_unref(vars);
  weft_checkpoint_reader_free(r);
  return st;
}
