/* cpu_vmath_avx2.c: the vectorised float32 math (cpu_vmath_impl.h) built for AVX2 and FMA,
 * 8 floats per vector. plugins/cpu/meson.build compiles this file alone with -mavx2 -mfma;
 * cpu_vmath.c calls it only on CPUs that have them. */
#define VM_WIDTH 8
#define VM_SUFFIX avx2
#include "cpu_vmath_impl.h"
