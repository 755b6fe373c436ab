/* onnx/map_control_flow.c: ONNX If and Loop lowered to TensorFlow 1 control flow, as TensorFlow
 * lowers its own If and While (core/src/graph/function_inline.c).
 *
 * If: each branch's nodes are mapped into the outer graph behind a pivot on the condition, so the
 * untaken branch is dead and the Merges pass on the taken branch's outputs. Branch nodes read
 * outer values by name directly: the pivot's control input makes every branch node dead with it,
 * constants included.
 *
 * Loop: a frame of Enter/Merge/Switch/NextIteration/Exit over the iteration count, the condition
 * and the loop-carried values; the body's outer-scope reads become constant Enters; each scan
 * output is written to a TensorArray per iteration and gathered after the loop. */
#include <string.h>

#include "graph/graph_internal.h"
#include "map.h"

/* In ONNX's (topological) order. */
weft_status_t *cf_onnx_map_subgraph(cf_onnx_ctx_t *x, const Onnx__GraphProto *g) {
  weft_status_t *st = NULL;
  const char *outer = x->node_name;
  for (size_t i = 0; i < g->n_initializer && st == NULL; i++) {
    weft_tensor_t *t = cf_onnx_tensor(g->initializer[i], &st);
    if (st) break;
    cf_onnx_bind(x, g->initializer[i]->name, cf_onnx_const_tensor(x, t, &st));
    weft_tensor_unref(t);
  }
  for (size_t i = 0; i < g->n_node && st == NULL; i++) {
    const Onnx__NodeProto *node = g->node[i];
    const char *dom = node->domain;
    bool default_dom = dom == NULL || dom[0] == '\0' || strcmp(dom, "ai.onnx") == 0;
    cf_onnx_map_fn fn = default_dom ? cf_onnx_find_mapper(node->op_type, x->opset) : NULL;
    char *where = g_strdup_printf("%s: subgraph node %s", outer, node->op_type);
    x->node_name = where;
    st = fn ? fn(x, node) : cf_onnx_unsupported(x, "op is not mapped to Weft ops");
    for (size_t o = 0; st == NULL && o < node->n_output; o++)
      if (cf_onnx_has_out(node, o) && !cf_onnx_is_bound(x, node->output[o]))
        st = cf_onnx_unsupported(x, "output '%s' is not produced", node->output[o]);
    /* A mapper that needs a subgraph value as a constant (a Slice's starts from a Loop's
     * iteration number, a shape computed in an If branch) cannot have it: the value lives in a
     * frame or a branch that a session evaluating it alone does not run. */
    if (st && weft_status_code(st) != WEFT_UNIMPLEMENTED &&
        g_str_has_prefix(weft_status_message(st), "evaluating '")) {
      weft_status_t *why = cf_onnx_unsupported(
          x, "needs a value of the subgraph as a constant (%s)", weft_status_message(st));
      weft_status_free(st);
      st = why;
    }
    x->node_name = outer;
    g_free(where);
  }
  return st;
}

/* The graph attribute `name` of node, or NULL (*st set) when it is absent or one of its inputs,
 * outputs or initializers has no name (a malformed model: the lowering binds them by name). */
static const Onnx__GraphProto *attr_graph(cf_onnx_ctx_t *x, const Onnx__NodeProto *node,
                                          const char *name, weft_status_t **st) {
  const Onnx__AttributeProto *a = cf_onnx_attr(node, name);
  const Onnx__GraphProto *g = a ? a->g : NULL;
  bool named = g != NULL;
  for (size_t i = 0; named && i < g->n_input; i++) named = g->input[i]->name != NULL;
  for (size_t i = 0; named && i < g->n_output; i++) named = g->output[i]->name != NULL;
  for (size_t i = 0; named && i < g->n_initializer; i++) named = g->initializer[i]->name != NULL;
  if (!named && *st == NULL)
    *st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: attribute %s %s", x->node_name, name,
                          g ? "has an input, output or initializer without a name"
                            : "(a graph) is required");
  return named ? g : NULL;
}

/* Maps branch g behind pivot (live only when the branch is taken); outs[k] gets an Identity of
 * its output k built behind the pivot too, so that an output read straight from the outer scope
 * is dead on the untaken side as well; seqs[k] gets such Identities of a sequence output's
 * elements. */
static weft_status_t *map_branch(cf_onnx_ctx_t *x, const Onnx__GraphProto *g, weft_node_t *pivot,
                                 weft_output_t *outs, cf_onnx_seq_t **seqs) {
  weft_graph_push_control_deps(x->graph, &pivot, 1);
  weft_status_t *st = cf_onnx_map_subgraph(x, g);
  for (size_t k = 0; k < g->n_output && st == NULL; k++) {
    weft_output_t o = cf_onnx_get(x, g->output[k]->name);
    const cf_onnx_seq_t *s = cf_onnx_seq_get(x, g->output[k]->name);
    if (o.node == NULL && s == NULL)
      st = cf_onnx_unsupported(x, "branch output '%s' is not produced", g->output[k]->name);
    else if (s) {
      seqs[k] = cf_onnx_seq_new(s->dtype);
      for (guint i = 0; i < s->items->len && st == NULL; i++) {
        weft_output_t e = cf_onnx_unary(x, "Identity", g_array_index(s->items, weft_output_t, i),
                                        &st);
        g_array_append_val(seqs[k]->items, e);
      }
    } else
      outs[k] = cf_onnx_unary(x, "Identity", o, &st);
  }
  weft_graph_pop_control_deps(x->graph);
  return st;
}

