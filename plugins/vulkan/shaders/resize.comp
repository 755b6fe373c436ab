// resize.comp: ResizeBilinear and ResizeNearestNeighbor of an NHWC float32 image, one invocation
// per output element (grid-stride), with TensorFlow's ImageResizerState coordinates: the scales
// come from the host; half_pixel_centers shifts by 0.5 (bilinear subtracts 0.5 back, nearest does
// not); nearest rounds half away from zero with align_corners and floors otherwise. `precise`
// keeps the float steps in the CPU kernel's order (no fused multiply-adds).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint n;  // output elements
  uint ih, iw, c, oh, ow;
  float hs, ws;
  uint align, half_px, nearest;
} p;

float src_coord(uint o, float scale) {
  precise float v = p.half_px != 0u ? (float(o) + 0.5) * scale : float(o) * scale;
  if (p.half_px != 0u && p.nearest == 0u) v = v - 0.5;
  return v;
}

int nearest_index(uint o, float scale, uint in_size) {
  float v = src_coord(o, scale);
  float r = floor(v);
  if (p.align != 0u) {  // roundf: half away from zero
    float t = trunc(v);
    r = abs(v - t) >= 0.5 ? t + sign(v) : t;
  }
  int i = min(int(r), int(in_size) - 1);
  return p.half_px != 0u ? max(i, 0) : i;
}

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
    uint ch = i % p.c;
    uint ox = (i / p.c) % p.ow;
    uint oy = (i / (p.c * p.ow)) % p.oh;
    uint b = i / (p.c * p.ow * p.oh);
    uint base = b * p.ih;
    if (p.nearest != 0u) {
      int iy = nearest_index(oy, p.hs, p.ih), ix = nearest_index(ox, p.ws, p.iw);
      y[i] = x[((base + uint(iy)) * p.iw + uint(ix)) * p.c + ch];
      continue;
    }
    float vy = src_coord(oy, p.hs), vx = src_coord(ox, p.ws);
    float fy = floor(vy), fx = floor(vx);
    uint y0 = uint(max(int(fy), 0)), y1 = uint(min(int(ceil(vy)), int(p.ih) - 1));
    uint x0 = uint(max(int(fx), 0)), x1 = uint(min(int(ceil(vx)), int(p.iw) - 1));
    precise float ly = vy - fy;
    precise float lx = vx - fx;
    float tl = x[((base + y0) * p.iw + x0) * p.c + ch];
    float tr = x[((base + y0) * p.iw + x1) * p.c + ch];
    float bl = x[((base + y1) * p.iw + x0) * p.c + ch];
    float br = x[((base + y1) * p.iw + x1) * p.c + ch];
    precise float t = tl + (tr - tl) * lx;
    precise float bo = bl + (br - bl) * lx;
    precise float r = t + (bo - t) * ly;
    y[i] = r;
  }
}
