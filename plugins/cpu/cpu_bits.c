/* cpu_bits.c: CPU kernels of the bit-level ops and a few counting ops, with TensorFlow's
 * semantics (bitcast_op.cc, cwise_op_bitwise_*.cc, cwise_op_{left,right}_shift.cc,
 * population_count_op.cc, compare_and_bitpack_op.cc, check_numerics_op.cc, bincount_op.cc,
 * histogram_op.cc, the AccumulateNV2 rewrite):
 *   Bitcast            the bytes of the input reinterpreted (little-endian, like TensorFlow on
 *                      every platform it runs on), the last dim added or removed when the
 *                      element sizes differ;
 *   BitwiseAnd/Or/Xor, LeftShift, RightShift   broadcasting; shift amounts are clamped to
 *                      [0, bits - 1], left shifts run in the unsigned type (no UB), right
 *                      shifts of signed values are arithmetic;
 *   Invert, PopulationCount (uint8 output);
 *   CompareAndBitpack  (x > threshold) packed 8 to a byte, the first element in the top bit;
 *   CheckNumerics      forwards its input, or fails naming the `message` attr;
 *   Bincount, HistogramFixedWidth, AccumulateNV2, and Cumprod on float16/bfloat16. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

/* TensorFlow's DataTypeString, which its messages use ("float", not "float32"). */
static const char *tf_type_name(weft_dtype_t dt) {
  switch (dt) {
    case WEFT_DT_FLOAT: return "float";
    case WEFT_DT_DOUBLE: return "double";
    case WEFT_DT_HALF: return "half";
    default: return weft__cpu_dtype_name(dt);
  }
}

/* The integer dtypes as X(dtype, C type, same-width unsigned type, signed). */
#define BITS_INT_TYPES(X)                  \
  X(WEFT_DT_INT8, int8_t, uint8_t, 1)      \
  X(WEFT_DT_INT16, int16_t, uint16_t, 1)   \
  X(WEFT_DT_INT32, int32_t, uint32_t, 1)   \
  X(WEFT_DT_INT64, int64_t, uint64_t, 1)   \
  X(WEFT_DT_UINT8, uint8_t, uint8_t, 0)    \
  X(WEFT_DT_UINT16, uint16_t, uint16_t, 0) \
  X(WEFT_DT_UINT32, uint32_t, uint32_t, 0) \
  X(WEFT_DT_UINT64, uint64_t, uint64_t, 0)

static const weft_dtype_t int_types[] = {
    WEFT_DT_INT8,  WEFT_DT_INT16,  WEFT_DT_INT32,  WEFT_DT_INT64,
    WEFT_DT_UINT8, WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64,
};
#define N_INT_TYPES (sizeof int_types / sizeof int_types[0])

/* ---------------------------------------------------------------------------------------------
 * Bitcast */

static weft_status_t *k_bitcast(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  weft_dtype_t to;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "type", WEFT_DT_INVALID, &to));
  size_t in_size = weft__cpu_dtype_size(x.dtype), out_size = weft__cpu_dtype_size(to);
  if (in_size == 0 || out_size == 0 || x.dtype == WEFT_DT_STRING || to == WEFT_DT_STRING ||
      x.dtype == WEFT_DT_BOOL || to == WEFT_DT_BOOL ||
      (in_size > out_size ? in_size % out_size : out_size % in_size) != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "cannot convert between datatype %s and %s",
                           tf_type_name(x.dtype), tf_type_name(to));
  char shape[CPU_SHAPE_STR_LEN];
  int rank = x.rank;
  int64_t dims[WEFT_MAX_RANK + 1];
  memcpy(dims, x.dims, sizeof(int64_t) * (size_t)x.rank);
  if (in_size < out_size) {
    if (x.rank == 0 || x.dims[x.rank - 1] != (int64_t)(out_size / in_size))
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Cannot bitcast from %s to %s: shape %s",
                             tf_type_name(x.dtype), tf_type_name(to),
                             weft__cpu_shape_str(x.rank, x.dims, shape, sizeof shape));
    rank--;
  } else if (in_size > out_size) {
    if (x.rank >= WEFT_MAX_RANK)
      return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                             "Bitcast from %s to %s of a rank %d tensor exceeds rank %d",
                             tf_type_name(x.dtype), tf_type_name(to), x.rank, WEFT_MAX_RANK);
    dims[rank++] = (int64_t)(in_size / out_size);
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, to, rank, dims, &y));
  if (x.num_elements > 0) memcpy(y.data, x.data, (size_t)x.num_elements * in_size);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift: broadcasting binary ops. */

