/* A frozen TensorFlow graph's computation as an ONNX model (opset 13), for `weft bench --graph`
 * to time ONNX Runtime on the same computation: the ops of common conv nets and MLPs are mapped
 * one by one (NHWC convolutions and pools between Transposes to ONNX's NCHW); anything else is
 * refused naming the op and the node, so that the peer column says why it is empty.
 *
 * Whatever does not depend on a feed (weights, frozen constants, a variable's value) is evaluated
 * by Weft's own session and becomes an initializer, and so are the shape-like operands (Reshape's
 * shape, Mean's axes, Pad's paddings, ...) even where they are computed from a feed's shape:
 * the feeds' shapes are fixed for the bench, so those values are too. */
#include <string.h>

#include "bench.h"
#include "graph/graph_internal.h"

/* Deep enough for any chain of layers; a cycle or a pathological graph ends in an error. */
#define EXPORT_MAX_DEPTH 20000

typedef struct exporter {
  const bench_graph_io_t *io;
  bench_onnx_t *m;
  GHashTable *names;  /* Weft tensor name -> its ONNX name (both g_free) */
  guint8 *feed_dep;   /* per node id: 0 not known yet, 1 independent of the feeds, 2 dependent */
  int depth;
} exporter_t;

char *bench_onnx_tensor_name(weft_output_t o) {
  return o.index == 0 ? g_strdup(weft_node_name(o.node))
                      : g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

static char *weft_name(weft_output_t o) {
  return g_strdup_printf("%s:%d", weft_node_name(o.node), o.index);
}

static weft_status_t *refuse(weft_node_t *n, const char *why) {
  return weft_status_new(WEFT_UNIMPLEMENTED, "ONNX export: %s node '%s': %s", weft_node_op(n),
                         weft_node_name(n), why);
}

static bool depends_on_feed(exporter_t *x, weft_node_t *n) {
  int id = n->id;
  if (x->feed_dep[id]) return x->feed_dep[id] == 2;
  bool dep = false;
  for (int k = 0; k < x->io->n_feeds && !dep; k++) dep = x->io->feeds[k].node == n;
  /* Marked first, so that a (malformed) cycle ends. */
  x->feed_dep[id] = dep ? 2 : 1;
  for (int k = 0; k < weft_node_num_inputs(n) && !dep; k++)
    dep = depends_on_feed(x, weft_node_input(n, k).node);
  x->feed_dep[id] = dep ? 2 : 1;
  return dep;
}

/* The value of o in the bench's session, with the feeds fed (the caller unrefs it). */
static weft_status_t *evaluate(exporter_t *x, weft_output_t o, weft_tensor_t **value) {
  const bench_graph_io_t *io = x->io;
  char **feed_names = g_new0(char *, io->n_feeds + 1);
  for (int k = 0; k < io->n_feeds; k++) feed_names[k] = weft_name(io->feeds[k]);
  char *fetch = weft_name(o);
  const char *fetches[] = {fetch};
  *value = NULL;
  weft_status_t *st = weft_session_run(io->session, (const char *const *)feed_names,
                                       io->feed_values, io->n_feeds, fetches, value, 1, NULL, 0);
  if (st) st = weft_status_prefix(st, "ONNX export: evaluating %s", fetch);
  g_free(fetch);
  g_strfreev(feed_names);
  return st;
}

/* A shape-like operand as int64s (*n of them, g_free *vals). */
static weft_status_t *operand_ints(exporter_t *x, weft_node_t *n, int input, int64_t **vals,
                                   int *count) {
  weft_tensor_t *t = NULL;
  WEFT_RETURN_IF_ERROR(evaluate(x, weft_node_input(n, input), &t));
  weft_dtype_t dt = weft_tensor_dtype(t);
  int64_t len = weft_tensor_num_elements(t);
  if ((dt != WEFT_DT_INT32 && dt != WEFT_DT_INT64) || len > 4096) {
    weft_tensor_unref(t);
    return refuse(n, "a shape-like input is not a small int32/int64 tensor");
  }
  *vals = g_new(int64_t, len + 1);
  for (int64_t k = 0; k < len; k++)
    (*vals)[k] = dt == WEFT_DT_INT32 ? ((const int32_t *)weft_tensor_data(t))[k]
                                     : ((const int64_t *)weft_tensor_data(t))[k];
  *count = (int)len;
  weft_tensor_unref(t);
  return NULL;
}

/* A fresh ONNX name for a helper tensor of node n. */
static char *helper_name(weft_node_t *n, const char *what) {
  return g_strdup_printf("%s/__%s", weft_node_name(n), what);
}

/* An int64 initializer of node n (rank 1, or 0 when scalar) named after `what`. */
static char *ints_initializer(exporter_t *x, weft_node_t *n, const char *what, const int64_t *v,
                              int count) {
  char *name = helper_name(n, what);
  int64_t dims[1] = {count};
  bench_onnx_initializer_int64(x->m, name, 1, dims, v);
  return name;
}

static char *float_initializer(exporter_t *x, weft_node_t *n, const char *what, float v) {
  char *name = helper_name(n, what);
  bench_onnx_initializer(x->m, name, 0, NULL, &v);
  return name;
}

static const weft__attr_value_t *attr(weft_node_t *n, const char *name) {
  return weft__attrs_get(n->attrs, name);
}

static bool attr_bool(weft_node_t *n, const char *name) {
  const weft__attr_value_t *v = attr(n, name);
  return v && v->kind == WEFT_ATTR_BOOL && v->u.b;
}

static const char *attr_string(weft_node_t *n, const char *name, const char *dflt) {
  const weft__attr_value_t *v = attr(n, name);
  return v && v->kind == WEFT_ATTR_STRING ? v->u.s.data : dflt;
}

/* A list(int) attr of exactly `want` values into out; false otherwise. */
static bool attr_ints(weft_node_t *n, const char *name, int want, int64_t *out) {
  const weft__attr_value_t *v = attr(n, name);
  if (!v || v->kind != WEFT_ATTR_LIST_INT || (int)v->u.list.n != want) return false;
  for (int k = 0; k < want; k++) out[k] = v->u.list.i[k];
  return true;
}

static weft_status_t *emit(exporter_t *x, weft_output_t o, char **onnx);

/* Data input k of n, emitted: its ONNX name (g_free). */
static weft_status_t *input_name(exporter_t *x, weft_node_t *n, int k, char **onnx) {
  return emit(x, weft_node_input(n, k), onnx);
}

static void node(exporter_t *x, const char *op, const char *const *inputs, const char *output,
                 const bench_onnx_ints_t *attrs) {
  bench_onnx_node(x->m, op, inputs, output, attrs);
}

static const int64_t TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1};

