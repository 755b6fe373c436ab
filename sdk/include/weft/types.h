/* Weft's basic value types shared by the client API and the plugin ABI: data types, status codes
 * and the opaque status object. Self-contained (C11, no other Weft header, no GLib) so that a plugin
 * can include it with nothing but a C compiler.
 *
 * Data type numbers are TensorFlow's DataType enum values, so a GraphDef's `dtype` field maps to a
 * weft_dtype_t without a table. Status codes are gRPC's (and so TensorFlow's) canonical codes. */
#ifndef WEFT_TYPES_H
#define WEFT_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum weft_dtype {
  WEFT_DT_INVALID = 0,
  WEFT_DT_FLOAT = 1,
  WEFT_DT_DOUBLE = 2,
  WEFT_DT_INT32 = 3,
  WEFT_DT_UINT8 = 4,
  WEFT_DT_INT16 = 5,
  WEFT_DT_INT8 = 6,
  WEFT_DT_STRING = 7,
  WEFT_DT_INT64 = 9,
  WEFT_DT_BOOL = 10,
  WEFT_DT_BFLOAT16 = 14,
  WEFT_DT_UINT16 = 17,
  WEFT_DT_HALF = 19,
  WEFT_DT_UINT32 = 22,
  WEFT_DT_UINT64 = 23,
} weft_dtype_t;

/* Every element type once, for code that needs a case, a row or a name per type: define
 * X(dtype, ctype, name, tf_name, proto_name) and expand WEFT_DTYPE_LIST(X). ctype is the C type an
 * element is stored as (float16 and bfloat16 as their bits in a uint16_t, a string element as a
 * weft_string_t); name is Weft's (weft_dtype_name), tf_name the one in REGISTER_OP specs and
 * TensorFlow's Python API, proto_name the DataType enum value's name in TensorFlow's protos. */
#define WEFT_DTYPE_LIST(X)                                               \
  X(WEFT_DT_FLOAT, float, "float32", "float", "DT_FLOAT")                \
  X(WEFT_DT_DOUBLE, double, "float64", "double", "DT_DOUBLE")            \
  X(WEFT_DT_HALF, uint16_t, "float16", "half", "DT_HALF")                \
  X(WEFT_DT_BFLOAT16, uint16_t, "bfloat16", "bfloat16", "DT_BFLOAT16")   \
  X(WEFT_DT_INT8, int8_t, "int8", "int8", "DT_INT8")                     \
  X(WEFT_DT_INT16, int16_t, "int16", "int16", "DT_INT16")                \
  X(WEFT_DT_INT32, int32_t, "int32", "int32", "DT_INT32")                \
  X(WEFT_DT_INT64, int64_t, "int64", "int64", "DT_INT64")                \
  X(WEFT_DT_UINT8, uint8_t, "uint8", "uint8", "DT_UINT8")                \
  X(WEFT_DT_UINT16, uint16_t, "uint16", "uint16", "DT_UINT16")           \
  X(WEFT_DT_UINT32, uint32_t, "uint32", "uint32", "DT_UINT32")           \
  X(WEFT_DT_UINT64, uint64_t, "uint64", "uint64", "DT_UINT64")           \
  X(WEFT_DT_BOOL, uint8_t, "bool", "bool", "DT_BOOL")                    \
  X(WEFT_DT_STRING, weft_string_t, "string", "string", "DT_STRING")

/* TensorFlow marks a reference-typed edge (the output of VariableV2) by adding 100 to the dtype. */
#define WEFT_DT_REF_OFFSET 100

typedef enum weft_code {
  WEFT_OK = 0,
  WEFT_CANCELLED = 1,
  WEFT_UNKNOWN = 2,
  WEFT_INVALID_ARGUMENT = 3,
  WEFT_DEADLINE_EXCEEDED = 4,
  WEFT_NOT_FOUND = 5,
  WEFT_ALREADY_EXISTS = 6,
  WEFT_PERMISSION_DENIED = 7,
  WEFT_RESOURCE_EXHAUSTED = 8,
  WEFT_FAILED_PRECONDITION = 9,
  WEFT_ABORTED = 10,
  WEFT_OUT_OF_RANGE = 11,
  WEFT_UNIMPLEMENTED = 12,
  WEFT_INTERNAL = 13,
  WEFT_UNAVAILABLE = 14,
  WEFT_DATA_LOSS = 15,
  WEFT_UNAUTHENTICATED = 16,
} weft_code_t;

/* A status carries a code and a message naming what failed. A NULL status pointer means success.
 * Whoever receives a non-NULL status owns it and frees it (weft_status_free in the client API,
 * host->status_free in a plugin). */
typedef struct weft_status weft_status_t;

/* Returns a failed status from the enclosing function (which returns weft_status_t *): the one
 * early-return macro of the core, the plugins and the SDK's examples. */
#define WEFT_RETURN_IF_ERROR(expr)                                                 \
  do {                                                                             \
    weft_status_t *weft_return_if_error_status_ = (expr);                          \
    if (weft_return_if_error_status_ != NULL) return weft_return_if_error_status_; \
  } while (0)

/* Most dimensions a tensor may have. */
#define WEFT_MAX_RANK 8

/* The dimension value that means "not known yet" in a shape under inference. */
#define WEFT_DIM_UNKNOWN (-1)

/* A bytes value of a string tensor element. Owned by the tensor that holds it. */
typedef struct weft_string {
  char *data;
  size_t len;
} weft_string_t;

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TYPES_H */
