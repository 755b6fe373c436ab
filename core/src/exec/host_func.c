/* host_func.c: the process's table of host functions (weft_host_func_register, TensorFlow's
 * FuncRegistry of py_func) and the core's CPU kernel for PyFunc, PyFuncStateless and
 * EagerPyFunc, which calls the function registered under the node's token and checks what it
 * returns against the node's Tout, with the messages of TensorFlow's py_func kernel
 * (tensorflow/python/lib/core/py_func.cc). A function is reference-counted so that unregistering
 * it while a step runs it frees it only once that call returns. */
#include "exec_internal.h"

#include <string.h>

typedef struct host_func {
  gint refs;
  char *token;
  weft_host_func_fn fn;
  void *user_data;
  void (*destroy)(void *);
} host_func_t;

static GMutex table_lock;
static GHashTable *table; /* token -> host_func_t*, one reference held by the table */

static void host_func_unref(host_func_t *f) {
  if (!g_atomic_int_dec_and_test(&f->refs)) return;
  if (f->destroy) f->destroy(f->user_data);
  g_free(f->token);
  g_free(f);
}

weft_status_t *weft_host_func_register(const char *token, weft_host_func_fn fn, void *user_data,
                                       void (*destroy)(void *)) {
  if (!token || !*token)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "a host function needs a non-empty token");
  if (!fn)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "host function '%s': the function is NULL",
                           token);
  g_mutex_lock(&table_lock);
  if (!table) table = g_hash_table_new(g_str_hash, g_str_equal);
  weft_status_t *st = NULL;
  if (g_hash_table_contains(table, token)) {
    st = weft_status_new(WEFT_ALREADY_EXISTS, "a host function is already registered as '%s'",
                         token);
  } else {
    host_func_t *f = g_new0(host_func_t, 1);
    *f = (host_func_t){.refs = 1, .token = g_strdup(token), .fn = fn, .user_data = user_data,
                       .destroy = destroy};
    g_hash_table_insert(table, f->token, f);
  }
  g_mutex_unlock(&table_lock);
  return st;
}

bool weft_host_func_unregister(const char *token) {
  if (!token) return false;
  g_mutex_lock(&table_lock);
  host_func_t *f = table ? g_hash_table_lookup(table, token) : NULL;
  if (f) g_hash_table_remove(table, token);
  g_mutex_unlock(&table_lock);
  /* Outside the lock: destroy may take the caller's own locks (Python's GIL). */
  if (f) host_func_unref(f);
  return f != NULL;
}

static host_func_t *lookup(const char *token) {
  g_mutex_lock(&table_lock);
  host_func_t *f = table ? g_hash_table_lookup(table, token) : NULL;
  if (f) g_atomic_int_inc(&f->refs);
  g_mutex_unlock(&table_lock);
  return f;
}

static weft_status_t *run_host_func(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_node_t *node = ctx->node;
  const weft__attr_value_t *tok = weft__attrs_get(node->attrs, "token");
  const weft__attr_value_t *tout = weft__attrs_get(node->attrs, "Tout");
  if (!tok || tok->kind != WEFT_ATTR_STRING)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "%s node '%s' has no token attr", node->op_name,
                           node->name);
  const char *token = tok->u.s.data;
  size_t n_tout = tout && tout->kind == WEFT_ATTR_LIST_TYPE ? tout->u.list.n : 0;
  if ((size_t)node->n_outputs != n_tout)
    return weft_status_new(WEFT_INTERNAL, "%s node '%s' has %d outputs for %zu Tout types",
                           node->op_name, node->name, node->n_outputs, n_tout);
  host_func_t *f = lookup(token);
  if (!f)
    return weft_status_new(WEFT_INVALID_ARGUMENT, "ValueError: callback %s is not found", token);

  int n_in = node->n_inputs, n_out = node->n_outputs;
  weft_tensor_t **in = g_new0(weft_tensor_t *, n_in > 0 ? n_in : 1);
  weft_tensor_t **out = g_new0(weft_tensor_t *, n_out > 0 ? n_out : 1);
  for (int i = 0; i < n_in; i++) in[i] = ctx->inputs[i].tensor;
  weft_status_t *st = f->fn(f->user_data, in, n_in, out, n_out);
  host_func_unref(f);
  for (int i = 0; !st && i < n_out; i++) {
    if (!out[i]) {
      /* TensorFlow's count check, for a function that filled fewer slots than asked. */
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s returns %d values, but expects to see %d "
                           "values.", token, i, n_out);
    } else if (out[i]->dtype != tout->u.list.type[i]) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "%d-th value returned by %s is %s, but "
                           "expects %s", i, token, weft__dtype_tf_name(out[i]->dtype),
                           weft__dtype_tf_name(tout->u.list.type[i]));
    }
  }
  for (int i = 0; i < n_out; i++) {
    if (st) {
      weft_tensor_unref(out[i]);
    } else {
      weft_tensor_unref(ctx->outputs[i].tensor);
      ctx->outputs[i].tensor = out[i];
    }
  }
  g_free(in);
  g_free(out);
  return st;
}

void weft__host_func_kernels_register(void) {
  static const char *const ops[] = {"PyFunc", "PyFuncStateless", "EagerPyFunc"};
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = ops[k],
                             .device_type = "CPU",
                             .compute = run_host_func};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
}
