/* graphdef.c: TensorFlow's GraphDef wire format in and out of a Weft graph. Import decodes the
 * protobuf, converts every NodeDef (inputs, attrs, TensorProto constants), checks the whole
 * GraphDef before touching the graph, then adds the nodes in dependency order; export writes every
 * node back so that TensorFlow, or Weft again, reads the same graph. */
#include "graphdef_internal.h"

#include <string.h>

#include "../base/protobuf_internal.h"
#include "types.pb-c.h"

/* The GraphDef producer version export claims: a TensorFlow 1.x graph. TensorFlow accepts newer
 * producers; what matters is that no op we write is deprecated at this version. */
#define WEFT_GRAPHDEF_PRODUCER 27

/* Tensors larger than this (bytes) are refused at import: a tiny splatted TensorProto could
 * otherwise ask for an allocation no machine has. */
#define WEFT_MAX_CONST_BYTES ((uint64_t)1 << 36)
/* Without tensor_content, a few repeated (or no) values fill the whole tensor: a message of a
 * hundred bytes could ask for many gigabytes (found by fuzz/, tensor_proto). Such tensors are
 * capped lower; bigger ones must carry their bytes, which bounds them by the message's size. */
#define WEFT_MAX_SPLAT_BYTES ((uint64_t)1 << 28)

/* ---------------------------------------------------------------------------------------------
 * Shapes */

weft_status_t *weft__shape_from_proto(const Tensorflow__TensorShapeProto *proto,
                                      weft__shape_t *out) {
  memset(out, 0, sizeof(*out));
  /* An absent shape message is the empty shape, i.e. a scalar (proto3 default). */
  if (proto == NULL) return NULL;
  if (proto->unknown_rank) {
    if (proto->n_dim != 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "shape has unknown_rank set but also %zu dims", proto->n_dim);
    }
    out->rank = -1;
    return NULL;
  }
  if (proto->n_dim > WEFT_MAX_RANK) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "shape has rank %zu, more than the %d Weft supports",
                           proto->n_dim, WEFT_MAX_RANK);
  }
  out->rank = (int)proto->n_dim;
  for (size_t k = 0; k < proto->n_dim; k++) {
    int64_t size = proto->dim[k] != NULL ? proto->dim[k]->size : 0;
    if (size < -1) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "shape has dim %zu of size %" G_GINT64_FORMAT,
                             k, size);
    }
    out->dims[k] = size < 0 ? WEFT_DIM_UNKNOWN : size;
  }
  return NULL;
}

Tensorflow__TensorShapeProto *weft__shape_to_proto(const weft__shape_t *shape) {
  Tensorflow__TensorShapeProto *p = g_new(Tensorflow__TensorShapeProto, 1);
  tensorflow__tensor_shape_proto__init(p);
  if (shape->rank < 0) {
    p->unknown_rank = 1;
    return p;
  }
  p->n_dim = (size_t)shape->rank;
  p->dim = shape->rank > 0 ? g_new0(Tensorflow__TensorShapeProto__Dim *, shape->rank) : NULL;
  for (int k = 0; k < shape->rank; k++) {
    Tensorflow__TensorShapeProto__Dim *d = g_new(Tensorflow__TensorShapeProto__Dim, 1);
    tensorflow__tensor_shape_proto__dim__init(d);
    d->size = shape->dims[k] < 0 ? -1 : shape->dims[k];
    p->dim[k] = d;
  }
  return p;
}

/* "[2,3]" for messages; the caller g_free()s it. Written here so errors never depend on how
 * another file formats unknown dims. */
