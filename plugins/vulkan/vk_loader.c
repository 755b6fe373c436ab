/* vk_loader.c: finds Vulkan at run time. dlopen()s the loader (libvulkan.so.1), creates one
 * VkInstance per process, resolves the entry points the plugin uses, and enumerates the physical
 * devices that have a compute queue, ordered discrete GPU, integrated GPU, virtual GPU, CPU
 * (lavapipe), other. Each one's properties for `weft devices` are computed here once.
 *
 * Every failure on the way (no loader, no driver, no device with a compute queue) leaves the
 * backend with zero devices and a sentence saying why; nothing here fails the plugin.
 * WEFT_VULKAN_DISABLE=1 in the environment hides the devices (for runs that want CPU only). */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

weft_vk_fns_t weft__vkf;

static pthread_once_t instance_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t instance_lock = PTHREAD_MUTEX_INITIALIZER;
static void *libvulkan;
static VkInstance instance = VK_NULL_HANDLE;
static weft_vk_physical_t *physicals;
static int n_physicals;
static const char *why_no_devices = "Vulkan was not initialised";

const char *weft__vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult error";
  }
}

/* Lower is better: the order devices get ordinals in. */
static int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

static bool has_device_extension(VkPhysicalDevice pd, const char *name) {
  uint32_t n = 0;
  if (weft__vkf.EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0)
    return false;
  VkExtensionProperties *ext = calloc(n, sizeof *ext);
  if (ext == NULL) return false;
  bool found = false;
  if (weft__vkf.EnumerateDeviceExtensionProperties(pd, NULL, &n, ext) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++) found = strcmp(ext[i].extensionName, name) == 0;
  free(ext);
  return found;
}

/* Fills the weft_device_props_t of one device: name and driver, the device-local heap, the
 * Vulkan version it supports, and the PCI address where the driver tells it. */
