/* A plugin built against a newer minor of the ABI than this core provides: the loader must
 * refuse it (it may use host entries this core lacks), naming both versions. */
#include "weft/plugin.h"

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)host;
  (void)reg;
  (void)state;
  return NULL;
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t),
    WEFT_ABI_MAJOR,
    WEFT_ABI_MINOR + 1,
    "future-minor",
    "9.9",
    init,
    NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
