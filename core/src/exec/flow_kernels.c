/* flow_kernels.c: the core's CPU kernels for control flow, Assert and the TensorArray ops.
 *
 * Switch, Merge, Enter, Exit, NextIteration, LoopCond and ControlTrigger are the executor's own
 * (frames.c): their kernels only let placement put them on the CPU. Assert and the TensorArrays
 * follow tensorflow/core/kernels/logging_ops.cc, tensor_array.{h,cc} and tensor_array_ops.cc,
 * messages included. A TensorArray lives in its step's resources (weft__step_resources_t) and goes
 * when the step ends, as in TensorFlow's per-step container; its handle is the string vector
 * ["_tensor_arrays", name]. They live in the core because they need that per-step state. */
#include "frames_internal.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Per-step resources */

typedef struct ta_elem {
  weft_tensor_t *tensor;
  int rank; /* the shape written (kept after a clear; a gradient array copies it) */
  int64_t dims[WEFT_MAX_RANK];
  bool written, read, cleared;
} ta_elem_t;

typedef struct tensor_array {
  char *name;
  weft_dtype_t dtype;
  int es_rank; /* element shape; -1: unknown rank */
  int64_t es_dims[WEFT_MAX_RANK];
  bool dynamic_size, clear_after_read, identical_element_shapes, closed;
  bool multiple_writes_aggregate; /* a gradient array: writes to one index add up */
  GArray *elems; /* ta_elem_t */
  GMutex lock;
} tensor_array_t;

static void tensor_array_free(gpointer p) {
  tensor_array_t *ta = p;
  for (guint k = 0; k < ta->elems->len; k++)
    weft_tensor_unref(g_array_index(ta->elems, ta_elem_t, k).tensor);
  g_array_free(ta->elems, TRUE);
  g_mutex_clear(&ta->lock);
  g_free(ta->name);
  g_free(ta);
}

void weft__step_resources_clear(weft__step_resources_t *r) {
  if (r->arrays) g_hash_table_destroy(r->arrays);
  r->arrays = NULL;
  weft__step_stacks_clear(r);
  g_mutex_clear(&r->lock);
}

#define TA_CONTAINER "_tensor_arrays"

/* Errors name the node: "node 'NAME': MESSAGE" (kernel_host.c). */
#define err weft__kernel_error

static weft_tensor_t *input(weft_kernel_ctx_t *ctx, int i) { return ctx->inputs[i].tensor; }

/* TensorShape::DebugString: "[2,3]", "[?,3]" for unknown dims, "<unknown>" for unknown rank. */
static char *shape_str(int rank, const int64_t *dims) { return weft__shape_to_string(rank, dims); }
static char *tshape_str(const weft_tensor_t *t) { return shape_str(t->rank, t->dims); }

static bool attr_bool(const weft_node_t *n, const char *name, bool dflt) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_BOOL ? v->u.b : dflt;
}

static int64_t attr_int(const weft_node_t *n, const char *name, int64_t dflt) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_INT ? v->u.i : dflt;
}

static weft_dtype_t attr_type(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  return v && v->kind == WEFT_ATTR_TYPE ? v->u.type : WEFT_DT_INVALID;
}

static void attr_shape(const weft_node_t *n, const char *name, int *rank, int64_t *dims) {
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, name);
  *rank = -1;
  if (v && v->kind == WEFT_ATTR_SHAPE && v->u.shape.rank >= 0 && v->u.shape.rank <= WEFT_MAX_RANK) {
    *rank = v->u.shape.rank;
    for (int d = 0; d < *rank; d++) dims[d] = v->u.shape.dims[d] < 0 ? -1 : v->u.shape.dims[d];
  }
}

static weft_status_t *scalar_int(weft_kernel_ctx_t *ctx, int i, const char *what, int64_t *out) {
  weft_tensor_t *t = input(ctx, i);
  if (t->rank != 0) {
    char *s = tshape_str(t);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT, "%s must be scalar, but had shape: %s",
                            what, s);
    g_free(s);
    return st;
  }
  *out = t->dtype == WEFT_DT_INT64 ? ((int64_t *)weft_tensor_data(t))[0]
                                   : ((int32_t *)weft_tensor_data(t))[0];
  return NULL;
}

static weft_status_t *int_vector(weft_kernel_ctx_t *ctx, int i, const char *msg, int64_t **out,
                                 int64_t *n) {
  weft_tensor_t *t = input(ctx, i);
  if (t->rank != 1) {
    char *s = tshape_str(t);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT, "%s%s", msg, s);
    g_free(s);
    return st;
  }
  *n = t->num_elements;
  *out = g_new(int64_t, *n > 0 ? *n : 1);
  for (int64_t k = 0; k < *n; k++) {
    (*out)[k] = t->dtype == WEFT_DT_INT64 ? ((int64_t *)weft_tensor_data(t))[k]
                                          : ((int32_t *)weft_tensor_data(t))[k];
  }
  return NULL;
}

static weft_status_t *set_flow(weft_kernel_ctx_t *ctx, int o) {
  ctx->outputs[o].tensor = weft_tensor_new_scalar_float(0.0f);
  return NULL;
}

