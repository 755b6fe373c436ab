/* cu_plugin.c: the CUDA plugin's entry point (weft_plugin_entry), its init, and the CUDA device
 * backend table: gpu-like, priority 100, above Vulkan's 50, so /gpu:N names CUDA device N
 * whenever there is one. The table forwards to cu_runtime.c (devices and their properties) and
 * cu_device.c (memory, copies, synchronisation); kernels register from cu_state.c, cu_math.c,
 * cu_nn.c, cu_array.c and cu_train.c, the shared ones launching through cu_launch.c.
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
  return weft_pc_device_properties(weft__cu_props(ordinal), WEFT_CU_DEVICE_TYPE, ordinal, out);
}

static weft_status_t *cu_device_open(void *backend_state, int ordinal,
                                     const weft_device_options_t *opts, void **device) {
  (void)backend_state;
  weft_cu_device_t *dev = NULL;
  WEFT_RETURN_IF_ERROR(weft__cu_device_open(ordinal, opts, &dev));
  *device = dev;
  return NULL;
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
    WEFT_PC_DEVICE_ENTRIES(weft__cu),
    .backend_shutdown = cu_backend_shutdown,
};

/* ---------------------------------------------------------------------------------------------
 * Plugin */

static weft_status_t *cu_init(const weft_host_t *host, const weft_registrar_t *registrar,
                              void **plugin_state) {
  *plugin_state = NULL;
  WEFT_PLUGIN_INIT(host, registrar, "CUDA plugin");
  weft_pc_host = host;
  weft_pc_launch = &weft__cu_launch;
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
