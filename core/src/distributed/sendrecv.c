/* The _Send and _Recv kernels: a core-internal kernel set registered for every device type that
 * has devices, with every argument in host memory (the executor moves tensors between the
 * device and the host around them). _Send puts its input into the step's rendezvous; _Recv pulls
 * the tensor from the sending task with RecvTensor, with the step's deadline, through the step's
 * call set so an abort cancels it. A _Recv that fails aborts its own step at once, so the rest
 * of the partition stops waiting (a peer's abort is "derived": not this task's fault). The
 * _Recv nodes of a group (WEFT_RECV_GROUP_ATTR, see partition.c) share one RecvTensor.
 *
 * Their kernel instances are built per execution slot rather than by the kernel's create(): the
 * state points at the slot's current step, which changes every RunGraph. */
#include "distributed_internal.h"

#include <string.h>

#define METHOD_RECV_TENSOR "/weft.Worker/RecvTensor"

/* The rendezvous key of this run of a _Send or _Recv: its static key in the root frame; inside a
 * while loop (a frame spanning tasks, partition.c) the frame instance and iteration appended, as
 * TensorFlow's frame_id:iter_id, so each iteration's tensor has its own key on both tasks. */
static char *run_key(const weft_kernel_ctx_t *ctx, const char *key) {
  if (!ctx->frame_key) return g_strdup(key);
  return g_strdup_printf("%s;%s;%" G_GINT64_FORMAT, key, ctx->frame_key, (gint64)ctx->iteration);
}

static weft_status_t *send_compute(weft_kernel_ctx_t *ctx, void *state) {
  weft__xfer_state_t *x = state;
  weft__step_t *step = x->step ? *x->step : NULL;
  if (!step) return weft_status_new(WEFT_INTERNAL, "_Send '%s' runs outside a step", x->key);
  weft_tensor_t *t = ctx->inputs[0].tensor;
  if (!t) return weft_status_new(WEFT_INTERNAL, "_Send '%s' has no input tensor", x->key);
  weft_tensor_t *copy = NULL;
  if (x->copy_on_send) {
    /* The value of a variable: later updates of the variable must not change what is sent. */
    weft_status_t *st = weft__tensor_copy_to_host(t, &copy);
    if (st) return st;
    t = copy;
  }
  char *key = run_key(ctx, x->key);
  weft_status_t *st = weft__step_put(step, key, t);
  g_free(key);
  weft_tensor_unref(copy);
  return st;
}

/* A _Recv fails: the rest of its partition stops waiting at once (a peer's abort is
 * "derived": not this task's fault). */
static weft_status_t *recv_failed(weft__step_t *step, weft_status_t *st) {
  bool derived = g_str_has_prefix(weft_status_message(st), WEFT_DERIVED_PREFIX);
  weft__step_abort(step, st, derived);
  return st;
}

static weft_status_t *check_received(const weft__xfer_state_t *x, const char *key,
                                     weft_dtype_t dtype, weft_tensor_t *t) {
  if (t && t->dtype == dtype) return NULL;
  return weft_status_new(WEFT_INTERNAL, "RecvTensor '%s' from %s returned a tensor of type %s, "
                         "not %s", key, x->peer.name, t ? weft_dtype_name(t->dtype) : "(none)",
                         weft_dtype_name(dtype));
}

/* A _Recv of a group: the first of the group to run fetches every key with one RecvTensor and
 * hands the others their tensors through the step; the rest wait for theirs. */
