/* cpu_plugin.c: the CPU plugin's entry point (weft_plugin_entry), its init, and the CPU device
 * backend: one host-memory device whose allocations are 64-byte-aligned malloc and whose copies
 * are memcpy. Kernels live in the other cpu_*.c files and register from here. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Backend */

/* The single CPU device needs no per-device state; a non-NULL handle marks it open. */
static int cpu_device_token;

static int cpu_device_count(void *backend_state, const char **why_none) {
  (void)backend_state;
  if (why_none != NULL) *why_none = NULL;
  return 1;
}

/* "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "host CPU" where it cannot be read. */
static void cpu_model_name(char *out, size_t len) {
  snprintf(out, len, "host CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *colon = strchr(line, ':');
    if (colon == NULL) break;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == ' ')) v[--n] = '\0';
    if (n > 0) snprintf(out, len, "%s", v);
    break;
  }
  fclose(f);
}

static weft_status_t *cpu_device_properties(void *backend_state, int ordinal,
                                            weft_device_props_t *out) {
  (void)backend_state;
  if (ordinal != 0)
    return weft__cpu_host->status_new(WEFT_INVALID_ARGUMENT,
                                      "CPU backend has one device (ordinal 0), asked for %d",
                                      ordinal);
  /* Filled locally and copied up to the caller's struct_size: an older host's smaller struct
   * only gets the fields it knows. */
  weft_device_props_t p;
  memset(&p, 0, sizeof p);
  char model[96];
  cpu_model_name(model, sizeof model);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  /* Which kernels OpenBLAS chose says at a glance whether MatMul runs at the CPU's speed. */
  snprintf(p.description, sizeof p.description, "%.60s, %d core%s, OpenBLAS %.24s kernels",
           model, (int)(cores < 1000000 ? cores : 1000000), cores == 1 ? "" : "s",
           weft__cpu_blas.get_corename());
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  p.memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
  p.host_accessible = 1;
  size_t size = out->struct_size < sizeof p ? out->struct_size : sizeof p;
  p.struct_size = out->struct_size;
  memcpy(out, &p, size);
  return NULL;
}

static weft_status_t *cpu_device_open(void *backend_state, int ordinal,
                                      const weft_device_options_t *opts, void **device) {
  (void)backend_state;
  (void)opts; /* memory fraction and growth are GPU notions; host memory is taken on demand */
  if (ordinal != 0)
    return weft__cpu_host->status_new(WEFT_INVALID_ARGUMENT,
                                      "CPU backend has one device (ordinal 0), asked for %d",
                                      ordinal);
  *device = &cpu_device_token;
  return NULL;
}

static void cpu_device_close(void *device) { (void)device; }

static weft_status_t *cpu_alloc(void *device, size_t nbytes, void **ptr) {
  (void)device;
  if (nbytes == 0) {
    *ptr = NULL;
    return NULL;
  }
  /* 64 bytes: a cache line and a full AVX-512 vector, so vector loops start aligned. */
  void *p = NULL;
  if (posix_memalign(&p, 64, nbytes) != 0 || p == NULL)
    return weft__cpu_host->status_new(WEFT_RESOURCE_EXHAUSTED,
                                      "CPU: out of memory allocating %zu bytes", nbytes);
  *ptr = p;
  return NULL;
}

static void cpu_free(void *device, void *ptr) {
  (void)device;
  free(ptr);
}

static weft_status_t *cpu_copy(void *device, void *dst, const void *src, size_t nbytes) {
  (void)device;
  if (nbytes > 0 && dst != src) memmove(dst, src, nbytes);
  return NULL;
}

static weft_status_t *cpu_synchronize(void *device) {
  (void)device; /* every CPU kernel has finished when it returns */
  return NULL;
}

static const weft_backend_t cpu_backend = {
    .struct_size = sizeof(weft_backend_t),
    .device_type = WEFT_CPU_DEVICE_TYPE,
    .device_class = WEFT_DEVICE_CPU_LIKE,
    .priority = 0,
    .backend_state = NULL,
    .device_count = cpu_device_count,
    .device_properties = cpu_device_properties,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_device = cpu_copy,
    .copy_from_device = cpu_copy,
    .copy_device_to_device = cpu_copy,
    .synchronize = cpu_synchronize,
    .memory_usage = NULL,
    .backend_shutdown = NULL,
};

/* ---------------------------------------------------------------------------------------------
 * Plugin */

static weft_status_t *cpu_init(const weft_host_t *host, const weft_registrar_t *registrar,
                               void **plugin_state) {
  WEFT_PC_PLUGIN_INIT(host, registrar, plugin_state, "CPU plugin");
  WEFT_RETURN_IF_ERROR(weft__cpu_blas_init()); /* OpenBLAS, its kernels chosen first */
  WEFT_RETURN_IF_ERROR(registrar->register_backend(registrar->ctx, &cpu_backend));
  return WEFT_PC_REGISTER_ALL(registrar, weft__cpu_register_state, weft__cpu_register_elementwise,
                               weft__cpu_register_binary, weft__cpu_register_reduce,
                               weft__cpu_register_matmul, weft__cpu_register_nn,
                               weft__cpu_register_array, weft__cpu_register_array_extra,
                               weft__cpu_register_shape, weft__cpu_register_random,
                               weft__cpu_register_cast, weft__cpu_register_train,
                               weft__cpu_register_conv, weft__cpu_register_conv_nd,
                               weft__cpu_register_norm, weft__cpu_register_scatter,
                               weft__cpu_register_search, weft__cpu_register_einsum,
                               weft__cpu_register_ctc, weft__cpu_register_edit_distance,
                               weft__cpu_register_image, weft__cpu_register_bits,
                               weft__cpu_register_special, weft__cpu_register_nn_extra,
                               weft__cpu_register_linalg,
                               weft__cpu_register_svd_misc, weft__cpu_register_sparse,
                               weft__cpu_register_fused,
                               weft__cpu_register_epilogue,
                               weft__cpu_register_summary, weft__cpu_register_ragged,
                               weft__cpu_register_train_sparse, weft__cpu_register_string,
                               weft__cpu_register_codec);
}

WEFT_PC_PLUGIN_ENTRY(WEFT_CPU_PLUGIN_NAME, "0.1.0", cpu_init)
