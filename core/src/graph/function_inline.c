/* function_inline.c: TensorFlow's function library run by inlining at import. A GraphDef whose
 * nodes call library functions (PartitionedCall, StatefulPartitionedCall, an op named after a
 * function) or use functional control flow (If/StatelessIf, While/StatelessWhile) is rewritten
 * into a plain GraphDef before the importer sees it, as TensorFlow's inline_function_utils and
 * LowerFunctionalOpsPass do: a body's nodes become `<call>/<node>`, its arguments read the
 * caller's inputs directly, its results leave through an IdentityN named as the call (so
 * "call:k" keeps naming output k), control_ret nodes become control inputs of that IdentityN,
 * attr placeholders are bound from the call's attrs, and If/While turn into Switch/Merge and
 * Enter/Merge/Switch/Exit/NextIteration/LoopCond frames. */
#include "graphdef_internal.h"

#include <stdarg.h>
#include <string.h>

/* Calls nested deeper than this are refused: a library can be deep without a cycle only by
 * mistake, and each level costs a C stack frame. */
#define MAX_CALL_DEPTH 64
/* Nodes an inlined graph may have: a small library whose functions each call the next twice
 * would otherwise ask for 2^depth copies. */
#define MAX_INLINED_NODES (1 << 22)
/* Tensors one list arg (N * T) may stand for: N comes from untrusted attrs. */
#define MAX_ARG_TENSORS (1 << 16)

#define DT_BOOL TENSORFLOW__DATA_TYPE__DT_BOOL

typedef struct inliner {
  weft__op_registry_t *ops;
  GHashTable *funcs;  /* name -> const Tensorflow__FunctionDef* */
  GPtrArray *out;     /* Tensorflow__NodeDef*, the flat graph's nodes */
  GPtrArray *arena;   /* everything the flat nodes point to that is ours, g_free()d at the end */
  GPtrArray *chain;   /* names of the functions being inlined, outermost first (borrowed) */
} inliner_t;

/* The binding of one function instance: attr name -> AttrValue (borrowed). */
typedef GHashTable bind_t;

static void *keep(inliner_t *c, void *p) {
  g_ptr_array_add(c->arena, p);
  return p;
}

static char *keep_printf(inliner_t *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static char *keep_printf(inliner_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return keep(c, s);
}

static bool is_call_op(const char *op) {
  return strcmp(op, "PartitionedCall") == 0 || strcmp(op, "StatefulPartitionedCall") == 0;
}
static bool is_if_op(const char *op) {
  return strcmp(op, "If") == 0 || strcmp(op, "StatelessIf") == 0;
}
static bool is_while_op(const char *op) {
  return strcmp(op, "While") == 0 || strcmp(op, "StatelessWhile") == 0;
}

/* "The function chain" for messages: 'a' -> 'b' -> 'c'. The caller g_free()s it. */
static char *chain_string(const inliner_t *c, const char *last) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < c->chain->len; i++)
    g_string_append_printf(s, "'%s' -> ", (const char *)c->chain->pdata[i]);
  g_string_append_printf(s, "'%s'", last);
  return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------------------------------------
 * Attrs */

static const Tensorflow__AttrValue *entry_find(Tensorflow__AttrEntry **e, size_t n,
                                               const char *key) {
  for (size_t k = 0; k < n; k++)
    if (e[k] != NULL && e[k]->key != NULL && strcmp(e[k]->key, key) == 0) return e[k]->value;
  return NULL;
}

static Tensorflow__AttrValue *attr_new(inliner_t *c, Tensorflow__AttrValue__ValueCase vc) {
  Tensorflow__AttrValue *v = keep(c, g_new(Tensorflow__AttrValue, 1));
  tensorflow__attr_value__init(v);
  v->value_case = vc;
  return v;
}

