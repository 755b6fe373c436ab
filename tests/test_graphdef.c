/* Tests for GraphDef import and export (core/src/graph/graphdef.c): the real TensorFlow graphs of
 * the shared corpus import and compute the right answers (the MLPs against a double-precision
 * reference built from their own Const weights), malformed GraphDefs fail with the exact code and
 * a message naming the culprit and leave the graph untouched, TensorProto conversions follow
 * TensorFlow's rules, and export -> import gives back the same graph. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "graph/graph_internal.h"
#include "graph/graphdef_internal.h"
#include "weft/weft.h"

/* ---------------------------------------------------------------------------------------------
 * Helpers */

#define ASSERT_OK(expr)                                                                        \
  do {                                                                                         \
    weft_status_t *st_ = (expr);                                                               \
    if (st_ != NULL) {                                                                         \
      g_test_message("%s failed: %s: %s", #expr, weft_code_name(weft_status_code(st_)),        \
                     weft_status_message(st_));                                                \
      g_assert_cmpstr(weft_status_message(st_), ==, NULL);                                     \
    }                                                                                          \
  } while (0)

/* Checks code and message substrings (NULL-terminated list), then frees the status. */
static void assert_status(weft_status_t *st, weft_code_t code, ...) {
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  va_list ap;
  va_start(ap, code);
  for (const char *sub = va_arg(ap, const char *); sub != NULL; sub = va_arg(ap, const char *)) {
    if (strstr(weft_status_message(st), sub) == NULL) {
      g_test_message("message '%s' lacks '%s'", weft_status_message(st), sub);
      g_assert_cmpstr(weft_status_message(st), ==, sub);
    }
  }
  va_end(ap);
  weft_status_free(st);
}

/* The corpus file, or NULL with the test skipped when the corpus is not there. */
static char *corpus_file(const char *relative) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root != NULL ? g_strdup(root) : g_build_filename(WEFT_SOURCE_DIR, "..", "shared",
                                                                "corpus", NULL);
  char *path = g_build_filename(dir, relative, NULL);
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

static weft_graph_t *import_corpus(const char *name) {
  char *rel = g_strdup_printf("tf/graphdef/%s", name);
  char *path = corpus_file(rel);
  g_free(rel);
  if (path == NULL) return NULL;
  weft_graph_t *g = weft_graph_new();
  ASSERT_OK(weft_graph_import_graphdef_file(g, path, NULL));
  g_free(path);
  return g;
}

/* Runs one step and returns the single fetch (caller unrefs). */
static weft_tensor_t *run_one(weft_graph_t *g, const char *const *feed_names,
                              weft_tensor_t *const *feeds, int n_feeds, const char *fetch) {
  weft_status_t *st = NULL;
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_t *s = weft_session_new(g, opts, &st);
  weft_session_options_free(opts);
  ASSERT_OK(st);
  g_assert_nonnull(s);
  weft_tensor_t *out = NULL;
  ASSERT_OK(weft_session_run(s, feed_names, feeds, n_feeds, &fetch, &out, 1, NULL, 0));
  weft_session_free(s);
  g_assert_nonnull(out);
  return out;
}

/* The tensor a Const node of an imported graph holds (borrowed). */
static const weft_tensor_t *const_value(weft_graph_t *g, const char *name) {
  weft_node_t *n = weft_graph_node(g, name);
  g_assert_nonnull(n);
  g_assert_cmpstr(weft_node_op(n), ==, "Const");
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, "value");
  g_assert_nonnull(v);
  g_assert_cmpint(v->kind, ==, WEFT_ATTR_TENSOR);
  g_assert_cmpint(weft_tensor_dtype(v->u.tensor), ==, WEFT_DT_FLOAT);
  return v->u.tensor;
}

/* out = act(in [batch, n_in] x W [n_in, n_out] + b [n_out]) in double precision. */
enum { ACT_NONE, ACT_RELU, ACT_SIGMOID };
static double *dense_ref(const double *in, int batch, int n_in, const weft_tensor_t *w,
                         const weft_tensor_t *b, int act, int *n_out_ret) {
  g_assert_cmpint(weft_tensor_rank(w), ==, 2);
  g_assert_cmpint(weft_tensor_dims(w)[0], ==, n_in);
  int n_out = (int)weft_tensor_dims(w)[1];
  g_assert_cmpint(weft_tensor_num_elements(b), ==, n_out);
  const float *wd = weft_tensor_data(w);
  const float *bd = weft_tensor_data(b);
  double *out = g_new(double, (gsize)batch * n_out);
  for (int r = 0; r < batch; r++) {
    for (int j = 0; j < n_out; j++) {
      double acc = bd[j];
      for (int i = 0; i < n_in; i++) acc += in[r * n_in + i] * (double)wd[(size_t)i * n_out + j];
      if (act == ACT_RELU) acc = acc > 0 ? acc : 0;
      if (act == ACT_SIGMOID) acc = 1.0 / (1.0 + exp(-acc));
      out[r * n_out + j] = acc;
    }
  }
  *n_out_ret = n_out;
  return out;
}

static void assert_close(const weft_tensor_t *t, const double *want, int64_t n, double atol,
                         double rtol) {
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  for (int64_t i = 0; i < n; i++) {
    double have = weft_tensor_get_double(t, i);
    if (fabs(have - want[i]) > atol + rtol * fabs(want[i])) {
      g_test_message("element %" G_GINT64_FORMAT ": have %.9g want %.9g", i, have, want[i]);
      g_assert_cmpfloat_with_epsilon(have, want[i], atol + rtol * fabs(want[i]));
    }
  }
}

/* Deterministic inputs that exercise both signs. */
static void fill_inputs(double *x, float *xf, int64_t n, double scale) {
  for (int64_t i = 0; i < n; i++) {
    xf[i] = (float)(scale * sin(0.37 * (double)i + 0.1));
    x[i] = xf[i];
  }
}

/* --- GraphDefs built with the protobuf-c API (freed with free_unpacked: GLib's allocator is
 * malloc). --- */

static Tensorflow__NodeDef *nd_new(const char *name, const char *op, ...) {
  Tensorflow__NodeDef *nd = g_new(Tensorflow__NodeDef, 1);
  tensorflow__node_def__init(nd);
  nd->name = g_strdup(name);
  nd->op = g_strdup(op);
  va_list ap;
  va_start(ap, op);
  for (const char *in = va_arg(ap, const char *); in != NULL; in = va_arg(ap, const char *)) {
    nd->input = g_renew(char *, nd->input, nd->n_input + 1);
    nd->input[nd->n_input++] = g_strdup(in);
  }
  va_end(ap);
  return nd;
}

static Tensorflow__AttrValue *av_new(Tensorflow__AttrValue__ValueCase c) {
  Tensorflow__AttrValue *v = g_new(Tensorflow__AttrValue, 1);
  tensorflow__attr_value__init(v);
  v->value_case = c;
  return v;
}

static Tensorflow__AttrValue *av_type(int dtype) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_TYPE);
  v->type = (Tensorflow__DataType)dtype;
  return v;
}

static Tensorflow__TensorShapeProto *shape_proto(int rank, const int64_t *dims) {
  weft__shape_t s = {.rank = rank};
  for (int k = 0; k < rank; k++) s.dims[k] = dims[k];
  return weft__shape_to_proto(&s);
}

static Tensorflow__AttrValue *av_shape(int rank, const int64_t *dims) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_SHAPE);
  v->shape = shape_proto(rank, dims);
  return v;
}

static Tensorflow__TensorProto *tp_new(int dtype, int rank, const int64_t *dims) {
  Tensorflow__TensorProto *t = g_new(Tensorflow__TensorProto, 1);
  tensorflow__tensor_proto__init(t);
  t->dtype = (Tensorflow__DataType)dtype;
  t->tensor_shape = shape_proto(rank, dims);
  return t;
}

static Tensorflow__AttrValue *av_tensor(Tensorflow__TensorProto *t) {
  Tensorflow__AttrValue *v = av_new(TENSORFLOW__ATTR_VALUE__VALUE_TENSOR);
  v->tensor = t;
  return v;
}

