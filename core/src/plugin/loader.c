/* The plugin loader: finds libweft-*.so files (WEFT_PLUGIN_PATH, then the build tree's plugin
 * folder when the core runs from the build tree, else the plugin folder of the install it belongs
 * to, found next to libweft.so.0 or the program: base/install_dirs.h), dlopens each once,
 * checks its entry table (symbol, struct size, ABI version), runs its init() against a staging
 * registrar, and commits what it registered only if everything about it was valid. Every plugin
 * tried leaves a record saying what loaded, or why not. */
#include "plugin_internal.h"

#include "../base/install_dirs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef WEFT_BUILD_PLUGIN_DIR
#define WEFT_BUILD_PLUGIN_DIR ""
#endif

typedef struct record {
  weft_plugin_record_t pub;
  char *real_path;
} record_t;

static GMutex loader_lock;
static GPtrArray *records; /* record_t* */

/* What one plugin registered during init(), committed only if init succeeded. */
typedef struct staging {
  const char *path;
  GPtrArray *ops;      /* weft__op_def_t* */
  GPtrArray *kernels;  /* weft__kernel_t* */
  GPtrArray *backends; /* weft__backend_t* */
  GPtrArray *gradients; /* weft__grad_program_t* (ABI 1.1) */
  GPtrArray *cases;    /* weft__plugin_case_t* (ABI 1.1) */
  weft_status_t *error; /* the first registration error */
} staging_t;

static const char *record_strdup(const char *s) { return s ? g_strdup(s) : NULL; }

static record_t *add_record(const char *path, const char *real_path) {
  record_t *r = g_new0(record_t, 1);
  r->pub.path = record_strdup(path);
  r->real_path = g_strdup(real_path);
  r->pub.device_types = g_strdup("");
  g_ptr_array_add(records, r);
  return r;
}

static void record_fail(record_t *r, weft_status_t *st) {
  r->pub.error = g_strdup(weft_status_message(st));
  weft__log(WEFT_LOG_WARNING, "plugin", "skipping plugin: %s", r->pub.error);
  weft_status_free(st);
}

/* ---------------------------------------------------------------------------------------------
 * The staging registrar */

/* Keeps a copy of the first registration error: the plugin may free or ignore what it got. */
static void stage_error(staging_t *s, const weft_status_t *st) {
  if (!s->error) s->error = weft_status_new(weft_status_code(st), "%s", weft_status_message(st));
}

static weft_status_t *stage_backend(void *ctx, const weft_backend_t *table) {
  staging_t *s = ctx;
  weft_status_t *st = NULL;
  if (!table || table->struct_size < offsetof(weft_backend_t, memory_usage)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "backend table too small (struct_size %zu, need at least %zu)",
                         table ? table->struct_size : 0, offsetof(weft_backend_t, memory_usage));
  } else if (!table->device_type || !*table->device_type || !table->alloc || !table->free ||
             !table->copy_to_device || !table->copy_from_device) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "backend '%s' lacks a device type or a required function (alloc, free, "
                         "copy_to_device, copy_from_device)",
                         table->device_type ? table->device_type : "");
  }
  if (!st) {
    for (const char *c = table->device_type; *c && !st; c++) {
      if (!g_ascii_isupper(*c) && !g_ascii_isdigit(*c) && *c != '_') {
        st = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "device type '%s' must be upper case letters, digits and '_'",
                             table->device_type);
      }
    }
  }
  if (!st) {
    char *owner = weft__registry_backend_owner(table->device_type);
    if (owner) {
      st = weft_status_new(WEFT_ALREADY_EXISTS, "device type '%s' is already registered by %s",
                           table->device_type, owner);
      g_free(owner);
    }
  }
  if (st) {
    stage_error(s, st);
    return st;
  }
  weft__backend_t *be = g_new0(weft__backend_t, 1);
  size_t n = table->struct_size < sizeof(be->table) ? table->struct_size : sizeof(be->table);
  memcpy(&be->table, table, n);
  be->table.struct_size = sizeof(be->table);
  be->table.device_type = g_strdup(table->device_type);
  be->plugin_path = g_strdup(s->path);
  g_ptr_array_add(s->backends, be);
  return NULL;
}

