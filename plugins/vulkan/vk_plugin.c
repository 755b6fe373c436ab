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

static int vk_device_count(void *backend_state, const char **why_none) {
  (void)backend_state;
  return weft__vk_instance_devices(why_none);
}

static weft_status_t *vk_device_properties(void *backend_state, int ordinal,
                                           weft_device_props_t *out) {
  (void)backend_state;
  const weft_vk_physical_t *p = weft__vk_physical(ordinal);
  return weft_pc_device_properties(p != NULL ? &p->weft_props : NULL, WEFT_VK_DEVICE_TYPE, ordinal,
                                   out);
}

static weft_status_t *vk_device_open(void *backend_state, int ordinal,
                                     const weft_device_options_t *opts, void **device) {
  (void)backend_state;
  weft_vk_device_t *dev = NULL;
  WEFT_RETURN_IF_ERROR(weft__vk_device_open(ordinal, opts, &dev));
  *device = dev;
  return NULL;
}

static void vk_backend_shutdown(void *backend_state) {
  (void)backend_state;
  weft__vk_instance_shutdown();
}

static const weft_backend_t vk_backend = {
    .struct_size = sizeof(weft_backend_t),
    .device_type = WEFT_VK_DEVICE_TYPE,
    .device_class = WEFT_DEVICE_GPU_LIKE,
    .priority = 50,
    .backend_state = NULL,
    .device_count = vk_device_count,
    .device_properties = vk_device_properties,
    .device_open = vk_device_open,
    WEFT_PC_DEVICE_ENTRIES(weft__vk),
    .backend_shutdown = vk_backend_shutdown,
    .device_services = weft__vk_device_services,
};

/* ---------------------------------------------------------------------------------------------
 * Plugin */

static weft_status_t *vk_init(const weft_host_t *host, const weft_registrar_t *registrar,
                              void **plugin_state) {
  *plugin_state = NULL;
  WEFT_PLUGIN_INIT(host, registrar, "Vulkan plugin");
  weft_pc_host = host;
  weft_pc_launch = &weft__vk_launch;
  for (int s = 0; s < VK_SH_COUNT; s++)
    if (weft__vk_shader_code((weft_vk_shader_t)s) == NULL)
      return host->status_new(WEFT_INTERNAL, "Vulkan plugin: shader '%s' was not built in",
                              shader_names[s]);
  WEFT_RETURN_IF_ERROR(registrar->register_backend(registrar->ctx, &vk_backend));
  WEFT_RETURN_IF_ERROR(weft__vk_register_state(registrar));
  WEFT_RETURN_IF_ERROR(weft__vk_register_math(registrar));
  WEFT_RETURN_IF_ERROR(weft__vk_register_nn(registrar));
  WEFT_RETURN_IF_ERROR(weft__vk_register_array(registrar));
  return NULL;
}

static const weft_plugin_info_t vk_plugin_info = {
    .struct_size = sizeof(weft_plugin_info_t),
    .abi_major = WEFT_ABI_MAJOR,
    .abi_minor = WEFT_ABI_MINOR,
    .name = WEFT_VK_PLUGIN_NAME,
    .version = "0.1.0",
    .init = vk_init,
    .shutdown = NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void) { return &vk_plugin_info; }
