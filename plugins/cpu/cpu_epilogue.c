/* cpu_epilogue.c: the float32 kernels of TensorFlow's contraction fusions, _FusedMatMul,
 * _FusedConv2D and _FusedDepthwiseConv2dNative (grappler's remapper writes them; so does
 * Weft's plan-time pass, core/src/exec/fuse.c), and the "epilogue" they share: a bias (BiasAdd)
 * or an inference batch norm (FusedBatchNorm, folded into a per-channel scale and offset), then
 * an activation, applied to each block of the output right after the GEMM (or the depthwise
 * loop) wrote it, while the block is still in cache. Where there is a bias and no scale, the
 * block is filled with the bias first and the GEMM adds into it (beta = 1): the bias then costs
 * nothing, since OpenBLAS would otherwise clear the block itself. The activations call the
 * unfused kernels' loops (weft__cpu_unary_f32). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* From this many multiply-adds, as MatMul (cpu_matmul.c), OpenBLAS's own threads when more are
 * asked for than the pool has. */
#define FUSED_GEMM_SPLIT_MIN_MACS ((int64_t)1 << 24)

/* CBLAS enums (cblas.h is not included here: see weft_cpu_blas_t). */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

typedef enum { EP_NONE, EP_BIAS, EP_BATCH_NORM } ep_kind_t;

struct weft_cpu_epilogue_spec {
  char op[40];
  ep_kind_t kind;
  int64_t num_args;
  float epsilon;
  weft_cpu_unary_f32_fn act;
  double act_param;
  int clamp; /* weft_cpu_epilogue_t.clamp */
  weft_cpu_packed_cache_t *packed; /* _FusedMatMul's packed constant B (cpu_packed.c) */
};

static const char *const activations[] = {"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid",
                                          NULL};

void weft__cpu_epilogue_spec_free(void *state) {
  struct weft_cpu_epilogue_spec *s = state;
  if (s) weft__cpu_packed_cache_free(s->packed);
  free(s);
}

/* fused_ops as TensorFlow's CPU kernels take it: [BiasAdd], [FusedBatchNorm] (convolutions),
 * each optionally followed by one activation; num_args 1 for the bias, 4 (scale, offset, mean,
 * variance) for the batch norm. */
weft_status_t *weft__cpu_epilogue_spec_new(const weft_host_t *host, const weft_attrs_t *attrs,
                                           const char *op, bool batch_norm, void **state) {
  const weft_string_t *ops = NULL;
  size_t n = 0;
  int64_t num_args = 0;
  float eps = 1e-4f, alpha = 0.2f;
  if (host->struct_size < offsetof(weft_host_t, attr_string_list) + sizeof host->attr_string_list)
    return host->status_new(WEFT_FAILED_PRECONDITION, "%s: the core is older than ABI 1.3", op);
  if (host->attr_has(attrs, "fused_ops"))
    WEFT_RETURN_IF_ERROR(host->attr_string_list(attrs, "fused_ops", &ops, &n));
  WEFT_RETURN_IF_ERROR(host->attr_int(attrs, "num_args", &num_args));
  if (host->attr_has(attrs, "epsilon"))
    WEFT_RETURN_IF_ERROR(host->attr_float(attrs, "epsilon", &eps));
  if (host->attr_has(attrs, "leakyrelu_alpha"))
    WEFT_RETURN_IF_ERROR(host->attr_float(attrs, "leakyrelu_alpha", &alpha));
  struct weft_cpu_epilogue_spec *s = calloc(1, sizeof *s);
  if (!s) return host->status_new(WEFT_RESOURCE_EXHAUSTED, "%s: out of memory", op);
  snprintf(s->op, sizeof s->op, "%s", op);
  s->num_args = num_args;
  s->epsilon = eps;
  bool ok = n >= 1 && n <= 2;
  if (ok && strcmp(ops[0].data, "BiasAdd") == 0)
    s->kind = EP_BIAS;
  else if (ok && batch_norm && strcmp(ops[0].data, "FusedBatchNorm") == 0)
    s->kind = EP_BATCH_NORM;
  else
    ok = false;
  if (ok && n == 2) {
    ok = false;
    for (int k = 0; activations[k]; k++)
      if (strcmp(ops[1].data, activations[k]) == 0) ok = true;
    const char *param = NULL;
    float dflt = 0;
    int64_t cost = 0;
    if (ok) s->act = weft__cpu_unary_f32(ops[1].data, &param, &dflt, &cost, NULL);
    ok = ok && s->act != NULL;
    s->act_param = strcmp(ops[1].data, "LeakyRelu") == 0 ? alpha : dflt;
    s->clamp = strcmp(ops[1].data, "Relu") == 0 ? 1 : strcmp(ops[1].data, "Relu6") == 0 ? 2 : 0;
  }
  if (!ok) {
    char list[256] = "";
    for (size_t k = 0, at = 0; k < n && at < sizeof list; k++)
      at += (size_t)snprintf(list + at, sizeof list - at, "%s%.*s", k ? ", " : "",
                             (int)ops[k].len, ops[k].data);
    weft_status_t *st =
        host->status_new(WEFT_UNIMPLEMENTED, "%s: fusion is not implemented: [%s]", op, list);
    free(s);
    return st;
  }
  int64_t want = s->kind == EP_BIAS ? 1 : 4;
  if (num_args != want) {
    free(s);
    return host->status_new(WEFT_INVALID_ARGUMENT, "%s: %s takes %lld extra argument%s, not %lld",
                            op, ops[0].data, (long long)want, want == 1 ? "" : "s",
                            (long long)num_args);
  }
  *state = s;
  return NULL;
}

