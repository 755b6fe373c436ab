/* reduce.cu: the CUDA kernels that fold many elements into one: Sum, Mean, Prod, Max, Min, All,
 * Any and L2Loss over rows ([rows, len], a block per row, or a grid of blocks per row and a
 * second pass when there are few long rows) or columns ([outer, mid, inner], a thread per
 * output); ArgMax / ArgMin; Softmax / LogSoftmax and the softmax cross-entropy losses (a warp
 * per row).
 *
 * Accumulators follow the CPU backend (plugins/cpu/cpu_reduce.c, cpu_nn.c): floats in double,
 * integers in 64-bit two's complement truncated at the end, bools as ints; Max and Min let NaN
 * win; Softmax sums in double. The order of the additions differs from the CPU's, so float
 * results agree to rounding, not bit for bit. */
#include <cfloat>
#include <climits>

#include "common.cuh"

namespace weft_cu {
namespace {

template <typename T> struct acc_of { using type = double; };
template <> struct acc_of<int32_t> { using type = long long; };
template <> struct acc_of<int64_t> { using type = long long; };
template <> struct acc_of<uint8_t> { using type = int; };

template <typename A> __device__ __forceinline__ A red_init(int op);

template <> __device__ __forceinline__ double red_init<double>(int op) {
  switch (op) {
    case CU_RED_PROD: return 1.0;
    case CU_RED_MAX: return -INFINITY;
    case CU_RED_MIN: return INFINITY;
    default: return 0.0;
  }
}

template <> __device__ __forceinline__ long long red_init<long long>(int op) {
  switch (op) {
    case CU_RED_PROD: return 1;
    case CU_RED_MAX: return LLONG_MIN;
    case CU_RED_MIN: return LLONG_MAX;
    default: return 0;
  }
}

template <> __device__ __forceinline__ int red_init<int>(int op) { return op == CU_RED_ALL ? 1 : 0; }

__device__ __forceinline__ double combine(int op, double s, double v) {
  switch (op) {
    case CU_RED_PROD: return s * v;
    case CU_RED_MAX: return (v > s || v != v) ? v : s;
    case CU_RED_MIN: return (v < s || v != v) ? v : s;
    default: return s + v;
  }
}

__device__ __forceinline__ long long combine(int op, long long s, long long v) {
  using U = unsigned long long;
  switch (op) {
    case CU_RED_PROD: return static_cast<long long>(static_cast<U>(s) * static_cast<U>(v));
    case CU_RED_MAX: return v > s ? v : s;
    case CU_RED_MIN: return v < s ? v : s;
    default: return static_cast<long long>(static_cast<U>(s) + static_cast<U>(v));
  }
}

__device__ __forceinline__ int combine(int op, int s, int v) {
  return op == CU_RED_ALL ? (s & v) : (s | v);
}

template <typename T, typename A>
__device__ __forceinline__ A red_load(int op, T x) {
  if constexpr (is_float<T>::value) {
    const double v = static_cast<double>(x);
    return op == CU_RED_L2 ? v * v : v;
  } else if constexpr (sizeof(T) == 1) {
    return x != 0 ? 1 : 0;
  } else {
    return static_cast<long long>(x);
  }
}

template <typename T, typename A>
__device__ __forceinline__ T red_finish(int op, A s, int64_t count) {
  if constexpr (is_float<T>::value) {
    if (op == CU_RED_MEAN) return static_cast<T>(s / static_cast<double>(count));
    if (op == CU_RED_L2) return static_cast<T>(s / 2);
    return static_cast<T>(s);
  } else if constexpr (sizeof(T) == 1) {
    return s != 0 ? 1 : 0;
  } else {
    if (op == CU_RED_MEAN) return static_cast<T>(count != 0 ? s / count : 0);
    return static_cast<T>(s);
  }
}

/* Reduces v over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in
 * thread 0. `shared` holds 32 accumulators. */
template <typename A>
__device__ __forceinline__ A block_reduce(int op, A v, A *shared) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine(op, v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int n_warps = blockDim.x >> 5;
    v = lane < n_warps ? shared[lane] : red_init<A>(op);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = combine(op, v, __shfl_down_sync(0xffffffffu, v, o));
  }
  __syncthreads(); /* shared is reused by the caller's next row */
  return v;
}

/* A block per row of x ([rows, len] of T, or of accumulators when x_acc); y gets the finished
 * T values (y_final) or accumulators. */
template <typename T>
__global__ void rows_kernel(int op, const void *__restrict__ x, int x_acc, void *__restrict__ y,
                            int y_final, int64_t rows, int64_t len, int64_t count) {
  using A = typename acc_of<T>::type;
  __shared__ A shared[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    A acc = red_init<A>(op);
    if (x_acc) {
      const A *xr = static_cast<const A *>(x) + r * len;
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x) acc = combine(op, acc, xr[j]);
    } else {
      const T *xr = static_cast<const T *>(x) + r * len;
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
        acc = combine(op, acc, red_load<T, A>(op, xr[j]));
    }
    acc = block_reduce<A>(op, acc, shared);
    if (threadIdx.x == 0) {
      if (y_final)
        static_cast<T *>(y)[r] = red_finish<T, A>(op, acc, count);
      else
        static_cast<A *>(y)[r] = acc;
    }
  }
}

