/* vk_services.c: the Vulkan backend's device services (sdk/include/weft/vulkan.h). A kernel set
 * registered for VULKAN asks the host for them: version 1 names the VkInstance and physical
 * device behind its "VULKAN:N"; version 2 adds the backend's VkDevice and lets the kernel run its
 * own SPIR-V on the backend's queue over the backend's buffers (vk_pipeline.c records it exactly
 * like the backend's own kernels). Below the tables, the device side of those services: device
 * pointers checked against the live set, and foreign pipelines cached per device by content.
 *
 * One table per device ordinal, built on first request and kept for the life of the process (the
 * SDK promises the table outlives the open device); both names return it. The public table is
 * the first member of a private record that also knows the open device and counts dispatches. */
#include "vk_services.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_device.h"

#define H weft__vk_host
#define MAX_SERVICE_TABLES 64
#define SPIRV_MAGIC 0x07230203u

typedef struct service_table {
  weft_vulkan_services_t pub; /* first: what kernels get */
  weft_vk_device_t *_Atomic dev;
  atomic_uint_fast64_t dispatches;
} service_table_t;

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static service_table_t *tables[MAX_SERVICE_TABLES];

/* vkGetInstanceProcAddr with the SDK's handle types. */
static weft_vulkan_void_fn get_instance_proc_addr(void *instance, const char *name) {
  if (weft__vkf.GetInstanceProcAddr == NULL || name == NULL) return NULL;
  return (weft_vulkan_void_fn)weft__vkf.GetInstanceProcAddr((VkInstance)instance, name);
}

/* vkGetDeviceProcAddr, loaded through the instance on first use. */
static weft_vulkan_void_fn get_device_proc_addr(void *device, const char *name) {
  static _Atomic(PFN_vkGetDeviceProcAddr) gdpa;
  if (device == NULL || name == NULL || weft__vkf.GetInstanceProcAddr == NULL) return NULL;
  PFN_vkGetDeviceProcAddr f = atomic_load(&gdpa);
  if (f == NULL) {
    f = (PFN_vkGetDeviceProcAddr)weft__vkf.GetInstanceProcAddr(weft__vk_instance(),
                                                                "vkGetDeviceProcAddr");
    if (f == NULL) return NULL;
    atomic_store(&gdpa, f);
  }
  return (weft_vulkan_void_fn)f((VkDevice)device, name);
}

/* The private record of a table handed out, or NULL (with *st set) for anything else. */
static service_table_t *own_table(const weft_vulkan_services_t *vk, const char *call,
                                  weft_status_t **st) {
  *st = NULL;
  service_table_t *found = NULL;
  pthread_mutex_lock(&tables_lock);
  for (int i = 0; vk != NULL && found == NULL && i < MAX_SERVICE_TABLES; i++)
    if (tables[i] != NULL && &tables[i]->pub == vk) found = tables[i];
  pthread_mutex_unlock(&tables_lock);
  if (found != NULL) {
    if (atomic_load(&found->dev) != NULL) return found;
    *st = H->status_new(WEFT_FAILED_PRECONDITION, "VULKAN:%d: %s: the device is not open",
                        found->pub.ordinal, call);
    return NULL;
  }
  *st = H->status_new(WEFT_INVALID_ARGUMENT,
                      "%s: %p is not a \"" WEFT_VULKAN_SERVICES_2 "\" table of the Vulkan plugin",
                      call, (const void *)vk);
  return NULL;
}

static weft_status_t *svc_buffer(const weft_vulkan_services_t *vk, const void *device_ptr,
                                 const char *what, weft_vulkan_buffer_t *out) {
  weft_status_t *st = NULL;
  service_table_t *t = own_table(vk, "buffer", &st);
  if (t == NULL) return st;
  if (out == NULL || out->struct_size < offsetof(weft_vulkan_buffer_t, buffer))
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "VULKAN:%d: buffer: the weft_vulkan_buffer_t out has no struct_size set",
                         vk->ordinal);
  weft_vk_mem_t m;
  st = weft__vk_lookup(atomic_load(&t->dev), device_ptr, what ? what : "buffer", &m);
  if (st != NULL) return st;
  VkDeviceSize max_range = weft__vk_limits(atomic_load(&t->dev))->maxStorageBufferRange;
  uint64_t fields[4] = {(uint64_t)(uintptr_t)m.buffer, m.offset,
                        m.reserved < max_range ? m.reserved : max_range, m.size};
  /* Only the fields the caller's struct_size covers. */
  uint64_t *dst[4] = {&out->buffer, &out->offset, &out->range, &out->size};
  for (int i = 0; i < 4; i++)
    if ((size_t)((char *)dst[i] - (char *)out) + sizeof(uint64_t) <= out->struct_size)
      *dst[i] = fields[i];
  return NULL;
}

