/* The executor: runs a placed set of nodes once per step by dependency counting. Each node's
 * pending count is its number of data and control inputs produced inside the step; nodes whose
 * count reaches zero run on the inter-op pool, except one per finishing node, which the same
 * thread runs next (a chain never pays for a thread hop), and cheap ones (small inputs, or a
 * kernel measured faster than a hand-off), which it runs before that one. Inputs move to the
 * consuming kernel's device (or host memory for host-memory args) as they are bound. The first
 * failing kernel cancels the step: nothing new starts, and the error names the node, op and
 * device. Before each node the step's cancellation (a session closed, a step aborted from
 * outside) and its deadline are read, so a step that would never end on its own (a loop whose
 * condition stays true) stops at its next node. */
#include "exec_internal.h"
#include "frames_internal.h"
#include "kernel_call.h"

#include <stdlib.h>
#include <string.h>

typedef struct out_edge {
  int dst;      /* executor node index */
  int dst_slot; /* -1: control edge */
  int src_slot;
} out_edge_t;

typedef struct fetch_ref {
  int fetch;    /* index into fetches */
  int output;
} fetch_ref_t;

typedef struct exec_node {
  const weft_node_t *node;
  weft__kernel_instance_t *kinst;
  int input_base;
  int initial_pending;
  out_edge_t *edges;
  int n_edges;
  fetch_ref_t *fetches;
  int n_fetches;
  bool *input_in_host_memory; /* per input */
  bool *input_is_ref;         /* per input: the kernel wants the reference itself */
  bool inexpensive;           /* runs inline on the thread that readied it, never hops */
  /* A plugin's kernel, whose time is measured (a core kernel may block: a _Recv waits for its
   * peer, and must never hold up the work queued behind it on its thread). */
  bool cost_tracked;
  /* What the kernel took the last times it ran with inputs over INLINE_INPUT_MAX_BYTES: an
   * average in microseconds (G_MAXINT: not measured yet), and the KiB of inputs it ran on. Read
   * and written by concurrent steps without a lock: a lost update only delays the average. */
  gint cost_us;
  gint cost_kib;
  const weft__fused_fallback_t *fallback; /* a fused chain planned with unknown shapes */
} exec_node_t;

/* Set on a node index in the ready lists and tasks: time its kernel (ready() decides, having
 * the inputs' sizes at hand). weft__executor_new keeps node indices below it. */
#define MEASURE_NODE (1 << 30)

typedef struct feed_target {
  int feed;
  int slot; /* absolute input slot */
} feed_target_t;

struct weft__executor {
  int n_nodes;
  exec_node_t *nodes;
  int total_inputs;
  int *roots;
  int n_roots;
  feed_target_t *feed_targets;
  int n_feed_targets;
  int n_fetches;
  int *fetch_from_feed; /* per fetch: feed index or -1 */
  weft__cf_executor_t *cf; /* steps with control flow run there instead (frames.c) */
  /* The per-step arrays of the last step that ended, kept for the next one: a step of a small
   * graph spent a fifth of its time in their calloc and free. A step takes them with one atomic
   * exchange; concurrent steps of one executor allocate their own. Only blocks up to
   * SPARE_MAX_BYTES are kept: a large graph's step does not notice one allocation, and its
   * plan should not hold megabytes between steps. */
  gpointer spare; /* step_arrays_t * or NULL */
  bool keep_arrays; /* the block is small enough to keep */
  /* How long a node handed to the inter-op pool waited to start, in microseconds (an
   * average): a node that runs in less is cheaper to run inline than to hand over. */
  gint handoff_us;
  /* WEFT_INLINE_US: a fixed bound in place of handoff_us (0: none is cheap by its time), or -1. */
  int inline_us;
};

/* What a hand-off is assumed to cost before one was measured: a pool thread's wake-up on an
 * idle machine. */
#define HANDOFF_US_INITIAL 10
/* The most a measured hand-off counts for. A hand-off's wait includes the queue when the pool is
 * busy, and once nodes run inline nothing measures it again: a busy step must not leave a wide
 * graph's 100-us branches serial for good. Wake-ups took 15-90 us on the 2-core VM. */
#define HANDOFF_US_MAX 50
#define INLINE_US_MAX 1000000

