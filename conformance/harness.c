/* harness.c: runs one conformance case through the public runtime path: a graph built with the
 * client API whose op under test is pinned to the device (its inputs fed as Placeholders or
 * given as Consts on the CPU), a local session without soft placement, the outputs fetched and
 * compared with the reference. Also checks that the kernel left its inputs alone and wrote
 * nothing outside its buffers (guard bytes around every allocation of a host-accessible device),
 * and tells "no kernel for this op/dtype here" (unsupported) apart from a failure. */
#include <math.h>
#include <string.h>

#include "conformance.h"
#include "plugin/plugin_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Cases */

cf_case_t *cf_case_new(const char *op, const char *name, weft_dtype_t dtype) {
  cf_case_t *c = g_new0(cf_case_t, 1);
  c->op = g_strdup(op);
  c->name = g_strdup(name);
  c->dtype = dtype;
  c->tol = cf_tol_default(dtype);
  c->expect_code = WEFT_OK;
  return c;
}

void cf_case_free(cf_case_t *c) {
  if (c == NULL) return;
  for (int i = 0; i < c->n_inputs; i++) {
    cf_array_free(c->inputs[i]);
    cf_array_free(c->expected_var[i]);
  }
  for (int i = 0; i < c->n_outputs; i++) cf_array_free(c->expected[i]);
  for (int i = 0; i < c->n_attrs; i++) {
    g_free(c->attrs[i].name);
    g_free(c->attrs[i].s);
    g_free(c->attrs[i].ints);
    g_free(c->attrs[i].floats);
    cf_array_free(c->attrs[i].tensor);
  }
  g_free(c->expect_message);
  g_free(c->op);
  g_free(c->name);
  g_free(c);
}

int cf_case_input(cf_case_t *c, cf_array_t *a) {
  g_assert(c->n_inputs < CF_MAX_INPUTS);
  c->inputs[c->n_inputs] = a;
  return c->n_inputs++;
}

int cf_case_const_input(cf_case_t *c, cf_array_t *a) {
  int i = cf_case_input(c, a);
  c->is_const[i] = true;
  return i;
}

int cf_case_variable_input(cf_case_t *c, cf_array_t *a, cf_array_t *want) {
  int i = cf_case_input(c, a);
  c->is_variable[i] = true;
  c->expected_var[i] = want;
  return i;
}

void cf_case_args(cf_case_t *c, int n_args, const int *arg_len) {
  c->n_args = n_args;
  for (int i = 0; i < n_args; i++) c->arg_len[i] = arg_len[i];
}

static cf_attr_t *new_attr(cf_case_t *c, const char *name, cf_attr_kind_t kind);

void cf_case_attr_strings(cf_case_t *c, const char *name, const char *const *v, int n) {
  GString *all = g_string_new(NULL);
  for (int k = 0; k < n; k++) g_string_append_printf(all, "%s\n", v[k]);
  cf_attr_t *a = new_attr(c, name, CF_ATTR_STRINGS);
  a->s = g_string_free(all, FALSE);
  a->n = n;
}

static cf_attr_t *new_attr(cf_case_t *c, const char *name, cf_attr_kind_t kind) {
  for (int i = 0; i < c->n_attrs; i++)
    if (strcmp(c->attrs[i].name, name) == 0) {
      g_free(c->attrs[i].s);
      g_free(c->attrs[i].ints);
      g_free(c->attrs[i].floats);
      cf_array_free(c->attrs[i].tensor);
      char *keep = c->attrs[i].name;
      memset(&c->attrs[i], 0, sizeof c->attrs[i]);
      c->attrs[i].name = keep;
      c->attrs[i].kind = kind;
      return &c->attrs[i];
    }
  g_assert(c->n_attrs < CF_MAX_ATTRS);
  cf_attr_t *a = &c->attrs[c->n_attrs++];
  memset(a, 0, sizeof *a);
  a->name = g_strdup(name);
  a->kind = kind;
  return a;
}

