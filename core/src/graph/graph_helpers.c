/* Convenience builders over the op builder for the nodes every program makes: constants,
 * placeholders, unary/binary math, MatMul, and TensorFlow-style variables with initializers;
 * and attr values from text and into op builders (gradient programs, conformance cases). */
#include "graph_internal.h"

#include <string.h>

static weft_output_t no_output(void) {
  weft_output_t o = {NULL, 0};
  return o;
}

/* Finishes b; returns output 0 or sets *status. */
static weft_output_t finish(weft_op_builder_t *b, weft_status_t **status) {
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (status) *status = st;
  else weft_status_free(st);
  if (st) return no_output();
  return weft_out(node, 0);
}

weft_output_t weft_const(weft_graph_t *g, const char *name, weft_tensor_t *value,
                         weft_status_t **status) {
  weft_op_builder_t *b = weft_op_new(g, "Const", name ? name : "Const");
  weft_op_set_attr_tensor(b, "value", value);
  weft_op_set_attr_type(b, "dtype", weft_tensor_dtype(value));
  return finish(b, status);
}

weft_output_t weft_const_float(weft_graph_t *g, const char *name, float value,
                               weft_status_t **status) {
  weft_tensor_t *t = weft_tensor_new_scalar_float(value);
  weft_output_t o = weft_const(g, name, t, status);
  weft_tensor_unref(t);
  return o;
}

weft_output_t weft_placeholder(weft_graph_t *g, const char *name, weft_dtype_t dtype, int rank,
                               const int64_t *dims, weft_status_t **status) {
  weft_op_builder_t *b = weft_op_new(g, "Placeholder", name ? name : "Placeholder");
  weft_op_set_attr_type(b, "dtype", dtype);
  weft_op_set_attr_shape(b, "shape", rank, dims);
  return finish(b, status);
}

weft_output_t weft_binary(weft_graph_t *g, const char *op, const char *name, weft_output_t x,
                          weft_output_t y, weft_status_t **status) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input(b, x);
  weft_op_add_input(b, y);
  return finish(b, status);
}

weft_output_t weft_unary(weft_graph_t *g, const char *op, const char *name, weft_output_t x,
                         weft_status_t **status) {
  weft_op_builder_t *b = weft_op_new(g, op, name);
  weft_op_add_input(b, x);
  return finish(b, status);
}

weft_output_t weft_matmul(weft_graph_t *g, const char *name, weft_output_t a, weft_output_t b_in,
                          bool transpose_a, bool transpose_b, weft_status_t **status) {
  weft_op_builder_t *b = weft_op_new(g, "MatMul", name);
  weft_op_add_input(b, a);
  weft_op_add_input(b, b_in);
  weft_op_set_attr_bool(b, "transpose_a", transpose_a);
  weft_op_set_attr_bool(b, "transpose_b", transpose_b);
  return finish(b, status);
}

/* The part of a node's full name below the current name scope, so that "scope/v" gets children
 * "scope/v/Assign" when built inside the same scope. */
static const char *relative_name(weft_graph_t *g, const char *full) {
  const char *scope = g->name_scopes->len ? g->name_scopes->pdata[g->name_scopes->len - 1] : NULL;
  size_t n = scope ? strlen(scope) : 0;
  if (scope && strncmp(full, scope, n) == 0 && full[n] == '/') return full + n + 1;
  return full;
}

weft_output_t weft_variable(weft_graph_t *g, const char *name, weft_output_t initial_value,
                            weft_status_t **status) {
  if (!initial_value.node) {
    if (status) *status = weft_status_new(WEFT_INVALID_ARGUMENT,
                                          "Variable '%s' needs an initial value", name);
    return no_output();
  }
  weft_dtype_t dtype = weft_node_output_dtype(initial_value.node, initial_value.index);
  int64_t dims[WEFT_MAX_RANK];
  int rank = weft_node_output_shape(initial_value.node, initial_value.index, dims);

  weft_op_builder_t *b = weft_op_new(g, "VariableV2", name);
  weft_op_set_attr_type(b, "dtype", dtype);
  weft_op_set_attr_shape(b, "shape", rank, dims);
  weft_node_t *var = NULL;
  weft_status_t *st = weft_op_finish(b, &var);
  if (st) {
    if (status) *status = st;
    else weft_status_free(st);
    return no_output();
  }

  char *base = g_strdup(relative_name(g, var->name));
  char *assign_name = g_strdup_printf("%s/Assign", base);
  char *read_name = g_strdup_printf("%s/read", base);
  g_free(base);

  weft_graph_push_colocate(g, var);
  weft_op_builder_t *ab = weft_op_new(g, "Assign", assign_name);
  weft_op_add_input(ab, weft_out(var, 0));
  weft_op_add_input(ab, initial_value);
  /* An initial value of unknown shape (e.g. from a Placeholder) cannot be checked statically. */
  weft_op_set_attr_bool(ab, "validate_shape", rank >= 0);
  weft_node_t *assign = NULL;
  st = weft_op_finish(ab, &assign);
  weft_node_t *read = NULL;
  if (!st) {
    weft_op_builder_t *rb = weft_op_new(g, "Identity", read_name);
    weft_op_add_input(rb, weft_out(var, 0));
    st = weft_op_finish(rb, &read);
  }
  weft_graph_pop_colocate(g);
  g_free(assign_name);
  g_free(read_name);
  if (st) {
    if (status) *status = st;
    else weft_status_free(st);
    return no_output();
  }
  g_mutex_lock(&g->lock);
  g_ptr_array_add(g->initializers, assign);
  g_ptr_array_add(g->trainable, var);
  g_mutex_unlock(&g->lock);
  if (status) *status = NULL;
  return weft_out(read, 0);
}

