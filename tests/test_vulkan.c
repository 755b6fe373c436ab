/* Tests for the Vulkan backend plugin (plugins/vulkan) through the public API: the VULKAN device
 * is listed with its properties; every kernel, pinned to /device:VULKAN:0, matches the same graph
 * on /device:CPU:0 (elementwise within 1e-5 relative, reductions and products within 1e-4, sizes
 * 1, 7, 1023 and a 256x256 MatMul), with broadcasting, special values (NaN, infinities, signed
 * zeros, huge values), bool and int32 tensors, and multi-output ops; variables assigned and
 * updated on the device across runs; long chains and parallel branches (command batching, many
 * threads); cross-device inputs; soft placement of ops VULKAN lacks (int64, strings); /gpu:0
 * naming VULKAN:0; the memory_fraction cap (RESOURCE_EXHAUSTED naming the device and sizes); and
 * a machine without a Vulkan driver, where the plugin loads with zero devices and a reason.
 *
 * Without a VULKAN device (no loader, no driver) every test is skipped with the reason the
 * backend gave. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "weft/weft.h"

#define VK_DEV "/device:VULKAN:0"
#define CPU_DEV "/device:CPU:0"
#define VK_FULL "/job:localhost/replica:0/task:0/device:VULKAN:0"
#define CPU_FULL "/job:localhost/replica:0/task:0/device:CPU:0"

#define OK(expr)                                                   \
  do {                                                             \
    weft_status_t *st_ = (expr);                                   \
    if (st_) g_error("%s: %s", #expr, weft_status_message(st_));   \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Device presence */

static const weft_device_info_t *vulkan_device(void) {
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (d && strcmp(d->device_type, "VULKAN") == 0 && d->ordinal == 0) return d;
  }
  return NULL;
}

/* Skips the current test (true) when there is no VULKAN device, saying why. */
static bool no_vulkan(void) {
  if (vulkan_device()) return false;
  const char **reasons = NULL;
  int n = weft_backends_without_devices(&reasons);
  GString *why = g_string_new("no VULKAN device");
  for (int i = 0; i < n; i++)
    if (g_str_has_prefix(reasons[i], "VULKAN")) g_string_append_printf(why, " (%s)", reasons[i]);
  if (n == 0 || !strstr(why->str, "(")) g_string_append(why, " (Vulkan plugin not loaded)");
  g_test_skip(why->str);
  g_string_free(why, TRUE);
  return true;
}

/* ---------------------------------------------------------------------------------------------
 * Data */

static guint64 rng_state = 0x9e3779b97f4a7c15ull;

static double rnd(double lo, double hi) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  double u = (double)(rng_state >> 11) / 9007199254740992.0;
  return lo + (hi - lo) * u;
}

static weft_tensor_t *rand_f32(int rank, const int64_t *dims, double lo, double hi) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) p[i] = (float)rnd(lo, hi);
  return t;
}

static weft_tensor_t *rand_i32(int rank, const int64_t *dims, int lo, int hi) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, rank, dims);
  int32_t *p = weft_tensor_data(t);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) p[i] = (int32_t)floor(rnd(lo, hi + 1));
  return t;
}

static weft_tensor_t *rand_bool(int rank, const int64_t *dims) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_BOOL, rank, dims);
  uint8_t *p = weft_tensor_data(t);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) p[i] = rnd(0, 1) < 0.5;
  return t;
}

static weft_tensor_t *vec_f32(int n, const float *v) {
  int64_t d[1] = {n};
  return weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d, v, sizeof(float) * (size_t)n, NULL);
}

