/* movement.cu: the CUDA kernels that move elements without arithmetic: fills with a repeated
 * pattern (Fill, ZerosLike, OnesLike, reduction identities) and the strided copy behind
 * Transpose, BroadcastTo, Slice, Tile, ConcatV2, Pack, Pad, Split and the reduction regrouping.
 * Both work on element sizes (1, 2, 4, 8 bytes), not dtypes: moving bytes does not care what
 * they mean. */
#include "common.cuh"

namespace weft_cu {
namespace {

template <typename E>
__global__ void fill_kernel(E *__restrict__ y, int64_t n, E value) {
  WEFT_CU_GRID_LOOP(int64_t, i, n) y[i] = value;
}

template <typename E>
cudaError_t launch_fill(cudaStream_t s, void *y, int64_t n, uint64_t pattern) {
  fill_kernel<E><<<grid_for(n), kThreads, 0, s>>>(static_cast<E *>(y), n,
                                                  static_cast<E>(pattern));
  return launched();
}

/* Output element i, row-major over c.dims, goes from in[in_off + coord . in_strides] to
 * out[out_off + coord . out_strides]. */
template <typename E, typename I>
__global__ void copy_kernel(weft_cu_copy_t c, const E *__restrict__ in, E *__restrict__ out) {
  WEFT_CU_GRID_LOOP(I, i, c.n) {
    I rem = i, src = static_cast<I>(c.in_off), dst = static_cast<I>(c.out_off);
    for (int d = c.rank - 1; d >= 0; d--) {
      const I dim = static_cast<I>(c.dims[d]);
      const I k = rem % dim;
      rem /= dim;
      src += k * static_cast<I>(c.in_strides[d]);
      dst += k * static_cast<I>(c.out_strides[d]);
    }
    out[dst] = in[src];
  }
}

int64_t copy_extent(const weft_cu_copy_t &c, int64_t off, const int64_t *strides) {
  int64_t e = off + 1;
  for (int d = 0; d < c.rank; d++) e += (c.dims[d] - 1) * strides[d];
  return e;
}

template <typename E>
cudaError_t launch_copy(cudaStream_t s, const weft_cu_copy_t *c, const void *in, void *out) {
  const E *src = static_cast<const E *>(in);
  E *dst = static_cast<E *>(out);
  if (fits32(c->n) && fits32(copy_extent(*c, c->in_off, c->in_strides)) &&
      fits32(copy_extent(*c, c->out_off, c->out_strides)))
    copy_kernel<E, uint32_t><<<grid_for(c->n), kThreads, 0, s>>>(*c, src, dst);
  else
    copy_kernel<E, int64_t><<<grid_for(c->n), kThreads, 0, s>>>(*c, src, dst);
  return launched();
}

} /* namespace */
} /* namespace weft_cu */

using namespace weft_cu;

extern "C" {

cudaError_t weft__cu_k_fill(cudaStream_t s, size_t elem_size, void *y, int64_t n,
                            uint64_t pattern) {
  if (n <= 0) return cudaSuccess;
  bool bytes_repeat = true; /* the pattern is one byte repeated: a memset does it */
  for (size_t b = 1; b < elem_size; b++)
    if (((pattern >> (8 * b)) & 0xffu) != (pattern & 0xffu)) bytes_repeat = false;
  if (bytes_repeat)
    return cudaMemsetAsync(y, static_cast<int>(pattern & 0xffu),
                           static_cast<size_t>(n) * elem_size, s);
  switch (elem_size) {
    case 2: return launch_fill<uint16_t>(s, y, n, pattern);
    case 4: return launch_fill<uint32_t>(s, y, n, pattern);
    case 8: return launch_fill<unsigned long long>(s, y, n, pattern);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t weft__cu_k_copy(cudaStream_t s, size_t elem_size, const weft_cu_copy_t *c,
                            const void *in, void *out) {
  if (c->n <= 0) return cudaSuccess;
  if (c->rank < 1 || c->rank > CU_MAX_COPY_DIMS) return cudaErrorInvalidValue;
  switch (elem_size) {
    case 1: return launch_copy<uint8_t>(s, c, in, out);
    case 2: return launch_copy<uint16_t>(s, c, in, out);
    case 4: return launch_copy<uint32_t>(s, c, in, out);
    case 8: return launch_copy<unsigned long long>(s, c, in, out);
    default: return cudaErrorInvalidValue;
  }
}

} /* extern "C" */
