/* Step planning for every runner of steps (the local session, the distributed master and the
 * worker): resolving a step's names, pruning the graph to what the step needs, the plan cache and
 * a node's kernel instance. Runners differ in how they place nodes and what a plan holds; what
 * they share is here, so a change to pruning changes local and distributed steps alike. */
#include "plan_internal.h"

#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Pruning */

static bool is_fed(const weft__feed_t *feeds, int n, const weft_node_t *node, int index) {
  for (int k = 0; k < n; k++)
    if (feeds[k].node == node && feeds[k].index == index) return true;
  return false;
}

bool weft__node_fully_fed(const weft__feed_t *feeds, int n, const weft_node_t *node) {
  if (node->n_outputs == 0) return false;
  for (int k = 0; k < node->n_outputs; k++)
    if (!is_fed(feeds, n, node, k)) return false;
  return true;
}

static gint compare_node_ids(gconstpointer a, gconstpointer b) {
  const weft_node_t *x = *(weft_node_t *const *)a;
  const weft_node_t *y = *(weft_node_t *const *)b;
  return (x->id > y->id) - (x->id < y->id);
}

GPtrArray *weft__step_needed_nodes(const weft__step_spec_t *spec) {
  const weft__feed_t *feeds = spec->feeds;
  int n_feeds = spec->n_feeds;
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  GPtrArray *stack = g_ptr_array_new();
  for (int k = 0; k < spec->n_fetches; k++) {
    if (!is_fed(feeds, n_feeds, spec->fetches[k].node, spec->fetches[k].index))
      g_ptr_array_add(stack, (gpointer)spec->fetches[k].node);
  }
  for (int k = 0; k < spec->n_targets; k++) g_ptr_array_add(stack, spec->targets[k]);
  while (stack->len) {
    weft_node_t *n = g_ptr_array_steal_index(stack, stack->len - 1);
    if (g_hash_table_contains(seen, n)) continue;
    g_hash_table_add(seen, n);
    for (int i = 0; i < n->n_inputs; i++) {
      const weft__edge_t *e = &n->inputs[i];
      if (!is_fed(feeds, n_feeds, e->src, e->src_index)) g_ptr_array_add(stack, e->src);
    }
    for (guint c = 0; c < n->control_inputs->len; c++) {
      weft_node_t *ctl = n->control_inputs->pdata[c];
      if (!weft__node_fully_fed(feeds, n_feeds, ctl)) g_ptr_array_add(stack, ctl);
    }
  }
  g_ptr_array_free(stack, TRUE);
  GPtrArray *nodes = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, seen);
  while (g_hash_table_iter_next(&it, &key, NULL)) g_ptr_array_add(nodes, key);
  g_hash_table_destroy(seen);
  /* Creation order is a topological order: inputs exist before the nodes that use them. */
  g_ptr_array_sort(nodes, compare_node_ids);
  return nodes;
}

weft_status_t *weft__check_unfed_placeholders(GPtrArray *nodes) {
  for (guint k = 0; k < nodes->len; k++) {
    const weft_node_t *n = nodes->pdata[k];
    if (strcmp(n->op_name, "Placeholder") != 0) continue;
    weft__shape_t declared = weft__node_shape(n, 0);
    char *shape = weft__shape_to_string(declared.rank, declared.dims);
    weft_status_t *st = weft_status_new(
        WEFT_INVALID_ARGUMENT,
        "You must feed a value for placeholder tensor '%s' with dtype %s and shape %s", n->name,
        weft_dtype_name(weft__dtype_base(n->output_types[0])), shape);
    g_free(shape);
    return st;
  }
  return NULL;
}

