/* resource_var_kernels.c: the core's CPU kernels for TensorFlow's resource variables
 * (VarHandleOp, ReadVariableOp, AssignVariableOp, AssignAddVariableOp, AssignSubVariableOp,
 * VarIsInitializedOp, ResourceGather, ResourceScatter*, VariableShape, DestroyResourceOp),
 * following tensorflow/core/kernels/resource_variable_ops.cc, messages included.
 *
 * A resource variable is a variable of the session's resource manager (resource_mgr.c), the same
 * one a VariableV2 of that container and shared name refers to: TensorFlow keeps both kinds apart,
 * but a graph mixing them for one name means one variable, and one storage keeps checkpoints and
 * initialisers simple. Weft has no resource dtype: the handle is a string scalar
 * "container|shared_name" (containers hold no '|'). A variable is created by its first assignment,
 * as TensorFlow's AssignVariableOp does (LookupOrCreateResource); until then reading it fails with
 * TensorFlow's "Error while reading resource variable ..." message. Updates copy the value first
 * when a reader still holds it (a fetch, a read in flight), as the ref-variable kernels do. These
 * live in the core because they need the resource manager. */
#include "exec_internal.h"

#include <string.h>

#define err weft__kernel_error


static weft_dtype_t attr_type(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_TYPE ? v->u.type : WEFT_DT_INVALID;
}

static bool attr_bool(const weft_node_t *n, const char *name, bool dflt) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_BOOL ? v->u.b : dflt;
}

static const char *attr_string(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_STRING ? v->u.s.data : "";
}

/* The handle input 0 names: its container ("" is TensorFlow's default, "localhost") and name. */
typedef struct handle {
  char *container, *name;
} handle_t;

static void handle_clear(handle_t *h) {
  g_free(h->container);
  g_free(h->name);
}

/* The container as TensorFlow's messages print it. */
static const char *shown(const handle_t *h) { return *h->container ? h->container : "localhost"; }

static weft_status_t *parse_handle_at(weft_kernel_ctx_t *ctx, int index, handle_t *h) {
  weft_tensor_t *t = ctx->inputs[index].tensor;
  if (t == NULL || t->dtype != WEFT_DT_STRING || t->rank != 0) {
    return err(ctx, WEFT_INVALID_ARGUMENT, "the resource handle must be a string scalar");
  }
  const weft_string_t *s = weft_tensor_data(t);
  const char *bar = memchr(s->data, '|', s->len);
  if (bar == NULL) {
    return err(ctx, WEFT_INVALID_ARGUMENT, "'%.*s' is not a resource variable handle",
               (int)s->len, s->data);
  }
  h->container = g_strndup(s->data, (gsize)(bar - s->data));
  h->name = g_strndup(bar + 1, s->len - (size_t)(bar - s->data) - 1);
  return NULL;
}

static weft_status_t *parse_handle(weft_kernel_ctx_t *ctx, handle_t *h) {
  return parse_handle_at(ctx, 0, h);
}

/* LookupResource's NOT_FOUND, in TensorFlow's words (Var's type name included). */
static char *not_found_text(const handle_t *h) {
  return g_strdup_printf("Resource %s/%s/N10tensorflow3VarE does not exist.", shown(h), h->name);
}

static weft_status_t *not_found(weft_kernel_ctx_t *ctx, const handle_t *h) {
  char *why = not_found_text(h);
  weft_status_t *st = err(ctx, WEFT_NOT_FOUND, "%s", why);
  g_free(why);
  return st;
}

/* The initialised variable the handle names, locked, or NULL (none, or never assigned). */
static weft__variable_t *lookup_locked(weft_kernel_ctx_t *ctx, const handle_t *h) {
  if (ctx->resources == NULL) return NULL;
  weft__variable_t *var =
      weft__resource_mgr_lookup(ctx->resources, ctx->device, h->container, h->name);
  if (var == NULL) return NULL;
  g_rec_mutex_lock(&var->lock);
  if (var->value == NULL) {
    g_rec_mutex_unlock(&var->lock);
    weft__variable_unref(var);
    return NULL;
  }
  return var;
}

