/* The TensorFlow-to-ONNX exporter behind `weft bench --graph` (bench/bench_graph_export.c),
 * checked without ONNX Runtime: corpus graphs (MLPs, NHWC and NCHW convolutions, depthwise
 * convolutions, pools, batch norms) are exported, the ONNX model is imported back through
 * weft-conformance's ONNX-to-Weft mapping (conformance/onnx/), and both graphs, fed the same
 * inputs, must give the same output. Ops the exporter does not map are refused with a message
 * naming the op and the node. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "bench.h"
#include "onnx_internal.h"
#include "weft/weft.h"

static char *corpus_path(const char *rel) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root != NULL ? g_strdup(root) : g_build_filename(WEFT_SOURCE_DIR, "..", "shared",
                                                                "corpus", NULL);
  char *path = g_build_filename(dir, "tf", rel, NULL);
  g_free(dir);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    char *why = g_strdup_printf("corpus file %s not found (set WEFT_CORPUS)", path);
    g_test_skip(why);
    g_free(why);
    g_free(path);
    return NULL;
  }
  return path;
}

/* Values in [-1, 1) from a fixed sequence (the test's own, not the bench's). */
static weft_tensor_t *input_tensor(int rank, const int64_t *dims) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++)
    p[k] = (float)((k * 37 + 11) % 101) / 50.5f - 1.0f;
  return t;
}

/* The same values as float64 (dtype WEFT_DT_DOUBLE), else float32. */
static weft_tensor_t *input_of(weft_dtype_t dtype, int rank, const int64_t *dims) {
  weft_tensor_t *f = input_tensor(rank, dims);
  if (dtype != WEFT_DT_DOUBLE) return f;
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_DOUBLE, rank, dims);
  double *p = weft_tensor_data(t);
  const float *src = weft_tensor_data(f);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) p[k] = src[k];
  weft_tensor_unref(f);
  return t;
}

static double value_at(const weft_tensor_t *t, int64_t k) {
  return weft_tensor_dtype(t) == WEFT_DT_DOUBLE ? ((const double *)weft_tensor_data(t))[k]
                                                : ((const float *)weft_tensor_data(t))[k];
}

/* The ONNX model's output for `input` (fed under the model's only input), through Weft's ONNX
 * importer on the CPU. */
static weft_tensor_t *run_onnx(GBytes *model, weft_tensor_t *input) {
  gsize len = 0;
  const uint8_t *bytes = g_bytes_get_data(model, &len);
  weft_status_t *st = NULL;
  Onnx__ModelProto *m = cf_onnx_model_parse(bytes, len, "exported model", &st);
  if (st) g_error("%s", weft_status_message(st));
  const Onnx__GraphProto *g = m->graph;
  g_assert_cmpuint(g->n_input, ==, 1);
  g_assert_cmpuint(g->n_output, ==, 1);
  g_assert_cmpint(m->opset_import[0]->version, ==, 13);
  cf_onnx_ctx_t x = {0};
  x.graph = weft_graph_new();
  x.device_spec = x.input_spec = "/device:CPU:0";
  x.device_type = "CPU";
  x.opset = 13;
  x.outputs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  x.values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify)weft_tensor_unref);
  x.feed_names = g_ptr_array_new_with_free_func(g_free);
  x.feed_tensors = g_ptr_array_new();
  weft_output_t in = weft_placeholder(x.graph, "onnx_input", weft_tensor_dtype(input),
                                      weft_tensor_rank(input), weft_tensor_dims(input), &st);
  g_assert_null(st);
  cf_onnx_bind(&x, g->input[0]->name, in);
  g_hash_table_insert(x.values, g_strdup(g->input[0]->name), weft_tensor_ref(input));
  g_ptr_array_add(x.feed_names, g_strdup("onnx_input"));
  g_ptr_array_add(x.feed_tensors, input);
  st = cf_onnx_map_graph(&x, g, "exported model");
  if (st) g_error("import: %s", weft_status_message(st));
  weft_output_t out = cf_onnx_get(&x, g->output[0]->name);
  g_assert_nonnull(out.node);
  char *fetch = g_strdup_printf("%s:%d", weft_node_name(out.node), out.index);
  weft_session_t *s = weft_session_new(x.graph, NULL, &st);
  g_assert_null(st);
  const char *feed_names[] = {"onnx_input"}, *fetches[] = {fetch};
  weft_tensor_t *got = NULL;
  st = weft_session_run(s, feed_names, &input, 1, fetches, &got, 1, NULL, 0);
  if (st) g_error("run: %s", weft_status_message(st));
  g_free(fetch);
  weft_session_free(s);
  g_ptr_array_free(x.feed_names, TRUE);
  g_ptr_array_free(x.feed_tensors, TRUE);
  g_hash_table_destroy(x.values);
  g_hash_table_destroy(x.outputs);
  weft_graph_free(x.graph);
  onnx__model_proto__free_unpacked(m, NULL);
  return got;
}