static weft_output_t merge2(cf_onnx_ctx_t *x, weft_output_t a, weft_output_t b,
                            weft_status_t **st) {
  if (*st) return CF_ONNX_NONE;
  weft_op_builder_t *m = cf_onnx_op(x, "Merge");
  weft_output_t in[2] = {a, b};
  weft_op_add_input_list(m, in, 2);
  return cf_onnx_finish(x, m, st);
}

/* If output k from the branches' sequences: elementwise Merges when they have one length, else
 * the taken branch's (the condition is then needed as a constant). */
static weft_status_t *merge_seqs(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, size_t k,
                                 cf_onnx_seq_t *then_s, cf_onnx_seq_t *else_s) {
  weft_status_t *st = NULL;
  if (then_s == NULL || else_s == NULL)
    return cf_onnx_unsupported(x, "output %zu is a sequence in one branch only", k);
  if (then_s->items->len != else_s->items->len) {
    double c = 0;
    if (!cf_onnx_in_scalar(x, node, 0, &c, &st)) return st;
    cf_onnx_seq_bind(x, node->output[k], cf_onnx_seq_copy(c != 0 ? then_s : else_s));
    return NULL;
  }
  cf_onnx_seq_t *r = cf_onnx_seq_new(then_s->dtype);
  for (guint i = 0; i < then_s->items->len && st == NULL; i++) {
    weft_output_t e = merge2(x, g_array_index(then_s->items, weft_output_t, i),
                             g_array_index(else_s->items, weft_output_t, i), &st);
    g_array_append_val(r->items, e);
  }
  if (st == NULL && k < node->n_output) cf_onnx_seq_bind(x, node->output[k], r);
  else cf_onnx_seq_free(r);
  return st;
}

static weft_status_t *map_if(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const Onnx__GraphProto *br[2] = {attr_graph(x, node, "else_branch", &st),
                                   attr_graph(x, node, "then_branch", &st)};
  if (st) return st;
  if (br[0]->n_output != node->n_output || br[1]->n_output != node->n_output)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: the branches have %zu and %zu outputs, the node %zu", x->node_name,
                           br[1]->n_output, br[0]->n_output, node->n_output);
  weft_output_t cond = cf_onnx_in(x, node, 0);
  if (cond.node == NULL) return cf_onnx_unsupported(x, "the condition is missing");
  if (cf_onnx_out_dtype(cond) != WEFT_DT_BOOL)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: the condition is %s, not bool",
                           x->node_name, weft_dtype_name(cf_onnx_out_dtype(cond)));
  weft_op_builder_t *b = cf_onnx_op(x, "Switch");
  weft_op_add_input(b, cond);
  weft_op_add_input(b, cond);
  weft_output_t sw = cf_onnx_finish(x, b, &st);
  if (st) return st;
  weft_output_t *outs[2] = {g_new0(weft_output_t, node->n_output + 1),
                            g_new0(weft_output_t, node->n_output + 1)};
  cf_onnx_seq_t **seqs[2] = {g_new0(cf_onnx_seq_t *, node->n_output + 1),
                             g_new0(cf_onnx_seq_t *, node->n_output + 1)};
  /* Switch output 0 is live when cond is false (else), output 1 when true (then). */
  for (int side = 0; side < 2 && st == NULL; side++) {
    weft_output_t pivot = cf_onnx_unary(x, "Identity", weft_out(sw.node, side), &st);
    if (st == NULL) st = map_branch(x, br[side], pivot.node, outs[side], seqs[side]);
  }
  for (size_t k = 0; k < node->n_output && st == NULL; k++) {
    if (seqs[0][k] || seqs[1][k])
      st = merge_seqs(x, node, k, seqs[1][k], seqs[0][k]);
    else
      cf_onnx_bind_out(x, node, k, merge2(x, outs[1][k], outs[0][k], &st));
  }
  for (int side = 0; side < 2; side++) {
    for (size_t k = 0; k < node->n_output; k++) cf_onnx_seq_free(seqs[side][k]);
    g_free(seqs[side]);
    g_free(outs[side]);
  }
  return st;
}

/* A node of op with the given inputs (T inferred), output 0. */
static weft_output_t flow(cf_onnx_ctx_t *x, const char *op, weft_output_t a, weft_output_t b,
                          weft_status_t **st) {
  return b.node ? cf_onnx_binary(x, op, a, b, st) : cf_onnx_unary(x, op, a, st);
}

