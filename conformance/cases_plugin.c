/* cases_plugin.c: runs the conformance cases plugins ship (ABI 1.1, registrar->
 * register_conformance_case; the core keeps them in core/src/plugin/cases.c). Each case runs on
 * every selected device that has a kernel for its op, once per dtype it lists, through the same
 * runner as the built-in cases: inputs generated as the case describes, the expected outputs
 * from the plugin's reference function (in double, shaped by the op's shape function, rounded
 * here), the plugin's tolerances. With check_gradient, the op's gradient program runs on the
 * device too and is compared with central finite differences of the reference. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "plugin/plugin_internal.h"

/* Inputs larger than this skip the finite-difference check (it calls the reference twice per
 * element). */
#define GRAD_MAX_ELEMENTS 4096

static cf_gen_kind_t gen_kind(weft_case_gen_t g) {
  switch (g) {
    case WEFT_CASE_GEN_NONZERO:
      return CF_GEN_NONZERO;
    case WEFT_CASE_GEN_POSITIVE:
      return CF_GEN_POSITIVE;
    case WEFT_CASE_GEN_SPECIAL:
      return CF_GEN_SPECIAL;
    case WEFT_CASE_GEN_ARANGE:
      return CF_GEN_ARANGE;
    case WEFT_CASE_GEN_BOOL:
      return CF_GEN_BOOL;
    case WEFT_CASE_GEN_UNIFORM:
    default:
      return CF_GEN_UNIFORM;
  }
}

static bool selected_name(const cf_run_ctx_t *ctx, const char *name) {
  if (ctx->case_filter == NULL || ctx->case_filter->len == 0) return true;
  for (guint i = 0; i < ctx->case_filter->len; i++)
    if (g_pattern_match_simple(ctx->case_filter->pdata[i], name)) return true;
  return false;
}

/* Copies an attribute value into the case; false for a kind cases cannot carry. */
static bool case_attr(cf_case_t *c, const char *name, const weft__attr_value_t *v) {
  switch (v->kind) {
    case WEFT_ATTR_INT:
      cf_case_attr_int(c, name, v->u.i);
      return true;
    case WEFT_ATTR_FLOAT:
      cf_case_attr_float(c, name, v->u.f);
      return true;
    case WEFT_ATTR_BOOL:
      cf_case_attr_bool(c, name, v->u.b);
      return true;
    case WEFT_ATTR_TYPE:
      cf_case_attr_type(c, name, v->u.type);
      return true;
    case WEFT_ATTR_STRING:
      cf_case_attr_string(c, name, v->u.s.data);
      return true;
    case WEFT_ATTR_SHAPE:
      cf_case_attr_shape(c, name, v->u.shape.rank, v->u.shape.dims);
      return true;
    case WEFT_ATTR_LIST_INT:
      cf_case_attr_ints(c, name, v->u.list.i, (int)v->u.list.n);
      return true;
    case WEFT_ATTR_LIST_EMPTY:
      cf_case_attr_ints(c, name, NULL, 0);
      return true;
    case WEFT_ATTR_LIST_FLOAT:
      cf_case_attr_floats(c, name, v->u.list.f, (int)v->u.list.n);
      return true;
    default:
      return false;
  }
}

/* The case's attrs as a list for the graph builder: the plugin's, plus the type attr. */
static void set_case_attrs(weft_op_builder_t *b, const weft__plugin_case_t *pc,
                           weft_dtype_t dtype) {
  GPtrArray *names = weft__attrs_sorted_names(pc->attrs);
  for (guint i = 0; i < names->len; i++)
    weft__op_builder_set_attr_value(b, names->pdata[i],
                                    weft__attrs_get(pc->attrs, names->pdata[i]));
  g_ptr_array_free(names, TRUE);
  if (dtype != WEFT_DT_INVALID) weft_op_set_attr_type(b, pc->type_attr, dtype);
}

/* What the reference works on: views of arrays. */
static weft_case_array_t view_of(const cf_array_t *a) {
  weft_case_array_t v = {sizeof v, a->dtype, a->rank, {0}, a->n, a->v};
  for (int d = 0; d < a->rank; d++) v.dims[d] = a->dims[d];
  return v;
}

/* Builds the op alone on the host to learn its outputs' dtypes and shapes (what the reference
 * fills) and its full attributes (defaults included, what the reference reads). */
typedef struct probe {
  weft_graph_t *graph;
  weft_node_t *node;
} probe_t;

