/* plugin_common.h: what the CPU and the Vulkan plugin share (plugins/common, a static library
 * linked into each): the host table and errors that name the node, dtype sizes and names, input
 * and host-memory integer readers, attribute defaults, kernel registration, the shape logic of
 * the kernels both plugins implement (broadcasting, reduction axes, ArgMax, MatMul, BiasAdd,
 * AddN, Select, Tile, Pad, Fill), the kernels that need no device code at all (Const, Identity,
 * NoOp, Reshape, ExpandDims, Squeeze, Shape, Size, Rank), and the kernels whose few device steps
 * a plugin hands in as a table (the variables: weft_pc_state_ops_t; Transpose, BroadcastTo,
 * Slice, Concat, Pack, Split, Unpack: weft_pc_array_ops_t). Each plugin keeps only what is
 * specific to its device: the CPU loops, the Vulkan shader dispatch.
 *
 * Like the plugins, it sees only the SDK headers and libc: no libweft, no GLib. Names start with
 * weft_pc_. The library is built with hidden visibility, so every plugin carries its own copy,
 * weft_pc_host included, and nothing of it is exported from the plugin.
 *
 * Errors: every function returning weft_status_t * returns NULL on success or a new status owned
 * by the caller, whose message names the kernel's node (and keeps the wording the kernels used
 * before they shared it: tests and conformance cases match these messages). */
#ifndef WEFT_PLUGIN_COMMON_H
#define WEFT_PLUGIN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/plugin.h"
#include "weft/types.h"

/* The host table handed to the plugin's init, which stores it here right after
 * WEFT_PLUGIN_INIT (weft/plugin.h) checked the host and registrar tables; valid for the life of
 * the process once the plugin loaded. */
extern const weft_host_t *weft_pc_host;

/* The start of every plugin's init: *plugin_state = NULL, WEFT_PLUGIN_INIT's table checks
 * (returning its error; `who` names the plugin in it), then weft_pc_host = host. */
#define WEFT_PC_PLUGIN_INIT(host, registrar, plugin_state, who) \
  do {                                                          \
    *(plugin_state) = NULL;                                     \
    WEFT_PLUGIN_INIT(host, registrar, who);                     \
    weft_pc_host = (host);                                      \
  } while (0)

/* Registers a plugin's kernels: each of fns[0..n) with the registrar, in order, stopping at the
 * first error. WEFT_PC_REGISTER_ALL(registrar, fn, ...) lists them in place. */
typedef weft_status_t *(*weft_pc_register_fn)(const weft_registrar_t *registrar);
weft_status_t *weft_pc_register_all(const weft_registrar_t *registrar,
                                    const weft_pc_register_fn *fns, size_t n);
#define WEFT_PC_REGISTER_ALL(registrar, ...)                                       \
  weft_pc_register_all((registrar), (const weft_pc_register_fn[]){__VA_ARGS__}, \
                       sizeof((const weft_pc_register_fn[]){__VA_ARGS__}) /        \
                           sizeof(weft_pc_register_fn))

/* The plugin's info table (ABI of this SDK, no shutdown) and its exported weft_plugin_entry. */
#define WEFT_PC_PLUGIN_ENTRY(plugin_name, plugin_version, init_fn)                                 \
  static const weft_plugin_info_t weft_pc_plugin_info = {                                          \
      .struct_size = sizeof(weft_plugin_info_t),                                                   \
      .abi_major = WEFT_ABI_MAJOR,                                                                 \
      .abi_minor = WEFT_ABI_MINOR,                                                                 \
      .name = (plugin_name),                                                                       \
      .version = (plugin_version),                                                                 \
      .init = (init_fn),                                                                           \
      .shutdown = NULL,                                                                            \
  };                                                                                               \
  WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);                            \
  WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void) {                           \
    return &weft_pc_plugin_info;                                                                   \
  }

/* ---------------------------------------------------------------------------------------------
 * dtypes */

