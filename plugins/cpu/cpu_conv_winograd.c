/* cpu_conv_winograd.c: float32 NHWC Conv2D with a 3x3 filter at stride 1 and dilation 1 by
 * Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional
 * Neural Networks", 2015). Each 2x2 block of output pixels ("tile") comes from the 4x4 block of
 * input around it: the input block and the filter are carried into a 4x4 domain where the
 * convolution is 16 element-wise products summed over the channels, that is 16 GEMMs
 * (tiles x c) x (c x m), with 16 multiply-adds per tile, channel and filter instead of the 36 of
 * the direct sum: 4/9 of the arithmetic, for a pass that transforms the input and one that
 * transforms the results back.
 *
 * The tiles go in blocks of WINO_BLOCK (their 16 transformed matrices stay in L2 between the
 * three steps), the blocks over the intra-op pool; the GEMMs are the packed GEMM's own tiles
 * (cpu_gemm.h) on the filter transformed and packed once per call. It is taken where it paid on
 * this project's AVX-512 machine (docs/performance.md): many channels and filters (at least 32
 * of each, multiples of 16), an output of at least 8x8 and at least 64 tiles in all;
 * WEFT_CPU_CONV_WINOGRAD=0 turns it off.
 * The transforms add a few roundings (coefficients 0, 1 and 1/2): the winograd_* conformance
 * cases hold it to the convolution's tolerance against a double-precision reference. */
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"
#include "cpu_internal.h"
#include "cpu_wino.h"

#define WINO_BLOCK 32    /* tiles per block */
#define WINO_MIN_CHANNELS 32
#define WINO_MIN_OUT 8   /* output height and width */
/* The filter is transformed and packed on every call (16 x c x m floats written twice): with
 * fewer tiles than this its cost is not repaid by the products saved. */
#define WINO_MIN_TILES 64

static bool wino_enabled(void) {
  static int enabled = -1;
  int v = __atomic_load_n(&enabled, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *env = getenv("WEFT_CPU_CONV_WINOGRAD");
    v = !(env && strcmp(env, "0") == 0);
    __atomic_store_n(&enabled, v, __ATOMIC_RELAXED);
  }
  return v;
}

bool weft__cpu_conv2d_winograd_wanted(const weft_cpu_conv2d_t *g) {
#if !defined(__x86_64__)
  (void)g;
  return false;
#endif
  return wino_enabled() && weft__cpu_packed_isa() == WEFT_CPU_ISA_AVX512 && g->kh == 3 &&
         g->kw == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 && g->dw == 1 &&
         g->c >= WINO_MIN_CHANNELS &&
         g->m >= WINO_MIN_CHANNELS && g->c % 16 == 0 && g->m % 16 == 0 &&
         g->oh >= WINO_MIN_OUT && g->ow >= WINO_MIN_OUT &&
         g->n * ((g->oh + 1) / 2) * ((g->ow + 1) / 2) >= WINO_MIN_TILES;
}

typedef struct wino {
  const weft_cpu_conv2d_t *g;
  const float *x;
  float *y;
  const float *u;   /* the 16 transformed filters, each [c, m] packed (cpu_gemm.h) */
  size_t u_floats;  /* floats from one to the next */
  const float *zeros; /* c zeros: the input outside the image */
  int64_t tiles_h, tiles_w, tiles;
  int64_t slots;            /* equal shares of the tiles, one per pool thread at most */
  float *scratch;           /* slots x scratch_per_slot floats */
  size_t scratch_per_slot;  /* a block's transformed input and products */
  const weft_cpu_epilogue_t *ep;
  weft_cpu_gemm_tile_fn tile;
} wino_t;

/* U = G g G^T for each input channel and filter (cpu_wino.h): the 16 values of position xi of
 * every (channel, filter) pair form the [c, m] matrix xi, packed for the GEMM tiles. Both steps
 * over the pool: for 256 channels and filters they write 8 MiB, which one thread took longer
 * over than two spent on the tiles. */
typedef struct filter_job {
  const weft_cpu_conv2d_t *g;
  const float *f;
  float *plain, *packed;
  size_t u_floats;
} filter_job_t;

