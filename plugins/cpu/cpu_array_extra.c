/* cpu_array_extra.c: CPU kernels of more TensorFlow array ops, with TensorFlow's semantics and
 * error messages (tensorflow/core/kernels): ReverseV2, ReverseSequence, Roll, MatrixDiag,
 * MatrixSetDiag and MatrixDiagPart (V1, V2, V3 with k and align), MatrixBandPart,
 * SpaceToBatchND, BatchToSpaceND, SpaceToDepth, DepthToSpace (NHWC, as TensorFlow's CPU
 * kernels), Where, NthElement, TopKV2, TopK, Unique, UniqueWithCounts, InvertPermutation,
 * ParallelConcat, DeepCopy and Empty.
 *
 * Most of them only move elements: they build a map from each output element to the input
 * element it takes (or -1 for a padding value) and apply it, which works for every dtype,
 * strings included (through host->string_assign). Every index read from tensor data is checked
 * before it is used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

static weft_status_t *oom(weft_kernel_ctx_t *ctx) {
  return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
}

static const char *shape_str(const weft_tensor_view_t *v, char *buf) {
  return weft__cpu_shape_str(v->rank, v->dims, buf, CPU_SHAPE_STR_LEN);
}

/* y[i] = x[map[i]] for every i with map[i] >= 0 (the others keep what y holds). */
static weft_status_t *apply_map(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *y,
                                const weft_tensor_view_t *x, const int64_t *map) {
  int64_t n = y->num_elements;
  if (x->dtype == WEFT_DT_STRING) {
    for (int64_t i = 0; i < n; i++)
      if (map[i] >= 0) WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, y, i, x, map[i], 1));
    return NULL;
  }
  switch (weft__cpu_dtype_size(x->dtype)) {
#define MAP_CASE(bytes, type)                                   \
  case bytes: {                                                 \
    type *d = y->data;                                          \
    const type *s = x->data;                                    \
    for (int64_t i = 0; i < n; i++)                             \
      if (map[i] >= 0) d[i] = s[map[i]];                        \
    return NULL;                                                \
  }
    MAP_CASE(1, uint8_t)
    MAP_CASE(2, uint16_t)
    MAP_CASE(4, uint32_t)
    MAP_CASE(8, uint64_t)
#undef MAP_CASE
    default:
      return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "no CPU kernel for %s",
                             weft__cpu_dtype_name(x->dtype));
  }
}

static int64_t *map_new(weft_kernel_ctx_t *ctx, int64_t n, weft_status_t **status) {
  int64_t *m = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
  if (m == NULL) *status = oom(ctx);
  return m;
}

/* Steps a row-major coordinate c over dims; the last dim moves fastest. */
static void next_coord(int rank, const int64_t *dims, int64_t *c) {
  for (int d = rank - 1; d >= 0; d--) {
    if (++c[d] < dims[d]) return;
    c[d] = 0;
  }
}

/* Allocates output 0 with dims, fills it through map (built by the caller, may be NULL for an
 * empty output) and frees the map. */
static weft_status_t *emit_mapped(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x, int rank,
                                  const int64_t *dims, int64_t *map,
                                  const weft_tensor_view_t *pad) {
  weft_tensor_view_t y;
  weft_status_t *s = weft__cpu_output(ctx, 0, x->dtype, rank, dims, &y);
  if (s == NULL && y.num_elements > 0) {
    if (pad != NULL) s = weft__cpu_fill_from(ctx, &y, pad, 0);
    if (s == NULL) s = apply_map(ctx, &y, x, map);
  }
  free(map);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * ReverseV2 (reverse_op.cc) */

static weft_status_t *k_reverse_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, av, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &av));
  if (av.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "'dims' must be 1-dimension, not %d",
                           av.rank);
  if (x.rank > 8)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "reverse is not implemented for tensors of rank > 8.");
  bool rev[WEFT_MAX_RANK] = {false};
  for (int64_t i = 0; i < av.num_elements; i++) {
    int64_t a = weft__cpu_index_at(&av, i);
    int64_t ca = a < 0 ? a + x.rank : a;
    if (ca < 0 || ca >= x.rank)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "'axis'[%lld] = %lld is out of valid range [0, %d", (long long)i,
                             (long long)a, x.rank - 1);
    if (rev[ca])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "axis %lld specified more than once.",
                             (long long)ca);
    rev[ca] = true;
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (y.num_elements == 0) return NULL;
  int64_t strides[WEFT_MAX_RANK], base = 0;
  weft_pc_contiguous_strides(x.rank, x.dims, strides);
  for (int d = 0; d < x.rank; d++) {
    if (!rev[d]) continue;
    base += (x.dims[d] - 1) * strides[d];
    strides[d] = -strides[d];
  }
  return weft__cpu_strided_gather(ctx, &y, &x, base, x.rank, x.dims, strides);
}

/* ---------------------------------------------------------------------------------------------
 * ReverseSequence (reverse_sequence_op.cc) */

