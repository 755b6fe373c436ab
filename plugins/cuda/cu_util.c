/* cu_util.c: the CUDA steps the kernels share, on top of plugins/common (which gives them their
 * shape rules, argument checks and error wording): the device and stream of an invocation, launch
 * results turned into statuses naming the node and device, the kernels' dtype codes and
 * broadcast geometry, strided copies collapsed to as few dims as the copy kernel needs, fills,
 * and kernel registration. */
#include <string.h>

#include "cu_internal.h"

#define H weft_pc_host

const weft_dtype_t weft__cu_types_float[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE};
const weft_dtype_t weft__cu_types_num[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                           WEFT_DT_INT64};
const weft_dtype_t weft__cu_types_all[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32,
                                           WEFT_DT_INT64, WEFT_DT_BOOL};

weft_cu_device_t *weft__cu_ctx_device(weft_kernel_ctx_t *ctx, cudaStream_t *stream) {
  weft_cu_device_t *dev = H->kernel_device(ctx);
  cudaStream_t s = weft__cu_enter(dev);
  if (stream != NULL) *stream = s;
  return dev;
}

weft_status_t *weft__cu_scratch(weft_kernel_ctx_t *ctx, size_t nbytes, void **out) {
  *out = NULL;
  if (nbytes == 0) return NULL;
  return H->kernel_scratch(ctx, nbytes, out);
}

weft_status_t *weft__cu_named(weft_kernel_ctx_t *ctx, weft_status_t *s) {
  if (s == NULL) return NULL;
  weft_status_t *named = weft_pc_error(ctx, H->status_code(s), "%s", H->status_message(s));
  H->status_free(s);
  return named;
}

weft_status_t *weft__cu_launched(weft_kernel_ctx_t *ctx, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return NULL;
  return weft__cu_named(ctx, weft__cu_check(H->kernel_device(ctx), e, what));
}

int weft__cu_dt(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return CU_DT_F32;
    case WEFT_DT_DOUBLE: return CU_DT_F64;
    case WEFT_DT_INT32: return CU_DT_I32;
    case WEFT_DT_INT64: return CU_DT_I64;
    case WEFT_DT_BOOL: return CU_DT_BOOL;
    default: return -1;
  }
}

void weft__cu_geom(const weft_pc_bcast_t *b, weft_cu_geom_t *g) {
  memset(g, 0, sizeof *g);
  g->rank = b->rank;
  g->n = b->out_elements;
  for (int d = 0; d < b->rank && d < CU_MAX_DIMS; d++) {
    g->dims[d] = b->dims[d];
    for (int k = 0; k < b->n_in && k < 3; k++) g->strides[k][d] = b->strides[k][d];
  }
}

void weft__cu_geom_flat(int64_t n, weft_cu_geom_t *g) {
  memset(g, 0, sizeof *g);
  g->rank = 1;
  g->n = n;
  g->dims[0] = n;
  for (int k = 0; k < 3; k++) g->strides[k][0] = 1;
}

weft_status_t *weft__cu_copy_strided(weft_kernel_ctx_t *ctx, void *out, int64_t out_off,
                                     const int64_t *out_strides, const void *in, int64_t in_off,
                                     const int64_t *in_strides, weft_dtype_t dtype, int rank,
                                     const int64_t *dims) {
  size_t es = weft_pc_dtype_size(dtype);
  if (es == 0 || es > 8 || dtype == WEFT_DT_STRING)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "no CUDA data movement for %s elements",
                         weft_pc_dtype_name(dtype));
  if (rank > CU_MAX_COPY_DIMS)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "strided copy over %d dimensions", rank);
  int64_t dense[CU_MAX_COPY_DIMS];
  if (out_strides == NULL) {
    weft_pc_contiguous_strides(rank, dims, dense);
    out_strides = dense;
  }
  /* Drop size-1 dims and merge neighbours that are contiguous on both sides. */
  weft_cu_copy_t c;
  memset(&c, 0, sizeof c);
  int cr = 0;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) {
    n *= dims[d];
    if (dims[d] == 1) continue;
    if (cr > 0 && c.in_strides[cr - 1] == in_strides[d] * dims[d] &&
        c.out_strides[cr - 1] == out_strides[d] * dims[d]) {
      c.dims[cr - 1] *= dims[d];
      c.in_strides[cr - 1] = in_strides[d];
      c.out_strides[cr - 1] = out_strides[d];
    } else {
      c.dims[cr] = dims[d];
      c.in_strides[cr] = in_strides[d];
      c.out_strides[cr] = out_strides[d];
      cr++;
    }
  }
  if (n == 0) return NULL;
  if (cr == 0) { /* one element */
    c.dims[0] = 1;
    c.in_strides[0] = 0;
    c.out_strides[0] = 1;
    cr = 1;
  }
  c.rank = cr;
  c.n = n;
  c.in_off = in_off;
  c.out_off = out_off;
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_copy(s, es, &c, in, out), "strided copy");
}

