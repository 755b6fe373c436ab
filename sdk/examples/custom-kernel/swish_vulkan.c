/* The VULKAN kernel of FusedSwish: a compute shader (swish.comp, compiled by glslc at build time)
 * run on the GPU behind the kernel's "VULKAN:N" device.
 *
 * Weft's Vulkan plugin keeps its VkDevice and its buffers to itself: a tensor on a Vulkan device
 * is an opaque handle to another plugin. What the SDK gives a kernel set is
 *   - host->kernel_copy_to_host / kernel_copy_from_host, to move a tensor's bytes, and
 *   - host->kernel_device_services(ctx, WEFT_VULKAN_SERVICES), which names the physical device
 *     and hands out the Vulkan loader's vkGetInstanceProcAddr (no need to link libvulkan).
 * So this kernel keeps its own VkInstance and VkDevice on that same GPU (created on first use,
 * one per device ordinal), copies x into a host-visible storage buffer of its own, dispatches the
 * shader, and copies y back into the output Weft allocated. The two copies are the price of
 * not sharing the Vulkan plugin's device; docs/sdk.md says more.
 *
 * Its VkInstance and VkDevice live until the process ends (plugins are never unloaded); an exit
 * handler destroys them then, before the driver's own exit handlers run, so that drivers shut
 * down cleanly and leak checkers stay quiet. */
#include <stdlib.h>
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "swish.h"
#include "weft/vulkan.h"

static const uint32_t swish_spirv[] =
#include "swish.spv.h"
    ;

#define LOCAL_SIZE 64     /* swish.comp's local_size_x */
#define MAX_GROUPS 65535u /* every device supports this many workgroups along x */
#define MAX_ORDINALS 16

/* The entry points this file uses, loaded through the services' vkGetInstanceProcAddr. */
#define SWISH_VK_FNS(X)                     \
  X(EnumeratePhysicalDevices)               \
  X(GetPhysicalDeviceProperties)            \
  X(GetPhysicalDeviceQueueFamilyProperties) \
  X(GetPhysicalDeviceMemoryProperties)      \
  X(CreateDevice)                           \
  X(GetDeviceProcAddr)                      \
  X(GetDeviceQueue)                         \
  X(CreateShaderModule)                     \
  X(DestroyShaderModule)                    \
  X(CreateDescriptorSetLayout)              \
  X(CreatePipelineLayout)                   \
  X(CreateComputePipelines)                 \
  X(CreateDescriptorPool)                   \
  X(AllocateDescriptorSets)                 \
  X(UpdateDescriptorSets)                   \
  X(CreateCommandPool)                      \
  X(AllocateCommandBuffers)                 \
  X(BeginCommandBuffer)                     \
  X(EndCommandBuffer)                       \
  X(ResetCommandBuffer)                     \
  X(CmdBindPipeline)                        \
  X(CmdBindDescriptorSets)                  \
  X(CmdPushConstants)                       \
  X(CmdDispatch)                            \
  X(CmdPipelineBarrier)                     \
  X(CreateFence)                            \
  X(WaitForFences)                          \
  X(ResetFences)                            \
  X(QueueSubmit)                            \
  X(CreateBuffer)                           \
  X(DestroyBuffer)                          \
  X(GetBufferMemoryRequirements)            \
  X(AllocateMemory)                         \
  X(FreeMemory)                             \
  X(BindBufferMemory)                       \
  X(MapMemory)                              \
  X(DestroyFence)                           \
  X(DestroyCommandPool)                     \
  X(DestroyDescriptorPool)                  \
  X(DestroyPipeline)                        \
  X(DestroyPipelineLayout)                  \
  X(DestroyDescriptorSetLayout)             \
  X(DeviceWaitIdle)                         \
  X(DestroyDevice)                          \
  X(DestroyInstance)

