/* cpu_util.c: helpers every CPU kernel file uses beyond those all plugins share (plugins/common):
 * dtype slots, half/bfloat16 conversion, reading any number as a double, the intra-op pool,
 * walking broadcast runs, dtype-agnostic data movement (strings included) and the CPU side of
 * kernel registration. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vmath.h"

/* ---------------------------------------------------------------------------------------------
 * dtypes */

static const weft_dtype_t slot_dtypes[CPU_N_SLOTS] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_BOOL,
    WEFT_DT_UINT8, WEFT_DT_INT8,   WEFT_DT_INT16,  WEFT_DT_UINT16, WEFT_DT_UINT32,
    WEFT_DT_UINT64, WEFT_DT_HALF,  WEFT_DT_BFLOAT16, WEFT_DT_STRING,
};

const weft_dtype_t weft__cpu_all_types[] = {
    WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_BOOL,
    WEFT_DT_UINT8, WEFT_DT_INT8,   WEFT_DT_INT16,  WEFT_DT_UINT16, WEFT_DT_UINT32,
    WEFT_DT_UINT64, WEFT_DT_HALF,  WEFT_DT_BFLOAT16, WEFT_DT_STRING,
};
const size_t weft__cpu_n_all_types = sizeof weft__cpu_all_types / sizeof weft__cpu_all_types[0];

#define CPU_DTYPE_OF(DT, T, U) DT,
const weft_dtype_t weft__cpu_num_types[] = {CPU_NUMERIC_TYPES(CPU_DTYPE_OF)};
#undef CPU_DTYPE_OF
const size_t weft__cpu_n_num_types = sizeof weft__cpu_num_types / sizeof weft__cpu_num_types[0];

const weft_dtype_t weft__cpu_index_types[] = {WEFT_DT_INT32, WEFT_DT_INT64};
const size_t weft__cpu_n_index_types = 2;

int weft__cpu_slot(weft_dtype_t dtype) {
  for (int i = 0; i < CPU_N_SLOTS; i++)
    if (slot_dtypes[i] == dtype) return i;
  return -1;
}

weft_dtype_t weft__cpu_slot_dtype(int slot) {
  return slot >= 0 && slot < CPU_N_SLOTS ? slot_dtypes[slot] : WEFT_DT_INVALID;
}