static void nd_attr(Tensorflow__NodeDef *nd, const char *key, Tensorflow__AttrValue *v) {
  Tensorflow__AttrEntry *e = g_new(Tensorflow__AttrEntry, 1);
  tensorflow__attr_entry__init(e);
  e->key = g_strdup(key);
  e->value = v;
  nd->attr = g_renew(Tensorflow__AttrEntry *, nd->attr, nd->n_attr + 1);
  nd->attr[nd->n_attr++] = e;
}

static Tensorflow__NodeDef *nd_placeholder(const char *name, int dtype, int rank,
                                           const int64_t *dims) {
  Tensorflow__NodeDef *nd = nd_new(name, "Placeholder", NULL);
  nd_attr(nd, "dtype", av_type(dtype));
  nd_attr(nd, "shape", av_shape(rank, dims));
  return nd;
}

/* A float Const from values (typed float_val; n_vals may be fewer than the elements). */
static Tensorflow__NodeDef *nd_const_float(const char *name, int rank, const int64_t *dims,
                                           const float *vals, size_t n_vals) {
  Tensorflow__NodeDef *nd = nd_new(name, "Const", NULL);
  Tensorflow__TensorProto *t = tp_new(WEFT_DT_FLOAT, rank, dims);
  t->n_float_val = n_vals;
  t->float_val = n_vals ? g_memdup2(vals, n_vals * sizeof(float)) : NULL;
  nd_attr(nd, "dtype", av_type(WEFT_DT_FLOAT));
  nd_attr(nd, "value", av_tensor(t));
  return nd;
}

static Tensorflow__NodeDef *nd_binary(const char *name, const char *op, const char *x,
                                      const char *y, int dtype) {
  Tensorflow__NodeDef *nd = nd_new(name, op, x, y, NULL);
  nd_attr(nd, "T", av_type(dtype));
  return nd;
}

/* Packs the nodes (taking them) into GraphDef bytes; the caller g_free()s *len bytes. */
static uint8_t *gd_pack(size_t *len, Tensorflow__NodeDef **nodes, size_t n) {
  Tensorflow__GraphDef *gd = g_new(Tensorflow__GraphDef, 1);
  tensorflow__graph_def__init(gd);
  gd->n_node = n;
  gd->node = g_memdup2(nodes, n * sizeof(*nodes));
  *len = tensorflow__graph_def__get_packed_size(gd);
  uint8_t *buf = g_malloc(*len + 1);
  tensorflow__graph_def__pack(gd, buf);
  tensorflow__graph_def__free_unpacked(gd, NULL);
  return buf;
}

static weft_status_t *import_nodes(weft_graph_t *g, const char *prefix, Tensorflow__NodeDef **nodes,
                                   size_t n) {
  size_t len = 0;
  uint8_t *buf = gd_pack(&len, nodes, n);
  weft_status_t *st = weft_graph_import_graphdef(g, buf, len, prefix);
  g_free(buf);
  return st;
}

static char *write_temp(const void *data, size_t len) {
  char *path = NULL;
  int fd = g_file_open_tmp("weft-graphdef-XXXXXX.pb", &path, NULL);
  g_assert_cmpint(fd, >=, 0);
  close(fd);
  g_assert_true(g_file_set_contents(path, data, (gssize)len, NULL));
  return path;
}

/* ---------------------------------------------------------------------------------------------
 * The corpus */

static void test_corpus_multiplication(void) {
  weft_graph_t *g = import_corpus("multiplication.pb");
  if (g == NULL) return;
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 3);
  g_assert_cmpstr(weft_node_op(weft_graph_node(g, "c")), ==, "Mul");
  g_assert_cmpint(weft_node_output_dtype(weft_graph_node(g, "c"), 0), ==, WEFT_DT_FLOAT);
  const char *names[] = {"a", "b"};
  weft_tensor_t *feeds[] = {weft_tensor_new_scalar_float(2), weft_tensor_new_scalar_float(3)};
  weft_tensor_t *c = run_one(g, names, feeds, 2, "c");
  g_assert_cmpint(weft_tensor_dtype(c), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_rank(c), ==, 0);
  g_assert_cmpfloat(weft_tensor_get_double(c, 0), ==, 6.0);
  weft_tensor_unref(c);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  weft_graph_free(g);
}

static void test_corpus_addition_int32(void) {
  weft_graph_t *g = import_corpus("addition_int32.pb");
  if (g == NULL) return;
  g_assert_cmpstr(weft_node_op(weft_graph_node(g, "z")), ==, "AddV2");
  const char *names[] = {"x", "y"};
  weft_tensor_t *feeds[] = {weft_tensor_new_scalar_int32(40), weft_tensor_new_scalar_int32(-2)};
  weft_tensor_t *z = run_one(g, names, feeds, 2, "z");
  g_assert_cmpint(weft_tensor_dtype(z), ==, WEFT_DT_INT32);
  g_assert_cmpint(*(const int32_t *)weft_tensor_data(z), ==, 38);
  weft_tensor_unref(z);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  weft_graph_free(g);
}

static void test_corpus_regression(void) {
  weft_graph_t *g = import_corpus("regression_frozen.pb");
  if (g == NULL) return;
  /* The known answer: the Consts hold W and b as TensorFlow wrote them. */
  const weft_tensor_t *w = const_value(g, "W");
  const weft_tensor_t *b = const_value(g, "b");
  g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(w, 0), 0.21396178, 1e-7);
  g_assert_cmpfloat_with_epsilon(weft_tensor_get_double(b, 0), 1.04952538, 1e-7);
  /* W/read carries TensorFlow's colocation attr. */
  g_assert_cmpstr(weft_graph_node(g, "W/read")->colocation_group, ==, "W");

  int64_t dims[] = {4};
  float xs[] = {0.0f, 1.0f, -2.5f, 10.0f};
  weft_status_t *st = NULL;
  weft_tensor_t *x = weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, dims, xs, sizeof xs, &st);
  ASSERT_OK(st);
  const char *names[] = {"X"};
  weft_tensor_t *pred = run_one(g, names, &x, 1, "pred");
  double want[4];
  for (int i = 0; i < 4; i++) want[i] = xs[i] * 0.21396178 + 1.04952538;
  g_assert_cmpint(weft_tensor_rank(pred), ==, 1);
  assert_close(pred, want, 4, 1e-6, 1e-6);
  weft_tensor_unref(pred);
  weft_tensor_unref(x);
  weft_graph_free(g);
}

static void test_corpus_mlp(void) {
  weft_graph_t *g = import_corpus("mlp_5_5_1_frozen.pb");
  if (g == NULL) return;
  /* The final Identity keeps its four control inputs. */
  weft_node_t *id = weft_graph_node(g, "Identity");
  g_assert_nonnull(id);
  g_assert_cmpint(id->control_inputs->len, ==, 4);
  g_assert_cmpint(id->n_inputs, ==, 1);

  enum { BATCH = 3, N_IN = 5 };
  double x[BATCH * N_IN];
  float xf[BATCH * N_IN];
  fill_inputs(x, xf, BATCH * N_IN, 2.0);
  int n1 = 0, n2 = 0;
  double *h = dense_ref(x, BATCH, N_IN, const_value(g, "model/dense/MatMul/ReadVariableOp/resource"),
                        const_value(g, "model/dense/BiasAdd/ReadVariableOp/resource"), ACT_RELU,
                        &n1);
  double *y = dense_ref(h, BATCH, n1,
                        const_value(g, "model/dense_1/MatMul/ReadVariableOp/resource"),
                        const_value(g, "model/dense_1/BiasAdd/ReadVariableOp/resource"),
                        ACT_SIGMOID, &n2);
  g_assert_cmpint(n2, ==, 1);

  int64_t dims[] = {BATCH, N_IN};
  weft_status_t *st = NULL;
  weft_tensor_t *in = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, xf, sizeof xf, &st);
  ASSERT_OK(st);
  const char *names[] = {"x"};
  weft_tensor_t *out = run_one(g, names, &in, 1, "Identity");
  g_assert_cmpint(weft_tensor_rank(out), ==, 2);
  g_assert_cmpint(weft_tensor_dims(out)[0], ==, BATCH);
  g_assert_cmpint(weft_tensor_dims(out)[1], ==, 1);
  assert_close(out, y, BATCH, 1e-6, 1e-5);
  weft_tensor_unref(out);
  weft_tensor_unref(in);
  g_free(h);
  g_free(y);
  weft_graph_free(g);
}