/* The array a handle names; locked on return. */
static weft_status_t *lookup(weft_kernel_ctx_t *ctx, tensor_array_t **out) {
  weft_tensor_t *h = input(ctx, 0);
  if (h->dtype != WEFT_DT_STRING || h->rank != 1 || h->dims[0] != 2) {
    char *s = tshape_str(h);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "Tensor array handle must be 2-element vector, but had shape: %s", s);
    g_free(s);
    return st;
  }
  const weft_string_t *parts = weft_tensor_data(h);
  char *container = g_strndup(parts[0].data, parts[0].len);
  char *name = g_strndup(parts[1].data, parts[1].len);
  weft__step_resources_t *r = ctx->step_resources;
  tensor_array_t *ta = NULL;
  if (r) {
    g_mutex_lock(&r->lock);
    ta = r->arrays && strcmp(container, TA_CONTAINER) == 0 ? g_hash_table_lookup(r->arrays, name)
                                                           : NULL;
    g_mutex_unlock(&r->lock);
  }
  weft_status_t *st = NULL;
  /* ResourceMgr's words: the step's container exists once an array was made in the step. */
  if (!ta && (!r || !r->arrays || strcmp(container, TA_CONTAINER) != 0)) {
    st = err(ctx, WEFT_NOT_FOUND,
             "Container %s does not exist. (Could not find resource: %s/%s)", container,
             container, name);
  } else if (!ta) {
    st = err(ctx, WEFT_NOT_FOUND,
             "Resource %s/%s/N10tensorflow11TensorArrayE does not exist.", container, name);
  }
  g_free(container);
  g_free(name);
  if (st) return st;
  g_mutex_lock(&ta->lock);
  if (ta->closed) {
    g_mutex_unlock(&ta->lock);
    return err(ctx, WEFT_INVALID_ARGUMENT, "TensorArray %s has already been closed.", ta->name);
  }
  *out = ta;
  return NULL;
}

static weft_status_t *ta_create(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  static gint counter;
  int64_t size = 0;
  weft_tensor_t *size_t_ = input(ctx, 0);
  if (size_t_->rank != 0) {
    char *s = tshape_str(size_t_);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT, "TensorArray size must be scalar, but had "
                            "shape: %s", s);
    g_free(s);
    return st;
  }
  size = ((int32_t *)weft_tensor_data(size_t_))[0];
  if (size < 0) return err(ctx, WEFT_INVALID_ARGUMENT, "Size should be >= 0.");
  weft__step_resources_t *r = ctx->step_resources;
  if (!r) return err(ctx, WEFT_INTERNAL, "TensorArray outside a step");
  tensor_array_t *ta = g_new0(tensor_array_t, 1);
  const weft__attr_value_t *nv = weft__attrs_get(ctx->node->attrs, "tensor_array_name");
  const char *base = nv && nv->kind == WEFT_ATTR_STRING && nv->u.s.len ? nv->u.s.data
                                                                        : ctx->node->name;
  ta->name = g_strdup_printf("%s_%d", base, g_atomic_int_add(&counter, 1));
  ta->dtype = attr_type(ctx->node, "dtype");
  attr_shape(ctx->node, "element_shape", &ta->es_rank, ta->es_dims);
  ta->dynamic_size = attr_bool(ctx->node, "dynamic_size", false);
  ta->clear_after_read = attr_bool(ctx->node, "clear_after_read", true);
  ta->identical_element_shapes = attr_bool(ctx->node, "identical_element_shapes", false);
  ta->elems = g_array_new(FALSE, TRUE, sizeof(ta_elem_t));
  g_array_set_size(ta->elems, (guint)size);
  g_mutex_init(&ta->lock);
  weft_tensor_t *handle = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){2});
  weft_status_free(weft_tensor_set_string(handle, 0, TA_CONTAINER, strlen(TA_CONTAINER)));
  weft_status_free(weft_tensor_set_string(handle, 1, ta->name, strlen(ta->name)));
  g_mutex_lock(&r->lock);
  if (!r->arrays)
    r->arrays = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, tensor_array_free);
  g_hash_table_insert(r->arrays, ta->name, ta);
  g_mutex_unlock(&r->lock);
  ctx->outputs[0].tensor = handle;
  return set_flow(ctx, 1);
}


/* TensorArray::SetElemShape: merges a shape into the array's element shape (unknown dims take
 * the known ones); INVALID_ARGUMENT when they disagree. Under ta->lock. */
static weft_status_t *set_elem_shape(weft_kernel_ctx_t *ctx, tensor_array_t *ta, int rank,
                                     const int64_t *dims) {
  if (rank < 0) return NULL;
  if (ta->es_rank < 0) {
    ta->es_rank = rank;
    memcpy(ta->es_dims, dims, sizeof(int64_t) * (size_t)rank);
    return NULL;
  }
  bool ok = ta->es_rank == rank;
  for (int d = 0; ok && d < rank; d++)
    ok = ta->es_dims[d] < 0 || dims[d] < 0 || ta->es_dims[d] == dims[d];
  if (!ok) {
    char *a = shape_str(ta->es_rank, ta->es_dims), *b = shape_str(rank, dims);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "Incompatible shapes during merge: %s vs. %s", a, b);
    g_free(a);
    g_free(b);
    return st;
  }
  for (int d = 0; d < rank; d++)
    if (ta->es_dims[d] < 0) ta->es_dims[d] = dims[d];
  return NULL;
}

static bool fully_defined(const tensor_array_t *ta) {
  if (ta->es_rank < 0) return false;
  for (int d = 0; d < ta->es_rank; d++)
    if (ta->es_dims[d] < 0) return false;
  return true;
}

static bool compatible(const tensor_array_t *ta, const weft_tensor_t *t) {
  if (ta->es_rank < 0) return true;
  if (ta->es_rank != t->rank) return false;
  for (int d = 0; d < t->rank; d++)
    if (ta->es_dims[d] >= 0 && ta->es_dims[d] != t->dims[d]) return false;
  return true;
}

/* A gradient array's second write to an index adds to the first (TensorArray's AddToTensor),
 * into a new tensor: the first may be shared. */
