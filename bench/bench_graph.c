/* `weft bench --graph FILE.pb` (or --saved-model DIR): one row timing a step of a real
 * TensorFlow model in Weft and, with --peer ort, the same computation exported to ONNX
 * (bench_graph_export.c) in ONNX Runtime, both fed the same seeded random inputs, the outputs
 * checked equal before the times count. */
#include <string.h>

#include "bench.h"
#include "graph/graph_internal.h"

/* Weft's outputs against the peer's: float32 through different summation orders and, for the
 * convolutions, different algorithms (Winograd, im2col) on both sides. */
#define GRAPH_RTOL 1e-3
#define GRAPH_ATOL 1e-4

typedef struct graph_case {
  weft_session_t *session;
  int n_feeds;
  char **feed_names;      /* "node:k" */
  weft_tensor_t **feed_values;
  char *fetch_name;
} graph_case_t;

static double run_graph_step(void *arg, weft_status_t **error) {
  graph_case_t *c = arg;
  weft_tensor_t *out = NULL;
  const char *fetch[] = {c->fetch_name};
  double t0 = bench_now();
  weft_status_t *st = weft_session_run(c->session, (const char *const *)c->feed_names,
                                       c->feed_values, c->n_feeds, fetch, &out, 1, NULL, 0);
  double dt = bench_now() - t0;
  weft_tensor_unref(out);
  if (st) {
    *error = st;
    return -1;
  }
  return dt;
}

/* Uniform in [-1, 1), the same for every run of the bench (a seed per feed). */
static weft_tensor_t *seeded_input(int rank, const int64_t *dims, uint32_t seed) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  uint32_t s = 2463534242u ^ (seed * 2654435761u);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    p[k] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return t;
}

/* A feed of dtype: float32 as seeded_input; float64 and float16 the same values converted;
 * int32 and int64 small non-negative integers (0..9) from the same sequence; bool its parity. */
static weft_tensor_t *seeded_input_of(weft_dtype_t dtype, int rank, const int64_t *dims,
                                      uint32_t seed) {
  weft_tensor_t *f = seeded_input(rank, dims, seed);
  if (dtype == WEFT_DT_FLOAT) return f;
  weft_tensor_t *t = weft_tensor_new(dtype, rank, dims);
  const float *src = weft_tensor_data(f);
  void *dst = weft_tensor_data(t);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
    int small = (int)((src[k] + 1.0f) * 5.0f); /* 0..9 */
    if (small > 9) small = 9;
    switch (dtype) {
      case WEFT_DT_DOUBLE: ((double *)dst)[k] = src[k]; break;
      case WEFT_DT_HALF: ((uint16_t *)dst)[k] = weft__float_to_half(src[k]); break;
      case WEFT_DT_INT32: ((int32_t *)dst)[k] = small; break;
      case WEFT_DT_INT64: ((int64_t *)dst)[k] = small; break;
      case WEFT_DT_BOOL: ((uint8_t *)dst)[k] = (uint8_t)(small & 1); break;
      default: break;
    }
  }
  weft_tensor_unref(f);
  return t;
}

static bool is_floating(weft_dtype_t dt) {
  return dt == WEFT_DT_FLOAT || dt == WEFT_DT_DOUBLE || dt == WEFT_DT_HALF;
}

/* Ops that read an integer or bool input as values (arithmetic, comparisons, casts, joins), so
 * that the bench's small non-negative integers are as good as any: an int feed read by anything
 * else (a permutation, indices, a shape, a count) cannot be given values blindly. */
static bool reads_ints_as_values(weft_node_t *m, int input) {
  static const char *const ops[] = {
      "Cast", "Identity", "Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "Neg", "Abs",
      "Square", "Sign", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
      "LogicalAnd", "LogicalOr", "LogicalNot", "FloorMod", "FloorDiv", "Select", "SelectV2",
      "ZerosLike", "OnesLike", "StopGradient", "Snapshot"};
  const char *op = weft_node_op(m);
  if ((strcmp(op, "ConcatV2") == 0 || strcmp(op, "Pack") == 0) &&
      input < weft_node_num_inputs(m) - (op[0] == 'C'))
    return true;
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++)
    if (strcmp(op, ops[k]) == 0) return true;
  return false;
}

