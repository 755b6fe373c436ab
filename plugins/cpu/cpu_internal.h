/* cpu_internal.h: what the files of the CPU plugin share: the host table, dtype slots, error and
 * input helpers, broadcasting, data movement and the per-concern registration functions.
 *
 * The plugin sees only the SDK headers (weft/plugin.h, weft/types.h), the helpers it shares with
 * the other plugins (plugins/common/plugin_common.h), libc, libm, pthreads and cblas; it never
 * links libweft or GLib. Names shared between its files start with weft__cpu_ and stay hidden
 * (the module is built with hidden visibility; only weft_plugin_entry is exported). */
#ifndef WEFT_CPU_INTERNAL_H
#define WEFT_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin_common.h"
#include "weft/plugin.h"
#include "weft/types.h"

#define WEFT_CPU_PLUGIN_NAME "cpu"
#define WEFT_CPU_DEVICE_TYPE "CPU"

/* Helpers that are the same in every plugin live in plugins/common (weft_pc_*); the CPU kernels
 * call them under the weft__cpu_ names below, so that the plugin's code reads one way whichever
 * file a helper lives in. */

/* The host table handed to init(); valid for the life of the process once the plugin loaded. */
#define weft__cpu_host weft_pc_host

/* Returns from the enclosing function when a status-returning call fails. */

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
/* The dtypes of the slots marked in has[0..CPU_N_SLOTS), in slot order, then half and bfloat16
 * when float32 is marked (kernels run the 16-bit floats through their float32 loops). out has
 * room for CPU_N_SLOTS + 2; returns the count. */
size_t weft__cpu_slot_types(const bool *has, weft_dtype_t *out);
#define weft__cpu_dtype_size weft_pc_dtype_size
#define weft__cpu_dtype_name weft_pc_dtype_name
#define weft__cpu_dtype_is_float weft_pc_dtype_is_float /* float, double, half, bfloat16 */
#define weft__cpu_dtype_is_int weft_pc_dtype_is_int     /* signed or unsigned integers */

/* The ten numeric dtypes (floats and integers) as X(dtype, C type, U) with U the type their
 * arithmetic runs in: the float type itself, or an unsigned type of at least 32 bits, so that
 * integer sums and products wrap (TensorFlow's behaviour) instead of overflowing a signed int.
 * For switch tables and dtype lists over them. */
#define CPU_NUMERIC_TYPES(X)            \
  X(WEFT_DT_FLOAT, float, float)        \
  X(WEFT_DT_DOUBLE, double, double)     \
  X(WEFT_DT_INT32, int32_t, uint32_t)   \
  X(WEFT_DT_INT64, int64_t, uint64_t)   \
  X(WEFT_DT_INT8, int8_t, uint32_t)     \
  X(WEFT_DT_INT16, int16_t, uint32_t)   \
  X(WEFT_DT_UINT8, uint8_t, uint32_t)   \
  X(WEFT_DT_UINT16, uint16_t, uint32_t) \
  X(WEFT_DT_UINT32, uint32_t, uint32_t) \
  X(WEFT_DT_UINT64, uint64_t, uint64_t)

/* Common dtype sets for type constraints (static arrays owned by the plugin). */
extern const weft_dtype_t weft__cpu_all_types[];     /* every slot, string included */
extern const size_t weft__cpu_n_all_types;
extern const weft_dtype_t weft__cpu_num_types[];     /* CPU_NUMERIC_TYPES, in that order */
extern const size_t weft__cpu_n_num_types;
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
/* Element i of a float, double, half or bfloat16 buffer as a double (0 for other dtypes), and a
 * double stored into one (through float for the 16-bit dtypes; nothing for other dtypes). */
static inline double weft__cpu_load_f(weft_dtype_t dt, const void *p, int64_t i) {
  switch (dt) {
    case WEFT_DT_FLOAT: return ((const float *)p)[i];
    case WEFT_DT_DOUBLE: return ((const double *)p)[i];
    case WEFT_DT_HALF: return weft__cpu_half_to_float(((const uint16_t *)p)[i]);
    case WEFT_DT_BFLOAT16: return weft__cpu_bf16_to_float(((const uint16_t *)p)[i]);
    default: return 0;
  }
}

