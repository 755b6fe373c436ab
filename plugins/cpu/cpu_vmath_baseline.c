/* cpu_vmath_baseline.c: the vectorised float32 math (cpu_vmath_impl.h) built for baseline x86-64 (SSE2; any CPU the plugin runs on),
 * 4 floats per vector. plugins/cpu/meson.build compiles this file alone with no -m flags;
 * cpu_vmath.c calls it only on CPUs that have them. */
#define VM_WIDTH 4
#define VM_SUFFIX baseline
#include "cpu_vmath_impl.h"
