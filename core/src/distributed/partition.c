/* The partitioner: splits a placed step into one graph per task. Nodes keep their names and get
 * their assigned device as their device; an edge whose ends are on different tasks becomes a
 * _Send in the producer's partition and a _Recv in the consumer's, joined by a rendezvous key
 * (one pair per tensor and receiving task, however many nodes there read it); a control edge
 * between tasks becomes a tiny int32 sent the same way, on which the consumer then waits (one
 * message for all the control inputs a node has on one other task); a fed
 * tensor becomes a Placeholder in every partition that reads it, fed by the worker. Edges inside
 * a task stay edges: the executor moves tensors between a task's devices itself. */
#include "distributed_internal.h"

#include <string.h>

#include "../placement/placement_internal.h"

/* A grouped receive: its keys, and the tensor of the first, whose _Recv fetches them all. */
typedef struct recv_group {
  GPtrArray *keys; /* char* */
  weft_node_t *first_src;
  int first_index;
} recv_group_t;

static void recv_group_free(recv_group_t *g) {
  g_ptr_array_free(g->keys, TRUE);
  g_free(g);
}

/* A while loop frame of the step, as the partitioner sees it. */
typedef struct frame_info {
  const char *name, *parent; /* borrowed from the step's nodes; "" for the root */
  weft_node_t *cond;         /* its LoopCond: its task is the loop's home */
  char *home;                /* the LoopCond's task */
  GHashTable *devices;       /* task (owned) -> a device (borrowed) of a node running in it */
  GHashTable *cond_side;     /* its nodes whose value the LoopCond needs, each iteration */
  bool spans;                /* nodes on several tasks: control loops, per-iteration keys */
} frame_info_t;

/* A partition's control loop for a frame spanning tasks (TensorFlow's AddControlLoop): Enter ->
 * Merge -> Switch on the loop's predicate -> Identity ("live") -> NextIteration -> Merge. The
 * Merge fires in every iteration, the live Identity only in those that run the body. */
typedef struct cloop {
  weft_node_t *merge, *live;
} cloop_t;

/* A control edge from a control loop to a _Send or _Recv made inside a frame, added once every
 * partition's control loop exists. */
typedef struct gate {
  weft_node_t *node;
  const char *frame, *task; /* borrowed (the step's nodes, the partitions) */
  bool every_iteration;     /* the Merge (the LoopCond needs it), else the live Identity */
} gate_t;

typedef struct part_state {
  GHashTable *recv_groups; /* "recv|src:index|task" -> recv_group_t* (borrowed from groups) */
  GPtrArray *groups;       /* recv_group_t*, owned */
  GHashTable *placement;
  const weft__step_spec_t *spec;
  GHashTable *by_task;   /* task name -> weft__partition_t* */
  GPtrArray *parts;      /* weft__partition_t*, in creation order */
  GHashTable *task_of;   /* weft_node_t* (original) -> task name (owned by by_task's parts) */
  GHashTable *copies;    /* weft_node_t* (original) -> weft_node_t* in its partition */
  GHashTable *made;      /* "kind|name|task" -> weft_node_t* already made in a partition */
  GHashTable *frame_of;  /* weft_node_t* -> the while loop frame its outputs are in ("": none) */
  GHashTable *frame_parent; /* frame name -> its parent frame's name */
  GArray *back_edges;    /* back_edge_t: loop back edges, linked once both ends are copied */
  GHashTable *run_frame; /* weft_node_t* -> the frame it runs in ("": the root) */
  GHashTable *frames;    /* frame name -> frame_info_t* (owned) */
  GHashTable *cloops;    /* "frame|task" -> cloop_t* (owned) */
  GArray *gates;         /* gate_t */
} part_state_t;

/* A NextIteration -> Merge edge: the Merge is copied before its NextIteration. */
typedef struct back_edge {
  weft_node_t *merge_copy;
  int input;
  weft_node_t *src;
  int index;
} back_edge_t;

void weft__partition_free(weft__partition_t *p) {
  if (!p) return;
  g_free(p->task);
  weft_graph_free(p->graph);
  g_ptr_array_free(p->feed_names, TRUE);
  g_array_free(p->feed_index, TRUE);
  g_ptr_array_free(p->fetch_names, TRUE);
  g_free(p);
}

static const char *device_of(part_state_t *ps, const weft_node_t *n) {
  return g_hash_table_lookup(ps->placement, n->name);
}

static weft__partition_t *partition_for(part_state_t *ps, const char *task) {
  weft__partition_t *p = g_hash_table_lookup(ps->by_task, task);
  if (p) return p;
  p = g_new0(weft__partition_t, 1);
  p->task = g_strdup(task);
  p->graph = weft_graph_new();
  p->feed_names = g_ptr_array_new_with_free_func(g_free);
  p->feed_index = g_array_new(FALSE, FALSE, sizeof(int));
  p->fetch_names = g_ptr_array_new_with_free_func(g_free);
  g_hash_table_insert(ps->by_task, p->task, p);
  g_ptr_array_add(ps->parts, p);
  return p;
}

/* "/job:ps/replica:0/task:0" -> "job_ps_replica_0_task_0": a node-name-safe spelling. */
static char *safe_name(const char *text) {
  char *s = g_strdup(*text == '/' ? text + 1 : text);
  for (char *p = s; *p; p++)
    if (*p == '/' || *p == ':') *p = '_';
  return s;
}

static void set_string(weft_attrs_t *attrs, const char *name, const char *value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_STRING);
  v->u.s.data = g_strdup(value);
  v->u.s.len = strlen(value);
  weft__attrs_set(attrs, name, v);
}

static void set_type(weft_attrs_t *attrs, const char *name, weft_dtype_t value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
  v->u.type = value;
  weft__attrs_set(attrs, name, v);
}

static void set_int(weft_attrs_t *attrs, const char *name, int64_t value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_INT);
  v->u.i = value;
  weft__attrs_set(attrs, name, v);
}

static void set_bool(weft_attrs_t *attrs, const char *name, bool value) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_BOOL);
  v->u.b = value;
  weft__attrs_set(attrs, name, v);
}

static weft_status_t *add_node(weft__partition_t *p, const char *name, const char *op,
                               const weft__edge_t *inputs, int n_inputs,
                               weft_node_t *const *controls, int n_controls, const char *device,
                               const weft_attrs_t *attrs, weft_node_t **out) {
  weft_status_t *st = weft__graph_add_node(p->graph, name, op, inputs, n_inputs, controls,
                                           n_controls, device, attrs, out);
  if (st) weft_status_prefix(st, "Partitioning for %s", p->task);
  return st;
}

/* The attrs shared by a _Send and its _Recv. */
static void xfer_attrs(weft_attrs_t *attrs, const char *key, const char *send_device,
                       const char *recv_device) {
  set_string(attrs, "tensor_name", key);
  set_string(attrs, "send_device", send_device);
  set_string(attrs, "recv_device", recv_device);
  set_int(attrs, "send_device_incarnation", 0);
  set_bool(attrs, "client_terminated", false);
}

static frame_info_t *spanning_frame_of(part_state_t *ps, const weft_node_t *src);
static void add_gate(part_state_t *ps, weft_node_t *node, const char *frame, const char *task,
                     bool every_iteration);

