/* Tests for the CPU plugin's kernels, through the public client API only: every kernel's numbers
 * against references computed here in double precision, with broadcasting, odd sizes (1, 7,
 * 1023), empty tensors, NaN/Inf propagation, the errors kernels report (integer division by zero,
 * bad shapes, out-of-range indices) with their codes and the node named, MatMul against a naive
 * loop, reductions over every axis, Cast between every pair of dtypes, seeded random ops
 * (reproducibility and moments), variables across runs, and the optimizer updates. */
#include <glib.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

#define OK(expr)                                                                  \
  do {                                                                            \
    weft_status_t *ok_st_ = (expr);                                               \
    if (ok_st_) g_error("%s:%d: %s: %s", __FILE__, __LINE__, #expr,               \
                        weft_status_message(ok_st_));                             \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Graph and session helpers */

/* A graph whose nodes are pinned to the CPU device: these tests are about the CPU plugin's
 * kernels, and other backends (a gpu-like one would win unpinned ops) have their own tests. */
static weft_graph_t *cpu_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  return g;
}

static int64_t numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  return n;
}

/* A host tensor copying `data` (numel * dtype size bytes). */
static weft_tensor_t *mk(weft_dtype_t dt, int rank, const int64_t *dims, const void *data) {
  weft_status_t *st = NULL;
  size_t nbytes = weft_dtype_size(dt) * (size_t)numel(rank, dims);
  weft_tensor_t *t = weft_tensor_new_from_data(dt, rank, dims, data, nbytes, &st);
  OK(st);
  g_assert_nonnull(t);
  return t;
}

/* A Const node holding t; takes over the caller's reference. */
static weft_output_t K(weft_graph_t *g, weft_tensor_t *t) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, NULL, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t Kt(weft_graph_t *g, weft_dtype_t dt, int rank, const int64_t *dims,
                        const void *data) {
  return K(g, mk(dt, rank, dims, data));
}

static weft_output_t Kf(weft_graph_t *g, int rank, const int64_t *dims, const float *v) {
  return Kt(g, WEFT_DT_FLOAT, rank, dims, v);
}

/* An int32 vector constant (n may be 0). */
static weft_output_t Kiv(weft_graph_t *g, int n, const int32_t *v) {
  int64_t d[1] = {n};
  return Kt(g, WEFT_DT_INT32, 1, d, v);
}

static weft_output_t Kis(weft_graph_t *g, int32_t v) {
  return Kt(g, WEFT_DT_INT32, 0, NULL, &v);
}

static weft_output_t Kfs(weft_graph_t *g, float v) { return Kt(g, WEFT_DT_FLOAT, 0, NULL, &v); }

static weft_op_builder_t *B(weft_graph_t *g, const char *op) { return weft_op_new(g, op, NULL); }

static weft_output_t fin(weft_op_builder_t *b) {
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return weft_out(n, 0);
}

static weft_output_t op1(weft_graph_t *g, const char *op, weft_output_t x) {
  weft_op_builder_t *b = B(g, op);
  weft_op_add_input(b, x);
  return fin(b);
}

static weft_output_t op2(weft_graph_t *g, const char *op, weft_output_t x, weft_output_t y) {
  weft_op_builder_t *b = B(g, op);
  weft_op_add_input(b, x);
  weft_op_add_input(b, y);
  return fin(b);
}

static weft_output_t op3(weft_graph_t *g, const char *op, weft_output_t x, weft_output_t y,
                         weft_output_t z) {
  weft_op_builder_t *b = B(g, op);
  weft_op_add_input(b, x);
  weft_op_add_input(b, y);
  weft_op_add_input(b, z);
  return fin(b);
}