static const char *const bn_names[] = {"scale", "offset", "mean", "variance"};

weft_status_t *weft__cpu_epilogue_bind(weft_kernel_ctx_t *ctx, const void *state, int first,
                                       int64_t channels, weft_cpu_epilogue_t *ep) {
  const struct weft_cpu_epilogue_spec *s = state;
  memset(ep, 0, sizeof *ep);
  ep->act = s->act;
  ep->act_param = s->act_param;
  ep->clamp = s->clamp;
  ep->channels = channels;
  const float *args[4] = {NULL, NULL, NULL, NULL};
  for (int64_t k = 0; k < s->num_args; k++) {
    weft_tensor_view_t v;
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, first + (int)k, &v));
    const char *what = s->kind == EP_BIAS ? "bias" : bn_names[k];
    if (v.dtype != WEFT_DT_FLOAT || v.rank != 1 || v.dims[0] != channels) {
      char sh[CPU_SHAPE_STR_LEN];
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "%s: %s must be a float vector of %lld values (the output's "
                             "channels), got %s %s", s->op, what, (long long)channels,
                             weft__cpu_dtype_name(v.dtype),
                             weft__cpu_shape_str(v.rank, v.dims, sh, sizeof sh));
    }
    args[k] = v.data;
  }
  if (s->kind == EP_BIAS) {
    ep->bias = args[0];
    return NULL;
  }
  /* (x - mean) * scale / sqrt(variance + epsilon) + offset as x * a + b. */
  float *mem = NULL;
  WEFT_RETURN_IF_ERROR(
      H->kernel_scratch(ctx, sizeof(float) * (size_t)(2 * channels + 1), (void **)&mem));
  for (int64_t c = 0; c < channels; c++) {
    double a = (double)args[0][c] / sqrt((double)args[3][c] + (double)s->epsilon);
    mem[c] = (float)a;
    mem[channels + c] = (float)((double)args[1][c] - (double)args[2][c] * a);
  }
  ep->scale = mem;
  ep->bias = mem + channels;
  return NULL;
}

bool weft__cpu_epilogue_prefill(const weft_cpu_epilogue_t *ep, float *y, int64_t rows,
                                int64_t cols, int64_t ldy, int64_t col0) {
  if (!ep || !ep->bias || ep->scale) return false;
  for (int64_t r = 0; r < rows; r++)
    memcpy(y + r * ldy, ep->bias + col0, sizeof(float) * (size_t)cols);
  return true;
}

void weft__cpu_epilogue_apply(const weft_cpu_epilogue_t *ep, float *y, int64_t rows,
                              int64_t cols, int64_t ldy, int64_t col0, bool prefilled) {
  const float *restrict b = ep->bias ? ep->bias + col0 : NULL;
  const float *restrict a = ep->scale ? ep->scale + col0 : NULL;
  for (int64_t r = 0; r < rows; r++) {
    float *restrict row = y + r * ldy;
    if (a) {
      for (int64_t j = 0; j < cols; j++) row[j] = row[j] * a[j] + b[j];
    } else if (b && !prefilled) {
      for (int64_t j = 0; j < cols; j++) row[j] += b[j];
    }
    if (ep->act && ldy != cols) ep->act(row, row, cols, ep->act_param);
  }
  if (ep->act && ldy == cols) ep->act(y, y, rows * cols, ep->act_param);
}

/* ---------------------------------------------------------------------------------------------
 * _FusedMatMul */

