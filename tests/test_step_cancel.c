/* test_step_cancel.c: steps that never end on their own -- a while loop whose condition stays
 * true, as a lowered While and inside a StatefulPartitionedCall -- end at their deadline
 * (RunOptions timeout) or when their session closes under them, in a local session and on a
 * weftd worker (the master's CloseSession aborting the worker's RunGraph), with TensorFlow's
 * codes and words; afterwards the process and the server run the next step. The executor reads
 * the step's cancellation before each node, so these end although no kernel of theirs blocks. */
#include <glib.h>
#include <string.h>

#include "graph/graphdef_internal.h"
#include "process_util.h"
#include "weft/weft.h"
#include "weftd_cluster.h"

#define OK(expr)                                                                              \
  do {                                                                                        \
    weft_status_t *st_ = (expr);                                                              \
    if (st_) g_error("%s: %s: %s", #expr, weft_code_name(weft_status_code(st_)),              \
                     weft_status_message(st_));                                               \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * GraphDefs from one-line specs: "name = Op(in, in) key=kind:value ...", kinds type, types (a
 * comma list), i32, f32, int, str, func; "@" names the device. */

static int dtype_of(const char *name) {
  if (strcmp(name, "int32") == 0) return TENSORFLOW__DATA_TYPE__DT_INT32;
  if (strcmp(name, "bool") == 0) return TENSORFLOW__DATA_TYPE__DT_BOOL;
  g_assert_cmpstr(name, ==, "float");
  return TENSORFLOW__DATA_TYPE__DT_FLOAT;
}

static Tensorflow__AttrValue *attr_of(const char *kind, const char *v) {
  Tensorflow__AttrValue *a = g_new(Tensorflow__AttrValue, 1);
  tensorflow__attr_value__init(a);
  if (strcmp(kind, "type") == 0) {
    a->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
    a->type = dtype_of(v);
  } else if (strcmp(kind, "types") == 0) {
    char **names = g_strsplit(v, ",", -1);
    a->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    a->list = g_new(Tensorflow__AttrValue__ListValue, 1);
    tensorflow__attr_value__list_value__init(a->list);
    a->list->n_type = g_strv_length(names);
    a->list->type = g_new(Tensorflow__DataType, a->list->n_type);
    for (size_t k = 0; k < a->list->n_type; k++) a->list->type[k] = dtype_of(names[k]);
    g_strfreev(names);
  } else if (strcmp(kind, "int") == 0) {
    a->value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
    a->i = g_ascii_strtoll(v, NULL, 10);
  } else if (strcmp(kind, "func") == 0) {
    a->value_case = TENSORFLOW__ATTR_VALUE__VALUE_FUNC;
    a->func = g_new(Tensorflow__NameAttrList, 1);
    tensorflow__name_attr_list__init(a->func);
    a->func->name = g_strdup(v);
  } else {
    /* A scalar tensor: i32 or f32. */
    bool i32 = strcmp(kind, "i32") == 0;
    g_assert_true(i32 || strcmp(kind, "f32") == 0);
    a->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
    Tensorflow__TensorProto *t = a->tensor = g_new(Tensorflow__TensorProto, 1);
    tensorflow__tensor_proto__init(t);
    t->tensor_shape = g_new(Tensorflow__TensorShapeProto, 1);
    tensorflow__tensor_shape_proto__init(t->tensor_shape);
    t->dtype = dtype_of(i32 ? "int32" : "float");
    if (i32) {
      t->n_int_val = 1;
      t->int_val = g_new(int32_t, 1);
      t->int_val[0] = (int32_t)g_ascii_strtoll(v, NULL, 10);
    } else {
      t->n_float_val = 1;
      t->float_val = g_new(float, 1);
      t->float_val[0] = (float)g_ascii_strtod(v, NULL);
    }
  }
  return a;
}

static Tensorflow__NodeDef *node_of(const char *spec) {
  Tensorflow__NodeDef *n = g_new(Tensorflow__NodeDef, 1);
  tensorflow__node_def__init(n);
  const char *eq = strstr(spec, " = "), *open = strchr(spec, '('), *close = strchr(spec, ')');
  g_assert_true(eq && open && close);
  n->name = g_strndup(spec, (gsize)(eq - spec));
  n->op = g_strndup(eq + 3, (gsize)(open - eq - 3));
  char *ins = g_strndup(open + 1, (gsize)(close - open - 1));
  if (*ins) {
    n->input = g_strsplit(ins, ", ", -1);
    n->n_input = g_strv_length(n->input);
  }
  g_free(ins);
  char **attrs = g_strsplit(close + 1, " ", -1);
  for (char **a = attrs; *a; a++) {
    if (!**a) continue;
    if (**a == '@') {
      n->device = g_strdup(*a + 1);
      continue;
    }
    char *key_end = strchr(*a, '='), *kind_end = key_end ? strchr(key_end, ':') : NULL;
    g_assert_nonnull(kind_end);
    char *kind = g_strndup(key_end + 1, (gsize)(kind_end - key_end - 1));
    Tensorflow__AttrEntry *e = g_new(Tensorflow__AttrEntry, 1);
    tensorflow__attr_entry__init(e);
    e->key = g_strndup(*a, (gsize)(key_end - *a));
    e->value = attr_of(kind, kind_end + 1);
    g_free(kind);
    n->attr = g_renew(Tensorflow__AttrEntry *, n->attr, n->n_attr + 1);
    n->attr[n->n_attr++] = e;
  }
  g_strfreev(attrs);
  return n;
}

/* "name:type" args, comma-separated. */
static Tensorflow__OpDef__ArgDef **args_of(const char *list, size_t *n) {
  char **items = g_strsplit(list, ",", -1);
  *n = g_strv_length(items);
  Tensorflow__OpDef__ArgDef **out = g_new0(Tensorflow__OpDef__ArgDef *, *n + 1);
  for (size_t k = 0; k < *n; k++) {
    char *colon = strchr(items[k], ':');
    out[k] = g_new(Tensorflow__OpDef__ArgDef, 1);
    tensorflow__op_def__arg_def__init(out[k]);
    out[k]->name = g_strndup(items[k], (gsize)(colon - items[k]));
    out[k]->type = dtype_of(colon + 1);
  }
  g_strfreev(items);
  return out;
}

/* A FunctionDef: signature args, "ret=tensor" results, then its nodes' specs (NULL-ended). */
static Tensorflow__FunctionDef *function_of(const char *name, const char *ins, const char *outs,
                                            const char *rets, const char *const *nodes) {
  Tensorflow__FunctionDef *f = g_new(Tensorflow__FunctionDef, 1);
  tensorflow__function_def__init(f);
  f->signature = g_new(Tensorflow__OpDef, 1);
  tensorflow__op_def__init(f->signature);
  f->signature->name = g_strdup(name);
  f->signature->input_arg = args_of(ins, &f->signature->n_input_arg);
  f->signature->output_arg = args_of(outs, &f->signature->n_output_arg);
  char **r = g_strsplit(rets, ",", -1);
  f->n_ret = g_strv_length(r);
  f->ret = g_new0(Tensorflow__StringEntry *, f->n_ret + 1);
  for (size_t k = 0; k < f->n_ret; k++) {
    char *eq = strchr(r[k], '=');
    f->ret[k] = g_new(Tensorflow__StringEntry, 1);
    tensorflow__string_entry__init(f->ret[k]);
    f->ret[k]->key = g_strndup(r[k], (gsize)(eq - r[k]));
    f->ret[k]->value = g_strdup(eq + 1);
  }
  g_strfreev(r);
  while (nodes[f->n_node_def]) f->n_node_def++;
  f->node_def = g_new(Tensorflow__NodeDef *, f->n_node_def + 1);
  for (size_t k = 0; k < f->n_node_def; k++) f->node_def[k] = node_of(nodes[k]);
  return f;
}

/* The graph every test runs: `ok` = 1 + 2, and one of two steps that never end on its own.
 * `spin` is While(i = 0, n = 1) { i < n } { i + 0, n }: a lowered loop whose condition stays
 * true; `call` runs the same loop inside function `spin_fn` through a StatefulPartitionedCall.
 * `device` pins the loops (NULL: anywhere). */
static weft_graph_t *never_ending_graph(const char *device) {
  static const char *const cond[] = {"lt = Less(i, n) T=type:int32", NULL};
  static const char *const body[] = {"zero = Const() dtype=type:int32 value=i32:0",
                                     "same = AddV2(i, zero:output:0) T=type:int32", NULL};
  char *at = device ? g_strdup_printf(" @%s", device) : g_strdup("");
  char *spin_in_fn = g_strdup_printf("w = While(i0:output:0, n) T=types:int32,int32 "
                                     "cond=func:cond_fn body=func:body_fn%s", at);
  const char *const spin_fn[] = {"i0 = Const() dtype=type:int32 value=i32:0", spin_in_fn, NULL};
  Tensorflow__GraphDef gd = TENSORFLOW__GRAPH_DEF__INIT;
  Tensorflow__FunctionDefLibrary lib = TENSORFLOW__FUNCTION_DEF_LIBRARY__INIT;
  Tensorflow__FunctionDef *fns[] = {
      function_of("cond_fn", "i:int32,n:int32", "r:bool", "r=lt:z:0", cond),
      function_of("body_fn", "i:int32,n:int32", "i2:int32,n2:int32", "i2=same:z:0,n2=n", body),
      function_of("spin_fn", "n:int32", "r:int32", "r=w:output:0", spin_fn),
  };
  lib.n_function = 3;
  lib.function = fns;
  gd.library = &lib;
  char *specs[] = {
      g_strdup("a = Const() dtype=type:float value=f32:1"),
      g_strdup("b = Const() dtype=type:float value=f32:2"),
      g_strdup("ok = AddV2(a, b) T=type:float"),
      g_strdup("zero = Const() dtype=type:int32 value=i32:0"),
      g_strdup("one = Const() dtype=type:int32 value=i32:1"),
      g_strdup_printf("spin = While(zero, one) T=types:int32,int32 cond=func:cond_fn "
                      "body=func:body_fn%s", at),
      g_strdup_printf("call = StatefulPartitionedCall(one) Tin=types:int32 Tout=types:int32 "
                      "f=func:spin_fn%s", at),
  };
  Tensorflow__NodeDef *nodes[G_N_ELEMENTS(specs)];
  for (size_t k = 0; k < G_N_ELEMENTS(specs); k++) nodes[k] = node_of(specs[k]);
  gd.n_node = G_N_ELEMENTS(specs);
  gd.node = nodes;
  size_t len = tensorflow__graph_def__get_packed_size(&gd);
  uint8_t *bytes = g_malloc(len);
  tensorflow__graph_def__pack(&gd, bytes);
  weft_graph_t *g = weft_graph_new();
  OK(weft_graph_import_graphdef(g, bytes, len, NULL));
  g_free(bytes);
  for (size_t k = 0; k < G_N_ELEMENTS(specs); k++) {
    g_free(specs[k]);
    tensorflow__node_def__free_unpacked(nodes[k], NULL);
  }
  for (size_t k = 0; k < G_N_ELEMENTS(fns); k++)
    tensorflow__function_def__free_unpacked(fns[k], NULL);
  g_free(spin_in_fn);
  g_free(at);
  return g;
}

/* The loops' fetches. */
static const char *const spinners[] = {"spin:0", "call:0"};

static void expect(weft_status_t *st, weft_code_t code, const char *message) {
  g_assert_nonnull(st);
  g_test_message("%s: %s", weft_code_name(weft_status_code(st)), weft_status_message(st));
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  if (message) g_assert_cmpstr(weft_status_message(st), ==, message);
  weft_status_free(st);
}

/* Runs `ok` and checks its value: the session (or the server behind it) still works. */
static void expect_ok_runs(weft_session_t *s) {
  const char *fetch = "ok:0";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(*(const float *)weft_tensor_data(out), ==, 3.0f);
  weft_tensor_unref(out);
}

static weft_status_t *run_with_timeout(weft_session_t *s, const char *fetch, int64_t ms) {
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_timeout_ms(ro, ms);
  weft_tensor_t *out = NULL;
  weft_status_t *st = weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL,
                                                    0, NULL);
  weft_tensor_unref(out);
  weft_run_options_free(ro);
  return st;
}

