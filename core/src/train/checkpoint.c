/* The `checkpoint` state file (TensorFlow's CheckpointState in protobuf text form), the latest
 * checkpoint of a folder, the removal of temporary files that crashed writers left, and the
 * saver: TensorFlow's Saver over the variables of a local session, reading and writing their
 * values straight from the session's resource manager. */
#include "checkpoint_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "../graph/graph_internal.h"
#include "../session/session_internal.h"
#include "train_internal.h"

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
  const char *kind = NULL;
  if (weft__file_is_special(path, &kind)) {
    weft_status_t *st = weft_status_new(WEFT_DATA_LOSS, "Checkpoint state file '%s' is %s, not "
                                        "a file", path, kind);
    g_free(path);
    return st;
  }
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
  /* As TensorFlow's latest_checkpoint, a damaged state file means no checkpoint; but a chief
   * then starts from scratch beside the checkpoints that are there, so say why. */
  if (st && weft_status_code(st) != WEFT_NOT_FOUND) {
    weft__log(WEFT_LOG_WARNING, "checkpoint", "ignoring the checkpoint state in '%s': %s", dir,
              weft_status_message(st));
  }
  weft_status_free(st);
  if (latest && !checkpoint_exists(latest)) {
    weft__log(WEFT_LOG_WARNING, "checkpoint", "the checkpoint state in '%s' names '%s', which "
              "is not a checkpoint (no index file)", dir, latest);
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
 * Temporary files left by writers that died */

/* When process `pid` started, in seconds since the epoch (false when /proc cannot say): the boot
 * time of /proc/stat plus the start of /proc/PID/stat (field 22, in clock ticks since boot). */
static bool process_start_time(pid_t pid, double *start) {
  char *stat = NULL, *self = NULL;
  char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
  bool ok = false;
  if (g_file_get_contents("/proc/stat", &stat, NULL, NULL) &&
      g_file_get_contents(path, &self, NULL, NULL)) {
    const char *btime = strstr(stat, "\nbtime ");
    const char *p = strrchr(self, ')'); /* the command name may hold spaces and parentheses */
    for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
    long ticks = sysconf(_SC_CLK_TCK);
    if (btime && p && ticks > 0) {
      *start = (double)g_ascii_strtoull(btime + 7, NULL, 10) +
               (double)g_ascii_strtoull(p + 1, NULL, 10) / (double)ticks;
      ok = true;
    }
  }
  g_free(stat);
  g_free(self);
  g_free(path);
  return ok;
}

/* Whether the writer of `path`, process `digits` of this machine, is gone: no such process (one
 * we may not signal, EPERM, exists), or the process of that pid started after `path` was last
 * written, so it cannot be the writer: the pid was reused. A trainer restarted in a container is
 * pid 1 again, and without this check its own leftovers, and those of any pid now taken, stayed
 * for good. Our own writers' files are written after we started, so they stay. The 2 s spare
 * covers /proc/stat's whole-second boot time. */
static bool writer_gone(const char *digits, const char *path) {
  gint64 pid = g_ascii_strtoll(digits, NULL, 10);
  if (pid <= 0 || pid > G_MAXINT32) return false;
  if ((pid_t)pid != getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) return true;
  GStatBuf sb;
  double start = 0;
  return g_lstat(path, &sb) == 0 && process_start_time((pid_t)pid, &start) &&
         start > (double)sb.st_mtime + 2.0;
}

/* Removes `path`, counting it; true when it went. */
static bool remove_counted(const char *path, int *removed) {
  if (g_remove(path) != 0) return false;
  (*removed)++;
  return true;
}

weft_status_t *weft_checkpoint_remove_stale_temp_files(const char *prefix, int *removed) {
  int count = 0;
  if (removed) *removed = 0;
  if (!prefix || !*prefix)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Checkpoint temporary files: empty prefix");
  char *dir = g_path_get_dirname(prefix);
  char *base = g_path_get_basename(prefix);
  char *escaped = g_regex_escape_string(base, -1);
  /* What this saver's writers name their temporary files and folders, and nothing else:
   * PREFIX[-STEP].{index,data-N-of-M}.tempstate<pid>-<8 hex> (tensor_bundle.c) and the folder
   * of a sharded save, PREFIX[-STEP]_temp_<pid>-<16 hex>, with part-N-of-M files inside. */
  char *file_pattern = g_strdup_printf("^%s(-[0-9]+)?\\.(index|data-[0-9]{5}-of-[0-9]{5})"
                                       "\\.tempstate([0-9]+)-[0-9a-f]{8}$", escaped);
  char *dir_pattern = g_strdup_printf("^%s(-[0-9]+)?_temp_([0-9]+)-[0-9a-f]{16}$", escaped);
  GRegex *file_re = g_regex_new(file_pattern, 0, 0, NULL);
  GRegex *dir_re = g_regex_new(dir_pattern, 0, 0, NULL);
  GRegex *part_re = g_regex_new("^part-[0-9]{5}-of-[0-9]{5}\\.(index|data-[0-9]{5}-of-[0-9]{5})"
                                "(\\.tempstate[0-9]+-[0-9a-f]{8})?$", 0, 0, NULL);
  GError *err = NULL;
  GDir *d = g_dir_open(dir, 0, &err);
  weft_status_t *st = NULL;
  if (!d) {
    if (!g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      st = weft_status_new(WEFT_INTERNAL, "Checkpoint temporary files: cannot list '%s': %s", dir,
                           err->message);
    g_error_free(err);
  }
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    GMatchInfo *m = NULL;
    char *full = g_build_filename(dir, name, NULL);
    if (g_regex_match(file_re, name, 0, &m)) {
      char *pid = g_match_info_fetch(m, 3);
      if (writer_gone(pid, full) && g_file_test(full, G_FILE_TEST_IS_REGULAR))
        remove_counted(full, &count);
      g_free(pid);
    } else {
      g_match_info_free(m);
      m = NULL;
      if (g_regex_match(dir_re, name, 0, &m)) {
        char *pid = g_match_info_fetch(m, 2);
        if (writer_gone(pid, full) && g_file_test(full, G_FILE_TEST_IS_DIR) &&
            !g_file_test(full, G_FILE_TEST_IS_SYMLINK)) {
          GDir *sub = g_dir_open(full, 0, NULL);
          const char *part;
          while (sub && (part = g_dir_read_name(sub))) {
            if (!g_regex_match(part_re, part, 0, NULL)) continue;
            char *part_path = g_build_filename(full, part, NULL);
            remove_counted(part_path, &count);
            g_free(part_path);
          }
          if (sub) g_dir_close(sub);
          remove_counted(full, &count); /* only when nothing else is in it */
        }
        g_free(pid);
      }
    }
    g_match_info_free(m);
    g_free(full);
  }
  if (d) g_dir_close(d);
  if (count) {
    weft__log(WEFT_LOG_INFO, "checkpoint", "removed %d temporary file%s of '%s' left by writers "
              "that are gone", count, count == 1 ? "" : "s", prefix);
  }
  g_regex_unref(file_re);
  g_regex_unref(dir_re);
  g_regex_unref(part_re);
  g_free(file_pattern);
  g_free(dir_pattern);
  g_free(escaped);
  g_free(base);
  g_free(dir);
  if (removed) *removed = count;
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Checkpoints orphaned by a kill between the state file's update and the deletion */

/* The step of `path` when it is `prefix`-STEP, else -1. */
static int64_t step_of(const char *prefix, const char *path) {
  size_t n = strlen(prefix);
  if (strncmp(path, prefix, n) != 0 || path[n] != '-' || !g_ascii_isdigit(path[n + 1])) return -1;
  guint64 step = 0;
  if (!g_ascii_string_to_unsigned(path + n + 1, 10, 0, G_MAXINT64, &step, NULL)) return -1;
  return (int64_t)step;
}

/* Removes the files of checkpoints of `prefix` (PREFIX-STEP.index and PREFIX-STEP.data-N-of-M,
 * exactly as the saver names them, nothing else) older than the oldest of `kept` (the list the
 * state file now holds) and not in it: a saver killed after writing the state file and before
 * deleting the checkpoints it dropped leaves them named by no state file, so no later save would
 * ever delete them. Each removal is logged. */
static void remove_orphans(const char *prefix, GPtrArray *kept) {
  int64_t oldest = -1;
  for (guint i = 0; i < kept->len; i++) {
    int64_t step = step_of(prefix, kept->pdata[i]);
    if (step >= 0 && (oldest < 0 || step < oldest)) oldest = step;
  }
  if (oldest <= 0) return; /* nothing of this prefix kept with a step: no line to draw */
  char *dir = g_path_get_dirname(prefix);
  char *base = g_path_get_basename(prefix);
  char *escaped = g_regex_escape_string(base, -1);
  char *pattern = g_strdup_printf("^%s-([0-9]{1,18})\\.(index|data-[0-9]{5}-of-[0-9]{5})$",
                                  escaped);
  GRegex *re = g_regex_new(pattern, 0, 0, NULL);
  GDir *d = g_dir_open(dir, 0, NULL);
  GPtrArray *doomed = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while (re && d && (name = g_dir_read_name(d))) {
    GMatchInfo *m = NULL;
    if (g_regex_match(re, name, 0, &m)) {
      char *digits = g_match_info_fetch(m, 1);
      int64_t step = g_ascii_strtoll(digits, NULL, 10);
      bool listed = false;
      for (guint i = 0; i < kept->len && !listed; i++)
        listed = step_of(prefix, kept->pdata[i]) == step;
      char *full = g_build_filename(dir, name, NULL);
      if (step < oldest && !listed && g_file_test(full, G_FILE_TEST_IS_REGULAR) &&
          !g_file_test(full, G_FILE_TEST_IS_SYMLINK)) {
        g_ptr_array_add(doomed, full);
        full = NULL;
      }
      g_free(full);
      g_free(digits);
    }
    g_match_info_free(m);
  }
  if (d) g_dir_close(d);
  /* Index files first: a checkpoint stops being one before its data goes. */
  for (int pass = 0; pass < 2; pass++) {
    for (guint i = 0; i < doomed->len; i++) {
      const char *path = doomed->pdata[i];
      if (g_str_has_suffix(path, ".index") != (pass == 0)) continue;
      if (g_remove(path) == 0) {
        weft__log(WEFT_LOG_WARNING, "checkpoint", "removed '%s': a checkpoint older than the "
                  "oldest one kept (step %" G_GINT64_FORMAT ") that no state file names, left by "
                  "a saver stopped before it deleted it", path, oldest);
      }
    }
  }
  g_ptr_array_unref(doomed);
  if (re) g_regex_unref(re);
  g_free(pattern);
  g_free(escaped);
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
  /* The state file was there and read when kept was seeded: the folder is a saver's, so files of
   * the prefix that it no longer names are orphans (remove_orphans), not someone's checkpoints
   * kept by hand beside a state file that was deleted. */
  bool state_read;
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

static bool is_resource_variable(const weft_node_t *n) {
  return strcmp(n->op_name, "VarHandleOp") == 0;
}

static bool is_variable_op(const weft_node_t *n) {
  return strcmp(n->op_name, "VariableV2") == 0 || strcmp(n->op_name, "Variable") == 0 ||
         is_resource_variable(n);
}

/* A variable node's dtype and declared shape: a ref variable's output says them, a VarHandleOp's
 * attrs (its output is the handle). */
static weft_dtype_t variable_dtype(const weft_node_t *n) {
  if (!is_resource_variable(n)) return weft__dtype_base(n->output_types[0]);
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, "dtype");
  return a && a->kind == WEFT_ATTR_TYPE ? a->u.type : WEFT_DT_INVALID;
}

static weft__shape_t variable_shape(const weft_node_t *n) {
  if (!is_resource_variable(n)) return weft__node_shape(n, 0);
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, "shape");
  weft__shape_t unknown = {.rank = -1};
  return a && a->kind == WEFT_ATTR_SHAPE ? a->u.shape : unknown;
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
                               saver->var_list[i],
                               n ? " (it is not a VariableV2 or VarHandleOp node)" : "");
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

/* The graph the saver works on; the session may be local or remote. */
static weft_status_t *saver_graph(weft_session_t *session, const weft_graph_t *graph,
                                  const weft_graph_t **g) {
  if (!session) return weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: session is NULL");
  *g = graph ? graph : weft__session_graph(session);
  if (!*g) return weft_status_new(WEFT_FAILED_PRECONDITION, "Saver: the session is closed");
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

/* Values of `vars` straight from a local session's resource manager (no step runs). */
static weft_status_t *read_local_values(weft_session_t *session, weft__resource_mgr_t *rm,
                                        GPtrArray *vars, weft_tensor_t **values) {
  weft_status_t *st = NULL;
  for (guint i = 0; !st && i < vars->len; i++) {
    const weft_node_t *n = vars->pdata[i];
    weft__variable_t *var = find_variable(session, rm, n);
    if (var) {
      g_rec_mutex_lock(&var->lock);
      if (var->value) st = weft__tensor_copy_to_host(var->value, &values[i]);
      g_rec_mutex_unlock(&var->lock);
      weft__variable_unref(var);
    }
    if (!st && !values[i]) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION, "Saver: attempting to save uninitialized "
                           "variable '%s' (run its initializer or restore it first)", n->name);
    }
  }
  return st;
}