/* ONNX name of `in` (NHWC) transposed to NCHW, for node n (g_free). */
static char *to_nchw(exporter_t *x, weft_node_t *n, const char *in) {
  char *name = helper_name(n, "nchw");
  bench_onnx_ints_t perm[] = {{"perm", 4, TO_NCHW}, {NULL, 0, NULL}};
  node(x, "Transpose", (const char *[]){in, NULL}, name, perm);
  return name;
}

static void from_nchw(exporter_t *x, const char *in, const char *out) {
  bench_onnx_ints_t perm[] = {{"perm", 4, TO_NHWC}, {NULL, 0, NULL}};
  node(x, "Transpose", (const char *[]){in, NULL}, out, perm);
}

/* The shape of o: as inferred, else (a dimension unknown) as a step computes it. */
static weft_status_t *shape_of(exporter_t *x, weft_output_t o, int *rank, int64_t *dims) {
  *rank = weft_node_output_shape(o.node, o.index, dims);
  bool known = *rank >= 0;
  for (int k = 0; k < *rank; k++) known = known && dims[k] >= 0;
  if (known) return NULL;
  weft_tensor_t *t = NULL;
  WEFT_RETURN_IF_ERROR(evaluate(x, o, &t));
  *rank = weft_tensor_rank(t);
  memcpy(dims, weft_tensor_dims(t), sizeof(int64_t) * (size_t)*rank);
  weft_tensor_unref(t);
  return NULL;
}

/* The first spatial axis of n's data_format: 1 for NHWC (and NWC), 2 for NCHW; 0 for others. */
static int spatial_axis(weft_node_t *n) {
  const char *fmt = attr_string(n, "data_format", "NHWC");
  return strcmp(fmt, "NHWC") == 0 ? 1 : strcmp(fmt, "NCHW") == 0 ? 2 : 0;
}

