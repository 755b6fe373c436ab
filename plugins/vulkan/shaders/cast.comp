// cast.comp: y = Cast(x) between float32, int32 and bool, with the CPU backend's rules: float to
// int truncates toward zero and saturates (NaN gives 0), anything to bool is "!= 0", bool to
// numbers is 0 or 1. bool results are written a whole word (four elements) per invocation.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P {
  uint n;
  uint src;  // VK_DT_*
  uint dst;
} p;

bool nonzero(uint i) {
  if (p.src == VK_DT_BOOL) return get_byte(x[i >> 2], i & 3u) != 0u;
  if (p.src == VK_DT_I32) return x[i] != 0u;
  return !(uintBitsToFloat(x[i]) == 0.0);  // NaN is true, like C's (NaN != 0)
}

uint convert(uint i) {
  if (p.src == VK_DT_BOOL) {
    bool v = get_byte(x[i >> 2], i & 3u) != 0u;
    return p.dst == VK_DT_F32 ? floatBitsToUint(v ? 1.0 : 0.0) : (v ? 1u : 0u);
  }
  if (p.src == VK_DT_I32) return floatBitsToUint(float(int(x[i])));  // to float32
  float f = uintBitsToFloat(x[i]);                                    // to int32
  if (f_isnan(f)) return 0u;
  if (f <= -2147483648.0) return 0x80000000u;
  if (f >= 2147483648.0) return 0x7fffffffu;
  return uint(int(f));
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (p.dst == VK_DT_BOOL) {
    uint words = (p.n + 3u) / 4u;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += stride) {
      uint packed = 0u;
      for (uint k = 0u; k < 4u; k++) {
        uint i = w * 4u + k;
        if (i < p.n && nonzero(i)) packed |= 1u << (8u * k);
      }
      y[w] = packed;
    }
    return;
  }
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) y[i] = convert(i);
}