static weft_status_t *probe_op(const weft__plugin_case_t *pc, weft_dtype_t dtype,
                               cf_array_t *const *inputs, probe_t *out) {
  out->graph = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t ins[CF_MAX_INPUTS];
  for (size_t i = 0; i < pc->n_inputs && !st; i++) {
    char name[32];
    g_snprintf(name, sizeof name, "input_%zu", i);
    if (pc->inputs[i].is_const) {
      weft_tensor_t *t = cf_array_to_tensor(inputs[i], &st);
      if (!st) ins[i] = weft_const(out->graph, name, t, &st);
      weft_tensor_unref(t);
    } else {
      ins[i] = weft_placeholder(out->graph, name, inputs[i]->dtype, inputs[i]->rank,
                                inputs[i]->dims, &st);
    }
  }
  if (st) return st;
  weft_op_builder_t *b = weft_op_new(out->graph, pc->op, "op_under_test");
  for (size_t i = 0; i < pc->n_inputs; i++) weft_op_add_input(b, ins[i]);
  set_case_attrs(b, pc, dtype);
  return weft_op_finish(b, &out->node);
}

static void probe_clear(probe_t *p) {
  if (p->graph) weft_graph_free(p->graph);
  p->graph = NULL;
  p->node = NULL;
}

/* Runs the reference on inputs; *outs (n_outputs arrays, the caller frees them) unrounded. */
static char *run_reference(const weft__plugin_case_t *pc, const weft_node_t *node,
                           cf_array_t *const *inputs, cf_array_t **outs) {
  int n_out = weft_node_num_outputs(node);
  weft_case_array_t in_views[CF_MAX_INPUTS], out_views[CF_MAX_OUTPUTS];
  for (size_t i = 0; i < pc->n_inputs; i++) in_views[i] = view_of(inputs[i]);
  for (int k = 0; k < n_out; k++) {
    int64_t dims[WEFT_MAX_RANK];
    int rank = weft_node_output_shape(node, k, dims);
    bool known = rank >= 0;
    for (int d = 0; d < rank; d++) known = known && dims[d] >= 0;
    if (!known) {
      for (int j = 0; j < k; j++) cf_array_free(outs[j]);
      return g_strdup_printf(
          "the shape function of %s leaves output %d's shape unknown, so the "
          "reference's output cannot be sized",
          pc->op, k);
    }
    outs[k] = cf_array_new(weft__dtype_base(weft_node_output_dtype(node, k)), rank, dims);
    out_views[k] = view_of(outs[k]);
  }
  weft_status_t *st = pc->reference(weft__host(), node->attrs, in_views, pc->n_inputs, out_views,
                                    (size_t)n_out, pc->user_data);
  if (st) {
    char *why = g_strdup_printf("the reference function failed: %s: %s",
                                weft_code_name(weft_status_code(st)), weft_status_message(st));
    weft_status_free(st);
    for (int k = 0; k < n_out; k++) cf_array_free(outs[k]);
    return why;
  }
  return NULL;
}

static cf_tol_t case_tolerance(const weft__plugin_case_t *pc, weft_dtype_t dtype) {
  cf_tol_t tol = cf_tol_default(dtype);
  if (pc->tol_scale > 1) tol = cf_tol_scale(tol, pc->tol_scale);
  if (pc->rtol > 0) tol.rtol = pc->rtol;
  if (pc->atol > 0) tol.atol = pc->atol;
  if (pc->max_nmse > 0) tol.max_nmse = pc->max_nmse;
  return tol;
}

static void file_failure(cf_run_ctx_t *ctx, const weft__plugin_case_t *pc, weft_dtype_t dtype,
                         const char *name, cf_status_t status, const char *message) {
  cf_report_add(ctx->report, "cases", pc->op, ctx->device->label, ctx->device->type,
                dtype ? weft_dtype_name(dtype) : "", name, status, NAN, NAN, NAN, message);
  if (ctx->verbose)
    g_printerr("  %-8s %s %s %s %s: %s\n", cf_status_name(status), ctx->device->label, pc->op,
               dtype ? weft_dtype_name(dtype) : "-", name, message);
}

/* ---------------------------------------------------------------------------------------------
 * The gradient check */

/* d(sum_j dy_j f_j(x)) / d x_e for every element e of input k, by central differences of the
 * reference in double. NULL and *why when the reference fails. */
