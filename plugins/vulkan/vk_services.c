/* vk_services.c: the "weft.vulkan.1" device services (sdk/include/weft/vulkan.h). A kernel set
 * registered for VULKAN asks the host for them and learns which VkInstance and physical device
 * stand behind its "VULKAN:N", so that it can run compute shaders of its own on the same GPU.
 * One table per device ordinal, built on first request and kept for the life of the process
 * (the SDK promises the table outlives the open device). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"
#include "vk_services.h"
#include "weft/vulkan.h"

#define MAX_SERVICE_TABLES 64

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_vulkan_services_t *tables[MAX_SERVICE_TABLES];

/* vkGetInstanceProcAddr with the SDK's handle types. */
static weft_vulkan_void_fn get_instance_proc_addr(void *instance, const char *name) {
  if (weft__vkf.GetInstanceProcAddr == NULL || name == NULL) return NULL;
  return (weft_vulkan_void_fn)weft__vkf.GetInstanceProcAddr((VkInstance)instance, name);
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
  if (device == NULL || name == NULL || strcmp(name, WEFT_VULKAN_SERVICES) != 0) return NULL;
  int ordinal = device_ordinal(device);
  const weft_vk_physical_t *p = ordinal >= 0 ? weft__vk_physical(ordinal) : NULL;
  if (p == NULL) return NULL;
  pthread_mutex_lock(&tables_lock);
  weft_vulkan_services_t *t = tables[ordinal];
  if (t == NULL) {
    t = calloc(1, sizeof *t);
    if (t != NULL) {
      t->struct_size = sizeof *t;
      t->ordinal = ordinal;
      t->instance = (void *)weft__vk_instance();
      t->get_instance_proc_addr = get_instance_proc_addr;
      t->physical_device = (void *)p->handle;
      t->compute_queue_family = p->queue_family;
      t->api_version = p->props.apiVersion;
      t->vendor_id = p->props.vendorID;
      t->device_id = p->props.deviceID;
      memcpy(t->pipeline_cache_uuid, p->props.pipelineCacheUUID, sizeof t->pipeline_cache_uuid);
      snprintf(t->device_name, sizeof t->device_name, "%s", p->props.deviceName);
      tables[ordinal] = t;
    }
  }
  pthread_mutex_unlock(&tables_lock);
  return t;
}