/* An op this plugin staged, or one already in the registry (weft__op_lookup_fn). */
static const weft__op_def_t *staged_op_lookup(const char *name, void *arg) {
  staging_t *s = arg;
  for (guint k = 0; k < s->ops->len; k++)
    if (strcmp(((weft__op_def_t *)s->ops->pdata[k])->name, name) == 0) return s->ops->pdata[k];
  return weft__op_registry_lookup(name);
}

static bool staged_op_exists(staging_t *s, const char *name) {
  return staged_op_lookup(name, s) != NULL;
}

static weft_status_t *stage_op(void *ctx, const weft_op_def_t *spec) {
  staging_t *s = ctx;
  weft_status_t *st = NULL;
  if (!spec || spec->struct_size < offsetof(weft_op_def_t, shape_fn) || !spec->name) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "op definition table too small or unnamed");
  } else if (staged_op_exists(s, spec->name)) {
    st = weft_status_new(WEFT_ALREADY_EXISTS, "op '%s' is already registered", spec->name);
  } else {
    /* A plugin built against an older minor has a smaller table: the fields it lacks stay 0. */
    weft_op_def_t copy = {0};
    size_t n = spec->struct_size < sizeof(copy) ? spec->struct_size : sizeof(copy);
    memcpy(&copy, spec, n);
    copy.struct_size = sizeof(copy);
    weft__op_def_t *def = NULL;
    st = weft__op_def_parse(&copy, s->path, &def);
    weft__grad_program_t *grad = NULL;
    if (!st && copy.gradient) {
      /* The op itself counts as known while its gradient is checked (a gradient may use it). */
      g_ptr_array_add(s->ops, def);
      st = weft__grad_program_parse(def, copy.gradient, staged_op_lookup, s, &grad);
      g_ptr_array_remove_index(s->ops, s->ops->len - 1);
    }
    if (!st) {
      g_ptr_array_add(s->ops, def);
      if (grad) g_ptr_array_add(s->gradients, grad);
    } else {
      weft__op_def_free(def);
    }
  }
  if (st) stage_error(s, st);
  return st;
}

static weft_status_t *stage_case(void *ctx, const weft_conformance_case_t *c) {
  staging_t *s = ctx;
  weft__plugin_case_t *pc = NULL;
  weft_status_t *st = weft__plugin_case_copy(c, staged_op_lookup, s, s->path, &pc);
  for (guint k = 0; !st && k < s->cases->len; k++) {
    const weft__plugin_case_t *other = s->cases->pdata[k];
    if (strcmp(other->op, pc->op) == 0 && strcmp(other->name, pc->name) == 0) {
      st = weft_status_new(WEFT_ALREADY_EXISTS, "conformance case '%s' of op %s is registered "
                           "twice", pc->name, pc->op);
    }
  }
  if (st) {
    weft__plugin_case_free(pc);
    stage_error(s, st);
    return st;
  }
  g_ptr_array_add(s->cases, pc);
  return NULL;
}

static weft_status_t *stage_kernel(void *ctx, const weft_kernel_def_t *def) {
  staging_t *s = ctx;
  weft_status_t *st = NULL;
  if (!def || def->struct_size < offsetof(weft_kernel_def_t, user_data) || !def->op ||
      !def->device_type || !def->compute) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "kernel definition too small or missing op, device type or compute");
  } else if (!staged_op_exists(s, def->op)) {
    st = weft_status_new(WEFT_NOT_FOUND,
                         "kernel registered for unknown op '%s' on device type %s", def->op,
                         def->device_type);
  } else {
    /* The op may be one this plugin staged a moment ago, not yet in the registry: its
     * constraints are checked against that definition too (docs/plugin-abi.md). */
    const weft__op_def_t *opdef = staged_op_lookup(def->op, s);
    for (size_t c = 0; opdef && c < def->n_constraints && !st; c++) {
      if (!weft__op_def_find_attr(opdef, def->constraints[c].attr)) {
        st = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "kernel for %s on %s constrains attr '%s', which the op does not "
                             "have", def->op, def->device_type, def->constraints[c].attr);
      }
    }
  }
  if (st) {
    stage_error(s, st);
    return st;
  }
  g_ptr_array_add(s->kernels, weft__kernel_copy_def(def, s->path));
  return NULL;
}

