/* vk_device.c: opening and closing one Vulkan device: the logical device, its compute queue and
 * command pool, the descriptor and pipeline layouts every shader shares, the registry of open
 * devices the exit handler closes, and the errors that name the device (a failed submission or
 * wait marks it lost; every later call reports that first failure).
 *
 * The rest of a device is one file per concern, over the record in vk_device.h (which also holds
 * the locking rules): vk_alloc.c (memory), vk_staging.c (command batches, staging, copies),
 * vk_pipeline.c (pipelines and dispatch), vk_services.c (what other plugins' kernels may use). */
#include "vk_device.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H weft__vk_host

/* ---------------------------------------------------------------------------------------------
 * Errors */

weft_status_t *weft__vk_dev_status(weft_vk_device_t *dev, weft_code_t code, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return H->status_new(code, "%s: %s", dev->name, msg);
}

/* Marks the device unusable after a failure that leaves the queue in an unknown state. */
weft_status_t *weft__vk_lose(weft_vk_device_t *dev, const char *what, VkResult r) {
  if (dev->lost[0] == '\0')
    snprintf(dev->lost, sizeof dev->lost, "%s failed: %s (%d)", what, weft__vk_result_name(r),
             (int)r);
  return weft__vk_dev_status(dev, WEFT_UNAVAILABLE, "%s", dev->lost);
}

weft_status_t *weft__vk_lost_status(weft_vk_device_t *dev) {
  if (dev->closed)
    return weft__vk_dev_status(dev, WEFT_FAILED_PRECONDITION, "the device is closed");
  return weft__vk_dev_status(dev, WEFT_UNAVAILABLE, "device unusable after an earlier failure: %s",
                             dev->lost);
}

/* ---------------------------------------------------------------------------------------------
 * Open and close */

/* Every device opened, for the exit handler. */
#define MAX_OPEN_DEVICES 64
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_vk_device_t *open_devices[MAX_OPEN_DEVICES];
static int n_open_devices;

const char *weft__vk_device_name(const weft_vk_device_t *dev) { return dev->name; }

uint32_t weft__vk_max_groups(const weft_vk_device_t *dev) {
  uint32_t m = dev->phys->props.limits.maxComputeWorkGroupCount[0];
  uint32_t y = dev->phys->props.limits.maxComputeWorkGroupCount[1];
  if (y < m) m = y;
  return m > 65535u ? 65535u : m;
}

uint64_t weft__vk_max_binding(const weft_vk_device_t *dev) {
  return dev->phys->props.limits.maxStorageBufferRange;
}

static void destroy_objects(weft_vk_device_t *dev) {
  if (dev->device == VK_NULL_HANDLE) return;
  for (int i = 0; i < VK_SH_COUNT; i++)
    if (dev->pipelines[i] != VK_NULL_HANDLE)
      weft__vkf.DestroyPipeline(dev->device, dev->pipelines[i], NULL);
  for (size_t i = 0; i < dev->n_spec_pipes; i++)
    weft__vkf.DestroyPipeline(dev->device, dev->spec_pipes[i].pipe, NULL);
  free(dev->spec_pipes);
  dev->spec_pipes = NULL;
  dev->n_spec_pipes = 0;
  for (weft_vulkan_pipeline_t *f = dev->foreign; f != NULL; f = f->next) {
    if (f->pipe != VK_NULL_HANDLE) weft__vkf.DestroyPipeline(dev->device, f->pipe, NULL);
    f->pipe = VK_NULL_HANDLE;
  }
  for (int i = 0; i < VK_N_SLOTS; i++) {
    weft_vk_slot_t *s = &dev->slots[i];
    for (uint32_t k = 0; k < s->n_pools; k++)
      weft__vkf.DestroyDescriptorPool(dev->device, s->pools[k], NULL);
    free(s->pools);
    s->pools = NULL;
    s->n_pools = 0;
    for (uint32_t k = 0; k < s->n_stage; k++) weft__vk_stage_destroy(dev, &s->stage[k]);
    free(s->stage);
    s->stage = NULL;
    s->n_stage = s->cap_stage = 0;
    if (s->fence != VK_NULL_HANDLE) weft__vkf.DestroyFence(dev->device, s->fence, NULL);
  }
  if (dev->pipe_cache != VK_NULL_HANDLE)
    weft__vkf.DestroyPipelineCache(dev->device, dev->pipe_cache, NULL);
  if (dev->pipe_layout != VK_NULL_HANDLE)
    weft__vkf.DestroyPipelineLayout(dev->device, dev->pipe_layout, NULL);
  if (dev->set_layout != VK_NULL_HANDLE)
    weft__vkf.DestroyDescriptorSetLayout(dev->device, dev->set_layout, NULL);
  if (dev->cmd_pool != VK_NULL_HANDLE)
    weft__vkf.DestroyCommandPool(dev->device, dev->cmd_pool, NULL);
  weft__vk_release_blocks(dev, false);
  for (weft_vk_block_t *b = dev->blocks; b != NULL; b = b->next) {
    weft__vkf.DestroyBuffer(dev->device, b->buffer, NULL);
    weft__vkf.FreeMemory(dev->device, b->memory, NULL);
  }
  weft__vkf.DestroyDevice(dev->device, NULL);
  dev->device = VK_NULL_HANDLE;
}