typedef struct graph_case {
  const char *file;  /* below corpus/tf */
  const char *feed;  /* a Placeholder, or the Const the graph froze its input into */
  int rank;
  int64_t dims[5];
  const char *fetch;
  const char *ops;   /* ONNX ops the export must hold (the mapping under test) */
  weft_dtype_t dtype; /* of the feed: float32 unless WEFT_DT_DOUBLE */
} graph_case_t;

/* Graph `graph` fed `input` at `feed`, and its export: the status of the export; on success
 * *model and *want (the TF graph's output at `fetch`). */
static weft_status_t *export_graph(weft_graph_t *graph, const char *feed_name,
                                   const char *fetch_name, weft_tensor_t *input, GBytes **model,
                                   weft_tensor_t **want) {
  weft_output_t feed, fetch;
  g_assert_null(weft_graph_find_output(graph, feed_name, &feed));
  g_assert_null(weft_graph_find_output(graph, fetch_name, &fetch));
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(graph, NULL, &st);
  g_assert_null(st);
  const char *feed_names[] = {feed_name}, *fetches[] = {fetch_name};
  st = weft_session_run(s, feed_names, &input, 1, fetches, want, 1, NULL, 0);
  if (st) g_error("%s: %s", fetch_name, weft_status_message(st));
  bench_graph_io_t io = {graph, s, 1, &feed, &input, fetch, *want};
  st = bench_graph_to_onnx(&io, model);
  weft_session_free(s);
  return st;
}

/* The case's corpus graph, fed `input`, and its export (export_graph). */
static weft_status_t *export_case(const graph_case_t *c, const char *path, GBytes **model,
                                  weft_tensor_t **want, weft_tensor_t *input) {
  weft_graph_t *graph = weft_graph_new();
  g_assert_null(weft_graph_import_graphdef_file(graph, path, NULL));
  weft_status_t *st = export_graph(graph, c->feed, c->fetch, input, model, want);
  weft_graph_free(graph);
  return st;
}

/* The export holds every op of `ops` (op_type strings in its bytes), and the model imported back
 * gives `want` for `input`. Takes model. */
static void check_export(const char *what, GBytes *model, const char *ops, weft_tensor_t *input,
                         const weft_tensor_t *want) {
  gsize len = 0;
  const char *bytes = g_bytes_get_data(model, &len);
  char **names = g_strsplit(ops, " ", -1);
  for (char **op = names; *op; op++) {
    bool found = false;
    for (gsize k = 0; k + strlen(*op) <= len && !found; k++)
      found = memcmp(bytes + k, *op, strlen(*op)) == 0;
    if (!found) g_error("%s: the export has no %s", what, *op);
  }
  g_strfreev(names);
  weft_tensor_t *got = run_onnx(model, input);
  g_assert_cmpint(weft_tensor_rank(got), ==, weft_tensor_rank(want));
  g_assert_cmpint(weft_tensor_dtype(got), ==, weft_tensor_dtype(want));
  for (int d = 0; d < weft_tensor_rank(want); d++)
    g_assert_cmpint(weft_tensor_dims(got)[d], ==, weft_tensor_dims(want)[d]);
  double worst = 0;
  for (int64_t k = 0; k < weft_tensor_num_elements(want); k++) {
    double g = value_at(got, k), w = value_at(want, k);
    double excess = fabs(g - w) / (1e-5 + 1e-4 * fabs(w));
    if (!(excess <= worst)) worst = excess;
  }
  if (!(worst <= 1.0)) g_error("%s: outputs differ (%.3g times the tolerance)", what, worst);
  g_assert_cmpint(weft_tensor_num_elements(want), >, 0);
  weft_tensor_unref(got);
  g_bytes_unref(model);
}

static void test_round_trip(gconstpointer data) {
  const graph_case_t *c = data;
  char *path = corpus_path(c->file);
  if (!path) return;
  weft_tensor_t *input = input_of(c->dtype, c->rank, c->dims), *want = NULL;
  GBytes *model = NULL;
  weft_status_t *st = export_case(c, path, &model, &want, input);
  if (st) g_error("%s: %s", c->file, weft_status_message(st));
  check_export(c->file, model, c->ops, input, want);
  weft_tensor_unref(want);
  weft_tensor_unref(input);
  g_free(path);
}

/* ---- a graph built here, for the mapped ops no corpus graph holds ---- */

