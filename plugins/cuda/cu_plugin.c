/* cu_plugin.c: the CUDA plugin's entry point (weft_plugin_entry), its init, and the CUDA device
 * backend table: gpu-like, priority 100, above Vulkan's 50, so /gpu:N names CUDA device N
 * whenever there is one. The table forwards to cu_runtime.c (devices and their properties) and
 * cu_device.c (memory, copies, synchronisation); kernels register from cu_state.c, cu_math.c,
 * cu_nn.c, cu_array.c and cu_train.c.
 *
 * Nothing here needs a GPU or the NVIDIA driver: devices are counted at init (the CUDA runtime
 * loads the driver then); with none the backend is still registered and reports zero devices
 * and why, and no kernel is registered. */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

/* ---------------------------------------------------------------------------------------------
 * Backend */

static int cu_device_count(void *backend_state, const char **why_none) {
  (void)backend_state;
  return weft__cu_device_count(why_none);
}

static weft_status_t *cu_device_properties(void *backend_state, int ordinal,
                                           weft_device_props_t *out) {
  (void)backend_state;
  const weft_device_props_t *p = weft__cu_props(ordinal);
  if (p == NULL)
    return weft_pc_host->status_new(WEFT_INVALID_ARGUMENT, "CUDA: no device with ordinal %d",
                                    ordinal);
  /* Copy no more than the caller's struct holds; it may be an older, smaller one. */
  size_t size = out->struct_size;
  size_t n = size < sizeof *out ? size : sizeof *out;
  memcpy(out, p, n);
  out->struct_size = size;
  return NULL;
}

static weft_status_t *cu_device_open(void *backend_state, int ordinal,
                                     const weft_device_options_t *opts, void **device) {
  (void)backend_state;
  weft_cu_device_t *dev = NULL;
  WEFT_RETURN_IF_ERROR(weft__cu_device_open(ordinal, opts, &dev));
  *device = dev;
  return NULL;
}

static void cu_device_close(void *device) { weft__cu_device_close(device); }

static weft_status_t *cu_alloc(void *device, size_t nbytes, void **ptr) {
  return weft__cu_alloc(device, nbytes, ptr);
}

static void cu_free(void *device, void *ptr) { weft__cu_free(device, ptr); }

static weft_status_t *cu_copy_to_device(void *device, void *dst, const void *src, size_t n) {
  return weft__cu_copy_to_device(device, dst, src, n);
}

static weft_status_t *cu_copy_from_device(void *device, void *dst, const void *src, size_t n) {
  return weft__cu_copy_from_device(device, dst, src, n);
}

static weft_status_t *cu_copy_d2d(void *device, void *dst, const void *src, size_t n) {
  return weft__cu_copy_device_to_device(device, dst, src, n);
}

static weft_status_t *cu_synchronize(void *device) { return weft__cu_synchronize(device); }

static weft_status_t *cu_memory_usage(void *device, uint64_t *in_use, uint64_t *limit) {
  return weft__cu_memory_usage(device, in_use, limit);
}

static void cu_backend_shutdown(void *backend_state) {
  (void)backend_state;
  weft__cu_close_all_devices();
}

static const weft_backend_t cu_backend = {
    .struct_size = sizeof(weft_backend_t),
    .device_type = WEFT_CU_DEVICE_TYPE,
    .device_class = WEFT_DEVICE_GPU_LIKE,
    .priority = 100,
    .backend_state = NULL,
    .device_count = cu_device_count,
    .device_properties = cu_device_properties,
    .device_open = cu_device_open,
    .device_close = cu_device_close,
    .alloc = cu_alloc,
    .free = cu_free,
    .copy_to_device = cu_copy_to_device,
    .copy_from_device = cu_copy_from_device,
    .copy_device_to_device = cu_copy_d2d,
    .synchronize = cu_synchronize,
    .memory_usage = cu_memory_usage,
    .backend_shutdown = cu_backend_shutdown,
};

/* ---------------------------------------------------------------------------------------------
 * Plugin */

static weft_status_t *cu_init(const weft_host_t *host, const weft_registrar_t *registrar,
                              void **plugin_state) {
  *plugin_state = NULL;
  weft_status_t *err = NULL;
  if (!weft_pc_init(host, registrar, "CUDA plugin", &err)) return err;
  WEFT_RETURN_IF_ERROR(registrar->register_backend(registrar->ctx, &cu_backend));
  /* Kernels only where they can run: a CUDA kernel registered on a machine without a CUDA
   * device would tell the placer and weft-conformance that CUDA can run an op when nothing
   * can. The backend stays registered either way, so the missing devices are reported. */
  const char *why = NULL;
  const char *force = getenv("WEFT_CUDA_KERNELS_WITHOUT_DEVICE"); /* tests check registration */
  bool forced = force != NULL && force[0] != '\0' && strcmp(force, "0") != 0;
  if (weft__cu_device_count(&why) == 0 && !forced) {
    host->log(WEFT_LOG_INFO, WEFT_CU_PLUGIN_NAME, "no CUDA devices (%s): kernels not registered",
              why != NULL ? why : "none found");
    return NULL;
  }
  WEFT_RETURN_IF_ERROR(weft__cu_register_state(registrar));
  WEFT_RETURN_IF_ERROR(weft__cu_register_math(registrar));
  WEFT_RETURN_IF_ERROR(weft__cu_register_nn(registrar));
  WEFT_RETURN_IF_ERROR(weft__cu_register_array(registrar));
  WEFT_RETURN_IF_ERROR(weft__cu_register_train(registrar));
  return NULL;
}

static const weft_plugin_info_t cu_plugin_info = {
    .struct_size = sizeof(weft_plugin_info_t),
    .abi_major = WEFT_ABI_MAJOR,
    .abi_minor = WEFT_ABI_MINOR,
    .name = WEFT_CU_PLUGIN_NAME,
    .version = "0.1.0",
    .init = cu_init,
    .shutdown = NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void) { return &cu_plugin_info; }
