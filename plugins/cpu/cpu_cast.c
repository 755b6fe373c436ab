/* cpu_cast.c: Cast between float32/64, float16, bfloat16, int8/16/32/64, uint8/16/32/64 and
 * bool (and the identity cast of strings).
 *
 * Each source is widened without loss to one of three intermediates (double for the floating
 * types, int64 for signed, uint64 for unsigned and bool) and stored into the destination:
 * integer to integer wraps (two's complement, as TensorFlow's static_cast does); floating to
 * integer truncates toward zero and saturates at the destination's range, with NaN giving 0,
 * so out-of-range values are defined instead of undefined behaviour; anything to bool is
 * "!= 0". Truncate=true makes float-to-half/bfloat16 truncate the mantissa instead of rounding
 * to nearest even. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

#define H weft__cpu_host

typedef void (*cast_fn)(const void *x, void *y, int64_t n, bool trunc);

/* Saturating double -> integer conversions. */
#define SAT_SIGNED(T, LO, HI, v) \
  ((v) != (v) ? (T)0 : ((v) <= (double)(LO) ? (T)(LO) : ((v) >= -(double)(LO) ? (T)(HI) : (T)(v))))
#define SAT_UNSIGNED(T, HI, v) \
  ((v) != (v) ? (T)0 : ((v) <= 0.0 ? (T)0 : ((v) >= ((double)(HI) + 1.0) ? (T)(HI) : (T)(v))))

/* Stores: <dst>_from_<d|i|u>(value, trunc). */
#define STORE_FAMILY(DN, DT, FROM_D, FROM_I, FROM_U)                               \
  static inline DT DN##_from_d(double v, bool trunc) {                             \
    (void)trunc;                                                                   \
    return FROM_D;                                                                 \
  }                                                                                \
  static inline DT DN##_from_i(int64_t v, bool trunc) {                            \
    (void)trunc;                                                                   \
    return FROM_I;                                                                 \
  }                                                                                \
  static inline DT DN##_from_u(uint64_t v, bool trunc) {                           \
    (void)trunc;                                                                   \
    return FROM_U;                                                                 \
  }

STORE_FAMILY(f32, float, (float)v, (float)v, (float)v)
STORE_FAMILY(f64, double, v, (double)v, (double)v)
STORE_FAMILY(f16, uint16_t,
             trunc ? weft__cpu_float_to_half_trunc((float)v) : weft__cpu_float_to_half((float)v),
             weft__cpu_float_to_half((float)v), weft__cpu_float_to_half((float)v))
STORE_FAMILY(bf16, uint16_t,
             trunc ? weft__cpu_float_to_bf16_trunc((float)v) : weft__cpu_float_to_bf16((float)v),
             weft__cpu_float_to_bf16((float)v), weft__cpu_float_to_bf16((float)v))
STORE_FAMILY(i8, int8_t, SAT_SIGNED(int8_t, INT8_MIN, INT8_MAX, v), (int8_t)v, (int8_t)v)
STORE_FAMILY(i16, int16_t, SAT_SIGNED(int16_t, INT16_MIN, INT16_MAX, v), (int16_t)v, (int16_t)v)
STORE_FAMILY(i32, int32_t, SAT_SIGNED(int32_t, INT32_MIN, INT32_MAX, v), (int32_t)v, (int32_t)v)
STORE_FAMILY(i64, int64_t, SAT_SIGNED(int64_t, INT64_MIN, INT64_MAX, v), v, (int64_t)v)
STORE_FAMILY(u8, uint8_t, SAT_UNSIGNED(uint8_t, UINT8_MAX, v), (uint8_t)v, (uint8_t)v)
STORE_FAMILY(u16, uint16_t, SAT_UNSIGNED(uint16_t, UINT16_MAX, v), (uint16_t)v, (uint16_t)v)
STORE_FAMILY(u32, uint32_t, SAT_UNSIGNED(uint32_t, UINT32_MAX, v), (uint32_t)v, (uint32_t)v)
STORE_FAMILY(u64, uint64_t, SAT_UNSIGNED(uint64_t, UINT64_MAX, v), (uint64_t)v, v)
STORE_FAMILY(b, uint8_t, (uint8_t)(v != 0), (uint8_t)(v != 0), (uint8_t)(v != 0))

