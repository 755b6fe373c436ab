/* The framing of every Master and Worker message: the method's protobuf message, a TensorList
 * describing the tensors that follow, then the tensors' raw bytes. Sending hands each numeric
 * tensor's own buffer to gRPC as a slice that keeps a tensor reference (no protobuf copy, no
 * copy at all on our side); receiving validates every size against the bytes that actually
 * arrived before allocating anything, then copies each tensor once into its new buffer. */
#include "distributed_internal.h"

#include <grpc/slice.h>
#include <string.h>

#include "wire_reader.h"

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

/* The fault weft__wire_meta_check found, in the decoder's words. */
static weft_status_t *meta_error(const Weft__TensorMeta *m, int index,
                                 const weft__wire_meta_check_t *c) {
  switch (c->fault) {
    case WEFT__WIRE_META_OK:
      break;
    case WEFT__WIRE_META_DTYPE:
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Tensor %d of the message has invalid dtype %d",
                             index, m->dtype);
    case WEFT__WIRE_META_RANK:
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message has rank %zu; at most %d is supported",
                             index, m->n_dims, WEFT_MAX_RANK);
    case WEFT__WIRE_META_NEGATIVE_DIM:
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message has negative dimension %" G_GINT64_FORMAT,
                             index, m->dims[c->dim]);
    case WEFT__WIRE_META_DIMS_OVERFLOW:
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message has too many elements", index);
    case WEFT__WIRE_META_STRING_COUNT:
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "String tensor %d of the message has %" G_GUINT64_FORMAT
                             " elements but %zu lengths", index, c->elements, m->n_string_lengths);
    case WEFT__WIRE_META_STRING_BYTES:
      if (c->string_overflow) {
        return weft_status_new(WEFT_INVALID_ARGUMENT,
                               "String tensor %d of the message is too large", index);
      }
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "String tensor %d of the message says %" G_GUINT64_FORMAT
                             " bytes but its elements add up to %" G_GUINT64_FORMAT,
                             index, (guint64)m->nbytes, c->string_total);
    case WEFT__WIRE_META_BYTES_OVERFLOW:
    case WEFT__WIRE_META_BYTES:
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Tensor %d of the message (%s, %" G_GUINT64_FORMAT
                             " elements) says %" G_GUINT64_FORMAT " bytes",
                             index, weft_dtype_name((weft_dtype_t)m->dtype), c->elements,
                             (guint64)m->nbytes);
  }
  return NULL;
}

static weft_status_t *read_tensor(weft__wire_reader_t *c, const Weft__TensorMeta *m,
                                  weft_tensor_t **out) {
  int64_t dims[WEFT_MAX_RANK];
  for (size_t k = 0; k < m->n_dims; k++) dims[k] = m->dims[k];
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__tensor_alloc(NULL, (weft_dtype_t)m->dtype, (int)m->n_dims, dims, &t);
  if (st) return st;
  if (m->dtype == WEFT_DT_STRING) {
    char *bytes = g_malloc(m->nbytes > 0 ? m->nbytes : 1);
    weft__wire_reader_read(c, bytes, m->nbytes);
    size_t at = 0;
    for (size_t k = 0; k < m->n_string_lengths && !st; k++) {
      st = weft_tensor_set_string(t, (int64_t)k, bytes + at, m->string_lengths[k]);
      at += m->string_lengths[k];
    }
    g_free(bytes);
  } else if (m->nbytes > 0) {
    weft__wire_reader_read(c, weft_tensor_data(t), m->nbytes);
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
  weft__wire_reader_t c;
  if (!weft__wire_reader_init(&c, bb)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Malformed request: unreadable message");
  }
  Weft__TensorList *list = NULL;
  weft_status_t *st = weft__wire_reader_head(&c, desc, msg, &list);
  uint64_t total = 0;
  for (size_t k = 0; !st && k < list->n_tensor; k++) {
    const Weft__TensorMeta *m = list->tensor[k];
    weft__wire_meta_check_t check;
    if (!weft__wire_meta_check(m, WEFT_MAX_RANK, &check)) st = meta_error(m, (int)k, &check);
    if (!st && m->nbytes > c.remaining - total) {
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Malformed request: tensor %zu needs %" G_GUINT64_FORMAT
                           " bytes but only %" G_GUINT64_FORMAT " are left",
                           k, (guint64)m->nbytes, (guint64)(c.remaining - total));
    }
    if (!st) total += m->nbytes;
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
  weft__wire_reader_destroy(&c);
  if (list) weft__tensor_list__free_unpacked(list, NULL);
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
