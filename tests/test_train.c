/* Tests for training: symbolic gradients of every op with a gradient function against central
 * finite differences (double and float32, broadcasting, all MatMul transposes), missing and
 * undefined gradients, the losses, each optimizer's first steps against TensorFlow's update
 * formulas computed here plus a linear regression that converges, and the replica device
 * setter's placements (round robin, byte size, inner scopes, merge_devices, cluster specs). */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

/* For the gradient-program test: registers a program the way the plugin loader does. */
#include "graph/graph_internal.h"
#include "plugin/plugin_internal.h"

#define OK(expr)                                                 \
  do {                                                           \
    weft_status_t *st_ = (expr);                                 \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_)); \
  } while (0)

static char *tname(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

static weft_session_t *session(weft_graph_t *g) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  return s;
}

/* Deterministic values in [lo, hi]. */
static double rnd(guint32 *state, double lo, double hi) {
  *state = *state * 1664525u + 1013904223u;
  return lo + (hi - lo) * ((*state >> 8) / (double)(1u << 24));
}

static weft_tensor_t *make_tensor(weft_dtype_t dt, int rank, const int64_t *dims,
                                  const double *v) {
  weft_tensor_t *t = weft_tensor_new(dt, rank, dims);
  int64_t n = weft_tensor_num_elements(t);
  for (int64_t i = 0; i < n; i++) {
    if (dt == WEFT_DT_DOUBLE) ((double *)weft_tensor_data(t))[i] = v[i];
    else if (dt == WEFT_DT_FLOAT) ((float *)weft_tensor_data(t))[i] = (float)v[i];
    else if (dt == WEFT_DT_INT32) ((int32_t *)weft_tensor_data(t))[i] = (int32_t)v[i];
    else if (dt == WEFT_DT_INT64) ((int64_t *)weft_tensor_data(t))[i] = (int64_t)v[i];
  }
  return t;
}

/* ---------------------------------------------------------------------------------------------
 * Finite-difference checks */

#define MAX_IN 4

typedef struct gcase {
  const char *label;
  weft_dtype_t dtype;
  int n_in;
  int rank[MAX_IN];
  int64_t dims[MAX_IN][4];
  double lo, hi;               /* value range of the inputs */
  bool random_sign;            /* values in [-hi,-lo] U [lo,hi] */
  const double *values[MAX_IN]; /* fixed values (NULL: random) */
  bool skip[MAX_IN];           /* inputs not checked (not differentiable) */
  weft_dtype_t in_dtype[MAX_IN]; /* 0: dtype */
  /* Builds y from the inputs; extra ints for ops with options. */
  weft_output_t (*build)(weft_graph_t *g, const weft_output_t *x, const struct gcase *c);
  const char *op;
  int opt[4];
  double eps, tol; /* 0: by dtype */
} gcase_t;

static int64_t numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= dims[d];
  return n;
}

static double f_of(weft_session_t *s, const char *yname, const char *const *feed_names,
                   weft_tensor_t *const *feeds, int n, const double *w) {
  weft_tensor_t *y = NULL;
  OK(weft_session_run(s, feed_names, feeds, n, &yname, &y, 1, NULL, 0));
  double f = 0;
  for (int64_t i = 0; i < weft_tensor_num_elements(y); i++)
    f += w[i] * weft_tensor_get_double(y, i);
  weft_tensor_unref(y);
  return f;
}

static void check_gradient(const gcase_t *c) {
  bool dbl = c->dtype == WEFT_DT_DOUBLE;
  double eps = c->eps ? c->eps : dbl ? 1e-6 : 1e-3;
  double tol = c->tol ? c->tol : dbl ? 1e-6 : 2e-2;
  guint32 seed = 12345;
  weft_graph_t *g = weft_graph_new();
  /* The CPU: these check the gradient graphs; weft-conformance's grad_* cases check devices. */
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  weft_output_t x[MAX_IN];
  weft_tensor_t *feeds[MAX_IN];
  char *names[MAX_IN];
  double *vals[MAX_IN];
  for (int i = 0; i < c->n_in; i++) {
    weft_dtype_t dt = c->in_dtype[i] ? c->in_dtype[i] : c->dtype;
    names[i] = g_strdup_printf("x%d", i);
    x[i] = weft_placeholder(g, names[i], dt, c->rank[i], c->dims[i], &st);
    OK(st);
    int64_t n = numel(c->rank[i], c->dims[i]);
    vals[i] = g_new(double, n > 0 ? n : 1);
    for (int64_t k = 0; k < n; k++) {
      if (c->values[i]) {
        vals[i][k] = c->values[i][k];
      } else {
        double v = rnd(&seed, c->lo, c->hi);
        if (c->random_sign && rnd(&seed, 0, 1) < 0.5) v = -v;
        vals[i][k] = v;
      }
    }
    feeds[i] = make_tensor(dt, c->rank[i], c->dims[i], vals[i]);
  }
  weft_output_t y = c->build(g, x, c);
  g_assert_nonnull(y.node);
  int64_t ydims[WEFT_MAX_RANK];
  int yrank = weft_node_output_shape(y.node, y.index, ydims);
  g_assert_cmpint(yrank, >=, 0);
  int64_t ny = numel(yrank, ydims);
  double *w = g_new(double, ny > 0 ? ny : 1);
  for (int64_t k = 0; k < ny; k++) w[k] = rnd(&seed, -1, 1);
  weft_tensor_t *wt = make_tensor(c->dtype, yrank, ydims, w);
  weft_output_t wc = weft_const(g, "w", wt, &st);
  OK(st);
  weft_tensor_unref(wt);
  weft_output_t grads[MAX_IN];
  OK(weft_gradients(g, &y, 1, x, c->n_in, &wc, grads));
  weft_graph_pop_device(g);

  weft_session_t *s = session(g);
  char *yname = tname(y);
  for (int i = 0; i < c->n_in; i++) {
    if (c->skip[i]) continue;
    g_assert_nonnull(grads[i].node);
    char *gname = tname(grads[i]);
    weft_tensor_t *gt = NULL;
    const char *gn = gname;
    OK(weft_session_run(s, (const char *const *)names, feeds, c->n_in, &gn, &gt, 1, NULL, 0));
    int64_t n = numel(c->rank[i], c->dims[i]);
    g_assert_cmpint(weft_tensor_num_elements(gt), ==, n);
    for (int64_t k = 0; k < n; k++) {
      double orig = vals[i][k];
      weft_tensor_t *saved = feeds[i];
      vals[i][k] = orig + eps;
      feeds[i] = make_tensor(c->dtype, c->rank[i], c->dims[i], vals[i]);
      double fp = f_of(s, yname, (const char *const *)names, feeds, c->n_in, w);
      weft_tensor_unref(feeds[i]);
      vals[i][k] = orig - eps;
      feeds[i] = make_tensor(c->dtype, c->rank[i], c->dims[i], vals[i]);
      double fm = f_of(s, yname, (const char *const *)names, feeds, c->n_in, w);
      weft_tensor_unref(feeds[i]);
      feeds[i] = saved;
      vals[i][k] = orig;
      double num = (fp - fm) / (2 * eps);
      double sym = weft_tensor_get_double(gt, k);
      if (fabs(num - sym) > tol * fmax(1.0, fabs(num)))
        g_error("%s (%s): d/dx%d[%" G_GINT64_FORMAT "]: symbolic %.9g, numeric %.9g", c->label,
                weft_dtype_name(c->dtype), i, k, sym, num);
    }
    weft_tensor_unref(gt);
    g_free(gname);
  }
  g_free(yname);
  weft_session_free(s);
  for (int i = 0; i < c->n_in; i++) {
    weft_tensor_unref(feeds[i]);
    g_free(names[i]);
    g_free(vals[i]);
  }
  g_free(w);
  weft_graph_free(g);
}