static cf_array_t *numeric_gradient(const weft__plugin_case_t *pc, const weft_node_t *node,
                                    cf_array_t **inputs, int k, cf_array_t *const *dys,
                                    char **why) {
  int n_out = weft_node_num_outputs(node);
  cf_array_t *x = inputs[k];
  cf_array_t *g = cf_array_new(x->dtype, x->rank, x->dims);
  for (int64_t e = 0; e < x->n && !*why; e++) {
    double saved = x->v[e];
    double h = 1e-6 * fmax(1.0, fabs(saved));
    double sums[2] = {0, 0};
    for (int side = 0; side < 2 && !*why; side++) {
      x->v[e] = saved + (side ? -h : h);
      cf_array_t *outs[CF_MAX_OUTPUTS] = {NULL};
      *why = run_reference(pc, node, inputs, outs);
      for (int o = 0; o < n_out && !*why; o++) {
        if (!dys[o]) continue;
        for (int64_t j = 0; j < outs[o]->n; j++) sums[side] += dys[o]->v[j] * outs[o]->v[j];
      }
      for (int o = 0; o < n_out && !*why; o++) cf_array_free(outs[o]);
    }
    x->v[e] = saved;
    g->v[e] = (sums[0] - sums[1]) / (2 * h);
  }
  if (*why) {
    cf_array_free(g);
    return NULL;
  }
  return g;
}

/* The kernels the gradient's nodes need on the device, or NULL when every one exists. */
static char *missing_gradient_kernel(const cf_run_ctx_t *ctx, weft_graph_t *g, int first_id) {
  for (int id = first_id; id < weft_graph_num_nodes(g); id++) {
    weft_node_t *n = weft_graph_node_at(g, id);
    if (strstr(weft_node_requested_device(n), ctx->device->spec + 1) == NULL) continue;
    if (!weft__kernel_exists(n->op_name, ctx->device->type, n->attrs))
      return g_strdup_printf("the gradient uses %s ('%s'), which has no %s kernel for its types",
                             n->op_name, n->name, ctx->device->type);
  }
  return NULL;
}

