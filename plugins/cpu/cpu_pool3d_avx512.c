/* cpu_pool3d_avx512.c: the float32 MaxPool3D / AvgPool3D kernel (cpu_pool3d.h) for AVX-512F.
 * plugins/cpu/meson.build compiles this file alone with its -m flags; cpu_pool3d_fast.c calls
 * it only on CPUs that have them. */
#define P3_RANGE weft__cpu_pool3_range_avx512
#include "cpu_pool3d_impl.h"
