/* test_fusion.c: the plan-time fusion of elementwise chains (core/src/exec/fuse.c and the CPU
 * plugin's _FusedElementwise kernel). Each case runs one graph in two sessions, one planned with
 * fusion and one with WEFT_NO_FUSION set, and asserts that the fused result equals the unfused
 * one bit for bit (NaNs: both NaN), and from the step stats which nodes ran fused: a fetched
 * intermediate or a node with a control edge is never fused away. */
#include <glib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"

#define OK(st)                                                             \
  do {                                                                     \
    weft_status_t *st_ = (st);                                             \
    if (st_) g_error("%s: %s", #st, weft_status_message(st_));             \
  } while (0)

/* A graph whose nodes go to the CPU: the fused kernels are the CPU plugin's, and a machine with a
 * GPU would place unpinned nodes there, where the groups run unfused. */
static weft_graph_t *cpu_graph(void) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  return g;
}

static weft_tensor_t *ramp(int rank, const int64_t *dims, float lo, float hi) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  int64_t n = weft_tensor_num_elements(t);
  for (int64_t k = 0; k < n; k++) p[k] = lo + (hi - lo) * (float)k / (float)(n > 1 ? n - 1 : 1);
  /* Specials go through the chain too. */
  if (n > 8) {
    p[1] = NAN;
    p[2] = INFINITY;
    p[3] = -INFINITY;
    p[4] = -0.0f;
  }
  return t;
}

/* Runs `fetch` (and `extra`, when not NULL) once, feeding `feed` (when not NULL) as
 * `feed_name`; *ops gets "node=op;" for every node that ran, in a string the caller g_free()s. */
static weft_tensor_t *run(weft_graph_t *g, bool fuse, const char *fetch, const char *extra,
                          const char *feed_name, weft_tensor_t *feed, weft_tensor_t **extra_out,
                          char **ops) {
  /* The chains here read Consts: constant folding (constfold.c) would compute them at plan
   * time, so the fused side keeps it off to exercise the fusion. */
  g_setenv("WEFT_NO_FUSION", fuse ? "constfold" : "1", TRUE);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  const char *fetches[2] = {fetch, extra};
  weft_tensor_t *outs[2] = {NULL, NULL};
  weft_run_metadata_t *meta = NULL;
  OK(weft_session_run_with_options(s, ro, &feed_name, &feed, feed ? 1 : 0, fetches, outs,
                                   extra ? 2 : 1, NULL, 0, &meta));
  GString *log = g_string_new(NULL);
  for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
    g_string_append_printf(log, "%s=%s;", r->node_name, r->op);
  }
  *ops = g_string_free(log, FALSE);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_session_free(s);
  g_unsetenv("WEFT_NO_FUSION");
  if (extra_out) *extra_out = outs[1];
  return outs[0];
}

static void assert_same_bits(weft_tensor_t *a, weft_tensor_t *b) {
  g_assert_cmpint(weft_tensor_num_elements(a), ==, weft_tensor_num_elements(b));
  g_assert_cmpint(weft_tensor_rank(a), ==, weft_tensor_rank(b));
  const uint32_t *pa = weft_tensor_data(a), *pb = weft_tensor_data(b);
  const float *fa = weft_tensor_data(a), *fb = weft_tensor_data(b);
  /* A NaN's sign and payload are not part of any op's contract (x86 keeps the first NaN
   * operand's, and the compiler orders commutative operands as it likes). */
  for (int64_t k = 0; k < weft_tensor_num_elements(a); k++)
    if (pa[k] != pb[k] && !(isnan(fa[k]) && isnan(fb[k])))
      g_error("element %" G_GINT64_FORMAT ": fused %08x, unfused %08x", k, pa[k], pb[k]);
}

/* x -> Neg -> Sigmoid -> Mul(2) -> Tanh -> Sub(1 - .) -> LeakyRelu(0.1) -> BiasAdd(row) -> Exp
 * -> Maximum(same-shape y) -> Softplus over [rows, cols], cols not a multiple of the kernel's
 * block, so blocks straddle rows and the last one is short. */
