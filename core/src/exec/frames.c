/* frames.c: the executor for steps with TensorFlow 1.x control flow (Switch, Merge, Enter, Exit,
 * NextIteration, LoopCond, ControlTrigger and the Ref forms), after TensorFlow's executor
 * (common_runtime/executor.cc, propagator_state.cc) and "Dynamic Control Flow in Large-Scale
 * Machine Learning" (Yu et al., 2018).
 *
 * Every value carries deadness: the untaken output of a Switch is dead, a node with a dead input
 * (or a control input from a dead node) is dead, its kernel does not run and all its outputs are
 * dead, except a Merge, which forwards the first live input and is dead only when all its data
 * inputs are. A loop is a frame: Enter moves a value into the child frame named by frame_name
 * (a constant Enter's value reaches every iteration), NextIteration into the next iteration of its
 * frame, Exit back to the parent frame. Each (frame, iteration) has its own pending counts and
 * input slots; at most parallel_iterations iterations of a frame run at once, the rest wait. A
 * frame is done when its Enters have all arrived and its iterations all finished; its dead Exits
 * then propagate deadness to the parent.
 *
 * Steps without these ops never come here: executor.c keeps its own lock-free path for them. This
 * path takes one lock per step around the bookkeeping and runs kernels outside it. */
#include "frames_internal.h"
#include "kernel_call.h"

#include <string.h>

typedef enum {
  CF_NORMAL = 0,
  CF_SWITCH,
  CF_MERGE,
  CF_ENTER,
  CF_EXIT,
  CF_NEXT,
  CF_FORWARD, /* LoopCond: its input is its output */
  CF_TRIGGER, /* ControlTrigger: runs, even when its inputs are dead */
} cf_kind_t;

typedef struct cf_edge {
  int dst;
  int dst_slot; /* -1: control edge */
  int src_slot;
} cf_edge_t;

typedef struct cf_fetch {
  int fetch;
  int output;
} cf_fetch_t;

typedef struct cf_node {
  const weft_node_t *node;
  weft__kernel_instance_t *kinst;
  cf_kind_t kind;
  int frame;          /* static frame the node runs in */
  int child_frame;    /* CF_ENTER: the static frame its output enters */
  bool is_constant;   /* CF_ENTER */
  int parallel_iterations;
  int local;          /* index among its frame's nodes: its slot in an iteration's counts */
  int input_base;     /* its first input slot in an iteration of its frame */
  int n_data_edges;   /* data inputs produced inside the step */
  int initial_pending;
  int *feed_of;       /* per input: feed index, or -1 */
  bool *in_host;      /* per input: the kernel reads it from host memory */
  bool *is_ref;       /* per input: the kernel wants the reference itself */
  cf_edge_t *edges;
  int n_edges;
  cf_fetch_t *fetches;
  int n_fetches;
} cf_node_t;

typedef struct cf_frame_info {
  char *name;   /* frame_name ("_root" for the root) */
  int parent;   /* -1 for the root */
  int n_enters; /* Enter nodes into the frame */
  /* An iteration holds counts and input slots for its frame's nodes only (TensorFlow's per-frame
   * pending counts): a long loop in a big graph pays for the loop body, not the graph. */
  int n_nodes;
  int total_inputs;
  int *initial_pending; /* per local index */
} cf_frame_info_t;

struct weft__cf_executor {
  int n_nodes;
  cf_node_t *nodes;
  int *roots;
  int n_roots;
  cf_frame_info_t *frames;
  int n_frames;
  int n_fetches;
  int *fetch_from_feed;
};

static cf_kind_t kind_of(const char *op) {
  static const struct {
    const char *op;
    cf_kind_t kind;
  } kinds[] = {
      {"Switch", CF_SWITCH},      {"RefSwitch", CF_SWITCH},      {"Merge", CF_MERGE},
      {"RefMerge", CF_MERGE},     {"Enter", CF_ENTER},           {"RefEnter", CF_ENTER},
      {"Exit", CF_EXIT},          {"RefExit", CF_EXIT},          {"NextIteration", CF_NEXT},
      {"RefNextIteration", CF_NEXT}, {"LoopCond", CF_FORWARD},   {"ControlTrigger", CF_TRIGGER},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(kinds); k++)
    if (strcmp(kinds[k].op, op) == 0) return kinds[k].kind;
  return CF_NORMAL;
}

bool weft__cf_needed(const weft__executor_params_t *p) {
  for (guint k = 0; k < p->nodes->len; k++) {
    const weft_node_t *n = p->nodes->pdata[k];
    if (kind_of(n->op_name) != CF_NORMAL) return true;
  }
  return false;
}

void weft__cf_executor_free(weft__cf_executor_t *ex) {
  if (!ex) return;
  for (int k = 0; k < ex->n_nodes; k++) {
    cf_node_t *cn = &ex->nodes[k];
    g_free(cn->feed_of);
    g_free(cn->in_host);
    g_free(cn->is_ref);
    g_free(cn->edges);
    g_free(cn->fetches);
  }
  for (int f = 0; f < ex->n_frames; f++) {
    g_free(ex->frames[f].name);
    g_free(ex->frames[f].initial_pending);
  }
  g_free(ex->frames);
  g_free(ex->nodes);
  g_free(ex->roots);
  g_free(ex->fetch_from_feed);
  g_free(ex);
}

