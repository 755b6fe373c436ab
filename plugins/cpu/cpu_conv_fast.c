/* cpu_conv_fast.c: the float32 NHWC paths of the 2-D convolutions (Conv2D and its two gradients
 * with one filter group, DepthwiseConv2dNative), which training and the benchmark conv nets spend
 * their time in. The other dtypes, layouts and group counts keep the general code of cpu_conv.c
 * and cpu_conv_nd.c.
 *
 * An NHWC output is exactly the [N*OH*OW, M] result of the convolution's GEMM, so the GEMM
 * writes into the output tensor itself. The output rows are cut into tiles whose im2col block
 * stays in cache (CONV_TILE_BYTES); each worker of the intra-op pool (a "slot") takes a
 * contiguous run of tiles, builds their im2col rows in its own scratch and runs a one-thread
 * OpenBLAS GEMM per tile. A constant filter packed once (cpu_packed.c) needs no im2col but at
 * the left and right edges: the packed GEMM reads the windows from the input where they are (an
 * implicit GEMM, forward_tile_implicit). A 1x1 convolution with stride 1 and no padding needs no
 * im2col: its input already is the GEMM's left matrix. A tiny convolution (few taps and filters)
 * skips the GEMM for cpu_conv_nchw.c's direct loop, which reads and writes NHWC too. Depthwise
 * convolutions are a direct loop summing each output pixel's channels in vector registers
 * (below). */
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"
#include "cpu_internal.h"

#define H weft__cpu_host

/* The im2col block of one tile: about half of a 512 KiB L2 cache leaves room for the GEMM's
 * packed panels. */
#define CONV_TILE_BYTES ((int64_t)256 << 10)
/* Below these many multiply-adds a convolution runs on the calling thread: measured on the
 * shared 2-core machine (docs/performance.md), the pool lost below them (3x3x16 -> 16 over
 * 16x16: 70 us against 54 on one thread; depthwise 3x3 over 16x16x32: 45 against 36) and won
 * above (3x3x32 -> 32 over 28x28: 358 against 473; depthwise over 56x56x64: 699 against 849). */
#define CONV_PARALLEL_MIN_MACS ((int64_t)1 << 21)
#define DEPTHWISE_PARALLEL_MIN_MACS ((int64_t)1 << 19)

/* ---------------------------------------------------------------------------------------------
 * Tiles over the output rows, shared out over the intra-op pool. */

typedef struct tiles tiles_t;
/* Computes rows [r0, r1) of the tile job with the slot's scratch. */
typedef void (*tile_fn)(const tiles_t *t, float *scratch, int64_t r0, int64_t r1);

struct tiles {
  const weft_cpu_conv2d_t *g;
  const float *a, *b; /* the op's two inputs (x, f), (f, dy) or (x, dy) */
  float *out;         /* the output, or the per-slot partial sums of the filter gradient */
  int64_t k;          /* kh * kw * c: the im2col width */
  int64_t rows, tile, slots;
  int64_t scratch_per_slot; /* floats */
  float *scratch;
  bool zero_scratch; /* start each slot's scratch at zero (partial sums) */
  tile_fn fn;
  const weft_cpu_epilogue_t *ep; /* forward only: finishes each tile of the output */
  const weft_cpu_packed_t *packed; /* forward only: the filter packed (cpu_packed.c), or NULL */
};

static void slot_range(void *arg, int64_t b, int64_t e) {
  const tiles_t *t = arg;
  int64_t ntiles = (t->rows + t->tile - 1) / t->tile;
  for (int64_t s = b; s < e; s++) {
    int64_t t0 = ntiles * s / t->slots, t1 = ntiles * (s + 1) / t->slots;
    for (int64_t i = t0; i < t1; i++) {
      int64_t r0 = i * t->tile, r1 = r0 + t->tile < t->rows ? r0 + t->tile : t->rows;
      t->fn(t, t->scratch + s * t->scratch_per_slot, r0, r1);
    }
  }
}

/* Chooses the tile (rows whose im2col block is about CONV_TILE_BYTES, a multiple of 8) and the
 * slots (the pool's threads, at most one per tile, one for a small convolution). */
static void tiles_plan(weft_kernel_ctx_t *ctx, tiles_t *t, int64_t macs) {
  int64_t tile = CONV_TILE_BYTES / ((int64_t)sizeof(float) * (t->k > 0 ? t->k : 1));
  tile = tile < 8 ? 8 : tile / 8 * 8;
  /* No longer than the rows: a small convolution's scratch stays small (a 256 KiB one is a
   * fresh mapping, page faults and all, on every call). */
  if (tile > (t->rows + 7) / 8 * 8) tile = (t->rows + 7) / 8 * 8;
  if (tile < 8) tile = 8;
  t->tile = tile;
  int64_t ntiles = (t->rows + tile - 1) / tile;
  int64_t slots = H->kernel_num_threads(ctx);
  if (macs < CONV_PARALLEL_MIN_MACS) slots = 1;
  /* A few tiles per slot at least, so that the split is even; never fewer tiles than slots. */
  if (slots > 1 && ntiles < 2 * slots) {
    t->tile = (t->rows + 2 * slots - 1) / (2 * slots);
    t->tile = t->tile < 8 ? 8 : (t->tile + 7) / 8 * 8;
    ntiles = (t->rows + t->tile - 1) / t->tile;
  }
  t->slots = slots < ntiles ? slots : ntiles;
  if (t->slots < 1) t->slots = 1;
}

/* Runs t->fn over every tile; scratch_per_slot floats of scratch for each slot. */
static weft_status_t *tiles_run(weft_kernel_ctx_t *ctx, tiles_t *t) {
  if (t->rows == 0) return NULL;
  if (t->scratch_per_slot > 0)
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(
        ctx, (size_t)(t->slots * t->scratch_per_slot) * sizeof(float), (void **)&t->scratch));
  if (t->zero_scratch)
    memset(t->scratch, 0, (size_t)(t->slots * t->scratch_per_slot) * sizeof(float));
  /* Every GEMM of a tile runs on its slot's thread alone. */
  weft__cpu_blas.set_num_threads(1);
  if (t->slots == 1)
    slot_range(t, 0, 1);
  else
    H->parallel_for(ctx, t->slots, (int64_t)1 << 30, slot_range, t);
  return NULL;
}

/* Whether the convolution reads its input as it is: 1x1, stride 1, no padding. */
static bool is_pointwise(const weft_cpu_conv2d_t *g) {
  return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
         g->oh == g->h && g->ow == g->w;
}

/* im2col rows [r0, r1) (output pixels over the whole batch) into cols [r1 - r0, k]: each
 * window's values, zero where it hangs over the padding. A window row that lies inside the
 * input is one contiguous run of kw * c floats in NHWC (dilation 1 across). */
