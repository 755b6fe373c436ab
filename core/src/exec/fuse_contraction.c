/* fuse_contraction.c: the contraction half of the plan-time fusion pass (fuse.c), what
 * TensorFlow's grappler remapper does on the CPU: MatMul -> BiasAdd [-> activation] becomes one
 * _FusedMatMul node, and Conv2D or DepthwiseConv2dNative -> BiasAdd or FusedBatchNorm
 * (inference) [-> activation] one _FusedConv2D / _FusedDepthwiseConv2dNative, with TensorFlow's
 * attributes (fused_ops, num_args, epsilon, leakyrelu_alpha), so that the kernel finishes each
 * block of the product while it is in cache instead of a second pass over memory. fuse.c owns
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

GPtrArray *weft__fuse_find_contractions(const weft__fuse_view_t *v) {
  GPtrArray *groups = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint k = 0; k < v->p->nodes->len; k++) {
    const weft_node_t *root = v->p->nodes->pdata[k];
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

static void copy_attr(weft_attrs_t *to, const weft_node_t *from, const char *name) {
  const weft__attr_value_t *a = weft__attrs_get(from->attrs, name);
  if (a) weft__attrs_set(to, name, weft__attr_value_copy(a));
}

weft_status_t *weft__fuse_build_contraction(weft_graph_t *graph, const GPtrArray *members,
                                            weft_node_t **out) {
  const weft_node_t *root = members->pdata[0], *mid = members->pdata[1];
  const weft_node_t *act = members->len > 2 ? members->pdata[2] : NULL;
  bool bias = strcmp(mid->op_name, "BiasAdd") == 0;
  const char *op = strcmp(root->op_name, "MatMul") == 0 ? "_FusedMatMul"
                   : strcmp(root->op_name, "Conv2D") == 0 ? "_FusedConv2D"
                                                           : "_FusedDepthwiseConv2dNative";
  weft__edge_t inputs[6];
  int n_inputs = 0;
  inputs[n_inputs++] = root->inputs[0];
  inputs[n_inputs++] = root->inputs[1];
  for (int i = 1; i < mid->n_inputs; i++) inputs[n_inputs++] = mid->inputs[i];
  weft_attrs_t *attrs = weft__attrs_new();
  static const char *const root_attrs[] = {"T", "transpose_a", "transpose_b", "strides",
                                           "padding", "explicit_paddings", "data_format",
                                           "dilations", "use_cudnn_on_gpu", NULL};
  for (int a = 0; root_attrs[a]; a++) copy_attr(attrs, root, root_attrs[a]);
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
  const weft_node_t *last = members->pdata[members->len - 1];
  /* Named as the group's last node, as a fused elementwise chain is. */
  weft_status_t *st =
      weft__graph_add_node(graph, last->name, op, inputs, n_inputs, NULL, 0, "", attrs, out);
  weft__attrs_free(attrs);
  return st;
}
