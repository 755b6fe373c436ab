/* The VULKAN kernel of FusedSwish: a compute shader (swish.comp, compiled by glslc at build time)
 * run on the Vulkan backend's own device, queue and buffers.
 *
 * A tensor on a Vulkan device is the Vulkan plugin's allocation; the plugin lends it to other
 * plugins' kernels through its device services (weft/vulkan.h, "weft.vulkan.2"):
 *   - pipeline() turns the shader's SPIR-V words into a compute pipeline on the backend's
 *     VkDevice, created once per device and cached there, so the kernel asks on every run;
 *   - dispatch() records the shader over the input's and the output's buffers into the backend's
 *     own command stream, in order with the backend's kernels: no copies, no waiting, no VkDevice
 *     or lock of our own.
 * The plugin needs neither libvulkan nor the Vulkan headers: weft/vulkan.h is self-contained. */
#include <stdint.h>

#include "swish.h"
#include "weft/vulkan.h"

static const uint32_t swish_spirv[] =
#include "swish.spv.h"
    ;

#define LOCAL_SIZE 64 /* swish.comp's local_size_x */

/* swish.comp's push constants. */
typedef struct swish_push {
  uint32_t n;
  float beta;
} swish_push_t;

static weft_status_t *swish_vulkan(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  const weft_host_t *h = swish_host;
  const char *node = h->kernel_node_name(ctx);
  float beta = 1.0f;
  weft_status_t *st = h->attr_float(h->kernel_attrs(ctx), "beta", &beta);
  if (st) return st;
  weft_tensor_view_t x = {.struct_size = sizeof x}, y = {.struct_size = sizeof y};
  if ((st = h->kernel_input(ctx, 0, &x))) return st;
  if ((st = h->kernel_allocate_output(ctx, 0, x.dtype, x.rank, x.dims, &y))) return st;
  if (x.num_elements == 0) return NULL;
  if (x.num_elements > (int64_t)UINT32_MAX)
    return h->status_new(WEFT_INVALID_ARGUMENT,
                         "FusedSwish '%s': %lld elements are more than the shader indexes", node,
                         (long long)x.num_elements);

  /* Version 2 of the services shares the backend's device; an older Vulkan plugin has only 1. */
  const weft_vulkan_services_t *vk = h->kernel_device_services(ctx, WEFT_VULKAN_SERVICES_2);
  if (!vk || vk->struct_size < sizeof(weft_vulkan_services_t))
    return h->status_new(WEFT_UNIMPLEMENTED,
                         "FusedSwish '%s': the %s backend offers no '%s' device services", node,
                         h->kernel_device_type(ctx), WEFT_VULKAN_SERVICES_2);
  weft_vulkan_pipeline_t *pipeline = NULL;
  st = vk->pipeline(vk, "FusedSwish", swish_spirv, sizeof swish_spirv, sizeof(swish_push_t), 2,
                    &pipeline);
  if (st) return st;
  swish_push_t push = {(uint32_t)x.num_elements, beta};
  void *buffers[2] = {x.data, y.data};
  /* The shader is grid-stride: fewer workgroups than elements is fine. */
  uint64_t groups = ((uint64_t)x.num_elements + LOCAL_SIZE - 1) / LOCAL_SIZE;
  if (groups > vk->max_group_count[0]) groups = vk->max_group_count[0];
  return vk->dispatch(vk, pipeline, &push, sizeof push, buffers, 2, (uint32_t)groups, 1, 1);
}

static const weft_dtype_t vk_types[] = {WEFT_DT_FLOAT};
static const weft_type_constraint_t vk_constraint = {"T", vk_types, 1};

static const weft_kernel_def_t swish_vk_kernel = {
    .struct_size = sizeof(weft_kernel_def_t),
    .op = "FusedSwish",
    .device_type = "VULKAN",
    .constraints = &vk_constraint,
    .n_constraints = 1,
    .priority = 0,
    .compute = swish_vulkan,
};

weft_status_t *swish_register_vulkan(const weft_registrar_t *reg) {
  return reg->register_kernel(reg->ctx, &swish_vk_kernel);
}