static Tensorflow__AttrValue *attr_type(inliner_t *c, int dtype) {
  Tensorflow__AttrValue *v = attr_new(c, TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
  v->type = dtype;
  return v;
}

static Tensorflow__AttrValue *attr_int(inliner_t *c, int64_t i) {
  Tensorflow__AttrValue *v = attr_new(c, TENSORFLOW__ATTR_VALUE__VALUE_I);
  v->i = i;
  return v;
}

static Tensorflow__AttrValue *attr_string(inliner_t *c, const char *s) {
  Tensorflow__AttrValue *v = attr_new(c, TENSORFLOW__ATTR_VALUE__VALUE_S);
  v->s.data = (uint8_t *)keep(c, g_strdup(s));
  v->s.len = strlen(s);
  return v;
}

static Tensorflow__AttrValue *attr_types(inliner_t *c, const GArray *types) {
  Tensorflow__AttrValue *v = attr_new(c, TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  v->list = keep(c, g_new(Tensorflow__AttrValue__ListValue, 1));
  tensorflow__attr_value__list_value__init(v->list);
  v->list->n_type = types->len;
  v->list->type = keep(c, g_memdup2(types->data, sizeof(int) * (types->len + 1)));
  return v;
}

/* The value bound to placeholder `v` (or v itself when it is not one). NULL when unbound. */
static const Tensorflow__AttrValue *resolve_value(const Tensorflow__AttrValue *v, bind_t *bind) {
  if (v == NULL || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER) return v;
  return bind != NULL ? g_hash_table_lookup(bind, v->placeholder) : NULL;
}

/* A body node's attrs with placeholders bound (one level into function attrs too, so a nested
 * call's binding is the outer one's). INVALID_ARGUMENT naming the attr and placeholder. */
static weft_status_t *resolve_attrs(inliner_t *c, const Tensorflow__NodeDef *nd, bind_t *bind,
                                    Tensorflow__AttrEntry ***out, size_t *n_out) {
  Tensorflow__AttrEntry **res = keep(c, g_new0(Tensorflow__AttrEntry *, nd->n_attr + 1));
  size_t n = 0;
  for (size_t k = 0; k < nd->n_attr; k++) {
    const Tensorflow__AttrEntry *e = nd->attr[k];
    if (e == NULL || e->value == NULL) continue;
    const Tensorflow__AttrValue *v = resolve_value(e->value, bind);
    if (v == NULL) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "attr '%s' is the placeholder '%s', which the call does not bind",
                             e->key, e->value->placeholder);
    }
    if (v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_FUNC && v->func != NULL) {
      Tensorflow__NameAttrList *f = keep(c, g_new(Tensorflow__NameAttrList, 1));
      *f = *v->func;
      f->attr = keep(c, g_new0(Tensorflow__AttrEntry *, v->func->n_attr + 1));
      for (size_t j = 0; j < v->func->n_attr; j++) {
        const Tensorflow__AttrEntry *fe = v->func->attr[j];
        const Tensorflow__AttrValue *fv = fe != NULL ? resolve_value(fe->value, bind) : NULL;
        if (fe != NULL && fe->value != NULL && fv == NULL) {
          return weft_status_new(WEFT_INVALID_ARGUMENT,
                                 "attr '%s' binds '%s' of function '%s' to the placeholder '%s', "
                                 "which the call does not bind",
                                 e->key, fe->key, f->name, fe->value->placeholder);
        }
        Tensorflow__AttrEntry *ne = keep(c, g_new(Tensorflow__AttrEntry, 1));
        tensorflow__attr_entry__init(ne);
        ne->key = fe != NULL ? fe->key : NULL;
        ne->value = (Tensorflow__AttrValue *)fv;
        f->attr[j] = ne;
      }
      Tensorflow__AttrValue *nv = attr_new(c, TENSORFLOW__ATTR_VALUE__VALUE_FUNC);
      nv->func = f;
      v = nv;
    }
    Tensorflow__AttrEntry *ne = keep(c, g_new(Tensorflow__AttrEntry, 1));
    tensorflow__attr_entry__init(ne);
    ne->key = e->key;
    ne->value = (Tensorflow__AttrValue *)v;
    res[n++] = ne;
  }
  *out = res;
  *n_out = n;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Arg layouts */

/* How many tensors an arg stands for, and (when `types` is not NULL) their dtypes, from the
 * attrs `find` gives. -1 in *count and an error when an attr it needs is missing. */
typedef const Tensorflow__AttrValue *(*attr_find_fn)(const void *ctx, const char *key);

static weft_status_t *arg_layout(const char *arg, int fixed, const char *type_attr,
                                 const char *number_attr, const char *type_list_attr,
                                 attr_find_fn find, const void *ctx, int *count, GArray *types) {
  *count = 1;
  if (type_list_attr != NULL && *type_list_attr) {
    const Tensorflow__AttrValue *v = find(ctx, type_list_attr);
    if (v == NULL || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST) {
      if (v == NULL || v->value_case == TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET) {
        *count = 0; /* an empty list is written as an unset value */
        return NULL;
      }
      return weft_status_new(WEFT_INVALID_ARGUMENT, "arg '%s' needs the list(type) attr '%s'",
                             arg, type_list_attr);
    }
    if (v->list != NULL && v->list->n_type > MAX_ARG_TENSORS) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "arg '%s' has %zu types in '%s', more than "
                             "the %d allowed", arg, v->list->n_type, type_list_attr,
                             MAX_ARG_TENSORS);
    }
    *count = v->list != NULL ? (int)v->list->n_type : 0;
    if (types)
      for (int k = 0; k < *count; k++) g_array_append_val(types, v->list->type[k]);
    return NULL;
  }
  if (number_attr != NULL && *number_attr) {
    const Tensorflow__AttrValue *v = find(ctx, number_attr);
    if (v == NULL || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_I || v->i < 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "arg '%s' needs the int attr '%s'", arg,
                             number_attr);
    }
    if (v->i > MAX_ARG_TENSORS) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "arg '%s' has %s = %" G_GINT64_FORMAT
                             " tensors, more than the %d allowed", arg, number_attr, v->i,
                             MAX_ARG_TENSORS);
    }
    *count = (int)v->i;
  }
  int dtype = fixed;
  if (type_attr != NULL && *type_attr) {
    const Tensorflow__AttrValue *v = find(ctx, type_attr);
    if (v == NULL || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE) {
      if (types == NULL) return NULL;
      return weft_status_new(WEFT_INVALID_ARGUMENT, "arg '%s' needs the type attr '%s'", arg,
                             type_attr);
    }
    dtype = v->type;
  }
  if (types)
    for (int k = 0; k < *count; k++) g_array_append_val(types, dtype);
  return NULL;
}

static const Tensorflow__AttrValue *find_in_bind(const void *ctx, const char *key) {
  return g_hash_table_lookup((GHashTable *)ctx, key);
}

typedef struct {
  Tensorflow__AttrEntry **attr;
  size_t n;
} entries_t;

static const Tensorflow__AttrValue *find_in_entries(const void *ctx, const char *key) {
  const entries_t *e = ctx;
  return entry_find(e->attr, e->n, key);
}

/* Layout of a function signature's args (inputs or outputs) under `bind`: the flat position of
 * each arg's first tensor in *first (n+1 entries), the dtypes in types. */