weft_status_t *weft__variable_initialized_probe(weft_graph_t *g, weft_node_t *var,
                                                weft_node_t **out) {
  char *name = g_strconcat(var->name, "/is_initialized", NULL);
  *out = weft_graph_node(g, name);
  weft_status_t *st = NULL;
  if (!*out) {
    weft_graph_push_colocate(g, var);
    bool resource = is_resource_variable(var);
    weft_op_builder_t *b =
        weft_op_new(g, resource ? "VarIsInitializedOp" : "IsVariableInitialized", name);
    weft_op_add_input(b, weft_out(var, 0));
    if (!resource) weft_op_set_attr_type(b, "dtype", weft__dtype_base(var->output_types[0]));
    st = weft_op_finish(b, out);
    weft_graph_pop_colocate(g);
  }
  g_free(name);
  return st;
}

/* What a step fetches to read variable `var`: a ref variable's own output; for a resource
 * variable a ReadVariableOp colocated with it ("V/save_read"), added on first use, as
 * TensorFlow's saver reads resource variables. */
static weft_status_t *saved_tensor(weft_graph_t *g, weft_node_t *var, char **out) {
  if (!is_resource_variable(var)) {
    *out = g_strdup(var->name);
    return NULL;
  }
  *out = g_strconcat(var->name, "/save_read", NULL);
  if (weft_graph_node(g, *out)) return NULL;
  weft_graph_push_colocate(g, var);
  weft_op_builder_t *b = weft_op_new(g, "ReadVariableOp", *out);
  weft_op_add_input(b, weft_out(var, 0));
  weft_op_set_attr_type(b, "dtype", variable_dtype(var));
  weft_node_t *n = NULL;
  weft_status_t *st = weft_op_finish(b, &n);
  weft_graph_pop_colocate(g);
  return st;
}