typedef enum bit_op { BIT_AND, BIT_OR, BIT_XOR, BIT_LSHIFT, BIT_RSHIFT } bit_op_t;

typedef struct bit_spec {
  const char *name;
  bit_op_t op;
} bit_spec_t;

static const bit_spec_t bit_specs[] = {
    {"BitwiseAnd", BIT_AND}, {"BitwiseOr", BIT_OR},       {"BitwiseXor", BIT_XOR},
    {"LeftShift", BIT_LSHIFT}, {"RightShift", BIT_RSHIFT},
};

typedef struct bit_job {
  bit_op_t op;
  weft_dtype_t dtype;
  const weft_cpu_bcast_t *bc;
  const void *x, *y;
  void *z;
} bit_job_t;

/* The shift amount clamped to [0, bits - 1] as TensorFlow does: negative amounts (neg, from a
 * signed type) shift by 0, too large ones by bits - 1. */
static inline unsigned clamp_shift(bool neg, uint64_t amount, unsigned bits) {
  if (neg) return 0;
  return amount > bits - 1 ? bits - 1 : (unsigned)amount;
}
#define SHIFT_OF(T, S, b) \
  clamp_shift(S && (int64_t)(b) < 0, (uint64_t)(b), (unsigned)(sizeof(T) * 8))

#define BIT_CASE(DT, T, UT, S)                                                               \
  case DT: {                                                                                \
    const T *x = (const T *)j->x + off[0];                                                  \
    const T *y = (const T *)j->y + off[1];                                                  \
    T *z = (T *)j->z + pos;                                                                 \
    switch (j->op) {                                                                        \
      case BIT_AND:                                                                         \
        for (int64_t i = 0; i < len; i++) z[i] = (T)(x[i * sx] & y[i * sy]);               \
        break;                                                                              \
      case BIT_OR:                                                                          \
        for (int64_t i = 0; i < len; i++) z[i] = (T)(x[i * sx] | y[i * sy]);               \
        break;                                                                              \
      case BIT_XOR:                                                                         \
        for (int64_t i = 0; i < len; i++) z[i] = (T)(x[i * sx] ^ y[i * sy]);               \
        break;                                                                              \
      case BIT_LSHIFT:                                                                      \
        for (int64_t i = 0; i < len; i++)                                                   \
          z[i] = (T)((UT)((UT)x[i * sx] << SHIFT_OF(T, S, y[i * sy])));                        \
        break;                                                                              \
      case BIT_RSHIFT:                                                                      \
        for (int64_t i = 0; i < len; i++) z[i] = (T)(x[i * sx] >> SHIFT_OF(T, S, y[i * sy]));  \
        break;                                                                              \
    }                                                                                       \
    break;                                                                                  \
  }

static void bit_run(void *arg, const int64_t *off, int64_t pos, int64_t len) {
  const bit_job_t *j = arg;
  int r = j->bc->rank - 1;
  int64_t sx = j->bc->strides[0][r], sy = j->bc->strides[1][r];
  switch (j->dtype) {
    BITS_INT_TYPES(BIT_CASE)
    default: break;
  }
}

static void bit_range(void *arg, int64_t b, int64_t e) {
  const bit_job_t *j = arg;
  weft__cpu_bcast_runs(j->bc, b, e, bit_run, arg);
}

