/* test_functions.c: TensorFlow's function library at GraphDef import (core/src/graph/
 * function_inline.c): PartitionedCall/StatefulPartitionedCall and ops named after functions run
 * their inlined bodies (named <call>/<node>, on the call's device), attr placeholders bind from
 * the call, nested calls inline, control_ret nodes run, If/StatelessIf and While/StatelessWhile
 * lower to v1 control flow and compute what TensorFlow does, and a missing function, a signature
 * mismatch, an unbound placeholder, a recursive call and a non-bool While cond each fail with
 * their exact code and message. */
#include <glib.h>
#include <stdarg.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/graphdef_internal.h"
#include "weft/weft.h"

#define F32 TENSORFLOW__DATA_TYPE__DT_FLOAT
#define I32 TENSORFLOW__DATA_TYPE__DT_INT32
#define BOOL TENSORFLOW__DATA_TYPE__DT_BOOL

/* ---------------------------------------------------------------------------------------------
 * Building GraphDefs with a library (everything g_malloc'd, freed by free_unpacked) */

typedef struct {
  GPtrArray *nodes; /* Tensorflow__NodeDef* of the graph */
  GPtrArray *funcs; /* Tensorflow__FunctionDef* */
} lib_graph_t;

/* A NodeDef; `inputs` is comma-separated ("a,b:0,^c") or NULL. */
static Tensorflow__NodeDef *node(GPtrArray *into, const char *name, const char *op,
                                 const char *inputs) {
  Tensorflow__NodeDef *n = g_new(Tensorflow__NodeDef, 1);
  tensorflow__node_def__init(n);
  n->name = g_strdup(name);
  n->op = g_strdup(op);
  if (inputs != NULL) {
    n->input = g_strsplit(inputs, ",", -1);
    n->n_input = g_strv_length(n->input);
  }
  g_ptr_array_add(into, n);
  return n;
}

static Tensorflow__AttrValue *value(Tensorflow__AttrValue__ValueCase vc) {
  Tensorflow__AttrValue *v = g_new(Tensorflow__AttrValue, 1);
  tensorflow__attr_value__init(v);
  v->value_case = vc;
  return v;
}

static void put(Tensorflow__AttrEntry ***entries, size_t *n, const char *key,
                Tensorflow__AttrValue *v) {
  Tensorflow__AttrEntry *e = g_new(Tensorflow__AttrEntry, 1);
  tensorflow__attr_entry__init(e);
  e->key = g_strdup(key);
  e->value = v;
  *entries = g_renew(Tensorflow__AttrEntry *, *entries, *n + 1);
  (*entries)[(*n)++] = e;
}

static void set(Tensorflow__NodeDef *n, const char *key, Tensorflow__AttrValue *v) {
  put(&n->attr, &n->n_attr, key, v);
}

