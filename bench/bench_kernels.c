/* Kernel benchmarks through a session: MatMul against cblas_sgemm called directly, elementwise
 * ops and reductions against plain C loops run on the same number of threads, convolutions
 * against im2col + cblas_sgemm (depthwise: a plain loop) and an MLP against cblas_sgemm. With
 * --peer ort, the MatMul, elementwise, convolution and MLP rows also run the same computation
 * as an ONNX model in ONNX Runtime, outputs checked equal (bench_ort.c). */
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "bench.h"

/* The note of a kernel row: the target on the CPU; on another device the row is a report of
 * that device against the CPU baseline (issue 8: lavapipe's Vulkan is a CPU emulation). */
static bool on_cpu(const bench_options_t *o) { return g_str_has_prefix(o->device, "/device:CPU:"); }

static const char *kernel_note(const bench_options_t *o, const char *cpu_target) {
  return on_cpu(o) ? cpu_target : "report: this device against the CPU";
}

/* ---------------------------------------------------------------------------------------------
 * A session running one op over constant inputs */

typedef bench_case_t op_case_t;

static weft_tensor_t *random_tensor(int rank, const int64_t *dims, float lo, float hi) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  uint32_t x = 12345u;
  int64_t n = weft_tensor_num_elements(t);
  for (int64_t k = 0; k < n; k++) {
    x = x * 1664525u + 1013904223u;
    p[k] = lo + (hi - lo) * (float)(x >> 8) * (1.0f / 16777216.0f);
  }
  return t;
}

/* NHWC [1,H,W,C] to NCHW [1,C,H,W] (a new tensor; t is unref'ed): ONNX's Conv is NCHW, and
 * the peer is fed that layout, transposed once before timing, so that its timed run is the
 * convolution alone; Weft's output is transposed the same way to be compared. */
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

/* The peer column of the row added last: Weft's output of case c (through `layout` when the
 * peer's differs, else NULL) checked against the peer's within rtol/atol, and its figure; or
 * why it is empty. Frees peer and peer_why. */
static void peer_column(const bench_options_t *o, bench_report_t *r, bench_case_t *c,
                        bench_peer_case_t *peer, char *peer_why, const bench_stats_t *peer_stats,
                        weft_tensor_t *(*layout)(weft_tensor_t *), double rtol, double atol) {
  weft_tensor_t *expected = peer ? bench_case_output(c) : NULL;
  if (expected && layout) expected = layout(expected);
  bench_peer_finish(r, o, peer, peer_why, peer_stats, expected, rtol, atol);
  weft_tensor_unref(expected);
}

/* Builds op(inputs...) with extra int attrs/bools set by the caller through `setup`. */
static weft_status_t *op_case_new(const bench_options_t *o, const char *op, weft_tensor_t **inputs,
                                  int n_inputs, void (*setup)(weft_op_builder_t *, void *),
                                  void *setup_arg, op_case_t *out) {
  memset(out, 0, sizeof *out);
  out->graph = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(out->graph, o->device);
  weft_op_builder_t *b = weft_op_new(out->graph, op, "bench_op");
  for (int k = 0; k < n_inputs && !st; k++) {
    char name[32];
    g_snprintf(name, sizeof name, "input%d", k);
    weft_output_t in = k == 0 ? bench_case_feed(out, name, inputs[k], &st)
                              : weft_const(out->graph, name, inputs[k], &st);
    weft_op_add_input(b, in);
  }
  if (setup) setup(b, setup_arg);
  if (st) {
    weft_status_free(weft_op_finish(b, NULL));
    return st;
  }
  st = weft_op_finish(b, NULL);
  weft_graph_pop_device(out->graph);
  if (!st) out->session = weft_session_new(out->graph, NULL, &st);
  out->fetch = "bench_op";
  return st;
}

static void op_case_free(op_case_t *c) {
  weft_session_free(c->session);
  weft_graph_free(c->graph);
  weft_tensor_unref(c->feed);
}

weft_output_t bench_case_feed(bench_case_t *c, const char *name, weft_tensor_t *value,
                              weft_status_t **status) {
  weft_output_t in = weft_placeholder(c->graph, name, weft_tensor_dtype(value),
                                      weft_tensor_rank(value), weft_tensor_dims(value), status);
  if (*status) return in;
  weft_tensor_unref(c->feed);
  c->feed = weft_tensor_ref(value);
  c->feed_name = weft_node_name(in.node);
  return in;
}

/* One step of c: its fetch, from its feed if it has one. */
static weft_status_t *case_step(bench_case_t *c, weft_tensor_t **out) {
  const char *fetch[] = {c->fetch};
  const char *feed_names[] = {c->feed_name};
  weft_tensor_t *feeds[] = {c->feed};
  return weft_session_run(c->session, feed_names, feeds, c->feed ? 1 : 0, fetch, out, 1, NULL, 0);
}

weft_tensor_t *bench_case_output(bench_case_t *c) {
  weft_tensor_t *out = NULL;
  weft_status_free(case_step(c, &out));
  return out;
}

double bench_run_case(void *arg, weft_status_t **error) {
  op_case_t *c = arg;
  weft_tensor_t *out = NULL;
  double t0 = bench_now();
  weft_status_t *st = case_step(c, &out);
  double dt = bench_now() - t0;
  weft_tensor_unref(out);
  if (st) {
    *error = st;
    return -1;
  }
  return dt;
}

/* ---------------------------------------------------------------------------------------------
 * Threaded plain loops (the baselines) */

typedef void (*range_fn)(void *arg, int64_t begin, int64_t end);

typedef struct range_job {
  range_fn fn;
  void *arg;
  int64_t begin, end;
} range_job_t;

static void *range_thread(void *p) {
  range_job_t *j = p;
  j->fn(j->arg, j->begin, j->end);
  return NULL;
}

/* The baselines' threads: --threads, by default one per core (the intra-op pool's default). */
static int loop_threads = 1;

/* Splits [0,n) over loop_threads threads. */
static void threaded(int64_t n, range_fn fn, void *arg) {
  int t = loop_threads;
  if (t < 1) t = 1;
  pthread_t threads[256];
  range_job_t jobs[256];
  if (t > 256) t = 256;
  for (int k = 0; k < t; k++) {
    jobs[k] = (range_job_t){fn, arg, n * k / t, n * (k + 1) / t};
    if (k > 0) pthread_create(&threads[k], NULL, range_thread, &jobs[k]);
  }
  range_thread(&jobs[0]);
  for (int k = 1; k < t; k++) pthread_join(threads[k], NULL);
}

typedef struct loop_args {
  const float *a, *b;
  float *out;
  int64_t rows, cols;
  int kind;
} loop_args_t;

enum {
  LOOP_ADD, LOOP_MUL, LOOP_RELU, LOOP_SIGMOID, LOOP_EXP, LOOP_LOG, LOOP_TANH, LOOP_ERF,
  LOOP_SOFTPLUS, LOOP_SUM_ROWS, LOOP_SUM_COLS, LOOP_CHAIN5, LOOP_SIN, LOOP_POW, LOOP_MUL_ROW,
  LOOP_POW_CUBE
};

