/* vk_services.h: the Vulkan backend's device services (the "weft.vulkan.1" and ".2" table of
 * sdk/include/weft/vulkan.h), which kernels of other plugins reach through
 * host->kernel_device_services. Kept apart from vk_internal.h: it is the one thing the backend
 * table in vk_plugin.c needs from vk_services.c. */
#ifndef WEFT_VK_SERVICES_H
#define WEFT_VK_SERVICES_H

/* weft_backend_t.device_services for VULKAN devices: the services table of `device` (a
 * weft_vk_device_t *) when `name` is WEFT_VULKAN_SERVICES or WEFT_VULKAN_SERVICES_2, else NULL. */
const void *weft__vk_device_services(void *device, const char *name);

#endif /* WEFT_VK_SERVICES_H */