static weft_tensor_t *vec_i32(int n, const int32_t *v) {
  int64_t d[1] = {n};
  return weft_tensor_new_from_data(WEFT_DT_INT32, 1, d, v, sizeof(int32_t) * (size_t)n, NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Running one op on a device */

typedef void (*attrs_fn)(weft_op_builder_t *b, const void *arg);

typedef struct op_run {
  const char *op;
  weft_tensor_t *const *ins; /* each becomes a Const input */
  int n_ins;
  attrs_fn attrs;
  const void *arg;
  const char *input_device; /* where the Consts go; NULL: with the op */
  int list_len;             /* the first list_len inputs form one list argument (AddN, Pack) */
  int fetch_index;          /* which output to fetch */
} op_run_t;

#define RUN(OP, INS, N, ATTRS, ARG) \
  { .op = (OP), .ins = (INS), .n_ins = (N), .attrs = (ATTRS), .arg = (ARG) }

/* Builds the op on `device`, runs it, and returns output fetch_index (a new reference) or the
 * error. */
static weft_status_t *run_on(const char *device, const op_run_t *r, weft_tensor_t **out,
                             char **placed) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t ins[8];
  weft_graph_push_device(g, r->input_device ? r->input_device : device);
  for (int i = 0; i < r->n_ins && !st; i++) {
    char name[16];
    g_snprintf(name, sizeof name, "in%d", i);
    ins[i] = weft_const(g, name, r->ins[i], &st);
  }
  weft_graph_pop_device(g);
  if (!st) {
    weft_graph_push_device(g, device);
    weft_op_builder_t *b = weft_op_new(g, r->op, "op");
    if (r->list_len > 0) weft_op_add_input_list(b, ins, r->list_len);
    for (int i = r->list_len; i < r->n_ins; i++) weft_op_add_input(b, ins[i]);
    if (r->attrs) r->attrs(b, r->arg);
    st = weft_op_finish(b, NULL);
    weft_graph_pop_device(g);
  }
  weft_session_t *s = NULL;
  if (!st) s = weft_session_new(g, NULL, &st);
  if (!st) {
    char fetch_name[16];
    g_snprintf(fetch_name, sizeof fetch_name, "op:%d", r->fetch_index);
    const char *fetch[] = {fetch_name};
    st = weft_session_run(s, NULL, NULL, 0, fetch, out, 1, NULL, 0);
    if (placed) *placed = g_strdup(weft_session_node_device(s, "op"));
  }
  weft_session_free(s);
  weft_graph_free(g);
  return st;
}

static const char *dtype_of(weft_tensor_t *t) { return weft_dtype_name(weft_tensor_dtype(t)); }

static char *shape_str(weft_tensor_t *t) {
  GString *s = g_string_new("[");
  for (int d = 0; d < weft_tensor_rank(t); d++)
    g_string_append_printf(s, d ? ",%" G_GINT64_FORMAT : "%" G_GINT64_FORMAT, weft_tensor_dims(t)[d]);
  g_string_append(s, "]");
  return g_string_free(s, FALSE);
}

/* Compares element by element: floats within atol + rtol * |want| (NaN matching NaN, infinities
 * matching exactly), everything else exactly. Marks the test failed (and says where) if not. */
static bool same_values(const char *what, weft_tensor_t *got, weft_tensor_t *want, double rtol,
                        double atol) {
  char *gs = shape_str(got), *ws = shape_str(want);
  bool ok = weft_tensor_dtype(got) == weft_tensor_dtype(want) && strcmp(gs, ws) == 0;
  if (!ok) {
    g_test_message("%s: got %s%s, want %s%s", what, dtype_of(got), gs, dtype_of(want), ws);
    g_test_fail();
  }
  g_free(gs);
  g_free(ws);
  if (!ok) return false;
  bool is_float = weft_tensor_dtype(got) == WEFT_DT_FLOAT;
  for (int64_t i = 0; i < weft_tensor_num_elements(got); i++) {
    double a = weft_tensor_get_double(got, i), b = weft_tensor_get_double(want, i);
    bool good;
    if (!is_float) good = a == b;
    else if (isnan(b)) good = isnan(a);
    else if (isinf(b)) good = a == b;
    else good = !isnan(a) && fabs(a - b) <= atol + rtol * fabs(b);
    if (!good) {
      g_test_message("%s: element %" G_GINT64_FORMAT " is %.9g on VULKAN, %.9g on CPU", what, i, a,
                     b);
      g_test_fail();
      return false;
    }
  }
  return true;
}

/* Runs the op on VULKAN and on CPU and compares; checks it really ran on VULKAN. */
static bool check_op(const char *what, const op_run_t *r, double rtol, double atol) {
  weft_tensor_t *got = NULL, *want = NULL;
  char *placed = NULL;
  weft_status_t *st = run_on(VK_DEV, r, &got, &placed);
  if (st) {
    g_test_message("%s on VULKAN: %s", what, weft_status_message(st));
    g_test_fail();
    weft_status_free(st);
    return false;
  }
  OK(run_on(CPU_DEV, r, &want, NULL));
  if (g_strcmp0(placed, VK_FULL) != 0) {
    g_test_message("%s ran on %s", what, placed);
    g_test_fail();
  }
  bool ok = same_values(what, got, want, rtol, atol);
  g_free(placed);
  weft_tensor_unref(got);
  weft_tensor_unref(want);
  return ok;
}

static void set_dst_t(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_type(b, "DstT", *(const weft_dtype_t *)arg);
}

static void set_string(weft_op_builder_t *b, const void *arg) {
  const char *const *kv = arg;
  weft_op_set_attr_string(b, kv[0], kv[1]);
}

/* ---------------------------------------------------------------------------------------------
 * The device */

static void test_device_listed(void) {
  if (no_vulkan()) return;
  const weft_device_info_t *d = vulkan_device();
  g_assert_cmpstr(d->name, ==, VK_FULL);
  g_assert_true(d->gpu_like);
  g_assert_cmpuint(strlen(d->description), >, 0);
  g_assert_cmpuint(d->memory_bytes, >, 0);
  /* gpu-like devices come first in placement order. */
  g_assert_cmpstr(weft_devices_get(0)->device_type, !=, "CPU");
  const char **reasons = NULL;
  int n = weft_backends_without_devices(&reasons);
  for (int i = 0; i < n; i++) g_assert_false(g_str_has_prefix(reasons[i], "VULKAN"));
  bool listed = false;
  for (int i = 0; i < weft_plugins_count(); i++) {
    const weft_plugin_record_t *r = weft_plugins_get(i);
    if (r->name && strcmp(r->name, "vulkan") == 0) {
      listed = true;
      g_assert_null(r->error);
      g_assert_cmpstr(r->device_types, ==, "VULKAN");
      g_assert_cmpint(r->n_kernels, >, 50);
    }
  }
  g_assert_true(listed);
}

/* ---------------------------------------------------------------------------------------------
 * Elementwise */

typedef struct unary_case {
  const char *op;
  double lo, hi;
  bool ints;
} unary_case_t;

static const unary_case_t unary_cases[] = {
    {"Neg", -10, 10, true},    {"Abs", -10, 10, true},      {"Square", -10, 10, true},
    {"Sqrt", 0, 100, false},   {"Rsqrt", 0.01, 100, false}, {"Exp", -20, 20, false},
    {"Log", 1e-3, 1e3, false}, {"Log1p", -0.9, 10, false},  {"Expm1", -5, 5, false},
    {"Sign", -2, 2, true},     {"Reciprocal", 0.1, 10, false}, {"Inv", -10, -0.1, false},
    {"Floor", -10, 10, false}, {"Ceil", -10, 10, false},    {"Round", -10, 10, true},
    {"Sin", -10, 10, false},   {"Cos", -10, 10, false},     {"Tan", -1.5, 1.5, false},
    {"Asin", -0.99, 0.99, false}, {"Acos", -0.99, 0.99, false}, {"Atan", -10, 10, false},
    {"Sinh", -5, 5, false},    {"Cosh", -5, 5, false},      {"Asinh", -10, 10, false},
    {"Acosh", 1, 10, false},   {"Atanh", -0.99, 0.99, false}, {"Tanh", -10, 10, false},
    {"Sigmoid", -20, 20, false}, {"Erf", -3, 3, false},     {"Relu", -5, 5, true},
    {"Relu6", -2, 8, true},    {"Elu", -5, 5, false},       {"Selu", -5, 5, false},
    {"LeakyRelu", -5, 5, false}, {"Softplus", -20, 20, false}, {"Softsign", -5, 5, false},
};

static void test_unary(void) {
  if (no_vulkan()) return;
  static const int64_t sizes[] = {1, 7, 1023};
  for (size_t c = 0; c < G_N_ELEMENTS(unary_cases); c++) {
    const unary_case_t *u = &unary_cases[c];
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
      weft_tensor_t *x = rand_f32(1, &sizes[s], u->lo, u->hi);
      op_run_t r = RUN(u->op, &x, 1, NULL, NULL);
      char what[64];
      g_snprintf(what, sizeof what, "%s float32[%" G_GINT64_FORMAT "]", u->op, sizes[s]);
      check_op(what, &r, 1e-5, 1e-6);
      weft_tensor_unref(x);
      if (u->ints) {
        weft_tensor_t *xi = rand_i32(1, &sizes[s], (int)u->lo, (int)u->hi);
        op_run_t ri = RUN(u->op, &xi, 1, NULL, NULL);
        g_snprintf(what, sizeof what, "%s int32[%" G_GINT64_FORMAT "]", u->op, sizes[s]);
        check_op(what, &ri, 0, 0);
        weft_tensor_unref(xi);
      }
    }
  }
  /* A 2-D input keeps its shape. */
  int64_t d2[2] = {33, 31};
  weft_tensor_t *x = rand_f32(2, d2, -3, 3);
  op_run_t r = RUN("Tanh", &x, 1, NULL, NULL);
  check_op("Tanh float32[33,31]", &r, 1e-5, 1e-6);
  weft_tensor_unref(x);
}

/* NaN, infinities, signed zeros and huge values go through like on the CPU. */
static void test_special_values(void) {
  if (no_vulkan()) return;
  const float v[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 3.0e38f, -3.0e38f, 1.0f, -1.0f,
                     100.0f, -100.0f, 1e-30f};
  static const char *const ops[] = {
      "Neg", "Abs", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Log1p", "Expm1", "Sign",
      "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos", "Atan", "Sinh", "Cosh", "Tanh",
      "Sigmoid", "Erf", "Relu", "Relu6", "Elu", "Softplus", "Softsign", "Asinh",
  };
  weft_tensor_t *x = vec_f32(G_N_ELEMENTS(v), v);
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    op_run_t r = RUN(ops[i], &x, 1, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "%s on special values", ops[i]);
    check_op(what, &r, 1e-5, 1e-6);
  }
  static const char *const bool_ops[] = {"IsNan", "IsInf", "IsFinite"};
  for (size_t i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
    op_run_t r = RUN(bool_ops[i], &x, 1, NULL, NULL);
    check_op(bool_ops[i], &r, 0, 0);
  }
  /* Binary ops with NaN and infinities on both sides. */
  const float a[] = {NAN, 1.0f, INFINITY, -INFINITY, 0.0f, 2.0f, -2.0f, 0.0f, -0.0f, 5.0f};
  const float b[] = {1.0f, NAN, INFINITY, 2.0f, 0.0f, INFINITY, 0.5f, -3.0f, -1.0f, 0.0f};
  weft_tensor_t *ab[2] = {vec_f32(10, a), vec_f32(10, b)};
  static const char *const bin[] = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
                                    "SquaredDifference", "Equal", "NotEqual", "Less",
                                    "LessEqual", "Greater", "GreaterEqual"};
  for (size_t i = 0; i < G_N_ELEMENTS(bin); i++) {
    op_run_t r = RUN(bin[i], ab, 2, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "%s on special values", bin[i]);
    check_op(what, &r, 1e-5, 0);
  }
  weft_tensor_unref(ab[0]);
  weft_tensor_unref(ab[1]);
  weft_tensor_unref(x);
}

