/* Internal declarations of core/src/graph: attribute values, parsed op definitions, the op
 * registry, nodes and graphs, shape inference. Shared with placement, exec, session and plugin. */
#ifndef WEFT_GRAPH_INTERNAL_H
#define WEFT_GRAPH_INTERNAL_H

#include <string.h>

#include "../base/base_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Attribute values */

typedef enum weft__attr_kind {
  WEFT_ATTR_NONE = 0,
  WEFT_ATTR_INT,
  WEFT_ATTR_FLOAT,
  WEFT_ATTR_BOOL,
  WEFT_ATTR_TYPE,
  WEFT_ATTR_STRING,
  WEFT_ATTR_SHAPE,
  WEFT_ATTR_TENSOR,
  WEFT_ATTR_FUNC, /* a function name; kept for round trips, not executable */
  WEFT_ATTR_LIST_INT,
  WEFT_ATTR_LIST_FLOAT,
  WEFT_ATTR_LIST_BOOL,
  WEFT_ATTR_LIST_TYPE,
  WEFT_ATTR_LIST_STRING,
  WEFT_ATTR_LIST_SHAPE,
  WEFT_ATTR_LIST_TENSOR,
  WEFT_ATTR_LIST_EMPTY, /* a list with no values whose element type is not known yet */
} weft__attr_kind_t;

/* A node's values are packed (see weft__attrs_pack) and then hold only the bytes their kind
 * uses: read the member of the kind, copy with weft__attr_value_copy, never by assignment. */
typedef struct weft__attr_value {
  weft__attr_kind_t kind;
  union {
    int64_t i;
    float f;
    bool b;
    weft_dtype_t type;
    weft_string_t s;      /* owned; data NUL-terminated for convenience */
    weft__shape_t shape;
    weft_tensor_t *tensor; /* owned reference */
    struct {
      size_t n;
      int64_t *i;
      float *f;
      int *b;
      weft_dtype_t *type;
      weft_string_t *s;
      weft__shape_t *shape;
      weft_tensor_t **tensor;
    } list;
  } u;
} weft__attr_value_t;

/* The host-visible attrs (weft_attrs_t in the plugin ABI): name -> weft__attr_value_t*, as an
 * array sorted by name (a node has a handful; a hash table per node cost a graph of a million
 * nodes hundreds of megabytes). */
typedef struct weft__attr_entry {
  char *name;
  weft__attr_value_t *value;
} weft__attr_entry_t;

struct weft_attrs {
  int n, cap;
  weft__attr_entry_t *entries;
  bool packed;   /* entries, values and names live in the block around this struct (a node's) */
  bool embedded; /* this struct lives in another allocation (a node's): not freed on its own */
};

weft_attrs_t *weft__attrs_new(void);
void weft__attrs_free(weft_attrs_t *attrs);
weft_attrs_t *weft__attrs_copy(const weft_attrs_t *attrs);
/* Takes ownership of value. */
void weft__attrs_set(weft_attrs_t *attrs, const char *name, weft__attr_value_t *value);
const weft__attr_value_t *weft__attrs_get(const weft_attrs_t *attrs, const char *name);
/* Removes (and frees) the attr if it is there. */
void weft__attrs_remove(weft_attrs_t *attrs, const char *name);
/* Bytes weft__attrs_pack needs for attrs (a multiple of 8). */
struct weft__op_def;
size_t weft__attrs_packed_size(const weft_attrs_t *attrs, const struct weft__op_def *def);
/* Moves attrs into `block` (8-aligned, weft__attrs_packed_size bytes) and frees what is left of
 * it; returns the packed attrs, which weft__attrs_free releases without freeing the block. Names
 * def declares point at def's copies (def must outlive the attrs, as it outlives its nodes).
 * Setting or removing an attr later gives them separate entries again. */
weft_attrs_t *weft__attrs_pack(weft_attrs_t *attrs, void *block, const struct weft__op_def *def);
weft__attr_value_t *weft__attr_value_new(weft__attr_kind_t kind);
/* A list(string) value holding copies of values[0..n). */
weft__attr_value_t *weft__attr_value_new_string_list(const char *const *values, int n);
weft__attr_value_t *weft__attr_value_copy(const weft__attr_value_t *value);
void weft__attr_value_free(weft__attr_value_t *value);
/* Sorted attribute names (for stable export); the caller frees the array, not the names. */
GPtrArray *weft__attrs_sorted_names(const weft_attrs_t *attrs);

