/* Small models timed whole through a session, the rows of issue 22's table that are more than
 * one op: an MLP 784-512-512-10 at batch 1 and 256 (MatMul + Add + Relu), a chain of five unary
 * ops over 16M floats, and a 3x3 Conv2D over a 224x224 RGB image. They have no baseline of
 * their own: their figure stands beside the peer's (`--peer ort`), which runs the same
 * computation as an ONNX model on the same inputs. */
#include <math.h>
#include <string.h>

#include "bench.h"

/* Uniform in [lo, hi), from a seeded LCG so that every run of the bench sees the same data. */
static weft_tensor_t *uniform(int rank, const int64_t *dims, float lo, float hi, uint32_t seed) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  int64_t n = weft_tensor_num_elements(t);
  for (int64_t k = 0; k < n; k++) {
    seed = seed * 1664525u + 1013904223u;
    p[k] = lo + (hi - lo) * (float)(seed >> 8) * (1.0f / 16777216.0f);
  }
  return t;
}

/* Times the Weft session beside the peer's (when there is one), adds the row and its peer
 * column; frees the case, the peer case and peer_why. expected_fn turns Weft's output into the
 * layout the peer's has (NULL: the same). */
static void finish_row(const bench_options_t *o, bench_report_t *r, const char *name,
                       const char *params, const char *unit, double scale, bench_case_t *c,
                       weft_status_t *st, bench_peer_case_t *peer, char *peer_why,
                       weft_tensor_t *(*expected_fn)(weft_tensor_t *), double rtol, double atol) {
  bench_stats_t weft = {0}, peer_stats = {0};
  if (!st)
    bench_measure_row(o, bench_run_case, c, NULL, NULL, peer ? bench_peer_case_run : NULL, peer,
                      scale, false, &weft, NULL, &peer_stats, &st);
  if (st) {
    bench_add_failure(r, name, st);
    bench_peer_case_free(peer);
    g_free(peer_why);
  } else {
    bench_add_row(r, name, params, unit, false, &weft, NULL, NULL,
                  "absolute; beside the peer with --peer ort");
    weft_tensor_t *expected = NULL;
    if (peer) expected = bench_case_output(c);
    if (expected && expected_fn) expected = expected_fn(expected);
    bench_peer_finish(r, o, peer, peer_why, &peer_stats, expected, rtol, atol);
    weft_tensor_unref(expected);
  }
  weft_session_free(c->session);
  weft_graph_free(c->graph);
}

/* Opens the case's session on its graph, fetching `out`. */
static weft_status_t *open_case(bench_case_t *c, weft_output_t out, weft_status_t *st) {
  if (!st) c->session = weft_session_new(c->graph, NULL, &st);
  if (!st) c->fetch = weft_node_name(out.node);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * MLP 784-512-512-10 */

static void bench_mlp(const bench_options_t *o, bench_report_t *r, int batch) {
  char name[64];
  g_snprintf(name, sizeof name, "mlp/784-512-512-10/batch_%d", batch);
  if (!bench_selected(o, name)) return;
  static const int64_t widths[4] = {784, 512, 512, 10};
  int64_t x_dims[2] = {batch, 784};
  weft_tensor_t *x = uniform(2, x_dims, 0, 1, 1u);
  bench_case_t c = {weft_graph_new(), NULL, NULL};
  weft_status_t *st = NULL;
  weft_graph_push_device(c.graph, o->device);
  weft_output_t h = weft_const(c.graph, "x", x, &st);
  bench_onnx_t *m = bench_onnx_new();
  bench_onnx_input(m, "x", 2, x_dims);
  const char *prev = "x";
  char names[3][3][16];
  for (int l = 0; l < 3 && !st; l++) {
    int64_t w_dims[2] = {widths[l], widths[l + 1]}, b_dims[1] = {widths[l + 1]};
    /* Weights of variance 1/fan_in keep every layer's activations near 1. */
    float lim = sqrtf(3.0f / (float)widths[l]);
    weft_tensor_t *w = uniform(2, w_dims, -lim, lim, 11u + (uint32_t)l);
    weft_tensor_t *b = uniform(1, b_dims, -0.1f, 0.1f, 21u + (uint32_t)l);
    weft_output_t wo = weft_const(c.graph, "w", w, &st);
    weft_output_t bo = weft_const(c.graph, "b", b, &st);
    if (!st) h = weft_matmul(c.graph, "matmul", h, wo, false, false, &st);
    if (!st) h = weft_binary(c.graph, "AddV2", "add", h, bo, &st);
    if (!st && l < 2) h = weft_unary(c.graph, "Relu", "relu", h, &st);
    g_snprintf(names[l][0], 16, "w%d", l);
    g_snprintf(names[l][1], 16, "b%d", l);
    g_snprintf(names[l][2], 16, "h%d", l);
    bench_onnx_initializer(m, names[l][0], 2, w_dims, weft_tensor_data(w));
    bench_onnx_initializer(m, names[l][1], 1, b_dims, weft_tensor_data(b));
    char mm[16], add[16];
    g_snprintf(mm, sizeof mm, "mm%d", l);
    g_snprintf(add, sizeof add, "add%d", l);
    bench_onnx_node(m, "MatMul", (const char *const[]){prev, names[l][0], NULL}, mm, NULL);
    bench_onnx_node(m, "Add", (const char *const[]){mm, names[l][1], NULL},
                    l < 2 ? add : names[l][2], NULL);
    if (l < 2) bench_onnx_node(m, "Relu", (const char *const[]){add, NULL}, names[l][2], NULL);
    prev = names[l][2];
    weft_tensor_unref(w);
    weft_tensor_unref(b);
  }
  weft_graph_pop_device(c.graph);
  int64_t y_dims[2] = {batch, 10};
  bench_onnx_output(m, "h2", 2, y_dims);
  st = open_case(&c, h, st);
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m), 1,
                                                (const char *const[]){"x"}, &x, "h2", &peer_why);
  char *params = g_strdup_printf("batch=%d layers=784-512-512-10 MatMul+Add+Relu dtype=float32 "
                                 "device=%s", batch, o->device);
  finish_row(o, r, name, params, "us", 1e6, &c, st, peer, peer_why, NULL, 1e-3, 1e-4);
  g_free(params);
  weft_tensor_unref(x);
}

