/* Gradient programs (ABI 1.1, weft_op_def_t.gradient): the gradient of a plugin's op written as a
 * few statements over existing ops ("s = Sigmoid(Mul(x, $beta))", "dx = Mul(dy, s)"). The loader
 * parses and checks a program when the op is registered, so that a typo fails the plugin at
 * load time rather than a training step later; the core keeps the parsed program per op, and
 * weft__gradient_build instantiates it into a graph for one forward node (what symbolic
 * differentiation calls for ops it has no built-in gradient for, and what weft-conformance uses
 * to check a plugin's gradient against finite differences). Grammar in docs/sdk.md. */
#include "plugin_internal.h"

#include <errno.h>
#include <string.h>

typedef enum gexpr_kind {
  GEXPR_REF,  /* a name: forward arg, d<output>, earlier statement; with an output index */
  GEXPR_NUM,  /* a number literal: scalar constant */
  GEXPR_ATTR, /* $attr: scalar constant from the forward node's attribute */
  GEXPR_CALL, /* Op(args){attrs} */
} gexpr_kind_t;

typedef struct gattr {
  char *name;
  char *from_attr;           /* "$beta" copies the forward node's beta */
  weft__attr_value_t *value; /* else a literal parsed as the called op's attr type */
} gattr_t;

typedef struct gexpr {
  gexpr_kind_t kind;
  char *name;       /* REF: the name; CALL: the op; ATTR: the attribute */
  int index;        /* REF: output index */
  double number;    /* NUM */
  GPtrArray *args;  /* CALL: gexpr_t* */
  GPtrArray *attrs; /* CALL: gattr_t* */
} gexpr_t;

typedef struct gstmt {
  char *name;
  gexpr_t *expr;
  int line;
} gstmt_t;

struct weft__grad_program {
  char *op;
  char *text;
  GPtrArray *stmts; /* gstmt_t* */
};

static void gattr_free(gpointer p) {
  gattr_t *a = p;
  g_free(a->name);
  g_free(a->from_attr);
  weft__attr_value_free(a->value);
  g_free(a);
}

static void gexpr_free(gpointer p) {
  gexpr_t *e = p;
  if (!e) return;
  g_free(e->name);
  if (e->args) g_ptr_array_unref(e->args);
  if (e->attrs) g_ptr_array_unref(e->attrs);
  g_free(e);
}

static void gstmt_free(gpointer p) {
  gstmt_t *s = p;
  g_free(s->name);
  gexpr_free(s->expr);
  g_free(s);
}

void weft__grad_program_free(weft__grad_program_t *p) {
  if (!p) return;
  g_free(p->op);
  g_free(p->text);
  g_ptr_array_unref(p->stmts);
  g_free(p);
}

const char *weft__grad_program_text(const weft__grad_program_t *p) { return p ? p->text : NULL; }

/* ---------------------------------------------------------------------------------------------
 * Parsing */

typedef struct parser {
  const weft__op_def_t *def; /* the forward op */
  weft__op_lookup_fn lookup;
  void *lookup_arg;
  const char *line_text; /* the statement being parsed, for messages */
  int line;
  const char *p;
  GHashTable *names; /* every name defined so far -> GINT_TO_POINTER(outputs) */
  weft_status_t *error;
} parser_t;