/* First pass for few long rows: block (c, r) reduces chunk c of row r into partial[r][c]. */
template <typename T>
__global__ void partial_kernel(int op, const T *__restrict__ x,
                               typename acc_of<T>::type *__restrict__ partial, int64_t rows,
                               int64_t len, int64_t chunk, int64_t chunks) {
  using A = typename acc_of<T>::type;
  __shared__ A shared[32];
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const int64_t begin = blockIdx.x * chunk;
    const int64_t end = begin + chunk < len ? begin + chunk : len;
    const T *xr = x + r * len;
    A acc = red_init<A>(op);
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x)
      acc = combine(op, acc, red_load<T, A>(op, xr[j]));
    acc = block_reduce<A>(op, acc, shared);
    if (threadIdx.x == 0) partial[r * chunks + blockIdx.x] = acc;
  }
}

/* A thread per output of [outer, mid, inner] reduced over mid. */
template <typename T>
__global__ void cols_kernel(int op, const T *__restrict__ x, T *__restrict__ y, int64_t outer,
                            int64_t mid, int64_t inner, int64_t count) {
  using A = typename acc_of<T>::type;
  WEFT_CU_GRID_LOOP(int64_t, o, outer * inner) {
    const int64_t a = o / inner, b = o % inner;
    const T *p = x + a * mid * inner + b;
    A acc = red_init<A>(op);
    for (int64_t m = 0; m < mid; m++) acc = combine(op, acc, red_load<T, A>(op, p[m * inner]));
    y[o] = red_finish<T, A>(op, acc, count);
  }
}

/* Rows shorter than this are a thread's loop rather than a block's. */
constexpr int64_t kShortRow = 128;
/* Elements one block of the first pass folds, and the most blocks the first pass launches. */
constexpr int64_t kChunk = 8192;
constexpr int64_t kMaxPartialBlocks = 2048;

/* How the row reduction of [rows, len] splits: chunks per row (1: no first pass). */
int64_t partial_chunks(int64_t rows, int64_t len) {
  if (len < kShortRow || len < 2 * kChunk || rows <= 0) return 1;
  int64_t chunks = (len + kChunk - 1) / kChunk;
  int64_t cap = kMaxPartialBlocks / rows;
  if (chunks > cap) chunks = cap;
  return chunks < 2 ? 1 : chunks;
}