static void elementwise_range(void *p, int64_t begin, int64_t end) {
  loop_args_t *a = p;
  const float *restrict x = a->a, *restrict y = a->b;
  float *restrict o = a->out;
  switch (a->kind) {
    case LOOP_ADD:
      for (int64_t k = begin; k < end; k++) o[k] = x[k] + y[k];
      break;
    case LOOP_MUL:
      for (int64_t k = begin; k < end; k++) o[k] = x[k] * y[k];
      break;
    case LOOP_RELU:
      for (int64_t k = begin; k < end; k++) o[k] = x[k] > 0 ? x[k] : 0;
      break;
    case LOOP_SIGMOID:
      for (int64_t k = begin; k < end; k++) o[k] = 1.0f / (1.0f + expf(-x[k]));
      break;
    /* glibc's float functions, one call per element: what a plain C program gets. */
    case LOOP_EXP:
      for (int64_t k = begin; k < end; k++) o[k] = expf(x[k]);
      break;
    case LOOP_LOG:
      for (int64_t k = begin; k < end; k++) o[k] = logf(x[k]);
      break;
    case LOOP_TANH:
      for (int64_t k = begin; k < end; k++) o[k] = tanhf(x[k]);
      break;
    case LOOP_ERF:
      for (int64_t k = begin; k < end; k++) o[k] = erff(x[k]);
      break;
    case LOOP_SOFTPLUS:
      /* TensorFlow's thresholds, as the kernel: x above 13.94, e^x below -13.94. */
      for (int64_t k = begin; k < end; k++) {
        float e = expf(x[k]);
        o[k] = x[k] > 13.942385f ? x[k] : (x[k] < -13.942385f ? e : log1pf(e));
      }
      break;
    case LOOP_SIN:
      for (int64_t k = begin; k < end; k++) o[k] = sinf(x[k]);
      break;
    case LOOP_POW:
      for (int64_t k = begin; k < end; k++) o[k] = powf(x[k], y[k]);
      break;
    case LOOP_POW_CUBE:
      for (int64_t k = begin; k < end; k++) o[k] = powf(x[k], y[0]);
      break;
    case LOOP_MUL_ROW: {
      /* x [rows, cols] times y [cols], repeated over the rows. */
      int64_t c = begin % a->cols;
      for (int64_t k = begin; k < end; k++) {
        o[k] = x[k] * y[c];
        if (++c == a->cols) c = 0;
      }
      break;
    }
    case LOOP_CHAIN5:
      /* bench_chain5's ops in one pass, glibc's float functions. */
      for (int64_t k = begin; k < end; k++) {
        float v = expf(-x[k]);
        v = tanhf(1.0f / (1.0f + expf(-v)));
        o[k] = v > 0 ? v : 0;
      }
      break;
    default:
      break;
  }
}

static void sum_rows_range(void *p, int64_t begin, int64_t end) {
  loop_args_t *a = p;
  for (int64_t r = begin; r < end; r++) {
    const float *row = a->a + r * a->cols;
    float s = 0;
    for (int64_t c = 0; c < a->cols; c++) s += row[c];
    a->out[r] = s;
  }
}

static void sum_cols_range(void *p, int64_t begin, int64_t end) {
  loop_args_t *a = p;
  float *restrict o = a->out;
  for (int64_t c = begin; c < end; c++) o[c] = 0;
  for (int64_t r = 0; r < a->rows; r++) {
    const float *restrict row = a->a + r * a->cols;
    for (int64_t c = begin; c < end; c++) o[c] += row[c];
  }
}

static double run_loop(void *arg, weft_status_t **error) {
  (void)error;
  loop_args_t *a = arg;
  double t0 = bench_now();
  switch (a->kind) {
    case LOOP_SUM_ROWS: threaded(a->rows, sum_rows_range, a); break;
    case LOOP_SUM_COLS: threaded(a->cols, sum_cols_range, a); break;
    default: threaded(a->rows * a->cols, elementwise_range, a); break;
  }
  return bench_now() - t0;
}

/* ---------------------------------------------------------------------------------------------
 * MatMul */

typedef void (*sgemm_fn)(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE,
                         const enum CBLAS_TRANSPOSE, const blasint, const blasint, const blasint,
                         const float, const float *, const blasint, const float *, const blasint,
                         const float, float *, const blasint);

typedef void (*set_threads_fn)(int);

/* The OpenBLAS the CPU plugin uses, opened at run time rather than linked: a library linked
 * into this program would pick its kernels before libweft could ask for the CPU's best ones
 * (OPENBLAS_CORETYPE, plugin/loader.c), and the baseline would then run other kernels than
 * the plugin's. NULL and *error when it cannot be opened. *set_threads: its
 * openblas_set_num_threads. */
static sgemm_fn openblas_sgemm(set_threads_fn *set_threads, weft_status_t **error) {
  static sgemm_fn fn;
  static set_threads_fn threads_fn;
  static char *why;
  static gsize once;
  if (g_once_init_enter(&once)) {
    void *lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      fn = (sgemm_fn)dlsym(lib, "cblas_sgemm");
      threads_fn = (set_threads_fn)dlsym(lib, "openblas_set_num_threads");
    }
    if (!fn || !threads_fn) {
      why = g_strdup_printf("cannot open OpenBLAS's cblas_sgemm and openblas_set_num_threads: %s",
                            dlerror());
      fn = NULL;
    }
    g_once_init_leave(&once, 1);
  }
  if (!fn) *error = weft_status_new(WEFT_NOT_FOUND, "%s", why);
  *set_threads = threads_fn;
  return fn;
}

typedef struct gemm_args {
  sgemm_fn sgemm;
  set_threads_fn set_threads;
  const float *a, *b;
  float *c;
  int n;
  int threads;
} gemm_args_t;

/* The baseline is OpenBLAS as a program calling it directly gets it: a thread per core. The
 * library is the plugin's own, whose kernels set its thread count per call (one for small
 * GEMMs, plugins/cpu/cpu_matmul.c), so the baseline sets it back first, untimed. */
static double run_sgemm(void *arg, weft_status_t **error) {
  (void)error;
  gemm_args_t *g = arg;
  g->set_threads(g->threads);
  double t0 = bench_now();
  g->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b,
           g->n, 0.0f, g->c, g->n);
  return bench_now() - t0;
}

