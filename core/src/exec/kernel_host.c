/* The kernel context (weft_kernel_ctx_t) and the host table's entries that read it: inputs,
 * outputs, scratch, parallel-for, variables and references, device services. The executor builds
 * a context per kernel call; the plugin layer's table (weft__host) takes these entries from
 * here, registered when the library loads. */
#include "exec_internal.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Kernel context */

static const weft_attrs_t *host_kernel_attrs(weft_kernel_ctx_t *ctx) { return ctx->node->attrs; }
static const char *host_kernel_node_name(weft_kernel_ctx_t *ctx) { return ctx->node->name; }
static int host_kernel_num_inputs(weft_kernel_ctx_t *ctx) { return ctx->node->n_inputs; }
static int host_kernel_num_outputs(weft_kernel_ctx_t *ctx) { return ctx->node->n_outputs; }

weft_status_t *weft__kernel_error(weft_kernel_ctx_t *ctx, weft_code_t code, const char *fmt,
                                  ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  weft_status_t *st = weft_status_new(code, "node '%s': %s", ctx->node->name, msg);
  g_free(msg);
  return st;
}

static weft_status_t *bad_index(weft_kernel_ctx_t *ctx, const char *what, int index, int n) {
  return weft_status_new(WEFT_INVALID_ARGUMENT, "Kernel for '%s' (%s) asked for %s %d of %d",
                         ctx->node->name, ctx->node->op_name, what, index, n);
}

static weft_status_t *uninitialised(weft_kernel_ctx_t *ctx, const weft__variable_t *var) {
  return weft_status_new(WEFT_FAILED_PRECONDITION,
                         "Attempting to use uninitialized value %s (in node '%s')", var->name,
                         ctx->node->name);
}

static weft_status_t *host_kernel_input(weft_kernel_ctx_t *ctx, int index, weft_tensor_view_t *out) {
  if (index < 0 || index >= ctx->node->n_inputs)
    return bad_index(ctx, "input", index, ctx->node->n_inputs);
  weft__value_t *v = &ctx->inputs[index];
  if (v->tensor) {
    weft__tensor_fill_view(v->tensor, out);
    return NULL;
  }
  if (v->ref) {
    g_rec_mutex_lock(&v->ref->lock);
    weft_status_t *st = NULL;
    if (v->ref->value) weft__tensor_fill_view(v->ref->value, out);
    else st = uninitialised(ctx, v->ref);
    g_rec_mutex_unlock(&v->ref->lock);
    return st;
  }
  return weft_status_new(WEFT_INTERNAL, "Input %d of '%s' has no value", index, ctx->node->name);
}

/* Output memory goes where the kernel reads it: host memory for host-memory args and for devices
 * whose memory is host memory anyway (no backend round trip), else the device. */
static weft__device_t *output_placement(weft_kernel_ctx_t *ctx, int index) {
  if (!ctx->device || ctx->device->props.host_accessible) return NULL;
  if (ctx->kernel && weft__kernel_arg_in_host_memory(ctx->kernel, ctx->node, true, index)) return NULL;
  return ctx->device;
}

static weft_status_t *host_kernel_allocate_output(weft_kernel_ctx_t *ctx, int index,
                                                  weft_dtype_t dtype, int rank,
                                                  const int64_t *dims, weft_tensor_view_t *out) {
  const weft_node_t *node = ctx->node;
  if (index < 0 || index >= node->n_outputs) return bad_index(ctx, "output", index, node->n_outputs);
  if (weft__dtype_base(node->output_types[index]) != dtype) {
    return weft_status_new(WEFT_INTERNAL,
                           "Kernel for '%s' (%s) allocated output %d as %s; the node declares %s",
                           node->name, node->op_name, index, weft_dtype_name(dtype),
                           weft_dtype_name(weft__dtype_base(node->output_types[index])));
  }
  if (rank < 0 || rank > WEFT_MAX_RANK) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s): output rank %d is not supported",
                           node->name, node->op_name, rank);
  }
  for (int k = 0; k < rank; k++) {
    if (dims[k] < 0) {
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "Node '%s' (%s): output %d has negative dimension %" G_GINT64_FORMAT,
                             node->name, node->op_name, index, dims[k]);
    }
  }
  weft_tensor_t *t = NULL;
  weft_status_t *st = weft__tensor_alloc(output_placement(ctx, index), dtype, rank, dims, &t);
  if (st) return weft_status_prefix(st, "Node '%s' (%s) output %d", node->name, node->op_name, index);
  weft_tensor_unref(ctx->outputs[index].tensor);
  ctx->outputs[index].tensor = t;
  weft__tensor_fill_view(t, out);
  return NULL;
}

