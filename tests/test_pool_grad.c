/* test_pool_grad.c: float32 NHWC MaxPoolGrad, MaxPoolGradV2 and AvgPoolGrad (and NDHWC
 * MaxPool3DGrad, AvgPool3DGrad), which the CPU
 * plugin runs on its channel loops (plugins/cpu/cpu_pool_grad_fast.c), bit for bit against a
 * scalar reference written here the generic kernel's way (plugins/cpu/cpu_conv.c
 * pool_grad_range): one (image, channel) plane at a time, output windows row-major; the max's
 * gradient to the window's first maximum (strict >; the first NaN wins and stays), added in
 * float; the average's as dy / count in double, each addition rounded to float. Shapes: SAME,
 * VALID and EXPLICIT padding, stride below, equal to and above the window, a window of 1,
 * channels that are no multiple of 16 and more than the kernel's block of 64, batches, windows
 * wholly in the padding; values with many ties, NaN and infinities. Each case runs at 1 and 2
 * intra-op threads (and big enough that the 2-thread run splits). MaxPool3DGrad and
 * AvgPool3DGrad over NDHWC the same way against cpu_conv_nd.c's arithmetic (sums in double,
 * rounded once). */
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

typedef struct pg_case {
  int64_t n, h, w, c;
  int64_t kh, kw, sh, sw;
  const char *padding;
  int64_t pads[4]; /* EXPLICIT (MaxPoolGrad only): top, bottom, left, right */
} pg_case_t;

static const pg_case_t cases[] = {
    {2, 7, 9, 17, 3, 3, 2, 2, "SAME", {0}},          /* stride < window, 17 channels */
    {3, 8, 8, 5, 2, 2, 3, 3, "VALID", {0}},          /* stride > window */
    {3, 9, 10, 6, 2, 2, 3, 3, "SAME", {0}},          /* the same, SAME */
    {1, 6, 5, 3, 1, 1, 2, 2, "SAME", {0}},           /* window 1, strided */
    {2, 6, 5, 16, 1, 1, 1, 1, "VALID", {0}},         /* window 1: a copy */
    {2, 11, 13, 70, 3, 3, 1, 1, "SAME", {0}},        /* past one block of 64 channels */
    {1, 9, 9, 33, 4, 3, 1, 2, "VALID", {0}},         /* uneven window and strides */
    {2, 5, 5, 4, 5, 5, 1, 1, "SAME", {0}},           /* windows past every edge */
    {2, 5, 7, 4, 5, 7, 1, 1, "VALID", {0}},          /* global */
    {1, 7, 7, 3, 3, 3, 2, 2, "EXPLICIT", {1, 2, 0, 3}},
    {1, 4, 4, 2, 2, 2, 1, 1, "EXPLICIT", {3, 0, 3, 0}}, /* windows wholly in the padding */
    {4, 32, 32, 24, 3, 3, 2, 2, "SAME", {0}},        /* enough work to split */
    {2, 30, 28, 64, 2, 2, 2, 2, "VALID", {0}},       /* the same, non-overlapping */
    {2, 29, 31, 19, 3, 3, 1, 1, "VALID", {0}},       /* the same, stride 1 */
};

/* The output size and the padding before, TensorFlow's rules. */
static void geom(int64_t in, int64_t k, int64_t s, const char *padding, int64_t p0, int64_t p1,
                 int64_t *out, int64_t *before) {
  if (strcmp(padding, "SAME") == 0) {
    *out = (in + s - 1) / s;
    int64_t t = (*out - 1) * s + k - in;
    *before = t > 0 ? t / 2 : 0;
  } else {
    if (strcmp(padding, "VALID") == 0) p0 = p1 = 0;
    *out = (in + p0 + p1 - k) / s + 1;
    *before = p0;
  }
}

/* Reproducible values: ties (a few small integers) when ties, else in [-1, 1); some NaN and
 * infinities when specials. */