/* The _Recv in `dst` of output `index` of `src` (another task), with its _Send. Inside a frame
 * spanning tasks both run once per iteration: a value the LoopCond needs (its "condition side")
 * is sent in every iteration, its _Recv waits on the control loop's Merge; any other only in
 * iterations that run the body, each end waiting on its control loop's live Identity. */
static weft_status_t *recv_for(part_state_t *ps, weft__partition_t *dst, weft_node_t *src,
                               int index, const char *recv_device, weft_node_t **out) {
  char *memo = g_strdup_printf("recv|%s:%d|%s", src->name, index, dst->task);
  *out = g_hash_table_lookup(ps->made, memo);
  if (*out) {
    g_free(memo);
    return NULL;
  }
  const char *src_task = g_hash_table_lookup(ps->task_of, src);
  weft__partition_t *sp = g_hash_table_lookup(ps->by_task, src_task);
  const char *send_device = device_of(ps, src);
  weft_dtype_t dtype = weft__dtype_base(src->output_types[index]);
  char *key = g_strdup_printf("%s:%d;%s", src->name, index, dst->task);
  char *to = safe_name(dst->task);
  char *send_name = g_strdup_printf("_weft/send/%s_%d/to_%s", src->name, index, to);
  char *recv_name = g_strdup_printf("_weft/recv/%s_%d", src->name, index);

  weft_attrs_t *sa = weft__attrs_new();
  set_type(sa, "T", dtype);
  xfer_attrs(sa, key, send_device, recv_device);
  set_bool(sa, "copy_on_send", weft__dtype_is_ref(src->output_types[index]));
  weft__edge_t in = {g_hash_table_lookup(ps->copies, src), index};
  weft_node_t *send = NULL;
  weft_status_t *st = add_node(sp, send_name, "_Send", &in, 1, NULL, 0, send_device, sa, &send);
  weft__attrs_free(sa);
  frame_info_t *fi = spanning_frame_of(ps, src);
  bool cond_side = fi && g_hash_table_contains(fi->cond_side, src);
  if (!st && fi && !cond_side) add_gate(ps, send, fi->name, sp->task, false);
  if (!st) {
    weft_attrs_t *ra = weft__attrs_new();
    set_type(ra, "tensor_type", dtype);
    xfer_attrs(ra, key, send_device, recv_device);
    recv_group_t *group = ps->recv_groups ? g_hash_table_lookup(ps->recv_groups, memo) : NULL;
    weft_node_t *first = NULL;
    if (group) {
      GPtrArray *keys = group->keys;
      weft__attrs_set(ra, WEFT_RECV_GROUP_ATTR,
                      weft__attr_value_new_string_list((const char *const *)keys->pdata,
                                                       (int)keys->len));
      /* The others run after the first, which has their tensors by then: they never wait. */
      if (strcmp(keys->pdata[0], key) != 0)
        st = recv_for(ps, dst, group->first_src, group->first_index, recv_device, &first);
    }
    if (!st) {
      st = add_node(dst, recv_name, "_Recv", NULL, 0, first ? &first : NULL, first ? 1 : 0,
                    recv_device, ra, out);
    }
    if (!st && fi) add_gate(ps, *out, fi->name, dst->task, cond_side);
    weft__attrs_free(ra);
  }
  if (!st) g_hash_table_insert(ps->made, memo, *out);
  else g_free(memo);
  g_free(key);
  g_free(to);
  g_free(send_name);
  g_free(recv_name);
  return st;
}

/* A device of `device`'s task that has a Const kernel: the device itself when it can. */
static char *const_device(const char *device, const weft_attrs_t *const_attrs) {
  weft__device_spec_t spec;
  weft__device_spec_init(&spec);
  weft_status_t *st = weft__device_spec_parse(device, &spec);
  char *out = NULL;
  if (!st && spec.type && !weft__kernel_exists("Const", spec.type, const_attrs)) {
    char *task = weft__task_of_device(device);
    if (task) out = g_strdup_printf("%s/device:CPU:0", task);
    g_free(task);
  }
  weft_status_free(st);
  weft__device_spec_clear(&spec);
  return out ? out : g_strdup(device);
}

/* The node in `dst` that stands for control inputs `srcs` (all on one other task). One source
 * keeps one message however many nodes of `dst` wait on it; several, the control inputs of one
 * node (`waiter`) from one task, share one message sent when the last of them has run, so a node
 * waiting on k updates on a ps task costs one RecvTensor, not k. Waiting for all of them at the
 * source cannot deadlock: the waiter needed all of them before it could run anyway. Inside a
 * frame spanning tasks the message goes once per iteration, gated as recv_for's. */
static weft_status_t *control_recv_for(part_state_t *ps, weft__partition_t *dst,
                                       weft_node_t *const *srcs, int n_srcs,
                                       const weft_node_t *waiter, const char *recv_device,
                                       weft_node_t **out) {
  GString *memo_text = g_string_new("ctrl");
  for (int k = 0; k < n_srcs; k++) g_string_append_printf(memo_text, "|%s", srcs[k]->name);
  g_string_append_printf(memo_text, "|%s", dst->task);
  char *memo = g_string_free(memo_text, FALSE);
  *out = g_hash_table_lookup(ps->made, memo);
  if (*out) {
    g_free(memo);
    return NULL;
  }
  const char *src_task = g_hash_table_lookup(ps->task_of, srcs[0]);
  weft__partition_t *sp = g_hash_table_lookup(ps->by_task, src_task);
  char *to = safe_name(dst->task);
  char *from = safe_name(src_task);
  /* A group is named after its waiter, unique per (waiter, source task). */
  char *what = n_srcs == 1 ? g_strdup(srcs[0]->name)
                           : g_strdup_printf("%s/from_%s", waiter->name, from);
  char *key = g_strdup_printf("^%s;%s", what, dst->task);
  char *const_name = g_strdup_printf("_weft/ctrl/%s/to_%s", what, to);
  char *send_name = g_strdup_printf("_weft/send/ctrl/%s/to_%s", what, to);
  char *recv_name = g_strdup_printf("_weft/recv/ctrl/%s", what);
  weft_node_t **src_copies = g_new(weft_node_t *, n_srcs);
  for (int k = 0; k < n_srcs; k++) src_copies[k] = g_hash_table_lookup(ps->copies, srcs[k]);

  weft_attrs_t *ca = weft__attrs_new();
  weft__attr_value_t *value = weft__attr_value_new(WEFT_ATTR_TENSOR);
  value->u.tensor = weft_tensor_new_scalar_int32(0);
  weft__attrs_set(ca, "value", value);
  set_type(ca, "dtype", WEFT_DT_INT32);
  char *send_device = const_device(device_of(ps, srcs[0]), ca);
  weft_node_t *trigger = NULL;
  weft_status_t *st = add_node(sp, const_name, "Const", NULL, 0, src_copies, n_srcs, send_device,
                               ca, &trigger);
  weft__attrs_free(ca);
  frame_info_t *fi = spanning_frame_of(ps, srcs[0]);
  bool cond_side = fi != NULL;
  for (int k = 0; k < n_srcs && fi; k++)
    cond_side = cond_side && g_hash_table_contains(fi->cond_side, srcs[k]);
  if (!st) {
    weft_attrs_t *sa = weft__attrs_new();
    set_type(sa, "T", WEFT_DT_INT32);
    xfer_attrs(sa, key, send_device, recv_device);
    weft__edge_t in = {trigger, 0};
    weft_node_t *send = NULL;
    st = add_node(sp, send_name, "_Send", &in, 1, NULL, 0, send_device, sa, &send);
    if (!st && fi && !cond_side) add_gate(ps, send, fi->name, sp->task, false);
    weft__attrs_free(sa);
  }
  if (!st) {
    weft_attrs_t *ra = weft__attrs_new();
    set_type(ra, "tensor_type", WEFT_DT_INT32);
    xfer_attrs(ra, key, send_device, recv_device);
    st = add_node(dst, recv_name, "_Recv", NULL, 0, NULL, 0, recv_device, ra, out);
    if (!st && fi) add_gate(ps, *out, fi->name, dst->task, cond_side);
    weft__attrs_free(ra);
  }
  if (!st) g_hash_table_insert(ps->made, memo, *out);
  else g_free(memo);
  g_free(send_device);
  g_free(key);
  g_free(to);
  g_free(from);
  g_free(what);
  g_free(src_copies);
  g_free(const_name);
  g_free(send_name);
  g_free(recv_name);
  return st;
}