static weft_output_t ints_const(weft_graph_t *g, const char *name, int rank, const int64_t *dims,
                                const int32_t *v) {
  weft_status_t *st = NULL;
  int64_t n = 1;
  for (int k = 0; k < rank; k++) n *= dims[k];
  weft_tensor_t *t = weft_tensor_new_from_data(WEFT_DT_INT32, rank, dims, v,
                                               (size_t)n * sizeof(int32_t), &st);
  g_assert_null(st);
  weft_output_t o = weft_const(g, name, t, &st);
  g_assert_null(st);
  weft_tensor_unref(t);
  return o;
}

static weft_output_t float_const(weft_graph_t *g, const char *name, int rank,
                                 const int64_t *dims) {
  weft_status_t *st = NULL;
  weft_tensor_t *t = input_tensor(rank, dims);
  float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) p[k] = p[k] * 0.5f + 0.25f;
  weft_output_t o = weft_const(g, name, t, &st);
  g_assert_null(st);
  weft_tensor_unref(t);
  return o;
}

/* op(inputs) named `name`, with up to two int-list attrs and one bool attr. */
static weft_output_t op(weft_graph_t *g, const char *type, const char *name,
                        const weft_output_t *in, int n_in, const char *list_attr,
                        const int64_t *list, int n_list, const char *bool_attr) {
  weft_op_builder_t *b = weft_op_new(g, type, name);
  if (strcmp(type, "ConcatV2") == 0) { /* values (a list), then axis */
    weft_op_add_input_list(b, in, n_in - 1);
    weft_op_add_input(b, in[n_in - 1]);
  } else {
    for (int k = 0; k < n_in; k++) weft_op_add_input(b, in[k]);
  }
  if (list_attr) weft_op_set_attr_int_list(b, list_attr, list, n_list);
  if (bool_attr) weft_op_set_attr_bool(b, bool_attr, true);
  if (strcmp(type, "MaxPool") == 0 || strcmp(type, "AvgPool") == 0) {
    static const int64_t ones[4] = {1, 1, 1, 1};
    weft_op_set_attr_int_list(b, "strides", ones, 4);
    weft_op_set_attr_string(b, "padding", strcmp(type, "MaxPool") == 0 ? "VALID" : "SAME");
  }
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st) g_error("%s: %s", name, weft_status_message(st));
  return weft_out(node, 0);
}

/* Pad, MaxPool (VALID), AvgPool (SAME), Mean over the spatial axes, Transpose, Reshape, MatMul
 * with transpose_b, Elu, Tanh, ConcatV2, Sub, RealDiv, Erf, Sigmoid, Pow, Relu6, ExpandDims,
 * Squeeze and LogSoftmax in one graph, exported and imported back. */