static char *tensor_name(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

static weft_session_t *session_new(weft_graph_t *g) {
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  return s;
}

/* Runs the graph in a session once, fetching n outputs into out[] (the caller unrefs them). */
static weft_status_t *try_evaln(weft_graph_t *g, int n, const weft_output_t *outs,
                                weft_tensor_t **out) {
  weft_session_t *s = session_new(g);
  char **names = g_new0(char *, n + 1);
  for (int i = 0; i < n; i++) names[i] = tensor_name(outs[i]);
  weft_status_t *st = weft_session_run(s, NULL, NULL, 0, (const char *const *)names, out, n,
                                       NULL, 0);
  g_strfreev(names);
  weft_session_free(s);
  return st;
}

static weft_tensor_t *eval(weft_graph_t *g, weft_output_t o) {
  weft_tensor_t *t = NULL;
  OK(try_evaln(g, 1, &o, &t));
  return t;
}

static weft_status_t *try_eval(weft_graph_t *g, weft_output_t o) {
  weft_tensor_t *t = NULL;
  weft_status_t *st = try_evaln(g, 1, &o, &t);
  weft_tensor_unref(t);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Checks */

static double elem(weft_tensor_t *t, int64_t i) { return weft_tensor_get_double(t, i); }

static void check_shape(weft_tensor_t *t, int rank, const int64_t *dims) {
  g_assert_cmpint(weft_tensor_rank(t), ==, rank);
  for (int i = 0; i < rank; i++) g_assert_cmpint(weft_tensor_dims(t)[i], ==, dims[i]);
}

/* |v - ref| <= atol + rtol * |ref| everywhere; NaN must match NaN and infinities exactly. */
static void check_close(weft_tensor_t *t, const double *ref, int64_t n, double rtol, double atol,
                        const char *what) {
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  for (int64_t i = 0; i < n; i++) {
    double v = elem(t, i), r = ref[i];
    bool ok;
    if (isnan(r))
      ok = isnan(v);
    else if (isinf(r))
      ok = v == r;
    else
      ok = fabs(v - r) <= atol + rtol * fabs(r);
    if (!ok)
      g_error("%s: element %" G_GINT64_FORMAT " is %.17g, expected %.17g", what, i, v, r);
  }
}

static void check_values(weft_tensor_t *t, const double *ref, int64_t n, const char *what) {
  check_close(t, ref, n, 0, 0, what);
}

static void check_error(weft_status_t *st, weft_code_t code, const char *substring,
                        const char *substring2) {
  g_assert_nonnull(st);
  const char *msg = weft_status_message(st);
  if (weft_status_code(st) != code || strstr(msg, substring) == NULL ||
      (substring2 != NULL && strstr(msg, substring2) == NULL))
    g_error("expected %s with \"%s\"%s%s%s, got %s: %s", weft_code_name(code), substring,
            substring2 ? " and \"" : "", substring2 ? substring2 : "", substring2 ? "\"" : "",
            weft_code_name(weft_status_code(st)), msg);
  weft_status_free(st);
}

/* Deterministic test data in [lo, hi). */
static double pseudo(int64_t i, double lo, double hi) {
  uint32_t h = (uint32_t)(i * 2654435761u + 12345u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return lo + (hi - lo) * (double)(h % 100003u) / 100003.0;
}

/* ---------------------------------------------------------------------------------------------
 * Backend */

static void test_backend_device(void) {
  weft_plugins_load_default();
  const weft_plugin_record_t *cpu = NULL;
  for (int i = 0; i < weft_plugins_count(); i++) {
    const weft_plugin_record_t *r = weft_plugins_get(i);
    if (r->name != NULL && strcmp(r->name, "cpu") == 0) cpu = r;
  }
  g_assert_nonnull(cpu);
  g_assert_null(cpu->error);
  g_assert_cmpint(cpu->n_kernels, >=, 130);
  g_assert_nonnull(strstr(cpu->device_types, "CPU"));
  const weft_device_info_t *dev = NULL;
  for (int i = 0; i < weft_devices_count(); i++)
    if (strcmp(weft_devices_get(i)->device_type, "CPU") == 0) dev = weft_devices_get(i);
  g_assert_nonnull(dev);
  g_assert_cmpint(dev->ordinal, ==, 0);
  g_assert_false(dev->gpu_like);
  g_assert_cmpstr(dev->name, ==, "/job:localhost/replica:0/task:0/device:CPU:0");
  g_assert_nonnull(strstr(dev->description, "core"));
  g_assert_cmpuint(dev->memory_bytes, >, 1u << 20);
}

/* ---------------------------------------------------------------------------------------------
 * Const, Identity and friends */

static void test_const_string(void) {
  weft_graph_t *g = cpu_graph();
  const char *hello = "Hello, distributed TensorFlow!";
  weft_output_t c = K(g, weft_tensor_new_string(hello, strlen(hello)));
  weft_output_t id = op1(g, "Identity", c);
  weft_output_t outs[2] = {c, id};
  weft_tensor_t *t[2] = {NULL, NULL};
  OK(try_evaln(g, 2, outs, t));
  for (int i = 0; i < 2; i++) {
    g_assert_cmpint(weft_tensor_dtype(t[i]), ==, WEFT_DT_STRING);
    g_assert_cmpint(weft_tensor_rank(t[i]), ==, 0);
    const weft_string_t *s = weft_tensor_data(t[i]);
    g_assert_cmpmem(s->data, s->len, hello, strlen(hello));
    weft_tensor_unref(t[i]);
  }
  /* String Add concatenates, with broadcasting; Equal compares bytes. */
  int64_t d2[1] = {2};
  weft_tensor_t *pair = weft_tensor_new(WEFT_DT_STRING, 1, d2);
  OK(weft_tensor_set_string(pair, 0, "ab", 2));
  OK(weft_tensor_set_string(pair, 1, "", 0));
  weft_output_t p = K(g, pair);
  weft_output_t cat = op2(g, "Add", p, K(g, weft_tensor_new_string("xyz", 3)));
  weft_output_t eq = op2(g, "Equal", cat, K(g, weft_tensor_new_string("xyz", 3)));
  weft_tensor_t *tc = eval(g, cat), *te = eval(g, eq);
  const weft_string_t *cs = weft_tensor_data(tc);
  g_assert_cmpmem(cs[0].data, cs[0].len, "abxyz", 5);
  g_assert_cmpmem(cs[1].data, cs[1].len, "xyz", 3);
  double eref[2] = {0, 1};
  g_assert_cmpint(weft_tensor_dtype(te), ==, WEFT_DT_BOOL);
  check_values(te, eref, 2, "string Equal");
  weft_tensor_unref(tc);
  weft_tensor_unref(te);
  weft_graph_free(g);
}

static void test_const_every_dtype(void) {
  static const weft_dtype_t types[] = {
      WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_BOOL,
      WEFT_DT_UINT8, WEFT_DT_INT8,   WEFT_DT_INT16,  WEFT_DT_UINT16, WEFT_DT_UINT32,
      WEFT_DT_UINT64, WEFT_DT_HALF,  WEFT_DT_BFLOAT16,
  };
  weft_graph_t *g = cpu_graph();
  for (size_t k = 0; k < G_N_ELEMENTS(types); k++) {
    int64_t dims[2] = {2, 3};
    unsigned char bytes[6 * 8];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37 + k);
    if (types[k] == WEFT_DT_BOOL)
      for (size_t i = 0; i < 6; i++) bytes[i] = (unsigned char)(i & 1);
    if (types[k] == WEFT_DT_HALF || types[k] == WEFT_DT_BFLOAT16)
      for (size_t i = 0; i < 12; i += 2) bytes[i + 1] = 0x3c; /* finite values */
    weft_output_t c = Kt(g, types[k], 2, dims, bytes);
    weft_output_t outs[4] = {c, op1(g, "Identity", c), op1(g, "StopGradient", c),
                             op1(g, "PreventGradient", c)};
    weft_tensor_t *t[4] = {NULL};
    OK(try_evaln(g, 4, outs, t));
    for (int i = 0; i < 4; i++) {
      g_assert_cmpint(weft_tensor_dtype(t[i]), ==, types[k]);
      check_shape(t[i], 2, dims);
      g_assert_cmpmem(weft_tensor_data(t[i]), weft_tensor_nbytes(t[i]), bytes,
                      6 * weft_dtype_size(types[k]));
      weft_tensor_unref(t[i]);
    }
  }
  /* IdentityN forwards each input; NoOp runs as a target. */
  weft_output_t a = Kfs(g, 1.5f), b = Kis(g, 7);
  weft_op_builder_t *nb = B(g, "IdentityN");
  weft_output_t ab[2] = {a, b};
  weft_op_add_input_list(nb, ab, 2);
  weft_output_t idn = fin(nb);
  weft_output_t outs[2] = {idn, weft_out(idn.node, 1)};
  weft_tensor_t *t[2] = {NULL, NULL};
  OK(try_evaln(g, 2, outs, t));
  g_assert_cmpfloat(elem(t[0], 0), ==, 1.5);
  g_assert_cmpfloat(elem(t[1], 0), ==, 7);
  weft_tensor_unref(t[0]);
  weft_tensor_unref(t[1]);
  weft_graph_free(g);
}

static void test_placeholder_with_default(void) {
  weft_graph_t *g = cpu_graph();
  float v[3] = {1, 2, 3};
  int64_t d3[1] = {3};
  weft_op_builder_t *b = B(g, "PlaceholderWithDefault");
  weft_op_add_input(b, Kf(g, 1, d3, v));
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  weft_op_set_attr_shape(b, "shape", 1, d3);
  weft_output_t p = fin(b);
  weft_output_t y = op2(g, "Mul", p, Kfs(g, 2));
  weft_tensor_t *t = eval(g, y);
  double ref[3] = {2, 4, 6};
  check_values(t, ref, 3, "PlaceholderWithDefault unfed");
  weft_tensor_unref(t);
  /* Fed, it takes the fed value. */
  weft_session_t *s = session_new(g);
  float fv[3] = {5, 6, 7};
  weft_tensor_t *feed = mk(WEFT_DT_FLOAT, 1, d3, fv);
  char *pn = tensor_name(p), *yn = tensor_name(y);
  const char *feeds[1] = {pn}, *fetches[1] = {yn};
  OK(weft_session_run(s, feeds, &feed, 1, fetches, &t, 1, NULL, 0));
  double ref2[3] = {10, 12, 14};
  check_values(t, ref2, 3, "PlaceholderWithDefault fed");
  weft_tensor_unref(t);
  weft_tensor_unref(feed);
  g_free(pn);
  g_free(yn);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Unary elementwise */

typedef struct unary_case {
  const char *op;
  double (*ref)(double);
  double lo, hi;
} unary_case_t;

static double r_neg(double x) { return -x; }
static double r_square(double x) { return x * x; }
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double r_sign(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
static double r_recip(double x) { return 1.0 / x; }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_relu(double x) { return x < 0 ? 0 : x; }
static double r_relu6(double x) { return x < 0 ? 0 : (x > 6 ? 6 : x); }
static double r_elu(double x) { return x < 0 ? expm1(x) : x; }
static double r_selu(double x) {
  return x < 0 ? 1.0507009873554804934 * 1.6732632423543772848 * expm1(x)
               : 1.0507009873554804934 * x;
}
/* alpha is a float attribute: 0.2f widened, as TensorFlow does for float64. */
static double r_leaky(double x) { return x < 0 ? (double)0.2f * x : x; }
static double r_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }
static double r_softsign(double x) { return x / (1 + fabs(x)); }
static double r_round(double x) { return nearbyint(x); }

static const unary_case_t unary_cases[] = {
    {"Neg", r_neg, -5, 5},          {"Abs", fabs, -5, 5},
    {"Square", r_square, -5, 5},    {"Sqrt", sqrt, 0, 100},
    {"Rsqrt", r_rsqrt, 0.01, 100},  {"Exp", exp, -20, 20},
    {"Log", log, 0.001, 1000},      {"Log1p", log1p, -0.9, 100},
    {"Expm1", expm1, -5, 5},        {"Sign", r_sign, -3, 3},
    {"Reciprocal", r_recip, 0.1, 10}, {"Inv", r_recip, -10, -0.1},
    {"Floor", floor, -10, 10},
    {"Ceil", ceil, -10, 10},        {"Round", r_round, -10, 10},
    {"Sin", sin, -6, 6},            {"Cos", cos, -6, 6},
    {"Tan", tan, -1.4, 1.4},        {"Asin", asin, -1, 1},
    {"Acos", acos, -1, 1},          {"Atan", atan, -10, 10},
    {"Sinh", sinh, -5, 5},          {"Cosh", cosh, -5, 5},
    {"Asinh", asinh, -5, 5},        {"Acosh", acosh, 1, 10},
    {"Atanh", atanh, -0.99, 0.99},  {"Tanh", tanh, -10, 10},
    {"Sigmoid", r_sigmoid, -20, 20}, {"Erf", erf, -3, 3},
    {"Relu", r_relu, -5, 5},        {"Relu6", r_relu6, -3, 9},
    {"Elu", r_elu, -5, 5},          {"Selu", r_selu, -5, 5},
    {"LeakyRelu", r_leaky, -5, 5},  {"Softplus", r_softplus, -20, 20},
    {"Softsign", r_softsign, -5, 5},
};

static void test_unary_float(void) {
  static const int64_t sizes[] = {0, 1, 7, 1023};
  for (size_t c = 0; c < G_N_ELEMENTS(unary_cases); c++) {
    const unary_case_t *uc = &unary_cases[c];
    for (int dbl = 0; dbl < 2; dbl++) {
      weft_graph_t *g = cpu_graph();
      weft_output_t outs[G_N_ELEMENTS(sizes)];
      double *refs[G_N_ELEMENTS(sizes)];
      for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        int64_t n = sizes[k];
        float *xf = g_new(float, n + 1);
        double *xd = g_new(double, n + 1);
        refs[k] = g_new(double, n + 1);
        for (int64_t i = 0; i < n; i++) {
          xd[i] = pseudo(i + 17 * (int64_t)c, uc->lo, uc->hi);
          if (strcmp(uc->op, "Round") == 0 && i < 6) xd[i] = (double)i - 2.5; /* ties */
          xf[i] = (float)xd[i];
          if (!dbl) xd[i] = xf[i]; /* the reference sees the float's exact value */
          refs[k][i] = uc->ref(xd[i]);
        }
        weft_output_t x = dbl ? Kt(g, WEFT_DT_DOUBLE, 1, &n, xd) : Kf(g, 1, &n, xf);
        outs[k] = op1(g, uc->op, x);
        g_free(xf);
        g_free(xd);
      }
      weft_tensor_t *t[G_N_ELEMENTS(sizes)] = {NULL};
      OK(try_evaln(g, G_N_ELEMENTS(sizes), outs, t));
      for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        char *what = g_strdup_printf("%s %s[%" G_GINT64_FORMAT "]", uc->op,
                                     dbl ? "float64" : "float32", sizes[k]);
        g_assert_cmpint(weft_tensor_dtype(t[k]), ==, dbl ? WEFT_DT_DOUBLE : WEFT_DT_FLOAT);
        check_shape(t[k], 1, &sizes[k]);
        check_close(t[k], refs[k], sizes[k], dbl ? 1e-12 : 2e-6, dbl ? 1e-14 : 1e-6, what);
        g_free(what);
        g_free(refs[k]);
        weft_tensor_unref(t[k]);
      }
      weft_graph_free(g);
    }
  }
}

static void test_unary_int(void) {
  weft_graph_t *g = cpu_graph();
  int32_t v32[7] = {-7, -1, 0, 1, 5, INT32_MIN, INT32_MAX};
  int64_t v64[7] = {-7, -1, 0, 1, 5, INT64_MIN + 1, INT64_MAX};
  int64_t d7[1] = {7};
  weft_output_t x32 = Kt(g, WEFT_DT_INT32, 1, d7, v32), x64 = Kt(g, WEFT_DT_INT64, 1, d7, v64);
  weft_output_t outs[8] = {op1(g, "Neg", x32), op1(g, "Abs", x32), op1(g, "Sign", x32),
                           op1(g, "Relu", x32), op1(g, "Square", x64), op1(g, "Neg", x64),
                           op1(g, "Abs", x64), op1(g, "Relu6", x64)};
  weft_tensor_t *t[8] = {NULL};
  OK(try_evaln(g, 8, outs, t));
  /* INT32_MIN negates to itself (two's complement wrap), as in TensorFlow. */
  double neg32[7] = {7, 1, 0, -1, -5, INT32_MIN, -(double)INT32_MAX};
  double abs32[7] = {7, 1, 0, 1, 5, INT32_MIN, INT32_MAX};
  double sign32[7] = {-1, -1, 0, 1, 1, -1, 1};
  double relu32[7] = {0, 0, 0, 1, 5, 0, INT32_MAX};
  check_values(t[0], neg32, 7, "Neg int32");
  check_values(t[1], abs32, 7, "Abs int32");
  check_values(t[2], sign32, 7, "Sign int32");
  check_values(t[3], relu32, 7, "Relu int32");
  const int64_t *sq = weft_tensor_data(t[4]);
  g_assert_cmpint(sq[0], ==, 49);
  g_assert_cmpint(sq[4], ==, 25);
  g_assert_cmpint(weft_tensor_dtype(t[4]), ==, WEFT_DT_INT64);
  const int64_t *n64 = weft_tensor_data(t[5]), *a64 = weft_tensor_data(t[6]);
  g_assert_cmpint(n64[5], ==, INT64_MAX);
  g_assert_cmpint(a64[0], ==, 7);
  g_assert_cmpint(((const int64_t *)weft_tensor_data(t[7]))[4], ==, 5);
  g_assert_cmpint(((const int64_t *)weft_tensor_data(t[7]))[6], ==, 6);
  for (int i = 0; i < 8; i++) weft_tensor_unref(t[i]);
  weft_graph_free(g);
}

/* Distance in float32 steps between two finite floats. */
static int64_t ulp_distance(float a, float b) {
  int32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  if (x < 0) x = INT32_MIN - x;
  if (y < 0) y = INT32_MIN - y;
  return llabs((int64_t)x - y);
}

/* The float32 Sigmoid has its own exp (vectorised): within 3 ulp of the correctly rounded value
 * wherever that is a normal float, and below FLT_MIN never above it. */
static void test_sigmoid_accuracy(void) {
  enum { N = 400001 };
  float *v = g_new(float, N);
  for (int i = 0; i < N; i++) v[i] = -100.0f + 200.0f * (float)i / (N - 1);
  weft_graph_t *g = cpu_graph();
  int64_t dn[1] = {N};
  weft_tensor_t *t = eval(g, op1(g, "Sigmoid", Kf(g, 1, dn, v)));
  const float *y = weft_tensor_data(t);
  int64_t worst = 0;
  float worst_at = 0;
  for (int i = 0; i < N; i++) {
    float want = (float)(1.0 / (1.0 + exp(-(double)v[i])));
    if (want < FLT_MIN) {
      g_assert_cmpfloat(y[i], >=, 0);
      g_assert_cmpfloat(y[i], <, FLT_MIN);
      continue;
    }
    int64_t d = ulp_distance(y[i], want);
    if (d > worst) {
      worst = d;
      worst_at = v[i];
    }
  }
  g_test_message("Sigmoid: at most %" G_GINT64_FORMAT " ulp (at %g)", worst, worst_at);
  g_assert_cmpint(worst, <=, 3);
  weft_tensor_unref(t);
  weft_graph_free(g);
  g_free(v);
}

static void test_nan_inf(void) {
  weft_graph_t *g = cpu_graph();
  float v[6] = {NAN, INFINITY, -INFINITY, 0.0f, -1.0f, 2.0f};
  int64_t d6[1] = {6};
  weft_output_t x = Kf(g, 1, d6, v);
  weft_output_t outs[] = {
      op1(g, "Exp", x),      op1(g, "Relu", x),     op1(g, "Sqrt", x),
      op1(g, "IsNan", x),    op1(g, "IsInf", x),    op1(g, "IsFinite", x),
      op2(g, "Maximum", x, Kfs(g, 1)), op2(g, "Minimum", Kfs(g, 1), x),
      op2(g, "RealDiv", x, Kfs(g, 0)), op1(g, "Tanh", x), op1(g, "Sigmoid", x),
      op1(g, "Log", x),
  };
  enum { N = G_N_ELEMENTS(outs) };
  weft_tensor_t *t[N] = {NULL};
  OK(try_evaln(g, N, outs, t));
  double exp_ref[6] = {NAN, INFINITY, 0, 1, exp(-1.0), exp(2.0)};
  double relu_ref[6] = {NAN, INFINITY, 0, 0, 0, 2};
  double sqrt_ref[6] = {NAN, INFINITY, NAN, 0, NAN, sqrt(2.0)};
  double isnan_ref[6] = {1, 0, 0, 0, 0, 0};
  double isinf_ref[6] = {0, 1, 1, 0, 0, 0};
  double isfin_ref[6] = {0, 0, 0, 1, 1, 1};
  double max_ref[6] = {NAN, INFINITY, 1, 1, 1, 2};
  double min_ref[6] = {NAN, 1, -INFINITY, 0, -1, 1};
  double div_ref[6] = {NAN, INFINITY, -INFINITY, NAN, -INFINITY, INFINITY};
  double tanh_ref[6] = {NAN, 1, -1, 0, tanh(-1.0), tanh(2.0)};
  double sig_ref[6] = {NAN, 1, 0, 0.5, r_sigmoid(-1), r_sigmoid(2)};
  double log_ref[6] = {NAN, INFINITY, NAN, -INFINITY, NAN, log(2.0)};
  const double *refs[N] = {exp_ref, relu_ref, sqrt_ref, isnan_ref, isinf_ref, isfin_ref,
                           max_ref, min_ref,  div_ref,  tanh_ref,  sig_ref,   log_ref};
  for (int i = 0; i < N; i++) {
    check_close(t[i], refs[i], 6, 1e-6, 0, weft_node_op(outs[i].node));
    weft_tensor_unref(t[i]);
  }
  g_assert_cmpint(weft_node_output_dtype(outs[3].node, 0), ==, WEFT_DT_BOOL);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Binary elementwise with broadcasting */

typedef struct binary_case {
  const char *op;
  double (*ref)(double, double);
  double lo, hi;
  bool y_positive;
} binary_case_t;

static double b_add(double a, double b) { return a + b; }
static double b_sub(double a, double b) { return a - b; }
static double b_mul(double a, double b) { return a * b; }
static double b_div(double a, double b) { return a / b; }
static double b_max(double a, double b) { return a > b ? a : b; }
static double b_min(double a, double b) { return a < b ? a : b; }
static double b_sqdiff(double a, double b) { return (a - b) * (a - b); }
static double b_floordiv(double a, double b) { return floor(a / b); }
static double b_floordiv_f32(double a, double b) { return floor((float)(a / b)); }
static double b_floormod(double a, double b) {
  double r = fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static double b_mod(double a, double b) { return fmod(a, b); }
static double b_less(double a, double b) { return a < b; }
static double b_less_eq(double a, double b) { return a <= b; }
static double b_greater(double a, double b) { return a > b; }
static double b_greater_eq(double a, double b) { return a >= b; }
static double b_equal(double a, double b) { return a == b; }
static double b_not_equal(double a, double b) { return a != b; }
static double b_relu_grad(double g, double f) { return f > 0 ? g : 0; }
static double b_sigmoid_grad(double y, double dy) { return dy * y * (1 - y); }
static double b_tanh_grad(double y, double dy) { return dy * (1 - y * y); }

static const binary_case_t binary_cases[] = {
    {"AddV2", b_add, -10, 10, false},       {"Add", b_add, -10, 10, false},
    {"Sub", b_sub, -10, 10, false},         {"Mul", b_mul, -10, 10, false},
    {"RealDiv", b_div, -10, 10, true},      {"Div", b_div, -10, 10, true},
    {"Maximum", b_max, -10, 10, false},     {"Minimum", b_min, -10, 10, false},
    {"Pow", pow, 0.1, 3, false},            {"SquaredDifference", b_sqdiff, -10, 10, false},
    {"FloorDiv", b_floordiv, -10, 10, true}, {"FloorMod", b_floormod, -10, 10, true},
    {"Mod", b_mod, -10, 10, true},          {"Less", b_less, -3, 3, false},
    {"LessEqual", b_less_eq, -3, 3, false}, {"Greater", b_greater, -3, 3, false},
    {"GreaterEqual", b_greater_eq, -3, 3, false}, {"Equal", b_equal, -3, 3, false},
    {"NotEqual", b_not_equal, -3, 3, false}, {"ReluGrad", b_relu_grad, -3, 3, false},
    {"SigmoidGrad", b_sigmoid_grad, -1, 1, false}, {"TanhGrad", b_tanh_grad, -1, 1, false},
};

typedef struct bshape {
  int rx;
  int64_t dx[4];
  int ry;
  int64_t dy[4];
} bshape_t;

static const bshape_t bshapes[] = {
    {1, {1023}, 1, {1023}},      /* same shape */
    {0, {0}, 1, {1023}},         /* scalar op vector */
    {2, {7, 1}, 0, {0}},         /* vector op scalar */
    {2, {2, 3}, 1, {3}},         /* row broadcast */
    {2, {2, 1}, 2, {1, 3}},      /* outer product */
    {3, {4, 1, 3}, 2, {2, 1}},   /* both sides */
    {3, {3, 1, 5}, 3, {3, 4, 1}},
    {2, {0, 3}, 1, {3}},         /* empty */
    {1, {1}, 1, {1}},
    {4, {2, 3, 1, 7}, 3, {3, 5, 1}},
};

/* out[i] = f(x[ix], y[iy]) with numpy broadcasting, computed with explicit indices. */
static void broadcast_ref(const bshape_t *s, const double *x, const double *y,
                          double (*f)(double, double), double *out, int *out_rank,
                          int64_t *out_dims) {
  int r = s->rx > s->ry ? s->rx : s->ry;
  int64_t px[4], py[4];
  for (int d = 0; d < r; d++) {
    px[d] = d < r - s->rx ? 1 : s->dx[d - (r - s->rx)];
    py[d] = d < r - s->ry ? 1 : s->dy[d - (r - s->ry)];
    out_dims[d] = px[d] == 1 ? py[d] : px[d];
  }
  *out_rank = r;
  int64_t n = numel(r, out_dims);
  for (int64_t i = 0; i < n; i++) {
    int64_t rem = i, ix = 0, iy = 0, sx = 1, sy = 1;
    for (int d = r - 1; d >= 0; d--) {
      int64_t c = rem % out_dims[d];
      rem /= out_dims[d];
      ix += (px[d] == 1 ? 0 : c) * sx;
      iy += (py[d] == 1 ? 0 : c) * sy;
      sx *= px[d];
      sy *= py[d];
    }
    out[i] = f(x[ix], y[iy]);
  }
}

static void test_binary_broadcast(void) {
  static const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                        WEFT_DT_INT64};
  for (size_t c = 0; c < G_N_ELEMENTS(binary_cases); c++) {
    const binary_case_t *bc = &binary_cases[c];
    bool float_only = strcmp(bc->op, "RealDiv") == 0 || strcmp(bc->op, "ReluGrad") == 0 ||
                      strcmp(bc->op, "SigmoidGrad") == 0 || strcmp(bc->op, "TanhGrad") == 0;
    bool int_div = strcmp(bc->op, "Div") == 0;
    bool is_bool = bc->ref == b_less || bc->ref == b_less_eq || bc->ref == b_greater ||
                   bc->ref == b_greater_eq || bc->ref == b_equal || bc->ref == b_not_equal;
    for (size_t k = 0; k < G_N_ELEMENTS(dtypes); k++) {
      weft_dtype_t dt = dtypes[k];
      bool is_int = dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64;
      if (is_int && float_only) continue;
      weft_graph_t *g = cpu_graph();
      /* The activation gradients need equal shapes (TensorFlow's rule), the rest broadcast. */
      bool same_only = strstr(bc->op, "Grad") != NULL;
      weft_output_t outs[G_N_ELEMENTS(bshapes)];
      double *refs[G_N_ELEMENTS(bshapes)];
      int ranks[G_N_ELEMENTS(bshapes)];
      int64_t dims[G_N_ELEMENTS(bshapes)][4];
      size_t n_cases = 0;
      for (size_t si = 0; si < G_N_ELEMENTS(bshapes); si++) {
        const bshape_t *sh = &bshapes[si];
        if (same_only && (sh->rx != sh->ry || memcmp(sh->dx, sh->dy, sizeof sh->dx) != 0))
          continue;
        size_t s = n_cases++;
        int64_t nx = numel(sh->rx, sh->dx), ny = numel(sh->ry, sh->dy);
        double *x = g_new(double, nx + 1), *y = g_new(double, ny + 1);
        void *bx = g_malloc(8 * (size_t)(nx + 1)), *by = g_malloc(8 * (size_t)(ny + 1));
        for (int pass = 0; pass < 2; pass++) {
          int64_t n = pass ? ny : nx;
          double *v = pass ? y : x;
          void *raw = pass ? by : bx;
          for (int64_t i = 0; i < n; i++) {
            double val = pseudo(i * 3 + pass + 11 * (int64_t)s, bc->lo, bc->hi);
            if (is_int) val = round(val);
            if (pass && bc->y_positive && fabs(val) < 0.5) val = is_int ? 3 : 0.75;
            if (is_bool && pass && i % 3 == 0 && nx > 0) val = x[i % nx]; /* some ties */
            switch (dt) {
              case WEFT_DT_FLOAT: ((float *)raw)[i] = (float)val; val = (float)val; break;
              case WEFT_DT_DOUBLE: ((double *)raw)[i] = val; break;
              case WEFT_DT_INT32: ((int32_t *)raw)[i] = (int32_t)val; break;
              default: ((int64_t *)raw)[i] = (int64_t)val; break;
            }
            v[i] = val;
          }
        }
        refs[s] = g_new(double, 4096);
        double (*f)(double, double) = bc->ref;
        if (is_int && int_div) f = b_div; /* truncated below */
        broadcast_ref(sh, x, y, f, refs[s], &ranks[s], dims[s]);
        int64_t no = numel(ranks[s], dims[s]);
        if (is_int && int_div)
          for (int64_t i = 0; i < no; i++) refs[s][i] = trunc(refs[s][i]);
        if (dt == WEFT_DT_FLOAT && bc->ref == b_floordiv) /* floor of the float quotient */
          broadcast_ref(sh, x, y, b_floordiv_f32, refs[s], &ranks[s], dims[s]);
        outs[s] = op2(g, bc->op, Kt(g, dt, sh->rx, sh->dx, bx), Kt(g, dt, sh->ry, sh->dy, by));
        g_free(x);
        g_free(y);
        g_free(bx);
        g_free(by);
      }
      weft_tensor_t *t[G_N_ELEMENTS(bshapes)] = {NULL};
      OK(try_evaln(g, (int)n_cases, outs, t));
      for (size_t s = 0; s < n_cases; s++) {
        char *what = g_strdup_printf("%s %s shape case %zu", bc->op, weft_dtype_name(dt), s);
        check_shape(t[s], ranks[s], dims[s]);
        g_assert_cmpint(weft_tensor_dtype(t[s]), ==, is_bool ? WEFT_DT_BOOL : dt);
        double rtol = dt == WEFT_DT_FLOAT ? 2e-6 : 1e-13;
        if (dt == WEFT_DT_FLOAT && (strcmp(bc->op, "FloorMod") == 0 || strcmp(bc->op, "Mod") == 0))
          rtol = 1e-5;
        check_close(t[s], refs[s], numel(ranks[s], dims[s]), is_int ? 0 : rtol,
                    is_int ? 0 : (dt == WEFT_DT_FLOAT ? 1e-5 : 1e-12), what);
        g_free(what);
        g_free(refs[s]);
        weft_tensor_unref(t[s]);
      }
      weft_graph_free(g);
    }
  }
}

static void test_integer_division(void) {
  weft_graph_t *g = cpu_graph();
  int32_t a[8] = {7, -7, 7, -7, 0, INT32_MIN, 5, -5};
  int32_t b[8] = {2, 2, -2, -2, 3, -1, 5, 3};
  int64_t d8[1] = {8};
  weft_output_t x = Kt(g, WEFT_DT_INT32, 1, d8, a), y = Kt(g, WEFT_DT_INT32, 1, d8, b);
  weft_output_t outs[3] = {op2(g, "Div", x, y), op2(g, "FloorDiv", x, y),
                           op2(g, "FloorMod", x, y)};
  weft_tensor_t *t[3] = {NULL};
  OK(try_evaln(g, 3, outs, t));
  double div_ref[8] = {3, -3, -3, 3, 0, INT32_MIN, 1, -1}; /* truncation; MIN / -1 wraps */
  double fdiv_ref[8] = {3, -4, -4, 3, 0, INT32_MIN, 1, -2};
  double fmod_ref[8] = {1, 1, -1, -1, 0, 0, 0, 1};
  check_values(t[0], div_ref, 8, "Div int32");
  check_values(t[1], fdiv_ref, 8, "FloorDiv int32");
  check_values(t[2], fmod_ref, 8, "FloorMod int32");
  for (int i = 0; i < 3; i++) weft_tensor_unref(t[i]);
  /* Division by zero is an error for integers, naming the node... */
  int32_t z[2] = {1, 0};
  int64_t d2[1] = {2};
  weft_op_builder_t *bd = weft_op_new(g, "Div", "int_div_by_zero");
  weft_op_add_input(bd, Kt(g, WEFT_DT_INT32, 1, d2, z));
  weft_op_add_input(bd, Kt(g, WEFT_DT_INT32, 1, d2, z));
  weft_output_t bad = fin(bd);
  check_error(try_eval(g, bad), WEFT_INVALID_ARGUMENT, "Integer division by zero",
              "int_div_by_zero");
  int64_t z64 = 0, one64 = 5;
  weft_output_t bad2 = op2(g, "FloorMod", Kt(g, WEFT_DT_INT64, 0, NULL, &one64),
                           Kt(g, WEFT_DT_INT64, 0, NULL, &z64));
  check_error(try_eval(g, bad2), WEFT_INVALID_ARGUMENT, "Integer division by zero", NULL);
  /* ...and IEEE for floats. */
  float fz[2] = {1, 0};
  weft_output_t fdiv = op2(g, "Div", Kf(g, 1, d2, fz), Kfs(g, 0));
  weft_tensor_t *tf = eval(g, fdiv);
  double fref[2] = {INFINITY, NAN};
  check_values(tf, fref, 2, "float Div by zero");
  weft_tensor_unref(tf);
  /* Integer Pow: exact, wrapping; negative exponents are refused. */
  int32_t pb[3] = {3, -2, 2}, pe[3] = {4, 3, 31};
  weft_output_t pw = op2(g, "Pow", Kt(g, WEFT_DT_INT32, 1, (int64_t[]){3}, pb),
                         Kt(g, WEFT_DT_INT32, 1, (int64_t[]){3}, pe));
  weft_tensor_t *tp = eval(g, pw);
  double pref[3] = {81, -8, INT32_MIN};
  check_values(tp, pref, 3, "Pow int32");
  weft_tensor_unref(tp);
  int32_t neg = -1;
  weft_output_t pw2 = op2(g, "Pow", Kis(g, 2), Kt(g, WEFT_DT_INT32, 0, NULL, &neg));
  check_error(try_eval(g, pw2), WEFT_INVALID_ARGUMENT, "negative integer powers", NULL);
  weft_graph_free(g);
}

static void test_incompatible_shapes(void) {
  weft_graph_t *g = cpu_graph();
  float a[3] = {1, 2, 3}, b[2] = {1, 2};
  int64_t d3[1] = {3}, d2[1] = {2};
  /* Shapes only known at run time (placeholders of unknown shape), so the kernel checks. */
  weft_status_t *st = NULL;
  weft_output_t px = weft_placeholder(g, "px", WEFT_DT_FLOAT, -1, NULL, &st);
  OK(st);
  weft_output_t py = weft_placeholder(g, "py", WEFT_DT_FLOAT, -1, NULL, &st);
  OK(st);
  weft_op_builder_t *bb = weft_op_new(g, "AddV2", "bad_add");
  weft_op_add_input(bb, px);
  weft_op_add_input(bb, py);
  weft_output_t sum = fin(bb);
  weft_op_builder_t *be = weft_op_new(g, "Equal", "lenient_equal");
  weft_op_add_input(be, px);
  weft_op_add_input(be, py);
  weft_op_set_attr_bool(be, "incompatible_shape_error", false);
  weft_output_t eq = fin(be);
  weft_session_t *s = session_new(g);
  weft_tensor_t *feeds[2] = {mk(WEFT_DT_FLOAT, 1, d3, a), mk(WEFT_DT_FLOAT, 1, d2, b)};
  const char *feed_names[2] = {"px", "py"};
  char *sn = tensor_name(sum), *en = tensor_name(eq);
  const char *fetch1[1] = {sn}, *fetch2[1] = {en};
  weft_tensor_t *out = NULL;
  check_error(weft_session_run(s, feed_names, feeds, 2, fetch1, &out, 1, NULL, 0),
              WEFT_INVALID_ARGUMENT, "Incompatible shapes: [3] vs. [2]", "bad_add");
  OK(weft_session_run(s, feed_names, feeds, 2, fetch2, &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_rank(out), ==, 0);
  g_assert_cmpfloat(elem(out, 0), ==, 0);
  weft_tensor_unref(out);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  g_free(sn);
  g_free(en);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_logic_select(void) {
  weft_graph_t *g = cpu_graph();
  uint8_t p[4] = {1, 1, 0, 0}, q[4] = {1, 0, 1, 0};
  int64_t d4[1] = {4};
  weft_output_t bp = Kt(g, WEFT_DT_BOOL, 1, d4, p), bq = Kt(g, WEFT_DT_BOOL, 1, d4, q);
  weft_output_t outs[4] = {op2(g, "LogicalAnd", bp, bq), op2(g, "LogicalOr", bp, bq),
                           op1(g, "LogicalNot", bp), op2(g, "Equal", bp, bq)};
  weft_tensor_t *t[4] = {NULL};
  OK(try_evaln(g, 4, outs, t));
  double and_ref[4] = {1, 0, 0, 0}, or_ref[4] = {1, 1, 1, 0}, not_ref[4] = {0, 0, 1, 1};
  double eq_ref[4] = {1, 0, 0, 1};
  check_values(t[0], and_ref, 4, "LogicalAnd");
  check_values(t[1], or_ref, 4, "LogicalOr");
  check_values(t[2], not_ref, 4, "LogicalNot");
  check_values(t[3], eq_ref, 4, "Equal bool");
  for (int i = 0; i < 4; i++) weft_tensor_unref(t[i]);

  /* Select: same-shape condition, vector condition selecting rows, scalar condition. */
  float tv[6] = {1, 2, 3, 4, 5, 6}, ev[6] = {-1, -2, -3, -4, -5, -6};
  int64_t d23[2] = {2, 3}, d2[1] = {2};
  uint8_t c6[6] = {1, 0, 1, 0, 0, 1}, c2[2] = {0, 1}, c1 = 1;
  weft_output_t tt = Kf(g, 2, d23, tv), ee = Kf(g, 2, d23, ev);
  weft_output_t s_outs[5] = {
      op3(g, "Select", Kt(g, WEFT_DT_BOOL, 2, d23, c6), tt, ee),
      op3(g, "Select", Kt(g, WEFT_DT_BOOL, 1, d2, c2), tt, ee),
      op3(g, "Select", Kt(g, WEFT_DT_BOOL, 0, NULL, &c1), tt, ee),
      /* SelectV2 broadcasts all three: [2,1] condition, [3] then, scalar else. */
      op3(g, "SelectV2", Kt(g, WEFT_DT_BOOL, 2, (int64_t[]){2, 1}, c2),
          Kf(g, 1, (int64_t[]){3}, tv), Kfs(g, 9)),
      op3(g, "SelectV2", Kt(g, WEFT_DT_BOOL, 2, d23, c6), tt, Kfs(g, 0)),
  };
  weft_tensor_t *st[5] = {NULL};
  OK(try_evaln(g, 5, s_outs, st));
  double r0[6] = {1, -2, 3, -4, -5, 6}, r1[6] = {-1, -2, -3, 4, 5, 6};
  double r3[6] = {9, 9, 9, 1, 2, 3}, r4[6] = {1, 0, 3, 0, 0, 6};
  check_values(st[0], r0, 6, "Select elementwise");
  check_values(st[1], r1, 6, "Select rows");
  double r2[6] = {1, 2, 3, 4, 5, 6};
  check_values(st[2], r2, 6, "Select scalar");
  check_shape(st[3], 2, d23);
  check_values(st[3], r3, 6, "SelectV2 broadcast");
  check_values(st[4], r4, 6, "SelectV2 scalar else");
  for (int i = 0; i < 5; i++) weft_tensor_unref(st[i]);

  /* Select on strings. */
  weft_tensor_t *ts = weft_tensor_new(WEFT_DT_STRING, 1, d2), *es = weft_tensor_new(WEFT_DT_STRING, 1, d2);
  OK(weft_tensor_set_string(ts, 0, "t0", 2));
  OK(weft_tensor_set_string(ts, 1, "t1", 2));
  OK(weft_tensor_set_string(es, 0, "e0", 2));
  OK(weft_tensor_set_string(es, 1, "e1", 2));
  weft_output_t sel = op3(g, "Select", Kt(g, WEFT_DT_BOOL, 1, d2, c2), K(g, ts), K(g, es));
  weft_tensor_t *so = eval(g, sel);
  const weft_string_t *ss = weft_tensor_data(so);
  g_assert_cmpmem(ss[0].data, ss[0].len, "e0", 2);
  g_assert_cmpmem(ss[1].data, ss[1].len, "t1", 2);
  weft_tensor_unref(so);
  weft_graph_free(g);
}

static void test_addn_clip(void) {
  weft_graph_t *g = cpu_graph();
  int64_t n = 1023;
  float *a = g_new(float, n), *b = g_new(float, n), *c = g_new(float, n);
  double *ref = g_new(double, n), *cref = g_new(double, n);
  for (int64_t i = 0; i < n; i++) {
    a[i] = (float)pseudo(i, -5, 5);
    b[i] = (float)pseudo(i + 1000, -5, 5);
    c[i] = (float)pseudo(i + 2000, -5, 5);
    ref[i] = (double)a[i] + b[i] + c[i];
    cref[i] = a[i] < -1 ? -1 : (a[i] > 2 ? 2 : a[i]);
  }
  weft_output_t in[3] = {Kf(g, 1, &n, a), Kf(g, 1, &n, b), Kf(g, 1, &n, c)};
  weft_op_builder_t *bb = B(g, "AddN");
  weft_op_add_input_list(bb, in, 3);
  weft_output_t sum = fin(bb);
  weft_output_t clip = op3(g, "ClipByValue", in[0], Kfs(g, -1), Kfs(g, 2));
  weft_tensor_t *ts = eval(g, sum), *tc = eval(g, clip);
  check_close(ts, ref, n, 1e-6, 1e-6, "AddN");
  check_values(tc, cref, n, "ClipByValue");
  weft_tensor_unref(ts);
  weft_tensor_unref(tc);
  int32_t iv[3] = {1, 2, 3};
  weft_output_t ii[2] = {Kiv(g, 3, iv), Kiv(g, 3, iv)};
  bb = B(g, "AddN");
  weft_op_add_input_list(bb, ii, 2);
  weft_tensor_t *ti = eval(g, fin(bb));
  double iref[3] = {2, 4, 6};
  check_values(ti, iref, 3, "AddN int32");
  weft_tensor_unref(ti);
  g_free(a);
  g_free(b);
  g_free(c);
  g_free(ref);
  g_free(cref);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * MatMul */

static void naive_matmul(const double *a, const double *b, int64_t m, int64_t k, int64_t n,
                         bool ta, bool tb, double *c) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++)
        s += (ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s;
    }
}

/* Every size {m, k, n} of sizes[0..n_sizes) with the four transposes, in each of the dtypes, in
 * one session per dtype with intra_threads intra-op threads (0: the default). */
static void matmul_cases(const int64_t (*sizes)[3], size_t n_sizes, const weft_dtype_t *dtypes,
                         size_t n_dtypes, int intra_threads) {
  enum { MAX_CASES = 64 };
  g_assert_cmpuint(n_sizes * 4, <=, MAX_CASES);
  for (size_t di = 0; di < n_dtypes; di++) {
    weft_dtype_t dt = dtypes[di];
    bool is_int = dt == WEFT_DT_INT32 || dt == WEFT_DT_INT64;
    weft_graph_t *g = cpu_graph();
    const int CASES = (int)n_sizes * 4;
    weft_output_t outs[MAX_CASES];
    double *refs[MAX_CASES];
    int64_t shapes[MAX_CASES][2];
    double atol_scale[MAX_CASES]; /* rounding grows with the inner dimension */
    int c = 0;
    for (size_t si = 0; si < n_sizes; si++) {
      int64_t m = sizes[si][0], k = sizes[si][1], n = sizes[si][2];
      for (int tr = 0; tr < 4; tr++, c++) {
        bool ta = tr & 1, tb = tr & 2;
        double *a = g_new(double, m * k + 1), *b = g_new(double, k * n + 1);
        void *ra = g_malloc(8 * (size_t)(m * k + 1)), *rb = g_malloc(8 * (size_t)(k * n + 1));
        for (int pass = 0; pass < 2; pass++) {
          int64_t cnt = pass ? k * n : m * k;
          for (int64_t i = 0; i < cnt; i++) {
            double v = pseudo(i * 7 + pass + (int64_t)si, -2, 2);
            if (is_int) v = round(v * 3);
            if (dt == WEFT_DT_FLOAT) v = (float)v;
            (pass ? b : a)[i] = v;
            void *raw = pass ? rb : ra;
            switch (dt) {
              case WEFT_DT_FLOAT: ((float *)raw)[i] = (float)v; break;
              case WEFT_DT_DOUBLE: ((double *)raw)[i] = v; break;
              case WEFT_DT_INT32: ((int32_t *)raw)[i] = (int32_t)v; break;
              default: ((int64_t *)raw)[i] = (int64_t)v; break;
            }
          }
        }
        int64_t da[2] = {ta ? k : m, ta ? m : k}, db[2] = {tb ? n : k, tb ? k : n};
        weft_status_t *st = NULL;
        outs[c] = weft_matmul(g, NULL, Kt(g, dt, 2, da, ra), Kt(g, dt, 2, db, rb), ta, tb, &st);
        OK(st);
        refs[c] = g_new(double, m * n + 1);
        naive_matmul(a, b, m, k, n, ta, tb, refs[c]);
        shapes[c][0] = m;
        shapes[c][1] = n;
        atol_scale[c] = k > 64 ? (double)k / 64 : 1;
        g_free(a);
        g_free(b);
        g_free(ra);
        g_free(rb);
      }
    }
    weft_tensor_t *t[MAX_CASES] = {NULL};
    weft_session_options_t *opts = weft_session_options_new();
    if (intra_threads > 0) weft_session_options_set_intra_op_threads(opts, intra_threads);
    weft_status_t *st = NULL;
    weft_session_t *s = weft_session_new(g, opts, &st);
    OK(st);
    weft_session_options_free(opts);
    char **names = g_new0(char *, CASES + 1);
    for (int i = 0; i < CASES; i++) names[i] = tensor_name(outs[i]);
    OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)names, t, CASES, NULL, 0));
    g_strfreev(names);
    weft_session_free(s);
    for (int i = 0; i < CASES; i++) {
      char *what = g_strdup_printf("MatMul %s %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                                   " transpose_a=%d transpose_b=%d intra_threads=%d",
                                   weft_dtype_name(dt), shapes[i][0], shapes[i][1], i & 1,
                                   (i & 2) != 0, intra_threads);
      check_shape(t[i], 2, shapes[i]);
      check_close(t[i], refs[i], shapes[i][0] * shapes[i][1],
                  dt == WEFT_DT_FLOAT ? 1e-5 : (is_int ? 0 : 1e-12),
                  (dt == WEFT_DT_FLOAT ? 1e-4 : (is_int ? 0 : 1e-12)) * atol_scale[i], what);
      g_free(what);
      g_free(refs[i]);
      weft_tensor_unref(t[i]);
    }
    weft_graph_free(g);
  }
}