static inline void weft__cpu_store_f(weft_dtype_t dt, void *p, int64_t i, double v) {
  switch (dt) {
    case WEFT_DT_FLOAT: ((float *)p)[i] = (float)v; break;
    case WEFT_DT_DOUBLE: ((double *)p)[i] = v; break;
    /* Through float: double -> float -> half could round twice, but the kernels that use this
     * are not correctly rounded to begin with. */
    case WEFT_DT_HALF: ((uint16_t *)p)[i] = weft__cpu_float_to_half((float)v); break;
    case WEFT_DT_BFLOAT16: ((uint16_t *)p)[i] = weft__cpu_float_to_bf16((float)v); break;
    default: break;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Errors. Each returns a new status owned by the caller whose message names the kernel's node. */

#define weft__cpu_error weft_pc_error
/* "[2,3]" into buf (always NUL-terminated). */
#define weft__cpu_shape_str weft_pc_shape_str
#define CPU_SHAPE_STR_LEN WEFT_PC_SHAPE_STR_LEN

/* ---------------------------------------------------------------------------------------------
 * Inputs and outputs (plugin_common.h says what each does). */

#define weft__cpu_input weft_pc_input
#define weft__cpu_output weft_pc_output
/* Output with the dtype and shape of `like`. */
weft_status_t *weft__cpu_output_like(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                     const weft_tensor_view_t *like, weft_tensor_view_t *out);
#define weft__cpu_index_at weft_pc_index_at
#define weft__cpu_is_index_dtype weft_pc_dtype_is_int
#define weft__cpu_read_indices weft_pc_read_indices
#define weft__cpu_read_scalar_index weft_pc_read_scalar_index
/* Element i of a numeric or bool tensor as a double (0 for strings). */
double weft__cpu_get_double(const weft_tensor_view_t *v, int64_t i);
/* -1, 0 or 1 as a[i] is below, equal to or above b[j] (both of a's dtype; strings bytewise);
 * a NaN sets *nan and orders after every number (cpu_array_extra.c). */
int weft__cpu_cmp_elems(const weft_tensor_view_t *a, int64_t i, const weft_tensor_view_t *b,
                        int64_t j, bool *nan);
/* Sorts idx[0..n) (element indices of v) stably by v's values, NaNs last; tmp holds n. */
void weft__cpu_sort_ascending(const weft_tensor_view_t *v, int64_t *idx, int64_t *tmp, int64_t n);
#define weft__cpu_axis weft_pc_axis
/* Attribute readers with a default for absent attrs. */
#define weft__cpu_attr_bool weft_pc_attr_bool
#define weft__cpu_attr_int weft_pc_attr_int
#define weft__cpu_attr_float weft_pc_attr_float
/* String attr `name` (borrowed; dflt where it is absent or not a string), its length in *len
 * (may be NULL): attrs may hold NUL bytes. */
const char *weft__cpu_attr_str(weft_kernel_ctx_t *ctx, const char *name, const char *dflt,
                               size_t *len);
/* Whether string attr `name` (dflt where it is absent or not a string) equals value. */
bool weft__cpu_attr_is(weft_kernel_ctx_t *ctx, const char *name, const char *value,
                       const char *dflt);

/* ---------------------------------------------------------------------------------------------
 * Parallelism. Runs fn over [0, total) on the intra-op pool (inline when total is small). */

void weft__cpu_parallel(weft_kernel_ctx_t *ctx, int64_t total, int64_t cost_per_unit,
                        weft_range_fn fn, void *arg);
/* Below this much work (total * cost_per_unit) weft__cpu_parallel runs fn inline: the hand-off
 * to the pool costs more than it saves. */
#define CPU_SCALAR_SPLIT_MIN 20000
/* The same for the float32 loops of cpu_vmath.h's vector functions over units of
 * `floats_per_unit` floats, given `scalar_cost`, an op table's cycles per unit of a scalar loop:
 * those loops take about that per vector of 4, 8 or 16 floats (the level in use), and never
 * less than a cycle a float (memory's pace), and they are split only from
 * CPU_F32_SPLIT_MIN_CYCLES of that work. */
void weft__cpu_parallel_f32(weft_kernel_ctx_t *ctx, int64_t total, int64_t scalar_cost,
                            int64_t floats_per_unit, weft_range_fn fn, void *arg);

/* ---------------------------------------------------------------------------------------------
 * Streaming stores. A float32 output at least as large as the last-level cache
 * (WEFT_CPU_STREAM_BYTES, set at plugin init) is written by the streaming form of its vector loop
 * (cpu_vmath.h's nt table), whose non-temporal stores write y's lines without first reading them:
 * a unary op moves two bytes where it moved three. Every range of work that streamed calls
 * weft__cpu_stream_fence() before it returns to the pool, so the pool's hand-off orders y's
 * stores before the next reader. */

/* Whether an output of n elements of elem_size bytes is written that way. */
bool weft__cpu_stream_output(int64_t n, size_t elem_size);
/* The cost (rough cycles per element) from which a float32 elementwise kernel running on one
 * thread keeps ordinary stores: there its arithmetic, not memory, bounds it, and the streamed
 * stores measured slower (Tanh, Sigmoid and Erf 10-20%; the fused chain of five 0.55x -> 0.48x
 * of ONNX Runtime's time: docs/performance.md). With more threads they stream. */
#define WEFT_CPU_STREAM_COSTLY 25

/* The sum of n same-shape inputs of a CPU_NUMERIC_TYPES dtype over elements [b, e), each partial
 * sum in the dtype's arithmetic (AddN, and AccumulateNV2 for those dtypes); a weft_range_fn over
 * a weft_cpu_addn_job_t. Other dtypes are left alone. */
typedef struct weft_cpu_addn_job {
  weft_dtype_t dtype;
  int n;
  const void *const *ins;
  void *out;
} weft_cpu_addn_job_t;
void weft__cpu_addn_range(void *arg, int64_t b, int64_t e);

/* C[m,n] (row stride ldc) = op(A) op(B) in float32 (dbl: float64), row-major: a large one cut
 * into a block of C per intra-op pool thread (at most OPENBLAS_NUM_THREADS), each block one
 * single-thread OpenBLAS call (cpu_matmul.c). A is [m,k] (ta: [k,m]) with row stride lda, B is
 * [k,n] (tb: [n,k]) with row stride ldb; the dimensions fit in int (the caller checks). */
void weft__cpu_blas_gemm(weft_kernel_ctx_t *ctx, bool dbl, bool ta, bool tb, int64_t m,
                         int64_t n, int64_t k, const void *a, int64_t lda, const void *b,
                         int64_t ldb, void *c, int64_t ldc);
/* C[b] = A[b] B[b] for b < batches, A [batches, m, k], B [batches, k, n] and C [batches, m, n]
 * contiguous (float32, dbl: float64), no transposes: whole batches shared out over the pool when
 * there are enough of them or each is small, else each GEMM split as weft__cpu_blas_gemm's
 * (cpu_matmul.c). The dimensions fit in int (the caller checks). */
void weft__cpu_blas_gemm_batches(weft_kernel_ctx_t *ctx, bool dbl, int64_t batches, int64_t m,
                                 int64_t n, int64_t k, const void *a, const void *b, void *c);
/* How weft__cpu_blas_gemm cuts C for `threads` threads: the number of blocks, each *block rows
 * (*by_rows) or columns long (1 block below 5 M multiply-adds or with one thread; no more
 * blocks than keep 2.5 M multiply-adds in each). */
int64_t weft__cpu_gemm_split_plan(int threads, int64_t m, int64_t n, int64_t k, bool *by_rows,
                                  int64_t *block);
/* C = op(A) op(B) + beta C in float32 on the calling thread alone, whatever OpenBLAS's thread
 * count (the caller set it to 1: cpu_conv_fast.c's tiles run one per pool thread). Arguments as
 * weft__cpu_blas_gemm's. */
void weft__cpu_sgemm_1t(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc);

struct weft_cpu_epilogue; /* below, with the fused kernels */
struct weft_cpu_packed_cache; /* below, with the packed GEMM */

/* The geometry of a 2-D NHWC convolution (cpu_conv_fast.c): input [n, h, w, c], output
 * [n, oh, ow, m], filter kh x kw, strides, dilations, and the padding before (top, left). */
typedef struct weft_cpu_conv2d {
  int64_t n, h, w, c;
  int64_t oh, ow, m;
  int64_t kh, kw, sh, sw, dh, dw, pt, pl;
} weft_cpu_conv2d_t;
/* float32 NHWC kernels writing into the op's output (which the caller allocated): Conv2D with
 * one group (filter [kh, kw, c, m]); Conv2DBackpropFilter (df [kh, kw, c, m] from x and dy);
 * Conv2DBackpropInput (dx from f and dy); DepthwiseConv2dNative (filter [kh, kw, c, m / c]).
 * Every dimension fits OpenBLAS's int (the caller checks). */
weft_status_t *weft__cpu_conv2d_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                    const float *x, const float *f, float *y);
/* The same two forward kernels finishing each block of y with an epilogue (cpu_epilogue.c;
 * NULL: none). */
weft_status_t *weft__cpu_conv2d_f32_ep(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                       const float *x, const float *f, float *y,
                                       const struct weft_cpu_epilogue *ep);
/* Conv2D with the filter (the node's input 1) packed once into cache when it is a constant
 * (cpu_packed.c; cache NULL: never). */
weft_status_t *weft__cpu_conv2d_f32_packed(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                           const float *x, const float *f, float *y,
                                           const struct weft_cpu_epilogue *ep,
                                           struct weft_cpu_packed_cache *cache);
weft_status_t *weft__cpu_depthwise_f32_ep(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                          const float *x, const float *f, float *y,
                                          const struct weft_cpu_epilogue *ep);
/* The direct float32 NCHW Conv2D (cpu_conv_nchw.c; x [n, c, h, w], y [n, m, oh, ow], filter
 * [kh, kw, c, m], ep NULL for none), and whether it is the one to run for geometry g (few
 * taps or filters, small strides). */
bool weft__cpu_conv2d_nchw_direct(const weft_cpu_conv2d_t *g);
weft_status_t *weft__cpu_conv2d_nchw_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                         const float *x, const float *f, float *y,
                                         const struct weft_cpu_epilogue *ep);