static char *shape_string(int rank, const int64_t *dims) {
  if (rank < 0) return g_strdup("<unknown>");
  GString *s = g_string_new("[");
  for (int k = 0; k < rank; k++) {
    if (k) g_string_append_c(s, ',');
    if (dims[k] < 0)
      g_string_append_c(s, '?');
    else
      g_string_append_printf(s, "%" G_GINT64_FORMAT, dims[k]);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------------------------------------
 * Tensors */

/* The TensorFlow enum name of a dtype number ("DT_COMPLEX64"), for dtypes Weft has no name for. */
static const char *proto_dtype_name(int dtype) {
  const ProtobufCEnumValue *v =
      protobuf_c_enum_descriptor_get_value(&tensorflow__data_type__descriptor, dtype);
  return v != NULL ? v->name : "an unknown DataType";
}

/* Bytes per element of the dtypes a TensorProto may carry into Weft; 0 for the others (complex,
 * quantized, resource, variant, refs). Strings count as one weft_string_t. */
static size_t proto_elem_size(int dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return 4;
    case WEFT_DT_DOUBLE: return 8;
    case WEFT_DT_INT32: return 4;
    case WEFT_DT_UINT8: return 1;
    case WEFT_DT_INT16: return 2;
    case WEFT_DT_INT8: return 1;
    case WEFT_DT_STRING: return sizeof(weft_string_t);
    case WEFT_DT_INT64: return 8;
    case WEFT_DT_BOOL: return 1;
    case WEFT_DT_BFLOAT16: return 2;
    case WEFT_DT_UINT16: return 2;
    case WEFT_DT_HALF: return 2;
    case WEFT_DT_UINT32: return 4;
    case WEFT_DT_UINT64: return 8;
    default: return 0;
  }
}

/* How many values the typed *_val field that holds `dtype` has (TensorFlow's choice of field per
 * dtype: small integers share int_val, half and bfloat16 share half_val). */
static size_t typed_value_count(const Tensorflow__TensorProto *p, int dtype) {
  switch (dtype) {
    case WEFT_DT_FLOAT: return p->n_float_val;
    case WEFT_DT_DOUBLE: return p->n_double_val;
    case WEFT_DT_INT32:
    case WEFT_DT_UINT8:
    case WEFT_DT_INT16:
    case WEFT_DT_INT8:
    case WEFT_DT_UINT16: return p->n_int_val;
    case WEFT_DT_STRING: return p->n_string_val;
    case WEFT_DT_INT64: return p->n_int64_val;
    case WEFT_DT_BOOL: return p->n_bool_val;
    case WEFT_DT_BFLOAT16:
    case WEFT_DT_HALF: return p->n_half_val;
    case WEFT_DT_UINT32: return p->n_uint32_val;
    case WEFT_DT_UINT64: return p->n_uint64_val;
    default: return 0;
  }
}

/* tensor_content is little-endian; only a big-endian host has work to do. */
static void content_to_host_order(void *data, size_t elem_size, int64_t n) {
#if G_BYTE_ORDER == G_BIG_ENDIAN
  uint8_t *b = data;
  for (int64_t i = 0; i < n; i++, b += elem_size) {
    for (size_t lo = 0, hi = elem_size - 1; lo < hi; lo++, hi--) {
      uint8_t t = b[lo];
      b[lo] = b[hi];
      b[hi] = t;
    }
  }
#else
  (void)data;
  (void)elem_size;
  (void)n;
#endif
}

/* Copies the typed values into dst, repeating the last one when there are fewer than n. */
#define WEFT_SPLAT(ctype, field, conv)                                         \
  do {                                                                         \
    ctype *d_ = (ctype *)dst;                                                  \
    for (int64_t i_ = 0; i_ < n; i_++) {                                       \
      size_t j_ = (size_t)i_ < count ? (size_t)i_ : count - 1;                 \
      d_[i_] = (ctype)conv(p->field[j_]);                                      \
    }                                                                          \
  } while (0)
#define WEFT_AS_IS(x) (x)
#define WEFT_AS_BOOL(x) ((x) != 0)
#define WEFT_AS_U16(x) ((uint16_t)((uint32_t)(x) & 0xFFFFu))

static void fill_typed(const Tensorflow__TensorProto *p, int dtype, void *dst, int64_t n,
                       size_t count) {
  switch (dtype) {
    case WEFT_DT_FLOAT: WEFT_SPLAT(float, float_val, WEFT_AS_IS); break;
    case WEFT_DT_DOUBLE: WEFT_SPLAT(double, double_val, WEFT_AS_IS); break;
    case WEFT_DT_INT32: WEFT_SPLAT(int32_t, int_val, WEFT_AS_IS); break;
    case WEFT_DT_UINT8: WEFT_SPLAT(uint8_t, int_val, WEFT_AS_IS); break;
    case WEFT_DT_INT16: WEFT_SPLAT(int16_t, int_val, WEFT_AS_IS); break;
    case WEFT_DT_INT8: WEFT_SPLAT(int8_t, int_val, WEFT_AS_IS); break;
    case WEFT_DT_UINT16: WEFT_SPLAT(uint16_t, int_val, WEFT_AS_U16); break;
    case WEFT_DT_INT64: WEFT_SPLAT(int64_t, int64_val, WEFT_AS_IS); break;
    case WEFT_DT_BOOL: WEFT_SPLAT(uint8_t, bool_val, WEFT_AS_BOOL); break;
    case WEFT_DT_BFLOAT16:
    case WEFT_DT_HALF: WEFT_SPLAT(uint16_t, half_val, WEFT_AS_U16); break;
    case WEFT_DT_UINT32: WEFT_SPLAT(uint32_t, uint32_val, WEFT_AS_IS); break;
    case WEFT_DT_UINT64: WEFT_SPLAT(uint64_t, uint64_val, WEFT_AS_IS); break;
    default: break;
  }
}

weft_status_t *weft__tensor_from_proto(const Tensorflow__TensorProto *p, weft_tensor_t **out) {
  *out = NULL;
  if (p == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "TensorProto is missing");
  int dtype = (int)p->dtype;
  size_t esize = proto_elem_size(dtype);
  if (esize == 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TensorProto has dtype %s (%d), which Weft tensors cannot hold",
                           proto_dtype_name(dtype), dtype);
  }
  weft__shape_t shape;
  weft_status_t *st = weft__shape_from_proto(p->tensor_shape, &shape);
  if (st) return weft_status_prefix(st, "TensorProto of %s", weft_dtype_name(dtype));
  char *shape_str = shape_string(shape.rank, shape.dims);
  int64_t n = 1;
  for (int k = 0; k < shape.rank && !st; k++) {
    if (shape.dims[k] < 0) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TensorProto of %s has shape %s, which is not fully defined",
                           weft_dtype_name(dtype), shape_str);
    } else if (shape.dims[k] > 0 &&
               n > (int64_t)(WEFT_MAX_CONST_BYTES / esize) / shape.dims[k]) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TensorProto of %s%s is too large (more than %" G_GUINT64_FORMAT
                           " bytes)",
                           weft_dtype_name(dtype), shape_str, (guint64)WEFT_MAX_CONST_BYTES);
    } else {
      n *= shape.dims[k];
    }
  }
  if (shape.rank < 0) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "TensorProto of %s has an unknown rank",
                         weft_dtype_name(dtype));
  }
  size_t count = typed_value_count(p, dtype);
  size_t content_len = p->tensor_content.len;
  if (!st && content_len > 0) {
    if (dtype == WEFT_DT_STRING) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TensorProto of string%s has %zu bytes of tensor_content; strings "
                           "belong in string_val",
                           shape_str, content_len);
    } else if ((uint64_t)content_len != (uint64_t)n * esize) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "TensorProto of %s%s has %zu bytes of tensor_content, but %" G_GINT64_FORMAT
                           " elements of %zu bytes need %" G_GUINT64_FORMAT,
                           weft_dtype_name(dtype), shape_str, content_len, n, esize,
                           (guint64)((uint64_t)n * esize));
    }
  } else if (!st && count > (size_t)n) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "TensorProto of %s%s has %zu values for %" G_GINT64_FORMAT " elements",
                         weft_dtype_name(dtype), shape_str, count, n);
  } else if (!st && count < (size_t)n &&
             (uint64_t)n * (dtype == WEFT_DT_STRING ? 256 : esize) > WEFT_MAX_SPLAT_BYTES) {
    /* (each string element is an allocation of its own: counted as 256 bytes) */
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "TensorProto of %s%s repeats %zu values into %" G_GINT64_FORMAT
                         " elements, more than %" G_GUINT64_FORMAT
                         " bytes; give every element (numbers in tensor_content)",
                         weft_dtype_name(dtype), shape_str, count, n,
                         (guint64)WEFT_MAX_SPLAT_BYTES);
  }
  if (st) {
    g_free(shape_str);
    return st;
  }

  weft_tensor_t *t = NULL;
  st = weft__tensor_alloc(NULL, (weft_dtype_t)dtype, shape.rank, shape.dims, &t);
  if (st) {
    g_free(shape_str);
    return weft_status_prefix(st, "TensorProto of %s%s", weft_dtype_name(dtype), shape_str);
  }
  void *dst = weft_tensor_data(t);
  if (dtype == WEFT_DT_STRING) {
    for (int64_t i = 0; i < n && count > 0 && !st; i++) {
      const ProtobufCBinaryData *s = &p->string_val[(size_t)i < count ? (size_t)i : count - 1];
      st = weft_tensor_set_string(t, i, (const char *)s->data, s->len);
    }
  } else if (n > 0 && content_len > 0) {
    memcpy(dst, p->tensor_content.data, content_len);
    content_to_host_order(dst, esize, n);
  } else if (n > 0 && count > 0) {
    fill_typed(p, dtype, dst, n, count);
  } else if (n > 0) {
    memset(dst, 0, (size_t)n * esize);
  }
  g_free(shape_str);
  if (st) {
    weft_tensor_unref(t);
    return st;
  }
  *out = t;
  return NULL;
}

