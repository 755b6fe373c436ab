/* Tests for the Vulkan backend plugin (plugins/vulkan) through the public API: the VULKAN device
 * is listed with its properties; every kernel, pinned to /device:VULKAN:0, matches the same graph
 * on /device:CPU:0 (elementwise within 1e-5 relative, reductions and products within 1e-4, sizes
 * 1, 7, 1023 and a 256x256 MatMul), with broadcasting, special values (NaN, infinities, signed
 * zeros, huge values), bool and int32 tensors, and multi-output ops; variables assigned and
 * updated on the device across runs; long chains and parallel branches (command batching, many
 * threads); cross-device inputs; soft placement of ops VULKAN lacks (int64, strings); /gpu:0
 * naming VULKAN:0; the memory_fraction cap (RESOURCE_EXHAUSTED naming the device and sizes); the
 * "weft.vulkan.2" device services other plugins' kernels use (a shader of the test's own run on
 * the backend's buffers, and every error path); a machine without a Vulkan driver, where the
 * plugin loads with zero devices and a reason; and, in the sanitizer build, leak checking that
 * stays on for Weft's memory while the driver is in use.
 *
 * Without a VULKAN device (no loader, no driver) every test is skipped with the reason the
 * backend gave. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plugin/plugin_internal.h"
#include "weft/vulkan.h"
#include "weft/weft.h"
#include "device_compare.h"

#define VK_DEV "/device:VULKAN:0"
#define VK_FULL "/job:localhost/replica:0/task:0/device:VULKAN:0"
/* ---------------------------------------------------------------------------------------------
 * Device presence */

static const weft_device_info_t *vulkan_device(void) { return dc_find_device("VULKAN"); }

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
 * The device */

