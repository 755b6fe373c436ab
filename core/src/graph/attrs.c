/* Node attribute values (TensorFlow's AttrValue) and attribute maps: construction, deep copy and
 * release. Everything else (parsing from GraphDef, reading through the host table) builds on these. */
#include "graph_internal.h"

#include <string.h>

/* Not g_new0: calloc skips the allocator's per-thread cache, where the op builder's values of the
 * node before wait to be reused. */
weft__attr_value_t *weft__attr_value_new(weft__attr_kind_t kind) {
  weft__attr_value_t *v = g_new(weft__attr_value_t, 1);
  memset(v, 0, sizeof *v);
  v->kind = kind;
  return v;
}

weft__attr_value_t *weft__attr_value_new_string_list(const char *const *values, int n) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_STRING);
  v->u.list.n = (size_t)n;
  v->u.list.s = g_new0(weft_string_t, n > 0 ? n : 1);
  for (int k = 0; k < n; k++) {
    v->u.list.s[k].len = strlen(values[k]);
    v->u.list.s[k].data = g_strdup(values[k]);
  }
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

/* Releases what the value owns (strings, lists, tensor references), not the value itself. */
static void value_clear(weft__attr_value_t *v) {
  if (v->kind == WEFT_ATTR_STRING || v->kind == WEFT_ATTR_FUNC) g_free(v->u.s.data);
  if (v->kind == WEFT_ATTR_TENSOR) weft_tensor_unref(v->u.tensor);
  if (kind_is_list(v->kind)) free_shape_list_and_tensors(v);
}