static const char *attr_string(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_STRING ? v->u.s.data : "";
}

static int find_or_add_frame(GArray *frames, const char *name, int parent) {
  for (guint f = 0; f < frames->len; f++)
    if (strcmp(g_array_index(frames, cf_frame_info_t, f).name, name) == 0) return (int)f;
  cf_frame_info_t fi = {g_strdup(name), parent, 0, 0, 0, NULL};
  g_array_append_val(frames, fi);
  return (int)frames->len - 1;
}

/* Assigns every node its frame by walking the edges from the roots, as TensorFlow's
 * BuildControlFlowInfo: an Enter's successors are in the frame it names, an Exit's in its frame's
 * parent, any other node's in its own. */
static weft_status_t *assign_frames(weft__cf_executor_t *ex, GArray *frames) {
  int *queue = g_new(int, ex->n_nodes > 0 ? ex->n_nodes : 1);
  int *parent = g_new(int, ex->n_nodes > 0 ? ex->n_nodes : 1); /* who set the node's frame */
  int head = 0, tail = 0;
  for (int k = 0; k < ex->n_nodes; k++) ex->nodes[k].frame = -1;
  for (int r = 0; r < ex->n_roots; r++) {
    ex->nodes[ex->roots[r]].frame = 0;
    queue[tail++] = ex->roots[r];
  }
  weft_status_t *st = NULL;
  while (head < tail && !st) {
    int u = queue[head++];
    cf_node_t *cn = &ex->nodes[u];
    int out_frame = cn->frame;
    if (cn->kind == CF_ENTER) {
      out_frame = cn->child_frame =
          find_or_add_frame(frames, attr_string(cn->node, "frame_name"), cn->frame);
    } else if (cn->kind == CF_EXIT) {
      out_frame = g_array_index(frames, cf_frame_info_t, cn->frame).parent;
      if (out_frame < 0) {
        st = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Exit node '%s' is not inside a loop (no Enter leads to it)",
                             cn->node->name);
        break;
      }
    }
    for (int e = 0; e < cn->n_edges && !st; e++) {
      int v = cn->edges[e].dst;
      cf_node_t *dst = &ex->nodes[v];
      if (dst->frame >= 0) {
        /* TensorFlow's ValidateControlFlowInfo: a node's inputs share one frame. */
        if (dst->frame != out_frame) {
          const char *a = g_array_index(frames, cf_frame_info_t, out_frame).name;
          const char *b = g_array_index(frames, cf_frame_info_t, dst->frame).name;
          st = weft_status_new(WEFT_INVALID_ARGUMENT,
                               "The node '%s' has inputs from different frames. The input '%s' "
                               "is in frame '%s'. The input '%s' is in frame '%s'.",
                               dst->node->name, cn->node->name, a, ex->nodes[parent[v]].node->name,
                               b);
        }
        continue;
      }
      dst->frame = out_frame;
      parent[v] = u;
      queue[tail++] = v;
    }
  }
  for (int k = 0; k < ex->n_nodes && !st; k++) {
    if (ex->nodes[k].frame < 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "The step's graph has a cycle that is not a loop: node '%s' (%s) can "
                           "never start", ex->nodes[k].node->name, ex->nodes[k].node->op_name);
    }
  }
  for (int k = 0; k < ex->n_nodes && !st; k++) {
    cf_node_t *cn = &ex->nodes[k];
    if (cn->kind == CF_ENTER && cn->child_frame >= 0)
      g_array_index(frames, cf_frame_info_t, cn->child_frame).n_enters++;
  }
  g_free(queue);
  g_free(parent);
  return st;
}