static void test_round_trip_built(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t xd[4] = {2, 4, 4, 3};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 4, xd, &st);
  g_assert_null(st);
  static const int32_t pads[8] = {0, 0, 1, 1, 1, 0, 0, 0}, axes[2] = {1, 2}, perm[4] = {0, 3, 1, 2},
                       shape[2] = {2, -1}, axis1[1] = {1}, axis0[1] = {0};
  int64_t d42[2] = {4, 2}, d2[1] = {2}, d4[1] = {4}, d0[1] = {0},
          k22[4] = {1, 2, 2, 1}, k33[4] = {1, 3, 3, 1}, sq0[1] = {0};
  weft_output_t in[3];
  in[0] = x, in[1] = ints_const(g, "pads", 2, d42, pads);
  weft_output_t p = op(g, "Pad", "pad", in, 2, NULL, NULL, 0, NULL);         /* 2x6x5x3 */
  in[0] = p;
  weft_output_t mp = op(g, "MaxPool", "max", in, 1, "ksize", k22, 4, NULL);  /* 2x5x4x3 */
  weft_output_t ap = op(g, "AvgPool", "avg", in, 1, "ksize", k33, 4, NULL);  /* 2x6x5x3 */
  in[0] = ap, in[1] = ints_const(g, "axes", 1, d2, axes);
  weft_output_t mean = op(g, "Mean", "mean", in, 2, NULL, NULL, 0, NULL);    /* 2x3 */
  in[0] = mp, in[1] = ints_const(g, "perm", 1, d4, perm);
  weft_output_t t = op(g, "Transpose", "transpose", in, 2, NULL, NULL, 0, NULL);
  in[0] = t, in[1] = ints_const(g, "shape", 1, d2, shape);
  weft_output_t r = op(g, "Reshape", "reshape", in, 2, NULL, NULL, 0, NULL); /* 2x60 */
  int64_t wd[2] = {5, 60};
  in[0] = r, in[1] = float_const(g, "w", 2, wd);
  weft_output_t mm = op(g, "MatMul", "matmul", in, 2, NULL, NULL, 0, "transpose_b"); /* 2x5 */
  in[0] = mm;
  weft_output_t e = op(g, "Elu", "elu", in, 1, NULL, NULL, 0, NULL);
  in[0] = e;
  weft_output_t th = op(g, "Tanh", "tanh", in, 1, NULL, NULL, 0, NULL);
  in[0] = th, in[1] = mean, in[2] = ints_const(g, "axis", 0, d0, axis1);
  weft_output_t c = op(g, "ConcatV2", "concat", in, 3, NULL, NULL, 0, NULL); /* 2x8 */
  in[0] = c, in[1] = float_const(g, "half", 0, d0);
  weft_output_t sub = op(g, "Sub", "sub", in, 2, NULL, NULL, 0, NULL);
  in[0] = sub, in[1] = float_const(g, "scale", 1, (int64_t[]){8});
  weft_output_t div = op(g, "RealDiv", "div", in, 2, NULL, NULL, 0, NULL);
  in[0] = div;
  weft_output_t erf = op(g, "Erf", "erf", in, 1, NULL, NULL, 0, NULL);
  in[0] = erf;
  weft_output_t sg = op(g, "Sigmoid", "sigmoid", in, 1, NULL, NULL, 0, NULL);
  in[0] = sg, in[1] = float_const(g, "exponent", 1, (int64_t[]){8});
  weft_output_t pw = op(g, "Pow", "pow", in, 2, NULL, NULL, 0, NULL); /* sigmoid's base > 0 */
  in[0] = pw;
  weft_output_t r6 = op(g, "Relu6", "relu6", in, 1, NULL, NULL, 0, NULL);
  in[0] = r6, in[1] = ints_const(g, "axis0", 0, d0, axis0);
  weft_output_t ex = op(g, "ExpandDims", "expand", in, 2, NULL, NULL, 0, NULL);
  in[0] = ex;
  weft_output_t sq = op(g, "Squeeze", "squeeze", in, 1, "squeeze_dims", sq0, 1, NULL);
  in[0] = sq;
  op(g, "LogSoftmax", "out", in, 1, NULL, NULL, 0, NULL);
  weft_tensor_t *input = input_tensor(4, xd), *want = NULL;
  GBytes *model = NULL;
  st = export_graph(g, "x:0", "out:0", input, &model, &want);
  if (st) g_error("%s", weft_status_message(st));
  check_export("built graph", model,
               "Pad MaxPool AveragePool ReduceMean Transpose Reshape Gemm transB Elu Tanh Concat "
               "Sub Div Erf Sigmoid Pow Clip Unsqueeze Squeeze LogSoftmax", input, want);
  weft_tensor_unref(want);
  weft_tensor_unref(input);
  weft_graph_free(g);
}

/* A node of `type` over inputs `in` (a list first when `list` > 0: Pack's values) with an int
 * attr (name NULL: none). */
static weft_node_t *op2(weft_graph_t *g, const char *type, const char *name,
                        const weft_output_t *in, int n_in, int list, const char *int_attr,
                        int64_t v, const char *int_attr2, int64_t v2) {
  weft_op_builder_t *b = weft_op_new(g, type, name);
  if (list > 0) weft_op_add_input_list(b, in, list);
  for (int k = list; k < n_in; k++) weft_op_add_input(b, in[k]);
  if (int_attr) weft_op_set_attr_int(b, int_attr, v);
  if (int_attr2) weft_op_set_attr_int(b, int_attr2, v2);
  weft_node_t *node = NULL;
  weft_status_t *st = weft_op_finish(b, &node);
  if (st) g_error("%s: %s", name, weft_status_message(st));
  return node;
}

/* SquaredDifference, Sum, Max, Min, Prod (keep_dims), Pack, StridedSlice (begin and end masks,
 * a stride of 2, shrink_axis_mask), SplitV (a -1 size, its second output), Greater, SelectV2,
 * Tan and Slice (a -1 size) in one graph, exported and imported back. */