static void filter_range(void *arg, int64_t begin, int64_t end) {
  const filter_job_t *j = arg;
#if defined(__x86_64__)
  weft__cpu_wino_filter_avx512(j->f, j->g->c, j->g->m, begin, end, j->plain);
#else
  (void)j, (void)begin, (void)end; /* never taken: weft__cpu_conv2d_winograd_wanted says no */
#endif
}

static void pack_range(void *arg, int64_t begin, int64_t end) {
  const filter_job_t *j = arg;
  int64_t c = j->g->c, m = j->g->m;
  for (int64_t xi = begin; xi < end; xi++)
    weft__cpu_gemm_pack_b(j->plain + (size_t)xi * c * m, m, false, c, m,
                          j->packed + xi * j->u_floats);
}

/* V = B^T d B of the 4x4 input block of tile `t`, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0;
 * 0 1 0 -1], for every channel: row `slot` of the block's matrices v[xi] ([WINO_BLOCK, c]). */
static void transform_input(const wino_t *w, int64_t t, int64_t slot, float *v) {
  const weft_cpu_conv2d_t *g = w->g;
  int64_t per_image = w->tiles_h * w->tiles_w, n = t / per_image, r = t % per_image;
  int64_t iy0 = (r / w->tiles_w) * 2 - g->pt, ix0 = (r % w->tiles_w) * 2 - g->pl, c = g->c;
  const float *p[4][4];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      int64_t iy = iy0 + i, ix = ix0 + j;
      p[i][j] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w
                    ? w->x + ((n * g->h + iy) * g->w + ix) * c
                    : w->zeros;
    }
#if defined(__x86_64__)
  weft__cpu_wino_input_avx512(&p[0][0], c, v + slot * c, (size_t)WINO_BLOCK * c);
#else
  (void)p; /* never taken: weft__cpu_conv2d_winograd_wanted says no */
#endif
}

/* Y = A^T M A, A^T = [1 1 1 0; 0 1 -1 -1], of row `slot` of the block's products mm[xi]
 * ([WINO_BLOCK, m]): the tile's 2x2 output pixels (those inside the output). */
static void transform_output(const wino_t *w, int64_t t, int64_t slot, const float *mm) {
  const weft_cpu_conv2d_t *g = w->g;
  int64_t per_image = w->tiles_h * w->tiles_w, n = t / per_image, r = t % per_image;
  int64_t oy0 = (r / w->tiles_w) * 2, ox0 = (r % w->tiles_w) * 2, m = g->m;
  int rows = oy0 + 1 < g->oh ? 2 : 1, cols = ox0 + 1 < g->ow ? 2 : 1;
  float *y0 = w->y + ((n * g->oh + oy0) * g->ow + ox0) * m;
  float *y1 = rows == 2 ? y0 + g->ow * m : NULL;
#if defined(__x86_64__)
  weft__cpu_wino_output_avx512(mm + slot * m, (size_t)WINO_BLOCK * m, m, y0, y1, rows, cols);
#endif
}

/* The epilogue over the output pixels of tiles [t0, t1): each run of tiles along one row of
 * tiles covers one or two output rows' consecutive pixels, one call each. */
static void finish_tiles(const wino_t *w, int64_t t0, int64_t t1) {
  const weft_cpu_conv2d_t *g = w->g;
  int64_t per_image = w->tiles_h * w->tiles_w, m = g->m;
  for (int64_t t = t0; t < t1;) {
    int64_t n = t / per_image, r = t % per_image, ty = r / w->tiles_w, tx = r % w->tiles_w;
    int64_t run = w->tiles_w - tx < t1 - t ? w->tiles_w - tx : t1 - t;
    int64_t ox0 = tx * 2, ox1 = (tx + run) * 2 < g->ow ? (tx + run) * 2 : g->ow;
    for (int64_t oy = ty * 2; oy < ty * 2 + 2 && oy < g->oh; oy++)
      weft__cpu_epilogue_apply(w->ep, w->y + ((n * g->oh + oy) * g->ow + ox0) * m, ox1 - ox0, m,
                               m, 0, false);
    t += run;
  }
}

/* Slot `s` of `slots` runs its share of the tiles (an equal one: with few blocks, whole blocks
 * left one thread a third more), in blocks, in scratch of its own. */
