/* cpu_pool3d_fast.c: float32 MaxPool3D and AvgPool3D forward, NDHWC and NCDHW, in place of
 * cpu_conv_nd.c's generic pool3d_range (a dtype switch, a double conversion and a layout index
 * per element, the window clipped per output element): this file splits the work over the
 * intra-op pool and picks the kernel (cpu_pool3d_impl.h, which says why its results are the
 * generic kernel's bit for bit) of the level in use; its own build is the baseline level's.
 * WEFT_CPU_POOL3D_FAST=0 keeps the generic kernel (to compare with). */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_pool3d.h"
#include "cpu_vmath.h"

#define P3_RANGE weft__cpu_pool3_range_baseline
#include "cpu_pool3d_impl.h"

bool weft__cpu_pool3d_f32_enabled(void) {
  static int on = -1;
  int v = __atomic_load_n(&on, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("WEFT_CPU_POOL3D_FAST");
    v = e && strcmp(e, "0") == 0 ? 0 : 1;
    __atomic_store_n(&on, v, __ATOMIC_RELAXED);
  }
  return v != 0;
}

/* The level the elementwise kernels use (WEFT_CPU_ISA). */
static weft_cpu_pool3_range_fn range_kernel(void) {
#if defined(__x86_64__) || defined(__i386__)
  const weft_cpu_vmath_t *vm = weft__cpu_vmath();
  if (vm == &weft__cpu_vmath_avx512) return weft__cpu_pool3_range_avx512;
  if (vm == &weft__cpu_vmath_avx2) return weft__cpu_pool3_range_avx2;
#endif
  return weft__cpu_pool3_range_baseline;
}

typedef struct p3_job {
  const weft_cpu_pool3_t *p;
  weft_cpu_pool3_range_fn fn;
} p3_job_t;

static void p3_job_range(void *arg, int64_t b, int64_t e) {
  const p3_job_t *j = arg;
  j->fn(j->p, b, e);
}

/* Volumes this small, at least this many lanes of them (NCDHW: every (image, channel); NDHWC
 * with fewer than 16 channels: every (channel, image)), pool faster as one channels-last volume
 * of those lanes: one transpose each way against each volume's fixed cost (corpus
 * max_pooling3d/channels_first_b1_k2_s2_SAME at batch 64: 128 volumes of 125 floats;
 * channels_last_b1_k2_s2_SAME: 64 images of 125 pixels of 2 channels). */
#define P3_LANES_MAX_VOLUME 4096
#define P3_LANES_MIN 16

weft_status_t *weft__cpu_pool3d_f32(weft_kernel_ctx_t *ctx, weft_cpu_pool3_t *p) {
  int64_t ip = p->in[0] * p->in[1] * p->in[2], op = p->out[0] * p->out[1] * p->out[2];
  int64_t lanes = p->n * p->c;
  bool few_channels = !p->cfirst && p->n > 1 && p->c < 16;
  if ((p->cfirst || few_channels) && lanes >= P3_LANES_MIN && ip <= P3_LANES_MAX_VOLUME) {
    /* NCDHW: [n * c, volume] -> [volume, n * c]; NDHWC: [n, volume * c] -> [volume * c, n],
     * pixels of c * n lanes. The pool of that one volume, then the inverse transpose: each
     * output still takes its window in the same order (the same bits). */
    int64_t rows = p->cfirst ? lanes : p->n, cols = p->cfirst ? ip : ip * p->c;
    float *xt = NULL, *yt = NULL;
    WEFT_RETURN_IF_ERROR(weft__cpu_transpose_f32_scratch(ctx, 1, rows, cols, p->x, &xt));
    WEFT_RETURN_IF_ERROR(weft__cpu_host->kernel_scratch(ctx, (size_t)(lanes * op) * sizeof(float),
                                                        (void **)&yt));
    weft_cpu_pool3_t q = *p;
    q.n = 1;
    q.c = lanes;
    q.cfirst = false;
    q.x = xt;
    q.y = yt;
    WEFT_RETURN_IF_ERROR(weft__cpu_pool3d_f32(ctx, &q));
    if (p->cfirst)
      weft__cpu_transpose_f32(ctx, 1, op, lanes, yt, p->y);
    else
      weft__cpu_transpose_f32(ctx, 1, op * p->c, p->n, yt, p->y);
    return NULL;
  }
  p->lanes = p->cfirst ? 1 : p->c;
  p->vin = ip * p->lanes;
  p->vout = op * p->lanes;
  int64_t vols = p->cfirst ? p->n * p->c : p->n;
  /* Padded whole volumes where the padded volume is small and every stride is 1, or the
   * lanes are few (the rows way's loops would be short) and the row x column strides, the
   * padded way's waste, are at most 4. */
  double padded = p->lanes;
  for (int i = 0; i < 3; i++) padded *= (double)((p->out[i] - 1) * p->s[i] + p->k[i]);
  bool unit = p->s[0] == 1 && p->s[1] == 1 && p->s[2] == 1;
  p->padded = padded <= (double)P3_PADDED_MAX &&
              (unit || (p->lanes < 16 && p->s[1] * p->s[2] <= 4));
  /* A depth plane's work: out[1] x out[2] windows of the clipped size by `lanes` floats, plus
   * each row's loops' fixed cost; a padded volume's: its copy, then each window position over
   * each output plane's rows. */
  double win = 1, k3 = (double)(p->k[0] * p->k[1] * p->k[2]);
  for (int i = 0; i < 3; i++) win *= (double)(p->k[i] < p->in[i] ? p->k[i] : p->in[i]);
  double plane = (double)(p->out[1] * p->out[2] * p->lanes) * win + (double)p->out[1] * k3 * 8 + 1;
  double rows = (double)(((p->out[1] - 1) * p->s[1] + 1) * ((p->out[2] - 1) * p->s[2] + p->k[2]));
  double cost = p->padded ? padded + (double)p->out[0] * rows * (double)p->lanes * k3 + 1 : plane;
  p3_job_t j = {p, range_kernel()};
  weft__cpu_parallel(ctx, p->padded ? vols : vols * p->out[0],
                     cost > 1e12 ? (int64_t)1e12 : (int64_t)cost, p3_job_range, &j);
  return NULL;
}