/* WEFT_INLINE_US, or -1 (unset, or not a number of microseconds: logged). */
static int inline_us_from_env(void) {
  const char *env = g_getenv("WEFT_INLINE_US");
  if (!env || !*env) return -1;
  char *end = NULL;
  long n = strtol(env, &end, 10);
  if (end != env && *end == '\0' && n >= 0 && n <= INLINE_US_MAX) return (int)n;
  weft__log(WEFT_LOG_WARNING, "executor",
            "WEFT_INLINE_US=%s is not a whole number of microseconds in 0..%d; the executor "
            "measures what a hand-off costs instead", env, INLINE_US_MAX);
  return -1;
}

#define SPARE_MAX_BYTES (256 << 10)

/* A step's per-node and per-input state, one allocation. */
typedef struct step_arrays {
  weft__value_t *inputs;    /* total_inputs; all cleared when a step ends */
  gint *pending;            /* n_nodes; set from initial_pending when a step starts */
  weft_tensor_t **fetched;  /* n_fetches; NULL when a step ends */
} step_arrays_t;

/* ---------------------------------------------------------------------------------------------
 * Building */

/* Ops whose kernels only forward or produce tiny values: handing them to another thread costs
 * more than running them (TensorFlow's "inexpensive" kernels). */
static bool is_inexpensive_op(const char *op) {
  static const char *const ops[] = {
      "Const", "Identity", "NoOp", "StopGradient", "PreventGradient", "Placeholder",
      "PlaceholderWithDefault", "VariableV2", "Shape", "ShapeN", "Size", "Rank", "Reshape",
      "ExpandDims", "Squeeze", "IsVariableInitialized", NULL,
  };
  for (const char *const *o = ops; *o; o++)
    if (strcmp(*o, op) == 0) return true;
  return false;
}

/* The bytes of one step's arrays (step_arrays_t) for `ex`, and where each array starts. */
static size_t step_arrays_layout(const weft__executor_t *ex, size_t *inputs_at,
                                 size_t *fetched_at, size_t *pending_at) {
  size_t n_in = (size_t)MAX(ex->total_inputs, 1), n_fetch = (size_t)MAX(ex->n_fetches, 1);
  size_t n_nodes = (size_t)MAX(ex->n_nodes, 1);
  *inputs_at = sizeof(step_arrays_t);
  *fetched_at = *inputs_at + n_in * sizeof(weft__value_t);
  *pending_at = *fetched_at + n_fetch * sizeof(weft_tensor_t *);
  return *pending_at + n_nodes * sizeof(gint);
}

