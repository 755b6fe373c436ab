/* vk_pipeline.c: the compute pipelines of a Vulkan device and the one path every dispatch takes.
 * The embedded shaders' pipelines are created on first use and cached (the specialized ones, one
 * per op and dtype); descriptor sets come from the current slot's pools. Other plugins' pipelines
 * (vk_services.c) are made and recorded by the same two functions. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_device.h"

#define H weft__vk_host

#define SETS_PER_POOL 256u

/* ---------------------------------------------------------------------------------------------
 * Pipelines and dispatch */

/* A compute pipeline over the device's layout from SPIR-V whose entry point is "main". On failure
 * returns the VkResult and names the call that failed in *failed (the callers word the error:
 * a built-in shader is the plugin's fault, an SDK user's module is the caller's). */
VkResult weft__vk_create_pipeline(weft_vk_device_t *dev, const uint32_t *code, size_t size,
                                  const VkSpecializationInfo *spec, VkPipeline *out,
                                  const char **failed) {
  *out = VK_NULL_HANDLE;
  VkShaderModuleCreateInfo mi;
  memset(&mi, 0, sizeof mi);
  mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mi.codeSize = size;
  mi.pCode = code;
  VkShaderModule module;
  VkResult r = weft__vkf.CreateShaderModule(dev->device, &mi, NULL, &module);
  if (r != VK_SUCCESS) {
    *failed = "vkCreateShaderModule";
    return r;
  }
  VkComputePipelineCreateInfo pi;
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = "main";
  pi.stage.pSpecializationInfo = spec;
  pi.layout = dev->pipe_layout;
  r = weft__vkf.CreateComputePipelines(dev->device, dev->pipe_cache, 1, &pi, NULL, out);
  weft__vkf.DestroyShaderModule(dev->device, module, NULL);
  if (r != VK_SUCCESS) {
    *out = VK_NULL_HANDLE;
    *failed = "vkCreateComputePipelines";
    return r;
  }
  weft__vk_arm_exit_handler();
  return VK_SUCCESS;
}

/* The shaders whose op and dtype are specialization constants (see weft__vk_dispatch_op). */
static bool specialized(weft_vk_shader_t shader) {
  return shader == VK_SH_UNARY || shader == VK_SH_BINARY || shader == VK_SH_REDUCE_ROWS ||
         shader == VK_SH_REDUCE_COLS;
}

/* The pipeline of `shader`; with spec (op and dtype, for a specialized shader) the pipeline of
 * that pair. Caller holds dev->lock. */
static weft_status_t *pipeline(weft_vk_device_t *dev, weft_vk_shader_t shader,
                               const uint32_t spec[2], VkPipeline *out) {
  if (spec == NULL && dev->pipelines[shader] != VK_NULL_HANDLE) {
    *out = dev->pipelines[shader];
    return NULL;
  }
  for (size_t i = 0; spec != NULL && i < dev->n_spec_pipes; i++) {
    const struct spec_pipe *sp = &dev->spec_pipes[i];
    if (sp->shader == shader && sp->op == spec[0] && sp->dtype == spec[1]) {
      *out = sp->pipe;
      return NULL;
    }
  }
  const weft_vk_spirv_t *code = weft__vk_shader_code(shader);
  if (code == NULL)
    return weft__vk_dev_status(dev, WEFT_INTERNAL,
                               "shader '%s' is missing from this build of the plugin",
                               weft__vk_shader_name(shader));
  static const VkSpecializationMapEntry entries[2] = {{0, 0, sizeof(uint32_t)},
                                                      {1, sizeof(uint32_t), sizeof(uint32_t)}};
  VkSpecializationInfo info = {2, entries, 2 * sizeof(uint32_t), spec};
  struct spec_pipe *grown = NULL;
  if (spec != NULL) {
    grown = realloc(dev->spec_pipes, (dev->n_spec_pipes + 1) * sizeof *grown);
    if (grown == NULL)
      return weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
    dev->spec_pipes = grown;
  }
  const char *failed = NULL;
  VkPipeline made = VK_NULL_HANDLE;
  VkResult r =
      weft__vk_create_pipeline(dev, code->code, code->size, spec ? &info : NULL, &made, &failed);
  if (r != VK_SUCCESS)
    return weft__vk_dev_status(dev, WEFT_INTERNAL, "%s(%s): %s", failed, code->name,
                               weft__vk_result_name(r));
  if (spec != NULL)
    dev->spec_pipes[dev->n_spec_pipes++] = (struct spec_pipe){shader, spec[0], spec[1], made};
  else
    dev->pipelines[shader] = made;
  *out = made;
  return NULL;
}