static weft_output_t enter(cf_onnx_ctx_t *x, weft_output_t v, const char *frame, bool constant,
                           weft_status_t **st) {
  if (*st) return CF_ONNX_NONE;
  weft_op_builder_t *b = cf_onnx_op(x, "Enter");
  weft_op_add_input(b, v);
  weft_op_set_attr_string(b, "frame_name", frame);
  weft_op_set_attr_bool(b, "is_constant", constant);
  weft_op_set_attr_int(b, "parallel_iterations", 1);
  return cf_onnx_finish(x, b, st);
}

/* Whether name is produced inside g (a node output or an initializer) or is one of its inputs. */
static bool local_to(const Onnx__GraphProto *g, const char *name) {
  for (size_t i = 0; i < g->n_input; i++)
    if (strcmp(g->input[i]->name, name) == 0) return true;
  for (size_t i = 0; i < g->n_initializer; i++)
    if (strcmp(g->initializer[i]->name, name) == 0) return true;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t o = 0; o < g->node[i]->n_output; o++)
      if (strcmp(g->node[i]->output[o], name) == 0) return true;
  return false;
}

/* Rebinds every outer value the body reads (inputs of its nodes, its outputs) to a constant
 * Enter into frame; the outer bindings are saved in *saved (name -> weft_output_t*) to restore. */
static void enter_outer(cf_onnx_ctx_t *x, const Onnx__GraphProto *g, const char *frame,
                        GHashTable *saved, weft_status_t **st) {
  GPtrArray *names = g_ptr_array_new();
  for (size_t i = 0; i < g->n_node; i++) {
    for (size_t k = 0; k < g->node[i]->n_input; k++) g_ptr_array_add(names, g->node[i]->input[k]);
    for (size_t a = 0; a < g->node[i]->n_attribute; a++)
      if (g->node[i]->attribute[a]->g != NULL) {
        *st = cf_onnx_unsupported(x, "a Loop body with nested subgraphs is not mapped");
        break;
      }
  }
  for (size_t k = 0; k < g->n_output; k++) g_ptr_array_add(names, g->output[k]->name);
  for (guint i = 0; i < names->len && *st == NULL; i++) {
    const char *name = names->pdata[i];
    if (name[0] == '\0' || local_to(g, name) || g_hash_table_contains(saved, name)) continue;
    weft_output_t o = cf_onnx_get(x, name);
    if (o.node == NULL) continue; /* the node mapping reports it */
    g_hash_table_insert(saved, g_strdup(name), g_memdup2(&o, sizeof o));
    cf_onnx_bind(x, name, enter(x, o, frame, true, st));
  }
  g_ptr_array_free(names, TRUE);
}

static void restore_outer(cf_onnx_ctx_t *x, GHashTable *saved) {
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, saved);
  while (g_hash_table_iter_next(&it, &k, &v)) cf_onnx_bind(x, k, *(weft_output_t *)v);
}

/* One loop-carried value: its Merge (whose back edge is linked once the body exists), and the
 * Switch's outputs (0: Exit side, 1: body side). */
typedef struct {
  weft_output_t merge, exit_side, body;
} carried_t;

static carried_t carry(cf_onnx_ctx_t *x, weft_output_t init, const char *frame,
                       weft_status_t **st) {
  carried_t c = {CF_ONNX_NONE, CF_ONNX_NONE, CF_ONNX_NONE};
  weft_output_t e = enter(x, init, frame, false, st);
  if (*st) return c;
  weft_op_builder_t *b = cf_onnx_op(x, "Merge");
  weft_output_t in[2] = {e, e}; /* input 1 becomes the NextIteration back edge */
  weft_op_add_input_list(b, in, 2);
  c.merge = cf_onnx_finish(x, b, st);
  return c;
}

static void carry_switch(cf_onnx_ctx_t *x, carried_t *c, weft_output_t loop_cond,
                         weft_status_t **st) {
  weft_output_t sw = flow(x, "Switch", c->merge, loop_cond, st);
  if (*st) return;
  c->exit_side = cf_onnx_unary(x, "Exit", weft_out(sw.node, 0), st);
  c->body = cf_onnx_unary(x, "Identity", weft_out(sw.node, 1), st);
}

/* Closes the cycle: next becomes the Merge's second input through a NextIteration, as the
 * GraphDef import links TensorFlow's back edges (graphdef.c). */
static void link_back(cf_onnx_ctx_t *x, carried_t *c, weft_output_t next, weft_status_t **st) {
  weft_output_t ni = cf_onnx_unary(x, "NextIteration", next, st);
  if (*st) return;
  if (cf_onnx_out_dtype(next) != cf_onnx_out_dtype(c->merge)) {
    *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                          "%s: a loop-carried value changes dtype from %s to %s", x->node_name,
                          weft_dtype_name(cf_onnx_out_dtype(c->merge)),
                          weft_dtype_name(cf_onnx_out_dtype(next)));
    return;
  }
  c->merge.node->inputs[1].src = ni.node;
  c->merge.node->inputs[1].src_index = 0;
  c->merge.node->output_ranks[0] = -1;
}