weft_status_t *weft__resource_handle_variable(weft_kernel_ctx_t *ctx, int index,
                                              weft__variable_t **out) {
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle_at(ctx, index, &h));
  weft__variable_t *var =
      ctx->resources ? weft__resource_mgr_lookup(ctx->resources, ctx->device, h.container, h.name)
                     : NULL;
  weft_status_t *st = var ? NULL : not_found(ctx, &h);
  handle_clear(&h);
  *out = var;
  return st;
}

static void release(weft__variable_t *var) {
  g_rec_mutex_unlock(&var->lock);
  weft__variable_unref(var);
}

/* Gives the variable a buffer nobody else holds before an in-place update. Under var->lock. */
static weft_status_t *make_exclusive(weft__variable_t *var) {
  weft_tensor_t *cur = var->value;
  if (g_atomic_int_get(&cur->refcount) == 1 && g_atomic_int_get(&cur->buffer->refcount) == 1)
    return NULL;
  weft_tensor_t *copy = NULL;
  WEFT_RETURN_IF_ERROR(weft__tensor_copy_to_host(cur, &copy));
  weft_tensor_unref(var->value);
  var->value = copy;
  return NULL;
}

/* Shared with the other core kernels (exec_internal.h): output 0 or the error, never both. */
weft_status_t *weft__kernel_set_output0(weft_kernel_ctx_t *ctx, weft_tensor_t *t,
                                       weft_status_t *st) {
  if (st) {
    weft_tensor_unref(t);
    return st;
  }
  weft_tensor_unref(ctx->outputs[0].tensor);
  ctx->outputs[0].tensor = t;
  return NULL;
}

static weft_status_t *var_handle(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const char *container = attr_string(ctx->node, "container");
  const char *shared = attr_string(ctx->node, "shared_name");
  if (strchr(container, '|') != NULL) {
    return err(ctx, WEFT_INVALID_ARGUMENT, "container '%s' holds a '|'", container);
  }
  /* As VariableV2 here: no shared_name shares by the node's name. */
  if (*shared == '\0') shared = ctx->node->name;
  char *text = g_strdup_printf("%s|%s", container, shared);
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, 0, NULL);
  weft_status_t *st = weft_tensor_set_string(t, 0, text, strlen(text));
  g_free(text);
  return weft__kernel_set_output0(ctx, t, st);
}

static weft_status_t *read_variable(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft__variable_t *var = lookup_locked(ctx, &h);
  weft_status_t *st = NULL;
  if (var == NULL) {
    char *why = not_found_text(&h);
    st = err(ctx, WEFT_FAILED_PRECONDITION,
             "Error while reading resource variable %s from Container: %s. This could mean that "
             "the variable was uninitialized. Not found: %s",
             h.name, shown(&h), why);
    g_free(why);
  } else {
    weft_dtype_t want = attr_type(ctx->node, "dtype");
    if (var->value->dtype != want) {
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "Trying to read variable with wrong dtype. Expected %s got %s",
               weft__dtype_tf_name(want), weft__dtype_tf_name(var->value->dtype));
    } else {
      weft_tensor_unref(ctx->outputs[0].tensor);
      ctx->outputs[0].tensor = weft_tensor_ref(var->value);
    }
    release(var);
  }
  handle_clear(&h);
  return st;
}

