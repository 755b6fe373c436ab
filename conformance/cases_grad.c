/* cases_grad.c: gradient checks of the ops that have a built-in gradient function
 * (core/src/train/gradients.c). For each case the op runs on the device under test and
 * weft_gradients builds its gradient there, seeded with a random dy; the result is compared with
 * central finite differences of sum(dy * op(x)) computed by the same op in float64 on the CPU.
 * Records are named "grad_<case>" under the op, so `--case 'grad_*'` selects them. A device
 * without a kernel for one of the gradient's nodes gets an "unsupported" record. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"
#include "plugin/plugin_internal.h"

#define G_MAX_IN 3
#define COMMA ,

typedef enum gkind {
  GK_PLAIN,     /* the op on its inputs */
  GK_MATMUL,    /* opt[0], opt[1]: transpose_a, transpose_b */
  GK_REDUCE,    /* opt[0] axes (count) opt[1], opt[2]: the axes; keep_dims opt[3] */
  GK_TRANSPOSE, /* opt: a rank-3 permutation */
  GK_CONCAT,    /* two inputs, axis opt[0] */
  GK_RESHAPE,   /* opt[0], opt[1]: the new shape */
  GK_SPLIT,     /* Split along axis opt[0] into opt[1] parts; output 0 is checked */
  GK_REVERSE,   /* ReverseV2 on axis opt[0] */
  GK_POOL,      /* NHWC window opt[0] x opt[0], stride opt[1], padding SAME (opt[2]) or VALID */
  GK_CONV,      /* NHWC Conv2D/DepthwiseConv2dNative stride opt[1], padding SAME (opt[2]) */
} gkind_t;

typedef struct gspec {
  const char *op;
  const char *name;
  gkind_t kind;
  int n_in;
  int rank[G_MAX_IN];
  int64_t dims[G_MAX_IN][4];
  double lo, hi;
  bool sign;         /* random signs */
  int opt[4];
  int labels;        /* input 1 is a label distribution (1) or class ids (2), not checked */
} gspec_t;

#define U(op, lo, hi, sign) {op, "2x3", GK_PLAIN, 1, {2}, {{2, 3}}, lo, hi, sign, {0}, 0}
#define BIN(op, name, ra, da, rb, db, lo, hi, sign) \
  {op, name, GK_PLAIN, 2, {ra, rb}, {da, db}, lo, hi, sign, {0}, 0}

