/* elementwise.cu: the CUDA kernels that compute one output element from one element of each
 * input: unary math and activations, binary arithmetic / comparisons / logic / activation
 * gradients with TensorFlow broadcasting, ClipByValue, Select, Cast, and the optimizer updates.
 *
 * One kernel per element type (and index width for the broadcasting ones), with the op a
 * run-time switch: the op is the same for every thread, so the switch costs a jump per element
 * and no divergence, and the build instantiates a handful of kernels instead of one per op and
 * dtype. The formulas are the CPU backend's (plugins/cpu/cpu_elementwise.c, cpu_binary.c,
 * cpu_train.c), written with CUDA's libm, which follows C99's special cases. No fast-math: NaN,
 * infinities and denormals go through like on the CPU. */
#include "common.cuh"

namespace weft_cu {
namespace {

/* SELU's constants (Klambauer et al.), as TensorFlow uses them. */
constexpr double kSeluScale = 1.0507009873554804934193349852946;
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;

/* ---------------------------------------------------------------------------------------------
 * Unary */

template <typename T>
__device__ __forceinline__ T unary_float(int op, T a, T alpha) {
  switch (op) {
    case CU_UN_NEG: return -a;
    case CU_UN_ABS: return fabs(a);
    case CU_UN_SQUARE: return a * a;
    case CU_UN_SQRT: return sqrt(a);
    case CU_UN_RSQRT: return T(1) / sqrt(a);
    case CU_UN_EXP: return exp(a);
    case CU_UN_LOG: return log(a);
    case CU_UN_LOG1P: return log1p(a);
    case CU_UN_EXPM1: return expm1(a);
    case CU_UN_SIGN: return a > T(0) ? T(1) : (a < T(0) ? T(-1) : a);
    case CU_UN_RECIPROCAL: return T(1) / a;
    case CU_UN_FLOOR: return floor(a);
    case CU_UN_CEIL: return ceil(a);
    case CU_UN_ROUND: return rint(a);
    case CU_UN_SIN: return sin(a);
    case CU_UN_COS: return cos(a);
    case CU_UN_TAN: return tan(a);
    case CU_UN_ASIN: return asin(a);
    case CU_UN_ACOS: return acos(a);
    case CU_UN_ATAN: return atan(a);
    case CU_UN_SINH: return sinh(a);
    case CU_UN_COSH: return cosh(a);
    case CU_UN_ASINH: return asinh(a);
    case CU_UN_ACOSH: return acosh(a);
    case CU_UN_ATANH: return atanh(a);
    case CU_UN_TANH: return tanh(a);
    case CU_UN_SIGMOID: return T(1) / (T(1) + exp(-a));
    case CU_UN_ERF: return erf(a);
    case CU_UN_ERFC: return erfc(a);
    case CU_UN_LGAMMA: return lgamma(a);
    case CU_UN_RELU: return a < T(0) ? T(0) : a;
    case CU_UN_RELU6: return a < T(0) ? T(0) : (a > T(6) ? T(6) : a);
    case CU_UN_ELU: return a < T(0) ? expm1(a) : a;
    case CU_UN_SELU:
      return a < T(0) ? T(kSeluScale * kSeluAlpha) * expm1(a) : T(kSeluScale) * a;
    case CU_UN_LEAKY_RELU: return a < T(0) ? alpha * a : a;
    case CU_UN_SOFTPLUS: {
      /* Where log1p(exp(x)) adds nothing: log(epsilon) + 2. */
      const T thr = sizeof(T) == 4 ? T(-13.942385) : T(-34.043653);
      return a > -thr ? a : (a < thr ? exp(a) : log1p(exp(a)));
    }
    case CU_UN_SOFTSIGN: return a / (T(1) + fabs(a));
    default: return a;
  }
}

template <typename T>
__device__ __forceinline__ T unary_int(int op, T a) {
  using U = typename unsigned_of<T>::type;
  switch (op) {
    case CU_UN_NEG: return static_cast<T>(U(0) - static_cast<U>(a));
    case CU_UN_ABS: return a < 0 ? static_cast<T>(U(0) - static_cast<U>(a)) : a;
    case CU_UN_SQUARE: return static_cast<T>(static_cast<U>(a) * static_cast<U>(a));
    case CU_UN_SIGN: return static_cast<T>((a > 0) - (a < 0));
    case CU_UN_RELU: return a < 0 ? T(0) : a;
    case CU_UN_RELU6: return a < 0 ? T(0) : (a > 6 ? T(6) : a);
    default: return a; /* ROUND */
  }
}

template <typename T>
__device__ __forceinline__ uint8_t unary_bool_out(int op, T a) {
  if constexpr (is_float<T>::value) {
    switch (op) {
      case CU_UN_ISNAN: return isnan(a) ? 1 : 0;
      case CU_UN_ISINF: return isinf(a) ? 1 : 0;
      case CU_UN_ISFINITE: return isfinite(a) ? 1 : 0;
      default: return 0;
    }
  } else {
    return a == 0 ? 1 : 0; /* LogicalNot */
  }
}

template <typename T>
__global__ void unary_kernel(int op, const T *__restrict__ x, void *__restrict__ y, int64_t n,
                             T alpha) {
  if (op >= CU_UN_FIRST_BOOL_OUT) {
    uint8_t *out = static_cast<uint8_t *>(y);
    WEFT_CU_GRID_LOOP(int64_t, i, n) out[i] = unary_bool_out<T>(op, x[i]);
    return;
  }
  if constexpr (sizeof(T) > 1) { /* bool has only LogicalNot */
    T *out = static_cast<T *>(y);
    WEFT_CU_GRID_LOOP(int64_t, i, n) {
      if constexpr (is_float<T>::value)
        out[i] = unary_float<T>(op, x[i], alpha);
      else
        out[i] = unary_int<T>(op, x[i]);
    }
  }
}

template <typename T>
cudaError_t launch_unary(cudaStream_t s, int op, const void *x, void *y, int64_t n,
                         double alpha) {
  unary_kernel<T><<<grid_for(n), kThreads, 0, s>>>(op, static_cast<const T *>(x), y, n,
                                                   static_cast<T>(alpha));
  return launched();
}

/* ---------------------------------------------------------------------------------------------
 * Binary */

template <typename T>
__device__ __forceinline__ T binary_float(int op, T a, T b, T alpha) {
  switch (op) {
    case CU_BIN_ADD: return a + b;
    case CU_BIN_SUB: return a - b;
    case CU_BIN_MUL: return a * b;
    case CU_BIN_DIV: return a / b;
    case CU_BIN_DIV_NO_NAN: return b == T(0) ? T(0) : a / b;
    case CU_BIN_FLOORDIV: return floor(a / b);
    case CU_BIN_FLOORMOD: {
      T m = fmod(a, b);
      return (m != T(0) && ((m < T(0)) != (b < T(0)))) ? m + b : m;
    }
    case CU_BIN_TRUNCMOD: return fmod(a, b);
    case CU_BIN_POW: return pow(a, b);
    case CU_BIN_MAX: return (a > b || a != a) ? a : b;
    case CU_BIN_MIN: return (a < b || a != a) ? a : b;
    case CU_BIN_SQDIFF: return (a - b) * (a - b);
    case CU_BIN_ATAN2: return atan2(a, b);
    case CU_BIN_RELU_GRAD: return b > T(0) ? a : T(0);
    case CU_BIN_RELU6_GRAD: return (b > T(0) && b < T(6)) ? a : T(0);
    case CU_BIN_LEAKY_RELU_GRAD: return b > T(0) ? a : alpha * a;
    case CU_BIN_ELU_GRAD: return b < T(0) ? a * (b + T(1)) : a;
    case CU_BIN_SELU_GRAD:
      return b < T(0) ? a * (b + T(kSeluScale * kSeluAlpha)) : a * T(kSeluScale);
    case CU_BIN_SOFTPLUS_GRAD: return a / (T(1) + exp(-b));
    case CU_BIN_SOFTSIGN_GRAD: return a / ((T(1) + fabs(b)) * (T(1) + fabs(b)));
    case CU_BIN_SIGMOID_GRAD: return b * a * (T(1) - a);
    case CU_BIN_TANH_GRAD: return b * (T(1) - a * a);
    case CU_BIN_SQRT_GRAD: return b * T(0.5) / a;
    case CU_BIN_RSQRT_GRAD: return b * T(-0.5) * a * a * a;
    case CU_BIN_RECIPROCAL_GRAD: return -b * a * a;
    default: return a;
  }
}

template <typename T>
__device__ __forceinline__ T binary_int(int op, T a, T b) {
  using U = typename unsigned_of<T>::type;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (op) {
    case CU_BIN_ADD: return static_cast<T>(ua + ub);
    case CU_BIN_SUB: return static_cast<T>(ua - ub);
    case CU_BIN_MUL: return static_cast<T>(ua * ub);
    case CU_BIN_MAX: return a > b ? a : b;
    case CU_BIN_MIN: return a < b ? a : b;
    case CU_BIN_SQDIFF: return static_cast<T>((ua - ub) * (ua - ub));
    default: return a;
  }
}

template <typename T>
__device__ __forceinline__ uint8_t binary_bool_out(int op, T a, T b) {
  if constexpr (sizeof(T) == 1) { /* bool operands */
    const bool x = a != 0, y = b != 0;
    switch (op) {
      case CU_BIN_EQ: return x == y;
      case CU_BIN_NE: return x != y;
      case CU_BIN_AND: return x && y;
      case CU_BIN_OR: return x || y;
      default: return 0;
    }
  } else {
    switch (op) {
      case CU_BIN_EQ: return a == b;
      case CU_BIN_NE: return a != b;
      case CU_BIN_LT: return a < b;
      case CU_BIN_LE: return a <= b;
      case CU_BIN_GT: return a > b;
      case CU_BIN_GE: return a >= b;
      default: return 0;
    }
  }
}

template <typename T, typename I>
__global__ void binary_kernel(int op, weft_cu_geom_t g, const T *__restrict__ x,
                              const T *__restrict__ y, void *__restrict__ z, T alpha) {
  const bool bool_out = op >= CU_BIN_FIRST_BOOL_OUT;
  WEFT_CU_GRID_LOOP(I, i, g.n) {
    I off[2];
    geom_offsets<I, 2>(i, g, off);
    const T a = x[off[0]], b = y[off[1]];
    if (bool_out) {
      static_cast<uint8_t *>(z)[i] = binary_bool_out<T>(op, a, b);
    } else if constexpr (is_float<T>::value) {
      static_cast<T *>(z)[i] = binary_float<T>(op, a, b, alpha);
    } else if constexpr (sizeof(T) > 1) {
      static_cast<T *>(z)[i] = binary_int<T>(op, a, b);
    }
  }
}

template <typename T>
cudaError_t launch_binary(cudaStream_t s, int op, const weft_cu_geom_t *g, const void *x,
                          const void *y, void *z, double alpha) {
  const T *xt = static_cast<const T *>(x), *yt = static_cast<const T *>(y);
  if (fits32(g->n) && fits32(geom_extent(*g, 0)) && fits32(geom_extent(*g, 1)))
    binary_kernel<T, uint32_t><<<grid_for(g->n), kThreads, 0, s>>>(op, *g, xt, yt, z, T(alpha));
  else
    binary_kernel<T, int64_t><<<grid_for(g->n), kThreads, 0, s>>>(op, *g, xt, yt, z, T(alpha));
  return launched();
}

/* ---------------------------------------------------------------------------------------------
 * ClipByValue, Select */

template <typename T, typename I>
__global__ void clip_kernel(weft_cu_geom_t g, const T *__restrict__ t, const T *__restrict__ lo,
                            const T *__restrict__ hi, T *__restrict__ z) {
  WEFT_CU_GRID_LOOP(I, i, g.n) {
    I off[3];
    geom_offsets<I, 3>(i, g, off);
    T v = t[off[0]];
    const T h = hi[off[2]], l = lo[off[1]];
    v = v > h ? h : v;
    z[i] = v < l ? l : v;
  }
}

template <typename T>
cudaError_t launch_clip(cudaStream_t s, const weft_cu_geom_t *g, const void *t, const void *lo,
                        const void *hi, void *z) {
  const T *tt = static_cast<const T *>(t), *l = static_cast<const T *>(lo),
          *h = static_cast<const T *>(hi);
  T *zt = static_cast<T *>(z);
  if (fits32(g->n))
    clip_kernel<T, uint32_t><<<grid_for(g->n), kThreads, 0, s>>>(*g, tt, l, h, zt);
  else
    clip_kernel<T, int64_t><<<grid_for(g->n), kThreads, 0, s>>>(*g, tt, l, h, zt);
  return launched();
}

template <typename E, typename I>
__global__ void select_kernel(weft_cu_geom_t g, const uint8_t *__restrict__ c,
                              const E *__restrict__ t, const E *__restrict__ e,
                              E *__restrict__ z) {
  WEFT_CU_GRID_LOOP(I, i, g.n) {
    I off[3];
    geom_offsets<I, 3>(i, g, off);
    z[i] = c[off[0]] ? t[off[1]] : e[off[2]];
  }
}

template <typename E>
cudaError_t launch_select(cudaStream_t s, const weft_cu_geom_t *g, const void *c, const void *t,
                          const void *e, void *z) {
  const uint8_t *cc = static_cast<const uint8_t *>(c);
  const E *tt = static_cast<const E *>(t), *ee = static_cast<const E *>(e);
  E *zz = static_cast<E *>(z);
  if (fits32(g->n))
    select_kernel<E, uint32_t><<<grid_for(g->n), kThreads, 0, s>>>(*g, cc, tt, ee, zz);
  else
    select_kernel<E, int64_t><<<grid_for(g->n), kThreads, 0, s>>>(*g, cc, tt, ee, zz);
  return launched();
}

/* ---------------------------------------------------------------------------------------------
 * Cast: through double for floating sources, int64 for integers and bool, like the CPU backend:
 * integers wrap, floating to integer truncates toward zero and saturates (NaN gives 0),
 * anything to bool is != 0. */

template <typename D>
__device__ __forceinline__ D cast_from_double(double v) {
  if constexpr (is_float<D>::value) {
    return static_cast<D>(v);
  } else if constexpr (sizeof(D) == 1) {
    return v != 0.0 ? 1 : 0;
  } else {
    constexpr double lo = sizeof(D) == 4 ? -2147483648.0 : -9223372036854775808.0;
    if (v != v) return 0;
    if (v <= lo) return sizeof(D) == 4 ? D(INT32_MIN) : D(INT64_MIN);
    if (v >= -lo) return sizeof(D) == 4 ? D(INT32_MAX) : D(INT64_MAX);
    return static_cast<D>(v);
  }
}

template <typename S, typename D>
__global__ void cast_kernel(const S *__restrict__ x, D *__restrict__ y, int64_t n) {
  WEFT_CU_GRID_LOOP(int64_t, i, n) {
    const S v = x[i];
    if constexpr (sizeof(D) == 1 && !is_float<D>::value) {
      y[i] = v != S(0) ? 1 : 0;
    } else if constexpr (is_float<S>::value) {
      y[i] = cast_from_double<D>(static_cast<double>(v));
    } else if constexpr (sizeof(S) == 1) {
      y[i] = static_cast<D>(v != 0 ? 1 : 0);
    } else {
      y[i] = static_cast<D>(static_cast<int64_t>(v));
    }
  }
}

template <typename S>
cudaError_t launch_cast_from(cudaStream_t s, weft_cu_dt_t dst, const void *x, void *y,
                             int64_t n) {
  const S *xs = static_cast<const S *>(x);
  const unsigned grid = grid_for(n);
#define WEFT_CU_CAST_TO(DT, D)                                                      \
  case DT:                                                                          \
    cast_kernel<S, D><<<grid, kThreads, 0, s>>>(xs, static_cast<D *>(y), n);        \
    break;
  switch (dst) {
    WEFT_CU_CAST_TO(CU_DT_F32, float)
    WEFT_CU_CAST_TO(CU_DT_F64, double)
    WEFT_CU_CAST_TO(CU_DT_I32, int32_t)
    WEFT_CU_CAST_TO(CU_DT_I64, int64_t)
    WEFT_CU_CAST_TO(CU_DT_BOOL, uint8_t)
    default: return cudaErrorInvalidValue;
  }
#undef WEFT_CU_CAST_TO
  return launched();
}

/* ---------------------------------------------------------------------------------------------
 * Optimizer updates (TensorFlow's formulas, as plugins/cpu/cpu_train.c computes them). */

template <typename T>
__global__ void train_kernel(weft_cu_train_args_t a) {
  T *__restrict__ var = static_cast<T *>(a.var);
  T *__restrict__ s1 = static_cast<T *>(a.s1);
  T *__restrict__ s2 = static_cast<T *>(a.s2);
  const T *__restrict__ g = static_cast<const T *>(a.grad);
  T c[6];
#pragma unroll
  for (int k = 0; k < 6; k++)
    c[k] = a.scalars[k] != nullptr ? *static_cast<const T *>(a.scalars[k]) : T(0);
  switch (a.kind) {
    case CU_TRAIN_SGD: {
      const T alpha = c[0];
      WEFT_CU_GRID_LOOP(int64_t, i, a.n) var[i] -= alpha * g[i];
      break;
    }
    case CU_TRAIN_MOMENTUM: {
      const T lr = c[0], mom = c[1];
      WEFT_CU_GRID_LOOP(int64_t, i, a.n) {
        const T acc = s1[i] * mom + g[i];
        s1[i] = acc;
        if (a.nesterov)
          var[i] -= g[i] * lr + acc * mom * lr;
        else
          var[i] -= lr * acc;
      }
      break;
    }
    case CU_TRAIN_ADAGRAD: {
      const T lr = c[0];
      WEFT_CU_GRID_LOOP(int64_t, i, a.n) {
        T acc = s1[i];
        if (a.update_slots) {
          acc += g[i] * g[i];
          s1[i] = acc;
        }
        var[i] -= lr * g[i] / sqrt(acc);
      }
      break;
    }
    case CU_TRAIN_ADAM: {
      const T beta1 = c[3], beta2 = c[4], eps = c[5];
      /* lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t), in double like the CPU backend. */
      const T lr_t = static_cast<T>(static_cast<double>(c[2]) *
                                    sqrt(1.0 - static_cast<double>(c[1])) /
                                    (1.0 - static_cast<double>(c[0])));
      WEFT_CU_GRID_LOOP(int64_t, i, a.n) {
        const T gi = g[i];
        const T m = s1[i] + (gi - s1[i]) * (T(1) - beta1);
        const T v = s2[i] + (gi * gi - s2[i]) * (T(1) - beta2);
        s1[i] = m;
        s2[i] = v;
        if (a.nesterov)
          var[i] -= (gi * (T(1) - beta1) + beta1 * m) * lr_t / (sqrt(v) + eps);
        else
          var[i] -= m * lr_t / (sqrt(v) + eps);
      }
      break;
    }
    case CU_TRAIN_RMSPROP: {
      const T lr = c[0], rho = c[1], momentum = c[2], eps = c[3];
      WEFT_CU_GRID_LOOP(int64_t, i, a.n) {
        const T gi = g[i];
        const T ms = s1[i] + (gi * gi - s1[i]) * (T(1) - rho);
        s1[i] = ms;
        const T mom = s2[i] * momentum + lr * gi / sqrt(ms + eps);
        s2[i] = mom;
        var[i] -= mom;
      }
      break;
    }
    default: break;
  }
}

} /* namespace */
} /* namespace weft_cu */