static void check_gradient(cf_run_ctx_t *ctx, const weft__plugin_case_t *pc, weft_dtype_t dtype,
                           cf_array_t **inputs) {
  char *name = g_strdup_printf("%s.gradient", pc->name);
  if (!selected_name(ctx, name)) {
    g_free(name);
    return;
  }
  gint64 started = g_get_monotonic_time();
  cf_rng_t rng;
  cf_rng_seed(&rng, pc->op, weft_dtype_name(dtype), name);
  probe_t probe = {0};
  cf_array_t *dys[CF_MAX_OUTPUTS] = {NULL};
  weft_tensor_t *feeds[CF_MAX_INPUTS + CF_MAX_OUTPUTS] = {NULL};
  char *feed_names[CF_MAX_INPUTS + CF_MAX_OUTPUTS] = {NULL};
  int n_feeds = 0;
  weft_output_t dxs[CF_MAX_INPUTS];
  weft_session_t *session = NULL;
  cf_status_t status = CF_PASSED;
  char *message = NULL;
  cf_compare_t cmp = {.ok = true};
  bool compared = false;

  weft_status_t *st = NULL;
  weft_graph_t *g = weft_graph_new();
  weft_output_t ins[CF_MAX_INPUTS];
  weft_graph_push_device(g, ctx->cpu_spec ? ctx->cpu_spec : ctx->device->spec);
  for (size_t i = 0; i < pc->n_inputs && !st; i++) {
    char in_name[32];
    g_snprintf(in_name, sizeof in_name, "input_%zu", i);
    weft_tensor_t *t = cf_array_to_tensor(inputs[i], &st);
    if (st) break;
    if (pc->inputs[i].is_const) {
      ins[i] = weft_const(g, in_name, t, &st);
      weft_tensor_unref(t);
    } else {
      ins[i] =
          weft_placeholder(g, in_name, inputs[i]->dtype, inputs[i]->rank, inputs[i]->dims, &st);
      feeds[n_feeds] = t;
      feed_names[n_feeds++] = g_strdup(in_name);
    }
  }
  weft_graph_pop_device(g);
  weft_node_t *node = NULL;
  if (!st) {
    weft_graph_push_device(g, ctx->device->spec);
    weft_op_builder_t *b = weft_op_new(g, pc->op, "op_under_test");
    for (size_t i = 0; i < pc->n_inputs; i++) weft_op_add_input(b, ins[i]);
    set_case_attrs(b, pc, dtype);
    st = weft_op_finish(b, &node);
    weft_graph_pop_device(g);
  }
  int n_out = node ? weft_node_num_outputs(node) : 0;
  weft_output_t dy_outs[CF_MAX_OUTPUTS];
  weft_graph_push_device(g, ctx->cpu_spec ? ctx->cpu_spec : ctx->device->spec);
  for (int o = 0; o < n_out && !st; o++) {
    int64_t dims[WEFT_MAX_RANK];
    int rank = weft_node_output_shape(node, o, dims);
    weft_dtype_t odt = weft__dtype_base(weft_node_output_dtype(node, o));
    dy_outs[o] = (weft_output_t){NULL, 0};
    if (rank < 0 || !cf_dtype_is_float(odt)) continue;
    dys[o] = cf_gen_uniform(&rng, odt, rank, dims, -1, 1);
    char dy_name[32];
    g_snprintf(dy_name, sizeof dy_name, "dy_%d", o);
    dy_outs[o] = weft_placeholder(g, dy_name, odt, rank, dims, &st);
    feeds[n_feeds] = st ? NULL : cf_array_to_tensor(dys[o], &st);
    feed_names[n_feeds++] = g_strdup(dy_name);
  }
  weft_graph_pop_device(g);
  if (st) {
    status = CF_FAILED;
    message = g_strdup_printf("building the graph: %s", weft_status_message(st));
    goto done;
  }
  int first_grad_id = weft_graph_num_nodes(g);
  weft_graph_push_device(g, ctx->device->spec);
  weft_graph_push_name_scope(g, "gradients");
  st = weft__gradient_build(g, node, dy_outs, dxs);
  weft_graph_pop_name_scope(g);
  weft_graph_pop_device(g);
  if (st) {
    status = CF_FAILED;
    message = g_strdup_printf("building the gradient: %s", weft_status_message(st));
    goto done;
  }
  message = missing_gradient_kernel(ctx, g, first_grad_id);
  if (message) {
    status = CF_UNSUPPORTED;
    goto done;
  }
  const char *fetch[CF_MAX_INPUTS];
  weft_tensor_t *got[CF_MAX_INPUTS] = {NULL};
  int fetch_input[CF_MAX_INPUTS];
  int n_fetch = 0;
  for (size_t i = 0; i < pc->n_inputs; i++) {
    if (!dxs[i].node || pc->inputs[i].is_const || !cf_dtype_is_float(inputs[i]->dtype) ||
        inputs[i]->n > GRAD_MAX_ELEMENTS)
      continue;
    fetch[n_fetch] = g_strdup_printf("%s:%d", weft_node_name(dxs[i].node), dxs[i].index);
    fetch_input[n_fetch++] = (int)i;
  }
  if (n_fetch == 0) {
    g_free(name);
    weft_graph_free(g);
    for (int i = 0; i < n_feeds; i++) {
      weft_tensor_unref(feeds[i]);
      g_free(feed_names[i]);
    }
    for (int o = 0; o < CF_MAX_OUTPUTS; o++) cf_array_free(dys[o]);
    return; /* nothing differentiable here: no record */
  }
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, false);
  weft_session_options_set_intra_op_threads(opts, ctx->intra_threads);
  session = weft_session_new(g, opts, &st);
  weft_session_options_free(opts);
  if (!st)
    st = weft_session_run(session, (const char *const *)feed_names, feeds, n_feeds, fetch, got,
                          n_fetch, NULL, 0);
  if (st) {
    status = CF_FAILED;
    message = g_strdup_printf("running the gradient: %s: %s", weft_code_name(weft_status_code(st)),
                              weft_status_message(st));
  } else {
    if (probe_op(pc, dtype, inputs, &probe) != NULL) probe_clear(&probe);
    compared = true;
    cf_tol_t tol =
        dtype == WEFT_DT_DOUBLE ? (cf_tol_t){1e-6, 1e-7, 1e-10} : (cf_tol_t){2e-3, 1e-4, 1e-5};
    if (pc->tol_scale > 1) tol = cf_tol_scale(tol, pc->tol_scale);
    for (int f = 0; f < n_fetch && cmp.ok; f++) {
      int i = fetch_input[f];
      char *why = NULL;
      cf_array_t *want = probe.node ? numeric_gradient(pc, probe.node, inputs, i, dys, &why) : NULL;
      if (!want) {
        cmp.ok = false;
        cmp.message = why ? why : g_strdup("the op did not build on the host for the reference");
        break;
      }
      /* Finite differences carry their own error: allow it in proportion to the largest term. */
      double scale = 0;
      for (int64_t e = 0; e < want->n; e++) scale = fmax(scale, fabs(want->v[e]));
      cf_tol_t t = tol;
      t.atol += tol.rtol * scale * 0.1;
      cf_array_t *have = cf_array_from_tensor(got[f]);
      char what[48];
      g_snprintf(what, sizeof what, "gradient of input %d", i);
      cf_compare_arrays(have, want, t, &cmp, what);
      cf_array_free(have);
      cf_array_free(want);
    }
    if (!cmp.ok) {
      status = CF_FAILED;
      message = cmp.message;
      cmp.message = NULL;
    }
  }
  for (int f = 0; f < n_fetch; f++) {
    g_free((char *)fetch[f]);
    weft_tensor_unref(got[f]);
  }