static weft_tensor_t *input_tensor(weft_kernel_ctx_t *ctx, int index) {
  weft__value_t *v = &ctx->inputs[index];
  if (v->tensor) return v->tensor;
  return v->ref ? v->ref->value : NULL;
}

static weft_status_t *host_kernel_forward_input(weft_kernel_ctx_t *ctx, int input, int output,
                                                int rank, const int64_t *dims) {
  const weft_node_t *node = ctx->node;
  if (input < 0 || input >= node->n_inputs) return bad_index(ctx, "input", input, node->n_inputs);
  if (output < 0 || output >= node->n_outputs)
    return bad_index(ctx, "output", output, node->n_outputs);
  weft__value_t *v = &ctx->inputs[input];
  if (v->ref) g_rec_mutex_lock(&v->ref->lock);
  weft_tensor_t *src = input_tensor(ctx, input);
  weft_status_t *st = NULL;
  if (!src) {
    st = v->ref ? uninitialised(ctx, v->ref)
                : weft_status_new(WEFT_INTERNAL, "Input %d of '%s' has no value", input, node->name);
  } else if (rank < 0 || rank > WEFT_MAX_RANK ||
             weft__shape_num_elements(rank, dims) != src->num_elements) {
    char *have = weft__shape_to_string(src->rank, src->dims);
    char *want = rank >= 0 && rank <= WEFT_MAX_RANK ? weft__shape_to_string(rank, dims)
                                                     : g_strdup("<bad rank>");
    st = weft_status_new(WEFT_INVALID_ARGUMENT,
                         "Node '%s' (%s): cannot view input %d of shape %s as shape %s (element "
                         "counts differ)", node->name, node->op_name, input, have, want);
    g_free(have);
    g_free(want);
  } else {
    /* An unchanged shape (Identity, Snapshot, a no-op Reshape) shares the input's tensor, as
     * tensors are never changed once made: one allocation less per forwarding node. */
    bool same = rank == src->rank && memcmp(dims, src->dims, sizeof *dims * (size_t)rank) == 0;
    weft_tensor_t *t = same ? weft_tensor_ref(src)
                            : weft__tensor_wrap(src->dtype, rank, dims, src->buffer);
    weft_tensor_unref(ctx->outputs[output].tensor);
    ctx->outputs[output].tensor = t;
  }
  if (v->ref) g_rec_mutex_unlock(&v->ref->lock);
  return st;
}

static weft_status_t *host_kernel_scratch(weft_kernel_ctx_t *ctx, size_t nbytes, void **out) {
  weft__buffer_t *b = NULL;
  weft__device_t *dev = (ctx->device && !ctx->device->props.host_accessible) ? ctx->device : NULL;
  weft_status_t *st = weft__buffer_new(dev, WEFT_DT_UINT8, (int64_t)nbytes, &b);
  if (st) return weft_status_prefix(st, "Node '%s' scratch memory", ctx->node->name);
  if (!ctx->scratch) ctx->scratch = g_ptr_array_new_with_free_func((GDestroyNotify)weft__buffer_unref);
  g_ptr_array_add(ctx->scratch, b);
  *out = b->data;
  return NULL;
}

