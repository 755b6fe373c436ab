/* cases_control_flow.c: conformance cases of TensorFlow 1.x control flow run as single ops
 * (Switch: the taken output forwards the data, fetching the untaken one is TensorFlow's
 * "Retval[0] does not have value", a predicate that is not a scalar; Merge: the first live
 * input and its index; LoopCond) and of Assert (a true condition passes; a false one fails with
 * "assertion failed: [...]" summarising each data tensor to `summarize` elements as TensorFlow's
 * Tensor::SummarizeValue does; a condition that is not a scalar), and the TensorArray ops alone:
 * TensorArrayV3's handle and flow for every dtype, and the errors a single op can meet (a negative
 * or non-scalar size, a handle naming no array, a malformed handle, a non-scalar index). Loops,
 * frames and TensorArrays at work need whole graphs: tests/test_control_flow.c and the
 * --tf-graphs corpus check those. */
#include <string.h>

#include "reference.h"

static cf_case_t *new_case(const char *op, const char *name, weft_dtype_t dt, cf_rng_t *rng) {
  cf_case_t *c = cf_case_new(op, name, dt);
  cf_case_rng(c, rng);
  c->tol = (cf_tol_t){0, 0, 0};
  return c;
}

static cf_array_t *data(cf_rng_t *rng, weft_dtype_t dt, int rank, const int64_t *dims) {
  cf_gen_t g = {dt == WEFT_DT_BOOL ? CF_GEN_BOOL : CF_GEN_ARANGE, 0, 0};
  return cf_gen_array(rng, dt, rank, dims, g);
}

static cf_array_t *boolean(bool v) { return cf_array_scalar(WEFT_DT_BOOL, v ? 1 : 0); }

static void emit_switch(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  static const char *const names[] = {"rank2_pred_false", "scalar_pred_false", "empty_pred_false"};
  int ranks[] = {2, 0, 1};
  int64_t dims[][2] = {{2, 3}, {0}, {0}};
  for (int s = 0; s < 3; s++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, names[s], dt, &rng);
    cf_array_t *x = data(&rng, dt, ranks[s], dims[s]);
    cf_case_expect(c, cf_array_copy(x)); /* output_false only: output_true is dead */
    cf_case_input(c, x);
    cf_case_input(c, boolean(false));
    cf_run_case(ctx, c);
  }
  /* pred true: output_false (fetched first) is dead. */
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "pred_true_fetch_dead", dt, &rng);
  int64_t d = 4;
  cf_case_input(c, data(&rng, dt, 1, &d));
  cf_case_input(c, boolean(true));
  cf_case_expect(c, NULL);
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Retval[0] does not have value");
  cf_run_case(ctx, c);
  c = new_case(op, "pred_not_scalar", dt, &rng);
  cf_case_input(c, data(&rng, dt, 1, &d));
  int64_t two = 2;
  cf_array_t *p = cf_array_new(WEFT_DT_BOOL, 1, &two);
  int pi = cf_case_input(c, p);
  c->unknown_shape[pi] = true;
  cf_case_expect(c, NULL);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "The second input must be a scalar, but it has shape [2]");
  cf_run_case(ctx, c);
}

/* RefSwitch forwards the variable itself: the fetched output_false is the variable's value. */
static void emit_ref_switch(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "variable_pred_false", dt, &rng);
  int64_t dims[2] = {2, 3};
  cf_array_t *x = data(&rng, dt, 2, dims);
  cf_case_expect(c, cf_array_copy(x));
  cf_case_variable_input(c, x, NULL);
  cf_case_input(c, boolean(false));
  cf_run_case(ctx, c);
}

static void emit_merge(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "T", dt)) return;
  for (int n = 1; n <= 3; n++) {
    cf_rng_t rng;
    char name[32];
    g_snprintf(name, sizeof name, "all_live_n%d", n);
    cf_case_t *c = new_case(op, name, dt, &rng);
    int64_t dims[2] = {3, 2};
    for (int k = 0; k < n; k++) {
      cf_array_t *x = data(&rng, dt, 2, dims);
      if (k == 0) cf_case_expect(c, cf_array_copy(x));
      cf_case_input(c, x);
    }
    cf_case_expect(c, cf_array_scalar(WEFT_DT_INT32, 0));
    cf_case_args(c, 1, &n);
    cf_run_case(ctx, c);
  }
}