static void staging_discard(staging_t *s) {
  for (guint k = 0; k < s->ops->len; k++) weft__op_def_free(s->ops->pdata[k]);
  for (guint k = 0; k < s->gradients->len; k++) weft__grad_program_free(s->gradients->pdata[k]);
  for (guint k = 0; k < s->cases->len; k++) weft__plugin_case_free(s->cases->pdata[k]);
  g_ptr_array_set_size(s->gradients, 0);
  g_ptr_array_set_size(s->cases, 0);
  for (guint k = 0; k < s->kernels->len; k++) weft__kernel_free(s->kernels->pdata[k]);
  for (guint k = 0; k < s->backends->len; k++) {
    weft__backend_t *be = s->backends->pdata[k];
    g_free((char *)be->table.device_type);
    g_free(be->plugin_path);
    g_free(be);
  }
  g_ptr_array_set_size(s->ops, 0);
  g_ptr_array_set_size(s->kernels, 0);
  g_ptr_array_set_size(s->backends, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Loading one file */

static record_t *find_record_by_real_path(const char *real_path) {
  for (guint k = 0; k < records->len; k++) {
    record_t *r = records->pdata[k];
    if (g_strcmp0(r->real_path, real_path) == 0) return r;
  }
  return NULL;
}

static record_t *find_loaded_by_name(const char *name) {
  for (guint k = 0; k < records->len; k++) {
    record_t *r = records->pdata[k];
    if (!r->pub.error && g_strcmp0(r->pub.name, name) == 0) return r;
  }
  return NULL;
}

/* Caller holds loader_lock. Returns the record's status copy (caller frees). */
static weft_status_t *load_file_locked(const char *path) {
  char real[PATH_MAX];
  if (!realpath(path, real)) {
    return weft_status_new(WEFT_NOT_FOUND, "%s: plugin file not found", path);
  }
  record_t *seen = find_record_by_real_path(real);
  if (seen) {
    /* The same file through a second path: loaded once, and that is not an error. */
    return seen->pub.error ? weft_status_new(WEFT_FAILED_PRECONDITION, "%s", seen->pub.error) : NULL;
  }
  record_t *r = add_record(path, real);
  void *handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: dlopen failed: %s", path,
                                        dlerror());
    weft_status_t *ret = weft_status_new(weft_status_code(st), "%s", weft_status_message(st));
    record_fail(r, st);
    return ret;
  }
  dlerror();
  weft_plugin_entry_fn entry = (weft_plugin_entry_fn)dlsym(handle, WEFT_PLUGIN_ENTRY_SYMBOL);
  weft_status_t *st = NULL;
  const weft_plugin_info_t *info = NULL;
  if (!entry) {
    st = weft_status_new(WEFT_NOT_FOUND, "%s: missing entry symbol '%s' (not a Weft plugin?)",
                         path, WEFT_PLUGIN_ENTRY_SYMBOL);
  } else {
    info = entry();
    if (!info) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: '%s' returned no plugin table", path,
                           WEFT_PLUGIN_ENTRY_SYMBOL);
    } else if (info->struct_size < offsetof(weft_plugin_info_t, shutdown)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: plugin table from '%s' is too small (struct_size %zu, need at least "
                           "%zu)", path, WEFT_PLUGIN_ENTRY_SYMBOL, info->struct_size,
                           offsetof(weft_plugin_info_t, shutdown));
    } else if (info->abi_major != WEFT_ABI_MAJOR) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION,
                           "%s: plugin '%s' was built for ABI %u.%u; this Weft provides ABI %u.%u "
                           "(major versions must match)", path, info->name ? info->name : "?",
                           info->abi_major, info->abi_minor, WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
    } else if (info->abi_minor > WEFT_ABI_MINOR) {
      st = weft_status_new(WEFT_FAILED_PRECONDITION,
                           "%s: plugin '%s' needs ABI %u.%u; this Weft provides only ABI %u.%u",
                           path, info->name ? info->name : "?", info->abi_major, info->abi_minor,
                           WEFT_ABI_MAJOR, WEFT_ABI_MINOR);
    } else if (!info->name || !*info->name || !info->init) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: plugin table has no name or no init()",
                           path);
    } else if (find_loaded_by_name(info->name)) {
      st = weft_status_new(WEFT_ALREADY_EXISTS, "%s: a plugin named '%s' is already loaded from %s",
                           path, info->name, find_loaded_by_name(info->name)->pub.path);
    }
  }
  if (info && !st) {
    r->pub.name = g_strdup(info->name);
    r->pub.version = g_strdup(info->version ? info->version : "");
  }
  if (info) {
    r->pub.abi_major = info->struct_size >= offsetof(weft_plugin_info_t, abi_minor) ? info->abi_major : 0;
    r->pub.abi_minor = info->struct_size >= offsetof(weft_plugin_info_t, name) ? info->abi_minor : 0;
  }
  if (st) {
    dlclose(handle);
    weft_status_t *ret = weft_status_new(weft_status_code(st), "%s", weft_status_message(st));
    record_fail(r, st);
    return ret;
  }

  staging_t s = {
      .path = path,
      .ops = g_ptr_array_new(),
      .kernels = g_ptr_array_new(),
      .backends = g_ptr_array_new(),
      .gradients = g_ptr_array_new(),
      .cases = g_ptr_array_new(),
      .error = NULL,
  };
  weft_registrar_t registrar = {
      .struct_size = sizeof(registrar),
      .ctx = &s,
      .register_backend = stage_backend,
      .register_op = stage_op,
      .register_kernel = stage_kernel,
      .register_conformance_case = stage_case,
  };
  void *plugin_state = NULL;
  weft_status_t *init_st = info->init(weft__host(), &registrar, &plugin_state);
  if (init_st || s.error) {
    weft_status_t *cause = init_st ? init_st : s.error;
    st = weft_status_new(weft_status_code(cause), "%s: plugin '%s' %s: %s", path, info->name,
                         init_st ? "init failed" : "registered something invalid",
                         weft_status_message(cause));
    weft_status_free(init_st);
    weft_status_free(s.error);
    staging_discard(&s);
    /* Not dlclosed: init ran, and may have left threads or callbacks behind. */
  } else {
    for (guint k = 0; k < s.ops->len; k++) {
      weft_status_t *add = weft__op_registry_add(s.ops->pdata[k]);
      if (add) weft_status_free(add); /* checked while staging; a race would only lose the dup */
    }
    for (guint k = 0; k < s.gradients->len; k++) weft__gradients_add(s.gradients->pdata[k]);
    for (guint k = 0; k < s.cases->len; k++) weft__plugin_cases_add(s.cases->pdata[k]);
    for (guint k = 0; k < s.kernels->len; k++) weft__registry_add_kernel(s.kernels->pdata[k]);
    for (guint k = 0; k < s.backends->len; k++) weft__registry_add_backend(s.backends->pdata[k]);
    r->pub.n_ops = (int)s.ops->len;
    r->pub.n_kernels = (int)s.kernels->len;
    g_free((char *)r->pub.device_types);
    r->pub.device_types = weft__registry_device_types_from(path);
    int n_cases = (int)s.cases->len;
    g_ptr_array_set_size(s.ops, 0);
    g_ptr_array_set_size(s.kernels, 0);
    g_ptr_array_set_size(s.backends, 0);
    g_ptr_array_set_size(s.gradients, 0);
    g_ptr_array_set_size(s.cases, 0);
    weft__log(WEFT_LOG_INFO, "plugin", "loaded %s (%s %s, ABI %u.%u): %d kernels, %d ops, %d "
              "conformance cases", path, info->name, r->pub.version, info->abi_major,
              info->abi_minor, r->pub.n_kernels, r->pub.n_ops, n_cases);
  }
  g_ptr_array_free(s.ops, TRUE);
  g_ptr_array_free(s.kernels, TRUE);
  g_ptr_array_free(s.backends, TRUE);
  g_ptr_array_free(s.gradients, TRUE);
  g_ptr_array_free(s.cases, TRUE);
  if (st) {
    weft_status_t *ret = weft_status_new(weft_status_code(st), "%s", weft_status_message(st));
    record_fail(r, st);
    return ret;
  }
  return NULL;
}

