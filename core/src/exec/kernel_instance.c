/* Kernel instances: one per (node, session), created once through the kernel's optional create()
 * and reused by every step, so kernels can keep state such as a random generator's position. */
#include "exec_internal.h"

weft_status_t *weft__kernel_instance_new(const weft_node_t *node, const weft__kernel_t *kernel,
                                         weft__device_t *device, weft__kernel_instance_t **out) {
  weft__kernel_instance_t *inst = g_new0(weft__kernel_instance_t, 1);
  inst->kernel = kernel;
  inst->device = device;
  inst->state = kernel->def.user_data;
  g_mutex_init(&inst->attr_cache_lock);
  if (kernel->def.create) {
    void *state = NULL;
    weft_status_t *st = kernel->def.create(weft__host(), node->attrs, kernel->def.user_data, &state);
    if (st) {
      g_mutex_clear(&inst->attr_cache_lock);
      g_free(inst);
      return weft_status_prefix(st, "Could not create the %s kernel for node '%s' (%s)",
                                kernel->def.device_type, node->name, node->op_name);
    }
    inst->state = state;
    inst->has_state = true;
  }
  *out = inst;
  return NULL;
}

void weft__kernel_instance_free(weft__kernel_instance_t *inst) {
  if (!inst) return;
  if (inst->has_state && inst->kernel->def.destroy) inst->kernel->def.destroy(inst->state);
  weft_tensor_unref(inst->attr_cache_value);
  g_mutex_clear(&inst->attr_cache_lock);
  g_free(inst);
}
