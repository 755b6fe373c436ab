// unary.comp: y = f(x) elementwise for the unary math and activation ops (op codes in
// vk_ops.h) on float32 and int32, and the bool-valued IsNan/IsInf/IsFinite/LogicalNot. A bool
// result is written a whole 32-bit word (four elements) per invocation, so no two invocations
// share a word; bytes past the end land in the allocation's padding.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
// The op and dtype are specialization constants (one pipeline per pair, made on first use): a
// switch over a run-time value kept every case in the compiled shader, and lavapipe ran them all.
layout(constant_id = 0) const uint SPEC_OP = 0u;
layout(constant_id = 1) const uint SPEC_DTYPE = 0u;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P {
  uint n;      // elements
  uint op;     // also SPEC_OP, which the shader reads
  uint dtype;  // VK_DT_F32 or VK_DT_I32 (bool for LogicalNot)
  float alpha; // LeakyRelu
} p;

float unary_f(float a) {
  switch (SPEC_OP) {
    case VK_UN_NEG: return -a;
    case VK_UN_ABS: return abs(a);
    case VK_UN_SQUARE: return a * a;
    case VK_UN_SQRT: return a < 0.0 ? f_nan() : sqrt(a);
    case VK_UN_RSQRT: return a < 0.0 ? f_nan() : f_div(1.0, sqrt(a));
    case VK_UN_EXP: return m_exp(a);
    case VK_UN_LOG: return m_log(a);
    case VK_UN_LOG1P: return m_log1p(a);
    case VK_UN_EXPM1: return m_expm1(a);
    case VK_UN_SIGN: return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : a);
    case VK_UN_RECIPROCAL: return f_div(1.0, a);
    case VK_UN_FLOOR: return floor(a);
    case VK_UN_CEIL: return ceil(a);
    case VK_UN_ROUND: return roundEven(a);
    case VK_UN_SIN: return m_sin(a);
    case VK_UN_COS: return m_cos(a);
    case VK_UN_TAN: return m_tan(a);
    case VK_UN_ASIN: return m_asin(a);
    case VK_UN_ACOS: return m_acos(a);
    case VK_UN_ATAN: return m_atan(a);
    case VK_UN_SINH: return m_sinh(a);
    case VK_UN_COSH: return m_cosh(a);
    case VK_UN_ASINH: return m_asinh(a);
    case VK_UN_ACOSH: return m_acosh(a);
    case VK_UN_ATANH: return m_atanh(a);
    case VK_UN_TANH: return m_tanh(a);
    case VK_UN_SIGMOID: return f_div(1.0, 1.0 + m_exp(-a));
    case VK_UN_ERF: return m_erf(a);
    // NaN compares false, so these forward NaN like TensorFlow does.
    case VK_UN_RELU: return a < 0.0 ? 0.0 : a;
    case VK_UN_RELU6: return a < 0.0 ? 0.0 : (a > 6.0 ? 6.0 : a);
    case VK_UN_ELU: return a < 0.0 ? m_expm1(a) : a;
    case VK_UN_SELU:
      return a < 0.0 ? 1.7580993408473766 * m_expm1(a) : 1.0507009873554805 * a;
    case VK_UN_LEAKY_RELU: return a < 0.0 ? p.alpha * a : a;
    case VK_UN_SOFTPLUS:
      // log1p(exp(a)), switching to a or exp(a) where the other term is below float epsilon
      return a > 13.942385 ? a : (a < -13.942385 ? m_exp(a) : m_log1p(m_exp(a)));
    case VK_UN_SOFTSIGN: return a / (1.0 + abs(a));
  }
  return f_nan();
}

int unary_i(int a) {
  switch (SPEC_OP) {
    case VK_UN_NEG: return -a;  // wraps at INT_MIN, like two's complement
    case VK_UN_ABS: return a < 0 ? -a : a;
    case VK_UN_SQUARE: return a * a;
    case VK_UN_SIGN: return a > 0 ? 1 : (a < 0 ? -1 : 0);
    case VK_UN_ROUND: return a;
    case VK_UN_RELU: return a < 0 ? 0 : a;
    case VK_UN_RELU6: return a < 0 ? 0 : (a > 6 ? 6 : a);
  }
  return 0;
}

bool unary_b(uint i) {
  if (SPEC_OP == VK_UN_LOGICAL_NOT) return get_byte(x[i >> 2], i & 3u) == 0u;
  float a = uintBitsToFloat(x[i]);
  switch (SPEC_OP) {
    case VK_UN_ISNAN: return f_isnan(a);
    case VK_UN_ISINF: return f_isinf(a);
    case VK_UN_ISFINITE: return !f_isnan(a) && !f_isinf(a);
  }
  return false;
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (SPEC_OP >= VK_UN_FIRST_BOOL_OUT) {
    uint words = (p.n + 3u) / 4u;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += stride) {
      uint packed = 0u;
      for (uint k = 0u; k < 4u; k++) {
        uint i = w * 4u + k;
        if (i < p.n && unary_b(i)) packed |= 1u << (8u * k);
      }
      y[w] = packed;
    }
    return;
  }
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    if (SPEC_DTYPE == VK_DT_I32)
      y[i] = uint(unary_i(int(x[i])));
    else
      y[i] = floatBitsToUint(unary_f(uintBitsToFloat(x[i])));
  }
}