static void test_device_listed(void) {
  if (no_vulkan()) return;
  const weft_device_info_t *d = vulkan_device();
  g_assert_cmpstr(d->name, ==, VK_FULL);
  g_assert_true(d->gpu_like);
  g_assert_cmpuint(strlen(d->description), >, 0);
  g_assert_cmpuint(d->memory_bytes, >, 0);
  /* A real GPU comes first in placement order; lavapipe (VkPhysicalDeviceType CPU) is an
   * emulation on the CPU and comes after it. */
  bool lavapipe = strstr(d->description, "llvmpipe") != NULL;
  g_assert_cmpint(d->emulated, ==, lavapipe);
  if (d->emulated) {
    g_assert_cmpstr(weft_devices_get(0)->device_type, ==, "CPU");
    g_assert_cmpstr(weft_devices_get(weft_devices_count() - 1)->device_type, ==, "VULKAN");
  } else {
    g_assert_cmpstr(weft_devices_get(0)->device_type, !=, "CPU");
  }
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

static void test_unary(void) {
  if (no_vulkan()) return;
  static const int64_t sizes[] = {1, 7, 1023};
  for (size_t c = 0; c < dc_n_unary_cases; c++) {
    const dc_unary_case_t *u = &dc_unary_cases[c];
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
      weft_tensor_t *x = dc_rand_f32(1, &sizes[s], u->lo, u->hi);
      op_run_t r = RUN(u->op, &x, 1, NULL, NULL);
      char what[64];
      g_snprintf(what, sizeof what, "%s float32[%" G_GINT64_FORMAT "]", u->op, sizes[s]);
      dc_check_op(what, &r, 1e-5, 1e-6);
      weft_tensor_unref(x);
      if (u->ints) {
        weft_tensor_t *xi = dc_rand_i32(1, &sizes[s], (int)u->lo, (int)u->hi);
        op_run_t ri = RUN(u->op, &xi, 1, NULL, NULL);
        g_snprintf(what, sizeof what, "%s int32[%" G_GINT64_FORMAT "]", u->op, sizes[s]);
        dc_check_op(what, &ri, 0, 0);
        weft_tensor_unref(xi);
      }
    }
  }
  /* A 2-D input keeps its shape. */
  int64_t d2[2] = {33, 31};
  weft_tensor_t *x = dc_rand_f32(2, d2, -3, 3);
  op_run_t r = RUN("Tanh", &x, 1, NULL, NULL);
  dc_check_op("Tanh float32[33,31]", &r, 1e-5, 1e-6);
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
  weft_tensor_t *x = dc_vec_f32(G_N_ELEMENTS(v), v);
  for (size_t i = 0; i < G_N_ELEMENTS(ops); i++) {
    op_run_t r = RUN(ops[i], &x, 1, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "%s on special values", ops[i]);
    dc_check_op(what, &r, 1e-5, 1e-6);
  }
  static const char *const bool_ops[] = {"IsNan", "IsInf", "IsFinite"};
  for (size_t i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
    op_run_t r = RUN(bool_ops[i], &x, 1, NULL, NULL);
    dc_check_op(bool_ops[i], &r, 0, 0);
  }
  /* Binary ops with NaN and infinities on both sides. */
  const float a[] = {NAN, 1.0f, INFINITY, -INFINITY, 0.0f, 2.0f, -2.0f, 0.0f, -0.0f, 5.0f};
  const float b[] = {1.0f, NAN, INFINITY, 2.0f, 0.0f, INFINITY, 0.5f, -3.0f, -1.0f, 0.0f};
  weft_tensor_t *ab[2] = {dc_vec_f32(10, a), dc_vec_f32(10, b)};
  static const char *const bin[] = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
                                    "SquaredDifference", "Equal", "NotEqual", "Less",
                                    "LessEqual", "Greater", "GreaterEqual"};
  for (size_t i = 0; i < G_N_ELEMENTS(bin); i++) {
    op_run_t r = RUN(bin[i], ab, 2, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "%s on special values", bin[i]);
    dc_check_op(what, &r, 1e-5, 0);
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
      weft_tensor_t *in[2] = {dc_rand_f32(sp->ra, sp->a, pow ? 0.1 : -10, 10),
                              dc_rand_f32(sp->rb, sp->b, pow ? -3 : -10, pow ? 3 : 10)};
      op_run_t r = RUN(float_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s float32 shapes #%zu", float_ops[i], s);
      dc_check_op(what, &r, 1e-5, 1e-6);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(int_ops); i++) {
      weft_tensor_t *in[2] = {dc_rand_i32(sp->ra, sp->a, -1000, 1000),
                              dc_rand_i32(sp->rb, sp->b, -1000, 1000)};
      op_run_t r = RUN(int_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s int32 shapes #%zu", int_ops[i], s);
      dc_check_op(what, &r, 0, 0);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cmp_ops); i++) {
      /* small integers as floats, so that equal pairs occur */
      weft_tensor_t *in[2] = {dc_rand_i32(sp->ra, sp->a, -3, 3), dc_rand_i32(sp->rb, sp->b, -3, 3)};
      op_run_t r = RUN(cmp_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s int32 shapes #%zu", cmp_ops[i], s);
      dc_check_op(what, &r, 0, 0);
      weft_dtype_t f = WEFT_DT_FLOAT;
      op_run_t cast0 = RUN("Cast", &in[0], 1, dc_set_dst_t, &f);
      op_run_t cast1 = RUN("Cast", &in[1], 1, dc_set_dst_t, &f);
      weft_tensor_t *fin[2] = {NULL, NULL};
      OK(dc_run_on(CPU_DEV, &cast0, &fin[0], NULL));
      OK(dc_run_on(CPU_DEV, &cast1, &fin[1], NULL));
      op_run_t rf = RUN(cmp_ops[i], fin, 2, NULL, NULL);
      g_snprintf(what, sizeof what, "%s float32 shapes #%zu", cmp_ops[i], s);
      dc_check_op(what, &rf, 0, 0);
      weft_tensor_unref(fin[0]);
      weft_tensor_unref(fin[1]);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
    static const char *const bool_ops[] = {"LogicalAnd", "LogicalOr", "Equal", "NotEqual"};
    for (size_t i = 0; i < G_N_ELEMENTS(bool_ops); i++) {
      weft_tensor_t *in[2] = {dc_rand_bool(sp->ra, sp->a), dc_rand_bool(sp->rb, sp->b)};
      op_run_t r = RUN(bool_ops[i], in, 2, NULL, NULL);
      char what[96];
      g_snprintf(what, sizeof what, "%s bool shapes #%zu", bool_ops[i], s);
      dc_check_op(what, &r, 0, 0);
      weft_tensor_unref(in[0]);
      weft_tensor_unref(in[1]);
    }
  }
  /* Incompatible shapes fail on VULKAN as on CPU. */
  dc_check_incompatible_add();
}

static void test_logic_select_clip(void) {
  if (no_vulkan()) return;
  int64_t d[2] = {5, 7}, d7[1] = {7}, d5[1] = {5};
  weft_tensor_t *b = dc_rand_bool(2, d);
  op_run_t r = RUN("LogicalNot", &b, 1, NULL, NULL);
  dc_check_op("LogicalNot bool[5,7]", &r, 0, 0);
  weft_tensor_t *sel[3] = {b, dc_rand_f32(2, d, -1, 1), dc_rand_f32(2, d, -1, 1)};
  op_run_t rs = RUN("Select", sel, 3, NULL, NULL);
  dc_check_op("Select same shapes", &rs, 0, 0);
  weft_tensor_t *cv = dc_rand_bool(1, d5);
  weft_tensor_t *sel_v[3] = {cv, sel[1], sel[2]};
  op_run_t rsv = RUN("Select", sel_v, 3, NULL, NULL);
  dc_check_op("Select vector condition", &rsv, 0, 0);
  weft_tensor_t *c7 = dc_rand_bool(1, d7);
  weft_tensor_t *sel2[3] = {c7, sel[1], dc_rand_f32(0, NULL, -1, 1)};
  op_run_t rs2 = RUN("SelectV2", sel2, 3, NULL, NULL);
  dc_check_op("SelectV2 broadcast", &rs2, 0, 0);
  weft_tensor_t *selb[3] = {c7, dc_rand_bool(2, d), dc_rand_bool(1, d7)};
  op_run_t rsb = RUN("SelectV2", selb, 3, NULL, NULL);
  dc_check_op("SelectV2 bool", &rsb, 0, 0);
  weft_tensor_t *clip[3] = {dc_rand_f32(2, d, -3, 3), dc_rand_f32(0, NULL, -1, -1),
                            dc_rand_f32(2, d, 0.5, 2)};
  op_run_t rc = RUN("ClipByValue", clip, 3, NULL, NULL);
  dc_check_op("ClipByValue", &rc, 0, 0);
  weft_tensor_t *addn[3] = {sel[1], sel[2], clip[0]};
  op_run_t ra = RUN("AddN", addn, 3, NULL, NULL);
  ra.list_len = 3;
  dc_check_op("AddN", &ra, 1e-6, 1e-6);
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
  weft_tensor_t *f = dc_vec_f32(G_N_ELEMENTS(fv), fv);
  weft_tensor_t *i = dc_vec_i32(G_N_ELEMENTS(iv), iv);
  int64_t d[1] = {1023};
  weft_tensor_t *b = dc_rand_bool(1, d);
  struct {
    weft_tensor_t *in;
    weft_dtype_t to;
  } cases[] = {
      {f, WEFT_DT_INT32}, {f, WEFT_DT_BOOL}, {f, WEFT_DT_FLOAT}, {i, WEFT_DT_FLOAT},
      {i, WEFT_DT_BOOL},  {b, WEFT_DT_FLOAT}, {b, WEFT_DT_INT32},
  };
  for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
    op_run_t r = RUN("Cast", &cases[k].in, 1, dc_set_dst_t, &cases[k].to);
    char what[64];
    g_snprintf(what, sizeof what, "Cast %s to %s", dc_dtype_of(cases[k].in),
               weft_dtype_name(cases[k].to));
    dc_check_op(what, &r, 0, 0);
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
      weft_tensor_t *in[2] = {dc_rand_f32(2, da, -1, 1), dc_rand_f32(2, db, -1, 1)};
      op_run_t r = RUN("MatMul", in, 2, dc_set_transposes, tr);
      char what[96];
      g_snprintf(what, sizeof what, "MatMul %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                 " ta=%d tb=%d", cases[c].m, cases[c].k, cases[c].n, tr[0], tr[1]);
      dc_check_op(what, &r, 1e-4, 1e-4);
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
    weft_tensor_t *in[2] = {dc_rand_f32(brx[c], dx, -1, 1), dc_rand_f32(bry[c], dy, -1, 1)};
    op_run_t r = RUN("BatchMatMulV2", in, 2, dc_set_adj, adj[c]);
    char what[64];
    g_snprintf(what, sizeof what, "BatchMatMulV2 case #%zu", c);
    dc_check_op(what, &r, 1e-4, 1e-4);
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

static const weft_dtype_t i64 = WEFT_DT_INT64, i32 = WEFT_DT_INT32;

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
      weft_tensor_t *axes = dc_vec_i32(rc->n_axes, rc->axes);
      for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        bool prod = strcmp(ops[o], "Prod") == 0;
        weft_tensor_t *x = prod ? dc_rand_f32(rc->rank, rc->dims, 0.99, 1.01)
                                : dc_rand_f32(rc->rank, rc->dims, -10, 10);
        weft_tensor_t *in[2] = {x, axes};
        op_run_t r = RUN(ops[o], in, 2, dc_set_keep_dims, &kd);
        char what[96];
        g_snprintf(what, sizeof what, "%s float32 case #%zu keep_dims=%d", ops[o], c, keep);
        dc_check_op(what, &r, 1e-4, 1e-4);
        weft_tensor_unref(x);
        if (strcmp(ops[o], "Mean") != 0) {
          weft_tensor_t *xi = prod ? dc_rand_i32(rc->rank, rc->dims, -2, 2)
                                   : dc_rand_i32(rc->rank, rc->dims, -1000, 1000);
          weft_tensor_t *ini[2] = {xi, axes};
          op_run_t ri = RUN(ops[o], ini, 2, dc_set_keep_dims, &kd);
          g_snprintf(what, sizeof what, "%s int32 case #%zu keep_dims=%d", ops[o], c, keep);
          dc_check_op(what, &ri, 0, 0);
          weft_tensor_unref(xi);
        }
      }
      static const char *const bool_ops[] = {"All", "Any"};
      for (size_t o = 0; o < G_N_ELEMENTS(bool_ops); o++) {
        weft_tensor_t *xb = dc_rand_bool(rc->rank, rc->dims);
        weft_tensor_t *in[2] = {xb, axes};
        op_run_t r = RUN(bool_ops[o], in, 2, dc_set_keep_dims, &kd);
        char what[96];
        g_snprintf(what, sizeof what, "%s bool case #%zu keep_dims=%d", bool_ops[o], c, keep);
        dc_check_op(what, &r, 0, 0);
        weft_tensor_unref(xb);
      }
      weft_tensor_unref(axes);
    }
  }
  /* ArgMax / ArgMin along either axis, int64 and int32 indices, NaN winning; L2Loss. */
  int64_t da[2] = {7, 1023};
  weft_tensor_t *xa = dc_rand_f32(2, da, -10, 10);
  ((float *)weft_tensor_data(xa))[5 * 1023 + 17] = NAN;
  weft_tensor_t *xai = dc_rand_i32(2, da, -50, 50);
  static const char *const arg_ops[] = {"ArgMax", "ArgMin"};
  for (size_t o = 0; o < G_N_ELEMENTS(arg_ops); o++) {
    for (int axis = -1; axis < 2; axis++) {
      weft_tensor_t *dim = weft_tensor_new_scalar_int32(axis);
      for (int k = 0; k < 2; k++) {
        weft_tensor_t *in[2] = {k == 0 ? xa : xai, dim};
        op_run_t r = RUN(arg_ops[o], in, 2, dc_set_output_type, k == 0 ? &i64 : &i32);
        char what[64];
        g_snprintf(what, sizeof what, "%s %s axis %d", arg_ops[o], dc_dtype_of(in[0]), axis);
        dc_check_op(what, &r, 0, 0);
      }
      weft_tensor_unref(dim);
    }
  }
  weft_tensor_t *xl = dc_rand_f32(2, da, -1, 1);
  op_run_t rl2 = RUN("L2Loss", &xl, 1, NULL, NULL);
  dc_check_op("L2Loss", &rl2, 1e-5, 0);
  weft_tensor_unref(xl);
  weft_tensor_unref(xa);
  weft_tensor_unref(xai);

  /* A large full sum stays accurate (compensated summation). */
  int64_t big[1] = {1 << 20};
  weft_tensor_t *x = dc_rand_f32(1, big, 0, 1);
  int32_t zero = 0;
  weft_tensor_t *axes = dc_vec_i32(1, &zero);
  weft_tensor_t *in[2] = {x, axes};
  bool kd = false;
  op_run_t r = RUN("Sum", in, 2, dc_set_keep_dims, &kd);
  dc_check_op("Sum float32[1048576]", &r, 1e-5, 0);
  weft_tensor_unref(x);
  weft_tensor_unref(axes);
}