static weft_graph_t *long_chain(int64_t rows, int64_t cols) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  int64_t dims[2] = {rows, cols};
  weft_tensor_t *xt = ramp(2, dims, -30, 30), *yt = ramp(2, dims, 5, -5);
  weft_tensor_t *bt = ramp(1, &cols, -1, 1);
  weft_output_t x = weft_const(g, "x", xt, &st);
  weft_output_t y = weft_const(g, "y", yt, &st);
  weft_output_t bias = weft_const(g, "bias", bt, &st);
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  weft_output_t v = weft_unary(g, "Neg", "neg", x, &st);
  v = weft_unary(g, "Sigmoid", "sigmoid", v, &st);
  v = weft_binary(g, "Mul", "mul", v, two, &st);
  v = weft_unary(g, "Tanh", "tanh", v, &st);
  v = weft_binary(g, "Sub", "sub", one, v, &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "LeakyRelu", "leaky");
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_float(b, "alpha", 0.1f);
  weft_node_t *leaky = NULL;
  OK(weft_op_finish(b, &leaky));
  v = (weft_output_t){leaky, 0};
  v = weft_binary(g, "BiasAdd", "bias_add", v, bias, &st);
  v = weft_unary(g, "Exp", "exp", v, &st);
  v = weft_binary(g, "Maximum", "max", v, y, &st);
  v = weft_unary(g, "Softplus", "out", v, &st);
  OK(st);
  weft_tensor_unref(xt);
  weft_tensor_unref(yt);
  weft_tensor_unref(bt);
  return g;
}

static int count(const char *log, const char *what) {
  int n = 0;
  for (const char *p = log; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
  return n;
}

/* Runs `fetch` fused and unfused (feeding `feed` as `feed_name` when it is not NULL), asserts the
 * two results are the same bits and that the unfused step fused nothing, and returns the fused
 * step's "node=op;" log, which the caller g_free()s. */
static char *run_both(weft_graph_t *g, const char *fetch, const char *feed_name,
                      weft_tensor_t *feed) {
  char *fused_log = NULL, *plain_log = NULL;
  weft_tensor_t *fused = run(g, true, fetch, NULL, feed_name, feed, NULL, &fused_log);
  weft_tensor_t *plain = run(g, false, fetch, NULL, feed_name, feed, NULL, &plain_log);
  assert_same_bits(fused, plain);
  g_assert_cmpint(count(plain_log, "_FusedElementwise"), ==, 0);
  g_free(plain_log);
  weft_tensor_unref(fused);
  weft_tensor_unref(plain);
  return fused_log;
}

static void test_long_chain(void) {
  int64_t shapes[][2] = {{8, 2048}, {3, 6007}, {517, 2049}};
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
    weft_graph_t *g = long_chain(shapes[s][0], shapes[s][1]);
    char *fused_log = NULL, *plain_log = NULL;
    weft_tensor_t *fused = run(g, true, "out", NULL, NULL, NULL, NULL, &fused_log);
    weft_tensor_t *plain = run(g, false, "out", NULL, NULL, NULL, NULL, &plain_log);
    assert_same_bits(fused, plain);
    /* The ten ops ran as one node named after the last, and not one by one. */
    g_assert_cmpint(
        count(fused_log,
              "out=_FusedElementwise(neg;sigmoid;mul;tanh;sub;leaky;bias_add;exp;max;out);"),
        ==, 1);
    g_assert_cmpint(count(fused_log, "sigmoid="), ==, 0);
    g_assert_cmpint(count(plain_log, "_FusedElementwise"), ==, 0);
    g_assert_cmpint(count(plain_log, "sigmoid=Sigmoid;"), ==, 1);
    /* Spot checks against the formula in double precision. */
    const float *p = weft_tensor_data(fused);
    int64_t cols = shapes[s][1], n = weft_tensor_num_elements(fused);
    for (int64_t k = 5; k < n; k += 997) {
      if (cols > 8 && k % cols >= 1 && k % cols <= 4) continue; /* bias's specials */
      double x = -30 + 60.0 * (double)k / (double)(n > 1 ? n - 1 : 1);
      double yv = 5 - 10.0 * (double)k / (double)(n > 1 ? n - 1 : 1);
      double bv = -1 + 2.0 * (double)(k % cols) / (double)(cols > 1 ? cols - 1 : 1);
      double v = 1 - tanh(2 / (1 + exp(x)));
      v = v < 0 ? 0.1 * v : v;
      v = exp(v + bv);
      v = v > yv ? v : yv;
      v = v > 13.94 ? v : log1p(exp(v));
      if (!(fabs(p[k] - v) <= 1e-5 * fabs(v) + 1e-6))
        g_error("shape %zu element %" G_GINT64_FORMAT ": %g, expected %g", s, k, p[k], v);
    }
    g_free(fused_log);
    g_free(plain_log);
    weft_tensor_unref(fused);
    weft_tensor_unref(plain);
    weft_graph_free(g);
  }
}

