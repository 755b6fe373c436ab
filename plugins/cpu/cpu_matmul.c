/* cpu_matmul.c: MatMul and BatchMatMulV2 (BatchMatMul too). float32 and float64 go through
 * OpenBLAS (cblas_sgemm / cblas_dgemm, or GEMV for one row of output) on one thread per block
 * of C, the blocks shared out over the intra-op pool (weft__cpu_blas_gemm); a float batch of
 * GEMMs is shared out over the pool a GEMM at a time when that keeps every thread busy; float16
 * and bfloat16 are widened to float32 around sgemm; integers use a row-parallel loop with
 * wrapping arithmetic. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* C[m,n] = op(A) op(B), with A stored [m,k] (or [k,m] when ta) with row stride lda and B
 * stored [k,n] (or [n,k] when tb) with row stride ldb. */
typedef struct gemm_args {
  weft_dtype_t dtype;
  bool ta, tb;
  int64_t m, n, k;
  const void *a;
  int64_t lda;
  const void *b;
  int64_t ldb;
  void *c;
} gemm_args_t;

typedef struct int_gemm_job {
  const gemm_args_t *g;
  const void *b_rows; /* B as [k, n] row-major (transposed copy when tb) */
} int_gemm_job_t;

#define INT_GEMM_CASE(DT, T, U)                                                        \
  case DT: {                                                                           \
    const T *a = (const T *)g->a;                                                      \
    const T *bm = (const T *)j->b_rows;                                                \
    T *c = (T *)g->c;                                                                  \
    for (int64_t i = b; i < e; i++) {                                                  \
      U *restrict row = (U *)(void *)(c + i * g->n);                                   \
      for (int64_t q = 0; q < g->n; q++) row[q] = 0;                                   \
      for (int64_t p = 0; p < g->k; p++) {                                             \
        const U aip = (U)(g->ta ? a[p * g->lda + i] : a[i * g->lda + p]);              \
        const T *restrict br = bm + p * g->n;                                          \
        for (int64_t q = 0; q < g->n; q++) row[q] += aip * (U)br[q];                   \
      }                                                                                \
    }                                                                                  \
    break;                                                                             \
  }

static void int_gemm_range(void *arg, int64_t b, int64_t e) {
  const int_gemm_job_t *j = arg;
  const gemm_args_t *g = j->g;
  switch (g->dtype) {
    /* The output row is accumulated through the same-width unsigned type, so overflow wraps
     * (TensorFlow's behaviour) instead of being undefined. */
    INT_GEMM_CASE(WEFT_DT_INT32, int32_t, uint32_t)
    INT_GEMM_CASE(WEFT_DT_INT64, int64_t, uint64_t)
    INT_GEMM_CASE(WEFT_DT_UINT32, uint32_t, uint32_t)
    INT_GEMM_CASE(WEFT_DT_UINT64, uint64_t, uint64_t)
    default: break;
  }
}

/* Transposes a [rows, cols] matrix with row stride ld into dst [cols, rows]. */
static void transpose_into(void *dst, const void *src, int64_t rows, int64_t cols, int64_t ld,
                           size_t es) {
  const char *s = src;
  char *d = dst;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      memcpy(d + (size_t)(c * rows + r) * es, s + (size_t)(r * ld + c) * es, es);
}

/* ---------------------------------------------------------------------------------------------
 * Float GEMM through OpenBLAS on one thread per block, the blocks shared out over the intra-op
 * pool.
 *
 * OpenBLAS's own threads spin for a while after every call, waiting for the next (about 0.13 s
 * of sched_yield), on the cores the intra-op pool, the executor and other processes need: with
 * both in use at once a 2-core machine runs three or four busy threads. (The local MLP of
 * weft-train, batch 4096, GEMMs of 4096x32x32, trained at 1.35 million examples/s with
 * OpenBLAS's threads and 2.4 million with one.) So OpenBLAS always runs on the calling thread,
 * and a GEMM big enough to gain is cut into one block of C per pool thread, rows or columns
 * (whichever dimension is longer), each block one single-thread OpenBLAS call. A block packs
 * the whole of the other operand itself, which OpenBLAS's threads would share: a cost of one
 * part in (rows of the block) of its multiply-adds. OPENBLAS_NUM_THREADS, when set (as
 * weft_threads_set_limit does), caps the blocks; set above the pool's size, it gives large
 * GEMMs OpenBLAS's own threads instead. docs/performance.md, "Issue 22: GEMM threads", has the
 * measurements. */