static weft_output_t b_unary(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_unary(g, c->op, "y", x[0], &st);
  OK(st);
  return y;
}

static weft_output_t b_binary(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_binary(g, c->op, "y", x[0], x[1], &st);
  OK(st);
  return y;
}

static weft_output_t b_matmul(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_matmul(g, "y", x[0], x[1], c->opt[0], c->opt[1], &st);
  OK(st);
  return y;
}

static weft_output_t int_vec(weft_graph_t *g, const int *v, int n, bool scalar) {
  int64_t dims[1] = {n};
  double dv[8];
  for (int i = 0; i < n; i++) dv[i] = v[i];
  weft_tensor_t *t = make_tensor(WEFT_DT_INT32, scalar ? 0 : 1, dims, dv);
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, "ints", t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

/* Reductions: opt[0] number of axes, opt[1..] the axes, keep_dims in opt[3]. */
static weft_output_t b_reduce(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_op_builder_t *b = weft_op_new(g, c->op, "y");
  weft_op_add_input(b, x[0]);
  weft_op_add_input(b, int_vec(g, &c->opt[1], c->opt[0], false));
  weft_op_set_attr_bool(b, "keep_dims", c->opt[3]);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

static weft_output_t b_reshape(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_binary(g, "Reshape", "y", x[0], int_vec(g, c->opt, 2, false), &st);
  OK(st);
  return y;
}

static weft_output_t b_expand(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_binary(g, "ExpandDims", "y", x[0], int_vec(g, c->opt, 1, true), &st);
  OK(st);
  return y;
}

static weft_output_t b_squeeze(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  (void)c;
  weft_status_t *st = NULL;
  weft_output_t y = weft_unary(g, "Squeeze", "y", x[0], &st);
  OK(st);
  return y;
}

static weft_output_t b_transpose(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_binary(g, "Transpose", "y", x[0], int_vec(g, c->opt, 3, false), &st);
  OK(st);
  return y;
}

/* Slice x[opt0:opt0+opt2, opt1:opt1+opt3]. */
static weft_output_t b_slice(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_output_t in3[3] = {x[0], int_vec(g, c->opt, 2, false), int_vec(g, c->opt + 2, 2, false)};
  weft_op_builder_t *b = weft_op_new(g, "Slice", "y");
  for (int i = 0; i < 3; i++) weft_op_add_input(b, in3[i]);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

/* Pad with paddings [[opt0, opt1], [opt2, opt3]]. */
static weft_output_t b_pad(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  int64_t dims[2] = {2, 2};
  double v[4] = {c->opt[0], c->opt[1], c->opt[2], c->opt[3]};
  weft_tensor_t *t = make_tensor(WEFT_DT_INT32, 2, dims, v);
  weft_status_t *st = NULL;
  weft_output_t p = weft_const(g, "paddings", t, &st);
  OK(st);
  weft_tensor_unref(t);
  weft_output_t y = weft_binary(g, "Pad", "y", x[0], p, &st);
  OK(st);
  return y;
}

static weft_output_t b_tile(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_status_t *st = NULL;
  weft_output_t y = weft_binary(g, "Tile", "y", x[0], int_vec(g, c->opt, 2, false), &st);
  OK(st);
  return y;
}

static weft_output_t b_concat(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_op_builder_t *b = weft_op_new(g, "ConcatV2", "y");
  weft_op_add_input_list(b, x, 2);
  weft_op_add_input(b, int_vec(g, c->opt, 1, true));
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

static weft_output_t b_cast(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  (void)c;
  /* double -> float -> double, so the check stays in double. */
  weft_op_builder_t *b = weft_op_new(g, "Cast", "to_float");
  weft_op_add_input(b, x[0]);
  weft_op_set_attr_type(b, "DstT", WEFT_DT_FLOAT);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  weft_status_t *st = NULL;
  weft_output_t sq = weft_unary(g, "Square", "sq", weft_out(n, 0), &st);
  OK(st);
  b = weft_op_new(g, "Cast", "y");
  weft_op_add_input(b, sq);
  weft_op_set_attr_type(b, "DstT", WEFT_DT_DOUBLE);
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

static weft_output_t b_bias_add(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  (void)c;
  weft_status_t *st = NULL;
  weft_output_t y = weft_binary(g, "BiasAdd", "y", x[0], x[1], &st);
  OK(st);
  return y;
}

static weft_output_t b_select(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  (void)c;
  weft_status_t *st = NULL;
  weft_output_t cond = weft_binary(g, "Greater", "cond", x[0], x[1], &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Select", "y");
  weft_op_add_input(b, cond);
  weft_op_add_input(b, x[0]);
  weft_op_add_input(b, x[1]);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

/* Cross entropies: x[0] logits, x[1] labels (a distribution or class indices). */
static weft_output_t b_xent(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_op_builder_t *b = weft_op_new(g, c->op, "y");
  weft_op_add_input(b, x[0]);
  weft_op_add_input(b, x[1]);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

static weft_output_t b_stop(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  (void)c;
  /* y = x0 * stop_gradient(x0): the gradient is stop(x0) = x0, not 2 x0. */
  weft_status_t *st = NULL;
  weft_output_t s = weft_unary(g, "StopGradient", "stop", x[0], &st);
  OK(st);
  weft_output_t y = weft_binary(g, "Mul", "y", x[0], s, &st);
  OK(st);
  return y;
}

#define R2(a, b) \
  { a, b }
#define SHAPE1(r, ...) .rank = {r}, .dims = {{__VA_ARGS__}}

static const double labels_dist[6] = {0.2, 0.3, 0.5, 0.7, 0.1, 0.2};
static const double class_ids[2] = {2, 0};
static const double select_a[6] = {0.5, 2.0, -1.0, 3.0, 0.25, -2.0};
static const double select_b[6] = {1.0, 1.0, 1.0, -1.0, 1.0, 1.0};
static const double maxmin_x[6] = {0.3, 0.9, -0.5, 0.9, 0.1, 0.4}; /* a tie in row 0 */
static const double mx_a[6] = {0.1, 2.0, -1.0, 0.4, 0.3, 0.8};
static const double mx_b[3] = {0.5, 0.2, 0.0};

static gcase_t *unary_case(const char *op, weft_dtype_t dt, double lo, double hi, bool sign) {
  gcase_t *c = g_new0(gcase_t, 1);
  c->label = op;
  c->op = op;
  c->dtype = dt;
  c->n_in = 1;
  c->rank[0] = 2;
  c->dims[0][0] = 2;
  c->dims[0][1] = 3;
  c->lo = lo;
  c->hi = hi;
  c->random_sign = sign;
  c->build = b_unary;
  return c;
}

static void test_grad_unary(void) {
  static const struct {
    const char *op;
    double lo, hi;
    bool sign;
  } ops[] = {
      {"Neg", 0.1, 2, true},     {"Abs", 0.1, 2, true},      {"Square", 0.1, 2, true},
      {"Sqrt", 0.5, 2, false},   {"Rsqrt", 0.5, 2, false},   {"Exp", 0.1, 1, true},
      {"Log", 0.5, 2, false},    {"Relu", 0.1, 2, true},     {"Sigmoid", 0.1, 2, true},
      {"Tanh", 0.1, 2, true},    {"Identity", 0.1, 2, true}, {"Softmax", 0.1, 2, true},
      {"LogSoftmax", 0.1, 2, true}, {"L2Loss", 0.1, 2, true}, {"Reciprocal", 0.5, 2, true},
      {"Sin", 0.1, 2, true},     {"Cos", 0.1, 2, true},      {"Tan", 0.1, 1, true},
      {"Sinh", 0.1, 2, true},    {"Cosh", 0.1, 2, true},     {"Atan", 0.1, 2, true},
      {"Log1p", 0.1, 2, false},  {"Expm1", 0.1, 1, true},    {"Erf", 0.1, 1.5, true},
      {"Softplus", 0.1, 2, true}, {"Softsign", 0.1, 2, true}, {"Elu", 0.1, 2, true},
      {"Relu6", 0.1, 5, true},   {"LeakyRelu", 0.1, 2, true},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
    for (int d = 0; d < 2; d++) {
      gcase_t *c = unary_case(ops[k].op, d ? WEFT_DT_FLOAT : WEFT_DT_DOUBLE, ops[k].lo, ops[k].hi,
                              ops[k].sign);
      check_gradient(c);
      g_free(c);
    }
  }
}

static void binary(const char *op, weft_dtype_t dt, int ra, const int64_t *da, int rb,
                   const int64_t *db, double lo, double hi, bool sign) {
  gcase_t c = {.label = op, .op = op, .dtype = dt, .n_in = 2, .lo = lo, .hi = hi,
               .random_sign = sign, .build = b_binary};
  c.rank[0] = ra;
  c.rank[1] = rb;
  memcpy(c.dims[0], da, sizeof(int64_t) * (size_t)ra);
  memcpy(c.dims[1], db, sizeof(int64_t) * (size_t)rb);
  check_gradient(&c);
}

static void test_grad_binary(void) {
  static const char *const ops[] = {"AddV2", "Add", "Sub", "Mul", "RealDiv", "Div",
                                    "SquaredDifference", "Pow"};
  const int64_t s23[2] = {2, 3}, s3[1] = {3}, s21[2] = {2, 1}, s13[2] = {1, 3};
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
    bool pos = strcmp(ops[k], "Pow") == 0 || strstr(ops[k], "Div") != NULL;
    double lo = 0.5, hi = 2.0;
    for (int d = 0; d < 2; d++) {
      weft_dtype_t dt = d ? WEFT_DT_FLOAT : WEFT_DT_DOUBLE;
      binary(ops[k], dt, 2, s23, 2, s23, lo, hi, !pos);
      binary(ops[k], dt, 2, s23, 1, s3, lo, hi, !pos);  /* y broadcast along rows */
      binary(ops[k], dt, 2, s21, 2, s13, lo, hi, !pos); /* both broadcast */
      binary(ops[k], dt, 0, s3, 2, s23, lo, hi, !pos);  /* scalar x */
    }
  }
  /* Maximum/Minimum with fixed values (no ties, so the derivative exists). */
  static const char *const mm[] = {"Maximum", "Minimum"};
  for (int k = 0; k < 2; k++) {
    gcase_t c = {.label = mm[k], .op = mm[k], .dtype = WEFT_DT_DOUBLE, .n_in = 2,
                 .rank = {2, 1}, .dims = {{2, 3}, {3}}, .values = {mx_a, mx_b},
                 .build = b_binary};
    check_gradient(&c);
  }
}

static void test_grad_matmul(void) {
  for (int ta = 0; ta < 2; ta++) {
    for (int tb = 0; tb < 2; tb++) {
      for (int d = 0; d < 2; d++) {
        /* a is [2,3] (or [3,2] transposed), b is [3,4] (or [4,3]). */
        gcase_t c = {.label = "MatMul", .dtype = d ? WEFT_DT_FLOAT : WEFT_DT_DOUBLE, .n_in = 2,
                     .rank = {2, 2}, .lo = 0.1, .hi = 1, .random_sign = true,
                     .build = b_matmul, .opt = {ta, tb}};
        c.dims[0][0] = ta ? 3 : 2;
        c.dims[0][1] = ta ? 2 : 3;
        c.dims[1][0] = tb ? 4 : 3;
        c.dims[1][1] = tb ? 3 : 4;
        check_gradient(&c);
      }
    }
  }
}

static weft_output_t b_bmm(weft_graph_t *g, const weft_output_t *x, const gcase_t *c) {
  weft_op_builder_t *b = weft_op_new(g, "BatchMatMulV2", "y");
  weft_op_add_input(b, x[0]);
  weft_op_add_input(b, x[1]);
  weft_op_set_attr_bool(b, "adj_x", c->opt[0]);
  weft_op_set_attr_bool(b, "adj_y", c->opt[1]);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

static void test_grad_batch_matmul(void) {
  for (int ax = 0; ax < 2; ax++) {
    for (int ay = 0; ay < 2; ay++) {
      for (int bc = 0; bc < 2; bc++) {
        /* x [2,2,3] (adjoint [2,3,2]); y [2,3,4] or, broadcast, [3,4] (adjoint [4,3]). */
        gcase_t c = {.label = "BatchMatMulV2", .dtype = WEFT_DT_DOUBLE, .n_in = 2,
                     .rank = {3, bc ? 2 : 3}, .lo = 0.1, .hi = 1, .random_sign = true,
                     .build = b_bmm, .opt = {ax, ay}};
        c.dims[0][0] = 2;
        c.dims[0][1] = ax ? 3 : 2;
        c.dims[0][2] = ax ? 2 : 3;
        int o = bc ? 0 : 1;
        if (!bc) c.dims[1][0] = 2;
        c.dims[1][o] = ay ? 4 : 3;
        c.dims[1][o + 1] = ay ? 3 : 4;
        check_gradient(&c);
      }
    }
  }
}

static void test_grad_nn(void) {
  gcase_t bias = {.label = "BiasAdd", .dtype = WEFT_DT_DOUBLE, .n_in = 2, .rank = {2, 1},
                  .dims = {{3, 4}, {4}}, .lo = 0.1, .hi = 1, .random_sign = true,
                  .build = b_bias_add};
  check_gradient(&bias);
  bias.dtype = WEFT_DT_FLOAT;
  check_gradient(&bias);
  gcase_t xent = {.label = "SoftmaxCrossEntropyWithLogits",
                  .op = "SoftmaxCrossEntropyWithLogits", .dtype = WEFT_DT_DOUBLE, .n_in = 2,
                  .rank = {2, 2}, .dims = {{2, 3}, {2, 3}}, .lo = 0.1, .hi = 2,
                  .random_sign = true, .values = {NULL, labels_dist}, .build = b_xent};
  check_gradient(&xent);
  xent.dtype = WEFT_DT_FLOAT;
  check_gradient(&xent);
  gcase_t sparse = {.label = "SparseSoftmaxCrossEntropyWithLogits",
                    .op = "SparseSoftmaxCrossEntropyWithLogits", .dtype = WEFT_DT_DOUBLE,
                    .n_in = 2, .rank = {2, 1}, .dims = {{2, 3}, {2}}, .lo = 0.1, .hi = 2,
                    .random_sign = true, .values = {NULL, class_ids}, .skip = {false, true},
                    .in_dtype = {0, WEFT_DT_INT32}, .build = b_xent};
  check_gradient(&sparse);
  gcase_t sel = {.label = "Select", .dtype = WEFT_DT_DOUBLE, .n_in = 2, .rank = {2, 2},
                 .dims = {{2, 3}, {2, 3}}, .values = {select_a, select_b}, .build = b_select};
  check_gradient(&sel);
  gcase_t stop = {.label = "StopGradient", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {1},
                  .dims = {{4}}, .lo = 0.1, .hi = 1, .build = b_stop};
  /* The finite difference sees 2x; the symbolic gradient must be x: check by hand. */
  weft_graph_t *g = weft_graph_new();
  weft_output_t x[1];
  weft_status_t *st = NULL;
  x[0] = weft_placeholder(g, "x0", WEFT_DT_DOUBLE, 1, stop.dims[0], &st);
  OK(st);
  weft_output_t y = b_stop(g, x, &stop);
  weft_output_t gr;
  OK(weft_gradients(g, &y, 1, x, 1, NULL, &gr));
  weft_session_t *s = session(g);
  double xv[4] = {1, 2, 3, 4};
  weft_tensor_t *feed = make_tensor(WEFT_DT_DOUBLE, 1, stop.dims[0], xv);
  const char *fn = "x0";
  char *gn = tname(gr);
  const char *gnc = gn;
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, &fn, &feed, 1, &gnc, &out, 1, NULL, 0));
  for (int i = 0; i < 4; i++) g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(out, i),
                                                             xv[i], 1e-12);
  weft_tensor_unref(out);
  weft_tensor_unref(feed);
  g_free(gn);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_grad_reductions_and_shapes(void) {
  static const char *const red[] = {"Sum", "Mean", "Max", "Min"};
  for (size_t k = 0; k < G_N_ELEMENTS(red); k++) {
    bool mm = k >= 2;
    int axes_sets[3][4] = {{1, 1, 0, 0}, {2, 0, 1, 1}, {1, -2, 0, 0}};
    for (int a = 0; a < 3; a++) {
      gcase_t c = {.label = red[k], .op = red[k], .dtype = WEFT_DT_DOUBLE, .n_in = 1,
                   .rank = {2}, .dims = {{2, 3}}, .lo = 0.1, .hi = 2, .random_sign = true,
                   .build = b_reduce};
      memcpy(c.opt, axes_sets[a], sizeof c.opt);
      if (mm && a == 0) c.values[0] = maxmin_x; /* ties split the gradient; not checked by FD */
      if (mm && a == 0) continue;
      check_gradient(&c);
      c.dtype = WEFT_DT_FLOAT;
      check_gradient(&c);
    }
  }
  gcase_t rs = {.label = "Reshape", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {2},
                .dims = {{2, 3}}, .lo = 0.1, .hi = 1, .build = b_reshape, .opt = {3, 2}};
  check_gradient(&rs);
  gcase_t ex = {.label = "ExpandDims", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {2},
                .dims = {{2, 3}}, .lo = 0.1, .hi = 1, .build = b_expand, .opt = {1}};
  check_gradient(&ex);
  gcase_t sq = {.label = "Squeeze", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {3},
                .dims = {{2, 1, 3}}, .lo = 0.1, .hi = 1, .build = b_squeeze};
  check_gradient(&sq);
  gcase_t tr = {.label = "Transpose", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {3},
                .dims = {{2, 3, 4}}, .lo = 0.1, .hi = 1, .build = b_transpose,
                .opt = {1, 2, 0}};
  check_gradient(&tr);
  gcase_t cc = {.label = "ConcatV2", .dtype = WEFT_DT_DOUBLE, .n_in = 2, .rank = {2, 2},
                .dims = {{2, 3}, {2, 2}}, .lo = 0.1, .hi = 1, .build = b_concat, .opt = {1}};
  check_gradient(&cc);
  cc.dims[1][0] = 1;
  cc.dims[1][1] = 3;
  cc.opt[0] = 0;
  check_gradient(&cc);
  static const double relu6_x[6] = {-1.0, 0.5, 5.5, 6.5, 9.0, 3.0};
  gcase_t r6 = {.label = "Relu6", .op = "Relu6", .dtype = WEFT_DT_DOUBLE, .n_in = 1,
                .rank = {1}, .dims = {{6}}, .values = {relu6_x}, .build = b_unary};
  check_gradient(&r6);
  gcase_t sl = {.label = "Slice", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {2},
                .dims = {{3, 4}}, .lo = 0.1, .hi = 1, .build = b_slice, .opt = {1, 1, 2, 2}};
  check_gradient(&sl);
  sl.dtype = WEFT_DT_FLOAT;
  check_gradient(&sl);
  gcase_t pd = {.label = "Pad", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {2},
                .dims = {{2, 3}}, .lo = 0.1, .hi = 1, .build = b_pad, .opt = {1, 0, 2, 1}};
  check_gradient(&pd);
  gcase_t tl = {.label = "Tile", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {2},
                .dims = {{2, 3}}, .lo = 0.1, .hi = 1, .build = b_tile, .opt = {2, 3}};
  check_gradient(&tl);
  gcase_t cast = {.label = "Cast", .dtype = WEFT_DT_DOUBLE, .n_in = 1, .rank = {1},
                  .dims = {{3}}, .lo = 0.5, .hi = 1, .build = b_cast};
  /* float32 inside: float32's step and tolerance. */
  cast.eps = 1e-3;
  cast.tol = 1e-2;
  check_gradient(&cast);
}

/* A composite: y = sum(tanh(x W + b)) with x used twice (gradients are summed with AddN). */
static void test_grad_composite_and_none(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t dx[2] = {2, 2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_DOUBLE, 2, dx, &st);
  OK(st);
  weft_output_t unused = weft_placeholder(g, "unused", WEFT_DT_DOUBLE, 2, dx, &st);
  OK(st);
  weft_output_t xx = weft_matmul(g, "xx", x, x, false, false, &st);
  OK(st);
  weft_output_t y = weft_binary(g, "Mul", "y", xx, x, &st);
  OK(st);
  weft_output_t xs[2] = {x, unused}, grads[2];
  OK(weft_gradients(g, &y, 1, xs, 2, NULL, grads));
  g_assert_nonnull(grads[0].node);
  g_assert_null(grads[1].node); /* TensorFlow's None */
  g_assert_true(g_str_has_prefix(weft_node_name(grads[0].node), "gradients/"));
  weft_session_t *s = session(g);
  double xv[4] = {1, 2, 3, 4};
  weft_tensor_t *feed = make_tensor(WEFT_DT_DOUBLE, 2, dx, xv);
  const char *fn = "x";
  char *gn = tname(grads[0]);
  const char *gnc = gn;
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, &fn, &feed, 1, &gnc, &out, 1, NULL, 0));
  /* d/dx sum((x x) .* x): (1 x^T)... computed by hand for x = [[1,2],[3,4]]:
   * y_ij = (xx)_ij x_ij; dy/dx_kl = sum_ij [d(xx)_ij/dx_kl] x_ij + (xx)_kl. */
  double xxv[4] = {7, 10, 15, 22};
  double expect[4];
  for (int k = 0; k < 2; k++) {
    for (int l = 0; l < 2; l++) {
      double v = xxv[k * 2 + l];
      /* (xx)_ij = sum_m x_im x_mj: d/dx_kl gives x_lj when i = k, plus x_ik when j = l. */
      for (int j = 0; j < 2; j++) v += xv[l * 2 + j] * xv[k * 2 + j];
      for (int i = 0; i < 2; i++) v += xv[i * 2 + k] * xv[i * 2 + l];
      expect[k * 2 + l] = v;
    }
  }
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(out, i), expect[i], 1e-9);
  weft_tensor_unref(out);
  weft_tensor_unref(feed);
  g_free(gn);
  weft_session_free(s);

  /* An op on the way without a gradient function: NextAfter, which TensorFlow does not
   * differentiate either. */
  weft_output_t sn = weft_binary(g, "NextAfter", "next_after", x, x, &st);
  OK(st);
  weft_output_t gs;
  weft_status_t *err = weft_gradients(g, &sn, 1, &x, 1, NULL, &gs);
  g_assert_cmpint(weft_status_code(err), ==, WEFT_UNIMPLEMENTED);
  g_assert_nonnull(strstr(weft_status_message(err), "'next_after' (op type: NextAfter)"));
  g_assert_null(gs.node);
  weft_status_free(err);
  /* An integer y. */
  weft_output_t sh = weft_unary(g, "Shape", "shape", x, &st);
  OK(st);
  err = weft_gradients(g, &sh, 1, &x, 1, NULL, &gs);
  g_assert_cmpint(weft_status_code(err), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(err), "int32"));
  weft_status_free(err);
  weft_graph_free(g);
}

static const weft__op_def_t *lookup_op(const char *op, void *arg) {
  (void)arg;
  return weft__op_registry_lookup(op);
}

/* An op without a built-in gradient function but with a gradient program (what a plugin's
 * weft_op_def_t.gradient becomes) is differentiated through the program. DeepCopy stands in for
 * a plugin op: the core has no gradient function for it (TensorFlow defines none either). */
static void test_grad_program(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d[1] = {4};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_DOUBLE, 1, d, &st);
  OK(st);
  weft_output_t y = weft_unary(g, "DeepCopy", "y", x, &st);
  OK(st);
  weft_output_t gx;
  weft_status_t *err = weft_gradients(g, &y, 1, &x, 1, NULL, &gx);
  g_assert_cmpint(weft_status_code(err), ==, WEFT_UNIMPLEMENTED);
  weft_status_free(err);

  weft__ops_register_standard();
  weft__grad_program_t *prog = NULL;
  OK(weft__grad_program_parse(weft__op_registry_lookup("DeepCopy"), "dx = Identity(dy)",
                              lookup_op, NULL, &prog));
  weft__gradients_add(prog);
  gcase_t c = {.label = "DeepCopy (gradient program)", .op = "DeepCopy", .dtype = WEFT_DT_DOUBLE,
               .n_in = 1, .rank = {2}, .dims = {{2, 3}}, .lo = 0.1, .hi = 2, .random_sign = true,
               .build = b_unary};
  check_gradient(&c);
  OK(weft_gradients(g, &y, 1, &x, 1, NULL, &gx));
  g_assert_nonnull(gx.node);
  g_assert_true(g_str_has_prefix(weft_node_name(gx.node), "gradients/y_grad/"));
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Losses */

static double run_scalar(weft_session_t *s, weft_output_t o) {
  char *n = tname(o);
  const char *nc = n;
  weft_tensor_t *t = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &nc, &t, 1, NULL, 0));
  double v = weft_tensor_get_double(t, 0);
  weft_tensor_unref(t);
  g_free(n);
  return v;
}