void cf_case_attr_int(cf_case_t *c, const char *name, int64_t v) {
  new_attr(c, name, CF_ATTR_INT)->i = v;
}
void cf_case_attr_float(cf_case_t *c, const char *name, double v) {
  new_attr(c, name, CF_ATTR_FLOAT)->f = v;
}
void cf_case_attr_bool(cf_case_t *c, const char *name, bool v) {
  new_attr(c, name, CF_ATTR_BOOL)->i = v;
}
void cf_case_attr_type(cf_case_t *c, const char *name, weft_dtype_t v) {
  new_attr(c, name, CF_ATTR_TYPE)->i = v;
}
void cf_case_attr_string(cf_case_t *c, const char *name, const char *v) {
  new_attr(c, name, CF_ATTR_STRING)->s = g_strdup(v);
}
void cf_case_attr_ints(cf_case_t *c, const char *name, const int64_t *v, int n) {
  cf_attr_t *a = new_attr(c, name, CF_ATTR_INTS);
  a->n = n;
  a->ints = g_memdup2(v, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}
void cf_case_attr_floats(cf_case_t *c, const char *name, const float *v, int n) {
  cf_attr_t *a = new_attr(c, name, CF_ATTR_FLOATS);
  a->n = n;
  a->floats = g_memdup2(v, sizeof(float) * (size_t)(n > 0 ? n : 1));
}
void cf_case_attr_shape(cf_case_t *c, const char *name, int rank, const int64_t *dims) {
  cf_attr_t *a = new_attr(c, name, CF_ATTR_SHAPE);
  a->n = rank;
  a->ints = g_memdup2(dims, sizeof(int64_t) * (size_t)(rank > 0 ? rank : 1));
}

void cf_case_attr_tensor(cf_case_t *c, const char *name, cf_array_t *value) {
  new_attr(c, name, CF_ATTR_TENSOR)->tensor = value;
}

void cf_case_attr_types(cf_case_t *c, const char *name, const weft_dtype_t *v, int n) {
  cf_attr_t *a = new_attr(c, name, CF_ATTR_TYPES);
  a->n = n;
  a->ints = g_new0(int64_t, n > 0 ? n : 1);
  for (int k = 0; k < n; k++) a->ints[k] = v[k];
}

void cf_case_attr_shapes(cf_case_t *c, const char *name, const int *ranks,
                         const int64_t *const *dims, int n) {
  cf_attr_t *a = new_attr(c, name, CF_ATTR_SHAPES);
  GArray *flat = g_array_new(FALSE, FALSE, sizeof(int64_t));
  for (int k = 0; k < n; k++) {
    int64_t r = ranks[k];
    g_array_append_val(flat, r);
    if (ranks[k] > 0) g_array_append_vals(flat, dims[k], (guint)ranks[k]);
  }
  a->n = n;
  a->ints = g_new0(int64_t, flat->len + 1);
  memcpy(a->ints, flat->data, sizeof(int64_t) * flat->len);
  g_array_free(flat, TRUE);
}

/* An attr of kind CF_ATTR_SHAPES on the builder: its runs unpacked into ranks and dims. */
static void set_shapes_attr(weft_op_builder_t *b, const cf_attr_t *a) {
  int *ranks = g_new0(int, a->n > 0 ? a->n : 1);
  const int64_t **dims = g_new0(const int64_t *, a->n > 0 ? a->n : 1);
  const int64_t *at = a->ints;
  for (int k = 0; k < a->n; k++) {
    ranks[k] = (int)*at++;
    dims[k] = at;
    at += ranks[k] > 0 ? ranks[k] : 0;
  }
  weft_op_set_attr_shape_list(b, a->name, ranks, dims, a->n);
  g_free(dims);
  g_free(ranks);
}

void cf_case_expect(cf_case_t *c, cf_array_t *want) {
  g_assert(c->n_outputs < CF_MAX_OUTPUTS);
  c->expected[c->n_outputs++] = want;
}

void cf_case_expect_error(cf_case_t *c, weft_code_t code, const char *substring) {
  c->expect_code = code;
  g_free(c->expect_message);
  c->expect_message = g_strdup(substring);
}

const cf_attr_t *cf_case_find_attr(const cf_case_t *c, const char *name) {
  for (int i = 0; i < c->n_attrs; i++)
    if (strcmp(c->attrs[i].name, name) == 0) return &c->attrs[i];
  return NULL;
}

int64_t cf_case_int(const cf_case_t *c, const char *name, int64_t fallback) {
  const cf_attr_t *a = cf_case_find_attr(c, name);
  return a ? a->i : fallback;
}

double cf_case_float(const cf_case_t *c, const char *name, double fallback) {
  const cf_attr_t *a = cf_case_find_attr(c, name);
  return a ? a->f : fallback;
}

const char *cf_case_string(const cf_case_t *c, const char *name, const char *fallback) {
  const cf_attr_t *a = cf_case_find_attr(c, name);
  return a && a->s ? a->s : fallback;
}

/* ---------------------------------------------------------------------------------------------
 * Guard bytes: the core surrounds every host buffer with guard bytes when WEFT_GUARD_BYTES=1
 * (main sets it before the first allocation) and counts the ones found damaged when freed. The
 * outputs of kernels on host-accessible devices (the CPU) are host buffers; other devices' memory
 * may be opaque handles, so it is not guarded. */

bool cf_guard_install(cf_device_t *device) {
  const char *env = g_getenv("WEFT_GUARD_BYTES");
  device->guarded = device->host_accessible && env != NULL && strcmp(env, "1") == 0;
  return device->guarded;
}

uint64_t cf_guard_violations(size_t *last_nbytes) { return weft__guard_violations(last_nbytes); }

/* ---------------------------------------------------------------------------------------------
 * Running a case */

static void set_attr(weft_op_builder_t *b, const cf_attr_t *a) {
  switch (a->kind) {
    case CF_ATTR_INT: weft_op_set_attr_int(b, a->name, a->i); break;
    case CF_ATTR_FLOAT: weft_op_set_attr_float(b, a->name, (float)a->f); break;
    case CF_ATTR_BOOL: weft_op_set_attr_bool(b, a->name, a->i != 0); break;
    case CF_ATTR_TYPE: weft_op_set_attr_type(b, a->name, (weft_dtype_t)a->i); break;
    case CF_ATTR_STRING: weft_op_set_attr_string(b, a->name, a->s); break;
    case CF_ATTR_INTS: weft_op_set_attr_int_list(b, a->name, a->ints, a->n); break;
    case CF_ATTR_FLOATS: weft_op_set_attr_float_list(b, a->name, a->floats, a->n); break;
    case CF_ATTR_SHAPE: weft_op_set_attr_shape(b, a->name, a->n, a->ints); break;
    case CF_ATTR_TYPES: {
      weft_dtype_t *types = g_new0(weft_dtype_t, a->n > 0 ? a->n : 1);
      for (int k = 0; k < a->n; k++) types[k] = (weft_dtype_t)a->ints[k];
      weft_op_set_attr_type_list(b, a->name, types, a->n);
      g_free(types);
      break;
    }
    case CF_ATTR_SHAPES: set_shapes_attr(b, a); break;
    case CF_ATTR_STRINGS: {
      char **v = g_strsplit(a->s, "\n", a->n + 1);
      weft_op_set_attr_string_list(b, a->name, (const char *const *)v, a->n);
      g_strfreev(v);
      break;
    }
    case CF_ATTR_TENSOR: {
      weft_tensor_t *t = cf_array_to_tensor(a->tensor, NULL);
      if (t) weft_op_set_attr_tensor(b, a->name, t);
      weft_tensor_unref(t);
      break;
    }
  }
}

static bool case_selected(const cf_run_ctx_t *ctx, const char *name) {
  if (ctx->case_filter == NULL || ctx->case_filter->len == 0) return true;
  for (guint i = 0; i < ctx->case_filter->len; i++)
    if (g_pattern_match_simple(ctx->case_filter->pdata[i], name)) return true;
  return false;
}

static bool error_matches(const cf_case_t *c, const weft_status_t *st) {
  if (c->expect_code == WEFT_OK || weft_status_code(st) != c->expect_code) return false;
  return c->expect_message == NULL || strstr(weft_status_message(st), c->expect_message) != NULL;
}

typedef struct run_state {
  weft_graph_t *graph;
  weft_session_t *session;
  weft_tensor_t *feeds[CF_MAX_INPUTS];
  char *feed_names[CF_MAX_INPUTS];
  void *feed_copy[CF_MAX_INPUTS];
  int n_feeds;
  int n_vars;
  weft_tensor_t *outputs[CF_MAX_OUTPUTS];
} run_state_t;

static void run_state_clear(run_state_t *rs) {
  for (int i = 0; i < CF_MAX_OUTPUTS; i++) weft_tensor_unref(rs->outputs[i]);
  if (rs->session) weft_session_free(rs->session);
  for (int i = 0; i < rs->n_feeds; i++) {
    weft_tensor_unref(rs->feeds[i]);
    g_free(rs->feed_names[i]);
    g_free(rs->feed_copy[i]);
  }
  if (rs->graph) weft_graph_free(rs->graph);
  memset(rs, 0, sizeof *rs);
}

/* Copies numeric feed bytes so that a kernel writing into its input shows. */
static void *snapshot(weft_tensor_t *t) {
  if (weft_tensor_dtype(t) == WEFT_DT_STRING) return NULL;
  return g_memdup2(weft_tensor_data(t), weft_tensor_nbytes(t) ? weft_tensor_nbytes(t) : 1);
}

/* Builds the graph of case c; *node is the op under test. On failure returns the status. */
static weft_status_t *build(cf_run_ctx_t *ctx, cf_case_t *c, run_state_t *rs, weft_node_t **node) {
  weft_status_t *st = NULL;
  rs->graph = weft_graph_new();
  weft_output_t ins[CF_MAX_INPUTS];
  const char *input_spec = ctx->cpu_spec ? ctx->cpu_spec : ctx->device->spec;
  weft_graph_push_device(rs->graph, input_spec);
  for (int i = 0; i < c->n_inputs; i++) {
    char name[32];
    g_snprintf(name, sizeof name, "input_%d", i);
    cf_array_t *a = c->inputs[i];
    weft_tensor_t *t = cf_array_to_tensor(a, &st);
    if (st) break;
    if (c->is_variable[i]) {
      char init_name[48];
      g_snprintf(init_name, sizeof init_name, "input_%d_init", i);
      weft_output_t init = weft_const(rs->graph, init_name, t, &st);
      weft_tensor_unref(t);
      if (st) break;
      weft_graph_push_device(rs->graph, ctx->device->spec);
      weft_variable(rs->graph, name, init, &st);
      weft_graph_pop_device(rs->graph);
      ins[i] = weft_out(weft_graph_node(rs->graph, name), 0);
      rs->n_vars++;
    } else if (c->is_const[i]) {
      ins[i] = weft_const(rs->graph, name, t, &st);
      weft_tensor_unref(t);
    } else {
      ins[i] = weft_placeholder(rs->graph, name, a->dtype, c->unknown_shape[i] ? -1 : a->rank,
                                a->dims, &st);
      rs->feeds[rs->n_feeds] = t;
      rs->feed_names[rs->n_feeds] = g_strdup(name);
      rs->feed_copy[rs->n_feeds] = snapshot(t);
      rs->n_feeds++;
    }
    if (st) break;
  }
  weft_graph_pop_device(rs->graph);
  if (st) return weft_status_prefix(st, "building the inputs");
  weft_graph_push_device(rs->graph, ctx->device->spec);
  weft_op_builder_t *b = weft_op_new(rs->graph, c->op, "op_under_test");
  int n_args = c->n_args > 0 ? c->n_args : c->n_inputs;
  int next = 0;
  for (int a = 0; a < n_args; a++) {
    int len = c->n_args > 0 ? c->arg_len[a] : 0;
    if (len == 0) {
      weft_op_add_input(b, ins[next++]);
    } else {
      weft_op_add_input_list(b, &ins[next], len);
      next += len;
    }
  }
  for (int i = 0; i < c->n_attrs; i++) set_attr(b, &c->attrs[i]);
  st = weft_op_finish(b, node);
  weft_graph_pop_device(rs->graph);
  return st;
}

static char *type_attrs_str(const weft_node_t *node) {
  GString *s = g_string_new(NULL);
  GPtrArray *names = weft__attrs_sorted_names(node->attrs);
  for (guint i = 0; i < names->len; i++) {
    const weft__attr_value_t *v = weft__attrs_get(node->attrs, names->pdata[i]);
    if (v->kind == WEFT_ATTR_TYPE)
      g_string_append_printf(s, "%s%s=%s", s->len ? ", " : "", (char *)names->pdata[i],
                             weft_dtype_name(v->u.type));
  }
  g_ptr_array_free(names, TRUE);
  if (s->len == 0) g_string_append(s, "its attributes");
  return g_string_free(s, FALSE);
}

bool cf_kernel_available(const cf_run_ctx_t *ctx, const char *op, const char *type_attr,
                         weft_dtype_t dtype) {
  weft_attrs_t *attrs = weft__attrs_new();
  /* Attributes left at their defaults select kernels too (ArgMax's output_type, ...). */
  const weft__op_def_t *def = weft__op_registry_lookup(op);
  for (guint i = 0; def && i < def->attrs->len; i++) {
    const weft__attr_def_t *a = def->attrs->pdata[i];
    if (a->default_value) weft__attrs_set(attrs, a->name, weft__attr_value_copy(a->default_value));
  }
  if (type_attr != NULL) {
    weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
    v->u.type = dtype;
    weft__attrs_set(attrs, type_attr, v);
  }
  /* Other type attributes without a default (Cast's DstT, Gather's Tindices): the same dtype
   * when they allow it, else their first allowed type. */
  for (guint i = 0; def && i < def->attrs->len; i++) {
    const weft__attr_def_t *a = def->attrs->pdata[i];
    if (strcmp(a->type, "type") != 0 || weft__attrs_get(attrs, a->name)) continue;
    bool allows = a->allowed_types == NULL;
    for (size_t k = 0; !allows && k < a->n_allowed_types; k++) allows = a->allowed_types[k] == dtype;
    weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_TYPE);
    v->u.type = allows ? dtype : a->allowed_types[0];
    weft__attrs_set(attrs, a->name, v);
  }
  bool ok = weft__kernel_exists(op, ctx->device->type, attrs);
  weft__attrs_free(attrs);
  return ok;
}