/* Bytes per element: sizeof(weft_string_t) for strings, 0 for a dtype the plugins do not know. */
size_t weft_pc_dtype_size(weft_dtype_t dtype);
/* "float32", "int64", ...; "invalid" for an unknown dtype. */
const char *weft_pc_dtype_name(weft_dtype_t dtype);
bool weft_pc_dtype_is_float(weft_dtype_t dtype); /* float, double, half, bfloat16 */
bool weft_pc_dtype_is_int(weft_dtype_t dtype);   /* signed or unsigned integers */

/* ---------------------------------------------------------------------------------------------
 * Errors */

/* "node 'name': message" (just the message outside a kernel invocation, ctx NULL). */
weft_status_t *weft_pc_error(weft_kernel_ctx_t *ctx, weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "[2,3]" into buf (always NUL-terminated); returns buf. */
const char *weft_pc_shape_str(int rank, const int64_t *dims, char *buf, size_t len);
#define WEFT_PC_SHAPE_STR_LEN 200
/* The shapes of two tensors as strings, for the messages that compare them. */
typedef struct weft_pc_shape_pair {
  char a[WEFT_PC_SHAPE_STR_LEN], b[WEFT_PC_SHAPE_STR_LEN];
} weft_pc_shape_pair_t;
void weft_pc_shape_pair(weft_pc_shape_pair_t *p, const weft_tensor_view_t *a,
                        const weft_tensor_view_t *b);

/* ---------------------------------------------------------------------------------------------
 * Inputs, outputs and attributes */

weft_status_t *weft_pc_input(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out);
weft_status_t *weft_pc_output(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype, int rank,
                              const int64_t *dims, weft_tensor_view_t *out);
/* Element i of an integer tensor in host memory (index arguments may be any integer type); 0 for
 * another dtype. */
int64_t weft_pc_index_at(const weft_tensor_view_t *v, int64_t i);
/* Reads an integer tensor (host memory, any rank) of at most max_n elements into out;
 * INVALID_ARGUMENT naming `what` for another dtype or too many elements. */
weft_status_t *weft_pc_read_indices(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                    const char *what, int64_t *out, int64_t max_n, int64_t *n);
/* A scalar (or one-element) integer tensor. */
weft_status_t *weft_pc_read_scalar_index(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                         const char *what, int64_t *out);
/* Canonicalises axis in [-rank, rank) to [0, rank); INVALID_ARGUMENT naming `what` otherwise. */
weft_status_t *weft_pc_axis(weft_kernel_ctx_t *ctx, int64_t axis, int rank, const char *what,
                            int *out);
/* An axis argument: a scalar integer tensor, canonicalised for a tensor of `rank`. */
weft_status_t *weft_pc_read_axis(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v, int rank,
                                 const char *what, int *out);
/* Inputs 0..n-1 into in[0..n). */
weft_status_t *weft_pc_inputs(weft_kernel_ctx_t *ctx, int n, weft_tensor_view_t *in);
/* Input 0 into *x and the integer vector input 1 (host memory, `what`) into vals[0..*n). */
weft_status_t *weft_pc_tensor_and_ints(weft_kernel_ctx_t *ctx, weft_tensor_view_t *x,
                                       const char *what, int64_t *vals, int64_t max_n, int64_t *n);
/* Attribute readers: dflt when the attribute is absent or has another type. */
bool weft_pc_attr_bool(weft_kernel_ctx_t *ctx, const char *name, bool dflt);
int64_t weft_pc_attr_int(weft_kernel_ctx_t *ctx, const char *name, int64_t dflt);
float weft_pc_attr_float(weft_kernel_ctx_t *ctx, const char *name, float dflt);
/* A type attribute: dflt when absent; a status when it has another type. */
weft_status_t *weft_pc_attr_type(weft_kernel_ctx_t *ctx, const char *name, weft_dtype_t dflt,
                                 weft_dtype_t *out);
/* Row-major element strides of a dense tensor of this shape. */
void weft_pc_contiguous_strides(int rank, const int64_t *dims, int64_t *strides);
bool weft_pc_same_shape(const weft_tensor_view_t *a, const weft_tensor_view_t *b);
/* Allocates host-memory output `index` (Shape, Size, ...) as int32 or int64 holding values[0..n)
 * with shape [n] (rank 1) or [] (rank 0, n = 1); INVALID_ARGUMENT when a value does not fit
 * int32. */
weft_status_t *weft_pc_write_ints(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype, int rank,
                                  const int64_t *values, int64_t n);

/* ---------------------------------------------------------------------------------------------
 * Registration */

/* One kernel with at most one type constraint (the field order is the CPU plugin's historical
 * weft_cpu_kernel_spec_t, which some tables fill positionally). */
typedef struct weft_pc_kernel_spec {
  const char *op;
  weft_kernel_compute_fn compute;
  const char *type_attr; /* NULL: no constraint */
  const weft_dtype_t *dtypes;
  size_t n_dtypes;
  const char *const *host_memory; /* NULL-terminated or NULL */
  weft_kernel_create_fn create;
  weft_kernel_destroy_fn destroy;
  void *user_data;
} weft_pc_kernel_spec_t;

/* Registers one kernel for device_type; the registrar's refusal is returned as is. */
weft_status_t *weft_pc_register_full(const weft_registrar_t *reg, const char *device_type,
                                     const char *op, const weft_type_constraint_t *constraints,
                                     size_t n_constraints, const char *const *host_memory,
                                     weft_kernel_create_fn create, weft_kernel_compute_fn compute,
                                     weft_kernel_destroy_fn destroy, void *user_data);
weft_status_t *weft_pc_register(const weft_registrar_t *reg, const char *device_type,
                                const weft_pc_kernel_spec_t *spec);
/* Op `op` computed by `compute` (no create or destroy) with user_data, constrained on "T" to
 * dtypes[0..n_dtypes), or unconstrained when dtypes is NULL. */
weft_status_t *weft_pc_register_typed(const weft_registrar_t *reg, const char *device_type,
                                      const char *op, weft_kernel_compute_fn compute,
                                      const char *const *host_memory, void *user_data,
                                      const weft_dtype_t *dtypes, size_t n_dtypes);

/* ---------------------------------------------------------------------------------------------
 * Training updates (ApplyGradientDescent, ApplyAdam, ...) */

/* Reads and checks the operands every update checks: refs[0..n_refs) the variable and its slots
 * (reference inputs 0..n_refs-1), *grad input grad_input. The variable must be float32 or float64
 * (UNIMPLEMENTED "<op> has no <device> kernel for <dtype>"); the slots and the gradient ("delta"
 * when sgd) must have its dtype and shape. */
weft_status_t *weft_pc_train_operands(weft_kernel_ctx_t *ctx, const char *op, const char *device,
                                      int n_refs, int grad_input, bool sgd,
                                      weft_tensor_view_t *refs, weft_tensor_view_t *grad);

/* Reads scalar input `index` (named `name` in messages) into *out; it must be a rank-0 tensor of
 * dtype (INVALID_ARGUMENT "<name> is not a <dtype> scalar: <its dtype> <its shape>"). */
weft_status_t *weft_pc_train_scalar(weft_kernel_ctx_t *ctx, int index, const char *name,
                                    weft_dtype_t dtype, weft_tensor_view_t *out);

/* The update ops every backend registers, in registration order, with TensorFlow's inputs. */
typedef enum weft_pc_train_kind {
  WEFT_PC_TRAIN_SGD = 0,  /* scalars: alpha */
  WEFT_PC_TRAIN_MOMENTUM, /* lr, momentum */
  WEFT_PC_TRAIN_ADAGRAD,  /* lr */
  WEFT_PC_TRAIN_ADAM,     /* beta1_power, beta2_power, lr, beta1, beta2, epsilon */
  WEFT_PC_TRAIN_RMSPROP,  /* lr, rho, momentum, epsilon */
  /* The CPU plugin's only (past WEFT_PC_TRAIN_N_OPS): */
  WEFT_PC_TRAIN_ADAGRAD_V2,       /* lr, epsilon */
  WEFT_PC_TRAIN_CENTERED_RMSPROP, /* lr, rho, momentum, epsilon */
  WEFT_PC_TRAIN_ADADELTA,         /* lr, rho, epsilon */
} weft_pc_train_kind_t;

#define WEFT_PC_TRAIN_N_OPS 5

#define WEFT_PC_TRAIN_MAX_SCALARS 6

typedef struct weft_pc_train_op {
  const char *name;
  weft_pc_train_kind_t kind;
  int n_refs;                                   /* var and slots: inputs [0, n_refs) */
  int scalars[WEFT_PC_TRAIN_MAX_SCALARS];       /* input indices, in the kernel's order; -1 ends */
  const char *names[WEFT_PC_TRAIN_MAX_SCALARS]; /* their names, for messages */
  int grad_input;                               /* index of grad (or delta) */
  /* The same update on resource variables (TensorFlow's ResourceApply*: the same inputs with
   * handles for the refs, no output); NULL where a backend registers the ref op only. */
  const char *resource_name;
} weft_pc_train_op_t;

extern const weft_pc_train_op_t weft_pc_train_ops[WEFT_PC_TRAIN_N_OPS];

/* An update's operands: refs[0] the variable, refs[1..n_refs) its slots, the gradient, and the
 * scalars[0..n_scalars) in the op's order. */
typedef struct weft_pc_train_in {
  weft_tensor_view_t refs[4], grad;
  int n_scalars;
  weft_tensor_view_t scalars[WEFT_PC_TRAIN_MAX_SCALARS];
} weft_pc_train_in_t;

/* weft_pc_train_operands, then weft_pc_train_scalar for each of op's scalars (the variable's
 * dtype), in order; the first error is returned. */
weft_status_t *weft_pc_train_read(weft_kernel_ctx_t *ctx, const weft_pc_train_op_t *op,
                                  const char *device, weft_pc_train_in_t *in);

/* The compute function of an update op (user_data: its weft_pc_train_op_t): `update` under the
 * variable's lock when use_locking (only the variable's: the host's ref locks need not be
 * re-entrant, and a variable's slots are only ever touched by its own update ops), then the
 * variable's reference forwarded to output 0 (none for a ResourceApply* op, which has no output:
 * the host resolves its handle inputs to the variables they name). */
typedef weft_status_t *(*weft_pc_train_update_fn)(weft_kernel_ctx_t *ctx,
                                                  const weft_pc_train_op_t *op);
weft_status_t *weft_pc_train_compute(weft_kernel_ctx_t *ctx, const weft_pc_train_op_t *op,
                                     weft_pc_train_update_fn update);

/* ---------------------------------------------------------------------------------------------
 * Broadcasting (TensorFlow/numpy rules) of up to 3 operands, collapsed so that runs of dims with
 * the same broadcast pattern merge. Dims of size 1 in the output are dropped; the result always
 * has rank >= 1 (a scalar output is rank 1 of size 1). */

#define WEFT_PC_BCAST_MAX_IN 3
typedef struct weft_pc_bcast {
  int n_in;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t strides[WEFT_PC_BCAST_MAX_IN][WEFT_MAX_RANK]; /* in elements; 0 on broadcast dims */
  int64_t out_elements;
  /* The full (uncollapsed) output shape. */
  int out_rank;
  int64_t out_dims[WEFT_MAX_RANK];
} weft_pc_bcast_t;

/* INVALID_ARGUMENT "Incompatible shapes: [..] vs. [..]" when they do not broadcast. */
weft_status_t *weft_pc_bcast_init(weft_kernel_ctx_t *ctx, weft_pc_bcast_t *b, int n_in,
                                  const int *ranks, const int64_t *const *dims);
/* The same over the shapes of tensor views. */
weft_status_t *weft_pc_bcast_views(weft_kernel_ctx_t *ctx, weft_pc_bcast_t *b, int n_in,
                                   const weft_tensor_view_t *const *ins);
/* SelectV2, ClipByValue: inputs 0..2 into in[0..3), broadcast together into *bc, and output 0
 * allocated as *z with the broadcast shape and the dtype of input `like`. */
weft_status_t *weft_pc_bcast3_prepare(weft_kernel_ctx_t *ctx, weft_tensor_view_t *in, int like,
                                      weft_pc_bcast_t *bc, weft_tensor_view_t *z);
/* Element offsets of each input at the start of collapsed row `row` (a row is the innermost
 * collapsed dim). */
void weft_pc_bcast_row_offsets(const weft_pc_bcast_t *b, int64_t row, int64_t *offsets);
/* Row length and number of rows. */
static inline int64_t weft_pc_bcast_inner(const weft_pc_bcast_t *b) {
  return b->dims[b->rank - 1];
}
static inline int64_t weft_pc_bcast_rows(const weft_pc_bcast_t *b) {
  int64_t inner = b->dims[b->rank - 1];
  return inner == 0 ? 0 : b->out_elements / inner;
}

/* ---------------------------------------------------------------------------------------------
 * Reductions */

/* What Sum, Mean, Max ... compute, read from input x and the axes tensor (reduction_indices) and
 * the keep_dims attribute. */
typedef struct weft_pc_reduction {
  bool reduced[WEFT_MAX_RANK]; /* dims of x folded away */
  int out_rank;
  int64_t out_dims[WEFT_MAX_RANK];
  int64_t count; /* elements folded into each output */
} weft_pc_reduction_t;
weft_status_t *weft_pc_reduction_axes(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                      const weft_tensor_view_t *axes_v, weft_pc_reduction_t *r);
/* The same for a reduction kernel whose input 0 is x (already read): reads the axes (input 1)
 * and allocates output 0, y, in x's dtype. */
weft_status_t *weft_pc_reduction_prepare(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                         weft_pc_reduction_t *r, weft_tensor_view_t *y);

/* x's dims as alternating runs of kept and reduced dims (size-1 dims belong to neither). */
typedef struct weft_pc_reduce_groups {
  int n;
  bool red[WEFT_MAX_RANK];
  int64_t size[WEFT_MAX_RANK];
  bool any_reduced;
} weft_pc_reduce_groups_t;
void weft_pc_reduce_groups(const weft_tensor_view_t *x, const bool *reduced,
                           weft_pc_reduce_groups_t *g);
/* The gather that moves the kept runs first and the reduced runs last (a [kept, red] matrix whose
 * rows reduce contiguously): sizes and element strides over the source; returns their count. */
int weft_pc_reduce_regroup(const weft_pc_reduce_groups_t *g, int64_t *sizes, int64_t *strides,
                           int64_t *kept, int64_t *red);

/* How a device with row and column reduction kernels reduces groups g in which something is
 * reduced (g->any_reduced): ROWS reduces `rows` contiguous runs of `len` elements; COLS reduces
 * the middle dim of an [outer, mid, inner] layout, chosen unless its outputs are few
 * (outer * inner < WEFT_PC_COLS_FEW_OUTPUTS) and its runs long (mid >= WEFT_PC_COLS_LONG_RUN),
 * where regrouping gives more parallel work; REGROUP gathers x with weft_pc_reduce_regroup
 * (rank, sizes, strides) into a scratch [rows = kept, len = red] matrix, then reduces its rows. */
#define WEFT_PC_COLS_FEW_OUTPUTS 4096
#define WEFT_PC_COLS_LONG_RUN 1024
typedef enum weft_pc_reduce_kind {
  WEFT_PC_REDUCE_ROWS = 0,
  WEFT_PC_REDUCE_COLS,
  WEFT_PC_REDUCE_REGROUP,
} weft_pc_reduce_kind_t;
typedef struct weft_pc_reduce_plan {
  weft_pc_reduce_kind_t kind;
  int64_t rows, len;          /* ROWS, REGROUP */
  int64_t outer, mid, inner;  /* COLS */
  int rank;                   /* REGROUP: the gather */
  int64_t sizes[WEFT_MAX_RANK], strides[WEFT_MAX_RANK];
} weft_pc_reduce_plan_t;
void weft_pc_reduce_plan(const weft_pc_reduce_groups_t *g, weft_pc_reduce_plan_t *p);

/* ArgMax / ArgMin: input x and the axis (input "dimension"); the output_type attribute
 * (default int64) is the plugin's to vet before weft_pc_arg_shape views x as [outer, n, inner]
 * (INVALID_ARGUMENT when the axis is empty). */
typedef struct weft_pc_arg {
  weft_tensor_view_t x;
  int axis;
  weft_dtype_t out_dtype;
  int64_t outer, n, inner;
  int out_rank;
  int64_t out_dims[WEFT_MAX_RANK];
} weft_pc_arg_t;
weft_status_t *weft_pc_arg_plan(weft_kernel_ctx_t *ctx, weft_pc_arg_t *a);
weft_status_t *weft_pc_arg_shape(weft_kernel_ctx_t *ctx, weft_pc_arg_t *a);

/* ---------------------------------------------------------------------------------------------
 * MatMul, BatchMatMul, BiasAdd, AddN, Select */

/* MatMul: C[m,n] = op(A)[m,k] op(B)[k,n] from inputs a and b and the transpose_a / transpose_b
 * attrs; c is output 0, allocated [m, n]. */
typedef struct weft_pc_matmul {
  weft_tensor_view_t a, b, c;
  bool ta, tb;
  int64_t m, n, k;
} weft_pc_matmul_t;
weft_status_t *weft_pc_matmul_prepare(weft_kernel_ctx_t *ctx, weft_pc_matmul_t *mm);

/* BatchMatMul: inputs x and y, whose batch dims (all but the last two) broadcast against each
 * other (equal_batch: BatchMatMul v1, which needs them equal); adj_x / adj_y attrs; z is output
 * 0, allocated [batch..., m, n]. */
typedef struct weft_pc_batch_matmul {
  weft_tensor_view_t x, y, z;
  bool adj_x, adj_y;
  int64_t m, n, k;
  weft_pc_bcast_t bc; /* over the batch dims: input 0 is x, 1 is y */
} weft_pc_batch_matmul_t;
weft_status_t *weft_pc_batch_matmul_prepare(weft_kernel_ctx_t *ctx, bool equal_batch,
                                            weft_pc_batch_matmul_t *bm);

/* The data_format attribute: true for NCHW (channels second), false for NHWC or absent. */
weft_status_t *weft_pc_data_format_nchw(weft_kernel_ctx_t *ctx, bool *nchw);
/* BiasAdd: inputs x and bias, checked, and output 0, y, allocated like x; cdim is the channel
 * dim of x the bias runs along. */
typedef struct weft_pc_bias_add {
  weft_tensor_view_t x, bias, y;
  int cdim;
} weft_pc_bias_add_t;
weft_status_t *weft_pc_bias_add_prepare(weft_kernel_ctx_t *ctx, weft_pc_bias_add_t *b);
/* BiasAddGrad's checks; reduced[d] marks every dim of g but the channel dim *cdim. */
weft_status_t *weft_pc_bias_grad_shape(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *g,
                                       int *cdim, bool *reduced);

/* A binary op's inputs 0 and 1, which must have one dtype (`op` names the op in the error). */
weft_status_t *weft_pc_binary_inputs(weft_kernel_ctx_t *ctx, const char *op, weft_tensor_view_t *x,
                                     weft_tensor_view_t *y);

/* AddN: *n inputs (at least one), input 0 in *first. */
weft_status_t *weft_pc_addn_first(weft_kernel_ctx_t *ctx, int *n, weft_tensor_view_t *first);
/* Input k of AddN, which must match input 0's shape and dtype. */
weft_status_t *weft_pc_addn_input(weft_kernel_ctx_t *ctx, int k, const weft_tensor_view_t *first,
                                  weft_tensor_view_t *v);

/* Select (v1): 'then' and 'else' alike, and the condition one of these. */
typedef enum weft_pc_select_cond {
  WEFT_PC_SELECT_SAME = 0, /* the shape of 'then': elementwise */
  WEFT_PC_SELECT_SCALAR,   /* picks a whole tensor */
  WEFT_PC_SELECT_ROWS,     /* a vector along dim 0: picks whole rows */
} weft_pc_select_cond_t;
weft_status_t *weft_pc_select_check(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *c,
                                    const weft_tensor_view_t *t, const weft_tensor_view_t *e,
                                    weft_pc_select_cond_t *kind);

/* SoftmaxCrossEntropyWithLogits and its sparse form: logits x (input 0), labels (input 1), and
 * outputs 0 (loss, [rows]) and 1 (backprop, [rows, n]) allocated in x's dtype. Dense: x and the
 * labels are rank 1 (one row) or 2 with n classes each, a single row broadcasting against many;
 * x_rstride / l_rstride step a row (0 for a broadcast one). Sparse: x is [rows, n] and the labels
 * int32 or int64 [rows], each checked to lie in [0, n) (so they must be in host memory);
 * l_rstride is 0. */
typedef struct weft_pc_xent {
  weft_tensor_view_t x, labels, loss, backprop;
  int64_t rows, n, x_rstride, l_rstride;
} weft_pc_xent_t;
weft_status_t *weft_pc_xent_prepare(weft_kernel_ctx_t *ctx, weft_pc_xent_t *xe);
weft_status_t *weft_pc_sparse_xent_prepare(weft_kernel_ctx_t *ctx, weft_pc_xent_t *xe);

/* ---------------------------------------------------------------------------------------------
 * Data movement: what to move where. Each plan reads the kernel's inputs itself. */

/* Tile: output 0, y, allocated with x's dims times the multiples. */
typedef struct weft_pc_tile {
  weft_tensor_view_t x, y;
  int64_t multiples[WEFT_MAX_RANK];
} weft_pc_tile_t;
weft_status_t *weft_pc_tile_prepare(weft_kernel_ctx_t *ctx, weft_pc_tile_t *t);

/* Pad, PadV2: x lands at offset before[d] along each dim of output 0, y (allocated). The constant
 * of PadV2 (input 2) is the plugin's to read. For a strided copy: x starts at element `offset`
 * of y, whose contiguous strides are out_strides (x's own are in_strides). */
typedef struct weft_pc_pad {
  weft_tensor_view_t x, y;
  int64_t before[WEFT_MAX_RANK];
  int64_t offset;
  int64_t out_strides[WEFT_MAX_RANK], in_strides[WEFT_MAX_RANK];
} weft_pc_pad_t;
weft_status_t *weft_pc_pad_prepare(weft_kernel_ctx_t *ctx, weft_pc_pad_t *p);

/* Fill: the scalar `value` and output 0 allocated with the shape input "dims". */
typedef struct weft_pc_fill {
  weft_tensor_view_t value, y;
} weft_pc_fill_t;
weft_status_t *weft_pc_fill_prepare(weft_kernel_ctx_t *ctx, weft_pc_fill_t *f);

/* The data-movement kernels below (plugins/common/array_kernels.c) own the shapes and checks; a
 * plugin registers them with a pointer to its table of device steps as user_data. */

/* Transpose, BroadcastTo, Slice: output element at coordinate c (row-major over dims) is element
 * base + sum(c[d] * strides[d]) of x. The output shape is [rank, dims]. */
typedef struct weft_pc_view {
  weft_tensor_view_t x;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t strides[WEFT_MAX_RANK];
  int64_t base;
  bool expands; /* the output may hold more elements than x (BroadcastTo) */
} weft_pc_view_t;

/* ConcatV2, Concat and Pack: ins[0..n) joined along `axis` of the output (Pack: stacked along a
 * new one, new_axis). */
typedef struct weft_pc_concat {
  weft_tensor_view_t *ins;
  int n;
  bool new_axis;
  int axis;
  int out_rank;
  int64_t out_dims[WEFT_MAX_RANK];
} weft_pc_concat_t;

/* Split, SplitV and Unpack: output i takes sizes[i] slices of x along axis, in order (Unpack:
 * one slice each, the axis dropped). */
typedef struct weft_pc_split {
  weft_tensor_view_t x;
  int axis;
  int n;
  int64_t *sizes;
  bool drop_axis;
} weft_pc_split_t;
/* The shape of output i; returns its rank. */
int weft_pc_split_part_dims(const weft_pc_split_t *s, int i, int64_t *dims);

/* A device's strided copy: dims elements (row-major over rank dims) from in + in_off stepping by
 * in_strides to out + out_off stepping by out_strides (NULL: contiguous). Offsets and strides
 * are in elements. */
typedef weft_status_t *(*weft_pc_copy_strided_fn)(weft_kernel_ctx_t *ctx, void *out,
                                                  int64_t out_off, const int64_t *out_strides,
                                                  const void *in, int64_t in_off,
                                                  const int64_t *in_strides, weft_dtype_t dtype,
                                                  int rank, const int64_t *dims);
/* The concat and split steps of weft_pc_array_ops_t for a device whose copies are strided:
 * one copy per non-empty part. */
weft_status_t *weft_pc_concat_strided(weft_kernel_ctx_t *ctx, const weft_pc_concat_t *c,
                                      const weft_tensor_view_t *y, weft_pc_copy_strided_fn copy);
weft_status_t *weft_pc_split_strided(weft_kernel_ctx_t *ctx, const weft_pc_split_t *s,
                                     const weft_tensor_view_t *ys, weft_pc_copy_strided_fn copy);

typedef struct weft_pc_array_ops {
  /* Transpose, BroadcastTo, Slice: y (allocated with the view's shape, not empty) = the view of
   * v->x. `op` names the kernel ("Transpose"). */
  weft_status_t *(*gather)(weft_kernel_ctx_t *ctx, const weft_pc_view_t *v,
                           const weft_tensor_view_t *y, const char *op);
  /* ConcatV2, Concat, Pack: y (allocated, not empty) = the inputs joined. `op` is "ConcatOp" or
   * "Pack". */
  weft_status_t *(*concat)(weft_kernel_ctx_t *ctx, const weft_pc_concat_t *c,
                           const weft_tensor_view_t *y, const char *op);
  /* Split, SplitV, Unpack: fills each output ys[i] (allocated with weft_pc_split_part_dims's
   * shape; some may be empty). */
  weft_status_t *(*split)(weft_kernel_ctx_t *ctx, const weft_pc_split_t *s,
                          const weft_tensor_view_t *ys);
} weft_pc_array_ops_t;

weft_status_t *weft_pc_k_transpose(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_broadcast_to(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_slice(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_concat_v2(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_concat_v1(weft_kernel_ctx_t *ctx, void *state); /* Concat */
weft_status_t *weft_pc_k_pack(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_split(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_split_v(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_unpack(weft_kernel_ctx_t *ctx, void *state);

/* ---------------------------------------------------------------------------------------------
 * Kernels with no device code (register them with any dtype constraint; user_data unused). */

weft_status_t *weft_pc_k_const(weft_kernel_ctx_t *ctx, void *state);
/* Output i is input i with no copy: Identity, StopGradient, IdentityN, ... */
weft_status_t *weft_pc_k_forward(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_noop(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_variable(weft_kernel_ctx_t *ctx, void *state);
/* Reshape, ExpandDims, Squeeze: the input's buffer under a new shape. */
weft_status_t *weft_pc_k_reshape(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_expand_dims(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_squeeze(weft_kernel_ctx_t *ctx, void *state);
/* Shape, ShapeN, Size, Rank: outputs in host memory (register them with host_memory "output"),
 * int32 unless out_type says int64. */
weft_status_t *weft_pc_k_shape(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_size(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_rank(weft_kernel_ctx_t *ctx, void *state);

/* The device steps of the variable kernels; a plugin registers the kernels below with a pointer
 * to its table as user_data. */
typedef struct weft_pc_state_ops {
  /* dst = src (same dtype and shape, distinct buffers on the kernel's device). */
  weft_status_t *(*copy)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                         const weft_tensor_view_t *src);
  /* The scalar bool dst (just allocated) = value. */
  weft_status_t *(*set_bool)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst, bool value);
  /* var += value, or var -= value when sub (same dtype and shape). */
  weft_status_t *(*update)(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *var,
                           const weft_tensor_view_t *value, bool sub);
} weft_pc_state_ops_t;

weft_status_t *weft_pc_k_is_variable_initialized(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_assign(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_assign_add(weft_kernel_ctx_t *ctx, void *state);
weft_status_t *weft_pc_k_assign_sub(weft_kernel_ctx_t *ctx, void *state);

#endif /* WEFT_PLUGIN_COMMON_H */