/* A chain of unary ops only, which the kernel runs through the vector chain evaluator (each
 * costly op with the cheap ones beside it in one loop): x -> Neg -> Exp -> Sigmoid -> Tanh ->
 * Relu -> Abs -> Square -> Sigmoid -> Rsqrt, over x from -30 to 30 (Sigmoid's two formulas meet
 * there) and shapes with short last blocks. Fused equals unfused bit for bit, and the formula
 * in double precision holds. */
static void test_unary_chain(void) {
  static const char *const ops[] = {"Neg", "Exp", "Sigmoid", "Tanh", "Relu",
                                    "Abs", "Square", "Sigmoid", "Rsqrt"};
  int64_t shapes[][2] = {{16, 1024}, {7, 3001}, {1, 16411}};
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
    weft_graph_t *g = cpu_graph();
    weft_status_t *st = NULL;
    weft_tensor_t *xt = ramp(2, shapes[s], -30, 30);
    weft_output_t v = weft_const(g, "x", xt, &st);
    OK(st);
    for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
      char name[16];
      g_snprintf(name, sizeof name, k + 1 == G_N_ELEMENTS(ops) ? "out" : "u%zu", k);
      v = weft_unary(g, ops[k], name, v, &st);
      OK(st);
    }
    char *fused_log = run_both(g, "out", NULL, NULL);
    g_assert_cmpint(count(fused_log, "out=_FusedElementwise("), ==, 1);
    g_assert_cmpint(count(fused_log, "u0="), ==, 0);
    g_free(fused_log);
    weft_tensor_t *fused = run(g, true, "out", NULL, NULL, NULL, NULL, &fused_log);
    g_free(fused_log);
    const float *p = weft_tensor_data(fused);
    int64_t n = weft_tensor_num_elements(fused);
    for (int64_t k = 5; k < n; k += 331) {
      double x = -30 + 60.0 * (double)k / (double)(n - 1);
      double t = tanh(1 / (1 + exp(-exp(-x))));
      t = t < 0 ? 0 : t;
      double want = 1 / sqrt(1 / (1 + exp(-t * t)));
      if (!(fabs(p[k] - want) <= 1e-5 * want))
        g_error("shape %zu element %" G_GINT64_FORMAT ": %g, expected %g", s, k, p[k], want);
    }
    weft_tensor_unref(fused);
    weft_tensor_unref(xt);
    weft_graph_free(g);
  }
}

/* Pow fuses with either operand a scalar: x^3 -> Tanh -> 2^t -> * 0.5, over a shape whose rows
 * straddle blocks; the fused result is the unfused one's bits (the same vector loops). */
