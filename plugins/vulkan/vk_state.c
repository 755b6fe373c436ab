/* vk_state.c: Vulkan kernels that produce or pass values without arithmetic: Const (uploaded by
 * the host), Identity and its kin, NoOp, the shape views Reshape / ExpandDims / Squeeze (the
 * output shares the input's device buffer), Fill / ZerosLike / OnesLike (vkCmdFillBuffer), and
 * the reference variables: VariableV2, Assign (a device copy), AssignAdd / AssignSub (the binary
 * shader in place), IsVariableInitialized. Shape and value arguments that steer the host side
 * arrive in host memory (host_memory_args). Error messages match the CPU kernels'. */
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

/* ---------------------------------------------------------------------------------------------
 * Values */

static weft_status_t *k_const(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_output_from_attr(ctx, 0, "value");
}

static weft_status_t *k_forward(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_outputs(ctx);
  for (int i = 0; i < n; i++) {
    weft_tensor_view_t in;
    VK_TRY(weft__vk_input(ctx, i, &in));
    VK_TRY(H->kernel_forward_input(ctx, i, i, in.rank, in.dims));
  }
  return NULL;
}

static weft_status_t *k_noop(weft_kernel_ctx_t *ctx, void *state) {
  (void)ctx;
  (void)state;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Shape views */

static weft_status_t *k_reshape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, sv;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &sv));
  char s0[VK_SHAPE_STR_LEN], s1[VK_SHAPE_STR_LEN];
  if (sv.rank > 1)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "sizes input must be 1-D, not %s",
                          weft__vk_shape_str(sv.rank, sv.dims, s0, sizeof s0));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  VK_TRY(weft__vk_read_indices(ctx, &sv, "shape", dims, WEFT_MAX_RANK, &n));
  int unknown = -1;
  int64_t known = 1;
  for (int64_t d = 0; d < n; d++) {
    if (dims[d] == -1) {
      if (unknown >= 0)
        return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                              "Only one input size may be -1, not both %d and %lld", unknown,
                              (long long)d);
      unknown = (int)d;
    } else if (dims[d] < 0) {
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Size %lld must be non-negative, not %lld",
                            (long long)d, (long long)dims[d]);
    } else {
      known *= dims[d];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.num_elements % known != 0) {
      dims[unknown] = -1;
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Input to reshape is a tensor with %lld values, but the requested "
                            "shape requires a multiple of %lld (shape %s)",
                            (long long)x.num_elements, (long long)known,
                            weft__vk_shape_str((int)n, dims, s1, sizeof s1));
    }
    dims[unknown] = x.num_elements / known;
    known *= dims[unknown];
  }
  if (known != x.num_elements)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Input to reshape is a tensor with %lld values, but the requested "
                          "shape has %lld (input shape %s, requested %s)",
                          (long long)x.num_elements, (long long)known,
                          weft__vk_shape_str(x.rank, x.dims, s0, sizeof s0),
                          weft__vk_shape_str((int)n, dims, s1, sizeof s1));
  return H->kernel_forward_input(ctx, 0, 0, (int)n, dims);
}

static weft_status_t *k_expand_dims(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, dv;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_input(ctx, 1, &dv));
  int64_t dim[1], n = 0;
  if (dv.num_elements != 1) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "dim must be a scalar, got shape %s",
                          weft__vk_shape_str(dv.rank, dv.dims, s, sizeof s));
  }
  VK_TRY(weft__vk_read_indices(ctx, &dv, "dim", dim, 1, &n));
  if (x.rank + 1 > WEFT_MAX_RANK)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "ExpandDims output rank exceeds %d",
                          WEFT_MAX_RANK);
  if (dim[0] < -(int64_t)x.rank - 1 || dim[0] > x.rank)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Tried to expand dim index %lld for tensor with %d dimensions.",
                          (long long)dim[0], x.rank);
  int at = (int)(dim[0] < 0 ? dim[0] + x.rank + 1 : dim[0]);
  int64_t dims[WEFT_MAX_RANK];
  for (int d = 0, k = 0; d <= x.rank; d++) dims[d] = d == at ? 1 : x.dims[k++];
  return H->kernel_forward_input(ctx, 0, 0, x.rank + 1, dims);
}

static weft_status_t *k_squeeze(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  const int64_t *axes = NULL;
  size_t n_axes = 0;
  const char *attr = H->attr_has(attrs, "squeeze_dims") ? "squeeze_dims"
                     : H->attr_has(attrs, "axis")       ? "axis"
                                                        : NULL;
  if (attr != NULL) {
    weft_status_t *s = H->attr_int_list(attrs, attr, &axes, &n_axes);
    if (s != NULL) { /* an empty list may come back typed otherwise: it means "all" */
      H->status_free(s);
      axes = NULL;
      n_axes = 0;
    }
  }
  bool drop[WEFT_MAX_RANK] = {false};
  char s0[VK_SHAPE_STR_LEN];
  for (size_t i = 0; i < n_axes; i++) {
    if (axes[i] < -(int64_t)x.rank || axes[i] >= x.rank)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "squeeze dimension %lld is out of range for a tensor of rank %d (must "
                            "be in [%d, %d))",
                            (long long)axes[i], x.rank, -x.rank, x.rank);
    int a = (int)(axes[i] < 0 ? axes[i] + x.rank : axes[i]);
    if (x.dims[a] != 1)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Can not squeeze dim[%d], expected a dimension of 1, got %lld "
                            "(shape %s)",
                            a, (long long)x.dims[a],
                            weft__vk_shape_str(x.rank, x.dims, s0, sizeof s0));
    drop[a] = true;
  }
  int64_t dims[WEFT_MAX_RANK];
  int r = 0;
  for (int d = 0; d < x.rank; d++) {
    bool gone = n_axes > 0 ? drop[d] : x.dims[d] == 1;
    if (!gone) dims[r++] = x.dims[d];
  }
  return H->kernel_forward_input(ctx, 0, 0, r, dims);
}

