// reduce_rows.comp: out[r] = reduce(x[r * len .. (r + 1) * len)) for each row r, one 256-wide
// workgroup per row (grid-stride over rows): each invocation folds a strided part of the row,
// then a tree in shared memory folds the 256 partials. Mean divides by `count` at the end,
// L2Loss halves.
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
  uint rows;
  uint len;
  uint op;     // also SPEC_OP, which the shader reads
  uint dtype;
  float count;
} p;

shared float sf[256];
shared float sc[256];
shared int si[256];

void main() {
  uint lid = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.len;
    if (SPEC_DTYPE == VK_DT_I32) {
      int s = red_init_i(SPEC_OP);
      for (uint i = lid; i < p.len; i += 256u) s = red_combine_i(SPEC_OP, s, int(x[base + i]));
      si[lid] = s;
    } else {
      acc_f r = acc_f_init(SPEC_OP);
      for (uint i = lid; i < p.len; i += 256u) r = acc_f_add(SPEC_OP, r, uintBitsToFloat(x[base + i]));
      sf[lid] = r.s;
      sc[lid] = r.comp;
    }
    barrier();
    for (uint half_ = 128u; half_ > 0u; half_ >>= 1u) {
      if (lid < half_) {
        if (SPEC_DTYPE == VK_DT_I32) {
          si[lid] = red_combine_i(SPEC_OP, si[lid], si[lid + half_]);
        } else if (red_is_sum(SPEC_OP)) {
          precise float t = sf[lid] + sf[lid + half_];
          sf[lid] = t;
          sc[lid] = sc[lid] + sc[lid + half_];
        } else {
          sf[lid] = red_combine_f(SPEC_OP, sf[lid], sf[lid + half_]);
        }
      }
      barrier();
    }
    if (lid == 0u) {
      if (SPEC_DTYPE == VK_DT_I32) {
        y[row] = uint(si[0]);
      } else {
        float v = sf[0];
        if (red_is_sum(SPEC_OP) && !f_isnan(sc[0]) && !f_isinf(v)) v = v - sc[0];
        y[row] = floatBitsToUint(red_finish_f(SPEC_OP, v, p.count));
      }
    }
    barrier();
  }
}