/* The window of a 2-D conv or pool: kernel k = (kh, kw), strides, dilations and TF's padding
 * (SAME: output ceil(in / stride), the odd pixel of padding after; VALID: none) as ONNX's
 * kernel_shape/strides/dilations/pads [top, left, bottom, right]. */
/* A 2-D window's spatial strides and dilations, and whether TF's padding is SAME (else VALID);
 * anything else refused. */
static weft_status_t *window_attrs(weft_node_t *n, int64_t *strides, int64_t *dilations,
                                   bool *same) {
  int h = spatial_axis(n), c = h == 1 ? 3 : 1;
  if (!h) return refuse(n, "only data_format NHWC and NCHW are exported");
  int64_t s4[4], d4[4] = {1, 1, 1, 1};
  if (!attr_ints(n, "strides", 4, s4)) return refuse(n, "strides is not a list of 4");
  if (attr(n, "dilations") && !attr_ints(n, "dilations", 4, d4))
    return refuse(n, "dilations is not a list of 4");
  if (s4[0] != 1 || s4[c] != 1 || d4[0] != 1 || d4[c] != 1)
    return refuse(n, "strides or dilations over the batch or channels");
  const char *padding = attr_string(n, "padding", "");
  *same = strcmp(padding, "SAME") == 0;
  if (!*same && strcmp(padding, "VALID") != 0)
    return refuse(n, "padding is neither SAME nor VALID");
  for (int a = 0; a < 2; a++) {
    strides[a] = s4[h + a];
    dilations[a] = d4[h + a];
  }
  return NULL;
}

static weft_status_t *window(exporter_t *x, weft_node_t *n, weft_output_t in, const int64_t *k,
                             int64_t *strides, int64_t *dilations, int64_t *pads) {
  int h = spatial_axis(n);
  bool same = false;
  WEFT_RETURN_IF_ERROR(window_attrs(n, strides, dilations, &same));
  int64_t dims[WEFT_MAX_RANK];
  int rank = 0;
  WEFT_RETURN_IF_ERROR(shape_of(x, in, &rank, dims));
  if (rank != 4) return refuse(n, "its input is not of rank 4");
  for (int a = 0; a < 2; a++) {
    pads[a] = pads[a + 2] = 0;
    if (!same) continue;
    int64_t size = dims[h + a], out = (size + strides[a] - 1) / strides[a];
    int64_t total = (out - 1) * strides[a] + (k[a] - 1) * dilations[a] + 1 - size;
    if (total < 0) total = 0;
    pads[a] = total / 2;
    pads[a + 2] = total - total / 2;
  }
  return NULL;
}

/* The ONNX op `op` over NCHW data: between Transposes when n is NHWC. */
static void nchw_node(exporter_t *x, weft_node_t *n, const char *op, const char *const *inputs,
                      const char *out, const bench_onnx_ints_t *attrs,
                      const bench_onnx_float_t *floats) {
  if (spatial_axis(n) == 2) {
    bench_onnx_node_floats(x->m, op, inputs, out, attrs, floats);
    return;
  }
  const char *in[8] = {NULL};
  char *nchw = to_nchw(x, n, inputs[0]), *res = helper_name(n, "nchw_out");
  in[0] = nchw;
  for (int k = 1; k < 7 && inputs[k]; k++) in[k] = inputs[k];
  bench_onnx_node_floats(x->m, op, in, res, attrs, floats);
  from_nchw(x, res, out);
  g_free(nchw);
  g_free(res);
}

/* Filter f (H W I O; depthwise H W C M) as an initializer of n (the name, g_free) in ONNX's
 * O I H W (depthwise [C*M, 1, H, W], TF's output channel c*M + m): Conv's, and ConvTranspose's
 * M C H W for a Conv2DBackpropInput's H W C M. */
static char *filter_initializer(exporter_t *x, weft_node_t *n, weft_tensor_t *f, bool depthwise) {
  const int64_t *fd = weft_tensor_dims(f);
  int64_t kh = fd[0], kw = fd[1], ci = fd[2], co = fd[3];
  int64_t odims[4] = {depthwise ? ci * co : co, depthwise ? 1 : ci, kh, kw};
  float *w = g_new(float, kh * kw * ci * co);
  const float *src = weft_tensor_data(f);
  for (int64_t y = 0; y < kh; y++)
    for (int64_t xx = 0; xx < kw; xx++)
      for (int64_t i = 0; i < ci; i++)
        for (int64_t o = 0; o < co; o++) {
          float v = src[((y * kw + xx) * ci + i) * co + o];
          if (depthwise) w[((i * co + o) * kh + y) * kw + xx] = v;
          else w[((o * ci + i) * kh + y) * kw + xx] = v;
        }
  char *wname = helper_name(n, "filter_oihw");
  bench_onnx_initializer(x->m, wname, 4, odims, w);
  g_free(w);
  return wname;
}