static void test_pow_chain(void) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  int64_t dims[2] = {37, 1001};
  weft_tensor_t *xt = ramp(2, dims, -3, 3);
  weft_output_t x = weft_const(g, "x", xt, &st);
  weft_output_t three = weft_const_float(g, "three", 3.0f, &st);
  weft_output_t two = weft_const_float(g, "two", 2.0f, &st);
  weft_output_t half = weft_const_float(g, "half", 0.5f, &st);
  OK(st);
  weft_output_t v = weft_binary(g, "Pow", "cube", x, three, &st);
  v = weft_unary(g, "Tanh", "tanh", v, &st);
  v = weft_binary(g, "Pow", "exp2", two, v, &st);
  v = weft_binary(g, "Mul", "out", v, half, &st);
  OK(st);
  weft_tensor_unref(xt);
  char *fused_log = run_both(g, "out", NULL, NULL);
  g_assert_cmpint(count(fused_log, "out=_FusedElementwise(cube;tanh;exp2;out);"), ==, 1);
  g_free(fused_log);
  /* Against the formula: the first, middle and last elements. */
  char *log = NULL;
  weft_tensor_t *out = run(g, true, "out", NULL, NULL, NULL, NULL, &log);
  g_free(log);
  const float *p = weft_tensor_data(out);
  int64_t n = dims[0] * dims[1], at[3] = {0, n / 2, n - 1};
  for (int k = 0; k < 3; k++) {
    double xv = -3 + 6.0 * (double)at[k] / (double)(n - 1);
    double want = 0.5 * pow(2.0, tanh(xv * xv * xv));
    g_assert_cmpfloat(fabs(p[at[k]] - want), <=, 1e-5 * want);
  }
  weft_tensor_unref(out);
  weft_graph_free(g);
}

/* Fetching an intermediate keeps it: the chain splits there, and both fetches are exact. */
static void test_fetched_intermediate(void) {
  weft_graph_t *g = long_chain(40, 1000);
  char *fused_log = NULL, *plain_log = NULL;
  weft_tensor_t *mid_f = NULL, *mid_p = NULL;
  weft_tensor_t *fused = run(g, true, "out", "tanh", NULL, NULL, &mid_f, &fused_log);
  weft_tensor_t *plain = run(g, false, "out", "tanh", NULL, NULL, &mid_p, &plain_log);
  assert_same_bits(fused, plain);
  assert_same_bits(mid_f, mid_p);
  g_assert_cmpint(count(fused_log, "tanh=_FusedElementwise(neg;sigmoid;mul;tanh);"), ==, 1);
  g_assert_cmpint(count(fused_log, "out=_FusedElementwise(sub;leaky;bias_add;exp;max;out);"), ==,
                  1);
  g_assert_cmpint(count(fused_log, "mul="), ==, 0);
  g_free(fused_log);
  g_free(plain_log);
  weft_tensor_unref(fused);
  weft_tensor_unref(plain);
  weft_tensor_unref(mid_f);
  weft_tensor_unref(mid_p);
  weft_graph_free(g);
}

/* A node with a control input, a node that is a control input, and a node with two consumers
 * each end a chain. */
static void test_control_edges_and_fanout(void) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  int64_t n = 50000;
  weft_tensor_t *xt = ramp(1, &n, -3, 3);
  weft_output_t x = weft_const(g, "x", xt, &st);
  weft_tensor_unref(xt);
  weft_output_t a = weft_unary(g, "Exp", "a", x, &st);
  weft_output_t b = weft_unary(g, "Tanh", "b", a, &st); /* a control input of c */
  OK(st);
  weft_op_builder_t *ob = weft_op_new(g, "Relu", "c");
  weft_op_add_input(ob, b);
  weft_op_set_attr_type(ob, "T", WEFT_DT_FLOAT);
  weft_op_add_control_input(ob, a.node);
  weft_node_t *c = NULL;
  OK(weft_op_finish(ob, &c));
  weft_output_t d = weft_unary(g, "Square", "d", (weft_output_t){c, 0}, &st);
  weft_output_t e = weft_unary(g, "Sqrt", "e", d, &st);
  weft_output_t f = weft_binary(g, "AddV2", "f", e, d, &st); /* d has two consumers */
  weft_output_t h = weft_unary(g, "Neg", "h", f, &st);
  (void)h;
  OK(st);
  char *fused_log = run_both(g, "h", NULL, NULL);
  /* a is a control input: it stays; a -> b cannot fuse; c has a control input: it stays; c -> d
   * would fuse but d feeds two nodes, so [c] alone and [d]; e -> f -> h fuse. */
  g_assert_cmpint(count(fused_log, "a=Exp;"), ==, 1);
  g_assert_cmpint(count(fused_log, "c=Relu;"), ==, 1);
  g_assert_cmpint(count(fused_log, "d=Square;"), ==, 1);
  g_assert_cmpint(count(fused_log, "h=_FusedElementwise(e;f;h);"), ==, 1);
  g_assert_cmpint(count(fused_log, "e="), ==, 0);
  g_free(fused_log);
  weft_graph_free(g);
}