static void bench_matmul(const bench_options_t *o, bench_report_t *r, int n) {
  char name[64];
  g_snprintf(name, sizeof name, "matmul/%d", n);
  if (!bench_selected(o, name)) return;
  int64_t dims[2] = {n, n};
  weft_tensor_t *ins[2] = {random_tensor(2, dims, -1, 1), random_tensor(2, dims, -1, 1)};
  op_case_t c;
  weft_status_t *st = op_case_new(o, "MatMul", ins, 2, NULL, NULL, &c);
  double flops = 2.0 * n * (double)n * n * 1e-9;
  bench_stats_t weft = {0}, base = {0};
  set_threads_fn set_threads = NULL;
  sgemm_fn sgemm = st ? NULL : openblas_sgemm(&set_threads, &st);
  bench_onnx_t *m = bench_onnx_new();
  bench_onnx_input(m, "a", 2, dims);
  bench_onnx_input(m, "b", 2, dims);
  bench_onnx_node(m, "MatMul", (const char *const[]){"a", "b", NULL}, "y", NULL);
  bench_onnx_output(m, "y", 2, dims);
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m), 2,
                                                (const char *const[]){"a", "b"}, ins, "y",
                                                &peer_why);
  bench_stats_t peer_stats = {0};
  if (!st) {
    float *out = g_new(float, (size_t)n * (size_t)n);
    gemm_args_t g = {sgemm, set_threads, weft_tensor_data(ins[0]), weft_tensor_data(ins[1]), out,
                     n, o->threads};
    bench_measure_row(o, bench_run_case, &c, run_sgemm, &g, peer ? bench_peer_case_run : NULL, peer,
                      flops, true, &weft, &base, &peer_stats, &st);
    g_free(out);
  }
  if (st) {
    bench_add_failure(r, name, st);
    bench_peer_case_free(peer);
    g_free(peer_why);
  } else {
    char *params = g_strdup_printf("n=%d dtype=float32 device=%s", n, o->device);
    bench_add_row(r, name, params, "GFLOP/s", true, &weft, &base, "cblas_sgemm direct",
                  kernel_note(o, "target >= 0.95x"));
    if (on_cpu(o)) bench_set_target_ratio(r, 0.95);
    g_free(params);
    peer_column(o, r, &c, peer, peer_why, &peer_stats, NULL, 1e-3, 1e-3);
  }
  op_case_free(&c);
  weft_tensor_unref(ins[0]);
  weft_tensor_unref(ins[1]);
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise and reductions */

static void set_axis_attrs(weft_op_builder_t *b, void *arg) {
  (void)arg;
  weft_op_set_attr_bool(b, "keep_dims", false);
}

/* The row named elementwise/<op><suffix>: `op` over 16M floats (x and, for a binary op, y of
 * the same shape; with row_len, x [16M / row_len, row_len] and y one row of row_len, the
 * broadcast of a bias). LOOP_POW_CUBE: x [16M, 1] in [-4, 4] to the power of y = {3}, GELU's
 * tanh form's Pow(x, 3). */
static void bench_elementwise_shaped(const bench_options_t *o, bench_report_t *r, const char *op,
                                     const char *suffix, const char *onnx_op, int kind,
                                     bool binary, int64_t row_len) {
  char name[64];
  g_snprintf(name, sizeof name, "elementwise/%s%s", op, suffix);
  if (!bench_selected(o, name)) return;
  int64_t n = o->quick ? (1 << 22) : (1 << 24);
  int64_t dims[2] = {n, 0}, row_dims[1] = {row_len};
  int rank = 1;
  if (row_len > 0) {
    dims[0] = n / row_len;
    dims[1] = row_len;
    rank = 2;
  }
  /* Log's input and Pow's base are positive: the rest would only make NaNs. Pow's exponent
   * is the second tensor, in [-4, 4]. */
  float lo = kind == LOOP_LOG || kind == LOOP_POW ? 0.01f : -4;
  weft_tensor_t *ins[2] = {random_tensor(rank, dims, lo, 4),
                           row_len > 0 ? random_tensor(1, row_dims, -4, 4)
                                       : random_tensor(rank, dims, -4, 4)};
  if (kind == LOOP_POW_CUBE) ((float *)weft_tensor_data(ins[1]))[0] = 3.0f;
  op_case_t c;
  weft_status_t *st = op_case_new(o, op, ins, binary ? 2 : 1, NULL, NULL, &c);
  double gb = (double)n * sizeof(float) * (binary && row_len == 0 ? 3 : 2) * 1e-9;
  bench_stats_t weft = {0}, base = {0}, peer_stats = {0};
  bench_onnx_t *m = bench_onnx_new();
  bench_onnx_input(m, "x", rank, dims);
  /* A constant exponent is an initializer on the peer's side, as a model exported with it has
   * it (ONNX Runtime may specialise on it); Weft is fed it and looks at it when it runs. */
  bool y_constant = kind == LOOP_POW_CUBE;
  if (y_constant)
    bench_onnx_initializer(m, "y", 1, row_dims, weft_tensor_data(ins[1]));
  else if (binary)
    bench_onnx_input(m, "y", row_len > 0 ? 1 : rank, row_len > 0 ? row_dims : dims);
  bench_onnx_node(m, onnx_op, binary ? (const char *const[]){"x", "y", NULL}
                                     : (const char *const[]){"x", NULL}, "z", NULL);
  bench_onnx_output(m, "z", rank, dims);
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m),
                                                binary && !y_constant ? 2 : 1,
                                                (const char *const[]){"x", "y"}, ins, "z",
                                                &peer_why);
  if (!st) {
    float *out = g_new(float, n);
    loop_args_t a = {weft_tensor_data(ins[0]), weft_tensor_data(ins[1]), out, 1, n, kind};
    if (row_len > 0) {
      a.rows = n / row_len;
      a.cols = row_len;
    }
    bench_measure_row(o, bench_run_case, &c, run_loop, &a, peer ? bench_peer_case_run : NULL, peer,
                      gb, true, &weft, &base, &peer_stats, &st);
    g_free(out);
  }
  if (st) {
    bench_add_failure(r, name, st);
    bench_peer_case_free(peer);
    g_free(peer_why);
  } else {
    char *params = row_len > 0
                       ? g_strdup_printf("elements=%" G_GINT64_FORMAT " row=%" G_GINT64_FORMAT
                                         " dtype=float32 device=%s", n, row_len, o->device)
                       : g_strdup_printf("elements=%" G_GINT64_FORMAT " dtype=float32 device=%s",
                                         n, o->device);
    bench_add_row(r, name, params, "GB/s", true, &weft, &base, "C loop, same threads",
                  kernel_note(o, "target >= 1.0x"));
    if (on_cpu(o)) bench_set_target_ratio(r, 1.0);
    g_free(params);
    /* The two libraries' transcendental functions differ in their last bits. */
    peer_column(o, r, &c, peer, peer_why, &peer_stats, NULL, 1e-4, 1e-5);
  }
  op_case_free(&c);
  weft_tensor_unref(ins[0]);
  weft_tensor_unref(ins[1]);
}

static void bench_elementwise(const bench_options_t *o, bench_report_t *r, const char *op,
                              const char *onnx_op, int kind, bool binary) {
  bench_elementwise_shaped(o, r, op, "", onnx_op, kind, binary, 0);
}

/* elementwise/chain5: Neg -> Exp -> Sigmoid -> Tanh -> Relu over 16M floats, which the CPU
 * fuses into one pass (docs/performance.md, "Fusion"); the baseline is the same five functions
 * in one C loop, the peer the five ONNX ops (which ONNX Runtime runs one after another). */