static void test_nn(void) {
  if (no_vulkan()) return;
  static const int64_t shapes[][3] = {{1, 1, 0}, {1, 7, 0}, {5, 1023, 0}, {3, 4, 5}};
  static const int ranks[] = {2, 2, 2, 3};
  for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
    weft_tensor_t *x = dc_rand_f32(ranks[s], shapes[s], -20, 20);
    op_run_t r = RUN("Softmax", &x, 1, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "Softmax shape #%zu", s);
    dc_check_op(what, &r, 1e-4, 1e-6);
    op_run_t rl = RUN("LogSoftmax", &x, 1, NULL, NULL);
    g_snprintf(what, sizeof what, "LogSoftmax shape #%zu", s);
    dc_check_op(what, &rl, 1e-4, 1e-5);
    weft_tensor_unref(x);
  }
  int64_t dx[4] = {2, 3, 4, 5}, dc[1] = {5}, dn[1] = {3};
  weft_tensor_t *nhwc[2] = {dc_rand_f32(4, dx, -1, 1), dc_rand_f32(1, dc, -1, 1)};
  op_run_t r = RUN("BiasAdd", nhwc, 2, NULL, NULL);
  dc_check_op("BiasAdd NHWC", &r, 1e-6, 1e-6);
  weft_tensor_t *nchw[2] = {nhwc[0], dc_rand_f32(1, dn, -1, 1)};
  static const char *const fmt[] = {"data_format", "NCHW"};
  op_run_t rn = RUN("BiasAdd", nchw, 2, dc_set_string, fmt);
  dc_check_op("BiasAdd NCHW", &rn, 1e-6, 1e-6);
  op_run_t rg = RUN("BiasAddGrad", nhwc, 1, NULL, NULL);
  dc_check_op("BiasAddGrad NHWC", &rg, 1e-4, 1e-5);
  op_run_t rgn = RUN("BiasAddGrad", nchw, 1, dc_set_string, fmt);
  dc_check_op("BiasAddGrad NCHW", &rgn, 1e-4, 1e-5);
  weft_tensor_t *gi[2] = {nhwc[0], dc_rand_f32(4, dx, -1, 1)};
  static const char *const grads[] = {"ReluGrad", "SigmoidGrad", "TanhGrad"};
  for (size_t i = 0; i < G_N_ELEMENTS(grads); i++) {
    op_run_t rr = RUN(grads[i], gi, 2, NULL, NULL);
    dc_check_op(grads[i], &rr, 1e-5, 1e-6);
  }
  weft_tensor_unref(gi[1]);
  weft_tensor_unref(nhwc[0]);
  weft_tensor_unref(nhwc[1]);
  weft_tensor_unref(nchw[1]);
}