/* Loads into the intermediate. */
#define LD_NUM(x) (x)
#define LD_F16(x) ((double)weft__cpu_half_to_float(x))
#define LD_BF16(x) ((double)weft__cpu_bf16_to_float(x))
#define LD_BOOL(x) ((uint64_t)((x) != 0))

/* X(name, C type, slot, load, intermediate type, intermediate suffix) */
#define CAST_SOURCES(X, ...)                                       \
  X(f32, float, CPU_SLOT_F32, LD_NUM, double, d, __VA_ARGS__)      \
  X(f64, double, CPU_SLOT_F64, LD_NUM, double, d, __VA_ARGS__)     \
  X(f16, uint16_t, CPU_SLOT_F16, LD_F16, double, d, __VA_ARGS__)   \
  X(bf16, uint16_t, CPU_SLOT_BF16, LD_BF16, double, d, __VA_ARGS__) \
  X(i8, int8_t, CPU_SLOT_I8, LD_NUM, int64_t, i, __VA_ARGS__)      \
  X(i16, int16_t, CPU_SLOT_I16, LD_NUM, int64_t, i, __VA_ARGS__)   \
  X(i32, int32_t, CPU_SLOT_I32, LD_NUM, int64_t, i, __VA_ARGS__)   \
  X(i64, int64_t, CPU_SLOT_I64, LD_NUM, int64_t, i, __VA_ARGS__)   \
  X(u8, uint8_t, CPU_SLOT_U8, LD_NUM, uint64_t, u, __VA_ARGS__)    \
  X(u16, uint16_t, CPU_SLOT_U16, LD_NUM, uint64_t, u, __VA_ARGS__) \
  X(u32, uint32_t, CPU_SLOT_U32, LD_NUM, uint64_t, u, __VA_ARGS__) \
  X(u64, uint64_t, CPU_SLOT_U64, LD_NUM, uint64_t, u, __VA_ARGS__) \
  X(b, uint8_t, CPU_SLOT_BOOL, LD_BOOL, uint64_t, u, __VA_ARGS__)

/* X(src name, src type, src slot, load, mid type, mid suffix, dst name, dst type, dst slot) */
#define CAST_DESTS(X, SN, ST, SS, LD, MT, MS)        \
  X(SN, ST, SS, LD, MT, MS, f32, float, CPU_SLOT_F32)      \
  X(SN, ST, SS, LD, MT, MS, f64, double, CPU_SLOT_F64)     \
  X(SN, ST, SS, LD, MT, MS, f16, uint16_t, CPU_SLOT_F16)   \
  X(SN, ST, SS, LD, MT, MS, bf16, uint16_t, CPU_SLOT_BF16) \
  X(SN, ST, SS, LD, MT, MS, i8, int8_t, CPU_SLOT_I8)       \
  X(SN, ST, SS, LD, MT, MS, i16, int16_t, CPU_SLOT_I16)    \
  X(SN, ST, SS, LD, MT, MS, i32, int32_t, CPU_SLOT_I32)    \
  X(SN, ST, SS, LD, MT, MS, i64, int64_t, CPU_SLOT_I64)    \
  X(SN, ST, SS, LD, MT, MS, u8, uint8_t, CPU_SLOT_U8)      \
  X(SN, ST, SS, LD, MT, MS, u16, uint16_t, CPU_SLOT_U16)   \
  X(SN, ST, SS, LD, MT, MS, u32, uint32_t, CPU_SLOT_U32)   \
  X(SN, ST, SS, LD, MT, MS, u64, uint64_t, CPU_SLOT_U64)   \
  X(SN, ST, SS, LD, MT, MS, b, uint8_t, CPU_SLOT_BOOL)