static weft_status_t *k_reverse_sequence(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, lv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &lv));
  int64_t seq_dim = weft__cpu_attr_int(ctx, "seq_dim", 0);
  int64_t batch_dim = weft__cpu_attr_int(ctx, "batch_dim", 0);
  if (batch_dim == seq_dim)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "batch_dim == seq_dim == %lld",
                           (long long)seq_dim);
  if (seq_dim < 0 || seq_dim >= x.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "seq_dim must be < input rank ( %lld vs. %d)",
                           (long long)seq_dim, x.rank);
  if (batch_dim < 0 || batch_dim >= x.rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "batch_dim must be < input rank ( %lld vs. %d)", (long long)batch_dim,
                           x.rank);
  if (lv.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seq_lengths must be 1-dim, not %d",
                           lv.rank);
  if (lv.dims[0] != x.dims[batch_dim])
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Length of seq_lengths != input.dims(%lld), (%lld vs. %lld)",
                           (long long)batch_dim, (long long)lv.dims[0],
                           (long long)x.dims[batch_dim]);
  for (int64_t d = 0; d < lv.num_elements; d++) {
    int64_t l = weft__cpu_index_at(&lv, d);
    if (l < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seq_lengths(%lld) < 0", (long long)d);
    if (l > x.dims[seq_dim])
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "seq_lengths(%lld) > input.dims(%lld)",
                             (long long)d, (long long)seq_dim);
  }
  weft_status_t *s = NULL;
  int64_t *map = map_new(ctx, x.num_elements, &s);
  if (s) return s;
  int64_t c[WEFT_MAX_RANK] = {0}, strides[WEFT_MAX_RANK];
  weft_pc_contiguous_strides(x.rank, x.dims, strides);
  for (int64_t i = 0; i < x.num_elements; i++) {
    int64_t len = weft__cpu_index_at(&lv, c[batch_dim]), pos = c[seq_dim];
    map[i] = pos < len ? i + (len - 1 - 2 * pos) * strides[seq_dim] : i;
    next_coord(x.rank, x.dims, c);
  }
  return emit_mapped(ctx, &x, x.rank, x.dims, map, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Roll (roll_op.cc): output[(i + shift) mod n] = input[i] along each axis; shifts of one axis
 * add up. */

static weft_status_t *k_roll(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, sv, av;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &sv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &av));
  char buf[CPU_SHAPE_STR_LEN];
  if (x.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be 1-D or higher");
  if (sv.rank > 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "shift must be a scalar or a 1-D vector. Found: %s",
                           shape_str(&sv, buf));
  if (av.rank > 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "axis must be a scalar or a 1-D vector. Found: %s",
                           shape_str(&av, buf));
  if (sv.num_elements != av.num_elements)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shift and axis must have the same size");
  int64_t shift[WEFT_MAX_RANK] = {0};
  for (int64_t i = 0; i < av.num_elements; i++) {
    int64_t a = weft__cpu_index_at(&av, i);
    int64_t ca = a < 0 ? a + x.rank : a;
    if (ca < 0 || ca >= x.rank)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "axis %lld is out of range",
                             (long long)ca);
    int64_t n = x.dims[ca];
    if (n == 0) continue;
    int64_t sh = weft__cpu_index_at(&sv, i) % n;
    shift[ca] = ((shift[ca] + sh) % n + n) % n;
  }
  weft_status_t *s = NULL;
  int64_t *map = map_new(ctx, x.num_elements, &s);
  if (s) return s;
  int64_t c[WEFT_MAX_RANK] = {0}, strides[WEFT_MAX_RANK];
  weft_pc_contiguous_strides(x.rank, x.dims, strides);
  for (int64_t i = 0; i < x.num_elements; i++) {
    int64_t src = 0;
    for (int d = 0; d < x.rank; d++) {
      int64_t p = c[d] - shift[d];
      if (p < 0) p += x.dims[d];
      src += p * strides[d];
    }
    map[i] = src;
    next_coord(x.rank, x.dims, c);
  }
  return emit_mapped(ctx, &x, x.rank, x.dims, map, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * MatrixDiag, MatrixSetDiag, MatrixDiagPart (matrix_diag_op.cc, matrix_set_diag_op.cc). A
 * diagonal d = col - row of a [M, N] matrix has min(M + min(0, d), N - max(0, d)) elements; in
 * the packed diagonal tensor ([..., num_diags, max_diag_len], the upper one first, or
 * [..., max_diag_len] for one) a diagonal shorter than max_diag_len starts at offset
 * max_diag_len - len when it is right-aligned, else at 0. align names the superdiagonals'
 * alignment first, the subdiagonals' second; V1 has k = 0 only, V2 aligns LEFT_LEFT. */

typedef enum { DIAG_V1, DIAG_V2, DIAG_V3 } diag_version_t;

typedef struct diag_geom {
  int64_t m, n, lower, upper, num_diags, max_len;
  bool super_right, sub_right;
} diag_geom_t;

static int64_t diag_len(const diag_geom_t *g, int64_t d) {
  int64_t a = g->m + (d < 0 ? d : 0), b = g->n - (d > 0 ? d : 0);
  return a < b ? a : b;
}

static int64_t diag_offset(const diag_geom_t *g, int64_t d) {
  bool right = d >= 0 ? g->super_right : g->sub_right;
  return right ? g->max_len - diag_len(g, d) : 0;
}

static weft_status_t *read_align(weft_kernel_ctx_t *ctx, diag_version_t v, diag_geom_t *g) {
  g->super_right = g->sub_right = false;
  if (v != DIAG_V3) return NULL; /* V1: one diagonal; V2: LEFT_LEFT */
  char align[32] = "RIGHT_LEFT";
  size_t len = 0;
  const char *val = NULL;
  weft_status_t *s = H->attr_string(H->kernel_attrs(ctx), "align", &val, &len);
  if (s == NULL && val != NULL && len < sizeof align) {
    memcpy(align, val, len);
    align[len] = '\0';
  }
  if (s) H->status_free(s);
  if (strcmp(align, "LEFT_RIGHT") == 0) {
    g->sub_right = true;
  } else if (strcmp(align, "RIGHT_LEFT") == 0) {
    g->super_right = true;
  } else if (strcmp(align, "RIGHT_RIGHT") == 0) {
    g->super_right = g->sub_right = true;
  } else if (strcmp(align, "LEFT_LEFT") != 0) {
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Unknown alignment: %s", align);
  }
  return NULL;
}

/* k (input `index`): a scalar or a vector of one or two diagonal indices. */
static weft_status_t *read_k(weft_kernel_ctx_t *ctx, int index, diag_geom_t *g) {
  weft_tensor_view_t kv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, &kv));
  char buf[CPU_SHAPE_STR_LEN];
  if (kv.rank > 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "diag_index must be a scalar or vector, received shape: %s",
                           shape_str(&kv, buf));
  if (kv.num_elements < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "diag_index must have at least one element");
  if (kv.num_elements > 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "diag_index must have only one or two elements, received %lld "
                           "elements.", (long long)kv.num_elements);
  g->lower = weft__cpu_index_at(&kv, 0);
  g->upper = kv.num_elements > 1 ? weft__cpu_index_at(&kv, 1) : g->lower;
  if (g->lower > g->upper)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "lower_diag_index must not be larger than upper_diag_index: %lld > %lld",
                           (long long)g->lower, (long long)g->upper);
  return NULL;
}

static weft_status_t *read_pad(weft_kernel_ctx_t *ctx, int index, const weft_tensor_view_t *x,
                               weft_tensor_view_t *pad) {
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, index, pad));
  char buf[CPU_SHAPE_STR_LEN];
  if (pad->rank != 0 || pad->dtype != x->dtype)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "padding_value must be a scalar, received shape: %s",
                           shape_str(pad, buf));
  return NULL;
}

static int64_t int_scalar_input(weft_kernel_ctx_t *ctx, int index, const char *what,
                                weft_status_t **s) {
  weft_tensor_view_t v;
  int64_t out = 0;
  *s = weft__cpu_input(ctx, index, &v);
  if (*s == NULL) *s = weft__cpu_read_scalar_index(ctx, &v, what, &out);
  return out;
}

