/* vk_util.c: helpers the Vulkan kernels share beyond those all plugins share (plugins/common):
 * shader dtype codes, the kernel's device and scratch memory, size checks against what a shader
 * can address, the strided gather every data-movement kernel uses, and registration on VULKAN. */
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

const weft_dtype_t weft__vk_types_f[] = {WEFT_DT_FLOAT};
const weft_dtype_t weft__vk_types_fi[] = {WEFT_DT_FLOAT, WEFT_DT_INT32};
const weft_dtype_t weft__vk_types_fib[] = {WEFT_DT_FLOAT, WEFT_DT_INT32, WEFT_DT_BOOL};

int weft__vk_dt(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return (int)VK_DT_F32;
    case WEFT_DT_INT32: return (int)VK_DT_I32;
    case WEFT_DT_BOOL: return (int)VK_DT_BOOL;
    default: return -1;
  }
}

weft_vk_device_t *weft__vk_ctx_device(weft_kernel_ctx_t *ctx) { return H->kernel_device(ctx); }

weft_status_t *weft__vk_scratch(weft_kernel_ctx_t *ctx, size_t nbytes, void **out) {
  *out = NULL;
  if (nbytes == 0) return NULL;
  return H->kernel_scratch(ctx, nbytes, out);
}

weft_status_t *weft__vk_check_size(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                   const char *what) {
  weft_vk_device_t *dev = weft__vk_ctx_device(ctx);
  uint64_t max_bytes = weft__vk_max_binding(dev);
  /* Shaders index elements with 32-bit unsigned integers; bool kernels index 4-element words. */
  if ((uint64_t)v->num_elements >= ((uint64_t)1 << 32) - 4 || (uint64_t)v->nbytes > max_bytes) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "%s %s%s (%zu bytes) is too large for a Vulkan kernel on %s (at most "
                          "%llu bytes and 2^32 elements per tensor)",
                          what, weft__vk_dtype_name(v->dtype),
                          weft__vk_shape_str(v->rank, v->dims, s, sizeof s), v->nbytes,
                          weft__vk_device_name(dev), (unsigned long long)max_bytes);
  }
  return NULL;
}

uint32_t weft__vk_groups(weft_kernel_ctx_t *ctx, uint64_t n_items) {
  uint64_t g = (n_items + VK_LOCAL_SIZE - 1) / VK_LOCAL_SIZE;
  uint32_t max = weft__vk_max_groups(weft__vk_ctx_device(ctx));
  if (g > max) g = max;
  return (uint32_t)g;
}

/* ---------------------------------------------------------------------------------------------
 * Gather */

typedef struct gather_push {
  uint32_t n, rank, bool_elems, in_off, out_off;
  uint32_t dims[VK_MAX_DIMS];
  uint32_t in_strides[VK_MAX_DIMS];
  uint32_t out_strides[VK_MAX_DIMS];
} gather_push_t;

