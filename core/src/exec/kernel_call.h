/* kernel_call.h: running one node's kernel, shared by the plain executor (executor.c) and the
 * control-flow executor (frames.c): binding its inputs, building its weft_kernel_ctx, calling
 * compute and checking what it set. Static inline: the plain executor is the hot path and pays
 * nothing over its own code. The cold parts (fetches, step stats) are in kernel_call.c. */
#ifndef WEFT_EXEC_KERNEL_CALL_H
#define WEFT_EXEC_KERNEL_CALL_H

#include "exec_internal.h"

static inline void weft__value_clear(weft__value_t *v) {
  weft_tensor_unref(v->tensor);
  weft__variable_unref(v->ref);
  v->tensor = NULL;
  v->ref = NULL;
}

static inline const char *weft__kinst_device_name(const weft__kernel_instance_t *kinst) {
  return (kinst && kinst->device) ? kinst->device->name : "<no device>";
}

/* Binds input i of a node: dereferences a ref where the kernel wants a value (is_ref false) and
 * moves the tensor to where the kernel reads it (host memory where in_host). */
static inline weft_status_t *weft__bind_input(const weft_node_t *node,
                                              const weft__kernel_instance_t *kinst, bool is_ref,
                                              bool in_host, weft__value_t *v, int i) {
  if (is_ref) {
    if (!v->ref) {
      return weft_status_new(WEFT_INVALID_ARGUMENT, "Input %d of node '%s' (%s) must be a reference",
                             i, node->name, node->op_name);
    }
    return NULL;
  }
  if (v->ref) {
    weft__variable_t *var = v->ref;
    g_rec_mutex_lock(&var->lock);
    weft_tensor_t *t = var->value ? weft_tensor_ref(var->value) : NULL;
    g_rec_mutex_unlock(&var->lock);
    if (!t) {
      return weft_status_new(WEFT_FAILED_PRECONDITION,
                             "Attempting to use uninitialized value %s (input %d of node '%s')",
                             var->name, i, node->name);
    }
    v->ref = NULL;
    weft__variable_unref(var);
    v->tensor = t;
  }
  if (!v->tensor) {
    return weft_status_new(WEFT_INTERNAL, "Input %d of node '%s' has no value", i, node->name);
  }
  weft__device_t *want = kinst ? kinst->device : NULL;
  if (in_host || (want && want->props.host_accessible)) want = NULL;
  weft__device_t *have = v->tensor->buffer->device;
  bool have_host = weft__buffer_host_accessible(v->tensor->buffer);
  if ((want == NULL && have_host) || want == have) return NULL;
  weft_tensor_t *moved = NULL;
  weft_status_t *st = weft__tensor_to_device(v->tensor, want, &moved);
  if (st) return st;
  weft_tensor_unref(v->tensor);
  v->tensor = moved;
  return NULL;
}

/* What one kernel call needs from its step. */
typedef struct weft__kernel_call_env {
  weft__threadpool_t *intra_pool;
  weft__resource_mgr_t *resources;
  weft__step_resources_t *step_resources;
  /* The frame instance and iteration the node runs in (frames.c); NULL and 0 in the root. */
  const char *frame_key;
  int64_t iteration;
} weft__kernel_call_env_t;

/* Binds the node's inputs (is_ref and in_host per input), runs its kernel into outs (n_outputs,
 * zeroed) and checks that it set every output. ctx_instance is what the kernel context offers
 * as its instance (attr caches), or NULL. */
static inline weft_status_t *weft__kernel_call(const weft_node_t *node,
                                               weft__kernel_instance_t *kinst,
                                               weft__kernel_instance_t *ctx_instance,
                                               const bool *is_ref, const bool *in_host,
                                               weft__value_t *inputs, weft__value_t *outs,
                                               const weft__kernel_call_env_t *env) {
  weft_status_t *st = NULL;
  for (int i = 0; i < node->n_inputs && !st; i++)
    st = weft__bind_input(node, kinst, is_ref[i], in_host[i], &inputs[i], i);
  if (!st && !kinst) {
    st = weft_status_new(WEFT_INTERNAL, "No kernel for node '%s' (%s)", node->name, node->op_name);
  }
  if (st) return st;
  weft_kernel_ctx_t ctx = {0};
  ctx.node = node;
  ctx.kernel = kinst->kernel;
  ctx.device = kinst->device;
  ctx.kernel_state = kinst->state;
  ctx.instance = ctx_instance;
  ctx.inputs = inputs;
  ctx.outputs = outs;
  ctx.intra_pool = env->intra_pool;
  ctx.resources = env->resources;
  ctx.step_resources = env->step_resources;
  ctx.frame_key = env->frame_key;
  ctx.iteration = env->iteration;
  st = kinst->kernel->def.compute(&ctx, kinst->state);
  if (!st) st = weft__kernel_ctx_take_status(&ctx);
  else weft_status_free(weft__kernel_ctx_take_status(&ctx));
  if (ctx.scratch) g_ptr_array_free(ctx.scratch, TRUE);
  for (int o = 0; o < node->n_outputs && !st; o++) {
    if (!outs[o].tensor && !outs[o].ref) {
      st = weft_status_new(WEFT_INTERNAL, "The %s kernel did not set output %d",
                           kinst->kernel->def.device_type, o);
    }
  }
  return st;
}

/* Where each fetch of a step comes from, as both executors plan it: *out_from_feed[f] is the feed
 * that answers fetch f directly, or -1; *out_source[f] is then the index (in index_of, 1-based
 * values) of the node that produces it, or -1. Both arrays are new, of max(n_fetches, 1). */
void weft__plan_fetch_sources(const weft__executor_params_t *p, GHashTable *index_of,
                              int **out_from_feed, int **out_source);

/* A fetched value as the caller gets it: a new host reference in *out, or the status to record
 * (an uninitialised variable, a failed copy to host). */
weft_status_t *weft__fetch_to_host(const weft__value_t *v, const weft_node_t *node,
                                   weft_tensor_t **out);

/* Traced steps only: adds the record of one node that ran to stats, measured from start_real /
 * start_mono (around input binding and the kernel: what the node cost its thread). */
void weft__record_node_stats(weft_run_metadata_t *stats, const weft_node_t *node,
                             const char *device, gint64 start_real, gint64 start_mono,
                             const weft__value_t *outs);

#endif /* WEFT_EXEC_KERNEL_CALL_H */