static weft_status_t *aggregate(weft_kernel_ctx_t *ctx, tensor_array_t *ta, int64_t index,
                                ta_elem_t *e, const weft_tensor_t *value) {
  bool same = e->tensor->rank == value->rank;
  for (int d = 0; same && d < value->rank; d++) same = e->tensor->dims[d] == value->dims[d];
  if (!same) {
    char *a = tshape_str(e->tensor), *b = tshape_str(value);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "TensorArray %s: Could not aggregate to TensorArray index %"
                            G_GINT64_FORMAT " because the existing shape is %s but the new input "
                            "shape is %s.", ta->name, index, a, b);
    g_free(a);
    g_free(b);
    return st;
  }
  weft_tensor_t *sum = weft_tensor_new(value->dtype, value->rank, value->dims);
  const void *x = weft_tensor_data(e->tensor), *y = weft_tensor_data(value);
  void *z = weft_tensor_data(sum);
  int64_t n = value->num_elements;
#define WEFT__ADD(ctype)                                                                   \
  for (int64_t i = 0; i < n; i++)                                                          \
    ((ctype *)z)[i] = (ctype)(((const ctype *)x)[i] + ((const ctype *)y)[i]);
#define WEFT__ADD16(to, from)                                                              \
  for (int64_t i = 0; i < n; i++)                                                          \
    ((uint16_t *)z)[i] = from(to(((const uint16_t *)x)[i]) + to(((const uint16_t *)y)[i]));
  switch (value->dtype) {
    case WEFT_DT_FLOAT: WEFT__ADD(float); break;
    case WEFT_DT_DOUBLE: WEFT__ADD(double); break;
    case WEFT_DT_INT8: WEFT__ADD(int8_t); break;
    case WEFT_DT_INT16: WEFT__ADD(int16_t); break;
    case WEFT_DT_INT32: WEFT__ADD(int32_t); break;
    case WEFT_DT_INT64: WEFT__ADD(int64_t); break;
    case WEFT_DT_UINT8: WEFT__ADD(uint8_t); break;
    case WEFT_DT_UINT16: WEFT__ADD(uint16_t); break;
    case WEFT_DT_UINT32: WEFT__ADD(uint32_t); break;
    case WEFT_DT_UINT64: WEFT__ADD(uint64_t); break;
    case WEFT_DT_HALF: WEFT__ADD16(weft__half_to_float, weft__float_to_half); break;
    case WEFT_DT_BFLOAT16: WEFT__ADD16(weft__bfloat16_to_float, weft__float_to_bfloat16); break;
    default:
      weft_tensor_unref(sum);
      return err(ctx, WEFT_UNIMPLEMENTED, "TensorArray %s: Could not aggregate %s values",
                 ta->name, weft__dtype_tf_name(value->dtype));
  }
#undef WEFT__ADD
#undef WEFT__ADD16
  weft_tensor_unref(e->tensor);
  e->tensor = sum;
  return NULL;
}

/* TensorArray::WriteOrAggregate. Under ta->lock. */
static weft_status_t *ta_write_one(weft_kernel_ctx_t *ctx, tensor_array_t *ta, int64_t index,
                                   weft_tensor_t *value) {
  if (index < 0 || (!ta->dynamic_size && index >= (int64_t)ta->elems->len)) {
    return err(ctx, WEFT_INVALID_ARGUMENT,
               "TensorArray %s: Tried to write to index %" G_GINT64_FORMAT
               " but array is not resizeable and size is: %u", ta->name, index, ta->elems->len);
  }
  if (index >= (int64_t)ta->elems->len) {
    if (index >= G_MAXINT32) {
      return err(ctx, WEFT_INVALID_ARGUMENT, "TensorArray %s: index %" G_GINT64_FORMAT
                 " is too large", ta->name, index);
    }
    g_array_set_size(ta->elems, (guint)index + 1);
  }
  ta_elem_t *e = &g_array_index(ta->elems, ta_elem_t, index);
  if (!compatible(ta, value)) {
    char *v = tshape_str(value), *es = shape_str(ta->es_rank, ta->es_dims);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "TensorArray %s: Could not write to TensorArray index %" G_GINT64_FORMAT
                            " because the value shape is %s which is incompatible with the "
                            "TensorArray's inferred element shape: %s (consider setting "
                            "infer_shape=False).", ta->name, index, v, es);
    g_free(v);
    g_free(es);
    return st;
  } else if (ta->identical_element_shapes && !fully_defined(ta)) {
    ta->es_rank = value->rank;
    memcpy(ta->es_dims, value->dims, sizeof(int64_t) * (size_t)value->rank);
  }
  if (e->read) {
    return err(ctx, WEFT_INVALID_ARGUMENT,
               "TensorArray %s: Could not write to TensorArray index %" G_GINT64_FORMAT
               " because it has already been read.", ta->name, index);
  }
  if (e->written && !ta->multiple_writes_aggregate) {
    return err(ctx, WEFT_INVALID_ARGUMENT,
               "TensorArray %s: Could not write to TensorArray index %" G_GINT64_FORMAT
               " because it has already been written to.", ta->name, index);
  }
  if (e->written && e->tensor) return aggregate(ctx, ta, index, e, value);
  e->tensor = weft_tensor_ref(value);
  e->rank = value->rank;
  memcpy(e->dims, value->dims, sizeof(int64_t) * (size_t)value->rank);
  e->written = true;
  return NULL;
}