weft_status_t *weft__vk_copy_strided(weft_kernel_ctx_t *ctx, void *out, int64_t out_off,
                                     const int64_t *out_strides, const void *in, int64_t in_off,
                                     const int64_t *in_strides, weft_dtype_t dtype, int rank,
                                     const int64_t *dims) {
  size_t es = weft__vk_dtype_size(dtype);
  if (es != 4 && es != 1)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED, "no Vulkan data movement for %s elements",
                          weft__vk_dtype_name(dtype));
  int64_t dense[VK_MAX_COPY_DIMS];
  if (out_strides == NULL && rank <= VK_MAX_COPY_DIMS) {
    weft_pc_contiguous_strides(rank, dims, dense);
    out_strides = dense;
  }
  /* Drop size-1 dims and merge neighbours that are contiguous on both sides. */
  int64_t cd[VK_MAX_COPY_DIMS], ci[VK_MAX_COPY_DIMS], co[VK_MAX_COPY_DIMS];
  if (rank > VK_MAX_COPY_DIMS)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED, "strided copy over %d dimensions", rank);
  int cr = 0;
  int64_t n = 1;
  for (int d = 0; d < rank; d++) {
    n *= dims[d];
    if (dims[d] == 1) continue;
    if (cr > 0 && ci[cr - 1] == in_strides[d] * dims[d] && co[cr - 1] == out_strides[d] * dims[d]) {
      cd[cr - 1] *= dims[d];
      ci[cr - 1] = in_strides[d];
      co[cr - 1] = out_strides[d];
    } else {
      cd[cr] = dims[d];
      ci[cr] = in_strides[d];
      co[cr] = out_strides[d];
      cr++;
    }
  }
  if (n == 0) return NULL;
  if (cr == 0) { /* one element */
    cd[0] = 1;
    ci[0] = 0;
    co[0] = 1;
    cr = 1;
  }
  if (cr > (int)VK_MAX_DIMS)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED, "strided copy over %d dimensions", cr);
  if (n >= ((int64_t)1 << 32) - 4)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "%lld elements are too many for a Vulkan kernel (at most 2^32)",
                          (long long)n);
  if (es == 1) {
    /* Bytes are written a word at a time: the output must be dense from a word boundary. */
    bool packed = out_off % 4 == 0 && co[cr - 1] == 1;
    for (int d = cr - 2; d >= 0 && packed; d--) packed = co[d] == co[d + 1] * cd[d + 1];
    if (!packed)
      return weft__vk_error(ctx, WEFT_UNIMPLEMENTED,
                            "bool elements can only be copied into a dense output on Vulkan");
  }
  gather_push_t p;
  memset(&p, 0, sizeof p);
  p.n = (uint32_t)n;
  p.rank = (uint32_t)cr;
  p.bool_elems = es == 1;
  p.in_off = (uint32_t)in_off;
  p.out_off = (uint32_t)out_off;
  for (int d = 0; d < cr; d++) {
    p.dims[d] = (uint32_t)cd[d];
    p.in_strides[d] = (uint32_t)ci[d];
    p.out_strides[d] = (uint32_t)co[d];
  }
  void *bufs[2] = {(void *)in, out};
  uint64_t items = es == 1 ? ((uint64_t)n + 3) / 4 : (uint64_t)n;
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_GATHER, &p, sizeof p, bufs, 2,
                           weft__vk_groups(ctx, items), 1, 1);
}

weft_status_t *weft__vk_gather(weft_kernel_ctx_t *ctx, void *out, const void *in,
                               weft_dtype_t dtype, int rank, const int64_t *dims,
                               const int64_t *strides) {
  int64_t out_strides[VK_MAX_COPY_DIMS];
  if (rank > VK_MAX_COPY_DIMS)
    return weft__vk_error(ctx, WEFT_UNIMPLEMENTED, "gather over %d dimensions", rank);
  weft_pc_contiguous_strides(rank, dims, out_strides);
  return weft__vk_copy_strided(ctx, out, 0, out_strides, in, 0, strides, dtype, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__vk_register(const weft_registrar_t *reg, const weft_vk_kernel_spec_t *spec) {
  return weft_pc_register(reg, WEFT_VK_DEVICE_TYPE, spec);
}

weft_status_t *weft__vk_register_full(const weft_registrar_t *reg, const char *op,
                                      const weft_type_constraint_t *constraints,
                                      size_t n_constraints, const char *const *host_memory,
                                      weft_kernel_compute_fn compute, void *user_data) {
  return weft_pc_register_full(reg, WEFT_VK_DEVICE_TYPE, op, constraints, n_constraints,
                               host_memory, NULL, compute, NULL, user_data);
}

weft_status_t *weft__vk_register_typed(const weft_registrar_t *reg, const char *name,
                                       weft_kernel_compute_fn compute,
                                       const char *const *host_memory, void *user_data,
                                       const weft_dtype_t *dtypes, size_t n_dtypes) {
  return weft_pc_register_typed(reg, WEFT_VK_DEVICE_TYPE, name, compute, host_memory, user_data,
                                dtypes, n_dtypes);
}