/* The Placeholder in `dst` that the worker feeds with feed `f`. */
static weft_status_t *feed_node_for(part_state_t *ps, weft__partition_t *dst, int f,
                                    const char *device, weft_node_t **out) {
  char *memo = g_strdup_printf("feed|%d|%s", f, dst->task);
  *out = g_hash_table_lookup(ps->made, memo);
  if (*out) {
    g_free(memo);
    return NULL;
  }
  const weft__feed_t *feed = &ps->spec->feeds[f];
  char *name = g_strdup_printf("_weft/feed/%s_%d", feed->node->name, feed->index);
  weft_attrs_t *attrs = weft__attrs_new();
  set_type(attrs, "dtype", weft__dtype_base(feed->node->output_types[feed->index]));
  weft__attr_value_t *shape = weft__attr_value_new(WEFT_ATTR_SHAPE);
  shape->u.shape = weft__node_shape(feed->node, feed->index);
  weft__attrs_set(attrs, "shape", shape);
  weft_status_t *st = add_node(dst, name, "Placeholder", NULL, 0, NULL, 0, device, attrs, out);
  weft__attrs_free(attrs);
  if (!st) {
    g_hash_table_insert(ps->made, memo, *out);
    g_ptr_array_add(dst->feed_names, g_strdup_printf("%s:0", name));
    g_array_append_val(dst->feed_index, f);
  } else {
    g_free(memo);
  }
  g_free(name);
  return st;
}

