/* cpu_internal.h: what the files of the CPU plugin share: the host table, dtype slots, error and
 * input helpers, broadcasting, data movement and the per-concern registration functions.
 *
 * The plugin sees only the SDK headers (weft/plugin.h, weft/types.h), libc, libm, pthreads and
 * cblas; it never links libweft or GLib. Names shared between its files start with weft__cpu_ and
 * stay hidden (the module is built with hidden visibility; only weft_plugin_entry is exported). */
#ifndef WEFT_CPU_INTERNAL_H
#define WEFT_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/plugin.h"
#include "weft/types.h"

#define WEFT_CPU_PLUGIN_NAME "cpu"
#define WEFT_CPU_DEVICE_TYPE "CPU"

/* The host table handed to init(); valid for the life of the process once the plugin loaded. */
extern const weft_host_t *weft__cpu_host;

/* Returns from the enclosing function when a status-returning call fails. */
#define CPU_TRY(expr)                          \
  do {                                         \
    weft_status_t *cpu_try_s_ = (expr);        \
    if (cpu_try_s_ != NULL) return cpu_try_s_; \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * dtypes. Kernel tables are indexed by a dense "slot" rather than the sparse TensorFlow enum. */

typedef enum weft_cpu_slot {
  CPU_SLOT_F32 = 0,
  CPU_SLOT_F64,
  CPU_SLOT_I32,
  CPU_SLOT_I64,
  CPU_SLOT_BOOL,
  CPU_SLOT_U8,
  CPU_SLOT_I8,
  CPU_SLOT_I16,
  CPU_SLOT_U16,
  CPU_SLOT_U32,
  CPU_SLOT_U64,
  CPU_SLOT_F16,
  CPU_SLOT_BF16,
  CPU_SLOT_STRING,
  CPU_N_SLOTS
} weft_cpu_slot_t;

/* -1 for a dtype the plugin does not know. */
int weft__cpu_slot(weft_dtype_t dtype);
weft_dtype_t weft__cpu_slot_dtype(int slot);
size_t weft__cpu_dtype_size(weft_dtype_t dtype);
const char *weft__cpu_dtype_name(weft_dtype_t dtype);
bool weft__cpu_dtype_is_float(weft_dtype_t dtype); /* float, double, half, bfloat16 */
bool weft__cpu_dtype_is_int(weft_dtype_t dtype);   /* signed or unsigned integers */

/* Common dtype sets for type constraints (static arrays owned by the plugin). */
extern const weft_dtype_t weft__cpu_all_types[];     /* every slot, string included */
extern const size_t weft__cpu_n_all_types;
extern const weft_dtype_t weft__cpu_index_types[];   /* int32, int64 */
extern const size_t weft__cpu_n_index_types;

/* IEEE half and bfloat16 stored as uint16_t. Conversions round to nearest even unless they
 * say truncate. */
float weft__cpu_half_to_float(uint16_t h);
uint16_t weft__cpu_float_to_half(float f);
uint16_t weft__cpu_float_to_half_trunc(float f);
float weft__cpu_bf16_to_float(uint16_t b);
uint16_t weft__cpu_float_to_bf16(float f);
uint16_t weft__cpu_float_to_bf16_trunc(float f);
/* Widens n half (dtype WEFT_DT_HALF) or bfloat16 values to float, and narrows back. Kernels
 * without a 16-bit float loop compute these dtypes in float, a block at a time. */
void weft__cpu_f16_to_float(weft_dtype_t dtype, const uint16_t *src, float *dst, int64_t n);
void weft__cpu_float_to_f16(weft_dtype_t dtype, const float *src, uint16_t *dst, int64_t n);
#define CPU_F16_BLOCK 256

/* ---------------------------------------------------------------------------------------------
 * Errors. Each returns a new status owned by the caller whose message names the kernel's node. */

weft_status_t *weft__cpu_error(weft_kernel_ctx_t *ctx, weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "[2,3]" into buf (always NUL-terminated). */
const char *weft__cpu_shape_str(int rank, const int64_t *dims, char *buf, size_t len);
#define CPU_SHAPE_STR_LEN 200

/* ---------------------------------------------------------------------------------------------
 * Inputs and outputs. */

weft_status_t *weft__cpu_input(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out);
weft_status_t *weft__cpu_output(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype, int rank,
                                const int64_t *dims, weft_tensor_view_t *out);
/* Output with the dtype and shape of `like`. */
weft_status_t *weft__cpu_output_like(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                     const weft_tensor_view_t *like, weft_tensor_view_t *out);
/* Element i of an integer tensor (index arguments may be any integer type). */
int64_t weft__cpu_index_at(const weft_tensor_view_t *v, int64_t i);
bool weft__cpu_is_index_dtype(weft_dtype_t dtype);
/* Reads an integer tensor of at most max_n elements (any rank) into out; INVALID_ARGUMENT
 * naming `what` for another dtype or too many elements. */
weft_status_t *weft__cpu_read_indices(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                      const char *what, int64_t *out, int64_t max_n, int64_t *n);
/* A scalar (or one-element) integer tensor. */
weft_status_t *weft__cpu_read_scalar_index(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *v,
                                           const char *what, int64_t *out);
/* Element i of a numeric or bool tensor as a double (0 for strings). */
double weft__cpu_get_double(const weft_tensor_view_t *v, int64_t i);
/* Canonicalises axis in [-rank, rank) to [0, rank); INVALID_ARGUMENT otherwise. */
weft_status_t *weft__cpu_axis(weft_kernel_ctx_t *ctx, int64_t axis, int rank, const char *what,
                              int *out);
/* Attribute readers with a default for absent attrs. */
bool weft__cpu_attr_bool(weft_kernel_ctx_t *ctx, const char *name, bool dflt);
int64_t weft__cpu_attr_int(weft_kernel_ctx_t *ctx, const char *name, int64_t dflt);
float weft__cpu_attr_float(weft_kernel_ctx_t *ctx, const char *name, float dflt);

/* ---------------------------------------------------------------------------------------------
 * Parallelism. Runs fn over [0, total) on the intra-op pool (inline when total is small). */

void weft__cpu_parallel(weft_kernel_ctx_t *ctx, int64_t total, int64_t cost_per_unit,
                        weft_range_fn fn, void *arg);

/* ---------------------------------------------------------------------------------------------
 * Broadcasting (TensorFlow/numpy rules) of up to 3 operands, collapsed so that runs of dims
 * with the same broadcast pattern merge. Dims of size 1 in the output are dropped; the result
 * always has rank >= 1 (a scalar output is rank 1 of size 1). */

#define CPU_BCAST_MAX_IN 3
typedef struct weft_cpu_bcast {
  int n_in;
  int rank;
  int64_t dims[WEFT_MAX_RANK];
  int64_t strides[CPU_BCAST_MAX_IN][WEFT_MAX_RANK]; /* in elements; 0 on broadcast dims */
  int64_t out_elements;
  /* The full (uncollapsed) output shape. */
  int out_rank;
  int64_t out_dims[WEFT_MAX_RANK];
} weft_cpu_bcast_t;

/* INVALID_ARGUMENT "Incompatible shapes: [..] vs. [..]" naming the node when they do not
 * broadcast. */
weft_status_t *weft__cpu_bcast_init(weft_kernel_ctx_t *ctx, weft_cpu_bcast_t *b, int n_in,
                                    const weft_tensor_view_t *const *ins);
/* Offsets of each input for output row `row` (a row is the innermost collapsed dim). */
void weft__cpu_bcast_row_offsets(const weft_cpu_bcast_t *b, int64_t row, int64_t *offsets);
/* Number of rows and row length. */
static inline int64_t weft__cpu_bcast_inner(const weft_cpu_bcast_t *b) {
  return b->dims[b->rank - 1];
}
static inline int64_t weft__cpu_bcast_rows(const weft_cpu_bcast_t *b) {
  int64_t inner = b->dims[b->rank - 1];
  return inner == 0 ? 0 : b->out_elements / inner;
}

/* ---------------------------------------------------------------------------------------------
 * Data movement that works for every dtype (strings through host->string_assign). */

/* Copies n elements src[si..] -> dst[di..] (dst allocated by this kernel). */
weft_status_t *weft__cpu_copy_elems(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                    int64_t di, const weft_tensor_view_t *src, int64_t si,
                                    int64_t n);
/* dst (contiguous, dst->num_elements elements) = gather from src starting at element `base`
 * with per-dim sizes and element strides (may be negative or 0). rank >= 0. */
weft_status_t *weft__cpu_strided_gather(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                        const weft_tensor_view_t *src, int64_t base, int rank,
                                        const int64_t *sizes, const int64_t *strides);
/* Fills every element of dst with element si of src. */
weft_status_t *weft__cpu_fill_from(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst,
                                   const weft_tensor_view_t *src, int64_t si);
/* Writes zeros (numbers), false, or "" (strings) into all of dst. */
weft_status_t *weft__cpu_zero(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *dst);

/* y (allocated by the caller with the kept dims of x, in order) = sum of x over the dims marked
 * in reduced[0..x->rank). Shared by BiasAddGrad and the Sum kernel. */
weft_status_t *weft__cpu_reduce_sum(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *x,
                                    const bool *reduced, const weft_tensor_view_t *y);

/* ---------------------------------------------------------------------------------------------
 * Registration. */

typedef struct weft_cpu_kernel_spec {
  const char *op;
  weft_kernel_compute_fn compute;
  const char *type_attr;            /* NULL: no constraint */
  const weft_dtype_t *dtypes;
  size_t n_dtypes;
  const char *const *host_memory;   /* NULL-terminated or NULL */
  weft_kernel_create_fn create;
  weft_kernel_destroy_fn destroy;
  void *user_data;
} weft_cpu_kernel_spec_t;

/* Registers one kernel on device type CPU. A kernel for an op the host does not define is
 * skipped with a debug log (a core without that op simply cannot use it); any other refusal is
 * returned. */
weft_status_t *weft__cpu_register(const weft_registrar_t *reg, const weft_cpu_kernel_spec_t *spec);
/* Same with several type constraints. */
weft_status_t *weft__cpu_register_full(const weft_registrar_t *reg, const char *op,
                                       const weft_type_constraint_t *constraints,
                                       size_t n_constraints, const char *const *host_memory,
                                       weft_kernel_create_fn create, weft_kernel_compute_fn compute,
                                       weft_kernel_destroy_fn destroy, void *user_data);

weft_status_t *weft__cpu_register_state(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_elementwise(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_binary(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_reduce(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_matmul(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_nn(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_array(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_shape(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_random(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_cast(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_train(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_conv(const weft_registrar_t *reg); /* cpu_conv.c */

#endif /* WEFT_CPU_INTERNAL_H */
