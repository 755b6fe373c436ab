/* vk_plugin.c: the Vulkan plugin's entry point (weft_plugin_entry), its init, and the VULKAN
 * device backend table (gpu-like, priority 50: below CUDA's 100, so /gpu:0 means a CUDA device
 * when there is one and a Vulkan device otherwise). The table forwards to vk_loader.c (devices
 * and their properties) and to the device interface (vk_device.c, vk_alloc.c, vk_staging.c:
 * memory, copies, synchronisation); kernels register from vk_state.c, vk_math.c, vk_nn.c and
 * vk_array.c, the shared ones launching through vk_launch.c. */
#include <stddef.h>
#include <string.h>

#include "vk_internal.h"
#include "vk_services.h"

/* ---------------------------------------------------------------------------------------------
 * Shaders */

static const char *const shader_names[VK_SH_COUNT] = {
    [VK_SH_UNARY] = "unary",
    [VK_SH_BINARY] = "binary",
    [VK_SH_CAST] = "cast",
    [VK_SH_GATHER] = "gather",
    [VK_SH_MATMUL] = "matmul",
    [VK_SH_REDUCE_ROWS] = "reduce_rows",
    [VK_SH_REDUCE_COLS] = "reduce_cols",
    [VK_SH_SOFTMAX] = "softmax",
    [VK_SH_SELECT] = "select",
    [VK_SH_RESIZE] = "resize",
    [VK_SH_BATCH_NORM] = "batch_norm",
    [VK_SH_DEPTHWISE] = "depthwise",
};

const char *weft__vk_shader_name(weft_vk_shader_t shader) {
  return (int)shader >= 0 && shader < VK_SH_COUNT ? shader_names[shader] : "?";
}

const weft_vk_spirv_t *weft__vk_shader_code(weft_vk_shader_t shader) {
  const char *name = weft__vk_shader_name(shader);
  for (size_t i = 0; i < weft__vk_spirv_count; i++)
    if (strcmp(weft__vk_spirv_table[i].name, name) == 0) return &weft__vk_spirv_table[i];
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Backend */

static const weft_device_props_t *vk_props(int ordinal) {
  const weft_vk_physical_t *p = weft__vk_physical(ordinal);
  return p != NULL ? &p->weft_props : NULL;
}

WEFT_PC_GPU_BACKEND(vk_backend, weft__vk, weft_vk_device_t, WEFT_VK_DEVICE_TYPE, 50,
                    weft__vk_instance_devices, vk_props, weft__vk_device_open,
                    weft__vk_instance_shutdown, .device_services = weft__vk_device_services);

/* ---------------------------------------------------------------------------------------------
 * Plugin */

static weft_status_t *vk_init(const weft_host_t *host, const weft_registrar_t *registrar,
                              void **plugin_state) {
  WEFT_PC_GPU_PLUGIN_INIT(host, registrar, plugin_state, "Vulkan plugin", &weft__vk_launch);
  for (int s = 0; s < VK_SH_COUNT; s++)
    if (weft__vk_shader_code((weft_vk_shader_t)s) == NULL)
      return host->status_new(WEFT_INTERNAL, "Vulkan plugin: shader '%s' was not built in",
                              shader_names[s]);
  WEFT_RETURN_IF_ERROR(registrar->register_backend(registrar->ctx, &vk_backend));
  return WEFT_PC_REGISTER_ALL(registrar, weft__vk_register_state, weft__vk_register_math,
                               weft__vk_register_nn, weft__vk_register_array,
                               weft__vk_register_image, weft__vk_register_norm,
                               weft__vk_register_conv);
}

WEFT_PC_PLUGIN_ENTRY(WEFT_VK_PLUGIN_NAME, "0.1.0", vk_init)