/* A graph exported after fused steps holds only the user's nodes. */
static void test_export_unchanged(void) {
  weft_graph_t *g = long_chain(16, 1024);
  char *log = NULL;
  weft_tensor_t *t = run(g, true, "out", NULL, NULL, NULL, NULL, &log);
  g_assert_cmpint(count(log, "_FusedElementwise"), ==, 1);
  size_t len = 0;
  void *bytes = NULL;
  OK(weft_graph_export_graphdef(g, &bytes, &len));
  g_assert_null(g_strstr_len(bytes, (gssize)len, "_FusedElementwise"));
  g_free(bytes);
  g_free(log);
  weft_tensor_unref(t);
  weft_graph_free(g);
}

/* MatMul -> BiasAdd -> Relu: one _FusedMatMul (exec/fuse_contraction.c), whose GEMM adds into
 * the prefilled bias; with k within one OpenBLAS block that is the unfused sum's bits too
 * (tests/test_fused_contraction.c compares other shapes within float tolerances). */
static void test_matmul_bias_relu(void) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  int64_t ad[2] = {256, 64}, bd[2] = {64, 128}, cols = 128;
  weft_tensor_t *at = ramp(2, ad, -1, 1), *bt = ramp(2, bd, 1, -1), *ct = ramp(1, &cols, -3, 3);
  weft_output_t a = weft_const(g, "a", at, &st);
  weft_output_t b = weft_const(g, "b", bt, &st);
  weft_output_t c = weft_const(g, "c", ct, &st);
  weft_output_t m = weft_matmul(g, "m", a, b, false, false, &st);
  weft_output_t v = weft_binary(g, "BiasAdd", "bias", m, c, &st);
  v = weft_unary(g, "Relu", "relu", v, &st);
  OK(st);
  weft_tensor_unref(at);
  weft_tensor_unref(bt);
  weft_tensor_unref(ct);
  char *fused_log = run_both(g, "relu", NULL, NULL);
  g_assert_cmpint(count(fused_log, "relu=_FusedMatMul;"), ==, 1);
  g_assert_cmpint(count(fused_log, "m=MatMul;"), ==, 0);
  g_assert_cmpint(count(fused_log, "_FusedElementwise"), ==, 0);
  g_free(fused_log);
  weft_graph_free(g);
}

/* A fed intermediate cuts the chain: what feeds it does not run, and the rest starts from the
 * fed value. */
static void test_fed_intermediate(void) {
  weft_graph_t *g = long_chain(40, 1000);
  int64_t dims[2] = {40, 1000};
  weft_tensor_t *feed = ramp(2, dims, -2, 2);
  char *fused_log = run_both(g, "out", "tanh", feed);
  g_assert_cmpint(count(fused_log, "out=_FusedElementwise(sub;leaky;bias_add;exp;max;out);"), ==,
                  1);
  g_assert_cmpint(count(fused_log, "tanh="), ==, 0);
  g_assert_cmpint(count(fused_log, "neg="), ==, 0);
  g_free(fused_log);
  weft_tensor_unref(feed);
  weft_graph_free(g);
}

/* Below 16K elements a chain runs node by node, and each node keeps its own step stats. */
static void test_small_not_fused(void) {
  weft_graph_t *g = long_chain(3, 1000);
  char *log = NULL;
  weft_tensor_t *t = run(g, true, "out", NULL, NULL, NULL, NULL, &log);
  g_assert_cmpint(count(log, "_FusedElementwise"), ==, 0);
  g_assert_cmpint(count(log, "sigmoid=Sigmoid;"), ==, 1);
  g_free(log);
  weft_tensor_unref(t);
  weft_graph_free(g);
}

