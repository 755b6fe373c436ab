/* util.c: the plumbing every plugin kernel uses, whatever its device: the host table (checked by
 * WEFT_PLUGIN_INIT in each plugin's init), dtype sizes and names, errors that name the node,
 * inputs and outputs through the host, integer arguments read from host memory, attribute
 * defaults, host-memory int outputs, and kernel registration. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin_common.h"

#define H weft_pc_host

const weft_host_t *weft_pc_host;

/* ---------------------------------------------------------------------------------------------
 * dtypes */

size_t weft_pc_dtype_size(weft_dtype_t dtype) {
  switch (dtype) {
#define WEFT_PC_SIZE_CASE(dt, ctype, name, tf_name, proto_name) \
  case dt:                                                      \
    return sizeof(ctype);
    WEFT_DTYPE_LIST(WEFT_PC_SIZE_CASE)
#undef WEFT_PC_SIZE_CASE
    default: return 0;
  }
}

const char *weft_pc_dtype_name(weft_dtype_t dtype) {
  switch (dtype) {
#define WEFT_PC_NAME_CASE(dt, ctype, name, tf_name, proto_name) \
  case dt:                                                      \
    return name;
    WEFT_DTYPE_LIST(WEFT_PC_NAME_CASE)
#undef WEFT_PC_NAME_CASE
    default: return "invalid";
  }
}

bool weft_pc_dtype_is_float(weft_dtype_t dtype) {
  return dtype == WEFT_DT_FLOAT || dtype == WEFT_DT_DOUBLE || dtype == WEFT_DT_HALF ||
         dtype == WEFT_DT_BFLOAT16;
}

bool weft_pc_dtype_is_int(weft_dtype_t dtype) {
  switch (dtype) {
    case WEFT_DT_INT8: case WEFT_DT_INT16: case WEFT_DT_INT32: case WEFT_DT_INT64:
    case WEFT_DT_UINT8: case WEFT_DT_UINT16: case WEFT_DT_UINT32: case WEFT_DT_UINT64:
      return true;
    default:
      return false;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Errors */

weft_status_t *weft_pc_error(weft_kernel_ctx_t *ctx, weft_code_t code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *node = ctx != NULL ? H->kernel_node_name(ctx) : NULL;
  if (node == NULL) return H->status_new(code, "%s", msg);
  return H->status_new(code, "node '%s': %s", node, msg);
}

const char *weft_pc_shape_str(int rank, const int64_t *dims, char *buf, size_t len) {
  size_t at = 0;
  if (len == 0) return buf;
  buf[0] = '\0';
  at += (size_t)snprintf(buf + at, len - at, "[");
  for (int i = 0; i < rank && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, i ? ",%lld" : "%lld", (long long)dims[i]);
  if (at < len) snprintf(buf + at, len - at, "]");
  return buf;
}

void weft_pc_shape_pair(weft_pc_shape_pair_t *p, const weft_tensor_view_t *a,
                        const weft_tensor_view_t *b) {
  weft_pc_shape_str(a->rank, a->dims, p->a, sizeof p->a);
  weft_pc_shape_str(b->rank, b->dims, p->b, sizeof p->b);
}

/* ---------------------------------------------------------------------------------------------
 * Inputs, outputs and attributes */

weft_status_t *weft_pc_input(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  return H->kernel_input(ctx, index, out);
}

weft_status_t *weft_pc_output(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype, int rank,
                              const int64_t *dims, weft_tensor_view_t *out) {
  memset(out, 0, sizeof *out);
  out->struct_size = sizeof *out;
  return H->kernel_allocate_output(ctx, index, dtype, rank, dims, out);
}

int64_t weft_pc_index_at(const weft_tensor_view_t *v, int64_t i) {
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

static weft_status_t *not_integer(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                  const char *what) {
  return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be an integer tensor, got %s", what,
                       weft_pc_dtype_name(v->dtype));
}

weft_status_t *weft_pc_read_indices(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                    const char *what, int64_t *out, int64_t max_n, int64_t *n) {
  if (!weft_pc_dtype_is_int(v->dtype)) return not_integer(ctx, v, what);
  if (v->num_elements > max_n)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s has %lld elements, at most %lld allowed",
                         what, (long long)v->num_elements, (long long)max_n);
  for (int64_t i = 0; i < v->num_elements; i++) out[i] = weft_pc_index_at(v, i);
  *n = v->num_elements;
  return NULL;
}

weft_status_t *weft_pc_read_scalar_index(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                         const char *what, int64_t *out) {
  if (!weft_pc_dtype_is_int(v->dtype)) return not_integer(ctx, v, what);
  if (v->num_elements != 1) {
    char s[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s must be a scalar, got shape %s", what,
                         weft_pc_shape_str(v->rank, v->dims, s, sizeof s));
  }
  *out = weft_pc_index_at(v, 0);
  return NULL;
}

weft_status_t *weft_pc_axis(weft_kernel_ctx_t *ctx, int64_t axis, int rank, const char *what,
                            int *out) {
  if (axis < -(int64_t)rank || axis >= rank)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                         "%s %lld is out of range for a tensor of rank %d (must be in [%d, %d))",
                         what, (long long)axis, rank, -rank, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return NULL;
}

weft_status_t *weft_pc_read_axis(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v, int rank,
                                 const char *what, int *out) {
  int64_t axis = 0;
  WEFT_RETURN_IF_ERROR(weft_pc_read_scalar_index(ctx, v, what, &axis));
  return weft_pc_axis(ctx, axis, rank, what, out);
}

weft_status_t *weft_pc_inputs(weft_kernel_ctx_t *ctx, int n, weft_tensor_view_t *in) {
  for (int i = 0; i < n; i++) WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, i, &in[i]));
  return NULL;
}