/* A step run on its own thread. */
typedef struct step_thread {
  weft_session_t *session;
  const char *fetch;
  gint started;
  weft_status_t *st;
} step_thread_t;

static gpointer step_main(gpointer data) {
  step_thread_t *t = data;
  weft_tensor_t *out = NULL;
  g_atomic_int_set(&t->started, 1);
  t->st = weft_session_run(t->session, NULL, NULL, 0, &t->fetch, &out, 1, NULL, 0);
  weft_tensor_unref(out);
  return NULL;
}

/* Starts `fetch` on its own thread, lets it run `wait_ms`, closes the session and returns the
 * step's status once it has ended. */
static weft_status_t *close_under_step(weft_session_t *s, const char *fetch, int wait_ms) {
  step_thread_t t = {s, fetch, 0, NULL};
  GThread *th = g_thread_new("step", step_main, &t);
  while (!g_atomic_int_get(&t.started)) g_usleep(1000);
  g_usleep((gulong)wait_ms * 1000);
  gint64 t0 = g_get_monotonic_time();
  OK(weft_session_close(s));
  g_thread_join(th);
  g_test_message("%s ended %.3f s after the close", fetch,
                 (double)(g_get_monotonic_time() - t0) / 1e6);
  return t.st;
}

/* ---------------------------------------------------------------------------------------------
 * Local sessions */