/* ---------------------------------------------------------------------------------------------
 * A chain of five unary ops */

static void bench_unary_chain(const bench_options_t *o, bench_report_t *r) {
  const char *name = "chain/unary_5";
  if (!bench_selected(o, name)) return;
  /* Tanh, Exp, Sigmoid, Relu, Tanh: each input stays in its op's well-conditioned range. */
  static const char *const ops[5] = {"Tanh", "Exp", "Sigmoid", "Relu", "Tanh"};
  int64_t n = o->quick ? (1 << 22) : (1 << 24);
  int64_t dims[1] = {n};
  weft_tensor_t *x = uniform(1, dims, -4, 4, 7u);
  bench_case_t c = {weft_graph_new(), NULL, NULL};
  weft_status_t *st = NULL;
  weft_graph_push_device(c.graph, o->device);
  weft_output_t y = weft_const(c.graph, "x", x, &st);
  bench_onnx_t *m = bench_onnx_new();
  bench_onnx_input(m, "x", 1, dims);
  char prev[16] = "x", out[16] = "x";
  for (int k = 0; k < 5; k++) {
    if (!st) y = weft_unary(c.graph, ops[k], "unary", y, &st);
    g_snprintf(out, sizeof out, "u%d", k);
    bench_onnx_node(m, ops[k], (const char *const[]){prev, NULL}, out, NULL);
    g_strlcpy(prev, out, sizeof prev);
  }
  weft_graph_pop_device(c.graph);
  bench_onnx_output(m, out, 1, dims);
  st = open_case(&c, y, st);
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m), 1,
                                                (const char *const[]){"x"}, &x, out, &peer_why);
  char *params = g_strdup_printf("elements=%" G_GINT64_FORMAT " ops=Tanh,Exp,Sigmoid,Relu,Tanh "
                                 "dtype=float32 device=%s", n, o->device);
  finish_row(o, r, name, params, "ms", 1e3, &c, st, peer, peer_why, NULL, 1e-4, 1e-5);
  g_free(params);
  weft_tensor_unref(x);
}

/* ---------------------------------------------------------------------------------------------
 * Conv2D NHWC 1x224x224x3, 3x3x3x64 filter, stride 1, SAME */

enum { CONV_H = 224, CONV_W = 224, CONV_C = 3, CONV_K = 3, CONV_F = 64 };

/* NHWC [1,H,W,C] to NCHW [1,C,H,W]: ONNX's Conv is NCHW, and the peer is fed that layout,
 * transposed here once, so that its timed run is the convolution alone. */
