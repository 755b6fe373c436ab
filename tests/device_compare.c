/* Shared helpers for the device backend tests (test_cuda.c, test_vulkan.c): building one op on a
 * device, running it and comparing it with the CPU, the scenarios both backends go through
 * (variables, long chains, cross-device edges, soft placement, /gpu:0) and the shared case
 * tables (see device_compare.h). */
#include "device_compare.h"

#include <math.h>
#include <string.h>

/* The device under test: "/device:T:0", its full name, and "T:0" (what its errors name). */
static char dut_device[64] = "/device:CPU:0";
static char dut_full[128] = CPU_FULL;
static char dut_short[64] = "CPU:0";
static char dut_type[32] = "CPU";

void dc_set_device(const char *device_type) {
  g_snprintf(dut_type, sizeof dut_type, "%s", device_type);
  g_snprintf(dut_device, sizeof dut_device, "/device:%s:0", device_type);
  g_snprintf(dut_full, sizeof dut_full, "/job:localhost/replica:0/task:0/device:%s:0", device_type);
  g_snprintf(dut_short, sizeof dut_short, "%s:0", device_type);
}

const weft_device_info_t *dc_find_device(const char *device_type) {
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (d && strcmp(d->device_type, device_type) == 0 && d->ordinal == 0) return d;
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Data */

static guint64 rng_state = 0x9e3779b97f4a7c15ull;

void dc_seed(guint64 seed) { rng_state = seed; }

double dc_rnd(double lo, double hi) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  double u = (double)(rng_state >> 11) / 9007199254740992.0;
  return lo + (hi - lo) * u;
}

weft_tensor_t *dc_rand_t(weft_dtype_t dtype, int rank, const int64_t *dims, double lo,
                         double hi) {
  weft_tensor_t *t = weft_tensor_new(dtype, rank, dims);
  void *p = weft_tensor_data(t);
  for (int64_t i = 0; i < weft_tensor_num_elements(t); i++) {
    switch (dtype) {
      case WEFT_DT_FLOAT: ((float *)p)[i] = (float)dc_rnd(lo, hi); break;
      case WEFT_DT_DOUBLE: ((double *)p)[i] = dc_rnd(lo, hi); break;
      case WEFT_DT_INT32: ((int32_t *)p)[i] = (int32_t)floor(dc_rnd(lo, hi + 1)); break;
      case WEFT_DT_INT64: ((int64_t *)p)[i] = (int64_t)floor(dc_rnd(lo, hi + 1)); break;
      case WEFT_DT_BOOL: ((uint8_t *)p)[i] = dc_rnd(0, 1) < 0.5; break;
      default: g_error("dc_rand_t: dtype %s", weft_dtype_name(dtype));
    }
  }
  return t;
}

weft_tensor_t *dc_rand_f32(int rank, const int64_t *dims, double lo, double hi) {
  return dc_rand_t(WEFT_DT_FLOAT, rank, dims, lo, hi);
}

weft_tensor_t *dc_rand_i32(int rank, const int64_t *dims, int lo, int hi) {
  return dc_rand_t(WEFT_DT_INT32, rank, dims, lo, hi);
}

weft_tensor_t *dc_rand_bool(int rank, const int64_t *dims) {
  return dc_rand_t(WEFT_DT_BOOL, rank, dims, 0, 1);
}

weft_tensor_t *dc_vec_f32(int n, const float *v) {
  int64_t d[1] = {n};
  return weft_tensor_new_from_data(WEFT_DT_FLOAT, 1, d, v, sizeof(float) * (size_t)n, NULL);
}

weft_tensor_t *dc_vec_i32(int n, const int32_t *v) {
  int64_t d[1] = {n};
  return weft_tensor_new_from_data(WEFT_DT_INT32, 1, d, v, sizeof(int32_t) * (size_t)n, NULL);
}

bool dc_is_float(weft_dtype_t t) { return t == WEFT_DT_FLOAT || t == WEFT_DT_DOUBLE; }

const char *dc_dtype_of(weft_tensor_t *t) { return weft_dtype_name(weft_tensor_dtype(t)); }