weft_status_t *weft__cf_executor_new(const weft__executor_params_t *p, weft__cf_executor_t **out) {
  weft__cf_executor_t *ex = g_new0(weft__cf_executor_t, 1);
  ex->n_nodes = (int)p->nodes->len;
  ex->nodes = g_new0(cf_node_t, ex->n_nodes > 0 ? ex->n_nodes : 1);
  GHashTable *index_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int k = 0; k < ex->n_nodes; k++) {
    cf_node_t *cn = &ex->nodes[k];
    cn->node = p->nodes->pdata[k];
    cn->kinst = p->kernels[k];
    cn->kind = kind_of(cn->node->op_name);
    cn->child_frame = -1;
    if (cn->kind == CF_ENTER) {
      const weft__attr_value_t *c = weft__attrs_get(cn->node->attrs, "is_constant");
      const weft__attr_value_t *pi = weft__attrs_get(cn->node->attrs, "parallel_iterations");
      cn->is_constant = c && c->kind == WEFT_ATTR_BOOL && c->u.b;
      cn->parallel_iterations = pi && pi->kind == WEFT_ATTR_INT ? (int)pi->u.i : 10;
      if (cn->parallel_iterations < 1) cn->parallel_iterations = 1;
    }
    g_hash_table_insert(index_of, (gpointer)cn->node, GINT_TO_POINTER(k + 1));
  }
  GArray **edges = g_new0(GArray *, ex->n_nodes > 0 ? ex->n_nodes : 1);
  GArray **fetches = g_new0(GArray *, ex->n_nodes > 0 ? ex->n_nodes : 1);
  for (int k = 0; k < ex->n_nodes; k++) {
    edges[k] = g_array_new(FALSE, FALSE, sizeof(cf_edge_t));
    fetches[k] = g_array_new(FALSE, FALSE, sizeof(cf_fetch_t));
  }
  weft_status_t *st = NULL;
  int *n_control = g_new0(int, ex->n_nodes > 0 ? ex->n_nodes : 1);
  for (int k = 0; k < ex->n_nodes && !st; k++) {
    cf_node_t *cn = &ex->nodes[k];
    const weft_node_t *n = cn->node;
    int ni = n->n_inputs > 0 ? n->n_inputs : 1;
    cn->feed_of = g_new(int, ni);
    cn->in_host = g_new0(bool, ni);
    cn->is_ref = g_new0(bool, ni);
    for (int i = 0; i < n->n_inputs && !st; i++) {
      cn->is_ref[i] = weft__dtype_is_ref(n->input_types[i]);
      cn->in_host[i] = cn->kinst && weft__kernel_arg_in_host_memory(cn->kinst->kernel, n, false, i);
      const weft__edge_t *e = &n->inputs[i];
      cn->feed_of[i] = -1;
      for (int f = 0; f < p->n_feeds; f++)
        if (p->feeds[f].node == e->src && p->feeds[f].index == e->src_index) cn->feed_of[i] = f;
      if (cn->feed_of[i] >= 0) continue;
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, e->src)) - 1;
      if (src < 0) {
        st = weft_status_new(WEFT_INTERNAL,
                             "Executor: input %d of node '%s' comes from '%s', which is not part "
                             "of the step", i, n->name, e->src->name);
        break;
      }
      cf_edge_t oe = {k, i, e->src_index};
      g_array_append_val(edges[src], oe);
      cn->n_data_edges++;
    }
    for (guint c = 0; c < n->control_inputs->len && !st; c++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, n->control_inputs->pdata[c])) - 1;
      if (src < 0) continue;
      cf_edge_t oe = {k, -1, -1};
      g_array_append_val(edges[src], oe);
      n_control[k]++;
    }
    /* A Merge waits for its control inputs (two each) and one live data input (bit 0). */
    cn->initial_pending = cn->kind == CF_MERGE ? 1 + 2 * n_control[k]
                                               : cn->n_data_edges + n_control[k];
  }
  ex->n_fetches = p->n_fetches;
  int *fetch_source = NULL;
  weft__plan_fetch_sources(p, index_of, &ex->fetch_from_feed, &fetch_source);
  for (int f = 0; f < p->n_fetches; f++) {
    if (fetch_source[f] < 0) continue;
    cf_fetch_t fr = {f, p->fetches[f].index};
    g_array_append_val(fetches[fetch_source[f]], fr);
  }
  g_free(fetch_source);
  GArray *roots = g_array_new(FALSE, FALSE, sizeof(int));
  for (int k = 0; k < ex->n_nodes; k++) {
    cf_node_t *cn = &ex->nodes[k];
    cn->n_edges = (int)edges[k]->len;
    cn->edges = (cf_edge_t *)(void *)g_array_free(edges[k], FALSE);
    cn->n_fetches = (int)fetches[k]->len;
    cn->fetches = (cf_fetch_t *)(void *)g_array_free(fetches[k], FALSE);
    if (cn->n_data_edges == 0 && n_control[k] == 0) g_array_append_val(roots, k);
  }
  g_free(edges);
  g_free(fetches);
  g_free(n_control);
  ex->n_roots = (int)roots->len;
  ex->roots = (int *)(void *)g_array_free(roots, FALSE);
  g_hash_table_destroy(index_of);

  GArray *frames = g_array_new(FALSE, FALSE, sizeof(cf_frame_info_t));
  cf_frame_info_t root = {g_strdup("_root"), -1, 0, 0, 0, NULL}; /* TensorFlow's name for it */
  g_array_append_val(frames, root);
  if (!st) st = assign_frames(ex, frames);
  ex->n_frames = (int)frames->len;
  ex->frames = (cf_frame_info_t *)(void *)g_array_free(frames, FALSE);
  for (int k = 0; k < ex->n_nodes && !st; k++) {
    cf_node_t *cn = &ex->nodes[k];
    cf_frame_info_t *fi = &ex->frames[cn->frame];
    cn->local = fi->n_nodes++;
    cn->input_base = fi->total_inputs;
    fi->total_inputs += cn->node->n_inputs;
  }
  for (int f = 0; f < ex->n_frames && !st; f++) {
    int n = ex->frames[f].n_nodes;
    ex->frames[f].initial_pending = g_new(int, n > 0 ? n : 1);
  }
  for (int k = 0; k < ex->n_nodes && !st; k++) {
    const cf_node_t *cn = &ex->nodes[k];
    ex->frames[cn->frame].initial_pending[cn->local] = cn->initial_pending;
  }
  if (st) {
    weft__cf_executor_free(ex);
    return st;
  }
  *out = ex;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Running a step */

