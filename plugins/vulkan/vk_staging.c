/* vk_staging.c: a Vulkan device's command batches and the copies and fills recorded into them.
 * Commands are recorded into one of three command buffers ("slots"), each preceded by a full
 * compute/transfer barrier. A slot is submitted when it holds 256 commands or 256 MiB of staged
 * uploads, when the host reads device memory, and on synchronize; its descriptor sets and staging
 * buffers are recycled when the slot comes round again and its fence has signalled. Uploads never
 * wait: the bytes are copied into the slot's host-visible staging memory at once. Downloads submit
 * and wait for everything recorded so far. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_device.h"

#define H weft__vk_host

#define SLOT_MAX_COMMANDS 256u
#define STAGE_MIN ((VkDeviceSize)4 << 20)
#define STAGE_KEEP ((VkDeviceSize)64 << 20)
#define SLOT_MAX_STAGED ((VkDeviceSize)256 << 20)
#define FENCE_TIMEOUT_NS (600ull * 1000000000ull)

/* ---------------------------------------------------------------------------------------------
 * Slots */

static weft_status_t *slot_wait(weft_vk_device_t *dev, weft_vk_slot_t *s) {
  if (!s->pending) return NULL;
  VkResult r = weft__vkf.WaitForFences(dev->device, 1, &s->fence, VK_TRUE, FENCE_TIMEOUT_NS);
  if (r != VK_SUCCESS) return weft__vk_lose(dev, "vkWaitForFences", r);
  r = weft__vkf.ResetFences(dev->device, 1, &s->fence);
  if (r != VK_SUCCESS) return weft__vk_lose(dev, "vkResetFences", r);
  s->pending = false;
  return NULL;
}

void weft__vk_stage_destroy(weft_vk_device_t *dev, weft_vk_stage_buf_t *b) {
  weft__vkf.UnmapMemory(dev->device, b->memory);
  weft__vkf.DestroyBuffer(dev->device, b->buffer, NULL);
  weft__vkf.FreeMemory(dev->device, b->memory, NULL);
}

/* Makes a finished slot's descriptor sets and staging memory reusable; keeps one staging
 * buffer of a reasonable size for the next batch. */