typedef struct swish_vk {
  bool tried;
  char error[512]; /* why this device cannot run the kernel, once initialisation failed */
#define SWISH_FN_FIELD(name) PFN_vk##name name;
  SWISH_VK_FNS(SWISH_FN_FIELD)
#undef SWISH_FN_FIELD
  VkInstance instance;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t family;      /* the queue's family */
  uint32_t memory_type; /* host-visible, host-coherent */
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout pipeline_layout;
  VkPipeline pipeline;
  VkDescriptorPool pool;
  VkDescriptorSet set;
  VkCommandPool cmd_pool;
  VkCommandBuffer cmd;
  VkFence fence;
  VkBuffer buffers[2]; /* x, y */
  VkDeviceMemory memory[2];
  void *mapped[2];
  VkDeviceSize capacity;
} swish_vk_t;

/* Kernels run concurrently on the inter-op pool; one lock keeps each device's buffers to one. */
static pthread_mutex_t swish_vk_lock = PTHREAD_MUTEX_INITIALIZER;
static swish_vk_t swish_vk[MAX_ORDINALS];

static bool failed(swish_vk_t *d, const char *what, VkResult r) {
  snprintf(d->error, sizeof d->error, "%s failed (VkResult %d)", what, (int)r);
  return false;
}

/* The device of ours that matches the services' physical device. */
static bool pick_physical(swish_vk_t *d, const weft_vulkan_services_t *vk) {
  uint32_t n = 0;
  VkResult r = d->EnumeratePhysicalDevices(d->instance, &n, NULL);
  if (r != VK_SUCCESS || n == 0) return failed(d, "vkEnumeratePhysicalDevices", r);
  VkPhysicalDevice list[16];
  if (n > 16) n = 16;
  r = d->EnumeratePhysicalDevices(d->instance, &n, list);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return failed(d, "vkEnumeratePhysicalDevices", r);
  for (uint32_t i = 0; i < n; i++) {
    VkPhysicalDeviceProperties p;
    d->GetPhysicalDeviceProperties(list[i], &p);
    /* Identical GPUs are told apart by nothing here; the first one of a kind is taken. */
    if (p.vendorID == vk->vendor_id && p.deviceID == vk->device_id &&
        memcmp(p.pipelineCacheUUID, vk->pipeline_cache_uuid, VK_UUID_SIZE) == 0 &&
        strcmp(p.deviceName, vk->device_name) == 0) {
      d->physical = list[i];
      return true;
    }
  }
  snprintf(d->error, sizeof d->error, "no physical device matches '%s'", vk->device_name);
  return false;
}