#define CAST_FN(SN, ST, SS, LD, MT, MS, DN, DT, DS)                             \
  static void cast_##SN##_##DN(const void *xv, void *yv, int64_t n, bool trunc) { \
    const ST *restrict x = (const ST *)xv;                                      \
    DT *restrict y = (DT *)yv;                                                  \
    for (int64_t i = 0; i < n; i++) {                                           \
      const MT v = (MT)LD(x[i]);                                                \
      y[i] = DN##_from_##MS(v, trunc);                                          \
    }                                                                           \
  }
#define CAST_FNS_FOR_SOURCE(SN, ST, SS, LD, MT, MS, unused) \
  CAST_DESTS(CAST_FN, SN, ST, SS, LD, MT, MS)
CAST_SOURCES(CAST_FNS_FOR_SOURCE, 0)

#define CAST_ENTRY(SN, ST, SS, LD, MT, MS, DN, DT, DS) [SS][DS] = cast_##SN##_##DN,
#define CAST_ENTRIES_FOR_SOURCE(SN, ST, SS, LD, MT, MS, unused) \
  CAST_DESTS(CAST_ENTRY, SN, ST, SS, LD, MT, MS)
static const cast_fn cast_table[CPU_N_SLOTS][CPU_N_SLOTS] = {
    CAST_SOURCES(CAST_ENTRIES_FOR_SOURCE, 0)};

typedef struct cast_job {
  cast_fn fn;
  const char *x;
  char *y;
  size_t xs, ys;
  bool trunc;
} cast_job_t;

static void cast_range(void *arg, int64_t b, int64_t e) {
  const cast_job_t *j = arg;
  j->fn(j->x + (size_t)b * j->xs, j->y + (size_t)b * j->ys, e - b, j->trunc);
}

static weft_status_t *k_cast(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_tensor_view_t x, y;
  WEFT_RETURN_IF_ERROR(weft__cpu_input(ctx, 0, &x));
  const weft_attrs_t *attrs = H->kernel_attrs(ctx);
  weft_dtype_t dst = x.dtype;
  WEFT_RETURN_IF_ERROR(H->attr_type(attrs, "DstT", &dst));
  bool trunc = weft__cpu_attr_bool(ctx, "Truncate", false);
  if (x.dtype == dst) return H->kernel_forward_input(ctx, 0, 0, x.rank, x.dims);
  int ss = weft__cpu_slot(x.dtype), ds = weft__cpu_slot(dst);
  cast_fn fn = ss >= 0 && ds >= 0 ? cast_table[ss][ds] : NULL;
  if (fn == NULL)
    return weft__cpu_error(ctx, WEFT_UNIMPLEMENTED, "Cast %s to %s is not supported",
                           weft__cpu_dtype_name(x.dtype), weft__cpu_dtype_name(dst));
  WEFT_RETURN_IF_ERROR(weft__cpu_output_like(ctx, 0, dst, &x, &y));
  if (x.num_elements == 0) return NULL;
  cast_job_t j = {fn, x.data, y.data, weft__cpu_dtype_size(x.dtype), weft__cpu_dtype_size(dst),
                  trunc};
  weft__cpu_parallel(ctx, x.num_elements, 3, cast_range, &j);
  return NULL;
}

weft_status_t *weft__cpu_register_cast(const weft_registrar_t *reg) {
  /* One kernel for every pair; string -> string (a no-op) is the one cast strings allow, and
   * the other string pairs fail at run time with UNIMPLEMENTED naming both dtypes. */
  static const weft_dtype_t types[] = {
      WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_HALF,   WEFT_DT_BFLOAT16, WEFT_DT_INT8,
      WEFT_DT_INT16, WEFT_DT_INT32,  WEFT_DT_INT64,  WEFT_DT_UINT8,    WEFT_DT_UINT16,
      WEFT_DT_UINT32, WEFT_DT_UINT64, WEFT_DT_BOOL,  WEFT_DT_STRING,
  };
  const weft_type_constraint_t c[2] = {
      {"SrcT", types, sizeof types / sizeof types[0]},
      {"DstT", types, sizeof types / sizeof types[0]},
  };
  return weft__cpu_register_full(reg, "Cast", c, 2, NULL, NULL, k_cast, NULL, NULL);
}
