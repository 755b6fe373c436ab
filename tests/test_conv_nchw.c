/* test_conv_nchw.c: the channels-first (NCHW) float32 convolutions and pools, which the CPU
 * plugin runs on its NHWC kernels between two transposes (plugins/cpu/cpu_nchw.c), or, for a
 * Conv2D with few taps or filters, directly (plugins/cpu/cpu_conv_nchw.c; a Conv2DBackpropInput
 * through it, plugins/cpu/cpu_conv_transpose_nchw.c). For odd
 * shapes (sizes that fill no transpose block, one channel, strides, dilations, SAME / VALID /
 * EXPLICIT padding) each op runs once in NHWC and once on the same values laid out NCHW:
 * Conv2D and DepthwiseConv2dNative are checked against a double-precision reference computed
 * here, and every op's NCHW result, read back in NHWC order, must equal its NHWC result. */
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

typedef struct conv_case {
  int64_t n, h, w, c, m; /* m: output channels (depthwise: the multiplier) */
  int64_t kh, kw, sh, sw, dh, dw;
  const char *padding;
  int64_t pads[4]; /* EXPLICIT: top, bottom, left, right */
} conv_case_t;

static const conv_case_t cases[] = {
    {1, 5, 7, 1, 3, 2, 2, 1, 1, 1, 1, "SAME", {0}},          /* one channel */
    {3, 33, 35, 2, 5, 2, 2, 1, 1, 1, 1, "SAME", {0}},        /* channels_first_*: C = 2 */
    {2, 17, 9, 37, 33, 3, 3, 2, 1, 1, 1, "VALID", {0}},      /* C past a transpose block */
    {1, 13, 11, 5, 7, 3, 2, 1, 2, 2, 1, "SAME", {0}},        /* dilated */
    {2, 8, 10, 3, 4, 3, 3, 1, 1, 1, 2, "EXPLICIT", {1, 2, 0, 3}},
    {1, 9, 9, 40, 64, 1, 1, 1, 1, 1, 1, "VALID", {0}},       /* pointwise */
    {2, 40, 40, 3, 8, 5, 5, 3, 3, 1, 1, "SAME", {0}},        /* several GEMM tiles */
};

/* Shapes for the direct NCHW Conv2D (plugins/cpu/cpu_conv_nchw.c: few taps or filters): widths
 * that end mid-vector, every padding, strides 1 to 4 (5: the transposed path again), dilation,
 * 1 and 5 channels, filter counts past a block of 4, a window larger than the input, rows
 * longer than one run of outputs, several runs of rows, several images in one run (1-D), work
 * enough for the intra-op pool, and an empty output. */
static const conv_case_t direct_cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "VALID", {0}},          /* one of everything */
    {2, 7, 1, 1, 2, 3, 1, 1, 1, 1, 1, "SAME", {0}},           /* width 1 */
    {1, 6, 17, 5, 5, 2, 3, 1, 1, 1, 1, "VALID", {0}},         /* 5 channels, 4 + 1 filters */
    {3, 9, 33, 2, 9, 3, 3, 2, 3, 1, 1, "SAME", {0}},          /* strides 2 and 3 */
    {1, 10, 31, 1, 4, 3, 3, 3, 2, 2, 3, "SAME", {0}},         /* strides and dilations */
    {1, 4, 5, 2, 3, 7, 9, 1, 1, 1, 1, "SAME", {0}},           /* window larger than the input */
    {1, 3, 3, 2, 2, 5, 5, 2, 2, 1, 1, "EXPLICIT", {2, 3, 1, 4}}, /* the same, padded */
    {1, 3, 3, 2, 3, 4, 4, 1, 1, 1, 1, "VALID", {0}},          /* an empty output */
    {2, 3, 600, 2, 3, 2, 2, 1, 1, 1, 1, "SAME", {0}},         /* rows longer than a run */
    {1, 4, 150, 2, 3, 3, 3, 2, 2, 1, 1, "SAME", {0}},         /* long strided rows */
    {1, 3, 100, 1, 2, 3, 3, 1, 1, 1, 1, "EXPLICIT", {1, 1, 7, 2}}, /* wide left padding */
    {1, 40, 40, 3, 2, 3, 3, 1, 1, 1, 2, "EXPLICIT", {0, 1, 5, 0}}, /* several runs of rows */
    {2, 12, 13, 4, 6, 2, 2, 4, 4, 1, 1, "VALID", {0}},        /* stride 4 */
    {1, 12, 13, 2, 3, 2, 2, 5, 1, 1, 1, "SAME", {0}},         /* stride 5: transposed */
    {1, 15, 21, 2, 3, 1, 2, 1, 2, 1, 2, "SAME", {0}},         /* the corpus's 1x2 windows */
    {64, 5, 5, 2, 3, 2, 2, 1, 1, 1, 1, "SAME", {0}},          /* the corpus's batch of 64 */
    {64, 1, 5, 2, 3, 1, 2, 1, 1, 1, 1, "VALID", {0}},         /* 1-D: 51 + 13 images a run */
    {9, 1, 7, 3, 2, 1, 3, 1, 2, 1, 1, "SAME", {0}},           /* 1-D, strided */
    {4, 32, 32, 3, 8, 3, 3, 1, 1, 1, 1, "SAME", {0}},         /* runs over the intra-op pool */
};