static void *host_kernel_device(weft_kernel_ctx_t *ctx) {
  return ctx->device ? ctx->device->handle : NULL;
}

static int host_kernel_device_ordinal(weft_kernel_ctx_t *ctx) {
  return ctx->device ? ctx->device->ordinal : 0;
}

static void host_parallel_for(weft_kernel_ctx_t *ctx, int64_t total, int64_t cost_per_unit,
                              weft_range_fn fn, void *arg) {
  if (total <= 0) return;
  if (!ctx || !ctx->intra_pool) {
    fn(arg, 0, total);
    return;
  }
  weft__parallel_for(ctx->intra_pool, total, cost_per_unit, fn, arg);
}

static int host_kernel_num_threads(weft_kernel_ctx_t *ctx) {
  return (ctx && ctx->intra_pool) ? weft__threadpool_size(ctx->intra_pool) : 1;
}

static weft_status_t *host_string_assign(weft_kernel_ctx_t *ctx, const weft_tensor_view_t *tensor,
                                         int64_t index, const char *data, size_t len) {
  if (!tensor || tensor->dtype != WEFT_DT_STRING || index < 0 || index >= tensor->num_elements) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s': string_assign on a non-string tensor or index out of range",
                           ctx ? ctx->node->name : "?");
  }
  weft_string_t *s = &((weft_string_t *)tensor->data)[index];
  char *copy = g_malloc(len + 1);
  if (len) memcpy(copy, data, len);
  copy[len] = '\0';
  g_free(s->data);
  s->data = copy;
  s->len = len;
  return NULL;
}

static weft_status_t *host_kernel_output_from_attr(weft_kernel_ctx_t *ctx, int index,
                                                   const char *attr) {
  const weft_node_t *node = ctx->node;
  if (index < 0 || index >= node->n_outputs) return bad_index(ctx, "output", index, node->n_outputs);
  const weft__attr_value_t *v = weft__attrs_get(node->attrs, attr);
  if (!v || v->kind != WEFT_ATTR_TENSOR) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s) has no tensor attr '%s'",
                           node->name, node->op_name, attr);
  }
  weft__device_t *placement = output_placement(ctx, index);
  weft__kernel_instance_t *inst = ctx->instance;
  weft_tensor_t *t = NULL;
  if (inst != NULL) {
    g_mutex_lock(&inst->attr_cache_lock);
    if (inst->attr_cache_value != NULL && inst->attr_cache_source == v->u.tensor &&
        inst->attr_cache_placement == placement)
      t = weft_tensor_ref(inst->attr_cache_value);
    g_mutex_unlock(&inst->attr_cache_lock);
  }
  if (t == NULL) {
    weft_status_t *st = weft__tensor_to_device(v->u.tensor, placement, &t);
    if (st) return weft_status_prefix(st, "Node '%s' (%s)", node->name, node->op_name);
    /* Only a copy is worth keeping: a host output is the attr's own tensor already. */
    if (inst != NULL && t != v->u.tensor) {
      g_mutex_lock(&inst->attr_cache_lock);
      weft_tensor_unref(inst->attr_cache_value);
      inst->attr_cache_value = weft_tensor_ref(t);
      inst->attr_cache_source = v->u.tensor;
      inst->attr_cache_placement = placement;
      g_mutex_unlock(&inst->attr_cache_lock);
    }
  }
  /* The attr's own tensor (host memory): nothing writes a Const's value, so kernels downstream
   * may cache what they derive from it (kernel_input_constant). */
  if (t == v->u.tensor && t->buffer != NULL) weft__buffer_mark_constant(t->buffer);
  weft_tensor_unref(ctx->outputs[index].tensor);
  ctx->outputs[index].tensor = t;
  return NULL;
}