static weft_status_t *matrix_diag(weft_kernel_ctx_t *ctx, diag_version_t v) {
  weft_tensor_view_t x, pad;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char buf[CPU_SHAPE_STR_LEN];
  diag_geom_t g = {0};
  int64_t num_rows = -1, num_cols = -1;
  const weft_tensor_view_t *padp = NULL;
  if (v != DIAG_V1) {
    WEFT_RETURN_IF_ERROR(read_k(ctx, 1, &g));
    weft_status_t *s = NULL;
    num_rows = int_scalar_input(ctx, 2, "num_rows", &s);
    if (s) return s;
    num_cols = int_scalar_input(ctx, 3, "num_cols", &s);
    if (s) return s;
    WEFT_RETURN_IF_ERROR(read_pad(ctx, 4, &x, &pad));
    padp = &pad;
  }
  WEFT_RETURN_IF_ERROR(read_align(ctx, v, &g));
  if (x.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "diagonal must be at least 1-dim, received shape: %s",
                           shape_str(&x, buf));
  g.num_diags = g.upper - g.lower + 1;
  g.max_len = x.dims[x.rank - 1];
  if (g.num_diags > 1) {
    if (x.rank < 2 || x.dims[x.rank - 2] != g.num_diags)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "The number of diagonals provided in the input does not match the "
                             "lower_diag_index and upper_diag_index range.");
  }
  int64_t min_rows = g.max_len - (g.upper < 0 ? g.upper : 0);
  int64_t min_cols = g.max_len + (g.lower > 0 ? g.lower : 0);
  if (num_rows == -1 && num_cols == -1) {
    num_rows = num_cols = min_rows > min_cols ? min_rows : min_cols;
  } else if (num_rows == -1) {
    num_rows = min_rows;
  } else if (num_cols == -1) {
    num_cols = min_cols;
  }
  if (num_rows < min_rows)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The number of rows is too small.");
  if (num_cols < min_cols)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "The number of columns is too small.");
  if (num_rows != min_rows && num_cols != min_cols)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "The number of rows or columns is not consistent with the specified "
                           "d_lower, d_upper, and diagonal.");
  g.m = num_rows;
  g.n = num_cols;
  int batch_rank = x.rank - (g.num_diags > 1 ? 2 : 1);
  if (batch_rank + 2 > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "MatrixDiag output rank exceeds %d",
                           WEFT_MAX_RANK);
  int64_t dims[WEFT_MAX_RANK], batch = 1;
  for (int d = 0; d < batch_rank; d++) {
    dims[d] = x.dims[d];
    batch *= x.dims[d];
  }
  dims[batch_rank] = g.m;
  dims[batch_rank + 1] = g.n;
  int64_t total = batch * g.m * g.n;
  weft_status_t *s = NULL;
  int64_t *map = map_new(ctx, total, &s);
  if (s) return s;
  int64_t i = 0;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t r = 0; r < g.m; r++)
      for (int64_t c = 0; c < g.n; c++, i++) {
        int64_t d = c - r;
        if (d < g.lower || d > g.upper) {
          map[i] = -1;
          continue;
        }
        int64_t pos = (d >= 0 ? r : c) + diag_offset(&g, d);
        map[i] = (b * g.num_diags + (g.upper - d)) * g.max_len + pos;
      }
  if (padp == NULL) {
    /* V1 pads with zeros. */
    weft_tensor_view_t y;
    s = weft__cpu_output(ctx, 0, x.dtype, batch_rank + 2, dims, &y);
    if (s == NULL) s = weft__cpu_zero(ctx, &y);
    if (s == NULL && y.num_elements > 0) s = apply_map(ctx, &y, &x, map);
    free(map);
    return s;
  }
  return emit_mapped(ctx, &x, batch_rank + 2, dims, map, padp);
}

/* g's m and n from the last two dims of x (rank >= 2), the k range checked against them, and the
 * number and the longest length of the diagonals it selects. */
static weft_status_t *diag_bounds(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                  diag_geom_t *g) {
  g->m = x->dims[x->rank - 2];
  g->n = x->dims[x->rank - 1];
  if (!((-g->m < g->lower && g->lower < g->n) || g->lower == 0))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "lower_diag_index is out of bound.");
  if (!((-g->m < g->upper && g->upper < g->n) || g->upper == 0))
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "upper_diag_index is out of bound.");
  g->num_diags = g->upper - g->lower + 1;
  int64_t a = g->m + (g->upper < 0 ? g->upper : 0), bl = g->n - (g->lower > 0 ? g->lower : 0);
  g->max_len = a < bl ? a : bl;
  if (g->max_len < 0) g->max_len = 0;
  return NULL;
}

static weft_status_t *matrix_diag_part(weft_kernel_ctx_t *ctx, diag_version_t v) {
  weft_tensor_view_t x, pad;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char buf[CPU_SHAPE_STR_LEN];
  diag_geom_t g = {0};
  const weft_tensor_view_t *padp = NULL;
  if (v != DIAG_V1) {
    WEFT_RETURN_IF_ERROR(read_k(ctx, 1, &g));
    WEFT_RETURN_IF_ERROR(read_pad(ctx, 2, &x, &pad));
    padp = &pad;
  }
  WEFT_RETURN_IF_ERROR(read_align(ctx, v, &g));
  if (x.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "input must be at least 2-dim, received shape: %s", shape_str(&x, buf));
  WEFT_RETURN_IF_ERROR(diag_bounds(ctx, &x, &g));
  int batch_rank = x.rank - 2;
  int64_t dims[WEFT_MAX_RANK], batch = 1;
  for (int d = 0; d < batch_rank; d++) {
    dims[d] = x.dims[d];
    batch *= x.dims[d];
  }
  int out_rank = batch_rank;
  if (g.num_diags > 1) dims[out_rank++] = g.num_diags;
  dims[out_rank++] = g.max_len;
  int64_t total = batch * g.num_diags * g.max_len;
  weft_status_t *s = NULL;
  int64_t *map = map_new(ctx, total, &s);
  if (s) return s;
  int64_t i = 0;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t k = 0; k < g.num_diags; k++) {
      int64_t d = g.upper - k, len = diag_len(&g, d), off = diag_offset(&g, d);
      for (int64_t p = 0; p < g.max_len; p++, i++) {
        int64_t q = p - off;
        if (q < 0 || q >= len) {
          map[i] = -1;
          continue;
        }
        int64_t r = q + (d < 0 ? -d : 0), c = q + (d > 0 ? d : 0);
        map[i] = (b * g.m + r) * g.n + c;
      }
    }
  if (padp == NULL) {
    /* V1: every position lies on the diagonal. */
    weft_tensor_view_t y;
    s = weft__cpu_output(ctx, 0, x.dtype, out_rank, dims, &y);
    if (s == NULL && y.num_elements > 0) s = apply_map(ctx, &y, &x, map);
    free(map);
    return s;
  }
  return emit_mapped(ctx, &x, out_rank, dims, map, padp);
}

static weft_status_t *matrix_set_diag(weft_kernel_ctx_t *ctx, diag_version_t v) {
  weft_tensor_view_t x, dg, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &dg));
  char b1[CPU_SHAPE_STR_LEN], b2[CPU_SHAPE_STR_LEN];
  diag_geom_t g = {0};
  if (v != DIAG_V1) WEFT_RETURN_IF_ERROR(read_k(ctx, 2, &g));
  WEFT_RETURN_IF_ERROR(read_align(ctx, v, &g));
  if (x.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "input must be at least 2-dim, received shape: %s", shape_str(&x, b1));
  if (dg.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "diagonal must be at least 1-dim, received shape: %s",
                           shape_str(&dg, b1));
  WEFT_RETURN_IF_ERROR(diag_bounds(ctx, &x, &g));
  /* The diagonal's expected shape: input.shape[:-2] + [num_diags (if > 1), max_len]. */
  int want_rank = x.rank - 2 + (g.num_diags > 1 ? 2 : 1);
  bool ok = dg.rank == want_rank;
  for (int d = 0; ok && d < x.rank - 2; d++) ok = dg.dims[d] == x.dims[d];
  if (ok && g.num_diags > 1) ok = dg.dims[dg.rank - 2] == g.num_diags;
  if (ok) ok = dg.dims[dg.rank - 1] == g.max_len;
  if (!ok) {
    if (v == DIAG_V1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "must have diagonal.shape == input.shape[:-2] + "
                             "min(input.shape[-2:]), but received input shape: %s and diagonal "
                             "shape: %s", shape_str(&x, b1), shape_str(&dg, b2));
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "diagonal shape %s does not match input shape %s and k = [%lld, %lld] "
                           "(expected input.shape[:-2] + [%lld, %lld])", shape_str(&dg, b1),
                           shape_str(&x, b2), (long long)g.lower, (long long)g.upper,
                           (long long)g.num_diags, (long long)g.max_len);
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, 0, &x, 0, x.num_elements));
  int64_t batch = x.num_elements / (g.m * g.n);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t k = 0; k < g.num_diags; k++) {
      int64_t d = g.upper - k, len = diag_len(&g, d), off = diag_offset(&g, d);
      for (int64_t q = 0; q < len; q++) {
        int64_t r = q + (d < 0 ? -d : 0), c = q + (d > 0 ? d : 0);
        WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, (b * g.m + r) * g.n + c, &dg,
                                                  (b * g.num_diags + k) * g.max_len + off + q,
                                                  1));
      }
    }
  return NULL;
}

