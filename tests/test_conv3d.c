/* test_conv3d.c: float32 Conv3D, Conv3DBackpropInputV2 and Conv3DBackpropFilterV2 on the 2-D
 * kernels (plugins/cpu/cpu_conv_nd.c, conv3d_fast: depth folded into channels) against the
 * generic path (WEFT_CPU_CONV3D_FAST=0) over many geometries: NDHWC and NCDHW, 1 to 16
 * channels and filters, kernels of 1 to 3 a dim, strides and dilations 1 and 2, SAME and VALID,
 * odd sizes, windows larger than the input (empty outputs and all-padding windows), and runs of
 * batch items (WEFT_CPU_CONV3D_FOLD_BYTES small), within 1e-5 of the result's largest magnitude
 * (sums reorder). */
#include <glib.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "weft/weft.h"

#define OK(st)                                                             \
  do {                                                                     \
    weft_status_t *st_ = (st);                                             \
    if (st_) g_error("%s: %s", #st, weft_status_message(st_));             \
  } while (0)

typedef struct c3 {
  int64_t n, in[3], c, m, k[3], s[3], d[3];
  bool same, cfirst;
} c3_t;

static uint32_t rng = 12345u;
static int errors; /* runs that failed (both ways alike) */
static uint32_t next(void) {
  rng = rng * 1664525u + 1013904223u;
  return rng >> 8;
}

/* Reproducible values in [-1, 1). */
static weft_tensor_t *values(int rank, const int64_t *dims) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++)
    p[k] = -1 + 2 * (float)next() / (float)(1u << 24);
  return t;
}

/* The output size of one dim (TensorFlow's rules). */
static int64_t out_size(const c3_t *c, int i) {
  if (c->same) return (c->in[i] + c->s[i] - 1) / c->s[i];
  int64_t eff = (c->k[i] - 1) * c->d[i] + 1, span = c->in[i] - eff;
  return span < 0 ? 0 : (span + c->s[i]) / c->s[i];
}

static void image_dims(const c3_t *c, const int64_t *sp, int64_t ch, int64_t *d) {
  d[0] = c->n;
  for (int i = 0; i < 3; i++) d[(c->cfirst ? 2 : 1) + i] = sp[i];
  d[c->cfirst ? 1 : 4] = ch;
}

static void attr5(const c3_t *c, const int64_t *sp, int64_t *v) {
  v[0] = v[1] = v[2] = v[3] = v[4] = 1;
  for (int i = 0; i < 3; i++) v[(c->cfirst ? 2 : 1) + i] = sp[i];
}

/* Runs `op` with inputs ins (sizes: a 5-element sizes input first or second, at sizes_at);
 * NULL with the error message in *err where the op fails (a window larger than the input). */
static weft_tensor_t *run_op(const char *op, const c3_t *c, weft_tensor_t *const *ins, int n_in,
                             const int64_t *sizes, int sizes_at, char **err) {
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_op_builder_t *b = weft_op_new(g, op, "op");
  weft_status_t *st = NULL;
  int at = 0;
  for (int k = 0; k < n_in + (sizes ? 1 : 0); k++) {
    weft_tensor_t *t;
    if (sizes && k == sizes_at) {
      int64_t five = 5;
      t = weft_tensor_new(WEFT_DT_INT32, 1, &five);
      int32_t *p = weft_tensor_data(t);
      for (int q = 0; q < 5; q++) p[q] = (int32_t)sizes[q];
    } else {
      t = weft_tensor_ref(ins[at++]);
    }
    char name[16];
    g_snprintf(name, sizeof name, "in%d", k);
    weft_op_add_input(b, weft_const(g, name, t, &st));
    OK(st);
    weft_tensor_unref(t);
  }
  int64_t v[5];
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  attr5(c, c->s, v);
  weft_op_set_attr_int_list(b, "strides", v, 5);
  attr5(c, c->d, v);
  weft_op_set_attr_int_list(b, "dilations", v, 5);
  weft_op_set_attr_string(b, "padding", c->same ? "SAME" : "VALID");
  weft_op_set_attr_string(b, "data_format", c->cfirst ? "NCDHW" : "NDHWC");
  weft_node_t *node = NULL;
  OK(weft_op_finish(b, &node));
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch = "op";
  weft_tensor_t *out = NULL;
  st = weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0);
  *err = st ? g_strdup(weft_status_message(st)) : NULL;
  weft_status_free(st);
  weft_session_free(s);
  weft_graph_free(g);
  return out;
}

static void assert_close(const weft_tensor_t *a, const weft_tensor_t *b, const char *what,
                         const c3_t *c) {
  int64_t n = weft_tensor_num_elements(a);
  g_assert_cmpint(weft_tensor_num_elements(b), ==, n);
  g_assert_cmpint(weft_tensor_rank(a), ==, 5);
  for (int k = 0; k < 5; k++) g_assert_cmpint(weft_tensor_dims(a)[k], ==, weft_tensor_dims(b)[k]);
  const float *p = weft_tensor_data((weft_tensor_t *)a), *q = weft_tensor_data((weft_tensor_t *)b);
  /* Relative to the largest magnitude: a filter gradient element near zero can be the sum of
   * thousands of products that cancel. */
  double scale = 1;
  for (int64_t i = 0; i < n; i++) scale = fabs((double)q[i]) > scale ? fabs((double)q[i]) : scale;
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)p[i] - q[i]) <= 1e-5 * scale))
      g_error("%s n%" G_GINT64_FORMAT " in %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
              "x%" G_GINT64_FORMAT " c%" G_GINT64_FORMAT " m%" G_GINT64_FORMAT
              " k %" G_GINT64_FORMAT "%" G_GINT64_FORMAT "%" G_GINT64_FORMAT
              " s %" G_GINT64_FORMAT "%" G_GINT64_FORMAT "%" G_GINT64_FORMAT
              " d %" G_GINT64_FORMAT "%" G_GINT64_FORMAT "%" G_GINT64_FORMAT
              " %s %s: element %" G_GINT64_FORMAT ": fast %.9g, generic %.9g",
              what, c->n, c->in[0], c->in[1], c->in[2], c->c, c->m, c->k[0], c->k[1], c->k[2],
              c->s[0], c->s[1], c->s[2], c->d[0], c->d[1], c->d[2], c->same ? "SAME" : "VALID",
              c->cfirst ? "NCDHW" : "NDHWC", i, p[i], q[i]);
}