/* The same loop over NHWC x [n, h, w, c] and y [n, oh, ow, m], which cpu_conv_fast.c runs for
 * tiny convolutions (few taps and filters), where the GEMM's fixed costs outweigh the work. */
weft_status_t *weft__cpu_conv2d_nhwc_direct_f32(weft_kernel_ctx_t *ctx,
                                                const weft_cpu_conv2d_t *g, const float *x,
                                                const float *f, float *y,
                                                const struct weft_cpu_epilogue *ep);
/* A 3x3 stride-1 convolution of many channels by Winograd's F(2x2, 3x3) (cpu_conv_winograd.c),
 * and whether it is the one to run for g. */
bool weft__cpu_conv2d_winograd_wanted(const weft_cpu_conv2d_t *g);
weft_status_t *weft__cpu_conv2d_winograd_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                             const float *x, const float *f, float *y,
                                             const struct weft_cpu_epilogue *ep);
/* The direct few-tap NHWC Conv2D (cpu_conv_direct.c, cpu_convd.h: up to 64 taps, filters a
 * multiple of 16, AVX-512 or AVX2), and whether it is the one to run for g. */
bool weft__cpu_conv2d_few_taps(const weft_cpu_conv2d_t *g);
weft_status_t *weft__cpu_conv2d_few_taps_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                             const float *x, const float *f, float *y,
                                             const struct weft_cpu_epilogue *ep);