static int feed_of(const weft__step_spec_t *spec, const weft_node_t *node, int index) {
  for (int f = 0; f < spec->n_feeds; f++)
    if (spec->feeds[f].node == node && spec->feeds[f].index == index) return f;
  return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Frames (TensorFlow 1.x while loops). A loop whose nodes are all on one task partitions as any
 * subgraph: values from other tasks reach it through _Recv nodes outside the frame, ahead of its
 * Enters, and its Exits' values leave it the same way. A loop whose body or condition reads
 * values of other tasks inside the frame (a resource variable's read colocated with it on a ps)
 * is built as TensorFlow's graph_partition.cc AddControlFlow does: the LoopCond's task is its
 * home; every task of the frame gets a control loop whose Switch takes the LoopCond's value of
 * each iteration (sent from the home), so it runs as many iterations as the home; each _Send and
 * _Recv inside the frame waits on that control loop and its rendezvous key carries the frame and
 * iteration (sendrecv.c); an inner loop's control loop enters from its outer loop's. The loop's
 * own structure (Merge, Switch, NextIteration, Exit, LoopCond, non-constant Enters) stays on the
 * home, and such a frame runs one iteration at a time (parallel_iterations 1): a _Recv holds a
 * pool thread while it waits, and several iterations' receives in flight could take every
 * thread a task has. */

static const char *attr_text(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_STRING ? (const char *)v->u.s.data : "";
}

static bool op_is(const weft_node_t *n, const char *a, const char *b) {
  return strcmp(n->op_name, a) == 0 || strcmp(n->op_name, b) == 0;
}

/* The frame `src`'s outputs are in ("" for the root). */
static const char *out_frame_of(part_state_t *ps, const weft_node_t *src) {
  const char *f = g_hash_table_lookup(ps->frame_of, src);
  return f ? f : "";
}

/* The frame n runs in ("" for the root). */
static const char *run_frame_of(part_state_t *ps, const weft_node_t *n) {
  const char *f = g_hash_table_lookup(ps->run_frame, n);
  return f ? f : "";
}

static void frame_info_free(frame_info_t *fi) {
  g_free(fi->home);
  g_hash_table_destroy(fi->devices);
  g_hash_table_destroy(fi->cond_side);
  g_free(fi);
}

static frame_info_t *frame_info_for(part_state_t *ps, const char *name) {
  frame_info_t *fi = g_hash_table_lookup(ps->frames, name);
  if (fi) return fi;
  fi = g_new0(frame_info_t, 1);
  fi->name = name;
  fi->parent = "";
  fi->devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  fi->cond_side = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_hash_table_insert(ps->frames, (gpointer)name, fi);
  return fi;
}

/* A node of `frame` on `device`: its task takes part in the frame and in every frame around it
 * (the outer loops' control loops there drive the inner one's). */
static void frame_add_device(part_state_t *ps, const char *frame, const char *device) {
  char *task = device ? weft__task_of_device(device) : NULL;
  for (const char *f = frame; task && f && *f;) {
    frame_info_t *fi = frame_info_for(ps, f);
    if (!g_hash_table_contains(fi->devices, task))
      g_hash_table_insert(fi->devices, g_strdup(task), (gpointer)device);
    f = fi->parent;
  }
  g_free(task);
}

/* The frame `src`'s outputs are in when it spans tasks, else NULL. */
static frame_info_t *spanning_frame_of(part_state_t *ps, const weft_node_t *src) {
  const char *f = out_frame_of(ps, src);
  frame_info_t *fi = *f ? g_hash_table_lookup(ps->frames, f) : NULL;
  return fi && fi->spans ? fi : NULL;
}

static void add_gate(part_state_t *ps, weft_node_t *node, const char *frame, const char *task,
                     bool every_iteration) {
  gate_t g = {node, frame, task, every_iteration};
  g_array_append_val(ps->gates, g);
}

/* Records the frame of n's outputs from its inputs (the step is in order but for back edges): an
 * Enter's is the frame it names, an Exit's its frame's parent. A node with control inputs only
 * (a constant in a loop body) runs in its control inputs' frame. */
static void note_frame(part_state_t *ps, weft_node_t *n) {
  const char *f = NULL;
  for (int i = 0; i < n->n_inputs && !f; i++)
    f = g_hash_table_lookup(ps->frame_of, n->inputs[i].src);
  for (guint c = 0; c < n->control_inputs->len && !f && n->n_inputs == 0; c++)
    f = g_hash_table_lookup(ps->frame_of, n->control_inputs->pdata[c]);
  if (!f) f = "";
  const char *out = f;
  if (op_is(n, "Enter", "RefEnter")) {
    out = attr_text(n, "frame_name");
    if (!g_hash_table_contains(ps->frame_parent, out))
      g_hash_table_insert(ps->frame_parent, (gpointer)out, (gpointer)f);
    frame_info_t *fi = frame_info_for(ps, out);
    fi->parent = g_hash_table_lookup(ps->frame_parent, out);
    frame_add_device(ps, out, device_of(ps, n));
  } else if (op_is(n, "Exit", "RefExit") && *f) {
    out = g_hash_table_lookup(ps->frame_parent, f);
    if (!out) out = "";
  }
  if (*f) {
    frame_info_t *fi = frame_info_for(ps, f);
    frame_add_device(ps, f, device_of(ps, n));
    if (strcmp(n->op_name, "LoopCond") == 0) fi->cond = n;
  }
  g_hash_table_insert(ps->frame_of, n, (gpointer)out);
  g_hash_table_insert(ps->run_frame, n, (gpointer)f);
}

/* The nodes of fi whose value its LoopCond needs in every iteration: back from the LoopCond
 * through the frame, not across NextIteration (last iteration's body) nor past its Enters. */
static void find_cond_side(part_state_t *ps, frame_info_t *fi) {
  GPtrArray *stack = g_ptr_array_new();
  g_hash_table_add(fi->cond_side, fi->cond);
  g_ptr_array_add(stack, fi->cond);
  while (stack->len > 0) {
    weft_node_t *u = g_ptr_array_steal_index_fast(stack, stack->len - 1);
    if (op_is(u, "Enter", "RefEnter")) continue;
    int n_all = u->n_inputs + (int)u->control_inputs->len;
    for (int k = 0; k < n_all; k++) {
      weft_node_t *v = k < u->n_inputs ? u->inputs[k].src
                                       : u->control_inputs->pdata[k - u->n_inputs];
      if (strcmp(out_frame_of(ps, v), fi->name) != 0 ||
          op_is(v, "NextIteration", "RefNextIteration") || g_hash_table_contains(fi->cond_side, v))
        continue;
      g_hash_table_add(fi->cond_side, v);
      g_ptr_array_add(stack, v);
    }
  }
  g_ptr_array_free(stack, TRUE);
}

static bool is_loop_structure(const weft_node_t *n) {
  return op_is(n, "Merge", "RefMerge") || op_is(n, "Switch", "RefSwitch") ||
         op_is(n, "NextIteration", "RefNextIteration") || op_is(n, "Exit", "RefExit") ||
         strcmp(n->op_name, "LoopCond") == 0;
}

/* Whether n, on `task`, breaks what the control loops of its frame can do. */
static weft_status_t *check_spanning(part_state_t *ps, weft_node_t *n, const char *task) {
  const char *f = run_frame_of(ps, n);
  bool enter = op_is(n, "Enter", "RefEnter");
  frame_info_t *fi = g_hash_table_lookup(ps->frames, enter ? out_frame_of(ps, n) : f);
  if (!fi || !fi->spans) return NULL;
  const char *device = device_of(ps, n);
  if (!fi->cond) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "While loop frame '%s' spans tasks (node '%s' (%s) on %s) but has no "
                           "LoopCond: a cross-task loop needs its predicate", fi->name, n->name,
                           n->op_name, device);
  }
  if (strcmp(task, fi->home) == 0) return NULL;
  const weft__attr_value_t *constant = weft__attrs_get(n->attrs, "is_constant");
  bool constant_enter = enter && constant && constant->kind == WEFT_ATTR_BOOL && constant->u.b;
  if (is_loop_structure(n) || (enter && !constant_enter)) {
    return weft_status_new(WEFT_UNIMPLEMENTED,
                           "Node '%s' (%s) on %s is part of while loop frame '%s', whose LoopCond "
                           "'%s' is on %s: a loop's Merge, Switch, NextIteration, Exit and "
                           "LoopCond nodes and its non-constant Enters must be on the LoopCond's "
                           "task (its body and condition may span tasks)", n->name, n->op_name,
                           device, fi->name, fi->cond->name, fi->home);
  }
  return NULL;
}

/* Finds every node's frame, which frames span tasks, their homes and condition sides, and
 * refuses what their control loops cannot do. */
static weft_status_t *analyze_frames(part_state_t *ps, GPtrArray *nodes) {
  for (guint k = 0; k < nodes->len; k++) note_frame(ps, nodes->pdata[k]);
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, ps->frames);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    frame_info_t *fi = value;
    fi->spans = g_hash_table_size(fi->devices) > 1;
    if (!fi->spans || !fi->cond) continue;
    fi->home = weft__task_of_device(device_of(ps, fi->cond));
    find_cond_side(ps, fi);
  }
  weft_status_t *st = NULL;
  for (guint k = 0; k < nodes->len && !st; k++) {
    weft_node_t *n = nodes->pdata[k];
    const char *device = device_of(ps, n);
    char *task = device ? weft__task_of_device(device) : NULL;
    if (task) st = check_spanning(ps, n, task);
    g_free(task);
  }
  return st;
}

/* The control loop of frame fi on partition p (see cloop_t), its Switch on the LoopCond's value
 * (received from the home when p is not the home). */
static weft_status_t *build_cloop(part_state_t *ps, frame_info_t *fi, weft__partition_t *p);

/* The control loop of frame fi on p, built on first use (with those of the frames around it). */
static weft_status_t *cloop_for(part_state_t *ps, frame_info_t *fi, weft__partition_t *p,
                                cloop_t **out) {
  char *key = g_strdup_printf("%s|%s", fi->name, p->task);
  weft_status_t *st = NULL;
  if (!g_hash_table_contains(ps->cloops, key)) st = build_cloop(ps, fi, p);
  *out = g_hash_table_lookup(ps->cloops, key);
  g_free(key);
  return st;
}

/* Where fi's control loop on p enters from: a root Const, or, for a loop nested in another,
 * the outer control loop on p, so it starts once per outer iteration as the inner loop does on
 * its home: in every one (the Merge) when the outer LoopCond needs the inner loop, else in
 * those that run the outer body (the live Identity). */
static weft_status_t *cloop_entry(part_state_t *ps, frame_info_t *fi, weft__partition_t *p,
                                  const char *device, const char *name, weft_node_t **out) {
  frame_info_t *outer = *fi->parent ? g_hash_table_lookup(ps->frames, fi->parent) : NULL;
  if (!outer) {
    weft_attrs_t *attrs = weft__attrs_new();
    weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TENSOR);
    v->u.tensor = weft_tensor_new_scalar_int32(0);
    weft__attrs_set(attrs, "value", v);
    set_type(attrs, "dtype", WEFT_DT_INT32);
    weft_status_t *st = add_node(p, name, "Const", NULL, 0, NULL, 0, device, attrs, out);
    weft__attrs_free(attrs);
    return st;
  }
  cloop_t *cl = NULL;
  WEFT_RETURN_IF_ERROR(cloop_for(ps, outer, p, &cl));
  bool cond_side = false;
  GHashTableIter it;
  gpointer node;
  g_hash_table_iter_init(&it, outer->cond_side);
  while (!cond_side && g_hash_table_iter_next(&it, &node, NULL))
    cond_side = op_is(node, "Enter", "RefEnter") &&
                strcmp(attr_text(node, "frame_name"), fi->name) == 0;
  *out = cond_side ? cl->merge : cl->live;
  return NULL;
}