static const gspec_t specs[] = {
    U("Neg", 0.1, 2, true), U("Abs", 0.1, 2, true), U("Square", 0.1, 2, true),
    U("Sqrt", 0.5, 2, false), U("Rsqrt", 0.5, 2, false), U("Exp", 0.1, 1, true),
    U("Log", 0.5, 2, false), U("Relu", 0.1, 2, true), U("Sigmoid", 0.1, 2, true),
    U("Tanh", 0.1, 2, true), U("Softmax", 0.1, 2, true), U("LogSoftmax", 0.1, 2, true),
    U("L2Loss", 0.1, 2, true), U("Reciprocal", 0.5, 2, true),
    U("Sin", 0.1, 2, true), U("Cos", 0.1, 2, true), U("Tan", 0.1, 1, true),
    U("Sinh", 0.1, 2, true), U("Cosh", 0.1, 2, true), U("Atan", 0.1, 2, true),
    U("Log1p", 0.1, 2, false), U("Expm1", 0.1, 1, true), U("Erf", 0.1, 1.5, true),
    U("Softplus", 0.1, 2, true), U("Softsign", 0.1, 2, true), U("Elu", 0.1, 2, true),
    U("Relu6", 0.1, 5, true), U("LeakyRelu", 0.1, 2, true),
    BIN("AddV2", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.1, 2, true),
    BIN("Sub", "bcast_both", 2, {2 COMMA 1}, 2, {1 COMMA 3}, 0.1, 2, true),
    BIN("Mul", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.1, 2, true),
    BIN("RealDiv", "bcast_both", 2, {2 COMMA 1}, 2, {1 COMMA 3}, 0.5, 2, false),
    BIN("Pow", "same", 2, {2 COMMA 3}, 2, {2 COMMA 3}, 0.5, 2, false),
    BIN("SquaredDifference", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.1, 2, true),
    {"MatMul", "nn", GK_MATMUL, 2, {2, 2}, {{2, 3}, {3, 4}}, 0.1, 1, true, {0, 0}, 0},
    {"MatMul", "tn", GK_MATMUL, 2, {2, 2}, {{3, 2}, {3, 4}}, 0.1, 1, true, {1, 0}, 0},
    {"MatMul", "nt", GK_MATMUL, 2, {2, 2}, {{2, 3}, {4, 3}}, 0.1, 1, true, {0, 1}, 0},
    {"MatMul", "tt", GK_MATMUL, 2, {2, 2}, {{3, 2}, {4, 3}}, 0.1, 1, true, {1, 1}, 0},
    BIN("BiasAdd", "3x4", 2, {3 COMMA 4}, 1, {4}, 0.1, 1, true),
    {"SoftmaxCrossEntropyWithLogits", "2x3", GK_PLAIN, 2, {2, 2}, {{2, 3}, {2, 3}}, 0.1, 2, true,
     {0}, 1},
    {"SparseSoftmaxCrossEntropyWithLogits", "2x3", GK_PLAIN, 2, {2, 1}, {{2, 3}, {2}}, 0.1, 2,
     true, {0}, 2},
    {"Sum", "axis1", GK_REDUCE, 1, {2}, {{2, 3}}, 0.1, 2, true, {1, 1, 0, 0}, 0},
    {"Mean", "all_keep", GK_REDUCE, 1, {2}, {{2, 3}}, 0.1, 2, true, {2, 0, 1, 1}, 0},
    {"Max", "axis_neg", GK_REDUCE, 1, {2}, {{2, 3}}, 0.1, 2, true, {1, -1, 0, 0}, 0},
    {"Min", "axis0", GK_REDUCE, 1, {2}, {{2, 3}}, 0.1, 2, true, {1, 0, 0, 0}, 0},
    {"Transpose", "perm120", GK_TRANSPOSE, 1, {3}, {{2, 3, 2}}, 0.1, 1, true, {1, 2, 0}, 0},
    {"ConcatV2", "axis1", GK_CONCAT, 2, {2, 2}, {{2, 3}, {2, 2}}, 0.1, 1, true, {1}, 0},
    {"Reshape", "3x2", GK_RESHAPE, 1, {2}, {{2, 3}}, 0.1, 1, true, {3, 2}, 0},
    {"Split", "axis1_of2", GK_SPLIT, 1, {2}, {{2, 4}}, 0.1, 1, true, {1, 2}, 0},
    {"ReverseV2", "axis1", GK_REVERSE, 1, {2}, {{2, 3}}, 0.1, 1, true, {1}, 0},
    U("Asin", 0.1, 0.9, true), U("Acos", 0.1, 0.9, true), U("Atanh", 0.1, 0.9, true),
    U("Asinh", 0.1, 2, true), U("Acosh", 1.2, 3, false), U("Selu", 0.1, 2, true),
    U("Lgamma", 0.5, 3, false), U("Erfc", 0.1, 1.5, true), U("MatrixDiag", 0.1, 2, true),
    U("MatrixDiagPart", 0.1, 2, true), U("Diag", 0.1, 2, true),
    BIN("DivNoNan", "bcast_both", 2, {2 COMMA 1}, 2, {1 COMMA 3}, 0.5, 2, false),
    BIN("MatrixSetDiag", "2x3", 2, {2 COMMA 3}, 1, {2}, 0.1, 2, true),
    BIN("Atan2", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.5, 2, true),
    U("Digamma", 0.5, 3, false), U("Erfinv", 0.1, 0.9, true), U("Ndtri", 0.1, 0.9, false),
    U("BesselI0e", 0.1, 2, true), U("BesselI1e", 0.1, 2, true),
    BIN("Xlogy", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.5, 2, false),
    BIN("Xlog1py", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.5, 2, false),
    BIN("Xdivy", "bcast_both", 2, {2 COMMA 1}, 2, {1 COMMA 3}, 0.5, 2, false),
    BIN("MulNoNan", "bcast_row", 2, {2 COMMA 3}, 1, {3}, 0.1, 2, true),
    {"Prod", "axis1", GK_REDUCE, 1, {2}, {{2, 3}}, 0.5, 1.5, true, {1, 1, 0, 0}, 0},
    {"MaxPool", "k2_s2_same", GK_POOL, 1, {4}, {{1, 5, 5, 2}}, 0.1, 2, true, {2, 2, 1}, 0},
    {"AvgPool", "k3_s2_same", GK_POOL, 1, {4}, {{1, 5, 5, 2}}, 0.1, 2, true, {3, 2, 1}, 0},
    {"AvgPool", "k2_s1_valid", GK_POOL, 1, {4}, {{2, 3, 4, 1}}, 0.1, 2, true, {2, 1, 0}, 0},
    {"Conv2D", "s2_same", GK_CONV, 2, {4, 4}, {{1, 5, 4, 2}, {3, 3, 2, 3}}, 0.1, 1, true,
     {0, 2, 1}, 0},
    {"Conv2D", "s1_valid", GK_CONV, 2, {4, 4}, {{2, 4, 4, 1}, {2, 2, 1, 2}}, 0.1, 1, true,
     {0, 1, 0}, 0},
    {"DepthwiseConv2dNative", "s1_same", GK_CONV, 2, {4, 4}, {{1, 4, 4, 2}, {3, 3, 2, 2}}, 0.1,
     1, true, {0, 1, 1}, 0},
};