static weft_tensor_t *values_nd(int rank, const int64_t *dims, uint32_t seed, bool ties,
                                bool specials) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
    s = s * 1664525u + 1013904223u;
    uint32_t r = s >> 8;
    p[k] = ties ? (float)(r % 3) : -1 + 2 * (float)r / (float)(1u << 24);
    if (specials && r % 29 == 0) p[k] = NAN;
    if (specials && r % 37 == 1) p[k] = INFINITY;
    if (specials && r % 41 == 2) p[k] = -INFINITY;
  }
  return t;
}

static weft_tensor_t *values(int64_t n, int64_t h, int64_t w, int64_t c, uint32_t seed, bool ties,
                             bool specials) {
  int64_t dims[4] = {n, h, w, c};
  return values_nd(4, dims, seed, ties, specials);
}

/* The generic kernel's arithmetic, plane by plane. */
static void reference(const pg_case_t *c, bool is_max, const float *x, const float *dy,
                      float *dx, int64_t oh, int64_t ow, int64_t pt, int64_t pl) {
  memset(dx, 0, sizeof(float) * (size_t)(c->n * c->h * c->w * c->c));
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t ch = 0; ch < c->c; ch++)
      for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox++) {
          int64_t y0 = oy * c->sh - pt, x0 = ox * c->sw - pl;
          int64_t y1 = MIN(y0 + c->kh, c->h), x1 = MIN(x0 + c->kw, c->w);
          y0 = MAX(y0, 0);
          x0 = MAX(x0, 0);
          if (y0 >= y1 || x0 >= x1) continue;
          float g = dy[((n * oh + oy) * ow + ox) * c->c + ch];
#define AT(yy, xx) (((n * c->h + (yy)) * c->w + (xx)) * c->c + ch)
          if (is_max) {
            int64_t best_at = AT(y0, x0);
            for (int64_t yy = y0; yy < y1; yy++)
              for (int64_t xx = x0; xx < x1; xx++) {
                float v = x[AT(yy, xx)], b = x[best_at];
                if (v > b || (isnan(v) && !isnan(b))) best_at = AT(yy, xx);
              }
            dx[best_at] += g;
          } else {
            double gv = (double)g / (double)((y1 - y0) * (x1 - x0));
            for (int64_t yy = y0; yy < y1; yy++)
              for (int64_t xx = x0; xx < x1; xx++)
                dx[AT(yy, xx)] = (float)((double)dx[AT(yy, xx)] + gv);
          }
#undef AT
        }
}

static weft_output_t constant(weft_graph_t *g, const char *name, weft_tensor_t *t) {
  weft_status_t *st = NULL;
  weft_output_t k = weft_const(g, name, t, &st);
  OK(st);
  return k;
}

static weft_tensor_t *ints4(int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t four = 4;
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_INT32, 1, &four);
  int32_t *p = weft_tensor_data(t);
  p[0] = (int32_t)a, p[1] = (int32_t)b, p[2] = (int32_t)c, p[3] = (int32_t)d;
  return t;
}

/* The gradient's inputs: the average's orig_input_shape (rank values of shape) or the max's
 * orig_input x and orig_output y; then dy. */
static void add_inputs(weft_graph_t *g, weft_op_builder_t *b, bool avg, int rank,
                       const int64_t *shape, weft_tensor_t *x, weft_tensor_t *y,
                       weft_tensor_t *dy) {
  if (avg) {
    int64_t r = rank;
    weft_tensor_t *s = weft_tensor_new(WEFT_DT_INT32, 1, &r);
    int32_t *p = weft_tensor_data(s);
    for (int i = 0; i < rank; i++) p[i] = (int32_t)shape[i];
    weft_op_add_input(b, constant(g, "shape", s));
    weft_tensor_unref(s);
  } else {
    weft_op_add_input(b, constant(g, "x", x));
    weft_op_add_input(b, constant(g, "y", y));
  }
  weft_op_add_input(b, constant(g, "dy", dy));
}

