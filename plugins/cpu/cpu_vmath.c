/* cpu_vmath.c: which build of the vectorised float32 math (cpu_vmath.h) this CPU runs, asked
 * of the CPU once (at plugin init) with __builtin_cpu_supports and overridable with
 * WEFT_CPU_ISA=avx512|avx2|baseline (to test or time each level on one machine). Plain C with
 * no SDK types: the plugin logs the warning, tests/test_cpu_math.c calls it directly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_vmath.h"

static const char *const isa_names[WEFT_CPU_ISA_COUNT] = {"baseline", "avx2", "avx512"};

const char *weft__cpu_isa_name(weft_cpu_isa_t isa) {
  return isa >= 0 && isa < WEFT_CPU_ISA_COUNT ? isa_names[isa] : "unknown";
}

int weft__cpu_isa_supported(weft_cpu_isa_t isa) {
#if defined(__x86_64__) || defined(__i386__)
  /* libgcc's check includes the OS saving the wider registers (XCR0), not only CPUID. */
  __builtin_cpu_init();
  switch (isa) {
    case WEFT_CPU_ISA_BASELINE: return 1;
    case WEFT_CPU_ISA_AVX2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case WEFT_CPU_ISA_AVX512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    default: return 0;
  }
#else
  return isa == WEFT_CPU_ISA_BASELINE;
#endif
}

const weft_cpu_vmath_t *weft__cpu_vmath_for(weft_cpu_isa_t isa) {
#if defined(__x86_64__) || defined(__i386__)
  if (isa == WEFT_CPU_ISA_AVX512) return &weft__cpu_vmath_avx512;
  if (isa == WEFT_CPU_ISA_AVX2) return &weft__cpu_vmath_avx2;
#endif
  (void)isa;
  return &weft__cpu_vmath_baseline;
}

static const weft_cpu_vmath_t *active = &weft__cpu_vmath_baseline;

const weft_cpu_vmath_t *weft__cpu_vmath(void) { return active; }

void weft__cpu_vmath_set(const weft_cpu_vmath_t *vm) { active = vm; }

weft_cpu_isa_t weft__cpu_isa_choose(const char *request, char **warning) {
  *warning = NULL;
  weft_cpu_isa_t best = WEFT_CPU_ISA_BASELINE;
  for (int k = WEFT_CPU_ISA_COUNT - 1; k > 0; k--) {
    if (weft__cpu_isa_supported((weft_cpu_isa_t)k)) {
      best = (weft_cpu_isa_t)k;
      break;
    }
  }
  if (request == NULL || request[0] == '\0') return best;
  for (int k = 0; k < WEFT_CPU_ISA_COUNT; k++) {
    if (strcmp(request, isa_names[k]) != 0) continue;
    if (weft__cpu_isa_supported((weft_cpu_isa_t)k)) return (weft_cpu_isa_t)k;
    const char *fmt = "WEFT_CPU_ISA=%s: this CPU cannot run it; using %s";
    size_t len = strlen(fmt) + strlen(request) + 16;
    *warning = malloc(len);
    if (*warning != NULL) snprintf(*warning, len, fmt, request, isa_names[best]);
    return best;
  }
  const char *fmt = "WEFT_CPU_ISA=%.64s is not one of avx512, avx2, baseline; using %s";
  size_t len = strlen(fmt) + 64 + 16;
  *warning = malloc(len);
  if (*warning != NULL) snprintf(*warning, len, fmt, request, isa_names[best]);
  return best;
}