static weft_output_t const_f32(weft_graph_t *g, const char *name, int rank, const int64_t *dims,
                               const double *v) {
  weft_tensor_t *t = make_tensor(WEFT_DT_FLOAT, rank, dims, v);
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static void test_losses(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t d[2] = {2, 3};
  double lv[6] = {1, 0, 0, 0, 0, 1}, pv[6] = {0.5, 1, -1, 2, 0, 0.5};
  weft_output_t labels = const_f32(g, "labels", 2, d, lv);
  weft_output_t preds = const_f32(g, "preds", 2, d, pv);
  weft_output_t mse = weft_mean_squared_error(g, labels, preds, &st);
  OK(st);
  weft_output_t ce = weft_softmax_cross_entropy(g, labels, preds, &st);
  OK(st);
  int64_t d1[1] = {2};
  double idv[2] = {0, 2};
  weft_tensor_t *ids = make_tensor(WEFT_DT_INT32, 1, d1, idv);
  weft_output_t idc = weft_const(g, "ids", ids, &st);
  OK(st);
  weft_tensor_unref(ids);
  weft_output_t sce = weft_sparse_softmax_cross_entropy(g, idc, preds, &st);
  OK(st);
  weft_session_t *s = session(g);
  double e_mse = 0;
  for (int i = 0; i < 6; i++) e_mse += (pv[i] - lv[i]) * (pv[i] - lv[i]) / 6;
  g_assert_cmpfloat_with_epsilon(run_scalar(s, mse), e_mse, 1e-6);
  double e_ce = 0;
  for (int r = 0; r < 2; r++) {
    double z = 0;
    for (int j = 0; j < 3; j++) z += exp(pv[r * 3 + j]);
    for (int j = 0; j < 3; j++) e_ce += -lv[r * 3 + j] * (pv[r * 3 + j] - log(z)) / 2;
  }
  g_assert_cmpfloat_with_epsilon(run_scalar(s, ce), e_ce, 1e-5);
  g_assert_cmpfloat_with_epsilon(run_scalar(s, sce), e_ce, 1e-5);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Optimizers: y = 2x + 1 learned by pred = x W + b with MSE. */

#define N_PTS 8

typedef struct sim {
  double w, b;
  double s1[2], s2[2]; /* slots per parameter */
  double b1p, b2p;
} sim_t;

static void sim_grads(const sim_t *m, const double *xs, const double *ys, double g[2]) {
  g[0] = g[1] = 0;
  for (int i = 0; i < N_PTS; i++) {
    double r = m->w * xs[i] + m->b - ys[i];
    g[0] += 2 * r * xs[i] / N_PTS;
    g[1] += 2 * r / N_PTS;
  }
}

/* TensorFlow's update formulas (training_ops.cc), one step. */
static void sim_step(sim_t *m, const weft_optimizer_spec_t *o, const double *xs,
                     const double *ys) {
  double g[2];
  sim_grads(m, xs, ys, g);
  double *p[2] = {&m->w, &m->b};
  double lr = o->learning_rate;
  for (int k = 0; k < 2; k++) {
    switch (o->kind) {
      case WEFT_OPTIMIZER_GRADIENT_DESCENT: *p[k] -= lr * g[k]; break;
      case WEFT_OPTIMIZER_MOMENTUM:
        m->s1[k] = m->s1[k] * o->momentum + g[k];
        if (o->use_nesterov) *p[k] -= g[k] * lr + m->s1[k] * o->momentum * lr;
        else *p[k] -= lr * m->s1[k];
        break;
      case WEFT_OPTIMIZER_ADAGRAD:
        m->s1[k] += g[k] * g[k];
        *p[k] -= lr * g[k] / sqrt(m->s1[k]);
        break;
      case WEFT_OPTIMIZER_ADAM: {
        double lr_t = lr * sqrt(1 - m->b2p) / (1 - m->b1p);
        m->s1[k] += (g[k] - m->s1[k]) * (1 - o->beta1);
        m->s2[k] += (g[k] * g[k] - m->s2[k]) * (1 - o->beta2);
        *p[k] -= m->s1[k] * lr_t / (sqrt(m->s2[k]) + o->epsilon);
        break;
      }
      case WEFT_OPTIMIZER_RMSPROP:
        m->s1[k] += (g[k] * g[k] - m->s1[k]) * (1 - o->decay);
        m->s2[k] = m->s2[k] * o->momentum + lr * g[k] / sqrt(m->s1[k] + o->epsilon);
        *p[k] -= m->s2[k];
        break;
    }
  }
  m->b1p *= o->beta1;
  m->b2p *= o->beta2;
}

static double run_named(weft_session_t *s, const char *name) {
  weft_tensor_t *t = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &name, &t, 1, NULL, 0));
  double v = weft_tensor_get_double(t, 0);
  weft_tensor_unref(t);
  return v;
}

