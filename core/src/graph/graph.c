/* Graphs and nodes: the op builder of the client API, name/device/control/colocation scopes, and
 * weft__graph_add_node, the single place where a node is checked against its op definition (input
 * count and types, attribute values and defaults) and gets its output types and shapes. */
#include "graph_internal.h"

#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif


/* ---------------------------------------------------------------------------------------------
 * Graph lifetime */

/* by_name is a set of nodes hashed by name: a million-node graph then keeps one array of
 * pointers beside GHashTable's hashes, not a key array and a value array. */
static guint node_name_hash(gconstpointer node) {
  return g_str_hash(((const weft_node_t *)node)->name);
}

static gboolean node_name_equal(gconstpointer a, gconstpointer b) {
  return strcmp(((const weft_node_t *)a)->name, ((const weft_node_t *)b)->name) == 0;
}

/* The node named `name`, or NULL; the caller holds the graph lock. */
static weft_node_t *node_by_name(const weft_graph_t *g, const char *name) {
  weft_node_t probe;
  probe.name = (char *)name;
  return g_hash_table_lookup(g->by_name, &probe);
}

weft_graph_t *weft__graph_new_in(weft__op_registry_t *ops) {
  weft_graph_t *g = g_new0(weft_graph_t, 1);
  g->ops = ops;
  g_mutex_init(&g->lock);
  g->nodes = g_ptr_array_new();
  g->by_name = g_hash_table_new(node_name_hash, node_name_equal);
  g->name_counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g->name_scopes = g_ptr_array_new_with_free_func(g_free);
  g->device_scopes = g_ptr_array_new();
  g->control_scopes = g_ptr_array_new();
  g->colocate_stack = g_ptr_array_new();
  g->initializers = g_ptr_array_new();
  g->trainable = g_ptr_array_new();
  return g;
}

weft_graph_t *weft_graph_new(void) { return weft__graph_new_in(weft__op_registry_process()); }

/* The requested device of every node that asked for none (most of a big graph). */
static char no_device[1] = "";

/* The control inputs of every node that has none (most of a big graph): one array that is
 * never changed nor freed, so that a node does not need its own. */
static GPtrArray *no_controls(void) {
  static GPtrArray *empty;
  if (g_once_init_enter(&empty)) g_once_init_leave(&empty, g_ptr_array_new());
  return empty;
}

static void node_free(weft_node_t *n) {
  if (n->requested_device != no_device) g_free(n->requested_device);
  weft__attrs_free(n->attrs);
  if (n->control_inputs && n->control_inputs != no_controls())
    g_ptr_array_free(n->control_inputs, TRUE);
  g_free(n->colocation_group);
  g_free(n);
}

static void device_scope_free(weft__device_scope_t *s) {
  g_free(s->spec);
  g_free(s);
}

/* Graphs of at least this many nodes give their freed memory back to the system when freed. */
#define TRIM_AFTER_NODES 65536

void weft_graph_free(weft_graph_t *g) {
  if (!g) return;
  bool large = g->nodes->len >= TRIM_AFTER_NODES;
  for (guint k = 0; k < g->nodes->len; k++) node_free(g->nodes->pdata[k]);
  g_ptr_array_free(g->nodes, TRUE);
  g_hash_table_destroy(g->by_name);
  g_hash_table_destroy(g->name_counts);
  g_ptr_array_free(g->name_scopes, TRUE);
  for (guint k = 0; k < g->device_scopes->len; k++) device_scope_free(g->device_scopes->pdata[k]);
  g_ptr_array_free(g->device_scopes, TRUE);
  for (guint k = 0; k < g->control_scopes->len; k++)
    g_ptr_array_free(g->control_scopes->pdata[k], TRUE);
  g_ptr_array_free(g->control_scopes, TRUE);
  g_ptr_array_free(g->colocate_stack, TRUE);
  g_ptr_array_free(g->initializers, TRUE);
  g_ptr_array_free(g->trainable, TRUE);
  g_mutex_clear(&g->lock);
  g_free(g);
#ifdef __GLIBC__
  /* A large graph (and the session over it, freed before it) is millions of small blocks that
   * glibc keeps in its free lists and arenas after they are freed: a 1M-node graph left 600 MB
   * resident after close, and more after each create/close cycle as new blocks landed in other
   * arenas. Handing the free pages back keeps a long-lived process at its working size; for a
   * small graph it would cost more than it gives. */
  if (large) weft__malloc_trim();
#endif
}

void weft__graph_truncate(weft_graph_t *g, int n_nodes) {
  g_mutex_lock(&g->lock);
  while ((int)g->nodes->len > n_nodes) {
    weft_node_t *n = g_ptr_array_steal_index(g->nodes, g->nodes->len - 1);
    g_hash_table_remove(g->by_name, n);
    g_ptr_array_remove(g->initializers, n);
    g_ptr_array_remove(g->trainable, n);
    node_free(n);
  }
  g_atomic_int_inc(&g->version);
  g_mutex_unlock(&g->lock);
}

/* ---------------------------------------------------------------------------------------------
 * Lookups */

weft_node_t *weft_graph_node(const weft_graph_t *g, const char *name) {
  weft_graph_t *mg = (weft_graph_t *)g;
  g_mutex_lock(&mg->lock);
  weft_node_t *n = node_by_name(g, name);
  g_mutex_unlock(&mg->lock);
  return n;
}

int weft_graph_num_nodes(const weft_graph_t *g) {
  weft_graph_t *mg = (weft_graph_t *)g;
  g_mutex_lock(&mg->lock);
  int n = (int)g->nodes->len;
  g_mutex_unlock(&mg->lock);
  return n;
}

weft_node_t *weft_graph_node_at(const weft_graph_t *g, int index) {
  weft_graph_t *mg = (weft_graph_t *)g;
  g_mutex_lock(&mg->lock);
  weft_node_t *n = (index >= 0 && index < (int)g->nodes->len) ? g->nodes->pdata[index] : NULL;
  g_mutex_unlock(&mg->lock);
  return n;
}

