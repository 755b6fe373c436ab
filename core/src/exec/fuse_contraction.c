/* fuse_contraction.c: the contraction half of the plan-time fusion pass (fuse.c), what
 * TensorFlow's grappler remapper does on the CPU: MatMul -> BiasAdd [-> activation] becomes one
 * _FusedMatMul node, and Conv2D or DepthwiseConv2dNative -> BiasAdd or FusedBatchNorm
 * (inference) [-> activation] one _FusedConv2D / _FusedDepthwiseConv2dNative, with TensorFlow's
 * attributes (fused_ops, num_args, epsilon, leakyrelu_alpha), so that the kernel finishes each
 * block of the product while it is in cache instead of a second pass over memory. And the
 * dilated convolution TensorFlow writes as SpaceToBatchND -> Conv2D, DepthwiseConv2dNative or
 * Conv3D (VALID, stride 1) -> BatchToSpaceND (tf.nn.convolution, Keras' dilation_rate) becomes
 * the one convolution with dilations it stands for, as tf2onnx and ONNX Runtime see it: two
 * copies of the image and a batch of sub-images fewer (with its bias and activation, when they
 * follow, in the fused node). And a channels-last pool between the two Transposes that Keras
 * writes around it for a channels-first model on the CPU (NCHW -> NHWC, pool, back) becomes the
 * channels-first pool, which the CPU kernels take directly, as ONNX Runtime's transpose
 * optimizer cancels the pair. fuse.c owns
 * the rest (the private graph, kernels, aliases, the WEFT_NO_FUSION switch); a group whose fused
 * kernel cannot be made on its device (no kernel there: CUDA, Vulkan) runs unfused. */
#include "fuse_internal.h"

#include <string.h>

static const char *const activations[] = {"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid",
                                          NULL};

static bool in_list(const char *const *list, const char *op) {
  for (; *list; list++)
    if (strcmp(*list, op) == 0) return true;
  return false;
}

static bool is_nhwc(const weft_node_t *n) {
  const weft__attr_value_t *f = weft__attrs_get(n->attrs, "data_format");
  return !f || f->kind != WEFT_ATTR_STRING || strcmp(f->u.s.data, "NHWC") == 0;
}

static bool is_nchw(const weft_node_t *n) {
  const weft__attr_value_t *f = weft__attrs_get(n->attrs, "data_format");
  return f && f->kind == WEFT_ATTR_STRING && strcmp(f->u.s.data, "NCHW") == 0;
}

/* Both NHWC or both NCHW: the CPU's fused convolutions take either (an NCHW one runs the NHWC
 * kernel between transposes, its epilogue per channel), as long as the bias or batch norm reads
 * the channels where the convolution writes them. */
static bool same_layout(const weft_node_t *a, const weft_node_t *b) {
  return (is_nhwc(a) && is_nhwc(b)) || (is_nchw(a) && is_nchw(b));
}

/* A float32 node with one data output 0 in use (FusedBatchNorm's others must be unused) and no
 * control inputs: the ones a group may hold. */
static bool plain_float(const weft_node_t *n) {
  return n->n_outputs >= 1 && n->output_types[0] == WEFT_DT_FLOAT && n->control_inputs->len == 0;
}

static bool is_batch_norm(const weft_node_t *n) {
  if (strcmp(n->op_name, "FusedBatchNorm") != 0 && strcmp(n->op_name, "FusedBatchNormV2") != 0 &&
      strcmp(n->op_name, "FusedBatchNormV3") != 0)
    return false;
  const weft__attr_value_t *t = weft__attrs_get(n->attrs, "is_training");
  /* TensorFlow's default is training: only an explicit false is inference. */
  return t && t->kind == WEFT_ATTR_BOOL && !t->u.b && n->n_inputs == 5;
}

/* The only consumer of `n` (through output 0, n not pinned, one data edge out, nothing reading
 * its other outputs) when it is `next`'s input 0 on the same device. */
