/* vk_alloc.c: a Vulkan device's memory: the memory types chosen for blocks and staging, and the
 * sub-allocator. Allocations are carved from 64 MiB VkBuffers (first fit over a sorted free list
 * per block, neighbours merged on free); 16 MiB and larger get a block of their own. A device
 * pointer is a weft_vk_mem_t {buffer, offset}. Freed memory may be handed out again at once: the
 * core frees a buffer only after every kernel that used it has recorded its work, and all work
 * runs in recording order, so the next user's commands run after the last user's. Dedicated
 * blocks are destroyed only once the queue is idle, because pending commands may still name them.
 * memory_fraction caps the bytes of device memory the blocks may take (0: no cap). Every
 * allocation handed out is also in a set of live allocations, so that another plugin's device
 * pointer can be checked without reading the memory it points to. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_device.h"

#define H weft__vk_host

#define BLOCK_SIZE ((VkDeviceSize)64 << 20)
#define DEDICATED_MIN ((VkDeviceSize)16 << 20)

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

VkResult weft__vk_make_buffer(weft_vk_device_t *dev, VkDeviceSize size, VkBufferUsageFlags usage,
                              VkBuffer *out) {
  VkBufferCreateInfo bi;
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = size;
  bi.usage = usage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  return weft__vkf.CreateBuffer(dev->device, &bi, NULL, out);
}

/* Picks the memory types for blocks (device-local, preferably not the small host-visible
 * window some GPUs expose) and for staging (host-visible and coherent, cached if possible). */
weft_status_t *weft__vk_choose_memory_types(weft_vk_device_t *dev) {
  VkBuffer probe;
  VkResult r = weft__vk_make_buffer(dev, 65536, VK_DEVICE_USAGE, &probe);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkCreateBuffer: %s", weft__vk_result_name(r));
  VkMemoryRequirements req;
  weft__vkf.GetBufferMemoryRequirements(dev->device, probe, &req);
  weft__vkf.DestroyBuffer(dev->device, probe, NULL);
  const weft_vk_physical_t *p = dev->phys;
  int64_t t = find_memory_type(p, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  if (t < 0) t = find_memory_type(p, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  if (t < 0) t = find_memory_type(p, req.memoryTypeBits, 0, 0);
  if (t < 0) return weft__vk_dev_status(dev, WEFT_INTERNAL, "no memory type for storage buffers");
  dev->device_type = (uint32_t)t;

  r = weft__vk_make_buffer(dev, 65536, VK_STAGE_USAGE, &probe);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "vkCreateBuffer: %s", weft__vk_result_name(r));
  weft__vkf.GetBufferMemoryRequirements(dev->device, probe, &req);
  weft__vkf.DestroyBuffer(dev->device, probe, NULL);
  const VkMemoryPropertyFlags hv =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  t = find_memory_type(p, req.memoryTypeBits, hv | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
  if (t < 0) t = find_memory_type(p, req.memoryTypeBits, hv, 0);
  if (t < 0)
    return weft__vk_dev_status(dev, WEFT_INTERNAL,
                               "no host-visible coherent memory type for staging");
  dev->host_type = (uint32_t)t;
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Blocks */

static VkResult block_new(weft_vk_device_t *dev, VkDeviceSize size, bool dedicated,
                          weft_vk_block_t **out) {
  weft_vk_block_t *b = calloc(1, sizeof *b);
  if (b == NULL) return VK_ERROR_OUT_OF_HOST_MEMORY;
  VkResult r = weft__vk_make_buffer(dev, size, VK_DEVICE_USAGE, &b->buffer);
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
    weft_vk_free_range_t *n = b->free->next;
    free(b->free);
    b->free = n;
  }
  free(b);
}

/* First fit in one block; 0 when nothing fits (offset 0 is never returned as failure because
 * `*offset` carries the result). */
static bool block_take(weft_vk_block_t *b, VkDeviceSize size, VkDeviceSize *offset) {
  weft_vk_free_range_t **link = &b->free;
  for (weft_vk_free_range_t *f = b->free; f != NULL; link = &f->next, f = f->next) {
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
  weft_vk_free_range_t *prev = NULL, *next = b->free;
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
    weft_vk_free_range_t *f = malloc(sizeof *f);
    if (f == NULL) return; /* the range is lost to this block, not corrupted */
    f->offset = offset;
    f->size = size;
    f->next = next;
    if (prev != NULL)
      prev->next = f;
    else
      b->free = f;
  }
}

/* Destroys the doomed dedicated blocks and (when `empty_too`) every empty shared block. Only
 * called with the queue idle. */
void weft__vk_release_blocks(weft_vk_device_t *dev, bool empty_too) {
  while (dev->doomed != NULL) {
    weft_vk_block_t *n = dev->doomed->next;
    block_destroy(dev, dev->doomed);
    dev->doomed = n;
  }
  if (!empty_too) return;
  weft_vk_block_t **link = &dev->blocks;
  while (*link != NULL) {
    weft_vk_block_t *b = *link;
    if (!b->dedicated && b->used == 0 &&
        !(dev->dummy != NULL && ((weft_vk_mem_t *)dev->dummy)->block == b)) {
      *link = b->next;
      block_destroy(dev, b);
    } else {
      link = &b->next;
    }
  }
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

const weft_vk_mem_t *weft__vk_live_find(const weft_vk_device_t *dev, const void *p) {
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
  if (weft__vk_unusable(dev)) return weft__vk_lost_status(dev);
  weft_vk_mem_t *m = calloc(1, sizeof *m);
  if (m == NULL) return weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
  VkDeviceSize size = weft__vk_round_up((VkDeviceSize)nbytes, dev->align);
  VkResult r = try_alloc(dev, size, m);
  if (r != VK_SUCCESS) {
    /* Drain the queue so that doomed and empty blocks can go, then try once more. */
    weft_status_t *st = weft__vk_sync_all(dev);
    if (st != NULL) {
      free(m);
      return st;
    }
    weft__vk_release_blocks(dev, true);
    r = try_alloc(dev, size, m);
  }
  if (r != VK_SUCCESS) {
    free(m);
    char limit[64] = "no cap";
    if (dev->limit != 0)
      snprintf(limit, sizeof limit, "cap %llu bytes from memory_fraction",
               (unsigned long long)dev->limit);
    return weft__vk_dev_status(
        dev, WEFT_RESOURCE_EXHAUSTED,
        "out of device memory allocating %zu bytes (%llu bytes in use, %llu bytes "
        "reserved, %s; %s)",
        nbytes, (unsigned long long)dev->in_use, (unsigned long long)dev->reserved, limit,
        weft__vk_result_name(r));
  }
  m->size = nbytes;
  m->reserved = size;
  dev->in_use += size;
  live_add(dev, m);
  *ptr = m;
  return NULL;
}

weft_status_t *weft__vk_alloc(void *device, size_t nbytes, void **ptr) {
  weft_vk_device_t *dev = device;
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = alloc_locked(dev, nbytes, ptr);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

void weft__vk_free(void *device, void *ptr) {
  weft_vk_device_t *dev = device;
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

weft_status_t *weft__vk_memory_usage(void *device, uint64_t *in_use, uint64_t *limit) {
  weft_vk_device_t *dev = device;
  pthread_mutex_lock(&dev->lock);
  if (in_use != NULL) *in_use = dev->in_use;
  if (limit != NULL) *limit = dev->limit != 0 ? dev->limit : dev->phys->weft_props.memory_bytes;
  pthread_mutex_unlock(&dev->lock);
  return NULL;
}