static void test_matmul(void) {
  /* {m, k, n}; the last is above the size from which a float GEMM is cut into blocks over the
   * intra-op pool (2^24 multiply-adds, plugins/cpu/cpu_matmul.c), the others below it. */
  static const int64_t sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {4, 0, 3}, {0, 3, 2},
                                     {128, 64, 96}, {512, 64, 520}};
  static const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                        WEFT_DT_INT64};
  matmul_cases(sizes, G_N_ELEMENTS(sizes), dtypes, G_N_ELEMENTS(dtypes), 0);
}

/* GEMMs of 2^24 multiply-adds or more, cut into blocks over the pool: by rows (m >= n), by
 * columns, one row (GEMV blocks of columns), blocks that do not divide evenly (257 rows), over 2
 * and 3 threads; one too narrow to cut (16 columns, 17 rows). */
static void test_matmul_split(void) {
  static const int64_t sizes[][3] = {
      {520, 180, 180}, {180, 180, 520}, {1, 4097, 4097}, {257, 256, 256}, {17, 61681, 16}};
  static const weft_dtype_t f32[] = {WEFT_DT_FLOAT}, f64[] = {WEFT_DT_DOUBLE};
  matmul_cases(sizes, G_N_ELEMENTS(sizes), f32, 1, 2);
  matmul_cases(sizes, G_N_ELEMENTS(sizes), f32, 1, 3);
  matmul_cases(sizes, G_N_ELEMENTS(sizes), f64, 1, 3);
}