weft_status_t *weft_graph_close_loop(weft_graph_t *g, weft_node_t *merge, int index,
                                     weft_output_t next) {
  if (!g || !merge || !next.node)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_graph_close_loop: a NULL graph or node");
  if (merge->graph != g || next.node->graph != g)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_graph_close_loop: '%s' and '%s' must both be nodes of the graph",
                           merge->name, next.node->name);
  if (strcmp(merge->op_name, "Merge") != 0 && strcmp(merge->op_name, "RefMerge") != 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_graph_close_loop: '%s' is a %s, not a Merge", merge->name,
                           merge->op_name);
  const char *op = next.node->op_name;
  if ((strcmp(op, "NextIteration") != 0 && strcmp(op, "RefNextIteration") != 0) ||
      next.index != 0)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_graph_close_loop: the back edge into '%s' must come from output "
                           "0 of a NextIteration, not output %d of '%s' (%s)", merge->name,
                           next.index, next.node->name, op);
  if (index < 0 || index >= merge->n_inputs)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_graph_close_loop: '%s' has %d inputs, not an input %d",
                           merge->name, merge->n_inputs, index);
  if (next.node->id <= merge->id)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_graph_close_loop: '%s' was created before '%s': a back edge "
                           "runs from a later NextIteration", next.node->name, merge->name);
  weft_dtype_t want = weft__dtype_base(merge->input_types[index]);
  if (weft__dtype_base(next.node->output_types[0]) != want)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "weft_graph_close_loop: '%s' outputs %s but input %d of '%s' is %s",
                           next.node->name,
                           weft_dtype_name(weft__dtype_base(next.node->output_types[0])), index,
                           merge->name, weft_dtype_name(want));
  g_mutex_lock(&g->lock);
  merge->inputs[index].src = next.node;
  merge->inputs[index].src_index = 0;
  merge->output_ranks[0] = -1;
  g_atomic_int_inc(&g->version);
  g_mutex_unlock(&g->lock);
  return NULL;
}

const char *weft_node_name(const weft_node_t *n) { return n->name; }
const char *weft_node_op(const weft_node_t *n) { return n->op_name; }
const char *weft_node_requested_device(const weft_node_t *n) { return n->requested_device; }
int weft_node_num_outputs(const weft_node_t *n) { return n->n_outputs; }

weft_dtype_t weft_node_output_dtype(const weft_node_t *n, int index) {
  if (index < 0 || index >= n->n_outputs) return WEFT_DT_INVALID;
  return weft__dtype_base(n->output_types[index]);
}

int weft_node_output_shape(const weft_node_t *n, int index, int64_t dims[WEFT_MAX_RANK]) {
  if (index < 0 || index >= n->n_outputs) return -1;
  weft__shape_t s = weft__node_shape(n, index);
  if (s.rank > 0) memcpy(dims, s.dims, sizeof(int64_t) * (size_t)s.rank);
  return s.rank;
}

weft_output_t weft_out(weft_node_t *node, int index) {
  weft_output_t o = {node, index};
  return o;
}

/* Splits "name:3" into name and index; "^name" is not a tensor name. */
static bool split_tensor_name(const char *text, char **name, int *index) {
  const char *colon = strrchr(text, ':');
  if (colon && colon[1] != '\0') {
    char *end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (*end == '\0' && v >= 0 && v < G_MAXINT) {
      *name = g_strndup(text, (gsize)(colon - text));
      *index = (int)v;
      return true;
    }
  }
  *name = g_strdup(text);
  *index = 0;
  return true;
}