static weft_status_t *signature_layout(const Tensorflow__FunctionDef *f, bool outputs,
                                       bind_t *bind, int **first, GArray *types) {
  const Tensorflow__OpDef *sig = f->signature;
  size_t n = outputs ? sig->n_output_arg : sig->n_input_arg;
  Tensorflow__OpDef__ArgDef **args = outputs ? sig->output_arg : sig->input_arg;
  *first = g_new0(int, n + 1);
  int at = 0;
  for (size_t k = 0; k < n; k++) {
    const Tensorflow__OpDef__ArgDef *a = args[k];
    (*first)[k] = at;
    int count = 0;
    weft_status_t *st = arg_layout(a->name, a->type, a->type_attr, a->number_attr,
                                   a->type_list_attr, find_in_bind, bind, &count, types);
    if (st) {
      g_free(*first);
      *first = NULL;
      return weft_status_prefix(st, "%s of function '%s'", outputs ? "output" : "input",
                                sig->name);
    }
    at += count;
    if (at > MAX_ARG_TENSORS) {
      g_free(*first);
      *first = NULL;
      return weft_status_new(WEFT_INVALID_ARGUMENT, "function '%s' has more than %d %s tensors",
                             sig->name, MAX_ARG_TENSORS, outputs ? "output" : "input");
    }
  }
  (*first)[n] = at;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Bodies */

typedef struct body {
  const Tensorflow__FunctionDef *f;
  bind_t *bind;
  const char *prefix;       /* "<call>/" */
  GHashTable *nodes;        /* body node name -> const Tensorflow__NodeDef* */
  GHashTable *args;         /* arg name -> GINT(index of the arg) + 1 */
  int *arg_first;           /* flat position of each arg's first tensor */
  char **inputs;            /* the caller's tensors, flat */
  int n_inputs;
  const char *device;       /* the call's device, for body nodes without one */
  const char *input_control; /* a NoOp with the call's control inputs, or NULL */
} body_t;

static weft_status_t *emit_node(inliner_t *c, Tensorflow__NodeDef *nd, int depth);

/* The flat output index of body node `nd`'s output arg `out_arg`, element `idx`. */
static weft_status_t *output_index(inliner_t *c, body_t *b, const Tensorflow__NodeDef *nd,
                                   const char *out_arg, int idx, int *flat) {
  entries_t ent = {nd->attr, nd->n_attr};
  /* Bound attrs: a placeholder's count comes from the binding. */
  Tensorflow__AttrEntry **resolved = NULL;
  size_t n_resolved = 0;
  WEFT_RETURN_IF_ERROR(resolve_attrs(c, nd, b->bind, &resolved, &n_resolved));
  ent.attr = resolved;
  ent.n = n_resolved;
  int at = 0;
  const char *op = nd->op;
  const Tensorflow__FunctionDef *callee = g_hash_table_lookup(c->funcs, op);
  if (is_call_op(op) || is_if_op(op) || is_while_op(op)) {
    const char *list = is_while_op(op) ? "T" : "Tout";
    if (strcmp(out_arg, "output") == 0) {
      *flat = idx;
      return NULL;
    }
    return weft_status_new(WEFT_INVALID_ARGUMENT, "node '%s' (%s) has no output '%s' (its "
                           "outputs are 'output', typed by '%s')", nd->name, op, out_arg, list);
  }
  if (callee != NULL) {
    const Tensorflow__OpDef *sig = callee->signature;
    bind_t *inner = g_hash_table_new(g_str_hash, g_str_equal);
    for (size_t k = 0; k < ent.n; k++)
      g_hash_table_insert(inner, ent.attr[k]->key, ent.attr[k]->value);
    weft_status_t *st = NULL;
    bool found = false;
    for (size_t k = 0; k < sig->n_output_arg && !st && !found; k++) {
      const Tensorflow__OpDef__ArgDef *a = sig->output_arg[k];
      int count = 0;
      st = arg_layout(a->name, a->type, a->type_attr, a->number_attr, a->type_list_attr,
                      find_in_bind, inner, &count, NULL);
      if (!st && strcmp(a->name, out_arg) == 0) {
        found = true;
        if (idx >= count) {
          st = weft_status_new(WEFT_INVALID_ARGUMENT, "node '%s' has %d '%s' outputs, not %d",
                               nd->name, count, out_arg, idx + 1);
        }
        *flat = at + idx;
      }
      at += count;
    }
    g_hash_table_destroy(inner);
    if (!st && !found) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "node '%s' calls function '%s', which has no "
                           "output '%s'", nd->name, op, out_arg);
    }
    return st;
  }
  const weft__op_def_t *def = weft__op_registry_find_loading(c->ops, op);
  if (def == NULL) {
    /* The importer refuses the node itself, naming every missing op at once (and a SavedModel
     * only when a run needs it), so its consumers' index does not matter. */
    *flat = idx;
    return NULL;
  }
  for (guint k = 0; k < def->outputs->len; k++) {
    const weft__arg_def_t *a = def->outputs->pdata[k];
    int count = 0;
    WEFT_RETURN_IF_ERROR(arg_layout(a->name, 0, NULL, a->number_attr, a->type_list_attr,
                                    find_in_entries, &ent, &count, NULL));
    if (strcmp(a->name, out_arg) == 0) {
      if (idx >= count) {
        return weft_status_new(WEFT_INVALID_ARGUMENT, "node '%s' (%s) has %d '%s' outputs, not %d",
                               nd->name, op, count, out_arg, idx + 1);
      }
      *flat = at + idx;
      return NULL;
    }
    at += count;
  }
  return weft_status_new(WEFT_INVALID_ARGUMENT, "node '%s' (%s) has no output '%s'", nd->name, op,
                         out_arg);
}

/* A body's tensor reference ("arg", "arg:i", "node:out_arg:i", "^node") as a flat graph one. */
static weft_status_t *body_ref(inliner_t *c, body_t *b, const char *ref, const char **out) {
  bool control = ref[0] == '^';
  const char *text = control ? ref + 1 : ref;
  char **parts = g_strsplit(text, ":", 4);
  guint n = g_strv_length(parts);
  weft_status_t *st = NULL;
  int arg = GPOINTER_TO_INT(g_hash_table_lookup(b->args, parts[0])) - 1;
  const Tensorflow__NodeDef *nd = g_hash_table_lookup(b->nodes, parts[0]);
  if (n == 0 || n > 3 || *parts[0] == '\0') {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "malformed input '%s'", ref);
  } else if (arg >= 0 && n <= 2) {
    int i = n == 2 ? atoi(parts[1]) : 0;
    int pos = b->arg_first[arg] + i;
    if (i < 0 || pos >= b->arg_first[arg + 1]) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "input '%s' is past the argument's tensors", ref);
    } else if (control) {
      char *src = g_strdup(b->inputs[pos] + (b->inputs[pos][0] == '^'));
      char *colon = strchr(src, ':');
      if (colon) *colon = '\0';
      *out = keep_printf(c, "^%s", src);
      g_free(src);
    } else {
      *out = b->inputs[pos];
    }
  } else if (nd == NULL) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "input '%s' names no argument or node of the "
                         "function", ref);
  } else if (control) {
    *out = keep_printf(c, "^%s%s", b->prefix, parts[0]);
  } else {
    int flat = n == 2 ? atoi(parts[1]) : 0;
    if (n == 3) st = output_index(c, b, nd, parts[1], atoi(parts[2]), &flat);
    if (!st) *out = keep_printf(c, "%s%s:%d", b->prefix, parts[0], flat);
  }
  g_strfreev(parts);
  return st;
}

/* Inlines function f's body under b->prefix; the results' flat tensor names go to *rets (dtypes
 * in ret_types) and the control_ret nodes' flat names to ctl_rets. */
