/* Tests for SavedModel loading (core/src/train/saved_model.c) and the CLI around it (`weft run
 * --saved-model`, `weft checkpoint ls`), on TensorFlow's own SavedModels and checkpoints from the
 * corpus: the serving test models give their known answers, the counter counts, the regression
 * model trains, signatures resolve by key and by tensor name, and every way a load or run can go
 * wrong gives its documented code and a message naming the thing at fault. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "process_util.h"
#include "saved_model.pb-c.h"
#include "weft/weft.h"

#define WEFT_EXE WEFT_BUILD_DIR "/core/tools/weft"

/* ---------------------------------------------------------------------------------------------
 * Helpers */

/* corpus/tf/SUB, or NULL (and the test skipped) when the corpus does not have it. */
static char *corpus_path(const char *sub) {
  const char *root = g_getenv("WEFT_CORPUS");
  char *dir = root != NULL ? g_strdup(root)
                           : g_build_filename(WEFT_SOURCE_DIR, "..", "shared", "corpus", NULL);
  char *path = g_build_filename(dir, "tf", sub, NULL);
  g_free(dir);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    char *why = g_strdup_printf("corpus path %s not found (set WEFT_CORPUS)", path);
    g_test_skip(why);
    g_free(why);
    g_free(path);
    return NULL;
  }
  return path;
}

static void assert_status(weft_status_t *st, weft_code_t code, const char *needle) {
  g_assert_nonnull(st);
  g_test_message("status: %s: %s", weft_code_name(weft_status_code(st)), weft_status_message(st));
  g_assert_cmpstr(weft_code_name(weft_status_code(st)), ==, weft_code_name(code));
  if (strstr(weft_status_message(st), needle) == NULL)
    g_assert_cmpstr(weft_status_message(st), ==, needle);
  weft_status_free(st);
}

static void assert_ok(weft_status_t *st) {
  if (st != NULL) g_error("%s: %s", weft_code_name(weft_status_code(st)), weft_status_message(st));
}

static weft_saved_model_t *load(const char *sub, const char *tags) {
  char *dir = corpus_path(sub);
  if (dir == NULL) return NULL;
  weft_saved_model_t *m = NULL;
  assert_ok(weft_saved_model_load(dir, tags, NULL, &m));
  g_assert_nonnull(m);
  g_free(dir);
  return m;
}

static weft_tensor_t *tensor_json(const char *json) {
  weft_status_t *st = NULL;
  weft_tensor_t *t = weft_tensor_from_json(json, WEFT_DT_FLOAT, &st);
  assert_ok(st);
  return t;
}

/* Runs one feed (may be NULL) and one fetch; returns the fetched tensor. */
static weft_tensor_t *run1(weft_saved_model_t *m, const char *sig, const char *feed_name,
                           const char *feed_json, const char *fetch) {
  weft_tensor_t *feed = feed_name ? tensor_json(feed_json) : NULL;
  weft_tensor_t *out = NULL;
  assert_ok(weft_saved_model_run(m, sig, &feed_name, &feed, feed_name ? 1 : 0, &fetch, &out, 1,
                                 NULL, 0));
  weft_tensor_unref(feed);
  g_assert_nonnull(out);
  return out;
}

static void assert_floats(weft_tensor_t *t, const float *want, int n) {
  g_assert_cmpint(weft_tensor_dtype(t), ==, WEFT_DT_FLOAT);
  g_assert_cmpint(weft_tensor_num_elements(t), ==, n);
  const float *got = weft_tensor_data(t);
  for (int i = 0; i < n; i++) g_assert_cmpfloat(got[i], ==, want[i]);
  weft_tensor_unref(t);
}

/* A writable copy of a corpus SavedModel (the corpus is read-only), removed by rm_tree. */
static char *copy_model(const char *sub) {
  char *src = corpus_path(sub);
  if (src == NULL) return NULL;
  char *tmp = g_dir_make_tmp("weft-sm-XXXXXX", NULL);
  g_assert_nonnull(tmp);
  char *vars = g_build_filename(tmp, "variables", NULL);
  g_mkdir_with_parents(vars, 0700);
  const char *files[] = {"saved_model.pb", "variables/variables.index",
                         "variables/variables.data-00000-of-00001"};
  for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
    char *from = g_build_filename(src, files[i], NULL);
    char *to = g_build_filename(tmp, files[i], NULL);
    gchar *bytes = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(from, &bytes, &len, NULL));
    g_assert_true(g_file_set_contents(to, bytes, (gssize)len, NULL));
    g_free(bytes);
    g_free(from);
    g_free(to);
  }
  g_free(vars);
  g_free(src);
  return tmp;
}

static void rm_tree(const char *dir) {
  GDir *d = g_dir_open(dir, 0, NULL);
  if (d == NULL) return;
  const char *name;
  while ((name = g_dir_read_name(d)) != NULL) {
    char *p = g_build_filename(dir, name, NULL);
    if (g_file_test(p, G_FILE_TEST_IS_DIR))
      rm_tree(p);
    else
      g_unlink(p);
    g_free(p);
  }
  g_dir_close(d);
  g_rmdir(dir);
}

