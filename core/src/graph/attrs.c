/* Node attribute values (TensorFlow's AttrValue) and attribute maps: construction, deep copy and
 * release. Everything else (parsing from GraphDef, reading through the host table) builds on these. */
#include "graph_internal.h"

#include <string.h>

weft__attr_value_t *weft__attr_value_new(weft__attr_kind_t kind) {
  weft__attr_value_t *v = g_new0(weft__attr_value_t, 1);
  v->kind = kind;
  return v;
}

static void free_shape_list_and_tensors(weft__attr_value_t *v) {
  if (v->u.list.s) {
    for (size_t k = 0; k < v->u.list.n; k++) g_free(v->u.list.s[k].data);
  }
  if (v->u.list.tensor) {
    for (size_t k = 0; k < v->u.list.n; k++) weft_tensor_unref(v->u.list.tensor[k]);
  }
  g_free(v->u.list.i);
  g_free(v->u.list.f);
  g_free(v->u.list.b);
  g_free(v->u.list.type);
  g_free(v->u.list.s);
  g_free(v->u.list.shape);
  g_free(v->u.list.tensor);
}

static bool kind_is_list(weft__attr_kind_t kind) {
  return kind >= WEFT_ATTR_LIST_INT;
}

void weft__attr_value_free(weft__attr_value_t *v) {
  if (!v) return;
  if (v->kind == WEFT_ATTR_STRING || v->kind == WEFT_ATTR_FUNC) g_free(v->u.s.data);
  if (v->kind == WEFT_ATTR_TENSOR) weft_tensor_unref(v->u.tensor);
  if (kind_is_list(v->kind)) free_shape_list_and_tensors(v);
  g_free(v);
}

static weft_string_t copy_bytes(const char *data, size_t len) {
  weft_string_t s;
  s.data = g_malloc(len + 1);
  if (len) memcpy(s.data, data, len);
  s.data[len] = '\0';
  s.len = len;
  return s;
}

weft__attr_value_t *weft__attr_value_copy(const weft__attr_value_t *src) {
  weft__attr_value_t *v = g_new0(weft__attr_value_t, 1);
  *v = *src;
  size_t n = src->u.list.n;
  switch (src->kind) {
    case WEFT_ATTR_STRING:
    case WEFT_ATTR_FUNC:
      v->u.s = copy_bytes(src->u.s.data, src->u.s.len);
      break;
    case WEFT_ATTR_TENSOR:
      v->u.tensor = weft_tensor_ref(src->u.tensor);
      break;
    case WEFT_ATTR_LIST_INT:
      v->u.list.i = g_memdup2(src->u.list.i, n * sizeof(int64_t));
      break;
    case WEFT_ATTR_LIST_FLOAT:
      v->u.list.f = g_memdup2(src->u.list.f, n * sizeof(float));
      break;
    case WEFT_ATTR_LIST_BOOL:
      v->u.list.b = g_memdup2(src->u.list.b, n * sizeof(int));
      break;
    case WEFT_ATTR_LIST_TYPE:
      v->u.list.type = g_memdup2(src->u.list.type, n * sizeof(weft_dtype_t));
      break;
    case WEFT_ATTR_LIST_SHAPE:
      v->u.list.shape = g_memdup2(src->u.list.shape, n * sizeof(weft__shape_t));
      break;
    case WEFT_ATTR_LIST_STRING:
      v->u.list.s = g_new0(weft_string_t, n ? n : 1);
      for (size_t k = 0; k < n; k++)
        v->u.list.s[k] = copy_bytes(src->u.list.s[k].data, src->u.list.s[k].len);
      break;
    case WEFT_ATTR_LIST_TENSOR:
      v->u.list.tensor = g_new0(weft_tensor_t *, n ? n : 1);
      for (size_t k = 0; k < n; k++) v->u.list.tensor[k] = weft_tensor_ref(src->u.list.tensor[k]);
      break;
    default:
      break;
  }
  return v;
}

weft_attrs_t *weft__attrs_new(void) {
  weft_attrs_t *a = g_new0(weft_attrs_t, 1);
  a->map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                 (GDestroyNotify)weft__attr_value_free);
  return a;
}

void weft__attrs_free(weft_attrs_t *attrs) {
  if (!attrs) return;
  g_hash_table_destroy(attrs->map);
  g_free(attrs);
}

weft_attrs_t *weft__attrs_copy(const weft_attrs_t *attrs) {
  weft_attrs_t *a = weft__attrs_new();
  if (!attrs) return a;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, attrs->map);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(a->map, g_strdup(k), weft__attr_value_copy(v));
  return a;
}

void weft__attrs_set(weft_attrs_t *attrs, const char *name, weft__attr_value_t *value) {
  g_hash_table_insert(attrs->map, g_strdup(name), value);
}

const weft__attr_value_t *weft__attrs_get(const weft_attrs_t *attrs, const char *name) {
  if (!attrs) return NULL;
  return g_hash_table_lookup(attrs->map, name);
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *weft__attrs_sorted_names(const weft_attrs_t *attrs) {
  GPtrArray *names = g_ptr_array_new();
  if (!attrs) return names;
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, attrs->map);
  while (g_hash_table_iter_next(&it, &k, NULL)) g_ptr_array_add(names, k);
  g_ptr_array_sort(names, compare_names);
  return names;
}
