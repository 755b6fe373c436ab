/* constfold.c: plan-time constant folding. The nodes of a step whose every input is a constant
 * (a frozen graph's Shape/StridedSlice/Pack arithmetic on a shape Const, Identity reads of
 * weights) give the same value every step; TensorFlow's grappler (constant_folding.cc) computes
 * them once and puts Consts in their place, and so does this pass, when a plan is built. The
 * user's graph is never changed: the Consts live in a private graph that the plan owns and the
 * executor reads a folded node's edges and fetches from its Const (aliases). The plan is per
 * feed/fetch/target signature, so a node fed in one signature is folded only in the others. */
#include "constfold_internal.h"
#include "frames_internal.h"
#include "kernel_call.h"

#include <stdlib.h>
#include <string.h>

/* TensorFlow's kMaxConstantSize: a bigger result stays computed at run time (a Const that size
 * would cost memory for every plan that holds it). */
#define FOLD_MAX_BYTES (10 * 1024 * 1024)
/* The pass's own bounds, so that a hostile graph (a long chain of large constant products) can
 * neither hold the planner, which no step deadline or close reaches, nor fill memory with
 * folded values: past either, the remaining nodes run in the step as they are (the same values,
 * computed by the same kernels, under the step's deadline and cancellation). */
#define FOLD_MAX_TOTAL_BYTES ((int64_t)64 * 1024 * 1024)
#define FOLD_MAX_US ((gint64)200 * 1000)

struct weft__constfold {
  weft_graph_t *graph;   /* holds the Consts */
  GPtrArray *kernels;    /* weft__kernel_instance_t* of the Consts */
  GHashTable *aliases;   /* a folded node -> its Const */
};

/* Ops whose value is not a function of their inputs alone, or that must keep running (side
 * effects, control flow, feeds, functions), beyond what their op def marks stateful. */
static const char *const never_folded[] = {
    "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "Switch", "RefSwitch", "Merge",
    "RefMerge", "Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration",
    "LoopCond", "ControlTrigger", "NoOp", "PartitionedCall", "StatefulPartitionedCall", "If",
    "StatelessIf", "While", "StatelessWhile", "Print", "PrintV2", "Assert", "ReadFile",
    "ImmutableConst", "ToBool", "PyFuncStateless", NULL,
};

static bool in_list(const char *const *list, const char *op) {
  for (; *list; list++)
    if (strcmp(*list, op) == 0) return true;
  return false;
}

static bool plain_dtype(int t) { return !weft__dtype_is_ref(t) && t != WEFT_DT_STRING; }

/* Whether `n`'s op may be folded at all, whatever its inputs. */
static bool foldable_op(const weft_node_t *n) {
  if (!n->def || n->def->is_stateful || n->op_name[0] == '_' || in_list(never_folded, n->op_name))
    return false;
  if (n->n_outputs != 1 || !plain_dtype(n->output_types[0])) return false;
  for (int i = 0; i < n->n_inputs; i++)
    if (!plain_dtype(n->input_types[i])) return false;
  for (int a = 0; a < n->attrs->n; a++) {
    weft__attr_kind_t kind = n->attrs->entries[a].value->kind;
    if (kind == WEFT_ATTR_FUNC) return false;
  }
  return true;
}

static bool is_fed(const weft__executor_params_t *p, const weft_node_t *n) {
  for (int f = 0; f < p->n_feeds; f++)
    if (p->feeds[f].node == n) return true;
  return false;
}

static weft__device_t *cpu_device(void) {
  for (int k = 0; k < weft__device_count(); k++) {
    weft__device_t *d = weft__device_at(k);
    if (d->type && strcmp(d->type, "CPU") == 0) return d;
  }
  return NULL;
}

/* Runs node k with its CPU kernel on the values of its inputs (values[] of the nodes before it);
 * NULL when it cannot be folded (no CPU kernel, an error, too big a result). */