/* ---------------------------------------------------------------------------------------------
 * Op definitions */

typedef struct weft__arg_def {
  char *name;
  weft_dtype_t fixed_type;  /* WEFT_DT_INVALID unless the type is fixed */
  char *type_attr;          /* "T" in "x: T" */
  char *number_attr;        /* "N" in "values: N * T" */
  char *type_list_attr;     /* "Tlist" in "values: Tlist" when that attr is list(type) */
  bool is_ref;
} weft__arg_def_t;

typedef struct weft__attr_def {
  char *name;
  char *type;                      /* "int", "float", "bool", "type", "string", "shape",
                                      "tensor", "func", "list(int)", "list(type)", ... */
  weft__attr_kind_t kind;           /* the value kind type stands for, parsed once: every node
                                      checks its attrs against it */
  weft__attr_value_t *default_value; /* NULL: required */
  weft_dtype_t *allowed_types;     /* for type attrs "{float, int32}"; NULL: any */
  size_t n_allowed_types;
  bool has_minimum;
  int64_t minimum;
} weft__attr_def_t;

typedef struct weft__op_def {
  char *name;
  GPtrArray *inputs;  /* weft__arg_def_t* */
  GPtrArray *outputs; /* weft__arg_def_t* */
  GPtrArray *attrs;   /* weft__attr_def_t* */
  bool is_stateful;
  weft_shape_fn shape_fn;
  char *origin;       /* "core" or the plugin file that registered it */
} weft__op_def_t;

/* Parses a weft_op_def_t (TensorFlow REGISTER_OP syntax) into a new op def. INVALID_ARGUMENT
 * naming the op and the bad spec string. */
weft_status_t *weft__op_def_parse(const weft_op_def_t *spec, const char *origin,
                                  weft__op_def_t **out);
void weft__op_def_free(weft__op_def_t *def);
/* An op registry: op definitions by name. A registry object (plugin layer) holds one, and every
 * graph borrows the one it was made in (weft_graph_new: the process's). */
typedef struct weft__op_registry weft__op_registry_t;
/* A new registry holding the standard ops (and nothing else); the caller frees it. */
weft__op_registry_t *weft__op_registry_new(void);
void weft__op_registry_free(weft__op_registry_t *reg);
/* Adds def; ALREADY_EXISTS if the name is taken. Takes ownership of def even on failure. */
weft_status_t *weft__op_registry_insert(weft__op_registry_t *reg, weft__op_def_t *def);
/* Adds to dst, borrowed, the definitions of src whose origin is `origin` (a plugin's path); src
 * must outlive dst (it is the default's). A name dst already has is skipped. */
void weft__op_registry_share_origin(weft__op_registry_t *dst, weft__op_registry_t *src,
                                    const char *origin);
/* The definition of `name` in reg, or NULL; borrowed for reg's life. */
const weft__op_def_t *weft__op_registry_find(weft__op_registry_t *reg, const char *name);
int weft__op_registry_size(weft__op_registry_t *reg);
/* The process's op registry (the default registry's ops), created with the standard ops on first
 * use; creating it loads no plugin. */
weft__op_registry_t *weft__op_registry_process(void);
/* What to run when the process registry lacks an op a graph names: the default registry's
 * one-time plugin load (set by the plugin layer when the library loads). */
void weft__op_registry_set_process_loader(void (*load)(void));
/* weft__op_registry_find, but when reg is the process registry and lacks the op, the default
 * registry is loaded once (its plugins may define it) and the op looked up again: what building
 * a node (weft_op_finish, GraphDef import) uses. A private registry never loads anything. Never
 * call it from the plugin loader. */
const weft__op_def_t *weft__op_registry_find_loading(weft__op_registry_t *reg, const char *name);
/* The process registry's add, remove (an op a failed plugin registered; tests) and lookup. */
weft_status_t *weft__op_registry_add(weft__op_def_t *def);
void weft__op_registry_remove(const char *name);
const weft__op_def_t *weft__op_registry_lookup(const char *name);
/* Creates the process registry (for tests that look ops up directly). */
void weft__ops_register_standard(void);
const weft__attr_def_t *weft__op_def_find_attr(const weft__op_def_t *def, const char *name);

/* Registration tables for the standard ops (core/src/graph/ops_*.c). Each file defines one
 * NULL-terminated array of weft_op_def_t. */
