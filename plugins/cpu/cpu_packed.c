/* cpu_packed.c: float32 GEMMs whose right-hand operand is a constant (a Const's value, the host
 * says: kernel_input_constant, ABI 1.4) run on Weft's own kernel (cpu_gemm.h) over B packed
 * once per node and kept in the node's kernel state for the session, where OpenBLAS would pack
 * it again on every call. Each node's cache holds one packed B, tagged with the constant's id
 * and how it was read (shape, transpose); a call whose B differs repacks. The packed path is
 * taken only where it measured faster than cblas_sgemm (docs/performance.md, "Constant weights
 * packed once"): AVX-512, at least 32 columns, B under 4 MiB (one row of output included: a
 * batch-1 layer streams the packed panels about 8% faster than OpenBLAS's GEMV streams B,
 * "Issue 22: batch-1 layers on packed weights"), and for MatMul also a narrow output of 10 to
 * 16 columns (narrow_wanted); elsewhere the callers keep OpenBLAS. WEFT_CPU_PACKED_GEMM=0 turns
 * it off (to compare), =1 takes it at every level and width (to test the AVX2 and baseline
 * kernels through sessions). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gemm.h"
#include "cpu_internal.h"

#define H weft__cpu_host

/* B of at most this many floats is packed (4 MiB): 1024x1024 ran as fast as cblas_sgemm and
 * 2048x2048 7% slower (its slice of a pass leaves L2), and the copy doubles the weights'
 * memory. */
#define PACKED_MAX_B_FLOATS ((int64_t)1 << 20)

/* A node that sees this many different B values stops caching (and packing): its B is not
 * the same from step to step, so packing would cost more than OpenBLAS's own. */
#define PACKED_MAX_REPACKS 8

/* The narrow path's smallest shape (narrow_wanted). */
#define NARROW_MIN_ROWS 8
#define NARROW_MIN_COLS 10
#define NARROW_MIN_DEPTH 256

struct weft_cpu_packed {
  int refs; /* the cache's and each running call's */
  uint64_t id;
  int64_t k, n, ldb;
  bool tb;
  float *data;
};
typedef struct weft_cpu_packed packed_b_t;

struct weft_cpu_packed_cache {
  pthread_mutex_t lock;
  packed_b_t *current;
  int repacks;
};

static void packed_unref(packed_b_t *p) {
  if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    free(p->data);
    free(p);
  }
}

weft_status_t *weft__cpu_packed_create(const weft_host_t *host, const weft_attrs_t *attrs,
                                      void *user_data, void **state) {
  (void)attrs;
  (void)user_data;
  *state = weft__cpu_packed_cache_new();
  return *state ? NULL
                : host->status_new(WEFT_RESOURCE_EXHAUSTED, "packed weights cache: out of memory");
}

void weft__cpu_packed_destroy(void *state) { weft__cpu_packed_cache_free(state); }

weft_cpu_packed_cache_t *weft__cpu_packed_cache_new(void) {
  weft_cpu_packed_cache_t *c = calloc(1, sizeof *c);
  if (c) pthread_mutex_init(&c->lock, NULL);
  return c;
}

void weft__cpu_packed_cache_free(weft_cpu_packed_cache_t *cache) {
  if (!cache) return;
  packed_unref(cache->current);
  pthread_mutex_destroy(&cache->lock);
  free(cache);
}

/* -1 off, 0 where measured faster, 1 always (WEFT_CPU_PACKED_GEMM). */
static int packed_mode(void) {
  static int mode = 2;
  int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
  if (m == 2) {
    const char *e = getenv("WEFT_CPU_PACKED_GEMM");
    m = !e || !*e ? 0 : strcmp(e, "0") == 0 ? -1 : strcmp(e, "1") == 0 ? 1 : 0;
    __atomic_store_n(&mode, m, __ATOMIC_RELAXED);
  }
  return m;
}

/* The level's micro-kernel, chosen once as the elementwise kernels' level is (WEFT_CPU_ISA). */
weft_cpu_isa_t weft__cpu_packed_isa(void) {
  static int isa = -1;
  int v = __atomic_load_n(&isa, __ATOMIC_RELAXED);
  if (v < 0) {
    char *warning = NULL;
    v = (int)weft__cpu_isa_choose(getenv("WEFT_CPU_ISA"), &warning);
    free(warning); /* the elementwise registration already logged it */
    __atomic_store_n(&isa, v, __ATOMIC_RELAXED);
  }
  return (weft_cpu_isa_t)v;
}