/* From this many multiply-adds (256x256x256) a GEMM is given OpenBLAS's own threads when asked
 * for: below, on the shared 2-core machine, the hand-off and the wait for a second thread that
 * is seldom free cost more than it saves (docs/performance.md, "Convolutions and small GEMMs"). */
#define GEMM_OPENBLAS_THREADS_MIN_MACS ((int64_t)1 << 24)
/* From this many (4 M: 64x256x256, 4096x32x32) a GEMM is split over the pool, into blocks of at
 * least half as many. The pool's threads wait for the next parallel_for a while after each
 * (threadpool.c), so a GEMM of a step that runs them back to back starts on both threads at
 * once: two threads, loops of steps of one MatMul at FIFO priority, p50 one block against two:
 * 128x256x256 145 us against 95, 32x784x256 112 against 87, 64x784x256 224 against 139,
 * 4096x32x32 82 against 65; steps through the Python binding back to back, 64x256x256 75
 * against 39 and 4096x32x32 77 against 59. A GEMM after an idle pool pays the wake-up: with
 * 1 ms between steps 128x256x256 158 against 142 and 32x784x256 119 against 114, but the 4 M
 * shapes lose a little, 64x256x256 75 against 81 and 4096x32x32 78 against 82. Below 4 M the
 * split was not measured to pay. Splitting the 4 M shapes keeps the helper waiting through a
 * model's later layers, so the next step's first GEMM finds it (fc_layers at batch 64, two
 * threads: 0.20-0.21 ms a step to 0.175-0.197; docs/performance.md, "Issue 22: two-thread
 * GEMMs" and the session-20 section). */
#define GEMM_SPLIT_MIN_MACS ((int64_t)4 << 20)
#define GEMM_SPLIT_MIN_BLOCK_MACS (GEMM_SPLIT_MIN_MACS / 2)
/* Blocks are multiples of this many rows or columns (one AVX-512 vector of floats). */
#define GEMM_SPLIT_ALIGN 16

static void blas_gemm_call(bool dbl, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                           const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                           int64_t ldc) {
  enum CBLAS_TRANSPOSE tra = ta ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE trb = tb ? CblasTrans : CblasNoTrans;
  if (m == 1) {
    /* One row of C (a batch-1 layer) is op(B)^T a: OpenBLAS's GEMV streams B once, where its
     * GEMM packs it first (1x784x512: 33-41 us against 46-52, docs/performance.md). */
    int inc = ta ? (int)lda : 1;
    /* GEMV scales y by beta = 0 first, which some OpenBLAS kernels do as a multiply: a NaN left
     * in a recycled output buffer would survive it. */
    memset(c, 0, (size_t)n * (dbl ? sizeof(double) : sizeof(float)));
    enum CBLAS_TRANSPOSE trv = tb ? CblasNoTrans : CblasTrans;
    int rows = tb ? (int)n : (int)k, cols = tb ? (int)k : (int)n;
    if (dbl)
      weft__cpu_blas.dgemv(CblasRowMajor, trv, rows, cols, 1.0, b, (int)ldb, a, inc, 0.0, c, 1);
    else
      weft__cpu_blas.sgemv(CblasRowMajor, trv, rows, cols, 1.0f, b, (int)ldb, a, inc, 0.0f, c, 1);
    return;
  }
  if (dbl)
    weft__cpu_blas.dgemm(CblasRowMajor, tra, trb, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b,
                         (int)ldb, 0.0, c, (int)ldc);
  else
    weft__cpu_blas.sgemm(CblasRowMajor, tra, trb, (int)m, (int)n, (int)k, 1.0f, a, (int)lda, b,
                         (int)ldb, 0.0f, c, (int)ldc);
}