static void test_round_trip_built_more(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t xd[4] = {2, 4, 4, 3}, d1[1] = {1}, d3[1] = {3}, d4[1] = {4}, d2[1] = {2}, d0[1] = {0};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 4, xd, &st);
  g_assert_null(st);
  static const int32_t ax1[1] = {1}, ax2[1] = {2}, axm1[1] = {-1},
                       begin[4] = {0, 1, 0, 0}, end[4] = {2, 3, 4, 1}, strides[4] = {1, 1, 2, 1},
                       sizes[2] = {1, -1}, sb[4] = {0, 0, 0, 0}, ssz[4] = {-1, 1, -1, -1};
  weft_output_t in[4];
  in[0] = x, in[1] = float_const(g, "c", 1, d3);
  weft_output_t sd = weft_out(op2(g, "SquaredDifference", "sd", in, 2, 0, NULL, 0, NULL, 0), 0);
  in[0] = sd, in[1] = ints_const(g, "ax1", 1, d1, ax1);
  weft_output_t sum = weft_out(op2(g, "Sum", "sum", in, 2, 0, NULL, 0, NULL, 0), 0); /* 2x4x3 */
  in[0] = x, in[1] = ints_const(g, "ax2", 1, d1, ax2);
  weft_output_t mx = weft_out(op2(g, "Max", "max", in, 2, 0, NULL, 0, NULL, 0), 0);
  weft_output_t mn = weft_out(op2(g, "Min", "min", in, 2, 0, NULL, 0, NULL, 0), 0);
  in[0] = sum, in[1] = mx, in[2] = mn;
  weft_output_t pack = weft_out(op2(g, "Pack", "pack", in, 3, 3, "axis", 1, NULL, 0), 0);
  /* pack: 2x3x4x3; [:2, 1:3, ::2, 0] -> 2x2x2; its last axis split 1 + 1; [:, :1, :] */
  in[0] = pack, in[1] = ints_const(g, "begin", 1, d4, begin),
  in[2] = ints_const(g, "end", 1, d4, end), in[3] = ints_const(g, "strides", 1, d4, strides);
  weft_output_t ss = weft_out(op2(g, "StridedSlice", "ss", in, 4, 0, "begin_mask", 1 | 4,
                                  "shrink_axis_mask", 8), 0);
  in[0] = ss, in[1] = ints_const(g, "sizes", 1, d2, sizes), in[2] = ints_const(g, "axm1", 0, d0,
                                                                                 axm1);
  weft_node_t *sv = op2(g, "SplitV", "splitv", in, 3, 0, "num_split", 2, NULL, 0);
  weft_output_t part = weft_out(sv, 1); /* 2x2x1 */
  in[0] = part, in[1] = float_const(g, "zero", 0, d0);
  weft_output_t gt = weft_out(op2(g, "Greater", "gt", in, 2, 0, NULL, 0, NULL, 0), 0);
  in[0] = part;
  weft_output_t tan = weft_out(op2(g, "Tan", "tan", in, 1, 0, NULL, 0, NULL, 0), 0);
  in[0] = gt, in[1] = part, in[2] = tan;
  weft_output_t sel = weft_out(op2(g, "SelectV2", "sel", in, 3, 0, NULL, 0, NULL, 0), 0);
  in[0] = sel, in[1] = ints_const(g, "sb", 1, d3, sb), in[2] = ints_const(g, "ssz", 1, d3, ssz);
  weft_output_t sl = weft_out(op2(g, "Slice", "slice", in, 3, 0, NULL, 0, NULL, 0), 0);
  in[0] = sl, in[1] = ints_const(g, "axlast", 1, d1, (const int32_t[]){2});
  weft_op_builder_t *b = weft_op_new(g, "Prod", "out");
  weft_op_add_input(b, in[0]);
  weft_op_add_input(b, in[1]);
  weft_op_set_attr_bool(b, "keep_dims", true);
  g_assert_null(weft_op_finish(b, NULL));
  weft_tensor_t *input = input_tensor(4, xd), *want = NULL;
  GBytes *model = NULL;
  st = export_graph(g, "x:0", "out:0", input, &model, &want);
  if (st) g_error("%s", weft_status_message(st));
  g_assert_cmpint(weft_tensor_num_elements(want), ==, 2);
  check_export("built graph 2", model,
               "Sub Mul ReduceSum ReduceMax ReduceMin Unsqueeze Concat Slice Squeeze Split "
               "Greater Where Tan ReduceProd", input, want);
  weft_tensor_unref(want);
  weft_tensor_unref(input);
  weft_graph_free(g);
}

/* An int32 feed (read as values: Cast, then arithmetic) is an int32 graph input of the export,
 * fed the same integers on both sides. */
static void test_int_feed(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t xd[2] = {2, 3}, d3[1] = {3};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_INT32, 2, xd, &st);
  g_assert_null(st);
  weft_op_builder_t *b = weft_op_new(g, "Cast", "cast");
  weft_op_add_input(b, x);
  weft_op_set_attr_type(b, "SrcT", WEFT_DT_INT32);
  weft_op_set_attr_type(b, "DstT", WEFT_DT_FLOAT);
  weft_node_t *cast = NULL;
  g_assert_null(weft_op_finish(b, &cast));
  weft_output_t in[2] = {weft_out(cast, 0), float_const(g, "w", 1, d3)};
  op2(g, "Mul", "out", in, 2, 0, NULL, 0, NULL, 0);
  weft_tensor_t *input = weft_tensor_new(WEFT_DT_INT32, 2, xd), *want = NULL;
  int32_t *p = weft_tensor_data(input);
  for (int k = 0; k < 6; k++) p[k] = k * 3 % 7;
  GBytes *model = NULL;
  st = export_graph(g, "x:0", "out:0", input, &model, &want);
  if (st) g_error("%s", weft_status_message(st));
  check_export("int32 feed", model, "Cast Mul", input, want);
  weft_tensor_unref(want);
  weft_tensor_unref(input);
  weft_graph_free(g);
}

