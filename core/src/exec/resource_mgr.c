/* The resource manager: variables that outlive a step, keyed by device, container and shared name
 * (TensorFlow's ResourceMgr). A local session owns one; a server task owns one for all sessions. */
#include "exec_internal.h"

#include <string.h>

struct weft__resource_mgr {
  GMutex lock;
  GHashTable *vars; /* "device|container|name" -> weft__variable_t* */
};

weft__variable_t *weft__variable_ref(weft__variable_t *var) {
  g_atomic_int_inc(&var->refcount);
  return var;
}

void weft__variable_unref(weft__variable_t *var) {
  if (!var || !g_atomic_int_dec_and_test(&var->refcount)) return;
  weft_tensor_unref(var->value);
  g_rec_mutex_clear(&var->lock);
  g_free(var->name);
  g_free(var);
}

weft__resource_mgr_t *weft__resource_mgr_new(void) {
  weft__resource_mgr_t *rm = g_new0(weft__resource_mgr_t, 1);
  g_mutex_init(&rm->lock);
  rm->vars = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify)weft__variable_unref);
  return rm;
}

void weft__resource_mgr_free(weft__resource_mgr_t *rm) {
  if (!rm) return;
  g_hash_table_destroy(rm->vars);
  g_mutex_clear(&rm->lock);
  g_free(rm);
}

weft__variable_t *weft__resource_mgr_variable(weft__resource_mgr_t *rm, weft__device_t *device,
                                              const char *container, const char *name) {
  char *key = g_strdup_printf("%s|%s|%s", device ? device->name : "", container, name);
  g_mutex_lock(&rm->lock);
  weft__variable_t *var = g_hash_table_lookup(rm->vars, key);
  if (!var) {
    var = g_new0(weft__variable_t, 1);
    var->refcount = 1;
    g_rec_mutex_init(&var->lock);
    var->name = *container ? g_strdup_printf("%s/%s", container, name) : g_strdup(name);
    var->device = device;
    g_hash_table_insert(rm->vars, key, var);
    key = NULL;
  }
  weft__variable_ref(var);
  g_mutex_unlock(&rm->lock);
  g_free(key);
  return var;
}

void weft__resource_mgr_clear(weft__resource_mgr_t *rm, const char *const *containers, int n) {
  g_mutex_lock(&rm->lock);
  if (!containers || n <= 0) {
    g_hash_table_remove_all(rm->vars);
  } else {
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, rm->vars);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
      /* key is "device|container|name" */
      const char *first = strchr(k, '|');
      const char *second = first ? strchr(first + 1, '|') : NULL;
      if (!second) continue;
      for (int c = 0; c < n; c++) {
        size_t len = strlen(containers[c]);
        if ((size_t)(second - first - 1) == len && strncmp(first + 1, containers[c], len) == 0) {
          g_hash_table_iter_remove(&it);
          break;
        }
      }
    }
  }
  g_mutex_unlock(&rm->lock);
}

void weft__resource_mgr_foreach(weft__resource_mgr_t *rm, weft__resource_mgr_fn fn, void *user) {
  g_mutex_lock(&rm->lock);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, rm->vars);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    /* key is "device|container|name"; device names and containers hold no '|' */
    char **parts = g_strsplit(k, "|", 3);
    if (parts[0] && parts[1] && parts[2]) fn(user, parts[0], parts[1], parts[2], v);
    g_strfreev(parts);
  }
  g_mutex_unlock(&rm->lock);
}

/* The variable if it exists (a new reference), NULL otherwise: resource variables tell a variable
 * nobody created from one that is only uninitialised (TensorFlow's LookupResource). */
weft__variable_t *weft__resource_mgr_lookup(weft__resource_mgr_t *rm, weft__device_t *device,
                                            const char *container, const char *name) {
  char *key = g_strdup_printf("%s|%s|%s", device ? device->name : "", container, name);
  g_mutex_lock(&rm->lock);
  weft__variable_t *var = g_hash_table_lookup(rm->vars, key);
  if (var) weft__variable_ref(var);
  g_mutex_unlock(&rm->lock);
  g_free(key);
  return var;
}

bool weft__resource_mgr_remove(weft__resource_mgr_t *rm, weft__device_t *device,
                               const char *container, const char *name) {
  char *key = g_strdup_printf("%s|%s|%s", device ? device->name : "", container, name);
  g_mutex_lock(&rm->lock);
  bool removed = g_hash_table_remove(rm->vars, key);
  g_mutex_unlock(&rm->lock);
  g_free(key);
  return removed;
}