/* x and y fed as [-1, 4096]: Neg(x) -> Mul(y) -> Sigmoid -> BiasAdd(bias) -> Tanh, planned
 * with the batch unknown. */
static weft_graph_t *unknown_batch_chain(void) {
  weft_graph_t *g = cpu_graph();
  weft_status_t *st = NULL;
  int64_t dims[2] = {-1, 4096}, cols = 4096;
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, dims, &st);
  weft_output_t y = weft_placeholder(g, "y", WEFT_DT_FLOAT, 2, dims, &st);
  weft_tensor_t *bt = ramp(1, &cols, -2, 2);
  weft_output_t bias = weft_const(g, "bias", bt, &st);
  weft_tensor_unref(bt);
  OK(st);
  weft_output_t v = weft_unary(g, "Neg", "neg", x, &st);
  v = weft_binary(g, "Mul", "mul", v, y, &st);
  v = weft_unary(g, "Sigmoid", "sigmoid", v, &st);
  v = weft_binary(g, "BiasAdd", "bias_add", v, bias, &st);
  weft_unary(g, "Tanh", "out", v, &st);
  OK(st);
  return g;
}

/* One traced step of unknown_batch_chain fed x and y of these row counts, fused or not: the
 * result (NULL on an error, then *err gets it), and *ops the "node=op;" log. */
static weft_tensor_t *run_unknown(weft_graph_t *g, bool fuse, int64_t x_rows, int64_t y_rows,
                                  char **ops, weft_status_t **err) {
  g_setenv("WEFT_NO_FUSION", fuse ? "constfold" : "1", TRUE);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  int64_t xd[2] = {x_rows, 4096}, yd[2] = {y_rows, 4096};
  weft_tensor_t *feeds[2] = {ramp(2, xd, -6, 6), ramp(2, yd, 3, -3)};
  const char *names[2] = {"x", "y"}, *fetch = "out";
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  weft_tensor_t *out = NULL;
  weft_run_metadata_t *meta = NULL;
  *err = weft_session_run_with_options(s, ro, names, feeds, 2, &fetch, &out, 1, NULL, 0, &meta);
  GString *log = g_string_new(NULL);
  for (int k = 0; meta && k < weft_run_metadata_num_node_stats(meta); k++) {
    const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
    g_string_append_printf(log, "%s=%s;", r->node_name, r->op);
  }
  *ops = g_string_free(log, FALSE);
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  weft_session_free(s);
  g_unsetenv("WEFT_NO_FUSION");
  return out;
}

/* A chain planned with the batch unknown fuses, and the step checks the shapes it gets: equal
 * shapes run the fused kernel; an operand that broadcasts (y of one row, or x of one row
 * against y of eight, which grows the output), a tensor too small to gain, or shapes that do
 * not broadcast run the members one by one, with the unfused chain's bits, shape, step stats
 * and error. */