weft_status_t *weft_graph_find_output(const weft_graph_t *g, const char *tensor_name,
                                      weft_output_t *out) {
  char *name = NULL;
  int index = 0;
  split_tensor_name(tensor_name, &name, &index);
  weft_node_t *n = weft_graph_node(g, name);
  if (!n) {
    /* A node name that itself contains ':' ("a:b") is legal in TensorFlow only without index. */
    n = weft_graph_node(g, tensor_name);
    if (n) index = 0;
  }
  if (!n) {
    weft_status_t *st = weft_status_new(WEFT_NOT_FOUND,
                                        "The tensor '%s' does not exist in the graph: no node '%s'",
                                        tensor_name, name);
    g_free(name);
    return st;
  }
  if (index >= n->n_outputs) {
    weft_status_t *st = weft_status_new(
        WEFT_NOT_FOUND, "The tensor '%s' does not exist: node '%s' (%s) has %d output%s",
        tensor_name, n->name, n->op_name, n->n_outputs, n->n_outputs == 1 ? "" : "s");
    g_free(name);
    return st;
  }
  g_free(name);
  out->node = n;
  out->index = index;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Scopes */

void weft_graph_push_name_scope(weft_graph_t *g, const char *scope) {
  const char *outer = g->name_scopes->len ? g->name_scopes->pdata[g->name_scopes->len - 1] : NULL;
  g_ptr_array_add(g->name_scopes, outer ? g_strdup_printf("%s/%s", outer, scope) : g_strdup(scope));
}

void weft_graph_pop_name_scope(weft_graph_t *g) {
  if (g->name_scopes->len) g_ptr_array_remove_index(g->name_scopes, g->name_scopes->len - 1);
}

void weft_graph_push_device(weft_graph_t *g, const char *device) {
  weft__device_scope_t *s = g_new0(weft__device_scope_t, 1);
  s->spec = g_strdup(device ? device : "");
  g_ptr_array_add(g->device_scopes, s);
}

void weft_graph_push_device_fn(weft_graph_t *g, weft_device_fn fn, void *user_data) {
  weft__device_scope_t *s = g_new0(weft__device_scope_t, 1);
  s->fn = fn;
  s->user_data = user_data;
  g_ptr_array_add(g->device_scopes, s);
}

void weft_graph_pop_device(weft_graph_t *g) {
  if (!g->device_scopes->len) return;
  device_scope_free(g_ptr_array_steal_index(g->device_scopes, g->device_scopes->len - 1));
}

void weft_graph_push_control_deps(weft_graph_t *g, weft_node_t *const *nodes, int n) {
  GPtrArray *a = g_ptr_array_new();
  for (int k = 0; k < n; k++) g_ptr_array_add(a, nodes[k]);
  g_ptr_array_add(g->control_scopes, a);
}

void weft_graph_pop_control_deps(weft_graph_t *g) {
  if (!g->control_scopes->len) return;
  g_ptr_array_free(g_ptr_array_steal_index(g->control_scopes, g->control_scopes->len - 1), TRUE);
}

void weft_graph_push_colocate(weft_graph_t *g, weft_node_t *node) {
  g_ptr_array_add(g->colocate_stack, node);
}

void weft_graph_pop_colocate(weft_graph_t *g) {
  if (g->colocate_stack->len) g_ptr_array_remove_index(g->colocate_stack, g->colocate_stack->len - 1);
}

/* ---------------------------------------------------------------------------------------------
 * The op builder */

/* An input arg of the builder: a run of `count` entries of the builder's flat input array. */
typedef struct input_slot {
  bool is_list;
  int start, count;
} input_slot_t;

/* Room for the inputs of most ops inside the builder itself (a node with more grows arrays). */
enum { BUILDER_INLINE = 4 };

/* A node being built. The builder, its op and its name are one allocation, and the first few
 * inputs live inline: a graph of a million nodes made three allocations per input before. */
struct weft_op_builder {
  weft_graph_t *graph;
  const char *op;   /* in the same block as the builder */
  const char *name; /* idem */
  int n_slots, slot_cap;
  input_slot_t *slots; /* slots_inline or owned */
  int n_inputs, input_cap;
  weft_output_t *inputs; /* inputs_inline or owned */
  GPtrArray *control_inputs; /* made at the first one */
  char *device; /* NULL: scopes decide */
  weft_attrs_t *attrs;
  input_slot_t slots_inline[BUILDER_INLINE];
  weft_output_t inputs_inline[BUILDER_INLINE];
};

weft_op_builder_t *weft_op_new(weft_graph_t *g, const char *op, const char *name) {
  if (!op) op = "";
  if (!name || !*name) name = op;
  size_t op_len = strlen(op), name_len = strlen(name);
  /* Not g_malloc0: calloc bypasses glibc's per-thread cache, where the builder of the node
   * before waits to be reused; the inline arrays need no zeroing. */
  weft_op_builder_t *b = g_malloc(sizeof *b + op_len + name_len + 2);
  memset(b, 0, G_STRUCT_OFFSET(weft_op_builder_t, slots_inline));
  char *text = (char *)(b + 1);
  memcpy(text, op, op_len + 1);
  memcpy(text + op_len + 1, name, name_len + 1);
  b->graph = g;
  b->op = text;
  b->name = text + op_len + 1;
  b->slots = b->slots_inline;
  b->slot_cap = BUILDER_INLINE;
  b->inputs = b->inputs_inline;
  b->input_cap = BUILDER_INLINE;
  b->attrs = weft__attrs_new();
  return b;
}

static void builder_free(weft_op_builder_t *b) {
  if (b->slots != b->slots_inline) g_free(b->slots);
  if (b->inputs != b->inputs_inline) g_free(b->inputs);
  if (b->control_inputs) g_ptr_array_free(b->control_inputs, TRUE);
  weft__attrs_free(b->attrs);
  g_free(b->device);
  g_free(b);
}

/* Grows *array (inline storage first) to hold at least `need` elements of `size` bytes. */
static void *grow(void *array, const void *inline_storage, int *cap, int need, size_t size) {
  if (need <= *cap) return array;
  int cap2 = *cap;
  while (cap2 < need) cap2 *= 2;
  void *bigger = g_malloc(size * (size_t)cap2);
  memcpy(bigger, array, size * (size_t)*cap);
  if (array != inline_storage) g_free(array);
  *cap = cap2;
  return bigger;
}

static void add_slot(weft_op_builder_t *b, bool is_list, const weft_output_t *inputs, int n) {
  if (n < 0) n = 0;
  b->slots = grow(b->slots, b->slots_inline, &b->slot_cap, b->n_slots + 1, sizeof *b->slots);
  b->inputs = grow(b->inputs, b->inputs_inline, &b->input_cap, b->n_inputs + n, sizeof *b->inputs);
  b->slots[b->n_slots++] = (input_slot_t){is_list, b->n_inputs, n};
  if (n > 0) memcpy(&b->inputs[b->n_inputs], inputs, sizeof *inputs * (size_t)n);
  b->n_inputs += n;
}

void weft_op_add_input(weft_op_builder_t *b, weft_output_t input) {
  add_slot(b, false, &input, 1);
}

void weft_op_add_input_list(weft_op_builder_t *b, const weft_output_t *inputs, int n) {
  add_slot(b, true, inputs, n);
}

void weft_op_add_control_input(weft_op_builder_t *b, weft_node_t *node) {
  if (!node) return;
  if (!b->control_inputs) b->control_inputs = g_ptr_array_new();
  g_ptr_array_add(b->control_inputs, node);
}

void weft_op_set_device(weft_op_builder_t *b, const char *device) {
  g_free(b->device);
  b->device = g_strdup(device ? device : "");
}

static void set_attr(weft_op_builder_t *b, const char *name, weft__attr_value_t *v) {
  weft__attrs_set(b->attrs, name, v);
}

void weft_op_set_attr_int(weft_op_builder_t *b, const char *name, int64_t value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_INT);
  v->u.i = value;
  set_attr(b, name, v);
}

void weft_op_set_attr_float(weft_op_builder_t *b, const char *name, float value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_FLOAT);
  v->u.f = value;
  set_attr(b, name, v);
}

void weft_op_set_attr_bool(weft_op_builder_t *b, const char *name, bool value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_BOOL);
  v->u.b = value;
  set_attr(b, name, v);
}

void weft_op_set_attr_type(weft_op_builder_t *b, const char *name, weft_dtype_t value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
  v->u.type = value;
  set_attr(b, name, v);
}