typedef struct iter_state {
  int n_inputs;
  gint *pending;
  gint *dead_count;
  weft__value_t *inputs;
  int outstanding_ops;    /* nodes of this iteration ready or running */
  int outstanding_frames; /* child frames started from this iteration and not done */
} iter_state_t;

typedef struct frame_state frame_state_t;

/* A value held for later: a deferred NextIteration or a constant Enter's value. */
typedef struct held_value {
  int node;
  weft__value_t value;
} held_value_t;

struct frame_state {
  int info;
  char *key;              /* the frame's name in its parent iteration, for lookups */
  frame_state_t *parent;
  gint64 parent_iter;
  int max_parallel;
  int num_pending_inputs; /* Enters not yet arrived */
  gint64 iteration_count;
  int num_outstanding_iterations;
  GPtrArray *iterations;  /* iter_state_t* by iteration number, NULL once done */
  GArray *next_iter_roots; /* held_value_t */
  GArray *inv_values;      /* held_value_t */
  GArray *dead_exits;      /* int node */
};

typedef struct ready_entry {
  int node;
  frame_state_t *frame;
  gint64 iter;
  bool dead;
} ready_entry_t;

typedef struct cf_step {
  weft__cf_executor_t *ex;
  const weft__run_args_t *args;
  GMutex lock;
  GCond done_cond;
  bool done;
  gint outstanding;
  gint cancelled;
  weft_status_t *error;
  weft_tensor_t **fetched;
  frame_state_t *root;
  GHashTable *frames;     /* key -> frame_state_t*, the live child frames */
  weft__step_resources_t step_resources;
} cf_step_t;

static void value_copy(weft__value_t *dst, const weft__value_t *src) {
  dst->tensor = src->tensor ? weft_tensor_ref(src->tensor) : NULL;
  dst->ref = src->ref ? weft__variable_ref(src->ref) : NULL;
}

static bool has_value(const weft__value_t *v) { return v->tensor || v->ref; }

static iter_state_t *iter_new(const weft__cf_executor_t *ex, int info) {
  const cf_frame_info_t *fi = &ex->frames[info];
  iter_state_t *it = g_new0(iter_state_t, 1);
  int n = fi->n_nodes > 0 ? fi->n_nodes : 1;
  it->n_inputs = fi->total_inputs;
  it->pending = g_new(gint, n);
  it->dead_count = g_new0(gint, n);
  it->inputs = g_new0(weft__value_t, fi->total_inputs > 0 ? fi->total_inputs : 1);
  for (int k = 0; k < fi->n_nodes; k++) it->pending[k] = fi->initial_pending[k];
  return it;
}

static void iter_free(const weft__cf_executor_t *ex, iter_state_t *it) {
  (void)ex;
  if (!it) return;
  for (int k = 0; k < it->n_inputs; k++) weft__value_clear(&it->inputs[k]);
  g_free(it->pending);
  g_free(it->dead_count);
  g_free(it->inputs);
  g_free(it);
}

static iter_state_t *get_iter(frame_state_t *f, gint64 iter) {
  return iter < (gint64)f->iterations->len ? f->iterations->pdata[iter] : NULL;
}

static void held_clear(GArray *a) {
  for (guint k = 0; k < a->len; k++) weft__value_clear(&g_array_index(a, held_value_t, k).value);
  g_array_set_size(a, 0);
}

static frame_state_t *frame_new(cf_step_t *s, int info, frame_state_t *parent, gint64 parent_iter,
                                int max_parallel, char *key) {
  frame_state_t *f = g_new0(frame_state_t, 1);
  f->info = info;
  f->key = key;
  f->parent = parent;
  f->parent_iter = parent_iter;
  f->max_parallel = max_parallel;
  f->num_pending_inputs = s->ex->frames[info].n_enters;
  f->iterations = g_ptr_array_new();
  g_ptr_array_add(f->iterations, iter_new(s->ex, info));
  f->num_outstanding_iterations = 1;
  f->next_iter_roots = g_array_new(FALSE, FALSE, sizeof(held_value_t));
  f->inv_values = g_array_new(FALSE, FALSE, sizeof(held_value_t));
  f->dead_exits = g_array_new(FALSE, FALSE, sizeof(int));
  return f;
}

static void frame_free(cf_step_t *s, frame_state_t *f) {
  for (guint k = 0; k < f->iterations->len; k++) iter_free(s->ex, f->iterations->pdata[k]);
  g_ptr_array_free(f->iterations, TRUE);
  held_clear(f->next_iter_roots);
  held_clear(f->inv_values);
  g_array_free(f->next_iter_roots, TRUE);
  g_array_free(f->inv_values, TRUE);
  g_array_free(f->dead_exits, TRUE);
  g_free(f->key);
  g_free(f);
}

static void push_ready(cf_step_t *s, GArray *ready, int node, frame_state_t *f, gint64 iter,
                       bool dead) {
  if (s->ex->nodes[node].kind == CF_TRIGGER) dead = false;
  ready_entry_t r = {node, f, iter, dead};
  g_array_append_val(ready, r);
  get_iter(f, iter)->outstanding_ops++;
}

/* Delivers a node's outputs (outs; a slot without a value is dead) to its successors in iteration
 * `iter` of frame f, as TensorFlow's ActivateNodes. */