static void bench_chain5(const bench_options_t *o, bench_report_t *r) {
  const char *name = "elementwise/chain5";
  if (!bench_selected(o, name)) return;
  int64_t n = o->quick ? (1 << 22) : (1 << 24);
  weft_tensor_t *in = random_tensor(1, &n, -4, 4);
  op_case_t c;
  memset(&c, 0, sizeof c);
  c.graph = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(c.graph, o->device);
  weft_output_t v = bench_case_feed(&c, "input0", in, &st);
  static const char *const ops[] = {"Neg", "Exp", "Sigmoid", "Tanh", "Relu"};
  bench_onnx_t *m = bench_onnx_new();
  bench_onnx_input(m, "x", 1, &n);
  char prev[8] = "x", out[8] = "x";
  for (int k = 0; k < 5; k++) {
    if (!st) v = weft_unary(c.graph, ops[k], k == 4 ? "bench_op" : ops[k], v, &st);
    g_snprintf(out, sizeof out, "u%d", k);
    bench_onnx_node(m, ops[k], (const char *const[]){prev, NULL}, out, NULL);
    g_strlcpy(prev, out, sizeof prev);
  }
  bench_onnx_output(m, out, 1, &n);
  weft_graph_pop_device(c.graph);
  if (!st) c.session = weft_session_new(c.graph, NULL, &st);
  c.fetch = "bench_op";
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m), 1,
                                                (const char *const[]){"x"}, &in, out, &peer_why);
  bench_stats_t weft = {0}, base = {0}, peer_stats = {0};
  double gb = (double)n * sizeof(float) * 2 * 1e-9;
  if (!st) {
    float *buf = g_new(float, n);
    loop_args_t a = {weft_tensor_data(in), NULL, buf, 1, n, LOOP_CHAIN5};
    bench_measure_row(o, bench_run_case, &c, run_loop, &a, peer ? bench_peer_case_run : NULL, peer,
                      gb, true, &weft, &base, &peer_stats, &st);
    g_free(buf);
  }
  if (st) {
    bench_add_failure(r, name, st);
    bench_peer_case_free(peer);
    g_free(peer_why);
  } else {
    char *params = g_strdup_printf("elements=%" G_GINT64_FORMAT " ops=Neg,Exp,Sigmoid,Tanh,Relu "
                                   "dtype=float32 device=%s", n, o->device);
    bench_add_row(r, name, params, "GB/s", true, &weft, &base, "one C loop, same threads",
                  kernel_note(o, "target >= 1.0x"));
    if (on_cpu(o)) bench_set_target_ratio(r, 1.0);
    g_free(params);
    peer_column(o, r, &c, peer, peer_why, &peer_stats, NULL, 1e-4, 1e-5);
  }
  op_case_free(&c);
  weft_tensor_unref(in);
}

static void bench_reduction(const bench_options_t *o, bench_report_t *r, const char *op,
                            int axis) {
  char name[64];
  g_snprintf(name, sizeof name, "reduce/%s/%s", op, axis == 1 ? "rows" : "columns");
  if (!bench_selected(o, name)) return;
  int64_t side = o->quick ? 2048 : 4096;
  int64_t dims[2] = {side, side};
  weft_tensor_t *ins[2] = {random_tensor(2, dims, -1, 1), weft_tensor_new_scalar_int32(axis)};
  op_case_t c;
  weft_status_t *st = op_case_new(o, op, ins, 2, set_axis_attrs, NULL, &c);
  double gb = (double)side * (double)side * sizeof(float) * 1e-9;
  bench_stats_t weft = {0}, base = {0};
  if (!st) {
    float *out = g_new(float, side);
    loop_args_t a = {weft_tensor_data(ins[0]), NULL, out, side, side,
                     axis == 1 ? LOOP_SUM_ROWS : LOOP_SUM_COLS};
    bench_measure_pair(o, bench_run_case, &c, run_loop, &a, gb, true, &weft, &base, &st);
    g_free(out);
  }
  if (st) {
    bench_add_failure(r, name, st);
  } else {
    char *params = g_strdup_printf("shape=[%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] axis=%d "
                                   "dtype=float32 device=%s", side, side, axis, o->device);
    bench_add_row(r, name, params, "GB/s", true, &weft, &base, "C loop, same threads",
                  kernel_note(o, "target >= 1.0x"));
    if (on_cpu(o)) bench_set_target_ratio(r, 1.0);
    g_free(params);
  }
  op_case_free(&c);
  weft_tensor_unref(ins[0]);
  weft_tensor_unref(ins[1]);
}

/* ---------------------------------------------------------------------------------------------
 * Convolutions and an MLP: float32 NHWC, batch 1 unless named, against what a C program
 * writes plainly with OpenBLAS (a thread per core, set untimed as in run_sgemm). */

/* Adds a kernel row in GFLOP/s with its target ratio on the CPU, or its failure (st, taken). */
static void add_gflops_row(const bench_options_t *o, bench_report_t *r, const char *name,
                           weft_status_t *st, const char *params, const bench_stats_t *weft,
                           const bench_stats_t *base, const char *base_name, double target) {
  if (st) {
    bench_add_failure(r, name, st);
    return;
  }
  char *note = g_strdup_printf("target >= %.1fx", target);
  bench_add_row(r, name, params, "GFLOP/s", true, weft, base, base_name, kernel_note(o, note));
  if (on_cpu(o)) bench_set_target_ratio(r, target);
  g_free(note);
}

typedef struct conv_shape {
  const char *name;
  int64_t h, w, c, kh, kw, m, stride;
  bool depthwise; /* m is then the channel multiplier */
  bool bias_relu; /* followed by BiasAdd and Relu (the peer: Conv with B, then Relu) */
} conv_shape_t;

typedef struct conv_base {
  const conv_shape_t *s;
  sgemm_fn sgemm;
  set_threads_fn set_threads;
  const float *x, *f, *bias;
  float *cols, *y;
  int64_t oh, ow, pt, pl;
} conv_base_t;

/* The bias_relu rows' baseline epilogue: one more pass over y, as an unfused graph makes. */
static void bias_relu_pass(float *y, const float *bias, int64_t rows, int64_t n) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t q = 0; q < n; q++) {
      float v = y[i * n + q] + bias[q];
      y[i * n + q] = v < 0 ? 0 : v;
    }
}

static void set_conv_attrs(weft_op_builder_t *b, void *arg) {
  const conv_shape_t *s = arg;
  int64_t strides[4] = {1, s->stride, s->stride, 1};
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_string(b, "padding", "SAME");
}

/* Output rows of the depthwise baseline: the plain NHWC loop, channels innermost. */
static void depthwise_base_range(void *arg, int64_t begin, int64_t end) {
  const conv_base_t *j = arg;
  const conv_shape_t *s = j->s;
  int64_t mult = s->m, oc = s->c * mult;
  for (int64_t oy = begin; oy < end; oy++)
    for (int64_t ox = 0; ox < j->ow; ox++) {
      float *o = j->y + (oy * j->ow + ox) * oc;
      memset(o, 0, sizeof(float) * (size_t)oc);
      for (int64_t i = 0; i < s->kh; i++)
        for (int64_t k = 0; k < s->kw; k++) {
          int64_t iy = oy * s->stride + i - j->pt, ix = ox * s->stride + k - j->pl;
          if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
          const float *xp = j->x + (iy * s->w + ix) * s->c, *fp = j->f + (i * s->kw + k) * oc;
          for (int64_t ch = 0; ch < s->c; ch++)
            for (int64_t q = 0; q < mult; q++) o[ch * mult + q] += xp[ch] * fp[ch * mult + q];
        }
    }
}