static weft_status_t *k_bitwise(weft_kernel_ctx_t *ctx, void *state) {
  const bit_spec_t *spec = state;
  weft_tensor_view_t x, y, z;
  WEFT_RETURN_IF_ERROR(weft_pc_binary_inputs(ctx, spec->name, &x, &y));
  if (!weft__cpu_dtype_is_int(x.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s", spec->name,
                           weft__cpu_dtype_name(x.dtype));
  const weft_tensor_view_t *ins[2] = {&x, &y};
  weft_cpu_bcast_t bc;
  WEFT_RETURN_IF_ERROR(weft__cpu_bcast_init(ctx, &bc, 2, ins));
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, x.dtype, bc.out_rank, bc.out_dims, &z));
  if (bc.out_elements == 0) return NULL;
  bit_job_t j = {spec->op, x.dtype, &bc, x.data, y.data, z.data};
  weft__cpu_parallel(ctx, bc.out_elements, 1, bit_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Invert, PopulationCount */

typedef struct unary_bits_job {
  bool popcount;
  weft_dtype_t dtype;
  const void *x;
  void *y;
} unary_bits_job_t;

#define UNARY_BITS_CASE(DT, T, UT, S)                                                 \
  case DT: {                                                                         \
    const T *x = (const T *)j->x;                                                    \
    if (j->popcount) {                                                               \
      uint8_t *y = (uint8_t *)j->y;                                                  \
      for (int64_t i = b; i < e; i++) y[i] = (uint8_t)__builtin_popcountll((UT)x[i]); \
    } else {                                                                         \
      T *y = (T *)j->y;                                                              \
      for (int64_t i = b; i < e; i++) y[i] = (T)~x[i];                               \
    }                                                                                \
    break;                                                                           \
  }

static void unary_bits_range(void *arg, int64_t b, int64_t e) {
  const unary_bits_job_t *j = arg;
  switch (j->dtype) {
    BITS_INT_TYPES(UNARY_BITS_CASE)
    default: break;
  }
}

static weft_status_t *k_unary_bits(weft_kernel_ctx_t *ctx, void *state) {
  bool popcount = state != NULL;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  if (!weft__cpu_dtype_is_int(x.dtype))
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "%s has no CPU kernel for %s",
                           popcount ? "PopulationCount" : "Invert",
                           weft__cpu_dtype_name(x.dtype));
  WEFT_RETURN_IF_ERROR(
      weft__cpu_output_like(ctx, 0, popcount ? WEFT_DT_UINT8 : x.dtype, &x, &y));
  if (x.num_elements == 0) return NULL;
  unary_bits_job_t j = {popcount, x.dtype, x.data, y.data};
  weft__cpu_parallel(ctx, x.num_elements, 2, unary_bits_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * CompareAndBitpack */

typedef struct bitpack_job {
  weft_dtype_t dtype;
  const void *x;
  const void *threshold;
  uint8_t *y;
} bitpack_job_t;

#define BITPACK_LOOP(T, LOAD, TH)                                     \
  {                                                                   \
    const T *x = (const T *)j->x;                                     \
    for (int64_t i = b; i < e; i++) {                                 \
      unsigned byte = 0;                                              \
      for (int k = 0; k < 8; k++) byte = (byte << 1) | (LOAD(x[8 * i + k]) > (TH)); \
      j->y[i] = (uint8_t)byte;                                        \
    }                                                                 \
    break;                                                            \
  }
#define PLAIN(v) (v)
#define HALF_F(v) weft__cpu_half_to_float(v)
#define BF16_F(v) weft__cpu_bf16_to_float(v)

static void bitpack_range(void *arg, int64_t b, int64_t e) {
  const bitpack_job_t *j = arg;
  switch (j->dtype) {
    /* bool ignores the threshold: each element is its own bit. */
    case WEFT_DT_BOOL: BITPACK_LOOP(uint8_t, PLAIN, 0)
    case WEFT_DT_HALF:
      BITPACK_LOOP(uint16_t, HALF_F, weft__cpu_half_to_float(*(const uint16_t *)j->threshold))
    case WEFT_DT_BFLOAT16:
      BITPACK_LOOP(uint16_t, BF16_F, weft__cpu_bf16_to_float(*(const uint16_t *)j->threshold))
    case WEFT_DT_FLOAT: BITPACK_LOOP(float, PLAIN, *(const float *)j->threshold)
    case WEFT_DT_DOUBLE: BITPACK_LOOP(double, PLAIN, *(const double *)j->threshold)
    case WEFT_DT_INT8: BITPACK_LOOP(int8_t, PLAIN, *(const int8_t *)j->threshold)
    case WEFT_DT_INT16: BITPACK_LOOP(int16_t, PLAIN, *(const int16_t *)j->threshold)
    case WEFT_DT_INT32: BITPACK_LOOP(int32_t, PLAIN, *(const int32_t *)j->threshold)
    case WEFT_DT_INT64: BITPACK_LOOP(int64_t, PLAIN, *(const int64_t *)j->threshold)
    case WEFT_DT_UINT8: BITPACK_LOOP(uint8_t, PLAIN, *(const uint8_t *)j->threshold)
    case WEFT_DT_UINT16: BITPACK_LOOP(uint16_t, PLAIN, *(const uint16_t *)j->threshold)
    case WEFT_DT_UINT32: BITPACK_LOOP(uint32_t, PLAIN, *(const uint32_t *)j->threshold)
    case WEFT_DT_UINT64: BITPACK_LOOP(uint64_t, PLAIN, *(const uint64_t *)j->threshold)
    default: break;
  }
}

static weft_status_t *k_compare_and_bitpack(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[2], y;
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 2, in));
  char shape[CPU_SHAPE_STR_LEN];
  if (in[1].rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Compare must be a scalar, but saw shape: %s",
                           weft__cpu_shape_str(in[1].rank, in[1].dims, shape, sizeof shape));
  if (in[0].rank == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input should be at least a vector, but saw a scalar.");
  if (in[0].dims[in[0].rank - 1] % 8 != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Inner dimension of input should be divisible by 8, but saw shape: %s",
                           weft__cpu_shape_str(in[0].rank, in[0].dims, shape, sizeof shape));
  int64_t dims[WEFT_MAX_RANK];
  memcpy(dims, in[0].dims, sizeof(int64_t) * (size_t)in[0].rank);
  dims[in[0].rank - 1] /= 8;
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, WEFT_DT_UINT8, in[0].rank, dims, &y));
  if (y.num_elements == 0) return NULL;
  bitpack_job_t j = {in[0].dtype, in[0].data, in[1].data, y.data};
  weft__cpu_parallel(ctx, y.num_elements, 16, bitpack_range, &j);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * CheckNumerics */