template <typename T>
cudaError_t launch_rows(cudaStream_t s, int op, const void *x, void *y, int64_t rows,
                        int64_t len, int64_t count, void *partial) {
  using A = typename acc_of<T>::type;
  if (len < kShortRow) {
    cols_kernel<T><<<grid_for(rows), kThreads, 0, s>>>(op, static_cast<const T *>(x),
                                                       static_cast<T *>(y), rows, len, 1, count);
    return launched();
  }
  const unsigned grid = static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
  const int64_t chunks = partial_chunks(rows, len);
  if (chunks == 1 || partial == nullptr) {
    rows_kernel<T><<<grid, kThreads, 0, s>>>(op, x, 0, y, 1, rows, len, count);
    return launched();
  }
  const int64_t chunk = (len + chunks - 1) / chunks;
  dim3 pgrid(static_cast<unsigned>(chunks), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  partial_kernel<T><<<pgrid, kThreads, 0, s>>>(op, static_cast<const T *>(x),
                                               static_cast<A *>(partial), rows, len, chunk,
                                               chunks);
  cudaError_t e = launched();
  if (e != cudaSuccess) return e;
  rows_kernel<T><<<grid, kThreads, 0, s>>>(op, partial, 1, y, 1, rows, chunks, count);
  return launched();
}

template <typename T>
cudaError_t launch_cols(cudaStream_t s, int op, const void *x, void *y, int64_t outer,
                        int64_t mid, int64_t inner, int64_t count) {
  cols_kernel<T><<<grid_for(outer * inner), kThreads, 0, s>>>(
      op, static_cast<const T *>(x), static_cast<T *>(y), outer, mid, inner, count);
  return launched();
}

/* ---------------------------------------------------------------------------------------------
 * ArgMax / ArgMin: candidate (v, i) beats (best, bi) when it is the first NaN, or better, or as
 * good and earlier. */

template <typename T>
__device__ __forceinline__ bool arg_beats(T v, int64_t i, T best, int64_t bi, bool is_max) {
  if constexpr (is_float<T>::value) {
    const bool vn = v != v, bn = best != best;
    if (vn || bn) return vn && (!bn || i < bi);
  }
  if (v == best) return i < bi;
  return is_max ? v > best : v < best;
}

template <typename T>
__device__ __forceinline__ void store_index(void *y, int out64, int64_t at, int64_t idx) {
  if (out64)
    static_cast<int64_t *>(y)[at] = idx;
  else
    static_cast<int32_t *>(y)[at] = static_cast<int32_t>(idx);
}

template <typename T>
__global__ void arg_cols_kernel(int is_max, const T *__restrict__ x, void *__restrict__ y,
                                int out64, int64_t outer, int64_t mid, int64_t inner) {
  WEFT_CU_GRID_LOOP(int64_t, o, outer * inner) {
    const int64_t a = o / inner, b = o % inner;
    const T *p = x + a * mid * inner + b;
    T best = p[0];
    int64_t bi = 0;
    for (int64_t m = 1; m < mid; m++) {
      const T v = p[m * inner];
      if (arg_beats<T>(v, m, best, bi, is_max != 0)) {
        best = v;
        bi = m;
      }
    }
    store_index<T>(y, out64, o, bi);
  }
}

/* A block per row when the axis is innermost and long. */
template <typename T>
__global__ void arg_rows_kernel(int is_max, const T *__restrict__ x, void *__restrict__ y,
                                int out64, int64_t rows, int64_t len) {
  __shared__ T sv[32];
  __shared__ int64_t si[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *xr = x + r * len;
    T best = xr[0];
    int64_t bi = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const T v = xr[j];
      if (arg_beats<T>(v, j, best, bi, is_max != 0)) {
        best = v;
        bi = j;
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const T v = __shfl_down_sync(0xffffffffu, best, o);
      const int64_t i = __shfl_down_sync(0xffffffffu, bi, o);
      if (arg_beats<T>(v, i, best, bi, is_max != 0)) {
        best = v;
        bi = i;
      }
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
      sv[warp] = best;
      si[warp] = bi;
    }
    __syncthreads();
    if (warp == 0) {
      const int n_warps = blockDim.x >> 5;
      best = lane < n_warps ? sv[lane] : xr[0];
      bi = lane < n_warps ? si[lane] : 0;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const T v = __shfl_down_sync(0xffffffffu, best, o);
        const int64_t i = __shfl_down_sync(0xffffffffu, bi, o);
        if (arg_beats<T>(v, i, best, bi, is_max != 0)) {
          best = v;
          bi = i;
        }
      }
      if (lane == 0) store_index<T>(y, out64, r, bi);
    }
    __syncthreads();
  }
}