/* ---------------------------------------------------------------------------------------------
 * Fills */

/* The 32-bit word that repeats `value` (4-byte dtypes) or its byte (bool). */
static uint32_t fill_pattern(weft_dtype_t dtype, const void *value) {
  if (dtype == WEFT_DT_BOOL) return (*(const uint8_t *)value != 0) ? 0x01010101u : 0u;
  uint32_t w;
  memcpy(&w, value, sizeof w);
  return w;
}

static weft_status_t *fill(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *y, uint32_t pattern) {
  if (y->num_elements == 0) return NULL;
  return weft__vk_fill(weft__vk_ctx_device(ctx), y->data, y->nbytes, pattern);
}

static weft_status_t *k_fill(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t dv, v, y;
  VK_TRY(weft__vk_input(ctx, 0, &dv));
  VK_TRY(weft__vk_input(ctx, 1, &v));
  int64_t dims[WEFT_MAX_RANK], n = 0;
  VK_TRY(weft__vk_read_indices(ctx, &dv, "dims", dims, WEFT_MAX_RANK, &n));
  if (v.num_elements != 1) {
    char s[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "value must be a scalar, got shape %s",
                          weft__vk_shape_str(v.rank, v.dims, s, sizeof s));
  }
  for (int64_t d = 0; d < n; d++)
    if (dims[d] < 0)
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "dims[%lld] = %lld must be non-negative",
                            (long long)d, (long long)dims[d]);
  VK_TRY(weft__vk_output(ctx, 0, v.dtype, (int)n, dims, &y));
  return fill(ctx, &y, fill_pattern(v.dtype, v.data));
}

static weft_status_t *k_zeros_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  return fill(ctx, &y, 0u);
}

static weft_status_t *k_ones_like(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  VK_TRY(weft__vk_input(ctx, 0, &x));
  VK_TRY(weft__vk_output(ctx, 0, x.dtype, x.rank, x.dims, &y));
  float one_f = 1.0f;
  int32_t one_i = 1;
  uint8_t one_b = 1;
  const void *one = x.dtype == WEFT_DT_FLOAT ? (const void *)&one_f
                    : x.dtype == WEFT_DT_INT32 ? (const void *)&one_i
                                               : (const void *)&one_b;
  return fill(ctx, &y, fill_pattern(x.dtype, one));
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

static weft_status_t *k_variable(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return H->kernel_variable(ctx);
}

static weft_status_t *k_is_initialized(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t cur;
  memset(&cur, 0, sizeof cur);
  cur.struct_size = sizeof cur;
  weft_status_t *s = H->kernel_ref_input(ctx, 0, &cur);
  bool initialised = true;
  if (s != NULL) {
    if (H->status_code(s) != WEFT_FAILED_PRECONDITION) return s;
    H->status_free(s);
    initialised = false;
  }
  weft_tensor_view_t out;
  VK_TRY(weft__vk_output(ctx, 0, WEFT_DT_BOOL, 0, NULL, &out));
  return fill(ctx, &out, initialised ? 1u : 0u);
}

static bool same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static weft_status_t *assign_locked(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *value,
                                    bool validate_shape) {
  if (validate_shape) {
    weft_tensor_view_t old;
    memset(&old, 0, sizeof old);
    old.struct_size = sizeof old;
    weft_status_t *s = H->kernel_ref_input(ctx, 0, &old);
    if (s != NULL) {
      /* Not initialised yet: any shape may become the variable's first value. */
      if (H->status_code(s) != WEFT_FAILED_PRECONDITION) return s;
      H->status_free(s);
    } else if (!same_shape(&old, value)) {
      char a[VK_SHAPE_STR_LEN], b[VK_SHAPE_STR_LEN];
      return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                            "Assign requires shapes of both tensors to match. lhs shape= %s "
                            "rhs shape= %s",
                            weft__vk_shape_str(old.rank, old.dims, a, sizeof a),
                            weft__vk_shape_str(value->rank, value->dims, b, sizeof b));
    }
  }
  weft_tensor_view_t dst;
  memset(&dst, 0, sizeof dst);
  dst.struct_size = sizeof dst;
  VK_TRY(H->kernel_ref_assign(ctx, 0, value->dtype, value->rank, value->dims, &dst));
  if (dst.data == value->data || value->nbytes == 0) return NULL;
  return weft__vk_copy_device_to_device(weft__vk_ctx_device(ctx), dst.data, value->data,
                                        value->nbytes);
}