/* fc_layers_frozen's shapes (784-256-256-10 at batch 64..256): 64x784x256 cut by columns into
 * two blocks at two threads, three (96, 96, 64) at three and four at five (a block keeps at least
 * 2.5 M multiply-adds); 256x784x256 and 129x784x256 into three uneven blocks (96, 96, 64) of
 * rows and of columns for three threads; 257x256x256 into five at five; 256x256x10 stays on one
 * thread. Every split agrees with the double reference whichever way it went. */
static void test_matmul_split_fc(void) {
  static const int64_t sizes[][3] = {
      {64, 784, 256}, {256, 784, 256}, {129, 784, 256}, {256, 256, 10}, {257, 256, 256}};
  static const weft_dtype_t f32[] = {WEFT_DT_FLOAT};
  matmul_cases(sizes, G_N_ELEMENTS(sizes), f32, 1, 2);
  matmul_cases(sizes, G_N_ELEMENTS(sizes), f32, 1, 3);
  matmul_cases(sizes, G_N_ELEMENTS(sizes), f32, 1, 5);
}

static void test_batch_matmul(void) {
  weft_graph_t *g = cpu_graph();
  /* x [2,1,3,4] (adj_x: stored [2,1,4,3]) times y [3,4,5] broadcasts to [2,3,3,5]. */
  int64_t dx[4] = {2, 1, 4, 3}, dy[3] = {3, 4, 5};
  int64_t nx = numel(4, dx), ny = numel(3, dy);
  double *x = g_new(double, nx), *y = g_new(double, ny);
  for (int64_t i = 0; i < nx; i++) x[i] = pseudo(i, -1, 1);
  for (int64_t i = 0; i < ny; i++) y[i] = pseudo(i + 99, -1, 1);
  weft_op_builder_t *b = B(g, "BatchMatMulV2");
  weft_op_add_input(b, Kt(g, WEFT_DT_DOUBLE, 4, dx, x));
  weft_op_add_input(b, Kt(g, WEFT_DT_DOUBLE, 3, dy, y));
  weft_op_set_attr_bool(b, "adj_x", true);
  weft_tensor_t *t = eval(g, fin(b));
  int64_t dout[4] = {2, 3, 3, 5};
  check_shape(t, 4, dout);
  double ref[90];
  for (int bi = 0; bi < 2; bi++)
    for (int bj = 0; bj < 3; bj++)
      naive_matmul(x + bi * 12, y + bj * 20, 3, 4, 5, true, false, ref + (bi * 3 + bj) * 15);
  check_close(t, ref, 90, 1e-12, 1e-12, "BatchMatMulV2 broadcast adj_x");
  weft_tensor_unref(t);
  /* Twenty float32 GEMMs of 33x40x27, broadcast: big enough that the intra-op pool shares the
   * batches out, each GEMM small enough for one OpenBLAS thread. */
  int64_t fdx[4] = {4, 1, 33, 40}, fdy[3] = {5, 27, 40};
  int64_t fnx = numel(4, fdx), fny = numel(3, fdy);
  float *fx = g_new(float, fnx), *fy = g_new(float, fny);
  double *dxv = g_new(double, fnx), *dyv = g_new(double, fny);
  for (int64_t i = 0; i < fnx; i++) dxv[i] = fx[i] = (float)pseudo(i + 7, -1, 1);
  for (int64_t i = 0; i < fny; i++) dyv[i] = fy[i] = (float)pseudo(i + 301, -1, 1);
  b = B(g, "BatchMatMulV2");
  weft_op_add_input(b, Kf(g, 4, fdx, fx));
  weft_op_add_input(b, Kf(g, 3, fdy, fy));
  weft_op_set_attr_bool(b, "adj_y", true);
  t = eval(g, fin(b));
  int64_t fdout[4] = {4, 5, 33, 27};
  check_shape(t, 4, fdout);
  double *fref = g_new(double, 4 * 5 * 33 * 27);
  for (int bi = 0; bi < 4; bi++)
    for (int bj = 0; bj < 5; bj++)
      naive_matmul(dxv + bi * 33 * 40, dyv + bj * 27 * 40, 33, 40, 27, false, true,
                   fref + (bi * 5 + bj) * 33 * 27);
  check_close(t, fref, 4 * 5 * 33 * 27, 1e-5, 1e-5, "BatchMatMulV2 float32 broadcast adj_y");
  weft_tensor_unref(t);
  g_free(fref);
  g_free(fx);
  g_free(fy);
  g_free(dxv);
  g_free(dyv);
  /* A size mismatch names the node and both shapes. */
  float f6[6] = {0};
  weft_status_t *st = NULL;
  weft_output_t bad = weft_matmul(g, "bad_matmul", Kf(g, 2, (int64_t[]){2, 3}, f6),
                                  Kf(g, 2, (int64_t[]){2, 3}, f6), false, false, &st);
  if (st != NULL) /* shape inference saw it first */
    check_error(st, WEFT_INVALID_ARGUMENT, "bad_matmul", NULL);
  else
    check_error(try_eval(g, bad), WEFT_INVALID_ARGUMENT, "[2,3]", "bad_matmul");
  g_free(x);
  g_free(y);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD } rkind_t;
static const char *const rnames[] = {"Sum", "Mean", "Max", "Min", "Prod"};

/* Reference reduction of x[3,4,5] over the axes in mask. */
static void reduce_ref(const double *x, const int64_t *dims, int mask, rkind_t kind, double *out,
                       int64_t *out_n) {
  int64_t on = 1;
  for (int d = 0; d < 3; d++)
    if (!(mask & (1 << d))) on *= dims[d];
  for (int64_t o = 0; o < on; o++)
    out[o] = kind == R_SUM || kind == R_MEAN ? 0 : (kind == R_PROD ? 1 : (kind == R_MAX ? -INFINITY : INFINITY));
  int64_t count = numel(3, dims) / on;
  for (int64_t i = 0; i < dims[0]; i++)
    for (int64_t j = 0; j < dims[1]; j++)
      for (int64_t k = 0; k < dims[2]; k++) {
        int64_t idx[3] = {i, j, k}, o = 0;
        for (int d = 0; d < 3; d++)
          if (!(mask & (1 << d))) o = o * dims[d] + idx[d];
        double v = x[(i * dims[1] + j) * dims[2] + k];
        switch (kind) {
          case R_SUM: case R_MEAN: out[o] += v; break;
          case R_PROD: out[o] *= v; break;
          case R_MAX: out[o] = v > out[o] ? v : out[o]; break;
          case R_MIN: out[o] = v < out[o] ? v : out[o]; break;
        }
      }
  if (kind == R_MEAN)
    for (int64_t o = 0; o < on; o++) out[o] /= (double)count;
  *out_n = on;
}

static void test_reductions(void) {
  int64_t dims[3] = {3, 4, 5};
  double x[60];
  float xf[60];
  int32_t xi[60];
  int32_t xp[60]; /* for Prod: small magnitudes so that 60 factors stay exact */
  for (int i = 0; i < 60; i++) {
    xi[i] = (int32_t)round(pseudo(i, -3, 3));
    xp[i] = i % 13 == 0 ? 2 : (i % 5 == 0 ? -1 : 1);
    x[i] = pseudo(i, 0.5, 1.5);
    xf[i] = (float)x[i];
    x[i] = xf[i];
  }
  for (int kind = 0; kind < 5; kind++)
    for (int as_int = 0; as_int < 2; as_int++) {
      weft_graph_t *g = cpu_graph();
      const int32_t *ints = kind == R_PROD ? xp : xi;
      weft_output_t in = as_int ? Kt(g, WEFT_DT_INT32, 3, dims, ints) : Kf(g, 3, dims, xf);
      double xv[60];
      for (int i = 0; i < 60; i++) xv[i] = as_int ? ints[i] : x[i];
      /* Every subset of axes (mask), written both with positive and with negative axes, with
       * and without keep_dims; mask 0 (an empty axes list) is the identity. */
      weft_output_t outs[32];
      int masks[32], keeps[32], n = 0;
      for (int mask = 0; mask < 8; mask++)
        for (int keep = 0; keep < 2; keep++) {
          int32_t axes[3];
          int na = 0;
          for (int d = 0; d < 3; d++)
            if (mask & (1 << d)) axes[na++] = keep ? d - 3 : d;
          weft_op_builder_t *b = B(g, rnames[kind]);
          weft_op_add_input(b, in);
          weft_op_add_input(b, Kiv(g, na, axes));
          weft_op_set_attr_bool(b, "keep_dims", keep);
          outs[n] = fin(b);
          masks[n] = mask;
          keeps[n] = keep;
          n++;
        }
      weft_tensor_t *t[32] = {NULL};
      OK(try_evaln(g, n, outs, t));
      for (int i = 0; i < n; i++) {
        double ref[60];
        int64_t rn = 0;
        reduce_ref(xv, dims, masks[i], (rkind_t)kind, ref, &rn);
        if (as_int && kind == R_MEAN)
          for (int64_t o = 0; o < rn; o++) ref[o] = trunc(ref[o]);
        int64_t odims[3];
        int orank = 0;
        for (int d = 0; d < 3; d++) {
          if (!(masks[i] & (1 << d))) odims[orank++] = dims[d];
          else if (keeps[i]) odims[orank++] = 1;
        }
        char *what = g_strdup_printf("%s %s axes-mask %d keep_dims %d", rnames[kind],
                                     as_int ? "int32" : "float32", masks[i], keeps[i]);
        check_shape(t[i], orank, odims);
        check_close(t[i], ref, rn, as_int ? 0 : 1e-6, 0, what);
        g_free(what);
        weft_tensor_unref(t[i]);
      }
      weft_graph_free(g);
    }
}

static void test_reduction_edges(void) {
  weft_graph_t *g = cpu_graph();
  /* Reducing an empty tensor gives each reduction's identity. */
  int64_t d03[2] = {0, 3};
  weft_output_t empty = Kt(g, WEFT_DT_FLOAT, 2, d03, NULL);
  weft_output_t outs[5];
  for (int k = 0; k < 5; k++) {
    weft_op_builder_t *b = B(g, rnames[k]);
    weft_op_add_input(b, empty);
    weft_op_add_input(b, Kis(g, 0));
    outs[k] = fin(b);
  }
  weft_tensor_t *t[5] = {NULL};
  OK(try_evaln(g, 5, outs, t));
  double idents[5] = {0, NAN, -INFINITY, INFINITY, 1};
  for (int k = 0; k < 5; k++) {
    double ref[3] = {idents[k], idents[k], idents[k]};
    int64_t d3[1] = {3};
    check_shape(t[k], 1, d3);
    check_values(t[k], ref, 3, rnames[k]);
    weft_tensor_unref(t[k]);
  }
  /* All / Any, including over an empty axis. */
  uint8_t bv[6] = {1, 1, 0, 1, 1, 1};
  int64_t d23[2] = {2, 3};
  weft_output_t bin = Kt(g, WEFT_DT_BOOL, 2, d23, bv);
  weft_output_t lo[4] = {op2(g, "All", bin, Kis(g, 1)), op2(g, "Any", bin, Kis(g, 1)),
                         op2(g, "All", Kt(g, WEFT_DT_BOOL, 2, d03, NULL), Kis(g, 0)),
                         op2(g, "Any", Kt(g, WEFT_DT_BOOL, 2, d03, NULL), Kis(g, 0))};
  weft_tensor_t *tl[4] = {NULL};
  OK(try_evaln(g, 4, lo, tl));
  double all_ref[2] = {0, 1}, any_ref[2] = {1, 1}, e_all[3] = {1, 1, 1}, e_any[3] = {0, 0, 0};
  check_values(tl[0], all_ref, 2, "All");
  check_values(tl[1], any_ref, 2, "Any");
  check_values(tl[2], e_all, 3, "All empty");
  check_values(tl[3], e_any, 3, "Any empty");
  for (int k = 0; k < 4; k++) weft_tensor_unref(tl[k]);
  /* An axis out of range names the node and the axis. */
  float f6[6] = {0};
  weft_op_builder_t *b = weft_op_new(g, "Sum", "bad_sum");
  weft_op_add_input(b, Kf(g, 2, d23, f6));
  weft_op_add_input(b, Kis(g, 2));
  weft_node_t *bad = NULL;
  weft_status_t *st = weft_op_finish(b, &bad);
  if (st == NULL)
    check_error(try_eval(g, weft_out(bad, 0)), WEFT_INVALID_ARGUMENT, "Invalid reduction dimension",
                "2");
  else
    check_error(st, WEFT_INVALID_ARGUMENT, "2", NULL); /* caught by shape inference instead */
  /* NaN propagates through Max and Sum. */
  float nanv[4] = {1, NAN, 3, 2};
  int64_t d4[1] = {4};
  weft_output_t nx = Kf(g, 1, d4, nanv);
  weft_output_t nn[2] = {op2(g, "Max", nx, Kis(g, 0)), op2(g, "Sum", nx, Kis(g, 0))};
  weft_tensor_t *tn[2] = {NULL};
  OK(try_evaln(g, 2, nn, tn));
  g_assert_true(isnan(elem(tn[0], 0)));
  g_assert_true(isnan(elem(tn[1], 0)));
  weft_tensor_unref(tn[0]);
  weft_tensor_unref(tn[1]);
  weft_graph_free(g);
}

static void test_argmax_cumsum(void) {
  weft_graph_t *g = cpu_graph();
  float v[12] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
  int64_t d34[2] = {3, 4};
  weft_output_t x = Kf(g, 2, d34, v);
  weft_op_builder_t *b = B(g, "ArgMax");
  weft_op_add_input(b, x);
  weft_op_add_input(b, Kis(g, 1));
  weft_op_set_attr_type(b, "output_type", WEFT_DT_INT32);
  weft_output_t am1 = fin(b);
  weft_output_t am0 = op2(g, "ArgMax", x, Kis(g, 0));
  weft_output_t an0 = op2(g, "ArgMin", x, Kis(g, -2));
  weft_output_t cs = op2(g, "Cumsum", x, Kis(g, 1));
  b = B(g, "Cumsum");
  weft_op_add_input(b, x);
  weft_op_add_input(b, Kis(g, 0));
  weft_op_set_attr_bool(b, "exclusive", true);
  weft_op_set_attr_bool(b, "reverse", true);
  weft_output_t cs_er = fin(b);
  weft_output_t outs[5] = {am1, am0, an0, cs, cs_er};
  weft_tensor_t *t[5] = {NULL};
  OK(try_evaln(g, 5, outs, t));
  g_assert_cmpint(weft_tensor_dtype(t[0]), ==, WEFT_DT_INT32);
  g_assert_cmpint(weft_tensor_dtype(t[1]), ==, WEFT_DT_INT64);
  double am1_ref[3] = {2, 1, 3}, am0_ref[4] = {1, 1, 2, 2}, an0_ref[4] = {0, 0, 1, 0};
  double cs_ref[12] = {3, 4, 8, 9, 5, 14, 16, 22, 5, 8, 13, 21};
  double cser_ref[12] = {10, 12, 7, 14, 5, 3, 5, 8, 0, 0, 0, 0};
  check_values(t[0], am1_ref, 3, "ArgMax axis 1");
  check_values(t[1], am0_ref, 4, "ArgMax axis 0");
  check_values(t[2], an0_ref, 4, "ArgMin axis -2");
  check_values(t[3], cs_ref, 12, "Cumsum");
  check_values(t[4], cser_ref, 12, "Cumsum exclusive reverse");
  for (int i = 0; i < 5; i++) weft_tensor_unref(t[i]);
  weft_graph_free(g);
}

/* Sums of 16M floats: the kernels accumulate in double, so even a sum whose float running total
 * would have lost digits long ago stays within 1e-6 relative. */