static void write_file(const char *dir, const char *name, const void *bytes, gssize len) {
  char *p = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(p, bytes, len, NULL));
  g_free(p);
}

/* ---------------------------------------------------------------------------------------------
 * Known answers */

static void test_half_plus_two(void) {
  weft_saved_model_t *m = load("saved_model/half_plus_two_cpu", NULL);
  if (m == NULL) return;
  /* x is Identity(ParseExample): feeding it cuts ParseExample off. */
  assert_floats(run1(m, NULL, "x", "[0,1,2,3]", "y"), (const float[]){2, 2.5f, 3, 3.5f}, 4);
  assert_floats(run1(m, NULL, "x:0", "[10]", "y:0"), (const float[]){7}, 1);
  /* The variables came from the checkpoint (a=0.5, b=2), not from their initialisers. */
  assert_floats(run1(m, NULL, NULL, NULL, "a"), (const float[]){0.5f}, 1);
  assert_floats(run1(m, NULL, NULL, NULL, "b/read"), (const float[]){2}, 1);
  /* A fed tensor can be fetched back. */
  assert_floats(run1(m, NULL, "x", "[4,5]", "x"), (const float[]){4, 5}, 2);
  weft_saved_model_free(m);
}

static void test_half_plus_three(void) {
  weft_saved_model_t *m = load("saved_model/half_plus_three", "serve");
  if (m == NULL) return;
  assert_floats(run1(m, NULL, "x", "[0,1,2,3]", "y"), (const float[]){3, 3.5f, 4, 4.5f}, 4);
  assert_floats(run1(m, "serving_default", "x", "[0,1,2,3]", "y"),
                (const float[]){3, 3.5f, 4, 4.5f}, 4);
  weft_saved_model_free(m);
}

static void test_matrix_half_plus_two(void) {
  weft_saved_model_t *m = load("saved_model/matrix_half_plus_two", NULL);
  if (m == NULL) return;
  weft_tensor_t *y = run1(m, "serving_default", "x", "[[[1,2,3],[4,5,6],[7,8,9]]]", "y");
  g_assert_cmpint(weft_tensor_rank(y), ==, 3);
  g_assert_cmpint(weft_tensor_dims(y)[0], ==, 1);
  g_assert_cmpint(weft_tensor_dims(y)[2], ==, 3);
  float want[9];
  for (int i = 0; i < 9; i++) want[i] = (float)(i + 1) / 2 + 2;
  assert_floats(y, want, 9);
  weft_saved_model_free(m);
}

static void test_counter(void) {
  weft_saved_model_t *m = load("saved_model/counter", NULL);
  if (m == NULL) return;
  assert_floats(run1(m, "get_counter", NULL, NULL, "output"), (const float[]){0}, 1);
  for (int i = 1; i <= 3; i++)
    assert_floats(run1(m, "incr_counter", NULL, NULL, "output"), (const float[]){(float)i}, 1);
  assert_floats(run1(m, "get_counter", NULL, NULL, "output"), (const float[]){3}, 1);
  assert_floats(run1(m, "incr_counter_by", "delta", "2.5", "output"), (const float[]){5.5f}, 1);
  assert_floats(run1(m, "reset_counter", NULL, NULL, "output"), (const float[]){0}, 1);
  assert_floats(run1(m, NULL, NULL, NULL, "counter"), (const float[]){0}, 1);
  /* A second model has its own variables. */
  weft_saved_model_t *m2 = load("saved_model/counter", NULL);
  assert_floats(run1(m, "incr_counter", NULL, NULL, "output"), (const float[]){1}, 1);
  assert_floats(run1(m2, "get_counter", NULL, NULL, "output"), (const float[]){0}, 1);
  weft_saved_model_free(m2);
  weft_saved_model_free(m);
}

/* The regression model trains: the first loss matches the checkpoint's w and b, and gradient
 * descent (the graph's own train op) lowers it. */
