/* A plugin built against ABI 1.0 (tests/plugins/sdk/abi_v1_0.h, the frozen 1.0 header): its op
 * definition, backend and registrar structs are the smaller 1.0 ones. tests/test_sdk.c loads it
 * into a core of a newer minor and runs its op on its own device and on the CPU: old plugins must
 * keep loading and working.
 *
 *   OldMinorScale(x: float) -> y: float, attr factor: float = 2.0     y = factor * x
 *   device type OLDDEV: one cpu-like device whose memory is malloc'ed host memory */
#include <stdlib.h>
#include <string.h>

#include "abi_v1_0.h"

static const weft10_host_t *host;

static weft_status_t *scale_shape(weft10_shape_ctx_t *ctx) {
  int64_t dims[WEFT_MAX_RANK];
  int rank = host->shape_input(ctx, 0, dims);
  return host->shape_set_output(ctx, 0, rank, dims);
}

static weft_status_t *scale(weft10_kernel_ctx_t *ctx, void *state) {
  (void)state;
  float factor = 0;
  weft_status_t *st = host->attr_float(host->kernel_attrs(ctx), "factor", &factor);
  if (st) return st;
  weft10_tensor_view_t x, y;
  memset(&x, 0, sizeof x);
  memset(&y, 0, sizeof y);
  x.struct_size = y.struct_size = sizeof x;
  if ((st = host->kernel_input(ctx, 0, &x))) return st;
  if ((st = host->kernel_allocate_output(ctx, 0, WEFT_DT_FLOAT, x.rank, x.dims, &y))) return st;
  for (int64_t i = 0; i < x.num_elements; i++)
    ((float *)y.data)[i] = factor * ((const float *)x.data)[i];
  return NULL;
}

static int device_count(void *state, const char **why) {
  (void)state;
  (void)why;
  return 1;
}

static weft_status_t *device_properties(void *state, int ordinal, weft10_device_props_t *out) {
  (void)state;
  (void)ordinal;
  size_t size = out->struct_size;
  memset(out, 0, size < sizeof *out ? size : sizeof *out);
  out->struct_size = size;
  strcpy(out->description, "a device from an ABI 1.0 plugin");
  out->host_accessible = 1;
  return NULL;
}

static weft_status_t *dev_alloc(void *device, size_t nbytes, void **ptr) {
  (void)device;
  *ptr = nbytes ? malloc(nbytes) : NULL;
  return (nbytes && !*ptr) ? host->status_new(WEFT_RESOURCE_EXHAUSTED, "OLDDEV: out of memory")
                           : NULL;
}

static void dev_free(void *device, void *ptr) {
  (void)device;
  free(ptr);
}

static weft_status_t *dev_copy(void *device, void *dst, const void *src, size_t nbytes) {
  (void)device;
  memmove(dst, src, nbytes);
  return NULL;
}

static const weft10_backend_t backend = {
    sizeof(weft10_backend_t),
    "OLDDEV",
    WEFT10_DEVICE_CPU_LIKE,
    -10,
    NULL,
    device_count,
    device_properties,
    NULL,
    NULL,
    dev_alloc,
    dev_free,
    dev_copy,
    dev_copy,
    dev_copy,
    NULL,
    NULL,
    NULL,
};

static const char *const inputs[] = {"x: float", NULL};
static const char *const outputs[] = {"y: float", NULL};
static const char *const attrs[] = {"factor: float = 2.0", NULL};
static const weft10_op_def_t op = {
    sizeof(weft10_op_def_t), "OldMinorScale", inputs, outputs, attrs, 0, scale_shape,
};

static weft_status_t *init(const weft10_host_t *h, const weft10_registrar_t *reg, void **state) {
  (void)state;
  host = h;
  weft_status_t *st = reg->register_backend(reg->ctx, &backend);
  if (!st) st = reg->register_op(reg->ctx, &op);
  const char *devices[] = {"CPU", "OLDDEV"};
  for (int i = 0; i < 2 && !st; i++) {
    weft10_kernel_def_t k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    k.op = "OldMinorScale";
    k.device_type = devices[i];
    k.compute = scale;
    st = reg->register_kernel(reg->ctx, &k);
  }
  return st;
}

static const weft10_plugin_info_t info = {
    sizeof(weft10_plugin_info_t),
    WEFT10_ABI_MAJOR,
    WEFT10_ABI_MINOR,
    "old-minor",
    "1.0",
    init,
    NULL,
};

WEFT10_PLUGIN_EXPORT const weft10_plugin_info_t *weft_plugin_entry(void);
const weft10_plugin_info_t *weft_plugin_entry(void) { return &info; }