static void describe(weft_vk_physical_t *p, uint32_t instance_version) {
  weft_device_props_t *w = &p->weft_props;
  memset(w, 0, sizeof *w);
  w->struct_size = sizeof *w;
  w->host_accessible = 0; /* device memory is reached only through copies */
  w->emulated = p->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  uint32_t api = p->props.apiVersion;
  snprintf(w->compute_capability, sizeof w->compute_capability, "Vulkan %u.%u",
           VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));

  char driver[96] = "";
  if (weft__vkf.GetPhysicalDeviceProperties2 != NULL && instance_version >= VK_API_VERSION_1_1) {
    uint32_t effective = api < instance_version ? api : instance_version;
    bool want_driver = effective >= VK_API_VERSION_1_2 ||
                       has_device_extension(p->handle, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    bool want_pci = has_device_extension(p->handle, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
    VkPhysicalDeviceDriverProperties drv;
    memset(&drv, 0, sizeof drv);
    drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    VkPhysicalDevicePCIBusInfoPropertiesEXT pci;
    memset(&pci, 0, sizeof pci);
    pci.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT;
    VkPhysicalDeviceProperties2 props2;
    memset(&props2, 0, sizeof props2);
    props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    void **tail = &props2.pNext;
    if (want_driver) {
      *tail = &drv;
      tail = &drv.pNext;
    }
    if (want_pci) {
      *tail = &pci;
      tail = &pci.pNext;
    }
    if (want_driver || want_pci) {
      weft__vkf.GetPhysicalDeviceProperties2(p->handle, &props2);
      if (want_driver && drv.driverName[0] != '\0')
        snprintf(driver, sizeof driver, "%.40s %.50s", drv.driverName, drv.driverInfo);
      if (want_pci)
        snprintf(w->bus_id, sizeof w->bus_id, "%04x:%02x:%02x.%x", pci.pciDomain, pci.pciBus,
                 pci.pciDevice, pci.pciFunction);
    }
  }
  if (driver[0] != '\0')
    snprintf(w->description, sizeof w->description, "%.72s, driver %.46s", p->props.deviceName,
             driver);
  else
    snprintf(w->description, sizeof w->description, "%.100s, driver version 0x%x",
             p->props.deviceName, p->props.driverVersion);

  /* The largest device-local heap is the memory kernels work in. */
  uint64_t best = 0, any = 0;
  for (uint32_t h = 0; h < p->memory.memoryHeapCount; h++) {
    uint64_t size = p->memory.memoryHeaps[h].size;
    if (size > any) any = size;
    if ((p->memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && size > best)
      best = size;
  }
  w->memory_bytes = best != 0 ? best : any;
}

static int compare_physicals(const void *a, const void *b) {
  const weft_vk_physical_t *x = a, *y = b;
  int rx = type_rank(x->props.deviceType), ry = type_rank(y->props.deviceType);
  return rx - ry;
}

/* The paths of the shared objects mapped into the process, for pin_new_objects(). */
typedef struct {
  char **paths;
  size_t n, cap;
} object_list_t;

static int collect_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  object_list_t *list = data;
  if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0') return 0;
  if (list->n == list->cap) {
    size_t cap = list->cap ? list->cap * 2 : 64;
    char **grown = realloc(list->paths, cap * sizeof *grown);
    if (grown == NULL) return 1;
    list->paths = grown;
    list->cap = cap;
  }
  char *copy = strdup(info->dlpi_name);
  if (copy == NULL) return 1;
  list->paths[list->n++] = copy;
  return 0;
}

static void free_objects(object_list_t *list) {
  for (size_t i = 0; i < list->n; i++) free(list->paths[i]);
  free(list->paths);
  memset(list, 0, sizeof *list);
}

/* Keeps every object that vkCreateInstance mapped (the drivers and what they link, such as
 * Mesa's LLVM) mapped until the process exits. The loader unmaps drivers in vkDestroyInstance;
 * memory a driver keeps in process-wide state (lavapipe's JIT) is then reported by a leak
 * checker with frames that name no module, so no suppression can match the driver precisely.
 * Pinned, the driver's frames keep their module (tests/lsan.supp names it) and Weft's own
 * allocations stay checked. Unmapping a driver at shutdown gains nothing anyway. */
static void pin_new_objects(const object_list_t *before) {
  object_list_t after = {0};
  dl_iterate_phdr(collect_object, &after);
  for (size_t i = 0; i < after.n; i++) {
    bool known = false;
    for (size_t j = 0; j < before->n && !known; j++)
      known = strcmp(after.paths[i], before->paths[j]) == 0;
    /* RTLD_NOLOAD only takes a reference to what is already mapped; it is never closed. */
    if (!known) (void)dlopen(after.paths[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  free_objects(&after);
}

static void init_instance(void) {
  const char *off = getenv("WEFT_VULKAN_DISABLE");
  if (off != NULL && *off != '\0' && strcmp(off, "0") != 0) {
    why_no_devices = "disabled by WEFT_VULKAN_DISABLE";
    return;
  }
  libvulkan = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libvulkan == NULL) {
    why_no_devices = "no Vulkan loader (libvulkan.so.1)";
    return;
  }
  weft__vkf.GetInstanceProcAddr =
      (PFN_vkGetInstanceProcAddr)(uintptr_t)dlsym(libvulkan, "vkGetInstanceProcAddr");
  if (weft__vkf.GetInstanceProcAddr == NULL) {
    why_no_devices = "the Vulkan loader (libvulkan.so.1) lacks vkGetInstanceProcAddr";
    return;
  }
  weft__vkf.CreateInstance =
      (PFN_vkCreateInstance)weft__vkf.GetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance");
  weft__vkf.EnumerateInstanceVersion = (PFN_vkEnumerateInstanceVersion)weft__vkf.GetInstanceProcAddr(
      VK_NULL_HANDLE, "vkEnumerateInstanceVersion");
  if (weft__vkf.CreateInstance == NULL) {
    why_no_devices = "the Vulkan loader does not provide vkCreateInstance";
    return;
  }
  uint32_t version = VK_API_VERSION_1_0;
  if (weft__vkf.EnumerateInstanceVersion != NULL &&
      weft__vkf.EnumerateInstanceVersion(&version) != VK_SUCCESS)
    version = VK_API_VERSION_1_0;
  /* Ask for what both we and the loader know; drivers newer than that still work. */
  uint32_t want = version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : version;

  VkApplicationInfo app;
  memset(&app, 0, sizeof app);
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "weft";
  app.applicationVersion = 1;
  app.pEngineName = "weft";
  app.engineVersion = 1;
  app.apiVersion = want;
  VkInstanceCreateInfo ci;
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  object_list_t before = {0};
  dl_iterate_phdr(collect_object, &before);
  VkResult r = weft__vkf.CreateInstance(&ci, NULL, &instance);
  pin_new_objects(&before);
  free_objects(&before);
  if (r != VK_SUCCESS) {
    instance = VK_NULL_HANDLE;
    why_no_devices = r == VK_ERROR_INCOMPATIBLE_DRIVER
                         ? "no Vulkan driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)"
                         : "vkCreateInstance failed";
    return;
  }
#define WEFT_VK_LOAD(name)                                                                  \
  weft__vkf.name = (PFN_vk##name)weft__vkf.GetInstanceProcAddr(instance, "vk" #name);       \
  if (weft__vkf.name == NULL) {                                                             \
    why_no_devices = "the Vulkan loader lacks vk" #name;                                    \
    return;                                                                                 \
  }
  WEFT_VK_INSTANCE_FNS(WEFT_VK_LOAD)
#undef WEFT_VK_LOAD
  if (want >= VK_API_VERSION_1_1)
    weft__vkf.GetPhysicalDeviceProperties2 = (PFN_vkGetPhysicalDeviceProperties2)
        weft__vkf.GetInstanceProcAddr(instance, "vkGetPhysicalDeviceProperties2");

  uint32_t n = 0;
  r = weft__vkf.EnumeratePhysicalDevices(instance, &n, NULL);
  if (r != VK_SUCCESS || n == 0) {
    why_no_devices = "no Vulkan device (vkEnumeratePhysicalDevices found none)";
    return;
  }
  VkPhysicalDevice *handles = calloc(n, sizeof *handles);
  weft_vk_physical_t *found = calloc(n, sizeof *found);
  if (handles == NULL || found == NULL ||
      weft__vkf.EnumeratePhysicalDevices(instance, &n, handles) < 0) {
    free(handles);
    free(found);
    why_no_devices = "could not enumerate Vulkan devices";
    return;
  }
  int count = 0, too_small = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t nq = 0;
    weft__vkf.GetPhysicalDeviceQueueFamilyProperties(handles[i], &nq, NULL);
    VkQueueFamilyProperties *q = calloc(nq > 0 ? nq : 1, sizeof *q);
    if (q == NULL) continue;
    weft__vkf.GetPhysicalDeviceQueueFamilyProperties(handles[i], &nq, q);
    /* Prefer a compute queue without graphics (an async compute engine), else any. */
    int64_t family = -1;
    for (uint32_t f = 0; f < nq; f++) {
      if (q[f].queueCount == 0 || !(q[f].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
      if (family < 0 || !(q[f].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = f;
      if (!(q[f].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    free(q);
    if (family < 0) continue;
    /* The shaders run 256 invocations per workgroup; Vulkan only promises 128. */
    VkPhysicalDeviceProperties props;
    weft__vkf.GetPhysicalDeviceProperties(handles[i], &props);
    if (props.limits.maxComputeWorkGroupInvocations < VK_LOCAL_SIZE ||
        props.limits.maxComputeWorkGroupSize[0] < VK_LOCAL_SIZE ||
        props.limits.maxPushConstantsSize < VK_MAX_PUSH) {
      too_small++;
      continue;
    }
    weft_vk_physical_t *p = &found[count];
    p->handle = handles[i];
    p->queue_family = (uint32_t)family;
    weft__vkf.GetPhysicalDeviceProperties(handles[i], &p->props);
    weft__vkf.GetPhysicalDeviceMemoryProperties(handles[i], &p->memory);
    describe(p, want);
    count++;
  }
  free(handles);
  if (count == 0) {
    free(found);
    why_no_devices = too_small > 0 ? "no Vulkan device with 256 invocations per workgroup and "
                                     "128 bytes of push constants"
                                   : "no Vulkan device with a compute queue";
    return;
  }
  /* A stable sort by device type (insertion sort: a handful of devices). */
  for (int i = 1; i < count; i++) {
    weft_vk_physical_t cur = found[i];
    int j = i - 1;
    while (j >= 0 && compare_physicals(&found[j], &cur) > 0) {
      found[j + 1] = found[j];
      j--;
    }
    found[j + 1] = cur;
  }
  physicals = found;
  n_physicals = count;
  why_no_devices = NULL;
  weft__vk_arm_exit_handler();
}

static void exit_handler(void) {
  /* A device some thread still uses cannot be torn down; then the instance stays too. */
  if (weft__vk_close_all_devices()) weft__vk_instance_shutdown();
}

void weft__vk_arm_exit_handler(void) { atexit(exit_handler); }

int weft__vk_instance_devices(const char **why_none) {
  pthread_once(&instance_once, init_instance);
  if (why_none != NULL) *why_none = n_physicals > 0 ? NULL : why_no_devices;
  return n_physicals;
}

const weft_vk_physical_t *weft__vk_physical(int ordinal) {
  pthread_once(&instance_once, init_instance);
  return ordinal >= 0 && ordinal < n_physicals ? &physicals[ordinal] : NULL;
}

VkInstance weft__vk_instance(void) { return instance; }

void weft__vk_instance_shutdown(void) {
  pthread_mutex_lock(&instance_lock);
  if (instance != VK_NULL_HANDLE && weft__vkf.DestroyInstance != NULL)
    weft__vkf.DestroyInstance(instance, NULL);
  instance = VK_NULL_HANDLE;
  /* The physical device records stay: closed devices still point at them. */
  n_physicals = 0;
  why_no_devices = "the Vulkan backend was shut down";
  /* libvulkan stays loaded: drivers may keep threads alive past vkDestroyInstance, and
   * unloading their code under them would crash the process at exit. */
  pthread_mutex_unlock(&instance_lock);
}