bool cf_case_name_selected(const cf_run_ctx_t *ctx, const char *name) {
  if (ctx->case_filter == NULL || ctx->case_filter->len == 0) return true;
  for (guint i = 0; i < ctx->case_filter->len; i++)
    if (g_pattern_match_simple(ctx->case_filter->pdata[i], name)) return true;
  return false;
}

static weft_output_t ints_const(weft_graph_t *g, const int *v, int n, bool scalar,
                                weft_status_t **st) {
  int64_t vals[4];
  for (int i = 0; i < n; i++) vals[i] = v[i];
  cf_array_t *a = cf_array_ints(WEFT_DT_INT32, n, vals);
  if (scalar) {
    cf_array_t *s = cf_array_reshape(a, 0, NULL);
    cf_array_free(a);
    a = s;
  }
  weft_tensor_t *t = cf_array_to_tensor(a, st);
  cf_array_free(a);
  if (*st) return (weft_output_t){NULL, 0};
  weft_output_t o = weft_const(g, "args", t, st);
  weft_tensor_unref(t);
  return o;
}

/* The op of spec s on inputs x, pinned to `device`. */
static weft_output_t build_op(weft_graph_t *g, const gspec_t *s, const weft_output_t *x,
                              const char *device, weft_status_t **st) {
  weft_graph_push_device(g, device);
  weft_op_builder_t *b = weft_op_new(g, s->op, "op_under_test");
  switch (s->kind) {
    case GK_PLAIN:
    case GK_MATMUL:
      for (int i = 0; i < s->n_in; i++) weft_op_add_input(b, x[i]);
      if (s->kind == GK_MATMUL) {
        weft_op_set_attr_bool(b, "transpose_a", s->opt[0]);
        weft_op_set_attr_bool(b, "transpose_b", s->opt[1]);
      }
      break;
    case GK_REDUCE:
      weft_op_add_input(b, x[0]);
      weft_op_add_input(b, ints_const(g, &s->opt[1], s->opt[0], false, st));
      weft_op_set_attr_bool(b, "keep_dims", s->opt[3]);
      break;
    case GK_TRANSPOSE:
      weft_op_add_input(b, x[0]);
      weft_op_add_input(b, ints_const(g, s->opt, 3, false, st));
      break;
    case GK_CONCAT:
      weft_op_add_input_list(b, x, 2);
      weft_op_add_input(b, ints_const(g, s->opt, 1, true, st));
      break;
    case GK_RESHAPE:
      weft_op_add_input(b, x[0]);
      weft_op_add_input(b, ints_const(g, s->opt, 2, false, st));
      break;
    case GK_SPLIT:
      weft_op_add_input(b, ints_const(g, s->opt, 1, true, st));
      weft_op_add_input(b, x[0]);
      weft_op_set_attr_int(b, "num_split", s->opt[1]);
      break;
    case GK_REVERSE:
      weft_op_add_input(b, x[0]);
      weft_op_add_input(b, ints_const(g, s->opt, 1, false, st));
      break;
    case GK_POOL:
    case GK_CONV: {
      int64_t k[4] = {1, s->opt[0], s->opt[0], 1}, stride[4] = {1, s->opt[1], s->opt[1], 1};
      for (int i = 0; i < s->n_in; i++) weft_op_add_input(b, x[i]);
      if (s->kind == GK_POOL) weft_op_set_attr_int_list(b, "ksize", k, 4);
      weft_op_set_attr_int_list(b, "strides", stride, 4);
      weft_op_set_attr_string(b, "padding", s->opt[2] ? "SAME" : "VALID");
      break;
    }
  }
  weft_node_t *n = NULL;
  if (*st) {
    weft_status_free(weft_op_finish(b, NULL));
  } else {
    *st = weft_op_finish(b, &n);
  }
  weft_graph_pop_device(g);
  return n ? weft_out(n, 0) : (weft_output_t){NULL, 0};
}