void weft__cpu_sgemm_1t(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  weft__cpu_blas.sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                       tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)lda,
                       b, (int)ldb, beta, c, (int)ldc);
}

/* One GEMM cut into `blocks` blocks of `block` rows (by_rows) or columns of C. */
typedef struct split_gemm {
  bool dbl, ta, tb, by_rows;
  int64_t m, n, k, lda, ldb, ldc, block;
  const char *a, *b;
  char *c;
  size_t es;
} split_gemm_t;

static void split_range(void *arg, int64_t begin, int64_t end) {
  const split_gemm_t *s = arg;
  int64_t dim = s->by_rows ? s->m : s->n;
  for (int64_t i = begin; i < end; i++) {
    int64_t p0 = i * s->block, p1 = p0 + s->block < dim ? p0 + s->block : dim;
    if (p0 >= p1) continue;
    if (s->by_rows) {
      /* Rows p0.. of op(A): row p0 of A, or column p0 of A stored transposed. */
      int64_t a_off = s->ta ? p0 : p0 * s->lda;
      blas_gemm_call(s->dbl, s->ta, s->tb, p1 - p0, s->n, s->k, s->a + (size_t)a_off * s->es,
                     s->lda, s->b, s->ldb, s->c + (size_t)(p0 * s->ldc) * s->es, s->ldc);
    } else {
      int64_t b_off = s->tb ? p0 * s->ldb : p0;
      blas_gemm_call(s->dbl, s->ta, s->tb, s->m, p1 - p0, s->k, s->a, s->lda,
                     s->b + (size_t)b_off * s->es, s->ldb, s->c + (size_t)p0 * s->es, s->ldc);
    }
  }
}

/* The blocks a GEMM is cut into for `threads` threads: 1 below GEMM_SPLIT_MIN_MACS, else one
 * per thread, as many as keep GEMM_SPLIT_MIN_BLOCK_MACS in each and each at least
 * GEMM_SPLIT_ALIGN long. */
int64_t weft__cpu_gemm_split_plan(int threads, int64_t m, int64_t n, int64_t k, bool *by_rows,
                                  int64_t *block) {
  *by_rows = m >= n;
  int64_t dim = *by_rows ? m : n;
  *block = dim;
  int64_t macs = m * n * k;
  if (threads <= 1 || macs < GEMM_SPLIT_MIN_MACS) return 1;
  int64_t blocks = dim / GEMM_SPLIT_ALIGN < threads ? dim / GEMM_SPLIT_ALIGN : threads;
  if (blocks > macs / GEMM_SPLIT_MIN_BLOCK_MACS) blocks = macs / GEMM_SPLIT_MIN_BLOCK_MACS;
  if (blocks <= 1) return 1;
  int64_t per = (dim + blocks - 1) / blocks;
  *block = (per + GEMM_SPLIT_ALIGN - 1) / GEMM_SPLIT_ALIGN * GEMM_SPLIT_ALIGN;
  return (dim + *block - 1) / *block;
}

