/* test_fused_contraction.c: MatMul / Conv2D / DepthwiseConv2dNative with BiasAdd or an inference
 * FusedBatchNorm and an activation, rewritten at plan time into _FusedMatMul / _FusedConv2D /
 * _FusedDepthwiseConv2dNative (core/src/exec/fuse_contraction.c) and run by the CPU plugin's
 * epilogue kernels (plugins/cpu/cpu_epilogue.c). Each case runs a graph fused and with
 * WEFT_NO_FUSION set, checks both against a double-precision reference computed here, and reads
 * from the step stats which ops ran; a fetched intermediate, a second consumer or a training
 * batch norm keeps the graph as it is; nodes written as TensorFlow's grappler writes them run
 * too, and their bad attributes and arguments fail with exact codes and messages. */
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

/* Values from a small linear congruential sequence in [lo, hi): reproducible, not a ramp (a
 * ramp's products cancel). */
static weft_tensor_t *values(int rank, const int64_t *dims, float lo, float hi, uint32_t seed) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
    s = s * 1664525u + 1013904223u;
    p[k] = lo + (hi - lo) * (float)(s >> 8) / (float)(1u << 24);
  }
  return t;
}

static weft_output_t constant(weft_graph_t *g, const char *name, weft_tensor_t *t) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  weft_tensor_unref(t);
  return o;
}

/* Runs fetches[0..n) once with fusion on or off; *log gets "node=op;" per node that ran (NULL
 * when the step failed, whose status it returns). */
static weft_status_t *try_run(weft_graph_t *g, bool fuse, const char *const *fetches, int n,
                              weft_tensor_t **outs, char **log) {
  /* Graphs of Consts: the fused side keeps constant folding (constfold.c) off, which would
   * compute them at plan time. */
  g_setenv("WEFT_NO_FUSION", fuse ? "constfold" : "1", TRUE);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  weft_run_options_t *ro = weft_run_options_new();
  weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
  weft_run_metadata_t *meta = NULL;
  st = weft_session_run_with_options(s, ro, NULL, NULL, 0, fetches, outs, n, NULL, 0, &meta);
  *log = NULL;
  if (!st) {
    GString *l = g_string_new(NULL);
    for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++) {
      const weft_node_stats_t *r = weft_run_metadata_node_stats(meta, k);
      g_string_append_printf(l, "%s=%s;", r->node_name, r->op);
    }
    *log = g_string_free(l, FALSE);
  }
  weft_run_metadata_free(meta);
  weft_run_options_free(ro);
  weft_session_free(s);
  g_unsetenv("WEFT_NO_FUSION");
  return st;
}

static void run(weft_graph_t *g, bool fuse, const char *const *fetches, int n,
                weft_tensor_t **outs, char **log) {
  OK(try_run(g, fuse, fetches, n, outs, log));
}

static bool has(const char *log, const char *what) { return strstr(log, what) != NULL; }

/* ---------------------------------------------------------------------------------------------
 * References */

static const char *const acts[] = {NULL, "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"};
#define LEAKY_ALPHA 0.3

static double act_ref(const char *act, double v) {
  if (!act) return v;
  if (strcmp(act, "Relu") == 0) return v > 0 ? v : 0;
  if (strcmp(act, "Relu6") == 0) return v < 0 ? 0 : v > 6 ? 6 : v;
  if (strcmp(act, "Elu") == 0) return v < 0 ? expm1(v) : v;
  if (strcmp(act, "LeakyRelu") == 0) return v < 0 ? LEAKY_ALPHA * v : v;
  if (strcmp(act, "Tanh") == 0) return tanh(v);
  return 1 / (1 + exp(-v));
}

/* got[i] against ref[i] with scale[i] (the sum of the absolute terms) bounding the rounding. */
static void assert_close(const char *what, const weft_tensor_t *got, const double *ref,
                         const double *scale, int64_t n) {
  g_assert_cmpint(weft_tensor_num_elements(got), ==, n);
  const float *p = weft_tensor_data(got);
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(p[i] - ref[i]) <= 2e-6 * scale[i] + 1e-6))
      g_error("%s: element %" G_GINT64_FORMAT ": %.9g, expected %.9g (scale %g)", what, i, p[i],
              ref[i], scale[i]);
}

/* The activation node `name` (alpha for LeakyRelu) after v. */
static weft_output_t activation(weft_graph_t *g, const char *act, const char *name,
                                weft_output_t v) {
  weft_op_builder_t *b = weft_op_new(g, act, name);
  weft_op_add_input(b, v);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  if (strcmp(act, "LeakyRelu") == 0) weft_op_set_attr_float(b, "alpha", (float)LEAKY_ALPHA);
  weft_node_t *n = NULL;
  OK(weft_op_finish(b, &n));
  return (weft_output_t){n, 0};
}

/* ---------------------------------------------------------------------------------------------
 * MatMul */

typedef struct mm_case {
  int64_t m, k, n;
  bool ta, tb;
} mm_case_t;

/* out = act(op(a) op(b) + bias) in double, with the rounding scale. */
static void matmul_ref(const mm_case_t *c, const float *a, const float *b, const float *bias,
                       const char *act, double *ref, double *scale) {
  for (int64_t i = 0; i < c->m; i++)
    for (int64_t j = 0; j < c->n; j++) {
      double s = bias[j], abs_s = fabs(bias[j]);
      for (int64_t p = 0; p < c->k; p++) {
        double x = c->ta ? a[p * c->m + i] : a[i * c->k + p];
        double y = c->tb ? b[j * c->k + p] : b[p * c->n + j];
        s += x * y;
        abs_s += fabs(x * y);
      }
      ref[i * c->n + j] = act_ref(act, s);
      scale[i * c->n + j] = abs_s;
    }
}