static void test_corpus_fc_layers(void) {
  weft_graph_t *g = import_corpus("fc_layers_frozen.pb");
  if (g == NULL) return;
  enum { BATCH = 2, N_IN = 784 };
  double *x = g_new(double, BATCH * N_IN);
  float *xf = g_new(float, BATCH * N_IN);
  fill_inputs(x, xf, BATCH * N_IN, 1.0);
  int n1 = 0, n2 = 0, n3 = 0;
  double *h1 = dense_ref(x, BATCH, N_IN, const_value(g, "dense/kernel"),
                         const_value(g, "dense/bias"), ACT_RELU, &n1);
  double *h2 = dense_ref(h1, BATCH, n1, const_value(g, "dense_1/kernel"),
                         const_value(g, "dense_1/bias"), ACT_RELU, &n2);
  double *y = dense_ref(h2, BATCH, n2, const_value(g, "pred/kernel"), const_value(g, "pred/bias"),
                        ACT_NONE, &n3);
  g_assert_cmpint(n1, ==, 256);
  g_assert_cmpint(n3, ==, 10);

  int64_t dims[] = {BATCH, N_IN};
  weft_status_t *st = NULL;
  weft_tensor_t *in =
      weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, dims, xf, sizeof(float) * BATCH * N_IN, &st);
  ASSERT_OK(st);
  const char *names[] = {"X"};
  weft_tensor_t *out = run_one(g, names, &in, 1, "output");
  g_assert_cmpint(weft_tensor_dims(out)[0], ==, BATCH);
  g_assert_cmpint(weft_tensor_dims(out)[1], ==, 10);
  assert_close(out, y, BATCH * 10, 1e-4, 1e-4);
  weft_tensor_unref(out);
  weft_tensor_unref(in);
  g_free(x);
  g_free(xf);
  g_free(h1);
  g_free(h2);
  g_free(y);
  weft_graph_free(g);
}