weft_status_t *weft__tensor_to_proto(const weft_tensor_t *tensor, Tensorflow__TensorProto **out) {
  *out = NULL;
  if (tensor == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "no tensor to serialise");
  weft_dtype_t dtype = weft_tensor_dtype(tensor);
  size_t esize = proto_elem_size(dtype);
  if (esize == 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "a tensor of dtype %s cannot be serialised",
                           weft_dtype_name(dtype));
  }
  weft_tensor_t *host = NULL;
  if (weft__tensor_is_host(tensor)) {
    host = weft_tensor_ref((weft_tensor_t *)tensor);
  } else {
    weft_status_t *st = weft__tensor_copy_to_host(tensor, &host);
    if (st) return st;
  }
  Tensorflow__TensorProto *p = g_new(Tensorflow__TensorProto, 1);
  tensorflow__tensor_proto__init(p);
  p->dtype = (Tensorflow__DataType)dtype;
  weft__shape_t shape = {.rank = weft_tensor_rank(host)};
  if (shape.rank > 0)
    memcpy(shape.dims, weft_tensor_dims(host), sizeof(int64_t) * (size_t)shape.rank);
  p->tensor_shape = weft__shape_to_proto(&shape);
  int64_t n = weft_tensor_num_elements(host);
  const void *data = weft_tensor_data(host);
  if (dtype == WEFT_DT_STRING) {
    const weft_string_t *s = data;
    p->n_string_val = (size_t)n;
    p->string_val = n > 0 ? g_new0(ProtobufCBinaryData, n) : NULL;
    for (int64_t i = 0; i < n; i++) {
      /* Never a NULL pointer with a length of 0: the packer memcpy()s from it. */
      p->string_val[i].data = g_malloc(s[i].len > 0 ? s[i].len : 1);
      if (s[i].len > 0) memcpy(p->string_val[i].data, s[i].data, s[i].len);
      p->string_val[i].len = s[i].len;
    }
  } else if (n > 0) {
    size_t nbytes = (size_t)n * esize;
    p->tensor_content.data = g_memdup2(data, nbytes);
    p->tensor_content.len = nbytes;
    content_to_host_order(p->tensor_content.data, esize, n); /* host to little-endian */
  }
  weft_tensor_unref(host);
  *out = p;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Attribute values */

static weft_string_t copy_bytes(const void *data, size_t len) {
  weft_string_t s;
  s.data = g_malloc(len + 1);
  if (len > 0) memcpy(s.data, data, len);
  s.data[len] = '\0';
  s.len = len;
  return s;
}

/* The kind of an empty list for an attr whose op definition says `def_kind` (the definition's
 * parsed type, WEFT_ATTR_NONE when the op does not declare the attr). */
static weft__attr_kind_t empty_list_kind(weft__attr_kind_t def_kind) {
  return def_kind >= WEFT_ATTR_LIST_INT ? def_kind : WEFT_ATTR_LIST_EMPTY;
}

static weft_status_t *list_from_proto(const Tensorflow__AttrValue__ListValue *l,
                                      weft__attr_kind_t def_kind, weft__attr_value_t **out) {
  *out = NULL;
  int kinds = (l->n_s > 0) + (l->n_i > 0) + (l->n_f > 0) + (l->n_b > 0) + (l->n_type > 0) +
              (l->n_shape > 0) + (l->n_tensor > 0) + (l->n_func > 0);
  if (kinds > 1) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "list holds values of more than one type");
  }
  if (l->n_func > 0) {
    return weft_status_new(WEFT_UNIMPLEMENTED, "lists of functions are not supported");
  }
  weft__attr_value_t *v = NULL;
  if (l->n_i > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_INT);
    v->u.list.n = l->n_i;
    v->u.list.i = g_memdup2(l->i, l->n_i * sizeof(int64_t));
  } else if (l->n_f > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_FLOAT);
    v->u.list.n = l->n_f;
    v->u.list.f = g_memdup2(l->f, l->n_f * sizeof(float));
  } else if (l->n_b > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_BOOL);
    v->u.list.n = l->n_b;
    v->u.list.b = g_new(int, l->n_b);
    for (size_t k = 0; k < l->n_b; k++) v->u.list.b[k] = l->b[k] != 0;
  } else if (l->n_type > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_TYPE);
    v->u.list.n = l->n_type;
    v->u.list.type = g_new(weft_dtype_t, l->n_type);
    for (size_t k = 0; k < l->n_type; k++) v->u.list.type[k] = (weft_dtype_t)l->type[k];
  } else if (l->n_s > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_STRING);
    v->u.list.n = l->n_s;
    v->u.list.s = g_new0(weft_string_t, l->n_s);
    for (size_t k = 0; k < l->n_s; k++) v->u.list.s[k] = copy_bytes(l->s[k].data, l->s[k].len);
  } else if (l->n_shape > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_SHAPE);
    v->u.list.n = l->n_shape;
    v->u.list.shape = g_new0(weft__shape_t, l->n_shape);
    for (size_t k = 0; k < l->n_shape; k++) {
      weft_status_t *st = weft__shape_from_proto(l->shape[k], &v->u.list.shape[k]);
      if (st) {
        weft__attr_value_free(v);
        return weft_status_prefix(st, "shape %zu of the list", k);
      }
    }
  } else if (l->n_tensor > 0) {
    v = weft__attr_value_new(WEFT_ATTR_LIST_TENSOR);
    v->u.list.n = l->n_tensor;
    v->u.list.tensor = g_new0(weft_tensor_t *, l->n_tensor);
    for (size_t k = 0; k < l->n_tensor; k++) {
      weft_status_t *st = weft__tensor_from_proto(l->tensor[k], &v->u.list.tensor[k]);
      if (st) {
        weft__attr_value_free(v);
        return weft_status_prefix(st, "tensor %zu of the list", k);
      }
    }
  } else {
    /* An empty list says nothing about its element type; the op definition does. */
    v = weft__attr_value_new(empty_list_kind(def_kind));
  }
  *out = v;
  return NULL;
}

/* Converts one AttrValue. *out stays NULL for a value with nothing set (the attr is skipped).
 * def_kind is the op definition's kind for the attr, WEFT_ATTR_NONE when the op does not declare
 * it. */
static weft_status_t *attr_from_proto(const Tensorflow__AttrValue *pv, weft__attr_kind_t def_kind,
                                      weft__attr_value_t **out) {
  *out = NULL;
  weft__attr_value_t *v = NULL;
  weft_status_t *st = NULL;
  switch (pv->value_case) {
    case TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET:
      return NULL;
    case TENSORFLOW__ATTR_VALUE__VALUE_S:
      v = weft__attr_value_new(WEFT_ATTR_STRING);
      v->u.s = copy_bytes(pv->s.data, pv->s.len);
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_I:
      v = weft__attr_value_new(WEFT_ATTR_INT);
      v->u.i = pv->i;
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_F:
      v = weft__attr_value_new(WEFT_ATTR_FLOAT);
      v->u.f = pv->f;
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_B:
      v = weft__attr_value_new(WEFT_ATTR_BOOL);
      v->u.b = pv->b != 0;
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_TYPE:
      v = weft__attr_value_new(WEFT_ATTR_TYPE);
      /* Weft carries resource handles (TensorArrayV3's) as string tensors naming the resource. */
      v->u.type = pv->type == TENSORFLOW__DATA_TYPE__DT_RESOURCE ? WEFT_DT_STRING
                                                                 : (weft_dtype_t)pv->type;
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_SHAPE:
      v = weft__attr_value_new(WEFT_ATTR_SHAPE);
      st = weft__shape_from_proto(pv->shape, &v->u.shape);
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_TENSOR:
      v = weft__attr_value_new(WEFT_ATTR_TENSOR);
      st = weft__tensor_from_proto(pv->tensor, &v->u.tensor);
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_LIST:
      if (pv->list == NULL) {
        v = weft__attr_value_new(empty_list_kind(def_kind));
      } else {
        st = list_from_proto(pv->list, def_kind, &v);
      }
      break;
    case TENSORFLOW__ATTR_VALUE__VALUE_FUNC: {
      /* Only the name survives: Weft does not execute functions, it keeps them for round trips. */
      const char *name = pv->func != NULL && pv->func->name != NULL ? pv->func->name : "";
      v = weft__attr_value_new(WEFT_ATTR_FUNC);
      v->u.s = copy_bytes(name, strlen(name));
      break;
    }
    case TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER:
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "is a placeholder ('%s') that only a function body may hold",
                             pv->placeholder != NULL ? pv->placeholder : "");
    default:
      return weft_status_new(WEFT_INVALID_ARGUMENT, "has an unknown value case %d",
                             (int)pv->value_case);
  }
  if (st) {
    weft__attr_value_free(v);
    return st;
  }
  *out = v;
  return NULL;
}