typedef struct shape_pair {
  int ra;
  int64_t a[4];
  int rb;
  int64_t b[4];
} shape_pair_t;

static const shape_pair_t bcast_shapes[] = {
    {1, {1}, 1, {1}},           {1, {7}, 1, {7}},          {1, {1023}, 0, {0}},
    {0, {0}, 1, {7}},           {3, {3, 1, 5}, 2, {4, 1}}, {3, {2, 3, 4}, 2, {3, 1}},
    {1, {1}, 3, {5, 1, 3}},     {2, {16, 64}, 1, {64}},    {4, {2, 1, 3, 1}, 4, {1, 4, 1, 5}},
};

static void test_binary_broadcast(void) {
  if (no_vulkan()) return;
  static const char *const float_ops[] = {"AddV2", "Add", "Sub", "Mul", "RealDiv", "Div",
                                          "Maximum", "Minimum", "Pow", "SquaredDifference"};
  static const char *const int_ops[] = {"AddV2", "Sub", "Mul", "Maximum", "Minimum",
                                        "SquaredDifference"};
  static const char *const cmp_ops[] = {"Equal", "NotEqual", "Less", "LessEqual", "Greater",
                                        "GreaterEqual"};
  for (size_t s = 0; s < G_N_ELEMENTS(bcast_shapes); s++) {
    const shape_pair_t *sp = &bcast_shapes[s];
    for (size_t i = 0; i < G_N_ELEMENTS(float_ops); i++) {
      bool pow = strcmp(float_ops[i], "Pow") == 0;
      weft_tensor_t *in[2] = {rand_f32(sp->ra, sp->a, pow ? 0.1 : -10, 10),
                              rand_f32(sp->rb, sp->b, pow ? -3 : -10, pow ? 3 : 10)};
      op_run_t r = RUN(float_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s float32 shapes #%zu", float_ops[i], s);
      check_op(what, &r, 1e-5, 1e-6);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(int_ops); i++) {
      weft_tensor_t *in[2] = {rand_i32(sp->ra, sp->a, -1000, 1000),
                              rand_i32(sp->rb, sp->b, -1000, 1000)};
      op_run_t r = RUN(int_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s int32 shapes #%zu", int_ops[i], s);
      check_op(what, &r, 0, 0);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cmp_ops); i++) {
      /* small integers as floats, so that equal pairs occur */
      weft_tensor_t *in[2] = {rand_i32(sp->ra, sp->a, -3, 3), rand_i32(sp->rb, sp->b, -3, 3)};
      op_run_t r = RUN(cmp_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s int32 shapes #%zu", cmp_ops[i], s);
      check_op(what, &r, 0, 0);
      weft_dtype_t f = WEFT_DT_FLOAT;
      op_run_t cast0 = RUN("Cast", &in[0], 1, set_dst_t, &f);
      op_run_t cast1 = RUN("Cast", &in[1], 1, set_dst_t, &f);
      weft_tensor_t *fin[2] = {NULL, NULL};
      OK(run_on(CPU_DEV, &cast0, &fin[0], NULL));
      OK(run_on(CPU_DEV, &cast1, &fin[1], NULL));
      op_run_t rf = RUN(cmp_ops[i], fin, 2, NULL, NULL);
      g_snprintf(what, sizeof what, "%s float32 shapes #%zu", cmp_ops[i], s);
      check_op(what, &rf, 0, 0);
      weft_tensor_unref(fin[0]);
      weft_tensor_unref(fin[1]);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
    static const char *const bool_ops[] = {"LogicalAnd", "LogicalOr", "Equal", "NotEqual"};
    for (size_t i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
      weft_tensor_t *in[2] = {rand_bool(sp->ra, sp->a), rand_bool(sp->rb, sp->b)};
      op_run_t r = RUN(bool_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s bool shapes #%zu", bool_ops[i], s);
      check_op(what, &r, 0, 0);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
  }
  /* Incompatible shapes fail on VULKAN as on CPU. */
  int64_t d3[1] = {3}, d4[1] = {4};
  weft_tensor_t *bad[2] = {rand_f32(1, d3, 0, 1), rand_f32(1, d4, 0, 1)};
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t unknown[1] = {WEFT_DIM_UNKNOWN};
  weft_graph_push_device(g, VK_DEV);
  weft_output_t pa = weft_placeholder(g, "a", WEFT_DT_FLOAT, 1, unknown, &st);
  OK(st);
  weft_output_t pb = weft_placeholder(g, "b", WEFT_DT_FLOAT, 1, unknown, &st);
  OK(st);
  weft_binary(g, "AddV2", "sum", pa, pb, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(o, true); /* the placeholders */
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  const char *feeds[] = {"a", "b"}, *fetch[] = {"sum"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, feeds, bad, 2, fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "Incompatible shapes: [3] vs. [4]"));
  g_assert_nonnull(strstr(weft_status_message(st), "VULKAN:0"));
  weft_status_free(st);
  g_assert_cmpstr(weft_session_node_device(s, "sum"), ==, VK_FULL);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  weft_tensor_unref(bad[0]);
  weft_tensor_unref(bad[1]);
}

static void test_logic_select_clip(void) {
  if (no_vulkan()) return;
  int64_t d[2] = {5, 7}, d7[1] = {7}, d5[1] = {5};
  weft_tensor_t *b = rand_bool(2, d);
  op_run_t r = RUN("LogicalNot", &b, 1, NULL, NULL);
  check_op("LogicalNot bool[5,7]", &r, 0, 0);
  weft_tensor_t *sel[3] = {b, rand_f32(2, d, -1, 1), rand_f32(2, d, -1, 1)};
  op_run_t rs = RUN("Select", sel, 3, NULL, NULL);
  check_op("Select same shapes", &rs, 0, 0);
  weft_tensor_t *cv = rand_bool(1, d5);
  weft_tensor_t *sel_v[3] = {cv, sel[1], sel[2]};
  op_run_t rsv = RUN("Select", sel_v, 3, NULL, NULL);
  check_op("Select vector condition", &rsv, 0, 0);
  weft_tensor_t *c7 = rand_bool(1, d7);
  weft_tensor_t *sel2[3] = {c7, sel[1], rand_f32(0, NULL, -1, 1)};
  op_run_t rs2 = RUN("SelectV2", sel2, 3, NULL, NULL);
  check_op("SelectV2 broadcast", &rs2, 0, 0);
  weft_tensor_t *selb[3] = {c7, rand_bool(2, d), rand_bool(1, d7)};
  op_run_t rsb = RUN("SelectV2", selb, 3, NULL, NULL);
  check_op("SelectV2 bool", &rsb, 0, 0);
  weft_tensor_t *clip[3] = {rand_f32(2, d, -3, 3), rand_f32(0, NULL, -1, -1),
                            rand_f32(2, d, 0.5, 2)};
  op_run_t rc = RUN("ClipByValue", clip, 3, NULL, NULL);
  check_op("ClipByValue", &rc, 0, 0);
  weft_tensor_t *addn[3] = {sel[1], sel[2], clip[0]};
  op_run_t ra = RUN("AddN", addn, 3, NULL, NULL);
  ra.list_len = 3;
  check_op("AddN", &ra, 1e-6, 1e-6);
  weft_tensor_unref(b);
  weft_tensor_unref(sel[1]);
  weft_tensor_unref(sel[2]);
  weft_tensor_unref(cv);
  weft_tensor_unref(c7);
  weft_tensor_unref(sel2[2]);
  weft_tensor_unref(selb[1]);
  weft_tensor_unref(selb[2]);
  for (int i = 0; i < 3; i++) weft_tensor_unref(clip[i]);
}

static void test_cast(void) {
  if (no_vulkan()) return;
  const float fv[] = {0.0f, -0.0f, 1.5f, -1.5f, 2.9f, -2.9f, 1e10f, -1e10f, NAN, INFINITY,
                      -INFINITY, 2147483520.0f, -2147483648.0f, 0.25f};
  const int32_t iv[] = {0, 1, -1, 7, -123456, 2147483647, -2147483647 - 1, 16777217, 42};
  weft_tensor_t *f = vec_f32(G_N_ELEMENTS(fv), fv);
  weft_tensor_t *i = vec_i32(G_N_ELEMENTS(iv), iv);
  int64_t d[1] = {1023};
  weft_tensor_t *b = rand_bool(1, d);
  struct {
    weft_tensor_t *in;
    weft_dtype_t to;
  } cases[] = {
      {f, WEFT_DT_INT32}, {f, WEFT_DT_BOOL}, {f, WEFT_DT_FLOAT}, {i, WEFT_DT_FLOAT},
      {i, WEFT_DT_BOOL},  {b, WEFT_DT_FLOAT}, {b, WEFT_DT_INT32},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    op_run_t r = RUN("Cast", &cases[k].in, 1, set_dst_t, &cases[k].to);
    char what[64];
    g_snprintf(what, sizeof what, "Cast %s to %s", dtype_of(cases[k].in),
               weft_dtype_name(cases[k].to));
    check_op(what, &r, 0, 0);
  }
  weft_tensor_unref(f);
  weft_tensor_unref(i);
  weft_tensor_unref(b);
}

/* ---------------------------------------------------------------------------------------------
 * Products, reductions, NN */

typedef struct mm_case {
  int64_t m, k, n;
} mm_case_t;

static void set_transposes(weft_op_builder_t *b, const void *arg) {
  const bool *t = arg;
  weft_op_set_attr_bool(b, "transpose_a", t[0]);
  weft_op_set_attr_bool(b, "transpose_b", t[1]);
}

static void set_adj(weft_op_builder_t *b, const void *arg) {
  const char *const *kv = arg;
  weft_op_set_attr_bool(b, kv[0], kv[1][0] == '1');
  weft_op_set_attr_bool(b, kv[2], kv[3][0] == '1');
}

static void test_matmul(void) {
  if (no_vulkan()) return;
  static const mm_case_t cases[] = {
      {1, 1, 1}, {7, 7, 7}, {1, 1023, 1}, {3, 5, 1023}, {33, 65, 17}, {256, 256, 256}, {70, 1, 130},
  };
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    for (int t = 0; t < 4; t++) {
      bool tr[2] = {(t & 1) != 0, (t & 2) != 0};
      int64_t da[2] = {tr[0] ? cases[c].k : cases[c].m, tr[0] ? cases[c].m : cases[c].k};
      int64_t db[2] = {tr[1] ? cases[c].n : cases[c].k, tr[1] ? cases[c].k : cases[c].n};
      weft_tensor_t *in[2] = {rand_f32(2, da, -1, 1), rand_f32(2, db, -1, 1)};
      op_run_t r = RUN("MatMul", in, 2, set_transposes, tr);
      char what[96];
      g_snprintf(what, sizeof what, "MatMul %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                 " ta=%d tb=%d", cases[c].m, cases[c].k, cases[c].n, tr[0], tr[1]);
      check_op(what, &r, 1e-4, 1e-4);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
  }
  /* Batched: the batch broadcast from one side, from both sides over two dims, and adj_x (x's
   * [6, 7] matrices read as [7, 6]). */
  static const int64_t bx[][4] = {{4, 9, 11, 0}, {2, 1, 3, 4}, {5, 6, 7, 0}};
  static const int64_t by[][4] = {{1, 11, 6, 0}, {1, 3, 4, 5}, {6, 8, 0, 0}};
  static const int brx[] = {3, 4, 3}, bry[] = {3, 4, 2};
  static const char *const adj[][4] = {{"adj_x", "0", "adj_y", "0"}, {"adj_x", "0", "adj_y", "0"},
                                       {"adj_x", "1", "adj_y", "0"}};
  for (size_t c = 0; c < G_N_ELEMENTS(bx); c++) {
    int64_t dx[4], dy[4];
    memcpy(dx, bx[c], sizeof dx);
    memcpy(dy, by[c], sizeof dy);
    weft_tensor_t *in[2] = {rand_f32(brx[c], dx, -1, 1), rand_f32(bry[c], dy, -1, 1)};
    op_run_t r = RUN("BatchMatMulV2", in, 2, set_adj, adj[c]);
    char what[64];
    g_snprintf(what, sizeof what, "BatchMatMulV2 case #%zu", c);
    check_op(what, &r, 1e-4, 1e-4);
    weft_tensor_unref(in[0]);
    weft_tensor_unref(in[1]);
  }
}

typedef struct red_case {
  int rank;
  int64_t dims[4];
  int n_axes;
  int32_t axes[4];
} red_case_t;

static void set_keep_dims(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_bool(b, "keep_dims", *(const bool *)arg);
}

static const weft_dtype_t i64 = WEFT_DT_INT64, i32 = WEFT_DT_INT32;

static void set_output_type(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_type(b, "output_type", *(const weft_dtype_t *)arg);
}

static void test_reductions(void) {
  if (no_vulkan()) return;
  static const red_case_t cases[] = {
      {1, {1}, 1, {0}},           {1, {7}, 1, {0}},           {1, {1023}, 1, {0}},
      {2, {7, 1023}, 1, {1}},     {2, {7, 1023}, 1, {0}},     {2, {7, 1023}, 2, {0, 1}},
      {2, {1023, 3}, 1, {0}},     {2, {300, 20}, 1, {1}},     {3, {3, 4, 5}, 2, {0, 2}},
      {3, {3, 4, 5}, 1, {1}},     {3, {3, 4, 5}, 1, {-1}},    {3, {3, 4, 5}, 0, {0}},
      {4, {2, 3, 4, 5}, 2, {1, 3}}, {3, {3, 1, 5}, 1, {1}},   {2, {0, 4}, 1, {0}},
      {3, {2, 2000, 3}, 1, {1}},
  };
  static const char *const ops[] = {"Sum", "Mean", "Max", "Min", "Prod"};
  for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
    const red_case_t *rc = &cases[c];
    for (int keep = 0; keep < 2; keep++) {
      bool kd = keep != 0;
      weft_tensor_t *axes = vec_i32(rc->n_axes, rc->axes);
      for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        bool prod = strcmp(ops[o], "Prod") == 0;
        weft_tensor_t *x = prod ? rand_f32(rc->rank, rc->dims, 0.99, 1.01)
                                : rand_f32(rc->rank, rc->dims, -10, 10);
        weft_tensor_t *in[2] = {x, axes};
        op_run_t r = RUN(ops[o], in, 2, set_keep_dims, &kd);
        char what[96];
        g_snprintf(what, sizeof what, "%s float32 case #%zu keep_dims=%d", ops[o], c, keep);
        check_op(what, &r, 1e-4, 1e-4);
        weft_tensor_unref(x);
        if (strcmp(ops[o], "Mean") != 0) {
          weft_tensor_t *xi = prod ? rand_i32(rc->rank, rc->dims, -2, 2)
                                   : rand_i32(rc->rank, rc->dims, -1000, 1000);
          weft_tensor_t *ini[2] = {xi, axes};
          op_run_t ri = RUN(ops[o], ini, 2, set_keep_dims, &kd);
          g_snprintf(what, sizeof what, "%s int32 case #%zu keep_dims=%d", ops[o], c, keep);
          check_op(what, &ri, 0, 0);
          weft_tensor_unref(xi);
        }
      }
      static const char *const bool_ops[] = {"All", "Any"};
      for (size_t o = 0; o < G_N_ELEMENTS(bool_ops); o++) {
        weft_tensor_t *xb = rand_bool(rc->rank, rc->dims);
        weft_tensor_t *in[2] = {xb, axes};
        op_run_t r = RUN(bool_ops[o], in, 2, set_keep_dims, &kd);
        char what[96];
        g_snprintf(what, sizeof what, "%s bool case #%zu keep_dims=%d", bool_ops[o], c, keep);
        check_op(what, &r, 0, 0);
        weft_tensor_unref(xb);
      }
      weft_tensor_unref(axes);
    }
  }
  /* ArgMax / ArgMin along either axis, int64 and int32 indices, NaN winning; L2Loss. */
  int64_t da[2] = {7, 1023};
  weft_tensor_t *xa = rand_f32(2, da, -10, 10);
  ((float *)weft_tensor_data(xa))[5 * 1023 + 17] = NAN;
  weft_tensor_t *xai = rand_i32(2, da, -50, 50);
  static const char *const arg_ops[] = {"ArgMax", "ArgMin"};
  for (size_t o = 0; o < G_N_ELEMENTS(arg_ops); o++) {
    for (int axis = -1; axis < 2; axis++) {
      weft_tensor_t *dim = weft_tensor_new_scalar_int32(axis);
      for (int k = 0; k < 2; k++) {
        weft_tensor_t *in[2] = {k == 0 ? xa : xai, dim};
        op_run_t r = RUN(arg_ops[o], in, 2, set_output_type, k == 0 ? &i64 : &i32);
        char what[64];
        g_snprintf(what, sizeof what, "%s %s axis %d", arg_ops[o], dtype_of(in[0]), axis);
        check_op(what, &r, 0, 0);
      }
      weft_tensor_unref(dim);
    }
  }
  weft_tensor_t *xl = rand_f32(2, da, -1, 1);
  op_run_t rl2 = RUN("L2Loss", &xl, 1, NULL, NULL);
  check_op("L2Loss", &rl2, 1e-5, 0);
  weft_tensor_unref(xl);
  weft_tensor_unref(xa);
  weft_tensor_unref(xai);

  /* A large full sum stays accurate (compensated summation). */
  int64_t big[1] = {1 << 20};
  weft_tensor_t *x = rand_f32(1, big, 0, 1);
  int32_t zero = 0;
  weft_tensor_t *axes = vec_i32(1, &zero);
  weft_tensor_t *in[2] = {x, axes};
  bool kd = false;
  op_run_t r = RUN("Sum", in, 2, set_keep_dims, &kd);
  check_op("Sum float32[1048576]", &r, 1e-5, 0);
  weft_tensor_unref(x);
  weft_tensor_unref(axes);
}

static void test_nn(void) {
  if (no_vulkan()) return;
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 7, 0}, {5, 1023, 0}, {3, 4, 5}};
  static const int ranks[] = {2, 2, 2, 3};
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
    weft_tensor_t *x = rand_f32(ranks[s], shapes[s], -20, 20);
    op_run_t r = RUN("Softmax", &x, 1, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "Softmax shape #%zu", s);
    check_op(what, &r, 1e-4, 1e-6);
    op_run_t rl = RUN("LogSoftmax", &x, 1, NULL, NULL);
    g_snprintf(what, sizeof what, "LogSoftmax shape #%zu", s);
    check_op(what, &rl, 1e-4, 1e-5);
    weft_tensor_unref(x);
  }
  int64_t dx[4] = {2, 3, 4, 5}, dc[1] = {5}, dn[1] = {3};
  weft_tensor_t *nhwc[2] = {rand_f32(4, dx, -1, 1), rand_f32(1, dc, -1, 1)};
  op_run_t r = RUN("BiasAdd", nhwc, 2, NULL, NULL);
  check_op("BiasAdd NHWC", &r, 1e-6, 1e-6);
  weft_tensor_t *nchw[2] = {nhwc[0], rand_f32(1, dn, -1, 1)};
  static const char *const fmt[] = {"data_format", "NCHW"};
  op_run_t rn = RUN("BiasAdd", nchw, 2, set_string, fmt);
  check_op("BiasAdd NCHW", &rn, 1e-6, 1e-6);
  op_run_t rg = RUN("BiasAddGrad", nhwc, 1, NULL, NULL);
  check_op("BiasAddGrad NHWC", &rg, 1e-4, 1e-5);
  op_run_t rgn = RUN("BiasAddGrad", nchw, 1, set_string, fmt);
  check_op("BiasAddGrad NCHW", &rgn, 1e-4, 1e-5);
  weft_tensor_t *gi[2] = {nhwc[0], rand_f32(4, dx, -1, 1)};
  static const char *const grads[] = {"ReluGrad", "SigmoidGrad", "TanhGrad"};
  for (size_t i = 0; i < G_N_ELEMENTS(grads); i++) {
    op_run_t rr = RUN(grads[i], gi, 2, NULL, NULL);
    check_op(grads[i], &rr, 1e-5, 1e-6);
  }
  weft_tensor_unref(gi[1]);
  weft_tensor_unref(nhwc[0]);
  weft_tensor_unref(nhwc[1]);
  weft_tensor_unref(nchw[1]);
}

/* ---------------------------------------------------------------------------------------------
 * Shapes and data movement */

static void set_num_split(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_int(b, "num_split", *(const int *)arg);
}

static void set_num(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_int(b, "num", *(const int *)arg);
}

static void set_axis(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_int(b, "axis", *(const int *)arg);
}

static void test_shapes_and_transpose(void) {
  if (no_vulkan()) return;
  int64_t d[3] = {3, 4, 5};
  weft_tensor_t *xs[3] = {rand_f32(3, d, -1, 1), rand_i32(3, d, -100, 100), rand_bool(3, d)};
  const int32_t perms[][3] = {{2, 0, 1}, {1, 0, 2}, {0, 1, 2}, {2, 1, 0}};
  for (int t = 0; t < 3; t++) {
    for (size_t p = 0; p < G_N_ELEMENTS(perms); p++) {
      weft_tensor_t *perm = vec_i32(3, perms[p]);
      weft_tensor_t *in[2] = {xs[t], perm};
      op_run_t r = RUN("Transpose", in, 2, NULL, NULL);
      char what[64];
      g_snprintf(what, sizeof what, "Transpose %s perm #%zu", dtype_of(xs[t]), p);
      check_op(what, &r, 0, 0);
      weft_tensor_unref(perm);
    }
    const int32_t shape[] = {5, -1};
    weft_tensor_t *sv = vec_i32(2, shape);
    weft_tensor_t *rin[2] = {xs[t], sv};
    op_run_t rr = RUN("Reshape", rin, 2, NULL, NULL);
    check_op("Reshape", &rr, 0, 0);
    weft_tensor_unref(sv);
    weft_tensor_t *dim = weft_tensor_new_scalar_int32(-1);
    weft_tensor_t *ein[2] = {xs[t], dim};
    op_run_t re = RUN("ExpandDims", ein, 2, NULL, NULL);
    check_op("ExpandDims", &re, 0, 0);
    weft_tensor_unref(dim);
    op_run_t ri = RUN("Identity", &xs[t], 1, NULL, NULL);
    check_op("Identity", &ri, 0, 0);
    op_run_t rz = RUN("ZerosLike", &xs[t], 1, NULL, NULL);
    check_op("ZerosLike", &rz, 0, 0);
  }
  int64_t ds[4] = {3, 1, 5, 1};
  weft_tensor_t *sq = rand_f32(4, ds, -1, 1);
  op_run_t rs = RUN("Squeeze", &sq, 1, NULL, NULL);
  check_op("Squeeze", &rs, 0, 0);
  op_run_t ro = RUN("OnesLike", &sq, 1, NULL, NULL);
  check_op("OnesLike", &ro, 0, 0);
  /* BroadcastTo and Fill. */
  int64_t d31[2] = {3, 1};
  weft_tensor_t *small = rand_f32(2, d31, -1, 1);
  const int32_t target[] = {2, 3, 4};
  weft_tensor_t *tv = vec_i32(3, target);
  weft_tensor_t *bin[2] = {small, tv};
  op_run_t rb = RUN("BroadcastTo", bin, 2, NULL, NULL);
  check_op("BroadcastTo", &rb, 0, 0);
  weft_tensor_t *fill_vals[3] = {weft_tensor_new_scalar_float(2.5f), weft_tensor_new_scalar_int32(-7),
                                 weft_tensor_new(WEFT_DT_BOOL, 0, NULL)};
  ((uint8_t *)weft_tensor_data(fill_vals[2]))[0] = 1;
  for (int k = 0; k < 3; k++) {
    weft_tensor_t *fin[2] = {tv, fill_vals[k]};
    op_run_t rf = RUN("Fill", fin, 2, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "Fill %s", dtype_of(fill_vals[k]));
    check_op(what, &rf, 0, 0);
    weft_tensor_unref(fill_vals[k]);
  }
  weft_tensor_unref(small);
  weft_tensor_unref(tv);
  weft_tensor_unref(sq);
  /* Slice, Tile (all three dtypes); ConcatV2, Pack, Pad (float32, int32); Shape, Size, Rank. */
  const int32_t begin[] = {1, 0, 2}, size[] = {2, -1, 3}, mult[] = {2, 1, 3};
  const int32_t pads[] = {1, 0, 0, 2, 3, 1};
  int64_t dp[2] = {3, 2};
  weft_tensor_t *bv = vec_i32(3, begin), *sv = vec_i32(3, size), *mv = vec_i32(3, mult);
  weft_tensor_t *pv = weft_tensor_new_from_data(WEFT_DT_INT32, 2, dp, pads, sizeof pads, NULL);
  for (int t = 0; t < 3; t++) {
    weft_tensor_t *sl[3] = {xs[t], bv, sv};
    op_run_t r1 = RUN("Slice", sl, 3, NULL, NULL);
    check_op("Slice", &r1, 0, 0);
    weft_tensor_t *ti[2] = {xs[t], mv};
    op_run_t r2 = RUN("Tile", ti, 2, NULL, NULL);
    check_op("Tile", &r2, 0, 0);
    static const char *const shape_ops[] = {"Shape", "Size", "Rank"};
    for (size_t k = 0; k < G_N_ELEMENTS(shape_ops); k++) {
      op_run_t r3 = RUN(shape_ops[k], &xs[t], 1, NULL, NULL);
      check_op(shape_ops[k], &r3, 0, 0);
    }
    /* Split into 2 along axis 1, SplitV [1, -1, 2] along axis 2, Unpack along axis 0. */
    weft_tensor_t *one = weft_tensor_new_scalar_int32(1), *two = weft_tensor_new_scalar_int32(2);
    weft_tensor_t *sp[2] = {one, xs[t]};
    const int32_t parts[] = {1, -1, 2};
    weft_tensor_t *pv3 = vec_i32(3, parts);
    weft_tensor_t *spv[3] = {xs[t], pv3, two};
    for (int out = 0; out < 3; out++) {
      op_run_t r7 = RUN("Split", sp, 2, set_num_split, (const int[]){2});
      r7.fetch_index = out < 2 ? out : 1;
      check_op("Split", &r7, 0, 0);
      op_run_t r8 = RUN("SplitV", spv, 3, set_num_split, (const int[]){3});
      r8.fetch_index = out;
      check_op("SplitV", &r8, 0, 0);
      op_run_t r9 = RUN("Unpack", &xs[t], 1, set_num, (const int[]){3});
      r9.fetch_index = out;
      check_op("Unpack", &r9, 0, 0);
    }
    weft_tensor_unref(one);
    weft_tensor_unref(two);
    weft_tensor_unref(pv3);
    if (t == 2) continue;
    int64_t d2[3] = {3, 2, 5};
    weft_tensor_t *other = t == 0 ? rand_f32(3, d2, -1, 1) : rand_i32(3, d2, -9, 9);
    weft_tensor_t *axis = weft_tensor_new_scalar_int32(1);
    weft_tensor_t *cc[4] = {xs[t], other, xs[t], axis};
    op_run_t r4 = RUN("ConcatV2", cc, 4, NULL, NULL);
    r4.list_len = 3;
    check_op("ConcatV2 axis 1", &r4, 0, 0);
    weft_tensor_unref(axis);
    weft_tensor_unref(other);
    weft_tensor_t *pk[3] = {xs[t], xs[t], xs[t]};
    for (int ax = -1; ax <= 3; ax++) {
      op_run_t r5 = RUN("Pack", pk, 3, set_axis, &ax);
      r5.list_len = 3;
      char what[32];
      g_snprintf(what, sizeof what, "Pack axis %d", ax);
      check_op(what, &r5, 0, 0);
    }
    weft_tensor_t *pa[2] = {xs[t], pv};
    op_run_t r6 = RUN("Pad", pa, 2, NULL, NULL);
    check_op("Pad", &r6, 0, 0);
  }
  weft_tensor_unref(bv);
  weft_tensor_unref(sv);
  weft_tensor_unref(mv);
  weft_tensor_unref(pv);
  for (int t = 0; t < 3; t++) weft_tensor_unref(xs[t]);
}

/* ---------------------------------------------------------------------------------------------
 * Variables */

static void test_variables(void) {
  if (no_vulkan()) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, VK_DEV);
  float init_v[4] = {1, 2, 3, 4};
  weft_tensor_t *init_t = vec_f32(4, init_v);
  weft_output_t init = weft_const(g, "v_init", init_t, &st);
  OK(st);
  weft_output_t read = weft_variable(g, "v", init, &st);
  OK(st);
  float step_v[4] = {0.5f, -1, 2, 10};
  weft_tensor_t *step_t = vec_f32(4, step_v);
  weft_output_t step = weft_const(g, "step", step_t, &st);
  OK(st);
  weft_output_t var = {weft_graph_node(g, "v"), 0};
  weft_binary(g, "AssignAdd", "add", var, step, &st);
  OK(st);
  weft_binary(g, "AssignSub", "sub", var, step, &st);
  OK(st);
  weft_binary(g, "Mul", "twice", read, weft_const_float(g, "two", 2.0f, &st), &st);
  OK(st);
  weft_op_builder_t *b = weft_op_new(g, "IsVariableInitialized", "is_init");
  weft_op_add_input(b, var);
  weft_op_set_attr_type(b, "dtype", WEFT_DT_FLOAT);
  OK(weft_op_finish(b, NULL));
  weft_node_t *init_all = weft_global_variables_initializer(g, "init", &st);
  OK(st);
  (void)init_all;
  weft_graph_pop_device(g);

  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *is_init[] = {"is_init"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, is_init, &out, 1, NULL, 0));
  g_assert_cmpint(((uint8_t *)weft_tensor_data(out))[0], ==, 0);
  weft_tensor_unref(out);
  const char *fetch_read[] = {"v/read"};
  st = weft_session_run(s, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_FAILED_PRECONDITION);
  weft_status_free(st);
  const char *targets[] = {"init"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
  OK(weft_session_run(s, NULL, NULL, 0, is_init, &out, 1, NULL, 0));
  g_assert_cmpint(((uint8_t *)weft_tensor_data(out))[0], ==, 1);
  weft_tensor_unref(out);
  const char *add[] = {"add"};
  for (int k = 0; k < 3; k++) OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, add, 1));
  const char *sub[] = {"sub"};
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, sub, 1));
  const char *fetches[] = {"v/read", "twice"};
  weft_tensor_t *outs[2] = {NULL, NULL};
  OK(weft_session_run(s, NULL, NULL, 0, fetches, outs, 2, NULL, 0));
  for (int i = 0; i < 4; i++) {
    float want = init_v[i] + 2 * step_v[i];
    g_assert_cmpfloat(((float *)weft_tensor_data(outs[0]))[i], ==, want);
    g_assert_cmpfloat(((float *)weft_tensor_data(outs[1]))[i], ==, 2 * want);
  }
  weft_tensor_unref(outs[0]);
  weft_tensor_unref(outs[1]);
  g_assert_cmpstr(weft_session_node_device(s, "v"), ==, VK_FULL);
  g_assert_cmpstr(weft_session_node_device(s, "add"), ==, VK_FULL);
  g_assert_cmpstr(weft_session_node_device(s, "v/Assign"), ==, VK_FULL);
  /* Re-initialising resets the value. */
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
  OK(weft_session_run(s, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0));
  g_assert_cmpfloat(((float *)weft_tensor_data(out))[3], ==, 4.0f);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(init_t);
  weft_tensor_unref(step_t);

  /* An int32 variable with a counter, updated on the device. */
  g = weft_graph_new();
  weft_graph_push_device(g, VK_DEV);
  weft_tensor_t *zero = weft_tensor_new_scalar_int32(0);
  weft_output_t zi = weft_const(g, "zero", zero, &st);
  OK(st);
  weft_variable(g, "counter", zi, &st);
  OK(st);
  weft_tensor_t *one = weft_tensor_new_scalar_int32(1);
  weft_output_t oi = weft_const(g, "one", one, &st);
  OK(st);
  weft_output_t cvar = {weft_graph_node(g, "counter"), 0};
  weft_binary(g, "AssignAdd", "inc", cvar, oi, &st);
  OK(st);
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
  weft_graph_pop_device(g);
  s = weft_session_new(g, NULL, &st);
  OK(st);
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
  const char *inc[] = {"inc"};
  for (int k = 0; k < 10; k++) {
    OK(weft_session_run(s, NULL, NULL, 0, inc, &out, 1, NULL, 0));
    weft_tensor_unref(out);
  }
  const char *cread[] = {"counter/read"};
  OK(weft_session_run(s, NULL, NULL, 0, cread, &out, 1, NULL, 0));
  g_assert_cmpint(((int32_t *)weft_tensor_data(out))[0], ==, 10);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(zero);
  weft_tensor_unref(one);
}