static void test_matmul(void) {
  const mm_case_t cases[] = {{1, 37, 19, false, false},  {33, 17, 29, true, false},
                             {70, 300, 45, false, true}, {128, 64, 200, true, true},
                             {3, 1, 5, false, false},    {300, 257, 70, false, false}};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++)
    for (size_t a = 0; a < G_N_ELEMENTS(acts); a++) {
      const mm_case_t *mc = &cases[c];
      weft_graph_t *g = cpu_graph();
      int64_t ad[2] = {mc->ta ? mc->k : mc->m, mc->ta ? mc->m : mc->k};
      int64_t bd[2] = {mc->tb ? mc->n : mc->k, mc->tb ? mc->k : mc->n};
      weft_tensor_t *at = values(2, ad, -1, 1, 1 + (uint32_t)c);
      weft_tensor_t *bt = values(2, bd, -1, 1, 7 + (uint32_t)c);
      weft_tensor_t *ct = values(1, &mc->n, -2, 2, 13 + (uint32_t)c);
      double *ref = g_new(double, mc->m * mc->n), *scale = g_new(double, mc->m * mc->n);
      matmul_ref(mc, weft_tensor_data(at), weft_tensor_data(bt), weft_tensor_data(ct), acts[a],
                 ref, scale);
      weft_status_t *st = NULL;
      weft_output_t v = weft_matmul(g, "mm", constant(g, "a", at), constant(g, "b", bt), mc->ta,
                                    mc->tb, &st);
      v = weft_binary(g, "BiasAdd", "bias", v, constant(g, "c", ct), &st);
      OK(st);
      if (acts[a]) v = activation(g, acts[a], "act", v);
      const char *fetch = acts[a] ? "act" : "bias";
      for (int fuse = 0; fuse < 2; fuse++) {
        weft_tensor_t *out = NULL;
        char *log = NULL;
        run(g, fuse, &fetch, 1, &out, &log);
        char *want = g_strdup_printf("%s=_FusedMatMul;", fetch);
        if (has(log, want) != (fuse == 1) || has(log, "mm=MatMul;") == (fuse == 1))
          g_error("case %zu %s fuse %d: ran %s", c, acts[a] ? acts[a] : "-", fuse, log);
        char *what = g_strdup_printf("matmul case %zu %s fuse %d", c, acts[a] ? acts[a] : "-",
                                     fuse);
        assert_close(what, out, ref, scale, mc->m * mc->n);
        g_free(what);
        g_free(want);
        g_free(log);
        weft_tensor_unref(out);
      }
      g_free(ref);
      g_free(scale);
      weft_graph_free(g);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Convolutions */

typedef struct conv_case {
  int64_t n, h, w, c, m; /* m: output channels (depthwise: the channel multiplier) */
  int64_t kh, kw, sh, sw, dil;
  const char *padding;
  bool depthwise, batch_norm;
} conv_case_t;

static void conv_geom(const conv_case_t *c, int64_t *oh, int64_t *ow, int64_t *pt, int64_t *pl) {
  int64_t eh = (c->kh - 1) * c->dil + 1, ew = (c->kw - 1) * c->dil + 1;
  if (strcmp(c->padding, "SAME") == 0) {
    *oh = (c->h + c->sh - 1) / c->sh;
    *ow = (c->w + c->sw - 1) / c->sw;
    int64_t th = (*oh - 1) * c->sh + eh - c->h, tw = (*ow - 1) * c->sw + ew - c->w;
    *pt = th > 0 ? th / 2 : 0;
    *pl = tw > 0 ? tw / 2 : 0;
  } else {
    *oh = (c->h - eh) / c->sh + 1;
    *ow = (c->w - ew) / c->sw + 1;
    *pt = *pl = 0;
  }
}

/* NHWC convolution (filter [kh, kw, c, m], or [kh, kw, c, mult] depthwise) + per-channel
 * a * y + b + activation, in double. */
static void conv_ref(const conv_case_t *c, const float *x, const float *f, const double *ca,
                     const double *cb, const char *act, double *ref, double *scale) {
  int64_t oh, ow, pt, pl;
  conv_geom(c, &oh, &ow, &pt, &pl);
  int64_t oc = c->depthwise ? c->c * c->m : c->m;
  for (int64_t b = 0; b < c->n; b++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++)
        for (int64_t o = 0; o < oc; o++) {
          double s = 0, abs_s = 0;
          for (int64_t i = 0; i < c->kh; i++)
            for (int64_t j = 0; j < c->kw; j++) {
              int64_t iy = oy * c->sh + i * c->dil - pt, ix = ox * c->sw + j * c->dil - pl;
              if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
              const float *px = x + ((b * c->h + iy) * c->w + ix) * c->c;
              if (c->depthwise) {
                double t = (double)px[o / c->m] * f[(i * c->kw + j) * oc + o];
                s += t;
                abs_s += fabs(t);
              } else {
                for (int64_t q = 0; q < c->c; q++) {
                  double t = (double)px[q] * f[((i * c->kw + j) * c->c + q) * c->m + o];
                  s += t;
                  abs_s += fabs(t);
                }
              }
            }
          int64_t at = ((b * oh + oy) * ow + ox) * oc + o;
          ref[at] = act_ref(act, s * ca[o] + cb[o]);
          scale[at] = (abs_s + 1) * (fabs(ca[o]) + 1) + fabs(cb[o]);
        }
}

static void set_conv_attrs(weft_op_builder_t *b, const conv_case_t *c) {
  int64_t strides[4] = {1, c->sh, c->sw, 1}, dil[4] = {1, c->dil, c->dil, 1};
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_int_list(b, "dilations", dil, 4);
  weft_op_set_attr_string(b, "padding", c->padding);
}

static void test_conv(void) {
  const conv_case_t cases[] = {
      {1, 9, 11, 3, 5, 3, 3, 1, 1, 1, "SAME", false, false},
      {2, 13, 10, 4, 7, 3, 2, 2, 2, 1, "VALID", false, false},
      {1, 8, 8, 16, 32, 1, 1, 1, 1, 1, "VALID", false, false}, /* pointwise: no im2col */
      {2, 15, 15, 6, 9, 5, 5, 2, 1, 1, "SAME", false, true},
      {1, 12, 12, 8, 24, 3, 3, 1, 1, 2, "SAME", false, false}, /* dilated */
      {1, 30, 30, 16, 16, 3, 3, 1, 1, 1, "SAME", false, true}, /* several GEMM tiles */
      {1, 12, 9, 5, 2, 3, 3, 2, 2, 1, "SAME", true, false},    /* depthwise, multiplier 2 */
      {2, 7, 7, 8, 1, 3, 3, 1, 1, 1, "VALID", true, true},
      {1, 20, 20, 32, 1, 3, 3, 1, 1, 1, "SAME", true, false},
  };
  for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++)
    for (size_t a = 0; a < G_N_ELEMENTS(acts); a++) {
      const conv_case_t *c = &cases[ci];
      int64_t oh, ow, pt, pl;
      conv_geom(c, &oh, &ow, &pt, &pl);
      int64_t oc = c->depthwise ? c->c * c->m : c->m, n_out = c->n * oh * ow * oc;
      weft_graph_t *g = cpu_graph();
      int64_t xd[4] = {c->n, c->h, c->w, c->c}, fd[4] = {c->kh, c->kw, c->c, c->m};
      weft_tensor_t *xt = values(4, xd, -1, 1, 3 + (uint32_t)ci);
      weft_tensor_t *ft = values(4, fd, -1, 1, 5 + (uint32_t)ci);
      weft_tensor_t *args[4];
      for (int k = 0; k < 4; k++)
        args[k] = values(1, &oc, k == 3 ? 0.5f : -1, k == 3 ? 2 : 1, 11 + (uint32_t)(ci + k));
      double *ca = g_new(double, oc), *cb = g_new(double, oc);
      const float *av[4];
      for (int k = 0; k < 4; k++) av[k] = weft_tensor_data(args[k]);
      for (int64_t o = 0; o < oc; o++) {
        if (c->batch_norm) {
          ca[o] = av[0][o] / sqrt((double)av[3][o] + 1e-3);
          cb[o] = av[1][o] - av[2][o] * ca[o];
        } else {
          ca[o] = 1;
          cb[o] = av[0][o];
        }
      }
      double *ref = g_new(double, n_out), *scale = g_new(double, n_out);
      conv_ref(c, weft_tensor_data(xt), weft_tensor_data(ft), ca, cb, acts[a], ref, scale);
      weft_op_builder_t *b =
          weft_op_new(g, c->depthwise ? "DepthwiseConv2dNative" : "Conv2D", "conv");
      weft_op_add_input(b, constant(g, "x", xt));
      weft_op_add_input(b, constant(g, "f", ft));
      set_conv_attrs(b, c);
      weft_node_t *conv = NULL;
      OK(weft_op_finish(b, &conv));
      weft_output_t v;
      if (c->batch_norm) {
        b = weft_op_new(g, "FusedBatchNormV3", "bn");
        weft_op_add_input(b, (weft_output_t){conv, 0});
        const char *names[4] = {"scale", "offset", "mean", "var"};
        for (int k = 0; k < 4; k++) weft_op_add_input(b, constant(g, names[k], args[k]));
        weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
        weft_op_set_attr_type(b, "U", WEFT_DT_FLOAT);
        weft_op_set_attr_float(b, "epsilon", 1e-3f);
        weft_op_set_attr_bool(b, "is_training", false);
        weft_node_t *bn = NULL;
        OK(weft_op_finish(b, &bn));
        v = (weft_output_t){bn, 0};
      } else {
        weft_status_t *st = NULL;
        v = weft_binary(g, "BiasAdd", "bn", (weft_output_t){conv, 0},
                        constant(g, "bias", args[0]), &st);
        OK(st);
        for (int k = 1; k < 4; k++) weft_tensor_unref(args[k]);
      }
      if (acts[a]) v = activation(g, acts[a], "act", v);
      const char *fetch = acts[a] ? "act" : "bn";
      const char *fused_op = c->depthwise ? "_FusedDepthwiseConv2dNative" : "_FusedConv2D";
      for (int fuse = 0; fuse < 2; fuse++) {
        weft_tensor_t *out = NULL;
        char *log = NULL;
        run(g, fuse, &fetch, 1, &out, &log);
        char *want = g_strdup_printf("%s=%s;", fetch, fused_op);
        if (has(log, want) != (fuse == 1) || has(log, "conv=") == (fuse == 1))
          g_error("conv case %zu %s fuse %d: ran %s", ci, acts[a] ? acts[a] : "-", fuse, log);
        char *what =
            g_strdup_printf("conv case %zu %s fuse %d", ci, acts[a] ? acts[a] : "-", fuse);
        assert_close(what, out, ref, scale, n_out);
        g_free(what);
        g_free(want);
        g_free(log);
        weft_tensor_unref(out);
      }
      g_free(ca);
      g_free(cb);
      g_free(ref);
      g_free(scale);
      weft_graph_free(g);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Where the graph stays as it is */

/* a [4, 6] x b [6, 5] -> "mm" -> BiasAdd "bias" -> Relu "act", on `device` (NULL: the CPU). */
static weft_graph_t *small_mlp(const char *device) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, device ? device : "/device:CPU:0");
  int64_t ad[2] = {4, 6}, bd[2] = {6, 5}, n = 5;
  weft_status_t *st = NULL;
  weft_output_t v = weft_matmul(g, "mm", constant(g, "a", values(2, ad, -1, 1, 1)),
                                constant(g, "b", values(2, bd, -1, 1, 2)), false, false, &st);
  v = weft_binary(g, "BiasAdd", "bias", v, constant(g, "c", values(1, &n, -1, 1, 3)), &st);
  OK(st);
  activation(g, "Relu", "act", v);
  weft_graph_pop_device(g);
  return g;
}

