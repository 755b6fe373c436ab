/* gradients_cf.c: weft_gradients through TensorFlow 1.x control flow, after TensorFlow's
 * control_flow_grad.py and control_flow_state.py (GradLoopState).
 *
 * A cond's gradient is built node by node in gradients.c (Switch -> Merge, Merge -> Switch on
 * the forward predicate); this file finds a Merge input's predicate and branch. A while loop's
 * gradient is built here as a whole, when the walk reaches the loop: a counter added to the
 * forward loop numbers its iterations, a gradient loop runs that many iterations backwards, each
 * forward value the backward body needs is written at its iteration's index into a TensorArray
 * (an index-addressed stack: parallel iterations may push out of order) and read back in the
 * gradient loop, and the gradients of loop-invariant (constant Enter) inputs are summed over
 * the iterations by an accumulator loop variable. Conds inside the body differentiate as anywhere
 * else, their saved values gated on the saved predicate (branch_gate). A loop nested in a loop
 * gets its gradient loop inside the enclosing gradient loop, built when that one's backward walk
 * reaches it: its arrays are made once per outer iteration and their handles, like its
 * iteration count, are saved by the enclosing loop as any of its values (one array per level,
 * as TensorFlow keeps one stack per level). */
#include "train_internal.h"

#include <string.h>

typedef struct cf_frame {
  const char *name; /* frame_name (borrowed from the Enter's attrs); NULL for the root */
  int parent;       /* -1 for the root */
  int last_id;      /* the highest id of a node of the loop (Enters and Exits included) that
                       leads to the ys */
  bool done;
} cf_frame_t;

struct weft__cf_grad {
  weft_graph_t *g;
  int n0;
  int *frame;     /* per node: the frame it runs in (an Enter: its parent frame) */
  int *loop_of;   /* per node: the loop (frame) it belongs to, Enters included; 0: none */
  GArray *frames; /* cf_frame_t */
  const guint8 *handle; /* per node: a resource handle (weft__grad_handles; borrowed) */
  weft_status_t *st;
};

static const char *op_of(const weft_node_t *n) { return n->op_name; }

static bool is_op(const weft_node_t *n, const char *a, const char *b) {
  return strcmp(op_of(n), a) == 0 || (b && strcmp(op_of(n), b) == 0);
}

static bool is_enter(const weft_node_t *n) { return is_op(n, "Enter", "RefEnter"); }
static bool is_exit(const weft_node_t *n) { return is_op(n, "Exit", "RefExit"); }
static bool is_next(const weft_node_t *n) { return is_op(n, "NextIteration", "RefNextIteration"); }
static bool is_merge(const weft_node_t *n) { return is_op(n, "Merge", "RefMerge"); }
static bool is_switch(const weft_node_t *n) { return is_op(n, "Switch", "RefSwitch"); }

static const char *attr_str(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_STRING ? (const char *)v->u.s.data : "";
}

static bool attr_flag(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_BOOL && v->u.b;
}

static int64_t attr_i(const weft_node_t *n, const char *name, int64_t dflt) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_INT ? v->u.i : dflt;
}

static int child_frame(weft__cf_grad_t *cf, const weft_node_t *enter, int parent) {
  const char *name = attr_str(enter, "frame_name");
  for (guint f = 1; f < cf->frames->len; f++) {
    cf_frame_t *fr = &g_array_index(cf->frames, cf_frame_t, f);
    if (strcmp(fr->name, name) == 0) return (int)f;
  }
  cf_frame_t fr = {name, parent, -1, false};
  g_array_append_val(cf->frames, fr);
  return (int)cf->frames->len - 1;
}

/* The frame node `src`'s outputs are in. */
static int out_frame(weft__cf_grad_t *cf, const weft_node_t *src) {
  int f = cf->frame[src->id];
  if (is_enter(src)) return child_frame(cf, src, f);
  if (is_exit(src) && f > 0) return g_array_index(cf->frames, cf_frame_t, f).parent;
  return f;
}

weft__cf_grad_t *weft__cf_grad_new(weft_graph_t *g, int n0, const guint8 *from_y,
                                   const guint8 *handle) {
  weft__cf_grad_t *cf = g_new0(weft__cf_grad_t, 1);
  cf->g = g;
  cf->handle = handle;
  cf->n0 = n0;
  cf->frame = g_new0(int, n0 > 0 ? n0 : 1);
  cf->loop_of = g_new0(int, n0 > 0 ? n0 : 1);
  cf->frames = g_array_new(FALSE, FALSE, sizeof(cf_frame_t));
  cf_frame_t root = {NULL, -1, -1, true};
  g_array_append_val(cf->frames, root);
  /* Creation order is topological except for the NextIteration -> Merge back edges. */
  for (int id = 0; id < n0; id++) {
    weft_node_t *n = weft_graph_node_at(g, id);
    int f = 0;
    bool set = false;
    for (int k = 0; k < n->n_inputs && !set; k++) {
      weft_node_t *src = n->inputs[k].src;
      if (src->id >= id) continue;
      f = out_frame(cf, src);
      set = true;
    }
    for (guint k = 0; n->control_inputs && k < n->control_inputs->len && !set; k++) {
      weft_node_t *src = g_ptr_array_index(n->control_inputs, k);
      if (src->id >= id) continue;
      f = out_frame(cf, src);
      set = true;
    }
    cf->frame[id] = f;
    int loop = is_enter(n) ? child_frame(cf, n, f) : f;
    cf->loop_of[id] = loop;
    /* Nodes an earlier gradient added to the loop (its counter) do not lead to the ys. */
    if (loop > 0 && from_y[id]) {
      cf_frame_t *fr = &g_array_index(cf->frames, cf_frame_t, loop);
      if (id > fr->last_id) fr->last_id = id;
    }
  }
  return cf;
}