/* im2col then one cblas_sgemm into the output; depthwise: the plain loop on every core. */
static double run_conv_base(void *arg, weft_status_t **error) {
  (void)error;
  conv_base_t *j = arg;
  const conv_shape_t *s = j->s;
  j->set_threads((int)g_get_num_processors());
  double t0 = bench_now();
  if (s->depthwise) {
    threaded(j->oh, depthwise_base_range, j);
    if (s->bias_relu) bias_relu_pass(j->y, j->bias, j->oh * j->ow, s->c * s->m);
    return bench_now() - t0;
  }
  int64_t k = s->kh * s->kw * s->c;
  for (int64_t oy = 0; oy < j->oh; oy++)
    for (int64_t ox = 0; ox < j->ow; ox++)
      for (int64_t i = 0; i < s->kh; i++)
        for (int64_t q = 0; q < s->kw; q++) {
          float *dst = j->cols + (oy * j->ow + ox) * k + (i * s->kw + q) * s->c;
          int64_t iy = oy * s->stride + i - j->pt, ix = ox * s->stride + q - j->pl;
          if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w)
            memset(dst, 0, sizeof(float) * (size_t)s->c);
          else
            memcpy(dst, j->x + (iy * s->w + ix) * s->c, sizeof(float) * (size_t)s->c);
        }
  j->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)(j->oh * j->ow), (int)s->m, (int)k,
           1.0f, j->cols, (int)k, j->f, (int)s->m, 0.0f, j->y, (int)s->m);
  if (s->bias_relu) bias_relu_pass(j->y, j->bias, j->oh * j->ow, s->m);
  return bench_now() - t0;
}

/* The peer's case of a convolution: ONNX Conv on the NCHW input x_nchw with the filter as an
 * OIHW initializer (depthwise: group = channels, [C*m, 1, kh, kw]) and SAME's pads written out
 * (the extra one at the end, as TensorFlow puts it). NULL and *why as bench_peer_row_case. */
static bench_peer_case_t *conv_peer(const bench_options_t *o, const conv_shape_t *s,
                                    const conv_base_t *j, int64_t oc, weft_tensor_t **x_nchw,
                                    char **why) {
  int64_t in_c = s->depthwise ? 1 : s->c;
  int64_t w_dims[4] = {oc, in_c, s->kh, s->kw};
  float *w = g_new(float, (size_t)(oc * in_c * s->kh * s->kw));
  /* TensorFlow's filters: Conv2D [kh, kw, C, M]; depthwise [kh, kw, C, m], output ch*m+q. */
  for (int64_t f = 0; f < oc; f++)
    for (int64_t i = 0; i < in_c; i++)
      for (int64_t ky = 0; ky < s->kh; ky++)
        for (int64_t kx = 0; kx < s->kw; kx++)
          w[((f * in_c + i) * s->kh + ky) * s->kw + kx] =
              j->f[((ky * s->kw + kx) * in_c + i) * oc + f];
  bench_onnx_t *m = bench_onnx_new();
  int64_t x_dims[4] = {1, s->c, s->h, s->w}, y_dims[4] = {1, oc, j->oh, j->ow};
  int64_t ph = (j->oh - 1) * s->stride + s->kh - s->h, pw = (j->ow - 1) * s->stride + s->kw - s->w;
  int64_t kernel[2] = {s->kh, s->kw}, strides[2] = {s->stride, s->stride}, group = s->c;
  int64_t pads[4] = {j->pt, j->pl, ph > 0 ? ph - j->pt : 0, pw > 0 ? pw - j->pl : 0};
  const bench_onnx_ints_t attrs[] = {{"kernel_shape", 2, kernel},
                                     {"pads", 4, pads},
                                     {"strides", 2, strides},
                                     {s->depthwise ? "group" : NULL, -1, &group},
                                     {NULL, 0, NULL}};
  bench_onnx_input(m, "x", 4, x_dims);
  bench_onnx_initializer(m, "w", 4, w_dims, w);
  if (s->bias_relu) {
    /* ONNX Runtime fuses these into one FusedConv. */
    bench_onnx_initializer(m, "b", 1, &oc, j->bias);
    bench_onnx_node(m, "Conv", (const char *const[]){"x", "w", "b", NULL}, "conv", attrs);
    bench_onnx_node(m, "Relu", (const char *const[]){"conv", NULL}, "y", NULL);
  } else {
    bench_onnx_node(m, "Conv", (const char *const[]){"x", "w", NULL}, "y", attrs);
  }
  bench_onnx_output(m, "y", 4, y_dims);
  g_free(w);
  return bench_peer_row_case(o, bench_onnx_finish(m), 1, (const char *const[]){"x"}, x_nchw, "y",
                             why);
}

/* Puts BiasAdd (of `bias`) and Relu after c's op, which the plan-time fusion makes one fused
 * convolution on the CPU, and fetches the Relu. */
static weft_status_t *add_bias_relu(const bench_options_t *o, op_case_t *c, weft_tensor_t *bias) {
  weft_session_free(c->session);
  c->session = NULL;
  weft_status_t *st = NULL;
  weft_graph_push_device(c->graph, o->device);
  weft_output_t conv = weft_out(weft_graph_node(c->graph, "bench_op"), 0);
  weft_output_t v = weft_binary(c->graph, "BiasAdd", "bench_bias", conv,
                                weft_const(c->graph, "bench_bias_arg", bias, &st), &st);
  if (!st) weft_unary(c->graph, "Relu", "bench_relu", v, &st);
  weft_graph_pop_device(c->graph);
  if (!st) c->session = weft_session_new(c->graph, NULL, &st);
  c->fetch = "bench_relu";
  return st;
}