static weft_status_t *recv_group(weft_kernel_ctx_t *ctx, weft__xfer_state_t *x,
                                 weft__step_t *step) {
  weft_tensor_t *mine = NULL;
  weft_status_t *st = NULL;
  if (!weft__step_claim_group(step, x->group_keys[0])) {
    st = weft__step_wait_delivered(step, x->key, weft__step_deadline(step), &mine);
    if (!st) st = check_received(x, x->key, x->dtype, mine);
    if (st) {
      weft_tensor_unref(mine);
      return recv_failed(step, st);
    }
    ctx->outputs[0].tensor = mine;
    return NULL;
  }
  gint64 left_us = weft__step_deadline(step) - g_get_monotonic_time();
  if (left_us <= 0) {
    return recv_failed(step, weft_status_new(WEFT_DEADLINE_EXCEEDED,
                                             "Step %" G_GINT64_FORMAT " ran out of time before "
                                             "receiving '%s' and %d more from %s",
                                             weft__step_id(step), x->key, x->n_group_keys - 1,
                                             x->peer.name));
  }
  Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
  req.step_id = weft__step_id(step);
  req.rendezvous_key = x->group_keys[0];
  req.more_keys = x->group_keys + 1;
  req.n_more_keys = (size_t)x->n_group_keys - 1;
  req.incarnation = x->peer_incarnation;
  ProtobufCMessage *resp = NULL;
  weft_tensor_t **tensors = NULL;
  int n = 0;
  st = weft__rpc_unary(&x->peer, METHOD_RECV_TENSOR, &req.base, NULL, 0, left_us / 1000 + 1,
                       false, weft__step_calls(step), &weft__recv_tensor_response__descriptor,
                       &resp, &tensors, &n);
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  if (!st && n != x->n_group_keys) {
    st = weft_status_new(WEFT_INTERNAL, "RecvTensor of %d keys ('%s', ...) from %s returned %d "
                         "tensor(s)", x->n_group_keys, x->group_keys[0], x->peer.name, n);
  }
  for (int k = 0; k < n && !st; k++) {
    if (strcmp(x->group_keys[k], x->key) == 0) {
      st = check_received(x, x->key, x->dtype, tensors[k]);
      if (!st) mine = weft_tensor_ref(tensors[k]);
    } else {
      weft__step_deliver(step, x->group_keys[k], tensors[k]);
    }
  }
  weft__tensors_free(tensors, n);
  if (st) {
    weft_tensor_unref(mine);
    return recv_failed(step, st);
  }
  ctx->outputs[0].tensor = mine;
  return NULL;
}

static weft_status_t *recv_compute(weft_kernel_ctx_t *ctx, void *state) {
  weft__xfer_state_t *x = state;
  weft__step_t *step = x->step ? *x->step : NULL;
  if (!step) return weft_status_new(WEFT_INTERNAL, "_Recv '%s' runs outside a step", x->key);
  if (x->group_keys) return recv_group(ctx, x, step);
  /* Inside a loop a _Recv runs once per iteration; its shared-memory pool is sized for one
   * tensor a step, so there it takes the bytes from the answer. */
  weft__shm_segment_t *shm = ctx->frame_key ? NULL : x->shm;
  char *key = run_key(ctx, x->key);
  gint64 left_us = weft__step_deadline(step) - g_get_monotonic_time();
  weft_status_t *st = NULL;
  if (left_us <= 0) {
    st = weft_status_new(WEFT_DEADLINE_EXCEEDED,
                         "Step %" G_GINT64_FORMAT " ran out of time before receiving '%s' from %s",
                         weft__step_id(step), key, x->peer.name);
  }
  if (!st && !x->shm) {
    /* Another host or namespace: a pooled bulk link carries the bytes when there is one. */
    bool handled = false;
    weft_tensor_t *t = NULL;
    st = weft__bulk_recv(&x->peer, step, key, x->peer_incarnation, x->dtype,
                         &x->bulk_last_nbytes, &t, &handled);
    if (handled) {
      g_free(key);
      if (st) return recv_failed(step, st);
      ctx->outputs[0].tensor = t;
      return NULL;
    }
  }
  ProtobufCMessage *resp = NULL;
  weft_tensor_t **tensors = NULL;
  int n = 0;
  if (!st) {
    Weft__RecvTensorRequest req = WEFT__RECV_TENSOR_REQUEST__INIT;
    req.bulk_offer = !x->shm && weft__bulk_should_offer(x->peer.address, x->dtype);
    req.step_id = weft__step_id(step);
    req.rendezvous_key = key;
    req.incarnation = x->peer_incarnation;
    weft__shm_fill_request(shm, &req);
    int64_t timeout_ms = left_us / 1000 + 1;
    gint64 start_us = g_get_monotonic_time();
    st = weft__rpc_unary(&x->peer, METHOD_RECV_TENSOR, &req.base, NULL, 0, timeout_ms, false,
                         weft__step_calls(step), &weft__recv_tensor_response__descriptor, &resp,
                         &tensors, &n);
    if (!st && !x->shm && n == 1)
      weft__transfer_trace(weft_tensor_nbytes(tensors[0]), 0, g_get_monotonic_time() - start_us);
    if (!st && req.bulk_offer) weft__bulk_after_recv(x->peer.address, (const void *)resp);
  }
  if (shm) {
    /* The sender may have put the bytes in this _Recv's shared memory (shm_transfer.c). */
    weft_tensor_t *t = NULL;
    weft_status_t *shm_st = weft__shm_after_recv(shm, st != NULL, (const void *)resp, &t);
    if (shm_st) st = weft_status_prefix(shm_st, "_Recv '%s' from %s", key, x->peer.name);
    if (t && n == 0) {
      g_free(tensors);
      tensors = g_new0(weft_tensor_t *, 1);
      tensors[0] = t;
      n = 1;
    } else {
      weft_tensor_unref(t);
    }
  }
  if (!st && (n != 1 || tensors[0]->dtype != x->dtype)) {
    st = weft_status_new(WEFT_INTERNAL, "RecvTensor '%s' from %s returned %d tensor(s)%s%s", key,
                         x->peer.name, n, n == 1 ? " of type " : "",
                         n == 1 ? weft_dtype_name(tensors[0]->dtype) : "");
  }
  if (resp) protobuf_c_message_free_unpacked(resp, NULL);
  if (st) {
    weft__tensors_free(tensors, n);
    g_free(key);
    return recv_failed(step, st);
  }
  g_free(key);
  x->bulk_last_nbytes = weft_tensor_nbytes(tensors[0]);
  ctx->outputs[0].tensor = tensors[0];
  g_free(tensors);
  return NULL;
}