bool cf_supported(cf_run_ctx_t *ctx, const char *op, const char *type_attr, weft_dtype_t dtype) {
  const weft__op_def_t *def = weft__op_registry_lookup(op);
  if (def == NULL) {
    cf_report_add(ctx->report, "cases", op, ctx->device->label, ctx->device->type,
                  dtype ? weft_dtype_name(dtype) : "", "op", CF_UNSUPPORTED, NAN, NAN, NAN,
                  "the op is not registered in this build");
    return false;
  }
  if (type_attr != NULL) {
    const weft__attr_def_t *attr = weft__op_def_find_attr(def, type_attr);
    if (attr == NULL) return false;
    if (attr->allowed_types != NULL) {
      bool allowed = false;
      for (size_t i = 0; i < attr->n_allowed_types; i++) allowed |= attr->allowed_types[i] == dtype;
      if (!allowed) return false;
    }
  }
  char *key = g_strdup_printf("%s/%d", op, (int)dtype);
  if (g_hash_table_contains(ctx->unsupported_seen, key)) {
    g_free(key);
    return false;
  }
  if (cf_kernel_available(ctx, op, type_attr, dtype)) {
    g_free(key);
    return true;
  }
  char *message = g_strdup_printf("no %s kernel for %s with %s=%s", ctx->device->type, op,
                                  type_attr ? type_attr : "-",
                                  dtype ? weft_dtype_name(dtype) : "-");
  cf_report_add(ctx->report, "cases", op, ctx->device->label, ctx->device->type,
                dtype ? weft_dtype_name(dtype) : "", "any", CF_UNSUPPORTED, NAN, NAN, NAN,
                message);
  g_free(message);
  g_hash_table_add(ctx->unsupported_seen, key);
  return false;
}