static weft_status_t *build_cloop(part_state_t *ps, frame_info_t *fi, weft__partition_t *p) {
  char *device = g_strdup_printf("%s/device:CPU:0", p->task);
  char *base = g_strdup_printf("_weft/cloop/%s", fi->name);
  char *names[6];
  static const char *const parts[6] = {"const", "enter", "merge", "switch", "live", "next"};
  for (int k = 0; k < 6; k++) names[k] = g_strdup_printf("%s/%s", base, parts[k]);
  weft_node_t *nodes[6] = {NULL};
  weft_status_t *st = cloop_entry(ps, fi, p, device, names[0], &nodes[0]);
  weft_attrs_t *attrs = weft__attrs_new();
  set_type(attrs, "T", WEFT_DT_INT32);
  weft_attrs_t *enter_attrs = weft__attrs_copy(attrs);
  set_string(enter_attrs, "frame_name", fi->name);
  set_bool(enter_attrs, "is_constant", false);
  set_int(enter_attrs, "parallel_iterations", 1);
  weft__edge_t in[2] = {{nodes[0], 0}, {NULL, 0}};
  if (!st) st = add_node(p, names[1], "Enter", in, 1, NULL, 0, device, enter_attrs, &nodes[1]);
  weft__attrs_free(enter_attrs);
  weft_attrs_t *merge_attrs = weft__attrs_copy(attrs);
  set_int(merge_attrs, "N", 2);
  in[0] = in[1] = (weft__edge_t){nodes[1], 0};
  /* The second input is the NextIteration, linked once it exists. */
  if (!st) st = add_node(p, names[2], "Merge", in, 2, NULL, 0, device, merge_attrs, &nodes[2]);
  weft__attrs_free(merge_attrs);
  weft_node_t *pred = NULL;
  if (!st && strcmp(p->task, fi->home) == 0) {
    pred = g_hash_table_lookup(ps->copies, fi->cond);
  } else if (!st) {
    st = recv_for(ps, p, fi->cond, 0, device, &pred); /* gated on the Merge with the others */
  }
  in[0] = (weft__edge_t){nodes[2], 0};
  in[1] = (weft__edge_t){pred, 0};
  if (!st) st = add_node(p, names[3], "Switch", in, 2, NULL, 0, device, attrs, &nodes[3]);
  in[0] = (weft__edge_t){nodes[3], 1};
  if (!st) st = add_node(p, names[4], "Identity", in, 1, NULL, 0, device, attrs, &nodes[4]);
  in[0] = (weft__edge_t){nodes[4], 0};
  if (!st) st = add_node(p, names[5], "NextIteration", in, 1, NULL, 0, device, attrs, &nodes[5]);
  weft__attrs_free(attrs);
  if (!st) {
    nodes[2]->inputs[1].src = nodes[5];
    cloop_t *cl = g_new(cloop_t, 1);
    cl->merge = nodes[2];
    cl->live = nodes[4];
    g_hash_table_insert(ps->cloops, g_strdup_printf("%s|%s", fi->name, p->task), cl);
  }
  for (int k = 0; k < 6; k++) g_free(names[k]);
  g_free(base);
  g_free(device);
  return st;
}

/* Gives a _Send or _Recv the partitioner made (with no control inputs: those share the graph's
 * one empty array) a control input of its own. */
static void add_control(weft_node_t *node, weft_node_t *control) {
  if (node->control_inputs->len == 0) node->control_inputs = g_ptr_array_new();
  g_ptr_array_add(node->control_inputs, control);
}

/* Builds the control loops of every frame spanning tasks, one per task it runs on, then hangs
 * the frame's _Send and _Recv nodes on them. */
static weft_status_t *add_control_flow(part_state_t *ps) {
  weft_status_t *st = NULL;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, ps->frames);
  while (!st && g_hash_table_iter_next(&it, NULL, &value)) {
    frame_info_t *fi = value;
    if (!fi->spans) continue;
    GHashTableIter tasks;
    gpointer task;
    g_hash_table_iter_init(&tasks, fi->devices);
    cloop_t *cl = NULL;
    while (!st && g_hash_table_iter_next(&tasks, &task, NULL))
      st = cloop_for(ps, fi, partition_for(ps, task), &cl);
  }
  for (guint k = 0; k < ps->gates->len && !st; k++) {
    gate_t *g = &g_array_index(ps->gates, gate_t, k);
    char *name = g_strdup_printf("%s|%s", g->frame, g->task);
    cloop_t *cl = g_hash_table_lookup(ps->cloops, name);
    g_free(name);
    weft_node_t *gate = cl ? (g->every_iteration ? cl->merge : cl->live) : NULL;
    if (!gate) {
      st = weft_status_new(WEFT_INTERNAL, "Partitioning: no control loop of frame '%s' on %s "
                           "for '%s'", g->frame, g->task, g->node->name);
    } else if (g->node->control_inputs->len > 0) {
      st = weft_status_new(WEFT_INTERNAL, "Partitioning: '%s' in frame '%s' already has control "
                           "inputs", g->node->name, g->frame);
    } else {
      add_control(g->node, gate);
    }
  }
  return st;
}

static weft_status_t *frame_refusal(const weft_node_t *n, const char *device, const char *frame,
                                    const weft_node_t *src, const char *src_device) {
  return weft_status_new(WEFT_UNIMPLEMENTED,
                         "Node '%s' (%s) on %s reads '%s' on %s inside while loop frame '%s': "
                         "a loop's nodes must be on one task (values from other tasks enter it "
                         "through its Enter nodes)",
                         n->name, n->op_name, device, src->name, src_device, frame);
}

/* Links the back edges recorded while placing, now that their NextIterations are copied. */
static weft_status_t *link_back_edges(part_state_t *ps) {
  for (guint k = 0; k < ps->back_edges->len; k++) {
    back_edge_t *e = &g_array_index(ps->back_edges, back_edge_t, k);
    weft_node_t *copy = g_hash_table_lookup(ps->copies, e->src);
    if (!copy)
      return weft_status_new(WEFT_INTERNAL, "Partitioning: loop back edge from '%s' into '%s' "
                             "has no copy of its source", e->src->name, e->merge_copy->name);
    e->merge_copy->inputs[e->input].src = copy;
    e->merge_copy->inputs[e->input].src_index = e->index;
  }
  return NULL;
}