/* Every corpus graph exports to bytes that import again into the same graph. */
static void test_corpus_round_trip(void) {
  const char *files[] = {"multiplication.pb", "addition_int32.pb", "regression_frozen.pb",
                         "mlp_5_5_1_frozen.pb", "fc_layers_frozen.pb"};
  for (size_t k = 0; k < G_N_ELEMENTS(files); k++) {
    weft_graph_t *g = import_corpus(files[k]);
    if (g == NULL) return;
    void *bytes1 = NULL, *bytes2 = NULL;
    size_t len1 = 0, len2 = 0;
    ASSERT_OK(weft_graph_export_graphdef(g, &bytes1, &len1));
    weft_graph_t *g2 = weft_graph_new();
    ASSERT_OK(weft_graph_import_graphdef(g2, bytes1, len1, NULL));
    ASSERT_OK(weft_graph_export_graphdef(g2, &bytes2, &len2));
    g_assert_cmpint(weft_graph_num_nodes(g2), ==, weft_graph_num_nodes(g));
    for (int i = 0; i < weft_graph_num_nodes(g); i++) {
      weft_node_t *a = weft_graph_node_at(g, i), *b = weft_graph_node_at(g2, i);
      g_assert_cmpstr(weft_node_name(a), ==, weft_node_name(b));
      g_assert_cmpstr(weft_node_op(a), ==, weft_node_op(b));
      g_assert_cmpint(a->n_inputs, ==, b->n_inputs);
      g_assert_cmpint(a->control_inputs->len, ==, b->control_inputs->len);
    }
    g_assert_cmpmem(bytes1, len1, bytes2, len2);
    free(bytes1);
    free(bytes2);
    weft_graph_free(g2);
    weft_graph_free(g);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Corrupt and invalid GraphDefs */

static void test_truncated_file(void) {
  char *src = corpus_file("tf/graphdef/fc_layers_frozen.pb");
  if (src == NULL) return;
  gchar *contents = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(src, &contents, &len, NULL));
  char *path = write_temp(contents, 1000);
  weft_graph_t *g = weft_graph_new();
  assert_status(weft_graph_import_graphdef_file(g, path, NULL), WEFT_INVALID_ARGUMENT,
                "could not parse GraphDef (1000 bytes)", path, NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  /* The bytes variant says the same without a file name. */
  assert_status(weft_graph_import_graphdef(g, contents, len / 2, NULL), WEFT_INVALID_ARGUMENT,
                "could not parse GraphDef (", NULL);
  weft_graph_free(g);
  g_unlink(path);
  g_free(path);
  g_free(contents);
  g_free(src);
}

static void test_random_bytes(void) {
  /* Field 31 with wire type 7 does not exist in protobuf: no decoder can accept this. */
  uint8_t junk[64];
  memset(junk, 0xff, sizeof junk);
  char *path = write_temp(junk, sizeof junk);
  weft_graph_t *g = weft_graph_new();
  assert_status(weft_graph_import_graphdef_file(g, path, NULL), WEFT_INVALID_ARGUMENT,
                "could not parse GraphDef (64 bytes)", path, NULL);
  /* Seeded pseudo-random bytes, for good measure. */
  GRand *r = g_rand_new_with_seed(1234);
  uint8_t noise[4096];
  for (size_t k = 0; k < sizeof noise; k++) noise[k] = (uint8_t)g_rand_int_range(r, 0, 256);
  g_rand_free(r);
  assert_status(weft_graph_import_graphdef(g, noise, sizeof noise, NULL), WEFT_INVALID_ARGUMENT,
                "could not parse GraphDef (4096 bytes)", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  weft_graph_free(g);
  g_unlink(path);
  g_free(path);
}

static void test_missing_file(void) {
  weft_graph_t *g = weft_graph_new();
  assert_status(weft_graph_import_graphdef_file(g, "/nonexistent/dir/model.pb", NULL),
                WEFT_NOT_FOUND, "/nonexistent/dir/model.pb", NULL);
  weft_graph_free(g);
}

/* protobuf-c would hand "a\0b" over as "a": a node name (or any string field) holding a NUL byte
 * is refused before unpacking, naming the field, from bytes and from a file alike. */
static void test_nul_in_name(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *nodes[] = {nd_placeholder("aXb", WEFT_DT_FLOAT, 0, NULL)};
  size_t len = 0;
  uint8_t *buf = gd_pack(&len, nodes, 1);
  uint8_t *x = memchr(buf, 'X', len);
  g_assert_nonnull(x);
  *x = 0;
  /* The name field starts at its tag, two bytes (tag, length) before the 'a'. */
  char *expected = g_strdup_printf("GraphDef: string field 'node.name' holds a NUL byte (field at "
                                   "byte %zu)", (size_t)(x - buf) - 3);
  assert_status(weft_graph_import_graphdef(g, buf, len, NULL), WEFT_INVALID_ARGUMENT, expected,
                NULL);
  char *path = write_temp(buf, len);
  assert_status(weft_graph_import_graphdef_file(g, path, NULL), WEFT_INVALID_ARGUMENT,
                "string field 'node.name' holds a NUL byte", path, NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  g_unlink(path);
  g_free(path);
  g_free(expected);
  g_free(buf);
  weft_graph_free(g);
}

/* TensorFlow's node name pattern: [A-Za-z0-9._][A-Za-z0-9_.\-/]*, '>' starting another part. */
static void test_node_name_pattern(void) {
  static const char *const good[] = {"a", "A9", ".x", "_internal", "scope/x-1_2.b", "a>b", "9"};
  static const char *const bad[] = {"a b", "-a", "/a", "a:0", "^a", "a>_b", "a>", "a\tb", "a$"};
  for (size_t k = 0; k < G_N_ELEMENTS(good); k++) {
    weft_graph_t *g = weft_graph_new();
    Tensorflow__NodeDef *nodes[] = {nd_placeholder(good[k], WEFT_DT_FLOAT, 0, NULL)};
    ASSERT_OK(import_nodes(g, NULL, nodes, 1));
    weft_graph_free(g);
  }
  for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
    weft_graph_t *g = weft_graph_new();
    Tensorflow__NodeDef *nodes[] = {nd_placeholder("ok", WEFT_DT_FLOAT, 0, NULL),
                                    nd_placeholder(bad[k], WEFT_DT_FLOAT, 0, NULL)};
    char *expected = g_strdup_printf("Node '%s': Node name contains invalid characters (GraphDef "
                                     "node #1)", bad[k]);
    weft_status_t *st = import_nodes(g, NULL, nodes, 2);
    g_assert_nonnull(st);
    g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==,
                    weft_code_name(WEFT_INVALID_ARGUMENT));
    g_assert_cmpstr(weft_status_message(st), ==, expected);
    weft_status_free(st);
    g_free(expected);
    g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
    weft_graph_free(g);
  }
}

static void test_unknown_op(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *nodes[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                  nd_new("weird", "NoSuchOpAnywhere", "a", NULL)};
  assert_status(import_nodes(g, NULL, nodes, 2), WEFT_NOT_FOUND,
                "Op type not registered 'NoSuchOpAnywhere'", "'weird'", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  weft_graph_free(g);
}

/* Every missing op type is named at once, each with its first node, in graph order; one missing
 * op type keeps TensorFlow's exact sentence. */
static void test_unknown_ops_all_named(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *one[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                nd_new("w1", "NoSuchOpOne", "a", NULL),
                                nd_new("w2", "NoSuchOpOne", "w1", NULL)};
  weft_status_t *st = import_nodes(g, NULL, one, 3);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Op type not registered 'NoSuchOpOne' in binary (node 'w1')");
  weft_status_free(st);
  Tensorflow__NodeDef *two[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                nd_new("w1", "NoSuchOpOne", "a", NULL),
                                nd_new("w2", "NoSuchOpTwo", "w1", NULL),
                                nd_new("w3", "NoSuchOpOne", "w2", NULL),
                                nd_new("w4", "NoSuchOpThree", "w3", NULL)};
  st = import_nodes(g, NULL, two, 5);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(WEFT_NOT_FOUND));
  g_assert_cmpstr(weft_status_message(st), ==,
                  "Op type not registered 'NoSuchOpOne' in binary (node 'w1'); also not "
                  "registered: 'NoSuchOpTwo' (node 'w2'), 'NoSuchOpThree' (node 'w4')");
  weft_status_free(st);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  /* Past the cap the rest are counted, not named. */
  enum { N = 40 };
  Tensorflow__NodeDef *many[N];
  char op[32], name[32];
  for (int i = 0; i < N; i++) {
    g_snprintf(op, sizeof op, "NoSuchOp%d", i);
    g_snprintf(name, sizeof name, "m%d", i);
    many[i] = nd_new(name, op, NULL);
  }
  st = import_nodes(g, NULL, many, N);
  g_assert_nonnull(st);
  g_assert_nonnull(strstr(weft_status_message(st), "'NoSuchOp16' (node 'm16') and 23 more"));
  g_assert_null(strstr(weft_status_message(st), "NoSuchOp17"));
  weft_status_free(st);
  weft_graph_free(g);
}

static void test_missing_input(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *nodes[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                  nd_binary("sum", "AddV2", "a", "ghost", WEFT_DT_FLOAT)};
  assert_status(import_nodes(g, NULL, nodes, 2), WEFT_INVALID_ARGUMENT, "'sum'", "'ghost'", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  /* A control input naming nobody is as wrong. */
  Tensorflow__NodeDef *nodes2[] = {nd_new("n", "NoOp", "^phantom", NULL)};
  assert_status(import_nodes(g, NULL, nodes2, 1), WEFT_INVALID_ARGUMENT, "'n'", "phantom", NULL);
  /* Malformed input strings. */
  Tensorflow__NodeDef *nodes3[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                   nd_new("i", "Identity", "a:x", NULL)};
  assert_status(import_nodes(g, NULL, nodes3, 2), WEFT_INVALID_ARGUMENT,
                "Node 'i' (Identity) has a malformed input 'a:x'", NULL);
  /* An output index the producer does not have. */
  Tensorflow__NodeDef *nodes4[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                   nd_new("i", "Identity", "a:3", NULL)};
  nd_attr(nodes4[1], "T", av_type(WEFT_DT_FLOAT));
  assert_status(import_nodes(g, NULL, nodes4, 2), WEFT_INVALID_ARGUMENT, "'i'", "a:3", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  weft_graph_free(g);
}

static void test_content_size_mismatch(void) {
  weft_graph_t *g = weft_graph_new();
  int64_t dims[] = {2, 2};
  Tensorflow__NodeDef *nd = nd_new("weights", "Const", NULL);
  Tensorflow__TensorProto *t = tp_new(WEFT_DT_FLOAT, 2, dims);
  t->tensor_content.len = 12; /* 3 floats for 4 elements */
  t->tensor_content.data = g_malloc0(12);
  nd_attr(nd, "dtype", av_type(WEFT_DT_FLOAT));
  nd_attr(nd, "value", av_tensor(t));
  Tensorflow__NodeDef *nodes[] = {nd};
  assert_status(import_nodes(g, NULL, nodes, 1), WEFT_INVALID_ARGUMENT, "'weights'",
                "12 bytes of tensor_content", "float32[2,2]", "16", NULL);
  /* More typed values than elements is as wrong. */
  float vals[] = {1, 2, 3, 4, 5};
  Tensorflow__NodeDef *nodes2[] = {nd_const_float("five", 2, dims, vals, 5)};
  assert_status(import_nodes(g, NULL, nodes2, 1), WEFT_INVALID_ARGUMENT, "'five'",
                "5 values for 4 elements", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  weft_graph_free(g);
}

/* A Const whose "dtype" attr disagrees with the tensor in its "value" attr is refused at import
 * (and when built through the C API), naming the node and both dtypes, not left to fail at run
 * time. The GraphDef is written byte by byte: dtype DT_FLOAT, value an int32 scalar 7. */
static void test_const_dtype_mismatch(void) {
  static const uint8_t bytes[] = {
      0x0a, 0x2b,                                     /* GraphDef.node, 43 bytes */
      0x0a, 0x01, 'c',                                /* NodeDef.name "c" */
      0x12, 0x05, 'C', 'o', 'n', 's', 't',            /* NodeDef.op "Const" */
      0x2a, 0x0b,                                     /* NodeDef.attr entry, 11 bytes */
      0x0a, 0x05, 'd', 't', 'y', 'p', 'e',            /*   key "dtype" */
      0x12, 0x02, 0x30, 0x01,                         /*   AttrValue.type DT_FLOAT */
      0x2a, 0x12,                                     /* NodeDef.attr entry, 18 bytes */
      0x0a, 0x05, 'v', 'a', 'l', 'u', 'e',            /*   key "value" */
      0x12, 0x09, 0x42, 0x07,                         /*   AttrValue.tensor, 7 bytes: */
      0x08, 0x03, 0x12, 0x00, 0x3a, 0x01, 0x07,       /*   DT_INT32, shape [], int_val 7 */
  };
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = weft_graph_import_graphdef(g, bytes, sizeof bytes, NULL);
  g_assert_nonnull(st);
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, "INVALID_ARGUMENT");
  g_assert_cmpstr(weft_status_message(st), ==,
                  "node 'c': Const's attr 'dtype' is float32, but its attr 'value' holds a tensor "
                  "of int32");
  weft_status_free(st);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  /* The same bytes with dtype DT_INT32 import. */
  uint8_t fixed[sizeof bytes];
  memcpy(fixed, bytes, sizeof bytes);
  fixed[24] = 0x03;
  g_assert_null(weft_graph_import_graphdef(g, fixed, sizeof fixed, NULL));
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 1);
  /* Through the C API: an op builder given both attrs. */
  weft_tensor_t *seven = weft_tensor_new_scalar_int32(7);
  weft_op_builder_t *b = weft_op_new(g, "Const", "d");
  weft_op_set_attr_tensor(b, "value", seven);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_DOUBLE);
  weft_node_t *node = NULL;
  st = weft_op_finish(b, &node);
  g_assert_nonnull(st);
  g_assert_null(node);
  g_assert_cmpstr(weft_status_message(st), ==,
                  "node 'd': Const's attr 'dtype' is float64, but its attr 'value' holds a tensor "
                  "of int32");
  weft_status_free(st);
  weft_tensor_unref(seven);
  weft_graph_free(g);
}

static void test_cycle(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *nodes[] = {nd_placeholder("p", WEFT_DT_FLOAT, 0, NULL),
                                  nd_binary("loop_a", "AddV2", "p", "loop_b", WEFT_DT_FLOAT),
                                  nd_new("loop_b", "Identity", "loop_a", NULL)};
  nd_attr(nodes[2], "T", av_type(WEFT_DT_FLOAT));
  assert_status(import_nodes(g, NULL, nodes, 3), WEFT_INVALID_ARGUMENT, "cycle", "'loop_a'",
                "'loop_b'", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 0);
  weft_graph_free(g);
}

static void test_duplicate_and_existing_names(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *dup[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL),
                                nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL)};
  assert_status(import_nodes(g, NULL, dup, 2), WEFT_INVALID_ARGUMENT, "more than one node named 'a'",
                NULL);
  Tensorflow__NodeDef *one[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL)};
  ASSERT_OK(import_nodes(g, NULL, one, 1));
  Tensorflow__NodeDef *again[] = {nd_placeholder("a", WEFT_DT_FLOAT, 0, NULL)};
  assert_status(import_nodes(g, NULL, again, 1), WEFT_ALREADY_EXISTS, "'a'", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 1);
  weft_graph_free(g);
}

