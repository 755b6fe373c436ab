/* SIMACC: a vendor backend plugin built out of tree against the Weft SDK (docs/sdk.md). It
 * registers a new device type, "SIMACC", a host-simulated accelerator: its memory is separate host
 * memory that Weft never reads directly (host_accessible = 0, device pointers are opaque
 * handles), so every transfer between the host and the device is a real copy through this
 * backend, exactly as with a GPU. Kernels (simacc_kernels.c) cover a handful of ops; a graph that
 * needs more falls back to the CPU with soft placement.
 *
 * SIMACC_DEVICES=N in the environment sets how many devices it reports (default 1, at most 8;
 * 0 shows how a backend without devices is reported). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simacc.h"

#define SIMACC_MAX_DEVICES 8
#define SIMACC_MEMORY_BYTES (512ull << 20) /* what each simulated device "has" */

const weft_host_t *simacc_host;

struct simacc_device {
  int ordinal;
  pthread_mutex_t lock;
  uint64_t limit; /* bytes the session's memory fraction allows */
  uint64_t in_use;
};

static int device_count(void *backend_state, const char **why_none) {
  (void)backend_state;
  const char *env = getenv("SIMACC_DEVICES");
  int n = env && *env ? atoi(env) : 1;
  if (n < 0) n = 0;
  if (n > SIMACC_MAX_DEVICES) n = SIMACC_MAX_DEVICES;
  if (n == 0 && why_none) *why_none = "SIMACC_DEVICES=0 in the environment";
  return n;
}

static weft_status_t *device_properties(void *backend_state, int ordinal,
                                        weft_device_props_t *out) {
  (void)backend_state;
  /* Filled locally, then copied up to the caller's struct_size: an older core has a smaller
   * struct and gets only the fields it knows. */
  weft_device_props_t p;
  memset(&p, 0, sizeof p);
  snprintf(p.description, sizeof p.description, "SIMACC host-simulated accelerator #%d", ordinal);
  p.memory_bytes = SIMACC_MEMORY_BYTES;
  snprintf(p.compute_capability, sizeof p.compute_capability, "sim 1.0");
  snprintf(p.bus_id, sizeof p.bus_id, "sim:%02d", ordinal);
  p.host_accessible = 0;
  size_t n = out->struct_size < sizeof p ? out->struct_size : sizeof p;
  p.struct_size = out->struct_size;
  memcpy(out, &p, n);
  return NULL;
}

static weft_status_t *device_open(void *backend_state, int ordinal,
                                  const weft_device_options_t *opts, void **device) {
  (void)backend_state;
  simacc_device_t *d = calloc(1, sizeof *d);
  if (!d)
    return simacc_host->status_new(WEFT_RESOURCE_EXHAUSTED, "SIMACC:%d: out of host memory",
                                   ordinal);
  d->ordinal = ordinal;
  pthread_mutex_init(&d->lock, NULL);
  double fraction =
      opts && opts->memory_fraction > 0 && opts->memory_fraction <= 1 ? opts->memory_fraction : 1.0;
  d->limit = (uint64_t)(fraction * (double)SIMACC_MEMORY_BYTES);
  *device = d;
  return NULL;
}

static void device_close(void *device) {
  simacc_device_t *d = device;
  if (!d) return;
  pthread_mutex_destroy(&d->lock);
  free(d);
}

static weft_status_t *dev_alloc(void *device, size_t nbytes, void **ptr) {
  simacc_device_t *d = device;
  *ptr = NULL;
  if (nbytes == 0) return NULL;
  pthread_mutex_lock(&d->lock);
  bool fits = d->in_use + nbytes <= d->limit;
  if (fits) d->in_use += nbytes;
  uint64_t in_use = d->in_use, limit = d->limit;
  pthread_mutex_unlock(&d->lock);
  if (!fits)
    return simacc_host->status_new(WEFT_RESOURCE_EXHAUSTED,
                                   "SIMACC:%d: out of device memory allocating %zu bytes (%llu of "
                                   "%llu bytes in use)",
                                   d->ordinal, nbytes, (unsigned long long)in_use,
                                   (unsigned long long)limit);
  simacc_buf_t *b = calloc(1, sizeof *b);
  unsigned char *bytes = malloc(nbytes);
  if (!b || !bytes) {
    free(b);
    free(bytes);
    pthread_mutex_lock(&d->lock);
    d->in_use -= nbytes;
    pthread_mutex_unlock(&d->lock);
    return simacc_host->status_new(WEFT_RESOURCE_EXHAUSTED,
                                   "SIMACC:%d: out of host memory allocating %zu bytes", d->ordinal,
                                   nbytes);
  }
  b->magic = SIMACC_BUF_MAGIC;
  b->size = nbytes;
  b->device = d;
  b->bytes = bytes;
  *ptr = b;
  return NULL;
}

static void dev_free(void *device, void *ptr) {
  simacc_device_t *d = device;
  simacc_buf_t *b = ptr;
  if (!b || b->magic != SIMACC_BUF_MAGIC) return;
  pthread_mutex_lock(&d->lock);
  d->in_use -= b->size;
  pthread_mutex_unlock(&d->lock);
  b->magic = 0; /* a use after free shows as "not a SIMACC buffer" */
  free(b->bytes);
  free(b);
}