static void bench_conv(const bench_options_t *o, bench_report_t *r, const conv_shape_t *s) {
  char name[64];
  g_snprintf(name, sizeof name, "conv2d/%s", s->name);
  if (!bench_selected(o, name)) return;
  int64_t xd[4] = {1, s->h, s->w, s->c}, fd[4] = {s->kh, s->kw, s->c, s->m};
  weft_tensor_t *ins[2] = {random_tensor(4, xd, -1, 1), random_tensor(4, fd, -1, 1)};
  op_case_t c;
  weft_status_t *st = op_case_new(o, s->depthwise ? "DepthwiseConv2dNative" : "Conv2D", ins, 2,
                                  set_conv_attrs, (void *)s, &c);
  int64_t oc = s->depthwise ? s->c * s->m : s->m;
  weft_tensor_t *bias = random_tensor(1, &oc, -1, 1);
  if (!st && s->bias_relu) st = add_bias_relu(o, &c, bias);
  conv_base_t j = {.s = s, .x = weft_tensor_data(ins[0]), .f = weft_tensor_data(ins[1]),
                   .bias = weft_tensor_data(bias)};
  j.oh = (s->h + s->stride - 1) / s->stride;
  j.ow = (s->w + s->stride - 1) / s->stride;
  int64_t ph = (j.oh - 1) * s->stride + s->kh - s->h, pw = (j.ow - 1) * s->stride + s->kw - s->w;
  j.pt = ph > 0 ? ph / 2 : 0;
  j.pl = pw > 0 ? pw / 2 : 0;
  double flops = 2.0 * (double)(j.oh * j.ow * oc) * (double)(s->kh * s->kw) *
                 (double)(s->depthwise ? 1 : s->c) * 1e-9;
  char *peer_why = NULL;
  weft_tensor_t *x_nchw = nhwc_to_nchw(weft_tensor_ref(ins[0]));
  bench_peer_case_t *peer = conv_peer(o, s, &j, oc, &x_nchw, &peer_why);
  bench_stats_t weft = {0}, base = {0}, peer_stats = {0};
  if (!st) j.sgemm = openblas_sgemm(&j.set_threads, &st);
  if (!st) {
    j.cols = g_new(float, (size_t)(j.oh * j.ow * s->kh * s->kw * s->c));
    j.y = g_new(float, (size_t)(j.oh * j.ow * oc));
    bench_measure_row(o, bench_run_case, &c, run_conv_base, &j, peer ? bench_peer_case_run : NULL,
                      peer, flops, true, &weft, &base, &peer_stats, &st);
    g_free(j.cols);
    g_free(j.y);
  }
  char *params = g_strdup_printf("input=[1,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%"
                                 G_GINT64_FORMAT "] filter=[%" G_GINT64_FORMAT ",%"
                                 G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT
                                 "] stride=%" G_GINT64_FORMAT " padding=SAME%s device=%s",
                                 s->h, s->w, s->c, s->kh, s->kw, s->c, s->m, s->stride,
                                 s->bias_relu ? " +BiasAdd+Relu" : "", o->device);
  if (st) {
    bench_peer_case_free(peer);
    g_free(peer_why);
  }
  bool ok = !st;
  add_gflops_row(o, r, name, st, params, &weft, &base,
                 s->depthwise ? (s->bias_relu ? "C loops, same threads" : "C loop, same threads")
                              : (s->bias_relu ? "im2col + cblas_sgemm + C loop"
                                              : "im2col + cblas_sgemm"),
                 1.0);
  /* Sums of up to 576 products of [-1, 1) floats, added in different orders. */
  if (ok) peer_column(o, r, &c, peer, peer_why, &peer_stats, nhwc_to_nchw, 1e-3, 1e-3);
  g_free(params);
  weft_tensor_unref(x_nchw);
  op_case_free(&c);
  weft_tensor_unref(ins[0]);
  weft_tensor_unref(ins[1]);
  weft_tensor_unref(bias);
}

/* ---------------------------------------------------------------------------------------------
 * Pooling gradients: float32 NHWC MaxPoolGrad and AvgPoolGrad, batch 1, as a conv net's training
 * step runs them, against the naive loop a C program writes: every output pixel's window, each
 * channel on its own (the max's argmax found channel by channel), threads over channels so that
 * no two write the same element. */

typedef struct pool_grad_shape {
  const char *name;
  int64_t h, w, c, k, stride;
  bool is_max, same;
} pool_grad_shape_t;

typedef struct pool_grad_base {
  const pool_grad_shape_t *s;
  const float *x, *dy;
  float *dx;
  int64_t oh, ow, pt, pl;
} pool_grad_base_t;

/* Channels [begin, end) of every window. */
static void pool_grad_base_range(void *arg, int64_t begin, int64_t end) {
  const pool_grad_base_t *j = arg;
  const pool_grad_shape_t *s = j->s;
  for (int64_t oy = 0; oy < j->oh; oy++)
    for (int64_t ox = 0; ox < j->ow; ox++) {
      int64_t y0 = oy * s->stride - j->pt, x0 = ox * s->stride - j->pl;
      int64_t y1 = y0 + s->k < s->h ? y0 + s->k : s->h, x1 = x0 + s->k < s->w ? x0 + s->k : s->w;
      if (y0 < 0) y0 = 0;
      if (x0 < 0) x0 = 0;
      const float *g = j->dy + (oy * j->ow + ox) * s->c;
      for (int64_t ch = begin; ch < end; ch++) {
        if (s->is_max) {
          int64_t best = (y0 * s->w + x0) * s->c + ch;
          for (int64_t y = y0; y < y1; y++)
            for (int64_t x = x0; x < x1; x++)
              if (j->x[(y * s->w + x) * s->c + ch] > j->x[best]) best = (y * s->w + x) * s->c + ch;
          j->dx[best] += g[ch];
        } else {
          float v = g[ch] / (float)((y1 - y0) * (x1 - x0));
          for (int64_t y = y0; y < y1; y++)
            for (int64_t x = x0; x < x1; x++) j->dx[(y * s->w + x) * s->c + ch] += v;
        }
      }
    }
}

static double run_pool_grad_base(void *arg, weft_status_t **error) {
  (void)error;
  pool_grad_base_t *j = arg;
  double t0 = bench_now();
  memset(j->dx, 0, sizeof(float) * (size_t)(j->s->h * j->s->w * j->s->c));
  threaded(j->s->c, pool_grad_base_range, j);
  return bench_now() - t0;
}

static void set_pool_grad_attrs(weft_op_builder_t *b, void *arg) {
  const pool_grad_shape_t *s = arg;
  int64_t ksize[4] = {1, s->k, s->k, 1}, strides[4] = {1, s->stride, s->stride, 1};
  weft_op_set_attr_int_list(b, "ksize", ksize, 4);
  weft_op_set_attr_int_list(b, "strides", strides, 4);
  weft_op_set_attr_string(b, "padding", s->same ? "SAME" : "VALID");
}