static Tensorflow__AttrValue *type_value(int dtype) {
  Tensorflow__AttrValue *v = value(TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
  v->type = dtype;
  return v;
}

static Tensorflow__AttrValue *int_value(int64_t i) {
  Tensorflow__AttrValue *v = value(TENSORFLOW__ATTR_VALUE__VALUE_I);
  v->i = i;
  return v;
}

/* list(type) of n dtypes given after n. */
static Tensorflow__AttrValue *types_value(int n, ...) {
  Tensorflow__AttrValue *v = value(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  v->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(v->list);
  v->list->n_type = (size_t)n;
  v->list->type = g_new(Tensorflow__DataType, n > 0 ? n : 1);
  va_list ap;
  va_start(ap, n);
  for (int k = 0; k < n; k++) v->list->type[k] = va_arg(ap, int);
  va_end(ap);
  return v;
}

static Tensorflow__AttrValue *placeholder_value(const char *name) {
  Tensorflow__AttrValue *v = value(TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER);
  v->placeholder = g_strdup(name);
  return v;
}

/* A function attr; `t` binds the callee's attr "T" when not 0. */
static Tensorflow__AttrValue *func_value(const char *name, int t) {
  Tensorflow__AttrValue *v = value(TENSORFLOW__ATTR_VALUE__VALUE_FUNC);
  v->func = g_new(Tensorflow__NameAttrList, 1);
  tensorflow__name_attr_list__init(v->func);
  v->func->name = g_strdup(name);
  if (t) put(&v->func->attr, &v->func->n_attr, "T", type_value(t));
  return v;
}

/* A PartitionedCall or StatefulPartitionedCall of function attr f. */
static Tensorflow__NodeDef *call(GPtrArray *into, const char *name, const char *op,
                                 const char *inputs, Tensorflow__AttrValue *f,
                                 Tensorflow__AttrValue *tin, Tensorflow__AttrValue *tout) {
  Tensorflow__NodeDef *n = node(into, name, op, inputs);
  set(n, "f", f);
  set(n, "Tin", tin);
  set(n, "Tout", tout);
  return n;
}

static Tensorflow__NodeDef *const_scalar(GPtrArray *into, const char *name, int dtype, double x,
                                         const char *inputs) {
  Tensorflow__NodeDef *n = node(into, name, "Const", inputs);
  set(n, "dtype", type_value(dtype));
  Tensorflow__AttrValue *v = value(TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
  v->tensor = g_new(Tensorflow__TensorProto, 1);
  tensorflow__tensor_proto__init(v->tensor);
  v->tensor->dtype = dtype;
  v->tensor->tensor_shape = g_new(Tensorflow__TensorShapeProto, 1);
  tensorflow__tensor_shape_proto__init(v->tensor->tensor_shape);
  if (dtype == F32) {
    v->tensor->n_float_val = 1;
    v->tensor->float_val = g_new(float, 1);
    v->tensor->float_val[0] = (float)x;
  } else {
    v->tensor->n_int_val = 1;
    v->tensor->int_val = g_new(int32_t, 1);
    v->tensor->int_val[0] = (int32_t)x;
  }
  set(n, "value", v);
  return n;
}

static Tensorflow__NodeDef *placeholder(GPtrArray *into, const char *name, int dtype) {
  Tensorflow__NodeDef *n = node(into, name, "Placeholder", NULL);
  set(n, "dtype", type_value(dtype));
  return n;
}

/* An op with attr T: a concrete dtype, or the placeholder `ph` when it is not NULL. */
static Tensorflow__NodeDef *op_t(GPtrArray *into, const char *name, const char *op,
                                 const char *inputs, int dtype, const char *ph) {
  Tensorflow__NodeDef *n = node(into, name, op, inputs);
  set(n, "T", ph ? placeholder_value(ph) : type_value(dtype));
  return n;
}

static Tensorflow__OpDef__ArgDef *arg(const char *spec) {
  /* "x:float", "x:int32", "x:bool" or "x:T" (a type attr). */
  Tensorflow__OpDef__ArgDef *a = g_new(Tensorflow__OpDef__ArgDef, 1);
  tensorflow__op_def__arg_def__init(a);
  const char *colon = strchr(spec, ':');
  a->name = g_strndup(spec, (gsize)(colon - spec));
  const char *t = colon + 1;
  if (strcmp(t, "float") == 0) a->type = F32;
  else if (strcmp(t, "int32") == 0) a->type = I32;
  else if (strcmp(t, "bool") == 0) a->type = BOOL;
  else if (strcmp(t, "resource") == 0) a->type = TENSORFLOW__DATA_TYPE__DT_RESOURCE;
  else a->type_attr = g_strdup(t);
  return a;
}

/* A function: `ins`/`outs` comma-separated arg specs, `rets` "out=node:arg:0,..." ; the body's
 * nodes are added to the returned function's node list by the caller through fn_nodes. */
static Tensorflow__FunctionDef *function(lib_graph_t *g, const char *name, const char *ins,
                                         const char *outs, const char *rets) {
  Tensorflow__FunctionDef *f = g_new(Tensorflow__FunctionDef, 1);
  tensorflow__function_def__init(f);
  f->signature = g_new(Tensorflow__OpDef, 1);
  tensorflow__op_def__init(f->signature);
  f->signature->name = g_strdup(name);
  char **in = g_strsplit(ins, ",", -1), **out = g_strsplit(outs, ",", -1);
  char **ret = g_strsplit(rets, ",", -1);
  f->signature->n_input_arg = *ins ? g_strv_length(in) : 0;
  f->signature->input_arg = g_new0(Tensorflow__OpDef__ArgDef *, f->signature->n_input_arg + 1);
  for (size_t k = 0; k < f->signature->n_input_arg; k++) f->signature->input_arg[k] = arg(in[k]);
  f->signature->n_output_arg = *outs ? g_strv_length(out) : 0;
  f->signature->output_arg = g_new0(Tensorflow__OpDef__ArgDef *, f->signature->n_output_arg + 1);
  for (size_t k = 0; k < f->signature->n_output_arg; k++)
    f->signature->output_arg[k] = arg(out[k]);
  f->n_ret = *rets ? g_strv_length(ret) : 0;
  f->ret = g_new0(Tensorflow__StringEntry *, f->n_ret + 1);
  for (size_t k = 0; k < f->n_ret; k++) {
    f->ret[k] = g_new(Tensorflow__StringEntry, 1);
    tensorflow__string_entry__init(f->ret[k]);
    char *eq = strchr(ret[k], '=');
    f->ret[k]->key = g_strndup(ret[k], (gsize)(eq - ret[k]));
    f->ret[k]->value = g_strdup(eq + 1);
  }
  g_strfreev(in);
  g_strfreev(out);
  g_strfreev(ret);
  g_ptr_array_add(g->funcs, f);
  return f;
}

/* Body nodes go to a scratch array, then into f. */
static void fn_take(Tensorflow__FunctionDef *f, GPtrArray *body) {
  f->n_node_def = body->len;
  f->node_def = (Tensorflow__NodeDef **)g_ptr_array_free(body, FALSE);
}

static void add_control_ret(Tensorflow__FunctionDef *f, const char *key, const char *node_name) {
  f->control_ret = g_renew(Tensorflow__StringEntry *, f->control_ret, f->n_control_ret + 1);
  Tensorflow__StringEntry *e = g_new(Tensorflow__StringEntry, 1);
  tensorflow__string_entry__init(e);
  e->key = g_strdup(key);
  e->value = g_strdup(node_name);
  f->control_ret[f->n_control_ret++] = e;
}

static lib_graph_t lib_new(void) { return (lib_graph_t){g_ptr_array_new(), g_ptr_array_new()}; }

/* Imports g into a new graph (*out), consuming g. Returns the import status. */
static weft_status_t *import(lib_graph_t *g, weft_graph_t **out) {
  Tensorflow__GraphDef *gd = g_new(Tensorflow__GraphDef, 1);
  tensorflow__graph_def__init(gd);
  gd->n_node = g->nodes->len;
  gd->node = (Tensorflow__NodeDef **)g_ptr_array_free(g->nodes, FALSE);
  gd->library = g_new(Tensorflow__FunctionDefLibrary, 1);
  tensorflow__function_def_library__init(gd->library);
  gd->library->n_function = g->funcs->len;
  gd->library->function = (Tensorflow__FunctionDef **)g_ptr_array_free(g->funcs, FALSE);
  size_t len = tensorflow__graph_def__get_packed_size(gd);
  uint8_t *buf = g_malloc(len + 1);
  tensorflow__graph_def__pack(gd, buf);
  tensorflow__graph_def__free_unpacked(gd, NULL);
  *out = weft_graph_new();
  weft_status_t *st = weft_graph_import_graphdef(*out, buf, len, NULL);
  g_free(buf);
  return st;
}

static void assert_ok(weft_status_t *st) {
  if (st != NULL) g_error("%s: %s", weft_code_name(weft_status_code(st)), weft_status_message(st));
}

static void assert_status(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
}

/* Imports g and fetches one scalar (float or int32, as a double), feeding `feed` = x when not
 * NULL (a scalar of the Placeholder's dtype `dt`). */
static double run_scalar(weft_graph_t *graph, const char *fetch, const char *feed, int dt,
                         double x) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(graph, NULL, &st);
  assert_ok(st);
  weft_tensor_t *in = NULL;
  if (feed) {
    in = weft_tensor_new(dt == BOOL ? WEFT_DT_BOOL : dt == I32 ? WEFT_DT_INT32 : WEFT_DT_FLOAT, 0,
                         NULL);
    if (dt == BOOL) *(bool *)weft_tensor_data(in) = x != 0;
    else if (dt == I32) *(int32_t *)weft_tensor_data(in) = (int32_t)x;
    else *(float *)weft_tensor_data(in) = (float)x;
  }
  weft_tensor_t *out = NULL;
  assert_ok(weft_session_run(s, &feed, &in, feed ? 1 : 0, &fetch, &out, 1, NULL, 0));
  weft_tensor_unref(in);
  double got = weft_tensor_dtype(out) == WEFT_DT_INT32 ? *(int32_t *)weft_tensor_data(out)
                                                       : *(float *)weft_tensor_data(out);
  weft_tensor_unref(out);
  weft_session_free(s);
  return got;
}

/* ---------------------------------------------------------------------------------------------
 * Calls */

/* AddSquare(x, y) = (x + y)^2, through named output args. */
static void add_square(lib_graph_t *g) {
  Tensorflow__FunctionDef *f = function(g, "AddSquare", "x:float,y:float", "z:float", "z=m:z:0");
  GPtrArray *b = g_ptr_array_new();
  op_t(b, "s", "AddV2", "x,y", F32, NULL);
  op_t(b, "m", "Mul", "s:z:0,s:z:0", F32, NULL);
  fn_take(f, b);
}

static void test_partitioned_call(void) {
  lib_graph_t g = lib_new();
  add_square(&g);
  const_scalar(g.nodes, "a", F32, 2, NULL);
  const_scalar(g.nodes, "b", F32, 3, NULL);
  Tensorflow__NodeDef *c = call(g.nodes, "call", "StatefulPartitionedCall", "a,b",
                                func_value("AddSquare", 0), types_value(2, F32, F32),
                                types_value(1, F32));
  c->device = g_strdup("/device:CPU:0");
  /* An op named after the function calls it too. */
  node(g.nodes, "direct", "AddSquare", "call:0,a");
  weft_graph_t *graph = NULL;
  assert_ok(import(&g, &graph));
  g_assert_cmpfloat(run_scalar(graph, "call:0", NULL, 0, 0), ==, 25);
  g_assert_cmpfloat(run_scalar(graph, "direct:0", NULL, 0, 0), ==, 729); /* (25 + 2)^2 */
  /* The body's nodes are named after the call and take its device. */
  weft_node_t *s = weft_graph_node(graph, "call/s");
  g_assert_nonnull(s);
  g_assert_cmpstr(weft_node_op(s), ==, "AddV2");
  g_assert_cmpstr(weft_node_requested_device(s), ==, "/device:CPU:0");
  g_assert_nonnull(weft_graph_node(graph, "direct/m"));
  weft_graph_free(graph);
}

/* Square(x: T) with T bound by the call; Outer calls it through a placeholder-bound f attr. */
static void test_placeholders_and_nesting(void) {
  lib_graph_t g = lib_new();
  Tensorflow__FunctionDef *sq = function(&g, "Square", "x:T", "y:T", "y=m:z:0");
  GPtrArray *b = g_ptr_array_new();
  op_t(b, "m", "Mul", "x,x", 0, "T");
  fn_take(sq, b);
  Tensorflow__FunctionDef *outer = function(&g, "Outer", "x:T", "y:T", "y=inner:output:0");
  b = g_ptr_array_new();
  Tensorflow__AttrValue *f = func_value("Square", 0);
  put(&f->func->attr, &f->func->n_attr, "T", placeholder_value("T"));
  /* Tin/Tout as the instance the graph makes: int32. */
  call(b, "inner", "PartitionedCall", "x", f, types_value(1, I32), types_value(1, I32));
  fn_take(outer, b);
  const_scalar(g.nodes, "k", I32, 3, NULL);
  const_scalar(g.nodes, "h", F32, 1.5, NULL);
  Tensorflow__NodeDef *c = node(g.nodes, "sq_f", "Square", "h");
  set(c, "T", type_value(F32));
  call(g.nodes, "outer", "PartitionedCall", "k", func_value("Outer", I32), types_value(1, I32),
       types_value(1, I32));
  weft_graph_t *graph = NULL;
  assert_ok(import(&g, &graph));
  g_assert_cmpfloat(run_scalar(graph, "sq_f:0", NULL, 0, 0), ==, 2.25);
  g_assert_cmpfloat(run_scalar(graph, "outer:0", NULL, 0, 0), ==, 9);
  g_assert_nonnull(weft_graph_node(graph, "outer/inner/m"));
  weft_graph_free(graph);
}

/* A function whose only effect is a stateful node named in control_ret: running the call runs
 * it. */
static void test_control_ret(void) {
  lib_graph_t g = lib_new();
  Tensorflow__FunctionDef *f = function(&g, "Bump", "v:resource", "", "");
  GPtrArray *b = g_ptr_array_new();
  const_scalar(b, "one", F32, 1, NULL);
  Tensorflow__NodeDef *add = node(b, "add", "AssignAddVariableOp", "v,one:output:0");
  set(add, "dtype", type_value(F32));
  fn_take(f, b);
  add_control_ret(f, "add", "add");
  Tensorflow__NodeDef *v = node(g.nodes, "v", "VarHandleOp", NULL);
  set(v, "dtype", type_value(F32));
  Tensorflow__AttrValue *scalar = value(TENSORFLOW__ATTR_VALUE__VALUE_SHAPE);
  scalar->shape = g_new(Tensorflow__TensorShapeProto, 1);
  tensorflow__tensor_shape_proto__init(scalar->shape);
  set(v, "shape", scalar);
  const_scalar(g.nodes, "zero", F32, 10, NULL);
  Tensorflow__NodeDef *init = node(g.nodes, "init", "AssignVariableOp", "v,zero");
  set(init, "dtype", type_value(F32));
  call(g.nodes, "bump", "StatefulPartitionedCall", "v,^init", func_value("Bump", 0),
       types_value(1, TENSORFLOW__DATA_TYPE__DT_RESOURCE), types_value(0));
  Tensorflow__NodeDef *r = node(g.nodes, "read", "ReadVariableOp", "v,^bump");
  set(r, "dtype", type_value(F32));
  weft_graph_t *graph = NULL;
  assert_ok(import(&g, &graph));
  g_assert_cmpstr(weft_node_op(weft_graph_node(graph, "bump")), ==, "NoOp");
  g_assert_cmpfloat(run_scalar(graph, "read:0", NULL, 0, 0), ==, 11);
  weft_graph_free(graph);
}

/* ---------------------------------------------------------------------------------------------
 * Functional control flow */

/* f(x: float) -> y: float = OP(x, k), k a Const in the body (named `kname`), OP's node "m". */
static void const_op_function(lib_graph_t *g, const char *name, const char *op,
                              const char *kname, double k) {
  Tensorflow__FunctionDef *f = function(g, name, "x:float", "y:float", "y=m:z:0");
  GPtrArray *b = g_ptr_array_new();
  const_scalar(b, kname, F32, k, NULL);
  char *inputs = g_strdup_printf("x,%s:output:0", kname);
  op_t(b, "m", op, inputs, F32, NULL);
  g_free(inputs);
  fn_take(f, b);
}

/* An If-family node over one float input. */
static Tensorflow__NodeDef *if_node(GPtrArray *into, const char *name, const char *op,
                                    const char *inputs, const char *then_fn, const char *else_fn) {
  Tensorflow__NodeDef *n = node(into, name, op, inputs);
  set(n, "then_branch", func_value(then_fn, 0));
  set(n, "else_branch", func_value(else_fn, 0));
  set(n, "Tin", types_value(1, F32));
  set(n, "Tout", types_value(1, F32));
  return n;
}

static Tensorflow__NodeDef *while_node(GPtrArray *into, const char *name, const char *op,
                                       const char *inputs, Tensorflow__AttrValue *t) {
  Tensorflow__NodeDef *n = node(into, name, op, inputs);
  set(n, "T", t);
  set(n, "cond", func_value("cond_fn", 0));
  set(n, "body", func_value("body_fn", 0));
  return n;
}

/* If(p, x): then x * 2, else x - 1, each with a Const in its body (which must only run in its
 * branch: deadness reaches it through the call's control input). */
static void test_if(void) {
  for (int stateless = 0; stateless < 2; stateless++) {
    lib_graph_t g = lib_new();
    const_op_function(&g, "then_fn", "Mul", "two", 2);
    const_op_function(&g, "else_fn", "Sub", "one", 1);
    placeholder(g.nodes, "p", BOOL);
    const_scalar(g.nodes, "x", F32, 5, NULL);
    Tensorflow__NodeDef *n = if_node(g.nodes, "cond", stateless ? "StatelessIf" : "If", "p,x",
                                     "then_fn", "else_fn");
    set(n, "Tcond", type_value(BOOL));
    op_t(g.nodes, "after", "Neg", "cond:0", F32, NULL);
    weft_graph_t *graph = NULL;
    assert_ok(import(&g, &graph));
    g_assert_cmpfloat(run_scalar(graph, "after:0", "p", BOOL, 1), ==, -10);
    g_assert_cmpfloat(run_scalar(graph, "after:0", "p", BOOL, 0), ==, -4);
    g_assert_cmpstr(weft_node_op(weft_graph_node(graph, "cond/then/m")), ==, "Mul");
    weft_graph_free(graph);
  }
}

/* If(p, x) whose cond is an int32 or a float: as TensorFlow's If kernel (ToBool), non-zero is
 * true (-0.5 included), zero false. */
static void test_if_number_cond(void) {
  static const int dts[] = {I32, F32};
  for (int k = 0; k < 2; k++) {
    lib_graph_t g = lib_new();
    const_op_function(&g, "then_fn", "Mul", "two", 2);
    const_op_function(&g, "else_fn", "Sub", "one", 1);
    placeholder(g.nodes, "p", dts[k]);
    const_scalar(g.nodes, "x", F32, 5, NULL);
    Tensorflow__NodeDef *n = if_node(g.nodes, "cond", "If", "p,x", "then_fn", "else_fn");
    set(n, "Tcond", type_value(dts[k]));
    op_t(g.nodes, "after", "Neg", "cond:0", F32, NULL);
    weft_graph_t *graph = NULL;
    assert_ok(import(&g, &graph));
    g_assert_cmpfloat(run_scalar(graph, "after:0", "p", dts[k], dts[k] == I32 ? 3 : -0.5), ==,
                      -10);
    g_assert_cmpfloat(run_scalar(graph, "after:0", "p", dts[k], 0), ==, -4);
    g_assert_cmpstr(weft_node_op(weft_graph_node(graph, "cond/to_bool")), ==, "ToBool");
    weft_graph_free(graph);
  }
}

/* While(i, acc, n) { i < n } { i + 1, Times2(acc), n }: n fed, so the loop runs n times; the
 * body's Consts run once per iteration inside the frame. */
static weft_status_t *while_graph(int cond_out, const char *op, weft_graph_t **graph) {
  lib_graph_t g = lib_new();
  Tensorflow__FunctionDef *c = function(&g, "cond_fn", "i:int32,acc:float,n:int32",
                                        cond_out == BOOL ? "r:bool" : "r:int32", "r=lt:z:0");
  GPtrArray *b = g_ptr_array_new();
  if (cond_out == BOOL)
    op_t(b, "lt", "Less", "i,n", I32, NULL);
  else
    op_t(b, "lt", "Sub", "n,i", I32, NULL);
  fn_take(c, b);
  Tensorflow__FunctionDef *body = function(&g, "body_fn", "i:int32,acc:float,n:int32",
                                           "i2:int32,acc2:float,n2:int32",
                                           "i2=inc:z:0,acc2=dbl:output:0,n2=n");
  b = g_ptr_array_new();
  const_scalar(b, "one", I32, 1, NULL);
  op_t(b, "inc", "AddV2", "i,one:output:0", I32, NULL);
  /* acc * 2 through a nested call whose body holds the Const: inlined into the loop, it must
   * run in the frame, each iteration. */
  call(b, "dbl", "PartitionedCall", "acc", func_value("Times2", 0), types_value(1, F32),
       types_value(1, F32));
  fn_take(body, b);
  const_op_function(&g, "Times2", "Mul", "two", 2);
  const_scalar(g.nodes, "i0", I32, 0, NULL);
  const_scalar(g.nodes, "acc0", F32, 1, NULL);
  placeholder(g.nodes, "n", I32);
  Tensorflow__NodeDef *w = while_node(g.nodes, "loop", op, "i0,acc0,n",
                                      types_value(3, I32, F32, I32));
  set(w, "parallel_iterations", int_value(3));
  return import(&g, graph);
}

static void test_while(void) {
  const char *ops[] = {"While", "StatelessWhile"};
  for (int k = 0; k < 2; k++) {
    weft_graph_t *graph = NULL;
    assert_ok(while_graph(BOOL, ops[k], &graph));
    g_assert_cmpfloat(run_scalar(graph, "loop:1", "n", I32, 5), ==, 32);
    g_assert_cmpfloat(run_scalar(graph, "loop:0", "n", I32, 5), ==, 5);
    g_assert_cmpfloat(run_scalar(graph, "loop:1", "n", I32, 0), ==, 1);
    /* The frame is named after the node and keeps its parallel_iterations. */
    weft_node_t *enter = weft_graph_node(graph, "loop/enter_0");
    g_assert_cmpstr(weft_node_op(enter), ==, "Enter");
    const weft__attr_value_t *par = weft__attrs_get(enter->attrs, "parallel_iterations");
    g_assert_nonnull(par);
    g_assert_cmpint(par->u.i, ==, 3);
    g_assert_nonnull(weft_graph_node(graph, "loop/body/dbl/two"));
    weft_graph_free(graph);
  }
  weft_graph_t *graph = NULL;
  assert_status(while_graph(I32, "While", &graph), WEFT_INVALID_ARGUMENT,
                "While node 'loop': its cond function 'cond_fn' must return one scalar bool, but "
                "returns 1 output of type DT_INT32");
  weft_graph_free(graph);
}

/* While(i, acc, n) { i < n } { i + 1, StatelessIf(i % 2 == 0, acc) { acc * 2 } { acc + 1 }, n }:
 * a lowered If in a lowered loop, its branches' deadness per iteration. From acc = 1 and n = 5:
 * i = 0: 2, i = 1: 3, i = 2: 6, i = 3: 7, i = 4: 14. */
static void test_if_in_while(void) {
  lib_graph_t g = lib_new();
  const_op_function(&g, "dbl", "Mul", "two", 2);
  const_op_function(&g, "inc", "AddV2", "one", 1);
  Tensorflow__FunctionDef *f = function(&g, "cond_fn", "i:int32,acc:float,n:int32", "r:bool",
                                        "r=lt:z:0");
  GPtrArray *b = g_ptr_array_new();
  op_t(b, "lt", "Less", "i,n", I32, NULL);
  fn_take(f, b);
  f = function(&g, "body_fn", "i:int32,acc:float,n:int32", "i2:int32,acc2:float,n2:int32",
               "i2=next:z:0,acc2=branch:output:0,n2=n");
  b = g_ptr_array_new();
  const_scalar(b, "one", I32, 1, NULL);
  const_scalar(b, "two", I32, 2, NULL);
  const_scalar(b, "zero", I32, 0, NULL);
  op_t(b, "next", "AddV2", "i,one:output:0", I32, NULL);
  op_t(b, "rem", "FloorMod", "i,two:output:0", I32, NULL);
  op_t(b, "even", "Equal", "rem:z:0,zero:output:0", I32, NULL);
  if_node(b, "branch", "StatelessIf", "even:z:0,acc", "dbl", "inc");
  fn_take(f, b);
  const_scalar(g.nodes, "i0", I32, 0, NULL);
  const_scalar(g.nodes, "acc0", F32, 1, NULL);
  placeholder(g.nodes, "n", I32);
  while_node(g.nodes, "loop", "StatelessWhile", "i0,acc0,n", types_value(3, I32, F32, I32));
  weft_graph_t *graph = NULL;
  assert_ok(import(&g, &graph));
  g_assert_cmpfloat(run_scalar(graph, "loop:1", "n", I32, 5), ==, 14);
  g_assert_cmpfloat(run_scalar(graph, "loop:1", "n", I32, 2), ==, 3);
  g_assert_nonnull(weft_graph_node(graph, "loop/body/branch/then/two"));
  weft_graph_free(graph);
}

/* A While whose cond returns a vector of bools: the loop's predicate must be a scalar, and the
 * error (TensorFlow's Switch message) names the lowered loop's node. */
static void test_while_vector_cond(void) {
  lib_graph_t g = lib_new();
  Tensorflow__FunctionDef *f = function(&g, "cond_fn", "x:float", "r:bool", "r=lt:z:0");
  GPtrArray *b = g_ptr_array_new();
  const_scalar(b, "ten", F32, 10, NULL);
  op_t(b, "lt", "Less", "x,ten:output:0", F32, NULL);
  fn_take(f, b);
  f = function(&g, "body_fn", "x:float", "y:float", "y=x");
  fn_take(f, g_ptr_array_new());
  placeholder(g.nodes, "x", F32);
  while_node(g.nodes, "loop", "While", "x", types_value(1, F32));
  weft_graph_t *graph = NULL;
  assert_ok(import(&g, &graph));
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(graph, NULL, &st);
  assert_ok(st);
  weft_tensor_t *x = weft_tensor_new(WEFT_DT_FLOAT, 1, (const int64_t[]){2});
  const char *feed = "x", *fetch = "loop:0";
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, &feed, &x, 1, &fetch, &out, 1, NULL, 0);
  g_test_message("%s", st ? weft_status_message(st) : "ok");
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_true(g_str_has_prefix(weft_status_message(st), "node 'loop/switch_0' (Switch) on "));
  g_assert_true(g_str_has_suffix(weft_status_message(st),
                                 ": The second input must be a scalar, but it has shape [2]"));
  weft_status_free(st);
  g_assert_null(out);
  weft_tensor_unref(x);
  weft_session_free(s);
  weft_graph_free(graph);
}

/* ---------------------------------------------------------------------------------------------
 * Errors */

/* A graph calling `callee` through node "c" (StatefulPartitionedCall with Tin `tin`, one input
 * "a" float), with the library of test_partitioned_call plus Rec1 <-> Rec2 and Unbound. */
static weft_status_t *call_graph(const char *callee, int n_inputs, int tin, weft_graph_t **out) {
  lib_graph_t g = lib_new();
  add_square(&g);
  Tensorflow__FunctionDef *r1 = function(&g, "Rec1", "x:float", "y:float", "y=c:y:0");
  GPtrArray *b = g_ptr_array_new();
  node(b, "c", "Rec2", "x");
  fn_take(r1, b);
  Tensorflow__FunctionDef *r2 = function(&g, "Rec2", "x:float", "y:float", "y=c:y:0");
  b = g_ptr_array_new();
  node(b, "c", "Rec1", "x");
  fn_take(r2, b);
  Tensorflow__FunctionDef *u = function(&g, "Unbound", "x:float", "y:float", "y=m:z:0");
  b = g_ptr_array_new();
  op_t(b, "m", "Mul", "x,x", 0, "T");
  fn_take(u, b);
  const_scalar(g.nodes, "a", F32, 2, NULL);
  call(g.nodes, "c", "StatefulPartitionedCall", n_inputs == 2 ? "a,a" : "a",
       func_value(callee, 0), n_inputs == 2 ? types_value(2, tin, tin) : types_value(1, tin),
       types_value(1, F32));
  return import(&g, out);
}

static void test_errors(void) {
  weft_graph_t *graph = NULL;
  assert_status(call_graph("Nope", 1, F32, &graph), WEFT_NOT_FOUND,
                "Node 'c' (StatefulPartitionedCall) calls function 'Nope', which is not in the "
                "graph's function library");
  g_assert_cmpint(weft_graph_num_nodes(graph), ==, 0);
  weft_graph_free(graph);
  assert_status(call_graph("AddSquare", 1, F32, &graph), WEFT_INVALID_ARGUMENT,
                "Node 'c' (StatefulPartitionedCall) calls function 'AddSquare' with 1 input, but "
                "the function takes 2");
  weft_graph_free(graph);
  assert_status(call_graph("AddSquare", 2, I32, &graph), WEFT_INVALID_ARGUMENT,
                "Node 'c' (StatefulPartitionedCall) calls function 'AddSquare' with input 0 of "
                "type DT_INT32, but the function's argument is DT_FLOAT");
  weft_graph_free(graph);
  assert_status(call_graph("Unbound", 1, F32, &graph), WEFT_INVALID_ARGUMENT,
                "Function 'Unbound', inlined at node 'c': node 'm' (Mul): attr 'T' is the "
                "placeholder 'T', which the call does not bind");
  weft_graph_free(graph);
  assert_status(call_graph("Rec1", 1, F32, &graph), WEFT_INVALID_ARGUMENT,
                "Function 'Rec1', inlined at node 'c': Function 'Rec1' -> 'Rec2', inlined at node "
                "'c/c': Node 'c/c/c' (Rec1) calls function 'Rec1' recursively (call chain 'Rec1' "
                "-> 'Rec2' -> 'Rec1'); recursion is not supported");
  weft_graph_free(graph);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/functions/partitioned_call", test_partitioned_call);
  g_test_add_func("/functions/placeholders_and_nesting", test_placeholders_and_nesting);
  g_test_add_func("/functions/control_ret", test_control_ret);
  g_test_add_func("/functions/if", test_if);
  g_test_add_func("/functions/if_number_cond", test_if_number_cond);
  g_test_add_func("/functions/while", test_while);
  g_test_add_func("/functions/if_in_while", test_if_in_while);
  g_test_add_func("/functions/while_vector_cond", test_while_vector_cond);
  g_test_add_func("/functions/errors", test_errors);
  return g_test_run();
}