static void im2col_rows(const weft_cpu_conv2d_t *g, const float *x, int64_t r0, int64_t r1,
                        float *cols) {
  int64_t pixels = g->oh * g->ow, k = g->kh * g->kw * g->c, c = g->c;
  int64_t n = r0 / pixels, oy = r0 % pixels / g->ow, ox = r0 % g->ow;
  for (int64_t r = r0; r < r1; r++) {
    float *dst = cols + (r - r0) * k;
    const float *img = x + n * g->h * g->w * c;
    int64_t ix0 = ox * g->sw - g->pl;
    bool row_inside = g->dw == 1 && ix0 >= 0 && ix0 + g->kw <= g->w;
    for (int64_t i = 0; i < g->kh; i++, dst += g->kw * c) {
      int64_t iy = oy * g->sh + i * g->dh - g->pt;
      if (iy < 0 || iy >= g->h) {
        memset(dst, 0, sizeof(float) * (size_t)(g->kw * c));
        continue;
      }
      const float *src = img + (iy * g->w) * c;
      if (row_inside) {
        memcpy(dst, src + ix0 * c, sizeof(float) * (size_t)(g->kw * c));
        continue;
      }
      for (int64_t q = 0; q < g->kw; q++) {
        int64_t ix = ix0 + q * g->dw;
        if (ix < 0 || ix >= g->w)
          memset(dst + q * c, 0, sizeof(float) * (size_t)c);
        else
          memcpy(dst + q * c, src + ix * c, sizeof(float) * (size_t)c);
      }
    }
    if (++ox == g->ow) {
      ox = 0;
      if (++oy == g->oh) {
        oy = 0;
        n++;
      }
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Conv2D */

/* The implicit GEMM (packed filters only): an output pixel whose window lies inside the
 * input across (dilation 1) reads each filter row's kw * c values as one run of the NHWC input,
 * and the next pixel's run starts sw * c floats further on, so a run of such pixels is a
 * segment of cpu_gemm.h's packed_passes over the input where it is, one pass per filter row
 * (in pieces of at most KC). Filter rows over the top or bottom padding are left out (their
 * products are zeros). The pixels whose window hangs over the left or right padding go through
 * im2col as before. Below IMPLICIT_MIN_RUN floats per run, the passes are too shallow (C
 * reloaded every few steps of depth) and im2col is kept; above IMPLICIT_MAX_B_FLOATS of filter
 * (1 MiB: the L2 cache), the edge pixels' GEMM streams the filter from L3 once more per tile,
 * and im2col measured faster (3x3x256 -> 256 over 14x14: 2.05-2.11 ms against 2.05, CPU time;
 * 3x3x128 -> 128 over 28x28, 590 KiB of filter: 1.99 against 2.06). */
#define IMPLICIT_MIN_RUN 64
/* Output pixels from which a filter that is not a constant is packed for one call: filter fed,
 * CPU time, im2col + OpenBLAS against packed + implicit: 3x3x64 -> 64 over 56x56 2.54-2.58 ms
 * against 2.07-2.14, over 16x16 0.196-0.204 against 0.162-0.170, over 8x8 (64 pixels) 0.054
 * against 0.049-0.056 (no gain); 3x3x128 -> 128 over 28x28 2.45-2.51 against 2.06-2.09. */
#define IMPLICIT_ONCE_MIN_ROWS 256
#define IMPLICIT_MAX_B_FLOATS ((int64_t)1 << 18)
/* The most passes (filter rows times pieces), and segments per call of packed_passes. */
#define IMPLICIT_MAX_PASSES 64
#define IMPLICIT_MAX_SEGMENTS 16

static int64_t implicit_pieces(const weft_cpu_conv2d_t *g) {
  return (g->kw * g->c + WEFT_GEMM_KC - 1) / WEFT_GEMM_KC;
}

static bool implicit_wanted(const weft_cpu_conv2d_t *g) {
  return g->dw == 1 && !is_pointwise(g) && g->kw * g->c >= IMPLICIT_MIN_RUN &&
         g->kh * implicit_pieces(g) <= IMPLICIT_MAX_PASSES &&
         g->kh * g->kw * g->c * g->m <= IMPLICIT_MAX_B_FLOATS;
}

/* Output columns [*xa, *xb) whose windows lie inside the input across. */
static void implicit_columns(const weft_cpu_conv2d_t *g, int64_t *xa, int64_t *xb) {
  int64_t a = (g->pl + g->sw - 1) / g->sw;
  int64_t b = g->w + g->pl - g->kw < 0 ? 0 : (g->w + g->pl - g->kw) / g->sw + 1;
  *xa = a < g->ow ? a : g->ow;
  *xb = b < *xa ? *xa : b < g->ow ? b : g->ow;
}

/* Input row of filter row i for output row oy, or -1 where it is padding. */
static int64_t implicit_row(const weft_cpu_conv2d_t *g, int64_t oy, int64_t i) {
  int64_t iy = oy * g->sh + i * g->dh - g->pt;
  return iy >= 0 && iy < g->h ? iy : -1;
}

/* Rows [r0, r1) of the output by the implicit GEMM: the inside pixels as segments, the edge
 * pixels gathered into scratch (their im2col rows, then their results) in a first walk over
 * the output rows and put in place in a second. */
static void forward_tile_implicit(const tiles_t *t, float *scratch, int64_t r0, int64_t r1) {
  const weft_cpu_conv2d_t *g = t->g;
  int64_t pixels = g->oh * g->ow, run = g->kw * g->c, pieces = implicit_pieces(g);
  int64_t piece = (run + pieces - 1) / pieces, xa, xb;
  int np = (int)(g->kh * pieces);
  int64_t k0[IMPLICIT_MAX_PASSES], kc[IMPLICIT_MAX_PASSES];
  for (int q = 0; q < np; q++) {
    int64_t p0 = q % pieces * piece;
    k0[q] = q / pieces * run + p0;
    kc[q] = run - p0 < piece ? run - p0 : piece;
  }
  implicit_columns(g, &xa, &xb);
  const float *ptrs[IMPLICIT_MAX_SEGMENTS][IMPLICIT_MAX_PASSES];
  weft_cpu_gemm_segment_t seg[IMPLICIT_MAX_SEGMENTS];
  int nseg = 0;
  float *edge_cols = scratch, *edge_out = scratch + t->tile * t->k;
  for (int walk = 0; walk < 2; walk++) {
    int64_t edges = 0;
    for (int64_t r = r0; r < r1;) {
      int64_t n = r / pixels, oy = r % pixels / g->ow, x0 = r % g->ow, row = r - x0;
      int64_t x1 = x0 + (r1 - r) < g->ow ? x0 + (r1 - r) : g->ow;
      int64_t ia = x0 > xa ? x0 : xa, ib = x1 < xb ? x1 : xb;
      bool inside = false;
      for (int64_t i = 0; i < g->kh && !inside; i++) inside = implicit_row(g, oy, i) >= 0;
      /* No filter row inside: the whole run is edge pixels (zeros, the bias, the epilogue). */
      if (!inside || ia >= ib) ia = ib = x1;
      if (walk == 0 && ia < ib) {
        for (int q = 0; q < np; q++) {
          int64_t i = q / pieces, iy = implicit_row(g, oy, i);
          ptrs[nseg][q] = iy < 0 ? NULL
                                 : t->a + ((n * g->h + iy) * g->w + ia * g->sw - g->pl) * g->c +
                                       k0[q] - i * run;
        }
        seg[nseg] = (weft_cpu_gemm_segment_t){ib - ia, t->out + (row + ia) * g->m, ptrs[nseg]};
        if (++nseg == IMPLICIT_MAX_SEGMENTS) {
          weft__cpu_packed_gemm_passes_1t(t->packed, k0, kc, np, g->sw * g->c, seg, nseg, g->m,
                                          t->ep);
          nseg = 0;
        }
      }
      int64_t spans[2][2] = {{x0, ia}, {ib, x1}};
      for (int e = 0; e < 2; e++) {
        int64_t s0 = spans[e][0], s1 = spans[e][1];
        if (s0 >= s1) continue;
        if (walk == 0)
          im2col_rows(g, t->a, row + s0, row + s1, edge_cols + edges * t->k);
        else
          memcpy(t->out + (row + s0) * g->m, edge_out + edges * g->m,
                 sizeof(float) * (size_t)((s1 - s0) * g->m));
        edges += s1 - s0;
      }
      r = row + x1;
    }
    if (walk == 1) break;
    if (nseg > 0)
      weft__cpu_packed_gemm_passes_1t(t->packed, k0, kc, np, g->sw * g->c, seg, nseg, g->m,
                                      t->ep);
    if (edges == 0) return;
    weft__cpu_packed_gemm_1t(t->packed, edge_cols, t->k, edges, edge_out, g->m, t->ep);
  }
}

static void forward_tile(const tiles_t *t, float *scratch, int64_t r0, int64_t r1) {
  const weft_cpu_conv2d_t *g = t->g;
  if (t->packed && implicit_wanted(g)) {
    forward_tile_implicit(t, scratch, r0, r1);
    return;
  }
  const float *a = t->a + r0 * g->c;
  if (!is_pointwise(g)) {
    im2col_rows(g, t->a, r0, r1, scratch);
    a = scratch;
  }
  float *y = t->out + r0 * g->m;
  if (t->packed) {
    /* The constant filter packed once: bias, GEMM and epilogue on each tile of 8 rows. */
    weft__cpu_packed_gemm_1t(t->packed, a, t->k, r1 - r0, y, g->m, t->ep);
    return;
  }
  bool biased = weft__cpu_epilogue_prefill(t->ep, y, r1 - r0, g->m, g->m, 0);
  weft__cpu_sgemm_1t(false, false, r1 - r0, g->m, t->k, a, t->k, t->b, g->m, biased ? 1.0f : 0.0f,
                     y, g->m);
  /* The tile of y is still in cache: scale, bias (unless prefilled), activation now. */
  if (t->ep) weft__cpu_epilogue_apply(t->ep, y, r1 - r0, g->m, g->m, 0, biased);
}

weft_status_t *weft__cpu_conv2d_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                    const float *x, const float *f, float *y) {
  return weft__cpu_conv2d_f32_packed(ctx, g, x, f, y, NULL, NULL);
}

weft_status_t *weft__cpu_conv2d_f32_ep(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                       const float *x, const float *f, float *y,
                                       const weft_cpu_epilogue_t *ep) {
  return weft__cpu_conv2d_f32_packed(ctx, g, x, f, y, ep, NULL);
}

/* The most filters for which a convolution that the direct loop takes (few taps, small strides:
 * weft__cpu_conv2d_nchw_direct) runs it in NHWC too: the corpus's tiny channels-last nets (2
 * channels, 2x2 or 1x2 windows, 3 filters) spent more in the tiles' fixed costs (plan, scratch,
 * OpenBLAS's setup for a 3-column GEMM) than in arithmetic; the direct loop took 0.2-0.6x of
 * ONNX Runtime's time where im2col + GEMM took 0.9-1.3x (docs/performance.md). The benchmark's
 * large convolutions (64 filters and more) keep the GEMM. */
#define NHWC_DIRECT_MAX_M 8

weft_status_t *weft__cpu_conv2d_f32_packed(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                           const float *x, const float *f, float *y,
                                           const weft_cpu_epilogue_t *ep,
                                           weft_cpu_packed_cache_t *cache) {
  int64_t rows = g->n * g->oh * g->ow, k = g->kh * g->kw * g->c;
  if (rows == 0 || g->m == 0) return NULL;
  if (k == 0) {
    memset(y, 0, sizeof(float) * (size_t)(rows * g->m));
    if (ep) weft__cpu_epilogue_apply(ep, y, rows, g->m, g->m, 0, false);
    return NULL;
  }
  if (g->m <= NHWC_DIRECT_MAX_M && weft__cpu_conv2d_nchw_direct(g))
    return weft__cpu_conv2d_nhwc_direct_f32(ctx, g, x, f, y, ep);
  if (weft__cpu_conv2d_winograd_wanted(g))
    return weft__cpu_conv2d_winograd_f32(ctx, g, x, f, y, ep);
  if (weft__cpu_conv2d_few_taps(g)) return weft__cpu_conv2d_few_taps_f32(ctx, g, x, f, y, ep);
  tiles_t t = {.g = g, .a = x, .b = f, .out = y, .k = k, .rows = rows, .fn = forward_tile,
               .ep = ep};
  tiles_plan(ctx, &t, rows * k * g->m);
  weft_cpu_packed_t *packed =
      cache ? weft__cpu_packed_acquire(ctx, cache, 1, f, g->m, false, rows, g->m, k) : NULL;
  /* A filter that is not a constant (one being trained) is packed for this call alone where the
   * implicit GEMM takes it: a copy of the filter instead of im2col's copies of the input. */
  if (!packed && implicit_wanted(g) && rows >= IMPLICIT_ONCE_MIN_ROWS)
    packed = weft__cpu_packed_once(f, g->m, false, rows, g->m, k);
  t.packed = packed;
  /* The implicit GEMM's edge pixels: their im2col rows, then their results. */
  bool implicit = packed && implicit_wanted(g);
  t.scratch_per_slot = is_pointwise(g) ? 0 : t.tile * (k + (implicit ? g->m : 0));
  weft_status_t *st = tiles_run(ctx, &t);
  weft__cpu_packed_release(packed);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Conv2DBackpropFilter: df [k, m] = sum over the output rows of im2col(x)^T dy. Each slot sums
 * its tiles into a partial of its own (slot 0 into df), and the partials are added at the end,
 * in slot order: the result does not depend on the threads' timing. */

static void filter_tile(const tiles_t *t, float *scratch, int64_t r0, int64_t r1) {
  const weft_cpu_conv2d_t *g = t->g;
  int64_t slot = (scratch - t->scratch) / t->scratch_per_slot;
  float *part = slot == 0 ? t->out : scratch;
  const float *a = t->a + r0 * g->c;
  if (!is_pointwise(g)) {
    a = scratch + t->k * g->m;
    im2col_rows(g, t->a, r0, r1, (float *)a);
  }
  weft__cpu_sgemm_1t(true, false, t->k, g->m, r1 - r0, a, t->k, t->b + r0 * g->m, g->m, 1.0f,
                     part, g->m);
}

weft_status_t *weft__cpu_conv2d_bp_filter_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                              const float *x, const float *dy, float *df) {
  int64_t rows = g->n * g->oh * g->ow, k = g->kh * g->kw * g->c;
  if (k * g->m == 0) return NULL;
  memset(df, 0, sizeof(float) * (size_t)(k * g->m));
  if (rows == 0) return NULL;
  tiles_t t = {.g = g, .a = x, .b = dy, .out = df, .k = k, .rows = rows, .fn = filter_tile};
  tiles_plan(ctx, &t, rows * k * g->m);
  /* Each slot: its partial [k, m] (zero to start), then its im2col tile. */
  t.scratch_per_slot = k * g->m + (is_pointwise(g) ? 0 : t.tile * k);
  t.zero_scratch = true;
  WEFT_RETURN_IF_ERROR(tiles_run(ctx, &t));
  int64_t per_slot = t.scratch_per_slot;
  for (int64_t s = 1; s < t.slots; s++) {
    const float *part = t.scratch + s * per_slot;
    for (int64_t i = 0; i < k * g->m; i++) df[i] += part[i];
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Conv2DBackpropInput: cols [P, k] = dy [P, m] x f^T (f is [k, m]) per image, then col2im. With a
 * batch that shares out evenly over the threads, each takes whole images, a cache-sized tile of
 * cols at a time, and adds them into its own images. Otherwise, image by image, the tiles of
 * cols go over the pool, then each input pixel gathers the column entries that read it (col2im
 * as a gather, so that threads never add into the same pixel). A pointwise convolution's dx is
 * the GEMM itself. */

typedef struct bp_input_job {
  const weft_cpu_conv2d_t *g;
  const float *cols; /* [oh * ow, k] of the current image */
  float *dx;         /* the current image [h, w, c] */
} bp_input_job_t;

static void bp_input_tile(const tiles_t *t, float *scratch, int64_t r0, int64_t r1) {
  (void)scratch;
  const weft_cpu_conv2d_t *g = t->g;
  /* The pointwise case writes dx rows [r0, r1) = dy rows x f^T; otherwise t->out is the
   * image's cols and the rows are its output pixels. */
  weft__cpu_sgemm_1t(false, true, r1 - r0, t->k, g->m, t->b + r0 * g->m, g->m, t->a, g->m, 0.0f,
                     t->out + r0 * t->k, t->k);
}

/* Input rows [b, e) of dx: each row cleared, then every column entry that reads the row added
 * in, filter row by filter row (i), column (q) and output pixel: per element the same order (i,
 * then q) as a gather per pixel, without its divisions. */
static void gather_rows(void *arg, int64_t b, int64_t e) {
  const bp_input_job_t *j = arg;
  const weft_cpu_conv2d_t *g = j->g;
  int64_t c = g->c, k = g->kh * g->kw * c;
  for (int64_t iy = b; iy < e; iy++) {
    float *restrict row = j->dx + iy * g->w * c;
    memset(row, 0, sizeof(float) * (size_t)(g->w * c));
    for (int64_t i = 0; i < g->kh; i++) {
      int64_t ty = iy + g->pt - i * g->dh;
      if (ty < 0 || ty % g->sh != 0 || ty / g->sh >= g->oh) continue;
      const float *src = j->cols + (ty / g->sh) * g->ow * k;
      for (int64_t q = 0; q < g->kw; q++) {
        /* Output pixels ox whose tap q lands inside the row: ix = ox * sw - pl + q * dw. */
        int64_t first = g->pl - q * g->dw, end = g->w + g->pl - q * g->dw;
        int64_t lo = first > 0 ? (first + g->sw - 1) / g->sw : 0;
        int64_t hi = end > 0 ? (end + g->sw - 1) / g->sw : 0;
        if (hi > g->ow) hi = g->ow;
        for (int64_t ox = lo; ox < hi; ox++) {
          float *restrict d = row + (ox * g->sw - g->pl + q * g->dw) * c;
          const float *restrict s = src + ox * k + (i * g->kw + q) * c;
          for (int64_t ch = 0; ch < c; ch++) d[ch] += s[ch];
        }
      }
    }
  }
}

/* Rows of a tile whose columns are about CONV_TILE_BYTES. */
static int64_t bp_input_tile_rows(int64_t k) {
  int64_t rows = CONV_TILE_BYTES / ((int64_t)sizeof(float) * k);
  return rows < 8 ? 8 : rows;
}

/* dx of image r0 (and the ones up to r1): tile by tile, cols = dy x f^T, then each column entry
 * added into the input pixel it was read from (col2im). */
static void bp_input_image(const tiles_t *t, float *cols, int64_t r0, int64_t r1) {
  const weft_cpu_conv2d_t *g = t->g;
  int64_t pixels = g->oh * g->ow, k = t->k, c = g->c, tile = bp_input_tile_rows(k);
  for (int64_t n = r0; n < r1; n++) {
    float *dx = t->out + n * g->h * g->w * c;
    memset(dx, 0, sizeof(float) * (size_t)(g->h * g->w * c));
    for (int64_t p0 = 0; p0 < pixels; p0 += tile) {
      int64_t p1 = p0 + tile < pixels ? p0 + tile : pixels;
      weft__cpu_sgemm_1t(false, true, p1 - p0, k, g->m, t->b + (n * pixels + p0) * g->m, g->m,
                         t->a, g->m, 0.0f, cols, k);
      for (int64_t p = p0; p < p1; p++) {
        int64_t oy = p / g->ow, ox = p % g->ow;
        for (int64_t i = 0; i < g->kh; i++) {
          int64_t iy = oy * g->sh + i * g->dh - g->pt;
          if (iy < 0 || iy >= g->h) continue;
          for (int64_t q = 0; q < g->kw; q++) {
            int64_t ix = ox * g->sw + q * g->dw - g->pl;
            if (ix < 0 || ix >= g->w) continue;
            float *restrict d = dx + (iy * g->w + ix) * c;
            const float *restrict s = cols + (p - p0) * k + (i * g->kw + q) * c;
            for (int64_t ch = 0; ch < c; ch++) d[ch] += s[ch];
          }
        }
      }
    }
  }
}

weft_status_t *weft__cpu_conv2d_bp_input_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                             const float *f, const float *dy, float *dx) {
  int64_t pixels = g->oh * g->ow, k = g->kh * g->kw * g->c;
  int64_t in_image = g->h * g->w * g->c;
  if (g->n * in_image == 0) return NULL;
  if (k == 0 || g->m == 0 || pixels == 0) {
    memset(dx, 0, sizeof(float) * (size_t)(g->n * in_image));
    return NULL;
  }
  tiles_t t = {.g = g, .a = f, .b = dy, .out = dx, .k = k, .fn = bp_input_tile};
  if (is_pointwise(g)) {
    t.rows = g->n * pixels;
    tiles_plan(ctx, &t, t.rows * k * g->m);
    return tiles_run(ctx, &t);
  }
  int64_t threads = H->kernel_num_threads(ctx);
  if (g->n > 1 && (g->n % threads == 0 || g->n >= 4 * threads)) {
    /* Whole images per thread: no two threads add into one pixel, so each tile's columns are
     * added back while they are in cache. */
    t.rows = g->n;
    t.fn = bp_input_image;
    tiles_plan(ctx, &t, g->n * pixels * k * g->m);
    t.tile = 1;
    t.slots = t.slots < g->n ? t.slots : g->n;
    t.scratch_per_slot = (bp_input_tile_rows(k) < pixels ? bp_input_tile_rows(k) : pixels) * k;
    return tiles_run(ctx, &t);
  }
  float *cols = NULL;
  WEFT_RETURN_IF_ERROR(
      H->kernel_scratch(ctx, sizeof(float) * (size_t)(pixels * k), (void **)&cols));
  t.rows = pixels;
  tiles_plan(ctx, &t, pixels * k * g->m);
  t.out = cols;
  bp_input_job_t j = {g, cols, NULL};
  for (int64_t n = 0; n < g->n; n++) {
    t.b = dy + n * pixels * g->m;
    WEFT_RETURN_IF_ERROR(tiles_run(ctx, &t));
    j.dx = dx + n * in_image;
    weft__cpu_parallel(ctx, g->h, g->w * g->kh * g->kw * g->c + 1, gather_rows, &j);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * DepthwiseConv2dNative: output channel o = ci * mult + q reads input channel ci with filter
 * [kh, kw, c, mult], whose taps are laid out [kh, kw, c * mult]: the same index o. Each output
 * pixel's channels are summed in registers over every tap, from the bias or zero, finished
 * (Relu, Relu6) and stored once (depthwise_row_taps; for 3x3 filters, depthwise_row_3x3 and
 * _x2 with the taps in registers). Multiplier 2 reads each input vector once for both of its
 * outputs and interleaves them at the store; above 2, each input row is first widened to m
 * channels (input channel ci repeated mult times), which makes the loop multiplier 1's. */

/* Adds filter row i's taps over input row `src` (pixels `px` floats apart, m channels each)
 * into output row `out`. The plugin is built for any x86-64 (SSE2); this loop, where depthwise
 * convolutions spend their time, is also built for AVX2 and AVX-512 and chosen at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void depthwise_add_row(const weft_cpu_conv2d_t *g, const float *src, int64_t px,
                              const float *f, int64_t i, float *out) {
  int64_t m = g->m;
  for (int64_t ox = 0; ox < g->ow; ox++) {
    float *restrict o = out + ox * m;
    for (int64_t q = 0; q < g->kw; q++) {
      int64_t ix = ox * g->sw + q * g->dw - g->pl;
      if (ix < 0 || ix >= g->w) continue;
      const float *restrict xs = src + ix * px;
      const float *restrict fk = f + (i * g->kw + q) * m;
      for (int64_t ch = 0; ch < m; ch++) o[ch] += xs[ch] * fk[ch];
    }
  }
}

/* The most filter rows depthwise_row_taps takes (its row pointers live on the stack). */
#define DEPTHWISE_MAX_KH 16

/* 16 floats as one value: GCC splits it into the registers of the clone's level (one zmm, two
 * ymm, four xmm). dw_v16u is the same read from any float address. */
typedef float dw_v16 __attribute__((vector_size(64)));
typedef float dw_v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef int32_t dw_v16i __attribute__((vector_size(64)));

/* How one row of sums is finished in registers before its only store (dw_row_t.clamp): Relu and
 * Relu6 as their unfused loops compute them (x < 0 gives 0, x > 6 gives 6, NaN passes). */
enum { DW_CLAMP_NONE, DW_CLAMP_RELU, DW_CLAMP_RELU6 };

/* One output row of a depthwise convolution with multiplier 1 or 2, every tap summed in
 * registers and stored once. src[0..kh) are the input rows (NULL: outside the image; pixels
 * g->c floats apart). Multiplier 1: f is the filter as given, [kh*kw][c], and start the bias [c]
 * or NULL. Multiplier 2: f is the filter split by q, [kh*kw][2][c] (tap t, q, input channel ci
 * at (t * 2 + q) * c + ci), start likewise [2][c]; the two sums of each input channel block are
 * interleaved into output channels ci * 2 + q at the store. Either way each output element is
 * its start (0 or the bias) plus the taps in filter order, as the loops it replaced summed. */
typedef struct dw_row {
  const weft_cpu_conv2d_t *g;
  const float *f, *start;
  int64_t c; /* channels of an input pixel: g->c, or g->m for rows widened beforehand */
  bool two;  /* multiplier 2 (else 1) */
  int clamp;
} dw_row_t;

typedef struct depthwise_job {
  const weft_cpu_conv2d_t *g;
  const float *x, *f;
  float *y;
  const weft_cpu_epilogue_t *ep; /* finishes each output row, or NULL */
  dw_row_t row;                  /* depthwise_row_taps' view of the filter and epilogue */
} depthwise_job_t;

#define DW_LD(p) ((dw_v16)(*(const dw_v16u *)(p)))
#define DW_ST(p, v) (*(dw_v16u *)(p) = (v))
/* Relu / Relu6 of v without a branch, NaN left as it is. */
#define DW_FINISH(v, clamp)                                                                    \
  do {                                                                                         \
    if ((clamp) != DW_CLAMP_NONE) {                                                            \
      dw_v16 z_ = {0};                                                                         \
      (v) = (dw_v16)((dw_v16i)(v) & ~((v) < z_));                                              \
      if ((clamp) == DW_CLAMP_RELU6) {                                                         \
        dw_v16 six_ = z_ + 6.0f;                                                               \
        dw_v16i hi_ = (v) > six_;                                                              \
        (v) = (dw_v16)(((dw_v16i)(v) & ~hi_) | ((dw_v16i)six_ & hi_));                         \
      }                                                                                        \
    }                                                                                          \
  } while (0)
/* For every tap (i, q) of output pixel ox whose input pixel is inside the image: xs its input
 * pixel at channel offset c0, t the tap's index; the body (the macro's argument) sums it. */
#define DW_TAPS(...)                                                                           \
  for (int64_t i = 0; i < g->kh; i++) {                                                        \
    if (!src[i]) continue;                                                                     \
    for (int64_t q = 0; q < g->kw; q++) {                                                      \
      int64_t ix = ox * g->sw + q * g->dw - g->pl;                                             \
      if (ix < 0 || ix >= g->w) continue;                                                      \
      const float *xs = src[i] + ix * c + c0;                                                  \
      int64_t t = i * g->kw + q;                                                               \
      __VA_ARGS__                                                                              \
    }                                                                                          \
  }

static inline float dw_finish1(float v, int clamp) {
  if (clamp != DW_CLAMP_NONE && v < 0.0f) v = 0.0f;
  if (clamp == DW_CLAMP_RELU6 && v > 6.0f) v = 6.0f;
  return v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void depthwise_row_taps(const dw_row_t *r, const float *const *src, float *out) {
  const weft_cpu_conv2d_t *g = r->g;
  const float *f = r->f, *st = r->start;
  int64_t c = r->c, m = r->two ? 2 * c : c;
  int clamp = r->clamp;
  const dw_v16 zero = {0};
  for (int64_t ox = 0; ox < g->ow; ox++) {
    float *o = out + ox * m;
    int64_t c0 = 0;
    if (!r->two) {
      for (; c0 + 64 <= c; c0 += 64) {
        dw_v16 a0 = st ? DW_LD(st + c0) : zero, a1 = st ? DW_LD(st + c0 + 16) : zero;
        dw_v16 a2 = st ? DW_LD(st + c0 + 32) : zero, a3 = st ? DW_LD(st + c0 + 48) : zero;
        DW_TAPS({
          const float *fk = f + t * c + c0;
          a0 += DW_LD(xs) * DW_LD(fk);
          a1 += DW_LD(xs + 16) * DW_LD(fk + 16);
          a2 += DW_LD(xs + 32) * DW_LD(fk + 32);
          a3 += DW_LD(xs + 48) * DW_LD(fk + 48);
        })
        DW_FINISH(a0, clamp);
        DW_FINISH(a1, clamp);
        DW_FINISH(a2, clamp);
        DW_FINISH(a3, clamp);
        DW_ST(o + c0, a0);
        DW_ST(o + c0 + 16, a1);
        DW_ST(o + c0 + 32, a2);
        DW_ST(o + c0 + 48, a3);
      }
      for (; c0 + 16 <= c; c0 += 16) {
        dw_v16 a0 = st ? DW_LD(st + c0) : zero;
        DW_TAPS({ a0 += DW_LD(xs) * DW_LD(f + t * c + c0); })
        DW_FINISH(a0, clamp);
        DW_ST(o + c0, a0);
      }
      for (; c0 < c; c0++) {
        float a = st ? st[c0] : 0.0f;
        DW_TAPS({ a += xs[0] * f[t * c + c0]; })
        o[c0] = dw_finish1(a, clamp);
      }
      continue;
    }
    /* Multiplier 2: a0/a1 (q = 0, 1) over input channels c0.., a2/a3 over c0 + 16... */
    const dw_v16i lo = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
    const dw_v16i hi = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    for (; c0 + 32 <= c; c0 += 32) {
      dw_v16 a0 = st ? DW_LD(st + c0) : zero, a1 = st ? DW_LD(st + c + c0) : zero;
      dw_v16 a2 = st ? DW_LD(st + c0 + 16) : zero, a3 = st ? DW_LD(st + c + c0 + 16) : zero;
      DW_TAPS({
        const float *fk = f + t * 2 * c + c0;
        dw_v16 x0 = DW_LD(xs), x1 = DW_LD(xs + 16);
        a0 += x0 * DW_LD(fk);
        a1 += x0 * DW_LD(fk + c);
        a2 += x1 * DW_LD(fk + 16);
        a3 += x1 * DW_LD(fk + c + 16);
      })
      DW_FINISH(a0, clamp);
      DW_FINISH(a1, clamp);
      DW_FINISH(a2, clamp);
      DW_FINISH(a3, clamp);
      DW_ST(o + 2 * c0, __builtin_shuffle(a0, a1, lo));
      DW_ST(o + 2 * c0 + 16, __builtin_shuffle(a0, a1, hi));
      DW_ST(o + 2 * c0 + 32, __builtin_shuffle(a2, a3, lo));
      DW_ST(o + 2 * c0 + 48, __builtin_shuffle(a2, a3, hi));
    }
    for (; c0 + 16 <= c; c0 += 16) {
      dw_v16 a0 = st ? DW_LD(st + c0) : zero, a1 = st ? DW_LD(st + c + c0) : zero;
      DW_TAPS({
        const float *fk = f + t * 2 * c + c0;
        dw_v16 x0 = DW_LD(xs);
        a0 += x0 * DW_LD(fk);
        a1 += x0 * DW_LD(fk + c);
      })
      DW_FINISH(a0, clamp);
      DW_FINISH(a1, clamp);
      DW_ST(o + 2 * c0, __builtin_shuffle(a0, a1, lo));
      DW_ST(o + 2 * c0 + 16, __builtin_shuffle(a0, a1, hi));
    }
    for (; c0 < c; c0++) {
      float a0 = st ? st[c0] : 0.0f, a1 = st ? st[c + c0] : 0.0f;
      DW_TAPS({
        a0 += xs[0] * f[t * 2 * c + c0];
        a1 += xs[0] * f[t * 2 * c + c + c0];
      })
      o[2 * c0] = dw_finish1(a0, clamp);
      o[2 * c0 + 1] = dw_finish1(a1, clamp);
    }
  }
}

/* Output pixels [lo, hi) of a row whose kw taps all fall inside the image (the others go
 * through DW_TAPS' checks). */
static void dw_inner_pixels(const weft_cpu_conv2d_t *g, int64_t *lo, int64_t *hi) {
  int64_t a = 0, b = g->ow;
  while (a < b && a * g->sw - g->pl < 0) a++;
  while (b > a && (b - 1) * g->sw + (g->kw - 1) * g->dw - g->pl >= g->w) b--;
  *lo = a;
  *hi = b;
}

/* depthwise_row_taps for a 3x3 filter with multiplier 1, the common case: 16 channels at a
 * time, their nine taps held in registers, four output pixels summed at once, so that each
 * multiply-add loads one vector (the input) where the loop above loads two. The same sums in the
 * same order. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void depthwise_row_3x3(const dw_row_t *r, const float *const *src, float *out) {
  const weft_cpu_conv2d_t *g = r->g;
  const float *f = r->f, *st = r->start;
  int64_t c = r->c, m = c, sw = g->sw, dw = g->dw;
  bool dense = sw == 1 && dw == 1;
  int clamp = r->clamp;
  const dw_v16 zero = {0};
  int64_t lo, hi;
  dw_inner_pixels(g, &lo, &hi);
  int64_t c0 = 0;
  for (; c0 + 16 <= c; c0 += 16) {
    dw_v16 fr[9];
    for (int t = 0; t < 9; t++) fr[t] = DW_LD(f + t * c + c0);
    dw_v16 s = st ? DW_LD(st + c0) : zero;
    for (int64_t ox = 0; ox < g->ow; ox++) {
      if (ox == lo && hi - lo >= 4) {
        for (; ox + 4 <= hi; ox += 4) {
          dw_v16 a0 = s, a1 = s, a2 = s, a3 = s;
          const float *base[3];
          for (int i = 0; i < 3; i++)
            base[i] = src[i] ? src[i] + (ox * sw - g->pl) * c + c0 : NULL;
#pragma GCC unroll 3
          for (int i = 0; i < 3; i++) {
            if (!base[i] || !dense) continue;
            /* Stride and dilation 1: the four pixels' 12 taps read 6 input pixels. */
            dw_v16 x0 = DW_LD(base[i]), x1 = DW_LD(base[i] + c), x2 = DW_LD(base[i] + 2 * c);
            dw_v16 x3 = DW_LD(base[i] + 3 * c), x4 = DW_LD(base[i] + 4 * c);
            dw_v16 x5 = DW_LD(base[i] + 5 * c);
            dw_v16 k0 = fr[i * 3], k1 = fr[i * 3 + 1], k2 = fr[i * 3 + 2];
            a0 += x0 * k0;
            a1 += x1 * k0;
            a2 += x2 * k0;
            a3 += x3 * k0;
            a0 += x1 * k1;
            a1 += x2 * k1;
            a2 += x3 * k1;
            a3 += x4 * k1;
            a0 += x2 * k2;
            a1 += x3 * k2;
            a2 += x4 * k2;
            a3 += x5 * k2;
          }
#pragma GCC unroll 3
          for (int i = 0; i < 3; i++) {
            if (!base[i] || dense) continue;
#pragma GCC unroll 3
            for (int q = 0; q < 3; q++) {
              const float *x = base[i] + q * dw * c;
              a0 += DW_LD(x) * fr[i * 3 + q];
              a1 += DW_LD(x + sw * c) * fr[i * 3 + q];
              a2 += DW_LD(x + 2 * sw * c) * fr[i * 3 + q];
              a3 += DW_LD(x + 3 * sw * c) * fr[i * 3 + q];
            }
          }
          DW_FINISH(a0, clamp);
          DW_FINISH(a1, clamp);
          DW_FINISH(a2, clamp);
          DW_FINISH(a3, clamp);
          DW_ST(out + ox * m + c0, a0);
          DW_ST(out + (ox + 1) * m + c0, a1);
          DW_ST(out + (ox + 2) * m + c0, a2);
          DW_ST(out + (ox + 3) * m + c0, a3);
        }
        if (ox >= g->ow) break;
      }
      dw_v16 a = s;
      DW_TAPS({ a += DW_LD(xs) * fr[t]; })
      DW_FINISH(a, clamp);
      DW_ST(out + ox * m + c0, a);
    }
  }
  for (; c0 < c; c0++)
    for (int64_t ox = 0; ox < g->ow; ox++) {
      float a = st ? st[c0] : 0.0f;
      DW_TAPS({ a += xs[0] * f[t * c + c0]; })
      out[ox * m + c0] = dw_finish1(a, clamp);
    }
}