static void test_large_sums(void) {
  weft_graph_t *g = cpu_graph();
  int64_t n = 16 * 1024 * 1024;
  weft_status_t *st = NULL;
  weft_output_t x = weft_placeholder(g, "big", WEFT_DT_FLOAT, 1, &n, &st);
  OK(st);
  weft_output_t sum = op2(g, "Sum", x, Kis(g, 0));
  weft_output_t mean = op2(g, "Mean", x, Kis(g, 0));
  weft_output_t mx = op2(g, "Max", x, Kis(g, 0));
  /* The same data as [4096, 4096], reduced over the leading and over the last axis. */
  int32_t shape[2] = {4096, 4096};
  weft_output_t m2 = op2(g, "Reshape", x, Kiv(g, 2, shape));
  weft_output_t cols = op2(g, "Sum", m2, Kis(g, 0));
  weft_output_t rows = op2(g, "Sum", m2, Kis(g, 1));
  weft_tensor_t *feed = weft_tensor_new(WEFT_DT_FLOAT, 1, &n);
  float *xv = weft_tensor_data(feed);
  double total = 0, maxv = -INFINITY;
  double *colref = g_new0(double, 4096), *rowref = g_new0(double, 4096);
  for (int64_t i = 0; i < n; i++) {
    xv[i] = 0.5f + (float)(i % 1000) * 0.001f + (float)(i % 7) * 1e-7f;
    total += xv[i];
    colref[i % 4096] += xv[i];
    rowref[i / 4096] += xv[i];
    if (xv[i] > maxv) maxv = xv[i];
  }
  weft_session_t *s = session_new(g);
  char *names[5] = {tensor_name(sum), tensor_name(mean), tensor_name(mx), tensor_name(cols),
                    tensor_name(rows)};
  const char *feed_names[1] = {"big"};
  weft_tensor_t *out[5] = {NULL};
  gint64 t0 = g_get_monotonic_time();
  OK(weft_session_run(s, feed_names, &feed, 1, (const char *const *)names, out, 5, NULL, 0));
  g_test_message("16M-element reductions took %.1f ms",
                 (double)(g_get_monotonic_time() - t0) / 1000.0);
  g_assert_nonnull(strstr(weft_session_node_device(s, weft_node_name(sum.node)), "CPU:0"));
  double sref[1] = {total}, mref[1] = {total / (double)n}, xref[1] = {maxv};
  check_close(out[0], sref, 1, 1e-6, 0, "Sum of 16M floats");
  check_close(out[1], mref, 1, 1e-6, 0, "Mean of 16M floats");
  check_values(out[2], xref, 1, "Max of 16M floats");
  check_close(out[3], colref, 4096, 1e-6, 0, "Sum over the leading axis");
  check_close(out[4], rowref, 4096, 1e-6, 0, "Sum over the last axis");
  for (int i = 0; i < 5; i++) {
    weft_tensor_unref(out[i]);
    g_free(names[i]);
  }
  g_free(colref);
  g_free(rowref);
  weft_tensor_unref(feed);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Neural-network kernels */

static void test_bias_add(void) {
  weft_graph_t *g = cpu_graph();
  int64_t d[4] = {2, 3, 2, 2}; /* NCHW: C = 3; NHWC: C = 2 */
  float x[24], bc[3] = {10, 20, 30}, bh[2] = {100, 200};
  for (int i = 0; i < 24; i++) x[i] = (float)i;
  weft_output_t xin = Kf(g, 4, d, x);
  weft_op_builder_t *b = B(g, "BiasAdd");
  weft_op_add_input(b, xin);
  weft_op_add_input(b, Kf(g, 1, (int64_t[]){3}, bc));
  weft_op_set_attr_string(b, "data_format", "NCHW");
  weft_output_t nchw = fin(b);
  weft_output_t nhwc = op2(g, "BiasAdd", xin, Kf(g, 1, (int64_t[]){2}, bh));
  b = B(g, "BiasAddGrad");
  weft_op_add_input(b, xin);
  weft_op_set_attr_string(b, "data_format", "NCHW");
  weft_output_t g_nchw = fin(b);
  weft_output_t g_nhwc = op1(g, "BiasAddGrad", xin);
  weft_output_t outs[4] = {nchw, nhwc, g_nchw, g_nhwc};
  weft_tensor_t *t[4] = {NULL};
  OK(try_evaln(g, 4, outs, t));
  double r0[24], r1[24], r2[3] = {0}, r3[2] = {0};
  for (int i = 0; i < 24; i++) {
    int c = (i / 4) % 3, h = i % 2;
    r0[i] = x[i] + bc[c];
    r1[i] = x[i] + bh[h];
    r2[c] += x[i];
    r3[h] += x[i];
  }
  check_values(t[0], r0, 24, "BiasAdd NCHW");
  check_values(t[1], r1, 24, "BiasAdd NHWC");
  check_values(t[2], r2, 3, "BiasAddGrad NCHW");
  check_values(t[3], r3, 2, "BiasAddGrad NHWC");
  for (int i = 0; i < 4; i++) weft_tensor_unref(t[i]);
  weft_graph_free(g);
}

static void test_softmax_xent(void) {
  weft_graph_t *g = cpu_graph();
  /* Large logits must not overflow: softmax subtracts the row maximum. */
  float logits[2][5] = {{1, 2, 3, 4, 5}, {1000, 1001, 999, -1000, 1000}};
  float labels[2][5] = {{0, 0, 0.5f, 0.5f, 0}, {0, 1, 0, 0, 0}};
  int64_t d25[2] = {2, 5};
  weft_output_t lx = Kf(g, 2, d25, &logits[0][0]), ll = Kf(g, 2, d25, &labels[0][0]);
  weft_output_t sm = op1(g, "Softmax", lx), lsm = op1(g, "LogSoftmax", lx);
  weft_output_t xent = op2(g, "SoftmaxCrossEntropyWithLogits", lx, ll);
  int32_t sparse_labels[2] = {3, 1};
  weft_output_t sxent = op2(g, "SparseSoftmaxCrossEntropyWithLogits", lx,
                            Kiv(g, 2, sparse_labels));
  weft_output_t l2 = op1(g, "L2Loss", lx);
  weft_output_t outs[7] = {sm, lsm, xent, weft_out(xent.node, 1), sxent, weft_out(sxent.node, 1),
                           l2};
  weft_tensor_t *t[7] = {NULL};
  OK(try_evaln(g, 7, outs, t));
  double sm_ref[10], lsm_ref[10], loss[2] = {0, 0}, bp[10], sloss[2], sbp[10], l2ref = 0;
  for (int r = 0; r < 2; r++) {
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < 5; i++) mx = logits[r][i] > mx ? logits[r][i] : mx;
    for (int i = 0; i < 5; i++) s += exp(logits[r][i] - mx);
    for (int i = 0; i < 5; i++) {
      double lp = logits[r][i] - mx - log(s);
      sm_ref[r * 5 + i] = exp(lp);
      lsm_ref[r * 5 + i] = lp;
      loss[r] -= labels[r][i] * lp;
      bp[r * 5 + i] = exp(lp) - labels[r][i];
      sbp[r * 5 + i] = exp(lp) - (i == sparse_labels[r] ? 1 : 0);
      l2ref += (double)logits[r][i] * logits[r][i] / 2;
    }
    sloss[r] = -lsm_ref[r * 5 + sparse_labels[r]];
  }
  check_close(t[0], sm_ref, 10, 1e-6, 1e-7, "Softmax");
  check_close(t[1], lsm_ref, 10, 1e-6, 1e-5, "LogSoftmax");
  check_close(t[2], loss, 2, 1e-6, 1e-6, "SoftmaxCrossEntropyWithLogits loss");
  check_close(t[3], bp, 10, 1e-6, 1e-7, "SoftmaxCrossEntropyWithLogits backprop");
  check_close(t[4], sloss, 2, 1e-6, 1e-6, "SparseSoftmaxCrossEntropyWithLogits loss");
  check_close(t[5], sbp, 10, 1e-6, 1e-7, "SparseSoftmaxCrossEntropyWithLogits backprop");
  double l2r[1] = {l2ref};
  check_close(t[6], l2r, 1, 1e-6, 0, "L2Loss");
  for (int i = 0; i < 7; i++) weft_tensor_unref(t[i]);
  /* A label outside [0, classes) is an error naming the value. */
  int32_t bad_labels[2] = {0, 5};
  weft_output_t bad = op2(g, "SparseSoftmaxCrossEntropyWithLogits", lx, Kiv(g, 2, bad_labels));
  check_error(try_eval(g, bad), WEFT_INVALID_ARGUMENT, "Received a label value of 5",
              "[0, 5)");
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Array kernels */

static void test_reshape_shapes(void) {
  weft_graph_t *g = cpu_graph();
  float v[12];
  for (int i = 0; i < 12; i++) v[i] = (float)i;
  int64_t d12[1] = {12};
  weft_output_t x = Kf(g, 1, d12, v);
  int32_t s1[3] = {2, -1, 3};
  weft_output_t r = op2(g, "Reshape", x, Kiv(g, 3, s1));
  weft_output_t shape = op1(g, "Shape", r), size = op1(g, "Size", r), rank = op1(g, "Rank", r);
  weft_output_t ex = op2(g, "ExpandDims", r, Kis(g, -1));
  weft_output_t sq = op1(g, "Squeeze", op2(g, "ExpandDims", r, Kis(g, 0)));
  weft_op_builder_t *b = B(g, "ShapeN");
  weft_output_t pair[2] = {x, r};
  weft_op_add_input_list(b, pair, 2);
  weft_op_set_attr_type(b, "out_type", WEFT_DT_INT64);
  weft_output_t shn = fin(b);
  weft_output_t outs[8] = {r, shape, size, rank, ex, sq, shn, weft_out(shn.node, 1)};
  weft_tensor_t *t[8] = {NULL};
  OK(try_evaln(g, 8, outs, t));
  int64_t d223[3] = {2, 2, 3}, d2231[4] = {2, 2, 3, 1};
  check_shape(t[0], 3, d223);
  double vals[12];
  for (int i = 0; i < 12; i++) vals[i] = i;
  check_values(t[0], vals, 12, "Reshape");
  double sref[3] = {2, 2, 3}, nref[1] = {12}, rref[1] = {3}, s0ref[1] = {12};
  g_assert_cmpint(weft_tensor_dtype(t[1]), ==, WEFT_DT_INT32);
  check_values(t[1], sref, 3, "Shape");
  check_values(t[2], nref, 1, "Size");
  check_values(t[3], rref, 1, "Rank");
  check_shape(t[4], 4, d2231);
  check_shape(t[5], 3, d223);
  g_assert_cmpint(weft_tensor_dtype(t[6]), ==, WEFT_DT_INT64);
  check_values(t[6], s0ref, 1, "ShapeN 0");
  check_values(t[7], sref, 3, "ShapeN 1");
  for (int i = 0; i < 8; i++) weft_tensor_unref(t[i]);
  /* A bad element count is an error naming the node; so is a bad squeeze. */
  weft_status_t *st = NULL;
  weft_output_t ph = weft_placeholder(g, "shape_ph", WEFT_DT_INT32, 1, (int64_t[]){2}, &st);
  OK(st);
  weft_op_builder_t *rb = weft_op_new(g, "Reshape", "bad_reshape");
  weft_op_add_input(rb, x);
  weft_op_add_input(rb, ph);
  weft_output_t bad = fin(rb);
  weft_session_t *s = session_new(g);
  int32_t sv[2] = {5, 2};
  weft_tensor_t *feed = mk(WEFT_DT_INT32, 1, (int64_t[]){2}, sv);
  const char *fn[1] = {"shape_ph"};
  char *bn = tensor_name(bad);
  const char *fetch[1] = {bn};
  weft_tensor_t *out = NULL;
  check_error(weft_session_run(s, fn, &feed, 1, fetch, &out, 1, NULL, 0), WEFT_INVALID_ARGUMENT,
              "12 values", "bad_reshape");
  sv[0] = -1;
  sv[1] = 5;
  weft_tensor_t *feed2 = mk(WEFT_DT_INT32, 1, (int64_t[]){2}, sv);
  check_error(weft_session_run(s, fn, &feed2, 1, fetch, &out, 1, NULL, 0), WEFT_INVALID_ARGUMENT,
              "multiple of 5", "bad_reshape");
  g_free(bn);
  weft_tensor_unref(feed);
  weft_tensor_unref(feed2);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_transpose_concat_pack(void) {
  weft_graph_t *g = cpu_graph();
  int64_t d234[3] = {2, 3, 4};
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  weft_output_t x = Kt(g, WEFT_DT_DOUBLE, 3, d234, v);
  int32_t perm[3] = {2, 0, 1};
  weft_output_t tr = op2(g, "Transpose", x, Kiv(g, 3, perm));
  weft_op_builder_t *b = B(g, "ConcatV2");
  weft_output_t parts[3] = {x, x, x};
  weft_op_add_input_list(b, parts, 2);
  weft_op_add_input(b, Kis(g, -1));
  weft_output_t cat = fin(b);
  b = B(g, "Pack");
  weft_op_add_input_list(b, parts, 3);
  weft_op_set_attr_int(b, "axis", 1);
  weft_output_t pack = fin(b);
  b = B(g, "Unpack");
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "num", 3);
  weft_op_set_attr_int(b, "axis", 1);
  weft_output_t un = fin(b);
  weft_output_t outs[4] = {tr, cat, pack, weft_out(un.node, 2)};
  weft_tensor_t *t[4] = {NULL};
  OK(try_evaln(g, 4, outs, t));
  double rt[24], rc[48], rp[72], ru[8];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        double val = v[(i * 3 + j) * 4 + k];
        rt[(k * 2 + i) * 3 + j] = val;
        rc[(i * 3 + j) * 8 + k] = val;
        rc[(i * 3 + j) * 8 + 4 + k] = val;
        for (int p = 0; p < 3; p++) rp[((i * 3 + p) * 3 + j) * 4 + k] = val;
        if (j == 2) ru[i * 4 + k] = val;
      }
  int64_t dt[3] = {4, 2, 3}, dc[3] = {2, 3, 8}, dp[4] = {2, 3, 3, 4}, du[2] = {2, 4};
  check_shape(t[0], 3, dt);
  check_values(t[0], rt, 24, "Transpose");
  check_shape(t[1], 3, dc);
  check_values(t[1], rc, 48, "ConcatV2 axis -1");
  check_shape(t[2], 4, dp);
  check_values(t[2], rp, 72, "Pack axis 1");
  check_shape(t[3], 2, du);
  check_values(t[3], ru, 8, "Unpack axis 1");
  for (int i = 0; i < 4; i++) weft_tensor_unref(t[i]);
  /* A big 2-D transpose. */
  int64_t dbig[2] = {513, 1031};
  int64_t nb = numel(2, dbig);
  float *bv = g_new(float, nb);
  double *bref = g_new(double, nb);
  for (int64_t i = 0; i < nb; i++) bv[i] = (float)i;
  for (int64_t i = 0; i < 513; i++)
    for (int64_t j = 0; j < 1031; j++) bref[j * 513 + i] = bv[i * 1031 + j];
  int32_t p2[2] = {1, 0};
  weft_tensor_t *tb = eval(g, op2(g, "Transpose", Kf(g, 2, dbig, bv), Kiv(g, 2, p2)));
  check_values(tb, bref, nb, "Transpose 513x1031");
  weft_tensor_unref(tb);
  g_free(bv);
  g_free(bref);
  /* Concat of strings. */
  weft_output_t s2[2] = {K(g, weft_tensor_new_string("a", 1)), K(g, weft_tensor_new_string("b", 1))};
  b = B(g, "Pack");
  weft_op_add_input_list(b, s2, 2);
  weft_tensor_t *ts = eval(g, fin(b));
  const weft_string_t *ss = weft_tensor_data(ts);
  g_assert_cmpmem(ss[0].data, ss[0].len, "a", 1);
  g_assert_cmpmem(ss[1].data, ss[1].len, "b", 1);
  weft_tensor_unref(ts);
  weft_graph_free(g);
}

static void test_slices(void) {
  weft_graph_t *g = cpu_graph();
  int64_t d[3] = {3, 4, 5};
  int32_t v[60];
  for (int i = 0; i < 60; i++) v[i] = i;
  weft_output_t x = Kt(g, WEFT_DT_INT32, 3, d, v);
  int32_t begin[3] = {1, 0, 2}, size[3] = {2, -1, 2};
  weft_output_t sl = op3(g, "Slice", x, Kiv(g, 3, begin), Kiv(g, 3, size));
  /* x[::-1, 1:3, ...] with a negative stride and an implicit ellipsis */
  struct {
    int n;
    int32_t b[4], e[4], s[4];
    int bm, em, elm, nam, sam;
    int rank;
    int64_t dims[4];
  } cases[] = {
      {2, {0, 1}, {0, 3}, {-1, 1}, 1, 1, 0, 0, 0, 3, {3, 2, 5}},
      /* x[1, :, -1] : shrink axes 0 and 2 */
      {3, {1, 0, -1}, {2, 0, 0}, {1, 1, 1}, 0, 2, 0, 0, 5, 1, {4}},
      /* x[..., 1:5:2] with an explicit ellipsis */
      {2, {0, 1}, {0, 5}, {1, 2}, 0, 0, 1, 0, 0, 3, {3, 4, 2}},
      /* x[:, newaxis, 2:-1] */
      {3, {0, 0, 2}, {0, 0, -1}, {1, 1, 1}, 1, 1, 0, 2, 0, 4, {3, 1, 1, 5}},
      /* x[2:0:-1, ::-2, 7:] out-of-range begin clamps to an empty slice */
      {3, {2, 0, 7}, {0, 0, 0}, {-1, -2, 1}, 2, 6, 0, 0, 0, 3, {2, 2, 0}},
  };
  enum { NC = G_N_ELEMENTS(cases) };
  weft_output_t outs[NC + 1];
  outs[0] = sl;
  for (int c = 0; c < NC; c++) {
    weft_op_builder_t *b = B(g, "StridedSlice");
    weft_op_add_input(b, x);
    weft_op_add_input(b, Kiv(g, cases[c].n, cases[c].b));
    weft_op_add_input(b, Kiv(g, cases[c].n, cases[c].e));
    weft_op_add_input(b, Kiv(g, cases[c].n, cases[c].s));
    weft_op_set_attr_int(b, "begin_mask", cases[c].bm);
    weft_op_set_attr_int(b, "end_mask", cases[c].em);
    weft_op_set_attr_int(b, "ellipsis_mask", cases[c].elm);
    weft_op_set_attr_int(b, "new_axis_mask", cases[c].nam);
    weft_op_set_attr_int(b, "shrink_axis_mask", cases[c].sam);
    outs[c + 1] = fin(b);
  }
  weft_tensor_t *t[NC + 1] = {NULL};
  OK(try_evaln(g, NC + 1, outs, t));
#define X3(i, j, k) ((double)(((i) * 4 + (j)) * 5 + (k)))
  double r_sl[16];
  int n = 0;
  for (int i = 1; i < 3; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 2; k < 4; k++) r_sl[n++] = X3(i, j, k);
  int64_t dsl[3] = {2, 4, 2};
  check_shape(t[0], 3, dsl);
  check_values(t[0], r_sl, 16, "Slice");
  double r0[30], r1[4], r2[24], r3[30];
  n = 0;
  for (int i = 2; i >= 0; i--)
    for (int j = 1; j < 3; j++)
      for (int k = 0; k < 5; k++) r0[n++] = X3(i, j, k);
  for (int j = 0; j < 4; j++) r1[j] = X3(1, j, 4);
  n = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      for (int k = 1; k < 5; k += 2) r2[n++] = X3(i, j, k);
  n = 0;
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 5; k++) r3[n++] = X3(i, 2, k);
  const double *refs[NC] = {r0, r1, r2, r3, NULL};
  for (int c = 0; c < NC; c++) {
    char *what = g_strdup_printf("StridedSlice case %d", c);
    check_shape(t[c + 1], cases[c].rank, cases[c].dims);
    if (refs[c]) check_values(t[c + 1], refs[c], numel(cases[c].rank, cases[c].dims), what);
    g_free(what);
  }