/* TensorArray::Read: a new reference in *out. Under ta->lock. */
static weft_status_t *ta_read_one(weft_kernel_ctx_t *ctx, tensor_array_t *ta, int64_t index,
                                  weft_tensor_t **out) {
  if (index < 0 || index >= (int64_t)ta->elems->len) {
    return err(ctx, WEFT_INVALID_ARGUMENT,
               "Tried to read from index %" G_GINT64_FORMAT " but array size is: %u", index,
               ta->elems->len);
  }
  ta_elem_t *e = &g_array_index(ta->elems, ta_elem_t, index);
  if (e->cleared) {
    return err(ctx, WEFT_INVALID_ARGUMENT,
               "TensorArray %s: Could not read index %" G_GINT64_FORMAT
               " twice because it was cleared after a previous read (perhaps try setting "
               "clear_after_read = false?).", ta->name, index);
  }
  if (!e->written && ta->multiple_writes_aggregate && e->rank >= 0) {
    /* A gradient array's unwritten element: zeros of the forward element's shape. */
    e->tensor = weft_tensor_new(ta->dtype, e->rank, e->dims);
    e->written = true;
  } else if (!e->written) {
    if (!fully_defined(ta)) {
      char *es = shape_str(ta->es_rank, ta->es_dims);
      weft_status_t *st = err(
          ctx, WEFT_INVALID_ARGUMENT,
          "TensorArray %s: Could not read from TensorArray index %" G_GINT64_FORMAT
          ".  Furthermore, the element shape is not fully defined: %s.  It is possible you are "
          "working with a resizeable TensorArray and stop_gradients is not allowing the "
          "gradients to be written.  If you set the full element_shape property on the forward "
          "TensorArray, the proper all-zeros tensor will be returned instead of incurring this "
          "error.", ta->name, index, es);
      g_free(es);
      return st;
    }
    /* An unwritten element of a fully defined shape reads as zeros. */
    e->tensor = weft_tensor_new(ta->dtype, ta->es_rank, ta->es_dims);
    e->written = true;
  }
  *out = weft_tensor_ref(e->tensor);
  if (ta->clear_after_read) {
    weft_tensor_unref(e->tensor);
    e->tensor = NULL;
    e->cleared = true;
  }
  e->read = true;
  return NULL;
}

static weft_status_t *check_read_dtype(weft_kernel_ctx_t *ctx, tensor_array_t *ta) {
  weft_dtype_t want = attr_type(ctx->node, "dtype");
  if (want == ta->dtype) return NULL;
  return err(ctx, WEFT_INVALID_ARGUMENT, "TensorArray dtype is %s but Op requested dtype %s.",
             weft__dtype_tf_name(ta->dtype), weft__dtype_tf_name(want));
}

static weft_status_t *check_write_dtype(weft_kernel_ctx_t *ctx, tensor_array_t *ta,
                                        const weft_tensor_t *v) {
  if (v->dtype == ta->dtype) return NULL;
  return err(ctx, WEFT_INVALID_ARGUMENT,
             "TensorArray dtype is %s but Op is trying to write dtype %s.",
             weft__dtype_tf_name(ta->dtype), weft__dtype_tf_name(v->dtype));
}

static weft_status_t *ta_write(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t index;
  WEFT_RETURN_IF_ERROR(scalar_int(ctx, 1, "TensorArray index", &index));
  tensor_array_t *ta;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &ta));
  weft_status_t *st = check_write_dtype(ctx, ta, input(ctx, 2));
  if (!st) st = ta_write_one(ctx, ta, index, input(ctx, 2));
  g_mutex_unlock(&ta->lock);
  return st ? st : set_flow(ctx, 0);
}

static weft_status_t *ta_read(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t index;
  WEFT_RETURN_IF_ERROR(scalar_int(ctx, 1, "TensorArray index", &index));
  tensor_array_t *ta;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &ta));
  weft_tensor_t *t = NULL;
  weft_status_t *st = check_read_dtype(ctx, ta);
  if (!st) st = ta_read_one(ctx, ta, index, &t);
  g_mutex_unlock(&ta->lock);
  if (st) return st;
  ctx->outputs[0].tensor = t;
  return NULL;
}

/* Stacks tensors of one shape along a new first dim. */
static weft_tensor_t *stack(weft_tensor_t **parts, int64_t n, weft_dtype_t dtype, int rank,
                            const int64_t *dims) {
  int64_t out_dims[WEFT_MAX_RANK];
  out_dims[0] = n;
  for (int d = 0; d < rank; d++) out_dims[d + 1] = dims[d];
  weft_tensor_t *out = weft_tensor_new(dtype, rank + 1, out_dims);
  size_t esz = weft_dtype_size(dtype);
  for (int64_t k = 0; k < n; k++) {
    size_t bytes = (size_t)parts[k]->num_elements * esz;
    char *dst = (char *)weft_tensor_data(out) + (size_t)k * bytes;
    if (dtype == WEFT_DT_STRING) {
      const weft_string_t *src = weft_tensor_data(parts[k]);
      for (int64_t j = 0; j < parts[k]->num_elements; j++)
        weft_status_free(weft_tensor_set_string(out, k * parts[k]->num_elements + j, src[j].data,
                                                src[j].len));
    } else if (bytes) {
      memcpy(dst, weft_tensor_data(parts[k]), bytes);
    }
  }
  return out;
}