static void test_regression_trains(void) {
  char *dir = corpus_path("saved_model/rust_regression");
  if (dir == NULL) return;
  weft_saved_model_t *m = NULL;
  assert_status(weft_saved_model_load(dir, NULL, NULL, &m), WEFT_NOT_FOUND,
                "has no MetaGraphDef tagged {serve}; the tag sets present are {serve,train}");
  g_assert_null(m);
  assert_ok(weft_saved_model_load(dir, "train, serve", NULL, &m));
  char *prefix = g_build_filename(dir, "variables", "variables", NULL);
  weft_checkpoint_reader_t *r = NULL;
  assert_ok(weft_checkpoint_reader_open(prefix, &r));
  weft_tensor_t *w = NULL, *b = NULL;
  assert_ok(weft_checkpoint_reader_read(r, "w", &w));
  assert_ok(weft_checkpoint_reader_read(r, "b", &b));
  const double xs[4] = {0.1, 0.2, 0.3, 0.4}, ys[4] = {1.2, 1.4, 1.6, 1.8};
  double want = 0;
  for (int i = 0; i < 4; i++) {
    double d = ys[i] - (weft_tensor_get_double(w, 0) * xs[i] + weft_tensor_get_double(b, 0));
    want += d * d / 4;
  }
  weft_tensor_t *feeds[2] = {tensor_json("[0.1,0.2,0.3,0.4]"), tensor_json("[1.2,1.4,1.6,1.8]")};
  const char *feed_names[2] = {"x", "y"};
  const char *fetch = "Mean", *target = "train";
  double losses[6];
  for (int step = 0; step < 6; step++) {
    weft_tensor_t *loss = NULL;
    assert_ok(weft_saved_model_run(m, NULL, feed_names, feeds, 2, &fetch, &loss, 1, &target, 1));
    losses[step] = weft_tensor_get_double(loss, 0);
    weft_tensor_unref(loss);
  }
  g_assert_cmpfloat_with_epsilon(losses[0], want, 1e-5 * want);
  g_assert_cmpfloat(losses[5], <, losses[0] / 10);
  for (int step = 1; step < 6; step++) g_assert_cmpfloat(losses[step], <, losses[step - 1]);
  /* The signature resolves its input keys too. */
  weft_tensor_t *out = NULL;
  const char *sfetch = "out";
  assert_ok(weft_saved_model_run(m, "tensorflow/serving/regress", feed_names, feeds, 1, &sfetch,
                                 &out, 1, NULL, 0));
  g_assert_cmpint(weft_tensor_num_elements(out), ==, 4);
  weft_tensor_unref(out);
  weft_tensor_unref(feeds[0]);
  weft_tensor_unref(feeds[1]);
  weft_tensor_unref(w);
  weft_tensor_unref(b);
  weft_checkpoint_reader_free(r);
  g_free(prefix);
  weft_saved_model_free(m);
  g_free(dir);
}

/* ---------------------------------------------------------------------------------------------
 * Signatures */

static void test_signatures(void) {
  weft_saved_model_t *m = load("saved_model/half_plus_two_cpu", NULL);
  if (m == NULL) return;
  g_assert_cmpint(weft_saved_model_num_signatures(m), ==, 5);
  g_assert_cmpstr(weft_saved_model_signature_key(m, 0), ==, "classify_x_to_y");
  g_assert_cmpstr(weft_saved_model_signature_key(m, 1), ==, "regress_x2_to_y3");
  g_assert_cmpstr(weft_saved_model_signature_key(m, 4), ==, "serving_default");
  g_assert_null(weft_saved_model_signature_key(m, 5));
  int n_in = -1, n_out = -1;
  const char *method = NULL;
  assert_ok(weft_saved_model_signature(m, "regress_x2_to_y3", &n_in, &n_out, &method));
  g_assert_cmpint(n_in, ==, 1);
  g_assert_cmpint(n_out, ==, 1);
  g_assert_cmpstr(method, ==, "tensorflow/serving/regress");
  weft_saved_model_tensor_info_t info;
  assert_ok(weft_saved_model_signature_input(m, "regress_x2_to_y3", 0, &info));
  g_assert_cmpstr(info.key, ==, "inputs");
  g_assert_cmpstr(info.name, ==, "x2:0");
  g_assert_cmpint(info.dtype, ==, WEFT_DT_FLOAT);
  g_assert_cmpint(info.rank, ==, 2);
  g_assert_cmpint(info.dims[0], ==, -1);
  g_assert_cmpint(info.dims[1], ==, 1);
  assert_ok(weft_saved_model_signature_output(m, "regress_x2_to_y3", 0, &info));
  g_assert_cmpstr(info.key, ==, "outputs");
  g_assert_cmpstr(info.name, ==, "y3:0");
  assert_status(weft_saved_model_signature_input(m, "regress_x2_to_y3", 1, &info), WEFT_NOT_FOUND,
                "has 1 inputs; there is no #1");
  assert_ok(weft_saved_model_signature_input(m, "classify_x_to_y", 0, &info));
  g_assert_cmpint(info.dtype, ==, WEFT_DT_STRING);
  g_assert_cmpint(info.rank, ==, -1);

  weft_dtype_t dtype = WEFT_DT_INVALID;
  assert_ok(weft_saved_model_tensor_dtype(m, "regress_x2_to_y3", "inputs", &dtype));
  g_assert_cmpint(dtype, ==, WEFT_DT_FLOAT);
  dtype = WEFT_DT_INVALID;
  assert_ok(weft_saved_model_tensor_dtype(m, NULL, "x", &dtype)); /* Identity's T */
  g_assert_cmpint(dtype, ==, WEFT_DT_FLOAT);
  assert_status(weft_saved_model_tensor_dtype(m, NULL, "nope", &dtype), WEFT_NOT_FOUND,
                "has no tensor 'nope'");

  /* By key, and by tensor name under the same signature; y3 = 0.5 * x2 + 3. */
  const float want[4] = {3, 3.5f, 4, 4.5f};
  assert_floats(run1(m, "regress_x2_to_y3", "inputs", "[0,1,2,3]", "outputs"), want, 4);
  assert_floats(run1(m, "regress_x2_to_y3", "x2:0", "[0,1,2,3]", "y3:0"), want, 4);
  assert_floats(run1(m, NULL, "x2", "[0,1,2,3]", "y3"), want, 4);
  weft_saved_model_free(m);
}