static weft_status_t *k_matrix_diag(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_diag(c, DIAG_V1);
}
static weft_status_t *k_matrix_diag_v2(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_diag(c, DIAG_V2);
}
static weft_status_t *k_matrix_diag_v3(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_diag(c, DIAG_V3);
}
static weft_status_t *k_matrix_diag_part(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_diag_part(c, DIAG_V1);
}
static weft_status_t *k_matrix_diag_part_v2(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_diag_part(c, DIAG_V2);
}
static weft_status_t *k_matrix_diag_part_v3(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_diag_part(c, DIAG_V3);
}
static weft_status_t *k_matrix_set_diag(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_set_diag(c, DIAG_V1);
}
static weft_status_t *k_matrix_set_diag_v2(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_set_diag(c, DIAG_V2);
}
static weft_status_t *k_matrix_set_diag_v3(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return matrix_set_diag(c, DIAG_V3);
}

/* ---------------------------------------------------------------------------------------------
 * MatrixBandPart (matrix_band_part_op.cc): keeps (r, c) where (num_lower < 0 || r - c <=
 * num_lower) && (num_upper < 0 || c - r <= num_upper); zeros elsewhere. */

static weft_status_t *k_matrix_band_part(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, lo_v, up_v, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &lo_v));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &up_v));
  char buf[CPU_SHAPE_STR_LEN];
  if (x.rank < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "input must be at least 2-dim, received shape: %s", shape_str(&x, buf));
  if (lo_v.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_lower must be scalar, got shape %s",
                           shape_str(&lo_v, buf));
  if (up_v.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "num_upper must be scalar, got shape %s",
                           shape_str(&up_v, buf));
  int64_t m = x.dims[x.rank - 2], n = x.dims[x.rank - 1];
  int64_t lo = weft__cpu_index_at(&lo_v, 0), up = weft__cpu_index_at(&up_v, 0);
  if (lo > m)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_lower must be negative or less or equal to number of rows (%lld) "
                           "got: %lld", (long long)m, (long long)lo);
  if (up > n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_upper must be negative or less or equal to number of columns "
                           "(%lld) got: %lld", (long long)n, (long long)up);
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  if (y.num_elements == 0) return NULL;
  WEFT_RETURN_IF_ERROR(weft__cpu_zero(ctx, &y));
  weft_status_t *s = NULL;
  int64_t *map = map_new(ctx, x.num_elements, &s);
  if (s) return s;
  for (int64_t i = 0; i < x.num_elements; i++) {
    int64_t c = i % n, r = (i / n) % m;
    bool keep = (lo < 0 || r - c <= lo) && (up < 0 || c - r <= up);
    map[i] = keep ? i : -1;
  }
  s = apply_map(ctx, &y, &x, map);
  free(map);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * SpaceToBatchND, BatchToSpaceND (spacetobatch_op.cc, batchtospace_op.cc). The input is
 * [batch] + spatial (M dims, one per block_shape entry) + remaining dims. */

enum { MAX_BLOCK = WEFT_MAX_RANK };

typedef struct space_batch {
  weft_tensor_view_t x;
  int m;
  int64_t block[MAX_BLOCK], before[MAX_BLOCK], after[MAX_BLOCK], block_prod;
} space_batch_t;

static weft_status_t *space_batch_read(weft_kernel_ctx_t *ctx, space_batch_t *p, bool to_batch) {
  weft_tensor_view_t bv, pv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &p->x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &bv));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 2, &pv));
  const char *what = to_batch ? "paddings" : "crops";
  char buf[CPU_SHAPE_STR_LEN];
  if (bv.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "block_shape rank should be 1 instead of %d",
                           bv.rank);
  int64_t m = bv.dims[0];
  if (pv.rank != 2 || pv.dims[0] != m || pv.dims[1] != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "%s should have shape [%lld, 2] instead of %s",
                           what, (long long)m, shape_str(&pv, buf));
  if (p->x.rank < 1 + m)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input rank should be >= %lld instead of %d",
                           (long long)(1 + m), p->x.rank);
  p->m = (int)m;
  p->block_prod = 1;
  for (int i = 0; i < p->m; i++) {
    p->block[i] = weft__cpu_index_at(&bv, i);
    p->before[i] = weft__cpu_index_at(&pv, 2 * i);
    p->after[i] = weft__cpu_index_at(&pv, 2 * i + 1);
    if (p->block[i] < 1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "All values in block_shape must be positive, got value, %lld at "
                             "index %d.", (long long)p->block[i], i);
    if (p->before[i] < 0 || p->after[i] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, to_batch ? "Paddings must be non-negative"
                                                                  : "Crops must be non-negative");
    if (__builtin_mul_overflow(p->block_prod, p->block[i], &p->block_prod))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "block_shape product overflows");
  }
  return NULL;
}

/* The output dims past the block dims (x's), the map for the output dims, x's strides, and the
 * output elements per [batch, spatial...] position (inner) and the number of positions (outer). */
static int64_t *space_batch_map(weft_kernel_ctx_t *ctx, const space_batch_t *p, int64_t *dims,
                                int64_t *in_strides, int64_t *inner, int64_t *outer,
                                weft_status_t **s) {
  const weft_tensor_view_t *x = &p->x;
  int rank = x->rank;
  for (int d = 1 + p->m; d < rank; d++) dims[d] = x->dims[d];
  int64_t total = 1;
  *inner = 1;
  for (int d = 0; d < rank; d++) total *= dims[d];
  for (int d = 1 + p->m; d < rank; d++) *inner *= dims[d];
  int64_t *map = map_new(ctx, total, s);
  if (*s) return map;
  weft_pc_contiguous_strides(rank, x->dims, in_strides);
  *outer = total / (*inner > 0 ? *inner : 1);
  return map;
}

static weft_status_t *k_space_to_batch_nd(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  space_batch_t p;
  WEFT_RETURN_IF_ERROR(space_batch_read(ctx, &p, true));
  const weft_tensor_view_t *x = &p.x;
  int64_t dims[WEFT_MAX_RANK];
  int rank = x->rank;
  int64_t batch = x->dims[0];
  dims[0] = batch * p.block_prod;
  for (int i = 0; i < p.m; i++) {
    int64_t padded = x->dims[1 + i] + p.before[i] + p.after[i];
    if (padded % p.block[i] != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "padded_shape[%d]=%lld is not divisible by block_shape[%d]=%lld", i,
                             (long long)padded, i, (long long)p.block[i]);
    dims[1 + i] = padded / p.block[i];
  }
  int64_t in_strides[WEFT_MAX_RANK], c[WEFT_MAX_RANK] = {0}, inner, outer;
  weft_status_t *s = NULL;
  int64_t *map = space_batch_map(ctx, &p, dims, in_strides, &inner, &outer, &s);
  if (s) return s;
  /* c walks the output's [batch, spatial...] dims; each step covers `inner` elements. */
  for (int64_t o = 0; o < outer && inner > 0; o++) {
    int64_t ob = c[0], b = ob % batch, rest = ob / batch, src = b * in_strides[0];
    bool pad = false;
    for (int i = p.m - 1; i >= 0; i--) {
      int64_t off = rest % p.block[i];
      rest /= p.block[i];
      int64_t pos = c[1 + i] * p.block[i] + off - p.before[i];
      if (pos < 0 || pos >= x->dims[1 + i]) pad = true;
      src += pos * in_strides[1 + i];
    }
    for (int64_t k = 0; k < inner; k++) map[o * inner + k] = pad ? -1 : src + k;
    next_coord(1 + p.m, dims, c);
  }
  weft_tensor_view_t y;
  s = weft__cpu_output(ctx, 0, x->dtype, rank, dims, &y);
  if (s == NULL) s = weft__cpu_zero(ctx, &y);
  if (s == NULL && y.num_elements > 0) s = apply_map(ctx, &y, x, map);
  free(map);
  return s;
}