static weft_status_t *ta_gather(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t *idx = NULL, n = 0;
  WEFT_RETURN_IF_ERROR(int_vector(ctx, 1, "Expected indices to be a vector, but received shape: ",
                                  &idx, &n));
  tensor_array_t *ta;
  weft_status_t *st = lookup(ctx, &ta);
  if (st) {
    g_free(idx);
    return st;
  }
  st = check_read_dtype(ctx, ta);
  weft_tensor_t **parts = g_new0(weft_tensor_t *, n > 0 ? n : 1);
  int es_rank;
  int64_t es_dims[WEFT_MAX_RANK];
  attr_shape(ctx->node, "element_shape", &es_rank, es_dims);
  if (!st) st = set_elem_shape(ctx, ta, es_rank, es_dims);
  if (!st && n == 0) {
    bool defined = es_rank >= 0;
    for (int d = 0; d < es_rank; d++) defined &= es_dims[d] >= 0;
    if (!defined) {
      char *es = shape_str(es_rank, es_dims);
      st = err(ctx, WEFT_UNIMPLEMENTED,
               "TensorArray has size zero, but element shape %s is not fully defined. Currently "
               "only static shapes are supported when packing zero-size TensorArrays.", es);
      g_free(es);
    } else {
      ctx->outputs[0].tensor = stack(parts, 0, ta->dtype, es_rank, es_dims);
    }
  }
  for (int64_t k = 0; k < n && !st; k++) st = ta_read_one(ctx, ta, idx[k], &parts[k]);
  for (int64_t k = 1; k < n && !st; k++) {
    bool same = parts[k]->rank == parts[0]->rank;
    for (int d = 0; same && d < parts[0]->rank; d++) same = parts[k]->dims[d] == parts[0]->dims[d];
    if (!same) {
      char *a = tshape_str(parts[0]), *b = tshape_str(parts[k]);
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "TensorArray has inconsistent shapes.  Index 0 has shape: %s but index %"
               G_GINT64_FORMAT " has shape: %s", a, k, b);
      g_free(a);
      g_free(b);
    }
  }
  g_mutex_unlock(&ta->lock);
  if (!st && n > 0) {
    if (parts[0]->rank + 1 > WEFT_MAX_RANK) {
      st = err(ctx, WEFT_UNIMPLEMENTED, "Gathered tensor would have more than %d dims",
               WEFT_MAX_RANK);
    } else {
      ctx->outputs[0].tensor = stack(parts, n, ta->dtype, parts[0]->rank, parts[0]->dims);
    }
  }
  for (int64_t k = 0; k < n; k++) weft_tensor_unref(parts[k]);
  g_free(parts);
  g_free(idx);
  return st;
}

/* Rows [begin, begin + len) of v's first dim as a new tensor. */
static weft_tensor_t *slice_rows(const weft_tensor_t *v, int64_t begin, int64_t len) {
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, v->dims, sizeof(int64_t) * (size_t)v->rank);
  dims[0] = len;
  weft_tensor_t *out = weft_tensor_new(v->dtype, v->rank, dims);
  int64_t row = v->dims[0] > 0 ? v->num_elements / v->dims[0] : 0;
  if (v->dtype == WEFT_DT_STRING) {
    const weft_string_t *src = weft_tensor_data(v);
    for (int64_t j = 0; j < len * row; j++)
      weft_status_free(weft_tensor_set_string(out, j, src[begin * row + j].data,
                                              src[begin * row + j].len));
  } else if (len * row > 0) {
    size_t esz = weft_dtype_size(v->dtype);
    memcpy(weft_tensor_data(out), (const char *)weft_tensor_data(v) + (size_t)(begin * row) * esz,
           (size_t)(len * row) * esz);
  }
  return out;
}

static weft_status_t *ta_scatter(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int64_t *idx = NULL, n = 0;
  WEFT_RETURN_IF_ERROR(int_vector(ctx, 1, "Expected indices to be a vector, but received shape: ",
                                  &idx, &n));
  weft_tensor_t *v = input(ctx, 2);
  tensor_array_t *ta;
  weft_status_t *st = lookup(ctx, &ta);
  if (st) {
    g_free(idx);
    return st;
  }
  st = check_write_dtype(ctx, ta, v);
  if (!st && v->rank < 1) {
    char *s = tshape_str(v);
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Input value for unpack must be at least a vector but received shape: %s", s);
    g_free(s);
  }
  if (!st && n != v->dims[0]) {
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Expected len(indices) == values.shape[0], but saw: %" G_GINT64_FORMAT
             " vs. %" G_GINT64_FORMAT, n, v->dims[0]);
  }
  if (!st && !ta->dynamic_size) {
    int64_t max_index = -1;
    for (int64_t k = 0; k < n; k++) max_index = idx[k] > max_index ? idx[k] : max_index;
    if (max_index >= (int64_t)ta->elems->len) {
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "Tried to write to index %" G_GINT64_FORMAT
               " but array is not resizeable and size is: %u", max_index, ta->elems->len);
    }
  }
  if (!st) st = set_elem_shape(ctx, ta, v->rank - 1, v->dims + 1);
  for (int64_t k = 0; k < n && !st; k++) {
    weft_tensor_t *row = slice_rows(v, k, 1);
    /* The element drops the first dim. */
    row->rank--;
    memmove(row->dims, row->dims + 1, sizeof(int64_t) * (size_t)row->rank);
    st = ta_write_one(ctx, ta, idx[k], row);
    weft_tensor_unref(row);
  }
  g_mutex_unlock(&ta->lock);
  g_free(idx);
  return st ? st : set_flow(ctx, 0);
}