done:
  weft_status_free(st);
  if (session) weft_session_free(session);
  probe_clear(&probe);
  weft_graph_free(g);
  for (int i = 0; i < n_feeds; i++) {
    weft_tensor_unref(feeds[i]);
    g_free(feed_names[i]);
  }
  for (int o = 0; o < CF_MAX_OUTPUTS; o++) cf_array_free(dys[o]);
  cf_report_add(ctx->report, "cases", pc->op, ctx->device->label, ctx->device->type,
                weft_dtype_name(dtype), name, status, compared ? cmp.max_abs_err : NAN,
                compared ? cmp.max_rel_err : NAN, compared ? cmp.nmse : NAN, message);
  if (ctx->verbose)
    g_printerr("  %-8s %s %s %s %s (%.1f ms)%s%s\n", cf_status_name(status), ctx->device->label,
               pc->op, weft_dtype_name(dtype), name,
               (double)(g_get_monotonic_time() - started) / 1000.0, message ? ": " : "",
               message ? message : "");
  g_free(message);
  g_free(cmp.message);
  g_free(name);
}

/* ---------------------------------------------------------------------------------------------
 * One case, one dtype */

static void run_one(cf_run_ctx_t *ctx, const weft__plugin_case_t *pc, weft_dtype_t dtype) {
  char *grad_name = g_strdup_printf("%s.gradient", pc->name);
  bool want_grad = pc->check_gradient && selected_name(ctx, grad_name);
  g_free(grad_name);
  if (!selected_name(ctx, pc->name) && !want_grad) return;
  cf_case_t *c = cf_case_new(pc->op, pc->name, dtype);
  cf_rng_t rng;
  cf_case_rng(c, &rng);
  cf_array_t *inputs[CF_MAX_INPUTS] = {NULL};
  for (size_t i = 0; i < pc->n_inputs; i++) {
    const weft_case_input_t *in = &pc->inputs[i];
    weft_dtype_t dt = in->dtype != WEFT_DT_INVALID ? in->dtype : dtype;
    cf_gen_t gen = {gen_kind(in->gen), in->lo, in->hi};
    inputs[i] = cf_gen_array(&rng, dt, in->rank, in->dims, gen);
  }
  GPtrArray *names = weft__attrs_sorted_names(pc->attrs);
  for (guint i = 0; i < names->len; i++) {
    if (!case_attr(c, names->pdata[i], weft__attrs_get(pc->attrs, names->pdata[i]))) {
      char *msg = g_strdup_printf("attr '%s' has a kind the conformance runner cannot set",
                                  (char *)names->pdata[i]);
      file_failure(ctx, pc, dtype, pc->name, CF_FAILED, msg);
      g_free(msg);
      g_ptr_array_free(names, TRUE);
      for (size_t k = 0; k < pc->n_inputs; k++) cf_array_free(inputs[k]);
      cf_case_free(c);
      return;
    }
  }
  g_ptr_array_free(names, TRUE);
  if (dtype != WEFT_DT_INVALID) cf_case_attr_type(c, pc->type_attr, dtype);
  c->tol = case_tolerance(pc, dtype);

  char *why = NULL;
  if (pc->expect_code != WEFT_OK) {
    cf_case_expect_error(c, pc->expect_code, pc->expect_message);
  } else {
    probe_t probe = {0};
    weft_status_t *st = probe_op(pc, dtype, inputs, &probe);
    if (st) {
      why = g_strdup_printf("the op does not build with the case's inputs and attrs: %s",
                            weft_status_message(st));
      weft_status_free(st);
    } else {
      cf_array_t *outs[CF_MAX_OUTPUTS] = {NULL};
      why = run_reference(pc, probe.node, inputs, outs);
      for (int k = 0; !why && k < weft_node_num_outputs(probe.node); k++) {
        cf_array_round(outs[k]);
        cf_case_expect(c, outs[k]);
      }
    }
    probe_clear(&probe);
  }
  if (why) {
    file_failure(ctx, pc, dtype, pc->name, CF_FAILED, why);
    g_free(why);
    for (size_t k = 0; k < pc->n_inputs; k++) cf_array_free(inputs[k]);
    cf_case_free(c);
    return;
  }
  for (size_t i = 0; i < pc->n_inputs; i++) {
    cf_array_t *copy = cf_array_copy(inputs[i]);
    if (pc->inputs[i].is_const)
      cf_case_const_input(c, copy);
    else
      cf_case_input(c, copy);
  }
  if (selected_name(ctx, pc->name))
    cf_run_case(ctx, c);
  else
    cf_case_free(c);

  if (want_grad && pc->expect_code == WEFT_OK &&
      (dtype == WEFT_DT_FLOAT || dtype == WEFT_DT_DOUBLE) && weft__gradient_lookup(pc->op))
    check_gradient(ctx, pc, dtype, inputs);
  for (size_t k = 0; k < pc->n_inputs; k++) cf_array_free(inputs[k]);
}