static uint64_t host_kernel_input_constant(weft_kernel_ctx_t *ctx, int index) {
  if (!ctx || index < 0 || index >= ctx->node->n_inputs) return 0;
  const weft__value_t *v = &ctx->inputs[index];
  /* A variable's value changes between steps, whatever buffer it holds now. */
  if (v->ref || !v->tensor || !v->tensor->buffer) return 0;
  return __atomic_load_n(&v->tensor->buffer->constant_id, __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------------------------------------
 * Variables and references */

static weft_status_t *host_kernel_variable(weft_kernel_ctx_t *ctx) {
  const weft_node_t *node = ctx->node;
  if (!ctx->resources) {
    return weft_status_new(WEFT_FAILED_PRECONDITION, "Node '%s' (%s) runs without a resource manager",
                           node->name, node->op_name);
  }
  const weft__attr_value_t *c = weft__attrs_get(node->attrs, "container");
  const weft__attr_value_t *s = weft__attrs_get(node->attrs, "shared_name");
  const char *container = (c && c->kind == WEFT_ATTR_STRING) ? c->u.s.data : "";
  const char *shared = (s && s->kind == WEFT_ATTR_STRING && s->u.s.len) ? s->u.s.data : node->name;
  weft__variable_t *var = weft__resource_mgr_variable(ctx->resources, ctx->device, container, shared);
  weft__variable_unref(ctx->outputs[0].ref);
  ctx->outputs[0].ref = var;
  return NULL;
}

static weft_status_t *ref_arg(weft_kernel_ctx_t *ctx, int index, weft__variable_t **out) {
  if (index < 0 || index >= ctx->node->n_inputs)
    return bad_index(ctx, "input", index, ctx->node->n_inputs);
  weft_tensor_t *t = ctx->inputs[index].tensor;
  if (!ctx->inputs[index].ref && t && t->dtype == WEFT_DT_STRING && t->rank == 0) {
    /* A resource handle reads as a reference to its variable (a ResourceApply* op running its
     * ref twin's kernel); the input holds the variable until the executor clears it. */
    WEFT_RETURN_IF_ERROR(weft__resource_handle_variable(ctx, index, &ctx->inputs[index].ref));
  }
  if (!ctx->inputs[index].ref) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Input %d of node '%s' (%s) is not a reference",
                           index, ctx->node->name, ctx->node->op_name);
  }
  *out = ctx->inputs[index].ref;
  return NULL;
}

/* Gives the variable a buffer nobody else holds, so in-place updates never change a value some
 * reader already took (a fetched tensor, a read in flight). */
static weft_status_t *make_exclusive(weft__variable_t *var) {
  weft_tensor_t *cur = var->value;
  if (g_atomic_int_get(&cur->refcount) == 1 && g_atomic_int_get(&cur->buffer->refcount) == 1)
    return NULL;
  weft_tensor_t *copy = NULL;
  weft_status_t *st = weft__tensor_alloc(cur->buffer->device, cur->dtype, cur->rank, cur->dims, &copy);
  if (st) return st;
  if (cur->dtype == WEFT_DT_STRING) {
    weft_string_t *src = cur->buffer->data, *dst = copy->buffer->data;
    for (int64_t k = 0; k < cur->num_elements; k++) {
      dst[k].data = g_memdup2(src[k].data, src[k].len + 1);
      dst[k].len = src[k].len;
    }
  } else if (cur->buffer->nbytes) {
    weft__device_t *d = cur->buffer->device;
    if (!d) {
      memcpy(copy->buffer->data, cur->buffer->data, cur->buffer->nbytes);
    } else {
      st = d->backend->table.copy_device_to_device(d->handle, copy->buffer->data, cur->buffer->data,
                                                   cur->buffer->nbytes);
      if (st) {
        weft_tensor_unref(copy);
        return st;
      }
    }
  }
  weft_tensor_unref(var->value);
  var->value = copy;
  return NULL;
}

