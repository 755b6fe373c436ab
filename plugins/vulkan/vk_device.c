/* vk_device.c: one open Vulkan device: the logical device and its compute queue, device memory
 * sub-allocated from large blocks, host-visible staging for copies, command batches, and the
 * compute pipelines of the embedded shaders (created on first use, then cached).
 *
 * Memory. Allocations are carved from 64 MiB VkBuffers (first fit over a sorted free list per
 * block, neighbours merged on free); 16 MiB and larger get a block of their own. A device pointer
 * is a weft_vk_mem_t {buffer, offset}. Freed memory may be handed out again at once: the core
 * frees a buffer only after every kernel that used it has recorded its work, and all work runs
 * in recording order, so the next user's commands run after the last user's. Dedicated blocks
 * are destroyed only once the queue is idle, because pending commands may still name them.
 * memory_fraction caps the bytes of device memory the blocks may take (0: no cap).
 *
 * Batches. Commands are recorded into one of three command buffers ("slots"), each preceded by a
 * full compute/transfer barrier. A slot is submitted when it holds 256 commands or 256 MiB of
 * staged uploads, when the host reads device memory, and on synchronize; its descriptor sets and
 * staging buffers are recycled when the slot comes round again and its fence has signalled.
 * Uploads never wait: the bytes are copied into the slot's staging memory at once. Downloads
 * submit and wait for everything recorded so far.
 *
 * Other plugins' kernels (the "weft.vulkan.2" services, vk_services.c) record their own SPIR-V
 * through the same path: their pipelines share the backend's layout (VK_MAX_BINDINGS storage
 * buffers, VK_MAX_PUSH bytes of push constants; a shader may use fewer), are cached per device by
 * content, and their dispatches go into the same slots behind the same barrier. Their device
 * pointers are checked against a set of the live allocations before anything is read from them.
 *
 * Every entry point takes the device lock, so the executor may call from many threads. A failed
 * submission or wait marks the device lost; every later call reports that first failure. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define H weft__vk_host

#define BLOCK_SIZE ((VkDeviceSize)64 << 20)
#define DEDICATED_MIN ((VkDeviceSize)16 << 20)
#define N_SLOTS 3
#define SLOT_MAX_COMMANDS 256u
#define SETS_PER_POOL 256u
#define STAGE_MIN ((VkDeviceSize)4 << 20)
#define STAGE_KEEP ((VkDeviceSize)64 << 20)
#define SLOT_MAX_STAGED ((VkDeviceSize)256 << 20)
#define FENCE_TIMEOUT_NS (600ull * 1000000000ull)
#define LIVE_MIN_BUCKETS 256u

typedef struct free_range {
  VkDeviceSize offset, size;
  struct free_range *next;
} free_range_t;

struct weft_vk_block {
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceSize size;
  VkDeviceSize used;
  bool dedicated;
  free_range_t *free; /* sorted by offset, never adjacent */
  weft_vk_block_t *next;
};

typedef struct stage_buf {
  VkBuffer buffer;
  VkDeviceMemory memory;
  uint8_t *map;
  VkDeviceSize size, used;
} stage_buf_t;

typedef struct slot {
  VkCommandBuffer cmd;
  VkFence fence;
  bool open;    /* recording */
  bool pending; /* submitted; the fence has not been waited for */
  uint32_t n_commands;
  VkDescriptorPool *pools;
  uint32_t n_pools, pool_at;
  stage_buf_t *stage;
  uint32_t n_stage, cap_stage;
  VkDeviceSize staged;
} slot_t;

struct weft_vk_device {
  pthread_mutex_t lock;
  int ordinal;
  char name[32];
  const weft_vk_physical_t *phys;
  VkDevice device;
  VkQueue queue;
  VkCommandPool cmd_pool;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout pipe_layout;
  VkPipelineCache pipe_cache;
  VkPipeline pipelines[VK_SH_COUNT];
  /* Pipelines of the specialized shaders, one per (shader, op, dtype) dispatched so far. */
  struct spec_pipe {
    weft_vk_shader_t shader;
    uint32_t op, dtype;
    VkPipeline pipe;
  } *spec_pipes;
  size_t n_spec_pipes;
  slot_t slots[N_SLOTS];
  int cur;
  uint32_t device_type, host_type; /* memory type indices */
  VkDeviceSize align;
  VkDeviceSize limit;    /* cap on reserved bytes, 0 = none */
  VkDeviceSize reserved; /* bytes of VkDeviceMemory held by blocks (doomed ones included) */
  VkDeviceSize in_use;   /* bytes handed out */
  weft_vk_block_t *blocks;
  weft_vk_block_t *doomed; /* freed dedicated blocks waiting for the queue to drain */
  void *dummy;             /* bound where a shader's binding is unused */
  weft_vk_mem_t **live;    /* hash set of the allocations handed out (chained by live_next) */
  size_t n_live_buckets, n_live;
  weft_vulkan_pipeline_t *foreign; /* other plugins' pipelines, newest first */
  bool closed;
  char lost[512]; /* non-empty once the device failed */
};

/* Another plugin's compute pipeline (weft/vulkan.h). Records stay until the process ends (the
 * plugin that asked holds the pointer); the VkPipeline goes with the device. */
struct weft_vulkan_pipeline {
  weft_vk_device_t *dev;
  char name[64];
  uint32_t *code;
  size_t size; /* bytes */
  uint32_t push_size, n_buffers;
  VkPipeline pipe;
  weft_vulkan_pipeline_t *next;
};

/* ---------------------------------------------------------------------------------------------
 * Errors */

