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

WEFT_PC_GPU_BACKEND(cu_backend, weft__cu, weft_cu_device_t, WEFT_CU_DEVICE_TYPE, 100,
                    weft__cu_device_count, weft__cu_props, weft__cu_device_open,
                    weft__cu_close_all_devices, .device_services = NULL);

/* The plugin: registers the backend, then its kernels where a device can run them. */
static weft_status_t *cu_init(const weft_host_t *host, const weft_registrar_t *registrar,
                              void **plugin_state) {
  WEFT_PC_GPU_PLUGIN_INIT(host, registrar, plugin_state, "CUDA plugin", &weft__cu_launch);
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
  return WEFT_PC_REGISTER_ALL(registrar, weft__cu_register_state, weft__cu_register_math,
                               weft__cu_register_nn, weft__cu_register_array,
                               weft__cu_register_train);
}

WEFT_PC_PLUGIN_ENTRY(WEFT_CU_PLUGIN_NAME, "0.1.0", cu_init)