static void bench_pool_grad(const bench_options_t *o, bench_report_t *r,
                            const pool_grad_shape_t *s) {
  char name[64];
  g_snprintf(name, sizeof name, "pool_grad/%s", s->name);
  if (!bench_selected(o, name)) return;
  pool_grad_base_t j = {.s = s};
  if (s->same) {
    j.oh = (s->h + s->stride - 1) / s->stride;
    j.ow = (s->w + s->stride - 1) / s->stride;
    int64_t ph = (j.oh - 1) * s->stride + s->k - s->h, pw = (j.ow - 1) * s->stride + s->k - s->w;
    j.pt = ph > 0 ? ph / 2 : 0;
    j.pl = pw > 0 ? pw / 2 : 0;
  } else {
    j.oh = (s->h - s->k) / s->stride + 1;
    j.ow = (s->w - s->k) / s->stride + 1;
  }
  int64_t xd[4] = {1, s->h, s->w, s->c}, yd[4] = {1, j.oh, j.ow, s->c};
  weft_tensor_t *x = random_tensor(4, xd, -1, 1), *dy = random_tensor(4, yd, -1, 1);
  /* MaxPoolGrad(x fed, orig_output, dy); AvgPoolGrad(orig_input_shape fed, dy). orig_output's
   * values are not read (the kernel finds each window's maximum in x), only its shape. */
  weft_tensor_t *shape = NULL, *y = NULL;
  if (s->is_max) {
    y = random_tensor(4, yd, -1, 1);
  } else {
    int64_t four = 4;
    shape = weft_tensor_new(WEFT_DT_INT32, 1, &four);
    int32_t *p = weft_tensor_data(shape);
    for (int q = 0; q < 4; q++) p[q] = (int32_t)xd[q];
  }
  weft_tensor_t *max_ins[3] = {x, y, dy}, *avg_ins[2] = {shape, dy};
  op_case_t c;
  weft_status_t *st = op_case_new(o, s->is_max ? "MaxPoolGrad" : "AvgPoolGrad",
                                  s->is_max ? max_ins : avg_ins, s->is_max ? 3 : 2,
                                  set_pool_grad_attrs, (void *)s, &c);
  /* Bytes moved: x (max), dy, and dx written. */
  double gb = (double)((s->is_max ? 2 : 1) * s->h * s->w * s->c + j.oh * j.ow * s->c) *
              sizeof(float) * 1e-9;
  bench_stats_t weft = {0}, base = {0};
  if (!st) {
    j.x = weft_tensor_data(x);
    j.dy = weft_tensor_data(dy);
    j.dx = g_new(float, (size_t)(s->h * s->w * s->c));
    bench_measure_pair(o, bench_run_case, &c, run_pool_grad_base, &j, gb, true, &weft, &base,
                       &st);
    g_free(j.dx);
  }
  if (st) {
    bench_add_failure(r, name, st);
  } else {
    char *params = g_strdup_printf("%s input=[1,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%"
                                   G_GINT64_FORMAT "] window=%" G_GINT64_FORMAT "x%"
                                   G_GINT64_FORMAT " stride=%" G_GINT64_FORMAT
                                   " padding=%s dtype=float32 device=%s",
                                   s->is_max ? "MaxPoolGrad" : "AvgPoolGrad", s->h, s->w, s->c,
                                   s->k, s->k, s->stride, s->same ? "SAME" : "VALID", o->device);
    bench_add_row(r, name, params, "GB/s", true, &weft, &base, "C loop, same threads",
                  kernel_note(o, "target >= 1.0x"));
    if (on_cpu(o)) bench_set_target_ratio(r, 1.0);
    g_free(params);
  }
  op_case_free(&c);
  weft_tensor_unref(x);
  weft_tensor_unref(dy);
  weft_tensor_unref(y);
  weft_tensor_unref(shape);
}

/* MLP 784-512-512-10: MatMul, BiasAdd and Relu per layer (none after the last), weights and
 * input constants. */
static const int64_t mlp_sizes[4] = {784, 512, 512, 10};

typedef struct mlp_base {
  sgemm_fn sgemm;
  set_threads_fn set_threads;
  int64_t batch;
  float *x, *w[3], *b[3], *h[3];
} mlp_base_t;

static double run_mlp_base(void *arg, weft_status_t **error) {
  (void)error;
  mlp_base_t *m = arg;
  m->set_threads((int)g_get_num_processors());
  double t0 = bench_now();
  const float *in = m->x;
  for (int l = 0; l < 3; l++) {
    int64_t k = mlp_sizes[l], n = mlp_sizes[l + 1];
    m->sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m->batch, (int)n, (int)k, 1.0f, in,
             (int)k, m->w[l], (int)n, 0.0f, m->h[l], (int)n);
    for (int64_t i = 0; i < m->batch * n; i++) {
      float v = m->h[l][i] + m->b[l][i % n];
      m->h[l][i] = l < 2 && v < 0 ? 0 : v;
    }
    in = m->h[l];
  }
  return bench_now() - t0;
}

static weft_status_t *mlp_graph(const bench_options_t *o, mlp_base_t *m, op_case_t *c) {
  memset(c, 0, sizeof *c);
  c->graph = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(c->graph, o->device);
  int64_t xd[2] = {m->batch, mlp_sizes[0]};
  weft_tensor_t *xt = random_tensor(2, xd, -1, 1);
  memcpy(m->x, weft_tensor_data(xt), sizeof(float) * (size_t)(m->batch * mlp_sizes[0]));
  weft_output_t h = bench_case_feed(c, "x", xt, &st);
  weft_tensor_unref(xt);
  for (int l = 0; l < 3 && !st; l++) {
    char name[32];
    int64_t wd[2] = {mlp_sizes[l], mlp_sizes[l + 1]};
    weft_tensor_t *wt = random_tensor(2, wd, -0.1f, 0.1f), *bt = random_tensor(1, wd + 1, -1, 1);
    memcpy(m->w[l], weft_tensor_data(wt), sizeof(float) * (size_t)(wd[0] * wd[1]));
    memcpy(m->b[l], weft_tensor_data(bt), sizeof(float) * (size_t)wd[1]);
    const char *ops[3] = {"MatMul", "BiasAdd", "Relu"};
    weft_tensor_t *consts[3] = {wt, bt, NULL};
    for (int k = 0; k < (l < 2 ? 3 : 2) && !st; k++) {
      g_snprintf(name, sizeof name, "layer%d_%s", l, ops[k]);
      weft_op_builder_t *b = weft_op_new(c->graph, ops[k], name);
      weft_op_add_input(b, h);
      if (consts[k]) {
        char cname[40];
        g_snprintf(cname, sizeof cname, "%s_arg", name);
        weft_op_add_input(b, weft_const(c->graph, cname, consts[k], &st));
      }
      weft_node_t *node = NULL;
      weft_status_t *fst = weft_op_finish(b, &node);
      if (!st)
        st = fst;
      else
        weft_status_free(fst);
      if (!st) h = weft_out(node, 0);
    }
    weft_tensor_unref(wt);
    weft_tensor_unref(bt);
  }
  weft_graph_pop_device(c->graph);
  if (!st) c->session = weft_session_new(c->graph, NULL, &st);
  c->fetch = "layer2_BiasAdd";
  return st;
}

/* The peer's MLP: MatMul + Add (+ Relu) per layer, weights and biases as initializers (which
 * ONNX Runtime pre-packs at session creation), x fed. NULL and *why as bench_peer_row_case. */
static bench_peer_case_t *mlp_peer(const bench_options_t *o, const mlp_base_t *mb,
                                   weft_tensor_t **x, char **why) {
  bench_onnx_t *m = bench_onnx_new();
  int64_t x_dims[2] = {mb->batch, mlp_sizes[0]}, y_dims[2] = {mb->batch, mlp_sizes[3]};
  bench_onnx_input(m, "x", 2, x_dims);
  char prev[8] = "x";
  for (int l = 0; l < 3; l++) {
    int64_t w_dims[2] = {mlp_sizes[l], mlp_sizes[l + 1]};
    char w[8], b[8], mm[8], add[8], h[8];
    g_snprintf(w, sizeof w, "w%d", l);
    g_snprintf(b, sizeof b, "b%d", l);
    g_snprintf(mm, sizeof mm, "mm%d", l);
    g_snprintf(add, sizeof add, "add%d", l);
    g_snprintf(h, sizeof h, "h%d", l);
    bench_onnx_initializer(m, w, 2, w_dims, mb->w[l]);
    bench_onnx_initializer(m, b, 1, w_dims + 1, mb->b[l]);
    bench_onnx_node(m, "MatMul", (const char *const[]){prev, w, NULL}, mm, NULL);
    bench_onnx_node(m, "Add", (const char *const[]){mm, b, NULL}, l < 2 ? add : "y", NULL);
    if (l < 2) bench_onnx_node(m, "Relu", (const char *const[]){add, NULL}, h, NULL);
    g_strlcpy(prev, h, sizeof prev);
  }
  bench_onnx_output(m, "y", 2, y_dims);
  return bench_peer_row_case(o, bench_onnx_finish(m), 1, (const char *const[]){"x"}, x, "y", why);
}