/* The direct float32 NCHW Conv2DBackpropInput (cpu_conv_transpose_nchw.c; f [kh, kw, c, m],
 * dy [n, m, oh, ow], dx [n, c, h, w] written whole), and whether it is the one to run for g. */
bool weft__cpu_conv2d_nchw_bp_input_direct(const weft_cpu_conv2d_t *g);
weft_status_t *weft__cpu_conv2d_nchw_bp_input_f32(weft_kernel_ctx_t *ctx,
                                                  const weft_cpu_conv2d_t *g, const float *f,
                                                  const float *dy, float *dx);
weft_status_t *weft__cpu_conv2d_bp_filter_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                              const float *x, const float *dy, float *df);
weft_status_t *weft__cpu_conv2d_bp_input_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                             const float *f, const float *dy, float *dx);
weft_status_t *weft__cpu_depthwise_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g,
                                       const float *x, const float *f, float *y);
/* float32 NHWC MaxPool (is_max) or AvgPool over a window g->kh x g->kw (g->m = g->c; dilations
 * 1) into y, which the caller allocated (cpu_pool_fast.c). */
void weft__cpu_pool2d_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g, bool is_max,
                          const float *x, float *y);
/* float32 NHWC MaxPoolGrad (is_max: x the pool's input) or AvgPoolGrad (x NULL) of dy
 * [n, oh, ow, c] into dx [n, h, w, c], which the caller allocated (cpu_pool_grad_fast.c;
 * overwritten, bit for bit cpu_conv.c's generic result); the clipped window, min(kh, h) x
 * min(kw, w), at most INT32_MAX elements. weft__cpu_pool_grad_f32_enabled: false where
 * WEFT_CPU_POOL_GRAD_FAST=0 keeps the generic kernel (to compare with). */