static weft_status_t *assign_variable(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  if (ctx->resources == NULL) {
    return err(ctx, WEFT_FAILED_PRECONDITION, "runs without a resource manager");
  }
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft_tensor_t *value = ctx->inputs[1].tensor;
  weft_dtype_t dtype = attr_type(ctx->node, "dtype");
  weft_status_t *st = NULL;
  if (value->dtype != dtype) {
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Variable and value dtypes don't match; respectively, %s and %s",
             weft__dtype_tf_name(dtype), weft__dtype_tf_name(value->dtype));
    handle_clear(&h);
    return st;
  }
  weft__variable_t *var =
      weft__resource_mgr_variable(ctx->resources, ctx->device, h.container, h.name);
  g_rec_mutex_lock(&var->lock);
  weft_tensor_t *cur = var->value;
  if (cur != NULL && cur->dtype != dtype) {
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Trying to assign variable with wrong dtype. Expected %s got %s",
             weft__dtype_tf_name(cur->dtype), weft__dtype_tf_name(dtype));
  } else if (cur != NULL && attr_bool(ctx->node, "validate_shape", false) &&
             (cur->rank != value->rank ||
              memcmp(cur->dims, value->dims, sizeof(int64_t) * (size_t)value->rank) != 0)) {
    char *want = weft__shape_to_string(cur->rank, cur->dims);
    char *got = weft__shape_to_string(value->rank, value->dims);
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Trying to assign to variable with tensor with wrong shape. Expected %s got %s", want,
             got);
    g_free(want);
    g_free(got);
  } else {
    /* A copy: the caller may still change a tensor it fed (TensorFlow copies unless it can
     * forward the input's buffer). */
    weft_tensor_t *copy = NULL;
    st = weft__tensor_copy_to_host(value, &copy);
    if (!st) {
      weft_tensor_unref(var->value);
      var->value = copy;
    }
  }
  g_rec_mutex_unlock(&var->lock);
  weft__variable_unref(var);
  handle_clear(&h);
  return st;
}

#define ADD_CASE(DT, T, UT)                                                              \
  case DT: {                                                                             \
    T *v = (T *)vp;                                                                      \
    const T *x = (const T *)xp;                                                          \
    for (int64_t i = 0; i < n; i++) v[i] = (T)(sub ? (UT)v[i] - (UT)x[i] : (UT)v[i] + (UT)x[i]); \
    return true;                                                                         \
  }

/* v += x (v -= x) elementwise, wrapping for integers as TensorFlow's Eigen kernels do; false for
 * a dtype that is not a number. */
static bool update_elems(weft_dtype_t dtype, void *vp, const void *xp, int64_t n, bool sub) {
  switch (dtype) {
    ADD_CASE(WEFT_DT_FLOAT, float, float)
    ADD_CASE(WEFT_DT_DOUBLE, double, double)
    ADD_CASE(WEFT_DT_INT8, int8_t, uint8_t)
    ADD_CASE(WEFT_DT_INT16, int16_t, uint16_t)
    ADD_CASE(WEFT_DT_INT32, int32_t, uint32_t)
    ADD_CASE(WEFT_DT_INT64, int64_t, uint64_t)
    ADD_CASE(WEFT_DT_UINT8, uint8_t, uint8_t)
    ADD_CASE(WEFT_DT_UINT16, uint16_t, uint16_t)
    ADD_CASE(WEFT_DT_UINT32, uint32_t, uint32_t)
    ADD_CASE(WEFT_DT_UINT64, uint64_t, uint64_t)
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16: {
      bool half = dtype == WEFT_DT_HALF;
      uint16_t *v = vp;
      const uint16_t *x = xp;
      for (int64_t i = 0; i < n; i++) {
        float a = half ? weft__half_to_float(v[i]) : weft__bfloat16_to_float(v[i]);
        float b = half ? weft__half_to_float(x[i]) : weft__bfloat16_to_float(x[i]);
        float r = sub ? a - b : a + b;
        v[i] = half ? weft__float_to_half(r) : weft__float_to_bfloat16(r);
      }
      return true;
    }
    default: return false;
  }
}
#undef ADD_CASE