static void test_not_rewritten(void) {
  weft_tensor_t *outs[2];
  char *log = NULL;
  /* The product fetched too: nothing fuses (the BiasAdd and Relu are below the elementwise
   * pass's size). */
  weft_graph_t *g = small_mlp(NULL);
  const char *f1[2] = {"act", "mm"};
  run(g, true, f1, 2, outs, &log);
  g_assert_true(has(log, "mm=MatMul;") && has(log, "bias=BiasAdd;") && has(log, "act=Relu;"));
  g_assert_false(has(log, "_Fused"));
  g_free(log);
  for (int k = 0; k < 2; k++) weft_tensor_unref(outs[k]);
  /* The biased product fetched: MatMul + BiasAdd fuse, the Relu runs alone. */
  const char *f2[2] = {"act", "bias"};
  run(g, true, f2, 2, outs, &log);
  g_assert_true(has(log, "bias=_FusedMatMul;") && has(log, "act=Relu;"));
  g_assert_false(has(log, "mm=MatMul;"));
  const float *pa = weft_tensor_data(outs[0]), *pb = weft_tensor_data(outs[1]);
  for (int k = 0; k < 20; k++) g_assert_cmpfloat(pa[k], ==, pb[k] > 0 ? pb[k] : 0);
  g_free(log);
  for (int k = 0; k < 2; k++) weft_tensor_unref(outs[k]);
  weft_graph_free(g);
  /* A second consumer of the product. */
  g = small_mlp(NULL);
  weft_status_t *st = NULL;
  weft_unary(g, "Neg", "neg", (weft_output_t){weft_graph_node(g, "mm"), 0}, &st);
  OK(st);
  const char *f3[2] = {"act", "neg"};
  run(g, true, f3, 2, outs, &log);
  g_assert_true(has(log, "mm=MatMul;"));
  g_assert_false(has(log, "_FusedMatMul"));
  g_free(log);
  for (int k = 0; k < 2; k++) weft_tensor_unref(outs[k]);
  weft_graph_free(g);
  /* A second consumer of the biased product: MatMul + BiasAdd only. */
  g = small_mlp(NULL);
  weft_unary(g, "Neg", "neg", (weft_output_t){weft_graph_node(g, "bias"), 0}, &st);
  OK(st);
  run(g, true, f3, 2, outs, &log);
  g_assert_true(has(log, "bias=_FusedMatMul;") && has(log, "act=Relu;"));
  g_free(log);
  for (int k = 0; k < 2; k++) weft_tensor_unref(outs[k]);
  weft_graph_free(g);
}