static void emit_loop_cond(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  for (int v = 0; v < 2; v++) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, v ? "true" : "false", WEFT_DT_INVALID, &rng);
    cf_case_input(c, boolean(v));
    cf_case_expect(c, boolean(v));
    cf_run_case(ctx, c);
  }
}

static void emit_control_trigger(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)dt;
  cf_rng_t rng;
  cf_case_t *c = new_case(op, "runs", WEFT_DT_INVALID, &rng);
  cf_run_case(ctx, c);
}

/* Assert's data: float [1.5, -2, 0.25, 8], int32 [1..5], double [[0.1, 2], [3, 4]], bool [1, 0]. */
static void assert_case(cf_run_ctx_t *ctx, const char *name, bool cond, int64_t summarize,
                        const char *message) {
  cf_rng_t rng;
  cf_case_t *c = new_case("Assert", name, WEFT_DT_INVALID, &rng);
  cf_case_input(c, boolean(cond));
  cf_case_input(c, cf_array_vec(WEFT_DT_FLOAT, 4, (const double[]){1.5, -2, 0.25, 8}));
  cf_case_input(c, cf_array_vec(WEFT_DT_INT32, 5, (const double[]){1, 2, 3, 4, 5}));
  cf_array_t *d = cf_array_vec(WEFT_DT_DOUBLE, 4, (const double[]){0.1, 2, 3, 4});
  int64_t d22[2] = {2, 2};
  cf_case_input(c, cf_array_reshape(d, 2, d22));
  cf_array_free(d);
  cf_case_input(c, cf_array_vec(WEFT_DT_BOOL, 2, (const double[]){1, 0}));
  int lens[2] = {0, 4};
  cf_case_args(c, 2, lens);
  if (summarize >= 0) cf_case_attr_int(c, "summarize", summarize);
  if (message) cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, message);
  cf_run_case(ctx, c);
}

static void emit_assert(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  (void)op;
  (void)dt;
  assert_case(ctx, "condition_true", true, -1, NULL);
  assert_case(ctx, "summarize_default_3", false, -1,
              "assertion failed: [1.5 -2 0.25...] [1 2 3...] [[0.1 2][3...]...] [1 0]");
  assert_case(ctx, "summarize_10", false, 10,
              "assertion failed: [1.5 -2 0.25 8] [1 2 3 4 5] [[0.1 2][3 4]] [1 0]");
  assert_case(ctx, "summarize_1", false, 1,
              "assertion failed: [1.5...] [1...] [[0.1...]...] [1...]");
  /* Strings print C-escaped and unquoted (tf.debugging's messages are string data). */
  cf_rng_t rng;
  cf_case_t *c = new_case("Assert", "strings", WEFT_DT_INVALID, &rng);
  cf_case_input(c, boolean(false));
  cf_array_t *msg = cf_array_new(WEFT_DT_STRING, 0, NULL);
  g_string_assign(msg->s[0], "Condition x < y did not hold element-wise:");
  cf_case_input(c, msg);
  int64_t two = 2;
  cf_array_t *strs = cf_array_new(WEFT_DT_STRING, 1, &two);
  g_string_assign(strs->s[0], "a\"b");
  g_string_assign(strs->s[1], "tab\t\x01");
  cf_case_input(c, strs);
  int slens[2] = {0, 2};
  cf_case_args(c, 2, slens);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "assertion failed: [Condition x < y did not hold element-wise:] "
                       "[a\\\"b tab\\t\\001]");
  cf_run_case(ctx, c);
  c = new_case("Assert", "condition_not_scalar", WEFT_DT_INVALID, &rng);
  int ci = cf_case_input(c, cf_array_vec(WEFT_DT_BOOL, 2, (const double[]){1, 1}));
  c->unknown_shape[ci] = true;
  cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 1));
  int lens[2] = {0, 1};
  cf_case_args(c, 2, lens);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "In[0] should be a scalar: [2]");
  cf_run_case(ctx, c);
}