static weft_status_t *update_variable(weft_kernel_ctx_t *ctx, bool sub) {
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft_tensor_t *value = ctx->inputs[1].tensor;
  weft__variable_t *var = lookup_locked(ctx, &h);
  weft_status_t *st = NULL;
  if (var == NULL) {
    st = not_found(ctx, &h);
  } else {
    weft_tensor_t *cur = var->value;
    if (cur->dtype != value->dtype) {
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "Trying to update variable with wrong dtype. Expected %s got %s",
               weft__dtype_tf_name(cur->dtype), weft__dtype_tf_name(value->dtype));
    } else if (cur->rank != value->rank ||
               memcmp(cur->dims, value->dims, sizeof(int64_t) * (size_t)cur->rank) != 0) {
      char *a = weft__shape_to_string(cur->rank, cur->dims);
      char *b = weft__shape_to_string(value->rank, value->dims);
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "Cannot update variable with shape %s using a Tensor with shape %s, shapes must be "
               "equal.",
               a, b);
      g_free(a);
      g_free(b);
    } else if (!(st = make_exclusive(var)) &&
               !update_elems(cur->dtype, weft_tensor_data(var->value), weft_tensor_data(value),
                             value->num_elements, sub)) {
      st = err(ctx, WEFT_UNIMPLEMENTED, "%s is not defined for variables of dtype %s",
               ctx->node->op_name, weft__dtype_tf_name(cur->dtype));
    }
    release(var);
  }
  handle_clear(&h);
  return st;
}

static weft_status_t *assign_add(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return update_variable(ctx, false);
}

static weft_status_t *assign_sub(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return update_variable(ctx, true);
}

static weft_status_t *is_initialized(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft__variable_t *var = lookup_locked(ctx, &h);
  if (var != NULL) release(var);
  handle_clear(&h);
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_BOOL, 0, NULL);
  *(uint8_t *)weft_tensor_data(t) = var != NULL;
  weft_tensor_unref(ctx->outputs[0].tensor);
  ctx->outputs[0].tensor = t;
  return NULL;
}

static weft_status_t *variable_shape(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft__variable_t *var = lookup_locked(ctx, &h);
  if (var == NULL) {
    weft_status_t *st = not_found(ctx, &h);
    handle_clear(&h);
    return st;
  }
  handle_clear(&h);
  weft_dtype_t out_type = attr_type(ctx->node, "out_type");
  const weft_tensor_t *cur = var->value;
  int64_t rank = cur->rank;
  weft_tensor_t *t = weft_tensor_new(out_type == WEFT_DT_INT64 ? WEFT_DT_INT64 : WEFT_DT_INT32, 1,
                                     &rank);
  weft_status_t *st = NULL;
  for (int d = 0; d < cur->rank; d++) {
    if (out_type == WEFT_DT_INT64) {
      ((int64_t *)weft_tensor_data(t))[d] = cur->dims[d];
    } else if (cur->dims[d] > G_MAXINT32) {
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "Shape has dimension %d with size %" G_GINT64_FORMAT
               " which is too large to be represented by int32",
               d, cur->dims[d]);
      break;
    } else {
      ((int32_t *)weft_tensor_data(t))[d] = (int32_t)cur->dims[d];
    }
  }
  release(var);
  return weft__kernel_set_output0(ctx, t, st);
}

/* Every index in [0, limit), checked before anything is read or written: TensorFlow's message
 * names the first bad one by its position in indices. */