static weft_dtype_t input_dtype(const gspec_t *s, int i, weft_dtype_t dtype) {
  return (s->labels == 2 && i == 1) ? WEFT_DT_INT32 : dtype;
}

/* sum(dy * op(inputs)) for the float64 reference graph. */
static double weighted(weft_session_t *sess, const char *y_name, char **feed_names,
                       weft_tensor_t **feeds, int n, const cf_array_t *dy, weft_status_t **st) {
  weft_tensor_t *y = NULL;
  const char *fetch = y_name;
  *st = weft_session_run(sess, (const char *const *)feed_names, feeds, n, &fetch, &y, 1, NULL, 0);
  if (*st) return 0;
  double f = 0;
  for (int64_t k = 0; k < dy->n && k < weft_tensor_num_elements(y); k++)
    f += dy->v[k] * weft_tensor_get_double(y, k);
  weft_tensor_unref(y);
  return f;
}

/* Central differences of the float64 op on the CPU, for input k. NULL and *why on failure. */
static cf_array_t *numeric(const gspec_t *s, cf_array_t **inputs, int k, const cf_array_t *dy,
                           char **why) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t x[G_MAX_IN];
  char *names[G_MAX_IN] = {NULL};
  weft_tensor_t *feeds[G_MAX_IN] = {NULL};
  cf_array_t *grad = NULL;
  cf_array_t *work[G_MAX_IN] = {NULL};
  weft_session_t *sess = NULL;
  char *y_name = NULL;
  weft_graph_push_device(g, "/device:CPU:0");
  for (int i = 0; i < s->n_in && !st; i++) {
    names[i] = g_strdup_printf("in_%d", i);
    weft_dtype_t dt = input_dtype(s, i, WEFT_DT_DOUBLE);
    work[i] = cf_array_copy(inputs[i]);
    work[i]->dtype = dt;
    x[i] = weft_placeholder(g, names[i], dt, work[i]->rank, work[i]->dims, &st);
  }
  weft_graph_pop_device(g);
  weft_output_t y = st ? (weft_output_t){NULL, 0} : build_op(g, s, x, "/device:CPU:0", &st);
  if (!st) {
    y_name = g_strdup_printf("%s:0", weft_node_name(y.node));
    sess = weft_session_new(g, NULL, &st);
  }
  if (!st) grad = cf_array_new(WEFT_DT_DOUBLE, inputs[k]->rank, inputs[k]->dims);
  for (int64_t e = 0; grad && e < work[k]->n && !st; e++) {
    double saved = work[k]->v[e], h = 1e-6 * fmax(1.0, fabs(saved)), f[2] = {0, 0};
    for (int side = 0; side < 2 && !st; side++) {
      work[k]->v[e] = saved + (side ? -h : h);
      for (int i = 0; i < s->n_in && !st; i++) {
        weft_tensor_unref(feeds[i]);
        feeds[i] = cf_array_to_tensor(work[i], &st);
      }
      if (!st) f[side] = weighted(sess, y_name, names, feeds, s->n_in, dy, &st);
    }
    work[k]->v[e] = saved;
    grad->v[e] = (f[0] - f[1]) / (2 * h);
  }
  if (st) {
    *why = g_strdup_printf("the float64 reference on the CPU: %s", weft_status_message(st));
    weft_status_free(st);
    cf_array_free(grad);
    grad = NULL;
  }
  weft_session_free(sess);
  for (int i = 0; i < s->n_in; i++) {
    g_free(names[i]);
    weft_tensor_unref(feeds[i]);
    cf_array_free(work[i]);
  }
  g_free(y_name);
  weft_graph_free(g);
  return grad;
}