/* Reproducible values in [-1, 1) from a linear congruential sequence. */
static weft_tensor_t *values(int rank, const int64_t *dims, uint32_t seed) {
  weft_tensor_t *t = weft_tensor_new(WEFT_DT_FLOAT, rank, dims);
  float *p = weft_tensor_data(t);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t k = 0; k < weft_tensor_num_elements(t); k++) {
    s = s * 1664525u + 1013904223u;
    p[k] = -1 + 2 * (float)(s >> 8) / (float)(1u << 24);
  }
  return t;
}

/* NHWC [n, h, w, c] as NCHW, or back (to_nchw false: t is NCHW [n, c, h, w]). */
static weft_tensor_t *relayout(const weft_tensor_t *t, bool to_nchw) {
  const int64_t *d = weft_tensor_dims(t);
  int64_t n = d[0], h = to_nchw ? d[1] : d[2], w = to_nchw ? d[2] : d[3],
          c = to_nchw ? d[3] : d[1];
  int64_t nd[4] = {n, c, h, w}, hd[4] = {n, h, w, c};
  weft_tensor_t *r = weft_tensor_new(WEFT_DT_FLOAT, 4, to_nchw ? nd : hd);
  const float *s = weft_tensor_data((weft_tensor_t *)t);
  float *o = weft_tensor_data(r);
  for (int64_t b = 0; b < n; b++)
    for (int64_t y = 0; y < h; y++)
      for (int64_t x = 0; x < w; x++)
        for (int64_t q = 0; q < c; q++) {
          int64_t hi = ((b * h + y) * w + x) * c + q, ci = ((b * c + q) * h + y) * w + x;
          if (to_nchw)
            o[ci] = s[hi];
          else
            o[hi] = s[ci];
        }
  return r;
}

/* [a, b] in the layout's positions of a 4-value attribute, 1 elsewhere. */
static void hw4(bool nchw, int64_t a, int64_t b, int64_t *v) {
  v[0] = v[1] = v[2] = v[3] = 1;
  v[nchw ? 2 : 1] = a;
  v[nchw ? 3 : 2] = b;
}

/* Runs `op` on inputs ins (NHWC image tensors are laid out NCHW here when nchw) and returns its
 * output as NHWC (filter-shaped outputs as they are). sizes: the sizes input (input_sizes or
 * filter_sizes, NHWC order for an image), input sizes_at of the op, or NULL. */
static weft_tensor_t *run_op(const char *op, const conv_case_t *c, bool nchw, bool pool,
                             const int64_t *sizes, int sizes_at, bool sizes_image,
                             weft_tensor_t *const *ins, const bool *image, int n_in,
                             bool image_out) {
  weft_graph_t *g = weft_graph_new();
  /* These are the CPU plugin's kernels; a machine with a GPU would place the op there. */
  weft_graph_push_device(g, "/device:CPU:0");
  weft_op_builder_t *b = weft_op_new(g, op, "op");
  weft_status_t *st = NULL;
  for (int k = 0; k < n_in; k++) {
    if (sizes && k == sizes_at) {
      int64_t four = 4;
      weft_tensor_t *s = weft_tensor_new(WEFT_DT_INT32, 1, &four);
      int32_t *p = weft_tensor_data(s);
      static const int to_nchw[4] = {0, 3, 1, 2};
      for (int q = 0; q < 4; q++) p[q] = (int32_t)sizes[nchw && sizes_image ? to_nchw[q] : q];
      weft_op_add_input(b, weft_const(g, "sizes", s, &st));
      OK(st);
      weft_tensor_unref(s);
    }
    weft_tensor_t *t = nchw && image[k] ? relayout(ins[k], true) : weft_tensor_ref(ins[k]);
    char name[16];
    g_snprintf(name, sizeof name, "in%d", k);
    weft_op_add_input(b, weft_const(g, name, t, &st));
    OK(st);
    weft_tensor_unref(t);
  }
  int64_t v[4];
  weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
  hw4(nchw, c->sh, c->sw, v);
  weft_op_set_attr_int_list(b, "strides", v, 4);
  if (pool) {
    hw4(nchw, c->kh, c->kw, v);
    weft_op_set_attr_int_list(b, "ksize", v, 4);
  } else {
    hw4(nchw, c->dh, c->dw, v);
    weft_op_set_attr_int_list(b, "dilations", v, 4);
  }
  weft_op_set_attr_string(b, "padding", c->padding);
  if (strcmp(c->padding, "EXPLICIT") == 0) {
    int64_t p[8] = {0};
    int ih = nchw ? 2 : 1, iw = nchw ? 3 : 2;
    p[2 * ih] = c->pads[0];
    p[2 * ih + 1] = c->pads[1];
    p[2 * iw] = c->pads[2];
    p[2 * iw + 1] = c->pads[3];
    weft_op_set_attr_int_list(b, "explicit_paddings", p, 8);
  }
  weft_op_set_attr_string(b, "data_format", nchw ? "NCHW" : "NHWC");
  weft_node_t *node = NULL;
  OK(weft_op_finish(b, &node));
  weft_session_t *s = weft_session_new(g, NULL, &st);
  OK(st);
  const char *fetch = "op";
  weft_tensor_t *out = NULL;
  OK(weft_session_run(s, NULL, NULL, 0, &fetch, &out, 1, NULL, 0));
  weft_session_free(s);
  weft_graph_free(g);
  if (nchw && image_out) {
    weft_tensor_t *r = relayout(out, false);
    weft_tensor_unref(out);
    return r;
  }
  return out;
}