extern const weft_op_def_t weft__ops_array[];    /* ops_array.c: Const, Placeholder, Reshape ... */
extern const weft_op_def_t weft__ops_array_extra[]; /* ops_array_extra.c: ReverseV2, TopKV2 */
extern const weft_op_def_t weft__ops_math[];     /* ops_math.c: arithmetic, reductions, MatMul */
extern const weft_op_def_t weft__ops_nn[];       /* ops_nn.c: BiasAdd, Relu, Softmax ... */
extern const weft_op_def_t weft__ops_state[];    /* ops_state.c: VariableV2, Assign ... */
extern const weft_op_def_t weft__ops_control[];  /* ops_control.c: NoOp, Identity ... */
extern const weft_op_def_t weft__ops_random[];   /* ops_random.c */
extern const weft_op_def_t weft__ops_image[];    /* ops_image.c: Conv2D, MaxPool, AvgPool, PadV2 ... */
extern const weft_op_def_t weft__ops_conv[];     /* ops_conv.c: Conv3D, conv gradients ... */
extern const weft_op_def_t weft__ops_nn_grad[];  /* ops_nn_grad.c: MaxPoolGrad, FusedBatchNormGrad ... */
extern const weft_op_def_t weft__ops_imgproc[];  /* ops_imgproc.c: resizes, colour, NMS ... */
extern const weft_op_def_t weft__ops_bits[];     /* ops_bits.c: Bitcast, bitwise, special */
extern const weft_op_def_t weft__ops_special[]; /* ops_special.c: Zeta, Erfinv, Xlogy, ... */
extern const weft_op_def_t weft__ops_codec[];    /* ops_codec.c: DecodeJpeg, EncodePng ... */
extern const weft_op_def_t weft__ops_string[];   /* ops_string.c: strings, Print, files */
extern const weft_op_def_t weft__ops_nn_extra[];  /* ops_nn_extra.c: LSTMBlockCell, FakeQuant* */
extern const weft_op_def_t weft__ops_linalg[];      /* ops_linalg.c: MatrixSolve, Lu, Cholesky ... */
extern const weft_op_def_t weft__ops_svd_misc[];  /* ops_svd_misc.c: Svd, LinSpace, DiagPart ... */
extern const weft_op_def_t weft__ops_sparse[];     /* ops_sparse.c: SparseTensorDenseMatMul ... */
extern const weft_op_def_t weft__ops_control_flow[]; /* ops_control_flow.c: Switch, Merge ... */
extern const weft_op_def_t weft__ops_tensor_array[]; /* ops_tensor_array.c: TensorArrayV3 ... */
extern const weft_op_def_t weft__ops_stack[];        /* ops_stack.c: StackV2, Stack ... */
extern const weft_op_def_t weft__ops_resource_vars[]; /* ops_resource_vars.c: VarHandleOp ... */
extern const weft_op_def_t weft__ops_resource_apply[]; /* ops_resource_apply.c: ResourceApply* */
extern const weft_op_def_t weft__ops_functional[]; /* ops_functional.c: ToBool, PyFunc ... */
extern const weft_op_def_t weft__ops_parsing[]; /* ops_parsing.c: ParseExample ... */
extern const weft_op_def_t weft__ops_io[]; /* ops_io.c: DecodeCSV, ParseTensor, MatchingFiles ... */
extern const weft_op_def_t weft__ops_distributed[]; /* ops_distributed.c: _Send, _Recv */
extern const weft_op_def_t weft__ops_fused[];     /* ops_fused.c: _FusedElementwise */
extern const weft_op_def_t weft__ops_summary[];  /* ops_summary.c: ScalarSummary ... */
extern const weft_op_def_t weft__ops_ragged[]; /* ops_ragged.c: RaggedRange */
extern const weft_op_def_t weft__ops_sparse_apply[]; /* ops_sparse_apply.c: SparseApply* */
extern const weft_op_def_t weft__ops_scatter[];  /* ops_scatter.c: ScatterNd, Segment* ... */
extern const weft_op_def_t weft__ops_search[];   /* ops_search.c: ListDiff, LowerBound ... */
extern const weft_op_def_t weft__ops_einsum[];   /* ops_einsum.c: Einsum */
extern const weft_op_def_t weft__ops_ctc[];      /* ops_ctc.c: CTCLoss, CTC decoders, EditDistance */

