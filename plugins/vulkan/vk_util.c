/* vk_util.c: helpers the Vulkan kernels share: errors naming the node, dtype names and sizes,
 * inputs, outputs and scratch through the host table, index arguments read from host memory,
 * size checks against what a shader can address, TensorFlow broadcasting geometry, the strided
 * gather every data-movement kernel uses, and kernel registration. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

const weft_dtype_t weft__vk_types_f[] = {WEFT_DT_FLOAT};
const weft_dtype_t weft__vk_types_fi[] = {WEFT_DT_FLOAT, WEFT_DT_INT32};
const weft_dtype_t weft__vk_types_fib[] = {WEFT_DT_FLOAT, WEFT_DT_INT32, WEFT_DT_BOOL};

weft_status_t *weft__vk_error(weft_kernel_ctx_t *ctx, weft_code_t code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *node = ctx != NULL ? H->kernel_node_name(ctx) : NULL;
  if (node == NULL) return H->status_new(code, "%s", msg);
  return H->status_new(code, "node '%s': %s", node, msg);
}

const char *weft__vk_shape_str(int rank, const int64_t *dims, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0) return buf;
  buf[0] = '\0';
  at += (size_t)snprintf(buf + at, len - at, "[");
  for (int i = 0; i < rank && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, i ? ",%lld" : "%lld", (long long)dims[i]);
  if (at < len) snprintf(buf + at, len - at, "]");
  return buf;
}

const char *weft__vk_dtype_name(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return "float32";
    case WEFT_DT_DOUBLE: return "float64";
    case WEFT_DT_INT32: return "int32";
    case WEFT_DT_UINT8: return "uint8";
    case WEFT_DT_INT16: return "int16";
    case WEFT_DT_INT8: return "int8";
    case WEFT_DT_STRING: return "string";
    case WEFT_DT_INT64: return "int64";
    case WEFT_DT_BOOL: return "bool";
    case WEFT_DT_BFLOAT16: return "bfloat16";
    case WEFT_DT_UINT16: return "uint16";
    case WEFT_DT_HALF: return "float16";
    case WEFT_DT_UINT32: return "uint32";
    case WEFT_DT_UINT64: return "uint64";
    default: return "invalid";
  }
}

size_t weft__vk_dtype_size(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: case WEFT_DT_INT32: case WEFT_DT_UINT32: return 4;
    case WEFT_DT_DOUBLE: case WEFT_DT_INT64: case WEFT_DT_UINT64: return 8;
    case WEFT_DT_INT16: case WEFT_DT_UINT16: case WEFT_DT_HALF: case WEFT_DT_BFLOAT16: return 2;
    case WEFT_DT_INT8: case WEFT_DT_UINT8: case WEFT_DT_BOOL: return 1;
    default: return 0;
  }
}

int weft__vk_dt(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return (int)VK_DT_F32;
    case WEFT_DT_INT32: return (int)VK_DT_I32;
    case WEFT_DT_BOOL: return (int)VK_DT_BOOL;
    default: return -1;
  }
}

weft_vk_device_t *weft__vk_ctx_device(weft_kernel_ctx_t *ctx) { return H->kernel_device(ctx); }

weft_status_t *weft__vk_input(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  return H->kernel_input(ctx, index, out);
}

weft_status_t *weft__vk_output(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype, int rank,
                               const int64_t *dims, weft_tensor_view_t *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  return H->kernel_allocate_output(ctx, index, dtype, rank, dims, out);
}

weft_status_t *weft__vk_scratch(weft_kernel_ctx_t *ctx, size_t nbytes, void **out) {
  *out = NULL;
  if (nbytes == 0) return NULL;
  return H->kernel_scratch(ctx, nbytes, out);
}

static int64_t index_at(const weft_tensor_view_t *v, int64_t i) {
  switch (v->dtype) {
    case WEFT_DT_INT64: return ((const int64_t *)v->data)[i];
    case WEFT_DT_INT32: return ((const int32_t *)v->data)[i];
    case WEFT_DT_INT16: return ((const int16_t *)v->data)[i];
    case WEFT_DT_INT8: return ((const int8_t *)v->data)[i];
    case WEFT_DT_UINT8: return ((const uint8_t *)v->data)[i];
    case WEFT_DT_UINT16: return ((const uint16_t *)v->data)[i];
    case WEFT_DT_UINT32: return ((const uint32_t *)v->data)[i];
    case WEFT_DT_UINT64: return (int64_t)((const uint64_t *)v->data)[i];
    default: return 0;
  }
}

weft_status_t *weft__vk_read_indices(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                     const char *what, int64_t *out, int64_t max_n, int64_t *n) {
  switch (v->dtype) {
    case WEFT_DT_INT64: case WEFT_DT_INT32: case WEFT_DT_INT16: case WEFT_DT_INT8:
    case WEFT_DT_UINT8: case WEFT_DT_UINT16: case WEFT_DT_UINT32: case WEFT_DT_UINT64: break;
    default:
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be an integer tensor, got %s",
                            what, weft__vk_dtype_name(v->dtype));
  }
  if (v->num_elements > max_n)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "%s has %lld elements, at most %lld allowed",
                          what, (long long)v->num_elements, (long long)max_n);
  for (int64_t i = 0; i < v->num_elements; i++) out[i] = index_at(v, i);
  *n = v->num_elements;
  return NULL;
}

bool weft__vk_attr_bool(weft_kernel_ctx_t *ctx, const char *name, bool dflt) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (!H->attr_has(attrs, name)) return dflt;
  int v = 0;
  weft_status_t *s = H->attr_bool(attrs, name, &v);
  if (s != NULL) {
    H->status_free(s);
    return dflt;
  }
  return v != 0;
}

float weft__vk_attr_float(weft_kernel_ctx_t *ctx, const char *name, float dflt) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  if (!H->attr_has(attrs, name)) return dflt;
  float v = dflt;
  weft_status_t *s = H->attr_float(attrs, name, &v);
  if (s != NULL) {
    H->status_free(s);
    return dflt;
  }
  return v;
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
 * Broadcasting */