/* A node that fails only when it is added (a dtype clash found by the graph) undoes the nodes
 * of the same import that went in before it. */
static void test_failure_adds_nothing(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_placeholder(g, "existing", WEFT_DT_FLOAT, 0, NULL, &st);
  ASSERT_OK(st);
  Tensorflow__NodeDef *nodes[] = {
      nd_placeholder("f", WEFT_DT_FLOAT, 0, NULL), nd_placeholder("i", WEFT_DT_INT32, 0, NULL),
      nd_binary("ok", "AddV2", "f", "existing", WEFT_DT_FLOAT),
      nd_binary("bad", "AddV2", "ok", "i", WEFT_DT_FLOAT)};
  st = import_nodes(g, NULL, nodes, 4);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "'bad'"));
  weft_status_free(st);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 1);
  g_assert_null(weft_graph_node(g, "f"));
  g_assert_null(weft_graph_node(g, "ok"));
  /* The names are free again. */
  Tensorflow__NodeDef *good[] = {nd_placeholder("f", WEFT_DT_FLOAT, 0, NULL),
                                 nd_binary("ok", "AddV2", "f", "existing", WEFT_DT_FLOAT)};
  ASSERT_OK(import_nodes(g, NULL, good, 2));
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 3);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * Hand-built GraphDefs */

/* Nodes listed consumers first still import (TensorFlow does not sort GraphDefs) and run. */
static void test_any_order(void) {
  weft_graph_t *g = weft_graph_new();
  float two = 2.0f;
  Tensorflow__NodeDef *nodes[] = {
      nd_binary("out", "Mul", "sum", "k", WEFT_DT_FLOAT),
      nd_binary("sum", "AddV2", "x", "k", WEFT_DT_FLOAT),
      nd_const_float("k", 0, NULL, &two, 1),
      nd_placeholder("x", WEFT_DT_FLOAT, 0, NULL),
      nd_new("after", "NoOp", "^out", "^x", NULL),
  };
  ASSERT_OK(import_nodes(g, NULL, nodes, G_N_ELEMENTS(nodes)));
  g_assert_cmpint(weft_graph_num_nodes(g), ==, 5);
  /* Producers come first in creation order. */
  weft_node_t *out = weft_graph_node(g, "out"), *sum = weft_graph_node(g, "sum");
  g_assert_cmpint(sum->id, <, out->id);
  g_assert_true(out->inputs[0].src == sum);
  g_assert_cmpint(weft_graph_node(g, "after")->control_inputs->len, ==, 2);
  const char *names[] = {"x"};
  weft_tensor_t *x = weft_tensor_new_scalar_float(5);
  weft_tensor_t *r = run_one(g, names, &x, 1, "out");
  g_assert_cmpfloat(weft_tensor_get_double(r, 0), ==, 14.0);
  weft_tensor_unref(r);
  weft_tensor_unref(x);
  weft_graph_free(g);
}

/* Output indices ("n:1") and a prefix that renames nodes, inputs and colocation. */
static void test_prefix_and_indices(void) {
  weft_graph_t *g = weft_graph_new();
  float one = 1.0f, ten = 10.0f;
  Tensorflow__NodeDef *idn = nd_new("pair", "IdentityN", "a", "b", NULL);
  Tensorflow__AttrValue *types = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  types->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(types->list);
  types->list->n_type = 2;
  types->list->type = g_new(Tensorflow__DataType, 2);
  types->list->type[0] = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  types->list->type[1] = TENSORFLOW__DATA_TYPE__DT_FLOAT;
  nd_attr(idn, "T", types);
  Tensorflow__NodeDef *sub = nd_binary("diff", "Sub", "pair:1", "pair:0", WEFT_DT_FLOAT);
  Tensorflow__AttrValue *cls = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  cls->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(cls->list);
  cls->list->n_s = 1;
  cls->list->s = g_new(ProtobufCBinaryData, 1);
  cls->list->s[0].data = (uint8_t *)g_strdup("loc:@a");
  cls->list->s[0].len = 6;
  nd_attr(sub, "_class", cls);
  Tensorflow__NodeDef *nodes[] = {nd_const_float("a", 0, NULL, &one, 1),
                                  nd_const_float("b", 0, NULL, &ten, 1), idn, sub};
  ASSERT_OK(import_nodes(g, "imported", nodes, G_N_ELEMENTS(nodes)));
  g_assert_null(weft_graph_node(g, "a"));
  weft_node_t *diff = weft_graph_node(g, "imported/diff");
  g_assert_nonnull(diff);
  g_assert_cmpstr(weft_node_name(diff->inputs[0].src), ==, "imported/pair");
  g_assert_cmpint(diff->inputs[0].src_index, ==, 1);
  g_assert_cmpint(diff->inputs[1].src_index, ==, 0);
  g_assert_cmpstr(diff->colocation_group, ==, "imported/a");
  weft_tensor_t *r = run_one(g, NULL, NULL, 0, "imported/diff");
  g_assert_cmpfloat(weft_tensor_get_double(r, 0), ==, 9.0);
  weft_tensor_unref(r);

  /* A second import under another prefix coexists, and may feed from nodes already there. */
  Tensorflow__NodeDef *more[] = {nd_binary("twice", "AddV2", "imported/diff", "imported/diff",
                                           WEFT_DT_FLOAT)};
  ASSERT_OK(import_nodes(g, NULL, more, 1));
  r = run_one(g, NULL, NULL, 0, "twice");
  g_assert_cmpfloat(weft_tensor_get_double(r, 0), ==, 18.0);
  weft_tensor_unref(r);
  weft_graph_free(g);
}

