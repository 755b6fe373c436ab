/* A plugin built for a future ABI major version: the loader must refuse it naming both versions. */
#include "weft/plugin.h"

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)host;
  (void)reg;
  (void)state;
  return NULL;
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t), WEFT_ABI_MAJOR + 1, 0, "future", "9.9", init, NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
