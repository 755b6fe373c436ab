/* Registry objects (weft_registry_t): the ops, backends and their devices (in placement order),
 * and kernels per (op, device type, dtype constraints) with priorities; the process default,
 * which plugins fill, and private registries (docs/architecture.md, "The registry"). Also answers
 * the placer's and executor's questions about the default: which kernel runs this node here,
 * which args live in host memory, and what kernels exist when none fits. */
#include "plugin_internal.h"

#include <string.h>

static void registry_init(weft_registry_t *reg, weft__op_registry_t *ops, bool owns_ops) {
  g_mutex_init(&reg->lock);
  reg->ops = ops;
  reg->owns_ops = owns_ops;
  reg->backends = g_ptr_array_new();
  reg->devices = g_ptr_array_new();
  reg->kernels_by_op =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_ptr_array_unref);
  reg->device_infos = g_ptr_array_new();
  reg->retired_infos = g_ptr_array_new_with_free_func(g_free);
  reg->plugins = g_ptr_array_new();
  reg->without_devices = g_ptr_array_new();
}

static gpointer create_process_registry(gpointer unused) {
  (void)unused;
  weft_registry_t *reg = g_new0(weft_registry_t, 1);
  registry_init(reg, weft__op_registry_process(), false);
  reg->is_default = true;
  return reg;
}

weft_registry_t *weft__registry_process(void) {
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, create_process_registry, NULL);
}

weft_registry_t *weft__registry_new_private(void) {
  weft_registry_t *reg = g_new0(weft_registry_t, 1);
  registry_init(reg, weft__op_registry_new(), true);
  return reg;
}

void weft__registry_free(weft_registry_t *reg) {
  /* The default lives as long as the process: its kernels and devices are borrowed by others. */
  if (reg == NULL || reg->is_default) return;
  /* Everything in a private registry's tables is the default's (borrowed), except its ops. */
  if (reg->owns_ops) weft__op_registry_free(reg->ops);
  g_ptr_array_free(reg->backends, TRUE);
  g_ptr_array_free(reg->devices, TRUE);
  g_hash_table_destroy(reg->kernels_by_op);
  for (guint k = 0; k < reg->device_infos->len; k++) g_free(reg->device_infos->pdata[k]);
  g_ptr_array_free(reg->device_infos, TRUE);
  g_ptr_array_free(reg->retired_infos, TRUE);
  g_ptr_array_free(reg->plugins, TRUE);
  g_ptr_array_free(reg->without_devices, TRUE);
  g_mutex_clear(&reg->lock);
  g_free(reg);
}

/* ---------------------------------------------------------------------------------------------
 * Kernels */

weft__kernel_t *weft__kernel_copy_def(const weft_kernel_def_t *def, const char *plugin_path) {
  weft__kernel_t *k = g_new0(weft__kernel_t, 1);
  size_t n = def->struct_size < sizeof(k->def) ? def->struct_size : sizeof(k->def);
  memcpy(&k->def, def, n);
  k->def.struct_size = sizeof(k->def);
  k->def.op = g_strdup(def->op);
  k->def.device_type = g_strdup(def->device_type);
  k->constraints_copy = g_new0(weft_type_constraint_t, def->n_constraints + 1);
  for (size_t c = 0; c < def->n_constraints; c++) {
    k->constraints_copy[c].attr = g_strdup(def->constraints[c].attr);
    k->constraints_copy[c].n_dtypes = def->constraints[c].n_dtypes;
    k->constraints_copy[c].dtypes =
        g_memdup2(def->constraints[c].dtypes, sizeof(weft_dtype_t) * def->constraints[c].n_dtypes);
  }
  k->def.constraints = k->constraints_copy;
  size_t n_host = 0;
  while (def->host_memory_args && def->host_memory_args[n_host]) n_host++;
  k->host_memory_copy = g_new0(char *, n_host + 1);
  for (size_t h = 0; h < n_host; h++) k->host_memory_copy[h] = g_strdup(def->host_memory_args[h]);
  k->def.host_memory_args = (const char *const *)k->host_memory_copy;
  k->plugin_path = g_strdup(plugin_path);
  return k;
}