/* Values of `vars` from any session (a remote one: the tasks holding them send them): one step
 * fetching every variable, after one checking which are initialised so the error names them. */
static weft_status_t *fetch_values(weft_session_t *session, weft_graph_t *g, GPtrArray *vars,
                                   weft_tensor_t **values) {
  char **names = g_new0(char *, vars->len + 1);
  weft_status_t *st = NULL;
  for (guint i = 0; !st && i < vars->len; i++) st = saved_tensor(g, vars->pdata[i], &names[i]);
  char **probes = g_new0(char *, vars->len + 1);
  for (guint i = 0; !st && i < vars->len; i++) {
    weft_node_t *probe = NULL;
    st = weft__variable_initialized_probe(g, vars->pdata[i], &probe);
    if (!st) probes[i] = g_strdup(probe->name);
  }
  weft_tensor_t **inited = g_new0(weft_tensor_t *, vars->len + 1);
  if (!st && vars->len) {
    st = weft_session_run(session, NULL, NULL, 0, (const char *const *)probes, inited,
                          (int)vars->len, NULL, 0);
  }
  for (guint i = 0; !st && i < vars->len; i++) {
    if (weft_tensor_get_double(inited[i], 0) == 0) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION, "Saver: attempting to save uninitialized "
                           "variable '%s' (run its initializer or restore it first)",
                           ((weft_node_t *)vars->pdata[i])->name);
    }
  }
  for (guint i = 0; i < vars->len; i++) weft_tensor_unref(inited[i]);
  g_free(inited);
  g_strfreev(probes);
  if (!st && vars->len) {
    st = weft_session_run(session, NULL, NULL, 0, (const char *const *)names, values,
                          (int)vars->len, NULL, 0);
    if (st) weft_status_prefix(st, "Saver: reading the variables");
  }
  g_strfreev(names);
  return st;
}