static weft_status_t *map_loop(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  weft_status_t *st = NULL;
  const Onnx__GraphProto *body = attr_graph(x, node, "body", &st);
  if (st) return st;
  size_t n_in = node->n_input < 2 ? 0 : node->n_input - 2;
  if (body->n_input != n_in + 2 || body->n_output < n_in + 1 ||
      node->n_output != body->n_output - 1)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: the body has %zu inputs and %zu outputs for %zu loop-carried "
                           "values and %zu node outputs",
                           x->node_name, body->n_input, body->n_output, n_in, node->n_output);
  for (size_t k = 0; k < n_in; k++)
    if (cf_onnx_has_in(node, k + 2) && cf_onnx_seq_get(x, node->input[k + 2]))
      return cf_onnx_loop_unrolled(x, node, body);
  size_t n_scan = body->n_output - 1 - n_in;
  char frame[64];
  g_snprintf(frame, sizeof frame, "onnx_loop_%d", x->counter++);
  weft_output_t m = cf_onnx_in(x, node, 0), c0 = cf_onnx_in(x, node, 1);
  if (m.node) m = enter(x, cf_onnx_cast(x, m, WEFT_DT_INT64, &st), frame, true, &st);
  if (c0.node == NULL) c0 = cf_onnx_const_scalar(x, WEFT_DT_BOOL, 1, &st);
  /* carried: 0 the iteration number, 1 the condition, then the loop-carried values. */
  size_t n_c = n_in + 2;
  carried_t *c = g_new0(carried_t, n_c);
  c[0] = carry(x, cf_onnx_const_scalar(x, WEFT_DT_INT64, 0, &st), frame, &st);
  c[1] = carry(x, c0, frame, &st);
  for (size_t k = 0; k < n_in && st == NULL; k++) {
    weft_output_t v = cf_onnx_in(x, node, k + 2);
    if (v.node == NULL) st = cf_onnx_unsupported(x, "loop-carried value %zu is missing", k);
    c[k + 2] = carry(x, v, frame, &st);
  }
  weft_output_t *ta = g_new0(weft_output_t, n_scan + 1);
  weft_dtype_t *sdt = g_new0(weft_dtype_t, n_scan + 1);
  carried_t *flows = g_new0(carried_t, n_scan + 1);
  GHashTable *saved = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  /* The predicate: cond, and i < M when M is given. */
  weft_output_t pred = c[1].merge;
  if (m.node && st == NULL)
    pred = flow(x, "LogicalAnd", pred, flow(x, "Less", c[0].merge, m, &st), &st);
  weft_output_t loop_cond = cf_onnx_unary(x, "LoopCond", pred, &st);
  for (size_t k = 0; k < n_c && st == NULL; k++) carry_switch(x, &c[k], loop_cond, &st);
  if (st == NULL) {
    /* Enters take their data from outside the frame: built outside the body's control deps. */
    enter_outer(x, body, frame, saved, &st);
    weft_graph_push_control_deps(x->graph, &c[0].body.node, 1);
    for (size_t k = 0; k < n_c; k++) cf_onnx_bind(x, body->input[k]->name, c[k].body);
    if (st == NULL) st = cf_onnx_map_subgraph(x, body);
    weft_output_t *outs = g_new0(weft_output_t, body->n_output + 1);
    for (size_t k = 0; k < body->n_output && st == NULL; k++) {
      outs[k] = cf_onnx_get(x, body->output[k]->name);
      if (outs[k].node == NULL)
        st = cf_onnx_unsupported(x, "body output '%s' is not produced", body->output[k]->name);
      else
        outs[k] = cf_onnx_unary(x, "Identity", outs[k], &st);
    }
    weft_output_t one = cf_onnx_const_scalar(x, WEFT_DT_INT64, 1, &st);
    if (st == NULL) link_back(x, &c[0], flow(x, "AddV2", c[0].body, one, &st), &st);
    for (size_t k = 0; k < n_in + 1 && st == NULL; k++) link_back(x, &c[k + 1], outs[k], &st);
    weft_output_t idx = cf_onnx_cast(x, c[0].body, WEFT_DT_INT32, &st);
    weft_graph_pop_control_deps(x->graph);
    /* Scan outputs: a TensorArray each (of the body output's dtype, known now), its flow
     * carried, its handle entering as a constant. */
    weft_output_t *handles = g_new0(weft_output_t, n_scan + 1);
    for (size_t s = 0; s < n_scan && st == NULL; s++) {
      weft_op_builder_t *b = cf_onnx_op(x, "TensorArrayV3");
      weft_op_add_input(b, cf_onnx_const_scalar(x, WEFT_DT_INT32, 0, &st));
      sdt[s] = cf_onnx_out_dtype(outs[n_in + 1 + s]);
      weft_op_set_attr_type(b, "dtype", sdt[s]);
      weft_op_set_attr_bool(b, "dynamic_size", true);
      ta[s] = cf_onnx_finish(x, b, &st);
      if (st) break;
      flows[s] = carry(x, weft_out(ta[s].node, 1), frame, &st);
      carry_switch(x, &flows[s], loop_cond, &st);
      handles[s] = enter(x, ta[s], frame, true, &st);
    }
    weft_graph_push_control_deps(x->graph, &c[0].body.node, 1);
    for (size_t s = 0; s < n_scan && st == NULL; s++) {
      weft_op_builder_t *b = cf_onnx_op(x, "TensorArrayWriteV3");
      weft_op_add_input(b, handles[s]);
      weft_op_add_input(b, idx);
      weft_op_add_input(b, outs[n_in + 1 + s]);
      weft_op_add_input(b, flows[s].body);
      link_back(x, &flows[s], cf_onnx_finish(x, b, &st), &st);
    }
    g_free(outs);
    g_free(handles);
    weft_graph_pop_control_deps(x->graph);
    restore_outer(x, saved);
  }
  for (size_t k = 0; k < n_in && st == NULL; k++) cf_onnx_bind_out(x, node, k, c[k + 2].exit_side);
  for (size_t s = 0; s < n_scan && st == NULL; s++) {
    weft_output_t flow_out = flows[s].exit_side;
    weft_op_builder_t *b = cf_onnx_op(x, "TensorArraySizeV3");
    weft_op_add_input(b, ta[s]);
    weft_op_add_input(b, flow_out);
    weft_output_t size = cf_onnx_finish(x, b, &st);
    weft_output_t zero = cf_onnx_const_scalar(x, WEFT_DT_INT32, 0, &st);
    weft_output_t step = cf_onnx_const_scalar(x, WEFT_DT_INT32, 1, &st);
    if (st) break;
    b = cf_onnx_op(x, "Range");
    weft_op_add_input(b, zero);
    weft_op_add_input(b, size);
    weft_op_add_input(b, step);
    weft_output_t indices = cf_onnx_finish(x, b, &st);
    if (st) break;
    b = cf_onnx_op(x, "TensorArrayGatherV3");
    weft_op_add_input(b, ta[s]);
    weft_op_add_input(b, indices);
    weft_op_add_input(b, flow_out);
    weft_op_set_attr_type(b, "dtype", sdt[s]);
    cf_onnx_bind_out(x, node, n_in + s, cf_onnx_finish(x, b, &st));
  }
  g_hash_table_destroy(saved);
  g_free(ta);
  g_free(sdt);
  g_free(flows);
  g_free(c);
  /* A body that needs its iteration's values as constants (a Slice's starts from the iteration
   * number) or holds a nested subgraph can still be unrolled when the trip count is known: the
   * frame built so far is left unconnected to anything the test fetches. */
  if (st && weft_status_code(st) == WEFT_UNIMPLEMENTED && cf_onnx_has_in(node, 0) &&
      (strstr(weft_status_message(st), "needs a value of the subgraph as a constant") ||
       strstr(weft_status_message(st), "with nested subgraphs"))) {
    weft_status_t *unrolled = cf_onnx_loop_unrolled(x, node, body);
    if (unrolled == NULL || weft_status_code(unrolled) != WEFT_UNIMPLEMENTED) {
      weft_status_free(st);
      return unrolled;
    }
    weft_status_free(unrolled);
  }
  return st;
}

