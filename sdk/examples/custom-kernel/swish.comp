// FusedSwish on a Vulkan device: y = x * sigmoid(beta * x) for n float elements. Compiled to
// SPIR-V by glslc at build time (meson.build) and embedded in the plugin.
#version 450

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Input { float x[]; };
layout(std430, binding = 1) writeonly buffer Output { float y[]; };

layout(push_constant) uniform Params {
  uint n;
  float beta;
} p;

void main() {
  // Grid-stride: the dispatch may have fewer invocations than elements.
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    float v = x[i];
    y[i] = v / (1.0 + exp(-p.beta * v));
  }
}