void weft__cf_grad_free(weft__cf_grad_t *cf) {
  if (!cf) return;
  g_free(cf->frame);
  g_free(cf->loop_of);
  g_array_free(cf->frames, TRUE);
  g_free(cf);
}

int weft__cf_grad_loop_of(const weft__cf_grad_t *cf, int id) {
  return id < cf->n0 ? cf->loop_of[id] : 0;
}

bool weft__cf_grad_loop_due(const weft__cf_grad_t *cf, int id) {
  int loop = weft__cf_grad_loop_of(cf, id);
  if (loop <= 0) return false;
  const cf_frame_t *fr = &g_array_index(cf->frames, cf_frame_t, loop);
  return !fr->done && fr->last_id == id;
}

/* ---------------------------------------------------------------------------------------------
 * Conds */

/* Walks back from `o` to the innermost Switch whose branch it is in (*branch: its output); a
 * Merge met on the way closes an inner cond, skipped by going on before that cond's Switch. */
static weft_node_t *find_switch(weft_output_t o, int depth, int *branch, GHashTable *failed) {
  weft_node_t *n = o.node;
  if (depth > 10000 || g_hash_table_contains(failed, n)) return NULL;
  if (is_exit(n)) {
    /* A while loop in the branch (a cond returning a loop's result): its own Switch is the
     * loop's, not the cond's, so the walk goes on before the loop, from the value entering
     * the loop variable this Exit leaves (Exit <- Switch <- Merge <- Enter). */
    weft_node_t *loop_switch = n->n_inputs > 0 ? n->inputs[0].src : NULL;
    weft_node_t *loop_merge =
        loop_switch && is_switch(loop_switch) && loop_switch->n_inputs > 0
            ? loop_switch->inputs[0].src
            : NULL;
    for (int k = 0; loop_merge && is_merge(loop_merge) && k < loop_merge->n_inputs; k++) {
      weft_node_t *enter = loop_merge->inputs[k].src;
      if (!is_enter(enter) || enter->n_inputs < 1) continue;
      weft_node_t *s = find_switch(weft_out(enter->inputs[0].src, enter->inputs[0].src_index),
                                   depth + 1, branch, failed);
      if (s) return s;
    }
    g_hash_table_add(failed, n);
    return NULL;
  }
  if (is_switch(n)) {
    *branch = o.index;
    return n;
  }
  if (is_merge(n)) {
    int inner_branch;
    weft_node_t *inner =
        n->n_inputs > 0 ? find_switch(weft_out(n->inputs[0].src, n->inputs[0].src_index),
                                      depth + 1, &inner_branch, failed)
                        : NULL;
    weft_node_t *s = inner ? find_switch(weft_out(inner->inputs[0].src, inner->inputs[0].src_index),
                                         depth + 1, branch, failed)
                           : NULL;
    if (!s) g_hash_table_add(failed, n);
    return s;
  }
  for (int k = 0; k < n->n_inputs; k++) {
    weft_node_t *s =
        find_switch(weft_out(n->inputs[k].src, n->inputs[k].src_index), depth + 1, branch,
                    failed);
    if (s) return s;
  }
  /* A branch's constants hang on the branch's pivot by a control edge. */
  for (guint k = 0; n->control_inputs && k < n->control_inputs->len; k++) {
    weft_node_t *c = g_ptr_array_index(n->control_inputs, k);
    for (int j = 0; j < c->n_outputs; j++) {
      weft_node_t *s = find_switch(weft_out(c, j), depth + 1, branch, failed);
      if (s) return s;
    }
  }
  g_hash_table_add(failed, n);
  return NULL;
}

weft_status_t *weft__cf_cond_branch(const weft_node_t *merge, int input, weft_output_t *pred,
                                    int *branch) {
  weft_output_t o = weft_out(merge->inputs[input].src, merge->inputs[input].src_index);
  GHashTable *failed = g_hash_table_new(g_direct_hash, g_direct_equal);
  weft_node_t *s = find_switch(o, 0, branch, failed);
  g_hash_table_destroy(failed);
  if (!s)
    return weft_status_new(WEFT_UNIMPLEMENTED,
                           "gradient of '%s' (Merge): input %d comes from no Switch, so its "
                           "cond's predicate is unknown", merge->name, input);
  *pred = weft_out(s->inputs[1].src, s->inputs[1].src_index);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * While loops: the builder */

typedef struct lb lb_t;
struct lb {
  lb_t *parent;          /* the builder of the loop this one is nested in; NULL at the top */
  weft__cf_grad_t *cf;
  weft_graph_t *g;
  weft_status_t *st;
  int frame;             /* the forward loop's frame */
  const char *fname;     /* its frame_name */
  char *gname;           /* the gradient loop's frame_name */
  int64_t parallel;      /* the forward loop's parallel_iterations */
  weft_output_t pred;    /* the forward LoopCond */
  weft_node_t *loop_cond;
  bool has_conds;        /* the body holds a cond: saved values may need gating */
  GHashTable *in_grad;   /* weft_node_t* of the gradient frame */
  GHashTable *fwd_new;   /* weft_node_t* a nested loop's gradient added to the forward frame */
  GHashTable *entered;   /* "id:index" of an outside value -> its constant Enter (gradient frame) */
  GHashTable *stacked;   /* "id:index" of a forward value -> its read in the gradient loop */
  weft_output_t fc_index, fc_exit, flow_done, bc_index, bc_cond;
  weft_node_t *fc_add;
};

static const weft_output_t NONE = {NULL, 0};

static weft_node_t *finish(lb_t *b, weft_op_builder_t *ob) {
  if (b->st) {
    /* Dropping the builder: finishing it with a sticky error reports nothing new. */
    weft_node_t *unused = NULL;
    weft_status_t *st = weft_op_finish(ob, &unused);
    weft_status_free(st);
    return NULL;
  }
  weft_node_t *n = NULL;
  weft_status_t *st = weft_op_finish(ob, &n);
  if (st) {
    b->st = st;
    return NULL;
  }
  return n;
}

static weft_output_t op1(lb_t *b, const char *op, weft_output_t x) {
  if (b->st || !x.node) return NONE;
  weft_op_builder_t *ob = weft_op_new(b->g, op, NULL);
  weft_op_add_input(ob, x);
  weft_node_t *n = finish(b, ob);
  return n ? weft_out(n, 0) : NONE;
}

static weft_output_t op2(lb_t *b, const char *op, weft_output_t x, weft_output_t y) {
  if (b->st || !x.node || !y.node) return NONE;
  weft_op_builder_t *ob = weft_op_new(b->g, op, NULL);
  weft_op_add_input(ob, x);
  weft_op_add_input(ob, y);
  weft_node_t *n = finish(b, ob);
  return n ? weft_out(n, 0) : NONE;
}

static weft_output_t i32(lb_t *b, int32_t v) {
  if (b->st) return NONE;
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 0, NULL);
  *(int32_t *)weft_tensor_data(t) = v;
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(b->g, "Const", t, &st);
  weft_tensor_unref(t);
  if (st) b->st = st;
  return o;
}

