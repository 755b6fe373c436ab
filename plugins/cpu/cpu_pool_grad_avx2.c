/* cpu_pool_grad_avx2.c: the pooling gradients' band kernels (cpu_pool_grad.h) for AVX2 (and FMA).
 * plugins/cpu/meson.build compiles this file alone with its -m flags; cpu_pool_grad_fast.c
 * calls it only on CPUs that have them. */
#define PG_BAND weft__cpu_pool_grad_band_avx2
#define PG_BAND3 weft__cpu_pool3_grad_band_avx2
#include "cpu_pool_grad_impl.h"