typedef struct fgemm {
  const weft_cpu_epilogue_t *ep;
  bool ta, tb, by_rows;
  int64_t m, n, k, lda, ldb, block;
  const float *a, *b;
  float *c;
} fgemm_t;

/* C's rows [r0, r1) and columns [c0, c1): filled, multiplied into, finished. */
static void fgemm_block(const fgemm_t *g, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  float *c = g->c + r0 * g->n + c0;
  int64_t rows = r1 - r0, cols = c1 - c0;
  bool biased = weft__cpu_epilogue_prefill(g->ep, c, rows, cols, g->n, c0);
  const float *a = g->a + (g->ta ? r0 : r0 * g->lda);
  const float *b = g->b + (g->tb ? c0 * g->ldb : c0);
  if (rows == 1) {
    /* One row of C is op(B)^T a: GEMV streams B once, where GEMM packs it first. */
    int inc = g->ta ? (int)g->lda : 1;
    int trv = g->tb ? NO_TRANS : TRANS;
    int brows = g->tb ? (int)cols : (int)g->k, bcols = g->tb ? (int)g->k : (int)cols;
    /* GEMV's beta = 0 may be a multiply, which keeps a NaN left in a recycled buffer. */
    if (!biased) memset(c, 0, sizeof(float) * (size_t)cols);
    weft__cpu_blas.sgemv(ROW_MAJOR, trv, brows, bcols, 1.0f, b, (int)g->ldb, a, inc, 1.0f, c, 1);
  } else {
    weft__cpu_sgemm_1t(g->ta, g->tb, rows, cols, g->k, a, g->lda, b, g->ldb,
                       biased ? 1.0f : 0.0f, c, g->n);
  }
  weft__cpu_epilogue_apply(g->ep, c, rows, cols, g->n, c0, biased);
}

static void fgemm_range(void *arg, int64_t begin, int64_t end) {
  const fgemm_t *g = arg;
  int64_t dim = g->by_rows ? g->m : g->n;
  for (int64_t i = begin; i < end; i++) {
    int64_t p0 = i * g->block, p1 = p0 + g->block < dim ? p0 + g->block : dim;
    if (p0 >= p1) continue;
    if (g->by_rows)
      fgemm_block(g, p0, p1, 0, g->n);
    else
      fgemm_block(g, 0, g->m, p0, p1);
  }
}

static weft_status_t *k_fused_matmul(weft_kernel_ctx_t *ctx, void *state) {
  weft_pc_matmul_t mm;
  WEFT_RETURN_IF_ERROR(weft_pc_matmul_prepare(ctx, &mm));
  if (mm.a.dtype != WEFT_DT_FLOAT)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "_FusedMatMul has a CPU kernel for float "
                           "only, not %s", weft__cpu_dtype_name(mm.a.dtype));
  weft_cpu_epilogue_t ep;
  WEFT_RETURN_IF_ERROR(weft__cpu_epilogue_bind(ctx, state, 2, mm.n, &ep));
  if (mm.m == 0 || mm.n == 0) return NULL;
  if (mm.m > INT32_MAX || mm.n > INT32_MAX || mm.k > INT32_MAX || mm.a.dims[1] > INT32_MAX ||
      mm.b.dims[1] > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                           "_FusedMatMul dimensions [%lld,%lld]x[%lld,%lld] exceed the BLAS int "
                           "range", (long long)mm.m, (long long)mm.k, (long long)mm.k,
                           (long long)mm.n);
  fgemm_t g = {.ep = &ep, .ta = mm.ta, .tb = mm.tb, .m = mm.m, .n = mm.n, .k = mm.k,
               .lda = mm.a.dims[1], .ldb = mm.b.dims[1], .a = mm.a.data, .b = mm.b.data,
               .c = mm.c.data};
  if (mm.k == 0) {
    memset(g.c, 0, sizeof(float) * (size_t)(g.m * g.n));
    weft__cpu_epilogue_apply(&ep, g.c, g.m, g.n, g.n, 0, false);
    return NULL;
  }
  const struct weft_cpu_epilogue_spec *spec = state;
  if (weft__cpu_packed_gemm(ctx, spec->packed, 1, g.ta, g.tb, g.m, g.n, g.k, g.a, g.lda, g.b,
                            g.ldb, g.c, g.n, &ep))
    return NULL;
  int threads = H->kernel_num_threads(ctx), asked = weft__cpu_blas_threads_asked();
  if (asked > threads) {
    /* As MatMul: OpenBLAS's own threads when more are asked for than the pool has. */
    weft__cpu_blas.set_num_threads(g.m * g.n * g.k >= FUSED_GEMM_SPLIT_MIN_MACS ? asked : 1);
    fgemm_block(&g, 0, g.m, 0, g.n);
    return NULL;
  }
  weft__cpu_blas.set_num_threads(1);
  /* Cut as MatMul is: a block of C per pool thread. */
  int64_t blocks = weft__cpu_gemm_split_plan(asked ? asked : threads, g.m, g.n, g.k, &g.by_rows,
                                             &g.block);
  if (blocks == 1)
    fgemm_range(&g, 0, 1);
  else
    H->parallel_for(ctx, blocks, (int64_t)1 << 30, fgemm_range, &g);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * _FusedConv2D, _FusedDepthwiseConv2dNative: the convolutions' own kernels with an epilogue. */