bool weft__cpu_packed_wanted(int64_t m, int64_t n, int64_t k) {
  int mode = packed_mode();
  if (mode < 0 || m < 1 || n < 1 || k < 1) return false;
  if (mode > 0) return true;
  return weft__cpu_packed_isa() == WEFT_CPU_ISA_AVX512 && m >= 1 && n >= WEFT_GEMM_NR &&
         k * n < PACKED_MAX_B_FLOATS;
}

/* A MatMul's narrow output (10 to 16 columns: a classifier's 10) on AVX-512, where the tile
 * runs one vector per row (cpu_gemm_avx512.c): 256x512x10 measured 0.034-0.037 ms against
 * cblas_sgemm's 0.053-0.060, and 0.58-0.98x of it from 8 rows and 512 deep; below 256 deep,
 * under 8 rows or under 10 columns (OpenBLAS's GEMV at one) it was as fast or faster
 * (docs/performance.md, "Issue 22: narrow output layers"). Only MatMul and _FusedMatMul ask:
 * convolutions keep the rule above. */
static bool narrow_wanted(int64_t m, int64_t n, int64_t k) {
  return packed_mode() == 0 && weft__cpu_packed_isa() == WEFT_CPU_ISA_AVX512 &&
         m >= NARROW_MIN_ROWS && n >= NARROW_MIN_COLS && n <= 16 && k >= NARROW_MIN_DEPTH &&
         k * n < PACKED_MAX_B_FLOATS;
}

/* The packed B for this call, one reference the caller drops; NULL where B is not a constant,
 * the node stopped caching, or memory ran out (the caller runs OpenBLAS). */
static packed_b_t *packed_get(weft_kernel_ctx_t *ctx, weft_cpu_packed_cache_t *cache, int input,
                              const float *b, int64_t ldb, bool tb, int64_t k, int64_t n) {
  if (!cache || H->struct_size < offsetof(weft_host_t, kernel_input_constant) +
                                     sizeof H->kernel_input_constant)
    return NULL;
  uint64_t id = H->kernel_input_constant(ctx, input);
  if (id == 0) return NULL;
  pthread_mutex_lock(&cache->lock);
  packed_b_t *p = cache->current;
  if (p && p->id == id && p->k == k && p->n == n && p->tb == tb && p->ldb == ldb) {
    __atomic_add_fetch(&p->refs, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&cache->lock);
    return p;
  }
  p = NULL;
  if (cache->repacks < PACKED_MAX_REPACKS) {
    cache->repacks++;
    p = calloc(1, sizeof *p);
    size_t floats = weft__cpu_gemm_packed_floats(k, n);
    if (p) p->data = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
    if (p && p->data) {
      /* Packed under the lock: a second step of the same node waits for it rather than packing
       * its own copy. */
      weft__cpu_gemm_pack_b(b, ldb, tb, k, n, p->data);
      *p = (packed_b_t){.refs = 2, .id = id, .k = k, .n = n, .ldb = ldb, .tb = tb,
                        .data = p->data};
      packed_unref(cache->current);
      cache->current = p;
    } else if (p) {
      free(p);
      p = NULL;
    }
  }
  pthread_mutex_unlock(&cache->lock);
  return p;
}

typedef struct packed_run {
  weft_cpu_gemm_job_t job;
  const weft_cpu_epilogue_t *ep;
  bool prefilled, by_rows;
  int64_t block;
} packed_run_t;

static void finish_tile(void *arg, float *c, int64_t rows, int64_t cols, int64_t ldc,
                        int64_t col0) {
  const packed_run_t *r = arg;
  weft__cpu_epilogue_apply(r->ep, c, rows, cols, ldc, col0, r->prefilled);
}

/* The job of C = op(A) B (+ ep) over the packed p: the bias starts the sums where there is one
 * and no scale; with tile_clamp, a Relu or Relu6 after it runs in the tile's registers (the
 * rows' separate pass over each 8x32 tile was 3-4% of an MLP's kernel time); the rest of the
 * epilogue runs on each finished tile. */
static void run_init(packed_run_t *r, const packed_b_t *p, bool ta, int64_t m, const float *a,
                     int64_t lda, float *c, int64_t ldc, const weft_cpu_epilogue_t *ep,
                     bool tile_clamp) {
  *r = (packed_run_t){.ep = ep};
  r->job = (weft_cpu_gemm_job_t){.m = m, .n = p->n, .k = p->k, .a = a, .lda = lda, .ta = ta,
                                 .bp = p->data, .c = c, .ldc = ldc,
                                 .tile = weft__cpu_gemm_tile_for(weft__cpu_packed_isa())};
  if (ep && ep->bias && !ep->scale) {
    r->job.bias = ep->bias;
    r->prefilled = true;
  }
  bool act = ep && ep->act;
  if (tile_clamp && act && !ep->scale && (r->prefilled || !ep->bias) && ep->clamp) {
    r->job.clamp = ep->clamp == 1 ? WEFT_GEMM_RELU : WEFT_GEMM_RELU6;
    act = false;
  }
  if (ep && (act || ep->scale || (ep->bias && !r->prefilled))) {
    r->job.finish = finish_tile;
    r->job.finish_arg = r;
  }
}