/* The host table without its kernel-context entries (host_table.c, NULL there): logging,
 * statuses, attributes and the shape-inference context, which the standard ops' shape functions
 * use as plugins do. The full table plugins get is weft__host (plugin_internal.h). */
const weft_host_t *weft__graph_host(void);

/* ---------------------------------------------------------------------------------------------
 * Nodes and graphs */

typedef struct weft__edge {
  weft_node_t *src;
  int src_index; /* -1: control edge */
} weft__edge_t;

struct weft_node {
  weft_graph_t *graph;
  int id;                        /* creation order, index in graph->nodes */
  int n_inputs;                  /* next to id and n_outputs: no padding in a struct a big graph
                                    has a million of */
  int n_outputs;
  int output_dims_stride;        /* the highest rank of the outputs (0 if none is known) */
  char *name;
  const char *op_name;           /* def->name */
  const weft__op_def_t *def;
  char *requested_device;        /* merged device spec from scopes and weft_op_set_device, or "" */
  weft_attrs_t *attrs;
  /* Data inputs (n_inputs), flattened over the op's input args (a list arg contributes N). */
  weft__edge_t *inputs;
  weft_dtype_t *input_types;     /* expected types, + WEFT_DT_REF_OFFSET for ref args */
  int *input_arg_start;          /* per input arg: first flat index; one extra entry = n_inputs */
  GPtrArray *control_inputs;     /* weft_node_t* */
  weft_dtype_t *output_types;    /* n_outputs of them, + WEFT_DT_REF_OFFSET for ref outputs */
  /* The inferred output shapes (read them with weft__node_shape): ranks (-1: unknown), and
   * output k's dims at output_dims[k * output_dims_stride]. */
  int *output_ranks;
  int64_t *output_dims;
  int *output_arg_start;
  char *colocation_group;        /* the node named in _class "loc:@x", or NULL */
  /* The node is one allocation: this struct, inputs ... output_arg_start, attrs (packed) and
   * name (see alloc_node in graph.c). */
};

/* ---------------------------------------------------------------------------------------------
 * Device specs (device_spec.c): a graph's device scopes merge them; the placer matches them. */

/* A possibly partial device spec. NULL strings and -1 numbers are unset. type is upper case; the
 * legacy "/gpu:N" and "/cpu:N" forms parse to type "GPU" / "CPU". */
typedef struct weft__device_spec {
  char *job;
  int replica;
  int task;
  char *type;
  int id;
} weft__device_spec_t;

void weft__device_spec_init(weft__device_spec_t *spec);  /* all unset */
void weft__device_spec_clear(weft__device_spec_t *spec); /* frees strings, back to unset */
void weft__device_spec_copy(weft__device_spec_t *dst, const weft__device_spec_t *src);
/* Accepts "", "/job:ps/replica:0/task:1/device:GPU:0", "/job:ps/task:0/cpu:0", "/gpu:1",
 * "/device:VULKAN:0", "/device:CPU:*", "CPU:0", "cpu:0". INVALID_ARGUMENT quoting the spec and the
 * part that does not parse. */
weft_status_t *weft__device_spec_parse(const char *text, weft__device_spec_t *out);
/* Fields set in `inner` replace those in `base` (TensorFlow's nested device scopes). */
void weft__device_spec_merge(weft__device_spec_t *base, const weft__device_spec_t *inner);
/* Canonical string "/job:ps/replica:0/task:0/device:CPU:0" with unset parts left out; g_free(). */
char *weft__device_spec_to_string(const weft__device_spec_t *spec);
/* True if no field set in both differs. */
bool weft__device_spec_compatible(const weft__device_spec_t *a, const weft__device_spec_t *b);

typedef struct weft__device_scope {
  char *spec;       /* NULL when fn is set */
  weft_device_fn fn;
  void *user_data;
} weft__device_scope_t;