static weft_status_t *host_kernel_ref_input(weft_kernel_ctx_t *ctx, int index,
                                            weft_tensor_view_t *out) {
  weft__variable_t *var = NULL;
  weft_status_t *st = ref_arg(ctx, index, &var);
  if (st) return st;
  g_rec_mutex_lock(&var->lock);
  if (!var->value) st = uninitialised(ctx, var);
  if (!st) st = make_exclusive(var);
  if (!st) weft__tensor_fill_view(var->value, out);
  g_rec_mutex_unlock(&var->lock);
  return st;
}

static weft_status_t *host_kernel_ref_assign(weft_kernel_ctx_t *ctx, int index, weft_dtype_t dtype,
                                             int rank, const int64_t *dims,
                                             weft_tensor_view_t *out) {
  weft__variable_t *var = NULL;
  weft_status_t *st = ref_arg(ctx, index, &var);
  if (st) return st;
  if (rank < 0 || rank > WEFT_MAX_RANK) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s': cannot assign a value of rank %d",
                           ctx->node->name, rank);
  }
  g_rec_mutex_lock(&var->lock);
  weft_tensor_t *cur = var->value;
  bool same = cur && cur->dtype == dtype && cur->rank == rank &&
              memcmp(cur->dims, dims, sizeof(int64_t) * (size_t)rank) == 0;
  if (same) {
    st = make_exclusive(var);
  } else {
    weft_tensor_t *t = NULL;
    weft__device_t *placement = (var->device && !var->device->props.host_accessible) ? var->device : NULL;
    st = weft__tensor_alloc(placement, dtype, rank, dims, &t);
    if (!st) {
      weft_tensor_unref(var->value);
      var->value = t;
    }
  }
  if (!st) weft__tensor_fill_view(var->value, out);
  g_rec_mutex_unlock(&var->lock);
  return st;
}

static weft_status_t *host_kernel_forward_ref(weft_kernel_ctx_t *ctx, int input, int output) {
  weft__variable_t *var = NULL;
  weft_status_t *st = ref_arg(ctx, input, &var);
  if (st) return st;
  if (output < 0 || output >= ctx->node->n_outputs)
    return bad_index(ctx, "output", output, ctx->node->n_outputs);
  weft__variable_unref(ctx->outputs[output].ref);
  ctx->outputs[output].ref = weft__variable_ref(var);
  return NULL;
}

static void host_kernel_lock_ref(weft_kernel_ctx_t *ctx, int index) {
  weft__variable_t *var = NULL;
  weft_status_t *st = ref_arg(ctx, index, &var);
  /* Nothing to lock: the kernel's own reference read reports why. */
  if (st) {
    weft_status_free(st);
    return;
  }
  g_rec_mutex_lock(&var->lock);
}

static void host_kernel_unlock_ref(weft_kernel_ctx_t *ctx, int index) {
  if (index >= 0 && index < ctx->node->n_inputs && ctx->inputs[index].ref)
    g_rec_mutex_unlock(&ctx->inputs[index].ref->lock);
}

/* ---------------------------------------------------------------------------------------------
 * Device services (ABI 1.1): what a kernel of one plugin needs to work on another plugin's
 * device, whose memory it cannot read. */

static const char *host_kernel_device_type(weft_kernel_ctx_t *ctx) {
  return ctx->device ? ctx->device->type : "CPU";
}

/* The device whose backend moves the bytes, or NULL when plain memcpy does. */
static weft__device_t *copy_device(weft_kernel_ctx_t *ctx) {
  return (ctx->device && !ctx->device->props.host_accessible) ? ctx->device : NULL;
}

