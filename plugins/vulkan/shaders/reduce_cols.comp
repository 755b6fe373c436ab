// reduce_cols.comp: out[o * inner + i] = reduce over m < mid of x[(o * mid + m) * inner + i],
// one invocation per output (grid-stride). Neighbouring invocations read neighbouring columns.
// bool (All/Any) reads bytes; its output is one byte per element, so each invocation then owns
// four consecutive outputs (a whole word). ArgMax/ArgMin write the index as int32, or as int64
// (two words) when out64 is set.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(local_size_x = 256) in;
// The op and dtype are specialization constants (one pipeline per pair, made on first use): a
// switch over a run-time value kept every case in the compiled shader, and lavapipe ran them all.
layout(constant_id = 0) const uint SPEC_OP = 0u;
layout(constant_id = 1) const uint SPEC_DTYPE = 0u;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P {
  uint outer;
  uint mid;
  uint inner;
  uint op;     // also SPEC_OP, which the shader reads
  uint dtype;
  float count;
  uint out64;
} p;

// The first index of the best element along m: a NaN beats every number (the first NaN wins).
uint arg_one(uint base) {
  bool is_max = SPEC_OP == VK_RED_ARGMAX;
  uint best_i = 0u;
  if (SPEC_DTYPE == VK_DT_I32) {
    int best = int(x[base]);
    for (uint m = 1u; m < p.mid; m++) {
      int v = int(x[base + m * p.inner]);
      if (is_max ? v > best : v < best) {
        best = v;
        best_i = m;
      }
    }
    return best_i;
  }
  float best = uintBitsToFloat(x[base]);
  for (uint m = 1u; m < p.mid; m++) {
    float v = uintBitsToFloat(x[base + m * p.inner]);
    bool better = f_isnan(v) ? !f_isnan(best) : (is_max ? v > best : v < best);
    if (better) {
      best = v;
      best_i = m;
    }
  }
  return best_i;
}

uint reduce_one(uint o) {
  uint oo = o / p.inner, i = o % p.inner;
  uint base = oo * p.mid * p.inner + i;
  if (SPEC_DTYPE == VK_DT_BOOL) {
    int s = red_init_i(SPEC_OP);
    for (uint m = 0u; m < p.mid; m++) {
      uint e = base + m * p.inner;
      s = red_combine_i(SPEC_OP, s, int(get_byte(x[e >> 2], e & 3u)));
    }
    return uint(s);
  }
  if (SPEC_DTYPE == VK_DT_I32) {
    int s = red_init_i(SPEC_OP);
    for (uint m = 0u; m < p.mid; m++) s = red_combine_i(SPEC_OP, s, int(x[base + m * p.inner]));
    return uint(s);
  }
  acc_f r = acc_f_init(SPEC_OP);
  for (uint m = 0u; m < p.mid; m++) r = acc_f_add(SPEC_OP, r, uintBitsToFloat(x[base + m * p.inner]));
  return floatBitsToUint(red_finish_f(SPEC_OP, r.s, p.count));
}

void main() {
  uint total = p.outer * p.inner;
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (SPEC_DTYPE == VK_DT_BOOL) {
    uint words = (total + 3u) / 4u;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += stride) {
      uint packed = 0u;
      for (uint k = 0u; k < 4u; k++) {
        uint o = w * 4u + k;
        if (o < total) packed |= (reduce_one(o) & 0xffu) << (8u * k);
      }
      y[w] = packed;
    }
    return;
  }
  if (SPEC_OP == VK_RED_ARGMAX || SPEC_OP == VK_RED_ARGMIN) {
    for (uint o = gl_GlobalInvocationID.x; o < total; o += stride) {
      uint idx = arg_one((o / p.inner) * p.mid * p.inner + o % p.inner);
      if (p.out64 != 0u) {
        y[2u * o] = idx;
        y[2u * o + 1u] = 0u;
      } else {
        y[o] = idx;
      }
    }
    return;
  }
  for (uint o = gl_GlobalInvocationID.x; o < total; o += stride) y[o] = reduce_one(o);
}