static const graph_case_t CASES[] = {
    {"graphdef/mlp_5_5_1_frozen.pb", "x:0", 2, {4, 5}, "Identity:0", "Gemm", WEFT_DT_FLOAT},
    {"graphdef/fc_layers_frozen.pb", "X:0", 2, {3, 784}, "output:0", "Gemm Relu", WEFT_DT_FLOAT},
    {"dl4j/mnist_00/frozen_model.pb", "input:0", 2, {2, 784}, "output:0", "Gemm Softmax", WEFT_DT_FLOAT},
    {"dl4j/cnn2d_layers/channels_last_b1_k2_s1_d1_SAME_relu6/frozen_model.pb", "in_0:0", 4,
     {1, 5, 5, 2}, "conv2d/Relu6:0", "Transpose Conv Clip", WEFT_DT_FLOAT},
    {"dl4j/cnn2d_layers/channels_first_b1_k2_s1_d1_SAME/frozen_model.pb", "in_0:0", 4,
     {1, 2, 5, 5}, "conv2d/BiasAdd:0", "Conv Reshape", WEFT_DT_FLOAT},
    {"dl4j/cnn2d_layers/channels_last_b1_k2_s2_SAME/frozen_model.pb", "in_0:0", 4,
     {1, 5, 5, 2}, "conv2d/BiasAdd:0", "Conv", WEFT_DT_FLOAT},
    {"dl4j/sepconv2d_layers/channels_last_b2_k2_s1_d1_SAME_dm2/frozen_model.pb", "in_0:0", 4,
     {2, 5, 5, 2}, "separable_conv2d/BiasAdd:0", "Conv group", WEFT_DT_FLOAT},
    {"dl4j/batchnorm/rank4_nhwc_batch3_sz5_fused_m50_e01/frozen_model.pb", "in_0:0", 4,
     {3, 5, 5, 3}, "batch_normalization/FusedBatchNorm:0", "BatchNormalization epsilon", WEFT_DT_FLOAT},
    {"dl4j/max_pooling1d/channels_last_b1_k2_s2_SAME/frozen_model.pb", "in_0:0", 3, {1, 5, 2},
     "max_pooling1d/Squeeze:0", "Unsqueeze MaxPool Squeeze", WEFT_DT_FLOAT},
    {"dl4j/avg_pooling1d/channels_first_b2_k2_s1_VALID/frozen_model.pb", "in_0:0", 3,
     {2, 2, 5}, "average_pooling1d/Squeeze:0", "AveragePool", WEFT_DT_FLOAT},
    {"dl4j/cnn1d_nn/ncw_b1_k2_s2_SAME/frozen_model.pb", "in_0:0", 3, {1, 2, 5},
     "conv1d/Squeeze:0", "Conv", WEFT_DT_FLOAT},
    /* Issue 22's second round: LeakyRelu, LRN, 3-D pools, float64 MLPs and LSTMs (Split,
     * Unpack, StridedSlice, Fill of a feed's shape folded), a dilated 2-D convolution. */
    {"dl4j/leaky_relu/rank4_a05/frozen_model.pb", "in_0:0", 2, {4, 5}, "LeakyRelu:0",
     "LeakyRelu alpha", WEFT_DT_FLOAT},
    {"dl4j/lrn/dr5_b1_a1_b05/frozen_model.pb", "in_0:0", 4, {2, 4, 4, 8}, "LRN:0",
     "Transpose LRN size beta bias", WEFT_DT_FLOAT},
    {"dl4j/max_pooling3d/channels_last_b1_k2_s2_SAME/frozen_model.pb", "in_0:0", 5,
     {1, 5, 5, 5, 2}, "max_pooling3d/MaxPool3D:0", "MaxPool", WEFT_DT_FLOAT},
    {"dl4j/avg_pooling3d/channels_first_b2_k2_s1_VALID/frozen_model.pb", "in_0:0", 5,
     {2, 2, 5, 5, 5}, "average_pooling3d/transpose_1:0", "AveragePool", WEFT_DT_FLOAT},
    {"dl4j/avg_pooling3d/channels_last_b1_k2_s1_SAME/frozen_model.pb", "in_0:0", 5,
     {1, 5, 5, 5, 2}, "average_pooling3d/AvgPool3D:0", "AveragePool", WEFT_DT_FLOAT},
    {"dl4j/ae_00/frozen_model.pb", "input:0", 2, {3, 4}, "output:0", "Gemm Tanh",
     WEFT_DT_DOUBLE},
    {"dl4j/lstm_mnist/frozen_model.pb", "input:0", 3, {2, 28, 28}, "output:0",
     "Split Squeeze Gemm Sigmoid Softmax", WEFT_DT_DOUBLE},
    {"dl4j/primitive_lstm/frozen_model.pb", "input:0", 3, {2, 2, 6}, "output:0",
     "Split Squeeze Gemm", WEFT_DT_DOUBLE},
    {"dl4j/cnn2d_layers/channels_last_b1_k2_s1_d2_SAME/frozen_model.pb", "in_0:0", 4,
     {1, 5, 5, 2}, "conv2d/BiasAdd:0", "Conv dilations", WEFT_DT_FLOAT},
};