static void train_linear(weft_optimizer_spec_t o, int steps, double factor) {
  double xs[N_PTS], ys[N_PTS];
  for (int i = 0; i < N_PTS; i++) {
    xs[i] = -1 + 2.0 * i / (N_PTS - 1);
    ys[i] = 2 * xs[i] + 1;
  }
  weft_graph_t *g = weft_graph_new();
  /* The CPU: variables placed by the initializer's run are not moved later, and another
   * backend (Vulkan) may take them without having the update kernels (see docs/training.md). */
  weft_graph_push_device(g, "/device:CPU:0");
  weft_status_t *st = NULL;
  int64_t dx[2] = {N_PTS, 1}, dw[2] = {1, 1}, db[1] = {1};
  weft_output_t x = const_f32(g, "x", 2, dx, xs);
  weft_output_t y = const_f32(g, "y", 2, dx, ys);
  double w0 = 0.5, b0 = 0.0;
  weft_output_t wr = weft_variable(g, "W", const_f32(g, "W_init", 2, dw, &w0), &st);
  OK(st);
  weft_output_t br = weft_variable(g, "b", const_f32(g, "b_init", 1, db, &b0), &st);
  OK(st);
  g_assert_cmpint(weft_graph_num_trainable_variables(g), ==, 2);
  weft_output_t xw = weft_matmul(g, "xw", x, wr, false, false, &st);
  OK(st);
  weft_output_t pred = weft_binary(g, "AddV2", "pred", xw, br, &st);
  OK(st);
  weft_output_t loss = weft_mean_squared_error(g, y, pred, &st);
  OK(st);
  weft_node_t *gs = weft_train_global_step(g, &st);
  OK(st);
  g_assert_true(weft_train_global_step(g, &st) == gs);
  weft_node_t *train = NULL;
  OK(weft_minimize(g, loss, &o, NULL, 0, gs, &train));
  /* Slots and step are not trainable. */
  g_assert_cmpint(weft_graph_num_trainable_variables(g), ==, 2);
  weft_node_t *init = weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = session(g);
  const char *initn = weft_node_name(init), *trainn = weft_node_name(train);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &initn, 1));
  double loss0 = run_scalar(s, loss);

  sim_t m = {.w = w0, .b = b0, .b1p = o.beta1, .b2p = o.beta2};
  if (o.kind == WEFT_OPTIMIZER_ADAGRAD) m.s1[0] = m.s1[1] = o.initial_accumulator_value;
  if (o.kind == WEFT_OPTIMIZER_RMSPROP) m.s1[0] = m.s1[1] = 1.0;
  for (int step = 0; step < 3; step++) {
    OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &trainn, 1));
    sim_step(&m, &o, xs, ys);
    double w = run_named(s, "W"), b = run_named(s, "b");
    if (fabs(w - m.w) > 1e-5 * fmax(1, fabs(m.w)) || fabs(b - m.b) > 1e-5 * fmax(1, fabs(m.b)))
      g_error("optimizer %d step %d: W %.8g b %.8g, expected %.8g %.8g", o.kind, step + 1, w, b,
              m.w, m.b);
  }
  for (int step = 3; step < steps; step++)
    OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, &trainn, 1));
  double loss1 = run_scalar(s, loss);
  if (!(loss1 * factor < loss0))
    g_error("optimizer %d: loss %.6g -> %.6g after %d steps, wanted a factor %g", o.kind, loss0,
            loss1, steps, factor);
  g_assert_cmpfloat(run_named(s, "global_step"), ==, steps);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_optimizers(void) {
  train_linear(weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1), 200, 1000);
  weft_optimizer_spec_t mom = weft_optimizer_spec_default(WEFT_OPTIMIZER_MOMENTUM, 0.05);
  train_linear(mom, 200, 1000);
  mom.use_nesterov = true;
  train_linear(mom, 200, 1000);
  train_linear(weft_optimizer_spec_default(WEFT_OPTIMIZER_ADAGRAD, 0.5), 300, 1000);
  train_linear(weft_optimizer_spec_default(WEFT_OPTIMIZER_ADAM, 0.1), 300, 1000);
  weft_optimizer_spec_t rms = weft_optimizer_spec_default(WEFT_OPTIMIZER_RMSPROP, 0.01);
  rms.momentum = 0.5;
  train_linear(rms, 400, 100);
}