static weft_output_t enter(lb_t *b, weft_output_t x, const char *frame, bool is_constant);
static bool child_of(const weft__cf_grad_t *cf, int inner, int outer);
static weft_output_t in_grad_frame(lb_t *b, weft_output_t o);

/* Value x of the frame around the forward loop (a root value at the top; for a nested loop,
 * entered through every enclosing loop) as the loop's Enters take it. */
static weft_output_t around_forward(lb_t *b, weft_output_t x) {
  if (!b->parent || b->st) return x;
  return enter(b->parent, around_forward(b->parent, x), b->parent->fname, true);
}

/* Forward value x of the frame around the forward loop as seen in the frame around the
 * gradient loop: itself at the top; for a nested loop, the enclosing gradient loop's copy. */
static weft_output_t around_grad(lb_t *b, weft_output_t x) {
  return b->parent ? in_grad_frame(b->parent, x) : x;
}

/* A node made in the frame around the forward loop, to be saved for the gradient like the
 * enclosing loop's own values (the nested loop's iteration count, its arrays). */
static weft_output_t of_around_forward(lb_t *b, weft_output_t x) {
  if (b->parent && x.node) g_hash_table_add(b->parent->fwd_new, x.node);
  return x;
}

/* A node made in the frame around the gradient loop: the enclosing gradient loop's own. */
static weft_output_t of_around_grad(lb_t *b, weft_output_t x) {
  if (b->parent && x.node) g_hash_table_add(b->parent->in_grad, x.node);
  return x;
}

static weft_output_t enter(lb_t *b, weft_output_t x, const char *frame, bool is_constant) {
  if (b->st || !x.node) return NONE;
  weft_op_builder_t *ob = weft_op_new(b->g, "Enter", NULL);
  weft_op_add_input(ob, x);
  weft_op_set_attr_string(ob, "frame_name", frame);
  weft_op_set_attr_bool(ob, "is_constant", is_constant);
  weft_op_set_attr_int(ob, "parallel_iterations", b->parallel);
  weft_node_t *n = finish(b, ob);
  return n ? weft_out(n, 0) : NONE;
}

/* A loop variable's Merge, its second (back edge) input a placeholder until close_loop. */
static weft_node_t *open_merge(lb_t *b, weft_output_t entered) {
  if (b->st || !entered.node) return NULL;
  weft_output_t ins[2] = {entered, entered};
  weft_op_builder_t *ob = weft_op_new(b->g, "Merge", NULL);
  weft_op_add_input_list(ob, ins, 2);
  return finish(b, ob);
}

/* NextIteration(next) closes the Merge's back edge, as a GraphDef import links it. */
static void close_loop(lb_t *b, weft_node_t *merge, weft_output_t next) {
  weft_output_t ni = op1(b, "NextIteration", next);
  if (b->st || !merge) return;
  merge->inputs[1].src = ni.node;
  merge->inputs[1].src_index = 0;
}

static weft_node_t *switch_on(lb_t *b, weft_output_t x, weft_output_t pred) {
  if (b->st || !x.node || !pred.node) return NULL;
  weft_op_builder_t *ob = weft_op_new(b->g, "Switch", NULL);
  weft_op_add_input(ob, x);
  weft_op_add_input(ob, pred);
  return finish(b, ob);
}

static void mark(lb_t *b, weft_output_t o) {
  if (o.node) g_hash_table_add(b->in_grad, o.node);
}

/* The forward iteration counter (0, 1, ...: fc_index in iteration k is k), its Exit (the
 * iteration count) and, from it, the backward counter and the gradient loop's predicate. */