static weft_status_t *svc_pipeline(const weft_vulkan_services_t *vk, const char *name,
                                   const uint32_t *spirv, size_t spirv_bytes,
                                   uint32_t push_constant_bytes, uint32_t n_buffers,
                                   weft_vulkan_pipeline_t **out) {
  weft_status_t *st = NULL;
  if (out != NULL) *out = NULL;
  service_table_t *t = own_table(vk, "pipeline", &st);
  if (t == NULL) return st;
  const char *n = name != NULL ? name : "(unnamed)";
  if (out == NULL)
    return H->status_new(WEFT_INVALID_ARGUMENT, "VULKAN:%d: pipeline '%s': NULL out", vk->ordinal,
                         n);
  if (spirv == NULL || spirv_bytes < 20 || spirv_bytes % 4 != 0)
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "VULKAN:%d: pipeline '%s': %zu bytes are not a SPIR-V module (a "
                         "multiple of 4 bytes, at least the 5-word header)",
                         vk->ordinal, n, spirv == NULL ? (size_t)0 : spirv_bytes);
  if (spirv[0] != SPIRV_MAGIC)
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "VULKAN:%d: pipeline '%s': not SPIR-V: the first word is 0x%08x, not "
                         "the magic number 0x%08x (words in host byte order)",
                         vk->ordinal, n, spirv[0], SPIRV_MAGIC);
  if (push_constant_bytes > VK_MAX_PUSH || push_constant_bytes % 4 != 0)
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "VULKAN:%d: pipeline '%s': %u bytes of push constants (at most %u, a "
                         "multiple of 4)",
                         vk->ordinal, n, push_constant_bytes, VK_MAX_PUSH);
  if (n_buffers > VK_MAX_BINDINGS)
    return H->status_new(WEFT_INVALID_ARGUMENT,
                         "VULKAN:%d: pipeline '%s': %u storage buffers (at most %u)", vk->ordinal,
                         n, n_buffers, VK_MAX_BINDINGS);
  return weft__vk_foreign_pipeline(atomic_load(&t->dev), n, spirv, spirv_bytes,
                                   push_constant_bytes, n_buffers, out);
}

static weft_status_t *svc_dispatch(const weft_vulkan_services_t *vk,
                                   weft_vulkan_pipeline_t *pipeline, const void *push,
                                   uint32_t push_bytes, void *const *buffers, uint32_t n_buffers,
                                   uint32_t gx, uint32_t gy, uint32_t gz) {
  weft_status_t *st = NULL;
  service_table_t *t = own_table(vk, "dispatch", &st);
  if (t == NULL) return st;
  st = weft__vk_foreign_dispatch(atomic_load(&t->dev), pipeline, push, push_bytes, buffers,
                                 n_buffers, gx, gy, gz);
  if (st == NULL && gx != 0 && gy != 0 && gz != 0) atomic_fetch_add(&t->dispatches, 1);
  return st;
}

static uint64_t svc_dispatch_count(const weft_vulkan_services_t *vk) {
  weft_status_t *st = NULL;
  service_table_t *t = own_table(vk, "dispatch_count", &st);
  if (t == NULL) {
    H->status_free(st);
    return 0;
  }
  return atomic_load(&t->dispatches);
}

/* "VULKAN:3" -> 3, or -1. */
static int device_ordinal(const weft_vk_device_t *dev) {
  const char *name = weft__vk_device_name(dev);
  const char *colon = name ? strrchr(name, ':') : NULL;
  if (colon == NULL || colon[1] == '\0') return -1;
  char *end = NULL;
  long n = strtol(colon + 1, &end, 10);
  return (*end == '\0' && n >= 0 && n < MAX_SERVICE_TABLES) ? (int)n : -1;
}