char *dc_shape_str(weft_tensor_t *t) {
  GString *s = g_string_new("[");
  for (int d = 0; d < weft_tensor_rank(t); d++)
    g_string_append_printf(s, d ? ",%" G_GINT64_FORMAT : "%" G_GINT64_FORMAT, weft_tensor_dims(t)[d]);
  g_string_append(s, "]");
  return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------------------------------------
 * Running one op on a device */

/* Adds the op on `device` over ins[0..n_ins) (the first list_len as one list) and finishes it. */
static weft_status_t *add_op(weft_graph_t *g, const char *device, const op_run_t *r,
                             const weft_output_t *ins) {
  weft_graph_push_device(g, device);
  weft_op_builder_t *b = weft_op_new(g, r->op, "op");
  if (r->list_len > 0) weft_op_add_input_list(b, ins, r->list_len);
  for (int i = r->list_len; i < r->n_ins; i++) weft_op_add_input(b, ins[i]);
  if (r->attrs) r->attrs(b, r->arg);
  weft_status_t *st = weft_op_finish(b, NULL);
  weft_graph_pop_device(g);
  return st;
}

weft_status_t *dc_run_on(const char *device, const op_run_t *r, weft_tensor_t **out,
                         char **placed) {
  g_assert_cmpint(r->n_ins, <=, 8);
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
  if (!st) st = add_op(g, device, r, ins);
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

weft_status_t *dc_run_fed(const char *device, const op_run_t *r) {
  g_assert_cmpint(r->n_ins, <=, 8);
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_output_t ins[8];
  const char *feeds[8];
  char names[8][16];
  weft_graph_push_device(g, CPU_DEV);
  for (int i = 0; i < r->n_ins && !st; i++) {
    int64_t unknown[WEFT_MAX_RANK];
    for (int d = 0; d < WEFT_MAX_RANK; d++) unknown[d] = WEFT_DIM_UNKNOWN;
    g_snprintf(names[i], sizeof names[i], "in%d", i);
    feeds[i] = names[i];
    ins[i] = weft_placeholder(g, names[i], weft_tensor_dtype(r->ins[i]),
                              weft_tensor_rank(r->ins[i]), unknown, &st);
  }
  weft_graph_pop_device(g);
  if (!st) st = add_op(g, device, r, ins);
  weft_session_t *s = NULL;
  if (!st) s = weft_session_new(g, NULL, &st);
  if (!st) {
    const char *fetch[] = {"op:0"};
    weft_tensor_t *out = NULL;
    st = weft_session_run(s, feeds, (weft_tensor_t **)r->ins, r->n_ins, fetch, &out, 1, NULL, 0);
    weft_tensor_unref(out);
  }
  weft_session_free(s);
  weft_graph_free(g);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Comparing */

bool dc_same_values(const char *what, weft_tensor_t *got, weft_tensor_t *want, double rtol,
                    double atol) {
  char *gs = dc_shape_str(got), *ws = dc_shape_str(want);
  bool ok = weft_tensor_dtype(got) == weft_tensor_dtype(want) && strcmp(gs, ws) == 0;
  if (!ok) {
    g_test_message("%s: got %s%s, want %s%s", what, dc_dtype_of(got), gs, dc_dtype_of(want), ws);
    g_test_fail();
  }
  g_free(gs);
  g_free(ws);
  if (!ok) return false;
  bool fl = dc_is_float(weft_tensor_dtype(got));
  for (int64_t i = 0; i < weft_tensor_num_elements(got); i++) {
    double a = weft_tensor_get_double(got, i), b = weft_tensor_get_double(want, i);
    bool good;
    if (!fl) good = a == b;
    else if (isnan(b)) good = isnan(a);
    else if (isinf(b)) good = a == b;
    else good = !isnan(a) && fabs(a - b) <= atol + rtol * fabs(b);
    if (!good) {
      g_test_message("%s: element %" G_GINT64_FORMAT " is %.17g on %s, %.17g on CPU", what, i, a,
                     dut_type, b);
      g_test_fail();
      return false;
    }
  }
  return true;
}

bool dc_check_op(const char *what, const op_run_t *r, double rtol, double atol) {
  weft_tensor_t *got = NULL, *want = NULL;
  char *placed = NULL;
  weft_status_t *st = dc_run_on(dut_device, r, &got, &placed);
  if (st) {
    g_test_message("%s on %s: %s", what, dut_type, weft_status_message(st));
    g_test_fail();
    weft_status_free(st);
    g_free(placed);
    return false;
  }
  OK(dc_run_on(CPU_DEV, r, &want, NULL));
  if (g_strcmp0(placed, dut_full) != 0) {
    g_test_message("%s ran on %s", what, placed);
    g_test_fail();
  }
  bool ok = dc_same_values(what, got, want, rtol, atol);
  g_free(placed);
  weft_tensor_unref(got);
  weft_tensor_unref(want);
  return ok;
}

void dc_check_error(const char *what, const op_run_t *r, const char *substr) {
  weft_status_t *dev = dc_run_fed(dut_device, r);
  weft_status_t *cpu = dc_run_fed(CPU_DEV, r);
  if (!dev || !cpu) {
    g_test_message("%s: expected errors, %s: %s, CPU: %s", what, dut_type,
                   dev ? weft_status_message(dev) : "ok", cpu ? weft_status_message(cpu) : "ok");
    g_test_fail();
  } else {
    g_assert_cmpint(weft_status_code(dev), ==, weft_status_code(cpu));
    if (!strstr(weft_status_message(dev), substr) || !strstr(weft_status_message(dev), dut_short)) {
      g_test_message("%s: '%s' lacks '%s' or the device", what, weft_status_message(dev), substr);
      g_test_fail();
    }
  }
  weft_status_free(dev);
  weft_status_free(cpu);
}

/* ---------------------------------------------------------------------------------------------
 * Attribute setters */

void dc_set_dst_t(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_type(b, "DstT", *(const weft_dtype_t *)arg);
}

void dc_set_string(weft_op_builder_t *b, const void *arg) {
  const char *const *kv = arg;
  weft_op_set_attr_string(b, kv[0], kv[1]);
}

void dc_set_transposes(weft_op_builder_t *b, const void *arg) {
  const bool *t = arg;
  weft_op_set_attr_bool(b, "transpose_a", t[0]);
  weft_op_set_attr_bool(b, "transpose_b", t[1]);
}

void dc_set_adj(weft_op_builder_t *b, const void *arg) {
  const char *const *kv = arg;
  weft_op_set_attr_bool(b, kv[0], kv[1][0] == '1');
  weft_op_set_attr_bool(b, kv[2], kv[3][0] == '1');
}

void dc_set_keep_dims(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_bool(b, "keep_dims", *(const bool *)arg);
}

void dc_set_output_type(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_type(b, "output_type", *(const weft_dtype_t *)arg);
}

void dc_set_num_split(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_int(b, "num_split", *(const int *)arg);
}

void dc_set_num(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_int(b, "num", *(const int *)arg);
}

void dc_set_axis(weft_op_builder_t *b, const void *arg) {
  weft_op_set_attr_int(b, "axis", *(const int *)arg);
}

/* ---------------------------------------------------------------------------------------------
 * Whole scenarios both backends go through */

void dc_check_long_chain_and_parallel(int64_t branch_elems, int runs) {
  /* 700 dependent adds, queued on the device without a host wait in between. */
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, dut_device);
  weft_output_t x = weft_const_float(g, "x", 0.0f, &st);
  OK(st);
  weft_output_t one = weft_const_float(g, "one", 1.0f, &st);
  OK(st);
  for (int i = 0; i < 700; i++) {
    x = weft_binary(g, "AddV2", NULL, x, one, &st);
    OK(st);
  }
  weft_node_t *last = x.node;
  /* 8 independent branches, each 50 ops long, summed at the end, from 8 threads. */
  weft_output_t branch_ends[8];
  for (int b = 0; b < 8; b++) {
    weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, 1, &branch_elems);
    for (int64_t i = 0; i < branch_elems; i++) ((float *)weft_tensor_data(t))[i] = (float)b;
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
  for (int run = 0; run < runs; run++) {
    weft_tensor_t *out[2] = {NULL, NULL};
    OK(weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0));
    g_assert_cmpfloat(((float *)weft_tensor_data(out[0]))[0], ==, 700.0f);
    /* sum over b of (b + 50) = 28 + 400 */
    for (int64_t i = 0; i < branch_elems; i++)
      g_assert_cmpfloat(((float *)weft_tensor_data(out[1]))[i], ==, 428.0f);
    weft_tensor_unref(out[0]);
    weft_tensor_unref(out[1]);
  }
  g_assert_cmpstr(weft_session_node_device(s, "total"), ==, dut_full);
  weft_session_free(s);
  weft_session_options_free(o);
  weft_graph_free(g);
}

void dc_check_cross_device_matmul(int64_t m, int64_t k, int64_t n) {
  int64_t da[2] = {m, k}, db[2] = {k, n};
  weft_tensor_t *a_t = dc_rand_f32(2, da, -1, 1), *b_t = dc_rand_f32(2, db, -1, 1);
  weft_tensor_t *results[2] = {NULL, NULL};
  /* Pass 0 multiplies on the device under test, pass 1 on the CPU, for the reference. */
  for (int pass = 0; pass < 2; pass++) {
    weft_graph_t *g = weft_graph_new();
    weft_status_t *st = NULL;
    /* The operands are computed on the CPU (a Relu and a Tanh there), uploaded, multiplied... */
    weft_graph_push_device(g, CPU_DEV);
    weft_output_t a = weft_unary(g, "Relu", "a", weft_const(g, "a0", a_t, &st), &st);
    OK(st);
    weft_output_t b = weft_unary(g, "Tanh", "b", weft_const(g, "b0", b_t, &st), &st);
    OK(st);
    weft_graph_pop_device(g);
    weft_graph_push_device(g, pass == 0 ? dut_device : CPU_DEV);
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
    g_assert_cmpstr(weft_session_node_device(s, "c"), ==, pass == 0 ? dut_full : CPU_FULL);
    g_assert_cmpstr(weft_session_node_device(s, "a"), ==, CPU_FULL);
    g_assert_cmpstr(weft_session_node_device(s, "d"), ==, CPU_FULL);
    weft_session_free(s);
    weft_graph_free(g);
  }
  dc_same_values("MatMul of CPU operands", results[0], results[1], 1e-4, 1e-5);
  weft_tensor_unref(results[0]);
  weft_tensor_unref(results[1]);
  weft_tensor_unref(a_t);
  weft_tensor_unref(b_t);
}

weft_session_t *dc_soft_session(weft_graph_t *g) {
  weft_session_options_t *o = weft_session_options_new();
  weft_session_options_set_allow_soft_placement(o, true);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, o, &st);
  weft_session_options_free(o);
  OK(st);
  return s;
}