/* ---------------------------------------------------------------------------------------------
 * Errors */

static void test_load_errors(void) {
  char *src = corpus_path("saved_model/half_plus_two_cpu");
  if (src == NULL) return;
  weft_saved_model_t *m = NULL;
  assert_status(weft_saved_model_load("/nonexistent/model", NULL, NULL, &m), WEFT_NOT_FOUND,
                "/nonexistent/model/saved_model.pb");
  g_assert_null(m);
  assert_status(weft_saved_model_load(NULL, NULL, NULL, &m), WEFT_INVALID_ARGUMENT, "folder");
  assert_status(weft_saved_model_load(src, "serve,gpu", NULL, &m), WEFT_NOT_FOUND,
                "has no MetaGraphDef tagged {gpu,serve}; the tag sets present are {serve}");
  g_free(src);

  char *tmp = copy_model("saved_model/half_plus_two_cpu");
  write_file(tmp, "saved_model.pb", "\xff\xff\xff\xff garbage", 13);
  assert_status(weft_saved_model_load(tmp, NULL, NULL, &m), WEFT_DATA_LOSS,
                "saved_model.pb is not a valid SavedModel protobuf (13 bytes)");
  write_file(tmp, "saved_model.pb", "", 0);
  assert_status(weft_saved_model_load(tmp, NULL, NULL, &m), WEFT_DATA_LOSS,
                "saved_model.pb holds no MetaGraphDef");
  rm_tree(tmp);
  g_free(tmp);

  tmp = copy_model("saved_model/half_plus_two_cpu");
  write_file(tmp, "variables/variables.index", "not a table at all", 18);
  assert_status(weft_saved_model_load(tmp, NULL, NULL, &m), WEFT_DATA_LOSS, "variables.index");
  rm_tree(tmp);
  g_free(tmp);

  tmp = copy_model("saved_model/half_plus_two_cpu");
  /* Same size, other bytes: the crc32c check catches it. */
  write_file(tmp, "variables/variables.data-00000-of-00001", "0123456789abcdefghij", 20);
  assert_status(weft_saved_model_load(tmp, NULL, NULL, &m), WEFT_DATA_LOSS,
                "variables.data-00000-of-00001");
  g_assert_null(m);
  /* No variables folder at all: the load fails and says so (it once loaded and failed later,
   * at the first read, with "uninitialized value a"); /saved_model/missing_variables checks
   * the whole message. */
  char *vars = g_build_filename(tmp, "variables", NULL);
  rm_tree(vars);
  g_free(vars);
  assert_status(weft_saved_model_load(tmp, NULL, NULL, &m), WEFT_NOT_FOUND,
                "variables/variables.index is missing");
  g_assert_null(m);
  rm_tree(tmp);
  g_free(tmp);
}

/* The TF1 serving model's input goes through ParseExample: fed a serialized tf.Example
 * {x: [1.0]} (bytes written by hand), the model parses it and y = 0.5 x + 2. */
static void test_parse_example_input(void) {
  weft_saved_model_t *m = load("saved_model/half_plus_two_cpu", NULL);
  if (m == NULL) return;
  weft_tensor_t *out = NULL;
  const char *fetch = "y";
  /* Not feeding x reaches ParseExample, whose serialized input is the fed tf_example. */
  assert_status(weft_saved_model_run(m, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0),
                WEFT_INVALID_ARGUMENT,
                "You must feed a value for placeholder tensor 'tf_example'");
  g_assert_null(out);
  static const char example[] = "\x0a\x0f\x0a\x0d\x0a\x01x\x12\x08\x12\x06\x0a\x04"
                                "\x00\x00\x80\x3f";
  int64_t one = 1;
  weft_tensor_t *ser = weft_tensor_new(WEFT_DT_STRING, 1, &one);
  assert_ok(weft_tensor_set_string(ser, 0, example, sizeof example - 1));
  const char *feed = "tf_example:0";
  assert_ok(weft_saved_model_run(m, NULL, &feed, &ser, 1, &fetch, &out, 1, NULL, 0));
  weft_tensor_unref(ser);
  g_assert_cmpint(weft_tensor_num_elements(out), ==, 1);
  g_assert_cmpfloat(weft_tensor_get_double(out, 0), ==, 2.5);
  weft_tensor_unref(out);
  out = NULL;
  weft_saved_model_free(m);
}

