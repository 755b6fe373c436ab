/* cpu_nchw.c: the float32 batched transpose that lets the channels-first (NCHW) convolutions
 * run on the channels-last paths of cpu_conv_fast.c (a Conv2D or Conv2DBackpropInput with few
 * taps or filters runs directly on NCHW instead: cpu_conv_nchw.c, cpu_conv_transpose_nchw.c;
 * pools run on their one-channel planes, cpu_conv.c). Gathering an NCHW
 * im2col row reads one float per channel from planes h*w floats apart; transposing the whole
 * input once, in cache-sized blocks, and the output back costs two streaming passes and keeps
 * the in-place GEMM, the tiles and the fused epilogue of the NHWC code (docs/performance.md). */
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* A block of TRANSPOSE_BLOCK x TRANSPOSE_BLOCK floats (4 KiB read, 4 KiB written) stays in L1. */
#define TRANSPOSE_BLOCK 32

typedef struct transpose_job {
  const float *src;
  float *dst;
  int64_t rows, cols, strips; /* strips of TRANSPOSE_BLOCK rows per matrix */
} transpose_job_t;

/* A matrix of R (2-4) rows: the corpus's conv nets have 2 or 3 channels, and a loop whose
 * inner trip count is a constant interleaves R planes with shuffles (6x the blocked loop for
 * 2 x 1024 on this machine's AVX-512). */
#define FEW_ROWS(R)                                                                 \
  case R:                                                                           \
    for (int64_t c = 0; c < cols; c++)                                              \
      for (int r = 0; r < R; r++) dst[c * R + r] = src[r * cols + c];               \
    return true;
/* Rows [r0, r1) of a matrix of C (2-4) columns, the output of a convolution with few filters. */
#define FEW_COLS(C)                                                                 \
  case C:                                                                           \
    for (int64_t r = r0; r < r1; r++)                                               \
      for (int c = 0; c < C; c++) dst[c * rows + r] = src[r * C + c];               \
    return true;

/* The narrow cases, rows [r0, r1) of one matrix; false when neither side is narrow. */
static bool transpose_narrow(const float *restrict src, float *restrict dst, int64_t rows,
                             int64_t cols, int64_t r0, int64_t r1) {
  switch (rows) { /* one strip holds the whole matrix */
    FEW_ROWS(2)
    FEW_ROWS(3)
    FEW_ROWS(4)
    default: break;
  }
  switch (cols) {
    FEW_COLS(2)
    FEW_COLS(3)
    FEW_COLS(4)
    default: break;
  }
  return false;
}

/* One task: a strip of rows of one matrix of the batch, across all its columns. */
static void transpose_range(void *arg, int64_t b, int64_t e) {
  const transpose_job_t *j = arg;
  int64_t rows = j->rows, cols = j->cols;
  for (int64_t t = b; t < e; t++) {
    int64_t m = t / j->strips, r0 = t % j->strips * TRANSPOSE_BLOCK;
    int64_t r1 = r0 + TRANSPOSE_BLOCK < rows ? r0 + TRANSPOSE_BLOCK : rows;
    const float *restrict src = j->src + m * rows * cols;
    float *restrict dst = j->dst + m * rows * cols;
    if (cols == 1) {
      memcpy(dst + r0, src + r0, sizeof(float) * (size_t)(r1 - r0));
      continue;
    }
    if (transpose_narrow(src, dst, rows, cols, r0, r1)) continue;
    for (int64_t c0 = 0; c0 < cols; c0 += TRANSPOSE_BLOCK) {
      int64_t c1 = c0 + TRANSPOSE_BLOCK < cols ? c0 + TRANSPOSE_BLOCK : cols;
      if (r1 - r0 == TRANSPOSE_BLOCK && c1 - c0 == TRANSPOSE_BLOCK) {
        /* Full blocks with constant trip counts, which the compiler unrolls and vectorises. */
        for (int64_t c = 0; c < TRANSPOSE_BLOCK; c++)
          for (int64_t r = 0; r < TRANSPOSE_BLOCK; r++)
            dst[(c0 + c) * rows + r0 + r] = src[(r0 + r) * cols + c0 + c];
        continue;
      }
      for (int64_t c = c0; c < c1; c++)
        for (int64_t r = r0; r < r1; r++) dst[c * rows + r] = src[r * cols + c];
    }
  }
}

void weft__cpu_transpose_f32(weft_kernel_ctx_t *ctx, int64_t batch, int64_t rows, int64_t cols,
                             const float *src, float *dst) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return;
  int64_t strips = (rows + TRANSPOSE_BLOCK - 1) / TRANSPOSE_BLOCK;
  transpose_job_t j = {src, dst, rows, cols, strips};
  weft__cpu_parallel(ctx, batch * strips, TRANSPOSE_BLOCK * cols * 2 + 1, transpose_range, &j);
}

weft_status_t *weft__cpu_transpose_f32_scratch(weft_kernel_ctx_t *ctx, int64_t batch,
                                               int64_t rows, int64_t cols, const float *src,
                                               float **out) {
  size_t n = (size_t)batch * (size_t)rows * (size_t)cols;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, n * sizeof(float) + sizeof(float), (void **)out));
  weft__cpu_transpose_f32(ctx, batch, rows, cols, src, *out);
  return NULL;
}