static weft_status_t *k_batch_to_space_nd(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  space_batch_t p;
  WEFT_RETURN_IF_ERROR(space_batch_read(ctx, &p, false));
  const weft_tensor_view_t *x = &p.x;
  int rank = x->rank;
  int64_t dims[WEFT_MAX_RANK];
  if (x->dims[0] % p.block_prod != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input batch dimension (%lld) is not divisible by product of block "
                           "sizes (%lld)", (long long)x->dims[0], (long long)p.block_prod);
  int64_t batch = x->dims[0] / p.block_prod;
  dims[0] = batch;
  for (int i = 0; i < p.m; i++) {
    int64_t full = x->dims[1 + i] * p.block[i];
    int64_t size = full - p.before[i] - p.after[i];
    if (size < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Cropped size must be non-negative: start: %lld end: %lld size %lld",
                             (long long)p.before[i], (long long)p.after[i], (long long)full);
    dims[1 + i] = size;
  }
  int64_t in_strides[WEFT_MAX_RANK], c[WEFT_MAX_RANK] = {0}, inner, outer;
  weft_status_t *s = NULL;
  int64_t *map = space_batch_map(ctx, &p, dims, in_strides, &inner, &outer, &s);
  if (s) return s;
  for (int64_t o = 0; o < outer && inner > 0; o++) {
    int64_t block_index = 0, src = 0;
    for (int i = 0; i < p.m; i++) {
      int64_t u = c[1 + i] + p.before[i];
      block_index = block_index * p.block[i] + u % p.block[i];
      src += (u / p.block[i]) * in_strides[1 + i];
    }
    src += (block_index * batch + c[0]) * in_strides[0];
    for (int64_t k = 0; k < inner; k++) map[o * inner + k] = src + k;
    next_coord(1 + p.m, dims, c);
  }
  return emit_mapped(ctx, x, rank, dims, map, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * SpaceToDepth, DepthToSpace (spacetodepth_op.cc, depthtospace_op.cc): NHWC on the CPU, like
 * TensorFlow's CPU kernels. */

static weft_status_t *depth_space(weft_kernel_ctx_t *ctx, bool to_depth) {
  weft_tensor_view_t x;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  int64_t bs = weft__cpu_attr_int(ctx, "block_size", 2);
  size_t len = 0;
  const char *val = NULL;
  char fmt[16] = "NHWC";
  weft_status_t *st = H->attr_string(H->kernel_attrs(ctx), "data_format", &val, &len);
  if (st == NULL && val != NULL && len < sizeof fmt) {
    memcpy(fmt, val, len);
    fmt[len] = '\0';
  }
  if (st) H->status_free(st);
  if (strcmp(fmt, "NHWC") != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Only NHWC data_format supported on CPU. Got %s", fmt);
  if (bs < 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Block size should be > 1, but was: %lld",
                           (long long)bs);
  if (x.rank != 4)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input rank should be: 4 instead of: %d",
                           x.rank);
  int64_t n = x.dims[0], h = x.dims[1], w = x.dims[2], c = x.dims[3], dims[4];
  if (to_depth) {
    if (h % bs != 0 || w % bs != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Image width %lld and height %lld should be divisible by "
                             "block_size: %lld", (long long)w, (long long)h, (long long)bs);
    dims[0] = n; dims[1] = h / bs; dims[2] = w / bs; dims[3] = c * bs * bs;
  } else {
    if (c % (bs * bs) != 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "Input depth dimension %lld should be divisible by: %lld",
                             (long long)c, (long long)(bs * bs));
    dims[0] = n; dims[1] = h * bs; dims[2] = w * bs; dims[3] = c / (bs * bs);
  }
  int64_t total = dims[0] * dims[1] * dims[2] * dims[3];
  weft_status_t *s = NULL;
  int64_t *map = map_new(ctx, total, &s);
  if (s) return s;
  int64_t co[4] = {0};
  for (int64_t i = 0; i < total; i++) {
    int64_t b = co[0], oh = co[1], ow = co[2], od = co[3];
    if (to_depth) {
      /* out[b, oh, ow, (bh * bs + bw) * c + ic] = in[b, oh * bs + bh, ow * bs + bw, ic] */
      int64_t ic = od % c, bw = (od / c) % bs, bh = od / c / bs;
      map[i] = ((b * h + oh * bs + bh) * w + ow * bs + bw) * c + ic;
    } else {
      int64_t ih = oh / bs, bh = oh % bs, iw = ow / bs, bw = ow % bs;
      map[i] = ((b * h + ih) * w + iw) * c + (bh * bs + bw) * dims[3] + od;
    }
    next_coord(4, dims, co);
  }
  return emit_mapped(ctx, &x, 4, dims, map, NULL);
}

static weft_status_t *k_space_to_depth(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return depth_space(c, true);
}
static weft_status_t *k_depth_to_space(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return depth_space(c, false);
}

/* ---------------------------------------------------------------------------------------------
 * Ordering of elements by value (cpu_internal.h: weft__cpu_cmp_elems). */

int weft__cpu_cmp_elems(const weft_tensor_view_t *a, int64_t i, const weft_tensor_view_t *b,
                        int64_t j, bool *nan) {
  *nan = false;
  switch (a->dtype) {
#define INT_CMP(dt, type)                                                          \
  case dt: {                                                                       \
    type x = ((const type *)a->data)[i], y = ((const type *)b->data)[j];           \
    return x < y ? -1 : (x > y ? 1 : 0);                                           \
  }
    INT_CMP(WEFT_DT_INT8, int8_t)
    INT_CMP(WEFT_DT_INT16, int16_t)
    INT_CMP(WEFT_DT_INT32, int32_t)
    INT_CMP(WEFT_DT_INT64, int64_t)
    INT_CMP(WEFT_DT_UINT8, uint8_t)
    INT_CMP(WEFT_DT_UINT16, uint16_t)
    INT_CMP(WEFT_DT_UINT32, uint32_t)
    INT_CMP(WEFT_DT_UINT64, uint64_t)
    INT_CMP(WEFT_DT_BOOL, uint8_t)
#undef INT_CMP
    case WEFT_DT_STRING: {
      const weft_string_t *x = (const weft_string_t *)a->data + i;
      const weft_string_t *y = (const weft_string_t *)b->data + j;
      size_t n = x->len < y->len ? x->len : y->len;
      int r = n > 0 ? memcmp(x->data, y->data, n) : 0;
      if (r != 0) return r < 0 ? -1 : 1;
      return x->len < y->len ? -1 : (x->len > y->len ? 1 : 0);
    }
    default: {
      double x = weft__cpu_get_double(a, i), y = weft__cpu_get_double(b, j);
      if (isnan(x) || isnan(y)) {
        *nan = true;
        return isnan(x) ? (isnan(y) ? 0 : 1) : -1; /* NaN after every number */
      }
      return x < y ? -1 : (x > y ? 1 : 0);
    }
  }
}

static int cmp_values(const weft_tensor_view_t *v, int64_t i, int64_t j, bool *nan) {
  return weft__cpu_cmp_elems(v, i, v, j, nan);
}

/* A stable merge sort of idx[0..n) (element indices) with a comparator. */
typedef int (*idx_cmp_fn)(const void *arg, int64_t a, int64_t b);

static void merge_sort(int64_t *idx, int64_t *tmp, int64_t n, idx_cmp_fn cmp, const void *arg) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(idx, tmp, h, cmp, arg);
  merge_sort(idx + h, tmp, n - h, cmp, arg);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp(arg, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
}

/* Ascending by value; NaNs last, in index order (so that each NaN stays its own value). */
static int cmp_ascending(const void *arg, int64_t a, int64_t b) {
  bool nan;
  int r = cmp_values(arg, a, b, &nan);
  if (nan && r == 0) return a < b ? -1 : (a > b ? 1 : 0);
  return r;
}

void weft__cpu_sort_ascending(const weft_tensor_view_t *v, int64_t *idx, int64_t *tmp, int64_t n) {
  merge_sort(idx, tmp, n, cmp_ascending, v);
}

/* TopK's order: larger first; NaN counts as larger than every number (TensorFlow's CPU kernel
 * orders with std::greater on the values, ties by the lower index: the sort is stable). */
static int cmp_descending(const void *arg, int64_t a, int64_t b) {
  bool nan;
  int r = cmp_values(arg, a, b, &nan);
  if (nan && r == 0) return 0;
  return -r;
}

/* ---------------------------------------------------------------------------------------------
 * TopKV2 with sorted = false returns the k largest in the order TensorFlow's CPU kernel leaves
 * them: that of its gtl::TopN heap (tensorflow/core/lib/gtl/top_n.h) over the column indices,
 * built with the C++ library's make_heap / push_heap / pop_heap. These are re-done here step for
 * step so that the order is the same. `greater(a, b)`: a's value is larger, or equal with a
 * lower index (TensorFlow's stable comparator; NaN compares equal to everything). */

typedef struct topn {
  const weft_tensor_view_t *x;
  int64_t row; /* element index of column 0 */
} topn_t;

static bool topn_greater(const topn_t *t, int64_t a, int64_t b) {
  bool nan;
  int r = cmp_values(t->x, t->row + a, t->row + b, &nan);
  if (nan) r = 0;
  if (r != 0) return r > 0;
  return a < b;
}

static void heap_push_up(const topn_t *t, int64_t *h, int64_t hole, int64_t top, int64_t value) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && topn_greater(t, h[parent], value)) {
    h[hole] = h[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  h[hole] = value;
}

static void heap_adjust(const topn_t *t, int64_t *h, int64_t hole, int64_t len, int64_t value) {
  int64_t top = hole, child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (topn_greater(t, h[child], h[child - 1])) child--;
    h[hole] = h[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    h[hole] = h[child - 1];
    hole = child - 1;
  }
  heap_push_up(t, h, hole, top, value);
}

static void heap_make(const topn_t *t, int64_t *h, int64_t len) {
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; parent--) {
    heap_adjust(t, h, parent, len, h[parent]);
    if (parent == 0) return;
  }
}

static void heap_pop(const topn_t *t, int64_t *h, int64_t len) {
  if (len < 2) return;
  int64_t value = h[len - 1];
  h[len - 1] = h[0];
  heap_adjust(t, h, 0, len - 1, value);
}

/* The first k of h[0..k] (room for k + 1) hold TopN's unsorted contents after pushing columns
 * 0..cols-1 (k < cols). */
static void topn_unsorted(const topn_t *t, int64_t k, int64_t cols, int64_t *h) {
  int64_t size = 0;
  bool heap = false;
  for (int64_t c = 0; c < cols; c++) {
    if (!heap) {
      /* UNORDERED: appended; the BOTTOM_KNOWN state is never entered by TopK. */
      h[size++] = c;
      if (size == k + 1) {
        heap_make(t, h, size);
        heap_pop(t, h, size);
        heap = true;
      }
    } else if (topn_greater(t, c, h[0])) {
      h[k] = c;
      heap_push_up(t, h, k, 0, h[k]);
      heap_pop(t, h, k + 1);
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * NthElement (nth_element_op.cc), TopKV2 and TopK (topk_op.cc) */

static weft_status_t *k_nth_element(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, nv, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &nv));
  char buf[CPU_SHAPE_STR_LEN];
  if (nv.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "N must be scalar, got shape %s",
                           shape_str(&nv, buf));
  int64_t n = weft__cpu_index_at(&nv, 0);
  if (n < 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Need n >= 0, got %lld",
                                    (long long)n);
  if (x.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input must be >= 1-D, got shape %s",
                           shape_str(&x, buf));
  int64_t cols = x.dims[x.rank - 1];
  if (cols <= n)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input must have at least n+1 columns");
  if (weft__cpu_attr_bool(ctx, "reverse", false)) n = cols - n - 1;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank - 1, x.dims, &y));
  if (y.num_elements == 0) return NULL;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)cols * 2);
  if (idx == NULL) return oom(ctx);
  for (int64_t r = 0; r < y.num_elements; r++) {
    for (int64_t k = 0; k < cols; k++) idx[k] = r * cols + k;
    merge_sort(idx, idx + cols, cols, cmp_ascending, &x);
    weft__cpu_copy_elems(ctx, &y, r, &x, idx[n], 1);
  }
  free(idx);
  return NULL;
}