void weft_op_set_attr_string(weft_op_builder_t *b, const char *name, const char *value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_STRING);
  v->u.s.len = strlen(value);
  v->u.s.data = g_strdup(value);
  set_attr(b, name, v);
}

void weft_op_set_attr_int_list(weft_op_builder_t *b, const char *name, const int64_t *values,
                               int n) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_INT);
  v->u.list.n = (size_t)n;
  v->u.list.i = g_memdup2(values, sizeof(int64_t) * (size_t)n);
  set_attr(b, name, v);
}

void weft_op_set_attr_float_list(weft_op_builder_t *b, const char *name, const float *values,
                                 int n) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_FLOAT);
  v->u.list.n = (size_t)n;
  v->u.list.f = g_memdup2(values, sizeof(float) * (size_t)n);
  set_attr(b, name, v);
}

void weft_op_set_attr_type_list(weft_op_builder_t *b, const char *name,
                                const weft_dtype_t *values, int n) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_TYPE);
  v->u.list.n = (size_t)n;
  v->u.list.type = g_memdup2(values, sizeof(weft_dtype_t) * (size_t)n);
  set_attr(b, name, v);
}

void weft_op_set_attr_string_list(weft_op_builder_t *b, const char *name,
                                  const char *const *values, int n) {
  set_attr(b, name, weft__attr_value_new_string_list(values, n));
}

void weft_op_set_attr_shape(weft_op_builder_t *b, const char *name, int rank,
                            const int64_t *dims) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_SHAPE);
  v->u.shape.rank = rank > WEFT_MAX_RANK ? WEFT_MAX_RANK : rank;
  for (int k = 0; k < v->u.shape.rank; k++) v->u.shape.dims[k] = dims[k];
  set_attr(b, name, v);
}

void weft_op_set_attr_shape_list(weft_op_builder_t *b, const char *name, const int *ranks,
                                 const int64_t *const *dims, int n) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_SHAPE);
  v->u.list.n = n > 0 ? (size_t)n : 0;
  v->u.list.shape = g_new0(weft__shape_t, v->u.list.n + 1);
  for (size_t k = 0; k < v->u.list.n; k++) {
    weft__shape_t *sh = &v->u.list.shape[k];
    sh->rank = ranks[k] > WEFT_MAX_RANK ? WEFT_MAX_RANK : ranks[k];
    for (int d = 0; d < sh->rank; d++) sh->dims[d] = dims[k][d];
  }
  set_attr(b, name, v);
}

void weft_op_set_attr_tensor(weft_op_builder_t *b, const char *name, weft_tensor_t *value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TENSOR);
  v->u.tensor = weft_tensor_ref(value);
  set_attr(b, name, v);
}

/* Makes `base` unique in the graph ("add", "add_1", ...). Caller holds the graph lock. The
 * result is written to buf when it fits (most names), else to a new string the caller frees.
 * name_counts maps a base to the next suffix to try (an int the table owns, updated in place). */
static char *unique_name(weft_graph_t *g, const char *base, char *buf, size_t buf_size) {
  size_t len = strlen(base);
  char *candidate = len + 13 <= buf_size ? buf : g_malloc(len + 13);
  memcpy(candidate, base, len + 1);
  int *next = g_hash_table_lookup(g->name_counts, base);
  if (!next) {
    next = g_new(int, 1);
    *next = 1;
    g_hash_table_insert(g->name_counts, g_strdup(base), next);
    if (!node_by_name(g, base)) return candidate;
  }
  /* The suffix is formatted by hand: g_strdup_printf was a tenth of building a large graph. */
  candidate[len] = '_';
  for (;;) {
    char digits[12];
    int n = 0;
    for (unsigned v = (unsigned)(*next)++; n == 0 || v > 0; v /= 10)
      digits[n++] = (char)('0' + v % 10);
    for (int k = 0; k < n; k++) candidate[len + 1 + k] = digits[n - 1 - k];
    candidate[len + 1 + n] = '\0';
    if (!node_by_name(g, candidate)) return candidate;
  }
}

/* The merged device spec of the scopes plus the builder's own, as a canonical string. */
static weft_status_t *resolve_device(weft_op_builder_t *b, const char *final_name, char **out) {
  if (b->graph->device_scopes->len == 0 && !b->device) {
    *out = NULL; /* nothing requested: no spec to parse or print */
    return NULL;
  }
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  weft_graph_t *g = b->graph;
  weft_status_t *st = NULL;
  for (guint k = 0; k < g->device_scopes->len && !st; k++) {
    weft__device_scope_t *s = g->device_scopes->pdata[k];
    const char *text = s->spec;
    if (s->fn) text = s->fn(s->user_data, b->op, final_name);
    if (!text) continue;
    if (!*text) {
      weft__device_spec_clear(&spec);
      continue;
    }
    weft__device_spec_t inner;
    weft__device_spec_init(&inner);
    st = weft__device_spec_parse(text, &inner);
    if (!st) weft__device_spec_merge(&spec, &inner);
    weft__device_spec_clear(&inner);
  }
  if (!st && b->device) {
    weft__device_spec_t inner;
    weft__device_spec_init(&inner);
    st = weft__device_spec_parse(b->device, &inner);
    if (!st) weft__device_spec_merge(&spec, &inner);
    weft__device_spec_clear(&inner);
  }
  if (!st) *out = weft__device_spec_to_string(&spec);
  weft__device_spec_clear(&spec);
  return st;
}