/* The first node from id `first` on (placeholders aside) without a kernel on the device, as an
 * "unsupported" message naming it ("the gradient uses ..."), or NULL. */
char *cf_grad_missing_kernel(const cf_run_ctx_t *ctx, weft_graph_t *g, int first,
                             const char *what) {
  for (int id = first; id < weft_graph_num_nodes(g); id++) {
    weft_node_t *n = weft_graph_node_at(g, id);
    if (strcmp(n->op_name, "Placeholder") == 0) continue;
    if (!weft__kernel_exists(n->op_name, ctx->device->type, n->attrs))
      return g_strdup_printf("%s uses %s ('%s'), which has no %s kernel for its types", what,
                             n->op_name, n->name, ctx->device->type);
  }
  return NULL;
}

weft_session_t *cf_grad_session(const cf_run_ctx_t *ctx, weft_graph_t *g, weft_status_t **st) {
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(opts, false);
  weft_session_options_set_intra_op_threads(opts, ctx->intra_threads);
  weft_session_t *sess = weft_session_new(g, opts, st);
  weft_session_options_free(opts);
  return sess;
}

void cf_grad_compare(const weft_tensor_t *got, cf_array_t *want, weft_dtype_t dtype,
                     cf_compare_t *cmp, const char *what) {
  /* rtol 1e-6 (float64) or 2e-3 (float32), and a tenth of rtol times the largest |gradient| for
   * the differences' own error. */
  cf_tol_t tol = dtype == WEFT_DT_DOUBLE ? (cf_tol_t){1e-6, 1e-7, 1e-10}
                                         : (cf_tol_t){2e-3, 1e-4, 1e-5};
  double scale = 0;
  for (int64_t e = 0; e < want->n; e++) scale = fmax(scale, fabs(want->v[e]));
  tol.atol += tol.rtol * scale * 0.1;
  want->dtype = dtype;
  cf_array_round(want);
  cf_array_t *have = cf_array_from_tensor(got);
  cf_compare_arrays(have, want, tol, cmp, what);
  cf_array_free(have);
}