/* ---- Scan ----
 * A Scan is the Loop it is defined by: the scan inputs, moved so that their scan axis is first
 * (and reversed for direction 1), are read one slice per iteration with a Gather on the
 * iteration number inside the body; the trip count is the scan axis' length; the scan outputs are
 * the Loop's stacked outputs, reversed and moved to their axes. The Loop node and its body are
 * built as ONNX protos here, borrowing the Scan body's nodes, and mapped by map_loop. */

typedef struct scan_spec {
  const Onnx__GraphProto *body;
  size_t n_state, n_scan_in, n_scan_out;
  const weft_output_t *states, *scans;
  const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs; /* NULL: all 0 */
} scan_spec_t;

static int64_t spec_at(const int64_t *v, size_t i) {
  return v ? v[i] : 0;
}

/* Moves axis `axis` of v (rank dims known) to `to`. */
static weft_output_t move_axis(cf_onnx_ctx_t *x, weft_output_t v, int64_t axis, int64_t to,
                               int rank, weft_status_t **st) {
  if (*st || axis == to) return v;
  int64_t perm[WEFT_MAX_RANK];
  for (int d = 0, k = 0; d < rank; d++) {
    if (d == to) perm[d] = axis;
    else {
      if (k == axis) k++;
      perm[d] = k++;
    }
  }
  return cf_onnx_transpose(x, v, perm, rank, st);
}

static weft_output_t reverse_first(cf_onnx_ctx_t *x, weft_output_t v, weft_status_t **st) {
  int64_t zero = 0;
  return cf_onnx_binary(x, "ReverseV2", v, cf_onnx_const_ints(x, WEFT_DT_INT32, &zero, 1, false,
                                                              st), st);
}

