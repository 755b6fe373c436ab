/* dtype.c: names and sizes of data types, TensorFlow's reference types (dtype + 100), and the
 * float16 / bfloat16 conversions the core needs to read and write those element types. */
#include <string.h>

#include "base_internal.h"

typedef struct {
  weft_dtype_t dtype;
  const char *name;      /* Weft's own name, what weft_dtype_name prints */
  const char *tf_name;   /* the name in REGISTER_OP specs and in TensorFlow's Python API */
  const char *enum_name; /* the DataType enum value's name in TensorFlow's protos */
  size_t size;
} dtype_info_t;

/* A string tensor's memory is an array of weft_string_t whose bytes live elsewhere, so its
 * element size is sizeof(weft_string_t). */
#define WEFT__DTYPE_INFO_ROW(dtype, ctype, name, tf_name, proto_name) \
  {dtype, name, tf_name, proto_name, sizeof(ctype)},
static const dtype_info_t kDtypes[] = {WEFT_DTYPE_LIST(WEFT__DTYPE_INFO_ROW)};
#undef WEFT__DTYPE_INFO_ROW

static const dtype_info_t *find_info(int dtype) {
  for (size_t i = 0; i < G_N_ELEMENTS(kDtypes); i++)
    if ((int)kDtypes[i].dtype == dtype) return &kDtypes[i];
  return NULL;
}

bool weft__dtype_is_ref(int dtype) { return dtype >= WEFT_DT_REF_OFFSET; }

weft_dtype_t weft__dtype_base(int dtype) {
  return (weft_dtype_t)(dtype >= WEFT_DT_REF_OFFSET ? dtype - WEFT_DT_REF_OFFSET : dtype);
}

/* A reference to a valid type is valid too: VariableV2's output type is one. */
bool weft__dtype_is_valid(int dtype) { return find_info(weft__dtype_base(dtype)) != NULL; }

const char *weft__dtype_tf_name(weft_dtype_t dtype) {
#define WEFT__TF_NAME(dt, ctype, name, tf_name, proto_name) \
  if (dtype == dt) return tf_name;
  WEFT_DTYPE_LIST(WEFT__TF_NAME)
#undef WEFT__TF_NAME
  return "invalid";
}

const char *weft_dtype_name(weft_dtype_t dtype) {
  const dtype_info_t *info = find_info((int)dtype);
  if (info != NULL) return info->name;
  if (weft__dtype_is_ref((int)dtype)) {
    /* Names of ref types are needed in error messages about ref edges; keep them static. */
    static const char *const ref_names[] = {
        [WEFT_DT_FLOAT] = "float32_ref",   [WEFT_DT_DOUBLE] = "float64_ref",
        [WEFT_DT_INT32] = "int32_ref",     [WEFT_DT_UINT8] = "uint8_ref",
        [WEFT_DT_INT16] = "int16_ref",     [WEFT_DT_INT8] = "int8_ref",
        [WEFT_DT_STRING] = "string_ref",   [WEFT_DT_INT64] = "int64_ref",
        [WEFT_DT_BOOL] = "bool_ref",       [WEFT_DT_BFLOAT16] = "bfloat16_ref",
        [WEFT_DT_UINT16] = "uint16_ref",   [WEFT_DT_HALF] = "float16_ref",
        [WEFT_DT_UINT32] = "uint32_ref",   [WEFT_DT_UINT64] = "uint64_ref",
    };
    int base = (int)weft__dtype_base((int)dtype);
    if (base >= 0 && base < (int)G_N_ELEMENTS(ref_names) && ref_names[base] != NULL)
      return ref_names[base];
  }
  return "invalid";
}

size_t weft_dtype_size(weft_dtype_t dtype) {
  const dtype_info_t *info = find_info(weft__dtype_base((int)dtype));
  return info != NULL ? info->size : 0;
}

bool weft__dtype_from_spec_name(const char *name, weft_dtype_t *out) {
  if (name == NULL) return false;
  for (size_t i = 0; i < G_N_ELEMENTS(kDtypes); i++) {
    const dtype_info_t *info = &kDtypes[i];
    if (strcmp(name, info->tf_name) == 0 || strcmp(name, info->enum_name) == 0 ||
        strcmp(name, info->name) == 0) {
      if (out != NULL) *out = info->dtype;
      return true;
    }
  }
  return false;
}

bool weft_dtype_from_name(const char *name, weft_dtype_t *out) {
  /* Same vocabulary: Weft's names, TensorFlow's short names and the DT_ enum names. */
  return weft__dtype_from_spec_name(name, out);
}

/* ---------------------------------------------------------------------------------------------
 * float16 and bfloat16. Bit manipulation rather than _Float16 so the result does not depend on
 * the compiler or the FPU's rounding mode. */

static uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float weft__half_to_float(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    /* Zero or subnormal: mantissa * 2^-24, exact in float. */
    float magnitude = (float)mantissa * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t weft__float_to_half(float value) {
  uint32_t f = float_bits(value);
  uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
  uint32_t magnitude = f & 0x7fffffffu;

  if (magnitude >= 0x7f800000u) {
    if (magnitude == 0x7f800000u) return sign | 0x7c00u;
    /* NaN: keep the top payload bits and force the quiet bit so it cannot become inf. */
    return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  /* 65520 is the midpoint between 65504 (the largest half) and 65536; ties go to the even
   * neighbour, which is infinity. */
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    /* Below the smallest normal half (2^-14): a subnormal result counted in units of 2^-24. */
    uint32_t exponent = magnitude >> 23;
    if (exponent < 102) return sign; /* below 2^-25: rounds to zero (2^-25 itself ties to 0) */
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exponent;
    uint32_t result = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) result++;
    return (uint16_t)(sign | result);
  }
  uint32_t result = (magnitude - 0x38000000u) >> 13; /* rebias the exponent from 127 to 15 */
  uint32_t remainder = magnitude & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) result++;
  return (uint16_t)(sign | result);
}

float weft__bfloat16_to_float(uint16_t bits) { return bits_float((uint32_t)bits << 16); }

uint16_t weft__float_to_bfloat16(float value) {
  uint32_t f = float_bits(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((f >> 16) | 0x40u); /* quiet NaN */
  /* Round to nearest even on the 16 dropped bits; a carry into the exponent is the right answer
   * (up to infinity for values past the largest bfloat16). */
  uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return (uint16_t)((f + rounding) >> 16);
}