/* After a fused group, an elementwise chain fuses on its own: MatMul + BiasAdd + Relu, then
 * Sigmoid and Neg over [300, 200] (above the chain pass's 16K elements). And a fed BiasAdd:
 * the group is cut there, the Relu reads the fed value. */
static void test_with_chain_and_feed(void) {
  weft_graph_t *g = cpu_graph();
  int64_t ad[2] = {300, 40}, bd[2] = {40, 200}, n = 200;
  weft_tensor_t *at = values(2, ad, -1, 1, 1), *bt = values(2, bd, -1, 1, 2);
  weft_tensor_t *ct = values(1, &n, -1, 1, 3);
  mm_case_t mc = {300, 40, 200, false, false};
  double *ref = g_new(double, 300 * 200), *scale = g_new(double, 300 * 200);
  matmul_ref(&mc, weft_tensor_data(at), weft_tensor_data(bt), weft_tensor_data(ct), "Relu", ref,
             scale);
  weft_status_t *st = NULL;
  weft_output_t v = weft_matmul(g, "mm", constant(g, "a", at), constant(g, "b", bt), false,
                                false, &st);
  v = weft_binary(g, "BiasAdd", "bias", v, constant(g, "c", ct), &st);
  v = weft_unary(g, "Relu", "act", v, &st);
  v = weft_unary(g, "Sigmoid", "sig", v, &st);
  weft_unary(g, "Neg", "neg", v, &st);
  OK(st);
  const char *fetch = "neg";
  weft_tensor_t *out = NULL;
  char *log = NULL;
  run(g, true, &fetch, 1, &out, &log);
  if (!has(log, "act=_FusedMatMul;") || !has(log, "neg=_FusedElementwise(sig;neg);"))
    g_error("ran %s", log);
  for (int64_t i = 0; i < 300 * 200; i++) {
    ref[i] = -1 / (1 + exp(-ref[i]));
    scale[i] = 1;
  }
  assert_close("fused group then chain", out, ref, scale, 300 * 200);
  g_free(log);
  weft_tensor_unref(out);
  /* Feeding the biased product: nothing above it runs, the Relu takes the fed value. */
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  int64_t od[2] = {300, 200};
  weft_tensor_t *feed = values(2, od, -2, 2, 9);
  const char *feed_name = "bias", *act = "act";
  OK(weft_session_run(s, &feed_name, &feed, 1, &act, &out, 1, NULL, 0));
  const float *pf = weft_tensor_data(feed), *po = weft_tensor_data(out);
  for (int64_t i = 0; i < 300 * 200; i++) g_assert_cmpfloat(po[i], ==, pf[i] > 0 ? pf[i] : 0);
  weft_tensor_unref(out);
  weft_tensor_unref(feed);
  weft_session_free(s);
  g_free(ref);
  g_free(scale);
  weft_graph_free(g);
}