bool weft__cpu_pool_grad_f32_enabled(void);
void weft__cpu_pool_grad_f32(weft_kernel_ctx_t *ctx, const weft_cpu_conv2d_t *g, bool is_max,
                             const float *x, const float *dy, float *dx);
/* The same for float32 NDHWC MaxPool3DGrad / AvgPool3DGrad (struct weft_cpu_pool3_grad,
 * cpu_pool_grad.h): p->acc a double scratch of dx's size; bit for bit cpu_conv_nd.c's result. */
struct weft_cpu_pool3_grad;
void weft__cpu_pool3d_grad_f32(weft_kernel_ctx_t *ctx, const struct weft_cpu_pool3_grad *p);
/* float32 MaxPool3D (is_max) / AvgPool3D forward over NDHWC or NCDHW (struct weft_cpu_pool3,
 * cpu_pool3d.h) into p->y, which the caller allocated (cpu_pool3d_fast.c; bit for bit
 * cpu_conv_nd.c's generic result). weft__cpu_pool3d_f32_enabled: false where
 * WEFT_CPU_POOL3D_FAST=0 keeps the generic kernel (to compare with). */
struct weft_cpu_pool3;
bool weft__cpu_pool3d_f32_enabled(void);
weft_status_t *weft__cpu_pool3d_f32(weft_kernel_ctx_t *ctx, struct weft_cpu_pool3 *p);
/* float32 batched transpose (cpu_nchw.c): each of `batch` row-major [rows, cols] matrices of
 * src into [cols, rows] at the same offset of dst (NCHW <-> NHWC per image), on the intra-op
 * pool. The _scratch form allocates dst in the kernel's scratch (freed with the kernel call). */
void weft__cpu_transpose_f32(weft_kernel_ctx_t *ctx, int64_t batch, int64_t rows, int64_t cols,
                             const float *src, float *dst);
weft_status_t *weft__cpu_transpose_f32_scratch(weft_kernel_ctx_t *ctx, int64_t batch,
                                               int64_t rows, int64_t cols, const float *src,
                                               float **out);
/* OpenBLAS's entry points, loaded by weft__cpu_blas_init (cpu_blas.c) from libopenblas.so.0.
 * The order and transpose arguments are cblas.h's enums, passed as the ints they are: this
 * header does not include cblas.h, whose <complex.h> would define `I` in every kernel file. */
typedef struct {
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
  void (*dgemm)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha,
                const double *a, int lda, const double *b, int ldb, double beta, double *c,
                int ldc);
  void (*sgemv)(int order, int trans, int m, int n, float alpha, const float *a, int lda,
                const float *x, int incx, float beta, float *y, int incy);
  void (*dgemv)(int order, int trans, int m, int n, double alpha, const double *a, int lda,
                const double *x, int incx, double beta, double *y, int incy);
  void (*set_num_threads)(int);
  char *(*get_corename)(void);
} weft_cpu_blas_t;
extern weft_cpu_blas_t weft__cpu_blas;
/* Chooses OpenBLAS's kernels (OPENBLAS_CORETYPE), loads it, reads OPENBLAS_NUM_THREADS and sets
 * OpenBLAS to one thread until a large GEMM: once, from the plugin's init. A missing or
 * foreign libopenblas.so.0 is FAILED_PRECONDITION, which fails the plugin's init. */
weft_status_t *weft__cpu_blas_init(void);
/* OPENBLAS_NUM_THREADS as the plugin found it (0: unset). */
int weft__cpu_blas_threads_asked(void);

/* ---------------------------------------------------------------------------------------------
 * Broadcasting (TensorFlow/numpy rules) of up to 3 operands, collapsed so that runs of dims
 * with the same broadcast pattern merge (weft_pc_bcast_t in plugin_common.h). */