/* Attribute kinds: scalars, lists, shapes, and empty lists typed by the op definition. */
static void test_attr_kinds(void) {
  weft_graph_t *g = weft_graph_new();
  Tensorflow__NodeDef *ph = nd_placeholder("p", WEFT_DT_FLOAT, -1, NULL);
  Tensorflow__AttrValue *ints = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  ints->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(ints->list);
  ints->list->n_i = 3;
  ints->list->i = g_new(int64_t, 3);
  ints->list->i[0] = 1, ints->list->i[1] = -2, ints->list->i[2] = 1LL << 40;
  nd_attr(ph, "_ints", ints);
  Tensorflow__AttrValue *empty = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  empty->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(empty->list);
  nd_attr(ph, "_empty", empty);
  Tensorflow__AttrValue *f = av_new(TENSORFLOW__ATTR_VALUE__VALUE_F);
  f->f = 0.25f;
  nd_attr(ph, "_f", f);
  Tensorflow__AttrValue *s = av_new(TENSORFLOW__ATTR_VALUE__VALUE_S);
  s->s.data = (uint8_t *)g_strdup("hello");
  s->s.len = 5;
  nd_attr(ph, "_s", s);
  Tensorflow__NodeDef *nodes[] = {ph};
  ASSERT_OK(import_nodes(g, NULL, nodes, 1));
  weft_node_t *n = weft_graph_node(g, "p");
  const weft__attr_value_t *v = weft__attrs_get(n->attrs, "_ints");
  g_assert_cmpint(v->kind, ==, WEFT_ATTR_LIST_INT);
  g_assert_cmpint(v->u.list.n, ==, 3);
  g_assert_cmpint(v->u.list.i[2], ==, 1LL << 40);
  g_assert_cmpint(weft__attrs_get(n->attrs, "_empty")->kind, ==, WEFT_ATTR_LIST_EMPTY);
  g_assert_cmpfloat(weft__attrs_get(n->attrs, "_f")->u.f, ==, 0.25f);
  g_assert_cmpstr(weft__attrs_get(n->attrs, "_s")->u.s.data, ==, "hello");
  v = weft__attrs_get(n->attrs, "shape");
  g_assert_cmpint(v->kind, ==, WEFT_ATTR_SHAPE);
  g_assert_cmpint(v->u.shape.rank, ==, -1);

  /* An empty list of an attr the op declares takes the declared kind. */
  Tensorflow__NodeDef *idn = nd_new("none", "IdentityN", NULL);
  Tensorflow__AttrValue *t = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  t->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(t->list);
  nd_attr(idn, "T", t);
  Tensorflow__NodeDef *nodes2[] = {idn};
  weft_status_t *st = import_nodes(g, NULL, nodes2, 1);
  if (st != NULL) {
    /* TensorFlow's IdentityN wants at least one type (T: list(type) >= 1): the refusal must be
     * about the length of T, which proves it was read as a list(type). */
    assert_status(st, WEFT_INVALID_ARGUMENT, "'none'", "'T'", NULL);
  } else {
    g_assert_cmpint(weft__attrs_get(weft_graph_node(g, "none")->attrs, "T")->kind, ==,
                    WEFT_ATTR_LIST_TYPE);
    g_assert_cmpint(weft_node_num_outputs(weft_graph_node(g, "none")), ==, 0);
  }
  int n_before = weft_graph_num_nodes(g);

  /* A list mixing kinds is refused, naming node and attr. */
  Tensorflow__NodeDef *bad = nd_placeholder("q", WEFT_DT_FLOAT, 0, NULL);
  Tensorflow__AttrValue *mixed = av_new(TENSORFLOW__ATTR_VALUE__VALUE_LIST);
  mixed->list = g_new(Tensorflow__AttrValue__ListValue, 1);
  tensorflow__attr_value__list_value__init(mixed->list);
  mixed->list->n_i = 1;
  mixed->list->i = g_new0(int64_t, 1);
  mixed->list->n_f = 1;
  mixed->list->f = g_new0(float, 1);
  nd_attr(bad, "_mixed", mixed);
  Tensorflow__NodeDef *nodes3[] = {bad};
  assert_status(import_nodes(g, NULL, nodes3, 1), WEFT_INVALID_ARGUMENT, "'q'", "'_mixed'",
                "more than one type", NULL);
  g_assert_cmpint(weft_graph_num_nodes(g), ==, n_before);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * TensorProto conversions */

static weft_tensor_t *from_proto_ok(Tensorflow__TensorProto *p) {
  weft_tensor_t *t = NULL;
  ASSERT_OK(weft__tensor_from_proto(p, &t));
  g_assert_nonnull(t);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
  return t;
}

static void test_tensor_proto_splat(void) {
  int64_t dims[] = {2, 3};
  /* Fewer values than elements: the last one repeats. */
  Tensorflow__TensorProto *p = tp_new(WEFT_DT_FLOAT, 2, dims);
  p->n_float_val = 2;
  p->float_val = g_new(float, 2);
  p->float_val[0] = 1.5f;
  p->float_val[1] = -4.0f;
  weft_tensor_t *t = from_proto_ok(p);
  const float want[] = {1.5f, -4, -4, -4, -4, -4};
  g_assert_cmpmem(weft_tensor_data(t), weft_tensor_nbytes(t), want, sizeof want);
  weft_tensor_unref(t);
  /* No values: zeros. */
  t = from_proto_ok(tp_new(WEFT_DT_INT64, 2, dims));
  const int64_t zeros[6] = {0};
  g_assert_cmpmem(weft_tensor_data(t), weft_tensor_nbytes(t), zeros, sizeof zeros);
  weft_tensor_unref(t);
  /* int_val carries int8/int16/uint8 too. */
  p = tp_new(WEFT_DT_INT8, 1, dims);
  p->n_int_val = 2;
  p->int_val = g_new(int32_t, 2);
  p->int_val[0] = -7;
  p->int_val[1] = 100;
  t = from_proto_ok(p);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, 2);
  g_assert_cmpint(((int8_t *)weft_tensor_data(t))[0], ==, -7);
  g_assert_cmpint(((int8_t *)weft_tensor_data(t))[1], ==, 100);
  weft_tensor_unref(t);
  /* half and bfloat16 arrive as int bits in half_val. */
  p = tp_new(WEFT_DT_HALF, 1, dims);
  p->n_half_val = 1;
  p->half_val = g_new(int32_t, 1);
  p->half_val[0] = 0x3C00; /* 1.0 */
  t = from_proto_ok(p);
  g_assert_cmpint(((uint16_t *)weft_tensor_data(t))[1], ==, 0x3C00);
  weft_tensor_unref(t);
  p = tp_new(WEFT_DT_BFLOAT16, 0, NULL);
  p->n_half_val = 1;
  p->half_val = g_new(int32_t, 1);
  p->half_val[0] = 0xC040; /* -3.0 */
  t = from_proto_ok(p);
  g_assert_cmpint(*(uint16_t *)weft_tensor_data(t), ==, 0xC040);
  weft_tensor_unref(t);
  /* bool_val, int64_val, uint32/uint64, double. */
  p = tp_new(WEFT_DT_BOOL, 1, (int64_t[]){3});
  p->n_bool_val = 2;
  p->bool_val = g_new(protobuf_c_boolean, 2);
  p->bool_val[0] = 1;
  p->bool_val[1] = 0;
  t = from_proto_ok(p);
  g_assert_cmpmem(weft_tensor_data(t), 3, "\1\0\0", 3);
  weft_tensor_unref(t);
  p = tp_new(WEFT_DT_INT64, 0, NULL);
  p->n_int64_val = 1;
  p->int64_val = g_new(int64_t, 1);
  p->int64_val[0] = -(1LL << 50);
  t = from_proto_ok(p);
  g_assert_cmpint(*(int64_t *)weft_tensor_data(t), ==, -(1LL << 50));
  weft_tensor_unref(t);
  p = tp_new(WEFT_DT_UINT64, 0, NULL);
  p->n_uint64_val = 1;
  p->uint64_val = g_new(uint64_t, 1);
  p->uint64_val[0] = G_MAXUINT64;
  t = from_proto_ok(p);
  g_assert_true(*(uint64_t *)weft_tensor_data(t) == G_MAXUINT64);
  weft_tensor_unref(t);
  p = tp_new(WEFT_DT_DOUBLE, 0, NULL);
  p->n_double_val = 1;
  p->double_val = g_new(double, 1);
  p->double_val[0] = 1.0 / 3.0;
  t = from_proto_ok(p);
  g_assert_cmpfloat(*(double *)weft_tensor_data(t), ==, 1.0 / 3.0);
  weft_tensor_unref(t);
  /* Strings (with a NUL inside), splatted. */
  p = tp_new(WEFT_DT_STRING, 1, (int64_t[]){3});
  p->n_string_val = 2;
  p->string_val = g_new(ProtobufCBinaryData, 2);
  p->string_val[0].data = (uint8_t *)g_strdup("ab");
  p->string_val[0].len = 2;
  p->string_val[1].data = g_memdup2("x\0y", 3);
  p->string_val[1].len = 3;
  t = from_proto_ok(p);
  const weft_string_t *s = weft_tensor_data(t);
  g_assert_cmpmem(s[0].data, s[0].len, "ab", 2);
  g_assert_cmpmem(s[1].data, s[1].len, "x\0y", 3);
  g_assert_cmpmem(s[2].data, s[2].len, "x\0y", 3);
  weft_tensor_unref(t);
  /* tensor_content: raw little-endian bytes. */
  p = tp_new(WEFT_DT_INT32, 1, (int64_t[]){2});
  const uint8_t le[] = {1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff};
  p->tensor_content.data = g_memdup2(le, sizeof le);
  p->tensor_content.len = sizeof le;
  t = from_proto_ok(p);
  g_assert_cmpint(((int32_t *)weft_tensor_data(t))[0], ==, 1);
  g_assert_cmpint(((int32_t *)weft_tensor_data(t))[1], ==, -2);
  weft_tensor_unref(t);
}