/* Fills attributes the caller left out that the inputs determine (T, N, Tlist). */
static weft_status_t *infer_attrs_from_inputs(weft_op_builder_t *b, const weft__op_def_t *def) {
  if ((guint)b->n_slots != def->inputs->len) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s' (%s) was given %d input%s but the op takes %u (%s)", b->name,
                           b->op, b->n_slots, b->n_slots == 1 ? "" : "s", def->inputs->len,
                           def->inputs->len ? "see its definition" : "none");
  }
  for (guint k = 0; k < def->inputs->len; k++) {
    const weft__arg_def_t *arg = def->inputs->pdata[k];
    const weft_output_t *slot = &b->inputs[b->slots[k].start];
    int count = b->slots[k].count;
    for (int j = 0; j < count; j++) {
      weft_output_t o = slot[j];
      if (!o.node || o.index < 0 || o.index >= o.node->n_outputs) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "Node '%s' (%s): input '%s' refers to a missing output", b->name,
                               b->op, arg->name);
      }
      if (o.node->graph != b->graph) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "Node '%s' (%s): input '%s' comes from node '%s' of another graph",
                               b->name, b->op, arg->name, o.node->name);
      }
    }
    if (arg->number_attr && !weft__attrs_get(b->attrs, arg->number_attr)) {
      weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_INT);
      v->u.i = count;
      weft__attrs_set(b->attrs, arg->number_attr, v);
    }
    if (arg->type_attr && count > 0 && !weft__attrs_get(b->attrs, arg->type_attr)) {
      weft_output_t o = slot[0];
      weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
      v->u.type = weft__dtype_base(o.node->output_types[o.index]);
      weft__attrs_set(b->attrs, arg->type_attr, v);
    }
    if (arg->type_list_attr && !weft__attrs_get(b->attrs, arg->type_list_attr)) {
      weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_TYPE);
      v->u.list.n = (size_t)count;
      v->u.list.type = g_new0(weft_dtype_t, count > 0 ? count : 1);
      for (int j = 0; j < count; j++) {
        weft_output_t o = slot[j];
        v->u.list.type[j] = weft__dtype_base(o.node->output_types[o.index]);
      }
      weft__attrs_set(b->attrs, arg->type_list_attr, v);
    }
  }
  return NULL;
}

static weft_status_t *add_node_taking_attrs(weft_graph_t *g, const weft__op_def_t *def,
                                            const char *name, const char *op,
                                            const weft__edge_t *inputs, int n_inputs,
                                            weft_node_t *const *control_inputs, int n_control,
                                            const char *device, weft_attrs_t *attrs,
                                            weft_node_t **out);

weft_status_t *weft_op_finish(weft_op_builder_t *b, weft_node_t **out) {
  if (out) *out = NULL;
  weft_graph_t *g = b->graph;
  const weft__op_def_t *def = weft__op_registry_find_loading(g->ops, b->op);
  if (!def) {
    weft_status_t *st = weft_status_new(WEFT_NOT_FOUND,
                                        "Op type not registered '%s' (while building node '%s')",
                                        b->op, b->name);
    builder_free(b);
    return st;
  }
  weft_status_t *st = infer_attrs_from_inputs(b, def);
  if (st) {
    builder_free(b);
    return st;
  }

  /* The full and the unique name are built on the stack unless they are long. */
  char full_buf[128], name_buf[128];
  g_mutex_lock(&g->lock);
  const char *scope = g->name_scopes->len ? g->name_scopes->pdata[g->name_scopes->len - 1] : NULL;
  const char *full = b->name;
  if (scope) {
    size_t scope_len = strlen(scope), own_len = strlen(b->name);
    char *joined = scope_len + own_len + 2 <= sizeof full_buf
                       ? full_buf : g_malloc(scope_len + own_len + 2);
    memcpy(joined, scope, scope_len);
    joined[scope_len] = '/';
    memcpy(joined + scope_len + 1, b->name, own_len + 1);
    full = joined;
  }
  char *name = unique_name(g, full, name_buf, sizeof name_buf);
  if (full != b->name && full != full_buf) g_free((char *)full);
  g_mutex_unlock(&g->lock);

  char *device = NULL;
  g->building_attrs = b->attrs;
  st = resolve_device(b, name, &device);
  g->building_attrs = NULL;
  if (st) {
    st = weft_status_prefix(st, "Node '%s'", name);
    if (name != name_buf) g_free(name);
    builder_free(b);
    return st;
  }

  /* Colocation: the innermost colocate_with scope names the group, as TensorFlow's _class. */
  if (g->colocate_stack->len && !weft__attrs_get(b->attrs, "_class")) {
    weft_node_t *with = g->colocate_stack->pdata[g->colocate_stack->len - 1];
    const char *root = with->colocation_group ? with->colocation_group : with->name;
    char *loc = g_strdup_printf("loc:@%s", root);
    const char *locs[1] = {loc};
    weft_op_set_attr_string_list(b, "_class", locs, 1);
    g_free(loc);
  }

  /* Control inputs: explicit plus control-dependency scopes, on the stack when there are few.
   * The builder's inputs are already flat, and weft_output_t is laid out as an edge. */
  G_STATIC_ASSERT(sizeof(weft_output_t) == sizeof(weft__edge_t));
  G_STATIC_ASSERT(G_STRUCT_OFFSET(weft_output_t, node) == G_STRUCT_OFFSET(weft__edge_t, src));
  G_STATIC_ASSERT(G_STRUCT_OFFSET(weft_output_t, index) ==
                  G_STRUCT_OFFSET(weft__edge_t, src_index));
  const weft__edge_t *edges = (const weft__edge_t *)(const void *)b->inputs;
  int n_controls = b->control_inputs ? (int)b->control_inputs->len : 0;
  for (guint k = 0; k < g->control_scopes->len; k++)
    n_controls += (int)((GPtrArray *)g->control_scopes->pdata[k])->len;
  weft_node_t *controls_small[8];
  weft_node_t **controls = n_controls <= 8 ? controls_small : g_new(weft_node_t *, n_controls);
  int c_at = 0;
  for (guint k = 0; k < g->control_scopes->len; k++) {
    GPtrArray *scope_nodes = g->control_scopes->pdata[k];
    for (guint j = 0; j < scope_nodes->len; j++) controls[c_at++] = scope_nodes->pdata[j];
  }
  for (guint k = 0; b->control_inputs && k < b->control_inputs->len; k++)
    controls[c_at++] = b->control_inputs->pdata[k];

  weft_node_t *node = NULL;
  weft_attrs_t *attrs = b->attrs;
  b->attrs = NULL; /* handed over */
  st = add_node_taking_attrs(g, def, name, b->op, edges, b->n_inputs, controls, n_controls,
                             device, attrs, &node);
  if (controls != controls_small) g_free(controls);
  g_free(device);
  if (name != name_buf) g_free(name);
  builder_free(b);
  if (!st && out) *out = node;
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Adding a node: validation against the op definition */

static int64_t attr_int_or(const weft_attrs_t *attrs, const char *name, int64_t dflt) {
  const weft__attr_value_t *v = weft__attrs_get(attrs, name);
  return (v && v->kind == WEFT_ATTR_INT) ? v->u.i : dflt;
}

/* Number (*count) and, when `types` is not NULL, types of the values an arg stands for, from the
 * attrs. *uniform (when not NULL): the one type of all values, or -1 for a list of types. */
static weft_status_t *arg_types(const weft_node_t *node, const weft__arg_def_t *arg,
                                weft_dtype_t *types, int *count, int *uniform) {
  if (uniform) *uniform = -1;
  const weft_attrs_t *attrs = node->attrs;
  if (arg->type_list_attr) {
    const weft__attr_value_t *v = weft__attrs_get(attrs, arg->type_list_attr);
    if (!v || (v->kind != WEFT_ATTR_LIST_TYPE && v->kind != WEFT_ATTR_LIST_EMPTY)) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Node '%s' (%s): attr '%s' (list of types for arg '%s') is missing",
                             node->name, node->op_name, arg->type_list_attr, arg->name);
    }
    *count = v->kind == WEFT_ATTR_LIST_TYPE ? (int)v->u.list.n : 0;
    for (int k = 0; types && k < *count; k++)
      types[k] = (weft_dtype_t)((int)v->u.list.type[k] + (arg->is_ref ? WEFT_DT_REF_OFFSET : 0));
    return NULL;
  }
  int n = 1;
  if (arg->number_attr) {
    int64_t want = attr_int_or(attrs, arg->number_attr, -1);
    if (want < 0 || want > 1000000) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Node '%s' (%s): attr '%s' (length of arg '%s') is missing or invalid",
                             node->name, node->op_name, arg->number_attr, arg->name);
    }
    n = (int)want;
  }
  int dtype = arg->fixed_type;
  if (arg->type_attr) {
    const weft__attr_value_t *v = weft__attrs_get(attrs, arg->type_attr);
    if (!v || v->kind != WEFT_ATTR_TYPE) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Node '%s' (%s): type attr '%s' for arg '%s' is missing", node->name,
                             node->op_name, arg->type_attr, arg->name);
    }
    dtype = v->u.type;
  }
  if (arg->is_ref) dtype += WEFT_DT_REF_OFFSET;
  *count = n;
  if (uniform) *uniform = dtype;
  for (int k = 0; types && k < n; k++) types[k] = (weft_dtype_t)dtype;
  return NULL;
}