weft_status_t *weft__step_prune(const weft__step_spec_t *spec, GPtrArray **nodes) {
  *nodes = weft__step_needed_nodes(spec);
  weft_status_t *st = weft__check_unfed_placeholders(*nodes);
  if (st) {
    g_ptr_array_free(*nodes, TRUE);
    *nodes = NULL;
  }
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Kernels */

weft_status_t *weft__kernel_instance_for_node(const weft_node_t *n, weft__device_t *dev,
                                              const weft_device_options_t *dopts,
                                              weft__kernel_instance_t **out) {
  weft_status_t *st = weft__device_open(dev, dopts);
  if (st) return st;
  const weft__kernel_t *kernel = weft__kernel_lookup(n->op_name, dev->type, n->attrs);
  if (!kernel) {
    char *avail = weft__kernel_describe_available(n->op_name);
    st = weft_status_new(WEFT_NOT_FOUND, "No kernel for node '%s' (op %s) on %s; %s", n->name,
                         n->op_name, dev->name, avail);
    g_free(avail);
    return st;
  }
  return weft__kernel_instance_new(n, kernel, dev, out);
}

/* ---------------------------------------------------------------------------------------------
 * Resolving a step */

weft_status_t *weft__check_feed(const weft_node_t *node, int index, const char *name,
                                const weft_tensor_t *t) {
  if (!t) return weft_status_new(WEFT_INVALID_ARGUMENT, "Feed '%s' has no tensor", name);
  weft_dtype_t want = weft__dtype_base(node->output_types[index]);
  if (t->dtype != want) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Feed '%s': expected a tensor of type %s but got %s", name,
                           weft_dtype_name(want), weft_dtype_name(t->dtype));
  }
  const weft__shape_t declared = weft__node_shape(node, index), *shape = &declared;
  bool ok = shape->rank < 0 || shape->rank == t->rank;
  for (int k = 0; ok && shape->rank >= 0 && k < t->rank; k++)
    ok = shape->dims[k] < 0 || shape->dims[k] == t->dims[k];
  if (!ok) {
    char *want_s = weft__shape_to_string(shape->rank, shape->dims);
    char *have_s = weft__shape_to_string(t->rank, t->dims);
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                        "Feed '%s': cannot feed a value of shape %s to a tensor "
                                        "of shape %s", name, have_s, want_s);
    g_free(want_s);
    g_free(have_s);
    return st;
  }
  return NULL;
}

weft_status_t *weft__step_spec_resolve(weft_graph_t *graph, const char *const *feed_names,
                                       weft_tensor_t *const *feed_values, int n_feeds,
                                       const char *const *fetch_names, int n_fetches,
                                       const char *const *target_names, int n_targets,
                                       weft__step_spec_t *spec) {
  memset(spec, 0, sizeof *spec);
  if (n_feeds < 0 || n_fetches < 0 || n_targets < 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: negative count");
  }
  const char *const *lists[3] = {feed_names, fetch_names, target_names};
  const int counts[3] = {n_feeds, n_fetches, n_targets};
  const char *what[3] = {"feed", "fetch", "target"};
  for (int l = 0; l < 3; l++) {
    for (int k = 0; k < counts[l]; k++) {
      if (!lists[l] || !lists[l][k])
        return weft_status_new(WEFT_INVALID_ARGUMENT, "weft_session_run: %s name %d is NULL",
                               what[l], k);
    }
  }
  weft_status_t *st = NULL;
  spec->feeds = g_new0(weft__feed_t, n_feeds + 1);
  spec->fetches = g_new0(weft__fetch_t, n_fetches + 1);
  spec->targets = g_new0(weft_node_t *, n_targets + 1);
  spec->n_feeds = n_feeds;
  spec->n_fetches = n_fetches;
  spec->n_targets = n_targets;
  for (int k = 0; k < n_feeds && !st; k++) {
    weft_output_t o;
    st = weft_graph_find_output(graph, feed_names[k], &o);
    if (!st) st = weft__check_feed(o.node, o.index, feed_names[k], feed_values[k]);
    if (!st) {
      for (int j = 0; j < k && !st; j++) {
        if (spec->feeds[j].node == o.node && spec->feeds[j].index == o.index)
          st = weft_status_new(WEFT_INVALID_ARGUMENT, "Tensor '%s' is fed more than once",
                               feed_names[k]);
      }
      spec->feeds[k].node = o.node;
      spec->feeds[k].index = o.index;
      spec->feeds[k].tensor = feed_values[k];
    }
  }
  for (int k = 0; k < n_fetches && !st; k++) {
    weft_output_t o;
    st = weft_graph_find_output(graph, fetch_names[k], &o);
    if (!st) {
      spec->fetches[k].node = o.node;
      spec->fetches[k].index = o.index;
    }
  }
  for (int k = 0; k < n_targets && !st; k++) {
    spec->targets[k] = weft_graph_node(graph, target_names[k]);
    if (!spec->targets[k]) {
      /* Accept "name:0" as TensorFlow does for targets given as tensors. */
      weft_output_t o;
      weft_status_t *again = weft_graph_find_output(graph, target_names[k], &o);
      if (again) {
        weft_status_free(again);
        st = weft_status_new(WEFT_NOT_FOUND, "Target '%s' is not a node in the graph",
                             target_names[k]);
      } else {
        spec->targets[k] = o.node;
      }
    }
  }
  if (!st && n_fetches == 0 && n_targets == 0) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "Nothing to run: no fetches and no targets");
  }
  if (st) weft__step_spec_clear(spec);
  return st;
}

