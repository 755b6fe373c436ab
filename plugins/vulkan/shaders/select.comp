// select.comp: z = cond ? t : e elementwise with broadcasting of all three (SelectV2, and
// Select once the host has shaped its condition). cond is bool bytes; t and e are 4-byte
// elements, or bool bytes with four outputs per invocation.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer C { uint c[]; };
layout(std430, binding = 1) readonly buffer T { uint t[]; };
layout(std430, binding = 2) readonly buffer E { uint e[]; };
layout(std430, binding = 3) writeonly buffer Z { uint z[]; };
layout(push_constant) uniform P {
  uint n;
  uint rank;
  uint bool_elems;
  uint dims[VK_SELECT_MAX_DIMS];
  uint sc[VK_SELECT_MAX_DIMS];
  uint st[VK_SELECT_MAX_DIMS];
  uint se[VK_SELECT_MAX_DIMS];
} p;

void offsets(uint i, out uint oc, out uint ot, out uint oe) {
  oc = 0u;
  ot = 0u;
  oe = 0u;
  for (int d = int(p.rank) - 1; d >= 0; d--) {
    uint dim = p.dims[d];
    uint k = i % dim;
    i /= dim;
    oc += k * p.sc[d];
    ot += k * p.st[d];
    oe += k * p.se[d];
  }
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (p.bool_elems != 0u) {
    uint words = (p.n + 3u) / 4u;
    for (uint w = gl_GlobalInvocationID.x; w < words; w += stride) {
      uint packed = 0u;
      for (uint k = 0u; k < 4u; k++) {
        uint i = w * 4u + k;
        if (i >= p.n) break;
        uint oc, ot, oe;
        offsets(i, oc, ot, oe);
        uint v = get_byte(c[oc >> 2], oc & 3u) != 0u ? get_byte(t[ot >> 2], ot & 3u)
                                                    : get_byte(e[oe >> 2], oe & 3u);
        packed |= v << (8u * k);
      }
      z[w] = packed;
    }
    return;
  }
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint oc, ot, oe;
    offsets(i, oc, ot, oe);
    z[i] = get_byte(c[oc >> 2], oc & 3u) != 0u ? t[ot] : e[oe];
  }
}