/* Copies one needed node into its task's partition, rewiring its inputs. */
static weft_status_t *place_node(part_state_t *ps, weft_node_t *n) {
  const char *device = device_of(ps, n);
  char *task = device ? weft__task_of_device(device) : NULL;
  if (!task) {
    weft_status_t *st = weft_status_new(WEFT_INTERNAL,
                                        "Node '%s' has no cluster device ('%s') to partition by",
                                        n->name, device ? device : "");
    return st;
  }
  weft__partition_t *p = partition_for(ps, task);
  g_free(task);
  g_hash_table_insert(ps->task_of, n, p->task);
  weft_status_t *st = NULL;
  weft__edge_t *inputs = g_new0(weft__edge_t, n->n_inputs + 1);
  GPtrArray *controls = g_ptr_array_new();
  const char *frame = run_frame_of(ps, n);
  GArray *back = g_array_new(FALSE, FALSE, sizeof(back_edge_t));
  for (int i = 0; i < n->n_inputs && !st; i++) {
    weft_node_t *src = n->inputs[i].src;
    int index = n->inputs[i].src_index;
    int f = feed_of(ps->spec, src, index);
    if (f >= 0) {
      st = feed_node_for(ps, p, f, device, &inputs[i].src);
      inputs[i].src_index = 0;
      continue;
    }
    const char *src_task = g_hash_table_lookup(ps->task_of, src);
    if (!src_task) {
      /* Not placed yet: a NextIteration -> Merge back edge (the step is otherwise in order). */
      const char *src_device = device_of(ps, src);
      char *t = src_device ? weft__task_of_device(src_device) : NULL;
      bool same = t && strcmp(t, p->task) == 0;
      g_free(t);
      if (!same || !op_is(n, "Merge", "RefMerge")) {
        st = frame_refusal(n, device, *frame ? frame : attr_text(src, "frame_name"), src,
                           src_device ? src_device : "?");
        break;
      }
      back_edge_t e = {NULL, i, src, index};
      g_array_append_val(back, e);
      continue;
    }
    if (*frame && strcmp(src_task, p->task) != 0 && *out_frame_of(ps, src)) {
      if (!spanning_frame_of(ps, src)) {
        st = frame_refusal(n, device, frame, src, device_of(ps, src));
        break;
      }
      if (op_is(src, "Switch", "RefSwitch") && index == 0) {
        /* The exit branch is live only in the last iteration, when the body's gates are not. */
        st = weft_status_new(WEFT_UNIMPLEMENTED,
                             "Node '%s' (%s) on %s reads the exit branch '%s:0' on %s inside "
                             "while loop frame '%s': a loop's exit values must stay on the task "
                             "of its Switch", n->name, n->op_name, device, src->name,
                             device_of(ps, src), frame);
        break;
      }
    }
    if (src_task && strcmp(src_task, p->task) == 0) {
      inputs[i].src = g_hash_table_lookup(ps->copies, src);
      inputs[i].src_index = index;
    } else if (weft__dtype_is_ref(n->input_types[i])) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s' (%s) on %s needs a reference to '%s' on %s: references "
                           "cannot cross tasks (colocate the node with its variable)",
                           n->name, n->op_name, device, src->name, device_of(ps, src));
    } else {
      st = recv_for(ps, p, src, index, device, &inputs[i].src);
      inputs[i].src_index = 0;
    }
  }
  /* Control inputs on this task stay edges; those on other tasks go in one group per task. */
  GPtrArray *remote = g_ptr_array_new();
  for (guint c = 0; c < n->control_inputs->len && !st; c++) {
    weft_node_t *ctl = n->control_inputs->pdata[c];
    const char *ctl_task = g_hash_table_lookup(ps->task_of, ctl);
    if (!ctl_task) continue; /* not part of the step: all its outputs are fed */
    if (strcmp(ctl_task, p->task) == 0) {
      g_ptr_array_add(controls, g_hash_table_lookup(ps->copies, ctl));
    } else if (*out_frame_of(ps, ctl) && !spanning_frame_of(ps, ctl)) {
      st = frame_refusal(n, device, out_frame_of(ps, ctl), ctl, device_of(ps, ctl));
    } else {
      g_ptr_array_add(remote, ctl);
    }
  }
  for (guint c = 0; c < remote->len && !st; c++) {
    weft_node_t *first = remote->pdata[c];
    if (!first) continue;
    const char *task_of_first = g_hash_table_lookup(ps->task_of, first);
    GPtrArray *group = g_ptr_array_new();
    for (guint d = c; d < remote->len; d++) {
      weft_node_t *ctl = remote->pdata[d];
      if (ctl && g_hash_table_lookup(ps->task_of, ctl) == task_of_first) {
        g_ptr_array_add(group, ctl);
        remote->pdata[d] = NULL;
      }
    }
    weft_node_t *dep = NULL;
    st = control_recv_for(ps, p, (weft_node_t *const *)group->pdata, (int)group->len, n, device,
                          &dep);
    if (dep) g_ptr_array_add(controls, dep);
    g_ptr_array_free(group, TRUE);
  }
  g_ptr_array_free(remote, TRUE);
  if (!st && back->len) {
    /* A back edge's place is held by the Merge's forward input until link_back_edges. */
    int held = -1;
    for (int i = 0; i < n->n_inputs && held < 0; i++)
      if (inputs[i].src) held = i;
    if (held < 0)
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "Merge node '%s' has only NextIteration "
                           "inputs: its loop has no entry", n->name);
    for (guint k = 0; k < back->len && !st; k++)
      inputs[g_array_index(back, back_edge_t, k).input] = inputs[held];
  }
  if (!st) {
    weft_attrs_t *attrs = weft__attrs_copy(n->attrs);
    /* Colocation was settled by the placer; the partition may not hold the named node. */
    weft__attrs_remove(attrs, "_class");
    if (op_is(n, "Enter", "RefEnter") && spanning_frame_of(ps, n))
      set_int(attrs, "parallel_iterations", 1); /* see "Frames" above */
    weft_node_t *copy = NULL;
    st = add_node(p, n->name, n->op_name, inputs, n->n_inputs,
                  (weft_node_t *const *)controls->pdata, (int)controls->len, device, attrs, &copy);
    weft__attrs_free(attrs);
    if (!st) g_hash_table_insert(ps->copies, n, copy);
    for (guint k = 0; k < back->len && !st; k++) {
      back_edge_t e = g_array_index(back, back_edge_t, k);
      e.merge_copy = copy;
      g_array_append_val(ps->back_edges, e);
    }
  }
  g_array_free(back, TRUE);
  g_free(inputs);
  g_ptr_array_free(controls, TRUE);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Grouped receives: which of the small tensors one task sends another in the step its _Recv
 * nodes fetch with one RecvTensor. A group is answered once all its tensors are there, so it
 * must not hold back a tensor its own members' consumers are needed to produce: with the group
 * as one node (every member's producer before it, every member's consumer after it), the step
 * must stay acyclic. Each group, taken in turn, keeps the members whose producer no consumer of
 * its members reaches, following edges and the groups already made, until that holds. */

typedef struct transfer {
  weft_node_t *src;
  int index;
  const char *src_task, *dst_task; /* interned in plan_t.tasks */
  GArray *consumers;               /* int: step positions of the nodes of dst_task reading it */
  bool small;                      /* a fixed size of at most WEFT_RECV_GROUP_MAX_BYTES */
} transfer_t;