static void activate_nodes(cf_step_t *s, frame_state_t *f, gint64 iter, int node,
                           const weft__value_t *outs, bool is_dead, GArray *ready) {
  const weft__cf_executor_t *ex = s->ex;
  const cf_node_t *cn = &ex->nodes[node];
  iter_state_t *it = get_iter(f, iter);
  for (int e = 0; e < cn->n_edges; e++) {
    const cf_edge_t *oe = &cn->edges[e];
    const cf_node_t *dn = &ex->nodes[oe->dst];
    int d = oe->dst, l = dn->local;
    bool control = oe->dst_slot < 0;
    bool dst_ready = false, dst_dead = false, need_input = false;
    if (dn->kind == CF_MERGE) {
      if (control) {
        it->pending[l] -= 2;
        int count = it->pending[l];
        dst_dead = it->dead_count[l] == dn->n_data_edges;
        dst_ready = count == 0 || (count == 1 && dst_dead);
      } else if (!is_dead && has_value(&outs[oe->src_slot])) {
        int count = it->pending[l];
        need_input = (count & 1) == 1;
        if (need_input) it->pending[l] &= ~1;
        dst_ready = count == 1;
      } else {
        it->dead_count[l]++;
        dst_dead = it->dead_count[l] == dn->n_data_edges || cn->kind == CF_ENTER;
        dst_ready = it->pending[l] == 1 && dst_dead;
      }
    } else {
      bool live = !is_dead && (control || has_value(&outs[oe->src_slot]));
      if (!live) it->dead_count[l]++;
      need_input = !control && live;
      dst_ready = --it->pending[l] == 0;
      dst_dead = it->dead_count[l] > 0;
    }
    if (need_input) value_copy(&it->inputs[dn->input_base + oe->dst_slot], &outs[oe->src_slot]);
    if (dst_ready) push_ready(s, ready, d, f, iter, dst_dead);
  }
}

static void activate_held(cf_step_t *s, frame_state_t *f, gint64 iter, GArray *held,
                          GArray *ready) {
  for (guint k = 0; k < held->len; k++) {
    held_value_t *h = &g_array_index(held, held_value_t, k);
    activate_nodes(s, f, iter, h->node, &h->value, !has_value(&h->value), ready);
  }
}

static void increment_iteration(cf_step_t *s, frame_state_t *f, GArray *ready) {
  f->iteration_count++;
  g_ptr_array_add(f->iterations, iter_new(s->ex, f->info));
  f->num_outstanding_iterations++;
  g_array_set_size(f->dead_exits, 0);
  /* The deferred NextIterations first, then the loop invariants, as TensorFlow. */
  activate_held(s, f, f->iteration_count, f->next_iter_roots, ready);
  held_clear(f->next_iter_roots);
  activate_held(s, f, f->iteration_count, f->inv_values, ready);
}

static bool iteration_done(frame_state_t *f, gint64 iter) {
  iter_state_t *it = get_iter(f, iter);
  if (!it || it->outstanding_ops != 0 || it->outstanding_frames != 0) return false;
  if (iter == 0) return f->num_pending_inputs == 0;
  return get_iter(f, iter - 1) == NULL;
}

static bool frame_done(const frame_state_t *f) {
  return f->num_pending_inputs == 0 && f->num_outstanding_iterations == 0;
}

/* Deletes the done iterations from `iter` on; true when the frame is then done. */
static bool cleanup_iterations(cf_step_t *s, frame_state_t *f, gint64 iter, GArray *ready) {
  gint64 cur = iter;
  while (cur <= f->iteration_count && iteration_done(f, cur)) {
    iter_free(s->ex, f->iterations->pdata[cur]);
    f->iterations->pdata[cur] = NULL;
    f->num_outstanding_iterations--;
    cur++;
    if (f->next_iter_roots->len > 0) increment_iteration(s, f, ready);
  }
  return frame_done(f);
}

/* A finished frame: its dead Exits make their successors in the parent dead, then it goes; the
 * parent iteration may be done with it. */
static void delete_frame(cf_step_t *s, frame_state_t *f, GArray *ready) {
  frame_state_t *parent = f->parent;
  gint64 piter = f->parent_iter;
  const weft__cf_executor_t *ex = s->ex;
  iter_state_t *pit = get_iter(parent, piter);
  for (guint k = 0; k < f->dead_exits->len; k++) {
    const cf_node_t *cn = &ex->nodes[g_array_index(f->dead_exits, int, k)];
    for (int e = 0; e < cn->n_edges; e++) {
      const cf_edge_t *oe = &cn->edges[e];
      const cf_node_t *dn = &ex->nodes[oe->dst];
      int d = oe->dst, l = dn->local;
      bool dst_ready, dst_dead = true;
      if (dn->kind == CF_MERGE) {
        if (oe->dst_slot < 0) {
          pit->pending[l] -= 2;
          dst_dead = pit->dead_count[l] == dn->n_data_edges;
          dst_ready = pit->pending[l] == 0 || (pit->pending[l] == 1 && dst_dead);
        } else {
          pit->dead_count[l]++;
          dst_dead = pit->dead_count[l] == dn->n_data_edges;
          dst_ready = pit->pending[l] == 1 && dst_dead;
        }
      } else {
        pit->dead_count[l]++;
        dst_ready = --pit->pending[l] == 0;
      }
      if (dst_ready) push_ready(s, ready, d, parent, piter, dst_dead);
    }
  }
  pit->outstanding_frames--;
  g_hash_table_remove(s->frames, f->key);
  frame_free(s, f);
  /* The root frame lives until the step ends. */
  if (parent != s->root && cleanup_iterations(s, parent, piter, ready))
    delete_frame(s, parent, ready);
}