/* Has the device a kernel for the op with any of the case's dtypes? */
static bool device_covers(const cf_run_ctx_t *ctx, const weft__plugin_case_t *pc) {
  if (pc->n_dtypes == 0) return cf_kernel_available(ctx, pc->op, NULL, WEFT_DT_INVALID);
  for (size_t k = 0; k < pc->n_dtypes; k++)
    if (cf_kernel_available(ctx, pc->op, pc->type_attr, pc->dtypes[k])) return true;
  return false;
}

void cf_run_plugin_cases(cf_run_ctx_t *ctx, bool (*op_selected)(const char *op)) {
  int n = weft__plugin_case_count();
  for (int i = 0; i < n; i++) {
    const weft__plugin_case_t *pc = weft__plugin_case_at(i);
    if (!op_selected(pc->op) || !device_covers(ctx, pc)) continue;
    if (pc->n_dtypes == 0) {
      run_one(ctx, pc, WEFT_DT_INVALID);
      continue;
    }
    for (size_t k = 0; k < pc->n_dtypes; k++)
      if (cf_supported(ctx, pc->op, pc->type_attr, pc->dtypes[k])) run_one(ctx, pc, pc->dtypes[k]);
  }
}

void cf_list_plugin_cases(GPtrArray *devices, bool (*op_selected)(const char *op)) {
  /* One line per op: the dtypes each device has kernels for, then the plugin's cases. */
  int n = weft__plugin_case_count();
  GHashTable *listed = g_hash_table_new(g_str_hash, g_str_equal);
  for (int i = 0; i < n; i++) {
    const weft__plugin_case_t *pc = weft__plugin_case_at(i);
    if (!op_selected(pc->op) || g_hash_table_contains(listed, pc->op)) continue;
    g_hash_table_add(listed, pc->op);
    printf("%-36s", pc->op);
    for (guint d = 0; d < devices->len; d++) {
      cf_device_t *dev = devices->pdata[d];
      cf_run_ctx_t ctx = {.device = dev};
      GString *line = g_string_new(NULL);
      for (size_t k = 0; k < pc->n_dtypes; k++)
        if (cf_kernel_available(&ctx, pc->op, pc->type_attr, pc->dtypes[k]))
          g_string_append_printf(line, "%s%s", line->len ? "," : "",
                                 weft_dtype_name(pc->dtypes[k]));
      if (pc->n_dtypes == 0 && cf_kernel_available(&ctx, pc->op, NULL, WEFT_DT_INVALID))
        g_string_append(line, "any");
      printf("  %s: %s", dev->label, line->len ? line->str : "(no kernel)");
      g_string_free(line, TRUE);
    }
    GString *names = g_string_new(NULL);
    for (int j = i; j < n; j++) {
      const weft__plugin_case_t *other = weft__plugin_case_at(j);
      if (strcmp(other->op, pc->op) == 0)
        g_string_append_printf(names, "%s%s", names->len ? "," : "", other->name);
    }
    printf("  [cases from %s: %s]\n", pc->plugin_path, names->str);
    g_string_free(names, TRUE);
  }
  g_hash_table_destroy(listed);
}