static void build_counters(lb_t *b) {
  weft_output_t fe = enter(b, around_forward(b, i32(b, 0)), b->fname, false);
  weft_node_t *fm = open_merge(b, fe);
  weft_node_t *fs = switch_on(b, fm ? weft_out(fm, 0) : NONE, b->pred);
  if (!fs) return;
  b->fc_index = weft_out(fs, 1);
  weft_output_t add =
      op2(b, "AddV2", b->fc_index, enter(b, around_forward(b, i32(b, 1)), b->fname, true));
  b->fc_add = add.node;
  close_loop(b, fm, add);
  b->fc_exit = of_around_forward(b, op1(b, "Exit", weft_out(fs, 0)));
  weft_op_builder_t *ob = weft_op_new(b->g, "Cast", NULL);
  weft_op_add_input(ob, b->fc_exit);
  weft_op_set_attr_type(ob, "DstT", WEFT_DT_FLOAT);
  weft_node_t *cast = finish(b, ob);
  b->flow_done = of_around_forward(b, cast ? weft_out(cast, 0) : NONE);

  weft_output_t be = enter(b, around_grad(b, b->fc_exit), b->gname, false);
  weft_node_t *bm = open_merge(b, be);
  weft_output_t zero = enter(b, around_grad(b, i32(b, 0)), b->gname, true);
  weft_output_t more = op2(b, "Greater", bm ? weft_out(bm, 0) : NONE, zero);
  b->bc_cond = op1(b, "LoopCond", more);
  weft_node_t *bs = switch_on(b, bm ? weft_out(bm, 0) : NONE, b->bc_cond);
  if (!bs) return;
  b->bc_index =
      op2(b, "Sub", weft_out(bs, 1), enter(b, around_grad(b, i32(b, 1)), b->gname, true));
  close_loop(b, bm, b->bc_index);
  op1(b, "Exit", weft_out(bs, 0));
}

/* The value made for o in `cache` ({NULL, 0}: none yet; *key is then the key to remember it
 * under with remember). */
static weft_output_t cached(GHashTable *cache, weft_output_t o, char **key) {
  *key = g_strdup_printf("%d:%d", o.node->id, o.index);
  weft_output_t *v = g_hash_table_lookup(cache, *key);
  if (!v) return NONE;
  g_free(*key);
  *key = NULL;
  return *v;
}

static weft_output_t remember(GHashTable *cache, char *key, weft_output_t made) {
  weft_output_t *v = g_new(weft_output_t, 1);
  *v = made;
  g_hash_table_insert(cache, key, v);
  return made;
}

/* A value from outside both loops, entered into the gradient loop once. */
static weft_output_t entered_outside(lb_t *b, weft_output_t o) {
  char *key;
  weft_output_t e = cached(b->entered, o, &key);
  return key ? remember(b->entered, key, enter(b, around_grad(b, o), b->gname, true)) : e;
}

/* Forward value o (frame of the loop) as the gradient loop reads it: written at the forward
 * iteration's index into a TensorArray, read back at the same index. The counter's increment
 * waits for the write, so the counter's Exit (the read's flow) comes after every write. */
static weft_output_t stacked(lb_t *b, weft_output_t o);

/* The cond Switch inside the loop body whose branch forward value o is in (NULL: none). */
static weft_node_t *cond_of(lb_t *b, weft_output_t o, int *branch) {
  if (!b->has_conds) return NULL;
  GHashTable *failed = g_hash_table_new(g_direct_hash, g_direct_equal);
  weft_node_t *s = find_switch(o, 0, branch, failed);
  g_hash_table_destroy(failed);
  if (!s || s->id >= b->cf->n0 || b->cf->loop_of[s->id] != b->frame ||
      b->cf->frame[s->id] != b->frame || s->inputs[1].src == b->loop_cond)
    return NULL;
  return s;
}

/* A value in a cond branch is written only in the iterations that take the branch: the
 * counter then waits for a Merge of the write and of the branch not taken (one of them is live
 * in each iteration), and the gradient loop reads at an index switched on the saved predicate,
 * so the read is dead where the write never happened, as the gradient of the branch is. */
static weft_output_t branch_gate(lb_t *b, weft_node_t *cond, int branch, weft_node_t *write,
                                 weft_output_t *index) {
  weft_output_t pred = weft_out(cond->inputs[1].src, cond->inputs[1].src_index);
  weft_node_t *other = switch_on(b, b->fc_index, pred);
  weft_output_t done = NONE;
  if (other && write) {
    weft_op_builder_t *ob = weft_op_new(b->g, "Cast", NULL);
    weft_op_add_input(ob, weft_out(other, 1 - branch));
    weft_op_set_attr_type(ob, "DstT", WEFT_DT_FLOAT);
    weft_node_t *cast = finish(b, ob);
    if (cast && !b->st) {
      weft_output_t ins[2] = {weft_out(write, 0), weft_out(cast, 0)};
      ob = weft_op_new(b->g, "Merge", NULL);
      weft_op_add_input_list(ob, ins, 2);
      weft_node_t *m = finish(b, ob);
      done = m ? weft_out(m, 0) : NONE;
    }
  }
  weft_node_t *gate = switch_on(b, b->bc_index, stacked(b, pred));
  *index = gate ? weft_out(gate, branch) : NONE;
  mark(b, *index);
  return done;
}