/* A training batch norm (is_training defaults to true) is not an epilogue. */
static void test_training_batch_norm_not_fused(void) {
  weft_graph_t *g = cpu_graph();
  int64_t xd[4] = {1, 5, 5, 2}, fd[4] = {3, 3, 2, 3}, three = 3;
  conv_case_t c = {1, 5, 5, 2, 3, 3, 3, 1, 1, 1, "SAME", false, false};
  weft_op_builder_t *b = weft_op_new(g, "Conv2D", "conv");
  weft_op_add_input(b, constant(g, "x", values(4, xd, -1, 1, 1)));
  weft_op_add_input(b, constant(g, "f", values(4, fd, -1, 1, 2)));
  set_conv_attrs(b, &c);
  weft_node_t *conv = NULL;
  OK(weft_op_finish(b, &conv));
  b = weft_op_new(g, "FusedBatchNorm", "bn");
  weft_op_add_input(b, (weft_output_t){conv, 0});
  weft_op_add_input(b, constant(g, "scale", values(1, &three, 1, 2, 3)));
  weft_op_add_input(b, constant(g, "offset", values(1, &three, -1, 1, 4)));
  int64_t zero = 0;
  weft_op_add_input(b, constant(g, "mean", weft_tensor_new(WEFT_DT_FLOAT, 1, &zero)));
  weft_op_add_input(b, constant(g, "var", weft_tensor_new(WEFT_DT_FLOAT, 1, &zero)));
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  OK(weft_op_finish(b, NULL));
  const char *fetch = "bn";
  weft_tensor_t *out = NULL;
  char *log = NULL;
  run(g, true, &fetch, 1, &out, &log);
  g_assert_true(has(log, "conv=Conv2D;") && has(log, "bn=FusedBatchNorm;"));
  g_free(log);
  weft_tensor_unref(out);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Nodes as TensorFlow writes them */

/* _FusedMatMul(a [3, 4], b [4, 5], args: n_args vectors of bias_n) with the given fused_ops,
 * run as written (WEFT_NO_FUSION), from a GraphDef the graph was written to and read back (as a
 * graph TensorFlow optimized comes). Returns the status of the run. */
static weft_status_t *run_fused_matmul(const char *const *ops, int n_ops, int64_t bias_n,
                                       int n_args, weft_tensor_t **out) {
  weft_graph_t *g = cpu_graph();
  int64_t ad[2] = {3, 4}, bd[2] = {4, 5};
  weft_op_builder_t *b = weft_op_new(g, "_FusedMatMul", "fmm");
  weft_op_add_input(b, constant(g, "a", values(2, ad, -1, 1, 1)));
  weft_op_add_input(b, constant(g, "b", values(2, bd, -1, 1, 2)));
  weft_output_t args[4];
  for (int k = 0; k < n_args; k++) {
    char name[8];
    g_snprintf(name, sizeof name, "arg%d", k);
    args[k] = constant(g, name, values(1, &bias_n, -1, 1, 3 + (uint32_t)k));
  }
  weft_op_add_input_list(b, args, n_args);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_int(b, "num_args", n_args);
  weft_op_set_attr_string_list(b, "fused_ops", ops, n_ops);
  weft_op_set_attr_float(b, "leakyrelu_alpha", 0.5f);
  OK(weft_op_finish(b, NULL));
  void *bytes = NULL;
  size_t len = 0;
  OK(weft_graph_export_graphdef(g, &bytes, &len));
  weft_graph_free(g);
  g = cpu_graph();
  OK(weft_graph_import_graphdef(g, bytes, len, NULL));
  weft_free(bytes);
  g_setenv("WEFT_NO_FUSION", "1", TRUE);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch = "fmm";
  *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, &fetch, out, 1, NULL, 0);
  weft_session_free(s);
  weft_graph_free(g);
  g_unsetenv("WEFT_NO_FUSION");
  return st;
}

static void test_tensorflow_nodes(void) {
  /* [BiasAdd, LeakyRelu] with leakyrelu_alpha 0.5 against the reference. */
  const char *ops[2] = {"BiasAdd", "LeakyRelu"};
  weft_tensor_t *out = NULL;
  OK(run_fused_matmul(ops, 2, 5, 1, &out));
  int64_t ad[2] = {3, 4}, bd[2] = {4, 5}, n = 5;
  weft_tensor_t *at = values(2, ad, -1, 1, 1), *bt = values(2, bd, -1, 1, 2);
  weft_tensor_t *ct = values(1, &n, -1, 1, 3);
  mm_case_t mc = {3, 4, 5, false, false};
  double ref[15], scale[15];
  matmul_ref(&mc, weft_tensor_data(at), weft_tensor_data(bt), weft_tensor_data(ct), NULL, ref,
             scale);
  for (int k = 0; k < 15; k++) ref[k] = ref[k] < 0 ? 0.5 * ref[k] : ref[k];
  assert_close("_FusedMatMul as written", out, ref, scale, 15);
  weft_tensor_unref(out);
  weft_tensor_unref(at);
  weft_tensor_unref(bt);
  weft_tensor_unref(ct);
}

static void expect_error(weft_status_t *st, weft_code_t code, const char *text) {
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, code);
  if (strcmp(weft_status_message(st), text) != 0)
    g_error("message \"%s\", expected \"%s\"", weft_status_message(st), text);
  weft_status_free(st);
}

static void test_tensorflow_node_errors(void) {
  weft_tensor_t *out = NULL;
  const char *selu[2] = {"BiasAdd", "Selu"};
  expect_error(run_fused_matmul(selu, 2, 5, 1, &out), WEFT_UNIMPLEMENTED,
               "Could not create the CPU kernel for node 'fmm' (_FusedMatMul): "
               "_FusedMatMul: fusion is not implemented: [BiasAdd, Selu]");
  const char *bn[1] = {"FusedBatchNorm"};
  expect_error(run_fused_matmul(bn, 1, 5, 4, &out), WEFT_UNIMPLEMENTED,
               "Could not create the CPU kernel for node 'fmm' (_FusedMatMul): "
               "_FusedMatMul: fusion is not implemented: [FusedBatchNorm]");
  const char *bias[1] = {"BiasAdd"};
  expect_error(run_fused_matmul(bias, 1, 5, 2, &out), WEFT_INVALID_ARGUMENT,
               "Could not create the CPU kernel for node 'fmm' (_FusedMatMul): "
               "_FusedMatMul: BiasAdd takes 1 extra argument, not 2");
  expect_error(run_fused_matmul(bias, 1, 4, 1, &out), WEFT_INVALID_ARGUMENT,
               "node 'fmm': _FusedMatMul: bias must be a float vector of 5 values (the output's "
               "channels), got float32 [4] (op _FusedMatMul on "
               "/job:localhost/replica:0/task:0/device:CPU:0)");
  g_assert_null(out);
}

/* ---------------------------------------------------------------------------------------------
 * Gradients: built on the user's graph, so the fused plan computes the same ones. */

