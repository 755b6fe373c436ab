/* cpu_shape.c: kernels about shapes: the CPU registrations of Reshape, ExpandDims, Squeeze (which
 * forward the input buffer under a new shape) and Shape, ShapeN, Size, Rank, whose kernels every
 * plugin shares (plugins/common/shape_kernels.c); and BroadcastGradientArgs, BroadcastArgs and
 * ConcatOffset. */
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* ---------------------------------------------------------------------------------------------
 * BroadcastGradientArgs(s0, s1) -> (r0, r1): the output dims each input was broadcast along,
 * which its gradient must be summed over. Like TensorFlow, identical shapes need no reduction,
 * and otherwise every dim where an input has size 1 is listed (also where both have size 1).
 * BroadcastArgs(s0, s1) -> r0: the broadcast shape. */

enum { MAX_SHAPE_RANK = 64 };

/* The two shape vectors, s0 in a[0..na) and s1 in b[0..nb), and their broadcast: out[0..rank),
 * with the dims where each is 1 (padded on the left) in r0[0..n0) and r1[0..n1). */
typedef struct shape_pair {
  weft_dtype_t dtype; /* of s0, and so of the outputs */
  int64_t a[MAX_SHAPE_RANK], b[MAX_SHAPE_RANK], na, nb;
  int64_t out[MAX_SHAPE_RANK], rank;
  int64_t r0[MAX_SHAPE_RANK], r1[MAX_SHAPE_RANK], n0, n1;
} shape_pair_t;

static weft_status_t *broadcast_shape_pair(weft_kernel_ctx_t *ctx, shape_pair_t *p) {
  weft_tensor_view_t v0, v1;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &v0));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &v1));
  memset(p, 0, sizeof *p);
  p->dtype = v0.dtype;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &v0, "s0", p->a, MAX_SHAPE_RANK, &p->na));
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &v1, "s1", p->b, MAX_SHAPE_RANK, &p->nb));
  p->rank = p->na > p->nb ? p->na : p->nb;
  for (int64_t d = 0; d < p->rank; d++) {
    int64_t x = d < p->rank - p->na ? 1 : p->a[d - (p->rank - p->na)];
    int64_t y = d < p->rank - p->nb ? 1 : p->b[d - (p->rank - p->nb)];
    if (x != y && x != 1 && y != 1) {
      char s0[CPU_SHAPE_STR_LEN], s1[CPU_SHAPE_STR_LEN];
      int la = (int)(p->na < 16 ? p->na : 16), lb = (int)(p->nb < 16 ? p->nb : 16);
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                             weft__cpu_shape_str(la, p->a, s0, sizeof s0),
                             weft__cpu_shape_str(lb, p->b, s1, sizeof s1));
    }
    p->out[d] = x == 1 ? y : x;
    if (x == 1) p->r0[p->n0++] = d;
    if (y == 1) p->r1[p->n1++] = d;
  }
  return NULL;
}

static weft_status_t *k_bcast_grad_args(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  shape_pair_t p;
  WEFT_RETURN_IF_ERROR(broadcast_shape_pair(ctx, &p));
  if (p.na == p.nb && (p.na == 0 || memcmp(p.a, p.b, sizeof(int64_t) * (size_t)p.na) == 0))
    p.n0 = p.n1 = 0; /* identical shapes: nothing to sum over */
  WEFT_RETURN_IF_ERROR(weft_pc_write_ints(ctx, 0, p.dtype, 1, p.r0, p.n0));
  return weft_pc_write_ints(ctx, 1, p.dtype, 1, p.r1, p.n1);
}

static weft_status_t *k_bcast_args(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  shape_pair_t p;
  WEFT_RETURN_IF_ERROR(broadcast_shape_pair(ctx, &p));
  return weft_pc_write_ints(ctx, 0, p.dtype, 1, p.out, p.rank);
}