/* One value back to an AttrValue; NULL for WEFT_ATTR_NONE. Allocated for free_unpacked. */
static weft_status_t *attr_to_proto(const weft__attr_value_t *v, Tensorflow__AttrValue **out) {
  *out = NULL;
  if (v->kind == WEFT_ATTR_NONE) return NULL;
  Tensorflow__AttrValue *pv = g_new(Tensorflow__AttrValue, 1);
  tensorflow__attr_value__init(pv);
  weft_status_t *st = NULL;
  size_t n = v->u.list.n;
  switch (v->kind) {
    case WEFT_ATTR_INT:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
      pv->i = v->u.i;
      break;
    case WEFT_ATTR_FLOAT:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_F;
      pv->f = v->u.f;
      break;
    case WEFT_ATTR_BOOL:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_B;
      pv->b = v->u.b;
      break;
    case WEFT_ATTR_TYPE:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
      pv->type = (Tensorflow__DataType)v->u.type;
      break;
    case WEFT_ATTR_STRING:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
      pv->s.data = g_malloc(v->u.s.len > 0 ? v->u.s.len : 1);
      if (v->u.s.len > 0) memcpy(pv->s.data, v->u.s.data, v->u.s.len);
      pv->s.len = v->u.s.len;
      break;
    case WEFT_ATTR_SHAPE:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_SHAPE;
      pv->shape = weft__shape_to_proto(&v->u.shape);
      break;
    case WEFT_ATTR_TENSOR:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
      st = weft__tensor_to_proto(v->u.tensor, &pv->tensor);
      break;
    case WEFT_ATTR_FUNC:
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_FUNC;
      pv->func = g_new(Tensorflow__NameAttrList, 1);
      tensorflow__name_attr_list__init(pv->func);
      pv->func->name = g_strdup(v->u.s.data != NULL ? v->u.s.data : "");
      break;
    default: {
      pv->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
      Tensorflow__AttrValue__ListValue *l = g_new(Tensorflow__AttrValue__ListValue, 1);
      tensorflow__attr_value__list_value__init(l);
      pv->list = l;
      if (n == 0) break;
      switch (v->kind) {
        case WEFT_ATTR_LIST_INT:
          l->n_i = n;
          l->i = g_memdup2(v->u.list.i, n * sizeof(int64_t));
          break;
        case WEFT_ATTR_LIST_FLOAT:
          l->n_f = n;
          l->f = g_memdup2(v->u.list.f, n * sizeof(float));
          break;
        case WEFT_ATTR_LIST_BOOL:
          l->n_b = n;
          l->b = g_new(protobuf_c_boolean, n);
          for (size_t k = 0; k < n; k++) l->b[k] = v->u.list.b[k] != 0;
          break;
        case WEFT_ATTR_LIST_TYPE:
          l->n_type = n;
          l->type = g_new(Tensorflow__DataType, n);
          for (size_t k = 0; k < n; k++) l->type[k] = (Tensorflow__DataType)v->u.list.type[k];
          break;
        case WEFT_ATTR_LIST_STRING:
          l->n_s = n;
          l->s = g_new0(ProtobufCBinaryData, n);
          for (size_t k = 0; k < n; k++) {
            size_t len = v->u.list.s[k].len;
            l->s[k].data = g_malloc(len > 0 ? len : 1);
            if (len > 0) memcpy(l->s[k].data, v->u.list.s[k].data, len);
            l->s[k].len = len;
          }
          break;
        case WEFT_ATTR_LIST_SHAPE:
          l->n_shape = n;
          l->shape = g_new0(Tensorflow__TensorShapeProto *, n);
          for (size_t k = 0; k < n; k++) l->shape[k] = weft__shape_to_proto(&v->u.list.shape[k]);
          break;
        case WEFT_ATTR_LIST_TENSOR:
          l->n_tensor = n;
          l->tensor = g_new0(Tensorflow__TensorProto *, n);
          for (size_t k = 0; k < n && !st; k++)
            st = weft__tensor_to_proto(v->u.list.tensor[k], &l->tensor[k]);
          break;
        default:
          break;
      }
      break;
    }
  }
  if (st) {
    tensorflow__attr_value__free_unpacked(pv, NULL);
    return st;
  }
  *out = pv;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Import */

typedef struct input_ref {
  char *node;           /* the producer's name as the GraphDef writes it */
  int index;            /* output index; -1 for a control input */
  int local;            /* the producer's position in the GraphDef, or -1 */
  weft_node_t *existing; /* the producer when it is already in the graph */
  bool back_edge;       /* a loop's NextIteration into its Merge: linked once both exist */
} input_ref_t;

typedef struct pending_node {
  const Tensorflow__NodeDef *def;
  char *full_name;      /* with the prefix */
  weft_attrs_t *attrs;
  input_ref_t *inputs;  /* data inputs first, in order, then control inputs in order */
  int n_data;
  int n_inputs;
} pending_node_t;

/* "x", "x:1", "^x" -> name and index (-1 for control). False when malformed. */
static bool parse_input(const char *text, char **name, int *index) {
  if (text == NULL || *text == '\0') return false;
  if (text[0] == '^') {
    if (text[1] == '\0' || strchr(text + 1, ':') != NULL) return false;
    *name = g_strdup(text + 1);
    *index = -1;
    return true;
  }
  const char *colon = strchr(text, ':');
  if (colon == NULL) {
    *name = g_strdup(text);
    *index = 0;
    return true;
  }
  const char *digits = colon + 1;
  size_t nd = strlen(digits);
  if (colon == text || nd == 0 || nd > 9) return false;
  for (size_t k = 0; k < nd; k++) {
    if (!g_ascii_isdigit(digits[k])) return false;
  }
  *name = g_strndup(text, (gsize)(colon - text));
  *index = atoi(digits);
  return true;
}

static void pending_clear(pending_node_t *p) {
  g_free(p->full_name);
  weft__attrs_free(p->attrs);
  for (int k = 0; k < p->n_inputs; k++) g_free(p->inputs[k].node);
  g_free(p->inputs);
}

/* Under a prefix, a colocation constraint on a node of the GraphDef must follow it to its new
 * name ("loc:@W" -> "loc:@import/W"), as TensorFlow's importer does. */
static void prefix_colocation(weft_attrs_t *attrs, const char *prefix, GHashTable *local_names) {
  weft__attr_value_t *cls = (weft__attr_value_t *)weft__attrs_get(attrs, "_class");
  if (cls == NULL || cls->kind != WEFT_ATTR_LIST_STRING) return;
  for (size_t k = 0; k < cls->u.list.n; k++) {
    const char *s = cls->u.list.s[k].data;
    if (!g_str_has_prefix(s, "loc:@") || !g_hash_table_contains(local_names, s + 5)) continue;
    char *renamed = g_strconcat("loc:@", prefix, s + 5, NULL);
    g_free(cls->u.list.s[k].data);
    cls->u.list.s[k].data = renamed;
    cls->u.list.s[k].len = strlen(renamed);
  }
}


/* Name, op and attrs of NodeDef i. */
/* Ops are looked up in the graph's registry; ops that plugins define only exist there once the
 * plugins are loaded (weft__op_registry_find_loading). */
static weft_status_t *convert_node(weft_graph_t *graph, const Tensorflow__NodeDef *nd, int i,
                                   const char *prefix, GHashTable *local_names,
                                   pending_node_t *p) {
  const char *name = nd->name != NULL ? nd->name : "";
  const char *op = nd->op != NULL ? nd->op : "";
  if (*op == '\0') {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (GraphDef node #%d) has no op", name,
                           i);
  }
  const weft__op_def_t *def = weft__op_registry_find_loading(graph->ops, op);
  if (def == NULL) {
    return weft_status_new(WEFT_NOT_FOUND, "Op type not registered '%s' in binary (node '%s')", op,
                           name);
  }
  p->attrs = weft__attrs_new();
  for (size_t k = 0; k < nd->n_attr; k++) {
    const Tensorflow__AttrEntry *e = nd->attr[k];
    if (e == NULL || e->key == NULL || *e->key == '\0') {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) has an attr with no name",
                             name, op);
    }
    if (e->value == NULL) continue;
    const weft__attr_def_t *ad = weft__op_def_find_attr(def, e->key);
    weft__attr_value_t *v = NULL;
    weft_status_t *st = attr_from_proto(e->value, ad != NULL ? ad->kind : WEFT_ATTR_NONE, &v);
    if (st) return weft_status_prefix(st, "Node '%s' (%s): attr '%s'", name, op, e->key);
    if (v != NULL) weft__attrs_set(p->attrs, e->key, v);
  }
  if (*prefix) prefix_colocation(p->attrs, prefix, local_names);
  return NULL;
}

