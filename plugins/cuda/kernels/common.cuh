/* common.cuh: what the CUDA kernel files share: launch geometry (grid-stride loops over
 * 256-thread blocks), the index types (32-bit arithmetic whenever every offset fits, because
 * 64-bit division costs tens of instructions on a GPU), broadcast offsets, and the dtype switch
 * that turns a weft_cu_dt_t into a C++ type. Device code only sees plain pointers and the
 * structs of cu_kernels.h. */
#ifndef WEFT_CU_COMMON_CUH
#define WEFT_CU_COMMON_CUH

#include <cstdint>

#include <cuda_runtime.h>

#include "../cu_kernels.h"

namespace weft_cu {

constexpr int kThreads = 256;
/* Grids stop growing here; grid-stride loops cover larger inputs. */
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

inline unsigned grid_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > kMaxBlocks) b = kMaxBlocks;
  return static_cast<unsigned>(b);
}

/* True when every element index and offset below `limit` fits the 32-bit loops (with room for
 * the grid stride). */
inline bool fits32(int64_t limit) { return limit >= 0 && limit < (int64_t(1) << 31); }

/* The largest offset plus one an operand of a geometry reaches. */
inline int64_t geom_extent(const weft_cu_geom_t &g, int k) {
  int64_t e = 1;
  for (int d = 0; d < g.rank; d++) e += (g.dims[d] - 1) * g.strides[k][d];
  return e;
}

/* Offsets of output element i into K operands of a broadcast geometry. */
template <typename I, int K>
__device__ __forceinline__ void geom_offsets(I i, const weft_cu_geom_t &g, I (&off)[K]) {
  if (g.rank == 1) {
#pragma unroll
    for (int k = 0; k < K; k++) off[k] = i * static_cast<I>(g.strides[k][0]);
    return;
  }
#pragma unroll
  for (int k = 0; k < K; k++) off[k] = 0;
  I rem = i;
  for (int d = g.rank - 1; d >= 0; d--) {
    I dim = static_cast<I>(g.dims[d]);
    I c = rem % dim;
    rem /= dim;
#pragma unroll
    for (int k = 0; k < K; k++) off[k] += c * static_cast<I>(g.strides[k][d]);
  }
}

#define WEFT_CU_GRID_LOOP(I, i, n)                                                        \
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < static_cast<I>(n); \
       i += static_cast<I>(gridDim.x) * blockDim.x)

template <typename T> struct is_float { static constexpr bool value = false; };
template <> struct is_float<float> { static constexpr bool value = true; };
template <> struct is_float<double> { static constexpr bool value = true; };

/* Unsigned twin of an integer type, for arithmetic that wraps like TensorFlow's. */
template <typename T> struct unsigned_of { using type = T; };
template <> struct unsigned_of<int32_t> { using type = uint32_t; };
template <> struct unsigned_of<int64_t> { using type = uint64_t; };

inline cudaError_t launched() { return cudaGetLastError(); }

} /* namespace weft_cu */

/* Calls F<T>(args...) for the C++ type of a weft_cu_dt_t (bool is uint8_t). */
#define WEFT_CU_DISPATCH(dt, F, ...)                                   \
  ([&]() -> cudaError_t {                                              \
    switch (dt) {                                                      \
      case CU_DT_F32: return F<float>(__VA_ARGS__);                    \
      case CU_DT_F64: return F<double>(__VA_ARGS__);                   \
      case CU_DT_I32: return F<int32_t>(__VA_ARGS__);                  \
      case CU_DT_I64: return F<int64_t>(__VA_ARGS__);                  \
      case CU_DT_BOOL: return F<uint8_t>(__VA_ARGS__);                 \
      default: return cudaErrorInvalidValue;                           \
    }                                                                  \
  }())

#endif /* WEFT_CU_COMMON_CUH */