static bool feeds_only(const weft__fuse_view_t *v, const weft_node_t *n, const weft_node_t *next) {
  int k = GPOINTER_TO_INT(g_hash_table_lookup(v->index_of, n)) - 1;
  int j = GPOINTER_TO_INT(g_hash_table_lookup(v->index_of, next)) - 1;
  if (k < 0 || j < 0 || v->pinned[k] || v->consumers[k] != 1) return false;
  if (next->n_inputs < 1 || next->inputs[0].src != n || next->inputs[0].src_index != 0)
    return false;
  for (int i = 1; i < next->n_inputs; i++)
    if (next->inputs[i].src == n) return false;
  const weft__kernel_instance_t *a = v->p->kernels[k], *b = v->p->kernels[j];
  return a && b && a->device == b->device;
}

/* Whether a feed replaces an output of n, or a fetch reads one other than output 0. */
static bool fed_or_fetched_past_0(const weft__fuse_view_t *v, const weft_node_t *n) {
  for (int f = 0; f < v->p->n_feeds; f++)
    if (v->p->feeds[f].node == n) return true;
  for (int f = 0; f < v->p->n_fetches; f++)
    if (v->p->fetches[f].node == n && v->p->fetches[f].index != 0) return true;
  return false;
}

/* The one node whose input 0 is output 0 of `n`, or NULL. */
static const weft_node_t *sole_consumer(const weft__fuse_view_t *v, const weft_node_t *n) {
  GPtrArray *c = g_hash_table_lookup(v->consumer_of, n);
  if (!c || c->len != 1) return NULL;
  const weft_node_t *next = c->pdata[0];
  return feeds_only(v, n, next) ? next : NULL;
}

static void copy_attr(weft_attrs_t *to, const weft_node_t *from, const char *name) {
  const weft__attr_value_t *a = weft__attrs_get(from->attrs, name);
  if (a) weft__attrs_set(to, name, weft__attr_value_copy(a));
}

/* ---------------------------------------------------------------------------------------------
 * SpaceToBatchND -> convolution -> BatchToSpaceND as one dilated convolution. */

/* The count integer values of a Const node (int32 or int64, exactly count elements). */
static bool const_ints(const weft_node_t *n, int64_t *out, int64_t count) {
  if (strcmp(n->op_name, "Const") != 0) return false;
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, "value");
  if (!a || a->kind != WEFT_ATTR_TENSOR) return false;
  weft_dtype_t t = weft_tensor_dtype(a->u.tensor);
  if ((t != WEFT_DT_INT32 && t != WEFT_DT_INT64) || weft_tensor_num_elements(a->u.tensor) != count)
    return false;
  for (int64_t i = 0; i < count; i++) out[i] = (int64_t)weft_tensor_get_double(a->u.tensor, i);
  return true;
}

/* Whether list attr `name` of n is absent or all ones. */
static bool ones_or_absent(const weft_node_t *n, const char *name) {
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, name);
  if (!a) return true;
  if (a->kind != WEFT_ATTR_LIST_INT) return false;
  for (size_t i = 0; i < a->u.list.n; i++)
    if (a->u.list.i[i] != 1) return false;
  return true;
}

static bool attr_is(const weft_node_t *n, const char *name, const char *value) {
  const weft__attr_value_t *a = weft__attrs_get(n->attrs, name);
  return a && a->kind == WEFT_ATTR_STRING && strcmp(a->u.s.data, value) == 0;
}

typedef struct dilation {
  int ns;               /* spatial dims: 2 or 3 */
  bool cfirst;          /* NCHW / NCDHW */
  int64_t block[3];     /* the dilations */
  bool same;            /* TensorFlow's SAME for the dilated filter, else VALID */
} dilation_t;

/* Whether s2b -> conv -> b2s (conv the sole consumer of s2b, b2s of conv) is a dilated
 * convolution: block_shape, paddings and crops constants, the convolution VALID, stride and
 * dilation 1, and the padding that remains (SpaceToBatchND's before the crops take theirs back)
 * TensorFlow's SAME or VALID padding of the dilated filter. Channels-first convolutions see the
 * channels as the first blocked dimension, with a block of 1 and no padding, as
 * tf.nn.convolution writes them. */