void weft__step_spec_clear(weft__step_spec_t *spec) {
  g_free(spec->feeds);
  g_free(spec->fetches);
  g_free(spec->targets);
  memset(spec, 0, sizeof *spec);
}

/* Appends "name:index," without printf: this runs on every step. */
static void append_tensor_key(GString *sig, const char *name, int index) {
  char digits[16];
  int n = 0;
  unsigned v = index < 0 ? 0u : (unsigned)index;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v && n < (int)sizeof digits);
  g_string_append(sig, name);
  g_string_append_c(sig, ':');
  while (n > 0) g_string_append_c(sig, digits[--n]);
  g_string_append_c(sig, ',');
}

char *weft__step_spec_signature(const weft__step_spec_t *spec) {
  GString *sig = g_string_sized_new(64);
  for (int k = 0; k < spec->n_feeds; k++)
    append_tensor_key(sig, spec->feeds[k].node->name, spec->feeds[k].index);
  g_string_append_c(sig, '|');
  for (int k = 0; k < spec->n_fetches; k++)
    append_tensor_key(sig, spec->fetches[k].node->name, spec->fetches[k].index);
  g_string_append_c(sig, '|');
  for (int k = 0; k < spec->n_targets; k++) {
    g_string_append(sig, spec->targets[k]->name);
    g_string_append_c(sig, ',');
  }
  return g_string_free(sig, FALSE);
}

/* ---------------------------------------------------------------------------------------------
 * The plan cache */

struct weft__plan_cache {
  GHashTable *plans; /* signature -> plan */
};

weft__plan_cache_t *weft__plan_cache_new(GDestroyNotify free_plan) {
  weft__plan_cache_t *c = g_new0(weft__plan_cache_t, 1);
  c->plans = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, free_plan);
  return c;
}

void weft__plan_cache_free(weft__plan_cache_t *cache) {
  if (!cache) return;
  g_hash_table_destroy(cache->plans);
  g_free(cache);
}

weft_status_t *weft__plan_cache_get(weft__plan_cache_t *cache, const weft__step_spec_t *spec,
                                    weft__plan_build_fn build, void *user_data, void **plan) {
  char *sig = weft__step_spec_signature(spec);
  *plan = g_hash_table_lookup(cache->plans, sig);
  if (*plan) {
    g_free(sig);
    return NULL;
  }
  weft_status_t *st = build(user_data, spec, plan);
  if (st) {
    *plan = NULL;
    g_free(sig);
    return st;
  }
  g_hash_table_insert(cache->plans, sig, *plan);
  return NULL;
}

void weft__plan_cache_foreach(weft__plan_cache_t *cache, GFunc fn, void *user_data) {
  GHashTableIter it;
  gpointer plan;
  g_hash_table_iter_init(&it, cache->plans);
  while (g_hash_table_iter_next(&it, NULL, &plan)) fn(plan, user_data);
}

void weft__plan_cache_clear(weft__plan_cache_t *cache) {
  g_hash_table_remove_all(cache->plans);
}

/* ---------------------------------------------------------------------------------------------
 * The step memo */

