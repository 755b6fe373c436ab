/* cpu_vmath.h: the CPU plugin's vectorised float32 math (Exp, Log, Tanh, Sigmoid, Expm1, Log1p,
 * Erf, Softplus, Elu, Selu, Sqrt, Rsqrt, Reciprocal, Softsign, Square, Neg, Abs, Relu, Relu6,
 * Sin, Cos, Erfc; the binary Add, Sub, Mul, Div, Maximum, Minimum, SquaredDifference, Pow) and
 * the run-time choice among its builds for each instruction set
 * level: baseline x86-64 (SSE2), AVX2+FMA and AVX-512F. Each level is the same source
 * (cpu_vmath_impl.h) compiled in its own file with its own -m flags, so the plugin as a whole
 * still runs on any x86-64; a level's functions are only called once __builtin_cpu_supports
 * says the CPU has it.
 * Plain C with no SDK types, so that tests/test_cpu_math.c can call every level directly. */
#ifndef WEFT_CPU_VMATH_H
#define WEFT_CPU_VMATH_H

#include <stdint.h>

typedef enum weft_cpu_isa {
  WEFT_CPU_ISA_BASELINE = 0,
  WEFT_CPU_ISA_AVX2 = 1,   /* AVX2 and FMA */
  WEFT_CPU_ISA_AVX512 = 2, /* AVX-512F (and FMA) */
  WEFT_CPU_ISA_COUNT
} weft_cpu_isa_t;

/* y[i] = f(x[i]) for i < n; x and y may be the same array. */
typedef void (*weft_cpu_vm_fn)(const float *x, float *y, int64_t n);

/* z[i] = f(x[i], y[i]) for i < n; z may be x or y (never overlapping them otherwise). */
typedef void (*weft_cpu_vm2_fn)(const float *x, const float *y, float *z, int64_t n);

/* A binary function's three loops: both operands arrays (vv), x a scalar read at x[0] (sv),
 * y a scalar read at y[0] (vs). */
typedef struct weft_cpu_vm2 {
  weft_cpu_vm2_fn vv, sv, vs;
} weft_cpu_vm2_t;

/* The unary functions by code, for the chain evaluator (`chain` below). */
typedef enum weft_cpu_vop {
  WEFT_CPU_VOP_EXP, WEFT_CPU_VOP_LOG, WEFT_CPU_VOP_TANH, WEFT_CPU_VOP_SIGMOID,
  WEFT_CPU_VOP_EXPM1, WEFT_CPU_VOP_LOG1P, WEFT_CPU_VOP_ERF, WEFT_CPU_VOP_SOFTPLUS,
  WEFT_CPU_VOP_ELU, WEFT_CPU_VOP_SELU, WEFT_CPU_VOP_SQRT, WEFT_CPU_VOP_RSQRT,
  WEFT_CPU_VOP_RECIPROCAL, WEFT_CPU_VOP_SOFTSIGN, WEFT_CPU_VOP_SQUARE, WEFT_CPU_VOP_NEG,
  WEFT_CPU_VOP_RELU, WEFT_CPU_VOP_RELU6, WEFT_CPU_VOP_SIN, WEFT_CPU_VOP_COS, WEFT_CPU_VOP_ABS,
  WEFT_CPU_VOP_ERFC,
  /* Forms for inputs a fused chain knows the range of (cpu_fused.c): the same bits as Sigmoid
   * and Tanh there, with less work. */
  WEFT_CPU_VOP_SIGMOID_ABOVE_M87, WEFT_CPU_VOP_TANH_NONNEG_SMALL,
  WEFT_CPU_VOP_COUNT
} weft_cpu_vop_t;

/* y[i] = ops[n_ops - 1](... ops[0](x[i])) for i < n, each op a weft_cpu_vop_t: the functions
 * applied one after the other to each vector while it sits in registers, so the same bits as
 * the loops called one after the other. n_ops >= 1; x and y may be the same array. */
typedef void (*weft_cpu_vm_chain_fn)(const uint8_t *ops, int n_ops, const float *x, float *y,
                                     int64_t n);

