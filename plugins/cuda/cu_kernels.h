/* cu_kernels.h: the C interface between the CUDA plugin's host code (C) and its device kernels
 * (the .cu files in kernels/, CUDA C++ compiled by nvcc). The host code decides shapes, dtypes
 * and geometry; each launcher here enqueues one or two kernels on the given stream and returns
 * at once with the launch status (cudaGetLastError): faults inside a kernel surface later, at
 * the next synchronisation, the way CUDA reports them.
 *
 * Everything here is plain data (no pointers into host memory survive the call: geometry structs
 * are copied into the kernels' parameters), so a launcher may be called from any thread. Device
 * pointers are the plugin's raw cudaMalloc addresses (offsets already applied where the host
 * knows them). Names shared across files start with weft__cu_ and are hidden in the module. */
#ifndef WEFT_CU_KERNELS_H
#define WEFT_CU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The element types the kernels are instantiated for. */
typedef enum weft_cu_dt {
  CU_DT_F32 = 0,
  CU_DT_F64,
  CU_DT_I32,
  CU_DT_I64,
  CU_DT_BOOL, /* one byte per element, 0 or 1 */
  CU_DT_COUNT
} weft_cu_dt_t;

/* Unary ops (y = f(x), same dtype unless bool output). Integer dtypes accept NEG ... RELU6 as
 * marked in cu_math.c; the float-only ones are never launched on integers. */
typedef enum weft_cu_unary {
  CU_UN_NEG = 0,
  CU_UN_ABS,
  CU_UN_SQUARE,
  CU_UN_SQRT,
  CU_UN_RSQRT,
  CU_UN_EXP,
  CU_UN_LOG,
  CU_UN_LOG1P,
  CU_UN_EXPM1,
  CU_UN_SIGN,
  CU_UN_RECIPROCAL,
  CU_UN_FLOOR,
  CU_UN_CEIL,
  CU_UN_ROUND, /* half to even */
  CU_UN_SIN,
  CU_UN_COS,
  CU_UN_TAN,
  CU_UN_ASIN,
  CU_UN_ACOS,
  CU_UN_ATAN,
  CU_UN_SINH,
  CU_UN_COSH,
  CU_UN_ASINH,
  CU_UN_ACOSH,
  CU_UN_ATANH,
  CU_UN_TANH,
  CU_UN_SIGMOID,
  CU_UN_ERF,
  CU_UN_ERFC,
  CU_UN_LGAMMA,
  CU_UN_RELU,
  CU_UN_RELU6,
  CU_UN_ELU,
  CU_UN_SELU,
  CU_UN_LEAKY_RELU, /* alpha */
  CU_UN_SOFTPLUS,
  CU_UN_SOFTSIGN,
  /* bool output from here on */
  CU_UN_ISNAN,
  CU_UN_ISINF,
  CU_UN_ISFINITE,
  CU_UN_LOGICAL_NOT, /* bool input */
  CU_UN_COUNT
} weft_cu_unary_t;
#define CU_UN_FIRST_BOOL_OUT CU_UN_ISNAN

/* Binary ops z = f(x, y) with broadcasting; argument order is TensorFlow's (for the gradients:
 * ReluGrad(gradients, features), SigmoidGrad(y, dy), ...). */
typedef enum weft_cu_binary {
  CU_BIN_ADD = 0,
  CU_BIN_SUB,
  CU_BIN_MUL,
  CU_BIN_DIV, /* floats only */
  CU_BIN_DIV_NO_NAN,
  CU_BIN_FLOORDIV,
  CU_BIN_FLOORMOD,
  CU_BIN_TRUNCMOD,
  CU_BIN_POW,
  CU_BIN_MAX, /* NaN wins */
  CU_BIN_MIN,
  CU_BIN_SQDIFF,
  CU_BIN_ATAN2,
  CU_BIN_RELU_GRAD,
  CU_BIN_RELU6_GRAD,
  CU_BIN_LEAKY_RELU_GRAD, /* alpha */
  CU_BIN_ELU_GRAD,
  CU_BIN_SELU_GRAD,
  CU_BIN_SOFTPLUS_GRAD,
  CU_BIN_SOFTSIGN_GRAD,
  CU_BIN_SIGMOID_GRAD,
  CU_BIN_TANH_GRAD,
  CU_BIN_SQRT_GRAD,
  CU_BIN_RSQRT_GRAD,
  CU_BIN_RECIPROCAL_GRAD,
  /* bool output from here on */
  CU_BIN_EQ,
  CU_BIN_NE,
  CU_BIN_LT,
  CU_BIN_LE,
  CU_BIN_GT,
  CU_BIN_GE,
  CU_BIN_AND, /* bool inputs */
  CU_BIN_OR,
  CU_BIN_COUNT
} weft_cu_binary_t;
#define CU_BIN_FIRST_BOOL_OUT CU_BIN_EQ

/* Reductions. Floats accumulate in double (like the CPU backend), integers in 64-bit
 * two's-complement arithmetic truncated at the end; MAX/MIN let NaN win. */
typedef enum weft_cu_reduce {
  CU_RED_SUM = 0,
  CU_RED_MEAN,
  CU_RED_PROD,
  CU_RED_MAX,
  CU_RED_MIN,
  CU_RED_ALL, /* bool */
  CU_RED_ANY,
  CU_RED_L2, /* sum of squares / 2 */
  CU_RED_COUNT
} weft_cu_reduce_t;

/* Broadcast geometry of up to three operands over a collapsed output shape (see cu_shape.c):
 * output element i, written as coordinates over dims[0..rank), reads operand k at
 * sum(coord[d] * strides[k][d]). */