/* "64,28,28,1" (or 64x28x28x1; "" for a scalar) into dims; false when it does not read. */
static bool parse_shape(const char *text, int *rank, int64_t *dims) {
  *rank = 0;
  if (!*text) return true;
  char **parts = g_strsplit_set(text, ",x", -1);
  bool ok = true;
  for (char **p = parts; *p && ok; p++) {
    char *end = NULL;
    gint64 v = g_ascii_strtoll(*p, &end, 10);
    ok = **p && end && !*end && v >= 0 && v <= G_MAXINT32 && *rank < WEFT_MAX_RANK;
    if (ok) dims[(*rank)++] = v;
  }
  g_strfreev(parts);
  return ok;
}

static bool has_consumer(weft_graph_t *g, weft_node_t *n) {
  for (int k = 0; k < weft_graph_num_nodes(g); k++) {
    weft_node_t *m = weft_graph_node_at(g, k);
    for (int i = 0; i < weft_node_num_inputs(m); i++)
      if (weft_node_input(m, i).node == n) return true;
  }
  return false;
}

/* The last node (in import order) whose output 0 is floating-point (float32, float64, float16)
 * and read by nobody: a frozen graph's prediction. */
static weft_node_t *default_fetch(weft_graph_t *g) {
  for (int k = weft_graph_num_nodes(g) - 1; k >= 0; k--) {
    weft_node_t *n = weft_graph_node_at(g, k);
    const char *op = weft_node_op(n);
    if (weft_node_num_outputs(n) == 0 || !is_floating(weft_node_output_dtype(n, 0)) ||
        strcmp(op, "Const") == 0 || strcmp(op, "Placeholder") == 0 || has_consumer(g, n))
      continue;
    return n;
  }
  return NULL;
}

/* The input where op m takes its activations: the first (weights and biases come second),
 * except for the input gradients that a transposed convolution is, whose image is their third
 * input (after the output's sizes and the filter). */
static int activation_input(weft_node_t *m) {
  const char *op = weft_node_op(m);
  return strcmp(op, "Conv2DBackpropInput") == 0 || strcmp(op, "Conv3DBackpropInputV2") == 0 ||
                 strcmp(op, "DepthwiseConv2dNativeBackpropInput") == 0
             ? 2
             : 0;
}

/* Whether some op other than Identity reads n's output as its activations, directly or through
 * Identity nodes. */
static bool read_as_activation(weft_graph_t *g, weft_node_t *n) {
  for (int k = 0; k < weft_graph_num_nodes(g); k++) {
    weft_node_t *m = weft_graph_node_at(g, k);
    int a = activation_input(m);
    if (weft_node_num_inputs(m) <= a || weft_node_input(m, a).node != n) continue;
    if (strcmp(weft_node_op(m), "Identity") != 0 || read_as_activation(g, m)) return true;
  }
  return false;
}

/* Whether Const s is the frozen value of tf.shape() of Const n: an int32 vector named "Shape"
 * (Keras's Conv2DTranspose computes its output's size from it) that holds n's dimensions.
 * Feeding n a new shape, s must follow it, or the layer computes the frozen size. */
static bool is_frozen_shape_of(weft_node_t *s, weft_node_t *n) {
  const char *name = weft_node_name(s), *slash = strrchr(name, '/');
  if (strcmp(weft_node_op(s), "Const") != 0 || strcmp(slash ? slash + 1 : name, "Shape") != 0)
    return false;
  const weft__attr_value_t *v = weft__attrs_get(s->attrs, "value");
  int64_t dims[WEFT_MAX_RANK];
  int rank = weft_node_output_shape(n, 0, dims);
  if (!v || v->kind != WEFT_ATTR_TENSOR || weft_tensor_dtype(v->u.tensor) != WEFT_DT_INT32 ||
      weft_tensor_rank(v->u.tensor) != 1 || weft_tensor_dims(v->u.tensor)[0] != rank)
    return false;
  const int32_t *p = weft_tensor_data(v->u.tensor);
  for (int k = 0; k < rank; k++)
    if (p[k] != dims[k]) return false;
  return true;
}

