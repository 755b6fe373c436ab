/* The framing of every Master and Worker message: the method's protobuf message, a TensorList
 * describing the tensors that follow, then the tensors' raw bytes. Sending hands each numeric
 * tensor's own buffer to gRPC as a slice that keeps a tensor reference (no protobuf copy, no
 * copy at all on our side); receiving validates every size against the bytes that actually
 * arrived before allocating anything, then copies each tensor once into its new buffer. */
#include "distributed_internal.h"

#include <grpc/slice.h>
#include <string.h>

#include "../base/protobuf_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Encoding */

static size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

static void release_tensor(void *tensor) { weft_tensor_unref(tensor); }

static size_t string_bytes(const weft_tensor_t *t) {
  const weft_string_t *s = weft_tensor_data(t);
  size_t total = 0;
  for (int64_t k = 0; k < t->num_elements; k++) total += s[k].len;
  return total;
}

static void meta_fill(Weft__TensorMeta *m, const weft_tensor_t *t) {
  weft__tensor_meta__init(m);
  m->dtype = t->dtype;
  m->n_dims = (size_t)t->rank;
  m->dims = (int64_t *)t->dims; /* borrowed: packed before the tensor goes away */
  if (t->dtype == WEFT_DT_STRING) {
    const weft_string_t *s = weft_tensor_data(t);
    m->n_string_lengths = (size_t)t->num_elements;
    m->string_lengths = g_new(uint64_t, t->num_elements > 0 ? t->num_elements : 1);
    for (int64_t k = 0; k < t->num_elements; k++) m->string_lengths[k] = s[k].len;
    m->nbytes = string_bytes(t);
  } else {
    m->nbytes = weft_tensor_nbytes(t);
  }
}