/* TopKV2 and TopK (k an attr, int32 indices) after reading k. */
static weft_status_t *top_k(weft_kernel_ctx_t *ctx, int64_t k, weft_dtype_t it) {
  weft_tensor_view_t x, vals, inds;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  char buf[CPU_SHAPE_STR_LEN];
  if (k < 0) return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Need k >= 0, got %lld",
                                    (long long)k);
  if (x.rank < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "input must be >= 1-D, got shape %s",
                           shape_str(&x, buf));
  int64_t cols = x.dims[x.rank - 1];
  if (cols < k)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "input must have at least k columns. Had %lld, needed %lld",
                           (long long)cols, (long long)k);
  if (it == WEFT_DT_INT16 && cols > INT16_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_cols (%lld) does not fit index_type int16", (long long)cols);
  if (it == WEFT_DT_INT32 && cols > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "num_cols (%lld) does not fit index_type int32", (long long)cols);
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, x.dims, sizeof(int64_t) * (size_t)x.rank);
  dims[x.rank - 1] = k;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, dims, &vals));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 1, it, x.rank, dims, &inds));
  if (vals.num_elements == 0) return NULL;
  int64_t rows = vals.num_elements / k;
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)cols * 2);
  if (idx == NULL) return oom(ctx);
  bool sorted = weft__cpu_attr_bool(ctx, "sorted", true);
  for (int64_t r = 0; r < rows; r++) {
    if (!sorted && k > 1 && k < cols) {
      topn_t t = {&x, r * cols};
      topn_unsorted(&t, k, cols, idx);
      for (int64_t j = 0; j < k; j++) idx[j] += r * cols;
    } else {
      for (int64_t c = 0; c < cols; c++) idx[c] = r * cols + c;
      merge_sort(idx, idx + cols, cols, cmp_descending, &x);
    }
    for (int64_t j = 0; j < k; j++) {
      weft__cpu_copy_elems(ctx, &vals, r * k + j, &x, idx[j], 1);
      int64_t col = idx[j] - r * cols;
      if (it == WEFT_DT_INT16) ((int16_t *)inds.data)[r * k + j] = (int16_t)col;
      else if (it == WEFT_DT_INT32) ((int32_t *)inds.data)[r * k + j] = (int32_t)col;
      else ((int64_t *)inds.data)[r * k + j] = col;
    }
  }
  free(idx);
  return NULL;
}