/* Finishes op b of graph g, runs it at `threads` intra-op threads and frees the graph. */
static weft_tensor_t *finish_run(weft_graph_t *g, weft_op_builder_t *b, int threads) {
  weft_node_t *node = NULL;
  OK(weft_op_finish(b, &node));
  weft_session_options_t *opts = weft_session_options_new();
  weft_session_options_set_intra_op_threads(opts, threads);
  weft_status_t *st = NULL;
  weft_session_t *s = weft_session_new(g, opts, &st);
  OK(st);
  weft_session_options_free(opts);
  const char *fetch = "op";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  weft_session_free(s);
  weft_graph_free(g);
  return out;
}

/* op (MaxPoolGrad, MaxPoolGradV2 or AvgPoolGrad) on x / y / dy at `threads` intra-op threads. */
static weft_tensor_t *run(const char *op, const void *arg, weft_tensor_t *x, weft_tensor_t *y,
                          weft_tensor_t *dy, int threads) {
  const pg_case_t *c = arg;
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_op_builder_t *b = weft_op_new(g, op, "op");
  bool v2 = strcmp(op, "MaxPoolGradV2") == 0;
  int64_t shape[4] = {c->n, c->h, c->w, c->c};
  add_inputs(g, b, strcmp(op, "AvgPoolGrad") == 0, 4, shape, x, y, dy);
  if (v2) {
    weft_tensor_t *k = ints4(1, c->kh, c->kw, 1), *s = ints4(1, c->sh, c->sw, 1);
    weft_op_add_input(b, constant(g, "ksize", k));
    weft_op_add_input(b, constant(g, "strides", s));
    weft_tensor_unref(k);
    weft_tensor_unref(s);
  } else {
    int64_t k[4] = {1, c->kh, c->kw, 1};
    weft_op_set_attr_int_list(b, "ksize", k, 4);
    int64_t s[4] = {1, c->sh, c->sw, 1};
    weft_op_set_attr_int_list(b, "strides", s, 4);
  }
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_string(b, "padding", c->padding);
  if (strcmp(c->padding, "EXPLICIT") == 0) {
    int64_t p[8] = {0, 0, c->pads[0], c->pads[1], c->pads[2], c->pads[3], 0, 0};
    weft_op_set_attr_int_list(b, "explicit_paddings", p, 8);
  }
  weft_op_set_attr_string(b, "data_format", "NHWC");
  return finish_run(g, b, threads);
}

/* Bit-for-bit equality, with the first difference reported. A NaN matches any NaN: which of two
 * NaNs an addition returns (the sign of inf - inf's NaN against a NaN gradient) follows the
 * operand order the compiler picks for a commutative add, in the generic kernel as here. */
static void check_bits(const weft_tensor_t *got, const float *want, int64_t count,
                       const char *what) {
  g_assert_cmpint(weft_tensor_num_elements(got), ==, count);
  const float *p = weft_tensor_data((weft_tensor_t *)got);
  for (int64_t i = 0; i < count; i++) {
    uint32_t a, b;
    memcpy(&a, &p[i], 4);
    memcpy(&b, &want[i], 4);
    if (a != b && !(isnan(p[i]) && isnan(want[i])))
      g_error("%s: element %" G_GINT64_FORMAT " is %.9g (0x%08x), expected %.9g (0x%08x)", what,
              i, (double)p[i], a, (double)want[i], b);
  }
}

/* run or run3 of op on case c at 1 and then 2 intra-op threads, each bitwise against want. */
typedef weft_tensor_t *(*run_fn)(const char *op, const void *c, weft_tensor_t *x, weft_tensor_t *y,
                                 weft_tensor_t *dy, int threads);