static weft_status_t *vk_status(weft_vk_device_t *dev, weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static weft_status_t *vk_status(weft_vk_device_t *dev, weft_code_t code, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return H->status_new(code, "%s: %s", dev->name, msg);
}

/* Marks the device unusable after a failure that leaves the queue in an unknown state. */
static weft_status_t *lose(weft_vk_device_t *dev, const char *what, VkResult r) {
  if (dev->lost[0] == '\0')
    snprintf(dev->lost, sizeof dev->lost, "%s failed: %s (%d)", what, weft__vk_result_name(r),
             (int)r);
  return vk_status(dev, WEFT_UNAVAILABLE, "%s", dev->lost);
}

static weft_status_t *lost_status(weft_vk_device_t *dev) {
  if (dev->closed) return vk_status(dev, WEFT_FAILED_PRECONDITION, "the device is closed");
  return vk_status(dev, WEFT_UNAVAILABLE, "device unusable after an earlier failure: %s",
                   dev->lost);
}

static bool unusable(const weft_vk_device_t *dev) { return dev->closed || dev->lost[0] != '\0'; }

static VkDeviceSize round_up(VkDeviceSize n, VkDeviceSize a) { return (n + a - 1) / a * a; }

/* ---------------------------------------------------------------------------------------------
 * Memory types */

static int64_t find_memory_type(const weft_vk_physical_t *p, uint32_t bits,
                                VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) {
  for (uint32_t i = 0; i < p->memory.memoryTypeCount; i++) {
    VkMemoryPropertyFlags f = p->memory.memoryTypes[i].propertyFlags;
    if ((bits & (1u << i)) && (f & want) == want && (f & avoid) == 0) return i;
  }
  return -1;
}

static VkResult make_buffer(weft_vk_device_t *dev, VkDeviceSize size, VkBufferUsageFlags usage,
                            VkBuffer *out) {
  VkBufferCreateInfo bi;
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = size;
  bi.usage = usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  return weft__vkf.CreateBuffer(dev->device, &bi, NULL, out);
}

#define DEVICE_USAGE \
  (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)
#define STAGE_USAGE (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

/* Picks the memory types for blocks (device-local, preferably not the small host-visible
 * window some GPUs expose) and for staging (host-visible and coherent, cached if possible). */
static weft_status_t *choose_memory_types(weft_vk_device_t *dev) {
  VkBuffer probe;
  VkResult r = make_buffer(dev, 65536, DEVICE_USAGE, &probe);
  if (r != VK_SUCCESS) return vk_status(dev, WEFT_INTERNAL, "vkCreateBuffer: %s", weft__vk_result_name(r));
  VkMemoryRequirements req;
  weft__vkf.GetBufferMemoryRequirements(dev->device, probe, &req);
  weft__vkf.DestroyBuffer(dev->device, probe, NULL);
  const weft_vk_physical_t *p = dev->phys;
  int64_t t = find_memory_type(p, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  if (t < 0) t = find_memory_type(p, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  if (t < 0) t = find_memory_type(p, req.memoryTypeBits, 0, 0);
  if (t < 0) return vk_status(dev, WEFT_INTERNAL, "no memory type for storage buffers");
  dev->device_type = (uint32_t)t;

  r = make_buffer(dev, 65536, STAGE_USAGE, &probe);
  if (r != VK_SUCCESS) return vk_status(dev, WEFT_INTERNAL, "vkCreateBuffer: %s", weft__vk_result_name(r));
  weft__vkf.GetBufferMemoryRequirements(dev->device, probe, &req);
  weft__vkf.DestroyBuffer(dev->device, probe, NULL);
  const VkMemoryPropertyFlags hv =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  t = find_memory_type(p, req.memoryTypeBits, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
  if (t < 0) t = find_memory_type(p, req.memoryTypeBits, hv, 0);
  if (t < 0) return vk_status(dev, WEFT_INTERNAL, "no host-visible coherent memory type for staging");
  dev->host_type = (uint32_t)t;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Blocks */

static VkResult block_new(weft_vk_device_t *dev, VkDeviceSize size, bool dedicated,
                          weft_vk_block_t **out) {
  weft_vk_block_t *b = calloc(1, sizeof *b);
  if (b == NULL) return VK_ERROR_OUT_OF_HOST_MEMORY;
  VkResult r = make_buffer(dev, size, DEVICE_USAGE, &b->buffer);
  if (r != VK_SUCCESS) {
    free(b);
    return r;
  }
  VkMemoryRequirements req;
  weft__vkf.GetBufferMemoryRequirements(dev->device, b->buffer, &req);
  VkMemoryAllocateInfo ai;
  memset(&ai, 0, sizeof ai);
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = dev->device_type;
  r = weft__vkf.AllocateMemory(dev->device, &ai, NULL, &b->memory);
  if (r == VK_SUCCESS) r = weft__vkf.BindBufferMemory(dev->device, b->buffer, b->memory, 0);
  if (r != VK_SUCCESS) {
    if (b->memory != VK_NULL_HANDLE) weft__vkf.FreeMemory(dev->device, b->memory, NULL);
    weft__vkf.DestroyBuffer(dev->device, b->buffer, NULL);
    free(b);
    return r;
  }
  b->size = size;
  b->dedicated = dedicated;
  if (!dedicated) {
    b->free = calloc(1, sizeof *b->free);
    if (b->free == NULL) {
      weft__vkf.DestroyBuffer(dev->device, b->buffer, NULL);
      weft__vkf.FreeMemory(dev->device, b->memory, NULL);
      free(b);
      return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    b->free->offset = 0;
    b->free->size = size;
  }
  dev->reserved += size;
  *out = b;
  return VK_SUCCESS;
}

static void block_destroy(weft_vk_device_t *dev, weft_vk_block_t *b) {
  weft__vkf.DestroyBuffer(dev->device, b->buffer, NULL);
  weft__vkf.FreeMemory(dev->device, b->memory, NULL);
  dev->reserved -= b->size;
  while (b->free != NULL) {
    free_range_t *n = b->free->next;
    free(b->free);
    b->free = n;
  }
  free(b);
}

/* First fit in one block; 0 when nothing fits (offset 0 is never returned as failure because
 * `*offset` carries the result). */
static bool block_take(weft_vk_block_t *b, VkDeviceSize size, VkDeviceSize *offset) {
  free_range_t **link = &b->free;
  for (free_range_t *f = b->free; f != NULL; link = &f->next, f = f->next) {
    if (f->size < size) continue;
    *offset = f->offset;
    f->offset += size;
    f->size -= size;
    if (f->size == 0) {
      *link = f->next;
      free(f);
    }
    b->used += size;
    return true;
  }
  return false;
}

static void block_give(weft_vk_block_t *b, VkDeviceSize offset, VkDeviceSize size) {
  b->used -= size;
  free_range_t *prev = NULL, *next = b->free;
  while (next != NULL && next->offset < offset) {
    prev = next;
    next = next->next;
  }
  bool joins_prev = prev != NULL && prev->offset + prev->size == offset;
  bool joins_next = next != NULL && offset + size == next->offset;
  if (joins_prev && joins_next) {
    prev->size += size + next->size;
    prev->next = next->next;
    free(next);
  } else if (joins_prev) {
    prev->size += size;
  } else if (joins_next) {
    next->offset = offset;
    next->size += size;
  } else {
    free_range_t *f = malloc(sizeof *f);
    if (f == NULL) return; /* the range is lost to this block, not corrupted */
    f->offset = offset;
    f->size = size;
    f->next = next;
    if (prev != NULL) prev->next = f;
    else b->free = f;
  }
}

/* Destroys the doomed dedicated blocks and (when `empty_too`) every empty shared block. Only
 * called with the queue idle. */
static void release_blocks(weft_vk_device_t *dev, bool empty_too) {
  while (dev->doomed != NULL) {
    weft_vk_block_t *n = dev->doomed->next;
    block_destroy(dev, dev->doomed);
    dev->doomed = n;
  }
  if (!empty_too) return;
  weft_vk_block_t **link = &dev->blocks;
  while (*link != NULL) {
    weft_vk_block_t *b = *link;
    if (!b->dedicated && b->used == 0 && !(dev->dummy != NULL &&
                                           ((weft_vk_mem_t *)dev->dummy)->block == b)) {
      *link = b->next;
      block_destroy(dev, b);
    } else {
      link = &b->next;
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Slots */

static weft_status_t *slot_wait(weft_vk_device_t *dev, slot_t *s) {
  if (!s->pending) return NULL;
  VkResult r = weft__vkf.WaitForFences(dev->device, 1, &s->fence, VK_TRUE, FENCE_TIMEOUT_NS);
  if (r != VK_SUCCESS) return lose(dev, "vkWaitForFences", r);
  r = weft__vkf.ResetFences(dev->device, 1, &s->fence);
  if (r != VK_SUCCESS) return lose(dev, "vkResetFences", r);
  s->pending = false;
  return NULL;
}

static void stage_destroy(weft_vk_device_t *dev, stage_buf_t *b) {
  weft__vkf.UnmapMemory(dev->device, b->memory);
  weft__vkf.DestroyBuffer(dev->device, b->buffer, NULL);
  weft__vkf.FreeMemory(dev->device, b->memory, NULL);
}

/* Makes a finished slot's descriptor sets and staging memory reusable; keeps one staging
 * buffer of a reasonable size for the next batch. */
static void slot_recycle(weft_vk_device_t *dev, slot_t *s) {
  for (uint32_t i = 0; i < s->n_pools; i++)
    weft__vkf.ResetDescriptorPool(dev->device, s->pools[i], 0);
  s->pool_at = 0;
  int keep = -1;
  for (uint32_t i = 0; i < s->n_stage; i++)
    if (s->stage[i].size <= STAGE_KEEP && (keep < 0 || s->stage[i].size > s->stage[keep].size))
      keep = (int)i;
  for (uint32_t i = 0; i < s->n_stage; i++)
    if ((int)i != keep) stage_destroy(dev, &s->stage[i]);
  if (keep >= 0) {
    s->stage[0] = s->stage[keep];
    s->stage[0].used = 0;
    s->n_stage = 1;
  } else {
    s->n_stage = 0;
  }
  s->staged = 0;
}

/* The slot being recorded, begun if needed. */
static weft_status_t *slot_open(weft_vk_device_t *dev, slot_t **out) {
  if (unusable(dev)) return lost_status(dev);
  slot_t *s = &dev->slots[dev->cur];
  if (!s->open) {
    WEFT_RETURN_IF_ERROR(slot_wait(dev, s));
    slot_recycle(dev, s);
    VkCommandBufferBeginInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult r = weft__vkf.BeginCommandBuffer(s->cmd, &bi);
    if (r != VK_SUCCESS) return lose(dev, "vkBeginCommandBuffer", r);
    s->open = true;
    s->n_commands = 0;
  }
  *out = s;
  return NULL;
}

static void barrier(slot_t *s, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier mb;
  memset(&mb, 0, sizeof mb);
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = dst_access;
  weft__vkf.CmdPipelineBarrier(
      s->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0,
      1, &mb, 0, NULL, 0, NULL);
}

/* Orders a command after everything recorded or submitted before it. */
static void command_barrier(slot_t *s) {
  barrier(s, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
              VK_ACCESS_TRANSFER_WRITE_BIT);
}

static weft_status_t *slot_submit(weft_vk_device_t *dev) {
  slot_t *s = &dev->slots[dev->cur];
  if (!s->open) return NULL;
  /* Device writes (downloads into staging) become visible to the host once the fence waits. */
  barrier(s, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  s->open = false;
  VkResult r = weft__vkf.EndCommandBuffer(s->cmd);
  if (r != VK_SUCCESS) return lose(dev, "vkEndCommandBuffer", r);
  VkSubmitInfo si;
  memset(&si, 0, sizeof si);
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &s->cmd;
  r = weft__vkf.QueueSubmit(dev->queue, 1, &si, s->fence);
  if (r != VK_SUCCESS) return lose(dev, "vkQueueSubmit", r);
  s->pending = true;
  dev->cur = (dev->cur + 1) % N_SLOTS;
  return NULL;
}

/* Submits what is recorded and waits until the queue has run all of it. */
static weft_status_t *sync_all(weft_vk_device_t *dev) {
  if (unusable(dev)) return lost_status(dev);
  WEFT_RETURN_IF_ERROR(slot_submit(dev));
  for (int i = 0; i < N_SLOTS; i++) WEFT_RETURN_IF_ERROR(slot_wait(dev, &dev->slots[i]));
  release_blocks(dev, false);
  return NULL;
}

static weft_status_t *after_record(weft_vk_device_t *dev, slot_t *s) {
  s->n_commands++;
  if (s->n_commands >= SLOT_MAX_COMMANDS || s->staged >= SLOT_MAX_STAGED) return slot_submit(dev);
  return NULL;
}

/* n bytes of staging memory in the slot (16-byte aligned), valid until the slot is recycled. */
static weft_status_t *stage_alloc(weft_vk_device_t *dev, slot_t *s, VkDeviceSize n,
                                  stage_buf_t **buf, VkDeviceSize *offset) {
  VkDeviceSize need = round_up(n, 16);
  if (s->n_stage > 0) {
    stage_buf_t *last = &s->stage[s->n_stage - 1];
    if (last->size - last->used >= need) {
      *buf = last;
      *offset = last->used;
      last->used += need;
      s->staged += need;
      return NULL;
    }
  }
  if (s->n_stage == s->cap_stage) {
    uint32_t cap = s->cap_stage ? 2 * s->cap_stage : 4;
    stage_buf_t *grown = realloc(s->stage, cap * sizeof *grown);
    if (grown == NULL) return vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
    s->stage = grown;
    s->cap_stage = cap;
  }
  stage_buf_t b;
  memset(&b, 0, sizeof b);
  b.size = need > STAGE_MIN ? need : STAGE_MIN;
  VkResult r = make_buffer(dev, b.size, STAGE_USAGE, &b.buffer);
  if (r == VK_SUCCESS) {
    VkMemoryRequirements req;
    weft__vkf.GetBufferMemoryRequirements(dev->device, b.buffer, &req);
    VkMemoryAllocateInfo ai;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = dev->host_type;
    r = weft__vkf.AllocateMemory(dev->device, &ai, NULL, &b.memory);
    if (r == VK_SUCCESS) r = weft__vkf.BindBufferMemory(dev->device, b.buffer, b.memory, 0);
    void *map = NULL;
    if (r == VK_SUCCESS) r = weft__vkf.MapMemory(dev->device, b.memory, 0, VK_WHOLE_SIZE, 0, &map);
    b.map = map;
    if (r != VK_SUCCESS) {
      if (b.memory != VK_NULL_HANDLE) weft__vkf.FreeMemory(dev->device, b.memory, NULL);
      weft__vkf.DestroyBuffer(dev->device, b.buffer, NULL);
    }
  }
  if (r != VK_SUCCESS)
    return vk_status(dev, WEFT_RESOURCE_EXHAUSTED,
                     "out of memory allocating %llu bytes of host-visible staging memory (%s)",
                     (unsigned long long)b.size, weft__vk_result_name(r));
  b.used = need;
  s->stage[s->n_stage++] = b;
  *buf = &s->stage[s->n_stage - 1];
  *offset = 0;
  s->staged += need;
  return NULL;
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
  for (int i = 0; i < N_SLOTS; i++) {
    slot_t *s = &dev->slots[i];
    for (uint32_t k = 0; k < s->n_pools; k++)
      weft__vkf.DestroyDescriptorPool(dev->device, s->pools[k], NULL);
    free(s->pools);
    s->pools = NULL;
    s->n_pools = 0;
    for (uint32_t k = 0; k < s->n_stage; k++) stage_destroy(dev, &s->stage[k]);
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
  if (dev->cmd_pool != VK_NULL_HANDLE) weft__vkf.DestroyCommandPool(dev->device, dev->cmd_pool, NULL);
  release_blocks(dev, false);
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
    return vk_status(dev, WEFT_UNAVAILABLE, "vkCreateDevice failed: %s", weft__vk_result_name(r));
  }
  weft__vkf.GetDeviceQueue(dev->device, p->queue_family, 0, &dev->queue);

  VkCommandPoolCreateInfo pi;
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = p->queue_family;
  r = weft__vkf.CreateCommandPool(dev->device, &pi, NULL, &dev->cmd_pool);
  if (r != VK_SUCCESS) return vk_status(dev, WEFT_INTERNAL, "vkCreateCommandPool: %s", weft__vk_result_name(r));
  VkCommandBuffer cmds[N_SLOTS];
  VkCommandBufferAllocateInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ci.commandPool = dev->cmd_pool;
  ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ci.commandBufferCount = N_SLOTS;
  r = weft__vkf.AllocateCommandBuffers(dev->device, &ci, cmds);
  if (r != VK_SUCCESS)
    return vk_status(dev, WEFT_INTERNAL, "vkAllocateCommandBuffers: %s", weft__vk_result_name(r));
  for (int i = 0; i < N_SLOTS; i++) {
    dev->slots[i].cmd = cmds[i];
    VkFenceCreateInfo fi;
    memset(&fi, 0, sizeof fi);
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    r = weft__vkf.CreateFence(dev->device, &fi, NULL, &dev->slots[i].fence);
    if (r != VK_SUCCESS) return vk_status(dev, WEFT_INTERNAL, "vkCreateFence: %s", weft__vk_result_name(r));
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
    return vk_status(dev, WEFT_INTERNAL, "vkCreateDescriptorSetLayout: %s", weft__vk_result_name(r));
  VkPushConstantRange pr;
  pr.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  pr.offset = 0;
  pr.size = VK_MAX_PUSH;
  if (p->props.limits.maxPushConstantsSize < VK_MAX_PUSH)
    return vk_status(dev, WEFT_UNIMPLEMENTED, "needs %u bytes of push constants, the device has %u",
                     VK_MAX_PUSH, p->props.limits.maxPushConstantsSize);
  VkPipelineLayoutCreateInfo pli;
  memset(&pli, 0, sizeof pli);
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &dev->set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pr;
  r = weft__vkf.CreatePipelineLayout(dev->device, &pli, NULL, &dev->pipe_layout);
  if (r != VK_SUCCESS)
    return vk_status(dev, WEFT_INTERNAL, "vkCreatePipelineLayout: %s", weft__vk_result_name(r));
  VkPipelineCacheCreateInfo pci;
  memset(&pci, 0, sizeof pci);
  pci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  r = weft__vkf.CreatePipelineCache(dev->device, &pci, NULL, &dev->pipe_cache);
  if (r != VK_SUCCESS) dev->pipe_cache = VK_NULL_HANDLE; /* only a speed-up */

  WEFT_RETURN_IF_ERROR(choose_memory_types(dev));
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
    dev->live = calloc(LIVE_MIN_BUCKETS, sizeof *dev->live);
    dev->n_live_buckets = LIVE_MIN_BUCKETS;
    if (dev->live == NULL) st = vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
  }
  if (st == NULL) st = weft__vk_alloc(dev, 256, &dev->dummy);
  if (st != NULL) {
    destroy_objects(dev);
    free(dev->live);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
    return st;
  }
  H->log(WEFT_LOG_INFO, WEFT_VK_PLUGIN_NAME, "opened %s: %s%s", dev->name, p->weft_props.description,
         dev->limit ? " (memory capped by memory_fraction)" : "");
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
      weft_status_t *st = sync_all(dev);
      if (st != NULL) H->status_free(st);
    }
    if (dev->device != VK_NULL_HANDLE) weft__vkf.DeviceWaitIdle(dev->device);
    destroy_objects(dev);
    dev->closed = true;
  }
}

void weft__vk_device_close(weft_vk_device_t *dev) {
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

/* ---------------------------------------------------------------------------------------------
 * The set of live allocations: lets another plugin's device pointer be checked without reading
 * the memory it points to (it may be host memory, or nothing). */

static size_t live_slot(const void *p, size_t n_buckets) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)(x & (n_buckets - 1));
}

static void live_add(weft_vk_device_t *dev, weft_vk_mem_t *m) {
  if (dev->n_live >= 2 * dev->n_live_buckets) {
    /* Grow; when that fails the chains just get longer. */
    size_t n = dev->n_live_buckets * 2;
    weft_vk_mem_t **grown = calloc(n, sizeof *grown);
    if (grown != NULL) {
      for (size_t i = 0; i < dev->n_live_buckets; i++) {
        weft_vk_mem_t *e = dev->live[i];
        while (e != NULL) {
          weft_vk_mem_t *next = e->live_next;
          size_t k = live_slot(e, n);
          e->live_next = grown[k];
          grown[k] = e;
          e = next;
        }
      }
      free(dev->live);
      dev->live = grown;
      dev->n_live_buckets = n;
    }
  }
  size_t k = live_slot(m, dev->n_live_buckets);
  m->live_next = dev->live[k];
  dev->live[k] = m;
  dev->n_live++;
}

static void live_remove(weft_vk_device_t *dev, weft_vk_mem_t *m) {
  if (dev->live == NULL) return;
  weft_vk_mem_t **link = &dev->live[live_slot(m, dev->n_live_buckets)];
  while (*link != NULL && *link != m) link = &(*link)->live_next;
  if (*link == m) {
    *link = m->live_next;
    dev->n_live--;
  }
}

static const weft_vk_mem_t *live_find(const weft_vk_device_t *dev, const void *p) {
  if (dev->live == NULL || p == NULL) return NULL;
  for (const weft_vk_mem_t *e = dev->live[live_slot(p, dev->n_live_buckets)]; e != NULL;
       e = e->live_next)
    if ((const void *)e == p) return e;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Allocation */

static VkResult try_alloc(weft_vk_device_t *dev, VkDeviceSize size, weft_vk_mem_t *m) {
  if (size < DEDICATED_MIN) {
    for (weft_vk_block_t *b = dev->blocks; b != NULL; b = b->next) {
      if (b->dedicated) continue;
      if (block_take(b, size, &m->offset)) {
        m->block = b;
        m->buffer = b->buffer;
        return VK_SUCCESS;
      }
    }
  }
  bool dedicated = size >= DEDICATED_MIN;
  VkDeviceSize bsize = dedicated ? size : BLOCK_SIZE;
  if (dev->limit != 0) {
    VkDeviceSize avail = dev->limit > dev->reserved ? dev->limit - dev->reserved : 0;
    if (avail < size) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    if (bsize > avail) bsize = avail / dev->align * dev->align;
  }
  weft_vk_block_t *b = NULL;
  VkResult r = block_new(dev, bsize, dedicated, &b);
  if (r != VK_SUCCESS && !dedicated && bsize > size) {
    /* The driver refused a whole block: try one just big enough. */
    bsize = size;
    r = block_new(dev, bsize, false, &b);
  }
  if (r != VK_SUCCESS) return r;
  b->next = dev->blocks;
  dev->blocks = b;
  if (dedicated) {
    b->used = size;
    m->offset = 0;
  } else if (!block_take(b, size, &m->offset)) {
    return VK_ERROR_OUT_OF_DEVICE_MEMORY; /* cannot happen: the block is at least `size` */
  }
  m->block = b;
  m->buffer = b->buffer;
  return VK_SUCCESS;
}

static weft_status_t *alloc_locked(weft_vk_device_t *dev, size_t nbytes, void **ptr) {
  *ptr = NULL;
  if (nbytes == 0) return NULL;
  if (unusable(dev)) return lost_status(dev);
  weft_vk_mem_t *m = calloc(1, sizeof *m);
  if (m == NULL) return vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
  VkDeviceSize size = round_up((VkDeviceSize)nbytes, dev->align);
  VkResult r = try_alloc(dev, size, m);
  if (r != VK_SUCCESS) {
    /* Drain the queue so that doomed and empty blocks can go, then try once more. */
    weft_status_t *st = sync_all(dev);
    if (st != NULL) {
      free(m);
      return st;
    }
    release_blocks(dev, true);
    r = try_alloc(dev, size, m);
  }
  if (r != VK_SUCCESS) {
    free(m);
    char limit[64] = "no cap";
    if (dev->limit != 0)
      snprintf(limit, sizeof limit, "cap %llu bytes from memory_fraction",
               (unsigned long long)dev->limit);
    return vk_status(dev, WEFT_RESOURCE_EXHAUSTED,
                     "out of device memory allocating %zu bytes (%llu bytes in use, %llu bytes "
                     "reserved, %s; %s)",
                     nbytes, (unsigned long long)dev->in_use, (unsigned long long)dev->reserved,
                     limit, weft__vk_result_name(r));
  }
  m->size = nbytes;
  m->reserved = size;
  dev->in_use += size;
  live_add(dev, m);
  *ptr = m;
  return NULL;
}

weft_status_t *weft__vk_alloc(weft_vk_device_t *dev, size_t nbytes, void **ptr) {
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = alloc_locked(dev, nbytes, ptr);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

void weft__vk_free(weft_vk_device_t *dev, void *ptr) {
  if (ptr == NULL) return;
  weft_vk_mem_t *m = ptr;
  pthread_mutex_lock(&dev->lock);
  live_remove(dev, m);
  if (!dev->closed) {
    weft_vk_block_t *b = m->block;
    dev->in_use -= m->reserved;
    if (b->dedicated) {
      weft_vk_block_t **link = &dev->blocks;
      while (*link != NULL && *link != b) link = &(*link)->next;
      if (*link == b) *link = b->next;
      b->next = dev->doomed;
      dev->doomed = b;
    } else {
      block_give(b, m->offset, m->reserved);
    }
  }
  pthread_mutex_unlock(&dev->lock);
  free(m);
}

weft_status_t *weft__vk_memory_usage(weft_vk_device_t *dev, uint64_t *in_use, uint64_t *limit) {
  pthread_mutex_lock(&dev->lock);
  if (in_use != NULL) *in_use = dev->in_use;
  if (limit != NULL) *limit = dev->limit != 0 ? dev->limit : dev->phys->weft_props.memory_bytes;
  pthread_mutex_unlock(&dev->lock);
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Copies */

static weft_status_t *check_range(weft_vk_device_t *dev, const weft_vk_mem_t *m, size_t nbytes,
                                  const char *what) {
  if (m == NULL)
    return vk_status(dev, WEFT_INVALID_ARGUMENT, "%s: NULL device pointer for %zu bytes", what,
                     nbytes);
  if (nbytes > m->reserved)
    return vk_status(dev, WEFT_INVALID_ARGUMENT, "%s: %zu bytes do not fit an allocation of %llu",
                     what, nbytes, (unsigned long long)m->size);
  return NULL;
}

/* A copy between host memory and device memory through the batch's staging memory: nbytes at
 * b->map + off, recorded into slot s. */
typedef struct staged {
  slot_t *s;
  stage_buf_t *b;
  VkDeviceSize off;
} staged_t;

/* Under the device lock: checks that m can take nbytes and sets up *c. */
static weft_status_t *staged_begin(weft_vk_device_t *dev, const weft_vk_mem_t *m, size_t nbytes,
                                   const char *what, staged_t *c) {
  memset(c, 0, sizeof *c);
  weft_status_t *st = check_range(dev, m, nbytes, what);
  if (st == NULL) st = slot_open(dev, &c->s);
  if (st == NULL) st = stage_alloc(dev, c->s, nbytes, &c->b, &c->off);
  return st;
}

weft_status_t *weft__vk_copy_to_device(weft_vk_device_t *dev, void *dst, const void *src,
                                       size_t nbytes) {
  if (nbytes == 0) return NULL;
  weft_vk_mem_t *m = dst;
  staged_t c;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = staged_begin(dev, m, nbytes, "copy to device", &c);
  if (st == NULL) {
    memcpy(c.b->map + c.off, src, nbytes);
    command_barrier(c.s);
    VkBufferCopy region = {c.off, m->offset, nbytes};
    weft__vkf.CmdCopyBuffer(c.s->cmd, c.b->buffer, m->buffer, 1, &region);
    st = after_record(dev, c.s);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_copy_from_device(weft_vk_device_t *dev, void *dst, const void *src,
                                         size_t nbytes) {
  if (nbytes == 0) return NULL;
  const weft_vk_mem_t *m = src;
  staged_t c;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = staged_begin(dev, m, nbytes, "copy from device", &c);
  if (st == NULL) {
    command_barrier(c.s);
    VkBufferCopy region = {m->offset, c.off, nbytes};
    weft__vkf.CmdCopyBuffer(c.s->cmd, m->buffer, c.b->buffer, 1, &region);
    c.s->n_commands++;
    /* The slot is not recycled before it is opened again, which cannot happen while we hold
     * the lock, so the staging bytes stay put until they are copied out. */
    st = sync_all(dev);
    if (st == NULL) memcpy(dst, c.b->map + c.off, nbytes);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_copy_device_to_device(weft_vk_device_t *dev, void *dst, const void *src,
                                              size_t nbytes) {
  if (nbytes == 0 || dst == src) return NULL;
  const weft_vk_mem_t *ms = src;
  weft_vk_mem_t *md = dst;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = check_range(dev, ms, nbytes, "copy within device");
  if (st == NULL) st = check_range(dev, md, nbytes, "copy within device");
  slot_t *s = NULL;
  if (st == NULL) st = slot_open(dev, &s);
  if (st == NULL) {
    command_barrier(s);
    VkBufferCopy region = {ms->offset, md->offset, nbytes};
    weft__vkf.CmdCopyBuffer(s->cmd, ms->buffer, md->buffer, 1, &region);
    st = after_record(dev, s);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_synchronize(weft_vk_device_t *dev) {
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = sync_all(dev);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_fill(weft_vk_device_t *dev, void *dst, size_t nbytes, uint32_t pattern) {
  if (nbytes == 0) return NULL;
  weft_vk_mem_t *m = dst;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = check_range(dev, m, nbytes, "fill");
  slot_t *s = NULL;
  if (st == NULL) st = slot_open(dev, &s);
  if (st == NULL) {
    command_barrier(s);
    /* The reserved size is a multiple of 256, so rounding up to whole words stays inside. */
    weft__vkf.CmdFillBuffer(s->cmd, m->buffer, m->offset, round_up(nbytes, 4), pattern);
    st = after_record(dev, s);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Pipelines and dispatch */

/* A compute pipeline over the device's layout from SPIR-V whose entry point is "main". On failure
 * returns the VkResult and names the call that failed in *failed (the callers word the error:
 * a built-in shader is the plugin's fault, an SDK user's module is the caller's). */
static VkResult create_compute_pipeline(weft_vk_device_t *dev, const uint32_t *code, size_t size,
                                        const VkSpecializationInfo *spec, VkPipeline *out,
                                        const char **failed) {
  *out = VK_NULL_HANDLE;
  VkShaderModuleCreateInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mi.codeSize = size;
  mi.pCode = code;
  VkShaderModule module;
  VkResult r = weft__vkf.CreateShaderModule(dev->device, &mi, NULL, &module);
  if (r != VK_SUCCESS) {
    *failed = "vkCreateShaderModule";
    return r;
  }
  VkComputePipelineCreateInfo pi;
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = "main";
  pi.stage.pSpecializationInfo = spec;
  pi.layout = dev->pipe_layout;
  r = weft__vkf.CreateComputePipelines(dev->device, dev->pipe_cache, 1, &pi, NULL, out);
  weft__vkf.DestroyShaderModule(dev->device, module, NULL);
  if (r != VK_SUCCESS) {
    *out = VK_NULL_HANDLE;
    *failed = "vkCreateComputePipelines";
    return r;
  }
  weft__vk_arm_exit_handler();
  return VK_SUCCESS;
}

/* The shaders whose op and dtype are specialization constants (see weft__vk_dispatch_op). */
static bool specialized(weft_vk_shader_t shader) {
  return shader == VK_SH_UNARY || shader == VK_SH_BINARY || shader == VK_SH_REDUCE_ROWS ||
         shader == VK_SH_REDUCE_COLS;
}

/* The pipeline of `shader`; with spec (op and dtype, for a specialized shader) the pipeline of
 * that pair. Caller holds dev->lock. */
static weft_status_t *pipeline(weft_vk_device_t *dev, weft_vk_shader_t shader,
                               const uint32_t spec[2], VkPipeline *out) {
  if (spec == NULL && dev->pipelines[shader] != VK_NULL_HANDLE) {
    *out = dev->pipelines[shader];
    return NULL;
  }
  for (size_t i = 0; spec != NULL && i < dev->n_spec_pipes; i++) {
    const struct spec_pipe *sp = &dev->spec_pipes[i];
    if (sp->shader == shader && sp->op == spec[0] && sp->dtype == spec[1]) {
      *out = sp->pipe;
      return NULL;
    }
  }
  const weft_vk_spirv_t *code = weft__vk_shader_code(shader);
  if (code == NULL)
    return vk_status(dev, WEFT_INTERNAL, "shader '%s' is missing from this build of the plugin",
                     weft__vk_shader_name(shader));
  static const VkSpecializationMapEntry entries[2] = {{0, 0, sizeof(uint32_t)},
                                                      {1, sizeof(uint32_t), sizeof(uint32_t)}};
  VkSpecializationInfo info = {2, entries, 2 * sizeof(uint32_t), spec};
  struct spec_pipe *grown = NULL;
  if (spec != NULL) {
    grown = realloc(dev->spec_pipes, (dev->n_spec_pipes + 1) * sizeof *grown);
    if (grown == NULL) return vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
    dev->spec_pipes = grown;
  }
  const char *failed = NULL;
  VkPipeline made = VK_NULL_HANDLE;
  VkResult r = create_compute_pipeline(dev, code->code, code->size, spec ? &info : NULL, &made,
                                       &failed);
  if (r != VK_SUCCESS)
    return vk_status(dev, WEFT_INTERNAL, "%s(%s): %s", failed, code->name,
                     weft__vk_result_name(r));
  if (spec != NULL)
    dev->spec_pipes[dev->n_spec_pipes++] = (struct spec_pipe){shader, spec[0], spec[1], made};
  else
    dev->pipelines[shader] = made;
  *out = made;
  return NULL;
}

static weft_status_t *descriptor_set(weft_vk_device_t *dev, slot_t *s, VkDescriptorSet *out) {
  for (;;) {
    bool fresh = false;
    if (s->pool_at == s->n_pools) {
      VkDescriptorPool *grown = realloc(s->pools, (s->n_pools + 1) * sizeof *grown);
      if (grown == NULL) return vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
      s->pools = grown;
      VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, SETS_PER_POOL * VK_MAX_BINDINGS};
      VkDescriptorPoolCreateInfo ci;
      memset(&ci, 0, sizeof ci);
      ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      ci.maxSets = SETS_PER_POOL;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkResult r = weft__vkf.CreateDescriptorPool(dev->device, &ci, NULL, &s->pools[s->n_pools]);
      if (r != VK_SUCCESS)
        return vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "vkCreateDescriptorPool: %s",
                         weft__vk_result_name(r));
      s->n_pools++;
      fresh = true;
    }
    VkDescriptorSetAllocateInfo ai;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = s->pools[s->pool_at];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &dev->set_layout;
    VkResult r = weft__vkf.AllocateDescriptorSets(dev->device, &ai, out);
    if (r == VK_SUCCESS) return NULL;
    if (fresh || (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL))
      return vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "vkAllocateDescriptorSets: %s",
                       weft__vk_result_name(r));
    s->pool_at++;
  }
}

/* Under the lock: records `pipe` over the allocations mems[0..VK_MAX_BINDINGS) (NULL binds the
 * dummy), behind the command barrier. The one path every dispatch takes. */
static weft_status_t *record_dispatch(weft_vk_device_t *dev, VkPipeline pipe, const void *push,
                                      uint32_t push_size, const weft_vk_mem_t *const *mems,
                                      uint32_t gx, uint32_t gy, uint32_t gz) {
  slot_t *s = NULL;
  VkDescriptorSet set = VK_NULL_HANDLE;
  weft_status_t *st = slot_open(dev, &s);
  if (st == NULL) st = descriptor_set(dev, s, &set);
  if (st != NULL) return st;
  VkDescriptorBufferInfo infos[VK_MAX_BINDINGS];
  VkDeviceSize max_range = dev->phys->props.limits.maxStorageBufferRange;
  for (int i = 0; i < VK_MAX_BINDINGS; i++) {
    const weft_vk_mem_t *m = mems[i] != NULL ? mems[i] : dev->dummy;
    infos[i].buffer = m->buffer;
    infos[i].offset = m->offset;
    infos[i].range = m->reserved < max_range ? m->reserved : max_range;
  }
  VkWriteDescriptorSet w;
  memset(&w, 0, sizeof w);
  w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
  w.dstSet = set;
  w.dstBinding = 0;
  w.descriptorCount = VK_MAX_BINDINGS;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = infos;
  weft__vkf.UpdateDescriptorSets(dev->device, 1, &w, 0, NULL);
  command_barrier(s);
  weft__vkf.CmdBindPipeline(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
  weft__vkf.CmdBindDescriptorSets(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->pipe_layout, 0, 1,
                                  &set, 0, NULL);
  if (push_size > 0)
    weft__vkf.CmdPushConstants(s->cmd, dev->pipe_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               push_size, push);
  weft__vkf.CmdDispatch(s->cmd, gx, gy, gz);
  return after_record(dev, s);
}

static weft_status_t *dispatch(weft_vk_device_t *dev, weft_vk_shader_t shader,
                              const uint32_t spec[2], const void *push, uint32_t push_size,
                              void *const *bufs, int n_bufs, uint32_t gx, uint32_t gy,
                              uint32_t gz) {
  if (gx == 0 || gy == 0 || gz == 0) return NULL;
  if (push_size > VK_MAX_PUSH || push_size % 4 != 0 || n_bufs > VK_MAX_BINDINGS || (int)shader < 0 ||
      shader >= VK_SH_COUNT || specialized(shader) != (spec != NULL))
    return vk_status(dev, WEFT_INTERNAL, "bad dispatch of shader %d (%u push bytes, %d buffers%s)",
                     (int)shader, push_size, n_bufs,
                     spec != NULL ? ", op and dtype" : "");
  const weft_vk_mem_t *mems[VK_MAX_BINDINGS] = {NULL};
  for (int i = 0; i < n_bufs; i++) mems[i] = bufs[i];
  pthread_mutex_lock(&dev->lock);
  VkPipeline pipe = VK_NULL_HANDLE;
  weft_status_t *st = unusable(dev) ? lost_status(dev) : pipeline(dev, shader, spec, &pipe);
  if (st == NULL) st = record_dispatch(dev, pipe, push, push_size, mems, gx, gy, gz);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_dispatch(weft_vk_device_t *dev, weft_vk_shader_t shader, const void *push,
                                 uint32_t push_size, void *const *bufs, int n_bufs, uint32_t gx,
                                 uint32_t gy, uint32_t gz) {
  return dispatch(dev, shader, NULL, push, push_size, bufs, n_bufs, gx, gy, gz);
}

weft_status_t *weft__vk_dispatch_op(weft_vk_device_t *dev, weft_vk_shader_t shader, uint32_t op,
                                    uint32_t dtype, const void *push, uint32_t push_size,
                                    void *const *bufs, int n_bufs, uint32_t gx, uint32_t gy,
                                    uint32_t gz) {
  const uint32_t spec[2] = {op, dtype};
  return dispatch(dev, shader, spec, push, push_size, bufs, n_bufs, gx, gy, gz);
}

/* ---------------------------------------------------------------------------------------------
 * Other plugins' kernels */

VkDevice weft__vk_device_handle(const weft_vk_device_t *dev) { return dev->device; }

uint32_t weft__vk_queue_family(const weft_vk_device_t *dev) { return dev->phys->queue_family; }

const VkPhysicalDeviceLimits *weft__vk_limits(const weft_vk_device_t *dev) {
  return &dev->phys->props.limits;
}

static weft_status_t *lookup_locked(weft_vk_device_t *dev, const void *ptr, const char *what,
                                    const weft_vk_mem_t **out) {
  if (ptr == NULL)
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "%s: NULL device pointer (an empty tensor has no device memory)", what);
  const weft_vk_mem_t *m = live_find(dev, ptr);
  if (m == NULL)
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "%s: %p is not a live buffer of this device (host memory, another device's "
                     "or freed memory?)",
                     what, ptr);
  *out = m;
  return NULL;
}

weft_status_t *weft__vk_lookup(weft_vk_device_t *dev, const void *ptr, const char *what,
                               weft_vk_mem_t *out) {
  pthread_mutex_lock(&dev->lock);
  const weft_vk_mem_t *m = NULL;
  weft_status_t *st = unusable(dev) ? lost_status(dev) : lookup_locked(dev, ptr, what, &m);
  if (st == NULL) *out = *m;
  pthread_mutex_unlock(&dev->lock);
  return st;
}

static weft_status_t *foreign_create(weft_vk_device_t *dev, weft_vulkan_pipeline_t *f) {
  const char *failed = NULL;
  VkResult r = create_compute_pipeline(dev, f->code, f->size, NULL, &f->pipe, &failed);
  if (r == VK_SUCCESS) return NULL;
  if (strcmp(failed, "vkCreateShaderModule") == 0)
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "pipeline '%s': the driver refused the SPIR-V module (%zu bytes): "
                     "vkCreateShaderModule: %s",
                     f->name, f->size, weft__vk_result_name(r));
  return vk_status(dev, WEFT_INVALID_ARGUMENT,
                   "pipeline '%s': the driver refused the compute shader (%zu bytes of "
                   "SPIR-V, entry point 'main'): vkCreateComputePipelines: %s",
                   f->name, f->size, weft__vk_result_name(r));
}

weft_status_t *weft__vk_foreign_pipeline(weft_vk_device_t *dev, const char *name,
                                         const uint32_t *spirv, size_t spirv_bytes,
                                         uint32_t push_size, uint32_t n_buffers,
                                         weft_vulkan_pipeline_t **out) {
  *out = NULL;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = unusable(dev) ? lost_status(dev) : NULL;
  weft_vulkan_pipeline_t *f = dev->foreign;
  while (st == NULL && f != NULL &&
         !(f->size == spirv_bytes && f->push_size == push_size && f->n_buffers == n_buffers &&
           memcmp(f->code, spirv, spirv_bytes) == 0))
    f = f->next;
  if (st == NULL && f == NULL) {
    f = calloc(1, sizeof *f);
    uint32_t *code = malloc(spirv_bytes);
    if (f == NULL || code == NULL) {
      free(f);
      free(code);
      f = NULL;
      st = vk_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
    } else {
      memcpy(code, spirv, spirv_bytes);
      f->dev = dev;
      snprintf(f->name, sizeof f->name, "%s", name != NULL ? name : "(unnamed)");
      f->code = code;
      f->size = spirv_bytes;
      f->push_size = push_size;
      f->n_buffers = n_buffers;
      st = foreign_create(dev, f);
      if (st == NULL) {
        f->next = dev->foreign;
        dev->foreign = f;
      } else {
        free(f->code);
        free(f);
        f = NULL;
      }
    }
  }
  if (st == NULL) *out = f;
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_foreign_dispatch(weft_vk_device_t *dev, weft_vulkan_pipeline_t *f,
                                         const void *push, uint32_t push_size,
                                         void *const *bufs, uint32_t n_bufs, uint32_t gx,
                                         uint32_t gy, uint32_t gz) {
  if (f == NULL) return vk_status(dev, WEFT_INVALID_ARGUMENT, "dispatch of a NULL pipeline");
  if (f->dev != dev)
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "pipeline '%s' was made for %s, not for this device", f->name,
                     f->dev->name);
  if (n_bufs != f->n_buffers || (n_bufs > 0 && bufs == NULL))
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "pipeline '%s' binds %u buffers, the dispatch gave %u", f->name,
                     f->n_buffers, bufs == NULL ? 0 : n_bufs);
  if (push_size > f->push_size || push_size % 4 != 0 || (push_size > 0 && push == NULL))
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "pipeline '%s': %u bytes of push constants (at most %u, a multiple of 4)",
                     f->name, push_size, f->push_size);
  const uint32_t *most = dev->phys->props.limits.maxComputeWorkGroupCount;
  if (gx > most[0] || gy > most[1] || gz > most[2])
    return vk_status(dev, WEFT_INVALID_ARGUMENT,
                     "pipeline '%s': %u x %u x %u workgroups exceed the device's %u x %u x %u",
                     f->name, gx, gy, gz, most[0], most[1], most[2]);
  if (gx == 0 || gy == 0 || gz == 0) return NULL;
  const weft_vk_mem_t *mems[VK_MAX_BINDINGS] = {NULL};
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = unusable(dev) ? lost_status(dev) : NULL;
  for (uint32_t i = 0; st == NULL && i < n_bufs; i++) {
    char what[96];
    snprintf(what, sizeof what, "pipeline '%s', buffer %u", f->name, i);
    st = lookup_locked(dev, bufs[i], what, &mems[i]);
  }
  if (st == NULL && f->pipe == VK_NULL_HANDLE)
    st = vk_status(dev, WEFT_FAILED_PRECONDITION, "pipeline '%s' is gone", f->name);
  if (st == NULL) st = record_dispatch(dev, f->pipe, push, push_size, mems, gx, gy, gz);
  pthread_mutex_unlock(&dev->lock);
  return st;
}