/* Conv2D and DepthwiseConv2dNative: the filter, HWIO (depthwise: H W C M), becomes OIHW
 * (depthwise: [C*M, 1, H, W], one group per input channel, TF's output channel c*M + m). */
static weft_status_t *emit_conv(exporter_t *x, weft_node_t *n, const char *out) {
  bool depthwise = strcmp(weft_node_op(n), "DepthwiseConv2dNative") == 0;
  weft_output_t fo = weft_node_input(n, 1);
  if (depends_on_feed(x, fo.node)) return refuse(n, "the filter depends on a feed");
  weft_tensor_t *f = NULL;
  WEFT_RETURN_IF_ERROR(evaluate(x, fo, &f));
  if (weft_tensor_dtype(f) != WEFT_DT_FLOAT || weft_tensor_rank(f) != 4) {
    weft_tensor_unref(f);
    return refuse(n, "the filter is not a float32 tensor of rank 4");
  }
  const int64_t *fd = weft_tensor_dims(f);
  int64_t kh = fd[0], kw = fd[1], ci = fd[2];
  int64_t k[2] = {kh, kw}, strides[2], dil[2], pads[4];
  weft_status_t *st = window(x, n, weft_node_input(n, 0), k, strides, dil, pads);
  if (st) {
    weft_tensor_unref(f);
    return st;
  }
  char *wname = filter_initializer(x, n, f, depthwise);
  weft_tensor_unref(f);
  char *in = NULL;
  st = input_name(x, n, 0, &in);
  if (!st) {
    int64_t group = depthwise ? ci : 1;
    bench_onnx_ints_t attrs[] = {{"kernel_shape", 2, k}, {"strides", 2, strides},
                                 {"dilations", 2, dil},  {"pads", 4, pads},
                                 {"group", -1, &group},  {NULL, 0, NULL}};
    nchw_node(x, n, "Conv", (const char *[]){in, wname, NULL}, out, attrs, NULL);
  }
  g_free(in);
  g_free(wname);
  return st;
}

/* Conv2DBackpropInput (a transposed convolution): ONNX ConvTranspose of out_backprop, its
 * filter H W C M becoming M C H W, and the forward convolution's padding (TF's SAME or VALID
 * from the output's size, input_sizes) as pads; where the output is longer than the windows
 * reach, the rest is output_padding. */
static weft_status_t *emit_conv_transpose(exporter_t *x, weft_node_t *n, const char *out) {
  weft_output_t fo = weft_node_input(n, 1);
  if (depends_on_feed(x, fo.node)) return refuse(n, "the filter depends on a feed");
  int h = spatial_axis(n);
  int64_t strides[2], dil[2];
  bool same = false;
  WEFT_RETURN_IF_ERROR(window_attrs(n, strides, dil, &same));
  int64_t *sizes = NULL, dy[WEFT_MAX_RANK];
  int count = 0, rank = 0;
  WEFT_RETURN_IF_ERROR(operand_ints(x, n, 0, &sizes, &count));
  weft_status_t *st = shape_of(x, weft_node_input(n, 2), &rank, dy);
  if (!st && (count != 4 || rank != 4)) st = refuse(n, "input_sizes or out_backprop is not 4-D");
  weft_tensor_t *f = NULL;
  if (!st) st = evaluate(x, fo, &f);
  if (!st && (weft_tensor_dtype(f) != WEFT_DT_FLOAT || weft_tensor_rank(f) != 4))
    st = refuse(n, "the filter is not a float32 tensor of rank 4");
  if (st) {
    g_free(sizes);
    weft_tensor_unref(f);
    return st;
  }
  const int64_t *fd = weft_tensor_dims(f);
  int64_t k[2] = {fd[0], fd[1]}, pads[4], extra[2];
  for (int a = 0; a < 2; a++) {
    int64_t reach = (dy[h + a] - 1) * strides[a] + (k[a] - 1) * dil[a] + 1;
    int64_t total = same ? reach - sizes[h + a] : 0;
    if (total < 0) total = 0;
    pads[a] = total / 2;
    /* What the windows reach past the output's end is cut; what they fall short, added. */
    int64_t end = reach - pads[a] - sizes[h + a];
    pads[a + 2] = end > 0 ? end : 0;
    extra[a] = end < 0 ? -end : 0;
  }
  g_free(sizes);
  char *wname = filter_initializer(x, n, f, false);
  weft_tensor_unref(f);
  char *in = NULL;
  st = input_name(x, n, 2, &in);
  if (!st) {
    bench_onnx_ints_t attrs[] = {{"kernel_shape", 2, k}, {"strides", 2, strides},
                                 {"dilations", 2, dil},  {"pads", 4, pads},
                                 {"output_padding", 2, extra}, {NULL, 0, NULL}};
    nchw_node(x, n, "ConvTranspose", (const char *[]){in, wname, NULL}, out, attrs, NULL);
  }
  g_free(in);
  g_free(wname);
  return st;
}