static weft_status_t *descriptor_set(weft_vk_device_t *dev, weft_vk_slot_t *s,
                                     VkDescriptorSet *out) {
  for (;;) {
    bool fresh = false;
    if (s->pool_at == s->n_pools) {
      VkDescriptorPool *grown = realloc(s->pools, (s->n_pools + 1) * sizeof *grown);
      if (grown == NULL)
        return weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "out of host memory");
      s->pools = grown;
      VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   SETS_PER_POOL * VK_MAX_BINDINGS};
      VkDescriptorPoolCreateInfo ci;
      memset(&ci, 0, sizeof ci);
      ci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      ci.maxSets = SETS_PER_POOL;
      ci.poolSizeCount = 1;
      ci.pPoolSizes = &size;
      VkResult r = weft__vkf.CreateDescriptorPool(dev->device, &ci, NULL, &s->pools[s->n_pools]);
      if (r != VK_SUCCESS)
        return weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "vkCreateDescriptorPool: %s",
                                   weft__vk_result_name(r));
      s->n_pools++;
      fresh = true;
    }
    VkDescriptorSetAllocateInfo ai;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = s->pools[s->pool_at];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &dev->set_layout;
    VkResult r = weft__vkf.AllocateDescriptorSets(dev->device, &ai, out);
    if (r == VK_SUCCESS) return NULL;
    if (fresh || (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL))
      return weft__vk_dev_status(dev, WEFT_RESOURCE_EXHAUSTED, "vkAllocateDescriptorSets: %s",
                                 weft__vk_result_name(r));
    s->pool_at++;
  }
}

/* Under the lock: records `pipe` over the allocations mems[0..VK_MAX_BINDINGS) (NULL binds the
 * dummy), behind the command barrier. The one path every dispatch takes. */
weft_status_t *weft__vk_record_dispatch(weft_vk_device_t *dev, VkPipeline pipe, const void *push,
                                        uint32_t push_size, const weft_vk_mem_t *const *mems,
                                        uint32_t gx, uint32_t gy, uint32_t gz) {
  weft_vk_slot_t *s = NULL;
  VkDescriptorSet set = VK_NULL_HANDLE;
  weft_status_t *st = weft__vk_slot_open(dev, &s);
  if (st == NULL) st = descriptor_set(dev, s, &set);
  if (st != NULL) return st;
  VkDescriptorBufferInfo infos[VK_MAX_BINDINGS];
  VkDeviceSize max_range = dev->phys->props.limits.maxStorageBufferRange;
  for (int i = 0; i < VK_MAX_BINDINGS; i++) {
    const weft_vk_mem_t *m = mems[i] != NULL ? mems[i] : dev->dummy;
    infos[i].buffer = m->buffer;
    infos[i].offset = m->offset;
    infos[i].range = m->reserved < max_range ? m->reserved : max_range;
  }
  VkWriteDescriptorSet w;
  memset(&w, 0, sizeof w);
  w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
  w.dstSet = set;
  w.dstBinding = 0;
  w.descriptorCount = VK_MAX_BINDINGS;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = infos;
  weft__vkf.UpdateDescriptorSets(dev->device, 1, &w, 0, NULL);
  weft__vk_command_barrier(s);
  weft__vkf.CmdBindPipeline(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
  weft__vkf.CmdBindDescriptorSets(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, dev->pipe_layout, 0, 1,
                                  &set, 0, NULL);
  if (push_size > 0)
    weft__vkf.CmdPushConstants(s->cmd, dev->pipe_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size,
                               push);
  weft__vkf.CmdDispatch(s->cmd, gx, gy, gz);
  return weft__vk_after_record(dev, s);
}

static weft_status_t *dispatch(weft_vk_device_t *dev, weft_vk_shader_t shader,
                               const uint32_t spec[2], const void *push, uint32_t push_size,
                               void *const *bufs, int n_bufs, uint32_t gx, uint32_t gy,
                               uint32_t gz) {
  if (gx == 0 || gy == 0 || gz == 0) return NULL;
  if (push_size > VK_MAX_PUSH || push_size % 4 != 0 || n_bufs > VK_MAX_BINDINGS ||
      (int)shader < 0 || shader >= VK_SH_COUNT || specialized(shader) != (spec != NULL))
    return weft__vk_dev_status(
        dev, WEFT_INTERNAL, "bad dispatch of shader %d (%u push bytes, %d buffers%s)", (int)shader,
        push_size, n_bufs, spec != NULL ? ", op and dtype" : "");
  const weft_vk_mem_t *mems[VK_MAX_BINDINGS] = {NULL};
  for (int i = 0; i < n_bufs; i++) mems[i] = bufs[i];
  pthread_mutex_lock(&dev->lock);
  VkPipeline pipe = VK_NULL_HANDLE;
  weft_status_t *st =
      weft__vk_unusable(dev) ? weft__vk_lost_status(dev) : pipeline(dev, shader, spec, &pipe);
  if (st == NULL) st = weft__vk_record_dispatch(dev, pipe, push, push_size, mems, gx, gy, gz);
  pthread_mutex_unlock(&dev->lock);
  return st;
}

weft_status_t *weft__vk_dispatch(weft_vk_device_t *dev, weft_vk_shader_t shader, const void *push,
                                 uint32_t push_size, void *const *bufs, int n_bufs, uint32_t gx,
                                 uint32_t gy, uint32_t gz) {
  return dispatch(dev, shader, NULL, push, push_size, bufs, n_bufs, gx, gy, gz);
}

weft_status_t *weft__vk_dispatch_op(weft_vk_device_t *dev, weft_vk_shader_t shader, uint32_t op,
                                    uint32_t dtype, const void *push, uint32_t push_size,
                                    void *const *bufs, int n_bufs, uint32_t gx, uint32_t gy,
                                    uint32_t gz) {
  const uint32_t spec[2] = {op, dtype};
  return dispatch(dev, shader, spec, push, push_size, bufs, n_bufs, gx, gy, gz);
}