/* ---------------------------------------------------------------------------------------------
 * Execution: batching, threads, cross-device edges, placement */

static void test_long_chain_and_parallel(void) {
  if (no_vulkan()) return;
  /* 700 dependent adds: several command batches recorded and submitted without a host wait. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, VK_DEV);
  weft_output_t x = weft_const_float(g, "x", 0.0f, &st);
  OK(st);
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  for (int i = 0; i < 700; i++) {
    x = weft_binary(g, "AddV2", NULL, x, one, &st);
    OK(st);
  }
  weft_node_t *last = x.node;
  /* 8 independent branches, each 50 ops long, summed at the end. */
  weft_output_t branch_ends[8];
  for (int b = 0; b < 8; b++) {
    int64_t d[1] = {1000};
    weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, d);
    for (int i = 0; i < 1000; i++) ((float *)weft_tensor_data(t))[i] = (float)b;
    char name[32];
    g_snprintf(name, sizeof name, "start%d", b);
    weft_output_t y = weft_const(g, name, t, &st);
    OK(st);
    weft_tensor_unref(t);
    for (int i = 0; i < 50; i++) {
      y = weft_binary(g, "AddV2", NULL, y, one, &st);
      OK(st);
    }
    branch_ends[b] = y;
  }
  weft_op_builder_t *bld = weft_op_new(g, "AddN", "total");
  weft_op_add_input_list(bld, branch_ends, 8);
  OK(weft_op_finish(bld, NULL));
  weft_graph_pop_device(g);
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_inter_op_threads(o, 8);
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  const char *fetch[] = {weft_node_name(last), "total"};
  for (int run = 0; run < 3; run++) {
    weft_tensor_t *out[2] = {NULL, NULL};
    OK(weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0));
    g_assert_cmpfloat(((float *)weft_tensor_data(out[0]))[0], ==, 700.0f);
    /* sum over b of (b + 50) = 28 + 400 */
    g_assert_cmpfloat(((float *)weft_tensor_data(out[1]))[999], ==, 428.0f);
    weft_tensor_unref(out[0]);
    weft_tensor_unref(out[1]);
  }
  g_assert_cmpstr(weft_session_node_device(s, "total"), ==, VK_FULL);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
}