/* ---------------------------------------------------------------------------------------------
 * TensorArrays */

/* TensorArrayV3's outputs: the handle ["_tensor_arrays", "<node>_<n>"] and a zero flow. */
static char *check_ta_handle(const cf_case_t *c, cf_array_t *const *outs, int n) {
  (void)c;
  if (n < 2 || !outs[0] || !outs[1]) return g_strdup("missing outputs");
  const cf_array_t *h = outs[0], *f = outs[1];
  if (h->dtype != WEFT_DT_STRING || h->rank != 1 || h->dims[0] != 2)
    return g_strdup("the handle is not a string vector of 2");
  if (strcmp(h->s[0]->str, "_tensor_arrays") != 0)
    return g_strdup_printf("handle container '%s'", h->s[0]->str);
  if (!g_str_has_prefix(h->s[1]->str, "op_under_test_"))
    return g_strdup_printf("handle name '%s'", h->s[1]->str);
  if (f->dtype != WEFT_DT_FLOAT || f->rank != 0 || f->v[0] != 0)
    return g_strdup("the flow is not a float scalar 0");
  return NULL;
}

static cf_array_t *handle(const char *container, const char *name, int64_t n) {
  cf_array_t *h = cf_array_new(WEFT_DT_STRING, 1, &n);
  for (int64_t k = 0; k < n; k++) g_string_assign(h->s[k], k == 0 ? container : name);
  return h;
}

static void emit_ta_create(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  if (!cf_supported(ctx, op, "dtype", dt)) return;
  cf_rng_t rng;
  for (int size = 0; size <= 3; size += 3) {
    cf_case_t *c = new_case(op, size ? "size_3" : "size_0", dt, &rng);
    cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, size));
    cf_case_attr_type(c, "dtype", dt);
    cf_case_expect(c, NULL);
    cf_case_expect(c, NULL);
    c->check = check_ta_handle;
    cf_run_case(ctx, c);
  }
  if (dt != WEFT_DT_FLOAT) return;
  cf_case_t *c = new_case(op, "negative_size", dt, &rng);
  cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, -1));
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT, "Size should be >= 0.");
  cf_run_case(ctx, c);
  c = new_case(op, "size_not_scalar", dt, &rng);
  int si = cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, (const int64_t[]){1, 2}));
  c->unknown_shape[si] = true;
  cf_case_attr_type(c, "dtype", dt);
  cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                       "TensorArray size must be scalar, but had shape: [2]");
  cf_run_case(ctx, c);
}

/* Every op that takes a handle, given one that names no array: NOT_FOUND. The inputs after the
 * handle: 'i' an int32 scalar index, 'v' an int32 vector of indices, 'x' a float [2, 3] value,
 * 'l' int64 lengths [1, 1], 'f' the float flow. */