static bool dilated(const weft_node_t *s2b, const weft_node_t *conv, const weft_node_t *b2s,
                    dilation_t *d) {
  bool conv3d = strcmp(conv->op_name, "Conv3D") == 0;
  if (!conv3d && strcmp(conv->op_name, "Conv2D") != 0 &&
      strcmp(conv->op_name, "DepthwiseConv2dNative") != 0)
    return false;
  if (strcmp(b2s->op_name, "BatchToSpaceND") != 0 || s2b->n_inputs != 3 || b2s->n_inputs != 3 ||
      conv->n_outputs != 1 || !plain_float(conv) || !plain_float(b2s) || b2s->n_outputs != 1)
    return false;
  const weft__attr_value_t *fmt = weft__attrs_get(conv->attrs, "data_format");
  if (conv3d) {
    d->cfirst = fmt && attr_is(conv, "data_format", "NCDHW");
    if (fmt && !d->cfirst && !attr_is(conv, "data_format", "NDHWC")) return false;
  } else {
    d->cfirst = is_nchw(conv);
    if (!d->cfirst && !is_nhwc(conv)) return false;
  }
  if (!attr_is(conv, "padding", "VALID") || !ones_or_absent(conv, "strides") ||
      !ones_or_absent(conv, "dilations"))
    return false;
  d->ns = conv3d ? 3 : 2;
  int nb = d->ns + (d->cfirst ? 1 : 0), skip = d->cfirst ? 1 : 0;
  int64_t block[4], block2[4], pads[8], crops[8];
  if (!const_ints(s2b->inputs[1].src, block, nb) || !const_ints(s2b->inputs[2].src, pads, 2 * nb) ||
      !const_ints(b2s->inputs[1].src, block2, nb) || !const_ints(b2s->inputs[2].src, crops, 2 * nb))
    return false;
  if (d->cfirst && (block[0] != 1 || block2[0] != 1 || pads[0] || pads[1] || crops[0] || crops[1]))
    return false;
  /* The filter's spatial sizes, from its static shape ([k..., in, out] in every layout). */
  weft__shape_t f = weft__node_shape(conv->inputs[1].src, conv->inputs[1].src_index);
  if (f.rank != d->ns + 2) return false;
  bool same = true, valid = true;
  for (int i = 0; i < d->ns; i++) {
    int j = i + skip;
    d->block[i] = block[j];
    if (block[j] < 1 || block2[j] != block[j] || f.dims[i] < 1) return false;
    int64_t before = pads[2 * j] - crops[2 * j], after = pads[2 * j + 1] - crops[2 * j + 1];
    int64_t total = (f.dims[i] - 1) * block[j];
    same = same && before == total / 2 && after == total - total / 2;
    valid = valid && before == 0 && after == 0;
  }
  d->same = same;
  return same || valid;
}

/* [BiasAdd or inference FusedBatchNorm (, activation)] after `last` (channels-last), appended to
 * g; false when none follows. */
static bool add_epilogue(const weft__fuse_view_t *v, const weft_node_t *last, GPtrArray *g) {
  const weft_node_t *mid = sole_consumer(v, last);
  if (!mid || !plain_float(mid) || !is_nhwc(mid)) return false;
  bool bias = strcmp(mid->op_name, "BiasAdd") == 0 && mid->n_inputs == 2;
  if (!bias && !is_batch_norm(mid)) return false;
  int m = GPOINTER_TO_INT(g_hash_table_lookup(v->index_of, mid)) - 1;
  if (v->consumers[m] != v->consumers_of_0[m] || fed_or_fetched_past_0(v, mid)) return false;
  g_ptr_array_add(g, (gpointer)mid);
  const weft_node_t *act = sole_consumer(v, mid);
  if (act && act->n_inputs == 1 && act->n_outputs == 1 && plain_float(act) &&
      in_list(activations, act->op_name) && !fed_or_fetched_past_0(v, act))
    g_ptr_array_add(g, (gpointer)act);
  return true;
}