/* A model's input frozen into the graph as a floating-point Const (the dl4j corpus graphs hold
 * their test input so). */
static bool is_frozen_input(weft_graph_t *g, weft_node_t *n) {
  return strcmp(weft_node_op(n), "Const") == 0 && is_floating(weft_node_output_dtype(n, 0)) &&
         read_as_activation(g, n);
}

/* The row's model name: "mlp_5_5_1_frozen" for mlp_5_5_1_frozen.pb, "cnn2d_layers/nhwc_b2" for
 * .../cnn2d_layers/nhwc_b2/frozen_model.pb (the corpus names a model by its folder, within a
 * family of folders), "half_plus_two" for a SavedModel folder. */
static char *model_label(const char *path) {
  char *base = g_path_get_basename(path);
  if (strcmp(base, "frozen_model.pb") == 0) {
    char *dir = g_path_get_dirname(path), *up = g_path_get_dirname(dir);
    char *leaf = g_path_get_basename(dir), *family = g_path_get_basename(up);
    g_free(base);
    base = g_strdup_printf("%s/%s", family, leaf);
    g_free(dir);
    g_free(up);
    g_free(leaf);
    g_free(family);
  } else if (g_str_has_suffix(base, ".pb")) {
    base[strlen(base) - 3] = '\0';
  }
  return base;
}

typedef struct graph_run {
  weft_graph_t *graph;      /* owned when own_graph */
  weft_session_t *session;  /* owned when own_graph */
  weft_saved_model_t *model;
  bool own_graph;
  GArray *feeds;            /* weft_output_t */
  GPtrArray *values;        /* weft_tensor_t* */
  weft_output_t fetch;
} graph_run_t;

static void graph_run_clear(graph_run_t *g) {
  if (g->own_graph) {
    weft_session_free(g->session);
    weft_graph_free(g->graph);
  }
  weft_saved_model_free(g->model);
  if (g->feeds) g_array_free(g->feeds, TRUE);
  if (g->values) g_ptr_array_free(g->values, TRUE);
}

/* Adds a feed of tensor `name` with the given shape (rank -1: the placeholder's, its unknown
 * dimensions the batch). */
static weft_status_t *add_feed(graph_run_t *g, const char *name, int rank, const int64_t *shape,
                               int batch) {
  weft_output_t o;
  WEFT_RETURN_IF_ERROR(weft_graph_find_output(g->graph, name, &o));
  int64_t dims[WEFT_MAX_RANK];
  if (rank < 0) {
    rank = weft_node_output_shape(o.node, o.index, dims);
    if (rank < 0)
      return weft_status_new(WEFT_INVALID_ARGUMENT,
                             "feed '%s' has no known rank: give its shape with --feed %s=SHAPE",
                             name, name);
    for (int k = 0; k < rank; k++)
      if (dims[k] < 0) dims[k] = batch;
  } else {
    memcpy(dims, shape, sizeof(int64_t) * (size_t)rank);
  }
  weft_dtype_t dt = weft_node_output_dtype(o.node, o.index);
  if (!is_floating(dt) && dt != WEFT_DT_INT32 && dt != WEFT_DT_INT64 && dt != WEFT_DT_BOOL)
    return weft_status_new(WEFT_UNIMPLEMENTED, "feed '%s' is %s; the bench feeds float32, "
                           "float64, float16, int32, int64 and bool only", name,
                           weft_dtype_name(dt));
  for (int k = 0; k < weft_graph_num_nodes(g->graph) && !is_floating(dt); k++) {
    weft_node_t *m = weft_graph_node_at(g->graph, k);
    for (int i = 0; i < weft_node_num_inputs(m); i++) {
      weft_output_t in = weft_node_input(m, i);
      if (in.node != o.node || in.index != o.index || reads_ints_as_values(m, i)) continue;
      return weft_status_new(WEFT_UNIMPLEMENTED, "feed '%s' is %s and %s node '%s' reads it as "
                             "something other than values (indices, a permutation, a shape): "
                             "the bench cannot choose them", name, weft_dtype_name(dt), weft_node_op(m),
                             weft_node_name(m));
    }
  }
  g_array_append_val(g->feeds, o);
  g_ptr_array_add(g->values, seeded_input_of(dt, rank, dims, g->values->len));
  return NULL;
}