/* The output size and the padding before, TensorFlow's rules. */
static void geom(int64_t in, int64_t k, int64_t s, int64_t d, const char *padding, int64_t p0,
                 int64_t p1, int64_t *out, int64_t *before) {
  int64_t e = (k - 1) * d + 1;
  if (strcmp(padding, "SAME") == 0) {
    *out = (in + s - 1) / s;
    int64_t t = (*out - 1) * s + e - in;
    *before = t > 0 ? t / 2 : 0;
  } else {
    if (strcmp(padding, "VALID") == 0) p0 = p1 = 0;
    *out = (in + p0 + p1 - e) / s + 1;
    *before = p0;
  }
}

/* NHWC convolution in double (depthwise: filter [kh, kw, c, mult]); both results within the
 * rounding bound of the sum of the absolute terms. */
static void check_reference(const conv_case_t *c, bool depthwise, const weft_tensor_t *x,
                            const weft_tensor_t *f, const weft_tensor_t *got, const char *what) {
  int64_t oh, ow, pt, pl;
  geom(c->h, c->kh, c->sh, c->dh, c->padding, c->pads[0], c->pads[1], &oh, &pt);
  geom(c->w, c->kw, c->sw, c->dw, c->padding, c->pads[2], c->pads[3], &ow, &pl);
  int64_t oc = depthwise ? c->c * c->m : c->m;
  const int64_t *gd = weft_tensor_dims(got);
  g_assert_cmpint(gd[0], ==, c->n);
  g_assert_cmpint(gd[1], ==, oh);
  g_assert_cmpint(gd[2], ==, ow);
  g_assert_cmpint(gd[3], ==, oc);
  const float *xp = weft_tensor_data((weft_tensor_t *)x);
  const float *fp = weft_tensor_data((weft_tensor_t *)f);
  const float *gp = weft_tensor_data((weft_tensor_t *)got);
  for (int64_t b = 0; b < c->n; b++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++)
        for (int64_t o = 0; o < oc; o++) {
          double s = 0, abs_s = 0;
          for (int64_t i = 0; i < c->kh; i++)
            for (int64_t j = 0; j < c->kw; j++) {
              int64_t iy = oy * c->sh + i * c->dh - pt, ix = ox * c->sw + j * c->dw - pl;
              if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
              const float *px = xp + ((b * c->h + iy) * c->w + ix) * c->c;
              for (int64_t q = depthwise ? o / c->m : 0; q < (depthwise ? o / c->m + 1 : c->c);
                   q++) {
                int64_t fi = depthwise ? (i * c->kw + j) * oc + o
                                       : ((i * c->kw + j) * c->c + q) * c->m + o;
                double t = (double)px[q] * fp[fi];
                s += t;
                abs_s += fabs(t);
              }
            }
          double v = gp[((b * oh + oy) * ow + ox) * oc + o];
          if (!(fabs(v - s) <= 1e-6 * (abs_s + 1)))
            g_error("%s: output (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                    ", %" G_GINT64_FORMAT "): %.9g, expected %.9g",
                    what, b, oy, ox, o, v, s);
        }
}

static void assert_same(const weft_tensor_t *a, const weft_tensor_t *b, double tol,
                        const char *what) {
  int64_t n = weft_tensor_num_elements(a);
  g_assert_cmpint(weft_tensor_num_elements(b), ==, n);
  for (int k = 0; k < 4; k++) g_assert_cmpint(weft_tensor_dims(a)[k], ==, weft_tensor_dims(b)[k]);
  const float *p = weft_tensor_data((weft_tensor_t *)a), *q = weft_tensor_data((weft_tensor_t *)b);
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)p[i] - q[i]) <= tol * (fabs((double)q[i]) + 1)))
      g_error("%s: element %" G_GINT64_FORMAT ": NCHW %.9g, NHWC %.9g", what, i, p[i], q[i]);
}

