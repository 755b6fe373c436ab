/* A kernel-set plugin whose kernel constrains an attr ("T") that its own op, registered by the
 * same init(), does not have: refused as a whole, like a kernel for an unknown op. The op is
 * staged, not yet in the registry, when the kernel is checked: the loader must look there. */
#include "weft/plugin.h"

static const char *const inputs[] = {"x: float", NULL};
static const char *const outputs[] = {"y: float", NULL};

static const weft_op_def_t op = {
    .struct_size = sizeof(weft_op_def_t),
    .name = "BrokenKernelAttrOp",
    .inputs = inputs,
    .outputs = outputs,
};

static weft_status_t *compute(weft_kernel_ctx_t *ctx, void *state) {
  (void)ctx;
  (void)state;
  return NULL;
}

static const weft_dtype_t float_only[] = {WEFT_DT_FLOAT};
static const weft_type_constraint_t t_constraint = {"T", float_only, 1};

static weft_status_t *init(const weft_host_t *host, const weft_registrar_t *reg, void **state) {
  (void)state;
  weft_status_t *st = reg->register_op(reg->ctx, &op);
  if (st) return st;
  weft_kernel_def_t k = {0};
  k.struct_size = sizeof(k);
  k.op = "BrokenKernelAttrOp";
  k.device_type = "CPU";
  k.constraints = &t_constraint;
  k.n_constraints = 1;
  k.compute = compute;
  st = reg->register_kernel(reg->ctx, &k);
  if (st) host->status_free(st); /* ignored on purpose: the loader must refuse it anyway */
  return NULL;
}

static const weft_plugin_info_t info = {
    sizeof(weft_plugin_info_t), WEFT_ABI_MAJOR, WEFT_ABI_MINOR, "kernelattr", "0.1", init, NULL,
};

WEFT_PLUGIN_EXPORT const weft_plugin_info_t *weft_plugin_entry(void);
const weft_plugin_info_t *weft_plugin_entry(void) { return &info; }