static void fail(parser_t *ps, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void fail(parser_t *ps, const char *fmt, ...) {
  if (ps->error) return;
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  ps->error = weft_status_new(WEFT_INVALID_ARGUMENT, "gradient of op %s, line %d ('%s'): %s",
                              ps->def->name, ps->line, ps->line_text, msg);
  g_free(msg);
}

static void skip_ws(parser_t *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r') ps->p++;
}

static bool ident_start(char c) { return g_ascii_isalpha(c) || c == '_'; }
static bool ident_char(char c) { return g_ascii_isalnum(c) || c == '_'; }

static char *parse_ident(parser_t *ps) {
  skip_ws(ps);
  if (!ident_start(*ps->p)) return NULL;
  const char *start = ps->p;
  while (ident_char(*ps->p)) ps->p++;
  return g_strndup(start, (gsize)(ps->p - start));
}

static bool accept(parser_t *ps, char c) {
  skip_ws(ps);
  if (*ps->p != c) return false;
  ps->p++;
  return true;
}

/* A single-tensor arg of the forward op named `name`, or NULL (also NULL for list args, which
 * gradient programs do not handle: reported by the caller). */
static const weft__arg_def_t *find_arg(const GPtrArray *args, const char *name) {
  for (guint k = 0; k < args->len; k++) {
    const weft__arg_def_t *a = args->pdata[k];
    if (strcmp(a->name, name) == 0) return a;
  }
  return NULL;
}

static bool is_list_arg(const weft__arg_def_t *a) {
  return a->number_attr != NULL || a->type_list_attr != NULL;
}

/* Checks that `name` (with output `index`) names something defined by now. */
static void check_ref(parser_t *ps, const char *name, int index) {
  const weft__arg_def_t *arg = find_arg(ps->def->inputs, name);
  if (!arg) arg = find_arg(ps->def->outputs, name);
  if (!arg && name[0] == 'd') arg = find_arg(ps->def->outputs, name + 1);
  if (arg) {
    if (is_list_arg(arg))
      fail(ps, "'%s' is a list argument; gradient programs take single tensors", name);
    else if (index != 0)
      fail(ps, "'%s' is one tensor; '%s:%d' does not exist", name, name, index);
    return;
  }
  gpointer n_outputs = NULL;
  if (!g_hash_table_lookup_extended(ps->names, name, NULL, &n_outputs)) {
    fail(ps,
         "'%s' is not an input or output of %s, the gradient of an output (d<output>), nor "
         "defined on an earlier line",
         name, ps->def->name);
  } else if (GPOINTER_TO_INT(n_outputs) >= 0 && index >= GPOINTER_TO_INT(n_outputs)) {
    fail(ps, "'%s' has %d output(s); '%s:%d' does not exist", name, GPOINTER_TO_INT(n_outputs),
         name, index);
  }
}


static gexpr_t *parse_expr(parser_t *ps);

/* {name=value, name=$attr} after a call. */
static void parse_call_attrs(parser_t *ps, gexpr_t *call, const weft__op_def_t *callee) {
  call->attrs = g_ptr_array_new_with_free_func(gattr_free);
  if (accept(ps, '}')) return;
  do {
    char *name = parse_ident(ps);
    if (!name || !accept(ps, '=')) {
      g_free(name);
      fail(ps, "expected name=value in the attributes of %s", call->name);
      return;
    }
    gattr_t *a = g_new0(gattr_t, 1);
    a->name = name;
    g_ptr_array_add(call->attrs, a);
    skip_ws(ps);
    if (*ps->p == '$') {
      ps->p++;
      a->from_attr = parse_ident(ps);
      if (!a->from_attr || !weft__op_def_find_attr(ps->def, a->from_attr)) {
        fail(ps, "'$%s' is not an attribute of %s", a->from_attr ? a->from_attr : "",
             ps->def->name);
        return;
      }
      if (callee && !weft__op_def_find_attr(callee, name)) {
        fail(ps, "op %s has no attr '%s'", callee->name, name);
        return;
      }
    } else {
      /* A literal runs to the next ',' or '}' outside brackets and quotes. */
      const char *start = ps->p;
      int depth = 0;
      bool quoted = false;
      for (; *ps->p && *ps->p != '\n' && *ps->p != ';'; ps->p++) {
        char c = *ps->p;
        if (c == '"' || c == '\'')
          quoted = !quoted;
        else if (!quoted && (c == '[' || c == '{'))
          depth++;
        else if (!quoted && depth == 0 && (c == ',' || c == '}'))
          break;
        else if (!quoted && (c == ']' || c == '}'))
          depth--;
      }
      char *text = g_strstrip(g_strndup(start, (gsize)(ps->p - start)));
      if (!callee) {
        g_free(text);
        return; /* the unknown op was reported */
      }
      weft_status_t *st = weft__attr_parse_value(callee, name, text, &a->value);
      if (st) {
        fail(ps, "%s", weft_status_message(st));
        weft_status_free(st);
      }
      g_free(text);
      if (ps->error) return;
    }
  } while (accept(ps, ','));
  if (!accept(ps, '}')) fail(ps, "expected '}' after the attributes of %s", call->name);
}

static gexpr_t *parse_expr(parser_t *ps) {
  if (ps->error) return NULL;
  skip_ws(ps);
  gexpr_t *e = g_new0(gexpr_t, 1);
  if (*ps->p == '$') {
    ps->p++;
    e->kind = GEXPR_ATTR;
    e->name = parse_ident(ps);
    const weft__attr_def_t *ad = e->name ? weft__op_def_find_attr(ps->def, e->name) : NULL;
    if (!ad) {
      fail(ps, "'$%s' is not an attribute of %s", e->name ? e->name : "", ps->def->name);
    } else if (strcmp(ad->type, "float") != 0 && strcmp(ad->type, "int") != 0 &&
               strcmp(ad->type, "bool") != 0) {
      fail(ps, "'$%s' is a %s attribute; only int, float and bool attributes make constants",
           e->name, ad->type);
    }
    return e;
  }
  if (g_ascii_isdigit(*ps->p) || *ps->p == '-' || *ps->p == '+' || *ps->p == '.') {
    e->kind = GEXPR_NUM;
    char *end = NULL;
    e->number = g_ascii_strtod(ps->p, &end);
    if (end == ps->p)
      fail(ps, "expected a number");
    else
      ps->p = end;
    return e;
  }
  e->name = parse_ident(ps);
  if (!e->name) {
    fail(ps, "expected a name, a number, $attr or Op(...) at '%s'", ps->p);
    return e;
  }
  if (accept(ps, '(')) {
    e->kind = GEXPR_CALL;
    e->args = g_ptr_array_new_with_free_func(gexpr_free);
    const weft__op_def_t *callee = ps->lookup(e->name, ps->lookup_arg);
    if (!callee) fail(ps, "op '%s' is not registered", e->name);
    if (!accept(ps, ')')) {
      do {
        g_ptr_array_add(e->args, parse_expr(ps));
      } while (!ps->error && accept(ps, ','));
      if (!ps->error && !accept(ps, ')')) fail(ps, "expected ')' closing %s(", e->name);
    }
    if (!ps->error && accept(ps, '{')) parse_call_attrs(ps, e, callee);
    if (!ps->error) {
      bool any_tensor = false;
      for (guint k = 0; k < e->args->len; k++)
        any_tensor |= ((gexpr_t *)e->args->pdata[k])->kind != GEXPR_NUM &&
                      ((gexpr_t *)e->args->pdata[k])->kind != GEXPR_ATTR;
      if (e->args->len && !any_tensor)
        fail(ps,
             "%s(...) has only constant arguments; a constant takes its dtype from a tensor "
             "argument of the same call",
             e->name);
    }
    return e;
  }
  e->kind = GEXPR_REF;
  if (accept(ps, ':')) {
    skip_ws(ps);
    char *end = NULL;
    errno = 0;
    long idx = strtol(ps->p, &end, 10);
    if (end == ps->p || errno || idx < 0 || idx > 1000)
      fail(ps, "expected an output index after '%s:'", e->name);
    else
      ps->p = end;
    e->index = (int)idx;
  }
  if (!ps->error) check_ref(ps, e->name, e->index);
  return e;
}

/* Outputs of what an expression produces: the callee's outputs for a call (-1 when it has list
 * outputs, whose count is known only per node), 1 otherwise. */
static int expr_outputs(parser_t *ps, const gexpr_t *e) {
  if (e->kind != GEXPR_CALL) return 1;
  const weft__op_def_t *callee = ps->lookup(e->name, ps->lookup_arg);
  if (!callee) return -1;
  for (guint k = 0; k < callee->outputs->len; k++)
    if (is_list_arg(callee->outputs->pdata[k])) return -1;
  return (int)callee->outputs->len;
}

weft_status_t *weft__grad_program_parse(const weft__op_def_t *def, const char *text,
                                        weft__op_lookup_fn lookup, void *lookup_arg,
                                        weft__grad_program_t **out) {
  *out = NULL;
  weft__grad_program_t *prog = g_new0(weft__grad_program_t, 1);
  prog->op = g_strdup(def->name);
  prog->text = g_strdup(text);
  prog->stmts = g_ptr_array_new_with_free_func(gstmt_free);
  parser_t ps = {def,
                 lookup,
                 lookup_arg,
                 NULL,
                 0,
                 NULL,
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
                 NULL};
  /* Lines split on '\n' and ';' (no literal of the grammar contains either). */
  char **lines = g_strsplit_set(text, "\n;", -1);
  for (int k = 0; lines[k] && !ps.error; k++) {
    char *hash = strchr(lines[k], '#');
    if (hash) *hash = '\0';
    char *line = g_strstrip(lines[k]);
    ps.line = k + 1;
    ps.line_text = line;
    ps.p = line;
    if (!*line) continue;
    char *name = parse_ident(&ps);
    if (!name || !accept(&ps, '=')) {
      g_free(name);
      fail(&ps, "expected 'name = expression'");
      break;
    }
    if (find_arg(def->inputs, name) || find_arg(def->outputs, name) ||
        (name[0] == 'd' && find_arg(def->outputs, name + 1)) ||
        g_hash_table_contains(ps.names, name)) {
      fail(&ps, "'%s' is already defined", name);
      g_free(name);
      break;
    }
    gstmt_t *st = g_new0(gstmt_t, 1);
    st->name = name;
    st->line = ps.line;
    st->expr = parse_expr(&ps);
    g_ptr_array_add(prog->stmts, st);
    if (ps.error) break;
    skip_ws(&ps);
    if (*ps.p) {
      fail(&ps, "unexpected '%s' after the expression", ps.p);
      break;
    }
    if (st->expr->kind == GEXPR_NUM || st->expr->kind == GEXPR_ATTR) {
      fail(&ps, "'%s' is a bare constant; use it inside a call, where it takes a dtype", name);
      break;
    }
    g_hash_table_insert(ps.names, g_strdup(name), GINT_TO_POINTER(expr_outputs(&ps, st->expr)));
  }
  g_strfreev(lines);
  if (!ps.error) {
    bool any = false;
    for (guint k = 0; k < def->inputs->len; k++) {
      const weft__arg_def_t *a = def->inputs->pdata[k];
      char *dname = g_strconcat("d", a->name, NULL);
      bool has = g_hash_table_contains(ps.names, dname);
      if (has && is_list_arg(a)) {
        ps.line = 0;
        ps.line_text = dname;
        fail(&ps, "input '%s' is a list; gradient programs cannot produce its gradient", a->name);
      }
      any |= has;
      g_free(dname);
    }
    if (!any && !ps.error) {
      ps.line = 0;
      ps.line_text = text;
      fail(&ps, "no statement defines the gradient of an input (d<input>, e.g. d%s)",
           def->inputs->len ? ((weft__arg_def_t *)def->inputs->pdata[0])->name : "x");
    }
  }
  g_hash_table_destroy(ps.names);
  if (ps.error) {
    weft__grad_program_free(prog);
    return ps.error;
  }
  *out = prog;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The registry: op name -> program. */

static GMutex gradients_lock;
static GHashTable *gradients; /* char* -> weft__grad_program_t* */

void weft__gradients_add(weft__grad_program_t *prog) {
  g_mutex_lock(&gradients_lock);
  if (!gradients)
    gradients = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                      (GDestroyNotify)weft__grad_program_free);
  /* The loader refuses a second definition of an op, so a name never comes twice. */
  g_hash_table_replace(gradients, prog->op, prog);
  g_mutex_unlock(&gradients_lock);
}

const weft__grad_program_t *weft__gradient_lookup(const char *op) {
  g_mutex_lock(&gradients_lock);
  const weft__grad_program_t *p = gradients && op ? g_hash_table_lookup(gradients, op) : NULL;
  g_mutex_unlock(&gradients_lock);
  return p;
}

/* ---------------------------------------------------------------------------------------------
 * Building */

typedef struct builder {
  weft_graph_t *graph;
  weft_node_t *node;
  const weft_output_t *dys;
  GHashTable *values; /* statement name -> weft_output_t* (the call's node, index 0) */
  int line;
} builder_t;

static weft_status_t *build_error(builder_t *b, weft_status_t *st) {
  return weft_status_prefix(st, "building the gradient of node '%s' (%s), line %d", b->node->name,
                            b->node->op_name, b->line);
}


/* A scalar tensor of dtype holding value; NULL for a dtype constants cannot take. */
static weft_tensor_t *scalar_tensor(weft_dtype_t dtype, double value) {
  weft_tensor_t *t = weft_tensor_new(dtype, 0, NULL);
  void *d = weft_tensor_data(t);
  switch (dtype) {
    case WEFT_DT_FLOAT:
      *(float *)d = (float)value;
      break;
    case WEFT_DT_DOUBLE:
      *(double *)d = value;
      break;
    case WEFT_DT_HALF:
      *(uint16_t *)d = weft__float_to_half((float)value);
      break;
    case WEFT_DT_BFLOAT16:
      *(uint16_t *)d = weft__float_to_bfloat16((float)value);
      break;
    case WEFT_DT_INT32:
      *(int32_t *)d = (int32_t)value;
      break;
    case WEFT_DT_INT64:
      *(int64_t *)d = (int64_t)value;
      break;
    case WEFT_DT_INT16:
      *(int16_t *)d = (int16_t)value;
      break;
    case WEFT_DT_INT8:
      *(int8_t *)d = (int8_t)value;
      break;
    case WEFT_DT_UINT8:
      *(uint8_t *)d = (uint8_t)value;
      break;
    case WEFT_DT_UINT16:
      *(uint16_t *)d = (uint16_t)value;
      break;
    case WEFT_DT_UINT32:
      *(uint32_t *)d = (uint32_t)value;
      break;
    case WEFT_DT_UINT64:
      *(uint64_t *)d = (uint64_t)value;
      break;
    case WEFT_DT_BOOL:
      *(uint8_t *)d = value != 0;
      break;
    default:
      weft_tensor_unref(t);
      return NULL;
  }
  return t;
}

static double attr_number(const weft_node_t *node, const char *name, bool *found) {
  const weft__attr_value_t *v = weft__attrs_get(node->attrs, name);
  *found = v != NULL;
  if (!v) return 0;
  switch (v->kind) {
    case WEFT_ATTR_INT:
      return (double)v->u.i;
    case WEFT_ATTR_FLOAT:
      return v->u.f;
    case WEFT_ATTR_BOOL:
      return v->u.b ? 1 : 0;
    default:
      *found = false;
      return 0;
  }
}

static weft_status_t *eval(builder_t *b, const gexpr_t *e, const char *node_name,
                           weft_output_t *out);

static weft_status_t *eval_ref(builder_t *b, const gexpr_t *e, weft_output_t *out) {
  weft_node_t *node = b->node;
  int start = 0, end = 0;
  if (weft__node_input_arg_range(node, e->name, &start, &end) && end > start) {
    const weft__edge_t *edge = &node->inputs[start];
    *out = weft_out(edge->src, edge->src_index);
    return NULL;
  }
  if (weft__node_output_arg_range(node, e->name, &start, &end) && end > start) {
    *out = weft_out(node, start);
    return NULL;
  }
  if (e->name[0] == 'd' && weft__node_output_arg_range(node, e->name + 1, &start, &end) &&
      end > start) {
    if (b->dys && b->dys[start].node) {
      *out = b->dys[start];
      return NULL;
    }
    /* No gradient flows into that output: zeros of its shape. */
    weft_status_t *st = NULL;
    *out = weft_unary(b->graph, "ZerosLike", e->name, weft_out(node, start), &st);
    return st;
  }
  weft_output_t *v = g_hash_table_lookup(b->values, e->name);
  if (!v) return weft_status_new(WEFT_INTERNAL, "'%s' has no value", e->name);
  if (e->index >= weft_node_num_outputs(v->node)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "'%s' has %d output(s); '%s:%d' does not exist",
                           e->name, weft_node_num_outputs(v->node), e->name, e->index);
  }
  *out = weft_out(v->node, v->index + e->index);
  return NULL;
}