static weft_status_t *host_kernel_copy_to_host(weft_kernel_ctx_t *ctx, void *host_dst,
                                               const void *device_src, size_t nbytes) {
  if (nbytes == 0) return NULL;
  if (!host_dst || !device_src) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s): kernel_copy_to_host of %zu "
                           "bytes with a NULL pointer", ctx->node->name, ctx->node->op_name,
                           nbytes);
  }
  weft__device_t *d = copy_device(ctx);
  if (!d) {
    memcpy(host_dst, device_src, nbytes);
    return NULL;
  }
  weft_status_t *st = d->backend->table.copy_from_device(d->handle, host_dst, device_src, nbytes);
  return st ? weft_status_prefix(st, "Node '%s' (%s): copying %zu bytes from %s to the host",
                                 ctx->node->name, ctx->node->op_name, nbytes, d->name)
            : NULL;
}

static weft_status_t *host_kernel_copy_from_host(weft_kernel_ctx_t *ctx, void *device_dst,
                                                 const void *host_src, size_t nbytes) {
  if (nbytes == 0) return NULL;
  if (!device_dst || !host_src) {
    return weft_status_new(WEFT_INVALID_ARGUMENT, "Node '%s' (%s): kernel_copy_from_host of %zu "
                           "bytes with a NULL pointer", ctx->node->name, ctx->node->op_name,
                           nbytes);
  }
  weft__device_t *d = copy_device(ctx);
  if (!d) {
    memcpy(device_dst, host_src, nbytes);
    return NULL;
  }
  weft_status_t *st = d->backend->table.copy_to_device(d->handle, device_dst, host_src, nbytes);
  return st ? weft_status_prefix(st, "Node '%s' (%s): copying %zu bytes from the host to %s",
                                 ctx->node->name, ctx->node->op_name, nbytes, d->name)
            : NULL;
}

static const void *host_kernel_device_services(weft_kernel_ctx_t *ctx, const char *name) {
  weft__device_t *d = ctx->device;
  if (!d || !name || !d->backend->table.device_services) return NULL;
  /* A backend whose device_open gave no handle gets NULL, not the core's "opened" mark. */
  return d->backend->table.device_services(d->handle == (void *)d ? NULL : d->handle, name);
}

weft_status_t *weft__kernel_ctx_take_status(weft_kernel_ctx_t *ctx) {
  return weft__status_take(&ctx->deferred);
}

/* ---------------------------------------------------------------------------------------------
 * Registration */

static void fill_kernel_entries(weft_host_t *table) {
  table->kernel_attrs = host_kernel_attrs;
  table->kernel_node_name = host_kernel_node_name;
  table->kernel_num_inputs = host_kernel_num_inputs;
  table->kernel_num_outputs = host_kernel_num_outputs;
  table->kernel_input = host_kernel_input;
  table->kernel_allocate_output = host_kernel_allocate_output;
  table->kernel_forward_input = host_kernel_forward_input;
  table->kernel_scratch = host_kernel_scratch;
  table->kernel_device = host_kernel_device;
  table->kernel_device_ordinal = host_kernel_device_ordinal;
  table->parallel_for = host_parallel_for;
  table->kernel_num_threads = host_kernel_num_threads;
  table->string_assign = host_string_assign;
  table->kernel_output_from_attr = host_kernel_output_from_attr;
  table->kernel_variable = host_kernel_variable;
  table->kernel_ref_input = host_kernel_ref_input;
  table->kernel_ref_assign = host_kernel_ref_assign;
  table->kernel_forward_ref = host_kernel_forward_ref;
  table->kernel_lock_ref = host_kernel_lock_ref;
  table->kernel_unlock_ref = host_kernel_unlock_ref;
  table->kernel_device_type = host_kernel_device_type;
  table->kernel_copy_to_host = host_kernel_copy_to_host;
  table->kernel_copy_from_host = host_kernel_copy_from_host;
  table->kernel_device_services = host_kernel_device_services;
  table->kernel_input_constant = host_kernel_input_constant;
}

/* A constructor, as session kinds register theirs: the plugin layer cannot name exec, and the
 * table must be whole before any plugin gets it. */
__attribute__((constructor)) static void register_kernel_entries(void) {
  weft__host_set_kernel_entries(fill_kernel_entries);
}