static void test_run_errors(void) {
  weft_saved_model_t *m = load("saved_model/half_plus_two_cpu", NULL);
  if (m == NULL) return;
  weft_tensor_t *out = NULL;
  const char *fetch = "y";
  assert_status(weft_saved_model_run(m, "nope", NULL, NULL, 0, &fetch, &out, 1, NULL, 0),
                WEFT_NOT_FOUND,
                "has no signature 'nope'; its signatures are 'classify_x_to_y', "
                "'regress_x2_to_y3', 'regress_x_to_y', 'regress_x_to_y2', 'serving_default'");
  const char *bad = "nope:0";
  assert_status(weft_saved_model_run(m, NULL, NULL, NULL, 0, &bad, &out, 1, NULL, 0),
                WEFT_NOT_FOUND, "has no tensor 'nope:0'");
  bad = "nokey";
  assert_status(weft_saved_model_run(m, "serving_default", NULL, NULL, 0, &bad, &out, 1, NULL, 0),
                WEFT_NOT_FOUND,
                "has no tensor 'nokey' (nor has signature 'serving_default' such an output key)");
  bad = "y:x";
  assert_status(weft_saved_model_run(m, NULL, NULL, NULL, 0, &bad, &out, 1, NULL, 0),
                WEFT_INVALID_ARGUMENT, "'y:x' is not a tensor name");
  const char *target = "no_such_node";
  assert_status(weft_saved_model_run(m, NULL, NULL, NULL, 0, NULL, NULL, 0, &target, 1),
                WEFT_NOT_FOUND, "has no node 'no_such_node' to run as a target");
  /* The failed runs left the model usable. */
  assert_floats(run1(m, NULL, "x", "[0,1,2,3]", "y"), (const float[]){2, 2.5f, 3, 3.5f}, 4);
  /* y now reads x through its stand-in: a run that does not feed x is told to. */
  assert_status(weft_saved_model_run(m, NULL, NULL, NULL, 0, &fetch, &out, 1, NULL, 0),
                WEFT_INVALID_ARGUMENT, "a tensor fed in an earlier run is read through a "
                "stand-in placeholder by the nodes imported then; feed it again: You must feed a "
                "value for placeholder tensor '_weft_feed/x/0'");
  g_assert_null(out);
  weft_saved_model_free(m);
}

/* A TF2 Keras SavedModel (model.save of Dense(5, relu) -> Dense(1, sigmoid)): serving_default's
 * output comes through StatefulPartitionedCall over the function library, its resource variables
 * are restored from the object-based checkpoint through the saver's restore function. The
 * references are sigmoid(relu(x K0 + b0) K1 + b1) computed in double precision by
 * tests/ref/keras_tf2_ref.py, which reads the checkpoint's bytes itself (no Weft code). */
static void test_keras_tf2(void) {
  weft_saved_model_t *m = load("saved_model/cppflow_keras", NULL);
  if (m == NULL) return;
  const double want[] = {0.9998577670157858, 0.5, 0.14668225098265186};
  for (int pass = 0; pass < 2; pass++) {
    weft_tensor_t *x = tensor_json("[[1,2,3,4,5],[0,0,0,0,0],[-1,0.5,2,-3,1]]");
    /* By signature key, then by the tensor names the signature maps them to. */
    const char *feed = pass ? "serving_default_input_1:0" : "input_1";
    const char *fetch = pass ? "StatefulPartitionedCall:0" : "dense_1";
    weft_tensor_t *out = NULL;
    assert_ok(weft_saved_model_run(m, "serving_default", &feed, &x, 1, &fetch, &out, 1, NULL, 0));
    weft_tensor_unref(x);
    g_assert_cmpint(weft_tensor_dtype(out), ==, WEFT_DT_FLOAT);
    g_assert_cmpint(weft_tensor_rank(out), ==, 2);
    g_assert_cmpint(weft_tensor_dims(out)[0], ==, 3);
    g_assert_cmpint(weft_tensor_dims(out)[1], ==, 1);
    const float *got = weft_tensor_data(out);
    for (int i = 0; i < 3; i++) g_assert_cmpfloat_with_epsilon(got[i], want[i], 2e-7);
    weft_tensor_unref(out);
  }
  weft_saved_model_free(m);
}

/* ---------------------------------------------------------------------------------------------
 * CLI */

static run_result_t run_weft(const char *const *args) {
  return run_program(WEFT_EXE, args, NULL);
}

static bool no_weft(void) {
  if (g_file_test(WEFT_EXE, G_FILE_TEST_IS_EXECUTABLE)) return false;
  g_test_skip("weft binary not built at " WEFT_EXE);
  return true;
}

static void assert_contains(const char *text, const char *needle) {
  if (strstr(text, needle) == NULL) g_assert_cmpstr(text, ==, needle);
}