static void test_cross_device_matmul(void) {
  if (no_vulkan()) return;
  int64_t da[2] = {40, 30}, db[2] = {30, 20};
  weft_tensor_t *a_t = rand_f32(2, da, -1, 1), *b_t = rand_f32(2, db, -1, 1);
  weft_tensor_t *results[2] = {NULL, NULL};
  for (int pass = 0; pass < 2; pass++) {
    weft_graph_t *g = weft_graph_new();
    weft_status_t *st = NULL;
    /* The operands are computed on the CPU (a Relu and a Tanh there). */
    weft_graph_push_device(g, CPU_DEV);
    weft_output_t a = weft_unary(g, "Relu", "a", weft_const(g, "a0", a_t, &st), &st);
    OK(st);
    weft_output_t b = weft_unary(g, "Tanh", "b", weft_const(g, "b0", b_t, &st), &st);
    OK(st);
    weft_graph_pop_device(g);
    weft_graph_push_device(g, pass == 0 ? VK_DEV : CPU_DEV);
    weft_output_t c = weft_matmul(g, "c", a, b, false, false, &st);
    OK(st);
    weft_graph_pop_device(g);
    /* ... and the product goes back to the CPU for one more op. */
    weft_graph_push_device(g, CPU_DEV);
    weft_unary(g, "Neg", "d", c, &st);
    OK(st);
    weft_graph_pop_device(g);
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    const char *fetch[] = {"d"};
    OK(weft_session_run(s, NULL, NULL, 0, fetch, &results[pass], 1, NULL, 0));
    g_assert_cmpstr(weft_session_node_device(s, "c"), ==, pass == 0 ? VK_FULL : CPU_FULL);
    g_assert_cmpstr(weft_session_node_device(s, "a"), ==, CPU_FULL);
    g_assert_cmpstr(weft_session_node_device(s, "d"), ==, CPU_FULL);
    weft_session_free(s);
    weft_graph_free(g);
  }
  same_values("MatMul of CPU operands", results[0], results[1], 1e-4, 1e-5);
  weft_tensor_unref(results[0]);
  weft_tensor_unref(results[1]);
  weft_tensor_unref(a_t);
  weft_tensor_unref(b_t);
}