static weft_status_t *k_check_numerics(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  bool nan = false, inf = false;
  for (int64_t i = 0; i < x.num_elements; i++) {
    switch (x.dtype) {
      case WEFT_DT_FLOAT: {
        float v = ((const float *)x.data)[i];
        nan |= isnan(v);
        inf |= isinf(v);
        break;
      }
      case WEFT_DT_DOUBLE: {
        double v = ((const double *)x.data)[i];
        nan |= isnan(v);
        inf |= isinf(v);
        break;
      }
      case WEFT_DT_HALF:
      case WEFT_DT_BFLOAT16: {
        uint16_t v = ((const uint16_t *)x.data)[i];
        uint16_t exp_mask = x.dtype == WEFT_DT_HALF ? 0x7c00 : 0x7f80;
        uint16_t man_mask = x.dtype == WEFT_DT_HALF ? 0x03ff : 0x007f;
        if ((v & exp_mask) == exp_mask) {
          nan |= (v & man_mask) != 0;
          inf |= (v & man_mask) == 0;
        }
        break;
      }
      default:
        return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "CheckNumerics has no CPU kernel for %s",
                               weft__cpu_dtype_name(x.dtype));
    }
  }
  if (nan || inf) {
    const char *msg = "";
    size_t len = 0;
    weft_status_t *s = H->attr_string(H->kernel_attrs(ctx), "message", &msg, &len);
    if (s != NULL) {
      H->status_free(s);
      msg = "";
      len = 0;
    }
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "%.*s : Tensor had %s values", (int)len,
                           msg, nan && inf ? "Inf and NaN" : (nan ? "NaN" : "Inf"));
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  if (x.num_elements > 0)
    memcpy(y.data, x.data, (size_t)x.num_elements * weft__cpu_dtype_size(x.dtype));
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Bincount */

