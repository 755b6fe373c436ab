// depthwise.comp: DepthwiseConv2dNative on float32, one invocation per output element
// (grid-stride): output channel o = ci * mult + q sums input channel ci over the dilated window
// with filter [kh, kw, c, mult] entry (ky, kx, ci, q); taps in the padding read zero. NHWC or
// NCHW (cfirst) for input and output alike.
#version 450

layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer F { float f[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint total;
  uint h, w, c, oh, ow, mult;
  uint kh, kw, sh, sw, dh, dw;
  int pt, pl;
  uint cfirst;
} p;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  uint oc = p.c * p.mult;
  for (uint i = gl_GlobalInvocationID.x; i < p.total; i += stride) {
    uint o, ox, oy, b;
    if (p.cfirst != 0u) {
      ox = i % p.ow;
      oy = (i / p.ow) % p.oh;
      o = (i / (p.ow * p.oh)) % oc;
      b = i / (p.ow * p.oh * oc);
    } else {
      o = i % oc;
      ox = (i / oc) % p.ow;
      oy = (i / (oc * p.ow)) % p.oh;
      b = i / (oc * p.ow * p.oh);
    }
    uint ci = o / p.mult, q = o % p.mult;
    float acc = 0.0;
    for (uint ky = 0u; ky < p.kh; ky++) {
      int iy = int(oy * p.sh + ky * p.dh) - p.pt;
      if (iy < 0 || iy >= int(p.h)) continue;
      for (uint kx = 0u; kx < p.kw; kx++) {
        int ix = int(ox * p.sw + kx * p.dw) - p.pl;
        if (ix < 0 || ix >= int(p.w)) continue;
        uint xi = p.cfirst != 0u ? ((b * p.c + ci) * p.h + uint(iy)) * p.w + uint(ix)
                                 : ((b * p.h + uint(iy)) * p.w + uint(ix)) * p.c + ci;
        acc += x[xi] * f[((ky * p.kw + kx) * p.c + ci) * p.mult + q];
      }
    }
    y[i] = acc;
  }
}
