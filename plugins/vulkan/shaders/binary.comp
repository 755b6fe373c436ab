// binary.comp: z = f(a, b) elementwise with TensorFlow broadcasting, for the arithmetic ops,
// comparisons and logic (op codes in vk_ops.h). The host collapses the broadcast into at most
// VK_MAX_DIMS dims with per-input element strides (0 along broadcast dims). Bool results and
// bool operands are bytes, four to a word; a bool result is written a whole word per
// invocation. In-place use (AssignAdd: z aliases a) is safe: each invocation reads element i
// before it writes element i and touches no other.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
// The op and dtype are specialization constants (one pipeline per pair, made on first use): a
// switch over a run-time value kept every case in the compiled shader, and lavapipe ran them all.
layout(constant_id = 0) const uint SPEC_OP = 0u;
layout(constant_id = 1) const uint SPEC_DTYPE = 0u;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std430, binding = 1) readonly buffer B { uint b[]; };
layout(std430, binding = 2) writeonly buffer Z { uint z[]; };
layout(push_constant) uniform P {
  uint n;      // output elements
  uint op;     // also SPEC_OP, which the shader reads
  uint dtype;  // of the operands
  uint rank;   // collapsed dims
  float alpha;
  uint pad0, pad1, pad2;
  uint dims[VK_MAX_DIMS];
  uint sa[VK_MAX_DIMS];
  uint sb[VK_MAX_DIMS];
} p;

void offsets(uint i, out uint oa, out uint ob) {
  if (p.rank == 1u) {
    oa = i * p.sa[0];
    ob = i * p.sb[0];
    return;
  }
  oa = 0u;
  ob = 0u;
  for (int d = int(p.rank) - 1; d >= 0; d--) {
    uint dim = p.dims[d];
    uint c = i % dim;
    i /= dim;
    oa += c * p.sa[d];
    ob += c * p.sb[d];
  }
}

float binary_f(float x, float y) {
  switch (SPEC_OP) {
    case VK_BIN_ADD: return x + y;
    case VK_BIN_SUB: return x - y;
    case VK_BIN_MUL: return x * y;
    case VK_BIN_DIV: return f_div(x, y);
    case VK_BIN_DIV_NO_NAN: return y == 0.0 ? 0.0 : f_div(x, y);
    // NaN in either operand gives NaN, as in TensorFlow 2.
    case VK_BIN_MAX: return (x > y || f_isnan(x)) ? x : y;
    case VK_BIN_MIN: return (x < y || f_isnan(x)) ? x : y;
    case VK_BIN_POW: return m_pow(x, y);
    case VK_BIN_SQDIFF: return (x - y) * (x - y);
    // Gradients, in TensorFlow's argument order.
    case VK_BIN_RELU_GRAD: return y > 0.0 ? x : 0.0;                 // gradients, features
    case VK_BIN_RELU6_GRAD: return (y > 0.0 && y < 6.0) ? x : 0.0;
    case VK_BIN_LEAKY_RELU_GRAD: return y > 0.0 ? x : p.alpha * x;
    case VK_BIN_ELU_GRAD: return y < 0.0 ? x * (y + 1.0) : x;        // gradients, outputs
    case VK_BIN_SIGMOID_GRAD: return y * x * (1.0 - x);              // y, dy
    case VK_BIN_TANH_GRAD: return y * (1.0 - x * x);
    case VK_BIN_SOFTPLUS_GRAD: return f_div(x, 1.0 + m_exp(-y));
    case VK_BIN_SQRT_GRAD: return f_div(y * 0.5, x);
    case VK_BIN_RSQRT_GRAD: return y * -0.5 * x * x * x;
    case VK_BIN_RECIPROCAL_GRAD: return -y * x * x;
    case VK_BIN_CLIP_HI: return x > y ? y : x;
    case VK_BIN_CLIP_LO: return x < y ? y : x;
  }
  return f_nan();
}

int binary_i(int x, int y) {
  switch (SPEC_OP) {
    case VK_BIN_ADD: return x + y;  // GLSL integer arithmetic wraps
    case VK_BIN_SUB: return x - y;
    case VK_BIN_MUL: return x * y;
    case VK_BIN_MAX: return x > y ? x : y;
    case VK_BIN_MIN: return x < y ? x : y;
    case VK_BIN_SQDIFF: return (x - y) * (x - y);
    case VK_BIN_CLIP_HI: return x > y ? y : x;
    case VK_BIN_CLIP_LO: return x < y ? y : x;
  }
  return 0;
}

bool compare_f(float x, float y) {
  switch (SPEC_OP) {
    case VK_BIN_EQ: return x == y;
    case VK_BIN_NE: return !(x == y);
    case VK_BIN_LT: return x < y;
    case VK_BIN_LE: return x <= y;
    case VK_BIN_GT: return x > y;
    case VK_BIN_GE: return x >= y;
  }
  return false;
}

bool compare_i(int x, int y) {
  switch (SPEC_OP) {
    case VK_BIN_EQ: return x == y;
    case VK_BIN_NE: return x != y;
    case VK_BIN_LT: return x < y;
    case VK_BIN_LE: return x <= y;
    case VK_BIN_GT: return x > y;
    case VK_BIN_GE: return x >= y;
  }
  return false;
}

bool compare_b(bool x, bool y) {
  switch (SPEC_OP) {
    case VK_BIN_EQ: return x == y;
    case VK_BIN_NE: return x != y;
    case VK_BIN_AND: return x && y;
    case VK_BIN_OR: return x || y;
  }
  return false;
}

bool bool_result(uint i) {
  uint oa, ob;
  offsets(i, oa, ob);
  if (SPEC_DTYPE == VK_DT_BOOL)
    return compare_b(get_byte(a[oa >> 2], oa & 3u) != 0u, get_byte(b[ob >> 2], ob & 3u) != 0u);
  if (SPEC_DTYPE == VK_DT_I32) return compare_i(int(a[oa]), int(b[ob]));
  return compare_f(uintBitsToFloat(a[oa]), uintBitsToFloat(b[ob]));
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (SPEC_OP >= VK_BIN_FIRST_BOOL_OUT) {
    uint words = (p.n + 3u) / 4u;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += stride) {
      uint packed = 0u;
      for (uint k = 0u; k < 4u; k++) {
        uint i = w * 4u + k;
        if (i < p.n && bool_result(i)) packed |= 1u << (8u * k);
      }
      z[w] = packed;
    }
    return;
  }
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint oa, ob;
    offsets(i, oa, ob);
    if (SPEC_DTYPE == VK_DT_I32)
      z[i] = uint(binary_i(int(a[oa]), int(b[ob])));
    else
      z[i] = floatBitsToUint(binary_f(uintBitsToFloat(a[oa]), uintBitsToFloat(b[ob])));
  }
}