static weft_status_t *check_indices(weft_kernel_ctx_t *ctx, const weft_tensor_t *indices,
                                    int64_t limit) {
  bool wide = indices->dtype == WEFT_DT_INT64;
  const void *ix = weft_tensor_data(indices);
  for (int64_t k = 0; k < indices->num_elements; k++) {
    int64_t i = wide ? ((const int64_t *)ix)[k] : ((const int32_t *)ix)[k];
    if (i >= 0 && i < limit) continue;
    GString *at = g_string_new("[");
    int64_t rest = k;
    int64_t pos[WEFT_MAX_RANK];
    for (int d = indices->rank - 1; d >= 0; d--) {
      pos[d] = indices->dims[d] > 0 ? rest % indices->dims[d] : 0;
      rest = indices->dims[d] > 0 ? rest / indices->dims[d] : 0;
    }
    for (int d = 0; d < indices->rank; d++)
      g_string_append_printf(at, "%s%" G_GINT64_FORMAT, d ? "," : "", pos[d]);
    g_string_append_c(at, ']');
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "indices%s = %" G_GINT64_FORMAT " is not in [0, %" G_GINT64_FORMAT ")",
                            indices->rank > 0 ? at->str : "", i, limit);
    g_string_free(at, TRUE);
    return st;
  }
  return NULL;
}

/* ResourceGather with batch_dims 0: output = indices.shape + params.shape[1:]. */
static weft_status_t *resource_gather(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft__attr_value_t *bd = weft__attrs_get(ctx->node->attrs, "batch_dims");
  if (bd != NULL && bd->kind == WEFT_ATTR_INT && bd->u.i != 0) {
    return err(ctx, WEFT_UNIMPLEMENTED, "ResourceGather with batch_dims %" G_GINT64_FORMAT
               " is not supported (only 0)", bd->u.i);
  }
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft__variable_t *var = lookup_locked(ctx, &h);
  if (var == NULL) {
    weft_status_t *st = not_found(ctx, &h);
    handle_clear(&h);
    return st;
  }
  handle_clear(&h);
  const weft_tensor_t *params = var->value;
  const weft_tensor_t *indices = ctx->inputs[1].tensor;
  weft_dtype_t want = attr_type(ctx->node, "dtype");
  weft_status_t *st = NULL;
  weft_tensor_t *out = NULL;
  if (params->dtype != want) {
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Trying to read variable with wrong dtype. Expected %s got %s",
             weft__dtype_tf_name(want), weft__dtype_tf_name(params->dtype));
  } else if (params->rank < 1) {
    st = err(ctx, WEFT_INVALID_ARGUMENT, "params must be at least 1 dimensional");
  } else if (indices->rank + params->rank - 1 > WEFT_MAX_RANK) {
    st = err(ctx, WEFT_INVALID_ARGUMENT, "the result would have rank %d, more than %d",
             indices->rank + params->rank - 1, WEFT_MAX_RANK);
  }
  if (!st) {
    int64_t dims[WEFT_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < indices->rank; d++) dims[rank++] = indices->dims[d];
    for (int d = 1; d < params->rank; d++) dims[rank++] = params->dims[d];
    int64_t limit = params->dims[0];
    int64_t slice = limit > 0 ? params->num_elements / limit : 0;
    size_t esize = weft_dtype_size(params->dtype);
    int64_t n = indices->num_elements;
    bool wide = indices->dtype == WEFT_DT_INT64;
    const void *ix = weft_tensor_data(indices);
    st = check_indices(ctx, indices, limit);
    if (!st) {
      out = weft_tensor_new(params->dtype, rank, dims);
      const char *src = weft_tensor_data(params);
      char *dst = weft_tensor_data(out);
      for (int64_t k = 0; k < n && !st; k++) {
        int64_t i = wide ? ((const int64_t *)ix)[k] : ((const int32_t *)ix)[k];
        if (params->dtype == WEFT_DT_STRING) {
          const weft_string_t *s = (const weft_string_t *)src + i * slice;
          for (int64_t e = 0; e < slice && !st; e++)
            st = weft_tensor_set_string(out, k * slice + e, s[e].data, s[e].len);
        } else {
          memcpy(dst + (size_t)(k * slice) * esize, src + (size_t)(i * slice) * esize,
                 (size_t)slice * esize);
        }
      }
    }
  }
  release(var);
  return weft__kernel_set_output0(ctx, out, st);
}

