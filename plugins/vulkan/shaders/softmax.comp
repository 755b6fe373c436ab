// softmax.comp: Softmax or LogSoftmax over the last dim of a [rows, cols] float32 tensor, one
// 256-wide workgroup per row (grid-stride over rows): the row max, then the sum of exp(x - max)
// (compensated), then y = exp(x - max) / sum, or x - max - log(sum).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint rows;
  uint cols;
  uint log_softmax;
} p;

shared float s[256];
shared float sc[256];

void main() {
  uint lid = gl_LocalInvocationID.x;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.cols;
    // Max, skipping NaN like the CPU kernel's "x > max ? x : max" (a NaN then poisons the sum).
    float m = -f_inf();
    for (uint i = lid; i < p.cols; i += 256u) {
      float v = x[base + i];
      if (v > m) m = v;
    }
    s[lid] = m;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1u) {
      if (lid < h && s[lid + h] > s[lid]) s[lid] = s[lid + h];
      barrier();
    }
    m = s[0];
    barrier();
    float sum = 0.0, comp = 0.0;
    for (uint i = lid; i < p.cols; i += 256u) {
      precise float e = m_exp(x[base + i] - m) - comp;
      precise float t = sum + e;
      comp = (t - sum) - e;
      sum = t;
    }
    s[lid] = sum;
    sc[lid] = comp;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1u) {
      if (lid < h) {
        precise float t = s[lid] + s[lid + h];
        s[lid] = t;
        sc[lid] = sc[lid] + sc[lid + h];
      }
      barrier();
    }
    float total = s[0];
    if (!f_isnan(sc[0]) && !f_isinf(total)) total -= sc[0];
    barrier();
    if (p.log_softmax != 0u) {
      float lse = m_log(total);
      for (uint i = lid; i < p.cols; i += 256u) y[base + i] = (x[base + i] - m) - lse;
    } else {
      float inv = f_div(1.0, total);
      for (uint i = lid; i < p.cols; i += 256u) y[base + i] = m_exp(x[base + i] - m) * inv;
    }
    barrier();
  }
}