static void slot_recycle(weft_vk_device_t *dev, weft_vk_slot_t *s) {
  for (uint32_t i = 0; i < s->n_pools; i++)
    weft__vkf.ResetDescriptorPool(dev->device, s->pools[i], 0);
  s->pool_at = 0;
  int keep = -1;
  for (uint32_t i = 0; i < s->n_stage; i++)
    if (s->stage[i].size <= STAGE_KEEP && (keep < 0 || s->stage[i].size > s->stage[keep].size))
      keep = (int)i;
  for (uint32_t i = 0; i < s->n_stage; i++)
    if ((int)i != keep) weft__vk_stage_destroy(dev, &s->stage[i]);
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
weft_status_t *weft__vk_slot_open(weft_vk_device_t *dev, weft_vk_slot_t **out) {
  if (weft__vk_unusable(dev)) return weft__vk_lost_status(dev);
  weft_vk_slot_t *s = &dev->slots[dev->cur];
  if (!s->open) {
    WEFT_RETURN_IF_ERROR(slot_wait(dev, s));
    slot_recycle(dev, s);
    VkCommandBufferBeginInfo bi;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    VkResult r = weft__vkf.BeginCommandBuffer(s->cmd, &bi);
    if (r != VK_SUCCESS) return weft__vk_lose(dev, "vkBeginCommandBuffer", r);
    s->open = true;
    s->n_commands = 0;
  }
  *out = s;
  return NULL;
}

static void barrier(weft_vk_slot_t *s, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
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
void weft__vk_command_barrier(weft_vk_slot_t *s) {
  barrier(s, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
              VK_ACCESS_TRANSFER_WRITE_BIT);
}

static weft_status_t *slot_submit(weft_vk_device_t *dev) {
  weft_vk_slot_t *s = &dev->slots[dev->cur];
  if (!s->open) return NULL;
  /* Device writes (downloads into staging) become visible to the host once the fence waits. */
  barrier(s, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  s->open = false;
  VkResult r = weft__vkf.EndCommandBuffer(s->cmd);
  if (r != VK_SUCCESS) return weft__vk_lose(dev, "vkEndCommandBuffer", r);
  VkSubmitInfo si;
  memset(&si, 0, sizeof si);
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &s->cmd;
  r = weft__vkf.QueueSubmit(dev->queue, 1, &si, s->fence);
  if (r != VK_SUCCESS) return weft__vk_lose(dev, "vkQueueSubmit", r);
  s->pending = true;
  dev->cur = (dev->cur + 1) % VK_N_SLOTS;
  return NULL;
}

/* Submits what is recorded and waits until the queue has run all of it. */
weft_status_t *weft__vk_sync_all(weft_vk_device_t *dev) {
  if (weft__vk_unusable(dev)) return weft__vk_lost_status(dev);
  WEFT_RETURN_IF_ERROR(slot_submit(dev));
  for (int i = 0; i < VK_N_SLOTS; i++) WEFT_RETURN_IF_ERROR(slot_wait(dev, &dev->slots[i]));
  weft__vk_release_blocks(dev, false);
  return NULL;
}

weft_status_t *weft__vk_after_record(weft_vk_device_t *dev, weft_vk_slot_t *s) {
  s->n_commands++;
  if (s->n_commands >= SLOT_MAX_COMMANDS || s->staged >= SLOT_MAX_STAGED) return slot_submit(dev);
  return NULL;
}

/* n bytes of staging memory in the slot (16-byte aligned), valid until the slot is recycled. */
static weft_status_t *stage_alloc(weft_vk_device_t *dev, weft_vk_slot_t *s, VkDeviceSize n,
                                  weft_vk_stage_buf_t **buf, VkDeviceSize *offset) {
  VkDeviceSize need = weft__vk_round_up(n, 16);
  if (s->n_stage > 0) {
    weft_vk_stage_buf_t *last = &s->stage[s->n_stage - 1];
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
    weft_vk_stage_buf_t *grown = realloc(s->stage, cap * sizeof *grown);
    if (grown == NULL)
      return weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
    s->stage = grown;
    s->cap_stage = cap;
  }
  weft_vk_stage_buf_t b;
  memset(&b, 0, sizeof b);
  b.size = need > STAGE_MIN ? need : STAGE_MIN;
  VkResult r = weft__vk_make_buffer(dev, b.size, VK_STAGE_USAGE, &b.buffer);
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
    return weft__vk_dev_status(
        dev, WEFT_RESOURCE_EXHAUSTED,
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
 * Copies */

static weft_status_t *check_range(weft_vk_device_t *dev, const weft_vk_mem_t *m, size_t nbytes,
                                  const char *what) {
  if (m == NULL)
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT, "%s: NULL device pointer for %zu bytes",
                               what, nbytes);
  if (nbytes > m->reserved)
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT,
                               "%s: %zu bytes do not fit an allocation of %llu", what, nbytes,
                               (unsigned long long)m->size);
  return NULL;
}

/* A copy between host memory and device memory through the batch's staging memory: nbytes at
 * b->map + off, recorded into slot s. */
typedef struct staged {
  weft_vk_slot_t *s;
  weft_vk_stage_buf_t *b;
  VkDeviceSize off;
} staged_t;

/* Under the device lock: checks that m can take nbytes and sets up *c. */
static weft_status_t *staged_begin(weft_vk_device_t *dev, const weft_vk_mem_t *m, size_t nbytes,
                                   const char *what, staged_t *c) {
  memset(c, 0, sizeof *c);
  weft_status_t *st = check_range(dev, m, nbytes, what);
  if (st == NULL) st = weft__vk_slot_open(dev, &c->s);
  if (st == NULL) st = stage_alloc(dev, c->s, nbytes, &c->b, &c->off);
  return st;
}

weft_status_t *weft__vk_copy_to_device(void *device, void *dst, const void *src,
                                       size_t nbytes) {
  weft_vk_device_t *dev = device;
  if (nbytes == 0) return NULL;
  weft_vk_mem_t *m = dst;
  staged_t c;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = staged_begin(dev, m, nbytes, "copy to device", &c);
  if (st == NULL) {
    memcpy(c.b->map + c.off, src, nbytes);
    weft__vk_command_barrier(c.s);
    VkBufferCopy region = {c.off, m->offset, nbytes};
    weft__vkf.CmdCopyBuffer(c.s->cmd, c.b->buffer, m->buffer, 1, &region);
    st = weft__vk_after_record(dev, c.s);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_copy_from_device(void *device, void *dst, const void *src,
                                         size_t nbytes) {
  weft_vk_device_t *dev = device;
  if (nbytes == 0) return NULL;
  const weft_vk_mem_t *m = src;
  staged_t c;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = staged_begin(dev, m, nbytes, "copy from device", &c);
  if (st == NULL) {
    weft__vk_command_barrier(c.s);
    VkBufferCopy region = {m->offset, c.off, nbytes};
    weft__vkf.CmdCopyBuffer(c.s->cmd, m->buffer, c.b->buffer, 1, &region);
    c.s->n_commands++;
    /* The slot is not recycled before it is opened again, which cannot happen while we hold
     * the lock, so the staging bytes stay put until they are copied out. */
    st = weft__vk_sync_all(dev);
    if (st == NULL) memcpy(dst, c.b->map + c.off, nbytes);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_copy_device_to_device(void *device, void *dst, const void *src,
                                              size_t nbytes) {
  weft_vk_device_t *dev = device;
  if (nbytes == 0 || dst == src) return NULL;
  const weft_vk_mem_t *ms = src;
  weft_vk_mem_t *md = dst;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = check_range(dev, ms, nbytes, "copy within device");
  if (st == NULL) st = check_range(dev, md, nbytes, "copy within device");
  weft_vk_slot_t *s = NULL;
  if (st == NULL) st = weft__vk_slot_open(dev, &s);
  if (st == NULL) {
    weft__vk_command_barrier(s);
    VkBufferCopy region = {ms->offset, md->offset, nbytes};
    weft__vkf.CmdCopyBuffer(s->cmd, ms->buffer, md->buffer, 1, &region);
    st = weft__vk_after_record(dev, s);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_synchronize(void *device) {
  weft_vk_device_t *dev = device;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = weft__vk_sync_all(dev);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_fill(weft_vk_device_t *dev, void *dst, size_t nbytes, uint32_t pattern) {
  if (nbytes == 0) return NULL;
  weft_vk_mem_t *m = dst;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = check_range(dev, m, nbytes, "fill");
  weft_vk_slot_t *s = NULL;
  if (st == NULL) st = weft__vk_slot_open(dev, &s);
  if (st == NULL) {
    weft__vk_command_barrier(s);
    /* The reserved size is a multiple of 256, so rounding up to whole words stays inside. */
    weft__vkf.CmdFillBuffer(s->cmd, m->buffer, m->offset, weft__vk_round_up(nbytes, 4), pattern);
    st = weft__vk_after_record(dev, s);
  }
  pthread_mutex_unlock(&dev->lock);
  return st;
}