/* "/job:ps/replica:0/task:1" of a full device name: variables of one task form one shard, as in
 * TensorFlow's sharded saver. */
static char *task_of_device(const char *device) {
  const char *d = device ? strstr(device, "/device:") : NULL;
  return d ? g_strndup(device, (gsize)(d - device)) : g_strdup(device ? device : "");
}

/* Writes values[i] under the node names of `vars` to checkpoint `path`: one shard per task the
 * variables live on, each written on its own and then merged (TensorFlow's MergeV2Checkpoints),
 * so the data files are PATH.data-0000K-of-0000N with N the number of tasks. */
static weft_status_t *write_shards(const weft_saver_t *saver, weft_session_t *session,
                                   GPtrArray *vars, weft_tensor_t **values, const char *path) {
  GPtrArray *tasks = g_ptr_array_new_with_free_func(g_free); /* sorted, distinct */
  char **task_of = g_new0(char *, vars->len + 1);
  for (guint i = 0; i < vars->len; i++) {
    task_of[i] = task_of_device(weft_session_node_device(session, ((weft_node_t *)vars->pdata[i])->name));
    guint at = 0;
    while (at < tasks->len && strcmp(tasks->pdata[at], task_of[i]) < 0) at++;
    if (at == tasks->len || strcmp(tasks->pdata[at], task_of[i]) != 0)
      g_ptr_array_insert(tasks, (gint)at, g_strdup(task_of[i]));
  }
  if (tasks->len == 0) g_ptr_array_add(tasks, g_strdup(""));
  char *temp_dir = NULL;
  char **parts = g_new0(char *, tasks->len + 1);
  weft_status_t *st = NULL;
  if (tasks->len == 1) {
    parts[0] = g_strdup(path);
  } else {
    /* With the pid, so that weft_checkpoint_remove_stale_temp_files knows whose it is. */
    temp_dir = g_strdup_printf("%s_temp_%d-%08x%08x", path, (int)getpid(), g_random_int(),
                               g_random_int());
    for (guint k = 0; k < tasks->len; k++)
      parts[k] = g_strdup_printf("%s/part-%05u-of-%05u", temp_dir, k, tasks->len);
  }
  for (guint k = 0; !st && k < tasks->len; k++) {
    weft_checkpoint_writer_t *w = NULL;
    st = weft_checkpoint_writer_new(parts[k], &w);
    if (!st) weft_checkpoint_writer_set_snappy(w, saver->snappy);
    for (guint i = 0; !st && i < vars->len; i++) {
      if (strcmp(task_of[i], tasks->pdata[k]) == 0)
        st = weft_checkpoint_writer_add(w, ((weft_node_t *)vars->pdata[i])->name, values[i]);
    }
    if (!st) st = weft_checkpoint_writer_finish(w);
    weft_checkpoint_writer_free(w);
  }
  if (!st && temp_dir) st = weft_checkpoint_merge((const char *const *)parts, (int)tasks->len, path, true);
  if (temp_dir) {
    for (guint k = 0; k < tasks->len; k++) delete_checkpoint(parts[k]);
    g_rmdir(temp_dir);
  }
  g_free(temp_dir);
  g_strfreev(parts);
  g_strfreev(task_of);
  g_ptr_array_unref(tasks);
  return st;
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
  GPtrArray *vars = NULL;
  char *path = global_step >= 0 ? g_strdup_printf("%s-%" G_GINT64_FORMAT, prefix, global_step)
                                : g_strdup(prefix);
  weft_status_t *st = saver_graph(session, graph, &g);
  if (!st) st = collect_variables(saver, g, &vars);
  weft_tensor_t **values = vars ? g_new0(weft_tensor_t *, vars->len + 1) : NULL;
  weft__resource_mgr_t *rm = st ? NULL : weft__session_resources(session);
  if (!st) {
    st = rm ? read_local_values(session, rm, vars, values)
            : fetch_values(session, (weft_graph_t *)g, vars, values);
  }
  /* Leftovers of writers of this prefix that crashed (never our own: see writer_gone). */
  if (!st) weft_status_free(weft_checkpoint_remove_stale_temp_files(prefix, NULL));
  if (!st) st = write_shards(saver, session, vars, values, path);
  for (guint i = 0; vars && i < vars->len; i++) weft_tensor_unref(values[i]);
  g_free(values);
  if (vars) g_ptr_array_unref(vars);

  if (!st) {
    char *dir = g_path_get_dirname(path);
    if (!saver->recovered) {
      /* Pick up the checkpoints an earlier run left, so max_to_keep holds across restarts. */
      char **all = NULL;
      weft_status_t *read_st = weft_checkpoint_state_read(dir, NULL, &all);
      saver->state_read = !read_st;
      weft_status_free(read_st);
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
    GPtrArray *doomed = g_ptr_array_new_with_free_func(g_free);
    while (saver->max_to_keep > 0 && saver->kept->len > (guint)saver->max_to_keep)
      g_ptr_array_add(doomed, g_ptr_array_steal_index(saver->kept, 0));
    st = weft_checkpoint_state_write(dir, path, (const char *const *)saver->kept->pdata,
                                     (int)saver->kept->len);
    /* The old checkpoints go only once the state file no longer names them: a state file that
     * could not be written still names the previous checkpoint, which must stay whole. */
    for (guint i = 0; !st && i < doomed->len; i++) delete_checkpoint(doomed->pdata[i]);
    /* What an earlier saver of this prefix dropped but was killed before deleting. Only with a
     * limit (max_to_keep 0 deletes nothing) and beside a state file this saver read. */
    if (!st && saver->max_to_keep > 0 && saver->state_read && global_step >= 0)
      remove_orphans(prefix, saver->kept);
    if (st) {
      for (guint i = doomed->len; i > 0; i--)
        g_ptr_array_insert(saver->kept, 0, g_ptr_array_steal_index(doomed, i - 1));
      g_ptr_array_remove_index(saver->kept, saver->kept->len - 1);
    }
    g_ptr_array_unref(doomed);
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

/* Puts values[i] into the variables of a local session's resource manager directly. */
static weft_status_t *assign_local(weft_session_t *session, weft__resource_mgr_t *rm,
                                   GPtrArray *vars, weft_tensor_t **values) {
  /* Variables that never ran have no place nor resource yet: running their nodes places them
   * and creates them (uninitialised), as the first step of a training program would. */
  const char **names = g_new(const char *, vars->len);
  for (guint i = 0; i < vars->len; i++) names[i] = ((weft_node_t *)vars->pdata[i])->name;
  weft_status_t *st = weft_session_run(session, NULL, NULL, 0, NULL, NULL, 0, names,
                                       (int)vars->len);
  g_free(names);
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
  return st;
}

/* Any session (a remote one: the values travel to the tasks holding the variables): one step
 * feeding each value to an Assign colocated with its variable ("W/restore" from the placeholder
 * "W/restore_value", TensorFlow's save/Assign), added to the graph on first use. */
static weft_status_t *assign_by_step(weft_session_t *session, weft_graph_t *g, GPtrArray *vars,
                                     weft_tensor_t **values) {
  weft_status_t *st = NULL;
  char **feed_names = g_new0(char *, vars->len + 1);
  char **targets = g_new0(char *, vars->len + 1);
  for (guint i = 0; !st && i < vars->len; i++) {
    weft_node_t *var = vars->pdata[i];
    char *ph_name = g_strconcat(var->name, "/restore_value", NULL);
    char *assign_name = g_strconcat(var->name, "/restore", NULL);
    weft_node_t *ph = weft_graph_node(g, ph_name);
    weft_node_t *assign = weft_graph_node(g, assign_name);
    if (!ph || !assign) {
      /* Only the Assign goes with the variable: the fed placeholder may be anywhere. */
      const weft_tensor_t *v = values[i];
      weft_output_t ph_out = weft_placeholder(g, ph_name, weft_tensor_dtype(v),
                                              weft_tensor_rank(v), weft_tensor_dims(v), &st);
      weft_graph_push_colocate(g, var);
      if (!st) {
        /* A resource variable is written as TensorFlow's saver does: AssignVariableOp. */
        bool resource = is_resource_variable(var);
        weft_op_builder_t *b = weft_op_new(g, resource ? "AssignVariableOp" : "Assign",
                                           assign_name);
        weft_op_add_input(b, weft_out(var, 0));
        weft_op_add_input(b, ph_out);
        weft_op_set_attr_type(b, resource ? "dtype" : "T", weft_tensor_dtype(v));
        st = weft_op_finish(b, &assign);
        ph = ph_out.node;
      }
      weft_graph_pop_colocate(g);
    }
    if (!st) {
      feed_names[i] = g_strdup(ph->name);
      targets[i] = g_strdup(assign->name);
    }
    g_free(ph_name);
    g_free(assign_name);
  }
  if (!st) {
    st = weft_session_run(session, (const char *const *)feed_names, values, (int)vars->len, NULL,
                          NULL, 0, (const char *const *)targets, (int)vars->len);
    if (st) weft_status_prefix(st, "Saver: assigning the restored values");
  }
  g_strfreev(feed_names);
  g_strfreev(targets);
  return st;
}

weft_status_t *weft_saver_restore(weft_saver_t *saver, weft_session_t *session,
                                  const weft_graph_t *graph, const char *prefix) {
  if (!prefix || !*prefix) return weft_status_new(WEFT_INVALID_ARGUMENT, "Saver: empty prefix");
  const weft_graph_t *g;
  GPtrArray *vars = NULL;
  weft_checkpoint_reader_t *r = NULL;
  weft_status_t *st = saver_graph(session, graph, &g);
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
    weft_dtype_t want = variable_dtype(n);
    const weft__shape_t declared = variable_shape(n), *shape = &declared;
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
  if (!st && vars->len) {
    weft__resource_mgr_t *rm = weft__session_resources(session);
    st = rm ? assign_local(session, rm, vars, values)
            : assign_by_step(session, (weft_graph_t *)g, vars, values);
  }
  for (guint i = 0; vars && i < vars->len; i++) weft_tensor_unref(values[i]);
  g_free(values);
  if (vars) g_ptr_array_unref(vars);
  weft_checkpoint_reader_free(r);
  return st;
}