#undef X3
  for (int c = 0; c <= NC; c++) weft_tensor_unref(t[c]);
  weft_graph_free(g);
}

static void test_tile_pad_gather_split(void) {
  weft_graph_t *g = cpu_graph();
  float v[6] = {1, 2, 3, 4, 5, 6};
  int64_t d23[2] = {2, 3};
  weft_output_t x = Kf(g, 2, d23, v);
  int32_t mult[2] = {2, 3}, pads[4] = {1, 0, 2, 1}, idx[4] = {2, 0, 2, 1};
  weft_output_t tile = op2(g, "Tile", x, Kiv(g, 2, mult));
  weft_output_t pad = op2(g, "Pad", x, Kt(g, WEFT_DT_INT32, 2, (int64_t[]){2, 2}, pads));
  weft_output_t gat = op3(g, "GatherV2", x, Kt(g, WEFT_DT_INT32, 2, (int64_t[]){2, 2}, idx),
                          Kis(g, 1));
  weft_op_builder_t *b = B(g, "Split");
  weft_op_add_input(b, Kis(g, 1));
  weft_op_add_input(b, x);
  weft_op_set_attr_int(b, "num_split", 3);
  weft_output_t sp = fin(b);
  int32_t sizes[2] = {-1, 2};
  b = B(g, "SplitV");
  weft_op_add_input(b, x);
  weft_op_add_input(b, Kiv(g, 2, sizes));
  weft_op_add_input(b, Kis(g, 1));
  weft_op_set_attr_int(b, "num_split", 2);
  weft_output_t spv = fin(b);
  weft_output_t outs[6] = {tile, pad, gat, weft_out(sp.node, 1), spv, weft_out(spv.node, 1)};
  weft_tensor_t *t[6] = {NULL};
  OK(try_evaln(g, 6, outs, t));
  double rt[36];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 9; j++) rt[i * 9 + j] = v[(i % 2) * 3 + j % 3];
  int64_t dt[2] = {4, 9};
  check_shape(t[0], 2, dt);
  check_values(t[0], rt, 36, "Tile");
  double rp[18] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0};
  int64_t dp[2] = {3, 6};
  check_shape(t[1], 2, dp);
  check_values(t[1], rp, 18, "Pad");
  double rg[8] = {3, 1, 3, 2, 6, 4, 6, 5};
  int64_t dg[3] = {2, 2, 2};
  check_shape(t[2], 3, dg);
  check_values(t[2], rg, 8, "GatherV2 axis 1");
  double rs[2] = {2, 5}, rv0[2] = {1, 4}, rv1[4] = {2, 3, 5, 6};
  check_values(t[3], rs, 2, "Split");
  check_values(t[4], rv0, 2, "SplitV inferred size");
  check_values(t[5], rv1, 4, "SplitV");
  for (int i = 0; i < 6; i++) weft_tensor_unref(t[i]);
  /* Gather (v1) takes rows: axis 0. */
  int32_t rows[3] = {1, 0, 1};
  weft_tensor_t *tg = eval(g, op2(g, "Gather", x, Kiv(g, 3, rows)));
  double rgv[9] = {4, 5, 6, 1, 2, 3, 4, 5, 6};
  int64_t dgv[2] = {3, 3};
  check_shape(tg, 2, dgv);
  check_values(tg, rgv, 9, "Gather");
  weft_tensor_unref(tg);
  /* An index out of range is an error naming it. */
  int32_t bad_idx[2] = {0, 3};
  weft_output_t bad = op3(g, "GatherV2", x, Kiv(g, 2, bad_idx), Kis(g, 1));
  check_error(try_eval(g, bad), WEFT_INVALID_ARGUMENT, "indices[1] = 3 is not in [0, 3)", NULL);
  weft_graph_free(g);
}

static void test_fill_range_onehot(void) {
  weft_graph_t *g = cpu_graph();
  int32_t dims[2] = {2, 3};
  weft_output_t fill = op2(g, "Fill", Kiv(g, 2, dims), Kfs(g, 2.5f));
  weft_output_t range = op3(g, "Range", Kis(g, 3), Kis(g, 18), Kis(g, 4));
  weft_output_t frange = op3(g, "Range", Kfs(g, 1), Kfs(g, 0), Kfs(g, -0.25f));
  int32_t ind[3] = {0, 2, 5};
  weft_op_builder_t *b = B(g, "OneHot");
  weft_op_add_input(b, Kiv(g, 3, ind));
  weft_op_add_input(b, Kis(g, 3));
  weft_op_add_input(b, Kfs(g, 1));
  weft_op_add_input(b, Kfs(g, -1));
  weft_op_set_attr_int(b, "axis", 0);
  weft_output_t oh = fin(b);
  float bv[3] = {1, 2, 3};
  int32_t bshape[2] = {2, 3};
  weft_output_t bt = op2(g, "BroadcastTo", Kf(g, 1, (int64_t[]){3}, bv), Kiv(g, 2, bshape));
  weft_output_t zl = op1(g, "ZerosLike", bt), ol = op1(g, "OnesLike", bt);
  weft_output_t outs[7] = {fill, range, frange, oh, bt, zl, ol};
  weft_tensor_t *t[7] = {NULL};
  OK(try_evaln(g, 7, outs, t));
  double rf[6] = {2.5, 2.5, 2.5, 2.5, 2.5, 2.5}, rr[4] = {3, 7, 11, 15};
  double rfr[4] = {1, 0.75, 0.5, 0.25}, roh[9] = {1, -1, -1, -1, -1, -1, -1, 1, -1};
  double rb[6] = {1, 2, 3, 1, 2, 3}, rz[6] = {0}, ro[6] = {1, 1, 1, 1, 1, 1};
  check_values(t[0], rf, 6, "Fill");
  check_values(t[1], rr, 4, "Range int");
  check_values(t[2], rfr, 4, "Range float descending");
  check_values(t[3], roh, 9, "OneHot axis 0");
  check_values(t[4], rb, 6, "BroadcastTo");
  check_values(t[5], rz, 6, "ZerosLike");
  check_values(t[6], ro, 6, "OnesLike");
  for (int i = 0; i < 7; i++) weft_tensor_unref(t[i]);
  weft_op_builder_t *range_b = B(g, "Range");
  weft_op_add_input(range_b, Kis(g, 5));
  weft_op_add_input(range_b, Kis(g, 1));
  weft_op_add_input(range_b, Kis(g, 1));
  weft_node_t *bad = NULL;
  weft_status_t *st = weft_op_finish(range_b, &bad);
  if (st != NULL) /* shape inference evaluated the constants first */
    check_error(st, WEFT_INVALID_ARGUMENT, "5", NULL);
  else
    check_error(try_eval(g, weft_out(bad, 0)), WEFT_INVALID_ARGUMENT,
                "Requires start <= limit when delta > 0: 5/1", NULL);
  weft_graph_free(g);
}

static void test_stitch_bcast_args(void) {
  weft_graph_t *g = cpu_graph();
  int32_t i0[2] = {0, 2}, i1[3] = {1, 3, 2};
  float d0[4] = {1, 1, 2, 2}, d1[6] = {10, 10, 30, 30, 20, 20};
  weft_output_t idx[2] = {Kiv(g, 2, i0), Kiv(g, 3, i1)};
  weft_output_t data[2] = {Kf(g, 2, (int64_t[]){2, 2}, d0), Kf(g, 2, (int64_t[]){3, 2}, d1)};
  weft_op_builder_t *b = B(g, "DynamicStitch");
  weft_op_add_input_list(b, idx, 2);
  weft_op_add_input_list(b, data, 2);
  weft_output_t st = fin(b);
  int32_t s0[3] = {2, 3, 1}, s1[2] = {1, 4};
  weft_output_t bga = op2(g, "BroadcastGradientArgs", Kiv(g, 3, s0), Kiv(g, 2, s1));
  weft_output_t outs[3] = {st, bga, weft_out(bga.node, 1)};
  weft_tensor_t *t[3] = {NULL};
  OK(try_evaln(g, 3, outs, t));
  double rs[8] = {1, 1, 10, 10, 20, 20, 30, 30}; /* index 2 from the later input wins */
  int64_t ds[2] = {4, 2};
  check_shape(t[0], 2, ds);
  check_values(t[0], rs, 8, "DynamicStitch");
  double r0[1] = {2}, r1[2] = {0, 1};
  check_values(t[1], r0, 1, "BroadcastGradientArgs r0");
  check_values(t[2], r1, 2, "BroadcastGradientArgs r1");
  for (int i = 0; i < 3; i++) weft_tensor_unref(t[i]);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Cast */

static void test_cast_all_pairs(void) {
  static const weft_dtype_t types[] = {
      WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
      WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
      WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL,
  };
  /* Small non-negative integers are exact in every type; through bool they become 0/1. */
  float base[5] = {0, 1, 2, 7, 100};
  int64_t d5[1] = {5};
  weft_graph_t *g = cpu_graph();
  weft_output_t src = Kf(g, 1, d5, base);
  enum { NT = G_N_ELEMENTS(types) };
  weft_output_t outs[NT * NT];
  int n = 0;
  for (int s = 0; s < NT; s++) {
    weft_op_builder_t *b = B(g, "Cast");
    weft_op_add_input(b, src);
    weft_op_set_attr_type(b, "DstT", types[s]);
    weft_output_t xs = fin(b);
    for (int d = 0; d < NT; d++) {
      b = B(g, "Cast");
      weft_op_add_input(b, xs);
      weft_op_set_attr_type(b, "DstT", types[d]);
      outs[n++] = fin(b);
    }
  }
  weft_tensor_t *t[NT * NT] = {NULL};
  OK(try_evaln(g, n, outs, t));
  for (int s = 0; s < NT; s++)
    for (int d = 0; d < NT; d++) {
      weft_tensor_t *tt = t[s * NT + d];
      double ref[5];
      bool through_bool = types[s] == WEFT_DT_BOOL || types[d] == WEFT_DT_BOOL;
      for (int i = 0; i < 5; i++) ref[i] = through_bool ? (base[i] != 0) : base[i];
      char *what = g_strdup_printf("Cast %s -> %s", weft_dtype_name(types[s]),
                                   weft_dtype_name(types[d]));
      g_assert_cmpint(weft_tensor_dtype(tt), ==, types[d]);
      check_values(tt, ref, 5, what);
      g_free(what);
      weft_tensor_unref(tt);
    }
  weft_graph_free(g);
}

static weft_output_t cast(weft_graph_t *g, weft_output_t x, weft_dtype_t to, bool truncate) {
  weft_op_builder_t *b = B(g, "Cast");
  weft_op_add_input(b, x);
  weft_op_set_attr_type(b, "DstT", to);
  if (truncate) weft_op_set_attr_bool(b, "Truncate", true);
  return fin(b);
}

static void test_cast_values(void) {
  weft_graph_t *g = cpu_graph();
  float f[8] = {-1.7f, 2.9f, 1e10f, -1e10f, NAN, 0.1f, 65519.0f, 1.00390625f};
  int64_t d8[1] = {8};
  weft_output_t x = Kf(g, 1, d8, f);
  int32_t iv[4] = {300, -1, 255, -129};
  weft_output_t xi = Kiv(g, 4, iv);
  weft_output_t outs[7] = {
      cast(g, x, WEFT_DT_INT32, false), cast(g, x, WEFT_DT_UINT8, false),
      cast(g, x, WEFT_DT_HALF, false),  cast(g, x, WEFT_DT_HALF, true),
      cast(g, x, WEFT_DT_BFLOAT16, false), cast(g, xi, WEFT_DT_UINT8, false),
      cast(g, xi, WEFT_DT_INT8, false),
  };
  weft_tensor_t *t[7] = {NULL};
  OK(try_evaln(g, 7, outs, t));
  /* float -> int truncates toward zero and saturates; NaN gives 0. */
  double r_i32[8] = {-1, 2, INT32_MAX, INT32_MIN, 0, 0, 65519, 1};
  double r_u8[8] = {0, 2, 255, 0, 0, 0, 255, 1};
  /* float -> half rounds to nearest even (65519 -> 65504, 1e10 -> inf); truncation drops bits. */
  double r_h[8] = {-1.7001953125, 2.900390625, INFINITY, -INFINITY, NAN, 0.0999755859375, 65504,
                   1.00390625};
  double r_ht[8] = {-1.69921875, 2.8984375, INFINITY, -INFINITY, NAN, 0.0999755859375, 65504,
                    1.00390625};
  double r_bf[8] = {-1.703125, 2.90625, 1e10, -1e10, NAN, 0.10009765625, 65536, 1.0};
  double r_wrap_u8[4] = {44, 255, 255, 127}, r_wrap_i8[4] = {44, -1, -1, 127};
  check_values(t[0], r_i32, 8, "Cast float32 -> int32");
  check_values(t[1], r_u8, 8, "Cast float32 -> uint8");
  check_values(t[2], r_h, 8, "Cast float32 -> float16");
  check_values(t[3], r_ht, 8, "Cast float32 -> float16 Truncate");
  check_close(t[4], r_bf, 8, 4e-3, 0, "Cast float32 -> bfloat16");
  g_assert_cmpfloat(elem(t[4], 7), ==, 1.0); /* 1 + 2^-8 is a tie: rounds to even */
  check_values(t[5], r_wrap_u8, 4, "Cast int32 -> uint8 wraps");
  check_values(t[6], r_wrap_i8, 4, "Cast int32 -> int8 wraps");
  for (int i = 0; i < 7; i++) weft_tensor_unref(t[i]);
  weft_graph_free(g);
}

/* float16 and bfloat16 elementwise ops compute in float32 and round once to the 16-bit type. */
static void test_f16_elementwise(void) {
  static const weft_dtype_t types[2] = {WEFT_DT_HALF, WEFT_DT_BFLOAT16};
  for (int k = 0; k < 2; k++) {
    weft_graph_t *g = cpu_graph();
    int64_t d[2] = {3, 7}, dr[1] = {7};
    float xv[21], rv[7];
    for (int i = 0; i < 21; i++) xv[i] = (float)pseudo(i, -4, 4);
    for (int i = 0; i < 7; i++) rv[i] = (float)pseudo(i + 50, -4, 4);
    weft_output_t x = cast(g, Kf(g, 2, d, xv), types[k], false);
    weft_output_t r = cast(g, Kf(g, 1, dr, rv), types[k], false);
    weft_output_t outs[5] = {x, r, op1(g, "Sigmoid", x), op2(g, "AddV2", x, r),
                             op2(g, "Less", x, r)};
    weft_tensor_t *t[5] = {NULL};
    OK(try_evaln(g, 5, outs, t));
    g_assert_cmpint(weft_tensor_dtype(t[2]), ==, types[k]);
    g_assert_cmpint(weft_tensor_dtype(t[3]), ==, types[k]);
    g_assert_cmpint(weft_tensor_dtype(t[4]), ==, WEFT_DT_BOOL);
    double sig[21], add[21], less[21];
    for (int i = 0; i < 21; i++) {
      double a = elem(t[0], i), b = elem(t[1], i % 7);
      sig[i] = r_sigmoid(a);
      add[i] = a + b;
      less[i] = a < b;
    }
    double rtol = types[k] == WEFT_DT_HALF ? 1e-3 : 8e-3;
    check_close(t[2], sig, 21, rtol, 1e-4, "Sigmoid 16-bit");
    check_close(t[3], add, 21, rtol, 1e-2, "AddV2 16-bit broadcast");
    check_values(t[4], less, 21, "Less 16-bit");
    for (int i = 0; i < 5; i++) weft_tensor_unref(t[i]);
    weft_graph_free(g);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Random */

static weft_output_t random_op(weft_graph_t *g, const char *op, int64_t n, int64_t seed,
                               int64_t seed2, weft_dtype_t dtype) {
  weft_op_builder_t *b = B(g, op);
  int32_t shape[1] = {(int32_t)n};
  weft_op_add_input(b, Kiv(g, 1, shape));
  if (strcmp(op, "RandomUniformInt") == 0) {
    weft_op_add_input(b, Kis(g, -5));
    weft_op_add_input(b, Kis(g, 7));
  } else {
    weft_op_set_attr_type(b, "dtype", dtype);
  }
  weft_op_set_attr_int(b, "seed", seed);
  weft_op_set_attr_int(b, "seed2", seed2);
  return fin(b);
}

static void moments(weft_tensor_t *t, double *mean, double *sd, double *lo, double *hi) {
  int64_t n = weft_tensor_num_elements(t);
  double s = 0, ss = 0;
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double v = elem(t, i);
    s += v;
    ss += v * v;
    if (v < *lo) *lo = v;
    if (v > *hi) *hi = v;
  }
  *mean = s / (double)n;
  *sd = sqrt(ss / (double)n - *mean * *mean);
}

static void test_random(void) {
  weft_graph_t *g = cpu_graph();
  int64_t n = 100000;
  weft_output_t normal = random_op(g, "RandomStandardNormal", n, 7, 3, WEFT_DT_FLOAT);
  weft_output_t normal_same = random_op(g, "RandomStandardNormal", n, 7, 3, WEFT_DT_FLOAT);
  weft_output_t normal64 = random_op(g, "RandomStandardNormal", n, 0, 11, WEFT_DT_DOUBLE);
  weft_output_t uniform = random_op(g, "RandomUniform", n, 1, 0, WEFT_DT_FLOAT);
  weft_output_t trunc_n = random_op(g, "TruncatedNormal", n, 5, 5, WEFT_DT_FLOAT);
  weft_output_t uint = random_op(g, "RandomUniformInt", n, 9, 9, WEFT_DT_INT32);
  weft_output_t unseeded = random_op(g, "RandomUniform", 1000, 0, 0, WEFT_DT_FLOAT);
  enum { N = 7 };
  weft_output_t outs[N] = {normal, normal_same, normal64, uniform, trunc_n, uint, unseeded};
  char *names[N];
  for (int i = 0; i < N; i++) names[i] = tensor_name(outs[i]);
  weft_tensor_t *a[N] = {NULL}, *b[N] = {NULL}, *c[N] = {NULL};
  weft_session_t *s1 = session_new(g);
  OK(weft_session_run(s1, NULL, NULL, 0, (const char *const *)names, a, N, NULL, 0));
  OK(weft_session_run(s1, NULL, NULL, 0, (const char *const *)names, b, N, NULL, 0));
  weft_session_t *s2 = session_new(g);
  OK(weft_session_run(s2, NULL, NULL, 0, (const char *const *)names, c, N, NULL, 0));
  for (int i = 0; i < N; i++) {
    size_t nb = weft_tensor_nbytes(a[i]);
    /* Successive runs of a node differ... */
    g_assert_true(memcmp(weft_tensor_data(a[i]), weft_tensor_data(b[i]), nb) != 0);
    /* ...and a seeded node repeats its sequence in a new session. */
    if (i < N - 1)
      g_assert_cmpmem(weft_tensor_data(a[i]), nb, weft_tensor_data(c[i]), nb);
  }
  /* Two nodes with the same seeds give the same numbers, as in TensorFlow. */
  g_assert_cmpmem(weft_tensor_data(a[0]), weft_tensor_nbytes(a[0]), weft_tensor_data(a[1]),
                  weft_tensor_nbytes(a[1]));
  double mean, sd, lo, hi;
  moments(a[0], &mean, &sd, &lo, &hi);
  g_test_message("normal float32: mean %g sd %g", mean, sd);
  g_assert_cmpfloat(fabs(mean), <, 0.015);
  g_assert_cmpfloat(fabs(sd - 1), <, 0.015);
  g_assert_cmpfloat(lo, <, -3.5);
  g_assert_cmpfloat(hi, >, 3.5);
  moments(a[2], &mean, &sd, &lo, &hi);
  g_assert_cmpint(weft_tensor_dtype(a[2]), ==, WEFT_DT_DOUBLE);
  g_assert_cmpfloat(fabs(mean), <, 0.015);
  g_assert_cmpfloat(fabs(sd - 1), <, 0.015);
  moments(a[3], &mean, &sd, &lo, &hi);
  g_assert_cmpfloat(fabs(mean - 0.5), <, 0.005);
  g_assert_cmpfloat(fabs(sd - sqrt(1.0 / 12)), <, 0.005);
  g_assert_cmpfloat(lo, >=, 0);
  g_assert_cmpfloat(hi, <, 1);
  /* A standard normal truncated to [-2, 2] has sd 0.8796. */
  moments(a[4], &mean, &sd, &lo, &hi);
  g_assert_cmpfloat(fabs(mean), <, 0.015);
  g_assert_cmpfloat(fabs(sd - 0.8796), <, 0.015);
  g_assert_cmpfloat(lo, >=, -2);
  g_assert_cmpfloat(hi, <=, 2);
  moments(a[5], &mean, &sd, &lo, &hi);
  g_assert_cmpint(weft_tensor_dtype(a[5]), ==, WEFT_DT_INT32);
  g_assert_cmpfloat(lo, ==, -5);
  g_assert_cmpfloat(hi, ==, 6);
  g_assert_cmpfloat(fabs(mean - 0.5), <, 0.05);
  for (int i = 0; i < N; i++) {
    weft_tensor_unref(a[i]);
    weft_tensor_unref(b[i]);
    weft_tensor_unref(c[i]);
    g_free(names[i]);
  }
  weft_session_free(s1);
  weft_session_free(s2);
  weft_graph_free(g);
}

/* Philox-4x32-10 as TensorFlow's philox_random.h computes it, for the expected streams. */
static void ref_philox(const uint32_t key[2], const uint32_t ctr_in[4], uint32_t out[4]) {
  uint32_t c[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]}, k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = (uint32_t)p1;
    c[2] = n2;
    c[3] = (uint32_t)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, c, sizeof c);
}