/* ---------------------------------------------------------------------------------------------
 * Shapes and data movement */

static void test_shapes_and_transpose(void) {
  if (no_vulkan()) return;
  int64_t d[3] = {3, 4, 5};
  weft_tensor_t *xs[3] = {dc_rand_f32(3, d, -1, 1), dc_rand_i32(3, d, -100, 100), dc_rand_bool(3, d)};
  const int32_t perms[][3] = {{2, 0, 1}, {1, 0, 2}, {0, 1, 2}, {2, 1, 0}};
  for (int t = 0; t < 3; t++) {
    for (size_t p = 0; p < G_N_ELEMENTS(perms); p++) {
      weft_tensor_t *perm = dc_vec_i32(3, perms[p]);
      weft_tensor_t *in[2] = {xs[t], perm};
      op_run_t r = RUN("Transpose", in, 2, NULL, NULL);
      char what[64];
      g_snprintf(what, sizeof what, "Transpose %s perm #%zu", dc_dtype_of(xs[t]), p);
      dc_check_op(what, &r, 0, 0);
      weft_tensor_unref(perm);
    }
    const int32_t shape[] = {5, -1};
    weft_tensor_t *sv = dc_vec_i32(2, shape);
    weft_tensor_t *rin[2] = {xs[t], sv};
    op_run_t rr = RUN("Reshape", rin, 2, NULL, NULL);
    dc_check_op("Reshape", &rr, 0, 0);
    weft_tensor_unref(sv);
    weft_tensor_t *dim = weft_tensor_new_scalar_int32(-1);
    weft_tensor_t *ein[2] = {xs[t], dim};
    op_run_t re = RUN("ExpandDims", ein, 2, NULL, NULL);
    dc_check_op("ExpandDims", &re, 0, 0);
    weft_tensor_unref(dim);
    op_run_t ri = RUN("Identity", &xs[t], 1, NULL, NULL);
    dc_check_op("Identity", &ri, 0, 0);
    op_run_t rz = RUN("ZerosLike", &xs[t], 1, NULL, NULL);
    dc_check_op("ZerosLike", &rz, 0, 0);
  }
  int64_t ds[4] = {3, 1, 5, 1};
  weft_tensor_t *sq = dc_rand_f32(4, ds, -1, 1);
  op_run_t rs = RUN("Squeeze", &sq, 1, NULL, NULL);
  dc_check_op("Squeeze", &rs, 0, 0);
  op_run_t ro = RUN("OnesLike", &sq, 1, NULL, NULL);
  dc_check_op("OnesLike", &ro, 0, 0);
  /* BroadcastTo and Fill. */
  int64_t d31[2] = {3, 1};
  weft_tensor_t *small = dc_rand_f32(2, d31, -1, 1);
  const int32_t target[] = {2, 3, 4};
  weft_tensor_t *tv = dc_vec_i32(3, target);
  weft_tensor_t *bin[2] = {small, tv};
  op_run_t rb = RUN("BroadcastTo", bin, 2, NULL, NULL);
  dc_check_op("BroadcastTo", &rb, 0, 0);
  weft_tensor_t *fill_vals[3] = {weft_tensor_new_scalar_float(2.5f), weft_tensor_new_scalar_int32(-7),
                                 weft_tensor_new(WEFT_DT_BOOL, 0, NULL)};
  ((uint8_t *)weft_tensor_data(fill_vals[2]))[0] = 1;
  for (int k = 0; k < 3; k++) {
    weft_tensor_t *fin[2] = {tv, fill_vals[k]};
    op_run_t rf = RUN("Fill", fin, 2, NULL, NULL);
    char what[64];
    g_snprintf(what, sizeof what, "Fill %s", dc_dtype_of(fill_vals[k]));
    dc_check_op(what, &rf, 0, 0);
    weft_tensor_unref(fill_vals[k]);
  }
  weft_tensor_unref(small);
  weft_tensor_unref(tv);
  weft_tensor_unref(sq);
  /* Slice, Tile (all three dtypes); ConcatV2, Pack, Pad (float32, int32); Shape, Size, Rank. */
  const int32_t begin[] = {1, 0, 2}, size[] = {2, -1, 3}, mult[] = {2, 1, 3};
  const int32_t pads[] = {1, 0, 0, 2, 3, 1};
  int64_t dp[2] = {3, 2};
  weft_tensor_t *bv = dc_vec_i32(3, begin), *sv = dc_vec_i32(3, size), *mv = dc_vec_i32(3, mult);
  weft_tensor_t *pv = weft_tensor_new_from_data(WEFT_DT_INT32, 2, dp, pads, sizeof pads, NULL);
  for (int t = 0; t < 3; t++) {
    weft_tensor_t *sl[3] = {xs[t], bv, sv};
    op_run_t r1 = RUN("Slice", sl, 3, NULL, NULL);
    dc_check_op("Slice", &r1, 0, 0);
    weft_tensor_t *ti[2] = {xs[t], mv};
    op_run_t r2 = RUN("Tile", ti, 2, NULL, NULL);
    dc_check_op("Tile", &r2, 0, 0);
    static const char *const shape_ops[] = {"Shape", "Size", "Rank"};
    for (size_t k = 0; k < G_N_ELEMENTS(shape_ops); k++) {
      op_run_t r3 = RUN(shape_ops[k], &xs[t], 1, NULL, NULL);
      dc_check_op(shape_ops[k], &r3, 0, 0);
    }
    /* Split into 2 along axis 1, SplitV [1, -1, 2] along axis 2, Unpack along axis 0. */
    weft_tensor_t *one = weft_tensor_new_scalar_int32(1), *two = weft_tensor_new_scalar_int32(2);
    weft_tensor_t *sp[2] = {one, xs[t]};
    const int32_t parts[] = {1, -1, 2};
    weft_tensor_t *pv3 = dc_vec_i32(3, parts);
    weft_tensor_t *spv[3] = {xs[t], pv3, two};
    for (int out = 0; out < 3; out++) {
      op_run_t r7 = RUN("Split", sp, 2, dc_set_num_split, (const int[]){2});
      r7.fetch_index = out < 2 ? out : 1;
      dc_check_op("Split", &r7, 0, 0);
      op_run_t r8 = RUN("SplitV", spv, 3, dc_set_num_split, (const int[]){3});
      r8.fetch_index = out;
      dc_check_op("SplitV", &r8, 0, 0);
      op_run_t r9 = RUN("Unpack", &xs[t], 1, dc_set_num, (const int[]){3});
      r9.fetch_index = out;
      dc_check_op("Unpack", &r9, 0, 0);
    }
    weft_tensor_unref(one);
    weft_tensor_unref(two);
    weft_tensor_unref(pv3);
    if (t == 2) continue;
    int64_t d2[3] = {3, 2, 5};
    weft_tensor_t *other = t == 0 ? dc_rand_f32(3, d2, -1, 1) : dc_rand_i32(3, d2, -9, 9);
    weft_tensor_t *axis = weft_tensor_new_scalar_int32(1);
    weft_tensor_t *cc[4] = {xs[t], other, xs[t], axis};
    op_run_t r4 = RUN("ConcatV2", cc, 4, NULL, NULL);
    r4.list_len = 3;
    dc_check_op("ConcatV2 axis 1", &r4, 0, 0);
    weft_tensor_unref(axis);
    weft_tensor_unref(other);
    weft_tensor_t *pk[3] = {xs[t], xs[t], xs[t]};
    for (int ax = -1; ax <= 3; ax++) {
      op_run_t r5 = RUN("Pack", pk, 3, dc_set_axis, &ax);
      r5.list_len = 3;
      char what[32];
      g_snprintf(what, sizeof what, "Pack axis %d", ax);
      dc_check_op(what, &r5, 0, 0);
    }
    weft_tensor_t *pa[2] = {xs[t], pv};
    op_run_t r6 = RUN("Pad", pa, 2, NULL, NULL);
    dc_check_op("Pad", &r6, 0, 0);
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
  dc_check_float_variable();

  weft_status_t *st = NULL;
  weft_session_t *s;
  weft_tensor_t *out = NULL;
  const char *targets[] = {"init"};
  /* An int32 variable with a counter, updated on the device. */
  weft_graph_t *g = weft_graph_new();
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
  /* Several command batches recorded and submitted without a host wait. */
  dc_check_long_chain_and_parallel(1000, 3);
}

static void test_cross_device_matmul(void) {
  if (no_vulkan()) return;
  dc_check_cross_device_matmul(40, 30, 20);
}

static void test_soft_placement(void) {
  if (no_vulkan()) return;
  /* VULKAN has no int64 kernels. */
  int64_t d[1] = {3};
  weft_tensor_t *i64 = weft_tensor_new(WEFT_DT_INT64, 1, d);
  for (int i = 0; i < 3; i++) ((int64_t *)weft_tensor_data(i64))[i] = 10000000000LL + i;
  dc_check_soft_placement(i64, 20000000004.0, "no supported kernel for VULKAN devices");
  weft_tensor_unref(i64);
}

static void test_gpu_alias(void) {
  if (no_vulkan()) return;
  dc_check_gpu_alias(true);
}

/* ---------------------------------------------------------------------------------------------
 * In subprocesses: options fixed when the device first opens, and environments without Vulkan */

static void memory_cap_child(void) {
  if (!vulkan_device()) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, VK_DEV);
  weft_tensor_t *dims = dc_vec_i32(1, (const int32_t[]){1 << 22});
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
  /* And no CUDA device, which /gpu:0 would name on a machine with an NVIDIA GPU. */
  g_setenv("WEFT_CUDA_DISABLE", "1", TRUE);
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
  weft_session_t *s = dc_soft_session(g);
  const char *fetch[] = {"a"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpstr(weft_session_node_device(s, "a"), ==, CPU_FULL);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
}

/* ---------------------------------------------------------------------------------------------
 * The device services ("weft.vulkan.2") */

/* glslc --target-env=vulkan1.0 -O of
 *   layout(local_size_x = 64) in;
 *   layout(std430, binding = 0) buffer Data { float v[]; };
 *   layout(push_constant) uniform Params { uint n; float a; float b; } p;
 *   void main() { uint i = gl_GlobalInvocationID.x; if (i < p.n) v[i] = v[i] * p.a + p.b; } */
static const uint32_t scale_spirv[] = {
    0x07230203, 0x00010000, 0x000d000b, 0x00000034, 0x00000000, 0x00020011, 0x00000001, 0x0006000b,
    0x00000001, 0x4c534c47, 0x6474732e, 0x3035342e, 0x00000000, 0x0003000e, 0x00000000, 0x00000001,
    0x0006000f, 0x00000005, 0x00000004, 0x6e69616d, 0x00000000, 0x0000000b, 0x00060010, 0x00000004,
    0x00000011, 0x00000040, 0x00000001, 0x00000001, 0x00040047, 0x0000000b, 0x0000000b, 0x0000001c,
    0x00050048, 0x00000012, 0x00000000, 0x00000023, 0x00000000, 0x00050048, 0x00000012, 0x00000001,
    0x00000023, 0x00000004, 0x00050048, 0x00000012, 0x00000002, 0x00000023, 0x00000008, 0x00030047,
    0x00000012, 0x00000002, 0x00040047, 0x0000001e, 0x00000006, 0x00000004, 0x00050048, 0x0000001f,
    0x00000000, 0x00000023, 0x00000000, 0x00030047, 0x0000001f, 0x00000003, 0x00040047, 0x00000021,
    0x00000022, 0x00000000, 0x00040047, 0x00000021, 0x00000021, 0x00000000, 0x00040047, 0x00000033,
    0x0000000b, 0x00000019, 0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00040015,
    0x00000006, 0x00000020, 0x00000000, 0x00040017, 0x00000009, 0x00000006, 0x00000003, 0x00040020,
    0x0000000a, 0x00000001, 0x00000009, 0x0004003b, 0x0000000a, 0x0000000b, 0x00000001, 0x0004002b,
    0x00000006, 0x0000000c, 0x00000000, 0x00040020, 0x0000000d, 0x00000001, 0x00000006, 0x00030016,
    0x00000011, 0x00000020, 0x0005001e, 0x00000012, 0x00000006, 0x00000011, 0x00000011, 0x00040020,
    0x00000013, 0x00000009, 0x00000012, 0x0004003b, 0x00000013, 0x00000014, 0x00000009, 0x00040015,
    0x00000015, 0x00000020, 0x00000001, 0x0004002b, 0x00000015, 0x00000016, 0x00000000, 0x00040020,
    0x00000017, 0x00000009, 0x00000006, 0x00020014, 0x0000001a, 0x0003001d, 0x0000001e, 0x00000011,
    0x0003001e, 0x0000001f, 0x0000001e, 0x00040020, 0x00000020, 0x00000002, 0x0000001f, 0x0004003b,
    0x00000020, 0x00000021, 0x00000002, 0x00040020, 0x00000024, 0x00000002, 0x00000011, 0x0004002b,
    0x00000015, 0x00000027, 0x00000001, 0x00040020, 0x00000028, 0x00000009, 0x00000011, 0x0004002b,
    0x00000015, 0x0000002c, 0x00000002, 0x0004002b, 0x00000006, 0x00000031, 0x00000040, 0x0004002b,
    0x00000006, 0x00000032, 0x00000001, 0x0006002c, 0x00000009, 0x00000033, 0x00000031, 0x00000032,
    0x00000032, 0x00050036, 0x00000002, 0x00000004, 0x00000000, 0x00000003, 0x000200f8, 0x00000005,
    0x00050041, 0x0000000d, 0x0000000e, 0x0000000b, 0x0000000c, 0x0004003d, 0x00000006, 0x0000000f,
    0x0000000e, 0x00050041, 0x00000017, 0x00000018, 0x00000014, 0x00000016, 0x0004003d, 0x00000006,
    0x00000019, 0x00000018, 0x000500b0, 0x0000001a, 0x0000001b, 0x0000000f, 0x00000019, 0x000300f7,
    0x0000001d, 0x00000000, 0x000400fa, 0x0000001b, 0x0000001c, 0x0000001d, 0x000200f8, 0x0000001c,
    0x00060041, 0x00000024, 0x00000025, 0x00000021, 0x00000016, 0x0000000f, 0x0004003d, 0x00000011,
    0x00000026, 0x00000025, 0x00050041, 0x00000028, 0x00000029, 0x00000014, 0x00000027, 0x0004003d,
    0x00000011, 0x0000002a, 0x00000029, 0x00050041, 0x00000028, 0x0000002d, 0x00000014, 0x0000002c,
    0x0004003d, 0x00000011, 0x0000002e, 0x0000002d, 0x0008000c, 0x00000011, 0x0000002f, 0x00000001,
    0x00000032, 0x00000026, 0x0000002a, 0x0000002e, 0x0003003e, 0x00000025, 0x0000002f, 0x000200f9,
    0x0000001d, 0x000200f8, 0x0000001d, 0x000100fd, 0x00010038,
};

typedef struct scale_push {
  uint32_t n;
  float a, b;
} scale_push_t;

/* The services of VULKAN:0 as a kernel there would get them, the device opened. */
static const weft_vulkan_services_t *services(weft__device_t **dev_out, const char *name) {
  weft__device_t *d = weft__device_find(VK_FULL);
  g_assert_nonnull(d);
  OK(weft__device_open(d, NULL));
  g_assert_nonnull(d->backend->table.device_services);
  *dev_out = d;
  return d->backend->table.device_services(d->handle, name);
}

static void expect_error(weft_status_t *st, weft_code_t code, const char *a, const char *b) {
  g_assert_nonnull(st);
  if (weft_status_code(st) != code || !strstr(weft_status_message(st), a) ||
      (b && !strstr(weft_status_message(st), b)))
    g_test_message("%s", weft_status_message(st));
  g_assert_cmpint(weft_status_code(st), ==, code);
  g_assert_nonnull(strstr(weft_status_message(st), a));
  if (b) g_assert_nonnull(strstr(weft_status_message(st), b));
  weft_status_free(st);
}

static void test_services(void) {
  if (no_vulkan()) return;
  weft__device_t *d = NULL;
  const weft_vulkan_services_t *vk = services(&d, WEFT_VULKAN_SERVICES_2);
  g_assert_nonnull(vk);
  /* One table for both versions; an unknown version gets nothing. */
  g_assert_true(services(&d, WEFT_VULKAN_SERVICES) == vk);
  g_assert_null(services(&d, "weft.vulkan.99"));
  g_assert_cmpuint(vk->struct_size, ==, sizeof(weft_vulkan_services_t));
  g_assert_cmpint(vk->ordinal, ==, 0);
  g_assert_nonnull(vk->device);
  g_assert_nonnull(vk->get_device_proc_addr(vk->device, "vkCmdDispatch"));
  g_assert_null(vk->get_device_proc_addr(vk->device, "vkNoSuchFunction"));
  g_assert_nonnull(vk->get_instance_proc_addr(vk->instance, "vkGetDeviceProcAddr"));
  g_assert_cmpuint(vk->max_push_constant_bytes, ==, 128);
  g_assert_cmpuint(vk->max_buffers, ==, 4);
  g_assert_cmpuint(vk->max_group_count[0], >=, 65535);

  /* A buffer of the backend's, filled and read back through the backend's own copies. */
  const weft_backend_t *be = &d->backend->table;
  enum { N = 1000 };
  void *mem = NULL;
  OK(be->alloc(d->handle, N * sizeof(float), &mem));
  weft_vulkan_buffer_t b = {.struct_size = sizeof b};
  OK(vk->buffer(vk, mem, "x", &b));
  g_assert_cmpuint(b.buffer, !=, 0);
  g_assert_cmpuint(b.size, ==, N * sizeof(float));
  g_assert_cmpuint(b.range, >=, b.size);
  float host[N], back[N];
  for (int i = 0; i < N; i++) host[i] = (float)i - 300.5f;
  OK(be->copy_to_device(d->handle, mem, host, sizeof host));

  /* The pipeline is made once and cached by content. */
  weft_vulkan_pipeline_t *p = NULL, *again = NULL;
  OK(vk->pipeline(vk, "scale", scale_spirv, sizeof scale_spirv, sizeof(scale_push_t), 1, &p));
  g_assert_nonnull(p);
  OK(vk->pipeline(vk, "scale", scale_spirv, sizeof scale_spirv, sizeof(scale_push_t), 1, &again));
  g_assert_true(p == again);
  uint64_t before = vk->dispatch_count(vk);
  scale_push_t push = {N - 1, 2.0f, 0.25f}; /* the last element is left alone */
  void *bufs[1] = {mem};
  OK(vk->dispatch(vk, p, &push, sizeof push, bufs, 1, (N + 63) / 64, 1, 1));
  push.a = -1.0f;
  push.b = 0.0f;
  OK(vk->dispatch(vk, p, &push, sizeof push, bufs, 1, (N + 63) / 64, 1, 1)); /* ordered after */
  OK(vk->dispatch(vk, p, &push, sizeof push, bufs, 1, 0, 1, 1));              /* records nothing */
  g_assert_cmpuint(vk->dispatch_count(vk), ==, before + 2);
  OK(be->copy_from_device(d->handle, back, mem, sizeof back));
  for (int i = 0; i < N - 1; i++) g_assert_cmpfloat(back[i], ==, -(host[i] * 2.0f + 0.25f));
  g_assert_cmpfloat(back[N - 1], ==, host[N - 1]);

  /* buffer(): anything but a live allocation of this device is refused, naming it. */
  b.buffer = 0;
  expect_error(vk->buffer(vk, host, "input 0 of 'mine'", &b), WEFT_INVALID_ARGUMENT,
               "VULKAN:0: input 0 of 'mine'", "is not a live buffer of this device");
  g_assert_cmpuint(b.buffer, ==, 0);
  expect_error(vk->buffer(vk, NULL, "output 0", &b), WEFT_INVALID_ARGUMENT, "output 0",
               "NULL device pointer");
  weft_vulkan_services_t fake = *vk;
  expect_error(vk->buffer(&fake, mem, "x", &b), WEFT_INVALID_ARGUMENT, "buffer:",
               "is not a \"weft.vulkan.2\" table");

  /* pipeline(): words that are not SPIR-V, sizes out of range. */
  static const uint32_t junk[] = {0xdeadbeef, 0x00010000, 0, 8, 0, 0x00020011};
  weft_vulkan_pipeline_t *bad = (weft_vulkan_pipeline_t *)&fake;
  expect_error(vk->pipeline(vk, "junk", junk, sizeof junk, 8, 1, &bad), WEFT_INVALID_ARGUMENT,
               "pipeline 'junk'", "first word is 0xdeadbeef, not the magic number 0x07230203");
  g_assert_null(bad);
  expect_error(vk->pipeline(vk, "short", scale_spirv, 18, 8, 1, &bad), WEFT_INVALID_ARGUMENT,
               "pipeline 'short'", "18 bytes are not a SPIR-V module");
  expect_error(vk->pipeline(vk, "push", scale_spirv, sizeof scale_spirv, 132, 1, &bad),
               WEFT_INVALID_ARGUMENT, "pipeline 'push'", "132 bytes of push constants");
  expect_error(vk->pipeline(vk, "bufs", scale_spirv, sizeof scale_spirv, 12, 5, &bad),
               WEFT_INVALID_ARGUMENT, "pipeline 'bufs'", "5 storage buffers (at most 4)");

  /* dispatch(): buffers and sizes that do not fit the pipeline or the device. */
  void *host_bufs[1] = {host};
  expect_error(vk->dispatch(vk, p, &push, sizeof push, host_bufs, 1, 1, 1, 1),
               WEFT_INVALID_ARGUMENT, "pipeline 'scale', buffer 0", "not a live buffer");
  void *two[2] = {mem, mem};
  expect_error(vk->dispatch(vk, p, &push, sizeof push, two, 2, 1, 1, 1), WEFT_INVALID_ARGUMENT,
               "pipeline 'scale' binds 1 buffers, the dispatch gave 2", NULL);
  char big[16] = {0};
  expect_error(vk->dispatch(vk, p, big, sizeof big, bufs, 1, 1, 1, 1), WEFT_INVALID_ARGUMENT,
               "16 bytes of push constants (at most 12", NULL);
  expect_error(vk->dispatch(vk, p, &push, sizeof push, bufs, 1, vk->max_group_count[0] + 1u, 1, 1),
               WEFT_INVALID_ARGUMENT, "workgroups exceed the device's", NULL);
  expect_error(vk->dispatch(vk, NULL, &push, sizeof push, bufs, 1, 1, 1, 1),
               WEFT_INVALID_ARGUMENT, "NULL pipeline", NULL);
  g_assert_cmpuint(vk->dispatch_count(vk), ==, before + 2);
  /* A freed allocation is no longer a buffer of the device. */
  be->free(d->handle, mem);
  expect_error(vk->buffer(vk, mem, "freed", &b), WEFT_INVALID_ARGUMENT, "freed",
               "not a live buffer");
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

/* The child runs an op on the VULKAN device (so lavapipe is loaded, JITs code and keeps its
 * process-wide allocations) and then loses a tensor of its own on purpose. */
static void leaky_child(void) {
  if (!vulkan_device()) return;
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, VK_DEV);
  weft_output_t a = weft_const_float(g, "a", 3.0f, &st);
  OK(st);
  weft_unary(g, "Square", "sq", a, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch[] = {"sq"};
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0));
  g_assert_cmpfloat(((float *)weft_tensor_data(out))[0], ==, 9.0f);
  g_assert_cmpstr(weft_session_node_device(s, "sq"), ==, VK_FULL);
  weft_session_free(s);
  weft_graph_free(g);
  /* `out` is never unreferenced: a leak in the caller's code, which the checker must report. */
}

