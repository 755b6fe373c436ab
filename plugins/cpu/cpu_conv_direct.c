/* cpu_conv_direct.c: drives the direct few-tap float32 NHWC convolution (cpu_convd.h) for
 * Conv2D and _FusedConv2D: which convolutions take it, the output rows over the intra-op pool,
 * and the epilogue (a plain bias and Relu/Relu6 in the kernel's registers; a batch norm's scale
 * or another activation over each finished row while it is in cache). */
#include <stdlib.h>
#include <string.h>

#include "cpu_convd.h"
#include "cpu_gemm.h"
#include "cpu_internal.h"

/* Which convolutions take the kernel, measured against the GEMM paths (thread CPU time, one
 * thread, docs/performance.md "a direct kernel for few input channels"): up to 64 taps at any
 * filter count (27 taps -> 64: 97-102 GFLOP/s against 53-68), and up to CONVD_MAX_FILTER floats
 * of filter with at most 64 filters (3x3x64 -> 64, 576 taps: 108-112 against 101-106). Larger
 * filters with 128 filters and more lost (3x3x128 -> 128: 92-98 against 102-108), as did a 1x1
 * convolution that reads its input as it is (the GEMM's left matrix: 28x28x16 -> 128 at
 * 0.83-0.85x of ONNX Runtime against 0.74-0.79x). */
#define CONVD_MAX_TAPS 64
#define CONVD_MAX_FILTER (576 * 64)
#define CONVD_MAX_M_LARGE 64
/* Below these many multiply-adds a convolution runs on the calling thread (cpu_conv_fast.c's
 * rule). */
#define CONVD_PARALLEL_MIN_MACS ((int64_t)1 << 21)
/* The most filter rows (the row pointers live on the stack). */
#define CONVD_MAX_KH 16

typedef void (*convd_row_fn)(const weft_cpu_convd_t *d, const float *const *src, float *out);

/* The row kernel of the level the packed GEMM uses (WEFT_CPU_ISA): AVX-512 or AVX2; NULL on
 * the plain level, or where WEFT_CPU_CONV_DIRECT=0 turns it off (to compare with the GEMM). */
static convd_row_fn convd_kernel(void) {
#if defined(__x86_64__)
  static int level = -1;
  int v = __atomic_load_n(&level, __ATOMIC_RELAXED);
  if (v < 0) {
    char *warning = NULL;
    const char *e = getenv("WEFT_CPU_CONV_DIRECT");
    v = e && strcmp(e, "0") == 0 ? 0 : (int)weft__cpu_isa_choose(getenv("WEFT_CPU_ISA"), &warning);
    free(warning); /* the elementwise registration already logged it */
    __atomic_store_n(&level, v, __ATOMIC_RELAXED);
  }
  return v == WEFT_CPU_ISA_AVX512 ? weft__cpu_convd_row_avx512
         : v == WEFT_CPU_ISA_AVX2 ? weft__cpu_convd_row_avx2
                                  : NULL;
#else
  return NULL;
#endif
}

bool weft__cpu_conv2d_few_taps(const weft_cpu_conv2d_t *g) {
  int64_t taps = g->kh * g->kw * g->c;
  bool pointwise = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
                   g->pl == 0 && g->oh == g->h && g->ow == g->w;
  bool sized = taps <= CONVD_MAX_TAPS ||
               (g->m <= CONVD_MAX_M_LARGE && taps * g->m <= CONVD_MAX_FILTER);
  return g->m % 16 == 0 && g->m >= 16 && g->dw == 1 && g->kh <= CONVD_MAX_KH && sized &&
         !pointwise && g->ow > 0 && convd_kernel() != NULL;
}

typedef struct convd_job {
  const weft_cpu_conv2d_t *g;
  const weft_cpu_convd_t *d;
  const float *x;
  float *y;
  const weft_cpu_epilogue_t *ep;
  convd_row_fn row;
  bool finish; /* ep has what the kernel does not do (a scale, another activation) */
} convd_job_t;

static void convd_rows(void *arg, int64_t b, int64_t e) {
  const convd_job_t *j = arg;
  const weft_cpu_conv2d_t *g = j->g;
  const float *src[CONVD_MAX_KH];
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->oh, oy = r % g->oh;
    for (int64_t i = 0; i < g->kh; i++) {
      int64_t iy = oy * g->sh + i * g->dh - g->pt;
      src[i] = iy >= 0 && iy < g->h ? j->x + ((n * g->h + iy) * g->w) * g->c : NULL;
    }
    float *out = j->y + r * g->ow * g->m;
    j->row(j->d, src, out);
    if (j->finish)
      weft__cpu_epilogue_apply(j->ep, out, g->ow, g->m, g->m, 0, j->d->bias != NULL);
  }
}

weft_status_t *weft__cpu_conv2d_few_taps_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                             const float *x, const float *f, float *y,
                                             const weft_cpu_epilogue_t *ep) {
  /* A plain bias goes in the kernel, after the sums as the GEMM adds it; with a scale first the
   * whole epilogue runs after. Relu and Relu6 clamp in registers, another activation after. */
  bool plain_bias = ep && ep->bias && !ep->scale;
  int clamp = !ep || ep->scale ? 0
              : ep->clamp == 1 ? WEFT_GEMM_RELU
              : ep->clamp == 2 ? WEFT_GEMM_RELU6
                               : 0;
  weft_cpu_convd_t d = {g->kh, g->kw, g->c, g->w, g->sw, g->pl, g->ow, g->m, f,
                        plain_bias ? ep->bias : NULL, clamp};
  bool finish = ep && (ep->scale || (ep->act && !clamp));
  convd_job_t j = {g, &d, x, y, ep, convd_kernel(), finish};
  int64_t rows = g->n * g->oh, macs = g->ow * g->m * g->kh * g->kw * g->c;
  if (rows * macs < CONVD_PARALLEL_MIN_MACS)
    convd_rows(&j, 0, rows);
  else
    weft__cpu_parallel(ctx, rows, macs + 1, convd_rows, &j);
  return NULL;
}