/* ---------------------------------------------------------------------------------------------
 * ConcatOffset(concat_dim, shape_0..shape_n-1) -> offset_0..offset_n-1: where each input of a
 * concat along concat_dim starts in its output. The shapes must agree but along concat_dim. */

static weft_status_t *k_concat_offset(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_inputs(ctx) - 1;
  weft_tensor_view_t dv, v0, vi;
  int64_t cdim = 0, count = 0, first[MAX_SHAPE_RANK], shape[MAX_SHAPE_RANK], off[MAX_SHAPE_RANK];
  char s0[CPU_SHAPE_STR_LEN], si[CPU_SHAPE_STR_LEN];
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &dv));
  if (dv.rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Concat dim tensor should be a scalar integer, but got shape %s",
                           weft__cpu_shape_str(dv.rank, dv.dims, s0, sizeof s0));
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &dv, "concat_dim", &cdim, 1, &count));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &v0));
  int64_t rank = 0;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &v0, "shape", first, MAX_SHAPE_RANK, &rank));
  /* Negative axes count from the end, as TensorFlow 2's kernel takes them. */
  int64_t axis = cdim < 0 ? cdim + rank : cdim;
  if (axis < 0 || axis >= rank)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Concat dim is out of range: %lld vs. %lld",
                           (long long)cdim, (long long)rank);
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1 + i, &vi));
    int64_t len = 0;
    WEFT_RETURN_IF_ERROR(weft__cpu_read_indices(ctx, &vi, "shape", shape, MAX_SHAPE_RANK, &len));
    if (vi.rank != 1 || len != rank)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "input %d should contain %lld elements, but got %lld", i,
                             (long long)rank, (long long)len);
    for (int64_t d = 0; d < rank; d++) {
      off[d] = d == axis ? at : 0;
      if (d == axis || shape[d] == first[d]) continue;
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "All dimensions except %lld must match. Input %d has shape %s and "
                             "doesn't match input 0 with shape %s.",
                             (long long)axis, i,
                             weft__cpu_shape_str((int)len, shape, si, sizeof si),
                             weft__cpu_shape_str((int)rank, first, s0, sizeof s0));
    }
    at += shape[axis];
    WEFT_RETURN_IF_ERROR(weft_pc_write_ints(ctx, i, vi.dtype, 1, off, rank));
  }
  return NULL;
}

weft_status_t *weft__cpu_register_shape(const weft_registrar_t *reg) {
  static const char *const hm_reshape[] = {"shape", NULL};
  static const char *const hm_expand[] = {"dim", NULL};
  static const char *const hm_out[] = {"output", NULL};
  static const char *const hm_bga[] = {"s0", "s1", "r0", "r1", NULL};
  static const char *const hm_ba[] = {"s0", "s1", "r0", NULL};
  static const char *const hm_co[] = {"concat_dim", "shape", "offset", NULL};
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "Reshape", .compute = weft_pc_k_reshape, .host_memory = hm_reshape},
      {.op = "ExpandDims", .compute = weft_pc_k_expand_dims, .host_memory = hm_expand},
      {.op = "Squeeze", .compute = weft_pc_k_squeeze},
      {.op = "Shape", .compute = weft_pc_k_shape, .host_memory = hm_out},
      {.op = "ShapeN", .compute = weft_pc_k_shape, .host_memory = hm_out},
      {.op = "Size", .compute = weft_pc_k_size, .host_memory = hm_out},
      {.op = "Rank", .compute = weft_pc_k_rank, .host_memory = hm_out},
      {.op = "BroadcastGradientArgs", .compute = k_bcast_grad_args, .host_memory = hm_bga},
      {.op = "BroadcastArgs", .compute = k_bcast_args, .host_memory = hm_ba},
      {.op = "ConcatOffset", .compute = k_concat_offset, .host_memory = hm_co},
  };
  return weft__cpu_register_specs(reg, specs, sizeof specs / sizeof specs[0]);
}
