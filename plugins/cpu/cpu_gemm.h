/* cpu_gemm.h: Weft's own float32 GEMM for a right-hand operand packed once, for weights that
 * do not change while a session runs (a Const's value): ONNX Runtime packs such weights at
 * session creation, while OpenBLAS 0.3.21 packs its operands again on every call and has no
 * entry point that takes them packed (docs/performance.md, "Constant weights packed once").
 *
 * B [k, n] is stored as ceil(n / NR) panels, each [k][NR] floats (columns past n are zero), so
 * the micro-kernel reads one contiguous stream of B; A is read where it is. One micro-kernel
 * ("tile") per instruction set level (cpu_gemm_{baseline,avx2,avx512}.c, each compiled with its
 * level's -m flags); cpu_gemm.c holds the packing and the blocking. Plain C with no SDK types, so
 * that tests/test_packed_gemm.c can call every level directly. */
#ifndef WEFT_CPU_GEMM_H
#define WEFT_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_vmath.h"

#define WEFT_GEMM_MR 8   /* rows of C per micro-kernel call */
#define WEFT_GEMM_NR 32  /* columns of a panel of packed B: two AVX-512 vectors */
#define WEFT_GEMM_KC 1024 /* most depth per pass (see cpu_gemm.c) */
#define WEFT_GEMM_MC 128 /* rows of A every panel runs over in turn (MC x KC in L2) */
#define WEFT_GEMM_NC 512 /* columns whose slice of a pass (KC x NC) stays in L2 */

/* A tile's flags: start from C itself (a later pass over the depth); then clamp the finished
 * sums before their store as Relu (max(x, 0)) or Relu6 (min(max(x, 0), 6)) do, NaN kept: the
 * contraction's activation in registers instead of a pass over the tile after it. */
#define WEFT_GEMM_ACCUMULATE 1
#define WEFT_GEMM_RELU 2
#define WEFT_GEMM_RELU6 4

/* C[rows, cols] (row stride ldc, rows <= MR, cols <= NR) = init + (sum over p < kc of
 * ap[p * ks + i * rs] * bp[p * NR + j]) (A stored [m, k]: rs = lda, ks = 1; [k, m]: rs = 1); init
 * is C itself when flags has WEFT_GEMM_ACCUMULATE, else bias[j] when bias is not NULL, else 0;
 * clamped as flags say. bp is 64-byte aligned. */
typedef void (*weft_cpu_gemm_tile_fn)(int64_t kc, const float *ap, int64_t rs, int64_t ks,
                                      const float *bp, float *c, int64_t ldc, int rows, int cols,
                                      const float *bias, int flags);
void weft__cpu_gemm_tile_baseline(int64_t kc, const float *ap, int64_t rs, int64_t ks,
                                  const float *bp, float *c, int64_t ldc, int rows, int cols,
                                  const float *bias, int flags);
void weft__cpu_gemm_tile_avx2(int64_t kc, const float *ap, int64_t rs, int64_t ks, const float *bp,
                              float *c, int64_t ldc, int rows, int cols, const float *bias,
                              int flags);
void weft__cpu_gemm_tile_avx512(int64_t kc, const float *ap, int64_t rs, int64_t ks,
                                const float *bp, float *c, int64_t ldc, int rows, int cols,
                                const float *bias, int flags);
/* Clamps the tile c[rows, cols] as flags say (the plain C form, for the AVX2 and baseline tiles
 * and to check them). */
void weft__cpu_gemm_clamp(float *c, int64_t ldc, int rows, int cols, int flags);
/* The level whose tile the plugin's packed paths run (WEFT_CPU_ISA, read once; cpu_packed.c). */
weft_cpu_isa_t weft__cpu_packed_isa(void);
/* The tile of `isa`, which must be supported (weft__cpu_isa_supported). */
weft_cpu_gemm_tile_fn weft__cpu_gemm_tile_for(weft_cpu_isa_t isa);

/* Floats in B [k, n] packed (a multiple of NR per row of depth). */
size_t weft__cpu_gemm_packed_floats(int64_t k, int64_t n);
/* Packs op(B) [k, n] (B stored [k, n], or [n, k] when tb, row stride ldb) into dst, which holds
 * weft__cpu_gemm_packed_floats(k, n) floats, 64-byte aligned. */
void weft__cpu_gemm_pack_b(const float *b, int64_t ldb, bool tb, int64_t k, int64_t n, float *dst);

/* Called on each finished tile of C (after its last pass over the depth), while it is in L1:
 * the contraction's epilogue (scale, activation); c points at the tile's first element. */
typedef void (*weft_cpu_gemm_finish_fn)(void *arg, float *c, int64_t rows, int64_t cols,
                                        int64_t ldc, int64_t col0);

typedef struct weft_cpu_gemm_job {
  int64_t m, n, k;
  const float *a; /* A stored [m, k], or [k, m] when ta, row stride lda */
  int64_t lda;
  bool ta;
  const float *bp; /* op(B) [k, n] packed by weft__cpu_gemm_pack_b */
  float *c;        /* [m, n], row stride ldc */
  int64_t ldc;
  const float *bias;              /* NULL, or n values each row of C starts from */
  int clamp;                      /* 0, WEFT_GEMM_RELU or WEFT_GEMM_RELU6: by packed_block's tile */
  weft_cpu_gemm_finish_fn finish; /* NULL, or called on each finished tile */
  void *finish_arg;
  weft_cpu_gemm_tile_fn tile;
} weft_cpu_gemm_job_t;

/* C's rows [r0, r1) and columns [c0, c1) (c0 a multiple of NR), on the calling thread. */
void weft__cpu_gemm_packed_block(const weft_cpu_gemm_job_t *job, int64_t r0, int64_t r1, int64_t c0,
                                 int64_t c1);

/* An implicit GEMM: A is not one matrix but, pass by pass, rows that lie where they are. Pass q
 * multiplies depth [k0[q], k0[q] + kc[q]) of the packed B (kc[q] <= WEFT_GEMM_KC) by rows of
 * kc[q] contiguous floats; a segment is m rows of C (at c, row stride job->ldc) whose row i of
 * pass q is at a[q] + i * rs, or which pass q leaves out (a[q] NULL: zeros there). A
 * convolution's output pixels along one output row are such a segment of its NHWC input, one
 * pass per filter row, with no im2col copy. */
typedef struct weft_cpu_gemm_segment {
  int64_t m;
  float *c;
  const float *const *a; /* npasses pointers */
} weft_cpu_gemm_segment_t;

/* Each segment's C = the sum over its passes (in order) of A_pass B, started from job->bias (or
 * zero); then job->finish once on each segment (all n columns). job->a and job->c are unused;
 * every segment has a pass that is not left out. On the calling thread. */
void weft__cpu_gemm_packed_passes(const weft_cpu_gemm_job_t *job, const int64_t *k0,
                                  const int64_t *kc, int npasses, int64_t rs,
                                  const weft_cpu_gemm_segment_t *seg, int nseg);

#endif /* WEFT_CPU_GEMM_H */