static weft_status_t *ta_concat(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  tensor_array_t *ta;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &ta));
  weft_status_t *st = check_read_dtype(ctx, ta);
  int64_t n = ta->elems->len;
  weft_tensor_t **parts = g_new0(weft_tensor_t *, n > 0 ? n : 1);
  for (int64_t k = 0; k < n && !st; k++) {
    st = ta_read_one(ctx, ta, k, &parts[k]);
    if (!st && parts[k]->rank < 1) {
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "Concat saw a scalar shape at index %" G_GINT64_FORMAT
               " but requires at least vectors.  Did you mean to call TensorArray::Pack instead?",
               k);
    }
  }
  for (int64_t k = 1; k < n && !st; k++) {
    bool same = parts[k]->rank == parts[0]->rank;
    for (int d = 1; same && d < parts[0]->rank; d++) same = parts[k]->dims[d] == parts[0]->dims[d];
    if (!same) {
      char *a = shape_str(parts[0]->rank - 1, parts[0]->dims + 1);
      char *b = shape_str(parts[k]->rank - 1, parts[k]->dims + 1);
      st = err(ctx, WEFT_INVALID_ARGUMENT,
               "TensorArray has inconsistent shapes.  Index 0 has (excepting dimension 0) shape: "
               "%s but index %" G_GINT64_FORMAT " has (excepting dimension 0) shape: %s", a, k, b);
      g_free(a);
      g_free(b);
    }
  }
  g_mutex_unlock(&ta->lock);
  if (!st && n == 0) {
    int rank;
    int64_t dims[WEFT_MAX_RANK];
    attr_shape(ctx->node, "element_shape_except0", &rank, dims);
    bool defined = rank >= 0 && rank < WEFT_MAX_RANK;
    for (int d = 0; defined && d < rank; d++) defined = dims[d] >= 0;
    if (!defined) {
      char *es = shape_str(rank, dims);
      st = err(ctx, WEFT_UNIMPLEMENTED,
               "TensorArray has size zero, but element_shape %s is not fully defined. Currently "
               "only static shapes are supported when concatenating zero-size TensorArrays.", es);
      g_free(es);
    } else {
      int64_t out_dims[WEFT_MAX_RANK] = {0};
      for (int d = 0; d < rank; d++) out_dims[d + 1] = dims[d];
      ctx->outputs[0].tensor = weft_tensor_new(ta->dtype, rank + 1, out_dims);
      ctx->outputs[1].tensor = weft_tensor_new(WEFT_DT_INT64, 1, (int64_t[]){0});
    }
  } else if (!st) {
    int64_t dims[WEFT_MAX_RANK];
    memcpy(dims, parts[0]->dims, sizeof dims);
    dims[0] = 0;
    weft_tensor_t *lengths = weft_tensor_new(WEFT_DT_INT64, 1, &n);
    for (int64_t k = 0; k < n; k++) {
      dims[0] += parts[k]->dims[0];
      ((int64_t *)weft_tensor_data(lengths))[k] = parts[k]->dims[0];
    }
    weft_tensor_t *out = weft_tensor_new(ta->dtype, parts[0]->rank, dims);
    size_t esz = weft_dtype_size(ta->dtype);
    int64_t at = 0;
    for (int64_t k = 0; k < n; k++) {
      if (ta->dtype == WEFT_DT_STRING) {
        const weft_string_t *src = weft_tensor_data(parts[k]);
        for (int64_t j = 0; j < parts[k]->num_elements; j++)
          weft_status_free(weft_tensor_set_string(out, at + j, src[j].data, src[j].len));
      } else if (parts[k]->num_elements) {
        memcpy((char *)weft_tensor_data(out) + (size_t)at * esz, weft_tensor_data(parts[k]),
               (size_t)parts[k]->num_elements * esz);
      }
      at += parts[k]->num_elements;
    }
    ctx->outputs[0].tensor = out;
    ctx->outputs[1].tensor = lengths;
  }
  for (int64_t k = 0; k < n; k++) weft_tensor_unref(parts[k]);
  g_free(parts);
  return st;
}

static weft_status_t *ta_split(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_t *v = input(ctx, 1);
  if (v->rank < 1) {
    char *s = tshape_str(v);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT,
                            "Expected value to be at least a vector, but received shape: %s", s);
    g_free(s);
    return st;
  }
  int64_t *lengths = NULL, n = 0;
  WEFT_RETURN_IF_ERROR(int_vector(ctx, 2, "Expected lengths to be a vector, received shape: ",
                                  &lengths, &n));
  tensor_array_t *ta;
  weft_status_t *st = lookup(ctx, &ta);
  if (st) {
    g_free(lengths);
    return st;
  }
  st = check_write_dtype(ctx, ta, v);
  int64_t total = 0;
  bool bad = false;
  for (int64_t k = 0; k < n; k++) {
    bad |= lengths[k] < 0;
    total += lengths[k];
  }
  if (!st && (bad || total != v->dims[0])) {
    char *s = tshape_str(v);
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "Expected sum of lengths to be equal to values.shape[0], but sum of lengths is %"
             G_GINT64_FORMAT " and value's shape is: %s", total, s);
    g_free(s);
  }
  if (!st && !ta->dynamic_size && n != (int64_t)ta->elems->len) {
    st = err(ctx, WEFT_INVALID_ARGUMENT,
             "TensorArray's size is not equal to the size of lengths (%" G_GINT64_FORMAT
             " vs. %u), and the TensorArray is not marked as dynamically resizeable", n,
             ta->elems->len);
  }
  int64_t at = 0;
  for (int64_t k = 0; k < n && !st; k++) {
    weft_tensor_t *piece = slice_rows(v, at, lengths[k]);
    at += lengths[k];
    st = ta_write_one(ctx, ta, k, piece);
    weft_tensor_unref(piece);
  }
  g_mutex_unlock(&ta->lock);
  g_free(lengths);
  return st ? st : set_flow(ctx, 0);
}

static weft_status_t *ta_size(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  tensor_array_t *ta;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &ta));
  int32_t n = (int32_t)ta->elems->len;
  g_mutex_unlock(&ta->lock);
  ctx->outputs[0].tensor = weft_tensor_new_scalar_int32(n);
  return NULL;
}

static weft_status_t *ta_close(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  tensor_array_t *ta;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &ta));
  /* Closing frees the values; the array stays, closed, until its step ends. */
  for (guint k = 0; k < ta->elems->len; k++) {
    ta_elem_t *e = &g_array_index(ta->elems, ta_elem_t, k);
    weft_tensor_unref(e->tensor);
    e->tensor = NULL;
  }
  ta->closed = true;
  g_mutex_unlock(&ta->lock);
  return NULL;
}

/* TensorArrayGradV3: the gradient array "<name>@<source>" of the forward one, made on first use:
 * same size and dtype, fixed size, writes that add up, and the forward elements' shapes (an
 * element never written reads as zeros of its forward shape). The forward array may no longer
 * grow. */
