/* vk_device.h: the record of one open Vulkan device and what the files that make up a device
 * share: vk_device.c (open, close, errors), vk_alloc.c (memory types, blocks, the live set),
 * vk_staging.c (command batches, staging, copies, fills), vk_pipeline.c (pipelines, descriptor
 * sets, dispatch) and vk_services.c (other plugins' kernels). Kernels see only vk_internal.h.
 *
 * Locking. Four mutexes, never more than two held at once, always taken in this order:
 *   1. open_lock (vk_device.c) guards the list of open devices; the exit handler holds it while it
 *      closes each device, and only try-locks dev->lock under it, so a device busy recording is
 *      left open rather than waited for.
 *   2. dev->lock guards everything in weft_vk_device_t after it: the slots and their staging and
 *      descriptor pools, the blocks and free lists, the live set, the pipeline caches (built-in,
 *      specialized and foreign), the byte counts, `closed` and `lost`. Every weft__vk_* entry point
 *      of the device files takes it for its whole call, so the executor may call from many
 *      threads; the functions declared below (weft__vk_slot_open, weft__vk_sync_all, ...) expect
 *      the caller to hold it. The fields set at open (device, queue, layouts, phys, align, limit,
 *      name) are read without it. Nothing else is locked while it is held.
 *   3. tables_lock (vk_services.c) guards the services tables; it is held only to find or build a
 *      table, never across a call into the device.
 *   4. instance_lock (vk_loader.c) guards the instance at shutdown only.
 * Work is recorded in the order the entry points are called; every command is preceded by a full
 * compute/transfer barrier, so commands run in recording order. */
#ifndef WEFT_VK_DEVICE_H
#define WEFT_VK_DEVICE_H

#include <pthread.h>
#include <stdbool.h>

#include "vk_internal.h"

#define VK_N_SLOTS 3
#define VK_LIVE_MIN_BUCKETS 256u
#define VK_DEVICE_USAGE                                                    \
  (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | \
   VK_BUFFER_USAGE_TRANSFER_DST_BIT)
#define VK_STAGE_USAGE (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

typedef struct weft_vk_free_range {
  VkDeviceSize offset, size;
  struct weft_vk_free_range *next;
} weft_vk_free_range_t;

struct weft_vk_block {
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceSize size;
  VkDeviceSize used;
  bool dedicated;
  weft_vk_free_range_t *free; /* sorted by offset, never adjacent */
  weft_vk_block_t *next;
};

typedef struct weft_vk_stage_buf {
  VkBuffer buffer;
  VkDeviceMemory memory;
  uint8_t *map;
  VkDeviceSize size, used;
} weft_vk_stage_buf_t;

typedef struct weft_vk_slot {
  VkCommandBuffer cmd;
  VkFence fence;
  bool open;    /* recording */
  bool pending; /* submitted; the fence has not been waited for */
  uint32_t n_commands;
  VkDescriptorPool *pools;
  uint32_t n_pools, pool_at;
  weft_vk_stage_buf_t *stage;
  uint32_t n_stage, cap_stage;
  VkDeviceSize staged;
} weft_vk_slot_t;

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
  } * spec_pipes;
  size_t n_spec_pipes;
  weft_vk_slot_t slots[VK_N_SLOTS];
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

/* ---- Errors (vk_device.c) ---- */

/* A status prefixed with the device's name ("VULKAN:0: ..."). */
weft_status_t *weft__vk_dev_status(weft_vk_device_t *dev, weft_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Marks the device unusable after a failure that leaves the queue in an unknown state. */
weft_status_t *weft__vk_lose(weft_vk_device_t *dev, const char *what, VkResult r);
/* Why an unusable device refuses work (closed, or lost and the first failure). */
weft_status_t *weft__vk_lost_status(weft_vk_device_t *dev);

static inline bool weft__vk_unusable(const weft_vk_device_t *dev) {
  return dev->closed || dev->lost[0] != '\0';
}

static inline VkDeviceSize weft__vk_round_up(VkDeviceSize n, VkDeviceSize a) {
  return (n + a - 1) / a * a;
}

/* ---- Memory (vk_alloc.c) ---- */

VkResult weft__vk_make_buffer(weft_vk_device_t *dev, VkDeviceSize size, VkBufferUsageFlags usage,
                              VkBuffer *out);
/* Picks dev->device_type and dev->host_type (at open). */
weft_status_t *weft__vk_choose_memory_types(weft_vk_device_t *dev);
/* Destroys the doomed dedicated blocks and (when `empty_too`) every empty shared block. Only
 * with the queue idle. */
void weft__vk_release_blocks(weft_vk_device_t *dev, bool empty_too);
/* The live allocation at p, or NULL (nothing behind p is read). */
const weft_vk_mem_t *weft__vk_live_find(const weft_vk_device_t *dev, const void *p);

/* ---- Batches (vk_staging.c) ---- */

/* The slot being recorded, begun if needed. */
weft_status_t *weft__vk_slot_open(weft_vk_device_t *dev, weft_vk_slot_t **out);
/* Orders a command after everything recorded or submitted before it. */
void weft__vk_command_barrier(weft_vk_slot_t *s);
/* Counts a recorded command; submits the slot when it is full. */
weft_status_t *weft__vk_after_record(weft_vk_device_t *dev, weft_vk_slot_t *s);
/* Submits what is recorded and waits until the queue has run all of it. */
weft_status_t *weft__vk_sync_all(weft_vk_device_t *dev);
void weft__vk_stage_destroy(weft_vk_device_t *dev, weft_vk_stage_buf_t *b);

/* ---- Pipelines (vk_pipeline.c) ---- */

/* A compute pipeline over the device's layout from SPIR-V whose entry point is "main"; on failure
 * the VkResult, with the call that failed in *failed. */
VkResult weft__vk_create_pipeline(weft_vk_device_t *dev, const uint32_t *code, size_t size,
                                  const VkSpecializationInfo *spec, VkPipeline *out,
                                  const char **failed);
/* Records `pipe` over mems[0..VK_MAX_BINDINGS) (NULL binds the dummy) behind the barrier. */
weft_status_t *weft__vk_record_dispatch(weft_vk_device_t *dev, VkPipeline pipe, const void *push,
                                        uint32_t push_size, const weft_vk_mem_t *const *mems,
                                        uint32_t gx, uint32_t gy, uint32_t gz);

#endif /* WEFT_VK_DEVICE_H */