template <typename T>
cudaError_t launch_arg(cudaStream_t s, int is_max, const void *x, void *y, int out64,
                       int64_t outer, int64_t mid, int64_t inner) {
  const T *xt = static_cast<const T *>(x);
  if (inner == 1 && mid >= 1024) {
    const unsigned grid = static_cast<unsigned>(outer < kMaxBlocks ? outer : kMaxBlocks);
    arg_rows_kernel<T><<<grid, kThreads, 0, s>>>(is_max, xt, y, out64, outer, mid);
  } else {
    arg_cols_kernel<T><<<grid_for(outer * inner), kThreads, 0, s>>>(is_max, xt, y, out64, outer,
                                                                    mid, inner);
  }
  return launched();
}

/* ---------------------------------------------------------------------------------------------
 * Softmax and cross-entropy: a warp per row. */

constexpr int kWarpsPerBlock = kThreads / 32;

template <typename A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* The row maximum the CPU backend takes: a running "x > max ? x : max" from x[0], so NaN only
 * counts when it comes first. Either way a NaN makes the whole row NaN later. */
template <typename T>
__device__ __forceinline__ T warp_row_max(const T *xr, int64_t cols, int lane) {
  T mx = xr[0];
  for (int64_t j = lane; j < cols; j += 32) mx = xr[j] > mx ? xr[j] : mx;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const T v = __shfl_xor_sync(0xffffffffu, mx, o);
    mx = v > mx ? v : mx;
  }
  return mx;
}

template <typename T>
__global__ void softmax_kernel(const T *__restrict__ x, T *__restrict__ y, int64_t rows,
                               int64_t cols, int log_softmax) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
       r < rows; r += warps) {
    const T *xr = x + r * cols;
    T *yr = y + r * cols;
    const T mx = warp_row_max<T>(xr, cols, lane);
    double sum = 0;
    for (int64_t j = lane; j < cols; j += 32) sum += static_cast<double>(exp(xr[j] - mx));
    sum = warp_sum<double>(sum);
    if (log_softmax) {
      const T lse = static_cast<T>(log(sum));
      for (int64_t j = lane; j < cols; j += 32) yr[j] = xr[j] - mx - lse;
    } else {
      const T inv = static_cast<T>(1.0 / sum);
      for (int64_t j = lane; j < cols; j += 32) yr[j] = exp(xr[j] - mx) * inv;
    }
  }
}

template <typename T>
__global__ void xent_kernel(const T *__restrict__ x, int64_t x_rstride,
                            const void *__restrict__ labels, int64_t l_rstride, int sparse,
                            T *__restrict__ loss, T *__restrict__ bp, int64_t rows,
                            int64_t cols) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
       r < rows; r += warps) {
    const T *xr = x + r * x_rstride;
    T *br = bp + r * cols;
    const T mx = warp_row_max<T>(xr, cols, lane);
    double sum = 0;
    for (int64_t j = lane; j < cols; j += 32) sum += exp(static_cast<double>(xr[j] - mx));
    sum = warp_sum<double>(sum);
    const double lse = log(sum);
    double l = 0;
    if (sparse) {
      const int64_t label = static_cast<const int64_t *>(labels)[r];
      for (int64_t j = lane; j < cols; j += 32)
        br[j] = static_cast<T>(exp(static_cast<double>(xr[j] - mx)) / sum -
                               (j == label ? 1.0 : 0.0));
      if (lane == 0) l = lse - static_cast<double>(xr[label] - mx);
    } else {
      const T *lr = static_cast<const T *>(labels) + r * l_rstride;
      for (int64_t j = lane; j < cols; j += 32) {
        const double logp = static_cast<double>(xr[j] - mx) - lse;
        if (lr[j] != T(0)) l -= static_cast<double>(lr[j]) * logp;
        br[j] = static_cast<T>(exp(logp) - static_cast<double>(lr[j]));
      }
      l = warp_sum<double>(l);
    }
    if (lane == 0) loss[r] = static_cast<T>(l);
  }
}

