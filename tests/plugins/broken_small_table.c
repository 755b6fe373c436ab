/* A plugin whose table is smaller than any ABI version's (a corrupt or foreign struct). */
#include "weft/plugin.h"

static const weft_plugin_info_t info = {8, WEFT_ABI_MAJOR, 0, "tiny", "0", NULL, NULL};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