#define CPU_BCAST_MAX_IN WEFT_PC_BCAST_MAX_IN
typedef weft_pc_bcast_t weft_cpu_bcast_t;

/* INVALID_ARGUMENT "Incompatible shapes: [..] vs. [..]" naming the node when the shapes of
 * ins[0..n_in) do not broadcast. */
#define weft__cpu_bcast_init weft_pc_bcast_views
/* Offsets of each input for output row `row` (a row is the innermost collapsed dim). */
#define weft__cpu_bcast_row_offsets weft_pc_bcast_row_offsets
/* Row length and number of rows. */
#define weft__cpu_bcast_inner weft_pc_bcast_inner
#define weft__cpu_bcast_rows weft_pc_bcast_rows
/* Calls fn(arg, offsets, pos, len) for each run of output elements [begin, end) that lies in one
 * collapsed row: offsets[k] is input k's element at output element pos, and the next len - 1
 * elements follow with input k's innermost stride. */
typedef void (*weft_cpu_bcast_run_fn)(void *arg, const int64_t *offsets, int64_t pos,
                                      int64_t len);
void weft__cpu_bcast_runs(const weft_cpu_bcast_t *b, int64_t begin, int64_t end,
                          weft_cpu_bcast_run_fn fn, void *arg);

/* ---------------------------------------------------------------------------------------------
 * A growable byte buffer (serialized summaries, strings built by the string kernels). data stays
 * NUL-terminated past len; an allocation failure sets oom, after which puts do nothing, so a
 * kernel checks once at the end. The owner free()s data. */

typedef struct weft_cpu_buf {
  char *data;
  size_t len, cap;
  bool oom;
} weft_cpu_buf_t;
void weft__cpu_buf_put(weft_cpu_buf_t *b, const void *p, size_t n);

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

/* {op, compute, type_attr, dtypes, n_dtypes, host_memory, create, destroy, user_data} */
typedef weft_pc_kernel_spec_t weft_cpu_kernel_spec_t;

/* Registers one kernel on device type CPU. A kernel for an op the host does not define is
 * skipped with a debug log (a core without that op simply cannot use it); any other refusal is
 * returned. */
weft_status_t *weft__cpu_register(const weft_registrar_t *reg, const weft_cpu_kernel_spec_t *spec);
/* Registers specs[0..n) in order (weft__cpu_register each). */
weft_status_t *weft__cpu_register_specs(const weft_registrar_t *reg,
                                        const weft_cpu_kernel_spec_t *specs, size_t n);
/* Same with several type constraints. */
weft_status_t *weft__cpu_register_full(const weft_registrar_t *reg, const char *op,
                                       const weft_type_constraint_t *constraints,
                                       size_t n_constraints, const char *const *host_memory,
                                       weft_kernel_create_fn create, weft_kernel_compute_fn compute,
                                       weft_kernel_destroy_fn destroy, void *user_data);

/* The float32 loop of unary op `op` (cpu_elementwise.c): y[i] = op(x[i]) for i < n, with p the
 * op's float attribute *param (NULL: none; *dflt where absent), *cost its rough cycles per
 * element and, where nt is not NULL, *nt its streaming form (the same bits; NULL where it has
 * none). NULL when the op has no float32 loop or its output is not float (IsNan, ...). The fused
 * kernels (cpu_fused.c, cpu_epilogue.c) call the same loops, so fused results equal unfused ones. */
typedef void (*weft_cpu_unary_f32_fn)(const void *x, void *y, int64_t n, double p);
weft_cpu_unary_f32_fn weft__cpu_unary_f32(const char *op, const char **param, float *dflt,
                                         int64_t *cost, weft_cpu_unary_f32_fn *nt);
weft_status_t *weft__cpu_register_fused(const weft_registrar_t *reg); /* cpu_fused.c */

/* The epilogue of a fused contraction (cpu_epilogue.c): per output channel c (the last
 * dimension), y = act(y * scale[c] + bias[c]), scale NULL for a plain bias, bias NULL for
 * none, act NULL for none. Borrowed pointers, valid for one kernel call. */