weft_status_t *weft__executor_new(const weft__executor_params_t *p, weft__executor_t **out) {
  if (weft__cf_needed(p)) {
    weft__cf_executor_t *cf = NULL;
    WEFT_RETURN_IF_ERROR(weft__cf_executor_new(p, &cf));
    *out = g_new0(weft__executor_t, 1);
    (*out)->cf = cf;
    return NULL;
  }
  if (p->nodes->len >= MEASURE_NODE)
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "Executor: a step of %u nodes is more than %d",
                           p->nodes->len, MEASURE_NODE - 1);
  weft__executor_t *ex = g_new0(weft__executor_t, 1);
  ex->n_nodes = (int)p->nodes->len;
  ex->nodes = g_new0(exec_node_t, ex->n_nodes > 0 ? ex->n_nodes : 1);
  GHashTable *index_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (int k = 0; k < ex->n_nodes; k++) {
    exec_node_t *en = &ex->nodes[k];
    en->node = p->nodes->pdata[k];
    en->kinst = p->kernels[k];
    en->input_base = ex->total_inputs;
    ex->total_inputs += en->node->n_inputs;
    g_hash_table_insert(index_of, (gpointer)en->node, GINT_TO_POINTER(k + 1));
  }
  if (p->aliases) {
    GHashTableIter it;
    gpointer from, to;
    g_hash_table_iter_init(&it, p->aliases);
    while (g_hash_table_iter_next(&it, &from, &to))
      g_hash_table_insert(index_of, from, g_hash_table_lookup(index_of, to));
  }

  GArray **edges = g_new0(GArray *, ex->n_nodes > 0 ? ex->n_nodes : 1);
  GArray **fetches = g_new0(GArray *, ex->n_nodes > 0 ? ex->n_nodes : 1);
  for (int k = 0; k < ex->n_nodes; k++) {
    edges[k] = g_array_new(FALSE, FALSE, sizeof(out_edge_t));
    fetches[k] = g_array_new(FALSE, FALSE, sizeof(fetch_ref_t));
  }
  GArray *feed_targets = g_array_new(FALSE, FALSE, sizeof(feed_target_t));

  for (int k = 0; k < ex->n_nodes; k++) {
    exec_node_t *en = &ex->nodes[k];
    const weft_node_t *n = en->node;
    en->inexpensive = is_inexpensive_op(n->op_name) || (p->inexpensive && p->inexpensive[k]);
    en->cost_tracked = !en->inexpensive && en->kinst && en->kinst->kernel->plugin_path &&
                       strcmp(en->kinst->kernel->plugin_path, "core") != 0;
    en->cost_us = G_MAXINT;
    en->fallback = p->fallbacks ? g_hash_table_lookup(p->fallbacks, n) : NULL;
    en->input_in_host_memory = g_new0(bool, n->n_inputs > 0 ? n->n_inputs : 1);
    en->input_is_ref = g_new0(bool, n->n_inputs > 0 ? n->n_inputs : 1);
    for (int i = 0; i < n->n_inputs; i++) {
      en->input_is_ref[i] = weft__dtype_is_ref(n->input_types[i]);
      en->input_in_host_memory[i] =
          en->kinst && weft__kernel_arg_in_host_memory(en->kinst->kernel, n, false, i);
      const weft__edge_t *e = &n->inputs[i];
      int fed = -1;
      for (int f = 0; f < p->n_feeds && fed < 0; f++)
        if (p->feeds[f].node == e->src && p->feeds[f].index == e->src_index) fed = f;
      if (fed >= 0) {
        feed_target_t ft = {fed, en->input_base + i};
        g_array_append_val(feed_targets, ft);
        continue;
      }
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, e->src)) - 1;
      if (src < 0) {
        weft_status_t *st = weft_status_new(WEFT_INTERNAL,
                                            "Executor: input %d of node '%s' comes from '%s', "
                                            "which is not part of the step", i, n->name, e->src->name);
        g_hash_table_destroy(index_of);
        for (int j = 0; j < ex->n_nodes; j++) {
          g_array_free(edges[j], TRUE);
          g_array_free(fetches[j], TRUE);
        }
        g_free(edges);
        g_free(fetches);
        g_array_free(feed_targets, TRUE);
        weft__executor_free(ex);
        return st;
      }
      out_edge_t oe = {k, i, e->src_index};
      g_array_append_val(edges[src], oe);
      en->initial_pending++;
    }
    for (guint c = 0; c < n->control_inputs->len; c++) {
      int src = GPOINTER_TO_INT(g_hash_table_lookup(index_of, n->control_inputs->pdata[c])) - 1;
      if (src < 0) continue; /* a control input that is not part of this step (it was fed) */
      out_edge_t oe = {k, -1, -1};
      g_array_append_val(edges[src], oe);
      en->initial_pending++;
    }
  }

  ex->n_fetches = p->n_fetches;
  int *fetch_source = NULL;
  weft__plan_fetch_sources(p, index_of, &ex->fetch_from_feed, &fetch_source);
  for (int f = 0; f < p->n_fetches; f++) {
    if (fetch_source[f] < 0) continue;
    fetch_ref_t fr = {f, p->fetches[f].index};
    g_array_append_val(fetches[fetch_source[f]], fr);
  }
  g_free(fetch_source);

  GArray *roots = g_array_new(FALSE, FALSE, sizeof(int));
  for (int k = 0; k < ex->n_nodes; k++) {
    exec_node_t *en = &ex->nodes[k];
    en->n_edges = (int)edges[k]->len;
    en->edges = (out_edge_t *)(void *)g_array_free(edges[k], FALSE);
    en->n_fetches = (int)fetches[k]->len;
    en->fetches = (fetch_ref_t *)(void *)g_array_free(fetches[k], FALSE);
    if (en->initial_pending == 0) g_array_append_val(roots, k);
  }
  g_free(edges);
  g_free(fetches);
  ex->n_roots = (int)roots->len;
  ex->roots = (int *)(void *)g_array_free(roots, FALSE);
  ex->n_feed_targets = (int)feed_targets->len;
  ex->feed_targets = (feed_target_t *)(void *)g_array_free(feed_targets, FALSE);
  g_hash_table_destroy(index_of);
  size_t at[3];
  ex->keep_arrays = step_arrays_layout(ex, &at[0], &at[1], &at[2]) <= SPARE_MAX_BYTES;
  ex->handoff_us = HANDOFF_US_INITIAL;
  ex->inline_us = inline_us_from_env();
  *out = ex;
  return NULL;
}