static GPtrArray *dilated_group(const weft__fuse_view_t *v, const weft_node_t *s2b) {
  if (s2b->n_outputs != 1 || !plain_float(s2b)) return NULL;
  const weft_node_t *conv = sole_consumer(v, s2b);
  const weft_node_t *b2s = conv ? sole_consumer(v, conv) : NULL;
  dilation_t d;
  if (!b2s || fed_or_fetched_past_0(v, b2s) || !dilated(s2b, conv, b2s, &d)) return NULL;
  GPtrArray *g = g_ptr_array_new();
  g_ptr_array_add(g, (gpointer)s2b);
  g_ptr_array_add(g, (gpointer)conv);
  g_ptr_array_add(g, (gpointer)b2s);
  if (d.ns == 2 && !d.cfirst) add_epilogue(v, b2s, g);
  return g;
}

/* ---------------------------------------------------------------------------------------------
 * Transpose (channels to last) -> pool -> Transpose (channels back to first) as one
 * channels-first pool. */

static const char *const pools[] = {"MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D", NULL};

/* Whether n is a Transpose by the constant permutation want (rank entries). */
static bool transpose_by(const weft_node_t *n, const int64_t *want, int rank) {
  int64_t perm[5];
  return strcmp(n->op_name, "Transpose") == 0 && n->n_inputs == 2 && n->n_outputs == 1 &&
         plain_float(n) && const_ints(n->inputs[1].src, perm, rank) &&
         memcmp(perm, want, sizeof(int64_t) * (size_t)rank) == 0;
}

static GPtrArray *transposed_pool_group(const weft__fuse_view_t *v, const weft_node_t *t1) {
  static const int64_t to_last[2][5] = {{0, 2, 3, 1}, {0, 2, 3, 4, 1}};
  static const int64_t to_first[2][5] = {{0, 3, 1, 2}, {0, 4, 1, 2, 3}};
  const weft_node_t *pool = sole_consumer(v, t1);
  if (!pool || !in_list(pools, pool->op_name) || pool->n_outputs != 1 || !plain_float(pool))
    return NULL;
  int three = strchr(pool->op_name, '3') != NULL, rank = three ? 5 : 4;
  /* The pool channels-last with constant ksize and strides (MaxPoolV2's are inputs). */
  const weft__attr_value_t *fmt = weft__attrs_get(pool->attrs, "data_format");
  if (fmt && !attr_is(pool, "data_format", three ? "NDHWC" : "NHWC")) return NULL;
  const weft__attr_value_t *k = weft__attrs_get(pool->attrs, "ksize");
  const weft__attr_value_t *st = weft__attrs_get(pool->attrs, "strides");
  if (!k || !st || k->kind != WEFT_ATTR_LIST_INT || st->kind != WEFT_ATTR_LIST_INT ||
      k->u.list.n != (size_t)rank || st->u.list.n != (size_t)rank || pool->n_inputs != 1)
    return NULL;
  if (!transpose_by(t1, to_last[three], rank)) return NULL;
  const weft_node_t *t2 = sole_consumer(v, pool);
  if (!t2 || fed_or_fetched_past_0(v, t2) || !transpose_by(t2, to_first[three], rank))
    return NULL;
  GPtrArray *g = g_ptr_array_new();
  g_ptr_array_add(g, (gpointer)t1);
  g_ptr_array_add(g, (gpointer)pool);
  g_ptr_array_add(g, (gpointer)t2);
  return g;
}

/* A list attr of channels-last order [n, spatial..., c] in channels-first order. */
static weft__attr_value_t *to_channels_first(const weft__attr_value_t *a) {
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_INT);
  size_t n = a->u.list.n;
  v->u.list.n = n;
  v->u.list.i = g_new(int64_t, n);
  v->u.list.i[0] = a->u.list.i[0];
  v->u.list.i[1] = a->u.list.i[n - 1];
  for (size_t i = 1; i + 1 < n; i++) v->u.list.i[i + 1] = a->u.list.i[i];
  return v;
}