weft_status_t *weft_pc_tensor_and_ints(weft_kernel_ctx_t *ctx, weft_tensor_view_t *x,
                                       const char *what, int64_t *vals, int64_t max_n,
                                       int64_t *n) {
  weft_tensor_view_t v;
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 0, x));
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, 1, &v));
  return weft_pc_read_indices(ctx, &v, what, vals, max_n, n);
}

/* An absent attribute and one of another type both mean "use the default" (the op definitions
 * give every attribute these kernels read its type, so only an older graph can lack one): true
 * when the read worked. */
static bool attr_read(weft_status_t *s) {
  if (s == NULL) return true;
  H->status_free(s);
  return false;
}

bool weft_pc_attr_bool(weft_kernel_ctx_t *ctx, const char *name, bool dflt) {
  int v = 0;
  return attr_read(H->attr_bool(H->kernel_attrs(ctx), name, &v)) ? v != 0 : dflt;
}

int64_t weft_pc_attr_int(weft_kernel_ctx_t *ctx, const char *name, int64_t dflt) {
  int64_t v = 0;
  return attr_read(H->attr_int(H->kernel_attrs(ctx), name, &v)) ? v : dflt;
}

float weft_pc_attr_float(weft_kernel_ctx_t *ctx, const char *name, float dflt) {
  float v = 0;
  return attr_read(H->attr_float(H->kernel_attrs(ctx), name, &v)) ? v : dflt;
}

weft_status_t *weft_pc_attr_type(weft_kernel_ctx_t *ctx, const char *name, weft_dtype_t dflt,
                                 weft_dtype_t *out) {
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  *out = dflt;
  if (!H->attr_has(attrs, name)) return NULL;
  return H->attr_type(attrs, name, out);
}