static void test_minimize_errors(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  double v = 1;
  weft_output_t c = const_f32(g, "c", 0, NULL, &v);
  weft_variable(g, "v", const_f32(g, "v_init", 0, NULL, &v), &st);
  OK(st);
  weft_output_t loss = weft_unary(g, "Square", "loss", c, &st);
  OK(st);
  weft_optimizer_spec_t o = weft_optimizer_spec_default(WEFT_OPTIMIZER_GRADIENT_DESCENT, 0.1);
  weft_node_t *train = NULL;
  weft_status_t *err = weft_minimize(g, loss, &o, NULL, 0, NULL, &train);
  g_assert_cmpint(weft_status_code(err), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(err), "no gradients provided"));
  g_assert_null(train);
  weft_status_free(err);
  weft_node_t *notvar = c.node;
  err = weft_minimize(g, loss, &o, &notvar, 1, NULL, &train);
  g_assert_cmpint(weft_status_code(err), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(err), "'c' is not a variable"));
  weft_status_free(err);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Replica device setter */

static const char *dev(weft_graph_t *g, const char *name) {
  weft_node_t *n = weft_graph_node(g, name);
  g_assert_nonnull(n);
  return weft_node_requested_device(n);
}

static weft_output_t var_of(weft_graph_t *g, const char *name, int rank, const int64_t *dims) {
  weft_status_t *st = NULL;
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  char *iname = g_strdup_printf("%s_init", name);
  weft_output_t init = weft_const(g, iname, t, &st);
  OK(st);
  g_free(iname);
  weft_tensor_unref(t);
  weft_output_t r = weft_variable(g, name, init, &st);
  OK(st);
  return r;
}