static void test_soft_placement(void) {
  if (no_vulkan()) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, VK_DEV);
  int64_t d[1] = {3};
  weft_tensor_t *i64 = weft_tensor_new(WEFT_DT_INT64, 1, d);
  for (int i = 0; i < 3; i++) ((int64_t *)weft_tensor_data(i64))[i] = 10000000000LL + i;
  weft_output_t c = weft_const(g, "big", i64, &st);
  OK(st);
  weft_binary(g, "AddV2", "big_sum", c, c, &st);
  OK(st);
  weft_tensor_t *str = weft_tensor_new_string("hello", 5);
  weft_const(g, "greeting", str, &st);
  OK(st);
  weft_const_float(g, "f", 1.5f, &st);
  OK(st);
  weft_graph_pop_device(g);
  /* Without soft placement the int64 op cannot be pinned to VULKAN. */
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch[] = {"big_sum"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "no supported kernel for VULKAN devices"));
  weft_status_free(st);
  weft_session_free(s);
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(o, true);
  s = weft_session_new(g, o, &st);
  OK(st);
  const char *fetches[] = {"big_sum", "greeting", "f"};
  weft_tensor_t *outs[3] = {NULL, NULL, NULL};
  OK(weft_session_run(s, NULL, NULL, 0, fetches, outs, 3, NULL, 0));
  g_assert_cmpint(((int64_t *)weft_tensor_data(outs[0]))[2], ==, 20000000004LL);
  g_assert_cmpuint(((weft_string_t *)weft_tensor_data(outs[1]))[0].len, ==, 5);
  g_assert_cmpfloat(((float *)weft_tensor_data(outs[2]))[0], ==, 1.5f);
  g_assert_cmpstr(weft_session_node_device(s, "big_sum"), ==, CPU_FULL);
  g_assert_cmpstr(weft_session_node_device(s, "greeting"), ==, CPU_FULL);
  g_assert_cmpstr(weft_session_node_device(s, "f"), ==, VK_FULL);
  for (int i = 0; i < 3; i++) weft_tensor_unref(outs[i]);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  weft_tensor_unref(i64);
  weft_tensor_unref(str);
}

