/* stack_kernels.c: the core's CPU kernels for TensorFlow 1's stacks (StackV2, StackPushV2,
 * StackPopV2, StackCloseV2 and the Ref forms Stack, StackPush, StackPop, StackClose), after
 * tensorflow/core/kernels/stack.cc, messages included. A stack lives in its step's resources
 * (weft__step_resources_t, as the TensorArrays of flow_kernels.c) and goes when the step ends,
 * TensorFlow's per-step container. A StackV2 handle is the string vector ["_stacks", name]; the
 * Ref form's handle is the same vector behind a reference, as TensorFlow's set_output_ref. Swapping
 * pushed values to host memory (swap_memory) is accepted and not needed: CPU tensors stay put. */
#include "frames_internal.h"

#include <string.h>

#define STACK_CONTAINER "_stacks"

typedef struct weft_stack {
  char *name;
  weft_dtype_t elem_type;
  int64_t max_size;
  bool closed;
  GPtrArray *elems; /* weft_tensor_t*, owned; the top is the last */
  GMutex lock;
} weft_stack_t;

static void stack_free(gpointer p) {
  weft_stack_t *s = p;
  g_ptr_array_free(s->elems, TRUE);
  g_mutex_clear(&s->lock);
  g_free(s->name);
  g_free(s);
}

void weft__step_stacks_clear(weft__step_resources_t *r) {
  if (r->stacks) g_hash_table_destroy(r->stacks);
  r->stacks = NULL;
}

/* An INVALID_ARGUMENT naming the node (kernel_host.c's weft__kernel_error). */
#define fail(ctx, ...) weft__kernel_error(ctx, WEFT_INVALID_ARGUMENT, __VA_ARGS__)

static const weft__attr_value_t *attr(weft_kernel_ctx_t *ctx, const char *name, int kind) {
  const weft__attr_value_t *v = weft__attrs_get(ctx->node->attrs, name);
  return v && (int)v->kind == kind ? v : NULL;
}

/* The handle tensor of input 0: a value (StackV2's) or behind a reference (Stack's). */
static weft_tensor_t *handle_of(weft_kernel_ctx_t *ctx) {
  weft__value_t *v = &ctx->inputs[0];
  if (!v->ref) return weft_tensor_ref(v->tensor);
  g_rec_mutex_lock(&v->ref->lock);
  weft_tensor_t *t = v->ref->value ? weft_tensor_ref(v->ref->value) : NULL;
  g_rec_mutex_unlock(&v->ref->lock);
  return t;
}

/* The stack a handle names; locked on return, and open. */
static weft_status_t *lookup(weft_kernel_ctx_t *ctx, weft_stack_t **out) {
  weft_tensor_t *h = handle_of(ctx);
  if (!h || h->dtype != WEFT_DT_STRING || h->num_elements != 2) {
    char *s = h ? weft__shape_to_string(h->rank, h->dims) : g_strdup("<none>");
    weft_status_t *st = fail(ctx, "Stack handle must have two elements, but had shape: %s", s);
    g_free(s);
    weft_tensor_unref(h);
    return st;
  }
  const weft_string_t *parts = weft_tensor_data(h);
  char *container = g_strndup(parts[0].data, parts[0].len);
  char *name = g_strndup(parts[1].data, parts[1].len);
  weft_tensor_unref(h);
  weft__step_resources_t *r = ctx->step_resources;
  weft_stack_t *s = NULL;
  if (r && strcmp(container, STACK_CONTAINER) == 0) {
    g_mutex_lock(&r->lock);
    s = r->stacks ? g_hash_table_lookup(r->stacks, name) : NULL;
    g_mutex_unlock(&r->lock);
  }
  /* ResourceMgr's words: a stack lives in the step that made it. */
  weft_status_t *st = s ? NULL : weft_status_new(WEFT_NOT_FOUND, "node '%s': Resource %s/%s/"
                                                 "N10tensorflow5StackE does not exist.",
                                                 ctx->node->name, container, name);
  g_free(container);
  g_free(name);
  if (st) return st;
  g_mutex_lock(&s->lock);
  if (s->closed) {
    st = fail(ctx, "Stack[%s] has already been closed.", s->name);
    g_mutex_unlock(&s->lock);
    return st;
  }
  *out = s;
  return NULL;
}