static void test_replica_device_setter(void) {
  weft_graph_t *g = weft_graph_new();
  weft_replica_device_setter_t *s =
      weft_replica_device_setter(g, 2, "/job:ps", "/job:worker/task:0", true,
                                 WEFT_PS_ROUND_ROBIN);
  weft_graph_push_device_fn(g, weft_replica_device_setter_fn, s);
  int64_t d[1] = {4};
  weft_output_t a = var_of(g, "a", 1, d);
  weft_output_t b = var_of(g, "b", 1, d);
  weft_graph_push_device(g, "/device:CPU:0");
  weft_output_t c = var_of(g, "c", 1, d);
  weft_status_t *st = NULL;
  weft_output_t sum = weft_binary(g, "AddV2", "sum", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_graph_push_device(g, "/job:worker/task:7");
  weft_output_t sum2 = weft_binary(g, "AddV2", "sum2", sum, c, &st);
  OK(st);
  weft_graph_pop_device(g);
  (void)sum2;
  g_assert_cmpstr(dev(g, "a"), ==, "/job:ps/task:0");
  g_assert_cmpstr(dev(g, "b"), ==, "/job:ps/task:1");
  g_assert_cmpstr(dev(g, "c"), ==, "/job:ps/task:0/device:CPU:0"); /* inner scope merged */
  g_assert_cmpstr(dev(g, "a_init"), ==, "/job:worker/task:0");
  g_assert_cmpstr(dev(g, "a/Assign"), ==, ""); /* colocated with a */
  g_assert_cmpstr(dev(g, "sum"), ==, "/job:worker/task:0/device:CPU:0");
  g_assert_cmpstr(dev(g, "sum2"), ==, "/job:worker/task:7"); /* inner scope wins */
  weft_graph_pop_device(g);
  weft_replica_device_setter_free(s);

  /* merge_devices false: an inner device scope decides alone. */
  s = weft_replica_device_setter(g, 2, "/job:ps", "/job:worker", false, WEFT_PS_ROUND_ROBIN);
  weft_graph_push_device_fn(g, weft_replica_device_setter_fn, s);
  weft_graph_push_device(g, "/device:CPU:0");
  weft_binary(g, "AddV2", "sum3", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_binary(g, "AddV2", "sum4", a, b, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_replica_device_setter_free(s);
  g_assert_cmpstr(dev(g, "sum3"), ==, "/device:CPU:0");
  g_assert_cmpstr(dev(g, "sum4"), ==, "/job:worker");

  /* Byte size: the big variable gets a task to itself. */
  weft_graph_t *g2 = weft_graph_new();
  s = weft_replica_device_setter(g2, 2, "/job:ps", "/job:worker", true, WEFT_PS_BY_BYTE_SIZE);
  weft_graph_push_device_fn(g2, weft_replica_device_setter_fn, s);
  int64_t big[2] = {100, 100}, small[1] = {10};
  var_of(g2, "big", 2, big);
  var_of(g2, "s1", 1, small);
  var_of(g2, "s2", 1, small);
  var_of(g2, "s3", 1, small);
  weft_graph_pop_device(g2);
  g_assert_cmpstr(dev(g2, "big"), ==, "/job:ps/task:0");
  g_assert_cmpstr(dev(g2, "s1"), ==, "/job:ps/task:1");
  g_assert_cmpstr(dev(g2, "s2"), ==, "/job:ps/task:1");
  g_assert_cmpstr(dev(g2, "s3"), ==, "/job:ps/task:1");
  g_assert_cmpuint(weft_replica_device_setter_ps_load(s, 0), ==, 40000);
  g_assert_cmpuint(weft_replica_device_setter_ps_load(s, 1), ==, 120);
  weft_replica_device_setter_free(s);

  /* Optimizer slots stay with their variable, whatever the round robin says. */
  weft_graph_t *g3 = weft_graph_new();
  s = weft_replica_device_setter(g3, 2, NULL, "/job:worker", true, WEFT_PS_ROUND_ROBIN);
  weft_graph_push_device_fn(g3, weft_replica_device_setter_fn, s);
  weft_output_t v1 = var_of(g3, "v1", 1, d);
  weft_output_t v2 = var_of(g3, "v2", 1, d);
  weft_output_t l = weft_binary(g3, "Mul", "l", v1, v2, &st);
  OK(st);
  weft_output_t loss = weft_mean_squared_error(g3, v1, l, &st);
  OK(st);
  weft_optimizer_spec_t o = weft_optimizer_spec_default(WEFT_OPTIMIZER_MOMENTUM, 0.1);
  weft_node_t *train = NULL;
  OK(weft_minimize(g3, loss, &o, NULL, 0, NULL, &train));
  var_of(g3, "v3", 1, d);
  weft_graph_pop_device(g3);
  g_assert_cmpstr(dev(g3, "v1"), ==, "/job:ps/task:0");
  g_assert_cmpstr(dev(g3, "v2"), ==, "/job:ps/task:1");
  g_assert_cmpstr(dev(g3, "v1/Momentum"), ==, "");
  g_assert_cmpstr(dev(g3, "v3"), ==, "/job:ps/task:0");
  weft_replica_device_setter_free(s);

  weft_cluster_spec_t *spec = NULL;
  OK(weft_cluster_spec_parse("ps=localhost:2222,localhost:2223,localhost:2224;"
                             "worker=localhost:2225", &spec));
  OK(weft_replica_device_setter_from_cluster(g3, spec, "/job:ps", NULL, true,
                                             WEFT_PS_ROUND_ROBIN, &s));
  weft_graph_push_device_fn(g3, weft_replica_device_setter_fn, s);
  for (int i = 0; i < 4; i++) {
    char *n = g_strdup_printf("w%d", i);
    var_of(g3, n, 1, d);
    char *want = g_strdup_printf("/job:ps/task:%d", i % 3);
    g_assert_cmpstr(dev(g3, n), ==, want);
    g_free(want);
    g_free(n);
  }
  weft_graph_pop_device(g3);
  weft_replica_device_setter_free(s);
  weft_cluster_spec_free(spec);
  OK(weft_cluster_spec_parse("worker=localhost:2225", &spec));
  weft_status_t *err =
      weft_replica_device_setter_from_cluster(g3, spec, NULL, NULL, true, WEFT_PS_ROUND_ROBIN, &s);
  g_assert_cmpint(weft_status_code(err), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(err), "no \"ps\" job"));
  g_assert_null(s);
  weft_status_free(err);
  weft_cluster_spec_free(spec);
  weft_graph_free(g);
  weft_graph_free(g2);
  weft_graph_free(g3);
}

/* A reduction over an input of unknown rank with axes fed at run time (TF 1.x programs reduce
 * tf.placeholder("float") without a shape): the gradient's kept shape is computed in the graph.
 * Mean's gradient is 1 / (number of elements reduced) everywhere. */
static void test_grad_reduction_unknown_rank(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_DOUBLE, -1, NULL, &st);
  OK(st);
  weft_output_t axes = weft_placeholder(g, "axes", WEFT_DT_INT32, 1, (int64_t[]){-1}, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "Mean", "y");
  weft_op_add_input(b, x);
  weft_op_add_input(b, axes);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  weft_output_t y = weft_out(n, 0), gr;
  OK(weft_gradients(g, &y, 1, &x, 1, NULL, &gr));
  weft_session_t *s = session(g);
  const int64_t xdims[2] = {2, 3};
  const double xv[6] = {1, 2, 3, 4, 5, 6};
  const struct {
    int n_axes;
    double axes[2];
    double expect;
  } cases[] = {{1, {-1}, 1.0 / 3}, {1, {0}, 1.0 / 2}, {2, {0, 1}, 1.0 / 6}, {2, {1, -2}, 1.0 / 6}};
  char *gn = tname(gr);
  const char *gnc = gn, *fn[2] = {"x", "axes"};
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    int64_t adims[1] = {cases[k].n_axes};
    weft_tensor_t *feeds[2] = {make_tensor(WEFT_DT_DOUBLE, 2, xdims, xv),
                               make_tensor(WEFT_DT_INT32, 1, adims, cases[k].axes)};
    weft_tensor_t *out = NULL;
    OK(weft_session_run(s, fn, feeds, 2, &gnc, &out, 1, NULL, 0));
    g_assert_cmpint(weft_tensor_rank(out), ==, 2);
    g_assert_cmpint(weft_tensor_num_elements(out), ==, 6);
    for (int i = 0; i < 6; i++)
      g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(out, i), cases[k].expect, 1e-12);
    weft_tensor_unref(out);
    weft_tensor_unref(feeds[0]);
    weft_tensor_unref(feeds[1]);
  }
  g_free(gn);
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/train/grad/unary", test_grad_unary);
  g_test_add_func("/train/grad/binary_broadcast", test_grad_binary);
  g_test_add_func("/train/grad/matmul", test_grad_matmul);
  g_test_add_func("/train/grad/batch_matmul", test_grad_batch_matmul);
  g_test_add_func("/train/grad/nn", test_grad_nn);
  g_test_add_func("/train/grad/reductions_shapes", test_grad_reductions_and_shapes);
  g_test_add_func("/train/grad/reduction_unknown_rank", test_grad_reduction_unknown_rank);
  g_test_add_func("/train/grad/composite_none_errors", test_grad_composite_and_none);
  g_test_add_func("/train/grad/program", test_grad_program);
  g_test_add_func("/train/losses", test_losses);
  g_test_add_func("/train/optimizers", test_optimizers);
  g_test_add_func("/train/minimize_errors", test_minimize_errors);
  g_test_add_func("/train/replica_device_setter", test_replica_device_setter);
  return g_test_run();
}