static void check_threads(run_fn run_op, const char *op, const void *c, size_t i, int vals,
                          weft_tensor_t *x, weft_tensor_t *y, weft_tensor_t *dy, const float *want,
                          int64_t count) {
  for (int threads = 1; threads <= 2; threads++) {
    weft_tensor_t *got = run_op(op, c, x, y, dy, threads);
    char *what = g_strdup_printf("%s case %zu values %d threads %d", op, i, vals, threads);
    check_bits(got, want, count, what);
    g_free(what);
    weft_tensor_unref(got);
  }
}

static void test_pool_grad(void) {
  static const char *const ops[] = {"MaxPoolGrad", "MaxPoolGradV2", "AvgPoolGrad"};
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    const pg_case_t *c = &cases[i];
    int64_t oh, ow, pt, pl;
    geom(c->h, c->kh, c->sh, c->padding, c->pads[0], c->pads[1], &oh, &pt);
    geom(c->w, c->kw, c->sw, c->padding, c->pads[2], c->pads[3], &ow, &pl);
    bool explicit_pad = strcmp(c->padding, "EXPLICIT") == 0;
    for (int vals = 0; vals < 3; vals++) {
      /* 0: plain values; 1: ties; 2: ties with NaN and infinities. */
      weft_tensor_t *x = values(c->n, c->h, c->w, c->c, (uint32_t)(7 * i + (size_t)vals),
                                vals > 0, vals == 2);
      weft_tensor_t *dy = values(c->n, oh, ow, c->c, (uint32_t)(1000 + i), false, vals == 2);
      /* MaxPoolGrad checks orig_output's shape alone; its values do not matter here. */
      weft_tensor_t *y = values(c->n, oh, ow, c->c, 3, false, false);
      float *want = g_new(float, c->n * c->h * c->w * c->c + 1);
      for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        bool is_max = o < 2;
        /* Only MaxPoolGrad takes EXPLICIT padding. */
        if (explicit_pad && o != 0) continue;
        reference(c, is_max, weft_tensor_data(x), weft_tensor_data(dy), want, oh, ow, pt, pl);
        check_threads(run, ops[o], c, i, vals, x, y, dy, want, c->n * c->h * c->w * c->c);
      }
      g_free(want);
      weft_tensor_unref(x);
      weft_tensor_unref(y);
      weft_tensor_unref(dy);
    }
  }
}

/* MaxPool3DGrad / AvgPool3DGrad over NDHWC (cpu_conv_nd.c's generic kernel: sums in double,
 * rounded once; the max's first maximum in depth, row, column order, NaN as above). */
typedef struct pg3_case {
  int64_t n, in[3], c, k[3], s[3];
  const char *padding;
} pg3_case_t;

static const pg3_case_t cases3[] = {
    {2, {5, 9, 8}, 19, {3, 3, 3}, {2, 2, 2}, "SAME"},   /* stride < window */
    {2, {6, 7, 7}, 70, {2, 2, 2}, {3, 3, 3}, "VALID"},  /* stride > window, 70 channels */
    {1, {4, 5, 6}, 3, {1, 1, 1}, {2, 2, 2}, "SAME"},    /* window 1 */
    {3, {3, 4, 5}, 5, {3, 4, 5}, {1, 1, 1}, "VALID"},   /* global */
    {2, {9, 8, 8}, 24, {3, 3, 3}, {1, 2, 2}, "SAME"},   /* enough work to split */
};