/* The graph imported again with each Const of `consts` (nodes of g->graph) replaced, through
 * TensorFlow's input_map, by a Placeholder "<const>_fed": of the Const's shape with an unknown
 * first dimension, or (any_shape) of its rank with every dimension unknown; and each frozen
 * tf.shape() of such a Const by a Const of the shape it will be fed (fed_shapes[k], a
 * fed_shape_t): the bench's feeds have fixed shapes, so that value is a constant of the step
 * for Weft as it is for the ONNX export (which folds every shape-like operand). */
typedef struct fed_shape {
  int rank;
  int64_t dims[WEFT_MAX_RANK];
} fed_shape_t;

static weft_status_t *unfreeze(graph_run_t *g, const char *path, GPtrArray *consts,
                               const GArray *fed_shapes, bool any_shape) {
  GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
  GArray *values = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
  weft_graph_t *graph = weft_graph_new();
  weft_status_t *st = NULL;
  for (guint k = 0; k < consts->len && !st; k++) {
    weft_node_t *n = consts->pdata[k];
    int64_t dims[WEFT_MAX_RANK];
    int rank = weft_node_output_shape(n, 0, dims);
    for (int d = 0; d < rank; d++)
      if (d == 0 || any_shape) dims[d] = -1;
    char *name = g_strdup_printf("%s_fed", weft_node_name(n));
    weft_output_t o = weft_placeholder(graph, name, weft_node_output_dtype(n, 0), rank, dims, &st);
    g_free(name);
    g_ptr_array_add(keys, g_strdup_printf("%s:0", weft_node_name(n)));
    g_array_append_val(values, o);
    const fed_shape_t *fs = &g_array_index(fed_shapes, fed_shape_t, k);
    for (int i = 0; i < weft_graph_num_nodes(g->graph) && !st; i++) {
      weft_node_t *s = weft_graph_node_at(g->graph, i);
      if (!is_frozen_shape_of(s, n)) continue;
      int64_t len = fs->rank;
      weft_tensor_t *value = weft_tensor_new(WEFT_DT_INT32, 1, &len);
      int32_t *v = weft_tensor_data(value);
      for (int d = 0; d < fs->rank; d++) v[d] = (int32_t)fs->dims[d];
      char *sname = g_strdup_printf("%s_fed", weft_node_name(s));
      weft_output_t shape = weft_const(graph, sname, value, &st);
      weft_tensor_unref(value);
      g_free(sname);
      g_ptr_array_add(keys, g_strdup_printf("%s:0", weft_node_name(s)));
      g_array_append_val(values, shape);
    }
  }
  char *bytes = NULL;
  gsize len = 0;
  GError *err = NULL;
  if (!st && !g_file_get_contents(path, &bytes, &len, &err)) {
    st = weft_status_new(WEFT_NOT_FOUND, "%s", err->message);
    g_error_free(err);
  }
  if (!st)
    st = weft_graph_import_graphdef_mapped(graph, bytes, len, NULL,
                                           (const char *const *)keys->pdata,
                                           (const weft_output_t *)values->data, (int)keys->len);
  if (!st) {
    weft_graph_free(g->graph);
    g->graph = graph;
    graph = NULL;
  }
  weft_graph_free(graph);
  g_free(bytes);
  g_ptr_array_free(keys, TRUE);
  g_array_free(values, TRUE);
  return st;
}