void weft__kernel_free(weft__kernel_t *k) {
  if (!k) return;
  for (size_t c = 0; c < k->def.n_constraints; c++) {
    g_free((char *)k->constraints_copy[c].attr);
    g_free((weft_dtype_t *)k->constraints_copy[c].dtypes);
  }
  g_free(k->constraints_copy);
  g_strfreev(k->host_memory_copy);
  g_free((char *)k->def.op);
  g_free((char *)k->def.device_type);
  g_free(k->plugin_path);
  g_free(k);
}

static void add_kernel_locked(weft_registry_t *reg, weft__kernel_t *k) {
  GPtrArray *list = g_hash_table_lookup(reg->kernels_by_op, k->def.op);
  if (!list) {
    list = g_ptr_array_new();
    g_hash_table_insert(reg->kernels_by_op, g_strdup(k->def.op), list);
  }
  g_ptr_array_add(list, k);
}

void weft__registry_add_kernel(weft__kernel_t *k) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  add_kernel_locked(reg, k);
  g_mutex_unlock(&reg->lock);
}

static bool dtype_in(weft_dtype_t t, const weft_type_constraint_t *c) {
  for (size_t k = 0; k < c->n_dtypes; k++)
    if (c->dtypes[k] == t) return true;
  return false;
}

static bool kernel_matches(const weft__kernel_t *k, const char *device_type,
                           const weft_attrs_t *attrs) {
  if (strcmp(k->def.device_type, device_type) != 0) return false;
  for (size_t c = 0; c < k->def.n_constraints; c++) {
    const weft_type_constraint_t *tc = &k->def.constraints[c];
    const weft__attr_value_t *v = weft__attrs_get(attrs, tc->attr);
    if (!v) return false;
    if (v->kind == WEFT_ATTR_TYPE) {
      if (!dtype_in(v->u.type, tc)) return false;
    } else if (v->kind == WEFT_ATTR_LIST_TYPE) {
      for (size_t j = 0; j < v->u.list.n; j++)
        if (!dtype_in(v->u.list.type[j], tc)) return false;
    } else if (v->kind != WEFT_ATTR_LIST_EMPTY) {
      return false;
    }
  }
  return true;
}

const weft__kernel_t *weft__kernel_lookup(const char *op, const char *device_type,
                                          const weft_attrs_t *attrs) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  const weft__kernel_t *best = NULL;
  GPtrArray *list = g_hash_table_lookup(reg->kernels_by_op, op);
  for (guint k = 0; list && k < list->len; k++) {
    const weft__kernel_t *cand = list->pdata[k];
    if (!kernel_matches(cand, device_type, attrs)) continue;
    if (!best || cand->def.priority > best->def.priority) best = cand;
  }
  g_mutex_unlock(&reg->lock);
  return best;
}

bool weft__kernel_exists(const char *op, const char *device_type, const weft_attrs_t *attrs) {
  return weft__kernel_lookup(op, device_type, attrs) != NULL;
}

char *weft__kernel_describe_available(const char *op) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  GString *s = g_string_new(NULL);
  GPtrArray *list = g_hash_table_lookup(reg->kernels_by_op, op);
  if (!list || !list->len) {
    g_string_append_printf(s, "no kernels are registered for op %s", op);
  } else {
    g_string_append_printf(s, "registered kernels for %s:", op);
    for (guint k = 0; k < list->len; k++) {
      const weft__kernel_t *kern = list->pdata[k];
      g_string_append_printf(s, "%s device='%s'", k ? ";" : "", kern->def.device_type);
      for (size_t c = 0; c < kern->def.n_constraints; c++) {
        const weft_type_constraint_t *tc = &kern->def.constraints[c];
        g_string_append_printf(s, " %s in [", tc->attr);
        for (size_t j = 0; j < tc->n_dtypes; j++)
          g_string_append_printf(s, "%s%s", j ? ", " : "", weft_dtype_name(tc->dtypes[j]));
        g_string_append(s, "]");
      }
    }
  }
  g_mutex_unlock(&reg->lock);
  return g_string_free(s, FALSE);
}