void dc_check_gpu_alias(bool others_may_outrank) {
  const weft_device_info_t *dut = NULL;
  for (int i = 0; i < weft_devices_count(); i++) {
    const weft_device_info_t *d = weft_devices_get(i);
    if (strcmp(d->device_type, dut_type) == 0 && dut == NULL) dut = d;
    if (others_may_outrank && d->gpu_like && !d->emulated && strcmp(d->device_type, dut_type) != 0) {
      char *why = g_strdup_printf("another gpu-like backend outranks %s here", dut_type);
      g_test_skip(why);
      g_free(why);
      return;
    }
  }
  g_assert_nonnull(dut);
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
  if (dut->emulated) {
    /* A GPU emulated on the CPU (lavapipe) is never what "/gpu:0" means, and takes nothing
     * unpinned: without soft placement "/gpu:0" names no device, and says why. */
    st = weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0);
    g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
    char *tail = g_strdup_printf("(emulated on the CPU, so chosen only when pinned by type, as in "
                                 "'/device:TYPE:N': %s:0)", dut_type);
    g_test_message("%s", weft_status_message(st));
    g_assert_true(strstr(weft_status_message(st), "no devices match '/device:GPU:0'") != NULL);
    g_assert_true(g_str_has_suffix(weft_status_message(st), tail));
    g_free(tail);
    weft_status_free(st);
    weft_session_free(s);
    /* With soft placement everything runs on the CPU, the unpinned op included. */
    s = dc_soft_session(g);
    OK(weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0));
    g_assert_cmpfloat(((float *)weft_tensor_data(out[0]))[0], ==, 9.0f);
    g_assert_cmpfloat(((float *)weft_tensor_data(out[1]))[0], ==, -3.0f);
    g_assert_cmpstr(weft_session_node_device(s, "sq"), ==,
                    "/job:localhost/replica:0/task:0/device:CPU:0");
    g_assert_cmpstr(weft_session_node_device(s, "unpinned"), ==,
                    "/job:localhost/replica:0/task:0/device:CPU:0");
    weft_tensor_unref(out[0]);
    weft_tensor_unref(out[1]);
    weft_session_free(s);
    weft_graph_free(g);
    return;
  }
  OK(weft_session_run(s, NULL, NULL, 0, fetch, out, 2, NULL, 0));
  g_assert_cmpfloat(((float *)weft_tensor_data(out[0]))[0], ==, 9.0f);
  g_assert_cmpfloat(((float *)weft_tensor_data(out[1]))[0], ==, -3.0f);
  g_assert_cmpstr(weft_session_node_device(s, "sq"), ==, dut_full);
  /* Unpinned ops prefer the first gpu-like device. */
  g_assert_cmpstr(weft_session_node_device(s, "unpinned"), ==, dut_full);
  weft_tensor_unref(out[0]);
  weft_tensor_unref(out[1]);
  weft_session_free(s);
  weft_graph_free(g);
}