/* A graph without Placeholders whose input is frozen in as a Const: that Const unfrozen and fed
 * a batch of --batch. Only the first such Const: the corpus graphs that freeze a second operand
 * (a filter, the scale of a batch norm) mean it as a weight, whose shape does not follow the
 * batch. */
static weft_status_t *feed_frozen_input(graph_run_t *g, const char *path, int batch) {
  weft_node_t *input = NULL;
  for (int k = 0; k < weft_graph_num_nodes(g->graph) && !input; k++)
    if (is_frozen_input(g->graph, weft_graph_node_at(g->graph, k)))
      input = weft_graph_node_at(g->graph, k);
  if (!input) return NULL;
  char *fed = g_strdup_printf("%s_fed", weft_node_name(input));
  GPtrArray *consts = g_ptr_array_new();
  g_ptr_array_add(consts, input);
  /* add_feed's shape: the Const's, its first dimension the batch. */
  GArray *shapes = g_array_new(FALSE, TRUE, sizeof(fed_shape_t));
  fed_shape_t fs = {0};
  fs.rank = weft_node_output_shape(input, 0, fs.dims);
  if (fs.rank > 0) fs.dims[0] = batch;
  g_array_append_val(shapes, fs);
  weft_status_t *st = unfreeze(g, path, consts, shapes, false);
  g_array_free(shapes, TRUE);
  if (!st) st = add_feed(g, fed, -1, NULL, batch);
  g_ptr_array_free(consts, TRUE);
  g_free(fed);
  return st;
}

/* --feed NAME=SHAPE's parts (g_free *name). */
static weft_status_t *feed_arg(const char *arg, char **name, int *rank, int64_t *dims) {
  const char *eq = strrchr(arg, '=');
  if (!parse_shape(eq + 1, rank, dims))
    return weft_status_new(WEFT_INVALID_ARGUMENT, "--feed %s: '%s' is not a shape like 64,28,28,1",
                           arg, eq + 1);
  *name = g_strndup(arg, (gsize)(eq - arg));
  return NULL;
}

/* A SavedModel imports the nodes a run needs on its first run, a fed tensor read through a
 * stand-in Placeholder "_weft_feed/<node>/<index>": one run of the feeds (--feed, else the
 * signature's inputs, unknown dimensions --batch) and the fetch (--fetch, else the signature's
 * first output) imports them, and the feeds and the fetch are then found in the graph. */
