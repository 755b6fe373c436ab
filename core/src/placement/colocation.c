/* Colocation closure: the nodes a placement must cover so that a colocation group is placed as a
 * whole. A session places only what a step needs, but a variable placed for its initializer
 * alone could land on a device that lacks kernels for the ops that update it later (a gpu-like
 * backend without Apply* kernels); TensorFlow avoids that by placing the whole graph. Weft places
 * the step's nodes plus every not-yet-placed node that shares a colocation group with one of
 * them (through ref edges or _class "loc:@x"), which keeps groups whole without placing
 * unrelated parts of the graph. */
#include "placement_internal.h"

static int find_root(int *parent, int x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

static void join(int *parent, int a, int b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a != b) parent[a] = b;
}

static void join_named(weft_graph_t *graph, int *parent, int n, int k, const char *name) {
  weft_node_t *with = name != NULL ? weft_graph_node(graph, name) : NULL;
  if (with != NULL && with->id < n) join(parent, k, with->id);
}

/* Every "loc:@x" entry of _class joins, as in the placer: the first entry alone (the node's
 * colocation_group) would miss a node that ties two groups together. An unknown name is the
 * placer's error to report, not the closure's. */
static void join_class(weft_graph_t *graph, int *parent, int n, int k, const weft_node_t *node) {
  const weft__attr_value_t *cls = node->attrs != NULL ? weft__attrs_get(node->attrs, "_class")
                                                      : NULL;
  if (cls != NULL && cls->kind == WEFT_ATTR_LIST_STRING) {
    for (size_t i = 0; i < cls->u.list.n; i++) {
      const char *entry = cls->u.list.s[i].data;
      if (entry != NULL && g_str_has_prefix(entry, "loc:@"))
        join_named(graph, parent, n, k, entry + 5);
    }
  } else if (cls != NULL && cls->kind == WEFT_ATTR_STRING && cls->u.s.data != NULL &&
             g_str_has_prefix(cls->u.s.data, "loc:@")) {
    join_named(graph, parent, n, k, cls->u.s.data + 5);
  }
  if (node->colocation_group != NULL && node->colocation_group[0] != '\0')
    join_named(graph, parent, n, k, node->colocation_group);
}

bool weft__input_is_resource_handle(const weft_node_t *node, int i) {
  static const char *const pass[] = {"Identity", "Switch", "Enter", "Exit", "NextIteration"};
  const weft_node_t *src = i < node->n_inputs ? node->inputs[i].src : NULL;
  /* Bounded: a NextIteration cycle must not loop forever. */
  for (int hops = 0; src != NULL && hops < 64; hops++) {
    int out = node->inputs[i].src_index;
    if (out < 0 || out >= src->n_outputs ||
        weft__dtype_base(src->output_types[out]) != WEFT_DT_STRING)
      return false;
    if (strcmp(src->op_name, "VarHandleOp") == 0) return true;
    bool through = false;
    for (size_t k = 0; k < G_N_ELEMENTS(pass) && !through; k++)
      through = strcmp(src->op_name, pass[k]) == 0 && src->n_inputs > 0;
    if (!through) return false;
    node = src;
    i = 0;
    src = node->inputs[0].src;
  }
  return false;
}

GPtrArray *weft__colocation_closure(weft_graph_t *graph, GPtrArray *nodes, GHashTable *placement) {
  int n = weft_graph_num_nodes(graph);
  int *parent = g_new(int, n > 0 ? n : 1);
  for (int k = 0; k < n; k++) parent[k] = k;
  for (int k = 0; k < n; k++) {
    weft_node_t *node = weft_graph_node_at(graph, k);
    for (int i = 0; i < node->n_inputs; i++) {
      if ((weft__dtype_is_ref(node->input_types[i]) || weft__input_is_resource_handle(node, i)) &&
          node->inputs[i].src->id < n)
        join(parent, k, node->inputs[i].src->id);
    }
    join_class(graph, parent, n, k, node);
  }
  GHashTable *wanted_roots = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTable *included = g_hash_table_new(g_direct_hash, g_direct_equal);
  GPtrArray *out = g_ptr_array_new();
  for (guint k = 0; k < nodes->len; k++) {
    weft_node_t *node = nodes->pdata[k];
    g_ptr_array_add(out, node);
    g_hash_table_add(included, node);
    if (node->id < n) g_hash_table_add(wanted_roots, GINT_TO_POINTER(find_root(parent, node->id)));
  }
  for (int k = 0; k < n; k++) {
    weft_node_t *node = weft_graph_node_at(graph, k);
    if (g_hash_table_contains(included, node)) continue;
    if (placement && g_hash_table_contains(placement, node->name)) continue;
    if (g_hash_table_contains(wanted_roots, GINT_TO_POINTER(find_root(parent, k))))
      g_ptr_array_add(out, node);
  }
  g_hash_table_destroy(wanted_roots);
  g_hash_table_destroy(included);
  g_free(parent);
  return out;
}