unsigned warp_grid(int64_t rows) {
  int64_t b = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

} /* namespace */
} /* namespace weft_cu */

using namespace weft_cu;

extern "C" {

size_t weft__cu_reduce_partial_bytes(int64_t rows, int64_t len) {
  const int64_t chunks = partial_chunks(rows, len);
  return chunks == 1 ? 0 : static_cast<size_t>(rows * chunks) * sizeof(double);
}

cudaError_t weft__cu_k_reduce_rows(cudaStream_t s, int op, weft_cu_dt_t dt, const void *x,
                                   void *y, int64_t rows, int64_t len, int64_t count,
                                   void *partial) {
  if (rows <= 0 || len <= 0) return cudaSuccess;
  return WEFT_CU_DISPATCH(dt, launch_rows, s, op, x, y, rows, len, count, partial);
}

cudaError_t weft__cu_k_reduce_cols(cudaStream_t s, int op, weft_cu_dt_t dt, const void *x,
                                   void *y, int64_t outer, int64_t mid, int64_t inner,
                                   int64_t count) {
  if (outer <= 0 || inner <= 0 || mid <= 0) return cudaSuccess;
  return WEFT_CU_DISPATCH(dt, launch_cols, s, op, x, y, outer, mid, inner, count);
}

cudaError_t weft__cu_k_arg(cudaStream_t s, int is_max, weft_cu_dt_t dt, const void *x, void *y,
                           int out64, int64_t outer, int64_t mid, int64_t inner) {
  if (outer <= 0 || inner <= 0 || mid <= 0) return cudaSuccess;
  switch (dt) {
    case CU_DT_F32: return launch_arg<float>(s, is_max, x, y, out64, outer, mid, inner);
    case CU_DT_F64: return launch_arg<double>(s, is_max, x, y, out64, outer, mid, inner);
    case CU_DT_I32: return launch_arg<int32_t>(s, is_max, x, y, out64, outer, mid, inner);
    case CU_DT_I64: return launch_arg<int64_t>(s, is_max, x, y, out64, outer, mid, inner);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t weft__cu_k_softmax(cudaStream_t s, weft_cu_dt_t dt, const void *x, void *y,
                               int64_t rows, int64_t cols, int log_softmax) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  switch (dt) {
    case CU_DT_F32:
      softmax_kernel<float><<<warp_grid(rows), kThreads, 0, s>>>(
          static_cast<const float *>(x), static_cast<float *>(y), rows, cols, log_softmax);
      break;
    case CU_DT_F64:
      softmax_kernel<double><<<warp_grid(rows), kThreads, 0, s>>>(
          static_cast<const double *>(x), static_cast<double *>(y), rows, cols, log_softmax);
      break;
    default: return cudaErrorInvalidValue;
  }
  return launched();
}

cudaError_t weft__cu_k_xent(cudaStream_t s, weft_cu_dt_t dt, const void *logits, int64_t x_rstride,
                            const void *labels, int64_t l_rstride, int sparse, void *loss,
                            void *backprop, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  switch (dt) {
    case CU_DT_F32:
      xent_kernel<float><<<warp_grid(rows), kThreads, 0, s>>>(
          static_cast<const float *>(logits), x_rstride, labels, l_rstride, sparse,
          static_cast<float *>(loss), static_cast<float *>(backprop), rows, cols);
      break;
    case CU_DT_F64:
      xent_kernel<double><<<warp_grid(rows), kThreads, 0, s>>>(
          static_cast<const double *>(logits), x_rstride, labels, l_rstride, sparse,
          static_cast<double *>(loss), static_cast<double *>(backprop), rows, cols);
      break;
    default: return cudaErrorInvalidValue;
  }
  return launched();
}

} /* extern "C" */