static weft_status_t *inline_body(inliner_t *c, body_t *b, int depth, GPtrArray *rets,
                                  GArray *ret_types, GPtrArray *ctl_rets) {
  const Tensorflow__FunctionDef *f = b->f;
  const Tensorflow__OpDef *sig = f->signature;
  for (size_t k = 0; k < sig->n_input_arg; k++)
    g_hash_table_insert(b->args, sig->input_arg[k]->name, GINT_TO_POINTER((int)k + 1));
  for (size_t k = 0; k < f->n_node_def; k++) {
    const Tensorflow__NodeDef *nd = f->node_def[k];
    if (nd == NULL || nd->name == NULL || *nd->name == '\0' || nd->op == NULL || *nd->op == '\0')
      return weft_status_new(WEFT_INVALID_ARGUMENT, "body node #%zu has no name or op", k);
    if (g_hash_table_contains(b->nodes, nd->name) || g_hash_table_contains(b->args, nd->name))
      return weft_status_new(WEFT_INVALID_ARGUMENT, "more than one node or argument is named "
                             "'%s'", nd->name);
    g_hash_table_insert(b->nodes, nd->name, (gpointer)nd);
  }
  for (size_t k = 0; k < f->n_node_def; k++) {
    const Tensorflow__NodeDef *nd = f->node_def[k];
    Tensorflow__NodeDef *flat = keep(c, g_new(Tensorflow__NodeDef, 1));
    tensorflow__node_def__init(flat);
    flat->name = keep_printf(c, "%s%s", b->prefix, nd->name);
    flat->op = nd->op;
    flat->device = nd->device != NULL && *nd->device ? nd->device : (char *)b->device;
    weft_status_t *st = resolve_attrs(c, nd, b->bind, &flat->attr, &flat->n_attr);
    bool no_inputs = nd->n_input == 0;
    flat->input = keep(c, g_new0(char *, nd->n_input + 2));
    for (size_t i = 0; i < nd->n_input && !st; i++) {
      const char *ref = NULL;
      st = body_ref(c, b, nd->input[i] != NULL ? nd->input[i] : "", &ref);
      flat->input[flat->n_input++] = (char *)ref;
    }
    /* A body node with no inputs waits for the call's control inputs, as TensorFlow's inliner
     * does; in a lowered If or While that puts it in the right branch and frame. */
    if (no_inputs && b->input_control)
      flat->input[flat->n_input++] = keep_printf(c, "^%s", b->input_control);
    if (st) return weft_status_prefix(st, "node '%s' (%s)", nd->name, nd->op);
    WEFT_RETURN_IF_ERROR(emit_node(c, flat, depth));
  }
  int *out_first = NULL;
  WEFT_RETURN_IF_ERROR(signature_layout(f, true, b->bind, &out_first, ret_types));
  weft_status_t *st = NULL;
  for (size_t k = 0; k < sig->n_output_arg && !st; k++) {
    const char *name = sig->output_arg[k]->name;
    const char *ret = NULL;
    for (size_t j = 0; j < f->n_ret; j++)
      if (f->ret[j] && f->ret[j]->key && strcmp(f->ret[j]->key, name) == 0) ret = f->ret[j]->value;
    if (ret == NULL) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "output '%s' has no ret entry", name);
      break;
    }
    if (out_first[k + 1] - out_first[k] != 1) {
      st = weft_status_new(WEFT_UNIMPLEMENTED, "output '%s' is a list of %d tensors; only "
                           "single-tensor outputs are supported", name,
                           out_first[k + 1] - out_first[k]);
      break;
    }
    const char *flat = NULL;
    st = body_ref(c, b, ret, &flat);
    if (!st && flat[0] == '^') st = weft_status_new(WEFT_INVALID_ARGUMENT, "ret '%s' is a control "
                                                    "input", ret);
    if (!st) g_ptr_array_add(rets, (gpointer)flat);
  }
  g_free(out_first);
  for (size_t j = 0; j < f->n_control_ret && !st; j++) {
    const char *node = f->control_ret[j] ? f->control_ret[j]->value : NULL;
    if (node == NULL || !g_hash_table_contains(b->nodes, node)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "control_ret '%s' names no node of the function",
                           node ? node : "");
    } else {
      g_ptr_array_add(ctl_rets, keep_printf(c, "^%s%s", b->prefix, node));
    }
  }
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Calls */

static Tensorflow__NodeDef *new_node(inliner_t *c, const char *name, const char *op,
                                     const char *device, size_t max_inputs) {
  Tensorflow__NodeDef *n = keep(c, g_new(Tensorflow__NodeDef, 1));
  tensorflow__node_def__init(n);
  n->name = keep(c, g_strdup(name));
  n->op = (char *)op;
  n->device = (char *)(device ? device : "");
  n->input = keep(c, g_new0(char *, max_inputs + 1));
  n->attr = keep(c, g_new0(Tensorflow__AttrEntry *, 8));
  return n;
}

static void add_attr(inliner_t *c, Tensorflow__NodeDef *n, const char *key,
                     Tensorflow__AttrValue *v) {
  Tensorflow__AttrEntry *e = keep(c, g_new(Tensorflow__AttrEntry, 1));
  tensorflow__attr_entry__init(e);
  e->key = (char *)key;
  e->value = v;
  n->attr[n->n_attr++] = e;
}

static void add_input(Tensorflow__NodeDef *n, const char *in) {
  n->input[n->n_input++] = (char *)in;
}

/* Where a call node's function and its binding come from. */
static weft_status_t *lookup_function(inliner_t *c, const Tensorflow__NodeDef *call,
                                      const char *attr, const Tensorflow__FunctionDef **f,
                                      Tensorflow__AttrEntry ***battr, size_t *n_battr) {
  const char *name = call->op;
  *battr = call->attr;
  *n_battr = call->n_attr;
  if (attr != NULL) {
    const Tensorflow__AttrValue *v = entry_find(call->attr, call->n_attr, attr);
    if (v == NULL || v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || v->func == NULL) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) has no function attr '%s'",
                             call->name, call->op, attr);
    }
    name = v->func->name ? v->func->name : "";
    *battr = v->func->attr;
    *n_battr = v->func->n_attr;
  }
  *f = g_hash_table_lookup(c->funcs, name);
  if (*f == NULL) {
    return weft_status_new(WEFT_NOT_FOUND, "Node '%s' (%s) calls function '%s', which is not in "
                           "the graph's function library", call->name, call->op, name);
  }
  for (guint i = 0; i < c->chain->len; i++) {
    if (strcmp(c->chain->pdata[i], name) == 0) {
      char *chain = chain_string(c, name);
      weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) calls function "
                                          "'%s' recursively (call chain %s); recursion is not "
                                          "supported", call->name, call->op, name, chain);
      g_free(chain);
      return st;
    }
  }
  if (c->chain->len >= MAX_CALL_DEPTH) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' calls function '%s' %d calls deep, "
                           "more than the %d allowed", call->name, name, c->chain->len + 1,
                           MAX_CALL_DEPTH);
  }
  return NULL;
}

