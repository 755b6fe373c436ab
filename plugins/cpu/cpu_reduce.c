/* cpu_reduce.c: reductions (Sum, Mean, Max, Min, Prod, All, Any), ArgMax/ArgMin and
 * the scans Cumsum, Cumprod and CumulativeLogsumexp.
 *
 * A reduction first collapses the input into alternating runs of kept (K) and reduced (R) dims.
 * [R] and [K,R] reduce contiguous rows; [R,K] and [K,R,K] accumulate whole rows of columns at
 * once (vectorisable over the kept columns); anything else is transposed to [K,R] first. Both
 * shapes parallelise over the kept elements, and over chunks of the reduced run (partial
 * accumulators combined at the end) when there are too few kept elements to keep every thread
 * busy. float sums accumulate in double, so 16M-element sums stay accurate to ~1e-7. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* One reduction on one dtype, in terms of an accumulator type A (at most 8 bytes). */
typedef struct red_impl {
  size_t acc_size;
  void (*init)(void *acc, int64_t n);
  /* acc[0] folds in x[0..n) */
  void (*row)(const void *x, int64_t n, void *acc);
  /* acc[j] folds in x[r * stride + j] for r < rows, j < ncols */
  void (*cols)(const void *x, int64_t rows, int64_t stride, int64_t ncols, void *acc);
  void (*combine)(void *dst, const void *src, int64_t n);
  /* out[j] = final value of acc[j]; count is how many elements each folded in */
  void (*finish)(const void *acc, void *out, int64_t n, int64_t count);
} red_impl_t;

