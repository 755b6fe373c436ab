/* A plugin that registers a conformance case whose attrs do not fit its op (Relu has no attr
 * "alpha"): the loader must refuse the plugin, naming the case, the op and the attr. */
#include "weft/plugin.h"

static weft_status_t *reference(const weft_host_t *host, const weft_attrs_t *attrs,
                                const weft_case_array_t *in, size_t n_in, weft_case_array_t *out,
                                size_t n_out, void *user_data) {
  (void)host, (void)attrs, (void)in, (void)n_in, (void)out, (void)n_out, (void)user_data;
  return NULL;
}

static const weft_dtype_t types[] = {WEFT_DT_FLOAT};
static const char *const attrs[] = {"alpha=0.5", NULL};
static const weft_case_input_t input = {
    sizeof(weft_case_input_t), WEFT_DT_INVALID, 1, {8}, WEFT_CASE_GEN_UNIFORM, -1, 1, 0};
static const weft_conformance_case_t bad = {
    .struct_size = sizeof(weft_conformance_case_t),
    .op = "Relu",
    .name = "with_alpha",
    .dtypes = types,
    .n_dtypes = 1,
    .attrs = attrs,
    .inputs = &input,
    .n_inputs = 1,
    .reference = reference,
};

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)host;
  (void)state;
  return reg->register_conformance_case(reg->ctx, &bad);
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t), WEFT_ABI_MAJOR, WEFT_ABI_MINOR, "sdk-bad-case", "1.0", init, NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
