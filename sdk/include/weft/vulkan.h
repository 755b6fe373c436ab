/* The Vulkan backend's device services (ABI 1.1): what a kernel of another plugin, registered for
 * device type "VULKAN", may learn about the device it runs on, through
 *
 *     const weft_vulkan_services_t *vk =
 *         host->kernel_device_services(ctx, WEFT_VULKAN_SERVICES);
 *
 * Tensor memory of a Vulkan device is opaque to other plugins (a view's data is the Vulkan
 * plugin's own handle): kernels move bytes with host->kernel_copy_to_host/_from_host. What this
 * table gives is the Vulkan plugin's instance and the exact physical device behind "VULKAN:N",
 * so that a kernel set can create its own VkDevice on the same GPU and run its own compute
 * shaders there (sdk/examples/custom-kernel does). Sharing the Vulkan plugin's VkDevice and
 * command stream is not offered in this version of the table; a later version may append it.
 *
 * Self-contained: no Vulkan header is needed to include it (handles are void *: VkInstance and
 * VkPhysicalDevice are dispatchable handles, i.e. pointers). Like every ABI struct, the table
 * starts with struct_size and only grows at the end. */
#ifndef WEFT_VULKAN_H
#define WEFT_VULKAN_H

#include <stddef.h>
#include <stdint.h>

#include "weft/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The services name; the trailing number is the table's major version. */
#define WEFT_VULKAN_SERVICES "weft.vulkan.1"

typedef void (*weft_vulkan_void_fn)(void);

typedef struct weft_vulkan_services {
  size_t struct_size;
  int ordinal; /* N in "VULKAN:N" */
  /* The Vulkan plugin's VkInstance: borrowed, never destroy it. Objects a kernel set creates
   * from it (a VkDevice) must not be destroyed after the instance is; the Vulkan plugin destroys
   * the instance at process exit, so such objects are best left to the end of the process. */
  void *instance;
  /* vkGetInstanceProcAddr of the loader the Vulkan plugin opened: loads every other entry point
   * (use vkGetDeviceProcAddr, loaded through it, for device-level functions). */
  weft_vulkan_void_fn (*get_instance_proc_addr)(void *instance, const char *name);
  void *physical_device;         /* VkPhysicalDevice behind "VULKAN:N" */
  uint32_t compute_queue_family; /* a queue family of it with VK_QUEUE_COMPUTE_BIT */
  uint32_t api_version;          /* VkPhysicalDeviceProperties.apiVersion */
  uint32_t vendor_id, device_id;
  uint8_t pipeline_cache_uuid[16];
  char device_name[256];
} weft_vulkan_services_t;

#ifdef __cplusplus
}
#endif

#endif /* WEFT_VULKAN_H */