#define RED_IMPL(NAME, T, A, INIT, OP, FIN)                                                   \
  static void NAME##_init(void *accv, int64_t n) {                                            \
    A *acc = (A *)accv;                                                                       \
    for (int64_t i = 0; i < n; i++) acc[i] = (A)(INIT);                                       \
  }                                                                                           \
  static void NAME##_row(const void *xv, int64_t n, void *accv) {                             \
    const T *restrict x = (const T *)xv;                                                      \
    /* Eight independent lanes: exact per-lane order, so no -ffast-math is needed to          \
     * vectorise, and shorter dependency chains. */                                           \
    A lanes[8];                                                                               \
    for (int k = 0; k < 8; k++) lanes[k] = (A)(INIT);                                         \
    int64_t i = 0;                                                                            \
    for (; i + 8 <= n; i += 8)                                                                \
      for (int k = 0; k < 8; k++) {                                                           \
        const A s = lanes[k];                                                                 \
        const A v = (A)x[i + k];                                                              \
        lanes[k] = (OP);                                                                      \
      }                                                                                       \
    for (; i < n; i++) {                                                                      \
      const A s = lanes[0];                                                                   \
      const A v = (A)x[i];                                                                    \
      lanes[0] = (OP);                                                                        \
    }                                                                                         \
    A r = *(A *)accv;                                                                         \
    for (int k = 0; k < 8; k++) {                                                             \
      const A s = r;                                                                          \
      const A v = lanes[k];                                                                   \
      r = (OP);                                                                               \
    }                                                                                         \
    *(A *)accv = r;                                                                           \
  }                                                                                           \
  static void NAME##_cols(const void *xv, int64_t rows, int64_t stride, int64_t ncols,        \
                          void *accv) {                                                       \
    A *restrict acc = (A *)accv;                                                              \
    int64_t r = 0;                                                                            \
    /* Four rows per pass over the accumulators: they are loaded and stored once instead of   \
     * four times (the passes were bound by that traffic, twice the input's for a double      \
     * accumulator), and each acc[j] still folds its rows in order, so results are the same   \
     * bits as one row at a time. */                                                          \
    for (; r + 4 <= rows; r += 4) {                                                           \
      const T *restrict x0 = (const T *)xv + r * stride;                                      \
      const T *restrict x1 = x0 + stride;                                                     \
      const T *restrict x2 = x1 + stride;                                                     \
      const T *restrict x3 = x2 + stride;                                                     \
      for (int64_t j = 0; j < ncols; j++) {                                                   \
        A s = acc[j];                                                                         \
        A v = (A)x0[j];                                                                       \
        s = (OP);                                                                             \
        v = (A)x1[j];                                                                         \
        s = (OP);                                                                             \
        v = (A)x2[j];                                                                         \
        s = (OP);                                                                             \
        v = (A)x3[j];                                                                         \
        acc[j] = (OP);                                                                        \
      }                                                                                       \
    }                                                                                         \
    for (; r < rows; r++) {                                                                   \
      const T *restrict xr = (const T *)xv + r * stride;                                      \
      for (int64_t j = 0; j < ncols; j++) {                                                   \
        const A s = acc[j];                                                                   \
        const A v = (A)xr[j];                                                                 \
        acc[j] = (OP);                                                                        \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  static void NAME##_combine(void *dv, const void *sv, int64_t n) {                           \
    A *restrict d = (A *)dv;                                                                  \
    const A *restrict src = (const A *)sv;                                                    \
    for (int64_t j = 0; j < n; j++) {                                                         \
      const A s = d[j];                                                                       \
      const A v = src[j];                                                                     \
      d[j] = (OP);                                                                            \
    }                                                                                         \
  }                                                                                           \
  static void NAME##_finish(const void *accv, void *outv, int64_t n, int64_t count) {         \
    const A *restrict acc = (const A *)accv;                                                  \
    T *restrict out = (T *)outv;                                                              \
    (void)count;                                                                              \
    for (int64_t j = 0; j < n; j++) {                                                         \
      const A s = acc[j];                                                                     \
      out[j] = (T)(FIN);                                                                      \
    }                                                                                         \
  }                                                                                           \
  static const red_impl_t NAME = {sizeof(A),     NAME##_init,    NAME##_row,                  \
                                  NAME##_cols,   NAME##_combine, NAME##_finish};

#define FMAX(s, v) ((v) > (s) || (v) != (v) ? (v) : (s))
#define FMIN(s, v) ((v) < (s) || (v) != (v) ? (v) : (s))

/* Floats: sums and products in double; max/min in the element type, NaN wins. */
#define RED_FLOAT(SUF, T)                                                               \
  RED_IMPL(sum_##SUF, T, double, 0, s + v, s)                                           \
  RED_IMPL(mean_##SUF, T, double, 0, s + v, s / (double)count)                          \
  RED_IMPL(prod_##SUF, T, double, 1, s * v, s)                                          \
  RED_IMPL(max_##SUF, T, T, -INFINITY, FMAX(s, v), s)                                   \
  RED_IMPL(min_##SUF, T, T, INFINITY, FMIN(s, v), s)
/* Integers: sums and products wrap in 64-bit unsigned arithmetic, then truncate. */
#define RED_SINT(SUF, T, LO, HI)                                                        \
  RED_IMPL(sum_##SUF, T, uint64_t, 0, s + v, s)                                         \
  RED_IMPL(mean_##SUF, T, uint64_t, 0, s + v, count ? (int64_t)s / count : 0)           \
  RED_IMPL(prod_##SUF, T, uint64_t, 1, s * v, s)                                        \
  RED_IMPL(max_##SUF, T, T, LO, v > s ? v : s, s)                                       \
  RED_IMPL(min_##SUF, T, T, HI, v < s ? v : s, s)
#define RED_UINT(SUF, T, HI)                                                            \
  RED_IMPL(sum_##SUF, T, uint64_t, 0, s + v, s)                                         \
  RED_IMPL(mean_##SUF, T, uint64_t, 0, s + v, count ? s / (uint64_t)count : 0)          \
  RED_IMPL(prod_##SUF, T, uint64_t, 1, s * v, s)                                        \
  RED_IMPL(max_##SUF, T, T, 0, v > s ? v : s, s)                                        \
  RED_IMPL(min_##SUF, T, T, HI, v < s ? v : s, s)

RED_FLOAT(f32, float)
RED_FLOAT(f64, double)
RED_SINT(i8, int8_t, INT8_MIN, INT8_MAX)
RED_SINT(i16, int16_t, INT16_MIN, INT16_MAX)
RED_SINT(i32, int32_t, INT32_MIN, INT32_MAX)
RED_SINT(i64, int64_t, INT64_MIN, INT64_MAX)
RED_UINT(u8, uint8_t, UINT8_MAX)
RED_UINT(u16, uint16_t, UINT16_MAX)
RED_UINT(u32, uint32_t, UINT32_MAX)
RED_UINT(u64, uint64_t, UINT64_MAX)
RED_IMPL(all_b, uint8_t, uint8_t, 1, s & (v != 0), s)
RED_IMPL(any_b, uint8_t, uint8_t, 0, s | (v != 0), s)

#define RED_SLOTS(K)                                                                       \
  {                                                                                        \
    [CPU_SLOT_F32] = &K##_f32, [CPU_SLOT_F64] = &K##_f64, [CPU_SLOT_I8] = &K##_i8,         \
    [CPU_SLOT_I16] = &K##_i16, [CPU_SLOT_I32] = &K##_i32, [CPU_SLOT_I64] = &K##_i64,       \
    [CPU_SLOT_U8] = &K##_u8, [CPU_SLOT_U16] = &K##_u16, [CPU_SLOT_U32] = &K##_u32,         \
    [CPU_SLOT_U64] = &K##_u64                                                              \
  }

typedef struct red_op {
  const char *name;
  const red_impl_t *impls[CPU_N_SLOTS];
} red_op_t;

static const red_op_t red_ops[] = {
    {"Sum", RED_SLOTS(sum)},   {"Mean", RED_SLOTS(mean)},
    {"Prod", RED_SLOTS(prod)}, {"Max", RED_SLOTS(max)},
    {"Min", RED_SLOTS(min)},   {"All", {[CPU_SLOT_BOOL] = &all_b}},
    {"Any", {[CPU_SLOT_BOOL] = &any_b}},
};

/* ---------------------------------------------------------------------------------------------
 * Row reduction: out[o] = reduce(x[o, 0..n)) */

typedef struct row_job {
  const red_impl_t *impl;
  const char *x;
  char *out;
  size_t es, os;
  int64_t n;       /* row length */
  int64_t chunks;  /* chunks per row (1: whole rows per task) */
  char *partial;   /* rows * chunks accumulators when chunks > 1 */
  int64_t count;
} row_job_t;

static void row_range(void *arg, int64_t b, int64_t e) {
  const row_job_t *j = arg;
  if (j->chunks == 1) {
    for (int64_t r = b; r < e; r++) {
      uint64_t acc; /* every accumulator fits in 8 bytes */
      j->impl->init(&acc, 1);
      j->impl->row(j->x + (size_t)(r * j->n) * j->es, j->n, &acc);
      j->impl->finish(&acc, j->out + (size_t)r * j->os, 1, j->count);
    }
    return;
  }
  int64_t step = (j->n + j->chunks - 1) / j->chunks;
  for (int64_t t = b; t < e; t++) {
    int64_t r = t / j->chunks, c = t % j->chunks;
    int64_t lo = c * step, hi = lo + step < j->n ? lo + step : j->n;
    void *acc = j->partial + (size_t)t * j->impl->acc_size;
    j->impl->init(acc, 1);
    if (hi > lo) j->impl->row(j->x + (size_t)(r * j->n + lo) * j->es, hi - lo, acc);
  }
}

static weft_status_t *reduce_rows(weft_kernel_ctx_t *ctx, const red_impl_t *impl, const void *x,
                                  size_t es, void *out, size_t os, int64_t rows, int64_t n,
                                  int64_t count) {
  int threads = H->kernel_num_threads(ctx);
  if (threads < 1) threads = 1;
  row_job_t j = {impl, x, out, es, os, n, 1, NULL, count};
  /* Few long rows: cut each row so that every thread gets work. */
  if (rows < 2 * (int64_t)threads && n >= 32768 && threads > 1) {
    int64_t c = (4 * (int64_t)threads + rows - 1) / rows;
    if (c > n / 8192) c = n / 8192;
    if (c > 1) j.chunks = c;
  }
  if (j.chunks == 1) {
    weft__cpu_parallel(ctx, rows, n + 10, row_range, &j);
    return NULL;
  }
  void *partial = NULL;
  WEFT_RETURN_IF_ERROR(
      H->kernel_scratch(ctx, (size_t)(rows * j.chunks) * impl->acc_size, &partial));
  j.partial = partial;
  weft__cpu_parallel(ctx, rows * j.chunks, (n + j.chunks - 1) / j.chunks + 10, row_range, &j);
  for (int64_t r = 0; r < rows; r++) {
    char *acc = j.partial + (size_t)(r * j.chunks) * impl->acc_size;
    for (int64_t c = 1; c < j.chunks; c++) impl->combine(acc, acc + (size_t)c * impl->acc_size, 1);
    impl->finish(acc, (char *)out + (size_t)r * os, 1, count);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Middle reduction: out[o, i] = reduce over m of x[o, m, i] */

#define COL_BLOCK 512

typedef struct mid_job {
  const red_impl_t *impl;
  const char *x;
  char *out;
  size_t es, os;
  int64_t outer, mid, inner;
  int64_t nblocks; /* column blocks per outer index */
  int64_t chunks;  /* chunks of the mid run */
  char *partial;   /* chunks * outer * inner accumulators when chunks > 1 */
  int64_t count;
} mid_job_t;

static void mid_range(void *arg, int64_t b, int64_t e) {
  const mid_job_t *j = arg;
  int64_t step = (j->mid + j->chunks - 1) / j->chunks;
  for (int64_t t = b; t < e; t++) {
    int64_t c = t % j->chunks, rest = t / j->chunks;
    int64_t blk = rest % j->nblocks, o = rest / j->nblocks;
    int64_t j0 = blk * COL_BLOCK, ncols = j->inner - j0 < COL_BLOCK ? j->inner - j0 : COL_BLOCK;
    int64_t m0 = c * step, m1 = m0 + step < j->mid ? m0 + step : j->mid;
    const char *src = j->x + (size_t)((o * j->mid + m0) * j->inner + j0) * j->es;
    if (j->chunks == 1) {
      uint64_t acc[COL_BLOCK];
      j->impl->init(acc, ncols);
      j->impl->cols(src, m1 - m0, j->inner, ncols, acc);
      j->impl->finish(acc, j->out + (size_t)(o * j->inner + j0) * j->os, ncols, j->count);
    } else {
      char *acc = j->partial +
                  (size_t)((c * j->outer + o) * j->inner + j0) * j->impl->acc_size;
      j->impl->init(acc, ncols);
      if (m1 > m0) j->impl->cols(src, m1 - m0, j->inner, ncols, acc);
    }
  }
}

static weft_status_t *reduce_mid(weft_kernel_ctx_t *ctx, const red_impl_t *impl, const void *x,
                                 size_t es, void *out, size_t os, int64_t outer, int64_t mid,
                                 int64_t inner, int64_t count) {
  int threads = H->kernel_num_threads(ctx);
  if (threads < 1) threads = 1;
  mid_job_t j = {impl, x, out, es, os, outer, mid, inner, 0, 1, NULL, count};
  j.nblocks = (inner + COL_BLOCK - 1) / COL_BLOCK;
  int64_t tasks = outer * j.nblocks;
  if (tasks < 2 * (int64_t)threads && threads > 1 && mid * (inner < COL_BLOCK ? inner : COL_BLOCK) >= 32768) {
    int64_t c = (4 * (int64_t)threads + tasks - 1) / tasks;
    if (c > mid / 64) c = mid / 64;
    if (c > 1) j.chunks = c;
  }
  int64_t cost = (mid / j.chunks + 1) * (inner < COL_BLOCK ? inner : COL_BLOCK);
  if (j.chunks == 1) {
    weft__cpu_parallel(ctx, tasks, cost, mid_range, &j);
    return NULL;
  }
  void *partial = NULL;
  size_t plane = (size_t)(outer * inner) * impl->acc_size;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, plane * (size_t)j.chunks, &partial));
  j.partial = partial;
  weft__cpu_parallel(ctx, tasks * j.chunks, cost, mid_range, &j);
  for (int64_t c = 1; c < j.chunks; c++)
    impl->combine(j.partial, j.partial + plane * (size_t)c, outer * inner);
  impl->finish(j.partial, out, outer * inner, count);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The reduction kernel */

/* y (allocated, the kept dims of x in order) = the reduction of x over the dims marked in
 * `reduced`; count is the number of elements each output folds in. */
static weft_status_t *reduce_into(weft_kernel_ctx_t *ctx, const red_impl_t *impl,
                                  const weft_tensor_view_t *x, const bool *reduced,
                                  const weft_tensor_view_t *y, int64_t count) {
  if (y->num_elements == 0) return NULL;
  size_t es = weft__cpu_dtype_size(x->dtype);
  if (x->num_elements == 0) {
    /* Reducing nothing: every output is the identity (0, 1, -inf, +inf, true, false; NaN for a
     * float mean). */
    void *acc = NULL;
    WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)y->num_elements * impl->acc_size, &acc));
    impl->init(acc, y->num_elements);
    impl->finish(acc, y->data, y->num_elements, 0);
    return NULL;
  }
  weft_pc_reduce_groups_t g;
  weft_pc_reduce_groups(x, reduced, &g);
  if (!g.any_reduced) {
    /* Nothing of size > 1 is reduced: each output is its single input element, and every
     * reduction of one element is that element. */
    memcpy(y->data, x->data, (size_t)x->num_elements * es);
    return NULL;
  }
  if (g.n == 1)
    return reduce_rows(ctx, impl, x->data, es, y->data, es, 1, g.size[0], count);
  if (g.n == 2 && !g.red[0])
    return reduce_rows(ctx, impl, x->data, es, y->data, es, g.size[0], g.size[1], count);
  if (g.n == 2) /* [R, K] */
    return reduce_mid(ctx, impl, x->data, es, y->data, es, 1, g.size[0], g.size[1], count);
  if (g.n == 3 && !g.red[0])
    return reduce_mid(ctx, impl, x->data, es, y->data, es, g.size[0], g.size[1], g.size[2],
                      count);
  /* General: gather kept dims first, reduced dims last, then reduce rows. */
  int64_t sizes[WEFT_MAX_RANK], strides[WEFT_MAX_RANK], kept, red;
  int r = weft_pc_reduce_regroup(&g, sizes, strides, &kept, &red);
  void *tmp = NULL;
  WEFT_RETURN_IF_ERROR(H->kernel_scratch(ctx, (size_t)x->num_elements * es, &tmp));
  weft_tensor_view_t tv = *x;
  tv.data = tmp;
  WEFT_RETURN_IF_ERROR(weft__cpu_strided_gather(ctx, &tv, x, 0, r, sizes, strides));
  return reduce_rows(ctx, impl, tmp, es, y->data, es, kept, red, count);
}

static weft_status_t *k_reduce(weft_kernel_ctx_t *ctx, void *state) {
  const red_op_t *op = state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  int slot = weft__cpu_slot(x.dtype);
  const red_impl_t *impl = slot >= 0 ? op->impls[slot] : NULL;
  if (impl == NULL)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", op->name,
                           weft__cpu_dtype_name(x.dtype));
  weft_pc_reduction_t red;
  WEFT_RETURN_IF_ERROR(weft_pc_reduction_prepare(ctx, &x, &red, &y));
  if (y.num_elements == 0) return NULL;
  return reduce_into(ctx, impl, &x, red.reduced, &y, red.count);
}

weft_status_t *weft__cpu_reduce_sum(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                    const bool *reduced, const weft_tensor_view_t *y) {
  int slot = weft__cpu_slot(x->dtype);
  const red_impl_t *impl = slot >= 0 ? red_ops[0].impls[slot] : NULL;
  if (impl == NULL)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "Sum has no CPU kernel for %s",
                           weft__cpu_dtype_name(x->dtype));
  int64_t count = 1;
  for (int d = 0; d < x->rank; d++)
    if (reduced[d]) count *= x->dims[d];
  return reduce_into(ctx, impl, x, reduced, y, count);
}

/* ---------------------------------------------------------------------------------------------
 * ArgMax / ArgMin over one axis: x viewed as [outer, n, inner]. */

typedef struct arg_job {
  weft_dtype_t dtype, out_dtype;
  bool is_max;
  const void *x;
  void *out;
  int64_t n, inner;
} arg_job_t;

/* A NaN wins (the first one), as in numpy. */
#define ARG_BETTER_F(v, best, is_max) \
  ((v) != (v) ? (best) == (best) : ((is_max) ? (v) > (best) : (v) < (best)))
#define ARG_BETTER_I(v, best, is_max) ((is_max) ? (v) > (best) : (v) < (best))

#define ARG_CASE(DT, T, BETTER)                                                     \
  case DT: {                                                                        \
    const T *x = (const T *)j->x + o * j->n * j->inner + i;                         \
    int64_t bi = 0;                                                                 \
    T best = x[0];                                                                  \
    for (int64_t m = 1; m < j->n; m++) {                                            \
      T v = x[m * j->inner];                                                        \
      if (BETTER(v, best, j->is_max)) {                                             \
        best = v;                                                                   \
        bi = m;                                                                     \
      }                                                                             \
    }                                                                               \
    idx = bi;                                                                       \
    break;                                                                          \
  }

static void arg_range(void *arg, int64_t b, int64_t e) {
  const arg_job_t *j = arg;
  for (int64_t t = b; t < e; t++) {
    int64_t o = t / j->inner, i = t % j->inner, idx = 0;
    switch (j->dtype) {
      ARG_CASE(WEFT_DT_FLOAT, float, ARG_BETTER_F)
      ARG_CASE(WEFT_DT_DOUBLE, double, ARG_BETTER_F)
      ARG_CASE(WEFT_DT_INT32, int32_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_INT64, int64_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_INT8, int8_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_INT16, int16_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_UINT8, uint8_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_UINT16, uint16_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_UINT32, uint32_t, ARG_BETTER_I)
      ARG_CASE(WEFT_DT_UINT64, uint64_t, ARG_BETTER_I)
      case WEFT_DT_BOOL: {
        const uint8_t *x = (const uint8_t *)j->x + o * j->n * j->inner + i;
        int64_t bi = 0;
        int best = x[0] != 0;
        for (int64_t m = 1; m < j->n; m++) {
          int v = x[m * j->inner] != 0;
          if (ARG_BETTER_I(v, best, j->is_max)) {
            best = v;
            bi = m;
          }
        }
        idx = bi;
        break;
      }
      default: break;
    }
    switch (j->out_dtype) {
      case WEFT_DT_INT32: ((int32_t *)j->out)[t] = (int32_t)idx; break;
      case WEFT_DT_INT16: ((int16_t *)j->out)[t] = (int16_t)idx; break;
      case WEFT_DT_UINT16: ((uint16_t *)j->out)[t] = (uint16_t)idx; break;
      default: ((int64_t *)j->out)[t] = idx; break;
    }
  }
}

static weft_status_t *k_arg(weft_kernel_ctx_t *ctx, void *state) {
  bool is_max = state != NULL;
  weft_pc_arg_t a;
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft_pc_arg_plan(ctx, &a));
  weft_dtype_t out_dtype = a.out_dtype;
  if (out_dtype != WEFT_DT_INT32 && out_dtype != WEFT_DT_INT64 && out_dtype != WEFT_DT_INT16 &&
      out_dtype != WEFT_DT_UINT16)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "output_type must be int16, uint16, int32 or int64, got %s",
                           weft__cpu_dtype_name(out_dtype));
  WEFT_RETURN_IF_ERROR(weft_pc_arg_shape(ctx, &a));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, out_dtype, a.out_rank, a.out_dims, &y));
  if (y.num_elements == 0) return NULL;
  arg_job_t j = {a.x.dtype, out_dtype, is_max, a.x.data, y.data, a.n, a.inner};
  weft__cpu_parallel(ctx, a.outer * a.inner, a.n * 2, arg_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Cumsum / Cumprod over one axis: x viewed as [outer, n, inner]; each task walks one outer
 * index and a block of inner columns, keeping the running value of each column. */

typedef struct cum_job {
  weft_dtype_t dtype;
  bool prod, exclusive, reverse;
  const void *x;
  void *y;
  int64_t n, inner, nblocks;
} cum_job_t;

#define CUM_CASE(DT, T, U)                                                               \
  case DT: {                                                                             \
    const T *x = (const T *)j->x;                                                        \
    T *y = (T *)j->y;                                                                    \
    T acc[COL_BLOCK];                                                                    \
    for (int64_t c = 0; c < nc; c++) acc[c] = j->prod ? (T)1 : (T)0;                     \
    for (int64_t s = 0; s < j->n; s++) {                                                 \
      int64_t m = j->reverse ? j->n - 1 - s : s;                                         \
      size_t base = (size_t)((o * j->n + m) * j->inner + i0);                            \
      for (int64_t c = 0; c < nc; c++) {                                                 \
        T v = x[base + (size_t)c];                                                       \
        if (j->exclusive) y[base + (size_t)c] = acc[c];                                  \
        acc[c] = j->prod ? (T)((U)acc[c] * (U)v) : (T)((U)acc[c] + (U)v);                \
        if (!j->exclusive) y[base + (size_t)c] = acc[c];                                 \
      }                                                                                  \
    }                                                                                    \
    break;                                                                               \
  }

static void cum_range(void *arg, int64_t b, int64_t e) {
  const cum_job_t *j = arg;
  for (int64_t t = b; t < e; t++) {
    int64_t o = t / j->nblocks, blk = t % j->nblocks;
    int64_t i0 = blk * COL_BLOCK;
    int64_t nc = j->inner - i0 < COL_BLOCK ? j->inner - i0 : COL_BLOCK;
    switch (j->dtype) {
      CPU_NUMERIC_TYPES(CUM_CASE)
      default: break;
    }
  }
}

/* The checks and the [outer, n, inner] view shared by the scans: x, its axis and y allocated
 * like x. */
typedef struct scan_view {
  weft_tensor_view_t x, y;
  int axis;
  int64_t outer, inner;
} scan_view_t;

static weft_status_t *scan_prepare(weft_kernel_ctx_t *ctx, const char *op, scan_view_t *v) {
  weft_tensor_view_t axis_v;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &v->x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &axis_v));
  int64_t axis_raw;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_scalar_index(ctx, &axis_v, "axis", &axis_raw));
  if (v->x.rank == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "%s needs an input of rank >= 1, got a scalar", op);
  WEFT_RETURN_IF_ERROR(weft__cpu_axis(ctx, axis_raw, v->x.rank, "axis", &v->axis));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, v->x.dtype, &v->x, &v->y));
  v->outer = v->inner = 1;
  for (int d = 0; d < v->x.rank; d++) {
    if (d < v->axis) v->outer *= v->x.dims[d];
    if (d > v->axis) v->inner *= v->x.dims[d];
  }
  return NULL;
}

static weft_status_t *k_cum(weft_kernel_ctx_t *ctx, void *state) {
  bool prod = state != NULL;
  scan_view_t v;
  WEFT_RETURN_IF_ERROR(scan_prepare(ctx, prod ? "Cumprod" : "Cumsum", &v));
  if (v.x.num_elements == 0) return NULL;
  int64_t inner = v.inner;
  cum_job_t j = {v.x.dtype,
                 prod,
                 weft__cpu_attr_bool(ctx, "exclusive", false),
                 weft__cpu_attr_bool(ctx, "reverse", false),
                 v.x.data,
                 v.y.data,
                 v.x.dims[v.axis],
                 inner,
                 (inner + COL_BLOCK - 1) / COL_BLOCK};
  weft__cpu_parallel(ctx, v.outer * j.nblocks,
                     j.n * (inner < COL_BLOCK ? inner : COL_BLOCK) * 2, cum_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * CumulativeLogsumexp: Cumsum's scan with log(e^a + e^b) for +, from -inf, evaluated in double
 * for every float dtype; one task per (outer, inner) column. */

static double log_add_exp(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  double hi = a > b ? a : b, lo = a > b ? b : a;
  if (isinf(hi)) return hi; /* -inf + -inf stays -inf; inf absorbs anything (inf + inf too) */
  return hi + log1p(exp(lo - hi));
}

typedef struct cle_job {
  weft_dtype_t dt;
  bool exclusive, reverse;
  const void *x;
  void *y;
  int64_t n, inner;
} cle_job_t;

static void cle_range(void *arg, int64_t b, int64_t e) {
  const cle_job_t *j = arg;
  for (int64_t t = b; t < e; t++) {
    int64_t o = t / j->inner, c = t % j->inner;
    double acc = -INFINITY;
    for (int64_t s = 0; s < j->n; s++) {
      int64_t m = j->reverse ? j->n - 1 - s : s, at = (o * j->n + m) * j->inner + c;
      double v = weft__cpu_load_f(j->dt, j->x, at);
      if (j->exclusive) weft__cpu_store_f(j->dt, j->y, at, acc);
      acc = log_add_exp(acc, v);
      if (!j->exclusive) weft__cpu_store_f(j->dt, j->y, at, acc);
    }
  }
}

static weft_status_t *k_cumulative_logsumexp(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  scan_view_t v;
  WEFT_RETURN_IF_ERROR(scan_prepare(ctx, "CumulativeLogsumexp", &v));
  if (!weft__cpu_dtype_is_float(v.x.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "CumulativeLogsumexp has no CPU kernel for %s",
                           weft__cpu_dtype_name(v.x.dtype));
  if (v.x.num_elements == 0) return NULL;
  cle_job_t j = {v.x.dtype,
                 weft__cpu_attr_bool(ctx, "exclusive", false),
                 weft__cpu_attr_bool(ctx, "reverse", false),
                 v.x.data,
                 v.y.data,
                 v.x.dims[v.axis],
                 v.inner};
  weft__cpu_parallel(ctx, v.outer * v.inner, j.n * 40, cle_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const weft_dtype_t arg_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_INT8,  WEFT_DT_INT16,
    WEFT_DT_UINT8, WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL,
};
static const weft_dtype_t cum_lse_types[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF};
static int max_marker;

weft_status_t *weft__cpu_register_reduce(const weft_registrar_t *reg) {
  static const char *const reduce_host[] = {"reduction_indices", NULL};
  static const char *const arg_host[] = {"dimension", NULL};
  static const char *const cum_host[] = {"axis", NULL};
  const weft_dtype_t *num_types = weft__cpu_num_types;
  const size_t n_num = weft__cpu_n_num_types;
  const size_t n_arg = sizeof arg_types / sizeof arg_types[0];
  for (size_t i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++) {
    const red_op_t *op = &red_ops[i];
    bool bool_only = op->impls[CPU_SLOT_BOOL] != NULL; /* All and Any, without T */
    const weft_cpu_kernel_spec_t spec = {.op = op->name,
                                         .compute = k_reduce,
                                         .type_attr = bool_only ? NULL : "T",
                                         .dtypes = bool_only ? NULL : num_types,
                                         .n_dtypes = bool_only ? 0 : n_num,
                                         .host_memory = reduce_host,
                                         .user_data = (void *)op};
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  }
  /* user_data marks ArgMax (against ArgMin) and Cumprod (against Cumsum). */
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "ArgMax", .compute = k_arg, .type_attr = "T", .dtypes = arg_types, .n_dtypes = n_arg,
       .host_memory = arg_host, .user_data = &max_marker},
      {.op = "ArgMin", .compute = k_arg, .type_attr = "T", .dtypes = arg_types, .n_dtypes = n_arg,
       .host_memory = arg_host},
      {.op = "Cumsum", .compute = k_cum, .type_attr = "T", .dtypes = num_types, .n_dtypes = n_num,
       .host_memory = cum_host},
      {.op = "Cumprod", .compute = k_cum, .type_attr = "T", .dtypes = num_types,
       .n_dtypes = n_num, .host_memory = cum_host, .user_data = &max_marker},
      {.op = "CumulativeLogsumexp", .compute = k_cumulative_logsumexp, .type_attr = "T",
       .dtypes = cum_lse_types, .n_dtypes = 3, .host_memory = cum_host},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
