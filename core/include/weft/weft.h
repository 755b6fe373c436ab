/* The Weft client API: statuses, tensors, graphs, device scopes, sessions and plugins.
 *
 * Conventions:
 *  - A function that can fail returns weft_status_t * (NULL means success). The caller owns a
 *    returned status and frees it with weft_status_free.
 *  - Objects returned by *_new / *_load are owned by the caller and freed with the matching *_free
 *    (or *_unref for reference-counted tensors).
 *  - Pointers returned by getters (names, shapes, data) are borrowed from the object they came from
 *    and live as long as it does.
 *  - Names of tensors are "node:index"; "node" alone means "node:0". */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/types.h"

/* WEFT_API marks what libweft.so.0 exports: the library is built with hidden visibility, so its
 * internals (and the protobuf-c code of TensorFlow's messages it carries) never clash with a
 * program's own symbols (docs/architecture.md, "The installed library"). Every function declared
 * here carries it. */
#ifndef WEFT_API
#if defined(__GNUC__) || defined(__clang__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Status */

/* New status; the caller owns it. code WEFT_OK gives NULL. */
WEFT_API weft_status_t *weft_status_new(weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A code-only status: a constant with a fixed message ("out of memory" for
 * WEFT_RESOURCE_EXHAUSTED), for paths where memory ran out; it allocates nothing, freeing it does
 * nothing, prefixing leaves it as it is. WEFT_OK gives NULL, a code outside the enum WEFT_UNKNOWN.
 * weft_status_new returns these itself when it cannot allocate. */
WEFT_API weft_status_t *weft_status_from_code(weft_code_t code);
WEFT_API weft_code_t weft_status_code(const weft_status_t *status); /* NULL -> WEFT_OK */
WEFT_API const char *weft_status_message(const weft_status_t *status); /* NULL -> "" */
WEFT_API const char *weft_code_name(weft_code_t code);                 /* "INVALID_ARGUMENT" */
WEFT_API void weft_status_free(weft_status_t *status);                 /* accepts NULL */
/* Prefixes the message with context ("while importing x.pb: ..."); returns the same status. */
WEFT_API weft_status_t *weft_status_prefix(weft_status_t *status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------------------------------
 * Memory */

/* Frees a string or buffer the library handed to the caller ("the caller frees with weft_free");
 * accepts NULL. They come from the C library's malloc, so free() works as well. */
WEFT_API void weft_free(void *ptr);
/* Frees a NULL-terminated array of such strings and every string in it; accepts NULL. */
WEFT_API void weft_strv_free(char **strv);

/* ---------------------------------------------------------------------------------------------
 * Data types */

WEFT_API const char *weft_dtype_name(weft_dtype_t dtype); /* "float32", "int32", ... */
/* accepts "float32", "float" */
WEFT_API bool weft_dtype_from_name(const char *name, weft_dtype_t *out);
WEFT_API size_t weft_dtype_size(weft_dtype_t dtype); /* bytes per element; 0 unknown */

/* ---------------------------------------------------------------------------------------------
 * Tensors: reference-counted, in host memory when the client sees them. */

typedef struct weft_tensor weft_tensor_t;

/* Zero-filled host tensor (strings: empty). The caller owns one reference. */
WEFT_API weft_tensor_t *weft_tensor_new(weft_dtype_t dtype, int rank, const int64_t *dims);
/* Host tensor copying nbytes from data; NULL and *status set if nbytes does not match. */
WEFT_API weft_tensor_t *weft_tensor_new_from_data(weft_dtype_t dtype, int rank, const int64_t *dims,
                                                  const void *data, size_t nbytes,
                                                  weft_status_t **status);
WEFT_API weft_tensor_t *weft_tensor_new_scalar_float(float value);
WEFT_API weft_tensor_t *weft_tensor_new_scalar_int32(int32_t value);
WEFT_API weft_tensor_t *weft_tensor_new_string(const char *bytes, size_t len); /* scalar string */
WEFT_API weft_tensor_t *weft_tensor_ref(weft_tensor_t *tensor);
WEFT_API void weft_tensor_unref(weft_tensor_t *tensor); /* accepts NULL */
/* True when the caller's reference is the only one to the tensor and to its host memory: no
 * variable, queue or other tensor shares the bytes, so they cannot change while the caller keeps
 * them (the Python package then hands them to numpy without a copy). False for NULL. */
WEFT_API bool weft_tensor_is_exclusive(const weft_tensor_t *tensor);

WEFT_API weft_dtype_t weft_tensor_dtype(const weft_tensor_t *tensor);
WEFT_API int weft_tensor_rank(const weft_tensor_t *tensor);
WEFT_API const int64_t *weft_tensor_dims(const weft_tensor_t *tensor);
WEFT_API int64_t weft_tensor_num_elements(const weft_tensor_t *tensor);
WEFT_API size_t weft_tensor_nbytes(const weft_tensor_t *tensor);
/* Host data. For WEFT_DT_STRING it is an array of weft_string_t. */
WEFT_API void *weft_tensor_data(const weft_tensor_t *tensor);
/* Sets element i of a string tensor (copies the bytes). */
WEFT_API weft_status_t *weft_tensor_set_string(weft_tensor_t *tensor, int64_t index,
                                               const char *bytes, size_t len);
/* Element i as a double (numbers and bool); 0 for strings. */
WEFT_API double weft_tensor_get_double(const weft_tensor_t *tensor, int64_t index);

/* Parses a JSON number or nested array into a tensor of dtype (WEFT_DT_INVALID: float32 for
 * numbers with a fraction or exponent, int32 otherwise; strings give a string tensor). */
WEFT_API weft_tensor_t *weft_tensor_from_json(const char *json, weft_dtype_t dtype,
                                              weft_status_t **status);
/* {"dtype": "float32", "shape": [..], "values": [..]}; the caller frees with weft_free. */
WEFT_API char *weft_tensor_to_json(const weft_tensor_t *tensor);
/* Short human form: "float32[2,2] [1, 2, 3, 4]". The caller frees with weft_free. */
WEFT_API char *weft_tensor_to_string(const weft_tensor_t *tensor, int max_elements);

/* NumPy files (docs/c-api.md, "NumPy files"). Reading takes .npy format 1.0, 2.0 and 3.0, either
 * byte order, C order; dtypes bool, int8..int64, uint8..uint64, float16/32/64 and the strings
 * 'S' (bytes) and 'U' (stored as UTF-8). Everything read is treated as untrusted: INVALID_ARGUMENT
 * naming the file (or `source`) and what is wrong for a malformed file; UNIMPLEMENTED for Fortran
 * order, object arrays and dtypes Weft has no type for. On success *out is a new host tensor the
 * caller owns (one reference); on error *out is NULL. */
/* bytes borrowed; source may be NULL */
WEFT_API weft_status_t *weft_tensor_parse_npy(const void *bytes, size_t len, const char *source,
                                              weft_tensor_t **out);
WEFT_API weft_status_t *weft_tensor_read_npy(const char *path, weft_tensor_t **out);
/* The array `key` ("x" or "x.npy"; NULL: the only one) of a .npz archive, stored or deflated.
 * NOT_FOUND listing the arrays present when there is no such key. */
WEFT_API weft_status_t *weft_tensor_read_npz(const char *path, const char *key,
                                             weft_tensor_t **out);
/* The tensor as .npy bytes (version 1.0, host byte order, C order; strings as 'S' of the longest
 * element, so trailing NUL bytes of an element do not survive). the caller frees *bytes
 * with weft_free. UNIMPLEMENTED for bfloat16, which numpy has no dtype for. */
WEFT_API weft_status_t *weft_tensor_to_npy(const weft_tensor_t *tensor, void **bytes, size_t *len);
/* Writes them to `path` (atomically: a temporary file renamed); the tensor is borrowed. */
WEFT_API weft_status_t *weft_tensor_write_npy(const weft_tensor_t *tensor, const char *path);

/* ---------------------------------------------------------------------------------------------
 * Graphs */

typedef struct weft_graph weft_graph_t;
typedef struct weft_node weft_node_t;         /* owned by its graph */
typedef struct weft_op_builder weft_op_builder_t;

/* One output of a node. */
typedef struct weft_output {
  weft_node_t *node;
  int index;
} weft_output_t;

WEFT_API weft_graph_t *weft_graph_new(void);
WEFT_API void weft_graph_free(weft_graph_t *graph);

/* Starts a node of op type `op` named `name` (made unique and prefixed by the name scope; NULL
 * means the op type). Finish with weft_op_finish, which always frees the builder. */
WEFT_API weft_op_builder_t *weft_op_new(weft_graph_t *graph, const char *op, const char *name);
WEFT_API void weft_op_add_input(weft_op_builder_t *b, weft_output_t input);
WEFT_API void weft_op_add_input_list(weft_op_builder_t *b, const weft_output_t *inputs, int n);
WEFT_API void weft_op_add_control_input(weft_op_builder_t *b, weft_node_t *node);
/* Overrides the device from the device scopes. */
WEFT_API void weft_op_set_device(weft_op_builder_t *b, const char *device);
WEFT_API void weft_op_set_attr_int(weft_op_builder_t *b, const char *name, int64_t value);
WEFT_API void weft_op_set_attr_float(weft_op_builder_t *b, const char *name, float value);
WEFT_API void weft_op_set_attr_bool(weft_op_builder_t *b, const char *name, bool value);
WEFT_API void weft_op_set_attr_type(weft_op_builder_t *b, const char *name, weft_dtype_t value);
WEFT_API void weft_op_set_attr_string(weft_op_builder_t *b, const char *name, const char *value);
WEFT_API void weft_op_set_attr_int_list(weft_op_builder_t *b, const char *name,
                                        const int64_t *values, int n);
WEFT_API void weft_op_set_attr_float_list(weft_op_builder_t *b, const char *name,
                                          const float *values, int n);
WEFT_API void weft_op_set_attr_type_list(weft_op_builder_t *b, const char *name,
                                         const weft_dtype_t *values, int n);
WEFT_API void weft_op_set_attr_string_list(weft_op_builder_t *b, const char *name,
                                           const char *const *values, int n);
/* rank -1: unknown rank; dims may hold WEFT_DIM_UNKNOWN. */
WEFT_API void weft_op_set_attr_shape(weft_op_builder_t *b, const char *name, int rank,
                                     const int64_t *dims);
/* A list(shape) attr of n shapes: shape k has rank ranks[k] (-1: unknown) and dims dims[k]
 * (read only up to its rank; may be NULL for rank <= 0). The builder copies them. */
WEFT_API void weft_op_set_attr_shape_list(weft_op_builder_t *b, const char *name,
                                          const int *ranks, const int64_t *const *dims, int n);
/* The builder takes its own reference to the tensor. */
WEFT_API void weft_op_set_attr_tensor(weft_op_builder_t *b, const char *name, weft_tensor_t *value);
/* Validates against the op definition (inputs, attrs, defaults), infers output types and
 * shapes, and adds the node. On success *out (if not NULL) is the new node. Frees b. */
WEFT_API weft_status_t *weft_op_finish(weft_op_builder_t *b, weft_node_t **out);

WEFT_API weft_node_t *weft_graph_node(const weft_graph_t *graph, const char *name);
WEFT_API int weft_graph_num_nodes(const weft_graph_t *graph);
WEFT_API weft_node_t *weft_graph_node_at(const weft_graph_t *graph, int index); /* creation order */
WEFT_API const char *weft_node_name(const weft_node_t *node);
WEFT_API const char *weft_node_op(const weft_node_t *node);
WEFT_API const char *weft_node_requested_device(const weft_node_t *node);
WEFT_API int weft_node_num_outputs(const weft_node_t *node);
WEFT_API weft_dtype_t weft_node_output_dtype(const weft_node_t *node, int index);
/* The inferred shape; returns the rank (-1 unknown) and fills dims. */
WEFT_API int weft_node_output_shape(const weft_node_t *node, int index,
                                    int64_t dims[WEFT_MAX_RANK]);
WEFT_API weft_output_t weft_out(weft_node_t *node, int index);
/* The producer of data input `index` of `node` ({NULL, 0} when out of range; inputs of a list
 * argument are flattened in order), and its control inputs (NULL when out of range); borrowed
 * from the graph. */
WEFT_API int weft_node_num_inputs(const weft_node_t *node);
WEFT_API weft_output_t weft_node_input(const weft_node_t *node, int index);
WEFT_API int weft_node_num_control_inputs(const weft_node_t *node);
WEFT_API weft_node_t *weft_node_control_input(const weft_node_t *node, int index);
/* The node this one is colocated with (its "_class" "loc:@NAME" names NAME), or NULL. Borrowed. */
WEFT_API const char *weft_node_colocation_group(const weft_node_t *node);
/* Closes a while loop (TensorFlow's TF_UpdateEdge as its loops use it): points data input
 * `index` of `merge`, a Merge, at `next`, output 0 of a NextIteration created after it, whose
 * dtype must be the input's. A loop is built forward (the Merge first, its second input a
 * stand-in such as the loop's Enter), so its back edge can only be set once the body exists.
 * The Merge's output shape becomes unknown, as the GraphDef importer leaves a loop's Merge.
 * INVALID_ARGUMENT naming the nodes for any other edge; both nodes stay the graph's. */
WEFT_API weft_status_t *weft_graph_close_loop(weft_graph_t *graph, weft_node_t *merge, int index,
                                              weft_output_t next);
/* "name" or "name:1" -> output; NOT_FOUND naming it if there is no such node or output. */
WEFT_API weft_status_t *weft_graph_find_output(const weft_graph_t *graph, const char *tensor_name,
                                               weft_output_t *out);

/* Scopes. Each push must be matched by a pop. */
WEFT_API void weft_graph_push_name_scope(weft_graph_t *graph, const char *scope);
WEFT_API void weft_graph_pop_name_scope(weft_graph_t *graph);
/* A device spec merged with the enclosing ones, inner fields winning ("" clears). */
WEFT_API void weft_graph_push_device(weft_graph_t *graph, const char *device);
/* A device function: called for each new node with its op type and name; returns a device spec
 * string the graph copies (or NULL for "no opinion"). */
typedef const char *(*weft_device_fn)(void *user_data, const char *op, const char *node_name);
WEFT_API void weft_graph_push_device_fn(weft_graph_t *graph, weft_device_fn fn, void *user_data);
WEFT_API void weft_graph_pop_device(weft_graph_t *graph);
/* Every node created inside gets control inputs on these nodes. */
WEFT_API void weft_graph_push_control_deps(weft_graph_t *graph, weft_node_t *const *nodes, int n);
WEFT_API void weft_graph_pop_control_deps(weft_graph_t *graph);
/* Nodes created inside are colocated with `node` (TensorFlow's colocate_with). */
WEFT_API void weft_graph_push_colocate(weft_graph_t *graph, weft_node_t *node);
WEFT_API void weft_graph_pop_colocate(weft_graph_t *graph);

/* Helpers for common nodes. Each returns the node's first output, or {NULL,0} and *status set. */
WEFT_API weft_output_t weft_const(weft_graph_t *graph, const char *name, weft_tensor_t *value,
                                  weft_status_t **status);
WEFT_API weft_output_t weft_const_float(weft_graph_t *graph, const char *name, float value,
                                        weft_status_t **status);
WEFT_API weft_output_t weft_placeholder(weft_graph_t *graph, const char *name, weft_dtype_t dtype,
                                        int rank, const int64_t *dims, weft_status_t **status);
/* A binary or unary op with attribute T taken from the first input. */
WEFT_API weft_output_t weft_binary(weft_graph_t *graph, const char *op, const char *name,
                                   weft_output_t x, weft_output_t y, weft_status_t **status);
WEFT_API weft_output_t weft_unary(weft_graph_t *graph, const char *op, const char *name,
                                  weft_output_t x, weft_status_t **status);
WEFT_API weft_output_t weft_matmul(weft_graph_t *graph, const char *name, weft_output_t a,
                                   weft_output_t b, bool transpose_a, bool transpose_b,
                                   weft_status_t **status);

/* A TensorFlow-style variable (tf.Variable): a VariableV2 node `name`, an Assign `name/Assign`
 * from `initial_value` (its initializer), and a read `name/read`. Returns the read output; the
 * variable node itself is weft_graph_node(graph, name). The initializer joins the graph's global
 * variables collection. */
WEFT_API weft_output_t weft_variable(weft_graph_t *graph, const char *name,
                                     weft_output_t initial_value, weft_status_t **status);
/* A NoOp named `name` (default "init") with control inputs on every variable initializer. */
WEFT_API weft_node_t *weft_global_variables_initializer(weft_graph_t *graph, const char *name,
                                                        weft_status_t **status);

/* GraphDef (TensorFlow's wire format). Import adds the nodes of `bytes` to `graph` under `prefix`
 * (NULL or "" for none); on error nothing is added and the status names the node at fault. */
WEFT_API weft_status_t *weft_graph_import_graphdef(weft_graph_t *graph, const void *bytes,
                                                   size_t len, const char *prefix);
WEFT_API weft_status_t *weft_graph_import_graphdef_file(weft_graph_t *graph, const char *path,
                                                        const char *prefix);
/* Import with TensorFlow's input_map: each data input of an imported node that reads tensor
 * map_keys[i] of the GraphDef ("x:0", or "x" for "x:0") reads map_values[i] of `graph` instead
 * (borrowed). INVALID_ARGUMENT listing the keys no imported node reads ("Attempted to map inputs
 * that were not found in graph_def: [x:0]"); nothing is added on any error. */
WEFT_API weft_status_t *weft_graph_import_graphdef_mapped(weft_graph_t *graph, const void *bytes,
                                                          size_t len, const char *prefix,
                                                          const char *const *map_keys,
                                                          const weft_output_t *map_values,
                                                          int n_map);
/* Serialises the graph; the caller frees *bytes with weft_free. */
WEFT_API weft_status_t *weft_graph_export_graphdef(const weft_graph_t *graph, void **bytes,
                                                   size_t *len);

/* ---------------------------------------------------------------------------------------------
 * Sessions */

typedef struct weft_session_options weft_session_options_t;
typedef struct weft_session weft_session_t;

WEFT_API weft_session_options_t *weft_session_options_new(void);
WEFT_API void weft_session_options_free(weft_session_options_t *opts);
/* "" (default) or "local" for in-process; "grpc://host:port" for the cluster of a server. */
WEFT_API void weft_session_options_set_target(weft_session_options_t *opts, const char *target);
WEFT_API void weft_session_options_set_log_device_placement(weft_session_options_t *opts, bool on);
WEFT_API void weft_session_options_set_allow_soft_placement(weft_session_options_t *opts, bool on);
/* 0 auto */
WEFT_API void weft_session_options_set_inter_op_threads(weft_session_options_t *opts, int n);
/* 0 auto */
WEFT_API void weft_session_options_set_intra_op_threads(weft_session_options_t *opts, int n);
WEFT_API void weft_session_options_set_use_per_session_threads(weft_session_options_t *opts,
    bool on);
WEFT_API void weft_session_options_set_gpu_memory_fraction(weft_session_options_t *opts, double f);
WEFT_API void weft_session_options_set_gpu_allow_growth(weft_session_options_t *opts, bool on);
/* Local sessions: TensorFlow's device_count. Only the first n devices of `device_type` ("CPU",
 * "VULKAN", ...; "GPU" counts every gpu-like device) are placed on; n < 0 removes the limit.
 * Placement fails (FAILED_PRECONDITION) when the limits leave no device. */
WEFT_API void weft_session_options_set_device_count(weft_session_options_t *opts,
                                                    const char *device_type, int n);
/* Local sessions: TensorFlow's gpu_options.visible_device_list ("0,2"): only the gpu-like
 * devices at those indexes (counted among the gpu-like devices, in placement order) are placed
 * on; entries that are not numbers match nothing. NULL or "": every one. Copied. */
WEFT_API void weft_session_options_set_visible_gpus(weft_session_options_t *opts,
                                                    const char *list);

/* The session borrows `graph`, which must outlive it; nodes added to the graph later are picked
 * up by later runs (placement of nodes already placed is kept). */
WEFT_API weft_session_t *weft_session_new(weft_graph_t *graph, const weft_session_options_t *opts,
                                          weft_status_t **status);
/* Runs one step. feeds[i] (borrowed) replaces tensor feed_names[i]; fetch_outputs[i] receives a
 * new reference to tensor fetch_names[i] (the caller unrefs it); targets are node names run for
 * their effects. On error no output is set. */
WEFT_API weft_status_t *weft_session_run(weft_session_t *session, const char *const *feed_names,
                                         weft_tensor_t *const *feeds, int n_feeds,
                                         const char *const *fetch_names,
                                         weft_tensor_t **fetch_outputs, int n_fetches,
                                         const char *const *target_names, int n_targets);
/* Per-step options (TensorFlow's RunOptions) and what a traced step reports (RunMetadata);
 * docs/performance.md, "Profiling a step". */
typedef enum weft_trace_level {
  WEFT_TRACE_NONE = 0, /* collect nothing (the default; costs nothing) */
  WEFT_TRACE_FULL = 1, /* one weft_node_stats_t per node run, on every task of the step */
} weft_trace_level_t;
typedef struct weft_run_options weft_run_options_t;
WEFT_API weft_run_options_t *weft_run_options_new(void);
WEFT_API void weft_run_options_free(weft_run_options_t *opts); /* accepts NULL */
WEFT_API void weft_run_options_set_trace_level(weft_run_options_t *opts, weft_trace_level_t level);
/* Deadline of this step (0, the default: local steps have none, remote ones the session's
 * operation timeout). A local step checks it before each node starts: DEADLINE_EXCEEDED. */
WEFT_API void weft_run_options_set_timeout_ms(weft_run_options_t *opts, int64_t ms);

typedef struct weft_node_stats {
  const char *node_name, *op, *device; /* full device name */
  const char *inputs;                  /* "a:0, b:1, ^c" ("^": control input) */
  int64_t start_us;                    /* wall clock, microseconds since the Unix epoch */
  int64_t duration_us;
  uint64_t output_bytes; /* bytes of the node's outputs */
  uint64_t thread_id;    /* which thread of its task ran it */
} weft_node_stats_t;
typedef struct weft_run_metadata weft_run_metadata_t;

/* weft_session_run with options (NULL: defaults). When `metadata` is not NULL, *metadata gets a
 * new weft_run_metadata_t the caller frees with weft_run_metadata_free (NULL when the step
 * failed); its node stats are empty unless the trace level is above NONE. */
WEFT_API weft_status_t *weft_session_run_with_options(weft_session_t *session,
                                                      const weft_run_options_t *run_options,
                                                      const char *const *feed_names,
                                                      weft_tensor_t *const *feeds, int n_feeds,
                                                      const char *const *fetch_names,
                                                      weft_tensor_t **fetch_outputs, int n_fetches,
                                                      const char *const *target_names,
                                                      int n_targets,
                                                      weft_run_metadata_t **metadata);
WEFT_API int weft_run_metadata_num_node_stats(const weft_run_metadata_t *meta);
/* Borrowed from meta; NULL when i is out of range. */
WEFT_API const weft_node_stats_t *weft_run_metadata_node_stats(const weft_run_metadata_t *meta,
    int i);
/* The step as a Chrome trace (chrome://tracing, ui.perfetto.dev): one process per device, one
 * complete ("X") event per node. The caller frees with weft_free. */
WEFT_API char *weft_run_metadata_chrome_trace(const weft_run_metadata_t *meta);
/* Writes it to `path`; a status naming the file when it cannot be written. */
WEFT_API weft_status_t *weft_run_metadata_write_chrome_trace(const weft_run_metadata_t *meta,
    const char *path);
WEFT_API void weft_run_metadata_free(weft_run_metadata_t *meta); /* accepts NULL */

/* The device a node was placed on, after a run that used it ("" if not placed yet). */
WEFT_API const char *weft_session_node_device(weft_session_t *session, const char *node_name);
/* Releases what the session holds (variables, server-side state); later runs fail with
 * FAILED_PRECONDITION "Session has been closed". May be called from another thread while steps
 * run: they end at their next node, a local step with CANCELLED "Run call was cancelled" (close
 * returns once they have), a remote one with CANCELLED "Session has been closed.". Closing twice
 * is a no-op. The caller owns the returned status (NULL: closed). */
WEFT_API weft_status_t *weft_session_close(weft_session_t *session);
WEFT_API void weft_session_free(weft_session_t *session); /* closes if needed */

/* ---------------------------------------------------------------------------------------------
 * Host functions: TensorFlow's py_func. A PyFunc, PyFuncStateless or EagerPyFunc node runs the
 * function this process registered under the node's "token" attr, on the CPU of the process
 * that runs the node (a remote task has its own table: register the function there, or pin the
 * node to a device of this process). */

/* Called with the node's inputs (borrowed: take a reference to keep one) and n_outputs slots to
 * fill with new references, which the caller takes; or it returns a status (the caller frees
 * it), with which the step fails. The node then checks what came back against its Tout attr:
 * too few or too many values, a NULL slot or a dtype other than Tout's fails the step with
 * INVALID_ARGUMENT, TensorFlow's words. Steps call it on their executor threads, several at
 * once when nodes run in parallel. */
typedef weft_status_t *(*weft_host_func_fn)(void *user_data, weft_tensor_t *const *inputs,
                                             int n_inputs, weft_tensor_t **outputs,
                                             int n_outputs);

/* Registers fn under token (copied), for the whole process; destroy (or NULL) is called on
 * user_data once the function is unregistered and no call is running it. A token already
 * registered is ALREADY_EXISTS (nothing is taken: the caller still owns user_data); an empty
 * token or a NULL fn is INVALID_ARGUMENT. The caller owns the returned status (NULL: done). */
WEFT_API weft_status_t *weft_host_func_register(const char *token, weft_host_func_fn fn,
                                                void *user_data, void (*destroy)(void *));
/* Removes token's function; false when none was registered. A call already running it finishes;
 * a later node naming the token fails with INVALID_ARGUMENT "callback TOKEN is not found". */
WEFT_API bool weft_host_func_unregister(const char *token);

/* ---------------------------------------------------------------------------------------------
 * Plugins and devices (process-wide). */

/* Caps the threads this process gives kernels at n (0: one per core, the default): the size of
 * the process-wide inter- and intra-op pools that sessions with 0 ("auto") threads use, and
 * OpenBLAS's threads (OPENBLAS_NUM_THREADS, unless the environment already sets it). Call it
 * before weft_plugins_load_default and before the first session: OpenBLAS reads the variable
 * when the CPU plugin loads it, and the pools keep the size they were made with. weftd and
 * weft-train call it with cores / weft_cluster_spec_tasks_on_host when tasks share a host:
 * several processes each spinning up a thread per core slow each other down. */
WEFT_API void weft_threads_set_limit(int n);

/* The threads of the pools steps run on (a local session's inter- and intra-op pools, a
 * worker's pool for each registered graph, the process-wide pools) start when work comes and
 * end after idle_ms milliseconds without any, so a session or graph nobody runs holds no
 * threads; the next step starts them again (its first kernels wait for that, tens of
 * microseconds a thread). idle_ms <= 0 restores the default: the WEFT_THREAD_IDLE_MS
 * environment variable when it holds a positive number, else WEFT_DEFAULT_THREAD_IDLE_MS.
 * Applies to every pool from the next time one of its threads goes idle; at most G_MAXINT. */
#define WEFT_DEFAULT_THREAD_IDLE_MS 15000
WEFT_API void weft_threads_set_idle_ms(int64_t idle_ms);

/* Loads plugins from the build folder, the install folder and WEFT_PLUGIN_PATH, once per process.
 * Broken plugins are recorded (see weft_plugin_*) and skipped; this never fails. */
WEFT_API void weft_plugins_load_default(void);
/* Loads one more plugin file; a status explains why it was refused (also recorded). */
WEFT_API weft_status_t *weft_plugins_load_file(const char *path);

typedef struct weft_plugin_record {
  const char *path;        /* as found */
  const char *name;        /* NULL if it did not load */
  const char *version;
  unsigned abi_major, abi_minor;
  const char *device_types; /* "CPU,VULKAN" or "" */
  int n_kernels;
  int n_ops;
  const char *error;       /* NULL if loaded, else why not */
} weft_plugin_record_t;
WEFT_API int weft_plugins_count(void);
/* Borrowed, valid until the process exits. */
WEFT_API const weft_plugin_record_t *weft_plugins_get(int index);

typedef struct weft_device_info {
  const char *name;        /* /job:localhost/replica:0/task:0/device:CPU:0 */
  const char *device_type; /* CPU */
  int ordinal;
  const char *description;
  uint64_t memory_bytes;
  bool gpu_like;
  /* A GPU emulated on the host's CPU (lavapipe): listed after the CPU, given only the ops pinned
   * to its own type (/device:VULKAN:0), never what "/gpu:N" names (docs/c-api.md, Placement). */
  bool emulated;
} weft_device_info_t;
/* The local devices, ordered as placement sees them. Borrowed, process lifetime. */
WEFT_API int weft_devices_count(void);
WEFT_API const weft_device_info_t *weft_devices_get(int index);
/* Backends that were registered but report no devices, with the reason ("CUDA: no driver"). */
WEFT_API int weft_backends_without_devices(const char ***reasons);

/* ---------------------------------------------------------------------------------------------
 * Registries: what a process knows of ops, backends, devices and kernels (docs/c-api.md,
 * "Registries"). The default registry is the process's: weft_graph_new, weft_session_new,
 * weft_plugins_* and weft_devices_* use it, and it loads its plugins (WEFT_PLUGIN_PATH, then the
 * build tree's or the install's plugin folder) once, on the first of those calls that needs
 * devices or an op the standard ones lack. A private registry starts with the standard ops only,
 * and never loads anything by itself. A plugin file is loaded once per process, always into the
 * default registry, which owns what it registered; a private registry that loads it gets the
 * plugin's ops, kernels and devices shared with the default. Sessions run on the default's
 * devices and kernels. */
typedef struct weft_registry weft_registry_t;

/* A new private registry holding the standard ops, no plugin and no device. The caller frees it
 * with weft_registry_free after every graph made in it. */
WEFT_API weft_registry_t *weft_registry_new(void);
/* Frees a private registry; the default is never freed (this does nothing to it). NULL is fine. */
WEFT_API void weft_registry_free(weft_registry_t *reg);
/* The process default, created and loaded on the first call; the same object on every call.
 * Borrowed, process lifetime. */
WEFT_API weft_registry_t *weft_registry_default(void);
/* Loads the default's plugins (once per process) and, for a private reg, shares all of them with
 * it. Broken plugins are recorded and skipped; this never fails. */
WEFT_API void weft_registry_load_default(weft_registry_t *reg);
/* Loads one plugin file into the default (once per process: a second path to the same file is
 * not an error) and, for a private reg, shares what it registered. The caller owns the status
 * (NULL: loaded), which says why the plugin was refused (also recorded). For the default, its
 * plugin folders are loaded first, as weft_plugins_load_file does. */
WEFT_API weft_status_t *weft_registry_load_plugin(weft_registry_t *reg, const char *path);
/* The plugins reg asked for (the default: every plugin tried); records are borrowed, process
 * lifetime. These and the counts below load nothing. */
WEFT_API int weft_registry_plugin_count(weft_registry_t *reg);
WEFT_API const weft_plugin_record_t *weft_registry_plugin_get(weft_registry_t *reg, int index);
/* reg's devices in placement order; infos are borrowed for reg's life. */
WEFT_API int weft_registry_device_count(weft_registry_t *reg);
WEFT_API const weft_device_info_t *weft_registry_device_get(weft_registry_t *reg, int index);
/* How many op definitions reg holds (the standard ops and its plugins'). */
WEFT_API int weft_registry_op_count(weft_registry_t *reg);
/* A new graph whose ops are reg's (weft_graph_new: the default's); reg must outlive it. Free it
 * with weft_graph_free. */
WEFT_API weft_graph_t *weft_graph_new_in(weft_registry_t *reg);

/* ---------------------------------------------------------------------------------------------
 * Cluster and servers: TensorFlow's ClusterSpec and tf.train.Server (DESIGN 4.5,
 * docs/distributed.md). A session whose target is "grpc://host:port" runs its graph on the
 * cluster of the server at that address. */

typedef struct weft_cluster_spec weft_cluster_spec_t;
typedef struct weft_server_options weft_server_options_t;
typedef struct weft_server weft_server_t;

/* An empty spec; add jobs and tasks with weft_cluster_spec_add_task. */
WEFT_API weft_cluster_spec_t *weft_cluster_spec_new(void);
WEFT_API void weft_cluster_spec_free(weft_cluster_spec_t *spec); /* accepts NULL */
/* Task `index` (-1: the next one) of `job` at "host:port". INVALID_ARGUMENT naming the job, task
 * or address when the job name or address is malformed, the task already exists, or another task
 * already has the address. */
WEFT_API weft_status_t *weft_cluster_spec_add_task(weft_cluster_spec_t *spec, const char *job,
                                                   int index, const char *address);
/* "ps=host:port,host:port;worker=host:port,...". On error *out is NULL and the message quotes the
 * part at fault. */
WEFT_API weft_status_t *weft_cluster_spec_parse(const char *text, weft_cluster_spec_t **out);
/* TensorFlow's example-trainer flags: --ps_hosts and --worker_hosts ("host:port,host:port";
 * either may be NULL or "" but not both). */
WEFT_API weft_status_t *weft_cluster_spec_from_hosts(const char *ps_hosts, const char *worker_hosts,
                                                     weft_cluster_spec_t **out);
/* The TF_CONFIG environment variable's JSON: {"cluster": {"ps": ["h:p"], "worker": [...]},
 * "task": {"type": "worker", "index": 0}}. *job (the caller frees with weft_free) and *task are
 * set from "task" when they are not NULL (NULL and -1 when TF_CONFIG has no task). */
WEFT_API weft_status_t *weft_cluster_spec_from_tf_config(const char *json,
                                                         weft_cluster_spec_t **out, char **job,
                                                         int *task);
/* Looks an environment variable up: its value (borrowed) or NULL when it is not set. */
typedef const char *(*weft_env_lookup_t)(const char *name, void *user_data);
/* The cluster of a Slurm job step, as TensorFlow's SlurmClusterResolver builds it
 * (docs/operations.md, "Slurm"): the nodes of SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST),
 * SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE, "2(x3),1") tasks on each, task k of a
 * node at port_base + k; the first ps_tasks of SLURM_PROCID's order are job "ps", the rest
 * "worker" (SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, tasks in all). *job (the caller frees with
 * weft_free) and *task are this process's, from SLURM_PROCID, when not NULL. `lookup` NULL: the
 * process environment. INVALID_ARGUMENT naming the variable and quoting its text when one is
 * missing or malformed, or when they disagree. */
WEFT_API weft_status_t *weft_cluster_spec_from_slurm(weft_env_lookup_t lookup, void *user_data,
                                                    int ps_tasks, int port_base,
                                                    weft_cluster_spec_t **out, char **job,
                                                    int *task);
/* Expands a Slurm host list: "node[01-03,07],gpu[1-2]x" -> node01 node02 node03 node07 gpu1x
 * gpu2x (zero padding kept; several bracket groups make their product, the first varying
 * slowest). *hosts is NULL-terminated (the caller frees with weft_strv_free); *n its length (n
 * may be NULL). INVALID_ARGUMENT quoting the list and the part at fault. */
WEFT_API weft_status_t *weft_slurm_hostlist_expand(const char *text, char ***hosts, int *n);
WEFT_API int weft_cluster_spec_num_jobs(const weft_cluster_spec_t *spec);
/* borrowed */
WEFT_API const char *weft_cluster_spec_job_name(const weft_cluster_spec_t *spec, int index);
/* Highest task index + 1 of `job`; 0 when there is no such job. */
WEFT_API int weft_cluster_spec_num_tasks(const weft_cluster_spec_t *spec, const char *job);
/* Borrowed; NULL when the task is not in the spec. */
WEFT_API const char *weft_cluster_spec_task_address(const weft_cluster_spec_t *spec,
                                                    const char *job, int task);
/* How many of the spec's tasks share the host of /job:job/task:task, itself included (the
 * loopback names localhost, 127.x.y.z and ::1 count as one host); 0 when the task is not in the
 * spec. weftd and weft-train divide the cores among them (weft_threads_set_limit). */
WEFT_API int weft_cluster_spec_tasks_on_host(const weft_cluster_spec_t *spec, const char *job,
                                             int task);
/* INVALID_ARGUMENT naming the task and what the spec does have when /job:job/task:task is not
 * in it. */
WEFT_API weft_status_t *weft_cluster_spec_check_task(const weft_cluster_spec_t *spec,
                                                     const char *job, int task);
/* "ps=h:p,h:p;worker=h:p" (parseable again); the caller frees with weft_free. */
WEFT_API char *weft_cluster_spec_to_string(const weft_cluster_spec_t *spec);

WEFT_API weft_server_options_t *weft_server_options_new(void);
WEFT_API void weft_server_options_free(weft_server_options_t *opts);
/* The host to listen on; default loopback (127.0.0.1 and ::1). "0.0.0.0" listens everywhere.
 * The port is always the task's port from the spec. */
WEFT_API void weft_server_options_set_bind_address(weft_server_options_t *opts, const char *host);
/* How long a master waits for every task to answer GetStatus before it fails with UNAVAILABLE
 * naming the tasks that did not (default 10000 ms). */
WEFT_API void weft_server_options_set_status_timeout_ms(weft_server_options_t *opts, int64_t ms);
/* Deadline of a step when the session sets none (default 120000 ms). */
WEFT_API void weft_server_options_set_step_timeout_ms(weft_server_options_t *opts, int64_t ms);
/* Limits every request is checked against before any work starts (docs/security.md): a request
 * beyond one gets INVALID_ARGUMENT naming the field and the limit. 0 or less restores the
 * default. The whole message (default 1 GiB), one tensor fed or held as a constant (default
 * 1 GiB), the nodes of one graph and the names of one step (default 1000000), the attributes of
 * one node (default 1000), the rank of any tensor or shape (default and at most WEFT_MAX_RANK). */
WEFT_API void weft_server_options_set_max_message_bytes(weft_server_options_t *opts, int64_t bytes);
WEFT_API void weft_server_options_set_max_tensor_bytes(weft_server_options_t *opts, int64_t bytes);
WEFT_API void weft_server_options_set_max_graph_nodes(weft_server_options_t *opts, int64_t n);
WEFT_API void weft_server_options_set_max_node_attrs(weft_server_options_t *opts, int64_t n);
WEFT_API void weft_server_options_set_max_tensor_rank(weft_server_options_t *opts, int rank);
/* Bytes that compressed requests may take inflated, all at once (default 256 MiB): a request
 * reserves each piece before it is inflated and holds it until its payload is freed; one that
 * would pass the budget gets RESOURCE_EXHAUSTED naming --max_inflating_bytes. One request at a
 * time may go past it up to the message limit, so a lone compressed request of any allowed size
 * is served. 0 or less restores the default. */
WEFT_API void weft_server_options_set_max_inflating_bytes(weft_server_options_t *opts,
                                                          int64_t bytes);
/* Calls that may block for a whole step (RunStep, RunGraph, CreateSession, ...) the server
 * handles at once; one more gets RESOURCE_EXHAUSTED and the server keeps serving. Each holds a
 * few threads while it runs. 0 or less restores the default, WEFT_DEFAULT_MAX_CONCURRENT_STEPS. */
#define WEFT_DEFAULT_MAX_CONCURRENT_STEPS 256
WEFT_API void weft_server_options_set_max_concurrent_steps(weft_server_options_t *opts, int n);
/* Threads the master uses for its calls to the tasks (RunGraph of a step's other partitions,
 * GetStatus, RegisterGraph, Abort, ...). A step that needs one more than are free gets
 * RESOURCE_EXHAUSTED naming --max_rpc_threads; the other calls wait in a bounded queue or are
 * made by the calling thread. A step of a cluster of T tasks takes up to T - 1 of them. 0 or less
 * restores the default, WEFT_DEFAULT_MAX_RPC_THREADS. */
#define WEFT_DEFAULT_MAX_RPC_THREADS 256
WEFT_API void weft_server_options_set_max_rpc_threads(weft_server_options_t *opts, int n);
/* A master session no call has used for this long is closed, and its graphs and threads on every
 * task are released (TensorFlow's session_gc_seconds); a later call on it gets an error saying
 * so (ABORTED: create the session again). 0 or less restores the default,
 * WEFT_DEFAULT_SESSION_GC_SECONDS (one day). */
#define WEFT_DEFAULT_SESSION_GC_SECONDS 86400
WEFT_API void weft_server_options_set_session_gc_seconds(weft_server_options_t *opts,
                                                         int64_t seconds);
/* Partition graphs registered on the worker at once (RegisterGraph, by masters or raw calls);
 * one more gets RESOURCE_EXHAUSTED naming --max_registered_graphs until some are deregistered
 * (a master deregisters its session's graphs when the session closes or is reclaimed). Each
 * graph holds its kernels and a few threads. 0 or less restores the default,
 * WEFT_DEFAULT_MAX_REGISTERED_GRAPHS. */
#define WEFT_DEFAULT_MAX_REGISTERED_GRAPHS 4096
WEFT_API void weft_server_options_set_max_registered_graphs(weft_server_options_t *opts, int n);
/* A step on the worker that no RunGraph holds (a RecvTensor for a step that never runs here, or
 * tensors sent for a receiver that never came) is dropped once untouched this long and past its
 * deadline; its waiting RecvTensor calls end with ABORTED naming the step. 0 or less restores
 * the default, WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS (one minute). */
#define WEFT_DEFAULT_STEP_IDLE_TIMEOUT_MS 60000
WEFT_API void weft_server_options_set_step_idle_timeout_ms(weft_server_options_t *opts,
                                                           int64_t ms);
/* Master sessions open at once (each holds its graphs, and a couple of threads once it has run
 * a step, until it is closed or reclaimed). CreateSession beyond it gets RESOURCE_EXHAUSTED
 * naming --max_sessions and the server keeps serving. 0 or less restores the default,
 * WEFT_DEFAULT_MAX_SESSIONS. */
#define WEFT_DEFAULT_MAX_SESSIONS 1024
WEFT_API void weft_server_options_set_max_sessions(weft_server_options_t *opts, int n);
/* Connections: one that has not finished its TLS handshake and HTTP/2 preface within
 * handshake_ms is closed (gRPC's default was 120 s), and one that carries no call for idle_ms is
 * closed with a GOAWAY (gRPC's default: never; a client reconnects on its next call). Without
 * them a caller without the token holds a descriptor per silent connection for good. 0 or less
 * restores the defaults, WEFT_DEFAULT_HANDSHAKE_TIMEOUT_MS and
 * WEFT_DEFAULT_MAX_CONNECTION_IDLE_MS. */
#define WEFT_DEFAULT_HANDSHAKE_TIMEOUT_MS 20000
#define WEFT_DEFAULT_MAX_CONNECTION_IDLE_MS 300000
WEFT_API void weft_server_options_set_connection_timeouts(weft_server_options_t *opts,
                                                          int handshake_ms, int idle_ms);
/* Answers the server has handed to gRPC that one connection's client has not yet received:
 * beyond n of them, each new call on that connection is refused with RESOURCE_EXHAUSTED naming
 * --max_connection_answers, so a client that pipelines calls and never reads cannot make the
 * server hold every answer. 0 or less restores WEFT_DEFAULT_MAX_CONNECTION_ANSWERS. */
#define WEFT_DEFAULT_MAX_CONNECTION_ANSWERS 1024
WEFT_API void weft_server_options_set_max_connection_answers(weft_server_options_t *opts, int n);
/* The bulk channel (docs/distributed.md, "The bulk channel"): RecvTensor's bytes over plain TCP
 * connections beside the gRPC port, authenticated by single-use tickets handed out in gRPC
 * answers. mode < 0 (the default): on unless the server uses TLS; 0: off; > 0: on, also with
 * TLS (the tensors then travel in plaintext: docs/security.md). WEFT_BULK_TRANSFER=0 in the
 * environment turns it off whatever the mode. */
WEFT_API void weft_server_options_set_bulk_transfer(weft_server_options_t *opts, int mode);
/* The bulk channel's TCP port: 0 (the default) a free one, which weft_server_bulk_port then
 * tells; a fixed port lets a firewall between hosts let it through. weft_server_new fails with
 * INVALID_ARGUMENT for a port outside 0-65535, and with UNAVAILABLE when a fixed port cannot be
 * listened on (in use); a free port that cannot be had only leaves the channel off (logged). */
WEFT_API void weft_server_options_set_bulk_port(weft_server_options_t *opts, int port);

/* A server for task `task` of `job` in `spec` (copied): the master and worker services of that
 * task, listening on the task's port. Not serving until weft_server_start. */
WEFT_API weft_status_t *weft_server_new(const weft_cluster_spec_t *spec, const char *job, int task,
                                        const weft_server_options_t *opts, weft_server_t **out);
/* TensorFlow's create_local_server: job "local", one task, on a free loopback port. Started
 * when `start` is true. */
WEFT_API weft_status_t *weft_server_new_local(bool start, weft_server_t **out);
WEFT_API weft_status_t *weft_server_start(weft_server_t *server);
/* Blocks until the server has stopped (weft_server_stop from another thread). */
WEFT_API void weft_server_join(weft_server_t *server);
/* Stops serving: new calls are refused, running steps are aborted, then the port is closed.
 * Idempotent. */
WEFT_API weft_status_t *weft_server_stop(weft_server_t *server);
/* NULL while the server can take new connections. UNAVAILABLE naming the cause once it cannot:
 * gRPC (1.51) stops listening for good after accept() fails (the process ran out of file
 * descriptors), though calls on connections already open still work. A process that serves
 * should then be restarted (weftd exits with status 3). The caller owns the status. */
WEFT_API weft_status_t *weft_server_check(const weft_server_t *server);
/* "grpc://host:port" (borrowed). */
WEFT_API const char *weft_server_target(const weft_server_t *server);
/* The bulk channel's TCP port (on the server's bind address), or 0 when it is off. */
WEFT_API int weft_server_bulk_port(const weft_server_t *server);
WEFT_API void weft_server_free(weft_server_t *server); /* stops it first if needed; accepts NULL */

/* Remote sessions: the deadline of one step (0: the server's default). */
WEFT_API void weft_session_options_set_operation_timeout_ms(weft_session_options_t *opts,
                                                            int64_t ms);
/* Remote sessions: TensorFlow's device_filters. The session only involves the tasks matching one
 * of the filters ("/job:ps", "/job:worker/task:1"), so a worker's session does not wait for the
 * other workers (n 0: every task, the default). Copied. */
WEFT_API void weft_session_options_set_device_filters(weft_session_options_t *opts,
                                                      const char *const *filters, int n);

/* Every device of the cluster behind `target` ("grpc://host:port"), as its master sees them.
 * timeout_ms 0 means the default (10000 ms). *devices is an array of *n entries the caller frees
 * with weft_device_list_free. */
WEFT_API weft_status_t *weft_cluster_list_devices(const char *target, int64_t timeout_ms,
                                                  weft_device_info_t **devices, int *n);
WEFT_API void weft_device_list_free(weft_device_info_t *devices, int n);
/* TensorFlow's Session.reset: drops the named resource containers (n == 0: all of them, which
 * includes every variable) on every task of the cluster behind `target`. */
WEFT_API weft_status_t *weft_cluster_reset(const char *target, const char *const *containers,
                                           int n);

/* Transport security and the cluster token (docs/security.md). Files are read when the server
 * or session is created; an unreadable, empty or malformed file is INVALID_ARGUMENT naming it.
 *
 * Servers: serve TLS with this certificate chain and key (PEM); with ca_file (may be NULL),
 * mutual TLS: clients and peer tasks must present a certificate signed by it. The server talks
 * to the other tasks of its cluster over TLS with the same files: its certificate is its client
 * certificate, and it verifies theirs against ca_file or, when NULL, against its own certificate
 * chain (one shared certificate, or full-chain files that end in the same CA). NULL cert_file:
 * no TLS. With TLS its target is "grpcs://host:port". */
WEFT_API void weft_server_options_set_tls(weft_server_options_t *opts, const char *cert_file,
                                          const char *key_file, const char *ca_file);
/* Every call must carry the token in this file (surrounding white space stripped; printable
 * ASCII); calls without it or with another get UNAUTHENTICATED and run nothing. The server sends
 * it on its own calls to the other tasks. NULL: no token. */
WEFT_API void weft_server_options_set_auth_token_file(weft_server_options_t *opts,
                                                      const char *path);
/* Sessions (and the calls below) with a "grpcs://host:port" target: TLS, verifying the server
 * against ca_file (NULL: the system's roots); cert_file and key_file (both or neither) are the
 * client certificate a mutual-TLS server asks for. Setting files for a grpc:// target is an
 * error at weft_session_new (plaintext would ignore them). */
WEFT_API void weft_session_options_set_tls(weft_session_options_t *opts, const char *cert_file,
                                           const char *key_file, const char *ca_file);
/* The cluster token every call of the session carries. NULL: none. */
WEFT_API void weft_session_options_set_auth_token_file(weft_session_options_t *opts,
                                                       const char *path);
/* gRPC's health checking protocol (grpc.health.v1.Health/Check), which every Weft server
 * answers without the cluster token (Kubernetes probes carry none; docs/security.md): the
 * numbers are the protocol's ServingStatus. */
typedef enum {
  WEFT_HEALTH_UNKNOWN = 0,
  WEFT_HEALTH_SERVING = 1,
  WEFT_HEALTH_NOT_SERVING = 2,
  WEFT_HEALTH_SERVICE_UNKNOWN = 3,
} weft_health_status_t;
/* Asks the server at `target` ("grpc://host:port", "grpcs://..." with opts' TLS files; opts may
 * be NULL) how `service` is ("" or NULL: the server as a whole; "weft.Master", "weft.Worker"):
 * *status on success. UNAVAILABLE naming the address when nothing answers, DEADLINE_EXCEEDED
 * after timeout_ms (<= 0: 5000), NOT_FOUND for a service the server does not have. */
WEFT_API weft_status_t *weft_health_check(const char *target, const char *service,
                                          const weft_session_options_t *opts, int64_t timeout_ms,
                                          weft_health_status_t *status);
/* "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN" (static). */
WEFT_API const char *weft_health_status_name(weft_health_status_t status);
/* weft_cluster_list_devices and weft_cluster_reset with a session options' TLS files and token
 * (opts may be NULL: plaintext, no token; its target is not used). */
WEFT_API weft_status_t *weft_cluster_list_devices_with_options(const char *target,
    const weft_session_options_t *opts, int64_t timeout_ms, weft_device_info_t **devices, int *n);
WEFT_API weft_status_t *weft_cluster_reset_with_options(const char *target,
                                                        const weft_session_options_t *opts,
                                                        const char *const *containers, int n);

/* ---------------------------------------------------------------------------------------------
 * Checkpoints: TensorFlow's tensor-bundle format (PREFIX.index, a sorted table of tensor entries,
 * and PREFIX.data-NNNNN-of-NNNNN, the tensors' bytes), the `checkpoint` state file, and a saver
 * over a session's variables, local or remote (docs/checkpoints.md). */

typedef struct weft_checkpoint_reader weft_checkpoint_reader_t;

/* Opens the checkpoint PREFIX (reads and checks PREFIX.index; data files are opened when a
 * tensor is read). NOT_FOUND naming the file when there is no index; DATA_LOSS naming the file
 * when it is truncated or corrupted. On success the caller owns *out. */
WEFT_API weft_status_t *weft_checkpoint_reader_open(const char *prefix,
                                                    weft_checkpoint_reader_t **out);
WEFT_API void weft_checkpoint_reader_free(weft_checkpoint_reader_t *reader); /* accepts NULL */
/* Tensors in key order; keys are borrowed from the reader. */
WEFT_API int weft_checkpoint_reader_num_tensors(const weft_checkpoint_reader_t *reader);
WEFT_API const char *weft_checkpoint_reader_key(const weft_checkpoint_reader_t *reader, int index);
WEFT_API bool weft_checkpoint_reader_has(const weft_checkpoint_reader_t *reader, const char *key);
/* dtype and shape of `key` (any pointer may be NULL); NOT_FOUND naming the key and checkpoint. */
WEFT_API weft_status_t *weft_checkpoint_reader_info(const weft_checkpoint_reader_t *reader,
                                                    const char *key, weft_dtype_t *dtype, int *rank,
                                                    int64_t dims[WEFT_MAX_RANK]);
/* Reads `key` into a new host tensor (the caller unrefs it), checking its crc32c: DATA_LOSS naming
 * the data file, the key, its offset and size when the bytes do not match. */
WEFT_API weft_status_t *weft_checkpoint_reader_read(weft_checkpoint_reader_t *reader,
                                                    const char *key, weft_tensor_t **out);

typedef struct weft_checkpoint_writer weft_checkpoint_writer_t;

/* Starts checkpoint PREFIX (its folder is created if needed). Tensors go to temporary files that
 * only weft_checkpoint_writer_finish renames to the final names, so a writer that is freed
 * unfinished (or a crash) never leaves a partial checkpoint under PREFIX. */
WEFT_API weft_status_t *weft_checkpoint_writer_new(const char *prefix,
                                                   weft_checkpoint_writer_t **out);
/* Index blocks Snappy-compressed (default off, as TensorFlow writes them) and their size
 * (default 4096 bytes). Set before finish. */
WEFT_API void weft_checkpoint_writer_set_snappy(weft_checkpoint_writer_t *writer, bool on);
WEFT_API void weft_checkpoint_writer_set_block_size(weft_checkpoint_writer_t *writer, size_t bytes);
/* Appends a tensor (copied out at once; host or device). INVALID_ARGUMENT for an empty or
 * repeated key. */
WEFT_API weft_status_t *weft_checkpoint_writer_add(weft_checkpoint_writer_t *writer,
                                                   const char *key, const weft_tensor_t *tensor);
/* Writes the index, fsyncs, and renames both files into place. */
WEFT_API weft_status_t *weft_checkpoint_writer_finish(weft_checkpoint_writer_t *writer);
/* Frees the writer; unfinished, its temporary files are removed. Accepts NULL. */
WEFT_API void weft_checkpoint_writer_free(weft_checkpoint_writer_t *writer);
/* TensorFlow's sharded save (MergeV2Checkpoints): merges checkpoints written separately (one per
 * ps task, say) into one checkpoint PREFIX whose data files are PREFIX.data-0000N-of-0000M, one
 * per input shard, in input order. Data files are linked (or moved) into place, then the merged
 * index appears atomically; the inputs are removed when delete_inputs is true. INVALID_ARGUMENT
 * naming a key found in two inputs; NOT_FOUND / DATA_LOSS naming an input that is missing or bad. */
WEFT_API weft_status_t *weft_checkpoint_merge(const char *const *input_prefixes, int n_inputs,
                                              const char *prefix, bool delete_inputs);

/* The `checkpoint` state file of folder `dir` (a text CheckpointState). *latest (may be NULL)
 * and every entry of *all (a NULL-terminated array, may be NULL) are paths resolved against
 * `dir` when relative; the caller frees with weft_free / weft_strv_free. NOT_FOUND when the folder
 * has no state file. */
WEFT_API weft_status_t *weft_checkpoint_state_read(const char *dir, char **latest, char ***all);
/* Writes the state file atomically; paths inside `dir` are written relative to it. */
WEFT_API weft_status_t *weft_checkpoint_state_write(const char *dir, const char *latest,
                                                    const char *const *all, int n_all);
/* tf.train.latest_checkpoint: the newest prefix in `dir` whose index exists, or NULL. The caller
 * frees with weft_free. */
WEFT_API char *weft_checkpoint_latest(const char *dir);
/* Removes the temporary files and folders that writers of checkpoints of `prefix` (a path such
 * as DIR/model.ckpt, without the -STEP) left when they died: PREFIX[-STEP].index.tempstate<pid>-*,
 * PREFIX[-STEP].data-*.tempstate<pid>-* and PREFIX[-STEP]_temp_<pid>-<hex> folders of sharded saves,
 * only those whose process <pid> no longer exists on this machine or started after the file was
 * last written (the pid was reused, as by a trainer restarted as pid 1 of a container), so never
 * what this process writes. Nothing else in the folder is touched. weft_saver_save does it
 * before each save. *removed (may be NULL) receives how many files and folders went. */
WEFT_API weft_status_t *weft_checkpoint_remove_stale_temp_files(const char *prefix, int *removed);

/* TensorFlow's Saver over the variables of a session. A local session's variables are read and
 * assigned directly; a remote session's by steps, for which the saver adds its nodes to the graph
 * once ("<var>/is_initialized", "<var>/restore_value", "<var>/restore"; so the graph, although
 * declared const below, must not be in use by another thread then), and the checkpoint gets one
 * shard per task holding variables (docs/training.md, "Saving a cluster's variables"). */
typedef struct weft_saver weft_saver_t;

/* max_to_keep: how many checkpoints save keeps (older ones are deleted); 0 or less keeps all. */
WEFT_API weft_saver_t *weft_saver_new(int max_to_keep);
WEFT_API void weft_saver_free(weft_saver_t *saver); /* accepts NULL */
/* Restricts the saver to these variable node names (default: every variable of the graph). */
WEFT_API void weft_saver_set_var_list(weft_saver_t *saver, const char *const *names, int n);
WEFT_API void weft_saver_set_snappy(weft_saver_t *saver, bool on);
/* Writes every variable of `graph` (NULL: the session's graph) under its node name to
 * PREFIX-GLOBAL_STEP (global_step < 0: PREFIX), updates the `checkpoint` file in PREFIX's folder
 * and deletes checkpoints beyond max_to_keep (the list is picked up from the state file on the
 * first save, so it survives restarts). FAILED_PRECONDITION naming a variable that is not
 * initialised. *saved_path (may be NULL) receives the prefix written; the caller frees with
 * weft_free. `saver` may be NULL (max_to_keep 5). */
WEFT_API weft_status_t *weft_saver_save(weft_saver_t *saver, weft_session_t *session,
                                        const weft_graph_t *graph, const char *prefix,
                                        int64_t global_step, char **saved_path);
/* Assigns every variable of `graph` (NULL: the session's) from checkpoint PREFIX: NOT_FOUND
 * naming a variable the checkpoint lacks; INVALID_ARGUMENT naming the variable with both dtypes
 * or shapes when they differ. Nothing is assigned unless everything checks out. */
WEFT_API weft_status_t *weft_saver_restore(weft_saver_t *saver, weft_session_t *session,
                                           const weft_graph_t *graph, const char *prefix);

/* ---------------------------------------------------------------------------------------------
 * SavedModels (docs/training.md#savedmodels): TensorFlow's DIR/saved_model.pb (a MetaGraphDef per
 * tag set, with signatures) and DIR/variables/variables (a checkpoint), run in a local session.
 * Nodes are imported on demand: a run imports only what its fetches and targets need, cut at the
 * tensors it feeds, so parts of the graph Weft has no op for (ParseExample, SaveV2, ...) never
 * have to load unless a run needs them. */

typedef struct weft_saved_model weft_saved_model_t;

/* Loads the MetaGraphDef tagged `tags` (comma-separated, order free; NULL or "" means "serve")
 * and restores every variable (VariableV2) of its graph that DIR/variables/variables holds, by
 * checkpoint key = variable node name; a SavedModel without DIR/variables/variables.index has
 * none to restore. opts (may be NULL) is copied into the model's local session. NOT_FOUND naming
 * DIR/saved_model.pb when it is missing, and naming the tag sets present when none matches;
 * DATA_LOSS naming the file when the pb or the variables are corrupt. The caller owns *out. */
WEFT_API weft_status_t *weft_saved_model_load(const char *dir, const char *tags,
                                              const weft_session_options_t *opts,
                                              weft_saved_model_t **out);
WEFT_API void weft_saved_model_free(weft_saved_model_t *model); /* accepts NULL */
/* The graph of the nodes imported so far and the session running it (borrowed). */
WEFT_API weft_graph_t *weft_saved_model_graph(const weft_saved_model_t *model);
WEFT_API weft_session_t *weft_saved_model_session(const weft_saved_model_t *model);

/* Signatures, by key in sorted order. */
WEFT_API int weft_saved_model_num_signatures(const weft_saved_model_t *model);
WEFT_API const char *weft_saved_model_signature_key(const weft_saved_model_t *model, int index);
/* One input or output of a signature; strings are borrowed from the model. */
typedef struct weft_saved_model_tensor_info {
  const char *key;  /* the signature's name for it ("x") */
  const char *name; /* the graph tensor ("x:0") */
  weft_dtype_t dtype; /* reference dtypes are given as their base type */
  int rank;           /* -1: unknown */
  int64_t dims[WEFT_MAX_RANK]; /* -1: unknown */
} weft_saved_model_tensor_info_t;
/* Counts of the signature's inputs and outputs (either pointer may be NULL) and its method name
 * (borrowed; may be NULL). NOT_FOUND listing the signature keys present. */
WEFT_API weft_status_t *weft_saved_model_signature(const weft_saved_model_t *model, const char *key,
                                                   int *n_inputs, int *n_outputs,
                                                   const char **method);
/* Input / output `index` of signature `key`, in key order. NOT_FOUND as above or for an index out
 * of range. */
WEFT_API weft_status_t *weft_saved_model_signature_input(const weft_saved_model_t *model,
                                                         const char *key, int index,
                                                         weft_saved_model_tensor_info_t *out);
WEFT_API weft_status_t *weft_saved_model_signature_output(const weft_saved_model_t *model,
                                                          const char *key, int index,
                                                          weft_saved_model_tensor_info_t *out);
/* The dtype of a feedable tensor: `name` is an input or output key of `signature` (NULL: none)
 * or a tensor name; the dtype comes from the signature, else the node's "dtype" or "T" attribute.
 * NOT_FOUND when there is no such tensor; INVALID_ARGUMENT when the node does not say. */
WEFT_API weft_status_t *weft_saved_model_tensor_dtype(const weft_saved_model_t *model,
                                                      const char *signature, const char *name,
                                                      weft_dtype_t *dtype);

/* Runs one step of the model's session. Names are input keys (feeds) or output keys (fetches)
 * of `signature` when one is given, else (or when no key matches) tensor names of the graph;
 * targets are node names. Nodes the step needs are imported first (see above): UNIMPLEMENTED
 * naming the node and its op when Weft has no such op; NOT_FOUND naming a tensor, node or
 * signature the model lacks. feeds are borrowed; fetch_outputs[i] receives a new reference (the
 * caller unrefs it). Variables keep their values between runs, as in any session. A tensor fed
 * in one run whose producer was not imported is read through a stand-in placeholder by the
 * nodes imported in that run, so later runs that need those nodes must feed it too. */
WEFT_API weft_status_t *weft_saved_model_run(weft_saved_model_t *model, const char *signature,
                                             const char *const *feed_names,
                                             weft_tensor_t *const *feeds, int n_feeds,
                                             const char *const *fetch_names,
                                             weft_tensor_t **fetch_outputs, int n_fetches,
                                             const char *const *target_names, int n_targets);

/* ---------------------------------------------------------------------------------------------
 * Training (docs/training.md): symbolic gradients, losses, optimizers, the replica device
 * setter. Nodes these functions add belong to the graph, like every node. */

/* TensorFlow's tf.gradients: adds nodes computing d(sum of ys)/d(x) for each x, under the name
 * scope "gradients/...". grad_ys (may be NULL; an entry with node NULL means the same) gives the
 * gradient flowing into each y, default ones. grads_out (n_xs entries, the caller's array) gets
 * one output per x, owned by the graph; an x the ys do not depend on gets {NULL, 0} (TensorFlow's
 * None). An x may be a resource variable's handle (a VarHandleOp output, or a string Placeholder
 * standing for one): its gradient is the dense gradient of the variable's value, every read's
 * part summed (docs/training.md, "Gradients of resource variables"). UNIMPLEMENTED naming the
 * node and op type when a node on the way has no gradient function; INVALID_ARGUMENT for a y that
 * is not a float tensor. On error nodes added so far stay in the graph (unused) and grads_out is
 * all {NULL, 0}. */
WEFT_API weft_status_t *weft_gradients(weft_graph_t *graph, const weft_output_t *ys, int n_ys,
                                       const weft_output_t *xs, int n_xs,
                                       const weft_output_t *grad_ys, weft_output_t *grads_out);

/* Losses: scalar outputs averaged over all elements (mean squared error) or over the batch (the
 * cross entropies: logits [batch, classes]; labels a distribution of the same shape, or class
 * indices [batch] of type int32/int64 for the sparse form). {NULL,0} and *status on error. */
WEFT_API weft_output_t weft_mean_squared_error(weft_graph_t *graph, weft_output_t labels,
                                               weft_output_t predictions, weft_status_t **status);
WEFT_API weft_output_t weft_softmax_cross_entropy(weft_graph_t *graph, weft_output_t labels,
                                                  weft_output_t logits, weft_status_t **status);
WEFT_API weft_output_t weft_sparse_softmax_cross_entropy(weft_graph_t *graph, weft_output_t labels,
                                                         weft_output_t logits,
                                                         weft_status_t **status);

/* The trainable variables (VariableV2 nodes made by weft_variable), in creation order. */
WEFT_API int weft_graph_num_trainable_variables(const weft_graph_t *graph);
WEFT_API weft_node_t *weft_graph_trainable_variable(const weft_graph_t *graph, int index);

/* The node "global_step" (an int64 scalar VariableV2, initialised to 0 by
 * weft_global_variables_initializer, not trainable), created on first use. NULL and *status on
 * error. */
WEFT_API weft_node_t *weft_train_global_step(weft_graph_t *graph, weft_status_t **status);

typedef enum weft_optimizer_kind {
  WEFT_OPTIMIZER_GRADIENT_DESCENT = 0,
  WEFT_OPTIMIZER_MOMENTUM,
  WEFT_OPTIMIZER_ADAGRAD,
  WEFT_OPTIMIZER_ADAM,
  WEFT_OPTIMIZER_RMSPROP,
} weft_optimizer_kind_t;

/* Hyper-parameters, used literally; weft_optimizer_spec_default fills TensorFlow's defaults. */
typedef struct weft_optimizer_spec {
  weft_optimizer_kind_t kind;
  double learning_rate;
  double momentum;          /* MOMENTUM (no default: 0.9 from _default), RMSPROP (0) */
  bool use_nesterov;        /* MOMENTUM, ADAM */
  double initial_accumulator_value; /* ADAGRAD (0.1) */
  double beta1, beta2;      /* ADAM (0.9, 0.999) */
  double decay;             /* RMSPROP's rho (0.9) */
  double epsilon;           /* ADAM (1e-8), RMSPROP (1e-10) */
  const char *name;         /* name scope of the update ops; NULL: "GradientDescent", "Momentum",
                               "Adagrad", "Adam", "RMSProp" (also the slot suffix) */
} weft_optimizer_spec_t;

WEFT_API weft_optimizer_spec_t weft_optimizer_spec_default(weft_optimizer_kind_t kind,
                                                           double learning_rate);

/* TensorFlow's optimizer.minimize: gradients of `loss` for var_list (VariableV2 nodes; NULL or
 * n_vars 0: every trainable variable), slot variables colocated with each variable ("w/Momentum",
 * "w/Adam", "w/Adam_1", ...; they join the global variables initializer), one Apply* op per
 * variable colocated with it, and, when global_step is not NULL, an AssignAdd of 1 to it after
 * the updates. *train_op is a NoOp named after the optimizer depending on all of it, colocated
 * with global_step when there is one (as TensorFlow's train op, the step's increment, is: on a
 * cluster a worker's step then waits for no control message from the ps). Variables
 * the loss does not depend on are skipped; INVALID_ARGUMENT when none is left. */
WEFT_API weft_status_t *weft_minimize(weft_graph_t *graph, weft_output_t loss,
                                      const weft_optimizer_spec_t *spec,
                                      weft_node_t *const *var_list, int n_vars,
                                      weft_node_t *global_step, weft_node_t **train_op);

/* Synchronous replicated training, TensorFlow's SyncReplicasOptimizer for between-graph
 * replication (docs/training.md, "Synchronous training"). Every worker builds the same graph
 * (variables on ps tasks) and calls weft_sync_replicas_minimize instead of weft_minimize; it adds
 * the gradients of `loss` for var_list (NULL or n_vars 0: every trainable variable), per variable
 * three accumulator variables colocated with it ("<var>/sync_acc", "<var>/sync_count",
 * "<var>/sync_step"; they join the global variables initializer), an int64 placeholder
 * "sync_replicas/local_step", one WeftAccumulatorApply per variable (the worker's push) and the
 * chief's update: one WeftAccumulatorTake per variable feeding `spec`'s Apply* ops, then the
 * increment of global_step (NULL: weft_train_global_step). replicas_to_aggregate (N, >= 1)
 * gradients make one update; total_num_replicas (0: N) may exceed N, the rest being backup
 * workers whose late gradients are dropped. INVALID_ARGUMENT for bad counts or variables. On
 * success the caller owns *out (free it with weft_sync_replicas_free, before the graph, which it
 * borrows); the nodes belong to the graph. */
typedef struct weft_sync_replicas weft_sync_replicas_t;
WEFT_API weft_status_t *weft_sync_replicas_minimize(weft_graph_t *graph, weft_output_t loss,
                                                    const weft_optimizer_spec_t *spec,
                                                    weft_node_t *const *var_list, int n_vars,
                                                    weft_node_t *global_step,
                                                    int replicas_to_aggregate,
                                                    int total_num_replicas,
                                                    weft_sync_replicas_t **out);
/* One synchronous step as a worker runs it: reads the global step G, runs the gradient push for
 * step G with the caller's feeds (borrowed) and fetches (outputs[i] gets a new reference the
 * caller unrefs, as weft_session_run); then the chief (is_chief) polls the accumulators until
 * each has N gradients and runs the update (the global step becomes G+1), while any other worker
 * polls the global step until it passes G. *global_step_out (may be NULL) is the global step
 * after the step. Past timeout_ms (> 0): DEADLINE_EXCEEDED naming what was missing ("sync
 * replicas: 1 of 2 gradients for variable 'w' arrived within 5000 ms; is a worker slow or
 * gone?"); on any error no output is set. Calling it again after a deadline for the same global
 * step waits again without pushing a second gradient. One thread at a time per sync object. */
WEFT_API weft_status_t *weft_sync_replicas_step(weft_sync_replicas_t *sync, weft_session_t *session,
                                                bool is_chief, const char *const *feed_names,
                                                weft_tensor_t *const *feeds, int n_feeds,
                                                const char *const *fetch_names,
                                                weft_tensor_t **outputs, int n_fetches,
                                                int64_t timeout_ms, int64_t *global_step_out);
/* The worker's push as a target (a NoOp on every accumulate op; it needs the local_step feed)
 * and the chief's update (a NoOp); both borrowed from the graph. */
WEFT_API weft_node_t *weft_sync_replicas_train_op(const weft_sync_replicas_t *sync);
WEFT_API weft_node_t *weft_sync_replicas_update_op(const weft_sync_replicas_t *sync);
/* Gradients of this replica dropped as stale so far (one per variable per late push). */
WEFT_API int64_t weft_sync_replicas_num_stale(const weft_sync_replicas_t *sync);
WEFT_API void weft_sync_replicas_free(weft_sync_replicas_t *sync); /* accepts NULL */

/* TensorFlow's replica_device_setter, used as a device function:
 *     weft_replica_device_setter_t *s = weft_replica_device_setter(g, 2, "/job:ps",
 *         "/job:worker/task:0", true, WEFT_PS_ROUND_ROBIN);
 *     weft_graph_push_device_fn(g, weft_replica_device_setter_fn, s);
 *     ... build the model ...
 *     weft_graph_pop_device(g); weft_replica_device_setter_free(s);
 * Variable ops (VariableV2, VarHandleOp, ...) go to ps_device + "/task:N", N chosen by the
 * strategy over ps_tasks tasks; every other op goes to worker_device (NULL: no opinion). Nodes
 * built under weft_graph_push_colocate get no device from the setter (they follow the node they
 * are colocated with, as TensorFlow's colocate_with). Device scopes pushed inside the setter are
 * merged over its result (their fields win); with merge_devices false, a node under an inner
 * non-empty device scope gets no device from the setter at all. With ps_tasks 0 the setter has no
 * opinion. The setter borrows `graph`; the caller frees it after popping it. */
typedef struct weft_replica_device_setter weft_replica_device_setter_t;
typedef enum weft_ps_strategy {
  WEFT_PS_ROUND_ROBIN = 0, /* task 0, 1, ..., ps_tasks-1, 0, ... in creation order */
  WEFT_PS_BY_BYTE_SIZE,    /* the least-loaded task (bytes of its variables, from the node's
                              "dtype" and "shape" attrs) takes the next variable; ties: lowest */
} weft_ps_strategy_t;
WEFT_API weft_replica_device_setter_t *weft_replica_device_setter(weft_graph_t *graph, int ps_tasks,
    const char *ps_device, const char *worker_device, bool merge_devices,
    weft_ps_strategy_t strategy);
/* Same with ps_tasks from the "ps" job of `cluster`; INVALID_ARGUMENT if it has no ps job. */
WEFT_API weft_status_t *weft_replica_device_setter_from_cluster(weft_graph_t *graph,
    const weft_cluster_spec_t *cluster, const char *ps_device, const char *worker_device,
    bool merge_devices, weft_ps_strategy_t strategy, weft_replica_device_setter_t **out);
/* The weft_device_fn; user_data is the setter. */
WEFT_API const char *weft_replica_device_setter_fn(void *user_data, const char *op,
                                                   const char *node_name);
/* Bytes of variables placed on ps task `task` so far. */
WEFT_API uint64_t weft_replica_device_setter_ps_load(const weft_replica_device_setter_t *setter,
                                                     int task);
/* accepts NULL */
WEFT_API void weft_replica_device_setter_free(weft_replica_device_setter_t *setter);

/* ---------------------------------------------------------------------------------------------
 * Monitored training sessions (docs/training.md): TensorFlow's MonitoredTrainingSession. The chief
 * restores the latest checkpoint of its folder or runs the initializer; the other workers wait
 * until every variable is initialised. Hooks run after each step: stop at a global step, save a
 * checkpoint every N seconds or N steps (chief), log loss and steps/s every N steps, and the
 * caller's own. A step that fails with UNAVAILABLE or ABORTED (a task was lost or restarted), or
 * finds a variable uninitialised after such a restart, makes it recreate its session, restore the
 * last checkpoint (chief) or wait for the variables (others), and run the step again, with
 * growing pauses, within a time budget (set_recovery_timeout_secs). */

typedef struct weft_monitored_session_options weft_monitored_session_options_t;
typedef struct weft_monitored_session weft_monitored_session_t;

WEFT_API weft_monitored_session_options_t *weft_monitored_session_options_new(void);
/* NULL ok */
WEFT_API void weft_monitored_session_options_free(weft_monitored_session_options_t *opts);
/* Target, TLS files, token, timeouts of the sessions it creates (copied; default: local). */
WEFT_API void weft_monitored_session_options_set_session_options(
    weft_monitored_session_options_t *opts, const weft_session_options_t *session);
WEFT_API void weft_monitored_session_options_set_is_chief(weft_monitored_session_options_t *opts,
                                                          bool is_chief); /* default true */
/* Folder of the checkpoints (created if needed); NULL (default): no checkpoints. The chief saves
 * to DIR/model.ckpt-GLOBAL_STEP. */
WEFT_API void weft_monitored_session_options_set_checkpoint_dir(
    weft_monitored_session_options_t *opts, const char *dir);
/* Save every `secs` seconds (default 600) and/or every `steps` global steps (default 0: off);
 * 0 turns either off. max_to_keep as weft_saver_new (default 5). */
WEFT_API void weft_monitored_session_options_set_save_checkpoint_secs(
    weft_monitored_session_options_t *opts, double secs);
WEFT_API void weft_monitored_session_options_set_save_checkpoint_steps(
    weft_monitored_session_options_t *opts, int64_t steps);
WEFT_API void weft_monitored_session_options_set_max_to_keep(weft_monitored_session_options_t *opts,
    int max_to_keep);
/* StopAtStepHook: should_stop becomes true once the global step reaches last_step (default -1:
 * never). */
WEFT_API void weft_monitored_session_options_set_last_step(weft_monitored_session_options_t *opts,
                                                           int64_t last_step);
/* Every `steps` steps of this worker, log "global_step G, loss L (S steps/s)" at INFO level
 * (WEFT_LOG=info shows it); loss_tensor (may be NULL) is fetched with each step for it. 0: off. */
WEFT_API void weft_monitored_session_options_set_log_every_steps(
    weft_monitored_session_options_t *opts, int64_t steps, const char *loss_tensor);
/* The caller's hook, called after every successful step with the global step and what the
 * step fetched (borrowed for the call). Returning true asks to stop (should_stop). */
typedef bool (*weft_monitored_after_run_fn)(void *user_data, int64_t global_step,
                                            weft_tensor_t *const *fetched, int n_fetched);
WEFT_API void weft_monitored_session_options_set_after_run(weft_monitored_session_options_t *opts,
                                                           weft_monitored_after_run_fn fn,
                                                           void *user_data);
/* Recovery (docs/training.md, "Recovery"): a step failing with UNAVAILABLE, ABORTED (or an
 * uninitialised variable after a restart) recreates the session; one failing with
 * DEADLINE_EXCEEDED runs again on the same session. Pauses start at retry_backoff_ms (default
 * 200 ms), double and are capped at 5 s. A step gives up once recovery_timeout_secs (default 300;
 * 0: no recovery) have passed since its first failure, or after max_retries attempts in a row
 * (default -1: no count limit), returning the last error's code with a message naming it. */
WEFT_API void weft_monitored_session_options_set_max_retries(weft_monitored_session_options_t *opts,
    int max_retries);
WEFT_API void weft_monitored_session_options_set_retry_backoff_ms(
    weft_monitored_session_options_t *opts, int64_t ms);
WEFT_API void weft_monitored_session_options_set_recovery_timeout_secs(
    weft_monitored_session_options_t *opts, double secs);
/* How long a non-chief waits for the chief to initialise or restore the variables (default
 * 60000 ms): then DEADLINE_EXCEEDED naming the variables still uninitialised. */
WEFT_API void weft_monitored_session_options_set_ready_timeout_ms(
    weft_monitored_session_options_t *opts, int64_t ms);

/* Creates the session over `graph` (borrowed; it must outlive the monitored session; the
 * initializer, checkpoint and readiness nodes are added to it): the chief restores the latest
 * checkpoint of the folder or runs the initializer and saves a first checkpoint; the others wait
 * until the variables are ready. The graph needs a "global_step" (weft_train_global_step). On
 * success the caller owns *out. */
WEFT_API weft_status_t *weft_monitored_session_new(weft_graph_t *graph,
                                                   const weft_monitored_session_options_t *opts,
                                                   weft_monitored_session_t **out);
/* weft_session_run with the hooks and the recovery around it. On success fetch_outputs[i]
 * receives a new reference (the caller unrefs it); on failure every fetch_outputs[i] is NULL. A
 * periodic save that fails is logged (WARNING) and tried again at the next save point; the step
 * still succeeds. */
WEFT_API weft_status_t *weft_monitored_session_run(weft_monitored_session_t *ms,
                                                   const char *const *feed_names,
                                                   weft_tensor_t *const *feeds, int n_feeds,
                                                   const char *const *fetch_names,
                                                   weft_tensor_t **fetch_outputs, int n_fetches,
                                                   const char *const *target_names, int n_targets);
/* TensorFlow's run_step_fn: `fn` runs one step its own way on the session it is given (borrowed
 * for the call; weft_sync_replicas_step, say); the hooks and the recovery work as for run (fn is
 * called again after a recovery). */
typedef weft_status_t *(*weft_monitored_step_fn)(void *user_data, weft_session_t *session);
WEFT_API weft_status_t *weft_monitored_session_run_step_fn(weft_monitored_session_t *ms,
                                                           weft_monitored_step_fn fn,
                                                           void *user_data);
WEFT_API bool weft_monitored_session_should_stop(const weft_monitored_session_t *ms);
/* The global step seen after the last step (or restored / initialised). */
WEFT_API int64_t weft_monitored_session_global_step(const weft_monitored_session_t *ms);
/* How many times the session was recreated after a lost or restarted task. */
WEFT_API int weft_monitored_session_recoveries(const weft_monitored_session_t *ms);
/* The checkpoint last saved or restored ("" if none); borrowed. */
WEFT_API const char *weft_monitored_session_last_checkpoint(const weft_monitored_session_t *ms);
/* The current session (borrowed: it changes after a recovery). */
WEFT_API weft_session_t *weft_monitored_session_session(weft_monitored_session_t *ms);
/* Saves a checkpoint now (chief with a checkpoint folder; otherwise does nothing). */
WEFT_API weft_status_t *weft_monitored_session_save(weft_monitored_session_t *ms);
/* The chief saves a final checkpoint, then the session closes. */
WEFT_API weft_status_t *weft_monitored_session_close(weft_monitored_session_t *ms);
/* closes if needed; NULL ok */
WEFT_API void weft_monitored_session_free(weft_monitored_session_t *ms);
/* Summaries (docs/tensorboard.md): every `steps` global steps the chief writes global_step/sec
 * (StepCounterHook) and the outputs of the graph's summary ops (SummarySaverHook: MergeSummary
 * nodes and *Summary nodes no MergeSummary consumes) to an event file in the checkpoint folder,
 * the placed graph once, and SessionLog START after each restore. Default 100; 0: off. Needs a
 * checkpoint folder. */
WEFT_API void weft_monitored_session_options_set_summary_steps(
    weft_monitored_session_options_t *opts, int64_t steps);
/* The chief's event file ("" when none is written); borrowed. */
WEFT_API const char *weft_monitored_session_event_file(const weft_monitored_session_t *ms);

/* ---------------------------------------------------------------------------------------------
 * Event files (docs/tensorboard.md): what TensorBoard reads. DIR/events.out.tfevents.SECS.HOST
 * holds TensorFlow's Event protobufs (core/util/event.proto) in TFRecord framing (uint64 length,
 * masked crc32c of it, data, masked crc32c of the data); the first says file_version
 * "brain.Event:2". Records are written whole with one append each and flushed every flush_secs
 * and at close, so a reader in another process sees whole records. */

typedef struct weft_event_writer weft_event_writer_t;
typedef enum weft_session_log_status {
  WEFT_SESSION_LOG_UNSPECIFIED = 0,
  WEFT_SESSION_LOG_START = 1,
  WEFT_SESSION_LOG_STOP = 2,
  WEFT_SESSION_LOG_CHECKPOINT = 3,
} weft_session_log_status_t;

/* Creates `dir` (and its parents) and a new event file in it, named with the time, the host and
 * `suffix` (may be NULL), and writes the file_version record. On success the caller owns *out
 * (weft_event_writer_free). */
WEFT_API weft_status_t *weft_event_writer_new(const char *dir, const char *suffix,
                                              weft_event_writer_t **out);
/* Flush at the first write `secs` after the last flush (default 120; 0: after every record). */
WEFT_API void weft_event_writer_set_flush_secs(weft_event_writer_t *w, double secs);
/* The file's path; borrowed for the writer's life. */
WEFT_API const char *weft_event_writer_path(const weft_event_writer_t *w);
/* A serialized Event, written as it is (bytes borrowed). */
WEFT_API weft_status_t *weft_event_writer_add_event(weft_event_writer_t *w, const void *event,
                                                    size_t len);
/* Event{wall_time, step, summary}: `summary` is a serialized Summary (a summary op's output). */
WEFT_API weft_status_t *weft_event_writer_add_summary(weft_event_writer_t *w, const void *summary,
                                                      size_t len, int64_t step);
/* A Summary of one simple_value. */
WEFT_API weft_status_t *weft_event_writer_add_scalar(weft_event_writer_t *w, const char *tag,
                                                     float value, int64_t step);
/* Event{graph_def}: a serialized GraphDef (borrowed). */
WEFT_API weft_status_t *weft_event_writer_add_graph_def(weft_event_writer_t *w,
                                                        const void *graph_def, size_t len);
/* The graph as a GraphDef whose NodeDef.device is where `session` (may be NULL) placed each node
 * (the requested device for nodes it has not run). Both borrowed. */
WEFT_API weft_status_t *weft_event_writer_add_graph(weft_event_writer_t *w,
                                                    const weft_graph_t *graph,
                                                    weft_session_t *session);
/* Event{tagged_run_metadata{tag, run_metadata}}: a serialized RunMetadata (borrowed). */
WEFT_API weft_status_t *weft_event_writer_add_run_metadata(weft_event_writer_t *w,
                                                           const char *tag,
                                                           const void *run_metadata, size_t len,
                                                           int64_t step);
/* A traced step (weft_session_run_with_options with WEFT_TRACE_FULL) as TensorFlow's
 * RunMetadata{step_stats{dev_stats{device, node_stats{node_name, all_start_micros,
 * op_end_rel_micros, all_end_rel_micros, timeline_label, thread_id}}}}, one DeviceStepStats per
 * device, in Event{tagged_run_metadata{tag, run_metadata}}: TensorBoard's graph shows each node's
 * compute time for `tag`. meta borrowed. */
WEFT_API weft_status_t *weft_event_writer_add_step_stats(weft_event_writer_t *w, const char *tag,
                                                         const weft_run_metadata_t *meta,
                                                         int64_t step);
/* Event{step, session_log{status, checkpoint_path, msg}}; msg and checkpoint_path may be NULL.
 * START at a restored step makes TensorBoard drop the later steps of the run it restarted. */
WEFT_API weft_status_t *weft_event_writer_add_session_log(weft_event_writer_t *w,
                                                          weft_session_log_status_t status,
                                                          const char *msg,
                                                          const char *checkpoint_path,
                                                          int64_t step);
WEFT_API weft_status_t *weft_event_writer_flush(weft_event_writer_t *w);
/* Flushes and closes the file; later writes fail with FAILED_PRECONDITION. */
WEFT_API weft_status_t *weft_event_writer_close(weft_event_writer_t *w);
/* closes if needed; NULL ok */
WEFT_API void weft_event_writer_free(weft_event_writer_t *w);

/* Reading records back, checking both crcs of each. */
typedef struct weft_event_reader weft_event_reader_t;
/* NOT_FOUND naming the file when it cannot be opened. The caller owns *out. */
WEFT_API weft_status_t *weft_event_reader_open(const char *path, weft_event_reader_t **out);
/* The next record's bytes in *data (borrowed until the next call), or *eof at the end. A bad crc
 * or an impossible length is DATA_LOSS and a record cut short OUT_OF_RANGE, each naming the file
 * and the record's offset; after OUT_OF_RANGE a later call tries the same record again (a file
 * still being written). */
WEFT_API weft_status_t *weft_event_reader_next(weft_event_reader_t *r, const void **data,
                                               size_t *len, bool *eof);
/* Byte offset of the record last returned. */
WEFT_API int64_t weft_event_reader_offset(const weft_event_reader_t *r);
WEFT_API void weft_event_reader_free(weft_event_reader_t *r); /* NULL ok */

typedef enum weft_summary_kind {
  WEFT_SUMMARY_NONE = 0,
  WEFT_SUMMARY_SIMPLE_VALUE = 1,
  WEFT_SUMMARY_HISTO = 2,
  WEFT_SUMMARY_IMAGE = 3,
  WEFT_SUMMARY_TENSOR = 4,
} weft_summary_kind_t;

/* One Summary.Value, decoded. Strings and arrays are owned by the array they are in. */
typedef struct weft_summary_value_info {
  char *tag;
  char *plugin_name; /* metadata.plugin_data.plugin_name, or NULL */
  weft_summary_kind_t kind;
  float simple_value;
  double histo_min, histo_max, histo_num, histo_sum, histo_sum_squares;
  int n_bucket_limits, n_buckets;
  double *bucket_limit, *bucket;
  int image_height, image_width, image_colorspace;
  size_t image_png_len;
  size_t tensor_len; /* bytes of the TensorProto */
} weft_summary_value_info_t;

/* Decodes a serialized Summary; the caller frees *values with weft_summary_values_free. */
WEFT_API weft_status_t *weft_summary_decode(const void *bytes, size_t len,
                                            weft_summary_value_info_t **values, int *n_values);
WEFT_API void weft_summary_values_free(weft_summary_value_info_t *values, int n);

/* One Event, decoded; everything is owned by it (weft_event_free). */
typedef struct weft_event {
  double wall_time;
  int64_t step;
  char *file_version;                 /* NULL if absent */
  void *graph_def;                    /* the serialized GraphDef, or NULL */
  size_t graph_def_len;
  int n_values;                       /* the summary's values */
  weft_summary_value_info_t *values;
  int session_log_status;             /* -1: no session_log; else its status */
  char *session_log_checkpoint, *session_log_msg;
  char *run_metadata_tag;             /* NULL: no tagged_run_metadata */
  void *run_metadata;                 /* its serialized RunMetadata (run_metadata_len bytes) */
  size_t run_metadata_len;
  bool has_meta_graph_def;
} weft_event_t;

/* DATA_LOSS naming the message when the bytes are not a well-formed Event. */
WEFT_API weft_status_t *weft_event_decode(const void *bytes, size_t len, weft_event_t **out);
WEFT_API void weft_event_free(weft_event_t *e); /* NULL ok */

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