void weft__executor_free(weft__executor_t *ex) {
  if (!ex) return;
  weft__cf_executor_free(ex->cf);
  for (int k = 0; k < ex->n_nodes; k++) {
    g_free(ex->nodes[k].edges);
    g_free(ex->nodes[k].fetches);
    g_free(ex->nodes[k].input_in_host_memory);
    g_free(ex->nodes[k].input_is_ref);
  }
  g_free(ex->nodes);
  g_free(ex->roots);
  g_free(ex->feed_targets);
  g_free(ex->fetch_from_feed);
  g_free(ex->spare);
  g_free(ex);
}

/* ---------------------------------------------------------------------------------------------
 * Cancellation */

void weft__cancel_init(weft__cancel_t *c) {
  c->requested = 0;
  g_mutex_init(&c->lock);
  c->why = NULL;
}

void weft__cancel_clear(weft__cancel_t *c) {
  weft_status_free(c->why);
  c->why = NULL;
  g_mutex_clear(&c->lock);
}

void weft__cancel_request(weft__cancel_t *c, const weft_status_t *why) {
  g_mutex_lock(&c->lock);
  if (!c->why) {
    c->why = weft_status_new(why ? weft_status_code(why) : WEFT_CANCELLED, "%s",
                             why ? weft_status_message(why) : "The step was cancelled");
    /* Set after the status, so a reader that sees the flag finds the status. */
    g_atomic_int_set(&c->requested, 1);
  }
  g_mutex_unlock(&c->lock);
}

weft_status_t *weft__cancel_status(weft__cancel_t *c) {
  if (!weft__cancel_requested(c)) return NULL;
  g_mutex_lock(&c->lock);
  weft_status_t *st = weft_status_new(weft_status_code(c->why), "%s", weft_status_message(c->why));
  g_mutex_unlock(&c->lock);
  return st;
}