/* Cases ONNX Runtime checks (when it is found: WEFT_ORT_LIB, else the bench's own search), as
 * conformance/onnx/'s importer maps neither 3-D Conv nor ConvTranspose: 3-D convolutions
 * (NDHWC between Transposes, dilated through SpaceToBatchND), 3-D transposed convolutions; and a
 * float64 LSTM, for the typed inputs and output on ONNX Runtime's side. */
static const graph_case_t ORT_CASES[] = {
    {"dl4j/cnn3d_layers/channels_last_b2_k2_s1_VALID/frozen_model.pb", "in_0:0", 5,
     {2, 5, 5, 5, 2}, "conv3d/BiasAdd:0", "Conv Transpose", WEFT_DT_FLOAT},
    {"dl4j/cnn3d_layers/channels_last_b1_k222_s111_d212_SAME/frozen_model.pb", "in_0:0", 5,
     {1, 5, 5, 5, 2}, "conv3d/BiasAdd:0", "Conv dilations", WEFT_DT_FLOAT},
    {"dl4j/cnn3d_layers/channels_last_b1_k2_s1_d2_SAME/frozen_model.pb", "in_0:0", 5,
     {1, 5, 5, 5, 2}, "conv3d/BiasAdd:0", "Conv dilations", WEFT_DT_FLOAT},
    {"dl4j/conv3d_transpose_layers/NDHWC_b1_k2_s1_SAME_elu/frozen_model.pb", "in_0:0", 5,
     {1, 5, 5, 5, 2}, "conv3d_transpose/Elu:0", "ConvTranspose Elu", WEFT_DT_FLOAT},
    {"dl4j/conv3d_transpose_nn/NCDHW_b1_k2_s2_d1_SAME_out6/frozen_model.pb", "in_0:0", 5,
     {1, 2, 3, 3, 3}, "conv3d_transpose:0", "ConvTranspose output_padding", WEFT_DT_FLOAT},
    {"dl4j/conv3d_transpose_nn/NDHWC_b1_k2_s2_d1_SAME/frozen_model.pb", "in_0:0", 5,
     {1, 2, 2, 2, 2}, "conv3d_transpose:0", "ConvTranspose", WEFT_DT_FLOAT},
    /* float64 in and out: ONNX Runtime gets and gives doubles, compared as doubles. */
    {"dl4j/lstm_mnist/frozen_model.pb", "input:0", 3, {2, 28, 28}, "output:0",
     "Split Squeeze Gemm Sigmoid Softmax", WEFT_DT_DOUBLE},
};

