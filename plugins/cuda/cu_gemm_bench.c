/* cu_gemm_bench.c: weft-cuda-gemm-bench, the MatMul figures docs/cuda.md records: float32
 * C = A B on CUDA:0 through a Weft session against the same products through cuBLAS called
 * directly, in milliseconds per product and TFLOP/s.
 *
 * Both sides run a chain of K products (C1 = A B, C2 = C1 B, ...; B scaled so that values stay
 * near 1) and wait for the last: the Weft side is one session step whose fetch is the sum of
 * the last product (a scalar), so its time includes the executor, the allocator and the fetch;
 * the direct side is K cublasSgemm calls on one stream and a stream synchronisation. Each side
 * runs once to warm up (cuBLAS loading, the first allocations), then R timed times; the medians
 * are reported.
 *
 *   weft-cuda-gemm-bench [--sizes 1024,2048,4096,8192] [--chain K] [--runs R] [--tf32]
 *
 * --tf32 lets both sides use TF32 tensor cores (WEFT_CUDA_ALLOW_TF32=1 for Weft). Constant folding
 * is off (WEFT_NO_FUSION=constfold) since the products' operands are Consts. Exit status 0,
 * or 1 with a message when there is no CUDA device or a step fails. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/weft.h"

#define CU_DEV "/device:CUDA:0"

static double now_ms(void) { return (double)g_get_monotonic_time() / 1000.0; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static guint64 rng = 0x9e3779b97f4a7c15ull;

static float uniform(float scale) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return scale * (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

/* Milliseconds per product through a Weft session, or a negative number on failure. */
static double weft_side(int64_t n, const float *a, const float *b, int chain, int runs) {
  int64_t dims[2] = {n, n};
  size_t bytes = sizeof(float) * (size_t)(n * n);
  weft_status_t *st = NULL;
  weft_tensor_t *at = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, a, bytes, &st);
  weft_tensor_t *bt = st ? NULL : weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, b, bytes, &st);
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, CU_DEV);
  weft_output_t c = {NULL, 0}, bo = {NULL, 0};
  if (!st) c = weft_const(g, "a", at, &st);
  if (!st) bo = weft_const(g, "b", bt, &st);
  for (int k = 0; k < chain && !st; k++) c = weft_matmul(g, NULL, c, bo, false, false, &st);
  int32_t axes_v[2] = {0, 1};
  int64_t two = 2;
  weft_tensor_t *axes = st ? NULL : weft_tensor_new_from_data(WEFT_DT_INT32, 1, &two, axes_v,
                                                              sizeof axes_v, &st);
  if (!st) weft_binary(g, "Sum", "total", c, weft_const(g, "axes", axes, &st), &st);
  weft_graph_pop_device(g);
  weft_session_t *s = st ? NULL : weft_session_new(g, NULL, &st);
  double *t = g_new(double, runs);
  const char *fetch[] = {"total"};
  for (int r = -1; r < runs && !st; r++) {
    weft_tensor_t *out = NULL;
    double t0 = now_ms();
    st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
    if (r >= 0) t[r] = (now_ms() - t0) / chain;
    weft_tensor_unref(out);
  }
  if (s && !st && strstr(weft_session_node_device(s, "total"), "CUDA") == NULL)
    fprintf(stderr, "weft-cuda-gemm-bench: the products did not run on CUDA:0\n");
  double result = -1;
  if (st) {
    fprintf(stderr, "weft-cuda-gemm-bench: Weft n=%lld: %s\n", (long long)n,
            weft_status_message(st));
    weft_status_free(st);
  } else {
    result = median(t, runs);
  }
  g_free(t);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(at);
  weft_tensor_unref(bt);
  weft_tensor_unref(axes);
  return result;
}

/* Milliseconds per product through cuBLAS directly, or a negative number on failure. */
static double cublas_side(int64_t n, const float *a, const float *b, int chain, int runs,
                          bool tf32) {
  size_t bytes = sizeof(float) * (size_t)(n * n);
  float *d[4] = {NULL, NULL, NULL, NULL}; /* A, B, and two products */
  cublasHandle_t h = NULL;
  cudaStream_t stream = NULL;
  double result = -1;
  bool ok = cudaSetDevice(0) == cudaSuccess && cudaStreamCreate(&stream) == cudaSuccess;
  for (int i = 0; i < 4 && ok; i++) ok = cudaMalloc((void **)&d[i], bytes) == cudaSuccess;
  ok = ok && cudaMemcpy(d[0], a, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
       cudaMemcpy(d[1], b, bytes, cudaMemcpyHostToDevice) == cudaSuccess;
  ok = ok && cublasCreate(&h) == CUBLAS_STATUS_SUCCESS &&
       cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS;
  if (ok && tf32) ok = cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS;
  double *t = g_new(double, runs);
  const float one = 1.0f, zero = 0.0f;
  for (int r = -1; r < runs && ok; r++) {
    double t0 = now_ms();
    const float *x = d[0];
    for (int k = 0; k < chain && ok; k++) {
      float *y = d[2 + k % 2];
      /* Row-major C = X B is column-major C^T = B^T X^T. */
      ok = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, d[1], (int)n, x,
                       (int)n, &zero, y, (int)n) == CUBLAS_STATUS_SUCCESS;
      x = y;
    }
    ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
    if (r >= 0) t[r] = (now_ms() - t0) / chain;
  }
  if (ok) result = median(t, runs);
  else fprintf(stderr, "weft-cuda-gemm-bench: cuBLAS n=%lld failed: %s\n", (long long)n,
               cudaGetErrorString(cudaGetLastError()));
  g_free(t);
  if (h) cublasDestroy(h);
  for (int i = 0; i < 4; i++)
    if (d[i]) cudaFree(d[i]);
  if (stream) cudaStreamDestroy(stream);
  return result;
}