static void test_cli_run(void) {
  if (no_weft()) return;
  char *hp2 = corpus_path("saved_model/half_plus_two_cpu");
  char *counter = corpus_path("saved_model/counter");
  if (hp2 == NULL || counter == NULL) goto out;
  run_result_t r = run_weft((const char *[]){"run", "--saved-model", hp2, "--feed", "x=[0,1,2,3]",
                                         "--fetch", "y", "--json", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==,
                  "{\"y\": {\"dtype\": \"float32\", \"shape\": [4], "
                  "\"values\": [2, 2.5, 3, 3.5]}}\n");
  run_result_clear(&r);

  r = run_weft((const char *[]){"run", "--saved-model", hp2, "--signature", "regress_x2_to_y3",
                                "--feed", "inputs=[[1],[2]]", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==, "outputs = float32[2,1] [3.5, 4]\n");
  run_result_clear(&r);

  r = run_weft((const char *[]){"run", "--saved-model", counter, "--signature", "incr_counter",
                                "--repeat", "3", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==,
                  "output = float32[] 1\noutput = float32[] 2\noutput = float32[] 3\n");
  run_result_clear(&r);

  r = run_weft((const char *[]){"run", "--saved-model", counter, "--signature", "incr_counter_by",
                                "--feed", "delta=2", "--repeat", "2", "--json", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==,
                  "{\"output\": {\"dtype\": \"float32\", \"shape\": [], \"values\": [2]}}\n"
                  "{\"output\": {\"dtype\": \"float32\", \"shape\": [], \"values\": [4]}}\n");
  run_result_clear(&r);

  /* Errors: runtime ones exit 1, command-line ones 2. */
  r = run_weft((const char *[]){"run", "--saved-model", hp2, "--signature", "nope", NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  assert_contains(r.err, "weft: error: NOT_FOUND: SavedModel '");
  assert_contains(r.err, "has no signature 'nope'; its signatures are 'classify_x_to_y'");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--saved-model", hp2, "--tag", "gpu", "--fetch", "y", NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  assert_contains(r.err, "has no MetaGraphDef tagged {gpu}; the tag sets present are {serve}");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--saved-model", hp2, "--fetch", "y", NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  assert_contains(r.err, "INVALID_ARGUMENT: ");
  assert_contains(r.err, "You must feed a value for placeholder tensor 'tf_example'");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--saved-model", counter, NULL});
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "nothing to run: give --signature KEY (this model has: get_counter, "
                         "incr_counter, incr_counter_by, reset_counter)");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--saved-model", counter, "--signature", "incr_counter",
                                "--repeat", "0", NULL});
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "--repeat must be at least 1, not 0");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--saved-model", counter, "--graph", "x.pb", "--fetch",
                                "counter", NULL});
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "--graph and --saved-model exclude each other");
  run_result_clear(&r);
  r = run_weft((const char *[]){"run", "--graph", "x.pb", "--signature", "s", "--fetch", "y",
                                NULL});
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "--tag, --signature and --repeat need --saved-model DIR");
  run_result_clear(&r);
out:
  g_free(hp2);
  g_free(counter);
}

/* `weft run` on the TF2 Keras model: zeros give sigmoid(0) = 0.5 (the checkpoint's biases are
 * 0, read by the Python reference of /saved_model/keras_tf2). */