static weft_status_t *open_objects(weft_vk_device_t *dev, const weft_device_options_t *opts) {
  const weft_vk_physical_t *p = dev->phys;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi;
  memset(&qi, 0, sizeof qi);
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = p->queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di;
  memset(&di, 0, sizeof di);
  di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  VkResult r = weft__vkf.CreateDevice(p->handle, &di, NULL, &dev->device);
  if (r != VK_SUCCESS) {
    dev->device = VK_NULL_HANDLE;
    return weft__vk_dev_status(dev, WEFT_UNAVAILABLE, "vkCreateDevice failed: %s",
                               weft__vk_result_name(r));
  }
  weft__vkf.GetDeviceQueue(dev->device, p->queue_family, 0, &dev->queue);

  VkCommandPoolCreateInfo pi;
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = p->queue_family;
  r = weft__vkf.CreateCommandPool(dev->device, &pi, NULL, &dev->cmd_pool);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkCreateCommandPool: %s",
                               weft__vk_result_name(r));
  VkCommandBuffer cmds[VK_N_SLOTS];
  VkCommandBufferAllocateInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ci.commandPool = dev->cmd_pool;
  ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ci.commandBufferCount = VK_N_SLOTS;
  r = weft__vkf.AllocateCommandBuffers(dev->device, &ci, cmds);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkAllocateCommandBuffers: %s",
                               weft__vk_result_name(r));
  for (int i = 0; i < VK_N_SLOTS; i++) {
    dev->slots[i].cmd = cmds[i];
    VkFenceCreateInfo fi;
    memset(&fi, 0, sizeof fi);
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    r = weft__vkf.CreateFence(dev->device, &fi, NULL, &dev->slots[i].fence);
    if (r != VK_SUCCESS)
      return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkCreateFence: %s", weft__vk_result_name(r));
  }

  VkDescriptorSetLayoutBinding bindings[VK_MAX_BINDINGS];
  memset(bindings, 0, sizeof bindings);
  for (uint32_t i = 0; i < VK_MAX_BINDINGS; i++) {
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo li;
  memset(&li, 0, sizeof li);
  li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  li.bindingCount = VK_MAX_BINDINGS;
  li.pBindings = bindings;
  r = weft__vkf.CreateDescriptorSetLayout(dev->device, &li, NULL, &dev->set_layout);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkCreateDescriptorSetLayout: %s",
                               weft__vk_result_name(r));
  VkPushConstantRange pr;
  pr.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  pr.offset = 0;
  pr.size = VK_MAX_PUSH;
  if (p->props.limits.maxPushConstantsSize < VK_MAX_PUSH)
    return weft__vk_dev_status(dev, WEFT_UNIMPLEMENTED,
                               "needs %u bytes of push constants, the device has %u", VK_MAX_PUSH,
                               p->props.limits.maxPushConstantsSize);
  VkPipelineLayoutCreateInfo pli;
  memset(&pli, 0, sizeof pli);
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &dev->set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pr;
  r = weft__vkf.CreatePipelineLayout(dev->device, &pli, NULL, &dev->pipe_layout);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkCreatePipelineLayout: %s",
                               weft__vk_result_name(r));
  VkPipelineCacheCreateInfo pci;
  memset(&pci, 0, sizeof pci);
  pci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  r = weft__vkf.CreatePipelineCache(dev->device, &pci, NULL, &dev->pipe_cache);
  if (r != VK_SUCCESS) dev->pipe_cache = VK_NULL_HANDLE; /* only a speed-up */

  WEFT_RETURN_IF_ERROR(weft__vk_choose_memory_types(dev));
  VkDeviceSize align = p->props.limits.minStorageBufferOffsetAlignment;
  dev->align = align > 256 ? align : 256;
  if (opts != NULL && opts->memory_fraction > 0.0 && p->weft_props.memory_bytes > 0) {
    double cap = opts->memory_fraction * (double)p->weft_props.memory_bytes;
    dev->limit = cap < (double)dev->align ? dev->align : (VkDeviceSize)cap;
  }
  return NULL;
}