static weft_tensor_t *nhwc_to_nchw(weft_tensor_t *t) {
  const int64_t *d = weft_tensor_dims(t);
  int64_t h = d[1], w = d[2], ch = d[3];
  int64_t dims[4] = {1, ch, h, w};
  weft_tensor_t *out = weft_tensor_new(WEFT_DT_FLOAT, 4, dims);
  const float *src = weft_tensor_data(t);
  float *dst = weft_tensor_data(out);
  for (int64_t y = 0; y < h; y++)
    for (int64_t x = 0; x < w; x++)
      for (int64_t c = 0; c < ch; c++) dst[(c * h + y) * w + x] = src[(y * w + x) * ch + c];
  weft_tensor_unref(t);
  return out;
}

static void bench_conv2d(const bench_options_t *o, bench_report_t *r) {
  const char *name = "conv2d/nhwc_224x224x3_3x3x64";
  if (!bench_selected(o, name)) return;
  int64_t x_dims[4] = {1, CONV_H, CONV_W, CONV_C};
  int64_t f_dims[4] = {CONV_K, CONV_K, CONV_C, CONV_F};
  weft_tensor_t *x = uniform(4, x_dims, 0, 1, 3u);
  weft_tensor_t *f = uniform(4, f_dims, -0.2f, 0.2f, 5u);
  bench_case_t c = {weft_graph_new(), NULL, NULL};
  weft_status_t *st = NULL;
  weft_graph_push_device(c.graph, o->device);
  weft_output_t xo = weft_const(c.graph, "x", x, &st);
  weft_output_t fo = weft_const(c.graph, "filter", f, &st);
  weft_op_builder_t *b = weft_op_new(c.graph, "Conv2D", "conv");
  weft_op_add_input(b, xo);
  weft_op_add_input(b, fo);
  static const int64_t strides[4] = {1, 1, 1, 1};
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
  weft_op_set_attr_string(b, "data_format", "NHWC");
  weft_node_t *conv = NULL;
  if (st) weft_status_free(weft_op_finish(b, NULL));
  else st = weft_op_finish(b, &conv);
  weft_graph_pop_device(c.graph);
  st = open_case(&c, conv ? weft_out(conv, 0) : xo, st);

  /* The peer: NCHW input, OIHW filter (an initializer), pads 1 on every side = SAME here. */
  weft_tensor_t *x_nchw = nhwc_to_nchw(weft_tensor_ref(x));
  int64_t w_dims[4] = {CONV_F, CONV_C, CONV_K, CONV_K};
  float *w = g_new(float, CONV_F * CONV_C * CONV_K * CONV_K);
  const float *fp = weft_tensor_data(f);
  for (int o_ = 0; o_ < CONV_F; o_++)
    for (int i = 0; i < CONV_C; i++)
      for (int ky = 0; ky < CONV_K; ky++)
        for (int kx = 0; kx < CONV_K; kx++)
          w[((o_ * CONV_C + i) * CONV_K + ky) * CONV_K + kx] =
              fp[((ky * CONV_K + kx) * CONV_C + i) * CONV_F + o_];
  bench_onnx_t *m = bench_onnx_new();
  int64_t xn_dims[4] = {1, CONV_C, CONV_H, CONV_W}, y_dims[4] = {1, CONV_F, CONV_H, CONV_W};
  bench_onnx_input(m, "x", 4, xn_dims);
  bench_onnx_initializer(m, "w", 4, w_dims, w);
  static const int64_t kernel[2] = {CONV_K, CONV_K}, pads[4] = {1, 1, 1, 1}, one[2] = {1, 1};
  const bench_onnx_ints_t attrs[] = {
      {"kernel_shape", 2, kernel}, {"pads", 4, pads}, {"strides", 2, one}, {NULL, 0, NULL}};
  bench_onnx_node(m, "Conv", (const char *const[]){"x", "w", NULL}, "y", attrs);
  bench_onnx_output(m, "y", 4, y_dims);
  g_free(w);
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m), 1,
                                                (const char *const[]){"x"}, &x_nchw, "y",
                                                &peer_why);
  char *params = g_strdup_printf("input=1x%dx%dx%d NHWC filter=%dx%dx%dx%d stride=1 padding=SAME "
                                 "dtype=float32 device=%s (the peer: NCHW data, conv timed alone)",
                                 CONV_H, CONV_W, CONV_C, CONV_K, CONV_K, CONV_C, CONV_F,
                                 o->device);
  finish_row(o, r, name, params, "ms", 1e3, &c, st, peer, peer_why, nhwc_to_nchw, 1e-4, 1e-4);
  g_free(params);
  weft_tensor_unref(x_nchw);
  weft_tensor_unref(x);
  weft_tensor_unref(f);
}

void bench_run_models(const bench_options_t *o, bench_report_t *r) {
  bench_mlp(o, r, 1);
  bench_mlp(o, r, 256);
  bench_unary_chain(o, r);
  bench_conv2d(o, r);
}