/* The buffer behind a device pointer, checked against the bytes a copy wants. */
static weft_status_t *checked(simacc_device_t *d, const void *ptr, size_t nbytes, const char *what,
                              simacc_buf_t **out) {
  simacc_buf_t *b = (simacc_buf_t *)ptr;
  if (!b || b->magic != SIMACC_BUF_MAGIC)
    return simacc_host->status_new(WEFT_INTERNAL, "SIMACC:%d: %s: %p is not a live SIMACC buffer",
                                   d->ordinal, what, ptr);
  if (nbytes > b->size)
    return simacc_host->status_new(WEFT_INTERNAL,
                                   "SIMACC:%d: %s of %zu bytes overruns a %zu-byte buffer",
                                   d->ordinal, what, nbytes, b->size);
  *out = b;
  return NULL;
}

static weft_status_t *copy_to_device(void *device, void *dst, const void *host_src, size_t nbytes) {
  if (nbytes == 0) return NULL;
  simacc_buf_t *b = NULL;
  weft_status_t *st = checked(device, dst, nbytes, "copy to device", &b);
  if (st) return st;
  memcpy(b->bytes, host_src, nbytes);
  return NULL;
}

static weft_status_t *copy_from_device(void *device, void *host_dst, const void *src,
                                       size_t nbytes) {
  if (nbytes == 0) return NULL;
  simacc_buf_t *b = NULL;
  weft_status_t *st = checked(device, src, nbytes, "copy from device", &b);
  if (st) return st;
  memcpy(host_dst, b->bytes, nbytes);
  return NULL;
}

static weft_status_t *copy_device_to_device(void *device, void *dst, const void *src,
                                            size_t nbytes) {
  if (nbytes == 0) return NULL;
  simacc_buf_t *a = NULL, *b = NULL;
  weft_status_t *st = checked(device, dst, nbytes, "device-to-device copy", &a);
  if (!st) st = checked(device, src, nbytes, "device-to-device copy", &b);
  if (st) return st;
  memmove(a->bytes, b->bytes, nbytes);
  return NULL;
}

/* Kernels run synchronously on the calling thread: nothing is ever in flight. */
static weft_status_t *synchronize(void *device) {
  (void)device;
  return NULL;
}

static weft_status_t *memory_usage(void *device, uint64_t *in_use, uint64_t *limit) {
  simacc_device_t *d = device;
  pthread_mutex_lock(&d->lock);
  *in_use = d->in_use;
  *limit = d->limit;
  pthread_mutex_unlock(&d->lock);
  return NULL;
}

void *simacc_bytes(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *view, weft_status_t **st) {
  *st = NULL;
  if (view->nbytes == 0) return NULL;
  simacc_buf_t *b = view->data;
  if (!b || b->magic != SIMACC_BUF_MAGIC || view->nbytes > b->size) {
    *st = simacc_host->status_new(WEFT_INTERNAL,
                                  "SIMACC kernel for '%s': a tensor of %zu bytes "
                                  "is not in a SIMACC buffer",
                                  simacc_host->kernel_node_name(ctx), view->nbytes);
    return NULL;
  }
  return b->bytes;
}

/* gpu-like, priority 10: below Vulkan (50) and CUDA (100), so /gpu:0 keeps meaning those; a graph
 * reaches SIMACC by naming /device:SIMACC:N. */
static const weft_backend_t simacc_backend = {
    .struct_size = sizeof(weft_backend_t),
    .device_type = SIMACC_DEVICE_TYPE,
    .device_class = WEFT_DEVICE_GPU_LIKE,
    .priority = 10,
    .backend_state = NULL,
    .device_count = device_count,
    .device_properties = device_properties,
    .device_open = device_open,
    .device_close = device_close,
    .alloc = dev_alloc,
    .free = dev_free,
    .copy_to_device = copy_to_device,
    .copy_from_device = copy_from_device,
    .copy_device_to_device = copy_device_to_device,
    .synchronize = synchronize,
    .memory_usage = memory_usage,
    .backend_shutdown = NULL,
    .device_services = NULL, /* nothing for other plugins' kernels beyond the host's copies */
};

static weft_status_t *simacc_init(const weft_host_t *host, const weft_registrar_t *reg,
                                  void **plugin_state) {
  *plugin_state = NULL;
  WEFT_PLUGIN_INIT(host, reg, "simacc plugin");
  simacc_host = host;
  weft_status_t *st = reg->register_backend(reg->ctx, &simacc_backend);
  if (!st) st = simacc_register_kernels(reg);
  return st;
}

static const weft_plugin_info_t simacc_info = {
    .struct_size = sizeof(weft_plugin_info_t),
    .abi_major = WEFT_ABI_MAJOR,
    .abi_minor = WEFT_ABI_MINOR,
    .name = "simacc",
    .version = "1.0.0",
    .init = simacc_init,
    .shutdown = NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void) { return &simacc_info; }
