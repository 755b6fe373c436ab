// gather.comp: the strided copy behind Transpose, BroadcastTo, Tile, Slice, Concat, Pack, Pad
// and the reductions' regrouping. Element i runs row-major over dims[0..rank); it is read from
// x[in_off + sum(coord[d] * in_strides[d])] and written to y[out_off + sum(coord[d] *
// out_strides[d])], in elements. 4-byte elements, or bool bytes into a contiguous output (four
// output elements per invocation, so each invocation owns its output word; out_off is then a
// multiple of 4).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { uint x[]; };
layout(std430, binding = 1) writeonly buffer Y { uint y[]; };
layout(push_constant) uniform P {
  uint n;
  uint rank;
  uint bool_elems;
  uint in_off;
  uint out_off;
  uint dims[VK_MAX_DIMS];
  uint in_strides[VK_MAX_DIMS];
  uint out_strides[VK_MAX_DIMS];
} p;

void offsets(uint i, out uint oi, out uint oo) {
  oi = p.in_off;
  oo = p.out_off;
  for (int d = int(p.rank) - 1; d >= 0; d--) {
    uint dim = p.dims[d];
    uint c = i % dim;
    i /= dim;
    oi += c * p.in_strides[d];
    oo += c * p.out_strides[d];
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
        if (i < p.n) {
          uint oi, oo;
          offsets(i, oi, oo);
          packed |= get_byte(x[oi >> 2], oi & 3u) << (8u * k);
        }
      }
      y[(p.out_off >> 2) + w] = packed;
    }
    return;
  }
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint oi, oo;
    offsets(i, oi, oo);
    y[oo] = x[oi];
  }
}