typedef struct plan {
  GHashTable *tasks;      /* device -> task name (owned) */
  GHashTable *position;   /* weft_node_t* -> step position + 1 */
  const char **task;      /* per step position */
  GHashTable *transfers;  /* "src:index|task" -> transfer_t* (owned) */
  int n;
  int *succ_start, *succ; /* edges of the step, by position (compressed rows) */
  GPtrArray *joins;       /* per position: NULL or GArray of int, consumers a group adds */
} plan_t;

static void transfer_free(transfer_t *t) {
  g_array_free(t->consumers, TRUE);
  g_free(t);
}

static void joins_free(gpointer joined) {
  if (joined) g_array_free(joined, TRUE);
}

static int plan_position(const plan_t *pl, const weft_node_t *n) {
  return GPOINTER_TO_INT(g_hash_table_lookup(pl->position, n)) - 1;
}

static bool small_fixed_size(const weft_node_t *src, int index) {
  weft__shape_t shape = weft__node_shape(src, index);
  size_t elem = weft_dtype_size(weft__dtype_base(src->output_types[index]));
  if (shape.rank < 0 || elem == 0) return false;
  int64_t bytes = (int64_t)elem;
  for (int d = 0; d < shape.rank; d++) {
    if (shape.dims[d] < 0) return false;
    bytes *= shape.dims[d];
    if (bytes > WEFT_RECV_GROUP_MAX_BYTES) return false;
  }
  return true;
}

/* The step's edges by position: data inputs that are not fed, and control inputs. */
static void plan_edges(plan_t *pl, GPtrArray *nodes, const weft__step_spec_t *spec) {
  int *count = g_new0(int, pl->n + 1);
  GArray *from = g_array_new(FALSE, FALSE, sizeof(int)), *to = g_array_new(FALSE, FALSE, sizeof(int));
  for (int v = 0; v < pl->n; v++) {
    weft_node_t *n = nodes->pdata[v];
    for (int i = 0; i < n->n_inputs; i++) {
      int u = plan_position(pl, n->inputs[i].src);
      if (u < 0 || feed_of(spec, n->inputs[i].src, n->inputs[i].src_index) >= 0) continue;
      g_array_append_val(from, u);
      g_array_append_val(to, v);
      count[u]++;
    }
    for (guint c = 0; c < n->control_inputs->len; c++) {
      int u = plan_position(pl, n->control_inputs->pdata[c]);
      if (u < 0) continue;
      g_array_append_val(from, u);
      g_array_append_val(to, v);
      count[u]++;
    }
  }
  pl->succ_start = g_new0(int, pl->n + 1);
  for (int v = 0; v < pl->n; v++) pl->succ_start[v + 1] = pl->succ_start[v] + count[v];
  pl->succ = g_new(int, from->len + 1);
  memset(count, 0, sizeof(int) * (size_t)(pl->n + 1));
  for (guint e = 0; e < from->len; e++) {
    int u = g_array_index(from, int, e);
    pl->succ[pl->succ_start[u] + count[u]++] = g_array_index(to, int, e);
  }
  g_array_free(from, TRUE);
  g_array_free(to, TRUE);
  g_free(count);
}

/* Positions reachable from `start` (edges and the groups made so far). */
static guint8 *plan_reach(const plan_t *pl, GArray *start) {
  guint8 *seen = g_new0(guint8, pl->n);
  GArray *stack = g_array_new(FALSE, FALSE, sizeof(int));
  for (guint k = 0; k < start->len; k++) {
    int v = g_array_index(start, int, k);
    if (!seen[v]) {
      seen[v] = 1;
      g_array_append_val(stack, v);
    }
  }
  while (stack->len > 0) {
    int u = g_array_index(stack, int, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    GArray *joined = pl->joins->pdata[u];
    int n_real = pl->succ_start[u + 1] - pl->succ_start[u];
    int n_all = n_real + (joined ? (int)joined->len : 0);
    for (int e = 0; e < n_all; e++) {
      int v = e < n_real ? pl->succ[pl->succ_start[u] + e] : g_array_index(joined, int, e - n_real);
      if (!seen[v]) {
        seen[v] = 1;
        g_array_append_val(stack, v);
      }
    }
  }
  g_array_free(stack, TRUE);
  return seen;
}

/* Passes over the step one pair of tasks may take before its tensors travel alone: each drops
 * the members a consumer reaches, usually all such at once. */
#define PLAN_MAX_PASSES 8

/* Makes groups of `members` (transfer_t*, one source and receiving task); consumes it. */
static void plan_group(part_state_t *ps, plan_t *pl, GPtrArray *members) {
  for (int pass = 0;; pass++) {
    if (members->len < 2 || pass == PLAN_MAX_PASSES) return;
    GArray *start = g_array_new(FALSE, FALSE, sizeof(int));
    for (guint k = 0; k < members->len; k++) {
      transfer_t *t = members->pdata[k];
      g_array_append_vals(start, t->consumers->data, t->consumers->len);
    }
    guint8 *seen = plan_reach(pl, start);
    g_array_free(start, TRUE);
    guint kept = 0;
    for (guint k = 0; k < members->len; k++) {
      transfer_t *t = members->pdata[k];
      if (!seen[plan_position(pl, t->src)]) members->pdata[kept++] = t;
    }
    g_free(seen);
    if (kept == members->len) break;
    g_ptr_array_set_size(members, kept);
  }
  /* Every member's producer now comes before every member's consumer. */
  GArray *all_consumers = g_array_new(FALSE, FALSE, sizeof(int));
  for (guint k = 0; k < members->len; k++) {
    transfer_t *t = members->pdata[k];
    g_array_append_vals(all_consumers, t->consumers->data, t->consumers->len);
  }
  for (guint k = 0; k < members->len; k++) {
    int p = plan_position(pl, ((transfer_t *)members->pdata[k])->src);
    GArray *joined = pl->joins->pdata[p];
    if (!joined) joined = pl->joins->pdata[p] = g_array_new(FALSE, FALSE, sizeof(int));
    g_array_append_vals(joined, all_consumers->data, all_consumers->len);
  }
  g_array_free(all_consumers, TRUE);
  for (guint first = 0; first < members->len; first += WEFT_MAX_RECV_GROUP) {
    guint end = MIN(members->len, first + WEFT_MAX_RECV_GROUP);
    if (end - first < 2) break;
    recv_group_t *group = g_new0(recv_group_t, 1);
    group->keys = g_ptr_array_new_with_free_func(g_free);
    group->first_src = ((transfer_t *)members->pdata[first])->src;
    group->first_index = ((transfer_t *)members->pdata[first])->index;
    g_ptr_array_add(ps->groups, group);
    for (guint k = first; k < end; k++) {
      transfer_t *t = members->pdata[k];
      g_ptr_array_add(group->keys, g_strdup_printf("%s:%d;%s", t->src->name, t->index, t->dst_task));
      g_hash_table_insert(ps->recv_groups,
                          g_strdup_printf("recv|%s:%d|%s", t->src->name, t->index, t->dst_task),
                          group);
    }
  }
}

static void plan_recv_groups(part_state_t *ps, GPtrArray *nodes) {
  plan_t pl = {0};
  pl.n = (int)nodes->len;
  pl.tasks = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  pl.position = g_hash_table_new(g_direct_hash, g_direct_equal);
  pl.task = g_new0(const char *, pl.n + 1);
  pl.transfers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)transfer_free);
  const char *first_task = NULL;
  bool several_tasks = false;
  for (int v = 0; v < pl.n; v++) {
    weft_node_t *n = nodes->pdata[v];
    g_hash_table_insert(pl.position, n, GINT_TO_POINTER(v + 1));
    const char *device = device_of(ps, n);
    if (!device) continue;
    char *task = g_hash_table_lookup(pl.tasks, device);
    if (!task) {
      task = weft__task_of_device(device);
      if (!task) continue;
      g_hash_table_insert(pl.tasks, (gpointer)device, task);
    }
    pl.task[v] = task;
    if (!first_task) first_task = task;
    else if (strcmp(task, first_task) != 0) several_tasks = true;
  }
  /* A step on one task has nothing to group. Tasks are interned per device, not per name:
   * compare them by name. */
  GHashTable *by_pair = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GPtrArray *pairs = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (int v = 0; v < pl.n && several_tasks; v++) {
    weft_node_t *n = nodes->pdata[v];
    for (int i = 0; i < n->n_inputs && pl.task[v]; i++) {
      weft_node_t *src = n->inputs[i].src;
      int index = n->inputs[i].src_index, u = plan_position(&pl, src);
      if (u < 0 || !pl.task[u] || strcmp(pl.task[u], pl.task[v]) == 0 ||
          feed_of(ps->spec, src, index) >= 0 || weft__dtype_is_ref(n->input_types[i]) ||
          *out_frame_of(ps, src)) /* a loop's tensors have a key per iteration */
        continue;
      char *name = g_strdup_printf("%s:%d|%s", src->name, index, pl.task[v]);
      transfer_t *t = g_hash_table_lookup(pl.transfers, name);
      if (!t) {
        t = g_new0(transfer_t, 1);
        t->src = src;
        t->index = index;
        t->src_task = pl.task[u];
        t->dst_task = pl.task[v];
        t->consumers = g_array_new(FALSE, FALSE, sizeof(int));
        t->small = small_fixed_size(src, index);
        g_hash_table_insert(pl.transfers, name, t);
        if (t->small) {
          char *pair = g_strdup_printf("%s|%s", t->src_task, t->dst_task);
          GPtrArray *members = g_hash_table_lookup(by_pair, pair);
          if (!members) {
            members = g_ptr_array_new();
            g_hash_table_insert(by_pair, pair, members);
            g_ptr_array_add(pairs, members);
          } else {
            g_free(pair);
          }
          g_ptr_array_add(members, t);
        }
      } else {
        g_free(name);
      }
      g_array_append_val(t->consumers, v);
    }
  }
  for (guint k = 0; k < pairs->len; k++) {
    GPtrArray *members = pairs->pdata[k];
    if (members->len < 2) continue;
    if (!pl.succ) {
      plan_edges(&pl, nodes, ps->spec);
      pl.joins = g_ptr_array_new_with_free_func(joins_free);
      g_ptr_array_set_size(pl.joins, pl.n);
      ps->recv_groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
      ps->groups = g_ptr_array_new_with_free_func((GDestroyNotify)recv_group_free);
    }
    plan_group(ps, &pl, members);
  }
  g_ptr_array_free(pairs, TRUE);
  g_hash_table_destroy(by_pair);
  if (pl.joins) g_ptr_array_free(pl.joins, TRUE);
  g_free(pl.succ_start);
  g_free(pl.succ);
  g_hash_table_destroy(pl.transfers);
  g_free(pl.task);
  g_hash_table_destroy(pl.position);
  g_hash_table_destroy(pl.tasks);
}

