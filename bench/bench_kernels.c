/* Kernel benchmarks through a session: MatMul against cblas_sgemm called directly, elementwise
 * ops and reductions against plain C loops run on the same number of threads. */
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
    weft_output_t in = weft_const(out->graph, name, inputs[k], &st);
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
}

weft_tensor_t *bench_case_output(bench_case_t *c) {
  weft_tensor_t *out = NULL;
  const char *fetch[] = {c->fetch};
  weft_status_free(weft_session_run(c->session, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  return out;
}

double bench_run_case(void *arg, weft_status_t **error) {
  op_case_t *c = arg;
  weft_tensor_t *out = NULL;
  const char *fetch[] = {c->fetch};
  double t0 = bench_now();
  weft_status_t *st = weft_session_run(c->session, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
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
  LOOP_SOFTPLUS, LOOP_SUM_ROWS, LOOP_SUM_COLS
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
    weft_tensor_t *expected = peer ? bench_case_output(&c) : NULL;
    bench_peer_finish(r, o, peer, peer_why, &peer_stats, expected, 1e-3, 1e-3);
    weft_tensor_unref(expected);
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

static void bench_elementwise(const bench_options_t *o, bench_report_t *r, const char *op,
                              const char *onnx_op, int kind, bool binary) {
  char name[64];
  g_snprintf(name, sizeof name, "elementwise/%s", op);
  if (!bench_selected(o, name)) return;
  int64_t n = o->quick ? (1 << 22) : (1 << 24);
  int64_t dims[1] = {n};
  /* Log's input is positive: its kernel and baseline would only make NaNs of the rest. */
  float lo = kind == LOOP_LOG ? 0.01f : -4;
  weft_tensor_t *ins[2] = {random_tensor(1, dims, lo, 4), random_tensor(1, dims, lo, 4)};
  op_case_t c;
  weft_status_t *st = op_case_new(o, op, ins, binary ? 2 : 1, NULL, NULL, &c);
  double gb = (double)n * sizeof(float) * (binary ? 3 : 2) * 1e-9;
  bench_stats_t weft = {0}, base = {0}, peer_stats = {0};
  bench_onnx_t *m = bench_onnx_new();
  bench_onnx_input(m, "x", 1, dims);
  if (binary) bench_onnx_input(m, "y", 1, dims);
  bench_onnx_node(m, onnx_op, binary ? (const char *const[]){"x", "y", NULL}
                                     : (const char *const[]){"x", NULL}, "z", NULL);
  bench_onnx_output(m, "z", 1, dims);
  char *peer_why = NULL;
  bench_peer_case_t *peer = bench_peer_row_case(o, bench_onnx_finish(m), binary ? 2 : 1,
                                                (const char *const[]){"x", "y"}, ins, "z",
                                                &peer_why);
  if (!st) {
    float *out = g_new(float, n);
    loop_args_t a = {weft_tensor_data(ins[0]), weft_tensor_data(ins[1]), out, 1, n, kind};
    bench_measure_row(o, bench_run_case, &c, run_loop, &a, peer ? bench_peer_case_run : NULL, peer,
                      gb, true, &weft, &base, &peer_stats, &st);
    g_free(out);
  }
  if (st) {
    bench_add_failure(r, name, st);
    bench_peer_case_free(peer);
    g_free(peer_why);
  } else {
    char *params = g_strdup_printf("elements=%" G_GINT64_FORMAT " dtype=float32 device=%s", n,
                                   o->device);
    bench_add_row(r, name, params, "GB/s", true, &weft, &base, "C loop, same threads",
                  kernel_note(o, "target >= 1.0x"));
    if (on_cpu(o)) bench_set_target_ratio(r, 1.0);
    g_free(params);
    /* The two libraries' transcendental functions differ in their last bits. */
    weft_tensor_t *expected = peer ? bench_case_output(&c) : NULL;
    bench_peer_finish(r, o, peer, peer_why, &peer_stats, expected, 1e-4, 1e-5);
    weft_tensor_unref(expected);
  }
  op_case_free(&c);
  weft_tensor_unref(ins[0]);
  weft_tensor_unref(ins[1]);
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

void bench_run_kernels(const bench_options_t *o, bench_report_t *r) {
  loop_threads = o->threads > 256 ? 256 : o->threads;
  int sizes[3] = {256, 1024, 2048};
  for (int k = 0; k < (o->quick ? 2 : 3); k++) bench_matmul(o, r, sizes[k]);
  bench_elementwise(o, r, "AddV2", "Add", LOOP_ADD, true);
  bench_elementwise(o, r, "Mul", "Mul", LOOP_MUL, true);
  bench_elementwise(o, r, "Relu", "Relu", LOOP_RELU, false);
  bench_elementwise(o, r, "Sigmoid", "Sigmoid", LOOP_SIGMOID, false);
  bench_elementwise(o, r, "Exp", "Exp", LOOP_EXP, false);
  bench_elementwise(o, r, "Log", "Log", LOOP_LOG, false);
  bench_elementwise(o, r, "Tanh", "Tanh", LOOP_TANH, false);
  bench_elementwise(o, r, "Erf", "Erf", LOOP_ERF, false);
  bench_elementwise(o, r, "Softplus", "Softplus", LOOP_SOFTPLUS, false);
  bench_reduction(o, r, "Sum", 1);
  bench_reduction(o, r, "Sum", 0);
  bench_reduction(o, r, "Mean", 1);
  bench_reduction(o, r, "Mean", 0);
  bench_run_models(o, r);
}
