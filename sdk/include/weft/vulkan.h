/* The Vulkan backend's device services (ABI 1.1): what a kernel of another plugin, registered for
 * device type "VULKAN", may use of the device it runs on, through
 *
 *     const weft_vulkan_services_t *vk =
 *         host->kernel_device_services(ctx, WEFT_VULKAN_SERVICES_2);
 *
 * Version 1 ("weft.vulkan.1") names the Vulkan plugin's instance and the exact physical device
 * behind "VULKAN:N". Version 2 ("weft.vulkan.2") appends the backend's own VkDevice and the
 * three calls a kernel needs to run a compute shader of its own on the backend's device, queue
 * and buffers, with no copies:
 *
 *   - buffer():   a tensor's device pointer (weft_tensor_view_t.data, kernel_scratch) as a
 *                 VkBuffer + offset + range;
 *   - pipeline(): a compute pipeline from SPIR-V words, created once per device and cached;
 *   - dispatch(): one dispatch of such a pipeline over device pointers with push constants,
 *                 recorded into the backend's own command stream, so that it runs after
 *                 everything the executor issued before the kernel and before everything after.
 *
 * Both names return the same table: a kernel built against version 1 keeps working, and one that
 * asks for version 2 from an older Vulkan plugin gets NULL. The table starts with struct_size and
 * only grows at the end, like every ABI struct.
 *
 * Self-contained: no Vulkan header is needed to include it. Dispatchable handles (VkInstance,
 * VkPhysicalDevice, VkDevice) are void *, non-dispatchable ones (VkBuffer) uint64_t, as the Vulkan
 * headers define them on 64-bit platforms. */
#ifndef WEFT_VULKAN_H
#define WEFT_VULKAN_H

#include <stddef.h>
#include <stdint.h>

#include "weft/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The services names; the trailing number is the table's version. */
#define WEFT_VULKAN_SERVICES "weft.vulkan.1"
#define WEFT_VULKAN_SERVICES_2 "weft.vulkan.2"

typedef void (*weft_vulkan_void_fn)(void);

/* A compute pipeline of another plugin's shader on one Vulkan device (opaque). Owned by the
 * Vulkan plugin; valid for the life of the process (its VkPipeline goes when the device closes,
 * after which dispatch() fails naming the closed device). */
typedef struct weft_vulkan_pipeline weft_vulkan_pipeline_t;

/* Where a device pointer lives (buffer()). The caller sets struct_size; the plugin writes the
 * fields it covers. */
typedef struct weft_vulkan_buffer {
  size_t struct_size;
  /* VkBuffer: borrowed. Several allocations share one buffer; use [offset, offset + range) only,
   * and only while the tensor (or scratch memory) the pointer came from is alive. Never destroy
   * it. */
  uint64_t buffer;
  uint64_t offset; /* a multiple of minStorageBufferOffsetAlignment */
  uint64_t range;  /* bytes reserved for the allocation (its size rounded up), at most
                      maxStorageBufferRange: what a storage-buffer descriptor may bind */
  uint64_t size;   /* bytes asked for when it was allocated */
} weft_vulkan_buffer_t;