static void test_gradients(void) {
  for (size_t k = 1; k < G_N_ELEMENTS(acts); k++) {
    /* LeakyRelu's gradient reads its input, the BiasAdd, which then has two consumers: only
     * MatMul + BiasAdd fuse (TensorFlow's gradient reads the same tensor). The others' read
     * the activation's output (Relu6Grad takes either; TensorFlow 1.x passes the output). */
    bool leaky = strcmp(acts[k], "LeakyRelu") == 0;
    weft_graph_t *g = cpu_graph();
    int64_t ad[2] = {40, 30}, bd[2] = {30, 20}, n = 20;
    weft_status_t *st = NULL;
    weft_output_t a = constant(g, "a", values(2, ad, -1, 1, 1));
    weft_output_t w = constant(g, "w", values(2, bd, -1, 1, 2));
    weft_output_t c = constant(g, "c", values(1, &n, -1, 1, 3));
    weft_output_t v = weft_matmul(g, "mm", a, w, false, false, &st);
    v = weft_binary(g, "BiasAdd", "bias", v, c, &st);
    OK(st);
    weft_output_t y = activation(g, acts[k], "act", v);
    weft_output_t sq = weft_binary(g, "Mul", "sq", y, y, &st);
    OK(st);
    weft_output_t xs[3] = {a, w, c}, grads[3];
    OK(weft_gradients(g, &sq, 1, xs, 3, NULL, grads));
    char *names[3];
    const char *fetches[3];
    for (int q = 0; q < 3; q++)
      fetches[q] = names[q] = g_strdup_printf("%s:%d", weft_node_name(grads[q].node),
                                              grads[q].index);
    weft_tensor_t *fused[3], *plain[3];
    char *flog = NULL, *plog = NULL;
    run(g, true, fetches, 3, fused, &flog);
    run(g, false, fetches, 3, plain, &plog);
    const char *want = leaky ? "bias=_FusedMatMul;" : "act=_FusedMatMul;";
    if (!has(flog, want) || has(plog, "_FusedMatMul"))
      g_error("%s: fused step ran %s, unfused %s", acts[k], flog, plog);
    for (int q = 0; q < 3; q++) {
      int64_t cnt = weft_tensor_num_elements(plain[q]);
      double *r = g_new(double, cnt), *s = g_new(double, cnt);
      const float *pp = weft_tensor_data(plain[q]);
      for (int64_t i = 0; i < cnt; i++) {
        r[i] = pp[i];
        s[i] = 100 * (fabs(pp[i]) + 1);
      }
      assert_close(acts[k], fused[q], r, s, cnt);
      g_free(r);
      g_free(s);
      weft_tensor_unref(fused[q]);
      weft_tensor_unref(plain[q]);
    }
    for (int q = 0; q < 3; q++) g_free(names[q]);
    g_free(flog);
    g_free(plog);
    weft_graph_free(g);
  }
}

/* On a device whose backend has no fused kernel (Vulkan: lavapipe when no GPU), the group runs
 * as written, with the same result as on the CPU. */
static void test_other_device(void) {
  weft_graph_t *g = small_mlp("/device:VULKAN:0");
  int64_t ad[2] = {4, 6}, bd[2] = {6, 5}, n = 5;
  const char *fetch = "act";
  weft_tensor_t *out = NULL;
  char *log = NULL;
  weft_status_t *st = try_run(g, true, &fetch, 1, &out, &log);
  if (st) {
    /* No Vulkan device here (or no kernel for one of the ops): nothing to check. */
    char *why = g_strdup_printf("no Vulkan run: %s", weft_status_message(st));
    g_test_skip(why);
    g_free(why);
    weft_status_free(st);
  } else {
    /* Pinned there without soft placement: had it run on the CPU, it would have fused. */
    if (has(log, "_Fused") || !has(log, "mm=MatMul;")) g_error("ran %s", log);
    mm_case_t mc = {4, 6, 5, false, false};
    weft_tensor_t *at = values(2, ad, -1, 1, 1), *bt = values(2, bd, -1, 1, 2);
    weft_tensor_t *ct = values(1, &n, -1, 1, 3);
    double ref[20], scale[20];
    matmul_ref(&mc, weft_tensor_data(at), weft_tensor_data(bt), weft_tensor_data(ct), "Relu", ref,
               scale);
    assert_close("Vulkan", out, ref, scale, 20);
    weft_tensor_unref(at);
    weft_tensor_unref(bt);
    weft_tensor_unref(ct);
    weft_tensor_unref(out);
  }
  g_free(log);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * SpaceToBatchND -> convolution -> BatchToSpaceND, as tf.nn.convolution writes a dilated
 * convolution, runs as one convolution with dilations (and its bias and activation); checked
 * against a direct dilated convolution in double. */

typedef struct dil_case {
  const char *op;      /* Conv2D, DepthwiseConv2dNative, Conv3D */
  bool cfirst;         /* NCHW */
  int ns;
  int64_t n, in[3], c, k[3], m; /* m: output channels (depthwise: the multiplier) */
  int64_t d[3];
  bool same;
  bool bias_relu;
  int64_t pad_shift;   /* nonzero: paddings that are neither SAME nor VALID (not rewritten) */
} dil_case_t;

static weft_output_t int_const(weft_graph_t *g, const char *name, int rank, const int64_t *dims,
                               const int64_t *v) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, rank, dims);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++)
    ((int32_t *)weft_tensor_data(t))[i] = (int32_t)v[i];
  return constant(g, name, t);
}