/* Binds f's attrs for a call: the call's values, else the signature's defaults. */
static bind_t *make_bind(const Tensorflow__FunctionDef *f, Tensorflow__AttrEntry **attr,
                         size_t n) {
  bind_t *bind = g_hash_table_new(g_str_hash, g_str_equal);
  for (size_t k = 0; k < f->signature->n_attr; k++) {
    const Tensorflow__OpDef__AttrDef *a = f->signature->attr[k];
    if (a && a->name && a->default_value) g_hash_table_insert(bind, a->name, a->default_value);
  }
  for (size_t k = 0; k < n; k++)
    if (attr[k] && attr[k]->key && attr[k]->value)
      g_hash_table_insert(bind, attr[k]->key, attr[k]->value);
  return bind;
}

static const char *dtype_name(int dtype) {
  const ProtobufCEnumValue *v =
      protobuf_c_enum_descriptor_get_value(&tensorflow__data_type__descriptor, dtype);
  return v != NULL ? v->name : "an unknown DataType";
}

/* Inlines one instance of f under prefix "<base>/": caller inputs `inputs`, controls `controls`
 * (flat, "^x"); `types_attr` is the call's list of input dtypes to check against the signature
 * (NULL: none). Results as inline_body. */
static weft_status_t *instantiate(inliner_t *c, const Tensorflow__NodeDef *call,
                                  const char *base, const Tensorflow__FunctionDef *f,
                                  Tensorflow__AttrEntry **battr, size_t n_battr, char **inputs,
                                  int n_inputs, char **controls, int n_controls,
                                  const Tensorflow__AttrValue *types_attr, int depth,
                                  GPtrArray *rets, GArray *ret_types, GPtrArray *ctl_rets) {
  const char *fname = f->signature && f->signature->name ? f->signature->name : "";
  if (f->signature == NULL) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "function library entry called by node '%s' "
                           "has no signature", call->name);
  }
  bind_t *bind = make_bind(f, battr, n_battr);
  body_t b = {.f = f, .bind = bind, .prefix = keep_printf(c, "%s/", base), .inputs = inputs,
              .n_inputs = n_inputs, .device = call->device};
  b.nodes = g_hash_table_new(g_str_hash, g_str_equal);
  b.args = g_hash_table_new(g_str_hash, g_str_equal);
  GArray *in_types = g_array_new(FALSE, FALSE, sizeof(int));
  weft_status_t *st = signature_layout(f, false, bind, &b.arg_first, in_types);
  if (!st && b.arg_first[f->signature->n_input_arg] != n_inputs) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) calls function '%s' with %d "
                         "input%s, but the function takes %d", call->name, call->op, fname,
                         n_inputs, n_inputs == 1 ? "" : "s",
                         b.arg_first[f->signature->n_input_arg]);
  }
  if (!st && types_attr != NULL && types_attr->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST &&
      types_attr->list != NULL) {
    for (int k = 0; k < n_inputs && k < (int)types_attr->list->n_type && !st; k++) {
      int want = g_array_index(in_types, int, k);
      if (want != (int)types_attr->list->type[k]) {
        st = weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) calls function '%s' with "
                             "input %d of type %s, but the function's argument is %s",
                             call->name, call->op, fname, k,
                             dtype_name(types_attr->list->type[k]), dtype_name(want));
      }
    }
  }
  g_array_free(in_types, TRUE);
  if (!st && n_controls + n_inputs > 0) {
    /* Body nodes without inputs (Consts) must run where and when the call does: after its
     * control inputs, in its branch (a dead pivot makes them dead) and in its loop frame and
     * iteration, which a control edge from each input's producer gives them. */
    char *name = g_strdup_printf("%sinput_control_node", b.prefix);
    Tensorflow__NodeDef *noop = new_node(c, name, "NoOp", call->device,
                                         (size_t)(n_controls + n_inputs));
    g_free(name);
    GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (int k = 0; k < n_controls; k++) {
      if (g_hash_table_add(seen, controls[k])) add_input(noop, controls[k]);
    }
    for (int k = 0; k < n_inputs; k++) {
      char *ctl = keep_printf(c, "^%s", inputs[k]);
      char *colon = strchr(ctl, ':');
      if (colon) *colon = '\0';
      if (g_hash_table_add(seen, ctl)) add_input(noop, ctl);
    }
    g_hash_table_destroy(seen);
    g_ptr_array_add(c->out, noop);
    b.input_control = noop->name;
  }
  if (!st) {
    g_ptr_array_add(c->chain, (gpointer)fname);
    st = inline_body(c, &b, depth + 1, rets, ret_types, ctl_rets);
    g_ptr_array_remove_index(c->chain, c->chain->len - 1);
    if (st) {
      char *chain = chain_string(c, fname);
      weft_status_prefix(st, "Function %s, inlined at node '%s'", chain, call->name);
      g_free(chain);
    }
  }
  g_free(b.arg_first);
  g_hash_table_destroy(b.nodes);
  g_hash_table_destroy(b.args);
  g_hash_table_destroy(bind);
  return st;
}

/* Splits a call's inputs into data and control ones (new arrays, freed with free_inputs). */
static void split_inputs(const Tensorflow__NodeDef *call, GPtrArray **data_out,
                         GPtrArray **controls_out) {
  GPtrArray *data = *data_out = g_ptr_array_new(), *controls = *controls_out = g_ptr_array_new();
  for (size_t k = 0; k < call->n_input; k++) {
    const char *in = call->input[k];
    if (in == NULL) continue;
    g_ptr_array_add(in[0] == '^' ? controls : data, (gpointer)in);
  }
}

static void free_inputs(GPtrArray *data, GPtrArray *controls) {
  g_ptr_array_free(data, TRUE);
  g_ptr_array_free(controls, TRUE);
}