static weft_session_t *session_threads(weft_graph_t *g, int threads) {
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_intra_op_threads(opts, threads);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, opts, &st);
  OK(st);
  weft_session_options_free(opts);
  return s;
}

/* The stateful ops give TensorFlow's stream: GuardedPhiloxRandom(seed, seed2) is key {seed},
 * counter {0, 0, seed2}; each run reserves 256 samples per output element, so run r's group g
 * (4 floats) is Philox at counter r * n * 256 + g, whatever the thread count. */
static void test_random_tf_stream(void) {
  weft_graph_t *g = cpu_graph();
  /* tf.random_uniform([7, 2, 9], seed=12345) with seed2 0 in TensorFlow 1.15 (the corpus's
   * tf/dl4j/random_uniform/rank3_float32) begins: */
  static const double tf_first[8] = {0.95503247, 0.99933827, 0.58270466, 0.31823349,
                                     0.42508423, 0.87962008, 0.20971930, 0.74347579};
  weft_output_t tf_u = random_op(g, "RandomUniform", 126, 12345, 0, WEFT_DT_FLOAT);
  const int64_t n = 1001, nt = 100003;
  weft_output_t u = random_op(g, "RandomUniform", n, 3, 5, WEFT_DT_FLOAT);
  weft_output_t tn = random_op(g, "TruncatedNormal", nt, 3, 5, WEFT_DT_FLOAT);
  weft_output_t nd = random_op(g, "RandomStandardNormal", nt, 3, 5, WEFT_DT_DOUBLE);
  weft_output_t ui = random_op(g, "RandomUniformInt", nt, 3, 5, WEFT_DT_INT32);
  enum { N = 5 };
  weft_output_t outs[N] = {tf_u, u, tn, nd, ui};
  char *names[N];
  for (int i = 0; i < N; i++) names[i] = tensor_name(outs[i]);
  weft_tensor_t *r[2][2][N] = {{{NULL}}}; /* [threads 1 or 4][run][output] */
  for (int t = 0; t < 2; t++) {
    weft_session_t *s = session_threads(g, t == 0 ? 1 : 4);
    for (int run = 0; run < 2; run++)
      OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)names, r[t][run], N, NULL, 0));
    weft_session_free(s);
  }
  for (int k = 0; k < 8; k++)
    g_assert_cmpfloat(fabs(elem(r[0][0][0], k) - tf_first[k]), <, 6e-9);
  const uint32_t key[2] = {3, 0};
  for (int run = 0; run < 2; run++) {
    const float *got = weft_tensor_data(r[0][run][1]);
    for (int64_t i = 0; i < n; i++) {
      uint64_t c = (uint64_t)run * (uint64_t)n * 256u + (uint64_t)(i / 4);
      uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32), 5, 0}, w[4];
      ref_philox(key, ctr, w);
      uint32_t bits = (w[i % 4] & 0x7fffffu) | 0x3f800000u;
      float f;
      memcpy(&f, &bits, 4);
      g_assert_cmpfloat(got[i], ==, f - 1.0f);
    }
  }
  /* Every output is the same at 1 and 4 threads, run by run, and the second run differs. */
  for (int run = 0; run < 2; run++)
    for (int i = 0; i < N; i++) {
      size_t nb = weft_tensor_nbytes(r[0][run][i]);
      g_assert_cmpmem(weft_tensor_data(r[0][run][i]), nb, weft_tensor_data(r[1][run][i]),
                      weft_tensor_nbytes(r[1][run][i]));
      if (run == 1)
        g_assert_true(memcmp(weft_tensor_data(r[0][0][i]), weft_tensor_data(r[0][1][i]), nb) !=
                      0);
    }
  for (int t = 0; t < 2; t++)
    for (int run = 0; run < 2; run++)
      for (int i = 0; i < N; i++) weft_tensor_unref(r[t][run][i]);
  for (int i = 0; i < N; i++) g_free(names[i]);
  weft_graph_free(g);
}

/* A plain reimplementation of RandomGammaOp and PoissonFunctor's draws for the expected values:
 * output o of run r starts at Philox counter (r * n + o) * 256 (key {seed}, high words seed2);
 * doubles come two per block (20 + 32 bits each), used second first, normals from Box-Muller
 * in double (sin, cos), also second first. */
typedef struct ref_param_gen {
  uint32_t key[2], seed2;
  uint64_t blk;
  double u[2], z[2];
  int ul, zl;
} ref_param_gen_t;

static void ref_param_block(ref_param_gen_t *r, double d[2]) {
  uint32_t ctr[4] = {(uint32_t)r->blk, (uint32_t)(r->blk >> 32), r->seed2, 0}, w[4];
  ref_philox(r->key, ctr, w);
  r->blk++;
  for (int k = 0; k < 2; k++) {
    uint64_t bits = ((uint64_t)(w[2 * k] & 0xfffffu) << 32) | w[2 * k + 1] | (1023ull << 52);
    memcpy(&d[k], &bits, 8);
    d[k] -= 1.0;
  }
}

static double ref_param_uniform(ref_param_gen_t *r) {
  if (r->ul == 0) {
    ref_param_block(r, r->u);
    r->ul = 2;
  }
  return r->u[--r->ul];
}

static double ref_param_normal(ref_param_gen_t *r) {
  if (r->zl == 0) {
    double d[2];
    ref_param_block(r, d);
    double u1 = d[0] < 1e-7 ? 1e-7 : d[0], v1 = 2 * M_PI * d[1], rad = sqrt(-2.0 * log(u1));
    r->z[0] = sin(v1) * rad;
    r->z[1] = cos(v1) * rad;
    r->zl = 2;
  }
  return r->z[--r->zl];
}

static double ref_gamma(ref_param_gen_t *r, double alpha) {
  if (alpha == 1.0) return -log(1.0 - ref_param_uniform(r));
  double d = alpha < 1 ? alpha + 2.0 / 3 : alpha - 1.0 / 3, c = 1.0 / 3 / sqrt(d);
  for (;;) {
    double x = ref_param_normal(r), v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = ref_param_uniform(r);
    if (u < 1 - 0.0331 * (x * x) * (x * x) || log(u) < 0.5 * x * x + d * (1 - v + log(v)))
      return alpha < 1 ? d * v * pow(ref_param_uniform(r), 1 / alpha) : d * v;
  }
}

static double ref_poisson(ref_param_gen_t *r, double rate) {
  if (rate < 10) {
    double limit = exp(-rate), prod = 1;
    for (double x = 0;; x++)
      if ((prod *= ref_param_uniform(r)) <= limit) return x;
  }
  double b = 0.931 + 2.53 * sqrt(rate), a = -0.059 + 0.02483 * b;
  for (;;) {
    double u = ref_param_uniform(r) - 0.5, v = ref_param_uniform(r), us = 0.5 - fabs(u);
    double k = floor((2 * a / us + b) * u + rate + 0.43);
    if (us >= 0.07 && v <= 0.9277 - 3.6224 / (b - 2)) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v * (1.1239 + 1.1328 / (b - 3.4)) / (a / (us * us) + b)) <=
        -rate + k * log(rate) - lgamma(k + 1))
      return k;
  }
}

static weft_output_t param_random_op(weft_graph_t *g, const char *op, int32_t samples,
                                     weft_dtype_t pdt, int64_t np, const void *param,
                                     weft_dtype_t out_dt) {
  weft_op_builder_t *b = B(g, op);
  weft_op_add_input(b, Kiv(g, 1, &samples));
  weft_op_add_input(b, Kt(g, pdt, 1, &np, param));
  if (strcmp(op, "RandomGamma") != 0) weft_op_set_attr_type(b, "dtype", out_dt);
  weft_op_set_attr_int(b, "seed", 3);
  weft_op_set_attr_int(b, "seed2", 5);
  return fin(b);
}

/* RandomGamma and RandomPoisson(V2) give TensorFlow's stream (checked against the plain
 * reimplementation above, two runs, 1 and 4 threads), and their edge cases answer as
 * TensorFlow does (alpha 0 -> 0, alpha <= -2/3 or NaN -> NaN, rate <= 0 -> 0) or, where
 * TensorFlow never returns, Weft's values (rate NaN -> NaN, +inf -> inf, past int32 -> its max). */
static void test_param_random_tf_stream(void) {
  weft_graph_t *g = cpu_graph();
  enum { S = 40, N = 5 };
  static const double alphas[] = {1.0, 0.25, 2.5, 40, 0, -0.25, -1, NAN, INFINITY};
  static const double rates[] = {0.5, 3, 12, 500, 0, -1, 1e30, -INFINITY};
  static const float rates_f[] = {3, 25};
  static const double edge_rates[] = {NAN, INFINITY, 1e30, 5e9};
  const int64_t na = G_N_ELEMENTS(alphas), nr = G_N_ELEMENTS(rates), nf = 2;
  weft_output_t outs[N] = {
      param_random_op(g, "RandomGamma", S, WEFT_DT_DOUBLE, na, alphas, WEFT_DT_DOUBLE),
      param_random_op(g, "RandomPoisson", S, WEFT_DT_DOUBLE, nr, rates, WEFT_DT_DOUBLE),
      param_random_op(g, "RandomPoissonV2", S, WEFT_DT_FLOAT, nf, rates_f, WEFT_DT_INT64),
      param_random_op(g, "RandomPoissonV2", 2, WEFT_DT_DOUBLE, 4, edge_rates, WEFT_DT_DOUBLE),
      param_random_op(g, "RandomPoissonV2", 2, WEFT_DT_DOUBLE, 4, edge_rates, WEFT_DT_INT32)};
  char *names[N];
  for (int i = 0; i < N; i++) names[i] = tensor_name(outs[i]);
  weft_tensor_t *r[2][2][N] = {{{NULL}}}; /* [threads 1 or 4][run][output] */
  for (int t = 0; t < 2; t++) {
    weft_session_t *s = session_threads(g, t == 0 ? 1 : 4);
    for (int run = 0; run < 2; run++)
      OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)names, r[t][run], N, NULL, 0));
    weft_session_free(s);
  }
  for (int run = 0; run < 2; run++) {
    for (int i = 0; i < 3; i++) {
      const int64_t np = i == 0 ? na : i == 1 ? nr : nf, n = S * np;
      for (int64_t o = 0; o < n; o++) {
        const int64_t p = o / S, smp = o % S;
        ref_param_gen_t ref = {{3, 0}, 5, ((uint64_t)run * (uint64_t)n + (uint64_t)o) * 256u,
                               {0, 0}, {0, 0}, 0, 0};
        double want = i == 0 ? ref_gamma(&ref, alphas[p])
                      : i == 1 ? ref_poisson(&ref, rates[p])
                               : ref_poisson(&ref, rates_f[p]);
        double got = elem(r[0][run][i], smp * np + p);
        if (isnan(want)) g_assert_true(isnan(got));
        else g_assert_cmpfloat(got, ==, want);
      }
    }
    const double *gam = weft_tensor_data(r[0][run][0]);
    const double *poi = weft_tensor_data(r[0][run][1]);
    for (int smp = 0; smp < S; smp++) {
      g_assert_cmpfloat(gam[smp * na + 4], ==, 0);    /* alpha 0 */
      g_assert_true(isnan(gam[smp * na + 6]));         /* alpha -1: c = NaN */
      g_assert_true(isnan(gam[smp * na + 7]));         /* alpha NaN */
      g_assert_cmpfloat(gam[smp * na + 8], ==, INFINITY);
      g_assert_cmpfloat(poi[smp * nr + 4], ==, 0);
      g_assert_cmpfloat(poi[smp * nr + 5], ==, 0);
      g_assert_cmpfloat(poi[smp * nr + 7], ==, 0);
      g_assert_cmpfloat(fabs(poi[smp * nr + 6] / 1e30 - 1), <, 1e-13);
    }
    const double *ed = weft_tensor_data(r[0][run][3]);
    const int32_t *ei = weft_tensor_data(r[0][run][4]);
    for (int smp = 0; smp < 2; smp++) {
      g_assert_true(isnan(ed[smp * 4]));
      g_assert_cmpfloat(ed[smp * 4 + 1], ==, INFINITY);
      g_assert_cmpfloat(fabs(ed[smp * 4 + 2] / 1e30 - 1), <, 1e-13);
      g_assert_cmpint(ei[smp * 4], ==, 0);
      g_assert_cmpint(ei[smp * 4 + 1], ==, INT32_MAX);
      g_assert_cmpint(ei[smp * 4 + 2], ==, INT32_MAX);
      g_assert_cmpint(ei[smp * 4 + 3], ==, INT32_MAX);
    }
  }
  /* The same numbers at 1 and 4 threads, run by run; the second run differs. */
  for (int run = 0; run < 2; run++)
    for (int i = 0; i < 3; i++) {
      size_t nb = weft_tensor_nbytes(r[0][run][i]);
      g_assert_cmpmem(weft_tensor_data(r[0][run][i]), nb, weft_tensor_data(r[1][run][i]),
                      weft_tensor_nbytes(r[1][run][i]));
      if (run == 1)
        g_assert_true(memcmp(weft_tensor_data(r[0][0][i]), weft_tensor_data(r[0][1][i]), nb) !=
                      0);
    }
  for (int t = 0; t < 2; t++)
    for (int run = 0; run < 2; run++)
      for (int i = 0; i < N; i++) weft_tensor_unref(r[t][run][i]);
  for (int i = 0; i < N; i++) g_free(names[i]);
  weft_graph_free(g);
}