/* Missing op types beyond the first that the import error names; the rest are counted. */
#define MAX_MISSING_NAMED 16

/* Every op type of the GraphDef that the registry lacks, each once with its first node, in graph
 * order, in one error: someone making a graph run learns all it lacks at once, not one op per
 * try. With one missing op type the message is exactly TensorFlow's
 * "Op type not registered 'X' in binary (node 'Y')". */
static weft_status_t *check_registered(weft_graph_t *graph, const pending_node_t *nodes, int n) {
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  GString *msg = NULL;
  int n_missing = 0;
  for (int i = 0; i < n; i++) {
    const Tensorflow__NodeDef *nd = nodes[i].def;
    if (nd == NULL) continue;
    const char *op = nd->op != NULL ? nd->op : "";
    /* A node with no op is convert_node's error, in its turn. */
    if (*op == '\0' || g_hash_table_contains(seen, op)) continue;
    g_hash_table_add(seen, (gpointer)op);
    if (weft__op_registry_find_loading(graph->ops, op) != NULL) continue;
    const char *name = nd->name != NULL ? nd->name : "";
    if (msg == NULL) {
      msg = g_string_new(NULL);
      g_string_printf(msg, "Op type not registered '%s' in binary (node '%s')", op, name);
    } else if (n_missing <= MAX_MISSING_NAMED) {
      g_string_append_printf(msg, "%s'%s' (node '%s')",
                             n_missing == 1 ? "; also not registered: " : ", ", op, name);
    }
    n_missing++;
  }
  g_hash_table_destroy(seen);
  if (msg == NULL) return NULL;
  if (n_missing > MAX_MISSING_NAMED + 1)
    g_string_append_printf(msg, " and %d more", n_missing - MAX_MISSING_NAMED - 1);
  weft_status_t *st = weft_status_new(WEFT_NOT_FOUND, "%s", msg->str);
  g_string_free(msg, TRUE);
  return st;
}

/* TensorFlow's loops close their cycles with an edge from a NextIteration (or RefNextIteration)
 * into a Merge (or RefMerge): the importer adds such a Merge before its producer exists, as
 * TensorFlow's graph constructor does with its back edges. */
static bool is_next_iteration(const char *op) {
  return op && (strcmp(op, "NextIteration") == 0 || strcmp(op, "RefNextIteration") == 0);
}

static bool is_merge(const char *op) {
  return op && (strcmp(op, "Merge") == 0 || strcmp(op, "RefMerge") == 0);
}

/* The first data input of a Merge that is not a back edge (-1: none). */
static int forward_input(const pending_node_t *p) {
  for (int k = 0; k < p->n_data; k++)
    if (!p->inputs[k].back_edge && p->inputs[k].local >= 0) return k;
  return -1;
}

static weft_status_t *mark_back_edges(pending_node_t *nodes, int n) {
  for (int i = 0; i < n; i++) {
    pending_node_t *p = &nodes[i];
    if (!is_merge(p->def->op)) continue;
    bool any = false;
    for (int k = 0; k < p->n_data; k++) {
      input_ref_t *r = &p->inputs[k];
      if (r->local >= 0 && is_next_iteration(nodes[r->local].def->op)) r->back_edge = any = true;
    }
    if (any && forward_input(p) < 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Merge node '%s' has only NextIteration inputs: its loop has no "
                             "entry", p->def->name);
    }
  }
  return NULL;
}

/* Points each Merge's back edges at their NextIteration nodes, now that they exist. The Merge's
 * output shape becomes unknown: TensorFlow infers a loop's Merge with the back edge unknown. */
static void link_back_edges(const pending_node_t *nodes, int n, weft_node_t **added) {
  for (int i = 0; i < n; i++) {
    const pending_node_t *p = &nodes[i];
    bool any = false;
    for (int k = 0; k < p->n_data; k++) {
      if (!p->inputs[k].back_edge) continue;
      added[i]->inputs[k].src = added[p->inputs[k].local];
      added[i]->inputs[k].src_index = p->inputs[k].index;
      any = true;
    }
    if (any) added[i]->output_ranks[0] = -1;
  }
}

/* Orders the GraphDef's nodes so that every node comes after its local producers, keeping the
 * GraphDef's own order where it already is one (depth-first, inputs first, without recursion so
 * a long chain cannot overflow the stack). INVALID_ARGUMENT naming the nodes of a cycle. */