weft_status_t *weft__wire_encode(const ProtobufCMessage *msg, weft_tensor_t *const *tensors,
                                 int n_tensors, grpc_byte_buffer **out) {
  *out = NULL;
  weft_tensor_t **host = g_new0(weft_tensor_t *, n_tensors > 0 ? n_tensors : 1);
  Weft__TensorMeta *metas = g_new0(Weft__TensorMeta, n_tensors > 0 ? n_tensors : 1);
  Weft__TensorMeta **meta_ptrs = g_new0(Weft__TensorMeta *, n_tensors > 0 ? n_tensors : 1);
  weft_status_t *st = NULL;
  for (int k = 0; k < n_tensors && !st; k++) {
    if (!tensors[k]) {
      st = weft_status_new(WEFT_INTERNAL, "Tensor %d of a message is missing", k);
      break;
    }
    if (weft__tensor_is_host(tensors[k])) host[k] = weft_tensor_ref(tensors[k]);
    else st = weft__tensor_to_device(tensors[k], NULL, &host[k]);
    if (!st) {
      meta_fill(&metas[k], host[k]);
      meta_ptrs[k] = &metas[k];
    }
  }
  grpc_slice *slices = NULL;
  int n_slices = 0;
  if (!st) {
    Weft__TensorList list = WEFT__TENSOR_LIST__INIT;
    list.n_tensor = (size_t)n_tensors;
    list.tensor = meta_ptrs;
    size_t msg_len = protobuf_c_message_get_packed_size(msg);
    size_t list_len = weft__tensor_list__get_packed_size(&list);
    size_t head_len = varint_size(msg_len) + msg_len + varint_size(list_len) + list_len;
    slices = g_new0(grpc_slice, n_tensors + 1);
    slices[0] = grpc_slice_malloc(head_len);
    uint8_t *p = GRPC_SLICE_START_PTR(slices[0]);
    p = put_varint(p, msg_len);
    p += protobuf_c_message_pack(msg, p);
    p = put_varint(p, list_len);
    weft__tensor_list__pack(&list, p);
    n_slices = 1;
    for (int k = 0; k < n_tensors; k++) {
      weft_tensor_t *t = host[k];
      if (metas[k].nbytes == 0) continue;
      if (t->dtype == WEFT_DT_STRING) {
        grpc_slice s = grpc_slice_malloc(metas[k].nbytes);
        uint8_t *q = GRPC_SLICE_START_PTR(s);
        const weft_string_t *strs = weft_tensor_data(t);
        for (int64_t e = 0; e < t->num_elements; e++) {
          if (strs[e].len) memcpy(q, strs[e].data, strs[e].len);
          q += strs[e].len;
        }
        slices[n_slices++] = s;
      } else {
        /* The slice owns a reference: the bytes stay valid until gRPC has written them. */
        slices[n_slices++] = grpc_slice_new_with_user_data(weft_tensor_data(t), metas[k].nbytes,
                                                           release_tensor, weft_tensor_ref(t));
      }
    }
    *out = grpc_raw_byte_buffer_create(slices, (size_t)n_slices);
    for (int k = 0; k < n_slices; k++) grpc_slice_unref(slices[k]);
  }
  for (int k = 0; k < n_tensors; k++) {
    g_free(metas[k].string_lengths);
    weft_tensor_unref(host[k]);
  }
  g_free(slices);
  g_free(metas);
  g_free(meta_ptrs);
  g_free(host);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Decoding */

typedef struct cursor {
  grpc_byte_buffer_reader reader;
  grpc_slice slice;
  size_t offset;
  bool have_slice;
  size_t remaining; /* bytes not yet read */
} cursor_t;

static bool cursor_read(cursor_t *c, void *dst, size_t n) {
  if (n > c->remaining) return false;
  uint8_t *out = dst;
  while (n > 0) {
    if (!c->have_slice || c->offset == GRPC_SLICE_LENGTH(c->slice)) {
      if (c->have_slice) grpc_slice_unref(c->slice);
      c->have_slice = grpc_byte_buffer_reader_next(&c->reader, &c->slice) != 0;
      c->offset = 0;
      if (!c->have_slice) return false;
      continue;
    }
    size_t take = GRPC_SLICE_LENGTH(c->slice) - c->offset;
    if (take > n) take = n;
    if (out) {
      memcpy(out, GRPC_SLICE_START_PTR(c->slice) + c->offset, take);
      out += take;
    }
    c->offset += take;
    c->remaining -= take;
    n -= take;
  }
  return true;
}

static bool cursor_varint(cursor_t *c, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t b;
    if (!cursor_read(c, &b, 1)) return false;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/* A length-prefixed protobuf message of the frame. */
static weft_status_t *read_message(cursor_t *c, const ProtobufCMessageDescriptor *desc,
                                   const char *what, ProtobufCMessage **out) {
  uint64_t len = 0;
  if (!cursor_varint(c, &len) || len > c->remaining) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Malformed request: the %s length is missing or larger than the %zu "
                           "bytes left", what, c->remaining);
  }
  uint8_t *bytes = g_malloc(len > 0 ? len : 1);
  cursor_read(c, bytes, len);
  /* Nesting bounded first: protobuf-c recurses once per level (a deep GraphDef crashed weftd). */
  char named[160];
  g_snprintf(named, sizeof named, "Malformed request: the %s (%s)", what, desc->name);
  weft_status_t *deep = NULL;
  *out = weft__pb_unpack(desc, bytes, len, named, &deep);
  g_free(bytes);
  if (deep) return deep;
  if (!*out) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Malformed request: the %s (%s, %" G_GUINT64_FORMAT
                           " bytes) does not parse", what, desc->name, len);
  }
  return NULL;
}

static weft_status_t *check_meta(const Weft__TensorMeta *m, int index, uint64_t *nbytes) {
  int dtype = m->dtype;
  bool ok_type = weft__dtype_is_valid(dtype) && !weft__dtype_is_ref(dtype) &&
                 (dtype == WEFT_DT_STRING || weft_dtype_size(dtype) > 0);
  if (!ok_type) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Tensor %d of the message has invalid dtype %d",
                           index, dtype);
  }
  if (m->n_dims > WEFT_MAX_RANK) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Tensor %d of the message has rank %zu; at most %d is supported", index,
                           m->n_dims, WEFT_MAX_RANK);
  }
  uint64_t elements = 1;
  for (size_t k = 0; k < m->n_dims; k++) {
    if (m->dims[k] < 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message has negative dimension %" G_GINT64_FORMAT,
                             index, m->dims[k]);
    }
    if (m->dims[k] > 0 && elements > G_MAXINT64 / (uint64_t)m->dims[k]) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message has too many elements", index);
    }
    elements *= (uint64_t)m->dims[k];
  }
  if (dtype == WEFT_DT_STRING) {
    if (m->n_string_lengths != elements) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "String tensor %d of the message has %" G_GUINT64_FORMAT
                             " elements but %zu lengths", index, elements, m->n_string_lengths);
    }
    uint64_t total = 0;
    for (size_t k = 0; k < m->n_string_lengths; k++) {
      if (m->string_lengths[k] > G_MAXINT64 - total) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "String tensor %d of the message is too large", index);
      }
      total += m->string_lengths[k];
    }
    if (total != m->nbytes) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "String tensor %d of the message says %" G_GUINT64_FORMAT
                             " bytes but its elements add up to %" G_GUINT64_FORMAT,
                             index, (guint64)m->nbytes, total);
    }
  } else {
    size_t size = weft_dtype_size(dtype);
    if (elements > G_MAXINT64 / size || elements * size != m->nbytes) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message (%s, %" G_GUINT64_FORMAT
                             " elements) says %" G_GUINT64_FORMAT " bytes",
                             index, weft_dtype_name(dtype), elements, (guint64)m->nbytes);
    }
  }
  *nbytes = m->nbytes;
  return NULL;
}