static void test_tensor_proto_errors(void) {
  weft_tensor_t *t = NULL;
  Tensorflow__TensorProto *p = tp_new(TENSORFLOW__DATA_TYPE__DT_COMPLEX64, 0, NULL);
  assert_status(weft__tensor_from_proto(p, &t), WEFT_INVALID_ARGUMENT, "DT_COMPLEX64", NULL);
  g_assert_null(t);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
  p = tp_new(WEFT_DT_FLOAT, 2, (int64_t[]){-1, 3});
  assert_status(weft__tensor_from_proto(p, &t), WEFT_INVALID_ARGUMENT, "[?,3]",
                "not fully defined", NULL);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
  /* A splat asking for an absurd size is refused before anything is allocated. */
  p = tp_new(WEFT_DT_FLOAT, 2, (int64_t[]){1LL << 40, 1LL << 20});
  assert_status(weft__tensor_from_proto(p, &t), WEFT_INVALID_ARGUMENT, "too large", NULL);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
  p = tp_new(WEFT_DT_STRING, 0, NULL);
  p->tensor_content.data = g_malloc0(4);
  p->tensor_content.len = 4;
  assert_status(weft__tensor_from_proto(p, &t), WEFT_INVALID_ARGUMENT, "string_val", NULL);
  tensorflow__tensor_proto__free_unpacked(p, NULL);
}

static void test_tensor_proto_round_trip(void) {
  const weft_dtype_t dtypes[] = {WEFT_DT_FLOAT, WEFT_DT_DOUBLE, WEFT_DT_INT32, WEFT_DT_UINT8,
                                 WEFT_DT_INT16, WEFT_DT_INT8,   WEFT_DT_INT64, WEFT_DT_BOOL,
                                 WEFT_DT_BFLOAT16, WEFT_DT_UINT16, WEFT_DT_HALF, WEFT_DT_UINT32,
                                 WEFT_DT_UINT64};
  int64_t dims[] = {2, 3};
  for (size_t k = 0; k < G_N_ELEMENTS(dtypes); k++) {
    weft_tensor_t *t = weft_tensor_new(dtypes[k], 2, dims);
    uint8_t *d = weft_tensor_data(t);
    for (size_t i = 0; i < weft_tensor_nbytes(t); i++) d[i] = (uint8_t)(i * 37 + k);
    if (dtypes[k] == WEFT_DT_BOOL)
      for (size_t i = 0; i < weft_tensor_nbytes(t); i++) d[i] &= 1;
    Tensorflow__TensorProto *p = NULL;
    ASSERT_OK(weft__tensor_to_proto(t, &p));
    /* Through the wire and back. */
    size_t len = tensorflow__tensor_proto__get_packed_size(p);
    uint8_t *buf = g_malloc(len);
    tensorflow__tensor_proto__pack(p, buf);
    tensorflow__tensor_proto__free_unpacked(p, NULL);
    p = tensorflow__tensor_proto__unpack(NULL, len, buf);
    g_free(buf);
    g_assert_nonnull(p);
    weft_tensor_t *back = from_proto_ok(p);
    g_assert_cmpint(weft_tensor_dtype(back), ==, dtypes[k]);
    g_assert_cmpint(weft_tensor_rank(back), ==, 2);
    g_assert_cmpint(weft_tensor_dims(back)[1], ==, 3);
    g_assert_cmpmem(weft_tensor_data(back), weft_tensor_nbytes(back), weft_tensor_data(t),
                    weft_tensor_nbytes(t));
    weft_tensor_unref(back);
    weft_tensor_unref(t);
  }
  /* Strings, including an empty one. */
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_STRING, 1, (int64_t[]){2});
  ASSERT_OK(weft_tensor_set_string(t, 0, "", 0));
  ASSERT_OK(weft_tensor_set_string(t, 1, "bytes\0!", 7));
  Tensorflow__TensorProto *p = NULL;
  ASSERT_OK(weft__tensor_to_proto(t, &p));
  g_assert_cmpint(p->n_string_val, ==, 2);
  weft_tensor_t *back = from_proto_ok(p);
  const weft_string_t *s = weft_tensor_data(back);
  g_assert_cmpint(s[0].len, ==, 0);
  g_assert_cmpmem(s[1].data, s[1].len, "bytes\0!", 7);
  weft_tensor_unref(back);
  weft_tensor_unref(t);
}

/* ---------------------------------------------------------------------------------------------
 * Export */

/* A graph built with the client API, with devices, control inputs, colocation and attrs of every
 * kind, exports to bytes that import into the same graph, which exports to the same bytes. */