static weft_status_t *ta_grad(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  tensor_array_t *fwd;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &fwd));
  fwd->dynamic_size = false;
  const weft__attr_value_t *sv = weft__attrs_get(ctx->node->attrs, "source");
  const char *source = sv && sv->kind == WEFT_ATTR_STRING ? sv->u.s.data : "";
  char *name = g_strdup_printf("%s@%s", fwd->name, source);
  weft__step_resources_t *r = ctx->step_resources;
  g_mutex_lock(&r->lock);
  if (!g_hash_table_lookup(r->arrays, name)) {
    tensor_array_t *ta = g_new0(tensor_array_t, 1);
    ta->name = g_strdup(name);
    ta->dtype = fwd->dtype;
    ta->es_rank = fwd->es_rank;
    memcpy(ta->es_dims, fwd->es_dims, sizeof ta->es_dims);
    ta->clear_after_read = true;
    ta->identical_element_shapes = fwd->identical_element_shapes;
    ta->multiple_writes_aggregate = true;
    ta->elems = g_array_new(FALSE, TRUE, sizeof(ta_elem_t));
    g_array_set_size(ta->elems, fwd->elems->len);
    for (guint k = 0; k < fwd->elems->len; k++) {
      const ta_elem_t *fe = &g_array_index(fwd->elems, ta_elem_t, k);
      ta_elem_t *ge = &g_array_index(ta->elems, ta_elem_t, k);
      ge->rank = fe->written ? fe->rank : -1;
      memcpy(ge->dims, fe->dims, sizeof ge->dims);
    }
    g_mutex_init(&ta->lock);
    g_hash_table_insert(r->arrays, ta->name, ta);
  }
  g_mutex_unlock(&r->lock);
  g_mutex_unlock(&fwd->lock);
  weft_tensor_t *handle = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){2});
  weft_status_free(weft_tensor_set_string(handle, 0, TA_CONTAINER, strlen(TA_CONTAINER)));
  weft_status_free(weft_tensor_set_string(handle, 1, name, strlen(name)));
  g_free(name);
  ctx->outputs[0].tensor = handle;
  ctx->outputs[1].tensor = weft_tensor_ref(input(ctx, 1));
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Assert (logging_ops.cc): "assertion failed: [d0] [d1] ..." with each data tensor summarised
 * as Tensor::SummarizeValue(summarize) writes it. */

/* absl::Utf8SafeCEscape, how TensorFlow prints a string element: \n \r \t \" \' \\ escaped,
 * other control bytes as three octal digits, bytes from 0x80 (UTF-8) kept. */
static void append_c_escaped(GString *s, const weft_string_t *str) {
  for (size_t k = 0; k < str->len; k++) {
    unsigned char c = (unsigned char)str->data[k];
    switch (c) {
      case '\n': g_string_append(s, "\\n"); break;
      case '\r': g_string_append(s, "\\r"); break;
      case '\t': g_string_append(s, "\\t"); break;
      case '"': g_string_append(s, "\\\""); break;
      case '\'': g_string_append(s, "\\'"); break;
      case '\\': g_string_append(s, "\\\\"); break;
      default:
        if (c < 0x20 || c == 0x7f) g_string_append_printf(s, "\\%03o", c);
        else g_string_append_c(s, (char)c);
    }
  }
}

/* StrCat's float and double: the shortest of %.6g / %.9g (%.15g / %.17g) that reads back. */
static void append_number(GString *s, weft_dtype_t dtype, const void *data, int64_t i) {
  char buf[64];
  double d = 0;
  switch (dtype) {
    case WEFT_DT_FLOAT:
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16: {
      float f;
      if (dtype == WEFT_DT_FLOAT) {
        f = ((const float *)data)[i];
      } else {
        uint16_t bits = ((const uint16_t *)data)[i];
        if (dtype == WEFT_DT_BFLOAT16) {
          uint32_t u = (uint32_t)bits << 16;
          memcpy(&f, &u, sizeof f);
        } else {
          f = weft__half_to_float(bits);
        }
      }
      if (isnan(f)) {
        g_string_append(s, "nan");
      } else if (isinf(f)) {
        g_string_append(s, f < 0 ? "-inf" : "inf");
      } else {
        snprintf(buf, sizeof buf, "%.*g", FLT_DIG, (double)f);
        if (strtof(buf, NULL) != f) snprintf(buf, sizeof buf, "%.*g", FLT_DIG + 3, (double)f);
        g_string_append(s, buf);
      }
      return;
    }
    case WEFT_DT_DOUBLE:
      d = ((const double *)data)[i];
      if (isnan(d)) {
        g_string_append(s, "nan");
      } else if (isinf(d)) {
        g_string_append(s, d < 0 ? "-inf" : "inf");
      } else {
        snprintf(buf, sizeof buf, "%.*g", DBL_DIG, d);
        if (strtod(buf, NULL) != d) snprintf(buf, sizeof buf, "%.*g", DBL_DIG + 2, d);
        g_string_append(s, buf);
      }
      return;
    case WEFT_DT_INT8: g_string_append_printf(s, "%d", ((const int8_t *)data)[i]); return;
    case WEFT_DT_INT16: g_string_append_printf(s, "%d", ((const int16_t *)data)[i]); return;
    case WEFT_DT_INT32: g_string_append_printf(s, "%d", ((const int32_t *)data)[i]); return;
    case WEFT_DT_INT64:
      g_string_append_printf(s, "%" G_GINT64_FORMAT, ((const int64_t *)data)[i]);
      return;
    case WEFT_DT_UINT8: g_string_append_printf(s, "%u", ((const uint8_t *)data)[i]); return;
    case WEFT_DT_UINT16: g_string_append_printf(s, "%u", ((const uint16_t *)data)[i]); return;
    case WEFT_DT_UINT32: g_string_append_printf(s, "%u", ((const uint32_t *)data)[i]); return;
    case WEFT_DT_UINT64:
      g_string_append_printf(s, "%" G_GUINT64_FORMAT, ((const uint64_t *)data)[i]);
      return;
    /* TensorFlow prints bools as 1 and 0. */
    case WEFT_DT_BOOL: g_string_append(s, ((const uint8_t *)data)[i] ? "1" : "0"); return;
    case WEFT_DT_STRING:
      append_c_escaped(s, &((const weft_string_t *)data)[i]);
      return;
    default: return;
  }
}