weft_cpu_packed_t *weft__cpu_packed_acquire(weft_kernel_ctx_t *ctx, weft_cpu_packed_cache_t *cache,
                                            int b_input, const float *b, int64_t ldb, bool tb,
                                            int64_t m, int64_t n, int64_t k) {
  if (!weft__cpu_packed_wanted(m, n, k)) return NULL;
  return packed_get(ctx, cache, b_input, b, ldb, tb, k, n);
}

void weft__cpu_packed_release(weft_cpu_packed_t *p) { packed_unref(p); }

weft_cpu_packed_t *weft__cpu_packed_once(const float *b, int64_t ldb, bool tb, int64_t m,
                                         int64_t n, int64_t k) {
  if (!weft__cpu_packed_wanted(m, n, k)) return NULL;
  packed_b_t *p = calloc(1, sizeof *p);
  size_t floats = weft__cpu_gemm_packed_floats(k, n);
  if (p) p->data = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
  if (!p || !p->data) {
    free(p);
    return NULL;
  }
  weft__cpu_gemm_pack_b(b, ldb, tb, k, n, p->data);
  *p = (packed_b_t){.refs = 1, .k = k, .n = n, .ldb = ldb, .tb = tb, .data = p->data};
  return p;
}

void weft__cpu_packed_gemm_1t(const weft_cpu_packed_t *p, const float *a, int64_t lda, int64_t m,
                              float *c, int64_t ldc, const weft_cpu_epilogue_t *ep) {
  packed_run_t r;
  run_init(&r, p, false, m, a, lda, c, ldc, ep, true);
  weft__cpu_gemm_packed_block(&r.job, 0, m, 0, p->n);
}

void weft__cpu_packed_gemm_passes_1t(const weft_cpu_packed_t *p, const int64_t *k0,
                                     const int64_t *kc, int npasses, int64_t rs,
                                     const weft_cpu_gemm_segment_t *seg, int nseg, int64_t ldc,
                                     const weft_cpu_epilogue_t *ep) {
  packed_run_t r;
  run_init(&r, p, false, 0, NULL, 0, NULL, ldc, ep, false);
  weft__cpu_gemm_packed_passes(&r.job, k0, kc, npasses, rs, seg, nseg);
}

static void packed_range(void *arg, int64_t begin, int64_t end) {
  const packed_run_t *r = arg;
  const weft_cpu_gemm_job_t *g = &r->job;
  int64_t dim = r->by_rows ? g->m : g->n;
  for (int64_t i = begin; i < end; i++) {
    int64_t p0 = i * r->block, p1 = p0 + r->block < dim ? p0 + r->block : dim;
    if (r->by_rows)
      weft__cpu_gemm_packed_block(g, p0, p1, 0, g->n);
    else
      weft__cpu_gemm_packed_block(g, 0, g->m, p0, p1);
  }
}

bool weft__cpu_packed_gemm(weft_kernel_ctx_t *ctx, weft_cpu_packed_cache_t *cache, int b_input,
                           bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                           const weft_cpu_epilogue_t *ep) {
  packed_b_t *p = weft__cpu_packed_wanted(m, n, k) || narrow_wanted(m, n, k)
                      ? packed_get(ctx, cache, b_input, b, ldb, tb, k, n)
                      : NULL;
  if (!p) return false;
  packed_run_t r;
  run_init(&r, p, ta, m, a, lda, c, ldc, ep, true);
  int threads = H->kernel_num_threads(ctx), asked = weft__cpu_blas_threads_asked();
  int64_t blocks = weft__cpu_gemm_split_plan(asked > 0 && asked < threads ? asked : threads, m,
                                             n, k, &r.by_rows, &r.block);
  if (!r.by_rows && blocks > 1) {
    /* Column blocks start on a panel. */
    r.block = (r.block + WEFT_GEMM_NR - 1) / WEFT_GEMM_NR * WEFT_GEMM_NR;
    blocks = (n + r.block - 1) / r.block;
  }
  if (blocks <= 1) {
    r.block = r.by_rows ? m : n;
    packed_range(&r, 0, 1);
  } else {
    H->parallel_for(ctx, blocks, (int64_t)1 << 30, packed_range, &r);
  }
  packed_unref(p);
  return true;
}