weft_status_t *weft__vk_device_open(int ordinal, const weft_device_options_t *opts,
                                    weft_vk_device_t **out) {
  const weft_vk_physical_t *p = weft__vk_physical(ordinal);
  if (p == NULL)
    return H->status_new(WEFT_INVALID_ARGUMENT, "VULKAN: no device with ordinal %d", ordinal);
  weft_vk_device_t *dev = calloc(1, sizeof *dev);
  if (dev == NULL) return H->status_new(WEFT_RESOURCE_EXHAUSTED, "out of host memory");
  pthread_mutex_init(&dev->lock, NULL);
  dev->ordinal = ordinal;
  dev->phys = p;
  snprintf(dev->name, sizeof dev->name, "VULKAN:%d", ordinal);
  weft_status_t *st = open_objects(dev, opts);
  if (st == NULL) {
    dev->live = calloc(VK_LIVE_MIN_BUCKETS, sizeof *dev->live);
    dev->n_live_buckets = VK_LIVE_MIN_BUCKETS;
    if (dev->live == NULL)
      st = weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
  }
  if (st == NULL) st = weft__vk_alloc(dev, 256, &dev->dummy);
  if (st != NULL) {
    destroy_objects(dev);
    free(dev->live);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
    return st;
  }
  H->log(WEFT_LOG_INFO, WEFT_VK_PLUGIN_NAME, "opened %s: %s%s", dev->name,
         p->weft_props.description, dev->limit ? " (memory capped by memory_fraction)" : "");
  pthread_mutex_lock(&open_lock);
  if (n_open_devices < MAX_OPEN_DEVICES) open_devices[n_open_devices++] = dev;
  pthread_mutex_unlock(&open_lock);
  weft__vk_arm_exit_handler();
  *out = dev;
  return NULL;
}

static void close_locked(weft_vk_device_t *dev) {
  if (!dev->closed) {
    if (dev->lost[0] == '\0') {
      weft_status_t *st = weft__vk_sync_all(dev);
      if (st != NULL) H->status_free(st);
    }
    if (dev->device != VK_NULL_HANDLE) weft__vkf.DeviceWaitIdle(dev->device);
    destroy_objects(dev);
    dev->closed = true;
  }
}

void weft__vk_device_close(void *device) {
  weft_vk_device_t *dev = device;
  if (dev == NULL) return;
  pthread_mutex_lock(&dev->lock);
  close_locked(dev);
  /* Tensors may still hold allocations; their frees only release the bookkeeping, so the
   * device record stays (a few hundred bytes) until the process ends. */
  pthread_mutex_unlock(&dev->lock);
}

bool weft__vk_close_all_devices(void) {
  bool all = true;
  pthread_mutex_lock(&open_lock);
  for (int i = 0; i < n_open_devices; i++) {
    weft_vk_device_t *dev = open_devices[i];
    if (pthread_mutex_trylock(&dev->lock) != 0) {
      all = false; /* a kernel is recording on it right now: leave it be */
      continue;
    }
    close_locked(dev);
    pthread_mutex_unlock(&dev->lock);
  }
  pthread_mutex_unlock(&open_lock);
  return all;
}