/* The same for multiplier 2 (dw_row_t's split filter): 16 input channels at a time, the 18
 * taps of their two outputs in registers, each input vector loaded once for two multiply-adds. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void depthwise_row_3x3_x2(const dw_row_t *r, const float *const *src, float *out) {
  const weft_cpu_conv2d_t *g = r->g;
  const float *f = r->f, *st = r->start;
  int64_t c = r->c, m = 2 * c, sw = g->sw, dw = g->dw;
  int clamp = r->clamp;
  const dw_v16 zero = {0};
  const dw_v16i lo16 = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23};
  const dw_v16i hi16 = {8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  int64_t lo, hi;
  dw_inner_pixels(g, &lo, &hi);
/* Finishes the sums (u, v) of output pixel p and stores them as channels 2 c0 ... */
#define DW_STORE2(p, u, v)                                                                     \
  do {                                                                                         \
    DW_FINISH(u, clamp);                                                                       \
    DW_FINISH(v, clamp);                                                                       \
    DW_ST(out + (p) * m + 2 * c0, __builtin_shuffle(u, v, lo16));                              \
    DW_ST(out + (p) * m + 2 * c0 + 16, __builtin_shuffle(u, v, hi16));                         \
  } while (0)
  int64_t c0 = 0;
  for (; c0 + 16 <= c; c0 += 16) {
    dw_v16 f0[9], f1[9];
    for (int t = 0; t < 9; t++) {
      f0[t] = DW_LD(f + t * 2 * c + c0);
      f1[t] = DW_LD(f + t * 2 * c + c + c0);
    }
    dw_v16 s0 = st ? DW_LD(st + c0) : zero, s1 = st ? DW_LD(st + c + c0) : zero;
    for (int64_t ox = 0; ox < g->ow; ox++) {
      if (ox == lo && hi - lo >= 4) {
        for (; ox + 4 <= hi; ox += 4) {
          dw_v16 a0 = s0, b0 = s1, a1 = s0, b1 = s1, a2 = s0, b2 = s1, a3 = s0, b3 = s1;
          const float *base[3];
          for (int i = 0; i < 3; i++)
            base[i] = src[i] ? src[i] + (ox * sw - g->pl) * c + c0 : NULL;
#pragma GCC unroll 3
          for (int i = 0; i < 3; i++) {
            if (!base[i]) continue;
#pragma GCC unroll 3
            for (int q = 0; q < 3; q++) {
              const float *x = base[i] + q * dw * c;
              dw_v16 x0 = DW_LD(x), x1 = DW_LD(x + sw * c);
              a0 += x0 * f0[i * 3 + q];
              b0 += x0 * f1[i * 3 + q];
              a1 += x1 * f0[i * 3 + q];
              b1 += x1 * f1[i * 3 + q];
              dw_v16 x2 = DW_LD(x + 2 * sw * c), x3 = DW_LD(x + 3 * sw * c);
              a2 += x2 * f0[i * 3 + q];
              b2 += x2 * f1[i * 3 + q];
              a3 += x3 * f0[i * 3 + q];
              b3 += x3 * f1[i * 3 + q];
            }
          }
          DW_STORE2(ox, a0, b0);
          DW_STORE2(ox + 1, a1, b1);
          DW_STORE2(ox + 2, a2, b2);
          DW_STORE2(ox + 3, a3, b3);
        }
        if (ox >= g->ow) break;
      }
      dw_v16 a = s0, b = s1;
      DW_TAPS({
        dw_v16 x0 = DW_LD(xs);
        a += x0 * f0[t];
        b += x0 * f1[t];
      })
      DW_STORE2(ox, a, b);
    }
  }