typedef struct weft_cpu_epilogue {
  const float *bias, *scale;
  weft_cpu_unary_f32_fn act;
  double act_param;
  int64_t channels;
  /* act is Relu (1) or Relu6 (2), which a kernel may apply in registers before its store
   * instead of calling act; 0 for any other or none. */
  int clamp;
} weft_cpu_epilogue_t;
/* The parsed fused_ops / num_args / epsilon / leakyrelu_alpha of one node (a kernel state, freed
 * with weft__cpu_epilogue_spec_free); UNIMPLEMENTED naming the list for a fusion it lacks. */
weft_status_t *weft__cpu_epilogue_spec_new(const weft_host_t *host, const weft_attrs_t *attrs,
                                           const char *op, bool batch_norm, void **state);
void weft__cpu_epilogue_spec_free(void *state);
/* Binds the spec to this call: the extra inputs from index `first` on, each a float vector of
 * `channels`; a batch norm folded into scale and bias in kernel scratch. */
weft_status_t *weft__cpu_epilogue_bind(weft_kernel_ctx_t *ctx, const void *spec, int first,
                                       int64_t channels, weft_cpu_epilogue_t *ep);
/* The block y[rows, cols] (row stride ldy) of output columns col0..: prefill writes the bias
 * into it for a GEMM with beta = 1, and returns true, when the bias can go first (there is one
 * and no scale; ep may be NULL); apply finishes the block (prefilled: prefill returned true). */
bool weft__cpu_epilogue_prefill(const weft_cpu_epilogue_t *ep, float *y, int64_t rows,
                                int64_t cols, int64_t ldy, int64_t col0);
void weft__cpu_epilogue_apply(const weft_cpu_epilogue_t *ep, float *y, int64_t rows,
                              int64_t cols, int64_t ldy, int64_t col0, bool prefilled);
/* Conv2D and DepthwiseConv2dNative run with an epilogue (cpu_conv.c, cpu_conv_nd.c): the
 * node's inputs 0 and 1 and attributes as theirs. */
weft_status_t *weft__cpu_conv2d_with_epilogue(weft_kernel_ctx_t *ctx,
                                              const weft_cpu_epilogue_t *ep,
                                              struct weft_cpu_packed_cache *cache);
weft_status_t *weft__cpu_depthwise_with_epilogue(weft_kernel_ctx_t *ctx,
                                                 const weft_cpu_epilogue_t *ep);
weft_status_t *weft__cpu_register_epilogue(const weft_registrar_t *reg); /* cpu_epilogue.c */

/* Float32 GEMMs over a constant B packed once per node (cpu_packed.c). A node's kernel state
 * owns one cache (new / free; free takes NULL). */
typedef struct weft_cpu_packed_cache weft_cpu_packed_cache_t;
weft_cpu_packed_cache_t *weft__cpu_packed_cache_new(void);
void weft__cpu_packed_cache_free(weft_cpu_packed_cache_t *cache);
/* A kernel's create / destroy whose per-node state is one cache (MatMul, Conv2D). */
weft_status_t *weft__cpu_packed_create(const weft_host_t *host, const weft_attrs_t *attrs,
                                      void *user_data, void **state);
void weft__cpu_packed_destroy(void *state);
/* Whether an m x k x n GEMM takes the packed path at this level (WEFT_CPU_PACKED_GEMM). */
bool weft__cpu_packed_wanted(int64_t m, int64_t n, int64_t k);
/* C[m, n] (row stride ldc) = op(A) op(B), then the epilogue ep (NULL: none), with B input
 * b_input of the call packed once into cache, when that input is a constant and the shape is
 * one the packed path takes; false (C untouched) otherwise: the caller runs OpenBLAS. A as
 * weft__cpu_blas_gemm's; m, n, k >= 1. */
bool weft__cpu_packed_gemm(weft_kernel_ctx_t *ctx, weft_cpu_packed_cache_t *cache, int b_input,
                           bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                           const weft_cpu_epilogue_t *ep);
/* The same in pieces, for callers that cut the GEMM themselves (the convolutions' tiles):
 * acquire returns B input b_input ([k, n], or [n, k] when tb) packed, one reference the caller
 * releases, or NULL as weft__cpu_packed_gemm returns false (m: the rows the GEMMs will have
 * in all); gemm_1t runs C[m, n] = A[m, k] B (+ ep) on the calling thread. */
typedef struct weft_cpu_packed weft_cpu_packed_t;
weft_cpu_packed_t *weft__cpu_packed_acquire(weft_kernel_ctx_t *ctx, weft_cpu_packed_cache_t *cache,
                                            int b_input, const float *b, int64_t ldb, bool tb,
                                            int64_t m, int64_t n, int64_t k);