static weft_status_t *eval_call(builder_t *b, const gexpr_t *e, const char *node_name,
                                weft_output_t *out) {
  guint n = e->args->len;
  weft_output_t *args = g_new0(weft_output_t, n ? n : 1);
  weft_status_t *st = NULL;
  weft_dtype_t dtype = WEFT_DT_INVALID;
  /* Tensors first: constants take the dtype of the first of them. */
  for (guint k = 0; k < n && !st; k++) {
    const gexpr_t *a = e->args->pdata[k];
    if (a->kind == GEXPR_NUM || a->kind == GEXPR_ATTR) continue;
    st = eval(b, a, NULL, &args[k]);
    if (!st && dtype == WEFT_DT_INVALID)
      dtype = weft__dtype_base(weft_node_output_dtype(args[k].node, args[k].index));
  }
  for (guint k = 0; k < n && !st; k++) {
    const gexpr_t *a = e->args->pdata[k];
    if (a->kind != GEXPR_NUM && a->kind != GEXPR_ATTR) continue;
    double value = a->number;
    if (a->kind == GEXPR_ATTR) {
      bool found = false;
      value = attr_number(b->node, a->name, &found);
      if (!found) {
        st = weft_status_new(WEFT_INVALID_ARGUMENT, "node has no numeric attr '%s'", a->name);
        break;
      }
    }
    weft_tensor_t *t = scalar_tensor(dtype, value);
    if (!t) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "cannot make a %s constant for %s(...)",
                           weft_dtype_name(dtype), e->name);
      break;
    }
    args[k] = weft_const(b->graph, a->kind == GEXPR_ATTR ? a->name : "Const", t, &st);
    weft_tensor_unref(t);
  }
  if (!st) {
    weft_op_builder_t *ob = weft_op_new(b->graph, e->name, node_name);
    const weft__op_def_t *callee = weft__op_registry_find(b->graph->ops, e->name);
    /* One input arg per argument, except that a callee whose only input is a list takes them
     * all (AddN(a, b, c)). */
    bool one_list = callee && callee->inputs->len == 1 && is_list_arg(callee->inputs->pdata[0]);
    if (one_list)
      weft_op_add_input_list(ob, args, (int)n);
    else
      for (guint k = 0; k < n; k++) weft_op_add_input(ob, args[k]);
    for (guint k = 0; e->attrs && k < e->attrs->len; k++) {
      const gattr_t *a = e->attrs->pdata[k];
      const weft__attr_value_t *v =
          a->from_attr ? weft__attrs_get(b->node->attrs, a->from_attr) : a->value;
      if (v) weft__op_builder_set_attr_value(ob, a->name, v);
    }
    weft_node_t *made = NULL;
    st = weft_op_finish(ob, &made);
    if (!st) *out = weft_out(made, 0);
  }
  g_free(args);
  return st;
}