#define STEP_MEMO_SLOTS 4

typedef struct memo_entry {
  void *plan; /* NULL: the slot is empty */
  gint graph_version;
  int n_feeds, n_fetches, n_targets;
  char **names;        /* feeds, then fetches, then targets */
  weft__feed_t *feeds; /* n_feeds, tensors unset */
} memo_entry_t;

struct weft__step_memo {
  memo_entry_t slots[STEP_MEMO_SLOTS];
  int next; /* the slot the next store replaces */
};

weft__step_memo_t *weft__step_memo_new(void) {
  return g_new0(weft__step_memo_t, 1);
}

static void memo_entry_clear(memo_entry_t *e) {
  if (e->names) {
    for (int k = 0; k < e->n_feeds + e->n_fetches + e->n_targets; k++) g_free(e->names[k]);
  }
  g_free(e->names);
  g_free(e->feeds);
  memset(e, 0, sizeof *e);
}

void weft__step_memo_clear(weft__step_memo_t *memo) {
  for (int k = 0; k < STEP_MEMO_SLOTS; k++) memo_entry_clear(&memo->slots[k]);
  memo->next = 0;
}

void weft__step_memo_free(weft__step_memo_t *memo) {
  if (!memo) return;
  weft__step_memo_clear(memo);
  g_free(memo);
}

static bool names_equal(char *const *have, const char *const *want, int n) {
  if (n > 0 && !want) return false; /* resolving it gives the error */
  for (int k = 0; k < n; k++)
    if (!want[k] || strcmp(have[k], want[k]) != 0) return false;
  return true;
}

void *weft__step_memo_find(weft__step_memo_t *memo, const weft_graph_t *graph,
                           const char *const *feed_names, int n_feeds,
                           const char *const *fetch_names, int n_fetches,
                           const char *const *target_names, int n_targets,
                           const weft__feed_t **feeds) {
  gint version = g_atomic_int_get(&((weft_graph_t *)graph)->version);
  for (int k = 0; k < STEP_MEMO_SLOTS; k++) {
    const memo_entry_t *e = &memo->slots[k];
    if (!e->plan || e->graph_version != version || e->n_feeds != n_feeds ||
        e->n_fetches != n_fetches || e->n_targets != n_targets)
      continue;
    if (names_equal(e->names, feed_names, n_feeds) &&
        names_equal(e->names + n_feeds, fetch_names, n_fetches) &&
        names_equal(e->names + n_feeds + n_fetches, target_names, n_targets)) {
      *feeds = e->feeds;
      return e->plan;
    }
  }
  return NULL;
}

void weft__step_memo_store(weft__step_memo_t *memo, const weft_graph_t *graph,
                           const char *const *feed_names, const char *const *fetch_names,
                           const char *const *target_names, const weft__step_spec_t *spec,
                           void *plan) {
  memo_entry_t *e = &memo->slots[memo->next];
  memo->next = (memo->next + 1) % STEP_MEMO_SLOTS;
  memo_entry_clear(e);
  e->graph_version = g_atomic_int_get(&((weft_graph_t *)graph)->version);
  e->n_feeds = spec->n_feeds;
  e->n_fetches = spec->n_fetches;
  e->n_targets = spec->n_targets;
  int n = spec->n_feeds + spec->n_fetches + spec->n_targets;
  e->names = g_new(char *, n > 0 ? n : 1);
  for (int k = 0; k < spec->n_feeds; k++) e->names[k] = g_strdup(feed_names[k]);
  for (int k = 0; k < spec->n_fetches; k++) e->names[spec->n_feeds + k] = g_strdup(fetch_names[k]);
  for (int k = 0; k < spec->n_targets; k++)
    e->names[spec->n_feeds + spec->n_fetches + k] = g_strdup(target_names[k]);
  e->feeds = g_new0(weft__feed_t, spec->n_feeds > 0 ? spec->n_feeds : 1);
  for (int k = 0; k < spec->n_feeds; k++) {
    e->feeds[k].node = spec->feeds[k].node;
    e->feeds[k].index = spec->feeds[k].index;
  }
  e->plan = plan;
}