using namespace weft_cu;

extern "C" {

cudaError_t weft__cu_k_unary(cudaStream_t s, int op, weft_cu_dt_t dt, const void *x, void *y,
                             int64_t n, double alpha) {
  if (n <= 0) return cudaSuccess;
  switch (dt) {
    case CU_DT_F32: return launch_unary<float>(s, op, x, y, n, alpha);
    case CU_DT_F64: return launch_unary<double>(s, op, x, y, n, alpha);
    case CU_DT_I32: return launch_unary<int32_t>(s, op, x, y, n, alpha);
    case CU_DT_I64: return launch_unary<int64_t>(s, op, x, y, n, alpha);
    case CU_DT_BOOL: return launch_unary<uint8_t>(s, op, x, y, n, alpha);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t weft__cu_k_binary(cudaStream_t s, int op, weft_cu_dt_t dt, const weft_cu_geom_t *g,
                              const void *x, const void *y, void *z, double alpha) {
  if (g->n <= 0) return cudaSuccess;
  return WEFT_CU_DISPATCH(dt, launch_binary, s, op, g, x, y, z, alpha);
}

cudaError_t weft__cu_k_clip(cudaStream_t s, weft_cu_dt_t dt, const weft_cu_geom_t *g,
                            const void *t, const void *lo, const void *hi, void *z) {
  if (g->n <= 0) return cudaSuccess;
  switch (dt) {
    case CU_DT_F32: return launch_clip<float>(s, g, t, lo, hi, z);
    case CU_DT_F64: return launch_clip<double>(s, g, t, lo, hi, z);
    case CU_DT_I32: return launch_clip<int32_t>(s, g, t, lo, hi, z);
    case CU_DT_I64: return launch_clip<int64_t>(s, g, t, lo, hi, z);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t weft__cu_k_select(cudaStream_t s, size_t elem_size, const weft_cu_geom_t *g,
                              const void *c, const void *t, const void *e, void *z) {
  if (g->n <= 0) return cudaSuccess;
  switch (elem_size) {
    case 1: return launch_select<uint8_t>(s, g, c, t, e, z);
    case 2: return launch_select<uint16_t>(s, g, c, t, e, z);
    case 4: return launch_select<uint32_t>(s, g, c, t, e, z);
    case 8: return launch_select<unsigned long long>(s, g, c, t, e, z);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t weft__cu_k_cast(cudaStream_t s, weft_cu_dt_t src, weft_cu_dt_t dst, const void *x,
                            void *y, int64_t n) {
  if (n <= 0) return cudaSuccess;
  return WEFT_CU_DISPATCH(src, launch_cast_from, s, dst, x, y, n);
}

cudaError_t weft__cu_k_train(cudaStream_t s, weft_cu_dt_t dt, const weft_cu_train_args_t *a) {
  if (a->n <= 0) return cudaSuccess;
  switch (dt) {
    case CU_DT_F32: train_kernel<float><<<grid_for(a->n), kThreads, 0, s>>>(*a); break;
    case CU_DT_F64: train_kernel<double><<<grid_for(a->n), kThreads, 0, s>>>(*a); break;
    default: return cudaErrorInvalidValue;
  }
  return launched();
}

} /* extern "C" */