typedef struct weft_cpu_vmath {
  weft_cpu_vm_fn exp, log, tanh, sigmoid;
  weft_cpu_vm_fn expm1, log1p, erf, softplus, elu, selu;
  weft_cpu_vm_fn sqrt, rsqrt, reciprocal, softsign, square, neg, relu, relu6, sin, cos, abs;
  weft_cpu_vm_fn erfc;
  /* Sigmoid of x >= -87 and Tanh of x in [-0, 8] (NaN either way): Sigmoid's and Tanh's bits
   * there, without the work the rest of the range needs (cpu_vmath_impl.h). */
  weft_cpu_vm_fn sigmoid_above_m87, tanh_nonneg_small;
  /* x OP y, x the op's first argument. */
  weft_cpu_vm2_t add, sub, mul, div, maximum, minimum, sqdiff, pow;
  /* x < 0 ? x * y : x: LeakyRelu as `vs` with y its alpha. */
  weft_cpu_vm2_t leaky;
  /* float64 Exp, Sigmoid, Tanh (cpu_vmath_impl.h has their error bounds); no streaming forms. */
  void (*exp_f64)(const double *x, double *y, int64_t n);
  void (*sigmoid_f64)(const double *x, double *y, int64_t n);
  void (*tanh_f64)(const double *x, double *y, int64_t n);
  weft_cpu_vm_chain_fn chain;
  /* The same functions storing their output with streaming (non-temporal) stores wherever y's
   * alignment allows: y's cache lines are written without being read first and are not kept in
   * cache. Same bits. The stores are weakly ordered: weft__cpu_stream_fence() before anyone else
   * reads y. (The streaming table's own nt is itself.) */
  const struct weft_cpu_vmath *nt;
} weft_cpu_vmath_t;

extern const weft_cpu_vmath_t weft__cpu_vmath_baseline;
#if defined(__x86_64__) || defined(__i386__)
extern const weft_cpu_vmath_t weft__cpu_vmath_avx2;
extern const weft_cpu_vmath_t weft__cpu_vmath_avx512;
#endif

/* "baseline", "avx2", "avx512". */
const char *weft__cpu_isa_name(weft_cpu_isa_t isa);
/* Whether this CPU (and its OS) can run `isa`'s code. */
int weft__cpu_isa_supported(weft_cpu_isa_t isa);
/* The functions built for `isa` (which must be supported). */
const weft_cpu_vmath_t *weft__cpu_vmath_for(weft_cpu_isa_t isa);
/* The level to use: the best this CPU supports, or `request` (WEFT_CPU_ISA's value, may be
 * NULL or empty) where it names a supported level. Where it names an unknown or unsupported
 * level, the best supported one instead and *warning (else NULL) says why, in a string the
 * caller frees with free(). */
weft_cpu_isa_t weft__cpu_isa_choose(const char *request, char **warning);
/* The functions the plugin's kernels call: those of the level set at plugin init (elementwise
 * registration), baseline before that. Every kernel file reads the one choice. */
const weft_cpu_vmath_t *weft__cpu_vmath(void);
void weft__cpu_vmath_set(const weft_cpu_vmath_t *vm);

/* Outputs of at least this many bytes are written with streaming stores (the `stream` loop):
 * WEFT_CPU_STREAM_BYTES's value (`request`, may be NULL or empty; 0 turns streaming off) where
 * it is a valid size, else the last-level cache's size (sysconf, then sysfs; 32 MiB where neither
 * says), since an output that size no longer fits in cache beside its input and its consumer
 * reads it from memory anyway. Where `request` is not a valid size, *warning (else NULL) says
 * why, in a string the caller frees with free(). */
int64_t weft__cpu_stream_choose(const char *request, char **warning);
/* The threshold the kernels use (set at plugin init; 0: never stream), and its setter. */
int64_t weft__cpu_stream_bytes(void);
void weft__cpu_stream_set(int64_t bytes);
/* Orders this thread's streaming stores before its later stores (the pool's hand-off included):
 * called once at the end of every range of work that streamed. */
void weft__cpu_stream_fence(void);

#endif