static weft_output_t stacked(lb_t *b, weft_output_t o) {
  char *key;
  weft_output_t known = cached(b->stacked, o, &key);
  if (!key) return known;
  int branch = 0;
  weft_node_t *cond = cond_of(b, o, &branch);
  weft_dtype_t dt = weft__dtype_base(o.node->output_types[o.index]);
  weft_output_t r = NONE;
  weft_op_builder_t *ob = weft_op_new(b->g, "TensorArrayV3", NULL);
  weft_op_add_input(ob, around_forward(b, i32(b, 0)));
  weft_op_set_attr_type(ob, "dtype", dt);
  weft_op_set_attr_bool(ob, "dynamic_size", true);
  weft_op_set_attr_bool(ob, "clear_after_read", true);
  weft_node_t *ta = finish(b, ob);
  if (ta) {
    of_around_forward(b, weft_out(ta, 0));
    ob = weft_op_new(b->g, "TensorArrayWriteV3", NULL);
    weft_op_add_input(ob, enter(b, weft_out(ta, 0), b->fname, true));
    weft_op_add_input(ob, b->fc_index);
    weft_op_add_input(ob, o);
    weft_op_add_input(ob, enter(b, weft_out(ta, 1), b->fname, true));
    weft_node_t *w = finish(b, ob);
    weft_output_t index = b->bc_index;
    weft_node_t *wait_for = w;
    if (cond) wait_for = branch_gate(b, cond, branch, w, &index).node;
    if (wait_for && b->fc_add) {
      /* Nodes without control inputs share one empty array (graph.c): the node gets its own. */
      if (b->fc_add->control_inputs->len == 0) b->fc_add->control_inputs = g_ptr_array_new();
      g_ptr_array_add(b->fc_add->control_inputs, wait_for);
    }
    ob = weft_op_new(b->g, "TensorArrayReadV3", NULL);
    weft_op_add_input(ob, enter(b, around_grad(b, weft_out(ta, 0)), b->gname, true));
    weft_op_add_input(ob, index);
    weft_op_add_input(ob, enter(b, around_grad(b, b->flow_done), b->gname, true));
    weft_op_set_attr_type(ob, "dtype", dt);
    weft_node_t *rn = finish(b, ob);
    if (rn) r = weft_out(rn, 0);
  }
  mark(b, r);
  return remember(b->stacked, key, r);
}

/* Where value o, used by a node of the gradient loop, comes from there. */
static weft_output_t in_grad_frame(lb_t *b, weft_output_t o) {
  if (b->st || !o.node || g_hash_table_contains(b->in_grad, o.node)) return o;
  weft__cf_grad_t *cf = b->cf;
  int id = o.node->id;
  if (g_hash_table_contains(b->fwd_new, o.node)) return stacked(b, o);
  /* A nested loop's Exit is a value of this loop's frame, saved like the body's own. */
  if (id < cf->n0 && is_exit(o.node) && child_of(cf, cf->loop_of[id], b->frame))
    return stacked(b, o);
  if (id < cf->n0 && cf->loop_of[id] == b->frame) {
    if (is_enter(o.node)) {
      if (attr_flag(o.node, "is_constant"))
        return entered_outside(b, weft_out(o.node->inputs[0].src, o.node->inputs[0].src_index));
      b->st = weft_status_new(WEFT_UNIMPLEMENTED,
                              "gradient of while loop '%s': the gradient needs the value of its "
                              "loop variable Enter '%s' itself", b->fname, o.node->name);
      return NONE;
    }
    return stacked(b, o);
  }
  return entered_outside(b, o);
}

/* Moves the nodes a gradient function added (ids from..) into the gradient loop: nodes with
 * data inputs join its frame, their inputs from other frames rewired there; input-less nodes
 * (constants) stay outside and are entered. */
static void adopt(lb_t *b, int from) {
  int to = weft_graph_num_nodes(b->g);
  for (int id = from; id < to; id++) {
    weft_node_t *n = weft_graph_node_at(b->g, id);
    if (n->n_inputs > 0) g_hash_table_add(b->in_grad, n);
  }
  for (int id = from; id < to && !b->st; id++) {
    weft_node_t *n = weft_graph_node_at(b->g, id);
    if (!g_hash_table_contains(b->in_grad, n)) continue;
    for (int k = 0; k < n->n_inputs && !b->st; k++) {
      weft_output_t src = weft_out(n->inputs[k].src, n->inputs[k].src_index);
      if (g_hash_table_contains(b->in_grad, src.node)) continue;
      weft_output_t r = in_grad_frame(b, src);
      if (r.node) {
        n->inputs[k].src = r.node;
        n->inputs[k].src_index = r.index;
      }
    }
  }
}

static weft_output_t aggregate(lb_t *b, GArray *list) {
  if (b->st || !list || list->len == 0) return NONE;
  if (list->len == 1) return g_array_index(list, weft_output_t, 0);
  weft_op_builder_t *ob = weft_op_new(b->g, "AddN", NULL);
  weft_op_add_input_list(ob, (const weft_output_t *)(void *)list->data, (int)list->len);
  weft_node_t *n = finish(b, ob);
  return n ? weft_out(n, 0) : NONE;
}

static void arrive(GArray ***arrived, weft_output_t at, weft_output_t grad) {
  weft_node_t *n = at.node;
  if (!arrived[n->id]) arrived[n->id] = g_new0(GArray *, n->n_outputs);
  if (!arrived[n->id][at.index])
    arrived[n->id][at.index] = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
  g_array_append_val(arrived[n->id][at.index], grad);
}

static bool is_float_type(weft_dtype_t t) {
  t = weft__dtype_base(t);
  return t == WEFT_DT_FLOAT || t == WEFT_DT_DOUBLE || t == WEFT_DT_HALF || t == WEFT_DT_BFLOAT16;
}

/* Zeros for "no gradient" of x (a handle's: of its variable, dtype of `like`); every node made
 * is handed to own (the frame it runs in). */
static weft_output_t zeros_for(lb_t *b, weft_output_t x, weft_output_t like,
                               weft_output_t (*own)(lb_t *, weft_output_t)) {
  if (b->st || !x.node || !like.node) return NONE;
  int from = weft_graph_num_nodes(b->g);
  weft_output_t z = NONE;
  weft_dtype_t dtype = weft__dtype_base(like.node->output_types[like.index]);
  b->st = weft__grad_zeros_like(b->g, x, dtype, &z);
  for (int id = from; id < weft_graph_num_nodes(b->g) && !b->st; id++)
    own(b, weft_out(weft_graph_node_at(b->g, id), 0));
  return b->st ? NONE : z;
}