/* The child frame an Enter of (f, iter) leads to, made on first use. */
static frame_state_t *child_frame(cf_step_t *s, frame_state_t *f, gint64 iter,
                                  const cf_node_t *cn) {
  char *key = g_strdup_printf("%s;%" G_GINT64_FORMAT ";%s", f->key, iter,
                              s->ex->frames[cn->child_frame].name);
  frame_state_t *c = g_hash_table_lookup(s->frames, key);
  if (c) {
    g_free(key);
    return c;
  }
  c = frame_new(s, cn->child_frame, f, iter, cn->parallel_iterations, key);
  g_hash_table_insert(s->frames, c->key, c);
  get_iter(f, iter)->outstanding_frames++;
  return c;
}

/* After node `r` ran: hands its outputs on (TensorFlow's PropagateOutputs) and retires it from
 * its iteration. Under the step lock. */
static void propagate(cf_step_t *s, const ready_entry_t *r, const weft__value_t *outs,
                      GArray *ready) {
  const cf_node_t *cn = &s->ex->nodes[r->node];
  frame_state_t *f = r->frame;
  gint64 iter = r->iter;
  if (cn->kind == CF_ENTER) {
    frame_state_t *c = child_frame(s, f, iter, cn);
    if (cn->is_constant) {
      held_value_t h = {r->node, {NULL, NULL}};
      if (!r->dead) value_copy(&h.value, &outs[0]);
      g_array_append_val(c->inv_values, h);
      for (gint64 i = 0; i <= c->iteration_count; i++)
        if (get_iter(c, i)) activate_nodes(s, c, i, r->node, &h.value, r->dead, ready);
    } else {
      activate_nodes(s, c, 0, r->node, outs, r->dead, ready);
    }
    c->num_pending_inputs--;
    if (cleanup_iterations(s, c, 0, ready)) delete_frame(s, c, ready);
  } else if (cn->kind == CF_EXIT) {
    if (r->dead) {
      if (iter == f->iteration_count) g_array_append_val(f->dead_exits, r->node);
    } else if (f->parent) {
      activate_nodes(s, f->parent, f->parent_iter, r->node, outs, false, ready);
    }
  } else if (cn->kind == CF_NEXT) {
    if (!r->dead) {
      if (iter == f->iteration_count && f->num_outstanding_iterations == f->max_parallel) {
        held_value_t h = {r->node, {NULL, NULL}};
        value_copy(&h.value, &outs[0]);
        g_array_append_val(f->next_iter_roots, h);
      } else {
        if (iter == f->iteration_count) increment_iteration(s, f, ready);
        activate_nodes(s, f, iter + 1, r->node, outs, false, ready);
      }
    }
  } else {
    activate_nodes(s, f, iter, r->node, outs, r->dead, ready);
  }
  iter_state_t *it = get_iter(f, iter);
  if (--it->outstanding_ops == 0 && f != s->root && cleanup_iterations(s, f, iter, ready)) {
    delete_frame(s, f, ready);
  }
}

static void record_error(cf_step_t *s, weft_status_t *st) {
  g_mutex_lock(&s->lock);
  bool first = !s->error;
  if (first) s->error = st;
  else weft_status_free(st);
  g_mutex_unlock(&s->lock);
  g_atomic_int_set(&s->cancelled, 1);
  if (first && s->args->on_error) s->args->on_error(s->args->on_error_data, s->error);
}

static const char *device_name_of(const cf_node_t *cn) {
  return weft__kinst_device_name(cn->kinst);
}

/* Runs a normal node's kernel on its inputs (kernel_call.h). */
static weft_status_t *run_kernel(cf_step_t *s, const cf_node_t *cn, const ready_entry_t *r,
                                 weft__value_t *inputs, weft__value_t *outs) {
  bool root = r->frame == s->root;
  weft__kernel_call_env_t env = {s->args->intra_pool, s->args->resources, &s->step_resources,
                                 root ? NULL : r->frame->key, root ? 0 : r->iter};
  /* The instance's attr cache too: a Const in a loop body is copied to its device once. */
  return weft__kernel_call(cn->node, cn->kinst, cn->kinst, cn->is_ref, cn->in_host, inputs, outs,
                           &env);
}

/* Switch's predicate, read on the host. */
static weft_status_t *read_pred(const cf_node_t *cn, const weft__value_t *v, bool *out) {
  weft_tensor_t *t = v->tensor;
  if (!t) {
    return weft_status_new(WEFT_INTERNAL, "Input 1 of node '%s' has no value", cn->node->name);
  }
  if (t->rank != 0) {
    char *shape = weft__shape_to_string(t->rank, t->dims);
    weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                        "The second input must be a scalar, but it has shape %s",
                                        shape);
    g_free(shape);
    return st;
  }
  weft_tensor_t *host = NULL;
  if (!weft__tensor_is_host(t)) WEFT_RETURN_IF_ERROR(weft__tensor_to_device(t, NULL, &host));
  *out = ((const uint8_t *)weft_tensor_data(host ? host : t))[0] != 0;
  weft_tensor_unref(host);
  return NULL;
}