/* RandomShuffle as random_shuffle_op.cc: ReserveSamples32(n - 1) (whole 128-bit samples), then
 * element i swapped with i + word % (n - i), the words taken one at a time. Two runs continue
 * the stream. */
static void test_random_shuffle_tf_stream(void) {
  weft_graph_t *g = cpu_graph();
  enum { N = 11 };
  int32_t vals[N];
  for (int i = 0; i < N; i++) vals[i] = i;
  weft_op_builder_t *b = B(g, "RandomShuffle");
  weft_op_add_input(b, Kiv(g, N, vals));
  weft_op_set_attr_int(b, "seed", 3);
  weft_op_set_attr_int(b, "seed2", 5);
  weft_output_t sh = fin(b);
  char *name = tensor_name(sh);
  weft_session_t *s = session_new(g);
  const uint32_t key[2] = {3, 0};
  uint64_t block = 0;
  for (int run = 0; run < 2; run++) {
    weft_tensor_t *t = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)&name, &t, 1, NULL, 0));
    int32_t want[N];
    memcpy(want, vals, sizeof want);
    uint32_t w[4];
    for (int i = 0, used = 4; i < N - 1; i++, used++) {
      if (used == 4) {
        uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 5, 0};
        ref_philox(key, ctr, w);
        block++;
        used = 0;
      }
      int k = i + (int)(w[used] % (uint32_t)(N - i));
      int32_t tmp = want[i];
      want[i] = want[k];
      want[k] = tmp;
    }
    block = (uint64_t)(run + 1) * ((N - 1 + 3) / 4);
    g_assert_cmpmem(weft_tensor_data(t), weft_tensor_nbytes(t), want, sizeof want);
    weft_tensor_unref(t);
  }
  g_free(name);
  weft_session_free(s);
  weft_graph_free(g);
}

/* Multinomial as multinomial_op.cc on one shard: ReserveRandomOutputs(batch * ceil4(samples) * 2,
 * 256), then one uniform (SimplePhilox::RandDouble: two words) per sample, rows in one stream.
 * With 4 equal logits the running sums are 1..4, so the class is floor(4 u). */
static void test_multinomial_tf_stream(void) {
  weft_graph_t *g = cpu_graph();
  enum { NB = 2, C = 4, S = 5 };
  float logits[NB * C] = {0};
  int64_t dims[2] = {NB, C};
  weft_op_builder_t *b = B(g, "Multinomial");
  weft_op_add_input(b, Kf(g, 2, dims, logits));
  weft_op_add_input(b, Kis(g, S));
  weft_op_set_attr_int(b, "seed", 7);
  weft_op_set_attr_int(b, "seed2", 9);
  weft_output_t m = fin(b);
  char *name = tensor_name(m);
  weft_session_t *s = session_new(g);
  const uint32_t key[2] = {7, 0};
  for (int run = 0; run < 2; run++) {
    weft_tensor_t *t = NULL;
    OK(weft_session_run(s, NULL, NULL, 0, (const char *const *)&name, &t, 1, NULL, 0));
    g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_INT64);
    const int64_t *got = weft_tensor_data(t);
    uint64_t block = (uint64_t)run * NB * ((S + 3) / 4 * 4 * 2) * 256;
    uint32_t w[4], words[2 * NB * S];
    for (int i = 0; i < 2 * NB * S; i++) {
      if (i % 4 == 0) {
        uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 9, 0};
        ref_philox(key, ctr, w);
        block++;
      }
      words[i] = w[i % 4];
    }
    for (int i = 0; i < NB * S; i++) {
      uint64_t bits = ((uint64_t)(words[2 * i] & 0xfffffu) << 32) | words[2 * i + 1] |
                      (1023ull << 52);
      double u;
      memcpy(&u, &bits, 8);
      g_assert_cmpint(got[i], ==, (int64_t)floor((u - 1.0) * 4));
    }
    weft_tensor_unref(t);
  }
  g_free(name);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Variables and optimizers */

static weft_tensor_t *run_fetch(weft_session_t *s, const char *fetch, const char *target) {
  weft_tensor_t *t = NULL;
  const char *f[1] = {fetch}, *tg[1] = {target};
  OK(weft_session_run(s, NULL, NULL, 0, fetch ? f : NULL, fetch ? &t : NULL, fetch ? 1 : 0,
                      target ? tg : NULL, target ? 1 : 0));
  return t;
}

static void test_variables(void) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  float init[3] = {1, 2, 3}, delta[3] = {0.5f, 0.5f, 1};
  int64_t d3[1] = {3};
  weft_variable(g, "v", Kf(g, 1, d3, init), &st);
  OK(st);
  weft_node_t *var = weft_graph_node(g, "v");
  g_assert_nonnull(var);
  weft_op_builder_t *b = weft_op_new(g, "AssignAdd", "v_add");
  weft_op_add_input(b, weft_out(var, 0));
  weft_op_add_input(b, Kf(g, 1, d3, delta));
  fin(b);
  b = weft_op_new(g, "AssignSub", "v_sub");
  weft_op_add_input(b, weft_out(var, 0));
  weft_op_add_input(b, Kf(g, 1, d3, init));
  fin(b);
  b = weft_op_new(g, "IsVariableInitialized", "v_init");
  weft_op_add_input(b, weft_out(var, 0));
  fin(b);
  weft_session_t *s = session_new(g);
  weft_tensor_t *t = run_fetch(s, "v_init", NULL);
  g_assert_cmpfloat(elem(t, 0), ==, 0);
  weft_tensor_unref(t);
  run_fetch(s, NULL, "v/Assign");
  t = run_fetch(s, "v_init", NULL);
  g_assert_cmpfloat(elem(t, 0), ==, 1);
  weft_tensor_unref(t);
  t = run_fetch(s, "v/read", NULL);
  double r0[3] = {1, 2, 3};
  check_values(t, r0, 3, "variable after Assign");
  weft_tensor_unref(t);
  run_fetch(s, NULL, "v_add");
  t = run_fetch(s, "v_add", NULL); /* AssignAdd's output is the updated variable */
  double r1[3] = {2, 3, 5};
  check_values(t, r1, 3, "variable after two AssignAdds");
  weft_tensor_unref(t);
  run_fetch(s, NULL, "v_sub");
  t = run_fetch(s, "v/read", NULL);
  double r2[3] = {1, 1, 2};
  check_values(t, r2, 3, "variable after AssignSub");
  weft_tensor_unref(t);
  /* Assign with a different shape: refused with validate_shape, allowed without. */
  float four[4] = {9, 9, 9, 9};
  int64_t d4[1] = {4};
  b = weft_op_new(g, "Assign", "v_reshape_strict");
  weft_op_add_input(b, weft_out(var, 0));
  weft_op_add_input(b, Kf(g, 1, d4, four));
  weft_node_t *strict = NULL;
  weft_status_t *fs = weft_op_finish(b, &strict);
  if (fs == NULL) {
    weft_status_t *rs = weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0,
                                         (const char *[]){"v_reshape_strict"}, 1);
    check_error(rs, WEFT_INVALID_ARGUMENT, "Assign requires shapes of both tensors to match",
                "v_reshape_strict");
  } else {
    weft_status_free(fs); /* shape inference caught it first */
  }
  b = weft_op_new(g, "Assign", "v_reshape");
  weft_op_add_input(b, weft_out(var, 0));
  weft_op_add_input(b, Kf(g, 1, d4, four));
  weft_op_set_attr_bool(b, "validate_shape", false);
  fin(b);
  t = run_fetch(s, "v_reshape", NULL);
  double r3[4] = {9, 9, 9, 9};
  check_values(t, r3, 4, "Assign validate_shape=false");
  weft_tensor_unref(t);
  weft_session_free(s);
  weft_graph_free(g);
}

static void test_optimizers(void) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  double v0[3] = {1, -2, 3}, a0[3] = {0.1, 0.2, 0.3}, m0[3] = {0.01, 0.02, 0.03};
  double grad[3] = {0.5, -1, 2};
  int64_t d3[1] = {3};
  const char *names[] = {"sgd", "mom", "nest", "adagrad", "adam", "rms"};
  for (int i = 0; i < 6; i++) {
    char *n1 = g_strdup_printf("%s_var", names[i]), *n2 = g_strdup_printf("%s_s1", names[i]);
    char *n3 = g_strdup_printf("%s_s2", names[i]);
    weft_variable(g, n1, Kt(g, WEFT_DT_DOUBLE, 1, d3, v0), &st);
    OK(st);
    weft_variable(g, n2, Kt(g, WEFT_DT_DOUBLE, 1, d3, a0), &st);
    OK(st);
    weft_variable(g, n3, Kt(g, WEFT_DT_DOUBLE, 1, d3, m0), &st);
    OK(st);
    g_free(n1);
    g_free(n2);
    g_free(n3);
  }
  weft_node_t *init = weft_global_variables_initializer(g, "init", &st);
  OK(st);
  (void)init;
  double lr = 0.1, mom = 0.9, b1 = 0.9, b2 = 0.999, eps = 1e-8, b1p = 0.9, b2p = 0.999;
  double rho = 0.9;
#define DS(v) Kt(g, WEFT_DT_DOUBLE, 0, NULL, &(v))
#define REF(name, suffix) weft_out(weft_graph_node(g, name "_" suffix), 0)
  weft_output_t gr = Kt(g, WEFT_DT_DOUBLE, 1, d3, grad);
  weft_op_builder_t *b = weft_op_new(g, "ApplyGradientDescent", "apply_sgd");
  weft_op_add_input(b, REF("sgd", "var"));
  weft_op_add_input(b, DS(lr));
  weft_op_add_input(b, gr);
  fin(b);
  for (int nest = 0; nest < 2; nest++) {
    b = weft_op_new(g, "ApplyMomentum", nest ? "apply_nest" : "apply_mom");
    weft_op_add_input(b, nest ? REF("nest", "var") : REF("mom", "var"));
    weft_op_add_input(b, nest ? REF("nest", "s1") : REF("mom", "s1"));
    weft_op_add_input(b, DS(lr));
    weft_op_add_input(b, gr);
    weft_op_add_input(b, DS(mom));
    weft_op_set_attr_bool(b, "use_nesterov", nest);
    fin(b);
  }
  b = weft_op_new(g, "ApplyAdagrad", "apply_adagrad");
  weft_op_add_input(b, REF("adagrad", "var"));
  weft_op_add_input(b, REF("adagrad", "s1"));
  weft_op_add_input(b, DS(lr));
  weft_op_add_input(b, gr);
  fin(b);
  b = weft_op_new(g, "ApplyAdam", "apply_adam");
  weft_op_add_input(b, REF("adam", "var"));
  weft_op_add_input(b, REF("adam", "s1"));
  weft_op_add_input(b, REF("adam", "s2"));
  weft_op_add_input(b, DS(b1p));
  weft_op_add_input(b, DS(b2p));
  weft_op_add_input(b, DS(lr));
  weft_op_add_input(b, DS(b1));
  weft_op_add_input(b, DS(b2));
  weft_op_add_input(b, DS(eps));
  weft_op_add_input(b, gr);
  fin(b);
  b = weft_op_new(g, "ApplyRMSProp", "apply_rms");
  weft_op_add_input(b, REF("rms", "var"));
  weft_op_add_input(b, REF("rms", "s1"));
  weft_op_add_input(b, REF("rms", "s2"));
  weft_op_add_input(b, DS(lr));
  weft_op_add_input(b, DS(rho));
  weft_op_add_input(b, DS(mom));
  weft_op_add_input(b, DS(eps));
  weft_op_add_input(b, gr);
  fin(b);
#undef DS
#undef REF
  weft_session_t *s = session_new(g);
  run_fetch(s, NULL, "init");
  const char *targets[6] = {"apply_sgd", "apply_mom", "apply_nest", "apply_adagrad", "apply_adam",
                            "apply_rms"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 6));
  double ref[6][3];
  for (int i = 0; i < 3; i++) {
    double gi = grad[i];
    ref[0][i] = v0[i] - lr * gi;
    double acc = a0[i] * mom + gi;
    ref[1][i] = v0[i] - lr * acc;
    ref[2][i] = v0[i] - (gi * lr + acc * mom * lr);
    double acc2 = a0[i] + gi * gi;
    ref[3][i] = v0[i] - lr * gi / sqrt(acc2);
    double m = a0[i] + (gi - a0[i]) * (1 - b1), v = m0[i] + (gi * gi - m0[i]) * (1 - b2);
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    ref[4][i] = v0[i] - m * lr_t / (sqrt(v) + eps);
    double ms = a0[i] + (gi * gi - a0[i]) * (1 - rho);
    double mo = m0[i] * mom + lr * gi / sqrt(ms + eps);
    ref[5][i] = v0[i] - mo;
  }
  for (int k = 0; k < 6; k++) {
    char *fetch = g_strdup_printf("%s_var/read", names[k]);
    weft_tensor_t *t = run_fetch(s, fetch, NULL);
    check_close(t, ref[k], 3, 1e-12, 1e-14, targets[k]);
    weft_tensor_unref(t);
    g_free(fetch);
  }
  weft_session_free(s);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  g_test_add_func("/kernels/backend/device", test_backend_device);
  g_test_add_func("/kernels/const/string", test_const_string);
  g_test_add_func("/kernels/const/every_dtype", test_const_every_dtype);
  g_test_add_func("/kernels/const/placeholder_with_default", test_placeholder_with_default);
  g_test_add_func("/kernels/unary/float", test_unary_float);
  g_test_add_func("/kernels/unary/int", test_unary_int);
  g_test_add_func("/kernels/unary/nan_inf", test_nan_inf);
  g_test_add_func("/kernels/unary/sigmoid_accuracy", test_sigmoid_accuracy);
  g_test_add_func("/kernels/binary/broadcast", test_binary_broadcast);
  g_test_add_func("/kernels/binary/integer_division", test_integer_division);
  g_test_add_func("/kernels/binary/incompatible_shapes", test_incompatible_shapes);
  g_test_add_func("/kernels/binary/logic_select", test_logic_select);
  g_test_add_func("/kernels/binary/addn_clip", test_addn_clip);
  g_test_add_func("/kernels/matmul/matmul", test_matmul);
  g_test_add_func("/kernels/matmul/split", test_matmul_split);
  g_test_add_func("/kernels/matmul/split_fc", test_matmul_split_fc);
  g_test_add_func("/kernels/matmul/batch", test_batch_matmul);
  g_test_add_func("/kernels/reduce/axes", test_reductions);
  g_test_add_func("/kernels/reduce/edges", test_reduction_edges);
  g_test_add_func("/kernels/reduce/argmax_cumsum", test_argmax_cumsum);
  g_test_add_func("/kernels/reduce/large", test_large_sums);
  g_test_add_func("/kernels/nn/bias_add", test_bias_add);
  g_test_add_func("/kernels/nn/softmax_xent", test_softmax_xent);
  g_test_add_func("/kernels/array/reshape_shapes", test_reshape_shapes);
  g_test_add_func("/kernels/array/transpose_concat_pack", test_transpose_concat_pack);
  g_test_add_func("/kernels/array/slices", test_slices);
  g_test_add_func("/kernels/array/tile_pad_gather_split", test_tile_pad_gather_split);
  g_test_add_func("/kernels/array/fill_range_onehot", test_fill_range_onehot);
  g_test_add_func("/kernels/array/stitch_bcast_args", test_stitch_bcast_args);
  g_test_add_func("/kernels/cast/all_pairs", test_cast_all_pairs);
  g_test_add_func("/kernels/cast/values", test_cast_values);
  g_test_add_func("/kernels/cast/f16_elementwise", test_f16_elementwise);
  g_test_add_func("/kernels/random/seeded", test_random);
  g_test_add_func("/kernels/random/tf_stream", test_random_tf_stream);
  g_test_add_func("/kernels/random/shuffle_tf_stream", test_random_shuffle_tf_stream);
  g_test_add_func("/kernels/random/param_tf_stream", test_param_random_tf_stream);
  g_test_add_func("/kernels/random/multinomial_tf_stream", test_multinomial_tf_stream);
  g_test_add_func("/kernels/state/variables", test_variables);
  g_test_add_func("/kernels/train/optimizers", test_optimizers);
  return g_test_run();
}