static bool is_plugin_file_name(const char *name) {
  return g_str_has_prefix(name, "libweft-") && g_str_has_suffix(name, ".so");
}

static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Loads every plugin file in dir (sorted, for a stable order), and one level of subfolders when
 * asked (the build tree keeps each plugin in its own folder). */
static void load_dir_locked(const char *dir, bool subfolders) {
  DIR *d = opendir(dir);
  if (!d) return;
  GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
  GPtrArray *subdirs = g_ptr_array_new_with_free_func(g_free);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char *full = g_build_filename(dir, e->d_name, NULL);
    struct stat sb;
    if (stat(full, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      if (subfolders) g_ptr_array_add(subdirs, full);
      else g_free(full);
    } else if (is_plugin_file_name(e->d_name)) {
      g_ptr_array_add(files, full);
    } else {
      g_free(full);
    }
  }
  closedir(d);
  g_ptr_array_sort(files, compare_strings);
  g_ptr_array_sort(subdirs, compare_strings);
  for (guint k = 0; k < files->len; k++) weft_status_free(load_file_locked(files->pdata[k]));
  for (guint k = 0; k < subdirs->len; k++) load_dir_locked(subdirs->pdata[k], false);
  g_ptr_array_free(files, TRUE);
  g_ptr_array_free(subdirs, TRUE);
}