int main(int argc, char **argv) {
  char *sizes_s = NULL;
  int chain = 10, runs = 10;
  gboolean tf32 = FALSE;
  GOptionEntry entries[] = {
      {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes_s, "matrix sizes (default 1024,2048,4096,8192)",
       "N,N,..."},
      {"chain", 0, 0, G_OPTION_ARG_INT, &chain, "products per step (default 10)", "K"},
      {"runs", 0, 0, G_OPTION_ARG_INT, &runs, "timed runs per side (default 10)", "R"},
      {"tf32", 0, 0, G_OPTION_ARG_NONE, &tf32, "allow TF32 tensor cores on both sides", NULL},
      {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  GOptionContext *oc = g_option_context_new("- Weft MatMul on CUDA:0 against cuBLAS directly");
  g_option_context_add_main_entries(oc, entries, NULL);
  GError *err = NULL;
  if (!g_option_context_parse(oc, &argc, &argv, &err) || chain < 1 || runs < 1) {
    fprintf(stderr, "weft-cuda-gemm-bench: %s\n", err ? err->message : "bad --chain or --runs");
    return 2;
  }
  g_option_context_free(oc);
  if (tf32) g_setenv("WEFT_CUDA_ALLOW_TF32", "1", TRUE);
  /* The chain is all Consts: plan-time constant folding would compute it once on the CPU when it
   * fits the folding's bounds (1024^3 does on a many-core host), and the steps would time
   * nothing. */
  const char *no_fusion = getenv("WEFT_NO_FUSION");
  if (!no_fusion || !*no_fusion || strcmp(no_fusion, "contraction") == 0)
    g_setenv("WEFT_NO_FUSION", "constfold", TRUE);
  const weft_device_info_t *dev = NULL;
  for (int i = 0; i < weft_devices_count() && !dev; i++)
    if (strcmp(weft_devices_get(i)->device_type, "CUDA") == 0) dev = weft_devices_get(i);
  if (!dev) {
    const char **reasons = NULL;
    int nr = weft_backends_without_devices(&reasons);
    const char *why = "the CUDA plugin is not loaded";
    for (int i = 0; i < nr; i++)
      if (g_str_has_prefix(reasons[i], "CUDA")) why = reasons[i];
    fprintf(stderr, "weft-cuda-gemm-bench: no CUDA device (%s)\n", why);
    return 1;
  }
  gchar **sizes = g_strsplit(sizes_s ? sizes_s : "1024,2048,4096,8192", ",", -1);
  printf("CUDA:0: %s; float32 C = A B, chains of %d, median of %d%s\n", dev->description, chain,
         runs, tf32 ? ", TF32 allowed" : "");
  printf("%8s %14s %14s %12s %12s %8s\n", "n", "weft ms", "cublas ms", "weft TF/s", "cublas TF/s",
         "ratio");
  int status = 0;
  for (gchar **p = sizes; *p; p++) {
    int64_t n = g_ascii_strtoll(*p, NULL, 10);
    if (n < 1) continue;
    float *a = g_new(float, n * n), *b = g_new(float, n * n);
    float scale = sqrtf(3.0f / (float)n); /* keeps the chain's values near 1 */
    for (int64_t i = 0; i < n * n; i++) {
      a[i] = uniform(1.0f);
      b[i] = uniform(scale);
    }
    double w = weft_side(n, a, b, chain, runs);
    double c = cublas_side(n, a, b, chain, runs, tf32);
    double flop = 2.0 * (double)n * (double)n * (double)n;
    if (w > 0 && c > 0)
      printf("%8lld %14.4f %14.4f %12.2f %12.2f %8.3f\n", (long long)n, w, c,
             flop / (w * 1e9), flop / (c * 1e9), c / w);
    else
      status = 1;
    g_free(a);
    g_free(b);
  }
  printf("ratio: cuBLAS time / Weft time (1 means no overhead; > 1 means Weft is faster)\n");
  g_strfreev(sizes);
  g_free(sizes_s);
  return status;
}