struct weft_graph {
  GMutex lock;
  GPtrArray *nodes;          /* weft_node_t*, owned */
  GHashTable *by_name;       /* the nodes, a set hashed by name (graph.c: node_by_name) */
  GHashTable *name_counts;   /* base name -> next suffix, for unique names */
  GPtrArray *name_scopes;    /* char* full prefixes */
  GPtrArray *device_scopes;  /* weft__device_scope_t* */
  GPtrArray *control_scopes; /* GPtrArray* of weft_node_t* */
  GPtrArray *colocate_stack; /* weft_node_t* */
  weft__op_registry_t *ops;  /* borrowed: the registry the graph was made in outlives it */
  GPtrArray *initializers;   /* weft_node_t*: the global variables collection's initializers */
  gint version;              /* bumps on every node added, for sessions to notice growth */
  GPtrArray *trainable;      /* weft_node_t*: VariableV2 nodes of weft_variable (the trainable
                                variables collection), in creation order */
  const weft_attrs_t *building_attrs; /* while device scopes are resolved for a new node: its
                                         attrs (for device functions that look at dtype/shape,
                                         e.g. the replica device setter); NULL otherwise */
};

/* A new graph whose ops come from `ops` (borrowed: it must outlive the graph); weft_graph_new
 * uses the process's. */
weft_graph_t *weft__graph_new_in(weft__op_registry_t *ops);

/* Parses `text` ("name = value" of an attr of def, e.g. "beta" and "1.5", "perm" and "[1,0]")
 * as def's attr type. *out is the caller's (weft__attr_value_free). INVALID_ARGUMENT naming the
 * op, attr and text (graph_helpers.c). */
weft_status_t *weft__attr_parse_value(const weft__op_def_t *def, const char *name,
                                      const char *text, weft__attr_value_t **out);

/* Sets attr `name` of a node under construction from an internal value (graph_helpers.c). */
void weft__op_builder_set_attr_value(weft_op_builder_t *b, const char *name,
                                     const weft__attr_value_t *value);

/* Adds a fully formed node (used by import): validates inputs against the op def, fills
 * input/output types, runs shape inference. Takes nothing; copies what it needs. */
weft_status_t *weft__graph_add_node(weft_graph_t *graph, const char *name, const char *op,
                                    const weft__edge_t *inputs, int n_inputs,
                                    weft_node_t *const *control_inputs, int n_control,
                                    const char *device, const weft_attrs_t *attrs,
                                    weft_node_t **out);
/* Range [*start, *end) of flat inputs for input arg `arg_name`; false if there is no such arg. */
bool weft__node_input_arg_range(const weft_node_t *node, const char *arg_name, int *start,
                                int *end);
bool weft__node_output_arg_range(const weft_node_t *node, const char *arg_name, int *start,
                                 int *end);
/* Runs the op's shape function for a node whose inputs are set, into shapes[n_outputs]. */
weft_status_t *weft__node_infer_shapes(weft_node_t *node, weft__shape_t *shapes);

/* Output `index`'s inferred shape (rank -1: unknown); dims past the rank are 0. */
static inline weft__shape_t weft__node_shape(const weft_node_t *node, int index) {
  weft__shape_t s;
  memset(&s, 0, sizeof s);
  s.rank = node->output_ranks[index];
  const int64_t *dims = node->output_dims + (size_t)index * (size_t)node->output_dims_stride;
  for (int k = 0; k < s.rank; k++) s.dims[k] = dims[k];
  return s;
}
/* Removes nodes added after the graph had n_nodes nodes (undo of a failed import). */
void weft__graph_truncate(weft_graph_t *graph, int n_nodes);

/* Shape-inference services behind the host table's shape_* entries (shape_infer.c). */
struct weft_shape_ctx {
  weft_node_t *node;
  weft__shape_t *shapes; /* the node's output shapes being inferred */
};
const weft_attrs_t *weft__shape_attrs(weft_shape_ctx_t *ctx);
const char *weft__shape_node_name(weft_shape_ctx_t *ctx);
int weft__shape_num_inputs(weft_shape_ctx_t *ctx);
int weft__shape_input(weft_shape_ctx_t *ctx, int index, int64_t dims[WEFT_MAX_RANK]);
weft_dtype_t weft__shape_input_dtype(weft_shape_ctx_t *ctx, int index);
weft_status_t *weft__shape_input_const(weft_shape_ctx_t *ctx, int index, weft_tensor_view_t *out);
weft_status_t *weft__shape_set_output(weft_shape_ctx_t *ctx, int index, int rank,
                                      const int64_t *dims);
/* The constant value of a node's output when it is known at build time (Const), else NULL.
 * Borrowed from the node. */
const weft_tensor_t *weft__node_constant_output(const weft_node_t *node, int index);

#endif /* WEFT_GRAPH_INTERNAL_H */