static Tensorflow__NodeDef *identity_n(inliner_t *c, const char *name, const char *device,
                                       GPtrArray *tensors, const GArray *types,
                                       GPtrArray *controls) {
  if (tensors->len == 0) {
    Tensorflow__NodeDef *n = new_node(c, name, "NoOp", device, controls->len);
    for (guint k = 0; k < controls->len; k++) add_input(n, controls->pdata[k]);
    return n;
  }
  Tensorflow__NodeDef *n = new_node(c, name, "IdentityN", device, tensors->len + controls->len);
  for (guint k = 0; k < tensors->len; k++) add_input(n, tensors->pdata[k]);
  for (guint k = 0; k < controls->len; k++) add_input(n, controls->pdata[k]);
  add_attr(c, n, "T", attr_types(c, types));
  return n;
}

static weft_status_t *expand_call(inliner_t *c, Tensorflow__NodeDef *call, int depth) {
  const Tensorflow__FunctionDef *f = NULL;
  Tensorflow__AttrEntry **battr = NULL;
  size_t n_battr = 0;
  bool named = is_call_op(call->op);
  WEFT_RETURN_IF_ERROR(lookup_function(c, call, named ? "f" : NULL, &f, &battr, &n_battr));
  GPtrArray *data = NULL, *controls = NULL;
  split_inputs(call, &data, &controls);
  GPtrArray *rets = g_ptr_array_new(), *ctl_rets = g_ptr_array_new();
  GArray *types = g_array_new(FALSE, FALSE, sizeof(int));
  const Tensorflow__AttrValue *tin = named ? entry_find(call->attr, call->n_attr, "Tin") : NULL;
  weft_status_t *st = instantiate(c, call, call->name, f, battr, n_battr, (char **)data->pdata,
                                  (int)data->len, (char **)controls->pdata, (int)controls->len,
                                  tin, depth, rets, types, ctl_rets);
  if (!st) g_ptr_array_add(c->out, identity_n(c, call->name, call->device, rets, types, ctl_rets));
  g_ptr_array_free(data, TRUE);
  g_ptr_array_free(controls, TRUE);
  g_ptr_array_free(rets, TRUE);
  g_ptr_array_free(ctl_rets, TRUE);
  g_array_free(types, TRUE);
  return st;
}

/* A control-flow node of the lowering, added to the output: data inputs in0 and in1 (either may
 * be NULL), then `controls` (may be NULL), attr T (unless dtype < 0) and, for a Merge, N = 2. */
static Tensorflow__NodeDef *flow_node(inliner_t *c, const char *name, const char *op,
                                      const char *device, int dtype, const char *in0,
                                      const char *in1, const GPtrArray *controls) {
  Tensorflow__NodeDef *n = new_node(c, name, op, device, 2 + (controls ? controls->len : 0));
  if (in0) add_input(n, in0);
  if (in1) add_input(n, in1);
  for (guint k = 0; controls && k < controls->len; k++) add_input(n, controls->pdata[k]);
  if (dtype >= 0) add_attr(c, n, "T", attr_type(c, dtype));
  if (strcmp(op, "Merge") == 0) add_attr(c, n, "N", attr_int(c, 2));
  g_ptr_array_add(c->out, n);
  return n;
}

/* If/StatelessIf as Switch/Merge, as TensorFlow's LowerIfOp. */
static weft_status_t *lower_if(inliner_t *c, Tensorflow__NodeDef *n, int depth) {
  GPtrArray *data = NULL, *controls = NULL;
  split_inputs(n, &data, &controls);
  weft_status_t *st = NULL;
  const Tensorflow__AttrValue *tin = entry_find(n->attr, n->n_attr, "Tin");
  GArray *in_types = g_array_new(FALSE, FALSE, sizeof(int));
  int count = 0;
  entries_t ent = {n->attr, n->n_attr};
  if (data->len == 0) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "If node '%s' has no cond input", n->name);
  } else {
    st = arg_layout("input", 0, NULL, NULL, "Tin", find_in_entries, &ent, &count, in_types);
    if (!st && count != (int)data->len - 1) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "If node '%s' has %u inputs after the cond "
                           "but its Tin lists %d", n->name, data->len - 1, count);
    }
  }
  char *sw = keep_printf(c, "%s/switch_pred", n->name);
  const char *pred = data->len ? data->pdata[0] : NULL;
  const Tensorflow__AttrValue *tcond = entry_find(n->attr, n->n_attr, "Tcond");
  if (!st && tcond && tcond->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE &&
      tcond->type != DT_BOOL) {
    /* The If kernel's rule for a cond that is not a bool (ToBool): a number is true when not
     * zero, a string when not empty, a tensor of rank > 0 when it has elements. */
    char *to_bool = keep_printf(c, "%s/to_bool", n->name);
    flow_node(c, to_bool, "ToBool", n->device, tcond->type, pred, NULL, NULL);
    pred = to_bool;
  }
  if (!st) flow_node(c, sw, "Switch", n->device, DT_BOOL, pred, pred, controls);
  GPtrArray *rets[2] = {g_ptr_array_new(), g_ptr_array_new()};
  GPtrArray *ctl[2] = {g_ptr_array_new(), g_ptr_array_new()};
  GArray *out_types[2] = {g_array_new(FALSE, FALSE, sizeof(int)),
                          g_array_new(FALSE, FALSE, sizeof(int))};
  const char *branch_attr[2] = {"else_branch", "then_branch"};
  const char *branch_name[2] = {"else", "then"};
  char *pivots[2] = {NULL, NULL};
  for (int br = 1; br >= 0 && !st; br--) {
    pivots[br] = keep_printf(c, "%s/pivot_%s", n->name, br ? "t" : "f");
    flow_node(c, pivots[br], "Identity", n->device, DT_BOOL, keep_printf(c, "%s:%d", sw, br),
              NULL, NULL);
    char **args = keep(c, g_new0(char *, data->len));
    for (guint k = 1; k < data->len; k++) {
      char *name = keep_printf(c, "%s/%s_input_%u", n->name, branch_name[br], k - 1);
      flow_node(c, name, "Switch", n->device, g_array_index(in_types, int, k - 1),
                data->pdata[k], pred, NULL);
      args[k - 1] = keep_printf(c, "%s:%d", name, br);
    }
    const Tensorflow__FunctionDef *f = NULL;
    Tensorflow__AttrEntry **battr = NULL;
    size_t n_battr = 0;
    st = lookup_function(c, n, branch_attr[br], &f, &battr, &n_battr);
    char *ctl_in = keep_printf(c, "^%s", pivots[br]);
    char *base = keep_printf(c, "%s/%s", n->name, branch_name[br]);
    if (!st)
      st = instantiate(c, n, base, f, battr, n_battr, args, (int)data->len - 1, &ctl_in, 1, tin,
                       depth, rets[br], out_types[br], ctl[br]);
  }
  if (!st && rets[0]->len != rets[1]->len) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "If node '%s': then_branch returns %u outputs "
                         "but else_branch %u", n->name, rets[1]->len, rets[0]->len);
  }
  GPtrArray *merged = g_ptr_array_new(), *done = g_ptr_array_new();
  for (guint k = 0; !st && k < rets[1]->len; k++) {
    int t1 = g_array_index(out_types[1], int, k), t0 = g_array_index(out_types[0], int, k);
    if (t1 != t0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "If node '%s': output %u is %s in then_branch "
                           "but %s in else_branch", n->name, k, dtype_name(t1), dtype_name(t0));
      break;
    }
    char *name = keep_printf(c, "%s/output_%u", n->name, k);
    flow_node(c, name, "Merge", n->device, t1, rets[1]->pdata[k], rets[0]->pdata[k], NULL);
    g_ptr_array_add(merged, keep_printf(c, "%s:0", name));
  }
  if (!st) {
    /* Which branch ran, after its stateful nodes: the If's control outputs. */
    char *exec_names[2];
    for (int br = 0; br < 2; br++) {
      exec_names[br] = keep_printf(c, "%s/%s_executed", n->name, branch_name[br]);
      flow_node(c, exec_names[br], "Identity", n->device, DT_BOOL, pivots[br], NULL, ctl[br]);
    }
    char *be = keep_printf(c, "%s/branch_executed", n->name);
    flow_node(c, be, "Merge", n->device, DT_BOOL, exec_names[1], exec_names[0], NULL);
    g_ptr_array_add(done, keep_printf(c, "^%s", be));
    g_ptr_array_add(c->out, identity_n(c, n->name, n->device, merged, out_types[1], done));
  }
  for (int br = 0; br < 2; br++) {
    g_ptr_array_free(rets[br], TRUE);
    g_ptr_array_free(ctl[br], TRUE);
    g_array_free(out_types[br], TRUE);
  }
  g_ptr_array_free(merged, TRUE);
  g_ptr_array_free(done, TRUE);
  g_array_free(in_types, TRUE);
  free_inputs(data, controls);
  return st;
}