#undef DW_STORE2
  for (; c0 < c; c0++)
    for (int64_t ox = 0; ox < g->ow; ox++) {
      float a0 = st ? st[c0] : 0.0f, a1 = st ? st[c + c0] : 0.0f;
      DW_TAPS({
        a0 += xs[0] * f[t * 2 * c + c0];
        a1 += xs[0] * f[t * 2 * c + c + c0];
      })
      out[ox * m + 2 * c0] = dw_finish1(a0, clamp);
      out[ox * m + 2 * c0 + 1] = dw_finish1(a1, clamp);
    }
}

static void depthwise_rows(void *arg, int64_t b, int64_t e) {
  const depthwise_job_t *j = arg;
  const weft_cpu_conv2d_t *g = j->g;
  int64_t c = g->c, m = g->m, mult = m / c;
  /* Multipliers above 2 widen each input row to m channels (input channel ci repeated mult
   * times) once for the output rows that read it, which makes the loop multiplier 1's: kh rows,
   * slot iy % kh, tagged with the row they hold. Without the memory, the loop runs unwidened
   * (slower). */
  bool widen = mult > 2;
  float *wide = NULL;
  int64_t *tags = NULL;
  if (widen) {
    wide = malloc(sizeof(float) * (size_t)(g->kh * g->w * m));
    tags = malloc(sizeof(int64_t) * (size_t)g->kh);
    if (!wide || !tags) {
      free(wide);
      free(tags);
      wide = NULL;
      tags = NULL;
    }
    for (int64_t i = 0; tags && i < g->kh; i++) tags[i] = -1;
  }
  /* All taps at once (depthwise_row_taps) when the rows can be gathered first: widened rows
   * only without dilation, where the kh rows' slots iy % kh differ. */
  bool gather = g->kh <= DEPTHWISE_MAX_KH && (!widen || (wide && g->dh == 1));
  dw_row_t rt = j->row;
  if (widen) rt.c = m;
  for (int64_t r = b; r < e; r++) {
    int64_t n = r / g->oh, oy = r % g->oh;
    const float *img = j->x + n * g->h * g->w * c;
    float *out = j->y + r * g->ow * m;
    bool biased = false;
    if (!gather) {
      biased = weft__cpu_epilogue_prefill(j->ep, out, g->ow, m, m, 0);
      if (!biased) memset(out, 0, sizeof(float) * (size_t)(g->ow * m));
    }
    const float *srcs[DEPTHWISE_MAX_KH];
    for (int64_t i = 0; i < g->kh; i++) {
      int64_t iy = oy * g->sh + i * g->dh - g->pt;
      if (gather) srcs[i] = NULL;
      if (iy < 0 || iy >= g->h) continue;
      const float *row = img + iy * g->w * c;
      if (gather && !widen) {
        srcs[i] = row;
      } else if (mult == 1) {
        depthwise_add_row(g, row, c, j->f, i, out);
      } else if (wide) {
        int64_t slot = iy % g->kh, tag = n * g->h + iy;
        float *w = wide + slot * g->w * m;
        if (tags[slot] != tag) {
          for (int64_t p = 0; p < g->w * c; p++)
            for (int64_t u = 0; u < mult; u++) w[p * mult + u] = row[p];
          tags[slot] = tag;
        }
        if (gather)
          srcs[i] = w;
        else
          depthwise_add_row(g, w, m, j->f, i, out);
      } else {
        for (int64_t ox = 0; ox < g->ow; ox++)
          for (int64_t q = 0; q < g->kw; q++) {
            int64_t ix = ox * g->sw + q * g->dw - g->pl;
            if (ix < 0 || ix >= g->w) continue;
            const float *fk = j->f + (i * g->kw + q) * m;
            for (int64_t o = 0; o < m; o++) out[ox * m + o] += row[ix * c + o / mult] * fk[o];
          }
      }
    }
    if (gather) {
      if (g->kh == 3 && g->kw == 3 && rt.two)
        depthwise_row_3x3_x2(&rt, srcs, out);
      else if (g->kh == 3 && g->kw == 3)
        depthwise_row_3x3(&rt, srcs, out);
      else
        depthwise_row_taps(&rt, srcs, out);
      biased = rt.start != NULL;
    }
    /* What the store did not finish: a batch norm's scale, another activation. */
    if (j->ep && (j->ep->scale || j->ep->act) && !(gather && rt.clamp))
      weft__cpu_epilogue_apply(j->ep, out, g->ow, m, m, 0, biased);
  }
  free(wide);
  free(tags);
}