/* Checks every declared attr is present (defaults filled in) with the declared type and value
 * constraints. */
static weft_status_t *check_attrs(weft_node_t *node) {
  const weft__op_def_t *def = node->def;
  for (guint k = 0; k < def->attrs->len; k++) {
    const weft__attr_def_t *ad = def->attrs->pdata[k];
    weft__attr_value_t *v = (weft__attr_value_t *)weft__attrs_get(node->attrs, ad->name);
    if (!v) {
      if (!ad->default_value) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "Node '%s' (%s) is missing required attr '%s' (%s)", node->name,
                               node->op_name, ad->name, ad->type);
      }
      v = weft__attr_value_copy(ad->default_value);
      weft__attrs_set(node->attrs, ad->name, v);
    }
    weft__attr_kind_t want = ad->kind;
    if (want != WEFT_ATTR_NONE) {
      /* An empty list from a GraphDef takes its element type from the definition. */
      if (v->kind == WEFT_ATTR_LIST_EMPTY && want >= WEFT_ATTR_LIST_INT) v->kind = want;
      if (v->kind != want) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "Node '%s' (%s): attr '%s' should be of type %s", node->name,
                               node->op_name, ad->name, ad->type);
      }
    }
    if (ad->allowed_types && v->kind == WEFT_ATTR_TYPE) {
      bool ok = false;
      for (size_t j = 0; j < ad->n_allowed_types; j++) ok |= ad->allowed_types[j] == v->u.type;
      if (!ok) {
        GString *allowed = g_string_new(NULL);
        for (size_t j = 0; j < ad->n_allowed_types; j++)
          g_string_append_printf(allowed, "%s%s", j ? ", " : "",
                                 weft_dtype_name(ad->allowed_types[j]));
        weft_status_t *st = weft_status_new(
            WEFT_INVALID_ARGUMENT,
            "Value for attr '%s' of %s is not in the list of allowed values: %s (node '%s', op %s)",
            ad->name, weft_dtype_name(v->u.type), allowed->str, node->name, node->op_name);
        g_string_free(allowed, TRUE);
        return st;
      }
    }
    if (ad->has_minimum) {
      int64_t have = v->kind == WEFT_ATTR_INT ? v->u.i : (int64_t)v->u.list.n;
      if (v->kind == WEFT_ATTR_INT || v->kind >= WEFT_ATTR_LIST_INT) {
        if (have < ad->minimum) {
          return weft_status_new(WEFT_INVALID_ARGUMENT,
                                 "Node '%s' (%s): attr '%s' is %" G_GINT64_FORMAT
                                 ", less than its minimum %" G_GINT64_FORMAT,
                                 node->name, node->op_name, ad->name, have, ad->minimum);
        }
      }
    }
  }
  return NULL;
}

/* What count_args learnt per arg, so that fill_args need not look the attrs up again (for ops of
 * up to MAX_COUNTED args). */
enum { MAX_COUNTED = 16 };
typedef struct arg_counts {
  int count[MAX_COUNTED];
  int uniform[MAX_COUNTED]; /* see arg_types */
} arg_counts_t;

