/* cpu_gemm.c: the packed GEMM's packing and blocking (cpu_gemm.h). The depth is cut into passes
 * of at most WEFT_GEMM_KC (balanced, so a 1100-deep GEMM runs 2 passes of 550 rather than one of
 * 1024 and one of 76). KC = 1024 rather than the textbook 256 (an A tile in L1): A is read in
 * place, row by row, which the hardware prefetchers follow, and each pass reloads and stores C,
 * so fewer passes measured faster (thread CPU time, min of interleaved runs: 1024^3 22.8 ->
 * 19.9 ms, 256x784x512 1.82 -> 1.76, 256x512x512 1.18 -> 1.15, 256^3 the same). Within a
 * pass, MC rows of A are read where they are (rows of A at stride lda, or columns when A is
 * stored transposed) by every panel of B in turn, while each panel's slice of the pass streams
 * through; the panels go in groups of NC columns. Packing
 * A as well measured slower (a copy of A per pass: 3136x576x64 3.67 ms against 2.16 unpacked,
 * thread CPU time). The first pass adds the bias (or nothing) to its sums, later ones add theirs
 * into C, and the last clamps them in registers (job->clamp: Relu, Relu6) or hands each
 * finished tile to the epilogue while it is in L1. The implicit GEMM's passes leave the clamp to
 * job->finish, once per segment. */
#include <string.h>

#include "cpu_gemm.h"

size_t weft__cpu_gemm_packed_floats(int64_t k, int64_t n) {
  int64_t panels = (n + WEFT_GEMM_NR - 1) / WEFT_GEMM_NR;
  return (size_t)(panels * k * WEFT_GEMM_NR);
}

void weft__cpu_gemm_pack_b(const float *b, int64_t ldb, bool tb, int64_t k, int64_t n, float *dst) {
  for (int64_t j0 = 0; j0 < n; j0 += WEFT_GEMM_NR) {
    int64_t w = n - j0 < WEFT_GEMM_NR ? n - j0 : WEFT_GEMM_NR;
    float *panel = dst + j0 * k;
    if (!tb) {
      for (int64_t p = 0; p < k; p++) {
        float *row = panel + p * WEFT_GEMM_NR;
        memcpy(row, b + p * ldb + j0, sizeof(float) * (size_t)w);
        for (int64_t j = w; j < WEFT_GEMM_NR; j++) row[j] = 0.0f;
      }
    } else {
      /* B stored [n, k]: column j of op(B) is row j of B, read along its length. */
      for (int64_t j = 0; j < WEFT_GEMM_NR; j++) {
        const float *src = b + (j0 + j) * ldb;
        for (int64_t p = 0; p < k; p++) panel[p * WEFT_GEMM_NR + j] = j < w ? src[p] : 0.0f;
      }
    }
  }
}