static weft_status_t *stack_create(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  static gint counter;
  int64_t max_size = G_MAXINT32;
  if (ctx->node->n_inputs > 0) { /* StackV2's max_size; the Ref form has none */
    weft_tensor_t *t = ctx->inputs[0].tensor;
    if (t->rank != 0) {
      char *s = weft__shape_to_string(t->rank, t->dims);
      weft_status_t *st = fail(ctx, "Stack size must be a scalar, but had shape: %s", s);
      g_free(s);
      return st;
    }
    int32_t v = ((const int32_t *)weft_tensor_data(t))[0];
    if (v >= 0) max_size = v;
  }
  weft__step_resources_t *r = ctx->step_resources;
  if (!r) return weft_status_new(WEFT_INTERNAL, "node '%s': No step container.", ctx->node->name);
  const weft__attr_value_t *nv = attr(ctx, "stack_name", WEFT_ATTR_STRING);
  const weft__attr_value_t *tv = attr(ctx, "elem_type", WEFT_ATTR_TYPE);
  const char *base = nv && nv->u.s.len ? nv->u.s.data : ctx->node->name;
  weft_stack_t *s = g_new0(weft_stack_t, 1);
  s->name = g_strdup_printf("%s_%d", base, g_atomic_int_add(&counter, 1));
  s->elem_type = tv ? tv->u.type : WEFT_DT_INVALID;
  s->max_size = max_size;
  s->elems = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  g_mutex_init(&s->lock);
  weft_tensor_t *handle = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){2});
  weft_status_free(weft_tensor_set_string(handle, 0, STACK_CONTAINER, strlen(STACK_CONTAINER)));
  weft_status_free(weft_tensor_set_string(handle, 1, s->name, strlen(s->name)));
  g_mutex_lock(&r->lock);
  if (!r->stacks) r->stacks = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, stack_free);
  g_hash_table_insert(r->stacks, s->name, s);
  g_mutex_unlock(&r->lock);
  if (ctx->node->n_inputs > 0) {
    ctx->outputs[0].tensor = handle;
    return NULL;
  }
  /* The Ref form: the handle behind a reference of its own, dropped with the step's values. */
  weft__variable_t *var = g_new0(weft__variable_t, 1);
  var->refcount = 1;
  g_rec_mutex_init(&var->lock);
  var->name = g_strdup_printf(STACK_CONTAINER "/%s", s->name);
  var->device = ctx->device;
  var->value = handle;
  ctx->outputs[0].ref = var;
  return NULL;
}

static weft_status_t *stack_push(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_stack_t *s;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &s));
  weft_tensor_t *elem = ctx->inputs[1].tensor;
  weft_status_t *st = NULL;
  /* TensorFlow prints the DataType enum values, which are Weft's. */
  if (elem->dtype != s->elem_type)
    st = fail(ctx, "Must have type %d but got %d", (int)s->elem_type, (int)elem->dtype);
  else if ((int64_t)s->elems->len >= s->max_size)
    st = fail(ctx, "Stack[%s] overflowed its max_size (%" G_GINT64_FORMAT ")", s->name,
              s->max_size);
  else
    g_ptr_array_add(s->elems, weft_tensor_ref(elem));
  g_mutex_unlock(&s->lock);
  if (!st) ctx->outputs[0].tensor = weft_tensor_ref(elem);
  return st;
}

static weft_status_t *stack_pop(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_stack_t *s;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &s));
  const weft__attr_value_t *tv = attr(ctx, "elem_type", WEFT_ATTR_TYPE);
  weft_dtype_t want = tv ? tv->u.type : WEFT_DT_INVALID;
  weft_status_t *st = NULL;
  if (s->elems->len == 0)
    st = fail(ctx, "Stack[%s] is empty when calling Pop().", s->name);
  else if (want != s->elem_type)
    st = fail(ctx, "Stack[%s] holds type %d but the pop's elem_type is %d", s->name,
              (int)s->elem_type, (int)want);
  else
    ctx->outputs[0].tensor = g_ptr_array_steal_index(s->elems, s->elems->len - 1);
  g_mutex_unlock(&s->lock);
  return st;
}

/* Closing frees the values; the stack stays, closed, until its step ends. */
static weft_status_t *stack_close(weft_kernel_ctx_t *ctx, void *state) {
  (void)state;
  weft_stack_t *s;
  WEFT_RETURN_IF_ERROR(lookup(ctx, &s));
  g_ptr_array_set_size(s->elems, 0);
  s->closed = true;
  g_mutex_unlock(&s->lock);
  return NULL;
}

void weft__stack_kernels_register(void) {
  static const struct {
    const char *op;
    weft_kernel_compute_fn compute;
  } kernels[] = {
      {"StackV2", stack_create},     {"Stack", stack_create},
      {"StackPushV2", stack_push},   {"StackPush", stack_push},
      {"StackPopV2", stack_pop},     {"StackPop", stack_pop},
      {"StackCloseV2", stack_close}, {"StackClose", stack_close},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(kernels); k++) {
    weft_kernel_def_t def = {.struct_size = sizeof(weft_kernel_def_t),
                             .op = kernels[k].op,
                             .device_type = "CPU",
                             .compute = kernels[k].compute};
    weft__registry_add_kernel(weft__kernel_copy_def(&def, "core"));
  }
}