static weft_status_t *emit_pool(exporter_t *x, weft_node_t *n, const char *out) {
  int64_t ksize[4], k[2], strides[2], dil[2], pads[4];
  int h = spatial_axis(n), c = h == 1 ? 3 : 1;
  if (!h || !attr_ints(n, "ksize", 4, ksize) || ksize[0] != 1 || ksize[c] != 1)
    return refuse(n, "ksize is not 1 over the batch and channels");
  k[0] = ksize[h];
  k[1] = ksize[h + 1];
  WEFT_RETURN_IF_ERROR(window(x, n, weft_node_input(n, 0), k, strides, dil, pads));
  char *in = NULL;
  WEFT_RETURN_IF_ERROR(input_name(x, n, 0, &in));
  /* AveragePool's count_include_pad defaults to 0: TF's average over the valid pixels only. */
  bench_onnx_ints_t attrs[] = {{"kernel_shape", 2, k}, {"strides", 2, strides},
                               {"pads", 4, pads}, {NULL, 0, NULL}};
  nchw_node(x, n, strcmp(weft_node_op(n), "MaxPool") == 0 ? "MaxPool" : "AveragePool",
            (const char *[]){in, NULL}, out, attrs, NULL);
  g_free(in);
  return NULL;
}

/* FusedBatchNorm (V2, V3) for inference: ONNX BatchNormalization over NCHW. */
static weft_status_t *emit_batch_norm(exporter_t *x, weft_node_t *n, const char *out) {
  if (attr_bool(n, "is_training")) return refuse(n, "is_training is true (only inference)");
  if (!spatial_axis(n)) return refuse(n, "only data_format NHWC and NCHW are exported");
  const weft__attr_value_t *eps = attr(n, "epsilon");
  char *in[5] = {NULL};
  weft_status_t *st = NULL;
  for (int k = 0; k < 5 && !st; k++) st = input_name(x, n, k, &in[k]);
  if (!st) {
    bench_onnx_float_t floats[] = {{"epsilon", eps && eps->kind == WEFT_ATTR_FLOAT ? eps->u.f
                                                                                     : 1e-4f},
                                   {NULL, 0}};
    nchw_node(x, n, "BatchNormalization", (const char *[]){in[0], in[1], in[2], in[3], in[4], NULL},
              out, NULL, floats);
  }
  for (int k = 0; k < 5; k++) g_free(in[k]);
  return st;
}

/* NCHW BiasAdd: the bias [C] reshaped to [C, 1, ...] to broadcast over the spatial axes. */
static weft_status_t *bias_to_channels(exporter_t *x, weft_node_t *n, char **bias) {
  if (strcmp(attr_string(n, "data_format", "NHWC"), "NCHW") != 0)
    return refuse(n, "only data_format NHWC and NCHW are exported");
  int64_t dims[WEFT_MAX_RANK], shape[WEFT_MAX_RANK];
  int rank = 0;
  WEFT_RETURN_IF_ERROR(shape_of(x, weft_node_input(n, 0), &rank, dims));
  if (rank < 3) return refuse(n, "an NCHW input of rank below 3");
  shape[0] = -1;
  for (int k = 1; k < rank - 1; k++) shape[k] = 1;
  char *sname = ints_initializer(x, n, "bias_shape", shape, rank - 1);
  char *out = helper_name(n, "bias_nchw");
  node(x, "Reshape", (const char *[]){*bias, sname, NULL}, out, NULL);
  g_free(sname);
  g_free(*bias);
  *bias = out;
  return NULL;
}