/* The number of values the args stand for in all. */
static weft_status_t *count_args(const weft_node_t *node, const GPtrArray *args, int *n_total,
                                 arg_counts_t *counts) {
  *n_total = 0;
  for (guint k = 0; k < args->len; k++) {
    int n = 0, uniform = -1;
    weft_status_t *st = arg_types(node, args->pdata[k], NULL, &n, &uniform);
    if (st) return st;
    if (k < MAX_COUNTED) {
      counts->count[k] = n;
      counts->uniform[k] = uniform;
    }
    *n_total += n;
  }
  return NULL;
}

/* Fills the flat types and each arg's first index (one extra entry: the total). */
static void fill_args(const weft_node_t *node, const GPtrArray *args, const arg_counts_t *counts,
                      weft_dtype_t *types, int *starts) {
  int at = 0;
  for (guint k = 0; k < args->len; k++) {
    int n = 0;
    starts[k] = at;
    if (k < MAX_COUNTED && counts->uniform[k] >= 0) {
      n = counts->count[k];
      for (int j = 0; j < n; j++) types[at + j] = (weft_dtype_t)counts->uniform[k];
    } else {
      weft_status_free(arg_types(node, args->pdata[k], types + at, &n, NULL)); /* counted */
    }
    at += n;
  }
  starts[args->len] = at;
}

#define ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* The node as one allocation: the struct, its arrays, its output shapes (each only as long as
 * the node's highest rank: a scalar's takes an int, not 72 bytes), its attrs packed and its
 * name. `probe` is the node checked on the stack: its arrays and `shapes` are copied, its attrs
 * are taken over. A million-node graph made about ten allocations per node. */
static weft_node_t *alloc_node(const weft_node_t *probe, const weft__shape_t *shapes) {
  const weft__op_def_t *def = probe->def;
  int n_inputs = probe->n_inputs, n_outputs = probe->n_outputs, stride = 0;
  for (int k = 0; k < n_outputs; k++) stride = MAX(stride, shapes[k].rank);
  size_t head = ALIGN8(sizeof(weft_node_t));
  size_t edges = sizeof(weft__edge_t) * (size_t)n_inputs;
  size_t dims = sizeof(int64_t) * (size_t)n_outputs * (size_t)stride;
  size_t attrs = weft__attrs_packed_size(probe->attrs, def);
  size_t in_types = sizeof(weft_dtype_t) * (size_t)n_inputs;
  size_t in_starts = sizeof(int) * (def->inputs->len + 1);
  size_t out_types = sizeof(weft_dtype_t) * (size_t)n_outputs;
  size_t out_starts = sizeof(int) * (def->outputs->len + 1);
  size_t ranks = sizeof(int) * (size_t)n_outputs;
  size_t name = strlen(probe->name) + 1;
  size_t total = head + edges + dims + attrs + in_types + in_starts + out_types + out_starts +
                 ranks + name;
  char *block = g_malloc(total); /* not g_malloc0: calloc bypasses glibc's per-thread cache */
  weft_node_t *node = (weft_node_t *)(void *)block;
  *node = *probe;
  char *at = block + head;
  node->inputs = memcpy(at, probe->inputs, edges);
  at += edges;
  node->output_dims = (int64_t *)(void *)at;
  node->output_dims_stride = stride;
  for (int k = 0; k < n_outputs; k++)
    for (int j = 0; j < stride; j++)
      node->output_dims[(size_t)k * (size_t)stride + (size_t)j] =
          j < shapes[k].rank ? shapes[k].dims[j] : WEFT_DIM_UNKNOWN;
  at += dims;
  node->attrs = weft__attrs_pack(probe->attrs, at, def);
  at += attrs;
  node->input_types = memcpy(at, probe->input_types, in_types);
  at += in_types;
  node->input_arg_start = memcpy(at, probe->input_arg_start, in_starts);
  at += in_starts;
  node->output_types = memcpy(at, probe->output_types, out_types);
  at += out_types;
  node->output_arg_start = memcpy(at, probe->output_arg_start, out_starts);
  at += out_starts;
  node->output_ranks = (int *)(void *)at;
  for (int k = 0; k < n_outputs; k++) node->output_ranks[k] = shapes[k].rank;
  at += ranks;
  node->name = memcpy(at, probe->name, name);
  return node;
}

weft_status_t *weft__graph_add_node(weft_graph_t *g, const char *name, const char *op,
                                    const weft__edge_t *inputs, int n_inputs,
                                    weft_node_t *const *control_inputs, int n_control,
                                    const char *device, const weft_attrs_t *attrs,
                                    weft_node_t **out) {
  return add_node_taking_attrs(g, NULL, name, op, inputs, n_inputs, control_inputs, n_control,
                               device, weft__attrs_copy(attrs), out);
}

/* weft__graph_add_node with the attrs handed over (freed on failure): the op builder's own are
 * not copied. def: op's definition when the caller has looked it up already, else NULL. */