/* What a node computes; outs without a value are dead outputs. */
static weft_status_t *compute(cf_step_t *s, const cf_node_t *cn, const ready_entry_t *r,
                              weft__value_t *inputs, weft__value_t *outs) {
  switch (cn->kind) {
    case CF_SWITCH: {
      bool pred = false;
      WEFT_RETURN_IF_ERROR(read_pred(cn, &inputs[1], &pred));
      value_copy(&outs[pred ? 1 : 0], &inputs[0]);
      return NULL;
    }
    case CF_MERGE:
      for (int i = 0; i < cn->node->n_inputs; i++) {
        if (!has_value(&inputs[i])) continue;
        value_copy(&outs[0], &inputs[i]);
        outs[1].tensor = weft_tensor_new_scalar_int32(i);
        return NULL;
      }
      return weft_status_new(WEFT_INTERNAL, "Merge node '%s' ran without a live input",
                             cn->node->name);
    case CF_ENTER:
    case CF_EXIT:
    case CF_NEXT:
    case CF_FORWARD:
      value_copy(&outs[0], &inputs[0]);
      return NULL;
    case CF_TRIGGER:
      return NULL;
    case CF_NORMAL:
    default:
      return run_kernel(s, cn, r, inputs, outs);
  }
}

static void store_fetch(cf_step_t *s, int fetch, const weft__value_t *v, const cf_node_t *cn) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__fetch_to_host(v, cn->node, &t);
  if (st) {
    record_error(s, st);
    return;
  }
  weft_tensor_unref(s->fetched[fetch]);
  s->fetched[fetch] = t;
}

static void schedule(cf_step_t *s, ready_entry_t r);

/* Runs one ready node, then what it readies: one on this thread, the others on the pool. */
static void process(cf_step_t *s, ready_entry_t r) {
  for (;;) {
    const cf_node_t *cn = &s->ex->nodes[r.node];
    const weft_node_t *node = cn->node;
    int n_in = node->n_inputs, n_out = node->n_outputs;
    weft__value_t *inputs = g_new0(weft__value_t, n_in > 0 ? n_in : 1);
    weft__value_t *outs = g_new0(weft__value_t, n_out > 0 ? n_out : 1);
    bool cancelled = g_atomic_int_get(&s->cancelled);
    if (!cancelled && !r.dead) {
      /* The inputs leave the iteration's slots (each is read once). */
      g_mutex_lock(&s->lock);
      iter_state_t *it = get_iter(r.frame, r.iter);
      for (int i = 0; i < n_in; i++) {
        weft__value_t *slot = &it->inputs[cn->input_base + i];
        if (cn->feed_of[i] >= 0) {
          inputs[i].tensor = weft_tensor_ref(s->args->feed_values[cn->feed_of[i]]);
        } else {
          inputs[i] = *slot;
          slot->tensor = NULL;
          slot->ref = NULL;
        }
      }
      g_mutex_unlock(&s->lock);
      weft_status_t *stop = weft__step_interrupted(s->args, node);
      if (stop) {
        record_error(s, stop);
      } else {
        gint64 start_real = 0, start_mono = 0;
        if (s->args->stats) {
          start_real = g_get_real_time();
          start_mono = g_get_monotonic_time();
        }
        weft_status_t *st = compute(s, cn, &r, inputs, outs);
        if (!st && s->args->stats) {
          weft__record_node_stats(s->args->stats, node, device_name_of(cn), start_real,
                                  start_mono, outs);
        }
        if (st) {
          const char *msg = weft_status_message(st);
          if (strstr(msg, node->name)) {
            weft_status_t *suffixed = weft_status_new(weft_status_code(st), "%s (op %s on %s)",
                                                      msg, node->op_name, device_name_of(cn));
            weft_status_free(st);
            st = suffixed;
          } else {
            st = weft_status_prefix(st, "node '%s' (%s) on %s", node->name, node->op_name,
                                    device_name_of(cn));
          }
          record_error(s, st);
        }
      }
      cancelled = g_atomic_int_get(&s->cancelled);
    }
    for (int i = 0; i < n_in; i++) weft__value_clear(&inputs[i]);
    g_free(inputs);

    GArray *ready = g_array_new(FALSE, FALSE, sizeof(ready_entry_t));
    if (!cancelled) {
      /* Fetches are values of the root frame (what an Exit hands it included). */
      bool to_root = cn->kind == CF_EXIT ? r.frame->parent == s->root
                                         : r.frame == s->root && cn->kind != CF_ENTER;
      if (to_root && !r.dead) {
        for (int f = 0; f < cn->n_fetches; f++) {
          const weft__value_t *v = &outs[cn->fetches[f].output];
          if (has_value(v)) store_fetch(s, cn->fetches[f].fetch, v, cn);
        }
      }
      g_mutex_lock(&s->lock);
      propagate(s, &r, outs, ready);
      g_atomic_int_add(&s->outstanding, (gint)ready->len);
      g_mutex_unlock(&s->lock);
    }
    for (int o = 0; o < n_out; o++) weft__value_clear(&outs[o]);
    g_free(outs);

    for (guint k = 1; k < ready->len; k++) schedule(s, g_array_index(ready, ready_entry_t, k));
    bool more = ready->len > 0;
    if (more) r = g_array_index(ready, ready_entry_t, 0);
    g_array_free(ready, TRUE);
    if (g_atomic_int_dec_and_test(&s->outstanding)) {
      g_mutex_lock(&s->lock);
      s->done = true;
      g_cond_signal(&s->done_cond);
      g_mutex_unlock(&s->lock);
    }
    if (!more) break;
  }
}

