/* fuse.c: the plan-time fusion pass. A chain of float32 elementwise ops placed on one CPU device,
 * each intermediate consumed only by the next op, becomes one _FusedElementwise node, whose CPU
 * kernel runs the chain block by block so the chain reads and writes memory once (TensorFlow's
 * grappler remapper and XLA fuse the same chains). The user's graph is never changed: the fused
 * nodes live in a private graph that the plan owns, and the executor finds a fused chain's last
 * node under the fused node (weft__executor_params_t.aliases). docs/performance.md, "Fusion". */
#include "fuse_internal.h"
#include "frames_internal.h"

#include <stdlib.h>
#include <string.h>

/* The longest chain one fused node runs; a longer one is split (its attrs and operand list stay
 * small, and a chain that long gains nothing more from one pass). */
#define FUSE_MAX_OPS 32
/* The smallest output a fused node has: 16K floats (64 KiB), from where the intermediates of an
 * unfused chain stop fitting in L1 and L2 traffic starts to show. */
#define FUSE_MIN_ELEMENTS 16384

struct weft__fusion {
  weft_graph_t *graph;           /* holds the fused nodes */
  GPtrArray *kernels;            /* weft__kernel_instance_t* of the fused nodes */
  GHashTable *aliases;           /* a chain's last node -> its fused node */
  GHashTable *fallbacks;         /* fused node -> weft__fused_fallback_t (owned) */
};

/* Unary ops the CPU plugin has float32 loops for (cpu_elementwise.c), float in, float out. */
static const char *const unary_ops[] = {
    "Neg",   "Abs",   "Square", "Sqrt",  "Rsqrt", "Exp",     "Log",       "Log1p",
    "Expm1", "Sign",  "Reciprocal", "Inv", "Floor", "Ceil",  "Round",     "Rint",
    "Sin",   "Cos",   "Tan",    "Asin",  "Acos",  "Atan",    "Sinh",      "Cosh",
    "Asinh", "Acosh", "Atanh",  "Tanh",  "Sigmoid", "Erf",   "Erfc",      "Lgamma",
    "Relu",  "Relu6", "Elu",    "Selu",  "LeakyRelu", "Softplus", "Softsign", NULL,
};
static const char *const binary_ops[] = {
    "Add", "AddV2", "BiasAdd", "Sub", "Mul", "Div", "RealDiv", "Maximum", "Minimum",
    "SquaredDifference", "Pow", NULL,
};

static bool in_list(const char *const *list, const char *op) {
  for (; *list; list++)
    if (strcmp(*list, op) == 0) return true;
  return false;
}

static bool shape_known(const weft__shape_t *s) {
  if (s->rank < 0) return false;
  for (int k = 0; k < s->rank; k++)
    if (s->dims[k] < 0) return false;
  return true;
}

/* Whether two shapes of known rank can be the same when the step runs: each dimension equal,
 * or unknown in either. */
static bool shape_may_equal(const weft__shape_t *a, const weft__shape_t *b) {
  if (a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] >= 0 && b->dims[k] >= 0 && a->dims[k] != b->dims[k]) return false;
  return true;
}

/* What one node would be in a chain: the input the chain flows through and, for a binary op,
 * its other input. */
typedef struct link {
  int main_input;
  int operand_input; /* -1: unary */
  bool unknown;      /* a shape it was judged on has an unknown dimension */
} link_t;

/* Whether `n` can be a member of a fused chain, and how. Its output must have x's shape: a
 * binary op's other input is then a scalar, a tensor of the same shape, or a row over the last
 * dimension (BiasAdd's bias, NHWC). Dimensions unknown until the step runs (a `[None, 784]`
 * input) count as fitting; the executor checks them when the step runs and runs the chain
 * unfused where they do not (weft__fused_fallback_t). */