static weft_status_t *fused_conv_bind(weft_kernel_ctx_t *ctx, const void *state, bool depthwise,
                                      weft_cpu_epilogue_t *ep) {
  weft_tensor_view_t x, f;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &f));
  const char *op = depthwise ? "_FusedDepthwiseConv2dNative" : "_FusedConv2D";
  if (x.dtype != WEFT_DT_FLOAT)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has a CPU kernel for float only, not %s",
                           op, weft__cpu_dtype_name(x.dtype));
  if (f.rank != 4) {
    char s[CPU_SHAPE_STR_LEN];
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%s: filter must be 4-dimensional, got %s",
                           op, weft__cpu_shape_str(f.rank, f.dims, s, sizeof s));
  }
  int64_t channels = depthwise ? f.dims[2] * f.dims[3] : f.dims[3];
  return weft__cpu_epilogue_bind(ctx, state, 2, channels, ep);
}

static weft_status_t *k_fused_conv2d(weft_kernel_ctx_t *ctx, void *state) {
  weft_cpu_epilogue_t ep;
  WEFT_RETURN_IF_ERROR(fused_conv_bind(ctx, state, false, &ep));
  const struct weft_cpu_epilogue_spec *spec = state;
  return weft__cpu_conv2d_with_epilogue(ctx, &ep, spec->packed);
}

static weft_status_t *k_fused_depthwise(weft_kernel_ctx_t *ctx, void *state) {
  weft_cpu_epilogue_t ep;
  WEFT_RETURN_IF_ERROR(fused_conv_bind(ctx, state, true, &ep));
  return weft__cpu_depthwise_with_epilogue(ctx, &ep);
}

/* The spec, with the cache of the node's packed constant B (cpu_packed.c) where `packs`. */
static weft_status_t *spec_with_cache(const weft_host_t *host, const weft_attrs_t *attrs,
                                      const char *op, bool batch_norm, bool packs, void **state) {
  WEFT_RETURN_IF_ERROR(weft__cpu_epilogue_spec_new(host, attrs, op, batch_norm, state));
  struct weft_cpu_epilogue_spec *s = *state;
  if (!packs) return NULL;
  s->packed = weft__cpu_packed_cache_new();
  if (s->packed) return NULL;
  weft__cpu_epilogue_spec_free(s);
  *state = NULL;
  return host->status_new(WEFT_RESOURCE_EXHAUSTED, "%s: out of memory", op);
}

static weft_status_t *create_matmul(const weft_host_t *host, const weft_attrs_t *attrs,
                                    void *user_data, void **state) {
  (void)user_data;
  return spec_with_cache(host, attrs, "_FusedMatMul", false, true, state);
}

static weft_status_t *create_conv(const weft_host_t *host, const weft_attrs_t *attrs,
                                  void *user_data, void **state) {
  return spec_with_cache(host, attrs, user_data, true, strcmp(user_data, "_FusedConv2D") == 0,
                         state);
}

weft_status_t *weft__cpu_register_epilogue(const weft_registrar_t *reg) {
  static const weft_dtype_t f32[] = {WEFT_DT_FLOAT};
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "_FusedMatMul", .compute = k_fused_matmul, .type_attr = "T", .dtypes = f32,
       .n_dtypes = 1, .create = create_matmul, .destroy = weft__cpu_epilogue_spec_free},
      {.op = "_FusedConv2D", .compute = k_fused_conv2d, .type_attr = "T", .dtypes = f32,
       .n_dtypes = 1, .create = create_conv, .destroy = weft__cpu_epilogue_spec_free,
       .user_data = (void *)"_FusedConv2D"},
      {.op = "_FusedDepthwiseConv2dNative", .compute = k_fused_depthwise, .type_attr = "T",
       .dtypes = f32, .n_dtypes = 1, .create = create_conv,
       .destroy = weft__cpu_epilogue_spec_free, .user_data = (void *)"_FusedDepthwiseConv2dNative"},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