typedef struct cf_task {
  cf_step_t *step;
  ready_entry_t entry;
} cf_task_t;

static void task_run(void *arg) {
  cf_task_t *t = arg;
  cf_step_t *s = t->step;
  ready_entry_t r = t->entry;
  g_free(t);
  process(s, r);
}

/* Without a pool, nodes wait on this thread's stack of pending entries. */
typedef struct inline_queue {
  GArray *entries;
  bool draining;
} inline_queue_t;

static GPrivate inline_queue_key = G_PRIVATE_INIT(NULL);

static void schedule(cf_step_t *s, ready_entry_t r) {
  if (s->args->inter_pool) {
    cf_task_t *t = g_new(cf_task_t, 1);
    t->step = s;
    t->entry = r;
    weft__threadpool_schedule(s->args->inter_pool, task_run, t);
    return;
  }
  /* No pool: queue it and let the outermost call run the queue (no deep recursion). */
  inline_queue_t *q = g_private_get(&inline_queue_key);
  g_array_append_val(q->entries, r);
  if (q->draining) return;
  q->draining = true;
  while (q->entries->len > 0) {
    ready_entry_t next = g_array_index(q->entries, ready_entry_t, q->entries->len - 1);
    g_array_set_size(q->entries, q->entries->len - 1);
    process(s, next);
  }
  q->draining = false;
}

static void free_frame_value(gpointer p, gpointer user) {
  frame_free(user, p);
}

weft_status_t *weft__cf_executor_run(weft__cf_executor_t *ex, const weft__run_args_t *args,
                                     weft_tensor_t **fetched) {
  cf_step_t s = {0};
  s.ex = ex;
  s.args = args;
  g_mutex_init(&s.lock);
  g_cond_init(&s.done_cond);
  g_mutex_init(&s.step_resources.lock);
  s.fetched = g_new0(weft_tensor_t *, ex->n_fetches > 0 ? ex->n_fetches : 1);
  s.frames = g_hash_table_new(g_str_hash, g_str_equal);
  s.root = frame_new(&s, 0, NULL, 0, 1, g_strdup(""));
  inline_queue_t queue = {g_array_new(FALSE, FALSE, sizeof(ready_entry_t)), false};
  inline_queue_t *saved_queue = g_private_get(&inline_queue_key);
  g_private_set(&inline_queue_key, &queue);

  for (int f = 0; f < ex->n_fetches; f++) {
    int feed = ex->fetch_from_feed[f];
    if (feed < 0) continue;
    weft_tensor_t *t = args->feed_values[feed];
    weft_tensor_t *host = NULL;
    weft_status_t *st = weft__tensor_is_host(t) ? NULL : weft__tensor_to_device(t, NULL, &host);
    if (st) record_error(&s, st);
    else s.fetched[f] = host ? host : weft_tensor_ref(t);
  }
  if (ex->n_roots > 0 && !s.cancelled) {
    s.outstanding = ex->n_roots;
    for (int r = 0; r < ex->n_roots; r++) get_iter(s.root, 0)->outstanding_ops++;
    for (int r = ex->n_roots - 1; r >= 0; r--) {
      ready_entry_t e = {ex->roots[r], s.root, 0, false};
      schedule(&s, e);
    }
    g_mutex_lock(&s.lock);
    while (!s.done) g_cond_wait(&s.done_cond, &s.lock);
    g_mutex_unlock(&s.lock);
  }
  g_private_set(&inline_queue_key, saved_queue);
  g_array_free(queue.entries, TRUE);

  weft_status_t *st = s.error;
  for (int f = 0; f < ex->n_fetches && !st; f++) {
    /* TensorFlow's words for a fetch whose value is dead (the untaken branch of a cond). */
    if (!s.fetched[f])
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Retval[%d] does not have value", f);
  }
  for (int f = 0; f < ex->n_fetches; f++) {
    if (st) weft_tensor_unref(s.fetched[f]);
    else fetched[f] = s.fetched[f];
  }
  /* After an error, frames may be left mid-loop: free whatever is still there. */
  GList *left = g_hash_table_get_values(s.frames);
  g_hash_table_destroy(s.frames);
  g_list_foreach(left, free_frame_value, &s);
  g_list_free(left);
  frame_free(&s, s.root);
  weft__step_resources_clear(&s.step_resources);
  g_free(s.fetched);
  g_mutex_clear(&s.lock);
  g_cond_clear(&s.done_cond);
  return st;
}
