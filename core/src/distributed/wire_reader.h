/* The one reader of a Master or Worker frame ([varint n][message][varint m][TensorList][tensor
 * bytes...], wire.c): a cursor over the gRPC byte buffer, its varints and length-delimited parts,
 * the head of the frame and the checks of each TensorMeta against the bytes it declares. The
 * validator (validate.c) and the decoder (wire.c) both read frames through it, so what the one
 * lets through the other reads the same way: a frame the validator passes never makes the decoder
 * allocate for sizes the frame does not hold. Never installed. */
#ifndef WEFT_DISTRIBUTED_WIRE_READER_H
#define WEFT_DISTRIBUTED_WIRE_READER_H

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>
#include <stdbool.h>
#include <stdint.h>

#include "distributed.pb-c.h"
#include "weft/weft.h"

/* A cursor over a frame's bytes. `remaining` counts the bytes not yet read and is what every
 * length is checked against before anything is read or allocated for it. */
typedef struct weft__wire_reader {
  grpc_byte_buffer_reader reader;
  grpc_slice slice;
  size_t offset;
  bool have_slice;
  size_t remaining;
} weft__wire_reader_t;

/* False when gRPC cannot read the buffer (then there is nothing to destroy). */
bool weft__wire_reader_init(weft__wire_reader_t *r, grpc_byte_buffer *bb);
void weft__wire_reader_destroy(weft__wire_reader_t *r);

/* Copies the next n bytes to dst, or skips them when dst is NULL; false, reading nothing, when
 * fewer than n are left. */
bool weft__wire_reader_read(weft__wire_reader_t *r, void *dst, size_t n);
/* A varint of at most 10 bytes (base/protobuf_internal.h decodes it). */
bool weft__wire_reader_varint(weft__wire_reader_t *r, uint64_t *out_value);
/* The length prefix of a length-delimited part: false when the varint is cut short or too long,
 * or names more bytes than are left. */
bool weft__wire_reader_length(weft__wire_reader_t *r, uint64_t *out_len);

/* The head of a frame: the method's message, unpacked as `desc` (or only skipped when desc is
 * NULL), then the TensorList. INVALID_ARGUMENT "Malformed request: ..." saying which part is cut
 * short, nests too deep or does not parse. On success the caller frees both messages with
 * protobuf_c_message_free_unpacked; on failure whatever was unpacked is freed and both are NULL.
 * The bytes that follow are the tensors'. */
weft_status_t *weft__wire_reader_head(weft__wire_reader_t *r,
                                      const ProtobufCMessageDescriptor *desc,
                                      ProtobufCMessage **out_msg, Weft__TensorList **out_list);

/* What is wrong with a TensorMeta, first fault first: each reader words its own message. */
typedef enum weft__wire_meta_fault {
  WEFT__WIRE_META_OK,
  WEFT__WIRE_META_DTYPE,          /* not a dtype a tensor can have */
  WEFT__WIRE_META_RANK,           /* more dims than max_rank */
  WEFT__WIRE_META_NEGATIVE_DIM,   /* dims[dim] < 0 */
  WEFT__WIRE_META_DIMS_OVERFLOW,  /* the element count passes G_MAXINT64 at dims[dim] */
  WEFT__WIRE_META_STRING_COUNT,   /* n_string_lengths != elements */
  WEFT__WIRE_META_STRING_BYTES,   /* the string lengths overflow, or do not add up to nbytes */
  WEFT__WIRE_META_BYTES_OVERFLOW, /* elements times the dtype's size passes G_MAXINT64 */
  WEFT__WIRE_META_BYTES,          /* elements times the dtype's size is not nbytes */
} weft__wire_meta_fault_t;

typedef struct weft__wire_meta_check {
  weft__wire_meta_fault_t fault;
  size_t dim;            /* the dimension at fault (NEGATIVE_DIM, DIMS_OVERFLOW) */
  uint64_t elements;     /* the element count, once the dims are sound */
  uint64_t string_total; /* the string lengths that add up without overflow */
  bool string_overflow;  /* some string length did not */
} weft__wire_meta_check_t;

/* Checks dtype, rank (at most max_rank), dims and nbytes of one TensorMeta; fills *out and
 * returns out->fault == WEFT__WIRE_META_OK. */
bool weft__wire_meta_check(const Weft__TensorMeta *m, int max_rank, weft__wire_meta_check_t *out);

/* The dims part of that check alone (a TensorProto's shape): NEGATIVE_DIM, DIMS_OVERFLOW or OK,
 * with the element count in *out_elements when OK. The caller checks the rank first. */
weft__wire_meta_fault_t weft__wire_dims_check(const int64_t *dims, size_t n, size_t *out_dim,
                                              uint64_t *out_elements);

#endif