void weft__cpu_gemm_packed_block(const weft_cpu_gemm_job_t *g, int64_t r0, int64_t r1, int64_t c0,
                                 int64_t c1) {
  if (r0 >= r1 || c0 >= c1) return;
  int64_t passes = (g->k + WEFT_GEMM_KC - 1) / WEFT_GEMM_KC;
  int64_t kc_max = (g->k + passes - 1) / passes;
  for (int64_t k0 = 0; k0 < g->k; k0 += kc_max) {
    int64_t kc = g->k - k0 < kc_max ? g->k - k0 : kc_max;
    bool first = k0 == 0, last = k0 + kc == g->k;
    for (int64_t n0 = c0; n0 < c1; n0 += WEFT_GEMM_NC) {
      int64_t n1 = c1 - n0 < WEFT_GEMM_NC ? c1 : n0 + WEFT_GEMM_NC;
      for (int64_t m0 = r0; m0 < r1; m0 += WEFT_GEMM_MC) {
        int64_t mc = r1 - m0 < WEFT_GEMM_MC ? r1 - m0 : WEFT_GEMM_MC;
        for (int64_t j0 = n0; j0 < n1; j0 += WEFT_GEMM_NR) {
          int cols = (int)(n1 - j0 < WEFT_GEMM_NR ? n1 - j0 : WEFT_GEMM_NR);
          const float *bp = g->bp + j0 * g->k + k0 * WEFT_GEMM_NR;
          const float *bias = first && g->bias ? g->bias + j0 : NULL;
          int flags = (first ? 0 : WEFT_GEMM_ACCUMULATE) | (last ? g->clamp : 0);
          for (int64_t t = 0; t < mc; t += WEFT_GEMM_MR) {
            int rows = (int)(mc - t < WEFT_GEMM_MR ? mc - t : WEFT_GEMM_MR);
            float *c = g->c + (m0 + t) * g->ldc + j0;
            if (!g->ta)
              g->tile(kc, g->a + (m0 + t) * g->lda + k0, g->lda, 1, bp, c, g->ldc, rows, cols, bias,
                      flags);
            else
              g->tile(kc, g->a + k0 * g->lda + m0 + t, 1, g->lda, bp, c, g->ldc, rows, cols, bias,
                      flags);
            if (last && g->finish) g->finish(g->finish_arg, c, rows, cols, g->ldc, j0);
          }
        }
      }
    }
  }
}

void weft__cpu_gemm_packed_passes(const weft_cpu_gemm_job_t *g, const int64_t *k0,
                                  const int64_t *kc, int npasses, int64_t rs,
                                  const weft_cpu_gemm_segment_t *seg, int nseg) {
  /* As in packed_block: the segments' C (a tile of a convolution's output) stays in L2 over the
   * passes, and each panel's slice of a pass stays in L1 while every segment runs over it. */
  for (int64_t n0 = 0; n0 < g->n; n0 += WEFT_GEMM_NC) {
    int64_t n1 = g->n - n0 < WEFT_GEMM_NC ? g->n : n0 + WEFT_GEMM_NC;
    for (int q = 0; q < npasses; q++) {
      for (int64_t j0 = n0; j0 < n1; j0 += WEFT_GEMM_NR) {
        int cols = (int)(n1 - j0 < WEFT_GEMM_NR ? n1 - j0 : WEFT_GEMM_NR);
        const float *bp = g->bp + j0 * g->k + k0[q] * WEFT_GEMM_NR;
        for (int s = 0; s < nseg; s++) {
          const float *a = seg[s].a[q];
          if (!a) continue;
          /* The segment's first pass starts its sums; later ones add into them. */
          bool first = true;
          for (int e = 0; e < q && first; e++) first = seg[s].a[e] == NULL;
          const float *bias = first && g->bias ? g->bias + j0 : NULL;
          for (int64_t t = 0; t < seg[s].m; t += WEFT_GEMM_MR) {
            int rows = (int)(seg[s].m - t < WEFT_GEMM_MR ? seg[s].m - t : WEFT_GEMM_MR);
            g->tile(kc[q], a + t * rs, rs, 1, bp, seg[s].c + t * g->ldc + j0, g->ldc, rows, cols,
                    bias, first ? 0 : WEFT_GEMM_ACCUMULATE);
          }
        }
      }
    }
  }
  /* A segment at once: one call of the activation over its contiguous rows. */
  for (int s = 0; g->finish && s < nseg; s++)
    g->finish(g->finish_arg, seg[s].c, seg[s].m, g->n, g->ldc, 0);
}

weft_cpu_gemm_tile_fn weft__cpu_gemm_tile_for(weft_cpu_isa_t isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == WEFT_CPU_ISA_AVX512) return weft__cpu_gemm_tile_avx512;
  if (isa == WEFT_CPU_ISA_AVX2) return weft__cpu_gemm_tile_avx2;
#else
  (void)isa;
#endif
  return weft__cpu_gemm_tile_baseline;
}