/* RunOptions' timeout ends either loop with DEADLINE_EXCEEDED naming the node that was next;
 * the same session then runs `ok`, and the loop again. */
static void test_local_deadline(void) {
  weft_graph_t *g = never_ending_graph(NULL);
  weft_session_t *s = weft_session_new(g, NULL, NULL);
  g_assert_nonnull(s);
  for (int round = 0; round < 2; round++) {
    for (size_t k = 0; k < G_N_ELEMENTS(spinners); k++) {
      weft_status_t *st = run_with_timeout(s, spinners[k], 200);
      g_assert_nonnull(st);
      g_assert_cmpint(weft_status_code(st), ==, WEFT_DEADLINE_EXCEEDED);
      g_assert_true(g_str_has_prefix(weft_status_message(st),
                                     "The step passed its deadline before node '"));
      weft_status_free(st);
      expect_ok_runs(s);
    }
  }
  weft_session_free(s);
  weft_graph_free(g);
}

/* weft_session_close from another thread ends a running loop with TensorFlow's DirectSession
 * words (CANCELLED "Run call was cancelled"), frees what it held (the sanitizer build checks),
 * and the session refuses later steps while a new one over the same graph runs them. A close
 * that wins the race with the step's start says nothing; it is tried again, waiting longer. */
static void test_local_close(void) {
  weft_graph_t *g = never_ending_graph(NULL);
  for (size_t k = 0; k < G_N_ELEMENTS(spinners); k++) {
    weft_status_t *st = NULL;
    for (int wait_ms = 200; wait_ms <= 5000; wait_ms *= 5) {
      weft_session_t *s = weft_session_new(g, NULL, NULL);
      g_assert_nonnull(s);
      st = close_under_step(s, spinners[k], wait_ms);
      bool raced = st && weft_status_code(st) == WEFT_FAILED_PRECONDITION;
      if (!raced) {
        const char *fetch = "ok:0";
        weft_tensor_t *out = NULL;
        expect(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0),
               WEFT_FAILED_PRECONDITION, "Session has been closed");
        OK(weft_session_close(s)); /* a second close is a no-op */
      }
      weft_session_free(s);
      if (!raced) break;
      weft_status_free(st);
      st = NULL;
    }
    expect(st, WEFT_CANCELLED, "Run call was cancelled");
    weft_session_t *fresh = weft_session_new(g, NULL, NULL);
    expect_ok_runs(fresh);
    weft_session_free(fresh);
  }
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * A weftd worker */