/* PrintOneDim: nested brackets for each dim but the last, elements separated by spaces. */
static void print_dim(GString *s, const weft_tensor_t *t, int dim, int64_t limit, int64_t *at) {
  if (*at >= limit) return;
  int64_t count = t->dims[dim];
  if (dim == t->rank - 1) {
    for (int64_t i = 0; i < count; i++) {
      if (*at >= limit) {
        if (dim != 0) g_string_append(s, "...");
        return;
      }
      if (i > 0) g_string_append_c(s, ' ');
      append_number(s, t->dtype, weft_tensor_data(t), (*at)++);
    }
    return;
  }
  for (int64_t i = 0; i < count; i++) {
    bool flag = false;
    if (*at < limit) {
      g_string_append_c(s, '[');
      flag = true;
    }
    print_dim(s, t, dim + 1, limit, at);
    if (*at < limit || flag) g_string_append_c(s, ']');
  }
}

static void summarize(GString *s, const weft_tensor_t *t, int64_t max_entries) {
  int64_t n = t->num_elements;
  if (max_entries < 0) max_entries = n;
  int64_t limit = max_entries < n ? max_entries : n;
  if (t->rank == 0) {
    for (int64_t i = 0; i < limit; i++) {
      if (i > 0) g_string_append_c(s, ' ');
      append_number(s, t->dtype, weft_tensor_data(t), i);
    }
  } else {
    int64_t at = 0;
    print_dim(s, t, 0, limit, &at);
  }
  if (max_entries < n) g_string_append(s, "...");
}

static weft_status_t *assert_compute(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_t *cond = input(ctx, 0);
  /* IsLegacyScalar: a scalar, or one element of any rank. */
  if (cond->num_elements != 1) {
    char *s = tshape_str(cond);
    weft_status_t *st = err(ctx, WEFT_INVALID_ARGUMENT, "In[0] should be a scalar: %s", s);
    g_free(s);
    return st;
  }
  if (((const uint8_t *)weft_tensor_data(cond))[0]) return NULL;
  int64_t max_entries = attr_int(ctx->node, "summarize", 3);
  GString *msg = g_string_new("assertion failed: ");
  for (int i = 1; i < ctx->node->n_inputs; i++) {
    g_string_append_c(msg, '[');
    summarize(msg, input(ctx, i), max_entries);
    g_string_append_c(msg, ']');
    if (i < ctx->node->n_inputs - 1) g_string_append_c(msg, ' ');
  }
  weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT, "%s (node '%s')", msg->str,
                                      ctx->node->name);
  g_string_free(msg, TRUE);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static weft_status_t *not_a_kernel(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  return weft_status_new(WEFT_INTERNAL, "%s node '%s' must be run by the control-flow executor",
                         ctx->node->op_name, ctx->node->name);
}

void weft__core_kernels_register(const weft__core_kernel_t *kernels, size_t n) {
  for (size_t k = 0; k < n; k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = kernels[k].op,
                             .device_type = "CPU",
                             .compute = kernels[k].compute};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
}

void weft__flow_kernels_register(void) {
  static const weft__core_kernel_t kernels[] = {
      {"Switch", not_a_kernel},
      {"RefSwitch", not_a_kernel},
      {"Merge", not_a_kernel},
      {"RefMerge", not_a_kernel},
      {"Enter", not_a_kernel},
      {"RefEnter", not_a_kernel},
      {"Exit", not_a_kernel},
      {"RefExit", not_a_kernel},
      {"NextIteration", not_a_kernel},
      {"RefNextIteration", not_a_kernel},
      {"LoopCond", not_a_kernel},
      {"ControlTrigger", not_a_kernel},
      {"Assert", assert_compute},
      {"TensorArrayV3", ta_create},
      {"TensorArrayWriteV3", ta_write},
      {"TensorArrayReadV3", ta_read},
      {"TensorArrayGatherV3", ta_gather},
      {"TensorArrayScatterV3", ta_scatter},
      {"TensorArrayConcatV3", ta_concat},
      {"TensorArraySplitV3", ta_split},
      {"TensorArraySizeV3", ta_size},
      {"TensorArrayCloseV3", ta_close},
      {"TensorArrayGradV3", ta_grad},
  };
  weft__core_kernels_register(kernels, G_N_ELEMENTS(kernels));
  weft__resource_var_kernels_register(); /* resource_var_kernels.c */
  weft__to_bool_kernel_register();       /* to_bool_kernel.c */
  weft__parse_example_kernels_register(); /* parse_example_kernels.c */
  weft__stack_kernels_register();        /* stack_kernels.c */
  weft__host_func_kernels_register();    /* host_func.c */
  weft__regex_kernels_register();        /* regex_kernels.c */
  weft__io_kernels_register();           /* io_kernels.c */
}

/* A constructor, as kernel_host.c hands over the kernel entries: the default registry registers
 * these at its one-time load, and the plugin layer cannot name exec. */
__attribute__((constructor)) static void register_core_kernels(void) {
  weft__registry_set_core_kernels(weft__flow_kernels_register);
}