static void wino_range(void *arg, int64_t begin, int64_t end) {
  const wino_t *w = arg;
  const weft_cpu_conv2d_t *g = w->g;
  for (int64_t s = begin; s < end; s++) {
    float *v = w->scratch + (size_t)s * w->scratch_per_slot;
    float *mm = v + (size_t)16 * WINO_BLOCK * g->c;
    int64_t last = (s + 1) * w->tiles / w->slots;
    for (int64_t t0 = s * w->tiles / w->slots; t0 < last; t0 += WINO_BLOCK) {
      int64_t t1 = t0 + WINO_BLOCK < last ? t0 + WINO_BLOCK : last;
      for (int64_t t = t0; t < t1; t++) transform_input(w, t, t - t0, v);
      for (int xi = 0; xi < 16; xi++) {
        weft_cpu_gemm_job_t job = {.m = t1 - t0,
                                   .n = g->m,
                                   .k = g->c,
                                   .a = v + (size_t)xi * WINO_BLOCK * g->c,
                                   .lda = g->c,
                                   .bp = w->u + xi * w->u_floats,
                                   .c = mm + (size_t)xi * WINO_BLOCK * g->m,
                                   .ldc = g->m,
                                   .tile = w->tile};
        weft__cpu_gemm_packed_block(&job, 0, t1 - t0, 0, g->m);
      }
      for (int64_t t = t0; t < t1; t++) transform_output(w, t, t - t0, mm);
      if (w->ep) finish_tiles(w, t0, t1);
    }
  }
}

weft_status_t *weft__cpu_conv2d_winograd_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                             const float *x, const float *f, float *y,
                                             const weft_cpu_epilogue_t *ep) {
  wino_t w = {.g = g, .x = x, .y = y, .ep = ep};
  w.tile = weft__cpu_gemm_tile_for(weft__cpu_packed_isa());
  w.tiles_h = (g->oh + 1) / 2;
  w.tiles_w = (g->ow + 1) / 2;
  w.tiles = g->n * w.tiles_h * w.tiles_w;
  w.u_floats = (weft__cpu_gemm_packed_floats(g->c, g->m) + 15) / 16 * 16;
  float *plain = NULL, *packed = NULL, *zeros = NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_host->kernel_scratch(
      ctx, sizeof(float) * (size_t)(16 * g->c * g->m), (void **)&plain));
  /* The packed GEMM reads B 64-byte aligned: the scratch is rounded up to the next boundary. */
  WEFT_RETURN_IF_ERROR(weft__cpu_host->kernel_scratch(
      ctx, sizeof(float) * (16 * w.u_floats) + 64, (void **)&packed));
  packed = (float *)(((uintptr_t)packed + 63) & ~(uintptr_t)63);
  WEFT_RETURN_IF_ERROR(
      weft__cpu_host->kernel_scratch(ctx, sizeof(float) * (size_t)g->c, (void **)&zeros));
  memset(zeros, 0, sizeof(float) * (size_t)g->c);
  filter_job_t fj = {.g = g, .f = f, .plain = plain, .packed = packed, .u_floats = w.u_floats};
  weft__cpu_parallel(ctx, g->c, 16 * 20 * g->m, filter_range, &fj);
  weft__cpu_parallel(ctx, 16, 2 * g->c * g->m, pack_range, &fj);
  w.u = packed;
  w.zeros = zeros;
  int64_t blocks = (w.tiles + WINO_BLOCK - 1) / WINO_BLOCK;
  int threads = weft__cpu_host->kernel_num_threads(ctx);
  w.slots = blocks < threads ? blocks : threads > 1 ? threads : 1;
  w.scratch_per_slot = (size_t)16 * WINO_BLOCK * (g->c + g->m);
  WEFT_RETURN_IF_ERROR(weft__cpu_host->kernel_scratch(
      ctx, sizeof(float) * w.scratch_per_slot * (size_t)w.slots, (void **)&w.scratch));
  weft__cpu_parallel(ctx, w.slots, blocks / w.slots * WINO_BLOCK * 16 * g->c * g->m, wino_range,
                     &w);
  return NULL;
}