static weft_status_t *build_transposed_pool(weft_graph_t *graph, const GPtrArray *members,
                                            weft_node_t **out) {
  const weft_node_t *t1 = members->pdata[0], *pool = members->pdata[1];
  const weft_node_t *t2 = members->pdata[2];
  weft_attrs_t *attrs = weft__attrs_new();
  copy_attr(attrs, pool, "T");
  copy_attr(attrs, pool, "padding");
  weft__attrs_set(attrs, "ksize", to_channels_first(weft__attrs_get(pool->attrs, "ksize")));
  weft__attrs_set(attrs, "strides", to_channels_first(weft__attrs_get(pool->attrs, "strides")));
  weft__attr_value_t *f = weft__attr_value_new(WEFT_ATTR_STRING);
  f->u.s.data = g_strdup(strchr(pool->op_name, '3') ? "NCDHW" : "NCHW");
  f->u.s.len = strlen(f->u.s.data);
  weft__attrs_set(attrs, "data_format", f);
  weft_status_t *st = weft__graph_add_node(graph, t2->name, pool->op_name, &t1->inputs[0], 1,
                                           NULL, 0, "", attrs, out);
  weft__attrs_free(attrs);
  return st;
}

GPtrArray *weft__fuse_find_contractions(const weft__fuse_view_t *v) {
  GPtrArray *groups = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint k = 0; k < v->p->nodes->len; k++) {
    const weft_node_t *root = v->p->nodes->pdata[k];
    if (strcmp(root->op_name, "SpaceToBatchND") == 0 || strcmp(root->op_name, "Transpose") == 0) {
      GPtrArray *g = root->op_name[0] == 'S' ? dilated_group(v, root)
                                             : transposed_pool_group(v, root);
      if (g) g_ptr_array_add(groups, g);
      continue;
    }
    bool matmul = strcmp(root->op_name, "MatMul") == 0;
    bool conv = strcmp(root->op_name, "Conv2D") == 0 ||
                strcmp(root->op_name, "DepthwiseConv2dNative") == 0;
    if ((!matmul && !conv) || root->n_outputs != 1 || !plain_float(root)) continue;
    if (conv && !is_nhwc(root) && !is_nchw(root)) continue;
    const weft_node_t *mid = sole_consumer(v, root);
    if (!mid || !plain_float(mid)) continue;
    /* MatMul's BiasAdd adds along the last dimension whatever it says (a rank-2 value). */
    bool layout = conv ? same_layout(root, mid) : is_nhwc(mid);
    bool bias = strcmp(mid->op_name, "BiasAdd") == 0 && mid->n_inputs == 2 && layout;
    if (!bias && !(conv && layout && is_batch_norm(mid))) continue;
    /* The last member may be fetched (the fused node stands for it), but FusedBatchNorm's
     * batch mean and variance outputs must be unused, and no member's output fed. */
    int m = GPOINTER_TO_INT(g_hash_table_lookup(v->index_of, mid)) - 1;
    if (v->consumers[m] != v->consumers_of_0[m] || fed_or_fetched_past_0(v, mid)) continue;
    GPtrArray *g = g_ptr_array_new();
    g_ptr_array_add(g, (gpointer)root);
    g_ptr_array_add(g, (gpointer)mid);
    const weft_node_t *act = sole_consumer(v, mid);
    if (act && act->n_inputs == 1 && act->n_outputs == 1 && plain_float(act) &&
        in_list(activations, act->op_name) && !fed_or_fetched_past_0(v, act))
      g_ptr_array_add(g, (gpointer)act);
    g_ptr_array_add(groups, g);
  }
  return groups;
}

static void set_string_list(weft_attrs_t *attrs, const char *name, const char *const *values,
                            int n) {
  weft__attrs_set(attrs, name, weft__attr_value_new_string_list(values, n));
}

/* A dilated group's convolution: the inner one's attributes with the dilations and padding the
 * SpaceToBatchND / BatchToSpaceND pair stood for. */
static void set_dilation(weft_attrs_t *attrs, const GPtrArray *members) {
  dilation_t d;
  if (!dilated(members->pdata[0], members->pdata[1], members->pdata[2], &d)) return;
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_LIST_INT);
  v->u.list.n = (size_t)d.ns + 2;
  v->u.list.i = g_new(int64_t, v->u.list.n);
  /* [1, d..., 1], or [1, 1, d...] channels first. */
  v->u.list.i[0] = 1;
  v->u.list.i[d.cfirst ? 1 : d.ns + 1] = 1;
  for (int i = 0; i < d.ns; i++) v->u.list.i[i + (d.cfirst ? 2 : 1)] = d.block[i];
  weft__attrs_set(attrs, "dilations", v);
  v = weft__attr_value_new(WEFT_ATTR_STRING);
  v->u.s.data = g_strdup(d.same ? "SAME" : "VALID");
  v->u.s.len = strlen(v->u.s.data);
  weft__attrs_set(attrs, "padding", v);
}