typedef struct weft_vulkan_services {
  size_t struct_size;
  int ordinal; /* N in "VULKAN:N" */
  /* The Vulkan plugin's VkInstance: borrowed, never destroy it. Objects a kernel set creates
   * from it must not be destroyed after the instance is; the Vulkan plugin destroys the instance
   * at process exit, so such objects are best left to the end of the process. */
  void *instance;
  /* vkGetInstanceProcAddr of the loader the Vulkan plugin opened: loads every other entry point
   * (with a NULL instance: vkCreateInstance), so a kernel set never links libvulkan. */
  weft_vulkan_void_fn (*get_instance_proc_addr)(void *instance, const char *name);
  void *physical_device;         /* VkPhysicalDevice behind "VULKAN:N" */
  uint32_t compute_queue_family; /* the family of the backend's queue (VK_QUEUE_COMPUTE_BIT) */
  uint32_t api_version;          /* VkPhysicalDeviceProperties.apiVersion */
  uint32_t vendor_id, device_id;
  uint8_t pipeline_cache_uuid[16];
  char device_name[256];

  /* ---- "weft.vulkan.2": present when struct_size covers them ---------------------------- */

  /* The backend's VkDevice for "VULKAN:N": borrowed, valid while the device is open (it is
   * whenever a kernel runs on it). A kernel set may create objects of its own from it (and must
   * destroy them before the process ends); it must never submit to the backend's queue, nor use
   * the backend's buffers outside dispatch(): only dispatch() orders work with the backend's. */
  void *device;
  /* vkGetDeviceProcAddr: device-level entry points for `device`, straight from its driver. */
  weft_vulkan_void_fn (*get_device_proc_addr)(void *device, const char *name);
  uint32_t max_push_constant_bytes; /* most push-constant bytes a pipeline may take (128) */
  uint32_t max_buffers;             /* most storage buffers a pipeline may bind (4) */
  uint32_t max_group_count[3];      /* maxComputeWorkGroupCount */

  /* The VkBuffer, offset and range of a device pointer of this device (a tensor view's data, or
   * memory from kernel_scratch). INVALID_ARGUMENT naming `what` (and the device) when the pointer
   * is NULL or is not a live allocation of this device (host memory, another device's). */
  weft_status_t *(*buffer)(const struct weft_vulkan_services *vk, const void *device_ptr,
                           const char *what, weft_vulkan_buffer_t *out);
  /* The compute pipeline of a SPIR-V module (entry point "main"; `spirv_bytes` a multiple of 4)
   * whose shader uses push constants of at most push_constant_bytes (a multiple of 4, at most
   * max_push_constant_bytes) and storage buffers at set 0, bindings 0..n_buffers-1 (at most
   * max_buffers). Created on the first call for this device and cached: later calls with the same
   * words and sizes return the same pipeline at the cost of a comparison, so a kernel may call it
   * on every run. The words are copied. `name` (copied) names it in messages. INVALID_ARGUMENT
   * naming the pipeline when the words are not SPIR-V (size, magic number) or the sizes are out of
   * range, or when the driver refuses the module. The driver does not validate SPIR-V: validate
   * shaders at build time (glslc does; spirv-val for hand-made ones). *out is owned by the Vulkan
   * plugin. */
  weft_status_t *(*pipeline)(const struct weft_vulkan_services *vk, const char *name,
                             const uint32_t *spirv, size_t spirv_bytes,
                             uint32_t push_constant_bytes, uint32_t n_buffers,
                             weft_vulkan_pipeline_t **out);
  /* Records one dispatch of `pipeline` with (groups_x, groups_y, groups_z) workgroups: buffers[i]
   * (device pointers of this device, as buffer() takes them) bound at binding i over its whole
   * range, push_bytes of push constants (at most the pipeline's push_constant_bytes). n_buffers
   * must equal the pipeline's. It goes into the backend's own command stream under the device's
   * lock, behind a full compute/transfer barrier, like the backend's own kernels: it runs after
   * the work recorded before it (the kernel's inputs are ready) and before the work recorded after
   * (the kernel's consumers see its output). It returns once recorded; nothing waits. Zero groups
   * record nothing. INVALID_ARGUMENT naming the buffer or size at fault, UNAVAILABLE when the
   * device failed earlier, FAILED_PRECONDITION when it is closed. */
  weft_status_t *(*dispatch)(const struct weft_vulkan_services *vk,
                             weft_vulkan_pipeline_t *pipeline, const void *push,
                             uint32_t push_bytes, void *const *buffers, uint32_t n_buffers,
                             uint32_t groups_x, uint32_t groups_y, uint32_t groups_z);
  /* Dispatches recorded through dispatch() on this device so far (by every kernel set). */
  uint64_t (*dispatch_count)(const struct weft_vulkan_services *vk);
} weft_vulkan_services_t;

#ifdef __cplusplus
}
#endif

#endif /* WEFT_VULKAN_H */