static weft_output_t own_in_grad(lb_t *b, weft_output_t o) {
  mark(b, o);
  return o;
}

static GArray *arrived_at(GArray ***arrived, weft_node_t *n, int index) {
  return arrived[n->id] ? arrived[n->id][index] : NULL;
}

/* The gradient d that node n (in a cond branch of the body) sends to `at`, outside that branch
 * (a value the branch read without a Switch of its own, unlike tf.cond's graphs): dead in the
 * iterations that skip the branch, so merged with zeros switched to the other branch. */
static weft_output_t live_outside_branch(lb_t *b, weft_node_t *n, weft_output_t at,
                                         weft_output_t d) {
  int branch = 0, at_branch = 0;
  weft_node_t *cond = n->n_outputs > 0 ? cond_of(b, weft_out(n, 0), &branch) : NULL;
  if (!cond || b->st || (at.node == cond && at.index == branch)) return d;
  if (at.node->n_outputs > 0 && cond_of(b, at, &at_branch) == cond && at_branch == branch)
    return d;
  weft_output_t pred = weft_out(cond->inputs[1].src, cond->inputs[1].src_index);
  weft_output_t zeros = zeros_for(b, in_grad_frame(b, at), d, own_in_grad);
  weft_node_t *gate = switch_on(b, zeros, stacked(b, pred));
  if (!gate) return d;
  weft_output_t ins[2] = {d, weft_out(gate, 1 - branch)};
  weft_op_builder_t *ob = weft_op_new(b->g, "Merge", NULL);
  weft_op_add_input_list(ob, ins, 2);
  weft_node_t *m = finish(b, ob);
  if (!m) return d;
  mark(b, weft_out(m, 0));
  mark(b, weft_out(gate, 0));
  return weft_out(m, 0);
}

/* A loop variable: Enter -> Merge -> Switch -> (Exit, body ... -> NextIteration -> Merge). */
typedef struct loop_var {
  weft_node_t *enter, *merge, *sw, *exit, *next;
  weft_node_t *gmerge, *gswitch;
} loop_var_t;

/* The loop's structure, checked for what the gradient loop supports. */
static weft_status_t *loop_structure(lb_t *b, GArray *vars, weft_node_t **loop_cond) {
  weft__cf_grad_t *cf = b->cf;
  int n0 = cf->n0;
  *loop_cond = NULL;
  for (int id = 0; id < n0; id++) {
    weft_node_t *n = weft_graph_node_at(b->g, id);
    if (cf->loop_of[id] != b->frame) continue;
    if (is_op(n, "LoopCond", NULL)) *loop_cond = n;
  }
  for (int id = 0; id < n0 && *loop_cond; id++) {
    weft_node_t *n = weft_graph_node_at(b->g, id);
    if (cf->loop_of[id] == b->frame && cf->frame[id] == b->frame && is_switch(n) &&
        n->inputs[1].src != *loop_cond)
      b->has_conds = true;
  }
  if (!*loop_cond)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "gradient of while loop '%s': the loop has no "
                           "LoopCond", b->fname);
  for (int id = 0; id < n0; id++) {
    weft_node_t *n = weft_graph_node_at(b->g, id);
    if (cf->loop_of[id] != b->frame || cf->frame[id] != b->frame) continue;
    for (int k = 0; k < n->n_inputs; k++) {
      if (weft__dtype_is_ref(n->input_types[k]) && b->parallel > 1 && !is_merge(n) &&
          !is_switch(n) && !is_exit(n) && !is_next(n) &&
          !is_op(n, "Identity", "RefIdentity") &&
          (g_str_has_prefix(op_of(n), "Assign") || g_str_has_prefix(op_of(n), "Scatter") ||
           g_str_has_prefix(op_of(n), "Apply")))
        return weft_status_new(WEFT_UNIMPLEMENTED,
                               "gradient of while loop '%s': node '%s' (%s) mutates a Ref "
                               "variable with parallel_iterations=%" G_GINT64_FORMAT
                               "; gradients of such loops are not supported", b->fname, n->name,
                               op_of(n), b->parallel);
    }
    if (!is_merge(n)) continue;
    loop_var_t v = {0};
    v.merge = n;
    for (int k = 0; k < n->n_inputs; k++) {
      weft_node_t *src = n->inputs[k].src;
      if (is_enter(src)) v.enter = src;
      else if (is_next(src)) v.next = src;
    }
    if (!v.enter && !v.next) continue; /* a cond's Merge in the body */
    if (!v.enter || !v.next || n->n_inputs != 2)
      return weft_status_new(WEFT_UNIMPLEMENTED, "gradient of while loop '%s': Merge '%s' is "
                             "not a loop variable's (Enter, NextIteration) pair", b->fname,
                             n->name);
    for (int id2 = id + 1; id2 < n0; id2++) {
      weft_node_t *m = weft_graph_node_at(b->g, id2);
      if (is_switch(m) && m->inputs[0].src == n) v.sw = m;
    }
    for (int id2 = v.sw ? v.sw->id + 1 : n0; id2 < n0; id2++) {
      weft_node_t *m = weft_graph_node_at(b->g, id2);
      if (is_exit(m) && m->inputs[0].src == v.sw) v.exit = m;
    }
    g_array_append_val(vars, v);
  }
  return NULL;
}

/* Whether loop `inner` is nested, directly, in loop `outer`. */
static bool child_of(const weft__cf_grad_t *cf, int inner, int outer) {
  return inner > 0 && g_array_index(cf->frames, cf_frame_t, inner).parent == outer;
}