static void bench_mlp(const bench_options_t *o, bench_report_t *r, int64_t batch) {
  char name[64];
  g_snprintf(name, sizeof name, "mlp/784-512-512-10/b%" G_GINT64_FORMAT, batch);
  if (!bench_selected(o, name)) return;
  mlp_base_t m = {.batch = batch};
  m.x = g_new(float, (size_t)(batch * mlp_sizes[0]));
  for (int l = 0; l < 3; l++) {
    m.w[l] = g_new(float, (size_t)(mlp_sizes[l] * mlp_sizes[l + 1]));
    m.b[l] = g_new(float, (size_t)mlp_sizes[l + 1]);
    m.h[l] = g_new(float, (size_t)(batch * mlp_sizes[l + 1]));
  }
  op_case_t c;
  weft_status_t *st = mlp_graph(o, &m, &c);
  double flops = 0;
  for (int l = 0; l < 3; l++) flops += 2.0 * (double)batch * mlp_sizes[l] * mlp_sizes[l + 1];
  int64_t xd[2] = {batch, mlp_sizes[0]};
  weft_tensor_t *x = weft_tensor_new(WEFT_DT_FLOAT, 2, xd);
  memcpy(weft_tensor_data(x), m.x, sizeof(float) * (size_t)(batch * mlp_sizes[0]));
  char *peer_why = NULL;
  bench_peer_case_t *peer = mlp_peer(o, &m, &x, &peer_why);
  bench_stats_t weft = {0}, base = {0}, peer_stats = {0};
  if (!st) m.sgemm = openblas_sgemm(&m.set_threads, &st);
  if (!st)
    bench_measure_row(o, bench_run_case, &c, run_mlp_base, &m, peer ? bench_peer_case_run : NULL,
                      peer, flops * 1e-9, true, &weft, &base, &peer_stats, &st);
  char *params = g_strdup_printf("batch=%" G_GINT64_FORMAT " layers=784-512-512-10 "
                                 "MatMul+BiasAdd+Relu dtype=float32 device=%s", batch, o->device);
  if (st) {
    bench_peer_case_free(peer);
    g_free(peer_why);
  }
  bool ok = !st;
  add_gflops_row(o, r, name, st, params, &weft, &base, "cblas_sgemm + C loop", 1.0);
  if (ok) peer_column(o, r, &c, peer, peer_why, &peer_stats, NULL, 1e-3, 1e-4);
  g_free(params);
  weft_tensor_unref(x);
  op_case_free(&c);
  g_free(m.x);
  for (int l = 0; l < 3; l++) {
    g_free(m.w[l]);
    g_free(m.b[l]);
    g_free(m.h[l]);
  }
}

static const conv_shape_t conv_shapes[] = {
    {"224x224x3_3x3x64", 224, 224, 3, 3, 3, 64, 1, false, false},
    {"56x56x64_3x3x64", 56, 56, 64, 3, 3, 64, 1, false, false},
    {"1x1", 56, 56, 256, 1, 1, 64, 1, false, false},
    {"1x1_stride2", 56, 56, 256, 1, 1, 128, 2, false, false},
    {"depthwise", 112, 112, 64, 3, 3, 1, 1, true, false},
    {"depthwise_x2", 56, 56, 128, 3, 3, 2, 1, true, false},
    /* The same with the bias and activation every conv net puts after them (issue 22). */
    {"56x56x64_3x3x64_bias_relu", 56, 56, 64, 3, 3, 64, 1, false, true},
    {"1x1_bias_relu", 56, 56, 256, 1, 1, 64, 1, false, true},
    {"depthwise_bias_relu", 112, 112, 64, 3, 3, 1, 1, true, true},
};

/* A ResNet stem's 3x3 / 2 max pool, VGG's 2x2 / 2, a 3x3 / 1 average pool (Inception's
 * branches) and a global average pool (Inception's last). */
static const pool_grad_shape_t pool_grad_shapes[] = {
    {"maxpool_112x112x64_3x3s2", 112, 112, 64, 3, 2, true, true},
    {"maxpool_56x56x128_2x2s2", 56, 56, 128, 2, 2, true, false},
    {"avgpool_56x56x64_3x3s1", 56, 56, 64, 3, 1, false, true},
    {"avgpool_8x8x2048_8x8s1", 8, 8, 2048, 8, 1, false, false},
};

void bench_run_kernels(const bench_options_t *o, bench_report_t *r) {
  loop_threads = o->threads > 256 ? 256 : o->threads;
  int sizes[3] = {256, 1024, 2048};
  for (int k = 0; k < (o->quick ? 2 : 3); k++) bench_matmul(o, r, sizes[k]);
  bench_elementwise(o, r, "AddV2", "Add", LOOP_ADD, true);
  bench_elementwise(o, r, "Mul", "Mul", LOOP_MUL, true);
  bench_elementwise_shaped(o, r, "Mul", "_row1024", "Mul", LOOP_MUL_ROW, true, 1024);
  bench_elementwise(o, r, "Pow", "Pow", LOOP_POW, true);
  bench_elementwise_shaped(o, r, "Pow", "_cube", "Pow", LOOP_POW_CUBE, true, 1);
  bench_elementwise(o, r, "Relu", "Relu", LOOP_RELU, false);
  bench_elementwise(o, r, "Sigmoid", "Sigmoid", LOOP_SIGMOID, false);
  bench_elementwise(o, r, "Exp", "Exp", LOOP_EXP, false);
  bench_elementwise(o, r, "Log", "Log", LOOP_LOG, false);
  bench_elementwise(o, r, "Tanh", "Tanh", LOOP_TANH, false);
  bench_elementwise(o, r, "Erf", "Erf", LOOP_ERF, false);
  bench_elementwise(o, r, "Softplus", "Softplus", LOOP_SOFTPLUS, false);
  bench_elementwise(o, r, "Sin", "Sin", LOOP_SIN, false);
  bench_chain5(o, r);
  bench_reduction(o, r, "Sum", 1);
  bench_reduction(o, r, "Sum", 0);
  bench_reduction(o, r, "Mean", 1);
  bench_reduction(o, r, "Mean", 0);
  for (size_t k = 0; k < sizeof conv_shapes / sizeof conv_shapes[0]; k++)
    bench_conv(o, r, &conv_shapes[k]);
  for (size_t k = 0; k < sizeof pool_grad_shapes / sizeof pool_grad_shapes[0]; k++)
    bench_pool_grad(o, r, &pool_grad_shapes[k]);
  bench_mlp(o, r, 1);
  bench_mlp(o, r, 256);
}