void dc_check_float_variable(void) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, dut_device);
  float init_v[4] = {1, 2, 3, 4};
  weft_tensor_t *init_t = dc_vec_f32(4, init_v);
  weft_output_t init = weft_const(g, "v_init", init_t, &st);
  OK(st);
  weft_output_t read = weft_variable(g, "v", init, &st);
  OK(st);
  float step_v[4] = {0.5f, -1, 2, 10};
  weft_tensor_t *step_t = dc_vec_f32(4, step_v);
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
  weft_global_variables_initializer(g, "init", &st);
  OK(st);
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
  g_assert_cmpstr(weft_session_node_device(s, "v"), ==, dut_full);
  g_assert_cmpstr(weft_session_node_device(s, "add"), ==, dut_full);
  g_assert_cmpstr(weft_session_node_device(s, "v/Assign"), ==, dut_full);
  /* Re-initialising resets the value. */
  OK(weft_session_run(s, NULL, NULL, 0, NULL, NULL, 0, targets, 1));
  OK(weft_session_run(s, NULL, NULL, 0, fetch_read, &out, 1, NULL, 0));
  g_assert_cmpfloat(((float *)weft_tensor_data(out))[3], ==, 4.0f);
  weft_tensor_unref(out);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(init_t);
  weft_tensor_unref(step_t);
}