static weft_status_t *k_top_k_v2(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t kv;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &kv));
  char buf[CPU_SHAPE_STR_LEN];
  if (kv.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "k must be 0-D, got shape %s",
                           shape_str(&kv, buf));
  weft_dtype_t it = WEFT_DT_INT32;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "index_type", WEFT_DT_INT32, &it));
  return top_k(ctx, weft__cpu_index_at(&kv, 0), it);
}

static weft_status_t *k_top_k(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return top_k(ctx, weft__cpu_attr_int(ctx, "k", -1), WEFT_DT_INT32);
}

/* ---------------------------------------------------------------------------------------------
 * Where (where_op.cc): the coordinates of the true (non-zero) elements, row-major. */

static bool is_true(const weft_tensor_view_t *v, int64_t i) {
  switch (v->dtype) {
    case WEFT_DT_BOOL: case WEFT_DT_INT8: case WEFT_DT_UINT8:
      return ((const uint8_t *)v->data)[i] != 0;
    case WEFT_DT_INT16: case WEFT_DT_UINT16:
      return ((const uint16_t *)v->data)[i] != 0;
    case WEFT_DT_INT32: case WEFT_DT_UINT32:
      return ((const uint32_t *)v->data)[i] != 0;
    case WEFT_DT_INT64: case WEFT_DT_UINT64:
      return ((const uint64_t *)v->data)[i] != 0;
    default:
      return weft__cpu_get_double(v, i) != 0.0; /* NaN is true; -0 is false */
  }
}

static weft_status_t *k_where(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  int64_t count = 0;
  for (int64_t i = 0; i < x.num_elements; i++) count += is_true(&x, i);
  int64_t dims[2] = {count, x.rank};
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_INT64, 2, dims, &y));
  if (y.num_elements == 0) return NULL;
  int64_t *out = y.data, c[WEFT_MAX_RANK] = {0}, k = 0;
  for (int64_t i = 0; i < x.num_elements; i++) {
    if (is_true(&x, i)) {
      memcpy(out + k * x.rank, c, sizeof(int64_t) * (size_t)x.rank);
      k++;
    }
    next_coord(x.rank, x.dims, c);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Unique, UniqueWithCounts (unique_op.cc): y holds the distinct values in order of first
 * appearance, idx[i] the position of x[i] in y, count[j] how often y[j] occurs. Values compare
 * as TensorFlow's hash map does: 0.0 equals -0.0, a NaN equals nothing. */

static weft_status_t *write_index(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *t, int64_t i,
                                  int64_t v) {
  (void)ctx;
  if (t->dtype == WEFT_DT_INT32) ((int32_t *)t->data)[i] = (int32_t)v;
  else ((int64_t *)t->data)[i] = v;
  return NULL;
}

static weft_status_t *unique(weft_kernel_ctx_t *ctx, bool counts) {
  weft_tensor_view_t x, y, idx_t, cnt_t;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "unique expects a 1D vector.");
  weft_dtype_t it = WEFT_DT_INT32;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "out_idx", WEFT_DT_INT32, &it));
  int64_t n = x.num_elements;
  if (it == WEFT_DT_INT32 && n > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "unique does not support input tensors larger than int32 max");
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(4 * n + 1));
  if (order == NULL) return oom(ctx);
  int64_t *tmp = order + n, *group = order + 2 * n, *first = order + 3 * n;
  for (int64_t i = 0; i < n; i++) order[i] = i;
  merge_sort(order, tmp, n, cmp_ascending, &x);
  /* Groups of equal values; the stable sort puts each group's first appearance first. */
  int64_t n_groups = 0;
  for (int64_t i = 0; i < n; i++) {
    bool nan = false;
    bool same = i > 0 && cmp_values(&x, order[i - 1], order[i], &nan) == 0 && !nan;
    if (!same) first[n_groups++] = order[i];
    group[order[i]] = n_groups - 1;
  }
  /* Number the groups by first appearance: sort the first indices. */
  int64_t *rank_of = tmp; /* group -> id */
  int64_t *by_first = malloc(sizeof(int64_t) * (size_t)(2 * n_groups + 1));
  if (by_first == NULL) {
    free(order);
    return oom(ctx);
  }
  for (int64_t g = 0; g < n_groups; g++) by_first[g] = g;
  /* first[] is a permutation of distinct indices: sort group numbers by it (insertion into an
   * array indexed by position, then a scan). */
  int64_t *slot = malloc(sizeof(int64_t) * (size_t)(n + 1));
  if (slot == NULL) {
    free(order);
    free(by_first);
    return oom(ctx);
  }
  for (int64_t i = 0; i < n; i++) slot[i] = -1;
  for (int64_t g = 0; g < n_groups; g++) slot[first[g]] = g;
  int64_t id = 0;
  for (int64_t i = 0; i < n; i++)
    if (slot[i] >= 0) {
      rank_of[slot[i]] = id;
      by_first[id++] = slot[i];
    }
  free(slot);
  int64_t ydim = n_groups;
  weft_status_t *s = weft__cpu_output(ctx, 0, x.dtype, 1, &ydim, &y);
  if (s == NULL) s = weft__cpu_output(ctx, 1, it, 1, &n, &idx_t);
  if (s == NULL && counts) s = weft__cpu_output(ctx, 2, it, 1, &ydim, &cnt_t);
  for (int64_t j = 0; s == NULL && j < n_groups; j++)
    s = weft__cpu_copy_elems(ctx, &y, j, &x, first[by_first[j]], 1);
  for (int64_t i = 0; s == NULL && i < n; i++) s = write_index(ctx, &idx_t, i, rank_of[group[i]]);
  if (s == NULL && counts) {
    for (int64_t j = 0; j < n_groups; j++) write_index(ctx, &cnt_t, j, 0);
    for (int64_t i = 0; i < n; i++) {
      int64_t j = rank_of[group[i]];
      int64_t c = it == WEFT_DT_INT32 ? ((int32_t *)cnt_t.data)[j] : ((int64_t *)cnt_t.data)[j];
      write_index(ctx, &cnt_t, j, c + 1);
    }
  }
  free(by_first);
  free(order);
  return s;
}

static weft_status_t *k_unique(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return unique(c, false);
}
static weft_status_t *k_unique_with_counts(weft_kernel_ctx_t *c, void *s) {
  (void)s;
  return unique(c, true);
}

/* ---------------------------------------------------------------------------------------------
 * InvertPermutation (array_ops: InvertPermutationOp): y[x[i]] = i. */