/* Builds the Scan of spec as a Loop; outs gets the n_state final states, then the scan outputs. */
static weft_status_t *scan_as_loop(cf_onnx_ctx_t *x, const scan_spec_t *sp, weft_output_t *outs) {
  weft_status_t *st = NULL;
  const Onnx__GraphProto *body = sp->body;
  size_t ns = sp->n_state, mi = sp->n_scan_in, ko = sp->n_scan_out;
  if (body->n_input != ns + mi || body->n_output != ns + ko)
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: the body has %zu inputs and %zu outputs for %zu state variables, "
                           "%zu scan inputs and %zu scan outputs",
                           x->node_name, body->n_input, body->n_output, ns, mi, ko);
  if (mi == 0) return cf_onnx_unsupported(x, "a Scan without scan inputs");
  int id = x->counter++;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free); /* every name made here */
#define SCAN_NAME(...) ((char *)(g_ptr_array_add(names, g_strdup_printf(__VA_ARGS__)), \
                                 names->pdata[names->len - 1]))
  int64_t trip = -1;
  char **loop_in = g_new0(char *, ns + 2);
  Onnx__NodeProto **nodes = g_new0(Onnx__NodeProto *, body->n_node + mi + 1);
  Onnx__NodeProto *gathers = g_new0(Onnx__NodeProto, mi + 1);
  char **gather_in = g_new0(char *, 2 * mi + 2);
  for (size_t j = 0; j < mi && st == NULL; j++) {
    int64_t dims[WEFT_MAX_RANK];
    int rank;
    if ((st = cf_onnx_need_shape(x, sp->scans[j], &rank, dims))) break;
    int64_t axis = spec_at(sp->in_axes, j);
    if (rank == 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: scan input %zu is a scalar", x->node_name,
                           j);
      break;
    }
    if (!cf_onnx_norm_axes(x, &axis, 1, rank, &st)) break;
    if (trip >= 0 && dims[axis] != trip) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s: scan input %zu has %" G_GINT64_FORMAT " slices, input 0 has %"
                           G_GINT64_FORMAT, x->node_name, j, dims[axis], trip);
      break;
    }
    trip = dims[axis];
    weft_output_t v = move_axis(x, sp->scans[j], axis, 0, rank, &st);
    if (spec_at(sp->in_dirs, j) != 0) v = reverse_first(x, v, &st);
    char *vname = SCAN_NAME("weft_scan_%d/input_%zu", id, j);
    cf_onnx_bind(x, vname, v);
    /* body input N + j = Gather(v, iteration number) */
    Onnx__NodeProto init = ONNX__NODE_PROTO__INIT;
    gathers[j] = init;
    gather_in[2 * j] = vname;
    gather_in[2 * j + 1] = SCAN_NAME("weft_scan_%d/iter", id);
    gathers[j].n_input = 2;
    gathers[j].input = &gather_in[2 * j];
    gathers[j].n_output = 1;
    gathers[j].output = &body->input[ns + j]->name;
    gathers[j].op_type = "Gather";
    nodes[j] = &gathers[j];
  }
  if (st == NULL && trip == 0) st = cf_onnx_unsupported(x, "a Scan of 0 iterations");
  if (st == NULL) {
    loop_in[0] = SCAN_NAME("weft_scan_%d/trip_count", id);
    cf_onnx_bind(x, loop_in[0], cf_onnx_const_scalar(x, WEFT_DT_INT64, (double)trip, &st));
    loop_in[1] = "";
    for (size_t k = 0; k < ns; k++) {
      loop_in[k + 2] = SCAN_NAME("weft_scan_%d/state_%zu", id, k);
      cf_onnx_bind(x, loop_in[k + 2], sp->states[k]);
    }
  }
  for (size_t i = 0; i < body->n_node; i++) nodes[mi + i] = body->node[i];
  /* The loop body: inputs (iteration, condition, states...), outputs (condition, states...,
   * scan outputs...). The condition passes through an Identity. */
  Onnx__NodeProto cond_node = ONNX__NODE_PROTO__INIT;
  char *cond_in = SCAN_NAME("weft_scan_%d/cond", id), *cond_out =
      SCAN_NAME("weft_scan_%d/cond_out", id);
  cond_node.n_input = 1;
  cond_node.input = &cond_in;
  cond_node.n_output = 1;
  cond_node.output = &cond_out;
  cond_node.op_type = "Identity";
  nodes[mi + body->n_node] = &cond_node;
  Onnx__ValueInfoProto *vis = g_new0(Onnx__ValueInfoProto, 3);
  Onnx__ValueInfoProto vinit = ONNX__VALUE_INFO_PROTO__INIT;
  vis[0] = vis[1] = vis[2] = vinit;
  vis[0].name = SCAN_NAME("weft_scan_%d/iter", id);
  vis[1].name = cond_in;
  vis[2].name = cond_out;
  Onnx__ValueInfoProto **lb_in = g_new0(Onnx__ValueInfoProto *, ns + 3);
  Onnx__ValueInfoProto **lb_out = g_new0(Onnx__ValueInfoProto *, ns + ko + 2);
  lb_in[0] = &vis[0];
  lb_in[1] = &vis[1];
  for (size_t k = 0; k < ns; k++) lb_in[k + 2] = body->input[k];
  lb_out[0] = &vis[2];
  for (size_t k = 0; k < ns + ko; k++) lb_out[k + 1] = body->output[k];
  Onnx__GraphProto lbody = ONNX__GRAPH_PROTO__INIT;
  lbody.n_node = body->n_node + mi + 1;
  lbody.node = nodes;
  lbody.n_initializer = body->n_initializer;
  lbody.initializer = body->initializer;
  lbody.n_input = ns + 2;
  lbody.input = lb_in;
  lbody.n_output = ns + ko + 1;
  lbody.output = lb_out;
  Onnx__AttributeProto battr = ONNX__ATTRIBUTE_PROTO__INIT;
  battr.name = "body";
  battr.g = &lbody;
  Onnx__AttributeProto *battrs[1] = {&battr};
  char **loop_out = g_new0(char *, ns + ko + 1);
  for (size_t k = 0; k < ns + ko; k++) loop_out[k] = SCAN_NAME("weft_scan_%d/out_%zu", id, k);
  Onnx__NodeProto loop = ONNX__NODE_PROTO__INIT;
  loop.n_input = ns + 2;
  loop.input = loop_in;
  loop.n_output = ns + ko;
  loop.output = loop_out;
  loop.op_type = "Loop";
  loop.n_attribute = 1;
  loop.attribute = battrs;
  if (st == NULL) st = map_loop(x, &loop);
  for (size_t k = 0; k < ns + ko && st == NULL; k++) {
    weft_output_t v = cf_onnx_get(x, loop_out[k]);
    if (k >= ns) {
      int64_t dims[WEFT_MAX_RANK];
      int rank = cf_onnx_shape(v, dims);
      /* The gathered TensorArray's shape may be unknown; the body's output (still bound by its
       * name) has the rank of one slice. */
      int inner = cf_onnx_shape(cf_onnx_get(x, body->output[k]->name), dims);
      if (rank < 0 && inner >= 0) rank = inner + 1;
      int64_t axis = spec_at(sp->out_axes, k - ns);
      if (spec_at(sp->out_dirs, k - ns) != 0) v = reverse_first(x, v, &st);
      if (axis != 0 && rank < 0) {
        st = cf_onnx_unsupported(x, "scan output %zu's rank is unknown", k - ns);
        break;
      }
      if (axis != 0 && cf_onnx_norm_axes(x, &axis, 1, rank, &st))
        v = move_axis(x, v, 0, axis, rank, &st);
    }
    outs[k] = v;
  }
