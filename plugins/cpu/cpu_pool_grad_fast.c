/* cpu_pool_grad_fast.c: float32 NHWC MaxPoolGrad (and V2) and AvgPoolGrad with the channels as
 * contiguous float loops, in place of cpu_conv.c's generic path (one strided (image, channel)
 * plane at a time, a dtype switch and a double conversion per element): this file splits the
 * work over the intra-op pool and picks the band kernel (cpu_pool_grad_impl.h) of the level in
 * use; its own build is the baseline level's. The results are the generic kernel's bit for bit
 * at any level and thread count (cpu_pool_grad_impl.h says why). */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_pool_grad.h"
#include "cpu_vmath.h"

#define PG_BAND weft__cpu_pool_grad_band_baseline
#define PG_BAND3 weft__cpu_pool3_grad_band_baseline
#include "cpu_pool_grad_impl.h"

typedef struct pool_grad_f32_job {
  weft_cpu_pool_grad_t p;
  weft_cpu_pool_grad_band_fn band;
} pool_grad_f32_job_t;

/* One unit is one input row of one image; a range is cut into bands of one image's rows. */
static void pool_grad_f32_range(void *arg, int64_t b, int64_t e) {
  const pool_grad_f32_job_t *j = arg;
  int64_t h = j->p.h;
  while (b < e) {
    int64_t n = b / h, r0 = b % h, r1 = r0 + (e - b);
    if (r1 > h) r1 = h;
    j->band(&j->p, n, r0, r1);
    b += r1 - r0;
  }
}

/* The level the elementwise kernels use (WEFT_CPU_ISA): 2 AVX-512, 1 AVX2, 0 this file's. */
static int level(void) {
#if defined(__x86_64__) || defined(__i386__)
  const weft_cpu_vmath_t *vm = weft__cpu_vmath();
  if (vm == &weft__cpu_vmath_avx512) return 2;
  if (vm == &weft__cpu_vmath_avx2) return 1;
#endif
  return 0;
}

static weft_cpu_pool_grad_band_fn band_kernel(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (level() == 2) return weft__cpu_pool_grad_band_avx512;
  if (level() == 1) return weft__cpu_pool_grad_band_avx2;
#endif
  return weft__cpu_pool_grad_band_baseline;
}

static weft_cpu_pool3_grad_band_fn band3_kernel(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (level() == 2) return weft__cpu_pool3_grad_band_avx512;
  if (level() == 1) return weft__cpu_pool3_grad_band_avx2;
#endif
  return weft__cpu_pool3_grad_band_baseline;
}

bool weft__cpu_pool_grad_f32_enabled(void) {
  static int on = -1;
  int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("WEFT_CPU_POOL_GRAD_FAST");
    v = e && strcmp(e, "0") == 0 ? 0 : 1;
    __atomic_store_n(&on, v, __ATOMIC_RELAXED);
  }
  return v != 0;
}

void weft__cpu_pool_grad_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g, bool is_max,
                             const float *x, const float *dy, float *dx) {
  pool_grad_f32_job_t j = {{g->n, g->h, g->w, g->c, g->oh, g->ow, g->kh, g->kw, g->sh, g->sw,
                            g->pt, g->pl, is_max, x, dy, dx},
                           band_kernel()};
  /* A row's work: the windows over it (kh / sh output rows of ow windows), kw elements of each
   * by c channels, and for the max the whole window's argmax as well. */
  int64_t kh = g->kh < g->h ? g->kh : g->h, kw = g->kw < g->w ? g->kw : g->w;
  double rows_over = (double)((kh + g->sh - 1) / g->sh);
  double cost = rows_over * (double)g->ow * (double)kw * (double)g->c *
                     (double)(is_max ? kh + 1 : 1) +
                 (double)(g->w * g->c) + 1;
  /* In double and capped: a huge window's estimate must not overflow (any such cost splits). */
  weft__cpu_parallel(ctx, g->n * g->h, cost > 1e12 ? (int64_t)1e12 : (int64_t)cost,
                     pool_grad_f32_range, &j);
}

typedef struct pool3_grad_f32_job {
  const weft_cpu_pool3_grad_t *p;
  weft_cpu_pool3_grad_band_fn band;
} pool3_grad_f32_job_t;

/* One unit is one input depth plane of one image, as pool_grad_f32_range's rows. */
static void pool3_grad_f32_range(void *arg, int64_t b, int64_t e) {
  const pool3_grad_f32_job_t *j = arg;
  int64_t d = j->p->in[0];
  while (b < e) {
    int64_t n = b / d, p0 = b % d, p1 = p0 + (e - b);
    if (p1 > d) p1 = d;
    j->band(j->p, n, p0, p1);
    b += p1 - p0;
  }
}

void weft__cpu_pool3d_grad_f32(weft_kernel_ctx_t *ctx, const weft_cpu_pool3_grad_t *p) {
  pool3_grad_f32_job_t j = {p, band3_kernel()};
  /* A plane's work, as weft__cpu_pool_grad_f32's row's: the windows over it, each row x column
   * slice of them by c channels, and for the max the whole window's argmax as well. */
  double k[3];
  for (int i = 0; i < 3; i++) k[i] = (double)(p->k[i] < p->in[i] ? p->k[i] : p->in[i]);
  double planes_over = (double)((p->k[0] + p->s[0] - 1) / p->s[0]);
  double cost = planes_over * (double)(p->out[1] * p->out[2] * p->c) * k[1] * k[2] *
                    (p->is_max ? k[0] + 1 : 1) +
                (double)(p->in[1] * p->in[2] * p->c) + 1;
  weft__cpu_parallel(ctx, p->n * p->in[0], cost > 1e12 ? (int64_t)1e12 : (int64_t)cost,
                     pool3_grad_f32_range, &j);
}