void weft__cpu_blas_gemm(weft_kernel_ctx_t *ctx, bool dbl, bool ta, bool tb, int64_t m,
                         int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                         int64_t ldb, void *c, int64_t ldc) {
  int pool = H->kernel_num_threads(ctx), asked = weft__cpu_blas_threads_asked();
  if (asked > pool) {
    /* More threads asked for than the pool has (a task given more than its share of the host,
     * docs/distributed.md): OpenBLAS's own. */
    weft__cpu_blas.set_num_threads(m * n * k >= GEMM_OPENBLAS_THREADS_MIN_MACS ? asked : 1);
    blas_gemm_call(dbl, ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
    return;
  }
  weft__cpu_blas.set_num_threads(1);
  split_gemm_t s = {.dbl = dbl, .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                    .ldb = ldb, .ldc = ldc, .a = a, .b = b, .c = c,
                    .es = dbl ? sizeof(double) : sizeof(float)};
  int64_t blocks = weft__cpu_gemm_split_plan(asked ? asked : pool, m, n, k, &s.by_rows, &s.block);
  if (blocks == 1)
    split_range(&s, 0, 1);
  else
    H->parallel_for(ctx, blocks, (int64_t)1 << 30, split_range, &s);
}

static weft_status_t *gemm(weft_kernel_ctx_t *ctx, const gemm_args_t *g) {
  if (g->m == 0 || g->n == 0) return NULL;
  size_t es = weft__cpu_dtype_size(g->dtype);
  if (g->k == 0) {
    memset(g->c, 0, (size_t)(g->m * g->n) * es);
    return NULL;
  }
  /* BLAS takes int dimensions. */
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX || g->lda > INT32_MAX ||
      g->ldb > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                           "MatMul dimensions [%lld,%lld]x[%lld,%lld] exceed the BLAS int range",
                           (long long)g->m, (long long)g->k, (long long)g->k, (long long)g->n);
  switch (g->dtype) {
    case WEFT_DT_FLOAT:
    case WEFT_DT_DOUBLE:
      weft__cpu_blas_gemm(ctx, g->dtype == WEFT_DT_DOUBLE, g->ta, g->tb, g->m, g->n, g->k, g->a,
                          g->lda, g->b, g->ldb, g->c, g->n);
      return NULL;
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16: {
      bool half = g->dtype == WEFT_DT_HALF;
      int64_t arows = g->ta ? g->k : g->m, brows = g->tb ? g->n : g->k;
      int64_t acols = g->ta ? g->m : g->k, bcols = g->tb ? g->k : g->n;
      float *fa = NULL, *fb = NULL, *fc = NULL;
      WEFT_RETURN_IF_ERROR(
          H->kernel_scratch(ctx, sizeof(float) * (size_t)(arows * acols), (void **)&fa));
      WEFT_RETURN_IF_ERROR(
          H->kernel_scratch(ctx, sizeof(float) * (size_t)(brows * bcols), (void **)&fb));
      WEFT_RETURN_IF_ERROR(
          H->kernel_scratch(ctx, sizeof(float) * (size_t)(g->m * g->n), (void **)&fc));
      const uint16_t *a = g->a, *b = g->b;
      for (int64_t r = 0; r < arows; r++)
        for (int64_t c = 0; c < acols; c++)
          fa[r * acols + c] = half ? weft__cpu_half_to_float(a[r * g->lda + c])
                                   : weft__cpu_bf16_to_float(a[r * g->lda + c]);
      for (int64_t r = 0; r < brows; r++)
        for (int64_t c = 0; c < bcols; c++)
          fb[r * bcols + c] = half ? weft__cpu_half_to_float(b[r * g->ldb + c])
                                   : weft__cpu_bf16_to_float(b[r * g->ldb + c]);
      weft__cpu_blas_gemm(ctx, false, g->ta, g->tb, g->m, g->n, g->k, fa, acols, fb, bcols, fc,
                          g->n);
      uint16_t *c = g->c;
      for (int64_t i = 0; i < g->m * g->n; i++)
        c[i] = half ? weft__cpu_float_to_half(fc[i]) : weft__cpu_float_to_bf16(fc[i]);
      return NULL;
    }
    case WEFT_DT_INT32:
    case WEFT_DT_INT64:
    case WEFT_DT_UINT32:
    case WEFT_DT_UINT64: {
      int_gemm_job_t j = {g, g->b};
      if (g->tb || g->ldb != g->n) {
        void *bt = NULL;
        WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)(g->k * g->n) * es, &bt));
        if (g->tb) {
          transpose_into(bt, g->b, g->n, g->k, g->ldb, es);
        } else {
          for (int64_t p = 0; p < g->k; p++)
            memcpy((char *)bt + (size_t)(p * g->n) * es,
                   (const char *)g->b + (size_t)(p * g->ldb) * es, (size_t)g->n * es);
        }
        j.b_rows = bt;
      }
      weft__cpu_parallel(ctx, g->m, g->n * g->k * 2 + 1, int_gemm_range, &j);
      return NULL;
    }
    default:
      return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "MatMul has no CPU kernel for %s",
                             weft__cpu_dtype_name(g->dtype));
  }
}

