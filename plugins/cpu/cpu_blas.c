/* cpu_blas.c: OpenBLAS, which the CPU plugin loads itself (dlopen of libopenblas.so.0) rather
 * than linking, so that it can choose OpenBLAS's kernels before OpenBLAS starts; and the
 * per-call thread policy of the plugin's GEMMs.
 *
 * Debian 12's OpenBLAS (0.3.21) does not know x86 CPUs newer than its release and falls back to
 * its generic SSE3 kernels ("Prescott") on them: on a Sapphire Rapids VM, matmul/1024 ran at 64
 * GFLOP/s instead of 245. OpenBLAS picks its kernels once, in its own library constructor, from
 * OPENBLAS_CORETYPE if set. A plugin linked against it would be too late to set that (the
 * dependency's constructor runs first), so the plugin loads it at init, after asking for the
 * SkylakeX kernels on a CPU with the AVX-512 subsets they use, unless the user chose a core
 * type. The core knows nothing of this: the policy is the CPU backend's. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

weft_cpu_blas_t weft__cpu_blas;

/* OPENBLAS_NUM_THREADS as the plugin found it (0: unset): when set, a large GEMM's thread
 * count, so that a user (or weft_threads_set_limit) can still choose it. */
static int openblas_threads_asked;

static void prefer_avx512_kernels(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (getenv("OPENBLAS_CORETYPE") || !__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512cd") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl"))
    return;
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
#endif
}

weft_status_t *weft__cpu_blas_init(void) {
  if (weft__cpu_blas.sgemm != NULL) return NULL;
  prefer_avx512_kernels();
  /* Debian's alternatives name the chosen OpenBLAS build (pthread, openmp, serial) so. */
  static const char kSoname[] = "libopenblas.so.0";
  void *lib = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return weft_pc_host->status_new(WEFT_FAILED_PRECONDITION,
                                     "CPU plugin: cannot load OpenBLAS (%s): %s", kSoname,
                                     dlerror());
  weft_cpu_blas_t b;
  memset(&b, 0, sizeof b);
  /* dlsym gives object pointers; the casts name the table's function types. */
  *(void **)&b.sgemm = dlsym(lib, "cblas_sgemm");
  *(void **)&b.dgemm = dlsym(lib, "cblas_dgemm");
  *(void **)&b.sgemv = dlsym(lib, "cblas_sgemv");
  *(void **)&b.dgemv = dlsym(lib, "cblas_dgemv");
  *(void **)&b.set_num_threads = dlsym(lib, "openblas_set_num_threads");
  *(void **)&b.get_corename = dlsym(lib, "openblas_get_corename");
  if (!b.sgemm || !b.dgemm || !b.sgemv || !b.dgemv || !b.set_num_threads || !b.get_corename) {
    dlclose(lib);
    return weft_pc_host->status_new(
        WEFT_FAILED_PRECONDITION,
        "CPU plugin: %s lacks cblas_sgemm, cblas_dgemm, cblas_sgemv, cblas_dgemv, "
        "openblas_set_num_threads or openblas_get_corename: is it OpenBLAS?",
        kSoname);
  }
  /* Kept loaded for the life of the process, as a linked library would be. */
  weft__cpu_blas = b;
  const char *env = getenv("OPENBLAS_NUM_THREADS");
  long asked = env ? strtol(env, NULL, 10) : 0;
  openblas_threads_asked = asked > 0 && asked < 1024 ? (int)asked : 0;
  /* Until the first large GEMM, the threads OpenBLAS started when it was loaded have nothing
   * to spin for; each GEMM then sets the count for itself (weft__cpu_blas_gemm). */
  weft__cpu_blas.set_num_threads(1);
  return NULL;
}

int weft__cpu_blas_threads_asked(void) { return openblas_threads_asked; }