/* ResourceScatter{Update,Add,Sub,Mul,Div,Min,Max}: var[indices[k], ...] op= updates[k, ...]
 * (a scalar update applies to every selected slice), after every index and the shapes were
 * checked, as tensorflow/core/kernels/resource_variable_ops.cc does. */
typedef enum scatter_kind {
  SCATTER_UPDATE, SCATTER_ADD, SCATTER_SUB, SCATTER_MUL, SCATTER_DIV, SCATTER_MIN, SCATTER_MAX
} scatter_kind_t;

#define SCATTER_CASE(DT, T)                                                  \
  case DT: {                                                                 \
    T *v = dst;                                                              \
    const T *u = src;                                                        \
    for (int64_t e = 0; e < n; e++) {                                        \
      T x = u[bcast ? 0 : e];                                                \
      switch (kind) {                                                        \
        case SCATTER_UPDATE: v[e] = x; break;                                \
        case SCATTER_ADD: v[e] += x; break;                                  \
        case SCATTER_SUB: v[e] -= x; break;                                  \
        case SCATTER_MUL: v[e] *= x; break;                                  \
        case SCATTER_DIV: v[e] /= x; break;                                  \
        case SCATTER_MIN: v[e] = x < v[e] ? x : v[e]; break;                 \
        case SCATTER_MAX: v[e] = x > v[e] ? x : v[e]; break;                 \
      }                                                                      \
    }                                                                        \
    return true;                                                             \
  }

/* One slice of n elements; false for a dtype the arithmetic kinds do not cover. */
static bool scatter_slice(weft_dtype_t dtype, scatter_kind_t kind, void *dst, const void *src,
                          int64_t n, bool bcast) {
  switch (dtype) {
    SCATTER_CASE(WEFT_DT_FLOAT, float)
    SCATTER_CASE(WEFT_DT_DOUBLE, double)
    default: break;
  }
  if (kind != SCATTER_UPDATE) return false;
  size_t es = weft_dtype_size(dtype);
  for (int64_t e = 0; e < n; e++)
    memcpy((char *)dst + (size_t)e * es, (const char *)src + (size_t)(bcast ? 0 : e) * es, es);
  return true;
}
#undef SCATTER_CASE

static weft_status_t *scatter_checked(weft_kernel_ctx_t *ctx, weft__variable_t *var,
                                      scatter_kind_t kind) {
  const weft_tensor_t *indices = ctx->inputs[1].tensor, *updates = ctx->inputs[2].tensor;
  const weft_tensor_t *params = var->value;
  if (params->dtype != updates->dtype) {
    return err(ctx, WEFT_INVALID_ARGUMENT,
               "Trying to update variable with wrong dtype. Expected %s got %s",
               weft__dtype_tf_name(params->dtype), weft__dtype_tf_name(updates->dtype));
  }
  if (params->rank < 1) return err(ctx, WEFT_INVALID_ARGUMENT, "params must be at least 1 dimensional");
  if (params->dtype == WEFT_DT_STRING || (kind != SCATTER_UPDATE && params->dtype != WEFT_DT_FLOAT &&
                                          params->dtype != WEFT_DT_DOUBLE)) {
    return err(ctx, WEFT_UNIMPLEMENTED, "%s is not supported for variables of dtype %s",
               ctx->node->op_name, weft__dtype_tf_name(params->dtype));
  }
  bool bcast = updates->rank == 0;
  bool shape_ok = bcast || updates->rank == indices->rank + params->rank - 1;
  for (int d = 0; shape_ok && !bcast && d < updates->rank; d++) {
    int64_t want = d < indices->rank ? indices->dims[d] : params->dims[d - indices->rank + 1];
    shape_ok = updates->dims[d] == want;
  }
  if (!shape_ok) {
    char *u = weft__shape_to_string(updates->rank, updates->dims);
    char *i = weft__shape_to_string(indices->rank, indices->dims);
    char *p = weft__shape_to_string(params->rank, params->dims);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "Must have updates.shape = indices.shape + params.shape[1:] or "
                            "updates.shape = [], got updates.shape %s, indices.shape %s, "
                            "params.shape %s", u, i, p);
    g_free(u);
    g_free(i);
    g_free(p);
    return st;
  }
  int64_t limit = params->dims[0];
  WEFT_RETURN_IF_ERROR(check_indices(ctx, indices, limit));
  WEFT_RETURN_IF_ERROR(make_exclusive(var));
  int64_t slice = limit > 0 ? params->num_elements / limit : 0;
  size_t es = weft_dtype_size(params->dtype);
  bool wide = indices->dtype == WEFT_DT_INT64;
  const void *ix = weft_tensor_data(indices);
  char *base = weft_tensor_data(var->value);
  const char *up = weft_tensor_data(updates);
  for (int64_t k = 0; k < indices->num_elements; k++) {
    int64_t i = wide ? ((const int64_t *)ix)[k] : ((const int32_t *)ix)[k];
    scatter_slice(params->dtype, kind, base + (size_t)(i * slice) * es,
                  up + (bcast ? 0 : (size_t)(k * slice) * es), slice, bcast);
  }
  return NULL;
}