static void test_dilated(void) {
  static const dil_case_t cases[] = {
      {"Conv2D", false, 2, 2, {7, 6, 1}, 3, {3, 3, 1}, 4, {2, 2, 1}, true, true, 0},
      {"Conv2D", false, 2, 1, {7, 6, 1}, 3, {3, 2, 1}, 4, {2, 3, 1}, false, false, 0},
      {"Conv2D", true, 2, 2, {5, 6, 1}, 2, {2, 2, 1}, 3, {1, 2, 1}, true, false, 0},
      {"DepthwiseConv2dNative", false, 2, 2, {6, 5, 1}, 3, {2, 2, 1}, 2, {2, 2, 1}, true, true, 0},
      {"Conv3D", false, 3, 1, {5, 4, 5}, 2, {2, 2, 2}, 3, {2, 1, 2}, true, false, 0},
      {"Conv2D", false, 2, 1, {7, 6, 1}, 2, {3, 3, 1}, 2, {2, 2, 1}, true, false, 1},
  };
  for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
    const dil_case_t *c = &cases[ci];
    bool dw = strcmp(c->op, "DepthwiseConv2dNative") == 0;
    int ns = c->ns, rank = ns + 2;
    int64_t oc = dw ? c->c * c->m : c->m;
    /* TensorFlow's required_space_to_batch_paddings: the dilated filter's padding, then what
     * makes each padded size a multiple of the block at the end, cropped off again. */
    int64_t pb[3], pa[3], pads[8] = {0}, crops[8] = {0}, block[4], outd[3];
    int skip = c->cfirst ? 1 : 0;
    if (c->cfirst) block[0] = 1;
    for (int i = 0; i < ns; i++) {
      int64_t total = c->same ? (c->k[i] - 1) * c->d[i] : 0;
      pb[i] = total / 2 + (i == 0 ? c->pad_shift : 0);
      pa[i] = total - total / 2;
      int64_t padded = c->in[i] + pb[i] + pa[i];
      int64_t extra = (c->d[i] - padded % c->d[i]) % c->d[i];
      pads[2 * (i + skip)] = pb[i];
      pads[2 * (i + skip) + 1] = pa[i] + extra;
      crops[2 * (i + skip) + 1] = extra;
      block[i + skip] = c->d[i];
      outd[i] = c->in[i] + pb[i] + pa[i] - (c->k[i] - 1) * c->d[i];
    }
    weft_graph_t *g = cpu_graph();
    weft_status_t *st = NULL;
    int64_t xdims[5], fdims[5], ydims[5];
    xdims[0] = ydims[0] = c->n;
    for (int i = 0; i < ns; i++) {
      xdims[1 + i + skip] = c->in[i];
      ydims[1 + i + skip] = outd[i];
      fdims[i] = c->k[i];
    }
    xdims[c->cfirst ? 1 : rank - 1] = c->c;
    ydims[c->cfirst ? 1 : rank - 1] = oc;
    fdims[ns] = c->c;
    fdims[ns + 1] = c->m;
    weft_tensor_t *xt = values(rank, xdims, -1, 1, 11 + (uint32_t)ci);
    weft_tensor_t *ft = values(rank, fdims, -1, 1, 23 + (uint32_t)ci);
    weft_tensor_t *bt = values(1, &oc, -1, 1, 37 + (uint32_t)ci);
    weft_tensor_ref(xt);
    weft_tensor_ref(ft);
    weft_tensor_ref(bt);
    weft_output_t x = constant(g, "x", xt), f = constant(g, "f", ft);
    int64_t nb = ns + skip, pdims[2] = {nb, 2};
    weft_op_builder_t *b = weft_op_new(g, "SpaceToBatchND", "s2b");
    weft_op_add_input(b, x);
    weft_op_add_input(b, int_const(g, "block", 1, &nb, block));
    weft_op_add_input(b, int_const(g, "paddings", 2, pdims, pads));
    weft_node_t *node = NULL;
    OK(weft_op_finish(b, &node));
    b = weft_op_new(g, c->op, "conv");
    weft_op_add_input(b, weft_out(node, 0));
    weft_op_add_input(b, f);
    int64_t ones[5] = {1, 1, 1, 1, 1};
    weft_op_set_attr_int_list(b, "strides", ones, rank);
    weft_op_set_attr_string(b, "padding", "VALID");
    if (c->cfirst) weft_op_set_attr_string(b, "data_format", "NCHW");
    OK(weft_op_finish(b, &node));
    b = weft_op_new(g, "BatchToSpaceND", "b2s");
    weft_op_add_input(b, weft_out(node, 0));
    weft_op_add_input(b, int_const(g, "block2", 1, &nb, block));
    weft_op_add_input(b, int_const(g, "crops", 2, pdims, crops));
    OK(weft_op_finish(b, &node));
    weft_output_t y = weft_out(node, 0);
    const char *fetch = "b2s:0";
    if (c->bias_relu) {
      y = weft_binary(g, "BiasAdd", "bias", y, constant(g, "c", bt), &st);
      OK(st);
      y = activation(g, "Relu", "act", y);
      fetch = "act:0";
    } else {
      weft_tensor_unref(bt);
    }
    /* The reference: a direct dilated convolution, channels-last indexing of each layout. */
    int64_t opix = outd[0] * outd[1] * (ns == 3 ? outd[2] : 1);
    int64_t ny = c->n * opix * oc;
    double *ref = g_new0(double, ny), *scale = g_new0(double, ny);
    const float *xv = weft_tensor_data(xt), *fv = weft_tensor_data(ft), *bv = weft_tensor_data(bt);
    int64_t in2 = ns == 3 ? c->in[2] : 1, o2 = ns == 3 ? outd[2] : 1, k2 = ns == 3 ? c->k[2] : 1;
    for (int64_t nn = 0; nn < c->n; nn++)
      for (int64_t p0 = 0; p0 < outd[0]; p0++)
        for (int64_t p1 = 0; p1 < outd[1]; p1++)
          for (int64_t p2 = 0; p2 < o2; p2++)
            for (int64_t o = 0; o < oc; o++) {
              double acc = 0, sc = 0;
              for (int64_t a0 = 0; a0 < c->k[0]; a0++)
                for (int64_t a1 = 0; a1 < c->k[1]; a1++)
                  for (int64_t a2 = 0; a2 < k2; a2++) {
                    int64_t i0 = p0 + a0 * c->d[0] - pb[0], i1 = p1 + a1 * c->d[1] - pb[1];
                    int64_t i2 = ns == 3 ? p2 + a2 * c->d[2] - pb[2] : 0;
                    if (i0 < 0 || i0 >= c->in[0] || i1 < 0 || i1 >= c->in[1] || i2 < 0 ||
                        i2 >= in2)
                      continue;
                    for (int64_t ch = 0; ch < c->c; ch++) {
                      if (dw && ch != o / c->m) continue;
                      int64_t pix = (i0 * c->in[1] + i1) * in2 + i2;
                      int64_t xi = c->cfirst ? (nn * c->c + ch) * c->in[0] * c->in[1] * in2 + pix
                                             : (nn * c->in[0] * c->in[1] * in2 + pix) * c->c + ch;
                      int64_t tap = (a0 * c->k[1] + a1) * k2 + a2;
                      int64_t fi = dw ? (tap * c->c + ch) * c->m + o % c->m
                                      : (tap * c->c + ch) * c->m + o;
                      acc += (double)xv[xi] * fv[fi];
                      sc += fabs((double)xv[xi] * fv[fi]);
                    }
                  }
              int64_t pix = (p0 * outd[1] + p1) * o2 + p2;
              int64_t yi = c->cfirst ? (nn * oc + o) * opix + pix : (nn * opix + pix) * oc + o;
              if (c->bias_relu) {
                acc += bv[o];
                acc = acc > 0 ? acc : 0;
              }
              ref[yi] = acc;
              scale[yi] = sc + 1;
            }
    weft_tensor_t *fused = NULL, *plain = NULL;
    char *flog = NULL, *plog = NULL;
    const char *fetches[1] = {fetch};
    run(g, true, fetches, 1, &fused, &flog);
    run(g, false, fetches, 1, &plain, &plog);
    bool rewritten = !has(flog, "s2b=SpaceToBatchND") && !has(flog, "conv=");
    if (rewritten != (c->pad_shift == 0) || !has(plog, "s2b=SpaceToBatchND"))
      g_error("dilated case %zu: fused step ran %s, unfused %s", ci, flog, plog);
    if (c->pad_shift == 0 && c->bias_relu && !has(flog, "act=_Fused"))
      g_error("dilated case %zu: no fused epilogue in %s", ci, flog);
    g_assert_cmpint(weft_tensor_rank(fused), ==, rank);
    for (int i = 0; i < rank; i++) g_assert_cmpint(weft_tensor_dims(fused)[i], ==, ydims[i]);
    char *what = g_strdup_printf("dilated case %zu (%s)", ci, c->op);
    assert_close(what, fused, ref, scale, ny);
    assert_close(what, plain, ref, scale, ny);
    g_free(what);
    g_free(ref);
    g_free(scale);
    g_free(flog);
    g_free(plog);
    weft_tensor_unref(fused);
    weft_tensor_unref(plain);
    weft_tensor_unref(xt);
    weft_tensor_unref(ft);
    weft_tensor_unref(bt);
    weft_graph_free(g);
  }
}