/* With the Vulkan backend in use, LeakSanitizer still checks Weft's own memory: the driver's
 * allocations are not reported (the plugin keeps the driver mapped, so they stay reachable from
 * its data), yet a tensor leaked by the program is, with the test function that lost it. Sanitizer
 * builds only. */
static void test_leak_check_stays_on(void) {
  if (!WEFT_SANITIZE) {
    g_test_skip("needs the sanitizer build (-Dsanitize=true)");
    return;
  }
  if (no_vulkan()) return;
  g_test_trap_subprocess("/vulkan/subprocess/leaky", 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed();
  g_test_trap_assert_stderr("*ERROR: LeakSanitizer: detected memory leaks*Direct leak*leaky_child*");
  /* The report holds the one leak and nothing of the driver's. */
  g_test_trap_assert_stderr_unmatched("*<unknown module>*");
  g_test_trap_assert_stderr_unmatched("*libvulkan_lvp*");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  dc_set_device("VULKAN");
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
  g_test_add_func("/vulkan/services", test_services);
  g_test_add_func("/vulkan/no_driver", test_no_driver);
  g_test_add_func("/vulkan/leak_check_stays_on", test_leak_check_stays_on);
  g_test_add_func("/vulkan/subprocess/leaky", leaky_child);
  g_test_add_func("/vulkan/subprocess/memory_cap", memory_cap_child);
  g_test_add_func("/vulkan/subprocess/no_driver", no_driver_child);
  return g_test_run();
}