static weft_status_t *add_node_taking_attrs(weft_graph_t *g, const weft__op_def_t *def,
                                            const char *name, const char *op,
                                            const weft__edge_t *inputs, int n_inputs,
                                            weft_node_t *const *control_inputs, int n_control,
                                            const char *device, weft_attrs_t *attrs,
                                            weft_node_t **out) {
  if (!def) {
    def = weft__op_registry_find_loading(g->ops, op);
  }
  if (!def) {
    weft__attrs_free(attrs);
    return weft_status_new(WEFT_NOT_FOUND, "Op type not registered '%s' (node '%s')", op, name);
  }
  if (!name || !*name) {
    weft__attrs_free(attrs);
    return weft_status_new(WEFT_INVALID_ARGUMENT, "A node of op %s has an empty name", op);
  }
  /* Checked first on a node on the stack: the attrs (defaults filled in) and the number of
   * inputs and outputs decide the size of the node's block. The op name is the definition's
   * (nodes already rely on the definition outliving them). */
  weft_node_t probe = {0};
  probe.graph = g;
  probe.name = (char *)name;
  probe.op_name = def->name;
  probe.def = def;
  probe.attrs = attrs;
  weft_status_t *st = check_attrs(&probe);
  int n_expected = 0, n_outputs = 0;
  arg_counts_t in_counts, out_counts;
  if (!st) st = count_args(&probe, def->inputs, &n_expected, &in_counts);
  if (!st && n_expected != n_inputs) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "Node '%s' (%s) has %d input%s but its op definition expects %d",
                         name, op, n_inputs, n_inputs == 1 ? "" : "s", n_expected);
  }
  if (!st) st = count_args(&probe, def->outputs, &n_outputs, &out_counts);
  if (st) {
    weft__attrs_free(attrs);
    return st;
  }
  /* The arrays are filled and checked and the output shapes inferred on the probe too, in
   * scratch memory (on the stack when small): the node's block is made last, sized for exactly
   * what it holds. */
  size_t n_in_starts = def->inputs->len + 1, n_out_starts = def->outputs->len + 1;
  size_t scratch_size = sizeof(weft__shape_t) * (size_t)n_outputs +
                        sizeof(weft__edge_t) * (size_t)n_inputs +
                        sizeof(weft_dtype_t) * (size_t)(n_inputs + n_outputs) +
                        sizeof(int) * (n_in_starts + n_out_starts);
  int64_t scratch_small[128];
  char *scratch = scratch_size <= sizeof scratch_small ? (char *)scratch_small
                                                       : g_malloc(scratch_size);
  weft__shape_t *shapes = (weft__shape_t *)(void *)scratch;
  char *at = scratch + sizeof(weft__shape_t) * (size_t)n_outputs;
  probe.inputs = (weft__edge_t *)(void *)at;
  at += sizeof(weft__edge_t) * (size_t)n_inputs;
  probe.input_types = (weft_dtype_t *)(void *)at;
  at += sizeof(weft_dtype_t) * (size_t)n_inputs;
  probe.output_types = (weft_dtype_t *)(void *)at;
  at += sizeof(weft_dtype_t) * (size_t)n_outputs;
  probe.input_arg_start = (int *)(void *)at;
  probe.output_arg_start = probe.input_arg_start + n_in_starts;
  probe.n_inputs = n_inputs;
  probe.n_outputs = n_outputs;
  fill_args(&probe, def->inputs, &in_counts, probe.input_types, probe.input_arg_start);
  fill_args(&probe, def->outputs, &out_counts, probe.output_types, probe.output_arg_start);
  for (int k = 0; k < n_inputs && !st; k++) {
    const weft__edge_t *e = &inputs[k];
    if (!e->src || e->src_index < 0 || e->src_index >= e->src->n_outputs) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s): input %d is not a valid output",
                           name, op, k);
      break;
    }
    probe.inputs[k] = *e;
    int have = e->src->output_types[e->src_index];
    int want = probe.input_types[k];
    bool ok = have == want || (weft__dtype_is_ref(have) && !weft__dtype_is_ref(want) &&
                               weft__dtype_base(have) == (weft_dtype_t)want);
    if (!ok) {
      st = weft_status_new(
          WEFT_INVALID_ARGUMENT,
          "Input %d of node '%s' (%s) was expected to be %s%s but is %s%s (from '%s:%d')", k,
          name, op, weft__dtype_is_ref(want) ? "a reference to " : "",
          weft_dtype_name(weft__dtype_base(want)),
          weft__dtype_is_ref(have) ? "a reference to " : "",
          weft_dtype_name(weft__dtype_base(have)), e->src->name, e->src_index);
    }
  }

  /* The colocation group, from _class "loc:@x" (the first entry names the group). */
  const weft__attr_value_t *cls = st ? NULL : weft__attrs_get(probe.attrs, "_class");
  if (cls && cls->kind == WEFT_ATTR_LIST_STRING) {
    for (size_t k = 0; k < cls->u.list.n; k++) {
      if (g_str_has_prefix(cls->u.list.s[k].data, "loc:@")) {
        probe.colocation_group = g_strdup(cls->u.list.s[k].data + 5);
        break;
      }
    }
  }

  if (!st) st = weft__node_infer_shapes(&probe, shapes);
  weft_node_t *node = st ? NULL : alloc_node(&probe, shapes);
  if (scratch != (char *)scratch_small) g_free(scratch);
  if (st) {
    g_free(probe.colocation_group);
    weft__attrs_free(attrs);
    return st;
  }
  node->requested_device = device && *device ? g_strdup(device) : no_device;
  node->control_inputs = n_control > 0 ? g_ptr_array_new() : no_controls();
  for (int k = 0; k < n_control; k++) {
    if (control_inputs[k] && !g_ptr_array_find(node->control_inputs, control_inputs[k], NULL))
      g_ptr_array_add(node->control_inputs, control_inputs[k]);
  }

  g_mutex_lock(&g->lock);
  if (g_hash_table_contains(g->by_name, node)) {
    g_mutex_unlock(&g->lock);
    st = weft_status_new(WEFT_ALREADY_EXISTS, "Duplicate node name in graph: '%s'", node->name);
    node_free(node);
    return st;
  }
  node->id = (int)g->nodes->len;
  g_ptr_array_add(g->nodes, node);
  g_hash_table_add(g->by_name, node); /* unique_name looks here too */
  g_atomic_int_inc(&g->version);
  g_mutex_unlock(&g->lock);
  if (out) *out = node;
  return NULL;
}

static bool arg_range(const GPtrArray *args, const int *starts, const char *arg_name, int *start,
                      int *end) {
  for (guint k = 0; k < args->len; k++) {
    const weft__arg_def_t *a = args->pdata[k];
    if (strcmp(a->name, arg_name) == 0) {
      *start = starts[k];
      *end = starts[k + 1];
      return true;
    }
  }
  return false;
}

bool weft__node_input_arg_range(const weft_node_t *node, const char *arg_name, int *start,
                                int *end) {
  return arg_range(node->def->inputs, node->input_arg_start, arg_name, start, end);
}

bool weft__node_output_arg_range(const weft_node_t *node, const char *arg_name, int *start,
                                 int *end) {
  return arg_range(node->def->outputs, node->output_arg_start, arg_name, start, end);
}