static void reference3(const pg3_case_t *c, bool is_max, const float *x, const float *dy,
                       float *dx, const int64_t *out, const int64_t *pb) {
  int64_t vol = c->in[0] * c->in[1] * c->in[2], ovol = out[0] * out[1] * out[2];
  double *acc = g_new0(double, c->n * vol * c->c + 1);
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t ch = 0; ch < c->c; ch++)
      for (int64_t p = 0; p < ovol; p++) {
        int64_t o[3] = {p / (out[1] * out[2]), p / out[2] % out[1], p % out[2]};
        int64_t lo[3], hi[3], count = 1;
        for (int i = 0; i < 3; i++) {
          lo[i] = MAX(o[i] * c->s[i] - pb[i], 0);
          hi[i] = MIN(o[i] * c->s[i] - pb[i] + c->k[i], c->in[i]);
          count *= MAX(hi[i] - lo[i], 0);
        }
        if (count == 0) continue;
        double g = dy[(n * ovol + p) * c->c + ch];
        int64_t best_at = -1;
        for (int64_t a = lo[0]; a < hi[0]; a++)
          for (int64_t b = lo[1]; b < hi[1]; b++)
            for (int64_t q = lo[2]; q < hi[2]; q++) {
              int64_t at = (n * vol + (a * c->in[1] + b) * c->in[2] + q) * c->c + ch;
              if (!is_max) {
                acc[at] += g / (double)count;
                continue;
              }
              float v = x[at], bv = best_at < 0 ? 0 : x[best_at];
              if (best_at < 0 || v > bv || (isnan(v) && !isnan(bv))) best_at = at;
            }
        if (is_max) acc[best_at] += g;
      }
  for (int64_t i = 0; i < c->n * vol * c->c; i++) dx[i] = (float)acc[i];
  g_free(acc);
}

static weft_tensor_t *run3(const char *op, const void *arg, weft_tensor_t *x, weft_tensor_t *y,
                           weft_tensor_t *dy, int threads) {
  const pg3_case_t *c = arg;
  weft_graph_t *g = weft_graph_new();
  weft_graph_push_device(g, "/device:CPU:0");
  weft_op_builder_t *b = weft_op_new(g, op, "op");
  int64_t shape[5] = {c->n, c->in[0], c->in[1], c->in[2], c->c};
  add_inputs(g, b, strcmp(op, "AvgPool3DGrad") == 0, 5, shape, x, y, dy);
  int64_t k[5] = {1, c->k[0], c->k[1], c->k[2], 1}, st5[5] = {1, c->s[0], c->s[1], c->s[2], 1};
  weft_op_set_attr_int_list(b, "ksize", k, 5);
  weft_op_set_attr_int_list(b, "strides", st5, 5);
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  weft_op_set_attr_string(b, "padding", c->padding);
  weft_op_set_attr_string(b, "data_format", "NDHWC");
  return finish_run(g, b, threads);
}

static void test_pool3d_grad(void) {
  static const char *const ops[] = {"MaxPool3DGrad", "AvgPool3DGrad"};
  for (size_t i = 0; i < G_N_ELEMENTS(cases3); i++) {
    const pg3_case_t *c = &cases3[i];
    int64_t out[3], pb[3];
    for (int d = 0; d < 3; d++) geom(c->in[d], c->k[d], c->s[d], c->padding, 0, 0, &out[d], &pb[d]);
    int64_t xd[5] = {c->n, c->in[0], c->in[1], c->in[2], c->c};
    int64_t yd[5] = {c->n, out[0], out[1], out[2], c->c};
    int64_t count = c->n * c->in[0] * c->in[1] * c->in[2] * c->c;
    for (int vals = 0; vals < 3; vals++) {
      weft_tensor_t *x = values_nd(5, xd, (uint32_t)(31 * i + (size_t)vals), vals > 0, vals == 2);
      weft_tensor_t *dy = values_nd(5, yd, (uint32_t)(2000 + i), false, vals == 2);
      weft_tensor_t *y = values_nd(5, yd, 5, false, false);
      float *want = g_new(float, count + 1);
      for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        reference3(c, o == 0, weft_tensor_data(x), weft_tensor_data(dy), want, out, pb);
        check_threads(run3, ops[o], c, i, vals, x, y, dy, want, count);
      }
      g_free(want);
      weft_tensor_unref(x);
      weft_tensor_unref(y);
      weft_tensor_unref(dy);
    }
  }
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/pool_grad/nhwc_f32", test_pool_grad);
  g_test_add_func("/pool_grad/ndhwc_f32", test_pool3d_grad);
  return g_test_run();
}