static const weft__kernel_catalog_t kernel_catalog = {
    .exists = weft__kernel_exists,
    .describe_available = weft__kernel_describe_available,
};

weft_status_t *weft__place(GPtrArray *nodes, const weft__place_device_t *devices, int n_devices,
                           const weft__placer_options_t *opts, GHashTable *placement) {
  return weft__place_with(nodes, devices, n_devices, opts, &kernel_catalog, placement);
}

static bool arg_name_in_host_memory(const weft__kernel_t *kernel, const char *name) {
  for (const char *const *h = kernel->def.host_memory_args; h && *h; h++)
    if (strcmp(*h, name) == 0) return true;
  return false;
}

bool weft__kernel_arg_in_host_memory(const weft__kernel_t *kernel, const weft_node_t *node,
                                     bool is_output, int index) {
  if (!kernel->def.host_memory_args || !kernel->def.host_memory_args[0]) return false;
  const GPtrArray *args = is_output ? node->def->outputs : node->def->inputs;
  const int *starts = is_output ? node->output_arg_start : node->input_arg_start;
  for (guint k = 0; k < args->len; k++) {
    if (index >= starts[k] && index < starts[k + 1]) {
      const weft__arg_def_t *a = args->pdata[k];
      return arg_name_in_host_memory(kernel, a->name);
    }
  }
  return false;
}

int weft__registry_count_kernels_from(const char *plugin_path) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  int n = 0;
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, reg->kernels_by_op);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    GPtrArray *list = v;
    for (guint k = 0; k < list->len; k++)
      if (g_strcmp0(((weft__kernel_t *)list->pdata[k])->plugin_path, plugin_path) == 0) n++;
  }
  g_mutex_unlock(&reg->lock);
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * Backends and devices */

/* 0: a real gpu-like device, 1: a cpu-like one, 2: a device that emulates a GPU on the CPU
 * (lavapipe), which is slower than the CPU backend for every op it has. */
static int device_rank(const weft__device_t *d) {
  if (d->emulated) return 2;
  return d->gpu_like ? 0 : 1;
}

static gint device_order(gconstpointer pa, gconstpointer pb) {
  const weft__device_t *a = *(weft__device_t *const *)pa;
  const weft__device_t *b = *(weft__device_t *const *)pb;
  int ra = device_rank(a), rb = device_rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (a->priority != b->priority) return a->priority > b->priority ? -1 : 1;
  int t = strcmp(a->type, b->type);
  if (t) return t;
  return a->ordinal - b->ordinal;
}

void weft__registry_add_backend(weft__backend_t *be) {
  /* Enumerate outside the lock: a backend may take its time (driver start-up). */
  const char *why = NULL;
  int n = be->table.device_count ? be->table.device_count(be->table.backend_state, &why) : 0;
  if (n < 0) n = 0;
  be->n_devices = n;
  if (n == 0) be->why_no_devices = g_strdup(why ? why : "the backend reported no devices");
  GPtrArray *fresh = g_ptr_array_new();
  for (int k = 0; k < n; k++) {
    weft__device_t *d = g_new0(weft__device_t, 1);
    d->type = g_strdup(be->table.device_type);
    d->ordinal = k;
    d->backend = be;
    d->gpu_like = be->table.device_class == WEFT_DEVICE_GPU_LIKE;
    d->priority = be->table.priority;
    d->name = g_strdup_printf("/job:localhost/replica:0/task:0/device:%s:%d", d->type, k);
    d->props.struct_size = sizeof(d->props);
    g_mutex_init(&d->open_lock);
    g_mutex_init(&d->refs_lock);
    if (be->table.device_properties) {
      weft_status_t *st = be->table.device_properties(be->table.backend_state, k, &d->props);
      if (st) {
        weft__log(WEFT_LOG_WARNING, "plugin", "%s:%d: could not read device properties: %s",
                  d->type, k, weft_status_message(st));
        weft_status_free(st);
      }
    }
    d->props.description[sizeof(d->props.description) - 1] = '\0';
    d->emulated = d->props.emulated != 0;
    weft__log(WEFT_LOG_INFO, "plugin", "Found device %s:%d with properties: %s, memory %" G_GUINT64_FORMAT
              " bytes%s%s%s%s", d->type, k, d->props.description, d->props.memory_bytes,
              d->props.compute_capability[0] ? ", compute capability " : "",
              d->props.compute_capability, d->props.bus_id[0] ? ", bus id " : "", d->props.bus_id);
    g_ptr_array_add(fresh, d);
  }
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  g_ptr_array_add(reg->backends, be);
  for (guint k = 0; k < fresh->len; k++) g_ptr_array_add(reg->devices, fresh->pdata[k]);
  g_ptr_array_sort(reg->devices, device_order);
  g_mutex_unlock(&reg->lock);
  g_ptr_array_free(fresh, TRUE);
}