static weft_status_t *k_bincount(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], out; /* arr, size, weights */
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  const weft_tensor_view_t *arr = &in[0], *w = &in[2];
  if (in[1].rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Shape must be rank 0 but is rank %d",
                           in[1].rank);
  int64_t size = weft__cpu_index_at(&in[1], 0);
  if (size < 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "size (%lld) must be non-negative",
                           (long long)size);
  bool weighted = w->num_elements > 0;
  if (weighted && !weft_pc_same_shape(arr, w)) {
    weft_pc_shape_pair_t s;
    weft_pc_shape_pair(&s, arr, w);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Input arr and weights must have the same shape or weights must be "
                           "empty: arr %s, weights %s",
                           s.a, s.b);
  }
  const int32_t *a = arr->data;
  for (int64_t i = 0; i < arr->num_elements; i++)
    if (a[i] < 0)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "Input arr must be non-negative!");
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, w->dtype, 1, &size, &out));
  if (size == 0) return NULL;
  memset(out.data, 0, (size_t)size * weft__cpu_dtype_size(w->dtype));
  for (int64_t i = 0; i < arr->num_elements; i++) {
    int64_t bin = a[i];
    if (bin >= size) continue; /* values past the last bin are not counted */
    switch (w->dtype) {
      case WEFT_DT_INT32:
        ((int32_t *)out.data)[bin] = (int32_t)((uint32_t)((int32_t *)out.data)[bin] +
                                               (weighted ? (uint32_t)((const int32_t *)w->data)[i]
                                                         : 1u));
        break;
      case WEFT_DT_INT64:
        ((int64_t *)out.data)[bin] = (int64_t)((uint64_t)((int64_t *)out.data)[bin] +
                                               (weighted ? (uint64_t)((const int64_t *)w->data)[i]
                                                         : 1u));
        break;
      case WEFT_DT_FLOAT:
        ((float *)out.data)[bin] += weighted ? ((const float *)w->data)[i] : 1.0f;
        break;
      case WEFT_DT_DOUBLE:
        ((double *)out.data)[bin] += weighted ? ((const double *)w->data)[i] : 1.0;
        break;
      default:
        return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "Bincount has no CPU kernel for %s",
                               weft__cpu_dtype_name(w->dtype));
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * HistogramFixedWidth: bin = min(nbins - 1, (int)((max(v, lo) - lo) / ((hi - lo) / nbins))),
 * the difference taken in T and the division in double, as TensorFlow computes it. */

static weft_status_t *k_histogram(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t in[3], out; /* values, value_range, nbins */
  WEFT_RETURN_IF_ERROR(weft_pc_inputs(ctx, 3, in));
  const weft_tensor_view_t *v = &in[0], *range = &in[1];
  if (range->rank != 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "value_range should be a vector.");
  if (range->num_elements != 2)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "value_range should be a vector of 2 elements.");
  if (in[2].rank != 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "nbins should be a scalar.");
  int64_t nbins = weft__cpu_index_at(&in[2], 0);
  if (nbins <= 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "nbins should be a positive number, but got '%lld'", (long long)nbins);
  weft_dtype_t out_dtype;
  WEFT_RETURN_IF_ERROR(weft_pc_attr_type(ctx, "dtype", WEFT_DT_INT32, &out_dtype));
  double lo = weft__cpu_get_double(range, 0), hi = weft__cpu_get_double(range, 1);
  bool is_int = weft__cpu_dtype_is_int(v->dtype);
  if (!(lo < hi)) {
    if (is_int)
      return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                             "value_range should satisfy value_range[0] < value_range[1], but "
                             "got '[%lld, %lld]'", (long long)lo, (long long)hi);
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "value_range should satisfy value_range[0] < value_range[1], but got "
                           "'[%g, %g]'", lo, hi);
  }
  WEFT_RETURN_IF_ERROR(weft__cpu_output(ctx, 0, out_dtype, 1, &nbins, &out));
  memset(out.data, 0, (size_t)nbins * weft__cpu_dtype_size(out_dtype));
  double step;
  /* The range's width in T (hi - lo), then in double, as TensorFlow's kernel computes it. */
  switch (v->dtype) {
    case WEFT_DT_FLOAT: step = (double)((float)hi - (float)lo) / (double)nbins; break;
    case WEFT_DT_INT32:
      step = (double)(int32_t)((uint32_t)(int32_t)hi - (uint32_t)(int32_t)lo) / (double)nbins;
      break;
    case WEFT_DT_INT64:
      step = (double)(int64_t)((uint64_t)((const int64_t *)range->data)[1] -
                               (uint64_t)((const int64_t *)range->data)[0]) / (double)nbins;
      break;
    default: step = (hi - lo) / (double)nbins; break;
  }
  for (int64_t i = 0; i < v->num_elements; i++) {
    double d;
    switch (v->dtype) {
      case WEFT_DT_FLOAT: {
        float x = ((const float *)v->data)[i], l = (float)lo;
        if (isnan(x)) continue; /* no bin: TensorFlow's index would be undefined */
        d = (double)((x > l ? x : l) - l);
        break;
      }
      case WEFT_DT_DOUBLE: {
        double x = ((const double *)v->data)[i];
        if (isnan(x)) continue;
        d = (x > lo ? x : lo) - lo;
        break;
      }
      case WEFT_DT_INT32: {
        int32_t x = ((const int32_t *)v->data)[i], l = (int32_t)lo;
        d = (double)(int32_t)((uint32_t)(x > l ? x : l) - (uint32_t)l);
        break;
      }
      case WEFT_DT_INT64: {
        int64_t x = ((const int64_t *)v->data)[i], l = ((const int64_t *)range->data)[0];
        d = (double)(int64_t)((uint64_t)(x > l ? x : l) - (uint64_t)l);
        break;
      }
      default:
        return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED,
                               "HistogramFixedWidth has no CPU kernel for %s",
                               weft__cpu_dtype_name(v->dtype));
    }
    double q = d / step;
    if (q > (double)(nbins - 1)) q = (double)(nbins - 1);
    int64_t bin = q < 0 ? 0 : (int64_t)(int32_t)q;
    if (bin < 0 || bin >= nbins) continue;
    if (out_dtype == WEFT_DT_INT64)
      ((int64_t *)out.data)[bin]++;
    else
      ((int32_t *)out.data)[bin]++;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * AccumulateNV2: the sum of N tensors of one shape (TensorFlow rewrites it into in-place adds
 * on a temporary variable; the answer is the same as AddN's). */

static void accumulate_range(void *arg, int64_t b, int64_t e) {
  const weft_cpu_addn_job_t *j = arg;
  switch (j->dtype) {
    case WEFT_DT_HALF:
    case WEFT_DT_BFLOAT16: {
      /* Each partial sum is rounded back to 16 bits, as TensorFlow's Eigen::half adds are. */
      uint16_t *z = j->out;
      float acc[CPU_F16_BLOCK], t[CPU_F16_BLOCK];
      for (int64_t p = b; p < e; p += CPU_F16_BLOCK) {
        int64_t n = e - p < CPU_F16_BLOCK ? e - p : CPU_F16_BLOCK;
        weft__cpu_f16_to_float(j->dtype, (const uint16_t *)j->ins[0] + p, acc, n);
        for (int k = 1; k < j->n; k++) {
          weft__cpu_f16_to_float(j->dtype, (const uint16_t *)j->ins[k] + p, t, n);
          for (int64_t i = 0; i < n; i++) acc[i] += t[i];
          weft__cpu_float_to_f16(j->dtype, acc, z + p, n);
          weft__cpu_f16_to_float(j->dtype, z + p, acc, n);
        }
        weft__cpu_float_to_f16(j->dtype, acc, z + p, n);
      }
      break;
    }
    default: weft__cpu_addn_range(arg, b, e); break;
  }
}

static weft_status_t *k_accumulate(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  int n = H->kernel_num_inputs(ctx);
  if (n < 1)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT, "AccumulateNV2 needs at least one input");
  const void **ptrs = malloc(sizeof(void *) * (size_t)n);
  if (ptrs == NULL) return weft__cpu_error(ctx, WEFT_RESOURCE_EXHAUSTED, "out of memory");
  weft_tensor_view_t first, z;
  weft_status_t *s = weft__cpu_input(ctx, 0, &first);
  for (int k = 0; k < n && s == NULL; k++) {
    weft_tensor_view_t v;
    s = weft__cpu_input(ctx, k, &v);
    if (s == NULL && (v.dtype != first.dtype || !weft_pc_same_shape(&v, &first))) {
      weft_pc_shape_pair_t sp;
      weft_pc_shape_pair(&sp, &first, &v);
      s = weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                          "AccumulateNV2 inputs must have the same shape and dtype: input 0 is "
                          "%s%s, input %d is %s%s",
                          weft__cpu_dtype_name(first.dtype), sp.a, k,
                          weft__cpu_dtype_name(v.dtype), sp.b);
    }
    if (s == NULL) ptrs[k] = v.data;
  }
  if (s == NULL) s = weft__cpu_output_like(ctx, 0, first.dtype, &first, &z);
  if (s == NULL && first.num_elements > 0) {
    weft_cpu_addn_job_t j = {first.dtype, n, ptrs, z.data};
    weft__cpu_parallel(ctx, first.num_elements, n, accumulate_range, &j);
  }
  free(ptrs);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * Cumprod on float16 and bfloat16 (the other dtypes are cpu_reduce.c's): the running product is
 * rounded to 16 bits at every step, as TensorFlow's Eigen::half arithmetic rounds each multiply. */

static weft_status_t *k_cumprod_f16(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, axis_v, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 1, &axis_v));
  int64_t axis_raw;
  int axis;
  WEFT_RETURN_IF_ERROR(weft__cpu_read_scalar_index(ctx, &axis_v, "axis", &axis_raw));
  if (x.rank == 0)
    return weft__cpu_error(ctx, WEFT_INVALID_ARGUMENT,
                           "Cumprod needs an input of rank >= 1, got a scalar");
  WEFT_RETURN_IF_ERROR(weft__cpu_axis(ctx, axis_raw, x.rank, "axis", &axis));
  if (x.dtype != WEFT_DT_HALF && x.dtype != WEFT_DT_BFLOAT16)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "Cumprod has no CPU kernel for %s here",
                           weft__cpu_dtype_name(x.dtype));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, x.dtype, &x, &y));
  if (x.num_elements == 0) return NULL;
  bool exclusive = weft__cpu_attr_bool(ctx, "exclusive", false);
  bool reverse = weft__cpu_attr_bool(ctx, "reverse", false);
  bool half = x.dtype == WEFT_DT_HALF;
  int64_t outer = 1, inner = 1, n = x.dims[axis];
  for (int d = 0; d < x.rank; d++) {
    if (d < axis) outer *= x.dims[d];
    if (d > axis) inner *= x.dims[d];
  }
  const uint16_t *xs = x.data;
  uint16_t *ys = y.data;
  uint16_t one = half ? weft__cpu_float_to_half(1.0f) : weft__cpu_float_to_bf16(1.0f);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      uint16_t acc = one;
      for (int64_t s = 0; s < n; s++) {
        int64_t at = (o * n + (reverse ? n - 1 - s : s)) * inner + i;
        if (exclusive) ys[at] = acc;
        float p = (half ? weft__cpu_half_to_float(acc) : weft__cpu_bf16_to_float(acc)) *
                  (half ? weft__cpu_half_to_float(xs[at]) : weft__cpu_bf16_to_float(xs[at]));
        acc = half ? weft__cpu_float_to_half(p) : weft__cpu_float_to_bf16(p);
        if (!exclusive) ys[at] = acc;
      }
    }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static const weft_dtype_t bitcast_types[] = {
    WEFT_DT_BFLOAT16, WEFT_DT_HALF,   WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_INT64, WEFT_DT_INT32,
    WEFT_DT_UINT8,    WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_INT8,  WEFT_DT_INT16,
};
static const weft_dtype_t bitpack_types[] = {
    WEFT_DT_BOOL, WEFT_DT_HALF,  WEFT_DT_FLOAT, WEFT_DT_DOUBLE,
    WEFT_DT_INT8, WEFT_DT_INT16, WEFT_DT_INT32, WEFT_DT_INT64,
};
static const weft_dtype_t float_types[] = {WEFT_DT_BFLOAT16, WEFT_DT_HALF, WEFT_DT_FLOAT,
                                           WEFT_DT_DOUBLE};
