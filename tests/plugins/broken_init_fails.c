/* A plugin whose init() fails after registering a backend: the loader must drop what it
 * registered and report the plugin's own message. */
#include "weft/plugin.h"

static int count(void *state, const char **why) {
  (void)state;
  (void)why;
  return 1;
}

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)state;
  weft_backend_t be = {0};
  be.struct_size = sizeof(be);
  be.device_type = "FLAKY";
  be.device_count = count;
  /* Incomplete on purpose: the registrar refuses it, and the plugin fails anyway. */
  weft_status_t *st = reg->register_backend(reg->ctx, &be);
  if (st) host->status_free(st);
  return host->status_new(WEFT_UNAVAILABLE, "device probe failed: no FLAKY hardware on bus %d", 3);
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t), WEFT_ABI_MAJOR, WEFT_ABI_MINOR, "flaky", "0.1", init, NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
