// batch_norm.comp: the stages of FusedBatchNorm(V2/V3) on float32, the input viewed as
// [outer, C, inner] (NHWC: inner 1; NCHW: outer N). S is a 4C scratch: the mean and variance
// that normalize, then scale and offset. Modes:
//   STATS (one workgroup per channel, grid-stride): S[c] = batch mean of a, S[C+c] = biased
//     batch variance (two passes, compensated sums);
//   COPY2 (per channel): S[off+c] = a[c], S[off+C+c] = b[c];
//   APPLY (per element): b[i] = (a[i] - mean) / sqrt(var + eps) * scale + offset;
//   OUT (per channel): b[c] = the reported statistic `which` (0 mean, 1 variance) from S and the
//     given one in a, as TensorFlow's kernel reports it (see the C side, vk_norm.c).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define MODE_STATS 0u
#define MODE_COPY2 1u
#define MODE_APPLY 2u
#define MODE_OUT 3u

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) buffer B { float b[]; };
layout(std430, binding = 2) buffer S { float s[]; };
layout(push_constant) uniform P {
  uint mode;
  uint outer, c, inner;
  uint off, which, blend, empty;  // OUT: blend with the given statistic; x had no elements
  float eps, factor, adjust;
} p;

shared float sh[256];
shared float shc[256];

float group_sum(float v, float comp) {
  uint lid = gl_LocalInvocationID.x;
  sh[lid] = v;
  shc[lid] = comp;
  barrier();
  for (uint h = 128u; h > 0u; h >>= 1u) {
    if (lid < h) {
      precise float t = sh[lid] + sh[lid + h];
      sh[lid] = t;
      shc[lid] = shc[lid] + shc[lid + h];
    }
    barrier();
  }
  float total = sh[0] - shc[0];
  barrier();
  return total;
}

void stats() {
  uint lid = gl_LocalInvocationID.x;
  uint rest = p.outer * p.inner;
  for (uint ch = gl_WorkGroupID.x; ch < p.c; ch += gl_NumWorkGroups.x) {
    float sum = 0.0, comp = 0.0;
    for (uint j = lid; j < rest; j += 256u) {
      precise float e = a[((j / p.inner) * p.c + ch) * p.inner + j % p.inner] - comp;
      precise float t = sum + e;
      comp = (t - sum) - e;
      sum = t;
    }
    float mean = f_div(group_sum(sum, comp), float(rest));
    sum = 0.0;
    comp = 0.0;
    for (uint j = lid; j < rest; j += 256u) {
      precise float d = a[((j / p.inner) * p.c + ch) * p.inner + j % p.inner] - mean;
      precise float e = d * d - comp;
      precise float t = sum + e;
      comp = (t - sum) - e;
      sum = t;
    }
    float var = f_div(group_sum(sum, comp), float(rest));
    if (lid == 0u) {
      s[ch] = mean;
      s[p.c + ch] = var;
    }
  }
}

void main() {
  if (p.mode == MODE_STATS) {
    stats();
    return;
  }
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint n = p.mode == MODE_APPLY ? p.outer * p.c * p.inner : p.c;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) {
    if (p.mode == MODE_COPY2) {
      s[p.off + i] = a[i];
      s[p.off + p.c + i] = b[i];
    } else if (p.mode == MODE_APPLY) {
      uint ch = (i / p.inner) % p.c;
      precise float v = (a[i] - s[ch]) / sqrt(s[p.c + ch] + p.eps) * s[2u * p.c + ch] +
                        s[3u * p.c + ch];
      b[i] = v;
    } else if (p.empty != 0u) {
      b[i] = p.blend != 0u ? (1.0 - p.factor) * a[i] : f_nan();
    } else {
      precise float batch = s[p.which * p.c + i] * p.adjust;
      precise float r = p.blend != 0u ? (1.0 - p.factor) * a[i] + p.factor * batch : batch;
      b[i] = r;
    }
  }
}