static weft_status_t *saved_model_io(graph_run_t *g, const char *sig,
                                     const bench_graph_options_t *opt) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  weft_status_t *st = NULL;
  int n_in = 0;
  if (opt->feeds && *opt->feeds) {
    for (const char *const *f = opt->feeds; !st && *f; f++) {
      char *name = NULL;
      int rank = 0;
      int64_t dims[WEFT_MAX_RANK];
      st = feed_arg(*f, &name, &rank, dims);
      if (!st) g_ptr_array_add(names, name);
      if (!st) g_ptr_array_add(g->values, seeded_input(rank, dims, g->values->len));
    }
  } else if (!sig) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "SavedModel '%s' has no signature: name the "
                         "feeds with --feed and the fetch with --fetch", opt->saved_model_dir);
  } else {
    st = weft_saved_model_signature(g->model, sig, &n_in, NULL, NULL);
    for (int k = 0; k < n_in && !st; k++) {
      weft_saved_model_tensor_info_t info;
      st = weft_saved_model_signature_input(g->model, sig, k, &info);
      if (!st && (!is_floating(info.dtype) || info.rank < 0))
        st = weft_status_new(WEFT_UNIMPLEMENTED, "input '%s' (%s) is not floating-point (float32, "
                             "float64, float16) of a known rank: give its shape with --feed "
                             "%s=SHAPE", info.key, info.name, info.name);
      if (st) break;
      for (int d = 0; d < info.rank; d++)
        if (info.dims[d] < 0) info.dims[d] = opt->batch;
      g_ptr_array_add(names, g_strdup(info.name));
      g_ptr_array_add(g->values,
                      seeded_input_of(info.dtype, info.rank, info.dims, g->values->len));
    }
  }
  char *fetch = NULL;
  if (!st && opt->fetches && *opt->fetches) {
    fetch = g_strdup(opt->fetches[0]);
  } else if (!st && sig) {
    weft_saved_model_tensor_info_t info;
    st = weft_saved_model_signature_output(g->model, sig, 0, &info);
    if (!st) fetch = g_strdup(info.name);
  } else if (!st) {
    st = weft_status_new(WEFT_INVALID_ARGUMENT, "SavedModel '%s' has no signature: name the "
                         "fetch with --fetch", opt->saved_model_dir);
  }
  weft_tensor_t *out = NULL;
  if (!st)
    st = weft_saved_model_run(g->model, NULL, (const char *const *)names->pdata,
                              (weft_tensor_t *const *)g->values->pdata, (int)names->len,
                              (const char *const *)&fetch, &out, 1, NULL, 0);
  weft_tensor_unref(out);
  for (guint k = 0; k < names->len && !st; k++) {
    weft_output_t o;
    weft_status_t *missing = weft_graph_find_output(g->graph, names->pdata[k], &o);
    if (missing) {
      char **parts = g_strsplit(names->pdata[k], ":", 2);
      char *standin = g_strdup_printf("_weft_feed/%s/%s:0", parts[0], parts[1] ? parts[1] : "0");
      st = weft_graph_find_output(g->graph, standin, &o);
      g_free(standin);
      g_strfreev(parts);
      if (st) {
        weft_status_free(st);
        st = missing;
      } else {
        weft_status_free(missing);
      }
    }
    if (!st) g_array_append_val(g->feeds, o);
  }
  if (!st) st = weft_graph_find_output(g->graph, fetch, &g->fetch);
  g_free(fetch);
  g_ptr_array_free(names, TRUE);
  return st;
}