static weft_tensor_t *evaluate(const weft__executor_params_t *p, GHashTable *index_of, int k,
                               weft_tensor_t **values, weft__device_t *cpu,
                               const weft__constfold_env_t *env) {
  const weft_node_t *n = p->nodes->pdata[k];
  weft__kernel_instance_t *kinst = p->kernels[k], *own = NULL;
  if (!kinst || kinst->device != cpu) {
    weft_status_t *st = weft__kernel_instance_for_node(n, cpu, env->dopts, &own);
    if (st) {
      weft_status_free(st);
      return NULL;
    }
    kinst = own;
  }
  int n_in = n->n_inputs;
  weft__value_t *inputs = g_new0(weft__value_t, n_in > 0 ? n_in : 1);
  bool *is_ref = g_new0(bool, n_in > 0 ? n_in : 1), *in_host = g_new0(bool, n_in > 0 ? n_in : 1);
  for (int i = 0; i < n_in; i++) {
    int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, n->inputs[i].src)) - 1;
    inputs[i].tensor = weft_tensor_ref(values[src]);
    in_host[i] = weft__kernel_arg_in_host_memory(kinst->kernel, n, false, i);
  }
  weft__value_t out = {0};
  weft__kernel_call_env_t kenv = {env->intra_pool, env->resources, NULL, NULL, 0};
  weft_status_t *st = weft__kernel_call(n, kinst, kinst, is_ref, in_host, inputs, &out, &kenv);
  weft_tensor_t *result = NULL;
  /* Only a host tensor of the declared dtype can become a Const's value. */
  if (!st && out.tensor && !out.ref && out.tensor->dtype == (weft_dtype_t)n->output_types[0] &&
      weft__buffer_host_accessible(out.tensor->buffer) &&
      weft_tensor_nbytes(out.tensor) <= FOLD_MAX_BYTES)
    result = weft_tensor_ref(out.tensor);
  weft_status_free(st);
  weft__value_clear(&out);
  for (int i = 0; i < n_in; i++) weft__value_clear(&inputs[i]);
  g_free(inputs);
  g_free(is_ref);
  g_free(in_host);
  weft__kernel_instance_free(own);
  return result;
}

/* The Const that stands for folded node `n` (same name, so step stats and errors name it), and
 * its kernel on n's device. */
static weft_status_t *make_const(weft__constfold_t *f, const weft_node_t *n, weft_tensor_t *value,
                                 weft__device_t *device, const weft_device_options_t *dopts,
                                 weft_node_t **node, weft__kernel_instance_t **inst) {
  weft_attrs_t *attrs = weft__attrs_new();
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
  v->u.type = value->dtype;
  weft__attrs_set(attrs, "dtype", v);
  v = weft__attr_value_new(WEFT_ATTR_TENSOR);
  v->u.tensor = weft_tensor_ref(value);
  weft__attrs_set(attrs, "value", v);
  weft_status_t *st =
      weft__graph_add_node(f->graph, n->name, "Const", NULL, 0, NULL, 0, "", attrs, node);
  weft__attrs_free(attrs);
  if (!st) st = weft__kernel_instance_for_node(*node, device, dopts, inst);
  return st;
}