static void test_gpu_alias(void) {
  if (no_vulkan()) return;
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (d->gpu_like && strcmp(d->device_type, "VULKAN") != 0) {
      g_test_skip("another gpu-like backend outranks VULKAN here");
      return;
    }
  }
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/gpu:0");
  weft_output_t a = weft_const_float(g, "a", 3.0f, &st);
  OK(st);
  weft_unary(g, "Square", "sq", a, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_unary(g, "Neg", "unpinned", a, &st);
  OK(st);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch[] = {"sq", "unpinned"};
  weft_tensor_t *out[2] = {NULL, NULL};
  OK(weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0));
  g_assert_cmpfloat(((float *)weft_tensor_data(out[0]))[0], ==, 9.0f);
  g_assert_cmpfloat(((float *)weft_tensor_data(out[1]))[0], ==, -3.0f);
  g_assert_cmpstr(weft_session_node_device(s, "sq"), ==, VK_FULL);
  /* Unpinned ops prefer the first gpu-like device. */
  g_assert_cmpstr(weft_session_node_device(s, "unpinned"), ==, VK_FULL);
  weft_tensor_unref(out[0]);
  weft_tensor_unref(out[1]);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * In subprocesses: options fixed when the device first opens, and environments without Vulkan */

static void memory_cap_child(void) {
  if (!vulkan_device()) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, VK_DEV);
  weft_tensor_t *dims = vec_i32(1, (const int32_t[]){1 << 22});
  weft_output_t dv = weft_const(g, "dims", dims, &st);
  OK(st);
  weft_output_t v = weft_const_float(g, "v", 1.0f, &st);
  OK(st);
  weft_binary(g, "Fill", "big", dv, v, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_options_t *o = weft_session_options_new();
  /* A cap of a few MiB at most, far below the 16 MiB the fill needs. */
  double mem = (double)vulkan_device()->memory_bytes;
  weft_session_options_set_gpu_memory_fraction(o, (4.0 * 1024 * 1024) / mem);
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  const char *fetch[] = {"big"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  if (weft_status_code(st) != WEFT_RESOURCE_EXHAUSTED) g_error("got %s", weft_status_message(st));
  printf("%s\n", weft_status_message(st));
  weft_status_free(st);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
  weft_tensor_unref(dims);
}

static void test_memory_fraction(void) {
  if (no_vulkan()) return;
  g_test_trap_subprocess("/vulkan/subprocess/memory_cap", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stdout("*VULKAN:0*");
  g_test_trap_assert_stdout("*out of device memory allocating 16777216 bytes*bytes in use*");
}

static void no_driver_child(void) {
  /* Before anything loads the plugins: point the Vulkan loader at a driver list that does not
   * exist, so it finds no driver. */
  g_unsetenv("WEFT_VULKAN_DISABLE");
  g_setenv("VK_ICD_FILENAMES", "/nonexistent/weft-no-icd.json", TRUE);
  g_setenv("VK_DRIVER_FILES", "/nonexistent/weft-no-icd.json", TRUE);
  g_assert_null(vulkan_device());
  const char **reasons = NULL;
  int n = weft_backends_without_devices(&reasons);
  bool found = false;
  for (int i = 0; i < n; i++) {
    if (g_str_has_prefix(reasons[i], "VULKAN: ")) {
      printf("%s\n", reasons[i]);
      found = true;
    }
  }
  g_assert_true(found);
  bool loaded = false;
  for (int i = 0; i < weft_plugins_count(); i++) {
    const weft_plugin_record_t *r = weft_plugins_get(i);
    if (r->name && strcmp(r->name, "vulkan") == 0) loaded = r->error == NULL;
  }
  g_assert_true(loaded);
  /* /gpu:0 has nothing to name; soft placement puts the op on the CPU. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, "/gpu:0");
  weft_const_float(g, "a", 2.0f, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(o, true);
  weft_session_t *s = weft_session_new(g, o, &st);
  OK(st);
  const char *fetch[] = {"a"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpstr(weft_session_node_device(s, "a"), ==, CPU_FULL);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
}

static void test_no_driver(void) {
  bool plugin_built = g_file_test(WEFT_BUILD_DIR "/plugins/vulkan/libweft-vulkan.so",
                                  G_FILE_TEST_EXISTS);
  if (!plugin_built) {
    g_test_skip("the Vulkan plugin is not built (no Vulkan headers or glslc)");
    return;
  }
  g_test_trap_subprocess("/vulkan/subprocess/no_driver", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed();
  g_test_trap_assert_stdout("VULKAN: no Vulkan*");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  /* Plugins load on first use, so that a subprocess test can set its environment first. */
  g_test_add_func("/vulkan/device_listed", test_device_listed);
  g_test_add_func("/vulkan/unary", test_unary);
  g_test_add_func("/vulkan/special_values", test_special_values);
  g_test_add_func("/vulkan/binary_broadcast", test_binary_broadcast);
  g_test_add_func("/vulkan/logic_select_clip", test_logic_select_clip);
  g_test_add_func("/vulkan/cast", test_cast);
  g_test_add_func("/vulkan/matmul", test_matmul);
  g_test_add_func("/vulkan/reductions", test_reductions);
  g_test_add_func("/vulkan/nn", test_nn);
  g_test_add_func("/vulkan/shapes_and_transpose", test_shapes_and_transpose);
  g_test_add_func("/vulkan/variables", test_variables);
  g_test_add_func("/vulkan/long_chain_and_parallel", test_long_chain_and_parallel);
  g_test_add_func("/vulkan/cross_device_matmul", test_cross_device_matmul);
  g_test_add_func("/vulkan/soft_placement", test_soft_placement);
  g_test_add_func("/vulkan/gpu_alias", test_gpu_alias);
  g_test_add_func("/vulkan/memory_fraction", test_memory_fraction);
  g_test_add_func("/vulkan/no_driver", test_no_driver);
  g_test_add_func("/vulkan/subprocess/memory_cap", memory_cap_child);
  g_test_add_func("/vulkan/subprocess/no_driver", no_driver_child);
  return g_test_run();
}