/* Transpose (channels last) -> pool -> Transpose (channels first), as Keras writes a
 * channels-first pool for the CPU, runs as the channels-first pool: the same values as the three
 * nodes unfused (the same maximum; the average's sum in the same window order). */
static void test_transposed_pool(void) {
  static const struct {
    const char *op;
    int rank;
    bool wrong_perm; /* not the NCHW <-> NHWC pair: left alone */
  } cases[] = {{"MaxPool", 4, false}, {"AvgPool", 4, false}, {"MaxPool3D", 5, false},
               {"AvgPool3D", 5, false}, {"MaxPool", 4, true}};
  for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
    int rank = cases[ci].rank;
    weft_graph_t *g = cpu_graph();
    int64_t dims[5] = {2, 3, 5, 6, 4};
    weft_output_t x = constant(g, "x", values(rank, dims, -1, 1, 51 + (uint32_t)ci));
    int64_t last[5], first[5], pdim = rank, k[5], st[5];
    for (int i = 0; i < rank; i++) {
      last[i] = i == 0 ? 0 : i == rank - 1 ? 1 : i + 1;
      first[i] = i == 0 ? 0 : i == 1 ? rank - 1 : i - 1;
      k[i] = i == 0 || i == rank - 1 ? 1 : 2 + (i % 2);
      st[i] = i == 0 || i == rank - 1 ? 1 : 2;
    }
    if (cases[ci].wrong_perm) { /* [0, 2, 1, 3] both ways: not channels to last */
      last[1] = first[1] = 2;
      last[2] = first[2] = 1;
      last[3] = first[3] = 3;
    }
    weft_op_builder_t *b = weft_op_new(g, "Transpose", "t1");
    weft_op_add_input(b, x);
    weft_op_add_input(b, int_const(g, "p1", 1, &pdim, last));
    weft_node_t *node = NULL;
    OK(weft_op_finish(b, &node));
    b = weft_op_new(g, cases[ci].op, "pool");
    weft_op_add_input(b, weft_out(node, 0));
    weft_op_set_attr_int_list(b, "ksize", k, rank);
    weft_op_set_attr_int_list(b, "strides", st, rank);
    weft_op_set_attr_string(b, "padding", "SAME");
    OK(weft_op_finish(b, &node));
    b = weft_op_new(g, "Transpose", "t2");
    weft_op_add_input(b, weft_out(node, 0));
    weft_op_add_input(b, int_const(g, "p2", 1, &pdim, first));
    OK(weft_op_finish(b, &node));
    const char *fetches[1] = {"t2:0"};
    weft_tensor_t *fused = NULL, *plain = NULL;
    char *flog = NULL, *plog = NULL;
    run(g, true, fetches, 1, &fused, &flog);
    run(g, false, fetches, 1, &plain, &plog);
    bool rewritten = !has(flog, "t1=Transpose") && !has(flog, "pool=");
    if (rewritten == cases[ci].wrong_perm || !has(plog, "t1=Transpose"))
      g_error("transposed pool case %zu: fused step ran %s, unfused %s", ci, flog, plog);
    int64_t n = weft_tensor_num_elements(plain);
    g_assert_cmpint(weft_tensor_num_elements(fused), ==, n);
    for (int i = 0; i < rank; i++)
      g_assert_cmpint(weft_tensor_dims(fused)[i], ==, weft_tensor_dims(plain)[i]);
    const float *a = weft_tensor_data(fused), *p = weft_tensor_data(plain);
    for (int64_t i = 0; i < n; i++)
      if (!(fabsf(a[i] - p[i]) <= 1e-6f))
        g_error("transposed pool case %zu: element %" G_GINT64_FORMAT ": %.9g, unfused %.9g", ci,
                i, a[i], p[i]);
    g_free(flog);
    g_free(plog);
    weft_tensor_unref(fused);
    weft_tensor_unref(plain);
    weft_graph_free(g);
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/fused_contraction/matmul", test_matmul);
  g_test_add_func("/fused_contraction/conv", test_conv);
  g_test_add_func("/fused_contraction/not_rewritten", test_not_rewritten);
  g_test_add_func("/fused_contraction/training_batch_norm", test_training_batch_norm_not_fused);
  g_test_add_func("/fused_contraction/with_chain_and_feed", test_with_chain_and_feed);
  g_test_add_func("/fused_contraction/tensorflow_nodes", test_tensorflow_nodes);
  g_test_add_func("/fused_contraction/tensorflow_node_errors", test_tensorflow_node_errors);
  g_test_add_func("/fused_contraction/gradients", test_gradients);
  g_test_add_func("/fused_contraction/dilated", test_dilated);
  g_test_add_func("/fused_contraction/transposed_pool", test_transposed_pool);
  g_test_add_func("/fused_contraction/other_device", test_other_device);
  return g_test_run();
}