/* The three ops of case c, fast and generic. */
static void check_case(const c3_t *c) {
  int64_t osp[3], xd[5], yd[5], fd[5];
  for (int i = 0; i < 3; i++) osp[i] = out_size(c, i);
  image_dims(c, c->in, c->c, xd);
  image_dims(c, osp, c->m, yd);
  for (int i = 0; i < 3; i++) fd[i] = c->k[i];
  fd[3] = c->c;
  fd[4] = c->m;
  weft_tensor_t *x = values(5, xd), *f = values(5, fd), *dy = values(5, yd);
  for (int op = 0; op < 3; op++) {
    weft_tensor_t *r[2];
    char *err[2];
    for (int fast = 0; fast < 2; fast++) {
      g_setenv("WEFT_CPU_CONV3D_FAST", fast ? "1" : "0", TRUE);
      if (op == 0) {
        weft_tensor_t *ins[2] = {x, f};
        r[fast] = run_op("Conv3D", c, ins, 2, NULL, -1, &err[fast]);
      } else if (op == 1) {
        weft_tensor_t *ins[2] = {f, dy};
        r[fast] = run_op("Conv3DBackpropInputV2", c, ins, 2, xd, 0, &err[fast]);
      } else {
        weft_tensor_t *ins[2] = {x, dy};
        r[fast] = run_op("Conv3DBackpropFilterV2", c, ins, 2, fd, 1, &err[fast]);
      }
    }
    static const char *const names[3] = {"Conv3D", "Conv3DBackpropInputV2",
                                         "Conv3DBackpropFilterV2"};
    /* The same error both ways (checked before the paths part), or close results. */
    g_assert_cmpstr(err[1], ==, err[0]);
    if (!err[0]) assert_close(r[1], r[0], names[op], c);
    for (int k = 0; k < 2; k++) {
      if (r[k]) weft_tensor_unref(r[k]);
      g_free(err[k]);
      errors += err[k] != NULL;
    }
  }
  g_unsetenv("WEFT_CPU_CONV3D_FAST");
  weft_tensor_unref(x);
  weft_tensor_unref(f);
  weft_tensor_unref(dy);
}

/* Random geometries (reproducible), each in both layouts. */
static void test_random(void) {
  static const int64_t ch[4] = {1, 2, 3, 16};
  for (int t = 0; t < 120; t++) {
    c3_t c = {0};
    c.n = 1 + next() % 3;
    c.c = ch[next() % 4];
    c.m = ch[next() % 4];
    for (int i = 0; i < 3; i++) {
      c.in[i] = 1 + next() % 7;
      c.k[i] = 1 + next() % 3;
      c.s[i] = 1 + next() % 2;
      c.d[i] = 1 + (next() % 3 == 0);
    }
    c.same = next() % 2;
    for (int l = 0; l < 2; l++) {
      c.cfirst = l;
      check_case(&c);
    }
  }
  /* Some windows larger than the input, not all. */
  g_assert_cmpint(errors, >, 0);
  g_assert_cmpint(errors, <, 120 * 2 * 3 * 2 / 4);
}

/* Hand-picked: the corpus's shapes, windows larger than the input, a GEMM-sized case. */
static void test_shapes(void) {
  static const c3_t cases[] = {
      {2, {4, 5, 6}, 2, 3, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, true, false},
      {2, {4, 5, 6}, 2, 3, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, false, false},
      {1, {5, 5, 5}, 2, 3, {2, 2, 2}, {1, 1, 1}, {2, 1, 2}, true, false},
      {1, {2, 3, 2}, 3, 2, {3, 3, 3}, {1, 1, 1}, {2, 2, 2}, true, false},  /* all padding */
      {2, {2, 3, 2}, 3, 2, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, true},  /* empty output */
      {1, {3, 2, 2}, 2, 2, {3, 1, 1}, {2, 1, 1}, {1, 1, 1}, false, false}, /* depth only */
      {1, {5, 4, 4}, 3, 4, {1, 2, 2}, {2, 1, 1}, {1, 1, 1}, true, true},   /* KD 1, sd 2 */
      {3, {6, 7, 5}, 16, 16, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, true, false}, /* pointwise */
      {2, {9, 11, 10}, 16, 32, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, true, false},
      {2, {9, 11, 10}, 16, 32, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, true, true},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) check_case(&cases[i]);
}

/* Batch items folded a few at a time. */
static void test_runs(void) {
  g_setenv("WEFT_CPU_CONV3D_FOLD_BYTES", "4000", TRUE);
  static const c3_t cases[] = {
      {5, {4, 5, 6}, 3, 4, {2, 3, 2}, {1, 1, 1}, {1, 1, 1}, true, false},
      {3, {5, 4, 4}, 2, 16, {3, 2, 2}, {2, 1, 2}, {1, 1, 1}, true, true},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) check_case(&cases[i]);
  g_unsetenv("WEFT_CPU_CONV3D_FOLD_BYTES");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conv3d/shapes", test_shapes);
  g_test_add_func("/conv3d/random", test_random);
  g_test_add_func("/conv3d/runs", test_runs);
  return g_test_run();
}
