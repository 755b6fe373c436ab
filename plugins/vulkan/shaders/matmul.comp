// matmul.comp: C = op(A) op(B) for float32, op = transpose when ta / tb say so, for one matrix
// per z workgroup layer (batch strides in elements; 0 broadcasts). Each 16x16 workgroup
// computes a 64x64 tile of C, each invocation a 4x4 block spread over rows ty + 16i and columns
// tx + 16j (conflict-free shared memory reads, coalesced writes); A and B pass through shared
// memory 16 columns of K at a time. Out-of-range elements load as 0.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform P {
  uint M, N, K;
  uint ta, tb;
  uint batch_a, batch_b, batch_c;  // element strides between matrices
  uint off_a, off_b, off_c;        // element offsets of the first matrices
} p;

const uint TS = 64u;
const uint TK = 16u;
shared float As[TK][TS];
shared float Bs[TK][TS];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint tid = ty * 16u + tx;
  uint row0 = gl_WorkGroupID.y * TS, col0 = gl_WorkGroupID.x * TS;
  uint abase = p.off_a + gl_WorkGroupID.z * p.batch_a;
  uint bbase = p.off_b + gl_WorkGroupID.z * p.batch_b;
  uint cbase = p.off_c + gl_WorkGroupID.z * p.batch_c;
  float acc[4][4];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    for (uint l = 0u; l < 4u; l++) {
      uint e = tid + l * 256u;  // 0 .. 1023 over the 64 x 16 tile
      uint m, kk;
      if (p.ta == 0u) {  // A is [M, K]: read along K
        m = e / TK;
        kk = e % TK;
      } else {           // A is [K, M]: read along M
        kk = e / TS;
        m = e % TS;
      }
      uint gm = row0 + m, gk = k0 + kk;
      float v = 0.0;
      if (gm < p.M && gk < p.K) v = a[abase + (p.ta == 0u ? gm * p.K + gk : gk * p.M + gm)];
      As[kk][m] = v;

      uint n;
      if (p.tb == 0u) {  // B is [K, N]: read along N
        kk = e / TS;
        n = e % TS;
      } else {           // B is [N, K]: read along K
        n = e / TK;
        kk = e % TK;
      }
      uint gn = col0 + n;
      gk = k0 + kk;
      float w = 0.0;
      if (gn < p.N && gk < p.K) w = b[bbase + (p.tb == 0u ? gk * p.N + gn : gn * p.K + gk)];
      Bs[kk][n] = w;
    }
    barrier();
    for (uint kk = 0u; kk < TK; kk++) {
      float av[4], bv[4];
      for (uint i = 0u; i < 4u; i++) av[i] = As[kk][ty + 16u * i];
      for (uint j = 0u; j < 4u; j++) bv[j] = Bs[kk][tx + 16u * j];
      for (uint i = 0u; i < 4u; i++)
        for (uint j = 0u; j < 4u; j++) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }
  for (uint i = 0u; i < 4u; i++) {
    uint r = row0 + ty + 16u * i;
    if (r >= p.M) continue;
    for (uint j = 0u; j < 4u; j++) {
      uint col = col0 + tx + 16u * j;
      if (col < p.N) c[cbase + r * p.N + col] = acc[i][j];
    }
  }
}