/* The export of an ORT case run in ONNX Runtime against the TF graph's output in Weft. */
static void test_with_ort(gconstpointer data) {
  const graph_case_t *c = data;
  char *path = corpus_path(c->file);
  if (!path) return;
  char *why = NULL;
  bench_peer_t *peer = bench_peer_open(NULL, &why);
  if (!peer) {
    char *skip = g_strdup_printf("ONNX Runtime not found (set WEFT_ORT_LIB): %s", why);
    g_test_skip(skip);
    g_free(skip);
    g_free(why);
    g_free(path);
    return;
  }
  weft_tensor_t *input = input_of(c->dtype, c->rank, c->dims), *want = NULL;
  GBytes *model = NULL;
  weft_status_t *st = export_case(c, path, &model, &want, input);
  if (st) g_error("%s: %s", c->file, weft_status_message(st));
  gsize len = 0;
  const char *bytes = g_bytes_get_data(model, &len);
  char **names = g_strsplit(c->ops, " ", -1);
  for (char **o = names; *o; o++) {
    bool found = false;
    for (gsize k = 0; k + strlen(*o) <= len && !found; k++)
      found = memcmp(bytes + k, *o, strlen(*o)) == 0;
    if (!found) g_error("%s: the export has no %s", c->file, *o);
  }
  g_strfreev(names);
  bench_options_t o = {0};
  o.threads = 1;
  o.peer = peer;
  o.peer_name = "ort";
  char *in_name = g_strndup(c->feed, strcspn(c->feed, ":")),
       *out_name = g_str_has_suffix(c->fetch, ":0") ? g_strndup(c->fetch, strlen(c->fetch) - 2)
                                                    : g_strdup(c->fetch);
  bench_peer_case_t *pc = bench_peer_row_case(&o, model, 1, (const char *const *)&in_name,
                                              &input, out_name, &why);
  if (!pc) g_error("%s: %s", c->file, why);
  g_assert_cmpint(weft_tensor_num_elements(want), >, 0);
  st = bench_peer_case_check_tensor(pc, want, 1e-4, 1e-5);
  if (st) g_error("%s: %s", c->file, weft_status_message(st));
  bench_peer_case_free(pc);
  bench_peer_close(peer);
  g_free(in_name);
  g_free(out_name);
  weft_tensor_unref(want);
  weft_tensor_unref(input);
  g_free(path);
}

/* What the exporter does not map is refused naming the op and the node. */
static void test_refused(void) {
  graph_case_t c = {"dl4j/fused_batch_norm/float32_nhwc/frozen_model.pb", "in_0:0", 4,
                    {1, 2, 3, 4}, "FusedBatchNormV3:0", "", WEFT_DT_FLOAT};
  char *path = corpus_path(c.file);
  if (!path) return;
  weft_tensor_t *input = input_tensor(c.rank, c.dims), *want = NULL;
  GBytes *model = NULL;
  weft_status_t *st = export_case(&c, path, &model, &want, input);
  g_assert_nonnull(st);
  g_assert_null(model);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_UNIMPLEMENTED);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "ONNX export: FusedBatchNormV3 node 'FusedBatchNormV3': is_training is true "
                  "(only inference)");
  weft_status_free(st);
  weft_tensor_unref(want);
  weft_tensor_unref(input);
  g_free(path);

  /* An op outside the mapping, in a graph built here. */
  weft_graph_t *graph = weft_graph_new();
  int64_t dims[2] = {2, 3};
  weft_output_t x = weft_placeholder(graph, "x", WEFT_DT_FLOAT, 2, dims, &st);
  g_assert_null(st);
  weft_op_builder_t *b = weft_op_new(graph, "Lgamma", "lgamma_of_x");
  weft_op_add_input(b, x);
  weft_node_t *lgamma_node = NULL;
  g_assert_null(weft_op_finish(b, &lgamma_node));
  weft_session_t *s = weft_session_new(graph, NULL, &st);
  g_assert_null(st);
  weft_tensor_t *in = input_tensor(2, dims), *out = NULL;
  const char *feeds[] = {"x:0"}, *fetches[] = {"lgamma_of_x:0"};
  g_assert_null(weft_session_run(s, feeds, &in, 1, fetches, &out, 1, NULL, 0));
  bench_graph_io_t io = {graph, s, 1, &x, &in, weft_out(lgamma_node, 0), out};
  st = bench_graph_to_onnx(&io, &model);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "ONNX export: Lgamma node 'lgamma_of_x': the op is not mapped to ONNX");
  weft_status_free(st);
  weft_tensor_unref(in);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(graph);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  for (size_t k = 0; k < G_N_ELEMENTS(CASES); k++) {
    char *dir = g_path_get_dirname(CASES[k].file);
    char *name = g_strdup_printf("/bench_graph/round_trip/%s",
                                 strcmp(dir, "graphdef") == 0 ? CASES[k].file : dir);
    g_test_add_data_func(name, &CASES[k], test_round_trip);
    g_free(name);
    g_free(dir);
  }
  for (size_t k = 0; k < G_N_ELEMENTS(ORT_CASES); k++) {
    char *dir = g_path_get_dirname(ORT_CASES[k].file);
    char *name = g_strdup_printf("/bench_graph/ort/%s", dir);
    g_test_add_data_func(name, &ORT_CASES[k], test_with_ort);
    g_free(name);
    g_free(dir);
  }
  g_test_add_func("/bench_graph/round_trip/built", test_round_trip_built);
  g_test_add_func("/bench_graph/round_trip/built_more", test_round_trip_built_more);
  g_test_add_func("/bench_graph/round_trip/int_feed", test_int_feed);
  g_test_add_func("/bench_graph/refused", test_refused);
  return g_test_run();
}