/* While/StatelessWhile as a v1 loop frame named after the node, as TensorFlow's LowerWhileOp. */
static weft_status_t *lower_while(inliner_t *c, Tensorflow__NodeDef *n, int depth) {
  GPtrArray *data = NULL, *controls = NULL;
  split_inputs(n, &data, &controls);
  GArray *types = g_array_new(FALSE, FALSE, sizeof(int));
  entries_t ent = {n->attr, n->n_attr};
  int count = 0;
  weft_status_t *st = arg_layout("input", 0, NULL, NULL, "T", find_in_entries, &ent, &count,
                                 types);
  guint nv = data->len;
  if (!st && count != (int)nv) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "While node '%s' has %u inputs but its T lists "
                         "%d", n->name, nv, count);
  }
  if (!st && nv == 0) {
    st = weft_status_new(WEFT_UNIMPLEMENTED, "While node '%s' has no loop variables", n->name);
  }
  const Tensorflow__AttrValue *pi = entry_find(n->attr, n->n_attr, "parallel_iterations");
  int64_t par = pi && pi->value_case == TENSORFLOW__ATTR_VALUE__VALUE_I ? pi->i : 10;
  if (!st && par < 1) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "While node '%s' has parallel_iterations %" G_GINT64_FORMAT
                         "; it must be at least 1", n->name, par);
  }
  char **merges = keep(c, g_new0(char *, nv + 1));
  for (guint k = 0; k < nv && !st; k++) {
    int t = g_array_index(types, int, k);
    char *enter = keep_printf(c, "%s/enter_%u", n->name, k);
    Tensorflow__NodeDef *e = flow_node(c, enter, "Enter", n->device, t, data->pdata[k], NULL,
                                       controls);
    add_attr(c, e, "frame_name", attr_string(c, n->name));
    add_attr(c, e, "parallel_iterations", attr_int(c, par));
    char *merge = keep_printf(c, "%s/merge_%u", n->name, k);
    flow_node(c, merge, "Merge", n->device, t, enter,
              keep_printf(c, "%s/next_iteration_%u", n->name, k), NULL);
    merges[k] = keep_printf(c, "%s:0", merge);
  }
  GPtrArray *rets = g_ptr_array_new(), *ctl = g_ptr_array_new();
  GArray *ret_types = g_array_new(FALSE, FALSE, sizeof(int));
  const Tensorflow__FunctionDef *f = NULL;
  Tensorflow__AttrEntry **battr = NULL;
  size_t n_battr = 0;
  const Tensorflow__AttrValue *tlist = entry_find(n->attr, n->n_attr, "T");
  if (!st) st = lookup_function(c, n, "cond", &f, &battr, &n_battr);
  if (!st) {
    char *ctl_in = keep_printf(c, "^%s/merge_0", n->name);
    st = instantiate(c, n, keep_printf(c, "%s/cond", n->name), f, battr, n_battr, merges,
                     (int)nv, &ctl_in, 1, tlist, depth, rets, ret_types, ctl);
  }
  if (!st &&
      (rets->len != 1 || g_array_index(ret_types, int, 0) != DT_BOOL)) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "While node '%s': its cond function '%s' must "
                         "return one scalar bool, but returns %u output%s%s", n->name,
                         f->signature->name, rets->len, rets->len == 1 ? " of type " : "s",
                         rets->len == 1 ? dtype_name(g_array_index(ret_types, int, 0)) : "");
  }
  char *loop_cond = keep_printf(c, "%s/loop_cond", n->name);
  if (!st) {
    flow_node(c, loop_cond, "LoopCond", n->device, -1, rets->pdata[0], NULL, ctl);
  }
  char **body_in = keep(c, g_new0(char *, nv + 1));
  GPtrArray *exits = g_ptr_array_new();
  for (guint k = 0; k < nv && !st; k++) {
    int t = g_array_index(types, int, k);
    char *sw = keep_printf(c, "%s/switch_%u", n->name, k);
    flow_node(c, sw, "Switch", n->device, t, merges[k], loop_cond, NULL);
    char *exit = keep_printf(c, "%s/exit_%u", n->name, k);
    flow_node(c, exit, "Exit", n->device, t, keep_printf(c, "%s:0", sw), NULL, NULL);
    g_ptr_array_add(exits, keep_printf(c, "%s:0", exit));
    char *id = keep_printf(c, "%s/body_input_%u", n->name, k);
    flow_node(c, id, "Identity", n->device, t, keep_printf(c, "%s:1", sw), NULL, NULL);
    body_in[k] = keep_printf(c, "%s:0", id);
  }
  g_ptr_array_set_size(rets, 0);
  g_ptr_array_set_size(ctl, 0);
  g_array_set_size(ret_types, 0);
  if (!st) st = lookup_function(c, n, "body", &f, &battr, &n_battr);
  if (!st) {
    char *ctl_in = keep_printf(c, "^%s/body_input_0", n->name);
    st = instantiate(c, n, keep_printf(c, "%s/body", n->name), f, battr, n_battr, body_in,
                     (int)nv, &ctl_in, 1, tlist, depth, rets, ret_types, ctl);
  }
  if (!st && rets->len != nv) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "While node '%s': its body function '%s' returns "
                         "%u outputs for %u loop variables", n->name, f->signature->name,
                         rets->len, nv);
  }
  for (guint k = 0; k < nv && !st; k++) {
    int t = g_array_index(types, int, k);
    if (g_array_index(ret_types, int, k) != t) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "While node '%s': its body returns %s for loop "
                           "variable %u, which is %s", n->name,
                           dtype_name(g_array_index(ret_types, int, k)), k, dtype_name(t));
      break;
    }
    char *next = keep_printf(c, "%s/next_iteration_%u", n->name, k);
    /* The body's stateful nodes finish before the next iteration starts. */
    flow_node(c, next, "NextIteration", n->device, t, rets->pdata[k], NULL, k == 0 ? ctl : NULL);
  }
  if (!st) {
    GPtrArray *none = g_ptr_array_new();
    g_ptr_array_add(c->out, identity_n(c, n->name, n->device, exits, types, none));
    g_ptr_array_free(none, TRUE);
  }
  g_ptr_array_free(exits, TRUE);
  g_ptr_array_free(rets, TRUE);
  g_ptr_array_free(ctl, TRUE);
  g_array_free(ret_types, TRUE);
  g_array_free(types, TRUE);
  free_inputs(data, controls);
  return st;
}