void cf_grad_report(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype, const char *name,
                    cf_status_t status, char *message, const weft_status_t *st,
                    cf_compare_t *cmp, bool compared) {
  if (status == CF_PASSED && st) {
    status = CF_FAILED;
    message = g_strdup_printf("running the gradient: %s: %s",
                              weft_code_name(weft_status_code(st)), weft_status_message(st));
  } else if (status == CF_PASSED && !cmp->ok) {
    status = CF_FAILED;
    message = cmp->message;
    cmp->message = NULL;
  }
  cf_report_add(ctx->report, "cases", op, ctx->device->label, ctx->device->type,
                weft_dtype_name(dtype), name, status, compared ? cmp->max_abs_err : NAN,
                compared ? cmp->max_rel_err : NAN, compared ? cmp->nmse : NAN,
                message ? message : "");
  ctx->n_run++;
  g_free(message);
  g_free(cmp->message);
  cmp->message = NULL;
}

char *cf_grad_begin(const cf_run_ctx_t *ctx, const char *op, weft_dtype_t dtype,
                    const char *prefix, const char *case_name, cf_rng_t *rng) {
  char *name = g_strdup_printf("%s%s", prefix, case_name);
  if (!cf_case_name_selected(ctx, name)) {
    g_free(name);
    return NULL;
  }
  cf_rng_seed(rng, op, weft_dtype_name(dtype), name);
  return name;
}

