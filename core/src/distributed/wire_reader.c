/* The one reader of Master and Worker frames (wire_reader.h): the validator and the decoder both
 * walk a frame with it, so they cannot disagree on where its parts are or what sizes they hold. */
#include "wire_reader.h"

#include <string.h>

#include "../base/protobuf_internal.h"
#include "distributed_internal.h"

/* protobuf-c's limit, and ours: a varint longer than this is not one. */
#define VARINT_MAX_BYTES 10

bool weft__wire_reader_init(weft__wire_reader_t *r, grpc_byte_buffer *bb) {
  memset(r, 0, sizeof *r);
  if (!grpc_byte_buffer_reader_init(&r->reader, bb)) return false;
  r->remaining = grpc_byte_buffer_length(bb);
  return true;
}

void weft__wire_reader_destroy(weft__wire_reader_t *r) {
  if (r->have_slice) grpc_slice_unref(r->slice);
  r->have_slice = false;
  grpc_byte_buffer_reader_destroy(&r->reader);
}

bool weft__wire_reader_read(weft__wire_reader_t *r, void *dst, size_t n) {
  if (n > r->remaining) return false;
  uint8_t *out = dst;
  while (n > 0) {
    if (!r->have_slice || r->offset == GRPC_SLICE_LENGTH(r->slice)) {
      if (r->have_slice) grpc_slice_unref(r->slice);
      r->have_slice = grpc_byte_buffer_reader_next(&r->reader, &r->slice) != 0;
      r->offset = 0;
      if (!r->have_slice) return false;
      continue;
    }
    size_t take = MIN(GRPC_SLICE_LENGTH(r->slice) - r->offset, n);
    if (out) {
      memcpy(out, GRPC_SLICE_START_PTR(r->slice) + r->offset, take);
      out += take;
    }
    r->offset += take;
    r->remaining -= take;
    n -= take;
  }
  return true;
}

bool weft__wire_reader_varint(weft__wire_reader_t *r, uint64_t *out_value) {
  /* The bytes are gathered first (a varint may straddle slices), then decoded by the same code
   * that decodes every other varint the core reads. */
  uint8_t bytes[VARINT_MAX_BYTES];
  size_t n = 0;
  *out_value = 0;
  do {
    if (n == sizeof bytes || !weft__wire_reader_read(r, &bytes[n], 1)) return false;
  } while (bytes[n++] & 0x80);
  const uint8_t *p = bytes;
  return weft__pb_read_varint(&p, bytes + n, VARINT_MAX_BYTES, out_value);
}

bool weft__wire_reader_length(weft__wire_reader_t *r, uint64_t *out_len) {
  return weft__wire_reader_varint(r, out_len) && *out_len <= r->remaining;
}

/* A length-prefixed protobuf message of the frame. */
static weft_status_t *read_message(weft__wire_reader_t *r, const ProtobufCMessageDescriptor *desc,
                                   const char *what, ProtobufCMessage **out) {
  *out = NULL;
  uint64_t len = 0;
  if (!weft__wire_reader_length(r, &len)) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Malformed request: the %s length is missing or larger than the %zu "
                           "bytes left",
                           what, r->remaining);
  }
  if (!desc) {
    weft__wire_reader_read(r, NULL, len);
    return NULL;
  }
  /* A message inside the current slice (a small frame is one slice) is unpacked where it lies;
   * only one that straddles slices is gathered into a copy. */
  uint8_t *bytes = NULL;
  const uint8_t *at = NULL;
  if (r->have_slice && GRPC_SLICE_LENGTH(r->slice) - r->offset >= len) {
    at = GRPC_SLICE_START_PTR(r->slice) + r->offset;
  } else {
    bytes = g_malloc(len > 0 ? len : 1);
    weft__wire_reader_read(r, bytes, len);
    at = bytes;
  }
  /* Nesting bounded first: protobuf-c recurses once per level (a deep GraphDef crashed weftd).
   * The message and its type are named only in a refusal: formatting them for every frame was
   * 2% of a small RunStep's CPU in weftd. */
  static const char lead[] = "Malformed request";
  weft_status_t *deep = NULL;
  *out = weft__pb_unpack(desc, at, len, lead, &deep);
  if (!bytes) weft__wire_reader_read(r, NULL, len); /* past it; the slice is still held */
  g_free(bytes);
  if (deep) {
    weft_status_t *named = weft_status_new(weft_status_code(deep), "%s: the %s (%s)%s", lead, what,
                                           desc->name, weft_status_message(deep) + strlen(lead));
    weft_status_free(deep);
    return named;
  }
  if (!*out) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Malformed request: the %s (%s, %" G_GUINT64_FORMAT
                           " bytes) does not parse",
                           what, desc->name, len);
  }
  return NULL;
}

