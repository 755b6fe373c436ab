/* A plugin whose op carries a gradient program that uses an op nobody registered: the loader
 * must refuse the plugin at load time, naming the op, the line and the unknown op. */
#include "weft/plugin.h"

static const char *const inputs[] = {"x: float", NULL};
static const char *const outputs[] = {"y: float", NULL};

static const weft_op_def_t op = {
    .struct_size = sizeof(weft_op_def_t),
    .name = "BadGradientOp",
    .inputs = inputs,
    .outputs = outputs,
    .gradient = "t = Neg(x)\ndx = NoSuchOp(dy, t)\n",
};

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)host;
  (void)state;
  return reg->register_op(reg->ctx, &op);
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t),
    WEFT_ABI_MAJOR,
    WEFT_ABI_MINOR,
    "sdk-bad-gradient",
    "1.0",
    init,
    NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
