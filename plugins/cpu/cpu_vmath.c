/* cpu_vmath.c: which build of the vectorised float32 math (cpu_vmath.h) this CPU runs, asked
 * of the CPU once (at plugin init) with __builtin_cpu_supports and overridable with
 * WEFT_CPU_ISA=avx512|avx2|baseline (to test or time each level on one machine); and from which
 * output size the kernels write with streaming stores (the last-level cache's size, overridable
 * with WEFT_CPU_STREAM_BYTES). Plain C with no SDK types: the plugin logs the warnings,
 * tests/test_cpu_math.c calls these directly. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

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

/* Where neither sysfs nor sysconf says: a typical server's last-level cache slice. */
#define STREAM_DEFAULT_BYTES ((int64_t)32 << 20)

/* The size of cpu0's level-3 cache from sysfs ("32768K"), or 0. Read first because it is the
 * slice this core uses: glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) sums the whole package on some
 * AMD EPYCs (320 MiB on the development machine, whose cores see 32 MiB). */
static int64_t sysfs_l3_bytes(void) {
  for (int k = 0; k < 8; k++) {
    char path[96], buf[32];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", k);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    int level = 0;
    int got = fscanf(f, "%d", &level);
    fclose(f);
    if (got != 1 || level != 3) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", k);
    f = fopen(path, "r");
    if (f == NULL) return 0;
    char *line = fgets(buf, sizeof buf, f);
    fclose(f);
    if (line == NULL) return 0;
    char *end = NULL;
    long long v = strtoll(buf, &end, 10);
    if (v <= 0 || v > (1ll << 40)) return 0;
    if (*end == 'K') return (int64_t)v << 10;
    if (*end == 'M') return (int64_t)v << 20;
    return (int64_t)v;
  }
  return 0;
}

int64_t weft__cpu_stream_choose(const char *request, char **warning) {
  *warning = NULL;
  if (request != NULL && request[0] != '\0') {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(request, &end, 10);
    if (errno == 0 && end != request && *end == '\0' && v >= 0) return (int64_t)v;
    const char *fmt = "WEFT_CPU_STREAM_BYTES=%.64s is not a byte count (0 or more); using the "
                      "last-level cache's size";
    size_t len = strlen(fmt) + 64;
    *warning = malloc(len);
    if (*warning != NULL) snprintf(*warning, len, fmt, request);
  }
  int64_t bytes = sysfs_l3_bytes();
#if defined(_SC_LEVEL3_CACHE_SIZE)
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return bytes > 0 ? bytes : STREAM_DEFAULT_BYTES;
}

static int64_t stream_bytes = 0;

int64_t weft__cpu_stream_bytes(void) { return stream_bytes; }

void weft__cpu_stream_set(int64_t bytes) { stream_bytes = bytes; }

void weft__cpu_stream_fence(void) {
#if defined(__SSE2__)
  _mm_sfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