static bool fusable(const weft_node_t *n, const weft__kernel_instance_t *k, link_t *l) {
  if (!k || !k->device || !k->device->type || strcmp(k->device->type, "CPU") != 0) return false;
  if (n->n_outputs != 1 || n->output_types[0] != WEFT_DT_FLOAT) return false;
  if (n->control_inputs->len) return false;
  /* Only tensors of a known size worth a pass over memory: a small chain gains nothing, and its
   * nodes keep their own step stats (a size known only at run time is judged then). */
  weft__shape_t shape = weft__node_shape(n, 0);
  if (shape.rank < 0) return false;
  bool unknown = !shape_known(&shape);
  int64_t elements = 1;
  for (int d = 0; d < shape.rank && !unknown; d++) elements *= shape.dims[d];
  if (!unknown && elements < FUSE_MIN_ELEMENTS) return false;
  for (int i = 0; i < n->n_inputs; i++)
    if (n->input_types[i] != WEFT_DT_FLOAT) return false; /* refs and other dtypes */
  const weft__shape_t out = shape;
  if (n->n_inputs == 1 && in_list(unary_ops, n->op_name)) {
    *l = (link_t){0, -1, unknown};
    return true;
  }
  if (n->n_inputs != 2 || !in_list(binary_ops, n->op_name)) return false;
  bool bias_add = strcmp(n->op_name, "BiasAdd") == 0;
  if (bias_add) {
    const weft__attr_value_t *f = weft__attrs_get(n->attrs, "data_format");
    if (f && f->kind == WEFT_ATTR_STRING && strcmp(f->u.s.data, "NHWC") != 0) return false;
  }
  weft__shape_t in[2];
  for (int i = 0; i < 2; i++) {
    in[i] = weft__node_shape(n->inputs[i].src, n->inputs[i].src_index);
    if (in[i].rank < 0) return false;
    unknown = unknown || !shape_known(&in[i]);
  }
  /* BiasAdd adds its input 1, a row, to its input 0 of rank >= 2, or fails. */
  for (int m = 0; m < (bias_add ? 1 : 2); m++) {
    const weft__shape_t *o = &in[1 - m];
    if (!shape_may_equal(&in[m], &out)) continue;
    int64_t last = out.rank >= 1 ? out.dims[out.rank - 1] : 0;
    bool row = o->rank == 1 && out.rank >= 1 &&
               (o->dims[0] < 0 || last < 0 || o->dims[0] == last);
    if (bias_add ? row && out.rank >= 2 : o->rank == 0 || shape_may_equal(o, &out) || row) {
      *l = (link_t){m, 1 - m, unknown};
      return true;
    }
  }
  return false;
}

typedef struct node_info {
  link_t link;
  bool fusable;
  int chain;     /* index of its chain, -1 none */
} node_info_t;

static void set_attr(weft_attrs_t *attrs, const char *name, weft__attr_value_t *v) {
  weft__attrs_set(attrs, name, v);
}

static void fallback_free(gpointer p) {
  weft__fused_fallback_t *fb = p;
  g_free(fb->members);
  g_free(fb);
}

/* The members of chain `members` as the executor runs them when the fused kernel cannot run
 * (weft__fused_fallback_t); operand_of[k]: the fused node's input feeding member k's operand. */
static weft__fused_fallback_t *new_fallback(const GPtrArray *members, const node_info_t *info,
                                            GHashTable *index_of,
                                            weft__kernel_instance_t *const *kernels,
                                            const int *operand_of) {
  weft__fused_fallback_t *fb = g_new0(weft__fused_fallback_t, 1);
  fb->n_members = (int)members->len;
  fb->members = g_new0(weft__fused_member_t, members->len);
  fb->min_elements = FUSE_MIN_ELEMENTS;
  for (guint k = 0; k < members->len; k++) {
    const weft_node_t *m = members->pdata[k];
    int at = GPOINTER_TO_INT(g_hash_table_lookup(index_of, m)) - 1;
    fb->members[k] = (weft__fused_member_t){m, kernels[at], info[at].link.main_input,
                                            operand_of[k], strcmp(m->op_name, "BiasAdd") == 0};
  }
  return fb;
}

/* The fused node of chain `members` (in order), built in f->graph; with the members' fallback
 * (registered in f) when a shape it was judged on is known only at run time. */