/* Ops that map to one ONNX op of the same inputs and no attributes. */
static const char *const SAME_OPS[][2] = {
    {"Add", "Add"},       {"AddV2", "Add"},        {"Sub", "Sub"},
    {"Mul", "Mul"},       {"RealDiv", "Div"},      {"Relu", "Relu"},
    {"Elu", "Elu"},       {"Sigmoid", "Sigmoid"},  {"Tanh", "Tanh"},
    {"Softmax", "Softmax"}, {"LogSoftmax", "LogSoftmax"}, {"Maximum", "Max"},
    {"Minimum", "Min"},   {"Exp", "Exp"},          {"Sqrt", "Sqrt"},
    {"Neg", "Neg"},       {"Abs", "Abs"},
    /* GELU's pieces (Erf, Pow) and the rest of the float unary ops ONNX has by the same name. */
    {"Erf", "Erf"},       {"Pow", "Pow"},          {"Log", "Log"},
    {"Softplus", "Softplus"}, {"Softsign", "Softsign"}, {"Reciprocal", "Reciprocal"},
    {"Sin", "Sin"},       {"Cos", "Cos"},          {"Floor", "Floor"},
    {"Ceil", "Ceil"},
    /* ONNX's default alpha and gamma are TensorFlow's fixed ones, as float32. */
    {"Selu", "Selu"},
    /* NHWC: the bias is over the last axis, where ONNX's broadcasting puts it. */
    {"BiasAdd", "Add"},
};