weft_status_t *weft__constfold(const weft__executor_params_t *p, const weft_node_t *const *targets,
                               int n_targets, const weft__constfold_env_t *env,
                               GPtrArray **nodes_out, weft__kernel_instance_t ***kernels_out,
                               weft__constfold_t **out) {
  *out = NULL;
  *nodes_out = NULL;
  *kernels_out = NULL;
  /* WEFT_NO_FUSION=constfold turns off only this pass, =contraction leaves it on, and any other
   * value turns off every plan-time rewrite (docs/performance.md, "Fusion"). */
  const char *off = getenv("WEFT_NO_FUSION");
  if (off && strcmp(off, "contraction") != 0) return NULL;
  if (weft__cf_needed(p)) return NULL;
  weft__device_t *cpu = cpu_device();
  int n = (int)p->nodes->len;
  if (!cpu || n == 0) return NULL;

  GHashTable *index_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int k = 0; k < n; k++)
    g_hash_table_insert(index_of, p->nodes->pdata[k], GINT_TO_POINTER(k + 1));
  /* values[k]: node k's constant value, or NULL when it is not constant. Nodes come in a
   * topological order, so a node's inputs are decided before it. */
  weft_tensor_t **values = g_new0(weft_tensor_t *, n);
  int n_folded = 0;
  int64_t folded_bytes = 0;
  gint64 deadline = g_get_monotonic_time() + FOLD_MAX_US;
  for (int k = 0; k < n; k++) {
    const weft_node_t *nd = p->nodes->pdata[k];
    if (!p->kernels[k] || !foldable_op(nd) || is_fed(p, nd)) continue;
    bool is_const = strcmp(nd->op_name, "Const") == 0;
    if (!is_const && (folded_bytes > FOLD_MAX_TOTAL_BYTES || g_get_monotonic_time() > deadline))
      continue;
    if (!is_const && nd->n_inputs == 0) continue; /* nothing to fold it from */
    bool constant = true;
    for (int i = 0; i < nd->n_inputs && constant; i++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, nd->inputs[i].src)) - 1;
      constant = src >= 0 && values[src] != NULL;
    }
    for (guint c = 0; c < nd->control_inputs->len && constant; c++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, nd->control_inputs->pdata[c])) - 1;
      constant = src >= 0 && values[src] != NULL;
    }
    if (!constant) continue;
    values[k] = evaluate(p, index_of, k, values, cpu, env);
    if (values[k] && !is_const) {
      n_folded++;
      folded_bytes += (int64_t)weft_tensor_nbytes(values[k]);
    }
  }

  /* What must still exist of a constant node: a Const in its place when anything that is not
   * constant reads it (a data edge or a control edge), it is fetched or a target. The original
   * Consts stay as they are; folded nodes nothing needs are dropped. */
  bool *needed = g_new0(bool, n);
  for (int k = 0; k < n; k++) {
    const weft_node_t *nd = p->nodes->pdata[k];
    if (values[k]) continue;
    for (int i = 0; i < nd->n_inputs; i++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, nd->inputs[i].src)) - 1;
      if (src >= 0) needed[src] = true;
    }
    for (guint c = 0; c < nd->control_inputs->len; c++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, nd->control_inputs->pdata[c])) - 1;
      if (src >= 0) needed[src] = true;
    }
  }
  for (int f = 0; f < p->n_fetches; f++) {
    int k = GPOINTER_TO_INT(g_hash_table_lookup(index_of, p->fetches[f].node)) - 1;
    if (k >= 0) needed[k] = true;
  }
  for (int t = 0; t < n_targets; t++) {
    int k = GPOINTER_TO_INT(g_hash_table_lookup(index_of, targets[t])) - 1;
    if (k >= 0) needed[k] = true;
  }

  weft_status_t *st = NULL;
  weft__constfold_t *fo = NULL;
  if (n_folded > 0) {
    fo = g_new0(weft__constfold_t, 1);
    fo->graph = weft__graph_new_in(((const weft_node_t *)p->nodes->pdata[0])->graph->ops);
    fo->kernels = g_ptr_array_new_with_free_func((GDestroyNotify)weft__kernel_instance_free);
    fo->aliases = g_hash_table_new(g_direct_hash, g_direct_equal);
    GPtrArray *nodes = g_ptr_array_new();
    GArray *kernels = g_array_new(FALSE, TRUE, sizeof(weft__kernel_instance_t *));
    for (int k = 0; k < n && !st; k++) {
      weft_node_t *nd = p->nodes->pdata[k];
      weft__kernel_instance_t *inst = p->kernels[k];
      if (values[k] && !needed[k]) continue;
      if (values[k] && strcmp(nd->op_name, "Const") != 0) {
        weft_node_t *c = NULL;
        weft__kernel_instance_t *ci = NULL;
        st = make_const(fo, nd, values[k], p->kernels[k]->device, env->dopts, &c, &ci);
        if (st) break;
        g_ptr_array_add(fo->kernels, ci);
        g_hash_table_insert(fo->aliases, nd, c);
        nd = c;
        inst = ci;
      }
      g_ptr_array_add(nodes, nd);
      g_array_append_val(kernels, inst);
    }
    weft__kernel_instance_t *none = NULL;
    g_array_append_val(kernels, none);
    if (st) {
      /* A device without a Const kernel (or a graph that refuses the node): run unfolded. */
      weft_status_free(st);
      st = NULL;
      g_ptr_array_free(nodes, TRUE);
      g_free(g_array_free(kernels, FALSE));
      weft__constfold_free(fo);
    } else {
      *nodes_out = nodes;
      *kernels_out = (weft__kernel_instance_t **)(void *)g_array_free(kernels, FALSE);
      *out = fo;
    }
  }
  for (int k = 0; k < n; k++) weft_tensor_unref(values[k]);
  g_free(values);
  g_free(needed);
  g_hash_table_destroy(index_of);
  return st;
}

GHashTable *weft__constfold_aliases(const weft__constfold_t *f) { return f ? f->aliases : NULL; }

void weft__constfold_free(weft__constfold_t *f) {
  if (!f) return;
  g_ptr_array_free(f->kernels, TRUE);
  g_hash_table_destroy(f->aliases);
  weft_graph_free(f->graph);
  g_free(f);
}