#undef SCAN_NAME
  g_free(loop_out);
  g_free(lb_in);
  g_free(lb_out);
  g_free(vis);
  g_free(gather_in);
  g_free(gathers);
  g_free(nodes);
  g_free(loop_in);
  g_ptr_array_free(names, TRUE);
  return st;
}

/* An ints attribute of n values (NULL when absent); INVALID_ARGUMENT when it has another count. */
static const int64_t *scan_ints(cf_onnx_ctx_t *x, const Onnx__NodeProto *node, const char *name,
                                size_t n, weft_status_t **st) {
  size_t got = 0;
  const int64_t *v = cf_onnx_attr_ints(node, name, &got);
  if (*st == NULL && v && got != n)
    *st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: attribute %s has %zu values for %zu",
                          x->node_name, name, got, n);
  return v;
}

/* The Scan's body and how its first_state.. inputs divide into state variables and scan inputs
 * (num_scan_inputs), and its outputs into final states and scan outputs. */
static weft_status_t *scan_counts(cf_onnx_ctx_t *x, const Onnx__NodeProto *node,
                                  size_t first_state, scan_spec_t *sp) {
  weft_status_t *st = NULL;
  sp->body = attr_graph(x, node, "body", &st);
  if (st) return st;
  int64_t m = cf_onnx_attr_int(node, "num_scan_inputs", -1);
  size_t n = node->n_input < first_state ? 0 : node->n_input - first_state;
  if (m < 1 || (size_t)m > n)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: num_scan_inputs is %" G_GINT64_FORMAT
                           " for %zu inputs", x->node_name, m, node->n_input);
  sp->n_scan_in = (size_t)m;
  sp->n_state = n - sp->n_scan_in;
  if (node->n_output < sp->n_state)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s: %zu outputs for %zu state variables",
                           x->node_name, node->n_output, sp->n_state);
  sp->n_scan_out = node->n_output - sp->n_state;
  return NULL;
}

