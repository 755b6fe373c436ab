/* Internal declarations of core/src/graph/graphdef.c: conversions between Weft values and the
 * protobuf-c messages of TensorFlow's wire format, shared with the RPC layer (which sends tensors,
 * shapes and GraphDefs in the same messages). */
#ifndef WEFT_GRAPHDEF_INTERNAL_H
#define WEFT_GRAPHDEF_INTERNAL_H

#include "graph.pb-c.h"
#include "graph_internal.h"
#include "tensor.pb-c.h"

/* A TensorProto to a new host tensor (the caller owns the reference). Accepts tensor_content (raw
 * little-endian bytes) or the typed *_val field of the dtype; fewer typed values than elements
 * repeat the last one (TensorFlow's splat rule) and none give zeros. INVALID_ARGUMENT naming the
 * dtype and shape when the content size does not match, or the dtype or shape is unusable. */
weft_status_t *weft__tensor_from_proto(const Tensorflow__TensorProto *proto, weft_tensor_t **out);

/* A tensor to a new TensorProto (numbers in tensor_content, strings in string_val). The tensor
 * may live on a device (it is copied to the host first). Everything in *out is allocated with
 * malloc (GLib's allocator), so the caller frees it with
 * tensorflow__tensor_proto__free_unpacked(*out, NULL). */
weft_status_t *weft__tensor_to_proto(const weft_tensor_t *tensor, Tensorflow__TensorProto **out);

/* A TensorShapeProto to a shape (unknown_rank: rank -1; a dim of -1: WEFT_DIM_UNKNOWN).
 * INVALID_ARGUMENT for ranks above WEFT_MAX_RANK or dims below -1. */
weft_status_t *weft__shape_from_proto(const Tensorflow__TensorShapeProto *proto,
                                      weft__shape_t *out);
/* A shape to a new TensorShapeProto, freed with tensorflow__tensor_shape_proto__free_unpacked(p,
 * NULL). */
Tensorflow__TensorShapeProto *weft__shape_to_proto(const weft__shape_t *shape);

/* A decoded GraphDef added to a graph (what weft_graph_import_graphdef does after decoding). */
weft_status_t *weft__graph_import_graphdef_proto(weft_graph_t *graph,
                                                 const Tensorflow__GraphDef *graph_def,
                                                 const char *prefix);
/* The graph as a new GraphDef message, freed with tensorflow__graph_def__free_unpacked(p, NULL). */
weft_status_t *weft__graph_to_graphdef_proto(const weft_graph_t *graph,
                                             Tensorflow__GraphDef **out);

/* Whether a GraphDef has a function library or functional ops (calls, If, While) that import
 * must inline first. */
bool weft__graphdef_has_functions(const Tensorflow__GraphDef *graph_def);
/* A new GraphDef (freed with tensorflow__graph_def__free_unpacked(*out, NULL)) holding graph_def
 * with every function call inlined and every If/While lowered to v1 control flow, and no
 * library (function_inline.c). Output layouts of the ops are read from `ops`. NOT_FOUND naming a
 * missing function, INVALID_ARGUMENT for signature mismatches, unbound attr placeholders and
 * recursive calls, each naming the call node and function chain. */
weft_status_t *weft__graphdef_inline_functions(weft__op_registry_t *ops,
                                               const Tensorflow__GraphDef *graph_def,
                                               Tensorflow__GraphDef **out);

#endif /* WEFT_GRAPHDEF_INTERNAL_H */