static weft_status_t *topo_order(const pending_node_t *nodes, int n, int *order) {
  guint8 *state = g_new0(guint8, n > 0 ? n : 1); /* 0 unseen, 1 on the stack, 2 done */
  int *stack = g_new(int, n > 0 ? n : 1);
  int *next = g_new(int, n > 0 ? n : 1);
  int n_out = 0;
  weft_status_t *st = NULL;
  for (int root = 0; root < n && !st; root++) {
    if (state[root]) continue;
    int sp = 0;
    state[root] = 1;
    stack[sp] = root;
    next[sp++] = 0;
    while (sp > 0 && !st) {
      int v = stack[sp - 1];
      if (next[sp - 1] < nodes[v].n_inputs) {
        const input_ref_t *in = &nodes[v].inputs[next[sp - 1]++];
        int u = in->local;
        if (u < 0 || state[u] == 2 || in->back_edge) continue;
        if (state[u] == 0) {
          state[u] = 1;
          stack[sp] = u;
          next[sp++] = 0;
          continue;
        }
        /* u is on the stack: stack[k+1] feeds stack[k], so the data flows u -> v -> ... -> u. */
        int k = sp - 1;
        while (stack[k] != u) k--;
        GString *cycle = g_string_new(NULL);
        g_string_append_printf(cycle, "'%s'", nodes[u].def->name);
        for (int j = sp - 1; j > k; j--)
          g_string_append_printf(cycle, " -> '%s'", nodes[stack[j]].def->name);
        g_string_append_printf(cycle, " -> '%s'", nodes[u].def->name);
        st = weft_status_new(WEFT_INVALID_ARGUMENT,
                             "GraphDef has a cycle through nodes %s that no NextIteration -> Merge "
                             "edge closes",
                             cycle->str);
        g_string_free(cycle, TRUE);
      } else {
        state[v] = 2;
        order[n_out++] = v;
        sp--;
      }
    }
  }
  g_free(state);
  g_free(stack);
  g_free(next);
  return st;
}

/* TensorFlow's node name pattern as its graph constructor checks it with internal ops allowed (a
 * worker's partitions hold _Send/_Recv nodes named by the master):
 * [A-Za-z0-9._][A-Za-z0-9_.\-/]*, then any number of '>' [A-Za-z0-9.][A-Za-z0-9_.\-/]*. Names
 * outside it (spaces, ':', '^', control characters) could not be named as inputs or fetches. */
static bool name_char(char c, bool first, bool allow_underscore) {
  if (g_ascii_isalnum(c) || c == '.') return true;
  if (c == '_') return !first || allow_underscore;
  return !first && (c == '-' || c == '/');
}

static bool valid_node_name(const char *name) {
  const char *p = name;
  bool allow_underscore = true;
  for (;;) {
    if (!name_char(*p, true, allow_underscore)) return false;
    for (p++; *p && name_char(*p, false, false); p++) {
    }
    if (*p == '\0') return true;
    if (*p != '>') return false;
    p++;
    allow_underscore = false;
  }
}

/* input_map: "name:index" of the GraphDef -> const weft_output_t * of the graph (or NULL);
 * `used` gets the keys consumed. */
static weft_status_t *import_proto_mapped(weft_graph_t *graph, const Tensorflow__GraphDef *gd,
                                          const char *prefix, GHashTable *input_map,
                                          GHashTable *used) {
  if (graph == NULL || gd == NULL) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "import needs a graph and a GraphDef");
  }
  if (weft__graphdef_has_functions(gd)) {
    Tensorflow__GraphDef *flat = NULL;
    weft_status_t *ist = weft__graphdef_inline_functions(graph->ops, gd, &flat);
    if (ist) return ist;
    ist = weft__graph_import_graphdef_proto(graph, flat, prefix);
    tensorflow__graph_def__free_unpacked(flat, NULL);
    return ist;
  }
  char *pfx = prefix == NULL || *prefix == '\0' ? g_strdup("")
              : g_str_has_suffix(prefix, "/")   ? g_strdup(prefix)
                                                : g_strconcat(prefix, "/", NULL);
  int n = (int)gd->n_node;
  pending_node_t *nodes = g_new0(pending_node_t, n > 0 ? n : 1);
  GHashTable *local = g_hash_table_new(g_str_hash, g_str_equal); /* name -> position + 1 */
  weft_status_t *st = NULL;

  /* Names first, so attrs and inputs can tell local nodes from nodes already in the graph. */
  for (int i = 0; i < n && !st; i++) {
    const Tensorflow__NodeDef *nd = gd->node[i];
    nodes[i].def = nd;
    const char *name = nd != NULL && nd->name != NULL ? nd->name : "";
    if (*name == '\0') {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "GraphDef node #%d (op '%s') has no name", i,
                           nd != NULL && nd->op != NULL ? nd->op : "");
    } else if (!valid_node_name(name)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s': Node name contains invalid characters (GraphDef node #%d)",
                           name, i);
    } else if (g_hash_table_contains(local, name)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "GraphDef has more than one node named '%s'",
                           name);
    } else {
      g_hash_table_insert(local, (gpointer)name, GINT_TO_POINTER(i + 1));
      nodes[i].full_name = g_strconcat(pfx, name, NULL);
      if (weft_graph_node(graph, nodes[i].full_name) != NULL) {
        st = weft_status_new(WEFT_ALREADY_EXISTS,
                             "Node '%s' of the GraphDef already exists in the graph",
                             nodes[i].full_name);
      }
    }
  }
  if (!st) st = check_registered(graph, nodes, n);
  for (int i = 0; i < n && !st; i++) st = convert_node(graph, nodes[i].def, i, pfx, local, &nodes[i]);

  for (int i = 0; i < n && !st; i++) {
    const Tensorflow__NodeDef *nd = nodes[i].def;
    pending_node_t *p = &nodes[i];
    p->inputs = g_new0(input_ref_t, nd->n_input > 0 ? nd->n_input : 1);
    /* Data inputs keep their order among themselves, control inputs among theirs; TensorFlow
     * writes controls last, but reading them in any order costs nothing. */
    for (int pass = 0; pass < 2 && !st; pass++) {
      for (size_t k = 0; k < nd->n_input && !st; k++) {
        char *src = NULL;
        int index = 0;
        if (!parse_input(nd->input[k], &src, &index)) {
          st = weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) has a malformed input '%s'",
                               nd->name, nd->op, nd->input[k] != NULL ? nd->input[k] : "");
          break;
        }
        if ((index < 0) != (pass == 1)) {
          g_free(src);
          continue;
        }
        input_ref_t *r = &p->inputs[p->n_inputs++];
        r->node = src;
        r->index = index;
        r->local = GPOINTER_TO_INT(g_hash_table_lookup(local, src)) - 1;
        if (input_map && index >= 0) {
          char *key = g_strdup_printf("%s:%d", src, index);
          const weft_output_t *mapped = g_hash_table_lookup(input_map, key);
          if (mapped) {
            r->local = -1;
            r->existing = mapped->node;
            r->index = mapped->index;
            g_hash_table_add(used, key);
            continue;
          }
          g_free(key);
        }
        if (r->local < 0) {
          char *full = g_strconcat(pfx, src, NULL);
          r->existing = weft_graph_node(graph, full);
          if (r->existing == NULL) {
            st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                 "Node '%s' (%s) has input '%s', but no node named '%s' is in "
                                 "the GraphDef or the graph",
                                 nd->name, nd->op, nd->input[k], full);
          }
          g_free(full);
        }
      }
      if (pass == 0) p->n_data = p->n_inputs;
    }
  }

  if (!st) st = mark_back_edges(nodes, n);
  int *order = g_new(int, n > 0 ? n : 1);
  if (!st) st = topo_order(nodes, n, order);

  if (!st) {
    int n_before = weft_graph_num_nodes(graph);
    weft_node_t **added = g_new0(weft_node_t *, n > 0 ? n : 1);
    for (int j = 0; j < n && !st; j++) {
      pending_node_t *p = &nodes[order[j]];
      int n_control = p->n_inputs - p->n_data;
      weft__edge_t *edges = g_new0(weft__edge_t, p->n_data > 0 ? p->n_data : 1);
      weft_node_t **controls = g_new0(weft_node_t *, n_control > 0 ? n_control : 1);
      for (int k = 0; k < p->n_inputs; k++) {
        const input_ref_t *r = &p->inputs[k];
        weft_node_t *src = r->local >= 0 ? added[r->local] : r->existing;
        /* A back edge's producer comes later: the Merge's forward input, of the same type, holds
         * its place until link_back_edges. */
        int src_index = r->index;
        if (r->back_edge) {
          const input_ref_t *fwd = &p->inputs[forward_input(p)];
          src = added[fwd->local];
          src_index = fwd->index;
        }
        if (k < p->n_data) {
          edges[k].src = src;
          edges[k].src_index = src_index;
          if (src_index >= weft_node_num_outputs(src)) {
            st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                 "Node '%s' (%s) has input '%s:%d', but node '%s' (%s) has only %d "
                                 "output%s",
                                 p->def->name, p->def->op, r->node, r->index, r->node,
                                 weft_node_op(src), weft_node_num_outputs(src),
                                 weft_node_num_outputs(src) == 1 ? "" : "s");
          }
        } else {
          controls[k - p->n_data] = src;
        }
      }
      if (!st) {
        st = weft__graph_add_node(graph, p->full_name, p->def->op, edges, p->n_data, controls,
                                  n_control, p->def->device, p->attrs, &added[order[j]]);
      }
      g_free(edges);
      g_free(controls);
    }
    if (!st) link_back_edges(nodes, n, added);
    /* All or nothing: a graph half imported would run something nobody wrote. */
    if (st) weft__graph_truncate(graph, n_before);
    g_free(added);
  }

  g_free(order);
  for (int i = 0; i < n; i++) pending_clear(&nodes[i]);
  g_free(nodes);
  g_hash_table_destroy(local);
  g_free(pfx);
  return st;
}