bool weft__is_xfer_op(const char *op) {
  return strcmp(op, "_Send") == 0 || strcmp(op, "_Recv") == 0;
}

void weft__sendrecv_register_kernels(void) {
  static GMutex lock;
  static GHashTable *done; /* device types that have the kernels */
  static const char *const host_args[] = {"tensor", NULL};
  g_mutex_lock(&lock);
  if (!done) done = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  int n = weft__device_count();
  for (int k = 0; k < n; k++) {
    const weft__device_t *d = weft__device_at(k);
    if (!d || g_hash_table_contains(done, d->type)) continue;
    weft_kernel_def_t send = {.struct_size = sizeof(weft_kernel_def_t),
                              .op = "_Send",
                              .device_type = d->type,
                              .host_memory_args = host_args,
                              .compute = send_compute};
    weft_kernel_def_t recv = send;
    recv.op = "_Recv";
    recv.compute = recv_compute;
    weft__registry_add_kernel(weft__kernel_copy_def(&send, "core"));
    weft__registry_add_kernel(weft__kernel_copy_def(&recv, "core"));
    g_hash_table_add(done, g_strdup(d->type));
  }
  g_mutex_unlock(&lock);
}

static const char *string_attr(const weft_node_t *node, const char *name) {
  const weft__attr_value_t *v = weft__attrs_get(node->attrs, name);
  return v && v->kind == WEFT_ATTR_STRING ? v->u.s.data : NULL;
}

static void xfer_state_free(weft__xfer_state_t *x) {
  if (!x) return;
  g_free(x->key);
  g_strfreev(x->group_keys);
  g_free((char *)x->peer.name);
  g_free((char *)x->peer.address);
  weft__security_unref((weft__security_t *)x->peer.security);
  weft__shm_segment_free(x->shm);
  g_free(x);
}

/* The keys of a grouped _Recv: 2 to WEFT_MAX_RECV_GROUP distinct non-empty keys, its own among
 * them. */