weft_status_t *weft__step_interrupted(const weft__run_args_t *args, const weft_node_t *node) {
  if (G_UNLIKELY(weft__cancel_requested(args->cancel))) return weft__cancel_status(args->cancel);
  if (args->deadline_us && g_get_monotonic_time() > args->deadline_us) {
    return weft_status_new(WEFT_DEADLINE_EXCEEDED,
                           "The step passed its deadline before node '%s' (%s) started",
                           node->name, node->op_name);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Running a step */

typedef struct step {
  weft__executor_t *ex;
  const weft__run_args_t *args;
  weft__value_t *inputs;
  gint *pending;
  weft_tensor_t **fetched;
  gint outstanding;
  gint cancelled;
  GMutex lock;
  GCond done_cond;
  bool done;
  bool waiting; /* the caller sleeps on done_cond: only then is a wake-up (a syscall) needed */
  weft_status_t *error;
  weft__step_resources_t step_resources;
} step_t;

typedef struct task {
  step_t *step;
  int node;
  gint64 scheduled_us; /* monotonic, when it was handed to the pool */
} task_t;

static void record_error(step_t *s, weft_status_t *st) {
  g_mutex_lock(&s->lock);
  bool first = !s->error;
  if (first) s->error = st;
  else weft_status_free(st);
  g_mutex_unlock(&s->lock);
  g_atomic_int_set(&s->cancelled, 1);
  /* s->error stays put until the step ends, which cannot happen while this node is running. */
  if (first && s->args->on_error) s->args->on_error(s->args->on_error_data, s->error);
}

static const char *device_name_of(const exec_node_t *en) {
  return weft__kinst_device_name(en->kinst);
}

static void store_fetch(step_t *s, int fetch, const weft__value_t *v, const exec_node_t *en) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__fetch_to_host(v, en->node, &t);
  if (st) {
    record_error(s, st);
    return;
  }
  weft_tensor_unref(s->fetched[fetch]);
  s->fetched[fetch] = t;
}

static void schedule_node(step_t *s, int node);

/* Nodes a thread will run itself: every inexpensive successor (LIFO), and one other, run only
 * once the inexpensive ones are done. A kernel that blocks (a _Recv waiting for its peer) then
 * never holds up ready work queued behind it on its thread: that work may be what the peer is
 * waiting for. */
#define LOCAL_READY_MAX 64
typedef struct local_ready {
  int nodes[LOCAL_READY_MAX];
  int top;
  int expensive; /* -1: none */
} local_ready_t;

/* Inputs up to this size make any kernel cheaper than a thread hand-off (a few microseconds of
 * arithmetic against the wake-up of a pool thread): a ps applying the gradients of a small
 * model's variables spent three times as long handing its Apply ops over as running them. */
#define INLINE_INPUT_MAX_BYTES (16 << 10)

/* The KiB of the node's data inputs (those there), and whether each is small. A node without
 * data inputs (a _Recv, a source) is never judged by size: what it waits for is not in its
 * inputs. */
static bool small_inputs(const step_t *s, const exec_node_t *en, gint *kib) {
  int n = en->node->n_inputs;
  size_t total = 0;
  bool small = n > 0;
  for (int i = 0; i < n; i++) {
    const weft_tensor_t *t = s->inputs[en->input_base + i].tensor;
    size_t bytes = t ? weft_tensor_nbytes(t) : 0;
    if (bytes > INLINE_INPUT_MAX_BYTES) small = false;
    total += bytes;
  }
  *kib = (gint)MIN(total >> 10, (size_t)G_MAXINT / 4);
  return small;
}

/* Whether the node ran faster than a hand-off lasts, the last times it ran on inputs of about
 * this size (TensorFlow's executor keeps such a measured cost too). The fork of a GELU, whose
 * branches are elementwise ops of a few microseconds each, cost two thread wake-ups a step
 * while every node was judged by its inputs' size alone: a fifth of a batch-64 MLP step. */
static bool measured_cheap(const step_t *s, const exec_node_t *en, gint kib) {
  if (!en->cost_tracked) return false;
  gint cost = g_atomic_int_get(&en->cost_us);
  gint at_kib = g_atomic_int_get(&en->cost_kib);
  int bound = s->ex->inline_us >= 0
                  ? s->ex->inline_us
                  : MIN(g_atomic_int_get(&s->ex->handoff_us), HANDOFF_US_MAX);
  return cost < bound && kib <= 2 * at_kib + 16;
}

/* A node became ready: keep it on this thread when it is cheap, or when this thread has no
 * expensive work yet; else hand it to the inter-op pool. */
static void ready(step_t *s, local_ready_t *local, int node) {
  const exec_node_t *en = &s->ex->nodes[node];
  gint kib = 0;
  bool small = small_inputs(s, en, &kib);
  bool cheap = en->inexpensive || small || measured_cheap(s, en, kib);
  /* The node's kernel is timed when it runs: small inputs decide without it. */
  int item = en->cost_tracked && !small ? node | MEASURE_NODE : node;
  if (cheap && local->top < LOCAL_READY_MAX) local->nodes[local->top++] = item;
  else if (!cheap && local->expensive < 0) local->expensive = item;
  else schedule_node(s, item);
}

/* Folds one measurement into an average kept in a gint (a quarter of the new value). */
static void average_into(gint *avg, gint64 value) {
  gint old = g_atomic_int_get(avg);
  gint64 v = MIN(value, (gint64)G_MAXINT / 2);
  g_atomic_int_set(avg, old == G_MAXINT ? (gint)v : (gint)((3 * (gint64)old + v) / 4));
}

/* A kernel's error as the step reports it: naming the node once (kernels usually already say
 * which node failed), its op and its device. */
static weft_status_t *name_error(weft_status_t *st, const weft_node_t *node, const char *device) {
  const char *msg = weft_status_message(st);
  if (strstr(msg, node->name)) {
    weft_status_t *suffixed = weft_status_new(weft_status_code(st), "%s (op %s on %s)", msg,
                                              node->op_name, device);
    weft_status_free(st);
    return suffixed;
  }
  return weft_status_prefix(st, "node '%s' (%s) on %s", node->name, node->op_name, device);
}

static void value_copy(weft__value_t *dst, const weft__value_t *src) {
  dst->tensor = src->tensor ? weft_tensor_ref(src->tensor) : NULL;
  dst->ref = src->ref ? weft__variable_ref(src->ref) : NULL;
}

static bool same_shape(const weft_tensor_t *a, const weft_tensor_t *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* Whether a fused chain planned with unknown shapes can run its fused kernel on these inputs:
 * x large enough to gain from it, and every operand a scalar that does not raise x's rank, of
 * x's shape, or a row of its last dimension (BiasAdd: only a row, on x of rank >= 2), so every
 * member's output has x's shape as the kernel assumes. */
static bool fused_shapes_fit(const weft__fused_fallback_t *fb, const weft__value_t *in) {
  const weft_tensor_t *x = in[0].tensor;
  if (!x || x->num_elements < fb->min_elements) return false;
  int64_t last = x->rank > 0 ? x->dims[x->rank - 1] : 1;
  for (int k = 0; k < fb->n_members; k++) {
    const weft__fused_member_t *m = &fb->members[k];
    if (m->operand < 0) continue;
    const weft_tensor_t *o = in[m->operand].tensor;
    if (!o) return false;
    bool row = o->rank == 1 && x->rank >= (m->bias_add ? 2 : 1) && o->dims[0] == last;
    bool scalar = o->num_elements == 1 && o->rank <= x->rank;
    bool fits = m->bias_add ? row : row || scalar || same_shape(o, x);
    if (!fits) return false;
  }
  return true;
}

/* Runs a fused chain's members one by one, each with its own kernel, where its shapes do not
 * fit the fused kernel: broadcasting, results, errors and step stats are the unfused chain's.
 * Sets out[0] to the last member's output. */
static weft_status_t *run_fused_members(step_t *s, const exec_node_t *en, weft__value_t *out,
                                        const weft__kernel_call_env_t *env) {
  const weft__fused_fallback_t *fb = en->fallback;
  const weft__value_t *in = &s->inputs[en->input_base];
  weft__value_t cur = {0};
  value_copy(&cur, &in[0]);
  weft_status_t *st = NULL;
  for (int k = 0; k < fb->n_members && !st; k++) {
    const weft__fused_member_t *m = &fb->members[k];
    const int n_in = m->node->n_inputs;
    weft__value_t args[2] = {{0}}, res[1] = {{0}};
    bool is_ref[2] = {false, false}, in_host[2] = {false, false};
    args[m->main_input] = cur;
    memset(&cur, 0, sizeof cur);
    if (m->operand >= 0) value_copy(&args[1 - m->main_input], &in[m->operand]);
    for (int i = 0; i < n_in; i++)
      in_host[i] = m->kinst && weft__kernel_arg_in_host_memory(m->kinst->kernel, m->node, false, i);
    const char *device = weft__kinst_device_name(m->kinst);
    gint64 start_real = 0, start_mono = 0;
    if (s->args->stats) {
      start_real = g_get_real_time();
      start_mono = g_get_monotonic_time();
    }
    st = weft__kernel_call(m->node, m->kinst, m->kinst, is_ref, in_host, args, res, env);
    for (int i = 0; i < n_in; i++) weft__value_clear(&args[i]);
    if (st) {
      st = name_error(st, m->node, device);
      weft__value_clear(&res[0]);
    } else {
      if (s->args->stats)
        weft__record_node_stats(s->args->stats, m->node, device, start_real, start_mono, res);
      cur = res[0];
    }
  }
  if (st) weft__value_clear(&cur);
  else out[0] = cur;
  return st;
}

/* Runs one node; readied successors go to `local` or the pool. */
static void run_node(step_t *s, int item, local_ready_t *local) {
  exec_node_t *en = &s->ex->nodes[item & ~MEASURE_NODE];
  const weft_node_t *node = en->node;
  weft_status_t *st = NULL;
  int n_out = node->n_outputs;
  weft__value_t outs_small[4];
  weft__value_t *outs = n_out <= 4 ? outs_small : g_new0(weft__value_t, n_out);
  memset(outs, 0, sizeof(weft__value_t) * (size_t)(n_out <= 4 ? 4 : n_out));

  if (!g_atomic_int_get(&s->cancelled)) {
    weft_status_t *stop = weft__step_interrupted(s->args, node);
    if (stop) record_error(s, stop);
  }
  if (!g_atomic_int_get(&s->cancelled)) {
    weft__kernel_call_env_t env = {s->args->intra_pool, s->args->resources, &s->step_resources,
                                   NULL, 0};
    if (G_UNLIKELY(en->fallback != NULL) &&
        !fused_shapes_fit(en->fallback, &s->inputs[en->input_base])) {
      st = run_fused_members(s, en, outs, &env);
      if (st) record_error(s, st);
    } else {
      gint64 start_real = 0, start_mono = 0;
      gint kib = 0;
      bool measure = (item & MEASURE_NODE) != 0;
      if (measure) small_inputs(s, en, &kib);
      if (s->args->stats) start_real = g_get_real_time();
      if (s->args->stats || measure) start_mono = g_get_monotonic_time();
      st = weft__kernel_call(node, en->kinst, en->kinst, en->input_is_ref,
                             en->input_in_host_memory, &s->inputs[en->input_base], outs, &env);
      if (st) {
        record_error(s, name_error(st, node, device_name_of(en)));
      } else {
        if (measure) {
          average_into(&en->cost_us, g_get_monotonic_time() - start_mono);
          g_atomic_int_set(&en->cost_kib, kib);
        }
        if (s->args->stats)
          weft__record_node_stats(s->args->stats, node, device_name_of(en), start_real,
                                  start_mono, outs);
      }
    }
  }
  for (int i = 0; i < node->n_inputs; i++) weft__value_clear(&s->inputs[en->input_base + i]);

  if (!g_atomic_int_get(&s->cancelled)) {
    for (int f = 0; f < en->n_fetches; f++)
      store_fetch(s, en->fetches[f].fetch, &outs[en->fetches[f].output], en);
    for (int e = 0; e < en->n_edges; e++) {
      const out_edge_t *oe = &en->edges[e];
      if (oe->dst_slot >= 0) {
        weft__value_t *dst = &s->inputs[s->ex->nodes[oe->dst].input_base + oe->dst_slot];
        const weft__value_t *src = &outs[oe->src_slot];
        if (src->tensor) dst->tensor = weft_tensor_ref(src->tensor);
        if (src->ref) dst->ref = weft__variable_ref(src->ref);
      }
      if (g_atomic_int_dec_and_test(&s->pending[oe->dst])) {
        g_atomic_int_inc(&s->outstanding);
        ready(s, local, oe->dst);
      }
    }
  }
  for (int o = 0; o < n_out; o++) weft__value_clear(&outs[o]);
  if (outs != outs_small) g_free(outs);
}

/* Runs the nodes of `local` and what they ready; signals when the step ends. */
static void run_local(step_t *s, local_ready_t *local) {
  for (;;) {
    int k = local->expensive;
    if (local->top > 0) {
      k = local->nodes[--local->top];
    } else if (k >= 0) {
      local->expensive = -1;
    } else {
      break;
    }
    run_node(s, k, local);
    if (g_atomic_int_dec_and_test(&s->outstanding)) {
      g_mutex_lock(&s->lock);
      s->done = true;
      if (s->waiting) g_cond_signal(&s->done_cond);
      g_mutex_unlock(&s->lock);
    }
  }
}

/* Runs a node and the chain of successors it hands to this thread. */
static void run_chain(step_t *s, int k) {
  local_ready_t local = {{0}, 0, -1};
  if (s->ex->nodes[k & ~MEASURE_NODE].inexpensive) local.nodes[local.top++] = k;
  else local.expensive = k;
  run_local(s, &local);
}

static void task_run(void *arg) {
  task_t *t = arg;
  step_t *s = t->step;
  int node = t->node;
  average_into(&s->ex->handoff_us, g_get_monotonic_time() - t->scheduled_us);
  g_free(t);
  run_chain(s, node);
}

static void schedule_node(step_t *s, int node) {
  if (!s->args->inter_pool) {
    /* No pool: run it right here (tests and single-threaded embedding). */
    run_chain(s, node);
    return;
  }
  task_t *t = g_new(task_t, 1);
  t->step = s;
  t->node = node;
  t->scheduled_us = g_get_monotonic_time();
  weft__threadpool_schedule(s->args->inter_pool, task_run, t);
}

/* Zeroed arrays for one step of `ex`, in one block (g_free). */
static step_arrays_t *step_arrays_new(const weft__executor_t *ex) {
  size_t inputs_at, fetched_at, pending_at;
  char *block = g_malloc0(step_arrays_layout(ex, &inputs_at, &fetched_at, &pending_at));
  step_arrays_t *a = (step_arrays_t *)(void *)block;
  a->inputs = (weft__value_t *)(void *)(block + inputs_at);
  a->fetched = (weft_tensor_t **)(void *)(block + fetched_at);
  a->pending = (gint *)(void *)(block + pending_at);
  return a;
}

weft_status_t *weft__executor_run(weft__executor_t *ex, const weft__run_args_t *args,
                                  weft_tensor_t **fetched) {
  if (ex->cf) return weft__cf_executor_run(ex->cf, args, fetched);
  step_t s = {0};
  s.ex = ex;
  s.args = args;
  step_arrays_t *arrays = g_atomic_pointer_exchange(&ex->spare, NULL);
  if (!arrays) arrays = step_arrays_new(ex);
  s.inputs = arrays->inputs;
  s.pending = arrays->pending;
  s.fetched = arrays->fetched;
  g_mutex_init(&s.lock);
  g_cond_init(&s.done_cond);
  g_mutex_init(&s.step_resources.lock);
  for (int k = 0; k < ex->n_nodes; k++) s.pending[k] = ex->nodes[k].initial_pending;
  for (int f = 0; f < ex->n_feed_targets; f++) {
    s.inputs[ex->feed_targets[f].slot].tensor = weft_tensor_ref(args->feed_values[ex->feed_targets[f].feed]);
  }
  for (int f = 0; f < ex->n_fetches; f++) {
    int feed = ex->fetch_from_feed[f];
    if (feed >= 0) {
      weft_tensor_t *t = args->feed_values[feed];
      weft_tensor_t *host = NULL;
      weft_status_t *st = weft__tensor_is_host(t) ? NULL : weft__tensor_to_device(t, NULL, &host);
      if (st) record_error(&s, st);
      else s.fetched[f] = host ? host : weft_tensor_ref(t);
    }
  }

  if (ex->n_roots > 0 && !s.cancelled) {
    s.outstanding = ex->n_roots;
    local_ready_t local = {{0}, 0, -1};
    for (int r = ex->n_roots - 1; r >= 0; r--) ready(&s, &local, ex->roots[r]);
    run_local(&s, &local);
    g_mutex_lock(&s.lock);
    s.waiting = true;
    while (!s.done) g_cond_wait(&s.done_cond, &s.lock);
    g_mutex_unlock(&s.lock);
  } else if (ex->n_nodes > 0 && ex->n_roots == 0 && !s.error) {
    record_error(&s, weft_status_new(WEFT_INVALID_ARGUMENT,
                                     "The step's graph has a cycle: no node can start"));
  }

  weft_status_t *st = s.error;
  if (!st) {
    for (int f = 0; f < ex->n_fetches && !st; f++) {
      if (!s.fetched[f]) {
        st = weft_status_new(WEFT_INTERNAL, "Fetch %d was not produced by the step", f);
      }
    }
  }
  for (int f = 0; f < ex->n_fetches; f++) {
    if (st) weft_tensor_unref(s.fetched[f]);
    else fetched[f] = s.fetched[f];
  }
  for (int k = 0; k < ex->total_inputs; k++) weft__value_clear(&s.inputs[k]);
  memset(s.fetched, 0, sizeof *s.fetched * (size_t)ex->n_fetches);
  if (!ex->keep_arrays || !g_atomic_pointer_compare_and_exchange(&ex->spare, NULL, arrays))
    g_free(arrays);
  weft__step_resources_clear(&s.step_resources);
  g_mutex_clear(&s.lock);
  g_cond_clear(&s.done_cond);
  return st;
}