weft_status_t *weft__graph_import_graphdef_proto(weft_graph_t *graph,
                                                 const Tensorflow__GraphDef *gd,
                                                 const char *prefix) {
  return import_proto_mapped(graph, gd, prefix, NULL, NULL);
}

/* Normalises an input_map key: "x" means "x:0". */
static char *map_key(const char *name) {
  const char *colon = strrchr(name, ':');
  return colon && colon[1] != '\0' ? g_strdup(name) : g_strdup_printf("%s:0", name);
}

weft_status_t *weft_graph_import_graphdef_mapped(weft_graph_t *graph, const void *bytes,
                                                 size_t len, const char *prefix,
                                                 const char *const *map_keys,
                                                 const weft_output_t *map_values, int n_map) {
  if (graph == NULL || (n_map > 0 && (map_keys == NULL || map_values == NULL)) || n_map < 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "import needs a graph and whole input_map");
  }
  GHashTable *map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GHashTable *used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  weft_status_t *st = NULL;
  for (int i = 0; i < n_map && !st; i++) {
    const weft_output_t *v = &map_values[i];
    if (map_keys[i] == NULL || v->node == NULL || v->index < 0 ||
        v->index >= weft_node_num_outputs(v->node)) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "input_map entry %d ('%s') has no tensor", i,
                           map_keys[i] ? map_keys[i] : "");
    } else {
      g_hash_table_insert(map, map_key(map_keys[i]), (gpointer)&map_values[i]);
    }
  }
  Tensorflow__GraphDef *gd = NULL;
  if (!st) {
    gd = (Tensorflow__GraphDef *)weft__pb_unpack(&tensorflow__graph_def__descriptor, bytes, len,
                                                 "GraphDef", &st);
    if (!st && gd == NULL)
      st = weft_status_new(WEFT_INVALID_ARGUMENT, "could not parse GraphDef (%zu bytes)", len);
  }
  if (!st) {
    int n_before = weft_graph_num_nodes(graph);
    st = import_proto_mapped(graph, gd, prefix, map, used);
    /* TensorFlow refuses a mapping nothing consumed: a misspelt key would silently do nothing */
    GString *unused = g_string_new(NULL);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, map);
    while (!st && g_hash_table_iter_next(&it, &key, NULL)) {
      if (!g_hash_table_contains(used, key))
        g_string_append_printf(unused, "%s%s", unused->len ? ", " : "", (const char *)key);
    }
    if (!st && unused->len) {
      weft__graph_truncate(graph, n_before);
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Attempted to map inputs that were not found in graph_def: [%s]",
                           unused->str);
    }
    g_string_free(unused, TRUE);
  }
  if (gd) tensorflow__graph_def__free_unpacked(gd, NULL);
  g_hash_table_destroy(map);
  g_hash_table_destroy(used);
  return st;
}

/* Imports GraphDef bytes from a client, or from the file `path` (NULL for bytes). Their nesting
 * is bounded before protobuf-c's recursive unpack sees them: a GraphDef nested thousands of
 * AttrValue levels deep overflowed the stack. */
static weft_status_t *import_bytes(weft_graph_t *graph, const void *bytes, size_t len,
                                   const char *prefix, const char *path) {
  char *what = path ? g_strdup_printf("GraphDef '%s'", path) : g_strdup("GraphDef");
  weft_status_t *st = NULL;
  Tensorflow__GraphDef *gd = (Tensorflow__GraphDef *)weft__pb_unpack(
      &tensorflow__graph_def__descriptor, bytes, len, what, &st);
  g_free(what);
  if (st) return st; /* names the file already */
  if (gd == NULL) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "could not parse GraphDef (%zu bytes)", len);
  } else {
    st = weft__graph_import_graphdef_proto(graph, gd, prefix);
    tensorflow__graph_def__free_unpacked(gd, NULL);
  }
  if (st && path) weft_status_prefix(st, "while importing %s", path);
  return st;
}

weft_status_t *weft_graph_import_graphdef(weft_graph_t *graph, const void *bytes, size_t len,
                                          const char *prefix) {
  if (graph == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "import needs a graph");
  if (bytes == NULL && len > 0) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "GraphDef bytes are NULL but the length is %zu",
                           len);
  }
  return import_bytes(graph, bytes, len, prefix, NULL);
}