/* `op` (Conv2D or DepthwiseConv2dNative) on x and f in NHWC and in NCHW: both against the
 * reference, and the two within tol of each other. */
static void check_conv(const conv_case_t *c, bool depthwise, weft_tensor_t *x, weft_tensor_t *f,
                       double tol, const char *what) {
  const char *op = depthwise ? "DepthwiseConv2dNative" : "Conv2D";
  weft_tensor_t *ins[2] = {x, f};
  const bool image[2] = {true, false};
  weft_tensor_t *yh = run_op(op, c, false, false, NULL, -1, false, ins, image, 2, true);
  weft_tensor_t *yc = run_op(op, c, true, false, NULL, -1, false, ins, image, 2, true);
  check_reference(c, depthwise, x, f, yc, what);
  check_reference(c, depthwise, x, f, yh, what);
  assert_same(yc, yh, tol, what);
  weft_tensor_unref(yh);
  weft_tensor_unref(yc);
}

static void test_forward(void) {
  for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
    const conv_case_t *c = &cases[ci];
    int64_t xd[4] = {c->n, c->h, c->w, c->c}, fd[4] = {c->kh, c->kw, c->c, c->m};
    weft_tensor_t *x = values(4, xd, 1 + (uint32_t)ci), *f = values(4, fd, 100 + (uint32_t)ci);
    weft_tensor_t *ins[2] = {x, f};
    const bool image[2] = {true, false};
    for (int depthwise = 0; depthwise < 2; depthwise++) {
      if (depthwise && strcmp(c->padding, "EXPLICIT") == 0) continue;
      char *what = g_strdup_printf("%s case %zu", depthwise ? "DepthwiseConv2dNative" : "Conv2D",
                                   ci);
      check_conv(c, depthwise, x, f, 1e-6, what);
      g_free(what);
    }
    for (int is_max = 0; is_max < 2; is_max++) {
      if (strcmp(c->padding, "EXPLICIT") == 0) continue;
      const char *op = is_max ? "MaxPool" : "AvgPool";
      weft_tensor_t *yh = run_op(op, c, false, true, NULL, -1, false, ins, image, 1, true);
      weft_tensor_t *yc = run_op(op, c, true, true, NULL, -1, false, ins, image, 1, true);
      char *what = g_strdup_printf("%s case %zu", op, ci);
      assert_same(yc, yh, 0, what);
      g_free(what);
      weft_tensor_unref(yh);
      weft_tensor_unref(yc);
    }
    weft_tensor_unref(x);
    weft_tensor_unref(f);
  }
}

/* Conv2D on the direct NCHW path: against the reference, and against NHWC (the GEMM, whose
 * sums run in another order). */
static void test_direct(void) {
  for (size_t ci = 0; ci < G_N_ELEMENTS(direct_cases); ci++) {
    const conv_case_t *c = &direct_cases[ci];
    int64_t xd[4] = {c->n, c->h, c->w, c->c}, fd[4] = {c->kh, c->kw, c->c, c->m};
    weft_tensor_t *x = values(4, xd, 11 + (uint32_t)ci), *f = values(4, fd, 500 + (uint32_t)ci);
    char *what = g_strdup_printf("direct Conv2D case %zu", ci);
    check_conv(c, false, x, f, 1e-5, what);
    g_free(what);
    weft_tensor_unref(x);
    weft_tensor_unref(f);
  }
}

/* A case's NHWC shapes: x, the filter, and dy (the forward output). */
static void case_dims(const conv_case_t *c, int64_t *xd, int64_t *fd, int64_t *yd) {
  int64_t oh, ow, before;
  geom(c->h, c->kh, c->sh, c->dh, c->padding, c->pads[0], c->pads[1], &oh, &before);
  geom(c->w, c->kw, c->sw, c->dw, c->padding, c->pads[2], c->pads[3], &ow, &before);
  memcpy(xd, (int64_t[4]){c->n, c->h, c->w, c->c}, sizeof(int64_t[4]));
  memcpy(fd, (int64_t[4]){c->kh, c->kw, c->c, c->m}, sizeof(int64_t[4]));
  memcpy(yd, (int64_t[4]){c->n, oh, ow, c->m}, sizeof(int64_t[4]));
}