weft_status_t *weft__fuse_build_contraction(weft_graph_t *graph, const GPtrArray *members,
                                            weft_node_t **out) {
  if (strcmp(((const weft_node_t *)members->pdata[0])->op_name, "Transpose") == 0)
    return build_transposed_pool(graph, members, out);
  /* A dilated group: SpaceToBatchND, the convolution, BatchToSpaceND, then maybe an epilogue. */
  bool dilated_conv = strcmp(((const weft_node_t *)members->pdata[0])->op_name,
                             "SpaceToBatchND") == 0;
  guint first = dilated_conv ? 1 : 0, epilogue = dilated_conv ? 3 : 1;
  const weft_node_t *root = members->pdata[first];
  const weft_node_t *mid = members->len > epilogue ? members->pdata[epilogue] : NULL;
  const weft_node_t *act = members->len > epilogue + 1 ? members->pdata[epilogue + 1] : NULL;
  bool bias = mid && strcmp(mid->op_name, "BiasAdd") == 0;
  const char *op = !mid ? root->op_name
                   : strcmp(root->op_name, "MatMul") == 0 ? "_FusedMatMul"
                   : strcmp(root->op_name, "Conv2D") == 0 ? "_FusedConv2D"
                                                           : "_FusedDepthwiseConv2dNative";
  weft__edge_t inputs[6];
  int n_inputs = 0;
  inputs[n_inputs++] = dilated_conv ? ((const weft_node_t *)members->pdata[0])->inputs[0]
                                    : root->inputs[0];
  inputs[n_inputs++] = root->inputs[1];
  for (int i = 1; mid && i < mid->n_inputs; i++) inputs[n_inputs++] = mid->inputs[i];
  weft_attrs_t *attrs = weft__attrs_new();
  static const char *const root_attrs[] = {"T", "transpose_a", "transpose_b", "strides",
                                           "padding", "explicit_paddings", "data_format",
                                           "dilations", "use_cudnn_on_gpu", NULL};
  for (int a = 0; root_attrs[a]; a++) copy_attr(attrs, root, root_attrs[a]);
  if (dilated_conv) set_dilation(attrs, members);
  const weft_node_t *last = members->pdata[members->len - 1];
  if (!mid) {
    /* The convolution alone, named as the group's last node. */
    weft_status_t *st =
        weft__graph_add_node(graph, last->name, op, inputs, n_inputs, NULL, 0, "", attrs, out);
    weft__attrs_free(attrs);
    return st;
  }
  weft__attr_value_t *v = weft__attr_value_new(WEFT_ATTR_INT);
  v->u.i = n_inputs - 2;
  weft__attrs_set(attrs, "num_args", v);
  const char *ops[2] = {bias ? "BiasAdd" : "FusedBatchNorm", act ? act->op_name : NULL};
  set_string_list(attrs, "fused_ops", ops, act ? 2 : 1);
  v = weft__attr_value_new(WEFT_ATTR_FLOAT);
  const weft__attr_value_t *eps = bias ? NULL : weft__attrs_get(mid->attrs, "epsilon");
  v->u.f = eps && eps->kind == WEFT_ATTR_FLOAT ? eps->u.f : 1e-4f;
  weft__attrs_set(attrs, "epsilon", v);
  v = weft__attr_value_new(WEFT_ATTR_FLOAT);
  const weft__attr_value_t *alpha = act ? weft__attrs_get(act->attrs, "alpha") : NULL;
  v->u.f = alpha && alpha->kind == WEFT_ATTR_FLOAT ? alpha->u.f : 0.2f;
  weft__attrs_set(attrs, "leakyrelu_alpha", v);
  /* Named as the group's last node, as a fused elementwise chain is. */
  weft_status_t *st =
      weft__graph_add_node(graph, last->name, op, inputs, n_inputs, NULL, 0, "", attrs, out);
  weft__attrs_free(attrs);
  return st;
}