static weft_status_t *group_keys_from_attr(const weft_node_t *node, const char *key,
                                           const weft__attr_value_t *group,
                                           weft__xfer_state_t *x) {
  size_t n = group->kind == WEFT_ATTR_LIST_STRING ? group->u.list.n : 0;
  bool mine = false, distinct = true;
  for (size_t k = 0; k < n; k++) {
    const char *other = group->u.list.s[k].data;
    if (!other || !*other) distinct = false;
    else if (strcmp(other, key) == 0) mine = true;
    for (size_t j = 0; j < k && distinct; j++)
      if (strcmp(other, group->u.list.s[j].data) == 0) distinct = false;
  }
  if (n < 2 || n > WEFT_MAX_RECV_GROUP || !mine || !distinct) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s' (_Recv): attr '%s' must list 2 to %d distinct rendezvous "
                           "keys, '%s' among them",
                           node->name, WEFT_RECV_GROUP_ATTR, WEFT_MAX_RECV_GROUP, key);
  }
  x->group_keys = g_new0(char *, n + 1);
  for (size_t k = 0; k < n; k++) x->group_keys[k] = g_strdup(group->u.list.s[k].data);
  x->n_group_keys = (int)n;
  return NULL;
}

weft_status_t *weft__xfer_instance_new(const weft_node_t *node, weft__device_t *device,
                                       weft__step_t *const *step, GHashTable *peers,
                                       const weft__security_t *security,
                                       grpc_completion_queue *queue,
                                       weft__kernel_instance_t **out) {
  *out = NULL;
  bool is_recv = strcmp(node->op_name, "_Recv") == 0;
  const char *key = string_attr(node, "tensor_name");
  const char *send_device = string_attr(node, "send_device");
  if (!key || !*key || !send_device) {
    return weft_status_new(WEFT_INVALID_ARGUMENT,
                           "Node '%s' (%s) needs the tensor_name and send_device attrs", node->name,
                           node->op_name);
  }
  weft__sendrecv_register_kernels();
  const weft__kernel_t *kernel = weft__kernel_lookup(node->op_name, device->type, node->attrs);
  if (!kernel) {
    return weft_status_new(WEFT_INTERNAL, "No %s kernel on %s", node->op_name, device->name);
  }
  weft__xfer_state_t *x = g_new0(weft__xfer_state_t, 1);
  x->step = step;
  x->key = g_strdup(key);
  if (is_recv) {
    x->dtype = weft__dtype_base(node->output_types[0]);
    char *task = weft__task_of_device(send_device);
    const Weft__TaskAddress *peer = task ? g_hash_table_lookup(peers, task) : NULL;
    if (!peer) {
      weft_status_t *st = weft_status_new(WEFT_INVALID_ARGUMENT,
                                          "Node '%s' (_Recv) receives from '%s', which is not a "
                                          "task the master named for this graph",
                                          node->name, send_device);
      g_free(task);
      xfer_state_free(x);
      return st;
    }
    x->peer.name = task;
    x->peer.address = g_strdup(peer->address);
    x->peer.security = weft__security_ref((weft__security_t *)security);
    x->peer.queue = queue;
    x->peer_incarnation = peer->incarnation;
    const weft__attr_value_t *group = weft__attrs_get(node->attrs, WEFT_RECV_GROUP_ATTR);
    if (group) {
      weft_status_t *st = group_keys_from_attr(node, key, group, x);
      if (st) {
        xfer_state_free(x);
        return st;
      }
    }
    if (!x->group_keys && weft__shm_enabled() && weft__address_is_loopback(peer->address))
      x->shm = weft__shm_segment_new();
  } else {
    const weft__attr_value_t *copy = weft__attrs_get(node->attrs, "copy_on_send");
    x->copy_on_send = copy && copy->kind == WEFT_ATTR_BOOL && copy->u.b;
  }
  weft__kernel_instance_t *inst = g_new0(weft__kernel_instance_t, 1);
  inst->kernel = kernel;
  inst->device = device;
  inst->state = x;
  *out = inst;
  return NULL;
}

bool weft__xfer_is_group_follower(const weft__kernel_instance_t *inst) {
  const weft__xfer_state_t *x = inst ? inst->state : NULL;
  return x && x->group_keys && strcmp(x->key, x->group_keys[0]) != 0;
}

void weft__xfer_instance_free(weft__kernel_instance_t *inst) {
  if (!inst) return;
  xfer_state_free(inst->state);
  g_free(inst);
}