static const weft_dtype_t bincount_types[] = {WEFT_DT_INT32, WEFT_DT_INT64, WEFT_DT_FLOAT,
                                              WEFT_DT_DOUBLE};
static const weft_dtype_t accumulate_types[] = {
    WEFT_DT_FLOAT,  WEFT_DT_DOUBLE, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_INT8,
    WEFT_DT_INT16,  WEFT_DT_UINT8,  WEFT_DT_UINT16, WEFT_DT_UINT32, WEFT_DT_UINT64,
    WEFT_DT_HALF,   WEFT_DT_BFLOAT16,
};
static const weft_dtype_t f16_types[] = {WEFT_DT_HALF, WEFT_DT_BFLOAT16};
static int popcount_marker;

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

weft_status_t *weft__cpu_register_bits(const weft_registrar_t *reg) {
  for (size_t i = 0; i < N_OF(bit_specs); i++) {
    const weft_cpu_kernel_spec_t spec = {.op = bit_specs[i].name, .compute = k_bitwise,
                                         .type_attr = "T", .dtypes = int_types,
                                         .n_dtypes = N_INT_TYPES,
                                         .user_data = (void *)&bit_specs[i]};
    WEFT_RETURN_IF_ERROR(weft__cpu_register(reg, &spec));
  }
  static const char *const bincount_host[] = {"size", NULL};
  static const char *const histogram_host[] = {"nbins", NULL};
  static const char *const cum_host[] = {"axis", NULL};
  /* Bitcast is keyed on its input type T and its output `type`. */
  weft_type_constraint_t bitcast_c[2] = {
      {.attr = "T", .dtypes = bitcast_types, .n_dtypes = N_OF(bitcast_types)},
      {.attr = "type", .dtypes = bitcast_types, .n_dtypes = N_OF(bitcast_types)},
  };
  WEFT_RETURN_IF_ERROR(
      weft__cpu_register_full(reg, "Bitcast", bitcast_c, 2, NULL, NULL, k_bitcast, NULL, NULL));
  weft_type_constraint_t hist_c[2] = {
      {.attr = "T", .dtypes = bincount_types, .n_dtypes = N_OF(bincount_types)},
      {.attr = "dtype", .dtypes = weft__cpu_index_types, .n_dtypes = weft__cpu_n_index_types},
  };
  WEFT_RETURN_IF_ERROR(weft__cpu_register_full(reg, "HistogramFixedWidth", hist_c, 2,
                                               histogram_host, NULL, k_histogram, NULL, NULL));
  const weft_cpu_kernel_spec_t specs[] = {
      {.op = "Invert", .compute = k_unary_bits, .type_attr = "T", .dtypes = int_types,
       .n_dtypes = N_INT_TYPES},
      {.op = "PopulationCount", .compute = k_unary_bits, .type_attr = "T", .dtypes = int_types,
       .n_dtypes = N_INT_TYPES, .user_data = &popcount_marker},
      {.op = "CompareAndBitpack", .compute = k_compare_and_bitpack, .type_attr = "T",
       .dtypes = bitpack_types, .n_dtypes = N_OF(bitpack_types)},
      {.op = "CheckNumerics", .compute = k_check_numerics, .type_attr = "T",
       .dtypes = float_types, .n_dtypes = N_OF(float_types)},
      {.op = "Bincount", .compute = k_bincount, .type_attr = "T", .dtypes = bincount_types,
       .n_dtypes = N_OF(bincount_types), .host_memory = bincount_host},
      {.op = "AccumulateNV2", .compute = k_accumulate, .type_attr = "T",
       .dtypes = accumulate_types, .n_dtypes = N_OF(accumulate_types)},
      {.op = "Cumprod", .compute = k_cumprod_f16, .type_attr = "T", .dtypes = f16_types,
       .n_dtypes = N_OF(f16_types), .host_memory = cum_host},
  };
  return weft__cpu_register_specs(reg, specs, N_OF(specs));
}