/* Conv2DBackpropInput and Conv2DBackpropFilter: NCHW against NHWC, on dy of the forward shape. */
static void test_gradients(void) {
  for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
    const conv_case_t *c = &cases[ci];
    int64_t xd[4], fd[4], yd[4];
    case_dims(c, xd, fd, yd);
    weft_tensor_t *x = values(4, xd, 7 + (uint32_t)ci), *f = values(4, fd, 200 + (uint32_t)ci);
    weft_tensor_t *dy = values(4, yd, 300 + (uint32_t)ci);
    char *what = g_strdup_printf("Conv2DBackpropInput case %zu", ci);
    weft_tensor_t *in_i[2] = {f, dy};
    const bool img_i[2] = {false, true};
    weft_tensor_t *dh =
        run_op("Conv2DBackpropInput", c, false, false, xd, 0, true, in_i, img_i, 2, true);
    weft_tensor_t *dc =
        run_op("Conv2DBackpropInput", c, true, false, xd, 0, true, in_i, img_i, 2, true);
    assert_same(dc, dh, 1e-6, what);
    weft_tensor_unref(dh);
    weft_tensor_unref(dc);
    g_free(what);
    what = g_strdup_printf("Conv2DBackpropFilter case %zu", ci);
    weft_tensor_t *in_f[2] = {x, dy};
    const bool img_f[2] = {true, true};
    weft_tensor_t *fh =
        run_op("Conv2DBackpropFilter", c, false, false, fd, 1, false, in_f, img_f, 2, false);
    weft_tensor_t *fc =
        run_op("Conv2DBackpropFilter", c, true, false, fd, 1, false, in_f, img_f, 2, false);
    assert_same(fc, fh, 1e-6, what);
    weft_tensor_unref(fh);
    weft_tensor_unref(fc);
    g_free(what);
    weft_tensor_unref(x);
    weft_tensor_unref(f);
    weft_tensor_unref(dy);
  }
}

/* Conv2DBackpropInput in double from dy (NHWC [n, oh, ow, m]) and f [kh, kw, c, m]: each dy
 * pixel's window scattered back into dx; got (NHWC) within the rounding bound of the sum of the
 * absolute terms. */
static void check_bp_input_reference(const conv_case_t *c, const weft_tensor_t *f,
                                     const weft_tensor_t *dy, const weft_tensor_t *got,
                                     const char *what) {
  int64_t oh, ow, pt, pl;
  geom(c->h, c->kh, c->sh, c->dh, c->padding, c->pads[0], c->pads[1], &oh, &pt);
  geom(c->w, c->kw, c->sw, c->dw, c->padding, c->pads[2], c->pads[3], &ow, &pl);
  int64_t nx = c->n * c->h * c->w * c->c;
  for (int k = 0; k < 4; k++)
    g_assert_cmpint(weft_tensor_dims(got)[k], ==, ((const int64_t[]){c->n, c->h, c->w, c->c})[k]);
  double *sum = g_new0(double, nx + 1), *abs_sum = g_new0(double, nx + 1);
  const float *fp = weft_tensor_data((weft_tensor_t *)f);
  const float *yp = weft_tensor_data((weft_tensor_t *)dy);
  const float *gp = weft_tensor_data((weft_tensor_t *)got);
  for (int64_t b = 0; b < c->n; b++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++)
        for (int64_t i = 0; i < c->kh; i++)
          for (int64_t j = 0; j < c->kw; j++) {
            int64_t iy = oy * c->sh + i * c->dh - pt, ix = ox * c->sw + j * c->dw - pl;
            if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
            for (int64_t q = 0; q < c->c; q++)
              for (int64_t o = 0; o < c->m; o++) {
                double t = (double)yp[((b * oh + oy) * ow + ox) * c->m + o] *
                           fp[((i * c->kw + j) * c->c + q) * c->m + o];
                int64_t at = ((b * c->h + iy) * c->w + ix) * c->c + q;
                sum[at] += t;
                abs_sum[at] += fabs(t);
              }
          }
  for (int64_t k = 0; k < nx; k++)
    if (!(fabs(gp[k] - sum[k]) <= 1e-6 * (abs_sum[k] + 1)))
      g_error("%s: element %" G_GINT64_FORMAT ": %.9g, expected %.9g", what, k, gp[k], sum[k]);
  g_free(sum);
  g_free(abs_sum);
}

/* Shapes for the direct NCHW Conv2DBackpropInput (plugins/cpu/cpu_conv_transpose_nchw.c): the
 * corpus's Conv2DTranspose layers (2 channels, 2x2 and 1x2 windows, 5x5 images, batch 1 and 64),
 * output sizes that the same dy admits (VALID with a stride: the rows the windows miss are
 * zeros), strides 1-4 (phases of dx; some without taps where the window is smaller than the
 * stride) and 5 (the GEMM path), dilation, 1 and 5 channels, and a window larger than the
 * output. */