void cf_case_rng(const cf_case_t *c, cf_rng_t *rng) {
  cf_rng_seed(rng, c->op, c->dtype ? weft_dtype_name(c->dtype) : "-", c->name);
}

static void file(cf_run_ctx_t *ctx, const cf_case_t *c, cf_status_t status,
                 const cf_compare_t *cmp, const char *message) {
  const char *dtype = c->dtype == WEFT_DT_INVALID ? "" : weft_dtype_name(c->dtype);
  cf_report_add(ctx->report, "cases", c->op, ctx->device->label, ctx->device->type, dtype,
                c->name, status, cmp ? cmp->max_abs_err : NAN, cmp ? cmp->max_rel_err : NAN,
                cmp ? cmp->nmse : NAN, message);
}

void cf_run_case(cf_run_ctx_t *ctx, cf_case_t *c) {
  if (!case_selected(ctx, c->name)) {
    cf_case_free(c);
    return;
  }
  char *key = c->unsupported_per_case
                  ? g_strdup_printf("%s/%d/%s", c->op, (int)c->dtype, c->name)
                  : g_strdup_printf("%s/%d", c->op, (int)c->dtype);
  if (g_hash_table_contains(ctx->unsupported_seen, key)) {
    g_free(key);
    cf_case_free(c);
    return;
  }
  ctx->n_run++;
  gint64 started = g_get_monotonic_time();
  run_state_t rs = {0};
  weft_node_t *node = NULL;
  uint64_t guards_before = cf_guard_violations(NULL);
  weft_status_t *st = build(ctx, c, &rs, &node);
  char *message = NULL;
  cf_status_t status = CF_PASSED;
  cf_compare_t cmp = {.ok = true};
  bool compared = false;

  if (st != NULL) {
    if (error_matches(c, st)) {
      status = CF_PASSED;
    } else {
      status = CF_FAILED;
      message = g_strdup_printf("building the graph: %s: %s", weft_code_name(weft_status_code(st)),
                                weft_status_message(st));
    }
    goto done;
  }
  if (!weft__kernel_exists(node->op_name, ctx->device->type, node->attrs)) {
    char *types = type_attrs_str(node);
    message = g_strdup_printf("no %s kernel for %s with %s", ctx->device->type, c->op, types);
    g_free(types);
    status = CF_UNSUPPORTED;
    g_hash_table_add(ctx->unsupported_seen, g_strdup(key));
    goto done;
  }

  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, false);
  weft_session_options_set_intra_op_threads(opts, ctx->intra_threads);
  rs.session = weft_session_new(rs.graph, opts, &st);
  weft_session_options_free(opts);
  if (st == NULL && rs.n_vars > 0) {
    weft_node_t *init = weft_global_variables_initializer(rs.graph, "init_variables", &st);
    if (st == NULL) {
      const char *target = weft_node_name(init);
      st = weft_session_run(rs.session, NULL, NULL, 0, NULL, NULL, 0, &target, 1);
    }
    if (st) st = weft_status_prefix(st, "initialising the variables");
  }
  if (st == NULL) {
    char *fetch_names[CF_MAX_OUTPUTS];
    for (int k = 0; k < c->n_outputs; k++) fetch_names[k] = g_strdup_printf("op_under_test:%d", k);
    st = weft_session_run(rs.session, (const char *const *)rs.feed_names, rs.feeds, rs.n_feeds,
                          (const char *const *)fetch_names, rs.outputs, c->n_outputs,
                          c->n_outputs == 0 ? (const char *const[]){"op_under_test"} : NULL,
                          c->n_outputs == 0 ? 1 : 0);
    for (int k = 0; k < c->n_outputs; k++) g_free(fetch_names[k]);
  }
  if (st != NULL) {
    if (error_matches(c, st)) {
      status = CF_PASSED;
    } else {
      status = CF_FAILED;
      if (c->expect_code != WEFT_OK)
        message = g_strdup_printf("expected %s%s%s%s, got %s: %s",
                                  weft_code_name(c->expect_code),
                                  c->expect_message ? " mentioning \"" : "",
                                  c->expect_message ? c->expect_message : "",
                                  c->expect_message ? "\"" : "",
                                  weft_code_name(weft_status_code(st)), weft_status_message(st));
      else
        message = g_strdup_printf("%s: %s", weft_code_name(weft_status_code(st)),
                                  weft_status_message(st));
    }
    goto done;
  }
  if (c->expect_code != WEFT_OK) {
    status = CF_FAILED;
    message = g_strdup_printf("expected the error %s%s%s, but the run succeeded",
                              weft_code_name(c->expect_code),
                              c->expect_message ? " mentioning " : "",
                              c->expect_message ? c->expect_message : "");
    goto done;
  }
  compared = true;
  if (c->check != NULL) {
    cf_array_t *got[CF_MAX_OUTPUTS] = {NULL};
    for (int k = 0; k < c->n_outputs; k++) got[k] = cf_array_from_tensor(rs.outputs[k]);
    char *why = c->check(c, got, c->n_outputs);
    for (int k = 0; k < c->n_outputs; k++) cf_array_free(got[k]);
    if (why) {
      cmp.ok = false;
      cmp.message = why;
    }
  }
  for (int i = 0; i < c->n_inputs && cmp.ok; i++) {
    if (!c->is_variable[i] || c->expected_var[i] == NULL) continue;
    char read_name[48], what[48];
    g_snprintf(read_name, sizeof read_name, "input_%d/read", i);
    g_snprintf(what, sizeof what, "variable input %d after the run", i);
    const char *fetch = read_name;
    weft_tensor_t *value = NULL;
    weft_status_t *vst = weft_session_run(rs.session, NULL, NULL, 0, &fetch, &value, 1, NULL, 0);
    if (vst) {
      cmp.ok = false;
      cmp.message = g_strdup_printf("reading %s: %s", what, weft_status_message(vst));
      weft_status_free(vst);
      break;
    }
    cf_array_t *got = cf_array_from_tensor(value);
    cf_compare_arrays(got, c->expected_var[i], c->tol, &cmp, what);
    cf_array_free(got);
    weft_tensor_unref(value);
  }
  for (int k = 0; k < c->n_outputs && cmp.ok; k++) {
    if (c->expected[k] == NULL) continue;
    cf_array_t *got = cf_array_from_tensor(rs.outputs[k]);
    char what[32];
    g_snprintf(what, sizeof what, "output %d", k);
    if (got == NULL) {
      cmp.ok = false;
      cmp.message = g_strdup_printf("%s: unreadable dtype %s", what,
                                    weft_dtype_name(weft_tensor_dtype(rs.outputs[k])));
      break;
    }
    cf_compare_arrays(got, c->expected[k], c->tol, &cmp, what);
    cf_array_free(got);
  }
  for (int i = 0; i < rs.n_feeds && cmp.ok; i++) {
    if (rs.feed_copy[i] == NULL) continue;
    if (memcmp(rs.feed_copy[i], weft_tensor_data(rs.feeds[i]), weft_tensor_nbytes(rs.feeds[i]))) {
      cmp.ok = false;
      cmp.message = g_strdup_printf("the kernel wrote into its input %s", rs.feed_names[i]);
    }
  }
  if (!cmp.ok) {
    status = CF_FAILED;
    message = cmp.message;
    cmp.message = NULL;
  }

done:
  weft_status_free(st);
  run_state_clear(&rs);
  if (status != CF_UNSUPPORTED) {
    size_t damaged = 0;
    uint64_t guards_after = cf_guard_violations(&damaged);
    if (guards_after != guards_before && status != CF_FAILED) {
      status = CF_FAILED;
      g_free(message);
      message = g_strdup_printf("out-of-bounds write: guard bytes around a %zu-byte buffer "
                                "were overwritten",
                                damaged);
    }
  }
  file(ctx, c, status, compared ? &cmp : NULL, message);
  if (ctx->verbose)
    g_printerr("  %-8s %s %s %s %s (%.1f ms)%s%s\n", cf_status_name(status), ctx->device->label,
               c->op, c->dtype ? weft_dtype_name(c->dtype) : "-", c->name,
               (double)(g_get_monotonic_time() - started) / 1000.0, message ? ": " : "",
               message ? message : "");
  g_free(message);
  g_free(cmp.message);
  g_free(key);
  cf_case_free(c);
}