static void run_one(cf_run_ctx_t *ctx, const gspec_t *s, weft_dtype_t dtype) {
  cf_rng_t rng;
  char *name = cf_grad_begin(ctx, s->op, dtype, "grad_", s->name, &rng);
  if (!name) return;
  const char *dev = ctx->device->spec;
  const char *host = ctx->cpu_spec ? ctx->cpu_spec : dev;
  cf_array_t *inputs[G_MAX_IN] = {NULL};
  weft_tensor_t *feeds[G_MAX_IN + 1] = {NULL};
  char *feed_names[G_MAX_IN + 1] = {NULL};
  weft_output_t x[G_MAX_IN], grads[G_MAX_IN];
  cf_array_t *dy = NULL;
  weft_session_t *sess = NULL;
  cf_status_t status = CF_PASSED;
  char *message = NULL;
  cf_compare_t cmp = {.ok = true};
  bool compared = false;
  weft_status_t *st = NULL;
  weft_graph_t *g = weft_graph_new();

  weft_graph_push_device(g, host);
  for (int i = 0; i < s->n_in && !st; i++) {
    weft_dtype_t dt = input_dtype(s, i, dtype);
    if (s->labels == 1 && i == 1) {
      /* A distribution per row. */
      inputs[i] = cf_gen_uniform(&rng, dt, s->rank[i], s->dims[i], 0.1, 1);
      int64_t cols = s->dims[i][s->rank[i] - 1];
      for (int64_t r = 0; r < inputs[i]->n / cols; r++) {
        double total = 0;
        for (int64_t c = 0; c < cols; c++) total += inputs[i]->v[r * cols + c];
        for (int64_t c = 0; c < cols; c++) inputs[i]->v[r * cols + c] /= total;
      }
    } else if (s->labels == 2 && i == 1) {
      inputs[i] = cf_array_new(dt, s->rank[i], s->dims[i]);
      for (int64_t e = 0; e < inputs[i]->n; e++)
        inputs[i]->v[e] = (double)cf_rng_int(&rng, 0, s->dims[0][1] - 1);
    } else {
      inputs[i] = cf_gen_uniform(&rng, dt, s->rank[i], s->dims[i], s->lo, s->hi);
      for (int64_t e = 0; s->sign && e < inputs[i]->n; e++)
        if (cf_rng_uniform(&rng, 0, 1) < 0.5) inputs[i]->v[e] = -inputs[i]->v[e];
      cf_array_round(inputs[i]);
    }
    feed_names[i] = g_strdup_printf("in_%d", i);
    x[i] = weft_placeholder(g, feed_names[i], dt, s->rank[i], s->dims[i], &st);
    if (!st) feeds[i] = cf_array_to_tensor(inputs[i], &st);
  }
  weft_graph_pop_device(g);
  weft_output_t y = st ? (weft_output_t){NULL, 0} : build_op(g, s, x, dev, &st);
  weft_output_t dy_in = {NULL, 0};
  if (!st) {
    int64_t dims[WEFT_MAX_RANK];
    int rank = weft_node_output_shape(y.node, y.index, dims);
    dy = cf_gen_uniform(&rng, dtype, rank < 0 ? 0 : rank, dims, -1, 1);
    cf_array_round(dy);
    feed_names[s->n_in] = g_strdup("dy");
    weft_graph_push_device(g, host);
    dy_in = weft_placeholder(g, "dy", dtype, dy->rank, dy->dims, &st);
    weft_graph_pop_device(g);
    if (!st) feeds[s->n_in] = cf_array_to_tensor(dy, &st);
  }
  int first_grad = weft_graph_num_nodes(g);
  if (!st) {
    weft_graph_push_device(g, dev);
    st = weft_gradients(g, &y, 1, x, s->n_in, &dy_in, grads);
    weft_graph_pop_device(g);
  }
  if (st) {
    status = CF_FAILED;
    message = g_strdup_printf("building the op or its gradient: %s", weft_status_message(st));
    goto done;
  }
  message = cf_grad_missing_kernel(ctx, g, first_grad, "the gradient");
  if (message) {
    status = CF_UNSUPPORTED;
    goto done;
  }
  sess = cf_grad_session(ctx, g, &st);
  for (int i = 0; i < s->n_in && !st && cmp.ok; i++) {
    if (s->labels && i == 1) continue;
    if (!grads[i].node) {
      cmp.ok = false;
      cmp.message = g_strdup_printf("no gradient for input %d", i);
      break;
    }
    char *fetch = g_strdup_printf("%s:%d", weft_node_name(grads[i].node), grads[i].index);
    const char *fc = fetch;
    weft_tensor_t *got = NULL;
    st = weft_session_run(sess, (const char *const *)feed_names, feeds, s->n_in + 1, &fc, &got,
                          1, NULL, 0);
    g_free(fetch);
    if (st) break;
    char *why = NULL;
    cf_array_t *want = numeric(s, inputs, i, dy, &why);
    if (!want) {
      weft_tensor_unref(got);
      cmp.ok = false;
      cmp.message = why;
      break;
    }
    char what[48];
    g_snprintf(what, sizeof what, "gradient of input %d", i);
    cf_grad_compare(got, want, dtype, &cmp, what);
    compared = true;
    cf_array_free(want);
    weft_tensor_unref(got);
  }
done:
  cf_grad_report(ctx, s->op, dtype, name, status, message, st, &cmp, compared);
  weft_status_free(st);
  weft_session_free(sess);
  for (int i = 0; i <= s->n_in && i <= G_MAX_IN; i++) {
    weft_tensor_unref(feeds[i]);
    g_free(feed_names[i]);
    if (i < s->n_in) cf_array_free(inputs[i]);
  }
  cf_array_free(dy);
  weft_graph_free(g);
  g_free(name);
}

void cf_run_grad_cases(cf_run_ctx_t *ctx, bool (*op_selected)(const char *op)) {
  static const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
  for (size_t k = 0; k < G_N_ELEMENTS(specs); k++) {
    const gspec_t *s = &specs[k];
    if (!op_selected(s->op)) continue;
    for (size_t d = 0; d < G_N_ELEMENTS(dtypes); d++) {
      /* The forward op itself must have a kernel here; its own cases report it otherwise. */
      if (!cf_kernel_available(ctx, s->op, "T", dtypes[d])) continue;
      run_one(ctx, s, dtypes[d]);
    }
  }
}