static void emit_ta_missing(cf_run_ctx_t *ctx, const char *op, weft_dtype_t dt) {
  static const struct {
    const char *op, *inputs, *type_attr;
  } ops[] = {
      {"TensorArrayReadV3", "if", "dtype"},   {"TensorArrayWriteV3", "ixf", "T"},
      {"TensorArrayGatherV3", "vf", "dtype"}, {"TensorArrayScatterV3", "vxf", "T"},
      {"TensorArrayConcatV3", "f", "dtype"},  {"TensorArraySplitV3", "xlf", "T"},
      {"TensorArraySizeV3", "f", NULL},       {"TensorArrayCloseV3", "", NULL},
      {"TensorArrayGradV3", "f", NULL},
  };
  (void)dt;
  for (size_t k = 0; k < G_N_ELEMENTS(ops); k++) {
    if (strcmp(ops[k].op, op) != 0) continue;
    for (int bad = 0; bad < 2; bad++) {
      cf_rng_t rng;
      cf_case_t *c = new_case(op, bad ? "malformed_handle" : "no_such_array",
                              ops[k].type_attr ? WEFT_DT_FLOAT : WEFT_DT_INVALID, &rng);
      int hi = cf_case_input(c, handle("_tensor_arrays", "missing", bad ? 3 : 2));
      if (bad) c->unknown_shape[hi] = true;
      int64_t d23[2] = {2, 3};
      for (const char *in = ops[k].inputs; *in; in++) {
        switch (*in) {
          case 'i': cf_case_input(c, cf_array_scalar(WEFT_DT_INT32, 0)); break;
          case 'v':
            cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, (const int64_t[]){0, 1}));
            break;
          case 'x': cf_case_input(c, cf_array_new(WEFT_DT_FLOAT, 2, d23)); break;
          case 'l':
            cf_case_input(c, cf_array_ints(WEFT_DT_INT64, 2, (const int64_t[]){1, 1}));
            break;
          default: cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 0)); break;
        }
      }
      if (ops[k].type_attr) cf_case_attr_type(c, ops[k].type_attr, WEFT_DT_FLOAT);
      if (strcmp(op, "TensorArrayGradV3") == 0) cf_case_attr_string(c, "source", "gradients");
      if (bad) {
        cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                             "Tensor array handle must be 2-element vector, but had shape: [3]");
      } else {
        cf_case_expect_error(c, WEFT_NOT_FOUND,
                             "Container _tensor_arrays does not exist. (Could not find resource: "
                             "_tensor_arrays/missing)");
      }
      cf_run_case(ctx, c);
    }
  }
  if (strcmp(op, "TensorArrayReadV3") == 0) {
    cf_rng_t rng;
    cf_case_t *c = new_case(op, "index_not_scalar", WEFT_DT_FLOAT, &rng);
    cf_case_input(c, handle("_tensor_arrays", "missing", 2));
    int ii = cf_case_input(c, cf_array_ints(WEFT_DT_INT32, 2, (const int64_t[]){0, 1}));
    c->unknown_shape[ii] = true;
    cf_case_input(c, cf_array_scalar(WEFT_DT_FLOAT, 0));
    cf_case_attr_type(c, "dtype", WEFT_DT_FLOAT);
    cf_case_expect_error(c, WEFT_INVALID_ARGUMENT,
                         "TensorArray index must be scalar, but had shape: [2]");
    cf_run_case(ctx, c);
  }
}

static const weft_dtype_t float_only[] = {WEFT_DT_FLOAT, WEFT_DT_INVALID};

const cf_suite_t cf_suites_control_flow[] = {
    {"TensorArrayV3", cf_dtypes_all, emit_ta_create, "dtype"},
    {"TensorArrayReadV3", float_only, emit_ta_missing, "dtype"},
    {"TensorArrayWriteV3", float_only, emit_ta_missing, NULL},
    {"TensorArrayGatherV3", float_only, emit_ta_missing, "dtype"},
    {"TensorArrayScatterV3", float_only, emit_ta_missing, NULL},
    {"TensorArrayConcatV3", float_only, emit_ta_missing, "dtype"},
    {"TensorArraySplitV3", float_only, emit_ta_missing, NULL},
    {"TensorArraySizeV3", cf_dtypes_none, emit_ta_missing, NULL},
    {"TensorArrayCloseV3", cf_dtypes_none, emit_ta_missing, NULL},
    {"TensorArrayGradV3", cf_dtypes_none, emit_ta_missing, NULL},
    {"Switch", cf_dtypes_all, emit_switch, NULL},
    {"RefSwitch", cf_dtypes_all, emit_ref_switch, NULL},
    {"Merge", cf_dtypes_all, emit_merge, NULL},
    {"LoopCond", cf_dtypes_none, emit_loop_cond, NULL},
    {"ControlTrigger", cf_dtypes_none, emit_control_trigger, NULL},
    {"Assert", cf_dtypes_none, emit_assert, NULL},
    {NULL, NULL, NULL, NULL},
};