void weft__cpu_packed_release(weft_cpu_packed_t *p);
/* B packed for this call alone (not a constant: a filter being trained), one reference the
 * caller releases; NULL where the packed path is not wanted for these sizes or memory ran out. */
weft_cpu_packed_t *weft__cpu_packed_once(const float *b, int64_t ldb, bool tb, int64_t m,
                                         int64_t n, int64_t k);
void weft__cpu_packed_gemm_1t(const weft_cpu_packed_t *p, const float *a, int64_t lda, int64_t m,
                              float *c, int64_t ldc, const weft_cpu_epilogue_t *ep);
/* The same over A given pass by pass (an implicit GEMM: cpu_gemm.h's packed_passes), C's rows
 * in segments, row stride ldc (+ ep on each segment). */
struct weft_cpu_gemm_segment;
void weft__cpu_packed_gemm_passes_1t(const weft_cpu_packed_t *p, const int64_t *k0,
                                     const int64_t *kc, int npasses, int64_t rs,
                                     const struct weft_cpu_gemm_segment *seg, int nseg,
                                     int64_t ldc, const weft_cpu_epilogue_t *ep);
weft_status_t *weft__cpu_register_state(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_elementwise(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_summary(const weft_registrar_t *reg); /* cpu_summary.c */
weft_status_t *weft__cpu_register_binary(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_reduce(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_matmul(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_nn(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_array(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_array_extra(const weft_registrar_t *reg); /* ReverseV2, ... */
weft_status_t *weft__cpu_register_shape(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_random(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_cast(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_train(const weft_registrar_t *reg);
weft_status_t *weft__cpu_register_conv(const weft_registrar_t *reg); /* cpu_conv.c */
weft_status_t *weft__cpu_register_conv_nd(const weft_registrar_t *reg); /* cpu_conv_nd.c */
weft_status_t *weft__cpu_register_norm(const weft_registrar_t *reg);    /* cpu_norm.c */
weft_status_t *weft__cpu_register_scatter(const weft_registrar_t *reg); /* cpu_scatter.c */
weft_status_t *weft__cpu_register_search(const weft_registrar_t *reg);  /* cpu_search.c */
weft_status_t *weft__cpu_register_einsum(const weft_registrar_t *reg);  /* cpu_einsum.c */
weft_status_t *weft__cpu_register_ctc(const weft_registrar_t *reg);     /* cpu_ctc.c */
weft_status_t *weft__cpu_register_edit_distance(const weft_registrar_t *reg); /* cpu_edit_distance.c */
weft_status_t *weft__cpu_register_image(const weft_registrar_t *reg); /* cpu_image.c */
weft_status_t *weft__cpu_register_bits(const weft_registrar_t *reg); /* cpu_bits.c */
weft_status_t *weft__cpu_register_special(const weft_registrar_t *reg); /* cpu_special.c */
weft_status_t *weft__cpu_register_nn_extra(const weft_registrar_t *reg); /* cpu_nn_extra.c */
weft_status_t *weft__cpu_register_linalg(const weft_registrar_t *reg); /* cpu_linalg.c */
weft_status_t *weft__cpu_register_svd_misc(const weft_registrar_t *reg); /* cpu_svd_misc.c */
weft_status_t *weft__cpu_register_sparse(const weft_registrar_t *reg); /* cpu_sparse.c */
weft_status_t *weft__cpu_register_ragged(const weft_registrar_t *reg); /* cpu_ragged.c */
weft_status_t *weft__cpu_register_string(const weft_registrar_t *reg); /* cpu_string.c */
weft_status_t *weft__cpu_register_codec(const weft_registrar_t *reg);  /* cpu_codec.c */
/* Registers an optimizer update's kernel (float and double "T") under its ref op's name and,
 * unless NULL, its Resource* twin's (cpu_train.c). */
weft_status_t *weft__cpu_register_update(const weft_registrar_t *reg, const char *name,
                                         const char *resource_name, weft_kernel_compute_fn compute,
                                         const void *user_data);
/* cpu_train_sparse.c: ApplyFtrl*, SparseApply* */
weft_status_t *weft__cpu_register_train_sparse(const weft_registrar_t *reg);

#endif /* WEFT_CPU_INTERNAL_H */