static weft_status_t *load(const bench_options_t *o, const bench_graph_options_t *opt,
                           graph_run_t *g) {
  g->feeds = g_array_new(FALSE, FALSE, sizeof(weft_output_t));
  g->values = g_ptr_array_new_with_free_func((GDestroyNotify)weft_tensor_unref);
  weft_session_options_t *so = weft_session_options_new();
  weft_session_options_set_intra_op_threads(so, o->threads);
  weft_status_t *st = NULL;
  const char *sig = NULL;
  if (opt->saved_model_dir) {
    st = weft_saved_model_load(opt->saved_model_dir, NULL, so, &g->model);
    if (!st) {
      g->graph = weft_saved_model_graph(g->model);
      g->session = weft_saved_model_session(g->model);
      for (int k = 0; k < weft_saved_model_num_signatures(g->model) && !sig; k++)
        if (strcmp(weft_saved_model_signature_key(g->model, k), "serving_default") == 0)
          sig = "serving_default";
      if (!sig && weft_saved_model_num_signatures(g->model) > 0)
        sig = weft_saved_model_signature_key(g->model, 0);
    }
    if (!st) st = saved_model_io(g, sig, opt);
    weft_session_options_free(so);
    return st;
  }
  g->own_graph = true;
  g->graph = weft_graph_new();
  st = weft_graph_import_graphdef_file(g->graph, opt->graph_path, NULL);
  /* Feeds: --feed, else every Placeholder, else the input a graph froze. A --feed of a Const
   * unfreezes it, its dimensions free, so that a conv net of the corpus takes larger images. */
  GPtrArray *consts = g_ptr_array_new();
  GArray *shapes = g_array_new(FALSE, TRUE, sizeof(fed_shape_t));
  for (const char *const *f = opt->feeds; !st && f && *f; f++) {
    char *name = NULL;
    fed_shape_t fs = {0};
    weft_output_t t;
    st = feed_arg(*f, &name, &fs.rank, fs.dims);
    if (!st) st = weft_graph_find_output(g->graph, name, &t);
    if (!st && strcmp(weft_node_op(t.node), "Const") == 0) {
      g_ptr_array_add(consts, t.node);
      g_array_append_val(shapes, fs);
    }
    g_free(name);
  }
  if (!st && consts->len > 0) st = unfreeze(g, opt->graph_path, consts, shapes, true);
  g_array_free(shapes, TRUE);
  for (const char *const *f = opt->feeds; !st && f && *f; f++) {
    char *name = NULL, *fed = NULL;
    int rank = 0;
    int64_t dims[WEFT_MAX_RANK];
    weft_output_t t;
    st = feed_arg(*f, &name, &rank, dims);
    /* An unfrozen Const is now "<const>_fed"; its own node is still there, unread. */
    if (!st && consts->len > 0 && !weft_graph_find_output(g->graph, name, &t) &&
        strcmp(weft_node_op(t.node), "Const") == 0)
      fed = g_strdup_printf("%s_fed", weft_node_name(t.node));
    if (!st) st = add_feed(g, fed ? fed : name, rank, dims, opt->batch);
    g_free(name);
    g_free(fed);
  }
  g_ptr_array_free(consts, TRUE);
  if (!st && !(opt->feeds && *opt->feeds)) {
    for (int k = 0; k < weft_graph_num_nodes(g->graph) && !st; k++) {
      weft_node_t *n = weft_graph_node_at(g->graph, k);
      if (strcmp(weft_node_op(n), "Placeholder") == 0)
        st = add_feed(g, weft_node_name(n), -1, NULL, opt->batch);
    }
    if (!st && g->feeds->len == 0) st = feed_frozen_input(g, opt->graph_path, opt->batch);
  }
  /* The fetch: --fetch, else the graph's last sink. */
  if (!st && opt->fetches && *opt->fetches) {
    st = weft_graph_find_output(g->graph, opt->fetches[0], &g->fetch);
  } else if (!st) {
    g->fetch.node = default_fetch(g->graph);
    if (!g->fetch.node)
      st = weft_status_new(WEFT_INVALID_ARGUMENT,
                           "%s has no floating-point output that nothing reads: name one with --fetch",
                           opt->graph_path);
  }
  if (!st && g->own_graph) g->session = weft_session_new(g->graph, so, &st);
  weft_session_options_free(so);
  return st;
}