static void test_unknown_batch(void) {
  weft_graph_t *g = unknown_batch_chain();
  static const struct {
    int64_t x_rows, y_rows, out_rows;
    bool fused;
  } cases[] = {{8, 8, 8, true}, {8, 1, 8, false}, {1, 8, 8, false}, {2, 2, 2, false}};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    char *fused_log = NULL, *plain_log = NULL;
    weft_status_t *e1 = NULL, *e2 = NULL;
    weft_tensor_t *fused = run_unknown(g, true, cases[c].x_rows, cases[c].y_rows, &fused_log, &e1);
    weft_tensor_t *plain = run_unknown(g, false, cases[c].x_rows, cases[c].y_rows, &plain_log, &e2);
    OK(e1);
    OK(e2);
    assert_same_bits(fused, plain);
    g_assert_cmpint(weft_tensor_dims(fused)[0], ==, cases[c].out_rows);
    g_assert_cmpint(weft_tensor_dims(fused)[1], ==, 4096);
    const char *whole = "out=_FusedElementwise(neg;mul;sigmoid;bias_add;out);";
    g_assert_cmpint(count(fused_log, whole), ==, cases[c].fused ? 1 : 0);
    g_assert_cmpint(count(fused_log, "mul=Mul;"), ==, cases[c].fused ? 0 : 1);
    g_assert_cmpint(count(fused_log, "out=Tanh;"), ==, cases[c].fused ? 0 : 1);
    g_assert_cmpint(count(plain_log, "_FusedElementwise"), ==, 0);
    /* One value against the formula: row r, column k. */
    int64_t r = cases[c].out_rows - 1, k = 4095;
    int64_t xr = cases[c].x_rows == 1 ? 0 : r, yr = cases[c].y_rows == 1 ? 0 : r;
    int64_t nx = cases[c].x_rows * 4096, ny = cases[c].y_rows * 4096;
    double xv = -6 + 12.0 * (double)(xr * 4096 + k) / (double)(nx - 1);
    double yv = 3 - 6.0 * (double)(yr * 4096 + k) / (double)(ny - 1);
    double want = tanh(1 / (1 + exp(xv * yv)) + 2);
    double got = ((const float *)weft_tensor_data(fused))[r * 4096 + k];
    g_assert_cmpfloat(fabs(got - want), <, 1e-5);
    g_free(fused_log);
    g_free(plain_log);
    weft_tensor_unref(fused);
    weft_tensor_unref(plain);
  }
  /* Rows that do not broadcast: Mul's own error, fused or not. */
  char *fused_log = NULL, *plain_log = NULL;
  weft_status_t *e1 = NULL, *e2 = NULL;
  g_assert_null(run_unknown(g, true, 8, 3, &fused_log, &e1));
  g_assert_null(run_unknown(g, false, 8, 3, &plain_log, &e2));
  g_assert_nonnull(e1);
  g_assert_nonnull(e2);
  g_assert_cmpint(weft_status_code(e1), ==, WEFT_INVALID_ARGUMENT);
  g_assert_cmpstr(weft_status_message(e1), ==, weft_status_message(e2));
  g_assert_cmpstr(weft_status_message(e1), ==,
                  "node 'mul': Incompatible shapes: [8,4096] vs. [3,4096] (op Mul on "
                  "/job:localhost/replica:0/task:0/device:CPU:0)");
  weft_status_free(e1);
  weft_status_free(e2);
  g_free(fused_log);
  g_free(plain_log);
  weft_graph_free(g);
}

/* The two chains again with every output written by the streaming loops (WEFT_CPU_STREAM_BYTES=1,
 * in a subprocess, since the plugin reads it once): fused and unfused still give the same bits
 * and the formula's values. */
static void test_streamed(void) {
  if (g_getenv("WEFT_TEST_FUSION_STREAM_CHILD") != NULL) {
    test_long_chain();
    test_pow_chain();
    test_unary_chain();
    return;
  }
  g_setenv("WEFT_CPU_STREAM_BYTES", "1", TRUE);
  g_setenv("WEFT_TEST_FUSION_STREAM_CHILD", "1", TRUE);
  g_test_trap_subprocess("/fusion/streamed", 240 * G_USEC_PER_SEC, 0);
  g_unsetenv("WEFT_TEST_FUSION_STREAM_CHILD");
  g_unsetenv("WEFT_CPU_STREAM_BYTES");
  g_test_trap_assert_passed();
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/fusion/long_chain_bit_exact", test_long_chain);
  g_test_add_func("/fusion/fetched_intermediate", test_fetched_intermediate);
  g_test_add_func("/fusion/pow_chain", test_pow_chain);
  g_test_add_func("/fusion/unary_chain", test_unary_chain);
  g_test_add_func("/fusion/control_edges_and_fanout", test_control_edges_and_fanout);
  g_test_add_func("/fusion/export_unchanged", test_export_unchanged);
  g_test_add_func("/fusion/fed_intermediate", test_fed_intermediate);
  g_test_add_func("/fusion/matmul_bias_relu", test_matmul_bias_relu);
  g_test_add_func("/fusion/small_not_fused", test_small_not_fused);
  g_test_add_func("/fusion/unknown_batch", test_unknown_batch);
  g_test_add_func("/fusion/streamed", test_streamed);
  return g_test_run();
}