static weft_status_t *resource_scatter(weft_kernel_ctx_t *ctx, void *state) {
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  weft__variable_t *var = lookup_locked(ctx, &h);
  weft_status_t *st = var ? scatter_checked(ctx, var, (scatter_kind_t)GPOINTER_TO_INT(state))
                          : not_found(ctx, &h);
  if (var) release(var);
  handle_clear(&h);
  return st;
}

static weft_status_t *destroy_resource(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  handle_t h = {0};
  WEFT_RETURN_IF_ERROR(parse_handle(ctx, &h));
  bool removed = ctx->resources != NULL &&
                 weft__resource_mgr_remove(ctx->resources, ctx->device, h.container, h.name);
  weft_status_t *st = NULL;
  if (!removed && !attr_bool(ctx->node, "ignore_lookup_error", true)) st = not_found(ctx, &h);
  handle_clear(&h);
  return st;
}

void weft__resource_var_kernels_register(void) {
  static const weft_dtype_t numbers[] = {
      WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
      WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
      WEFT_DT_UINT32, WEFT_DT_UINT64};
  static const weft_type_constraint_t number_dtype[] = {
      {.attr = "dtype", .dtypes = numbers, .n_dtypes = G_N_ELEMENTS(numbers)}};
  static const struct {
    const char *op;
    weft_kernel_compute_fn compute;
    bool numbers_only;
  } kernels[] = {
      {"VarHandleOp", var_handle, false},
      {"ReadVariableOp", read_variable, false},
      {"AssignVariableOp", assign_variable, false},
      {"AssignAddVariableOp", assign_add, true},
      {"AssignSubVariableOp", assign_sub, true},
      {"VarIsInitializedOp", is_initialized, false},
      {"ResourceGather", resource_gather, false},
      {"VariableShape", variable_shape, false},
      {"DestroyResourceOp", destroy_resource, false},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(kernels); k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = kernels[k].op,
                             .device_type = "CPU",
                             .constraints = kernels[k].numbers_only ? number_dtype : NULL,
                             .n_constraints = kernels[k].numbers_only ? 1 : 0,
                             .compute = kernels[k].compute};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
  static const char *const scatter_ops[] = {"ResourceScatterUpdate", "ResourceScatterAdd",
                                            "ResourceScatterSub",    "ResourceScatterMul",
                                            "ResourceScatterDiv",    "ResourceScatterMin",
                                            "ResourceScatterMax"};
  for (int k = SCATTER_UPDATE; k <= SCATTER_MAX; k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = scatter_ops[k],
                             .device_type = "CPU",
                             .compute = resource_scatter,
                             .user_data = GINT_TO_POINTER(k)};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
}