/* Scan 9+: inputs are the state variables then the scan inputs, no batch axis. */
static weft_status_t *map_scan_v9(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  scan_spec_t sp = {0};
  weft_status_t *st = scan_counts(x, node, 0, &sp);
  if (st) return st;
  sp.in_axes = scan_ints(x, node, "scan_input_axes", sp.n_scan_in, &st);
  sp.in_dirs = scan_ints(x, node, "scan_input_directions", sp.n_scan_in, &st);
  sp.out_axes = scan_ints(x, node, "scan_output_axes", sp.n_scan_out, &st);
  sp.out_dirs = scan_ints(x, node, "scan_output_directions", sp.n_scan_out, &st);
  if (st) return st;
  weft_output_t *ins = g_new0(weft_output_t, node->n_input + 1);
  for (size_t i = 0; i < node->n_input && st == NULL; i++) {
    ins[i] = cf_onnx_in(x, node, i);
    if (ins[i].node == NULL) st = cf_onnx_unsupported(x, "input %zu is missing", i);
  }
  sp.states = ins;
  sp.scans = ins + sp.n_state;
  weft_output_t *outs = g_new0(weft_output_t, node->n_output + 1);
  if (st == NULL) st = scan_as_loop(x, &sp, outs);
  for (size_t k = 0; k < node->n_output && st == NULL; k++) cf_onnx_bind_out(x, node, k, outs[k]);
  g_free(outs);
  g_free(ins);
  return st;
}

/* Scan 8: input 0 is the optional sequence_lens, and every input has a batch axis first (the scan
 * axis is 1): one Scan per batch entry, on its slices, and the results stacked again. */
static weft_status_t *map_scan_v8(cf_onnx_ctx_t *x, const Onnx__NodeProto *node) {
  scan_spec_t sp = {0};
  weft_status_t *st = scan_counts(x, node, 1, &sp);
  if (st) return st;
  sp.in_dirs = scan_ints(x, node, "directions", sp.n_scan_in, &st);
  if (st) return st;
  size_t n = node->n_input - 1;
  weft_output_t *ins = g_new0(weft_output_t, n + 1);
  int64_t batch = -1, steps = -1;
  for (size_t i = 0; i < n && st == NULL; i++) {
    ins[i] = cf_onnx_in(x, node, i + 1);
    int64_t dims[WEFT_MAX_RANK];
    int rank;
    if (ins[i].node == NULL) st = cf_onnx_unsupported(x, "input %zu is missing", i + 1);
    else if ((st = cf_onnx_need_shape(x, ins[i], &rank, dims))) break;
    else if (rank < (i < sp.n_state ? 1 : 2) || (batch >= 0 && dims[0] != batch))
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s: input %zu has no batch axis of %"
                           G_GINT64_FORMAT, x->node_name, i + 1, batch);
    else {
      batch = dims[0];
      if (i >= sp.n_state) steps = dims[1];
    }
  }
  if (st == NULL && cf_onnx_has_in(node, 0)) {
    /* sequence_lens shorter than the scan axis would need per-entry trip counts. */
    int64_t *lens = NULL;
    int nl = 0;
    if (cf_onnx_in_ints(x, node, 0, &lens, &nl, &st))
      for (int b = 0; b < nl && st == NULL; b++)
        if (lens[b] != steps)
          st = cf_onnx_unsupported(x, "sequence_lens %" G_GINT64_FORMAT " shorter than the %"
                                   G_GINT64_FORMAT " steps", lens[b], steps);
    g_free(lens);
  }
  /* Each batch entry is a Loop of its own: a batch past 4096 would build a graph that large. */
  if (st == NULL && (batch < 1 || batch > 4096))
    st = cf_onnx_unsupported(x, "a batch of %" G_GINT64_FORMAT, batch);
  size_t n_out = node->n_output;
  weft_output_t *slices = g_new0(weft_output_t, n + 1);
  weft_output_t *outs = g_new0(weft_output_t, n_out + 1);
  weft_output_t *stacked = g_new0(weft_output_t, (n_out + 1) * (size_t)MAX(batch, 1));
  sp.states = slices;
  sp.scans = slices + sp.n_state;
  for (int64_t b = 0; b < batch && st == NULL; b++) {
    weft_output_t idx = cf_onnx_const_scalar(x, WEFT_DT_INT64, (double)b, &st);
    weft_output_t axis0 = cf_onnx_const_scalar(x, WEFT_DT_INT32, 0, &st);
    for (size_t i = 0; i < n && st == NULL; i++) {
      weft_op_builder_t *g = cf_onnx_op(x, "GatherV2");
      weft_op_add_input(g, ins[i]);
      weft_op_add_input(g, idx);
      weft_op_add_input(g, axis0);
      slices[i] = cf_onnx_finish(x, g, &st);
    }
    if (st == NULL) st = scan_as_loop(x, &sp, outs);
    for (size_t k = 0; k < n_out; k++) stacked[k * (size_t)batch + (size_t)b] = outs[k];
  }
  for (size_t k = 0; k < n_out && st == NULL; k++) {
    weft_op_builder_t *b = cf_onnx_op(x, "Pack");
    weft_op_add_input_list(b, &stacked[k * (size_t)batch], (int)batch);
    weft_op_set_attr_int(b, "axis", 0);
    cf_onnx_bind_out(x, node, k, cf_onnx_finish(x, b, &st));
  }
  g_free(stacked);
  g_free(outs);
  g_free(slices);
  g_free(ins);
  return st;
}

const cf_onnx_row_t cf_onnx_rows_control_flow[] = {
    {"If", 1, map_if},
    {"Loop", 1, map_loop},
    {"Scan", 1, map_scan_v8},
    {"Scan", 9, map_scan_v9},
    {NULL, 0, NULL},
};
