/* cpu_vmath_avx512.c: the vectorised float32 math (cpu_vmath_impl.h) built for AVX-512F,
 * 16 floats per vector. plugins/cpu/meson.build compiles this file alone with -mavx512f -mfma;
 * cpu_vmath.c calls it only on CPUs that have them. */
#define VM_WIDTH 16
#define VM_SUFFIX avx512
#include "cpu_vmath_impl.h"