static weft_status_t *k_invert_permutation(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (x.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "invert_permutation expects a 1D vector.");
  int64_t n = x.num_elements;
  if (n > INT32_MAX)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "permutation of nonnegative int32s must have <= int32 max elements");
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, 1, &n, &y));
  for (int64_t i = 0; i < n; i++) write_index(ctx, &y, i, -1);
  for (int64_t i = 0; i < n; i++) {
    int64_t d = weft__cpu_index_at(&x, i);
    if (d < 0 || d >= n)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%lld is not between 0 and %lld",
                             (long long)d, (long long)n);
    if (weft__cpu_index_at(&y, d) != -1)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%lld is duplicated in the input.",
                             (long long)d);
    write_index(ctx, &y, d, i);
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * ParallelConcat (TensorFlow rewrites it into _ParallelConcatStart/_ParallelConcatUpdate): the
 * inputs, each of shape [1, ...], stacked along dim 0 into the attr `shape`. */

static weft_status_t *k_parallel_concat(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_inputs(ctx);
  weft_tensor_view_t first, v, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &first));
  char b1[CPU_SHAPE_STR_LEN], b2[CPU_SHAPE_STR_LEN];
  if (first.rank < 1 || first.dims[0] != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "values[0] must have size 1 in its first dimension, got shape %s",
                           shape_str(&first, b1));
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, first.dims, sizeof(int64_t) * (size_t)first.rank);
  dims[0] = n;
  for (int i = 1; i < n; i++) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i, &v));
    if (!weft_pc_same_shape(&v, &first))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "values[%d] has shape %s, but values[0] has shape %s", i,
                             shape_str(&v, b1), shape_str(&first, b2));
  }
  /* The output is allocated with the attr shape: the inputs must fill it exactly. */
  int shape_rank = -1;
  int64_t shape_dims[WEFT_MAX_RANK];
  weft_status_t *st = H->attr_shape(H->kernel_attrs(ctx), "shape", &shape_rank, shape_dims);
  if (st) {
    H->status_free(st);
    shape_rank = -1;
  }
  bool match = shape_rank < 0 || shape_rank == first.rank;
  for (int d = 0; match && shape_rank > 0 && d < shape_rank; d++)
    match = shape_dims[d] < 0 || shape_dims[d] == dims[d];
  if (!match)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "the %d values of shape %s do not make the attr shape %s", n,
                           shape_str(&first, b1),
                           weft__cpu_shape_str(shape_rank, shape_dims, b2, sizeof b2));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, first.dtype, first.rank, dims, &y));
  int64_t slice = first.num_elements;
  for (int i = 0; i < n; i++) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, i, &v));
    WEFT_RETURN_IF_ERROR(weft__cpu_copy_elems(ctx, &y, (int64_t)i * slice, &v, 0, slice));
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * DeepCopy: a new buffer with the input's values. Empty: a tensor of the given shape, zeroed
 * (TensorFlow leaves it uninitialised unless init; zeros are one of its allowed contents). */

static weft_status_t *k_deep_copy(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  return weft__cpu_copy_elems(ctx, &y, 0, &x, 0, x.num_elements);
}

static weft_status_t *k_empty(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t sv, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &sv));
  char buf[CPU_SHAPE_STR_LEN];
  if (sv.rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "shape must be a vector of int32, got shape %s", shape_str(&sv, buf));
  if (sv.num_elements > WEFT_MAX_RANK)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "shape has rank %lld, above the maximum %d",
                           (long long)sv.num_elements, WEFT_MAX_RANK);
  int64_t dims[WEFT_MAX_RANK];
  for (int64_t i = 0; i < sv.num_elements; i++) {
    dims[i] = weft__cpu_index_at(&sv, i);
    if (dims[i] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Dimension %lld must be >= 0",
                             (long long)dims[i]);
  }
  weft_dtype_t dt = WEFT_DT_FLOAT;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "dtype", WEFT_DT_FLOAT, &dt));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, dt, (int)sv.num_elements, dims, &y));
  return weft__cpu_zero(ctx, &y);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__cpu_register_array_extra(const weft_registrar_t *reg) {
  static const char *const hm_axis[] = {"axis", NULL};
  static const char *const hm_seq[] = {"seq_lengths", NULL};
  static const char *const hm_roll[] = {"shift", "axis", NULL};
  static const char *const hm_diag[] = {"k", "num_rows", "num_cols", NULL};
  static const char *const hm_k[] = {"k", NULL};
  static const char *const hm_band[] = {"num_lower", "num_upper", NULL};
  static const char *const hm_s2b[] = {"block_shape", "paddings", NULL};
  static const char *const hm_b2s[] = {"block_shape", "crops", NULL};
  static const char *const hm_n[] = {"n", NULL};
  static const char *const hm_shape[] = {"shape", NULL};
  const weft_cpu_kernel_spec_t kernels[] = {
      {.op = "ReverseV2", .compute = k_reverse_v2, .host_memory = hm_axis},
      {.op = "ReverseSequence", .compute = k_reverse_sequence, .host_memory = hm_seq},
      {.op = "Roll", .compute = k_roll, .host_memory = hm_roll},
      {.op = "MatrixDiag", .compute = k_matrix_diag},
      {.op = "MatrixDiagV2", .compute = k_matrix_diag_v2, .host_memory = hm_diag},
      {.op = "MatrixDiagV3", .compute = k_matrix_diag_v3, .host_memory = hm_diag},
      {.op = "MatrixDiagPart", .compute = k_matrix_diag_part},
      {.op = "MatrixDiagPartV2", .compute = k_matrix_diag_part_v2, .host_memory = hm_k},
      {.op = "MatrixDiagPartV3", .compute = k_matrix_diag_part_v3, .host_memory = hm_k},
      {.op = "MatrixSetDiag", .compute = k_matrix_set_diag},
      {.op = "MatrixSetDiagV2", .compute = k_matrix_set_diag_v2, .host_memory = hm_k},
      {.op = "MatrixSetDiagV3", .compute = k_matrix_set_diag_v3, .host_memory = hm_k},
      {.op = "MatrixBandPart", .compute = k_matrix_band_part, .host_memory = hm_band},
      {.op = "SpaceToBatchND", .compute = k_space_to_batch_nd, .host_memory = hm_s2b},
      {.op = "BatchToSpaceND", .compute = k_batch_to_space_nd, .host_memory = hm_b2s},
      {.op = "SpaceToDepth", .compute = k_space_to_depth},
      {.op = "DepthToSpace", .compute = k_depth_to_space},
      {.op = "Where", .compute = k_where},
      {.op = "NthElement", .compute = k_nth_element, .host_memory = hm_n},
      {.op = "TopKV2", .compute = k_top_k_v2, .host_memory = hm_k},
      {.op = "TopK", .compute = k_top_k},
      {.op = "Unique", .compute = k_unique},
      {.op = "UniqueWithCounts", .compute = k_unique_with_counts},
      {.op = "InvertPermutation", .compute = k_invert_permutation},
      {.op = "ParallelConcat", .compute = k_parallel_concat},
      {.op = "DeepCopy", .compute = k_deep_copy},
      {.op = "Empty", .compute = k_empty, .host_memory = hm_shape},
  };
  return weft__cpu_register_specs(reg, kernels, sizeof kernels / sizeof kernels[0]);
}