size_t weft__cpu_slot_types(const bool *has, weft_dtype_t *out) {
  size_t n = 0;
  for (int s = 0; s < CPU_N_SLOTS; s++)
    if (has[s]) out[n++] = slot_dtypes[s];
  if (has[CPU_SLOT_F32]) {
    out[n++] = WEFT_DT_HALF;
    out[n++] = WEFT_DT_BFLOAT16;
  }
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * half and bfloat16 */

static inline uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float weft__cpu_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    /* Zero or subnormal: mant * 2^-24 is exact in float. */
    float v = (float)mant * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return u2f(sign | 0x7f800000u | (mant << 13));
  return u2f(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t weft__cpu_float_to_half(float f) {
  uint32_t x = f2u(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) /* inf stays inf; NaN stays a quiet NaN */
    return (uint16_t)(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u | ((x >> 13) & 0x3ffu) : 0u));
  if (x >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
  if (x < 0x38800000u) {
    /* Below the smallest normal half: adding 0.5f puts the value where float's ulp is 2^-24,
     * the half subnormal step, so the hardware's round-to-nearest-even does the rounding. */
    float v = u2f(x) + 0.5f;
    return (uint16_t)(sign | (uint16_t)(f2u(v) - 0x3f000000u));
  }
  uint32_t odd = (x >> 13) & 1u;
  x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
  return (uint16_t)(sign | (uint16_t)(x >> 13));
}

uint16_t weft__cpu_float_to_half_trunc(float f) {
  uint32_t x = f2u(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u)
    return (uint16_t)(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u | ((x >> 13) & 0x3ffu) : 0u));
  if (x >= 0x47800000u) return (uint16_t)(sign | 0x7c00u);
  if (x < 0x38800000u) return (uint16_t)(sign | (uint16_t)(u2f(x) * 0x1p24f));
  return (uint16_t)(sign | (uint16_t)((x - ((uint32_t)(127 - 15) << 23)) >> 13));
}

float weft__cpu_bf16_to_float(uint16_t b) { return u2f((uint32_t)b << 16); }

uint16_t weft__cpu_float_to_bf16(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

uint16_t weft__cpu_float_to_bf16_trunc(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)(x >> 16);
}

void weft__cpu_f16_to_float(weft_dtype_t dtype, const uint16_t *src, float *dst, int64_t n) {
  if (dtype == WEFT_DT_HALF)
    for (int64_t i = 0; i < n; i++) dst[i] = weft__cpu_half_to_float(src[i]);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = weft__cpu_bf16_to_float(src[i]);
}

void weft__cpu_float_to_f16(weft_dtype_t dtype, const float *src, uint16_t *dst, int64_t n) {
  if (dtype == WEFT_DT_HALF)
    for (int64_t i = 0; i < n; i++) dst[i] = weft__cpu_float_to_half(src[i]);
  else
    for (int64_t i = 0; i < n; i++) dst[i] = weft__cpu_float_to_bf16(src[i]);
}

/* ---------------------------------------------------------------------------------------------
 * Inputs and outputs */

weft_status_t *weft__cpu_output_like(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                     const weft_tensor_view_t *like, weft_tensor_view_t *out) {
  return weft__cpu_output(ctx, index, dtype, like->rank, like->dims, out);
}

double weft__cpu_get_double(const weft_tensor_view_t *v, int64_t i) {
  const void *d = v->data;
  switch (v->dtype) {
    case WEFT_DT_FLOAT: return ((const float *)d)[i];
    case WEFT_DT_DOUBLE: return ((const double *)d)[i];
    case WEFT_DT_INT32: return ((const int32_t *)d)[i];
    case WEFT_DT_INT64: return (double)((const int64_t *)d)[i];
    case WEFT_DT_UINT8: return ((const uint8_t *)d)[i];
    case WEFT_DT_INT8: return ((const int8_t *)d)[i];
    case WEFT_DT_INT16: return ((const int16_t *)d)[i];
    case WEFT_DT_UINT16: return ((const uint16_t *)d)[i];
    case WEFT_DT_UINT32: return ((const uint32_t *)d)[i];
    case WEFT_DT_UINT64: return (double)((const uint64_t *)d)[i];
    case WEFT_DT_BOOL: return ((const uint8_t *)d)[i] != 0;
    case WEFT_DT_HALF: return weft__cpu_half_to_float(((const uint16_t *)d)[i]);
    case WEFT_DT_BFLOAT16: return weft__cpu_bf16_to_float(((const uint16_t *)d)[i]);
    default: return 0.0;
  }
}

const char *weft__cpu_attr_str(weft_kernel_ctx_t *ctx, const char *name, const char *dflt,
                               size_t *len) {
  const char *s = NULL;
  size_t n = 0;
  const weft_host_t *h = weft__cpu_host;
  weft_status_t *st = h->attr_string(h->kernel_attrs(ctx), name, &s, &n);
  if (st) {
    h->status_free(st);
    s = dflt;
    n = dflt ? strlen(dflt) : 0;
  }
  if (len) *len = n;
  return s;
}

bool weft__cpu_attr_is(weft_kernel_ctx_t *ctx, const char *name, const char *value,
                       const char *dflt) {
  const char *s = weft__cpu_attr_str(ctx, name, dflt, NULL);
  return s != NULL && strcmp(s, value) == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Parallelism */

void weft__cpu_parallel(weft_kernel_ctx_t *ctx, int64_t total, int64_t cost_per_unit,
                        weft_range_fn fn, void *arg) {
  if (total <= 0) return;
  if (cost_per_unit < 1) cost_per_unit = 1;
  if (total * cost_per_unit < CPU_SCALAR_SPLIT_MIN || total == 1) {
    fn(arg, 0, total);
    return;
  }
  weft__cpu_host->parallel_for(ctx, total, cost_per_unit, fn, arg);
}

/* A split of a float32 elementwise loop pays a helper's start and the join, 20-30 us on the
 * 2-core VM: measured at two threads against one (step stats, steps back to back), Exp over
 * 64K / 256K / 1M floats 11 / 50 / 158 us on one thread against 24-39 / 60 / 95-127 split, Erf
 * over 32K / 128K / 256K 7 / 32 / 56-71 against 34 / 46 / 35-50. So a loop splits from 400K
 * cycles of estimated work (the tables' estimates run about twice the vector loops' time). */
#define CPU_F32_SPLIT_MIN_CYCLES 400000

/* Floats per vector of the level in use. */
static int64_t f32_lanes(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (weft__cpu_vmath() == &weft__cpu_vmath_avx512) return 16;
  if (weft__cpu_vmath() == &weft__cpu_vmath_avx2) return 8;
#endif
  return 4;
}

void weft__cpu_parallel_f32(weft_kernel_ctx_t *ctx, int64_t total, int64_t scalar_cost,
                            int64_t floats_per_unit, weft_range_fn fn, void *arg) {
  if (total <= 0) return;
  /* The estimate is at most the scalar one: small loops leave without the division. */
  if (total < CPU_F32_SPLIT_MIN_CYCLES && scalar_cost < CPU_F32_SPLIT_MIN_CYCLES &&
      total * scalar_cost < CPU_F32_SPLIT_MIN_CYCLES) {
    fn(arg, 0, total);
    return;
  }
  int64_t cost = scalar_cost / f32_lanes();
  if (cost < floats_per_unit) cost = floats_per_unit;
  if (cost < 1) cost = 1;
  /* Compared by division so that total * cost cannot overflow. */
  if (total == 1 || total < CPU_F32_SPLIT_MIN_CYCLES / cost) {
    fn(arg, 0, total);
    return;
  }
  weft__cpu_host->parallel_for(ctx, total, cost, fn, arg);
}

bool weft__cpu_stream_output(int64_t n, size_t elem_size) {
  int64_t min = weft__cpu_stream_bytes();
  return min > 0 && elem_size > 0 && n >= min / (int64_t)elem_size;
}

/* ---------------------------------------------------------------------------------------------
 * Broadcasting */

void weft__cpu_bcast_runs(const weft_cpu_bcast_t *b, int64_t begin, int64_t end,
                          weft_cpu_bcast_run_fn fn, void *arg) {
  int64_t inner = weft__cpu_bcast_inner(b);
  int r = b->rank - 1;
  for (int64_t pos = begin; pos < end;) {
    int64_t row = pos / inner, col = pos % inner;
    int64_t off[CPU_BCAST_MAX_IN];
    weft__cpu_bcast_row_offsets(b, row, off);
    for (int k = 0; k < b->n_in; k++) off[k] += col * b->strides[k][r];
    int64_t len = inner - col < end - pos ? inner - col : end - pos;
    fn(arg, off, pos, len);
    pos += len;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Data movement */

weft_status_t *weft__cpu_copy_elems(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                    int64_t di, const weft_tensor_view_t *src, int64_t si,
                                    int64_t n) {
  if (n <= 0) return NULL;
  if (src->dtype == WEFT_DT_STRING) {
    const weft_string_t *s = src->data;
    for (int64_t i = 0; i < n; i++)
      WEFT_RETURN_IF_ERROR(
          weft__cpu_host->string_assign(ctx, dst, di + i, s[si + i].data, s[si + i].len));
    return NULL;
  }
  size_t es = weft__cpu_dtype_size(src->dtype);
  memcpy((char *)dst->data + (size_t)di * es, (const char *)src->data + (size_t)si * es,
         (size_t)n * es);
  return NULL;
}

typedef struct gather_job {
  char *dst;
  const char *src;
  size_t es;
  int rank;
  int64_t sizes[WEFT_MAX_RANK];
  int64_t strides[WEFT_MAX_RANK];
  int64_t base;
} gather_job_t;

/* Copies n elements with source stride s, specialised by element size so the compiler can use
 * plain loads and stores. */
static void copy_run(char *restrict dst, const char *restrict src, size_t es, int64_t n,
                     int64_t s) {
  if (s == 1) {
    memcpy(dst, src, (size_t)n * es);
    return;
  }
  switch (es) {
    case 1: {
      uint8_t *d = (uint8_t *)dst;
      const uint8_t *p = (const uint8_t *)src;
      for (int64_t i = 0; i < n; i++) d[i] = p[i * s];
      break;
    }
    case 2: {
      uint16_t *d = (uint16_t *)dst;
      const uint16_t *p = (const uint16_t *)src;
      for (int64_t i = 0; i < n; i++) d[i] = p[i * s];
      break;
    }
    case 4: {
      uint32_t *d = (uint32_t *)dst;
      const uint32_t *p = (const uint32_t *)src;
      for (int64_t i = 0; i < n; i++) d[i] = p[i * s];
      break;
    }
    case 8: {
      uint64_t *d = (uint64_t *)dst;
      const uint64_t *p = (const uint64_t *)src;
      for (int64_t i = 0; i < n; i++) d[i] = p[i * s];
      break;
    }
    default:
      for (int64_t i = 0; i < n; i++) memcpy(dst + (size_t)i * es, src + (i * s) * (int64_t)es, es);
  }
}

static int64_t gather_row_offset(const gather_job_t *j, int64_t row) {
  int64_t off = j->base;
  for (int d = j->rank - 2; d >= 0; d--) {
    int64_t i = row % j->sizes[d];
    row /= j->sizes[d];
    off += i * j->strides[d];
  }
  return off;
}

static void gather_range(void *arg, int64_t begin, int64_t end) {
  const gather_job_t *j = arg;
  int64_t inner = j->sizes[j->rank - 1];
  int64_t s = j->strides[j->rank - 1];
  for (int64_t r = begin; r < end; r++) {
    int64_t off = gather_row_offset(j, r);
    copy_run(j->dst + (size_t)(r * inner) * j->es, j->src + off * (int64_t)j->es, j->es, inner, s);
  }
}

/* Transposes: the innermost output dim strides through the source while some other dim `c` is
 * contiguous there. Copying 32x32 tiles of (c, innermost) keeps both the reads and the writes
 * inside a few cache lines instead of touching a new line per element. */
#define GATHER_TILE 32

typedef struct tile_job {
  const gather_job_t *g;
  int c;
  int64_t tiles_c, tiles_l;
  int64_t dst_strides[WEFT_MAX_RANK];
} tile_job_t;

#define TILE_COPY(T)                                                                   \
  {                                                                                    \
    T *restrict d = (T *)(void *)g->dst;                                               \
    const T *restrict sp = (const T *)(const void *)g->src;                            \
    for (int64_t l = l0; l < l1; l++)                                                  \
      for (int64_t ci = c0; ci < c1; ci++)                                             \
        d[dst_off + ci * dsc + l] = sp[src_off + ci * ssc + l * ssl];                  \
    break;                                                                             \
  }

static void tile_range(void *arg, int64_t b, int64_t e) {
  const tile_job_t *j = arg;
  const gather_job_t *g = j->g;
  int last = g->rank - 1;
  int64_t dsc = j->dst_strides[j->c], ssc = g->strides[j->c], ssl = g->strides[last];
  for (int64_t t = b; t < e; t++) {
    int64_t tl = t % j->tiles_l, rest = t / j->tiles_l;
    int64_t tc = rest % j->tiles_c, o = rest / j->tiles_c;
    int64_t src_off = g->base, dst_off = 0;
    for (int d = last - 1; d >= 0; d--) {
      if (d == j->c) continue;
      int64_t i = o % g->sizes[d];
      o /= g->sizes[d];
      src_off += i * g->strides[d];
      dst_off += i * j->dst_strides[d];
    }
    int64_t c0 = tc * GATHER_TILE, c1 = c0 + GATHER_TILE < g->sizes[j->c] ? c0 + GATHER_TILE
                                                                          : g->sizes[j->c];
    int64_t l0 = tl * GATHER_TILE, l1 = l0 + GATHER_TILE < g->sizes[last] ? l0 + GATHER_TILE
                                                                          : g->sizes[last];
    switch (g->es) {
      case 1: TILE_COPY(uint8_t)
      case 2: TILE_COPY(uint16_t)
      case 4: TILE_COPY(uint32_t)
      case 8: TILE_COPY(uint64_t)
      default:
        for (int64_t l = l0; l < l1; l++)
          for (int64_t ci = c0; ci < c1; ci++)
            memcpy(g->dst + (size_t)(dst_off + ci * dsc + l) * g->es,
                   g->src + (src_off + ci * ssc + l * ssl) * (int64_t)g->es, g->es);
    }
  }
}

weft_status_t *weft__cpu_strided_gather(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                        const weft_tensor_view_t *src, int64_t base, int rank,
                                        const int64_t *sizes, const int64_t *strides) {
  gather_job_t j;
  memset(&j, 0, sizeof j);
  j.dst = dst->data;
  j.src = src->data;
  j.es = weft__cpu_dtype_size(src->dtype);
  j.base = base;
  int64_t total = 1;
  for (int d = 0; d < rank; d++) total *= sizes[d];
  if (total == 0) return NULL;
  /* Collapse size-1 dims and dims that are contiguous with their inner neighbour. */
  int cr = 0;
  for (int d = 0; d < rank; d++) {
    if (sizes[d] == 1) continue;
    if (cr > 0 && j.strides[cr - 1] == strides[d] * sizes[d]) {
      j.sizes[cr - 1] *= sizes[d];
      j.strides[cr - 1] = strides[d];
    } else {
      j.sizes[cr] = sizes[d];
      j.strides[cr] = strides[d];
      cr++;
    }
  }
  if (cr == 0) {
    j.sizes[0] = 1;
    j.strides[0] = 1;
    cr = 1;
  }
  j.rank = cr;
  int64_t inner = j.sizes[cr - 1];
  int64_t rows = total / inner;
  if (src->dtype == WEFT_DT_STRING) {
    const weft_string_t *s = src->data;
    for (int64_t r = 0; r < rows; r++) {
      int64_t off = gather_row_offset(&j, r);
      for (int64_t i = 0; i < inner; i++) {
        const weft_string_t *e = &s[off + i * j.strides[cr - 1]];
        WEFT_RETURN_IF_ERROR(
            weft__cpu_host->string_assign(ctx, dst, r * inner + i, e->data, e->len));
      }
    }
    return NULL;
  }
  int c = -1;
  if (cr >= 2 && j.strides[cr - 1] != 1 && inner >= 8)
    for (int d = cr - 2; d >= 0 && c < 0; d--)
      if (j.strides[d] == 1 && j.sizes[d] >= 8) c = d;
  if (c >= 0) {
    tile_job_t tj;
    memset(&tj, 0, sizeof tj);
    tj.g = &j;
    tj.c = c;
    tj.tiles_c = (j.sizes[c] + GATHER_TILE - 1) / GATHER_TILE;
    tj.tiles_l = (inner + GATHER_TILE - 1) / GATHER_TILE;
    int64_t st = 1;
    for (int d = cr - 1; d >= 0; d--) {
      tj.dst_strides[d] = st;
      st *= j.sizes[d];
    }
    int64_t tiles = total / (j.sizes[c] * inner) * tj.tiles_c * tj.tiles_l;
    weft__cpu_parallel(ctx, tiles, GATHER_TILE * GATHER_TILE * 2, tile_range, &tj);
    return NULL;
  }
  weft__cpu_parallel(ctx, rows, inner * 2 + 10, gather_range, &j);
  return NULL;
}

weft_status_t *weft__cpu_fill_from(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                   const weft_tensor_view_t *src, int64_t si) {
  int64_t n = dst->num_elements;
  if (src->dtype == WEFT_DT_STRING) {
    const weft_string_t *e = (const weft_string_t *)src->data + si;
    for (int64_t i = 0; i < n; i++)
      WEFT_RETURN_IF_ERROR(weft__cpu_host->string_assign(ctx, dst, i, e->data, e->len));
    return NULL;
  }
  size_t es = weft__cpu_dtype_size(src->dtype);
  const char *v = (const char *)src->data + (size_t)si * es;
  switch (es) {
    case 1: memset(dst->data, *(const uint8_t *)v, (size_t)n); break;
    case 2: {
      uint16_t x; memcpy(&x, v, 2);
      uint16_t *d = dst->data;
      for (int64_t i = 0; i < n; i++) d[i] = x;
      break;
    }
    case 4: {
      uint32_t x; memcpy(&x, v, 4);
      uint32_t *d = dst->data;
      for (int64_t i = 0; i < n; i++) d[i] = x;
      break;
    }
    case 8: {
      uint64_t x; memcpy(&x, v, 8);
      uint64_t *d = dst->data;
      for (int64_t i = 0; i < n; i++) d[i] = x;
      break;
    }
    default:
      for (int64_t i = 0; i < n; i++) memcpy((char *)dst->data + (size_t)i * es, v, es);
  }
  return NULL;
}

weft_status_t *weft__cpu_zero(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst) {
  if (dst->dtype == WEFT_DT_STRING) {
    for (int64_t i = 0; i < dst->num_elements; i++)
      WEFT_RETURN_IF_ERROR(weft__cpu_host->string_assign(ctx, dst, i, "", 0));
    return NULL;
  }
  if (dst->num_elements > 0)
    memset(dst->data, 0, (size_t)dst->num_elements * weft__cpu_dtype_size(dst->dtype));
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

/* Ops the CPU plugin has kernels for but the core of ABI 1.0 does not define. The loader
 * refuses a plugin that registers a kernel for an unknown op, and the ABI has no way to ask
 * which ops exist, so these stay unregistered until the core defines them (delete a name here
 * once its op definition exists). */
static const char *const ops_core_lacks[] = {"PlaceholderV2", "Concat"};

static bool core_lacks(const char *op) {
  for (size_t i = 0; i < sizeof ops_core_lacks / sizeof ops_core_lacks[0]; i++)
    if (strcmp(op, ops_core_lacks[i]) == 0) return true;
  return false;
}

static weft_status_t *skip_unknown_op(const char *op, weft_status_t *s) {
  if (s != NULL && weft__cpu_host->status_code(s) == WEFT_NOT_FOUND) {
    /* An older or trimmed core without this op: the kernel is useless there, not an error. */
    weft__cpu_host->log(WEFT_LOG_DEBUG, WEFT_CPU_PLUGIN_NAME, "skipping kernel %s: %s", op,
                        weft__cpu_host->status_message(s));
    weft__cpu_host->status_free(s);
    return NULL;
  }
  return s;
}

weft_status_t *weft__cpu_register_full(const weft_registrar_t *reg, const char *op,
                                       const weft_type_constraint_t *constraints,
                                       size_t n_constraints, const char *const *host_memory,
                                       weft_kernel_create_fn create, weft_kernel_compute_fn compute,
                                       weft_kernel_destroy_fn destroy, void *user_data) {
  if (core_lacks(op)) return NULL;
  return skip_unknown_op(op, weft_pc_register_full(reg, WEFT_CPU_DEVICE_TYPE, op, constraints,
                                                   n_constraints, host_memory, create, compute,
                                                   destroy, user_data));
}

weft_status_t *weft__cpu_register(const weft_registrar_t *reg, const weft_cpu_kernel_spec_t *spec) {
  if (core_lacks(spec->op)) return NULL;
  return skip_unknown_op(spec->op, weft_pc_register(reg, WEFT_CPU_DEVICE_TYPE, spec));
}

weft_status_t *weft__cpu_register_specs(const weft_registrar_t *reg,
                                        const weft_cpu_kernel_spec_t *specs, size_t n) {
  for (size_t i = 0; i < n; i++) WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &specs[i]));
  return NULL;
}

void weft__cpu_buf_put(weft_cpu_buf_t *b, const void *p, size_t n) {
  if (b->oom || n == 0) return;
  if (n > SIZE_MAX / 2 - b->len) {
    b->oom = true;
    return;
  }
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
      b->oom = true;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}