static weft_status_t *read_tensor(cursor_t *c, const Weft__TensorMeta *m, weft_tensor_t **out) {
  int64_t dims[WEFT_MAX_RANK];
  for (size_t k = 0; k < m->n_dims; k++) dims[k] = m->dims[k];
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__tensor_alloc(NULL, (weft_dtype_t)m->dtype, (int)m->n_dims, dims, &t);
  if (st) return st;
  if (m->dtype == WEFT_DT_STRING) {
    char *bytes = g_malloc(m->nbytes > 0 ? m->nbytes : 1);
    cursor_read(c, bytes, m->nbytes);
    size_t at = 0;
    for (size_t k = 0; k < m->n_string_lengths && !st; k++) {
      st = weft_tensor_set_string(t, (int64_t)k, bytes + at, m->string_lengths[k]);
      at += m->string_lengths[k];
    }
    g_free(bytes);
  } else if (m->nbytes > 0) {
    cursor_read(c, weft_tensor_data(t), m->nbytes);
  }
  if (st) {
    weft_tensor_unref(t);
    return st;
  }
  *out = t;
  return NULL;
}

weft_status_t *weft__wire_decode(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *desc,
                                 ProtobufCMessage **msg, weft_tensor_t ***tensors,
                                 int *n_tensors) {
  *msg = NULL;
  if (tensors) *tensors = NULL;
  if (n_tensors) *n_tensors = 0;
  if (!bb) return weft_status_new(WEFT_INVALID_ARGUMENT, "Malformed request: no message");
  cursor_t c = {0};
  if (!grpc_byte_buffer_reader_init(&c.reader, bb)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Malformed request: unreadable message");
  }
  c.remaining = grpc_byte_buffer_length(bb);
  ProtobufCMessage *list_msg = NULL;
  weft_status_t *st = read_message(&c, desc, "message", msg);
  if (!st) st = read_message(&c, &weft__tensor_list__descriptor, "tensor list", &list_msg);
  const Weft__TensorList *list = (const Weft__TensorList *)list_msg;
  uint64_t total = 0;
  for (size_t k = 0; !st && k < list->n_tensor; k++) {
    uint64_t nbytes = 0;
    st = check_meta(list->tensor[k], (int)k, &nbytes);
    if (!st && nbytes > c.remaining - total) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Malformed request: tensor %zu needs %" G_GUINT64_FORMAT
                           " bytes but only %" G_GUINT64_FORMAT " are left",
                           k, nbytes, (guint64)(c.remaining - total));
    }
    if (!st) total += nbytes;
  }
  if (!st && total != c.remaining) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "Malformed request: %" G_GUINT64_FORMAT " bytes follow the tensors",
                         (guint64)(c.remaining - total));
  }
  if (!st && list->n_tensor > 0 && !tensors) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "Malformed request: %s carries no tensors",
                         desc->name);
  }
  weft_tensor_t **out = NULL;
  int n = 0;
  if (!st && list->n_tensor > 0) {
    out = g_new0(weft_tensor_t *, list->n_tensor);
    for (size_t k = 0; k < list->n_tensor && !st; k++) {
      st = read_tensor(&c, list->tensor[k], &out[k]);
      if (!st) n++;
    }
  }
  if (c.have_slice) grpc_slice_unref(c.slice);
  grpc_byte_buffer_reader_destroy(&c.reader);
  if (list_msg) protobuf_c_message_free_unpacked(list_msg, NULL);
  if (st) {
    weft__tensors_free(out, n);
    if (*msg) protobuf_c_message_free_unpacked(*msg, NULL);
    *msg = NULL;
    return st;
  }
  if (tensors) *tensors = out;
  if (n_tensors) *n_tensors = n;
  return NULL;
}

void weft__tensors_free(weft_tensor_t **tensors, int n) {
  if (!tensors) return;
  for (int k = 0; k < n; k++) weft_tensor_unref(tensors[k]);
  g_free(tensors);
}
