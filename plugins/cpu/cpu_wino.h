/* cpu_wino.h: the input and output transforms of Winograd's F(2x2, 3x3) (cpu_conv_winograd.c),
 * vectorised across channels: 16 at a time at AVX-512. Plain C with no SDK types, like
 * cpu_gemm.h, built in the AVX-512 level library with that level's -m flags. */
#ifndef WEFT_CPU_WINO_H
#define WEFT_CPU_WINO_H

#include <stddef.h>
#include <stdint.h>

/* V = B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], for channels [0, c) (c a multiple
 * of 16): d[i][j] is the row of c floats at p[4 * i + j], and value xi of channel ch goes to
 * v[xi * vstride + ch]. */
void weft__cpu_wino_input_avx512(const float *const *p, int64_t c, float *v, size_t vstride);

/* Y = A^T S A, A^T = [1 1 1 0; 0 1 -1 -1], for filters [0, m) (a multiple of 16): S[xi] of
 * filter oc is s[xi * sstride + oc]; output pixel (0, 0) goes to y0[oc], (0, 1) to y0[m + oc]
 * when cols is 2, (1, 0) and (1, 1) likewise to y1 when rows is 2. */
void weft__cpu_wino_output_avx512(const float *s, size_t sstride, int64_t m, float *y0,
                                  float *y1, int rows, int cols);

/* U = G g G^T, G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], of the (channel, filter) pairs of the
 * filter f [3, 3, c, m] (m a multiple of 16) with channels [ic0, ic1): value xi of pair (ic, oc)
 * goes to u[(xi * c + ic) * m + oc], rows of 16 matrices [c, m]. */
void weft__cpu_wino_filter_avx512(const float *f, int64_t c, int64_t m, int64_t ic0, int64_t ic1,
                                  float *u);

#endif /* WEFT_CPU_WINO_H */
