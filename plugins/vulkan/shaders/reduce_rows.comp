// reduce_rows.comp: out[r] = reduce(x[r * len .. (r + 1) * len)) for each row r, one 256-wide
// workgroup per row (grid-stride over rows): each invocation folds a strided part of the row,
// then a tree in shared memory folds the 256 partials. Mean divides by `count` at the end,
// L2Loss halves.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "reduce.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P {
  uint rows;
  uint len;
  uint op;
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
    if (p.dtype == VK_DT_I32) {
      int s = red_init_i(p.op);
      for (uint i = lid; i < p.len; i += 256u) s = red_combine_i(p.op, s, int(x[base + i]));
      si[lid] = s;
    } else {
      acc_f r = acc_f_init(p.op);
      for (uint i = lid; i < p.len; i += 256u) r = acc_f_add(p.op, r, uintBitsToFloat(x[base + i]));
      sf[lid] = r.s;
      sc[lid] = r.comp;
    }
    barrier();
    for (uint half_ = 128u; half_ > 0u; half_ >>= 1u) {
      if (lid < half_) {
        if (p.dtype == VK_DT_I32) {
          si[lid] = red_combine_i(p.op, si[lid], si[lid + half_]);
        } else if (red_is_sum(p.op)) {
          precise float t = sf[lid] + sf[lid + half_];
          sf[lid] = t;
          sc[lid] = sc[lid] + sc[lid + half_];
        } else {
          sf[lid] = red_combine_f(p.op, sf[lid], sf[lid + half_]);
        }
      }
      barrier();
    }
    if (lid == 0u) {
      if (p.dtype == VK_DT_I32) {
        y[row] = uint(si[0]);
      } else {
        float v = sf[0];
        if (red_is_sum(p.op) && !f_isnan(sc[0]) && !f_isinf(v)) v = v - sc[0];
        y[row] = floatBitsToUint(red_finish_f(p.op, v, p.count));
      }
    }
    barrier();
  }
}