/* Kernels the core itself provides (exec's control-flow, Assert and TensorArray kernels),
 * registered into the default at its load, before any plugin: set from an exec constructor, as
 * this layer cannot name exec. */
static void (*core_kernels_fn)(void);

void weft__registry_set_core_kernels(void (*register_fn)(void)) { core_kernels_fn = register_fn; }

/* The default registry's one-time load: the only place plugins are looked for. */
static gpointer load_default_once(gpointer unused) {
  (void)unused;
  weft_registry_t *reg = weft__registry_process();
  if (core_kernels_fn != NULL) core_kernels_fn();
  g_mutex_lock(&loader_lock);
  if (!records) records = g_ptr_array_new();
  const char *env = g_getenv("WEFT_PLUGIN_PATH");
  if (env && *env) {
    char **parts = g_strsplit(env, ":", -1);
    for (char **p = parts; *p; p++) {
      if (!**p) continue;
      if (g_file_test(*p, G_FILE_TEST_IS_DIR)) {
        load_dir_locked(*p, false);
      } else if (g_file_test(*p, G_FILE_TEST_EXISTS)) {
        weft_status_free(load_file_locked(*p));
      } else {
        record_t *r = add_record(*p, NULL);
        record_fail(r, weft_status_new(WEFT_NOT_FOUND,
                                       "%s (from WEFT_PLUGIN_PATH): no such file or folder", *p));
      }
    }
    g_strfreev(parts);
  }
  /* The build tree's plugins for a core that runs from the build tree, the install's for an
   * installed one; never both: with a build tree beside an install of it, every plugin would be
   * found twice and its second copy refused with a "skipping plugin ... already loaded" warning
   * on every run (what happened when both folders were searched). */
  if (weft__running_from_build_tree()) {
    load_dir_locked(WEFT_BUILD_PLUGIN_DIR, true);
  } else {
    char *dir = weft__install_dir(WEFT__DIR_PLUGINS);
    if (*dir) load_dir_locked(dir, false);
    g_free(dir);
  }
  g_mutex_unlock(&loader_lock);
  return reg;
}

weft_registry_t *weft__registry_default(void) {
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, load_default_once, NULL);
}

void weft__plugins_ensure_loaded(void) { (void)weft__registry_default(); }

/* A graph naming an op the default's standard ops lack loads the default (its plugins may define
 * the op): set before main, as the graph layer cannot name this one. */
__attribute__((constructor)) static void register_op_loader(void) {
  weft__op_registry_set_process_loader(weft__plugins_ensure_loaded);
}

/* Caller holds loader_lock. What a private registry gets of a file it asked for: the record, and
 * what the plugin registered in the default (loaded there once per process). */
static void share_record_locked(weft_registry_t *reg, record_t *r) {
  for (guint k = 0; k < reg->plugins->len; k++)
    if (reg->plugins->pdata[k] == &r->pub) return;
  g_ptr_array_add(reg->plugins, &r->pub);
  if (!r->pub.error) weft__registry_share_plugin(reg, r->pub.path);
}

/* ---------------------------------------------------------------------------------------------
 * The public registry functions (weft.h) */

weft_registry_t *weft_registry_new(void) { return weft__registry_new_private(); }