static const conv_case_t transpose_cases[] = {
    {1, 5, 5, 2, 3, 2, 2, 1, 1, 1, 1, "SAME", {0}},           /* the corpus's k2_s1 */
    {64, 5, 5, 2, 3, 2, 2, 1, 1, 1, 1, "SAME", {0}},          /* ... at batch 64 */
    {2, 5, 5, 2, 3, 1, 2, 1, 2, 1, 1, "SAME", {0}},           /* k12 / s12 */
    {2, 6, 7, 2, 2, 2, 2, 1, 2, 1, 1, "SAME", {0}},
    {1, 8, 9, 1, 1, 3, 3, 2, 2, 1, 1, "VALID", {0}},          /* one channel, stride 2 x 2 */
    {1, 9, 10, 1, 4, 3, 3, 2, 2, 1, 1, "VALID", {0}},         /* a missed row and column */
    {3, 7, 11, 5, 5, 2, 3, 1, 1, 2, 1, "SAME", {0}},          /* 5 channels, dilated */
    {2, 10, 13, 3, 4, 3, 2, 1, 1, 1, 1, "EXPLICIT", {1, 2, 0, 1}},
    {1, 3, 4, 2, 3, 5, 5, 1, 1, 1, 1, "SAME", {0}},           /* window larger than dx */
    {2, 9, 9, 2, 3, 3, 3, 3, 3, 1, 1, "SAME", {0}},           /* stride 3 x 3 */
    {2, 11, 9, 3, 2, 2, 5, 4, 3, 1, 1, "VALID", {0}},         /* a phase without taps */
    {1, 9, 9, 2, 3, 3, 3, 2, 1, 1, 2, "SAME", {0}},           /* stride 2 rows, dilation 2 cols */
    {1, 12, 10, 2, 3, 3, 3, 5, 2, 1, 1, "SAME", {0}},         /* stride 5: the GEMM */
    {1, 9, 12, 2, 2, 3, 2, 2, 2, 2, 1, "SAME", {0}},          /* stride and dilation: the GEMM */
    {4, 40, 33, 2, 3, 2, 2, 1, 1, 1, 1, "SAME", {0}},         /* runs over the intra-op pool */
};

/* Conv2DBackpropInput in NCHW (direct or transposed) and NHWC: both against the reference, and
 * each other. */
static void test_transpose(void) {
  for (size_t ci = 0; ci < G_N_ELEMENTS(transpose_cases); ci++) {
    const conv_case_t *c = &transpose_cases[ci];
    int64_t xd[4], fd[4], yd[4];
    case_dims(c, xd, fd, yd);
    weft_tensor_t *f = values(4, fd, 700 + (uint32_t)ci), *dy = values(4, yd, 800 + (uint32_t)ci);
    weft_tensor_t *ins[2] = {f, dy};
    const bool image[2] = {false, true};
    weft_tensor_t *dh =
        run_op("Conv2DBackpropInput", c, false, false, xd, 0, true, ins, image, 2, true);
    weft_tensor_t *dc =
        run_op("Conv2DBackpropInput", c, true, false, xd, 0, true, ins, image, 2, true);
    char *what = g_strdup_printf("Conv2DBackpropInput transpose case %zu", ci);
    check_bp_input_reference(c, f, dy, dc, what);
    check_bp_input_reference(c, f, dy, dh, what);
    assert_same(dc, dh, 1e-5, what);
    g_free(what);
    weft_tensor_unref(dh);
    weft_tensor_unref(dc);
    weft_tensor_unref(f);
    weft_tensor_unref(dy);
  }
}

/* Pools on NCHW planes (cpu_conv.c runs an NCHW pool as an NHWC pool of n * c one-channel
 * planes, a column plane as a row): strides 1-3 along rows and columns, SAME and VALID, windows
 * past the edge, the 1-D nets' [n, c, 1, w] and [n, c, w, 1]. */
static const conv_case_t pool_cases[] = {
    {2, 1, 1024, 2, 2, 1, 2, 1, 2, 1, 1, "SAME", {0}},   /* max_pooling1d channels_first s2 */
    {2, 1, 37, 3, 3, 1, 2, 1, 1, 1, 1, "VALID", {0}},    /* avg_pooling1d channels_first */
    {2, 1, 1024, 2, 2, 1, 2, 1, 1, 1, 1, "SAME", {0}},   /* max_pooling1d channels_first s1 */
    {3, 29, 1, 2, 2, 3, 1, 2, 1, 1, 1, "SAME", {0}},     /* a column plane */
    {1, 9, 13, 5, 5, 3, 3, 2, 3, 1, 1, "SAME", {0}},
    {2, 8, 11, 1, 1, 2, 3, 3, 2, 1, 1, "VALID", {0}},
    {1, 4, 6, 2, 2, 5, 7, 1, 1, 1, 1, "SAME", {0}},      /* a window past every edge */
};