void weft__attr_value_free(weft__attr_value_t *v) {
  if (!v) return;
  value_clear(v);
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

/* The bytes of a value that mean anything for its kind: the kind and the union member it uses.
 * Packed values (below) are only that long, so values are copied by this size, never whole. */
static size_t value_size(weft__attr_kind_t kind) {
  switch (kind) {
    case WEFT_ATTR_NONE:
    case WEFT_ATTR_INT:
    case WEFT_ATTR_FLOAT:
    case WEFT_ATTR_BOOL:
    case WEFT_ATTR_TYPE:
    case WEFT_ATTR_TENSOR:
      return G_STRUCT_OFFSET(weft__attr_value_t, u) + sizeof(int64_t);
    case WEFT_ATTR_STRING:
    case WEFT_ATTR_FUNC:
      return G_STRUCT_OFFSET(weft__attr_value_t, u) + sizeof(weft_string_t);
    default: /* shapes and lists */
      return sizeof(weft__attr_value_t);
  }
}

weft__attr_value_t *weft__attr_value_copy(const weft__attr_value_t *src) {
  weft__attr_value_t *v = g_new0(weft__attr_value_t, 1);
  memcpy(v, src, value_size(src->kind));
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
  weft_attrs_t *a = g_new(weft_attrs_t, 1); /* not g_new0: see weft__attr_value_new */
  memset(a, 0, sizeof *a);
  return a;
}

void weft__attrs_free(weft_attrs_t *attrs) {
  if (!attrs) return;
  for (int k = 0; k < attrs->n; k++) {
    if (attrs->packed) {
      value_clear(attrs->entries[k].value);
    } else {
      g_free(attrs->entries[k].name);
      weft__attr_value_free(attrs->entries[k].value);
    }
  }
  if (!attrs->packed) g_free(attrs->entries);
  if (!attrs->embedded) g_free(attrs);
}

/* ---------------------------------------------------------------------------------------------
 * Packed attrs: a node's attrs, entries, values and names inside the node's own allocation
 * (graph.c), so that a node is one allocation instead of one per attr, value and name. What the
 * values own (strings, lists, tensor references) stays separately allocated. */

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* The op definition's own copy of an attr name, or NULL: packed attrs point at it rather than
 * copying it (the definition outlives its nodes), and a million nodes share a few names. */
static const char *def_name(const weft__op_def_t *def, const char *name) {
  for (guint k = 0; def && k < def->attrs->len; k++) {
    const weft__attr_def_t *ad = def->attrs->pdata[k];
    if (strcmp(ad->name, name) == 0) return ad->name;
  }
  return NULL;
}

size_t weft__attrs_packed_size(const weft_attrs_t *attrs, const weft__op_def_t *def) {
  size_t size = ALIGN8(sizeof(weft_attrs_t));
  size += ALIGN8(sizeof(weft__attr_entry_t) * (size_t)attrs->n);
  for (int k = 0; k < attrs->n; k++) {
    size += ALIGN8(value_size(attrs->entries[k].value->kind));
    if (!def_name(def, attrs->entries[k].name)) size += strlen(attrs->entries[k].name) + 1;
  }
  return ALIGN8(size);
}

weft_attrs_t *weft__attrs_pack(weft_attrs_t *attrs, void *block, const weft__op_def_t *def) {
  char *at = block;
  weft_attrs_t *packed = (weft_attrs_t *)(void *)at;
  at += ALIGN8(sizeof(weft_attrs_t));
  weft__attr_entry_t *entries = (weft__attr_entry_t *)(void *)at;
  at += ALIGN8(sizeof(weft__attr_entry_t) * (size_t)attrs->n);
  /* Values first, each only as long as its kind needs (a tensor's is 16 bytes, not 80), names
   * after them. */
  for (int k = 0; k < attrs->n; k++) {
    const weft__attr_value_t *value = attrs->entries[k].value;
    size_t size = value_size(value->kind);
    entries[k].value = memcpy(at, value, size); /* what it owns moves with it */
    at += ALIGN8(size);
    g_free(attrs->entries[k].value);
  }
  for (int k = 0; k < attrs->n; k++) {
    const char *shared = def_name(def, attrs->entries[k].name);
    if (shared) {
      entries[k].name = (char *)shared; /* never freed through a packed entry */
    } else {
      size_t len = strlen(attrs->entries[k].name) + 1;
      entries[k].name = memcpy(at, attrs->entries[k].name, len);
      at += len;
    }
    g_free(attrs->entries[k].name);
  }
  *packed = (weft_attrs_t){attrs->n, attrs->n, attrs->n > 0 ? entries : NULL, true, true};
  g_free(attrs->entries);
  g_free(attrs);
  return packed;
}

/* Gives packed attrs separately allocated entries again before they change; the packed
 * entries stay behind, unused, in the node's block. */
static void unpack(weft_attrs_t *attrs) {
  if (!attrs->packed) return;
  weft__attr_entry_t *entries = g_new(weft__attr_entry_t, attrs->n > 0 ? attrs->n : 1);
  for (int k = 0; k < attrs->n; k++) {
    entries[k].name = g_strdup(attrs->entries[k].name);
    const weft__attr_value_t *packed = attrs->entries[k].value;
    entries[k].value = g_new0(weft__attr_value_t, 1);
    memcpy(entries[k].value, packed, value_size(packed->kind));
  }
  attrs->entries = entries;
  attrs->cap = attrs->n > 0 ? attrs->n : 1;
  attrs->packed = false;
}

weft_attrs_t *weft__attrs_copy(const weft_attrs_t *attrs) {
  weft_attrs_t *a = weft__attrs_new();
  if (!attrs || attrs->n == 0) return a;
  a->n = a->cap = attrs->n;
  a->entries = g_new(weft__attr_entry_t, a->n);
  for (int k = 0; k < a->n; k++) {
    a->entries[k].name = g_strdup(attrs->entries[k].name);
    a->entries[k].value = weft__attr_value_copy(attrs->entries[k].value);
  }
  return a;
}

/* The index of `name`, or -(insertion point) - 1 when it is not there. */
static int find(const weft_attrs_t *attrs, const char *name) {
  int lo = 0, hi = attrs->n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(attrs->entries[mid].name, name);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -lo - 1;
}

void weft__attrs_set(weft_attrs_t *attrs, const char *name, weft__attr_value_t *value) {
  unpack(attrs);
  int at = find(attrs, name);
  if (at >= 0) {
    weft__attr_value_free(attrs->entries[at].value);
    attrs->entries[at].value = value;
    return;
  }
  at = -at - 1;
  if (attrs->n == attrs->cap) {
    attrs->cap = attrs->cap ? 2 * attrs->cap : 4;
    attrs->entries = g_renew(weft__attr_entry_t, attrs->entries, attrs->cap);
  }
  memmove(&attrs->entries[at + 1], &attrs->entries[at],
          sizeof(weft__attr_entry_t) * (size_t)(attrs->n - at));
  attrs->entries[at].name = g_strdup(name);
  attrs->entries[at].value = value;
  attrs->n++;
}

const weft__attr_value_t *weft__attrs_get(const weft_attrs_t *attrs, const char *name) {
  if (!attrs || !name) return NULL;
  int at = find(attrs, name);
  return at >= 0 ? attrs->entries[at].value : NULL;
}

void weft__attrs_remove(weft_attrs_t *attrs, const char *name) {
  int at = attrs && name ? find(attrs, name) : -1;
  if (at < 0) return;
  unpack(attrs);
  g_free(attrs->entries[at].name);
  weft__attr_value_free(attrs->entries[at].value);
  memmove(&attrs->entries[at], &attrs->entries[at + 1],
          sizeof(weft__attr_entry_t) * (size_t)(attrs->n - at - 1));
  attrs->n--;
}

GPtrArray *weft__attrs_sorted_names(const weft_attrs_t *attrs) {
  GPtrArray *names = g_ptr_array_new();
  for (int k = 0; attrs && k < attrs->n; k++) g_ptr_array_add(names, attrs->entries[k].name);
  return names;
}
