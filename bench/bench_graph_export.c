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
  guint8 *value_dep;  /* the same for the feeds' values (Shape, Size and Rank read only shapes) */
  guint8 *random;     /* the same for a random op's output (is_random) */
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

/* Whether n depends on a feed's values: a feed, or an op reading one, except through Shape,
 * ShapeN, Size and Rank, which read only its shape (fixed for the bench). */
static bool depends_on_values(exporter_t *x, weft_node_t *n) {
  int id = n->id;
  if (x->value_dep[id]) return x->value_dep[id] == 2;
  bool dep = false;
  for (int k = 0; k < x->io->n_feeds && !dep; k++) dep = x->io->feeds[k].node == n;
  const char *op = weft_node_op(n);
  bool shape_only = strcmp(op, "Shape") == 0 || strcmp(op, "ShapeN") == 0 ||
                    strcmp(op, "Size") == 0 || strcmp(op, "Rank") == 0;
  x->value_dep[id] = dep ? 2 : 1;
  for (int k = 0; k < weft_node_num_inputs(n) && !dep && !shape_only; k++)
    dep = depends_on_values(x, weft_node_input(n, k).node);
  x->value_dep[id] = dep ? 2 : 1;
  return dep;
}

/* Whether n's value is drawn at random each step (a random op, or an op reading one): no
 * initializer can stand for it. */