weft_status_t *weft__vk_bcast_init(weft_kernel_ctx_t *ctx, weft_vk_bcast_t *b, int n_in,
                                   const int *ranks, const int64_t *const *dims) {
  memset(b, 0, sizeof *b);
  int rank = 0;
  for (int k = 0; k < n_in; k++)
    if (ranks[k] > rank) rank = ranks[k];
  int64_t padded[3][WEFT_MAX_RANK];
  int64_t out[WEFT_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    out[d] = 1;
    for (int k = 0; k < n_in; k++) {
      int lead = rank - ranks[k];
      padded[k][d] = d < lead ? 1 : dims[k][d - lead];
      int64_t v = padded[k][d];
      if (v == 1) continue;
      if (out[d] == 1) {
        out[d] = v;
      } else if (out[d] != v) {
        char s0[VK_SHAPE_STR_LEN], s1[VK_SHAPE_STR_LEN], s2[VK_SHAPE_STR_LEN];
        if (n_in == 3)
          return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s vs. %s",
                                weft__vk_shape_str(ranks[0], dims[0], s0, sizeof s0),
                                weft__vk_shape_str(ranks[1], dims[1], s1, sizeof s1),
                                weft__vk_shape_str(ranks[2], dims[2], s2, sizeof s2));
        return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Incompatible shapes: %s vs. %s",
                              weft__vk_shape_str(ranks[0], dims[0], s0, sizeof s0),
                              weft__vk_shape_str(ranks[n_in - 1], dims[n_in - 1], s1, sizeof s1));
      }
    }
  }
  b->out_rank = rank;
  b->out_elements = 1;
  for (int d = 0; d < rank; d++) {
    b->out_dims[d] = out[d];
    b->out_elements *= out[d];
  }
  /* Collapse: size-1 output dims carry no iteration; neighbours with the same pattern of which
   * inputs broadcast along them merge into one longer dim. */
  int64_t cd[WEFT_MAX_RANK];
  unsigned pattern[WEFT_MAX_RANK];
  int cr = 0;
  for (int d = 0; d < rank; d++) {
    if (out[d] == 1) continue;
    unsigned bits = 0;
    for (int k = 0; k < n_in; k++)
      if (padded[k][d] == 1) bits |= 1u << k;
    if (cr > 0 && pattern[cr - 1] == bits) {
      cd[cr - 1] *= out[d];
    } else {
      cd[cr] = out[d];
      pattern[cr] = bits;
      cr++;
    }
  }
  if (cr == 0) {
    cd[0] = b->out_elements;
    pattern[0] = 0;
    cr = 1;
  }
  b->rank = cr;
  for (int d = 0; d < cr; d++) b->dims[d] = cd[d];
  for (int k = 0; k < n_in; k++) {
    int64_t s = 1;
    for (int d = cr - 1; d >= 0; d--) {
      if (pattern[d] & (1u << k)) {
        b->strides[k][d] = 0;
      } else {
        b->strides[k][d] = s;
        s *= cd[d];
      }
    }
  }
  return NULL;
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
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; d--) {
      dense[d] = st;
      st *= dims[d];
    }
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
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    out_strides[d] = s;
    s *= dims[d];
  }
  return weft__vk_copy_strided(ctx, out, 0, out_strides, in, 0, strides, dtype, rank, dims);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__vk_register(const weft_registrar_t *reg, const weft_vk_kernel_spec_t *spec) {
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
  weft_kernel_def_t def;
  memset(&def, 0, sizeof def);
  def.struct_size = sizeof def;
  def.op = spec->op;
  def.device_type = WEFT_VK_DEVICE_TYPE;
  def.constraints = nc > 0 ? c : NULL;
  def.n_constraints = nc;
  def.host_memory_args = spec->host_memory;
  def.priority = 0;
  def.compute = spec->compute;
  def.user_data = spec->user_data;
  return reg->register_kernel(reg->ctx, &def);
}