/* MaxPool and AvgPool in NCHW against double (TF: the average over the valid pixels) and NHWC. */
static void test_pools(void) {
  for (size_t ci = 0; ci < G_N_ELEMENTS(pool_cases); ci++) {
    const conv_case_t *c = &pool_cases[ci];
    int64_t xd[4], fd[4], yd[4];
    case_dims(c, xd, fd, yd);
    yd[3] = c->c;
    int64_t pt, pl, oh, ow;
    geom(c->h, c->kh, c->sh, 1, c->padding, 0, 0, &oh, &pt);
    geom(c->w, c->kw, c->sw, 1, c->padding, 0, 0, &ow, &pl);
    weft_tensor_t *x = values(4, xd, 900 + (uint32_t)ci);
    const float *xp = weft_tensor_data(x);
    for (int is_max = 0; is_max < 2; is_max++) {
      const char *op = is_max ? "MaxPool" : "AvgPool";
      weft_tensor_t *ins[1] = {x};
      const bool image[1] = {true};
      weft_tensor_t *yh = run_op(op, c, false, true, NULL, -1, false, ins, image, 1, true);
      weft_tensor_t *yc = run_op(op, c, true, true, NULL, -1, false, ins, image, 1, true);
      char *what = g_strdup_printf("%s pool case %zu", op, ci);
      for (int k = 0; k < 4; k++) g_assert_cmpint(weft_tensor_dims(yc)[k], ==, yd[k]);
      const float *got = weft_tensor_data(yc);
      for (int64_t b = 0; b < c->n; b++)
        for (int64_t oy = 0; oy < oh; oy++)
          for (int64_t ox = 0; ox < ow; ox++)
            for (int64_t q = 0; q < c->c; q++) {
              double acc = is_max ? -INFINITY : 0;
              int count = 0;
              for (int64_t iy = oy * c->sh - pt; iy < oy * c->sh - pt + c->kh; iy++)
                for (int64_t ix = ox * c->sw - pl; ix < ox * c->sw - pl + c->kw; ix++) {
                  if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                  double v = xp[((b * c->h + iy) * c->w + ix) * c->c + q];
                  acc = is_max ? (v > acc ? v : acc) : acc + v;
                  count++;
                }
              if (!is_max) acc /= count;
              double v = got[((b * oh + oy) * ow + ox) * c->c + q];
              if (!(fabs(v - acc) <= 1e-6 * (fabs(acc) + 1)))
                g_error("%s: output (%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                        ", %" G_GINT64_FORMAT "): %.9g, expected %.9g",
                        what, b, oy, ox, q, v, acc);
            }
      assert_same(yc, yh, 1e-6, what);
      g_free(what);
      weft_tensor_unref(yh);
      weft_tensor_unref(yc);
    }
    weft_tensor_unref(x);
  }
}

/* An activation of the fusion pass's list in double, or none (act NULL). */
static double activate(const char *act, double v) {
  if (!act) return v;
  if (strcmp(act, "Relu") == 0) return v > 0 ? v : 0;
  if (strcmp(act, "Relu6") == 0) return v < 0 ? 0 : v > 6 ? 6 : v;
  g_assert_cmpstr(act, ==, "Elu");
  return v > 0 ? v : expm1(v);
}

/* A float constant named `name` in g. */
static weft_output_t constant(weft_graph_t *g, const char *name, weft_tensor_t *t) {
  weft_status_t *st = NULL;
  weft_output_t o = weft_const(g, name, t, &st);
  OK(st);
  return o;
}

/* Conv2D (NCHW) -> BiasAdd or an inference FusedBatchNorm (NCHW) -> act becomes one
 * _FusedConv2D at plan time (the pass's step stats say which ops ran); with WEFT_NO_FUSION it
 * runs as written. Both against the NHWC Conv2D, then the bias or the batch norm and the
 * activation in double. */