const void *weft__vk_device_services(void *device, const char *name) {
  if (device == NULL || name == NULL ||
      (strcmp(name, WEFT_VULKAN_SERVICES) != 0 && strcmp(name, WEFT_VULKAN_SERVICES_2) != 0))
    return NULL;
  weft_vk_device_t *dev = device;
  int ordinal = device_ordinal(dev);
  const weft_vk_physical_t *p = ordinal >= 0 ? weft__vk_physical(ordinal) : NULL;
  if (p == NULL) return NULL;
  pthread_mutex_lock(&tables_lock);
  service_table_t *t = tables[ordinal];
  if (t == NULL) {
    t = calloc(1, sizeof *t);
    if (t != NULL) {
      weft_vulkan_services_t *v = &t->pub;
      v->struct_size = sizeof *v;
      v->ordinal = ordinal;
      v->instance = (void *)weft__vk_instance();
      v->get_instance_proc_addr = get_instance_proc_addr;
      v->physical_device = (void *)p->handle;
      v->compute_queue_family = p->queue_family;
      v->api_version = p->props.apiVersion;
      v->vendor_id = p->props.vendorID;
      v->device_id = p->props.deviceID;
      memcpy(v->pipeline_cache_uuid, p->props.pipelineCacheUUID, sizeof v->pipeline_cache_uuid);
      snprintf(v->device_name, sizeof v->device_name, "%s", p->props.deviceName);
      v->get_device_proc_addr = get_device_proc_addr;
      v->max_push_constant_bytes = VK_MAX_PUSH;
      v->max_buffers = VK_MAX_BINDINGS;
      for (int i = 0; i < 3; i++)
        v->max_group_count[i] = p->props.limits.maxComputeWorkGroupCount[i];
      v->buffer = svc_buffer;
      v->pipeline = svc_pipeline;
      v->dispatch = svc_dispatch;
      v->dispatch_count = svc_dispatch_count;
      tables[ordinal] = t;
    }
  }
  if (t != NULL) {
    /* The device asking is the one open for this ordinal (a reopened device replaces it). */
    atomic_store(&t->dev, dev);
    void *handle = (void *)weft__vk_device_handle(dev);
    if (t->pub.device != handle) t->pub.device = handle;
  }
  pthread_mutex_unlock(&tables_lock);
  return t != NULL ? &t->pub : NULL;
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
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT,
                               "%s: NULL device pointer (an empty tensor has no device memory)",
                               what);
  const weft_vk_mem_t *m = weft__vk_live_find(dev, ptr);
  if (m == NULL)
    return weft__vk_dev_status(
        dev, WEFT_INVALID_ARGUMENT,
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
  weft_status_t *st =
      weft__vk_unusable(dev) ? weft__vk_lost_status(dev) : lookup_locked(dev, ptr, what, &m);
  if (st == NULL) *out = *m;
  pthread_mutex_unlock(&dev->lock);
  return st;
}

static weft_status_t *foreign_create(weft_vk_device_t *dev, weft_vulkan_pipeline_t *f) {
  const char *failed = NULL;
  VkResult r = weft__vk_create_pipeline(dev, f->code, f->size, NULL, &f->pipe, &failed);
  if (r == VK_SUCCESS) return NULL;
  if (strcmp(failed, "vkCreateShaderModule") == 0)
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT,
                               "pipeline '%s': the driver refused the SPIR-V module (%zu bytes): "
                               "vkCreateShaderModule: %s",
                               f->name, f->size, weft__vk_result_name(r));
  return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT,
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
  weft_status_t *st = weft__vk_unusable(dev) ? weft__vk_lost_status(dev) : NULL;
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
      st = weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
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
                                         const void *push, uint32_t push_size, void *const *bufs,
                                         uint32_t n_bufs, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (f == NULL)
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT, "dispatch of a NULL pipeline");
  if (f->dev != dev)
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT,
                               "pipeline '%s' was made for %s, not for this device", f->name,
                               f->dev->name);
  if (n_bufs != f->n_buffers || (n_bufs > 0 && bufs == NULL))
    return weft__vk_dev_status(dev, WEFT_INVALID_ARGUMENT,
                               "pipeline '%s' binds %u buffers, the dispatch gave %u", f->name,
                               f->n_buffers, bufs == NULL ? 0 : n_bufs);
  if (push_size > f->push_size || push_size % 4 != 0 || (push_size > 0 && push == NULL))
    return weft__vk_dev_status(
        dev, WEFT_INVALID_ARGUMENT,
        "pipeline '%s': %u bytes of push constants (at most %u, a multiple of 4)", f->name,
        push_size, f->push_size);
  const uint32_t *most = dev->phys->props.limits.maxComputeWorkGroupCount;
  if (gx > most[0] || gy > most[1] || gz > most[2])
    return weft__vk_dev_status(
        dev, WEFT_INVALID_ARGUMENT,
        "pipeline '%s': %u x %u x %u workgroups exceed the device's %u x %u x %u", f->name, gx, gy,
        gz, most[0], most[1], most[2]);
  if (gx == 0 || gy == 0 || gz == 0) return NULL;
  const weft_vk_mem_t *mems[VK_MAX_BINDINGS] = {NULL};
  pthread_mutex_lock(&dev->lock);
  weft_status_t *st = weft__vk_unusable(dev) ? weft__vk_lost_status(dev) : NULL;
  for (uint32_t i = 0; st == NULL && i < n_bufs; i++) {
    char what[96];
    snprintf(what, sizeof what, "pipeline '%s', buffer %u", f->name, i);
    st = lookup_locked(dev, bufs[i], what, &mems[i]);
  }
  if (st == NULL && f->pipe == VK_NULL_HANDLE)
    st = weft__vk_dev_status(dev, WEFT_FAILED_PRECONDITION, "pipeline '%s' is gone", f->name);
  if (st == NULL) st = weft__vk_record_dispatch(dev, f->pipe, push, push_size, mems, gx, gy, gz);
  pthread_mutex_unlock(&dev->lock);
  return st;
}