void weft_registry_free(weft_registry_t *reg) { weft__registry_free(reg); }

weft_registry_t *weft_registry_default(void) { return weft__registry_default(); }

void weft_registry_load_default(weft_registry_t *reg) {
  weft__plugins_ensure_loaded();
  if (reg == NULL || reg->is_default) return;
  g_mutex_lock(&loader_lock);
  for (guint k = 0; k < records->len; k++) share_record_locked(reg, records->pdata[k]);
  g_mutex_unlock(&loader_lock);
}

weft_status_t *weft_registry_load_plugin(weft_registry_t *reg, const char *path) {
  if (reg == NULL || path == NULL)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_registry_load_plugin needs a registry and a path");
  /* The default loads its folders first, as weft_plugins_load_file always did; a private
   * registry loads the one file only. */
  if (reg->is_default) weft__plugins_ensure_loaded();
  weft__registry_process();
  g_mutex_lock(&loader_lock);
  if (!records) records = g_ptr_array_new();
  weft_status_t *st = load_file_locked(path);
  if (!reg->is_default) {
    char real[PATH_MAX];
    record_t *r = realpath(path, real) ? find_record_by_real_path(real) : NULL;
    if (r) share_record_locked(reg, r);
  }
  g_mutex_unlock(&loader_lock);
  return st;
}

/* The default's plugins are every record; a private registry's, those it asked for. */
static GPtrArray *plugin_list_locked(weft_registry_t *reg) {
  return reg->is_default ? records : reg->plugins;
}

static const weft_plugin_record_t *plugin_at_locked(weft_registry_t *reg, int index) {
  GPtrArray *list = plugin_list_locked(reg);
  if (!list || index < 0 || index >= (int)list->len) return NULL;
  return reg->is_default ? &((record_t *)list->pdata[index])->pub : list->pdata[index];
}

int weft_registry_plugin_count(weft_registry_t *reg) {
  if (reg == NULL) return 0;
  g_mutex_lock(&loader_lock);
  GPtrArray *list = plugin_list_locked(reg);
  int n = list ? (int)list->len : 0;
  g_mutex_unlock(&loader_lock);
  return n;
}

const weft_plugin_record_t *weft_registry_plugin_get(weft_registry_t *reg, int index) {
  if (reg == NULL) return NULL;
  g_mutex_lock(&loader_lock);
  const weft_plugin_record_t *r = plugin_at_locked(reg, index);
  g_mutex_unlock(&loader_lock);
  return r;
}

int weft_registry_device_count(weft_registry_t *reg) {
  return reg ? weft__registry_device_count(reg) : 0;
}

const weft_device_info_t *weft_registry_device_get(weft_registry_t *reg, int index) {
  return reg ? weft__registry_device_get(reg, index) : NULL;
}

int weft_registry_op_count(weft_registry_t *reg) {
  return reg ? weft__op_registry_size(reg->ops) : 0;
}

weft_graph_t *weft_graph_new_in(weft_registry_t *reg) {
  return reg ? weft__graph_new_in(reg->ops) : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The process-wide functions: the default registry's, loading it first */

void weft_plugins_load_default(void) { weft__plugins_ensure_loaded(); }

weft_status_t *weft_plugins_load_file(const char *path) {
  return weft_registry_load_plugin(weft__registry_process(), path);
}

int weft_plugins_count(void) {
  weft__plugins_ensure_loaded();
  g_mutex_lock(&loader_lock);
  int n = (int)records->len;
  g_mutex_unlock(&loader_lock);
  return n;
}

const weft_plugin_record_t *weft_plugins_get(int index) {
  weft__plugins_ensure_loaded();
  g_mutex_lock(&loader_lock);
  const weft_plugin_record_t *r =
      (index >= 0 && index < (int)records->len) ? &((record_t *)records->pdata[index])->pub : NULL;
  g_mutex_unlock(&loader_lock);
  return r;
}

int weft_devices_count(void) { return weft__registry_device_count(weft__registry_default()); }

const weft_device_info_t *weft_devices_get(int index) {
  return weft__registry_device_get(weft__registry_default(), index);
}

int weft_backends_without_devices(const char ***reasons) {
  return weft__registry_without_devices(weft__registry_default(), reasons);
}