static bool create_device(swish_vk_t *d) {
  uint32_t n_families = 0;
  d->GetPhysicalDeviceQueueFamilyProperties(d->physical, &n_families, NULL);
  VkQueueFamilyProperties families[32];
  if (n_families > 32) n_families = 32;
  d->GetPhysicalDeviceQueueFamilyProperties(d->physical, &n_families, families);
  uint32_t family = UINT32_MAX;
  for (uint32_t i = 0; i < n_families && family == UINT32_MAX; i++)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
  if (family == UINT32_MAX) {
    snprintf(d->error, sizeof d->error, "the device has no compute queue");
    return false;
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkResult r = d->CreateDevice(d->physical, &di, NULL, &d->device);
  if (r != VK_SUCCESS) return failed(d, "vkCreateDevice", r);
#define SWISH_LOAD_DEVICE_FN(name)                                              \
  {                                                                             \
    PFN_vk##name f = (PFN_vk##name)d->GetDeviceProcAddr(d->device, "vk" #name); \
    if (f) d->name = f;                                                         \
  }
  /* Device-level entry points straight from the driver (no loader trampoline). */
  SWISH_VK_FNS(SWISH_LOAD_DEVICE_FN)
#undef SWISH_LOAD_DEVICE_FN
  d->family = family;
  d->GetDeviceQueue(d->device, family, 0, &d->queue);

  VkPhysicalDeviceMemoryProperties mp;
  d->GetPhysicalDeviceMemoryProperties(d->physical, &mp);
  const VkMemoryPropertyFlags want =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  d->memory_type = UINT32_MAX;
  for (uint32_t i = 0; i < mp.memoryTypeCount && d->memory_type == UINT32_MAX; i++)
    if ((mp.memoryTypes[i].propertyFlags & want) == want) d->memory_type = i;
  if (d->memory_type == UINT32_MAX) {
    snprintf(d->error, sizeof d->error, "the device has no host-visible coherent memory");
    return false;
  }
  return true;
}

static bool create_pipeline(swish_vk_t *d) {
  VkDescriptorSetLayoutBinding bindings[2];
  memset(bindings, 0, sizeof bindings);
  for (int i = 0; i < 2; i++) {
    bindings[i].binding = (uint32_t)i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li = {.sType =
                                            VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = 2;
  li.pBindings = bindings;
  VkResult r = d->CreateDescriptorSetLayout(d->device, &li, NULL, &d->set_layout);
  if (r != VK_SUCCESS) return failed(d, "vkCreateDescriptorSetLayout", r);
  VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pi.setLayoutCount = 1;
  pi.pSetLayouts = &d->set_layout;
  pi.pushConstantRangeCount = 1;
  pi.pPushConstantRanges = &push;
  r = d->CreatePipelineLayout(d->device, &pi, NULL, &d->pipeline_layout);
  if (r != VK_SUCCESS) return failed(d, "vkCreatePipelineLayout", r);

  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = sizeof swish_spirv;
  mi.pCode = swish_spirv;
  VkShaderModule module;
  r = d->CreateShaderModule(d->device, &mi, NULL, &module);
  if (r != VK_SUCCESS) return failed(d, "vkCreateShaderModule", r);
  VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = d->pipeline_layout;
  r = d->CreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &ci, NULL, &d->pipeline);
  d->DestroyShaderModule(d->device, module, NULL);
  if (r != VK_SUCCESS) return failed(d, "vkCreateComputePipelines", r);

  VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
  VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &size;
  r = d->CreateDescriptorPool(d->device, &dpi, NULL, &d->pool);
  if (r != VK_SUCCESS) return failed(d, "vkCreateDescriptorPool", r);
  VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorPool = d->pool;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &d->set_layout;
  r = d->AllocateDescriptorSets(d->device, &ai, &d->set);
  if (r != VK_SUCCESS) return failed(d, "vkAllocateDescriptorSets", r);

  VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = d->family;
  r = d->CreateCommandPool(d->device, &cpi, NULL, &d->cmd_pool);
  if (r != VK_SUCCESS) return failed(d, "vkCreateCommandPool", r);
  VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cai.commandPool = d->cmd_pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  r = d->AllocateCommandBuffers(d->device, &cai, &d->cmd);
  if (r != VK_SUCCESS) return failed(d, "vkAllocateCommandBuffers", r);
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  r = d->CreateFence(d->device, &fi, NULL, &d->fence);
  if (r != VK_SUCCESS) return failed(d, "vkCreateFence", r);
  return true;
}

/* Destroys what one device's initialisation created, in reverse order (NULL handles are
 * allowed by every vkDestroy*). */
static void destroy_device(swish_vk_t *d) {
  if (d->device) {
    d->DeviceWaitIdle(d->device);
    for (int i = 0; i < 2; i++) {
      if (d->buffers[i]) d->DestroyBuffer(d->device, d->buffers[i], NULL);
      if (d->memory[i]) d->FreeMemory(d->device, d->memory[i], NULL);
    }
    d->DestroyFence(d->device, d->fence, NULL);
    d->DestroyCommandPool(d->device, d->cmd_pool, NULL);
    d->DestroyDescriptorPool(d->device, d->pool, NULL);
    d->DestroyPipeline(d->device, d->pipeline, NULL);
    d->DestroyPipelineLayout(d->device, d->pipeline_layout, NULL);
    d->DestroyDescriptorSetLayout(d->device, d->set_layout, NULL);
    d->DestroyDevice(d->device, NULL);
  }
  if (d->instance && d->DestroyInstance) d->DestroyInstance(d->instance, NULL);
  memset(d, 0, sizeof *d);
  d->tried = true;
  snprintf(d->error, sizeof d->error, "the process is exiting");
}

/* At exit: every device this plugin created, unless a kernel is still running on one. */
static void destroy_all(void) {
  if (pthread_mutex_trylock(&swish_vk_lock) != 0) return;
  for (int i = 0; i < MAX_ORDINALS; i++)
    if (swish_vk[i].instance) destroy_device(&swish_vk[i]);
  pthread_mutex_unlock(&swish_vk_lock);
}

/* Creates our instance and device on the GPU the services name; false with d->error set. */
static bool init_device(swish_vk_t *d, const weft_vulkan_services_t *vk) {
  PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)vk->get_instance_proc_addr;
  PFN_vkCreateInstance create_instance =
      (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
  if (!create_instance) {
    snprintf(d->error, sizeof d->error, "the Vulkan loader has no vkCreateInstance");
    return false;
  }
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "weft-swish";
  app.apiVersion = VK_API_VERSION_1_0;
  VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ii.pApplicationInfo = &app;
  VkResult r = create_instance(&ii, NULL, &d->instance);
  if (r != VK_SUCCESS) return failed(d, "vkCreateInstance", r);
#define SWISH_LOAD_FN(name)                                                   \
  d->name = (PFN_vk##name)gipa(d->instance, "vk" #name);                      \
  if (!d->name) {                                                             \
    snprintf(d->error, sizeof d->error, "the Vulkan loader has no vk" #name); \
    return false;                                                             \
  }
  SWISH_VK_FNS(SWISH_LOAD_FN)
#undef SWISH_LOAD_FN
  return pick_physical(d, vk) && create_device(d) && create_pipeline(d);
}

/* Makes both buffers hold at least nbytes (they only grow). */
static bool ensure_capacity(swish_vk_t *d, VkDeviceSize nbytes) {
  if (nbytes <= d->capacity) return true;
  VkDeviceSize want = d->capacity ? d->capacity : 4096;
  while (want < nbytes) want *= 2;
  for (int i = 0; i < 2; i++) {
    if (d->buffers[i]) {
      d->DestroyBuffer(d->device, d->buffers[i], NULL);
      d->FreeMemory(d->device, d->memory[i], NULL); /* unmaps too */
      d->buffers[i] = VK_NULL_HANDLE;
    }
  }
  d->capacity = 0;
  for (int i = 0; i < 2; i++) {
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = want;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult r = d->CreateBuffer(d->device, &bi, NULL, &d->buffers[i]);
    if (r != VK_SUCCESS) return failed(d, "vkCreateBuffer", r);
    VkMemoryRequirements req;
    d->GetBufferMemoryRequirements(d->device, d->buffers[i], &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = d->memory_type;
    r = d->AllocateMemory(d->device, &ai, NULL, &d->memory[i]);
    if (r != VK_SUCCESS) return failed(d, "vkAllocateMemory", r);
    r = d->BindBufferMemory(d->device, d->buffers[i], d->memory[i], 0);
    if (r != VK_SUCCESS) return failed(d, "vkBindBufferMemory", r);
    r = d->MapMemory(d->device, d->memory[i], 0, VK_WHOLE_SIZE, 0, &d->mapped[i]);
    if (r != VK_SUCCESS) return failed(d, "vkMapMemory", r);
  }
  VkDescriptorBufferInfo infos[2] = {{d->buffers[0], 0, VK_WHOLE_SIZE},
                                     {d->buffers[1], 0, VK_WHOLE_SIZE}};
  VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstSet = d->set;
  w.descriptorCount = 2;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = infos;
  d->UpdateDescriptorSets(d->device, 1, &w, 0, NULL);
  d->capacity = want;
  return true;
}

/* Runs the shader over n elements of buffers[0] into buffers[1] and waits for it. */
static bool dispatch(swish_vk_t *d, uint32_t n, float beta) {
  VkResult r = d->ResetCommandBuffer(d->cmd, 0);
  if (r != VK_SUCCESS) return failed(d, "vkResetCommandBuffer", r);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  r = d->BeginCommandBuffer(d->cmd, &bi);
  if (r != VK_SUCCESS) return failed(d, "vkBeginCommandBuffer", r);
  struct {
    uint32_t n;
    float beta;
  } push = {n, beta};
  d->CmdBindPipeline(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline);
  d->CmdBindDescriptorSets(d->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1,
                           &d->set, 0, NULL);
  d->CmdPushConstants(d->cmd, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push,
                      &push);
  uint32_t groups = (n + LOCAL_SIZE - 1) / LOCAL_SIZE;
  d->CmdDispatch(d->cmd, groups < MAX_GROUPS ? groups : MAX_GROUPS, 1, 1);
  /* The shader's writes must be made visible to the host that reads the mapped memory. */
  VkMemoryBarrier barrier = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  d->CmdPipelineBarrier(d->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                        1, &barrier, 0, NULL, 0, NULL);
  r = d->EndCommandBuffer(d->cmd);
  if (r != VK_SUCCESS) return failed(d, "vkEndCommandBuffer", r);
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &d->cmd;
  r = d->QueueSubmit(d->queue, 1, &si, d->fence);
  if (r != VK_SUCCESS) return failed(d, "vkQueueSubmit", r);
  r = d->WaitForFences(d->device, 1, &d->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) return failed(d, "vkWaitForFences", r);
  r = d->ResetFences(d->device, 1, &d->fence);
  if (r != VK_SUCCESS) return failed(d, "vkResetFences", r);
  return true;
}

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

  const weft_vulkan_services_t *vk = h->kernel_device_services(ctx, WEFT_VULKAN_SERVICES);
  if (!vk || vk->struct_size < sizeof(weft_vulkan_services_t))
    return h->status_new(WEFT_UNIMPLEMENTED,
                         "FusedSwish '%s': the %s backend offers no '%s' device services", node,
                         h->kernel_device_type(ctx), WEFT_VULKAN_SERVICES);
  if (vk->ordinal < 0 || vk->ordinal >= MAX_ORDINALS)
    return h->status_new(WEFT_UNIMPLEMENTED,
                         "FusedSwish '%s': VULKAN:%d is beyond the %d devices this kernel handles",
                         node, vk->ordinal, MAX_ORDINALS);

  size_t nbytes = (size_t)x.num_elements * sizeof(float);
  pthread_mutex_lock(&swish_vk_lock);
  swish_vk_t *d = &swish_vk[vk->ordinal];
  if (!d->tried) {
    d->tried = true;
    init_device(d, vk);
    /* Registered after the driver started (and registered its own handlers): runs before them. */
    static bool exit_handler;
    if (!exit_handler) exit_handler = atexit(destroy_all) == 0;
  }
  bool ok = d->error[0] == '\0' && ensure_capacity(d, nbytes);
  if (ok) st = h->kernel_copy_to_host(ctx, d->mapped[0], x.data, nbytes);
  if (ok && !st) ok = dispatch(d, (uint32_t)x.num_elements, beta);
  if (ok && !st) st = h->kernel_copy_from_host(ctx, y.data, d->mapped[1], nbytes);
  if (!ok && !st)
    st = h->status_new(WEFT_INTERNAL, "FusedSwish '%s' on VULKAN:%d (%s): %s", node, vk->ordinal,
                       vk->device_name, d->error);
  pthread_mutex_unlock(&swish_vk_lock);
  return st;
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