/* Adds a flat node to the output, or expands it when it is a call or functional control flow. */
static weft_status_t *emit_node(inliner_t *c, Tensorflow__NodeDef *nd, int depth) {
  if (depth > MAX_CALL_DEPTH) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s': functions nested more than %d deep",
                           nd->name, MAX_CALL_DEPTH);
  }
  if (c->out->len >= MAX_INLINED_NODES) {
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "Node '%s': inlining the function library "
                           "makes more than %d nodes", nd->name, MAX_INLINED_NODES);
  }
  if (is_if_op(nd->op)) return lower_if(c, nd, depth);
  if (is_while_op(nd->op)) return lower_while(c, nd, depth);
  if (is_call_op(nd->op) || g_hash_table_contains(c->funcs, nd->op))
    return expand_call(c, nd, depth);
  g_ptr_array_add(c->out, nd);
  return NULL;
}

bool weft__graphdef_has_functions(const Tensorflow__GraphDef *gd) {
  if (gd == NULL) return false;
  if (gd->library != NULL && gd->library->n_function > 0) return true;
  for (size_t i = 0; i < gd->n_node; i++) {
    const char *op = gd->node[i] != NULL ? gd->node[i]->op : NULL;
    if (op != NULL && (is_call_op(op) || is_if_op(op) || is_while_op(op))) return true;
  }
  return false;
}

weft_status_t *weft__graphdef_inline_functions(weft__op_registry_t *ops,
                                               const Tensorflow__GraphDef *gd,
                                               Tensorflow__GraphDef **out) {
  *out = NULL;
  inliner_t c = {.ops = ops};
  c.funcs = g_hash_table_new(g_str_hash, g_str_equal);
  c.out = g_ptr_array_new();
  c.arena = g_ptr_array_new_with_free_func(g_free);
  c.chain = g_ptr_array_new();
  weft_status_t *st = NULL;
  const Tensorflow__FunctionDefLibrary *lib = gd->library;
  for (size_t k = 0; lib != NULL && k < lib->n_function && !st; k++) {
    const Tensorflow__FunctionDef *f = lib->function[k];
    const char *name = f && f->signature && f->signature->name ? f->signature->name : "";
    if (*name == '\0') {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "function #%zu of the library has no name", k);
    } else if (g_hash_table_contains(c.funcs, name)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "the function library defines '%s' twice", name);
    } else {
      g_hash_table_insert(c.funcs, (gpointer)name, (gpointer)f);
    }
  }
  for (size_t i = 0; i < gd->n_node && !st; i++) {
    Tensorflow__NodeDef *nd = gd->node[i];
    if (nd == NULL || nd->op == NULL || nd->name == NULL) {
      g_ptr_array_add(c.out, nd); /* the importer names what is wrong with it */
      continue;
    }
    st = emit_node(&c, nd, 0);
  }
  if (!st) {
    /* Packed and read back, so the result is one protobuf-c message its caller frees as usual. */
    Tensorflow__GraphDef flat = TENSORFLOW__GRAPH_DEF__INIT;
    flat.n_node = c.out->len;
    flat.node = (Tensorflow__NodeDef **)c.out->pdata;
    flat.versions = gd->versions;
    flat.version = gd->version;
    size_t len = tensorflow__graph_def__get_packed_size(&flat);
    uint8_t *buf = g_malloc(len > 0 ? len : 1);
    tensorflow__graph_def__pack(&flat, buf);
    *out = tensorflow__graph_def__unpack(NULL, len, buf);
    g_free(buf);
    if (*out == NULL) st = weft_status_new(WEFT_INTERNAL, "the inlined GraphDef did not re-read");
  }
  g_hash_table_destroy(c.funcs);
  g_ptr_array_free(c.out, TRUE);
  g_ptr_array_free(c.arena, TRUE);
  g_ptr_array_free(c.chain, TRUE);
  return st;
}
