/* cpu_pool3d.h: the float32 MaxPool3D / AvgPool3D forward kernel (cpu_pool3d_impl.h), built once
 * per instruction set level: the plugin's own level in cpu_pool3d_fast.c, which drives it and
 * picks the level, and AVX2 / AVX-512 in cpu_pool3d_avx2.c / cpu_pool3d_avx512.c
 * (plugins/cpu/meson.build compiles each alone with its -m flags). Plain C with no SDK types. */
#ifndef WEFT_CPU_POOL3D_H
#define WEFT_CPU_POOL3D_H

#include <stdbool.h>
#include <stdint.h>

/* One pool: x [n, in[0..2], c] (NDHWC) or [n, c, in[0..2]] (NCDHW, cfirst) into y of the same
 * layout with out[0..2], window k, strides s, padding before pb (TensorFlow's SAME / VALID).
 * The driver fills the rest: lanes, the contiguous floats of one pixel (c NDHWC, 1 NCDHW);
 * vin / vout, the floats of one volume (an image NDHWC, one image's channel NCDHW); padded,
 * whether units are whole volumes copied into a padded buffer (the padded volume at most
 * P3_PADDED_MAX floats, see cpu_pool3d_fast.c) or else (volume, output depth plane) pairs. */
typedef struct weft_cpu_pool3 {
  int64_t n, c, in[3], out[3], k[3], s[3], pb[3];
  bool cfirst, is_max;
  const float *x;
  float *y;
  int64_t lanes, vin, vout;
  bool padded;
} weft_cpu_pool3_t;

#define P3_PADDED_MAX ((int64_t)1 << 16)

/* Units [b, e) of pool p. */
typedef void (*weft_cpu_pool3_range_fn)(const weft_cpu_pool3_t *p, int64_t b, int64_t e);
void weft__cpu_pool3_range_baseline(const weft_cpu_pool3_t *p, int64_t b, int64_t e);
void weft__cpu_pool3_range_avx2(const weft_cpu_pool3_t *p, int64_t b, int64_t e);
void weft__cpu_pool3_range_avx512(const weft_cpu_pool3_t *p, int64_t b, int64_t e);

#endif /* WEFT_CPU_POOL3D_H */