static weft_status_t *k_assign(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t value;
  VK_TRY(weft__vk_input(ctx, 1, &value));
  bool validate = weft__vk_attr_bool(ctx, "validate_shape", true);
  bool lock = weft__vk_attr_bool(ctx, "use_locking", true);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = assign_locked(ctx, &value, validate);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  VK_TRY(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

typedef struct update_push {
  uint32_t n, op, dtype, rank;
  float alpha;
  uint32_t pad[3];
  uint32_t dims[VK_MAX_DIMS];
  uint32_t sa[VK_MAX_DIMS];
  uint32_t sb[VK_MAX_DIMS];
} update_push_t;

static weft_status_t *update_locked(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *value,
                                    bool sub) {
  weft_tensor_view_t var;
  memset(&var, 0, sizeof var);
  var.struct_size = sizeof var;
  VK_TRY(H->kernel_ref_input(ctx, 0, &var));
  if (!same_shape(&var, value)) {
    char a[VK_SHAPE_STR_LEN], b[VK_SHAPE_STR_LEN];
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT,
                          "Cannot update variable with shape %s using a Tensor with shape %s, "
                          "shapes must be equal.",
                          weft__vk_shape_str(var.rank, var.dims, a, sizeof a),
                          weft__vk_shape_str(value->rank, value->dims, b, sizeof b));
  }
  if (var.dtype != value->dtype)
    return weft__vk_error(ctx, WEFT_INVALID_ARGUMENT, "Cannot update a %s variable with a %s value",
                          weft__vk_dtype_name(var.dtype), weft__vk_dtype_name(value->dtype));
  if (var.num_elements == 0) return NULL;
  VK_TRY(weft__vk_check_size(ctx, &var, "variable"));
  update_push_t p;
  memset(&p, 0, sizeof p);
  p.n = (uint32_t)var.num_elements;
  p.op = sub ? VK_BIN_SUB : VK_BIN_ADD;
  p.dtype = (uint32_t)weft__vk_dt(var.dtype);
  p.rank = 1;
  p.dims[0] = p.n;
  p.sa[0] = 1;
  p.sb[0] = 1;
  void *bufs[3] = {var.data, value->data, var.data};
  return weft__vk_dispatch(weft__vk_ctx_device(ctx), VK_SH_BINARY, &p, sizeof p, bufs, 3,
                           weft__vk_groups(ctx, var.num_elements), 1, 1);
}

static int sub_marker;

static weft_status_t *k_assign_update(weft_kernel_ctx_t *ctx, void *state) {
  bool sub = state != NULL;
  weft_tensor_view_t value;
  VK_TRY(weft__vk_input(ctx, 1, &value));
  bool lock = weft__vk_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = update_locked(ctx, &value, sub);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  VK_TRY(s);
  return H->kernel_forward_ref(ctx, 0, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft__vk_register_state(const weft_registrar_t *reg) {
  static const char *const hm_shape[] = {"shape", NULL};
  static const char *const hm_dim[] = {"dim", NULL};
  static const char *const hm_fill[] = {"dims", "value", NULL};
  const weft_dtype_t *fib = weft__vk_types_fib;
  const weft_dtype_t *fi = weft__vk_types_fi;
  const weft_vk_kernel_spec_t specs[] = {
      {.op = "Const", .compute = k_const, .type_attr = "dtype", .dtypes = fib, .n_dtypes = 3},
      {.op = "Identity", .compute = k_forward, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "StopGradient", .compute = k_forward, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "PreventGradient", .compute = k_forward, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "NoOp", .compute = k_noop},
      {.op = "Reshape", .compute = k_reshape, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_shape},
      {.op = "ExpandDims", .compute = k_expand_dims, .type_attr = "T", .dtypes = fib,
       .n_dtypes = 3, .host_memory = hm_dim},
      {.op = "Squeeze", .compute = k_squeeze, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "Fill", .compute = k_fill, .type_attr = "T", .dtypes = fib, .n_dtypes = 3,
       .host_memory = hm_fill},
      {.op = "ZerosLike", .compute = k_zeros_like, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "OnesLike", .compute = k_ones_like, .type_attr = "T", .dtypes = fi, .n_dtypes = 2},
      {.op = "VariableV2", .compute = k_variable, .type_attr = "dtype", .dtypes = fib,
       .n_dtypes = 3},
      {.op = "IsVariableInitialized", .compute = k_is_initialized, .type_attr = "dtype",
       .dtypes = fib, .n_dtypes = 3},
      {.op = "Assign", .compute = k_assign, .type_attr = "T", .dtypes = fib, .n_dtypes = 3},
      {.op = "AssignAdd", .compute = k_assign_update, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2},
      {.op = "AssignSub", .compute = k_assign_update, .type_attr = "T", .dtypes = fi,
       .n_dtypes = 2, .user_data = &sub_marker},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    VK_TRY(weft__vk_register(reg, &specs[i]));
  return NULL;
}