static void fused_case(const conv_case_t *c, bool batch_norm, const char *act) {
  int64_t xd[4] = {c->n, c->h, c->w, c->c}, fd[4] = {c->kh, c->kw, c->c, c->m}, bd = c->m;
  weft_tensor_t *x = values(4, xd, 41), *f = values(4, fd, 42), *bias = values(1, &bd, 43);
  weft_tensor_t *scale = values(1, &bd, 44), *mean = values(1, &bd, 45);
  weft_tensor_t *var = values(1, &bd, 46);
  float *vp = weft_tensor_data(var);
  for (int64_t i = 0; i < bd; i++) vp[i] = 0.5f + vp[i] * vp[i]; /* positive variances */
  weft_tensor_t *ins[2] = {x, f};
  const bool image[2] = {true, false};
  weft_tensor_t *plain = run_op("Conv2D", c, false, false, NULL, -1, false, ins, image, 2, true);
  const float *bp = weft_tensor_data(bias), *sp = weft_tensor_data(scale);
  const float *mp = weft_tensor_data(mean);
  float *pp = weft_tensor_data(plain);
  const float eps = 0.001f;
  for (int64_t i = 0; i < weft_tensor_num_elements(plain); i++) {
    int64_t o = i % c->m;
    double v = batch_norm ? (pp[i] - mp[o]) / sqrt((double)vp[o] + eps) * sp[o] + bp[o]
                          : (double)pp[i] + bp[o];
    pp[i] = (float)activate(act, v);
  }
  for (int fuse = 0; fuse < 2; fuse++) {
    /* Graphs of Consts: the fused side keeps constant folding (constfold.c) off, which would
     * compute them at plan time. */
    g_setenv("WEFT_NO_FUSION", fuse ? "constfold" : "1", TRUE);
    weft_graph_t *g = weft_graph_new();
    /* _FusedConv2D is the CPU's: on a GPU device the group runs unfused. */
    weft_graph_push_device(g, "/device:CPU:0");
    weft_status_t *st = NULL;
    weft_tensor_t *xc = relayout(x, true);
    weft_op_builder_t *b = weft_op_new(g, "Conv2D", "conv");
    weft_op_add_input(b, constant(g, "x", xc));
    weft_op_add_input(b, constant(g, "f", f));
    weft_tensor_unref(xc);
    int64_t v[4];
    weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
    hw4(true, c->sh, c->sw, v);
    weft_op_set_attr_int_list(b, "strides", v, 4);
    hw4(true, c->dh, c->dw, v);
    weft_op_set_attr_int_list(b, "dilations", v, 4);
    weft_op_set_attr_string(b, "padding", c->padding);
    if (strcmp(c->padding, "EXPLICIT") == 0) {
      int64_t p[8] = {0, 0, 0, 0, c->pads[0], c->pads[1], c->pads[2], c->pads[3]};
      weft_op_set_attr_int_list(b, "explicit_paddings", p, 8);
    }
    weft_op_set_attr_string(b, "data_format", "NCHW");
    weft_node_t *conv = NULL;
    OK(weft_op_finish(b, &conv));
    b = weft_op_new(g, batch_norm ? "FusedBatchNorm" : "BiasAdd", "bias");
    weft_op_add_input(b, (weft_output_t){conv, 0});
    if (batch_norm) {
      weft_op_add_input(b, constant(g, "scale", scale));
      weft_op_add_input(b, constant(g, "offset", bias));
      weft_op_add_input(b, constant(g, "mean", mean));
      weft_op_add_input(b, constant(g, "variance", var));
      weft_op_set_attr_float(b, "epsilon", eps);
      weft_op_set_attr_bool(b, "is_training", false);
    } else {
      weft_op_add_input(b, constant(g, "b", bias));
    }
    weft_op_set_attr_type(b, "T", WEFT_DT_FLOAT);
    weft_op_set_attr_string(b, "data_format", "NCHW");
    weft_node_t *bn = NULL;
    OK(weft_op_finish(b, &bn));
    const char *fetch = "bias";
    if (act) {
      weft_unary(g, act, "act", (weft_output_t){bn, 0}, &st);
      OK(st);
      fetch = "act";
    }
    weft_session_t *s = weft_session_new(g, NULL, &st);
    OK(st);
    weft_run_options_t *ro = weft_run_options_new();
    weft_run_options_set_trace_level(ro, WEFT_TRACE_FULL);
    weft_run_metadata_t *meta = NULL;
    weft_tensor_t *out = NULL;
    OK(weft_session_run_with_options(s, ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, &meta));
    bool fused = false;
    for (int k = 0; k < weft_run_metadata_num_node_stats(meta); k++)
      if (strcmp(weft_run_metadata_node_stats(meta, k)->op, "_FusedConv2D") == 0) fused = true;
    g_assert_true(fused == (fuse == 1));
    weft_tensor_t *got = relayout(out, false);
    char *what = g_strdup_printf("%s NCHW %s %s", fuse ? "fused" : "unfused",
                                 batch_norm ? "FusedBatchNorm" : "BiasAdd", act ? act : "");
    assert_same(got, plain, batch_norm ? 1e-5 : 2e-6, what);
    g_free(what);
    weft_tensor_unref(got);
    weft_tensor_unref(out);
    weft_run_metadata_free(meta);
    weft_run_options_free(ro);
    weft_session_free(s);
    weft_graph_free(g);
  }
  g_unsetenv("WEFT_NO_FUSION");
  weft_tensor_unref(plain);
  weft_tensor_unref(x);
  weft_tensor_unref(f);
  weft_tensor_unref(bias);
  weft_tensor_unref(scale);
  weft_tensor_unref(mean);
  weft_tensor_unref(var);
}

/* The epilogues on both NCHW paths: the direct loop (few taps) and the transposed GEMM (37
 * channels, cases[2]). */
static void test_fused(void) {
  fused_case(&cases[1], false, "Relu");
  fused_case(&direct_cases[3], false, "Relu6");
  fused_case(&direct_cases[2], false, "Elu");
  fused_case(&direct_cases[8], false, NULL);
  fused_case(&direct_cases[11], true, "Relu");
  fused_case(&direct_cases[4], true, NULL);
  fused_case(&cases[2], true, "Relu6");
}

int main(int argc, char **argv) {
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/conv_nchw/forward", test_forward);
  g_test_add_func("/conv_nchw/direct", test_direct);
  g_test_add_func("/conv_nchw/gradients", test_gradients);
  g_test_add_func("/conv_nchw/transpose", test_transpose);
  g_test_add_func("/conv_nchw/pools", test_pools);
  g_test_add_func("/conv_nchw/fused", test_fused);
  return g_test_run();
}