static weft_status_t *build_fused(weft__fusion_t *f, GPtrArray *members, node_info_t *info,
                                  GHashTable *index_of, weft__kernel_instance_t *const *kernels,
                                  weft_node_t **out) {
  int n = (int)members->len;
  GString *ops = g_string_new(NULL), *names = g_string_new(NULL);
  weft__attr_value_t *operand = weft__attr_value_new(WEFT_ATTR_LIST_INT);
  weft__attr_value_t *left = weft__attr_value_new(WEFT_ATTR_LIST_INT);
  weft__attr_value_t *alpha = weft__attr_value_new(WEFT_ATTR_LIST_FLOAT);
  operand->u.list.n = left->u.list.n = alpha->u.list.n = (size_t)n;
  operand->u.list.i = g_new0(int64_t, n);
  left->u.list.i = g_new0(int64_t, n);
  alpha->u.list.f = g_new0(float, n);
  weft__edge_t *inputs = g_new0(weft__edge_t, n + 1);
  int *operand_of = g_new0(int, n);
  bool unknown = false;
  int n_inputs = 1;
  for (int k = 0; k < n; k++) {
    const weft_node_t *m = members->pdata[k];
    const link_t *l = &info[GPOINTER_TO_INT(g_hash_table_lookup(index_of, m)) - 1].link;
    unknown = unknown || l->unknown;
    operand_of[k] = l->operand_input >= 0 ? n_inputs : -1;
    if (k == 0) inputs[0] = m->inputs[l->main_input];
    g_string_append_printf(ops, "%s%s", k ? ";" : "", m->op_name);
    g_string_append_printf(names, "%s%s", k ? ";" : "", m->name);
    operand->u.list.i[k] = -1;
    if (l->operand_input >= 0) {
      operand->u.list.i[k] = n_inputs - 1;
      left->u.list.i[k] = l->operand_input < l->main_input;
      inputs[n_inputs++] = m->inputs[l->operand_input];
    }
    const weft__attr_value_t *a = weft__attrs_get(m->attrs, "alpha");
    alpha->u.list.f[k] = a && a->kind == WEFT_ATTR_FLOAT ? a->u.f
                          : strcmp(m->op_name, "LeakyRelu") == 0 ? 0.2f : 0.0f;
  }
  weft_attrs_t *attrs = weft__attrs_new();
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
  v->u.type = WEFT_DT_FLOAT;
  set_attr(attrs, "T", v);
  v = weft__attr_value_new(WEFT_ATTR_INT);
  v->u.i = n_inputs - 1;
  set_attr(attrs, "N", v);
  v = weft__attr_value_new(WEFT_ATTR_STRING);
  v->u.s.len = ops->len;
  v->u.s.data = g_string_free(ops, FALSE);
  set_attr(attrs, "ops", v);
  v = weft__attr_value_new(WEFT_ATTR_STRING);
  v->u.s.len = names->len;
  v->u.s.data = g_string_free(names, FALSE);
  set_attr(attrs, "fused_nodes", v);
  set_attr(attrs, "operand", operand);
  set_attr(attrs, "operand_left", left);
  set_attr(attrs, "alpha", alpha);
  const weft_node_t *last = members->pdata[n - 1];
  /* Named as the chain's last node: step stats, traces and kernel errors name it. */
  weft_status_t *st = weft__graph_add_node(f->graph, last->name, "_FusedElementwise", inputs,
                                           n_inputs, NULL, 0, "", attrs, out);
  weft__attrs_free(attrs);
  g_free(inputs);
  if (!st && unknown)
    g_hash_table_insert(f->fallbacks, *out,
                        new_fallback(members, info, index_of, kernels, operand_of));
  g_free(operand_of);
  return st;
}