weft_status_t *weft__wire_reader_head(weft__wire_reader_t *r,
                                      const ProtobufCMessageDescriptor *desc,
                                      ProtobufCMessage **out_msg, Weft__TensorList **out_list) {
  ProtobufCMessage *list = NULL;
  weft_status_t *st = read_message(r, desc, "message", out_msg);
  if (!st) st = read_message(r, &weft__tensor_list__descriptor, "tensor list", &list);
  if (st && *out_msg) {
    protobuf_c_message_free_unpacked(*out_msg, NULL);
    *out_msg = NULL;
  }
  *out_list = (Weft__TensorList *)list;
  return st;
}

weft__wire_meta_fault_t weft__wire_dims_check(const int64_t *dims, size_t n, size_t *out_dim,
                                              uint64_t *out_elements) {
  uint64_t count = 1;
  for (size_t k = 0; k < n; k++) {
    *out_dim = k;
    if (dims[k] < 0) return WEFT__WIRE_META_NEGATIVE_DIM;
    if (dims[k] > 0 && count > (uint64_t)G_MAXINT64 / (uint64_t)dims[k]) {
      return WEFT__WIRE_META_DIMS_OVERFLOW;
    }
    count *= (uint64_t)dims[k];
  }
  *out_elements = count;
  return WEFT__WIRE_META_OK;
}

static weft__wire_meta_fault_t meta_fault(const Weft__TensorMeta *m, int max_rank,
                                          weft__wire_meta_check_t *c) {
  int dtype = m->dtype;
  if (!weft__dtype_is_valid(dtype) || weft__dtype_is_ref(dtype) ||
      (dtype != WEFT_DT_STRING && weft_dtype_size((weft_dtype_t)dtype) == 0)) {
    return WEFT__WIRE_META_DTYPE;
  }
  if (m->n_dims > (size_t)max_rank) return WEFT__WIRE_META_RANK;
  weft__wire_meta_fault_t f = weft__wire_dims_check(m->dims, m->n_dims, &c->dim, &c->elements);
  if (f != WEFT__WIRE_META_OK) return f;
  if (dtype == WEFT_DT_STRING) {
    if (m->n_string_lengths != c->elements) return WEFT__WIRE_META_STRING_COUNT;
    for (size_t k = 0; k < m->n_string_lengths; k++) {
      if (m->string_lengths[k] > (uint64_t)G_MAXINT64 - c->string_total) {
        c->string_overflow = true;
      } else {
        c->string_total += m->string_lengths[k];
      }
    }
    if (c->string_overflow || c->string_total != m->nbytes) return WEFT__WIRE_META_STRING_BYTES;
    return WEFT__WIRE_META_OK;
  }
  uint64_t size = weft_dtype_size((weft_dtype_t)dtype);
  if (c->elements > (uint64_t)G_MAXINT64 / size) return WEFT__WIRE_META_BYTES_OVERFLOW;
  if (c->elements * size != m->nbytes) return WEFT__WIRE_META_BYTES;
  return WEFT__WIRE_META_OK;
}

bool weft__wire_meta_check(const Weft__TensorMeta *m, int max_rank, weft__wire_meta_check_t *out) {
  memset(out, 0, sizeof *out);
  out->fault = meta_fault(m, max_rank, out);
  return out->fault == WEFT__WIRE_META_OK;
}