static void test_cli_keras_tf2(void) {
  if (no_weft()) return;
  char *keras = corpus_path("saved_model/cppflow_keras");
  if (keras == NULL) return;
  run_result_t r = run_weft((const char *[]){"run", "--saved-model", keras, "--signature",
                                             "serving_default", "--feed", "input_1=[[0,0,0,0,0]]",
                                             "--json", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==,
                  "{\"dense_1\": {\"dtype\": \"float32\", \"shape\": [1, 1], "
                  "\"values\": [0.5]}}\n");
  run_result_clear(&r);
  g_free(keras);
}

static void test_cli_checkpoint_ls(void) {
  if (no_weft()) return;
  char *reg = corpus_path("checkpoint/regression");
  char *hp2 = corpus_path("saved_model/half_plus_two_cpu");
  char *keras = corpus_path("saved_model/cppflow_keras");
  char *matrix = corpus_path("saved_model/matrix_half_plus_two");
  if (!reg || !hp2 || !keras || !matrix) goto out;
  /* A folder with a `checkpoint` state file, and the same checkpoint by prefix. */
  char *prefix = g_build_filename(reg, "model", NULL);
  char *index = g_strconcat(prefix, ".index", NULL);
  const char *paths[] = {reg, prefix, index};
  for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
    run_result_t r = run_weft((const char *[]){"checkpoint", "ls", paths[i], NULL});
    g_assert_cmpint(r.exit_code, ==, 0);
    g_assert_cmpstr(r.out, ==, "W (float32) []\nb (float32) []\n");
    run_result_clear(&r);
  }
  run_result_t r = run_weft((const char *[]){"checkpoint", "ls", reg, "--values", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "W (float32) []\n  float32[] 0.21396");
  assert_contains(r.out, "b (float32) []\n  float32[] 1.0495");
  run_result_clear(&r);
  g_free(index);
  g_free(prefix);

  /* A SavedModel folder lists its variables. */
  r = run_weft((const char *[]){"checkpoint", "ls", hp2, NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  g_assert_cmpstr(r.out, ==,
                  "a (float32) []\na2 (float32) []\nb (float32) []\nc (float32) []\n"
                  "c2 (float32) []\n");
  run_result_clear(&r);

  r = run_weft((const char *[]){"checkpoint", "ls", keras, "--json", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  JsonParser *parser = json_parser_new();
  g_assert_true(json_parser_load_from_data(parser, r.out, -1, NULL));
  JsonObject *root = json_node_get_object(json_parser_get_root(parser));
  assert_contains(json_object_get_string_member(root, "prefix"), "variables/variables");
  JsonArray *tensors = json_object_get_array_member(root, "tensors");
  g_assert_cmpint(json_array_get_length(tensors), ==, 5);
  JsonObject *t0 = json_array_get_object_element(tensors, 0);
  g_assert_cmpstr(json_object_get_string_member(t0, "name"), ==, "_CHECKPOINTABLE_OBJECT_GRAPH");
  g_assert_cmpstr(json_object_get_string_member(t0, "dtype"), ==, "string");
  JsonObject *t2 = json_array_get_object_element(tensors, 2);
  g_assert_cmpstr(json_object_get_string_member(t2, "name"), ==,
                  "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE");
  JsonArray *shape = json_object_get_array_member(t2, "shape");
  g_assert_cmpint(json_array_get_length(shape), ==, 2);
  g_assert_cmpint(json_array_get_int_element(shape, 0), ==, 5);
  g_assert_cmpint(json_array_get_int_element(shape, 1), ==, 5);
  g_object_unref(parser);
  run_result_clear(&r);

  /* Errors name PATH. */
  r = run_weft((const char *[]){"checkpoint", "ls", "/nonexistent/ckpt", NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  assert_contains(r.err, "weft: error: NOT_FOUND: checkpoint ls /nonexistent/ckpt: ");
  assert_contains(r.err, "/nonexistent/ckpt.index");
  run_result_clear(&r);
  r = run_weft((const char *[]){"checkpoint", "ls", matrix, NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  assert_contains(r.err, "is a folder with neither a `checkpoint` state file nor "
                         "variables/variables.index");
  run_result_clear(&r);
  char *tmp = g_dir_make_tmp("weft-ckls-XXXXXX", NULL);
  write_file(tmp, "bad.index", "garbage garbage", 15);
  char *bad = g_build_filename(tmp, "bad", NULL);
  r = run_weft((const char *[]){"checkpoint", "ls", bad, NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  assert_contains(r.err, "weft: error: DATA_LOSS: checkpoint ls ");
  assert_contains(r.err, "bad.index");
  run_result_clear(&r);
  g_free(bad);
  rm_tree(tmp);
  g_free(tmp);
  r = run_weft((const char *[]){"checkpoint", "list", reg, NULL});
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "expected 'ls PATH'");
  run_result_clear(&r);
  r = run_weft((const char *[]){"checkpoint", "ls", NULL});
  g_assert_cmpint(r.exit_code, ==, 2);
  assert_contains(r.err, "ls takes exactly one PATH");
  run_result_clear(&r);
  r = run_weft((const char *[]){"help", "checkpoint", NULL});
  g_assert_cmpint(r.exit_code, ==, 0);
  assert_contains(r.out, "weft checkpoint ls PATH");
  run_result_clear(&r);
out:
  g_free(reg);
  g_free(hp2);
  g_free(keras);
  g_free(matrix);
}

/* A model whose graph has variables but that comes without variables/ (or with an empty one)
 * fails at load, naming the missing index, not later with "uninitialized value a". */
/* A copy of cppflow_keras whose saved_model.pb `edit` changed. */
static char *edited_keras(void (*edit)(Tensorflow__MetaGraphDef *mg)) {
  char *dir = copy_model("saved_model/cppflow_keras");
  if (dir == NULL) return NULL;
  char *pb = g_build_filename(dir, "saved_model.pb", NULL);
  gchar *bytes = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(pb, &bytes, &len, NULL));
  Tensorflow__SavedModel *sm = tensorflow__saved_model__unpack(NULL, len, (uint8_t *)bytes);
  g_assert_nonnull(sm);
  g_free(bytes);
  edit(sm->meta_graphs[0]);
  len = tensorflow__saved_model__get_packed_size(sm);
  bytes = g_malloc(len);
  tensorflow__saved_model__pack(sm, (uint8_t *)bytes);
  g_assert_true(g_file_set_contents(pb, bytes, (gssize)len, NULL));
  g_free(bytes);
  tensorflow__saved_model__free_unpacked(sm, NULL);
  g_free(pb);
  return dir;
}

static void no_restore_op(Tensorflow__MetaGraphDef *mg) { mg->saver_def->restore_op_name[0] = 0; }

/* Drops the function serving_default's StatefulPartitionedCall calls. */
static void drop_serving_function(Tensorflow__MetaGraphDef *mg) {
  Tensorflow__FunctionDefLibrary *lib = mg->graph_def->library;
  for (size_t k = 0; k < lib->n_function; k++) {
    if (strcmp(lib->function[k]->signature->name, "__inference_signature_wrapper_232") != 0)
      continue;
    tensorflow__function_def__free_unpacked(lib->function[k], NULL);
    lib->function[k] = lib->function[--lib->n_function];
    return;
  }
  g_assert_not_reached();
}

/* The init op (signature __saved_model_init_op) pointed at the serving input's Placeholder, or
 * at no node: loading runs it, so the load fails naming it. */
static const char *init_op_target;
static void set_init_op(Tensorflow__MetaGraphDef *mg) {
  for (size_t i = 0; i < mg->n_signature_def; i++) {
    if (strcmp(mg->signature_def[i]->key, "__saved_model_init_op") != 0) continue;
    Tensorflow__SignatureDef *sig = mg->signature_def[i]->value;
    g_assert_cmpint(sig->n_outputs, ==, 1);
    g_assert_cmpstr(sig->outputs[0]->value->name, ==, "NoOp");
    g_free(sig->outputs[0]->value->name);
    sig->outputs[0]->value->name = g_strdup(init_op_target);
    return;
  }
  g_assert_not_reached();
}

static void test_init_op(void) {
  static const struct {
    const char *target;
    weft_code_t code;
    const char *want;
  } cases[] = {
      {"serving_default_input_1:0", WEFT_INVALID_ARGUMENT,
       "running its init op 'serving_default_input_1'"},
      {"no_such_node", WEFT_NOT_FOUND,
       "its init op 'no_such_node' (signature __saved_model_init_op) is not a node of the graph"},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    init_op_target = cases[k].target;
    char *dir = edited_keras(set_init_op);
    if (dir == NULL) return;
    weft_saved_model_t *m = NULL;
    assert_status(weft_saved_model_load(dir, NULL, NULL, &m), cases[k].code, cases[k].want);
    g_assert_null(m);
    rm_tree(dir);
    g_free(dir);
  }
}

static void test_keras_tf2_errors(void) {
  char *dir = edited_keras(no_restore_op);
  if (dir == NULL) return;
  weft_saved_model_t *m = NULL;
  char *want = g_strdup_printf("SavedModel '%s': its graph has resource variables but no saver "
                               "restore op that says how to restore them", dir);
  assert_status(weft_saved_model_load(dir, NULL, NULL, &m), WEFT_UNIMPLEMENTED, want);
  g_assert_null(m);
  g_free(want);
  rm_tree(dir);
  g_free(dir);

  dir = edited_keras(drop_serving_function);
  want = g_strdup_printf("SavedModel '%s': Node 'StatefulPartitionedCall' "
                         "(StatefulPartitionedCall) calls function "
                         "'__inference_signature_wrapper_232', which is not in the graph's "
                         "function library", dir);
  assert_status(weft_saved_model_load(dir, NULL, NULL, &m), WEFT_NOT_FOUND, want);
  g_assert_null(m);
  g_free(want);
  rm_tree(dir);
  g_free(dir);
}

static void test_missing_variables(void) {
  char *dir = copy_model("saved_model/half_plus_two_cpu");
  if (dir == NULL) return;
  char *vars = g_build_filename(dir, "variables", NULL);
  char *index = g_build_filename(vars, "variables.index", NULL);
  char *data = g_build_filename(vars, "variables.data-00000-of-00001", NULL);
  g_assert_cmpint(g_unlink(index), ==, 0);
  g_assert_cmpint(g_unlink(data), ==, 0);
  /* An empty variables/ folder. */
  weft_saved_model_t *m = NULL;
  weft_status_t *st = weft_saved_model_load(dir, NULL, NULL, &m);
  g_assert_null(m);
  g_assert_nonnull(st);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_NOT_FOUND);
  char *want = g_strdup_printf("SavedModel '%s': its graph has 6 variables ('a', ...) but %s is "
                               "missing (the variables/ folder has no variables.index), so their "
                               "values cannot be restored", dir, index);
  g_assert_cmpstr(weft_status_message(st), ==, want);
  g_free(want);
  weft_status_free(st);
  /* No variables/ folder at all, through the CLI: exit 1 and the cause on stderr. */
  g_assert_cmpint(g_rmdir(vars), ==, 0);
  run_result_t r = run_weft((const char *[]){"run", "--saved-model", dir, "--feed", "x=[0,1]",
                                             "--fetch", "y", NULL});
  g_assert_cmpint(r.exit_code, ==, 1);
  g_assert_cmpstr(r.out, ==, "");
  want = g_strdup_printf("weft: error: NOT_FOUND: SavedModel '%s': its graph has 6 variables "
                         "('a', ...) but %s is missing (the model has no variables/ folder), so "
                         "their values cannot be restored\n", dir, index);
  /* Exactly this line (stderr may hold log lines too, e.g. a backend finding no device). */
  if (strstr(r.err, want) == NULL) g_assert_cmpstr(r.err, ==, want);
  g_free(want);
  run_result_clear(&r);
  g_free(data);
  g_free(index);
  g_free(vars);
  rm_tree(dir);
  g_free(dir);
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/saved_model/half_plus_two", test_half_plus_two);
  g_test_add_func("/saved_model/half_plus_three", test_half_plus_three);
  g_test_add_func("/saved_model/matrix_half_plus_two", test_matrix_half_plus_two);
  g_test_add_func("/saved_model/counter", test_counter);
  g_test_add_func("/saved_model/regression_trains", test_regression_trains);
  g_test_add_func("/saved_model/keras_tf2", test_keras_tf2);
  g_test_add_func("/saved_model/keras_tf2_errors", test_keras_tf2_errors);
  g_test_add_func("/saved_model/init_op", test_init_op);
  g_test_add_func("/saved_model/parse_example_input", test_parse_example_input);
  g_test_add_func("/saved_model/signatures", test_signatures);
  g_test_add_func("/saved_model/load_errors", test_load_errors);
  g_test_add_func("/saved_model/run_errors", test_run_errors);
  g_test_add_func("/saved_model/cli_run", test_cli_run);
  g_test_add_func("/saved_model/cli_keras_tf2", test_cli_keras_tf2);
  g_test_add_func("/saved_model/cli_checkpoint_ls", test_cli_checkpoint_ls);
  g_test_add_func("/saved_model/missing_variables", test_missing_variables);
  return g_test_run();
}