weft_node_t *weft_global_variables_initializer(weft_graph_t *g, const char *name,
                                               weft_status_t **status) {
  weft_op_builder_t *b = weft_op_new(g, "NoOp", name ? name : "init");
  g_mutex_lock(&g->lock);
  for (guint k = 0; k < g->initializers->len; k++)
    weft_op_add_control_input(b, g->initializers->pdata[k]);
  g_mutex_unlock(&g->lock);
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (status) *status = st;
  else weft_status_free(st);
  return st ? NULL : node;
}

/* Parses "name=value" into the attribute's value for `def`'s attr of that name. Used by gradient
 * programs and conformance cases (plugin layer). */
weft_status_t *weft__attr_parse_value(const weft__op_def_t *def, const char *name, const char *text,
                                      weft__attr_value_t **out) {
  *out = NULL;
  const weft__attr_def_t *ad = weft__op_def_find_attr(def, name);
  if (!ad) return weft_status_new(WEFT_INVALID_ARGUMENT, "op %s has no attr '%s'", def->name, name);
  /* The op-definition parser already knows every attr syntax: have it parse the value as the
   * default of a one-attr op of the same type. */
  char *spec = g_strdup_printf("v: %s = %s", ad->type, text);
  const char *attrs[] = {spec, NULL};
  const char *none[] = {NULL};
  weft_op_def_t probe = {sizeof(probe), "AttrProbe", none, none, attrs, 0, NULL, NULL};
  weft__op_def_t *parsed = NULL;
  weft_status_t *st = weft__op_def_parse(&probe, "attr value", &parsed);
  g_free(spec);
  if (st) {
    weft_status_free(st);
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "'%s' is not a valid %s value for attr '%s' of %s", text, ad->type, name,
                           def->name);
  }
  const weft__attr_def_t *pd = parsed->attrs->pdata[0];
  weft__attr_value_t *v = weft__attr_value_copy(pd->default_value);
  weft__op_def_free(parsed);
  if (v->kind == WEFT_ATTR_TYPE && ad->allowed_types) {
    bool ok = false;
    for (size_t k = 0; k < ad->n_allowed_types; k++) ok |= ad->allowed_types[k] == v->u.type;
    if (!ok) {
      weft__attr_value_free(v);
      return weft_status_new(WEFT_INVALID_ARGUMENT, "%s is not an allowed type for attr '%s' of %s",
                             text, name, def->name);
    }
  }
  if (v->kind == WEFT_ATTR_INT && ad->has_minimum && v->u.i < ad->minimum) {
    weft__attr_value_free(v);
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s is below the minimum %" G_GINT64_FORMAT " of attr '%s' of %s", text,
                           ad->minimum, name, def->name);
  }
  *out = v;
  return NULL;
}

void weft__op_builder_set_attr_value(weft_op_builder_t *ob, const char *name,
                                     const weft__attr_value_t *v) {
  switch (v->kind) {
    case WEFT_ATTR_INT:
      weft_op_set_attr_int(ob, name, v->u.i);
      break;
    case WEFT_ATTR_FLOAT:
      weft_op_set_attr_float(ob, name, v->u.f);
      break;
    case WEFT_ATTR_BOOL:
      weft_op_set_attr_bool(ob, name, v->u.b);
      break;
    case WEFT_ATTR_TYPE:
      weft_op_set_attr_type(ob, name, v->u.type);
      break;
    case WEFT_ATTR_STRING:
      weft_op_set_attr_string(ob, name, v->u.s.data);
      break;
    case WEFT_ATTR_SHAPE:
      weft_op_set_attr_shape(ob, name, v->u.shape.rank, v->u.shape.dims);
      break;
    case WEFT_ATTR_TENSOR:
      weft_op_set_attr_tensor(ob, name, v->u.tensor);
      break;
    case WEFT_ATTR_LIST_INT:
      weft_op_set_attr_int_list(ob, name, v->u.list.i, (int)v->u.list.n);
      break;
    case WEFT_ATTR_LIST_FLOAT:
      weft_op_set_attr_float_list(ob, name, v->u.list.f, (int)v->u.list.n);
      break;
    case WEFT_ATTR_LIST_TYPE:
      weft_op_set_attr_type_list(ob, name, v->u.list.type, (int)v->u.list.n);
      break;
    case WEFT_ATTR_LIST_STRING: {
      const char **s = g_new0(const char *, v->u.list.n + 1);
      for (size_t k = 0; k < v->u.list.n; k++) s[k] = v->u.list.s[k].data;
      weft_op_set_attr_string_list(ob, name, s, (int)v->u.list.n);
      g_free(s);
      break;
    }
    case WEFT_ATTR_LIST_EMPTY:
      weft_op_set_attr_int_list(ob, name, NULL, 0);
      break;
    default:
      break; /* other kinds never come out of the parser */
  }
}