static weft_status_t *eval(builder_t *b, const gexpr_t *e, const char *node_name,
                           weft_output_t *out) {
  switch (e->kind) {
    case GEXPR_REF:
      return eval_ref(b, e, out);
    case GEXPR_CALL:
      return eval_call(b, e, node_name, out);
    default:
      return weft_status_new(WEFT_INVALID_ARGUMENT, "a constant cannot stand alone");
  }
}

weft_status_t *weft__gradient_build(weft_graph_t *graph, weft_node_t *node,
                                    const weft_output_t *dys, weft_output_t *dxs) {
  for (int k = 0; k < node->n_inputs; k++) dxs[k] = (weft_output_t){NULL, 0};
  const weft__grad_program_t *prog = weft__gradient_lookup(node->op_name);
  if (!prog) {
    return weft_status_new(WEFT_NOT_FOUND, "op %s (node '%s') has no gradient program",
                           node->op_name, node->name);
  }
  builder_t b = {graph, node, dys, g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free), 0};
  weft_status_t *st = NULL;
  for (guint k = 0; k < prog->stmts->len && !st; k++) {
    const gstmt_t *s = prog->stmts->pdata[k];
    b.line = s->line;
    weft_output_t v = {NULL, 0};
    st = eval(&b, s->expr, s->name, &v);
    if (st) {
      st = build_error(&b, st);
      break;
    }
    weft_output_t *keep = g_new(weft_output_t, 1);
    *keep = v;
    g_hash_table_insert(b.values, s->name, keep);
  }
  for (int a = 0; !st && a < (int)node->def->inputs->len; a++) {
    const weft__arg_def_t *arg = node->def->inputs->pdata[a];
    char *dname = g_strconcat("d", arg->name, NULL);
    weft_output_t *v = g_hash_table_lookup(b.values, dname);
    int start = 0, end = 0;
    if (v && weft__node_input_arg_range(node, arg->name, &start, &end) && end == start + 1)
      dxs[start] = *v;
    g_free(dname);
  }
  g_hash_table_destroy(b.values);
  return st;
}