weft_status_t *weft__partition_step(GPtrArray *nodes, GHashTable *placement,
                                    const weft__step_spec_t *spec, GPtrArray **out,
                                    int *fetch_part, int *fetch_slot) {
  *out = NULL;
  part_state_t ps = {0};
  ps.placement = placement;
  ps.spec = spec;
  ps.by_task = g_hash_table_new(g_str_hash, g_str_equal);
  ps.parts = g_ptr_array_new_with_free_func((GDestroyNotify)weft__partition_free);
  ps.task_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  ps.copies = g_hash_table_new(g_direct_hash, g_direct_equal);
  ps.made = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ps.frame_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  ps.frame_parent = g_hash_table_new(g_str_hash, g_str_equal);
  ps.back_edges = g_array_new(FALSE, FALSE, sizeof(back_edge_t));
  ps.run_frame = g_hash_table_new(g_direct_hash, g_direct_equal);
  ps.frames = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                    (GDestroyNotify)frame_info_free);
  ps.cloops = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  ps.gates = g_array_new(FALSE, FALSE, sizeof(gate_t));
  weft_status_t *st = analyze_frames(&ps, nodes);
  if (!st) plan_recv_groups(&ps, nodes);
  for (guint k = 0; k < nodes->len && !st; k++) st = place_node(&ps, nodes->pdata[k]);
  if (!st) st = link_back_edges(&ps);
  if (!st) st = add_control_flow(&ps);
  for (int f = 0; f < spec->n_fetches && !st; f++) {
    const weft__fetch_t *fetch = &spec->fetches[f];
    int fed = feed_of(spec, fetch->node, fetch->index);
    if (fed >= 0) {
      fetch_part[f] = -1;
      fetch_slot[f] = fed;
      continue;
    }
    const char *task = g_hash_table_lookup(ps.task_of, fetch->node);
    weft__partition_t *p = task ? g_hash_table_lookup(ps.by_task, task) : NULL;
    if (!p) {
      st = weft_status_new(WEFT_INTERNAL, "Fetch '%s:%d' is not part of any partition",
                           fetch->node->name, fetch->index);
      break;
    }
    guint index = 0;
    g_ptr_array_find(ps.parts, p, &index);
    fetch_part[f] = (int)index;
    fetch_slot[f] = (int)p->fetch_names->len;
    g_ptr_array_add(p->fetch_names, g_strdup_printf("%s:%d", fetch->node->name, fetch->index));
  }
  g_hash_table_destroy(ps.by_task);
  g_hash_table_destroy(ps.task_of);
  g_hash_table_destroy(ps.copies);
  g_hash_table_destroy(ps.made);
  g_hash_table_destroy(ps.frame_of);
  g_hash_table_destroy(ps.frame_parent);
  g_array_free(ps.back_edges, TRUE);
  g_hash_table_destroy(ps.run_frame);
  g_hash_table_destroy(ps.frames);
  g_hash_table_destroy(ps.cloops);
  g_array_free(ps.gates, TRUE);
  if (ps.recv_groups) g_hash_table_destroy(ps.recv_groups);
  if (ps.groups) g_ptr_array_free(ps.groups, TRUE);
  if (st) {
    g_ptr_array_free(ps.parts, TRUE);
    return st;
  }
  *out = ps.parts;
  return NULL;
}