/* The loops pinned to the worker of a 1 ps + 1 worker cluster, through the worker's master:
 * RunOptions' timeout ends them on the worker (DEADLINE_EXCEEDED, and the session runs `ok`
 * next); CloseSession while one runs ends it with TensorFlow's CANCELLED "Session has been
 * closed." (the master aborts the step on the worker, whose executor stops at its next node);
 * a new session runs on the same server; and both tasks stop cleanly (exit status 0), which they
 * could not with a RunGraph still spinning. */
static void test_remote(void) {
  weftd_cluster_t c;
  if (!weftd_cluster_start(&c, 1, 1, NULL)) return;
  weft_graph_t *g = never_ending_graph("/job:worker/task:0");
  const char *target = c.target[1];
  weft_session_t *s = weftd_remote_session(g, target);
  expect_ok_runs(s);
  for (size_t k = 0; k < G_N_ELEMENTS(spinners); k++) {
    weft_status_t *st = run_with_timeout(s, spinners[k], 500);
    g_assert_nonnull(st);
    g_test_message("%s: %s", weft_code_name(weft_status_code(st)), weft_status_message(st));
    g_assert_cmpint(weft_status_code(st), ==, WEFT_DEADLINE_EXCEEDED);
    weft_status_free(st);
    expect_ok_runs(s);
  }
  weft_session_free(s);
  for (size_t k = 0; k < G_N_ELEMENTS(spinners); k++) {
    weft_session_t *closing = weftd_remote_session(g, target);
    expect_ok_runs(closing);
    expect(close_under_step(closing, spinners[k], 500), WEFT_CANCELLED,
           "Session has been closed.");
    weft_session_free(closing);
    weft_session_t *next = weftd_remote_session(g, target);
    expect_ok_runs(next);
    weft_session_free(next);
  }
  weft_graph_free(g);
  weftd_cluster_stop(&c);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/step_cancel/local_deadline", test_local_deadline);
  g_test_add_func("/step_cancel/local_close", test_local_close);
  g_test_add_func("/step_cancel/remote", test_remote);
  return g_test_run();
}