weft_status_t *weft__fuse_elementwise(const weft__executor_params_t *p,
                                      const weft_node_t *const *targets, int n_targets,
                                      const weft_device_options_t *dopts, GPtrArray **nodes_out,
                                      weft__kernel_instance_t ***kernels_out,
                                      weft__fusion_t **out) {
  *out = NULL;
  *nodes_out = NULL;
  *kernels_out = NULL;
  /* WEFT_NO_FUSION=contraction keeps the elementwise chains and turns off the contractions
   * (what the code before them did: docs/performance.md, "Fusion"); =constfold neither; any
   * other value both. */
  const char *off = getenv("WEFT_NO_FUSION");
  if (off && strcmp(off, "constfold") == 0) off = NULL; /* only the folding (constfold.c) */
  bool chains_only = off && strcmp(off, "contraction") == 0;
  if (weft__cf_needed(p) || (off && !chains_only)) return NULL;
  int n = (int)p->nodes->len;
  node_info_t *info = g_new0(node_info_t, n > 0 ? n : 1);
  /* pinned: fetched, fed, a target, or a control input (its output must exist); consumers: data
   * edges out of it inside the step (of them from output 0). */
  bool *pinned = g_new0(bool, n > 0 ? n : 1);
  int *consumers = g_new0(int, n > 0 ? n : 1), *consumers_of_0 = g_new0(int, n > 0 ? n : 1);
  GHashTable *consumer_of =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_ptr_array_unref);
  GHashTable *index_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int k = 0; k < n; k++) {
    g_hash_table_insert(index_of, p->nodes->pdata[k], GINT_TO_POINTER(k + 1));
    info[k].chain = -1;
    info[k].fusable = fusable(p->nodes->pdata[k], p->kernels[k], &info[k].link);
  }
  for (int k = 0; k < n; k++) {
    const weft_node_t *nd = p->nodes->pdata[k];
    for (int i = 0; i < nd->n_inputs; i++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, nd->inputs[i].src)) - 1;
      if (src < 0) continue;
      consumers[src]++;
      if (nd->inputs[i].src_index == 0) consumers_of_0[src]++;
      GPtrArray *c = g_hash_table_lookup(consumer_of, nd->inputs[i].src);
      if (!c) g_hash_table_insert(consumer_of, nd->inputs[i].src, c = g_ptr_array_new());
      g_ptr_array_add(c, (gpointer)nd);
    }
    for (guint c = 0; c < nd->control_inputs->len; c++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, nd->control_inputs->pdata[c])) - 1;
      if (src >= 0) pinned[src] = true;
    }
  }
  for (int f = 0; f < p->n_fetches; f++) {
    int k = GPOINTER_TO_INT(g_hash_table_lookup(index_of, p->fetches[f].node)) - 1;
    if (k >= 0) pinned[k] = true;
  }
  for (int f = 0; f < p->n_feeds; f++) {
    int k = GPOINTER_TO_INT(g_hash_table_lookup(index_of, p->feeds[f].node)) - 1;
    if (k >= 0) pinned[k] = true;
  }
  for (int t = 0; t < n_targets; t++) {
    int k = GPOINTER_TO_INT(g_hash_table_lookup(index_of, targets[t])) - 1;
    if (k >= 0) pinned[k] = true;
  }
  /* Contractions first: their BiasAdd and activation then never start an elementwise chain. */
  weft__fuse_view_t view = {p, index_of, pinned, consumers, consumers_of_0, consumer_of};
  GPtrArray *groups = chains_only
                         ? g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref)
                         : weft__fuse_find_contractions(&view);
  for (guint g = 0; g < groups->len; g++) {
    GPtrArray *members = groups->pdata[g];
    for (guint m = 0; m < members->len; m++)
      info[GPOINTER_TO_INT(g_hash_table_lookup(index_of, members->pdata[m])) - 1].fusable = false;
  }

  /* Chains grow in topological order: a node joins the chain of its main input's producer when
   * that producer is the chain's end, feeds nothing else, and runs on the same device. */
  GPtrArray *chains = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (int k = 0; k < n; k++) {
    if (!info[k].fusable) continue;
    const weft_node_t *nd = p->nodes->pdata[k];
    const weft__edge_t *e = &nd->inputs[info[k].link.main_input];
    int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, e->src)) - 1;
    bool fed = false;
    for (int f = 0; f < p->n_feeds; f++)
      if (p->feeds[f].node == e->src && p->feeds[f].index == e->src_index) fed = true;
    if (src >= 0 && !fed && info[src].chain >= 0 && !pinned[src] && consumers[src] == 1 &&
        p->kernels[src]->device == p->kernels[k]->device) {
      GPtrArray *chain = chains->pdata[info[src].chain];
      if (g_ptr_array_index(chain, chain->len - 1) == e->src && chain->len < FUSE_MAX_OPS) {
        g_ptr_array_add(chain, (gpointer)nd);
        info[k].chain = info[src].chain;
        continue;
      }
    }
    GPtrArray *chain = g_ptr_array_new();
    g_ptr_array_add(chain, (gpointer)nd);
    info[k].chain = (int)chains->len;
    g_ptr_array_add(chains, chain);
  }

  /* The contraction groups after the chains: chains[n_chains..] (built differently). */
  guint n_chains = chains->len;
  for (guint g = 0; g < groups->len; g++)
    g_ptr_array_add(chains, g_ptr_array_ref(groups->pdata[g]));
  g_ptr_array_unref(groups);
  weft__fusion_t *fu = NULL;
  weft_status_t *st = NULL;
  /* Per node: the fused node that replaces it (its chain's last member), or itself. */
  GHashTable *fused_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTable *fused_kernel = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint c = 0; c < chains->len && !st; c++) {
    GPtrArray *chain = chains->pdata[c];
    if (chain->len < 2) continue;
    if (!fu) {
      fu = g_new0(weft__fusion_t, 1);
      const weft_node_t *first = chain->pdata[0];
      fu->graph = weft__graph_new_in(first->graph->ops);
      fu->kernels = g_ptr_array_new_with_free_func((GDestroyNotify)weft__kernel_instance_free);
      fu->aliases = g_hash_table_new(g_direct_hash, g_direct_equal);
      fu->fallbacks = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, fallback_free);
    }
    weft_node_t *fused = NULL;
    if (c < n_chains)
      st = build_fused(fu, chain, info, index_of, p->kernels, &fused);
    else
      st = weft__fuse_build_contraction(fu->graph, chain, &fused);
    const weft_node_t *last = chain->pdata[chain->len - 1];
    int last_k = GPOINTER_TO_INT(g_hash_table_lookup(index_of, last)) - 1;
    weft__kernel_instance_t *inst = NULL;
    if (!st) st = weft__kernel_instance_for_node(fused, p->kernels[last_k]->device, dopts, &inst);
    if (st) {
      /* A core whose CPU plugin lacks the fused kernel runs the chain as it is. */
      weft_status_free(st);
      st = NULL;
      continue;
    }
    g_ptr_array_add(fu->kernels, inst);
    g_hash_table_insert(fu->aliases, (gpointer)last, fused);
    for (guint m = 0; m < chain->len; m++)
      g_hash_table_insert(fused_of, chain->pdata[m], m + 1 == chain->len ? fused : NULL);
    g_hash_table_insert(fused_kernel, fused, inst);
  }
  if (fu && g_hash_table_size(fu->aliases) > 0) {
    GPtrArray *nodes = g_ptr_array_new();
    GArray *kernels = g_array_new(FALSE, TRUE, sizeof(weft__kernel_instance_t *));
    for (int k = 0; k < n; k++) {
      gpointer nd = p->nodes->pdata[k];
      weft__kernel_instance_t *inst = p->kernels[k];
      gpointer repl = NULL;
      if (g_hash_table_lookup_extended(fused_of, nd, NULL, &repl)) {
        if (!repl) continue; /* an intermediate of a chain */
        inst = g_hash_table_lookup(fused_kernel, repl);
        nd = repl;
      }
      g_ptr_array_add(nodes, nd);
      g_array_append_val(kernels, inst);
    }
    weft__kernel_instance_t *none = NULL;
    g_array_append_val(kernels, none);
    *nodes_out = nodes;
    *kernels_out = (weft__kernel_instance_t **)(void *)g_array_free(kernels, FALSE);
    *out = fu;
  } else {
    weft__fusion_free(fu);
  }
  g_hash_table_destroy(fused_of);
  g_hash_table_destroy(fused_kernel);
  g_ptr_array_free(chains, TRUE);
  g_hash_table_destroy(index_of);
  g_hash_table_destroy(consumer_of);
  g_free(info);
  g_free(pinned);
  g_free(consumers);
  g_free(consumers_of_0);
  return st;
}

GHashTable *weft__fusion_aliases(const weft__fusion_t *f) { return f ? f->aliases : NULL; }

GHashTable *weft__fusion_fallbacks(const weft__fusion_t *f) { return f ? f->fallbacks : NULL; }

void weft__fusion_free(weft__fusion_t *f) {
  if (!f) return;
  g_ptr_array_free(f->kernels, TRUE);
  g_hash_table_destroy(f->aliases);
  g_hash_table_destroy(f->fallbacks);
  weft_graph_free(f->graph);
  g_free(f);
}
