/* A kernel-set plugin that registers a kernel for an op nobody defined: refused as a whole. */
#include "weft/plugin.h"

static weft_status_t *compute(weft_kernel_ctx_t *ctx, void *state) {
  (void)ctx;
  (void)state;
  return NULL;
}

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)host;
  (void)state;
  weft_kernel_def_t k = {0};
  k.struct_size = sizeof(k);
  k.op = "NoSuchOpAnywhere";
  k.device_type = "CPU";
  k.compute = compute;
  weft_status_t *st = reg->register_kernel(reg->ctx, &k);
  if (st) host->status_free(st); /* a careless plugin ignores the error; the loader does not */
  return NULL;
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t), WEFT_ABI_MAJOR, WEFT_ABI_MINOR, "unknownop", "0.1", init, NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