#define CU_MAX_DIMS 8
typedef struct weft_cu_geom {
  int32_t rank;
  int64_t n; /* output elements */
  int64_t dims[CU_MAX_DIMS];
  int64_t strides[3][CU_MAX_DIMS];
} weft_cu_geom_t;

/* A strided copy: element coord goes from in[in_off + coord . in_strides] to
 * out[out_off + coord . out_strides] (in elements). Tile views each dim as two, hence twice the
 * rank. */
#define CU_MAX_COPY_DIMS 16
typedef struct weft_cu_copy {
  int32_t rank;
  int64_t n;
  int64_t in_off, out_off;
  int64_t dims[CU_MAX_COPY_DIMS];
  int64_t in_strides[CU_MAX_COPY_DIMS];
  int64_t out_strides[CU_MAX_COPY_DIMS];
} weft_cu_copy_t;

/* Optimizer updates, TensorFlow's formulas (see cu_train.c). The scalars are device pointers to
 * one element of the variable's dtype each, read by the kernel, so a training step never waits
 * for the host. */
typedef enum weft_cu_train {
  CU_TRAIN_SGD = 0,  /* scalars: alpha */
  CU_TRAIN_MOMENTUM, /* lr, momentum */
  CU_TRAIN_ADAGRAD,  /* lr */
  CU_TRAIN_ADAM,     /* beta1_power, beta2_power, lr, beta1, beta2, epsilon */
  CU_TRAIN_RMSPROP,  /* lr, rho, momentum, epsilon */
} weft_cu_train_t;

typedef struct weft_cu_train_args {
  int32_t kind;
  int32_t nesterov, update_slots;
  int64_t n;
  void *var, *s1, *s2; /* the variable and its slots (accum / m, v / ms, mom) */
  const void *grad;
  const void *scalars[6];
} weft_cu_train_args_t;

/* kernels/elementwise.cu */
cudaError_t weft__cu_k_unary(cudaStream_t s, int op, weft_cu_dt_t dt, const void *x, void *y,
                             int64_t n, double alpha);
cudaError_t weft__cu_k_binary(cudaStream_t s, int op, weft_cu_dt_t dt, const weft_cu_geom_t *g,
                              const void *x, const void *y, void *z, double alpha);
/* z = c ? t : e over the geometry (operands c, t, e); elem_size 1, 2, 4 or 8. */
cudaError_t weft__cu_k_select(cudaStream_t s, size_t elem_size, const weft_cu_geom_t *g,
                              const void *c, const void *t, const void *e, void *z);
/* ClipByValue: z = min(max(t, lo), hi) the way TensorFlow orders it (t > hi ? hi : t, then
 * < lo ? lo : that; NaN passes through), over the geometry (operands t, lo, hi). */
cudaError_t weft__cu_k_clip(cudaStream_t s, weft_cu_dt_t dt, const weft_cu_geom_t *g,
                            const void *t, const void *lo, const void *hi, void *z);
cudaError_t weft__cu_k_cast(cudaStream_t s, weft_cu_dt_t src, weft_cu_dt_t dst, const void *x,
                            void *y, int64_t n);
cudaError_t weft__cu_k_train(cudaStream_t s, weft_cu_dt_t dt, const weft_cu_train_args_t *a);

/* kernels/movement.cu */
/* y[0..n) = the elem_size-byte pattern (its low bytes). */
cudaError_t weft__cu_k_fill(cudaStream_t s, size_t elem_size, void *y, int64_t n,
                            uint64_t pattern);
cudaError_t weft__cu_k_copy(cudaStream_t s, size_t elem_size, const weft_cu_copy_t *c,
                            const void *in, void *out);

/* kernels/reduce.cu */
/* x viewed as [rows, len], y[rows]; count is what MEAN divides by. partial: device scratch of
 * weft__cu_reduce_partial_bytes(rows, len) bytes (NULL when that is 0). */
size_t weft__cu_reduce_partial_bytes(int64_t rows, int64_t len);
cudaError_t weft__cu_k_reduce_rows(cudaStream_t s, int op, weft_cu_dt_t dt, const void *x,
                                   void *y, int64_t rows, int64_t len, int64_t count,
                                   void *partial);
/* x viewed as [outer, mid, inner], y[outer, inner], reduced over mid. */
cudaError_t weft__cu_k_reduce_cols(cudaStream_t s, int op, weft_cu_dt_t dt, const void *x,
                                   void *y, int64_t outer, int64_t mid, int64_t inner,
                                   int64_t count);
/* ArgMax / ArgMin over mid of [outer, mid, inner]: int32 (out64 = 0) or int64 indices; the first
 * NaN wins, then the first extreme value. */
cudaError_t weft__cu_k_arg(cudaStream_t s, int is_max, weft_cu_dt_t dt, const void *x, void *y,
                           int out64, int64_t outer, int64_t mid, int64_t inner);
/* Softmax or LogSoftmax over the last dim of [rows, cols]. */
cudaError_t weft__cu_k_softmax(cudaStream_t s, weft_cu_dt_t dt, const void *x, void *y,
                               int64_t rows, int64_t cols, int log_softmax);
/* SoftmaxCrossEntropyWithLogits on [rows, cols]: loss[rows] and backprop[rows, cols]. logits row
 * r starts at r * x_rstride. Dense labels (sparse = 0) are probabilities of the logits' dtype,
 * row r at r * l_rstride (0 broadcasts one row); sparse labels are int64 class indices in
 * [0, cols), checked by the host. */
cudaError_t weft__cu_k_xent(cudaStream_t s, weft_cu_dt_t dt, const void *logits, int64_t x_rstride,
                            const void *labels, int64_t l_rstride, int sparse, void *loss,
                            void *backprop, int64_t rows, int64_t cols);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_CU_KERNELS_H */