static void test_export_round_trip(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t xdims[] = {WEFT_DIM_UNKNOWN, 2};
  weft_output_t x = weft_placeholder(g, "x", WEFT_DT_FLOAT, 2, xdims, &st);
  ASSERT_OK(st);
  float wv[] = {1, 2, 3, 4};
  weft_tensor_t *wt = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, (int64_t[]){2, 2}, wv,
                                                sizeof wv, &st);
  ASSERT_OK(st);
  weft_graph_push_device(g, "/job:localhost/device:CPU:0");
  weft_output_t w = weft_const(g, "w", wt, &st);
  ASSERT_OK(st);
  weft_graph_pop_device(g);
  weft_tensor_unref(wt);
  weft_output_t y = weft_matmul(g, "y", x, w, false, true, &st);
  ASSERT_OK(st);
  weft_graph_push_control_deps(g, &w.node, 1);
  weft_graph_push_colocate(g, w.node);
  weft_output_t z = weft_binary(g, "AddV2", "z", y, y, &st);
  ASSERT_OK(st);
  weft_graph_pop_colocate(g);
  weft_graph_pop_control_deps(g);

  weft_op_builder_t *b = weft_op_new(g, "Identity", "tagged");
  weft_op_add_input(b, z);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_int(b, "_i", -5);
  weft_op_set_attr_float(b, "_f", 1.25f);
  weft_op_set_attr_bool(b, "_b", true);
  weft_op_set_attr_string(b, "_s", "text");
  int64_t il[] = {3, 1, 4};
  weft_op_set_attr_int_list(b, "_il", il, 3);
  float fl[] = {0.5f, -1};
  weft_op_set_attr_float_list(b, "_fl", fl, 2);
  weft_dtype_t tl[] = {WEFT_DT_INT32, WEFT_DT_STRING};
  weft_op_set_attr_type_list(b, "_tl", tl, 2);
  const char *sl[] = {"p", "q"};
  weft_op_set_attr_string_list(b, "_sl", sl, 2);
  weft_op_set_attr_shape(b, "_shape", 3, (int64_t[]){1, WEFT_DIM_UNKNOWN, 3});
  weft_op_set_attr_shape(b, "_unknown", -1, NULL);
  weft_op_set_attr_int_list(b, "_empty", NULL, 0);
  weft_node_t *tagged = NULL;
  ASSERT_OK(weft_op_finish(b, &tagged));

  void *bytes1 = NULL, *bytes2 = NULL;
  size_t len1 = 0, len2 = 0;
  ASSERT_OK(weft_graph_export_graphdef(g, &bytes1, &len1));

  /* What TensorFlow would read: decode the bytes ourselves and look. */
  Tensorflow__GraphDef *gd = tensorflow__graph_def__unpack(NULL, len1, bytes1);
  g_assert_nonnull(gd);
  g_assert_cmpint(gd->n_node, ==, 5);
  g_assert_nonnull(gd->versions);
  g_assert_cmpint(gd->versions->producer, >, 0);
  const Tensorflow__NodeDef *zd = gd->node[3];
  g_assert_cmpstr(zd->name, ==, "z");
  g_assert_cmpint(zd->n_input, ==, 3);
  g_assert_cmpstr(zd->input[0], ==, "y");
  g_assert_cmpstr(zd->input[2], ==, "^w");
  g_assert_cmpstr(gd->node[1]->device, ==, weft_node_requested_device(w.node));
  for (size_t k = 1; k < zd->n_attr; k++)
    g_assert_cmpint(strcmp(zd->attr[k - 1]->key, zd->attr[k]->key), <, 0);
  bool found_class = false;
  for (size_t k = 0; k < zd->n_attr; k++) {
    if (strcmp(zd->attr[k]->key, "_class") == 0) {
      found_class = true;
      g_assert_cmpint(zd->attr[k]->value->list->n_s, ==, 1);
      g_assert_cmpmem(zd->attr[k]->value->list->s[0].data, zd->attr[k]->value->list->s[0].len,
                      "loc:@w", 6);
    }
  }
  g_assert_true(found_class);
  const Tensorflow__NodeDef *td = gd->node[4];
  for (size_t k = 1; k < td->n_attr; k++)
    g_assert_cmpint(strcmp(td->attr[k - 1]->key, td->attr[k]->key), <, 0);
  tensorflow__graph_def__free_unpacked(gd, NULL);

  weft_graph_t *g2 = weft_graph_new();
  ASSERT_OK(weft_graph_import_graphdef(g2, bytes1, len1, NULL));
  ASSERT_OK(weft_graph_export_graphdef(g2, &bytes2, &len2));
  g_assert_cmpmem(bytes1, len1, bytes2, len2);

  g_assert_cmpint(weft_graph_num_nodes(g2), ==, 5);
  for (int i = 0; i < 5; i++) {
    weft_node_t *a = weft_graph_node_at(g, i), *c = weft_graph_node_at(g2, i);
    g_assert_cmpstr(weft_node_name(a), ==, weft_node_name(c));
    g_assert_cmpstr(weft_node_op(a), ==, weft_node_op(c));
    g_assert_cmpstr(weft_node_requested_device(a), ==, weft_node_requested_device(c));
    g_assert_cmpstr(a->colocation_group, ==, c->colocation_group);
    g_assert_cmpint(a->control_inputs->len, ==, c->control_inputs->len);
    for (int k = 0; k < weft_node_num_outputs(a); k++) {
      int64_t da[WEFT_MAX_RANK], dc[WEFT_MAX_RANK];
      int ra = weft_node_output_shape(a, k, da), rc = weft_node_output_shape(c, k, dc);
      g_assert_cmpint(ra, ==, rc);
      if (ra > 0) g_assert_cmpmem(da, sizeof(int64_t) * ra, dc, sizeof(int64_t) * rc);
    }
  }
  weft_node_t *t2 = weft_graph_node(g2, "tagged");
  const weft__attr_value_t *v = weft__attrs_get(t2->attrs, "_shape");
  g_assert_cmpint(v->u.shape.rank, ==, 3);
  g_assert_cmpint(v->u.shape.dims[1], ==, WEFT_DIM_UNKNOWN);
  g_assert_cmpint(weft__attrs_get(t2->attrs, "_unknown")->u.shape.rank, ==, -1);
  v = weft__attrs_get(t2->attrs, "_tl");
  g_assert_cmpint(v->kind, ==, WEFT_ATTR_LIST_TYPE);
  g_assert_cmpint(v->u.list.type[1], ==, WEFT_DT_STRING);
  g_assert_cmpstr(weft__attrs_get(t2->attrs, "_sl")->u.list.s[1].data, ==, "q");
  g_assert_true(weft__attrs_get(t2->attrs, "_b")->u.b);

  /* Both graphs compute the same thing. */
  float xv[] = {1, 1, 2, -1};
  weft_tensor_t *xt = weft_tensor_new_from_data(WEFT_DT_FLOAT, 2, (int64_t[]){2, 2}, xv,
                                                sizeof xv, &st);
  ASSERT_OK(st);
  const char *names[] = {"x"};
  weft_tensor_t *r1 = run_one(g, names, &xt, 1, "tagged");
  weft_tensor_t *r2 = run_one(g2, names, &xt, 1, "tagged");
  /* y = x * w^T: [[1*1+1*2, 1*3+1*4], [2*1-1*2, 2*3-1*4]] = [[3,7],[0,2]]; z = 2y. */
  const double want[] = {6, 14, 0, 4};
  assert_close(r1, want, 4, 0, 0);
  assert_close(r2, want, 4, 0, 0);
  weft_tensor_unref(r1);
  weft_tensor_unref(r2);
  weft_tensor_unref(xt);
  free(bytes1);
  free(bytes2);
  weft_graph_free(g2);
  weft_graph_free(g);
}

static void test_export_empty(void) {
  weft_graph_t *g = weft_graph_new();
  void *bytes = NULL;
  size_t len = 0;
  ASSERT_OK(weft_graph_export_graphdef(g, &bytes, &len));
  g_assert_nonnull(bytes);
  weft_graph_t *g2 = weft_graph_new();
  ASSERT_OK(weft_graph_import_graphdef(g2, bytes, len, NULL));
  g_assert_cmpint(weft_graph_num_nodes(g2), ==, 0);
  free(bytes);
  weft_graph_free(g2);
  weft_graph_free(g);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  weft_plugins_load_default();
  g_test_add_func("/graphdef/corpus/multiplication", test_corpus_multiplication);
  g_test_add_func("/graphdef/corpus/addition_int32", test_corpus_addition_int32);
  g_test_add_func("/graphdef/corpus/regression", test_corpus_regression);
  g_test_add_func("/graphdef/corpus/mlp_5_5_1", test_corpus_mlp);
  g_test_add_func("/graphdef/corpus/fc_layers", test_corpus_fc_layers);
  g_test_add_func("/graphdef/corpus/round_trip", test_corpus_round_trip);
  g_test_add_func("/graphdef/error/truncated_file", test_truncated_file);
  g_test_add_func("/graphdef/error/random_bytes", test_random_bytes);
  g_test_add_func("/graphdef/error/missing_file", test_missing_file);
  g_test_add_func("/graphdef/error/unknown_op", test_unknown_op);
  g_test_add_func("/graphdef/error/unknown_ops_all_named", test_unknown_ops_all_named);
  g_test_add_func("/graphdef/error/missing_input", test_missing_input);
  g_test_add_func("/graphdef/error/content_size", test_content_size_mismatch);
  g_test_add_func("/graphdef/error/const_dtype", test_const_dtype_mismatch);
  g_test_add_func("/graphdef/error/cycle", test_cycle);
  g_test_add_func("/graphdef/error/names", test_duplicate_and_existing_names);
  g_test_add_func("/graphdef/error/adds_nothing", test_failure_adds_nothing);
  g_test_add_func("/graphdef/import/any_order", test_any_order);
  g_test_add_func("/graphdef/import/prefix_and_indices", test_prefix_and_indices);
  g_test_add_func("/graphdef/import/attr_kinds", test_attr_kinds);
  g_test_add_func("/graphdef/tensor/splat", test_tensor_proto_splat);
  g_test_add_func("/graphdef/tensor/errors", test_tensor_proto_errors);
  g_test_add_func("/graphdef/tensor/round_trip", test_tensor_proto_round_trip);
  g_test_add_func("/graphdef/export/round_trip", test_export_round_trip);
  g_test_add_func("/graphdef/export/empty", test_export_empty);
  g_test_add_func("/graphdef/nul_in_name", test_nul_in_name);
  g_test_add_func("/graphdef/node_name_pattern", test_node_name_pattern);
  return g_test_run();
}