/* Emits node n's output 0 (only that one is exported) under the ONNX name `out`. */
static weft_status_t *emit_op(exporter_t *x, weft_node_t *n, const char *out) {
  const char *op = weft_node_op(n);
  int n_in = weft_node_num_inputs(n);
  if (weft_node_num_outputs(n) > 0 && weft_node_output_dtype(n, 0) != WEFT_DT_FLOAT)
    return refuse(n, "its output is not float32");
  for (size_t k = 0; k < G_N_ELEMENTS(SAME_OPS); k++) {
    if (strcmp(op, SAME_OPS[k][0]) != 0) continue;
    char *in[2] = {NULL, NULL};
    weft_status_t *st = NULL;
    for (int i = 0; i < n_in && i < 2 && !st; i++) st = input_name(x, n, i, &in[i]);
    if (!st && strcmp(op, "BiasAdd") == 0 && spatial_axis(n) != 1)
      st = bias_to_channels(x, n, &in[1]);
    if (!st) node(x, SAME_OPS[k][1], (const char *[]){in[0], in[1], NULL}, out, NULL);
    g_free(in[0]);
    g_free(in[1]);
    return st;
  }
  if (strcmp(op, "Conv2D") == 0 || strcmp(op, "DepthwiseConv2dNative") == 0)
    return emit_conv(x, n, out);
  if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AvgPool") == 0) return emit_pool(x, n, out);
  if (strcmp(op, "Conv2DBackpropInput") == 0) return emit_conv_transpose(x, n, out);
  if (g_str_has_prefix(op, "FusedBatchNorm")) return emit_batch_norm(x, n, out);
  char *a = NULL, *extra = NULL;
  weft_status_t *st = NULL;
  int64_t *vals = NULL;
  int count = 0;
  if (strcmp(op, "MatMul") == 0) {
    char *b = NULL;
    st = input_name(x, n, 0, &a);
    if (!st) st = input_name(x, n, 1, &b);
    int64_t ta = attr_bool(n, "transpose_a"), tb = attr_bool(n, "transpose_b");
    bench_onnx_ints_t attrs[] = {{"transA", -1, &ta}, {"transB", -1, &tb}, {NULL, 0, NULL}};
    if (!st) node(x, "Gemm", (const char *[]){a, b, NULL}, out, attrs);
    g_free(b);
  } else if (strcmp(op, "Relu6") == 0) {
    st = input_name(x, n, 0, &a);
    char *lo = float_initializer(x, n, "zero", 0.0f), *hi = float_initializer(x, n, "six", 6.0f);
    if (!st) node(x, "Clip", (const char *[]){a, lo, hi, NULL}, out, NULL);
    g_free(lo);
    g_free(hi);
  } else if (strcmp(op, "Square") == 0) {
    st = input_name(x, n, 0, &a);
    if (!st) node(x, "Mul", (const char *[]){a, a, NULL}, out, NULL);
  } else if (strcmp(op, "Rsqrt") == 0) {
    st = input_name(x, n, 0, &a);
    extra = helper_name(n, "sqrt");
    if (!st) node(x, "Sqrt", (const char *[]){a, NULL}, extra, NULL);
    if (!st) node(x, "Reciprocal", (const char *[]){extra, NULL}, out, NULL);
  } else if (strcmp(op, "Reshape") == 0) {
    st = operand_ints(x, n, 1, &vals, &count);
    for (int k = 0; k < count && !st; k++)
      if (vals[k] == 0) st = refuse(n, "a dimension of 0 (ONNX's Reshape reads it as 'keep')");
    if (!st) st = input_name(x, n, 0, &a);
    if (!st) {
      extra = ints_initializer(x, n, "shape", vals, count);
      node(x, "Reshape", (const char *[]){a, extra, NULL}, out, NULL);
    }
  } else if (strcmp(op, "Squeeze") == 0) {
    const weft__attr_value_t *v = attr(n, "squeeze_dims");
    st = input_name(x, n, 0, &a);
    if (!st && v && v->kind == WEFT_ATTR_LIST_INT && v->u.list.n > 0) {
      extra = ints_initializer(x, n, "axes", v->u.list.i, (int)v->u.list.n);
      node(x, "Squeeze", (const char *[]){a, extra, NULL}, out, NULL);
    } else if (!st) {
      node(x, "Squeeze", (const char *[]){a, NULL}, out, NULL);
    }
  } else if (strcmp(op, "ExpandDims") == 0) {
    st = operand_ints(x, n, 1, &vals, &count);
    if (!st && count != 1) st = refuse(n, "the axis is not a scalar");
    if (!st) st = input_name(x, n, 0, &a);
    if (!st) {
      extra = ints_initializer(x, n, "axes", vals, 1);
      node(x, "Unsqueeze", (const char *[]){a, extra, NULL}, out, NULL);
    }
  } else if (strcmp(op, "Mean") == 0) {
    st = operand_ints(x, n, 1, &vals, &count);
    if (!st) st = input_name(x, n, 0, &a);
    int64_t keep = attr_bool(n, "keep_dims");
    bench_onnx_ints_t attrs[] = {{"axes", count, vals}, {"keepdims", -1, &keep}, {NULL, 0, NULL}};
    if (!st) node(x, "ReduceMean", (const char *[]){a, NULL}, out, attrs);
  } else if (strcmp(op, "Transpose") == 0) {
    st = operand_ints(x, n, 1, &vals, &count);
    if (!st) st = input_name(x, n, 0, &a);
    bench_onnx_ints_t attrs[] = {{"perm", count, vals}, {NULL, 0, NULL}};
    if (!st) node(x, "Transpose", (const char *[]){a, NULL}, out, attrs);
  } else if (strcmp(op, "Pad") == 0) {
    st = operand_ints(x, n, 1, &vals, &count);
    if (!st) st = input_name(x, n, 0, &a);
    if (!st) {
      /* TF: [rank, 2] (before, after) per axis; ONNX: every before, then every after. */
      int rank = count / 2;
      int64_t *pads = g_new(int64_t, count + 1);
      for (int k = 0; k < rank; k++) {
        pads[k] = vals[2 * k];
        pads[rank + k] = vals[2 * k + 1];
      }
      extra = ints_initializer(x, n, "pads", pads, count);
      g_free(pads);
      node(x, "Pad", (const char *[]){a, extra, NULL}, out, NULL);
    }
  } else if (strcmp(op, "ConcatV2") == 0) {
    st = operand_ints(x, n, n_in - 1, &vals, &count);
    if (!st && count != 1) st = refuse(n, "the axis is not a scalar");
    char **ins = g_new0(char *, n_in);
    for (int k = 0; k < n_in - 1 && !st; k++) st = input_name(x, n, k, &ins[k]);
    bench_onnx_ints_t attrs[] = {{"axis", -1, vals}, {NULL, 0, NULL}};
    if (!st) node(x, "Concat", (const char *const *)ins, out, attrs);
    g_strfreev(ins);
  } else {
    st = refuse(n, "the op is not mapped to ONNX");
  }
  g_free(a);
  g_free(extra);
  g_free(vals);
  return st;
}

