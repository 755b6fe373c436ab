/* The one checked way to unpack protobuf bytes Weft did not write itself (RPC requests and
 * responses, GraphDefs, SavedModels, checkpoint index entries, TensorProtos, ONNX files):
 * protobuf-c's unpack recurses once per nested message, so bytes nested a few thousand levels
 * deep overflow the stack. weft__pb_unpack walks the wire format first and refuses nesting deeper
 * than WEFT_PB_MAX_DEPTH (docs/security.md, "Protobuf nesting"), and `string` fields holding a
 * NUL byte, which protobuf-c would cut there ("a\0b" becomes "a"). Never installed. */
#ifndef WEFT_BASE_PROTOBUF_INTERNAL_H
#define WEFT_BASE_PROTOBUF_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/weft.h"

/* Messages nested deeper than this are refused: the message handed to unpack is level 1, a
 * message field inside it level 2, and so on. It is the default recursion limit of TensorFlow's
 * protobuf parsers; the deepest of the 8,780 GraphDefs, SavedModels and ONNX files of the shared
 * corpus nests 11 levels (tests/test_protobuf.c, /protobuf/corpus). */
#define WEFT_PB_MAX_DEPTH 100

/* The core's one varint decoder: a varint of at most max_bytes bytes that ends inside [*p, end),
 * stored in *out with *p moved past it; false (*p then somewhere inside) if it does not end
 * there. The depth walk below and the RPC frame reader (distributed/wire_reader.c) both use it. */
bool weft__pb_read_varint(const uint8_t **p, const uint8_t *end, int max_bytes, uint64_t *out);

/* The checks alone: NULL if `data` nests at most `max_depth` levels as `desc` reads it and no
 * `string` field of it holds a NUL byte, else INVALID_ARGUMENT "WHAT: protobuf nesting deeper
 * than N levels at byte OFFSET (PATH)", OFFSET being where the field that opens level N+1 starts
 * and PATH the first field names leading there, or "WHAT: string field 'PATH' holds a NUL byte
 * (field at byte OFFSET)" (PATH ending in the string field's name; first fault first). Bytes
 * that are not valid wire format are not judged here (unpack refuses them); the walk itself
 * reads only inside `data`, allocates nothing and recurses at most max_depth times. */
weft_status_t *weft__pb_check_depth(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                                    size_t len, int max_depth, const char *what);

/* Unpacks `data` as `desc` after checking its nesting against WEFT_PB_MAX_DEPTH and its strings
 * for NUL bytes. Returns the message (free it with protobuf_c_message_free_unpacked) with *status
 * NULL; or NULL with *status set when the nesting is too deep or a string holds a NUL; or NULL
 * with *status NULL when protobuf-c refuses the bytes, so that each caller keeps its own "does
 * not parse" message and code. */
ProtobufCMessage *weft__pb_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *data,
                                  size_t len, const char *what, weft_status_t **status);

#endif