weft_status_t *weft__cu_fill(weft_kernel_ctx_t *ctx, void *y, weft_dtype_t dtype, int64_t n,
                             const void *value) {
  if (n == 0) return NULL;
  size_t es = weft_pc_dtype_size(dtype);
  if (es == 0 || es > 8 || dtype == WEFT_DT_STRING)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "no CUDA fill for %s", weft_pc_dtype_name(dtype));
  uint64_t pattern = 0;
  if (dtype == WEFT_DT_BOOL) pattern = *(const uint8_t *)value != 0;
  else memcpy(&pattern, value, es); /* little endian: the element's bytes are the low bytes */
  cudaStream_t s;
  weft__cu_ctx_device(ctx, &s);
  return weft__cu_launched(ctx, weft__cu_k_fill(s, es, y, n, pattern), "fill");
}

weft_status_t *weft__cu_copy_d2d(weft_kernel_ctx_t *ctx, void *dst, const void *src, size_t n) {
  if (n == 0 || dst == src) return NULL;
  weft_cu_device_t *dev = weft__cu_ctx_device(ctx, NULL);
  return weft__cu_named(ctx, weft__cu_copy_device_to_device(dev, dst, src, n));
}

/* Ops the CUDA plugin has kernels for but the core does not define (yet). The loader refuses a
 * plugin that registers a kernel for an unknown op and the ABI cannot ask which ops exist, so
 * these stay unregistered; delete a name here once the core defines its op and the op's
 * conformance cases pass on a GPU (docs/cuda.md). */
static const char *const ops_core_lacks[] = {"Concat"};

static bool core_lacks(const char *op) {
  for (size_t i = 0; i < sizeof ops_core_lacks / sizeof ops_core_lacks[0]; i++)
    if (strcmp(op, ops_core_lacks[i]) == 0) return true;
  return false;
}

weft_status_t *weft__cu_register(const weft_registrar_t *reg, const weft_cu_kernel_spec_t *spec) {
  if (core_lacks(spec->op)) return NULL;
  weft_type_constraint_t c[2];
  size_t nc = 0;
  if (spec->type_attr != NULL) {
    c[nc].attr = spec->type_attr;
    c[nc].dtypes = spec->dtypes;
    c[nc].n_dtypes = spec->n_dtypes;
    nc++;
  }
  if (spec->type_attr2 != NULL) {
    c[nc].attr = spec->type_attr2;
    c[nc].dtypes = spec->dtypes2;
    c[nc].n_dtypes = spec->n_dtypes2;
    nc++;
  }
  return weft_pc_register_full(reg, WEFT_CU_DEVICE_TYPE, spec->op, nc > 0 ? c : NULL, nc,
                               spec->host_memory, NULL, spec->compute, NULL, spec->user_data);
}

weft_status_t *weft__cu_register_typed(const weft_registrar_t *reg, const char *op,
                                       weft_kernel_compute_fn compute,
                                       const char *const *host_memory, void *user_data,
                                       const weft_dtype_t *dtypes, size_t n_dtypes) {
  if (core_lacks(op)) return NULL;
  return weft_pc_register_typed(reg, WEFT_CU_DEVICE_TYPE, op, compute, host_memory, user_data,
                                dtypes, n_dtypes);
}