/* Builds the gradient loop of the loop node id is the last node of; parent: the builder of
 * the loop it is nested in (its gradient loop then runs in parent's, once per iteration of it,
 * reading the values it saved in that iteration: one TensorArray per level, as TensorFlow keeps
 * one stack per level). */
static weft_status_t *grad_loop(weft__cf_grad_t *cf, int id, GArray ***arrived,
                                const guint8 *from_y, const guint8 *to_x, lb_t *parent) {
  int loop = cf->loop_of[id];
  cf_frame_t *fr = &g_array_index(cf->frames, cf_frame_t, loop);
  fr->done = true;
  weft_graph_t *g = cf->g;
  int n0 = cf->n0;
  lb_t b = {0};
  b.parent = parent;
  b.cf = cf;
  b.g = g;
  b.frame = loop;
  b.fname = fr->name;
  if (fr->parent != (parent ? parent->frame : 0)) {
    /* A nested loop the walk of the enclosing loop's body did not reach (no gradient reached
     * that loop): nothing to build, unless a gradient arrived at one of its Exits. */
    for (int i = 0; i < n0; i++)
      if (cf->loop_of[i] == loop && is_exit(weft_graph_node_at(g, i)) && arrived[i])
        return weft_status_new(WEFT_UNIMPLEMENTED, "gradient of while loop '%s': reached "
                               "outside the gradient of the loop it is nested in", b.fname);
    return NULL;
  }
  b.parallel = 10;
  for (int i = 0; i < n0; i++) {
    weft_node_t *n = weft_graph_node_at(g, i);
    if (cf->loop_of[i] == loop && is_enter(n)) {
      b.parallel = attr_i(n, "parallel_iterations", 10);
      break;
    }
  }
  GArray *vars = g_array_new(FALSE, TRUE, sizeof(loop_var_t));
  weft_node_t *loop_cond = NULL;
  weft_status_t *st = loop_structure(&b, vars, &loop_cond);
  bool any = false;
  for (guint i = 0; i < vars->len && !st; i++) {
    loop_var_t *v = &g_array_index(vars, loop_var_t, i);
    if (!v->exit) continue;
    for (int id2 = v->exit->id + 1; id2 < n0 && !st; id2++) {
      weft_node_t *m = weft_graph_node_at(g, id2);
      if (id2 >= fr->last_id) break;
      for (int k = 0; k < m->n_inputs && from_y[id2]; k++)
        if (m->inputs[k].src == v->exit && cf->loop_of[id2] != loop)
          st = weft_status_new(WEFT_UNIMPLEMENTED, "gradient of while loop '%s': node '%s' "
                               "uses its Exit '%s' before the loop's last node was added",
                               b.fname, m->name, v->exit->name);
    }
    if (arrived_at(arrived, v->exit, 0)) any = true;
  }
  if (st || !any) {
    g_array_free(vars, TRUE);
    return st;
  }
  b.pred = weft_out(loop_cond, 0);
  b.loop_cond = loop_cond;
  b.gname = g_strdup_printf("%s/gradients_%d", b.fname, n0);
  b.in_grad = g_hash_table_new(g_direct_hash, g_direct_equal);
  b.fwd_new = g_hash_table_new(g_direct_hash, g_direct_equal);
  b.entered = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  b.stacked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  char *scope = g_strdup_printf("%s_grad", b.fname);
  weft_graph_push_name_scope(g, scope);
  g_free(scope);
  /* The counter, the saved values and the gradient loop go where the loop runs: a loop's
   * structure must be on its LoopCond's task (partition.c builds control loops for the rest). */
  const char *loop_device = loop_cond->requested_device;
  bool on_device = loop_device && *loop_device;
  if (on_device) weft_graph_push_device(g, loop_device);

  build_counters(&b);
  mark(&b, b.bc_index);
  mark(&b, b.bc_cond);

  /* The loop variables of the gradient loop: one per float forward variable, entered with the
   * gradient of its Exit; each iteration hands the body the gradient of its NextIteration. */
  for (guint i = 0; i < vars->len && !b.st; i++) {
    loop_var_t *v = &g_array_index(vars, loop_var_t, i);
    if (!v->exit || !v->sw || !is_float_type(v->merge->output_types[0])) continue;
    weft_output_t d = aggregate(&b, arrived_at(arrived, v->exit, 0));
    if (!d.node)
      d = of_around_grad(&b, op1(&b, "ZerosLike", around_grad(&b, weft_out(v->exit, 0))));
    v->gmerge = open_merge(&b, enter(&b, d, b.gname, false));
    v->gswitch = switch_on(&b, v->gmerge ? weft_out(v->gmerge, 0) : NONE, b.bc_cond);
    if (!v->gswitch) break;
    mark(&b, weft_out(v->gswitch, 0));
    weft_output_t dx = of_around_grad(&b, op1(&b, "Exit", weft_out(v->gswitch, 0)));
    weft_node_t *src = v->enter->inputs[0].src;
    if (dx.node && src->id < n0 && to_x[src->id] && from_y[src->id])
      arrive(arrived, weft_out(src, v->enter->inputs[0].src_index), dx);
    weft_node_t *nx = v->next;
    arrive(arrived, weft_out(nx->inputs[0].src, nx->inputs[0].src_index),
           weft_out(v->gswitch, 1));
  }

  /* The body, backwards. */
  for (int i = fr->last_id; i >= 0 && !b.st; i--) {
    weft_node_t *n = weft_graph_node_at(g, i);
    if (child_of(cf, cf->loop_of[i], loop) && weft__cf_grad_loop_due(cf, i)) {
      b.st = grad_loop(cf, i, arrived, from_y, to_x, &b);
      continue;
    }
    if (cf->loop_of[i] != loop || cf->frame[i] != loop || !arrived[i]) continue;
    if (is_enter(n) || is_exit(n) || is_next(n)) continue;
    if (is_switch(n) && n->inputs[1].src == loop_cond) continue;
    if (is_merge(n) && n->n_inputs > 0 &&
        (is_enter(n->inputs[0].src) || is_next(n->inputs[0].src)))
      continue;
    if (!to_x[i] || !from_y[i]) continue;
    bool needed = false;
    for (int k = 0; k < n->n_inputs; k++) {
      weft_node_t *src = n->inputs[k].src;
      if (to_x[src->id] && from_y[src->id] && weft__grad_edge(cf->handle, n, k)) needed = true;
    }
    if (!needed) continue;
    weft_output_t *dy = g_new0(weft_output_t, n->n_outputs > 0 ? n->n_outputs : 1);
    bool some = false;
    for (int k = 0; k < n->n_outputs; k++) {
      dy[k] = aggregate(&b, arrived[i][k]);
      mark(&b, dy[k]);
      some = some || dy[k].node;
    }
    weft_output_t *dx = g_new0(weft_output_t, n->n_inputs > 0 ? n->n_inputs : 1);
    if (some) {
      char *s = g_strdup_printf("%s_grad", n->name);
      weft_graph_push_name_scope(g, s);
      g_free(s);
      /* A body node pinned elsewhere (a read on a ps) gets its gradient, and the values saved
       * for it, on its own device, as TensorFlow's colocate_gradients_with_ops: that part of the
       * gradient loop then runs on its task too (partition.c's control loops). */
      const char *own = n->requested_device;
      bool elsewhere = on_device && own && *own && strcmp(own, loop_device) != 0;
      if (elsewhere) weft_graph_push_device(g, own);
      int from = weft_graph_num_nodes(g);
      weft_status_t *gst = weft__gradient_one(g, n, dy, dx);
      if (gst && !b.st) b.st = gst;
      else weft_status_free(gst);
      adopt(&b, from);
      if (elsewhere) weft_graph_pop_device(g);
      weft_graph_pop_name_scope(g);
    }
    for (int k = 0; k < n->n_inputs && !b.st; k++) {
      weft_node_t *src = n->inputs[k].src;
      if (!dx[k].node || !to_x[src->id] || !from_y[src->id]) continue;
      if (!weft__grad_edge(cf->handle, n, k)) continue;
      weft_output_t d = in_grad_frame(&b, dx[k]);
      /* A nested loop's Exits take their gradients too, for its own gradient loop. */
      if (cf->loop_of[src->id] != loop && !child_of(cf, cf->loop_of[src->id], loop)) continue;
      weft_output_t at = weft_out(src, n->inputs[k].src_index);
      if (!is_switch(n)) d = live_outside_branch(&b, n, at, d);
      arrive(arrived, at, d);
    }
    g_free(dy);
    g_free(dx);
  }

  /* Close the gradient loop variables with the body's gradients of the forward Switches. */
  for (guint i = 0; i < vars->len && !b.st; i++) {
    loop_var_t *v = &g_array_index(vars, loop_var_t, i);
    if (!v->gmerge) continue;
    GArray *all = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
    GArray *parts[2] = {arrived_at(arrived, v->sw, 1), arrived_at(arrived, v->merge, 0)};
    for (int p = 0; p < 2; p++)
      if (parts[p]) g_array_append_vals(all, parts[p]->data, parts[p]->len);
    weft_output_t d = aggregate(&b, all);
    g_array_free(all, TRUE);
    if (!d.node) d = op1(&b, "ZerosLike", weft_out(v->gswitch, 1));
    close_loop(&b, v->gmerge, d);
  }

  /* Loop invariants (constant Enters): their gradients summed over the iterations. */
  for (int i = 0; i < n0 && !b.st; i++) {
    weft_node_t *n = weft_graph_node_at(g, i);
    if (cf->loop_of[i] != loop || !is_enter(n) || !attr_flag(n, "is_constant")) continue;
    weft_output_t d = aggregate(&b, arrived_at(arrived, n, 0));
    weft_node_t *src = n->inputs[0].src;
    if (!d.node || !to_x[src->id] || !from_y[src->id]) continue;
    weft_output_t x = weft_out(src, n->inputs[0].src_index);
    weft_output_t zeros = zeros_for(&b, around_grad(&b, x), d, of_around_grad);
    weft_node_t *am = open_merge(&b, enter(&b, zeros, b.gname, false));
    weft_node_t *as = switch_on(&b, am ? weft_out(am, 0) : NONE, b.bc_cond);
    if (!as) break;
    close_loop(&b, am, op2(&b, "AddV2", weft_out(as, 1), d));
    weft_output_t total = of_around_grad(&b, op1(&b, "Exit", weft_out(as, 0)));
    if (total.node) arrive(arrived, x, total);
  }

  if (on_device) weft_graph_pop_device(g);
  weft_graph_pop_name_scope(g);
  g_hash_table_destroy(b.in_grad);
  g_hash_table_destroy(b.fwd_new);
  g_hash_table_destroy(b.entered);
  g_hash_table_destroy(b.stacked);
  g_free(b.gname);
  g_array_free(vars, TRUE);
  return b.st;
}

weft_status_t *weft__cf_grad_loop(weft__cf_grad_t *cf, int id, GArray ***arrived,
                                  const guint8 *from_y, const guint8 *to_x) {
  return grad_loop(cf, id, arrived, from_y, to_x, NULL);
}