void weft_pc_contiguous_strides(int rank, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

bool weft_pc_same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

weft_status_t *weft_pc_write_ints(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype, int rank,
                                  const int64_t *values, int64_t n) {
  weft_tensor_view_t y;
  WEFT_RETURN_IF_ERROR(weft_pc_output(ctx, index, dtype, rank, &n, &y));
  for (int64_t i = 0; i < n; i++) {
    if (dtype == WEFT_DT_INT32) {
      if (values[i] > INT32_MAX)
        return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT,
                             "value %lld does not fit out_type int32; use int64",
                             (long long)values[i]);
      ((int32_t *)y.data)[i] = (int32_t)values[i];
    } else {
      ((int64_t *)y.data)[i] = values[i];
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

weft_status_t *weft_pc_register_full(const weft_registrar_t *reg, const char *device_type,
                                     const char *op, const weft_type_constraint_t *constraints,
                                     size_t n_constraints, const char *const *host_memory,
                                     weft_kernel_create_fn create, weft_kernel_compute_fn compute,
                                     weft_kernel_destroy_fn destroy, void *user_data) {
  const weft_kernel_def_t def = {
      .struct_size = sizeof def, .op = op, .device_type = device_type, .constraints = constraints,
      .n_constraints = n_constraints, .host_memory_args = host_memory, .priority = 0,
      .create = create, .compute = compute, .destroy = destroy, .user_data = user_data};
  return reg->register_kernel(reg->ctx, &def);
}

weft_status_t *weft_pc_register(const weft_registrar_t *reg, const char *device_type,
                                const weft_pc_kernel_spec_t *spec) {
  weft_type_constraint_t c;
  c.attr = spec->type_attr;
  c.dtypes = spec->dtypes;
  c.n_dtypes = spec->n_dtypes;
  bool constrained = spec->type_attr != NULL;
  return weft_pc_register_full(reg, device_type, spec->op, constrained ? &c : NULL,
                               constrained ? 1 : 0, spec->host_memory, spec->create,
                               spec->compute, spec->destroy, spec->user_data);
}

weft_status_t *weft_pc_register_typed(const weft_registrar_t *reg, const char *device_type,
                                      const char *op, weft_kernel_compute_fn compute,
                                      const char *const *host_memory, void *user_data,
                                      const weft_dtype_t *dtypes, size_t n_dtypes) {
  const weft_pc_kernel_spec_t spec = {.op = op,
                                      .compute = compute,
                                      .type_attr = dtypes != NULL ? "T" : NULL,
                                      .dtypes = dtypes,
                                      .n_dtypes = dtypes != NULL ? n_dtypes : 0,
                                      .host_memory = host_memory,
                                      .user_data = user_data};
  return weft_pc_register(reg, device_type, &spec);
}

/* ---------------------------------------------------------------------------------------------
 * Training updates */

weft_status_t *weft_pc_train_operands(weft_kernel_ctx_t *ctx, const char *op, const char *device,
                                      int n_refs, int grad_input, bool sgd,
                                      weft_tensor_view_t *refs, weft_tensor_view_t *grad) {
  static const char *const slot_names[4] = {"var", "accum", "slot", "slot"};
  for (int r = 0; r < n_refs; r++) {
    memset(&refs[r], 0, sizeof refs[r]);
    refs[r].struct_size = sizeof refs[r];
    WEFT_RETURN_IF_ERROR(H->kernel_ref_input(ctx, r, &refs[r]));
  }
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, grad_input, grad));
  const weft_tensor_view_t *var = &refs[0];
  char s0[WEFT_PC_SHAPE_STR_LEN], s1[WEFT_PC_SHAPE_STR_LEN];
  if (var->dtype != WEFT_DT_FLOAT && var->dtype != WEFT_DT_DOUBLE)
    return weft_pc_error(ctx, WEFT_UNIMPLEMENTED, "%s has no %s kernel for %s", op, device,
                         weft_pc_dtype_name(var->dtype));
  for (int r = 1; r < n_refs; r++)
    if (!weft_pc_same_shape(var, &refs[r]) || refs[r].dtype != var->dtype)
      return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s",
                           r == 1 ? slot_names[1] : slot_names[2],
                           weft_pc_shape_str(var->rank, var->dims, s0, sizeof s0),
                           weft_pc_shape_str(refs[r].rank, refs[r].dims, s1, sizeof s1));
  if (!weft_pc_same_shape(var, grad) || grad->dtype != var->dtype)
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "var and %s do not have the same shape%s %s",
                         sgd ? "delta" : "grad",
                         weft_pc_shape_str(var->rank, var->dims, s0, sizeof s0),
                         weft_pc_shape_str(grad->rank, grad->dims, s1, sizeof s1));
  return NULL;
}