static weft_status_t *k_matmul(weft_kernel_ctx_t *ctx, void *state) {
  weft_pc_matmul_t mm;
  WEFT_RETURN_IF_ERROR(weft_pc_matmul_prepare(ctx, &mm));
  /* A constant B (weights) runs over its packed copy, packed on the first call (cpu_packed.c). */
  if (mm.a.dtype == WEFT_DT_FLOAT && mm.m > 0 && mm.n > 0 && mm.k > 0 &&
      weft__cpu_packed_gemm(ctx, state, 1, mm.ta, mm.tb, mm.m, mm.n, mm.k, mm.a.data,
                            mm.a.dims[1], mm.b.data, mm.b.dims[1], mm.c.data, mm.n, NULL))
    return NULL;
  gemm_args_t g = {mm.a.dtype, mm.ta,        mm.tb,     mm.m,         mm.n,     mm.k,
                   mm.a.data,  mm.a.dims[1], mm.b.data, mm.b.dims[1], mm.c.data};
  return gemm(ctx, &g);
}

/* Float batches shared out over the intra-op pool, one GEMM on one thread at a time: there are
 * at least as many as threads, or each is too small to split itself; and they cannot fail
 * (BLAS's int range is checked here once for all). */
static bool pooled_float_batches(const weft_pc_batch_matmul_t *bm, int threads) {
  weft_dtype_t dt = bm->x.dtype;
  int64_t lda = bm->x.dims[bm->x.rank - 1], ldb = bm->y.dims[bm->y.rank - 1];
  return (dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE) && bm->bc.out_elements > 1 && bm->k > 0 &&
         bm->m <= INT32_MAX && bm->n <= INT32_MAX && bm->k <= INT32_MAX && lda <= INT32_MAX &&
         ldb <= INT32_MAX &&
         (bm->bc.out_elements >= threads || bm->m * bm->n * bm->k < GEMM_SPLIT_MIN_MACS);
}

typedef struct batch_job {
  const weft_pc_batch_matmul_t *bm;
  int64_t x_matrix, y_matrix; /* elements per matrix of x and y */
  int64_t inner, sx, sy;      /* from the broadcast: see k_batch_matmul */
  size_t es;
} batch_job_t;

static void batch_range(void *arg, int64_t begin, int64_t end) {
  const batch_job_t *j = arg;
  const weft_pc_batch_matmul_t *bm = j->bm;
  int64_t xc = bm->x.dims[bm->x.rank - 1], yc = bm->y.dims[bm->y.rank - 1];
  for (int64_t bi = begin; bi < end; bi++) {
    int64_t off[CPU_BCAST_MAX_IN];
    weft__cpu_bcast_row_offsets(&bm->bc, bi / j->inner, off);
    int64_t xo = off[0] + (bi % j->inner) * j->sx, yo = off[1] + (bi % j->inner) * j->sy;
    blas_gemm_call(bm->x.dtype == WEFT_DT_DOUBLE, bm->adj_x, bm->adj_y, bm->m, bm->n, bm->k,
                   (const char *)bm->x.data + (size_t)(xo * j->x_matrix) * j->es, xc,
                   (const char *)bm->y.data + (size_t)(yo * j->y_matrix) * j->es, yc,
                   (char *)bm->z.data + (size_t)(bi * bm->m * bm->n) * j->es, bm->n);
  }
}

/* Contiguous row-major batches (cpu_internal.h): the same choice as BatchMatMul's between
 * sharing whole batches out over the pool and splitting each GEMM. A split_gemm_t describes one
 * batch; batch bi lies bi matrices further on. */
static void packed_batch_range(void *arg, int64_t begin, int64_t end) {
  const split_gemm_t *s = arg;
  for (int64_t bi = begin; bi < end; bi++)
    blas_gemm_call(s->dbl, false, false, s->m, s->n, s->k,
                   s->a + (size_t)(bi * s->m * s->k) * s->es, s->lda,
                   s->b + (size_t)(bi * s->k * s->n) * s->es, s->ldb,
                   s->c + (size_t)(bi * s->m * s->n) * s->es, s->ldc);
}