void dc_check_incompatible_add(void) {
  int64_t d3[1] = {3}, d4[1] = {4};
  weft_tensor_t *bad[2] = {dc_rand_f32(1, d3, 0, 1), dc_rand_f32(1, d4, 0, 1)};
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  int64_t unknown[1] = {WEFT_DIM_UNKNOWN};
  weft_graph_push_device(g, dut_device);
  weft_output_t pa = weft_placeholder(g, "a", WEFT_DT_FLOAT, 1, unknown, &st);
  OK(st);
  weft_output_t pb = weft_placeholder(g, "b", WEFT_DT_FLOAT, 1, unknown, &st);
  OK(st);
  weft_binary(g, "AddV2", "sum", pa, pb, &st);
  OK(st);
  weft_graph_pop_device(g);
  weft_session_t *s = dc_soft_session(g); /* the placeholders */
  const char *feeds[] = {"a", "b"}, *fetch[] = {"sum"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, feeds, bad, 2, fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), "Incompatible shapes: [3] vs. [4]"));
  g_assert_nonnull(strstr(weft_status_message(st), dut_short));
  weft_status_free(st);
  g_assert_cmpstr(weft_session_node_device(s, "sum"), ==, dut_full);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(bad[0]);
  weft_tensor_unref(bad[1]);
}

void dc_check_soft_placement(weft_tensor_t *unsupported, double want_sum_2,
                             const char *error_substr) {
  weft_graph_t *g = weft_graph_new();
  weft_status_t *st = NULL;
  weft_graph_push_device(g, dut_device);
  weft_output_t c = weft_const(g, "odd", unsupported, &st);
  OK(st);
  weft_binary(g, "AddV2", "odd_sum", c, c, &st);
  OK(st);
  weft_tensor_t *str = weft_tensor_new_string("hello", 5);
  weft_const(g, "greeting", str, &st);
  OK(st);
  weft_const_float(g, "f", 1.5f, &st);
  OK(st);
  weft_graph_pop_device(g);
  /* Without soft placement the op cannot be pinned to the device. */
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch[] = {"odd_sum"};
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, fetch, &out, 1, NULL, 0);
  g_assert_cmpint(weft_status_code(st), ==, WEFT_INVALID_ARGUMENT);
  g_assert_nonnull(strstr(weft_status_message(st), error_substr));
  weft_status_free(st);
  weft_session_free(s);
  s = dc_soft_session(g);
  const char *fetches[] = {"odd_sum", "greeting", "f"};
  weft_tensor_t *outs[3] = {NULL, NULL, NULL};
  OK(weft_session_run(s, NULL, NULL, 0, fetches, outs, 3, NULL, 0));
  g_assert_cmpfloat(weft_tensor_get_double(outs[0], 2), ==, want_sum_2);
  g_assert_cmpuint(((weft_string_t *)weft_tensor_data(outs[1]))[0].len, ==, 5);
  g_assert_cmpfloat(((float *)weft_tensor_data(outs[2]))[0], ==, 1.5f);
  g_assert_cmpstr(weft_session_node_device(s, "odd_sum"), ==, CPU_FULL);
  g_assert_cmpstr(weft_session_node_device(s, "greeting"), ==, CPU_FULL);
  g_assert_cmpstr(weft_session_node_device(s, "f"), ==, dut_full);
  for (int i = 0; i < 3; i++) weft_tensor_unref(outs[i]);
  weft_session_free(s);
  weft_graph_free(g);
  weft_tensor_unref(str);
}

/* ---------------------------------------------------------------------------------------------
 * Shared case tables */

const dc_unary_case_t dc_unary_cases[] = {
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
const size_t dc_n_unary_cases = G_N_ELEMENTS(dc_unary_cases);