weft_status_t *weft_pc_train_scalar(weft_kernel_ctx_t *ctx, int index, const char *name,
                                    weft_dtype_t dtype, weft_tensor_view_t *out) {
  WEFT_RETURN_IF_ERROR(weft_pc_input(ctx, index, out));
  if (out->num_elements != 1 || out->rank != 0 || out->dtype != dtype) {
    char s[WEFT_PC_SHAPE_STR_LEN];
    return weft_pc_error(ctx, WEFT_INVALID_ARGUMENT, "%s is not a %s scalar: %s %s", name,
                         weft_pc_dtype_name(dtype), weft_pc_dtype_name(out->dtype),
                         weft_pc_shape_str(out->rank, out->dims, s, sizeof s));
  }
  return NULL;
}

const weft_pc_train_op_t weft_pc_train_ops[WEFT_PC_TRAIN_N_OPS] = {
    {"ApplyGradientDescent", WEFT_PC_TRAIN_SGD, 1, {1, -1}, {"alpha"}, 2,
     "ResourceApplyGradientDescent"},
    {"ApplyMomentum", WEFT_PC_TRAIN_MOMENTUM, 2, {2, 4, -1}, {"lr", "momentum"}, 3,
     "ResourceApplyMomentum"},
    {"ApplyAdagrad", WEFT_PC_TRAIN_ADAGRAD, 2, {2, -1}, {"lr"}, 3, "ResourceApplyAdagrad"},
    {"ApplyAdam",
     WEFT_PC_TRAIN_ADAM,
     3,
     {3, 4, 5, 6, 7, 8},
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"},
     9,
     "ResourceApplyAdam"},
    {"ApplyRMSProp",
     WEFT_PC_TRAIN_RMSPROP,
     3,
     {3, 4, 5, 6, -1},
     {"lr", "rho", "momentum", "epsilon"},
     7,
     "ResourceApplyRMSProp"},
};

weft_status_t *weft_pc_train_read(weft_kernel_ctx_t *ctx, const weft_pc_train_op_t *op,
                                  const char *device, weft_pc_train_in_t *in) {
  memset(in, 0, sizeof *in);
  WEFT_RETURN_IF_ERROR(weft_pc_train_operands(ctx, op->name, device, op->n_refs, op->grad_input,
                                              op->kind == WEFT_PC_TRAIN_SGD, in->refs, &in->grad));
  for (; in->n_scalars < WEFT_PC_TRAIN_MAX_SCALARS && op->scalars[in->n_scalars] >= 0;
       in->n_scalars++)
    WEFT_RETURN_IF_ERROR(weft_pc_train_scalar(ctx, op->scalars[in->n_scalars],
                                              op->names[in->n_scalars], in->refs[0].dtype,
                                              &in->scalars[in->n_scalars]));
  return NULL;
}

weft_status_t *weft_pc_train_compute(weft_kernel_ctx_t *ctx, const weft_pc_train_op_t *op,
                                     weft_pc_train_update_fn update) {
  bool lock = weft_pc_attr_bool(ctx, "use_locking", false);
  if (lock) H->kernel_lock_ref(ctx, 0);
  weft_status_t *s = update(ctx, op);
  if (lock) H->kernel_unlock_ref(ctx, 0);
  WEFT_RETURN_IF_ERROR(s);
  return H->kernel_num_outputs(ctx) > 0 ? H->kernel_forward_ref(ctx, 0, 0) : NULL;
}

weft_status_t *weft_pc_register_all(const weft_registrar_t *registrar,
                                    const weft_pc_register_fn *fns, size_t n) {
  for (size_t i = 0; i < n; i++) WEFT_RETURN_IF_ERROR(fns[i](registrar));
  return NULL;
}