int weft__registry_device_count(weft_registry_t *reg) {
  g_mutex_lock(&reg->lock);
  int n = (int)reg->devices->len;
  g_mutex_unlock(&reg->lock);
  return n;
}

int weft__device_count(void) { return weft__registry_device_count(weft__registry_default()); }

weft__device_t *weft__device_at(int index) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  weft__device_t *d =
      (index >= 0 && index < (int)reg->devices->len) ? reg->devices->pdata[index] : NULL;
  g_mutex_unlock(&reg->lock);
  return d;
}

weft__device_t *weft__device_find(const char *full_name) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  weft__device_t *found = NULL;
  for (guint k = 0; k < reg->devices->len && !found; k++) {
    weft__device_t *d = reg->devices->pdata[k];
    if (strcmp(d->name, full_name) == 0) found = d;
  }
  g_mutex_unlock(&reg->lock);
  return found;
}

const char *weft__gpu_device_type(void) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  GPtrArray *devices = reg->devices;
  const char *t = NULL;
  /* "/gpu:N" never means an emulated device: the first device is a real GPU or there is none. */
  if (devices->len && ((weft__device_t *)devices->pdata[0])->gpu_like &&
      !((weft__device_t *)devices->pdata[0])->emulated)
    t = ((weft__device_t *)devices->pdata[0])->type;
  g_mutex_unlock(&reg->lock);
  return t;
}

weft_status_t *weft__device_open(weft__device_t *d, const weft_device_options_t *opts) {
  g_mutex_lock(&d->open_lock);
  weft_status_t *st = NULL;
  if (!d->handle) {
    weft_device_options_t defaults = {sizeof(defaults), 0.0, 0};
    if (!opts) opts = &defaults;
    void *handle = NULL;
    if (d->backend->table.device_open) {
      st = d->backend->table.device_open(d->backend->table.backend_state, d->ordinal, opts, &handle);
    }
    if (st) {
      st = weft_status_prefix(st, "Could not open device %s", d->name);
    } else {
      /* A backend may keep no per-device state; the core still needs a non-NULL "opened" mark. */
      d->handle = handle ? handle : (void *)d;
    }
  }
  g_mutex_unlock(&d->open_lock);
  return st;
}

const weft_device_info_t *weft__registry_device_get(weft_registry_t *reg, int index) {
  g_mutex_lock(&reg->lock);
  if (reg->device_infos->len != reg->devices->len) {
    /* Infos handed out stay valid for the registry's life, as the API promises: the old set is
     * retired, not freed, when the devices change. */
    for (guint k = 0; k < reg->device_infos->len; k++)
      g_ptr_array_add(reg->retired_infos, reg->device_infos->pdata[k]);
    g_ptr_array_set_size(reg->device_infos, 0);
    for (guint k = 0; k < reg->devices->len; k++) {
      const weft__device_t *d = reg->devices->pdata[k];
      weft_device_info_t *info = g_new0(weft_device_info_t, 1);
      info->name = d->name;
      info->device_type = d->type;
      info->ordinal = d->ordinal;
      info->description = d->props.description;
      info->memory_bytes = d->props.memory_bytes;
      info->gpu_like = d->gpu_like;
      info->emulated = d->emulated;
      g_ptr_array_add(reg->device_infos, info);
    }
  }
  const weft_device_info_t *r = (index >= 0 && index < (int)reg->device_infos->len)
                                    ? reg->device_infos->pdata[index]
                                    : NULL;
  g_mutex_unlock(&reg->lock);
  return r;
}