weft_status_t *weft__cpu_depthwise_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                       const float *x, const float *f, float *y) {
  return weft__cpu_depthwise_f32_ep(ctx, g, x, f, y, NULL);
}

weft_status_t *weft__cpu_depthwise_f32_ep(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                          const float *x, const float *f, float *y,
                                          const weft_cpu_epilogue_t *ep) {
  int64_t rows = g->n * g->oh;
  if (rows == 0 || g->ow == 0 || g->m == 0) return NULL;
  int64_t c = g->c, mult = g->m / g->c, taps = g->kh * g->kw;
  /* The register loop starts from the bias (a plain one: a batch norm's scale comes first) and
   * applies Relu or Relu6 itself. */
  bool plain_bias = ep && ep->bias && !ep->scale;
  dw_row_t row = {g, f, plain_bias ? ep->bias : NULL, c, mult == 2,
                  ep && !ep->scale ? ep->clamp : DW_CLAMP_NONE};
  if (mult == 2) {
    /* Multiplier 2's filter and bias split by q (dw_row_t), so that its loop reads each input
     * vector once for both output channels of every input channel. */
    float *split = NULL;
    WEFT_RETURN_IF_ERROR(
        H->kernel_scratch(ctx, sizeof(float) * (size_t)((taps + 1) * g->m), (void **)&split));
    for (int64_t t = 0; t < taps; t++)
      for (int64_t ci = 0; ci < c; ci++)
        for (int64_t q = 0; q < 2; q++) split[(t * 2 + q) * c + ci] = f[t * g->m + ci * 2 + q];
    row.f = split;
    if (plain_bias) {
      float *sb = split + taps * g->m;
      for (int64_t ci = 0; ci < c; ci++)
        for (int64_t q = 0; q < 2; q++) sb[q * c + ci] = ep->bias[ci * 2 + q];
      row.start = sb;
    }
  }
  depthwise_job_t j = {g, x, f, y, ep, row};
  int64_t macs = g->ow * g->m * g->kh * g->kw;
  if (rows * macs < DEPTHWISE_PARALLEL_MIN_MACS)
    depthwise_rows(&j, 0, rows);
  else
    weft__cpu_parallel(ctx, rows, macs + 1, depthwise_rows, &j);
  return NULL;
}