bool bench_run_graph(const bench_options_t *o, const bench_graph_options_t *opt,
                     bench_report_t *r, char **why) {
  *why = NULL;
  if (!!opt->graph_path == !!opt->saved_model_dir) {
    *why = g_strdup("give one of --graph FILE.pb and --saved-model DIR");
    return false;
  }
  if (opt->batch < 1) {
    *why = g_strdup_printf("--batch %d is out of range (1 or more)", opt->batch);
    return false;
  }
  for (const char *const *f = opt->feeds; f && *f; f++) {
    const char *eq = strrchr(*f, '=');
    int rank = 0;
    int64_t dims[WEFT_MAX_RANK];
    if (!eq || eq == *f || !parse_shape(eq + 1, &rank, dims)) {
      *why = g_strdup_printf("--feed '%s' is not NAME=SHAPE (e.g. input=64,28,28,1)", *f);
      return false;
    }
  }
  if (opt->fetches && opt->fetches[0] && opt->fetches[1]) {
    *why = g_strdup("--graph times one fetch: give --fetch once");
    return false;
  }
  const char *path = opt->graph_path ? opt->graph_path : opt->saved_model_dir;
  graph_run_t g = {0};
  graph_case_t c = {0};
  weft_tensor_t *expected = NULL;
  weft_status_t *st = load(o, opt, &g);
  /* The batch a step computes: the first feed's first dimension (a --feed may set it). */
  int64_t batch = opt->batch;
  if (!st && g.values->len > 0 && weft_tensor_rank(g.values->pdata[0]) > 0)
    batch = weft_tensor_dims(g.values->pdata[0])[0];
  char *label = model_label(path);
  char *name = g_strdup_printf("graph/%s/batch_%" G_GINT64_FORMAT, label, batch);
  g_free(label);
  if (!st) {
    c.session = g.session;
    c.n_feeds = (int)g.feeds->len;
    c.feed_names = g_new0(char *, c.n_feeds + 1);
    for (int k = 0; k < c.n_feeds; k++) {
      weft_output_t f = g_array_index(g.feeds, weft_output_t, k);
      c.feed_names[k] = g_strdup_printf("%s:%d", weft_node_name(f.node), f.index);
    }
    c.feed_values = (weft_tensor_t **)g.values->pdata;
    c.fetch_name = g_strdup_printf("%s:%d", weft_node_name(g.fetch.node), g.fetch.index);
    const char *fetch[] = {c.fetch_name};
    st = weft_session_run(c.session, (const char *const *)c.feed_names, c.feed_values, c.n_feeds,
                          fetch, &expected, 1, NULL, 0);
  }
  if (st) {
    bench_add_failure(r, name, st);
    g_free(name);
    g_strfreev(c.feed_names);
    g_free(c.fetch_name);
    graph_run_clear(&g);
    return true;
  }
  /* The peer's model: the same computation, inputs and output named as the exporter says. */
  bench_peer_case_t *peer = NULL;
  char *peer_why = NULL;
  if (o->peer) {
    bench_graph_io_t io = {g.graph, g.session, c.n_feeds, (const weft_output_t *)g.feeds->data,
                           c.feed_values, g.fetch, expected};
    GBytes *model = NULL;
    st = bench_graph_to_onnx(&io, &model);
    if (st) {
      peer_why = g_strdup(weft_status_message(st));
      weft_status_free(st);
      st = NULL;
    } else {
      char **in_names = g_new0(char *, c.n_feeds + 1);
      for (int k = 0; k < c.n_feeds; k++)
        in_names[k] = bench_onnx_tensor_name(g_array_index(g.feeds, weft_output_t, k));
      char *out_name = bench_onnx_tensor_name(g.fetch);
      peer = bench_peer_row_case(o, model, c.n_feeds, (const char *const *)in_names,
                                 c.feed_values, out_name, &peer_why);
      g_strfreev(in_names);
      g_free(out_name);
    }
  } else if (o->peer_name) {
    peer_why = g_strdup(o->peer_why);
  }
  bench_stats_t ws = {0}, ps = {0};
  if (bench_measure_row(o, run_graph_step, &c, NULL, NULL, peer ? bench_peer_case_run : NULL,
                        peer, 1e3, false, &ws, NULL, &ps, &st)) {
    GString *params = g_string_new(NULL);
    for (int k = 0; k < c.n_feeds; k++) {
      const weft_tensor_t *t = c.feed_values[k];
      g_string_append_printf(params, "%s=", c.feed_names[k]);
      for (int d = 0; d < weft_tensor_rank(t); d++)
        g_string_append_printf(params, "%s%" G_GINT64_FORMAT, d ? "x" : "", weft_tensor_dims(t)[d]);
      g_string_append_c(params, ' ');
    }
    g_string_append_printf(params, "fetch=%s threads=%d", c.fetch_name, o->threads);
    bench_add_row(r, name, params->str, "ms", false, &ws, NULL, NULL,
                  "report: a step of the model");
    g_string_free(params, TRUE);
    bench_peer_finish(r, o, peer, peer_why, &ps, expected, GRAPH_RTOL, GRAPH_ATOL);
  } else {
    bench_add_failure(r, name, st);
    bench_peer_case_free(peer);
    g_free(peer_why);
  }
  weft_tensor_unref(expected);
  g_free(name);
  g_strfreev(c.feed_names);
  g_free(c.fetch_name);
  graph_run_clear(&g);
  return true;
}