void weft__cpu_blas_gemm_batches(weft_kernel_ctx_t *ctx, bool dbl, int64_t batches, int64_t m,
                                 int64_t n, int64_t k, const void *a, const void *b, void *c) {
  split_gemm_t s = {.dbl = dbl, .m = m, .n = n, .k = k, .lda = k, .ldb = n, .ldc = n, .a = a,
                    .b = b, .c = c, .es = dbl ? sizeof(double) : sizeof(float)};
  if (batches > 1 &&
      (batches >= H->kernel_num_threads(ctx) || m * n * k < GEMM_SPLIT_MIN_MACS)) {
    weft__cpu_blas.set_num_threads(1);
    weft__cpu_parallel(ctx, batches, 2 * m * n * k + 1, packed_batch_range, &s);
    return;
  }
  for (int64_t bi = 0; bi < batches; bi++)
    weft__cpu_blas_gemm(ctx, dbl, false, false, m, n, k, s.a + (size_t)(bi * m * k) * s.es, k,
                        s.b + (size_t)(bi * k * n) * s.es, n, s.c + (size_t)(bi * m * n) * s.es,
                        n);
}

static weft_status_t *k_batch_matmul(weft_kernel_ctx_t *ctx, void *state) {
  bool v2 = state != NULL; /* BatchMatMul (v1) needs equal batch dims; V2 broadcasts them */
  weft_pc_batch_matmul_t bm;
  WEFT_RETURN_IF_ERROR(weft_pc_batch_matmul_prepare(ctx, !v2, &bm));
  const weft_tensor_view_t x = bm.x, y = bm.y, z = bm.z;
  const weft_cpu_bcast_t *bc = &bm.bc;
  if (z.num_elements == 0) return NULL;
  int64_t xr = x.dims[x.rank - 2], xc = x.dims[x.rank - 1];
  int64_t yr = y.dims[y.rank - 2], yc = y.dims[y.rank - 1];
  int64_t m = bm.m, n = bm.n;
  size_t es = weft__cpu_dtype_size(x.dtype);
  int64_t inner = weft__cpu_bcast_inner(bc);
  int64_t sx = bc->strides[0][bc->rank - 1], sy = bc->strides[1][bc->rank - 1];
  if (pooled_float_batches(&bm, H->kernel_num_threads(ctx))) {
    weft__cpu_blas.set_num_threads(1);
    batch_job_t job = {&bm, xr * xc, yr * yc, inner, sx, sy, es};
    weft__cpu_parallel(ctx, bc->out_elements, 2 * m * n * bm.k + 1, batch_range, &job);
    return NULL;
  }
  for (int64_t bi = 0; bi < bc->out_elements; bi++) {
    int64_t off[CPU_BCAST_MAX_IN];
    weft__cpu_bcast_row_offsets(bc, bi / inner, off);
    int64_t xo = off[0] + (bi % inner) * sx, yo = off[1] + (bi % inner) * sy;
    gemm_args_t g = {x.dtype,
                     bm.adj_x,
                     bm.adj_y,
                     m,
                     n,
                     bm.k,
                     (const char *)x.data + (size_t)(xo * xr * xc) * es,
                     xc,
                     (const char *)y.data + (size_t)(yo * yr * yc) * es,
                     yc,
                     (char *)z.data + (size_t)(bi * m * n) * es};
    WEFT_RETURN_IF_ERROR(gemm(ctx, &g));
  }
  return NULL;
}

static const weft_dtype_t matmul_types[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16,
    WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT32, WEFT_DT_UINT64,
};
static int v2_marker;

weft_status_t *weft__cpu_register_matmul(const weft_registrar_t *reg) {
  const size_t n = sizeof matmul_types / sizeof matmul_types[0];
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "MatMul", .compute = k_matmul, .type_attr = "T", .dtypes = matmul_types,
       .n_dtypes = n, .create = weft__cpu_packed_create, .destroy = weft__cpu_packed_destroy},
      {.op = "BatchMatMul", .compute = k_batch_matmul, .type_attr = "T", .dtypes = matmul_types,
       .n_dtypes = n},
      {.op = "BatchMatMulV2", .compute = k_batch_matmul, .type_attr = "T", .dtypes = matmul_types,
       .n_dtypes = n, .user_data = &v2_marker},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