int weft__registry_without_devices(weft_registry_t *reg, const char ***reasons) {
  g_mutex_lock(&reg->lock);
  g_ptr_array_set_size(reg->without_devices, 0);
  for (guint k = 0; k < reg->backends->len; k++) {
    weft__backend_t *be = reg->backends->pdata[k];
    if (be->n_devices == 0) {
      /* Built once per backend and kept: the caller borrows it for the process lifetime. */
      if (!be->why_no_devices_line)
        be->why_no_devices_line =
            g_strdup_printf("%s: %s", be->table.device_type, be->why_no_devices);
      g_ptr_array_add(reg->without_devices, be->why_no_devices_line);
    }
  }
  int n = (int)reg->without_devices->len;
  if (reasons) *reasons = (const char **)reg->without_devices->pdata;
  g_mutex_unlock(&reg->lock);
  return n;
}

void weft__registry_share_plugin(weft_registry_t *reg, const char *plugin_path) {
  weft_registry_t *def = weft__registry_process();
  weft__op_registry_share_origin(reg->ops, def->ops, plugin_path);
  g_mutex_lock(&def->lock);
  GPtrArray *kernels = g_ptr_array_new();
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, def->kernels_by_op);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    GPtrArray *list = v;
    for (guint k = 0; k < list->len; k++)
      if (g_strcmp0(((weft__kernel_t *)list->pdata[k])->plugin_path, plugin_path) == 0)
        g_ptr_array_add(kernels, list->pdata[k]);
  }
  GPtrArray *backends = g_ptr_array_new(), *devices = g_ptr_array_new();
  for (guint k = 0; k < def->backends->len; k++) {
    weft__backend_t *be = def->backends->pdata[k];
    if (g_strcmp0(be->plugin_path, plugin_path) == 0) g_ptr_array_add(backends, be);
  }
  for (guint k = 0; k < def->devices->len; k++) {
    weft__device_t *d = def->devices->pdata[k];
    if (g_strcmp0(d->backend->plugin_path, plugin_path) == 0) g_ptr_array_add(devices, d);
  }
  g_mutex_unlock(&def->lock);
  g_mutex_lock(&reg->lock);
  for (guint k = 0; k < kernels->len; k++) add_kernel_locked(reg, kernels->pdata[k]);
  for (guint k = 0; k < backends->len; k++) g_ptr_array_add(reg->backends, backends->pdata[k]);
  for (guint k = 0; k < devices->len; k++) g_ptr_array_add(reg->devices, devices->pdata[k]);
  g_ptr_array_sort(reg->devices, device_order);
  g_mutex_unlock(&reg->lock);
  g_ptr_array_free(kernels, TRUE);
  g_ptr_array_free(backends, TRUE);
  g_ptr_array_free(devices, TRUE);
}

char *weft__registry_device_types_from(const char *plugin_path) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < reg->backends->len; k++) {
    weft__backend_t *be = reg->backends->pdata[k];
    if (g_strcmp0(be->plugin_path, plugin_path) == 0)
      g_string_append_printf(s, "%s%s", s->len ? "," : "", be->table.device_type);
  }
  g_mutex_unlock(&reg->lock);
  return g_string_free(s, FALSE);
}

char *weft__registry_backend_owner(const char *device_type) {
  weft_registry_t *reg = weft__registry_process();
  g_mutex_lock(&reg->lock);
  char *owner = NULL;
  for (guint k = 0; k < reg->backends->len && !owner; k++) {
    weft__backend_t *be = reg->backends->pdata[k];
    if (strcmp(be->table.device_type, device_type) == 0) owner = g_strdup(be->plugin_path);
  }
  g_mutex_unlock(&reg->lock);
  return owner;
}