static bool is_random(exporter_t *x, weft_node_t *n) {
  int id = n->id;
  if (x->random[id]) return x->random[id] == 2;
  const char *op = weft_node_op(n);
  bool r = g_str_has_prefix(op, "Random") || g_str_has_prefix(op, "StatelessRandom") ||
           strstr(op, "TruncatedNormal") || strcmp(op, "Multinomial") == 0;
  x->random[id] = r ? 2 : 1;
  for (int k = 0; k < weft_node_num_inputs(n) && !r; k++)
    r = is_random(x, weft_node_input(n, k).node);
  x->random[id] = r ? 2 : 1;
  return r;
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

/* A scalar initializer of n's output dtype (float32 or float64; NULL for others). */
static char *scalar_initializer(exporter_t *x, weft_node_t *n, const char *what, double v) {
  weft_dtype_t dt = weft_node_output_dtype(n, 0);
  float f = (float)v;
  if (dt != WEFT_DT_FLOAT && dt != WEFT_DT_DOUBLE) return NULL;
  char *name = helper_name(n, what);
  bench_onnx_initializer_typed(x->m, name, dt, 0, NULL, dt == WEFT_DT_FLOAT ? (void *)&f : &v);
  return name;
}

static const weft__attr_value_t *attr(weft_node_t *n, const char *name) {
  return weft__attrs_get(n->attrs, name);
}

static float attr_float(weft_node_t *n, const char *name, float dflt) {
  const weft__attr_value_t *v = attr(n, name);
  return v && v->kind == WEFT_ATTR_FLOAT ? v->u.f : dflt;
}

static int64_t attr_int(weft_node_t *n, const char *name, int64_t dflt) {
  const weft__attr_value_t *v = attr(n, name);
  return v && v->kind == WEFT_ATTR_INT ? v->u.i : dflt;
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

/* ONNX name of `in` (channels last, of rank `rank`) transposed to channels first, for node n
 * (g_free). */
static char *to_nchw(exporter_t *x, weft_node_t *n, const char *in, int rank) {
  char *name = helper_name(n, "nchw");
  int64_t p[WEFT_MAX_RANK] = {0, rank - 1};
  for (int k = 2; k < rank; k++) p[k] = k - 1;
  bench_onnx_ints_t perm[] = {{"perm", rank, p}, {NULL, 0, NULL}};
  node(x, "Transpose", (const char *[]){in, NULL}, name, perm);
  return name;
}

static void from_nchw(exporter_t *x, const char *in, const char *out, int rank) {
  int64_t p[WEFT_MAX_RANK] = {0};
  for (int k = 1; k < rank - 1; k++) p[k] = k + 1;
  p[rank - 1] = 1;
  bench_onnx_ints_t perm[] = {{"perm", rank, p}, {NULL, 0, NULL}};
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

/* The first spatial axis of n's data_format: 1 for channels last (NHWC, NDHWC), 2 for channels
 * first (NCHW, NCDHW); 0 for others. */
static int spatial_axis(weft_node_t *n) {
  const char *fmt = attr_string(n, "data_format", "NHWC");
  return strcmp(fmt, "NHWC") == 0 || strcmp(fmt, "NDHWC") == 0   ? 1
         : strcmp(fmt, "NCHW") == 0 || strcmp(fmt, "NCDHW") == 0 ? 2
                                                                  : 0;
}

/* The window of an s-D conv or pool (s = 2, 3): its spatial strides and dilations, and whether
 * TF's padding is SAME (else VALID); anything else refused. */
static weft_status_t *window_attrs(weft_node_t *n, int s, int64_t *strides, int64_t *dilations,
                                   bool *same) {
  int h = spatial_axis(n), c = h == 1 ? s + 1 : 1;
  if (!h) return refuse(n, "only data_format NHWC, NCHW, NDHWC and NCDHW are exported");
  int64_t sa[5], da[5] = {1, 1, 1, 1, 1};
  if (!attr_ints(n, "strides", s + 2, sa)) return refuse(n, "strides is not a list of rank 4/5");
  if (attr(n, "dilations") && !attr_ints(n, "dilations", s + 2, da))
    return refuse(n, "dilations is not a list of rank 4/5");
  if (sa[0] != 1 || sa[c] != 1 || da[0] != 1 || da[c] != 1)
    return refuse(n, "strides or dilations over the batch or channels");
  const char *padding = attr_string(n, "padding", "");
  *same = strcmp(padding, "SAME") == 0;
  if (!*same && strcmp(padding, "VALID") != 0)
    return refuse(n, "padding is neither SAME nor VALID");
  for (int a = 0; a < s; a++) {
    strides[a] = sa[h + a];
    dilations[a] = da[h + a];
  }
  return NULL;
}

/* The window of an s-D conv or pool: kernel k, strides, dilations and TF's padding (SAME:
 * output ceil(in / stride), the odd pixel of padding after; VALID: none) as ONNX's
 * kernel_shape/strides/dilations/pads [begins..., ends...]. */
static weft_status_t *window(exporter_t *x, weft_node_t *n, weft_output_t in, int s,
                             const int64_t *k, int64_t *strides, int64_t *dilations,
                             int64_t *pads) {
  int h = spatial_axis(n);
  bool same = false;
  WEFT_RETURN_IF_ERROR(window_attrs(n, s, strides, dilations, &same));
  int64_t dims[WEFT_MAX_RANK];
  int rank = 0;
  WEFT_RETURN_IF_ERROR(shape_of(x, in, &rank, dims));
  if (rank != s + 2) return refuse(n, "its input is not of rank 4 (2-D) or 5 (3-D)");
  for (int a = 0; a < s; a++) {
    pads[a] = pads[a + s] = 0;
    if (!same) continue;
    int64_t size = dims[h + a], out = (size + strides[a] - 1) / strides[a];
    int64_t total = (out - 1) * strides[a] + (k[a] - 1) * dilations[a] + 1 - size;
    if (total < 0) total = 0;
    pads[a] = total / 2;
    pads[a + s] = total - total / 2;
  }
  return NULL;
}

/* The ONNX op `op` over channels-first data of rank `rank`: between Transposes when n is
 * channels last. */
static void nchw_node(exporter_t *x, weft_node_t *n, int rank, const char *op,
                      const char *const *inputs, const char *out, const bench_onnx_ints_t *attrs,
                      const bench_onnx_float_t *floats) {
  if (spatial_axis(n) == 2) {
    bench_onnx_node_floats(x->m, op, inputs, out, attrs, floats);
    return;
  }
  const char *in[8] = {NULL};
  char *nchw = to_nchw(x, n, inputs[0], rank), *res = helper_name(n, "nchw_out");
  in[0] = nchw;
  for (int k = 1; k < 7 && inputs[k]; k++) in[k] = inputs[k];
  bench_onnx_node_floats(x->m, op, in, res, attrs, floats);
  from_nchw(x, res, out, rank);
  g_free(nchw);
  g_free(res);
}

/* Filter f (spatial..., I, O; depthwise H W C M) as an initializer of n (the name, g_free) in
 * ONNX's O I spatial... (depthwise [C*M, 1, H, W], TF's output channel c*M + m): Conv's, and
 * ConvTranspose's M C spatial... for a Conv2DBackpropInput's (Conv3DBackpropInputV2's) spatial...
 * C M. */
static char *filter_initializer(exporter_t *x, weft_node_t *n, weft_tensor_t *f, bool depthwise) {
  int r = weft_tensor_rank(f), s = r - 2;
  const int64_t *fd = weft_tensor_dims(f);
  int64_t ci = fd[s], co = fd[s + 1], window = 1, odims[WEFT_MAX_RANK];
  for (int a = 0; a < s; a++) {
    window *= fd[a];
    odims[2 + a] = fd[a];
  }
  odims[0] = depthwise ? ci * co : co;
  odims[1] = depthwise ? 1 : ci;
  float *w = g_new(float, window * ci * co);
  const float *src = weft_tensor_data(f);
  for (int64_t p = 0; p < window; p++)
    for (int64_t i = 0; i < ci; i++)
      for (int64_t o = 0; o < co; o++) {
        float v = src[(p * ci + i) * co + o];
        if (depthwise) w[(i * co + o) * window + p] = v;
        else w[(o * ci + i) * window + p] = v;
      }
  char *wname = helper_name(n, "filter_oihw");
  bench_onnx_initializer(x->m, wname, r, odims, w);
  g_free(w);
  return wname;
}

/* A dilated convolution that TensorFlow wrote as SpaceToBatchND -> conv -> BatchToSpaceND: the
 * input before SpaceToBatchND, the block shape as dilations and the paddings less the crops. */
typedef struct dilated {
  weft_output_t in;
  int64_t dilations[3], pads[6];
} dilated_t;

/* The filter of conv node n as a float32 tensor of rank s + 2 (unref), or a refusal. */
static weft_status_t *conv_filter(exporter_t *x, weft_node_t *n, int s, weft_tensor_t **f) {
  weft_output_t fo = weft_node_input(n, 1);
  *f = NULL;
  if (depends_on_feed(x, fo.node)) return refuse(n, "the filter depends on a feed");
  WEFT_RETURN_IF_ERROR(evaluate(x, fo, f));
  if (weft_tensor_dtype(*f) != WEFT_DT_FLOAT || weft_tensor_rank(*f) != s + 2) {
    weft_tensor_unref(*f);
    *f = NULL;
    return refuse(n, "the filter is not a float32 tensor of rank 4 (2-D) or 5 (3-D)");
  }
  return NULL;
}

/* Conv2D, Conv3D and DepthwiseConv2dNative: the filter, spatial... I O (depthwise: H W C M),
 * becomes O I spatial... (depthwise: [C*M, 1, H, W], one group per input channel, TF's output
 * channel c*M + m). With dl, the dilated convolution it is the middle of. */
static weft_status_t *emit_conv(exporter_t *x, weft_node_t *n, const char *out,
                                const dilated_t *dl) {
  bool depthwise = strcmp(weft_node_op(n), "DepthwiseConv2dNative") == 0;
  int s = strcmp(weft_node_op(n), "Conv3D") == 0 ? 3 : 2;
  weft_tensor_t *f = NULL;
  WEFT_RETURN_IF_ERROR(conv_filter(x, n, s, &f));
  const int64_t *fd = weft_tensor_dims(f);
  int64_t ci = fd[s], k[3], strides[3], dil[3], pads[6];
  for (int a = 0; a < s; a++) k[a] = fd[a];
  weft_status_t *st = NULL;
  if (dl) {
    bool same = false;
    st = window_attrs(n, s, strides, dil, &same);
    for (int a = 0; a < s && !st; a++)
      if (strides[a] != 1 || dil[a] != 1 || same)
        st = refuse(n, "a convolution between SpaceToBatchND and BatchToSpaceND that is not "
                       "VALID, of stride 1 and undilated");
    memcpy(dil, dl->dilations, sizeof dil);
    memcpy(pads, dl->pads, sizeof pads);
  } else {
    st = window(x, n, weft_node_input(n, 0), s, k, strides, dil, pads);
  }
  if (st) {
    weft_tensor_unref(f);
    return st;
  }
  char *wname = filter_initializer(x, n, f, depthwise);
  weft_tensor_unref(f);
  char *in = NULL;
  st = dl ? emit(x, dl->in, &in) : input_name(x, n, 0, &in);
  if (!st) {
    int64_t group = depthwise ? ci : 1;
    bench_onnx_ints_t attrs[] = {{"kernel_shape", s, k}, {"strides", s, strides},
                                 {"dilations", s, dil},  {"pads", 2 * s, pads},
                                 {"group", -1, &group},  {NULL, 0, NULL}};
    nchw_node(x, n, s + 2, "Conv", (const char *[]){in, wname, NULL}, out, attrs, NULL);
  }
  g_free(in);
  g_free(wname);
  return st;
}

/* BatchToSpaceND(conv(SpaceToBatchND(x, block, paddings)), block, crops), TensorFlow's dilated
 * convolution (tf.nn.convolution with dilation_rate > 1 writes it so), as one Conv of x with
 * dilations = block and pads = paddings - crops, as tf2onnx does; other uses are refused. */
static weft_status_t *emit_dilated(exporter_t *x, weft_node_t *n, const char *out) {
  weft_node_t *conv = weft_node_input(n, 0).node, *s2b = NULL;
  const char *cop = weft_node_op(conv);
  if (strcmp(cop, "Conv2D") == 0 || strcmp(cop, "Conv3D") == 0 ||
      strcmp(cop, "DepthwiseConv2dNative") == 0)
    s2b = weft_node_input(conv, 0).node;
  if (!s2b || strcmp(weft_node_op(s2b), "SpaceToBatchND") != 0)
    return refuse(n, "only the dilated convolution SpaceToBatchND -> Conv2D, Conv3D or "
                     "DepthwiseConv2dNative -> BatchToSpaceND is exported");
  int s = strcmp(cop, "Conv3D") == 0 ? 3 : 2;
  int64_t *block = NULL, *block2 = NULL, *paddings = NULL, *crops = NULL;
  int nb = 0, nb2 = 0, np = 0, nc = 0;
  weft_status_t *st = operand_ints(x, s2b, 1, &block, &nb);
  if (!st) st = operand_ints(x, n, 1, &block2, &nb2);
  if (!st) st = operand_ints(x, s2b, 2, &paddings, &np);
  if (!st) st = operand_ints(x, n, 2, &crops, &nc);
  /* Channels first, TensorFlow puts the channels among the blocked axes, with a block of 1. */
  int off = spatial_axis(conv) == 2 ? 1 : 0;
  if (!st && (nb != s + off || nb2 != nb || np != 2 * nb || nc != 2 * nb ||
              memcmp(block, block2, sizeof(int64_t) * (size_t)nb) != 0 ||
              (off && (block[0] != 1 || paddings[0] || paddings[1] || crops[0] || crops[1]))))
    st = refuse(n, "its block shape is not SpaceToBatchND's, or not one per spatial axis");
  dilated_t dl = {weft_node_input(s2b, 0), {1, 1, 1}, {0}};
  for (int a = 0; a < s && !st; a++) {
    int b = a + off;
    dl.dilations[a] = block[b];
    dl.pads[a] = paddings[2 * b] - crops[2 * b];
    dl.pads[a + s] = paddings[2 * b + 1] - crops[2 * b + 1];
    if (dl.pads[a] < 0 || dl.pads[a + s] < 0) st = refuse(n, "crops beyond the paddings");
  }
  g_free(block);
  g_free(block2);
  g_free(paddings);
  g_free(crops);
  if (!st) st = emit_conv(x, conv, out, &dl);
  return st;
}

/* Conv2DBackpropInput and Conv3DBackpropInputV2 (transposed convolutions): ONNX ConvTranspose
 * of out_backprop, its filter spatial... C M becoming M C spatial..., and the forward
 * convolution's padding (TF's SAME or VALID from the output's size, input_sizes) as pads; where
 * the output is longer than the windows reach, the rest is output_padding. */
static weft_status_t *emit_conv_transpose(exporter_t *x, weft_node_t *n, const char *out) {
  int s = strcmp(weft_node_op(n), "Conv3DBackpropInputV2") == 0 ? 3 : 2;
  int h = spatial_axis(n);
  int64_t strides[3], dil[3];
  bool same = false;
  WEFT_RETURN_IF_ERROR(window_attrs(n, s, strides, dil, &same));
  int64_t *sizes = NULL, dy[WEFT_MAX_RANK];
  int count = 0, rank = 0;
  WEFT_RETURN_IF_ERROR(operand_ints(x, n, 0, &sizes, &count));
  weft_status_t *st = shape_of(x, weft_node_input(n, 2), &rank, dy);
  if (!st && (count != s + 2 || rank != s + 2))
    st = refuse(n, "input_sizes or out_backprop is not of rank 4 (2-D) or 5 (3-D)");
  weft_tensor_t *f = NULL;
  if (!st) st = conv_filter(x, n, s, &f);
  if (st) {
    g_free(sizes);
    return st;
  }
  const int64_t *fd = weft_tensor_dims(f);
  int64_t k[3], pads[6], extra[3];
  for (int a = 0; a < s; a++) {
    k[a] = fd[a];
    int64_t reach = (dy[h + a] - 1) * strides[a] + (k[a] - 1) * dil[a] + 1;
    int64_t total = same ? reach - sizes[h + a] : 0;
    if (total < 0) total = 0;
    pads[a] = total / 2;
    /* What the windows reach past the output's end is cut; what they fall short, added. */
    int64_t end = reach - pads[a] - sizes[h + a];
    pads[a + s] = end > 0 ? end : 0;
    extra[a] = end < 0 ? -end : 0;
  }
  g_free(sizes);
  char *wname = filter_initializer(x, n, f, false);
  weft_tensor_unref(f);
  char *in = NULL;
  st = input_name(x, n, 2, &in);
  if (!st) {
    bench_onnx_ints_t attrs[] = {{"kernel_shape", s, k}, {"strides", s, strides},
                                 {"dilations", s, dil},  {"pads", 2 * s, pads},
                                 {"output_padding", s, extra}, {NULL, 0, NULL}};
    nchw_node(x, n, s + 2, "ConvTranspose", (const char *[]){in, wname, NULL}, out, attrs, NULL);
  }
  g_free(in);
  g_free(wname);
  return st;
}

/* MaxPool, AvgPool, MaxPool3D, AvgPool3D. */
static weft_status_t *emit_pool(exporter_t *x, weft_node_t *n, const char *out) {
  int s = g_str_has_suffix(weft_node_op(n), "3D") ? 3 : 2;
  int64_t ksize[5], k[3], strides[3], dil[3], pads[6];
  int h = spatial_axis(n), c = h == 1 ? s + 1 : 1;
  if (!h || !attr_ints(n, "ksize", s + 2, ksize) || ksize[0] != 1 || ksize[c] != 1)
    return refuse(n, "ksize is not 1 over the batch and channels");
  for (int a = 0; a < s; a++) k[a] = ksize[h + a];
  WEFT_RETURN_IF_ERROR(window(x, n, weft_node_input(n, 0), s, k, strides, dil, pads));
  char *in = NULL;
  WEFT_RETURN_IF_ERROR(input_name(x, n, 0, &in));
  /* AveragePool's count_include_pad defaults to 0: TF's average over the valid pixels only. */
  bench_onnx_ints_t attrs[] = {{"kernel_shape", s, k}, {"strides", s, strides},
                               {"pads", 2 * s, pads}, {NULL, 0, NULL}};
  nchw_node(x, n, s + 2, g_str_has_prefix(weft_node_op(n), "MaxPool") ? "MaxPool" : "AveragePool",
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
  int64_t dims[WEFT_MAX_RANK];
  int rank = 0;
  weft_status_t *st = shape_of(x, weft_node_input(n, 0), &rank, dims);
  for (int k = 0; k < 5 && !st; k++) st = input_name(x, n, k, &in[k]);
  if (!st) {
    bench_onnx_float_t floats[] = {{"epsilon", eps && eps->kind == WEFT_ATTR_FLOAT ? eps->u.f
                                                                                     : 1e-4f},
                                   {NULL, 0}};
    nchw_node(x, n, rank, "BatchNormalization", (const char *[]){in[0], in[1], in[2], in[3], in[4], NULL},
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
    {"Ceil", "Ceil"},     {"Tan", "Tan"}, /* float32 only: emit_op */
    /* Comparisons (a bool output), for Select's condition. */
    {"Greater", "Greater"}, {"GreaterEqual", "GreaterOrEqual"}, {"Less", "Less"},
    {"LessEqual", "LessOrEqual"}, {"Equal", "Equal"},
    /* ONNX's default alpha and gamma are TensorFlow's fixed ones, as float32. */
    {"Selu", "Selu"},
    /* NHWC: the bias is over the last axis, where ONNX's broadcasting puts it. */
    {"BiasAdd", "Add"},
};

/* Slice (begin, size) and StridedSlice (begin, end, strides) of constant operands, with
 * begin_mask, end_mask and shrink_axis_mask (a Squeeze after); ellipsis_mask and new_axis_mask
 * are refused. */
static weft_status_t *emit_slice(exporter_t *x, weft_node_t *n, const char *out) {
  bool strided = strcmp(weft_node_op(n), "StridedSlice") == 0;
  int64_t *begin = NULL, *end = NULL, *steps = NULL;
  int nb = 0, ne = 0, ns = 0;
  weft_status_t *st = NULL;
  for (int k = 1; k < weft_node_num_inputs(n) && !st; k++)
    if (depends_on_values(x, weft_node_input(n, k).node))
      st = refuse(n, "its begin, end or strides depend on a feed's values");
  if (!st) st = operand_ints(x, n, 1, &begin, &nb);
  if (!st) st = operand_ints(x, n, 2, &end, &ne);
  if (!st && strided) st = operand_ints(x, n, 3, &steps, &ns);
  int64_t bmask = attr_int(n, "begin_mask", 0), emask = attr_int(n, "end_mask", 0),
          shrink = attr_int(n, "shrink_axis_mask", 0);
  if (!st && strided && (attr_int(n, "ellipsis_mask", 0) || attr_int(n, "new_axis_mask", 0)))
    st = refuse(n, "ellipsis_mask or new_axis_mask is set");
  if (!st && (ne != nb || (strided && ns != nb)))
    st = refuse(n, "begin, end and strides of different lengths");
  int64_t *starts = g_new0(int64_t, nb + 1), *ends = g_new0(int64_t, nb + 1),
          *axes = g_new0(int64_t, nb + 1), *sq = g_new0(int64_t, nb + 1), *st8 = g_new0(int64_t, nb + 1);
  int n_sq = 0;
  for (int a = 0; a < nb && !st; a++) {
    int64_t step = strided ? steps[a] : 1;
    axes[a] = a;
    st8[a] = step;
    starts[a] = begin[a];
    if (!strided) {
      ends[a] = end[a] < 0 ? INT64_MAX : begin[a] + end[a];
      continue;
    }
    if (step == 0) {
      st = refuse(n, "a stride of 0");
      break;
    }
    ends[a] = end[a];
    if (bmask >> a & 1) starts[a] = step > 0 ? 0 : INT64_MAX;
    if (emask >> a & 1) ends[a] = step > 0 ? INT64_MAX : INT64_MIN;
    if (shrink >> a & 1) {
      if (step < 0) {
        st = refuse(n, "shrink_axis_mask on a negative stride");
        break;
      }
      starts[a] = begin[a];
      ends[a] = begin[a] == -1 ? INT64_MAX : begin[a] + 1;
      st8[a] = 1;
      sq[n_sq++] = a;
    }
  }
  char *in = NULL;
  if (!st) st = input_name(x, n, 0, &in);
  if (!st) {
    char *sname = ints_initializer(x, n, "starts", starts, nb),
         *ename = ints_initializer(x, n, "ends", ends, nb),
         *aname = ints_initializer(x, n, "slice_axes", axes, nb),
         *pname = ints_initializer(x, n, "steps", st8, nb);
    char *sliced = n_sq ? helper_name(n, "sliced") : g_strdup(out);
    node(x, "Slice", (const char *[]){in, sname, ename, aname, pname, NULL}, sliced, NULL);
    if (n_sq) {
      char *qname = ints_initializer(x, n, "shrink_axes", sq, n_sq);
      node(x, "Squeeze", (const char *[]){sliced, qname, NULL}, out, NULL);
      g_free(qname);
    }
    g_free(sliced);
    g_free(sname);
    g_free(ename);
    g_free(aname);
    g_free(pname);
  }
  g_free(in);
  g_free(starts);
  g_free(ends);
  g_free(axes);
  g_free(sq);
  g_free(st8);
  g_free(begin);
  g_free(end);
  g_free(steps);
  return st;
}

/* Split (axis, value; num_split equal parts), SplitV (value, size_splits, axis) and Unpack
 * (value; num parts of 1 along axis, each squeezed): one ONNX Split, every output k of n named
 * as bench_onnx_tensor_name says and registered in x->names. */
static weft_status_t *emit_split(exporter_t *x, weft_node_t *n) {
  const char *op = weft_node_op(n);
  bool unpack = strcmp(op, "Unpack") == 0, v = strcmp(op, "SplitV") == 0;
  int n_out = weft_node_num_outputs(n);
  int64_t *axis = NULL, *sizes = NULL, dims[WEFT_MAX_RANK], ax = 0;
  int count = 0, n_sizes = 0, rank = 0, data = strcmp(op, "Split") == 0 ? 1 : 0;
  weft_status_t *st = NULL;
  if (!bench_onnx_elem_type(weft_node_output_dtype(n, 0)))
    return refuse(n, "its output is not float32, float64, float16, int32, int64 or bool");
  st = shape_of(x, weft_node_input(n, data), &rank, dims);
  if (!st && unpack) {
    ax = attr_int(n, "axis", 0);
  } else if (!st) {
    st = operand_ints(x, n, strcmp(op, "Split") == 0 ? 0 : 2, &axis, &count);
    if (!st && count != 1) st = refuse(n, "the axis is not a scalar");
    if (!st) ax = axis[0];
  }
  if (!st && ax < 0) ax += rank;
  if (!st && (ax < 0 || ax >= rank)) st = refuse(n, "the axis is out of range");
  int64_t *split = g_new0(int64_t, n_out + 1);
  if (!st && v) {
    st = operand_ints(x, n, 1, &sizes, &n_sizes);
    if (!st && n_sizes != n_out) st = refuse(n, "size_splits is not one per output");
    int64_t known = 0, unknown = -1;
    for (int k = 0; k < n_sizes && !st; k++) {
      if (sizes[k] < 0) unknown = k;
      else known += sizes[k];
      split[k] = sizes[k];
    }
    if (!st && unknown >= 0) split[unknown] = dims[ax] - known;
  } else if (!st) {
    for (int k = 0; k < n_out; k++) split[k] = dims[ax] / n_out;
  }
  char *in = NULL;
  if (!st) st = input_name(x, n, data, &in);
  if (!st) {
    char **outs = g_new0(char *, n_out + 1);
    for (int k = 0; k < n_out; k++) {
      char what[32];
      g_snprintf(what, sizeof what, "part%d", k);
      outs[k] = unpack ? helper_name(n, what) : bench_onnx_tensor_name(weft_out(n, k));
    }
    char *sname = ints_initializer(x, n, "split", split, n_out);
    bench_onnx_ints_t attrs[] = {{"axis", -1, &ax}, {NULL, 0, NULL}};
    bench_onnx_node_outputs(x->m, "Split", (const char *[]){in, sname, NULL},
                            (const char *const *)outs, attrs, NULL);
    char *axes = unpack ? ints_initializer(x, n, "squeeze_axis", &ax, 1) : NULL;
    for (int k = 0; k < n_out; k++) {
      char *name = bench_onnx_tensor_name(weft_out(n, k));
      if (unpack) node(x, "Squeeze", (const char *[]){outs[k], axes, NULL}, name, NULL);
      g_hash_table_insert(x->names, weft_name(weft_out(n, k)), name);
    }
    g_free(axes);
    g_free(sname);
    g_strfreev(outs);
  }
  g_free(in);
  g_free(split);
  g_free(axis);
  g_free(sizes);
  return st;
}

/* Emits node n's output 0 (only that one is exported) under the ONNX name `out`. */
static weft_status_t *emit_op(exporter_t *x, weft_node_t *n, const char *out) {
  const char *op = weft_node_op(n);
  int n_in = weft_node_num_inputs(n);
  if (weft_node_num_outputs(n) > 0 && !bench_onnx_elem_type(weft_node_output_dtype(n, 0)))
    return refuse(n, "its output is not float32, float64, float16, int32, int64 or bool");
  /* ONNX Runtime implements these for float32 only (no float64 kernel). */
  if ((strcmp(op, "Tan") == 0 || strcmp(op, "Softsign") == 0) &&
      weft_node_output_dtype(n, 0) != WEFT_DT_FLOAT)
    return refuse(n, "not float32 (ONNX Runtime's kernel of it is float32 only)");
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
  if (strcmp(op, "Conv2D") == 0 || strcmp(op, "DepthwiseConv2dNative") == 0 ||
      strcmp(op, "Conv3D") == 0)
    return emit_conv(x, n, out, NULL);
  if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AvgPool") == 0 || strcmp(op, "MaxPool3D") == 0 ||
      strcmp(op, "AvgPool3D") == 0)
    return emit_pool(x, n, out);
  if (strcmp(op, "Conv2DBackpropInput") == 0 || strcmp(op, "Conv3DBackpropInputV2") == 0)
    return emit_conv_transpose(x, n, out);
  if (strcmp(op, "BatchToSpaceND") == 0) return emit_dilated(x, n, out);
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
    char *lo = scalar_initializer(x, n, "zero", 0.0), *hi = scalar_initializer(x, n, "six", 6.0);
    if (!st && !lo) st = refuse(n, "its output is not float32 or float64");
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
  } else if (strcmp(op, "LeakyRelu") == 0) {
    st = input_name(x, n, 0, &a);
    bench_onnx_float_t floats[] = {{"alpha", attr_float(n, "alpha", 0.2f)}, {NULL, 0}};
    if (!st) bench_onnx_node_floats(x->m, "LeakyRelu", (const char *[]){a, NULL}, out, NULL, floats);
  } else if (strcmp(op, "LRN") == 0) {
    /* TF: x / (bias + alpha * sum of squares over depth_radius channels each side)^beta over
     * the last axis of NHWC; ONNX: over NCHW's channels, a window of `size` and alpha / size. */
    int64_t dims[WEFT_MAX_RANK];
    int rank = 0;
    st = shape_of(x, weft_node_input(n, 0), &rank, dims);
    if (!st && rank != 4) st = refuse(n, "its input is not of rank 4");
    int64_t size = 2 * attr_int(n, "depth_radius", 5) + 1;
    if (!st) st = input_name(x, n, 0, &a);
    bench_onnx_ints_t ints[] = {{"size", -1, &size}, {NULL, 0, NULL}};
    bench_onnx_float_t floats[] = {{"alpha", attr_float(n, "alpha", 1.0f) * (float)size},
                                   {"beta", attr_float(n, "beta", 0.5f)},
                                   {"bias", attr_float(n, "bias", 1.0f)},
                                   {NULL, 0}};
    if (!st) nchw_node(x, n, 4, "LRN", (const char *[]){a, NULL}, out, ints, floats);
  } else if (strcmp(op, "SquaredDifference") == 0) {
    char *b = NULL;
    st = input_name(x, n, 0, &a);
    if (!st) st = input_name(x, n, 1, &b);
    extra = helper_name(n, "difference");
    if (!st) node(x, "Sub", (const char *[]){a, b, NULL}, extra, NULL);
    if (!st) node(x, "Mul", (const char *[]){extra, extra, NULL}, out, NULL);
    g_free(b);
  } else if (strcmp(op, "Sum") == 0 || strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0 ||
             strcmp(op, "Prod") == 0) {
    st = operand_ints(x, n, 1, &vals, &count);
    if (!st && count == 0) st = refuse(n, "no axes (ONNX would reduce over all of them)");
    if (!st) st = input_name(x, n, 0, &a);
    int64_t keep = attr_bool(n, "keep_dims");
    if (!st && strcmp(op, "Sum") == 0) {
      /* Opset 13's ReduceSum takes the axes as an input; the others as an attribute. */
      extra = ints_initializer(x, n, "axes", vals, count);
      bench_onnx_ints_t attrs[] = {{"keepdims", -1, &keep}, {NULL, 0, NULL}};
      node(x, "ReduceSum", (const char *[]){a, extra, NULL}, out, attrs);
    } else if (!st) {
      bench_onnx_ints_t attrs[] = {{"axes", count, vals}, {"keepdims", -1, &keep},
                                   {NULL, 0, NULL}};
      node(x, strcmp(op, "Max") == 0 ? "ReduceMax" : strcmp(op, "Min") == 0 ? "ReduceMin"
                                                                             : "ReduceProd",
           (const char *[]){a, NULL}, out, attrs);
    }
  } else if (strcmp(op, "Pack") == 0) {
    /* Each value unsqueezed at the axis, then concatenated there. */
    int64_t dims[WEFT_MAX_RANK];
    int rank = 0;
    st = shape_of(x, weft_node_input(n, 0), &rank, dims);
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < 0) axis += rank + 1;
    char **ins = g_new0(char *, n_in + 1);
    extra = ints_initializer(x, n, "axes", &axis, 1);
    for (int k = 0; k < n_in && !st; k++) {
      char *v = NULL;
      st = input_name(x, n, k, &v);
      if (st) break;
      char what[32];
      g_snprintf(what, sizeof what, "unsqueezed%d", k);
      ins[k] = helper_name(n, what);
      node(x, "Unsqueeze", (const char *[]){v, extra, NULL}, ins[k], NULL);
      g_free(v);
    }
    bench_onnx_ints_t attrs[] = {{"axis", -1, &axis}, {NULL, 0, NULL}};
    if (!st) node(x, "Concat", (const char *const *)ins, out, attrs);
    g_strfreev(ins);
  } else if (strcmp(op, "Slice") == 0 || strcmp(op, "StridedSlice") == 0) {
    st = emit_slice(x, n, out);
  } else if (strcmp(op, "Select") == 0 || strcmp(op, "SelectV2") == 0) {
    char *b = NULL, *c = NULL;
    int rc = 0, rx = 0;
    int64_t dc[WEFT_MAX_RANK], dx[WEFT_MAX_RANK];
    st = shape_of(x, weft_node_input(n, 0), &rc, dc);
    if (!st) st = shape_of(x, weft_node_input(n, 1), &rx, dx);
    /* Select (v1) with a vector condition picks rows: not ONNX's broadcasting. */
    if (!st && strcmp(op, "Select") == 0 && rc != rx && rc != 0)
      st = refuse(n, "a condition of another rank than the values (Select picks rows)");
    if (!st) st = input_name(x, n, 0, &a);
    if (!st) st = input_name(x, n, 1, &b);
    if (!st) st = input_name(x, n, 2, &c);
    if (!st) node(x, "Where", (const char *[]){a, b, c, NULL}, out, NULL);
    g_free(b);
    g_free(c);
  } else if (strcmp(op, "Cast") == 0) {
    int64_t to = bench_onnx_elem_type(weft_node_output_dtype(n, 0));
    st = input_name(x, n, 0, &a);
    bench_onnx_ints_t attrs[] = {{"to", -1, &to}, {NULL, 0, NULL}};
    if (!st) node(x, "Cast", (const char *[]){a, NULL}, out, attrs);
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
  } else if (!depends_on_feed(x, n) || !depends_on_values(x, n)) {
    /* A constant of the step (a feed's shape is one too: Fill's dims from tf.shape(input)):
     * its value, as Weft computes it with the feeds fed. */
    weft_tensor_t *t = NULL;
    if (is_random(x, n))
      st = refuse(n, "its value is drawn at random each step (a dropout's mask): no constant "
                     "stands for it");
    else
      st = evaluate(x, o, &t);
    if (!st && !bench_onnx_elem_type(weft_tensor_dtype(t)))
      st = refuse(n, "a constant that is not float32, float64, float16, int32, int64 or bool "
                     "feeds a mapped op");
    if (!st) {
      name = bench_onnx_tensor_name(o);
      bench_onnx_initializer_typed(x->m, name, weft_tensor_dtype(t), weft_tensor_rank(t),
                                   weft_tensor_dims(t), weft_tensor_data(t));
    }
    weft_tensor_unref(t);
  } else if (strcmp(op, "Identity") == 0 || strcmp(op, "StopGradient") == 0 ||
             strcmp(op, "Snapshot") == 0 ||
             (strcmp(op, "Cast") == 0 && weft_node_input(n, 0).node &&
              weft_node_output_dtype(n, 0) ==
                  weft_node_output_dtype(weft_node_input(n, 0).node,
                                         weft_node_input(n, 0).index))) {
    st = input_name(x, n, 0, &name); /* the same tensor under the input's name */
  } else if (strcmp(op, "IdentityN") == 0 && o.index < weft_node_num_inputs(n)) {
    st = input_name(x, n, o.index, &name); /* output k is input k */
  } else if (strcmp(op, "Split") == 0 || strcmp(op, "SplitV") == 0 ||
             strcmp(op, "Unpack") == 0) {
    st = emit_split(x, n); /* every output, named in x->names */
    const char *mine = st ? NULL : g_hash_table_lookup(x->names, key);
    if (!st && !mine) st = refuse(n, "an output its Split does not give");
    if (!st) name = g_strdup(mine);
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
  g_hash_table_replace(x->names, key, g_strdup(name));
  *onnx = name;
  return NULL;
}

weft_status_t *bench_graph_to_onnx(const bench_graph_io_t *io, GBytes **model) {
  *model = NULL;
  exporter_t x = {io, bench_onnx_new(), g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                               g_free),
                  g_new0(guint8, weft_graph_num_nodes(io->graph)),
                  g_new0(guint8, weft_graph_num_nodes(io->graph)),
                  g_new0(guint8, weft_graph_num_nodes(io->graph)), 0};
  weft_status_t *st = NULL;
  for (int k = 0; k < io->n_feeds && !st; k++) {
    weft_tensor_t *t = io->feed_values[k];
    if (!bench_onnx_elem_type(weft_tensor_dtype(t))) {
      st = refuse(io->feeds[k].node, "the feed is not float32, float64, float16, int32, int64 "
                                     "or bool");
      break;
    }
    char *name = bench_onnx_tensor_name(io->feeds[k]);
    bench_onnx_input_typed(x.m, name, weft_tensor_dtype(t), weft_tensor_rank(t),
                           weft_tensor_dims(t));
    g_hash_table_insert(x.names, weft_name(io->feeds[k]), name);
  }
  char *out = NULL;
  if (!st) st = emit(&x, io->fetch, &out);
  if (!st) {
    /* The graph's output must be a node's output: a fetch that is an alias of a feed or a
     * constant gets an Identity of its own. */
    char *want = bench_onnx_tensor_name(io->fetch);
    if (strcmp(want, out) != 0) node(&x, "Identity", (const char *[]){out, NULL}, want, NULL);
    bench_onnx_output_typed(x.m, want, weft_tensor_dtype(io->fetch_value),
                            weft_tensor_rank(io->fetch_value), weft_tensor_dims(io->fetch_value));
    g_free(want);
  }
  g_free(out);
  GBytes *bytes = bench_onnx_finish(x.m);
  if (!st) *model = bytes;
  else g_bytes_unref(bytes);
  g_hash_table_destroy(x.names);
  g_free(x.feed_dep);
  g_free(x.value_dep);
  g_free(x.random);
  return st;
}