weft_status_t *weft_graph_import_graphdef_file(weft_graph_t *graph, const char *path,
                                               const char *prefix) {
  if (graph == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "import needs a graph");
  if (path == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "no GraphDef file given");
  gchar *contents = NULL;
  gsize len = 0;
  GError *error = NULL;
  const char *kind = NULL;
  if (weft__file_is_special(path, &kind)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "GraphDef file '%s' is %s, not a file", path,
                           kind);
  }
  if (!g_file_get_contents(path, &contents, &len, &error)) {
    /* GLib's message repeats the path in locale-dependent quotes; the common cases get a plain
     * reason instead. */
    weft_code_t code = WEFT_UNKNOWN;
    const char *why = error->message;
    if (error->domain == G_FILE_ERROR) {
      switch (error->code) {
        case G_FILE_ERROR_NOENT: code = WEFT_NOT_FOUND, why = "no such file"; break;
        case G_FILE_ERROR_NOTDIR: code = WEFT_NOT_FOUND, why = "a parent is not a folder"; break;
        case G_FILE_ERROR_ISDIR: code = WEFT_INVALID_ARGUMENT, why = "it is a folder"; break;
        case G_FILE_ERROR_ACCES:
        case G_FILE_ERROR_PERM: code = WEFT_PERMISSION_DENIED, why = "permission denied"; break;
        case G_FILE_ERROR_NOMEM: code = WEFT_RESOURCE_EXHAUSTED; break;
        default: break;
      }
    }
    weft_status_t *st = weft_status_new(code, "could not read GraphDef file '%s': %s", path, why);
    g_error_free(error);
    return st;
  }
  weft_status_t *st = import_bytes(graph, contents, len, prefix, path);
  g_free(contents);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Export */

static int compare_entries(const void *a, const void *b) {
  const Tensorflow__AttrEntry *x = *(Tensorflow__AttrEntry *const *)a;
  const Tensorflow__AttrEntry *y = *(Tensorflow__AttrEntry *const *)b;
  return strcmp(x->key, y->key);
}

static char *input_string(const weft_node_t *src, int index) {
  if (index < 0) return g_strconcat("^", src->name, NULL);
  if (index == 0) return g_strdup(src->name);
  return g_strdup_printf("%s:%d", src->name, index);
}

static weft_status_t *node_to_proto(const weft_node_t *node, Tensorflow__NodeDef **out) {
  Tensorflow__NodeDef *nd = g_new(Tensorflow__NodeDef, 1);
  tensorflow__node_def__init(nd);
  *out = nd;
  nd->name = g_strdup(node->name);
  nd->op = g_strdup(node->op_name);
  if (node->requested_device != NULL && *node->requested_device != '\0')
    nd->device = g_strdup(node->requested_device);
  int n_control = node->control_inputs != NULL ? (int)node->control_inputs->len : 0;
  int n_in = node->n_inputs + n_control;
  nd->input = n_in > 0 ? g_new0(char *, n_in) : NULL;
  for (int k = 0; k < node->n_inputs; k++)
    nd->input[nd->n_input++] = input_string(node->inputs[k].src, node->inputs[k].src_index);
  for (int k = 0; k < n_control; k++)
    nd->input[nd->n_input++] = input_string(node->control_inputs->pdata[k], -1);

  GPtrArray *names = weft__attrs_sorted_names(node->attrs);
  /* A colocation group that is not spelled as an attr still has to reach TensorFlow. */
  bool add_class = node->colocation_group != NULL && weft__attrs_get(node->attrs, "_class") == NULL;
  nd->attr = g_new0(Tensorflow__AttrEntry *, names->len + 1);
  weft_status_t *st = NULL;
  for (guint k = 0; k < names->len && !st; k++) {
    const char *key = names->pdata[k];
    Tensorflow__AttrValue *pv = NULL;
    st = attr_to_proto(weft__attrs_get(node->attrs, key), &pv);
    if (st) {
      weft_status_prefix(st, "Node '%s' (%s): attr '%s'", node->name, node->op_name, key);
    } else if (pv != NULL) {
      Tensorflow__AttrEntry *e = g_new(Tensorflow__AttrEntry, 1);
      tensorflow__attr_entry__init(e);
      e->key = g_strdup(key);
      e->value = pv;
      nd->attr[nd->n_attr++] = e;
    }
  }
  g_ptr_array_free(names, TRUE);
  if (!st && add_class) {
    weft__attr_value_t cls = {.kind = WEFT_ATTR_LIST_STRING};
    char *loc = g_strconcat("loc:@", node->colocation_group, NULL);
    weft_string_t s = {loc, strlen(loc)};
    cls.u.list.n = 1;
    cls.u.list.s = &s;
    Tensorflow__AttrEntry *e = g_new(Tensorflow__AttrEntry, 1);
    tensorflow__attr_entry__init(e);
    e->key = g_strdup("_class");
    st = attr_to_proto(&cls, &e->value);
    nd->attr[nd->n_attr++] = e;
    g_free(loc);
    qsort(nd->attr, nd->n_attr, sizeof(*nd->attr), compare_entries);
  }
  return st;
}

weft_status_t *weft__graph_to_graphdef_proto(const weft_graph_t *graph,
                                             Tensorflow__GraphDef **out) {
  *out = NULL;
  if (graph == NULL) return weft_status_new(WEFT_INVALID_ARGUMENT, "export needs a graph");
  Tensorflow__GraphDef *gd = g_new(Tensorflow__GraphDef, 1);
  tensorflow__graph_def__init(gd);
  gd->versions = g_new(Tensorflow__VersionDef, 1);
  tensorflow__version_def__init(gd->versions);
  gd->versions->producer = WEFT_GRAPHDEF_PRODUCER;
  int n = weft_graph_num_nodes(graph);
  gd->node = n > 0 ? g_new0(Tensorflow__NodeDef *, n) : NULL;
  weft_status_t *st = NULL;
  for (int i = 0; i < n && !st; i++) {
    const weft_node_t *node = weft_graph_node_at(graph, i);
    if (node == NULL) break; /* the graph shrank under us (a failed import elsewhere) */
    st = node_to_proto(node, &gd->node[gd->n_node++]);
  }
  if (st) {
    tensorflow__graph_def__free_unpacked(gd, NULL);
    return st;
  }
  *out = gd;
  return NULL;
}

weft_status_t *weft_graph_export_graphdef(const weft_graph_t *graph, void **bytes, size_t *len) {
  if (bytes == NULL || len == NULL) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "export needs somewhere to put the bytes");
  }
  *bytes = NULL;
  *len = 0;
  Tensorflow__GraphDef *gd = NULL;
  weft_status_t *st = weft__graph_to_graphdef_proto(graph, &gd);
  if (st) return st;
  size_t size = tensorflow__graph_def__get_packed_size(gd);
  /* The caller frees with free(), so the buffer comes from malloc itself. */
  uint8_t *buf = malloc(size > 0 ? size : 1);
  if (buf == NULL) {
    tensorflow__graph_def__free_unpacked(gd, NULL);
    return weft_status_new(WEFT_RESOURCE_EXHAUSTED, "no memory for a GraphDef of %zu bytes", size);
  }
  size_t written = tensorflow__graph_def__pack(gd, buf);
  tensorflow__graph_def__free_unpacked(gd, NULL);
  *bytes = buf;
  *len = written;
  return NULL;
}