static weft_status_t *emit(exporter_t *x, weft_output_t o, char **onnx) {
  char *key = weft_name(o);
  const char *known = g_hash_table_lookup(x->names, key);
  if (known) {
    *onnx = g_strdup(known);
    g_free(key);
    return NULL;
  }
  weft_node_t *n = o.node;
  const char *op = weft_node_op(n);
  weft_status_t *st = NULL;
  char *name = NULL;
  if (++x->depth > EXPORT_MAX_DEPTH) {
    st = refuse(n, "the graph is deeper than the exporter follows");
  } else if (!depends_on_feed(x, n)) {
    /* A constant of the step: its value, as Weft computes it. */
    weft_tensor_t *t = NULL;
    st = evaluate(x, o, &t);
    if (!st && weft_tensor_dtype(t) != WEFT_DT_FLOAT)
      st = refuse(n, "a constant that is not float32 feeds a mapped op");
    if (!st) {
      name = bench_onnx_tensor_name(o);
      bench_onnx_initializer(x->m, name, weft_tensor_rank(t), weft_tensor_dims(t),
                             weft_tensor_data(t));
    }
    weft_tensor_unref(t);
  } else if (strcmp(op, "Identity") == 0 || strcmp(op, "StopGradient") == 0 ||
             strcmp(op, "Snapshot") == 0 ||
             (strcmp(op, "Cast") == 0 && weft_node_output_dtype(n, 0) == WEFT_DT_FLOAT &&
              weft_node_input(n, 0).node &&
              weft_node_output_dtype(weft_node_input(n, 0).node, weft_node_input(n, 0).index) ==
                  WEFT_DT_FLOAT)) {
    st = input_name(x, n, 0, &name); /* the same tensor under the input's name */
  } else if (strcmp(op, "IdentityN") == 0 && o.index < weft_node_num_inputs(n)) {
    st = input_name(x, n, o.index, &name); /* output k is input k */
  } else if (o.index != 0) {
    st = refuse(n, "only its first output is exported");
  } else {
    name = bench_onnx_tensor_name(o);
    st = emit_op(x, n, name);
  }
  x->depth--;
  if (st) {
    g_free(name);
    g_free(key);
    return st;
  }
  g_hash_table_insert(x->names, key, g_strdup(name));
  *onnx = name;
  return NULL;
}

weft_status_t *bench_graph_to_onnx(const bench_graph_io_t *io, GBytes **model) {
  *model = NULL;
  exporter_t x = {io, bench_onnx_new(), g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                               g_free),
                  g_new0(guint8, weft_graph_num_nodes(io->graph)), 0};
  weft_status_t *st = NULL;
  for (int k = 0; k < io->n_feeds && !st; k++) {
    weft_tensor_t *t = io->feed_values[k];
    if (weft_tensor_dtype(t) != WEFT_DT_FLOAT) {
      st = refuse(io->feeds[k].node, "the feed is not float32");
      break;
    }
    char *name = bench_onnx_tensor_name(io->feeds[k]);
    bench_onnx_input(x.m, name, weft_tensor_rank(t), weft_tensor_dims(t));
    g_hash_table_insert(x.names, weft_name(io->feeds[k]), name);
  }
  char *out = NULL;
  if (!st) st = emit(&x, io->fetch, &out);
  if (!st) {
    /* The graph's output must be a node's output: a fetch that is an alias of a feed or a
     * constant gets an Identity of its own. */
    char *want = bench_onnx_tensor_name(io->fetch);
    if (strcmp(want, out) != 0) node(&x, "Identity", (const char *[]){out, NULL}, want, NULL);
    bench_onnx_output(x.m, want, weft_tensor_rank(io->fetch_value),
                      weft_tensor_dims(io->fetch_value));
    g_free(want);
  }
  g_free(out);
  GBytes *bytes = bench_onnx_finish(x.m);
  if (!st) *model = bytes;
  else g_bytes_unref(bytes);
  g_hash_table_destroy(x.names);
  g_free(x.feed_dep);
  return st;
}
